// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm delegation: the trustee threads and the launch workers.
 *
 * A trustee polls its clients' request slots round-robin, one batch per
 * client per pass, so no client can starve another.  A batch is validated
 * whole (odsm_dslot_parse_req) before any of it runs; each request is
 * then checked for what only the trustee knows (the handle's cell and
 * generation, the op id, where an apply_with argument lies) and answered
 * with an errno rather than run when anything is wrong.  The loop never
 * blocks: operations must not (launch is for those), and a launch is
 * handed to a worker thread, which answers the batch it ended.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include "odsm.h"
#include "odsm_deleg_int.h"

#define DG_SPIN_DEFAULT	2048	/* empty passes before sleeping */
#define DG_YIELD_EVERY	64	/* ... of which every 64th yields the CPU */

__thread bool dg_in_trustee;
__thread unsigned int dg_my_trustee;

/* What one trustee thread keeps for itself (process-local). */
struct dg_tlocal {
	struct odsm_deleg *d;
	unsigned int t;
	int cpu;
	uint32_t *fstack;	/* free cells, a stack */
	uint32_t nfree;
	/* [cell - t * cells]: entrusted, not freed -- kept here, not in the
	 * arena's words, so that no request or stray write can push a cell
	 * onto fstack twice (an overflow, one cell for two objects)
	 */
	uint8_t *live;
	uint8_t *deferred;	/* [client]: a worker answers its batch */
	struct odsm_dreq_view *v;
};

struct dg_job {
	struct dg_job *next;
	struct dg_tlocal *tl;
	unsigned int client;
	uint32_t seq;
	struct odsm_drbatch rb;
	odsm_deleg_fn fn;
	odsm_trust handle;
	void *ret;
	uint32_t ret_max, tag, arg_len;
	uint8_t arg[];
};

/*
 * The live cell obj names in trustee tl's range, or NULL: another
 * trustee's cell, a generation that is over, or one with no reference.
 */
static struct dg_cell *dg_cell_get(struct dg_tlocal *tl, uint64_t obj,
				   bool need_ref)
{
	struct odsm_deleg *d = tl->d;
	uint32_t idx = (uint32_t)obj, gen = (uint32_t)(obj >> 32);
	struct dg_cell *cell;
	uint64_t w;

	if (idx / d->geo.cells != tl->t)
		return NULL;
	cell = dg_cell(d, idx);
	w = __atomic_load_n(&cell->word, __ATOMIC_ACQUIRE);
	if ((uint32_t)(w >> 32) != gen || (need_ref && !(uint32_t)w))
		return NULL;
	return cell;
}

