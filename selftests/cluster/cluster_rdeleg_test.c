// SPDX-License-Identifier: GPL-2.0
/*
 * libodsm's delegation across nodes, run on every node at once: the same
 * calls as on one node (odsm_deleg_apply, _apply_then, _launch,
 * _apply_with, entrust), on handles whose runtime is on another node, so
 * that the module carries their batches (ODSM_IOC_DELEG_CALL) and the
 * runtime's gateway relays them to its trustees.
 *
 * Nodes 0 and 1 each run a runtime of two trustees, with a counter
 * entrusted to trustee 0 and a map to trustee 1; node 1 also entrusts to
 * node 0's runtime a counter it allocated in node 0's partition (an
 * entrust across nodes).  Client threads on every node then, on all five
 * objects (on their own node and on the other):
 *
 *   - queue increments with apply_then, batched, and check that the
 *     completions come in issue order and that the values they return
 *     grow (one client's requests to one trustee run in issue order);
 *   - apply increments one at a time (a batch each: the module's latency
 *     path), launch one (a worker of the trustee's node applies it), and
 *     on node 0's counter apply_with an argument that lives on node 0;
 *   - insert their keys into both maps with apply_then, then read every
 *     one back.
 *
 * The owners then check the totals and the maps' sizes, exact; and the
 * batching shows in the module's counters (requests per batch).  What
 * is brought to the trustee's node first: a box of another node entrusted
 * (node 1's own box to node 0's runtime, through its gateway; node 0's
 * box to node 1's runtime, by node 1 itself) keeps its bytes and its
 * object is on the trustee's node after; an apply_with argument of
 * another node is read where the trustee runs (both ways).  And a revoke:
 * an object with a reference nobody will return ends at once, every
 * handle of it -ESTALE.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <sys/wait.h>
#include "odsm_cluster.h"
#include <linux/odsm_deleg.h>

#define THREADS		2	/* client threads per node */
#define THEN_INCS	150	/* apply_then increments per thread per counter */
#define SYNC_INCS	10	/* apply increments per thread per counter */
#define MAP_KEYS	24	/* keys per thread per map */
#define MAP_CAP		1024	/* a map's slots (open addressing) */
#define WITH_ADD	5	/* what an apply_with adds */

#define W_RD		280	/* node K (0, 1): 280 its runtime's address */
#define W_RD_CTR	281	/* ... 281/282 its counter's handle */
#define W_RD_MAP	283	/* ... 283/284 its map's handle */
#define W_RD_XCTR	285	/* node 1: 285/286 its counter on node 0 */
#define W_RD_ARG	287	/* node 0: the apply_with argument */
#define W_RD_K		288	/* node 0: 288/289 the doomed runtime's counter */
#define W_RD_KGO	290	/* node 1: 1 once its launch is out */
#define W_RD_DROP	291	/* node 1: 1 once it dropped its node-0 counter */
#define B_HOST		1
#define B_RD		14	/* .. 18 (cluster_deleg_test has 20 .. 24) */
#define SECS		240

/* the objects: 0 node 0's counter, 1 node 0's map, 2 node 1's counter,
 * 3 node 1's map, 4 node 1's counter on node 0
 */
#define NOBJ		5
static const bool is_map[NOBJ] = { false, true, false, true, false };

struct map {
	uint64_t n;
	struct { uint64_t k, v; } e[MAP_CAP];
};

static uint64_t op_inc, op_get, op_put, op_lookup, op_count, op_linc,
		op_with, op_echo;

FIXTURE(cl)
{
	int unused;
};

FIXTURE_SETUP(cl)
{
}

FIXTURE_TEARDOWN(cl)
{
}

/* ---- the operations (registered on every node: same ids) -------------- */

static int inc(void *obj, const void *arg, size_t len, void *ret,
	       size_t *rl)
{
	uint64_t *c = obj, d;

	if (len != sizeof(d) || *rl < sizeof(*c))
		return -EINVAL;
	memcpy(&d, arg, sizeof(d));
	*c += d;
	memcpy(ret, c, sizeof(*c));
	*rl = sizeof(*c);
	return 0;
}

