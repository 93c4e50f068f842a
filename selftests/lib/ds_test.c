// SPDX-License-Identifier: GPL-2.0
/*
 * libodsm's data structures (odsm_ds.h) on the host, against the fake
 * /dev/odsm (its READ, WRITE and ATOMIC answer one-sided operations, a
 * delegation runtime in its heap the requests): threads run every
 * operation one-sided and as requests, alternately, on the same table
 * and queue, and the results are checked against each promise:
 *
 *   - CRW: keys inserted, found back at once through the other variant,
 *     updated, deleted; racing inserts of one key: exactly one wins;
 *     then every key has its last value or is gone;
 *   - CW then CR: the same checks at the end of the phases;
 *   - a full segment: -ENOSPC, nothing lost; oversized key and value;
 *   - a queue of 8 slots under 2 producers and 2 consumers at CRW (full
 *     and empty met): every element exactly once, each producer's order
 *     kept at each consumer; then CW pushes and CR pops; a full and an
 *     empty queue refuse without losing anything;
 *   - malformed requests: refused by the trustee and counted; a
 *     bucket whose stored value length is past the value (shared memory
 *     another node wrote): -EBADMSG, nothing copied past the buffer;
 *   - a CRW step that fails (a READ or WRITE refused) leaves no bucket
 *     BUSY or read-held behind.
 *
 * The cluster program (selftests/cluster/cluster_ds_test.c) does the
 * same across guests; this runs in the host suite, with ASan.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "odsm_ds.h"
#include "odsm_ds_int.h"
#include "fake_odsm.h"

#include "ksft_host.h"

#define THREADS	4
#define KEYS	48

struct env {
	struct odsm_deleg_arena a;
	struct odsm_deleg *d;
	struct odsm_ds_seg seg;
	struct odsm_ds_hash *h[2];	/* one-sided, request */
};

static const struct odsm_ds_costs any = {
	.read_ns = 1, .write_ns = 1, .cas_ns = 1, .fao_ns = 1, .req_ns = 1,
};

static int env_up(struct env *e, uint32_t buckets)
{
	struct odsm_deleg_config c = { .trustees = 1, .clients = 16 };
	int ret;

	fk_init();
	ret = odsm_ds_register();
	ret = ret ?: odsm_deleg_arena_heap(&e->a, odsm_deleg_arena_size(&c));
	ret = ret ?: odsm_deleg_start(&e->a, &c, &e->d);
	ret = ret ?: odsm_ds_seg_create(e->d, 0, buckets, &e->seg);
	ret = ret ?: odsm_ds_hash_open(&e->seg, 1, ODSM_DS_ONESIDED, &any,
				       &e->h[0]);
	return ret ?: odsm_ds_hash_open(&e->seg, 1, ODSM_DS_REQUEST, &any,
					&e->h[1]);
}

static void env_down(struct env *e)
{
	odsm_ds_hash_close(e->h[0]);
	odsm_ds_hash_close(e->h[1]);
	odsm_trust_drop(&e->seg.t);
	odsm_deleg_stop(e->d);
	odsm_deleg_arena_heap_free(&e->a);
	fk_fini();
}

static uint64_t key_of(unsigned int phase, unsigned int t, unsigned int i)
{
	return (uint64_t)phase << 40 | (uint64_t)t << 20 | i;
}

static size_t val_of(uint64_t k, unsigned int ver, uint8_t *v)
{
	size_t n = 1 + (k * 5 + ver) % ODSM_DS_VAL_MAX, i;

	for (i = 0; i < n; i++)
		v[i] = (uint8_t)(k * 3 + i * 11 + ver * 97);
	return n;
}

/* 0: deleted, 1: inserted, 2: updated */
static unsigned int fate(unsigned int i)
{
	return i % 4 == 3 ? 0 : i % 2 ? 2 : 1;
}

struct worker {
	pthread_t tid;
	struct env *e;
	unsigned int id, phase;
	enum odsm_ds_promise wp;	/* writers' promise: CRW or CW */
	unsigned int bad, won;
	int err;
};

