// SPDX-License-Identifier: GPL-2.0
/*
 * Remote primitives (DRust's dalloc/dread/dwrite, and atomics): the ioctls
 * that reach any node's partition, and the home node's side that serves
 * them.  An address decides its node; this node's own partition is served
 * in place, any other through a request to its node.
 *
 * Everything a request names is checked on the home node before use: the
 * range must lie in the home node's partition, in blocks that hold
 * objects; frees and allocations go through the same checks as local ones.
 */
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include "odsm.h"
#include "odsm_core.h"
#include "odsm_cache.h"
#include "odsm_onesided.h"
#include "odsm_remote.h"
#include "odsm_lat.h"
#include "odsm_trace.h"
#include "odsm_wait.h"

#define CHUNK	ODSM_WIRE_MAX_DATA

/* a request's buffer holds its reply too */
static_assert(ODSM_WIRE_ATOMIC_REPLY_SIZE <= ODSM_WIRE_ATOMIC_SIZE);
static_assert(ODSM_WIRE_ALLOC_REPLY_SIZE <= ODSM_WIRE_ALLOC_SIZE);

/* ---- the home node's side ----------------------------------------------- */

/*
 * An atomic on the word at addr of our partition, for a process of ours
 * or a peer's request.  A flagged one (ODSM_ATOMIC_F_NIC) is run by our
 * RDMA device when peers may run theirs one-sided: a CPU atomic would not
 * be atomic against those.  Either wakes the word's waiters (ODSM_IOC_WAIT)
 * when it may have changed it: the kernel is the writer here, so it calls
 * the wake no process could.
 */
static int odsm_home_atomic(u64 addr, u32 op, u32 flags, u64 operand,
			    u64 compare, u64 *old)
{
	struct odsm_heap *heap = &odsm_heap;
	int ret;

	if ((flags & ODSM_ATOMIC_F_NIC) && odsm_nic_domain_here()) {
		if (addr % 8 || (op != ODSM_ATOMIC_FETCH_ADD &&
				 op != ODSM_ATOMIC_CMP_SWAP))
			return -EINVAL;
		ret = odsm_store_check(heap, addr, 8) ?:
		      odsm_nic_atomic_here(addr, op, operand, compare, old);
	} else {
		ret = odsm_store_atomic(heap, addr, op, operand, compare, old);
	}
	if (!ret)
		odsm_wait_wake_range(addr, 8);
	return ret;
}

/*
 * A peer's request that reaches a lazily filled copy of ours: refused (see
 * odsm_cache_lazy_range()); its absent pages would read as zeros.
 */
static bool lazy_refused(u64 addr, u64 len)
{
	if (!odsm_cache_lazy_range(addr, len))
		return false;
	odsm_stat_inc(ODSM_STAT_lazy_refused);
	return true;
}

/*
 * A peer's WRITE of len bytes at addr of our partition.  Refused
 * (-EINVAL, counted) where it touches a cached copy: a copy's bytes are
 * this node's cache's, read by every process here as the object's at
 * one colored address; a peer that wrote them would change what those
 * read behind the color.  Checked and written with no slot appearing in
 * between (odsm_cache_slots_hold()).
 */
static int copy_guarded_write(u64 addr, u32 len, const u8 *data)
{
	int ret;

	odsm_cache_slots_hold();
	if (odsm_cache_overlaps(addr, len)) {
		odsm_stat_inc(ODSM_STAT_copy_writes_refused);
		ret = -EINVAL;
	} else {
		ret = odsm_store_rw(&odsm_heap, addr, (void *)data, len, true);
	}
	odsm_cache_slots_release();
	if (!ret)
		odsm_wait_wake_range(addr, len);
	return ret;
}

