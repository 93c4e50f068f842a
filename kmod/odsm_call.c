// SPDX-License-Identifier: GPL-2.0
/*
 * Calls and dispatch: messages out (a header filled, the peer's traffic
 * counted), requests and their replies matched by sequence number, the
 * requests peers send served by the handler registered for their type,
 * and what services use of the cluster (odsm_core.h).  Calls the
 * connections' and the registry's files of the core, never membership.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include "odsm.h"
#include "odsm_cluster.h"
#include "odsm_core_pri.h"
#include "odsm_fault.h"
#include "odsm_lat.h"
#include "odsm_trace.h"

/*
 * A peer's requests in flight: queued or being served, from the copy its
 * receiver makes to the reply sent.  Past either bound a request is
 * refused with -EAGAIN (the receiver never waits for the queue, so
 * replies to our own calls keep flowing and two nodes cannot stall each
 * other); refusals are sent by the workqueue too, and past
 * ODSM_PEER_REFUSALS_MAX waiting ones (a peer that does not read) a
 * request is dropped unanswered.  A peer thus holds at most about
 * 16 MiB + 64 small items of this node's memory.  The bytes' bound is
 * that of 64 requests of the largest size, so a requester with at most
 * 64 requests outstanding is never refused (it stays, should the count's
 * bound ever be raised) -- unless this node is short of memory: a request
 * whose copy cannot be allocated (ODSM_GFP_REQ) is refused the same way.
 */
#define ODSM_PEER_REQS_MAX	64
#define ODSM_PEER_REQ_BYTES_MAX	(ODSM_PEER_REQS_MAX * ODSM_WIRE_MAX_PAYLOAD)
#define ODSM_PEER_REFUSALS_MAX	64

/* A request to serve (or refuse), with the connection to answer on. */
struct odsm_req {
	struct work_struct work;
	const struct odsm_msg_handler *mh;
	struct odsm_conn *conn;
	struct odsm_peer *peer;		/* its counts: peers outlive the wq */
	bool refused;			/* answer -EAGAIN, serve nothing */
	u64 arrived_ns;			/* for odsm_rpc_serve's latency */
	struct odsm_wire_hdr h;
	u8 payload[];
};

/*
 * Fail the calls sent on conn (its peer can no longer answer them: a
 * reply comes on the connection its request came by), or with conn NULL
 * every call to node.  By connection, not node: a call already sent on
 * the connection that replaces a dead one must not fail with it.  A call
 * lives in its caller's memory, so it is looked at only under the
 * xarray's lock while it is still in the array: its caller cannot have
 * erased it and returned then (odsm_rpc_wait() erases before it returns),
 * and its reference keeps its connection from being freed and another
 * taking its address.
 */
void odsm_fail_calls(struct odsm_cluster *c, u32 node, struct odsm_conn *conn,
		     int err)
{
	struct odsm_rpc_call *call;
	unsigned long seq;

	xa_lock(&c->calls);
	xa_for_each(&c->calls, seq, call) {
		if (conn ? call->conn != conn : call->peer != node)
			continue;
		__xa_erase(&c->calls, seq);
		call->status = err;
		complete(&call->done);
	}
	xa_unlock(&c->calls);
}

bool odsm_peer_up(u32 node)
{
	struct odsm_cluster *c = &odsm_cluster;
	bool up;

	spin_lock(&c->lock);
	up = c->joined && node < c->nr_nodes &&
	     c->peers[node].state == ODSM_PEER_UP;
	spin_unlock(&c->lock);
	return up;
}

int odsm_peer_most_free(void)
{
	struct odsm_cluster *c = &odsm_cluster;
	int best = -ENOSPC;
	u64 most = 0;
	u32 i;

	spin_lock(&c->lock);
	for (i = 0; c->joined && i < c->nr_nodes; i++) {
		if (c->peers[i].state == ODSM_PEER_UP &&
		    c->peers[i].free_bytes > most) {
			most = c->peers[i].free_bytes;
			best = i;
		}
	}
	spin_unlock(&c->lock);
	return best;
}

/* The connection to send on, with a reference, or NULL. */
struct odsm_conn *odsm_peer_conn(struct odsm_cluster *c, u32 node,
				 bool up_only)
{
	struct odsm_conn *conn = NULL;

	spin_lock(&c->lock);
	if (c->joined && node < c->nr_nodes && c->peers[node].conn &&
	    (!up_only || c->peers[node].state == ODSM_PEER_UP)) {
		conn = c->peers[node].conn;
		kref_get(&conn->ref);
	}
	spin_unlock(&c->lock);
	return conn;
}

