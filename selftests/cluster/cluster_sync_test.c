// SPDX-License-Identifier: GPL-2.0
/*
 * libodsm's names, start-up, barrier and mutex (odsm_sync.h), run on
 * every node at once.  The program meets with its own odsm_app_join()
 * and odsm_barrier_wait(), never with the rig's directory words:
 *
 *   - names: every node publishes an address under its own name, node 0
 *     an owner box; every node finds every name, takes the box mutably
 *     (the object moves to it) and adds to it; a name nobody publishes is
 *     -ENOENT at once and -ETIMEDOUT after the wait asked for; bad names
 *     are refused;
 *   - barrier: THREADS threads on every node pass ROUNDS rounds of one
 *     barrier, adding to a counter before each: after round r the counter
 *     is at least (r + 1) and at most (r + 2) times the thread count;
 *   - mutex under fire, both kinds: THREADS threads on every node lock,
 *     increment the guarded counter and append their (node, thread, i)
 *     to the guarded array mf_iters(ITERS) times; the total is exact
 *     and each thread's entries are all there, in its order;
 *   - bad input: null, freed and wrong-kind handles get an errno;
 *   - this node's incarnation on the hit page, which the mutexes name in
 *     their lock words without a system call, is the one
 *     ODSM_IOC_STATUS says of it.
 *
 * With 3 nodes or more, the last node ends holding both kinds of
 * "sync-dead-*" mutex (and changed their objects): the cluster scenario's
 * rig.down run powers it off, and cluster_down_test checks that node 0
 * gets -EOWNERDEAD and the last unlocked version of the object.
 */
#include <pthread.h>
#include "odsm_cluster.h"
#include "mutex_fire.h"
#include "odsm_hits_int.h"

#define APP		"cluster-sync"
#define SECS		120
#define THREADS		2U
#define ROUNDS		20
#define ITERS		20	/* locks per mutex thread */
#define DEAD_VALUE	42	/* what the dead-holder objects hold unlocked */

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

/* Start, and meet the other nodes through the library. */
#define SYNC_BEGIN(app) do { \
	int __j; \
	C_BEGIN(); \
	__j = odsm_app_join(app, APP, 0, SECS * 1000); \
	ASSERT_EQ(0, __j) TH_LOG("odsm_app_join: %s", odsm_strerror(__j)); \
	ASSERT_EQ(C.self, (app)->self); \
	ASSERT_EQ(C.nodes, (app)->nodes); \
} while (0)

static void name_of(char *buf, size_t n, const char *what, unsigned int k)
{
	snprintf(buf, n, "sync-%s-%u", what, k);
}

