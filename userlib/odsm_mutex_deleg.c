// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm mutex, the delegated kind: a FIFO queue lock whose state (the
 * holder and the queue of waiters, odsm_mutex_dq.h) is an object
 * entrusted to the trustee of the delegation runtime that the process
 * making the mutex started with odsm_spawn_start().  Lock, unlock and
 * the rest are registered operations that trustee runs, reached with
 * odsm_deleg_apply() from any node (the module carries the batch to the
 * runtime's gateway, or this node's slots do).
 *
 * The trustee's loop never waits: a lock of a held mutex is answered
 * "queued" at once.  The waiter then polls a grant word of its own
 * node's partition with backoff (a read of local memory: no network),
 * which the unlocker writes with the waiter's token after the unlock's
 * answer named it; and once every DM_POLL_MS it asks the trustee where
 * it stands, which is how it learns a grant whose unlocker died before
 * writing the word, a grant after a dead holder (inconsistent, which a
 * grant word never says), or that the trustee is gone.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "odsm.h"
#include "odsm_sync_int.h"
#include "odsm_mutex_int.h"
#include "odsm_mutex_dq.h"

#define DM_POLL_MS	100	/* a waiter asks the trustee this often */
/*
 * A waiter's pauses between reads of its grant word: that read is of
 * local memory (no network), and a grant is seen one pause late at
 * most, so they stop doubling at 1 ms, not at the 10 ms of the waits
 * that poll a remote word.
 */
#define DM_NAP_MAX_US	1000U
#define DM_CACHE	4	/* handles a thread remembers */

#define DM_OP_LOCK	"odsm.mutex.lock"
#define DM_OP_POLL	"odsm.mutex.poll"
#define DM_OP_UNLOCK	"odsm.mutex.unlock"
#define DM_OP_CANCEL	"odsm.mutex.cancel"
#define DM_OP_HELD	"odsm.mutex.held"
#define DM_OP_CONSIST	"odsm.mutex.consistent"

/* Every operation's argument. */
struct dm_req {
	uint64_t tok;
	uint64_t grant;		/* lock: the caller's grant word */
	uint32_t wait;		/* lock: queue it when held */
	uint32_t inc;		/* lock: the caller's node's incarnation (low
				 * 32 bits; 0: not known).  Not checked: a
				 * wrong one only makes its own call look
				 * dead (or, 0, never restarted)
				 */
};

/* What unlock and cancel answer: the waiter the lock went to. */
struct dm_next {
	uint64_t tok;
	uint64_t grant;
};

/* The trust handle of a mutex, kept where its object says (ring). */
#define DM_TRUST	ODSM_MX_RINGOFF

static int dm_down(unsigned int node, uint32_t inc, void *cookie)
{
	(void)cookie;
	return odsm__node_gone(node, inc);
}

/*
 * Every request comes from a client of any node (through the module
 * for another node's): the token must name a node of the cluster, and a
 * grant word must be a word of that node's partition, since unlockers
 * write it.
 */
static int dm_arg(struct odsm_dq *q, const void *arg, size_t len,
		  struct dm_req *r, bool lock)
{
	int node;

	if (len != sizeof(*r))
		goto bad;
	memcpy(r, arg, sizeof(*r));
	node = odsm_dq_node(r->tok);
	if (node < 0 || (unsigned int)node >= odsm_rt.info.nr_nodes)
		goto bad;
	if (lock && (r->grant % 8 || !odsm_in_heap(r->grant) ||
		     (r->grant - odsm_rt.info.heap_base) /
		     odsm_rt.info.part_size != (uint64_t)node))
		goto bad;
	return 0;
bad:
	q->refused++;
	return -EINVAL;
}

static int dm_op_lock(void *obj, const void *arg, size_t len, void *ret,
		      size_t *ret_len)
{
	struct dm_req r;
	int err;

	*ret_len = 0;
	err = dm_arg(obj, arg, len, &r, true);
	if (err)
		return err;
	return odsm_dq_lock(obj, r.tok, r.inc, r.grant, r.wait, dm_down, NULL);
}

