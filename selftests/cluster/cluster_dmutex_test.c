// SPDX-License-Identifier: GPL-2.0
/*
 * libodsm's delegated mutex (ODSM_MUTEX_DELEG: a FIFO queue lock whose
 * queue a trustee of node 0 keeps), run on every node at once.  Node 0's
 * test process starts the delegation runtime (odsm_spawn_start) and makes
 * the mutex; every node locks it through that trustee (the module carries
 * the requests of the other nodes).  The nodes meet with odsm_app_join(),
 * one program name per test, and names of their own ("dmx-*"):
 *
 *   - under fire: THREADS threads on every node lock, increment the
 *     guarded counter and append their (node, thread, i) to the guarded
 *     array mf_iters(ITERS) times; the total is exact and each thread's
 *     entries are all there, in its order;
 *   - FIFO: node 0 holds the mutex while one thread of each node after
 *     another asks for it (node 0 sees each request queued by the trustee,
 *     through an operation of this test that reads the queue, before the
 *     next asks); after the unlock the grants come in request order;
 *   - bad input: a node without a runtime cannot make one (-ESRCH),
 *     relock and trylock by the holder (-EDEADLK), a trylock of another
 *     node while node 0 holds it (-EBUSY), a double unlock, a freed
 *     mutex; requests forged by another node (a grant word that is not
 *     the requester's) are refused -EINVAL and counted by the trustee;
 *   - the trustee's process killed: node 0's child runs the runtime and
 *     holds the mutex, the other nodes wait in lock, node 0 kills the
 *     child: every lock fails with an errno (not -EOWNERDEAD: nobody got
 *     the lock) well within the cluster's timeout.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include "odsm_cluster.h"
#include "mutex_fire.h"
#include "odsm_sync_int.h"
#include "odsm_mutex_dq.h"

#define SECS		120
#define THREADS		MF_THREADS
#define ITERS		15	/* locks per thread under fire */

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

/* Start, meet the other nodes as app; rt: node 0 starts its runtime. */
#define DMX_BEGIN(app, name, rt) do { \
	uint64_t __rt; \
	int __j; \
	C_BEGIN(); \
	__j = odsm_app_join(app, name, 0, SECS * 1000); \
	ASSERT_EQ(0, __j) TH_LOG("odsm_app_join: %s", odsm_strerror(__j)); \
	ASSERT_EQ(C.nodes, (app)->nodes); \
	ASSERT_EQ(0, odsm_deleg_register("dmx.peek", op_peek, &OP_PEEK)); \
	if (C.self == 0 && (rt)) { \
		__j = odsm_spawn_start(1, &__rt); \
		ASSERT_EQ(0, __j) TH_LOG("spawn_start: %s", \
					 odsm_strerror(__j)); \
	} \
} while (0)

static uint64_t OP_PEEK;

/* What the test sees of the trustee's queue. */
struct view {
	uint64_t holder, n, grants, queued, refused;
};

static int op_peek(void *obj, const void *arg, size_t len, void *ret,
		   size_t *rl)
{
	const struct odsm_dq *q = obj;
	struct view v = {
		.holder = q->holder, .n = q->n, .grants = q->grants,
		.queued = q->queued, .refused = q->refused,
	};

	if (*rl < sizeof(v))
		return -E2BIG;
	memcpy(ret, &v, sizeof(v));
	*rl = sizeof(v);
	return 0;
}

static int peek(uint64_t mx, struct view *v)
{
	size_t len = sizeof(*v);
	odsm_trust t;
	int ret;

	ret = odsm_read(odsm_addr_of(mx) + ODSM_MX_RINGOFF, &t, sizeof(t));
	return ret ? ret : odsm_deleg_apply(&t, OP_PEEK, NULL, 0, v, &len);
}

/* ---- under fire ---------------------------------------------------------- */