/*
 * A peer's FETCH_MANY: each object as a FETCH at offset 0 would answer it,
 * into one reply of its items and their data (odsm_wire.h).  The reply's
 * size is bounded by the request's checked count and len, each item's
 * data padded to 8 bytes: a len that is no multiple of 8 takes up to 7
 * bytes more an item than it says (before 2026-12-02 the buffer was sized
 * without them, and 63 items of 41 bytes wrote 441 bytes past it), so
 * the buffer and the padding use the same odsm_wire_* sizes.  Only an
 * object sent whole is marked copied: the prefetcher caches nothing less
 * (odsm_cache_prefetch_finish()), and a mark would refuse the owner boxes in a
 * bigger one (-EBUSY) for a copy no node holds.
 */
static int serve_fetch_many(const struct odsm_wire_hdr *h, const u8 *payload,
			    const void **data, u32 *dlen)
{
	struct odsm_wire_fetch_item it;
	struct odsm_wire_fetch_many fm;
	u32 i, off;
	u8 *buf;
	u64 g;
	int ret;

	if (odsm_wire_get_fetch_many(payload, h->len, &fm))
		return -EPROTO;
	buf = kvmalloc(odsm_wire_fetch_many_room(fm.count, fm.len),
		       ODSM_GFP_REQ);
	if (!buf)
		return -ENOMEM;
	off = fm.count * ODSM_WIRE_FETCH_ITEM_SIZE;
	for (i = 0; i < fm.count; i++) {
		memset(&it, 0, sizeof(it));
		g = odsm_wire_fetch_many_addr(payload, i);
		if (lazy_refused(odsm_clear_color(g), 1))
			ret = -EINVAL;
		else
			ret = odsm_heap_fetch(&odsm_heap, g, 0, buf + off,
					      fm.len, 0, ODSM_FETCH_WHOLE,
					      &it.size, &it.color, &it.len);
		if (ret) {
			memset(&it, 0, sizeof(it));
			it.status = ret;
		} else {
			/* the padding is not left as it was */
			memset(buf + off + it.len, 0,
			       odsm_wire_fetch_item_padded(it.len) - it.len);
			off += odsm_wire_fetch_item_padded(it.len);
		}
		odsm_wire_put_fetch_item(buf + i * ODSM_WIRE_FETCH_ITEM_SIZE, &it);
	}
	*data = buf;
	*dlen = off;
	return 0;
}

/*
 * Serve one request (the handler of every message type this service
 * registers, see odsm_core.h).  The reply's fixed part goes to reply,
 * bulk data (a READ's bytes) to *data, which the core frees.  Returns the
 * status to send, or -EPROTO for a malformed payload (dropped, not
 * answered).
 */
