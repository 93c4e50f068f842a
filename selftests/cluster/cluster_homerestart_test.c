// SPDX-License-Identifier: GPL-2.0
/*
 * A home that restarts receives nothing its former incarnation was owed
 * (issue 12, finding 6): not the queued free of an object moved away from
 * it, and no copy of its former objects enters the cache once the node
 * knows of the restart.  A real node keeps its heap across a leave and a
 * join (a free after a mere re-join hits the original itself), so the
 * home here is the rig's fake node (rig.fake_peer=1), spoken for by node 1
 * with fake_peer.h: a home whose new incarnation hands the same colored
 * addresses out again, for new objects with other bytes.
 *
 * Node 0, the module under test, sets the fault injector's test holds
 * (fault_hold_frees, fault_hold_copies: the two windows are otherwise far
 * too short to restart a home in), then
 *   1. moves the fake home's object M here (BORROW_MUT: a FETCH, then the
 *      FREE of M at its home, which stays queued), and
 *   2. borrows the fake home's object C in a second thread (a FETCH, then
 *      the copy waits before it enters the cache), and
 *   3. moves the fake home's object K here keeping its original
 *      (ODSM_MUT_KEEP_ORIGINAL: an owner box in its own heap names K).
 * The fake home, incarnation 1, serves both FETCHes; once node 0 saw both
 * held (fault_holds) the home restarts: it closes its connection and
 * completes a new handshake as incarnation 2.  Node 0 clears the holds,
 * waits for the free to be dealt with, borrows C again and writes K's new
 * address back into its box (ODSM_WB_FREE_OLD: the free of K's original).
 *
 * Expected: incarnation 2 receives no FREE naming M's address (node 1
 * checks), node 0's move_frees_stale grows by one; the held borrow of C
 * fails with -ESTALE (cache_stale_refused grows) and the second borrow
 * reads incarnation 2's bytes; the write-back's free of K names
 * incarnation 1 and is dropped too (move_frees_stale + 2 in all), never
 * reaching incarnation 2.  Without the incarnation checks the FREE
 * reaches incarnation 2, whose new object at M's address it would free,
 * and the copy of incarnation 1 is cached after the node forgot that
 * incarnation's copies: the second borrow hits it and reads the former
 * object's bytes.  The write-back's free once named the incarnation up at
 * the write-back: incarnation 2, freeing its new object at K's address.
 */
#include <pthread.h>
#include "odsm_cluster.h"
#include "odsm_faults.h"
#include "fake_peer.h"
#include "fake_node.h"

/* directory words, beyond the flood programs' 200 .. 242 */
enum {
	W_HR_READY = 250,	/* node 0: 1 once the holds are set */
	W_HR_UP,		/* node 1: the fake home's incarnation (1, 2)
				 * that completed a handshake and was served
				 */
	W_HR_HELD,		/* node 0: 1 once the free and the copy are held */
	W_HR_DONE,		/* node 0: 1 once it cleared the holds and
				 * borrowed C again
				 */
	W_HR_VERDICT,		/* node 1: 1 + the FREEs of M incarnation 2
				 * received
				 */
	W_HR_KFREES,		/* node 1: the FREEs of K incarnation 2
				 * received so far
				 */
};

#define OBJ_SIZE	64U
#define M_OFF		KiB(64)		/* the objects, in the fake's partition */
#define C_OFF		KiB(128)
#define K_OFF		KiB(192)
#define M_COLOR		5U
#define C_COLOR		7U
#define K_COLOR		9U
/* pattern tags: which incarnation's object the bytes are */
#define TAG_M1		1
#define TAG_C1		2
#define TAG_C2		3
#define TAG_M2		4
#define TAG_K1		5
#define TAG_K2		6
#define FETCH_LEN	24U		/* gaddr, offset, len, whole */
#define FETCH_REPLY_LEN	16U		/* size, color, reserved, len */

FIXTURE(cl)
{
	int unused;
};