static int get(void *obj, const void *arg, size_t len, void *ret, size_t *rl)
{
	if (*rl < sizeof(uint64_t))
		return -EINVAL;
	memcpy(ret, obj, sizeof(uint64_t));
	*rl = sizeof(uint64_t);
	return 0;
}

/* arg: key, value; 0, or -EEXIST / -ENOSPC */
static int put(void *obj, const void *arg, size_t len, void *ret, size_t *rl)
{
	struct map *m = obj;
	uint64_t kv[2], i, h;

	*rl = 0;
	if (len != sizeof(kv))
		return -EINVAL;
	memcpy(kv, arg, sizeof(kv));
	if (!kv[0])
		return -EINVAL;
	for (i = 0; i < MAP_CAP; i++) {
		h = (kv[0] * 0x9e3779b97f4a7c15ULL + i) % MAP_CAP;
		if (m->e[h].k == kv[0])
			return -EEXIST;
		if (!m->e[h].k) {
			m->e[h].k = kv[0];
			m->e[h].v = kv[1];
			m->n++;
			return 0;
		}
	}
	return -ENOSPC;
}

static int lookup(void *obj, const void *arg, size_t len, void *ret,
		  size_t *rl)
{
	struct map *m = obj;
	uint64_t k, i, h;

	if (len != sizeof(k) || *rl < sizeof(uint64_t))
		return -EINVAL;
	memcpy(&k, arg, sizeof(k));
	for (i = 0; i < MAP_CAP && k; i++) {
		h = (k * 0x9e3779b97f4a7c15ULL + i) % MAP_CAP;
		if (!m->e[h].k)
			break;
		if (m->e[h].k == k) {
			memcpy(ret, &m->e[h].v, sizeof(uint64_t));
			*rl = sizeof(uint64_t);
			return 0;
		}
	}
	*rl = 0;
	return -ENOENT;
}

static int count(void *obj, const void *arg, size_t len, void *ret,
		 size_t *rl)
{
	return get(obj, arg, len, ret, rl);	/* n is the first word */
}

/* launch: obj is the handle; the worker applies to it (may block) */
static int linc(void *obj, const void *arg, size_t len, void *ret,
		size_t *rl)
{
	return odsm_deleg_apply(obj, op_inc, arg, len, ret, rl);
}

/* apply_with: the argument is read in place where the trustee runs */
static int with(void *obj, const void *arg, size_t len, void *ret,
		size_t *rl)
{
	return inc(obj, arg, len, ret, rl);
}

/* launch: a worker naps on it; its runtime is killed meanwhile */
static int nap(void *obj, const void *arg, size_t len, void *ret, size_t *rl)
{
	*rl = 0;
	sleep(30);
	return 0;
}

static uint64_t op_nap;

/* the argument back, and where the trustee read it (its node's or not) */
static int echo(void *obj, const void *arg, size_t len, void *ret,
		size_t *rl)
{
	uint64_t out[2] = { 0, odsm_is_local((uintptr_t)arg) };

	if (len != 8 || *rl < sizeof(out))
		return -EINVAL;
	memcpy(out, arg, 8);
	memcpy(ret, out, sizeof(out));
	*rl = sizeof(out);
	return 0;
}

static int reg_ops(void)
{
	int ret = odsm_deleg_register("rd.inc", inc, &op_inc);

	ret = ret ? ret : odsm_deleg_register("rd.get", get, &op_get);
	ret = ret ? ret : odsm_deleg_register("rd.put", put, &op_put);
	ret = ret ? ret : odsm_deleg_register("rd.lookup", lookup, &op_lookup);
	ret = ret ? ret : odsm_deleg_register("rd.count", count, &op_count);
	ret = ret ? ret : odsm_deleg_register("rd.linc", linc, &op_linc);
	ret = ret ? ret : odsm_deleg_register("rd.nap", nap, &op_nap);
	ret = ret ? ret : odsm_deleg_register("rd.echo", echo, &op_echo);
	return ret ? ret : odsm_deleg_register("rd.with", with, &op_with);
}