static int serve(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		 const u8 *payload, u8 *reply, u32 *rlen, const void **data,
		 u32 *dlen)
{
	struct odsm_heap *heap = &odsm_heap;
	struct odsm_wire_fetch_reply frep;
	struct odsm_wire_alloc_reply ar;
	struct odsm_wire_fetch fe;
	struct odsm_wire_atomic_reply xr;
	struct odsm_wire_atomic at;
	struct odsm_wire_alloc al;
	struct odsm_wire_free fr;
	struct odsm_wire_rw rw;
	void *buf;
	int ret;

	switch (h->type) {
	case ODSM_MSG_READ:
		if (odsm_wire_get_rw(payload, h->len, false, &rw))
			return -EPROTO;
		if (lazy_refused(rw.gaddr, rw.len))
			return -EINVAL;
		if (rw.flags & ODSM_WIRE_RW_CHECK)
			return odsm_store_check(heap, rw.gaddr, rw.len);
		buf = kvmalloc(rw.len, ODSM_GFP_REQ);
		if (!buf)
			return -ENOMEM;
		if (rw.flags & ODSM_WIRE_RW_OWNER)
			ret = odsm_owner_rw_local(rw.gaddr, buf,
						  ODSM_OWNER_READ);
		else
			ret = odsm_store_rw(heap, rw.gaddr, buf, rw.len, false);
		if (ret) {
			kvfree(buf);
			return ret;
		}
		*data = buf;
		*dlen = rw.len;
		return 0;
	case ODSM_MSG_WRITE:
		if (odsm_wire_get_rw(payload, h->len, true, &rw))
			return -EPROTO;
		if (lazy_refused(rw.gaddr, rw.len))
			return -EINVAL;
		if (rw.flags & ODSM_WIRE_RW_OWNER)
			return odsm_owner_rw_local(rw.gaddr,
						   (void *)(payload + h->len -
							    rw.len),
						   rw.flags & ODSM_WIRE_RW_IF_EMPTY ?
						   ODSM_OWNER_FILL :
						   ODSM_OWNER_WRITE);
		return copy_guarded_write(rw.gaddr, rw.len,
					  payload + h->len - rw.len);
	case ODSM_MSG_ALLOC:
		if (odsm_wire_get_alloc(payload, h->len, &al))
			return -EPROTO;
		ret = odsm_heap_alloc(heap, al.size, al.align,
				      al.flags & ODSM_ALLOC_ZERO, &ar.gaddr,
				      &ar.usable);
		if (!ret)
			*rlen = odsm_wire_put_alloc_reply(reply, &ar);
		return ret;
	case ODSM_MSG_FREE:
		if (odsm_wire_get_free(payload, h->len, &fr))
			return -EPROTO;
		/* a cached copy is this node's, not an object of the heap */
		odsm_cache_slots_hold();
		if (odsm_cache_is_slot(odsm_clear_color(fr.gaddr))) {
			odsm_stat_inc(ODSM_STAT_bad_frees);
			ret = -EINVAL;
		} else {
			ret = odsm_heap_free(heap, fr.gaddr);
		}
		odsm_cache_slots_release();
		trace_odsm_free_home(h->src_node, fr.gaddr, ret);
		return ret;
	case ODSM_MSG_FETCH:
		if (odsm_wire_get_fetch(payload, h->len, &fe))
			return -EPROTO;
		if (lazy_refused(odsm_clear_color(fe.gaddr), 1))
			return -EINVAL;
		memset(&frep, 0, sizeof(frep));
		ret = odsm_heap_fetch_alloc(heap, fe.gaddr, fe.offset, fe.len,
					    fe.whole,
					    ODSM_WIRE_FETCH_REPLY_SIZE, &buf,
					    &frep.size, &frep.color,
					    &frep.len);
		if (ret)
			return ret;
		odsm_wire_put_fetch_reply(buf, &frep);
		*data = buf;
		*dlen = ODSM_WIRE_FETCH_REPLY_SIZE + frep.len;
		return 0;
	case ODSM_MSG_FETCH_MANY:
		return serve_fetch_many(h, payload, data, dlen);
	case ODSM_MSG_ATOMIC:
		if (odsm_wire_get_atomic(payload, h->len, &at))
			return -EPROTO;
		if (lazy_refused(at.gaddr, 8))
			return -EINVAL;
		odsm_cache_slots_hold();
		if (odsm_cache_overlaps(at.gaddr, 8)) {
			odsm_stat_inc(ODSM_STAT_copy_writes_refused);
			ret = -EINVAL;
		} else {
			ret = odsm_home_atomic(at.gaddr,
					       at.op == ODSM_WIRE_FETCH_ADD ?
					       ODSM_ATOMIC_FETCH_ADD :
					       ODSM_ATOMIC_CMP_SWAP,
					       at.flags & ODSM_WIRE_ATOMIC_F_NIC ?
					       ODSM_ATOMIC_F_NIC : 0,
					       at.operand, at.compare, &xr.old);
		}
		odsm_cache_slots_release();
		if (!ret)
			*rlen = odsm_wire_put_atomic_reply(reply, &xr);
		return ret;
	}
	return -EPROTO;
}

/* ---- the caller's side ---------------------------------------------------- */

