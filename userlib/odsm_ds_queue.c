// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The distributed queue (BCL's circular queue, hosted on one node): a ring
 * of slots and four counters in the NIC atomic domain, pushed and popped
 * by any node one-sided or by a request the queue's trustee runs with the
 * same algorithm on its local memory.
 *
 * A slot is reserved by compare-and-swap on tail (head), not BCL's
 * fetch-and-add: a push that finds the ring full (a pop that finds it
 * empty) then refuses without having taken a slot, so nothing is lost and
 * no reservation needs undoing.  Free room is judged against head_done
 * (pushes) and data against tail_ready (CRW pops) or tail (CR pops):
 * values that only grow, read stale at worst, which makes a refusal
 * early, never a slot overwritten or read before its time.
 *
 * Publication:
 *   CRW push  CAS-P tail_ready t -> t+1: waits for every earlier push,
 *             so tail_ready is a frontier below which every slot is
 *             written; CRW pops read up to it while pushes run
 *   CW push   FAO tail_ready: a count, a frontier again once no push runs
 *   CRW pop   CAS-P head_done h -> h+1: the frontier below which slots
 *             are free, while pops run
 *   CR pop    FAO head_done: a count
 * A count and a frontier cannot share a word while both move: CW and CRW
 * pushes do not run in the same phase, nor CR and CRW pops (the promise
 * CW / CR says so: only operations of that promise run meanwhile).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "odsm.h"
#include "odsm_ds.h"
#include "odsm_ds_int.h"

#define CTR(x, f)	((x)->base + DS_Q_CTR + offsetof(struct ds_q_ctr, f))

static uint64_t slot_addr(const struct ds_ctx *x, uint64_t i)
{
	return x->base + DS_Q_SLOTS + (i % x->buckets) * DS_Q_SLOT;
}

static int ctr_read(const struct ds_ctx *x, uint64_t g, uint64_t *v)
{
	return ds_io_read(x, g, v, sizeof(*v));
}

/*
 * Reserve the slot at the counter g (tail or head), as long as limit (a
 * counter that only grows: head_done + cap for pushes, tail_ready or tail
 * for pops) leaves one: *at the slot, or -ENOSPC / -ENOENT.  *hint: where
 * to start (a guess, kept by the caller).
 */
static int reserve(const struct ds_ctx *x, uint64_t g, uint64_t lim_g,
		   uint64_t room, uint64_t *hint, uint64_t *lim_hint,
		   int full_err, uint64_t *at)
{
	uint64_t t = __atomic_load_n(hint, __ATOMIC_RELAXED), old;
	uint64_t lim = __atomic_load_n(lim_hint, __ATOMIC_RELAXED);
	int ret;

	if (x->local) {
		ret = ctr_read(x, g, &t);
		ret = ret ?: ctr_read(x, lim_g, &lim);
		if (ret)
			return ret;
	}
	for (;;) {
		if (t >= lim + room) {
			/* looks full (empty): the limit may have moved */
			ret = ctr_read(x, lim_g, &lim);
			if (ret)
				return ret;
			__atomic_store_n(lim_hint, lim, __ATOMIC_RELAXED);
			if (t >= lim + room) {
				/* and the counter too: t may be stale */
				ret = ctr_read(x, g, &old);
				if (ret)
					return ret;
				if (old == t)
					return full_err;
				t = old;
				continue;
			}
		}
		ret = odsm_cmp_swap_nic(g, t, t + 1, &old);
		if (ret)
			return ret;
		if (old == t)
			break;
		t = old;
		ds_stat_inc(DS_ST_RETRIES);
	}
	*at = t;
	__atomic_store_n(hint, t + 1, __ATOMIC_RELAXED);
	return 0;
}

/*
 * CAS-P: move the frontier at g from t to t + 1 once it reached t.  The
 * wait gives up only after DS_WAIT_MS in which the frontier did not move
 * at all: a slot reserved and never published (its pusher died, or gave
 * up) wedges the ring for good, so a wait that sees the operations before
 * it finish, however slowly, waits on.
 */
static int advance(uint64_t g, uint64_t t)
{
	uint64_t old, seen = t, deadline = 0;
	int ret;

	for (;;) {
		ret = odsm_cmp_swap_nic(g, t, t + 1, &old);
		if (ret || old == t)
			return ret;
		if (old != seen) {	/* progress: the wait starts over */
			seen = old;
			deadline = 0;
		}
		ret = ds_wait(&deadline);
		if (ret)
			return ret;
	}
}

