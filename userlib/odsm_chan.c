// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm channels (odsm_chan.h).
 *
 * The channel object lives in the receiver's partition and is entrusted
 * to the receiver process's runtime: the trustee is the only writer of
 * its ring (push, pop, close are registered operations, so they are
 * serialized without a lock, from every node alike), and it bumps the
 * object's seq word and the channel's wake word (ch_wake, below) after
 * every push and the close.  A receiver reads both, tries a pop, and
 * sleeps on the wake word only when the pop found nothing: a push
 * between the two changed them, so no wakeup is lost.  A receiver in
 * another process sleeps on the object's seq word itself, in the module
 * (ODSM_IOC_WAIT), and the trustee wakes it (ODSM_IOC_WAKE) when it
 * counted itself in sleepers.  It sleeps in CH_WAIT_MS steps
 * to look at the membership (odsm_status, one ioctl): a node that sent on
 * the channel and is now down is reported once, after what it sent.
 *
 * A message is the box's colored address and the sender's node: the
 * object's bytes stay where they are until the receiver borrows it.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "odsm.h"
#include "odsm_deleg_int.h"
#include "odsm_spawn_int.h"

#define CH_MAGIC	0x4e4148434d53444fULL	/* "ODSMCHAN" */
#define CH_WAIT_MS	100	/* how late a receiver sees a sender die */
#define CH_PUSH		"odsm.chan.push"
#define CH_POP		"odsm.chan.pop"
#define CH_CLOSE	"odsm.chan.close"

struct ch_msg {
	uint64_t g;
	uint32_t from;
	uint32_t pad;
};

/*
 * The channel object; only its trustee writes it, but dead_seen and
 * sleepers.
 */
struct ch_obj {
	uint64_t magic;
	uint32_t seq;			/* bumped by push and close */
	uint32_t closed;
	uint32_t cap, head, count;
	uint32_t wslot;			/* its word of ch_wake[] */
	int32_t host_pid;		/* the process running its trustee */
	uint32_t sleepers;		/* receivers of other processes that
					 * sleep on seq in the module
					 */
	uint64_t senders;		/* nodes that sent (bit per node) */
	uint64_t dead_seen;		/* receiver: nodes reported down */
	struct ch_msg ring[];
};

static uint64_t ch_push_id, ch_pop_id, ch_close_id;

/*
 * What a receiver sleeps on: a futex word in this process's memory, one
 * per channel (shared by channels whose slots collide: a wakeup too
 * many, never one lost).  Not the object's seq word: a FUTEX_WAIT on a
 * page of the heap mapping fails with EFAULT (measured in the 6.1
 * guest), so the heap cannot carry a futex.  The trustee runs in the
 * channel's process (odsm_chan_new entrusts to this process's runtime),
 * so it can wake this word.  A receiver in another process of the node
 * sleeps on seq in the module (ODSM_IOC_WAIT), or, under a module
 * without it, polls seq (CH_POLL_MS), in its node's memory.
 */
#define CH_WAKE_SLOTS	256
#define CH_POLL_MS	1
static uint32_t ch_wake[CH_WAKE_SLOTS];
static uint32_t ch_next_slot;

/*
 * The channel at obj, or NULL.  Its header is heap memory another node's
 * bug may have written: a ring geometry that does not hold is no channel
 * (-EBADFD), never an index past the ring or a division by zero.
 */
static struct ch_obj *ch_obj_of(void *obj)
{
	struct ch_obj *o = obj;

	if (!o || o->magic != CH_MAGIC)
		return NULL;
	if (!o->cap || o->cap > ODSM_CHAN_CAP_MAX || o->head >= o->cap ||
	    o->count > o->cap)
		return NULL;
	return o;
}

