// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm remote execution (odsm_spawn.h).
 *
 * Each process runs one delegation runtime in its node's partition, with
 * launch workers, and entrusts a small *anchor* object to it: a spawn is
 * an odsm_deleg_launch() on the anchor of the target node, so it travels
 * the delegation path (this node's slots, or the module's DELEG_CALL to
 * the node's gateway) and runs on one of its workers, where it may block,
 * allocate and apply.  The published address is a *root* object holding
 * a magic word, the node id and the anchor's handle: a peer reads it once
 * (odsm_spawn_peer) and keeps the handle.
 *
 * A launch waits for its answer, so the caller's thread would be held;
 * a task is handed to a courier thread of this process instead, which
 * makes the call and sets the task's done word (a futex) when the answer
 * is in.  Couriers are started on demand up to SP_COURIERS, so that many
 * tasks run at once (a spawned operation that spawns and joins holds
 * one); more wait in the queue.  The module bounds each call by the
 * cluster's timeout, so a join of work on a node that died ends too.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "odsm.h"
#include "odsm_deleg_int.h"
#include "odsm_spawn_int.h"

#define SP_MAGIC	0x4e5741505344534fULL	/* "OSDSPAWN" */
#define SP_COURIERS	32
#define SP_RUN_OP	"odsm.spawn.run"

/* The published root of a node's runtime. */
struct sp_root {
	uint64_t magic;
	uint64_t node;
	odsm_trust anchor;
};

/* What a launch carries before the caller's bytes. */
struct sp_hdr {
	uint64_t op;
	uint64_t obj;
};

struct odsm_task {
	struct odsm_task *next;		/* on the couriers' queue */
	odsm_trust anchor;
	unsigned int node;
	uint32_t done;			/* futex: 1 once status is set */
	int status;
	size_t arg_len, ret_len;
	uint8_t arg[sizeof(struct sp_hdr) + ODSM_SPAWN_ARG_MAX];
	uint8_t ret[ODSM_SPAWN_RET_MAX];
};

static pthread_mutex_t sp_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sp_cond = PTHREAD_COND_INITIALIZER;
static struct odsm_task *sp_head, *sp_tail;
static unsigned int sp_ncour, sp_idle, sp_nq;

/* The runtime of this process, and each node's anchor. */
static struct odsm_deleg *sp_rt;
static uint64_t sp_root_g;
static odsm_trust sp_anchor[ODSM_SPAWN_NODES];
static uint8_t sp_known[ODSM_SPAWN_NODES];

/* The launch workers run this: the caller's op, with the context. */
static int sp_run(void *obj, const void *arg, size_t arg_len, void *ret,
		  size_t *ret_len)
{
	static uint64_t self_id;
	struct odsm_spawn_ctx ctx = { .node = odsm_rt.info.node_id };
	struct sp_hdr h;
	odsm_deleg_fn fn;

	(void)obj;
	if (!self_id)
		self_id = odsm_deleg_op_id(SP_RUN_OP);
	if (arg_len < sizeof(h))
		return -EINVAL;
	memcpy(&h, arg, sizeof(h));
	fn = h.op == self_id ? NULL : dg_op_lookup(h.op);
	if (!fn)
		return -EBADRQC;
	ctx.obj = h.obj;
	return fn(&ctx, (const uint8_t *)arg + sizeof(h),
		  arg_len - sizeof(h), ret, ret_len);
}

static void *sp_courier(void *unused)
{
	struct odsm_task *t;
	size_t len;

	(void)unused;
	for (;;) {
		pthread_mutex_lock(&sp_lock);
		sp_idle++;
		while (!sp_head)
			pthread_cond_wait(&sp_cond, &sp_lock);
		sp_idle--;
		sp_nq--;
		t = sp_head;
		sp_head = t->next;
		if (!sp_head)
			sp_tail = NULL;
		pthread_mutex_unlock(&sp_lock);

		len = sizeof(t->ret);
		t->status = odsm_deleg_launch(&t->anchor,
					      odsm_deleg_op_id(SP_RUN_OP),
					      t->arg, t->arg_len, t->ret, &len);
		t->ret_len = len;
		__atomic_store_n(&t->done, 1, __ATOMIC_RELEASE);
		dg_futex_wake(&t->done, INT_MAX);
	}
	return NULL;
}

/*
 * A child of fork() has none of the couriers (only the forking thread
 * goes on), nor the tasks queued for them (they were its parent's): it
 * starts its own on first use.
 */
static void sp_atfork_child(void)
{
	pthread_mutex_init(&sp_lock, NULL);
	pthread_cond_init(&sp_cond, NULL);
	sp_head = sp_tail = NULL;
	sp_ncour = sp_idle = sp_nq = 0;
}

static void sp_once(void)
{
	pthread_atfork(NULL, NULL, sp_atfork_child);
}

static pthread_once_t sp_init = PTHREAD_ONCE_INIT;

/* Queue t for a courier, starting one when none is idle. */
static int sp_queue(struct odsm_task *t)
{
	pthread_attr_t at;
	pthread_t tid;
	int ret = 0;

	t->next = NULL;
	pthread_once(&sp_init, sp_once);
	pthread_mutex_lock(&sp_lock);
	/* an idle courier for each queued task and this one */
	if (sp_idle <= sp_nq && sp_ncour < SP_COURIERS) {
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		if (!pthread_create(&tid, &at, sp_courier, NULL))
			sp_ncour++;
		pthread_attr_destroy(&at);
	}
	if (!sp_ncour) {
		ret = -EAGAIN;		/* no thread to make the call */
		goto out;
	}
	if (sp_tail)
		sp_tail->next = t;
	else
		sp_head = t;
	sp_tail = t;
	sp_nq++;
	pthread_cond_signal(&sp_cond);
out:
	pthread_mutex_unlock(&sp_lock);
	return ret;
}

int odsm_spawn_start(unsigned int workers, uint64_t *addr)
{
	struct odsm_deleg_config c = { .trustees = 1, .workers = workers };
	struct odsm_deleg_arena a;
	struct sp_root *r;
	odsm_box b;
	int ret;

	if (!addr || !workers || workers > 64 || !odsm_rt.tag)
		return -EINVAL;
	if (sp_rt)
		return -EALREADY;
	if (odsm_rt.info.node_id >= ODSM_SPAWN_NODES)
		return -ERANGE;
	ret = odsm_deleg_register(SP_RUN_OP, sp_run, NULL);
	if (!ret)
		ret = ch_register();
	if (ret)
		return ret;
	/* workers, couriers, the gateways and a few application threads */
	c.clients = workers + SP_COURIERS + DG_GATEWAYS + 32;
	ret = odsm_deleg_arena_heap(&a, odsm_deleg_arena_size(&c));
	if (ret)
		return ret;
	ret = odsm_deleg_start(&a, &c, &sp_rt);
	if (ret)
		goto err_arena;
	ret = odsm_box_new(&b, 16, ODSM_ALLOC_ZERO);
	if (ret)
		goto err_stop;
	ret = odsm_alloc(sizeof(*r), 64, ODSM_ALLOC_ZERO, &sp_root_g);
	if (ret)
		goto err_box;
	r = odsm_ptr(sp_root_g);
	ret = odsm_deleg_entrust(sp_rt, 0, &b, 0, &r->anchor);
	if (ret)
		goto err_root;
	r->node = odsm_rt.info.node_id;
	/* the magic last: a peer that reads it reads a whole root */
	__atomic_store_n(&r->magic, SP_MAGIC, __ATOMIC_RELEASE);
	sp_anchor[r->node] = r->anchor;
	sp_known[r->node] = 1;
	*addr = sp_root_g;
	return 0;
err_root:
	odsm_free(sp_root_g);
	sp_root_g = 0;
err_box:
	odsm_box_drop(&b);
err_stop:
	odsm_deleg_stop(sp_rt);
	sp_rt = NULL;
err_arena:
	odsm_deleg_arena_heap_free(&a);
	return ret;
}

int odsm_spawn_peer(unsigned int node, uint64_t addr)
{
	struct sp_root r;
	int ret;

	if (node >= ODSM_SPAWN_NODES || node >= odsm_rt.info.nr_nodes ||
	    !odsm_in_heap(addr) || sp_node_of(addr) != node || addr % 16)
		return -EINVAL;
	ret = odsm_read(addr, &r, sizeof(r));
	if (ret)
		return ret;
	if (r.magic != SP_MAGIC || r.node != node ||
	    sp_node_of(r.anchor.arena) != node)
		return -EINVAL;
	pthread_mutex_lock(&sp_lock);
	sp_anchor[node] = r.anchor;
	__atomic_store_n(&sp_known[node], 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&sp_lock);
	return 0;
}

struct odsm_deleg *odsm_spawn_runtime(void)
{
	return sp_rt;
}

void odsm_spawn_stop(void)
{
	struct odsm_deleg_arena a;
	odsm_trust t;

	if (!sp_rt)
		return;
	t = sp_anchor[odsm_rt.info.node_id];
	memset(sp_known, 0, sizeof(sp_known));
	((struct sp_root *)odsm_ptr(sp_root_g))->magic = 0;
	odsm_trust_drop(&t);
	a = sp_rt->a;
	odsm_deleg_stop(sp_rt);
	odsm_deleg_arena_heap_free(&a);
	odsm_free(sp_root_g);
	sp_rt = NULL;
	sp_root_g = 0;
}

static int sp_spawn(unsigned int node, uint64_t obj, uint64_t op,
		    const void *arg, size_t arg_len, odsm_task **out)
{
	struct sp_hdr h = { .op = op, .obj = obj };
	struct odsm_task *t;
	int ret;

	if (!out || (arg_len && !arg) || node >= ODSM_SPAWN_NODES)
		return -EINVAL;
	*out = NULL;
	if (arg_len > ODSM_SPAWN_ARG_MAX)
		return -E2BIG;
	if (!__atomic_load_n(&sp_known[node], __ATOMIC_ACQUIRE))
		return -ENOENT;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	pthread_mutex_lock(&sp_lock);
	t->anchor = sp_anchor[node];
	pthread_mutex_unlock(&sp_lock);
	t->node = node;
	memcpy(t->arg, &h, sizeof(h));
	if (arg_len)
		memcpy(t->arg + sizeof(h), arg, arg_len);
	t->arg_len = sizeof(h) + arg_len;
	ret = sp_queue(t);
	if (ret) {
		free(t);
		return ret;
	}
	*out = t;
	return 0;
}

int odsm_spawn_on(unsigned int node, uint64_t op, const void *arg,
		  size_t arg_len, odsm_task **t)
{
	return sp_spawn(node, 0, op, arg, arg_len, t);
}

int odsm_spawn_to(odsm_box *b, uint64_t op, const void *arg,
		  size_t arg_len, odsm_task **t)
{
	if (!b || !b->g || !odsm_in_heap(b->g)) {
		if (t)
			*t = NULL;
		return -EINVAL;
	}
	return sp_spawn(sp_node_of(b->g), odsm_box_share(b), op, arg,
			arg_len, t);
}

int odsm_task_join(odsm_task *t, void *ret, size_t *ret_len)
{
	unsigned int n = 0;
	int st;

	if (!t)
		return -EINVAL;
	while (!__atomic_load_n(&t->done, __ATOMIC_ACQUIRE)) {
		if (++n < 64) {
			dg_pause();
			continue;
		}
		dg_futex_wait(&t->done, 0, 0);
	}
	st = t->status;
	if (ret_len) {
		if (*ret_len > t->ret_len)
			*ret_len = t->ret_len;
		if (*ret_len && ret)
			memcpy(ret, t->ret, *ret_len);
	}
	free(t);
	return st;
}

int odsm_task_done(const odsm_task *t)
{
	if (!t)
		return -EINVAL;
	return (int)__atomic_load_n(&t->done, __ATOMIC_ACQUIRE);
}

unsigned int odsm_task_node(const odsm_task *t)
{
	return t ? t->node : UINT_MAX;
}
