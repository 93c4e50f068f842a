// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-cbench: what the coherence protocol costs, against the raw
 * operations on the same objects and link.  Run on one node against
 * objects it places on another (ODSM_ALLOC_ON_NODE):
 *
 *   uncached    a shared borrow that misses (ODSM_IOC_BORROW + RETURN with
 *               cache_budget_bytes 0, so every borrow copies) vs a raw
 *               ODSM_IOC_READ of the same size
 *   hit         a shared borrow of a cached copy (BORROW + RETURN) vs a
 *               borrow of a local object through libodsm's inline path;
 *               then the same borrow through libodsm, served by its table
 *               of hits (no system call), vs the same local borrow, in a
 *               loop on one object: cached_hit_loop_vs_local_borrow, with
 *               the kernel's borrow calls per hit (borrow_hits, _misses,
 *               _returns moved).  The fixed row cached_hit_vs_local_borrow
 *               is odsm-hbench's, on Table 2's workload natively.
 *   mut         a mutable borrow of a remote object (it moves here) vs a
 *               raw read of the same size
 *   move_bw     1 MiB moves in MiB/s vs 1 MiB raw reads, with how many
 *               of the moves' 256 KiB pieces were read one-sided (the
 *               objects allocated one after another, never written here:
 *               a move asks for the next run's keys)
 *   first_byte  borrow a 64 MiB remote object and touch its first byte,
 *               lazily (lazy_threshold 1 MiB) and eagerly (threshold above
 *               the object); then the time to touch every page lazily for
 *               readahead_pages 1, 4, 16, 64
 *   move_copied over RDMA, moves of 4 KiB and 1 MiB objects this node
 *               wrote and copied before, read one-sided vs with FETCHes (module
 *               parameter onesided on and off, in turn)
 *   lazy        over RDMA, a 16 MiB lazily filled copy touched whole with
 *               its pages read one-sided vs with a FETCH per fault
 *               (onesided_lazy on and off, in turn)
 *
 * Medians (and 90th percentiles) in microseconds, one ODSM_BENCH line per
 * row.  A benchmark: it reports and judges nothing.
 *
 *   odsm-cbench NODE [ITERATIONS] [LABEL] [all|uncached|move|lazy]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include "odsm.h"
#include "bench.h"

#define MiB(x)	((uint64_t)(x) << 20)

static unsigned int node;
static const char *xport = "";

static uint64_t remote_obj(uint64_t size)
{
	uint64_t cg;
	int ret = odsm_alloc_on(node, size, 0, ODSM_ALLOC_ZERO, &cg);

	if (ret)
		die("alloc on the remote node", ret);
	return cg;
}

static int borrow(uint64_t cg, struct odsm_borrow *b)
{
	memset(b, 0, sizeof(*b));
	b->gaddr = cg;
	return ioctl(odsm_rt.fd, ODSM_IOC_BORROW, b) ? -errno : 0;
}

static void give_back(uint64_t cg)
{
	struct odsm_borrow b = { .gaddr = cg };

	if (ioctl(odsm_rt.fd, ODSM_IOC_RETURN, &b))
		die("return", -errno);
}

/* one raw read of len bytes at cg, in µs */
static double raw_read(uint64_t cg, void *buf, size_t len)
{
	double t0 = now_us();
	int ret = odsm_read(cg, buf, len);

	if (ret)
		die("read", ret);
	return now_us() - t0;
}

