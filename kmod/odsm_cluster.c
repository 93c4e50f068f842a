// SPDX-License-Identifier: GPL-2.0
/*
 * Cluster membership, heartbeat and request/reply calls; see
 * odsm_cluster.h for the model.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kthread.h>
#include <linux/random.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/ktime.h>
#include <crypto/algapi.h>
#include <crypto/hash.h>
#include "odsm.h"
#include "odsm_cluster.h"

struct odsm_cluster odsm_cluster = {
	.join_lock = __MUTEX_INITIALIZER(odsm_cluster.join_lock),
	.users = __RWSEM_INITIALIZER(odsm_cluster.users),
	.lock = __SPIN_LOCK_UNLOCKED(odsm_cluster.lock),
	.conns = LIST_HEAD_INIT(odsm_cluster.conns),
	.calls = XARRAY_INIT(odsm_cluster.calls, 0),
};

/* A call waiting for its reply. */
struct odsm_call {
	u32 peer;
	int status;
	void *reply;
	u32 cap, len;
	struct completion done;
};

/* A request to serve, with the connection to answer on. */
struct odsm_req {
	struct work_struct work;
	const struct odsm_msg_handler *mh;
	struct odsm_conn *conn;
	struct odsm_wire_hdr h;
	u8 payload[];
};

/* ---- what registers with the core ----------------------------------------- */

/*
 * Transports, message handlers and peer-event callbacks register at module
 * load and unload, while no cluster is joined (odsm_core.h): the lists and
 * the table are written under reg_lock and read without it by what a join
 * starts.
 */
static DEFINE_MUTEX(reg_lock);
static LIST_HEAD(transports);
static LIST_HEAD(peer_events);
static const struct odsm_msg_handler *handlers[256];

void odsm_transport_register(struct odsm_transport_ops *t)
{
	mutex_lock(&reg_lock);
	list_add_tail(&t->list, &transports);
	mutex_unlock(&reg_lock);
}

void odsm_transport_unregister(struct odsm_transport_ops *t)
{
	mutex_lock(&reg_lock);
	list_del(&t->list);
	mutex_unlock(&reg_lock);
}

static const struct odsm_transport_ops *transport_find(u32 id)
{
	const struct odsm_transport_ops *t, *found = NULL;

	mutex_lock(&reg_lock);
	list_for_each_entry(t, &transports, list)
		if (t->id == id)
			found = t;
	mutex_unlock(&reg_lock);
	return found;
}

int odsm_handler_register(const struct odsm_msg_handler *mh)
{
	int ret = 0;

	/* a request is served and answered, a one-way message received */
	if (!mh->type || !mh->serve == !mh->rx || !mh->serve != !mh->reply)
		return -EINVAL;
	mutex_lock(&reg_lock);
	if (handlers[mh->type])
		ret = -EBUSY;
	else
		WRITE_ONCE(handlers[mh->type], mh);
	mutex_unlock(&reg_lock);
	return ret;
}

void odsm_handler_unregister(const struct odsm_msg_handler *mh)
{
	mutex_lock(&reg_lock);
	if (handlers[mh->type] == mh)
		WRITE_ONCE(handlers[mh->type], NULL);
	mutex_unlock(&reg_lock);
}

void odsm_peer_events_register(struct odsm_peer_events *ev)
{
	mutex_lock(&reg_lock);
	list_add_tail(&ev->list, &peer_events);
	mutex_unlock(&reg_lock);
}

void odsm_peer_events_unregister(struct odsm_peer_events *ev)
{
	mutex_lock(&reg_lock);
	list_del(&ev->list);
	mutex_unlock(&reg_lock);
}

static void peer_up_event(struct odsm_conn *conn, u32 node)
{
	struct odsm_peer_events *ev;

	list_for_each_entry(ev, &peer_events, list)
		if (ev->up)
			ev->up(conn, node);
}

static void peer_restarted_event(u32 node)
{
	struct odsm_peer_events *ev;

	list_for_each_entry(ev, &peer_events, list)
		if (ev->restarted)
			ev->restarted(node);
}

static void peer_down_event(u32 node)
{
	struct odsm_peer_events *ev;

	list_for_each_entry(ev, &peer_events, list)
		if (ev->down)
			ev->down(node);
}

/* ---- connections ------------------------------------------------------ */

void odsm_conn_init(struct odsm_conn *conn, const struct odsm_transport_ops *ops,
		    void *xprt, u32 peer, bool dialled)
{
	kref_init(&conn->ref);		/* the conns list's reference */
	conn->ops = ops;
	conn->xprt = xprt;
	conn->peer = peer;
	conn->dialled = dialled;
	conn->born_ns = ktime_get_ns();
	get_random_bytes(conn->nonce, sizeof(conn->nonce));
	INIT_LIST_HEAD(&conn->node);
}

