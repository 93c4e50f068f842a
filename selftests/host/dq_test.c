// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of the delegated mutex's queue (userlib/odsm_mutex_dq.h),
 * the logic its trustee runs: grants in request order across the ring's
 * wrap, trylock and relock refusals, a full queue, cancel from the middle
 * and of a grant not yet seen, dead holders (the next holder gets it
 * inconsistent, consistent() or unlock -> not recoverable, which drops
 * the queue) and dead waiters (skipped, consistent), holders and
 * waiters whose node restarted unseen (joined again as another
 * incarnation than their call named: dead too; a call that named none
 * is not), and the tokens.
 */
#include <stdlib.h>
#include <string.h>

#include "odsm_mutex_dq.h"

#include "ksft_host.h"

static uint64_t dead_nodes;	/* bit K: node K is down */
static uint32_t node_inc[4];	/* each node's incarnation now (0: none) */
static unsigned int down_calls;

static int down(unsigned int node, uint32_t inc, void *cookie)
{
	down_calls++;
	if (cookie)
		return -EIO;
	if (node < 64 && (dead_nodes >> node & 1))
		return 1;
	return inc && node < 4 && node_inc[node] && node_inc[node] != inc;
}

static uint64_t tok(unsigned int node, uint32_t thread, uint32_t seq)
{
	return odsm_dq_token(node, thread, seq);
}

static uint64_t grant_of(uint64_t t)
{
	return 0x100000 + 8 * (t & 0xffff);
}

TEST(tokens)
{
	uint64_t t = tok(3, 0x123456, 0xabcdef);

	ASSERT_EQ(3, odsm_dq_node(t));
	ASSERT_EQ(-1, odsm_dq_node(0));
	ASSERT_EQ(odsm_dq_thread(t), odsm_dq_thread(tok(3, 0x123456, 1)));
	ASSERT_NE(odsm_dq_thread(t), odsm_dq_thread(tok(2, 0x123456, 1)));
	ASSERT_NE(odsm_dq_thread(t), odsm_dq_thread(tok(3, 0x123457, 1)));
	/* node 0, thread 0, call 0 is still a token */
	ASSERT_NE(0ULL, tok(0, 0, 0));
	/* the thread tag and the call wrap in their fields */
	ASSERT_EQ(0, odsm_dq_node(tok(0, 0xffffffff, 0xffffffff)));
}

TEST(fifo_across_the_wrap)
{
	struct odsm_dq *q = calloc(1, sizeof(*q));
	uint64_t next, g, holder, t;
	unsigned int i, round, asked = 0, granted = 0;

	ASSERT_NE(NULL, q);
	dead_nodes = 0;
	holder = tok(0, 1, 1);
	ASSERT_EQ(ODSM_DQ_GRANTED, odsm_dq_lock(q, holder, 0, grant_of(holder),
						true, down, NULL));
	/* waves of waiters, more than the ring over all: grants in order */
	for (round = 0; round < 5; round++) {
		for (i = 0; i < 40; i++, asked++) {
			t = tok(asked % 3, 100 + asked, asked);
			ASSERT_EQ(ODSM_DQ_QUEUED,
				  odsm_dq_lock(q, t, 0, grant_of(t), true, down,
					       NULL));
		}
		for (i = 0; i < 40; i++, granted++) {
			ASSERT_EQ(0, odsm_dq_unlock(q, holder, down, NULL,
						    &next, &g));
			t = tok(granted % 3, 100 + granted, granted);
			ASSERT_EQ(t, next);
			ASSERT_EQ(grant_of(t), g);
			ASSERT_EQ(ODSM_DQ_GRANTED,
				  odsm_dq_poll(q, t, down, NULL));
			holder = next;
		}
	}
	ASSERT_EQ(0, odsm_dq_unlock(q, holder, down, NULL, &next, &g));
	ASSERT_EQ(0ULL, next);
	ASSERT_EQ(0ULL, q->holder);
	ASSERT_EQ(201ULL, q->grants);
	ASSERT_EQ(200ULL, q->queued);
	free(q);
}