static void uncached_vs_raw(int iters)
{
	static const size_t sizes[] = { 512, 4096, 65536 };
	double *tb = calloc(iters, sizeof(double)), *tr = calloc(iters, sizeof(double));
	double bm, b9, rm, r9;
	struct odsm_borrow b;
	char *buf = malloc(65536);
	unsigned int s;
	int i, ret;

	knob("cache_budget_bytes", 0);	/* every borrow misses */
	for (s = 0; s < 3; s++) {
		uint64_t cg = remote_obj(sizes[s]);
		unsigned long long os0 = stat_of("onesided_copies");
		unsigned long long rf0 = stat_of("onesided_copy_refused");

		for (i = 0; i < iters; i++) {
			double t0 = now_us();

			ret = borrow(cg, &b);
			if (ret || b.result != ODSM_BORROWED_MISS)
				die("uncached borrow", ret ? ret : -EEXIST);
			tb[i] = now_us() - t0;
			give_back(cg);
			tr[i] = raw_read(cg, buf, sizes[s]);
		}
		stats(tb, iters, &bm, &b9);
		stats(tr, iters, &rm, &r9);
		row("coherence %s uncached_borrow_%zu_us=%.1f (p90 %.1f) raw_read_%zu_us=%.1f (p90 %.1f) ratio=%.2f (misses read one-sided %llu of %d, refused %llu)",
		    xport, sizes[s], bm, b9, sizes[s], rm, r9, bm / rm,
		    stat_of("onesided_copies") - os0, iters,
		    stat_of("onesided_copy_refused") - rf0);
		odsm_free(cg);
	}
	knob("cache_budget_bytes", MiB(64));
	free(tb);
	free(tr);
	free(buf);
}

static unsigned long long borrow_calls(void)
{
	return stat_of("borrow_hits") + stat_of("borrow_misses") +
	       stat_of("borrow_returns");
}

/*
 * n borrows and returns of the remote object cg through libodsm: the
 * first one records the copy in the process's table of hits, the others
 * are served there.  Against a local borrow (local_ns) and the kernel's
 * hit path (kernel_ns), both of this run.
 */
static void table_hits(uint64_t cg, double kernel_ns, double local_ns, long n)
{
	unsigned long long calls;
	odsm_box rb = { .g = cg };
	double t0, ns;
	const void *p;
	odsm_ref r;
	long k;

	if (odsm_borrow(&rb, &r, &p) || odsm_return(&r))
		die("libodsm borrow", -EIO);
	calls = borrow_calls();
	t0 = now_us();
	for (k = 0; k < n; k++) {
		odsm_borrow(&rb, &r, &p);
		__asm__ volatile("" : : "r"(p) : "memory");
		odsm_return(&r);
	}
	ns = (now_us() - t0) * 1000 / n;
	calls = borrow_calls() - calls;
	odsm_hits_flush();
	row("coherence %s table_hit_borrow_return_ns=%.1f kernel_hit_borrow_return_ns=%.1f local_borrow_return_ns=%.1f",
	    xport, ns, kernel_ns, local_ns);
	row("coherence cached_hit_loop_vs_local_borrow ratio=%.2f syscalls_per_hit=%.3f kernel_path_ratio=%.0f over %s",
	    ns / local_ns, (double)calls / n, kernel_ns / local_ns, xport);
}

static void hit_vs_local(int iters)
{
	double *t = calloc(iters, sizeof(double)), hm, h9, t0, local_ns;
	struct odsm_borrow b;
	uint64_t cg = remote_obj(512);
	const void *p;
	odsm_box lb;
	odsm_ref r;
	long k, n = 1000000;
	int i, ret;

	ret = borrow(cg, &b);	/* the miss that fills the cache */
	if (ret)
		die("borrow", ret);
	give_back(cg);
	for (i = 0; i < iters; i++) {
		double s = now_us();

		ret = borrow(cg, &b);
		if (ret || b.result != ODSM_BORROWED_HIT)
			die("cached borrow", ret ? ret : -EEXIST);
		give_back(cg);
		t[i] = now_us() - s;
	}
	stats(t, iters, &hm, &h9);
	ret = odsm_box_new(&lb, 512, ODSM_ALLOC_ZERO);
	if (ret)
		die("local box", ret);
	t0 = now_us();
	for (k = 0; k < n; k++) {
		odsm_borrow(&lb, &r, &p);
		__asm__ volatile("" : : "r"(p) : "memory");
		odsm_return(&r);
	}
	local_ns = (now_us() - t0) * 1000 / n;
	row("coherence %s cached_hit_borrow_return_us=%.2f (p90 %.2f) local_borrow_return_ns=%.1f ratio=%.0f",
	    xport, hm, h9, local_ns, hm * 1000 / local_ns);
	table_hits(cg, hm * 1000, local_ns, n);
	odsm_box_drop(&lb);
	odsm_free(cg);
	free(t);
}

