// SPDX-License-Identifier: GPL-2.0
/*
 * libodsm's distributed hash table (odsm_ds.h) on every node at once:
 * every node holds a segment of one table, entrusted to a trustee of its
 * own delegation runtime, and 2 threads per node run operations on keys
 * of every segment, each operation one-sided or as a request to the
 * segment's owner, the two variants mixed on the same buckets.
 *
 *   crw_mixed       at CRW (anything concurrent): each thread inserts its
 *                   keys, finds each back at once, updates half, deletes
 *                   a quarter, while every other thread of every node
 *                   does the same; then every node checks every key of
 *                   every node: found with its last value, or -ENOENT
 *                   when deleted.  Keys every node inserts at the same
 *                   time: exactly one insert of each succeeds at CRW.
 *   phasal          CW then CR, phases apart by a barrier: inserts,
 *                   updates and deletes at CW on every node, then finds at
 *                   CR of every key; the same shared keys inserted by
 *                   every node at CW: at least one insert succeeds (CW
 *                   promises no more, see odsm_ds.h) and the value found
 *                   is one of theirs.
 *   bad_input       oversized key and value (-E2BIG, nothing stored), a
 *                   full segment (-ENOSPC, every key inserted before it
 *                   still found, the refused one not), -EEXIST, -ENOENT,
 *                   and malformed requests refused by the trustee
 *                   (-EINVAL, counted in bad_requests).
 *   queue_crw       a queue on node 0 that one producer and one consumer
 *                   thread of every node push and pop at once at CRW,
 *                   alternating one-sided and requests, the ring small
 *                   enough to be found full (-ENOSPC: pushed again) and
 *                   empty (-ENOENT): every element popped exactly once
 *                   over all consumers, each producer's elements in its
 *                   order at each consumer.
 *   queue_phasal    the same at CW (pushes only) then CR (pops only).
 *   queue_bad       a queue of 4: -E2BIG, -ENOENT when empty, -ENOSPC
 *                   when full with every element still popped in order,
 *                   -ENOBUFS, malformed requests refused.
 *   auto_choice     a table opened AUTO calibrates against another
 *                   node's segment: each (operation, promise) runs as the
 *                   model says for those costs; a request latency set far
 *                   above them switches every operation to one-sided, and
 *                   the operations still give the right answers.
 *
 * Words 340..359 of each directory.  Each test runs in a child of its
 * own, with a segment of its own per node, and meets the other nodes
 * more often than the rig barrier's ids would allow: ds_bar() counts
 * every barrier of the program in one word of node 0 instead.
 */
#include <pthread.h>
#include "odsm_cluster.h"
#include "odsm_ds.h"

#define THREADS		2
#define KEYS		32	/* per thread per phase, up to 3 nodes */
#define SHARED		16	/* keys every node inserts at once */
#define BUCKETS		1024	/* per segment */
#define SECS		240

/*
 * Keys per thread per phase: every node checks every node's, so the work
 * grows with the square of the nodes; past 3 the cluster's keys stay
 * near 3 nodes' (8 guests, a quarter of a host core each, took 80 s with
 * KEYS each).  A multiple of 4, so every fate and both handles occur.
 */
static unsigned int keys(void)
{
	return C.nodes <= 3 ? KEYS : (KEYS * 3 / C.nodes) & ~3U;
}

#define W_DS_SEG	340	/* node K: 340..343 its segment */
#define W_DS_WON	344	/* node 0: 344 + phase: shared inserts won */
#define W_DS_Q		348	/* node 0: 348..351 the queue */
#define W_DS_QDONE	352	/* node 0: producers done (CRW test) */
#define W_DS_QLOG	354	/* node K: 354 + 2 * phase-ish: its log, count */
#define W_DS_MYBAR	358	/* node K: the barriers it has passed */
#define W_DS_BAR	359	/* node 0: arrivals at every barrier */

enum { PH_CRW = 1, PH_CW = 2, PH_BAD = 3 };

FIXTURE(ds)
{
	struct odsm_deleg_arena a;
	struct odsm_deleg *d;
	struct odsm_ds_seg segs[ODSM_MAX_NODES];
	struct odsm_ds_hash *os, *rq;	/* one-sided, request */
};

/*
 * The k-th barrier of this program on this node (k kept in this node's
 * directory: each test is a child process of its own) waits until node
 * 0's word has k arrivals of every node.
 */
static int ds_bar(void)
{
	uint64_t k = 0;
	int ret = c_dir_wait(0, SECS);

	ret = ret ?: c_get(C.self, W_DS_MYBAR, &k);
	ret = ret ?: c_put(C.self, W_DS_MYBAR, ++k);
	ret = ret ?: odsm_fetch_add(c_word(0, W_DS_BAR), 1, NULL);
	return ret ?: c_poll(0, W_DS_BAR, k * C.nodes, SECS, NULL);
}

/* ---- the table on every node ------------------------------------------ */

static int put_seg_at(unsigned int word, const struct odsm_ds_seg *s)
{
	int ret = c_put(C.self, word + 1,
			s->buckets | (uint64_t)s->node << 32);

	ret = ret ?: c_put(C.self, word + 2, s->t.arena);
	ret = ret ?: c_put(C.self, word + 3,
			   s->t.cell | (uint64_t)s->t.gen << 32);
	return ret ?: c_put(C.self, word, s->addr);
}

