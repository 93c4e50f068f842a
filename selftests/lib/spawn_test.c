// SPDX-License-Identifier: GPL-2.0
/*
 * Host test of libodsm's remote execution and channels (userlib/
 * odsm_spawn.c, odsm_chan.c) on this node, over the fake /dev/odsm:
 * tasks spawned to this node's runtime run on its launch workers and
 * return their results to a joiner on any thread; a channel carries
 * boxes from several threads, each once, in order per sender, the
 * sender's box empty; a receiver blocked in recv sleeps (no busy wait)
 * and wakes on a send; every refusal has its errno.  Shared immutable
 * objects: clones read the same bytes, only the last drop frees (object
 * and count, at the object's home), get_mut is refused while shared.  The cluster test
 * (selftests/cluster/cluster_spawn_test.c) does the same across nodes.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "odsm.h"
/* libodsm's ioctls answered by the fake */
#include "fake_odsm.h"

#include "ksft_host.h"

static uint64_t OP_SQUARE, OP_SLEEP, OP_WHERE;

static int op_square(void *obj, const void *arg, size_t len, void *ret,
		     size_t *rl)
{
	uint64_t x;

	if (len != sizeof(x) || *rl < sizeof(x))
		return -EINVAL;
	memcpy(&x, arg, sizeof(x));
	x *= x;
	memcpy(ret, &x, sizeof(x));
	*rl = sizeof(x);
	return 7;
}

/* blocks: what a trustee's operation must never do, a worker may */
static int op_sleep(void *obj, const void *arg, size_t len, void *ret,
		    size_t *rl)
{
	*rl = 0;
	usleep(200 * 1000);
	return 0;
}

/* the context: the object's first word and the node */
static int op_where(void *obj, const void *arg, size_t len, void *ret,
		    size_t *rl)
{
	const struct odsm_spawn_ctx *ctx = obj;
	uint64_t out[2];

	out[0] = *(const uint64_t *)odsm_ptr(ctx->obj);
	out[1] = ctx->node;
	memcpy(ret, out, sizeof(out));
	*rl = sizeof(out);
	return 0;
}

static void setup(struct __test_metadata *_metadata, uint64_t *rt)
{
	fk_init();
	ASSERT_EQ(0, odsm_deleg_register("t.square", op_square, &OP_SQUARE));
	ASSERT_EQ(0, odsm_deleg_register("t.sleep", op_sleep, &OP_SLEEP));
	ASSERT_EQ(0, odsm_deleg_register("t.where", op_where, &OP_WHERE));
	ASSERT_EQ(0, odsm_spawn_start(4, rt));
}

struct joiner {
	odsm_task *t;
	int st;
	uint64_t v;
};

static void *join_it(void *arg)
{
	struct joiner *j = arg;
	size_t len = sizeof(j->v);

	j->st = odsm_task_join(j->t, &j->v, &len);
	return NULL;
}