TEST_F_TIMEOUT(cl, names, 300)
{
	struct odsm_app app;
	struct odsm_name nm;
	char name[40];
	odsm_box b = { 0 };
	uint64_t *p, t0, ms, v;
	unsigned int k;
	odsm_mut m;
	int ret;

	SYNC_BEGIN(&app);
	/* an address under this node's name */
	name_of(name, sizeof(name), "addr", C.self);
	ret = odsm_name_publish(name, ODSM_NAME_ADDR, 0x1000 + C.self);
	ASSERT_EQ(0, ret) TH_LOG("publish %s: %s", name, odsm_strerror(ret));
	EXPECT_EQ(-EEXIST, odsm_name_publish(name, ODSM_NAME_ADDR, 1));
	/* node 0: a box, moved into the table */
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_box_new(&b, 64, ODSM_ALLOC_ZERO));
		ASSERT_EQ(0, odsm_name_publish_box("sync-box", &b));
		EXPECT_EQ(0ULL, b.g);
	}
	/* every node's name, from every node */
	for (k = 0; k < C.nodes; k++) {
		name_of(name, sizeof(name), "addr", k);
		ret = odsm_name_wait(name, SECS * 1000, &nm);
		ASSERT_EQ(0, ret) TH_LOG("%s: %s", name, odsm_strerror(ret));
		EXPECT_EQ((unsigned int)ODSM_NAME_ADDR, nm.kind);
		EXPECT_EQ(k, nm.node);
		EXPECT_EQ(0x1000 + k, nm.value);
	}
	/* the box: each node in turn takes it mutably and adds its id + 1 */
	ASSERT_EQ(0, odsm_name_wait("sync-box", SECS * 1000, &nm));
	ASSERT_EQ((unsigned int)ODSM_NAME_BOX, nm.kind);
	for (k = 0; k < C.nodes; k++) {
		if (k == C.self) {
			ASSERT_EQ(0, odsm_borrow_mut_at(nm.value, &m,
							(void **)&p));
			EXPECT_TRUE(c_in_part(m.g, C.self));	/* moved here */
			p[0] += C.self + 1;
			ASSERT_EQ(0, odsm_return_mut(&m));
		}
		ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
	}
	/*
	 * Every node reads the sum through the box, at once: shared reads.
	 * (Mutable borrows of one box from several nodes at once are a race
	 * the caller must rule out, as a mutex does: this test once took
	 * them here, and lost the object now and then.)
	 */
	ASSERT_EQ(0, odsm_read(nm.value, &b, sizeof(b)));
	EXPECT_TRUE(c_in_part(b.g, C.nodes - 1));	/* the last taker's */
	ASSERT_EQ(0, odsm_read(b.g, &v, sizeof(v)));
	EXPECT_EQ((uint64_t)C.nodes * (C.nodes + 1) / 2, v);
	memset(&b, 0, sizeof(b));
	ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
	/* the app's root box: node 1 stores an object, the others read it */
	if (C.self == 1) {
		ASSERT_EQ(0, odsm_box_new(&b, 8, 0));
		ASSERT_EQ(0, odsm_box_write(&b, (void **)&p));
		*p = 0x5eed;
		odsm_box_share(&b);
		ASSERT_EQ(0, odsm_box_store_at(app.root, &b));
	}
	ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
	ASSERT_EQ(0, odsm_read(app.root, &v, sizeof(v)));
	ASSERT_NE(0ULL, v);
	ASSERT_EQ(0, odsm_read(v, &v, sizeof(v)));
	EXPECT_EQ(0x5eedULL, v);

	/* never published: -ENOENT now, -ETIMEDOUT after the wait */
	EXPECT_EQ(-ENOENT, odsm_name_lookup("sync-never", &nm));
	t0 = c_now_ms();
	EXPECT_EQ(-ETIMEDOUT, odsm_name_wait("sync-never", 500, &nm));
	ms = c_now_ms() - t0;
	EXPECT_LE(500ULL, ms);
	EXPECT_GE(3000ULL, ms) TH_LOG("a 500 ms wait took %" PRIu64 " ms", ms);

	/* bad names and values */
	EXPECT_EQ(-EINVAL, odsm_name_lookup(NULL, &nm));
	EXPECT_EQ(-EINVAL, odsm_name_lookup("", &nm));
	EXPECT_EQ(-EINVAL, odsm_name_lookup("sync-box", NULL));
	EXPECT_EQ(-ENAMETOOLONG,
		  odsm_name_lookup("sync-0123456789012345678901234567", &nm));
	EXPECT_EQ(-EINVAL, odsm_name_publish("sync-x", ODSM_NAME_BOX, 1));
	EXPECT_EQ(-EINVAL, odsm_name_publish("sync-x", ODSM_NAME_APP, 1));
	EXPECT_EQ(-EINVAL, odsm_name_publish("sync-x", 99, 1));
	EXPECT_EQ(-EINVAL, odsm_name_publish("sync-x", ODSM_NAME_ADDR, 0));
	memset(&b, 0, sizeof(b));
	EXPECT_EQ(-EINVAL, odsm_name_publish_box("sync-x", &b));
	EXPECT_EQ(-EINVAL, odsm_name_publish_box("sync-x", NULL));
	EXPECT_EQ(-ENOENT, odsm_name_lookup("sync-x", &nm));
	EXPECT_EQ(-EINVAL, odsm_app_join(NULL, APP, 0, 1000));
	ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
}

/* ---- barrier ----------------------------------------------------------- */

