// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm delegation: the client side.  Each thread that applies takes a
 * client slot of the runtime (one request and one response slot per
 * trustee) the first time, and keeps per trustee:
 *
 *   stage   the next batch, built in this thread's memory; published by
 *           copying it into the request slot and bumping the ready seq
 *   flight  the batch the trustee has or is answering (at most one)
 *
 * A batch is sent when the next request does not fit it, on flush/poll,
 * and before the thread waits (apply, launch, drain).  Completions run on
 * this thread in the order the requests were staged: the responses of a
 * batch come in request order, and batches of one pair in publish order.
 * A launch is the exception: it waits aside and ends the next batch sent
 * (dg_add_launch()), after what callbacks staged while it waited.
 *
 * A runtime of another node (d->remote) has no slots here: the batch goes
 * out with ODSM_IOC_DELEG_CALL instead (odsm_deleg_remote.c), from this
 * thread when it is about to wait anyway, else from a courier thread, and
 * its answer comes back into the pair's job; the rest (staging, batching,
 * one batch out per pair, completions in order) is the same code.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "odsm.h"
#include "odsm_deleg_int.h"

#define DG_WAIT_SPIN	256	/* polls of the response before yielding */
#define DG_WAIT_YIELD	64	/* yields before sleeping on the futex */
#define DG_WAIT_NS	1000000	/* one futex sleep: how late a death shows */

/* This thread's state for each runtime it uses (the key frees it). */
struct dg_tstate {
	struct dg_thread *me[DG_MAX_ATTACH];
};

static __thread struct dg_tstate *dg_ts;
static pthread_key_t dg_key;
static pthread_once_t dg_key_once = PTHREAD_ONCE_INIT;

static void dg_thread_free(struct dg_thread *me, unsigned int trustees)
{
	unsigned int t;

	for (t = 0; me->pairs && t < trustees; t++) {
		struct dg_rjob *j = me->pairs[t].job;

		if (j) {
			/* a courier may still be writing into it */
			if (me->pairs[t].inflight)
				dg_rwait(j);
			free(j->req);
			free(j->resp);
			free(j);
		}
		free(me->pairs[t].stage);
		free(me->pairs[t].pstage);
		free(me->pairs[t].pfly);
		free(me->pairs[t].pdone);
		free(me->pairs[t].rv);
		free(me->pairs[t].rcopy);
	}
	free(me->pairs);
	free(me);
}

/*
 * A thread ends without odsm_deleg_thread_done(): its client slot goes
 * free if its runtime is still attached (a batch it left in flight is
 * answered into the void; the next holder waits for that answer).
 */
static void dg_key_dtor(void *p)
{
	struct dg_tstate *ts = p;
	struct dg_thread *me;
	int i;

	for (i = 0; i < DG_MAX_ATTACH; i++) {
		me = ts->me[i];
		if (!me)
			continue;
		if (dg_lock_attached(me->d, me->did)) {
			unsigned int n = me->d->geo.trustees;

			if (!me->d->remote)
				__atomic_store_n(&dg_client(me->d, me->client)->owner,
						 0, __ATOMIC_RELEASE);
			dg_unlock_attached();
			dg_thread_free(me, n);
		}
		/* else its runtime is gone, and with it how to free it */
	}
	free(ts);
}

unsigned long dg_fork_gen;

static void dg_atfork_child(void)
{
	dg_fork_gen++;
}

static void dg_key_init(void)
{
	pthread_key_create(&dg_key, dg_key_dtor);
	pthread_atfork(NULL, NULL, dg_atfork_child);
}

void dg_fork_watch(void)
{
	pthread_once(&dg_key_once, dg_key_init);
}

/* Whether the holder owner (a slot's word) is gone (its thread exited). */
static bool dg_holder_dead(uint64_t owner)
{
	uint32_t tid = (uint32_t)owner;
	int32_t pid = (int32_t)(owner >> 32);

	if (!tid || pid <= 0)
		return false;
	return syscall(SYS_tgkill, pid, tid, 0) && errno == ESRCH;
}

static int dg_wait_seq(struct odsm_deleg *d, unsigned int t,
		       struct dg_client *cl, uint32_t want);

