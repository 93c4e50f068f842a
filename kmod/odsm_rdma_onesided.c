// SPDX-License-Identifier: GPL-2.0
/*
 * One-sided RDMA over the RDMA transport's connections: READ, WRITE and
 * atomics straight at a peer's partition, and the registrations that let
 * a peer do the same to ours.
 *
 * Registrations: the home node registers the 64 KiB blocks of its
 * partition a peer asks for (a MAP request, served by odsm_rdma_map on the
 * connection it came on): it pins the block's pages in the store
 * (odsm_store_pin: present, zeroed where absent, kept while pinned, so a
 * block that empties and is reused keeps the same pages), maps them for
 * DMA and registers them in the connection's PD with fast registration
 * (ib_alloc_mr + ib_map_mr_sg + IB_WR_REG_MR, REMOTE_READ | REMOTE_WRITE,
 * and REMOTE_ATOMIC where the device has atomics; never a global rkey),
 * and answers with the rkey and iova.  The peer caches block -> (iova,
 * rkey, flags) on its side of the connection.  The REG_MR goes on a QP
 * of its own in the same PD (odsm_rdma_sideqp.c), never behind the data
 * QP's SENDs and READs.  A registration lives as long as the connection:
 * the teardown drains the QP, then deregisters and unpins (a removed
 * device and rmmod tear down the connection, so them too); a connection
 * registers at most RDMA_MAX_REGS blocks.
 *
 * Operations: READ/WRITE through a DMA-mapped bounce buffer, an atomic's
 * old value into its first 8 bytes.  A connection has up to
 * RDMA_OS_SLOTS slots, each a bounce buffer and a completion; an
 * operation takes a free one (a bit of os.busy), so that several are
 * posted at once: WRITEs overlap, and the data QP keeps its READ depth
 * of READs outstanding (odsm_rdma_init_depth()), the atomics QP as many
 * atomics, starting the next when one is answered.  A READ or WRITE that finds every slot in
 * use, or a READ that would wait behind the QP's READ depth, does not
 * wait: it returns -EBUSY and its caller sends it as a request instead (a
 * spill), which the home's CPU serves side by side with the others.
 * Atomics wait for a slot (os.free; a flagged one must be the device's),
 * and READs and WRITEs spill while one waits (os.waiters).
 * Every work request is signalled and waited for at most timeout_ms.  A
 * remote access error moves the QP to the error state: the connection
 * fails and the cluster redials, like any other failure.
 *
 * Atomics (ODSM_ATOMIC_F_NIC only): devices that report IB_ATOMIC_HCA,
 * Soft-RoCE among them, make RDMA atomics indivisible against the same
 * device's atomics only, never against the CPU's.  So a home whose
 * registrations take atomics (MAP_F_ATOMIC) runs every flagged atomic on
 * its own words through its own device as well, over the loopback pair
 * (odsm_rdma_loop_atomic), whether its own process asked or a peer's
 * request did; unflagged atomics stay CPU atomics at the home.  They go
 * on the connection's atomics QP pair, never on the data QP
 * (odsm_rdma_sideqp.c says why).
 *
 * Locks: the cache's slot_sem (held for reading by the caller, map_for())
 * -> reg_lock (one MAP at a time) or aqp.lock (setting up the atomics
 * QP) -> res_sem -> heap->lock (pinning
 * takes heap->lock before res_sem and drops it; the teardown holds
 * res_sem for writing and then takes heap->lock to unpin).  A slot is
 * taken before res_sem (a thread waiting for a slot must not hold off the
 * teardown); res_sem is dropped while waiting for completions, and an
 * operation that failed does not take it again (os_run_on()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include "odsm_rdma.h"

/* A one-sided or REG_MR work request completed. */
void odsm_rdma_wr_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct odsm_rdma_wait *w = container_of(wc->wr_cqe, struct odsm_rdma_wait, cqe);

	if (wc->status != IB_WC_SUCCESS) {
		pr_notice_ratelimited("rdma one-sided work request failed: %s\n",
				      ib_wc_status_msg(wc->status));
		WRITE_ONCE(w->status, -EHOSTDOWN);
		/* the QP is in error: the connection is over */
		odsm_conn_kill(w->x->conn);
	}
	if (atomic_dec_and_test(&w->pending))
		complete(&w->done);
}

