// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm mutex, the FIFO kind: a ticket lock.  The lock word holds the
 * tickets handed out (high 32 bits) and the ticket served (low 32): a
 * locker takes a ticket with one fetch-and-add that the mutex's home
 * runs (or its NIC, over RDMA), so tickets -- and grants -- are in the
 * order the requests arrive there, and waits until its ticket is
 * served, polling with proportional backoff: the next in line with a
 * doubling pause, one further back about as long as the grants before
 * its own take (odsm_ticket_nap_us), so that the home is not flooded by
 * every waiter's polls.  A ring in the mutex object says
 * which node took each of the last ODSM_MX_RING tickets: the first
 * waiter on a live node whose predecessors' nodes are all down serves
 * itself in one compare-and-swap, marked inconsistent: -EOWNERDEAD.
 */
#include <errno.h>
#include "odsm.h"
#include "odsm_sync_int.h"
#include "odsm_mutex_int.h"

#define DOWN_CHECK_EVERY	4

/*
 * A step after the ticket was taken that failed: go on trying?  A ticket
 * given up is never served, and every later locker would wait for it
 * for ever, so a failed step is tried again after a pause (a home slow
 * to answer, memory short for a moment) until it succeeds -- unless the
 * home is down, with the mutex itself.
 */
static bool again(int ret, unsigned int *us)
{
	if (ret == -EHOSTDOWN)
		return false;
	odsm__sync_nap(us);
	return true;
}

static uint64_t ring_at(uint64_t mutex, uint32_t t)
{
	return mutex + ODSM_MX_RINGOFF + 8ULL * (t % ODSM_MX_RING);
}

/* Are the nodes of tickets s .. t - 1 all down?  1, 0 or -errno. */
static int before_dead(uint64_t mutex, uint32_t s, uint32_t t)
{
	uint64_t e;
	int ret, node;

	if ((uint32_t)(t - s) > ODSM_MX_RING - 1)
		return 0;		/* the ring forgot some of them */
	for (; s != t; s++) {
		ret = odsm_read(ring_at(mutex, s), &e, sizeof(e));
		if (ret)
			return ret;
		node = odsm_mx_ring_node(e, s);
		if (node < 0)
			return 0;	/* not written yet: alive */
		/* one not known gone is alive: never an abort, with our
		 * ticket taken (gone: down, or joined again since)
		 */
		if (odsm__holder_gone((unsigned int)node,
				      odsm_mx_ring_inc(e)) != 1)
			return 0;
	}
	return 1;
}

/* Ours: the state word says whether the object is still recoverable. */
static int granted(struct odsm_guard *g, uint32_t t, bool took)
{
	uint64_t st, v = ODSM_MX_INCONSISTENT;
	unsigned int us = 0;
	int ret;

	g->word = t;
	g->flags = ODSM_GUARD_HELD | ODSM_GUARD_FIFO;
	/* the lock is ours: a failure must not keep it (again()) */
	while ((ret = odsm_read(g->mutex + ODSM_MX_STATE, &st, sizeof(st))) &&
	       again(ret, &us))
		;
	if (ret)
		return ret;
	if (st & ODSM_MX_NOTRECOVERABLE) {
		odsm__mutex_release_fifo(g);
		return -ENOTRECOVERABLE;
	}
	while (took &&
	       (ret = odsm_write(g->mutex + ODSM_MX_STATE, &v, sizeof(v))) &&
	       again(ret, &us))
		;
	if (ret)
		return ret;
	if (took || (st & ODSM_MX_INCONSISTENT)) {
		g->flags |= ODSM_GUARD_INCONS;
		return -EOWNERDEAD;
	}
	return 0;
}