TEST(refusals)
{
	struct odsm_dq *q = calloc(1, sizeof(*q));
	uint64_t a = tok(0, 1, 1), b = tok(1, 2, 1), next, g;
	unsigned int i;

	ASSERT_NE(NULL, q);
	dead_nodes = 0;
	ASSERT_EQ(-EPERM, odsm_dq_unlock(q, 0, down, NULL, &next, &g));
	ASSERT_EQ(-EPERM, odsm_dq_held(q, 0));
	ASSERT_EQ(ODSM_DQ_GRANTED, odsm_dq_lock(q, a, 0, 8, false, down, NULL));
	ASSERT_EQ(0, odsm_dq_held(q, a));
	ASSERT_EQ(-EPERM, odsm_dq_held(q, b));
	/* the holder's thread again, with a new call: a deadlock */
	ASSERT_EQ(-EDEADLK, odsm_dq_lock(q, tok(0, 1, 2), 0, 8, true, down,
					 NULL));
	ASSERT_EQ(-EBUSY, odsm_dq_lock(q, b, 0, 8, false, down, NULL));
	ASSERT_EQ(ODSM_DQ_QUEUED, odsm_dq_lock(q, b, 0, 8, true, down, NULL));
	/* a waiting thread asking again: a deadlock too */
	ASSERT_EQ(-EDEADLK, odsm_dq_lock(q, tok(1, 2, 2), 0, 8, true, down,
					 NULL));
	ASSERT_EQ(-EPERM, odsm_dq_unlock(q, b, down, NULL, &next, &g));
	ASSERT_EQ(-EPERM, odsm_dq_consistent(q, b));
	ASSERT_EQ(-ENOENT, odsm_dq_poll(q, tok(1, 3, 1), down, NULL));
	/* the queue fills: -EAGAIN, nothing lost */
	for (i = 1; i < ODSM_DQ_MAX; i++)
		ASSERT_EQ(ODSM_DQ_QUEUED, odsm_dq_lock(q, tok(1, 10 + i, 1), 0, 8,
						       true, down, NULL));
	ASSERT_EQ(-EAGAIN, odsm_dq_lock(q, tok(1, 99, 1), 0, 8, true, down,
					NULL));
	ASSERT_EQ(ODSM_DQ_MAX, q->n);
	/* a failing down check fails the request, changes nothing */
	ASSERT_EQ(-EIO, odsm_dq_lock(q, tok(1, 98, 1), 0, 8, true, down,
				     (void *)1));
	ASSERT_EQ(a, q->holder);
	free(q);
}

TEST(cancel)
{
	struct odsm_dq *q = calloc(1, sizeof(*q));
	uint64_t a = tok(0, 1, 1), b = tok(1, 2, 1), c = tok(0, 3, 1);
	uint64_t d = tok(1, 4, 1), next, g;

	ASSERT_NE(NULL, q);
	dead_nodes = 0;
	ASSERT_EQ(ODSM_DQ_GRANTED, odsm_dq_lock(q, a, 0, 8, true, down, NULL));
	ASSERT_EQ(ODSM_DQ_QUEUED, odsm_dq_lock(q, b, 0, 16, true, down, NULL));
	ASSERT_EQ(ODSM_DQ_QUEUED, odsm_dq_lock(q, c, 0, 24, true, down, NULL));
	ASSERT_EQ(ODSM_DQ_QUEUED, odsm_dq_lock(q, d, 0, 32, true, down, NULL));
	/* from the middle: the others keep their order */
	ASSERT_EQ(0, odsm_dq_cancel(q, c, down, NULL, &next, &g));
	ASSERT_EQ(0ULL, next);
	ASSERT_EQ(-ENOENT, odsm_dq_cancel(q, c, down, NULL, &next, &g));
	ASSERT_EQ(0, odsm_dq_unlock(q, a, down, NULL, &next, &g));
	ASSERT_EQ(b, next);
	ASSERT_EQ(16ULL, g);
	/* b gave up before it saw its grant: it goes to d */
	ASSERT_EQ(0, odsm_dq_cancel(q, b, down, NULL, &next, &g));
	ASSERT_EQ(d, next);
	ASSERT_EQ(32ULL, g);
	ASSERT_EQ(0U, q->n);
	free(q);
}

