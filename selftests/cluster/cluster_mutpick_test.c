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
#include "restart_copies.h"

static const struct rc_words W = {
	.ready = 274, .up = 275, .held = 276, .done = 277,
};

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

/* A BORROW_MUT of O with flags, naming addr, into *m: 0 or -errno. */
static int borrow_mut_o(struct odsm_borrow_mut *m, uint32_t flags,
			uint64_t addr)
{
	*m = (struct odsm_borrow_mut){ .gaddr = o_colored(), .flags = flags,
				       .addr = addr };
	return ioctl(odsm_rt.fd, ODSM_IOC_BORROW_MUT, m) ? -errno : 0;
}

#define HELD_KEEP	(ODSM_MUT_HELD_REF | ODSM_MUT_KEEP_ORIGINAL)

static void target(struct __test_metadata *_metadata)
{
	struct odsm_borrow b1, b2, b3;
	struct odsm_borrow_mut m;
	int ret;

	rc_two_copies(_metadata, &W, &b1, &b2);

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
	ASSERT_EQ(0, c_put(C.self, W.done, 1));
}

TEST_F_TIMEOUT(cl, mut_names_its_copy, 300)
{
	C_FAKE_NODE_BEGIN();
	if (C.self == 0)
		target(_metadata);
	else
		rc_fake_home(_metadata, &W);
}

TEST_HARNESS_MAIN
