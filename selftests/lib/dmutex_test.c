// SPDX-License-Identifier: GPL-2.0
/*
 * libodsm's delegated mutex (ODSM_MUTEX_DELEG, userlib/odsm_mutex_deleg.c)
 * against the fake /dev/odsm (node 0 of 2): this process runs the
 * trustee (odsm_spawn_start) and its threads stand for the lockers; a
 * locker of node 1 is a request made with a token of node 1.
 *
 *   - under fire: NT threads lock, add to a guarded pair and unlock; the
 *     totals are exact;
 *   - FIFO: while the main thread holds it, threads ask in a known order
 *     (each waits until the trustee queued the previous one, seen by an
 *     operation of the test that reads the queue); the grants come in
 *     that order;
 *   - a grant whose unlocker never wrote the waiter's grant word: the
 *     waiter learns it from the trustee within its 100 ms poll;
 *   - robust: a holder of node 1, node 1 down: -EOWNERDEAD, consistent
 *     or not (-ENOTRECOVERABLE); a waiter of node 1 that died is skipped
 *     and the object stays consistent; a holder of node 1 whose node
 *     joined again as another incarnation, never seen down: -EOWNERDEAD
 *     too; the lock calls of this node name its incarnation;
 *   - refusals: no runtime (-ESRCH), a malformed request to the trustee
 *     (-EINVAL, counted), trylock of a held one, relock by the holder.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "fake_odsm.h"
#include "odsm_sync_int.h"
#include "odsm_mutex_dq.h"

#include "ksft_host.h"

#define NT	4
#define ITERS	300

static uint64_t OP_PEEK;

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The test's window on the trustee's queue (a slot is too small for it). */
struct view {
	uint64_t holder, n, grants, queued, dead_holders, dead_waiters;
	uint64_t refused;
};

static int op_peek(void *obj, const void *arg, size_t len, void *ret,
		   size_t *rl)
{
	const struct odsm_dq *q = obj;
	struct view v = {
		.holder = q->holder, .n = q->n, .grants = q->grants,
		.queued = q->queued, .dead_holders = q->dead_holders,
		.dead_waiters = q->dead_waiters, .refused = q->refused,
	};

	if (*rl < sizeof(v))
		return -E2BIG;
	memcpy(ret, &v, sizeof(v));
	*rl = sizeof(v);
	return 0;
}

static odsm_trust trust_of(uint64_t mx)
{
	odsm_trust t;

	if (odsm_read(odsm_addr_of(mx) + ODSM_MX_RINGOFF, &t, sizeof(t)))
		abort();
	return t;
}

static int peek(uint64_t mx, struct view *q)
{
	odsm_trust t = trust_of(mx);
	size_t len = sizeof(*q);

	return odsm_deleg_apply(&t, OP_PEEK, NULL, 0, q, &len);
}

/* A request to the trustee as a thread of node would make it. */
struct req {
	uint64_t tok, grant;
	uint32_t wait, inc;
};

/* ... as its node's incarnation inc (0: not said) */
static int as_node_inc(uint64_t mx, const char *op, unsigned int node,
		       uint32_t seq, bool wait, uint32_t inc)
{
	struct req r = { .tok = odsm_dq_token(node, 4242, seq), .wait = wait,
			 .inc = inc };
	uint64_t next[2];
	size_t len = sizeof(next);
	odsm_trust t = trust_of(mx);

	r.grant = odsm_rt.info.heap_base + node * odsm_rt.info.part_size + 64;
	return odsm_deleg_apply(&t, odsm_deleg_op_id(op), &r, sizeof(r), next,
				&len);
}

static int as_node(uint64_t mx, const char *op, unsigned int node,
		   uint32_t seq, bool wait)
{
	return as_node_inc(mx, op, node, seq, wait, 0);
}

FIXTURE(dm)
{
	uint64_t rt;
};

FIXTURE_SETUP(dm)
{
	fk_init();
	ASSERT_EQ(0, odsm_deleg_register("t.dq.peek", op_peek, &OP_PEEK));
	ASSERT_EQ(0, odsm_spawn_start(1, &self->rt));
}

FIXTURE_TEARDOWN(dm)
{
	odsm_spawn_stop();
	fk_fini();
}

