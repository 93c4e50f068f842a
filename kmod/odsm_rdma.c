// SPDX-License-Identifier: GPL-2.0
/*
 * The RDMA transport: the RDMA connection manager (RDMA_PS_TCP, IPv4
 * addresses, the same port numbers as the TCP transport's table) and one
 * reliable-connected QP per peer pair.
 *
 * One QP per pair is enough: every message is a request or a reply
 * matched by its seq, so nothing needs more than the in-order, reliable
 * delivery an RC QP gives per pair - what one TCP stream gives the TCP
 * transport.  Requests are served on the cluster's workqueue, so a slow
 * request does not hold up the messages behind it.
 *
 * Messages: each odsm message (32-byte header + payload, at most
 * RDMA_MSG_MAX bytes) is one SEND_WITH_IMM from a DMA-mapped buffer into
 * one of RDMA_RECVS pre-posted receive buffers of RDMA_MSG_MAX bytes.
 *
 * Flow control by credits: a sender holds one credit per receive buffer
 * the peer has posted for it (RDMA_RECVS at the start) and spends one per
 * SEND.  The receiver copies each message out of its buffer and reposts
 * the buffer at once (in the CQ handler, which never waits), then owes the
 * sender a credit; owed credits ride in the immediate data of the next
 * SEND, or, once RDMA_CREDIT_BATCH are owed, in a zero-length credit-only
 * SEND.  A message needs two credits, a credit-only SEND one, so the last
 * credit is always there to return credits: two nodes that both ran out
 * cannot wait for each other.  Senders of messages take the credits in
 * the order they came (odsm_credit.h), and one waits as long as credits
 * keep coming back or SENDs keep completing: a connection that stood
 * still for timeout_ms, or a sender whose turn did not come in
 * RDMA_CREDIT_WAIT_MAX times that (at most RDMA_CREDIT_WAIT_CAP_MS),
 * fails the send and kills the connection.
 *
 * Receiving: the CQ handler (IB_POLL_WORKQUEUE) queues each message for
 * the connection's receiver thread, which validates and delivers it like
 * the TCP receiver; the thread may wait in a send (HELLO, PONG) without
 * holding up the credits that arrive on the CQ.  A reply, which never
 * waits, the CQ handler delivers itself when nothing is queued before it
 * (reply_here()).  Since credits come back as messages are copied out,
 * not as the thread takes them, what waits for it is bounded on its own:
 * past RDMA_RXQ_BYTES_MAX the connection is closed (a peer flooding a
 * receiver that waits in a send).  Holding credits back instead would be
 * the gentler bound, but two receivers waiting in sends, each holding back
 * the credits the other waits for, would wait for each other.
 *
 * Teardown: kill marks the connection broken and disconnects from a work
 * item (rdma_disconnect sleeps); stop drains the QP, frees the verbs
 * resources and the CM id, stops the receiver and only then cancels the
 * work item (the drain's completions may queue it again); release does
 * the same for a connection never stopped and frees what is left.  A
 * device going away (ib_client remove, which runs before the RDMA CM's
 * own) tears down the listener and every connection on it at once; the
 * cluster sees the peers fail.
 *
 * Before the handshake: a connection request is accepted only from a
 * member's address (not our own: that is the loopback pair's, which has
 * its own check in odsm_rdma_loop.c), and only while there are places for
 * unauthenticated connections (unauth_place_get); a connection whose
 * receiver found a bad message or refused its handshake takes nothing
 * more (recv_done).
 *
 * One-sided READ, WRITE and atomics, and the registrations behind them,
 * are in odsm_rdma_onesided.c; the loopback pair, a connection of the
 * node to itself through which its own device runs the atomics on its own
 * words that must be atomic against peers' one-sided ones, in
 * odsm_rdma_loop.c.
 *
 * Locks: odsm_rdma_lock (the list of connections, the listener) and loop_lock
 * (the loopback pair) are mutexes taken outside any connection's locks;
 * loop_acc_lock (a spinlock) only guards the list of accepted loopback
 * ends.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kthread.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/gfp.h>
#include <linux/sched/task.h>
#include "odsm_rdma.h"
#include "odsm_fault.h"

/* The accepting side: its id is NULL once gone (leave or device removal). */
struct odsm_rdma_listener {
	struct rdma_cm_id *id;		/* under odsm_rdma_lock */
};

DEFINE_MUTEX(odsm_rdma_lock);		/* odsm_rdma_conns, rdma_lis.id */
LIST_HEAD(odsm_rdma_conns);		/* connections with resources */
static struct odsm_rdma_listener rdma_lis;	/* static: CM ids point at it */

static void disc_work(struct work_struct *w);

/* ---- sending ------------------------------------------------------------- */

static struct odsm_rdma_tx *tx_alloc(u32 len)
{
	struct odsm_rdma_tx *t = kmalloc(sizeof(*t), GFP_KERNEL);

	if (!t)
		return NULL;
	t->len = len;
	if (len > PAGE_SIZE)
		t->buf = alloc_pages_exact(len, GFP_KERNEL | __GFP_NOWARN);
	else
		t->buf = kmalloc(len, GFP_KERNEL);
	if (!t->buf) {
		kfree(t);
		return NULL;
	}
	return t;
}

static void tx_free(struct odsm_rdma_tx *t)
{
	if (t->len > PAGE_SIZE)
		free_pages_exact(t->buf, t->len);
	else
		kfree(t->buf);
	kfree(t);
}

/*
 * A message's credit: its ticket's turn, two credits' room (spending one)
 * and a send slot; the credits owed to the peer ride along in *imm.
 * 1 taken, 0 not yet, -1 the connection is broken.
 */
static int take_credit(struct odsm_rdma_conn *x, u32 ticket, u32 *imm)
{
	bool next = false;
	int ret = 0;

	spin_lock(&x->msg.lock);
	if (READ_ONCE(x->broken)) {
		ret = -1;
	} else if (odsm_credit_take_msg(&x->msg.k, ticket, imm)) {
		next = odsm_credit_queued(&x->msg.k);
		ret = 1;
	}
	spin_unlock(&x->msg.lock);
	/* the next ticket's turn: it may find a credit left */
	if (next)
		wake_up_all(&x->msg.tx_wait);
	return ret;
}

/*
 * Wait for a message's credit, in turn.  Under load a sender waits longer
 * than timeout_ms for its turn while the credits keep coming; the wait
 * fails when the connection stood still (no credit back, no SEND
 * completed, none waiting to be taken) for timeout_ms, -ETIMEDOUT, or
 * when the turn did not come in RDMA_CREDIT_WAIT_MAX times that, at most
 * RDMA_CREDIT_WAIT_CAP_MS (never less than timeout_ms), -EBUSY: a peer
 * that returns credits too slowly to serve its senders (the two-way
 * test's 56 threads a side wait a few seconds at most), and a bound on
 * the uninterruptible wait, which a leave waits behind too.  The sleeps
 * end at the stall's deadline, so a stall is told within timeout_ms of
 * the last movement (and 20 ms).  1 taken, -EHOSTDOWN broken.
 */
