// SPDX-License-Identifier: GPL-2.0
/*
 * The RDMA transport's loopback pair (see below), beside the connection
 * manager (odsm_rdma.c) and the one-sided work (odsm_rdma_onesided.c),
 * with which it shares odsm_rdma.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/wait.h>
#include "odsm_rdma.h"

/* ---- the loopback pair ----------------------------------------------------- */

/*
 * A connection from this node to itself, through its own device: the way
 * the node runs RDMA atomics on its own memory (odsm_rdma_loop_atomic).
 * Set up on first use, one for the node, outside the cluster's connection
 * table (it is no peer: no HELLO, no heartbeat, no receiver thread);
 * torn down on leave, and with its device (it is on odsm_rdma_conns), after
 * which the next use sets up a new one.
 *
 * The dialled end's request carries LOOP_MAGIC, this module instance's
 * incarnation and the attempt's number; the listener accepts it as the
 * pair's other end only from our own address with our incarnation, and
 * the dialler takes the accepted end of its own attempt only (a late
 * request of an abandoned attempt is an orphan that it frees).  The
 * accepted end holds the registrations of our blocks, in its own PD.
 */
#define LOOP_MAGIC	0x504f4f4c4d53444fULL	/* "ODSMLOOP" in LE */

struct loop_pdata {
	__le64 magic;
	__le64 incarnation;
	__le64 attempt;
};

static DEFINE_MUTEX(loop_lock);		/* loop, loop_attempt */
static struct odsm_rdma_loop loop;
static u64 loop_attempt;
/* accepted ends not yet taken by their dialler, on loop_node */
static DEFINE_SPINLOCK(loop_acc_lock);
static LIST_HEAD(loop_acc);
static DECLARE_WAIT_QUEUE_HEAD(loop_acc_wait);

bool odsm_rdma_is_loop_req(struct rdma_cm_event *ev, struct sockaddr_in *from)
{
	const struct loop_pdata *d = ev->param.conn.private_data;

	return d && ev->param.conn.private_data_len >= sizeof(*d) &&
	       le64_to_cpu(d->magic) == LOOP_MAGIC &&
	       le64_to_cpu(d->incarnation) == odsm_cluster_incarnation() &&
	       from->sin_addr.s_addr == odsm_cluster_addr(odsm_cluster_self()).sin_addr.s_addr;
}

/* Free a loop end: it was never published, its reference is ours. */
static void loop_end_free(struct odsm_rdma_conn *x)
{
	if (!x)
		return;
	odsm_conn_kill(x->conn);
	odsm_conn_put(x->conn);
}

/*
 * The listener's side: set up and accept the pair's other end, and leave
 * it for the dialler, which frees it if it is not its own.  Only then:
 * freeing it destroys its CM id, which waits for this handler to return.
 */
int odsm_rdma_on_loop_req(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	const struct loop_pdata *d = ev->param.conn.private_data;
	struct rdma_conn_param p;
	struct odsm_rdma_conn *x;
	int ret;

	odsm_rdma_accept_param(id, ev, &p);
	x = odsm_rdma_conn_alloc(odsm_cluster_self(), false);
	if (!x)
		return -ENOMEM;
	x->id = id;
	id->context = x;
	x->peer_ip = odsm_cluster_addr(odsm_cluster_self()).sin_addr.s_addr;
	x->loop.end = true;
	x->loop.attempt = le64_to_cpu(d->attempt);
	rdma_set_ack_timeout(id, RDMA_ACK_TIMEOUT);
	ret = odsm_rdma_conn_setup(x);
	if (!ret)
		ret = rdma_accept(id, &p);
	if (ret) {
		id->context = NULL;
		odsm_rdma_conn_abort(x, true);
		return ret;
	}
	x->live = true;
	mutex_lock(&odsm_rdma_lock);
	list_add(&x->node, &odsm_rdma_conns);
	mutex_unlock(&odsm_rdma_lock);
	spin_lock(&loop_acc_lock);
	list_add_tail(&x->loop.node, &loop_acc);
	spin_unlock(&loop_acc_lock);
	wake_up_all(&loop_acc_wait);
	return 0;
}

