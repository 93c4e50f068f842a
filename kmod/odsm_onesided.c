// SPDX-License-Identifier: GPL-2.0
/*
 * The one-sided service: reading, writing and running NIC-domain atomics
 * on peers' memory without their CPUs, over a transport that can (its
 * optional ops: RDMA), and the home's side of it (registering blocks for
 * peers: MAP, and KEYS sent when a connection comes up).  Everything else
 * falls back to requests (odsm_remote.c).  It registers with the core as
 * any service does: the MAP and KEYS handlers, a peer-up event.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/err.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include "odsm.h"
#include "odsm_cache.h"
#include "odsm_cluster.h"
#include "odsm_onesided.h"
#include "odsm_pubword.h"

static bool onesided = true;
module_param_named(onesided, onesided, bool, 0644);
MODULE_PARM_DESC(onesided, "Read and write peers' memory, and read borrow misses of objects copied before, with one-sided RDMA over the RDMA transport (default: on)");

static bool onesided_known = true;
module_param_named(onesided_known, onesided_known, bool, 0644);
MODULE_PARM_DESC(onesided_known, "Leave out the read of an object's published word before its bytes in a one-sided borrow miss when the word is known from its FETCH or an earlier miss (default: on; off: both words, for comparison)");

static bool onesided_lazy = true;
module_param_named(onesided_lazy, onesided_lazy, bool, 0644);
MODULE_PARM_DESC(onesided_lazy, "Read the pages of lazily filled copies with one-sided RDMA, checked by the object's published word, once the home has registered its blocks (asked with KEYS_ASK; default: on; off: each fault a FETCH, for comparison)");

static unsigned int premap_blocks = 256;
module_param_named(premap_blocks, premap_blocks, uint, 0644);
MODULE_PARM_DESC(premap_blocks, "Blocks holding objects that a new RDMA connection registers for its peer up front, keys sent unasked (0: none; at most 4096; default 256)");

/* ---- the home's side: registering blocks for peers --------------------- */

/*
 * May the block at gaddr be registered for one-sided access?  Only a block
 * of our partition, and not part of a lazily filled copy (whose pages
 * must stay absent until fetched; pinning would fill them).
 */
static bool map_allowed(u64 gaddr)
{
	return odsm_range_is_local(&odsm_heap.geom, gaddr, ODSM_WIRE_MAP_LEN) &&
	       !odsm_cache_lazy_block(gaddr);
}

/*
 * Register our block at gaddr for conn's peer, if it may be: what a
 * MAP_REPLY says into *r.  A block that holds no object (odsm_store_pin
 * checks) or a lazy copy's is refused: the peer uses requests.  So is a
 * block that holds (part of) any cached copy: a one-sided WRITE or atomic
 * would land in the copy's bytes unchecked, where the request path
 * refuses it (copy_guarded_write(), copy_writes_refused).  The check and
 * the registration hold the slots (odsm_cache_slots_hold()), so no slot
 * appears in the block in between.  Refusals are counted in map_refused.
 */
static int map_for(struct odsm_conn *conn, u64 gaddr,
		   struct odsm_wire_map_reply *r)
{
	const struct odsm_transport_ops *t = odsm_conn_ops(conn);
	int ret = -EOPNOTSUPP;

	memset(r, 0, sizeof(*r));
	r->gaddr = gaddr;
	r->len = ODSM_WIRE_MAP_LEN;
	if (t->map) {
		ret = -EINVAL;
		odsm_cache_slots_hold();
		if (map_allowed(gaddr) &&
		    !odsm_cache_overlaps(gaddr, ODSM_WIRE_MAP_LEN))
			ret = t->map(conn, gaddr, r);
		odsm_cache_slots_release();
	}
	if (ret)
		odsm_stat_inc(ODSM_STAT_map_refused);
	return ret;
}

static int serve_map(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		     const u8 *payload, u8 *reply, u32 *rlen,
		     const void **data, u32 *dlen)
{
	struct odsm_wire_map_reply r;
	struct odsm_wire_map m;
	int ret;

	if (odsm_wire_get_map(payload, h->len, &m))
		return -EPROTO;
	ret = map_for(conn, m.gaddr, &r);
	if (!ret)
		*rlen = odsm_wire_put_map_reply(reply, &r);
	return ret;
}

/* The home's side of an AQP: our end of the peer's atomics QP pair. */
static int serve_aqp(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		     const u8 *payload, u8 *reply, u32 *rlen,
		     const void **data, u32 *dlen)
{
	const struct odsm_transport_ops *t = odsm_conn_ops(conn);
	struct odsm_wire_aqp o, a;
	int ret;

	if (odsm_wire_get_aqp(payload, h->len, &o))
		return -EPROTO;
	if (!t->aqp_serve)
		return -EOPNOTSUPP;
	ret = t->aqp_serve(conn, &o, &a);
	if (!ret)
		*rlen = odsm_wire_put_aqp(reply, &a);
	return ret;
}

/* ---- keys at connect ------------------------------------------------------ */

/*
 * When a connection with one-sided abilities comes up, each side registers
 * for its peer the blocks of its partition that hold objects then (up to
 * premap_blocks) and sends their keys unasked, in one KEYS message: the
 * peer's first one-sided access of them needs no MAP round trip.  Blocks
 * allocated later are registered when first asked (MAP), because the
 * partition's pages come with first touch and registering the rest would
 * pin it all.
 */
struct keys_work {
	struct work_struct work;
	struct odsm_conn *conn;
	u32 node;		/* a KEYS_ASK's sender, */
	u64 gaddr;		/* ... its first block */
	u32 nr;			/* ... and its blocks; 0: at connect */
};

