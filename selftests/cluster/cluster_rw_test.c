// SPDX-License-Identifier: GPL-2.0
/*
 * Remote reads, writes, allocations and frees between every pair of nodes
 * (ODSM_IOC_READ / ODSM_IOC_WRITE / ODSM_IOC_ALLOC with ODSM_ALLOC_ON_NODE /
 * ODSM_IOC_FREE), run on every node of the cluster at once.
 *
 * Each node publishes objects of its own partition holding a pattern that
 * names it (8 bytes, 4 KiB, 1 MiB: one to five 256 KiB chunks of the
 * wire), every node reads every peer's and checks the bytes; then every
 * node writes into its peers' objects and each owner checks, through its
 * own mapping of the heap, that the bytes arrived.  Writes while a timer
 * signals every writer keep the connections up.  The tests run in file
 * order; heap barriers (node 0's directory) keep the phases apart.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include "odsm_cluster.h"

#define NSIZES	3
static const uint64_t sizes[NSIZES] = { 8, KiB(4), MiB(1) };

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

/* Every node's directory is where every node expects it, and every peer
 * is up.
 */
TEST_F_TIMEOUT(cl, directories, 150)
{
	unsigned int state[ODSM_MAX_NODES], j;
	uint64_t v;

	C_BEGIN();
	ASSERT_EQ(0, c_states(state, C.nodes));
	for (j = 0; j < C.nodes; j++) {
		if (j == C.self) {
			EXPECT_EQ((unsigned int)ODSM_PEER_SELF, state[j]);
			continue;
		}
		EXPECT_EQ((unsigned int)ODSM_PEER_UP, state[j]) {
			TH_LOG("node %u is not up (state %u)", j, state[j]);
		}
	}
	for (j = 0; j < C.nodes; j++) {
		ASSERT_EQ(0, c_dir_wait(j, 120)) {
			TH_LOG("node %u's directory never appeared", j);
		}
	}
	/* remote reads of the directories: the colour of the address is
	 * ignored
	 */
	for (j = 0; j < C.nodes; j++) {
		uint64_t colored = c_word(j, W_MAGIC) |
				   (0xbeefULL << ODSM_COLOR_SHIFT);

		ASSERT_EQ(0, odsm_read(colored, &v, sizeof(v)));
		EXPECT_EQ(C_DIR_MAGIC ^ j, v);
	}
	ASSERT_EQ(0, c_barrier(0, B_RW_READY, C.nodes, 120));
}

/* Each node's three objects, read by every other node. */
TEST_F_TIMEOUT(cl, remote_read, 300)
{
	uint64_t cg[NSIZES], peer[NSIZES], t0;
	unsigned int j, k;
	uint8_t *buf;
	int64_t bad;
	int ret;

	C_BEGIN();
	buf = malloc(MiB(1));
	ASSERT_NE(NULL, buf);
	/* publish mine: the bytes go in through the mapping, the words
	 * through the ioctl
	 */
	for (k = 0; k < NSIZES; k++) {
		ASSERT_EQ(0, odsm_alloc(sizes[k], 0, 0, &cg[k]));
		ASSERT_TRUE(c_in_part(cg[k], C.self));
		c_fill(odsm_ptr(cg[k]), sizes[k], C.self, k);
		/* a local ODSM_IOC_READ sees the same bytes */
		memset(buf, 0, sizes[k]);
		ASSERT_EQ(0, odsm_read(cg[k], buf, sizes[k]));
		ASSERT_EQ(-1, c_check(buf, sizes[k], C.self, k));
	}
	for (k = 0; k < NSIZES; k++)
		ASSERT_EQ(0, c_put(C.self, W_RW_SMALL + k, cg[k]));

	for (j = 0; j < C.nodes; j++) {
		if (j == C.self)
			continue;
		for (k = 0; k < NSIZES; k++) {
			ASSERT_EQ(0, c_poll(j, W_RW_SMALL + k, 0, 120, &peer[k]));
			EXPECT_TRUE(c_in_part(peer[k], j)) {
				TH_LOG("node %u published 0x%" PRIx64 " outside its partition",
				       j, peer[k]);
			}
			memset(buf, 0, sizes[k]);
			t0 = c_now_ms();
			ret = odsm_read(peer[k], buf, sizes[k]);
			ASSERT_EQ(0, ret) {
				TH_LOG("read %" PRIu64 " bytes of node %u: %s", sizes[k],
				       j, odsm_strerror(ret));
			}
			bad = c_check(buf, sizes[k], j, k);
			EXPECT_EQ(-1, bad) {
				TH_LOG("node %u's %" PRIu64 "-byte object differs at byte %" PRId64,
				       j, sizes[k], bad);
			}
			if (k == NSIZES - 1)
				TH_LOG("1 MiB from node %u in %" PRIu64 " ms", j,
				       c_now_ms() - t0);
		}
		/* a piece across the 256 KiB chunks, at odd offsets */
		memset(buf, 0, MiB(1));
		ASSERT_EQ(0, odsm_read(peer[2] + 12345, buf, 600001));
		for (k = 0; k < 600001; k++)
			if (buf[k] != c_pat(j, 2, 12345 + k))
				break;
		EXPECT_EQ(600001U, k);
		/* one byte, the last one */
		ASSERT_EQ(0, odsm_read(peer[2] + MiB(1) - 1, buf, 1));
		EXPECT_EQ(c_pat(j, 2, MiB(1) - 1), buf[0]);
	}
	free(buf);
	/* nobody changes an object before everyone read it */
	ASSERT_EQ(0, c_barrier(0, B_RW_READ, C.nodes, 180));
}

