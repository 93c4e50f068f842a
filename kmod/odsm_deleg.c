// SPDX-License-Identifier: GPL-2.0
/*
 * Delegation across nodes: the module carries a client's batch
 * (uapi/linux/odsm_deleg.h) to the trustee runtime of another node, or of
 * this one, and its response batch back (Documentation/odsm/delegation.rst,
 * "Across nodes").
 *
 * A runtime is an *endpoint*: a global address in its node's partition (the
 * runtime's odsm_deleg_addr()), served by the open file of /dev/odsm that
 * bound it (ODSM_IOC_DELEG_BIND).  A client's ODSM_IOC_DELEG_CALL validates
 * its batch, then hands it to the endpoint's node: a DELEG request over the
 * cluster's transport, or straight to the endpoint when it is here.  There
 * the batch is validated again (it came from the network), queued on the
 * endpoint, and the request waits for the answer.  The runtime's
 * ODSM_IOC_DELEG_SERVE answers the batch it took last and takes the next,
 * sleeping while there is none: one system call per batch on each side.
 *
 * A runtime that bound with lanes gets most batches written straight into
 * its trustees' slots instead (odsm_deleg_lane.c): no gateway thread, no
 * SERVE.  What the gateway must see, and what finds every lane busy, is
 * queued as above.
 *
 * Failure: a batch for an endpoint no one serves is refused at once
 * (-ESRCH); a runtime whose file closes fails its queued and taken batches
 * at once (-EOWNERDEAD); one that does not answer within three quarters of
 * the cluster's timeout (the client node's, if shorter: DELEG's wait_ms)
 * fails the batch (-ETIMEDOUT), so the client hears before its own call
 * times out; a node that goes down fails its calls
 * (-EHOSTDOWN, from the core).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/file.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include "odsm.h"
#include "odsm_core.h"
#include "odsm_deleg.h"
#include "odsm_deleg_lane.h"
#include "odsm_dslot.h"

/* A runtime serving an endpoint of this node's partition. */
struct deleg_ep {
	struct list_head node;		/* on deleg_eps */
	struct kref ref;
	const struct file *owner;	/* the file that bound it */
	u64 endpoint;
	u32 slot_size;
	struct mutex lock;		/* the lists, dead, next_ticket */
	struct list_head queue;		/* batches not taken yet */
	struct list_head taken;		/* taken, not answered */
	wait_queue_head_t wq;
	bool dead;
	u64 next_ticket;
	struct deleg_lanes *lanes;	/* NULL: every batch is queued */
};

/*
 * A batch delivered to an endpoint, on its deliverer's stack: on one of
 * the endpoint's lists until answered, failed or given up, which happens
 * under the endpoint's lock, and complete()d then (see deliver()).
 */
struct deleg_item {
	struct list_head node;
	const u8 *req;			/* slot_size bytes, validated */
	u32 req_len;
	u32 count;			/* its records */
	u32 from;			/* the client's node */
	u64 ticket;
	u8 *resp;			/* the answer: kvmalloc()ed */
	u32 resp_len;
	int status;
	struct completion done;
};

static LIST_HEAD(deleg_eps);
static DEFINE_MUTEX(deleg_eps_lock);

/*
 * Peers' batches waiting here for a runtime's answer.  Each holds a worker
 * of the core's workqueue and one of its peer's ODSM_PEER_REQS_MAX (64)
 * requests in flight for up to 3/4 of the cluster's timeout: unbounded, a
 * runtime that does not answer would have 64 batches of a peer take every
 * request of that peer (its READs, WRITEs, FETCHes... refused -EAGAIN
 * meanwhile) and four peers' take every worker of the workqueue (256, its
 * default: PONGs and all requests wait behind them).  Past half of either
 * a DELEG is answered -EBUSY at once.
 */
#define DELEG_PEER_WAITING_MAX	32
#define DELEG_WAITING_MAX	128

static atomic_t deleg_waiting_of[ODSM_MAX_NODES];
static atomic_t deleg_waiting;

static bool waiting_get(u32 node)
{
	if (atomic_inc_return(&deleg_waiting_of[node]) >
	    DELEG_PEER_WAITING_MAX)
		goto undo_peer;
	if (atomic_inc_return(&deleg_waiting) > DELEG_WAITING_MAX)
		goto undo_all;
	return true;

undo_all:
	atomic_dec(&deleg_waiting);
undo_peer:
	atomic_dec(&deleg_waiting_of[node]);
	return false;
}