static int wait_credit(struct odsm_rdma_conn *x, u32 *imm)
{
	unsigned long limit = msecs_to_jiffies(x->timeout_ms);
	unsigned long most = max(limit, min(RDMA_CREDIT_WAIT_MAX * limit,
		msecs_to_jiffies(RDMA_CREDIT_WAIT_CAP_MS)));
	unsigned long end = jiffies + most, until, nap;
	bool stalled;
	u32 ticket;
	int got;

	spin_lock(&x->msg.lock);
	ticket = odsm_credit_ticket(&x->msg.k);
	spin_unlock(&x->msg.lock);
	for (;;) {
		spin_lock(&x->msg.lock);
		until = odsm_credit_deadline(&x->msg.k, limit);
		spin_unlock(&x->msg.lock);
		if (time_before(end, until))
			until = end;
		nap = msecs_to_jiffies(20);
		if (time_after(until, jiffies + nap))
			nap = until - jiffies;
		wait_event_timeout(x->msg.tx_wait,
				   (got = take_credit(x, ticket, imm)) != 0,
				   nap);
		if (got)
			return got > 0 ? got : -EHOSTDOWN;
		spin_lock(&x->msg.lock);
		stalled = odsm_credit_stalled(&x->msg.k, jiffies, limit);
		spin_unlock(&x->msg.lock);
		if (stalled)
			return -ETIMEDOUT;
		if (!time_before(jiffies, end))
			return -EBUSY;
	}
}

/*
 * Return owed credits in a zero-length SEND when enough are owed.  From
 * the CQ handler only (it never waits): the QP exists while it runs.
 */
static void send_credits(struct odsm_rdma_conn *x)
{
	struct ib_send_wr wr = {
		.wr_cqe = &x->msg.credit_cqe,
		.opcode = IB_WR_SEND_WITH_IMM,
		.send_flags = IB_SEND_SIGNALED,
	};
	bool take;
	u32 imm;

	spin_lock(&x->msg.lock);
	take = !READ_ONCE(x->broken) &&
	       odsm_credit_take_return(&x->msg.k, RDMA_CREDIT_BATCH, &imm);
	spin_unlock(&x->msg.lock);
	if (!take)
		return;
	wr.ex.imm_data = cpu_to_be32(imm);
	if (ib_post_send(x->qp, &wr, NULL)) {
		pr_notice_ratelimited("rdma: credits not returned (send queue full): connection closed\n");
		rdma_fail(x);
	}
}

/* A SEND completed: its slot is free again. */
static void sent(struct odsm_rdma_conn *x, struct ib_wc *wc)
{
	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_notice_ratelimited("rdma send failed: %s\n",
					      ib_wc_status_msg(wc->status));
		rdma_fail(x);
	}
	spin_lock(&x->msg.lock);
	odsm_credit_sent(&x->msg.k, jiffies);
	spin_unlock(&x->msg.lock);
	wake_up_all(&x->msg.tx_wait);
	send_credits(x);
}

static void send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct odsm_rdma_tx *t = container_of(wc->wr_cqe, struct odsm_rdma_tx, cqe);
	struct odsm_rdma_conn *x = t->x;

	ib_dma_unmap_single(x->dev, t->dma, t->len, DMA_TO_DEVICE);
	tx_free(t);
	sent(x, wc);
}

static void credit_done(struct ib_cq *cq, struct ib_wc *wc)
{
	sent(container_of(wc->wr_cqe, struct odsm_rdma_conn, msg.credit_cqe), wc);
}

/*
 * The data QP as the device sees it, beside our credits, when a
 * connection stalls or its peer ends it: the next PSN it sends and the
 * next it expects, to read against the peer's line.  PSNs we sent that
 * the peer does not expect yet were lost on the way or are held up at
 * its responder (which passes a READ's PSNs only when the READ's last
 * response has gone).  res_sem is only tried: the CM handler calls
 * this, and the teardown waits for the CM's handlers under it.
 */
void odsm_rdma_qp_report(struct odsm_rdma_conn *x, const char *why)
{
	struct ib_qp_init_attr init;
	struct ib_qp_attr a;
	int ret = -EAGAIN;
	u32 qpn = 0;

	if (down_read_trylock(&x->res_sem)) {
		ret = -ENODEV;
		if (!x->torn) {
			qpn = x->qp->qp_num;
			ret = ib_query_qp(x->qp, &a, IB_QP_STATE |
					  IB_QP_SQ_PSN | IB_QP_RQ_PSN, &init);
		}
		up_read(&x->res_sem);
	}
	if (ret) {
		pr_notice_ratelimited("rdma %s node %d: QP not read (%d)\n",
				      why, odsm_conn_peer_id(x->conn), ret);
		return;
	}
	pr_notice_ratelimited("rdma %s node %d: QP %u (state %d) sends PSN %u next, expects %u; credits %u, owed %u, send slots free %u of %u; one-sided operations %d (READs %d)\n",
			      why, odsm_conn_peer_id(x->conn), qpn,
			      a.qp_state, a.sq_psn, a.rq_psn,
			      READ_ONCE(x->msg.k.credits), READ_ONCE(x->msg.k.owed),
			      READ_ONCE(x->msg.k.sq_free), RDMA_SENDS,
			      (int)hweight_long(READ_ONCE(x->os.busy)),
			      atomic_read(&x->os.reads));
}

static int rdma_send(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		     const void *payload, u32 plen, const void *data, u32 dlen)
{
	struct odsm_rdma_conn *x = rc(conn);
	u32 total = ODSM_WIRE_HDR_SIZE + plen + dlen, imm = 0;
	struct ib_send_wr wr = {
		.opcode = IB_WR_SEND_WITH_IMM,
		.send_flags = IB_SEND_SIGNALED,
		.num_sge = 1,
	};
	struct ib_sge sge;
	struct odsm_rdma_tx *t;
	int got, ret;

	if (total > RDMA_MSG_MAX)
		return -EMSGSIZE;
	if (READ_ONCE(conn->dead) || READ_ONCE(x->broken))
		return -EHOSTDOWN;
	t = tx_alloc(total);
	if (!t)
		return -ENOMEM;
	odsm_wire_put_hdr(t->buf, h);
	if (plen)
		memcpy(t->buf + ODSM_WIRE_HDR_SIZE, payload, plen);
	if (dlen)
		memcpy(t->buf + ODSM_WIRE_HDR_SIZE + plen, data, dlen);

	/* a message leaves the last credit for returning credits */
	got = wait_credit(x, &imm);
	if (got < 0) {
		tx_free(t);
		if (got == -EHOSTDOWN)
			return got;
		if (got == -EBUSY)
			pr_notice_ratelimited("rdma send to node %d: its turn for a credit did not come (timeout_ms %u): connection closed\n",
					      odsm_conn_peer_id(conn), x->timeout_ms);
		else
			pr_notice_ratelimited("rdma send to node %d: no credit back and no send completed for %u ms: connection closed\n",
					      odsm_conn_peer_id(conn), x->timeout_ms);
		odsm_rdma_qp_report(x, "stalled to");
		odsm_conn_kill(conn);
		return -ETIMEDOUT;
	}

	down_read(&x->res_sem);
	if (x->torn)
		goto err_unlock;
	t->x = x;
	t->cqe.done = send_done;
	t->dma = ib_dma_map_single(x->dev, t->buf, total, DMA_TO_DEVICE);
	if (ib_dma_mapping_error(x->dev, t->dma))
		goto err_kill;
	sge.addr = t->dma;
	sge.length = total;
	sge.lkey = x->pd->local_dma_lkey;
	wr.wr_cqe = &t->cqe;
	wr.sg_list = &sge;
	wr.ex.imm_data = cpu_to_be32(imm);
	ret = ib_post_send(x->qp, &wr, NULL);
	if (ret) {
		ib_dma_unmap_single(x->dev, t->dma, total, DMA_TO_DEVICE);
		pr_notice_ratelimited("rdma SEND not posted (%d): connection closed\n",
				      ret);
		goto err_kill;
	}
	up_read(&x->res_sem);
	odsm_stat_inc(ODSM_STAT_msgs_tx);
	return 0;

err_kill:
	up_read(&x->res_sem);
	tx_free(t);
	/* a lost message or credit: the connection cannot go on */
	odsm_conn_kill(conn);
	return -EHOSTDOWN;
err_unlock:
	up_read(&x->res_sem);
	tx_free(t);
	return -EHOSTDOWN;
}