/*
 * Each node writes its own 4 KiB slot of every peer's inbox, and a new
 * pattern over all of its successor's 1 MiB object; reads them back
 * remotely; then each owner checks its objects through its mapping.
 */
TEST_F_TIMEOUT(cl, remote_write, 300)
{
	unsigned int j, next, prev;
	uint64_t inbox, peer_inbox, big, mybig;
	uint8_t *buf, *in;
	int64_t bad;
	int ret;

	C_BEGIN();
	next = (C.self + 1) % C.nodes;
	prev = (C.self + C.nodes - 1) % C.nodes;
	buf = malloc(MiB(1));
	in = malloc(MiB(1));
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, in);
	ASSERT_EQ(0, odsm_alloc(C.nodes * KiB(4), 0, ODSM_ALLOC_ZERO, &inbox));
	ASSERT_EQ(0, c_put(C.self, W_RW_INBOX, inbox));
	ASSERT_EQ(0, c_get(C.self, W_RW_BIG, &mybig));
	ASSERT_NE(0ULL, mybig);

	for (j = 0; j < C.nodes; j++) {
		if (j == C.self)
			continue;
		ASSERT_EQ(0, c_poll(j, W_RW_INBOX, 0, 120, &peer_inbox));
		ASSERT_TRUE(c_in_part(peer_inbox, j));
		c_fill(in, KiB(4), C.self, 10 + j);
		ret = odsm_write(peer_inbox + C.self * KiB(4), in, KiB(4));
		ASSERT_EQ(0, ret) {
			TH_LOG("write to node %u: %s", j, odsm_strerror(ret));
		}
		memset(buf, 0, KiB(4));
		ASSERT_EQ(0, odsm_read(peer_inbox + C.self * KiB(4), buf, KiB(4)));
		EXPECT_EQ(0, memcmp(in, buf, KiB(4)));
	}

	/* all of the successor's 1 MiB object */
	ASSERT_EQ(0, c_get(next, W_RW_BIG, &big));
	c_fill(in, MiB(1), C.self, 20);
	ret = odsm_write(big, in, MiB(1));
	ASSERT_EQ(0, ret) {
		TH_LOG("1 MiB write to node %u: %s", next, odsm_strerror(ret));
	}
	memset(buf, 0, MiB(1));
	ASSERT_EQ(0, odsm_read(big, buf, MiB(1)));
	bad = c_check(buf, MiB(1), C.self, 20);
	EXPECT_EQ(-1, bad);

	ASSERT_EQ(0, c_barrier(0, B_RW_WRITTEN, C.nodes, 180));

	/* what the peers wrote is in my memory */
	for (j = 0; j < C.nodes; j++) {
		const uint8_t *slot = (const uint8_t *)odsm_ptr(inbox) + j * KiB(4);

		if (j == C.self) {
			for (bad = 0; bad < (int64_t)KiB(4); bad++)
				if (slot[bad])
					break;
			EXPECT_EQ((int64_t)KiB(4), bad);
			continue;
		}
		bad = c_check(slot, KiB(4), j, 10 + C.self);
		EXPECT_EQ(-1, bad) {
			TH_LOG("node %u's write to my inbox differs at %" PRId64, j, bad);
		}
	}
	bad = c_check(odsm_ptr(mybig), MiB(1), prev, 20);
	EXPECT_EQ(-1, bad) {
		TH_LOG("node %u's 1 MiB write differs at %" PRId64, prev, bad);
	}
	free(buf);
	free(in);
	ASSERT_EQ(0, c_barrier(0, B_RW_VERIFIED, C.nodes, 180));
}

/* Is one-sided RDMA turned on (the module parameter onesided)? */
static bool onesided_on(void)
{
	return c_param_on("onesided");
}

/*
 * Over RDMA, reads and writes of a peer's objects (8 bytes, 4 KiB, 1 MiB)
 * go one-sided, straight from/to the peer's registered pages: this node's
 * one-sided counters move and no READ or WRITE request leaves it; every
 * node registered blocks for its peers.  Over TCP, nothing one-sided
 * happens.  The bytes written are the ones remote_write left there.
 */