static bool loop_acc_has(u64 attempt)
{
	struct odsm_rdma_conn *x;
	bool found = false;

	spin_lock(&loop_acc_lock);
	list_for_each_entry(x, &loop_acc, loop.node)
		found |= x->loop.attempt == attempt;
	spin_unlock(&loop_acc_lock);
	return found;
}

/*
 * The accepted end of attempt (waiting for it up to timeout_ms when
 * wait_ms), or NULL; every other accepted end is an orphan and is freed.
 */
static struct odsm_rdma_conn *loop_take_accepted(u64 attempt, u32 wait_ms)
{
	struct odsm_rdma_conn *x, *tmp, *mine = NULL;
	LIST_HEAD(all);

	if (wait_ms)
		wait_event_timeout(loop_acc_wait, loop_acc_has(attempt),
				   msecs_to_jiffies(wait_ms));
	spin_lock(&loop_acc_lock);
	list_splice_init(&loop_acc, &all);
	spin_unlock(&loop_acc_lock);
	list_for_each_entry_safe(x, tmp, &all, loop.node) {
		list_del_init(&x->loop.node);
		if (!mine && attempt && x->loop.attempt == attempt)
			mine = x;
		else
			loop_end_free(x);
	}
	return mine;
}

static bool loop_end_ok(struct odsm_rdma_conn *x)
{
	return x && !READ_ONCE(x->broken) && !READ_ONCE(x->conn->dead);
}

/* Dial ourselves: both ends of a new pair into loop.  Under loop_lock. */
static int loop_dial(void)
{
	struct loop_pdata d = {
		.magic = cpu_to_le64(LOOP_MAGIC),
		.incarnation = cpu_to_le64(odsm_cluster_incarnation()),
		.attempt = cpu_to_le64(++loop_attempt),
	};
	struct rdma_conn_param p;
	struct odsm_rdma_conn *x, *resp;
	int ret;

	x = odsm_rdma_conn_alloc(odsm_cluster_self(), true);
	if (!x)
		return -ENOMEM;
	x->loop.end = true;
	ret = odsm_rdma_dial_prepare(x, odsm_cluster_addr(odsm_cluster_self()), &p);
	if (ret)
		goto err;
	ret = -EOPNOTSUPP;
	if (!odsm_rdma_dev_atomics(x->dev))
		goto err;
	p.private_data = &d;
	p.private_data_len = sizeof(d);
	ret = odsm_rdma_dial_connect(x, &p);
	resp = loop_take_accepted(loop_attempt, ret ? 0 : x->timeout_ms);
	if (!ret && !resp)
		ret = -ECONNRESET;	/* accepted, and gone already */
	if (ret) {
		loop_end_free(resp);
		goto err;
	}
	mutex_lock(&odsm_rdma_lock);
	list_add(&x->node, &odsm_rdma_conns);
	mutex_unlock(&odsm_rdma_lock);
	loop.req = x;
	loop.resp = resp;
	return 0;
err:
	odsm_rdma_conn_abort(x, false);
	return ret;
}

static void loop_destroy_locked(void)
{
	loop_end_free(loop.req);
	loop_end_free(loop.resp);
	loop.req = NULL;
	loop.resp = NULL;
}

void odsm_rdma_loop_destroy(void)
{
	mutex_lock(&loop_lock);
	loop_destroy_locked();
	loop_take_accepted(0, 0);
	mutex_unlock(&loop_lock);
}

int odsm_rdma_loop_get(struct odsm_rdma_loop *lp)
{
	int ret = 0;

	mutex_lock(&loop_lock);
	if (!loop_end_ok(loop.req) || !loop_end_ok(loop.resp)) {
		loop_destroy_locked();
		ret = -EHOSTDOWN;
		if (odsm_cluster_transport() == &odsm_rdma_ops)
			ret = loop_dial();
	}
	if (!ret) {
		*lp = loop;
		kref_get(&lp->req->conn->ref);
		kref_get(&lp->resp->conn->ref);
	}
	mutex_unlock(&loop_lock);
	return ret;
}

void odsm_rdma_loop_put(struct odsm_rdma_loop *lp)
{
	odsm_conn_put(lp->req->conn);
	odsm_conn_put(lp->resp->conn);
}
