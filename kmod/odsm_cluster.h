/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Cluster membership, connections and request/reply calls between nodes.
 *
 * Each node knows every node's address and the cluster key (ODSM_IOC_JOIN).
 * Node i dials the nodes with lower ids and accepts connections from those
 * with higher ids.  A connection starts with a three-step handshake of
 * HELLOs (offer, challenge, proof): each side names itself (checked against
 * the address table and the geometry), sends a fresh nonce and proves with
 * an HMAC-SHA256 under the key over both nonces, both ids, the step and both
 * incarnations that it holds the key.  Until its own side of the handshake
 * completed (conn->authed), a connection carries nothing else, and it never
 * touches the peer's slot.  One connection per peer pair carries every
 * message both ways.  A cluster thread ticks every heartbeat: it pings up
 * peers, marks silent ones down, re-dials down ones and reaps dead
 * connections.
 *
 * Threads: one acceptor, one receiver per connection, a workqueue that
 * serves requests and sends their replies (and PONGs) and dials peers,
 * and the cluster tick.  A receiver never waits for a send once the
 * handshake is done: a send holds the connection's send lock as long as
 * the peer does not read, so a receiver waiting for it would stop
 * reading, and two loaded nodes would wait for each other until the send
 * timeout killed the connection.  It sends only its HELLOs, before any
 * other traffic (and every send carries the timeout).  Lifetimes: a
 * connection is referenced by its peer slot, its receiver, and each work
 * item in flight; only the tick (or leave) stops a receiver and drops the
 * list's reference.
 */
#ifndef _ODSM_CLUSTER_H
#define _ODSM_CLUSTER_H

#include <linux/in.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include "odsm_wire.h"
#include "odsm_core.h"

struct task_struct;
struct crypto_shash;

struct odsm_conn;

/*
 * A transport: how messages travel (odsm_tcp.c, odsm_rdma.c), registered
 * with the core as net/rds's transports are (odsm_transport_register()).
 * The core owns membership, calls and connection lifetimes; a transport
 * moves whole messages and reports what it receives through
 * odsm_cluster_check_hdr() / odsm_cluster_rx() / odsm_cluster_conn_failed().
 * Abilities only some transports have are optional ops (NULL when absent),
 * as RDS's xmit_rdma / get_mr: services check them before use.
 */
struct odsm_transport_ops {
	const char *name;
	u32 id;					/* ODSM_TRANSPORT_* */
	struct list_head list;			/* on the core's list */
	int (*listen)(void);		/* start accepting (at join) */
	void (*unlisten)(void);		/* stop; may sleep */
	/* connect to peer: a published connection, with a reference */
	struct odsm_conn *(*dial)(u32 peer);
	int (*send)(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		    const void *payload, u32 plen, const void *data, u32 dlen);
	void (*kill)(struct odsm_conn *conn);	/* stop traffic, any context */
	void (*stop)(struct odsm_conn *conn);	/* wait for its receiver */
	void (*release)(struct odsm_conn *conn);	/* the last reference */
	/* the peer's IPv4 address (network order), to check a HELLO */
	int (*peer_ipv4)(struct odsm_conn *conn, __be32 *ip);
	/*
	 * May the receiver send?  True when a send never waits on what the
	 * receiver itself must take in (RDMA: credits come back on the CQ,
	 * not through the receiver).  Not over TCP: two receivers each
	 * blocked sending to the other, their socket buffers full, would
	 * wait for each other.  Quick requests are served in the receiver
	 * only where it may (struct odsm_msg_handler).
	 */
	bool rx_serves;

	/* optional: one-sided access to the peer's registered memory */
	/* READ/WRITE len bytes at addr: -ENOKEY when a block has no key */
	int (*rw)(struct odsm_conn *conn, u64 addr, void *buf, u32 len,
		  bool write);
	/* an atomic on the word at addr: -ENOKEY as rw, -EOPNOTSUPP when
	 * the peer's registration takes no atomics, -ENOTCONN before the
	 * atomics QP pair is connected (below)
	 */
	int (*atomic)(struct odsm_conn *conn, u64 addr, u32 op, u64 operand,
		      u64 compare, u64 *old);
	/*
	 * With atomic: the QP pair atomics travel on (an AQP exchange).
	 * The initiator's offer (1 and *o filled when its end is not yet
	 * connected, 0 when it is), the home's answer (its end connected to
	 * the offer, into *a), the initiator connecting its end to *a.
	 */
	int (*aqp_offer)(struct odsm_conn *conn, struct odsm_wire_aqp *o);
	int (*aqp_serve)(struct odsm_conn *conn, const struct odsm_wire_aqp *o,
			 struct odsm_wire_aqp *a);
	int (*aqp_finish)(struct odsm_conn *conn,
			  const struct odsm_wire_aqp *a);
	/*
	 * READ len bytes at addr (up to three blocks) between two READs of
	 * the published word idx of the block at wblk, into *before and
	 * *after, in that order (odsm_pubword.h); before NULL: the bytes and
	 * the word after them only (a word known, odsm_pub_known()).
	 * -ENOKEY as rw, -EOPNOTSUPP when the peer did not register wblk's
	 * words (MAP_F_PUB), -EBUSY as rw's spill
	 */
	int (*read_pub)(struct odsm_conn *conn, u64 addr, void *buf, u32 len,
			u64 wblk, u32 idx, u32 *before, u32 *after);
	/* the first block of the range we hold no key for, into *blk */
	bool (*missing)(struct odsm_conn *conn, u64 addr, u32 len, u64 *blk);
	bool (*can_map)(struct odsm_conn *conn);	/* may we ask for more */
	void (*no_maps)(struct odsm_conn *conn);	/* the peer said no more */
	int (*add_key)(struct odsm_conn *conn,
		       const struct odsm_wire_map_reply *r);
	/* the home's side: register our block at addr for conn's peer */
	int (*map)(struct odsm_conn *conn, u64 addr,
		   struct odsm_wire_map_reply *r);
	/* keys held for the peer's blocks, blocks registered for it */
	void (*counts)(struct odsm_conn *conn, u32 *keys, u32 *regs);
	/* does this node run its flagged (F_NIC) atomics on its device? */
	bool (*nic_atomics)(void);
	/* a flagged atomic on our own word, through our device */
	int (*loop_atomic)(u64 addr, u32 op, u64 operand, u64 compare,
			   u64 *old);
};