static void waiting_put(u32 node)
{
	atomic_dec(&deleg_waiting);
	atomic_dec(&deleg_waiting_of[node]);
}

static void ep_free(struct kref *ref)
{
	struct deleg_ep *ep = container_of(ref, struct deleg_ep, ref);

	odsm_lanes_free(ep->lanes);
	kfree(ep);
}

static struct deleg_ep *ep_find(u64 endpoint)
{
	struct deleg_ep *ep;

	mutex_lock(&deleg_eps_lock);
	list_for_each_entry(ep, &deleg_eps, node) {
		if (ep->endpoint == endpoint) {
			kref_get(&ep->ref);
			mutex_unlock(&deleg_eps_lock);
			return ep;
		}
	}
	mutex_unlock(&deleg_eps_lock);
	return NULL;
}

static struct deleg_ep *ep_of_file(const struct file *filp)
{
	struct deleg_ep *ep;

	mutex_lock(&deleg_eps_lock);
	list_for_each_entry(ep, &deleg_eps, node) {
		if (ep->owner == filp) {
			kref_get(&ep->ref);
			mutex_unlock(&deleg_eps_lock);
			return ep;
		}
	}
	mutex_unlock(&deleg_eps_lock);
	return NULL;
}

/* Under ep->lock: take the item off its list and wake its deliverer. */
static void item_finish(struct deleg_item *it, int status)
{
	list_del_init(&it->node);
	it->status = status;
	complete(&it->done);
}

/*
 * Validate a request batch of *len bytes copied into slot (slot_size
 * bytes, zero past *len): its record count, or -EBADMSG.  The batch is
 * checked whole before anything of it is handed on, with the same checker
 * the trustee runs on a slot.  *len becomes the batch's own length and the
 * bytes past it are zeroed: what no record accounts for is neither carried
 * to another node nor shown to a runtime.
 */
static int batch_check(u8 *slot, u32 slot_size, u32 *len)
{
	struct odsm_dreq_view *v;
	struct odsm_dslot_hdr h;
	u32 max = odsm_dslot_max_count(slot_size), n = 0, end;
	int ret;

	memcpy(&h, slot, sizeof(h));
	/* what lies past len was not sent: the header must not reach it */
	if (*len < ODSM_DSLOT_HDR || h.len > *len - ODSM_DSLOT_HDR)
		return -EBADMSG;
	v = kvmalloc_array(max, sizeof(*v), ODSM_GFP_REQ);
	if (!v)
		return -ENOMEM;
	ret = odsm_dslot_parse_req(slot, slot_size, v, max, &n);
	kvfree(v);
	if (ret)
		return ret;
	end = ODSM_DSLOT_HDR + h.len;
	memset(slot + end, 0, *len - end);
	*len = end;
	return n;
}

/*
 * Room to check the answer to a batch of count requests in, taken before
 * the batch runs (or, for a runtime's answer, before the batch is
 * finished): once it has run, a check that cannot get memory would fail a
 * batch whose effects are done.
 */
struct deleg_views {
	struct odsm_dresp_view *rv;
	struct odsm_dreq_view *qv;
};

static void views_put(struct deleg_views *v)
{
	kvfree(v->qv);
	kvfree(v->rv);
	v->qv = NULL;
	v->rv = NULL;
}

static int views_get(struct deleg_views *v, u32 count)
{
	v->rv = kvmalloc_array(count ? count : 1, sizeof(*v->rv),
			       ODSM_GFP_REQ);
	v->qv = kvmalloc_array(count ? count : 1, sizeof(*v->qv),
			       ODSM_GFP_REQ);
	if (v->rv && v->qv)
		return 0;
	views_put(v);
	return -ENOMEM;
}

/*
 * Validate a response batch (len bytes in resp) answering the count
 * requests of the validated batch req, in v (views_get() for count):
 * well formed, and every result in its request's place and within the
 * room that request gave (ret_max).  The client's library checks the
 * same; the module checks it so that a runtime or a peer that answers out
 * of bounds is refused and counted here, whatever client is listening.
 */
