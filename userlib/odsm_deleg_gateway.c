// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm delegation: the gateway, where batches of other nodes' clients
 * come in.  A runtime in the heap binds its address (odsm_deleg_addr())
 * to a file of /dev/odsm of its own (ODSM_IOC_DELEG_BIND), and
 * DG_GATEWAYS threads loop on ODSM_IOC_DELEG_SERVE: each answers the
 * batch it took last and takes the next, one system call per batch.  A
 * batch is relayed to its trustee through the gateway thread's own
 * client slot (dg_relay), so the trustee serves remote batches beside
 * its local slots, round-robin, with the same validation, and its loop
 * never waits for the network: the gateway does.  While no batch comes,
 * a gateway sleeps in the kernel (DG_GW_WAIT_MS at a time, to see a
 * stop): an idle runtime burns no CPU.
 *
 * DG_GATEWAYS threads: one batch waiting for a slow trustee (or a long
 * launch) does not hold up the batches for the others.
 *
 * A gateway may block, so it does what the trustee's loop must not: it
 * moves the object of an entrust here first (the client's request of
 * DG_OP_NAME_MOVE, answered by the gateway itself), and it copies an
 * apply_with argument of another node into this partition before the
 * batch goes on, freeing the copy once the batch is answered.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "odsm.h"
#include "odsm_deleg_int.h"

#define DG_GW_WAIT_MS	200	/* how late a gateway sees a stop */
#define DG_GW_NOMEM_US	1000	/* a pause before an answer is given again */

static bool dg_gw_running(const struct odsm_deleg *d)
{
	return __atomic_load_n(&d->h->state, __ATOMIC_ACQUIRE) == DG_RUNNING;
}

/*
 * A batch of one DG_OP_NAME_MOVE request: move the box's object into this
 * partition and answer its new address (v: the parsed request).  The
 * kernel's mutable borrow does the move and its checks (a stale or freed
 * address is its errno); an object here already stays.
 */
static void dg_gw_move(struct odsm_deleg *d, const uint8_t *req,
		       const struct odsm_dreq_view *v, uint8_t *resp,
		       uint32_t *len)
{
	struct odsm_drbatch rb;
	struct odsm_box b;
	uint64_t ext = 0;
	void *ret;
	int st = 0;

	odsm_drbatch_init(&rb, resp, d->geo.slot_size);
	ret = odsm_drbatch_ret(&rb, v->ret_max);
	if (v->arg_len != sizeof(b) || v->ret_max < sizeof(b.g))
		st = -EINVAL;
	if (!st) {
		memcpy(&b, req + v->arg_off, sizeof(b));
		if (!odsm_in_heap(b.g))
			st = -EINVAL;
		else if (!odsm_is_local(b.g))
			st = odsm__move_here(&b.g, &ext);
	}
	if (!st)
		memcpy(ret, &b.g, sizeof(b.g));
	odsm_drbatch_add(&rb, st, v->tag, st ? 0 : sizeof(b.g));
	odsm_drbatch_seal(&rb, 0);
	*len = ODSM_DSLOT_HDR + rb.len;
}

/*
 * Would trustee t run request v (an apply_with)?  Its cell t's (dg_relay()
 * takes the batch to the trustee of its first request's cell), live, of
 * its generation, with a reference; its op registered.  Asked before the
 * argument is copied: a request the trustee refuses anyway must not make
 * this node allocate and read for it.  (The cell may still end before
 * the trustee runs it: that copy is freed with the others.)
 */
static bool dg_gw_would_run(const struct odsm_deleg *d, uint32_t t,
			    const struct odsm_dreq_view *v)
{
	uint32_t idx = (uint32_t)v->obj;
	uint64_t w;

	if ((uint64_t)idx >= (uint64_t)d->geo.trustees * d->geo.cells ||
	    idx / d->geo.cells != t)
		return false;
	w = __atomic_load_n(&dg_cell(d, idx)->word, __ATOMIC_ACQUIRE);
	return (uint32_t)(w >> 32) == (uint32_t)(v->obj >> 32) &&
	       (uint32_t)w && dg_op_lookup(v->op);
}