/* A reply is known by its flag (and answers the seq of its request). */
static void fill_hdr(struct odsm_cluster *c, struct odsm_wire_hdr *h, u32 dst,
		     u8 type, u16 flags, u64 seq, u32 len, s32 status)
{
	h->magic = ODSM_WIRE_MAGIC;
	h->version = ODSM_WIRE_VERSION;
	h->type = type;
	h->flags = flags;
	h->src_node = c->self;
	h->dst_node = dst;
	h->seq = seq;
	h->len = len;
	h->status = status;
}

int odsm_send_msg(struct odsm_cluster *c, struct odsm_conn *conn, u32 dst,
		  u8 type, u16 flags, u64 seq, s32 status, const void *payload,
		  u32 plen, const void *data, u32 dlen)
{
	struct odsm_wire_hdr h;
	int ret;

	fill_hdr(c, &h, dst, type, flags, seq, plen + dlen, status);
	ret = odsm_fault_send(conn, &h, payload, plen, data, dlen);
	if (!ret && dst < c->nr_nodes) {
		atomic64_inc(&c->peers[dst].msgs_tx);
		atomic64_add(ODSM_WIRE_HDR_SIZE + plen + dlen,
			     &c->peers[dst].bytes_tx);
	}
	return ret;
}

void odsm_on_reply(struct odsm_cluster *c, const struct odsm_wire_hdr *h,
		   const u8 *payload)
{
	const struct odsm_msg_handler *mh;
	struct odsm_rpc_call *call;

	/* only the peer it was sent to may answer it; the call is in its
	 * caller's memory: read it only while it is in the array, under its
	 * lock (see odsm_fail_calls()), and take it out in the same step
	 */
	xa_lock(&c->calls);
	call = xa_load(&c->calls, h->seq);
	if (call && call->peer == h->src_node)
		__xa_erase(&c->calls, h->seq);
	else
		call = NULL;
	xa_unlock(&c->calls);
	if (!call) {
		odsm_stat_inc(ODSM_STAT_bad_msgs);
		return;
	}
	/*
	 * ours now: its caller waits for the completion.  A reply of
	 * another type than the request's (its handler's reply type: every
	 * node registers the same services) is malformed: the call fails,
	 * as a reply too long for it does, and is counted.
	 */
	mh = odsm_handler_of(call->type);
	if (!mh || h->type != mh->reply) {
		odsm_stat_inc(ODSM_STAT_bad_msgs);
		call->status = -EPROTO;
	} else if (h->len > call->cap) {
		odsm_stat_inc(ODSM_STAT_bad_msgs);
		call->status = -EPROTO;
	} else {
		memcpy(call->reply, payload, h->len);
		call->len = h->len;
		call->status = odsm_wire_errno(h->status);
	}
	complete(&call->done);
}

/*
 * Serve one request and answer it (-EAGAIN when refused), on the
 * workqueue or, for a quick one, in the receiver.
 */
static void serve_one(struct odsm_cluster *c, struct odsm_conn *conn,
		      const struct odsm_wire_hdr *h, const u8 *payload,
		      const struct odsm_msg_handler *mh, bool refused,
		      u64 arrived_ns)
{
	u8 reply[ODSM_REPLY_MAX];
	const void *data = NULL;
	u32 rlen = 0, dlen = 0;
	int status;

	if (refused)
		status = -EAGAIN;
	else
		status = mh->serve(conn, h, payload, reply, &rlen, &data,
				   &dlen);
	if (status == -EPROTO) {
		/* malformed payload: dropped and counted, no answer */
		odsm_stat_inc(ODSM_STAT_bad_msgs);
	} else {
		if (status) {
			rlen = 0;
			dlen = 0;
		}
		odsm_send_msg(c, conn, h->src_node, mh->reply,
			      ODSM_WIRE_F_REPLY, h->seq, status, reply, rlen,
			      data, dlen);
		if (!refused)
			odsm_stat_inc(ODSM_STAT_served);
	}
	/* the clock read only when someone listens: every request passes
	 * (one that arrived before the event was enabled says 0)
	 */
	if (trace_odsm_rpc_serve_enabled())
		trace_odsm_rpc_serve(h->src_node, h->type, h->seq, status,
				     arrived_ns ? ktime_get_ns() - arrived_ns :
						  0);
	kvfree(data);
}