static int resp_check(const u8 *resp, const u8 *req, u32 slot_size, u32 len,
		      u32 count, const struct deleg_views *v)
{
	struct odsm_dslot_hdr h;
	s32 status;
	u32 n = 0;
	int ret;

	memcpy(&h, resp, sizeof(h));
	if (len < ODSM_DSLOT_HDR || h.len > len - ODSM_DSLOT_HDR)
		return -EBADMSG;
	ret = odsm_dslot_parse_resp(resp, slot_size, count, v->rv, &status);
	if (ret || status)
		return ret;	/* a refused batch has no records to match */
	ret = odsm_dslot_parse_req(req, slot_size, v->qv, count, &n);
	if (!ret && n != count)
		ret = -EBADMSG;
	if (!ret)
		ret = odsm_dslot_answers(v->qv, v->rv, count);
	return ret;
}

/*
 * Through a lane of ep, straight to the batch's trustee (odsm_deleg_lane.c),
 * when it has one for it: -EAGAIN when it does not (the caller queues the
 * batch), else as deliver().  The answer is checked as a gateway's is.
 * What checking and keeping the answer takes is allocated before the batch
 * runs (without it, the batch is queued): a batch that ran is never
 * reported failed for want of memory afterwards.
 */
static int deliver_lane(struct deleg_ep *ep, const u8 *req, u32 req_len,
			u32 count, u32 wait_ms, u8 **resp, u32 *resp_len)
{
	struct deleg_views v;
	u8 *buf;
	u32 lane;
	int ret;

	/* a runtime that is going: the queue answers -EOWNERDEAD */
	if (!ep->lanes || READ_ONCE(ep->dead))
		return -EAGAIN;
	if (views_get(&v, count))
		return -EAGAIN;
	ret = -EAGAIN;
	buf = kvzalloc(ep->slot_size, ODSM_GFP_REQ);
	if (!buf)
		goto out;
	ret = odsm_lanes_take(ep->lanes, req, &lane);
	if (ret == -EBUSY)
		odsm_stat_inc(ODSM_STAT_deleg_lane_full);
	if (ret) {
		ret = -EAGAIN;
		goto out;
	}
	ret = odsm_lanes_run(ep->lanes, lane, req, req_len, &ep->dead,
			     wait_ms, buf, resp_len);
	if (ret)
		goto out;	/* -EAGAIN: not published, queued instead */
	ret = resp_check(buf, req, ep->slot_size, *resp_len, count, &v);
	if (ret == -EBADMSG)
		odsm_stat_inc(ODSM_STAT_deleg_malformed);
	if (ret)
		goto out;
	*resp = buf;
	buf = NULL;
	odsm_stat_inc(ODSM_STAT_deleg_lane_batches);
out:
	kvfree(buf);
	views_put(&v);
	return ret;
}

/*
 * How long a batch may wait here for its runtime: three quarters of the
 * cluster's timeout, so that its client, which waits a whole timeout from
 * the moment it sent, hears the answer or the failure first.
 */
static u32 own_wait_ms(void)
{
	u32 ms = odsm_cluster_timeout_ms() * 3 / 4;

	BUILD_BUG_ON(ODSM_TIMEOUT_MS_MAX * 3 / 4 != ODSM_WIRE_DELEG_WAIT_MAX);
	if (!ms)	/* not joined: only this node's own clients */
		ms = 1500;
	return clamp_t(u32, ms, 1, ODSM_WIRE_DELEG_WAIT_MAX);
}

/*
 * Hand a validated batch (req: slot_size bytes) to the runtime at endpoint
 * of this node and wait up to wait_ms for its answer: 0 and *resp
 * (kvmalloc()ed, the caller frees it) and *resp_len, or -errno.
 */
