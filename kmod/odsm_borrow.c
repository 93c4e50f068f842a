// SPDX-License-Identifier: GPL-2.0
/*
 * The ownership protocol's ioctls (DRust's coherence, seed paper section
 * 4.1.1 and Appendix B): shared borrows of remote objects go through the
 * node's cache (odsm_cache.c), mutable borrows move the object here and
 * free the original at its home asynchronously, and the write-back of a
 * moved object's new address reaches an owner box wherever it lives.
 *
 * Local objects need none of this (libodsm reads and writes them in place
 * without entering the kernel); the ioctls still answer for them, so that
 * a caller need not know where an object lives.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hashtable.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include "odsm.h"
#include "odsm_cache.h"
#include "odsm_core.h"
#include "odsm_fault.h"
#include "odsm_remote.h"
#include "odsm_lat.h"
#include "odsm_trace.h"
#include "odsm_window.h"

/* ---- frees of moved originals, off the borrower's path --------------- */

/*
 * The free of a moved original at its home, queued.  It names the home's
 * incarnation the object was moved from: a home that restarted meanwhile
 * hands the same colored addresses out again, and must not receive it.
 */
struct moved_free {
	struct list_head node;
	u32 home;
	u64 inc;
	u64 cg;
};

static LIST_HEAD(frees);
static DEFINE_SPINLOCK(frees_lock);

/* how often queued frees that a test holds (fault_hold_frees) look again */
#define HOLD_POLL_MS	20

static void frees_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(frees_work, frees_fn);

static void send_frees(void)
{
	struct moved_free *mf, *tmp;
	LIST_HEAD(list);
	int ret;

	spin_lock(&frees_lock);
	list_splice_init(&frees, &list);
	spin_unlock(&frees_lock);
	list_for_each_entry_safe(mf, tmp, &list, node) {
		ret = odsm_remote_free_at(mf->home, mf->inc, mf->cg);
		if (ret == -EREMCHG) {
			/* the home restarted: the original went with it */
			odsm_stat_inc(ODSM_STAT_move_frees_stale);
		} else if (ret) {
			/* the original stays allocated at its home: memory
			 * lost there, never a wrong byte here
			 */
			odsm_stat_inc(ODSM_STAT_move_free_errors);
			pr_notice_ratelimited("free of moved object 0x%llx at node %u failed: %d\n",
					      mf->cg, mf->home, ret);
		}
		list_del(&mf->node);
		kfree(mf);
	}
}

static void frees_fn(struct work_struct *work)
{
	/*
	 * A test holds them, to restart their home meanwhile: polled, as
	 * the core, where the knob is, calls no service back
	 */
	if (odsm_fault_frees_held()) {
		schedule_delayed_work(&frees_work,
				      msecs_to_jiffies(HOLD_POLL_MS));
		return;
	}
	send_frees();
}

static void free_original(u32 home, u64 inc, u64 cg)
{
	struct moved_free *mf = kmalloc(sizeof(*mf), GFP_KERNEL);

	if (!mf) {
		odsm_stat_inc(ODSM_STAT_move_free_errors);
		return;
	}
	mf->home = home;
	mf->inc = inc;
	mf->cg = cg;
	if (odsm_fault_frees_held())
		odsm_stat_inc(ODSM_STAT_fault_holds);
	spin_lock(&frees_lock);
	list_add_tail(&mf->node, &frees);
	spin_unlock(&frees_lock);
	mod_delayed_work(system_wq, &frees_work, 0);
}

/*
 * Originals a borrow kept until its write-back (ODSM_MUT_KEEP_ORIGINAL),
 * by the new object's address: the home's incarnation they were moved
 * from, which the write-back's free must name.  The incarnation up at the
 * write-back will not do: a home that restarted meanwhile hands the same
 * colored addresses out again, and would free its new object there.
 *
 * Bounded: a program that never writes back (it died) leaves its entries;
 * past KEPT_MAX the oldest goes.  A write-back that finds no entry (that
 * one, or one after a leave, which forgets them all) frees nothing: the
 * original stays allocated at its home, unreachable (move_frees_stale),
 * never a wrong free.
 */