/*
 * Register blks[0 .. n) for conn's peer (a block refused, such as a lazily
 * filled copy's or one that holds no object, is left out) and send the
 * keys in one KEYS message: how many were sent.  buf has room for n keys.
 */
static u32 keys_send_blocks(struct odsm_conn *conn, const u64 *blks, u32 n,
			    u8 *buf)
{
	struct odsm_wire_map_reply r;
	struct odsm_wire_keys k = {};
	u8 *e;
	u32 i;

	for (i = 0; i < n && !odsm_conn_dead(conn); i++) {
		if (map_for(conn, blks[i], &r))
			continue;
		e = buf + ODSM_WIRE_KEYS_HDR_SIZE +
		    k.nr * ODSM_WIRE_MAP_REPLY_SIZE;
		odsm_wire_put_map_reply(e, &r);
		k.nr++;
	}
	if (!k.nr || odsm_conn_dead(conn))
		return 0;
	odsm_wire_put_keys(buf, &k);
	if (odsm_msg_send(conn, ODSM_MSG_KEYS, buf, ODSM_WIRE_KEYS_HDR_SIZE +
			  k.nr * ODSM_WIRE_MAP_REPLY_SIZE))
		return 0;
	odsm_stat_add(ODSM_STAT_keys_sent, k.nr);
	return k.nr;
}

/* A peer's KEYS_ASK being served, per peer: at most one at a time. */
static DECLARE_BITMAP(keys_asks_busy, ODSM_MAX_NODES);

static void keys_send_work(struct work_struct *w)
{
	struct keys_work *kw = container_of(w, struct keys_work, work);
	u32 max = kw->nr ? kw->nr : min(READ_ONCE(premap_blocks),
					ODSM_WIRE_KEYS_MAX);
	u64 *blks = NULL, from, end;
	u8 *buf = NULL;
	u32 n;

	if (!max)
		goto out;
	blks = kvmalloc_array(max, sizeof(*blks), ODSM_GFP_REQ);
	buf = kvmalloc(ODSM_WIRE_KEYS_HDR_SIZE +
		       max * ODSM_WIRE_MAP_REPLY_SIZE, ODSM_GFP_REQ);
	if (!blks || !buf)
		goto out;
	/*
	 * Of an asked window only the blocks that hold objects: a move asks
	 * past its run too (run_read()), where the blocks may be free, and
	 * those are no refusal to count.
	 */
	if (kw->nr) {
		from = kw->gaddr;
		end = from + (u64)kw->nr * ODSM_WIRE_MAP_LEN;
	} else {
		from = odsm_part_start(&odsm_heap.geom, odsm_heap.geom.node_id);
		end = from + odsm_heap.geom.part_size;
	}
	n = odsm_heap_backed_blocks(&odsm_heap, from, end, blks, max);
	keys_send_blocks(kw->conn, blks, n, buf);
out:
	kvfree(blks);
	kvfree(buf);
	if (kw->nr)
		clear_bit(kw->node, keys_asks_busy);
	odsm_conn_put(kw->conn);
	kfree(kw);
}

/* Queue kw's registrations on the cluster's workqueue: false if not. */
static bool keys_queue(struct keys_work *kw, struct odsm_conn *conn)
{
	INIT_WORK(&kw->work, keys_send_work);
	odsm_conn_hold(conn);
	kw->conn = conn;
	if (odsm_cluster_queue(&kw->work))
		return true;
	odsm_conn_put(conn);
	return false;
}

/* The handshake on conn completed: send the peer our keys. */
static void keys_send(struct odsm_conn *conn, u32 node)
{
	struct keys_work *kw;

	if (!odsm_conn_ops(conn)->map || !READ_ONCE(premap_blocks))
		return;
	kw = kzalloc(sizeof(*kw), GFP_KERNEL);
	if (!kw)
		return;		/* the peer asks with MAP instead */
	if (!keys_queue(kw, conn))
		kfree(kw);
}

/*
 * A peer's KEYS_ASK: blocks of our partition it wants to read one-sided
 * (the pages of a lazily filled copy), registered and answered with KEYS
 * on the workqueue, since registering waits.  One per peer at a time: an
 * ask that comes while its sender's last is served is dropped (counted),
 * and its sender's reads go as requests until it asks again.  So a peer
 * keeps at most one work item and one KEYS buffer of ours busy.
 */
static void on_keys_ask(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
			const u8 *payload)
{
	const struct odsm_geom *g = &odsm_heap.geom;
	struct odsm_wire_keys_ask a;
	struct keys_work *kw;
	u64 span;

	if (!odsm_conn_ops(conn)->map ||
	    odsm_wire_get_keys_ask(payload, h->len, &a))
		goto bad;
	span = (u64)a.nr * ODSM_WIRE_MAP_LEN;
	if (!odsm_range_is_local(g, a.gaddr, span))
		goto bad;
	if (test_and_set_bit(h->src_node, keys_asks_busy)) {
		odsm_stat_inc(ODSM_STAT_keys_asks_dropped);
		return;
	}
	kw = kzalloc(sizeof(*kw), GFP_KERNEL);
	if (!kw)
		goto drop;
	kw->node = h->src_node;
	kw->gaddr = a.gaddr;
	kw->nr = a.nr;
	if (keys_queue(kw, conn))
		return;
	kfree(kw);
drop:
	clear_bit(h->src_node, keys_asks_busy);
	odsm_stat_inc(ODSM_STAT_keys_asks_dropped);
	return;
bad:
	odsm_stat_inc(ODSM_STAT_bad_msgs);
	pr_notice_ratelimited("a malformed KEYS_ASK from node %u: dropped\n",
			      h->src_node);
}