static int deliver(u64 endpoint, u32 slot_size, const u8 *req, u32 req_len,
		   u32 count, u32 from, u32 wait_ms, u8 **resp, u32 *resp_len)
{
	struct deleg_item it = {
		.req = req, .req_len = req_len, .count = count, .from = from,
	};
	struct deleg_ep *ep = ep_find(endpoint);
	long left;
	int ret;

	if (!ep)
		return -ESRCH;
	ret = -EINVAL;
	if (ep->slot_size != slot_size)
		goto out;
	ret = deliver_lane(ep, req, req_len, count, wait_ms, resp, resp_len);
	if (ret != -EAGAIN)
		goto done;
	init_completion(&it.done);
	mutex_lock(&ep->lock);
	if (ep->dead) {
		mutex_unlock(&ep->lock);
		ret = -EOWNERDEAD;
		goto out;
	}
	list_add_tail(&it.node, &ep->queue);
	mutex_unlock(&ep->lock);
	wake_up_interruptible(&ep->wq);

	/*
	 * Killable: a local client that is killed must not outlive its
	 * signal by up to 3/4 of the cluster's timeout (45 s at most) in
	 * an unkillable sleep.  (A worker serving a peer's DELEG gets no
	 * signal: its wait ends by the timeout.)
	 */
	left = wait_for_completion_killable_timeout(&it.done,
						    msecs_to_jiffies(wait_ms));
	if (left <= 0) {
		mutex_lock(&ep->lock);
		if (!list_empty(&it.node))
			item_finish(&it, left ? -EINTR : -ETIMEDOUT);
		mutex_unlock(&ep->lock);
		/* finished by us or by the runtime: either way it is done */
		wait_for_completion(&it.done);
	}
	ret = it.status;
	if (!ret) {
		*resp = it.resp;
		*resp_len = it.resp_len;
	} else {
		kvfree(it.resp);
	}
done:
	if (!ret) {
		odsm_stat_inc(ODSM_STAT_deleg_in_batches);
		odsm_stat_add(ODSM_STAT_deleg_in_requests, count);
		odsm_stat_add(ODSM_STAT_deleg_in_bytes, req_len + *resp_len);
	}
out:
	kref_put(&ep->ref, ep_free);
	return ret;
}

/* ---- the endpoint's node: DELEG requests ---------------------------------- */

static int serve(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		 const u8 *payload, u8 *reply, u32 *rlen, const void **data,
		 u32 *dlen)
{
	struct odsm_wire_deleg d;
	u8 *slot, *resp = NULL;
	u32 len, resp_len = 0;
	bool local;
	int ret, n;

	*rlen = 0;
	ret = odsm_wire_get_deleg(payload, h->len, &d);
	if (ret) {
		odsm_stat_inc(ODSM_STAT_deleg_malformed);
		return -EPROTO;
	}
	/* an endpoint of another partition is none of ours */
	if (odsm_home_of(d.endpoint, 8, &local) < 0 || !local) {
		odsm_stat_inc(ODSM_STAT_deleg_in_errors);
		return -ESRCH;
	}
	len = h->len - ODSM_WIRE_DELEG_SIZE;
	/* no memory here: refused, nothing ran (the client's -EAGAIN) */
	slot = kvzalloc(d.slot_size, ODSM_GFP_REQ);
	if (!slot)
		return -EAGAIN;
	memcpy(slot, payload + ODSM_WIRE_DELEG_SIZE, len);
	n = batch_check(slot, d.slot_size, &len);
	if (n < 0) {
		/* answered, not run: its sender must not wait for nothing */
		if (n == -EBADMSG)
			odsm_stat_inc(ODSM_STAT_deleg_malformed);
		ret = n == -ENOMEM ? -EAGAIN : n;
		goto out;
	}
	/* the header's src_node is its connection's peer: < nr_nodes */
	if (!waiting_get(h->src_node)) {
		ret = -EBUSY;
		odsm_stat_inc(ODSM_STAT_deleg_in_errors);
		goto out;
	}
	/*
	 * The sender's budget, if shorter than ours: a batch still queued
	 * when its client has given up must not run after all.
	 */
	ret = deliver(d.endpoint, d.slot_size, slot, len, n, h->src_node,
		      min(d.wait_ms, own_wait_ms()), &resp, &resp_len);
	waiting_put(h->src_node);
	if (ret) {
		odsm_stat_inc(ODSM_STAT_deleg_in_errors);
		goto out;
	}
	*data = resp;
	*dlen = resp_len;
out:
	kvfree(slot);
	return ret;
}

static const struct odsm_msg_handler handler = {
	.type = ODSM_MSG_DELEG, .reply = ODSM_MSG_DELEG_REPLY, .serve = serve,
};

/* ---- the client's node: ODSM_IOC_DELEG_CALL ------------------------------- */