/* ---- receiving ----------------------------------------------------------- */

static int post_recv(struct odsm_rdma_conn *x, struct odsm_rdma_rbuf *r)
{
	struct ib_sge sge = {
		.addr = r->dma,
		.length = RDMA_MSG_MAX,
		.lkey = x->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &r->cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	ib_dma_sync_single_for_device(x->dev, r->dma, RDMA_MSG_MAX,
				      DMA_FROM_DEVICE);
	return ib_post_recv(x->qp, &wr, NULL);
}

/*
 * Deliver the message in buf here, in the completion handler, if it is a
 * reply or a PONG on an authenticated connection with nothing queued for
 * the receiver thread: true when it was delivered, or was malformed (the
 * connection is then dead, as the thread would have made it).  A reply
 * only completes its caller's call (odsm_on_reply(): a lookup under a
 * spinlock and a copy, never a wait), and handing it to the thread cost
 * every round trip a copy and a wake-up.  Requests still go to the
 * thread, which may send; a reply overtakes none of the messages queued
 * before it, and one the thread took already is served concurrently, as
 * on the workqueue.  The credits it carries are taken by the caller after.
 */
static bool reply_here(struct odsm_rdma_conn *x, u8 *buf, u32 len)
{
	struct odsm_conn *conn = x->conn;
	struct odsm_wire_hdr h;
	bool queued;

	if (len < ODSM_WIRE_HDR_SIZE || !READ_ONCE(conn->authed) ||
	    !odsm_wire_hdr_is_reply(buf))
		return false;
	spin_lock(&x->msg.lock);
	queued = !list_empty(&x->msg.rxq);
	spin_unlock(&x->msg.lock);
	if (queued)
		return false;
	if (odsm_cluster_check_hdr(conn, buf, &h))
		goto bad;
	if (len != ODSM_WIRE_HDR_SIZE + h.len) {
		odsm_stat_inc(ODSM_STAT_bad_msgs);
		goto bad;
	}
	if (h.type != ODSM_MSG_PONG)
		odsm_stat_inc(ODSM_STAT_replies_in_cq);
	odsm_cluster_rx(conn, &h, h.len ? buf + ODSM_WIRE_HDR_SIZE : NULL);
	return true;

bad:
	/* the thread sees it (rx_ready) and fails the connection */
	WRITE_ONCE(conn->dead, true);
	rdma_fail(x);
	return true;
}

/*
 * A SEND arrived: take its credits, deliver a reply (reply_here()) or copy
 * the message out for the receiver thread, repost the buffer and owe the
 * peer a credit for it.
 */
static void recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct odsm_rdma_rbuf *r = container_of(wc->wr_cqe, struct odsm_rdma_rbuf, cqe);
	struct odsm_rdma_conn *x = r->x;
	u32 len = wc->byte_len, imm, given;
	struct odsm_rdma_msg *m = NULL;
	bool here = false, ok;

	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_notice_ratelimited("rdma receive failed: %s\n",
					      ib_wc_status_msg(wc->status));
		rdma_fail(x);
		return;
	}
	/*
	 * A connection that is over (a bad header, a refused handshake, a
	 * failure) takes nothing more: no copy, no buffer reposted, no
	 * credit returned, so a peer that goes on sending after its first
	 * bad message is stopped by the missing credits and buffers instead
	 * of filling our memory until the tick reaps the connection.
	 */
	if (READ_ONCE(x->broken) || READ_ONCE(x->conn->dead)) {
		rdma_fail(x);
		return;
	}
	if (!(wc->wc_flags & IB_WC_WITH_IMM)) {
		pr_notice_ratelimited("rdma: a message of %u bytes without its credits: connection closed\n",
				      len);
		goto out_bad;
	}
	/*
	 * Only a SEND is a message: a peer holding a key may WRITE with
	 * immediate into a block of ours, which consumes a receive buffer
	 * whose bytes (stale, or never written) are no message of its
	 */
	if (wc->opcode != IB_WC_RECV) {
		pr_notice_ratelimited("rdma: a completion of opcode %d where a message was expected: connection closed\n",
				      wc->opcode);
		goto out_bad;
	}
	imm = be32_to_cpu(wc->ex.imm_data);
	if (len) {
		ib_dma_sync_single_for_cpu(x->dev, r->dma, len,
					   DMA_FROM_DEVICE);
		here = reply_here(x, r->buf, len);
		if (READ_ONCE(x->broken))
			return;
	}
	if (len && !here) {
		m = kvmalloc(struct_size(m, data, len), GFP_KERNEL);
		if (!m) {
			rdma_fail(x);
			return;
		}
		m->len = len;
		memcpy(m->data, r->buf, len);
	}
	spin_lock(&x->msg.lock);
	/* a peer returns no more than it was given */
	given = RDMA_RECVS - x->msg.k.credits;
	ok = odsm_credit_returned(&x->msg.k, imm, RDMA_RECVS, jiffies);
	spin_unlock(&x->msg.lock);
	if (!ok) {
		pr_notice_ratelimited("rdma: %u credits returned, %u outstanding: connection closed\n",
				      imm, given);
		goto out_bad;
	}
	if (READ_ONCE(x->broken) || post_recv(x, r)) {
		kvfree(m);
		rdma_fail(x);
		return;
	}
	spin_lock(&x->msg.lock);
	if (m && x->msg.rxq_bytes + len > RDMA_RXQ_BYTES_MAX) {
		spin_unlock(&x->msg.lock);
		pr_notice_ratelimited("rdma: %u MiB of messages wait for the receiver: connection closed\n",
				      RDMA_RXQ_BYTES_MAX >> 20);
		goto out_bad;
	}
	odsm_credit_owe(&x->msg.k);
	if (m) {
		list_add_tail(&m->node, &x->msg.rxq);
		x->msg.rxq_bytes += len;
	}
	spin_unlock(&x->msg.lock);
	if (m)
		wake_up(&x->msg.rx_wait);
	if (imm)
		wake_up_all(&x->msg.tx_wait);
	send_credits(x);
	return;

