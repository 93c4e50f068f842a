// SPDX-License-Identifier: GPL-2.0
/*
 * The receiver's window of served sequence numbers (kmod/odsm_fault.c):
 * a request it served already is dropped without a reply (a replay must
 * never run twice), but one merely older than the window (1024 numbers
 * below the sender's newest) is answered -EAGAIN and not served.  A
 * sender numbers its calls to every node from one counter, so an honest
 * call that lost its CPU after taking its number can arrive that late;
 * it was dropped like a replay, and its caller waited out the whole
 * timeout for a reply that never came.
 *
 * The sender is the rig's fake node (rig.fake_peer=1), spoken for by
 * node 1 with fake_peer.h; node 0 is the module under test:
 *
 *   1. a READ numbered 5000: answered (status 0);
 *   2. a READ numbered 100, older than the window: answered -EAGAIN at
 *      once (requests_refused +1 on node 0);
 *   3. the READ numbered 5000 again: no reply within 3 s
 *      (dup_requests +1 on node 0).
 */
#include "odsm_cluster.h"
#include "fake_peer.h"
#include "fake_node.h"

/* directory words: 280 .. 282 */
enum {
	W_RW_READY = 280,	/* node 0: 1 once it took its counters */
	W_RW_DONE,		/* node 1: 1 once the three requests went */
	W_RW_CHECKED,		/* node 0: 1 once it checked its counters */
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

/* A READ of node 0's magic numbered seq; its reply's status in *st. */
static int read_numbered(struct fake_peer *fp, uint64_t seq, int32_t *st,
			 unsigned int secs)
{
	uint8_t b[8];

	fp->next_seq = seq;
	if (fp_read_req(fp, c_word(0, W_MAGIC), 8) != seq)
		return -EIO;
	return fp_reply(fp, seq, st, b, sizeof(b), secs);
}

/* node 0 asks the fake node nothing here: every request is refused */
static int serve_none(struct fake_peer *fp, const struct fp_hdr *h,
		      const uint8_t *p, void *ctx)
{
	return -ENOSYS;
}

static void sender(struct __test_metadata *_metadata)
{
	struct fake_peer fp;
	int32_t st = 1;
	uint64_t t0;
	int ret;

	ASSERT_EQ(0, c_poll(0, W_RW_READY, 1, 120, NULL));
	ret = c_fake_node_up(&fp, 0);
	ASSERT_EQ(0, ret) TH_LOG("the fake node's handshake: %s", strerror(-ret));

	ret = read_numbered(&fp, 5000, &st, 30);
	ASSERT_EQ(0, ret) TH_LOG("READ 5000: %s", strerror(-ret));
	EXPECT_EQ(0, st);

	t0 = c_now_ms();
	st = 1;
	ret = read_numbered(&fp, 100, &st, 10);
	EXPECT_EQ(0, ret) {
		TH_LOG("READ 100, older than the window: %s (dropped as a replay: the caller waits out its timeout)",
		       strerror(-ret));
	}
	EXPECT_EQ(-EAGAIN, st);
	TH_LOG("READ 100: status %d after %" PRIu64 " ms", st,
	       c_now_ms() - t0);

	ret = read_numbered(&fp, 5000, &st, 3);
	EXPECT_EQ(-ETIMEDOUT, ret) {
		TH_LOG("READ 5000 again was answered (status %d): a replay must be dropped",
		       st);
	}
	ASSERT_EQ(0, c_put(C.self, W_RW_DONE, 1));
	/* stay up (and answer PINGs) until node 0 read its counters */
	ret = c_fake_home(&fp, W_RW_CHECKED, 120, serve_none, NULL);
	EXPECT_EQ(0, ret);
	fp_close(&fp);
}

static void target(struct __test_metadata *_metadata)
{
	uint64_t refused0 = c_stat("requests_refused");
	uint64_t dup0 = c_stat("dup_requests");

	ASSERT_NE(~0ULL, refused0);
	ASSERT_NE(~0ULL, dup0);
	ASSERT_EQ(0, c_put(C.self, W_RW_READY, 1));
	ASSERT_EQ(0, c_poll(1, W_RW_DONE, 1, 300, NULL));
	EXPECT_EQ(refused0 + 1, c_stat("requests_refused"));
	EXPECT_EQ(dup0 + 1, c_stat("dup_requests"));
	ASSERT_EQ(0, c_put(C.self, W_RW_CHECKED, 1));
}

TEST_F_TIMEOUT(cl, too_old_answered_replay_dropped, 300)
{
	C_FAKE_NODE_BEGIN();
	if (C.self == 0)
		target(_metadata);
	else
		sender(_metadata);
}

TEST_HARNESS_MAIN