struct bthread {
	pthread_t th;
	uint64_t barrier, ctr, total;
	int ret;		/* 0, -errno, or 1 + the round that went wrong */
};

static void *barrier_thread(void *arg)
{
	struct bthread *t = arg;
	uint64_t v;
	unsigned int r;

	for (r = 0; r < ROUNDS; r++) {
		t->ret = odsm_fetch_add(t->ctr, 1, NULL);
		if (!t->ret)
			t->ret = odsm_barrier_wait(t->barrier, SECS * 1000);
		if (!t->ret)
			t->ret = odsm_read(t->ctr, &v, sizeof(v));
		if (t->ret)
			return NULL;
		/* all of round r added; nobody can be past round r + 1 */
		if (v < (r + 1) * t->total || v > (r + 2) * t->total) {
			fprintf(stderr, "# round %u: counter %" PRIu64 ", total %" PRIu64 "\n",
				r, v, t->total);
			t->ret = 1 + r;
			return NULL;
		}
	}
	return NULL;
}

TEST_F_TIMEOUT(cl, barrier_rounds, 300)
{
	struct bthread ts[THREADS];
	struct odsm_app app;
	struct odsm_name nm;
	uint64_t bar, ctr, v, junk;
	unsigned int i;

	SYNC_BEGIN(&app);
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_barrier_new(&bar, C.nodes * THREADS));
		ASSERT_EQ(0, odsm_alloc(8, 8, ODSM_ALLOC_ZERO, &ctr));
		ASSERT_EQ(0, odsm_name_publish("sync-bar", ODSM_NAME_BARRIER,
					       bar));
		ASSERT_EQ(0, odsm_name_publish("sync-bar-ctr", ODSM_NAME_ADDR,
					       ctr));
	}
	ASSERT_EQ(0, odsm_name_wait("sync-bar", SECS * 1000, &nm));
	EXPECT_EQ((unsigned int)ODSM_NAME_BARRIER, nm.kind);
	bar = nm.value;
	ASSERT_EQ(0, odsm_name_wait("sync-bar-ctr", SECS * 1000, &nm));
	ctr = nm.value;
	for (i = 0; i < THREADS; i++) {
		ts[i] = (struct bthread){ .barrier = bar, .ctr = ctr,
					  .total = C.nodes * THREADS };
		ASSERT_EQ(0, pthread_create(&ts[i].th, NULL, barrier_thread,
					    &ts[i]));
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(ts[i].th, NULL);
		EXPECT_EQ(0, ts[i].ret) TH_LOG("thread %u: %d", i, ts[i].ret);
	}
	ASSERT_EQ(0, odsm_read(ctr, &v, sizeof(v)));
	EXPECT_EQ((uint64_t)ROUNDS * C.nodes * THREADS, v);

	/* bad handles: none, not a barrier, a freed one */
	EXPECT_EQ(-EINVAL, odsm_barrier_wait(0, 100));
	EXPECT_EQ(-EINVAL, odsm_barrier_wait(ctr, 100));
	EXPECT_EQ(-EINVAL, odsm_barrier_new(NULL, 2));
	EXPECT_EQ(-EINVAL, odsm_barrier_new(&junk, 0));
	ASSERT_EQ(0, odsm_barrier_new(&junk, 2));
	ASSERT_EQ(0, odsm_barrier_free(junk));
	EXPECT_EQ(-EINVAL, odsm_barrier_wait(junk, 100));
	EXPECT_EQ(-EINVAL, odsm_barrier_free(junk));
	/* a barrier nobody else reaches times out */
	ASSERT_EQ(0, odsm_barrier_new(&junk, 2));
	EXPECT_EQ(-ETIMEDOUT, odsm_barrier_wait(junk, 300));
	ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
}

/* ---- mutex ------------------------------------------------------------- */