/*
 * Deregister and unpin every block registered for the peer.  From the
 * teardown, after the QP is gone: nobody reaches them any more.
 */
void odsm_rdma_regs_free(struct odsm_rdma_conn *x)
{
	struct odsm_rdma_reg *g;
	unsigned long i;

	xa_for_each(&x->reg.map, i, g) {
		xa_erase(&x->reg.map, i);
		if (g->mr)
			ib_dereg_mr(g->mr);
		if (g->nents)
			ib_dma_unmap_sg(x->dev, g->sg, g->nr_sg,
					DMA_BIDIRECTIONAL);
		odsm_store_unpin(&odsm_heap, g->addr, g->pages, g->pub);
		kfree(g);
	}
}

void odsm_rdma_os_init(struct odsm_rdma_conn *x)
{
	int i;

	init_waitqueue_head(&x->os.free);
	for (i = 0; i < RDMA_OS_SLOTS; i++) {
		struct odsm_rdma_wait *w = &x->os.slot[i].wait;

		w->x = x;
		w->cqe.done = odsm_rdma_wr_done;
		init_completion(&w->done);
	}
}

/*
 * The bounce buffers, from the connection's setup: the first one is
 * needed, the others are taken if order-6 pages are there (fewer slots
 * mean fewer operations in flight, nothing else).
 */
int odsm_rdma_os_setup(struct odsm_rdma_conn *x)
{
	struct odsm_rdma_slot *s;
	u32 i;

	for (i = 0; i < RDMA_OS_SLOTS; i++) {
		s = &x->os.slot[i];
		s->buf = alloc_pages_exact(ODSM_WIRE_MAX_DATA,
					   GFP_KERNEL | __GFP_NOWARN);
		if (!s->buf)
			break;
		s->dma = ib_dma_map_single(x->dev, s->buf, ODSM_WIRE_MAX_DATA,
					   DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(x->dev, s->dma)) {
			free_pages_exact(s->buf, ODSM_WIRE_MAX_DATA);
			s->buf = NULL;
			break;
		}
	}
	x->os.nr = i;
	/* what we offer; the peer may take less, and then READs queue */
	x->os.rd_depth = max(1U, odsm_rdma_init_depth(x->dev));
	/*
	 * Soft-RoCE's responder reads memory in the order of the READs: what
	 * our MAP replies say (MAP_F_INORDER), for the peer's reads of us
	 */
	x->os.ordered_reads = odsm_rdma_is_rxe(x->dev);
	return i ? 0 : -ENOMEM;
}

/* The bounce buffers, from the teardown (res_sem held for writing). */
void odsm_rdma_os_free(struct odsm_rdma_conn *x)
{
	struct odsm_rdma_slot *s;
	u32 i;

	for (i = 0; i < x->os.nr; i++) {
		s = &x->os.slot[i];
		ib_dma_unmap_single(x->dev, s->dma, ODSM_WIRE_MAX_DATA,
				    DMA_BIDIRECTIONAL);
		free_pages_exact(s->buf, ODSM_WIRE_MAX_DATA);
		s->buf = NULL;
	}
}

/* Wait for w's work requests; false (connection killed) after timeout_ms. */
static bool wait_wrs(struct odsm_rdma_conn *x, struct odsm_rdma_wait *w)
{
	if (wait_for_completion_timeout(&w->done,
					msecs_to_jiffies(x->timeout_ms)))
		return true;
	pr_notice_ratelimited("rdma: no completion in %u ms: connection closed\n",
			      x->timeout_ms);
	odsm_rdma_qp_report(x, "one-sided stall to");
	odsm_conn_kill(x->conn);
	return false;
}

void odsm_rdma_counts(struct odsm_conn *conn, u32 *keys, u32 *regs)
{
	struct odsm_rdma_conn *x = rc(conn);

	*keys = atomic_read(&x->os.nr_keys);
	*regs = READ_ONCE(x->reg.nr);
}

bool odsm_rdma_can_map(struct odsm_conn *conn)
{
	return !READ_ONCE(rc(conn)->os.no_maps);
}

void odsm_rdma_no_maps(struct odsm_conn *conn)
{
	WRITE_ONCE(rc(conn)->os.no_maps, true);
}