FIXTURE_SETUP(cl)
{
}

FIXTURE_TEARDOWN(cl)
{
	/* a failed node 0 must not leave a borrower or the frees held */
	if (C.self == 0) {
		f_param("fault_hold_copies", 0);
		f_param("fault_hold_frees", 0);
	}
}

static uint64_t colored(uint64_t addr, unsigned int color)
{
	return addr | (uint64_t)color << ODSM_COLOR_SHIFT;
}

static uint64_t fake_obj(uint64_t off)
{
	return c_part(C.nodes - 1) + off;
}

/* ---- node 1: the fake home ----------------------------------------------- */

struct home {
	unsigned int inc;	/* 1 or 2: which objects it holds */
	unsigned int fetches;	/* FETCHes it served */
	unsigned int frees_m;	/* FREEs that named M's address */
	unsigned int frees_k;	/* and K's */
	unsigned int frees;	/* FREEs of anything */
};

/* The FETCH in p: incarnation hm's object's bytes, or -ESTALE. */
static int fetch(struct fake_peer *fp, struct home *hm,
		 const struct fp_hdr *h, const uint8_t *p)
{
	uint8_t r[FETCH_REPLY_LEN + OBJ_SIZE];
	uint64_t g = get64(p), off = get64(p + 8), a = odsm_addr_of(g);
	uint32_t len = get32(p + 16), whole = get32(p + 20), n;
	unsigned int color, tag;

	if (h->len != FETCH_LEN)
		return fp_send(fp, T_FETCH_REPLY, F_REPLY, h->seq, -EINVAL,
			       NULL, 0);
	if (a == fake_obj(M_OFF)) {
		color = M_COLOR;
		tag = hm->inc == 1 ? TAG_M1 : TAG_M2;
	} else if (a == fake_obj(C_OFF)) {
		color = C_COLOR;
		tag = hm->inc == 1 ? TAG_C1 : TAG_C2;
	} else if (a == fake_obj(K_OFF)) {
		color = K_COLOR;
		tag = hm->inc == 1 ? TAG_K1 : TAG_K2;
	} else {
		color = 0;
		tag = 0;
	}
	if (!tag || odsm_color_of(g) < color || off > OBJ_SIZE)
		return fp_send(fp, T_FETCH_REPLY, F_REPLY, h->seq, -ESTALE,
			       NULL, 0);
	/* as odsm_wire_fetch_span(): whole when whole bytes cover the rest */
	n = OBJ_SIZE - (uint32_t)off;
	if (n > whole && n > len)
		n = len;
	memset(r, 0, sizeof(r));
	put64(r, OBJ_SIZE);
	r[8] = (uint8_t)color;
	r[9] = (uint8_t)(color >> 8);
	put32(r + 12, n);
	for (uint32_t i = 0; i < n; i++)
		r[FETCH_REPLY_LEN + i] = c_pat(C.nodes - 1, tag, off + i);
	hm->fetches++;
	return fp_send(fp, T_FETCH_REPLY, F_REPLY, h->seq, 0, r,
		       FETCH_REPLY_LEN + n);
}

/*
 * The requests incarnation hm->inc of the home serves (c_fake_home()):
 * FETCHes of M and C, and FREEs (a free of one of its objects succeeds,
 * as the new object there would be freed).
 */
static int serve(struct fake_peer *fp, const struct fp_hdr *h,
		 const uint8_t *p, void *ctx)
{
	struct home *hm = ctx;
	uint64_t a;

	switch (h->type) {
	case T_FETCH:
		return fetch(fp, hm, h, p);
	case T_FREE:
		a = h->len == 8 ? odsm_addr_of(get64(p)) : 0;
		hm->frees++;
		if (a == fake_obj(M_OFF))
			hm->frees_m++;
		if (a == fake_obj(K_OFF) && hm->inc == 2)
			c_put(C.self, W_HR_KFREES, ++hm->frees_k);
		fprintf(stderr, "# the home's incarnation %u got a FREE of %#" PRIx64 "\n",
			hm->inc, h->len == 8 ? get64(p) : 0);
		return fp_send(fp, T_FREE_REPLY, F_REPLY, h->seq,
			       a == fake_obj(M_OFF) || a == fake_obj(C_OFF) ||
			       a == fake_obj(K_OFF) ? 0 : -EINVAL, NULL, 0);
	}
	return -ENOSYS;
}

