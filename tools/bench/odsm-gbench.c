// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-gbench: tied allocation (odsm_tbox.h, DRust's TBox) against
 * separate objects, across two nodes.  Node 0 builds a parent with KIDS
 * children twice: once as a group (the children tied to the parent, one
 * heap object) and once as KIDS + 1 objects (the parent holding the
 * children's owner boxes).  Node 1 reads the parent and every child of
 * each, ROUNDS times, alternating, with its node cache emptied before
 * each read (odsm_drop_copies(), outside the time), so every read is
 * cold:
 *
 *   group      odsm_tgroup_borrow_field() (one fetch), odsm_tbox_get()
 *              of each child (no lookup), a byte of each summed, return
 *   separate   odsm_borrow_field() of the parent and of each child
 *              (KIDS + 1 fetches), the same sum, the returns
 *
 * Run on every node at once (they meet with odsm_app_join(), as
 * odsm-mbench does):
 *
 *   odsm-gbench LABEL [ROUNDS]
 *
 * Rows (node 1): "ODSM_BENCH tbox LABEL kids=8 kid_bytes=B group_us=...
 * (p90 ...) separate_us=... (p90 ...) group_fetches=1 separate_fetches=9"
 * (medians; fetches: borrow_misses per read), then "ODSM_BENCH
 * tbox_group_fetch_vs_separate ratio=R label=LABEL" (separate over
 * group).  A benchmark, not a test.
 */
#include <stdint.h>
#include <stdio.h>
#include "odsm.h"
#include "bench.h"

#define KIDS		8
#define KID_BYTES	256
#define MAX_ROUNDS	200

struct tparent {
	odsm_tbox kid[KIDS];
};

struct sparent {
	odsm_box kid[KIDS];
};

/* Node 0: the two shapes, published as "gbench-{grp,sep}-LABEL". */
static void build(const char *label, odsm_box *grp_out, odsm_box *sep_out)
{
	char name[ODSM_NAME_MAX + 1];
	struct tparent *tp;
	struct sparent *sp;
	odsm_box grp, sep;
	uint8_t buf[KID_BYTES];
	odsm_mut m;
	void *p;
	int ret, i;

	ret = odsm_tgroup_new(&grp, sizeof(*tp),
			      KIDS * (ODSM_TBOX_HDR + KID_BYTES));
	if (!ret)
		ret = odsm_tgroup_borrow_mut(&grp, &m, (void **)&tp);
	for (i = 0; !ret && i < KIDS; i++) {
		ret = odsm_tbox_new(&m, KID_BYTES, &tp->kid[i], &p);
		if (!ret)
			memset(p, i + 1, KID_BYTES);
	}
	if (!ret)
		ret = odsm_return_mut(&m);
	if (!ret)
		ret = odsm_box_new(&sep, sizeof(*sp), ODSM_ALLOC_ZERO);
	if (!ret)
		ret = odsm_box_write(&sep, (void **)&sp);
	for (i = 0; !ret && i < KIDS; i++) {
		memset(buf, i + 1, sizeof(buf));
		ret = odsm_box_new_on(&sp->kid[i], 0, KID_BYTES, 0, buf);
	}
	if (ret)
		die("building", ret);
	snprintf(name, sizeof(name), "gbench-grp-%.16s", label);
	ret = odsm_name_publish(name, ODSM_NAME_ADDR, odsm_box_share(&grp));
	snprintf(name, sizeof(name), "gbench-sep-%.16s", label);
	if (!ret)
		ret = odsm_name_publish(name, ODSM_NAME_ADDR,
					odsm_box_share(&sep));
	if (ret)
		die("publishing", ret);
	*grp_out = grp;
	*sep_out = sep;
}

/* Node 0, once node 1 is done: free both shapes. */
static void unbuild(odsm_box *grp, odsm_box *sep)
{
	struct sparent *sp;
	int ret, i;

	ret = odsm_tgroup_drop(grp);
	if (!ret)
		ret = odsm_box_write(sep, (void **)&sp);
	for (i = 0; !ret && i < KIDS; i++)
		ret = odsm_box_drop(&sp->kid[i]);
	if (!ret)
		ret = odsm_box_drop(sep);
	if (ret)
		die("freeing", ret);
}

static uint64_t addr_of(const char *what, const char *label)
{
	char name[ODSM_NAME_MAX + 1];
	struct odsm_name nm;
	int ret;

	snprintf(name, sizeof(name), "gbench-%s-%.16s", what, label);
	ret = odsm_name_wait(name, 60000, &nm);
	if (ret)
		die(name, ret);
	return nm.value;
}