/*
 * Copy every apply_with argument of the batch that is not in this
 * partition into a fresh object here and point its request at the copy;
 * copies[] gets them (to free once answered), the count is returned.  A
 * copy that cannot be made leaves its request as it was: the trustee
 * answers it -EFAULT.  So does one the trustee would refuse anyway
 * (dg_gw_would_run()), and one past DG_GW_COPY_MAX bytes of copies in
 * the batch: what another node's batch makes this node allocate is
 * bounded.
 */
unsigned int dg_gw_bring_args(const struct odsm_deleg *d, uint8_t *req,
			      const struct odsm_dreq_view *v, uint32_t n,
			      uint64_t *copies)
{
	uint64_t budget = DG_GW_COPY_MAX;
	unsigned int i, nc = 0;
	struct odsm_dwith w;
	uint32_t t;

	if (!n)
		return 0;
	t = (uint32_t)v[0].obj / d->geo.cells;	/* as dg_relay() picks */
	for (i = 0; i < n; i++) {
		if (v[i].kind != ODSM_DREQ_APPLY_WITH)
			continue;
		memcpy(&w, req + v[i].arg_off, sizeof(w));
		if (w.len > budget || !dg_gw_would_run(d, t, &v[i]))
			continue;
		/* no copy (0) for an argument here already: read in place */
		if (dg_copy_here(w.gaddr, w.len, &copies[nc]) || !copies[nc])
			continue;
		budget -= w.len;
		w.gaddr = copies[nc++];
		memcpy(req + v[i].arg_off, &w, sizeof(w));
	}
	return nc;
}

/* Take a batch that came in through the gateway to its end: the answer. */
static int dg_gw_batch(struct odsm_deleg *d, uint8_t *req, uint32_t req_len,
		       uint8_t *resp, uint32_t *len,
		       struct odsm_dreq_view *v, uint64_t *copies)
{
	uint32_t slot = d->geo.slot_size, n = 0;
	unsigned int nc = 0;
	int ret;

	/* a batch the parser refuses goes on as it is: the trustee says so */
	if (!odsm_dslot_parse_req(req, slot, v, odsm_dslot_max_count(slot),
				  &n)) {
		if (n == 1 && v[0].kind == ODSM_DREQ_APPLY &&
		    v[0].op == dg_op_move_id()) {
			dg_gw_move(d, req, v, resp, len);
			return 0;
		}
		nc = dg_gw_bring_args(d, req, v, n, copies);
	}
	ret = dg_relay(d, req, req_len, resp, len);
	while (nc)
		odsm_free(copies[--nc]);
	return ret;
}

static void *dg_gw_main(void *arg)
{
	struct odsm_deleg *d = arg;
	uint32_t slot = d->geo.slot_size, len;
	uint8_t *req = aligned_alloc(DG_LINE, slot);
	uint8_t *resp = aligned_alloc(DG_LINE, slot);
	uint32_t max = odsm_dslot_max_count(slot);
	struct odsm_dreq_view *v = calloc(max, sizeof(*v));
	uint64_t *copies = calloc(max, sizeof(*copies));
	struct odsm_deleg_serve s = { .timeout_ms = DG_GW_WAIT_MS };
	struct odsm_dslot_hdr h = { 0 };
	int ret;

	if (!req || !resp || !v || !copies)
		goto out;
	s.req = (uintptr_t)req;
	s.resp = (uintptr_t)resp;
	while (dg_gw_running(d)) {
		ret = ioctl(d->gw_fd, ODSM_IOC_DELEG_SERVE, &s);
		/*
		 * Short of memory, the module may not have taken the answer:
		 * the batch ran, so it is given again rather than left to
		 * time out (its client would see the batch fail).  A ticket
		 * already answered is -ENOENT there, which SERVE ignores.
		 */
		if (ret && errno == ENOMEM && s.done) {
			usleep(DG_GW_NOMEM_US);
			continue;
		}
		/* the answer given (or refused, its client told): done */
		s.done = 0;
		if (ret && errno == EBADF)
			break;		/* the endpoint is gone */
		if (ret)
			continue;	/* none in time, a signal, bad answer */
		ret = dg_gw_batch(d, req, s.req_len, resp, &len, v, copies);
		if (ret) {
			/* the whole batch fails: a header with its status */
			h.status = ret;
			memcpy(resp, &h, sizeof(h));
			len = sizeof(h);
		}
		s.done = s.ticket;
		s.resp_len = len;
	}
	/* the last answer; a batch taken with it fails at the close */
	if (s.done) {
		s.timeout_ms = 1;
		ioctl(d->gw_fd, ODSM_IOC_DELEG_SERVE, &s);
	}
out:
	odsm_deleg_thread_done(d);
	free(copies);
	free(v);
	free(req);
	free(resp);
	return NULL;
}

