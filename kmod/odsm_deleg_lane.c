// SPDX-License-Identifier: GPL-2.0
/*
 * Lanes: the module delivers a batch straight into its trustee's slots.
 *
 * Without lanes a batch from another node is queued on its endpoint, a
 * gateway thread of the runtime takes it with ODSM_IOC_DELEG_SERVE, copies
 * it into a client slot of its own, waits for the trustee and hands the
 * answer back with its next SERVE: two thread wakeups and two system
 * calls per batch on top of the trustee's work, which is what an apply
 * across nodes paid over a plain request (delegation.rst, "Across
 * nodes").  With lanes the worker that received the batch does the
 * gateway's part itself: it writes the batch into a lane (a client slot
 * pair the runtime set aside for the module at ODSM_DELEG_BIND_LANES),
 * records first and the request header's seq last, bumps the trustee's
 * wake word and wakes it, then sleeps on the response's seq word in
 * odsm_wait.c's queue, which the trustee's ODSM_IOC_WAKE after its answer
 * wakes.  The trustee serves a lane like any client slot, round-robin,
 * with the same validation: nothing new runs in its loop.
 *
 * Ownership: a lane is one caller's from odsm_lanes_take() until its
 * answer came (busy).  A caller that gives up (timeout, fatal signal)
 * leaves its lane stuck: its batch may still be answered, and a new batch
 * published before that would have its answer mixed up with the old one.
 * A stuck lane is freed by the next take that finds its answer there.
 *
 * The arena is the runtime's heap memory, reached through the page store:
 * one object, the one the endpoint names (its start), which every lane
 * and wake word must lie in, checked at bind; and every access is
 * guarded (odsm_store_*_guarded()): it goes only while that object is the
 * one of the bind, checked under heap->lock with the access, and like a
 * peer's WRITE (a cached copy there: refused).  The module writes there
 * only while the runtime is bound: a publish checks *dead under the
 * gate's read side, and the runtime's end (odsm_lanes_close()) takes the
 * write side once after setting it, so when the runtime's file is closed
 * no publish is in flight and none starts.  The guard covers the rest: a
 * runtime whose file outlives its close(2) (a forked child holds it) and
 * that frees its arena gets -EOWNERDEAD for its callers, and the object
 * the heap puts there next is never written.
 *
 * Locking: the gate, then the lanes' lock or the cache's slots, then
 * heap->lock; the lanes' lock and the gate nest with nothing else.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/rwsem.h>
#include "odsm.h"
#include "odsm_cache.h"
#include "odsm_deleg_lane.h"
#include "odsm_dslot.h"
#include "odsm_stats.h"
#include "odsm_wait.h"

struct deleg_lanes {
	struct odsm_guard arena;	/* the object they all lie in */
	u64 slots;		/* trustee 0's lane 0 request slot */
	u64 trustee_stride;
	u64 wake;		/* trustee 0's wake word */
	u32 wake_stride;
	u32 trustees, lanes, cells, slot_size;
	struct rw_semaphore gate;	/* read: writing into the arena */
	struct mutex lock;	/* busy, stuck */
	unsigned long *busy;	/* [trustees * lanes]: taken */
	unsigned long *stuck;	/* busy, its waiter gone */
	u32 *seq;		/* the last seq published in each lane */
};

static u64 lane_req(const struct deleg_lanes *l, u32 lane)
{
	return l->slots + (u64)(lane / l->lanes) * l->trustee_stride +
	       (u64)(lane % l->lanes) * 2 * l->slot_size;
}

static u64 lane_wake(const struct deleg_lanes *l, u32 lane)
{
	return l->wake + (u64)(lane / l->lanes) * l->wake_stride;
}

/*
 * Does [first, first + (n - 1) * stride + len) lie in object g?  (n >= 1;
 * checked for overflow.)  g is an object of this node's partition
 * (odsm_store_guard() finds only those), so a span in it is local too.
 */
static bool span_in(const struct odsm_guard *g, u64 first, u64 stride, u32 n,
		    u64 len)
{
	u64 span;

	if (check_mul_overflow(stride, (u64)(n - 1), &span) ||
	    check_add_overflow(span, len, &span))
		return false;
	return first >= g->addr && span <= g->len &&
	       first - g->addr <= g->len - span;
}