#define KEPT_MAX	4096
#define KEPT_BITS	8

struct kept_original {
	struct hlist_node hash;
	struct list_head age;
	u64 addr;		/* the new object's, uncolored */
	u64 orig;		/* the original's, uncolored */
	u64 inc;		/* its home's incarnation at the move */
};

static DEFINE_HASHTABLE(kept, KEPT_BITS);
static LIST_HEAD(kept_age);		/* oldest first */
static unsigned int nr_kept;
static DEFINE_SPINLOCK(kept_lock);

static void kept_del_locked(struct kept_original *k)
{
	hash_del(&k->hash);
	list_del(&k->age);
	nr_kept--;
}

static struct kept_original *kept_find_locked(u64 addr)
{
	struct kept_original *k;

	hash_for_each_possible(kept, k, hash, addr)
		if (k->addr == addr)
			return k;
	return NULL;
}

/* A borrow kept the original cg of new_cg, moved from incarnation inc. */
static void kept_note(u64 new_cg, u64 cg, u64 inc)
{
	struct kept_original *k = kmalloc(sizeof(*k), GFP_KERNEL_ACCOUNT);
	struct kept_original *old, *gone = NULL;

	if (!k)
		return;		/* its write-back frees nothing */
	k->addr = odsm_clear_color(new_cg);
	k->orig = odsm_clear_color(cg);
	k->inc = inc;
	spin_lock(&kept_lock);
	old = kept_find_locked(k->addr);
	if (old) {		/* that object is gone: its entry too */
		kept_del_locked(old);
		gone = old;
	} else if (nr_kept >= KEPT_MAX) {
		gone = list_first_entry(&kept_age, struct kept_original, age);
		kept_del_locked(gone);
	}
	hash_add(kept, &k->hash, k->addr);
	list_add_tail(&k->age, &kept_age);
	nr_kept++;
	spin_unlock(&kept_lock);
	kfree(gone);
}

/*
 * The write-back of new_cg into a box that named cg (at home): the free
 * of the original its borrow kept, queued for the incarnation it was
 * moved from.  One the node does not know of gets no free at all.
 */
static void free_kept_original(u32 home, u64 new_cg, u64 cg)
{
	struct kept_original *k;
	u64 inc = 0;

	spin_lock(&kept_lock);
	k = kept_find_locked(odsm_clear_color(new_cg));
	if (k) {
		kept_del_locked(k);
		if (k->orig == odsm_clear_color(cg))
			inc = k->inc;
	}
	spin_unlock(&kept_lock);
	kfree(k);
	if (!inc) {
		odsm_stat_inc(ODSM_STAT_move_frees_stale);
		return;
	}
	free_original(home, inc, cg);
}

static void kept_forget(void)
{
	struct kept_original *k, *tmp;
	LIST_HEAD(list);

	spin_lock(&kept_lock);
	list_for_each_entry_safe(k, tmp, &kept_age, age) {
		kept_del_locked(k);
		list_add(&k->age, &list);
	}
	spin_unlock(&kept_lock);
	list_for_each_entry_safe(k, tmp, &list, age)
		kfree(k);
}

/*
 * Send the frees queued so far (leave, unload, tests' quiescence), also
 * those a test holds: nothing may stay queued once the cluster is gone.
 * The kept originals are forgotten: after a re-join the node cannot tell
 * a home's incarnation from its last life.
 */
void odsm_borrow_flush(void)
{
	cancel_delayed_work_sync(&frees_work);
	send_frees();
	kept_forget();
}

/* ---- where an object lives --------------------------------------------- */

/*
 * The home of the object at colored address cg: this node (*local), or a
 * peer of the joined cluster.  -EINVAL for an address outside the heap or
 * not 16-byte aligned (no object starts there), or a remote one with no
 * cluster to reach it.
 */
