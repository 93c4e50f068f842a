/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Faults on the wire, test holds, and the defence against one fault.
 *
 * The injector (module parameters fault_*, off by default) drops, delays
 * and duplicates the messages of calls -- service requests and their
 * replies -- as a lossy network would, so that tests can check that every
 * operation still ends with its value or an errno.  The replay window
 * makes sure a request that arrives twice (the injector's duplicate, or a
 * misbehaving peer's) is served once: READ and FETCH are idempotent, but a
 * second ALLOC, FREE, ATOMIC or WRITE would be applied again.  The holds
 * (below) keep three windows of the ownership protocol open for a test.
 *
 * They sit in the core, between calls (odsm_call.c, odsm_cluster.c) and
 * connections (odsm_conn.c): Documentation/odsm/design.rst, "The failure
 * contract".
 */
#ifndef _ODSM_FAULT_H
#define _ODSM_FAULT_H

#include <linux/types.h>

struct odsm_conn;
struct odsm_wire_hdr;

/*
 * Send a message on conn through the injector: what conn->ops->send()
 * returns, or 0 for a message the injector dropped (the sender cannot
 * tell, as with a message lost on the wire).  May sleep for a delayed one:
 * only calls' requests and replies are ever delayed, and they are sent
 * from sleepable contexts.
 */
int odsm_fault_send(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		    const void *payload, u32 plen, const void *data, u32 dlen);

/*
 * Test holds (module parameters fault_hold_frees, fault_hold_copies and
 * fault_hold_lazy, off by default): while fault_hold_frees is set, the
 * frees of moved originals stay queued (odsm_borrow.c asks, and looks
 * again later); while fault_hold_copies is set, odsm_fault_hold_copy()
 * sleeps (killable) in the borrow of a remote object between its copy's
 * last FETCH and the copy's insertion into the cache; while
 * fault_hold_lazy is set, odsm_fault_hold_lazy() sleeps (killable) in a
 * lazy fill between its checks of the copy and its page's FETCH.  All
 * count in fault_holds.  Process context.
 */
bool odsm_fault_frees_held(void);
void odsm_fault_hold_copy(void);
void odsm_fault_hold_lazy(void);

/*
 * The test knob fault_slow_teardown_ms (0, off, by default): a transport's
 * teardown of a connection sleeps that long once nothing is in flight on
 * it, counted in fault_holds.  Process context.
 */
void odsm_fault_slow_teardown(void);

/* What odsm_fault_rx_fresh() says of a request */
enum odsm_rx_age {
	ODSM_RX_FRESH,		/* new: serve it */
	ODSM_RX_SEEN,		/* a replay: dropped (dup_requests) */
	ODSM_RX_TOO_OLD,	/* older than the window: answered -EAGAIN,
				 * not served (requests_refused)
				 */
};

/*
 * Is the request h, received on conn, new, one its sender's incarnation
 * already sent, or too old to tell?  Any context.
 */
enum odsm_rx_age odsm_fault_rx_fresh(struct odsm_conn *conn,
				     const struct odsm_wire_hdr *h);

#endif /* _ODSM_FAULT_H */