struct deleg_lanes *odsm_lanes_create(const struct odsm_deleg_lanes *u,
				      u32 slot_size, u64 endpoint)
{
	u64 pair = 2 * (u64)slot_size, seq[2];
	struct deleg_lanes *l;
	u32 i, n;

	if (u->reserved[0] || u->reserved[1] || !u->trustees ||
	    u->trustees > ODSM_DELEG_TRUSTEES_MAX || !u->lanes ||
	    u->lanes > ODSM_DELEG_LANES_MAX || !u->cells ||
	    (u64)u->trustees * u->cells > U32_MAX)
		return ERR_PTR(-EINVAL);
	/* one trustee's lanes end before the next one's begin */
	if (u->trustees > 1 && u->trustee_stride < u->lanes * pair)
		return ERR_PTR(-EINVAL);
	if (u->trustees > 1 && u->wake_stride < sizeof(u32))
		return ERR_PTR(-EINVAL);
	l = kzalloc(sizeof(*l), GFP_KERNEL);
	if (!l)
		return ERR_PTR(-ENOMEM);
	if (odsm_store_guard(&odsm_heap, odsm_clear_color(endpoint),
			     &l->arena))
		goto inval;
	l->slots = odsm_clear_color(u->slots);
	l->trustee_stride = u->trustee_stride;
	l->wake = odsm_clear_color(u->wake);
	l->wake_stride = u->wake_stride;
	l->trustees = u->trustees;
	l->lanes = u->lanes;
	l->cells = u->cells;
	l->slot_size = slot_size;
	if (l->slots % ODSM_DSLOT_ALIGN || l->trustee_stride % ODSM_DSLOT_ALIGN ||
	    l->wake % sizeof(u32) || l->wake_stride % sizeof(u32) ||
	    !span_in(&l->arena, l->slots, l->trustee_stride, l->trustees,
		     l->lanes * pair) ||
	    !span_in(&l->arena, l->wake, l->wake_stride, l->trustees,
		     sizeof(u32)))
		goto inval;
	n = l->trustees * l->lanes;
	init_rwsem(&l->gate);
	mutex_init(&l->lock);
	l->busy = bitmap_zalloc(n, GFP_KERNEL);
	l->stuck = bitmap_zalloc(n, GFP_KERNEL);
	l->seq = kcalloc(n, sizeof(*l->seq), GFP_KERNEL);
	if (!l->busy || !l->stuck || !l->seq) {
		odsm_lanes_free(l);
		return ERR_PTR(-ENOMEM);
	}
	/*
	 * Start where the slots are: a lane whose request is not answered
	 * yet (a bind again over an arena in use) is stuck until it is.
	 * Every slot and wake word must be readable: an arena that is not
	 * (yet) an object is refused now rather than at the first batch.
	 */
	for (i = 0; i < l->trustees; i++) {
		if (odsm_store_load_guarded(&odsm_heap, &l->arena,
					    lane_wake(l, i * l->lanes), 4,
					    &seq[0])) {
			odsm_lanes_free(l);
			return ERR_PTR(-EINVAL);
		}
	}
	for (i = 0; i < n; i++) {
		if (odsm_store_load_guarded(&odsm_heap, &l->arena,
					    lane_req(l, i), 4, &seq[0]) ||
		    odsm_store_load_guarded(&odsm_heap, &l->arena,
					    lane_req(l, i) + slot_size, 4,
					    &seq[1])) {
			odsm_lanes_free(l);
			return ERR_PTR(-EINVAL);
		}
		l->seq[i] = seq[0];
		if (seq[0] != seq[1]) {
			__set_bit(i, l->busy);
			__set_bit(i, l->stuck);
		}
	}
	return l;

inval:
	kfree(l);
	return ERR_PTR(-EINVAL);
}

void odsm_lanes_free(struct deleg_lanes *l)
{
	if (!l)
		return;
	bitmap_free(l->busy);
	bitmap_free(l->stuck);
	kfree(l->seq);
	kfree(l);
}

/*
 * The trustee of the validated batch req, or -EAGAIN when it goes to the
 * gateway: it asks for it, names no trustee, or has an apply_with
 * argument of another node (which the gateway brings here first: a
 * trustee's loop never waits on the network).
 */
