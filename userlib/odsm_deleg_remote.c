// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm delegation: runtimes of other nodes, as a client sees them.
 *
 * A handle names its runtime by global address; when that address is in
 * another node's partition there are no slots to write here.  The client
 * attaches a *remote* runtime instead: a copy of its header (geometry,
 * read once with odsm_read(); it never changes while the runtime runs)
 * and nothing else.  Its batches are built exactly as for a local one and
 * carried by the module (ODSM_IOC_DELEG_CALL, one system call per batch):
 *
 *   - a thread that waits for the answer next (apply, launch, drain)
 *     makes the call itself: no other thread on the way;
 *   - a batch that the thread does not wait for (apply_then, sent by
 *     size, flush, poll) goes to a courier thread, which makes the call
 *     while the client goes on building the next batch, and sets the
 *     job's done word (a futex) when the answer is in.  The client
 *     collects it later, in order, as it does a local slot's answer.
 *
 * Couriers are per process, DG_COURIERS of them, started on first use;
 * each call blocks one for at most a round trip (or the cluster's timeout
 * when the runtime's node is down), so DG_COURIERS pairs' batches are in
 * flight at once and more wait in the queue.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include "odsm.h"
#include "odsm_deleg_int.h"

#define DG_COURIERS	4

static pthread_mutex_t dg_cq_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dg_cq_cond = PTHREAD_COND_INITIALIZER;
static struct dg_rjob *dg_cq_head, *dg_cq_tail;
static unsigned int dg_ncouriers;

uint64_t dg_cell_gaddr(const struct odsm_deleg *d, uint32_t idx)
{
	return d->h->gaddr + d->h->off_cells +
	       (uint64_t)idx * sizeof(struct dg_cell);
}

/*
 * An argument of another node, for a trustee of this one (which reads it
 * in place and must not wait for the network): a copy of its len bytes in
 * a fresh object of this partition, *cg, which the caller frees.  *cg is 0
 * when gaddr is here already or not in the heap at all (the trustee's own
 * check refuses that).
 */
int dg_copy_here(uint64_t gaddr, uint64_t len, uint64_t *cg)
{
	int ret;

	*cg = 0;
	if (!len || !odsm_in_heap(gaddr) || odsm_is_local(gaddr))
		return 0;
	if (len > SIZE_MAX)
		return -E2BIG;
	ret = odsm_alloc((size_t)len, 8, 0, cg);
	if (ret)
		return ret;
	ret = odsm_read(gaddr, odsm_ptr(*cg), (size_t)len);
	if (ret) {
		odsm_free(*cg);
		*cg = 0;
	}
	return ret;
}

/* Make the call job describes, from this thread; its done word last. */
void dg_rcall(struct dg_rjob *j)
{
	struct odsm_deleg_call a = {
		.endpoint = j->endpoint,
		.req = (uintptr_t)j->req,
		.resp = (uintptr_t)j->resp,
		.req_len = j->req_len,
		.resp_cap = j->slot_size,
		.slot_size = j->slot_size,
	};

	if (ioctl(odsm_rt.fd, ODSM_IOC_DELEG_CALL, &a)) {
		j->status = -errno;
		j->resp_len = 0;
	} else {
		j->status = 0;
		j->resp_len = a.resp_len;
		/* the response parser reads the slot, not resp_len bytes */
		memset(j->resp + a.resp_len, 0, j->slot_size - a.resp_len);
	}
	__atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
	dg_futex_wake(&j->done, INT_MAX);
}

static void *dg_courier_main(void *arg)
{
	struct dg_rjob *j;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&dg_cq_lock);
		while (!dg_cq_head)
			pthread_cond_wait(&dg_cq_cond, &dg_cq_lock);
		j = dg_cq_head;
		dg_cq_head = j->next;
		if (!dg_cq_head)
			dg_cq_tail = NULL;
		pthread_mutex_unlock(&dg_cq_lock);
		dg_rcall(j);
	}
	return NULL;
}

/*
 * A child of fork() has none of the couriers (only the forking thread
 * goes on): it starts its own on first use.  The queue held only jobs of
 * the parent's threads, which the child does not have either.
 */
