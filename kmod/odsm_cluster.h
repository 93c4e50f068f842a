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
 * serves requests and sends their replies and dials peers, and the cluster
 * tick.  A receiver sends only the small HELLO and PONG answers, so two
 * nodes cannot block each other's receivers with large sends (and every
 * send carries the timeout).  Lifetimes: a
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

struct task_struct;
struct crypto_shash;

struct odsm_conn;
struct odsm_cluster;

/*
 * A transport: how messages travel.  TCP (odsm_tcp.c) today; RDMA to come.
 * The cluster code owns membership, calls and connection lifetimes; a
 * transport moves whole messages and reports what it receives through
 * odsm_cluster_check_hdr() / odsm_cluster_rx() / odsm_cluster_conn_failed().
 */
struct odsm_transport_ops {
	const char *name;
	int (*listen)(struct odsm_cluster *c);		/* start accepting */
	void (*unlisten)(struct odsm_cluster *c);	/* stop; may sleep */
	/* connect to peer: a published connection, with a reference */
	struct odsm_conn *(*dial)(struct odsm_cluster *c, u32 peer);
	int (*send)(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		    const void *payload, u32 plen, const void *data, u32 dlen);
	void (*kill)(struct odsm_conn *conn);	/* stop traffic, any context */
	void (*stop)(struct odsm_conn *conn);	/* wait for its receiver */
	void (*release)(struct odsm_conn *conn);	/* the last reference */
	/* the peer's IPv4 address (network order), to check a HELLO */
	int (*peer_ipv4)(struct odsm_conn *conn, __be32 *ip);
};

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
	struct list_head node;		/* on cluster.conns */
};

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
	bool nic_atomics;		/* odsm_nic_atomics when joining */
	u64 incarnation;		/* this module instance */
	struct crypto_shash *hmac;	/* hmac(sha256) keyed with the secret */
	struct odsm_peer *peers;	/* nr_nodes, self's slot included */
	struct list_head conns;
	void *listener;			/* the transport's accepting side */
	struct task_struct *ticker;
	struct workqueue_struct *wq;	/* serves requests */
	struct xarray calls;		/* seq -> struct odsm_call */
	atomic64_t next_seq;
};

extern struct odsm_cluster odsm_cluster;

int odsm_cluster_join(const struct odsm_join *j,
		      const struct odsm_node_addr *nodes, const u8 *key);
void odsm_cluster_leave(void);
int odsm_cluster_status(struct odsm_status *st, struct odsm_peer_info *out,
			u32 room);

/*
 * One request to node and its reply.  payload (plen bytes) and data (dlen
 * bytes) are sent after the header; the reply's payload is copied to reply
 * (at most cap bytes, length in *rlen).  Returns the reply's status, or
 * -EHOSTDOWN (peer down), -ETIMEDOUT (no reply within timeout_ms), -EPROTO
 * (a reply longer than cap).
 */
int odsm_rpc(u32 node, u8 type, const void *payload, u32 plen,
	     const void *data, u32 dlen, void *reply, u32 cap, u32 *rlen);

/* Is node up (a peer we can send to now)? */
bool odsm_peer_up(u32 node);
/* The up peer that last reported the most free memory, or -ENOSPC. */
int odsm_peer_most_free(void);

/* odsm_tcp.c: the kernel-TCP transport */
extern const struct odsm_transport_ops odsm_tcp_ops;

/* odsm_rdma.c: the RDMA transport (RDMA CM, RC QPs, SEND/RECV) */
#if IS_ENABLED(CONFIG_INFINIBAND_ADDR_TRANS)
extern const struct odsm_transport_ops odsm_rdma_ops;
int odsm_rdma_init(void);	/* at module load: watch RDMA devices */
void odsm_rdma_exit(void);
/*
 * One-sided access over an RDMA connection (see odsm_rdma.c).  The
 * caller holds a reference on conn.  odsm_rdma_rw: -ENOKEY when a block of
 * the range has no key yet; odsm_rdma_missing names the first such block.
 */
int odsm_rdma_rw(struct odsm_conn *conn, u64 addr, void *buf, u32 len,
		 bool write);
bool odsm_rdma_missing(struct odsm_conn *conn, u64 addr, u32 len, u64 *blk);
int odsm_rdma_add_key(struct odsm_conn *conn,
		      const struct odsm_wire_map_reply *r);
bool odsm_rdma_can_map(struct odsm_conn *conn);
void odsm_rdma_no_maps(struct odsm_conn *conn);
/* The home's side of a MAP: register our block at addr for conn's peer. */
int odsm_rdma_map(struct odsm_conn *conn, u64 addr,
		  struct odsm_wire_map_reply *r);
/*
 * A one-sided RDMA atomic on the 8-byte word at addr of conn's peer:
 * -ENOKEY as for odsm_rdma_rw, -EOPNOTSUPP when the peer's registration
 * takes no atomics.
 */
