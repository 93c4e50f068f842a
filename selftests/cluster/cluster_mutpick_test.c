// SPDX-License-Identifier: GPL-2.0
/*
 * A mutable borrow that consumes a held reference consumes the one on the
 * copy it names.  A file can hold references on two copies of one colored
 * address: one of a home's former incarnation (orphaned when the home
 * restarted, still borrowed) and one of its new incarnation, which hands
 * the address out again.  BORROW_MUT with ODSM_MUT_HELD_REF found the
 * reference by colored address alone, the current copy's first: a caller
 * that held the orphan consumed the reference another of its borrows held
 * on the current copy, and took that copy over as its mutable object under
 * the other borrow's reader, while the orphan stayed referenced until the
 * file closed.  struct odsm_borrow_mut's addr (what BORROW answered) now
 * names the copy, as struct odsm_borrow's does for RETURN
 * (cluster_returnpick_test).
 *
 * The home is the rig's fake node (rig.fake_peer=1), spoken for by node 1
 * with fake_peer.h.  Node 0, the module under test:
 *   1. borrows the fake home's object O (4 KiB): copy 1, incarnation 1's;
 *   2. the home restarts (a new handshake as incarnation 2, whose O has
 *      other bytes); node 0 borrows O again: copy 2, incarnation 2's;
 *   3. a mutable borrow of O naming copy 1 (held, KEEP_ORIGINAL): copy 1,
 *      an orphan, cannot become the object, so its reference is consumed
 *      and O is moved (a FETCH of incarnation 2's bytes);
 *   4. borrows O again: a hit on copy 2, which its borrow still holds;
 *   5. a mutable borrow naming copy 2 once only its first borrow holds it
 *      takes copy 2 over.
 * The module before this change refused addr (-EINVAL: reserved), and by
 * address alone took copy 2 over in step 3.  Naming a copy the file does
 * not hold, or addr without ODSM_MUT_HELD_REF, is -EINVAL, nothing
 * consumed.
 *
 * Words of the directories: 274 .. 277 (see odsm_cluster.h).
 */
#include "odsm_cluster.h"
#include "fake_peer.h"
#include "fake_node.h"

enum {
	W_MP_READY = 274,	/* node 0: 1 once it is ready for the home */
	W_MP_UP,		/* node 1: the fake home's incarnation (1, 2)
				 * that completed a handshake
				 */
	W_MP_HELD,		/* node 0: 1 once it holds copy 1 */
	W_MP_DONE,		/* node 0: 1 once it is done with the home */
};

#define O_SIZE		KiB(4)
#define O_OFF		MiB(2)		/* O, in the fake's partition */
#define O_COLOR		5U
#define TAG_O1		11		/* incarnation 1's bytes */
#define TAG_O2		12		/* incarnation 2's */
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
}

static uint64_t o_addr(void)
{
	return c_part(C.nodes - 1) + O_OFF;
}

static uint64_t o_colored(void)
{
	return o_addr() | (uint64_t)O_COLOR << ODSM_COLOR_SHIFT;
}

/* ---- node 1: the fake home ----------------------------------------------- */

/* The FETCH in p: O's bytes of the incarnation tagged tag, or -ESTALE. */
static int fetch(struct fake_peer *fp, unsigned int tag,
		 const struct fp_hdr *h, const uint8_t *p)
{
	static uint8_t r[FETCH_REPLY_LEN + O_SIZE];
	uint64_t g = get64(p), off = get64(p + 8);
	uint32_t n, i;

	if (h->len != FETCH_LEN || odsm_addr_of(g) != o_addr() ||
	    odsm_color_of(g) < O_COLOR || off >= O_SIZE)
		return fp_send(fp, T_FETCH_REPLY, F_REPLY, h->seq, -ESTALE,
			       NULL, 0);
	n = (uint32_t)(O_SIZE - off);	/* the rest, whole: it is small */
	memset(r, 0, FETCH_REPLY_LEN);
	put64(r, O_SIZE);
	r[8] = (uint8_t)O_COLOR;
	put32(r + 12, n);
	for (i = 0; i < n; i++)
		r[FETCH_REPLY_LEN + i] = c_pat(C.nodes - 1, tag, off + i);
	return fp_send(fp, T_FETCH_REPLY, F_REPLY, h->seq, 0, r,
		       FETCH_REPLY_LEN + n);
}