static int home_of_object(u64 cg, bool *local)
{
	u64 addr = odsm_clear_color(cg);

	if (addr % ODSM_MIN_ALIGN)
		return -EINVAL;
	return odsm_home_of(addr, 1, local);
}

/*
 * A borrow of a local object: where it is and its size.  -ESTALE for an
 * object that is gone, -EINVAL where none starts.
 */
static int local_object(u64 cg, u64 *addr, u64 *size)
{
	struct odsm_objinfo oi;
	int ret = odsm_heap_object(&odsm_heap, cg, &oi);

	if (ret)
		return ret;
	*addr = oi.addr;
	*size = oi.size;
	return 0;
}

/* ---- the ioctls ---------------------------------------------------------- */

long odsm_ioc_borrow(struct odsm_fref *f, void __user *arg)
{
	struct odsm_borrow b;
	bool local;
	int node, ret;

	if (copy_from_user(&b, arg, sizeof(b)))
		return -EFAULT;
	if (b.flags || !odsm_reserved_zero(b.reserved, ARRAY_SIZE(b.reserved)))
		return -EINVAL;
	node = home_of_object(b.gaddr, &local);
	if (node < 0)
		return node;
	if (local) {
		ret = local_object(b.gaddr, &b.addr, &b.size);
		if (ret)
			return ret;
		b.result = ODSM_BORROWED_LOCAL;
		return copy_to_user(arg, &b, sizeof(b)) ? -EFAULT : 0;
	}
	ret = odsm_cache_borrow(f, node, b.gaddr, &b.addr, &b.size, &b.result);
	if (ret)
		return ret;
	if (copy_to_user(arg, &b, sizeof(b))) {
		/* the caller cannot know it holds the reference */
		odsm_cache_return(f, b.gaddr, b.addr);
		return -EFAULT;
	}
	return 0;
}

/*
 * The FETCH_MANYs of one prefetch out at once: those of different homes
 * (and of one home, past ODSM_WIRE_FETCH_MANY_MAX objects) go together,
 * so a prefetch over several homes takes one round trip, not one each.
 */
#define PREFETCH_WINDOW	8

/*
 * The next batch of the prefetch: from *i on, the objects of the first
 * home left (up to ODSM_WIRE_FETCH_MANY_MAX), taken out of home[]; its
 * size (0: none left), its home in *node.
 */
static u32 next_batch(const u64 *g, int *home, u32 n, u32 *i, u64 *batch,
		      u32 *node)
{
	u32 j, k = 0;

	while (*i < n && home[*i] < 0)
		(*i)++;
	if (*i == n)
		return 0;
	*node = home[*i];
	for (j = *i; j < n && k < ODSM_WIRE_FETCH_MANY_MAX; j++) {
		if (home[j] != *node)
			continue;
		batch[k++] = g[j];
		home[j] = -1;
	}
	return k;
}

/* odsm_ioc_prefetch() in progress: its objects and its FETCH_MANYs out. */
struct prefetch {
	const u64 *g;
	int *home;		/* -1: nothing to fetch, or taken */
	u32 n, i;
	u32 fetched;
	struct odsm_prefetch_call *pcs;
};

/*
 * Start the FETCH_MANY of the next batch in slot: 1, or 0 when none is
 * left (or a fatal signal stops the sending).  A batch that cannot start
 * (its home down, no memory) leaves its objects to their borrows.
 */
static int prefetch_start(void *ctx, unsigned int slot, unsigned int out)
{
	struct prefetch *p = ctx;
	u64 batch[ODSM_WIRE_FETCH_MANY_MAX];
	u32 k, node;

	while (!odsm_abandoned()) {
		k = next_batch(p->g, p->home, p->n, &p->i, batch, &node);
		if (!k)
			break;
		if (odsm_cache_prefetch_start(&p->pcs[slot], node, batch,
					      k) <= 0)
			continue;
		if (out)
			odsm_stat_inc(ODSM_STAT_prefetch_overlapped);
		return 1;
	}
	return 0;
}

