// SPDX-License-Identifier: GPL-2.0
/*
 * Remote execution and channels (userlib/odsm_spawn.h, odsm_chan.h), run
 * on every node at once.
 *
 * spawn: every node starts its runtime (odsm_spawn_start), publishes its
 * address and a 64-byte object of its partition filled with its pattern,
 * and learns every other node's runtime (odsm_spawn_peer).  Then each
 * node spawns, to every node's object, an operation that reports the
 * node it ran on and a checksum of the object read in place there, and
 * to every node an operation that adds two numbers; half of the tasks
 * are joined by another thread than the one that spawned them.  Each
 * must have run on the object's node, with the right sum.  The bad
 * input: a node out of range, a node with no runtime known, an empty
 * box, an argument too long, an op the node never registered, a NULL
 * handle, a peer address holding no runtime.
 *
 * channels: node 0 makes a channel of 8 boxes; THREADS threads on every
 * node (node 0's included) each send MSGS boxes of 64 B to 8 KiB, each
 * object holding (node, thread, seq) and a pattern.  Node 0 receives
 * them all and checks that each arrives once with its bytes intact, in
 * send order per sender thread, that the sender's box was empty after
 * the send, and that the object moved: a box of another node's object,
 * written by the receiver, names an object of node 0's partition.  Then
 * the channel is closed (a later send: -EPIPE, the box kept) and freed
 * (-ESTALE), and a handle of an entrusted object that is no channel is
 * refused with -EBADFD.
 *
 * Shared immutable objects: node 0 freezes a 256-byte object into an
 * arc; every node clones it, reads the same bytes (through its cached
 * copy), is refused get_mut while it is shared, and drops its clone;
 * node 0's drop, the last, frees the object and its count.
 *
 * A runtime killed under a task: node 1's task naps on a worker of a
 * runtime that node 0's child runs, node 0 kills the child, and the
 * join fails with -EOWNERDEAD at once (a later spawn there: -ESRCH).
 *
 * Words: node K's directory 320 (its runtime), 321 (its object); node
 * 0's 322/323 (the channel), 324/325 (the wrong-kind handle), 326/327
 * (the arc), 328/329 (the doomed runtime, go); barriers
 * on node 0's words 330 .. 339 (a barrier of this program's own: the rig
 * barrier ids of node 0 are taken by other programs).
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <linux/futex.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include "odsm_cluster.h"

#define W_SP_RT		320
#define W_SP_OBJ	321
#define W_SP_CHAN	322	/* .. 323 */
#define W_SP_WRONG	324	/* .. 325 */
#define W_SP_ARC	326	/* .. 327 */
#define W_SP_KILL	328	/* node 0: the doomed runtime; 329: go */
#define W_SP_BAR	330	/* .. 339 */
#define SECS		240

#define THREADS		2U	/* sender threads per node */
#define MSGS		16	/* boxes per sender thread */
#define CHAN_CAP	8
#define OBJ_TAG		16
#define MAX_NODES	8U

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

/* a barrier of every node on node 0's word W_SP_BAR + id */
static int sp_barrier(unsigned int id)
{
	int ret = odsm_fetch_add(c_word(0, W_SP_BAR + id), 1, NULL);

	if (ret)
		return ret;
	return c_poll(0, W_SP_BAR + id, C.nodes, SECS, NULL);
}

/* ---- the operations (registered on every node: the same ids) ---------- */

struct where {
	uint64_t node;
	uint64_t sum;
};

/* The node it ran on, and the sum of the 64 bytes of ctx->obj read here. */
static int where(void *obj, const void *arg, size_t len, void *ret,
		 size_t *rl)
{
	const struct odsm_spawn_ctx *ctx = obj;
	odsm_box field = { .g = ctx->obj };
	struct where w = { .node = ctx->node };
	const uint8_t *p;
	odsm_ref r;
	int i, st;

	if (*rl < sizeof(w))
		return -EINVAL;
	st = odsm_borrow_field(&field, &r, (const void **)&p);
	if (st)
		return st;
	for (i = 0; i < 64; i++)
		w.sum += p[i] * (uint64_t)(i + 1);
	odsm_return(&r);
	memcpy(ret, &w, sizeof(w));
	*rl = sizeof(w);
	return 0;
}