int odsm_rdma_add_key(struct odsm_conn *conn,
		      const struct odsm_wire_map_reply *r)
{
	struct odsm_rdma_conn *x = rc(conn);
	struct odsm_rdma_key *k;
	int ret;

	/*
	 * A home registers at most RDMA_MAX_REGS blocks per connection: a
	 * peer's KEYS past that are not kept (the reads go two-sided), so
	 * that no peer makes this node allocate without bound.
	 */
	if (atomic_read(&x->os.nr_keys) >= RDMA_MAX_REGS)
		return -ENOSPC;
	k = kmalloc(sizeof(*k), GFP_KERNEL);
	if (!k)
		return -ENOMEM;
	k->iova = r->iova;
	k->rkey = r->rkey;
	k->flags = r->flags;
	/* keys are only ever added, freed with the connection: lookups
	 * need no lock
	 */
	ret = xa_insert(&x->os.keys, r->gaddr >> ODSM_BLOCK_SHIFT, k, GFP_KERNEL);
	if (ret)
		kfree(k);
	else
		atomic_inc(&x->os.nr_keys);
	return ret == -EBUSY ? 0 : ret;
}

/* The first block of [addr, addr + len) the peer has not registered for us. */
bool odsm_rdma_missing(struct odsm_conn *conn, u64 addr, u32 len, u64 *blk)
{
	struct odsm_rdma_conn *x = rc(conn);
	u64 b, last = (addr + len - 1) >> ODSM_BLOCK_SHIFT;

	for (b = addr >> ODSM_BLOCK_SHIFT; b <= last; b++) {
		if (!xa_load(&x->os.keys, b)) {
			*blk = b << ODSM_BLOCK_SHIFT;
			return true;
		}
	}
	return false;
}

/* A free slot of x, now ours, or -1. */
static int os_take(struct odsm_rdma_conn *x)
{
	u32 i;

	for (i = 0; i < x->os.nr; i++) {
		if (test_and_set_bit_lock(i, &x->os.busy))
			continue;
		if (READ_ONCE(x->os.busy) & ~BIT(i))
			odsm_stat_inc(ODSM_STAT_onesided_overlaps);
		return i;
	}
	return -1;
}

static void os_put(struct odsm_rdma_conn *x, int i)
{
	clear_bit_unlock(i, &x->os.busy);
	wake_up(&x->os.free);
}

/*
 * A slot of the connection for a one-sided operation, in *sp: 0,
 * -EHOSTDOWN, or -EBUSY when spill and every slot is in use.  Without
 * spill, waits while all are in use; each ends within timeout_ms.
 *
 * An operation that may spill does not take a slot while one that may
 * not (an atomic) waits for it: READs and WRITEs arriving without pause
 * would otherwise win every slot that goes free, and the atomic would
 * wait for as long as they come.  They go as requests meanwhile.
 */
static int os_begin(struct odsm_rdma_conn *x, struct odsm_rdma_slot **sp,
		    bool spill)
{
	int i;

	if (!READ_ONCE(x->os.nr))
		return -EHOSTDOWN;	/* never set up */
	if (spill) {
		i = atomic_read(&x->os.waiters) ? -1 : os_take(x);
		if (i < 0)
			return -EBUSY;
	} else {
		atomic_inc(&x->os.waiters);
		wait_event(x->os.free, (i = os_take(x)) >= 0);
		atomic_dec(&x->os.waiters);
	}
	*sp = &x->os.slot[i];
	down_read(&x->res_sem);
	if (x->torn || READ_ONCE(x->broken) || READ_ONCE(x->conn->dead)) {
		up_read(&x->res_sem);
		os_put(x, i);
		return -EHOSTDOWN;
	}
	return 0;
}

static void os_end(struct odsm_rdma_conn *x, struct odsm_rdma_slot *s)
{
	up_read(&x->res_sem);
	os_put(x, s - x->os.slot);
}

/*
 * Post the chain wr of n signalled work requests on slot s and wait for
 * them.  The caller holds s and res_sem for reading.  0: every request
 * succeeded, the connection's resources (the bounce buffer) are still
 * there, and the caller still holds both (os_end() gives them back).  An
 * error gives both back here: a failed operation does not wait for the
 * teardown, which drains every QP of the connection and under load takes
 * long (a read of a node that had just died once took 6.7 s to fail,
 * timeout_ms 5000, most of it behind the teardown of its connection).
 */
