// SPDX-License-Identifier: GPL-2.0
/*
 * Host test of libodsm's delegation runtime (userlib/odsm_deleg*.c) in an
 * arena of shared memory, no module: exact results from many threads on
 * several trustees, apply_then order, the flush rules, launch with nested
 * applies, every refusal with its counter, forged batches the trustee
 * survives, a trustee process killed (clients fail fast) and a client
 * process killed (the others are served).
 */
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "odsm.h"
#include "odsm_deleg_int.h"
/* libodsm's ioctls answered by the fake (this test makes none) */
#include "fake_odsm.h"

#include "ksft_host.h"

#define OBJ_AREA	(4U << 20)

/* ---- the operations ----------------------------------------------------- */

static uint64_t OP_INC, OP_GET, OP_PUT, OP_LOOKUP, OP_APPEND, OP_SUM,
		OP_NESTED, OP_REENTER, OP_DTOR, OP_SLOW;
static int dtor_runs;

static int op_inc(void *obj, const void *arg, size_t len, void *ret,
		  size_t *rl)
{
	uint64_t *c = obj, add = 1;

	if (len == sizeof(add))
		memcpy(&add, arg, sizeof(add));
	if (*rl >= sizeof(*c)) {
		memcpy(ret, c, sizeof(*c));
		*rl = sizeof(*c);
	} else {
		*rl = 0;
	}
	*c += add;
	return 0;
}

static int op_get(void *obj, const void *arg, size_t len, void *ret,
		  size_t *rl)
{
	if (*rl < 8)
		return -EINVAL;
	memcpy(ret, obj, 8);
	*rl = 8;
	return 0;
}

#define MAP_N	4096
struct map {
	uint64_t k[MAP_N], v[MAP_N];
};

static int op_put(void *obj, const void *arg, size_t len, void *ret,
		  size_t *rl)
{
	struct map *m = obj;
	uint64_t kv[2];
	unsigned int i, n;

	memcpy(kv, arg, sizeof(kv));
	*rl = 0;
	for (n = 0, i = kv[0] % MAP_N; n < MAP_N; n++, i = (i + 1) % MAP_N) {
		if (!m->k[i] || m->k[i] == kv[0]) {
			m->k[i] = kv[0];
			m->v[i] = kv[1];
			return 0;
		}
	}
	return -ENOSPC;
}

static int op_lookup(void *obj, const void *arg, size_t len, void *ret,
		     size_t *rl)
{
	struct map *m = obj;
	unsigned int i, n;
	uint64_t k;

	memcpy(&k, arg, sizeof(k));
	for (n = 0, i = k % MAP_N; n < MAP_N && m->k[i]; n++, i = (i + 1) % MAP_N) {
		if (m->k[i] == k) {
			memcpy(ret, &m->v[i], 8);
			*rl = 8;
			return 0;
		}
	}
	*rl = 0;
	return -ENOENT;
}

struct log {
	uint64_t n, v[8192];
};

static int op_append(void *obj, const void *arg, size_t len, void *ret,
		     size_t *rl)
{
	struct log *l = obj;

	memcpy(&l->v[l->n], arg, 8);
	memcpy(ret, &l->n, 8);
	*rl = 8;
	l->n++;
	return 0;
}

static int op_sum(void *obj, const void *arg, size_t len, void *ret,
		  size_t *rl)
{
	const uint8_t *p = arg;
	uint64_t s = 0;
	size_t i;

	for (i = 0; i < len; i++)
		s += p[i];
	memcpy(ret, &s, 8);
	*rl = 8;
	return 0;
}

/* launched: obj is the handle; add 1 to the other trust, then to ours */
static int op_nested(void *obj, const void *arg, size_t len, void *ret,
		     size_t *rl)
{
	const odsm_trust *self = obj;
	odsm_trust other;
	uint64_t a = 0, b = 0;
	size_t la = 8, lb = 8;
	int r;

	memcpy(&other, arg, sizeof(other));
	r = odsm_deleg_apply(&other, OP_INC, NULL, 0, &a, &la);
	if (r)
		return r;
	r = odsm_deleg_apply(self, OP_INC, NULL, 0, &b, &lb);
	if (r)
		return r;
	a += b;
	memcpy(ret, &a, 8);
	*rl = 8;
	return 0;
}

/* on a trustee: applying from here must be refused, not deadlock */
static int op_reenter(void *obj, const void *arg, size_t len, void *ret,
		      size_t *rl)
{
	odsm_trust t;

	memcpy(&t, arg, sizeof(t));
	*rl = 0;
	return odsm_deleg_apply(&t, OP_INC, NULL, 0, NULL, NULL);
}

static int op_dtor(void *obj, const void *arg, size_t len, void *ret,
		   size_t *rl)
{
	__atomic_fetch_add(&dtor_runs, 1, __ATOMIC_SEQ_CST);
	return 0;
}

/* test only: holds the trustee for arg milliseconds */
static int op_slow(void *obj, const void *arg, size_t len, void *ret,
		   size_t *rl)
{
	uint64_t ms;

	memcpy(&ms, arg, 8);
	usleep(ms * 1000);
	*rl = 0;
	return 0;
}

static void register_ops(void)
{
	if (odsm_deleg_register("inc", op_inc, &OP_INC) ||
	    odsm_deleg_register("get", op_get, &OP_GET) ||
	    odsm_deleg_register("put", op_put, &OP_PUT) ||
	    odsm_deleg_register("lookup", op_lookup, &OP_LOOKUP) ||
	    odsm_deleg_register("append", op_append, &OP_APPEND) ||
	    odsm_deleg_register("sum", op_sum, &OP_SUM) ||
	    odsm_deleg_register("nested", op_nested, &OP_NESTED) ||
	    odsm_deleg_register("reenter", op_reenter, &OP_REENTER) ||
	    odsm_deleg_register("dtor", op_dtor, &OP_DTOR) ||
	    odsm_deleg_register("slow", op_slow, &OP_SLOW))
		abort();
}

/* ---- an arena and objects in shared memory -------------------------------- */

struct env {
	struct odsm_deleg_arena a;
	struct odsm_deleg *d;
	uint8_t *objs;		/* bump allocator after the runtime */
	size_t used, room;
};

static int env_map(struct env *e, const struct odsm_deleg_config *c)
{
	size_t rt = odsm_deleg_arena_size(c), sz;
	void *p;

	if (!rt)
		return -EINVAL;
	rt = (rt + 4095) & ~(size_t)4095;
	sz = rt + OBJ_AREA;
	/* shared: a forked process sees it at the same address */
	p = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	odsm_deleg_arena_mem(&e->a, p, sz);
	e->objs = (uint8_t *)p + rt;
	e->used = 0;
	e->room = OBJ_AREA;
	return 0;
}

static int env_start(struct env *e, const struct odsm_deleg_config *c)
{
	int ret = env_map(e, c);

	register_ops();
	return ret ? ret : odsm_deleg_start(&e->a, c, &e->d);
}

static void *env_obj(struct env *e, size_t size)
{
	void *p = e->objs + e->used;

	e->used += (size + 63) & ~(size_t)63;
	if (e->used > e->room)
		abort();
	memset(p, 0, size);
	return p;
}

static int entrust(struct env *e, unsigned int t, void *obj, uint64_t dtor,
		   odsm_trust *h)
{
	odsm_box b = { .g = (uintptr_t)obj };

	return odsm_deleg_entrust(e->d, t, &b, dtor, h);
}

static uint64_t get(const odsm_trust *t)
{
	uint64_t v = ~0ULL;
	size_t l = 8;

	if (odsm_deleg_apply(t, OP_GET, NULL, 0, &v, &l))
		return ~0ULL;
	return v;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- exact results under contention ------------------------------------ */

#define THREADS	4
#define OPS	20000
#define NCTR	16
#define KEYS	300

struct worker {
	struct env *e;
	odsm_trust *ctr, map;
	int id;
	uint64_t mine[NCTR];
	int err;
};

static void *worker(void *arg)
{
	struct worker *w = arg;
	uint64_t kv[2];
	unsigned int i, k;
	int r;

	for (i = 0; i < OPS; i++) {
		k = (i * 7 + w->id * 3) % NCTR;
		if (i % 2)
			r = odsm_deleg_apply(&w->ctr[k], OP_INC, NULL, 0,
					     NULL, NULL);
		else
			r = odsm_deleg_apply_then(&w->ctr[k], OP_INC, NULL, 0,
						  NULL, 0, NULL, NULL, NULL, 0);
		if (r && !w->err)
			w->err = r;
		w->mine[k]++;
	}
	for (i = 0; i < KEYS; i++) {
		kv[0] = 1 + w->id * 100000 + i;
		kv[1] = kv[0] * 3;
		r = odsm_deleg_apply_then(&w->map, OP_PUT, kv, sizeof(kv),
					  NULL, 0, NULL, NULL, NULL, 0);
		if (r && !w->err)
			w->err = r;
	}
	r = odsm_deleg_drain(w->e->d);
	if (r && !w->err)
		w->err = r;
	odsm_deleg_thread_done(w->e->d);
	return NULL;
}

TEST(counters_and_map_exact)
{
	struct odsm_deleg_config c = { .trustees = 2, .clients = 8 };
	struct worker w[THREADS];
	pthread_t th[THREADS];
	odsm_trust ctr[NCTR], map;
	struct odsm_deleg_stats st;
	struct env e;
	uint64_t want, v, kv;
	size_t l;
	int i, k;

	ASSERT_EQ(0, env_start(&e, &c));
	for (k = 0; k < NCTR; k++)
		ASSERT_EQ(0, entrust(&e, k % 2, env_obj(&e, 8), 0, &ctr[k]));
	ASSERT_EQ(0, entrust(&e, 1, env_obj(&e, sizeof(struct map)), 0, &map));
	for (i = 0; i < THREADS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].e = &e;
		w[i].ctr = ctr;
		w[i].map = map;
		w[i].id = i;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, worker, &w[i]));
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, w[i].err);
	}
	for (k = 0; k < NCTR; k++) {
		want = 0;
		for (i = 0; i < THREADS; i++)
			want += w[i].mine[k];
		EXPECT_EQ(want, get(&ctr[k]));
	}
	for (i = 0; i < THREADS; i++) {
		for (k = 0; k < KEYS; k++) {
			kv = 1 + i * 100000 + k;
			l = 8;
			v = 0;
			ASSERT_EQ(0, odsm_deleg_apply(&map, OP_LOOKUP, &kv, 8,
						      &v, &l));
			ASSERT_EQ(kv * 3, v);
		}
	}
	odsm_deleg_stats(e.d, &st);
	/* batching happened: fewer batches than requests */
	EXPECT_LT(st.batches, st.requests);
	EXPECT_EQ(0U, st.malformed + st.stale + st.unknown_op);
	odsm_deleg_stop(e.d);
}