static int remote_rw(u32 node, u64 addr, void *buf, u32 len, bool write)
{
	struct odsm_wire_rw rw = { .gaddr = addr, .len = len };
	u8 p[ODSM_WIRE_RW_SIZE];
	u32 n = odsm_wire_put_rw(p, &rw), got = 0;
	int ret;

	/* over RDMA: straight from/to the home's pages where it lets us */
	ret = odsm_onesided_rw(node, addr, buf, len, write);
	if (ret != -EOPNOTSUPP)
		return ret;
	if (odsm_onesided_active())
		odsm_stat_inc(ODSM_STAT_onesided_fallbacks);

	if (write) {
		odsm_stat_inc(ODSM_STAT_remote_writes);
		return odsm_rpc(node, ODSM_MSG_WRITE, p, n, buf, len, NULL, 0,
				NULL);
	}
	odsm_stat_inc(ODSM_STAT_remote_reads);
	ret = odsm_rpc(node, ODSM_MSG_READ, p, n, NULL, 0, buf, len, &got);
	if (!ret && got != len)
		ret = -EPROTO;
	return ret;
}

/* over any transport; timed for the remote_read/remote_write histograms */
int odsm_remote_rw(u32 node, u64 addr, void *buf, u32 len, bool write)
{
	u64 start = ktime_get_ns();
	int ret = remote_rw(node, addr, buf, len, write);

	if (!ret)
		odsm_lat_record(write ? ODSM_LAT_remote_write :
				ODSM_LAT_remote_read, start);
	return ret;
}

int odsm_remote_owner_rw(u32 node, u64 addr, void *box,
			 enum odsm_owner_op op)
{
	struct odsm_wire_rw rw = { .gaddr = addr, .len = ODSM_WIRE_BOX_SIZE,
				   .flags = ODSM_WIRE_RW_OWNER };
	u8 p[ODSM_WIRE_RW_SIZE];
	u32 n, got = 0;
	int ret;

	if (op == ODSM_OWNER_FILL)
		rw.flags |= ODSM_WIRE_RW_IF_EMPTY;
	n = odsm_wire_put_rw(p, &rw);
	if (op != ODSM_OWNER_READ) {
		odsm_stat_inc(ODSM_STAT_remote_writes);
		return odsm_rpc(node, ODSM_MSG_WRITE, p, n, box,
				ODSM_WIRE_BOX_SIZE, NULL, 0, NULL);
	}
	odsm_stat_inc(ODSM_STAT_remote_reads);
	ret = odsm_rpc(node, ODSM_MSG_READ, p, n, NULL, 0, box,
		       ODSM_WIRE_BOX_SIZE, &got);
	if (!ret && got != ODSM_WIRE_BOX_SIZE)
		ret = -EPROTO;
	return ret;
}

/*
 * Ask node whether [addr, addr + len) of its partition lies in blocks that
 * hold objects, without moving a byte: READs with RW_CHECK, of at most
 * 1 GiB each (a partition is at most 64 GiB).
 */
static int odsm_remote_check(u32 node, u64 addr, u64 len)
{
	struct odsm_wire_rw rw = { .flags = ODSM_WIRE_RW_CHECK };
	u64 done;
	u8 p[ODSM_WIRE_RW_SIZE];
	u32 n;
	int ret = 0;

	for (done = 0; done < len && !ret; done += SZ_1G) {
		rw.gaddr = addr + done;
		rw.len = min_t(u64, len - done, SZ_1G);
		n = odsm_wire_put_rw(p, &rw);
		ret = odsm_rpc(node, ODSM_MSG_READ, p, n, NULL, 0, NULL, 0,
			       NULL);
	}
	return ret;
}