/* ---- handles in directory words ---------------------------------------- */

static int put_handle(unsigned int idx, const odsm_trust *t)
{
	int ret = c_put(C.self, idx + 1, t->cell | (uint64_t)t->gen << 32);

	return ret ? ret : c_put(C.self, idx, t->arena);
}

static int get_handle(unsigned int node, unsigned int idx, odsm_trust *t)
{
	uint64_t a, w;
	int ret = c_poll(node, idx, 0, SECS, &a);

	ret = ret ? ret : c_get(node, idx + 1, &w);
	if (ret)
		return ret;
	t->arena = a;
	t->cell = (uint32_t)w;
	t->gen = (uint32_t)(w >> 32);
	return 0;
}

/* ---- clients ------------------------------------------------------------- */

struct client {
	pthread_t tid;
	unsigned int id;
	odsm_trust h[NOBJ];
	uint64_t arg;		/* node 0's apply_with argument */
	int err;		/* the first error */
	unsigned int line;	/* where */
	unsigned int bad;	/* completions out of order, wrong values */
	/* apply_then bookkeeping, per object */
	uint32_t next_done[NOBJ];
	uint64_t last_val[NOBJ];
};

struct then_ctx {
	struct client *c;
	unsigned int obj;
	uint32_t seq;
	uint64_t ret;
};

static void then_done(void *cookie, int st, const void *ret, size_t len)
{
	struct then_ctx *x = cookie;
	struct client *c = x->c;
	uint64_t v;

	if (st || x->seq != c->next_done[x->obj]) {
		c->bad++;
		return;
	}
	c->next_done[x->obj]++;
	if (is_map[x->obj])
		return;
	if (len != sizeof(v)) {
		c->bad++;
		return;
	}
	memcpy(&v, ret, sizeof(v));
	/* the trustee ran this client's requests in issue order */
	if (v <= c->last_val[x->obj])
		c->bad++;
	c->last_val[x->obj] = v;
}

#define CK(expr) do { int __e = (expr); \
	if (__e && !c->err) { c->err = __e; c->line = __LINE__; } \
	if (__e) goto out; } while (0)

static uint64_t key_of(struct client *c, unsigned int i)
{
	return 1 + ((uint64_t)C.self << 32 | c->id << 16 | i);
}

