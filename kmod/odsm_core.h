/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a service sees of the cluster core (odsm_cluster.c): calls to a
 * peer, the messages it serves, the peer events it hears of, and the one
 * answer to "whose address is this, and can I reach it".  Services (remote
 * primitives, one-sided access, the cache, the borrows, and the ones to
 * come) register with the core; the core names none of them.  Transports
 * see odsm_cluster.h instead.
 *
 * Registration (handlers, peer events) happens at module load and unload,
 * while no cluster is joined: the tables are read without a lock by the
 * receivers and workers a join starts.
 */
#ifndef _ODSM_CORE_H
#define _ODSM_CORE_H

#include <linux/completion.h>
#include <linux/list.h>
#include <linux/types.h>
#include "odsm_wire.h"

struct odsm_conn;
struct odsm_transport_ops;
struct work_struct;

/* ---- messages a service serves -------------------------------------- */

/*
 * The handler of one message type.  A request (reply != 0) is served on
 * the core's workqueue by serve(), which may sleep: its status is sent
 * back in a message of type reply with the reply flag, with the fixed part
 * it wrote to reply (ODSM_REPLY_MAX bytes of room, length in *rlen) and
 * bulk data in *data (dlen bytes, kvfree()d by the core).  serve() returns
 * -EPROTO for a malformed payload: dropped and counted, never answered.
 * A one-way message (reply == 0) is handed to rx() in the connection's
 * receiver, which must not block on the network.
 *
 * quick: serve() takes only locals' locks, held briefly and never across
 * a wait on a peer, so on a transport whose receiver may send
 * (odsm_transport_ops.rx_serves) the request is served in the receiver
 * itself, in arrival order, and spares the hop through the workqueue
 * (two context switches on the home, most of what a small FETCH costs
 * beyond its round trip).
 */
#define ODSM_REPLY_MAX	64

struct odsm_msg_handler {
	u8 type;
	u8 reply;
	bool quick;
	int (*serve)(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		     const u8 *payload, u8 *reply, u32 *rlen,
		     const void **data, u32 *dlen);
	void (*rx)(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		   const u8 *payload);
};

int odsm_handler_register(const struct odsm_msg_handler *mh);
void odsm_handler_unregister(const struct odsm_msg_handler *mh);

/* ---- peer events ------------------------------------------------------- */

/*
 * Callbacks (any may be NULL) for what happens to peers, as rtrs's
 * link_ev: up (the handshake on conn completed; in the receiver, may
 * sleep briefly), restarted (the peer came back as a new module instance:
 * what it handed out before means nothing now; before up), down (it was
 * up and no longer is).
 */
struct odsm_peer_events {
	void (*up)(struct odsm_conn *conn, u32 node);
	void (*restarted)(u32 node);
	void (*down)(u32 node);
	struct list_head list;
};

void odsm_peer_events_register(struct odsm_peer_events *ev);
void odsm_peer_events_unregister(struct odsm_peer_events *ev);

/* ---- calls ---------------------------------------------------------------- */

/*
 * One request to node and its reply.  payload (plen bytes) and data (dlen
 * bytes) are sent after the header; the reply's payload is copied to reply
 * (at most cap bytes, length in *rlen).  Returns the reply's status, or
 * -EHOSTDOWN (peer down), -ETIMEDOUT (no reply within timeout_ms), -EPROTO
 * (a reply longer than cap).
 */
int odsm_rpc(u32 node, u8 type, const void *payload, u32 plen,
	     const void *data, u32 dlen, void *reply, u32 cap, u32 *rlen);
/*
 * odsm_rpc() to one incarnation of node (what odsm_peer_incarnation()
 * said): -EREMCHG, nothing sent, when node's up connection is another
 * incarnation's.  What a peer's new incarnation must never receive (the
 * free of an object of its former one) goes this way.
 */
int odsm_rpc_inc(u32 node, u64 inc, u8 type, const void *payload, u32 plen,
		 const void *data, u32 dlen, void *reply, u32 cap, u32 *rlen);
/*
 * A call in flight: odsm_rpc_start() sends the request and returns, so
 * that one caller can have several calls out at once (the chunks of a
 * large fetch); odsm_rpc_wait() waits for the reply and returns what
 * odsm_rpc_inc() would have.  Every call started (0 returned) must be
 * waited for, by the thread that started it: the call and reply stay the
 * caller's, and it holds the cluster against leaving, until then.  The
 * fields are the core's.
 */
struct odsm_rpc_call {
	u32 peer;
	int status;
	void *reply;
	u32 cap, len;
	u64 seq, start;
	u8 type;
	struct completion done;
	struct odsm_conn *conn;
};

int odsm_rpc_start(struct odsm_rpc_call *call, u32 node, u64 inc, u8 type,
		   const void *payload, u32 plen, const void *data, u32 dlen,
		   void *reply, u32 cap);
int odsm_rpc_wait(struct odsm_rpc_call *call, u32 *rlen);
/*
 * The incarnation of node that this node last authenticated (it changes,
 * under the core's lock, before the restarted event is sent); with
 * up_only, 0 unless node is up.  0 when none or not joined.
 */
u64 odsm_peer_incarnation(u32 node, bool up_only);
/* A one-way message to conn's peer (no reply). */
int odsm_msg_send(struct odsm_conn *conn, u8 type, const void *payload,
		  u32 plen);

/*
 * The up connection to node, referenced, with the cluster held against
 * leaving until odsm_peer_conn_put(); NULL when there is none or a leave
 * is under way.  For services that use a connection's transport directly
 * (one-sided access).
 */
struct odsm_conn *odsm_peer_conn_get(u32 node);
void odsm_peer_conn_put(struct odsm_conn *conn);
/* The transport of a connection: optional abilities are its ops. */
const struct odsm_transport_ops *odsm_conn_ops(const struct odsm_conn *conn);
bool odsm_conn_dead(const struct odsm_conn *conn);
void odsm_conn_hold(struct odsm_conn *conn);
void odsm_conn_put(struct odsm_conn *conn);
/* The joined cluster's transport (NULL when not joined). */
const struct odsm_transport_ops *odsm_cluster_transport(void);
/*
 * The joined cluster's timeout (ms): how long a call waits for its reply,
 * and so how long a service that answers may take; 0 when not joined.
 */
u32 odsm_cluster_timeout_ms(void);
/* Run work on the core's workqueue: false when no cluster is joined. */
bool odsm_cluster_queue(struct work_struct *work);
/*
 * Hold the cluster against leaving for a call that does not go through a
 * connection (the home's own NIC atomics): false when a leave is under way.
 */
bool odsm_cluster_hold(void);
void odsm_cluster_unhold(void);

/* ---- peers and addresses ---------------------------------------------------- */

/* Is node up (a peer we can send to now)? */
bool odsm_peer_up(u32 node);
/* The up peer that last reported the most free memory, or -ENOSPC. */
int odsm_peer_most_free(void);
/*
 * The node whose partition holds [addr, addr + len) of the heap (colors
 * ignored), *local when it is this one: -EINVAL when the range is not in
 * the heap, spans partitions, or lies on another node while this one is
 * in no cluster (there is no way to it).
 */
int odsm_home_of(u64 addr, u64 len, bool *local);

#endif /* _ODSM_CORE_H */
