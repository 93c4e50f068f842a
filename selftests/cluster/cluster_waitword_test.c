// SPDX-License-Identifier: GPL-2.0
/*
 * ODSM_IOC_WAIT across nodes.
 *
 * peer_atomic_wakes_home_waiter: a peer's ATOMIC on a word of node 0's
 * partition wakes node 0's waiter on it, with no ODSM_IOC_WAKE from
 * anyone (the home node's module writes the word, so it wakes its
 * waiters itself).  Unflagged atomics are served by the home's CPU over
 * both transports.  Each peer in turn adds 1 while node 0 sleeps on the
 * word; node 0's waiter must end woken (0), not timed out, with the word
 * at its next value.
 *
 * peer_store_then_wake: a peer's ODSM_IOC_WRITE, which over RDMA goes
 * one-sided and passes by node 0's CPU, followed by the peer's
 * ODSM_IOC_WAKE of node 0's word (a WAKE request to its home), both
 * through libodsm (odsm_word_wait, odsm_word_wake): after a one-sided
 * store the wake says it woke the one waiter (after a WRITE request, which
 * woke it at the home, nobody), and the waiter ends woken with the peer's
 * value.
 * Without the remote wake the waiter would sleep out its timeout over
 * RDMA (design.rst, "Waits on heap words").  Bad remote wakes are refused
 * where they are made (misaligned, nr past INT_MAX) or by the home (a
 * word of its partition nobody waits on wakes nobody).
 *
 * The program meets through libodsm (odsm_app_join, the app barrier, a
 * name of its own), never the rig's directory words.  Every node runs
 * the same barrier rounds, and nothing ASSERTs between two of them.
 */
#include <pthread.h>
#include "odsm_cluster.h"

#define APP		"cluster-waitword"
#define NAME		"waitword-word"
#define NAME2		"waitword-store"
#define SECS		120
#define WAIT_NS		(20ULL * 1000000000ULL)

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

struct waiter {
	pthread_t th;
	uint64_t g, expect;
	int ret;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct odsm_wait wt = { .gaddr = w->g, .expect = w->expect,
				.timeout_ns = WAIT_NS, .size = 8 };

	w->ret = ioctl(odsm_rt.fd, ODSM_IOC_WAIT, &wt) ? -errno : 0;
	return NULL;
}

/* until wait_sleeps passed n: the waiter is queued, the word checked */
static int asleep(uint64_t n)
{
	uint64_t end = c_now_ms() + SECS * 1000;

	while (c_stat("wait_sleeps") <= n)
		if (c_now_ms() > end)
			return -ETIMEDOUT;
		else
			c_sleep_ms(1);
	return 0;
}

/* the same waiter through libodsm's call */
static void *waiter_lib_main(void *arg)
{
	struct waiter *w = arg;

	w->ret = odsm_word_wait(w->g, 8, w->expect, WAIT_NS);
	return NULL;
}

/*
 * Meet as app: node 0 allocates the word and names it name, every node
 * learns its address.  0 or -errno, the same on every node that gets it.
 */
static int meet(struct odsm_app *app, const char *appname, const char *name,
		uint64_t *g)
{
	struct odsm_name nm;
	int ret;

	ret = odsm_app_join(app, appname, 0, SECS * 1000);
	if (!ret && C.self == 0)
		ret = odsm_alloc(64, 0, ODSM_ALLOC_ZERO, g) ?:
		      odsm_name_publish(name, ODSM_NAME_ADDR, *g);
	if (!ret)
		ret = odsm_name_wait(name, SECS * 1000, &nm);
	if (!ret) {
		*g = nm.value;
		ret = odsm_barrier_wait(app->barrier, SECS * 1000);
	}
	return ret;
}

/* What peer k does to the word while node 0 sleeps on it (value k - 1). */
typedef void (*peer_act)(struct __test_metadata *_metadata, uint64_t g,
			 unsigned int k);

/*
 * One round per peer k, in turn: node 0 sleeps on the word (through
 * waiter), peer k acts, node 0's waiter must end woken with the word at k.
 */