static void ch_bump(struct ch_obj *o)
{
	uint32_t *w = &ch_wake[o->wslot % CH_WAKE_SLOTS];

	__atomic_store_n(&o->seq, o->seq + 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(w, 1, __ATOMIC_RELEASE);
	dg_futex_wake(w, INT_MAX);
	/* pairs with ch_sleep()'s count before its wait reads seq */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&o->sleepers, __ATOMIC_RELAXED))
		dg_futex_wake(&o->seq, INT_MAX);
}

static int ch_push(void *obj, const void *arg, size_t arg_len, void *ret,
		   size_t *ret_len)
{
	struct ch_obj *o = ch_obj_of(obj);
	struct ch_msg m;

	*ret_len = 0;
	if (!o)
		return -EBADFD;
	if (arg_len != sizeof(m))
		return -EINVAL;
	memcpy(&m, arg, sizeof(m));
	if (m.from >= ODSM_MAX_NODES || !m.g || !odsm_in_heap(m.g))
		return -EINVAL;
	if (o->closed)
		return -EPIPE;
	if (o->count >= o->cap)
		return -EAGAIN;
	o->ring[(o->head + o->count) % o->cap] = m;
	o->count++;
	/* (a sender on node 64 or past is sent for, not watched: its
	 * death is no -EHOSTDOWN of recv's)
	 */
	if (m.from < 64)
		o->senders |= 1ULL << m.from;
	ch_bump(o);
	return 0;
}

static int ch_pop(void *obj, const void *arg, size_t arg_len, void *ret,
		  size_t *ret_len)
{
	struct ch_obj *o = ch_obj_of(obj);

	if (!o) {
		*ret_len = 0;
		return -EBADFD;
	}
	if (*ret_len < sizeof(struct ch_msg)) {
		*ret_len = 0;
		return -EINVAL;
	}
	if (!o->count) {
		*ret_len = 0;
		return o->closed ? -EPIPE : -EAGAIN;
	}
	memcpy(ret, &o->ring[o->head], sizeof(struct ch_msg));
	*ret_len = sizeof(struct ch_msg);
	o->head = (o->head + 1) % o->cap;
	o->count--;
	return 0;
}

static int ch_close(void *obj, const void *arg, size_t arg_len, void *ret,
		    size_t *ret_len)
{
	struct ch_obj *o = ch_obj_of(obj);

	*ret_len = 0;
	if (!o)
		return -EBADFD;
	o->closed = 1;
	ch_bump(o);
	return 0;
}

int ch_register(void)
{
	int ret;

	ret = odsm_deleg_register(CH_PUSH, ch_push, &ch_push_id);
	if (!ret)
		ret = odsm_deleg_register(CH_POP, ch_pop, &ch_pop_id);
	if (!ret)
		ret = odsm_deleg_register(CH_CLOSE, ch_close, &ch_close_id);
	return ret;
}

int odsm_chan_new(unsigned int cap, odsm_chan *c)
{
	struct odsm_deleg *d = odsm_spawn_runtime();
	struct ch_obj *o;
	odsm_box b;
	int ret;

	if (!c || !cap || cap > ODSM_CHAN_CAP_MAX)
		return -EINVAL;
	if (!d)
		return -ENOENT;		/* odsm_spawn_start() first */
	ret = odsm_box_new(&b, sizeof(*o) + cap * sizeof(struct ch_msg),
			   ODSM_ALLOC_ZERO);
	if (ret)
		return ret;
	/* nobody has its address yet: raw writes are right */
	o = odsm_ptr(b.g);
	o->cap = cap;
	o->wslot = __atomic_fetch_add(&ch_next_slot, 1, __ATOMIC_RELAXED) %
		   CH_WAKE_SLOTS;
	o->host_pid = getpid();
	o->magic = CH_MAGIC;
	ret = odsm_deleg_entrust(d, 0, &b, 0, &c->t);
	if (ret)
		odsm_box_drop(&b);
	return ret;
}