static int put_seg(const struct odsm_ds_seg *s)
{
	return put_seg_at(W_DS_SEG, s);
}

static int get_seg_at(unsigned int node, unsigned int word,
		      struct odsm_ds_seg *s)
{
	uint64_t w[3];
	int ret = c_poll(node, word, 0, SECS, &s->addr);

	ret = ret ?: c_get(node, word + 1, &w[0]);
	ret = ret ?: c_get(node, word + 2, &w[1]);
	ret = ret ?: c_get(node, word + 3, &w[2]);
	if (ret)
		return ret;
	s->buckets = (uint32_t)w[0];
	s->node = (uint32_t)(w[0] >> 32);
	s->t.arena = w[1];
	s->t.cell = (uint32_t)w[2];
	s->t.gen = (uint32_t)(w[2] >> 32);
	return 0;
}

static int get_seg(unsigned int node, struct odsm_ds_seg *s)
{
	return get_seg_at(node, W_DS_SEG, s);
}

/* fixed costs that keep the fixed-mode tables from calibrating */
static const struct odsm_ds_costs any_costs = {
	.read_ns = 1, .write_ns = 1, .cas_ns = 1, .fao_ns = 1, .req_ns = 1,
};

FIXTURE_SETUP(ds)
{
	struct odsm_deleg_config cfg = { .trustees = 1, .clients = 32 };
	unsigned int i;

	C_BEGIN();
	ASSERT_EQ(0, odsm_ds_register());
	ASSERT_EQ(0, odsm_deleg_arena_heap(&self->a,
					   odsm_deleg_arena_size(&cfg)));
	ASSERT_EQ(0, odsm_deleg_start(&self->a, &cfg, &self->d));
	ASSERT_EQ(0, odsm_ds_seg_create(self->d, 0, BUCKETS,
					&self->segs[C.self]));
	EXPECT_EQ(C.self, self->segs[C.self].node);
	ASSERT_EQ(0, put_seg(&self->segs[C.self]));
	/* every node published this test's segment */
	ASSERT_EQ(0, ds_bar());
	for (i = 0; i < C.nodes; i++)
		ASSERT_EQ(0, get_seg(i, &self->segs[i]));
	ASSERT_EQ(0, odsm_ds_hash_open(self->segs, C.nodes, ODSM_DS_ONESIDED,
				       &any_costs, &self->os));
	ASSERT_EQ(0, odsm_ds_hash_open(self->segs, C.nodes, ODSM_DS_REQUEST,
				       &any_costs, &self->rq));
}

FIXTURE_TEARDOWN(ds)
{
	/* the runtime and the segment stay until every node is done */
	if (!self->d)
		return;
	EXPECT_EQ(0, ds_bar());
	odsm_ds_hash_close(self->os);
	odsm_ds_hash_close(self->rq);
	EXPECT_EQ(0, odsm_trust_drop(&self->segs[C.self].t));
	odsm_deleg_stop(self->d);
	EXPECT_EQ(0, odsm_deleg_arena_heap_free(&self->a));
}

/* ---- keys and values ------------------------------------------------------ */

struct key {
	uint64_t id;
	uint32_t tag;		/* 12 bytes: not a multiple of 8 */
} __attribute__((packed));

static struct key key_of(unsigned int node, unsigned int phase,
			 unsigned int thread, unsigned int i)
{
	struct key k = {
		.id = (uint64_t)node << 40 | (uint64_t)phase << 32 |
		      thread << 16 | i,
		.tag = 0x6b657921,
	};
	return k;
}

/* a value of 1..32 bytes that depends on the key and its version */
static size_t val_of(const struct key *k, unsigned int version, uint8_t *v)
{
	size_t n = 1 + (k->id * 7 + version) % ODSM_DS_VAL_MAX, i;

	for (i = 0; i < n; i++)
		v[i] = (uint8_t)(k->id * 31 + i * 13 + version * 101);
	return n;
}

/* what each thread's key ends as: 0 gone, else the version to find */
static unsigned int fate(unsigned int i)
{
	if (i % 4 == 3)
		return 0;		/* deleted */
	return i % 2 ? 2 : 1;	/* odd: updated */
}

struct worker {
	pthread_t tid;
	struct odsm_ds_hash *h[2];	/* [0] one-sided, [1] request */
	unsigned int id, phase;
	int err;
	unsigned int line, bad;
};

#define CK(expr) do { int __e = (expr); \
	if (__e && !w->err) { w->err = __e; w->line = __LINE__; } \
	if (__e) goto out; } while (0)
