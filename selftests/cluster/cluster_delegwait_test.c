// SPDX-License-Identifier: GPL-2.0
/*
 * A DELEG waits at the runtime's node no longer than its sender's budget
 * (the message's wait_ms, wire protocol version 13), nor longer than the
 * node's own three quarters of its timeout.
 *
 * Before, the runtime's node waited three quarters of its own timeout
 * whatever the sender's was: with a longer timeout than the client's
 * node, a batch still queued when the client had failed the call with
 * -ETIMEDOUT could be handed to the runtime and run after all.  Nodes of
 * the rig share one timeout, so the client here is the rig's fake node
 * (rig.fake_peer=1), spoken for by node 1 with fake_peer.h, which can send
 * any budget: node 0's runtime takes nothing, and the fake node measures
 * how long node 0 takes to fail each batch.
 *
 *   1. wait_ms 400: -ETIMEDOUT after about 400 ms, well before node 0's
 *      own 3/4 of its timeout (3.75 s in make check's run);
 *   2. wait_ms 45000 (the most the wire allows): -ETIMEDOUT after node
 *      0's own 3/4 of its timeout, not the sender's 45 s.
 *
 * Then node 0's runtime finds no batch left to take: both were given up,
 * neither runs late.
 */
#include <linux/odsm_deleg.h>
#include "odsm_cluster.h"
#include "fake_peer.h"
#include "fake_node.h"

/* directory words: 265 .. 267 (cluster_lazyrestart_test has 260 .. 264) */
enum {
	W_DW_EP = 265,		/* node 0: its address is the endpoint */
	W_DW_READY,		/* node 0: 1 once the endpoint is bound */
	W_DW_DONE,		/* node 1: 1 once both batches failed */
};

#define SLOT		1024U
#define DELEG_FIXED	16U
#define BATCH_LEN	(16U + 32U + 8U)	/* header, one APPLY, its arg */
#define SHORT_WAIT	400U

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

/* A DELEG's payload: endpoint ep, budget wait_ms, one APPLY of 8 bytes. */
static uint32_t deleg_msg(uint8_t *m, uint64_t ep, uint32_t wait_ms)
{
	uint8_t *b = m + DELEG_FIXED;

	memset(m, 0, DELEG_FIXED + BATCH_LEN);
	put64(m, ep);
	put32(m + 8, SLOT);
	put32(m + 12, wait_ms);
	put32(b, 1);				/* seq */
	put16(b + 4, 1);			/* count */
	put32(b + 8, 32 + 8);			/* len */
	put64(b + 16, 0x9e3779b97f4a7c15ULL);	/* op: any id but 0 */
	put32(b + 32, 8);			/* arg_len */
	put32(b + 36, 8);			/* ret_max */
	put16(b + 40, ODSM_DREQ_APPLY);		/* kind */
	put32(b + 44, 7);			/* tag */
	return DELEG_FIXED + BATCH_LEN;
}

/*
 * Send one batch with budget wait_ms; its reply's status in *st and how
 * long it took in *ms.  0 or -errno.
 */
static int one_batch(struct fake_peer *fp, uint32_t wait_ms, int32_t *st,
		     uint64_t *ms)
{
	uint8_t m[DELEG_FIXED + BATCH_LEN], r[SLOT];
	uint64_t seq = fp->next_seq++, t0 = c_now_ms();
	int ret;

	ret = fp_send(fp, T_DELEG, 0, seq, 0, m,
		      deleg_msg(m, c_word(0, W_DW_EP), wait_ms));
	if (!ret)
		ret = fp_reply(fp, seq, st, r, sizeof(r), 60);
	*ms = c_now_ms() - t0;
	return ret;
}

/* ---- node 1: the fake node, the client ------------------------------------ */

static void fake_client(struct __test_metadata *_metadata)
{
	uint64_t own = (uint64_t)C.timeout_ms * 3 / 4, ms;
	struct fake_peer fp;
	int32_t st = 0;
	int ret;

	ASSERT_EQ(0, c_poll(0, W_DW_READY, 1, 120, NULL));
	ret = c_fake_node_up(&fp, 0);
	ASSERT_EQ(0, ret) TH_LOG("the fake node's handshake: %s", strerror(-ret));

	/* 1. a budget shorter than node 0's own */
	ret = one_batch(&fp, SHORT_WAIT, &st, &ms);
	ASSERT_EQ(0, ret) TH_LOG("no reply to the first batch: %s", strerror(-ret));
	TH_LOG("wait_ms %u: status %d after %" PRIu64 " ms (node 0's own wait %" PRIu64 " ms)",
	       SHORT_WAIT, st, ms, own);
	EXPECT_EQ(-ETIMEDOUT, st);
	EXPECT_LE(SHORT_WAIT - 50, ms);
	EXPECT_GT(own - own / 5, ms) {
		TH_LOG("node 0 waited its own time, not the sender's");
	}

	/* 2. a budget longer than node 0's own: its own holds */
	ret = one_batch(&fp, 45000, &st, &ms);
	ASSERT_EQ(0, ret) TH_LOG("no reply to the second batch: %s", strerror(-ret));
	TH_LOG("wait_ms 45000: status %d after %" PRIu64 " ms", st, ms);
	EXPECT_EQ(-ETIMEDOUT, st);
	EXPECT_LE(own - 50, ms);
	EXPECT_GT(own + 10000, ms) {
		TH_LOG("node 0 waited the sender's 45 s, not its own time");
	}
	ASSERT_EQ(0, c_put(C.self, W_DW_DONE, 1));
	fp_close(&fp);
}

/* ---- node 0: the module under test ------------------------------------------ */

static void target(struct __test_metadata *_metadata)
{
	struct odsm_deleg_bind bd = { .endpoint = c_word(0, W_DW_EP),
				      .slot_size = SLOT };
	uint8_t req[SLOT];
	struct odsm_deleg_serve a = { .req = (uintptr_t)req,
				      .timeout_ms = 300 };
	int fd = open("/dev/odsm", O_RDWR), ret;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, ODSM_IOC_DELEG_BIND, &bd)) {
		TH_LOG("bind: %s", strerror(errno));
	}
	ASSERT_EQ(0, c_put(C.self, W_DW_READY, 1));
	ASSERT_EQ(0, c_poll(1, W_DW_DONE, 1, 180, NULL));
	/* both batches were given up: none is left for the runtime */
	ret = ioctl(fd, ODSM_IOC_DELEG_SERVE, &a) ? -errno : 0;
	EXPECT_EQ(-EAGAIN, ret) {
		TH_LOG("a batch given up was still queued (node %u, %u bytes)",
		       a.node, a.req_len);
	}
	close(fd);
}

TEST_F(cl, sender_budget)
{
	C_FAKE_NODE_BEGIN();
	if (C.self == 0)
		target(_metadata);
	else
		fake_client(_metadata);
}

TEST_HARNESS_MAIN