static void *client_loop(void *arg)
{
	struct client *c = arg;
	struct then_ctx *x = calloc(NOBJ * (THEN_INCS + MAP_KEYS),
				    sizeof(*x));
	struct odsm_deleg *d;
	uint64_t one = 1, v, kv[2];
	unsigned int o, i, n = 0;
	size_t len;

	if (!x) {
		c->err = -ENOMEM;
		return NULL;
	}
	/* queued increments to every counter, interleaved: batched per pair */
	for (i = 0; i < THEN_INCS; i++) {
		for (o = 0; o < NOBJ; o++) {
			if (is_map[o])
				continue;
			x[n] = (struct then_ctx){ .c = c, .obj = o, .seq = i };
			CK(odsm_deleg_apply_then(&c->h[o], op_inc, &one,
						 sizeof(one), &x[n].ret,
						 sizeof(x[n].ret), then_done,
						 &x[n], NULL, 0));
			n++;
		}
	}
	/* one at a time: each its own batch */
	for (i = 0; i < SYNC_INCS; i++) {
		for (o = 0; o < NOBJ; o++) {
			if (is_map[o])
				continue;
			len = sizeof(v);
			CK(odsm_deleg_apply(&c->h[o], op_inc, &one,
					    sizeof(one), &v, &len));
			if (len != sizeof(v) || v <= c->last_val[o])
				c->bad++;
			c->last_val[o] = v;
		}
	}
	for (o = 0; o < NOBJ; o++) {
		if (is_map[o])
			continue;
		len = sizeof(v);
		CK(odsm_deleg_launch(&c->h[o], op_linc, &one, sizeof(one), &v,
				     &len));
		if (len != sizeof(v) || v <= c->last_val[o])
			c->bad++;
	}
	len = sizeof(v);
	CK(odsm_deleg_apply_with(&c->h[0], op_with, c->arg, sizeof(uint64_t),
				 &v, &len));
	/* the keys, queued, then each read back */
	for (o = 0; o < NOBJ; o++) {
		if (!is_map[o])
			continue;
		for (i = 0; i < MAP_KEYS; i++) {
			kv[0] = key_of(c, i);
			kv[1] = kv[0] * 3;
			x[n] = (struct then_ctx){ .c = c, .obj = o, .seq = i };
			CK(odsm_deleg_apply_then(&c->h[o], op_put, kv,
						 sizeof(kv), NULL, 0, then_done,
						 &x[n], NULL, 0));
			n++;
		}
	}
	/* everything queued goes, and completes, before this thread reads */
	for (o = 0; o < NOBJ; o++) {
		CK(odsm_deleg_at(c->h[o].arena, &d));
		CK(odsm_deleg_drain(d));
	}
	for (o = 0; o < NOBJ; o++) {
		if (!is_map[o]) {
			if (c->next_done[o] != THEN_INCS)
				c->bad++;
			continue;
		}
		if (c->next_done[o] != MAP_KEYS)
			c->bad++;
		for (i = 0; i < MAP_KEYS; i++) {
			kv[0] = key_of(c, i);
			len = sizeof(v);
			CK(odsm_deleg_apply(&c->h[o], op_lookup, kv,
					    sizeof(kv[0]), &v, &len));
			if (len != sizeof(v) || v != kv[0] * 3)
				c->bad++;
		}
	}
out:
	free(x);
	return NULL;
}

/* ---- the owners ---------------------------------------------------------- */

static struct odsm_deleg *start_runtime(struct __test_metadata *_metadata,
					struct odsm_deleg_arena *a)
{
	struct odsm_deleg_config cfg = {
		.trustees = 2, .clients = 32, .workers = 2,
	};
	struct odsm_deleg *d = NULL;
	int ret;

	ret = odsm_deleg_arena_heap(a, odsm_deleg_arena_size(&cfg));
	if (!ret)
		ret = odsm_deleg_start(a, &cfg, &d);
	EXPECT_EQ(0, ret) {
		TH_LOG("runtime: %s", odsm_strerror(ret));
	}
	if (!ret)
		EXPECT_EQ(0, odsm_deleg_gateway_status(d));
	return d;
}

/*
 * A file that bound a runtime's address before it started keeps it (any
 * user of the device may: delegation.rst, Endpoint): the runtime says
 * why it serves its own node only, -EADDRINUSE.
 */
static void endpoint_taken(struct __test_metadata *_metadata)
{
	struct odsm_deleg_config cfg = { .trustees = 1, .clients = 4 };
	struct odsm_deleg_arena a;
	struct odsm_deleg_bind bd = { .slot_size = 0 };
	struct odsm_deleg *d = NULL;
	int fd;

	ASSERT_EQ(0, odsm_deleg_arena_heap(&a, odsm_deleg_arena_size(&cfg)));
	fd = open("/dev/odsm", O_RDWR);
	ASSERT_LE(0, fd);
	bd.endpoint = odsm_addr_of(a.cg);
	bd.slot_size = ODSM_DSLOT_SIZE_MIN;
	ASSERT_EQ(0, ioctl(fd, ODSM_IOC_DELEG_BIND, &bd));
	ASSERT_EQ(0, odsm_deleg_start(&a, &cfg, &d));
	EXPECT_EQ(odsm_deleg_addr(d), bd.endpoint);
	EXPECT_EQ(-EADDRINUSE, odsm_deleg_gateway_status(d));
	odsm_deleg_stop(d);
	close(fd);
	EXPECT_EQ(0, odsm_deleg_arena_heap_free(&a));
}