TEST_F_TIMEOUT(cl, under_fire, 300)
{
	struct odsm_app app;
	struct odsm_guard g;
	struct guarded *p;
	struct view v;
	uint64_t mx, ms;
	unsigned int n, iters;
	int ret;

	DMX_BEGIN(&app, "dmx-fire", true);
	iters = mf_iters(ITERS);	/* C.nodes is known from here */
	ASSERT_EQ(0, mf_mutex_named("dmx-fire-mx", ODSM_MUTEX_DELEG, SECS,
				    &mx));
	ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
	ret = mf_run(mx, iters, &ms);
	EXPECT_EQ(0, ret) TH_LOG("%s", odsm_strerror(ret));
	TH_LOG("%u locks on node %u in %" PRIu64 " ms", THREADS * iters,
	       C.self, ms);
	ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
	if (C.self == 0) {
		ret = odsm_mutex_lock(mx, &g, (void **)&p);
		ASSERT_EQ(0, ret) TH_LOG("%s", odsm_strerror(ret));
		n = C.nodes * THREADS * iters;
		EXPECT_EQ(0, mf_check(p, C.nodes, iters));
		ASSERT_EQ(0, peek(mx, &v));
		EXPECT_EQ(n + 1, v.grants);
		EXPECT_EQ(0ULL, v.n);
		TH_LOG("trustee: %" PRIu64 " grants, %" PRIu64
		       " after a wait in the queue", v.grants, v.queued);
		ASSERT_EQ(0, odsm_mutex_unlock(&g));
	}
	/* node 0's runtime serves until everyone is done */
	ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
}

/* ---- FIFO ------------------------------------------------------------------ */

static void *fifo_thread(void *arg)
{
	struct mthread *t = arg;
	struct odsm_guard g;
	struct guarded *p;

	t->ret = odsm_mutex_lock(t->mutex, &g, (void **)&p);
	if (t->ret)
		return NULL;
	if (p->n < MF_LOG_CAP)
		p->log[p->n] = t->id;
	p->n++;
	t->ret = odsm_mutex_unlock(&g);
	return NULL;
}

/* Wait until the trustee has want waiters queued: 0 or -errno. */
static int queued(uint64_t mx, uint64_t want)
{
	uint64_t end = c_now_ms() + 60000;
	struct view v;
	int ret;

	for (;;) {
		ret = peek(mx, &v);
		if (ret || v.n == want)
			return ret;
		if (c_now_ms() > end)
			return -ETIMEDOUT;
		c_sleep_ms(5);
	}
}