static void dg_courier_atfork_child(void)
{
	pthread_mutex_init(&dg_cq_lock, NULL);
	pthread_cond_init(&dg_cq_cond, NULL);
	dg_cq_head = dg_cq_tail = NULL;
	dg_ncouriers = 0;
}

static void dg_courier_once(void)
{
	pthread_atfork(NULL, NULL, dg_courier_atfork_child);
}

static pthread_once_t dg_courier_init = PTHREAD_ONCE_INIT;

/*
 * Queue job for a courier (starting them on first use).  Without one
 * (none could be started) the call is made here: slower, never lost.
 */
void dg_rsend(struct dg_rjob *j)
{
	pthread_attr_t at;
	pthread_t tid;

	j->next = NULL;
	pthread_once(&dg_courier_init, dg_courier_once);
	pthread_mutex_lock(&dg_cq_lock);
	if (!dg_ncouriers) {
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		while (dg_ncouriers < DG_COURIERS &&
		       !pthread_create(&tid, &at, dg_courier_main, NULL))
			dg_ncouriers++;
		pthread_attr_destroy(&at);
	}
	if (!dg_ncouriers) {
		pthread_mutex_unlock(&dg_cq_lock);
		dg_rcall(j);
		return;
	}
	if (dg_cq_tail)
		dg_cq_tail->next = j;
	else
		dg_cq_head = j;
	dg_cq_tail = j;
	pthread_cond_signal(&dg_cq_cond);
	pthread_mutex_unlock(&dg_cq_lock);
}

/*
 * Wait for job's answer: 0 (resp holds it) or the call's -errno.  The
 * module bounds the call (the cluster's timeout), so this wait is too.
 */
int dg_rwait(struct dg_rjob *j)
{
	unsigned int n = 0;

	while (!__atomic_load_n(&j->done, __ATOMIC_ACQUIRE)) {
		if (++n < 256) {
			dg_pause();
			continue;
		}
		dg_futex_wait(&j->done, 0, 0);
	}
	return j->status;
}

/*
 * Attach the runtime at arena, on another node: its header is read and
 * checked like a local attach's.  -EINVAL when arena is no runtime's,
 * -EBUSY when the table is full, or odsm_read()'s error.
 */
int dg_remote_attach(uint64_t arena, struct odsm_deleg **out)
{
	struct odsm_deleg_config c = { 0 };
	struct odsm_deleg *d;
	struct dg_hdr *h, want;
	int ret;

	if (!arena || !odsm_in_heap(arena) || odsm_is_local(arena) ||
	    arena % DG_LINE)
		return -EINVAL;
	h = aligned_alloc(DG_LINE, sizeof(*h));
	d = calloc(1, sizeof(*d));
	ret = -ENOMEM;
	if (!h || !d)
		goto err;
	ret = odsm_read(arena, h, sizeof(*h));
	if (ret)
		goto err;
	c.trustees = h->trustees;
	c.clients = h->clients - DG_LANES;
	c.slot_size = h->slot_size;
	c.cells = h->cells;
	ret = -EINVAL;
	if (h->magic != DG_MAGIC || h->version != DG_VERSION ||
	    h->lanes != DG_LANES || h->clients < DG_LANES ||
	    h->gaddr != odsm_addr_of(arena) || dg_layout(&c, &want) ||
	    want.size != h->size || want.off_cells != h->off_cells)
		goto err;
	d->h = h;
	dg_geo_set(d, &want);
	d->remote = true;
	d->gw_fd = -1;
	ret = dg_attach_remote(d, out);
	if (ret)
		goto err;
	return 0;
err:
	free(h);
	free(d);
	return ret;
}

void dg_remote_free(struct odsm_deleg *d)
{
	free(d->h);
	free(d);
}

int odsm_deleg_at(uint64_t addr, struct odsm_deleg **out)
{
	struct odsm_deleg_arena a;
	struct odsm_deleg *d = dg_find(odsm_addr_of(addr));

	if (d) {
		*out = d;
		return 0;
	}
	if (!odsm_is_local(addr))
		return dg_remote_attach(odsm_addr_of(addr), out);
	if (odsm_deleg_arena_at(&a, addr))
		return -EINVAL;
	return odsm_deleg_attach(&a, out);
}
