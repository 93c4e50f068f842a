// SPDX-License-Identifier: GPL-2.0
/*
 * The node's heap: configuration and the objects of its partition.  Glue
 * between the pure allocator bookkeeping (odsm_palloc.c) and the page store
 * (odsm_store.c), with the counters.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/sched.h>
#include "odsm.h"
#include "odsm_wire.h"	/* odsm_wire_fetch_span() */

/* The node's heap: one per machine (see odsm.h). */
struct odsm_heap odsm_heap;

/*
 * Highest user address the heap may reach: the default mmap window (below
 * 2^47 on x86-64, so it also leaves the top 16 bits of a fat pointer for the
 * color).
 */
u64 odsm_user_top(void)
{
	return min_t(u64, DEFAULT_MAP_WINDOW, ODSM_ADDR_MASK + 1);
}

static void release_blocks(struct odsm_heap *h, const struct odsm_release *rel)
{
	if (rel->nr_blocks)
		odsm_store_release(h, h->pa.base +
				   ((u64)rel->first_block << ODSM_BLOCK_SHIFT),
				   (u64)rel->nr_blocks << ODSM_BLOCK_SHIFT);
}

static void kept_reset(struct odsm_heap *h)
{
	int i;

	for (i = 0; i < ODSM_NR_CLASSES; i++)
		WRITE_ONCE(h->kept[i], -1);
}

int odsm_heap_init(struct odsm_heap *h, const struct odsm_geom *g)
{
	int ret = odsm_geom_check(g, odsm_user_top());

	if (ret)
		return ret;
	kept_reset(h);
	mutex_init(&h->lock);
	xa_init(&h->pages);
	xa_init(&h->pinned);
	xa_init(&h->pubs);
	atomic_long_set(&h->nr_pages, 0);
	atomic_set(&h->maps, 0);
	h->geom = *g;
	return odsm_palloc_init(&h->pa, odsm_part_start(g, g->node_id),
				g->part_size);
}

/* Drop every page of the store: nothing maps the heap any more. */
static void store_drop_all(struct odsm_heap *h)
{
	struct page *page;
	unsigned long idx;

	xa_for_each(&h->pages, idx, page) {
		xa_erase(&h->pages, idx);
		put_page(page);
		atomic_long_dec(&h->nr_pages);
		odsm_stat_inc(ODSM_STAT_page_frees);
		cond_resched();
	}
}

void odsm_heap_destroy(struct odsm_heap *h)
{
	store_drop_all(h);
	xa_destroy(&h->pages);
	xa_destroy(&h->pinned);
	xa_destroy(&h->pubs);
	odsm_palloc_destroy(&h->pa);
}

int odsm_heap_set_config(struct odsm_heap *h, const struct odsm_geom *g)
{
	struct odsm_palloc pa;
	int ret = odsm_geom_check(g, odsm_user_top());

	if (ret)
		return ret;
	mutex_lock(&h->lock);
	/*
	 * A block pinned for an RDMA registration keeps its pages named by
	 * that registration (odsm_store_pin): dropping them, or changing the
	 * geometry odsm_store_unpin() will find them by, would leave it
	 * pointing at pages the store no longer serves.  Registrations go
	 * with their connections at LEAVE, which comes first (SET_CONFIG is
	 * refused while joined): a pin here means one outlived its leave.
	 */
	if (atomic_read(&h->maps) || h->pa.objects || !xa_empty(&h->pinned)) {
		odsm_stat_inc(ODSM_STAT_config_refused);
		ret = -EBUSY;
		goto out;
	}
	ret = odsm_palloc_init(&pa, odsm_part_start(g, g->node_id),
			       g->part_size);
	if (ret)
		goto out;
	store_drop_all(h);
	kept_reset(h);
	odsm_palloc_destroy(&h->pa);
	h->pa = pa;
	h->geom = *g;
out:
	mutex_unlock(&h->lock);
	return ret;
}

int odsm_heap_alloc(struct odsm_heap *h, u64 size, u32 align, u32 flags,
		    u64 *cgaddr, u64 *usable)
{
	int ret;

	mutex_lock(&h->lock);
	ret = odsm_palloc_alloc(&h->pa, size, align, cgaddr, usable);
	if (!ret)
		odsm_store_publish(h, odsm_clear_color(*cgaddr));
	mutex_unlock(&h->lock);
	/*
	 * Zeroed without the lock held across it (it takes it per batch of
	 * pages): the address is not handed out yet, and one big ALLOC_ZERO
	 * must not stall every fault on the heap.  -ESTALE: someone freed
	 * the object meanwhile by guessing its address.
	 */
	if (!ret && (flags & ODSM_ALLOC_ZERO))
		ret = odsm_store_zero(h, odsm_clear_color(*cgaddr),
				      odsm_color(*cgaddr), *usable);

	switch (ret) {
	case 0:
		odsm_stat_inc(ODSM_STAT_allocs);
		odsm_stat_add(ODSM_STAT_alloc_bytes, *usable);
		break;
	case -ENOMEM:
		odsm_stat_inc(ODSM_STAT_alloc_enomem);
		break;
	case -ESTALE:
		break;
	default:
		odsm_stat_inc(ODSM_STAT_alloc_einval);
	}
	return ret;
}