/*
 * A request queued longer than this (ns) is not served: its caller, whose
 * own timeout is the cluster's, has given up on it or is about to, and an
 * operation applied after that (a WRITE over a newer one, an ALLOC nobody
 * learns of) is worse than none.  It is answered -EAGAIN (nothing ran),
 * which a caller still waiting sends again (rpc()).
 */
static u64 serve_deadline_ns(void)
{
	return (u64)odsm_cluster_timeout_ms() * NSEC_PER_MSEC * 3 / 4;
}

static void serve_work(struct work_struct *w)
{
	struct odsm_req *req = container_of(w, struct odsm_req, work);
	bool refuse = req->refused;

	if (!refuse && ktime_get_ns() - req->arrived_ns > serve_deadline_ns()) {
		odsm_stat_inc(ODSM_STAT_requests_expired);
		refuse = true;
	}
	/* its connection failed: its caller was failed with it (-EHOSTDOWN,
	 * odsm_fail_calls()), and no answer can reach it
	 */
	if (READ_ONCE(req->conn->dead)) {
		if (!refuse)
			odsm_stat_inc(ODSM_STAT_requests_expired);
	} else {
		serve_one(&odsm_cluster, req->conn, &req->h, req->payload,
			  req->mh, refuse, req->arrived_ns);
	}
	if (req->refused) {
		atomic_dec(&req->peer->refusals);
	} else {
		atomic_sub(req->h.len, &req->peer->req_bytes);
		atomic_dec(&req->peer->reqs);
	}
	odsm_conn_put(req->conn);
	kvfree(req);
}

/* ---- calls ------------------------------------------------------------ */

/* odsm_rpc(), to the incarnation inc of node only (0: any), sent only */
int odsm_rpc_start(struct odsm_rpc_call *call, u32 node, u64 inc, u8 type,
		   const void *payload, u32 plen, const void *data, u32 dlen,
		   void *reply, u32 cap)
{
	struct odsm_cluster *c = &odsm_cluster;
	struct odsm_conn *conn;
	int ret;

	*call = (struct odsm_rpc_call){ .peer = node, .reply = reply, .cap = cap,
				    .type = type };
	/*
	 * A leave in progress: the cluster is going away.  Held until the
	 * wait (a trylock: a caller with calls out never waits for a leave
	 * that waits for them).
	 */
	if (!down_read_trylock(&c->users))
		return -EHOSTDOWN;
	conn = odsm_peer_conn(c, node, true);
	if (!conn) {
		up_read(&c->users);
		odsm_stat_inc(ODSM_STAT_rpc_hostdown);
		return -EHOSTDOWN;
	}
	/* an up connection's peer_inc is fixed: its handshake is done */
	ret = -EREMCHG;
	if (inc && conn->peer_inc != inc)
		goto out;
	init_completion(&call->done);
	call->seq = atomic64_inc_return(&c->next_seq);
	/* before it is in the array: odsm_fail_calls() matches it */
	call->conn = conn;
	ret = xa_insert(&c->calls, call->seq, call, GFP_KERNEL);
	if (ret)
		goto out;
	/*
	 * A leave clears joined, then fails the calls in the array: a call
	 * inserted after that would wait a whole timeout on a peer that may
	 * be leaving too.  The array's lock orders the two: a call it did
	 * not see sees joined cleared here.
	 */
	if (!READ_ONCE(c->joined)) {
		if (xa_erase(&c->calls, call->seq) != call)
			wait_for_completion(&call->done);
		ret = -EHOSTDOWN;
		goto out;
	}
	call->start = ktime_get_ns();
	trace_odsm_rpc_send(node, type, call->seq, plen + dlen);
	ret = odsm_send_msg(c, conn, node, type, 0, call->seq, 0, payload,
			    plen, data, dlen);
	if (ret) {
		if (xa_erase(&c->calls, call->seq) != call)
			wait_for_completion(&call->done);
		goto out;
	}
	return 0;
out:
	odsm_conn_put(conn);
	up_read(&c->users);
	return ret;
}

