// SPDX-License-Identifier: GPL-2.0
/*
 * Cluster membership: the handshake that makes a connection a peer's,
 * what arrives on a connection (odsm_cluster_rx), the heartbeat tick,
 * join, leave and status; see odsm_cluster.h for the model.  Calls and
 * dispatch are odsm_call.c's, connections odsm_conn.c's, what registers
 * with the core odsm_core_reg.c's.
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
#include "odsm_core_pri.h"
#include "odsm_fault.h"
#include "odsm_hits.h"
#include "odsm_trace.h"

/* ---- peers ------------------------------------------------------------ */

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
		trace_odsm_auth_fail(id, ODSM_AUTH_HUNG_UP);
		pr_notice_ratelimited("node %u closed the connection after our challenge (another cluster key?)\n",
				      id);
	}
	WRITE_ONCE(conn->dead, true);
	spin_lock(&c->lock);
	if (id < c->nr_nodes && c->peers[id].conn == conn) {
		drop = conn;
		c->peers[id].conn = NULL;
		was_up = c->peers[id].state == ODSM_PEER_UP;
		if (was_up) {
			odsm_stat_inc(ODSM_STAT_peers_down);
			trace_odsm_peer_down(id);
		}
		c->peers[id].state = ODSM_PEER_DOWN;
	}
	spin_unlock(&c->lock);
	/* even one the peer no longer had: a call may have gone on it */
	odsm_fail_calls(c, id, conn, -EHOSTDOWN);
	if (drop)
		odsm_conn_put(drop);
	if (was_up)
		odsm_peer_event_down(id);
}

/*
 * The tick saw peer id silent for longer than limit: mark it down, unless
 * a new connection of it came up since the tick looked (peer_authed()
 * installs it with a fresh last_rx_ns under the same lock), which must
 * not be the one killed.
 */
static void peer_timed_out(struct odsm_cluster *c, u32 id, u64 limit)
{
	struct odsm_conn *conn = NULL;

	spin_lock(&c->lock);
	if (c->peers[id].state != ODSM_PEER_DOWN &&
	    ktime_get_ns() - c->peers[id].last_rx_ns > limit) {
		conn = c->peers[id].conn;
		if (conn)
			kref_get(&conn->ref);
	}
	spin_unlock(&c->lock);
	if (!conn)
		return;
	pr_notice("node %u silent for %u ms: marked down\n", id,
		  c->timeout_ms);
	odsm_conn_kill(conn);
	odsm_cluster_conn_failed(conn);
	odsm_conn_put(conn);
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
	return odsm_send_msg(c, conn, dst, ODSM_MSG_HELLO, 0, 0, 0, buf, n, NULL, 0);
}

/* ---- receiving ---------------------------------------------------------- */

/*
 * Each node's incarnation as this node saw it last ([0]) and the one it
 * saw before that ([1]), 0 for none: kept across this node's own leaves
 * and joins (the peers' array is not), for the module's life.  Reported
 * by ODSM_IOC_STATUS: libodsm's mutexes take a lock over from a holder
 * whose word names the incarnation before the one seen last (its node
 * left and joined again), and only then: a word of a newer incarnation
 * than this node has seen is of a live holder.  Under c->lock.
 */
static u64 seen_inc[ODSM_MAX_NODES][2];

static void seen_inc_note(u32 id, u64 incarnation)
{
	if (seen_inc[id][0] == incarnation)
		return;
	seen_inc[id][1] = seen_inc[id][0];
	seen_inc[id][0] = incarnation;
}

/*
 * The handshake is complete on conn for node id: the peer is up.  An
 * accepted connection replaces whatever older one the peer had (it
 * restarted, or its old connection died); a dialled one must still be
 * the peer's.
 */
