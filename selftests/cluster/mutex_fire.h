/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A mutex under fire, shared by cluster_sync_test (the CAS and FIFO
 * kinds) and cluster_dmutex_test (the delegated kind): MF_THREADS threads
 * on every node lock the mutex, increment the guarded counter and append
 * their (node, thread, i) to the guarded array, iters times each
 * (mf_run()); then one node, holding the lock, checks that the total is
 * exact and that each thread's entries are all there, in its order
 * (mf_check()).  A lost update shows as a short count, a lock that let
 * two threads in at once as a torn or missing entry.
 */
#ifndef _ODSM_MUTEX_FIRE_H
#define _ODSM_MUTEX_FIRE_H

#include <pthread.h>
#include "odsm_cluster.h"

#define MF_THREADS	2U
#define MF_ITERS_MAX	20U
#define MF_LOG_CAP	(ODSM_MAX_NODES * MF_THREADS * MF_ITERS_MAX)

/* The object a test's mutex guards. */
struct guarded {
	uint64_t count;
	uint64_t n;
	uint32_t log[MF_LOG_CAP];	/* node << 16 | thread << 8 | i */
};

struct mthread {
	pthread_t th;
	uint64_t mutex;
	unsigned int id;	/* node << 8 | thread */
	unsigned int iters;
	int ret;
};

static void *mf_locker(void *arg)
{
	struct mthread *t = arg;
	struct odsm_guard g;
	struct guarded *p;
	unsigned int i;

	for (i = 0; i < t->iters; i++) {
		t->ret = odsm_mutex_lock(t->mutex, &g, (void **)&p);
		if (t->ret)
			return NULL;
		p->count++;
		if (p->n < MF_LOG_CAP)
			p->log[p->n] = t->id << 8 | i;
		p->n++;
		t->ret = odsm_mutex_unlock(&g);
		if (t->ret)
			return NULL;
	}
	return NULL;
}

/*
 * A mutex of kind guarding a zeroed struct guarded, made by node 0 and
 * published there as name; every node waits up to secs for the name.
 */
static C_UNUSED int mf_mutex_named(const char *name, unsigned int kind,
				   unsigned int secs, uint64_t *mx)
{
	struct odsm_name nm;
	odsm_box b = { 0 };
	int ret;

	if (C.self == 0) {
		ret = odsm_box_new(&b, sizeof(struct guarded), ODSM_ALLOC_ZERO);
		if (!ret)
			ret = odsm_mutex_new(mx, kind, &b);
		if (!ret)
			ret = odsm_name_publish(name, ODSM_NAME_MUTEX, *mx);
		if (ret)
			return ret;
	}
	ret = odsm_name_wait(name, secs * 1000, &nm);
	if (!ret)
		*mx = nm.value;
	return ret;
}

/*
 * The locks each thread takes: base on up to 3 nodes; on more, as many
 * locks in all as 3 nodes take (at least 5 a thread).  Every node still
 * contends at once, which is what a bigger cluster tests; a handoff
 * costs a round trip to the home, so locks per node are what bound the
 * time (the 8-guest run's mutex programs took 48-68 s with base each).
 */
static C_UNUSED unsigned int mf_iters(unsigned int base)
{
	unsigned int n = C.nodes > 3 ? base * 3 / C.nodes : base;

	return n < 5 ? 5 : n;
}

/*
 * MF_THREADS lockers of mutex on this node, iters (up to MF_ITERS_MAX)
 * locks each: 0 or the first one's error; *ms, the time they took.
 */
static C_UNUSED int mf_run(uint64_t mutex, unsigned int iters, uint64_t *ms)
{
	struct mthread ts[MF_THREADS];
	uint64_t t0 = c_now_ms();
	unsigned int i, started = 0;
	int ret = 0;

	if (iters > MF_ITERS_MAX)
		return -EINVAL;
	for (i = 0; i < MF_THREADS; i++) {
		ts[i] = (struct mthread){ .mutex = mutex, .iters = iters,
					  .id = C.self << 8 | i };
		if (pthread_create(&ts[i].th, NULL, mf_locker, &ts[i])) {
			ret = -EAGAIN;
			break;
		}
		started++;
	}
	for (i = 0; i < started; i++) {
		pthread_join(ts[i].th, NULL);
		if (!ret && ts[i].ret) {
			fprintf(stderr, "# locker %u: %s\n", i,
				odsm_strerror(ts[i].ret));
			ret = ts[i].ret;
		}
	}
	*ms = c_now_ms() - t0;
	return ret;
}

/*
 * With the lock held, p the guarded object after every one of nodes ran
 * mf_run(iters): 0, or -EBADMSG with what was wrong on stderr.
 */
static C_UNUSED int mf_check(const struct guarded *p, unsigned int nodes,
			     unsigned int iters)
{
	unsigned int seen[ODSM_MAX_NODES][MF_THREADS] = { { 0 } }, k, i;
	uint64_t n = (uint64_t)nodes * MF_THREADS * iters, j;

	if (p->count != n || p->n != n) {
		fprintf(stderr, "# under fire: count %" PRIu64 ", entries %"
			PRIu64 ", want %" PRIu64 " of each\n", p->count, p->n,
			n);
		return -EBADMSG;
	}
	/* each thread's entries: all there, in its order */
	for (j = 0; j < n; j++) {
		k = p->log[j] >> 16;
		i = (p->log[j] >> 8) & 0xff;
		if (k >= nodes || i >= MF_THREADS ||
		    (p->log[j] & 0xff) != seen[k][i]) {
			fprintf(stderr, "# under fire: entry %" PRIu64 " is %#x\n",
				j, p->log[j]);
			return -EBADMSG;
		}
		seen[k][i]++;
	}
	return 0;
}

#endif /* _ODSM_MUTEX_FIRE_H */
