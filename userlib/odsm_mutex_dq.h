/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm mutex, the delegated kind, inside: the queue a trustee keeps
 * for one mutex, and the pure logic on it (no system call, no network),
 * which selftests/host/dmutex_test.c checks on the host.  The trustee's
 * operations (odsm_mutex_deleg.c) validate their requests, then call
 * these.  Not installed.
 *
 * The state has a holder (the token of the lock call that holds it, 0
 * when free) and a FIFO ring of waiters; grants go in the order the
 * requests reached the trustee.  A token names one lock call: the
 * caller's node + 1 (bits 48..63), a tag of its thread (24..47), and a
 * sequence number of the thread's calls (0..23), so that a grant meant
 * for an earlier call never matches a later one.  Each waiter gives the
 * global address of a grant word on its own node, which the unlocker
 * (not the trustee: its loop never waits on the network) writes with the
 * waiter's token.  Each lock call also says its node's incarnation (0:
 * not known), kept with its token: a holder or waiter whose node joined
 * again as another incarnation since (restarted: its processes are gone)
 * is dead, as one whose node is down.
 */
#ifndef ODSM_MUTEX_DQ_H
#define ODSM_MUTEX_DQ_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#define ODSM_DQ_MAX		64U	/* waiters queued at once */

/* odsm_dq.flags */
#define ODSM_DQ_INCONS		1U	/* a holder died with it */
#define ODSM_DQ_NOTREC		2U	/* unlocked while inconsistent */

/* What the operations answer, besides -errno. */
#define ODSM_DQ_GRANTED		0	/* the caller holds it */
#define ODSM_DQ_QUEUED		1	/* the caller waits in the queue */
#define ODSM_DQ_GRANTED_INCONS	2	/* holds it, taken from a dead one */

struct odsm_dq_waiter {
	uint64_t tok;
	uint64_t grant;		/* global address of its grant word */
	uint32_t inc;		/* its node's incarnation, 0: not known */
	uint32_t pad;
};

struct odsm_dq {
	uint64_t holder;	/* token, 0 when free */
	uint32_t flags;
	uint32_t head, n;	/* the ring of waiters */
	uint32_t holder_inc;	/* the holder's node's incarnation, or 0 */
	struct odsm_dq_waiter q[ODSM_DQ_MAX];
	/* counters: the trustee's only, read for tests and debugging */
	uint64_t grants;	/* locks granted */
	uint64_t queued;	/* requests that waited */
	uint64_t dead_holders;	/* holders dropped: node down or restarted */
	uint64_t dead_waiters;	/* waiters skipped: node down or restarted */
	uint64_t refused;	/* malformed requests (-EINVAL) */
};

/*
 * Is the node of a call made as incarnation inc gone: down, or (inc not
 * 0) joined again as another incarnation since?  1, 0 or -errno (the
 * trustee asks its own module).
 */
typedef int (*odsm_dq_down_fn)(unsigned int node, uint32_t inc,
			       void *cookie);

static inline uint64_t odsm_dq_token(unsigned int node, uint32_t tid,
				     uint32_t seq)
{
	return (uint64_t)(node + 1) << 48 | (uint64_t)(tid & 0xffffff) << 24 |
	       (seq & 0xffffff);
}

/* The node of tok, -1 for no node (0 is no token). */
static inline int odsm_dq_node(uint64_t tok)
{
	return (int)(tok >> 48) - 1;
}

/* The calling thread of tok: node and thread tag, without the call. */
static inline uint64_t odsm_dq_thread(uint64_t tok)
{
	return tok >> 24;
}

static inline struct odsm_dq_waiter *odsm_dq_at(struct odsm_dq *q,
						unsigned int i)
{
	return &q->q[(q->head + i) % ODSM_DQ_MAX];
}

static inline int odsm_dq_granted(const struct odsm_dq *q)
{
	return q->flags & ODSM_DQ_INCONS ? ODSM_DQ_GRANTED_INCONS :
					   ODSM_DQ_GRANTED;
}

/*
 * The lock goes to the first waiter whose node is up (0 if none).  A
 * waiter whose node is down never held the lock: skipped, the object
 * stays consistent.  When the down check fails, the waiter gets it
 * anyway (it is skipped later if its node really is down).
 */
static inline void odsm_dq_grant_next(struct odsm_dq *q, odsm_dq_down_fn down,
				      void *cookie, uint64_t *grant)
{
	struct odsm_dq_waiter w;

	q->holder = 0;
	*grant = 0;
	while (q->n) {
		w = *odsm_dq_at(q, 0);
		q->head = (q->head + 1) % ODSM_DQ_MAX;
		q->n--;
		if (down(odsm_dq_node(w.tok), w.inc, cookie) == 1) {
			q->dead_waiters++;
			continue;
		}
		q->holder = w.tok;
		q->holder_inc = w.inc;
		*grant = w.grant;
		q->grants++;
		return;
	}
}

/*
 * A holder whose node is down is dropped: it may have changed the object
 * half-way, so the next holder gets it inconsistent.  1 when it was
 * dropped, 0 when it lives (or there is none), -errno.
 */
static inline int odsm_dq_check_holder(struct odsm_dq *q, odsm_dq_down_fn down,
				       void *cookie)
{
	uint64_t grant;
	int ret;

	if (!q->holder)
		return 0;
	ret = down(odsm_dq_node(q->holder), q->holder_inc, cookie);
	if (ret <= 0)
		return ret;
	q->flags |= ODSM_DQ_INCONS;
	q->dead_holders++;
	/* the new holder learns it by polling, not by its grant word */
	odsm_dq_grant_next(q, down, cookie, &grant);
	return 1;
}