static void rounds(struct __test_metadata *_metadata, struct odsm_app *app,
		   uint64_t g, void *(*waiter)(void *), peer_act act)
{
	struct waiter w;
	unsigned int k;
	uint64_t s0;

	for (k = 1; k < C.nodes; k++) {
		if (C.self == 0) {
			s0 = c_stat("wait_sleeps");
			w.g = g;
			w.expect = k - 1;
			w.ret = 1;
			EXPECT_EQ(0, pthread_create(&w.th, NULL, waiter, &w));
			EXPECT_EQ(0, asleep(s0));
		}
		EXPECT_EQ(0, odsm_barrier_wait(app->barrier, SECS * 1000));
		if (C.self == k)
			act(_metadata, g, k);
		if (C.self == 0) {
			EXPECT_EQ(0, pthread_join(w.th, NULL));
			EXPECT_EQ(0, w.ret) TH_LOG("node %u's round: %s", k,
						   odsm_strerror(w.ret));
			EXPECT_EQ(k, *(volatile uint64_t *)odsm_ptr(g));
		}
		EXPECT_EQ(0, odsm_barrier_wait(app->barrier, SECS * 1000));
	}
}

static void add_one(struct __test_metadata *_metadata, uint64_t g,
		    unsigned int k)
{
	uint64_t v;
	int ret;

	ret = odsm_fetch_add(g, 1, &v);
	EXPECT_EQ(0, ret) TH_LOG("fetch_add: %s", odsm_strerror(ret));
	EXPECT_EQ(k - 1, v);
}

TEST_F_TIMEOUT(cl, peer_atomic_wakes_home_waiter, 300)
{
	uint64_t g = 0, ww0 = 0;
	struct odsm_app app;
	int ret;

	C_BEGIN();
	ww0 = c_stat("wait_write_woken");
	ret = meet(&app, APP, NAME, &g);
	ASSERT_EQ(0, ret) TH_LOG("meeting: %s", odsm_strerror(ret));
	rounds(_metadata, &app, g, waiter_main, add_one);
	if (C.self == 0) {
		/* one waiter woken by each peer's atomic, by the module */
		EXPECT_LE(ww0 + C.nodes - 1, c_stat("wait_write_woken"));
		EXPECT_EQ(0, odsm_free(g));
	}
}

static void store_then_wake(struct __test_metadata *_metadata, uint64_t g,
			    unsigned int k)
{
	uint64_t v = k, ow0 = c_stat("onesided_writes");
	bool onesided;
	int ret;

	ret = odsm_write(g, &v, sizeof(v));
	EXPECT_EQ(0, ret) TH_LOG("write: %s", odsm_strerror(ret));
	onesided = c_stat("onesided_writes") > ow0;
	TH_LOG("node %u's store went %s", k,
	       onesided ? "one-sided" : "as a request");
	/*
	 * One-sided, the store woke nobody and the wake wakes the waiter; a
	 * WRITE request woke it at the home before it was answered, and the
	 * wake finds nobody.  Either way the waiter ends woken.
	 */
	EXPECT_EQ(onesided ? 1 : 0, odsm_word_wake(g, 0));
	/* it is gone: a second wake finds nobody */
	EXPECT_EQ(0, odsm_word_wake(g | (7ULL << 48), 1));
}

TEST_F_TIMEOUT(cl, peer_store_then_wake, 300)
{
	uint64_t g = 0, sent0, served0;
	struct odsm_app app;
	int ret;

	C_BEGIN();
	sent0 = c_stat("wake_sent");
	served0 = c_stat("wake_served");
	ret = meet(&app, APP "-store", NAME2, &g);
	ASSERT_EQ(0, ret) TH_LOG("meeting: %s", odsm_strerror(ret));
	rounds(_metadata, &app, g, waiter_lib_main, store_then_wake);
	if (C.self != 0) {
		/* refused here, nothing sent: misaligned, nr past INT_MAX */
		EXPECT_EQ(-EINVAL, odsm_word_wake(g + 2, 0));
		EXPECT_EQ(-EINVAL, odsm_word_wake(g, 0x80000000u));
		/* the next word: nobody waits there */
		EXPECT_EQ(0, odsm_word_wake(g + 8, 0));
		/* the round's two and this one */
		EXPECT_EQ(3ULL, c_stat("wake_sent") - sent0);
	}
	EXPECT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
	if (C.self == 0) {
		/* every peer's three wakes, served here */
		EXPECT_EQ(3ULL * (C.nodes - 1),
			  c_stat("wake_served") - served0);
		EXPECT_EQ(0, odsm_free(g));
	}
}

TEST_HARNESS_MAIN