int odsm__mutex_lock_fifo(struct odsm_guard *g, bool wait)
{
	uint64_t at = g->mutex + ODSM_MX_WORD, old, w, e, seen_us, now_us;
	unsigned int us = 0, polls = 0, grant_us = 0, rus = 0;
	uint32_t t, seen, inc;
	int ret;

	/* before the ticket: a failure here keeps nobody waiting */
	ret = odsm__node_inc_tag(odsm_rt.info.node_id, &inc);
	if (ret)
		return ret;

	if (!wait) {	/* a ticket only when it is served at once */
		ret = odsm_read(at, &w, sizeof(w));
		if (ret)
			return ret;
		if (odsm_mx_next(w) != odsm_mx_serving(w))
			return -EBUSY;
		ret = odsm_cmp_swap_nic(at, w, w + (1ULL << 32), &old);
		if (ret)
			return ret;
		if (old != w)
			return -EBUSY;
	} else {
		ret = odsm_fetch_add_nic(at, 1ULL << 32, &old);
		if (ret)
			return ret;
	}
	/* from here on the ticket is ours to be served: see again() */
	t = odsm_mx_next(old);
	e = odsm_mx_ring_entry(t, odsm_rt.info.node_id, inc);
	while ((ret = odsm_write(ring_at(g->mutex, t), &e, sizeof(e))) &&
	       again(ret, &rus))
		;
	if (ret)
		return ret;
	seen = odsm_mx_serving(old);
	seen_us = odsm__sync_now_us();
	for (w = old;;) {
		if (odsm_mx_serving(w) == t)
			return granted(g, t, false);
		odsm__sync_sleep_us(odsm_ticket_nap_us(t - odsm_mx_serving(w),
						       grant_us, &us));
		ret = odsm_read(at, &w, sizeof(w));
		if (ret && again(ret, &rus))
			continue;	/* w as it was */
		if (ret)
			return ret;
		rus = 0;
		if (odsm_mx_serving(w) != seen) {
			now_us = odsm__sync_now_us();
			grant_us = odsm_ticket_grant_us(grant_us,
							odsm_mx_serving(w) - seen,
							now_us - seen_us);
			seen = odsm_mx_serving(w);
			seen_us = now_us;
		}
		if (odsm_mx_serving(w) == t || ++polls % DOWN_CHECK_EVERY)
			continue;
		ret = before_dead(g->mutex, odsm_mx_serving(w), t);
		if (ret < 0 && ret == -EHOSTDOWN)
			return ret;
		if (ret <= 0)
			continue;	/* alive, or not known: wait on */
		/* our predecessors are gone: serve ourselves */
		ret = odsm_cmp_swap_nic(at, w, odsm_mx_serve(w, t), &old);
		if (ret == -EHOSTDOWN)
			return ret;
		if (ret)
			continue;	/* asked again at the next check */
		if (old == w)
			return granted(g, t, true);
		w = old;
	}
}

int odsm__mutex_still_ours_fifo(struct odsm_guard *g)
{
	uint64_t w;
	int ret;

	ret = odsm_read(g->mutex + ODSM_MX_WORD, &w, sizeof(w));
	if (!ret && odsm_mx_serving(w) != (uint32_t)g->word)
		ret = -EPERM;
	return ret;
}

int odsm__mutex_release_fifo(struct odsm_guard *g)
{
	uint64_t at = g->mutex + ODSM_MX_WORD, st, w, old;
	uint32_t t = (uint32_t)g->word;
	int ret;

	if (g->flags & ODSM_GUARD_INCONS) {
		st = ODSM_MX_NOTRECOVERABLE;
		ret = odsm_write(g->mutex + ODSM_MX_STATE, &st, sizeof(st));
		if (ret)
			return ret;
	}
	/* serving + 1 without carrying into the tickets handed out */
	ret = odsm_read(at, &w, sizeof(w));
	while (!ret) {
		if (odsm_mx_serving(w) != t)
			return -EPERM;
		ret = odsm_cmp_swap_nic(at, w, odsm_mx_serve(w, t + 1), &old);
		if (!ret && old == w)
			return 0;
		w = old;
	}
	return ret;
}

int odsm__mutex_consistent_fifo(struct odsm_guard *g)
{
	uint64_t zero = 0;

	return odsm_write(g->mutex + ODSM_MX_STATE, &zero, sizeof(zero));
}