/*
 * A peer's KEYS: every entry checked (a block of the sender's own
 * partition, a well-formed registration) before any is used.
 */
static void on_keys(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		    const u8 *payload)
{
	const struct odsm_transport_ops *t = odsm_conn_ops(conn);
	const struct odsm_geom *g = &odsm_heap.geom;
	struct odsm_wire_map_reply r;
	struct odsm_wire_keys k;
	const u8 *e;
	u32 i;

	if (!t->add_key || odsm_wire_get_keys(payload, h->len, &k))
		goto bad;
	for (i = 0; i < k.nr; i++) {
		e = payload + ODSM_WIRE_KEYS_HDR_SIZE +
		    i * ODSM_WIRE_MAP_REPLY_SIZE;
		if (odsm_wire_get_map_reply(e, ODSM_WIRE_MAP_REPLY_SIZE, &r) ||
		    !odsm_in_heap(g, r.gaddr) ||
		    odsm_node_of(g, r.gaddr) != h->src_node)
			goto bad;
	}
	for (i = 0; i < k.nr; i++) {
		e = payload + ODSM_WIRE_KEYS_HDR_SIZE +
		    i * ODSM_WIRE_MAP_REPLY_SIZE;
		odsm_wire_get_map_reply(e, ODSM_WIRE_MAP_REPLY_SIZE, &r);
		if (t->add_key(conn, &r))
			return;	/* no memory or room: MAP asks for the rest */
	}
	odsm_stat_add(ODSM_STAT_keys_received, k.nr);
	return;
bad:
	odsm_stat_inc(ODSM_STAT_bad_msgs);
	pr_notice_ratelimited("a malformed KEYS message from node %u: dropped\n",
			      h->src_node);
}

/* ---- the initiator's side ---------------------------------------------- */

/* Ask node to register the block at blk for us; its key goes to conn. */
static int map_block(struct odsm_conn *conn, u32 node, u64 blk)
{
	const struct odsm_transport_ops *t = odsm_conn_ops(conn);
	struct odsm_wire_map m = { .gaddr = blk };
	struct odsm_wire_map_reply r;
	u8 p[ODSM_WIRE_MAP_REPLY_SIZE];
	u32 n = odsm_wire_put_map(p, &m), got = 0;
	int ret;

	odsm_stat_inc(ODSM_STAT_map_requests);
	ret = odsm_rpc(node, ODSM_MSG_MAP, p, n, NULL, 0, p, sizeof(p), &got);
	if (!ret)
		ret = odsm_wire_get_map_reply(p, got, &r);
	if (!ret && r.gaddr != blk)
		ret = -EPROTO;
	if (ret == -EPROTO)
		odsm_stat_inc(ODSM_STAT_bad_msgs);
	if (ret == -ENOSPC || ret == -EOPNOTSUPP)
		t->no_maps(conn);	/* it registers no more */
	if (ret)
		return ret;
	ret = t->add_key(conn, &r);
	if (ret == -ENOSPC)
		t->no_maps(conn);	/* as many keys as a home gives */
	return ret;
}

/* A MAP that failed this way failed the operation: the home is gone. */
static bool home_gone(int err)
{
	return err == -EHOSTDOWN || err == -ETIMEDOUT || err == -EINTR;
}

/*
 * Connect conn's atomics QP pair with node's (AQP), unless it is: 0, an
 * error where the home is gone, else -EOPNOTSUPP (the request path).
 */
static int aqp_connect(struct odsm_conn *conn, u32 node)
{
	const struct odsm_transport_ops *t = odsm_conn_ops(conn);
	struct odsm_wire_aqp o, a;
	u8 p[ODSM_WIRE_AQP_SIZE];
	u32 got = 0;
	int ret;

	ret = t->aqp_offer(conn, &o);
	if (ret > 0) {
		ret = odsm_rpc(node, ODSM_MSG_AQP, p, odsm_wire_put_aqp(p, &o),
			       NULL, 0, p, sizeof(p), &got);
		if (!ret)
			ret = odsm_wire_get_aqp(p, got, &a);
		if (ret == -EPROTO)
			odsm_stat_inc(ODSM_STAT_bad_msgs);
		if (!ret)
			ret = t->aqp_finish(conn, &a);
	}
	return ret && !home_gone(ret) ? -EOPNOTSUPP : ret;
}

/* Is one-sided access on, and can it be (a transport that has it)? */
static bool onesided_on(void)
{
	return READ_ONCE(onesided) && odsm_onesided_active();
}

/* node's connection, held, when one-sided access is on and can be; or NULL */
static struct odsm_conn *active_conn(u32 node)
{
	return onesided_on() ? odsm_peer_conn_get(node) : NULL;
}

/*
 * The connection to node with keys for every block of [addr, addr + len),
 * registering them first (MAP) where needed, held (odsm_peer_conn_get());
 * NULL (nothing held) when the request path must do it instead: no
 * one-sided transport, one-sided turned off, a block the home does not
 * register, a leave under way.  ERR_PTR() when the MAP found the home
 * dead or silent: the request path would only wait on it again (a
 * second timeout_ms for one operation).
 */
static struct odsm_conn *onesided_conn(u32 node, u64 addr, u32 len)
{
	const struct odsm_transport_ops *t;
	struct odsm_conn *conn = active_conn(node);
	int ret = 0;
	u64 blk;

	if (!conn)
		return NULL;
	t = odsm_conn_ops(conn);
	if (!t->rw || !t->missing || !t->can_map || !t->add_key)
		goto out;
	while (t->missing(conn, addr, len, &blk)) {
		if (!t->can_map(conn))
			goto out;
		ret = map_block(conn, node, blk);
		if (ret)
			goto out;
	}
	return conn;
out:
	odsm_peer_conn_put(conn);
	return home_gone(ret) ? ERR_PTR(ret) : NULL;
}