/* Take a free client slot (or one whose holder died); -EUSERS if none. */
static int dg_claim(struct odsm_deleg *d, struct dg_thread *me)
{
	uint64_t mine = (uint64_t)getpid() << 32 |
			(uint32_t)syscall(SYS_gettid), cur;
	uint32_t hi, c, t;
	struct dg_hdr *h = d->h;
	struct dg_client *cl;
	int pass, ret;

	for (pass = 0; pass < 2; pass++) {
		/* the lanes are the module's */
		for (c = DG_LANES; c < d->geo.clients; c++) {
			cl = dg_client(d, c);
			cur = __atomic_load_n(&cl->owner, __ATOMIC_ACQUIRE);
			if (cur && !(pass && dg_holder_dead(cur)))
				continue;
			if (__atomic_compare_exchange_n(&cl->owner, &cur, mine,
							false, __ATOMIC_ACQ_REL,
							__ATOMIC_RELAXED))
				goto got;
		}
	}
	return -EUSERS;
got:
	cl->waiting = 0;
	me->client = c;
	hi = __atomic_load_n(&h->clients_hi, __ATOMIC_ACQUIRE);
	while (hi < c + 1 &&
	       !__atomic_compare_exchange_n(&h->clients_hi, &hi, c + 1, false,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
	/* a batch the last holder left in flight is answered first */
	for (t = 0; t < d->geo.trustees; t++) {
		struct odsm_dslot_hdr *q = (void *)dg_req_slot(d, t, c);

		me->pairs[t].seq = __atomic_load_n(&q->seq, __ATOMIC_ACQUIRE);
		ret = dg_wait_seq(d, t, cl, me->pairs[t].seq);
		if (ret) {
			__atomic_store_n(&cl->owner, 0, __ATOMIC_RELEASE);
			return ret;
		}
	}
	return 0;
}

static struct dg_thread *dg_thread_new(struct odsm_deleg *d)
{
	unsigned int t, slot = d->geo.slot_size,
		     max = odsm_dslot_max_count(slot);
	struct dg_thread *me = calloc(1, sizeof(*me));

	if (!me)
		return NULL;
	me->d = d;
	me->did = d->did;
	me->fgen = dg_fork_gen;
	me->pairs = calloc(d->geo.trustees, sizeof(*me->pairs));
	if (!me->pairs)
		goto err;
	for (t = 0; t < d->geo.trustees; t++) {
		struct dg_pair *p = &me->pairs[t];

		p->stage = aligned_alloc(DG_LINE, slot);
		p->pstage = calloc(max, sizeof(*p->pstage));
		p->pfly = calloc(max, sizeof(*p->pfly));
		p->pdone = calloc(max, sizeof(*p->pdone));
		p->rv = calloc(max, sizeof(*p->rv));
		p->rcopy = aligned_alloc(DG_LINE, slot);
		if (!p->stage || !p->pstage || !p->pfly || !p->pdone ||
		    !p->rv || !p->rcopy)
			goto err;
		odsm_dbatch_init(&p->b, p->stage, slot);
		if (!d->remote)
			continue;
		p->job = calloc(1, sizeof(*p->job));
		if (!p->job)
			goto err;
		p->job->req = aligned_alloc(DG_LINE, slot);
		p->job->resp = aligned_alloc(DG_LINE, slot);
		if (!p->job->req || !p->job->resp)
			goto err;
		p->job->endpoint = d->h->gaddr;
		p->job->slot_size = slot;
	}
	return me;
err:
	dg_thread_free(me, d->geo.trustees);
	return NULL;
}

/* This thread's client of d, claimed the first time. */
static int dg_me(struct odsm_deleg *d, struct dg_thread **out)
{
	struct dg_thread *me;
	int ret;

	if (dg_in_trustee) {
		/* counted by the trustee's own runtime, the one it serves */
		if (!d->remote)
			DG_INC(dg_trustee(d, dg_my_trustee %
					  d->geo.trustees)->n.deadlk);
		return -EDEADLK;
	}
	if (!dg_ts) {
		pthread_once(&dg_key_once, dg_key_init);
		dg_ts = calloc(1, sizeof(*dg_ts));
		if (!dg_ts)
			return -ENOMEM;
		pthread_setspecific(dg_key, dg_ts);
	}
	me = dg_ts->me[d->att];
	if (me && me->did == d->did && me->fgen == dg_fork_gen) {
		*out = me;
		return 0;
	}
	/*
	 * A runtime detached since: its memory went with it (leaked).  Or
	 * the parent's record, in a child of fork(): its slot is the
	 * parent's, left as it is, and the child claims one of its own.
	 */
	me = dg_thread_new(d);
	if (!me)
		return -ENOMEM;
	/* another node's runtime: no slot to claim, the module carries */
	ret = d->remote ? 0 : dg_claim(d, me);
	if (ret) {
		dg_thread_free(me, d->geo.trustees);
		return ret;
	}
	dg_ts->me[d->att] = me;
	*out = me;
	return 0;
}

/*
 * Wait until trustee t's response slot for client cl holds seq want.
 * Spin, then yield (an oversubscribed CPU may be running the trustee's
 * competitors), then sleep on the response seq in 1 ms steps, checking
 * between them that the trustee lives: a dead one is an error within
 * about a millisecond, never a hang.
 */
static int dg_wait_seq(struct odsm_deleg *d, unsigned int t,
		       struct dg_client *cl, uint32_t want)
{
	struct odsm_dslot_hdr *r = (void *)dg_resp_slot(d, t,
						       (unsigned int)(cl - dg_client(d, 0)));
	unsigned int n = 0;
	uint32_t cur;
	int ret;

	for (;;) {
		cur = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);
		if (cur == want)
			return 0;
		if (++n < DG_WAIT_SPIN) {
			dg_pause();
			continue;
		}
		if (n < DG_WAIT_SPIN + DG_WAIT_YIELD) {
			sched_yield();
			continue;
		}
		ret = dg_trustee_alive(d, t);
		if (ret) {
			DG_INC(cl->n.dead);
			return ret;
		}
		__atomic_store_n(&cl->waiting, 1, __ATOMIC_SEQ_CST);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&r->seq, __ATOMIC_ACQUIRE) == cur)
			dg_futex_wait(&r->seq, cur, DG_WAIT_NS);
		__atomic_store_n(&cl->waiting, 0, __ATOMIC_RELAXED);
	}
}

/* Where this thread's client counters for its runtime are. */
static struct dg_client *dg_mycl(struct dg_thread *me)
{
	return me->d->remote ? &me->rcl : dg_client(me->d, me->client);
}

/*
 * Complete one request: its result where the caller said, then its
 * callback, the only place this library runs the caller's code (so a
 * frame of the library is on this thread's stack above the callback
 * while cb_depth is not 0, and none is when it is, at a public call's
 * return).
 */
static void dg_finish(struct dg_thread *me, const struct dg_pending *pd,
		      int st, const void *ret, size_t len)
{
	if (pd->ret && len)
		memcpy(pd->ret, ret, len);
	if (pd->ret_len)
		*pd->ret_len = len;
	if (pd->status)
		*pd->status = st;
	if (pd->fn) {
		me->cb_depth++;
		pd->fn(pd->cookie, st, pd->ret ? pd->ret : ret, len);
		me->cb_depth--;
	}
	if (pd->c) {
		pd->c->status = st;
		pd->c->ret_len = len;
		__atomic_store_n(&pd->c->done, 1, __ATOMIC_RELEASE);
	}
	if (pd->fin)
		*pd->fin = true;
}