/* A refusal (ret) of cgaddr: -ESTALE, counted, if it names a gone object. */
static int refusal(struct odsm_heap *h, u64 cgaddr, int ret)
{
	if (ret && odsm_palloc_stale(&h->pa, cgaddr)) {
		odsm_stat_inc(ODSM_STAT_stale_refused);
		return -ESTALE;
	}
	return ret;
}

/*
 * The live object that starts at cgaddr, with a color it may carry.
 * -ESTALE for a colored address of an object that is gone (moved or
 * freed: the address's colors have passed it), -EINVAL for an address
 * where no object starts.  Caller holds h->lock.
 */
static int object_at(struct odsm_heap *h, u64 cgaddr, struct odsm_objinfo *oi)
{
	int ret;

	lockdep_assert_held(&h->lock);
	ret = odsm_palloc_lookup(&h->pa, cgaddr, oi);
	if (!ret && odsm_color(cgaddr) < oi->color)
		ret = -EINVAL;
	return refusal(h, cgaddr, ret);
}

int odsm_heap_object(struct odsm_heap *h, u64 cgaddr, struct odsm_objinfo *oi)
{
	int ret;

	mutex_lock(&h->lock);
	ret = object_at(h, cgaddr, oi);
	mutex_unlock(&h->lock);
	return ret;
}

/*
 * A slab block rel frees keeps its pages as its class's kept block; the
 * one kept before goes instead, unless it is the same.  Not a block
 * pinned for an RDMA registration: its pages stay anyway, and its release
 * zeroes them (a peer's one-sided READ of a free block finds zeros, never
 * a freed copy's bytes).  Under heap->lock.
 */
static void keep_block(struct odsm_heap *h, struct odsm_release *rel)
{
	int cls, i;
	s32 old;

	if (rel->nr_blocks != 1 ||
	    odsm_store_block_pinned(h, rel->first_block))
		return;
	cls = odsm_palloc_free_class(&h->pa, rel->first_block);
	if (cls < 0)
		return;
	/* kept for another class before, then handed out as this one's */
	for (i = 0; i < ODSM_NR_CLASSES; i++)
		if (i != cls && h->kept[i] == rel->first_block)
			WRITE_ONCE(h->kept[i], -1);
	old = h->kept[cls];
	WRITE_ONCE(h->kept[cls], rel->first_block);
	rel->nr_blocks = 0;
	if (old >= 0 && old != rel->first_block) {
		rel->first_block = old;
		rel->nr_blocks = 1;
	}
}

static int heap_free(struct odsm_heap *h, u64 cgaddr, bool keep)
{
	struct odsm_release rel;
	struct odsm_objinfo oi;
	int ret;

	mutex_lock(&h->lock);
	ret = object_at(h, cgaddr, &oi);
	if (!ret)
		ret = odsm_palloc_free(&h->pa, cgaddr, &rel);
	if (!ret)
		odsm_store_publish(h, oi.addr);
	if (!ret && keep)
		keep_block(h, &rel);
	mutex_unlock(&h->lock);

	if (ret) {
		/* a user's mistake, and any user may make it at any rate:
		 * counted, never logged
		 */
		odsm_stat_inc(ODSM_STAT_bad_frees);
		return ret;
	}
	odsm_stat_inc(ODSM_STAT_frees);
	odsm_stat_add(ODSM_STAT_free_bytes, oi.usable);
	/*
	 * A block handed out again meanwhile keeps its pages for its new
	 * objects: store_drop() skips the pages of backed blocks.
	 */
	release_blocks(h, &rel);
	return 0;
}

int odsm_heap_free(struct odsm_heap *h, u64 cgaddr)
{
	return heap_free(h, cgaddr, false);
}