TEST(dead_holder)
{
	struct odsm_dq *q = calloc(1, sizeof(*q));
	uint64_t a = tok(2, 1, 1), b = tok(0, 2, 1), c = tok(1, 3, 1);
	uint64_t next, g;

	ASSERT_NE(NULL, q);
	dead_nodes = 0;
	ASSERT_EQ(ODSM_DQ_GRANTED, odsm_dq_lock(q, a, 0, 8, true, down, NULL));
	ASSERT_EQ(ODSM_DQ_QUEUED, odsm_dq_lock(q, b, 0, 16, true, down, NULL));
	ASSERT_EQ(ODSM_DQ_QUEUED, odsm_dq_lock(q, c, 0, 24, true, down, NULL));
	ASSERT_EQ(ODSM_DQ_QUEUED, odsm_dq_poll(q, b, down, NULL));
	/* node 2 dies holding it: the first waiter learns it by polling */
	dead_nodes = 1ULL << 2;
	ASSERT_EQ(ODSM_DQ_QUEUED, odsm_dq_poll(q, c, down, NULL));
	ASSERT_EQ(b, q->holder);
	ASSERT_EQ(ODSM_DQ_GRANTED_INCONS, odsm_dq_poll(q, b, down, NULL));
	ASSERT_EQ(1ULL, q->dead_holders);
	/* made consistent: the next one gets it clean, by its grant word */
	ASSERT_EQ(0, odsm_dq_consistent(q, b));
	ASSERT_EQ(0, odsm_dq_unlock(q, b, down, NULL, &next, &g));
	ASSERT_EQ(c, next);
	ASSERT_EQ(ODSM_DQ_GRANTED, odsm_dq_poll(q, c, down, NULL));
	/* node 1 dies too: a new locker takes it over, inconsistent */
	dead_nodes |= 1ULL << 1;
	ASSERT_EQ(ODSM_DQ_GRANTED_INCONS, odsm_dq_lock(q, tok(0, 4, 1), 0, 32,
						       true, down, NULL));
	ASSERT_EQ(tok(0, 4, 1), q->holder);
	ASSERT_EQ(2ULL, q->dead_holders);
	ASSERT_EQ(ODSM_DQ_QUEUED, odsm_dq_lock(q, tok(0, 5, 1), 0, 40, true,
					       down, NULL));
	/* unlocked inconsistent: nobody gets it again, the waiter learns */
	ASSERT_EQ(0, odsm_dq_unlock(q, tok(0, 4, 1), down, NULL, &next, &g));
	ASSERT_EQ(0ULL, next);
	ASSERT_EQ(-ENOTRECOVERABLE, odsm_dq_poll(q, tok(0, 5, 1), down,
						 NULL));
	ASSERT_EQ(-ENOTRECOVERABLE, odsm_dq_lock(q, tok(0, 6, 1), 0, 48, false,
						 down, NULL));
	free(q);
}

/*
 * A node that left and joined again with nobody seeing it down: its
 * calls named the incarnation they were made as, and the node is now
 * another one.  Its holder is dropped (the next holder gets it
 * inconsistent), its waiters skipped; a call that named no incarnation
 * (0: an older library) is judged by down alone, as before.
 */
