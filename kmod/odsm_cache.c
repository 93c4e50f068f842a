// SPDX-License-Identifier: GPL-2.0
/*
 * The node's cache of copies of remote objects (see odsm_cache.h).
 *
 * A copy lives in a slot of this node's partition, allocated like any
 * object, so every process of the node that maps the heap reads the same
 * bytes, and what a copy costs shows in the partition's gauges.  An entry
 * (struct odsm_centry) names the copy; it is
 *
 *   indexed  in cache.ci by the remote object's colored address, and in
 *            cache.ids by a small id, which is what an open file records
 *            for each reference it holds (struct odsm_fref);
 *   idle     when no file references it: on the index's LRU, a victim for
 *            the budget and the shrinker;
 *   orphan   when its home restarted or the cluster was left while it was
 *            referenced: out of the index (never found again), on the
 *            orphan hash (so that its holders' RETURN finds it in O(1)),
 *            freed when its last reference goes;
 *   dead     once it left the cache: its slot is freed by the reaper.
 *
 * A copy is of one incarnation of its home (@inc, the one its FETCH
 * reached): it is served only while the home is up as that incarnation.
 * A home that went down may come back as a new one, whose allocator
 * starts over and hands the same colored addresses out again, and a
 * third node may pass on such an address before this node has
 * authenticated the new incarnation (when it forgets the old one's
 * copies): until the home is up again as the copy's incarnation, a
 * borrow misses, and the FETCH says what the home holds now.
 *
 * Slots.  cache.slots holds every slot of the partition that is the
 * cache's, from its allocation (before the copy is filled or indexed)
 * until the reaper freed it: a program's FREE and MOVE, and a peer's
 * FREE, WRITE and ATOMIC, are refused there.  Their check and their heap
 * operation run under cache.slot_sem held for reading
 * (odsm_cache_slots_hold()); a slot is allocated and registered under it
 * held for writing, so no slot appears between such a check and its
 * operation.  (Unregistering needs no exclusion: the reaper frees the slot
 * first.)  A peer's MAP of a block is checked the same way, since a
 * registered block takes one-sided WRITEs and atomics that no check sees
 * (map_for() in odsm_onesided.c).  Lock order: slot_sem -> heap->lock,
 * and slot_sem -> the RDMA transport's reg_lock.
 *
 * Locking: cache.lock (a mutex) serializes the index, the id and lazy maps,
 * every file's reference map and every entry's state.  It is never held
 * across a network call or a heap operation: slots are allocated and
 * filled before an entry is inserted, and freed by the reaper after it left
 * the cache.  Under it the core's spinlock is taken (the home's
 * incarnation); otherwise it nests with nothing, except that the shrinker,
 * which may run inside any allocation, only ever try-locks it.  Loops over
 * every copy or reference under it reschedule now and then.  An entry's kref
 * keeps its memory alive for lazy faults in flight; its slot is freed only
 * by the reaper, after @dead is set, and a lazy fill inserts pages under
 * heap->lock only while @dead is clear, so no fetched page lands in a slot
 * that was freed (the free takes heap->lock after @dead was set).
 */
#include <linux/hash.h>
#include <linux/kref.h>
#include <linux/mm.h>
#include <linux/rwsem.h>
#include <linux/shrinker.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include "odsm.h"
#include "odsm_cache.h"
#include "odsm_cindex.h"
#include "odsm_core.h"
#include "odsm_compat.h"
#include "odsm_fault.h"
#include "odsm_hits.h"
#include "odsm_lat.h"
#include "odsm_trace.h"

u64 odsm_cache_budget = 64ULL << 20;
u64 odsm_lazy_threshold = 1ULL << 20;
u32 odsm_readahead_pages = 16;

/* most bytes of each object a prefetch asks for: smaller ones come whole */
#define PREFETCH_LEN	2048U

struct odsm_fref {
	struct xarray refs;		/* entry id -> xa_mk_value(count) */
};

struct odsm_centry {
	struct odsm_cnode cn;		/* key: the remote colored address */
	struct kref kref;		/* the cache's, and lazy faults' */
	u32 id;				/* in cache.ids */
	u32 node;			/* the object's home */
	u64 inc;			/* ... the incarnation it was fetched from */
	u64 local_cg;			/* the copy: a slot of this partition */
	u64 size;			/* the object's bytes */
	u16 color;			/* its allocation color ... */
	bool color_known;		/* ... if a FETCH said it */
	bool lazy;			/* filled page by page on first touch */
	bool orphan;			/* out of the index, still referenced */
	bool dead;			/* left the cache: the slot goes */
	struct list_head doomed;	/* on cache.doomed */
	struct rcu_head rcu;		/* lazy_fill_only() reads it under RCU */
	struct hlist_node onode;	/* on cache.orphans, while orphan */
};

#define ORPHAN_BITS	8
#define RESCHED_EVERY	64		/* loop steps between cond_resched() */

static struct {
	struct mutex lock;		/* see the top of the file */
	struct odsm_cindex ci;
	struct xarray ids;		/* id -> entry */
	struct xarray lazy;		/* local block index -> lazy entry */
	struct xarray lazy_err;		/* page index -> failed fetch's errno */
	struct xarray slots;		/* slot_index() -> entry: the slots
					 * that are copies, not objects
					 */
	struct rw_semaphore slot_sem;	/* see the top of the file */
	struct hlist_head orphans[1 << ORPHAN_BITS];	/* by key */
	struct list_head doomed;	/* left the cache, slot not freed yet */
	atomic64_t nr_slots;		/* slots allocated for copies and not
					 * freed yet (indexed, orphans, doomed)
					 */
	struct work_struct reaper;
	atomic_t kept_asked;		/* the heap's kept blocks are to be
					 * given back (kept_give_back());
					 * until then freed slots keep none
					 */
#ifdef ODSM_HAVE_SHRINKER_ALLOC
	struct shrinker *shrinker;
#else
	struct shrinker shrinker_s;
#endif
} cache;

static inline u64 slot_addr(const struct odsm_centry *e)
{
	return odsm_clear_color(e->local_cg);
}

static inline unsigned long block_of(u64 addr)
{
	const struct odsm_geom *g = &odsm_heap.geom;

	return (addr - odsm_part_start(g, g->node_id)) >> ODSM_BLOCK_SHIFT;
}

/* 16-byte granules of the partition: every object starts on one */
static inline unsigned long slot_index(u64 addr)
{
	const struct odsm_geom *g = &odsm_heap.geom;

	return (addr - odsm_part_start(g, g->node_id)) >> 4;
}

/* Page index, in the partition, of the page holding addr. */
static inline unsigned long page_of(u64 addr)
{
	const struct odsm_geom *g = &odsm_heap.geom;

	return (addr - odsm_part_start(g, g->node_id)) >> PAGE_SHIFT;
}

/* Forget the records of [addr, addr + len).  Under cache.lock. */
static void lazy_err_clear_locked(u64 addr, u64 len)
{
	unsigned long idx;
	void *v;

	lockdep_assert_held(&cache.lock);
	xa_for_each_range(&cache.lazy_err, idx, v, page_of(addr),
			  page_of(addr + len - 1)) {
		xa_erase(&cache.lazy_err, idx);
		cond_resched();
	}
}

