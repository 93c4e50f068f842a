/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside the core: what its files (odsm_conn.c, odsm_core_reg.c,
 * odsm_call.c, odsm_cluster.c) give each other.  Calls go one way only:
 * membership (odsm_cluster.c) -> calls (odsm_call.c) -> connections
 * (odsm_conn.c) and the registry (odsm_core_reg.c), which call no other
 * file of the core.  Nothing outside the core includes this.
 */
#ifndef _ODSM_CORE_PRI_H
#define _ODSM_CORE_PRI_H

#include <linux/in.h>
#include "odsm_cluster.h"

struct crypto_shash;
struct task_struct;

struct odsm_peer {
	u32 id;
	struct sockaddr_in addr;
	/* under cluster.lock (a spinlock) */
	u32 state;			/* enum odsm_peer_state */
	struct odsm_conn *conn;		/* the UP or CONNECTING connection */
	u64 last_rx_ns;
	u64 rtt_ns;
	u64 free_bytes;
	u64 incarnation;
	struct work_struct dial;	/* connect, off the tick */
	bool dialling;
	/* traffic, bumped without the lock */
	atomic64_t msgs_tx, msgs_rx, bytes_tx, bytes_rx;
	/*
	 * The peer's requests queued or being served, their payload bytes,
	 * and refusals waiting to be sent (odsm_call.c), over all its
	 * connections: a peer that connects again does not start afresh
	 * while the requests of its former connections still wait.  Added
	 * to by the receivers of its connections (mostly one; a check and
	 * its add may overshoot the bound by a request per other receiver).
	 */
	atomic_t reqs, req_bytes, refusals;
};

struct odsm_cluster {
	struct mutex join_lock;		/* join / leave / status */
	/* held for reading by every call in flight, for writing by leave
	 * before it frees what calls use (peers, connections)
	 */
	struct rw_semaphore users;
	spinlock_t lock;		/* peers' state, conns list */
	bool joined;
	u32 transport;
	const struct odsm_transport_ops *ops;
	u32 self, nr_nodes;
	u32 heartbeat_ms, timeout_ms;
	u64 incarnation;		/* this module instance */
	struct crypto_shash *hmac;	/* hmac(sha256) keyed with the secret */
	struct odsm_peer *peers;	/* nr_nodes, self's slot included */
	struct list_head conns;
	struct task_struct *ticker;
	struct workqueue_struct *wq;	/* serves requests */
	struct xarray calls;		/* seq -> struct odsm_rpc_call */
	atomic64_t next_seq;
};

extern struct odsm_cluster odsm_cluster;

/* odsm_core_reg.c */
const struct odsm_transport_ops *odsm_transport_find(u32 id);
const struct odsm_msg_handler *odsm_handler_of(u8 type);
void odsm_peer_event_up(struct odsm_conn *conn, u32 node);
void odsm_peer_event_restarted(u32 node);
void odsm_peer_event_down(u32 node);

/* odsm_call.c */
int odsm_send_msg(struct odsm_cluster *c, struct odsm_conn *conn, u32 dst,
		  u8 type, u16 flags, u64 seq, s32 status, const void *payload,
		  u32 plen, const void *data, u32 dlen);
/* The connection to node (an up one, with up_only), referenced, or NULL. */
struct odsm_conn *odsm_peer_conn(struct odsm_cluster *c, u32 node,
				 bool up_only);
/* Fail the calls sent on conn (NULL: every call to node): it is gone. */
void odsm_fail_calls(struct odsm_cluster *c, u32 node, struct odsm_conn *conn,
		     int err);
void odsm_on_reply(struct odsm_cluster *c, const struct odsm_wire_hdr *h,
		   const u8 *payload);
/* refuse_it: answer -EAGAIN and serve nothing (as when too many wait) */
void odsm_serve_request(struct odsm_cluster *c, struct odsm_conn *conn,
			const struct odsm_wire_hdr *h, const u8 *payload,
			const struct odsm_msg_handler *mh, bool refuse_it);

#endif /* _ODSM_CORE_PRI_H */
