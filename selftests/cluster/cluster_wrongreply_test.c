// SPDX-License-Identifier: GPL-2.0
/*
 * A reply must be of its request's reply type.  A peer that answers a
 * READ of 8 bytes with an ATOMIC_REPLY (8 bytes too, status 0) passed
 * every check before: the header's (a valid reply type, its length in
 * range), the match by seq and node, and the READ's own (8 bytes back).
 * So its bytes were handed to the reader as the object's.  Now the call
 * fails with -EPROTO and bad_msgs counts the reply.
 *
 * The home is the rig's fake node (rig.fake_peer=1), spoken for by node 1
 * with fake_peer.h, which answers node 0's READs of its partition:
 *
 *   1. the first with an ATOMIC_REPLY of 8 bytes: node 0's read fails
 *      -EPROTO, its bad_msgs grows by one, the fake node stays up;
 *   2. the second with a READ_REPLY: node 0 reads those bytes (the
 *      connection and the path are still good);
 *   3. the third with a refusal (-EAGAIN: nothing ran), then its
 *      sending again with a READ_REPLY: node 0's read returns those
 *      bytes, and calls_retried grows by one.  Before, the refusal was
 *      the read's result;
 *   4. an ALLOC of 100 bytes answered with an object of 99 bytes (usable
 *      below the size asked): -EPROTO, bad_msgs +1; before, the 99
 *      reached the caller as the new object's size.
 */
#include "odsm_cluster.h"
#include "fake_peer.h"
#include "fake_node.h"

/* directory words: 258 .. 259 (cluster_deafpeer_test has 255 .. 257) */
enum {
	W_WR_UP = 258,		/* node 1: 1 once the fake node is up */
	W_WR_DONE,		/* node 0: 1 once both reads returned */
};

#define WR_WRONG	0x5a5a5a5a5a5a5a5aULL	/* the ATOMIC_REPLY's bytes */
#define WR_RIGHT	0x0123456789abcdefULL	/* the READ_REPLY's */

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

/* ---- node 1: the fake node, the home ---------------------------------------- */

/*
 * The requests the home serves (c_fake_home()): node 0's READs, the
 * first with an ATOMIC_REPLY, the next ones with READ_REPLYs; *ctx
 * counts them.
 */
static int serve(struct fake_peer *fp, const struct fp_hdr *h,
		 const uint8_t *p, void *ctx)
{
	unsigned int *reads = ctx;
	uint8_t b[16];

	if (h->type == T_ALLOC) {
		put64(b, c_part(C.nodes - 1) + 4096);
		put64(b + 8, 99);
		return fp_send(fp, T_ALLOC_REPLY, F_REPLY, h->seq, 0, b, 16);
	}
	if (h->type != T_READ)
		return -ENOSYS;
	put64(b, (*reads)++ ? WR_RIGHT : WR_WRONG);
	if (*reads == 3)	/* refused: nothing ran */
		return fp_send(fp, T_READ_REPLY, F_REPLY, h->seq, -EAGAIN,
			       NULL, 0);
	return fp_send(fp, *reads == 1 ? T_ATOMIC_REPLY : T_READ_REPLY,
		       F_REPLY, h->seq, 0, b, 8);
}

static void fake_home(struct __test_metadata *_metadata)
{
	unsigned int reads = 0;
	struct fake_peer fp;
	int ret;

	ret = c_fake_node_up(&fp, 0);
	ASSERT_EQ(0, ret) TH_LOG("the fake node's handshake: %s", strerror(-ret));
	ASSERT_EQ(0, c_put(C.self, W_WR_UP, 1));
	ret = c_fake_home(&fp, W_WR_DONE, 120, serve, &reads);
	EXPECT_EQ(0, ret) TH_LOG("serving: %s", strerror(-ret));
	EXPECT_EQ(4U, reads);
	fp_close(&fp);
}

/* ---- node 0: the module under test ------------------------------------------ */

static void target(struct __test_metadata *_metadata)
{
	uint64_t addr = c_part(C.nodes - 1), bad0, bad1, v = 0;
	int ret;

	ASSERT_EQ(0, c_poll(1, W_WR_UP, 1, 120, NULL));
	ASSERT_TRUE(c_fake_node_is_up());

	/* 1. answered with an ATOMIC_REPLY */
	bad0 = c_stat("bad_msgs");
	ret = odsm_read(addr, &v, sizeof(v));
	bad1 = c_stat("bad_msgs");
	TH_LOG("a READ answered with an ATOMIC_REPLY: %d (%s), bad_msgs +%" PRIu64,
	       ret, ret ? strerror(-ret) : "read", bad1 - bad0);
	EXPECT_EQ(-EPROTO, ret) {
		TH_LOG("the reply of another type was taken: %#" PRIx64, v);
	}
	EXPECT_EQ(bad0 + 1, bad1);
	EXPECT_TRUE(c_fake_node_is_up());

	/* 2. answered with a READ_REPLY */
	v = 0;
	ret = odsm_read(addr, &v, sizeof(v));
	EXPECT_EQ(0, ret) TH_LOG("the second read: %s", strerror(-ret));
	EXPECT_EQ(WR_RIGHT, v);

	/* 3. refused once, then answered */
	v = 0;
	bad0 = c_stat("calls_retried");
	ret = odsm_read(addr, &v, sizeof(v));
	EXPECT_EQ(0, ret) TH_LOG("a read refused once: %s", strerror(-ret));
	EXPECT_EQ(WR_RIGHT, v);
	EXPECT_EQ(bad0 + 1, c_stat("calls_retried"));

	/* 4. an object smaller than asked */
	bad0 = c_stat("bad_msgs");
	ret = odsm_alloc_on(C.nodes - 1, 100, 0, 0, &v);
	EXPECT_EQ(-EPROTO, ret) TH_LOG("an ALLOC answered 99 usable bytes: %s",
				       ret ? strerror(-ret) : "taken");
	EXPECT_EQ(bad0 + 1, c_stat("bad_msgs"));
	ASSERT_EQ(0, c_put(C.self, W_WR_DONE, 1));
}

TEST_F(cl, reply_of_another_type)
{
	C_FAKE_NODE_BEGIN();
	if (C.self == 0)
		target(_metadata);
	else
		fake_home(_metadata);
}

TEST_HARNESS_MAIN