TEST(spawn_join)
{
	struct joiner j[8];
	pthread_t tid[8];
	odsm_task *t, *slow[4];
	uint64_t rt, x, out[2], t0;
	uint8_t big[ODSM_SPAWN_ARG_MAX + 1] = { 0 };
	odsm_box b, empty = { 0 };
	struct timespec ts;
	unsigned int i;
	size_t len;

	setup(_metadata, &rt);
	EXPECT_EQ(-EALREADY, odsm_spawn_start(1, &rt));
	EXPECT_TRUE(odsm_is_local(rt));
	/* this node is known; node 1 is not (nobody told us) */
	EXPECT_EQ(-ENOENT, odsm_spawn_on(1, OP_SQUARE, &x, sizeof(x), &t));
	EXPECT_EQ(NULL, t);
	EXPECT_EQ(-EINVAL, odsm_spawn_peer(1, rt));	/* not node 1's */
	EXPECT_EQ(-EINVAL, odsm_spawn_peer(0, rt + 64));

	/* joined by other threads than the spawner */
	for (i = 0; i < 8; i++) {
		x = i + 3;
		ASSERT_EQ(0, odsm_spawn_on(0, OP_SQUARE, &x, sizeof(x),
					   &j[i].t));
		EXPECT_EQ(0U, odsm_task_node(j[i].t));
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, join_it, &j[i]));
	}
	for (i = 0; i < 8; i++) {
		pthread_join(tid[i], NULL);
		EXPECT_EQ(7, j[i].st);
		EXPECT_EQ((uint64_t)(i + 3) * (i + 3), j[i].v);
	}

	/* four blocking tasks run at once on the four workers */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, odsm_spawn_on(0, OP_SLEEP, NULL, 0, &slow[i]));
	EXPECT_EQ(0, odsm_task_done(slow[0]));
	for (i = 0; i < 4; i++)
		EXPECT_EQ(0, odsm_task_join(slow[i], NULL, NULL));
	clock_gettime(CLOCK_MONOTONIC, &ts);
	EXPECT_GT(t0 + 700, ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000);

	/* spawn_to: the op gets the object's address and runs on its node */
	ASSERT_EQ(0, odsm_box_new(&b, 8, 0));
	*(uint64_t *)odsm_ptr(b.g) = 0x1234;
	ASSERT_EQ(0, odsm_spawn_to(&b, OP_WHERE, NULL, 0, &t));
	len = sizeof(out);
	EXPECT_EQ(0, odsm_task_join(t, out, &len));
	EXPECT_EQ(sizeof(out), len);
	EXPECT_EQ(0x1234U, out[0]);
	EXPECT_EQ(0U, out[1]);
	EXPECT_NE(0U, b.g);		/* the box is still the caller's */
	/* a smaller room gets the first bytes */
	ASSERT_EQ(0, odsm_spawn_to(&b, OP_WHERE, NULL, 0, &t));
	len = 8;
	EXPECT_EQ(0, odsm_task_join(t, out, &len));
	EXPECT_EQ(8U, len);

	/* refusals */
	EXPECT_EQ(-EINVAL, odsm_spawn_to(&empty, OP_WHERE, NULL, 0, &t));
	EXPECT_EQ(-EINVAL, odsm_spawn_to(NULL, OP_WHERE, NULL, 0, &t));
	EXPECT_EQ(-EINVAL, odsm_spawn_on(ODSM_SPAWN_NODES, OP_SQUARE, NULL, 0,
					 &t));
	EXPECT_EQ(-EINVAL, odsm_spawn_on(0, OP_SQUARE, NULL, 8, &t));
	EXPECT_EQ(-EINVAL, odsm_spawn_on(0, OP_SQUARE, NULL, 0, NULL));
	EXPECT_EQ(-E2BIG, odsm_spawn_on(0, OP_SQUARE, big, sizeof(big), &t));
	EXPECT_EQ(-EINVAL, odsm_task_join(NULL, NULL, NULL));
	EXPECT_EQ(-EINVAL, odsm_task_done(NULL));
	ASSERT_EQ(0, odsm_spawn_on(0, odsm_deleg_op_id("t.unknown"), NULL, 0,
				   &t));
	EXPECT_EQ(-EBADRQC, odsm_task_join(t, NULL, NULL));
	ASSERT_EQ(0, odsm_spawn_on(0, odsm_deleg_op_id("odsm.spawn.run"),
				   NULL, 0, &t));
	EXPECT_EQ(-EBADRQC, odsm_task_join(t, NULL, NULL));
	/* the op's own error */
	ASSERT_EQ(0, odsm_spawn_on(0, OP_SQUARE, big, 3, &t));
	EXPECT_EQ(-EINVAL, odsm_task_join(t, NULL, NULL));

	EXPECT_EQ(0, odsm_box_drop(&b));
	odsm_spawn_stop();
	EXPECT_EQ(-ENOENT, odsm_spawn_on(0, OP_SQUARE, &x, sizeof(x), &t));
	fk_fini();
}