bool odsm_onesided_active(void)
{
	const struct odsm_transport_ops *t = odsm_cluster_transport();

	return t && t->rw;
}

int odsm_onesided_rw(u32 node, u64 addr, void *buf, u32 len, bool write)
{
	struct odsm_conn *conn = onesided_conn(node, addr, len);
	int ret;

	if (IS_ERR_OR_NULL(conn))
		return conn ? PTR_ERR(conn) : -EOPNOTSUPP;
	ret = odsm_conn_ops(conn)->rw(conn, addr, buf, len, write);
	odsm_peer_conn_put(conn);
	if (ret == -EBUSY) {
		/* another is in flight on the connection: go as a request */
		odsm_stat_inc(ODSM_STAT_onesided_spills);
		return -EOPNOTSUPP;
	}
	return ret == -ENOKEY ? -EOPNOTSUPP : ret;
}

int odsm_onesided_atomic(u32 node, u64 addr, u32 op, u64 operand,
			 u64 compare, u64 *old)
{
	struct odsm_conn *conn = onesided_conn(node, addr, 8);
	int ret = -EOPNOTSUPP;

	if (IS_ERR_OR_NULL(conn))
		return conn ? PTR_ERR(conn) : -EOPNOTSUPP;
	if (odsm_conn_ops(conn)->atomic && odsm_conn_ops(conn)->aqp_offer)
		ret = aqp_connect(conn, node);
	if (!ret)
		ret = odsm_conn_ops(conn)->atomic(conn, addr, op, operand,
						  compare, old);
	odsm_peer_conn_put(conn);
	if (!ret)
		odsm_stat_inc(ODSM_STAT_onesided_atomics);
	return ret == -ENOKEY || ret == -ENOTCONN ? -EOPNOTSUPP : ret;
}

/*
 * Words known: per remote block, the published word of each slot as a
 * one-sided miss last read it (twice the same, usable), or as the FETCH
 * of its first copy left it (the copied mark set, the allocation color
 * answered), with the home incarnation it is of.  A later miss of the
 * same object leaves out the read before the bytes (odsm_pub_known()
 * says why that is safe):
 * one READ less per miss, a round trip less where READs are fenced.  A
 * hint like the class: a lost or stale word costs the read before the
 * bytes, or one refused read, never a wrong copy.  Each is kept with the
 * color of the pointer it was read through (a written object's pointer
 * is bumped past its allocation color), which tells a miss or a move
 * whether the word is likely its object's.  At most KNOWN_MAX_BYTES of them (8 KiB
 * per block of 64-byte objects, 1 KiB for 512-byte ones): past that all
 * are forgotten and learnt again.  Readers under RCU; a block's words are
 * replaced whole (another incarnation, a class with more slots), freed
 * after a grace period.
 */
struct known_blk {
	struct rcu_head rcu;
	u64 inc;		/* the home incarnation they were read from */
	u32 nr;			/* entries */
	u64 word[];		/* the word, the pointer's color << 32; 0: none */
};

#define KNOWN_MAX_BYTES	(8U << 20)
static DEFINE_XARRAY(known_blks);
static atomic_t known_bytes = ATOMIC_INIT(0);

static void known_free(struct known_blk *k)
{
	atomic_sub(struct_size(k, word, k->nr), &known_bytes);
	kfree_rcu(k, rcu);
}

static void known_forget(void)
{
	struct known_blk *k;
	unsigned long b;

	xa_for_each(&known_blks, b, k) {
		if (xa_cmpxchg(&known_blks, b, k, NULL, 0) == k)
			known_free(k);
	}
}

/*
 * The word of slot idx of block b read from incarnation inc, or 0; *seen:
 * the color of the pointer it was read through.
 */
static u32 known_word(unsigned long b, u32 idx, u64 inc, u16 *seen)
{
	struct known_blk *k;
	u64 e = 0;

	rcu_read_lock();
	k = xa_load(&known_blks, b);
	if (k && k->inc == inc && idx < k->nr)
		e = READ_ONCE(k->word[idx]);
	rcu_read_unlock();
	*seen = (u16)(e >> 32);
	return (u32)e;
}

/*
 * Remember w as slot idx's word of block b (of nr slots) at incarnation
 * inc, read through a pointer of color seen.
 */
static void known_set(unsigned long b, u32 idx, u32 nr, u64 inc, u32 w,
		      u16 seen)
{
	struct known_blk *k, *n, *old;
	u64 e = (u64)seen << 32 | w;
	size_t size;

	rcu_read_lock();
	k = xa_load(&known_blks, b);
	if (k && k->inc == inc && idx < k->nr) {
		WRITE_ONCE(k->word[idx], e);
		rcu_read_unlock();
		return;
	}
	rcu_read_unlock();
	/* none yet, or of another incarnation or fewer slots: anew */
	size = struct_size(n, word, nr);
	if (atomic_add_return(size, &known_bytes) > KNOWN_MAX_BYTES) {
		atomic_sub(size, &known_bytes);
		known_forget();
		return;
	}
	n = kzalloc(size, GFP_KERNEL_ACCOUNT);
	if (!n) {
		atomic_sub(size, &known_bytes);
		return;
	}
	n->inc = inc;
	n->nr = nr;
	n->word[idx] = e;
	/* k may be gone by now (a racing set or forget): then not ours */
	old = xa_cmpxchg(&known_blks, b, k, n, GFP_KERNEL_ACCOUNT);
	if (old != k) {
		atomic_sub(size, &known_bytes);
		kfree(n);
		return;
	}
	if (k)
		known_free(k);
}