static int ch_send(const odsm_chan *c, odsm_box *b, bool wait)
{
	struct ch_msg m = { .from = odsm_rt.info.node_id };
	struct timespec ts = { 0, 0 };
	unsigned int ms = 1;
	odsm_box gone;
	int ret;

	if (!c || !b || !b->g || !odsm_in_heap(b->g))
		return -EINVAL;
	/* the owner's epoch ends: the receiver may cache what it reads */
	m.g = odsm_box_share(b);
	for (;;) {
		ret = odsm_deleg_apply(&c->t, ch_push_id, &m, sizeof(m),
				       NULL, NULL);
		if (ret != -EAGAIN || !wait)
			break;
		/* full: the receiver has to take some first */
		ts.tv_nsec = (long)ms * 1000000;
		nanosleep(&ts, NULL);
		if (ms < 16)
			ms *= 2;
	}
	if (ret)
		return ret;
	/* queued: the receiver owns it; a copy we cached is dropped */
	odsm_box_transfer(&gone, b);
	return 0;
}

int odsm_chan_send(const odsm_chan *c, odsm_box *b)
{
	return ch_send(c, b, true);
}

int odsm_chan_try_send(const odsm_chan *c, odsm_box *b)
{
	return ch_send(c, b, false);
}

/*
 * The channel object of handle c when its runtime is this node's and c
 * is live: the receiver waits on it.  -EREMOTE for another node's.
 */
static int ch_local(const odsm_chan *c, struct ch_obj **out)
{
	struct odsm_deleg *d;
	struct dg_cell *cell;
	uint64_t w;
	int ret;

	if (!odsm_in_heap(c->t.arena))
		return -ESTALE;
	if (!odsm_is_local(c->t.arena))
		return -EREMOTE;
	ret = odsm_deleg_at(c->t.arena, &d);
	if (ret)
		return -ESTALE;
	if (d->remote)
		return -EREMOTE;
	if ((uint64_t)c->t.cell >= (uint64_t)d->h->trustees * d->h->cells)
		return -ESTALE;
	cell = dg_cell(d, c->t.cell);
	w = __atomic_load_n(&cell->word, __ATOMIC_ACQUIRE);
	if ((uint32_t)(w >> 32) != c->t.gen || !(uint32_t)w)
		return -ESTALE;
	*out = ch_obj_of(odsm_ptr(cell->g));
	return *out ? 0 : -EBADFD;
}

static int ch_take(const odsm_chan *c, odsm_box *b, unsigned int *from)
{
	struct ch_msg m;
	size_t len = sizeof(m);
	int ret;

	ret = odsm_deleg_apply(&c->t, ch_pop_id, NULL, 0, &m, &len);
	if (ret)
		return ret;
	if (len != sizeof(m))
		return -EPROTO;
	b->g = m.g;
	b->ext = 0;
	if (from)
		*from = m.from;
	return 0;
}

/* A node that sent on o, is down and was not reported yet: its id. */
static int ch_dead_sender(struct ch_obj *o)
{
	struct odsm_peer_info p[64];
	unsigned int nr = 64, i;
	uint64_t ask = o->senders &
		       ~__atomic_load_n(&o->dead_seen, __ATOMIC_RELAXED);

	if (!ask || odsm_status(p, &nr, NULL))
		return -1;
	for (i = 0; i < nr && i < 64; i++) {
		if (!(ask & (1ULL << p[i].node_id)) ||
		    p[i].state != ODSM_PEER_DOWN)
			continue;
		__atomic_fetch_or(&o->dead_seen, 1ULL << p[i].node_id,
				  __ATOMIC_RELAXED);
		return (int)p[i].node_id;
	}
	return -1;
}

static uint64_t ch_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Sleep until seq moved from seq or step_ms passed: on the channel's
 * wake word in its trustee's process, on seq in the module in another,
 * else a nap.  0, or a futex error that is no timeout, race or signal
 * (never a spin on it).
 */