#define BAD(cond) do { if (cond) { w->bad++; \
	fprintf(stderr, "# node %u thread %u: line %d: %s\n", C.self, \
		w->id, __LINE__, #cond); } } while (0)

/* Variant alternates with the key and the step: both meet every bucket. */
static void *crw_worker(void *arg)
{
	struct worker *w = arg;
	uint8_t v[ODSM_DS_VAL_MAX], got[ODSM_DS_VAL_MAX];
	unsigned int i;
	struct key k;
	size_t n, gl;

	for (i = 0; i < keys(); i++) {
		k = key_of(C.self, w->phase, w->id, i);
		n = val_of(&k, 1, v);
		CK(odsm_ds_insert(w->h[i % 2], &k, sizeof(k), v, n,
				  ODSM_DS_CRW));
		gl = sizeof(got);
		CK(odsm_ds_find(w->h[(i + 1) % 2], &k, sizeof(k), got, &gl,
				ODSM_DS_CRW));
		BAD(gl != n || memcmp(got, v, n));
		BAD(odsm_ds_insert(w->h[(i + 1) % 2], &k, sizeof(k), v, n,
				   ODSM_DS_CRW) != -EEXIST);
	}
	for (i = 0; i < keys(); i++) {
		k = key_of(C.self, w->phase, w->id, i);
		if (fate(i) == 2) {
			n = val_of(&k, 2, v);
			CK(odsm_ds_update(w->h[(i / 2) % 2], &k, sizeof(k), v,
					  n, ODSM_DS_CRW));
			gl = sizeof(got);
			CK(odsm_ds_find(w->h[(i / 2 % 2) ^ 1], &k, sizeof(k),
					got, &gl, ODSM_DS_CRW));
			BAD(gl != n || memcmp(got, v, n));
		} else if (!fate(i)) {
			CK(odsm_ds_delete(w->h[(i / 4) % 2], &k, sizeof(k),
					  ODSM_DS_CRW));
			gl = sizeof(got);
			BAD(odsm_ds_find(w->h[(i / 4 % 2) ^ 1], &k, sizeof(k),
					 got, &gl, ODSM_DS_CRW) != -ENOENT);
			BAD(odsm_ds_delete(w->h[i / 4 % 2], &k, sizeof(k),
					   ODSM_DS_CRW) != -ENOENT);
		}
	}
out:
	return NULL;
}

/* CW: inserts, updates, deletes, with no find among them */
static void *cw_worker(void *arg)
{
	struct worker *w = arg;
	uint8_t v[ODSM_DS_VAL_MAX];
	unsigned int i;
	struct key k;
	size_t n;

	for (i = 0; i < keys(); i++) {
		k = key_of(C.self, w->phase, w->id, i);
		n = val_of(&k, 1, v);
		CK(odsm_ds_insert(w->h[i % 2], &k, sizeof(k), v, n,
				  ODSM_DS_CW));
	}
	for (i = 0; i < keys(); i++) {
		k = key_of(C.self, w->phase, w->id, i);
		if (fate(i) == 2) {
			n = val_of(&k, 2, v);
			CK(odsm_ds_update(w->h[(i / 2) % 2], &k, sizeof(k), v,
					  n, ODSM_DS_CW));
		} else if (!fate(i)) {
			CK(odsm_ds_delete(w->h[(i / 4) % 2], &k, sizeof(k),
					  ODSM_DS_CW));
		}
	}
out:
	return NULL;
}

static void run_workers(struct __test_metadata *_metadata,
			struct odsm_ds_hash *os, struct odsm_ds_hash *rq,
			unsigned int phase, void *(*fn)(void *))
{
	struct worker ws[THREADS];
	unsigned int i;

	for (i = 0; i < THREADS; i++) {
		ws[i] = (struct worker){ .h = { os, rq }, .id = i,
					 .phase = phase };
		ASSERT_EQ(0, pthread_create(&ws[i].tid, NULL, fn, &ws[i]));
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(ws[i].tid, NULL);
		EXPECT_EQ(0, ws[i].err) {
			TH_LOG("thread %u: %s at line %u", i,
			       odsm_strerror(ws[i].err), ws[i].line);
		}
		EXPECT_EQ(0U, ws[i].bad);
	}
}

/* Every key of every node of phase: its last value, or gone. */
static void check_all(struct __test_metadata *_metadata,
		      struct odsm_ds_hash *os, struct odsm_ds_hash *rq,
		      unsigned int phase, enum odsm_ds_promise p)
{
	uint8_t v[ODSM_DS_VAL_MAX], got[ODSM_DS_VAL_MAX];
	unsigned int node, t, i, bad = 0, n_found = 0;
	struct key k;
	size_t n, gl;
	int ret;

	for (node = 0; node < C.nodes; node++) {
		for (t = 0; t < THREADS; t++) {
			for (i = 0; i < keys(); i++) {
				k = key_of(node, phase, t, i);
				gl = sizeof(got);
				ret = odsm_ds_find((i + node) % 2 ? rq : os, &k,
						   sizeof(k), got, &gl, p);
				if (!fate(i)) {
					bad += ret != -ENOENT;
					continue;
				}
				n = val_of(&k, fate(i), v);
				if (ret || gl != n || memcmp(got, v, n)) {
					bad++;
					TH_LOG("node %u thread %u key %u: %s, %zu bytes",
					       node, t, i, odsm_strerror(ret), gl);
				}
				n_found++;
			}
		}
	}
	EXPECT_EQ(0U, bad);
	TH_LOG("node %u: %u keys of %u nodes found with their values, the deleted ones gone (%s)",
	       C.self, n_found, C.nodes, odsm_ds_promise_name(p));
}

/*
 * Every node inserts the same SHARED keys at promise p at once, value its
 * node id; the wins are added up on node 0.  Returns after the barrier.
 */
static void shared_inserts(struct __test_metadata *_metadata,
			   struct odsm_ds_hash *os, struct odsm_ds_hash *rq,
			   unsigned int phase, enum odsm_ds_promise p)
{
	uint8_t v = (uint8_t)C.self;
	unsigned int i, won = 0;
	struct key k;
	int ret;

	ASSERT_EQ(0, ds_bar());
	for (i = 0; i < SHARED; i++) {
		k = key_of(0xff, phase, 0xff, i);
		ret = odsm_ds_insert((i + C.self) % 2 ? rq : os, &k,
				     sizeof(k), &v, 1, p);
		if (!ret)
			won++;
		else
			EXPECT_EQ(-EEXIST, ret);
	}
	ASSERT_EQ(0, odsm_fetch_add(c_word(0, W_DS_WON + phase), won, NULL));
	ASSERT_EQ(0, ds_bar());
}

TEST_F_TIMEOUT(ds, crw_mixed, 300)
{
	struct odsm_ds_stats s0, s1;
	uint64_t total = 0;

	if (!self->d)	/* the fixture skipped: no cluster */
		SKIP(return, "this node joined no cluster");

	odsm_ds_stats(&s0);
	ASSERT_EQ(0, ds_bar());
	run_workers(_metadata, self->os, self->rq, PH_CRW, crw_worker);
	shared_inserts(_metadata, self->os, self->rq, PH_CRW, ODSM_DS_CRW);
	check_all(_metadata, self->os, self->rq, PH_CRW, ODSM_DS_CRW);
	ASSERT_EQ(0, c_get(0, W_DS_WON + PH_CRW, &total));
	/* CRW insert: exactly one of the racing inserts of a key wins */
	EXPECT_EQ((uint64_t)SHARED, total);
	odsm_ds_stats(&s1);
	/* both variants ran, and this node's trustee served requests */
	EXPECT_LT(s0.onesided, s1.onesided);
	EXPECT_LT(s0.requests, s1.requests);
	EXPECT_LT(s0.served, s1.served);
	TH_LOG("node %u: %llu one-sided, %llu requests sent, %llu served, %llu waits, %llu retries",
	       C.self, (unsigned long long)(s1.onesided - s0.onesided),
	       (unsigned long long)(s1.requests - s0.requests),
	       (unsigned long long)(s1.served - s0.served),
	       (unsigned long long)(s1.waits - s0.waits),
	       (unsigned long long)(s1.retries - s0.retries));
}

TEST_F_TIMEOUT(ds, phasal, 300)
{
	uint8_t got[ODSM_DS_VAL_MAX];
	uint64_t total = 0;
	unsigned int i;
	struct key k;
	size_t gl;

	if (!self->d)	/* the fixture skipped: no cluster */
		SKIP(return, "this node joined no cluster");

	ASSERT_EQ(0, ds_bar());
	run_workers(_metadata, self->os, self->rq, PH_CW, cw_worker);
	shared_inserts(_metadata, self->os, self->rq, PH_CW, ODSM_DS_CW);
	/* the writers' phase is over: finds at CR */
	check_all(_metadata, self->os, self->rq, PH_CW, ODSM_DS_CR);
	ASSERT_EQ(0, c_get(0, W_DS_WON + PH_CW, &total));
	/* CW insert: racing inserts of one key may both win, never none */
	EXPECT_LE((uint64_t)SHARED, total);
	EXPECT_GE((uint64_t)SHARED * C.nodes, total);
	for (i = 0; i < SHARED; i++) {
		k = key_of(0xff, PH_CW, 0xff, i);
		gl = sizeof(got);
		EXPECT_EQ(0, odsm_ds_find(i % 2 ? self->rq : self->os, &k,
					  sizeof(k), got, &gl, ODSM_DS_CR));
		EXPECT_EQ(1U, gl);
		EXPECT_GT(C.nodes, got[0]);
	}
	TH_LOG("node %u: CW shared inserts: %llu wins for %u keys on %u nodes",
	       C.self, (unsigned long long)total, SHARED, C.nodes);
}

/* Fill a one-segment table of this node until -ENOSPC; nothing lost. */
static void fill(struct __test_metadata *_metadata, struct odsm_deleg *d,
		 int request)
{
	struct odsm_ds_hash *h;
	struct odsm_ds_seg s;
	uint8_t v[4], got[ODSM_DS_VAL_MAX];
	unsigned int i, n = 0;
	struct key k;
	size_t gl;
	int ret;

	ASSERT_EQ(0, odsm_ds_seg_create(d, 0, 8, &s));
	ASSERT_EQ(0, odsm_ds_hash_open(&s, 1, request ? ODSM_DS_REQUEST :
				       ODSM_DS_ONESIDED, &any_costs, &h));
	for (i = 0; i < 9; i++) {
		k = key_of(C.self, PH_BAD, request, i);
		memcpy(v, &i, sizeof(v));
		ret = odsm_ds_insert(h, &k, sizeof(k), v, sizeof(v),
				     ODSM_DS_CRW);
		if (ret) {
			EXPECT_EQ(-ENOSPC, ret);
			break;
		}
		n++;
	}
	EXPECT_EQ(8U, n);
	for (i = 0; i <= n; i++) {
		k = key_of(C.self, PH_BAD, request, i);
		gl = sizeof(got);
		ret = odsm_ds_find(h, &k, sizeof(k), got, &gl, ODSM_DS_CRW);
		if (i == n) {
			EXPECT_EQ(-ENOENT, ret);	/* the refused one */
		} else {
			EXPECT_EQ(0, ret);
			EXPECT_EQ(4U, gl);
			EXPECT_EQ(0, memcmp(got, &i, 4));
		}
	}
	/* full: a delete leaves a tombstone, and the slot stays taken */
	k = key_of(C.self, PH_BAD, request, 0);
	EXPECT_EQ(0, odsm_ds_delete(h, &k, sizeof(k), ODSM_DS_CRW));
	k = key_of(C.self, PH_BAD, request, n);
	EXPECT_EQ(-ENOSPC, odsm_ds_insert(h, &k, sizeof(k), v, sizeof(v),
					  ODSM_DS_CRW));
	odsm_ds_hash_close(h);
	EXPECT_EQ(0, odsm_trust_drop(&s.t));
}

TEST_F_TIMEOUT(ds, bad_input, 300)
{
	uint8_t big[ODSM_DS_VAL_MAX + 1] = { 1 }, got[ODSM_DS_VAL_MAX];
	struct odsm_ds_stats s0, s1;
	struct key k = key_of(C.self, PH_BAD, 7, 7);
	uint8_t junk[56] = { 0 };
	size_t gl, rl;
	int r;

	if (!self->d)	/* the fixture skipped: no cluster */
		SKIP(return, "this node joined no cluster");

	ASSERT_EQ(0, ds_bar());
	for (r = 0; r < 2; r++) {
		struct odsm_ds_hash *h = r ? self->rq : self->os;

		EXPECT_EQ(-E2BIG, odsm_ds_insert(h, big, ODSM_DS_KEY_MAX + 1,
						 big, 1, ODSM_DS_CRW));
		EXPECT_EQ(-E2BIG, odsm_ds_insert(h, &k, sizeof(k), big,
						 sizeof(big), ODSM_DS_CRW));
		EXPECT_EQ(-EINVAL, odsm_ds_insert(h, &k, 0, big, 1,
						  ODSM_DS_CRW));
		EXPECT_EQ(-EINVAL, odsm_ds_insert(h, &k, sizeof(k), big, 1,
						  ODSM_DS_CR));
		gl = sizeof(got);
		EXPECT_EQ(-EINVAL, odsm_ds_find(h, &k, sizeof(k), got, &gl,
						ODSM_DS_CW));
		/* nothing was stored by the refusals */
		gl = sizeof(got);
		EXPECT_EQ(-ENOENT, odsm_ds_find(h, &k, sizeof(k), got, &gl,
						ODSM_DS_CRW));
		EXPECT_EQ(-ENOENT, odsm_ds_update(h, &k, sizeof(k), big, 1,
						  ODSM_DS_CRW));
		EXPECT_EQ(-ENOENT, odsm_ds_delete(h, &k, sizeof(k),
						  ODSM_DS_CRW));
		/* a find with too little room: -ENOBUFS, and the key stays */
		EXPECT_EQ(0, odsm_ds_insert(h, &k, sizeof(k), big, 8,
					    ODSM_DS_CRW));
		gl = 4;
		EXPECT_EQ(-ENOBUFS, odsm_ds_find(h, &k, sizeof(k), got, &gl,
						 ODSM_DS_CRW));
		EXPECT_EQ(0, odsm_ds_delete(h, &k, sizeof(k), ODSM_DS_CRW));
		fill(_metadata, self->d, r);
	}
	/* requests the trustee refuses: a short one, a bucket out of range */
	odsm_ds_stats(&s0);
	rl = 0;
	EXPECT_EQ(-EINVAL, odsm_deleg_apply(&self->segs[C.self].t,
					    odsm_deleg_op_id("odsm.ds.hash"),
					    junk, 8, NULL, &rl));
	junk[0] = ODSM_DS_INSERT;
	junk[2] = 4;			/* klen */
	memset(junk + 4, 0xff, 4);	/* start: far beyond the buckets */
	EXPECT_EQ(-EINVAL, odsm_deleg_apply(&self->segs[C.self].t,
					    odsm_deleg_op_id("odsm.ds.hash"),
					    junk, sizeof(junk), NULL, &rl));
	odsm_ds_stats(&s1);
	EXPECT_EQ(s0.bad_requests + 2, s1.bad_requests);
}

/* ---- the queue ------------------------------------------------------------ */

#define QP		40	/* elements each node's producer pushes */

static uint64_t elem_of(unsigned int node, unsigned int seq)
{
	return (uint64_t)(node + 1) << 32 | seq;
}

/* an element: its id, then bytes that depend on it (12..28 bytes) */
static size_t elem_bytes(uint64_t id, uint8_t *v)
{
	size_t n = 12 + id % 17, i;

	memcpy(v, &id, 8);
	for (i = 8; i < n; i++)
		v[i] = (uint8_t)(id * 7 + i);
	return n;
}

static int elem_ok(const uint8_t *v, size_t n, uint64_t *id)
{
	uint8_t w[ODSM_DS_VAL_MAX];

	if (n < 8)
		return 0;
	memcpy(id, v, 8);
	return elem_bytes(*id, w) == n && !memcmp(v, w, n);
}

struct qlog {
	uint64_t n;
	uint64_t id[];
};

struct qworker {
	pthread_t tid;
	struct odsm_ds_queue *q[2];
	enum odsm_ds_promise p;
	struct qlog *log;	/* consumers: what they popped, in order */
	unsigned int full, empty, bad;
	int err, line;
};

#define QCK(expr) do { int __e = (expr); \
	if (__e && !w->err) { w->err = __e; w->line = __LINE__; } \
	if (__e) goto out; } while (0)