static bool peer_authed(struct odsm_cluster *c, struct odsm_conn *conn,
			u32 id, u64 incarnation)
{
	struct odsm_conn *old = NULL;
	bool restarted;

	spin_lock(&c->lock);
	/*
	 * One that failed meanwhile found itself nobody's: not installed;
	 * nor one finishing while we leave (leave has emptied the slots
	 * already, and only drops the list's reference after that).
	 */
	if (READ_ONCE(conn->dead) || !c->joined) {
		spin_unlock(&c->lock);
		return false;
	}
	if (!conn->dialled) {
		old = c->peers[id].conn;
		/*
		 * Each accepted connection's handshake runs in its own
		 * receiver: a peer that restarted right after dialling can
		 * finish its new connection's handshake before the old one's
		 * receiver finishes the old.  The peer dials one connection
		 * at a time, so the one accepted last is the one it uses: an
		 * older one finishing now is stale, never the replacement.
		 */
		if (old && old->born_ns > conn->born_ns) {
			spin_unlock(&c->lock);
			pr_notice_ratelimited("node %u: an older connection finished its handshake after a newer one: closed\n",
					      id);
			return false;
		}
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
	seen_inc_note(id, incarnation);
	c->peers[id].last_rx_ns = ktime_get_ns();
	spin_unlock(&c->lock);

	if (old) {
		pr_info("node %u connected again: the old connection is closed\n",
			id);
		odsm_conn_kill(old);
		odsm_fail_calls(c, id, old, -EHOSTDOWN);
		odsm_conn_put(old);
	}
	if (restarted)
		odsm_peer_event_restarted(id);
	trace_odsm_peer_up(id, incarnation);
	pr_info("node %u is up (%pI4)\n", id, &c->peers[id].addr.sin_addr);
	odsm_peer_event_up(conn, id);
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
	trace_odsm_auth_fail(id, ODSM_AUTH_REFUSED);
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

/*
 * Answer a PING: on the workqueue, as a request is, so that the receiver
 * never waits for the send lock (see odsm_cluster.h).  PINGs that come
 * while one answer is queued share it: the last echo goes out.
 */
static void pong_work(struct work_struct *w)
{
	struct odsm_conn *conn = container_of(w, struct odsm_conn, pong);
	struct odsm_cluster *c = &odsm_cluster;
	struct odsm_wire_pong pong;
	u8 buf[ODSM_WIRE_PONG_SIZE];
	u32 n;

	pong.echo_ns = READ_ONCE(conn->pong_echo);
	mutex_lock(&odsm_heap.lock);
	pong.free_bytes = (u64)odsm_heap.pa.free_blocks << ODSM_BLOCK_SHIFT;
	mutex_unlock(&odsm_heap.lock);
	n = odsm_wire_put_pong(buf, &pong);
	odsm_send_msg(c, conn, conn->peer, ODSM_MSG_PONG, ODSM_WIRE_F_REPLY, 0,
		      0, buf, n, NULL, 0);
	odsm_conn_put(conn);
}

/*
 * Queue conn's work w (set up with fn the first time: *ready), holding a
 * reference to conn for it.  Only one thread queues each: the receiver
 * its PONG, the tick its PING.
 */
static void queue_conn_work(struct odsm_cluster *c, struct odsm_conn *conn,
			    struct work_struct *w, bool *ready,
			    work_func_t fn)
{
	if (!*ready) {
		INIT_WORK(w, fn);
		*ready = true;
	}
	/* the queued work holds a reference; leave flushes the queue */
	kref_get(&conn->ref);
	if (!queue_work(c->wq, w))
		odsm_conn_put(conn);
}

static void queue_pong(struct odsm_cluster *c, struct odsm_conn *conn,
		       u64 echo)
{
	WRITE_ONCE(conn->pong_echo, echo);
	queue_conn_work(c, conn, &conn->pong, &conn->pong_ready, pong_work);
}

/* Called by a receiver for every well-formed header and its payload. */
void odsm_cluster_rx(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		     u8 *payload)
{
	struct odsm_cluster *c = &odsm_cluster;
	struct odsm_peer *p = &c->peers[h->src_node];
	const struct odsm_msg_handler *mh;
	enum odsm_rx_age age;
	struct odsm_wire_ping ping;
	struct odsm_wire_pong pong;

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
		queue_pong(c, conn, ping.send_ns);
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
		odsm_on_reply(c, h, payload);
		return;
	}
	mh = odsm_handler_of(h->type);
	if (!mh)
		goto bad;	/* no service serves it here */
	if (mh->rx) {
		mh->rx(conn, h, payload);
		return;
	}
	age = odsm_fault_rx_fresh(conn, h);
	if (age != ODSM_RX_SEEN)	/* a replay is served once */
		odsm_serve_request(c, conn, h, payload, mh,
				   age == ODSM_RX_TOO_OLD);
	return;
bad:
	odsm_stat_inc(ODSM_STAT_bad_msgs);
}

/* ---- the tick: heartbeat, timeouts, re-dial, reaping ------------------ */

static void ping_work(struct work_struct *w)
{
	struct odsm_conn *conn = container_of(w, struct odsm_conn, ping);
	struct odsm_wire_ping ping = { .send_ns = READ_ONCE(conn->ping_ns) };
	u8 buf[ODSM_WIRE_PING_SIZE];
	u32 n = odsm_wire_put_ping(buf, &ping);

	odsm_send_msg(&odsm_cluster, conn, conn->peer, ODSM_MSG_PING, 0, 0, 0,
		      buf, n, NULL, 0);
	odsm_conn_put(conn);
}

/*
 * A PING to conn's peer, off the tick: a peer that died holds our send
 * (its RDMA credits never come back, its socket fills) for up to
 * timeout_ms, and a tick waiting there would find no other peer dead in
 * the meantime, nor this one (a read of a node that had just died once
 * took 8.3 s to fail, timeout_ms 5000).  A ping still under way when the
 * next is due is not doubled: the peer is not answering either.
 */
static void queue_ping(struct odsm_cluster *c, struct odsm_conn *conn,
		       u64 now)
{
	WRITE_ONCE(conn->ping_ns, now);
	queue_conn_work(c, conn, &conn->ping, &conn->ping_ready, ping_work);
}

/*
 * Stop and free dead connections (all of them when leaving), and kill
 * accepted ones that did not say HELLO within the timeout.
 */
static void reap_dead_conns(struct odsm_cluster *c, bool all)
{
	u64 limit = (u64)c->timeout_ms * NSEC_PER_MSEC, now;
	struct odsm_conn *conn, *tmp;
	LIST_HEAD(dead);

	spin_lock(&c->lock);
	/* under the lock: one listed after an earlier reading would look
	 * born in the future, and now - born_ns would wrap past the limit
	 */
	now = ktime_get_ns();
	list_for_each_entry_safe(conn, tmp, &c->conns, node) {
		if (!all && !conn->dead && !conn->dialled &&
		    !READ_ONCE(conn->authed) && now - conn->born_ns > limit) {
			/* no HELLO at all, or a handshake left unfinished */
			odsm_stat_inc(ODSM_STAT_handshake_timeouts);
			if (READ_ONCE(conn->hs_step)) {
				odsm_stat_inc(ODSM_STAT_auth_failures);
				trace_odsm_auth_fail(conn->peer,
						     ODSM_AUTH_TIMEOUT);
			} else {
				odsm_stat_inc(ODSM_STAT_bad_msgs);
			}
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

/* ---- admission of accepted connections ------------------------------- */

/* Is from the address of a node that dials this one (a higher id)? */
static bool dialer_addr(struct odsm_cluster *c, __be32 from)
{
	u32 i;

	for (i = c->self + 1; i < c->nr_nodes; i++)
		if (c->peers[i].addr.sin_addr.s_addr == from)
			return true;
	return false;
}

/* Accepted, and no handshake completed on it yet: anybody's. */
static bool conn_pending(struct odsm_conn *conn)
{
	return !conn->dialled && !READ_ONCE(conn->authed);
}

/*
 * Every unauthenticated connection holds a receiver thread, so there are
 * at most ODSM_PENDING_MAX of them, dead ones not yet reaped included
 * (they still hold theirs), and at most ODSM_PENDING_PER_SRC live ones
 * per source address.  A new connection from an address at its bound
 * closes the oldest one from there that is still silent (no HELLO yet)
 * ODSM_PENDING_GRACE_MS after it was accepted; if there is none, the new
 * one is refused.  A real peer's dial says HELLO at once, so once its
 * receiver read that it is never closed for a newer connection, and
 * before that it has its grace: it gets in while a flood of silent
 * connections from its address is held open, and a flood from elsewhere
 * cannot touch it (only members' addresses get here).
 *
 * May a connection from `from` be admitted now: 0 (with the connection
 * to close for it in *victim, or NULL), -EPERM (not a dialer's address,
 * or no cluster), -EBUSY (over a bound)?  Under c->lock.
 */
static int admission(struct odsm_cluster *c, __be32 from,
		     struct odsm_conn **victim)
{
	u64 grace = (u64)ODSM_PENDING_GRACE_MS * NSEC_PER_MSEC;
	u64 now = ktime_get_ns();
	struct odsm_conn *it, *old = NULL;
	u32 all = 0, same = 0;

	*victim = NULL;
	if (!c->joined || !dialer_addr(c, from))
		return -EPERM;
	/* the list is newest first: the last match is the oldest */
	list_for_each_entry(it, &c->conns, node) {
		if (!conn_pending(it))
			continue;
		all++;
		if (READ_ONCE(it->dead) || it->from != from)
			continue;
		same++;
		if (!READ_ONCE(it->hs_step) && now - it->born_ns > grace)
			old = it;
	}
	if (all >= ODSM_PENDING_MAX)
		return -EBUSY;
	if (same < ODSM_PENDING_PER_SRC)
		return 0;
	*victim = old;
	return old ? 0 : -EBUSY;
}

/*
 * The acceptor's first look at a new socket, before it costs a thread:
 * it reaps the connections closed since the tick last did (so that
 * closing ones to make room cannot pile threads up between ticks), then
 * asks whether the connection could be admitted.  Only the acceptor
 * admits, and in between the counts can only go down: an admission that
 * passes here fails in odsm_cluster_admit() only if the connection it
 * would close started its handshake meanwhile.
 */
int odsm_cluster_accept_from(__be32 from)
{
	struct odsm_cluster *c = &odsm_cluster;
	struct odsm_conn *victim;
	int ret;

	reap_dead_conns(c, false);
	spin_lock(&c->lock);
	ret = admission(c, from, &victim);
	spin_unlock(&c->lock);
	if (ret)
		odsm_stat_inc(ODSM_STAT_accept_refused);
	return ret;
}

int odsm_cluster_admit(struct odsm_conn *conn, __be32 from)
{
	struct odsm_cluster *c = &odsm_cluster;
	struct odsm_conn *victim;
	int ret;

	conn->from = from;
	spin_lock(&c->lock);
	ret = admission(c, from, &victim);
	if (!ret) {
		if (victim) {
			WRITE_ONCE(victim->dead, true);
			kref_get(&victim->ref);
		}
		list_add(&conn->node, &c->conns);
	}
	spin_unlock(&c->lock);
	if (ret) {
		odsm_stat_inc(ODSM_STAT_accept_refused);
		return ret;
	}
	if (victim) {
		odsm_stat_inc(ODSM_STAT_accept_evicted);
		odsm_conn_kill(victim);
		odsm_conn_put(victim);
	}
	return 0;
}

/* Dial a down peer and say HELLO; runs on the workqueue, off the tick. */
static void dial_work(struct work_struct *w)
{
	struct odsm_peer *p = container_of(w, struct odsm_peer, dial);
	struct odsm_cluster *c = &odsm_cluster;
	struct odsm_conn *conn = c->ops->dial(p->id);
	bool mine = false;

	/*
	 * Not one that died while dialling: its failure found it nobody's
	 * (odsm_cluster_conn_failed() marks it dead before it takes the
	 * lock), and installed it would hold the peer "connecting" for a
	 * whole timeout before the next dial.
	 */
	spin_lock(&c->lock);
	if (!IS_ERR(conn) && c->joined && !p->conn &&
	    !READ_ONCE(conn->dead)) {
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
	u32 i, state;
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
			peer_timed_out(c, i, limit);
			continue;
		}
		if (state != ODSM_PEER_UP)
			continue;
		conn = odsm_peer_conn(c, i, true);
		if (!conn)
			continue;
		queue_ping(c, conn, now);
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

/*
 * Reconfigure the node, never while it is in a cluster: the geometry is
 * what a join sized its peers by, and what peers checked in its HELLO.
 */
int odsm_cluster_set_config(const struct odsm_geom *g)
{
	struct odsm_cluster *c = &odsm_cluster;
	int ret;

	mutex_lock(&c->join_lock);
	ret = c->joined ? -EBUSY : odsm_heap_set_config(&odsm_heap, g);
	mutex_unlock(&c->join_lock);
	return ret;
}

int odsm_cluster_join(const struct odsm_join *j,
		      const struct odsm_node_addr *nodes, const u8 *key)
{
	struct odsm_cluster *c = &odsm_cluster;
	const struct odsm_transport_ops *ops;
	struct crypto_shash *hmac;
	struct odsm_peer *peers;
	u32 i, k, hb, to;
	int ret;

	if (j->transport != ODSM_TRANSPORT_TCP &&
	    j->transport != ODSM_TRANSPORT_RDMA)
		return -EINVAL;
	ops = odsm_transport_find(j->transport);
	if (!ops)	/* e.g. RDMA on a kernel without the RDMA CM */
		return -EPROTONOSUPPORT;
	hb = j->heartbeat_ms ? j->heartbeat_ms : 200;
	to = j->timeout_ms ? j->timeout_ms : 2000;
	if (hb > ODSM_HEARTBEAT_MS_MAX || to > ODSM_TIMEOUT_MS_MAX || to <= hb)
		return -EINVAL;
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
	/* the geometry cannot change under join_lock (set_config below) */
	if (j->nr_nodes != odsm_heap.geom.nr_nodes ||
	    odsm_heap.geom.node_id >= j->nr_nodes) {
		ret = -EINVAL;
		goto err_unlock;
	}
	c->self = odsm_heap.geom.node_id;
	peers[c->self].state = ODSM_PEER_SELF;
	c->nr_nodes = j->nr_nodes;
	c->transport = j->transport;
	c->ops = ops;
	c->heartbeat_ms = hb;
	c->timeout_ms = to;
	c->incarnation = get_random_u64();
	c->peers = peers;
	c->hmac = hmac;

	c->wq = alloc_workqueue("odsm", WQ_UNBOUND, 0);
	if (!c->wq) {
		ret = -ENOMEM;
		goto err_peers;
	}
	ret = c->ops->listen();
	if (ret)
		goto err_wq;
	spin_lock(&c->lock);
	c->joined = true;
	seen_inc_note(c->self, c->incarnation);
	spin_unlock(&c->lock);
	/* what ODSM_IOC_STATUS says of this node, for the mutexes */
	odsm_hits_node_inc(c->incarnation);
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
	odsm_hits_node_inc(0);
	c->ops->unlisten();
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
	odsm_hits_node_inc(0);
	for (i = 0; i < c->nr_nodes; i++)
		odsm_fail_calls(c, i, NULL, -EHOSTDOWN);
	down_write(&c->users);
	kthread_stop(c->ticker);
	put_task_struct(c->ticker);
	for (i = 0; i < c->nr_nodes; i++)
		cancel_work_sync(&c->peers[i].dial);
	c->ops->unlisten();
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
		odsm_fail_calls(c, i, NULL, -EHOSTDOWN);
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
	struct odsm_conn *conn = odsm_peer_conn(c, node, false);

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
		o->incarnation = (u32)seen_inc[i][0] |
				 (u64)(u32)seen_inc[i][1] << 32;
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
