// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm delegation: the arena (where the slots live, its layout and
 * validation), starting and attaching a runtime, the process's table of
 * runtimes, trustee liveness, and the counters.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "odsm.h"
#include "odsm_deleg_int.h"

#define DG_SLOT_DEFAULT		1024
#define DG_CELLS_DEFAULT	1024

static struct odsm_deleg *dg_att[DG_MAX_ATTACH];
static pthread_mutex_t dg_att_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t dg_next_id = 1;

static uint64_t dg_round(uint64_t n)
{
	return (n + DG_LINE - 1) & ~(uint64_t)(DG_LINE - 1);
}

/* The layout of config c into h (offsets and size); -EINVAL if invalid. */
int dg_layout(const struct odsm_deleg_config *c, struct dg_hdr *h)
{
	uint64_t off;

	memset(h, 0, sizeof(*h));
	h->trustees = c->trustees;
	h->lanes = DG_LANES;
	h->clients = c->clients + DG_LANES;
	h->slot_size = c->slot_size ? c->slot_size : DG_SLOT_DEFAULT;
	h->cells = c->cells ? c->cells : DG_CELLS_DEFAULT;
	if (!h->trustees || h->trustees > DG_MAX_TRUSTEES || !c->clients ||
	    c->clients > DG_MAX_CLIENTS || !odsm_dslot_size_ok(h->slot_size) ||
	    h->cells > (1U << 20) ||
	    (uint64_t)h->trustees * h->cells >= UINT32_MAX)
		return -EINVAL;
	off = dg_round(sizeof(*h));
	h->off_trustees = off;
	off += dg_round(h->trustees * sizeof(struct dg_trustee));
	h->off_clients = off;
	off += dg_round((uint64_t)h->clients * sizeof(struct dg_client));
	h->off_cells = off;
	off += dg_round((uint64_t)h->trustees * h->cells *
			sizeof(struct dg_cell));
	h->off_slots = off;
	off += (uint64_t)h->trustees * h->clients * 2 * h->slot_size;
	h->size = off;
	return 0;
}

size_t odsm_deleg_arena_size(const struct odsm_deleg_config *c)
{
	struct dg_hdr h;

	return dg_layout(c, &h) ? 0 : h.size;
}

/* A memory arena's objects and arguments: anything inside it. */
static void *dg_mem_local(const struct odsm_deleg_arena *ar, uint64_t g,
			  size_t len)
{
	uint64_t a = odsm_addr_of(g), lo = (uintptr_t)ar->base;

	if (a < lo || a - lo > ar->size || len > ar->size - (a - lo))
		return NULL;
	return (void *)(uintptr_t)a;
}

void odsm_deleg_arena_mem(struct odsm_deleg_arena *a, void *base,
			  size_t size)
{
	memset(a, 0, sizeof(*a));
	a->base = base;
	a->size = size;
	a->local = dg_mem_local;
}

/* A heap arena's: this node's partition (odsm_is_local()). */
static void *dg_heap_local(const struct odsm_deleg_arena *ar, uint64_t g,
			   size_t len)
{
	uint64_t a = odsm_addr_of(g);

	if (!odsm_is_local(g) || len > odsm_rt.local_hi - a)
		return NULL;
	return (void *)(uintptr_t)a;
}

static int dg_heap_free(const struct odsm_deleg_arena *ar, uint64_t g)
{
	return odsm_free(g);
}

int odsm_deleg_arena_heap(struct odsm_deleg_arena *a, size_t size)
{
	uint64_t cg;
	int ret;

	ret = odsm_alloc(size, 4096, ODSM_ALLOC_ZERO, &cg);
	if (ret)
		return ret;
	memset(a, 0, sizeof(*a));
	a->base = odsm_ptr(cg);
	a->size = size;
	a->cg = cg;
	a->obj_free = dg_heap_free;
	a->local = dg_heap_local;
	return 0;
}

int odsm_deleg_arena_at(struct odsm_deleg_arena *a, uint64_t gaddr)
{
	struct dg_hdr *h;

	if (!dg_heap_local(a, gaddr, sizeof(*h)) || gaddr % DG_LINE)
		return -EINVAL;
	h = odsm_ptr(gaddr);
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != DG_MAGIC ||
	    h->gaddr != odsm_addr_of(gaddr) || !dg_heap_local(a, gaddr, h->size))
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->base = h;
	a->size = h->size;
	a->obj_free = dg_heap_free;
	a->local = dg_heap_local;
	return 0;
}

int odsm_deleg_arena_heap_free(struct odsm_deleg_arena *a)
{
	int ret = a->cg ? odsm_free(a->cg) : -EINVAL;

	if (!ret)
		a->cg = 0;
	return ret;
}