/*
 * Complete the batch in flight to trustee t, answered (err == 0) or not
 * (err: every request of it fails with err).  Returns how many completed.
 */
static int dg_complete(struct dg_thread *me, unsigned int t, int err)
{
	struct odsm_deleg *d = me->d;
	struct dg_pair *p = &me->pairs[t];
	uint8_t *resp = d->remote ? p->job->resp :
			dg_resp_slot(d, t, me->client);
	struct dg_pending *done;
	uint32_t i, n = p->nfly;
	int32_t bst = 0;
	int bad = 0, st;

	if (!err)
		bad = odsm_dslot_parse_resp(resp, d->geo.slot_size, n, p->rv,
					    &bst);
	/*
	 * A callback without a buffer of its own (ret NULL) is handed its
	 * answer where it is: should it send the next batch, that batch's
	 * answer would land under it.  Such a batch is handed out from a
	 * copy from the start (dg_flush_pair() copies for the others).
	 */
	for (i = 0; !err && i < n; i++) {
		if (p->pfly[i].fn && !p->pfly[i].ret) {
			memcpy(p->rcopy, resp, d->geo.slot_size);
			resp = p->rcopy;
			break;
		}
	}
	/* the callbacks below may stage and send: keep this batch apart */
	done = p->pdone;
	p->pdone = p->pfly;
	p->pfly = done;
	done = p->pdone;
	p->inflight = false;
	p->nfly = 0;
	p->in_cb = true;
	p->cresp = resp;
	for (i = 0; i < n; i++) {
		const struct odsm_dresp_view *v = &p->rv[i];
		const void *ret = NULL;
		size_t len = 0;

		if (err)
			st = err;
		else if (bad)
			st = -EPROTO;	/* the trustee's answer is garbage */
		else if (bst)
			st = bst;	/* the batch was dropped */
		else if (v->tag != done[i].tag || v->ret_len > done[i].ret_cap)
			st = -EPROTO;
		else {
			st = v->status;
			ret = p->cresp + v->ret_off;
			len = v->ret_len;
		}
		dg_finish(me, &done[i], st, ret, len);
	}
	p->cresp = NULL;
	p->in_cb = false;
	return (int)n;
}

/* Wait for the batch in flight to trustee t and complete it. */
static int dg_wait_pair(struct dg_thread *me, unsigned int t)
{
	struct dg_pair *p = &me->pairs[t];
	int ret;

	if (!p->inflight)
		return 0;
	if (p->in_cb)
		return -EDEADLK;	/* a callback of this very batch */
	if (me->d->remote)
		ret = dg_rwait(p->job);
	else
		ret = dg_wait_seq(me->d, t, dg_client(me->d, me->client),
				  p->seq);
	dg_complete(me, t, ret);
	return ret;
}

/*
 * Complete every staged request to trustee t with err: never sent.  Their
 * callbacks may stage anew, into the entries being completed, and flush,
 * which swaps the array: these are completed from a copy.  Only if the
 * copy cannot be made, in place, with staging and flushing refused
 * meanwhile (p->failing: -ENOMEM), so that nothing writes or swaps it.
 * The callbacks run as dg_complete()'s do (p->in_cb): they may queue but
 * not wait, so nothing they issue completes before the requests issued
 * ahead of it.
 */
static void dg_fail_staged(struct dg_thread *me, unsigned int t, int err)
{
	struct dg_pair *p = &me->pairs[t];
	uint16_t i, n = p->b.count;
	struct dg_pending *f, *arr;
	bool in_cb = p->in_cb;

	if (!n)
		return;
	f = malloc(n * sizeof(*f));
	if (f)
		memcpy(f, p->pstage, n * sizeof(*f));
	else
		p->failing = true;
	arr = f ? f : p->pstage;
	odsm_dbatch_init(&p->b, p->stage, me->d->geo.slot_size);
	p->in_cb = true;
	for (i = 0; i < n; i++)
		dg_finish(me, &arr[i], err, NULL, 0);
	p->in_cb = in_cb;	/* a callback's own drain may have come here */
	p->failing = false;
	free(f);
}

/*
 * Publish the batch already in client c's request slot to trustee t as
 * number seq, and wake the trustee if it sleeps.
 */
static void dg_publish(struct odsm_deleg *d, unsigned int t, unsigned int c,
		       uint32_t seq)
{
	struct odsm_dslot_hdr *q = (void *)dg_req_slot(d, t, c);
	struct dg_trustee *tr = dg_trustee(d, t);

	__atomic_store_n(&q->seq, seq, __ATOMIC_RELEASE);
	/* pairs with the trustee's fence in dg_sleep() */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&tr->sleeping, __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&tr->wake, 1, __ATOMIC_SEQ_CST);
		dg_futex_wake(&tr->wake, 1);
	}
}

/*
 * Hand the sealed batch of pair p to the module (another node's
 * runtime): sync, from this thread, which waits for the answer next
 * anyway (no courier's wakeup on the way); else from a courier.  The
 * stage buffer becomes the job's and the job's old one the next stage.
 */
static void dg_rflush(struct dg_pair *p, bool sync)
{
	struct dg_rjob *j = p->job;
	uint8_t *tmp = j->req;

	j->req = p->stage;
	p->stage = tmp;
	j->req_len = ODSM_DSLOT_HDR + p->b.len;
	j->done = 0;
	if (sync)
		dg_rcall(j);
	else
		dg_rsend(j);
}

/*
 * The launch set aside for trustee t (p->launch), if any, at the end of
 * the batch about to be sealed: a launch must end its batch (the trustee
 * refuses one that does not), and nothing joins a batch once sealed.  A
 * batch without room for it goes without it, and the next one takes it.
 */
