/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The RDMA transport's insides, shared by its files: odsm_rdma.c (the
 * connection manager, SEND/RECV, connection lifecycle), odsm_rdma_loop.c
 * (the loopback pair), odsm_rdma_onesided.c (registrations, one-sided
 * READ/WRITE and atomics) and odsm_rdma_park.c (CM ids whose last
 * message waits for a route to their peer).  The rest of the module sees
 * the transport only through its ops (odsm_cluster.h).
 */
#ifndef _ODSM_RDMA_H
#define _ODSM_RDMA_H

#include <linux/rwsem.h>
#include <linux/wait.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include "odsm.h"
#include "odsm_cluster.h"
#include "odsm_credit.h"

#define RDMA_RECVS		16	/* receive buffers = credits, per side */
/* accepted connections before their handshake: from one address, in all */
#define RDMA_UNAUTH_PER_ADDR	2
#define RDMA_UNAUTH_MAX		8
#define RDMA_SENDS		(2 * RDMA_RECVS)	/* send queue slots */
#define RDMA_CREDIT_BATCH	(RDMA_RECVS / 2)
/* a message sender's turn comes within this many timeout_ms, and this */
#define RDMA_CREDIT_WAIT_MAX	8
#define RDMA_CREDIT_WAIT_CAP_MS	60000
#define RDMA_MSG_MAX		(ODSM_WIRE_HDR_SIZE + ODSM_WIRE_MAX_PAYLOAD)
/*
 * Bytes of a peer's messages waiting for the receiver thread at most: a
 * received message is copied out and its credit returned at once (on the
 * CQ), so credits bound the messages in flight, not those waiting here,
 * and a peer could flood a receiver that waits in a send (for credits
 * that peer returns a few at a time).  Four times what a peer may have
 * in flight as requests (ODSM_PEER_REQ_BYTES_MAX): past it the connection
 * is closed.
 */
#define RDMA_RXQ_BYTES_MAX	(64U << 20)
/*
 * Local ACK timeout, 4.096 us << 14 = 67 ms: a lost packet costs that
 * much, not the half second the CM would choose for RoCE (a message is up
 * to 257 packets, and a call has timeout_ms in all).
 */
#define RDMA_ACK_TIMEOUT	14
/* one-sided: work requests of one READ/WRITE (a piece per 64 KiB block) */
#define RDMA_OS_WRS		(ODSM_WIRE_MAX_DATA / ODSM_WIRE_MAP_LEN + 1)
#define RDMA_MAX_REGS		4096	/* 256 MiB registered per connection */
/*
 * RDMA READs and atomics in flight per QP, both ways, no more than the
 * device allows.  Soft-RoCE once kept 1 (then 3): with more, three rxe
 * guests lost connections within seconds of reading 1 MiB from each
 * other, the QP in error without an error completion of its own.  That
 * was rxe running a completed REG_MR again when a lost packet made the
 * READs before it go again (the registration QP fixed it,
 * odsm_rdma_sideqp.c); since then 8 READs of up to 64 KiB in flight
 * pass on rxe too, with packets lost (2026-11-30).
 */
#define RDMA_RD_ATOM		8
/*
 * One-sided operations in flight per connection, each with a bounce
 * buffer of ODSM_WIRE_MAX_DATA (the first allocated with the connection,
 * the others if memory allows): WRITEs overlap, READs and atomics queue
 * on the QP behind the outstanding ones without a round trip through
 * the waiting thread.
 */
#define RDMA_OS_SLOTS		4
/* send queue: SENDs, one-sided work requests, ib_drain_qp */
#define RDMA_SQ_DEPTH		(RDMA_SENDS + RDMA_OS_SLOTS * RDMA_OS_WRS + 1)
/* the registration QP's (odsm_rdma_regs): one REG_MR, ib_drain_sq */
#define RDMA_REG_SQ_DEPTH	2
/* an atomics QP's (odsm_rdma_aqps): an atomic per slot, ib_drain_sq */
#define RDMA_AQP_SQ_DEPTH	(RDMA_OS_SLOTS + 1)

struct odsm_rdma_conn;

extern struct odsm_transport_ops odsm_rdma_ops;