static int entrust_new(struct odsm_deleg *d, unsigned int trustee,
		       size_t size, odsm_trust *t)
{
	odsm_box b;
	int ret = odsm_box_new(&b, size, ODSM_ALLOC_ZERO);

	if (ret)
		return ret;
	ret = odsm_deleg_entrust(d, trustee, &b, 0, t);
	if (ret)
		odsm_box_drop(&b);
	return ret;
}

/*
 * Entrust a box of this node, holding 8-byte value val, to trustee 1 of
 * runtime d (of another node): it moves there, keeps its bytes, and the
 * box is empty after.  The handle is dropped again.
 */
static void entrust_moved(struct __test_metadata *_metadata,
			  struct odsm_deleg *d, uint64_t val, unsigned int on)
{
	uint64_t v = 0;
	odsm_trust t;
	size_t len;
	odsm_box b;

	ASSERT_EQ(0, odsm_box_new_on(&b, on, 8, ODSM_ALLOC_ZERO, NULL));
	ASSERT_EQ(0, odsm_write(b.g, &val, sizeof(val)));
	ASSERT_EQ(0, odsm_deleg_entrust(d, 1, &b, 0, &t)) {
		TH_LOG("entrust of a box of node %u to the runtime at %#llx",
		       on, (unsigned long long)odsm_deleg_addr(d));
	}
	EXPECT_EQ(0ULL, b.g);
	len = sizeof(v);
	EXPECT_EQ(0, odsm_deleg_apply(&t, op_get, NULL, 0, &v, &len));
	EXPECT_EQ(val, v);
	EXPECT_EQ(0, odsm_trust_drop(&t));
}

/*
 * Node 1 entrusts to node 0's runtime: a box there (xctr, used below),
 * and a box of its own, which node 0's gateway moves there.
 */
static void entrust_across(struct __test_metadata *_metadata, odsm_trust *t)
{
	struct odsm_deleg *d0;
	odsm_box b;
	uint64_t ep0;

	ASSERT_EQ(0, c_poll(0, W_RD, 0, SECS, &ep0));
	ASSERT_EQ(0, odsm_deleg_at(ep0, &d0));
	EXPECT_EQ(ep0, odsm_deleg_addr(d0));
	entrust_moved(_metadata, d0, 41, C.self);
	ASSERT_EQ(0, odsm_box_new_on(&b, 0, 8, ODSM_ALLOC_ZERO, NULL));
	ASSERT_EQ(0, odsm_deleg_entrust(d0, 1, &b, 0, t));
	EXPECT_EQ(0ULL, b.g);
	EXPECT_EQ(ep0, t->arena);
}

/*
 * An apply_with argument of another node than the trustee's is read
 * where the trustee runs, from a copy there: echo says what it read and
 * that it read it in its own partition.
 */
static void with_across(struct __test_metadata *_metadata,
			const odsm_trust *t, uint64_t arg, uint64_t want)
{
	uint64_t out[2] = { 0, 0 };
	size_t len = sizeof(out);

	EXPECT_EQ(0, odsm_deleg_apply_with(t, op_echo, arg, 8, out, &len)) {
		TH_LOG("apply_with of %#llx to the runtime at %#llx",
		       (unsigned long long)arg, (unsigned long long)t->arena);
	}
	EXPECT_EQ(sizeof(out), len);
	EXPECT_EQ(want, out[0]);
	EXPECT_EQ(1ULL, out[1]);
}

/*
 * A reference that will never come back (as a dead node's): revoke ends
 * the object (of runtime d, of this node or another), every handle of it
 * is then -ESTALE, and a second revoke too.
 */
static void revoke_across(struct __test_metadata *_metadata,
			  struct odsm_deleg *d)
{
	odsm_trust t, lost, seen;
	uint64_t v;
	size_t len;

	ASSERT_EQ(0, entrust_new(d, 0, 8, &t));
	ASSERT_EQ(0, odsm_trust_clone(&t, &lost));	/* never dropped */
	seen = t;
	ASSERT_EQ(0, odsm_trust_revoke(&t));
	EXPECT_EQ(0U, t.cell + t.gen);
	len = sizeof(v);
	EXPECT_EQ(-ESTALE, odsm_deleg_apply(&lost, op_get, NULL, 0, &v, &len));
	EXPECT_EQ(-ESTALE, odsm_trust_drop(&lost));
	EXPECT_EQ(-ESTALE, odsm_trust_revoke(&seen));
}