void odsm_conn_publish(struct odsm_cluster *c, struct odsm_conn *conn)
{
	spin_lock(&c->lock);
	list_add(&conn->node, &c->conns);
	spin_unlock(&c->lock);
}

static void conn_release(struct kref *ref)
{
	struct odsm_conn *conn = container_of(ref, struct odsm_conn, ref);

	conn->ops->release(conn);
	kfree(conn);
}

void odsm_conn_put(struct odsm_conn *conn)
{
	kref_put(&conn->ref, conn_release);
}

/* Stop all traffic: the receiver ends and the tick reaps it. */
void odsm_conn_kill(struct odsm_conn *conn)
{
	WRITE_ONCE(conn->dead, true);
	conn->ops->kill(conn);
}

int odsm_cluster_check_hdr(struct odsm_conn *conn, const u8 *raw,
			   struct odsm_wire_hdr *h)
{
	struct odsm_cluster *c = &odsm_cluster;
	int ret = odsm_wire_get_hdr(raw, h, c->self, c->nr_nodes);

	/* a known peer speaks only for itself; before HELLO, nothing else */
	if (!ret && conn->peer != U32_MAX && h->src_node != conn->peer)
		ret = -EPROTO;
	/* before the handshake completed, only the handshake */
	if (!ret && !READ_ONCE(conn->authed) && h->type != ODSM_MSG_HELLO) {
		odsm_stat_inc(ODSM_STAT_auth_failures);
		pr_notice_ratelimited("message type %u before authentication on a connection %s node %d over %s: closed\n",
				      h->type, conn->dialled ? "to" : "from",
				      odsm_conn_peer_id(conn),
				      conn->ops->name);
		WRITE_ONCE(conn->dead, true);	/* counted once, here */
		return -EACCES;
	}
	if (ret && h->magic == ODSM_WIRE_MAGIC &&
	    h->version != ODSM_WIRE_VERSION) {
		odsm_stat_inc(ODSM_STAT_bad_msgs);
		pr_notice_ratelimited("a peer speaks wire protocol version %u, this node speaks %u: connection closed\n",
				      h->version, ODSM_WIRE_VERSION);
	} else if (ret) {
		odsm_stat_inc(ODSM_STAT_bad_msgs);
		pr_notice_ratelimited("malformed message header (%d) on a connection %s node %d over %s: closed\n",
				      ret, conn->dialled ? "to" : "from",
				      odsm_conn_peer_id(conn),
				      conn->ops->name);
	}
	/* the receiver closes it: counted once, here */
	if (ret)
		WRITE_ONCE(conn->dead, true);
	return ret;
}

/* ---- peers ------------------------------------------------------------ */

/* Fail every call waiting on node: its peer is gone. */
static void fail_calls(struct odsm_cluster *c, u32 node, int err)
{
	struct odsm_call *call;
	unsigned long seq;

	xa_for_each(&c->calls, seq, call) {
		if (call->peer != node)
			continue;
		if (xa_erase(&c->calls, seq) != call)
			continue;	/* its reply won the race */
		call->status = err;
		complete(&call->done);
	}
}

/*
 * The connection failed or ended: if it was a peer's, the peer is down
 * until a new connection says HELLO.
 */
void odsm_cluster_conn_failed(struct odsm_conn *conn)
{
	struct odsm_cluster *c = &odsm_cluster;
	struct odsm_conn *drop = NULL;
	bool was_up = false;
	u32 id = conn->peer;

	/* the dialer walked away from our challenge: it lacks the key (we
	 * count our own refusals and kills where we make them)
	 */
	if (!conn->dialled && !READ_ONCE(conn->dead) &&
	    !READ_ONCE(conn->authed) &&
	    READ_ONCE(conn->hs_step) == ODSM_HELLO_CHALLENGE) {
		odsm_stat_inc(ODSM_STAT_auth_failures);
		pr_notice_ratelimited("node %u closed the connection after our challenge (another cluster key?)\n",
				      id);
	}
	WRITE_ONCE(conn->dead, true);
	spin_lock(&c->lock);
	if (id < c->nr_nodes && c->peers[id].conn == conn) {
		drop = conn;
		c->peers[id].conn = NULL;
		was_up = c->peers[id].state == ODSM_PEER_UP;
		if (was_up)
			odsm_stat_inc(ODSM_STAT_peers_down);
		c->peers[id].state = ODSM_PEER_DOWN;
	}
	spin_unlock(&c->lock);
	if (drop) {
		fail_calls(c, id, -EHOSTDOWN);
		odsm_conn_put(drop);
	}
	if (was_up)
		peer_down_event(id);
}

