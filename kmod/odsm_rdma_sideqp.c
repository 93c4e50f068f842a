// SPDX-License-Identifier: GPL-2.0
/*
 * QPs beside a connection's data QP, in its PD and on its CQ, moved to RTS
 * with its path: the registration QP (odsm_rdma_onesided.c), which never
 * sends, and the atomics QPs here.
 *
 * One-sided atomics go on a QP pair of their own, never on the data QP.
 * Soft-RoCE's completer (rxe_comp.c, 6.1 and 6.12) completes the send
 * queue's oldest work request when a plain ACK carries its last PSN,
 * whatever the request was; its responder answers a duplicate SEND or
 * WRITE with a plain ACK of the PSN of the last SEND, WRITE or atomic it
 * ran (duplicate_request(), ack_psn - 1).  So after a lost packet, a
 * SEND resent from before an atomic could complete the atomic as if
 * answered: success, the old value never written, the bounce buffer
 * holding whatever was there (two lockers of a ticket lock with one
 * ticket).  On a QP that carries nothing but atomics there is never a
 * duplicate SEND or WRITE: a resent atomic is answered from the
 * responder's resources with its own old value.
 *
 * The pair: the initiator creates its end (odsm_rdma_aqp_offer) and sends
 * its QPN and first PSN in an AQP request; the home creates its end,
 * connected to that (odsm_rdma_aqp_serve), and answers with its own; the
 * initiator connects its end to the answer (odsm_rdma_aqp_finish).  Each
 * connection has at most one end of each kind; both go with the
 * connection.  Both are set up under aqp.lock and res_sem held for
 * reading (the connection up) and freed by the teardown (res_sem held for
 * writing): whoever posts on own, holding res_sem, sees it stay.
 */
#include <linux/random.h>
#include "odsm_rdma.h"
#include "odsm_stats.h"

/*
 * The attributes that move x's data QP to state, from the CM
 * (rdma_init_qp_attr(): port, P_Key, the resolved path with its
 * destination MAC, MTU, timers), for a side QP to take.  The CM id is
 * there while res_sem is held and the connection not torn down.
 */
static int side_attr(struct odsm_rdma_conn *x, enum ib_qp_state state,
		     struct ib_qp_attr *a, int *mask)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = state;
	return rdma_init_qp_attr(x->id, a, mask);
}