static void *hash_worker(void *arg)
{
	struct worker *w = arg;
	struct odsm_ds_hash **h = w->e->h;
	int crw = w->wp == ODSM_DS_CRW;
	uint8_t v[ODSM_DS_VAL_MAX], got[ODSM_DS_VAL_MAX];
	unsigned int i;
	size_t n, gl;
	uint64_t k;
	int ret;

	for (i = 0; i < KEYS; i++) {
		k = key_of(w->phase, w->id, i);
		n = val_of(k, 1, v);
		ret = odsm_ds_insert(h[i % 2], &k, sizeof(k), v, n, w->wp);
		if (ret && !w->err)
			w->err = ret;
		if (!crw)
			continue;
		gl = sizeof(got);
		ret = odsm_ds_find(h[(i + 1) % 2], &k, sizeof(k), got, &gl,
				   ODSM_DS_CRW);
		w->bad += ret || gl != n || memcmp(got, v, n);
	}
	for (i = 0; i < KEYS; i++) {
		k = key_of(w->phase, w->id, i);
		if (fate(i) == 2) {
			n = val_of(k, 2, v);
			ret = odsm_ds_update(h[i / 2 % 2], &k, sizeof(k), v, n,
					     w->wp);
		} else if (!fate(i)) {
			ret = odsm_ds_delete(h[i / 4 % 2], &k, sizeof(k),
					     w->wp);
		} else {
			continue;
		}
		if (ret && !w->err)
			w->err = ret;
	}
	/* every thread inserts the same keys: who wins? */
	for (i = 0; i < 16; i++) {
		k = key_of(w->phase, 999, i);
		ret = odsm_ds_insert(h[(i + w->id) % 2], &k, sizeof(k), &w->id,
				     1, w->wp);
		if (!ret)
			w->won++;
		else if (ret != -EEXIST && !w->err)
			w->err = ret;
	}
	return NULL;
}

static void run_phase(struct __test_metadata *_metadata, struct env *e,
		      unsigned int phase, enum odsm_ds_promise wp,
		      enum odsm_ds_promise rp)
{
	struct worker w[THREADS];
	uint8_t v[ODSM_DS_VAL_MAX], got[ODSM_DS_VAL_MAX];
	unsigned int t, i, won = 0, bad = 0;
	size_t n, gl;
	uint64_t k;
	int ret;

	for (t = 0; t < THREADS; t++) {
		w[t] = (struct worker){ .e = e, .id = t, .phase = phase,
					.wp = wp };
		ASSERT_EQ(0, pthread_create(&w[t].tid, NULL, hash_worker,
					    &w[t]));
	}
	for (t = 0; t < THREADS; t++) {
		pthread_join(w[t].tid, NULL);
		EXPECT_EQ(0, w[t].err);
		EXPECT_EQ(0U, w[t].bad);
		won += w[t].won;
	}
	if (wp == ODSM_DS_CRW) {
		EXPECT_EQ(16U, won);	/* exactly one per key */
	} else {
		EXPECT_LE(16U, won);	/* CW: at least one */
	}
	/* the writers are done: every key checked at the readers' promise */
	for (t = 0; t < THREADS; t++) {
		for (i = 0; i < KEYS; i++) {
			k = key_of(phase, t, i);
			gl = sizeof(got);
			ret = odsm_ds_find(e->h[(i + t) % 2], &k, sizeof(k),
					   got, &gl, rp);
			if (!fate(i)) {
				bad += ret != -ENOENT;
				continue;
			}
			n = val_of(k, fate(i), v);
			bad += ret || gl != n || memcmp(got, v, n);
		}
	}
	for (i = 0; i < 16; i++) {
		k = key_of(phase, 999, i);
		gl = sizeof(got);
		ret = odsm_ds_find(e->h[i % 2], &k, sizeof(k), got, &gl, rp);
		bad += ret || gl != 1 || got[0] >= THREADS;
	}
	EXPECT_EQ(0U, bad);
}