static void dg_add_launch(struct dg_thread *me, unsigned int t)
{
	struct dg_pair *p = &me->pairs[t];
	struct dg_launch *l = p->launch;
	int ret;

	if (!l)
		return;
	l->r.tag = me->tag++;
	ret = odsm_dbatch_add(&p->b, &l->r, l->arg);
	if (ret == -ENOSPC && p->b.count)
		return;
	p->launch = NULL;
	if (ret) {
		DG_INC(dg_mycl(me)->n.too_long);
		dg_finish(me, &l->pd, ret, NULL, 0);
		return;
	}
	p->pstage[p->b.count - 1] = l->pd;
	p->pstage[p->b.count - 1].tag = l->r.tag;
}

/*
 * Send the staged batch to trustee t (after the one in flight), ended by
 * the launch set aside if there is one; sync: the caller waits for its
 * answer next.
 */
static int dg_flush_pair(struct dg_thread *me, unsigned int t, bool sync)
{
	struct odsm_deleg *d = me->d;
	struct dg_pair *p = &me->pairs[t];
	struct odsm_dslot_hdr *q;
	struct dg_pending *tmp;
	uint8_t *slot;
	int ret;

	if (!p->b.count && !p->launch)
		return 0;
	if (p->failing)
		return -ENOMEM;	/* dg_fail_staged() without its copy */
	/*
	 * The batch in flight first.  Its callbacks may stage and send one
	 * of their own (when this call itself came from a callback, that is
	 * refused: dg_wait_pair() says -EDEADLK), so it may be in flight
	 * again after the wait: wait again, and what is staged may have
	 * gone with it.
	 */
	while (p->inflight) {
		ret = dg_wait_pair(me, t);
		if (ret)
			return ret;
	}
	dg_add_launch(me, t);
	if (!p->b.count)
		return 0;
	/*
	 * From a callback of the batch dg_complete() is completing: this
	 * batch's answer lands where that one's are still read.  They are
	 * read from a copy from here on.
	 */
	if (p->cresp && p->cresp != p->rcopy) {
		memcpy(p->rcopy, p->cresp, d->geo.slot_size);
		p->cresp = p->rcopy;
	}
	odsm_dbatch_seal(&p->b);
	if (d->remote) {
		dg_rflush(p, sync);
	} else {
		slot = dg_req_slot(d, t, me->client);
		q = (void *)slot;
		/* everything but the ready seq, which goes last */
		memcpy(slot + sizeof(q->seq), p->stage + sizeof(q->seq),
		       ODSM_DSLOT_HDR - sizeof(q->seq) + p->b.len);
		dg_publish(d, t, me->client, ++p->seq);
	}
	tmp = p->pfly;
	p->pfly = p->pstage;
	p->pstage = tmp;
	p->nfly = p->b.count;
	p->inflight = true;
	DG_INC(dg_mycl(me)->n.sent);
	odsm_dbatch_init(&p->b, p->stage, d->geo.slot_size);
	return 0;
}

static bool dg_answered(struct dg_thread *me, unsigned int t)
{
	struct odsm_dslot_hdr *r;

	if (me->d->remote)
		return __atomic_load_n(&me->pairs[t].job->done,
				       __ATOMIC_ACQUIRE);
	r = (void *)dg_resp_slot(me->d, t, me->client);
	return __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE) == me->pairs[t].seq;
}

/*
 * Do r and then the launch set aside for pair p both fit the batch being
 * built: 0, or -ENOSPC, or r's own -E2BIG.  Tried on a copy of the
 * batch: the bytes it writes lie past the batch's end, where the next
 * request goes anyway.
 */
static int dg_room_for_launch(struct dg_pair *p, const struct odsm_dreq *r,
			      const void *arg)
{
	struct odsm_dbatch b = p->b;
	int ret = odsm_dbatch_add(&b, r, arg);

	if (ret)
		return ret;
	return odsm_dbatch_add(&b, &p->launch->r, p->launch->arg) ? -ENOSPC :
								     0;
}

/* Stage request r (its tag set here) with pending pd for trustee t. */
static int dg_stage(struct dg_thread *me, unsigned int t, struct odsm_dreq *r,
		    const void *arg, const struct dg_pending *pd, bool nowait)
{
	struct dg_client *cl = dg_mycl(me);
	struct dg_pair *p = &me->pairs[t];
	int ret;

	if (p->failing)
		return -ENOMEM;	/* dg_fail_staged() without its copy */
	r->tag = me->tag++;
	/*
	 * With a launch set aside, the batch keeps room for it: a request
	 * that would take that room sends the batch, with the launch at its
	 * end, first.  Otherwise callbacks that keep filling batches would
	 * send every one without it.
	 */
	ret = p->launch ? dg_room_for_launch(p, r, arg) : 0;
	if (!ret)
		ret = odsm_dbatch_add(&p->b, r, arg);
	if (ret == -ENOSPC) {
		if (p->inflight && (p->in_cb || (nowait && !dg_answered(me, t)))) {
			DG_INC(cl->n.slot_full);
			return -EAGAIN;
		}
		ret = dg_flush_pair(me, t, false);
		if (ret)
			return ret;
		ret = odsm_dbatch_add(&p->b, r, arg);
	}
	if (ret == -E2BIG)
		DG_INC(cl->n.too_long);
	if (ret)
		return ret;
	p->pstage[p->b.count - 1] = *pd;
	p->pstage[p->b.count - 1].tag = r->tag;
	return 0;
}

/* The runtime, this thread's client and the trustee of handle t. */
static int dg_target(const odsm_trust *t, struct odsm_deleg **dp,
		     struct dg_thread **me, unsigned int *tr)
{
	struct odsm_deleg *d = dg_find(t->arena);
	int ret;

	/*
	 * A handle of another node's runtime: attached on first use.  Its
	 * node down or silent is -EHOSTDOWN/-ETIMEDOUT from the read of
	 * its header, within the cluster's timeout; no runtime: -EBADF.
	 */
	if (!d) {
		ret = dg_remote_attach(t->arena, &d);
		if (ret)
			return ret == -EINVAL ? -EBADF : ret;
	}
	if ((uint64_t)t->cell >= (uint64_t)d->geo.trustees * d->geo.cells)
		return -ESTALE;
	ret = dg_me(d, me);
	if (ret)
		return ret;
	*dp = d;
	*tr = t->cell / d->geo.cells;
	return 0;
}