static void mut_vs_raw(int iters)
{
	static const size_t sizes[] = { 512, 4096 };
	double *tm = calloc(iters, sizeof(double)), *tr = calloc(iters, sizeof(double));
	struct odsm_borrow_mut m;
	double mm, m9, rm, r9;
	char buf[4096];
	uint64_t *objs = calloc(iters, sizeof(uint64_t));
	unsigned int s;
	int i;

	for (s = 0; s < 2; s++) {
		for (i = 0; i < iters; i++)
			objs[i] = remote_obj(sizes[s]);
		for (i = 0; i < iters; i++) {
			double t0;

			tr[i] = raw_read(objs[i], buf, sizes[s]);
			memset(&m, 0, sizeof(m));
			m.gaddr = objs[i];
			t0 = now_us();
			if (ioctl(odsm_rt.fd, ODSM_IOC_BORROW_MUT, &m) ||
			    m.result != ODSM_BORROWED_MOVED)
				die("mutable borrow", -errno);
			tm[i] = now_us() - t0;
			odsm_free(m.new_gaddr);
		}
		stats(tm, iters, &mm, &m9);
		stats(tr, iters, &rm, &r9);
		row("coherence %s mut_borrow_move_%zu_us=%.1f (p90 %.1f) raw_read_%zu_us=%.1f (p90 %.1f) ratio=%.2f",
		    xport, sizes[s], mm, m9, sizes[s], rm, r9, mm / rm);
	}
	free(objs);
	free(tm);
	free(tr);
}

static void move_bw(int n)
{
	struct odsm_borrow_mut m;
	uint64_t *objs = calloc(n, sizeof(uint64_t)), cg;
	char *buf = malloc(MiB(1));
	double t0, moves, reads;
	unsigned long long p0;
	int i;

	for (i = 0; i < n; i++)
		objs[i] = remote_obj(MiB(1));
	p0 = stat_of("move_rest_onesided");
	t0 = now_us();
	for (i = 0; i < n; i++) {
		memset(&m, 0, sizeof(m));
		m.gaddr = objs[i];
		if (ioctl(odsm_rt.fd, ODSM_IOC_BORROW_MUT, &m))
			die("1 MiB move", -errno);
		objs[i] = m.new_gaddr;
	}
	moves = n / ((now_us() - t0) / 1e6);
	p0 = stat_of("move_rest_onesided") - p0;
	for (i = 0; i < n; i++)
		odsm_free(objs[i]);
	cg = remote_obj(MiB(1));
	t0 = now_us();
	for (i = 0; i < n; i++)
		raw_read(cg, buf, MiB(1));
	reads = n / ((now_us() - t0) / 1e6);
	odsm_free(cg);
	row("coherence %s move_1MiB_MiB_s=%.1f raw_read_1MiB_MiB_s=%.1f ratio=%.2f pieces_onesided=%llu of %d",
	    xport, moves, reads, moves / reads, p0, 4 * n);
	free(objs);
	free(buf);
}

/* borrow the object and touch its first byte: µs */
static double first_byte(uint64_t cg)
{
	struct odsm_borrow b;
	double t0 = now_us(), t;
	int ret = borrow(cg, &b);

	if (ret)
		die("borrow 64 MiB", ret);
	(void)*(volatile const char *)(uintptr_t)b.addr;
	t = now_us() - t0;
	give_back(cg);
	return t;
}