out_bad:
	kvfree(m);
	odsm_stat_inc(ODSM_STAT_bad_msgs);
	rdma_fail(x);
}

static struct odsm_rdma_msg *rx_pop(struct odsm_rdma_conn *x)
{
	struct odsm_rdma_msg *m;

	spin_lock(&x->msg.lock);
	m = list_first_entry_or_null(&x->msg.rxq, struct odsm_rdma_msg, node);
	if (m) {
		list_del(&m->node);
		x->msg.rxq_bytes -= m->len;
	}
	spin_unlock(&x->msg.lock);
	return m;
}

static bool rx_ready(struct odsm_conn *conn)
{
	struct odsm_rdma_conn *x = rc(conn);

	return !list_empty_careful(&x->msg.rxq) || READ_ONCE(x->broken) ||
	       READ_ONCE(conn->dead) || kthread_should_stop();
}

/* Deliver one message; false ends the connection. */
static bool rx_one(struct odsm_conn *conn, struct odsm_rdma_msg *m)
{
	struct odsm_wire_hdr h;

	if (m->len < ODSM_WIRE_HDR_SIZE) {
		odsm_stat_inc(ODSM_STAT_bad_msgs);
		return false;
	}
	if (odsm_cluster_check_hdr(conn, m->data, &h))
		return false;
	if (m->len != ODSM_WIRE_HDR_SIZE + h.len) {
		odsm_stat_inc(ODSM_STAT_bad_msgs);
		pr_notice_ratelimited("rdma message of %u bytes, its header says %u: connection closed\n",
				      m->len, ODSM_WIRE_HDR_SIZE + h.len);
		return false;
	}
	odsm_cluster_rx(conn, &h, h.len ? m->data + ODSM_WIRE_HDR_SIZE : NULL);
	return true;
}

static int rdma_rx_thread(void *arg)
{
	struct odsm_conn *conn = arg;
	struct odsm_rdma_conn *x = rc(conn);
	struct odsm_rdma_msg *m;
	bool ok;

	for (;;) {
		wait_event_interruptible(x->msg.rx_wait, rx_ready(conn));
		if (READ_ONCE(conn->dead) || kthread_should_stop())
			break;
		/* what arrived before a failure is still delivered */
		m = rx_pop(x);
		if (!m) {
			if (READ_ONCE(x->broken))
				break;
			continue;
		}
		ok = rx_one(conn, m);
		kvfree(m);
		if (!ok)
			break;
	}
	/* take nothing more (recv_done) while the tick comes to reap it */
	rdma_fail(x);
	odsm_cluster_conn_failed(conn);
	/* the tick (or leave) stops us: wait for it */
	while (!kthread_should_stop()) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (!kthread_should_stop())
			schedule();
		__set_current_state(TASK_RUNNING);
	}
	return 0;
}

/* ---- connection resources ------------------------------------------------ */

/* An event of x's data QP or of its registration QP (ctx is x). */
void odsm_rdma_qp_event(struct ib_event *ev, void *ctx)
{
	struct odsm_rdma_conn *x = ctx;

	switch (ev->event) {
	case IB_EVENT_COMM_EST:
		/* data before the CM's RTU: tell the CM it is established */
		rdma_notify(x->id, IB_EVENT_COMM_EST);
		break;
	case IB_EVENT_QP_FATAL:
	case IB_EVENT_QP_REQ_ERR:
	case IB_EVENT_QP_ACCESS_ERR:
	case IB_EVENT_DEVICE_FATAL:
		pr_notice_ratelimited("rdma QP error: %s\n",
				      ib_event_msg(ev->event));
		rdma_fail(x);
		break;
	default:
		break;
	}
}

struct odsm_rdma_conn *odsm_rdma_conn_alloc(u32 peer, bool dialled)
{
	struct odsm_conn *conn = kzalloc(sizeof(*conn), GFP_KERNEL);
	struct odsm_rdma_conn *x = kzalloc(sizeof(*x), GFP_KERNEL);

	if (!conn || !x) {
		kfree(conn);
		kfree(x);
		return NULL;
	}
	x->timeout_ms = odsm_cluster_timeout_ms();
	init_completion(&x->cm_done);
	init_rwsem(&x->res_sem);
	spin_lock_init(&x->msg.lock);
	odsm_credit_init(&x->msg.k, RDMA_RECVS, RDMA_SENDS, jiffies);
	x->msg.credit_cqe.done = credit_done;
	INIT_LIST_HEAD(&x->msg.rxq);
	init_waitqueue_head(&x->msg.tx_wait);
	init_waitqueue_head(&x->msg.rx_wait);
	INIT_WORK(&x->disc_work, disc_work);
	INIT_LIST_HEAD(&x->node);
	INIT_LIST_HEAD(&x->rm_node);
	INIT_LIST_HEAD(&x->loop.node);
	INIT_LIST_HEAD(&x->park.node);
	mutex_init(&x->reg.lock);
	mutex_init(&x->aqp.lock);
	xa_init(&x->os.keys);
	xa_init(&x->reg.map);
	odsm_rdma_os_init(x);
	x->reg.wait.x = x;
	x->reg.wait.cqe.done = odsm_rdma_wr_done;
	init_completion(&x->reg.wait.done);
	odsm_conn_init(conn, &odsm_rdma_ops, x, peer, dialled);
	x->conn = conn;
	return x;
}