static void under_fire(struct __test_metadata *_metadata,
		       struct odsm_app *app, const char *name,
		       unsigned int kind)
{
	unsigned int iters = mf_iters(ITERS);
	struct odsm_guard g;
	struct guarded *p;
	uint64_t mx, ms;
	int ret;

	ASSERT_EQ(0, mf_mutex_named(name, kind, SECS, &mx));
	ASSERT_EQ(0, odsm_barrier_wait(app->barrier, SECS * 1000));
	ret = mf_run(mx, iters, &ms);
	EXPECT_EQ(0, ret) TH_LOG("%s: %s", name, odsm_strerror(ret));
	TH_LOG("%s: %u locks on node %u in %" PRIu64 " ms", name,
	       MF_THREADS * iters, C.self, ms);
	ASSERT_EQ(0, odsm_barrier_wait(app->barrier, SECS * 1000));
	if (C.self == 0) {
		ret = odsm_mutex_lock(mx, &g, (void **)&p);
		ASSERT_EQ(0, ret) TH_LOG("%s", odsm_strerror(ret));
		EXPECT_EQ(0, mf_check(p, C.nodes, iters));
		ASSERT_EQ(0, odsm_mutex_unlock(&g));
	}
	ASSERT_EQ(0, odsm_barrier_wait(app->barrier, SECS * 1000));
}

TEST_F_TIMEOUT(cl, mutex_cas_under_fire, 300)
{
	struct odsm_app app;

	SYNC_BEGIN(&app);
	under_fire(_metadata, &app, "sync-mx-cas", ODSM_MUTEX_CAS);
}

TEST_F_TIMEOUT(cl, mutex_fifo_under_fire, 300)
{
	struct odsm_app app;

	SYNC_BEGIN(&app);
	under_fire(_metadata, &app, "sync-mx-fifo", ODSM_MUTEX_FIFO);
}

/* Local refusals: no peer needed. */
TEST_F_TIMEOUT(cl, mutex_bad_input, 120)
{
	struct odsm_app app;
	struct odsm_guard g, g2;
	odsm_box b = { 0 };
	uint64_t mx, bar, *p;

	SYNC_BEGIN(&app);
	EXPECT_EQ(-EINVAL, odsm_mutex_lock(0, &g, (void **)&p));
	EXPECT_EQ(-EINVAL, odsm_mutex_lock(app.barrier, &g, (void **)&p));
	EXPECT_EQ(-EINVAL, odsm_mutex_new(&mx, ODSM_MUTEX_CAS, &b));
	EXPECT_EQ(-EINVAL, odsm_mutex_new(&mx, ODSM_MUTEX_CAS, NULL));
	ASSERT_EQ(0, odsm_box_new(&b, 8, ODSM_ALLOC_ZERO));
	EXPECT_EQ(-EINVAL, odsm_mutex_new(&mx, 0, &b));
	EXPECT_EQ(-EINVAL, odsm_mutex_new(&mx, ODSM_MUTEX_KINDS, &b));
	ASSERT_EQ(0, odsm_mutex_new(&mx, ODSM_MUTEX_CAS, &b));
	EXPECT_EQ(0ULL, b.g);
	memset(&g, 0, sizeof(g));
	EXPECT_EQ(-EINVAL, odsm_mutex_unlock(&g));
	EXPECT_EQ(-EINVAL, odsm_mutex_unlock(NULL));
	EXPECT_EQ(-EINVAL, odsm_mutex_consistent(&g));
	ASSERT_EQ(0, odsm_mutex_lock(mx, &g, (void **)&p));
	EXPECT_EQ(-EDEADLK, odsm_mutex_lock(mx, &g2, (void **)&p));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	EXPECT_EQ(-EINVAL, odsm_mutex_unlock(&g));
	ASSERT_EQ(0, odsm_mutex_free(mx, NULL));
	EXPECT_EQ(-EINVAL, odsm_mutex_lock(mx, &g, (void **)&p));
	EXPECT_EQ(-EINVAL, odsm_mutex_free(mx, NULL));
	/* a barrier is not a mutex, a mutex not a barrier */
	ASSERT_EQ(0, odsm_box_new(&b, 8, ODSM_ALLOC_ZERO));
	ASSERT_EQ(0, odsm_mutex_new(&mx, ODSM_MUTEX_FIFO, &b));
	EXPECT_EQ(-EINVAL, odsm_barrier_wait(mx, 100));
	ASSERT_EQ(0, odsm_barrier_new(&bar, 1));
	EXPECT_EQ(-EINVAL, odsm_mutex_lock(bar, &g, (void **)&p));
	EXPECT_EQ(0, odsm_barrier_wait(bar, 100));	/* a round of one */
	ASSERT_EQ(0, odsm_mutex_trylock(mx, &g, (void **)&p));
	EXPECT_EQ(-EBUSY, odsm_mutex_trylock(mx, &g2, (void **)&p));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	ASSERT_EQ(0, odsm_mutex_free(mx, &b));
	EXPECT_NE(0ULL, b.g);
	EXPECT_EQ(0, odsm_box_drop(&b));
	EXPECT_EQ(0, odsm_barrier_free(bar));
}