int ds_push(const struct ds_ctx *x, struct ds_q_hints *hn, const void *val,
	    uint8_t len, enum odsm_ds_promise p)
{
	uint8_t slot[DS_Q_LEN_OFF + 1];
	uint64_t t;
	int ret, err;

	ret = reserve(x, CTR(x, tail), CTR(x, head_done), x->buckets,
		      &hn->tail, &hn->head_done, -ENOSPC, &t);
	if (ret)
		return ret;
	memset(slot, 0, sizeof(slot));
	memcpy(slot, val, len);
	slot[DS_Q_LEN_OFF] = len;
	err = ds_io_write(x, slot_addr(x, t), slot, sizeof(slot));
	/*
	 * A slot reserved must be published, or no later push is ever
	 * visible: one whose element was not written carries a length no
	 * element has, which the pop that reaches it frees as -EBADMSG
	 * (tried until it is written: only the home gone ends that, and
	 * the queue with it)
	 */
	while (err) {
		uint8_t poison = DS_Q_POISON;

		ret = ds_io_write(x, slot_addr(x, t) + DS_Q_LEN_OFF, &poison,
				  1);
		if (!ret)
			break;
		if (ret == -EHOSTDOWN)
			return ret;
		usleep(1000);
	}
	if (p == ODSM_DS_CRW)
		ret = advance(CTR(x, tail_ready), t);
	else
		ret = odsm_fetch_add_nic(CTR(x, tail_ready), 1, NULL);
	return err ?: ret;
}

int ds_pop(const struct ds_ctx *x, struct ds_q_hints *hn, void *val,
	   uint8_t *len, enum odsm_ds_promise p)
{
	uint8_t slot[DS_Q_LEN_OFF + 1];
	uint64_t h;
	int ret;

	/* CR: no push runs, every reserved slot is written */
	if (p == ODSM_DS_CRW)
		ret = reserve(x, CTR(x, head), CTR(x, tail_ready), 0,
			      &hn->head, &hn->tail_ready, -ENOENT, &h);
	else
		ret = reserve(x, CTR(x, head), CTR(x, tail), 0, &hn->head,
			      &hn->tail, -ENOENT, &h);
	if (ret)
		return ret;
	ret = ds_io_read(x, slot_addr(x, h), slot, sizeof(slot));
	if (!ret && slot[DS_Q_LEN_OFF] > ODSM_DS_VAL_MAX)
		ret = -EBADMSG;	/* never written so: not an element */
	if (!ret) {
		memcpy(val, slot, slot[DS_Q_LEN_OFF]);
		*len = slot[DS_Q_LEN_OFF];
	}
	/* the slot is free again even when it could not be read: a pop
	 * that failed must not wedge the ring
	 */
	if (p == ODSM_DS_CRW)
		return advance(CTR(x, head_done), h) ?: ret;
	return odsm_fetch_add_nic(CTR(x, head_done), 1, NULL) ?: ret;
}

/* ---- the trustee's side --------------------------------------------------- */

struct ds_q_req {
	uint8_t op, promise, len, pad;
	uint8_t val[ODSM_DS_VAL_MAX];
};

static int queue_ctx(void *obj, struct ds_ctx *x)
{
	const struct ds_seg_hdr *hdr = obj;

	if (hdr->magic != DS_Q_MAGIC || !hdr->buckets ||
	    hdr->buckets > DS_MAX_BUCKETS)
		return -EINVAL;
	x->base = (uintptr_t)obj;
	x->buckets = (uint32_t)hdr->buckets;
	x->local = 1;
	return 0;
}

int ds_serve_queue(void *obj, const void *arg, size_t len, void *ret,
		   size_t *rl)
{
	struct ds_q_hints hn = { 0 };
	struct ds_q_req r;
	struct ds_ctx x;
	uint8_t got = 0;
	int err;

	if (len != sizeof(r) || queue_ctx(obj, &x))
		goto bad;
	memcpy(&r, arg, sizeof(r));
	if ((r.op != ODSM_DS_PUSH && r.op != ODSM_DS_POP) ||
	    !odsm_ds_promise_ok(r.op, r.promise) || r.len > ODSM_DS_VAL_MAX)
		goto bad;
	ds_stat_inc(DS_ST_SERVED);
	if (r.op == ODSM_DS_PUSH) {
		*rl = 0;
		return ds_push(&x, &hn, r.val, r.len, r.promise);
	}
	if (*rl < ODSM_DS_VAL_MAX)
		goto bad;
	err = ds_pop(&x, &hn, ret, &got, r.promise);
	*rl = err ? 0 : got;
	return err;
bad:
	ds_stat_inc(DS_ST_BAD_REQ);
	*rl = 0;
	return -EINVAL;
}

/* ---- the caller's side ---------------------------------------------------- */

struct odsm_ds_queue {
	struct odsm_ds_seg s;
	struct ds_chooser ch;
	struct ds_q_hints hn;
};