/* ---- channels ------------------------------------------------------------ */

#define SENDERS	4
#define MSGS	200

struct sender {
	odsm_chan c;
	unsigned int id;
	int err;
	unsigned int not_empty;
};

static void *send_loop(void *arg)
{
	struct sender *s = arg;
	unsigned int i;
	uint64_t *p;
	odsm_box b;
	int ret;

	for (i = 0; i < MSGS; i++) {
		ret = odsm_box_new(&b, 64, 0);
		if (ret) {
			s->err = ret;
			return NULL;
		}
		p = odsm_ptr(b.g);
		p[0] = s->id;
		p[1] = i;
		ret = i % 2 ? odsm_chan_send(&s->c, &b) :
			      odsm_chan_try_send(&s->c, &b);
		while (ret == -EAGAIN)	/* full: try_send does not wait */
			ret = odsm_chan_send(&s->c, &b);
		if (ret) {
			s->err = ret;
			return NULL;
		}
		s->not_empty += b.g != 0;
	}
	return NULL;
}

static double cpu_secs(void)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

struct waiter {
	odsm_chan c;
	int st;
	double cpu;
	odsm_box b;
};

static void *recv_one(void *arg)
{
	struct waiter *w = arg;
	double c0 = cpu_secs();

	w->b.g = 0;
	w->b.ext = 0;
	w->st = odsm_chan_recv(&w->c, &w->b, NULL, 5000);
	w->cpu = cpu_secs() - c0;
	return NULL;
}