int odsm_rpc_wait(struct odsm_rpc_call *call, u32 *rlen)
{
	struct odsm_cluster *c = &odsm_cluster;
	long left;
	int ret;

	left = wait_for_completion_killable_timeout(&call->done,
						    msecs_to_jiffies(c->timeout_ms));
	if (left <= 0) {
		if (xa_erase(&c->calls, call->seq) == call) {
			ret = left ? -EINTR : -ETIMEDOUT;
			if (!left) {
				odsm_stat_inc(ODSM_STAT_rpc_timeouts);
				trace_odsm_rpc_timeout(call->peer, call->type,
						       call->seq, ret,
						       ktime_get_ns() - call->start);
			}
			goto out;
		}
		/* a reply (or a failure) took the call first and is
		 * completing it right now: wait for that.  (A wait that
		 * succeeded consumed the completion: no second wait then.)
		 */
		wait_for_completion(&call->done);
	}
	ret = call->status;
	if (ret == -EHOSTDOWN)
		odsm_stat_inc(ODSM_STAT_rpc_hostdown);
	/* answered, with any status: the round trip was made (a failure
	 * from odsm_fail_calls() made none and is not in the histogram)
	 */
	trace_odsm_rpc_done(call->peer, call->type, call->seq, ret,
			    ret == -EHOSTDOWN ? ktime_get_ns() - call->start :
			    odsm_lat_record(ODSM_LAT_rpc, call->start));
	if (rlen)
		*rlen = call->len;
out:
	odsm_conn_put(call->conn);
	up_read(&c->users);
	return ret;
}

/*
 * A call, and its answer.  A refusal (-EAGAIN: the home served nothing --
 * its queue for us full, the request too old for its replay window or
 * queued past its deadline, an object that kept changing) is sent again,
 * under a new sequence number, after a pause that doubles up to 64 ms,
 * until the cluster's timeout has passed since the first send: a moment's
 * overload at the home is no error of the caller's (a lazy copy's fault
 * would be SIGBUS, a moved original's free lost).
 */
static int rpc(u32 node, u64 inc, u8 type, const void *payload, u32 plen,
	       const void *data, u32 dlen, void *reply, u32 cap, u32 *rlen)
{
	unsigned long end = 0;
	struct odsm_rpc_call call;
	unsigned int ms = 1;
	int ret;

	for (;;) {
		ret = odsm_rpc_start(&call, node, inc, type, payload, plen,
				     data, dlen, reply, cap);
		if (!ret)
			ret = odsm_rpc_wait(&call, rlen);
		if (ret != -EAGAIN)
			return ret;
		if (!end)
			end = jiffies +
			      msecs_to_jiffies(odsm_cluster_timeout_ms());
		if (time_after(jiffies, end) || fatal_signal_pending(current) ||
		    odsm_abandoned())
			return ret;
		odsm_stat_inc(ODSM_STAT_calls_retried);
		msleep(ms);
		ms = min(ms * 2, 64U);
	}
}

int odsm_rpc(u32 node, u8 type, const void *payload, u32 plen,
	     const void *data, u32 dlen, void *reply, u32 cap, u32 *rlen)
{
	return rpc(node, 0, type, payload, plen, data, dlen, reply, cap, rlen);
}

int odsm_rpc_inc(u32 node, u64 inc, u8 type, const void *payload, u32 plen,
		 const void *data, u32 dlen, void *reply, u32 cap, u32 *rlen)
{
	return rpc(node, inc, type, payload, plen, data, dlen, reply, cap,
		   rlen);
}

u64 odsm_peer_incarnation(u32 node, bool up_only)
{
	struct odsm_cluster *c = &odsm_cluster;
	u64 inc = 0;

	spin_lock(&c->lock);
	if (c->joined && node < c->nr_nodes &&
	    (!up_only || c->peers[node].state == ODSM_PEER_UP))
		inc = c->peers[node].incarnation;
	spin_unlock(&c->lock);
	return inc;
}

/* ---- for services (odsm_core.h) ---------------------------------------- */

struct odsm_conn *odsm_peer_conn_get(u32 node)
{
	struct odsm_cluster *c = &odsm_cluster;
	struct odsm_conn *conn;

	if (!down_read_trylock(&c->users))
		return NULL;
	conn = odsm_peer_conn(c, node, true);
	if (!conn)
		up_read(&c->users);
	return conn;
}