/* PD, CQ, QP and the posted receive buffers on x->id's device. */
int odsm_rdma_conn_setup(struct odsm_rdma_conn *x)
{
	struct ib_qp_init_attr qa = {
		.event_handler = odsm_rdma_qp_event,
		.qp_context = x,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
		/* +1 each for ib_drain_qp */
		.cap = {
			.max_send_wr = RDMA_SQ_DEPTH,
			.max_recv_wr = RDMA_RECVS + 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};
	struct ib_pd *pd;
	struct ib_cq *cq;
	void *buf;
	int i, ret;

	x->dev = x->id->device;
	pd = ib_alloc_pd(x->dev, 0);
	if (IS_ERR(pd))
		return PTR_ERR(pd);
	x->pd = pd;
	cq = ib_alloc_cq(x->dev, x,
			 RDMA_SQ_DEPTH + RDMA_RECVS + 1 + RDMA_REG_SQ_DEPTH +
			 RDMA_AQP_SQ_DEPTH, 0,
			 IB_POLL_WORKQUEUE);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	x->cq = cq;
	qa.send_cq = cq;
	qa.recv_cq = cq;
	ret = rdma_create_qp(x->id, pd, &qa);
	if (ret)
		return ret;
	x->qp = x->id->qp;
	/* the loopback pair carries no SEND: no receive buffers */
	for (i = 0; i < RDMA_RECVS && !x->loop.end; i++) {
		struct odsm_rdma_rbuf *r = &x->msg.rbufs[i];

		buf = alloc_pages_exact(RDMA_MSG_MAX, GFP_KERNEL | __GFP_NOWARN);
		if (!buf)
			return -ENOMEM;
		r->x = x;
		r->cqe.done = recv_done;
		r->dma = ib_dma_map_single(x->dev, buf, RDMA_MSG_MAX,
					   DMA_FROM_DEVICE);
		if (ib_dma_mapping_error(x->dev, r->dma)) {
			free_pages_exact(buf, RDMA_MSG_MAX);
			return -ENOMEM;
		}
		r->buf = buf;
		ret = post_recv(x, r);
		if (ret)
			return ret;
	}
	return odsm_rdma_os_setup(x);
}

/*
 * Drain and free the verbs resources, then the CM id unless keep_id (a CM
 * handler refusing a connection: the core destroys that id).  Once; may
 * sleep; never from a CM or CQ handler of this connection except as said.
 */
static void conn_teardown(struct odsm_rdma_conn *x, bool keep_id)
{
	struct rdma_cm_id *id;
	int i;

	rdma_fail(x);
	down_write(&x->res_sem);
	if (x->torn) {
		up_write(&x->res_sem);
		return;
	}
	x->torn = true;
	odsm_rdma_side_qps_free(x);
	if (x->qp) {
		/* every completion handled: no SEND buffer left behind */
		if (x->live)
			ib_drain_qp(x->qp);
		rdma_destroy_qp(x->id);
		x->qp = NULL;
	}
	odsm_fault_slow_teardown();
	if (x->cq) {
		ib_free_cq(x->cq);
		x->cq = NULL;
	}
	for (i = 0; i < RDMA_RECVS; i++) {
		struct odsm_rdma_rbuf *r = &x->msg.rbufs[i];

		if (!r->buf)
			continue;
		ib_dma_unmap_single(x->dev, r->dma, RDMA_MSG_MAX,
				    DMA_FROM_DEVICE);
		free_pages_exact(r->buf, RDMA_MSG_MAX);
		r->buf = NULL;
	}
	odsm_rdma_os_free(x);
	odsm_rdma_regs_free(x);
	if (x->pd) {
		ib_dealloc_pd(x->pd);
		x->pd = NULL;
	}
	id = keep_id ? NULL : x->id;
	x->id = NULL;
	up_write(&x->res_sem);
	/* with no route to the peer, what the CM would send kills QP1 */
	if (id && !odsm_rdma_park_id(x, id))
		rdma_destroy_id(id);
}

static void conn_free(struct odsm_rdma_conn *x)
{
	struct odsm_rdma_key *k;
	struct odsm_rdma_msg *m;
	unsigned long i;

	while ((m = rx_pop(x)))
		kvfree(m);
	xa_for_each(&x->os.keys, i, k)
		kfree(k);
	xa_destroy(&x->os.keys);
	xa_destroy(&x->reg.map);
	/* a parked CM id may still call the handler with x: x goes with it */
	if (!odsm_rdma_park_release(x))
		kfree(x);
}

/* A connection that was never published. */
void odsm_rdma_conn_abort(struct odsm_rdma_conn *x, bool keep_id)
{
	conn_teardown(x, keep_id);
	/* as rdma_release: a completion drained above may have queued it */
	cancel_work_sync(&x->disc_work);
	kfree(x->conn);
	conn_free(x);
}

/* Start the receiver and hand the connection to the cluster. */
static void conn_publish(struct odsm_rdma_conn *x)
{
	mutex_lock(&odsm_rdma_lock);
	list_add(&x->node, &odsm_rdma_conns);
	mutex_unlock(&odsm_rdma_lock);
	odsm_conn_publish(x->conn);
	wake_up_process(x->rx);
}

static int rx_create(struct odsm_rdma_conn *x, u32 peer)
{
	struct task_struct *t;

	t = kthread_create(rdma_rx_thread, x->conn, "odsm-rrx/%d",
			   peer == U32_MAX ? -1 : (int)peer);
	if (IS_ERR(t))
		return PTR_ERR(t);
	get_task_struct(t);
	x->rx = t;
	return 0;
}

static void rx_destroy(struct odsm_rdma_conn *x)
{
	if (!x->rx)
		return;
	kthread_stop(x->rx);
	put_task_struct(x->rx);
	x->rx = NULL;
}

/* ---- the connection manager ---------------------------------------------- */

static void cm_report(struct odsm_rdma_conn *x, int status)
{
	x->cm_status = status;
	complete(&x->cm_done);
}

/*
 * Wait for the CM step just started: at most the cluster's timeout (and a
 * second), and no longer than the cluster is joined.  A leave waits for
 * the dial under way (cancel_work_sync()), and a dead peer's address
 * answers neither ARP nor REQ: a plain wait made every leave with a dead
 * lower peer wait out the timeout (6 s with check's 5000 ms), where the
 * TCP transport polls its connect (odsm_tcp.c).  So the wait looks at the
 * leave every CM_POLL_MS; the dial is then abandoned, and destroying its
 * id cancels what the CM was doing.
 */
#define CM_POLL_MS	20

static int cm_wait(struct odsm_rdma_conn *x)
{
	unsigned long end = jiffies + msecs_to_jiffies(x->timeout_ms) + HZ;

	for (;;) {
		if (wait_for_completion_timeout(&x->cm_done,
						msecs_to_jiffies(CM_POLL_MS)))
			return x->cm_status;
		if (odsm_cluster_leaving())
			return -ESHUTDOWN;
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
	}
}

/* What an accepted connection agrees to, given what the dialler offers. */
void odsm_rdma_accept_param(struct rdma_cm_id *id, struct rdma_cm_event *ev,
			    struct rdma_conn_param *p)
{
	const struct ib_device_attr *a = &id->device->attrs;

	/* RDMA READs and atomics both ways, no more than the dialler offers */
	memset(p, 0, sizeof(*p));
	p->rnr_retry_count = 7;
	p->responder_resources = min3((u32)ev->param.conn.initiator_depth,
				      (u32)RDMA_RD_ATOM, (u32)a->max_qp_rd_atom);
	p->initiator_depth = min_t(u32, ev->param.conn.responder_resources,
				   odsm_rdma_init_depth(id->device));
}

/* Is dev Soft-RoCE? */
bool odsm_rdma_is_rxe(struct ib_device *dev)
{
	return dev->ops.driver_id == RDMA_DRIVER_RXE;
}

/* The initiator depth offered on dev: READs and atomics we keep going. */
u32 odsm_rdma_init_depth(struct ib_device *dev)
{
	return min_t(u32, RDMA_RD_ATOM, dev->attrs.max_qp_init_rd_atom);
}

/* Is ip the address of a member of the cluster other than this node? */
static bool from_member(__be32 ip)
{
	u32 i, n = odsm_cluster_nr_nodes();

	for (i = 0; i < n; i++)
		if (i != odsm_cluster_self() &&
		    odsm_cluster_addr(i).sin_addr.s_addr == ip)
			return true;
	return false;
}

/*
 * Take one of the places for an unauthenticated connection from ip, or
 * refuse (false).  An accepted connection costs RDMA_RECVS receive
 * buffers of RDMA_MSG_MAX bytes and RDMA_OS_SLOTS bounce buffers of
 * ODSM_WIRE_MAX_DATA (some 5 MiB) before its peer proved
 * anything, so there are at most RDMA_UNAUTH_PER_ADDR of them from one
 * address and RDMA_UNAUTH_MAX in all: counted over the connections that
 * still hold their resources and never completed the handshake (dead ones
 * too, until the tick reaps them), plus the ones being set up
 * (rdma_accepting), under odsm_rdma_lock.  A real peer dials one
 * connection at a time and redials on its next tick if refused.
 */
static u32 rdma_accepting;		/* under odsm_rdma_lock */

static bool unauth_place_get(__be32 ip)
{
	struct odsm_rdma_conn *x;
	u32 all = 0, mine = 0;
	bool ok;

	mutex_lock(&odsm_rdma_lock);
	list_for_each_entry(x, &odsm_rdma_conns, node) {
		if (x->conn->dialled || x->loop.end || READ_ONCE(x->torn) ||
		    READ_ONCE(x->conn->authed))
			continue;
		all++;
		mine += x->peer_ip == ip;
	}
	/* the ones being set up are not on the list yet: count them as
	 * from everywhere
	 */
	ok = all + rdma_accepting < RDMA_UNAUTH_MAX &&
	     mine + rdma_accepting < RDMA_UNAUTH_PER_ADDR;
	if (ok)
		rdma_accepting++;
	mutex_unlock(&odsm_rdma_lock);
	return ok;
}

static void unauth_place_put(void)
{
	mutex_lock(&odsm_rdma_lock);
	rdma_accepting--;
	mutex_unlock(&odsm_rdma_lock);
}

static int refuse(const struct sockaddr_in *from, const char *why)
{
	odsm_stat_inc(ODSM_STAT_rdma_conn_refused);
	pr_notice_ratelimited("rdma: refused a connection request from %pI4: %s\n",
			      &from->sin_addr, why);
	return -ECONNREFUSED;	/* the core rejects and destroys the id */
}

/*
 * A connection request on the listener: check who asks, then set up,
 * accept and publish.  Nothing is allocated for a request from an address
 * that is no member's, nor beyond the places for unauthenticated
 * connections (unauth_place_get).
 */
static int on_connect_req(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct sockaddr_in *from = (struct sockaddr_in *)&id->route.addr.dst_addr;
	struct rdma_conn_param p;
	struct odsm_rdma_conn *x;
	int ret;

	if (from->sin_family != AF_INET)
		return refuse(from, "not IPv4");
	if (odsm_rdma_is_loop_req(ev))
		return odsm_rdma_on_loop_req(id, ev);
	if (!from_member(from->sin_addr.s_addr))
		return refuse(from, "no member of the cluster");
	if (!unauth_place_get(from->sin_addr.s_addr))
		return refuse(from, "too many unauthenticated connections");
	ret = -ENOMEM;
	odsm_rdma_accept_param(id, ev, &p);
	x = odsm_rdma_conn_alloc(U32_MAX, false);
	if (!x)
		goto out_place;
	x->id = id;
	id->context = x;
	/* the CM answers a request we drop with a REJ */
	x->park.cm_started = true;
	x->peer_ip = from->sin_addr.s_addr;
	rdma_set_ack_timeout(id, RDMA_ACK_TIMEOUT);
	ret = odsm_rdma_conn_setup(x);
	if (ret)
		goto err;
	ret = rx_create(x, U32_MAX);
	if (ret)
		goto err;
	ret = rdma_accept(id, &p);
	if (ret)
		goto err_rx;
	x->live = true;
	/* the HELLO tells who it is: until then it may say nothing else */
	conn_publish(x);
	unauth_place_put();	/* on the list now: counted there */
	return 0;
err_rx:
	rx_destroy(x);
err:
	id->context = NULL;
	odsm_rdma_conn_abort(x, true);
out_place:
	unauth_place_put();
	return ret;
}

/* An event on the listener itself. */
static int on_listener_event(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	int gone = 0;

	if (ev->event != RDMA_CM_EVENT_DEVICE_REMOVAL)
		return 0;
	/* not torn down by rdma_remove_one (a race): let the core do it */
	mutex_lock(&odsm_rdma_lock);
	if (rdma_lis.id == id) {
		rdma_lis.id = NULL;
		gone = 1;
	}
	mutex_unlock(&odsm_rdma_lock);
	return gone;
}

static int rdma_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct odsm_rdma_conn *x = id->context;

	/* only the listener's new ids see these: context is the listener */
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return on_connect_req(id, ev);
	if (id->context == &rdma_lis)
		return on_listener_event(id, ev);
	if (!x)
		return 0;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
	case RDMA_CM_EVENT_ESTABLISHED:
		cm_report(x, 0);
		break;
	case RDMA_CM_EVENT_REJECTED:
		cm_report(x, -ECONNREFUSED);
		rdma_fail(x);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		cm_report(x, ev->status < 0 ? ev->status : -EHOSTUNREACH);
		rdma_fail(x);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/*
		 * The peer ended a connection that had work of ours in flight
		 * (a leave has none): the peer's stall is read against ours.
		 */
		/* broken first: a parked id's connection may be freed */
		if (!READ_ONCE(x->broken) && READ_ONCE(x->conn->authed) &&
		    (READ_ONCE(x->msg.k.sq_free) < RDMA_SENDS ||
		     READ_ONCE(x->os.busy)))
			odsm_rdma_qp_report(x, "disconnected by");
		fallthrough;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		/* a removal: the core waits until the tick reaps the id, or
		 * until a parked one is destroyed, which no route delays now
		 */
		if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
			odsm_rdma_park_dev_gone(x);
		cm_report(x, -ECONNRESET);
		rdma_fail(x);
		break;
	default:
		break;
	}
	return 0;
}