/* Transports register at module load, unregister at unload. */
void odsm_transport_register(struct odsm_transport_ops *t);
void odsm_transport_unregister(struct odsm_transport_ops *t);

struct odsm_conn {
	struct kref ref;
	const struct odsm_transport_ops *ops;
	void *xprt;			/* the transport's own state */
	u32 peer;			/* node id, U32_MAX until known */
	bool dialled;			/* we dialled it (else accepted) */
	bool dead;			/* failed or shut down: reap */
	/* the handshake: only the receiver writes these (dial_work sets
	 * hs_step before the first send)
	 */
	bool authed;			/* the peer proved the key */
	u8 hs_step;			/* last step sent or seen */
	u64 peer_inc;			/* the peer's incarnation */
	u8 nonce[ODSM_WIRE_NONCE_SIZE];		/* ours, fresh */
	u8 peer_nonce[ODSM_WIRE_NONCE_SIZE];
	u64 born_ns;			/* accepted ones must say HELLO soon */
	__be32 from;			/* accepted: the source address */
	struct list_head node;		/* on cluster.conns */
	/* the answer to the last PING, sent by the workqueue; only the
	 * receiver queues it (and sets it up before the first time)
	 */
	struct work_struct pong;
	bool pong_ready;
	u64 pong_echo;
	/* the heartbeat, sent by the workqueue so that a send that blocks
	 * (no RDMA credits, a full socket: a peer that died) stalls this
	 * connection only, never the tick that finds dead peers; only the
	 * tick queues it (and sets it up before the first time)
	 */
	struct work_struct ping;
	bool ping_ready;
	u64 ping_ns;
};

/*
 * The joined cluster as a transport needs it (valid between its listen()
 * and unlisten(), and for its connections' lives): this node's id, the
 * number of nodes, a node's address, this module instance's incarnation,
 * the timeout.
 */
u32 odsm_cluster_self(void);
u32 odsm_cluster_nr_nodes(void);
struct sockaddr_in odsm_cluster_addr(u32 node);
u64 odsm_cluster_incarnation(void);
u32 odsm_cluster_timeout_ms(void);
/* A leave is under way (or done): a transport's waits may end early. */
bool odsm_cluster_leaving(void);

int odsm_cluster_join(const struct odsm_join *j,
		      const struct odsm_node_addr *nodes, const u8 *key);
void odsm_cluster_leave(void);
int odsm_cluster_set_config(const struct odsm_geom *g);
int odsm_cluster_status(struct odsm_status *st, struct odsm_peer_info *out,
			u32 room);

/* The transports' own set-up at module load (odsm_tcp.c, odsm_rdma.c). */
int odsm_tcp_init(void);
void odsm_tcp_exit(void);
#if IS_ENABLED(CONFIG_INFINIBAND_ADDR_TRANS)
int odsm_rdma_init(void);	/* watch RDMA devices, register */
void odsm_rdma_exit(void);
#else
static inline int odsm_rdma_init(void) { return 0; }
static inline void odsm_rdma_exit(void) { }
#endif

/* A connection's peer in messages: its id, -1 before a HELLO named it. */
static inline int odsm_conn_peer_id(const struct odsm_conn *conn)
{
	return conn->peer == U32_MAX ? -1 : (int)conn->peer;
}

/* Connections, for transports: set up, then publish when ready to run. */
void odsm_conn_init(struct odsm_conn *conn, const struct odsm_transport_ops *ops,
		    void *xprt, u32 peer, bool dialled);
void odsm_conn_publish(struct odsm_conn *conn);
void odsm_conn_kill(struct odsm_conn *conn);

/*
 * Admission of accepted connections, which are anybody's until a HELLO
 * names them.  odsm_cluster_accept_from(): may a connection from this
 * IPv4 address (network order) be given a receiver at all?  Only a node
 * that dials this one (a higher id) may connect (else -EPERM), and only
 * within the bounds below (else -EBUSY); a refusal is counted.
 * odsm_cluster_admit() then publishes the connection instead of
 * odsm_conn_publish(), within the bounds of unauthenticated connections
 * (ODSM_PENDING_MAX in all, ODSM_PENDING_PER_SRC per address: the oldest
 * one from that address still silent ODSM_PENDING_GRACE_MS after it was
 * accepted is closed for it); -EBUSY, counted, when over the first or
 * when no connection of that address may be closed: the transport frees
 * it.
 */
#define ODSM_PENDING_MAX	64
#define ODSM_PENDING_PER_SRC	4
#define ODSM_PENDING_GRACE_MS	500
int odsm_cluster_accept_from(__be32 from);
int odsm_cluster_admit(struct odsm_conn *conn, __be32 from);

/* For receivers: validate a header in the connection's context (counts a
 * bad one), hand over a message, report the end of the connection.
 */
int odsm_cluster_check_hdr(struct odsm_conn *conn, const u8 *raw,
			   struct odsm_wire_hdr *h);
void odsm_cluster_rx(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		     u8 *payload);
void odsm_cluster_conn_failed(struct odsm_conn *conn);

#endif /* _ODSM_CLUSTER_H */