static int dm_op_poll(void *obj, const void *arg, size_t len, void *ret,
		      size_t *ret_len)
{
	struct dm_req r;
	int err;

	*ret_len = 0;
	err = dm_arg(obj, arg, len, &r, false);
	if (err)
		return err;
	return odsm_dq_poll(obj, r.tok, dm_down, NULL);
}

static int dm_answer_next(int err, const struct dm_next *n, void *ret,
			  size_t *ret_len)
{
	if (*ret_len < sizeof(*n)) {
		*ret_len = 0;
		return err;
	}
	memcpy(ret, n, sizeof(*n));
	*ret_len = sizeof(*n);
	return err;
}

static int dm_op_unlock(void *obj, const void *arg, size_t len, void *ret,
			size_t *ret_len)
{
	struct dm_next n = { 0 };
	struct dm_req r;
	int err;

	err = dm_arg(obj, arg, len, &r, false);
	if (!err)
		err = odsm_dq_unlock(obj, r.tok, dm_down, NULL, &n.tok,
				     &n.grant);
	return dm_answer_next(err, &n, ret, ret_len);
}

static int dm_op_cancel(void *obj, const void *arg, size_t len, void *ret,
			size_t *ret_len)
{
	struct dm_next n = { 0 };
	struct dm_req r;
	int err;

	err = dm_arg(obj, arg, len, &r, false);
	if (!err)
		err = odsm_dq_cancel(obj, r.tok, dm_down, NULL, &n.tok,
				     &n.grant);
	return dm_answer_next(err, &n, ret, ret_len);
}

static int dm_op_held(void *obj, const void *arg, size_t len, void *ret,
		      size_t *ret_len)
{
	struct dm_req r;
	int err;

	*ret_len = 0;
	err = dm_arg(obj, arg, len, &r, false);
	return err ? err : odsm_dq_held(obj, r.tok);
}

static int dm_op_consistent(void *obj, const void *arg, size_t len,
			    void *ret, size_t *ret_len)
{
	struct dm_req r;
	int err;

	*ret_len = 0;
	err = dm_arg(obj, arg, len, &r, false);
	return err ? err : odsm_dq_consistent(obj, r.tok);
}

static const struct {
	const char *name;
	odsm_deleg_fn fn;
} dm_ops[] = {
	{ DM_OP_LOCK, dm_op_lock },
	{ DM_OP_POLL, dm_op_poll },
	{ DM_OP_UNLOCK, dm_op_unlock },
	{ DM_OP_CANCEL, dm_op_cancel },
	{ DM_OP_HELD, dm_op_held },
	{ DM_OP_CONSIST, dm_op_consistent },
};

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

/* The trustee's process needs them: the one making the mutex. */
static int dm_register(void)
{
	unsigned int i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(dm_ops); i++) {
		ret = odsm_deleg_register(dm_ops[i].name, dm_ops[i].fn, NULL);
		if (ret)
			return ret;
	}
	return 0;
}

int odsm__mutex_new_deleg(struct odsm_mutex_obj *mo)
{
	struct odsm_deleg *d = odsm_spawn_runtime();
	odsm_trust t;
	odsm_box b;
	int ret;

	if (!d)
		return -ESRCH;	/* nothing here to run the trustee */
	ret = dm_register();
	if (ret)
		return ret;
	ret = odsm_box_new(&b, sizeof(struct odsm_dq), ODSM_ALLOC_ZERO);
	if (ret)
		return ret;
	ret = odsm_deleg_entrust(d, 0, &b, 0, &t);
	if (ret) {
		odsm_box_drop(&b);
		return ret;
	}
	memcpy(mo->ring, &t, sizeof(t));
	return 0;
}

int odsm__mutex_free_deleg(uint64_t mutex)
{
	odsm_trust t;
	int ret;

	ret = odsm_read(mutex + DM_TRUST, &t, sizeof(t));
	return ret ? ret : odsm_trust_drop(&t);
}

/* ---- the client ---------------------------------------------------------- */

/*
 * A thread's grant word (in its node's partition, freed when the thread
 * ends), the sequence of its lock calls, and the handles of the last
 * mutexes it used (a handle of a freed mutex is -ESTALE: read again).
 */