TEST_F(cl, apply_across_nodes)
{
	struct client cs[THREADS];
	struct odsm_deleg_arena a;
	struct odsm_deleg *d = NULL;
	odsm_trust mine[2], xctr, h[NOBJ];
	uint64_t b0 = c_stat("deleg_out_batches");
	uint64_t r0 = c_stat("deleg_out_requests"), argg = 0, v, want, nb, nr;
	uint64_t in0 = c_stat("deleg_in_batches");
	uint64_t lane0 = c_stat("deleg_lane_batches");
	unsigned int i, bad = 0;
	size_t len;
	int ret;

	C_BEGIN();
	ASSERT_EQ(0, reg_ops());
	if (C.self <= 1) {
		d = start_runtime(_metadata, &a);
		ASSERT_NE(NULL, d);
		ASSERT_EQ(0, entrust_new(d, 0, 8, &mine[0]));
		ASSERT_EQ(0, entrust_new(d, 1, sizeof(struct map), &mine[1]));
		ASSERT_EQ(0, put_handle(W_RD_CTR, &mine[0]));
		ASSERT_EQ(0, put_handle(W_RD_MAP, &mine[1]));
		ASSERT_EQ(0, c_put(C.self, W_RD, odsm_deleg_addr(d)));
	}
	if (C.self == 0) {
		uint64_t add = WITH_ADD;

		ASSERT_EQ(0, odsm_alloc(8, 8, 0, &argg));
		ASSERT_EQ(0, odsm_write(argg, &add, sizeof(add)));
		ASSERT_EQ(0, c_put(0, W_RD_ARG, argg));
	}
	if (C.self == 1) {
		entrust_across(_metadata, &xctr);
		ASSERT_EQ(0, put_handle(W_RD_XCTR, &xctr));
	}
	ASSERT_EQ(0, c_step(B_HOST, B_RD, SECS));
	ASSERT_EQ(0, get_handle(0, W_RD_CTR, &h[0]));
	ASSERT_EQ(0, get_handle(0, W_RD_MAP, &h[1]));
	ASSERT_EQ(0, get_handle(1, W_RD_CTR, &h[2]));
	ASSERT_EQ(0, get_handle(1, W_RD_MAP, &h[3]));
	ASSERT_EQ(0, get_handle(1, W_RD_XCTR, &h[4]));
	ASSERT_EQ(0, c_poll(0, W_RD_ARG, 0, SECS, &argg));

	/*
	 * An apply_with argument of another node (node 0's runtime reads
	 * one of this node; node 1's runtime one of node 0); an op id the
	 * trustee's process never registered is refused there
	 */
	if (C.self != 0) {
		uint64_t here, mine7 = 7, u0 = c_stat("deleg_out_errors");

		ASSERT_EQ(0, odsm_alloc(8, 8, ODSM_ALLOC_ZERO, &here));
		ASSERT_EQ(0, odsm_write(here, &mine7, sizeof(mine7)));
		with_across(_metadata, &h[0], here, mine7);
		EXPECT_EQ(0, odsm_free(here));
		len = sizeof(v);
		EXPECT_EQ(-EBADRQC, odsm_deleg_apply(&h[0],
						     odsm_deleg_op_id("rd.none"),
						     NULL, 0, &v, &len));
		/* answered, not failed: the module saw a good batch */
		EXPECT_EQ(u0, c_stat("deleg_out_errors"));
	}
	if (C.self == 1)
		with_across(_metadata, &mine[0], argg, WITH_ADD);
	/*
	 * Node 0 entrusts a box of its own to node 1's runtime (moved there
	 * by its gateway) and revokes an object there; node 1 entrusts a
	 * box of node 0 to its own runtime (moved here by this process) and
	 * revokes one of its own runtime's.
	 */
	if (C.self == 0) {
		struct odsm_deleg *d1;
		uint64_t ep1;

		ASSERT_EQ(0, c_poll(1, W_RD, 0, SECS, &ep1));
		ASSERT_EQ(0, odsm_deleg_at(ep1, &d1));
		entrust_moved(_metadata, d1, 43, 0);
		revoke_across(_metadata, d1);
	}
	if (C.self == 1) {
		entrust_moved(_metadata, d, 45, 0);
		revoke_across(_metadata, d);
		endpoint_taken(_metadata);
	}

	for (i = 0; i < THREADS; i++) {
		cs[i] = (struct client){ .id = i, .arg = argg };
		memcpy(cs[i].h, h, sizeof(h));
		ASSERT_EQ(0, pthread_create(&cs[i].tid, NULL, client_loop,
					    &cs[i]));
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(cs[i].tid, NULL);
		EXPECT_EQ(0, cs[i].err) {
			TH_LOG("client %u: %s at line %u", i,
			       odsm_strerror(cs[i].err), cs[i].line);
		}
		bad += cs[i].bad;
	}
	EXPECT_EQ(0U, bad);
	/* every node sent to a runtime of another node, batched */
	nb = c_stat("deleg_out_batches") - b0;
	nr = c_stat("deleg_out_requests") - r0;
	EXPECT_LT(0ULL, nb);
	/* the apply_then phase packs ~20 requests a batch */
	EXPECT_LE(2 * nb, nr);
	TH_LOG("node %u: %llu requests in %llu batches through the module",
	       C.self, (unsigned long long)nr, (unsigned long long)nb);

	ASSERT_EQ(0, c_barrier(B_HOST, B_RD + 1, C.nodes, SECS));
	if (C.self <= 1) {
		/* per node per thread: queued, one at a time, one launch */
		want = (uint64_t)C.nodes * THREADS * (THEN_INCS + SYNC_INCS + 1);
		len = sizeof(v);
		EXPECT_EQ(0, odsm_deleg_apply(&mine[0], op_get, NULL, 0, &v,
					      &len));
		EXPECT_EQ(want + (C.self == 0 ?
				  (uint64_t)C.nodes * THREADS * WITH_ADD : 0),
			  v);
		len = sizeof(v);
		EXPECT_EQ(0, odsm_deleg_apply(&mine[1], op_count, NULL, 0, &v,
					      &len));
		EXPECT_EQ((uint64_t)C.nodes * THREADS * MAP_KEYS, v);
		if (C.self == 0) {
			len = sizeof(v);
			EXPECT_EQ(0, odsm_deleg_apply(&h[4], op_get, NULL, 0,
						      &v, &len));
			EXPECT_EQ(want, v);
		}
		TH_LOG("node %u: counter and map exact over %u nodes",
		       C.self, C.nodes);
		/*
		 * Batches of other nodes reached the trustees through the
		 * module's lanes, not the gateway; the gateway still took
		 * what needs it (the moves of entrust, arguments brought
		 * from another node) and what found the lanes busy.
		 */
		nb = c_stat("deleg_in_batches") - in0;
		nr = c_stat("deleg_lane_batches") - lane0;
		EXPECT_LT(0ULL, nr);
		EXPECT_LT(nr, nb);
		TH_LOG("node %u: %llu of %llu batches in through lanes",
		       C.self, (unsigned long long)nr,
		       (unsigned long long)nb);
	}
	ASSERT_EQ(0, c_barrier(B_HOST, B_RD + 2, C.nodes, SECS));
	/*
	 * Everyone has checked: node 1's handle to its counter on node 0
	 * goes (a remote drop: the count by compare-and-swap there, then
	 * FREE), and node 0's runtime stays until it has.
	 */
	if (C.self == 1) {
		EXPECT_EQ(0, odsm_trust_drop(&xctr));
		len = sizeof(v);
		EXPECT_EQ(-ESTALE, odsm_deleg_apply(&h[4], op_get, NULL, 0, &v,
						    &len));
		EXPECT_EQ(0, c_put(1, W_RD_DROP, 1));
	}
	if (C.self == 0)
		EXPECT_EQ(0, c_poll(1, W_RD_DROP, 0, SECS, NULL));
	if (d) {
		EXPECT_EQ(0, odsm_trust_drop(&mine[0]));
		EXPECT_EQ(0, odsm_trust_drop(&mine[1]));
		odsm_deleg_stop(d);
		EXPECT_EQ(0, odsm_deleg_arena_heap_free(&a));
	}
	ret = c_barrier(B_HOST, B_RD + 3, C.nodes, SECS);
	ASSERT_EQ(0, ret);
}