static int os_run_on(struct odsm_rdma_conn *x, struct ib_qp *qp,
		     struct odsm_rdma_slot *s, const struct ib_send_wr *wr,
		     u32 n, const char *what, u32 len)
{
	struct odsm_rdma_wait *w = &s->wait;
	int ret;

	reinit_completion(&w->done);
	w->status = 0;
	atomic_set(&w->pending, n);
	ret = ib_post_send(qp, wr, NULL);
	if (ret) {
		/* some may be posted: they flush when the QP goes */
		pr_notice_ratelimited("rdma %s of %u bytes not posted (%d): connection closed\n",
				      what, len, ret);
		odsm_conn_kill(x->conn);
		os_end(x, s);
		return -EHOSTDOWN;
	}
	up_read(&x->res_sem);
	/* the teardown drains the QP: it need not wait for us */
	ret = wait_wrs(x, w) ? READ_ONCE(w->status) : -ETIMEDOUT;
	if (!ret) {
		down_read(&x->res_sem);
		if (!x->torn)
			return 0;
		up_read(&x->res_sem);
		ret = -EHOSTDOWN;
	}
	/* requests may still be posted on s: the connection is killed,
	 * and os_begin() hands s to nobody who would post
	 */
	os_put(x, s - x->os.slot);
	return ret;
}

/* os_run_on the data QP. */
static int os_run(struct odsm_rdma_conn *x, struct odsm_rdma_slot *s,
		  const struct ib_send_wr *wr, u32 n, const char *what, u32 len)
{
	return os_run_on(x, x->qp, s, wr, n, what, len);
}

/* Work request i of chain wrs: opcode on len bytes at raddr, bounce + boff. */
static void os_wr(struct ib_rdma_wr *wrs, struct ib_sge *sges, int i,
		  enum ib_wr_opcode opcode, struct odsm_rdma_conn *x,
		  struct odsm_rdma_slot *s, u32 boff, u32 len, u64 raddr,
		  u32 rkey)
{
	sges[i].addr = s->dma + boff;
	sges[i].length = len;
	sges[i].lkey = x->pd->local_dma_lkey;
	wrs[i].wr.wr_cqe = &s->wait.cqe;
	wrs[i].wr.opcode = opcode;
	wrs[i].wr.send_flags = IB_SEND_SIGNALED;
	wrs[i].wr.sg_list = &sges[i];
	wrs[i].wr.num_sge = 1;
	wrs[i].remote_addr = raddr;
	wrs[i].rkey = rkey;
	if (i)
		wrs[i - 1].wr.next = &wrs[i].wr;
}

int odsm_rdma_rw(struct odsm_conn *conn, u64 addr, void *buf, u32 len,
		 bool write)
{
	struct odsm_rdma_conn *x = rc(conn);
	struct ib_rdma_wr wrs[RDMA_OS_WRS];
	struct ib_sge sges[RDMA_OS_WRS];
	u32 off, n = 0, piece, in;
	struct odsm_rdma_slot *s;
	struct odsm_rdma_key *k;
	int ret;
	u64 a;

	if (!len || len > ODSM_WIRE_MAX_DATA)
		return -EINVAL;
	/*
	 * A READ that would wait on the QP behind rd_depth others goes as a
	 * request instead: the home's CPU serves requests side by side.
	 * Counted in operations: one is up to RDMA_OS_WRS READ work requests
	 * (a 64 KiB block each), which the QP's own READ depth (the
	 * max_rd_atomic it was given) keeps in bounds on the wire.
	 */
	if (!write && atomic_inc_return(&x->os.reads) > x->os.rd_depth) {
		atomic_dec(&x->os.reads);
		return -EBUSY;
	}
	memset(wrs, 0, sizeof(wrs));
	ret = os_begin(x, &s, true);
	if (ret)
		goto out_reads;
	for (off = 0; off < len; off += piece, n++) {
		a = addr + off;
		k = xa_load(&x->os.keys, a >> ODSM_BLOCK_SHIFT);
		if (!k) {
			ret = -ENOKEY;
			goto out;
		}
		in = a & (ODSM_WIRE_MAP_LEN - 1);
		piece = min(len - off, ODSM_WIRE_MAP_LEN - in);
		os_wr(wrs, sges, n, write ? IB_WR_RDMA_WRITE : IB_WR_RDMA_READ,
		      x, s, off, piece, k->iova + in, k->rkey);
	}
	if (write) {
		memcpy(s->buf, buf, len);
		ib_dma_sync_single_for_device(x->dev, s->dma, len,
					      DMA_BIDIRECTIONAL);
	}
	ret = os_run(x, s, &wrs[0].wr, n, write ? "WRITE" : "READ", len);
	if (ret)
		goto out_reads;
	if (!write) {
		ib_dma_sync_single_for_cpu(x->dev, s->dma, len,
					   DMA_BIDIRECTIONAL);
		memcpy(buf, s->buf, len);
	}
	odsm_stat_inc(write ? ODSM_STAT_onesided_writes :
			      ODSM_STAT_onesided_reads);
	odsm_stat_add(ODSM_STAT_onesided_bytes, len);
out:
	os_end(x, s);
out_reads:
	if (!write)
		atomic_dec(&x->os.reads);
	return ret;
}