TEST_F_TIMEOUT(cl, grants_in_request_order, 300)
{
	struct mthread ts[THREADS];
	struct odsm_app app;
	struct odsm_guard g;
	struct guarded *p = NULL;
	unsigned int k, i, r, nt = 0;
	uint64_t mx;
	int ret, err = 0;

	DMX_BEGIN(&app, "dmx-fifo", true);
	ASSERT_EQ(0, mf_mutex_named("dmx-fifo-mx", ODSM_MUTEX_DELEG, SECS,
				    &mx));
	if (C.self == 0)
		ASSERT_EQ(0, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
	/* round r: thread r / nodes of node r % nodes asks */
	for (r = 0; r < C.nodes * THREADS; r++) {
		k = r % C.nodes;
		i = r / C.nodes;
		if (k == C.self) {
			ts[i] = (struct mthread){ .mutex = mx,
						  .id = k << 8 | i };
			ASSERT_EQ(0, pthread_create(&ts[i].th, NULL,
						    fifo_thread, &ts[i]));
			nt++;
		}
		/* every node goes on to the barrier, whatever happened */
		if (C.self == 0 && !err)
			err = queued(mx, r + 1);
		ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
	}
	EXPECT_EQ(0, err) TH_LOG("waiting for the queue: %s",
				 odsm_strerror(err));
	if (C.self == 0)
		ASSERT_EQ(0, odsm_mutex_unlock(&g));
	for (i = 0; i < nt; i++) {
		pthread_join(ts[i].th, NULL);
		EXPECT_EQ(0, ts[i].ret) TH_LOG("thread %u: %s", i,
					       odsm_strerror(ts[i].ret));
	}
	ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
	if (C.self == 0) {
		ret = odsm_mutex_lock(mx, &g, (void **)&p);
		ASSERT_EQ(0, ret) TH_LOG("%s", odsm_strerror(ret));
		ASSERT_EQ(C.nodes * THREADS, p->n);
		for (r = 0; r < p->n; r++) {
			k = r % C.nodes;
			i = r / C.nodes;
			EXPECT_EQ(k << 8 | i, p->log[r])
				TH_LOG("grant %u went to node %u thread %u", r,
				       p->log[r] >> 8, p->log[r] & 0xff);
		}
		ASSERT_EQ(0, odsm_mutex_unlock(&g));
	}
	ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
}

/* ---- bad input ------------------------------------------------------------ */

struct req {
	uint64_t tok, grant;
	uint32_t wait, pad;
};

TEST_F_TIMEOUT(cl, bad_input, 120)
{
	struct odsm_guard g, g2;
	struct odsm_app app;
	struct odsm_name nm;
	odsm_box b = { 0 };
	uint64_t mx, mine, *p;
	struct req rq = { .wait = 1 };
	struct view v;
	odsm_trust t;
	int ret;

	DMX_BEGIN(&app, "dmx-bad", true);
	ASSERT_EQ(0, odsm_box_new(&b, 8, ODSM_ALLOC_ZERO));
	if (C.self != 0) {	/* no runtime in this process */
		EXPECT_EQ(-ESRCH, odsm_mutex_new(&mx, ODSM_MUTEX_DELEG, &b));
		EXPECT_NE(0ULL, b.g);
	}
	EXPECT_EQ(-EINVAL, odsm_mutex_new(&mx, ODSM_MUTEX_DELEG, NULL));
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_mutex_new(&mine, ODSM_MUTEX_DELEG, &b));
		EXPECT_EQ(0ULL, b.g);
		ASSERT_EQ(0, odsm_name_publish("dmx-bad-mx", ODSM_NAME_MUTEX,
					       mine));
		/* the holder again: -EDEADLK; a double unlock: -EINVAL */
		ASSERT_EQ(0, odsm_mutex_lock(mine, &g, (void **)&p));
		EXPECT_EQ(-EDEADLK, odsm_mutex_lock(mine, &g2, (void **)&p));
		EXPECT_EQ(-EDEADLK, odsm_mutex_trylock(mine, &g2,
						       (void **)&p));
		EXPECT_EQ(0, odsm_mutex_consistent(&g));
	} else {
		EXPECT_EQ(0, odsm_box_drop(&b));
	}
	ASSERT_EQ(0, odsm_name_wait("dmx-bad-mx", SECS * 1000, &nm));
	mx = nm.value;
	ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
	if (C.self != 0) {
		/* node 0 holds it */
		EXPECT_EQ(-EBUSY, odsm_mutex_trylock(mx, &g2, (void **)&p));
		/* a request with a grant word of node 0's, not ours */
		ASSERT_EQ(0, odsm_read(odsm_addr_of(mx) + ODSM_MX_RINGOFF, &t, sizeof(t)));
		rq.tok = odsm_dq_token(C.self, 77, 1);
		rq.grant = odsm_rt.info.heap_base + 64;
		ret = odsm_deleg_apply(&t, odsm_deleg_op_id("odsm.mutex.lock"),
				       &rq, sizeof(rq), NULL, NULL);
		EXPECT_EQ(-EINVAL, ret) TH_LOG("%s", odsm_strerror(ret));
		/* a short one */
		ret = odsm_deleg_apply(&t, odsm_deleg_op_id("odsm.mutex.poll"),
				       &rq, 8, NULL, NULL);
		EXPECT_EQ(-EINVAL, ret) TH_LOG("%s", odsm_strerror(ret));
		/* an unlock of a token that does not hold it */
		ret = odsm_deleg_apply(&t, odsm_deleg_op_id("odsm.mutex.unlock"),
				       &rq, sizeof(rq), NULL, NULL);
		EXPECT_EQ(-EPERM, ret) TH_LOG("%s", odsm_strerror(ret));
	}
	ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
	if (C.self == 0) {
		ASSERT_EQ(0, peek(mx, &v));
		EXPECT_EQ(2ULL * (C.nodes - 1), v.refused);
		EXPECT_EQ(0ULL, v.n);
		ASSERT_EQ(0, odsm_mutex_unlock(&g));
		EXPECT_EQ(-EINVAL, odsm_mutex_unlock(&g));
		ASSERT_EQ(0, odsm_mutex_free(mx, NULL));
	}
	ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
	/* freed: not a mutex any more, from every node */
	EXPECT_EQ(-EINVAL, odsm_mutex_lock(mx, &g, (void **)&p));
	EXPECT_EQ(-EINVAL, odsm_mutex_free(mx, NULL));
	ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
}