TEST(hash_crw_and_phasal)
{
	struct odsm_ds_stats s0, s1;
	struct env e;

	ASSERT_EQ(0, env_up(&e, 2048));
	odsm_ds_stats(&s0);
	run_phase(_metadata, &e, 1, ODSM_DS_CRW, ODSM_DS_CRW);
	run_phase(_metadata, &e, 2, ODSM_DS_CW, ODSM_DS_CR);
	odsm_ds_stats(&s1);
	EXPECT_LT(s0.onesided + 100, s1.onesided);
	EXPECT_LT(s0.requests + 100, s1.requests);
	EXPECT_EQ(s1.requests - s0.requests, s1.served - s0.served);
	EXPECT_LT(0UL, fk.st.atomics);
	env_down(&e);
}

TEST(hash_full_and_oversized)
{
	uint8_t big[ODSM_DS_VAL_MAX + 1] = { 0 }, got[ODSM_DS_VAL_MAX];
	unsigned int i, r;
	struct env e;
	size_t gl;
	uint64_t k;

	ASSERT_EQ(0, env_up(&e, 16));
	for (i = 0; i < 16; i++) {
		k = i;
		EXPECT_EQ(0, odsm_ds_insert(e.h[i % 2], &k, sizeof(k), &i, 4,
					    ODSM_DS_CRW));
	}
	for (r = 0; r < 2; r++) {
		k = 99;
		EXPECT_EQ(-ENOSPC, odsm_ds_insert(e.h[r], &k, sizeof(k), &k,
						  8, ODSM_DS_CRW));
		EXPECT_EQ(-E2BIG, odsm_ds_insert(e.h[r], big,
						 ODSM_DS_KEY_MAX + 1, big, 1,
						 ODSM_DS_CRW));
		EXPECT_EQ(-E2BIG, odsm_ds_insert(e.h[r], &k, sizeof(k), big,
						 sizeof(big), ODSM_DS_CRW));
		gl = sizeof(got);
		EXPECT_EQ(-EINVAL, odsm_ds_find(e.h[r], &k, sizeof(k), got,
						&gl, ODSM_DS_CW));
		/* full, but the key is there: that is found first */
		k = 3;
		EXPECT_EQ(-EEXIST, odsm_ds_insert(e.h[r], &k, sizeof(k), &k, 1,
						  ODSM_DS_CRW));
	}
	/* nothing lost; the refused key never came in */
	for (i = 0; i <= 16; i++) {
		k = i == 16 ? 99 : i;
		gl = sizeof(got);
		if (i == 16) {
			EXPECT_EQ(-ENOENT, odsm_ds_find(e.h[0], &k, sizeof(k),
							got, &gl, ODSM_DS_CR));
			continue;
		}
		EXPECT_EQ(0, odsm_ds_find(e.h[i % 2], &k, sizeof(k), got, &gl,
					  ODSM_DS_CR));
		EXPECT_EQ(4U, gl);
		EXPECT_EQ(0, memcmp(got, &i, 4));
	}
	env_down(&e);
}

/* ---- the queue ------------------------------------------------------------- */

#define QN	200	/* elements per producer */

struct qw {
	pthread_t tid;
	struct odsm_ds_queue *q[2];
	unsigned int id;
	enum odsm_ds_promise p;
	uint64_t *log;		/* consumers */
	unsigned int n, full, empty;
	volatile int *producers_left;
	volatile int *full_seen;	/* consumers start once it is set */
	int err;
};