TEST_F_TIMEOUT(cl, onesided, 300)
{
	uint64_t rd0, wr0, by0, fb0, rr0, rw0, rd1, wr1, by1, fb1, rr1, rw1;
	uint64_t inbox, big, slot;
	unsigned int next, i;
	uint8_t *buf, *in, *in2;
	bool rdma;

	C_BEGIN();
	rdma = C.transport == ODSM_TRANSPORT_RDMA && onesided_on();
	next = (C.self + 1) % C.nodes;
	buf = malloc(MiB(1));
	in = malloc(MiB(1));
	in2 = malloc(KiB(4));
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, in);
	ASSERT_NE(NULL, in2);
	ASSERT_EQ(0, c_get(next, W_RW_INBOX, &inbox));
	ASSERT_EQ(0, c_get(next, W_RW_BIG, &big));
	ASSERT_TRUE(c_in_part(inbox, next));
	ASSERT_TRUE(c_in_part(big, next));
	slot = inbox + C.self * KiB(4);
	c_fill(in, MiB(1), C.self, 20);
	c_fill(in2, KiB(4), C.self, 10 + next);

	rd0 = c_stat("onesided_reads");
	wr0 = c_stat("onesided_writes");
	by0 = c_stat("onesided_bytes");
	fb0 = c_stat("onesided_fallbacks");
	rr0 = c_stat("remote_reads");
	rw0 = c_stat("remote_writes");
	for (i = 0; i < 4; i++) {
		memset(buf, 0, MiB(1));
		ASSERT_EQ(0, odsm_read(slot, buf, 8));
		EXPECT_EQ(0, memcmp(in2, buf, 8));
		ASSERT_EQ(0, odsm_read(slot, buf, KiB(4)));
		EXPECT_EQ(0, memcmp(in2, buf, KiB(4)));
		ASSERT_EQ(0, odsm_read(big, buf, MiB(1)));
		EXPECT_EQ(0, memcmp(in, buf, MiB(1)));
		ASSERT_EQ(0, odsm_write(slot, in2, 8));
		ASSERT_EQ(0, odsm_write(slot, in2, KiB(4)));
		ASSERT_EQ(0, odsm_write(big, in, MiB(1)));
	}
	/* and what was written is there */
	ASSERT_EQ(0, odsm_read(big, buf, MiB(1)));
	EXPECT_EQ(0, memcmp(in, buf, MiB(1)));
	rd1 = c_stat("onesided_reads");
	wr1 = c_stat("onesided_writes");
	by1 = c_stat("onesided_bytes");
	fb1 = c_stat("onesided_fallbacks");
	rr1 = c_stat("remote_reads");
	rw1 = c_stat("remote_writes");
	TH_LOG("%s%s: one-sided reads +%" PRIu64 " writes +%" PRIu64
	       " bytes +%" PRIu64 " fallbacks +%" PRIu64
	       ", READ requests +%" PRIu64 " WRITE requests +%" PRIu64
	       ", blocks registered here %" PRIu64,
	       C.transport == ODSM_TRANSPORT_RDMA ? "rdma" : "tcp",
	       rdma ? " one-sided" : "", rd1 - rd0, wr1 - wr0, by1 - by0,
	       fb1 - fb0, rr1 - rr0, rw1 - rw0, c_stat("mr_registrations"));
	if (rdma) {
		/* 1 MiB is four 256 KiB pieces */
		EXPECT_LE(4U * (2 + 4) + 4, rd1 - rd0);
		EXPECT_LE(4U * (2 + 4), wr1 - wr0);
		EXPECT_LE(9ULL * MiB(1), by1 - by0);
		EXPECT_EQ(0ULL, fb1 - fb0);
		EXPECT_EQ(0ULL, rr1 - rr0);
		EXPECT_EQ(0ULL, rw1 - rw0);
		/* the peers read and wrote this node's objects one-sided */
		EXPECT_LT(0ULL, c_stat("mr_registrations"));
	} else {
		/* TCP, or RDMA with one-sided turned off: requests only */
		EXPECT_EQ(0ULL, rd1 - rd0);
		EXPECT_EQ(0ULL, wr1 - wr0);
		EXPECT_EQ(0ULL, by1 - by0);
		EXPECT_EQ(C.transport == ODSM_TRANSPORT_RDMA ?
			  (rr1 - rr0) + (rw1 - rw0) : 0ULL, fb1 - fb0);
		EXPECT_LE(4U * (2 + 4) + 4, rr1 - rr0);
		EXPECT_LE(4U * (2 + 4), rw1 - rw0);
		EXPECT_EQ(0ULL, c_stat("mr_registrations"));
	}
	/* a block with no object is never registered: the request path
	 * refuses the access, as before
	 */
	fb0 = c_stat("onesided_fallbacks");
	rr0 = c_stat("remote_reads");
	EXPECT_NE(0, odsm_read(c_part(next) + C.in.part_size - KiB(64), buf, 8));
	EXPECT_EQ(C.transport == ODSM_TRANSPORT_RDMA ? 1ULL : 0ULL,
		  c_stat("onesided_fallbacks") - fb0);
	EXPECT_EQ(1ULL, c_stat("remote_reads") - rr0);
	free(buf);
	free(in);
	free(in2);
}

/*
 * Many reads and writes in flight to one peer: eight threads each write
 * and read back their own 128 KiB eighth of the successor's 1 MiB
 * object, eight times, with a pattern of their own each time.  Every read
 * gives what that thread wrote last.  Over RDMA a connection has four
 * one-sided slots (bounce buffers): operations that start while another
 * is in flight are counted (onesided_overlaps), and one that finds every
 * slot in use goes as a request instead of waiting (a spill,
 * onesided_spills), so every read and write is either one-sided or a
 * spill, some overlap and, with eight threads on four slots, some spill.
 * Over TCP neither.  The object holds its usual pattern again at the end.
 */
#define OV_THREADS	8
#define OV_ROUNDS	8
#define OV_PART		KiB(128)

struct ov_arg {
	uint64_t at;
	unsigned int t;
	int ret;		/* the first failed call's, or 0 */
	unsigned int bad;	/* reads that differed */
};

/*
 * Write the successor's 1 MiB object's usual pattern back (the tests that
 * wrote other bytes into it) and read it: 0, -errno, or 1 if it differs.
 */
static int big_restore(uint64_t big)
{
	uint8_t *in = malloc(MiB(1)), *buf = malloc(MiB(1));
	int ret = -ENOMEM;

	if (in && buf) {
		c_fill(in, MiB(1), C.self, 20);
		ret = odsm_write(big, in, MiB(1));
		if (!ret)
			ret = odsm_read(big, buf, MiB(1));
		if (!ret && memcmp(in, buf, MiB(1)))
			ret = 1;
	}
	free(in);
	free(buf);
	return ret;
}

static void *ov_thread(void *p)
{
	struct ov_arg *a = p;
	uint8_t *in = malloc(OV_PART), *out = malloc(OV_PART);
	unsigned int r;

	if (!in || !out) {
		a->ret = -ENOMEM;
		goto out;
	}
	for (r = 0; r < OV_ROUNDS && !a->ret; r++) {
		c_fill(in, OV_PART, C.self, 40 + a->t * OV_ROUNDS + r);
		a->ret = odsm_write(a->at, in, OV_PART);
		if (!a->ret)
			a->ret = odsm_read(a->at, out, OV_PART);
		if (!a->ret && memcmp(in, out, OV_PART))
			a->bad++;
	}
out:
	free(in);
	free(out);
	return NULL;
}