struct napper {
	odsm_trust h;
	int ret;
	uint64_t at;		/* when the launch returned */
};

static void *nap_thread(void *arg)
{
	struct napper *n = arg;
	size_t len = 0;

	n->ret = odsm_deleg_launch(&n->h, op_nap, NULL, 0, NULL, &len);
	n->at = c_now_ms();
	return NULL;
}

/*
 * A runtime's process killed while a client of another node has a batch
 * in it (a launch napping on a worker): the client gets -EOWNERDEAD at
 * once, far within the cluster's timeout, and later calls -ESRCH.
 */
static void doomed_runtime(void)
{
	struct odsm_deleg_config cfg = { .trustees = 1, .clients = 8 };
	struct odsm_deleg_arena a;
	struct odsm_deleg *d;
	odsm_trust t;

	alarm(120);		/* never outlives the program for long */
	if (odsm_deleg_arena_heap(&a, odsm_deleg_arena_size(&cfg)) ||
	    odsm_deleg_start(&a, &cfg, &d) || entrust_new(d, 0, 8, &t) ||
	    put_handle(W_RD_K, &t))
		_exit(1);
	for (;;)
		pause();
}

TEST_F(cl, runtime_killed)
{
	uint64_t one = 1, v, t0, go;
	struct napper n = { 0 };
	pthread_t tid;
	size_t len;
	pid_t pid;
	int st = 0;

	C_BEGIN();
	ASSERT_EQ(0, reg_ops());
	ASSERT_EQ(0, c_step(B_HOST, B_RD + 4, SECS));
	if (C.self == 0) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			doomed_runtime();
		/* no ASSERT until the child is gone: it must not outlive us */
		EXPECT_EQ(0, c_poll(1, W_RD_KGO, 0, SECS, NULL));
		c_sleep_ms(200);	/* the launch is on the worker */
		kill(pid, SIGKILL);
		EXPECT_EQ(pid, waitpid(pid, &st, 0));
		EXPECT_TRUE(WIFSIGNALED(st));
		return;
	}
	if (C.self != 1)
		return;
	ASSERT_EQ(0, get_handle(0, W_RD_K, &n.h));
	len = sizeof(v);
	ASSERT_EQ(0, odsm_deleg_apply(&n.h, op_inc, &one, sizeof(one), &v,
				      &len));
	EXPECT_EQ(1ULL, v);
	ASSERT_EQ(0, pthread_create(&tid, NULL, nap_thread, &n));
	c_sleep_ms(300);
	go = c_now_ms();
	ASSERT_EQ(0, c_put(1, W_RD_KGO, 1));
	pthread_join(tid, NULL);
	EXPECT_EQ(-EOWNERDEAD, n.ret);
	/* killed ~0.2 s after go; the cluster's timeout is seconds */
	EXPECT_GT(go + C.timeout_ms / 2, n.at);
	TH_LOG("the launch failed %llu ms after go (the kill is ~200 ms after it): %s",
	       (unsigned long long)(n.at - go), odsm_strerror(n.ret));
	t0 = c_now_ms();
	len = sizeof(v);
	EXPECT_EQ(-ESRCH, odsm_deleg_apply(&n.h, op_inc, &one, sizeof(one),
					   &v, &len));
	EXPECT_GT(t0 + C.timeout_ms / 2, c_now_ms());
}

TEST_HARNESS_MAIN