/*
 * odsm_rdma.c's connection life, for the loopback pair (odsm_rdma_loop.c):
 * odsm_rdma_lock guards odsm_rdma_conns (every connection with resources)
 * and the listener.
 */
extern struct mutex odsm_rdma_lock;
extern struct list_head odsm_rdma_conns;
struct odsm_rdma_conn *odsm_rdma_conn_alloc(u32 peer, bool dialled);
int odsm_rdma_conn_setup(struct odsm_rdma_conn *x);
void odsm_rdma_conn_abort(struct odsm_rdma_conn *x, bool keep_id);
void odsm_rdma_accept_param(struct rdma_cm_id *id, struct rdma_cm_event *ev,
			    struct rdma_conn_param *p);
bool odsm_rdma_is_rxe(struct ib_device *dev);
void odsm_rdma_qp_event(struct ib_event *ev, void *ctx);
u32 odsm_rdma_init_depth(struct ib_device *dev);
/* the data QP's PSNs and our credits in the log, as why node N */
void odsm_rdma_qp_report(struct odsm_rdma_conn *x, const char *why);
int odsm_rdma_dial_prepare(struct odsm_rdma_conn *x, struct sockaddr_in dst,
			   struct rdma_conn_param *p);
int odsm_rdma_dial_connect(struct odsm_rdma_conn *x,
			   struct rdma_conn_param *p);
/* odsm_rdma_loop.c: the loopback pair, for the connection manager */
bool odsm_rdma_is_loop_req(struct rdma_cm_event *ev);
int odsm_rdma_on_loop_req(struct rdma_cm_id *id, struct rdma_cm_event *ev);
void odsm_rdma_loop_destroy(void);
/*
 * One-sided access over an RDMA connection (odsm_rdma_onesided.c), the
 * transport's optional ops (odsm_cluster.h says what each does).  The
 * caller holds a reference on conn.
 */
int odsm_rdma_rw(struct odsm_conn *conn, u64 addr, void *buf, u32 len,
		 bool write);
int odsm_rdma_read_pub(struct odsm_conn *conn, u64 addr, void *buf, u32 len,
		       u64 wblk, u32 idx, u32 *before, u32 *after);
bool odsm_rdma_missing(struct odsm_conn *conn, u64 addr, u32 len, u64 *blk);
int odsm_rdma_add_key(struct odsm_conn *conn,
		      const struct odsm_wire_map_reply *r);
bool odsm_rdma_can_map(struct odsm_conn *conn);
void odsm_rdma_no_maps(struct odsm_conn *conn);
int odsm_rdma_map(struct odsm_conn *conn, u64 addr,
		  struct odsm_wire_map_reply *r);
int odsm_rdma_atomic(struct odsm_conn *conn, u64 addr, u32 op, u64 operand,
		     u64 compare, u64 *old);
bool odsm_rdma_nic_atomics(void);
void odsm_rdma_counts(struct odsm_conn *conn, u32 *keys, u32 *regs);
void odsm_rdma_os_init(struct odsm_rdma_conn *x);
int odsm_rdma_os_setup(struct odsm_rdma_conn *x);
void odsm_rdma_os_free(struct odsm_rdma_conn *x);
int odsm_rdma_loop_atomic(u64 addr, u32 op, u64 operand, u64 compare,
			  u64 *old);
/* odsm_rdma_sideqp.c: QPs beside the data QP */
struct ib_qp *odsm_rdma_reg_qp_get(struct odsm_rdma_conn *x);
int odsm_rdma_aqp_offer(struct odsm_conn *conn, struct odsm_wire_aqp *o);
int odsm_rdma_aqp_serve(struct odsm_conn *conn, const struct odsm_wire_aqp *o,
			struct odsm_wire_aqp *a);
int odsm_rdma_aqp_finish(struct odsm_conn *conn, const struct odsm_wire_aqp *a);
int odsm_rdma_aqp_pair(struct odsm_rdma_conn *req, struct odsm_rdma_conn *resp);
void odsm_rdma_side_qps_free(struct odsm_rdma_conn *x);

/* Signalled work requests waited for together: one-sided ones, REG_MR. */
struct odsm_rdma_wait {
	struct ib_cqe cqe;
	struct odsm_rdma_conn *x;
	atomic_t pending;
	int status;
	struct completion done;
};