/*
 * Is the local object at addr a cached copy?  The device refuses to free
 * or move one on a caller's behalf: the cache would go on serving a slot
 * that holds another object.
 */
/* Does the 64 KiB block at addr hold (part of) a lazily filled copy? */
bool odsm_cache_lazy_block(u64 addr)
{
	return !!xa_load(&cache.lazy, block_of(addr));
}

bool odsm_cache_lazy_range(u64 addr, u64 len)
{
	unsigned long b = block_of(addr);

	return len && xa_find(&cache.lazy, &b, block_of(addr + len - 1),
			      XA_PRESENT);
}

/*
 * The store's fill_only hook (see store_fill_only()): is addr inside the
 * object's bytes of a lazily filled copy?  The slot's tail past the object
 * is ordinary zero pages.  Under heap->lock, so only RCU here: an entry is
 * freed after a grace period (entry_free()).
 */
static bool lazy_fill_only(u64 addr)
{
	struct odsm_centry *e;
	bool ret;

	rcu_read_lock();
	e = xa_load(&cache.lazy, block_of(addr));
	ret = e && addr - odsm_clear_color(e->local_cg) < e->size;
	rcu_read_unlock();
	return ret;
}

bool odsm_cache_is_slot(u64 addr)
{
	return !!xa_load(&cache.slots, slot_index(addr));
}

void odsm_cache_slots_hold(void)
{
	down_read(&cache.slot_sem);
}

void odsm_cache_slots_release(void)
{
	up_read(&cache.slot_sem);
}

bool odsm_cache_overlaps(u64 addr, u64 len)
{
	struct odsm_objinfo oi;
	unsigned long idx;

	if (!len)
		return false;
	/* the object holding addr, and any object starting inside the range */
	if (!odsm_heap_containing(&odsm_heap, addr, &oi) &&
	    odsm_cache_is_slot(oi.addr))
		return true;
	idx = slot_index(addr);
	return !!xa_find(&cache.slots, &idx, slot_index(addr + len - 1),
			 XA_PRESENT);
}

/*
 * A slot of size bytes for e's copy, allocated and registered in one step
 * against the checks of odsm_cache_slots_hold().
 */
static int slot_new(struct odsm_centry *e, u64 size, u64 *usable)
{
	int ret;

	down_write(&cache.slot_sem);
	ret = odsm_heap_alloc(&odsm_heap, size, 0, 0, &e->local_cg, usable);
	if (!ret) {
		ret = xa_err(xa_store(&cache.slots, slot_index(slot_addr(e)),
				      e, GFP_KERNEL));
		if (ret)
			odsm_heap_free(&odsm_heap, e->local_cg);
	}
	up_write(&cache.slot_sem);
	return ret;
}

/*
 * Free e's slot (its block's pages kept for the next copies, unless
 * memory is short), then let programs at its address again.
 */
static void slot_put(struct odsm_centry *e)
{
	if (atomic_read(&cache.kept_asked))
		odsm_heap_free(&odsm_heap, e->local_cg);
	else
		odsm_heap_free_kept(&odsm_heap, e->local_cg);
	xa_erase(&cache.slots, slot_index(slot_addr(e)));
}

/*
 * Is e of the incarnation of its home that is up now?  Under cache.lock.
 * A copy of another one (the home restarted, and this node has not yet
 * forgotten that: the handshake with the new incarnation is still to come
 * or under way) leaves the index at once.
 */
static bool current_locked(struct odsm_centry *e)
{
	u64 inc = odsm_peer_incarnation(e->node, true);

	if (inc == e->inc)
		return true;
	if (inc || odsm_peer_incarnation(e->node, false) != e->inc)
		odsm_stat_inc(ODSM_STAT_cache_stale_refused);
	return false;
}

/*
 * The owner box at addr of this partition, read or written by address
 * (odsm_heap_owner_rw()), unless it lies in a copy: a copy's bytes are the
 * cache's, never an object whose boxes a program or a peer may change.
 */
int odsm_owner_rw_local(u64 addr, void *box, enum odsm_owner_op op)
{
	struct odsm_objinfo oi;
	int ret;

	/* no slot appears between the check and the access */
	odsm_cache_slots_hold();
	if (!odsm_heap_containing(&odsm_heap, addr, &oi) &&
	    odsm_cache_is_slot(oi.addr))
		ret = -EINVAL;
	else
		ret = odsm_heap_owner_rw(&odsm_heap, addr, box, op);
	odsm_cache_slots_release();
	return ret;
}

static void entry_free(struct kref *kref)
{
	kfree_rcu(container_of(kref, struct odsm_centry, kref), rcu);
}

/*
 * Is the home that answered still the instance e was copied from?  A home
 * that restarted hands its addresses out again from color 0, so a new
 * object at the same address and of the same size would pass every other
 * check; its incarnation changes before any of its replies is delivered
 * (odsm_peer_incarnation()), and the cache orphans e when it learns of it.
 */
static bool home_same(const struct odsm_centry *e)
{
	return !READ_ONCE(e->orphan) &&
	       odsm_peer_incarnation(e->node, false) == e->inc;
}

/* ---- entries leaving the cache ---------------------------------------- */

/* e's blocks are no longer lazy.  Under cache.lock. */
static void lazy_unregister_locked(struct odsm_centry *e)
{
	unsigned long b, nb = DIV_ROUND_UP(e->size, ODSM_BLOCK_SIZE);

	lockdep_assert_held(&cache.lock);
	for (b = block_of(slot_addr(e)); nb--; b++) {
		xa_erase(&cache.lazy, b);
		cond_resched();		/* up to a partition of blocks */
	}
	lazy_err_clear_locked(slot_addr(e), e->size);
}

/*
 * Make e's blocks lazy before anything is discarded from its slot: from
 * then on the store inserts no zero page there (lazy_fill_only()), and
 * lazy faults fetch for e, indexed or not yet.
 */
static int lazy_register(struct odsm_centry *e)
{
	unsigned long b, nb = DIV_ROUND_UP(e->size, ODSM_BLOCK_SIZE);
	int ret = 0;

	mutex_lock(&cache.lock);
	for (b = block_of(slot_addr(e)); nb-- && !ret; b++) {
		ret = xa_err(xa_store(&cache.lazy, b, e, GFP_KERNEL));
		cond_resched();		/* up to a partition of blocks */
	}
	if (ret)
		lazy_unregister_locked(e);
	mutex_unlock(&cache.lock);
	return ret;
}

/*
 * A copy that never made it into the cache gives its slot back: no lazy
 * fill may land in it any more (@dead), then it is freed.
 */
static void copy_drop(struct odsm_centry *e)
{
	mutex_lock(&cache.lock);
	if (e->lazy)
		lazy_unregister_locked(e);
	WRITE_ONCE(e->dead, true);
	mutex_unlock(&cache.lock);
	slot_put(e);
}