static long call(struct odsm_deleg_call *a, u8 *slot, u8 **resp,
		 u32 *resp_len)
{
	struct odsm_wire_deleg d = {
		.endpoint = a->endpoint, .slot_size = a->slot_size,
		.wait_ms = own_wait_ms(),
	};
	u8 fixed[ODSM_WIRE_DELEG_SIZE];
	struct deleg_views v;
	u32 len = a->req_len;
	bool local;
	int node, n, ret;

	if (copy_from_user(slot, u64_to_user_ptr(a->req), len))
		return -EFAULT;
	n = batch_check(slot, a->slot_size, &len);
	if (n == -EBADMSG)
		odsm_stat_inc(ODSM_STAT_deleg_malformed);
	if (n < 0)
		return n;
	node = odsm_home_of(a->endpoint, 8, &local);
	if (node < 0)
		return node;
	if (local)
		return deliver(a->endpoint, a->slot_size, slot, len, n,
			       node, d.wait_ms, resp, resp_len);

	*resp = kvmalloc(a->slot_size, ODSM_GFP_REQ);
	if (!*resp || views_get(&v, n))
		return -ENOMEM;		/* nothing sent (the caller frees) */
	odsm_wire_put_deleg(fixed, &d);
	ret = odsm_rpc(node, ODSM_MSG_DELEG, fixed, sizeof(fixed), slot,
		       len, *resp, a->slot_size, resp_len);
	if (ret)
		goto out;
	/* what came back is the network's: check it as the client would */
	memset(*resp + *resp_len, 0, a->slot_size - *resp_len);
	ret = resp_check(*resp, slot, a->slot_size, *resp_len, n, &v);
	if (ret == -EBADMSG)
		odsm_stat_inc(ODSM_STAT_deleg_malformed);
	if (!ret) {
		odsm_stat_add(ODSM_STAT_deleg_out_requests, n);
		odsm_stat_add(ODSM_STAT_deleg_out_bytes, len + *resp_len);
	}
out:
	views_put(&v);
	return ret;
}

long odsm_ioc_deleg_call(void __user *uarg)
{
	struct odsm_deleg_call a;
	u8 *slot, *resp = NULL;
	u32 resp_len = 0;
	long ret;

	/*
	 * Counted here, as every failure of this call is (odsm_dev.c counts
	 * it nowhere else): bad arguments too.
	 */
	ret = -EFAULT;
	if (copy_from_user(&a, uarg, sizeof(a)))
		goto bad;
	ret = -EINVAL;
	if (a.reserved[0] || a.reserved[1] || !odsm_dslot_size_ok(a.slot_size) ||
	    a.req_len < ODSM_DSLOT_HDR || a.req_len > a.slot_size)
		goto bad;
	/*
	 * An answer may take the whole slot: with less room, one could come
	 * back too long to copy out after its batch ran, and the client
	 * would hear an error for a batch that ran.  Refused before it is
	 * sent.
	 */
	ret = -EMSGSIZE;
	if (a.resp_cap < a.slot_size)
		goto bad;
	ret = -ENOMEM;
	slot = kvzalloc(a.slot_size, ODSM_GFP_REQ);
	if (!slot)
		goto bad;
	odsm_stat_inc(ODSM_STAT_deleg_out_batches);
	ret = call(&a, slot, &resp, &resp_len);
	if (!ret && resp_len > a.resp_cap)
		ret = -EMSGSIZE;
	if (!ret && copy_to_user(u64_to_user_ptr(a.resp), resp, resp_len))
		ret = -EFAULT;
	a.resp_len = resp_len;
	if (!ret && copy_to_user(uarg, &a, sizeof(a)))
		ret = -EFAULT;
	if (ret)
		odsm_stat_inc(ODSM_STAT_deleg_out_errors);
	kvfree(resp);
	kvfree(slot);
	return ret;

bad:
	odsm_stat_inc(ODSM_STAT_deleg_out_errors);
	return ret;
}

/* ---- the runtime's side: BIND, SERVE, and its file's end ------------------- */