/* A QP for x's side work, in INIT with access, or an ERR_PTR. */
static struct ib_qp *side_qp_create(struct odsm_rdma_conn *x,
				    u32 max_send_wr, int access)
{
	struct ib_qp_init_attr qa = {
		.event_handler = odsm_rdma_qp_event,
		.qp_context = x,
		.send_cq = x->cq,
		.recv_cq = x->cq,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
		.cap = {
			.max_send_wr = max_send_wr,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
	};
	struct ib_qp_attr a;
	struct ib_qp *qp;
	int mask, ret;

	qp = ib_create_qp(x->pd, &qa);
	if (IS_ERR(qp))
		return qp;
	ret = side_attr(x, IB_QPS_INIT, &a, &mask);
	if (ret)
		goto err;
	a.qp_access_flags = access;
	ret = ib_modify_qp(qp, &a, mask | IB_QP_ACCESS_FLAGS);
	if (ret)
		goto err;
	return qp;
err:
	ib_destroy_qp(qp);
	return ERR_PTR(ret);
}

/*
 * Connect qp (INIT) to the peer's QP dest_qpn and move it to RTS, on the
 * data QP's path with its timers: rq_psn the peer's first PSN, sq_psn
 * ours; rd_atomic the READs and atomics we keep in flight on it,
 * dest_rd_atomic the peer's we take.  dest_qpn 0 (never an RC QP's):
 * towards the peer's data QP with the CM's PSNs, for a QP that never
 * sends.
 */
static int side_qp_connect(struct odsm_rdma_conn *x, struct ib_qp *qp,
			   u32 dest_qpn, u32 rq_psn, u32 sq_psn,
			   u8 rd_atomic, u8 dest_rd_atomic)
{
	struct ib_qp_attr a;
	int mask, ret;

	ret = side_attr(x, IB_QPS_RTR, &a, &mask);
	if (ret)
		return ret;
	if (dest_qpn) {
		a.dest_qp_num = dest_qpn;
		a.rq_psn = rq_psn;
	}
	a.max_dest_rd_atomic = dest_rd_atomic;
	ret = ib_modify_qp(qp, &a, mask | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC);
	if (ret)
		return ret;
	ret = side_attr(x, IB_QPS_RTS, &a, &mask);
	if (ret)
		return ret;
	if (dest_qpn)
		a.sq_psn = sq_psn;
	a.max_rd_atomic = rd_atomic;
	return ib_modify_qp(qp, &a, mask | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

/*
 * The connection's registration QP, set up on first use (reg.lock and
 * res_sem held, the connection up), or an ERR_PTR.
 *
 * An RC QP that carries nothing but local work requests (REG_MR), in RTS
 * with the data QP's path, which it never uses.  A REG_MR posted on the
 * data QP behind SENDs or READs not yet answered is run again by
 * Soft-RoCE when a lost packet makes those go again (6.1's req_retry()
 * rewinds to the oldest unfinished work request, and the requester redoes
 * the completed local one after it: "rxe_reg_fast_mr: ... not free", the
 * QP in error, no completion), which stalled the connection for
 * timeout_ms.  Here nothing precedes a REG_MR but completed REG_MRs, and
 * nothing is ever sent.
 */
struct ib_qp *odsm_rdma_reg_qp_get(struct odsm_rdma_conn *x)
{
	struct ib_qp *qp;
	int ret;

	if (x->reg.qp)
		return x->reg.qp;
	qp = side_qp_create(x, RDMA_REG_SQ_DEPTH, 0);
	if (IS_ERR(qp))
		return qp;
	ret = side_qp_connect(x, qp, 0, 0, 0, 0, 0);
	if (ret) {
		ib_destroy_qp(qp);
		return ERR_PTR(ret);
	}
	x->reg.qp = qp;
	return qp;
}

/*
 * aqp.lock and res_sem, the connection up and its device's atomics in use:
 * 0, or -EOPNOTSUPP / -EHOSTDOWN with nothing held.
 */
static int aqp_begin(struct odsm_rdma_conn *x)
{
	int ret = -EHOSTDOWN;

	mutex_lock(&x->aqp.lock);
	down_read(&x->res_sem);
	if (x->torn || READ_ONCE(x->broken) || READ_ONCE(x->conn->dead))
		goto out;
	/* x->dev only now: a torn connection's device may be gone */
	ret = -EOPNOTSUPP;
	if (!odsm_rdma_dev_atomics(x->dev))
		goto out;
	return 0;
out:
	up_read(&x->res_sem);
	mutex_unlock(&x->aqp.lock);
	return ret;
}

static void aqp_end(struct odsm_rdma_conn *x)
{
	up_read(&x->res_sem);
	mutex_unlock(&x->aqp.lock);
}

int odsm_rdma_aqp_offer(struct odsm_conn *conn, struct odsm_wire_aqp *o)
{
	struct odsm_rdma_conn *x = rc(conn);
	struct ib_qp *qp;
	int ret;

	/* pairs with aqp_finish's release: own is connected when seen up */
	if (smp_load_acquire(&x->aqp.up))
		return 0;
	ret = aqp_begin(x);
	if (ret)
		return ret;
	if (x->aqp.up)
		goto out;
	if (!x->aqp.own) {
		qp = side_qp_create(x, RDMA_AQP_SQ_DEPTH, 0);
		if (IS_ERR(qp)) {
			ret = PTR_ERR(qp);
			goto out;
		}
		x->aqp.own = qp;
		x->aqp.own_psn = get_random_u32() & ODSM_WIRE_AQP_24BIT;
	}
	o->qpn = x->aqp.own->qp_num;
	o->psn = x->aqp.own_psn;
	o->depth = max(1U, odsm_rdma_init_depth(x->dev));
	o->reserved = 0;
	ret = 1;
out:
	aqp_end(x);
	return ret;
}

int odsm_rdma_aqp_serve(struct odsm_conn *conn, const struct odsm_wire_aqp *o,
			struct odsm_wire_aqp *a)
{
	struct odsm_rdma_conn *x = rc(conn);
	u32 depth;
	struct ib_qp *qp;
	int ret;

	ret = aqp_begin(x);
	if (ret)
		return ret;
	if (x->aqp.served) {
		/* asked again (a lost reply): the same answer; one per peer */
		ret = x->aqp.served_qpn == o->qpn ? 0 : -EBUSY;
		*a = x->aqp.answer;
		goto out;
	}
	depth = min3(o->depth, (u32)RDMA_RD_ATOM,
		     (u32)x->dev->attrs.max_qp_rd_atom);
	ret = -EOPNOTSUPP;
	if (!depth)
		goto out;
	qp = side_qp_create(x, RDMA_AQP_SQ_DEPTH, IB_ACCESS_REMOTE_ATOMIC);
	if (IS_ERR(qp)) {
		ret = PTR_ERR(qp);
		goto out;
	}
	a->qpn = qp->qp_num;
	a->psn = get_random_u32() & ODSM_WIRE_AQP_24BIT;
	a->depth = depth;
	a->reserved = 0;
	ret = side_qp_connect(x, qp, o->qpn, o->psn, a->psn, 0, depth);
	if (ret) {
		ib_destroy_qp(qp);
		goto out;
	}
	x->aqp.served = qp;
	x->aqp.served_qpn = o->qpn;
	x->aqp.answer = *a;
	odsm_stat_inc(ODSM_STAT_atomic_qps);
out:
	aqp_end(x);
	return ret;
}

int odsm_rdma_aqp_finish(struct odsm_conn *conn, const struct odsm_wire_aqp *a)
{
	struct odsm_rdma_conn *x = rc(conn);
	u8 depth;
	int ret;

	ret = aqp_begin(x);
	if (ret)
		return ret;
	if (x->aqp.up)
		goto out;
	ret = -EPROTO;
	if (!x->aqp.own || !a->depth)
		goto out;
	depth = min_t(u32, a->depth, odsm_rdma_init_depth(x->dev));
	ret = side_qp_connect(x, x->aqp.own, a->qpn, a->psn, x->aqp.own_psn,
			      max_t(u8, depth, 1), 0);
	if (ret) {
		/* half moved: of no use, and gone with the connection */
		pr_notice_ratelimited("rdma atomics QP not connected (%d): connection closed\n",
				      ret);
		odsm_conn_kill(conn);
		goto out;
	}
	/* own in RTS before anyone posts on it (odsm_rdma_atomic) */
	smp_store_release(&x->aqp.up, true);
out:
	aqp_end(x);
	return ret;
}

/* The atomics QP of the loopback pair: both ends are ours. */
int odsm_rdma_aqp_pair(struct odsm_rdma_conn *req, struct odsm_rdma_conn *resp)
{
	struct odsm_wire_aqp o, a;
	int ret;

	ret = odsm_rdma_aqp_offer(req->conn, &o);
	if (ret <= 0)
		return ret;
	return odsm_rdma_aqp_serve(resp->conn, &o, &a) ?:
	       odsm_rdma_aqp_finish(req->conn, &a);
}

/* The side QPs, from the teardown (res_sem held for writing). */
void odsm_rdma_side_qps_free(struct odsm_rdma_conn *x)
{
	/* a REG_MR or an atomic still posted completes (flushed) first */
	if (x->reg.qp) {
		ib_drain_sq(x->reg.qp);
		ib_destroy_qp(x->reg.qp);
		x->reg.qp = NULL;
	}
	if (x->aqp.own) {
		if (x->aqp.up)
			ib_drain_sq(x->aqp.own);
		ib_destroy_qp(x->aqp.own);
		x->aqp.own = NULL;
		x->aqp.up = false;
	}
	/* the peer's atomics are answered there: nothing of ours posted */
	if (x->aqp.served) {
		ib_destroy_qp(x->aqp.served);
		x->aqp.served = NULL;
	}
}