TEST(restarted_holder_and_waiter)
{
	struct odsm_dq *q = calloc(1, sizeof(*q));
	uint64_t a = tok(1, 1, 1), b = tok(2, 2, 1), c = tok(0, 3, 1);
	uint64_t d = tok(1, 4, 1), next, g;

	ASSERT_NE(NULL, q);
	dead_nodes = 0;
	node_inc[0] = 100;
	node_inc[1] = 101;
	node_inc[2] = 102;
	ASSERT_EQ(ODSM_DQ_GRANTED, odsm_dq_lock(q, a, 101, 8, true, down,
						   NULL));
	ASSERT_EQ(ODSM_DQ_QUEUED, odsm_dq_lock(q, b, 102, 16, true, down,
						  NULL));
	ASSERT_EQ(ODSM_DQ_QUEUED, odsm_dq_lock(q, c, 100, 24, true, down,
						  NULL));
	/* still the same incarnations: nothing changes */
	ASSERT_EQ(ODSM_DQ_QUEUED, odsm_dq_poll(q, c, down, NULL));
	ASSERT_EQ(a, q->holder);
	/* node 1 restarts (never down), node 2 too: a is dropped, b skipped */
	node_inc[1] = 201;
	node_inc[2] = 202;
	ASSERT_EQ(ODSM_DQ_GRANTED_INCONS, odsm_dq_poll(q, c, down, NULL));
	ASSERT_EQ(c, q->holder);
	ASSERT_EQ(1ULL, q->dead_holders);
	ASSERT_EQ(1ULL, q->dead_waiters);
	ASSERT_EQ(0, odsm_dq_consistent(q, c));
	/* node 1's new incarnation locks and holds it: alive */
	ASSERT_EQ(ODSM_DQ_QUEUED, odsm_dq_lock(q, d, 201, 32, true, down,
						  NULL));
	ASSERT_EQ(0, odsm_dq_unlock(q, c, down, NULL, &next, &g));
	ASSERT_EQ(d, next);
	ASSERT_EQ(ODSM_DQ_GRANTED, odsm_dq_poll(q, d, down, NULL));
	ASSERT_EQ(0, odsm_dq_unlock(q, d, down, NULL, &next, &g));
	/* a holder that named no incarnation: only down drops it */
	ASSERT_EQ(ODSM_DQ_GRANTED, odsm_dq_lock(q, a, 0, 8, true, down, NULL));
	node_inc[1] = 301;
	ASSERT_EQ(-EBUSY, odsm_dq_lock(q, c, 100, 24, false, down, NULL));
	ASSERT_EQ(a, q->holder);
	memset(node_inc, 0, sizeof(node_inc));
	free(q);
}

TEST(dead_waiters_are_skipped)
{
	struct odsm_dq *q = calloc(1, sizeof(*q));
	uint64_t a = tok(0, 1, 1), b = tok(1, 2, 1), c = tok(2, 3, 1);
	uint64_t d = tok(0, 4, 1), next, g;

	ASSERT_NE(NULL, q);
	dead_nodes = 0;
	ASSERT_EQ(ODSM_DQ_GRANTED, odsm_dq_lock(q, a, 0, 8, true, down, NULL));
	ASSERT_EQ(ODSM_DQ_QUEUED, odsm_dq_lock(q, b, 0, 16, true, down, NULL));
	ASSERT_EQ(ODSM_DQ_QUEUED, odsm_dq_lock(q, c, 0, 24, true, down, NULL));
	ASSERT_EQ(ODSM_DQ_QUEUED, odsm_dq_lock(q, d, 0, 32, true, down, NULL));
	dead_nodes = 1ULL << 1 | 1ULL << 2;
	ASSERT_EQ(0, odsm_dq_unlock(q, a, down, NULL, &next, &g));
	ASSERT_EQ(d, next);
	ASSERT_EQ(32ULL, g);
	/* they never held it: consistent */
	ASSERT_EQ(ODSM_DQ_GRANTED, odsm_dq_poll(q, d, down, NULL));
	ASSERT_EQ(2ULL, q->dead_waiters);
	ASSERT_EQ(0ULL, q->dead_holders);
	/* a free mutex costs no down check */
	ASSERT_EQ(0, odsm_dq_unlock(q, d, down, NULL, &next, &g));
	down_calls = 0;
	ASSERT_EQ(ODSM_DQ_GRANTED, odsm_dq_lock(q, b, 0, 8, true, down, NULL));
	ASSERT_EQ(0U, down_calls);
	free(q);
}

TEST_HARNESS_MAIN