long odsm_ioc_deleg_bind(struct file *filp, void __user *uarg)
{
	struct odsm_deleg_bind b;
	struct deleg_ep *ep, *e;
	bool local;

	if (copy_from_user(&b, uarg, sizeof(b)))
		return -EFAULT;
	if ((b.flags & ~ODSM_DELEG_BIND_LANES) || b.reserved ||
	    (!(b.flags & ODSM_DELEG_BIND_LANES) && b.lanes) ||
	    !odsm_dslot_size_ok(b.slot_size))
		return -EINVAL;
	/* the endpoint names a runtime of this node: its arena is here */
	if (odsm_home_of(b.endpoint, 8, &local) < 0 || !local)
		return -EINVAL;
	ep = kzalloc(sizeof(*ep), GFP_KERNEL);
	if (!ep)
		return -ENOMEM;
	if (b.flags & ODSM_DELEG_BIND_LANES) {
		struct odsm_deleg_lanes u;
		struct deleg_lanes *l;

		if (copy_from_user(&u, u64_to_user_ptr(b.lanes), sizeof(u))) {
			kfree(ep);
			return -EFAULT;
		}
		l = odsm_lanes_create(&u, b.slot_size, b.endpoint);
		if (IS_ERR(l)) {
			kfree(ep);
			return PTR_ERR(l);
		}
		ep->lanes = l;
	}
	kref_init(&ep->ref);
	ep->owner = filp;
	ep->endpoint = b.endpoint;
	ep->slot_size = b.slot_size;
	mutex_init(&ep->lock);
	INIT_LIST_HEAD(&ep->queue);
	INIT_LIST_HEAD(&ep->taken);
	init_waitqueue_head(&ep->wq);

	mutex_lock(&deleg_eps_lock);
	list_for_each_entry(e, &deleg_eps, node) {
		if (e->endpoint == b.endpoint || e->owner == filp) {
			mutex_unlock(&deleg_eps_lock);
			odsm_lanes_free(ep->lanes);
			kfree(ep);
			return -EADDRINUSE;
		}
	}
	list_add(&ep->node, &deleg_eps);
	mutex_unlock(&deleg_eps_lock);
	return 0;
}

/*
 * An answer of a length no slot has, to the batch of ticket done: its
 * client hears -EBADMSG now, as for any malformed answer, rather than
 * waiting out its time.  -EBADMSG, or -EINVAL when no batch has that
 * ticket.
 */
static long answer_bad_len(struct deleg_ep *ep, u64 done)
{
	struct deleg_item *it;
	long ret = -EINVAL;

	mutex_lock(&ep->lock);
	list_for_each_entry(it, &ep->taken, node) {
		if (it->ticket != done)
			continue;
		odsm_stat_inc(ODSM_STAT_deleg_malformed);
		item_finish(it, -EBADMSG);
		ret = -EBADMSG;
		break;
	}
	mutex_unlock(&ep->lock);
	return ret;
}

/* Answer the batch of ticket done with the user's len bytes at uresp. */
static long answer(struct deleg_ep *ep, u64 done, const void __user *uresp,
		   u32 len)
{
	struct deleg_views v = {};
	struct deleg_item *it;
	u8 *resp;
	long ret;

	if (len < ODSM_DSLOT_HDR || len > ep->slot_size)
		return answer_bad_len(ep, done);
	resp = kvzalloc(ep->slot_size, ODSM_GFP_REQ);
	if (!resp)
		return -ENOMEM;
	if (copy_from_user(resp, uresp, len)) {
		kvfree(resp);
		return -EFAULT;
	}
	mutex_lock(&ep->lock);
	ret = -ENOENT;
	list_for_each_entry(it, &ep->taken, node) {
		if (it->ticket != done)
			continue;
		/* no room to check it: the batch stays taken, given again */
		ret = views_get(&v, it->count);
		if (ret)
			break;
		ret = resp_check(resp, it->req, ep->slot_size, len,
				 it->count, &v);
		if (ret) {
			if (ret == -EBADMSG)
				odsm_stat_inc(ODSM_STAT_deleg_malformed);
			item_finish(it, ret);
			break;
		}
		it->resp = resp;
		it->resp_len = len;
		resp = NULL;
		item_finish(it, 0);
		break;
	}
	mutex_unlock(&ep->lock);
	views_put(&v);
	kvfree(resp);
	return ret;
}

/*
 * The wake condition, read without the lock (a sleeper must not take a
 * mutex): a hint, looked at again under the lock.
 */
static bool ep_ready(struct deleg_ep *ep)
{
	return READ_ONCE(ep->dead) || !list_empty_careful(&ep->queue);
}

/*
 * Put the batch of ticket back at the head of the queue, if its deliverer
 * still waits for it: taken, but its runtime could not be told.
 */