/* Finish the FETCH_MANY in slot; what fails is left to the borrows. */
static int prefetch_finish(void *ctx, unsigned int slot, bool failed)
{
	struct prefetch *p = ctx;
	int ret = odsm_cache_prefetch_finish(&p->pcs[slot]);

	if (ret > 0)
		p->fetched += ret;
	return 0;
}

static const struct odsm_window_ops prefetch_ops = {
	.start = prefetch_start, .finish = prefetch_finish,
};

long odsm_ioc_prefetch(void __user *arg)
{
	struct prefetch p = { 0 };
	struct odsm_prefetch pf;
	u64 *g;
	bool local;
	u32 i;
	int ret;

	if (copy_from_user(&pf, arg, sizeof(pf)))
		return -EFAULT;
	if (pf.flags || pf.reserved0 || !pf.n || pf.n > ODSM_PREFETCH_MAX ||
	    !odsm_reserved_zero(pf.reserved, ARRAY_SIZE(pf.reserved)))
		return -EINVAL;
	g = kvmalloc_array(pf.n, sizeof(*g), ODSM_GFP_REQ);
	p.home = kvmalloc_array(pf.n, sizeof(*p.home), ODSM_GFP_REQ);
	p.pcs = kvcalloc(PREFETCH_WINDOW, sizeof(*p.pcs), GFP_KERNEL);
	ret = -ENOMEM;
	if (!g || !p.home || !p.pcs)
		goto out;
	ret = -EFAULT;
	if (copy_from_user(g, u64_to_user_ptr(pf.gaddrs), pf.n * sizeof(*g)))
		goto out;
	/* -1: nothing to fetch (ours, or no object's address) */
	for (i = 0; i < pf.n; i++) {
		p.home[i] = home_of_object(g[i], &local);
		if (p.home[i] >= 0 && local)
			p.home[i] = -1;
	}
	/*
	 * One FETCH_MANY per home and ODSM_WIRE_FETCH_MANY_MAX objects, up
	 * to PREFETCH_WINDOW out, finished in the order started; a fatal
	 * signal stops the sending, not the finishing.
	 */
	p.g = g;
	p.n = pf.n;
	odsm_window_run(&prefetch_ops, &p, PREFETCH_WINDOW);
	pf.fetched = p.fetched;
	ret = copy_to_user(arg, &pf, sizeof(pf)) ? -EFAULT : 0;
out:
	kvfree(p.pcs);
	kvfree(p.home);
	kvfree(g);
	return ret;
}

long odsm_ioc_return(struct odsm_fref *f, void __user *arg)
{
	struct odsm_borrow b;
	bool local;
	int node;

	if (copy_from_user(&b, arg, sizeof(b)))
		return -EFAULT;
	if (b.flags || !odsm_reserved_zero(b.reserved, ARRAY_SIZE(b.reserved)))
		return -EINVAL;
	node = home_of_object(b.gaddr, &local);
	if (node < 0)
		return node;
	if (local)
		return 0;
	return odsm_cache_return(f, b.gaddr, b.addr);
}

/*
 * Copy the object at cg from its home into a new object here, whole (a
 * move must not leave the original's bytes behind: its home frees it).
 * An object the home has handed copies of is read one-sided where a miss
 * could be (odsm_cache_read_whole()): its copied mark keeps write-backs
 * into its boxes out until the free, as the mark a move's FETCH sets
 * does, so its bytes are the object's until then either way.  Any
 * other is FETCHed, and a run's first FETCH sets that mark: the rest of
 * a run is read one-sided after it where it can be
 * (odsm_cache_move_rest()).
 */