/* Enter d in the process's table; -EBUSY when the table is full. */
static int dg_attach_slot(struct odsm_deleg *d)
{
	int i;

	dg_fork_watch();
	d->fgen = dg_fork_gen;
	pthread_mutex_lock(&dg_att_lock);
	for (i = 0; i < DG_MAX_ATTACH; i++) {
		if (!dg_att[i]) {
			d->att = i;
			d->did = dg_next_id++;
			__atomic_store_n(&dg_att[i], d, __ATOMIC_RELEASE);
			break;
		}
	}
	pthread_mutex_unlock(&dg_att_lock);
	return i == DG_MAX_ATTACH ? -EBUSY : 0;
}

/*
 * Enter remote runtime d, unless another thread entered one for the same
 * address first: then *out is that one and d is freed.
 */
int dg_attach_remote(struct odsm_deleg *d, struct odsm_deleg **out)
{
	struct odsm_deleg *e;
	int i, free_at = -1;

	dg_fork_watch();
	pthread_mutex_lock(&dg_att_lock);
	for (i = DG_MAX_ATTACH - 1; i >= 0; i--) {
		e = dg_att[i];
		if (!e)
			free_at = i;
		else if (e->h->gaddr == d->h->gaddr)
			break;
	}
	if (i >= 0) {
		pthread_mutex_unlock(&dg_att_lock);
		dg_remote_free(d);
		*out = e;
		return 0;
	}
	if (free_at < 0) {
		pthread_mutex_unlock(&dg_att_lock);
		return -EBUSY;
	}
	d->att = free_at;
	d->did = dg_next_id++;
	d->fgen = dg_fork_gen;
	__atomic_store_n(&dg_att[free_at], d, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&dg_att_lock);
	*out = d;
	return 0;
}

struct odsm_deleg *dg_find(uint64_t arena)
{
	struct odsm_deleg *d;
	int i;

	for (i = 0; i < DG_MAX_ATTACH; i++) {
		d = __atomic_load_n(&dg_att[i], __ATOMIC_ACQUIRE);
		if (d && d->h->gaddr == arena)
			return d;
	}
	return NULL;
}

void dg_detach(struct odsm_deleg *d)
{
	pthread_mutex_lock(&dg_att_lock);
	__atomic_store_n(&dg_att[d->att], NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&dg_att_lock);
}

bool dg_lock_attached(struct odsm_deleg *d, uint64_t did)
{
	int i;

	pthread_mutex_lock(&dg_att_lock);
	for (i = 0; i < DG_MAX_ATTACH; i++)
		if (dg_att[i] == d && d->did == did)
			return true;
	pthread_mutex_unlock(&dg_att_lock);
	return false;
}

void dg_unlock_attached(void)
{
	pthread_mutex_unlock(&dg_att_lock);
}

static struct odsm_deleg *dg_new(const struct odsm_deleg_arena *a)
{
	struct odsm_deleg *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->a = *a;
	d->base = a->base;
	d->h = a->base;
	return d;
}

int odsm_deleg_start(const struct odsm_deleg_arena *a,
		     const struct odsm_deleg_config *c,
		     struct odsm_deleg **out)
{
	pthread_mutexattr_t ma;
	struct odsm_deleg *d;
	struct dg_hdr h;
	unsigned int t;
	int ret;

	ret = dg_layout(c, &h);
	if (ret)
		return ret;
	if (h.size > a->size || (uintptr_t)a->base % DG_LINE)
		return -ENOSPC;
	d = dg_new(a);
	if (!d)
		return -ENOMEM;
	dg_geo_set(d, &h);
	memset(a->base, 0, h.size);
	h.gaddr = a->cg ? odsm_addr_of(a->cg) : (uintptr_t)a->base;
	h.owner_pid = getpid();
	h.state = DG_RUNNING;
	h.version = DG_VERSION;
	memcpy(d->h, &h, sizeof(h));
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	for (t = 0; t < h.trustees; t++)
		pthread_mutex_init(&dg_trustee(d, t)->alive, &ma);
	pthread_mutexattr_destroy(&ma);
	d->host = true;
	ret = dg_attach_slot(d);
	if (ret)
		goto err_free;
	d->gw_fd = -1;
	ret = dg_trustees_start(d, c);
	if (ret)
		goto err_detach;
	/* the magic last: an attacher sees a runtime that runs */
	__atomic_store_n(&d->h->magic, DG_MAGIC, __ATOMIC_RELEASE);
	/* a heap runtime serves other nodes too */
	if (a->cg)
		dg_gateway_start(d);
	*out = d;
	return 0;
err_detach:
	dg_detach(d);
err_free:
	free(d);
	return ret;
}

int odsm_deleg_attach(const struct odsm_deleg_arena *a,
		      struct odsm_deleg **out)
{
	struct dg_hdr *h = a->base, want;
	struct odsm_deleg_config c = { 0 };
	struct odsm_deleg *d;
	int ret;