static void untake(struct deleg_ep *ep, u64 ticket)
{
	struct deleg_item *it;

	mutex_lock(&ep->lock);
	list_for_each_entry(it, &ep->taken, node) {
		if (it->ticket == ticket) {
			list_move(&it->node, &ep->queue);
			break;
		}
	}
	mutex_unlock(&ep->lock);
	/* another thread of the runtime may sleep in SERVE meanwhile */
	wake_up_interruptible(&ep->wq);
}

long odsm_ioc_deleg_serve(struct file *filp, void __user *uarg)
{
	struct odsm_deleg_serve s;
	struct deleg_item *it;
	struct deleg_ep *ep;
	u8 *buf = NULL;
	long ret = 0, left;

	if (copy_from_user(&s, uarg, sizeof(s)))
		return -EFAULT;
	if (s.reserved[0] || s.reserved[1])
		return -EINVAL;
	ep = ep_of_file(filp);
	if (!ep)
		return -EBADF;
	if (s.done) {
		ret = answer(ep, s.done, u64_to_user_ptr(s.resp), s.resp_len);
		/*
		 * A client that gave up (its batch timed out, counted
		 * there) does not stop the runtime's loop: the answer goes
		 * nowhere and the next batch is taken as usual.
		 */
		if (ret == -ENOENT)
			ret = 0;
		if (ret)
			goto out;
	}
	if (s.timeout_ms) {
		long to = msecs_to_jiffies(s.timeout_ms);

		left = wait_event_interruptible_timeout(ep->wq, ep_ready(ep),
							to);
		if (!left) {
			ret = -EAGAIN;
			goto out;
		}
	} else {
		left = wait_event_interruptible(ep->wq, ep_ready(ep));
	}
	if (left < 0) {
		ret = -EINTR;
		goto out;
	}
	buf = kvmalloc(ep->slot_size, ODSM_GFP_REQ);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	mutex_lock(&ep->lock);
	it = list_first_entry_or_null(&ep->queue, struct deleg_item, node);
	if (!it) {
		mutex_unlock(&ep->lock);
		ret = -EAGAIN;	/* taken meanwhile */
		goto out;
	}
	/*
	 * Copied out under the lock (the item lives on its deliverer's
	 * stack, which gives it up only under this lock), but into the
	 * kernel: a copy to user memory can wait without bound (a page
	 * that userfaultfd or FUSE holds), and a deliverer whose time is up
	 * takes this lock to give up, so it would wait as long.
	 */
	memcpy(buf, it->req, it->req_len);
	it->ticket = ++ep->next_ticket;
	list_move_tail(&it->node, &ep->taken);
	s.ticket = it->ticket;
	s.req_len = it->req_len;
	s.node = it->from;
	mutex_unlock(&ep->lock);
	if (copy_to_user(u64_to_user_ptr(s.req), buf, s.req_len) ||
	    copy_to_user(uarg, &s, sizeof(s))) {
		/* the runtime never learnt of it: the next SERVE takes it */
		untake(ep, s.ticket);
		ret = -EFAULT;
	}
out:
	kvfree(buf);
	kref_put(&ep->ref, ep_free);
	return ret;
}

/* The file that bound an endpoint closes: its runtime is gone. */
void odsm_deleg_release(struct file *filp)
{
	struct deleg_item *it, *tmp;
	struct deleg_ep *ep;

	mutex_lock(&deleg_eps_lock);
	list_for_each_entry(ep, &deleg_eps, node) {
		if (ep->owner == filp) {
			list_del(&ep->node);
			goto found;
		}
	}
	mutex_unlock(&deleg_eps_lock);
	return;
found:
	mutex_unlock(&deleg_eps_lock);
	mutex_lock(&ep->lock);
	WRITE_ONCE(ep->dead, true);
	list_for_each_entry_safe(it, tmp, &ep->queue, node)
		item_finish(it, -EOWNERDEAD);
	list_for_each_entry_safe(it, tmp, &ep->taken, node)
		item_finish(it, -EOWNERDEAD);
	mutex_unlock(&ep->lock);
	wake_up_interruptible_all(&ep->wq);
	/* a deliverer waiting on a lane sees dead now, not at its timeout */
	if (ep->lanes)
		odsm_lanes_close(ep->lanes);
	kref_put(&ep->ref, ep_free);
}

int odsm_deleg_init(void)
{
	return odsm_handler_register(&handler);
}

void odsm_deleg_exit(void)
{
	odsm_handler_unregister(&handler);
}