/* ---- the trustee killed -------------------------------------------------- */

/* node 0's child: the runtime and the holder, until it is killed */
static void doomed_trustee(int fd)
{
	struct odsm_guard g;
	odsm_box b = { 0 };
	uint64_t rt, mx, *p;
	char c = 1;

	alarm(120);		/* never outlives the program for long */
	if (odsm_spawn_start(1, &rt) ||
	    odsm_box_new(&b, 8, ODSM_ALLOC_ZERO) ||
	    odsm_mutex_new(&mx, ODSM_MUTEX_DELEG, &b) ||
	    odsm_mutex_lock(mx, &g, (void **)&p) ||
	    odsm_name_publish("dmx-gone-mx", ODSM_NAME_MUTEX, mx) ||
	    write(fd, &c, 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

TEST_F_TIMEOUT(cl, trustee_killed, 180)
{
	struct odsm_app app;
	struct odsm_name nm;
	struct odsm_guard g;
	uint64_t t0, at, *p;
	int fd[2], st = 0, ret;
	pid_t pid;
	char c;

	DMX_BEGIN(&app, "dmx-gone", false);
	if (C.self == 0) {
		ASSERT_EQ(0, pipe(fd));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			doomed_trustee(fd[1]);
		/* no ASSERT until the child is gone: it must not outlive us */
		EXPECT_EQ(1, read(fd[0], &c, 1));
		EXPECT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
		c_sleep_ms(500);	/* the others wait in the queue */
		kill(pid, SIGKILL);
		EXPECT_EQ(pid, waitpid(pid, &st, 0));
		EXPECT_TRUE(WIFSIGNALED(st));
		ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
		return;
	}
	ASSERT_EQ(0, odsm_name_wait("dmx-gone-mx", SECS * 1000, &nm));
	ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
	t0 = c_now_ms();
	ret = odsm_mutex_lock(nm.value, &g, (void **)&p);
	at = c_now_ms();
	TH_LOG("node %u: lock failed %" PRIu64 " ms after it asked (the kill is ~500 ms after): %s",
	       C.self, at - t0, odsm_strerror(ret));
	EXPECT_GT(0, ret);
	EXPECT_NE(-EOWNERDEAD, ret);
	EXPECT_GT(t0 + 500 + C.timeout_ms, at);
	/* and at once from then on */
	t0 = c_now_ms();
	ret = odsm_mutex_lock(nm.value, &g, (void **)&p);
	EXPECT_GT(0, ret);
	EXPECT_NE(-EOWNERDEAD, ret);
	EXPECT_GT(t0 + C.timeout_ms, c_now_ms());
	ASSERT_EQ(0, odsm_barrier_wait(app.barrier, SECS * 1000));
}

TEST_HARNESS_MAIN