/* ---- apply_then order, flush rules ---------------------------------------- */

static uint64_t order_seen[4000];
static int order_n;

static void order_cb(void *cookie, int status, const void *ret, size_t len)
{
	uint64_t idx = ~0ULL;

	if (!status && len == 8)
		memcpy(&idx, ret, 8);
	order_seen[order_n++] = (uint64_t)(uintptr_t)cookie << 32 | idx;
}

TEST(apply_then_completes_in_issue_order)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 2,
				       .slot_size = 512 };
	struct log *lg;
	odsm_trust t;
	struct env e;
	uint64_t i, n = 3000;

	ASSERT_EQ(0, env_start(&e, &c));
	lg = env_obj(&e, sizeof(*lg));
	ASSERT_EQ(0, entrust(&e, 0, lg, 0, &t));
	order_n = 0;
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, odsm_deleg_apply_then(&t, OP_APPEND, &i, 8, NULL,
						   8, order_cb,
						   (void *)(uintptr_t)i, NULL,
						   0));
		if (i % 97 == 0)
			ASSERT_LE(0, odsm_deleg_poll(e.d));
	}
	ASSERT_EQ(0, odsm_deleg_drain(e.d));
	ASSERT_EQ((int)n, order_n);
	for (i = 0; i < n; i++) {
		/* completion i is request i, which the trustee ran i-th */
		ASSERT_EQ(i << 32 | i, order_seen[i]);
		ASSERT_EQ(i, lg->v[i]);
	}
	odsm_deleg_stop(e.d);
}

TEST(flush_rules)
{
	/* 256-byte slots: 7 requests of no argument fill one batch */
	struct odsm_deleg_config c = { .trustees = 1, .clients = 2,
				       .slot_size = 256, .spin = 1000000 };
	struct odsm_deleg_completion done[9];
	struct odsm_deleg_stats s0, s1;
	uint64_t *ctr;
	odsm_trust t;
	struct env e;
	int i;

	ASSERT_EQ(7U, odsm_dslot_max_count(256));
	ASSERT_EQ(0, env_start(&e, &c));
	ctr = env_obj(&e, 8);
	ASSERT_EQ(0, entrust(&e, 0, ctr, 0, &t));
	odsm_deleg_stats(e.d, &s0);

	/* queued, not sent: nothing runs until a flush */
	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, odsm_deleg_apply_then(&t, OP_INC, NULL, 0, NULL, 0,
						   NULL, NULL, &done[i], 0));
	usleep(20000);
	odsm_deleg_stats(e.d, &s1);
	EXPECT_EQ(s0.sent, s1.sent);
	EXPECT_EQ(0U, __atomic_load_n(ctr, __ATOMIC_SEQ_CST));
	EXPECT_EQ(0, done[0].done);
	ASSERT_EQ(0, odsm_deleg_flush(e.d));
	ASSERT_EQ(0, odsm_deleg_drain(e.d));
	EXPECT_EQ(5U, *ctr);
	for (i = 0; i < 5; i++)
		EXPECT_EQ(1, done[i].done);
	odsm_deleg_stats(e.d, &s0);
	EXPECT_EQ(s1.sent + 1, s0.sent);

	/* by size: the 8th request sends the full batch of 7 */
	for (i = 0; i < 7; i++)
		ASSERT_EQ(0, odsm_deleg_apply_then(&t, OP_INC, NULL, 0, NULL, 0,
						   NULL, NULL, NULL, 0));
	odsm_deleg_stats(e.d, &s1);
	EXPECT_EQ(s0.sent, s1.sent);
	ASSERT_EQ(0, odsm_deleg_apply_then(&t, OP_INC, NULL, 0, NULL, 0,
					   NULL, NULL, NULL, 0));
	odsm_deleg_stats(e.d, &s1);
	EXPECT_EQ(s0.sent + 1, s1.sent);

	/* before waiting: apply sends the queued one in its own batch */
	EXPECT_EQ(13U, get(&t));
	odsm_deleg_stats(e.d, &s0);
	EXPECT_EQ(s1.sent + 1, s0.sent);
	EXPECT_EQ(s0.batches, s0.sent);
	odsm_deleg_stop(e.d);
}

/* ---- launch, and apply from inside a trustee ------------------------------- */

TEST(launch_applies_to_other_trustees_and_its_own)
{
	struct odsm_deleg_config c = { .trustees = 2, .clients = 4 };
	struct odsm_deleg_stats st;
	odsm_trust a, b;
	struct env e;
	uint64_t r = 0;
	size_t l = 8;

	ASSERT_EQ(0, env_start(&e, &c));
	ASSERT_EQ(0, entrust(&e, 0, env_obj(&e, 8), 0, &a));
	ASSERT_EQ(0, entrust(&e, 1, env_obj(&e, 8), 0, &b));
	ASSERT_EQ(0, odsm_deleg_apply(&b, OP_INC, NULL, 0, NULL, NULL));
	ASSERT_EQ(0, odsm_deleg_launch(&a, OP_NESTED, &b, sizeof(b), &r, &l));
	EXPECT_EQ(8U, l);
	EXPECT_EQ(1U, r);		/* b was 1, a was 0 */
	EXPECT_EQ(1U, get(&a));
	EXPECT_EQ(2U, get(&b));

	/* the same op applied (on the trustee) cannot apply: -EDEADLK */
	EXPECT_EQ(-EDEADLK, odsm_deleg_apply(&a, OP_REENTER, &b, sizeof(b),
					     NULL, NULL));
	EXPECT_EQ(2U, get(&b));
	odsm_deleg_stats(e.d, &st);
	EXPECT_EQ(1U, st.deadlk);
	EXPECT_EQ(1U, st.launches);
	odsm_deleg_stop(e.d);
}

/* ---- refusals ------------------------------------------------------------ */

TEST(unknown_op_and_too_long)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 2 };
	struct odsm_deleg_completion cp;
	struct odsm_deleg_stats st;
	static uint8_t big[2048];
	odsm_trust t;
	struct env e;
	size_t l = 2048;

	ASSERT_EQ(0, env_start(&e, &c));
	ASSERT_EQ(0, entrust(&e, 0, env_obj(&e, 8), 0, &t));
	EXPECT_EQ(-EBADRQC, odsm_deleg_apply(&t, odsm_deleg_op_id("nope"),
					     NULL, 0, NULL, NULL));
	ASSERT_EQ(0, odsm_deleg_apply_then(&t, odsm_deleg_op_id("nope2"), NULL,
					   0, NULL, 0, NULL, NULL, &cp, 0));
	ASSERT_EQ(0, odsm_deleg_drain(e.d));
	EXPECT_EQ(-EBADRQC, cp.status);
	/* an argument, and a result room, longer than a 1 KiB slot carries */
	EXPECT_EQ(-E2BIG, odsm_deleg_apply(&t, OP_INC, big, sizeof(big), NULL,
					   NULL));
	EXPECT_EQ(-E2BIG, odsm_deleg_apply(&t, OP_GET, NULL, 0, big, &l));
	/* and nothing ran meanwhile */
	EXPECT_EQ(0U, get(&t));
	odsm_deleg_stats(e.d, &st);
	EXPECT_EQ(2U, st.unknown_op);
	EXPECT_EQ(2U, st.too_long);
	odsm_deleg_stop(e.d);
}

TEST(nowait_on_a_full_slot)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 2,
				       .slot_size = 256 };
	struct odsm_deleg_stats st;
	uint64_t ms = 100;
	odsm_trust t;
	struct env e;
	int i;

	ASSERT_EQ(0, env_start(&e, &c));
	ASSERT_EQ(0, entrust(&e, 0, env_obj(&e, 8), 0, &t));
	ASSERT_EQ(0, odsm_deleg_apply_then(&t, OP_SLOW, &ms, 8, NULL, 0, NULL,
					   NULL, NULL, 0));
	ASSERT_EQ(0, odsm_deleg_flush(e.d));
	for (i = 0; i < 7; i++)
		ASSERT_EQ(0, odsm_deleg_apply_then(&t, OP_INC, NULL, 0, NULL, 0,
						   NULL, NULL, NULL,
						   ODSM_DELEG_NOWAIT));
	EXPECT_EQ(-EAGAIN, odsm_deleg_apply_then(&t, OP_INC, NULL, 0, NULL, 0,
						 NULL, NULL, NULL,
						 ODSM_DELEG_NOWAIT));
	/* waiting is allowed without the flag */
	ASSERT_EQ(0, odsm_deleg_apply_then(&t, OP_INC, NULL, 0, NULL, 0, NULL,
					   NULL, NULL, 0));
	ASSERT_EQ(0, odsm_deleg_drain(e.d));
	EXPECT_EQ(8U, get(&t));
	odsm_deleg_stats(e.d, &st);
	EXPECT_EQ(1U, st.slot_full);
	odsm_deleg_stop(e.d);
}