int odsm_rdma_atomic(struct odsm_conn *conn, u64 addr, u32 op, u64 operand,
		     u64 compare, u64 *old);
/*
 * Does this node run its flagged (F_NIC) atomics through its RDMA device?
 * Yes when it is joined over RDMA on a device with atomics: then so must
 * it, since peers run theirs one-sided.
 */
bool odsm_rdma_nic_atomics(void);
/* Keys this node holds for the peer's blocks, blocks it registered for it. */
void odsm_rdma_counts(struct odsm_conn *conn, u32 *keys, u32 *regs);
int odsm_rdma_loop_atomic(u64 addr, u32 op, u64 operand, u64 compare,
			  u64 *old);
#else
static inline int odsm_rdma_init(void) { return 0; }
static inline void odsm_rdma_exit(void) { }
static inline bool odsm_rdma_nic_atomics(void) { return false; }
static inline int odsm_rdma_loop_atomic(u64 addr, u32 op, u64 operand,
					u64 compare, u64 *old)
{
	return -EOPNOTSUPP;
}
#endif

/* Connections, for transports: set up, then publish when ready to run. */
void odsm_conn_init(struct odsm_conn *conn, const struct odsm_transport_ops *ops,
		    void *xprt, u32 peer, bool dialled);
void odsm_conn_publish(struct odsm_cluster *c, struct odsm_conn *conn);
void odsm_conn_kill(struct odsm_conn *conn);
void odsm_conn_put(struct odsm_conn *conn);

/* For receivers: validate a header in the connection's context (counts a
 * bad one), hand over a message, report the end of the connection.
 */
int odsm_cluster_check_hdr(struct odsm_conn *conn, const u8 *raw,
			   struct odsm_wire_hdr *h);
void odsm_cluster_rx(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		     u8 *payload);
void odsm_cluster_conn_failed(struct odsm_conn *conn);

/* odsm_remote.c: serving requests, and the ioctls that may go remote */
int odsm_serve(const struct odsm_wire_hdr *h, const u8 *payload, u8 *reply,
	       u32 *rlen, const void **data, u32 *dlen);
int odsm_serve_map(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		   const u8 *payload, u8 *reply, u32 *rlen);
/*
 * Register our block at gaddr for conn's peer, if it may be (RDMA, ours,
 * not a lazily filled copy's); what a MAP_REPLY says into *r.  Refusals
 * are counted in map_refused.
 */
int odsm_map_for(struct odsm_conn *conn, u64 gaddr,
		 struct odsm_wire_map_reply *r);
extern unsigned int odsm_premap_blocks;	/* module parameter */
/*
 * One-sided RDMA READ/WRITE of len (<= ODSM_WIRE_MAX_DATA) bytes at addr
 * of node's partition, registering its blocks first (MAP) where needed:
 * -EOPNOTSUPP when the request path must do it instead (not RDMA, a block
 * the home does not register, one-sided turned off).
 */
int odsm_onesided_rw(u32 node, u64 addr, void *buf, u32 len, bool write);
/* The same for an atomic on a word of node's partition (ODSM_ATOMIC_F_NIC). */
int odsm_onesided_atomic(u32 node, u64 addr, u32 op, u64 operand,
			 u64 compare, u64 *old);
/* A flagged atomic on our own word, run by our RDMA device (loopback). */
int odsm_nic_atomic_here(u64 addr, u32 op, u64 operand, u64 compare,
			 u64 *old);
/* Is the cluster joined over RDMA? */
bool odsm_cluster_is_rdma(void);
extern bool odsm_onesided;	/* module parameter: use one-sided RDMA */
extern bool odsm_nic_atomics;	/* module parameter: use device atomics */
long odsm_ioc_rw(void __user *arg, bool write);
/*
 * Copy len (<= ODSM_WIRE_MAX_DATA) bytes between buf and [addr, addr + len)
 * of node's partition (not this node's): the raw reads and writes of
 * ODSM_IOC_READ / ODSM_IOC_WRITE (object bytes of borrows travel by FETCH).
 */
int odsm_remote_rw(u32 node, u64 addr, void *buf, u32 len, bool write);
/* The owner box at addr of node's partition, read or written at the home
 * with ODSM_WIRE_RW_OWNER (see odsm_heap_owner_rw()).
 */
int odsm_remote_owner_rw(u32 node, u64 addr, void *box,
			 enum odsm_owner_op op);
long odsm_ioc_atomic(void __user *arg);
int odsm_remote_alloc(u32 node, u64 size, u32 align, u32 flags, u64 *cg,
		      u64 *usable);
int odsm_remote_free(u32 node, u64 cg);

#endif /* _ODSM_CLUSTER_H */