TEST_F_TIMEOUT(cl, onesided_overlap, 300)
{
	uint64_t big, rd0, rd1, wr0, wr1, sp0, sp1, ov0, ov1;
	struct ov_arg a[OV_THREADS] = { 0 };
	pthread_t th[OV_THREADS];
	unsigned int next, t;
	bool rdma;

	C_BEGIN();
	rdma = C.transport == ODSM_TRANSPORT_RDMA && onesided_on();
	next = (C.self + 1) % C.nodes;
	ASSERT_EQ(0, c_get(next, W_RW_BIG, &big));
	rd0 = c_stat("onesided_reads");
	wr0 = c_stat("onesided_writes");
	sp0 = c_stat("onesided_spills");
	ov0 = c_stat("onesided_overlaps");
	for (t = 0; t < OV_THREADS; t++) {
		a[t].at = big + t * OV_PART;
		a[t].t = t;
		ASSERT_EQ(0, pthread_create(&th[t], NULL, ov_thread, &a[t]));
	}
	for (t = 0; t < OV_THREADS; t++) {
		pthread_join(th[t], NULL);
		EXPECT_EQ(0, a[t].ret) {
			TH_LOG("thread %u: %s", t, odsm_strerror(a[t].ret));
		}
		EXPECT_EQ(0U, a[t].bad);
	}
	rd1 = c_stat("onesided_reads");
	wr1 = c_stat("onesided_writes");
	sp1 = c_stat("onesided_spills");
	ov1 = c_stat("onesided_overlaps");
	TH_LOG("%u threads x %u rounds: one-sided reads +%" PRIu64
	       " writes +%" PRIu64 ", started while another was in flight +%"
	       PRIu64 ", spilled as requests +%" PRIu64,
	       OV_THREADS, OV_ROUNDS, rd1 - rd0, wr1 - wr0, ov1 - ov0,
	       sp1 - sp0);
	if (rdma) {
		EXPECT_LT(0ULL, ov1 - ov0);
		EXPECT_LT(0ULL, sp1 - sp0);
		EXPECT_EQ(2ULL * OV_THREADS * OV_ROUNDS,
			  (rd1 - rd0) + (wr1 - wr0) + (sp1 - sp0));
	} else {
		EXPECT_EQ(0ULL, ov1 - ov0);
		EXPECT_EQ(0ULL, sp1 - sp0);
	}
	/* the usual pattern back, for the tests after this one */
	ASSERT_EQ(0, big_restore(big));
}

/*
 * Writes while signals keep coming: a thread whose signal arrives while
 * its request waits for room in the socket must not cut the message
 * short, which would end the connection under every other user of it.
 * Each thread has a timer that signals it every SIG_US microseconds
 * (SA_RESTART, as most programs' handlers are).
 */
#define SIG_THREADS	4
#define SIG_ROUNDS	24
#define SIG_PART	KiB(256)
#define SIG_US		200

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id	_sigev_un._tid
#endif

static __thread volatile unsigned int sigs_got;

static void on_sig(int sig)
{
	(void)sig;
	sigs_got++;
}

struct sig_arg {
	uint64_t at;
	unsigned int t;
	int ret;		/* the first failed call's, or 0 */
	unsigned int bad;	/* reads that differed */
	unsigned int sigs;	/* signals it took */
};

static void *sig_thread(void *p)
{
	struct itimerspec its = { .it_interval.tv_nsec = SIG_US * 1000,
				  .it_value.tv_nsec = SIG_US * 1000 };
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD_ID,
				.sigev_signo = SIGUSR1 };
	uint8_t *in = malloc(SIG_PART), *out = malloc(SIG_PART);
	struct sig_arg *a = p;
	timer_t tm;
	unsigned int r;

	sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
	if (!in || !out || timer_create(CLOCK_MONOTONIC, &sev, &tm)) {
		a->ret = -ENOMEM;
		goto out;
	}
	timer_settime(tm, 0, &its, NULL);
	for (r = 0; r < SIG_ROUNDS && !a->ret; r++) {
		c_fill(in, SIG_PART, C.self, 60 + a->t * SIG_ROUNDS + r);
		a->ret = odsm_write(a->at, in, SIG_PART);
		if (!a->ret)
			a->ret = odsm_read(a->at, out, SIG_PART);
		if (!a->ret && memcmp(in, out, SIG_PART))
			a->bad++;
	}
	timer_delete(tm);
	a->sigs = sigs_got;
out:
	free(in);
	free(out);
	return NULL;
}