TEST(references_free_once_and_stale_handles)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 2,
				       .cells = 2 };
	struct odsm_deleg_stats st;
	odsm_trust t, t2, t3, old, x, y;
	struct env e;

	ASSERT_EQ(0, env_start(&e, &c));
	dtor_runs = 0;
	ASSERT_EQ(0, entrust(&e, 0, env_obj(&e, 8), OP_DTOR, &t));
	ASSERT_EQ(0, odsm_trust_clone(&t, &t2));
	ASSERT_EQ(0, odsm_trust_clone(&t2, &t3));
	old = t;
	ASSERT_EQ(0, odsm_deleg_apply(&t3, OP_INC, NULL, 0, NULL, NULL));
	ASSERT_EQ(0, odsm_trust_drop(&t));
	ASSERT_EQ(0, odsm_trust_drop(&t2));
	EXPECT_EQ(0, dtor_runs);
	EXPECT_EQ(1U, get(&t3));
	ASSERT_EQ(0, odsm_trust_drop(&t3));
	EXPECT_EQ(1, dtor_runs);
	/* every copy of the handle is now stale, and stays so */
	EXPECT_EQ(-ESTALE, odsm_deleg_apply(&old, OP_INC, NULL, 0, NULL, NULL));
	EXPECT_EQ(-ESTALE, odsm_trust_clone(&old, &x));
	EXPECT_EQ(-ESTALE, odsm_trust_drop(&old));
	/* the cell is reused under a new generation */
	ASSERT_EQ(0, entrust(&e, 0, env_obj(&e, 8), 0, &x));
	ASSERT_EQ(0, entrust(&e, 0, env_obj(&e, 8), 0, &y));
	EXPECT_EQ(-ESTALE, odsm_deleg_apply(&old, OP_INC, NULL, 0, NULL, NULL));
	/* two cells: a third entrust is refused */
	EXPECT_EQ(-ENOSPC, entrust(&e, 0, env_obj(&e, 8), 0, &t));
	odsm_deleg_stats(e.d, &st);
	EXPECT_EQ(2U, st.stale);
	EXPECT_EQ(1U, st.no_cell);
	odsm_deleg_stop(e.d);
}

TEST(apply_with_reads_the_argument_in_place)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 2 };
	struct odsm_deleg_stats st;
	uint8_t *buf, outside[64];
	uint64_t want = 0, s = 0;
	odsm_trust t;
	struct env e;
	size_t l = 8;
	int i;

	ASSERT_EQ(0, env_start(&e, &c));
	ASSERT_EQ(0, entrust(&e, 0, env_obj(&e, 8), 0, &t));
	buf = env_obj(&e, 100000);	/* far bigger than a slot */
	for (i = 0; i < 100000; i++) {
		buf[i] = (uint8_t)(i * 31);
		want += buf[i];
	}
	ASSERT_EQ(0, odsm_deleg_apply_with(&t, OP_SUM, (uintptr_t)buf, 100000,
					   &s, &l));
	EXPECT_EQ(want, s);
	/* not in the arena: not readable by the trustee's node */
	memset(outside, 1, sizeof(outside));
	EXPECT_EQ(-EFAULT, odsm_deleg_apply_with(&t, OP_SUM,
						 (uintptr_t)outside, 64, &s,
						 &l));
	EXPECT_EQ(-EFAULT, odsm_deleg_apply_with(&t, OP_SUM, (uintptr_t)buf,
						 ~0ULL / 2, &s, &l));
	odsm_deleg_stats(e.d, &st);
	EXPECT_EQ(2U, st.bad_arg);
	odsm_deleg_stop(e.d);
}

/* ---- forged batches --------------------------------------------------------- */

/* Take a client slot by hand, as a process that skips the library would. */
static unsigned int forge_claim(struct odsm_deleg *d)
{
	unsigned int c;
	uint64_t z = 0;

	for (c = 0; c < d->h->clients; c++)
		if (__atomic_compare_exchange_n(&dg_client(d, c)->owner, &z,
						(uint64_t)getpid() << 32 |
						(uint32_t)syscall(SYS_gettid),
						false, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			break;
	if (d->h->clients_hi < c + 1)
		__atomic_store_n(&d->h->clients_hi, c + 1, __ATOMIC_SEQ_CST);
	return c;
}

/* Publish whatever the request slot holds; the response's status. */
static int forge_send(struct odsm_deleg *d, unsigned int c)
{
	struct odsm_dslot_hdr *q = (void *)dg_req_slot(d, 0, c);
	struct odsm_dslot_hdr *r = (void *)dg_resp_slot(d, 0, c);
	uint32_t seq = r->seq + 1;
	double t0 = now_ms();

	__atomic_store_n(&q->seq, seq, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&dg_trustee(d, 0)->wake, 1, __ATOMIC_SEQ_CST);
	dg_futex_wake(&dg_trustee(d, 0)->wake, 1);
	while (__atomic_load_n(&r->seq, __ATOMIC_ACQUIRE) != seq)
		if (now_ms() - t0 > 5000)
			return 1;	/* never answered */
	return r->status;
}

TEST(forged_batches_are_dropped_and_the_trustee_serves_on)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 4 };
	struct odsm_deleg_stats st;
	struct odsm_dslot_hdr *h;
	struct odsm_dresp rsp;
	struct odsm_dreq *r;
	unsigned int fc, i;
	uint64_t x = 88172645463325252ULL;
	uint8_t *slot;
	odsm_trust t;
	struct env e;

	ASSERT_EQ(0, env_start(&e, &c));
	ASSERT_EQ(0, entrust(&e, 0, env_obj(&e, 8), 0, &t));
	ASSERT_EQ(0, odsm_deleg_apply(&t, OP_INC, NULL, 0, NULL, NULL));
	fc = forge_claim(e.d);
	slot = dg_req_slot(e.d, 0, fc);
	h = (void *)slot;
	r = (void *)(slot + ODSM_DSLOT_HDR);

	/* random bytes, 50 times */
	for (i = 0; i < 50; i++) {
		unsigned int k;

		for (k = 4; k < 1024; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			slot[k] = (uint8_t)x;
		}
		h->count = 1 + i % 5;	/* some say they carry requests */
		ASSERT_EQ(-EBADMSG, forge_send(e.d, fc));
	}
	/* a record past the slot */
	memset(slot + 4, 0, 1020);
	h->count = 1;
	h->len = 32;
	r->kind = ODSM_DREQ_APPLY;
	r->op = OP_INC;
	r->arg_len = 4096;
	ASSERT_EQ(-EBADMSG, forge_send(e.d, fc));
	/* well-formed, but naming a cell of another generation: -ESTALE */
	r->arg_len = 0;
	r->obj = t.cell | (uint64_t)(t.gen + 5) << 32;
	ASSERT_EQ(0, forge_send(e.d, fc));
	memcpy(&rsp, dg_resp_slot(e.d, 0, fc) + ODSM_DSLOT_HDR, sizeof(rsp));
	EXPECT_EQ(-ESTALE, rsp.status);
	/* a cell out of range, and a launch that does not end its batch */
	r->obj = 0xffffffffULL | (uint64_t)t.gen << 32;
	ASSERT_EQ(0, forge_send(e.d, fc));
	memcpy(&rsp, dg_resp_slot(e.d, 0, fc) + ODSM_DSLOT_HDR, sizeof(rsp));
	EXPECT_EQ(-ESTALE, rsp.status);
	memcpy((uint8_t *)r + 32, r, 32);
	r->kind = ODSM_DREQ_LAUNCH;
	r->obj = t.cell | (uint64_t)t.gen << 32;
	h->count = 2;
	h->len = 64;
	ASSERT_EQ(0, forge_send(e.d, fc));
	memcpy(&rsp, dg_resp_slot(e.d, 0, fc) + ODSM_DSLOT_HDR, sizeof(rsp));
	EXPECT_EQ(-EINVAL, rsp.status);

	/* the trustee still serves everyone, the counter ran only twice */
	EXPECT_EQ(1U, get(&t));
	EXPECT_EQ(0, odsm_deleg_apply(&t, OP_INC, NULL, 0, NULL, NULL));
	EXPECT_EQ(2U, get(&t));
	odsm_deleg_stats(e.d, &st);
	EXPECT_EQ(51U, st.malformed);
	/* the last batch's second record named the out-of-range cell too */
	EXPECT_EQ(3U, st.stale);
	odsm_deleg_stop(e.d);
}

/* ---- the heap arena (libodsm over the fake /dev/odsm) ---------------------- */

/*
 * A FREE of a cell that is free already (never entrusted, or freed: its
 * word says generation gen, count 0) is refused -ESTALE.  It was
 * accepted: the cell went onto the trustee's free stack twice, two later
 * entrusts got the same cell and generation, and with every cell free the
 * push overflowed the stack (ASan: heap-buffer-overflow).
 */
TEST(forged_free_of_a_free_cell)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 4,
				       .cells = 4 };
	struct odsm_dslot_hdr *h;
	struct odsm_dreq *r;
	odsm_trust a, b;
	unsigned int fc, i;
	struct env e;
	uint8_t *slot;

	ASSERT_EQ(0, env_start(&e, &c));
	ASSERT_EQ(0, entrust(&e, 0, env_obj(&e, 8), 0, &a));
	fc = forge_claim(e.d);
	slot = dg_req_slot(e.d, 0, fc);
	h = (void *)slot;
	r = (void *)(slot + ODSM_DSLOT_HDR);
	for (i = 0; i < 3; i++) {
		memset(slot + 4, 0, 60);
		h->count = 1;
		h->len = 32;
		r->kind = ODSM_DREQ_FREE;
		/* cells 1..3: never entrusted, a's generation, count 0 */
		r->obj = (1 + i) | ((uint64_t)a.gen << 32);
		ASSERT_EQ(0, forge_send(e.d, fc));
		EXPECT_EQ(-ESTALE, ((struct odsm_dresp *)
				    (dg_resp_slot(e.d, 0, fc) +
				     ODSM_DSLOT_HDR))->status);
	}
	/* the free cells are each still one cell */
	ASSERT_EQ(0, entrust(&e, 0, env_obj(&e, 8), 0, &a));
	ASSERT_EQ(0, entrust(&e, 0, env_obj(&e, 8), 0, &b));
	EXPECT_NE(a.cell, b.cell);
	odsm_deleg_stop(e.d);
}

/*
 * A handle kept across a restart of the runtime in the same arena: it
 * names a cell of the new runtime.  With every runtime starting its
 * cells at generation 1 it reached the object entrusted there now.
 */
