// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-dbench: fetch-and-add on 1, 4 and 16 shared counters by T threads
 * (1, 2, 4, 8), four ways side by side: delegation to one trustee thread
 * (libodsm, apply_then batched), a pthread mutex per counter, an MCS lock
 * per counter, and an atomic fetch-and-add.  Native: the same-node path
 * needs no kernel, so it runs on the host in a shared mapping, and the
 * numbers are real rather than emulated.  Operations per second, the
 * median of REPS runs of MS milliseconds.  Trust<T>'s Figure 4 shape.
 *
 *   odsm-dbench [MS [REPS [MAXTHREADS]]]
 *
 * Rows: "ODSM_BENCH deleg_local counters=C threads=T deleg=... mutex=...
 * mcs=... atomic=... deleg_vs_mcs=R" and last "deleg_local_vs_mcs
 * ratio=R": delegation over MCS on 1 counter at the most threads, where
 * the paper reports its 8-22x.  A benchmark, not a test.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include "odsm.h"
#include "bench.h"

#define MAXC	16
#define REPS	5

enum { DELEG, MUTEX, MCS, ATOMIC, NMETHODS };
static const char *const names[NMETHODS] = { "deleg", "mutex", "mcs",
					      "atomic" };

struct mcs_node {
	struct mcs_node *volatile next;
	volatile int locked;
} __attribute__((aligned(64)));

struct ctr {
	uint64_t v;
	pthread_mutex_t m;
	struct mcs_node *volatile tail;
} __attribute__((aligned(64)));

static struct ctr ctrs[MAXC];
static odsm_trust trusts[MAXC];
static struct odsm_deleg *dg;
static uint64_t OP_INC;
static volatile int go, stop;

static void mcs_lock(struct ctr *c, struct mcs_node *me)
{
	struct mcs_node *prev;

	me->next = NULL;
	me->locked = 1;
	prev = __atomic_exchange_n(&c->tail, me, __ATOMIC_ACQ_REL);
	if (!prev)
		return;
	__atomic_store_n(&prev->next, me, __ATOMIC_RELEASE);
	while (__atomic_load_n(&me->locked, __ATOMIC_ACQUIRE))
		sched_yield();	/* spinning on a preempted queue is hopeless */
}

static void mcs_unlock(struct ctr *c, struct mcs_node *me)
{
	struct mcs_node *n = __atomic_load_n(&me->next, __ATOMIC_ACQUIRE);
	struct mcs_node *expect = me;

	if (!n) {
		if (__atomic_compare_exchange_n(&c->tail, &expect, NULL, false,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return;
		while (!(n = __atomic_load_n(&me->next, __ATOMIC_ACQUIRE)))
			sched_yield();
	}
	__atomic_store_n(&n->locked, 0, __ATOMIC_RELEASE);
}

static int op_inc(void *obj, const void *arg, size_t len, void *ret,
		  size_t *rl)
{
	(*(uint64_t *)obj)++;
	*rl = 0;
	return 0;
}

struct arg {
	int method, ncounters, id;
	uint64_t ops;
};

static void *run(void *p)
{
	struct arg *a = p;
	struct mcs_node me;
	uint64_t n = 0, x = 0x9e3779b97f4a7c15ULL * (a->id + 1);
	unsigned int k;

	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		sched_yield();
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		k = (unsigned int)(x % a->ncounters);
		switch (a->method) {
		case DELEG:
			if (odsm_deleg_apply_then(&trusts[k], OP_INC, NULL, 0,
						  NULL, 0, NULL, NULL, NULL, 0))
				die("apply_then", -EIO);
			break;
		case MUTEX:
			pthread_mutex_lock(&ctrs[k].m);
			ctrs[k].v++;
			pthread_mutex_unlock(&ctrs[k].m);
			break;
		case MCS:
			mcs_lock(&ctrs[k], &me);
			ctrs[k].v++;
			mcs_unlock(&ctrs[k], &me);
			break;
		case ATOMIC:
			__atomic_fetch_add(&ctrs[k].v, 1, __ATOMIC_SEQ_CST);
			break;
		}
		n++;
	}
	if (a->method == DELEG) {
		if (odsm_deleg_drain(dg))
			die("drain", -EIO);
		odsm_deleg_thread_done(dg);
	}
	a->ops = n;
	return NULL;
}

/* One timed run: operations per second, checked against the counters. */
static double once(int method, int ncounters, int threads, int ms)
{
	struct arg a[64];
	pthread_t th[64];
	uint64_t total = 0, sum = 0, v;
	double t0, t1;
	size_t l;
	int i;

	for (i = 0; i < MAXC; i++)
		ctrs[i].v = 0;
	go = 0;
	stop = 0;
	for (i = 0; i < threads; i++) {
		a[i] = (struct arg){ .method = method, .ncounters = ncounters,
				     .id = i };
		pthread_create(&th[i], NULL, run, &a[i]);
	}
	t0 = now_us();
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	usleep(ms * 1000);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		total += a[i].ops;
	}
	t1 = now_us();
	/* every increment landed exactly once, whichever way it went */
	for (i = 0; i < ncounters; i++) {
		v = ctrs[i].v;
		if (method == DELEG) {
			l = sizeof(v);
			if (odsm_deleg_apply(&trusts[i], odsm_deleg_op_id("get"),
					     NULL, 0, &v, &l))
				die("get", -EIO);
		}
		sum += v;
	}
	if (sum != total)
		errx(1, "%s: %llu increments counted, %llu made", names[method],
		     (unsigned long long)sum, (unsigned long long)total);
	return total / ((t1 - t0) / 1e6);
}