TEST_F_TIMEOUT(cl, writes_under_signals, 300)
{
	struct sigaction sa = { .sa_handler = on_sig, .sa_flags = SA_RESTART };
	struct sig_arg a[SIG_THREADS] = { 0 };
	unsigned int next, t, sigs = 0;
	pthread_t th[SIG_THREADS];
	uint64_t big, down0, down1, waits0, waits1;

	C_BEGIN();
	next = (C.self + 1) % C.nodes;
	ASSERT_EQ(0, c_get(next, W_RW_BIG, &big));
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	down0 = c_stat("peers_down");
	waits0 = c_stat("tcp_send_waits");
	for (t = 0; t < SIG_THREADS; t++) {
		a[t].at = big + t * SIG_PART;
		a[t].t = t;
		ASSERT_EQ(0, pthread_create(&th[t], NULL, sig_thread, &a[t]));
	}
	for (t = 0; t < SIG_THREADS; t++) {
		pthread_join(th[t], NULL);
		EXPECT_EQ(0, a[t].ret) {
			TH_LOG("thread %u: %s", t, odsm_strerror(a[t].ret));
		}
		EXPECT_EQ(0U, a[t].bad);
		sigs += a[t].sigs;
	}
	down1 = c_stat("peers_down");
	waits1 = c_stat("tcp_send_waits");
	TH_LOG("%u threads x %u writes of %u KiB: %u signals taken, messages"
	       " a signal cut short finished after waits +%" PRIu64
	       ", peers down +%" PRIu64, SIG_THREADS, SIG_ROUNDS,
	       (unsigned int)(SIG_PART >> 10), sigs, waits1 - waits0,
	       down1 - down0);
	EXPECT_LT(0U, sigs);
	/* no connection ended under the signals */
	EXPECT_EQ(down0, down1);
	signal(SIGUSR1, SIG_IGN);
	/* the usual pattern back, for the tests after this one */
	ASSERT_EQ(0, big_restore(big));
}

static int set_onesided(bool on)
{
	return c_set_param("onesided", on);
}

/*
 * A registered block that empties and is reused keeps its registration,
 * and it names the right pages: a peer's one-sided reads and writes of
 * the block's next object reach that object (the home kept the pinned
 * pages, zeroed, instead of freeing them), with no new MAP.  The home's
 * store serves the same bytes to a READ request.  Each node works in the
 * next node's partition, where nobody else allocates meanwhile (it holds
 * all of it for a while: the next test waits at a barrier).
 */
TEST_F_TIMEOUT(cl, onesided_reuse, 300)
{
	uint64_t cg, cg2 = 0, *keep, max, sz, map0, rd0, wr0, reg0;
	uint8_t a[KiB(4)], b[KiB(4)], got[KiB(4)], zero[KiB(4)];
	unsigned int next, n = 0, i;
	int ret;
	bool rdma;

	C_BEGIN();
	rdma = C.transport == ODSM_TRANSPORT_RDMA && onesided_on();
	next = (C.self + 1) % C.nodes;
	memset(a, 0xa1 + C.self, sizeof(a));
	memset(zero, 0, sizeof(zero));
	c_fill(b, sizeof(b), C.self, 77);

	/* a whole block: one-sided once it is registered */
	ASSERT_EQ(0, odsm_alloc_on(next, KiB(64), 0, ODSM_ALLOC_ZERO, &cg));
	ASSERT_EQ(0ULL, odsm_addr_of(cg) % KiB(64));
	ASSERT_EQ(0, odsm_write(cg, a, sizeof(a)));
	ASSERT_EQ(0, odsm_read(cg, got, sizeof(got)));
	EXPECT_EQ(0, memcmp(a, got, sizeof(a)));
	ASSERT_EQ(0, odsm_free(cg));

	/*
	 * The same block again.  The allocator's next-fit search goes on
	 * after the freed block and hands out every other free block first,
	 * so fill the partition until it comes back: with 1 MiB objects
	 * first, halving the size when none fits, which takes 16 times fewer
	 * calls than 64 KiB blocks (one call per block took minutes with 8
	 * nodes under TCG).
	 * Not zeroed by the allocator: the store's pinned pages are.
	 */
	max = C.in.part_size / MiB(1) + 64;
	keep = calloc(max, sizeof(*keep));
	ASSERT_NE(NULL, keep);
	for (sz = MiB(1); sz >= KiB(64);) {
		ret = odsm_alloc_on(next, sz, 0, 0, &cg2);
		if (ret == -ENOMEM) {
			sz /= 2;
			continue;
		}
		ASSERT_EQ(0, ret) {
			TH_LOG("alloc of %" PRIu64 " bytes on node %u: %s", sz,
			       next, odsm_strerror(ret));
		}
		if (odsm_addr_of(cg2) == odsm_addr_of(cg))
			break;
		if (odsm_addr_of(cg2) < odsm_addr_of(cg) &&
		    odsm_addr_of(cg2) + sz > odsm_addr_of(cg)) {
			/* covers the block: give it back, try smaller ones */
			ASSERT_EQ(0, odsm_free(cg2));
			sz /= 2;
			continue;
		}
		ASSERT_GT(max, n);
		keep[n++] = cg2;
	}
	ASSERT_EQ(odsm_addr_of(cg), odsm_addr_of(cg2)) {
		TH_LOG("the block at %#" PRIx64 " never came back",
		       odsm_addr_of(cg));
	}
	TH_LOG("the block came back after %u others", n);
	EXPECT_NE(odsm_color_of(cg), odsm_color_of(cg2));

	map0 = c_stat("map_requests");
	rd0 = c_stat("onesided_reads");
	wr0 = c_stat("onesided_writes");
	reg0 = c_stat("mr_registrations");
	/* the new object is zero, not the freed one's bytes */
	ASSERT_EQ(0, odsm_read(cg2, got, sizeof(got)));
	EXPECT_EQ(0, memcmp(zero, got, sizeof(got)));
	ASSERT_EQ(0, odsm_write(cg2, b, sizeof(b)));
	ASSERT_EQ(0, odsm_read(cg2, got, sizeof(got)));
	EXPECT_EQ(0, memcmp(b, got, sizeof(got)));
	/* the old registration did it: nothing asked, nothing registered */
	EXPECT_EQ(0ULL, c_stat("map_requests") - map0);
	EXPECT_EQ(0ULL, c_stat("mr_registrations") - reg0);
	EXPECT_EQ(rdma ? 2ULL : 0ULL, c_stat("onesided_reads") - rd0);
	EXPECT_EQ(rdma ? 1ULL : 0ULL, c_stat("onesided_writes") - wr0);

	/* the home's store has the bytes: read them with a request */
	if (rdma)
		ASSERT_EQ(0, set_onesided(false));
	memset(got, 0, sizeof(got));
	EXPECT_EQ(0, odsm_read(cg2, got, sizeof(got)));
	if (rdma)
		ASSERT_EQ(0, set_onesided(true));
	EXPECT_EQ(0, memcmp(b, got, sizeof(got)));

	for (i = 0; i < n; i++)
		EXPECT_EQ(0, odsm_free(keep[i]));
	free(keep);
	EXPECT_EQ(0, odsm_free(cg2));
	/* the partitions are whole again before the next test allocates */
	ASSERT_EQ(0, c_barrier(0, B_RW_REUSE_DONE, C.nodes, 300));
}