static __thread uint64_t dm_grant_g;
static __thread uint32_t dm_seq;
static __thread struct {
	uint64_t mutex;
	odsm_trust t;
} dm_cache[DM_CACHE];
static __thread unsigned int dm_cache_next;

static pthread_key_t dm_key;
static pthread_once_t dm_once = PTHREAD_ONCE_INIT;

/*
 * Grant words of ended threads, for the next threads: never freed, since
 * an unlocker that learnt of a waiter may still write its grant there
 * after the waiter learnt of it from the trustee and ended.  Tokens are
 * never reused, so such a late write into a word another thread now waits
 * on is not its grant, never more than a look.
 */
static pthread_mutex_t dm_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *dm_pool;
static unsigned int dm_pool_n, dm_pool_cap;

static void dm_thread_end(void *g)
{
	uint64_t *p;

	pthread_mutex_lock(&dm_pool_lock);
	if (dm_pool_n == dm_pool_cap) {
		p = realloc(dm_pool, (dm_pool_cap * 2 + 8) * sizeof(*p));
		if (p) {
			dm_pool = p;
			dm_pool_cap = dm_pool_cap * 2 + 8;
		}
	}
	if (dm_pool_n < dm_pool_cap)	/* else: lost, not freed */
		dm_pool[dm_pool_n++] = (uint64_t)(uintptr_t)g;
	pthread_mutex_unlock(&dm_pool_lock);
}

/*
 * A child of fork() would share its parent's grant word: two waiters on
 * one word could overwrite each other's grant (each would then learn it
 * only from the trustee, 100 ms later), and its thread's end would free
 * the parent's word.  It takes one of its own.
 */
static void dm_atfork_child(void)
{
	dm_grant_g = 0;
	pthread_setspecific(dm_key, NULL);	/* the parent's, not to free */
	dm_pool_n = 0;				/* the parent's too */
	pthread_mutex_init(&dm_pool_lock, NULL);
}

static void dm_init(void)
{
	pthread_key_create(&dm_key, dm_thread_end);
	pthread_atfork(NULL, NULL, dm_atfork_child);
}

static int dm_grant_word(uint64_t *g)
{
	int ret;

	if (!dm_grant_g) {
		pthread_once(&dm_once, dm_init);
		pthread_mutex_lock(&dm_pool_lock);
		if (dm_pool_n)
			dm_grant_g = dm_pool[--dm_pool_n];
		pthread_mutex_unlock(&dm_pool_lock);
		if (!dm_grant_g) {
			ret = odsm_alloc(8, 8, ODSM_ALLOC_ZERO, &dm_grant_g);
			if (ret)
				return ret;
		}
		pthread_setspecific(dm_key, (void *)(uintptr_t)dm_grant_g);
	}
	*g = odsm_addr_of(dm_grant_g);
	return 0;
}

static int dm_trust(uint64_t mutex, odsm_trust *t, bool fresh)
{
	unsigned int i;
	int ret;

	for (i = 0; i < DM_CACHE && !fresh; i++) {
		if (dm_cache[i].mutex == mutex) {
			*t = dm_cache[i].t;
			return 0;
		}
	}
	ret = odsm_read(mutex + DM_TRUST, t, sizeof(*t));
	if (ret)
		return ret;
	for (i = 0; i < DM_CACHE && dm_cache[i].mutex != mutex; i++)
		;
	if (i == DM_CACHE)
		i = dm_cache_next++ % DM_CACHE;
	dm_cache[i].mutex = mutex;
	dm_cache[i].t = *t;
	return 0;
}

/*
 * One operation on g's mutex.  A stale cached handle (a freed mutex
 * whose address was reused) is read again once.  The runtime's own
 * -EOWNERDEAD (its process died) must not read as the lock's: it is
 * -ENOTCONN here.
 */
static int dm_apply(uint64_t mutex, const char *op, const struct dm_req *r,
		    struct dm_next *n)
{
	size_t len = sizeof(*n);
	odsm_trust t;
	int ret, again;