/* Take e out of the cache; the reaper frees its slot.  Under cache.lock. */
static void evict_locked(struct odsm_centry *e)
{
	lockdep_assert_held(&cache.lock);
	if (!e->orphan)
		odsm_cindex_remove(&cache.ci, &e->cn);
	else
		hlist_del(&e->onode);
	xa_erase(&cache.ids, e->id);
	/* the slot stays registered until the reaper freed it */
	if (e->lazy)
		lazy_unregister_locked(e);
	WRITE_ONCE(e->dead, true);
	list_add_tail(&e->doomed, &cache.doomed);
	odsm_stat_inc(ODSM_STAT_cache_evictions);
	trace_odsm_evict(e->node, e->cn.key, e->size);
}

/* Free the slots of the entries that left the cache.  No lock held. */
static void reap(void)
{
	struct odsm_centry *e, *tmp;
	LIST_HEAD(list);

	mutex_lock(&cache.lock);
	list_splice_init(&cache.doomed, &list);
	mutex_unlock(&cache.lock);
	list_for_each_entry_safe(e, tmp, &list, doomed) {
		list_del(&e->doomed);
		slot_put(e);
		atomic64_dec(&cache.nr_slots);
		kref_put(&e->kref, entry_free);
		cond_resched();
	}
}

/*
 * The kept blocks' pages given back (odsm_heap_drop_kept()), if asked
 * (kept_asked), counted: after the slots evicted before were freed.
 */
static void kept_give_back(void)
{
	u32 n;

	if (!atomic_read(&cache.kept_asked))
		return;
	n = odsm_heap_drop_kept(&odsm_heap);
	atomic_set(&cache.kept_asked, 0);
	odsm_stat_add(ODSM_STAT_kept_dropped, n);
}

static void reaper_fn(struct work_struct *work)
{
	reap();
	kept_give_back();
}

/* Evict idle entries, oldest first, while over budget.  Under the lock. */
static void trim_locked(u64 budget)
{
	struct odsm_cnode *v;
	unsigned int n = 0;

	while (cache.ci.bytes > budget && (v = odsm_cindex_victim(&cache.ci))) {
		evict_locked(container_of(v, struct odsm_centry, cn));
		if (!(++n % RESCHED_EVERY))
			cond_resched();
	}
	/* what is left is referenced, perhaps only by processes' tables of
	 * hits: they give back what they keep idle at their next call
	 */
	if (cache.ci.bytes > budget)
		odsm_hits_want();
}

static void odsm_cache_trim_to(u64 budget)
{
	mutex_lock(&cache.lock);
	trim_locked(budget);
	mutex_unlock(&cache.lock);
	reap();
}

/*
 * Room for an allocation of size bytes that failed: idle copies go, the
 * least recently used first, twice size of them (the allocator rounds
 * up, and what they free may not be one piece); with all, every idle
 * copy.  Nothing goes when all the idle copies together are less than
 * size: emptying the node's cache for every process (which any borrower,
 * a read-only one too, could do by asking for something big) would not
 * make the room.  true: some went, try again.
 */
bool odsm_cache_make_room(u64 size, bool all)
{
	bool tried = false;

	mutex_lock(&cache.lock);
	if (cache.ci.idle_bytes && cache.ci.idle_bytes >= size) {
		trim_locked(all || cache.ci.bytes <= 2 * size ? 0 :
			    cache.ci.bytes - 2 * size);
		tried = true;
	}
	mutex_unlock(&cache.lock);
	if (tried)
		reap();
	return tried;
}

void odsm_cache_trim(void)
{
	odsm_cache_trim_to(READ_ONCE(odsm_cache_budget));
}

/* Drop one reference on e.  Under the lock. */
static void entry_put_locked(struct odsm_centry *e)
{
	if (e->orphan) {
		if (!--e->cn.refs)
			evict_locked(e);
		return;
	}
	/* a lazy copy may be incomplete, and completing it would cost the
	 * very transfer that laziness saves: it is kept only while borrowed
	 */
	if (odsm_cindex_put(&cache.ci, &e->cn) && e->lazy)
		evict_locked(e);
}

static struct hlist_head *orphan_head(u64 key)
{
	return &cache.orphans[hash_64(key, ORPHAN_BITS)];
}

/* e's home is another incarnation now: e leaves the index.  Under the lock. */
static void orphan_locked(struct odsm_centry *e)
{
	if (!e->cn.refs) {
		evict_locked(e);
		return;
	}
	odsm_cindex_remove(&cache.ci, &e->cn);
	e->orphan = true;
	hlist_add_head(&e->onode, orphan_head(e->cn.key));
}

void odsm_cache_forget(u32 node)
{
	struct odsm_centry *e;
	unsigned long id;
	unsigned int n = 0;

	mutex_lock(&cache.lock);
	xa_for_each(&cache.ids, id, e) {
		if (!(++n % RESCHED_EVERY))
			cond_resched();
		if (e->orphan || (node != U32_MAX && e->node != node))
			continue;
		orphan_locked(e);
	}
	/* the processes' tables of hits stop serving what they recorded */
	odsm_hits_forgot();
	mutex_unlock(&cache.lock);
	schedule_work(&cache.reaper);
}

/* ---- files' references -------------------------------------------------- */

struct odsm_fref *odsm_fref_new(void)
{
	struct odsm_fref *f = kzalloc(sizeof(*f), GFP_KERNEL);

	if (f)
		xa_init(&f->refs);
	return f;
}

static int fref_add_locked(struct odsm_fref *f, u32 id)
{
	void *v = xa_load(&f->refs, id);

	return xa_err(xa_store(&f->refs, id,
			       xa_mk_value(v ? xa_to_value(v) + 1 : 1),
			       GFP_KERNEL_ACCOUNT));
}

/* false if f holds no reference on id */
static bool fref_drop_locked(struct odsm_fref *f, u32 id)
{
	void *v = xa_load(&f->refs, id);

	if (!v)
		return false;
	if (xa_to_value(v) == 1)
		xa_erase(&f->refs, id);
	else	/* replaces an entry in place: cannot fail */
		xa_store(&f->refs, id, xa_mk_value(xa_to_value(v) - 1),
			 GFP_KERNEL);
	return true;
}

void odsm_fref_release(struct odsm_fref *f)
{
	struct odsm_centry *e;
	unsigned long id;
	void *v;

	mutex_lock(&cache.lock);
	xa_for_each(&f->refs, id, v) {
		unsigned long n = xa_to_value(v);

		e = xa_load(&cache.ids, id);
		while (e && n--)
			entry_put_locked(e);
		cond_resched();
	}
	trim_locked(READ_ONCE(odsm_cache_budget));
	mutex_unlock(&cache.lock);
	xa_destroy(&f->refs);
	kfree(f);
	reap();
}

/*
 * The entry f references under key whose copy is at addr (0: any): the
 * indexed one, else an orphan f still holds (by the orphan hash: a RETURN
 * costs no walk over f's references).  Under the lock.
 */
static struct odsm_centry *find_held_locked(struct odsm_fref *f, u64 key,
					    u64 addr)
{
	struct odsm_cnode *n = odsm_cindex_find(&cache.ci, key);
	struct odsm_centry *e;

	if (n) {
		e = container_of(n, struct odsm_centry, cn);
		if ((!addr || slot_addr(e) == addr) && xa_load(&f->refs, e->id))
			return e;
	}
	hlist_for_each_entry(e, orphan_head(key), onode)
		if (e->cn.key == key && (!addr || slot_addr(e) == addr) &&
		    xa_load(&f->refs, e->id))
			return e;
	return NULL;
}