/* A block of our partition registered for the peer. */
struct odsm_rdma_reg {
	u64 addr;
	struct ib_mr *mr;
	int nents;			/* DMA-mapped entries of sg */
	unsigned int nr_sg;		/* sg entries: the block's pages, and
					 * its page of words if registered
					 */
	struct scatterlist sg[ODSM_BLOCK_PAGES + 1];
	struct page *pages[ODSM_BLOCK_PAGES];
	struct page *pub;		/* published slot words, or NULL */
};

/* A block of the peer's partition it registered for us. */
struct odsm_rdma_key {
	u64 iova;
	u32 rkey;
	u32 flags;			/* ODSM_WIRE_MAP_F_* */
};

/* A posted receive buffer. */
struct odsm_rdma_rbuf {
	struct ib_cqe cqe;
	struct odsm_rdma_conn *x;
	void *buf;
	u64 dma;
};

/* A SEND in flight: freed by its completion. */
struct odsm_rdma_tx {
	struct ib_cqe cqe;
	struct odsm_rdma_conn *x;
	void *buf;
	u64 dma;
	u32 len;
};

/* A received message, copied out for the receiver thread. */
struct odsm_rdma_msg {
	struct list_head node;
	u32 len;
	u8 data[];
};

/* Messages: SEND/RECV with credit-based flow control. */
struct odsm_rdma_msgs {
	struct odsm_rdma_rbuf rbufs[RDMA_RECVS];
	struct ib_cqe credit_cqe;
	/* under lock */
	spinlock_t lock;
	struct odsm_credit k;		/* credits, owed, slots, turns */
	struct list_head rxq;		/* rdma_msg, for the receiver */
	u32 rxq_bytes;			/* of the messages on rxq */
	wait_queue_head_t tx_wait;
	wait_queue_head_t rx_wait;
};

/*
 * One-sided, our side: a slot per operation in flight on the connection,
 * each with its own DMA-mapped bounce buffer and completion.
 */
struct odsm_rdma_slot {
	void *buf;			/* ODSM_WIRE_MAX_DATA, DMA-mapped */
	u64 dma;
	struct odsm_rdma_wait wait;
};

struct odsm_rdma_initiator {
	wait_queue_head_t free;		/* for a slot not in use */
	unsigned long busy;		/* a bit per slot in use */
	u32 nr;				/* slots with a buffer, set up once */
	u32 rd_depth;			/* READ operations in flight */
	bool ordered_reads;		/* our responder reads memory in the
					 * order of the READs (Soft-RoCE):
					 * MAP_F_INORDER in our MAP replies
					 */
	atomic_t reads;			/* one-sided READs in flight */
	atomic_t waiters;		/* atomics waiting for a slot */
	struct odsm_rdma_slot slot[RDMA_OS_SLOTS];
	struct xarray keys;		/* peer's block (gaddr >> 16) -> key */
	atomic_t nr_keys;
	bool no_maps;			/* the peer registers no more */
};

/* One-sided, the peer's side: our blocks registered for it. */
struct odsm_rdma_regs {
	struct mutex lock;		/* one MAP at a time */
	struct ib_qp *qp;		/* for REG_MRs, set up on the first
					 * (under lock and res_sem), freed by
					 * the teardown
					 */
	struct odsm_rdma_wait wait;
	struct xarray map;		/* our block (gaddr >> 16) -> reg */
	u32 nr;				/* under lock */
};

/*
 * One-sided atomics' QP pairs (odsm_rdma_sideqp.c): own carries our
 * atomics on the peer's memory, served answers the peer's on ours.  Set
 * up under lock and res_sem, freed by the teardown.
 */
struct odsm_rdma_aqps {
	struct mutex lock;		/* one setup at a time */
	struct ib_qp *own;		/* created by the first offer */
	u32 own_psn;			/* its first PSN */
	bool up;			/* own connected: atomics may go */
	struct ib_qp *served;		/* connected to the peer's own */
	u32 served_qpn;			/* ... which is this QP */
	struct odsm_wire_aqp answer;	/* what we told the peer */
};

