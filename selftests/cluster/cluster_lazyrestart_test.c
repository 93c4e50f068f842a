// SPDX-License-Identifier: GPL-2.0
/*
 * A lazy fault never fills a copy with a restarted home's new object
 * (issue 12, finding 10(b)).  A lazily filled copy fetches its pages from
 * the home one touch at a time, long after the borrow: if the home
 * restarted meanwhile and a new object of the same size lives at the same
 * colored address (a restarted home hands its addresses out again from
 * color 0), a fetch that reaches the new incarnation gets the new object's
 * bytes, which must never land in the copy of the former one.
 *
 * As in cluster_homerestart_test, the home is the rig's fake node
 * (rig.fake_peer=1), spoken for by node 1 with fake_peer.h: a home whose
 * new incarnation holds another object at the same colored address.
 * Node 0, the module under test:
 *   1. borrows the fake home's 1 MiB object L (a lazy copy: lazy_threshold
 *      1 MiB, one page a fetch) and reads its first page: incarnation 1's;
 *   2. sets the test hold fault_hold_lazy and touches a page not fetched
 *      yet in a second thread: the lazy fault checks the copy and its
 *      home, and waits before it sends the page's FETCH;
 *   3. once the fault is held, the fake home restarts: it closes its
 *      connection and completes a new handshake as incarnation 2, whose L
 *      has other bytes;
 *   4. node 0 clears the hold; the fault goes on.
 *
 * Expected: the touch gets SIGBUS (the copy's home is gone: the fetch is
 * refused, -EREMCHG, or its reply is dropped, lazy_stale), and so does a
 * second touch; never incarnation 2's bytes.  Without the incarnation
 * checks of the lazy fill (odsm_fetch_at() of the copy's incarnation and
 * home_same() after the reply, odsm_cache.c) the FETCH reaches
 * incarnation 2 and the page is filled with its object's bytes.
 *
 * Words of the directories: 260 .. 264 (see odsm_cluster.h).
 */
#include <pthread.h>
#include <signal.h>
#include "odsm_cluster.h"
#include "odsm_faults.h"
#include "fake_peer.h"
#include "fake_node.h"

enum {
	W_LR_READY = 260,	/* node 0: 1 once it is ready for the home */
	W_LR_UP,		/* node 1: the fake home's incarnation (1, 2)
				 * that completed a handshake and was served
				 */
	W_LR_HELD,		/* node 0: 1 once the lazy fault is held */
	W_LR_DONE,		/* node 0: 1 once it is done with the home */
	W_LR_VERDICT,		/* node 1: 1 + the FETCHes of L incarnation
				 * 2 received
				 */
};

#define L_SIZE		MiB(1)
#define L_OFF		MiB(1)		/* L, in the fake's partition */
#define L_COLOR		9U
/* pattern tags: which incarnation's object the bytes are */
#define TAG_L1		5
#define TAG_L2		6
#define AT		(KiB(512) + KiB(4) + 7)	/* the page touched, held */
#define FETCH_LEN	24U		/* gaddr, offset, len, whole */
#define FETCH_REPLY_LEN	16U		/* size, color, reserved, len */
#define MAX_FETCH	KiB(16)		/* what the home serves at once */

FIXTURE(cl)
{
	int unused;
};

FIXTURE_SETUP(cl)
{
}

FIXTURE_TEARDOWN(cl)
{
	/* a failed node 0 must not leave lazy faults held */
	if (C.self == 0)
		f_param("fault_hold_lazy", 0);
}

static uint64_t l_addr(void)
{
	return c_part(C.nodes - 1) + L_OFF;
}

static uint64_t l_colored(void)
{
	return l_addr() | (uint64_t)L_COLOR << ODSM_COLOR_SHIFT;
}

/* ---- node 1: the fake home ----------------------------------------------- */

struct home {
	unsigned int inc;	/* 1 or 2: which L it holds */
	unsigned int fetches;	/* FETCHes of L it served */
};