static void *producer(void *arg)
{
	struct qworker *w = arg;
	uint8_t v[ODSM_DS_VAL_MAX];
	unsigned int i;
	size_t n;
	int ret;

	for (i = 0; i < QP; i++) {
		n = elem_bytes(elem_of(C.self, i), v);
		for (;;) {
			ret = odsm_ds_queue_op(w->q[i % 2], ODSM_DS_PUSH, i % 2,
					       v, &n, w->p);
			if (ret != -ENOSPC)
				break;
			w->full++;
			c_sleep_ms(1);
		}
		QCK(ret);
	}
	if (w->p == ODSM_DS_CRW)
		QCK(odsm_fetch_add(c_word(0, W_DS_QDONE), 1, NULL));
out:
	return NULL;
}

/* pop until empty with every producer done (CRW) or just empty (CR) */
static void *consumer(void *arg)
{
	struct qworker *w = arg;
	uint8_t v[ODSM_DS_VAL_MAX];
	uint64_t id, done = 0, end = c_now_ms() + 1000ULL * SECS / 2;
	unsigned int i = 0, last_empty = 0;
	size_t n;
	int ret;

	for (;; i++) {
		n = sizeof(v);
		ret = odsm_ds_queue_op(w->q[i % 2], ODSM_DS_POP, i % 2, v, &n,
				       w->p);
		if (!ret) {
			last_empty = 0;
			if (!elem_ok(v, n, &id))
				w->bad++;
			else
				w->log->id[w->log->n++] = id;
			continue;
		}
		if (ret != -ENOENT)
			QCK(ret);
		w->empty++;
		if (w->p != ODSM_DS_CRW)
			break;
		/* empty after every producer finished: empty for good */
		if (last_empty)
			break;
		QCK(c_get(0, W_DS_QDONE, &done));
		if (done == C.nodes)
			last_empty = 1;
		else if (c_now_ms() > end)
			QCK(-ETIMEDOUT);	/* a producer never finished */
		else
			c_sleep_ms(1);
	}
out:
	return NULL;
}