void odsm_peer_conn_put(struct odsm_conn *conn)
{
	odsm_conn_put(conn);
	up_read(&odsm_cluster.users);
}

int odsm_msg_send(struct odsm_conn *conn, u8 type, const void *payload,
		  u32 plen)
{
	return odsm_send_msg(&odsm_cluster, conn, conn->peer, type, 0, 0, 0,
			     payload, plen, NULL, 0);
}

const struct odsm_transport_ops *odsm_cluster_transport(void)
{
	struct odsm_cluster *c = &odsm_cluster;

	return READ_ONCE(c->joined) ? READ_ONCE(c->ops) : NULL;
}

bool odsm_cluster_queue(struct work_struct *work)
{
	struct odsm_cluster *c = &odsm_cluster;
	bool queued = false;

	/* the workqueue lives from join to the end of leave, which holds
	 * c->users for writing while it flushes and destroys it
	 */
	if (!down_read_trylock(&c->users))
		return false;
	if (READ_ONCE(c->joined) && c->wq)
		queued = queue_work(c->wq, work);
	up_read(&c->users);
	return queued;
}

bool odsm_cluster_hold(void)
{
	return down_read_trylock(&odsm_cluster.users);
}

void odsm_cluster_unhold(void)
{
	up_read(&odsm_cluster.users);
}

int odsm_home_of(u64 addr, u64 len, bool *local)
{
	const struct odsm_geom *g = &odsm_heap.geom;
	u32 node;

	if (!len || !odsm_in_heap(g, addr) || len > odsm_heap_end(g) - addr)
		return -EINVAL;
	node = odsm_node_of(g, addr);
	if (odsm_node_of(g, addr + len - 1) != node)
		return -EINVAL;
	*local = node == g->node_id;
	if (!*local && !READ_ONCE(odsm_cluster.joined))
		return -EINVAL;
	return node;
}

/* A request from a peer: served on the workqueue, which may sleep and send. */
void odsm_serve_request(struct odsm_cluster *c, struct odsm_conn *conn,
			const struct odsm_wire_hdr *h, const u8 *payload,
			const struct odsm_msg_handler *mh, bool refuse_it)
{
	/* src_node: the connection's peer, < nr_nodes (odsm_cluster_rx) */
	struct odsm_peer *p = &c->peers[h->src_node];
	bool refuse;
	struct odsm_req *req;

	/*
	 * A quick request where the receiver may send: served here, in
	 * arrival order, without a copy or a worker (struct
	 * odsm_msg_handler).  It holds up this connection's later messages
	 * only for as long as it takes.
	 */
	if (mh->quick && conn->ops->rx_serves && !refuse_it) {
		odsm_stat_inc(ODSM_STAT_served_in_rx);
		serve_one(c, conn, h, payload, mh, false,
			  trace_odsm_rpc_serve_enabled() ? ktime_get_ns() : 0);
		return;
	}
	/* the peer's, over its connections (see struct odsm_peer) */
	refuse = refuse_it || atomic_read(&p->reqs) >= ODSM_PEER_REQS_MAX ||
		 atomic_read(&p->req_bytes) + h->len > ODSM_PEER_REQ_BYTES_MAX;
	req = NULL;
	if (!refuse) {
		req = kvmalloc(struct_size(req, payload, h->len), ODSM_GFP_REQ);
		/* no memory for it now: refused as when too many wait */
		refuse = !req;
	}
	if (refuse) {
		odsm_stat_inc(ODSM_STAT_requests_refused);
		if (atomic_read(&p->refusals) >= ODSM_PEER_REFUSALS_MAX)
			return;		/* not read anyway: the caller times out */
		req = kmalloc(sizeof(*req), GFP_KERNEL);
	}
	if (!req)
		return;		/* the caller times out */
	INIT_WORK(&req->work, serve_work);
	req->mh = mh;
	kref_get(&conn->ref);
	req->conn = conn;
	req->peer = p;
	req->refused = refuse;
	req->arrived_ns = ktime_get_ns();	/* serve_work()'s deadline */
	req->h = *h;
	if (refuse) {
		atomic_inc(&p->refusals);
	} else {
		memcpy(req->payload, payload, h->len);
		atomic_inc(&p->reqs);
		atomic_add(h->len, &p->req_bytes);
	}
	queue_work(c->wq, &req->work);
}