/* A delegated mutex guarding 42. */
static uint64_t mutex42(void)
{
	odsm_box b = { 0 };
	uint64_t mx, *p;

	if (odsm_box_new(&b, 8, 0) || odsm_box_write(&b, (void **)&p))
		abort();
	*p = 42;
	if (odsm_mutex_new(&mx, ODSM_MUTEX_DELEG, &b))
		abort();
	return mx;
}

struct mt {
	pthread_t th;
	uint64_t mx;
	unsigned int id;
	uint64_t *order;	/* FIFO: where the grants are logged */
	int ret;
};

static void *fire_thread(void *arg)
{
	struct mt *t = arg;
	struct odsm_guard g;
	uint64_t *p;
	unsigned int i;

	for (i = 0; i < ITERS && !t->ret; i++) {
		t->ret = odsm_mutex_lock(t->mx, &g, (void **)&p);
		if (t->ret)
			break;
		p[0]++;
		p[1] += p[0];	/* torn without the lock */
		t->ret = odsm_mutex_unlock(&g);
	}
	return NULL;
}

TEST_F(dm, under_fire)
{
	uint64_t mx, *p, n = ITERS * NT;
	struct odsm_guard g;
	odsm_box b = { 0 };
	struct view q;
	struct mt ts[NT];
	unsigned int i;

	ASSERT_EQ(0, odsm_box_new(&b, 16, ODSM_ALLOC_ZERO));
	ASSERT_EQ(0, odsm_mutex_new(&mx, ODSM_MUTEX_DELEG, &b));
	for (i = 0; i < NT; i++) {
		ts[i] = (struct mt){ .mx = mx };
		ASSERT_EQ(0, pthread_create(&ts[i].th, NULL, fire_thread,
					    &ts[i]));
	}
	for (i = 0; i < NT; i++) {
		pthread_join(ts[i].th, NULL);
		ASSERT_EQ(0, ts[i].ret);
	}
	ASSERT_EQ(0, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(n, p[0]);
	ASSERT_EQ(n * (n + 1) / 2, p[1]);
	ASSERT_EQ(0, peek(mx, &q));
	ASSERT_EQ(n + 1, q.grants);
	TH_LOG("%llu grants, %llu of them after a wait",
	       (unsigned long long)q.grants, (unsigned long long)q.queued);
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	ASSERT_EQ(0, odsm_mutex_free(mx, NULL));
}

static unsigned int order_n;

static void *order_thread(void *arg)
{
	struct mt *t = arg;
	struct odsm_guard g;
	uint64_t *p;

	t->ret = odsm_mutex_lock(t->mx, &g, (void **)&p);
	if (t->ret)
		return NULL;
	t->order[order_n++] = t->id;
	t->ret = odsm_mutex_unlock(&g);
	return NULL;
}

TEST_F(dm, grants_in_request_order)
{
	uint64_t mx = mutex42(), order[NT] = { 0 }, *p, t0;
	struct odsm_guard g;
	struct view q;
	struct mt ts[NT];
	unsigned int i;

	ASSERT_EQ(0, odsm_mutex_lock(mx, &g, (void **)&p));
	/* thread i asks only once thread i - 1 waits in the queue */
	for (i = 0; i < NT; i++) {
		ts[i] = (struct mt){ .mx = mx, .id = i, .order = order };
		ASSERT_EQ(0, pthread_create(&ts[i].th, NULL, order_thread,
					    &ts[i]));
		t0 = (uint64_t)time(NULL);
		do {
			ASSERT_EQ(0, peek(mx, &q));
			ASSERT_GT(t0 + 10, (uint64_t)time(NULL));
		} while (q.n != i + 1);
	}
	order_n = 0;
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	for (i = 0; i < NT; i++) {
		pthread_join(ts[i].th, NULL);
		ASSERT_EQ(0, ts[i].ret);
	}
	ASSERT_EQ((unsigned int)NT, order_n);
	for (i = 0; i < NT; i++)
		ASSERT_EQ(i, order[i]);
	ASSERT_EQ(0, odsm_mutex_free(mx, NULL));
}

TEST_F(dm, dead_holder)
{
	uint64_t mx = mutex42(), *p;
	struct odsm_guard g, g2;

	/* node 1 holds it */
	ASSERT_EQ(ODSM_DQ_GRANTED, as_node(mx, "odsm.mutex.lock", 1, 1, true));
	ASSERT_EQ(-EBUSY, odsm_mutex_trylock(mx, &g, (void **)&p));
	fk.peer_state = ODSM_PEER_DOWN;
	ASSERT_EQ(-EOWNERDEAD, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(42ULL, *p);
	ASSERT_EQ(0, odsm_mutex_consistent(&g));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	ASSERT_EQ(0, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(-EDEADLK, odsm_mutex_lock(mx, &g2, (void **)&p));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	/* node 1 holds it again and dies: unlocked inconsistent */
	fk.peer_state = ODSM_PEER_UP;
	ASSERT_EQ(ODSM_DQ_GRANTED, as_node(mx, "odsm.mutex.lock", 1, 2, true));
	fk.peer_state = ODSM_PEER_DOWN;
	ASSERT_EQ(-EOWNERDEAD, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	ASSERT_EQ(-ENOTRECOVERABLE, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(-ENOTRECOVERABLE, odsm_mutex_trylock(mx, &g, (void **)&p));
	ASSERT_EQ(0, odsm_mutex_free(mx, NULL));
}

/*
 * A holder of node 1 whose node left and joined again (its processes
 * gone) while the trustee's node never saw it down: the fake's
 * ODSM_IOC_STATUS says node 1 is now another incarnation (fk.peer_inc +
 * 1) than the lock call named.  Taken over (-EOWNERDEAD) as from a dead
 * one.  A call that named no incarnation is judged by down alone: it
 * stays held.  This node's own lock calls name its incarnation, which
 * the trustee keeps with the holder.
 */
TEST_F(dm, restarted_holder)
{
	uint64_t mx = mutex42(), mx2 = mutex42(), *p;
	struct odsm_guard g;

	fk.peer_inc = 1000;		/* node K: 1000 + K */
	ASSERT_EQ(ODSM_DQ_GRANTED, as_node_inc(mx, "odsm.mutex.lock", 1, 1,
					       true, 1001));
	ASSERT_EQ(ODSM_DQ_GRANTED, as_node(mx2, "odsm.mutex.lock", 1, 2,
					   true));
	ASSERT_EQ(-EBUSY, odsm_mutex_trylock(mx, &g, (void **)&p));
	/* node 1 restarted, up all along */
	fk.peer_inc = 2000;
	ASSERT_EQ(-EOWNERDEAD, odsm_mutex_trylock(mx, &g, (void **)&p));
	ASSERT_EQ(42ULL, *p);
	ASSERT_EQ(0, odsm_mutex_consistent(&g));
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	/* no incarnation named: held still */
	ASSERT_EQ(-EBUSY, odsm_mutex_trylock(mx2, &g, (void **)&p));
	/* this node's own call named 2000 + 0: a restart of node 0 seen by
	 * the trustee (its own node's status) drops it too
	 */
	ASSERT_EQ(0, odsm_mutex_lock(mx, &g, (void **)&p));
	fk.peer_inc = 3000;
	ASSERT_EQ(ODSM_DQ_GRANTED_INCONS, as_node(mx, "odsm.mutex.lock", 1, 3,
						  false));
	ASSERT_EQ(-EPERM, odsm_mutex_unlock(&g));
	fk.peer_inc = 0;
}

static void *lock_thread(void *arg)
{
	struct mt *t = arg;
	struct odsm_guard g;
	uint64_t *p;

	t->ret = odsm_mutex_lock(t->mx, &g, (void **)&p);
	if (!t->ret)
		t->ret = odsm_mutex_unlock(&g);
	return NULL;
}

/*
 * An unlocker that never writes the next one's grant word (it died
 * between its unlock and the write; here: a raw unlock request of node
 * 1): the waiter learns its grant from the trustee, within its 100 ms
 * poll.
 */
TEST_F(dm, grant_without_its_word)
{
	uint64_t mx = mutex42(), t0, ms;
	struct mt t = { .mx = mx };
	struct view q;

	ASSERT_EQ(ODSM_DQ_GRANTED, as_node(mx, "odsm.mutex.lock", 1, 1, true));
	ASSERT_EQ(0, pthread_create(&t.th, NULL, lock_thread, &t));
	t0 = (uint64_t)time(NULL);
	do {
		ASSERT_EQ(0, peek(mx, &q));
		ASSERT_GT(t0 + 10, (uint64_t)time(NULL));
	} while (q.n != 1);
	t0 = ms_now();
	ASSERT_EQ(0, as_node(mx, "odsm.mutex.unlock", 1, 1, false));
	pthread_join(t.th, NULL);
	ms = ms_now() - t0;
	ASSERT_EQ(0, t.ret);
	TH_LOG("granted %llu ms after the unlock", (unsigned long long)ms);
	ASSERT_GT(400ULL, ms);
	ASSERT_EQ(0, odsm_mutex_free(mx, NULL));
}

TEST_F(dm, dead_waiter_is_skipped)
{
	uint64_t mx = mutex42(), *p;
	struct odsm_guard g;
	struct view q;

	ASSERT_EQ(0, odsm_mutex_lock(mx, &g, (void **)&p));
	ASSERT_EQ(ODSM_DQ_QUEUED, as_node(mx, "odsm.mutex.lock", 1, 1, true));
	fk.peer_state = ODSM_PEER_DOWN;
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	/* it never held it: consistent, and free */
	ASSERT_EQ(0, odsm_mutex_trylock(mx, &g, (void **)&p));
	ASSERT_EQ(42ULL, *p);
	ASSERT_EQ(0, peek(mx, &q));
	ASSERT_EQ(1ULL, q.dead_waiters);
	ASSERT_EQ(0ULL, q.dead_holders);
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	ASSERT_EQ(0, odsm_mutex_free(mx, NULL));
}

TEST_F(dm, refusals)
{
	uint64_t mx = mutex42(), *p, bad[4] = { 0 };
	struct odsm_guard g, g2;
	odsm_box b = { 0 };
	struct view q;
	odsm_trust t = trust_of(mx);

	/* malformed requests: short, no node, a grant word elsewhere */
	ASSERT_EQ(-EINVAL, odsm_deleg_apply(&t, odsm_deleg_op_id("odsm.mutex.lock"),
					    bad, 8, NULL, NULL));
	ASSERT_EQ(-EINVAL, odsm_deleg_apply(&t, odsm_deleg_op_id("odsm.mutex.lock"),
					    bad, 24, NULL, NULL));
	bad[0] = odsm_dq_token(1, 1, 1);
	bad[1] = odsm_rt.info.heap_base + 64;	/* node 0's, not 1's */
	ASSERT_EQ(-EINVAL, odsm_deleg_apply(&t, odsm_deleg_op_id("odsm.mutex.lock"),
					    bad, 24, NULL, NULL));
	bad[0] = odsm_dq_token(7, 1, 1);	/* no node 7 */
	ASSERT_EQ(-EINVAL, odsm_deleg_apply(&t, odsm_deleg_op_id("odsm.mutex.poll"),
					    bad, 24, NULL, NULL));
	ASSERT_EQ(0, peek(mx, &q));
	ASSERT_EQ(4ULL, q.refused);
	ASSERT_EQ(0ULL, q.holder);
	/* the holder again: relock, trylock; consistent when it is */
	ASSERT_EQ(0, odsm_mutex_trylock(mx, &g, (void **)&p));
	ASSERT_EQ(-EDEADLK, odsm_mutex_trylock(mx, &g2, (void **)&p));
	ASSERT_EQ(-EDEADLK, odsm_mutex_lock(mx, &g2, (void **)&p));
	ASSERT_EQ(0, odsm_mutex_consistent(&g));	/* it is */
	ASSERT_EQ(0, odsm_mutex_unlock(&g));
	ASSERT_EQ(-EINVAL, odsm_mutex_unlock(&g));
	ASSERT_EQ(-EPERM, as_node(mx, "odsm.mutex.unlock", 1, 9, false));
	ASSERT_EQ(0, odsm_mutex_free(mx, NULL));
	ASSERT_EQ(-EINVAL, odsm_mutex_lock(mx, &g, (void **)&p));
	/* its queue went with it: the old handle is stale */
	ASSERT_EQ(-ESTALE, odsm_deleg_apply(&t, OP_PEEK, NULL, 0, &q, NULL));
	/* no runtime in this process: no delegated mutex made here */
	odsm_spawn_stop();
	ASSERT_EQ(0, odsm_box_new(&b, 8, ODSM_ALLOC_ZERO));
	ASSERT_EQ(-ESRCH, odsm_mutex_new(&mx, ODSM_MUTEX_DELEG, &b));
	ASSERT_NE(0ULL, b.g);
	ASSERT_EQ(0, odsm_box_drop(&b));
}

TEST_HARNESS_MAIN
