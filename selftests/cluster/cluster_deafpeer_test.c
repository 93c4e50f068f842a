// SPDX-License-Identifier: GPL-2.0
/*
 * A peer that stops reading, but goes on sending (its PINGs keep it "up"
 * on node 0's heartbeat), must not hold node 0's senders to it for ever.
 *
 * Node 0 sends a message over TCP under the connection's send lock; once
 * the peer's socket is full, a message goes part of the way, and the rest
 * must follow or the stream is lost.  Before 2026-12-01 the rest was
 * tried for as long as the connection lived, and nothing ended a
 * connection whose peer kept talking: the send lock was held for ever,
 * every later sender to that peer waited on it in D state, and so did a
 * leave.  Now the connection is closed once no byte has gone for the
 * cluster's timeout.
 *
 * The deaf peer is the rig's fake node (rig.fake_peer=1), spoken for by
 * node 1 with fake_peer.h: it completes the handshake, then reads nothing
 * and sends a PING every 100 ms.  Node 0 writes 32 MiB to its partition
 * in 128 io_uring WRITEs of 256 KiB at once, then waits for the fake
 * node to be marked down: within DF_LIMIT_MS, every WRITE failed, and
 * peers_down moved.
 */
#include <linux/odsm.h>
#include "odsm_cluster.h"
#include "odsm_async.h"
#include "fake_peer.h"
#include "fake_node.h"

/* directory words: 255 .. 257 (cluster_homerestart_test has 250 .. 254) */
enum {
	W_DF_READY = 255,	/* node 0: 1 once it took its counters */
	W_DF_UP,		/* node 1: 1 once the deaf peer is up */
	W_DF_DONE,		/* node 0: 1 once it has its verdict */
};

#define DF_WRITES	128
#define DF_LEN		(256U << 10)
#define DF_LIMIT_MS	45000

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

/* ---- node 1: the deaf peer ------------------------------------------------- */

static void deaf_peer(struct __test_metadata *_metadata)
{
	uint64_t end, pings = 0, v;
	struct fake_peer fp;
	uint8_t ping[8];
	int ret;

	ASSERT_EQ(0, c_poll(0, W_DF_READY, 1, 120, NULL));
	ret = c_fake_node_up(&fp, 0);
	ASSERT_EQ(0, ret) TH_LOG("the fake node's handshake: %s", strerror(-ret));
	ASSERT_EQ(0, c_put(C.self, W_DF_UP, 1));
	/* read nothing from now on; talk until node 0 has its verdict */
	end = c_now_ms() + DF_LIMIT_MS + 15000;
	while (c_now_ms() < end) {
		if (!c_get(0, W_DF_DONE, &v) && v)
			break;
		put64(ping, c_now_ms() * 1000000);
		if (fp_send(&fp, T_PING, 0, fp.next_seq++, 0, ping,
			    sizeof(ping)))
			break;		/* node 0 closed the connection */
		pings++;
		c_sleep_ms(100);
	}
	TH_LOG("the deaf peer sent %" PRIu64 " PINGs", pings);
	fp_close(&fp);
}

/* ---- node 0: the module under test ------------------------------------------ */

static void target(struct __test_metadata *_metadata)
{
	static struct odsm_rw rw[DF_WRITES];
	struct odsm_async_done d[DF_WRITES];
	uint64_t down0 = c_stat("peers_down"), t0, took;
	unsigned int i, got = 0, failed = 0;
	struct odsm_async *a;
	uint8_t *buf;
	int n;

	ASSERT_NE(~0ULL, down0);
	buf = calloc(1, DF_LEN);
	ASSERT_NE(NULL, buf);
	ASSERT_EQ(0, odsm_async_new(DF_WRITES, &a));
	ASSERT_EQ(0, c_put(C.self, W_DF_READY, 1));
	ASSERT_EQ(0, c_poll(1, W_DF_UP, 1, 120, NULL));
	ASSERT_TRUE(c_fake_node_is_up());

	for (i = 0; i < DF_WRITES; i++) {
		rw[i] = (struct odsm_rw){
			.gaddr = c_part(C.nodes - 1) + (uint64_t)(i % 8) * DF_LEN,
			.buf = (uintptr_t)buf, .len = DF_LEN };
		ASSERT_EQ(0, odsm_async_queue(a, ODSM_IOC_WRITE, &rw[i], i));
	}
	t0 = c_now_ms();
	ASSERT_EQ((int)DF_WRITES, odsm_async_submit(a));
	while (c_fake_node_is_up() && c_now_ms() - t0 < DF_LIMIT_MS)
		c_sleep_ms(100);
	took = c_now_ms() - t0;
	TH_LOG("the deaf peer was marked down after %" PRIu64 " ms (timeout %u ms)",
	       took, C.timeout_ms);
	EXPECT_GT((uint64_t)DF_LIMIT_MS, took) {
		TH_LOG("node 0's senders to a peer that reads nothing were held");
	}
	/* the deaf peer hangs up now: every WRITE ends either way */
	ASSERT_EQ(0, c_put(C.self, W_DF_DONE, 1));
	while (got < DF_WRITES) {
		n = odsm_async_reap(a, d, DF_WRITES, 1);
		ASSERT_LT(0, n);
		for (i = 0; i < (unsigned int)n; i++)
			failed += d[i].result != 0;
		got += n;
	}
	/* nothing answers for the deaf peer */
	EXPECT_EQ((unsigned int)DF_WRITES, failed);
	EXPECT_LT(down0, c_stat("peers_down"));
	odsm_async_free(a);
	free(buf);
}

TEST_F_TIMEOUT(cl, deaf_peer_closed, 300)
{
	C_FAKE_NODE_BEGIN();
	if (C.self == 0)
		target(_metadata);
	else
		deaf_peer(_metadata);
}

TEST_HARNESS_MAIN