static int add(void *obj, const void *arg, size_t len, void *ret, size_t *rl)
{
	const struct odsm_spawn_ctx *ctx = obj;
	uint64_t ab[2], out[2];

	if (len != sizeof(ab) || *rl < sizeof(out))
		return -EINVAL;
	memcpy(ab, arg, sizeof(ab));
	out[0] = ab[0] + ab[1];
	out[1] = ctx->node;
	memcpy(ret, out, sizeof(out));
	*rl = sizeof(out);
	return 0;
}

/* blocks on its worker: its runtime's process is killed meanwhile */
static int nap(void *obj, const void *arg, size_t len, void *ret, size_t *rl)
{
	*rl = 0;
	sleep(30);
	return 0;
}

static uint64_t op_where, op_add, op_nap;

static int reg_ops(void)
{
	int ret = odsm_deleg_register("sp.where", where, &op_where);

	ret = ret ? ret : odsm_deleg_register("sp.nap", nap, &op_nap);
	return ret ? ret : odsm_deleg_register("sp.add", add, &op_add);
}

static uint64_t sum_of(unsigned int node)
{
	uint64_t s = 0;
	int i;

	for (i = 0; i < 64; i++)
		s += c_pat(node, OBJ_TAG, i) * (uint64_t)(i + 1);
	return s;
}

/* ---- spawn -------------------------------------------------------------- */

struct joiner {
	odsm_task *t[MAX_NODES];
	unsigned int n;
	int st[MAX_NODES];
	struct where w[MAX_NODES];
};

/* tasks joined by another thread than the one that spawned them */
static void *join_all(void *arg)
{
	struct joiner *j = arg;
	unsigned int i;
	size_t len;

	for (i = 0; i < j->n; i++) {
		len = sizeof(j->w[i]);
		j->st[i] = odsm_task_join(j->t[i], &j->w[i], &len);
		if (!j->st[i] && len != sizeof(j->w[i]))
			j->st[i] = -EPROTO;
	}
	return NULL;
}