long odsm_ioc_rw(void __user *arg, bool write)
{
	struct odsm_rw r;
	u8 __user *ubuf;
	bool local;
	u64 addr, done;
	void *kbuf;
	int node, ret = 0;

	if (copy_from_user(&r, arg, sizeof(r)))
		return -EFAULT;
	if (r.reserved[0] || r.reserved[1])
		return -EINVAL;
	if (!r.len)
		return 0;
	addr = odsm_clear_color(r.gaddr);
	node = odsm_home_of(addr, r.len, &local);
	if (node < 0)
		return node;
	/* more than one piece: the whole range is checked before any moves */
	if (r.len > CHUNK) {
		ret = local ? odsm_store_check(&odsm_heap, addr, r.len) :
			      odsm_remote_check(node, addr, r.len);
		if (ret)
			return ret;
	}
	kbuf = kvmalloc(min_t(u64, r.len, CHUNK), ODSM_GFP_REQ);
	if (!kbuf)
		return -ENOMEM;
	ubuf = u64_to_user_ptr(r.buf);
	for (done = 0; done < r.len && !ret; done += CHUNK) {
		u32 n = min_t(u64, r.len - done, CHUNK);

		/* killed, or an io_uring command whose program went */
		if (odsm_abandoned()) {
			ret = -EINTR;
			break;
		}
		if (write && copy_from_user(kbuf, ubuf + done, n)) {
			ret = -EFAULT;
			break;
		}
		/* a lazily filled copy's absent pages are fetched first */
		if (local)
			ret = odsm_cache_lazy_fill_range(addr + done, n) ?:
			      odsm_store_rw(&odsm_heap, addr + done, kbuf, n,
					    write);
		else
			ret = odsm_remote_rw(node, addr + done, kbuf, n, write);
		if (!ret && !write && copy_to_user(ubuf + done, kbuf, n))
			ret = -EFAULT;
		/* our own write: its words' waiters wake (odsm_wait.c) */
		if (!ret && write && local)
			odsm_wait_wake_range(addr + done, n);
	}
	kvfree(kbuf);
	return ret;
}

/* An ATOMIC request to node, the word's home. */
static int atomic_rpc(u32 node, struct odsm_atomic *a)
{
	struct odsm_wire_atomic at = {
		.gaddr = a->gaddr,
		.op = a->op == ODSM_ATOMIC_FETCH_ADD ? ODSM_WIRE_FETCH_ADD :
						       ODSM_WIRE_CMP_SWAP,
		.flags = a->flags & ODSM_ATOMIC_F_NIC ? ODSM_WIRE_ATOMIC_F_NIC : 0,
		.operand = a->operand,
		.compare = a->compare,
	};
	struct odsm_wire_atomic_reply xr;
	u8 p[ODSM_WIRE_ATOMIC_SIZE];	/* the request, then its reply */
	u32 n = odsm_wire_put_atomic(p, &at), got = 0;
	int ret;

	odsm_stat_inc(ODSM_STAT_remote_atomics);
	if (odsm_onesided_active())
		odsm_stat_inc(ODSM_STAT_onesided_fallbacks);
	ret = odsm_rpc(node, ODSM_MSG_ATOMIC, p, n, NULL, 0, p, sizeof(p), &got);
	if (!ret)
		ret = odsm_wire_get_atomic_reply(p, got, &xr);
	if (!ret)
		a->old = xr.old;
	return ret;
}

long odsm_ioc_atomic(void __user *arg)
{
	struct odsm_atomic a;
	bool local;
	int node, ret;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	if ((a.flags & ~ODSM_ATOMIC_F_NIC) || a.reserved[0] || a.reserved[1] ||
	    (a.op != ODSM_ATOMIC_FETCH_ADD && a.op != ODSM_ATOMIC_CMP_SWAP))
		return -EINVAL;
	a.gaddr = odsm_clear_color(a.gaddr);
	if (a.gaddr % 8)
		return -EINVAL;
	node = odsm_home_of(a.gaddr, 8, &local);
	if (node < 0)
		return node;
	if (local) {
		/* a lazily filled copy's absent page is fetched first */
		ret = odsm_cache_lazy_fill_range(a.gaddr, 8) ?:
		      odsm_home_atomic(a.gaddr, a.op, a.flags, a.operand,
				       a.compare, &a.old);
	} else {
		u64 start = ktime_get_ns();

		/* flagged: straight at the home's memory where it lets us */
		ret = -EOPNOTSUPP;
		if (a.flags & ODSM_ATOMIC_F_NIC)
			ret = odsm_onesided_atomic(node, a.gaddr, a.op,
						   a.operand, a.compare,
						   &a.old);
		if (ret == -EOPNOTSUPP)
			ret = atomic_rpc(node, &a);
		if (!ret)
			odsm_lat_record(ODSM_LAT_atomic, start);
	}
	if (ret)
		return ret;
	return copy_to_user(arg, &a, sizeof(a)) ? -EFAULT : 0;
}