static int batch_trustee(const struct deleg_lanes *l, const u8 *req)
{
	struct odsm_dslot_hdr h;
	struct odsm_dwith w;
	struct odsm_dreq r;
	u32 off = ODSM_DSLOT_HDR, i;
	int t = -EAGAIN;

	memcpy(&h, req, sizeof(h));
	if (h.flags & ODSM_DSLOT_F_GATEWAY || !h.count)
		return -EAGAIN;
	/* validated: every record and argument lies within h.len */
	for (i = 0; i < h.count; i++) {
		memcpy(&r, req + off, sizeof(r));
		if (!i && (u32)r.obj / l->cells < l->trustees)
			t = (u32)r.obj / l->cells;
		if (r.kind == ODSM_DREQ_APPLY_WITH) {
			memcpy(&w, req + off + ODSM_DREQ_HDR, sizeof(w));
			if (!odsm_range_is_local(&odsm_heap.geom,
						 odsm_clear_color(w.gaddr),
						 w.len))
				return -EAGAIN;
		}
		off += ODSM_DREQ_HDR + ALIGN(r.arg_len, ODSM_DSLOT_ALIGN);
	}
	return t;
}

int odsm_lanes_take(struct deleg_lanes *l, const u8 *req, u32 *lane)
{
	u32 first, i;
	u64 seq;
	int t = batch_trustee(l, req);

	if (t < 0)
		return t;
	first = t * l->lanes;
	mutex_lock(&l->lock);
	for (i = first; i < first + l->lanes; i++) {
		if (!test_bit(i, l->busy))
			goto take;
	}
	/* none free: one whose waiter gave up may have its answer by now */
	for (i = first; i < first + l->lanes; i++) {
		if (test_bit(i, l->stuck) &&
		    !odsm_store_load_guarded(&odsm_heap, &l->arena,
					     lane_req(l, i) + l->slot_size,
				     4, &seq) && (u32)seq == l->seq[i]) {
			__clear_bit(i, l->stuck);
			goto take;
		}
	}
	mutex_unlock(&l->lock);
	return -EBUSY;
take:
	__set_bit(i, l->busy);
	mutex_unlock(&l->lock);
	*lane = i;
	return 0;
}

static void lane_put(struct deleg_lanes *l, u32 lane, bool answered)
{
	mutex_lock(&l->lock);
	if (answered)
		__clear_bit(lane, l->busy);
	else
		__set_bit(lane, l->stuck);
	mutex_unlock(&l->lock);
}

/*
 * Wait until the response seq at addr is seq: 0 or -errno.  A trustee
 * answers with one change of the word; one that keeps changing it to
 * other values (a runtime gone wrong) would have this loop spin for all
 * of wait_ms, taking heap->lock twice a pass: past a few changes each
 * pass sleeps a millisecond first.
 */
static int lane_wait(const struct odsm_guard *g, u64 addr, u32 seq,
		     const bool *dead, u32 wait_ms)
{
	unsigned long end = jiffies + msecs_to_jiffies(wait_ms);
	unsigned int passes = 0;
	long left, ret;
	u64 v;

	for (;;) {
		if (++passes > 8)
			usleep_range(1000, 2000);
		/* a freed arena: the runtime is gone */
		if (odsm_store_load_guarded(&odsm_heap, g, addr, 4, &v))
			return -EOWNERDEAD;
		if ((u32)v == seq)
			return 0;
		left = (long)(end - jiffies);
		if (left <= 0)
			return -ETIMEDOUT;
		/* *dead is looked at once queued: odsm_lanes_close() wakes */
		ret = odsm_wait_word_killable(addr, 4, v,
					      jiffies_to_nsecs(left), dead);
		if (ret == -ECANCELED)
			return -EOWNERDEAD;
		if (ret == -EINTR || ret == -ERESTARTSYS)
			return -EINTR;
		/* woken, changed, timed out: look again */
	}
}

/*
 * Does [addr, addr + len) touch a cached copy (lazily filled or not)?
 * Under odsm_cache_slots_hold().  Counted as a peer's write there is.
 */
static bool lane_on_copy(u64 addr, u64 len)
{
	if (!odsm_cache_overlaps(addr, len) &&
	    !odsm_cache_lazy_range(addr, len))
		return false;
	odsm_stat_inc(ODSM_STAT_copy_writes_refused);
	return true;
}