/*
 * A one-sided borrow miss's read (odsm_pubword.h): the published word idx
 * of wblk's block (addr's own, or for a page of a run its head's), the len
 * bytes at addr (a READ per block they span, up to three), the word again,
 * as READs of one chain,
 * which the responder runs in the order posted (RC ordering), all in one
 * round trip.  Without before, the caller knows the word already
 * (odsm_pub_known()): the bytes and the word after them only.  The bytes
 * land at the start of the bounce buffer, the words past them.
 */
int odsm_rdma_read_pub(struct odsm_conn *conn, u64 addr, void *buf, u32 len,
		       u64 wblk, u32 idx, u32 *before, u32 *after)
{
	u32 woff = round_up(len, 8), n = 0, i, off, in, piece;
	struct odsm_rdma_conn *x = rc(conn);
	struct ib_rdma_wr wrs[RDMA_OS_WRS] = {};
	struct ib_sge sges[RDMA_OS_WRS];
	struct odsm_rdma_key *k, *wk;
	struct odsm_rdma_slot *s;
	__le32 w[2];
	u64 waddr;
	int ret;

	/* the words past the bytes; at most RDMA_OS_WRS READs (SQ depth) */
	in = addr & (ODSM_WIRE_MAP_LEN - 1);
	if (!len || len > ODSM_WIRE_MAX_DATA - 8 ||
	    DIV_ROUND_UP(in + len, ODSM_WIRE_MAP_LEN) + 2 > RDMA_OS_WRS ||
	    idx >= ODSM_WIRE_MAP_PUB_LEN / sizeof(u32))
		return -EINVAL;
	wk = xa_load(&x->os.keys, wblk >> ODSM_BLOCK_SHIFT);
	if (!wk)
		return -ENOKEY;
	if (!(wk->flags & ODSM_WIRE_MAP_F_PUB))
		return -EOPNOTSUPP;
	/* a READ behind rd_depth others goes as a request (odsm_rdma_rw) */
	if (atomic_inc_return(&x->os.reads) > x->os.rd_depth) {
		atomic_dec(&x->os.reads);
		return -EBUSY;
	}
	ret = os_begin(x, &s, true);
	if (ret)
		goto out_reads;
	waddr = wk->iova + ODSM_WIRE_MAP_LEN + idx * sizeof(u32);
	if (before)
		os_wr(wrs, sges, n++, IB_WR_RDMA_READ, x, s, woff,
		      sizeof(u32), waddr, wk->rkey);
	for (off = 0; off < len; off += piece) {
		k = xa_load(&x->os.keys, (addr + off) >> ODSM_BLOCK_SHIFT);
		if (!k) {
			ret = -ENOKEY;
			goto out;
		}
		in = (addr + off) & (ODSM_WIRE_MAP_LEN - 1);
		piece = min(len - off, ODSM_WIRE_MAP_LEN - in);
		os_wr(wrs, sges, n++, IB_WR_RDMA_READ, x, s, off, piece,
		      k->iova + in, k->rkey);
	}
	os_wr(wrs, sges, n++, IB_WR_RDMA_READ, x, s, woff + sizeof(u32),
	      sizeof(u32), waddr, wk->rkey);
	/*
	 * Only the last is signalled: it completes after the others (RC),
	 * and a failing one completes (in error) whether signalled or not,
	 * after which the connection is killed and the slot never reused.
	 *
	 * The bracket needs the responder to read memory in the order of
	 * the READs.  Soft-RoCE's responder is sequential software and
	 * does; an HCA may pipeline the DMA reads of several READs (and
	 * PCIe completions may pass each other), so unless the home said
	 * its responder is in order (MAP_F_INORDER, in the word's key: it
	 * is the home's device that matters, not ours) each READ waits for
	 * the one before: a round trip each, still no home CPU.
	 */
	for (i = 0; i < n; i++) {
		if (i < n - 1)
			wrs[i].wr.send_flags = 0;
		if (i && !(wk->flags & ODSM_WIRE_MAP_F_INORDER))
			wrs[i].wr.send_flags |= IB_SEND_FENCE;
	}
	ret = os_run(x, s, &wrs[0].wr, 1, "READ", len);
	if (ret)
		goto out_reads;
	ib_dma_sync_single_for_cpu(x->dev, s->dma, woff + sizeof(w),
				   DMA_BIDIRECTIONAL);
	memcpy(buf, s->buf, len);
	memcpy(w, s->buf + woff, sizeof(w));
	if (before)
		*before = le32_to_cpu(w[0]);
	*after = le32_to_cpu(w[1]);
	odsm_stat_inc(ODSM_STAT_onesided_reads);
	odsm_stat_add(ODSM_STAT_onesided_bytes, len);
out:
	os_end(x, s);
out_reads:
	atomic_dec(&x->os.reads);
	return ret;
}