/* ---- transport ops ------------------------------------------------------- */

static void disc_work(struct work_struct *w)
{
	struct odsm_rdma_conn *x = container_of(w, struct odsm_rdma_conn, disc_work);

	down_read(&x->res_sem);
	/* no DREQ without a route (odsm_rdma_park.c): the teardown parks
	 * the id, and its destruction says goodbye once a route is back
	 */
	if (!x->torn && x->id && x->live && odsm_rdma_routed(x))
		rdma_disconnect(x->id);
	up_read(&x->res_sem);
}

static void rdma_kill(struct odsm_conn *conn)
{
	struct odsm_rdma_conn *x = rc(conn);

	rdma_fail(x);
	/* rdma_disconnect sleeps: kill may come from any context */
	schedule_work(&x->disc_work);
}

/*
 * The teardown comes before the last cancel of disc_work, never after:
 * draining the QP completes what is still posted (a one-sided operation
 * or a REG_MR that timed out) with an error, and that completion's
 * handler kills the connection, which queues disc_work again.  Once torn,
 * nothing queues it any more (the CQ is gone, the receiver stopped, and
 * at release nobody else holds the connection), and a disc_work that
 * runs after the teardown does nothing.
 */
static void rdma_stop(struct odsm_conn *conn)
{
	struct odsm_rdma_conn *x = rc(conn);

	conn_teardown(x, false);
	rx_destroy(x);
	cancel_work_sync(&x->disc_work);
}

