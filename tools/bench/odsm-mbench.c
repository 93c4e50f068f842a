// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-mbench: libodsm's two mutexes (odsm_sync.h) under contention from
 * every node.  Run on every node at once; THREADS threads on each lock a
 * mutex of node 0, add 1 to the guarded counter and to their node's,
 * and unlock, for MS ms; first the CAS kind, then the delegated kind
 * (ODSM_MUTEX_DELEG: a FIFO queue kept by a trustee of node 0, whose
 * runtime node 0 starts with odsm_spawn_start()).  The nodes meet with
 * odsm_app_join() and the program's barrier, so it must run before
 * anything else allocates in node 0's partition on a freshly loaded
 * module (programs.rst).
 *
 *   odsm-mbench LABEL [MS [THREADS]]     on every node
 *
 * Rows (node 1): "ODSM_BENCH mutex LABEL nodes=N threads=T
 * cas_locks_per_s=... deleg_locks_per_s=... cas_node0_share=...
 * deleg_node0_share=... cas_others_locks_per_s=...
 * deleg_others_locks_per_s=..." (the locks of the whole cluster per
 * second, the part node 0 -- the mutexes' home, where the object stays
 * while its own threads pass the CAS lock between them -- took, and the
 * other nodes' locks per second), then
 * "ODSM_BENCH mutex_cas_vs_delegated ratio=R label=LABEL": CAS over
 * delegated.  The delegated kind is the fair one: its trustee grants in
 * the order the requests reach it.  A benchmark, not a test.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include "odsm.h"
#include "bench.h"

#define MAXN	16	/* nodes counted one by one */

struct guarded {
	uint64_t total;
	uint64_t node[MAXN];
};

struct worker {
	pthread_t th;
	uint64_t mutex;
	double end_us;
	int ret;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned int self = odsm_rt.info.node_id;
	struct odsm_guard g;
	struct guarded *p;

	while (now_us() < w->end_us) {
		w->ret = odsm_mutex_lock(w->mutex, &g, (void **)&p);
		if (w->ret)
			return NULL;
		p->total++;
		p->node[self < MAXN ? self : MAXN - 1]++;
		w->ret = odsm_mutex_unlock(&g);
		if (w->ret)
			return NULL;
	}
	return NULL;
}

/* The cluster's locks per second on a mutex of kind, and node 0's share. */
static void run(struct odsm_app *app, const char *label, unsigned int kind,
		long ms, unsigned int threads, double *rate, double *share)
{
	struct worker ws[64];
	struct odsm_name nm;
	struct odsm_guard g;
	struct guarded *p;
	odsm_box b = { 0 };
	char name[ODSM_NAME_MAX + 1];
	uint64_t mx;
	unsigned int i;
	double end;
	int ret;

	snprintf(name, sizeof(name), "mbench-%u-%.16s", kind, label);
	if (app->self == 0) {
		ret = odsm_box_new(&b, sizeof(struct guarded), ODSM_ALLOC_ZERO);
		if (!ret)
			ret = odsm_mutex_new(&mx, kind, &b);
		if (!ret)
			ret = odsm_name_publish(name, ODSM_NAME_MUTEX, mx);
		if (ret)
			die("making the mutex", ret);
	}
	ret = odsm_name_wait(name, 60000, &nm);
	if (ret)
		die(name, ret);
	ret = odsm_barrier_wait(app->barrier, 60000);
	if (ret)
		die("barrier", ret);
	end = now_us() + ms * 1e3;
	for (i = 0; i < threads; i++) {
		ws[i] = (struct worker){ .mutex = nm.value, .end_us = end };
		if (pthread_create(&ws[i].th, NULL, work, &ws[i]))
			die("pthread_create", -errno);
	}
	for (i = 0; i < threads; i++) {
		pthread_join(ws[i].th, NULL);
		if (ws[i].ret)
			die("lock/unlock", ws[i].ret);
	}
	ret = odsm_barrier_wait(app->barrier, 60000);
	if (!ret)
		ret = odsm_mutex_lock(nm.value, &g, (void **)&p);
	if (ret)
		die("reading the total", ret);
	*rate = p->total / (ms / 1e3);
	*share = p->total ? (double)p->node[0] / p->total : 0;
	ret = odsm_mutex_unlock(&g);
	if (!ret)	/* everyone read it before node 0 frees it */
		ret = odsm_barrier_wait(app->barrier, 60000);
	if (!ret && app->self == 0)
		ret = odsm_mutex_free(mx, NULL);
	if (ret)
		die("ending", ret);
}

int main(int argc, char **argv)
{
	const char *label = argc > 1 ? argv[1] : "run";
	long ms = arg_num(argc, argv, 2, 1000);
	unsigned int threads = (unsigned int)arg_num(argc, argv, 3, 2);
	double cas, dlg, cas_sh, dlg_sh;
	struct odsm_app app;
	uint64_t rt;
	int ret;

	if (threads < 1 || threads > 64 || ms < 1)
		die("usage: odsm-mbench LABEL [MS [THREADS (1..64)]]", -EINVAL);
	ret = odsm_app_join(&app, "odsm-mbench", 0, 60000);
	if (ret)
		die("odsm_app_join", ret);
	/* the delegated mutex's trustee: node 0's, where the mutexes are */
	if (app.self == 0) {
		ret = odsm_spawn_start(1, &rt);
		if (ret)
			die("odsm_spawn_start", ret);
	}
	run(&app, label, ODSM_MUTEX_CAS, ms, threads, &cas, &cas_sh);
	run(&app, label, ODSM_MUTEX_DELEG, ms, threads, &dlg, &dlg_sh);
	if (app.self == 1 || app.nodes == 1) {
		row("mutex %s nodes=%u threads=%u cas_locks_per_s=%.0f deleg_locks_per_s=%.0f cas_node0_share=%.2f deleg_node0_share=%.2f cas_others_locks_per_s=%.0f deleg_others_locks_per_s=%.0f",
		    label, app.nodes, threads, cas, dlg, cas_sh, dlg_sh,
		    cas * (1 - cas_sh), dlg * (1 - dlg_sh));
		row("mutex_cas_vs_delegated ratio=%.2f label=%s",
		    dlg > 0 ? cas / dlg : 0, label);
	}
	odsm_spawn_stop();	/* run() ended with a barrier: nobody uses it */
	odsm_fini();
	return 0;
}