TEST(handle_of_an_earlier_runtime_is_stale)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 4 };
	odsm_trust old, now;
	uint64_t *a, *b;
	struct env e;

	ASSERT_EQ(0, env_start(&e, &c));
	a = env_obj(&e, 8);
	b = env_obj(&e, 8);
	ASSERT_EQ(0, entrust(&e, 0, a, 0, &old));
	ASSERT_EQ(0, odsm_deleg_apply(&old, OP_INC, NULL, 0, NULL, NULL));
	odsm_deleg_stop(e.d);
	ASSERT_EQ(0, odsm_deleg_start(&e.a, &c, &e.d));
	ASSERT_EQ(0, entrust(&e, 0, b, 0, &now));
	ASSERT_EQ(old.cell, now.cell);
	EXPECT_NE(old.gen, now.gen);
	EXPECT_EQ(-ESTALE, odsm_deleg_apply(&old, OP_INC, NULL, 0, NULL,
					    NULL));
	EXPECT_EQ(0ULL, *b);
	EXPECT_EQ(0, odsm_deleg_apply(&now, OP_INC, NULL, 0, NULL, NULL));
	EXPECT_EQ(1ULL, *b);
	EXPECT_EQ(1ULL, *a);
	odsm_deleg_stop(e.d);
}

/* ---- callbacks that call ----------------------------------------------- */

static odsm_trust g_t;
static int g_cb_ret = 1;

static __attribute__((noinline)) int apply_in_frame(void)
{
	uint64_t buf[4] = { 0 };
	size_t l = sizeof(buf);

	return odsm_deleg_apply(&g_t, OP_INC, NULL, 0, buf, &l);
}

static void cb_apply(void *cookie, int st, const void *ret, size_t len)
{
	g_cb_ret = apply_in_frame();
}

/*
 * A synchronous apply from an apply_then callback of a batch to the same
 * trustee is refused -EDEADLK, and nothing is sent.  It was sent anyway:
 * the "refused" increment ran, and its answer was later written into the
 * apply's stack frame, gone by then (ASan: stack-use-after-return).
 */
TEST(apply_from_callback_refused_not_sent)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 4 };
	struct odsm_deleg_completion cp;
	struct env e;
	uint64_t *ctr;

	ASSERT_EQ(0, env_start(&e, &c));
	ctr = env_obj(&e, 8);
	ASSERT_EQ(0, entrust(&e, 0, ctr, 0, &g_t));
	ASSERT_EQ(0, odsm_deleg_apply_then(&g_t, OP_INC, NULL, 0, NULL, 0,
					   cb_apply, NULL, &cp, 0));
	ASSERT_EQ(0, odsm_deleg_flush(e.d));
	while (!cp.done)
		odsm_deleg_poll(e.d);
	EXPECT_EQ(-EDEADLK, g_cb_ret);
	odsm_deleg_drain(e.d);
	EXPECT_EQ(1ULL, *ctr);
	odsm_deleg_stop(e.d);
}

static int n_issued, n_done, n_err;

static void cb_leaf(void *cookie, int st, const void *ret, size_t len)
{
	n_done++;
	n_err += st != 0;
}

static void cb_chain(void *cookie, int st, const void *ret, size_t len)
{
	cb_leaf(cookie, st, ret, len);
	if (!odsm_deleg_apply_then(&g_t, OP_INC, NULL, 0, NULL, 0, cb_leaf,
				   NULL, NULL, 0))
		n_issued++;
}

/*
 * Callbacks that queue one more apply_then each, with the stage full
 * while a batch is in flight: the flush that waited for that batch finds
 * its callbacks sent one of their own, and waits for it too.  It sealed
 * and sent over it: requests lost, never completed (3001 issued, 2000
 * completed and run).
 */
TEST(callbacks_that_send_lose_nothing)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 4,
				       .slot_size = 256 };
	struct env e;
	uint64_t *ctr;
	int i;

	ASSERT_EQ(0, env_start(&e, &c));
	ctr = env_obj(&e, 8);
	ASSERT_EQ(0, entrust(&e, 0, ctr, 0, &g_t));
	for (i = 0; i < 2000; i++)
		if (!odsm_deleg_apply_then(&g_t, OP_INC, NULL, 0, NULL, 0,
					   cb_chain, NULL, NULL, 0))
			n_issued++;
	for (i = 0; i < 5; i++)
		odsm_deleg_drain(e.d);
	EXPECT_EQ(n_issued, n_done);
	EXPECT_EQ(0, n_err);
	EXPECT_EQ((uint64_t)n_issued, *ctr);
	odsm_deleg_stop(e.d);
}

/*
 * A launch sent while a batch with callbacks is in flight: its flush
 * waits for that batch, whose callback stages one more request behind
 * the launch.  The launch was then not the last of its batch, and the
 * trustee refused it (-EINVAL) although the caller did nothing wrong.
 */
TEST(launch_after_a_callback_stages)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 4 };
	struct odsm_deleg_stats st;
	struct env e;
	uint64_t *ctr, r = 0;
	size_t l = 8;

	ASSERT_EQ(0, env_start(&e, &c));
	ctr = env_obj(&e, 8);
	ASSERT_EQ(0, entrust(&e, 0, ctr, 0, &g_t));
	n_issued = n_done = n_err = 0;
	ASSERT_EQ(0, odsm_deleg_apply_then(&g_t, OP_INC, NULL, 0, NULL, 0,
					   cb_chain, NULL, NULL, 0));
	n_issued++;
	ASSERT_EQ(0, odsm_deleg_flush(e.d));
	/* the batch is in flight: the launch's flush runs cb_chain */
	EXPECT_EQ(0, odsm_deleg_launch(&g_t, OP_NESTED, &g_t, sizeof(g_t),
				       &r, &l));
	odsm_deleg_drain(e.d);
	EXPECT_EQ(2, n_issued);
	EXPECT_EQ(n_issued, n_done);
	EXPECT_EQ(0, n_err);
	EXPECT_EQ(4ULL, *ctr);	/* 1, the callback's 1, the launch's 2 */
	odsm_deleg_stats(e.d, &st);
	EXPECT_EQ(0U, st.bad_arg);
	odsm_deleg_stop(e.d);
}

/*
 * A chain of apply_then that goes on by itself: each callback issues the
 * next link (and with chain_sends sends it at once), up to CHAIN_MAX.
 */
#define CHAIN_MAX	3000
static struct odsm_deleg *g_d;
static bool chain_sends;

static void cb_forever(void *cookie, int st, const void *ret, size_t len)
{
	cb_leaf(cookie, st, ret, len);
	if (n_issued >= CHAIN_MAX)
		return;
	if (!odsm_deleg_apply_then(&g_t, OP_INC, NULL, 0, NULL, 0, cb_forever,
				   NULL, NULL, 0))
		n_issued++;
	if (chain_sends)
		odsm_deleg_flush(g_d);
}

/* Start the chain, sent; after the call under test, finish it. */
static void chain_start(struct env *e, bool sends)
{
	n_issued = n_done = n_err = 0;
	g_d = e->d;
	chain_sends = sends;
	if (!odsm_deleg_apply_then(&g_t, OP_INC, NULL, 0, NULL, 0, cb_forever,
				   NULL, NULL, 0))
		n_issued++;
	odsm_deleg_flush(e->d);
}

static void chain_finish(struct env *e)
{
	int i;

	for (i = 0; i < 2 * CHAIN_MAX && n_done < n_issued; i++)
		odsm_deleg_drain(e->d);
}

/*
 * A synchronous call while a chain of callbacks goes on must come back
 * after the first link or two, then the chain runs to its end.  launch:
 * a launch amid callbacks that only stage; else an apply amid callbacks
 * that send what they stage.
 */
static void call_amid_chain(struct __test_metadata *_metadata, bool launch)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 4 };
	struct odsm_deleg_stats st;
	uint64_t *ctr, r = 0;
	size_t l = 8;
	struct env e;
	int at, ret;

	ASSERT_EQ(0, env_start(&e, &c));
	ctr = env_obj(&e, 8);
	ASSERT_EQ(0, entrust(&e, 0, ctr, 0, &g_t));
	chain_start(&e, !launch);
	if (launch)
		ret = odsm_deleg_launch(&g_t, OP_NESTED, &g_t, sizeof(g_t), &r,
					&l);
	else
		ret = odsm_deleg_apply(&g_t, OP_INC, NULL, 0, &r, &l);
	EXPECT_EQ(0, ret);
	at = n_done;
	TH_LOG("%s back after %d links of %d", launch ? "launch" : "apply",
	       at, CHAIN_MAX);
	EXPECT_LE(at, 3);
	chain_finish(&e);
	EXPECT_EQ(CHAIN_MAX, n_issued);
	EXPECT_EQ(n_issued, n_done);
	EXPECT_EQ(0, n_err);
	/* a launched OP_NESTED adds 2 */
	EXPECT_EQ((uint64_t)CHAIN_MAX + (launch ? 2 : 1), *ctr);
	odsm_deleg_stats(e.d, &st);
	EXPECT_EQ(0U, st.bad_arg);
	EXPECT_EQ(launch ? 1U : 0U, st.launches);
	odsm_deleg_stop(e.d);
}

/*
 * A launch waited until nothing was in flight or staged, which the chain
 * never allowed: it came back only once the chain had run all its links.
 * It ends the next batch sent now.
 */
TEST(launch_not_starved_by_a_chain_of_callbacks)
{
	call_amid_chain(_metadata, true);
}

/*
 * An apply's flush waited for the batch in flight as long as there was
 * one, past its own answer, while callbacks kept sending.  It returns once
 * its request is answered.
 */
TEST(apply_not_held_by_callbacks_that_send)
{
	call_amid_chain(_metadata, false);
}

/*
 * Links of 300 bytes in a slot of 512 (each fills its batch) and a launch
 * of 300 bytes: with no batch that had room left for the launch, every
 * one went out without it until the chain ended.  A batch now keeps room
 * for a launch set aside, so the link that would take it waits for the
 * next batch.
 */
#define BIG_ARG		300
static uint8_t big_arg[BIG_ARG];
static uint64_t big_ret;