/*
 * Class hints for one-sided misses: global block index -> the slab class
 * a FETCH of an object there said (class + 1, as an xarray value).  A
 * block's class changes only when it empties and is used again, and the
 * published words then say another class: a stale hint costs one
 * refused read, never a wrong copy.  One entry per block this node
 * fetched from, at most CLS_HINTS_MAX (about 4 GiB of blocks): past that
 * they are all forgotten and learnt again; freed at unload.  These hints,
 * the run hints and the known words are charged to the memory cgroup of
 * the process whose miss learnt them (the caps count entries, not the
 * xarray's nodes, which sparse blocks multiply), like the copies.
 */
#define CLS_HINTS_MAX	65536
static DEFINE_XARRAY(cls_hints);
static atomic_t nr_hints = ATOMIC_INIT(0);

static void hints_forget(void)
{
	unsigned long b;
	void *v;

	xa_for_each(&cls_hints, b, v)
		if (xa_erase(&cls_hints, b))
			atomic_dec(&nr_hints);
}

/*
 * Run hints: head block index -> the size and allocation color a FETCH
 * from the home's incarnation inc said the multi-block object starting
 * there has, for runs of at most ODSM_PUB_RUN_MAX bytes.  The run's word
 * says neither its size nor its end, so a hint is used only when the word
 * says "live, copied, allocated with exactly that color" (the same
 * object: colors at an address only grow within one incarnation).  At
 * most CLS_HINTS_MAX, then all forgotten; readers under RCU.
 */
struct run_hint {
	struct rcu_head rcu;
	u64 inc;
	u32 size;
	u16 color;
};

static DEFINE_XARRAY(run_hints);
static atomic_t nr_runs = ATOMIC_INIT(0);

static void runs_forget(void)
{
	struct run_hint *r;
	unsigned long b;

	xa_for_each(&run_hints, b, r) {
		if (xa_cmpxchg(&run_hints, b, r, NULL, 0) == r) {
			atomic_dec(&nr_runs);
			kfree_rcu(r, rcu);
		}
	}
}

/* The run hint of block b for incarnation inc: its size and color. */
static bool run_hint_of(unsigned long b, u64 inc, u32 *size, u16 *color)
{
	struct run_hint *r;
	bool ok = false;

	rcu_read_lock();
	r = xa_load(&run_hints, b);
	if (r && r->inc == inc) {
		*size = r->size;
		*color = r->color;
		ok = true;
	}
	rcu_read_unlock();
	return ok;
}

static void run_learn(unsigned long b, u64 inc, u64 size, u16 color)
{
	struct run_hint *r, *old;
	u32 osize;
	u16 ocolor;

	/* each FETCH of the run says it again: nothing to store */
	if (run_hint_of(b, inc, &osize, &ocolor) && osize == size &&
	    ocolor == color)
		return;
	r = kmalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	if (!r)
		return;
	r->inc = inc;
	r->size = (u32)size;
	r->color = color;
	old = xa_store(&run_hints, b, r, GFP_KERNEL_ACCOUNT);
	if (xa_is_err(old)) {
		kfree(r);
		return;
	}
	if (old)
		kfree_rcu(old, rcu);
	else if (atomic_inc_return(&nr_runs) > CLS_HINTS_MAX)
		runs_forget();
}

static void run_drop(unsigned long b)
{
	struct run_hint *r = xa_erase(&run_hints, b);

	if (r) {
		atomic_dec(&nr_runs);
		kfree_rcu(r, rcu);
	}
}

/*
 * A FETCH from node's incarnation inc said the object at cg is size bytes,
 * allocated with color: its block's class, or the run it heads, maybe.
 */
static void onesided_learn(u32 node, u64 inc, u64 cg, u64 size, u16 color)
{
	u64 addr = odsm_clear_color(cg);
	unsigned long b = addr >> ODSM_BLOCK_SHIFT;
	int cls = odsm_pub_class_of_size(size);
	void *old = xa_load(&cls_hints, b);
	u32 idx;

	if (cls < 0 && size > odsm_class_size[ODSM_NR_CLASSES - 1] &&
	    size <= ODSM_PUB_RUN_MAX && !(addr & (ODSM_BLOCK_SIZE - 1)))
		run_learn(b, inc, size, color);
	else
		run_drop(b);

	/* counted: every entry inserted (+1), every entry erased (-1) */
	if (cls < 0) {
		if (old && xa_erase(&cls_hints, b))
			atomic_dec(&nr_hints);
		return;
	}
	/*
	 * The FETCH marked the object copied under the home's heap lock and
	 * answered its allocation color: its word was this one then.
	 */
	if (odsm_pub_slot_of(addr & (ODSM_BLOCK_SIZE - 1), cls, &idx))
		known_set(b, idx, odsm_class_slots(cls), inc,
			  odsm_pub_word(cls, true, true, color),
			  odsm_color(cg));
	if (old) {	/* another class now: replaced if still there */
		if (xa_to_value(old) != cls + 1)
			xa_cmpxchg(&cls_hints, b, old, xa_mk_value(cls + 1),
				   GFP_KERNEL_ACCOUNT);
		return;
	}
	if (atomic_inc_return(&nr_hints) > CLS_HINTS_MAX) {
		atomic_dec(&nr_hints);
		hints_forget();
		return;
	}
	/* -EBUSY (a racing learn inserted it) or -ENOMEM: not ours */
	if (xa_insert(&cls_hints, b, xa_mk_value(cls + 1), GFP_KERNEL_ACCOUNT))
		atomic_dec(&nr_hints);
}