/* Publish the answer to client c's batch seq; wake it if it sleeps. */
static void dg_answer(struct odsm_deleg *d, unsigned int t, unsigned int c,
		      uint32_t seq)
{
	struct odsm_dslot_hdr *r = (void *)dg_resp_slot(d, t, c);

	__atomic_store_n(&r->seq, seq, __ATOMIC_RELEASE);
	/* pairs with the client's fence between "waiting = 1" and its
	 * last look at seq: one of the two sees the other
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&dg_client(d, c)->waiting, __ATOMIC_RELAXED))
		dg_futex_wake(&r->seq, INT_MAX);
}

static int dg_entrust(struct dg_tlocal *tl, const void *arg, void *ret,
		      size_t *rl)
{
	struct odsm_deleg *d = tl->d;
	struct dg_tcount *n = &dg_trustee(d, tl->t)->n;
	struct odsm_dentrust e;
	struct dg_cell *cell;
	uint64_t w, h;
	uint32_t idx;

	memcpy(&e, arg, sizeof(e));
	if (!d->a.local(&d->a, e.g, 1)) {
		DG_INC(n->bad_arg);
		return -EREMOTE;
	}
	if (e.dtor && !dg_op_lookup(e.dtor)) {
		DG_INC(n->unknown_op);
		return -EBADRQC;
	}
	if (!tl->nfree) {
		DG_INC(n->no_cell);
		return -ENOSPC;
	}
	idx = tl->fstack[--tl->nfree];
	tl->live[idx - tl->t * d->geo.cells] = 1;
	cell = dg_cell(d, idx);
	cell->g = e.g;
	cell->dtor = e.dtor;
	w = __atomic_load_n(&cell->word, __ATOMIC_RELAXED) & ~0xffffffffULL;
	__atomic_store_n(&cell->word, w | 1, __ATOMIC_RELEASE);
	h = idx | w;
	memcpy(ret, &h, sizeof(h));
	*rl = sizeof(h);
	return 0;
}

/* The last reference went: run the destructor, free, end the generation. */
static int dg_free(struct dg_tlocal *tl, uint64_t obj)
{
	struct odsm_deleg *d = tl->d;
	struct dg_tcount *n = &dg_trustee(d, tl->t)->n;
	struct dg_cell *cell = dg_cell_get(tl, obj, false);
	odsm_deleg_fn fn;
	size_t zero = 0;
	uint32_t gen;

	/* a cell free already (its word says generation gen, count 0, as a
	 * freed one does): a FREE of nothing
	 */
	if (!cell || !tl->live[(uint32_t)obj - tl->t * d->geo.cells]) {
		DG_INC(n->stale);
		return -ESTALE;
	}
	if ((uint32_t)__atomic_load_n(&cell->word, __ATOMIC_ACQUIRE)) {
		DG_INC(n->bad_arg);
		return -EBUSY;		/* a forged FREE: references remain */
	}
	fn = cell->dtor ? dg_op_lookup(cell->dtor) : NULL;
	if (fn)
		fn(odsm_ptr(cell->g), NULL, 0, NULL, &zero);
	if (d->a.obj_free)
		d->a.obj_free(&d->a, cell->g);
	gen = (uint32_t)(obj >> 32) + 1;
	__atomic_store_n(&cell->word, (uint64_t)(gen ? gen : 1) << 32,
			 __ATOMIC_RELEASE);
	cell->g = 0;
	cell->dtor = 0;
	tl->live[(uint32_t)obj - tl->t * d->geo.cells] = 0;
	tl->fstack[tl->nfree++] = (uint32_t)obj;
	return 0;
}

/* Run one validated request; its result goes to ret, *rl bytes. */
static int dg_run(struct dg_tlocal *tl, const struct odsm_dreq_view *v,
		  const uint8_t *req, void *ret, size_t *rl)
{
	struct odsm_deleg *d = tl->d;
	struct dg_tcount *n = &dg_trustee(d, tl->t)->n;
	const void *arg = req + v->arg_off;
	size_t len = v->arg_len, room = v->ret_max;
	struct dg_cell *cell;
	struct odsm_dwith w;
	odsm_deleg_fn fn;
	int st;

	*rl = 0;
	switch (v->kind) {
	case ODSM_DREQ_ENTRUST:
		return dg_entrust(tl, arg, ret, rl);
	case ODSM_DREQ_FREE:
		return dg_free(tl, v->obj);
	case ODSM_DREQ_LAUNCH:
		/* only as the last of its batch (see dg_serve) */
		DG_INC(n->bad_arg);
		return -EINVAL;
	}
	cell = dg_cell_get(tl, v->obj, true);
	if (!cell) {
		DG_INC(n->stale);
		return -ESTALE;
	}
	fn = dg_op_lookup(v->op);
	if (!fn) {
		DG_INC(n->unknown_op);
		return -EBADRQC;
	}
	if (v->kind == ODSM_DREQ_APPLY_WITH) {
		memcpy(&w, arg, sizeof(w));
		arg = w.len > SIZE_MAX ? NULL :
		      d->a.local(&d->a, w.gaddr, (size_t)w.len);
		if (!arg) {
			DG_INC(n->bad_arg);
			return -EFAULT;
		}
		len = (size_t)w.len;
	}
	st = fn(odsm_ptr(cell->g), arg, len, ret, &room);
	if (room > v->ret_max)
		return -EOVERFLOW;	/* the op wrote past its room */
	*rl = room;
	return st;
}

/*
 * A launch ending client c's batch: checked here, run by a worker, which
 * answers the batch.  0 when handed over; else the errno to answer with.
 */
static int dg_launch(struct dg_tlocal *tl, unsigned int c, uint32_t seq,
		     const struct odsm_dreq_view *v, const uint8_t *req,
		     struct odsm_drbatch *rb)
{
	struct odsm_deleg *d = tl->d;
	struct dg_tcount *n = &dg_trustee(d, tl->t)->n;
	struct dg_cell *cell = dg_cell_get(tl, v->obj, true);
	struct dg_job *j;

	if (!cell) {
		DG_INC(n->stale);
		return -ESTALE;
	}
	if (!dg_op_lookup(v->op)) {
		DG_INC(n->unknown_op);
		return -EBADRQC;
	}
	j = malloc(sizeof(*j) + v->arg_len);
	if (!j)
		return -ENOMEM;
	j->next = NULL;
	j->tl = tl;
	j->client = c;
	j->seq = seq;
	j->rb = *rb;
	j->fn = dg_op_lookup(v->op);
	j->handle.arena = d->h->gaddr;
	j->handle.cell = (uint32_t)v->obj;
	j->handle.gen = (uint32_t)(v->obj >> 32);
	j->ret = odsm_drbatch_ret(rb, v->ret_max);
	j->ret_max = v->ret_max;
	j->tag = v->tag;
	j->arg_len = v->arg_len;
	memcpy(j->arg, req + v->arg_off, v->arg_len);
	__atomic_store_n(&tl->deferred[c], 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&d->jlock);
	if (d->jtail)
		d->jtail->next = j;
	else
		d->jhead = j;
	d->jtail = j;
	pthread_cond_signal(&d->jcond);
	pthread_mutex_unlock(&d->jlock);
	DG_INC(n->launches);
	return 0;
}

/* Serve client c's pending batch, if any; true when there was one. */
static bool dg_serve(struct dg_tlocal *tl, unsigned int c)
{
	struct odsm_deleg *d = tl->d;
	unsigned int t = tl->t, slot = d->geo.slot_size;
	struct dg_tcount *n = &dg_trustee(d, t)->n;
	uint8_t *req = dg_req_slot(d, t, c), *resp = req + slot;
	struct odsm_drbatch rb;
	uint32_t seq, cnt, i;
	size_t rl;
	void *ret;
	int st;

	seq = __atomic_load_n(&((struct odsm_dslot_hdr *)req)->seq,
			      __ATOMIC_ACQUIRE);
	if (seq == ((struct odsm_dslot_hdr *)resp)->seq)
		return false;
	DG_INC(n->batches);
	odsm_drbatch_init(&rb, resp, slot);
	if (odsm_dslot_parse_req(req, slot, tl->v,
				 odsm_dslot_max_count(slot), &cnt)) {
		/* dropped whole, answered so that its sender does not hang */
		DG_INC(n->malformed);
		odsm_drbatch_seal(&rb, -EBADMSG);
		dg_answer(d, t, c, seq);
		return true;
	}
	DG_ADD(n->requests, cnt);
	DG_ADD(n->req_bytes, ((struct odsm_dslot_hdr *)req)->len);
	for (i = 0; i < cnt; i++) {
		const struct odsm_dreq_view *v = &tl->v[i];

		ret = odsm_drbatch_ret(&rb, v->ret_max);
		if (v->kind == ODSM_DREQ_LAUNCH && i == cnt - 1) {
			st = dg_launch(tl, c, seq, v, req, &rb);
			if (!st)
				return true;	/* the worker answers */
			rl = 0;
		} else {
			st = dg_run(tl, v, req, ret, &rl);
		}
		/* the parser checked that every reservation fits */
		odsm_drbatch_add(&rb, st, v->tag, (uint32_t)rl);
	}
	odsm_drbatch_seal(&rb, 0);
	DG_ADD(n->resp_bytes, rb.len + ODSM_DSLOT_HDR);
	dg_answer(d, t, c, seq);
	return true;
}

/* Whether any client has a batch waiting for trustee tl. */
static bool dg_any_pending(struct dg_tlocal *tl, unsigned int hi)
{
	struct odsm_deleg *d = tl->d;
	unsigned int c;

	for (c = 0; c < hi; c++) {
		struct odsm_dslot_hdr *q = (void *)dg_req_slot(d, tl->t, c);
		struct odsm_dslot_hdr *r = (void *)dg_resp_slot(d, tl->t, c);

		if (!__atomic_load_n(&tl->deferred[c], __ATOMIC_ACQUIRE) &&
		    __atomic_load_n(&q->seq, __ATOMIC_ACQUIRE) != r->seq)
			return true;
	}
	return false;
}

/*
 * Sleep until a client wakes us.  What wakes the trustee: a client that
 * publishes a batch and then sees sleeping == 1 bumps wake and calls
 * FUTEX_WAKE; odsm_deleg_stop() does the same.  No wakeup is lost: we
 * set sleeping, then look at every slot once more, then sleep only if
 * wake still holds the value read before; a client publishes, then
 * looks at sleeping (both with full fences between).
 */
static void dg_sleep(struct dg_tlocal *tl, unsigned int hi)
{
	struct dg_trustee *tr = dg_trustee(tl->d, tl->t);
	uint32_t w = __atomic_load_n(&tr->wake, __ATOMIC_ACQUIRE);

	__atomic_store_n(&tr->sleeping, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!dg_any_pending(tl, hi) &&
	    __atomic_load_n(&tl->d->h->state, __ATOMIC_ACQUIRE) == DG_RUNNING) {
		DG_INC(tr->n.sleeps);
		dg_futex_wait(&tr->wake, w, 0);
	}
	__atomic_store_n(&tr->sleeping, 0, __ATOMIC_RELAXED);
}

static void *dg_trustee_main(void *arg)
{
	struct dg_tlocal *tl = arg;
	struct odsm_deleg *d = tl->d;
	struct dg_trustee *tr = dg_trustee(d, tl->t);
	unsigned int hi, c, start = 0, idle = 0, i;
	cpu_set_t set;
	bool any;

	dg_in_trustee = true;
	dg_my_trustee = tl->t;
	if (tl->cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(tl->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	pthread_mutex_lock(&tr->alive);
	__atomic_fetch_add(&d->nthreads, 1, __ATOMIC_RELEASE);
	while (__atomic_load_n(&d->h->state, __ATOMIC_ACQUIRE) == DG_RUNNING) {
		hi = __atomic_load_n(&d->h->clients_hi, __ATOMIC_ACQUIRE);
		if (hi > d->geo.clients)
			hi = d->geo.clients;	/* scribbled on: ignore */
		any = false;
		/* round-robin: each pass starts one client further on */
		for (i = 0; i < hi; i++) {
			c = (start + i) % hi;
			if (__atomic_load_n(&tl->deferred[c], __ATOMIC_ACQUIRE))
				continue;
			any |= dg_serve(tl, c);
		}
		start = hi ? (start + 1) % hi : 0;
		if (any) {
			idle = 0;
			continue;
		}
		if (++idle < d->spin) {
			/* on an oversubscribed CPU the clients need it */
			if (idle % DG_YIELD_EVERY == 0)
				sched_yield();
			else
				dg_pause();
			continue;
		}
		dg_sleep(tl, hi);
		idle = 0;
	}
	pthread_mutex_unlock(&tr->alive);
	return NULL;
}

static void *dg_worker_main(void *arg)
{
	struct odsm_deleg *d = arg;
	struct dg_job *j;
	size_t room;
	int st;

	for (;;) {
		pthread_mutex_lock(&d->jlock);
		while (!d->jhead && !d->jstop)
			pthread_cond_wait(&d->jcond, &d->jlock);
		j = d->jhead;
		if (j) {
			d->jhead = j->next;
			if (!d->jhead)
				d->jtail = NULL;
		}
		pthread_mutex_unlock(&d->jlock);
		if (!j)
			break;		/* stopping, queue empty */
		room = j->ret_max;
		st = j->fn(&j->handle, j->arg, j->arg_len, j->ret, &room);
		if (room > j->ret_max) {
			st = -EOVERFLOW;
			room = 0;
		}
		odsm_drbatch_add(&j->rb, st, j->tag, (uint32_t)room);
		odsm_drbatch_seal(&j->rb, 0);
		dg_answer(d, j->tl->t, j->client, j->seq);
		__atomic_store_n(&j->tl->deferred[j->client], 0,
				 __ATOMIC_RELEASE);
		free(j);
	}
	odsm_deleg_thread_done(d);
	return NULL;
}

/*
 * The generation every cell starts at in a new runtime: random, never 0
 * (a zeroed handle never matches).  A handle kept from an earlier runtime
 * in the same arena (a restarted process, an arena reused at the same
 * address) names a cell of this one with its old generation: with every
 * runtime starting at 1 it named the object entrusted there now.
 */
static uint32_t dg_first_gen(void)
{
	uint32_t g = 0;

	if (getrandom(&g, sizeof(g), GRND_NONBLOCK) != sizeof(g)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		g = (uint32_t)(ts.tv_nsec ^ ts.tv_sec * 2654435761u) ^
		    (uint32_t)getpid() * 40503u;
	}
	return g ? g : 1;
}

static void dg_tlocal_free(struct odsm_deleg *d)
{
	unsigned int t;

	for (t = 0; d->tl && t < d->geo.trustees; t++) {
		free(d->tl[t].fstack);
		free(d->tl[t].live);
		free(d->tl[t].deferred);
		free(d->tl[t].v);
	}
	free(d->tl);
	free(d->threads);
	free(d->workers);
}

int dg_trustees_start(struct odsm_deleg *d, const struct odsm_deleg_config *c)
{
	struct dg_hdr *h = d->h;
	unsigned int t, i, nw = c->workers ? c->workers : 1;
	uint32_t gen = dg_first_gen();
	int ret = -ENOMEM;

	d->spin = c->spin ? c->spin : DG_SPIN_DEFAULT;
	d->tl = calloc(d->geo.trustees, sizeof(*d->tl));
	d->threads = calloc(d->geo.trustees, sizeof(*d->threads));
	d->workers = calloc(nw, sizeof(*d->workers));
	if (!d->tl || !d->threads || !d->workers)
		goto err;
	for (t = 0; t < d->geo.trustees; t++) {
		struct dg_tlocal *tl = &d->tl[t];

		tl->d = d;
		tl->t = t;
		tl->cpu = c->cpus ? c->cpus[t] : -1;
		tl->fstack = calloc(d->geo.cells, sizeof(*tl->fstack));
		tl->live = calloc(d->geo.cells, 1);
		tl->deferred = calloc(d->geo.clients, 1);
		tl->v = calloc(odsm_dslot_max_count(d->geo.slot_size),
			       sizeof(*tl->v));
		if (!tl->fstack || !tl->live || !tl->deferred || !tl->v)
			goto err;
		for (i = 0; i < d->geo.cells; i++) {
			uint32_t idx = t * d->geo.cells + (d->geo.cells - 1 - i);

			dg_cell(d, idx)->word = (uint64_t)gen << 32;
			tl->fstack[tl->nfree++] = idx;
		}
	}
	pthread_mutex_init(&d->jlock, NULL);
	pthread_cond_init(&d->jcond, NULL);
	for (t = 0; t < d->geo.trustees; t++) {
		ret = -pthread_create(&d->threads[t], NULL, dg_trustee_main,
				      &d->tl[t]);
		if (ret)
			goto err_stop;
	}
	for (i = 0; i < nw; i++) {
		ret = -pthread_create(&d->workers[i], NULL, dg_worker_main, d);
		if (ret)
			goto err_stop;
		d->nworkers++;
	}
	/* every trustee holds its liveness mutex before anyone may look */
	while (__atomic_load_n(&d->nthreads, __ATOMIC_ACQUIRE) < d->geo.trustees)
		sched_yield();
	return 0;
err_stop:
	/* the threads made so far see the state and end */
	__atomic_store_n(&h->state, DG_STOPPED, __ATOMIC_RELEASE);
	while (t--)
		pthread_join(d->threads[t], NULL);
	/* ...and the workers see jstop */
	d->jstop = true;
	pthread_cond_broadcast(&d->jcond);
	while (d->nworkers)
		pthread_join(d->workers[--d->nworkers], NULL);
err:
	dg_tlocal_free(d);
	return ret;
}

void dg_trustees_stop(struct odsm_deleg *d)
{
	unsigned int t;

	__atomic_store_n(&d->h->state, DG_STOPPED, __ATOMIC_SEQ_CST);
	for (t = 0; t < d->geo.trustees; t++) {
		struct dg_trustee *tr = dg_trustee(d, t);

		__atomic_fetch_add(&tr->wake, 1, __ATOMIC_SEQ_CST);
		dg_futex_wake(&tr->wake, INT_MAX);
	}
	for (t = 0; t < d->geo.trustees; t++)
		pthread_join(d->threads[t], NULL);
	pthread_mutex_lock(&d->jlock);
	d->jstop = true;
	pthread_cond_broadcast(&d->jcond);
	pthread_mutex_unlock(&d->jlock);
	while (d->nworkers)
		pthread_join(d->workers[--d->nworkers], NULL);
	dg_tlocal_free(d);
}
