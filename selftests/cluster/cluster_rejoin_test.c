// SPDX-License-Identifier: GPL-2.0
/*
 * After every node left the cluster (odsmctl leave) and joined it again:
 * the peers are up, the objects of every partition are still there (a
 * leave frees nothing), and remote reads, atomics, allocations and frees
 * work over the new connections, over RDMA the peers sent the keys of
 * their objects' blocks when connecting, and with nic_atomics=N flagged
 * atomics fall back to requests.  The scenario runs it with
 * ODSM_REJOINED=1 after the re-join; without it every test SKIPs.
 *
 * Before the leave the scenario runs it once with ODSM_REJOIN_PREP=1:
 * node 1 locks a CAS mutex and a FIFO mutex of node 0 and exits holding
 * them.  After the re-join node 1 is up again, never seen down by node 0
 * (every node left at once), but as another incarnation: its processes
 * are gone, and node 0 takes both locks over (-EOWNERDEAD).  Before the
 * lock words named the holder's incarnation, only a node seen down freed
 * a lock: the CAS one stayed -EBUSY for good, the FIFO one hung.
 */
#include "odsm_cluster.h"

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

#define REJOIN_BEGIN() do { \
	C_BEGIN(); \
	if (!getenv("ODSM_REJOINED")) \
		SKIP(return, "no ODSM_REJOINED: the scenario did not re-join"); \
} while (0)

#define PREP_BEGIN() do { \
	C_BEGIN(); \
	if (!getenv("ODSM_REJOIN_PREP")) \
		SKIP(return, "no ODSM_REJOIN_PREP: not before the leave"); \
} while (0)

/* A mutex of kind on this node guarding an 8-byte zero: its address. */
static int new_mutex(unsigned int kind, uint64_t *mx)
{
	odsm_box b;
	int ret = odsm_box_new(&b, 8, ODSM_ALLOC_ZERO);

	return ret ? ret : odsm_mutex_new(mx, kind, &b);
}

TEST_F_TIMEOUT(cl, locks_left_held, 120)
{
	struct odsm_guard g1, g2;
	uint64_t cas, fifo;
	void *p;

	PREP_BEGIN();
	if (C.self == 0) {
		ASSERT_EQ(0, new_mutex(ODSM_MUTEX_CAS, &cas));
		ASSERT_EQ(0, new_mutex(ODSM_MUTEX_FIFO, &fifo));
		ASSERT_EQ(0, c_put(0, W_REJOIN_FIFO, fifo));
		ASSERT_EQ(0, c_put(0, W_REJOIN_CAS, cas));
		ASSERT_EQ(0, c_poll(1, W_REJOIN_HELD, 0, 100, NULL));
	} else if (C.self == 1) {
		ASSERT_EQ(0, c_poll(0, W_REJOIN_CAS, 0, 100, &cas));
		ASSERT_EQ(0, c_get(0, W_REJOIN_FIFO, &fifo));
		ASSERT_EQ(0, odsm_mutex_lock(cas, &g1, &p));
		ASSERT_EQ(0, odsm_mutex_lock(fifo, &g2, &p));
		/* and this process ends holding both */
		ASSERT_EQ(0, c_put(1, W_REJOIN_HELD, 1));
	}
}

/*
 * Node 1's locks, taken over from its former incarnation: at once for
 * the CAS kind's trylock, and for the FIFO kind's lock within its
 * periodic check of the tickets ahead.
 */
TEST_F_TIMEOUT(cl, locks_of_a_former_incarnation, 120)
{
	uint64_t cas = 0, fifo = 0, held = 0, *p;
	struct odsm_guard g;

	REJOIN_BEGIN();
	if (C.self != 0)
		return;
	if (c_get(0, W_REJOIN_CAS, &cas) || c_get(0, W_REJOIN_FIFO, &fifo) ||
	    c_get(1, W_REJOIN_HELD, &held) || !cas || !fifo || !held)
		SKIP(return, "no locks were left held before the leave");
	ASSERT_EQ(-EOWNERDEAD, odsm_mutex_trylock(cas, &g, (void **)&p));
	EXPECT_EQ(0ULL, *p);
	ASSERT_EQ(0, odsm_mutex_consistent(&g));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	ASSERT_EQ(0, odsm_mutex_trylock(cas, &g, (void **)&p));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	ASSERT_EQ(-EOWNERDEAD, odsm_mutex_lock(fifo, &g, (void **)&p));
	ASSERT_EQ(0, odsm_mutex_consistent(&g));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	ASSERT_EQ(0, odsm_mutex_lock(fifo, &g, (void **)&p));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
}

/* The keys this node holds for node j's blocks (RDMA), or 0. */
static uint32_t peer_keys(unsigned int j)
{
	struct odsm_peer_info p[ODSM_MAX_NODES];
	unsigned int n = ODSM_MAX_NODES;

	if (odsm_status(p, &n, NULL) || j >= n)
		return 0;
	return p[j].keys;
}