/* The FETCH in p: incarnation hm's L's bytes, or -ESTALE. */
static int fetch(struct fake_peer *fp, struct home *hm,
		 const struct fp_hdr *h, const uint8_t *p)
{
	static uint8_t r[FETCH_REPLY_LEN + MAX_FETCH];
	uint64_t g = get64(p), off = get64(p + 8);
	uint32_t len = get32(p + 16), whole = get32(p + 20), n, i;
	unsigned int tag = hm->inc == 1 ? TAG_L1 : TAG_L2;

	if (h->len != FETCH_LEN || len > MAX_FETCH)
		return fp_send(fp, T_FETCH_REPLY, F_REPLY, h->seq, -EINVAL,
			       NULL, 0);
	if (odsm_addr_of(g) != l_addr() || odsm_color_of(g) < L_COLOR ||
	    off >= L_SIZE)
		return fp_send(fp, T_FETCH_REPLY, F_REPLY, h->seq, -ESTALE,
			       NULL, 0);
	/* as odsm_wire_fetch_span(): whole when whole bytes cover the rest */
	n = L_SIZE - off <= whole || L_SIZE - off < len ?
	    (uint32_t)(L_SIZE - off) : len;
	if (n > MAX_FETCH)	/* more than r holds */
		return fp_send(fp, T_FETCH_REPLY, F_REPLY, h->seq, -EINVAL,
			       NULL, 0);
	memset(r, 0, FETCH_REPLY_LEN);
	put64(r, L_SIZE);
	r[8] = (uint8_t)L_COLOR;
	r[9] = (uint8_t)(L_COLOR >> 8);
	put32(r + 12, n);
	for (i = 0; i < n; i++)
		r[FETCH_REPLY_LEN + i] = c_pat(C.nodes - 1, tag, off + i);
	hm->fetches++;
	return fp_send(fp, T_FETCH_REPLY, F_REPLY, h->seq, 0, r,
		       FETCH_REPLY_LEN + n);
}

/* The requests incarnation hm->inc of the home serves: FETCHes of L. */
static int serve(struct fake_peer *fp, const struct fp_hdr *h,
		 const uint8_t *p, void *ctx)
{
	return h->type == T_FETCH ? fetch(fp, ctx, h, p) : -ENOSYS;
}

static void fake_home(struct __test_metadata *_metadata)
{
	struct fake_peer fp;
	struct home hm = { .inc = 1 };
	uint64_t inc1 = 0x2f6a000000000001ULL ^ c_now_ms() << 8;
	int ret;

	ASSERT_EQ(0, c_poll(0, W_LR_READY, 1, 120, NULL));
	ret = c_fake_node_up(&fp, inc1);
	ASSERT_EQ(0, ret) TH_LOG("incarnation 1: %s", strerror(-ret));
	ASSERT_EQ(0, c_put(C.self, W_LR_UP, 1));
	ret = c_fake_home(&fp, W_LR_HELD, 120, serve, &hm);
	ASSERT_EQ(0, ret) TH_LOG("incarnation 1 serving: %s", strerror(-ret));
	TH_LOG("incarnation 1 served %u FETCHes of L", hm.fetches);
	EXPECT_LE(2U, hm.fetches);	/* the borrow's, the first page's */
	/* the restart: the old connection goes, a new incarnation dials */
	fp_close(&fp);
	hm = (struct home){ .inc = 2 };
	ret = c_fake_node_up(&fp, inc1 + 0x100);
	ASSERT_EQ(0, ret) TH_LOG("incarnation 2: %s", strerror(-ret));
	ASSERT_EQ(0, c_put(C.self, W_LR_UP, 2));
	ret = c_fake_home(&fp, W_LR_DONE, 120, serve, &hm);
	EXPECT_EQ(0, ret) TH_LOG("incarnation 2 serving: %s", strerror(-ret));
	/* refused by its incarnation, the fetch is not even sent */
	TH_LOG("incarnation 2 served %u FETCHes of L", hm.fetches);
	ASSERT_EQ(0, c_put(C.self, W_LR_VERDICT, 1 + hm.fetches));
	fp_close(&fp);
}

/* ---- node 0: the module under test ----------------------------------------- */

struct held_touch {
	const volatile uint8_t *p;
	int v;
};

static void *touch_fn(void *arg)
{
	struct held_touch *ht = arg;

	ht->v = c_touch(ht->p);
	return NULL;
}

/* Wait (10 s at most) until the counter reached want: true if it did. */
static bool stat_reached(const char *name, uint64_t want)
{
	uint64_t end = c_now_ms() + 10000, v;

	while (((v = c_stat(name)) < want || v == ~0ULL) &&
	       c_now_ms() < end)
		c_sleep_ms(20);
	return v >= want && v != ~0ULL;
}