/* Objects allocated in every peer's partition, used and freed. */
TEST_F_TIMEOUT(cl, remote_alloc_free, 300)
{
	uint8_t zero[1000] = { 0 }, in[1000], out[1000];
	uint64_t cg, cg2, big, al;
	struct odsm_alloc a = { 0 };
	unsigned int j;
	int ret;

	C_BEGIN();
	for (j = 0; j < C.nodes; j++) {
		if (j == C.self)
			continue;
		ret = odsm_alloc_on(j, 1000, 0, ODSM_ALLOC_ZERO, &cg);
		ASSERT_EQ(0, ret) {
			TH_LOG("alloc on node %u: %s", j, odsm_strerror(ret));
		}
		ASSERT_TRUE(c_in_part(cg, j));
		memset(out, 0xff, sizeof(out));
		ASSERT_EQ(0, odsm_read(cg, out, sizeof(out)));
		EXPECT_EQ(0, memcmp(zero, out, sizeof(out)));
		c_fill(in, sizeof(in), C.self, 30);
		ASSERT_EQ(0, odsm_write(cg, in, sizeof(in)));
		ASSERT_EQ(0, odsm_read(cg, out, sizeof(out)));
		EXPECT_EQ(0, memcmp(in, out, sizeof(out)));
		ASSERT_EQ(0, odsm_free(cg));
		/* twice is once too many: the object is gone */
		EXPECT_EQ(-ESTALE, odsm_free(cg));

		/* an address handed out again gets a newer colour, and the
		 * older one no longer frees it
		 */
		ASSERT_EQ(0, odsm_alloc_on(j, 1000, 0, 0, &cg2));
		ASSERT_TRUE(c_in_part(cg2, j));
		if (odsm_addr_of(cg2) == odsm_addr_of(cg)) {
			EXPECT_LT(odsm_color_of(cg), odsm_color_of(cg2));
			EXPECT_EQ(-ESTALE, odsm_free(cg));
		}
		ASSERT_EQ(0, odsm_free(cg2));

		/* several blocks, and an aligned slot */
		ret = odsm_alloc_on(j, MiB(3) + 5, 0, 0, &big);
		ASSERT_EQ(0, ret) {
			TH_LOG("3 MiB on node %u: %s", j, odsm_strerror(ret));
		}
		ASSERT_TRUE(c_in_part(big, j));
		ASSERT_EQ(0, odsm_write(big + MiB(3), in, 5));
		ASSERT_EQ(0, odsm_read(big + MiB(3), out, 5));
		EXPECT_EQ(0, memcmp(in, out, 5));
		ASSERT_EQ(0, odsm_free(big));
		ASSERT_EQ(0, odsm_alloc_on(j, 24, 4096, 0, &al));
		EXPECT_EQ(0ULL, odsm_addr_of(al) % 4096);
		ASSERT_TRUE(c_in_part(al, j));
		ASSERT_EQ(0, odsm_free(al));

		/* what the home node refuses comes back as is */
		EXPECT_EQ(-EINVAL, odsm_alloc_on(j, 0, 0, 0, &cg));
		EXPECT_EQ(-EINVAL, odsm_alloc_on(j, 64, 3, 0, &cg));
		ret = odsm_alloc_on(j, C.in.part_size * 2, 0, 0, &cg);
		EXPECT_TRUE(ret == -EINVAL || ret == -ENOMEM) {
			TH_LOG("oversized alloc on node %u: %d", j, ret);
		}
		/* a free of a peer's address that is no object */
		EXPECT_EQ(-EINVAL, odsm_free(c_part(j) + C.in.part_size - KiB(64) +
					     (0xf000ULL << ODSM_COLOR_SHIFT)));
	}
	/* here, through the same calls */
	ASSERT_EQ(0, odsm_alloc_on(C.self, 100, 0, 0, &cg));
	EXPECT_TRUE(c_in_part(cg, C.self));
	ASSERT_EQ(0, odsm_free(cg));
	ASSERT_EQ(0, odsm_alloc_anywhere(100, 0, 0, &cg));
	EXPECT_TRUE(c_in_part(cg, C.self)) {
		TH_LOG("ALLOC_ANYWHERE went to another node with room here");
	}
	ASSERT_EQ(0, odsm_free(cg));
	EXPECT_EQ(-EINVAL, odsm_alloc_on(C.nodes, 100, 0, 0, &cg));
	EXPECT_EQ(-EINVAL, odsm_alloc_on(ODSM_MAX_NODES + 5, 100, 0, 0, &cg));
	/* both placements at once */
	a.size = 100;
	a.node = (C.self + 1) % C.nodes;
	a.flags = ODSM_ALLOC_ON_NODE | ODSM_ALLOC_ANYWHERE;
	EXPECT_EQ(-1, ioctl(odsm_rt.fd, ODSM_IOC_ALLOC, &a));
	EXPECT_EQ(EINVAL, errno);
}