/*
 * odsm_heap_free() for the cache's copies (odsm_cache.c): a slab block
 * this free empties keeps its pages, one block per size class, until the
 * cache empties another block of the class.  A cache over its budget
 * frees a copy and makes the next one in the same block soon after (a
 * slab forms again first where one of its class was): each miss paid a
 * page allocated and zeroed, and each free an unmap, about 60 us of a
 * 512 B one-sided miss that took 1 ms under TCG.  At most
 * ODSM_NR_CLASSES blocks (1.4 MiB), which stay until then, until memory
 * is short or the admin drops the node's copies (odsm_heap_drop_kept()),
 * or until the heap's configuration changes or the module goes.  A
 * program's free still gives the pages back at once.  Bytes a kept page
 * holds are those of copies the node's programs could borrow: nothing a
 * slab's free slot does not keep as well; a zeroed object is zeroed by
 * its allocation, and a lazily filled copy discards what it finds
 * (odsm_store_discard()).
 */
int odsm_heap_free_kept(struct odsm_heap *h, u64 cgaddr)
{
	return heap_free(h, cgaddr, true);
}

/*
 * Is kept[cls] a block that is still free?  The allocator may have
 * handed it out again since (as a slab of any class, or in a run): it
 * stays named until another block replaces it, and its release then
 * leaves its pages to its objects.  Under heap->lock.
 */
static bool kept_free(struct odsm_heap *h, int cls)
{
	s32 b = h->kept[cls];

	return b >= 0 && !odsm_palloc_backed(&h->pa, h->pa.base +
					     ((u64)b << ODSM_BLOCK_SHIFT));
}

/*
 * How many blocks odsm_heap_free_kept() keeps now, at most (some may be
 * handed out again: odsm_heap_kept_free()), for the cache's shrinker: no
 * lock taken (reclaim may run under heap->lock).
 */
u32 odsm_heap_kept_blocks(struct odsm_heap *h)
{
	u32 n = 0;
	int i;

	for (i = 0; i < ODSM_NR_CLASSES; i++)
		n += READ_ONCE(h->kept[i]) >= 0;
	return n;
}

u32 odsm_heap_kept_free(struct odsm_heap *h)
{
	u32 n = 0;
	int i;

	lockdep_assert_held(&h->lock);
	for (i = 0; i < ODSM_NR_CLASSES; i++)
		n += kept_free(h, i);
	return n;
}

/*
 * Give back the pages of every block odsm_heap_free_kept() keeps: memory
 * is short (the cache's shrinker, through its reaper: reclaim may run
 * under heap->lock) or the admin drops the node's copies.  How many free
 * blocks went.  One handed out again meanwhile keeps its pages for its
 * new objects, as at any release (store_drop() skips backed blocks, and
 * checks under the lock: a configuration set since the blocks were read
 * finds none backed, as heap_free()'s release after its unlock does).
 */
u32 odsm_heap_drop_kept(struct odsm_heap *h)
{
	struct odsm_release rel = { .nr_blocks = 1 };
	s32 blk[ODSM_NR_CLASSES];
	u32 i, n = 0, nfree;

	mutex_lock(&h->lock);
	nfree = odsm_heap_kept_free(h);
	for (i = 0; i < ODSM_NR_CLASSES; i++)
		if (h->kept[i] >= 0)
			blk[n++] = h->kept[i];
	kept_reset(h);
	mutex_unlock(&h->lock);
	for (i = 0; i < n; i++) {
		rel.first_block = blk[i];
		release_blocks(h, &rel);
	}
	return nfree;
}

/*
 * Move the object at cgaddr to a fresh address: allocate the new object
 * and look the old one up under heap->lock, copy with the lock taken per
 * batch of pages (odsm_store_copy: a move of an object of up to part_size
 * must not stall every fault and PING), then, under the lock again, free
 * the old object if it is still the one copied.  A free or another move
 * of it meanwhile makes this one fail with -ESTALE, the new object given
 * back: nothing lost, nothing left twice.
 */
int odsm_heap_move(struct odsm_heap *h, u64 cgaddr, u64 *new_cgaddr)
{
	struct odsm_release rel = { 0 };
	struct odsm_objinfo oi, now;
	u64 usable, new;
	int ret;

	mutex_lock(&h->lock);
	ret = object_at(h, cgaddr, &oi);
	if (!ret)
		ret = odsm_palloc_alloc(&h->pa, oi.size, 0, new_cgaddr, &usable);
	if (!ret)
		odsm_store_publish(h, odsm_clear_color(*new_cgaddr));
	mutex_unlock(&h->lock);
	if (ret)
		return ret;
	new = odsm_clear_color(*new_cgaddr);

	ret = odsm_store_copy(h, new, odsm_color(*new_cgaddr), oi.addr,
			      oi.color, oi.size);

	mutex_lock(&h->lock);
	if (!ret) {
		ret = object_at(h, cgaddr, &now);
		if (!ret && now.color != oi.color)
			ret = -ESTALE;	/* freed, and a new one there */
	}
	if (!ret) {
		ret = odsm_palloc_free(&h->pa, cgaddr, &rel);
		WARN_ON_ONCE(ret);	/* looked up above, under the lock */
		odsm_store_publish(h, oi.addr);
	} else if (!odsm_palloc_lookup(&h->pa, new, &now) &&
		   now.color == odsm_color(*new_cgaddr)) {
		/* nothing lost: the old object stays, the new one goes */
		odsm_palloc_free(&h->pa, *new_cgaddr, &rel);
		odsm_store_publish(h, new);
	}
	mutex_unlock(&h->lock);
	if (!ret)
		odsm_stat_inc(ODSM_STAT_moves);
	release_blocks(h, &rel);
	return ret;
}