/*
 * Every node's log read: each element of every producer popped exactly
 * once, and each producer's elements in its order within every log.
 */
static void check_logs(struct __test_metadata *_metadata, unsigned int word)
{
	unsigned int node, k, seen[ODSM_MAX_NODES][QP] = { { 0 } }, bad = 0;
	uint64_t addr, n, id, last[ODSM_MAX_NODES];
	struct qlog *l = malloc(sizeof(*l) + 8 * QP * ODSM_MAX_NODES);

	ASSERT_NE(NULL, l);
	for (node = 0; node < C.nodes; node++) {
		ASSERT_EQ(0, c_poll(node, word, 0, SECS, &addr));
		ASSERT_EQ(0, c_get(node, word + 1, &n));
		ASSERT_GE((uint64_t)QP * C.nodes, n);
		ASSERT_EQ(0, odsm_read(addr, l->id, 8 * n));
		memset(last, 0, sizeof(last));
		for (k = 0; k < n; k++) {
			unsigned int p = (unsigned int)(l->id[k] >> 32) - 1;
			unsigned int s = (uint32_t)l->id[k];

			id = l->id[k];
			if (p >= C.nodes || s >= QP) {
				bad++;
				continue;
			}
			seen[p][s]++;
			/* a producer's order, at this consumer */
			if (last[p] && id <= last[p])
				bad++;
			last[p] = id;
		}
	}
	for (node = 0; node < C.nodes; node++)
		for (k = 0; k < QP; k++)
			if (seen[node][k] != 1) {
				bad++;
				TH_LOG("element %u of node %u popped %u times",
				       k, node, seen[node][k]);
			}
	EXPECT_EQ(0U, bad);
	free(l);
}