static void cb_big(void *cookie, int st, const void *ret, size_t len)
{
	cb_leaf(cookie, st, ret, len);
	if (n_issued < CHAIN_MAX &&
	    !odsm_deleg_apply_then(&g_t, OP_SUM, big_arg, BIG_ARG, &big_ret,
				   8, cb_big, NULL, NULL, 0))
		n_issued++;
}

TEST(launch_amid_full_batches)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 4,
				       .slot_size = 512 };
	uint64_t r = 0, sum = 0;
	size_t l = 8, i;
	struct env e;
	int at;

	for (i = 0; i < BIG_ARG; i++) {
		big_arg[i] = (uint8_t)i;
		sum += (uint8_t)i;
	}
	ASSERT_EQ(0, env_start(&e, &c));
	ASSERT_EQ(0, entrust(&e, 0, env_obj(&e, 8), 0, &g_t));
	n_issued = n_done = n_err = 0;
	ASSERT_EQ(0, odsm_deleg_apply_then(&g_t, OP_SUM, big_arg, BIG_ARG,
					   &big_ret, 8, cb_big, NULL, NULL,
					   0));
	n_issued++;
	ASSERT_EQ(0, odsm_deleg_flush(e.d));
	EXPECT_EQ(0, odsm_deleg_launch(&g_t, OP_SUM, big_arg, BIG_ARG, &r,
				       &l));
	at = n_done;
	TH_LOG("launch back after %d links of %d", at, CHAIN_MAX);
	EXPECT_LE(at, 3);
	EXPECT_EQ(sum, r);
	chain_finish(&e);
	EXPECT_EQ(CHAIN_MAX, n_issued);
	EXPECT_EQ(n_issued, n_done);
	EXPECT_EQ(0, n_err);
	EXPECT_EQ(sum, big_ret);
	odsm_deleg_stop(e.d);
}

/*
 * Two answers of one batch, the first one's callback sending a batch of
 * two more: the trustee answered those into the response slot while the
 * second answer of the first batch was still to be read there, so it got
 * the fourth request's index (3) instead of its own (1).
 */
static uint64_t app_ret[4];
static odsm_trust app_t;
static struct odsm_deleg *app_d;

static void cb_append_more(void *cookie, int st, const void *ret, size_t len)
{
	uint64_t v = 2;

	odsm_deleg_apply_then(&app_t, OP_APPEND, &v, 8, &app_ret[2], 8, NULL,
			      NULL, NULL, 0);
	v = 3;
	odsm_deleg_apply_then(&app_t, OP_APPEND, &v, 8, &app_ret[3], 8, NULL,
			      NULL, NULL, 0);
	odsm_deleg_flush(app_d);
	usleep(50000);	/* the trustee answers them meanwhile */
}

TEST(answers_read_after_a_callback_sends)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 2 };
	struct log *lg;
	struct env e;
	uint64_t v, i;

	ASSERT_EQ(0, env_start(&e, &c));
	lg = env_obj(&e, sizeof(*lg));
	ASSERT_EQ(0, entrust(&e, 0, lg, 0, &app_t));
	app_d = e.d;
	memset(app_ret, 0xff, sizeof(app_ret));
	v = 0;
	ASSERT_EQ(0, odsm_deleg_apply_then(&app_t, OP_APPEND, &v, 8,
					   &app_ret[0], 8, cb_append_more,
					   NULL, NULL, 0));
	v = 1;
	ASSERT_EQ(0, odsm_deleg_apply_then(&app_t, OP_APPEND, &v, 8,
					   &app_ret[1], 8, NULL, NULL, NULL,
					   0));
	ASSERT_EQ(0, odsm_deleg_drain(e.d));
	ASSERT_EQ(0, odsm_deleg_drain(e.d));
	/* each request's answer is the index the trustee appended it at */
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(i, lg->v[i]);
		EXPECT_EQ(i, app_ret[i]);
	}
	odsm_deleg_stop(e.d);
}

static struct odsm_deleg *done_d;
static uint64_t done_ret[4];
static int done_calls[4];

/*
 * Request 0's callback says the thread is done; request 1's stages one
 * more (3) after that, which must complete too.
 */
static void cb_thread_done(void *cookie, int st, const void *ret, size_t len)
{
	int i = (int)(intptr_t)cookie;

	done_calls[i]++;
	if (!st && len == 8)
		memcpy(&done_ret[i], ret, 8);
	if (i == 0)
		odsm_deleg_thread_done(done_d);
	if (i == 1)
		odsm_deleg_apply_then(&g_t, OP_INC, NULL, 0, NULL, 8,
				      cb_thread_done, (void *)(intptr_t)3,
				      NULL, 0);
}

static void *inc_once(void *arg)
{
	return (void *)(intptr_t)odsm_deleg_apply(&g_t, OP_INC, NULL, 0, NULL,
						  NULL);
}

/*
 * odsm_deleg_thread_done() from a callback freed the thread's state
 * under the completion running it: the rest of the batch read freed
 * arrays (ASan: heap-use-after-free in dg_complete()).  It now takes
 * effect when the call that ran the callback returns: every request
 * completes once, the one a later callback staged included, and the
 * client slot (the only one) is then free for another thread.
 */
TEST(thread_done_from_a_callback_ends_after_its_caller)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 1 };
	struct env e;
	uint64_t *ctr;
	pthread_t th;
	void *res;
	int i;

	ASSERT_EQ(0, env_start(&e, &c));
	ctr = env_obj(&e, 8);
	ASSERT_EQ(0, entrust(&e, 0, ctr, 0, &g_t));
	done_d = e.d;
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, odsm_deleg_apply_then(&g_t, OP_INC, NULL, 0, NULL,
						   8, cb_thread_done,
						   (void *)(intptr_t)i, NULL,
						   0));
	ASSERT_EQ(0, odsm_deleg_drain(e.d));
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(1, done_calls[i]);
		EXPECT_EQ((uint64_t)i, done_ret[i]);	/* the old count */
	}
	EXPECT_EQ(4ULL, *ctr);
	/* the slot went free with the drain's return */
	ASSERT_EQ(0, pthread_create(&th, NULL, inc_once, NULL));
	pthread_join(th, &res);
	EXPECT_EQ(0, (int)(intptr_t)res);
	EXPECT_EQ(5ULL, *ctr);
	odsm_deleg_stop(e.d);
}

/*
 * A callback without a buffer of its own (ret NULL) reads its answer
 * where the library hands it; it sends the next batch first, and the
 * trustee answers that batch meanwhile.  The answer was handed out in
 * the response slot itself, and the callback read the next batch's
 * answer (1) for its own (0).
 */
static uint64_t bare_first, bare_after;

static void cb_bare_then_send(void *cookie, int st, const void *ret,
			      size_t len)
{
	if (st || len != 8)
		return;
	memcpy(&bare_first, ret, 8);
	odsm_deleg_apply_then(&g_t, OP_INC, NULL, 0, NULL, 8, NULL, NULL,
			      NULL, 0);
	odsm_deleg_flush(cookie);
	usleep(100000);		/* the trustee answers that batch */
	memcpy(&bare_after, ret, 8);
}

TEST(bare_callback_reads_its_own_answer_after_sending)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 2 };
	struct env e;
	uint64_t *ctr;

	ASSERT_EQ(0, env_start(&e, &c));
	ctr = env_obj(&e, 8);
	ASSERT_EQ(0, entrust(&e, 0, ctr, 0, &g_t));
	bare_first = bare_after = ~0ULL;
	ASSERT_EQ(0, odsm_deleg_apply_then(&g_t, OP_INC, NULL, 0, NULL, 8,
					   cb_bare_then_send, e.d, NULL, 0));
	ASSERT_EQ(0, odsm_deleg_drain(e.d));
	ASSERT_EQ(0, odsm_deleg_drain(e.d));
	EXPECT_EQ(0ULL, bare_first);	/* the old count */
	EXPECT_EQ(0ULL, bare_after);
	EXPECT_EQ(2ULL, *ctr);
	odsm_deleg_stop(e.d);
}

/*
 * A child of fork() claims a client slot of its own: it shared its
 * parent's thread's (the slot is in the shared arena), both published
 * the same seq numbers into it, and increments were lost or a side hung
 * waiting for a seq already overwritten.
 */
TEST(fork_child_claims_its_own_slot)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 4 };
	int i, status, bad = 0;
	struct env e;
	uint64_t *ctr;
	pid_t pid;

	ASSERT_EQ(0, env_start(&e, &c));
	ctr = env_obj(&e, 8);
	ASSERT_EQ(0, entrust(&e, 0, ctr, 0, &g_t));
	ASSERT_EQ(0, odsm_deleg_apply(&g_t, OP_INC, NULL, 0, NULL, NULL));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int b = 0;

		alarm(30);
		for (i = 0; i < 20000; i++)
			b += !!odsm_deleg_apply(&g_t, OP_INC, NULL, 0, NULL,
						NULL);
		_exit(b ? 3 : 0);
	}
	for (i = 0; i < 20000; i++)
		bad += !!odsm_deleg_apply(&g_t, OP_INC, NULL, 0, NULL, NULL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) {
		TH_LOG("the child: status %#x", status);
	}
	EXPECT_EQ(0, bad);
	EXPECT_EQ(40001ULL, *ctr);
	odsm_deleg_stop(e.d);
}

/* A child's odsm_deleg_stop() lets go of its copy; it stopped the
 * parent's runtime (the parent's next apply: -ESHUTDOWN).
 */
TEST(fork_child_stop_leaves_parent_runtime)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 4 };
	struct env e;
	int status;
	pid_t pid;

	ASSERT_EQ(0, env_start(&e, &c));
	ASSERT_EQ(0, entrust(&e, 0, env_obj(&e, 8), 0, &g_t));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		alarm(10);
		odsm_deleg_stop(e.d);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	EXPECT_EQ(0, odsm_deleg_apply(&g_t, OP_INC, NULL, 0, NULL, NULL));
	odsm_deleg_stop(e.d);
}

/*
 * The geometry is the one checked at start: a stray write to the arena
 * header's slot_size (1024 -> 2048) let the trustee parse a batch of 50
 * records into room for 31 (ASan: heap-buffer-overflow in the parser).
 * Now the oversized batch is refused as malformed, and the runtime
 * serves on.
 */