static void big(void)
{
	static const unsigned int ras[] = { 1, 4, 16, 64 };
	uint64_t cg = remote_obj(MiB(64));
	double lazy, eager, t0;
	struct odsm_borrow b;
	unsigned int i;
	uint64_t off;
	int ret;

	knob("lazy_threshold", MiB(1));
	lazy = first_byte(cg);
	knob("lazy_threshold", MiB(128));
	eager = first_byte(cg);
	knob("cache_budget_bytes", 0);		/* drop the eager copy */
	knob("cache_budget_bytes", MiB(256));
	row("coherence %s first_byte_64MiB_lazy_us=%.0f eager_us=%.0f ratio=%.4f",
	    xport, lazy, eager, lazy / eager);
	knob("lazy_threshold", MiB(1));
	for (i = 0; i < 4; i++) {
		knob("readahead_pages", ras[i]);
		t0 = now_us();
		ret = borrow(cg, &b);
		if (ret)
			die("borrow 64 MiB", ret);
		for (off = 0; off < MiB(64); off += 4096)
			(void)*(volatile const char *)(uintptr_t)(b.addr + off);
		row("coherence %s lazy_64MiB_touch_all readahead_pages=%u ms=%.0f MiB_s=%.1f",
		    xport, ras[i], (now_us() - t0) / 1e3,
		    64 / ((now_us() - t0) / 1e6));
		give_back(cg);
	}
	knob("readahead_pages", 16);
	odsm_free(cg);
}

/* Set the module parameter /sys/module/odsm/parameters/<name>: 0 or -errno. */
static int param(const char *name, bool on)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/odsm/parameters/%s", name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	if (fprintf(f, "%s\n", on ? "Y" : "N") < 0 || fclose(f))
		return -EIO;
	return 0;
}

/* borrow cg (size bytes, lazily filled) and touch every page: ms */
static double touch_all(uint64_t cg, uint64_t size)
{
	struct odsm_borrow b;
	double t0 = now_us();
	uint64_t off;
	int ret = borrow(cg, &b);

	if (ret)
		die("borrow 16 MiB", ret);
	for (off = 0; off < size; off += 4096)
		(void)*(volatile const char *)(uintptr_t)(b.addr + off);
	t0 = (now_us() - t0) / 1e3;
	give_back(cg);
	return t0;
}

/*
 * lazy_onesided: a 16 MiB lazily filled copy touched whole (256 faults of
 * 64 KiB), its pages read one-sided (onesided_lazy on, the blocks' keys
 * there from a first pass) against FETCHes (off), in turn, 5 times each;
 * medians.  Over RDMA only: nothing to compare over TCP.
 */
static void lazy_onesided(void)
{
	uint64_t size = MiB(16), cg, o0, f0;
	double on[5], off[5], on_med, off_med, p90;
	int i;

	if (strcmp(xport, "rdma") || param("onesided_lazy", true))
		return;
	cg = remote_obj(size);
	knob("lazy_threshold", MiB(1));
	knob("readahead_pages", 16);
	touch_all(cg, size);		/* the first faults ask for the keys */
	o0 = stat_of("lazy_onesided");
	f0 = stat_of("lazy_faults");
	for (i = 0; i < 5; i++) {
		param("onesided_lazy", true);
		on[i] = touch_all(cg, size);
		param("onesided_lazy", false);
		off[i] = touch_all(cg, size);
	}
	param("onesided_lazy", true);
	stats(on, 5, &on_med, &p90);
	stats(off, 5, &off_med, &p90);
	row("coherence %s lazy_16MiB_onesided_vs_fetch ratio=%.2f onesided_ms=%.0f fetch_ms=%.0f faults_onesided=%llu faults=%llu",
	    xport, on_med / off_med, on_med, off_med,
	    stat_of("lazy_onesided") - o0, stat_of("lazy_faults") - f0);
	odsm_free(cg);
}

/*
 * A remote object of size bytes (at most 1 MiB), written by this node (a
 * one-sided WRITE registers its blocks for it: MAP), then, with copy,
 * copied once (the home marks it so).
 */
static uint64_t written_obj(uint64_t size, bool copy)
{
	static char bytes[MiB(1)];
	uint64_t cg = remote_obj(size);
	struct odsm_borrow b;
	int ret;

	memset(bytes, 0x5a, size);
	ret = odsm_write(cg, bytes, size);
	if (ret)
		die("write", ret);
	if (!copy)
		return cg;
	ret = borrow(cg, &b);
	if (ret)
		die("borrow", ret);
	give_back(cg);
	return cg;
}