	for (again = 0; again < 2; again++) {
		ret = dm_trust(mutex, &t, again);
		if (ret)
			return ret;
		ret = odsm_deleg_apply(&t, odsm_deleg_op_id(op), r, sizeof(*r),
				       n, n ? &len : NULL);
		if (ret != -ESTALE)
			break;
	}
	if (ret == -EOWNERDEAD)
		ret = -ENOTCONN;
	if (n && len != sizeof(*n))
		memset(n, 0, sizeof(*n));
	return ret;
}

/* Tell the waiter the lock went to (it polls the trustee otherwise). */
static void dm_hand_over(const struct dm_next *n)
{
	if (n->tok && n->grant)
		odsm_write(n->grant, &n->tok, sizeof(n->tok));
}

/* Queued: wait for the grant word, asking the trustee now and then. */
static int dm_wait(uint64_t mutex, const struct dm_req *r)
{
	uint64_t asked = odsm__sync_now_ms(), v;
	struct dm_next n;
	unsigned int us = 0;
	int ret;

	for (;;) {
		ret = odsm_read(r->grant, &v, sizeof(v));
		if (ret)
			break;
		if (v == r->tok)
			return ODSM_DQ_GRANTED;
		if (odsm__sync_now_ms() - asked >= DM_POLL_MS) {
			ret = dm_apply(mutex, DM_OP_POLL, r, NULL);
			if (ret != ODSM_DQ_QUEUED)
				break;
			asked = odsm__sync_now_ms();
		}
		if (us > DM_NAP_MAX_US / 2)
			us = DM_NAP_MAX_US / 2;	/* the nap doubles it */
		odsm__sync_nap(&us);
	}
	if (ret < 0 && ret != -ENOTRECOVERABLE &&
	    !dm_apply(mutex, DM_OP_CANCEL, r, &n))
		dm_hand_over(&n);	/* the queue goes on without us */
	return ret;
}

int odsm__mutex_lock_deleg(struct odsm_guard *g, bool wait)
{
	struct dm_req r = { .wait = wait };
	unsigned int us = 0;
	int ret;

	ret = dm_grant_word(&r.grant);
	if (ret)
		return ret;
	/* named with the call: the trustee drops it if the node restarts */
	ret = odsm__node_inc(odsm_rt.info.node_id, &r.inc);
	if (ret)
		return ret;
	r.tok = odsm_dq_token(odsm_rt.info.node_id,
			      (uint32_t)syscall(SYS_gettid), ++dm_seq);
	for (;;) {
		ret = dm_apply(g->mutex, DM_OP_LOCK, &r, NULL);
		if (ret != -EAGAIN)
			break;
		odsm__sync_nap(&us);	/* the queue is full */
	}
	if (ret == ODSM_DQ_QUEUED) {
		ret = dm_wait(g->mutex, &r);	/* cancels on failure */
	} else if (ret < 0 && ret != -ENOTRECOVERABLE) {
		/*
		 * The call failed, but the trustee may have run it (a reply
		 * lost, a timeout): our token may hold the lock or wait in
		 * the queue, which no one would ever release.  Cancelled, as
		 * a wait that fails is.
		 */
		struct dm_next n;

		if (!dm_apply(g->mutex, DM_OP_CANCEL, &r, &n))
			dm_hand_over(&n);
	}
	if (ret < 0)
		return ret;
	g->word = r.tok;
	g->flags = ODSM_GUARD_HELD | ODSM_GUARD_DELEG;
	if (ret == ODSM_DQ_GRANTED_INCONS) {
		g->flags |= ODSM_GUARD_INCONS;
		return -EOWNERDEAD;
	}
	return 0;
}

int odsm__mutex_still_ours_deleg(struct odsm_guard *g)
{
	struct dm_req r = { .tok = g->word };

	return dm_apply(g->mutex, DM_OP_HELD, &r, NULL);
}

int odsm__mutex_release_deleg(struct odsm_guard *g)
{
	struct dm_req r = { .tok = g->word };
	struct dm_next n;
	int ret;

	ret = dm_apply(g->mutex, DM_OP_UNLOCK, &r, &n);
	if (!ret)
		dm_hand_over(&n);
	return ret;
}

int odsm__mutex_consistent_deleg(struct odsm_guard *g)
{
	struct dm_req r = { .tok = g->word };

	return dm_apply(g->mutex, DM_OP_CONSIST, &r, NULL);
}