TEST(header_scribble_changes_no_geometry)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 4 };
	struct odsm_dslot_hdr *h;
	struct odsm_dreq *r;
	unsigned int fc, i;
	struct env e;
	uint8_t *slot;
	uint64_t *ctr;

	ASSERT_EQ(0, env_start(&e, &c));
	ctr = env_obj(&e, 8);
	ASSERT_EQ(0, entrust(&e, 0, ctr, 0, &g_t));
	fc = forge_claim(e.d);
	e.d->h->slot_size = 2048;
	e.d->h->clients = 1000;
	slot = dg_req_slot(e.d, 0, fc);
	h = (void *)slot;
	/* (past the request slot: into its response slot, in the arena) */
	memset(slot + 4, 0, 2044);
	for (i = 0; i < 50; i++) {
		r = (void *)(slot + ODSM_DSLOT_HDR + 32 * i);
		r->kind = ODSM_DREQ_FREE;
		r->obj = 3 | (5ULL << 32);
	}
	h->count = 50;
	h->len = 50 * 32;
	EXPECT_NE(0, forge_send(e.d, fc));	/* malformed: refused */
	ASSERT_EQ(0, odsm_deleg_apply(&g_t, OP_INC, NULL, 0, NULL, NULL));
	EXPECT_EQ(1ULL, *ctr);
	e.d->h->slot_size = 1024;
	e.d->h->clients = c.clients + DG_LANES;
	odsm_deleg_stop(e.d);
}

TEST(heap_arena_in_the_local_partition)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 2,
				       .cells = 8 };
	struct odsm_deleg_arena a, a2;
	struct odsm_deleg *d;
	odsm_box b, rb;
	odsm_trust t, t2, lost;
	unsigned long frees, allocs;
	uint8_t pat[64];
	uint64_t sum;
	size_t l = sizeof(sum);
	size_t sz = odsm_deleg_arena_size(&c);

	fk_init();
	register_ops();
	ASSERT_EQ(0, odsm_deleg_arena_heap(&a, sz));
	ASSERT_TRUE(odsm_is_local(a.cg));
	ASSERT_EQ(0, odsm_deleg_start(&a, &c, &d));
	/* no module here to bind its address: it serves this node only */
	EXPECT_GT(0, odsm_deleg_gateway_status(d));
	/* what another process would find from the published address */
	ASSERT_EQ(0, odsm_deleg_arena_at(&a2, odsm_deleg_addr(d)));
	EXPECT_EQ(a.base, a2.base);
	EXPECT_EQ(sz, a2.size);
	EXPECT_EQ(-EINVAL, odsm_deleg_arena_at(&a2, odsm_deleg_addr(d) + 64));

	ASSERT_EQ(0, odsm_box_new(&b, 8, ODSM_ALLOC_ZERO));
	ASSERT_EQ(0, odsm_deleg_entrust(d, 0, &b, OP_DTOR, &t));
	EXPECT_EQ(0U, b.g);		/* the box is the trustee's now */
	ASSERT_EQ(0, odsm_deleg_apply(&t, OP_INC, NULL, 0, NULL, NULL));
	EXPECT_EQ(1U, get(&t));
	/*
	 * node 1's partition: an apply_with argument there is read from a
	 * copy here (freed after), a box there is moved here to be entrusted
	 */
	ASSERT_EQ(0, odsm_box_new_on(&rb, 1, 64, ODSM_ALLOC_ZERO, NULL));
	memset(pat, 2, sizeof(pat));
	ASSERT_EQ(0, odsm_write(rb.g, pat, sizeof(pat)));
	allocs = fk.st.allocs;
	frees = fk.st.frees;
	sum = 0;
	EXPECT_EQ(0, odsm_deleg_apply_with(&t, OP_SUM, rb.g, 64, &sum, &l));
	EXPECT_EQ(128U, sum);
	EXPECT_EQ(allocs + 1, fk.st.allocs);
	EXPECT_EQ(frees + 1, fk.st.frees);
	ASSERT_EQ(0, odsm_deleg_entrust(d, 0, &rb, 0, &t2));
	EXPECT_EQ(0U, rb.g);
	EXPECT_EQ(0x0202020202020202ULL, get(&t2));
	EXPECT_EQ(0, odsm_trust_drop(&t2));
	/* a revoke ends it whatever references remain */
	ASSERT_EQ(0, odsm_box_new(&rb, 8, ODSM_ALLOC_ZERO));
	ASSERT_EQ(0, odsm_deleg_entrust(d, 0, &rb, OP_DTOR, &t2));
	ASSERT_EQ(0, odsm_trust_clone(&t2, &lost));
	frees = fk.st.frees;
	dtor_runs = 0;
	EXPECT_EQ(0, odsm_trust_revoke(&t2));
	EXPECT_EQ(1, dtor_runs);
	EXPECT_EQ(frees + 1, fk.st.frees);
	EXPECT_EQ(~0ULL, get(&lost));
	EXPECT_EQ(-ESTALE, odsm_trust_drop(&lost));
	/* the last reference frees the object in the heap */
	frees = fk.st.frees;
	dtor_runs = 0;
	ASSERT_EQ(0, odsm_trust_drop(&t));
	EXPECT_EQ(1, dtor_runs);
	EXPECT_EQ(frees + 1, fk.st.frees);
	odsm_deleg_stop(d);
	EXPECT_EQ(0, odsm_deleg_arena_heap_free(&a));
	fk_fini();
}

/*
 * The gateway copies an apply_with argument of another node here before
 * it relays the batch: only for a request the trustee would run (a live
 * cell of its generation, a registered op) and within DG_GW_COPY_MAX
 * bytes a batch.  Before, every such request of another node's batch made
 * this node allocate and read its argument, however long, for a stale
 * handle or an unknown op as well.
 */
TEST(gateway_copies_only_what_would_run)
{
	struct odsm_deleg_config c = { .trustees = 2, .clients = 2,
				       .cells = 8 };
	struct odsm_dwith w[4], got;
	struct odsm_dreq_view v[4];
	struct odsm_dreq r = { .kind = ODSM_DREQ_APPLY_WITH, .op = 0,
			       .arg_len = sizeof(got) };
	struct odsm_deleg_arena a;
	struct odsm_dbatch bt;
	struct odsm_deleg *d;
	odsm_box b, b1, rb;
	odsm_trust t, t1;
	uint64_t copies[4];
	unsigned long allocs;
	uint8_t req[1024];
	unsigned int i, nc;
	uint32_t n;

	fk_init();
	register_ops();
	ASSERT_EQ(0, odsm_deleg_arena_heap(&a, odsm_deleg_arena_size(&c)));
	ASSERT_EQ(0, odsm_deleg_start(&a, &c, &d));
	ASSERT_EQ(0, odsm_box_new(&b, 8, ODSM_ALLOC_ZERO));
	ASSERT_EQ(0, odsm_deleg_entrust(d, 0, &b, 0, &t));
	ASSERT_EQ(0, odsm_box_new(&b1, 8, ODSM_ALLOC_ZERO));
	ASSERT_EQ(0, odsm_deleg_entrust(d, 1, &b1, 0, &t1));
	ASSERT_EQ(0, odsm_box_new_on(&rb, 1, 64, ODSM_ALLOC_ZERO, NULL));
	for (i = 0; i < 4; i++) {
		w[i].gaddr = rb.g;
		w[i].len = 64;
	}
	w[3].len = DG_GW_COPY_MAX + 1;
	odsm_dbatch_init(&bt, req, sizeof(req));
	for (i = 0; i < 4; i++) {
		r.tag = i;
		r.op = i == 2 ? 0x5eed : OP_SUM;	/* 2: never registered */
		r.obj = t.cell | (uint64_t)(t.gen + (i == 1)) << 32; /* 1: stale */
		ASSERT_EQ(0, odsm_dbatch_add(&bt, &r, &w[i]));
	}
	odsm_dbatch_seal(&bt);
	ASSERT_EQ(0, odsm_dslot_parse_req(req, sizeof(req), v, 4, &n));
	ASSERT_EQ(4U, n);
	allocs = fk.st.allocs;
	nc = dg_gw_bring_args(d, req, v, 3, copies);
	EXPECT_EQ(1U, nc);
	EXPECT_EQ(allocs + 1, fk.st.allocs);
	/* past the budget: not even tried */
	EXPECT_EQ(0U, dg_gw_bring_args(d, req, &v[3], 1, copies + 1));
	EXPECT_EQ(allocs + 1, fk.st.allocs);
	memcpy(&got, req + v[0].arg_off, sizeof(got));
	EXPECT_TRUE(odsm_is_local(got.gaddr));
	for (i = 1; i < 4; i++) {
		memcpy(&got, req + v[i].arg_off, sizeof(got));
		EXPECT_EQ(rb.g, got.gaddr);
	}
	/*
	 * Behind a request of trustee 1's: the batch is relayed there,
	 * which refuses a cell of trustee 0's (request 1 is still node 1's)
	 */
	v[0] = v[1];
	v[0].obj = t1.cell | (uint64_t)t1.gen << 32;
	v[0].kind = ODSM_DREQ_APPLY;
	v[1].obj = t.cell | (uint64_t)t.gen << 32;
	EXPECT_EQ(0U, dg_gw_bring_args(d, req, v, 2, copies + 1));
	EXPECT_EQ(allocs + 1, fk.st.allocs);
	while (nc)
		odsm_free(copies[--nc]);
	EXPECT_EQ(0, odsm_box_drop(&rb));
	EXPECT_EQ(0, odsm_trust_drop(&t));
	EXPECT_EQ(0, odsm_trust_drop(&t1));
	odsm_deleg_stop(d);
	EXPECT_EQ(0, odsm_deleg_arena_heap_free(&a));
	fk_fini();
}

/* ---- processes: a trustee killed, a client killed ---------------------------- */

struct shared {
	odsm_trust t;
	volatile int ready;
	volatile uint64_t done;
};

/*
 * A trustee process (a child) running c's runtime in e's arena, with one
 * counter entrusted in sh->t (sh: in the arena): its pid once it is
 * ready, or -1.
 */