static int move_here(u32 node, u64 cg, u64 *new_cg, u64 *size, u64 *inc)
{
	bool onesided = false;
	u64 usable, dst;
	void *buf;
	u32 got;
	int ret;

	/* one incarnation of the home answers every FETCH of the move */
	*inc = odsm_peer_incarnation(node, true);
	if (!*inc)
		return -EHOSTDOWN;
	buf = odsm_first_alloc();
	if (!buf)
		return -ENOMEM;
	ret = odsm_cache_read_whole(node, cg, &buf, size);
	if (!ret) {
		/* read from that incarnation, like the bytes of a FETCH */
		if (odsm_peer_incarnation(node, false) != *inc) {
			ret = -EREMCHG;
			goto out;
		}
		onesided = true;
		got = *size;
	} else if (ret == -EOPNOTSUPP) {
		ret = odsm_first_grow(&buf);
		if (!ret)
			ret = odsm_fetch_at(node, *inc, cg, 0, buf,
					    ODSM_FIRST_FETCH, ODSM_FIRST_WHOLE,
					    size, &got);
	}
	if (ret)
		goto out;
	ret = odsm_heap_alloc(&odsm_heap, *size, 0, 0, new_cg, &usable);
	if (ret == -ENOMEM && odsm_cache_make_room(*size, false))
		ret = odsm_heap_alloc(&odsm_heap, *size, 0, 0, new_cg, &usable);
	if (ret == -ENOMEM && odsm_cache_make_room(*size, true))
		ret = odsm_heap_alloc(&odsm_heap, *size, 0, 0, new_cg, &usable);
	if (ret)
		goto out;
	dst = odsm_clear_color(*new_cg);
	ret = odsm_store_rw(&odsm_heap, dst, buf + ODSM_WIRE_FETCH_REPLY_SIZE,
			    got, true);
	if (!ret && !onesided)
		ret = odsm_cache_move_rest(node, *inc, cg, buf, got, *size,
					   dst);
	if (ret)	/* nothing moved: the original stays the object */
		odsm_heap_free(&odsm_heap, *new_cg);
	else if (onesided)
		odsm_stat_inc(ODSM_STAT_move_onesided);
out:
	kvfree(buf);
	return ret;
}

long odsm_ioc_borrow_mut(struct odsm_fref *f, void __user *arg)
{
	struct odsm_borrow_mut m;
	bool local;
	int node, ret;
	u64 addr, inc;

	if (copy_from_user(&m, arg, sizeof(m)))
		return -EFAULT;
	if ((m.flags & ~ODSM_MUT_FLAGS) ||
	    (m.addr && !(m.flags & ODSM_MUT_HELD_REF)) ||
	    !odsm_reserved_zero(m.reserved, ARRAY_SIZE(m.reserved)))
		return -EINVAL;
	node = home_of_object(m.gaddr, &local);
	if (node < 0)
		return node;
	if (local) {
		ret = local_object(m.gaddr, &addr, &m.size);
		if (ret)
			return ret;
		m.new_gaddr = m.gaddr;
		m.result = ODSM_BORROWED_LOCAL;
		return copy_to_user(arg, &m, sizeof(m)) ? -EFAULT : 0;
	}

	ret = odsm_cache_take(f, m.gaddr, m.flags & ODSM_MUT_HELD_REF, m.addr,
			      &m.new_gaddr, &m.size, &inc);
	if (!ret) {
		m.result = ODSM_BORROWED_TAKEN;
		odsm_stat_inc(ODSM_STAT_mut_taken);
	} else if (ret == -ENOENT) {
		u64 start = ktime_get_ns();

		ret = move_here(node, m.gaddr, &m.new_gaddr, &m.size, &inc);
		if (ret == -EREMCHG)	/* the home restarted: nothing moved */
			ret = move_here(node, m.gaddr, &m.new_gaddr, &m.size,
					&inc);
		if (ret) {
			trace_odsm_move(node, m.gaddr, 0, 0, ret,
					ktime_get_ns() - start);
			return ret;
		}
		m.result = ODSM_BORROWED_MOVED;
		odsm_stat_inc(ODSM_STAT_mut_moves);
		trace_odsm_move(node, m.gaddr, m.new_gaddr, m.size, 0,
				odsm_lat_record(ODSM_LAT_move, start));
	} else {
		return ret;
	}
	/*
	 * The object is here now.  With KEEP_ORIGINAL the caller's owner box
	 * lives in the heap and still names the original: the write-back
	 * that names the new address frees it (ioc_owner), so a node that
	 * dies before that leaves the original as the object.  Otherwise
	 * its original goes at its home, at the
	 * color the owner holds (its latest), so the home raises the
	 * address's floor above every color a copy of it may carry.  Even
	 * if the caller cannot learn the new address below, the original is
	 * freed: as with a move on color overflow, a caller that faults on
	 * its own argument loses the object.
	 */
	if (!(m.flags & ODSM_MUT_KEEP_ORIGINAL))
		free_original(node, inc, m.gaddr);
	else
		kept_note(m.new_gaddr, m.gaddr, inc);
	return copy_to_user(arg, &m, sizeof(m)) ? -EFAULT : 0;
}