/*
 * The read of a one-sided miss on conn, node's connection with keys for
 * every block it touches (held by the caller): transport's read_pub(),
 * the words before (unless NULL) and after len bytes at addr, word idx of
 * the block at wblk; past one chain (three blocks from addr's) only with
 * before NULL.  Only from the home's incarnation inc, which the caller
 * read before: the words and sizes it knows are of that one (should the
 * home restart after, the cache finds the copy's incarnation gone:
 * home_same()).  -EOPNOTSUPP when a FETCH must do it; another -errno:
 * the home is gone.
 */
static int pub_read_on(struct odsm_conn *conn, u32 node, u64 inc, u64 addr,
		       void *buf, u32 len, u64 wblk, u32 idx, u32 *before,
		       u32 *after)
{
	const struct odsm_transport_ops *t = odsm_conn_ops(conn);
	u32 off, n, chain;
	int ret;

	/* a conn to a restarted home comes up after its incarnation is known */
	if (odsm_peer_incarnation(node, true) != inc || !t->read_pub)
		return -EOPNOTSUPP;
	chain = min_t(u32, len, ODSM_PUB_RUN_CHAIN -
				(addr & (ODSM_BLOCK_SIZE - 1)));
	/*
	 * Past one chain (a long run or a lazy copy's pages, the word known:
	 * before is NULL): the blocks after the chain's, each operation
	 * waited for, then the chain and the word after it, which brackets
	 * them all.
	 */
	ret = 0;
	for (off = chain; off < len && !ret; off += n) {
		n = min(len - off, ODSM_WIRE_MAX_DATA);
		ret = before ? -EOPNOTSUPP :
			       t->rw(conn, addr + off, buf + off, n, false);
	}
	if (!ret)
		ret = t->read_pub(conn, addr, buf, chain, wblk, idx, before,
				  after);
	if (ret == -EBUSY) {
		odsm_stat_inc(ODSM_STAT_onesided_spills);
		return -EOPNOTSUPP;
	}
	return ret == -ENOKEY ? -EOPNOTSUPP : ret;
}

/* pub_read_on() node's connection, registering addr's blocks (MAP) first. */
static int pub_read(u32 node, u64 inc, u64 addr, void *buf, u32 len,
		    u32 idx, u32 *before, u32 *after)
{
	struct odsm_conn *conn = onesided_conn(node, addr, len);
	int ret;

	if (IS_ERR_OR_NULL(conn))
		return conn ? PTR_ERR(conn) : -EOPNOTSUPP;
	ret = pub_read_on(conn, node, inc, addr, buf, len,
			  addr & ~(u64)(ODSM_BLOCK_SIZE - 1), idx, before,
			  after);
	odsm_peer_conn_put(conn);
	return ret;
}

/*
 * Keys for the pages of lazily filled copies, and for moves of runs: a
 * run's blocks are registered by the home when this node asks (KEYS_ASK,
 * no reply: the keys come in a KEYS message), in windows of
 * ODSM_WIRE_KEYS_ASK_MAX blocks from the first one missing; until they
 * come the faults and moves ask with FETCH, never waiting for a
 * registration (a MAP per block costs a round trip each).  The window asked
 * last of each node is not asked again for a second (the home serves
 * one ask of a peer at a time and drops the others).
 */
static struct {
	u64 blk, end;	/* the window asked: [blk, end) */
	unsigned long when;
} keys_asked[ODSM_MAX_NODES];
static DEFINE_SPINLOCK(keys_asked_lock);

static void ask_keys(struct odsm_conn *conn, u32 node, u64 blk, u64 end)
{
	struct odsm_wire_keys_ask a = { .gaddr = blk };
	u8 p[ODSM_WIRE_KEYS_ASK_SIZE];
	bool again;

	a.nr = min_t(u64, DIV_ROUND_UP(end - blk, ODSM_WIRE_MAP_LEN),
		     ODSM_WIRE_KEYS_ASK_MAX);
	spin_lock(&keys_asked_lock);
	again = keys_asked[node].blk <= blk && blk < keys_asked[node].end &&
		time_before(jiffies, keys_asked[node].when + HZ);
	if (!again) {
		keys_asked[node].blk = blk;
		keys_asked[node].end = blk + (u64)a.nr * ODSM_WIRE_MAP_LEN;
		keys_asked[node].when = jiffies;
	}
	spin_unlock(&keys_asked_lock);
	if (again || !odsm_conn_ops(conn)->can_map(conn))
		return;
	odsm_wire_put_keys_ask(p, &a);
	if (!odsm_msg_send(conn, ODSM_MSG_KEYS_ASK, p, sizeof(p)))
		odsm_stat_add(ODSM_STAT_keys_asked, a.nr);
}

/*
 * Has conn (node's, whose transport can map) the keys of every block of
 * [addr, addr + len)?  If not, those from the first missing one up to
 * end are asked for, and the caller asks with a FETCH this time.
 */
static bool keys_or_ask(struct odsm_conn *conn, u32 node, u64 addr, u64 len,
			u64 end)
{
	u64 blk;

	if (!odsm_conn_ops(conn)->missing(conn, addr, len, &blk))
		return true;
	ask_keys(conn, node, blk, end);
	return false;
}

/* For a move of a run: keys_or_ask() node's connection for its blocks. */
static bool run_keys_there(u32 node, u64 addr, u64 len)
{
	struct odsm_conn *conn = active_conn(node);
	const struct odsm_transport_ops *t;
	bool there;

	if (!conn)
		return false;
	t = odsm_conn_ops(conn);
	there = t->missing && t->can_map &&
		keys_or_ask(conn, node, addr, len, addr + len);
	odsm_peer_conn_put(conn);
	return there;
}