static void *qproducer(void *arg)
{
	struct qw *w = arg;
	unsigned int i;
	uint64_t v;
	size_t n;
	int ret;

	for (i = 0; i < QN; i++) {
		v = (uint64_t)(w->id + 1) << 32 | i;
		do {
			n = sizeof(v);
			ret = odsm_ds_queue_op(w->q[i % 2], ODSM_DS_PUSH, i % 2,
					       &v, &n, w->p);
			if (ret == -ENOSPC) {
				w->full++;
				__atomic_store_n(w->full_seen, 1,
						 __ATOMIC_SEQ_CST);
			}
		} while (ret == -ENOSPC);
		if (ret && !w->err)
			w->err = ret;
	}
	__atomic_fetch_sub(w->producers_left, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void *qconsumer(void *arg)
{
	struct qw *w = arg;
	unsigned int i = 0;
	int ret, last = 0;
	uint64_t v;
	size_t n;

	/* the ring is met full first (with no consumer, it must fill) */
	while (!__atomic_load_n(w->full_seen, __ATOMIC_SEQ_CST) &&
	       __atomic_load_n(w->producers_left, __ATOMIC_SEQ_CST))
		sched_yield();
	for (;; i++) {
		n = sizeof(v);
		ret = odsm_ds_queue_op(w->q[i % 2], ODSM_DS_POP, (i / 3) % 2,
				       &v, &n, w->p);
		if (!ret) {
			w->log[w->n++] = v;
			last = 0;
			continue;
		}
		if (ret != -ENOENT) {
			w->err = ret;
			return NULL;
		}
		w->empty++;
		if (w->p != ODSM_DS_CRW || last)
			return NULL;
		if (!__atomic_load_n(w->producers_left, __ATOMIC_SEQ_CST))
			last = 1;
	}
}

/* every element of np producers once; each producer's order per log */
static unsigned int check_qlogs(struct qw *c, unsigned int nc,
				unsigned int np)
{
	unsigned int seen[4][QN] = { { 0 } }, bad = 0, i, j, p, s;
	uint64_t last[4];

	for (i = 0; i < nc; i++) {
		memset(last, 0, sizeof(last));
		for (j = 0; j < c[i].n; j++) {
			p = (unsigned int)(c[i].log[j] >> 32) - 1;
			s = (uint32_t)c[i].log[j];
			if (p >= np || s >= QN) {
				bad++;
				continue;
			}
			seen[p][s]++;
			bad += last[p] && c[i].log[j] <= last[p];
			last[p] = c[i].log[j];
		}
	}
	for (p = 0; p < np; p++)
		for (s = 0; s < QN; s++)
			bad += seen[p][s] != 1;
	return bad;
}

TEST(queue_mpmc)
{
	struct qw pr[2], co[2];
	struct odsm_ds_queue *q[2];
	struct odsm_ds_seg qs;
	volatile int left = 2, full_seen = 0;
	unsigned int i;
	struct env e;

	ASSERT_EQ(0, env_up(&e, 16));
	ASSERT_EQ(0, odsm_ds_queue_create(e.d, 0, 8, &qs));
	ASSERT_EQ(0, odsm_ds_queue_open(&qs, ODSM_DS_ONESIDED, &any, &q[0]));
	ASSERT_EQ(0, odsm_ds_queue_open(&qs, ODSM_DS_REQUEST, &any, &q[1]));
	for (i = 0; i < 2; i++) {
		pr[i] = (struct qw){ .q = { q[0], q[1] }, .id = i,
				     .p = ODSM_DS_CRW, .producers_left = &left,
				     .full_seen = &full_seen };
		co[i] = pr[i];
		co[i].log = calloc(2 * QN, sizeof(uint64_t));
		ASSERT_NE(NULL, co[i].log);
	}
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, pthread_create(&co[i].tid, NULL, qconsumer, &co[i]));
		ASSERT_EQ(0, pthread_create(&pr[i].tid, NULL, qproducer, &pr[i]));
	}
	for (i = 0; i < 2; i++) {
		pthread_join(pr[i].tid, NULL);
		pthread_join(co[i].tid, NULL);
		EXPECT_EQ(0, pr[i].err);
		EXPECT_EQ(0, co[i].err);
	}
	EXPECT_EQ(0U, check_qlogs(co, 2, 2));
	EXPECT_LT(0U, pr[0].full + pr[1].full);		/* the ring was full */
	EXPECT_LT(0U, co[0].empty + co[1].empty);	/* and empty */
	TH_LOG("CRW: %u + %u popped, full %u times, empty %u times",
	       co[0].n, co[1].n, pr[0].full + pr[1].full,
	       co[0].empty + co[1].empty);
	odsm_ds_queue_close(q[0]);
	odsm_ds_queue_close(q[1]);
	odsm_trust_drop(&qs.t);

	/* CW pushes, then (a phase apart) CR pops, on a ring with room */
	ASSERT_EQ(0, odsm_ds_queue_create(e.d, 0, 2 * QN, &qs));
	ASSERT_EQ(0, odsm_ds_queue_open(&qs, ODSM_DS_ONESIDED, &any, &q[0]));
	ASSERT_EQ(0, odsm_ds_queue_open(&qs, ODSM_DS_REQUEST, &any, &q[1]));
	left = 2;
	for (i = 0; i < 2; i++) {
		pr[i].q[0] = co[i].q[0] = q[0];
		pr[i].q[1] = co[i].q[1] = q[1];
		pr[i].p = ODSM_DS_CW;
		co[i].p = ODSM_DS_CR;
		co[i].n = 0;
		pr[i].full = 0;
		ASSERT_EQ(0, pthread_create(&pr[i].tid, NULL, qproducer, &pr[i]));
	}
	for (i = 0; i < 2; i++)
		pthread_join(pr[i].tid, NULL);
	for (i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&co[i].tid, NULL, qconsumer, &co[i]));
	for (i = 0; i < 2; i++) {
		pthread_join(co[i].tid, NULL);
		EXPECT_EQ(0, pr[i].err);
		EXPECT_EQ(0, co[i].err);
		EXPECT_EQ(0U, pr[i].full);
	}
	EXPECT_EQ(0U, check_qlogs(co, 2, 2));
	/* and CRW works on after the phases: the counts are frontiers again */
	for (i = 0; i < 2; i++) {
		uint64_t v = 7, got = 0;
		size_t n = sizeof(v);

		EXPECT_EQ(0, odsm_ds_queue_op(q[i], ODSM_DS_PUSH, i, &v, &n,
					      ODSM_DS_CRW));
		n = sizeof(got);
		EXPECT_EQ(0, odsm_ds_queue_op(q[i], ODSM_DS_POP, !i, &got, &n,
					      ODSM_DS_CRW));
		EXPECT_EQ(7U, got);
	}
	odsm_ds_queue_close(q[0]);
	odsm_ds_queue_close(q[1]);
	odsm_trust_drop(&qs.t);
	free(co[0].log);
	free(co[1].log);
	env_down(&e);
}