static pid_t trustee_process(struct env *e, struct odsm_deleg_config *c,
			     struct shared **shp)
{
	struct shared *sh;
	pid_t pid;

	register_ops();
	if (env_map(e, c))
		return -1;
	sh = env_obj(e, sizeof(*sh));
	*shp = sh;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		/* the trustee process */
		if (odsm_deleg_start(&e->a, c, &e->d) ||
		    entrust(e, 0, env_obj(e, 8), 0, &sh->t))
			_exit(1);
		__atomic_store_n(&sh->ready, 1, __ATOMIC_SEQ_CST);
		for (;;)
			pause();
	}
	while (!__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST))
		usleep(1000);
	return pid;
}

TEST(trustee_process_killed_clients_fail_fast)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 4 };
	struct odsm_deleg_completion cp;
	struct odsm_deleg_stats st;
	struct odsm_deleg *d;
	struct shared *sh;
	uint64_t ms = 60000;
	struct env e;
	double t0, dt;
	pid_t pid;
	int status;

	pid = trustee_process(&e, &c, &sh);
	ASSERT_LE(0, pid);
	ASSERT_EQ(0, odsm_deleg_attach(&e.a, &d));
	ASSERT_EQ(0, odsm_deleg_apply(&sh->t, OP_INC, NULL, 0, NULL, NULL));
	EXPECT_EQ(1U, get(&sh->t));
	/* a request the trustee is running when it dies */
	ASSERT_EQ(0, odsm_deleg_apply_then(&sh->t, OP_SLOW, &ms, 8, NULL, 0,
					   NULL, NULL, &cp, 0));
	ASSERT_EQ(0, odsm_deleg_flush(d));
	usleep(50000);
	kill(pid, SIGKILL);
	t0 = now_ms();
	EXPECT_EQ(-EOWNERDEAD, odsm_deleg_drain(d));
	dt = now_ms() - t0;
	EXPECT_EQ(1, cp.done);
	EXPECT_EQ(-EOWNERDEAD, cp.status);
	EXPECT_LT(dt, 500.0);
	TH_LOG("in-flight request failed %.1f ms after the kill", dt);
	/* and every later one at once */
	t0 = now_ms();
	EXPECT_EQ(-EOWNERDEAD, odsm_deleg_apply(&sh->t, OP_INC, NULL, 0, NULL,
						NULL));
	EXPECT_LT(now_ms() - t0, 50.0);
	odsm_deleg_stats(d, &st);
	EXPECT_LE(1U, st.dead);
	waitpid(pid, &status, 0);
	odsm_deleg_stop(d);
}

/*
 * A launch set aside behind a batch whose trustee dies: the batch fails,
 * and its callback stages one more request and flushes, which sends the
 * launch.  The launch returned with the failure while its batch was
 * still out, and the next poll completed it into the launch's frame,
 * gone by then.  It now waits for that batch (failed too) first.
 */
static struct odsm_deleg *g_dd;

static void cb_then_flush(void *cookie, int st, const void *ret, size_t len)
{
	cb_leaf(cookie, st, ret, len);
	if (!odsm_deleg_apply_then(cookie, OP_INC, NULL, 0, NULL, 0, cb_leaf,
				   NULL, NULL, 0))
		n_issued++;
	odsm_deleg_flush(g_dd);
}

TEST(launch_sent_by_a_failing_batch_completes_before_return)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 4 };
	struct shared *sh;
	uint64_t ms = 60000, r = 0;
	size_t l = 8;
	struct env e;
	pid_t pid;
	int status;

	pid = trustee_process(&e, &c, &sh);
	ASSERT_LE(0, pid);
	ASSERT_EQ(0, odsm_deleg_attach(&e.a, &g_dd));
	n_issued = n_done = n_err = 0;
	ASSERT_EQ(0, odsm_deleg_apply_then(&sh->t, OP_SLOW, &ms, 8, NULL, 0,
					   cb_then_flush, &sh->t, NULL, 0));
	n_issued++;
	ASSERT_EQ(0, odsm_deleg_flush(g_dd));
	usleep(50000);
	kill(pid, SIGKILL);
	EXPECT_EQ(-EOWNERDEAD, odsm_deleg_launch(&sh->t, OP_NESTED, &sh->t,
						 sizeof(sh->t), &r, &l));
	/* nothing of it is out any more: no batch for a poll to complete */
	EXPECT_EQ(0, odsm_deleg_poll(g_dd));
	EXPECT_EQ(2, n_issued);
	EXPECT_EQ(2, n_done);
	EXPECT_EQ(2, n_err);
	waitpid(pid, &status, 0);
	odsm_deleg_stop(g_dd);
}

/*
 * Requests staged behind a batch whose trustee dies fail unsent; the
 * first one's callback stages two more.  They were staged into the very
 * entries being failed: the second request was never completed, and
 * the callback's second one completed twice (failed at once, and again
 * when sent).  Each completes once now.
 */
static int fail_seen[5];

static void cb_count(void *cookie, int st, const void *ret, size_t len)
{
	fail_seen[(uintptr_t)cookie]++;
	n_err += st != 0;
}

static void cb_stage_two(void *cookie, int st, const void *ret, size_t len)
{
	cb_count(cookie, st, ret, len);
	odsm_deleg_apply_then(&g_t, OP_INC, NULL, 0, NULL, 0, cb_count,
			      (void *)3, NULL, 0);
	odsm_deleg_apply_then(&g_t, OP_INC, NULL, 0, NULL, 0, cb_count,
			      (void *)4, NULL, 0);
}

TEST(staged_requests_fail_once_when_callbacks_stage)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 4 };
	struct odsm_deleg_completion cp;
	struct odsm_deleg *d;
	struct shared *sh;
	uint64_t ms = 60000;
	struct env e;
	pid_t pid;
	int status, i;

	pid = trustee_process(&e, &c, &sh);
	ASSERT_LE(0, pid);
	ASSERT_EQ(0, odsm_deleg_attach(&e.a, &d));
	g_t = sh->t;
	n_err = 0;
	memset(fail_seen, 0, sizeof(fail_seen));
	ASSERT_EQ(0, odsm_deleg_apply_then(&g_t, OP_SLOW, &ms, 8, NULL, 0,
					   NULL, NULL, &cp, 0));
	ASSERT_EQ(0, odsm_deleg_flush(d));
	/* staged behind it, not sent */
	ASSERT_EQ(0, odsm_deleg_apply_then(&g_t, OP_INC, NULL, 0, NULL, 0,
					   cb_stage_two, (void *)1, NULL, 0));
	ASSERT_EQ(0, odsm_deleg_apply_then(&g_t, OP_INC, NULL, 0, NULL, 0,
					   cb_count, (void *)2, NULL, 0));
	usleep(50000);
	kill(pid, SIGKILL);
	/* the slow one fails, then what is staged, then what that staged */
	EXPECT_EQ(-EOWNERDEAD, odsm_deleg_drain(d));
	odsm_deleg_drain(d);
	EXPECT_EQ(1, cp.done);
	TH_LOG("completions of requests 1-4: %d %d %d %d", fail_seen[1],
	       fail_seen[2], fail_seen[3], fail_seen[4]);
	for (i = 1; i <= 4; i++)
		EXPECT_EQ(1, fail_seen[i]);
	EXPECT_EQ(4, n_err);
	waitpid(pid, &status, 0);
	odsm_deleg_stop(d);
}

/*
 * Requests staged behind a batch whose trustee dies fail unsent; the
 * first one's callback makes a synchronous call to the same trustee.
 * Those callbacks ran outside the rule of dg_complete()'s (a callback
 * may queue but not wait): the call was staged, sent, failed and
 * returned while the request staged after the first one had not
 * completed yet, out of issue order.  It is refused now (-EDEADLK), as
 * from any callback, and never sent.
 */
static int sync_ret, seen2_at_return;

static void cb_sync_call(void *cookie, int st, const void *ret, size_t len)
{
	cb_count(cookie, st, ret, len);
	sync_ret = odsm_deleg_apply(&g_t, OP_INC, NULL, 0, NULL, NULL);
	seen2_at_return = fail_seen[2];
}

TEST(callbacks_of_failed_requests_may_not_wait)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 4 };
	struct odsm_deleg_completion cp;
	struct odsm_deleg_stats st0, st1;
	struct odsm_deleg *d;
	struct shared *sh;
	uint64_t ms = 60000;
	struct env e;
	pid_t pid;
	int status;

	pid = trustee_process(&e, &c, &sh);
	ASSERT_LE(0, pid);
	ASSERT_EQ(0, odsm_deleg_attach(&e.a, &d));
	g_t = sh->t;
	n_err = 0;
	sync_ret = 1;
	seen2_at_return = -1;
	memset(fail_seen, 0, sizeof(fail_seen));
	ASSERT_EQ(0, odsm_deleg_apply_then(&g_t, OP_SLOW, &ms, 8, NULL, 0,
					   NULL, NULL, &cp, 0));
	ASSERT_EQ(0, odsm_deleg_flush(d));
	ASSERT_EQ(0, odsm_deleg_apply_then(&g_t, OP_INC, NULL, 0, NULL, 0,
					   cb_sync_call, (void *)1, NULL, 0));
	ASSERT_EQ(0, odsm_deleg_apply_then(&g_t, OP_INC, NULL, 0, NULL, 0,
					   cb_count, (void *)2, NULL, 0));
	usleep(50000);
	odsm_deleg_stats(d, &st0);
	kill(pid, SIGKILL);
	EXPECT_EQ(-EOWNERDEAD, odsm_deleg_drain(d));
	odsm_deleg_stats(d, &st1);
	EXPECT_EQ(1, cp.done);
	EXPECT_EQ(1, fail_seen[1]);
	EXPECT_EQ(1, fail_seen[2]);
	EXPECT_EQ(-EDEADLK, sync_ret) {
		TH_LOG("the callback's call returned %d, with request 2 completed %d times",
		       sync_ret, seen2_at_return);
	}
	EXPECT_EQ(0, seen2_at_return);
	EXPECT_EQ(st0.deadlk + 1, st1.deadlk);
	waitpid(pid, &status, 0);
	odsm_deleg_stop(d);
}