/*
 * Send what is staged for trustee t and wait until *fin: the caller's
 * request (staged, or a launch set aside) has completed.  Until then
 * only: the callbacks of the batches waited for may stage and send more
 * for as long as they like, and the caller is not held up by those.
 */
static int dg_send_wait(struct dg_thread *me, unsigned int t, const bool *fin)
{
	struct dg_pair *p = &me->pairs[t];
	int err = 0;

	while (!*fin && !err) {
		if (p->inflight)
			err = dg_wait_pair(me, t);
		else if (p->b.count || p->launch)
			err = dg_flush_pair(me, t, true);
		else
			err = -EPROTO;	/* ours is staged, aside or out */
	}
	return err;
}

/*
 * The caller's request to trustee t, not completed, after err: complete
 * it, since nothing may point at the caller's frame once it returns.  A
 * launch still aside was never sent: it fails with err, before anything
 * else runs a callback (one could send it).  Otherwise it may have gone
 * out meanwhile (a callback of the batch that failed flushed, with it in
 * the batch): every batch out is completed, answered or failed (each
 * wait ends one), and if it is still staged then, it fails with what is
 * staged.
 */
static void dg_take_back(struct dg_thread *me, unsigned int t,
			 struct dg_launch *l, const bool *fin, int err)
{
	struct dg_pair *p = &me->pairs[t];

	if (p->launch == l) {
		p->launch = NULL;
		dg_finish(me, &l->pd, err, NULL, 0);
		return;
	}
	while (!*fin && p->inflight)
		dg_wait_pair(me, t);
	if (!*fin)
		dg_fail_staged(me, t, err);
}

/* Flush and wait until every request of this thread to d completed. */
static int dg_drain(struct dg_thread *me)
{
	unsigned int t;
	int ret = 0, r;

	for (t = 0; t < me->d->geo.trustees; t++) {
		r = dg_flush_pair(me, t, true);
		if (r)
			dg_fail_staged(me, t, r);
		else
			r = dg_wait_pair(me, t);
		if (r && !ret)
			ret = r;
	}
	return ret;
}

/*
 * This thread is done with its runtime: what it sent completes, its
 * client slot goes free, its state with it.  Not from a callback (the
 * library's frames above it still use the state): dg_leave() then.
 */
static void dg_thread_end(struct dg_thread *me)
{
	struct odsm_deleg *d = me->d;

	dg_drain(me);
	if (!d->remote)
		__atomic_store_n(&dg_client(d, me->client)->owner, 0,
				 __ATOMIC_RELEASE);
	dg_ts->me[d->att] = NULL;
	dg_thread_free(me, d->geo.trustees);
}

/*
 * The end of every public call that may run callbacks: if one of them
 * said odsm_deleg_thread_done(), and no callback is running any more (so
 * no frame of the library is left above this one), it is done now.  me
 * is gone after it then.
 */
static void dg_leave(struct dg_thread *me)
{
	if (me && me->retire && !me->cb_depth)
		dg_thread_end(me);
}

/* Stage one request, send it and wait: the synchronous calls. */
static int dg_call_one(struct dg_thread *me, unsigned int tr,
		       uint16_t kind, const odsm_trust *t, uint64_t op,
		       const void *arg, size_t arg_len, void *ret,
		       size_t *ret_len)
{
	struct odsm_dreq r = { .op = op, .kind = kind };
	struct dg_pair *p = &me->pairs[tr];
	size_t cap = ret_len ? *ret_len : 0;
	struct dg_pending pd = { 0 };
	struct dg_launch l;
	bool fin = false;
	int st = 0, err;

	if (arg_len > UINT32_MAX || cap > UINT32_MAX) {
		DG_INC(dg_mycl(me)->n.too_long);
		return -E2BIG;
	}
	/*
	 * From a callback of a batch to this trustee: refused before it is
	 * staged.  Staged, a flush would send it (nothing is in flight while
	 * the callbacks run) and its answer would later land in this frame,
	 * gone by then.
	 */
	if (p->in_cb) {
		DG_INC(dg_mycl(me)->n.deadlk);
		return -EDEADLK;
	}
	r.obj = t->cell | (uint64_t)t->gen << 32;
	r.arg_len = (uint32_t)arg_len;
	r.ret_max = (uint32_t)cap;
	pd.ret = ret;
	pd.ret_cap = cap;
	pd.status = &st;
	pd.ret_len = ret_len;
	pd.fin = &fin;
	if (kind == ODSM_DREQ_LAUNCH) {
		/*
		 * A launch must end its batch, and the callbacks of the
		 * batch in flight may stage more behind anything staged now:
		 * it waits aside, and the next flush of the pair puts it at
		 * the end of the batch it sends (dg_add_launch()), whoever
		 * flushes, so it goes with the first batch out however long
		 * the callbacks go on staging.  One at a time: a caller
		 * waits for it, and callbacks of this pair may not call.
		 */
		if (p->launch)
			return -EDEADLK;
		l.r = r;
		l.arg = arg;
		l.pd = pd;
		p->launch = &l;
	} else {
		err = dg_stage(me, tr, &r, arg, &pd, false);
		if (err)
			return err;
	}
	err = dg_send_wait(me, tr, &fin);
	if (err && !fin)
		dg_take_back(me, tr, &l, &fin, err);
	/* completed, answered or failed: st holds how */
	return fin ? st : err;
}

static int dg_call(const odsm_trust *t, uint16_t kind, uint64_t op,
		   const void *arg, size_t arg_len, void *ret,
		   size_t *ret_len)
{
	struct dg_thread *me;
	struct odsm_deleg *d;
	unsigned int tr;
	int err;

	err = dg_target(t, &d, &me, &tr);
	if (err)
		return err;
	err = dg_call_one(me, tr, kind, t, op, arg, arg_len, ret, ret_len);
	dg_leave(me);
	return err;
}