/*
 * Write req into lane's request slot, records first and the ready seq
 * last, and bump its trustee's wake word: 0, -EOWNERDEAD (the runtime's
 * end began), or the error of the write (nothing was published).
 */
static int lane_publish(struct deleg_lanes *l, u32 lane, const u8 *req,
			u32 req_len, u32 seq, const bool *dead)
{
	u64 q = lane_req(l, lane), w = lane_wake(l, lane);
	int ret;

	down_read(&l->gate);
	ret = -EOWNERDEAD;
	if (READ_ONCE(*dead))
		goto out;
	odsm_cache_slots_hold();
	ret = -EINVAL;
	if (lane_on_copy(q, req_len) || lane_on_copy(w, sizeof(u32)))
		goto release;
	/* the store only reads buf when it writes the store */
	ret = odsm_store_rw_guarded(&odsm_heap, &l->arena, q + sizeof(seq),
				    (void *)(req + sizeof(seq)),
				    req_len - sizeof(seq), true);
	if (!ret)
		ret = odsm_store_word32_guarded(&odsm_heap, &l->arena, q,
						false, seq);
	if (!ret)
		odsm_store_word32_guarded(&odsm_heap, &l->arena, w, true, 1);
release:
	odsm_cache_slots_release();
out:
	up_read(&l->gate);
	if (ret)
		return ret;
	/* the module's writes wake their words, as a peer's WRITE's do */
	odsm_wait_wake_range(q, req_len);
	odsm_wait_wake_range(w, sizeof(u32));
	return 0;
}

/*
 * Read lane's answer (seq matched) into buf (slot_size bytes, zeroed): 0
 * or -EOWNERDEAD.  buf was allocated before the batch was published: an
 * answer that came must not be lost for want of memory after its batch ran.
 */
static int lane_read(struct deleg_lanes *l, u32 lane, const bool *dead,
		     u8 *buf, u32 *resp_len)
{
	u64 r = lane_req(l, lane) + l->slot_size;
	struct odsm_dslot_hdr h;
	u32 len;
	int ret;

	down_read(&l->gate);
	ret = -EOWNERDEAD;
	if (READ_ONCE(*dead))
		goto out;
	/* answered: the trustee writes the slot again only for our next */
	ret = odsm_store_rw_guarded(&odsm_heap, &l->arena, r, &h, sizeof(h),
				    false);
	len = min_t(u32, h.len, l->slot_size - ODSM_DSLOT_HDR);
	if (!ret)
		ret = odsm_store_rw_guarded(&odsm_heap, &l->arena, r, buf,
					    ODSM_DSLOT_HDR + len,
				    false);
out:
	up_read(&l->gate);
	if (ret)
		return -EOWNERDEAD;
	/* a length past the slot stays visible to the caller's check */
	memcpy(buf, &h, sizeof(h));
	*resp_len = ODSM_DSLOT_HDR + len;
	return 0;
}

int odsm_lanes_run(struct deleg_lanes *l, u32 lane, const u8 *req,
		   u32 req_len, const bool *dead, u32 wait_ms, u8 *resp,
		   u32 *resp_len)
{
	u32 seq = l->seq[lane] + 1;
	int ret;

	ret = lane_publish(l, lane, req, req_len, seq, dead);
	if (ret) {
		lane_put(l, lane, true);	/* nothing was published */
		/* -ESTALE: the arena was freed, the runtime with it */
		return ret == -EOWNERDEAD || ret == -ESTALE ? -EOWNERDEAD :
							      -EAGAIN;
	}
	l->seq[lane] = seq;
	ret = lane_wait(&l->arena, lane_req(l, lane) + l->slot_size, seq, dead,
			wait_ms);
	if (ret) {
		lane_put(l, lane, false);
		return ret;
	}
	ret = lane_read(l, lane, dead, resp, resp_len);
	lane_put(l, lane, true);
	return ret;
}

void odsm_lanes_close(struct deleg_lanes *l)
{
	u32 i;

	/* every publish and read that began before *dead was set ends */
	down_write(&l->gate);
	up_write(&l->gate);
	mutex_lock(&l->lock);
	for_each_set_bit(i, l->busy, l->trustees * l->lanes)
		odsm_wait_wake_range(lane_req(l, i) + l->slot_size,
				     sizeof(u32));
	mutex_unlock(&l->lock);
}