TEST(channel)
{
	struct sender s[SENDERS];
	pthread_t tid[SENDERS], wt;
	unsigned int next[SENDERS] = { 0 }, n, i, from;
	odsm_chan c, forged, wrong;
	odsm_box b = { 0 }, x = { 0 };
	struct waiter w;
	uint64_t rt, *p;
	int ret;

	fk_init();
	EXPECT_EQ(-ENOENT, odsm_chan_new(4, &c));	/* no runtime yet */
	fk_fini();
	setup(_metadata, &rt);
	EXPECT_EQ(-EINVAL, odsm_chan_new(0, &c));
	EXPECT_EQ(-EINVAL, odsm_chan_new(ODSM_CHAN_CAP_MAX + 1, &c));
	EXPECT_EQ(-EINVAL, odsm_chan_new(4, NULL));
	ASSERT_EQ(0, odsm_chan_new(4, &c));

	/* empty: try_recv does not wait, recv times out */
	EXPECT_EQ(-EAGAIN, odsm_chan_try_recv(&c, &b, NULL));
	EXPECT_EQ(-ETIMEDOUT, odsm_chan_recv(&c, &b, NULL, 30));

	/* a blocked receiver sleeps, and a send wakes it */
	w.c = c;
	ASSERT_EQ(0, pthread_create(&wt, NULL, recv_one, &w));
	usleep(300 * 1000);
	ASSERT_EQ(0, odsm_box_new(&x, 16, ODSM_ALLOC_ZERO));
	ASSERT_EQ(0, odsm_chan_send(&c, &x));
	EXPECT_EQ(0U, x.g);
	pthread_join(wt, NULL);
	EXPECT_EQ(0, w.st);
	EXPECT_NE(0U, w.b.g);
	/* 300 ms asleep: far less CPU than that (a spin would burn it) */
	EXPECT_GT(0.1, w.cpu);
	EXPECT_EQ(0, odsm_box_drop(&w.b));

	/* full (4): try_send refuses, the box stays the sender's */
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, odsm_box_new(&x, 16, ODSM_ALLOC_ZERO));
		ASSERT_EQ(0, odsm_chan_try_send(&c, &x));
	}
	ASSERT_EQ(0, odsm_box_new(&x, 16, ODSM_ALLOC_ZERO));
	EXPECT_EQ(-EAGAIN, odsm_chan_try_send(&c, &x));
	EXPECT_NE(0U, x.g);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, odsm_chan_try_recv(&c, &b, &from));
		EXPECT_EQ(0U, from);
		EXPECT_EQ(0, odsm_box_drop(&b));
	}

	/* many senders, one receiver: each box once, in order per sender */
	for (i = 0; i < SENDERS; i++) {
		s[i] = (struct sender){ .c = c, .id = i };
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, send_loop, &s[i]));
	}
	for (n = 0; n < SENDERS * MSGS; n++) {
		ASSERT_EQ(0, odsm_chan_recv(&c, &b, NULL, 10000));
		p = odsm_ptr(b.g);
		ASSERT_GT((uint64_t)SENDERS, p[0]);
		EXPECT_EQ(next[p[0]], p[1]);
		next[p[0]] = p[1] + 1;
		ASSERT_EQ(0, odsm_box_drop(&b));
	}
	for (i = 0; i < SENDERS; i++) {
		pthread_join(tid[i], NULL);
		EXPECT_EQ(0, s[i].err);
		EXPECT_EQ(0U, s[i].not_empty);
		EXPECT_EQ((unsigned int)MSGS, next[i]);
	}

	/* refusals */
	EXPECT_EQ(-EINVAL, odsm_chan_send(NULL, &x));
	EXPECT_EQ(-EINVAL, odsm_chan_send(&c, NULL));
	EXPECT_EQ(-EINVAL, odsm_chan_send(&c, &b));	/* empty */
	EXPECT_EQ(-EINVAL, odsm_chan_recv(&c, &x, NULL, 0));	/* not empty */
	EXPECT_EQ(-EINVAL, odsm_chan_recv(NULL, &b, NULL, 0));
	EXPECT_EQ(-EINVAL, odsm_chan_try_recv(&c, NULL, NULL));
	forged = c;
	forged.t.gen ^= 0x40;
	EXPECT_EQ(-ESTALE, odsm_chan_send(&forged, &x));
	EXPECT_EQ(-ESTALE, odsm_chan_recv(&forged, &b, NULL, 0));
	forged = c;
	forged.t.cell = 0x7fffffff;
	EXPECT_EQ(-ESTALE, odsm_chan_send(&forged, &x));
	EXPECT_EQ(-ESTALE, odsm_chan_recv(&forged, &b, NULL, 0));
	forged.t.arena = 8;
	EXPECT_EQ(-ESTALE, odsm_chan_recv(&forged, &b, NULL, 0));
	/* an entrusted object that is no channel */
	ASSERT_EQ(0, odsm_box_new(&b, 64, ODSM_ALLOC_ZERO));
	ASSERT_EQ(0, odsm_deleg_entrust(odsm_spawn_runtime(), 0, &b, 0,
					&wrong.t));
	EXPECT_EQ(-EBADFD, odsm_chan_send(&wrong, &x));
	EXPECT_EQ(-EBADFD, odsm_chan_recv(&wrong, &b, NULL, 0));
	EXPECT_EQ(-EBADFD, odsm_chan_try_recv(&wrong, &b, NULL));
	EXPECT_EQ(-EBADFD, odsm_chan_close(&wrong));
	EXPECT_EQ(-EBADFD, odsm_chan_free(&wrong));
	EXPECT_EQ(0, odsm_trust_drop(&wrong.t));
	EXPECT_NE(0U, x.g);

	/*
	 * A sender of node 1 (this process speaks for it: the node id is
	 * what a send records), then node 1 goes down: its box still comes,
	 * then the receiver learns of it once, and waits on after that.
	 */
	ASSERT_EQ(0, odsm_box_new(&b, 16, ODSM_ALLOC_ZERO));
	odsm_rt.info.node_id = 1;
	ret = odsm_chan_send(&c, &b);
	odsm_rt.info.node_id = 0;
	ASSERT_EQ(0, ret);
	fk.node1_down = true;
	ASSERT_EQ(0, odsm_chan_recv(&c, &b, &from, 0));
	EXPECT_EQ(1U, from);
	EXPECT_EQ(0, odsm_box_drop(&b));
	from = 7;
	EXPECT_EQ(-EHOSTDOWN, odsm_chan_recv(&c, &b, &from, 1000));
	EXPECT_EQ(1U, from);
	EXPECT_EQ(-ETIMEDOUT, odsm_chan_recv(&c, &b, &from, 50));
	fk.node1_down = false;

	/* a sender on node 70 of 80 (refused -EINVAL before) */
	fk.nodes = 80;
	ASSERT_EQ(0, odsm_box_new(&b, 16, ODSM_ALLOC_ZERO));
	odsm_rt.info.node_id = 70;
	ret = odsm_chan_send(&c, &b);
	odsm_rt.info.node_id = 0;
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, odsm_chan_recv(&c, &b, &from, 0));
	EXPECT_EQ(70U, from);
	EXPECT_EQ(0, odsm_box_drop(&b));
	fk.nodes = 0;

	/* closed: queued boxes still come, then -EPIPE */
	ASSERT_EQ(0, odsm_chan_send(&c, &x));
	ASSERT_EQ(0, odsm_chan_close(&c));
	ASSERT_EQ(0, odsm_box_new(&x, 16, ODSM_ALLOC_ZERO));
	EXPECT_EQ(-EPIPE, odsm_chan_send(&c, &x));
	EXPECT_NE(0U, x.g);
	ASSERT_EQ(0, odsm_chan_recv(&c, &b, NULL, 0));
	EXPECT_EQ(0, odsm_box_drop(&b));
	EXPECT_EQ(-EPIPE, odsm_chan_recv(&c, &b, NULL, -1));
	/* free drops what is still queued; the handle is stale after */
	forged = c;
	EXPECT_EQ(0, odsm_chan_free(&c));
	EXPECT_EQ(-ESTALE, odsm_chan_send(&forged, &x));
	EXPECT_EQ(-ESTALE, odsm_chan_recv(&forged, &b, NULL, 0));
	EXPECT_EQ(0, odsm_box_drop(&x));
	odsm_spawn_stop();
	fk_fini();
}