/* The global address of p, a byte of d's arena. */
static uint64_t dg_gaddr(const struct odsm_deleg *d, const void *p)
{
	return d->h->gaddr + (uint64_t)((const uint8_t *)p - d->base);
}

/*
 * Bind d's address to d->gw_fd, with its lanes (DG_LANES client slots per
 * trustee that the module fills itself, answered like any slot) when the
 * module has them: 0 or -errno.
 */
static int dg_gateway_bind(struct odsm_deleg *d)
{
	struct odsm_deleg_lanes l = {
		.slots = dg_gaddr(d, dg_req_slot(d, 0, 0)),
		.trustee_stride = (uint64_t)d->geo.clients * 2 * d->geo.slot_size,
		.wake = dg_gaddr(d, &dg_trustee(d, 0)->wake),
		.wake_stride = sizeof(struct dg_trustee),
		.trustees = d->geo.trustees,
		.lanes = DG_LANES,
		.cells = d->geo.cells,
	};
	struct odsm_deleg_bind b = { .endpoint = d->h->gaddr,
				     .slot_size = d->geo.slot_size,
				     .flags = ODSM_DELEG_BIND_LANES,
				     .lanes = (uintptr_t)&l };
	uint32_t hi = __atomic_load_n(&d->h->clients_hi, __ATOMIC_ACQUIRE);
	unsigned int c;

	/* ODSM_DELEG_NOLANES: the gateway takes every batch (to compare) */
	if (getenv("ODSM_DELEG_NOLANES"))
		goto plain;
	/* the module sleeps on a lane's answer: always woken */
	for (c = 0; c < DG_LANES; c++)
		__atomic_store_n(&dg_client(d, c)->waiting, 1, __ATOMIC_RELAXED);
	/* trustees scan [0, clients_hi): the lanes among them */
	while (hi < DG_LANES &&
	       !__atomic_compare_exchange_n(&d->h->clients_hi, &hi, DG_LANES,
					    false, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE))
		;
	if (!ioctl(d->gw_fd, ODSM_IOC_DELEG_BIND, &b))
		return 0;
	if (errno != EINVAL)
		return -errno;
	/* a module without lanes: every batch comes through the gateway */
plain:
	b.flags = 0;
	b.lanes = 0;
	return ioctl(d->gw_fd, ODSM_IOC_DELEG_BIND, &b) ? -errno : 0;
}

/*
 * Start the gateways of heap runtime d.  Without them the runtime still
 * serves this node (d->gw_err says why not: the module refused the bind,
 * or no thread could start).
 */
void dg_gateway_start(struct odsm_deleg *d)
{
	unsigned int i;

	d->gw_fd = open("/dev/odsm", O_RDWR | O_CLOEXEC);
	if (d->gw_fd < 0) {
		d->gw_err = -errno;
		return;
	}
	d->gw_err = dg_gateway_bind(d);
	if (d->gw_err) {
		close(d->gw_fd);
		d->gw_fd = -1;
		return;
	}
	for (i = 0; i < DG_GATEWAYS; i++) {
		d->gw_err = -pthread_create(&d->gw[i], NULL, dg_gw_main, d);
		if (d->gw_err)
			break;
		d->ngw++;
	}
}

int odsm_deleg_gateway_status(const struct odsm_deleg *d)
{
	if (d->remote || !d->host || !d->a.cg)
		return -EINVAL;
	return d->ngw ? 0 : d->gw_err ? d->gw_err : -ENOTCONN;
}

/*
 * After the state left DG_RUNNING: the gateways end within DG_GW_WAIT_MS,
 * and the file's close ends the endpoint (a batch still queued fails with
 * -EOWNERDEAD, at once, for its client).
 */
void dg_gateway_stop(struct odsm_deleg *d)
{
	while (d->ngw)
		pthread_join(d->gw[--d->ngw], NULL);
	if (d->gw_fd >= 0)
		close(d->gw_fd);
	d->gw_fd = -1;
}