TEST_F_TIMEOUT(cl, spawn_to_owner, 180)
{
	uint64_t rt, g, ab[2], out[2];
	odsm_task *t, *adds[MAX_NODES];
	struct joiner j = { 0 };
	odsm_box b, lb, empty = { 0 };
	unsigned int k;
	uint8_t big[ODSM_SPAWN_ARG_MAX + 1] = { 0 };
	size_t len;
	pthread_t tid;
	uint8_t init[64];

	C_BEGIN();
	ASSERT_GE(MAX_NODES, C.nodes);
	ASSERT_EQ(0, reg_ops());
	ASSERT_EQ(0, odsm_spawn_start(2, &rt));
	EXPECT_EQ(-EALREADY, odsm_spawn_start(2, &rt));
	c_fill(init, sizeof(init), C.self, OBJ_TAG);
	ASSERT_EQ(0, odsm_box_new_on(&b, C.self, sizeof(init), 0, init));
	ASSERT_EQ(0, c_put(C.self, W_SP_OBJ, odsm_box_share(&b)));
	ASSERT_EQ(0, c_put(C.self, W_SP_RT, rt));
	ASSERT_EQ(0, c_dir_wait(0, SECS));
	ASSERT_EQ(0, sp_barrier(0));

	/* before a peer is known: nothing to send to */
	k = (C.self + 1) % C.nodes;
	EXPECT_EQ(-ENOENT, odsm_spawn_on(k, op_add, ab, sizeof(ab), &t));
	EXPECT_EQ(NULL, t);
	for (k = 0; k < C.nodes; k++) {
		ASSERT_EQ(0, c_poll(k, W_SP_RT, 0, SECS, &rt));
		/* the object's address is no runtime's root */
		ASSERT_EQ(0, c_poll(k, W_SP_OBJ, 0, SECS, &g));
		EXPECT_EQ(-EINVAL, odsm_spawn_peer(k, g));
		EXPECT_EQ(-EINVAL, odsm_spawn_peer((k + 1) % C.nodes, rt));
		ASSERT_EQ(0, odsm_spawn_peer(k, rt));
	}

	/* every node's object, and an add on every node */
	for (k = 0; k < C.nodes; k++) {
		ASSERT_EQ(0, c_get(k, W_SP_OBJ, &g));
		lb.g = g;
		lb.ext = 0;
		ASSERT_EQ(0, odsm_spawn_to(&lb, op_where, NULL, 0, &j.t[k]));
		EXPECT_EQ(k, odsm_task_node(j.t[k]));
		ab[0] = 1000 * C.self;
		ab[1] = k;
		ASSERT_EQ(0, odsm_spawn_on(k, op_add, ab, sizeof(ab), &adds[k]));
	}
	j.n = C.nodes;
	ASSERT_EQ(0, pthread_create(&tid, NULL, join_all, &j));
	for (k = 0; k < C.nodes; k++) {
		len = sizeof(out);
		EXPECT_EQ(0, odsm_task_join(adds[k], out, &len));
		EXPECT_EQ(sizeof(out), len);
		EXPECT_EQ(1000 * C.self + k, out[0]);
		EXPECT_EQ(k, out[1]);
	}
	ASSERT_EQ(0, pthread_join(tid, NULL));
	for (k = 0; k < C.nodes; k++) {
		EXPECT_EQ(0, j.st[k]) {
			TH_LOG("spawn_to node %u's object: %s", k,
			       odsm_strerror(j.st[k]));
		}
		EXPECT_EQ(k, j.w[k].node);
		EXPECT_EQ(sum_of(k), j.w[k].sum);
	}

	/* bad input: refused with an errno, nothing runs */
	EXPECT_EQ(-EINVAL, odsm_spawn_on(ODSM_SPAWN_NODES, op_add, NULL, 0, &t));
	EXPECT_EQ(-EINVAL, odsm_spawn_to(&empty, op_where, NULL, 0, &t));
	EXPECT_EQ(-EINVAL, odsm_spawn_to(NULL, op_where, NULL, 0, &t));
	EXPECT_EQ(-EINVAL, odsm_spawn_on(0, op_add, NULL, 4, &t));
	EXPECT_EQ(-EINVAL, odsm_spawn_on(0, op_add, NULL, 0, NULL));
	EXPECT_EQ(-E2BIG, odsm_spawn_on(0, op_add, big, sizeof(big), &t));
	EXPECT_EQ(-EINVAL, odsm_task_join(NULL, NULL, NULL));
	EXPECT_EQ(-EINVAL, odsm_task_done(NULL));
	for (k = 0; k < C.nodes; k++) {
		ASSERT_EQ(0, odsm_spawn_on(k, odsm_deleg_op_id("sp.never"),
					   NULL, 0, &t));
		EXPECT_EQ(-EBADRQC, odsm_task_join(t, NULL, NULL));
		/* the wrapper itself is no operation to run */
		ASSERT_EQ(0, odsm_spawn_on(k, odsm_deleg_op_id("odsm.spawn.run"),
					   NULL, 0, &t));
		EXPECT_EQ(-EBADRQC, odsm_task_join(t, NULL, NULL));
		/* the op's own refusal comes back */
		ASSERT_EQ(0, odsm_spawn_on(k, op_add, ab, 3, &t));
		EXPECT_EQ(-EINVAL, odsm_task_join(t, NULL, NULL));
	}

	/* everyone is done with everyone's runtime */
	ASSERT_EQ(0, sp_barrier(1));
	EXPECT_EQ(0, odsm_box_drop(&b));
	odsm_spawn_stop();
}

/* ---- channels ------------------------------------------------------------ */