int odsm_heap_containing(struct odsm_heap *h, u64 addr,
			 struct odsm_objinfo *oi)
{
	int ret;

	mutex_lock(&h->lock);
	ret = odsm_palloc_containing(&h->pa, addr, oi);
	mutex_unlock(&h->lock);
	return ret;
}

int odsm_heap_obj_info(struct odsm_heap *h, u64 cgaddr,
		       struct odsm_objinfo *oi)
{
	int ret;

	mutex_lock(&h->lock);
	/* the color is not compared: none there now is gone, if it lived */
	ret = refusal(h, cgaddr, odsm_palloc_lookup(&h->pa, cgaddr, oi));
	mutex_unlock(&h->lock);
	return ret;
}

/*
 * The object at cgaddr and how many bytes from offset a FETCH of it sends
 * (len, or the whole object if it has at most whole bytes, clipped to its
 * end).  Caller holds h->lock.
 */
static int fetch_span(struct odsm_heap *h, u64 cgaddr, u64 offset, u32 len,
		      u32 whole, struct odsm_objinfo *oi, u32 *n)
{
	int ret = object_at(h, cgaddr, oi);

	if (!ret && offset > oi->size)
		ret = -EINVAL;
	if (!ret)
		*n = odsm_wire_fetch_span(oi->size, offset, len, whole);
	return ret;
}

/*
 * Copy the span (n bytes from offset) of the object oi into buf and mark
 * the object copied (only if the span is all of it, with
 * ODSM_FETCH_WHOLE).  Caller holds h->lock, taken since oi was looked up.
 */
static int fetch_copy(struct odsm_heap *h, const struct odsm_objinfo *oi,
		      u64 offset, void *buf, u32 n, u32 flags)
{
	int ret = 0;

	if (n)
		ret = odsm_store_rw_locked(h, oi->addr + offset, buf, n, false);
	if (!ret && (!(flags & ODSM_FETCH_WHOLE) || n == oi->size)) {
		odsm_palloc_set_copied(&h->pa, oi->addr);
		odsm_store_publish(h, oi->addr);
	}
	return ret;
}

/*
 * A peer's FETCH: bytes [offset, offset + len) of the live object that
 * starts at cgaddr, clipped to its end, read under the same lock as the
 * lookup so a concurrent free cannot hand the bytes of another object.  A
 * color older than the object's allocation color is a stale pointer to an
 * earlier object at that address: -ESTALE.  The object is marked copied
 * (odsm_palloc_set_copied): the peer may cache what it got.  With
 * ODSM_FETCH_WHOLE only if what it got is the whole object: a peer that
 * caches nothing less (a prefetch) leaves a bigger one unmarked, so the
 * owner boxes in it stay writable (odsm_heap_owner_rw()).
 */
int odsm_heap_fetch(struct odsm_heap *h, u64 cgaddr, u64 offset, void *buf,
		    u32 len, u32 whole, u32 flags, u64 *size, u16 *color,
		    u32 *got)
{
	struct odsm_objinfo oi;
	u32 n = 0;
	int ret;

	mutex_lock(&h->lock);
	ret = fetch_span(h, cgaddr, offset, len, whole, &oi, &n);
	if (!ret)
		ret = fetch_copy(h, &oi, offset, buf, n, flags);
	mutex_unlock(&h->lock);
	if (ret)
		return ret;
	*size = oi.size;
	*color = oi.color;
	*got = n;
	return 0;
}

/* Lookups of odsm_heap_fetch_alloc() before it gives up on a changing object */
#define FETCH_ALLOC_TRIES	4