static void peer_timed_out(struct odsm_cluster *c, u32 id)
{
	struct odsm_conn *conn;

	spin_lock(&c->lock);
	conn = c->peers[id].conn;
	if (conn)
		kref_get(&conn->ref);
	spin_unlock(&c->lock);
	if (!conn)
		return;
	pr_notice("node %u silent for %u ms: marked down\n", id,
		  c->timeout_ms);
	odsm_conn_kill(conn);
	odsm_cluster_conn_failed(conn);
	odsm_conn_put(conn);
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
static struct odsm_conn *peer_conn(struct odsm_cluster *c, u32 node,
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

static int send_msg(struct odsm_cluster *c, struct odsm_conn *conn, u32 dst,
		    u8 type, u16 flags, u64 seq, s32 status, const void *payload,
		    u32 plen, const void *data, u32 dlen)
{
	struct odsm_wire_hdr h;
	int ret;

	fill_hdr(c, &h, dst, type, flags, seq, plen + dlen, status);
	ret = conn->ops->send(conn, &h, payload, plen, data, dlen);
	if (!ret && dst < c->nr_nodes) {
		atomic64_inc(&c->peers[dst].msgs_tx);
		atomic64_add(ODSM_WIRE_HDR_SIZE + plen + dlen,
			     &c->peers[dst].bytes_tx);
	}
	return ret;
}

/*
 * The proof of a handshake step: HMAC-SHA256 under the cluster key of what
 * odsm_wire_put_auth() lays out for it.  The dialer's nonce and
 * incarnation come first whichever side proves.
 */
static int auth_proof(struct odsm_cluster *c, struct odsm_conn *conn,
		      u32 step, u32 prover, u32 verifier, u8 *out)
{
	struct odsm_wire_auth a = {
		.step = step,
		.prover = prover,
		.verifier = verifier,
		.dialer_inc = conn->dialled ? c->incarnation : conn->peer_inc,
		.acceptor_inc = conn->dialled ? conn->peer_inc : c->incarnation,
		.dialer_nonce = conn->dialled ? conn->nonce : conn->peer_nonce,
		.acceptor_nonce = conn->dialled ? conn->peer_nonce : conn->nonce,
	};
	u8 buf[ODSM_WIRE_AUTH_SIZE];
	u32 n = odsm_wire_put_auth(buf, &a);

	return crypto_shash_tfm_digest(c->hmac, buf, n, out);
}

/* Does proof show that node id, on this connection, holds the key? */
static bool auth_check(struct odsm_cluster *c, struct odsm_conn *conn,
		       u32 step, u32 id, const u8 *proof)
{
	u8 want[ODSM_WIRE_PROOF_SIZE];
	bool ok;

	ok = !auth_proof(c, conn, step, id, c->self, want) &&
	     !crypto_memneq(want, proof, sizeof(want));
	memzero_explicit(want, sizeof(want));
	return ok;
}

/* Send our HELLO of this handshake step (a proof in steps 2 and 3). */
static int send_hello(struct odsm_cluster *c, struct odsm_conn *conn, u32 dst,
		      u32 step)
{
	struct odsm_wire_hello hello = {
		.node_id = c->self,
		.nr_nodes = c->nr_nodes,
		.heap_base = odsm_heap.geom.base,
		.part_size = odsm_heap.geom.part_size,
		.incarnation = c->incarnation,
		.step = step,
	};
	u8 buf[ODSM_WIRE_HELLO_SIZE];
	u32 n;
	int ret;

	memcpy(hello.nonce, conn->nonce, sizeof(hello.nonce));
	if (step != ODSM_HELLO_OFFER) {
		ret = auth_proof(c, conn, step, c->self, dst, hello.proof);
		if (ret)
			return ret;
	}
	n = odsm_wire_put_hello(buf, &hello);
	return send_msg(c, conn, dst, ODSM_MSG_HELLO, 0, 0, 0, buf, n, NULL, 0);
}

/* ---- receiving ---------------------------------------------------------- */

/*
 * The handshake is complete on conn for node id: the peer is up.  An
 * accepted connection replaces whatever the peer had (it restarted, or its
 * old connection died); a dialled one must still be the peer's.
 */
static bool peer_authed(struct odsm_cluster *c, struct odsm_conn *conn,
			u32 id, u64 incarnation)
{
	struct odsm_conn *old = NULL;
	bool restarted;

	spin_lock(&c->lock);
	if (!conn->dialled) {
		old = c->peers[id].conn;
		kref_get(&conn->ref);
		c->peers[id].conn = conn;
	} else if (c->peers[id].conn != conn) {
		spin_unlock(&c->lock);
		return false;
	}
	c->peers[id].state = ODSM_PEER_UP;
	/* a restarted peer hands its addresses out again from color 0 */
	restarted = c->peers[id].incarnation &&
		    c->peers[id].incarnation != incarnation;
	c->peers[id].incarnation = incarnation;
	c->peers[id].last_rx_ns = ktime_get_ns();
	spin_unlock(&c->lock);

	if (old) {
		pr_info("node %u connected again: the old connection is closed\n",
			id);
		odsm_conn_kill(old);
		fail_calls(c, id, -EHOSTDOWN);
		odsm_conn_put(old);
	}
	if (restarted)
		peer_restarted_event(id);
	pr_info("node %u is up (%pI4)\n", id, &c->peers[id].addr.sin_addr);
	peer_up_event(conn, id);
	return true;
}

/*
 * A HELLO: one step of the handshake (see odsm_cluster.h and
 * wire-protocol.rst).  Runs in the connection's receiver, the only writer
 * of the connection's handshake state.
 */
static void on_hello(struct odsm_cluster *c, struct odsm_conn *conn,
		     const struct odsm_wire_hdr *h, const u8 *payload)
{
	struct odsm_wire_hello hello;
	u32 id = h->src_node;
	const char *why;
	__be32 from;

	if (odsm_wire_get_hello(payload, h->len, &hello) ||
	    hello.node_id != id || hello.nr_nodes != c->nr_nodes ||
	    hello.heap_base != odsm_heap.geom.base ||
	    hello.part_size != odsm_heap.geom.part_size)
		goto bad;
	/* the connection must come from the address the table gives id */
	if (conn->ops->peer_ipv4(conn, &from) ||
	    from != c->peers[id].addr.sin_addr.s_addr)
		goto bad;
	/* who dials whom: higher ids dial lower ones */
	if (conn->dialled ? conn->peer != id : id < c->self)
		goto bad;

	why = "a HELLO out of order";
	if (conn->authed)
		goto refused;
	if (conn->dialled) {
		/* the acceptor's challenge: its nonce, and its proof */
		if (hello.step != ODSM_HELLO_CHALLENGE ||
		    READ_ONCE(conn->hs_step) != ODSM_HELLO_OFFER)
			goto refused;
		conn->peer_inc = hello.incarnation;
		memcpy(conn->peer_nonce, hello.nonce, sizeof(conn->peer_nonce));
		why = "a wrong proof of the cluster key";
		if (!auth_check(c, conn, ODSM_HELLO_CHALLENGE, id, hello.proof))
			goto refused;
		/* our proof goes out before anything else can */
		WRITE_ONCE(conn->authed, true);
		conn->hs_step = ODSM_HELLO_PROOF;
		if (send_hello(c, conn, id, ODSM_HELLO_PROOF) ||
		    !peer_authed(c, conn, id, hello.incarnation))
			odsm_conn_kill(conn);
		return;
	}

	switch (hello.step) {
	case ODSM_HELLO_OFFER:
		if (conn->hs_step)
			goto refused;
		spin_lock(&c->lock);
		conn->peer = id;	/* it speaks only for id from now on */
		spin_unlock(&c->lock);
		conn->peer_inc = hello.incarnation;
		memcpy(conn->peer_nonce, hello.nonce, sizeof(conn->peer_nonce));
		conn->hs_step = ODSM_HELLO_CHALLENGE;
		if (send_hello(c, conn, id, ODSM_HELLO_CHALLENGE))
			odsm_conn_kill(conn);
		return;
	case ODSM_HELLO_PROOF:
		/* the same dialer as in the offer, proving our challenge */
		why = "a proof that does not follow its offer";
		if (conn->hs_step != ODSM_HELLO_CHALLENGE ||
		    hello.incarnation != conn->peer_inc ||
		    memcmp(hello.nonce, conn->peer_nonce, sizeof(hello.nonce)))
			goto refused;
		why = "a wrong proof of the cluster key";
		if (!auth_check(c, conn, ODSM_HELLO_PROOF, id, hello.proof))
			goto refused;
		WRITE_ONCE(conn->authed, true);
		conn->hs_step = ODSM_HELLO_PROOF;
		if (!peer_authed(c, conn, id, hello.incarnation))
			odsm_conn_kill(conn);
		return;
	}
refused:
	odsm_stat_inc(ODSM_STAT_auth_failures);
	pr_notice_ratelimited("refused a handshake claiming node %u over %s: %s\n",
			      id, conn->ops->name, why);
	odsm_conn_kill(conn);
	return;
bad:
	odsm_stat_inc(ODSM_STAT_bad_msgs);
	pr_notice_ratelimited("refused a HELLO claiming node %u: wrong address, geometry or direction\n",
			      id);
	odsm_conn_kill(conn);
}

static void on_reply(struct odsm_cluster *c, const struct odsm_wire_hdr *h,
		     const u8 *payload)
{
	struct odsm_call *call = xa_load(&c->calls, h->seq);

	/* only the peer it was sent to may answer it */
	if (!call || call->peer != h->src_node ||
	    xa_cmpxchg(&c->calls, h->seq, call, NULL, 0) != call) {
		odsm_stat_inc(ODSM_STAT_bad_msgs);
		return;
	}
	if (h->len > call->cap) {
		call->status = -EPROTO;
	} else {
		memcpy(call->reply, payload, h->len);
		call->len = h->len;
		call->status = h->status;
	}
	complete(&call->done);
}

static void serve_work(struct work_struct *w)
{
	struct odsm_req *req = container_of(w, struct odsm_req, work);
	const struct odsm_msg_handler *mh = req->mh;
	struct odsm_cluster *c = &odsm_cluster;
	u8 reply[ODSM_REPLY_MAX];
	const void *data = NULL;
	u32 rlen = 0, dlen = 0;
	int status;

	status = mh->serve(req->conn, &req->h, req->payload, reply, &rlen,
			   &data, &dlen);
	if (status == -EPROTO) {
		/* malformed payload: dropped and counted, no answer */
		odsm_stat_inc(ODSM_STAT_bad_msgs);
	} else {
		if (status) {
			rlen = 0;
			dlen = 0;
		}
		send_msg(c, req->conn, req->h.src_node, mh->reply,
			 ODSM_WIRE_F_REPLY, req->h.seq, status, reply, rlen,
			 data, dlen);
		odsm_stat_inc(ODSM_STAT_served);
	}
	kvfree(data);
	odsm_conn_put(req->conn);
	kvfree(req);
}

/* Called by a receiver for every well-formed header and its payload. */
void odsm_cluster_rx(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		     u8 *payload)
{
	struct odsm_cluster *c = &odsm_cluster;
	struct odsm_peer *p = &c->peers[h->src_node];
	const struct odsm_msg_handler *mh;
	struct odsm_wire_ping ping;
	struct odsm_wire_pong pong;
	struct odsm_req *req;
	u8 buf[ODSM_WIRE_PONG_SIZE];
	u32 n;

	odsm_stat_inc(ODSM_STAT_msgs_rx);
	if (h->type == ODSM_MSG_HELLO) {
		on_hello(c, conn, h, payload);
		return;
	}
	atomic64_inc(&p->msgs_rx);
	atomic64_add(ODSM_WIRE_HDR_SIZE + h->len, &p->bytes_rx);
	spin_lock(&c->lock);
	p->last_rx_ns = ktime_get_ns();
	spin_unlock(&c->lock);

	switch (h->type) {
	case ODSM_MSG_PING:
		if (odsm_wire_get_ping(payload, h->len, &ping))
			goto bad;
		pong.echo_ns = ping.send_ns;
		mutex_lock(&odsm_heap.lock);
		pong.free_bytes = (u64)odsm_heap.pa.free_blocks << ODSM_BLOCK_SHIFT;
		mutex_unlock(&odsm_heap.lock);
		n = odsm_wire_put_pong(buf, &pong);
		send_msg(c, conn, h->src_node, ODSM_MSG_PONG, ODSM_WIRE_F_REPLY,
			 h->seq, 0, buf, n,
			 NULL, 0);
		return;
	case ODSM_MSG_PONG:
		if (odsm_wire_get_pong(payload, h->len, &pong))
			goto bad;
		spin_lock(&c->lock);
		p->rtt_ns = ktime_get_ns() - pong.echo_ns;
		p->free_bytes = pong.free_bytes;
		spin_unlock(&c->lock);
		return;
	}
	if (h->flags & ODSM_WIRE_F_REPLY) {
		on_reply(c, h, payload);
		return;
	}
	mh = READ_ONCE(handlers[h->type]);
	if (!mh)
		goto bad;	/* no service serves it here */
	if (mh->rx) {
		mh->rx(conn, h, payload);
		return;
	}
	/* a request: served on the workqueue, which may sleep and send */
	req = kvmalloc(struct_size(req, payload, h->len), GFP_KERNEL);
	if (!req)
		return;		/* the caller times out */
	INIT_WORK(&req->work, serve_work);
	req->mh = mh;
	kref_get(&conn->ref);
	req->conn = conn;
	req->h = *h;
	memcpy(req->payload, payload, h->len);
	queue_work(c->wq, &req->work);
	return;
bad:
	odsm_stat_inc(ODSM_STAT_bad_msgs);
}

/* ---- calls ------------------------------------------------------------ */

int odsm_rpc(u32 node, u8 type, const void *payload, u32 plen,
	     const void *data, u32 dlen, void *reply, u32 cap, u32 *rlen)
{
	struct odsm_cluster *c = &odsm_cluster;
	struct odsm_call call = { .peer = node, .reply = reply, .cap = cap };
	struct odsm_conn *conn;
	u64 seq;
	long left;
	int ret;

	/* a leave in progress: the cluster is going away */
	if (!down_read_trylock(&c->users))
		return -EHOSTDOWN;
	conn = peer_conn(c, node, true);
	if (!conn) {
		up_read(&c->users);
		odsm_stat_inc(ODSM_STAT_rpc_hostdown);
		return -EHOSTDOWN;
	}
	init_completion(&call.done);
	seq = atomic64_inc_return(&c->next_seq);
	ret = xa_insert(&c->calls, seq, &call, GFP_KERNEL);
	if (ret)
		goto out;
	ret = send_msg(c, conn, node, type, 0, seq, 0, payload, plen, data,
		       dlen);
	if (ret) {
		if (xa_erase(&c->calls, seq) != &call)
			wait_for_completion(&call.done);
		goto out;
	}
	left = wait_for_completion_killable_timeout(&call.done,
						    msecs_to_jiffies(c->timeout_ms));
	if (left <= 0) {
		if (xa_erase(&c->calls, seq) == &call) {
			ret = left ? -EINTR : -ETIMEDOUT;
			if (!left)
				odsm_stat_inc(ODSM_STAT_rpc_timeouts);
			goto out;
		}
		/* a reply (or a failure) took the call first and is
		 * completing it right now: wait for that.  (A wait that
		 * succeeded consumed the completion: no second wait then.)
		 */
		wait_for_completion(&call.done);
	}
	ret = call.status;
	if (ret == -EHOSTDOWN)
		odsm_stat_inc(ODSM_STAT_rpc_hostdown);
	if (rlen)
		*rlen = call.len;
out:
	odsm_conn_put(conn);
	up_read(&c->users);
	return ret;
}

/* ---- for services (odsm_core.h) ---------------------------------------- */

struct odsm_conn *odsm_peer_conn_get(u32 node)
{
	struct odsm_cluster *c = &odsm_cluster;
	struct odsm_conn *conn;

	if (!down_read_trylock(&c->users))
		return NULL;
	conn = peer_conn(c, node, true);
	if (!conn)
		up_read(&c->users);
	return conn;
}

void odsm_peer_conn_put(struct odsm_conn *conn)
{
	odsm_conn_put(conn);
	up_read(&odsm_cluster.users);
}

const struct odsm_transport_ops *odsm_conn_ops(const struct odsm_conn *conn)
{
	return conn->ops;
}

bool odsm_conn_dead(const struct odsm_conn *conn)
{
	return READ_ONCE(conn->dead);
}

void odsm_conn_hold(struct odsm_conn *conn)
{
	kref_get(&conn->ref);
}

int odsm_msg_send(struct odsm_conn *conn, u8 type, const void *payload,
		  u32 plen)
{
	return send_msg(&odsm_cluster, conn, conn->peer, type, 0, 0, 0,
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

/* ---- the tick: heartbeat, timeouts, re-dial, reaping ------------------ */

/*
 * Stop and free dead connections (all of them when leaving), and kill
 * accepted ones that did not say HELLO within the timeout.
 */
static void reap_dead_conns(struct odsm_cluster *c, bool all)
{
	u64 limit = (u64)c->timeout_ms * NSEC_PER_MSEC, now = ktime_get_ns();
	struct odsm_conn *conn, *tmp;
	LIST_HEAD(dead);

	spin_lock(&c->lock);
	list_for_each_entry_safe(conn, tmp, &c->conns, node) {
		if (!all && !conn->dead && !conn->dialled &&
		    !READ_ONCE(conn->authed) && now - conn->born_ns > limit) {
			/* no HELLO at all, or a handshake left unfinished */
			if (READ_ONCE(conn->hs_step))
				odsm_stat_inc(ODSM_STAT_auth_failures);
			else
				odsm_stat_inc(ODSM_STAT_bad_msgs);
			WRITE_ONCE(conn->dead, true);
		}
		if (all || READ_ONCE(conn->dead))
			list_move(&conn->node, &dead);
	}
	spin_unlock(&c->lock);
	list_for_each_entry_safe(conn, tmp, &dead, node) {
		odsm_conn_kill(conn);
		conn->ops->stop(conn);
		list_del(&conn->node);
		odsm_conn_put(conn);
	}
}

/* Dial a down peer and say HELLO; runs on the workqueue, off the tick. */
static void dial_work(struct work_struct *w)
{
	struct odsm_peer *p = container_of(w, struct odsm_peer, dial);
	struct odsm_cluster *c = &odsm_cluster;
	struct odsm_conn *conn = c->ops->dial(c, p->id);
	bool mine = false;

	spin_lock(&c->lock);
	if (!IS_ERR(conn) && c->joined && !p->conn) {
		kref_get(&conn->ref);
		p->conn = conn;
		p->state = ODSM_PEER_CONNECTING;
		/* the peer has one timeout to answer */
		p->last_rx_ns = ktime_get_ns();
		mine = true;
	}
	p->dialling = false;
	spin_unlock(&c->lock);
	if (IS_ERR(conn))
		return;
	if (mine) {
		WRITE_ONCE(conn->hs_step, ODSM_HELLO_OFFER);
		if (send_hello(c, conn, p->id, ODSM_HELLO_OFFER))
			odsm_conn_kill(conn);
	} else {
		odsm_conn_kill(conn);
	}
	odsm_conn_put(conn);
}

static void tick(struct odsm_cluster *c)
{
	u64 limit = (u64)c->timeout_ms * NSEC_PER_MSEC;
	struct odsm_wire_ping ping;
	u8 buf[ODSM_WIRE_PING_SIZE];
	u32 i, n, state;
	u64 last, now;

	for (i = 0; i < c->nr_nodes; i++) {
		struct odsm_conn *conn;
		bool dial = false;

		if (i == c->self)
			continue;
		now = ktime_get_ns();
		spin_lock(&c->lock);
		state = c->peers[i].state;
		last = c->peers[i].last_rx_ns;
		/* higher ids dial lower ones */
		if (state == ODSM_PEER_DOWN && i < c->self &&
		    !c->peers[i].dialling) {
			c->peers[i].dialling = true;
			dial = true;
		}
		spin_unlock(&c->lock);

		if (dial)
			queue_work(c->wq, &c->peers[i].dial);
		if (state == ODSM_PEER_DOWN)
			continue;
		if (now - last > limit) {
			peer_timed_out(c, i);
			continue;
		}
		if (state != ODSM_PEER_UP)
			continue;
		conn = peer_conn(c, i, true);
		if (!conn)
			continue;
		ping.send_ns = now;
		n = odsm_wire_put_ping(buf, &ping);
		send_msg(c, conn, i, ODSM_MSG_PING, 0, 0, 0, buf, n, NULL, 0);
		odsm_conn_put(conn);
	}
	reap_dead_conns(c, false);
}

static int ticker_thread(void *arg)
{
	struct odsm_cluster *c = arg;

	while (!kthread_should_stop()) {
		tick(c);
		schedule_timeout_interruptible(msecs_to_jiffies(c->heartbeat_ms));
	}
	return 0;
}

/* ---- join / leave / status ---------------------------------------------- */

int odsm_cluster_join(const struct odsm_join *j,
		      const struct odsm_node_addr *nodes, const u8 *key)
{
	struct odsm_cluster *c = &odsm_cluster;
	const struct odsm_transport_ops *ops;
	struct crypto_shash *hmac;
	struct odsm_peer *peers;
	u32 i, k;
	int ret;

	if (j->transport != ODSM_TRANSPORT_TCP &&
	    j->transport != ODSM_TRANSPORT_RDMA)
		return -EINVAL;
	ops = transport_find(j->transport);
	if (!ops)	/* e.g. RDMA on a kernel without the RDMA CM */
		return -EPROTONOSUPPORT;
	if (j->nr_nodes != odsm_heap.geom.nr_nodes || j->nr_nodes < 2)
		return -EINVAL;
	for (i = 0; i < j->nr_nodes; i++) {
		if (!nodes[i].ipv4 || !nodes[i].port || nodes[i].reserved0 ||
		    nodes[i].reserved[0] || nodes[i].reserved[1])
			return -EINVAL;
		for (k = 0; k < i; k++)
			if (nodes[k].ipv4 == nodes[i].ipv4 &&
			    nodes[k].port == nodes[i].port)
				return -EINVAL;
	}

	hmac = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(hmac)) {
		pr_err("no hmac(sha256) in this kernel (%ld): cannot join\n",
		       PTR_ERR(hmac));
		return PTR_ERR(hmac);
	}
	ret = crypto_shash_setkey(hmac, key, j->key_len);
	if (ret)
		goto err_hmac;
	peers = kcalloc(j->nr_nodes, sizeof(*peers), GFP_KERNEL);
	if (!peers) {
		ret = -ENOMEM;
		goto err_hmac;
	}
	for (i = 0; i < j->nr_nodes; i++) {
		peers[i].id = i;
		peers[i].addr.sin_family = AF_INET;
		peers[i].addr.sin_addr.s_addr = nodes[i].ipv4;
		peers[i].addr.sin_port = htons(nodes[i].port);
		peers[i].state = ODSM_PEER_DOWN;
		INIT_WORK(&peers[i].dial, dial_work);
	}

	mutex_lock(&c->join_lock);
	if (c->joined) {
		ret = -EBUSY;
		goto err_unlock;
	}
	c->self = odsm_heap.geom.node_id;
	peers[c->self].state = ODSM_PEER_SELF;
	c->nr_nodes = j->nr_nodes;
	c->transport = j->transport;
	c->ops = ops;
	c->heartbeat_ms = j->heartbeat_ms ? j->heartbeat_ms : 200;
	c->timeout_ms = j->timeout_ms ? j->timeout_ms : 2000;
	c->incarnation = get_random_u64();
	c->peers = peers;
	c->hmac = hmac;

	c->wq = alloc_workqueue("odsm", WQ_UNBOUND, 0);
	if (!c->wq) {
		ret = -ENOMEM;
		goto err_peers;
	}
	ret = c->ops->listen(c);
	if (ret)
		goto err_wq;
	spin_lock(&c->lock);
	c->joined = true;
	spin_unlock(&c->lock);
	c->ticker = kthread_run(ticker_thread, c, "odsm-tick");
	if (IS_ERR(c->ticker)) {
		ret = PTR_ERR(c->ticker);
		goto err_listen;
	}
	get_task_struct(c->ticker);
	mutex_unlock(&c->join_lock);
	pr_info("node %u joined a cluster of %u over %s (heartbeat %u ms, timeout %u ms)\n",
		c->self, c->nr_nodes, c->ops->name, c->heartbeat_ms,
		c->timeout_ms);
	return 0;

err_listen:
	spin_lock(&c->lock);
	c->joined = false;
	spin_unlock(&c->lock);
	c->ops->unlisten(c);
	reap_dead_conns(c, true);
err_wq:
	destroy_workqueue(c->wq);
err_peers:
	c->peers = NULL;
	c->hmac = NULL;
err_unlock:
	mutex_unlock(&c->join_lock);
	kfree(peers);
err_hmac:
	crypto_free_shash(hmac);
	return ret;
}

void odsm_cluster_leave(void)
{
	struct odsm_cluster *c = &odsm_cluster;
	u32 i;

	mutex_lock(&c->join_lock);
	if (!c->joined) {
		mutex_unlock(&c->join_lock);
		return;
	}
	/* no new calls, none in flight; then stop every thread and
	 * connection
	 */
	spin_lock(&c->lock);
	c->joined = false;
	spin_unlock(&c->lock);
	for (i = 0; i < c->nr_nodes; i++)
		fail_calls(c, i, -EHOSTDOWN);
	down_write(&c->users);
	kthread_stop(c->ticker);
	put_task_struct(c->ticker);
	for (i = 0; i < c->nr_nodes; i++)
		cancel_work_sync(&c->peers[i].dial);
	c->ops->unlisten(c);
	for (i = 0; i < c->nr_nodes; i++) {
		struct odsm_conn *conn;

		spin_lock(&c->lock);
		conn = c->peers[i].conn;
		c->peers[i].conn = NULL;
		c->peers[i].state = i == c->self ? ODSM_PEER_SELF :
						   ODSM_PEER_DOWN;
		spin_unlock(&c->lock);
		if (conn) {
			odsm_conn_kill(conn);
			odsm_conn_put(conn);
		}
		fail_calls(c, i, -EHOSTDOWN);
	}
	reap_dead_conns(c, true);
	/* requests being served drop their connections when done */
	destroy_workqueue(c->wq);
	c->wq = NULL;
	kfree(c->peers);
	c->peers = NULL;
	/* every receiver is stopped: nobody computes a proof any more */
	crypto_free_shash(c->hmac);
	c->hmac = NULL;
	c->nr_nodes = 0;
	c->transport = 0;
	up_write(&c->users);
	mutex_unlock(&c->join_lock);
	pr_info("left the cluster\n");
}

/* One-sided keys and registrations with node, where the transport has them. */
static void peer_onesided_counts(struct odsm_cluster *c, u32 node,
				 struct odsm_peer_info *o)
{
	struct odsm_conn *conn = peer_conn(c, node, false);

	if (!conn)
		return;
	if (conn->ops->counts)
		conn->ops->counts(conn, &o->keys, &o->regs);
	odsm_conn_put(conn);
}

int odsm_cluster_status(struct odsm_status *st, struct odsm_peer_info *out,
			u32 room)
{
	struct odsm_cluster *c = &odsm_cluster;
	u32 i;

	mutex_lock(&c->join_lock);
	st->transport = c->joined ? c->transport : 0;
	st->nr = c->joined ? c->nr_nodes : 0;
	for (i = 0; c->joined && i < c->nr_nodes && i < room; i++) {
		struct odsm_peer *p = &c->peers[i];
		struct odsm_peer_info *o = &out[i];

		memset(o, 0, sizeof(*o));
		o->node_id = i;
		o->transport = c->transport;
		o->ipv4 = p->addr.sin_addr.s_addr;
		spin_lock(&c->lock);
		o->state = p->state;
		o->rtt_ns = p->rtt_ns;
		o->free_bytes = p->free_bytes;
		spin_unlock(&c->lock);
		o->msgs_tx = atomic64_read(&p->msgs_tx);
		o->msgs_rx = atomic64_read(&p->msgs_rx);
		o->bytes_tx = atomic64_read(&p->bytes_tx);
		o->bytes_rx = atomic64_read(&p->bytes_rx);
		peer_onesided_counts(c, i, o);
	}
	mutex_unlock(&c->join_lock);
	return 0;
}