/* ---- borrows ------------------------------------------------------------ */

/* A hit: take a reference for f.  Under the lock. */
static int hit_locked(struct odsm_fref *f, struct odsm_centry *e)
{
	/* a copy's count never wraps: a reference more is refused */
	int ret = odsm_cindex_get(&cache.ci, &e->cn);

	if (ret)
		return ret;
	ret = fref_add_locked(f, e->id);
	if (ret)
		odsm_cindex_put(&cache.ci, &e->cn);
	return ret;
}

/* The registered miss reader, or NULL; set at init, cleared at exit. */
static const struct odsm_miss_reader *miss_reader;

void odsm_cache_set_miss_reader(const struct odsm_miss_reader *r)
{
	WRITE_ONCE(miss_reader, r);
}

/* Is a copy of an object of size bytes lazy (the fault handler fills it)? */
static bool copy_lazy(u64 size)
{
	return size >= READ_ONCE(odsm_lazy_threshold) && size >= ODSM_LAZY_MIN;
}

/*
 * The miss reader's copy of an object of *size bytes, more than the first
 * buffer holds (a slab slot of 4 KiB and up, a run): into a buffer of its
 * own, which replaces *firstp.  -EOPNOTSUPP (a FETCH then) when there is
 * none.  move: see read_whole().
 */
static int copy_bigger(const struct odsm_miss_reader *mr, u32 node, u64 cg,
		       void **firstp, u64 *size, bool move)
{
	u64 want = *size;
	void *big;
	int ret;

	/* a lazy copy keeps only the FETCH's first bytes (make_copy()) */
	if (want > ODSM_MISS_READ_MAX || (!move && copy_lazy(want)))
		return -EOPNOTSUPP;
	big = kvmalloc(ODSM_WIRE_FETCH_REPLY_SIZE + want, ODSM_GFP_REQ);
	if (!big)
		return -EOPNOTSUPP;
	ret = mr->copy(node, cg, big + ODSM_WIRE_FETCH_REPLY_SIZE, want, size,
		       move);
	if (ret) {
		kvfree(big);
		/* its block's class changed meanwhile: a FETCH says */
		return ret == -EMSGSIZE ? -EOPNOTSUPP : ret;
	}
	kvfree(*firstp);
	*firstp = big;
	return 0;
}

void *odsm_first_alloc(void)
{
	return kvmalloc(ODSM_WIRE_FETCH_REPLY_SIZE + ODSM_FIRST_READ,
			ODSM_GFP_REQ);
}

int odsm_first_grow(void **firstp)
{
	void *big = kvmalloc(ODSM_WIRE_FETCH_REPLY_SIZE + ODSM_FIRST_WHOLE,
			     ODSM_GFP_REQ);

	if (!big)
		return -ENOMEM;
	kvfree(*firstp);
	*firstp = big;
	return 0;
}

/*
 * The whole object at cg, read by the miss reader mr into *firstp (from
 * odsm_first_alloc()) after the room of a FETCH reply's fixed part (a
 * bigger buffer replaces *firstp if the object is more than
 * ODSM_FIRST_READ bytes): 0 with *size, -EOPNOTSUPP to FETCH.  move,
 * for a move: the object whole even at a lazily filled copy's size (a
 * move leaves nothing behind to fetch), and only if known to be copied
 * (the reader's known_only: any other would likely be refused).
 */
static int read_whole(const struct odsm_miss_reader *mr, u32 node, u64 cg,
		      void **firstp, u64 *size, bool move)
{
	int ret = mr->copy(node, cg, *firstp + ODSM_WIRE_FETCH_REPLY_SIZE,
			   ODSM_FIRST_READ, size, move);

	if (ret == -EMSGSIZE)
		ret = copy_bigger(mr, node, cg, firstp, size, move);
	return ret;
}

int odsm_cache_read_whole(u32 node, u64 cg, void **firstp, u64 *size)
{
	const struct odsm_miss_reader *mr = READ_ONCE(miss_reader);

	return mr ? read_whole(mr, node, cg, firstp, size, true) : -EOPNOTSUPP;
}

/*
 * The rest of a move read one-sided in pieces of at most this much: a
 * buffer of a FETCH chunk's size whatever the object's (each piece ends
 * with a READ of the run's word, 4 bytes, a 64Ki-th of a piece's bytes).
 */
#define MOVE_PIECE	ODSM_WIRE_MAX_DATA

int odsm_cache_move_rest(u32 node, u64 inc, u64 cg, const void *first,
			 u32 got, u64 size, u64 dst)
{
	const struct odsm_miss_reader *mr = READ_ONCE(miss_reader);
	struct odsm_wire_fetch_reply fr;
	u64 from = got;
	void *buf = NULL;
	int ret = 0;
	u32 len;

	/*
	 * Only a run (a slab's word is of its slot, not the run word
	 * run_read() checks), and only with the color the FETCH answered:
	 * that FETCH marked the object copied under the home's heap lock,
	 * so its word has been "live, copied, that color" since, until a
	 * free, which changes it for good (odsm_pubword.h).
	 */
	if (mr && from < size && size > ODSM_SLAB_MAX &&
	    !odsm_wire_get_fetch_reply(first, ODSM_WIRE_FETCH_REPLY_SIZE + got,
				       &fr))
		buf = kvmalloc(min_t(u64, size - from, MOVE_PIECE), GFP_KERNEL);
	while (buf && from < size) {
		/* killed, or an io_uring command whose program went */
		if (odsm_abandoned()) {
			ret = -EINTR;
			break;
		}
		len = min_t(u64, size - from, MOVE_PIECE);
		ret = mr->run_read(node, inc, cg, size, fr.color, from, buf,
				   len, false);
		/*
		 * -EOPNOTSUPP: without the keys of its blocks (the reader
		 * asked for them, for the next run there), or refused by its
		 * word: the rest by FETCHes, their window of chunks in flight
		 * (one piece at a time here was slower; the FETCH of a freed
		 * object says -ESTALE)
		 */
		if (ret)
			break;
		odsm_stat_inc(ODSM_STAT_move_rest_onesided);
		ret = odsm_store_rw(&odsm_heap, dst + from, buf, len, true);
		if (ret)
			break;
		from += len;
	}
	kvfree(buf);
	/* the words and bytes read one-sided are of the incarnation inc only */
	if (from > got && odsm_peer_incarnation(node, false) != inc)
		return -EREMCHG;
	if (ret && ret != -EOPNOTSUPP)
		return ret;
	return odsm_fetch_rest(node, inc, cg, from, size, dst);
}

/*
 * The first bytes of a new copy of the object at cg into *firstp (from
 * odsm_first_alloc(), the bytes after a FETCH reply's fixed part): read
 * by the miss reader where it can (one-sided, where the home publishes
 * that this is safe; the whole object, in a bigger buffer that replaces
 * *firstp if need be), else a FETCH (odsm_first_grow() first), whose
 * answer the reader learns from (the class of the object's block).
 * *color: the object's allocation color, when a FETCH said it (*said).
 */