/* this node's log into the heap, for every node to check */
static void publish_log(struct __test_metadata *_metadata, unsigned int word,
			const struct qlog *log)
{
	uint64_t g;

	ASSERT_EQ(0, odsm_alloc(8 * (log->n + 1), 8, 0, &g));
	memcpy(odsm_ptr(g), log->id, 8 * log->n);
	ASSERT_EQ(0, c_put(C.self, word + 1, log->n));
	ASSERT_EQ(0, c_put(C.self, word, g));
}

static void open_queue(struct __test_metadata *_metadata,
		       FIXTURE_DATA(ds) *self, uint32_t cap,
		       struct odsm_ds_seg *qs, struct odsm_ds_queue **q)
{
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_ds_queue_create(self->d, 0, cap, qs));
		ASSERT_EQ(0, put_seg_at(W_DS_Q, qs));
	}
	ASSERT_EQ(0, ds_bar());
	ASSERT_EQ(0, get_seg_at(0, W_DS_Q, qs));
	ASSERT_EQ(0, odsm_ds_queue_open(qs, ODSM_DS_ONESIDED, &any_costs,
					&q[0]));
	ASSERT_EQ(0, odsm_ds_queue_open(qs, ODSM_DS_REQUEST, &any_costs,
					&q[1]));
}