	if (a->size < sizeof(*h) ||
	    __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != DG_MAGIC ||
	    h->version != DG_VERSION)
		return -EINVAL;
	/* the geometry must be what the offsets say, inside the arena */
	if (h->lanes != DG_LANES || h->clients < DG_LANES)
		return -EINVAL;
	c.trustees = h->trustees;
	c.clients = h->clients - DG_LANES;
	c.slot_size = h->slot_size;
	c.cells = h->cells;
	if (dg_layout(&c, &want) || want.size > a->size ||
	    want.size != h->size || want.off_slots != h->off_slots ||
	    want.off_cells != h->off_cells ||
	    want.off_clients != h->off_clients ||
	    want.off_trustees != h->off_trustees)
		return -EINVAL;
	d = dg_new(a);
	if (!d)
		return -ENOMEM;
	dg_geo_set(d, &want);	/* what was checked, not read again */
	ret = dg_attach_slot(d);
	if (ret) {
		free(d);
		return ret;
	}
	*out = d;
	return 0;
}

void odsm_deleg_stop(struct odsm_deleg *d)
{
	if (!d)
		return;
	/*
	 * In a child of fork(): the slots, trustees and gateway are the
	 * parent's (its memory here is a copy, the arena is shared): the
	 * child only lets go of its copy, and the parent's runtime runs on.
	 */
	if (d->fgen != dg_fork_gen) {
		dg_detach(d);
		if (d->remote)
			dg_remote_free(d);
		else
			free(d);
		return;
	}
	dg_thread_release_all(d);
	if (d->host) {
		dg_trustees_stop(d);
		/* after the state left DG_RUNNING: they see it and end */
		dg_gateway_stop(d);
	}
	dg_detach(d);
	if (d->remote)
		dg_remote_free(d);
	else
		free(d);
}

uint64_t odsm_deleg_addr(const struct odsm_deleg *d)
{
	return d->h->gaddr;
}

/*
 * 0 while trustee t runs; -EOWNERDEAD when its thread died (the process
 * was killed); -ESHUTDOWN when the runtime was stopped.  No system call
 * while the trustee lives: a trylock of a held robust mutex fails in user
 * space.
 */
int dg_trustee_alive(struct odsm_deleg *d, unsigned int t)
{
	struct dg_trustee *tr = dg_trustee(d, t);
	uint32_t st = __atomic_load_n(&d->h->state, __ATOMIC_ACQUIRE);
	int ret;

	if (st == DG_STOPPED)
		return -ESHUTDOWN;
	if (st == DG_DEAD)
		return -EOWNERDEAD;
	ret = pthread_mutex_trylock(&tr->alive);
	switch (ret) {
	case EBUSY:
		return 0;
	case EOWNERDEAD:
	case ENOTRECOVERABLE:
		/* tell every other client with one load; unlocking without
		 * pthread_mutex_consistent() leaves the mutex unrecoverable,
		 * so no later trylock can take a dead trustee for a live one
		 */
		__atomic_store_n(&d->h->state, DG_DEAD, __ATOMIC_RELEASE);
		if (ret == EOWNERDEAD)
			pthread_mutex_unlock(&tr->alive);
		return -EOWNERDEAD;
	case 0:
		/* nobody holds it: the trustee thread ended */
		pthread_mutex_unlock(&tr->alive);
		return -ESHUTDOWN;
	default:
		return -ret;
	}
}

void odsm_deleg_stats(const struct odsm_deleg *d, struct odsm_deleg_stats *s)
{
	unsigned int i;

	memset(s, 0, sizeof(*s));
	/* another node's: its counts are there (and the module's here) */
	if (d->remote)
		return;
#define RD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
	for (i = 0; i < d->geo.trustees; i++) {
		const struct dg_tcount *n = &dg_trustee(d, i)->n;

		s->requests += RD(n->requests);
		s->batches += RD(n->batches);
		s->req_bytes += RD(n->req_bytes);
		s->resp_bytes += RD(n->resp_bytes);
		s->sleeps += RD(n->sleeps);
		s->launches += RD(n->launches);
		s->unknown_op += RD(n->unknown_op);
		s->stale += RD(n->stale);
		s->malformed += RD(n->malformed);
		s->bad_arg += RD(n->bad_arg);
		s->no_cell += RD(n->no_cell);
		s->deadlk += RD(n->deadlk);
	}
	for (i = 0; i < d->geo.clients; i++) {
		const struct dg_ccount *n = &dg_client(d, i)->n;

		s->sent += RD(n->sent);
		s->too_long += RD(n->too_long);
		s->slot_full += RD(n->slot_full);
		s->deadlk += RD(n->deadlk);
		s->dead += RD(n->dead);
	}
#undef RD
}