static uint64_t free_blocks(void)
{
	FILE *f = fopen("/sys/kernel/odsm/stats/free_blocks", "r");
	unsigned long long v = 0;

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/*
 * Node 0 fills its partition (objects that are never touched cost no
 * memory): then a peer's allocation there gets -ENOMEM, and node 0's
 * ODSM_ALLOC_ANYWHERE goes to the up peer with the most room.
 */
TEST_F_TIMEOUT(cl, full_partition, 300)
{
	static uint64_t fill[4096];
	struct odsm_peer_info p[ODSM_MAX_NODES];
	odsm_box b = { 0 };
	unsigned int nf = 0, j, nr, best = 0;
	uint64_t size, cg, v;
	uint8_t in[256], out[256];
	int ret;

	C_BEGIN();
	/* nobody still allocates on node 0 */
	ASSERT_EQ(0, c_barrier(0, B_RW_ALLOCS_DONE, C.nodes, 180));
	if (C.self != 0) {
		ASSERT_EQ(0, c_poll(0, W_RW_FULL, 0, 180, NULL));
		ret = odsm_alloc_on(0, KiB(100), 0, 0, &cg);
		EXPECT_EQ(-ENOMEM, ret) {
			TH_LOG("allocation on a full node 0: %d (%s)", ret,
			       odsm_strerror(ret));
		}
		if (!ret)
			odsm_free(cg);
		ASSERT_EQ(0, c_barrier(0, B_RW_FULL, C.nodes, 180));
		ASSERT_EQ(0, c_barrier(0, B_RW_FULL_DONE, C.nodes, 180));
		return;
	}
	/* whole blocks until none is left */
	size = free_blocks() * KiB(64);
	if (size > C.in.max_alloc)
		size = C.in.max_alloc & ~(KiB(64) - 1);
	while (size >= KiB(64) && nf < sizeof(fill) / sizeof(fill[0])) {
		ret = odsm_alloc(size, 0, 0, &fill[nf]);
		if (ret == 0) {
			nf++;
			continue;
		}
		ASSERT_EQ(-ENOMEM, ret);
		/* halve, down to single blocks: earlier programs may have
		 * left the free blocks in many runs
		 */
		if (size == KiB(64))
			break;
		size = size / 2 > KiB(64) ? size / 2 : KiB(64);
	}
	ASSERT_EQ(0ULL, free_blocks());
	TH_LOG("node 0 full with %u objects", nf);
	ASSERT_EQ(-ENOMEM, odsm_alloc(KiB(100), 0, 0, &cg));
	ASSERT_EQ(0, c_put(0, W_RW_FULL, 1));

	/* the peer that reported the most room, and ANYWHERE goes there */
	nr = ODSM_MAX_NODES;
	ASSERT_EQ(0, odsm_status(p, &nr, NULL));
	for (j = 1; j < nr; j++)
		if (p[j].free_bytes > p[best].free_bytes || best == 0)
			best = j;
	ret = odsm_alloc_anywhere(KiB(100), 0, 0, &cg);
	ASSERT_EQ(0, ret) {
		TH_LOG("ANYWHERE with node 0 full: %s", odsm_strerror(ret));
	}
	EXPECT_FALSE(c_in_part(cg, 0));
	for (j = 1; j < C.nodes; j++)
		if (c_in_part(cg, j))
			break;
	ASSERT_GT(C.nodes, j);
	TH_LOG("ANYWHERE went to node %u (%" PRIu64 " bytes free), most room: node %u (%" PRIu64 ")",
	       j, (uint64_t)p[j].free_bytes, best, (uint64_t)p[best].free_bytes);
	/* the peers are idle: what they reported last has not changed */
	EXPECT_EQ(p[best].free_bytes, p[j].free_bytes);
	c_fill(in, sizeof(in), 0, 60);
	ASSERT_EQ(0, odsm_write(cg, in, sizeof(in)));
	ASSERT_EQ(0, odsm_read(cg, out, sizeof(out)));
	EXPECT_EQ(0, memcmp(in, out, sizeof(in)));
	ASSERT_EQ(0, odsm_free(cg));
	/* an owner box is placed the same way; ODSM_BOX_HERE insists */
	EXPECT_EQ(-ENOMEM, odsm_box_new(&b, KiB(100), ODSM_BOX_HERE));
	EXPECT_EQ(-EINVAL, odsm_box_new(&b, 64, ODSM_BOX_HERE |
					ODSM_ALLOC_ANYWHERE));
	ret = odsm_box_new(&b, KiB(100), ODSM_ALLOC_ZERO);
	ASSERT_EQ(0, ret) {
		TH_LOG("odsm_box_new with node 0 full: %s", odsm_strerror(ret));
	}
	EXPECT_FALSE(c_in_part(b.g, 0));
	ASSERT_EQ(0, odsm_box_drop(&b));

	ASSERT_EQ(0, c_barrier(0, B_RW_FULL, C.nodes, 180));
	while (nf)
		ASSERT_EQ(0, odsm_free(fill[--nf]));
	ASSERT_EQ(0, c_put(0, W_RW_FULL, 0));
	ASSERT_NE(0ULL, free_blocks());
	ASSERT_EQ(0, c_get(0, W_MAGIC, &v));
	ASSERT_EQ(0, c_barrier(0, B_RW_FULL_DONE, C.nodes, 180));
}

/* Ranges that are not (only) objects of one partition. */
TEST_F_TIMEOUT(cl, bad_ranges, 120)
{
	unsigned int j;
	uint64_t v = 0, end = C.in.heap_base + C.in.heap_size;
	uint8_t buf[64], *big = calloc(1, MiB(8));

	C_BEGIN();
	ASSERT_NE(NULL, big);
	end = C.in.heap_base + C.in.heap_size;
	for (j = 0; j < C.nodes; j++) {
		uint64_t last = c_part(j) + C.in.part_size;	/* past j's */

		if (j == C.self)
			continue;
		/* a block of the peer that holds no object */
		EXPECT_EQ(-EINVAL, odsm_read(last - KiB(4), buf, 8));
		EXPECT_EQ(-EINVAL, odsm_write(last - KiB(4), buf, 8));
		EXPECT_EQ(-EINVAL, odsm_fetch_add(last - KiB(4), 1, &v));
		/* several chunks' worth of free blocks */
		EXPECT_EQ(-EINVAL, odsm_read(last - MiB(8), big, MiB(8)));
		EXPECT_EQ(-EINVAL, odsm_write(last - MiB(8), big, MiB(8)));
		/* across the end of the peer's partition */
		EXPECT_EQ(-EINVAL, odsm_read(last - 8, buf, 16));
		/* an atomic on a word that is not 8-byte aligned */
		EXPECT_EQ(-EINVAL, odsm_fetch_add(c_word(j, W_SCRATCH + C.self) + 4,
						  1, &v));
		/* into a buffer the caller cannot write: the node stays fine */
		EXPECT_EQ(-EFAULT, odsm_read(c_word(j, W_MAGIC), NULL, 8));
		EXPECT_EQ(-EFAULT, odsm_write(c_word(j, W_SCRATCH + C.self),
					      (void *)8, 8));
		ASSERT_EQ(0, c_get(j, W_MAGIC, &v));
		EXPECT_EQ(C_DIR_MAGIC ^ j, v);
	}
	/* across my partition's ends, and outside the heap */
	EXPECT_EQ(-EINVAL, odsm_read(c_part(C.self) - 8, buf, 16));
	EXPECT_EQ(-EINVAL, odsm_read(c_part(C.self) + C.in.part_size - 8,
				     buf, 16));
	EXPECT_EQ(-EINVAL, odsm_read(end - 8, buf, 16));
	EXPECT_EQ(-EINVAL, odsm_read(end, buf, 8));
	EXPECT_EQ(-EINVAL, odsm_read(C.in.heap_base - 8, buf, 8));
	EXPECT_EQ(-EINVAL, odsm_fetch_add(end, 1, &v));
	/* a zero-length access is nothing at all */
	EXPECT_EQ(0, odsm_read(c_word((C.self + 1) % C.nodes, W_MAGIC), buf, 0));
	free(big);
	ASSERT_EQ(0, c_barrier(0, B_RW_END, C.nodes, 180));
}

/*
 * A remote write of several 256 KiB pieces is checked whole on the home
 * node before any piece moves: one that starts in a large object of node 0
 * and runs on into blocks that hold no object fails with EINVAL and leaves
 * the object unchanged (it used to store the first pieces, then fail); a
 * read of that range fails without filling the caller's buffer.  Node 1
 * alone allocates after B_RW_END, so what follows its object stays empty.
 */
TEST_F_TIMEOUT(cl, span_into_unbacked, 180)
{
	uint64_t cg = 0, usable = 0, n, probe, keep[8];
	unsigned int nk = 0, i;
	uint8_t *pat, *in, *out;
	struct odsm_obj_info oi;
	int ret;

	C_BEGIN();
	if (C.self != 1)
		return;		/* node 1 tests node 0 */
	/* the bytes a 640 KiB object spans: the same size class everywhere */
	ASSERT_EQ(0, odsm_alloc(KiB(640), 0, 0, &cg));
	ASSERT_EQ(0, odsm_obj_info(cg, &oi));
	usable = oi.usable;
	ASSERT_EQ(0, odsm_free(cg));
	ASSERT_LE(KiB(640), usable);
	/* a large object of node 0 that no object follows */
	for (;;) {
		ASSERT_GT(8U, nk);
		ASSERT_EQ(0, odsm_alloc_on(0, KiB(640), 0, 0, &cg));
		ASSERT_TRUE(c_in_part(cg, 0));
		ret = odsm_read(odsm_addr_of(cg) + usable, &probe, 8);
		if (ret == -EINVAL)
			break;
		ASSERT_EQ(0, ret);
		keep[nk++] = cg;	/* an object follows: try again */
	}
	n = usable + KiB(64);		/* 3 pieces in, the last one out */
	pat = malloc(usable);
	in = malloc(n);
	out = malloc(n);
	ASSERT_NE(NULL, pat);
	ASSERT_NE(NULL, in);
	ASSERT_NE(NULL, out);
	c_fill(pat, usable, 0, 70);
	ASSERT_EQ(0, odsm_write(cg, pat, usable));
	memset(in, 0xc3, n);
	ret = odsm_write(cg, in, n);
	EXPECT_EQ(-EINVAL, ret) {
		TH_LOG("a write past the object: %s", odsm_strerror(ret));
	}
	ASSERT_EQ(0, odsm_read(cg, out, usable));
	EXPECT_EQ(-1, c_check(out, usable, 0, 70)) {
		TH_LOG("the failed write changed byte %" PRId64 " of the object",
		       c_check(out, usable, 0, 70));
	}
	memset(out, 0xee, n);
	EXPECT_EQ(-EINVAL, odsm_read(cg, out, n));
	for (i = 0; i < n && out[i] == 0xee; i++)
		;
	EXPECT_EQ(n, (uint64_t)i) {
		TH_LOG("a failed read filled the buffer up to byte %u", i);
	}
	ASSERT_EQ(0, odsm_free(cg));
	while (nk)
		ASSERT_EQ(0, odsm_free(keep[--nk]));
	free(pat);
	free(in);
	free(out);
}

TEST_HARNESS_MAIN