static double cpu_secs(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

struct msg_hdr {
	uint32_t node, thread, seq, len;
};

static size_t msg_len(unsigned int thread, unsigned int seq)
{
	/* 64 B .. 8 KiB */
	return (size_t)64 << ((thread + seq) % 8);
}

struct sender {
	odsm_chan c;
	unsigned int thread;
	int err;
	unsigned int not_empty;		/* boxes not empty after a send */
};

static void *send_loop(void *arg)
{
	struct sender *s = arg;
	struct msg_hdr *h;
	unsigned int i;
	uint8_t *buf;
	odsm_box b;
	size_t len;
	int ret;

	buf = malloc(msg_len(0, 7));
	if (!buf) {
		s->err = -ENOMEM;
		return NULL;
	}
	for (i = 0; i < MSGS && !s->err; i++) {
		len = msg_len(s->thread, i);
		c_fill(buf, len, C.self, s->thread * MSGS + i);
		h = (struct msg_hdr *)buf;
		h->node = C.self;
		h->thread = s->thread;
		h->seq = i;
		h->len = (uint32_t)len;
		ret = odsm_box_new_on(&b, C.self, len, 0, buf);
		if (!ret)
			ret = odsm_chan_send(&s->c, &b);
		if (ret) {
			s->err = ret;
			break;
		}
		if (b.g || b.ext)
			s->not_empty++;
	}
	free(buf);
	return NULL;
}

static int put_chan(unsigned int idx, const odsm_chan *c)
{
	int ret = c_put(0, idx, c->t.arena);

	return ret ? ret : c_put(0, idx + 1, c->t.cell |
				 (uint64_t)c->t.gen << 32);
}

static int get_chan(unsigned int idx, odsm_chan *c)
{
	uint64_t a, w;
	int ret = c_poll(0, idx, 0, SECS, &a);

	if (!ret)
		ret = c_get(0, idx + 1, &w);
	c->t.arena = a;
	c->t.cell = (uint32_t)w;
	c->t.gen = (uint32_t)(w >> 32);
	return ret;
}

/* c_check from an offset: the pattern's bytes past the header */
static int64_t check_tail(const uint8_t *p, uint64_t off, uint64_t n,
			  unsigned int node, unsigned int tag)
{
	uint64_t i;

	for (i = off; i < n; i++)
		if (p[i] != c_pat(node, tag, i))
			return (int64_t)i;
	return -1;
}

/* node 0: receive every box, check it, own it, drop it */
static void receive_all(struct __test_metadata *_metadata, odsm_chan *c)
{
	unsigned int next[MAX_NODES][THREADS] = { { 0 } };
	unsigned int n = 0, total = C.nodes * THREADS * MSGS, from, moved = 0;
	const struct msg_hdr *h;
	struct msg_hdr hh;
	uint64_t before;
	odsm_box b = { 0 };
	void *w;
	int ret;

	while (n < total) {
		ret = odsm_chan_recv(c, &b, &from, SECS * 1000);
		ASSERT_EQ(0, ret) {
			TH_LOG("recv %u of %u: %s", n, total, odsm_strerror(ret));
		}
		ASSERT_NE(0ULL, b.g);
		ASSERT_GT(C.nodes, from);
		/* the object is still where its sender made it */
		EXPECT_TRUE(c_in_part(b.g, from));
		ASSERT_EQ(0, odsm_box_read(&b, (const void **)&h));
		hh = *h;
		ASSERT_EQ(from, hh.node);
		ASSERT_GT(THREADS, hh.thread);
		/* once, in order: the next seq of that sender thread */
		EXPECT_EQ(next[hh.node][hh.thread], hh.seq);
		next[hh.node][hh.thread] = hh.seq + 1;
		ASSERT_EQ(msg_len(hh.thread, hh.seq), hh.len);
		/* the pattern past the header, to the last byte */
		EXPECT_EQ(-1, check_tail((const uint8_t *)h, sizeof(hh),
					 hh.len, hh.node,
					 hh.thread * MSGS + hh.seq));
		/* this box owns it: a write moves it here */
		before = b.g;
		ASSERT_EQ(0, odsm_box_write(&b, &w));
		if (from != C.self) {
			EXPECT_FALSE(c_in_part(before, 0));
			EXPECT_TRUE(c_in_part(b.g, 0));
			moved += c_in_part(b.g, 0);
		}
		ASSERT_EQ(0, odsm_box_drop(&b));
		n++;
	}
	EXPECT_EQ(total - THREADS * MSGS, moved);
	EXPECT_EQ(-EAGAIN, odsm_chan_try_recv(c, &b, NULL));
}

TEST_F_TIMEOUT(cl, channel_moves_boxes, 180)
{
	struct sender s[THREADS];
	odsm_chan c = { { 0 } }, wrong = { { 0 } }, forged;
	odsm_box b = { 0 }, x = { 0 };
	pthread_t tid[THREADS];
	struct timespec ts = { 0, 200 * 1000 * 1000 };
	uint64_t t0, fw;
	double cpu;
	uint64_t rt;
	unsigned int i;
	int ret;

	C_BEGIN();
	ASSERT_GE(MAX_NODES, C.nodes);
	ASSERT_EQ(0, reg_ops());
	/* before a runtime: no channel */
	EXPECT_EQ(-ENOENT, odsm_chan_new(4, &c));
	ASSERT_EQ(0, odsm_spawn_start(1, &rt));
	if (C.self == 0) {
		EXPECT_EQ(-EINVAL, odsm_chan_new(0, &c));
		EXPECT_EQ(-EINVAL, odsm_chan_new(ODSM_CHAN_CAP_MAX + 1, &c));
		ASSERT_EQ(0, odsm_chan_new(CHAN_CAP, &c));
		ASSERT_EQ(0, odsm_box_new(&x, 64, ODSM_ALLOC_ZERO));
		ASSERT_EQ(0, odsm_deleg_entrust(odsm_spawn_runtime(), 0, &x,
						0, &wrong.t));
		ASSERT_EQ(0, put_chan(W_SP_WRONG, &wrong));
		ASSERT_EQ(0, put_chan(W_SP_CHAN, &c));
	}
	ASSERT_EQ(0, c_dir_wait(0, SECS));
	ASSERT_EQ(0, sp_barrier(2));
	ASSERT_EQ(0, get_chan(W_SP_CHAN, &c));
	ASSERT_EQ(0, get_chan(W_SP_WRONG, &wrong));

	/* bad input, on every node: an errno, the box kept */
	ASSERT_EQ(0, odsm_box_new(&b, 64, ODSM_ALLOC_ZERO));
	EXPECT_EQ(-EINVAL, odsm_chan_send(NULL, &b));
	EXPECT_EQ(-EINVAL, odsm_chan_send(&c, NULL));
	EXPECT_EQ(-EINVAL, odsm_chan_send(&c, &x));	/* empty */
	EXPECT_EQ(-EBADFD, odsm_chan_send(&wrong, &b));
	forged = c;
	forged.t.gen += 7;
	EXPECT_EQ(-ESTALE, odsm_chan_send(&forged, &b));
	forged = c;
	forged.t.cell = 0x7fffffff;
	EXPECT_EQ(-ESTALE, odsm_chan_send(&forged, &b));
	EXPECT_NE(0ULL, b.g);
	EXPECT_EQ(-EINVAL, odsm_chan_recv(NULL, &x, NULL, 0));
	EXPECT_EQ(-EINVAL, odsm_chan_recv(&c, &b, NULL, 0));	/* not empty */
	x.g = 0;
	if (C.self) {
		EXPECT_EQ(-EREMOTE, odsm_chan_recv(&c, &x, NULL, 0));
	} else {
		EXPECT_EQ(-EBADFD, odsm_chan_recv(&wrong, &x, NULL, 0));
		EXPECT_EQ(-EBADFD, odsm_chan_try_recv(&wrong, &x, NULL));
		EXPECT_EQ(-ESTALE, odsm_chan_recv(&forged, &x, NULL, 0));
		/*
		 * What the library knows about the heap: a FUTEX_WAIT on
		 * one of its words fails (EFAULT in the 6.1 guest), so the
		 * channel sleeps on a word of its process instead.  Logged,
		 * not judged: it is the module's, and may change.
		 */
		ASSERT_EQ(0, odsm_alloc(8, 8, ODSM_ALLOC_ZERO, &fw));
		t0 = c_now_ms();
		ret = syscall(SYS_futex, odsm_ptr(fw), FUTEX_WAIT, 0, &ts,
			      NULL, 0) ? -errno : 0;
		TH_LOG("FUTEX_WAIT on a heap word: %s after %llu ms",
		       odsm_strerror(ret),
		       (unsigned long long)(c_now_ms() - t0));
		EXPECT_EQ(0, odsm_free(fw));
		/* an empty channel: recv sleeps (a futex of the heap's
		 * page), it does not spin on the trustee
		 */
		cpu = cpu_secs();
		t0 = c_now_ms();
		EXPECT_EQ(-ETIMEDOUT, odsm_chan_recv(&c, &x, NULL, 500));
		cpu = cpu_secs() - cpu;
		EXPECT_LE(500U, c_now_ms() - t0);
		EXPECT_GT(0.1, cpu) {
			TH_LOG("a 500 ms recv used %.3f s of CPU", cpu);
		}
	}
	EXPECT_EQ(-EINVAL, odsm_chan_close(NULL));
	EXPECT_EQ(-EBADFD, odsm_chan_close(&wrong));
	ASSERT_EQ(0, sp_barrier(3));

	/* the senders, on every node */
	for (i = 0; i < THREADS; i++) {
		s[i] = (struct sender){ .c = c, .thread = i };
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, send_loop, &s[i]));
	}
	if (C.self == 0)
		receive_all(_metadata, &c);
	for (i = 0; i < THREADS; i++) {
		pthread_join(tid[i], NULL);
		EXPECT_EQ(0, s[i].err) {
			TH_LOG("sender %u: %s", i, odsm_strerror(s[i].err));
		}
		EXPECT_EQ(0U, s[i].not_empty);
	}
	if (C.self == 0)
		ASSERT_EQ(0, odsm_chan_close(&c));
	ASSERT_EQ(0, sp_barrier(4));

	/* closed: a send is refused and the box stays the sender's */
	ret = odsm_chan_send(&c, &b);
	EXPECT_EQ(-EPIPE, ret);
	EXPECT_NE(0ULL, b.g);
	EXPECT_EQ(-EPIPE, odsm_chan_try_send(&c, &b));
	if (C.self == 0) {
		x.g = 0;
		EXPECT_EQ(-EPIPE, odsm_chan_recv(&c, &x, NULL, 0));
	}
	EXPECT_EQ(0, odsm_box_drop(&b));
	ASSERT_EQ(0, sp_barrier(5));
	if (C.self == 0) {
		EXPECT_EQ(0, odsm_chan_free(&c));
		ASSERT_EQ(0, get_chan(W_SP_CHAN, &c));
		x.g = 0;
		EXPECT_EQ(-ESTALE, odsm_chan_recv(&c, &x, NULL, 0));
		EXPECT_EQ(-ESTALE, odsm_chan_close(&c));
		EXPECT_EQ(0, odsm_trust_drop(&wrong.t));
	}
	ASSERT_EQ(0, sp_barrier(6));
	odsm_spawn_stop();
}