/* ---- shared immutable objects ------------------------------------------- */

TEST(arc)
{
	odsm_arc a, c1, c2, stale;
	odsm_box b, back = { 0 }, rb, empty = { 0 };
	const uint64_t *p;
	unsigned long frees;
	uint64_t *w;
	odsm_ref r;

	fk_init();
	ASSERT_EQ(0, odsm_box_new(&b, 64, 0));
	w = odsm_ptr(b.g);
	w[0] = 42;
	w[7] = 4242;
	EXPECT_EQ(-EINVAL, odsm_arc_new(&empty, &a));
	EXPECT_EQ(-EINVAL, odsm_arc_new(NULL, &a));
	ASSERT_EQ(0, odsm_arc_new(&b, &a));
	EXPECT_EQ(0U, b.g);		/* the arc owns it now */
	EXPECT_TRUE(odsm_is_local(a.cnt));	/* the count at the home */

	/* clones read the same bytes */
	ASSERT_EQ(0, odsm_arc_clone(&a, &c1));
	ASSERT_EQ(0, odsm_arc_clone(&c1, &c2));
	ASSERT_EQ(0, odsm_arc_read(&c2, &r, (const void **)&p));
	EXPECT_EQ(42U, p[0]);
	EXPECT_EQ(4242U, p[7]);
	EXPECT_EQ(0, odsm_return(&r));
	EXPECT_EQ(-EINVAL, odsm_arc_read(NULL, &r, (const void **)&p));

	/* shared: a write (the way to one) is refused */
	EXPECT_EQ(-EBUSY, odsm_arc_get_mut(&a, &back));
	EXPECT_EQ(0U, back.g);
	/* drops before the last free nothing */
	frees = fk.st.frees;
	EXPECT_EQ(0, odsm_arc_drop(&c1));
	EXPECT_EQ(0U, c1.g);
	EXPECT_EQ(0, odsm_arc_drop(&c2));
	EXPECT_EQ(frees, fk.st.frees);
	EXPECT_EQ(-EINVAL, odsm_arc_drop(&c2));		/* emptied */
	stale = a;
	/* the last reference: get_mut gives the owner box back */
	ASSERT_EQ(0, odsm_arc_get_mut(&a, &back));
	EXPECT_NE(0U, back.g);
	EXPECT_EQ(frees + 1, fk.st.frees);		/* the count only */
	EXPECT_EQ(-ESTALE, odsm_arc_clone(&stale, &c1));
	EXPECT_EQ(-ESTALE, odsm_arc_drop(&stale));
	EXPECT_EQ(-ESTALE, odsm_arc_get_mut(&stale, &rb));

	/* an object of node 1: its count is on node 1; the last drop frees
	 * both there
	 */
	ASSERT_EQ(0, odsm_box_new_on(&rb, 1, 64, ODSM_ALLOC_ZERO, NULL));
	ASSERT_EQ(0, odsm_arc_new(&rb, &a));
	EXPECT_FALSE(odsm_is_local(a.cnt));
	ASSERT_EQ(0, odsm_arc_clone(&a, &c1));
	ASSERT_EQ(0, odsm_arc_read(&c1, &r, (const void **)&p));
	EXPECT_EQ(0U, p[0]);
	EXPECT_EQ(0, odsm_return(&r));
	frees = fk.st.remote_frees;
	EXPECT_EQ(0, odsm_arc_drop(&a));
	EXPECT_EQ(frees, fk.st.remote_frees);
	EXPECT_EQ(0, odsm_arc_drop(&c1));
	EXPECT_EQ(frees + 2, fk.st.remote_frees);
	EXPECT_EQ(0, odsm_box_drop(&back));
	fk_fini();
}