int odsm_rdma_atomic(struct odsm_conn *conn, u64 addr, u32 op, u64 operand,
		     u64 compare, u64 *old)
{
	struct odsm_rdma_conn *x = rc(conn);
	struct ib_atomic_wr wr = {};
	struct odsm_rdma_slot *s;
	struct odsm_rdma_key *k;
	struct ib_sge sge;
	u64 poison;
	int ret;

	if (addr % 8)
		return -EINVAL;
	k = xa_load(&x->os.keys, addr >> ODSM_BLOCK_SHIFT);
	if (!k)
		return -ENOKEY;
	if (!(k->flags & ODSM_WIRE_MAP_F_ATOMIC))
		return -EOPNOTSUPP;
	/*
	 * On the atomics QP only (odsm_rdma_sideqp.c says why); the acquire
	 * pairs with the release that set it up: connected when seen so.
	 */
	if (!smp_load_acquire(&x->aqp.up))
		return -ENOTCONN;
	ret = os_begin(x, &s, false);
	if (ret)
		return ret;
	sge.addr = s->dma;
	sge.length = sizeof(u64);
	sge.lkey = x->pd->local_dma_lkey;
	wr.wr.wr_cqe = &s->wait.cqe;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.remote_addr = k->iova + (addr & (ODSM_WIRE_MAP_LEN - 1));
	wr.rkey = k->rkey;
	if (op == ODSM_ATOMIC_FETCH_ADD) {
		wr.wr.opcode = IB_WR_ATOMIC_FETCH_AND_ADD;
		wr.compare_add = operand;
	} else {
		wr.wr.opcode = IB_WR_ATOMIC_CMP_AND_SWP;
		wr.compare_add = compare;
		wr.swap = operand;
	}
	/*
	 * A device that completed the atomic without writing its old value
	 * (as Soft-RoCE did on the data QP) would leave the poison: one
	 * chance in 2^64 that the word held it.  Its effect is unknown then,
	 * so the connection goes rather than hand on a value it never read.
	 */
	poison = get_random_u64();
	*(u64 *)s->buf = poison;
	ib_dma_sync_single_for_device(x->dev, s->dma, sizeof(u64),
				      DMA_BIDIRECTIONAL);
	ret = os_run_on(x, x->aqp.own, s, &wr.wr, 1, "atomic", 8);
	if (ret)
		return ret;
	/* the device writes the old value in host byte order */
	ib_dma_sync_single_for_cpu(x->dev, s->dma, sizeof(u64),
				   DMA_BIDIRECTIONAL);
	*old = *(u64 *)s->buf;
	if (unlikely(*old == poison)) {
		odsm_stat_inc(ODSM_STAT_atomics_unanswered);
		pr_warn_ratelimited("rdma atomic completed without its old value: connection closed\n");
		odsm_conn_kill(conn);
		ret = -EIO;
	}
	os_end(x, s);
	return ret;
}

