// SPDX-License-Identifier: GPL-2.0
/*
 * The RDMA transport's loopback pair (see below), beside the connection
 * manager (odsm_rdma.c) and the one-sided work (odsm_rdma_onesided.c),
 * with which it shares odsm_rdma.h.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/random.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/wait.h>
#include <crypto/algapi.h>
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
 * The dialled end's request carries LOOP_MAGIC, the attempt's number and
 * a token of LOOP_TOKEN_SIZE random bytes drawn for that attempt, which
 * never leaves this kernel but in that request (the CM hands it to our
 * own listener through our own device).  The listener accepts a request
 * as the pair's other end only from our own address, for the attempt
 * under way, with its token (compared in constant time), and only once:
 * the token is spent by the first request that shows it.  Everything else
 * that claims to be the pair (LOOP_MAGIC) is refused and counted
 * (rdma_loop_refused): a local user of the RDMA CM, who can send any
 * private data from our own address, could otherwise plant the pair's
 * other end -- which holds the registrations of our blocks -- with data
 * that was all public (the incarnation goes in clear in every HELLO, the
 * attempt is a counter).  The dialler takes the accepted end of its own
 * attempt only (a late request of an abandoned attempt is refused, its
 * token gone; an accepted end of one is an orphan that it frees).  The
 * accepted end holds the registrations of our blocks, in its own PD.
 */
#define LOOP_MAGIC	0x504f4f4c4d53444fULL	/* "ODSMLOOP" in LE */
#define LOOP_TOKEN_SIZE	32

/* 48 bytes: within the 56 of private data an RDMA_PS_TCP request has */
struct loop_pdata {
	__le64 magic;
	__le64 attempt;
	u8 token[LOOP_TOKEN_SIZE];
};

static DEFINE_MUTEX(loop_lock);		/* loop, loop_attempt */
static struct odsm_rdma_loop loop;
static u64 loop_attempt;
/*
 * Under loop_acc_lock: accepted ends not yet taken by their dialler (on
 * loop_node), and the attempt under way with its token (tok_attempt 0:
 * none, or its token spent).
 */
static DEFINE_SPINLOCK(loop_acc_lock);
static LIST_HEAD(loop_acc);
static DECLARE_WAIT_QUEUE_HEAD(loop_acc_wait);
static u64 tok_attempt;
static u8 tok[LOOP_TOKEN_SIZE];

/* Does the request claim to be the loopback pair's?  Checked by on_loop_req. */
bool odsm_rdma_is_loop_req(struct rdma_cm_event *ev)
{
	const struct loop_pdata *d = ev->param.conn.private_data;

	return d && ev->param.conn.private_data_len >= sizeof(*d) &&
	       le64_to_cpu(d->magic) == LOOP_MAGIC;
}

/*
 * Is the request the one loop_dial made?  Our own address, the attempt
 * under way and its token, which it spends.  Under no lock of ours but
 * loop_acc_lock: the dialler holds loop_lock while it waits for us.
 */
static bool loop_req_genuine(const struct loop_pdata *d,
			     const struct sockaddr_in *from)
{
	bool ok;

	if (from->sin_addr.s_addr !=
	    odsm_cluster_addr(odsm_cluster_self()).sin_addr.s_addr)
		return false;
	spin_lock(&loop_acc_lock);
	ok = tok_attempt && le64_to_cpu(d->attempt) == tok_attempt &&
	     !crypto_memneq(d->token, tok, sizeof(tok));
	if (ok)
		tok_attempt = 0;
	spin_unlock(&loop_acc_lock);
	return ok;
}

/* A new token for attempt, or (attempt 0) none at all. */
static void loop_token_set(u64 attempt, u8 *out)
{
	spin_lock(&loop_acc_lock);
	tok_attempt = attempt;
	if (attempt) {
		get_random_bytes(tok, sizeof(tok));
		memcpy(out, tok, sizeof(tok));
	} else {
		memzero_explicit(tok, sizeof(tok));
	}
	spin_unlock(&loop_acc_lock);
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
	struct sockaddr_in *from = (struct sockaddr_in *)&id->route.addr.dst_addr;
	struct rdma_conn_param p;
	struct odsm_rdma_conn *x;
	int ret;

	if (!loop_req_genuine(d, from)) {
		odsm_stat_inc(ODSM_STAT_rdma_loop_refused);
		pr_notice_ratelimited("rdma: refused a loopback pair request from %pI4 without this attempt's token\n",
				      &from->sin_addr);
		return -EACCES;		/* the core rejects and destroys the id */
	}
	odsm_rdma_accept_param(id, ev, &p);
	x = odsm_rdma_conn_alloc(odsm_cluster_self(), false);
	if (!x)
		return -ENOMEM;
	x->id = id;
	id->context = x;
	x->park.cm_started = true;	/* as on_connect_req */
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
	loop_token_set(loop_attempt, d.token);
	p.private_data = &d;
	p.private_data_len = sizeof(d);
	ret = odsm_rdma_dial_connect(x, &p);
	memzero_explicit(&d, sizeof(d));
	resp = loop_take_accepted(loop_attempt, ret ? 0 : x->timeout_ms);
	/* this attempt is over: nothing more is accepted for it */
	loop_token_set(0, NULL);
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