static int ch_sleep(struct ch_obj *o, uint32_t wv, uint32_t seq,
		    uint64_t step_ms)
{
	struct timespec ts = { 0, (long)CH_POLL_MS * 1000000 };
	long step_ns = (long)(step_ms ? step_ms : 1) * 1000000;
	int ret;

	if (o->host_pid == getpid()) {
		ret = dg_futex_wait(&ch_wake[o->wslot % CH_WAKE_SLOTS], wv,
				    step_ns);
	} else if (dg_kwait_ok(&o->seq)) {
		/* counted before the wait reads seq: see ch_bump() */
		__atomic_fetch_add(&o->sleepers, 1, __ATOMIC_SEQ_CST);
		ret = dg_futex_wait(&o->seq, seq, step_ns);
		__atomic_fetch_sub(&o->sleepers, 1, __ATOMIC_SEQ_CST);
	} else {
		nanosleep(&ts, NULL);
		return 0;
	}
	if (ret && ret != -ETIMEDOUT && ret != -EAGAIN && ret != -EINTR)
		return ret;
	return 0;
}

int odsm_chan_recv(const odsm_chan *c, odsm_box *b, unsigned int *from,
		   int timeout_ms)
{
	uint64_t end = ch_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	struct ch_obj *o;
	uint32_t seq, wv;
	uint64_t left;
	int ret, dead;

	if (!c || !b || b->g)
		return -EINVAL;
	ret = ch_local(c, &o);
	if (ret)
		return ret;
	for (;;) {
		/* both before the pop: a push after it changes them */
		wv = __atomic_load_n(&ch_wake[o->wslot % CH_WAKE_SLOTS],
				     __ATOMIC_ACQUIRE);
		seq = __atomic_load_n(&o->seq, __ATOMIC_ACQUIRE);
		ret = ch_take(c, b, from);
		if (ret != -EAGAIN)
			return ret;
		/*
		 * Empty: sleep until seq moves (a push or the close), looking
		 * at the membership between steps.  Only a moved seq is worth
		 * another pop: the trustee is not asked while nothing came.
		 */
		while (__atomic_load_n(&o->seq, __ATOMIC_ACQUIRE) == seq) {
			dead = ch_dead_sender(o);
			if (dead >= 0) {
				if (from)
					*from = (unsigned int)dead;
				return -EHOSTDOWN;
			}
			/* the trustee's process gone: nothing will ever move
			 * seq, and the pop says why (the runtime's error)
			 */
			if (o->host_pid != getpid() &&
			    kill(o->host_pid, 0) && errno == ESRCH) {
				ret = ch_take(c, b, from);
				if (ret != -EAGAIN)
					return ret;
			}
			left = CH_WAIT_MS;
			if (timeout_ms >= 0) {
				if (ch_now_ms() >= end)
					return -ETIMEDOUT;
				if (end - ch_now_ms() < left)
					left = end - ch_now_ms();
			}
			ret = ch_sleep(o, wv, seq, left);
			if (ret)
				return ret;
			wv = __atomic_load_n(&ch_wake[o->wslot % CH_WAKE_SLOTS],
					     __ATOMIC_ACQUIRE);
		}
	}
}

int odsm_chan_try_recv(const odsm_chan *c, odsm_box *b, unsigned int *from)
{
	if (!c || !b || b->g)
		return -EINVAL;
	return ch_take(c, b, from);
}

int odsm_chan_close(const odsm_chan *c)
{
	if (!c)
		return -EINVAL;
	return odsm_deleg_apply(&c->t, ch_close_id, NULL, 0, NULL, NULL);
}

int odsm_chan_free(odsm_chan *c)
{
	struct ch_obj *o;
	odsm_box b = { 0 };
	int ret;

	if (!c)
		return -EINVAL;
	ret = ch_local(c, &o);
	if (ret)
		return ret;
	odsm_chan_close(c);
	while (!ch_take(c, &b, NULL)) {
		odsm_box_drop(&b);
		b.g = 0;
	}
	return odsm_trust_drop(&c->t);
}