TEST(malformed_requests_counted)
{
	struct odsm_ds_stats s0, s1;
	uint8_t junk[56] = { 0 };
	struct odsm_ds_seg qs;
	struct env e;
	size_t rl = 0;

	ASSERT_EQ(0, env_up(&e, 16));
	ASSERT_EQ(0, odsm_ds_queue_create(e.d, 0, 4, &qs));
	odsm_ds_stats(&s0);
	EXPECT_EQ(-EINVAL, odsm_deleg_apply(&e.seg.t,
					    odsm_deleg_op_id("odsm.ds.hash"),
					    junk, 8, NULL, &rl));
	junk[2] = 4;
	memset(junk + 4, 0xff, 4);	/* start beyond the buckets */
	EXPECT_EQ(-EINVAL, odsm_deleg_apply(&e.seg.t,
					    odsm_deleg_op_id("odsm.ds.hash"),
					    junk, sizeof(junk), NULL, &rl));
	/* a queue's handle given to the table's operation, and back */
	memset(junk + 4, 0, 4);
	EXPECT_EQ(-EINVAL, odsm_deleg_apply(&qs.t,
					    odsm_deleg_op_id("odsm.ds.hash"),
					    junk, sizeof(junk), NULL, &rl));
	junk[0] = ODSM_DS_PUSH;
	EXPECT_EQ(-EINVAL, odsm_deleg_apply(&e.seg.t,
					    odsm_deleg_op_id("odsm.ds.queue"),
					    junk, 36, NULL, &rl));
	odsm_ds_stats(&s1);
	EXPECT_EQ(s0.bad_requests + 4, s1.bad_requests);
	odsm_trust_drop(&qs.t);
	env_down(&e);
}