int odsm_remote_alloc(u32 node, u64 size, u32 align, u32 flags, u64 *cg,
		      u64 *usable)
{
	struct odsm_wire_alloc al = { .size = size, .align = align,
				      .flags = flags & ODSM_ALLOC_ZERO };
	struct odsm_wire_alloc_reply ar;
	u8 p[ODSM_WIRE_ALLOC_SIZE];	/* the request, then its reply */
	u32 n = odsm_wire_put_alloc(p, &al), got = 0;
	u64 a;
	int ret;

	odsm_stat_inc(ODSM_STAT_remote_allocs);
	ret = odsm_rpc(node, ODSM_MSG_ALLOC, p, n, NULL, 0, p, sizeof(p), &got);
	if (!ret)
		ret = odsm_wire_get_alloc_reply(p, got, &ar);
	if (ret)
		return ret;
	/*
	 * The home node answers for its own partition only, with an object
	 * of at least the size asked that ends inside it (usable reaches
	 * the caller as the object's size)
	 */
	a = odsm_clear_color(ar.gaddr);
	if (!odsm_in_heap(&odsm_heap.geom, a) ||
	    odsm_node_of(&odsm_heap.geom, a) != node || ar.usable < size ||
	    ar.usable > odsm_heap.geom.part_size -
			(a - odsm_part_start(&odsm_heap.geom, node))) {
		odsm_stat_inc(ODSM_STAT_bad_msgs);
		return -EPROTO;
	}
	*cg = ar.gaddr;
	*usable = ar.usable;
	return 0;
}

int odsm_remote_free_at(u32 node, u64 inc, u64 cg)
{
	struct odsm_wire_free fr = { .gaddr = cg };
	u8 p[ODSM_WIRE_FREE_SIZE];
	u32 n = odsm_wire_put_free(p, &fr);

	odsm_stat_inc(ODSM_STAT_remote_frees);
	return odsm_rpc_inc(node, inc, ODSM_MSG_FREE, p, n, NULL, 0, NULL, 0,
			    NULL);
}

int odsm_remote_free(u32 node, u64 cg)
{
	return odsm_remote_free_at(node, 0, cg);
}

/* ---- registration ---------------------------------------------------------- */

static const struct odsm_msg_handler handlers[] = {
	{ .type = ODSM_MSG_READ, .reply = ODSM_MSG_READ_REPLY, .serve = serve },
	{ .type = ODSM_MSG_WRITE, .reply = ODSM_MSG_WRITE_REPLY, .serve = serve },
	{ .type = ODSM_MSG_ALLOC, .reply = ODSM_MSG_ALLOC_REPLY, .serve = serve },
	{ .type = ODSM_MSG_FREE, .reply = ODSM_MSG_FREE_REPLY, .serve = serve },
	{ .type = ODSM_MSG_ATOMIC, .reply = ODSM_MSG_ATOMIC_REPLY,
	  .serve = serve },
	/* a copy under the heap's lock: quick (served in the receiver) */
	{ .type = ODSM_MSG_FETCH, .reply = ODSM_MSG_FETCH_REPLY, .serve = serve,
	  .quick = true },
	{ .type = ODSM_MSG_FETCH_MANY, .reply = ODSM_MSG_FETCH_MANY_REPLY,
	  .serve = serve },
};

int odsm_remote_init(void)
{
	unsigned int i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(handlers); i++) {
		ret = odsm_handler_register(&handlers[i]);
		if (ret)
			goto err;
	}
	return 0;
err:
	while (i--)
		odsm_handler_unregister(&handlers[i]);
	return ret;
}

void odsm_remote_exit(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(handlers); i++)
		odsm_handler_unregister(&handlers[i]);
}