/* ---- owner boxes inside objects ------------------------------------------ */

/*
 * Read or write the owner box at the global address owner, at its home,
 * under the rule of uapi/linux/odsm.h ("Owner boxes inside objects"): the
 * home refuses (-EBUSY) a box in an object it has handed copies of.  Never
 * one-sided: the check and the access must be one step at the home.
 */
static int owner_rw(u64 owner, u64 *box, enum odsm_owner_op op)
{
	bool local;
	int node;

	if (owner % ODSM_BOX_SIZE)
		return -EINVAL;
	node = odsm_home_of(owner, ODSM_BOX_SIZE, &local);
	if (node < 0)
		return node;
	if (local)
		return odsm_owner_rw_local(owner, box, op);
	return odsm_remote_owner_rw(node, owner, box, op);
}

static long ioc_owner(void __user *arg, bool write)
{
	struct odsm_write_back w;
	u64 box[2], old[2];
	int node, ret;
	bool local;

	if (copy_from_user(&w, arg, sizeof(w)))
		return -EFAULT;
	if (w.reserved0 || w.reserved || (w.flags & ~ODSM_WB_FLAGS) ||
	    (!write && w.flags))
		return -EINVAL;
	if (w.flags & ODSM_WB_FREE_OLD) {
		/* what the box names now: the original a borrow kept.  The
		 * borrow is mutable, so nobody else writes the box meanwhile.
		 */
		ret = owner_rw(w.owner, old, ODSM_OWNER_READ);
		if (ret)
			return ret;
	}
	box[0] = w.g;
	box[1] = w.ext;
	ret = owner_rw(w.owner, box, !write ? ODSM_OWNER_READ :
		       w.flags & ODSM_WB_IF_EMPTY ? ODSM_OWNER_FILL :
		       ODSM_OWNER_WRITE);
	if (write)
		trace_odsm_writeback(w.owner, w.g, ret);
	if (ret)
		return ret;
	if (write) {
		odsm_stat_inc(ODSM_STAT_writebacks);
		/*
		 * The box names the new instance: only now may the original
		 * go.  Only a remote one: a local object did not move (a
		 * local move frees its source itself).  A write-back tried
		 * again after a lost reply reads the new address here and
		 * frees nothing: the original then stays allocated at its
		 * home, unreachable (memory lost, no object).
		 */
		if (!(w.flags & ODSM_WB_FREE_OLD) || !old[0] ||
		    odsm_clear_color(old[0]) == odsm_clear_color(w.g))
			return 0;
		node = home_of_object(old[0], &local);
		if (node >= 0 && !local)
			free_kept_original(node, w.g, old[0]);
		return 0;
	}
	w.g = box[0];
	w.ext = box[1];
	return copy_to_user(arg, &w, sizeof(w)) ? -EFAULT : 0;
}

long odsm_ioc_write_back(void __user *arg)
{
	return ioc_owner(arg, true);
}

long odsm_ioc_read_owner(void __user *arg)
{
	return ioc_owner(arg, false);
}