/* ---- shared immutable objects ------------------------------------------- */

#define ARC_LEN		256
#define ARC_TAG		33

TEST_F_TIMEOUT(cl, arc_shared_immutable, 180)
{
	odsm_arc a = { 0 }, mine = { 0 }, stale;
	odsm_box b, back = { 0 };
	struct odsm_obj_info oi;
	uint8_t init[ARC_LEN];
	const uint8_t *p;
	odsm_ref r;

	C_BEGIN();
	if (C.self == 0) {
		c_fill(init, sizeof(init), 0, ARC_TAG);
		ASSERT_EQ(0, odsm_box_new_on(&b, 0, sizeof(init), 0, init));
		ASSERT_EQ(0, odsm_arc_new(&b, &a));
		EXPECT_EQ(0ULL, b.g);
		EXPECT_TRUE(c_in_part(a.cnt, 0));
		ASSERT_EQ(0, c_put(0, W_SP_ARC, a.g));
		ASSERT_EQ(0, c_put(0, W_SP_ARC + 1, a.cnt));
	}
	ASSERT_EQ(0, c_dir_wait(0, SECS));
	ASSERT_EQ(0, sp_barrier(7));
	ASSERT_EQ(0, c_get(0, W_SP_ARC, &a.g));
	ASSERT_EQ(0, c_get(0, W_SP_ARC + 1, &a.cnt));
	/* node 0 holds its reference until every clone is made */
	ASSERT_EQ(0, odsm_arc_clone(&a, &mine));
	ASSERT_EQ(0, odsm_arc_read(&mine, &r, (const void **)&p));
	EXPECT_EQ(-1, c_check(p, ARC_LEN, 0, ARC_TAG));
	EXPECT_EQ(0, odsm_return(&r));
	/* shared: nobody gets to write it */
	EXPECT_EQ(-EBUSY, odsm_arc_get_mut(&mine, &back));
	EXPECT_EQ(0ULL, back.g);
	ASSERT_EQ(0, sp_barrier(8));
	EXPECT_EQ(0, odsm_arc_drop(&mine));
	EXPECT_EQ(0ULL, mine.g);
	ASSERT_EQ(0, sp_barrier(9));
	stale = a;
	if (C.self == 0) {
		/* the clones are gone; node 0's own is the last: it frees */
		EXPECT_EQ(0, odsm_obj_info(a.g, &oi));
		EXPECT_EQ(0, odsm_arc_drop(&a));
		EXPECT_NE(0, odsm_obj_info(stale.g, &oi));
		EXPECT_NE(0, odsm_obj_info(stale.cnt, &oi));
		EXPECT_EQ(-ESTALE, odsm_arc_clone(&stale, &mine));
		EXPECT_EQ(-ESTALE, odsm_arc_drop(&stale));
	}
	EXPECT_EQ(-EINVAL, odsm_arc_drop(NULL));
	EXPECT_EQ(-EINVAL, odsm_arc_clone(NULL, &mine));
	EXPECT_EQ(-EINVAL, odsm_arc_new(&back, &mine));	/* empty box */
}