TEST_F_TIMEOUT(ds, queue_crw, 300)
{
	struct qworker pw, cw;
	struct odsm_ds_queue *q[2];
	struct odsm_ds_seg qs;

	if (!self->d)	/* the fixture skipped: no cluster */
		SKIP(return, "this node joined no cluster");

	open_queue(_metadata, self, 16, &qs, q);
	pw = (struct qworker){ .q = { q[0], q[1] }, .p = ODSM_DS_CRW };
	cw = pw;
	cw.log = calloc(1, sizeof(*cw.log) + 8 * QP * C.nodes);
	ASSERT_NE(NULL, cw.log);
	ASSERT_EQ(0, pthread_create(&cw.tid, NULL, consumer, &cw));
	ASSERT_EQ(0, pthread_create(&pw.tid, NULL, producer, &pw));
	pthread_join(pw.tid, NULL);
	pthread_join(cw.tid, NULL);
	EXPECT_EQ(0, pw.err) TH_LOG("producer: %s at %d",
				    odsm_strerror(pw.err), pw.line);
	EXPECT_EQ(0, cw.err) TH_LOG("consumer: %s at %d",
				    odsm_strerror(cw.err), cw.line);
	EXPECT_EQ(0U, cw.bad);
	TH_LOG("node %u: popped %llu, full %u times, empty %u times",
	       C.self, (unsigned long long)cw.log->n, pw.full, cw.empty);
	publish_log(_metadata, W_DS_QLOG, cw.log);
	ASSERT_EQ(0, ds_bar());
	check_logs(_metadata, W_DS_QLOG);
	free(cw.log);
	odsm_ds_queue_close(q[0]);
	odsm_ds_queue_close(q[1]);
}

TEST_F_TIMEOUT(ds, queue_phasal, 300)
{
	struct odsm_ds_queue *q[2];
	struct odsm_ds_seg qs;
	struct qworker w;

	if (!self->d)	/* the fixture skipped: no cluster */
		SKIP(return, "this node joined no cluster");

	/* room for every element: CW pushes never meet a full ring */
	open_queue(_metadata, self, QP * ODSM_MAX_NODES, &qs, q);
	w = (struct qworker){ .q = { q[0], q[1] }, .p = ODSM_DS_CW };
	producer(&w);
	EXPECT_EQ(0, w.err);
	EXPECT_EQ(0U, w.full);
	ASSERT_EQ(0, ds_bar());		/* the pushes' phase is over */
	w.p = ODSM_DS_CR;
	w.log = calloc(1, sizeof(*w.log) + 8 * QP * C.nodes);
	ASSERT_NE(NULL, w.log);
	consumer(&w);
	EXPECT_EQ(0, w.err);
	EXPECT_EQ(0U, w.bad);
	publish_log(_metadata, W_DS_QLOG + 2, w.log);
	ASSERT_EQ(0, ds_bar());
	check_logs(_metadata, W_DS_QLOG + 2);
	free(w.log);
	odsm_ds_queue_close(q[0]);
	odsm_ds_queue_close(q[1]);
}

TEST_F_TIMEOUT(ds, queue_bad, 300)
{
	uint8_t v[ODSM_DS_VAL_MAX + 1] = { 0 }, got[ODSM_DS_VAL_MAX];
	struct odsm_ds_stats s0, s1;
	struct odsm_ds_queue *q;
	struct odsm_ds_seg qs;
	uint8_t junk[36] = { 0 };
	unsigned int i, r;
	size_t n, rl;

	if (!self->d)	/* the fixture skipped: no cluster */
		SKIP(return, "this node joined no cluster");

	for (r = 0; r < 2; r++) {
		ASSERT_EQ(0, odsm_ds_queue_create(self->d, 0, 4, &qs));
		ASSERT_EQ(0, odsm_ds_queue_open(&qs, r ? ODSM_DS_REQUEST :
						ODSM_DS_ONESIDED, &any_costs,
						&q));
		n = sizeof(got);
		EXPECT_EQ(-ENOENT, odsm_ds_pop(q, got, &n, ODSM_DS_CRW));
		EXPECT_EQ(-E2BIG, odsm_ds_push(q, v, sizeof(v), ODSM_DS_CRW));
		EXPECT_EQ(-EINVAL, odsm_ds_push(q, v, 1, ODSM_DS_CR));
		for (i = 0; i < 4; i++) {
			v[0] = (uint8_t)i;
			EXPECT_EQ(0, odsm_ds_push(q, v, 1 + i, ODSM_DS_CRW));
		}
		v[0] = 9;
		EXPECT_EQ(-ENOSPC, odsm_ds_push(q, v, 1, ODSM_DS_CRW));
		/* every element, in order; the refused one never came in */
		for (i = 0; i < 4; i++) {
			n = i == 3 ? 2 : sizeof(got);
			if (i == 3) {
				/* too little room: told the length */
				EXPECT_EQ(-ENOBUFS, odsm_ds_pop(q, got, &n,
								ODSM_DS_CRW));
				EXPECT_EQ(4U, n);
				continue;
			}
			EXPECT_EQ(0, odsm_ds_pop(q, got, &n, ODSM_DS_CRW));
			EXPECT_EQ(1 + i, n);
			EXPECT_EQ(i, got[0]);
		}
		n = sizeof(got);
		EXPECT_EQ(-ENOENT, odsm_ds_pop(q, got, &n, ODSM_DS_CRW));
		/* the ring goes round */
		EXPECT_EQ(0, odsm_ds_push(q, v, 1, ODSM_DS_CRW));
		n = sizeof(got);
		EXPECT_EQ(0, odsm_ds_pop(q, got, &n, ODSM_DS_CRW));
		EXPECT_EQ(9, got[0]);
		odsm_ds_queue_close(q);
		EXPECT_EQ(0, odsm_trust_drop(&qs.t));
	}
	/* malformed requests: short, an op of the table's, a long element */
	ASSERT_EQ(0, odsm_ds_queue_create(self->d, 0, 4, &qs));
	odsm_ds_stats(&s0);
	rl = 0;
	EXPECT_EQ(-EINVAL, odsm_deleg_apply(&qs.t,
					    odsm_deleg_op_id("odsm.ds.queue"),
					    junk, 8, NULL, &rl));
	junk[0] = ODSM_DS_INSERT;
	EXPECT_EQ(-EINVAL, odsm_deleg_apply(&qs.t,
					    odsm_deleg_op_id("odsm.ds.queue"),
					    junk, sizeof(junk), NULL, &rl));
	junk[0] = ODSM_DS_PUSH;
	junk[2] = ODSM_DS_VAL_MAX + 1;
	EXPECT_EQ(-EINVAL, odsm_deleg_apply(&qs.t,
					    odsm_deleg_op_id("odsm.ds.queue"),
					    junk, sizeof(junk), NULL, &rl));
	odsm_ds_stats(&s1);
	EXPECT_EQ(s0.bad_requests + 3, s1.bad_requests);
	EXPECT_EQ(0, odsm_trust_drop(&qs.t));
}

