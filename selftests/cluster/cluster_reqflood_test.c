// SPDX-License-Identifier: GPL-2.0
/*
 * An authenticated peer that floods requests and never reads its replies
 * (issue 12, finding 4) must not make node 0 allocate without bound, and
 * node 0 must keep serving the others.  Needs the rig's fake node
 * (rig.fake_peer=1: the cluster has a node more than the rig, whose
 * address is an alias of node 1): node 1 speaks for it with fake_peer.h,
 * completes the handshake with the cluster key, then sends node 0
 * RQ_READS reads of 256 KiB of a 1 MiB object (whose replies fill the
 * socket buffers, as it reads none) and RQ_WRITES writes of 256 KiB each
 * (RQ_WRITES / 4 MiB in all), as fast as node 0 takes them.  Node 0
 * samples its MemAvailable meanwhile: it may drop by at most RQ_MEM_MAX
 * (the per-peer bound of requests in flight, the sockets' buffers and the
 * workers), and requests_refused must count what was turned away.  During
 * the flood node 1's own module must still read node 0.
 */
#include <sys/time.h>
#include "odsm_cluster.h"
#include "fake_peer.h"
#include "fake_node.h"

#define RQ_READS	64
#define RQ_WRITES	384		/* 96 MiB of payload */
#define RQ_MEM_MAX	MiB(40)

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

static uint64_t mem_available(void)
{
	char line[128];
	unsigned long long kb = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb << 10;
}

static void flooder(struct __test_metadata *_metadata)
{
	unsigned int i, reads = 0, writes = 0;
	struct timeval tv = { .tv_sec = 30 };
	struct fake_peer fp;
	uint64_t obj, v, t0;
	int ret;

	ASSERT_EQ(0, c_poll(0, W_RQ_OBJ, 0, 120, &obj));

	ret = c_fake_node_dial(&fp, 0);
	ASSERT_EQ(0, ret) {
		TH_LOG("the fake node %u could not complete a handshake with node 0: %s",
		       C.nodes - 1, strerror(-ret));
	}
	setsockopt(fp.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	t0 = c_now_ms();
	for (i = 0; i < RQ_READS; i++)
		if (fp_read_req(&fp, obj, FP_MAX_DATA))
			reads++;
	/* an address with no object: each is refused, after its copy */
	for (i = 0; i < RQ_WRITES && reads == RQ_READS; i++)
		if (fp_write_req(&fp, c_part(0) + C.in.part_size - MiB(1),
				 NULL, FP_MAX_DATA))
			writes++;
		else
			break;
	TH_LOG("the fake node sent %u reads and %u writes of 256 KiB in %" PRIu64 " ms, reading no reply",
	       reads, writes, c_now_ms() - t0);
	/* node 0 still serves node 1's module */
	t0 = c_now_ms();
	ret = c_get(0, W_MAGIC, &v);
	EXPECT_EQ(0, ret) {
		TH_LOG("node 0 did not serve node 1 during the flood: %s",
		       odsm_strerror(ret));
	}
	TH_LOG("a read of node 0 during the flood took %" PRIu64 " ms",
	       c_now_ms() - t0);
	ASSERT_EQ(0, c_put(C.self, W_RQ_STEP, 1));
	ASSERT_EQ(0, c_poll(0, W_RQ_ACK, 1, 120, NULL));
	fp_close(&fp);
}

static void target(struct __test_metadata *_metadata)
{
	uint64_t obj, m0, m, least, refused0, refused, v = 0, end = 0;
	int ret;

	ret = odsm_alloc(MiB(1), 0, ODSM_ALLOC_ZERO, &obj);
	ASSERT_EQ(0, ret) TH_LOG("alloc: %s", odsm_strerror(ret));
	refused0 = c_stat("requests_refused");
	EXPECT_NE(~0ULL, refused0) TH_LOG("no requests_refused counter");
	m0 = least = mem_available();
	ASSERT_LT(0ULL, m0);
	ASSERT_EQ(0, c_put(C.self, W_RQ_OBJ, obj));
	/* sample until node 1 is done, and 3 s more */
	for (;;) {
		m = mem_available();
		if (m < least)
			least = m;
		if (!end && !c_get(1, W_RQ_STEP, &v) && v >= 1)
			end = c_now_ms() + 3000;
		if (end && c_now_ms() > end)
			break;
		c_sleep_ms(50);
	}
	refused = c_stat("requests_refused") - refused0;
	TH_LOG("MemAvailable %" PRIu64 " MiB before, %" PRIu64 " MiB at the least (-%" PRIu64 " MiB); requests_refused +%" PRIu64,
	       m0 >> 20, least >> 20, (m0 - least) >> 20, refused);
	EXPECT_GE(RQ_MEM_MAX, m0 - least) {
		TH_LOG("a peer's requests grow node 0's memory without bound");
	}
	EXPECT_LT(0ULL, refused);
	ASSERT_EQ(0, c_put(C.self, W_RQ_ACK, 1));
}

TEST_F_TIMEOUT(cl, request_flood, 600)
{
	C_FAKE_NODE_BEGIN();
	if (C.self == 0)
		target(_metadata);
	else
		flooder(_metadata);
}

TEST_HARNESS_MAIN