/* Where tok waits in the queue, or -1. */
static inline int odsm_dq_find(struct odsm_dq *q, uint64_t tok, bool thread)
{
	unsigned int i;
	uint64_t t;

	for (i = 0; i < q->n; i++) {
		t = odsm_dq_at(q, i)->tok;
		if (thread ? odsm_dq_thread(t) == odsm_dq_thread(tok) : t == tok)
			return (int)i;
	}
	return -1;
}

/*
 * A lock request of a call of tok's node as incarnation inc (0: not
 * known; wait: queue it when held, else -EBUSY): GRANTED, GRANTED_INCONS,
 * QUEUED; -EDEADLK (this thread holds it or waits), -ENOTRECOVERABLE,
 * -EAGAIN (the queue is full), -errno of down.
 */
static inline int odsm_dq_lock(struct odsm_dq *q, uint64_t tok, uint32_t inc,
			       uint64_t grant, bool wait, odsm_dq_down_fn down,
			       void *cookie)
{
	int ret;

	if (q->flags & ODSM_DQ_NOTREC)
		return -ENOTRECOVERABLE;
	if ((q->holder && odsm_dq_thread(q->holder) == odsm_dq_thread(tok)) ||
	    odsm_dq_find(q, tok, true) >= 0)
		return -EDEADLK;
	ret = odsm_dq_check_holder(q, down, cookie);
	if (ret < 0)
		return ret;
	if (!q->holder && !q->n) {
		q->holder = tok;
		q->holder_inc = inc;
		q->grants++;
		return odsm_dq_granted(q);
	}
	if (!wait)
		return -EBUSY;
	if (q->n == ODSM_DQ_MAX)
		return -EAGAIN;
	*odsm_dq_at(q, q->n) = (struct odsm_dq_waiter){ tok, grant, inc, 0 };
	q->n++;
	q->queued++;
	return ODSM_DQ_QUEUED;
}

/*
 * A waiter asks where it stands (and the trustee looks for a dead
 * holder): GRANTED, GRANTED_INCONS, QUEUED; -ENOTRECOVERABLE when the
 * queue was dropped for that; -ENOENT when tok neither holds nor waits.
 */
static inline int odsm_dq_poll(struct odsm_dq *q, uint64_t tok,
			       odsm_dq_down_fn down, void *cookie)
{
	int ret;

	if (q->holder != tok) {
		ret = odsm_dq_check_holder(q, down, cookie);
		if (ret < 0)
			return ret;
	}
	if (q->holder == tok)
		return odsm_dq_granted(q);
	if (odsm_dq_find(q, tok, false) >= 0)
		return ODSM_DQ_QUEUED;
	return q->flags & ODSM_DQ_NOTREC ? -ENOTRECOVERABLE : -ENOENT;
}

/*
 * The holder tok unlocks: 0, and *next and *grant: the waiter it went to
 * (for the unlocker to write its grant word), or 0.  Unlocked while
 * inconsistent: nobody gets it again, the waiters learn it when they
 * poll.  -EPERM: tok does not hold it.
 */
static inline int odsm_dq_unlock(struct odsm_dq *q, uint64_t tok,
				 odsm_dq_down_fn down, void *cookie,
				 uint64_t *next, uint64_t *grant)
{
	*next = 0;
	*grant = 0;
	if (!tok || q->holder != tok)
		return -EPERM;
	if (q->flags & ODSM_DQ_INCONS) {
		q->flags = ODSM_DQ_NOTREC;
		q->holder = 0;
		q->n = 0;
		return 0;
	}
	odsm_dq_grant_next(q, down, cookie, grant);
	*next = q->holder;
	return 0;
}

/*
 * tok gives up (its caller failed while it waited): out of the queue,
 * or, if it was granted meanwhile, unlocked (the object as the last
 * unlock left it).  0, or -ENOENT when it neither holds nor waits.
 */
static inline int odsm_dq_cancel(struct odsm_dq *q, uint64_t tok,
				 odsm_dq_down_fn down, void *cookie,
				 uint64_t *next, uint64_t *grant)
{
	unsigned int j;
	int i;

	*next = 0;
	*grant = 0;
	if (tok && q->holder == tok) {
		odsm_dq_grant_next(q, down, cookie, grant);
		*next = q->holder;
		if (q->flags & ODSM_DQ_INCONS) {
			/* a grant word says "consistent": it learns by polling */
			*next = 0;
			*grant = 0;
		}
		return 0;
	}
	i = odsm_dq_find(q, tok, false);
	if (i < 0)
		return -ENOENT;
	for (j = (unsigned int)i; j + 1 < q->n; j++)
		*odsm_dq_at(q, j) = *odsm_dq_at(q, j + 1);
	q->n--;
	return 0;
}

/* After GRANTED_INCONS: the holder made the object consistent. */
static inline int odsm_dq_consistent(struct odsm_dq *q, uint64_t tok)
{
	if (!tok || q->holder != tok)
		return -EPERM;
	q->flags &= ~ODSM_DQ_INCONS;
	return 0;
}

/* Does tok hold it?  0 or -EPERM. */
static inline int odsm_dq_held(const struct odsm_dq *q, uint64_t tok)
{
	return tok && q->holder == tok ? 0 : -EPERM;
}

#endif /* ODSM_MUTEX_DQ_H */