int odsm_ds_queue_create(struct odsm_deleg *d, unsigned int trustee,
			 uint32_t cap, struct odsm_ds_seg *s)
{
	if (!cap || cap > DS_MAX_BUCKETS)
		return -EINVAL;
	return ds_seg_make(d, trustee, DS_Q_SLOTS + (size_t)cap * DS_Q_SLOT,
			   cap, DS_Q_MAGIC, s);
}

int odsm_ds_queue_open(const struct odsm_ds_seg *s, enum odsm_ds_mode mode,
		       const struct odsm_ds_costs *c,
		       struct odsm_ds_queue **out)
{
	struct odsm_ds_costs k = { 0 };
	struct odsm_ds_queue *q;
	int ret;

	if (!s->buckets || s->buckets > DS_MAX_BUCKETS || mode > ODSM_DS_AUTO)
		return -EINVAL;
	if (!c && getenv("ODSM_DS_COSTS") &&
	    !odsm_ds_costs_load(getenv("ODSM_DS_COSTS"), &k))
		c = &k;			/* a saved calibration */
	if (!c) {
		ret = ds_calibrate_seg(s, 0, &k);
		if (ret)
			return ret;
		c = &k;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->s = *s;
	q->ch.mode = mode;
	ds_chooser_set(&q->ch, c);
	*out = q;
	return 0;
}

void odsm_ds_queue_close(struct odsm_ds_queue *q)
{
	free(q);
}

void odsm_ds_queue_set_costs(struct odsm_ds_queue *q,
			     const struct odsm_ds_costs *c)
{
	ds_chooser_set(&q->ch, c);
}

int odsm_ds_queue_variant(const struct odsm_ds_queue *q, enum odsm_ds_op op,
			  enum odsm_ds_promise p)
{
	if (op != ODSM_DS_PUSH && op != ODSM_DS_POP)
		return -EINVAL;
	return ds_chooser_get(&q->ch, op, p);
}

int odsm_ds_queue_op(struct odsm_ds_queue *q, enum odsm_ds_op op,
		     int request, void *val, size_t *len,
		     enum odsm_ds_promise p)
{
	struct ds_ctx x = { .base = odsm_addr_of(q->s.addr),
			    .buckets = q->s.buckets };
	uint8_t buf[ODSM_DS_VAL_MAX], got = 0;
	struct ds_q_req r;
	size_t rl;
	int ret;

	if ((op != ODSM_DS_PUSH && op != ODSM_DS_POP) ||
	    !odsm_ds_promise_ok(op, p) || !len)
		return -EINVAL;
	if (op == ODSM_DS_PUSH && *len > ODSM_DS_VAL_MAX)
		return -E2BIG;
	if (request) {
		memset(&r, 0, sizeof(r));
		r.op = op;
		r.promise = p;
		if (op == ODSM_DS_PUSH) {
			r.len = (uint8_t)*len;
			memcpy(r.val, val, *len);
		}
		ds_stat_inc(DS_ST_REQUESTS);
		rl = op == ODSM_DS_POP ? sizeof(buf) : 0;
		ret = odsm_deleg_apply(&q->s.t, ds_op_queue, &r, sizeof(r),
				       buf, &rl);
		if (ret || op == ODSM_DS_PUSH)
			return ret;
		got = (uint8_t)rl;
		if (rl > ODSM_DS_VAL_MAX)
			return -EPROTO;
	} else {
		ds_stat_inc(DS_ST_ONESIDED);
		if (op == ODSM_DS_PUSH)
			return ds_push(&x, &q->hn, val, (uint8_t)*len, p);
		ret = ds_pop(&x, &q->hn, buf, &got, p);
		if (ret)
			return ret;
	}
	/*
	 * Popped: an element too long for the caller's room is lost to it
	 * (the slot is free again), so say how long it was.
	 */
	if (got > *len) {
		*len = got;
		return -ENOBUFS;
	}
	memcpy(val, buf, got);
	*len = got;
	return 0;
}

static int qrun(struct odsm_ds_queue *q, enum odsm_ds_op op, void *val,
		size_t *len, enum odsm_ds_promise p)
{
	int v = odsm_ds_queue_variant(q, op, p);

	if (v < 0)
		return v;
	return odsm_ds_queue_op(q, op, v, val, len, p);
}

int odsm_ds_push(struct odsm_ds_queue *q, const void *val, size_t len,
		 enum odsm_ds_promise p)
{
	return qrun(q, ODSM_DS_PUSH, (void *)val, &len, p);
}

int odsm_ds_pop(struct odsm_ds_queue *q, void *val, size_t *len,
		enum odsm_ds_promise p)
{
	return qrun(q, ODSM_DS_POP, val, len, p);
}
