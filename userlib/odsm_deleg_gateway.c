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

static bool dg_gw_running(const struct odsm_deleg *d)
{
	return __atomic_load_n(&d->h->state, __ATOMIC_ACQUIRE) == DG_RUNNING;
}

static void *dg_gw_main(void *arg)
{
	struct odsm_deleg *d = arg;
	uint32_t slot = d->h->slot_size, len;
	uint8_t *req = aligned_alloc(DG_LINE, slot);
	uint8_t *resp = aligned_alloc(DG_LINE, slot);
	struct odsm_deleg_serve s = { .timeout_ms = DG_GW_WAIT_MS };
	struct odsm_dslot_hdr h = { 0 };
	int ret;

	if (!req || !resp)
		goto out;
	s.req = (uintptr_t)req;
	s.resp = (uintptr_t)resp;
	while (dg_gw_running(d)) {
		ret = ioctl(d->gw_fd, ODSM_IOC_DELEG_SERVE, &s);
		/* the answer given (or refused, its client told): done */
		s.done = 0;
		if (ret && errno == EBADF)
			break;		/* the endpoint is gone */
		if (ret)
			continue;	/* none in time, a signal, bad answer */
		ret = dg_relay(d, req, s.req_len, resp, &len);
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
	free(req);
	free(resp);
	return NULL;
}

/*
 * Start the gateways of heap runtime d.  Without them the runtime still
 * serves this node (d->gw_err says why not: the module refused the bind,
 * or no thread could start).
 */
void dg_gateway_start(struct odsm_deleg *d)
{
	struct odsm_deleg_bind b = { .endpoint = d->h->gaddr,
				     .slot_size = d->h->slot_size };
	unsigned int i;

	d->gw_fd = open("/dev/odsm", O_RDWR | O_CLOEXEC);
	if (d->gw_fd < 0) {
		d->gw_err = -errno;
		return;
	}
	if (ioctl(d->gw_fd, ODSM_IOC_DELEG_BIND, &b)) {
		d->gw_err = -errno;
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
