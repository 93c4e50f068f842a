// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-abench: 64 independent shared borrows of 512 B objects on another
 * node, all missing this node's cache: one after another (the blocking
 * BORROW ioctl, as odsm_ref_get() does on a miss) against all together
 * (odsm_borrow_many(): one prefetch, a FETCH_MANY round trip, then the
 * borrows through io_uring, which hit).  Each round drops the
 * idle copies first so that both sides fetch every object; ROUNDS rounds
 * of each, alternating, and the medians.  Then the same 64 objects read
 * (ODSM_IOC_READ: one-sided over RDMA, up to four at once per
 * connection, a read that finds all four slots busy sent as a request)
 * one after another against all at once (odsm_read_many()).  Prints
 * ODSM_BENCH lines; judges nothing.
 *
 *   odsm-abench NODE [ROUNDS [LABEL]]
 *
 * Without LABEL the rows are the ones of make bench's summary,
 * "async_64_borrows_vs_sequential speedup=R ratio=R ..." and
 * "async_64_reads_vs_sequential ..."; with it, the same figures as
 * "LABEL async_64_borrows ..." and "LABEL async_64_reads ...".
 */
#include <stdint.h>
#include "odsm.h"
#include "odsm_async.h"
#include "bench.h"

#define NR	64
#define OBJ	512

/* r[i] borrows cg[i] (odsm_return() clears a ref) */
static void aim(odsm_ref *r, const uint64_t *cg)
{
	int i;

	for (i = 0; i < NR; i++) {
		r[i].g = cg[i];
		r[i].ext = 0;
	}
}

static double sequential(odsm_ref *r, const uint64_t *cg)
{
	double t0;
	int i, ret;

	aim(r, cg);
	t0 = now_us();
	for (i = 0; i < NR; i++) {
		ret = odsm__ref_fetch(&r[i]);
		if (ret)
			die("borrow", ret);
	}
	t0 = now_us() - t0;
	for (i = 0; i < NR; i++)
		odsm_return(&r[i]);
	return t0;
}

static double together(odsm_ref *r, const uint64_t *cg)
{
	const void *p[NR];
	int res[NR], i, ret;
	double t0;

	aim(r, cg);
	t0 = now_us();
	ret = odsm_borrow_many(r, p, NR, res);
	t0 = now_us() - t0;
	if (ret)
		die("odsm_borrow_many", ret);
	for (i = 0; i < NR; i++)
		odsm_return(&r[i]);
	return t0;
}

/*
 * The medians of a pair's rounds as a row: "LABEL async_64_WHAT ..." with
 * a label, else the summary's "async_64_WHAT_vs_sequential ...".
 */
static void pair_row(const char *what, const char *label, double *seq,
		     double *asy, int rounds)
{
	double s, a;

	stats(seq, rounds, &s, NULL);
	stats(asy, rounds, &a, NULL);
	if (label)
		row("%s async_64_%s sequential_us=%.0f async_us=%.0f speedup=%.2f rounds=%d",
		    label, what, s, a, s / a, rounds);
	else
		row("async_64_%s_vs_sequential speedup=%.2f ratio=%.2f sequential_us=%.0f async_us=%.0f rounds=%d",
		    what, s / a, s / a, s, a, rounds);
}

static double reads_one_by_one(const uint64_t *cg, uint8_t (*buf)[OBJ])
{
	double t0 = now_us();
	int i, ret;

	for (i = 0; i < NR; i++) {
		ret = odsm_read(cg[i], buf[i], OBJ);
		if (ret)
			die("read", ret);
	}
	return now_us() - t0;
}

static double reads_together(const uint64_t *cg, uint8_t (*buf)[OBJ])
{
	struct odsm_range rg[NR];
	double t0;
	int i, ret;

	for (i = 0; i < NR; i++) {
		rg[i].gaddr = cg[i];
		rg[i].buf = buf[i];
		rg[i].len = OBJ;
	}
	t0 = now_us();
	ret = odsm_read_many(rg, NR, NULL);
	t0 = now_us() - t0;
	if (ret)
		die("odsm_read_many", ret);
	return t0;
}

/* The read pair: ROUNDS rounds of each, alternating, and a row. */
static void reads(const uint64_t *cg, int rounds, const char *label,
		  double *seq, double *asy)
{
	static uint8_t buf[NR][OBJ];
	int i;

	reads_together(cg, buf);
	reads_one_by_one(cg, buf);
	for (i = 0; i < rounds; i++) {
		seq[i] = reads_one_by_one(cg, buf);
		asy[i] = reads_together(cg, buf);
	}
	pair_row("reads", label, seq, asy, rounds);
}

int main(int argc, char **argv)
{
	unsigned int node = arg_num(argc, argv, 1, 0);
	int rounds = arg_num(argc, argv, 2, 7), i, ret;
	const char *label = argc > 3 ? argv[3] : NULL;
	double *seq, *asy;
	uint64_t cg[NR];
	odsm_ref r[NR];

	if (rounds < 1)
		rounds = 1;
	ret = odsm_init();
	if (ret)
		die("odsm_init", ret);
	seq = calloc(rounds, sizeof(*seq));
	asy = calloc(rounds, sizeof(*asy));
	if (!seq || !asy)
		errx(1, "out of memory");
	for (i = 0; i < NR; i++) {
		ret = odsm_alloc_on(node, OBJ, 0, ODSM_ALLOC_ZERO, &cg[i]);
		if (ret)
			die("alloc", ret);
	}
	/* one unmeasured round of each: the ring and the workers set up */
	odsm_drop_copies(NULL, NULL);
	together(r, cg);
	odsm_drop_copies(NULL, NULL);
	sequential(r, cg);
	for (i = 0; i < rounds; i++) {
		odsm_drop_copies(NULL, NULL);
		seq[i] = sequential(r, cg);
		odsm_drop_copies(NULL, NULL);
		asy[i] = together(r, cg);
	}
	odsm_drop_copies(NULL, NULL);
	pair_row("borrows", label, seq, asy, rounds);
	reads(cg, rounds, label, seq, asy);
	for (i = 0; i < NR; i++)
		odsm_free(cg[i]);
	odsm_fini();
	return 0;
}