/*
 * Must the DMA layer sync g's mapped pages between the CPU's accesses and
 * the device's (a bounce buffer, as swiotlb's; a device that is not cache
 * coherent)?  Then a peer's one-sided access would bypass them: nothing
 * syncs a registered block while the home's CPU and its peers' READs,
 * WRITEs and atomics use it in turn, so the peer would read stale bytes
 * and its writes would not reach the page.  Such a block is refused (its
 * peer asks with requests).  Soft-RoCE maps nothing (virtual DMA).
 */
static bool reg_needs_sync(struct odsm_rdma_conn *x, struct odsm_rdma_reg *g)
{
	struct scatterlist *sg;
	int i;

	if (ib_uses_virt_dma(x->dev))
		return false;
	for_each_sg(g->sg, sg, g->nents, i)
		if (dma_need_sync(x->dev->dma_device, sg_dma_address(sg)))
			return true;
	return false;
}

/*
 * Register the block at addr of our partition (checked by the caller) for
 * the peer of conn; its iova and rkey go to *r.  -EOPNOTSUPP where the
 * device cannot read it without the CPU's syncs (reg_needs_sync()).
 */
int odsm_rdma_map(struct odsm_conn *conn, u64 addr,
		  struct odsm_wire_map_reply *r)
{
	struct odsm_rdma_conn *x = rc(conn);
	unsigned long blk = addr >> ODSM_BLOCK_SHIFT;
	struct odsm_rdma_wait *w = &x->reg.wait;
	struct ib_reg_wr wr = {};
	struct odsm_rdma_reg *g;
	struct ib_qp *qp;
	u32 max_pages;
	int i, ret;

	mutex_lock(&x->reg.lock);
	/*
	 * The teardown frees the registrations, and may let the device go,
	 * under res_sem held for writing (not reg.lock): look at both only
	 * while holding it, once the connection is known not torn.
	 */
	down_read(&x->res_sem);
	if (x->torn || READ_ONCE(x->broken)) {
		up_read(&x->res_sem);
		ret = -EHOSTDOWN;
		goto out;
	}
	if (odsm_rdma_dev_atomics(x->dev))
		r->flags = ODSM_WIRE_MAP_F_ATOMIC;
	/* our responder's property, which the reader cannot know */
	if (x->os.ordered_reads)
		r->flags |= ODSM_WIRE_MAP_F_INORDER;
	max_pages = x->dev->attrs.max_fast_reg_page_list_len;
	g = xa_load(&x->reg.map, blk);
	if (g) {
		/* asked again (a race, or a lost reply): the same one */
		ret = -EHOSTDOWN;
		if (g->mr) {
			r->iova = g->mr->iova;
			r->rkey = g->mr->rkey;
			if (g->nr_sg > ODSM_BLOCK_PAGES)
				r->flags |= ODSM_WIRE_MAP_F_PUB;
			ret = 0;
		}
		up_read(&x->res_sem);
		goto out;
	}
	up_read(&x->res_sem);
	ret = -ENOSPC;
	if (x->reg.nr >= RDMA_MAX_REGS)
		goto out;
	ret = -EOPNOTSUPP;
	if (max_pages < ODSM_BLOCK_PAGES)
		goto out;
	ret = -ENOMEM;
	g = kzalloc(sizeof(*g), GFP_KERNEL);
	if (!g)
		goto out;
	g->addr = addr;
	ret = odsm_store_pin(&odsm_heap, addr, g->pages, &g->pub);
	if (ret)
		goto err_free;
	g->nr_sg = ODSM_BLOCK_PAGES;
	/* the page of published words right after the block, if it fits */
	if (g->pub && max_pages > ODSM_BLOCK_PAGES) {
		g->nr_sg++;
		r->flags |= ODSM_WIRE_MAP_F_PUB;
	}