static int copy_first(u32 node, u64 inc, u64 cg, void **firstp, u64 *size,
		      u32 *got, u16 *color, bool *said)
{
	const struct odsm_miss_reader *mr = READ_ONCE(miss_reader);
	struct odsm_wire_fetch_reply fr;
	int ret = -EOPNOTSUPP;

	*said = false;
	if (mr)
		ret = read_whole(mr, node, cg, firstp, size, false);
	if (!ret) {
		*got = *size;
		return 0;
	}
	if (ret != -EOPNOTSUPP)
		return ret;
	ret = odsm_first_grow(firstp);
	if (ret)
		return ret;
	ret = odsm_fetch_at(node, inc, cg, 0, *firstp, ODSM_FIRST_FETCH,
			    ODSM_FIRST_WHOLE, size, got);
	if (ret)
		return ret;
	/* the reply's fixed part, checked by odsm_fetch_at() */
	if (odsm_wire_get_fetch_reply(*firstp,
				      ODSM_WIRE_FETCH_REPLY_SIZE + *got, &fr))
		return 0;
	*color = fr.color;
	*said = true;
	if (mr)
		mr->learn(node, inc, cg, *size, fr.color);
	return 0;
}

/*
 * A new copy of the object at cg: allocate a slot, fill it (a lazy one
 * is left for the fault handler), and hand back an entry that is not in
 * the cache yet.
 */
static int make_copy(u32 node, u64 cg, struct odsm_centry **out)
{
	struct odsm_centry *e;
	u64 size, usable;
	void *first;
	u32 got;
	int ret;

	first = odsm_first_alloc();
	e = kzalloc(sizeof(*e), GFP_KERNEL_ACCOUNT);
	if (!first || !e) {
		ret = -ENOMEM;
		goto out;
	}
	/* every FETCH of the copy reaches this incarnation of the home,
	 * read before the first one: see home_same()
	 */
	e->inc = odsm_peer_incarnation(node, true);
	e->node = node;
	ret = -EHOSTDOWN;
	if (!e->inc)
		goto out;
	ret = copy_first(node, e->inc, cg, &first, &size, &got, &e->color,
			 &e->color_known);
	if (ret)
		goto out;
	ret = slot_new(e, size, &usable);
	/* make room: some idle copies, then every one */
	if (ret == -ENOMEM && odsm_cache_make_room(size, false))
		ret = slot_new(e, size, &usable);
	if (ret == -ENOMEM && odsm_cache_make_room(size, true))
		ret = slot_new(e, size, &usable);
	if (ret)
		goto out;
	e->size = size;
	e->cn.key = cg;
	e->cn.bytes = usable;
	kref_init(&e->kref);
	e->lazy = copy_lazy(size);
	/* a reused block keeps its pages: the fault handler must find
	 * none, so that every first touch fetches; a block pinned for RDMA
	 * keeps them, so that copy is filled now instead.  Registered
	 * first: a page inserted before the discard goes with it, none
	 * after (see lazy_register())
	 */
	if (e->lazy && lazy_register(e))
		e->lazy = false;
	if (e->lazy && odsm_store_discard(&odsm_heap, slot_addr(e),
					  round_up(size, ODSM_BLOCK_SIZE))) {
		mutex_lock(&cache.lock);
		lazy_unregister_locked(e);
		mutex_unlock(&cache.lock);
		e->lazy = false;
	}
	if (!e->lazy) {
		ret = odsm_store_rw(&odsm_heap, slot_addr(e),
				    first + ODSM_WIRE_FETCH_REPLY_SIZE, got,
				    true);
		if (!ret)
			ret = odsm_fetch_rest(node, e->inc, cg, got, size,
					      slot_addr(e));
	}
	/*
	 * every byte, and the size, from the instance it was asked of; a
	 * home up again as another (it restarted under the copy, maybe
	 * between the incarnation read above and the miss reader's own):
	 * -EREMCHG, anew, as a FETCH that met the restart says
	 */
	if (!ret && !home_same(e)) {
		odsm_stat_inc(ODSM_STAT_lazy_stale);
		ret = odsm_peer_incarnation(node, false) ? -EREMCHG :
							    -EHOSTDOWN;
	}
	if (ret) {
		copy_drop(e);
		/* a lazy fault that found it registered may still hold it */
		kref_put(&e->kref, entry_free);
		e = NULL;
		goto out;
	}
	*out = e;
	e = NULL;
out:
	kfree(e);
	kvfree(first);
	return ret;
}

/*
 * Index e with one reference of f's, or with none (f NULL: an idle copy,
 * on the LRU at once).  Under the lock.  -ESTALE when e's
 * home is another incarnation by now: odsm_cache_forget() of the one e
 * was fetched from may have run already, and must not be outlived.
 * (The incarnation changes before that forget is called, which takes
 * this lock: what is checked here is either caught by it or refused.)
 */
static int insert_locked(struct odsm_fref *f, struct odsm_centry *e)
{
	u32 id;
	int ret;

	if (odsm_peer_incarnation(e->node, false) != e->inc) {
		odsm_stat_inc(ODSM_STAT_cache_stale_refused);
		return -ESTALE;
	}
	ret = xa_alloc(&cache.ids, &id, e, xa_limit_32b, GFP_KERNEL_ACCOUNT);
	if (ret)
		return ret;
	e->id = id;
	ret = f ? fref_add_locked(f, id) : 0;
	if (ret)
		goto err_id;
	/* a lazy copy's blocks were registered by make_copy() */
	e->cn.refs = f ? 1 : 0;
	odsm_cindex_insert(&cache.ci, &e->cn);
	atomic64_inc(&cache.nr_slots);
	return 0;

err_id:
	xa_erase(&cache.ids, id);
	return ret;
}