/*
 * The late client: its first call claims the dead client's slot, and
 * the claim first waits for the batch the dead one left in flight to be
 * answered, so the count it reads then is final; then 1000 increments.
 */
struct late {
	struct shared *sh;
	uint64_t before;
};

static void *late_client(void *arg)
{
	struct late *l = arg;
	int i;

	l->before = get(&l->sh->t);
	if (l->before == ~0ULL)
		return (void *)1;
	for (i = 0; i < 1000; i++)
		if (odsm_deleg_apply(&l->sh->t, OP_INC, NULL, 0, NULL, NULL))
			return (void *)1;
	return NULL;
}

TEST(client_process_killed_others_served)
{
	/* two client slots: the dead client's must be reclaimed */
	struct odsm_deleg_config c = { .trustees = 1, .clients = 2 };
	struct shared *sh;
	struct env e;
	struct late l = { 0 };
	uint64_t after;
	pthread_t th;
	void *res;
	pid_t pid;
	int status;

	register_ops();
	ASSERT_EQ(0, env_map(&e, &c));
	sh = env_obj(&e, sizeof(*sh));
	/* forked before the runtime exists: nothing of it is inherited */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct odsm_deleg *d;

		while (!__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST))
			usleep(1000);
		/* attach, then hammer until killed */
		if (odsm_deleg_attach(&e.a, &d))
			_exit(1);
		for (;;) {
			odsm_deleg_apply_then(&sh->t, OP_INC, NULL, 0, NULL, 0,
					      NULL, NULL, NULL, 0);
			if (odsm_deleg_poll(d) < 0)
				_exit(2);
			__atomic_fetch_add(&sh->done, 1, __ATOMIC_SEQ_CST);
		}
	}
	ASSERT_EQ(0, odsm_deleg_start(&e.a, &c, &e.d));
	ASSERT_EQ(0, entrust(&e, 0, env_obj(&e, 8), 0, &sh->t));
	__atomic_store_n(&sh->ready, 1, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&sh->done, __ATOMIC_SEQ_CST) < 5000)
		usleep(1000);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	ASSERT_TRUE(WIFSIGNALED(status));
	/*
	 * The main thread holds one slot; the late thread reclaims the dead
	 * one and reads the count there (a read from here could come before
	 * the trustee answered the dead client's last batch: a stale count,
	 * and the total off by that batch, seen on a loaded machine).
	 */
	l.sh = sh;
	ASSERT_EQ(0, pthread_create(&th, NULL, late_client, &l));
	pthread_join(th, &res);
	EXPECT_EQ(NULL, res);
	after = get(&sh->t);
	EXPECT_EQ(l.before + 1000, after);
	TH_LOG("the killed client had run %llu increments",
	       (unsigned long long)l.before);
	odsm_deleg_stop(e.d);
}

/* ---- a runtime of another node: batches through the (fake) module ------ */

/* The other node's trustee, as the fake module's DELEG_CALL. */
static struct {
	uint64_t counter;
	unsigned int calls, reqs, most;
	int fail;		/* the next calls fail with it */
	int order_bad;
} rm;

static int rm_call(struct odsm_deleg_call *a)
{
	uint8_t req[1024] = { 0 }, *resp = (uint8_t *)(uintptr_t)a->resp;
	struct odsm_dreq_view v[64];
	struct odsm_drbatch rb;
	uint32_t n = 0, i;

	if (rm.fail)
		return rm.fail;
	if (a->slot_size != sizeof(req) || a->req_len > sizeof(req) ||
	    a->resp_cap < a->slot_size)
		return -EINVAL;
	memcpy(req, (void *)(uintptr_t)a->req, a->req_len);
	if (odsm_dslot_parse_req(req, sizeof(req), v, 64, &n))
		return -EBADMSG;
	rm.calls++;
	rm.reqs += n;
	if (n > rm.most)
		rm.most = n;
	odsm_drbatch_init(&rb, resp, a->slot_size);
	for (i = 0; i < n; i++) {
		uint64_t *ret = odsm_drbatch_ret(&rb, v[i].ret_max);

		if (v[i].op != OP_INC || v[i].ret_max < 8) {
			odsm_drbatch_add(&rb, -EBADRQC, v[i].tag, 0);
			continue;
		}
		rm.counter++;
		memcpy(ret, &rm.counter, 8);
		odsm_drbatch_add(&rb, 0, v[i].tag, 8);
	}
	odsm_drbatch_seal(&rb, 0);
	a->resp_len = ODSM_DSLOT_HDR + rb.len;
	return 0;
}

struct rm_done {
	unsigned int n;		/* completions so far */
	uint64_t last;
	int err, bad;
};

static void rm_then(void *cookie, int st, const void *ret, size_t len)
{
	struct rm_done *x = cookie;
	uint64_t v;

	x->n++;
	if (st) {
		x->err = st;
		return;
	}
	memcpy(&v, ret, sizeof(v));
	/* in issue order, and run in issue order */
	if (len != 8 || v != x->last + 1)
		x->bad++;
	x->last = v;
}

TEST(remote_runtime_batches_through_the_module)
{
	struct odsm_deleg_config c = { .trustees = 2, .clients = 4,
				       .slot_size = 1024 };
	struct odsm_deleg_stats st;
	struct rm_done x = { 0 };
	struct odsm_deleg *d;
	struct dg_hdr h;
	odsm_trust t = { .gen = 1 }, bad;
	uint64_t g, v;
	size_t len;
	unsigned int i, calls;

	fk_init();
	register_ops();
	memset(&rm, 0, sizeof(rm));
	fk.deleg_call = rm_call;
	/* the other node's runtime: its header in node 1's partition */
	ASSERT_EQ(0, dg_layout(&c, &h));
	g = odsm_addr_of(fk_new_obj(1, sizeof(h) + DG_LINE, 0));
	g = (g + DG_LINE - 1) & ~(uint64_t)(DG_LINE - 1);
	h.magic = DG_MAGIC;
	h.version = DG_VERSION;
	h.gaddr = g;
	h.state = DG_RUNNING;
	memcpy(odsm_ptr(g), &h, sizeof(h));
	t.arena = g;

	/* queued: batched by size (40 bytes out, 24 back each) */
	for (i = 0; i < 100; i++)
		ASSERT_EQ(0, odsm_deleg_apply_then(&t, OP_INC, NULL, 0, &v,
						   sizeof(v), rm_then, &x,
						   NULL, 0));
	ASSERT_EQ(0, odsm_deleg_at(g, &d));
	EXPECT_EQ(g, odsm_deleg_addr(d));
	ASSERT_EQ(0, odsm_deleg_drain(d));
	EXPECT_EQ(100U, x.n);
	EXPECT_EQ(0, x.bad);
	EXPECT_EQ(0, x.err);
	EXPECT_EQ(100U, rm.reqs);
	EXPECT_GE(rm.most, 20U);
	EXPECT_LE(rm.calls, 5U);

	/* before the thread waits, what is queued goes with its apply */
	calls = rm.calls;
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, odsm_deleg_apply_then(&t, OP_INC, NULL, 0, &v,
						   sizeof(v), rm_then, &x,
						   NULL, 0));
	len = sizeof(v);
	ASSERT_EQ(0, odsm_deleg_apply(&t, OP_INC, NULL, 0, &v, &len));
	EXPECT_EQ(calls + 1, rm.calls);
	EXPECT_EQ(104U, v);
	EXPECT_EQ(103U, x.n);
	/* an op the other node does not know: its answer, per request */
	len = sizeof(v);
	EXPECT_EQ(-EBADRQC, odsm_deleg_apply(&t, odsm_deleg_op_id("nope"),
					     NULL, 0, &v, &len));

	/* its node down: the call's error, for every request of the batch */
	rm.fail = -EHOSTDOWN;
	len = sizeof(v);
	EXPECT_EQ(-EHOSTDOWN, odsm_deleg_apply(&t, OP_INC, NULL, 0, &v, &len));
	x.err = 0;
	ASSERT_EQ(0, odsm_deleg_apply_then(&t, OP_INC, NULL, 0, &v, sizeof(v),
					   rm_then, &x, NULL, 0));
	EXPECT_EQ(-EHOSTDOWN, odsm_deleg_drain(d));
	EXPECT_EQ(-EHOSTDOWN, x.err);
	EXPECT_EQ(104U, x.n);
	rm.fail = 0;

	/*
	 * From a local trustee's loop, applying to it is refused like any
	 * apply there; a launch worker of the local runtime applies to it
	 * (and to its own handle) and completes.
	 */
	{
		struct odsm_deleg_config lc = { .trustees = 1, .clients = 4 };
		uint64_t before = rm.counter, r = 0;
		struct env e;
		odsm_trust a;

		ASSERT_EQ(0, env_start(&e, &lc));
		ASSERT_EQ(0, entrust(&e, 0, env_obj(&e, 8), 0, &a));
		EXPECT_EQ(-EDEADLK, odsm_deleg_apply(&a, OP_REENTER, &t,
						     sizeof(t), NULL, NULL));
		EXPECT_EQ(before, rm.counter);
		len = sizeof(r);
		EXPECT_EQ(0, odsm_deleg_launch(&a, OP_NESTED, &t, sizeof(t),
					       &r, &len));
		EXPECT_EQ(before + 1, rm.counter);
		EXPECT_EQ(before + 1, r);	/* its new value + a's old 0 */
		EXPECT_EQ(1U, get(&a));
		odsm_deleg_stop(e.d);
		munmap(e.a.base, e.a.size);
	}

	/* no runtime there; another node's runtime counts nothing here */
	bad = t;
	bad.arena = g + DG_LINE * 4;
	len = sizeof(v);
	EXPECT_EQ(-EBADF, odsm_deleg_apply(&bad, OP_INC, NULL, 0, &v, &len));
	odsm_deleg_stats(d, &st);
	EXPECT_EQ(0U, st.requests);
	odsm_deleg_stop(d);
	fk_fini();
}

TEST_HARNESS_MAIN