/*
 * onesided_copy() of a run (odsm_pubword.h): its bytes (up to 16
 * blocks, a READ each) and its head's word after them, when this node
 * learnt its size from a FETCH of the same incarnation.  For a move
 * (known_only), only with the keys of its blocks there already.
 */
static int run_copy(u32 node, u64 cg, void *buf, u32 room, u64 *size,
		    bool known_only)
{
	u64 addr = odsm_clear_color(cg), inc;
	u32 before, after = 0, len;
	u16 learnt;
	bool known;
	int ret;

	if (addr & (ODSM_BLOCK_SIZE - 1))
		return -EOPNOTSUPP;
	inc = odsm_peer_incarnation(node, true);
	if (!inc || !run_hint_of(addr >> ODSM_BLOCK_SHIFT, inc, &len, &learnt))
		return -EOPNOTSUPP;
	/* a pointer older than the object: the FETCH says -ESTALE */
	if (odsm_color(cg) < learnt)
		return -EOPNOTSUPP;
	if (known_only && !run_keys_there(node, addr, len))
		return -EOPNOTSUPP;
	if (len > room) {
		*size = len;
		return -EMSGSIZE;
	}
	/*
	 * No word before the bytes: the FETCH that taught the size marked the
	 * run copied and answered its color, so its word was the usable one
	 * then (odsm_pub_known()).
	 */
	known = READ_ONCE(onesided_known);
	before = odsm_pub_run_word(true, true, learnt);
	ret = pub_read(node, inc, addr, buf, len, 0, known ? NULL : &before,
		       &after);
	if (ret)
		return ret;
	if (!odsm_pub_run_usable(before, after, learnt, odsm_color(cg))) {
		odsm_stat_inc(ODSM_STAT_onesided_copy_refused);
		return -EOPNOTSUPP;
	}
	odsm_stat_inc(ODSM_STAT_onesided_copies);
	if (known)
		odsm_stat_inc(ODSM_STAT_onesided_copy_known);
	odsm_stat_inc(ODSM_STAT_onesided_run_copies);
	odsm_stat_add(ODSM_STAT_bytes_fetched, len);
	*size = len;
	return 0;
}

/*
 * A shared-borrow miss read one-sided (odsm_pubword.h): the whole object
 * at cg into buf, when the home publishes that it may (a slab object
 * copied before, of the class this node learned for its block; a run:
 * run_copy()); -EMSGSIZE with its size when that is more than room.  The
 * cache's miss reader (struct odsm_miss_reader).
 */
static int onesided_copy(u32 node, u64 cg, void *buf, u32 room, u64 *size,
			 bool known_only)
{
	u64 addr = odsm_clear_color(cg), off = addr & (ODSM_BLOCK_SIZE - 1);
	unsigned long b = addr >> ODSM_BLOCK_SHIFT;
	u32 cs, idx, known, before = 0, after = 0;
	u16 seen = 0;
	int cls, ret;
	void *hint;
	u64 inc;

	/* off (a move asks too): no lookup, as pub_read() would refuse */
	if (!onesided_on())
		return -EOPNOTSUPP;
	hint = xa_load(&cls_hints, b);
	if (!hint)
		return run_copy(node, cg, buf, room, size, known_only);
	cls = (int)xa_to_value(hint) - 1;
	cs = odsm_class_size[cls];
	if (!odsm_pub_slot_of(off, cls, &idx))
		return -EOPNOTSUPP;
	inc = odsm_peer_incarnation(node, true);
	if (!inc)
		return -EOPNOTSUPP;
	known = READ_ONCE(onesided_known) ? known_word(b, idx, inc, &seen) : 0;
	if (!odsm_pub_known(known, seen, cls, odsm_color(cg)))
		known = 0;
	/*
	 * A move reads only an object whose word is known (copied): asked
	 * before the room, so that a move it refuses does not first have
	 * its caller allocate a buffer of the class's size.
	 */
	if (known_only && !known)
		return -EOPNOTSUPP;
	if (cs > room) {
		*size = cs;
		return -EMSGSIZE;
	}
	ret = pub_read(node, inc, addr, buf, cs, idx, known ? NULL : &before,
		       &after);
	if (ret)
		return ret;
	if (known)
		before = known;
	if (!odsm_pub_usable(before, after, cls, odsm_color(cg))) {
		odsm_stat_inc(ODSM_STAT_onesided_copy_refused);
		return -EOPNOTSUPP;
	}
	if (known)
		odsm_stat_inc(ODSM_STAT_onesided_copy_known);
	else
		known_set(b, idx, odsm_class_slots(cls), inc, before,
			  odsm_color(cg));
	odsm_stat_inc(ODSM_STAT_onesided_copies);
	/* brought into the cache like a FETCH's, so counted with them */
	odsm_stat_add(ODSM_STAT_bytes_fetched, cs);
	*size = cs;
	return 0;
}

/*
 * The end of the window of keys a move of the run [head, head + size)
 * asks for: the run's blocks and as many after it (node's partition
 * allowing).  A program that moves one of a series of objects moves the
 * next ones soon, and the home's allocator places runs one after
 * another: asked while this move reads, the next run's keys are there
 * when it comes (without them its rest goes by FETCH, and a move that
 * waited for them would be slower: see odsm_cache_move_rest()).  The
 * home registers only the blocks that hold objects (keys_send_work()),
 * at most RDMA_MAX_REGS per connection; a run is at most
 * ODSM_WIRE_KEYS_ASK_MAX blocks ahead.
 */
static u64 move_keys_end(u32 node, u64 head, u64 size)
{
	const struct odsm_geom *g = &odsm_heap.geom;
	u64 part_end = odsm_part_start(g, node) + g->part_size;

	size = min_t(u64, size, (u64)ODSM_WIRE_KEYS_ASK_MAX * ODSM_BLOCK_SIZE);
	return head + size <= part_end - size ? head + 2 * size : part_end;
}