int odsm_cache_borrow(struct odsm_fref *f, u32 node, u64 cg, u64 *addr,
		      u64 *size, u32 *result)
{
	struct odsm_centry *e = NULL, *old;
	u64 start = ktime_get_ns();
	struct odsm_cnode *n;
	int ret;

	mutex_lock(&cache.lock);
	n = odsm_cindex_find(&cache.ci, cg);
	old = n ? container_of(n, struct odsm_centry, cn) : NULL;
	if (old && !current_locked(old)) {
		if (odsm_peer_incarnation(node, false) != old->inc)
			orphan_locked(old);
		old = NULL;
	}
	if (old) {
		ret = hit_locked(f, old);
		if (!ret) {
			*addr = slot_addr(old);
			*size = old->size;
			*result = ODSM_BORROWED_HIT;
			odsm_stat_inc(ODSM_STAT_borrow_hits);
			trace_odsm_borrow_hit(node, cg, *size, 0);
		}
		mutex_unlock(&cache.lock);
		return ret;
	}
	mutex_unlock(&cache.lock);

	ret = make_copy(node, cg, &e);
	if (ret == -EREMCHG)	/* the home restarted under the FETCH: anew */
		ret = make_copy(node, cg, &e);
	if (ret) {
		reap();		/* a stale copy may have left just now */
		return ret;
	}
	/* a test may keep open the window in which the home restarts */
	odsm_fault_hold_copy();

	mutex_lock(&cache.lock);
	n = odsm_cindex_find(&cache.ci, cg);
	old = n ? container_of(n, struct odsm_centry, cn) : NULL;
	if (old && old->inc != e->inc) {
		/* of another incarnation than the one that just answered */
		odsm_stat_inc(ODSM_STAT_cache_stale_refused);
		orphan_locked(old);
		old = NULL;
	}
	if (old) {
		/* another borrower of the same version filled it first */
		ret = hit_locked(f, old);
		if (!ret) {
			*addr = slot_addr(old);
			*size = old->size;
			*result = ODSM_BORROWED_HIT;
			odsm_stat_inc(ODSM_STAT_borrow_hits);
			/* it waited on the FETCH all the same */
			trace_odsm_borrow_hit(node, cg, *size,
					      ktime_get_ns() - start);
		}
	} else {
		ret = insert_locked(f, e);
		if (!ret) {
			*addr = slot_addr(e);
			*size = e->size;
			*result = ODSM_BORROWED_MISS;
			odsm_stat_inc(ODSM_STAT_borrow_misses);
			trace_odsm_borrow_miss(node, cg, *size,
					       odsm_lat_record(ODSM_LAT_borrow_miss,
							       start));
			trim_locked(READ_ONCE(odsm_cache_budget));
			e = NULL;
		}
	}
	mutex_unlock(&cache.lock);
	if (e) {
		copy_drop(e);
		kref_put(&e->kref, entry_free);
	}
	reap();
	return ret;
}

/* ---- prefetching ---------------------------------------------------------- */

/*
 * The bytes of one object that a FETCH_MANY brought whole: a copy made
 * and indexed idle, unless one of that version is there by now.
 */
static int prefetch_one(u32 node, u64 inc, u64 cg, const void *bytes,
			u64 size)
{
	struct odsm_centry *e = kzalloc(sizeof(*e), GFP_KERNEL_ACCOUNT);
	u64 usable;
	int ret;

	if (!e)
		return -ENOMEM;
	e->inc = inc;
	e->node = node;
	ret = slot_new(e, size, &usable);
	if (ret) {
		kfree(e);
		return ret;
	}
	e->size = size;
	e->cn.key = cg;
	e->cn.bytes = usable;
	kref_init(&e->kref);
	ret = odsm_store_rw(&odsm_heap, slot_addr(e), (void *)bytes, size,
			    true);
	if (!ret && !home_same(e))
		ret = -EHOSTDOWN;
	if (!ret) {
		mutex_lock(&cache.lock);
		if (odsm_cindex_find(&cache.ci, cg))
			ret = -EEXIST;	/* a borrow filled it meanwhile */
		else
			ret = insert_locked(NULL, e);
		if (!ret)
			trim_locked(READ_ONCE(odsm_cache_budget));
		mutex_unlock(&cache.lock);
	}
	if (ret) {
		copy_drop(e);
		kref_put(&e->kref, entry_free);
	}
	return ret;
}

int odsm_cache_prefetch_start(struct odsm_prefetch_call *pc, u32 node,
			      const u64 *cg, u32 n)
{
	struct odsm_wire_fetch_many *fm = &pc->fm;
	u32 i, j, plen;
	int ret;

	*fm = (struct odsm_wire_fetch_many){ .len = PREFETCH_LEN };
	pc->node = node;
	/* only what the cache lacks, once each */
	mutex_lock(&cache.lock);
	for (i = 0; i < n && fm->count < ODSM_WIRE_FETCH_MANY_MAX; i++) {
		if (odsm_cindex_find(&cache.ci, cg[i]))
			continue;
		for (j = 0; j < fm->count && pc->want[j] != cg[i]; j++)
			;
		if (j == fm->count)
			pc->want[fm->count++] = cg[i];
	}
	mutex_unlock(&cache.lock);
	if (!fm->count)
		return 0;
	/* every copy is of the incarnation asked, as make_copy()'s */
	pc->inc = odsm_peer_incarnation(node, true);
	if (!pc->inc)
		return -EHOSTDOWN;
	pc->p = kmalloc(ODSM_WIRE_FETCH_MANY_HDR_SIZE + 8 * fm->count,
			ODSM_GFP_REQ);
	pc->rbuf = kvmalloc(fm->count * (ODSM_WIRE_FETCH_ITEM_SIZE + fm->len),
			    ODSM_GFP_REQ);
	ret = -ENOMEM;
	if (!pc->p || !pc->rbuf)
		goto fail;
	plen = odsm_wire_put_fetch_many(pc->p, fm, pc->want);
	ret = odsm_rpc_start(&pc->rc, node, pc->inc, ODSM_MSG_FETCH_MANY,
			     pc->p, plen, NULL, 0, pc->rbuf,
			     fm->count * (ODSM_WIRE_FETCH_ITEM_SIZE + fm->len));
	if (!ret)
		return 1;
fail:
	kfree(pc->p);
	kvfree(pc->rbuf);
	return ret;
}

int odsm_cache_prefetch_finish(struct odsm_prefetch_call *pc)
{
	const struct odsm_wire_fetch_many *fm = &pc->fm;
	struct odsm_wire_fetch_item it;
	u32 i, rlen = 0, off;
	int ret, made = 0;

	ret = odsm_rpc_wait(&pc->rc, &rlen);
	if (ret)
		goto out;
	if (odsm_wire_check_fetch_many_reply(pc->rbuf, rlen, fm->count,
					     fm->len)) {
		odsm_stat_inc(ODSM_STAT_bad_msgs);
		ret = -EPROTO;
		goto out;
	}
	off = fm->count * ODSM_WIRE_FETCH_ITEM_SIZE;
	for (i = 0; i < fm->count; i++) {
		const u8 *bytes = pc->rbuf + off;

		odsm_wire_get_fetch_item(pc->rbuf, i, &it, &off);
		/* refused, or bigger than asked: its borrow fetches it */
		if (it.status || it.len != it.size)
			continue;
		if (it.size > odsm_heap.geom.part_size ||
		    it.color > odsm_color(pc->want[i])) {
			odsm_stat_inc(ODSM_STAT_bad_msgs);
			continue;
		}
		odsm_stat_add(ODSM_STAT_bytes_fetched, it.len);
		ret = prefetch_one(pc->node, pc->inc, pc->want[i], bytes,
				   it.size);
		if (ret == -ENOMEM)
			break;	/* the cache is full: leave the rest */
		made += !ret;
	}
	ret = 0;
	odsm_stat_add(ODSM_STAT_prefetched, made);
out:
	kfree(pc->p);
	kvfree(pc->rbuf);
	reap();
	return ret ? ret : made;
}

int odsm_cache_return(struct odsm_fref *f, u64 cg, u64 addr)
{
	struct odsm_centry *e;
	int ret = -ENOENT;

	mutex_lock(&cache.lock);
	e = find_held_locked(f, cg, addr);
	if (e && fref_drop_locked(f, e->id)) {
		entry_put_locked(e);
		odsm_stat_inc(ODSM_STAT_borrow_returns);
		/* an idle copy counts against the budget from now on */
		trim_locked(READ_ONCE(odsm_cache_budget));
		ret = 0;
	}
	mutex_unlock(&cache.lock);
	reap();
	return ret;
}