/* The requests the home serves: FETCHes of O, its bytes tagged *ctx. */
static int serve(struct fake_peer *fp, const struct fp_hdr *h,
		 const uint8_t *p, void *ctx)
{
	return h->type == T_FETCH ? fetch(fp, *(unsigned int *)ctx, h, p) :
				    -ENOSYS;
}

static void fake_home(struct __test_metadata *_metadata)
{
	uint64_t inc1 = 0x3a11000000000001ULL ^ c_now_ms() << 8;
	unsigned int tag = TAG_O1;
	struct fake_peer fp;
	int ret;

	ASSERT_EQ(0, c_poll(0, W_MP_READY, 1, 120, NULL));
	ret = c_fake_node_up(&fp, inc1);
	ASSERT_EQ(0, ret) TH_LOG("incarnation 1: %s", strerror(-ret));
	ASSERT_EQ(0, c_put(C.self, W_MP_UP, 1));
	ret = c_fake_home(&fp, W_MP_HELD, 120, serve, &tag);
	ASSERT_EQ(0, ret) TH_LOG("incarnation 1 serving: %s", strerror(-ret));
	/* the restart: the old connection goes, a new incarnation dials */
	fp_close(&fp);
	ret = c_fake_node_up(&fp, inc1 + 0x100);
	ASSERT_EQ(0, ret) TH_LOG("incarnation 2: %s", strerror(-ret));
	ASSERT_EQ(0, c_put(C.self, W_MP_UP, 2));
	tag = TAG_O2;
	ret = c_fake_home(&fp, W_MP_DONE, 120, serve, &tag);
	EXPECT_EQ(0, ret) TH_LOG("incarnation 2 serving: %s", strerror(-ret));
	fp_close(&fp);
}

/* ---- node 0: the module under test ----------------------------------------- */

/* A BORROW of O into *b: 0 or -errno. */
static int borrow_o(struct odsm_borrow *b)
{
	*b = (struct odsm_borrow){ .gaddr = o_colored() };
	return ioctl(odsm_rt.fd, ODSM_IOC_BORROW, b) ? -errno : 0;
}

/* A RETURN of O's copy at addr: 0 or -errno. */
static int return_o(uint64_t addr)
{
	struct odsm_borrow b = { .gaddr = o_colored(), .addr = addr };

	return ioctl(odsm_rt.fd, ODSM_IOC_RETURN, &b) ? -errno : 0;
}

/* A BORROW_MUT of O with flags, naming addr, into *m: 0 or -errno. */
static int borrow_mut_o(struct odsm_borrow_mut *m, uint32_t flags,
			uint64_t addr)
{
	*m = (struct odsm_borrow_mut){ .gaddr = o_colored(), .flags = flags,
				       .addr = addr };
	return ioctl(odsm_rt.fd, ODSM_IOC_BORROW_MUT, m) ? -errno : 0;
}

/* Do the bytes at addr hold incarnation tag's O? */
static bool holds(uint64_t addr, unsigned int tag)
{
	return c_check((const uint8_t *)(uintptr_t)addr, O_SIZE,
		       C.nodes - 1, tag) < 0;
}

#define HELD_KEEP	(ODSM_MUT_HELD_REF | ODSM_MUT_KEEP_ORIGINAL)