/* move cg here (BORROW_MUT), free the new object: µs */
static double timed_move(uint64_t cg)
{
	struct odsm_borrow_mut m = { .gaddr = cg };
	double t0 = now_us(), t;

	if (ioctl(odsm_rt.fd, ODSM_IOC_BORROW_MUT, &m) ||
	    m.result != ODSM_BORROWED_MOVED)
		die("move", -errno);
	t = now_us() - t0;
	odsm_free(m.new_gaddr);
	return t;
}

/*
 * move_copied: moves of objects this node wrote and copied before (every
 * copy evicted: cache_budget_bytes 0), read one-sided (move_onesided) against
 * FETCHes (module parameter onesided off), in turn, n of each; medians.
 * move_written: of 1 MiB objects written here but never copied: a first
 * FETCH (which marks them copied), then the rest one-sided
 * (move_rest_onesided, pieces of 256 KiB) against FETCHes.  Over RDMA only.
 */
static void move_copied(int n)
{
	static const uint64_t sizes[] = { 4096, MiB(1), MiB(1) };
	static const char *const names[] = { "copied_4KiB", "copied_1MiB",
					     "written_1MiB" };
	double *on = calloc(n, sizeof(double)), *off = calloc(n, sizeof(double));
	double on_med, off_med, p90;
	unsigned long long m0;
	unsigned int s;
	int i;

	if (strcmp(xport, "rdma") || param("onesided", true))
		goto out;
	knob("cache_budget_bytes", 0);
	knob("lazy_threshold", MiB(1));
	for (s = 0; s < 3; s++) {
		const char *what = s < 2 ? "move_onesided" : "move_rest_onesided";

		m0 = stat_of(what);
		for (i = 0; i < n; i++) {
			uint64_t a = written_obj(sizes[s], s < 2),
				 b = written_obj(sizes[s], s < 2);

			on[i] = timed_move(a);
			param("onesided", false);
			off[i] = timed_move(b);
			param("onesided", true);
		}
		stats(on, n, &on_med, &p90);
		stats(off, n, &off_med, &p90);
		row("coherence %s move_%s_onesided_vs_fetch ratio=%.2f onesided_us=%.0f fetch_us=%.0f %s=%llu of %d",
		    xport, names[s], on_med / off_med, on_med, off_med,
		    s < 2 ? "moves_onesided" : "pieces_onesided",
		    stat_of(what) - m0, s < 2 ? n : 4 * n);
	}
	knob("cache_budget_bytes", MiB(64));
out:
	free(on);
	free(off);
}

int main(int argc, char **argv)
{
	const char *rows;
	int iters, ret;

	if (argc < 2) {
		fprintf(stderr, "usage: odsm-cbench NODE [ITERATIONS] [LABEL] [all|uncached|move|lazy]\n");
		return 2;
	}
	node = arg_num(argc, argv, 1, 0);
	iters = arg_num(argc, argv, 2, 100);
	if (argc > 3)
		xport = argv[3];
	if (iters < 10)
		iters = 10;
	ret = odsm_init();
	if (ret)
		die("odsm_init", ret);
	row("coherence %s: node %u against node %u, %d iterations per row",
	    xport, odsm_rt.info.node_id, node, iters);
	fflush(stdout);
	/* "uncached", "move": that row alone, for a quick comparison of builds */
	rows = argc > 4 ? argv[4] : "all";
	if (strcmp(rows, "move") && strcmp(rows, "lazy"))
		uncached_vs_raw(iters);
	if (!strcmp(rows, "move")) {
		move_bw(8);
		move_copied(8);
	}
	if (!strcmp(rows, "lazy"))
		lazy_onesided();
	if (!strcmp(rows, "all")) {
		hit_vs_local(iters);
		mut_vs_raw(iters);
		move_bw(8);
		move_copied(8);
		big();
		lazy_onesided();
	}
	odsm_fini();
	return 0;
}