	down_read(&x->res_sem);
	ret = -EHOSTDOWN;
	if (x->torn || READ_ONCE(x->broken))
		goto err_unpin;
	sg_init_table(g->sg, g->nr_sg);
	for (i = 0; i < ODSM_BLOCK_PAGES; i++)
		sg_set_page(&g->sg[i], g->pages[i], PAGE_SIZE, 0);
	if (g->nr_sg > ODSM_BLOCK_PAGES)
		sg_set_page(&g->sg[i], g->pub, PAGE_SIZE, 0);
	ret = -ENOMEM;
	g->nents = ib_dma_map_sg(x->dev, g->sg, g->nr_sg, DMA_BIDIRECTIONAL);
	if (!g->nents)
		goto err_unpin;
	ret = -EOPNOTSUPP;
	if (reg_needs_sync(x, g))
		goto err_unmap;
	/* on the list first: from here on the teardown cleans it up */
	ret = xa_insert(&x->reg.map, blk, g, GFP_KERNEL);
	if (ret)
		goto err_unmap;
	x->reg.nr++;
	qp = odsm_rdma_reg_qp_get(x);
	if (IS_ERR(qp)) {
		ret = PTR_ERR(qp);
		goto err_kill;
	}
	g->mr = ib_alloc_mr(x->pd, IB_MR_TYPE_MEM_REG, g->nr_sg);
	if (IS_ERR(g->mr)) {
		ret = PTR_ERR(g->mr);
		g->mr = NULL;
		goto err_kill;
	}
	ret = ib_map_mr_sg(g->mr, g->sg, g->nents, NULL, PAGE_SIZE);
	if (ret != g->nents) {
		ret = ret < 0 ? ret : -EINVAL;
		goto err_kill;
	}
	wr.wr.opcode = IB_WR_REG_MR;
	wr.wr.wr_cqe = &w->cqe;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.mr = g->mr;
	wr.key = g->mr->rkey;
	wr.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
		    IB_ACCESS_REMOTE_WRITE;
	if (r->flags & ODSM_WIRE_MAP_F_ATOMIC)
		wr.access |= IB_ACCESS_REMOTE_ATOMIC;
	r->iova = g->mr->iova;
	r->rkey = g->mr->rkey;
	reinit_completion(&w->done);
	w->status = 0;
	atomic_set(&w->pending, 1);
	if (ib_post_send(qp, &wr.wr, NULL)) {
		ret = -EHOSTDOWN;
		goto err_kill;
	}
	up_read(&x->res_sem);
	/* g belongs to the teardown now: not touched after this */
	ret = wait_wrs(x, w) ? READ_ONCE(w->status) : -ETIMEDOUT;
	if (!ret)
		odsm_stat_inc(ODSM_STAT_mr_registrations);
	goto out;

err_kill:
	/* stays on the list, half set up: the teardown frees it */
	up_read(&x->res_sem);
	pr_notice_ratelimited("rdma registration failed (%d): connection closed\n",
			      ret);
	odsm_conn_kill(conn);
	goto out;
err_unmap:
	ib_dma_unmap_sg(x->dev, g->sg, g->nr_sg, DMA_BIDIRECTIONAL);
err_unpin:
	up_read(&x->res_sem);
	odsm_store_unpin(&odsm_heap, addr, g->pages, g->pub);
err_free:
	kfree(g);
out:
	mutex_unlock(&x->reg.lock);
	return ret;
}

/*
 * A flagged atomic on the word at addr of our own partition (backed, not
 * part of a lazily filled copy: the caller checked), run by our device
 * over the loopback pair, so that it is atomic against the peers'
 * one-sided ones.  Never falls back to a CPU atomic: an error instead.
 */
int odsm_rdma_loop_atomic(u64 addr, u32 op, u64 operand, u64 compare,
			  u64 *old)
{
	u64 blk = addr & ~(u64)(ODSM_WIRE_MAP_LEN - 1);
	struct odsm_wire_map_reply r = { .gaddr = blk, .len = ODSM_WIRE_MAP_LEN };
	struct odsm_rdma_loop lp;
	int ret;

	ret = odsm_rdma_loop_get(&lp);
	if (ret)
		return ret;
	if (!xa_load(&lp.req->os.keys, blk >> ODSM_BLOCK_SHIFT)) {
		ret = odsm_rdma_map(lp.resp->conn, blk, &r);
		if (!ret)
			ret = odsm_rdma_add_key(lp.req->conn, &r);
	}
	if (!ret)
		ret = odsm_rdma_aqp_pair(lp.req, lp.resp);
	if (!ret)
		ret = odsm_rdma_atomic(lp.req->conn, addr, op, operand, compare,
				       old);
	/* the device has atomics, or there would be no pair: not refused */
	if (ret == -EOPNOTSUPP || ret == -ENOKEY)
		ret = -EIO;
	if (!ret)
		odsm_stat_inc(ODSM_STAT_loop_atomics);
	odsm_rdma_loop_put(&lp);
	return ret;
}