static void target(struct __test_metadata *_metadata)
{
	struct odsm_borrow b1, b2, b3;
	struct odsm_borrow_mut m;
	uint64_t end;
	int ret;

	ASSERT_EQ(0, c_put(C.self, W_MP_READY, 1));
	ASSERT_EQ(0, c_poll(1, W_MP_UP, 1, 120, NULL));
	ASSERT_TRUE(c_fake_node_is_up());

	/* 1. copy 1, incarnation 1's */
	ret = borrow_o(&b1);
	ASSERT_EQ(0, ret) TH_LOG("borrow of O: %s", odsm_strerror(ret));
	ASSERT_EQ(O_SIZE, b1.size);
	ASSERT_TRUE(holds(b1.addr, TAG_O1));

	/* 2. the home restarts; copy 2, incarnation 2's */
	ASSERT_EQ(0, c_put(C.self, W_MP_HELD, 1));
	ret = c_poll(1, W_MP_UP, 2, 120, NULL);
	end = c_now_ms() + 10000;
	while (!ret && !c_fake_node_is_up() && c_now_ms() < end)
		c_sleep_ms(20);
	ASSERT_TRUE(!ret && c_fake_node_is_up()) {
		c_put(C.self, W_MP_DONE, 1);
		TH_LOG("incarnation 2 of the home did not come up");
	}
	ret = borrow_o(&b2);
	ASSERT_EQ(0, ret) TH_LOG("borrow of O again: %s", odsm_strerror(ret));
	EXPECT_EQ((uint32_t)ODSM_BORROWED_MISS, b2.result);
	EXPECT_NE(b1.addr, b2.addr);
	EXPECT_TRUE(holds(b2.addr, TAG_O2));

	/* bad input first: nothing consumed */
	EXPECT_EQ(-EINVAL, borrow_mut_o(&m, HELD_KEEP, b1.addr + 64));
	EXPECT_EQ(-EINVAL, borrow_mut_o(&m, ODSM_MUT_KEEP_ORIGINAL, b1.addr));

	/* 3. the orphan named: its reference goes, O is moved */
	ret = borrow_mut_o(&m, HELD_KEEP, b1.addr);
	ASSERT_EQ(0, ret) TH_LOG("mutable borrow naming copy 1: %s",
				 odsm_strerror(ret));
	TH_LOG("naming copy 1: %s", m.result == ODSM_BORROWED_MOVED ? "moved" :
	       m.result == ODSM_BORROWED_TAKEN ? "took a copy over" : "?");
	EXPECT_EQ((uint32_t)ODSM_BORROWED_MOVED, m.result) {
		TH_LOG("a copy was taken over, not the one named");
	}
	EXPECT_NE(b2.addr, odsm_addr_of(m.new_gaddr));
	EXPECT_EQ(O_SIZE, m.size);
	EXPECT_TRUE(holds(odsm_addr_of(m.new_gaddr), TAG_O2));
	EXPECT_TRUE(holds(b2.addr, TAG_O2)) {
		TH_LOG("copy 2, still borrowed, changed");
	}

	/* 4. copy 2 is still referenced: a hit; copy 1's reference is gone */
	ret = borrow_o(&b3);
	ASSERT_EQ(0, ret) TH_LOG("the third borrow of O: %s", odsm_strerror(ret));
	EXPECT_EQ((uint32_t)ODSM_BORROWED_HIT, b3.result) {
		TH_LOG("naming copy 1 consumed copy 2's reference");
	}
	EXPECT_EQ(b2.addr, b3.addr);
	EXPECT_EQ(-ENOENT, return_o(b1.addr));
	EXPECT_EQ(0, return_o(b3.addr));

	/* 5. copy 2, named while only b2 holds it: taken over */
	ret = borrow_mut_o(&m, HELD_KEEP, b2.addr);
	ASSERT_EQ(0, ret) TH_LOG("mutable borrow naming copy 2: %s",
				 odsm_strerror(ret));
	EXPECT_EQ((uint32_t)ODSM_BORROWED_TAKEN, m.result);
	EXPECT_EQ(b2.addr, odsm_addr_of(m.new_gaddr));
	EXPECT_TRUE(holds(b2.addr, TAG_O2));
	EXPECT_EQ(-ENOENT, return_o(b2.addr));
	ASSERT_EQ(0, c_put(C.self, W_MP_DONE, 1));
}

TEST_F_TIMEOUT(cl, mut_names_its_copy, 300)
{
	C_FAKE_NODE_BEGIN();
	if (C.self == 0)
		target(_metadata);
	else
		fake_home(_metadata);
}

TEST_HARNESS_MAIN