/* An end of the loopback pair (odsm_rdma_loop.c); the accepted one. */
struct odsm_rdma_loop_end {
	bool end;
	struct list_head node;
	u64 attempt;
};

/*
 * A connection's CM id kept after its teardown until its peer can be
 * routed to again (odsm_rdma_park.c); under that file's park_lock but
 * cm_started, set before the id is handed to the CM.
 */
struct odsm_rdma_park {
	bool cm_started;		/* its destruction may make the CM send */
	bool dev_gone;			/* the device is going: no waiting */
	bool listed;			/* released: on the parked list */
	struct rdma_cm_id *id;		/* parked, destroyed with the struct */
	__be32 src, dst;		/* where the CM sends, for the route */
	int ifindex;
	struct list_head node;		/* on the parked list */
};

struct odsm_rdma_conn {
	struct odsm_conn *conn;
	u32 timeout_ms;
	__be32 peer_ip;
	/* the CM while connecting: the last event's verdict */
	struct completion cm_done;
	int cm_status;
	/*
	 * Verbs resources: set up before the connection is published; torn
	 * down once, under res_sem held for writing.  Senders post under it
	 * for reading; the CQ handler runs only while the CQ exists and the
	 * teardown drains the QP before destroying anything.
	 */
	struct rw_semaphore res_sem;
	bool torn;
	bool live;			/* connected once: drain before destroy */
	struct rdma_cm_id *id;
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp;
	bool broken;			/* no more traffic */
	struct odsm_rdma_msgs msg;
	struct task_struct *rx;
	struct work_struct disc_work;
	struct list_head node;		/* on odsm_rdma_conns, under odsm_rdma_lock */
	struct list_head rm_node;	/* a device removal's list */
	struct odsm_rdma_initiator os;
	struct odsm_rdma_regs reg;
	struct odsm_rdma_aqps aqp;
	struct odsm_rdma_loop_end loop;
	struct odsm_rdma_park park;
};

static inline struct odsm_rdma_conn *rc(struct odsm_conn *conn)
{
	return conn->xprt;
}

/* No more traffic: wake everyone waiting so they see it. */
static inline void rdma_fail(struct odsm_rdma_conn *x)
{
	WRITE_ONCE(x->broken, true);
	wake_up_all(&x->msg.tx_wait);
	wake_up_all(&x->msg.rx_wait);
}

/* odsm_rdma_park.c: CM ids whose last message waits for a route */
bool odsm_rdma_routed(struct odsm_rdma_conn *x);
bool odsm_rdma_park_id(struct odsm_rdma_conn *x, struct rdma_cm_id *id);
void odsm_rdma_park_dev_gone(struct odsm_rdma_conn *x);
bool odsm_rdma_park_release(struct odsm_rdma_conn *x);
void odsm_rdma_park_flush(void);

/* odsm_rdma_onesided.c */
void odsm_rdma_wr_done(struct ib_cq *cq, struct ib_wc *wc);
void odsm_rdma_regs_free(struct odsm_rdma_conn *x);

extern bool odsm_rdma_use_atomics;	/* nic_atomics, read at join */

/*
 * Does this node use the device's RDMA atomics (atomic to each other, at
 * least)?  Not on a device without them, nor when the cluster was joined
 * with nic_atomics=N: then flagged atomics are requests to the home's CPU.
 */
static inline bool odsm_rdma_dev_atomics(struct ib_device *dev)
{
	return READ_ONCE(odsm_rdma_use_atomics) &&
	       dev->attrs.atomic_cap != IB_ATOMIC_NONE;
}

/*
 * odsm_rdma.c: the loopback pair, a connection from this node to itself
 * on its own device.  odsm_rdma_loop_get sets it up on first use and
 * takes a reference on both ends; -EOPNOTSUPP where the device has no
 * atomics, -EHOSTDOWN and the like when it cannot be set up.
 */
struct odsm_rdma_loop {
	struct odsm_rdma_conn *req;		/* dialled: posts the operations */
	struct odsm_rdma_conn *resp;		/* accepted: holds the registrations */
};

int odsm_rdma_loop_get(struct odsm_rdma_loop *lp);
void odsm_rdma_loop_put(struct odsm_rdma_loop *lp);

#endif /* _ODSM_RDMA_H */