static void fake_home(struct __test_metadata *_metadata)
{
	struct fake_peer fp;
	struct home hm = { .inc = 1 };
	uint64_t inc1 = 0x1f6a000000000001ULL ^ c_now_ms() << 8;
	int ret;

	ASSERT_EQ(0, c_poll(0, W_HR_READY, 1, 120, NULL));
	ret = c_fake_node_up(&fp, inc1);
	ASSERT_EQ(0, ret) TH_LOG("incarnation 1: %s", strerror(-ret));
	ASSERT_EQ(0, c_put(C.self, W_HR_UP, 1));
	ret = c_fake_home(&fp, W_HR_HELD, 240, serve, &hm);
	ASSERT_EQ(0, ret) TH_LOG("incarnation 1 serving: %s", strerror(-ret));
	TH_LOG("incarnation 1 served %u FETCHes, got %u FREEs", hm.fetches,
	       hm.frees);
	EXPECT_EQ(3U, hm.fetches);
	/* the restart: the old connection goes, a new incarnation dials */
	fp_close(&fp);
	hm = (struct home){ .inc = 2 };
	ret = c_fake_node_up(&fp, inc1 + 0x100);
	ASSERT_EQ(0, ret) TH_LOG("incarnation 2: %s", strerror(-ret));
	ASSERT_EQ(0, c_put(C.self, W_HR_UP, 2));
	ret = c_fake_home(&fp, W_HR_DONE, 240, serve, &hm);
	EXPECT_EQ(0, ret) TH_LOG("incarnation 2 serving: %s", strerror(-ret));
	TH_LOG("incarnation 2 served %u FETCHes, got %u FREEs (%u of M's address, %u of K's)",
	       hm.fetches, hm.frees, hm.frees_m, hm.frees_k);
	ASSERT_EQ(0, c_put(C.self, W_HR_VERDICT, 1 + hm.frees_m));
	EXPECT_EQ(0U, hm.frees_m) {
		TH_LOG("the free of M, queued for incarnation 1, reached incarnation 2: it frees the new object at that address");
	}
	EXPECT_EQ(0U, hm.frees_k) {
		TH_LOG("the write-back's free of K, moved from incarnation 1, reached incarnation 2");
	}
	fp_close(&fp);
}

/* ---- node 0: the module under test ----------------------------------------- */

struct held_borrow {
	struct odsm_borrow b;
	int ret;
};

static int borrow(struct odsm_borrow *b, uint64_t cg)
{
	memset(b, 0, sizeof(*b));
	b->gaddr = cg;
	return ioctl(odsm_rt.fd, ODSM_IOC_BORROW, b) ? -errno : 0;
}

static void give_back(uint64_t cg)
{
	struct odsm_borrow b = { .gaddr = cg };

	ioctl(odsm_rt.fd, ODSM_IOC_RETURN, &b);
}

static void *borrow_thread(void *arg)
{
	struct held_borrow *hb = arg;

	hb->ret = borrow(&hb->b, colored(fake_obj(C_OFF), C_COLOR));
	return NULL;
}

/* Wait until stat passed want (10 s at most); its last value. */
static uint64_t stat_wait(const char *stat, uint64_t want)
{
	uint64_t end = c_now_ms() + 10000, v;

	while ((v = c_stat(stat)) < want && c_now_ms() < end)
		c_sleep_ms(20);
	return v;
}