/* One cold read of the group: its time in us; *sum gets the bytes' sum. */
static double read_group(uint64_t g, unsigned int *sum)
{
	const struct tparent *tp;
	odsm_box f = { g, 0 };
	const uint8_t *p;
	double t0;
	odsm_ref r;
	int ret, i;

	t0 = now_us();
	ret = odsm_tgroup_borrow_field(&f, &r, (const void **)&tp);
	for (i = 0; !ret && i < KIDS; i++) {
		ret = odsm_tbox_get(&r, &tp->kid[i], (const void **)&p);
		if (!ret)
			*sum += p[KID_BYTES - 1];
	}
	if (!ret)
		ret = odsm_return(&r);
	if (ret)
		die("reading the group", ret);
	return now_us() - t0;
}

/* The same as KIDS + 1 separate objects. */
static double read_separate(uint64_t g, unsigned int *sum)
{
	const struct sparent *sp;
	odsm_box f = { g, 0 };
	odsm_ref r, kr[KIDS];
	const uint8_t *p;
	double t0;
	int ret, i, n = 0;

	t0 = now_us();
	ret = odsm_borrow_field(&f, &r, (const void **)&sp);
	for (i = 0; !ret && i < KIDS; i++) {
		ret = odsm_borrow_field(&sp->kid[i], &kr[i], (const void **)&p);
		if (!ret) {
			n++;
			*sum += p[KID_BYTES - 1];
		}
	}
	/* the children's borrows end with the parent's, as the group's do */
	for (i = 0; i < n; i++)
		if (!ret)
			ret = odsm_return(&kr[i]);
	if (!ret)
		ret = odsm_return(&r);
	if (ret)
		die("reading the separate objects", ret);
	return now_us() - t0;
}

static void cold(void)
{
	int ret = odsm_drop_copies(NULL, NULL);

	if (ret)
		die("odsm_drop_copies", ret);
}

int main(int argc, char **argv)
{
	const char *label = argc > 1 ? argv[1] : "run";
	int rounds = (int)arg_num(argc, argv, 2, 30), i;
	static double tg[MAX_ROUNDS], ts[MAX_ROUNDS];
	unsigned long long m0, m1, m2;
	unsigned int sum = 0, want;
	double gm, gp, sm, spr;
	struct odsm_app app;
	odsm_box gbox = { 0 }, sbox = { 0 };
	uint64_t grp, sep;
	int ret;

	if (rounds < 1 || rounds > MAX_ROUNDS)
		die("usage: odsm-gbench LABEL [ROUNDS (1..200)]", -EINVAL);
	ret = odsm_app_join(&app, "odsm-gbench", 0, 60000);
	if (ret)
		die("odsm_app_join", ret);
	if (app.self == 0)
		build(label, &gbox, &sbox);
	grp = addr_of("grp", label);
	sep = addr_of("sep", label);
	if (app.self == 1) {
		/* every byte counted: the reads are not optimised away */
		want = 0;
		for (i = 0; i < KIDS; i++)
			want += i + 1;
		cold();
		m0 = stat_of("borrow_misses");
		tg[0] = read_group(grp, &sum);
		cold();
		m1 = stat_of("borrow_misses");
		ts[0] = read_separate(sep, &sum);
		m2 = stat_of("borrow_misses");
		for (i = 1; i < rounds; i++) {
			cold();
			tg[i] = read_group(grp, &sum);
			cold();
			ts[i] = read_separate(sep, &sum);
		}
		if (sum != want * 2 * (unsigned int)rounds)
			die("the children's bytes", -EBADMSG);
		stats(tg, rounds, &gm, &gp);
		stats(ts, rounds, &sm, &spr);
		row("tbox %s kids=%d kid_bytes=%d group_us=%.1f (p90 %.1f) separate_us=%.1f (p90 %.1f) group_fetches=%llu separate_fetches=%llu rounds=%d",
		    label, KIDS, KID_BYTES, gm, gp, sm, spr, m1 - m0, m2 - m1,
		    rounds);
		row("tbox_group_fetch_vs_separate ratio=%.2f label=%s",
		    gm > 0 ? sm / gm : 0, label);
	}
	/* node 1 has read everything before node 0 goes */
	ret = odsm_barrier_wait(app.barrier, 300000);
	if (ret)
		die("barrier", ret);
	if (app.self == 0)
		unbuild(&gbox, &sbox);
	odsm_fini();
	return 0;
}