/*
 * A bucket's body is shared memory: another node's bug (or a hostile
 * one) may have written a value length past the value.  Both variants
 * refuse it with -EBADMSG and copy nothing past the caller's buffer
 * (under ASan a copy of vlen bytes would be a stack overflow).
 */
TEST(corrupt_bucket_length_refused)
{
	uint8_t got[ODSM_DS_VAL_MAX + 8];
	struct ds_bucket *b;
	unsigned int i, r;
	struct env e;
	uint64_t k = 7;
	size_t gl;

	ASSERT_EQ(0, env_up(&e, 16));
	ASSERT_EQ(0, odsm_ds_insert(e.h[0], &k, sizeof(k), &k, 8,
				    ODSM_DS_CRW));
	b = (struct ds_bucket *)(uintptr_t)(odsm_addr_of(e.seg.addr) + DS_HDR);
	for (i = 0; i < 16 && DS_STATE(b[i].flag) != DS_READY; i++)
		;
	ASSERT_LT(i, 16U);
	b[i].vlen = 200;
	for (r = 0; r < 2; r++) {
		memset(got, 0x5a, sizeof(got));
		gl = ODSM_DS_VAL_MAX;
		EXPECT_EQ(-EBADMSG, odsm_ds_find(e.h[r], &k, sizeof(k), got,
						 &gl, ODSM_DS_CRW));
		EXPECT_EQ(0x5a, got[ODSM_DS_VAL_MAX]);
		/* the CRW find's reader went out: the bucket is READY */
		EXPECT_EQ(DS_READY, b[i].flag);
	}
	b[i].vlen = 8;
	gl = sizeof(got);
	EXPECT_EQ(0, odsm_ds_find(e.h[1], &k, sizeof(k), got, &gl,
				  ODSM_DS_CR));
	EXPECT_EQ(8U, gl);
	/* and the header's bucket count is bounded too */
	((struct ds_seg_hdr *)(uintptr_t)odsm_addr_of(e.seg.addr))->buckets =
		(uint64_t)DS_MAX_BUCKETS + 1;
	gl = sizeof(got);
	EXPECT_EQ(-EINVAL, odsm_ds_find(e.h[1], &k, sizeof(k), got, &gl,
					ODSM_DS_CR));
	((struct ds_seg_hdr *)(uintptr_t)odsm_addr_of(e.seg.addr))->buckets =
		16;
	env_down(&e);
}

/* the state word of the (only) bucket that holds anything */
static uint64_t used_flag(struct env *e, unsigned int *at)
{
	struct ds_bucket *b = (void *)(uintptr_t)(odsm_addr_of(e->seg.addr) +
						 DS_HDR);
	unsigned int i;

	for (i = 0; i < 16; i++)
		if (b[i].flag) {
			*at = i;
			return b[i].flag;
		}
	return ~0ULL;
}

/*
 * A step of a CRW operation that fails after the bucket's flag changed
 * leaves no bucket held: a find's reader goes out, an insert whose body
 * was not written leaves a tombstone, an update puts READY back.  Before,
 * every later update or delete of the key (or every probe passing by)
 * timed out after DS_WAIT_MS.
 */