int odsm_cache_take(struct odsm_fref *f, u64 cg, bool held, u64 addr,
		    u64 *local_cg, u64 *size, u64 *inc)
{
	struct odsm_centry *e;
	struct odsm_cnode *n;
	int ret = -ENOENT;

	mutex_lock(&cache.lock);
	if (held) {
		e = find_held_locked(f, cg, addr);
		if (!e || !fref_drop_locked(f, e->id)) {
			mutex_unlock(&cache.lock);
			return -EINVAL;		/* it holds no such reference */
		}
		if (e->orphan || e->lazy || e->cn.refs != 1 ||
		    !current_locked(e)) {
			entry_put_locked(e);	/* consumed all the same */
			goto out;
		}
		e->cn.refs = 0;
	} else {
		n = odsm_cindex_find(&cache.ci, cg);
		e = n ? container_of(n, struct odsm_centry, cn) : NULL;
		if (!e || e->lazy || e->cn.refs || !current_locked(e))
			goto out;
	}
	/* the copy is exactly this version and nobody reads it: it becomes
	 * the object, its slot stays
	 */
	odsm_cindex_remove(&cache.ci, &e->cn);
	xa_erase(&cache.ids, e->id);
	xa_erase(&cache.slots, slot_index(slot_addr(e)));
	atomic64_dec(&cache.nr_slots);
	*local_cg = e->local_cg;
	*size = e->size;
	*inc = e->inc;
	kref_put(&e->kref, entry_free);
	ret = 0;
out:
	mutex_unlock(&cache.lock);
	reap();
	return ret;
}

/* ---- lazy fill ---------------------------------------------------------- */

/*
 * The live lazy entry whose block holds addr, referenced (its kref), or
 * NULL.  The kref keeps its memory, never its slot: see the top of the file.
 */
static struct odsm_centry *lazy_get(u64 addr)
{
	unsigned long b = block_of(addr);
	struct odsm_centry *e;

	if (!xa_load(&cache.lazy, b))
		return NULL;		/* the common case: no lazy copy */
	mutex_lock(&cache.lock);
	e = xa_load(&cache.lazy, b);
	if (e && !e->dead)
		kref_get(&e->kref);
	else
		e = NULL;
	mutex_unlock(&cache.lock);
	return e;
}

int odsm_cache_lazy_check(u64 addr)
{
	struct odsm_centry *e = lazy_get(addr);
	int ret = 0;

	if (!e)
		return 0;
	if (!home_same(e))
		ret = -EHOSTDOWN;	/* its home restarted: the object is gone */
	else if ((addr & PAGE_MASK) - slot_addr(e) < e->size)
		ret = 1;		/* past the object: zero pages */
	kref_put(&e->kref, entry_free);
	return ret;
}

/*
 * Fetch the page of e at off (and read-ahead) and insert what is absent.
 * The fetch runs with no lock held; the pages go in under heap->lock only
 * while e is alive (not @dead: its slot not freed) and its home the
 * instance it was copied from, checked after the reply came.
 */