/*
 * The dead-holder set-up (3 nodes or more): node 0 makes one mutex of
 * each kind guarding DEAD_VALUE, and a barrier of every node that each
 * passes once; the last node takes both mutexes, writes over their
 * objects, and exits holding them.  cluster_down_test (rig.down=last)
 * checks the rest.
 */
/*
 * The module keeps this node's incarnation on the hit page (set at the
 * join, 0 after a leave: cluster_rejoin_test's locks of a former
 * incarnation are taken over only if the words named the old one): the
 * same as ODSM_IOC_STATUS says of this node.
 */
TEST_F_TIMEOUT(cl, own_incarnation_on_the_page, 60)
{
	struct odsm_peer_info p[ODSM_MAX_NODES];
	unsigned int n = ODSM_MAX_NODES;
	uint64_t inc = 0;

	C_BEGIN();
	ASSERT_EQ(0, odsm_status(p, &n, NULL));
	ASSERT_LT(C.self, n);
	ASSERT_TRUE(odsm__hits_node_inc(&inc));
	EXPECT_NE(0ULL, inc);
	EXPECT_EQ((uint32_t)p[C.self].incarnation, (uint32_t)inc);
}

TEST_F_TIMEOUT(cl, dead_holder_setup, 120)
{
	static const char *names[] = { "sync-dead-cas", "sync-dead-fifo" };
	static const unsigned int kinds[] = { ODSM_MUTEX_CAS, ODSM_MUTEX_FIFO };
	struct odsm_guard g[2];
	struct odsm_app app;
	struct odsm_name nm;
	uint64_t mx, bar, *p;
	odsm_box b;
	unsigned int i;

	SYNC_BEGIN(&app);
	if (C.nodes < 3)
		SKIP(return, "a dead holder needs 3 nodes");
	for (i = 0; i < 2 && C.self == 0; i++) {
		ASSERT_EQ(0, odsm_box_new(&b, 8, 0));
		ASSERT_EQ(0, odsm_box_write(&b, (void **)&p));
		*p = DEAD_VALUE;
		ASSERT_EQ(0, odsm_mutex_new(&mx, kinds[i], &b));
		ASSERT_EQ(0, odsm_name_publish(names[i], ODSM_NAME_MUTEX, mx));
	}
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_barrier_new(&bar, C.nodes));
		ASSERT_EQ(0, odsm_name_publish("sync-dead-bar",
					       ODSM_NAME_BARRIER, bar));
	}
	ASSERT_EQ(0, odsm_name_wait("sync-dead-bar", SECS * 1000, &nm));
	ASSERT_EQ(0, odsm_barrier_wait(nm.value, SECS * 1000));
	if (C.self != C.nodes - 1)
		return;
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, odsm_name_wait(names[i], SECS * 1000, &nm));
		ASSERT_EQ(0, odsm_mutex_lock(nm.value, &g[i], (void **)&p));
		ASSERT_EQ((uint64_t)DEAD_VALUE, *p);
		*p = 666;	/* lost when this node dies */
	}
	TH_LOG("node %u holds %s and %s", C.self, names[0], names[1]);
}

TEST_HARNESS_MAIN