static void target(struct __test_metadata *_metadata)
{
	uint64_t stale0, refused0, frees0, holds0, v = 0, box, kf = 0, *bp;
	struct odsm_borrow_mut m = { 0 }, mk = { 0 };
	struct odsm_write_back wb = { 0 };
	struct held_borrow hb = { .ret = 1 };
	struct odsm_borrow b2;
	uint8_t buf[OBJ_SIZE];
	int64_t bad;
	pthread_t th;
	int ret, ret2;

	stale0 = c_stat("move_frees_stale");
	refused0 = c_stat("cache_stale_refused");
	frees0 = c_stat("remote_frees");
	holds0 = c_stat("fault_holds");
	ASSERT_NE(~0ULL, stale0);
	ASSERT_NE(~0ULL, refused0);
	ASSERT_NE(~0ULL, holds0) TH_LOG("no fault_holds counter");
	ASSERT_EQ(0, f_param("fault_hold_frees", 1));
	ASSERT_EQ(0, f_param("fault_hold_copies", 1));
	ASSERT_EQ(0, c_put(C.self, W_HR_READY, 1));

	/* incarnation 1 is up */
	ASSERT_EQ(0, c_poll(1, W_HR_UP, 1, 120, NULL));
	ASSERT_TRUE(c_fake_node_is_up());

	/* 1. move M here: its free at the home stays queued */
	m.gaddr = colored(fake_obj(M_OFF), M_COLOR);
	ret = ioctl(odsm_rt.fd, ODSM_IOC_BORROW_MUT, &m) ? -errno : 0;
	ASSERT_EQ(0, ret) TH_LOG("BORROW_MUT of M: %s", odsm_strerror(ret));
	ASSERT_EQ((uint32_t)ODSM_BORROWED_MOVED, m.result);
	ASSERT_EQ(OBJ_SIZE, m.size);
	ASSERT_EQ(0, odsm_read(m.new_gaddr, buf, sizeof(buf)));
	EXPECT_EQ(-1, c_check(buf, sizeof(buf), C.nodes - 1, TAG_M1));

	/* 2. borrow C: the copy waits before it enters the cache */
	ASSERT_EQ(0, pthread_create(&th, NULL, borrow_thread, &hb));
	v = stat_wait("fault_holds", holds0 + 2);
	EXPECT_EQ(holds0 + 2, v) {
		TH_LOG("the free of M and the copy of C should both be held");
	}
	/* 3. move K here, keeping its original: a box of this node's
	 * names it, and the write-back below frees it
	 */
	ASSERT_EQ(0, odsm_alloc(32, 16, ODSM_ALLOC_ZERO, &box));
	bp = odsm_ptr(box);
	bp[0] = colored(fake_obj(K_OFF), K_COLOR);
	mk.gaddr = bp[0];
	mk.flags = ODSM_MUT_KEEP_ORIGINAL;
	ret = ioctl(odsm_rt.fd, ODSM_IOC_BORROW_MUT, &mk) ? -errno : 0;
	ASSERT_EQ(0, ret) TH_LOG("BORROW_MUT of K: %s", odsm_strerror(ret));
	ASSERT_EQ((uint32_t)ODSM_BORROWED_MOVED, mk.result);
	ASSERT_EQ(0, odsm_read(mk.new_gaddr, buf, sizeof(buf)));
	EXPECT_EQ(-1, c_check(buf, sizeof(buf), C.nodes - 1, TAG_K1));
	ASSERT_EQ(0, c_put(C.self, W_HR_HELD, 1));

	/* the home restarted: incarnation 2 is up */
	ASSERT_EQ(0, c_poll(1, W_HR_UP, 2, 120, NULL));
	ASSERT_TRUE(c_fake_node_is_up());

	ASSERT_EQ(0, f_param("fault_hold_copies", 0));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0, f_param("fault_hold_frees", 0));
	/* the free is tried (remote_frees), then dropped or sent */
	EXPECT_LE(frees0 + 1, stat_wait("remote_frees", frees0 + 1));
	v = stat_wait("move_frees_stale", stale0 + 1);

	/* 3'. K's new address into its box: the free of K's original */
	wb.owner = odsm_addr_of(box);
	wb.g = mk.new_gaddr;
	wb.flags = ODSM_WB_FREE_OLD;
	ret = ioctl(odsm_rt.fd, ODSM_IOC_WRITE_BACK, &wb) ? -errno : 0;
	EXPECT_EQ(0, ret) TH_LOG("WRITE_BACK of K: %s", odsm_strerror(ret));
	EXPECT_EQ(mk.new_gaddr, bp[0]);
	/* dropped (move_frees_stale), or sent: then the home says so */
	for (uint64_t end = c_now_ms() + 10000; c_now_ms() < end;
	     c_sleep_ms(20))
		if (c_stat("move_frees_stale") >= v + 1 ||
		    (!c_get(1, W_HR_KFREES, &kf) && kf))
			break;

	/* C again: what the home holds at that address now */
	ret2 = borrow(&b2, colored(fake_obj(C_OFF), C_COLOR));
	if (!ret2)
		memcpy(buf, (void *)(uintptr_t)b2.addr, sizeof(buf));
	ASSERT_EQ(0, c_put(C.self, W_HR_DONE, 1));

	EXPECT_EQ(stale0 + 1, v) {
		TH_LOG("move_frees_stale +%" PRIu64 ": the free of M was not dropped for the restarted home",
		       v - stale0);
	}
	EXPECT_EQ(stale0 + 2, c_stat("move_frees_stale")) {
		TH_LOG("the write-back's free of K was not dropped for the restarted home (incarnation 2 got %" PRIu64 ")",
		       kf);
	}
	EXPECT_EQ(0ULL, kf);
	EXPECT_EQ(-ESTALE, hb.ret) {
		TH_LOG("the borrow of C held across the restart: %s, result %u",
		       hb.ret ? odsm_strerror(hb.ret) : "succeeded",
		       hb.b.result);
	}
	EXPECT_LT(refused0, c_stat("cache_stale_refused"));
	EXPECT_EQ(0, ret2) TH_LOG("C again: %s", odsm_strerror(ret2));
	if (!ret2) {
		EXPECT_EQ((uint32_t)ODSM_BORROWED_MISS, b2.result) {
			TH_LOG("C again was a hit: the copy of incarnation 1 was cached after the restart");
		}
		bad = c_check(buf, sizeof(buf), C.nodes - 1, TAG_C2);
		EXPECT_EQ(-1, bad) {
			TH_LOG("C again: byte %" PRId64 " is not incarnation 2's (incarnation 1's bytes: %s)",
			       bad, c_check(buf, sizeof(buf), C.nodes - 1,
					    TAG_C1) == -1 ? "yes" : "no");
		}
		give_back(b2.gaddr);
	}
	if (!hb.ret)
		give_back(hb.b.gaddr);
	EXPECT_EQ(0, odsm_free(m.new_gaddr));
	EXPECT_EQ(0, odsm_free(mk.new_gaddr));
	EXPECT_EQ(0, odsm_free(box));

	ASSERT_EQ(0, c_poll(1, W_HR_VERDICT, 1, 120, &v));
	EXPECT_EQ(1ULL, v) {
		TH_LOG("incarnation 2 of the home got %" PRIu64 " FREE(s) of M",
		       v - 1);
	}
	TH_LOG("move_frees_stale +%" PRIu64 ", cache_stale_refused +%" PRIu64 ", fault_holds +%" PRIu64,
	       c_stat("move_frees_stale") - stale0,
	       c_stat("cache_stale_refused") - refused0,
	       c_stat("fault_holds") - holds0);
}

TEST_F_TIMEOUT(cl, restarted_home, 600)
{
	C_FAKE_NODE_BEGIN();
	if (C.self == 0)
		target(_metadata);
	else
		fake_home(_metadata);
}

TEST_HARNESS_MAIN