static int lazy_fill(struct odsm_centry *e, u64 off)
{
	const struct odsm_miss_reader *mr = READ_ONCE(miss_reader);
	struct odsm_heap *h = &odsm_heap;
	u64 osize, start = ktime_get_ns();
	u32 len, got;
	void *buf;
	int ret;

	len = clamp_t(u32, READ_ONCE(odsm_readahead_pages), 1,
		      ODSM_READAHEAD_MAX) << PAGE_SHIFT;
	len = min_t(u64, len, e->size - off);
	buf = kvmalloc(ODSM_WIRE_FETCH_REPLY_SIZE + len, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	/* a test may keep open the window in which the home restarts */
	odsm_fault_hold_lazy();
	/* one-sided where the home lets us (its words say the same object) */
	ret = -EOPNOTSUPP;
	if (mr && e->color_known)
		ret = mr->run_read(e->node, e->inc, e->cn.key, e->size,
				   e->color, off, buf + ODSM_WIRE_FETCH_REPLY_SIZE,
				   len, true);
	if (!ret)
		odsm_stat_inc(ODSM_STAT_lazy_onesided);
	if (ret == -EOPNOTSUPP) {
		ret = odsm_fetch_at(e->node, e->inc, e->cn.key, off, buf, len,
				    0, &osize, &got);
		if (!ret && (osize != e->size || got != len))
			ret = -EPROTO;
	}
	if (!ret && !home_same(e)) {
		odsm_stat_inc(ODSM_STAT_lazy_stale);
		ret = -EHOSTDOWN;
	}
	if (!ret) {
		mutex_lock(&h->lock);
		if (!READ_ONCE(e->dead))
			ret = odsm_store_fill_locked(h, slot_addr(e) + off,
						     buf + ODSM_WIRE_FETCH_REPLY_SIZE,
						     len);
		mutex_unlock(&h->lock);
		odsm_stat_inc(ODSM_STAT_lazy_faults);
		trace_odsm_lazy_fault(e->node, e->cn.key, off, ret,
				      odsm_lat_record(ODSM_LAT_lazy_fault,
						      start));
	} else {
		trace_odsm_lazy_fault(e->node, e->cn.key, off, ret,
				      ktime_get_ns() - start);
	}
	kvfree(buf);
	return ret;
}

/*
 * A failed fetch made with mmap_lock dropped is remembered for the page
 * that faulted (cache.lazy_err: page index -> error), so that the fault's
 * retry answers SIGBUS instead of fetching again with the lock held; a
 * later first attempt fetches again (the home may be back), and the record
 * goes when a fetch of the page succeeds or the copy leaves the cache.
 * Under cache.lock, only for a live entry, so no record outlives its copy.
 */
static void lazy_err_set(struct odsm_centry *e, u64 addr, int err)
{
	mutex_lock(&cache.lock);
	if (!e->dead)	/* no memory: the retry fetches again, holding the lock */
		xa_store(&cache.lazy_err, page_of(addr),
			 xa_mk_value((unsigned long)-err), GFP_KERNEL);
	mutex_unlock(&cache.lock);
}

int odsm_cache_lazy_error(u64 addr)
{
	void *v = xa_load(&cache.lazy_err, page_of(addr));

	return v ? -(int)xa_to_value(v) : 0;
}

int odsm_cache_lazy_fault(u64 addr, bool remember)
{
	struct odsm_centry *e = lazy_get(addr);
	u64 off;
	int ret;

	if (!e)
		return 0;
	off = (addr & PAGE_MASK) - slot_addr(e);
	ret = -EHOSTDOWN;	/* its home restarted: the object is gone */
	if (!home_same(e))
		goto out;
	ret = 0;
	if (off >= e->size)
		goto out;	/* slot tail past the object: zero pages */
	ret = lazy_fill(e, off);
	if (!ret && !xa_empty(&cache.lazy_err))
		xa_erase(&cache.lazy_err, page_of(addr));
out:
	if (ret && remember)
		lazy_err_set(e, addr, ret);
	kref_put(&e->kref, entry_free);
	return ret;
}

int odsm_cache_lazy_fill_range(u64 addr, u64 len)
{
	struct odsm_heap *h = &odsm_heap;
	u64 a, end = addr + len;
	int ret;

	for (a = addr & PAGE_MASK; a < end; a += PAGE_SIZE) {
		/* a whole block with no lazy copy is skipped at once */
		if (!odsm_cache_lazy_block(a)) {
			a = (a | (ODSM_BLOCK_SIZE - 1)) + 1 - PAGE_SIZE;
			continue;
		}
		if (odsm_store_present(h, a))
			continue;
		ret = odsm_cache_lazy_fault(a, false);
		if (ret)
			return ret;
		odsm_stat_inc(ODSM_STAT_lazy_prefills);
		cond_resched();
	}
	return 0;
}

/* ---- the shrinker, gauges, init ------------------------------------------ */

/* Idle copies, and the blocks the heap keeps for the next ones. */
static unsigned long cache_count(struct shrinker *s, struct shrink_control *sc)
{
	unsigned long idle = READ_ONCE(cache.ci.idle_entries);

	/* every copy referenced: some may be idle in processes' tables */
	if (!idle && READ_ONCE(cache.ci.entries))
		odsm_hits_want();
	return idle + odsm_heap_kept_blocks(&odsm_heap);
}

/*
 * Called from reclaim, inside any allocation, perhaps one made under
 * cache.lock or heap->lock: so only a try-lock, and the slots and the kept
 * blocks are freed by the reaper, not here.
 */
static unsigned long cache_scan(struct shrinker *s, struct shrink_control *sc)
{
	u32 kept = odsm_heap_kept_blocks(&odsm_heap);
	unsigned long freed = 0;
	struct odsm_cnode *v;

	if (mutex_trylock(&cache.lock)) {
		odsm_hits_want();	/* memory is short: idle references too */
		while (freed < sc->nr_to_scan &&
		       (v = odsm_cindex_victim(&cache.ci))) {
			evict_locked(container_of(v, struct odsm_centry, cn));
			if (!(++freed % RESCHED_EVERY))
				cond_resched();
		}
		mutex_unlock(&cache.lock);
		odsm_stat_add(ODSM_STAT_cache_shrunk, freed);
	}
	/*
	 * Asked after the evictions: the reaper frees their slots (keeping
	 * no block from now on), then gives the kept blocks back.  Counted
	 * once, by the scan that asked.
	 */
	if (kept && !atomic_xchg(&cache.kept_asked, 1))
		freed += kept;
	if (freed)
		schedule_work(&cache.reaper);
	return freed ? freed : SHRINK_STOP;
}

u64 odsm_cache_entries(void)
{
	u64 v;

	mutex_lock(&cache.lock);
	v = cache.ci.entries;
	mutex_unlock(&cache.lock);
	return v;
}

u64 odsm_cache_copies(void)
{
	return atomic64_read(&cache.nr_slots);
}

long odsm_ioc_drop_copies(void __user *arg)
{
	struct odsm_drop_copies d;
	u64 before;

	if (copy_from_user(&d, arg, sizeof(d)))
		return -EFAULT;
	if (!odsm_reserved_zero(d.reserved, ARRAY_SIZE(d.reserved)))
		return -EINVAL;
	atomic_set(&cache.kept_asked, 1);	/* the slots freed keep none */
	mutex_lock(&cache.lock);
	before = cache.ci.entries;
	trim_locked(0);
	d.kept = cache.ci.entries;
	mutex_unlock(&cache.lock);
	reap();
	kept_give_back();	/* no copy needs their pages now */
	d.dropped = before - d.kept;
	odsm_stat_add(ODSM_STAT_copies_dropped, d.dropped);
	return copy_to_user(arg, &d, sizeof(d)) ? -EFAULT : 0;
}

u64 odsm_cache_bytes(void)
{
	u64 v;

	mutex_lock(&cache.lock);
	v = cache.ci.bytes;
	mutex_unlock(&cache.lock);
	return v;
}

/*
 * A peer gone down: the processes' tables of hits serve no copy recorded
 * before, as this node's BORROW serves none of that peer's copies while
 * it is not up (current_locked()), and the peer may come back a new
 * incarnation handing the same colored addresses out again; its copies
 * are forgotten once that is known (odsm_cache_forget()), but the tables
 * must not serve them meanwhile.  Each process records again at its next
 * borrow of a copy, one system call.
 */
static void cache_peer_down(u32 node)
{
	odsm_hits_forgot();
}

/* A peer that restarted hands its addresses out again from color 0. */
static struct odsm_peer_events cache_events = {
	.restarted = odsm_cache_forget,
	.down = cache_peer_down,
};

int odsm_cache_init(void)
{
	int ret;

	mutex_init(&cache.lock);
	xa_init_flags(&cache.ids, XA_FLAGS_ALLOC);
	xa_init(&cache.lazy);
	xa_init(&cache.lazy_err);
	xa_init(&cache.slots);
	init_rwsem(&cache.slot_sem);
	INIT_LIST_HEAD(&cache.doomed);
	INIT_WORK(&cache.reaper, reaper_fn);
	ret = odsm_hits_init();
	if (ret)
		return ret;
	ret = odsm_cindex_init(&cache.ci, 12);
	if (ret)
		goto err_hits;
#ifdef ODSM_HAVE_SHRINKER_ALLOC
	cache.shrinker = shrinker_alloc(0, "odsm-cache");
	if (!cache.shrinker) {
		ret = -ENOMEM;
		goto err;
	}
	cache.shrinker->count_objects = cache_count;
	cache.shrinker->scan_objects = cache_scan;
	shrinker_register(cache.shrinker);
#else
	cache.shrinker_s.count_objects = cache_count;
	cache.shrinker_s.scan_objects = cache_scan;
	cache.shrinker_s.seeks = DEFAULT_SEEKS;
	ret = register_shrinker(&cache.shrinker_s, "odsm-cache");
	if (ret)
		goto err;
#endif
	WRITE_ONCE(odsm_heap.fill_only, lazy_fill_only);
	odsm_peer_events_register(&cache_events);
	return 0;
err:
	odsm_cindex_destroy(&cache.ci);
err_hits:
	odsm_hits_exit();
	return ret;
}

void odsm_cache_exit(void)
{
	odsm_peer_events_unregister(&cache_events);
#ifdef ODSM_HAVE_SHRINKER_ALLOC
	shrinker_free(cache.shrinker);
#else
	unregister_shrinker(&cache.shrinker_s);
#endif
	/* no file is open, so nothing references a copy */
	odsm_cache_forget(U32_MAX);
	flush_work(&cache.reaper);
	reap();
	WRITE_ONCE(odsm_heap.fill_only, NULL);
	WARN_ON_ONCE(!xa_empty(&cache.ids));
	xa_destroy(&cache.ids);
	xa_destroy(&cache.lazy);
	xa_destroy(&cache.lazy_err);
	xa_destroy(&cache.slots);
	odsm_cindex_destroy(&cache.ci);
	odsm_hits_exit();
}