static void rdma_release(struct odsm_conn *conn)
{
	struct odsm_rdma_conn *x = rc(conn);

	mutex_lock(&odsm_rdma_lock);
	list_del_init(&x->node);
	mutex_unlock(&odsm_rdma_lock);
	conn_teardown(x, false);
	rx_destroy(x);
	cancel_work_sync(&x->disc_work);
	conn_free(x);
}

static int rdma_peer_ipv4(struct odsm_conn *conn, __be32 *ip)
{
	struct odsm_rdma_conn *x = rc(conn);

	if (!x->peer_ip)
		return -ENOTCONN;
	*ip = x->peer_ip;
	return 0;
}

bool odsm_rdma_use_atomics;	/* nic_atomics when joining */

static bool nic_atomics = true;
module_param(nic_atomics, bool, 0644);
MODULE_PARM_DESC(nic_atomics, "Use the RDMA device's atomics for ODSM_ATOMIC_F_NIC words (one-sided from peers, loopback at home); N: the home's CPU runs them all, as on a device without atomics. Read at join (default: on)");

static int rdma_listen_(void)
{
	struct sockaddr_in a = odsm_cluster_addr(odsm_cluster_self());
	struct rdma_cm_id *id;
	int ret;

	WRITE_ONCE(odsm_rdma_use_atomics, READ_ONCE(nic_atomics));

	id = rdma_create_id(&init_net, rdma_cm_handler, &rdma_lis, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	ret = rdma_bind_addr(id, (struct sockaddr *)&a);
	if (ret) {
		pr_err("no RDMA device for %pISpc: %d\n", &a, ret);
		goto err;
	}
	ret = rdma_listen(id, ODSM_MAX_NODES);
	if (ret) {
		pr_err("cannot listen on %pISpc over RDMA: %d\n", &a, ret);
		goto err;
	}
	mutex_lock(&odsm_rdma_lock);
	rdma_lis.id = id;
	mutex_unlock(&odsm_rdma_lock);
	return 0;
err:
	rdma_destroy_id(id);
	return ret;
}

static void rdma_unlisten(void)
{
	struct rdma_cm_id *id;

	odsm_rdma_loop_destroy();
	mutex_lock(&odsm_rdma_lock);
	id = rdma_lis.id;
	rdma_lis.id = NULL;
	mutex_unlock(&odsm_rdma_lock);
	/* waits for the connection requests being handled */
	if (id)
		rdma_destroy_id(id);
}

/*
 * Resolve dst (from our own address) and set up x's resources on the
 * device that reaches it: everything a dial does before connecting.
 */
int odsm_rdma_dial_prepare(struct odsm_rdma_conn *x, struct sockaddr_in dst,
			   struct rdma_conn_param *p)
{
	struct sockaddr_in src = odsm_cluster_addr(odsm_cluster_self());
	struct rdma_cm_id *id;
	int ret;

	src.sin_port = 0;
	id = rdma_create_id(&init_net, rdma_cm_handler, x, RDMA_PS_TCP,
			    IB_QPT_RC);
	if (IS_ERR(id))
		return PTR_ERR(id);
	x->id = id;
	x->peer_ip = dst.sin_addr.s_addr;

	reinit_completion(&x->cm_done);
	ret = rdma_resolve_addr(id, (struct sockaddr *)&src,
				(struct sockaddr *)&dst, x->timeout_ms);
	if (!ret)
		ret = cm_wait(x);
	if (ret)
		return ret;
	reinit_completion(&x->cm_done);
	ret = rdma_resolve_route(id, x->timeout_ms);
	if (!ret)
		ret = cm_wait(x);
	if (ret)
		return ret;
	rdma_set_ack_timeout(id, RDMA_ACK_TIMEOUT);
	memset(p, 0, sizeof(*p));
	p->retry_count = 7;
	p->rnr_retry_count = 7;
	p->initiator_depth = odsm_rdma_init_depth(id->device);
	p->responder_resources = min_t(u32, RDMA_RD_ATOM,
				       id->device->attrs.max_qp_rd_atom);
	return odsm_rdma_conn_setup(x);
}

/* Connect x, prepared; 0 once established. */
int odsm_rdma_dial_connect(struct odsm_rdma_conn *x, struct rdma_conn_param *p)
{
	int ret;

	reinit_completion(&x->cm_done);
	x->park.cm_started = true;
	ret = rdma_connect(x->id, p);
	if (!ret)
		ret = cm_wait(x);
	if (!ret)
		x->live = true;
	return ret;
}

/* Connect to peer; the new connection, with a reference for the caller. */
static struct odsm_conn *rdma_dial(u32 peer)
{
	struct rdma_conn_param p;
	struct odsm_rdma_conn *x;
	int ret;

	x = odsm_rdma_conn_alloc(peer, true);
	if (!x)
		return ERR_PTR(-ENOMEM);
	ret = odsm_rdma_dial_prepare(x, odsm_cluster_addr(peer), &p);
	if (ret)
		goto err;
	ret = rx_create(x, peer);
	if (ret)
		goto err;
	ret = odsm_rdma_dial_connect(x, &p);
	if (ret)
		goto err_rx;
	/* before it is listed: the reaper may drop the list's at once */
	kref_get(&x->conn->ref);
	conn_publish(x);
	return x->conn;
err_rx:
	rx_destroy(x);
err:
	odsm_rdma_conn_abort(x, false);
	return ERR_PTR(ret);
}

/* Called only while the cluster is joined over this transport. */
bool odsm_rdma_nic_atomics(void)
{
	bool yes = false;

	mutex_lock(&odsm_rdma_lock);
	if (rdma_lis.id && rdma_lis.id->device)
		yes = odsm_rdma_dev_atomics(rdma_lis.id->device);
	mutex_unlock(&odsm_rdma_lock);
	return yes;
}

struct odsm_transport_ops odsm_rdma_ops = {
	.name = "rdma",
	.id = ODSM_TRANSPORT_RDMA,
	.listen = rdma_listen_,
	.unlisten = rdma_unlisten,
	.dial = rdma_dial,
	.send = rdma_send,
	.kill = rdma_kill,
	.stop = rdma_stop,
	.release = rdma_release,
	.peer_ipv4 = rdma_peer_ipv4,
	.rx_serves = true,	/* credits return on the CQ (see the top) */
	/* one-sided abilities (odsm_rdma_onesided.c), the loopback pair */
	.rw = odsm_rdma_rw,
	.read_pub = odsm_rdma_read_pub,
	.atomic = odsm_rdma_atomic,
	.aqp_offer = odsm_rdma_aqp_offer,
	.aqp_serve = odsm_rdma_aqp_serve,
	.aqp_finish = odsm_rdma_aqp_finish,
	.missing = odsm_rdma_missing,
	.can_map = odsm_rdma_can_map,
	.no_maps = odsm_rdma_no_maps,
	.add_key = odsm_rdma_add_key,
	.map = odsm_rdma_map,
	.counts = odsm_rdma_counts,
	.nic_atomics = odsm_rdma_nic_atomics,
	.loop_atomic = odsm_rdma_loop_atomic,
};

/* ---- devices ------------------------------------------------------------- */

static struct ib_client odsm_ib_client;

/*
 * A Soft-RoCE port that went down: every connection on the device goes at
 * once, not only the ones that had something to send meanwhile (those
 * fail on their own: rxe completes a request it cannot route with an
 * error).  Soft-RoCE keeps the state of a READ response it could not send
 * (no route: its link is down; send_rnr_err) and sends the rest of it, a
 * READ_RESPONSE MIDDLE or LAST without its FIRST, in answer to the next
 * request that comes once the link is back; the peer's 6.1 completer
 * meets that with a WARN and puts its QP in error (rxe_comp.c,
 * check_ack()).  A killed connection's QP is put in error here, before
 * the link is back, and sends nothing any more; the cluster dials again
 * when the route is there.  A device with its own firmware (an HCA)
 * retries RC through a short flap, and keeps its connections.
 */
/*
 * The connections on dev, each referenced, onto out through rm_node; with
 * links_only, not the loopback pair's ends (they never cross the link).
 * Under odsm_rdma_lock.
 */
static void conns_on_locked(struct ib_device *dev, bool links_only,
			    struct list_head *out)
{
	struct odsm_rdma_conn *x;

	lockdep_assert_held(&odsm_rdma_lock);
	list_for_each_entry(x, &odsm_rdma_conns, node)
		if (x->dev == dev && !(links_only && x->loop.end) &&
		    kref_get_unless_zero(&x->conn->ref))
			list_add_tail(&x->rm_node, out);
}

/*
 * Port events run as work items of their own on the core's unordered
 * ib_wq, two of one device at once (a carrier lost, then the link set
 * down): each links the connections it takes through the one rm_node,
 * so they go one at a time.
 */
static DEFINE_MUTEX(port_event_lock);

static void rdma_port_event(struct ib_event_handler *h, struct ib_event *ev)
{
	struct odsm_rdma_conn *x, *tmp;
	LIST_HEAD(gone);
	u32 n = 0;

	if (ev->event != IB_EVENT_PORT_ERR || !odsm_rdma_is_rxe(ev->device))
		return;
	mutex_lock(&port_event_lock);
	mutex_lock(&odsm_rdma_lock);
	conns_on_locked(ev->device, true, &gone);
	mutex_unlock(&odsm_rdma_lock);
	list_for_each_entry_safe(x, tmp, &gone, rm_node) {
		struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

		list_del_init(&x->rm_node);
		odsm_conn_kill(x->conn);
		/* with no route the kill sends no DREQ (disc_work()), and
		 * the QP would keep its state until the teardown: in error
		 * now, which sends nothing, before the link can be back
		 */
		down_read(&x->res_sem);
		if (!x->torn && x->qp)
			ib_modify_qp(x->qp, &attr, IB_QP_STATE);
		up_read(&x->res_sem);
		odsm_conn_put(x->conn);
		n++;
	}
	mutex_unlock(&port_event_lock);
	odsm_stat_add(ODSM_STAT_rdma_port_kills, n);
	if (n)
		pr_notice("RDMA device %s port %u down: %u connections closed\n",
			  dev_name(&ev->device->dev), ev->element.port_num, n);
}

static int rdma_add_one(struct ib_device *dev)
{
	struct ib_event_handler *h = kzalloc(sizeof(*h), GFP_KERNEL);

	if (!h)
		return -ENOMEM;
	INIT_IB_EVENT_HANDLER(h, dev, rdma_port_event);
	ib_register_event_handler(h);
	ib_set_client_data(dev, &odsm_ib_client, h);
	return 0;
}

/*
 * A device is going away: the RDMA CM waits for every id on it to be
 * destroyed, so tear down the listener and the connections on it now (the
 * cluster sees the peers fail).  Ids that are still connecting get the
 * CM's DEVICE_REMOVAL event and fail their dial.
 */
static void rdma_remove_one(struct ib_device *dev, void *data)
{
	struct ib_event_handler *h = data;
	struct rdma_cm_id *lid = NULL;
	struct odsm_rdma_conn *x, *tmp;
	LIST_HEAD(gone);

	/* no port event runs from here on: rm_node is ours alone */
	if (h) {
		ib_unregister_event_handler(h);
		kfree(h);
	}
	mutex_lock(&odsm_rdma_lock);
	if (rdma_lis.id && rdma_lis.id->device == dev) {
		lid = rdma_lis.id;
		rdma_lis.id = NULL;
	}
	conns_on_locked(dev, false, &gone);
	mutex_unlock(&odsm_rdma_lock);

	if (lid) {
		pr_notice("RDMA device %s removed: no longer accepting\n",
			  dev_name(&dev->dev));
		rdma_destroy_id(lid);
	}
	/*
	 * A loopback pair made meanwhile (its ends listed after we looked:
	 * an end accepted just before the listener went, or a dial that
	 * finished) would keep its ids, and the core's removal waits for
	 * them; loop ends are freed only by the next NIC atomic or a
	 * leave.  The pair goes now (the next atomic dials a new one);
	 * this waits at most for a dial in flight, bounded by timeout_ms.
	 */
	odsm_rdma_loop_destroy();
	list_for_each_entry_safe(x, tmp, &gone, rm_node) {
		struct odsm_conn *conn = x->conn;

		list_del_init(&x->rm_node);
		odsm_conn_kill(conn);
		/* the CM waits for its id: it cannot wait for a route */
		odsm_rdma_park_dev_gone(x);
		conn_teardown(x, false);
		odsm_conn_put(conn);
	}
}

static struct ib_client odsm_ib_client = {
	.name = "odsm",
	.add = rdma_add_one,
	.remove = rdma_remove_one,
};

int odsm_rdma_init(void)
{
	int ret = ib_register_client(&odsm_ib_client);

	if (!ret)
		odsm_transport_register(&odsm_rdma_ops);
	return ret;
}

void odsm_rdma_exit(void)
{
	odsm_transport_unregister(&odsm_rdma_ops);
	/* their handler is ours: they go before the module, route or not */
	odsm_rdma_park_flush();
	ib_unregister_client(&odsm_ib_client);
}