int odsm_deleg_apply(const odsm_trust *t, uint64_t op, const void *arg,
		     size_t arg_len, void *ret, size_t *ret_len)
{
	return dg_call(t, ODSM_DREQ_APPLY, op, arg, arg_len, ret, ret_len);
}

/*
 * The trustee reads the argument in place.  One of another node is copied
 * into this partition first for a runtime of this node; a runtime of
 * another node gets the address as it is, and its gateway makes the copy
 * there (odsm_deleg_gateway.c).
 */
int odsm_deleg_apply_with(const odsm_trust *t, uint64_t op, uint64_t gaddr,
			  size_t len, void *ret, size_t *ret_len)
{
	struct odsm_dwith w = { .gaddr = gaddr, .len = len };
	uint64_t copy = 0;
	int err;

	if (odsm_in_heap(t->arena) && odsm_is_local(t->arena)) {
		err = dg_copy_here(gaddr, len, &copy);
		if (err)
			return err;
		if (copy)
			w.gaddr = copy;
	}
	err = dg_call(t, ODSM_DREQ_APPLY_WITH, op, &w, sizeof(w), ret,
		      ret_len);
	if (copy)
		odsm_free(copy);
	return err;
}

int odsm_deleg_launch(const odsm_trust *t, uint64_t op, const void *arg,
		      size_t arg_len, void *ret, size_t *ret_len)
{
	/* dg_call sends the batch right after staging: a launch ends it */
	return dg_call(t, ODSM_DREQ_LAUNCH, op, arg, arg_len, ret, ret_len);
}

int odsm_deleg_apply_then(const odsm_trust *t, uint64_t op, const void *arg,
			  size_t arg_len, void *ret, size_t ret_cap,
			  odsm_deleg_done_fn fn, void *cookie,
			  struct odsm_deleg_completion *c, unsigned int flags)
{
	struct odsm_dreq r = { .op = op, .kind = ODSM_DREQ_APPLY };
	struct dg_pending pd = { .ret = ret, .ret_cap = ret_cap, .fn = fn,
				 .cookie = cookie, .c = c };
	struct dg_thread *me;
	struct odsm_deleg *d;
	unsigned int tr;
	int err;

	err = dg_target(t, &d, &me, &tr);
	if (err)
		return err;
	if (arg_len > UINT32_MAX || ret_cap > UINT32_MAX) {
		DG_INC(dg_mycl(me)->n.too_long);
		return -E2BIG;
	}
	if (c)
		c->done = 0;
	r.obj = t->cell | (uint64_t)t->gen << 32;
	r.arg_len = (uint32_t)arg_len;
	r.ret_max = (uint32_t)ret_cap;
	err = dg_stage(me, tr, &r, arg, &pd, flags & ODSM_DELEG_NOWAIT);
	dg_leave(me);
	return err;
}

/* The partition, so the node, global address g is in (g in the heap). */
static uint64_t dg_part_of(uint64_t g)
{
	return (odsm_addr_of(g) - odsm_rt.info.heap_base) /
	       odsm_rt.info.part_size;
}

/*
 * Ask the gateway of d, a runtime of another node, to move b's object
 * there (DG_OP_NAME_MOVE): one batch of its own, not staged with this
 * thread's requests, since the gateway answers it and no trustee.  b then
 * names the object at its new address; it is still b's.
 */
static int dg_move_there(struct odsm_deleg *d, struct odsm_box *b)
{
	uint32_t slot = d->geo.slot_size;
	struct odsm_dreq r = { .op = dg_op_move_id(), .arg_len = sizeof(*b),
			       .ret_max = sizeof(uint64_t), .tag = 1,
			       .kind = ODSM_DREQ_APPLY };
	struct dg_rjob j = { .endpoint = d->h->gaddr, .slot_size = slot };
	struct odsm_dresp_view v;
	struct odsm_dbatch db;
	int32_t st = 0;
	uint64_t g;
	int ret;

	j.req = calloc(1, slot);
	j.resp = calloc(1, slot);
	ret = -ENOMEM;
	if (!j.req || !j.resp)
		goto out;
	/* a copy this process holds is of the old address: returned first */
	odsm__drop_copy(b->g, &b->ext);
	odsm_dbatch_init(&db, j.req, slot);
	ret = odsm_dbatch_add(&db, &r, b);
	if (ret)
		goto out;
	odsm_dbatch_seal(&db);
	/* the gateway answers it: the module must not give it a trustee */
	((struct odsm_dslot_hdr *)j.req)->flags = ODSM_DSLOT_F_GATEWAY;
	j.req_len = ODSM_DSLOT_HDR + db.len;
	dg_rcall(&j);
	if (j.status == -EBADMSG) {
		/*
		 * A module without lanes refuses the flag as malformed (it
		 * has no lanes, so it queues every batch for the gateway):
		 * once more without it.
		 */
		((struct odsm_dslot_hdr *)j.req)->flags = 0;
		dg_rcall(&j);
	}
	ret = j.status;
	if (ret)
		goto out;
	ret = -EPROTO;
	if (odsm_dslot_parse_resp(j.resp, slot, 1, &v, &st) || v.tag != r.tag)
		goto out;
	ret = st ? st : v.status;
	if (ret)
		goto out;
	ret = -EPROTO;
	if (v.ret_len != sizeof(g))
		goto out;
	memcpy(&g, j.resp + v.ret_off, sizeof(g));
	if (!odsm_in_heap(g) || dg_part_of(g) != dg_part_of(d->h->gaddr))
		goto out;
	b->g = g;
	b->ext = 0;
	ret = 0;
out:
	free(j.req);
	free(j.resp);
	return ret;
}

