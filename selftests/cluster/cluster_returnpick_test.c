// SPDX-License-Identifier: GPL-2.0
/*
 * A RETURN drops the reference on the copy it names.  A file can hold
 * references on two copies of one colored address: one of a home's former
 * incarnation (orphaned when the home restarted, still borrowed) and one
 * of its new incarnation, which hands the address out again.  A RETURN by
 * colored address alone dropped the current copy's reference, so the copy
 * still in use went idle (and could be evicted under its reader) while
 * the orphan stayed referenced until the file closed.  struct odsm_borrow's
 * addr (what BORROW answered) now names the copy.
 *
 * The home is the rig's fake node (rig.fake_peer=1), spoken for by node 1
 * with fake_peer.h.  Node 0, the module under test:
 *   1. borrows the fake home's object O (4 KiB): copy 1, incarnation 1's;
 *   2. the home restarts (a new handshake as incarnation 2, whose O has
 *      other bytes); node 0 borrows O again: copy 2, incarnation 2's;
 *   3. returns copy 1 (gaddr O, addr copy 1's) and drops the idle copies
 *      (ODSM_IOC_DROP_COPIES);
 *   4. borrows O again: a hit on copy 2, which its borrow still holds.
 * The module before this change dropped copy 2's reference in step 3, so
 * step 4 missed and fetched O anew.  Then each of copy 2's references
 * goes back once, a third return and one naming copy 1 find none.
 *
 * Words of the directories: 270 .. 273 (see odsm_cluster.h).
 */
#include "odsm_cluster.h"
#include "fake_peer.h"
#include "fake_node.h"
#include "restart_copies.h"

static const struct rc_words W = {
	.ready = 270, .up = 271, .held = 272, .done = 273,
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

static void target(struct __test_metadata *_metadata)
{
	struct odsm_drop_copies d = { 0 };
	struct odsm_borrow b1, b2, b3;
	int ret;

	rc_two_copies(_metadata, &W, &b1, &b2);

	/* 3. copy 1 goes back; the idle copies are dropped */
	EXPECT_EQ(0, return_o(b1.addr));
	ASSERT_EQ(0, ioctl(odsm_rt.fd, ODSM_IOC_DROP_COPIES, &d));

	/* 4. copy 2 is still referenced: a hit */
	ret = borrow_o(&b3);
	ASSERT_EQ(0, ret) TH_LOG("the third borrow of O: %s", odsm_strerror(ret));
	TH_LOG("after copy 1's return: dropped %llu, kept %llu; the next borrow: %s",
	       (unsigned long long)d.dropped, (unsigned long long)d.kept,
	       b3.result == ODSM_BORROWED_HIT ? "a hit" : "a miss");
	EXPECT_EQ((uint32_t)ODSM_BORROWED_HIT, b3.result) {
		TH_LOG("copy 1's return dropped copy 2's reference");
	}
	EXPECT_EQ(b2.addr, b3.addr);
	EXPECT_TRUE(holds(b3.addr, TAG_O2));

	/* copy 2's two references go back, then there is none */
	EXPECT_EQ(0, return_o(b3.addr));
	EXPECT_EQ(0, return_o(b2.addr));
	EXPECT_EQ(-ENOENT, return_o(b2.addr));
	EXPECT_EQ(-ENOENT, return_o(b1.addr));
	ASSERT_EQ(0, c_put(C.self, W.done, 1));
}

TEST_F_TIMEOUT(cl, return_names_its_copy, 300)
{
	C_FAKE_NODE_BEGIN();
	if (C.self == 0)
		target(_metadata);
	else
		rc_fake_home(_metadata, &W);
}

TEST_HARNESS_MAIN