/*
 * A handle kept after its arc's last drop, whose count's address the heap
 * gave to another arc since: the same address under another color.  The
 * heap's atomics ignore colors, so its clone added to the other arc's
 * count (which then refused get_mut) and its drop took that count to 0
 * and freed the other arc's count.
 */
TEST(arc_stale_handle_leaves_a_reused_count)
{
	odsm_arc a, stale, c;
	odsm_box b, back = { 0 }, x;
	unsigned long frees;

	fk_init();
	ASSERT_EQ(0, odsm_box_new(&b, 64, ODSM_ALLOC_ZERO));
	ASSERT_EQ(0, odsm_arc_new(&b, &a));
	ASSERT_EQ(0, odsm_box_new(&x, 64, ODSM_ALLOC_ZERO));
	/* the count's address, the color it had before (a freed arc's) */
	stale.g = x.g;
	stale.cnt = (a.cnt & ~(0xffffULL << 48)) |
		    (uint64_t)((odsm_color_of(a.cnt) + 0x7777) & 0xffff) << 48;
	ASSERT_NE(odsm_color_of(a.cnt), odsm_color_of(stale.cnt));
	frees = fk.st.frees;
	EXPECT_EQ(-ESTALE, odsm_arc_clone(&stale, &c));
	EXPECT_EQ(-ESTALE, odsm_arc_drop(&stale));
	EXPECT_EQ(-ESTALE, odsm_arc_get_mut(&stale, &back));
	EXPECT_EQ(frees, fk.st.frees);
	/* the live arc's count is still 1: its get_mut works */
	ASSERT_EQ(0, odsm_arc_get_mut(&a, &back));
	EXPECT_EQ(0, odsm_box_drop(&back));
	EXPECT_EQ(0, odsm_box_drop(&x));
	fk_fini();
}

TEST_HARNESS_MAIN