/*
 * A trustee holds objects of its own partition: bring b's object there
 * first when it is elsewhere.  For a runtime of this node, the box's own
 * write moves it here (the mutable move of DRust); for one of another
 * node, that node's gateway moves it.  An object that cannot be in the
 * heap's partitions (a runtime in plain shared memory) is left to the
 * trustee's check.
 */
static int dg_bring(struct odsm_deleg *d, struct odsm_box *b)
{
	void *p;

	if (!odsm_in_heap(d->h->gaddr) || !odsm_in_heap(b->g) ||
	    dg_part_of(b->g) == dg_part_of(d->h->gaddr))
		return 0;
	if (d->remote)
		return dg_move_there(d, b);
	return odsm_box_write(b, &p);
}

int odsm_deleg_entrust(struct odsm_deleg *d, unsigned int trustee,
		       struct odsm_box *b, uint64_t dtor, odsm_trust *t)
{
	struct odsm_dentrust e = { .dtor = dtor };
	odsm_trust via = { .arena = d->h->gaddr };
	uint64_t h = 0;
	size_t len = sizeof(h);
	int ret;

	if (trustee >= d->geo.trustees || !b->g)
		return -EINVAL;
	ret = dg_bring(d, b);
	if (ret)
		return ret;
	e.g = b->g;
	/* any cell of the trustee routes the request; ENTRUST ignores obj */
	via.cell = trustee * d->geo.cells;
	ret = dg_call(&via, ODSM_DREQ_ENTRUST, 0, &e, sizeof(e), &h, &len);
	if (ret)
		return ret;
	if (len != sizeof(h))
		return -EPROTO;
	t->arena = d->h->gaddr;
	t->cell = (uint32_t)h;
	t->gen = (uint32_t)(h >> 32);
	b->g = 0;
	b->ext = 0;
	return 0;
}

/*
 * References are counted in the cell's word with compare-and-swap, never
 * by messages: a clone is made from a live reference, so the count cannot
 * reach 0 under it, and a count of 0 (or another generation) is final.
 */
/*
 * The cell word of another node's runtime: the same compare-and-swap,
 * done by its node (odsm_cmp_swap), with delta +1 (clone) or -1 (drop).
 * Its old value in *was; -ESTALE as the local loops decide.
 */
static int dg_rref(const struct odsm_deleg *d, const odsm_trust *t, int delta,
		   uint64_t *was)
{
	uint64_t g = dg_cell_gaddr(d, t->cell), w, old;
	int ret;

	/* the likely value first: a live reference or two */
	w = (uint64_t)t->gen << 32 | 1;
	for (;;) {
		if ((uint32_t)(w >> 32) != t->gen || !(uint32_t)w ||
		    (delta > 0 && (uint32_t)w == UINT32_MAX))
			return -ESTALE;
		ret = odsm_cmp_swap(g, w, w + (uint64_t)(int64_t)delta, &old);
		if (ret)
			return ret;
		if (old == w)
			break;
		w = old;
	}
	*was = w;
	return 0;
}