/*
 * odsm_heap_fetch() into a buffer of headroom bytes and then exactly the
 * bytes sent, in *bufp to kvfree(): a home answers a first FETCH of a
 * 512-byte object with 512 bytes, not with the room for the largest
 * object that fits (ODSM_FIRST_WHOLE).
 *
 * The buffer is sized by a first lookup and allocated with the heap's
 * lock dropped (reclaim in a GFP_KERNEL allocation would hold up every
 * fault, allocation and FETCH of the node); the bytes are copied under
 * the lock again, from the object found then.  Only if that object's span
 * no longer fits (freed, and a larger one at the address with a color the
 * pointer still matches) is the buffer sized again: -EAGAIN after
 * FETCH_ALLOC_TRIES lookups.
 */
int odsm_heap_fetch_alloc(struct odsm_heap *h, u64 cgaddr, u64 offset,
			  u32 len, u32 whole, size_t headroom, void **bufp,
			  u64 *size, u16 *color, u32 *got)
{
	struct odsm_objinfo oi;
	unsigned int tries;
	u32 room, n = 0;
	void *mem;
	int ret;

	for (tries = 0; tries < FETCH_ALLOC_TRIES; tries++) {
		mutex_lock(&h->lock);
		ret = fetch_span(h, cgaddr, offset, len, whole, &oi, &room);
		mutex_unlock(&h->lock);
		if (ret)
			return ret;
		mem = kvmalloc(headroom + room, ODSM_GFP_REQ);
		if (!mem)
			return -ENOMEM;
		mutex_lock(&h->lock);
		ret = fetch_span(h, cgaddr, offset, len, whole, &oi, &n);
		if (!ret && n <= room)
			ret = fetch_copy(h, &oi, offset, mem + headroom, n, 0);
		mutex_unlock(&h->lock);
		if (!ret && n <= room) {
			*bufp = mem;
			*size = oi.size;
			*color = oi.color;
			*got = n;
			return 0;
		}
		kvfree(mem);
		if (ret)
			return ret;
	}
	return -EAGAIN;
}

/*
 * Read or write (op, ODSM_OWNER_*) the owner box (ODSM_BOX_SIZE bytes,
 * 16-aligned) at addr of this partition, inside a live object, atomically
 * with the check that no peer has been handed a copy of that object: a box
 * changed in an object whose copies live on elsewhere would be read stale
 * through them (the ownership rule, design.rst).  -EBUSY for such an
 * object, -EINVAL for a box that is not inside one live object's bytes,
 * -EEXIST for ODSM_OWNER_FILL of a box that owns something.  What the
 * owner of a box inside an object may do without borrowing the object
 * mutably.
 */
int odsm_heap_owner_rw(struct odsm_heap *h, u64 addr, void *box,
		       enum odsm_owner_op op)
{
	struct odsm_objinfo oi;
	u64 old[2];
	int ret;

	if (addr % ODSM_BOX_SIZE)
		return -EINVAL;
	mutex_lock(&h->lock);
	ret = odsm_palloc_containing(&h->pa, addr, &oi);
	/* within the object's bytes, not only its slot or run (addr >= oi.addr) */
	if (!ret && (oi.size < ODSM_BOX_SIZE ||
		     addr - oi.addr > oi.size - ODSM_BOX_SIZE))
		ret = -EINVAL;
	if (!ret && oi.copied)
		ret = -EBUSY;
	if (!ret && op == ODSM_OWNER_FILL) {
		ret = odsm_store_rw_locked(h, addr, old, sizeof(old), false);
		if (!ret && old[0])
			ret = -EEXIST;
	}
	if (!ret)
		ret = odsm_store_rw_locked(h, addr, box, ODSM_BOX_SIZE,
					   op != ODSM_OWNER_READ);
	mutex_unlock(&h->lock);
	if (ret == -EBUSY)
		odsm_stat_inc(ODSM_STAT_owner_refused);
	return ret;
}

/*
 * The first max blocks of the local partition's [from, end) that hold
 * objects, in address order, into out; how many.  What a new RDMA
 * connection registers for its peer up front (the whole partition), and
 * of a window a peer asks keys for, what is worth registering.
 */
u32 odsm_heap_backed_blocks(struct odsm_heap *h, u64 from, u64 end, u64 *out,
			    u32 max)
{
	u64 a, part = odsm_part_start(&h->geom, h->geom.node_id);
	u32 n = 0, i = 0;

	from = max(from, part);
	end = min(end, part + h->geom.part_size);
	mutex_lock(&h->lock);
	for (a = from; a < end && n < max; a += ODSM_BLOCK_SIZE) {
		if (odsm_palloc_backed(&h->pa, a))
			out[n++] = a;
		if (!(++i % 4096))
			cond_resched();
	}
	mutex_unlock(&h->lock);
	return n;
}