/*
 * Keys exchanged when connecting: over RDMA every peer registered the
 * blocks that held objects when the new connection came up (its
 * directory among them) and sent their keys unasked (KEYS), so reading
 * its directory is one-sided at once, with no MAP request.  Over TCP
 * there are no keys.
 */
TEST_F_TIMEOUT(cl, keys_at_connect, 120)
{
	uint64_t map0, rd0, v, t0;
	bool rdma;
	unsigned int j;

	REJOIN_BEGIN();
	rdma = C.transport == ODSM_TRANSPORT_RDMA;
	for (j = 0; j < C.nodes; j++) {
		if (j == C.self)
			continue;
		/* the peer's KEYS follows its handshake: wait for it */
		t0 = c_now_ms();
		while (rdma && !peer_keys(j) && c_now_ms() - t0 < 60000)
			usleep(50000);
		if (!rdma) {
			EXPECT_EQ(0U, peer_keys(j));
			continue;
		}
		ASSERT_LT(0U, peer_keys(j)) {
			TH_LOG("no keys from node %u in 60 s", j);
		}
		map0 = c_stat("map_requests");
		rd0 = c_stat("onesided_reads");
		ASSERT_EQ(0, c_get(j, W_MAGIC, &v));
		EXPECT_EQ(C_DIR_MAGIC ^ j, v);
		EXPECT_EQ(0ULL, c_stat("map_requests") - map0);
		EXPECT_EQ(1ULL, c_stat("onesided_reads") - rd0);
	}
	if (rdma) {
		EXPECT_LT(0ULL, c_stat("keys_sent"));
		EXPECT_LT(0ULL, c_stat("keys_received"));
	} else {
		EXPECT_EQ(0ULL, c_stat("keys_sent"));
		EXPECT_EQ(0ULL, c_stat("keys_received"));
	}
}

#define NIC_ADDS	200

/*
 * The scenario re-joined with nic_atomics=N, as on a device without RDMA
 * atomics: ODSM_ATOMIC_F_NIC atomics fall back to ATOMIC requests, node
 * 0's CPU runs them all (none one-sided, none through a loopback pair),
 * and the total is exact.
 */
TEST_F_TIMEOUT(cl, nic_atomics_fall_back, 180)
{
	uint64_t os0, lp0, rq0, old, v;
	unsigned int i;

	REJOIN_BEGIN();
	ASSERT_FALSE(c_param_on("nic_atomics"));
	ASSERT_EQ(0, c_dir_wait(0, 120));
	os0 = c_stat("onesided_atomics");
	lp0 = c_stat("loop_atomics");
	rq0 = c_stat("remote_atomics");
	for (i = 0; i < NIC_ADDS; i++)
		ASSERT_EQ(0, odsm_fetch_add_nic(c_word(0, W_REJOIN_NIC), 1, &old));
	EXPECT_EQ(0ULL, c_stat("onesided_atomics") - os0);
	EXPECT_EQ(0ULL, c_stat("loop_atomics") - lp0);
	EXPECT_EQ(C.self ? (uint64_t)NIC_ADDS : 0ULL,
		  c_stat("remote_atomics") - rq0);
	ASSERT_EQ(0, c_barrier(0, B_REJOIN_NIC, C.nodes, 180));
	ASSERT_EQ(0, c_get(0, W_REJOIN_NIC, &v));
	EXPECT_EQ((uint64_t)C.nodes * NIC_ADDS, v);
}

TEST_F_TIMEOUT(cl, peers_and_objects_back, 180)
{
	unsigned int state[ODSM_MAX_NODES], j;
	uint8_t in[3000], out[3000];
	uint64_t v, cg;
	int ret;

	REJOIN_BEGIN();
	ASSERT_EQ(0, c_states(state, C.nodes));
	for (j = 0; j < C.nodes; j++)
		EXPECT_EQ(j == C.self ? (unsigned int)ODSM_PEER_SELF :
					(unsigned int)ODSM_PEER_UP, state[j]);
	for (j = 0; j < C.nodes; j++) {
		ret = c_get(j, W_MAGIC, &v);
		ASSERT_EQ(0, ret) {
			TH_LOG("node %u: %s", j, odsm_strerror(ret));
		}
		EXPECT_EQ(C_DIR_MAGIC ^ j, v);
		if (j == C.self)
			continue;
		ASSERT_EQ(0, odsm_fetch_add(c_word(j, W_SCRATCH + C.self), 1, &v));
		ret = odsm_alloc_on(j, sizeof(in), 0, 0, &cg);
		ASSERT_EQ(0, ret) {
			TH_LOG("alloc on node %u: %s", j, odsm_strerror(ret));
		}
		c_fill(in, sizeof(in), C.self, 50);
		ASSERT_EQ(0, odsm_write(cg, in, sizeof(in)));
		ASSERT_EQ(0, odsm_read(cg, out, sizeof(out)));
		EXPECT_EQ(0, memcmp(in, out, sizeof(in)));
		ASSERT_EQ(0, odsm_free(cg));
	}
	ASSERT_EQ(0, c_barrier(0, B_REJOIN_END, C.nodes, 180));
}

TEST_HARNESS_MAIN