int odsm_trust_clone(const odsm_trust *t, odsm_trust *out)
{
	struct odsm_deleg *d = dg_find(t->arena);
	struct dg_cell *cell;
	uint64_t w;
	int ret;

	if (!d && dg_remote_attach(t->arena, &d))
		return -EBADF;
	if ((uint64_t)t->cell >= (uint64_t)d->geo.trustees * d->geo.cells)
		return -ESTALE;
	if (d->remote) {
		ret = dg_rref(d, t, 1, &w);
		if (!ret)
			*out = *t;
		return ret;
	}
	cell = dg_cell(d, t->cell);
	w = __atomic_load_n(&cell->word, __ATOMIC_ACQUIRE);
	do {
		if ((uint32_t)(w >> 32) != t->gen || !(uint32_t)w ||
		    (uint32_t)w == UINT32_MAX)
			return -ESTALE;
	} while (!__atomic_compare_exchange_n(&cell->word, &w, w + 1, false,
					      __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	*out = *t;
	return 0;
}

int odsm_trust_drop(odsm_trust *t)
{
	struct odsm_deleg *d;
	struct dg_thread *me;
	struct dg_cell *cell;
	unsigned int tr;
	uint64_t w;
	int ret;

	/*
	 * What the last drop's FREE needs (a client slot), before the count
	 * moves: a last reference dropped with no FREE sent would leave the
	 * object for good.  From a callback of a batch to its trustee the
	 * FREE cannot be sent (dg_call()): a remote drop, or a last one, is
	 * refused there, the count unchanged.
	 */
	ret = dg_target(t, &d, &me, &tr);
	if (ret)
		return ret;
	if (d->remote) {
		if (me->pairs[tr].in_cb)
			return -EDEADLK;
		ret = dg_rref(d, t, -1, &w);
		if (ret)
			return ret;
		goto dropped;
	}
	cell = dg_cell(d, t->cell);
	w = __atomic_load_n(&cell->word, __ATOMIC_ACQUIRE);
	do {
		if ((uint32_t)(w >> 32) != t->gen || !(uint32_t)w)
			return -ESTALE;
		if ((uint32_t)w == 1 && me->pairs[tr].in_cb)
			return -EDEADLK;
	} while (!__atomic_compare_exchange_n(&cell->word, &w, w - 1, false,
					      __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
dropped:
	if ((uint32_t)w == 1)
		/* the last one: the trustee frees the object */
		ret = dg_call(t, ODSM_DREQ_FREE, 0, NULL, 0, NULL, NULL);
	memset(t, 0, sizeof(*t));
	return ret;
}

/*
 * End the object now, whatever references remain: the count goes to 0 in
 * one compare-and-swap (on the cell word, by its node for a remote
 * runtime), so every other handle of it is -ESTALE from then on, and the
 * trustee frees it as at a last drop.  For references that are never
 * coming back: those of a node that died, of a process that was killed.
 */
int odsm_trust_revoke(odsm_trust *t)
{
	struct odsm_deleg *d = dg_find(t->arena);
	struct dg_cell *cell = NULL;
	uint64_t w, old;
	int ret;

	if (!d && dg_remote_attach(t->arena, &d))
		return -EBADF;
	if ((uint64_t)t->cell >= (uint64_t)d->geo.trustees * d->geo.cells)
		return -ESTALE;
	w = (uint64_t)t->gen << 32 | 1;
	if (!d->remote) {
		cell = dg_cell(d, t->cell);
		w = __atomic_load_n(&cell->word, __ATOMIC_ACQUIRE);
	}
	for (;;) {
		if ((uint32_t)(w >> 32) != t->gen || !(uint32_t)w)
			return -ESTALE;
		if (!d->remote) {
			if (__atomic_compare_exchange_n(&cell->word, &w,
							w & ~0xffffffffULL,
							false, __ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE))
				break;
			continue;
		}
		ret = odsm_cmp_swap(dg_cell_gaddr(d, t->cell), w,
				    w & ~0xffffffffULL, &old);
		if (ret)
			return ret;
		if (old == w)
			break;
		w = old;
	}
	ret = dg_call(t, ODSM_DREQ_FREE, 0, NULL, 0, NULL, NULL);
	memset(t, 0, sizeof(*t));
	return ret;
}

/* This thread's client of d if it has one (no claim). */
static struct dg_thread *dg_me_if(struct odsm_deleg *d)
{
	struct dg_thread *me = dg_ts ? dg_ts->me[d->att] : NULL;

	return me && me->did == d->did && me->fgen == dg_fork_gen ? me : NULL;
}

int odsm_deleg_flush(struct odsm_deleg *d)
{
	struct dg_thread *me = dg_me_if(d);
	unsigned int t;
	int ret = 0, r;

	for (t = 0; me && t < d->geo.trustees; t++) {
		r = dg_flush_pair(me, t, false);
		if (r && !ret)
			ret = r;
	}
	dg_leave(me);
	return ret;
}

int odsm_deleg_poll(struct odsm_deleg *d)
{
	struct dg_thread *me = dg_me_if(d);
	unsigned int t;
	int n = 0, r;

	for (t = 0; me && t < d->geo.trustees; t++) {
		struct dg_pair *p = &me->pairs[t];

		if (p->inflight && !p->in_cb && dg_answered(me, t))
			n += dg_complete(me, t, 0);
		if (p->inflight && !p->in_cb && !d->remote) {
			/* not answered: still alive? (cheap: a trylock) */
			r = dg_trustee_alive(d, t);
			if (r) {
				dg_complete(me, t, r);
				n = r;
				break;
			}
		}
		if (!p->inflight && p->b.count) {
			r = dg_flush_pair(me, t, false);
			if (r) {
				n = r;
				break;
			}
		}
	}
	dg_leave(me);
	return n;
}

int odsm_deleg_drain(struct odsm_deleg *d)
{
	struct dg_thread *me = dg_me_if(d);
	int ret;

	if (!me)
		return 0;
	ret = dg_drain(me);
	dg_leave(me);
	return ret;
}

void odsm_deleg_thread_done(struct odsm_deleg *d)
{
	struct dg_thread *me = dg_me_if(d);

	if (!me)
		return;
	if (me->cb_depth)
		me->retire = true;	/* a callback: see dg_leave() */
	else
		dg_thread_end(me);
}

void dg_thread_release_all(struct odsm_deleg *d)
{
	odsm_deleg_thread_done(d);
}

/*
 * The gateway's relay (odsm_deleg_gateway.c): a batch of another node's
 * client, req_len bytes checked by the module, goes to its trustee
 * through this thread's own client slot, like any local client's batch
 * (so the trustee's round-robin and validation apply to it), and the
 * answer is copied to resp (slot_size bytes of room).  The trustee is
 * the one of the first record's cell (a batch is one pair's: the
 * trustee answers -ESTALE for a cell of another).  0, or -errno when
 * the trustee cannot answer (it died: -EOWNERDEAD).
 */
int dg_relay(struct odsm_deleg *d, const uint8_t *req, uint32_t req_len,
	     uint8_t *resp, uint32_t *resp_len)
{
	uint32_t slot = d->geo.slot_size, t = 0, len;
	const struct odsm_dslot_hdr *r;
	struct odsm_dreq first;
	struct dg_thread *me;
	uint8_t *q;
	int ret;

	if (req_len < ODSM_DSLOT_HDR || req_len > slot)
		return -EBADMSG;
	ret = dg_me(d, &me);
	if (ret)
		return ret;
	if (req_len >= ODSM_DSLOT_HDR + sizeof(first)) {
		memcpy(&first, req + ODSM_DSLOT_HDR, sizeof(first));
		t = (uint32_t)first.obj / d->geo.cells;
		if (t >= d->geo.trustees)
			t = 0;		/* it answers -ESTALE */
	}
	q = dg_req_slot(d, t, me->client);
	/* everything but the ready seq, which goes last */
	memcpy(q + sizeof(r->seq), req + sizeof(r->seq),
	       req_len - sizeof(r->seq));
	dg_publish(d, t, me->client, ++me->pairs[t].seq);
	DG_INC(dg_mycl(me)->n.sent);
	ret = dg_wait_seq(d, t, dg_mycl(me), me->pairs[t].seq);
	if (ret)
		return ret;
	r = (const void *)dg_resp_slot(d, t, me->client);
	len = __atomic_load_n(&r->len, __ATOMIC_RELAXED);
	/* the module checks the answer; only its bounds matter here */
	if (len > slot - ODSM_DSLOT_HDR)
		len = slot - ODSM_DSLOT_HDR;
	memcpy(resp, r, ODSM_DSLOT_HDR + len);
	*resp_len = ODSM_DSLOT_HDR + len;
	return 0;
}