/* ---- a runtime killed under a task ------------------------------------- */

/* node 0's child: a runtime that lives until it is killed */
static void doomed_runtime(void)
{
	uint64_t rt;

	alarm(120);		/* never outlives the program for long */
	if (odsm_spawn_start(1, &rt) || c_put(0, W_SP_KILL, rt))
		_exit(1);
	for (;;)
		pause();
}

/*
 * Node 1 spawns a task that naps on a worker of node 0's runtime, whose
 * process node 0 then kills: the join fails with -EOWNERDEAD far within
 * the cluster's timeout, and a later spawn there with -ESRCH.
 */
TEST_F_TIMEOUT(cl, join_of_killed_runtime, 180)
{
	uint64_t rt, go, at;
	odsm_task *t;
	pid_t pid;
	int st = 0, ret;

	C_BEGIN();
	ASSERT_EQ(0, reg_ops());
	if (C.self == 0) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			doomed_runtime();
		/* no ASSERT until the child is gone: it must not outlive us */
		EXPECT_EQ(0, c_poll(0, W_SP_KILL + 1, 0, SECS, NULL));
		c_sleep_ms(200);	/* the task is on the worker */
		kill(pid, SIGKILL);
		EXPECT_EQ(pid, waitpid(pid, &st, 0));
		EXPECT_TRUE(WIFSIGNALED(st));
		return;
	}
	if (C.self != 1)
		return;
	ASSERT_EQ(0, c_dir_wait(0, SECS));
	ASSERT_EQ(0, c_poll(0, W_SP_KILL, 0, SECS, &rt));
	ASSERT_EQ(0, odsm_spawn_peer(0, rt));
	ASSERT_EQ(0, odsm_spawn_on(0, op_nap, NULL, 0, &t));
	c_sleep_ms(300);
	EXPECT_EQ(0, odsm_task_done(t));	/* it naps */
	go = c_now_ms();
	ASSERT_EQ(0, c_put(0, W_SP_KILL + 1, 1));
	ret = odsm_task_join(t, NULL, NULL);
	at = c_now_ms();
	EXPECT_EQ(-EOWNERDEAD, ret);
	/* killed ~0.2 s after go; the cluster's timeout is seconds */
	EXPECT_GT(go + C.timeout_ms / 2, at);
	TH_LOG("the join failed %llu ms after go (the kill is ~200 ms after it): %s",
	       (unsigned long long)(at - go), odsm_strerror(ret));
	ASSERT_EQ(0, odsm_spawn_on(0, op_add, NULL, 0, &t));
	EXPECT_EQ(-ESRCH, odsm_task_join(t, NULL, NULL));
	EXPECT_GT(at + C.timeout_ms / 2, c_now_ms());
}

TEST_HARNESS_MAIN