/*
 * len bytes at offset off of the run at cg (size bytes, allocated with
 * color, as the FETCH of its lazily filled copy, or of a move's first
 * bytes, from node's incarnation inc said) into buf, one-sided: the
 * bytes and the run's word after them, which must still be the word that
 * FETCH left (live, copied, that color: odsm_pub_known()'s argument, for
 * any bytes of the run).  The cache's run reader (struct
 * odsm_miss_reader); for a lazily filled copy's pages (lazy) only with
 * onesided_lazy on.
 */
static int run_read(u32 node, u64 inc, u64 cg, u64 size, u16 color, u64 off,
		    void *buf, u32 len, bool lazy)
{
	u64 head = odsm_clear_color(cg), addr = head + off, end;
	u32 known = odsm_pub_run_word(true, true, color), after = 0;
	const struct odsm_transport_ops *t;
	struct odsm_conn *conn;
	int ret = -EOPNOTSUPP;

	if (!onesided_on() || (lazy && !READ_ONCE(onesided_lazy)) ||
	    (head & (ODSM_BLOCK_SIZE - 1)) ||
	    off >= size || len > size - off || odsm_color(cg) < color)
		return -EOPNOTSUPP;
	conn = odsm_peer_conn_get(node);
	if (!conn)
		return -EOPNOTSUPP;
	t = odsm_conn_ops(conn);
	if (!t->read_pub || !t->missing || !t->can_map)
		goto out;
	/* the head's key (its word) and the bytes' keys, else ask for them */
	end = lazy ? head + size : move_keys_end(node, head, size);
	if (!keys_or_ask(conn, node, head, 1, end) ||
	    !keys_or_ask(conn, node, addr, len, end))
		goto out;
	/* a move: the next run's, ahead, the first time they are missing */
	if (!lazy && end > head + size)
		keys_or_ask(conn, node, head + size, end - head - size, end);
	ret = pub_read_on(conn, node, inc, addr, buf, len, head, 0, NULL,
			  &after);
	if (ret)
		goto out;
	if (!odsm_pub_run_usable(known, after, color, odsm_color(cg))) {
		odsm_stat_inc(ODSM_STAT_onesided_copy_refused);
		ret = -EOPNOTSUPP;
		goto out;
	}
	/* brought here like a FETCH's, so counted with them */
	odsm_stat_add(ODSM_STAT_bytes_fetched, len);
out:
	odsm_peer_conn_put(conn);
	return ret;
}

bool odsm_nic_domain_here(void)
{
	const struct odsm_transport_ops *t = odsm_cluster_transport();

	return t && t->nic_atomics && t->loop_atomic && t->nic_atomics();
}

int odsm_nic_atomic_here(u64 addr, u32 op, u64 operand, u64 compare,
			 u64 *old)
{
	const struct odsm_transport_ops *t;
	int ret = -EOPNOTSUPP;

	if (!map_allowed(addr & ~(u64)(ODSM_WIRE_MAP_LEN - 1)))
		return -EINVAL;
	/* a leave under way: it waits for us, we must not wait for it */
	if (!odsm_cluster_hold())
		return -EHOSTDOWN;
	t = odsm_cluster_transport();
	if (t && t->loop_atomic)
		ret = t->loop_atomic(addr, op, operand, compare, old);
	odsm_cluster_unhold();
	return ret;
}

/* ---- registration ---------------------------------------------------------- */

static const struct odsm_msg_handler map_handler = {
	.type = ODSM_MSG_MAP, .reply = ODSM_MSG_MAP_REPLY, .serve = serve_map,
};

static const struct odsm_msg_handler aqp_handler = {
	.type = ODSM_MSG_AQP, .reply = ODSM_MSG_AQP_REPLY, .serve = serve_aqp,
};

static const struct odsm_msg_handler keys_handler = {
	.type = ODSM_MSG_KEYS, .rx = on_keys,
};

static const struct odsm_msg_handler keys_ask_handler = {
	.type = ODSM_MSG_KEYS_ASK, .rx = on_keys_ask,
};

static struct odsm_peer_events onesided_events = {
	.up = keys_send,
};

static const struct odsm_miss_reader onesided_reader = {
	.copy = onesided_copy, .learn = onesided_learn, .run_read = run_read,
};

int odsm_onesided_init(void)
{
	int ret = odsm_handler_register(&map_handler);

	if (ret)
		return ret;
	ret = odsm_handler_register(&keys_handler);
	if (ret)
		goto err_map;
	ret = odsm_handler_register(&aqp_handler);
	if (ret)
		goto err_keys;
	ret = odsm_handler_register(&keys_ask_handler);
	if (ret)
		goto err_aqp;
	odsm_peer_events_register(&onesided_events);
	odsm_cache_set_miss_reader(&onesided_reader);
	return 0;

err_aqp:
	odsm_handler_unregister(&aqp_handler);
err_keys:
	odsm_handler_unregister(&keys_handler);
err_map:
	odsm_handler_unregister(&map_handler);
	return ret;
}

void odsm_onesided_exit(void)
{
	/* at unload: no file is open, so no miss is under way */
	odsm_cache_set_miss_reader(NULL);
	odsm_peer_events_unregister(&onesided_events);
	odsm_handler_unregister(&keys_ask_handler);
	odsm_handler_unregister(&aqp_handler);
	odsm_handler_unregister(&keys_handler);
	odsm_handler_unregister(&map_handler);
	xa_destroy(&cls_hints);
	known_forget();
	xa_destroy(&known_blks);
	runs_forget();
	xa_destroy(&run_hints);
}