TEST_F_TIMEOUT(ds, auto_choice, 300)
{
	struct odsm_ds_costs c, slow;
	struct odsm_ds_hash *h;
	unsigned int op, p;
	uint8_t v[8] = "auto", got[ODSM_DS_VAL_MAX];
	struct key k = key_of(C.self, PH_BAD, 9, 9);
	size_t gl;
	char txt[256];

	if (!self->d)	/* the fixture skipped: no cluster */
		SKIP(return, "this node joined no cluster");

	ASSERT_EQ(0, ds_bar());
	ASSERT_EQ(0, odsm_ds_hash_open(self->segs, C.nodes, ODSM_DS_AUTO,
				       NULL, &h));
	odsm_ds_get_costs(h, &c);
	EXPECT_EQ(1ULL, c.gen);
	EXPECT_LT(0.0, c.read_ns);
	EXPECT_LT(0.0, c.req_ns);
	ASSERT_EQ(0, odsm_ds_costs_format(&c, txt, sizeof(txt)));
	TH_LOG("node %u calibrated against another node:\n%s", C.self, txt);
	/* the table's operations; push and pop are the queue's */
	for (op = 0; op <= ODSM_DS_DELETE; op++)
		for (p = 0; p < ODSM_DS_NR_PROMISES; p++)
			EXPECT_EQ(odsm_ds_choose(&c, op, p),
				  odsm_ds_variant(h, op, p));
	EXPECT_EQ(-EINVAL, odsm_ds_variant(h, ODSM_DS_PUSH, ODSM_DS_CRW));
	/* the owner got slow: everything goes one-sided */
	slow = c;
	slow.req_ns = 1e9;
	slow.gen++;
	odsm_ds_set_costs(h, &slow);
	for (op = 0; op <= ODSM_DS_DELETE; op++)
		EXPECT_EQ(0, odsm_ds_variant(h, op, ODSM_DS_CRW));
	/* and fast: everything a request */
	slow.req_ns = 0;
	odsm_ds_set_costs(h, &slow);
	for (op = 0; op <= ODSM_DS_DELETE; op++)
		EXPECT_EQ(1, odsm_ds_variant(h, op, ODSM_DS_CRW));
	EXPECT_EQ(-EINVAL, odsm_ds_variant(h, ODSM_DS_FIND, ODSM_DS_CW));
	/* a calibration again: the next generation, decided again */
	ASSERT_EQ(0, odsm_ds_calibrate(h, (C.self + 1) % C.nodes, 16, &c));
	EXPECT_EQ(slow.gen + 1, c.gen);
	for (op = 0; op <= ODSM_DS_DELETE; op++)
		EXPECT_EQ(odsm_ds_choose(&c, op, ODSM_DS_CRW),
			  odsm_ds_variant(h, op, ODSM_DS_CRW));
	EXPECT_EQ(0, odsm_ds_insert(h, &k, sizeof(k), v, sizeof(v),
				    ODSM_DS_CRW));
	gl = sizeof(got);
	EXPECT_EQ(0, odsm_ds_find(h, &k, sizeof(k), got, &gl, ODSM_DS_CRW));
	EXPECT_EQ(sizeof(v), gl);
	EXPECT_EQ(0, odsm_ds_delete(h, &k, sizeof(k), ODSM_DS_CRW));
	odsm_ds_hash_close(h);
}

TEST_HARNESS_MAIN