/* /sys/kernel/odsm/NAME, or 0 when it cannot be read */
static uint64_t knob(const char *name)
{
	unsigned long long v = 0;
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/odsm/%s", name);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static void target(struct __test_metadata *_metadata)
{
	uint64_t holds, sigbus, stale, v = 0, ra, thr;
	struct held_touch ht = { .v = -2 };
	const volatile uint8_t *p;
	struct odsm_borrow b = { .gaddr = l_colored() };
	bool held, up2;
	int ret, v2;
	pthread_t th;

	holds = c_stat("fault_holds");
	sigbus = c_stat("sigbus_lazy");
	stale = c_stat("lazy_stale");
	ra = knob("readahead_pages");
	thr = knob("lazy_threshold");
	ASSERT_NE(~0ULL, holds) TH_LOG("no fault_holds counter");
	ASSERT_NE(~0ULL, sigbus);
	ASSERT_NE(0ULL, ra);
	ASSERT_NE(0ULL, thr);
	ASSERT_EQ(0, c_set_knob("lazy_threshold", L_SIZE));
	ASSERT_EQ(0, c_set_knob("readahead_pages", 1));
	ASSERT_EQ(0, c_put(C.self, W_LR_READY, 1));

	/* incarnation 1 is up: 1. the borrow, a lazy copy of its L */
	ASSERT_EQ(0, c_poll(1, W_LR_UP, 1, 120, NULL));
	ASSERT_TRUE(c_fake_node_is_up());
	ret = ioctl(odsm_rt.fd, ODSM_IOC_BORROW, &b) ? -errno : 0;
	ASSERT_EQ(0, ret) TH_LOG("borrow of L: %s", odsm_strerror(ret));
	ASSERT_EQ(L_SIZE, b.size);
	p = (const volatile uint8_t *)(uintptr_t)b.addr;
	ASSERT_EQ(c_pat(C.nodes - 1, TAG_L1, 5), c_touch(p + 5));

	/* 2. a touch of a page not fetched yet, held before its FETCH */
	ASSERT_EQ(0, f_param("fault_hold_lazy", 1));
	ht.p = p + AT;
	ret = pthread_create(&th, NULL, touch_fn, &ht);
	if (ret) {
		f_param("fault_hold_lazy", 0);
		ASSERT_EQ(0, ret);
	}
	held = stat_reached("fault_holds", holds + 1);
	/* 3. the home restarts meanwhile: incarnation 2 is up */
	ret = c_put(C.self, W_LR_HELD, 1);
	if (!ret)
		ret = c_poll(1, W_LR_UP, 2, 120, NULL);
	up2 = !ret && c_fake_node_is_up();
	/* 4. the fault goes on (no assertion before: it would wait) */
	f_param("fault_hold_lazy", 0);
	pthread_join(th, NULL);
	v2 = c_touch(p + AT);
	ASSERT_EQ(0, c_put(C.self, W_LR_DONE, 1));
	ASSERT_TRUE(held) TH_LOG("the lazy fault was not held (fault_holds)");
	ASSERT_TRUE(up2) TH_LOG("incarnation 2 of the home did not come up");

	TH_LOG("the held touch: %s (%d), a second touch: %s; lazy_stale +%" PRIu64 ", sigbus_lazy +%" PRIu64,
	       ht.v < 0 ? "SIGBUS" : "a byte", ht.v, v2 < 0 ? "SIGBUS" : "a byte",
	       c_stat("lazy_stale") - stale, c_stat("sigbus_lazy") - sigbus);
	EXPECT_EQ(-1, ht.v) {
		TH_LOG("the held touch read %d: incarnation 2's byte is %u, incarnation 1's %u",
		       ht.v, c_pat(C.nodes - 1, TAG_L2, AT),
		       c_pat(C.nodes - 1, TAG_L1, AT));
	}
	EXPECT_NE(c_pat(C.nodes - 1, TAG_L2, AT), ht.v) {
		TH_LOG("the copy of incarnation 1's L was filled with incarnation 2's bytes");
	}
	EXPECT_EQ(-1, v2);
	EXPECT_LT(sigbus, c_stat("sigbus_lazy"));
	ioctl(odsm_rt.fd, ODSM_IOC_RETURN, &b);

	ASSERT_EQ(0, c_poll(1, W_LR_VERDICT, 1, 120, &v));
	TH_LOG("incarnation 2 of the home got %" PRIu64 " FETCH(es) of L",
	       v - 1);
	EXPECT_EQ(0, c_set_knob("readahead_pages", ra));
	EXPECT_EQ(0, c_set_knob("lazy_threshold", thr));
}

TEST_F_TIMEOUT(cl, lazy_fault_across_restart, 300)
{
	C_FAKE_NODE_BEGIN();
	if (C.self == 0)
		target(_metadata);
	else
		fake_home(_metadata);
}

TEST_HARNESS_MAIN