static int op_get(void *obj, const void *arg, size_t len, void *ret,
		  size_t *rl)
{
	memcpy(ret, obj, 8);
	*rl = 8;
	return 0;
}

int main(int argc, char **argv)
{
	int ms = arg_num(argc, argv, 1, 100), reps = arg_num(argc, argv, 2, REPS);
	int maxt = arg_num(argc, argv, 3, 8);
	static const int counts[] = { 1, 4, 16 };
	struct odsm_deleg_config c = { .trustees = 1, .clients = 64 };
	struct odsm_deleg_arena ar;
	double r[REPS * 4], med[NMETHODS], last_ratio = 0;
	size_t sz = odsm_deleg_arena_size(&c) + MAXC * 64;
	uint64_t *objs;
	void *base;
	int m, ci, t, i, ret;

	if (reps > REPS * 4)
		reps = REPS * 4;
	if (odsm_deleg_register("inc", op_inc, &OP_INC) ||
	    odsm_deleg_register("get", op_get, NULL))
		die("register", -EEXIST);
	base = mmap(NULL, sz, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		die("mmap", -errno);
	odsm_deleg_arena_mem(&ar, base, sz);
	ret = odsm_deleg_start(&ar, &c, &dg);
	if (ret)
		die("odsm_deleg_start", ret);
	objs = (uint64_t *)((char *)base + odsm_deleg_arena_size(&c));
	for (i = 0; i < MAXC; i++) {
		odsm_box b = { .g = (uintptr_t)&objs[i * 8] };

		pthread_mutex_init(&ctrs[i].m, NULL);
		ret = odsm_deleg_entrust(dg, 0, &b, 0, &trusts[i]);
		if (ret)
			die("entrust", ret);
	}
	/* entrusted objects start at 0: drop the entrusting thread's slot */
	odsm_deleg_thread_done(dg);
	row("deleg_local host-native cpus=%ld ms=%d reps=%d trustees=1 (ops/s, median)",
	    sysconf(_SC_NPROCESSORS_ONLN), ms, reps);
	for (ci = 0; ci < 3; ci++) {
		for (t = 1; t <= maxt; t *= 2) {
			for (m = 0; m < NMETHODS; m++) {
				for (i = 0; i < reps; i++) {
					if (m == DELEG) {
						int k;

						/* the counters start at 0 */
						for (k = 0; k < MAXC; k++)
							objs[k * 8] = 0;
					}
					r[i] = once(m, counts[ci], t, ms);
				}
				stats(r, reps, &med[m], NULL);
			}
			row("deleg_local counters=%d threads=%d deleg=%.0f mutex=%.0f mcs=%.0f atomic=%.0f deleg_vs_mcs=%.2f",
			    counts[ci], t, med[DELEG], med[MUTEX], med[MCS],
			    med[ATOMIC], med[DELEG] / med[MCS]);
			if (ci == 0)
				last_ratio = med[DELEG] / med[MCS];
		}
	}
	odsm_deleg_stop(dg);
	row("deleg_local_vs_mcs ratio=%.2f", last_ratio);
	return 0;
}