TEST(failed_step_leaves_no_bucket_held)
{
	uint8_t got[ODSM_DS_VAL_MAX];
	unsigned int at, at2;
	uint64_t k = 5, v;
	struct env e;
	size_t gl;

	ASSERT_EQ(0, env_up(&e, 16));
	/* an insert whose body write fails */
	fk.fail_write = -EIO;
	EXPECT_EQ(-EIO, odsm_ds_insert(e.h[0], &k, sizeof(k), &k, 8,
				       ODSM_DS_CRW));
	EXPECT_EQ(DS_DEAD, used_flag(&e, &at));
	gl = sizeof(got);
	EXPECT_EQ(-ENOENT, odsm_ds_find(e.h[0], &k, sizeof(k), got, &gl,
					 ODSM_DS_CRW));
	/* the key goes in past the tombstone */
	ASSERT_EQ(0, odsm_ds_insert(e.h[0], &k, sizeof(k), &k, 8,
				    ODSM_DS_CRW));
	/* a find whose bucket read fails */
	fk.fail_read = -EIO;
	gl = sizeof(got);
	EXPECT_EQ(-EIO, odsm_ds_find(e.h[0], &k, sizeof(k), got, &gl,
				     ODSM_DS_CRW));
	ASSERT_EQ(DS_DEAD, used_flag(&e, &at));
	at2 = (at + 1) % 16;
	EXPECT_EQ(DS_READY, ((struct ds_bucket *)(uintptr_t)
			     (odsm_addr_of(e.seg.addr) + DS_HDR))[at2].flag);
	/* an update whose body write fails: READY again, the old value */
	v = 77;
	fk.fail_write = -EIO;
	EXPECT_EQ(-EIO, odsm_ds_update(e.h[0], &k, sizeof(k), &v, 8,
				       ODSM_DS_CRW));
	EXPECT_EQ(DS_READY, ((struct ds_bucket *)(uintptr_t)
			     (odsm_addr_of(e.seg.addr) + DS_HDR))[at2].flag);
	gl = sizeof(got);
	EXPECT_EQ(0, odsm_ds_find(e.h[0], &k, sizeof(k), got, &gl,
				  ODSM_DS_CRW));
	EXPECT_EQ(0, memcmp(got, &k, 8));
	/* and nothing waits: the update and the delete go at once */
	EXPECT_EQ(0, odsm_ds_update(e.h[0], &k, sizeof(k), &v, 8,
				    ODSM_DS_CRW));
	EXPECT_EQ(0, odsm_ds_delete(e.h[0], &k, sizeof(k), ODSM_DS_CRW));
	env_down(&e);
}

/*
 * A push whose element write fails still publishes its slot, marked as no
 * element: the pop that reaches it frees it with -EBADMSG, and the queue
 * goes on.  Before, the slot stayed reserved and unpublished: the next
 * CRW push timed out waiting behind it, and so did every one after.
 */
TEST(queue_failed_push_publishes)
{
	struct odsm_ds_queue *q;
	struct odsm_ds_seg qs;
	uint8_t got[ODSM_DS_VAL_MAX];
	uint64_t v = 7;
	struct env e;
	size_t gl;

	ASSERT_EQ(0, env_up(&e, 16));
	ASSERT_EQ(0, odsm_ds_queue_create(e.d, 0, 4, &qs));
	ASSERT_EQ(0, odsm_ds_queue_open(&qs, ODSM_DS_ONESIDED, &any, &q));
	fk.fail_write = -EIO;
	EXPECT_EQ(-EIO, odsm_ds_push(q, &v, sizeof(v), ODSM_DS_CRW));
	EXPECT_EQ(0, odsm_ds_push(q, &v, sizeof(v), ODSM_DS_CRW));
	gl = sizeof(got);
	EXPECT_EQ(-EBADMSG, odsm_ds_pop(q, got, &gl, ODSM_DS_CRW));
	gl = sizeof(got);
	EXPECT_EQ(0, odsm_ds_pop(q, got, &gl, ODSM_DS_CRW));
	EXPECT_EQ(sizeof(v), gl);
	EXPECT_EQ(0, memcmp(got, &v, sizeof(v)));
	gl = sizeof(got);
	EXPECT_EQ(-ENOENT, odsm_ds_pop(q, got, &gl, ODSM_DS_CRW));
	odsm_ds_queue_close(q);
	odsm_trust_drop(&qs.t);
	env_down(&e);
}

TEST_HARNESS_MAIN
