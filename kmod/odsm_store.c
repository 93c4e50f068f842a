// SPDX-License-Identifier: GPL-2.0
/*
 * The node-local page store behind this node's partition, and the page a
 * fault maps (odsm_store_fault(); the fault handler is odsm_mmap.c's).
 *
 * Pages are allocated zeroed on first touch of a block that holds objects
 * and kept in an xarray indexed by page offset in the partition, so every
 * process of the node that maps the heap sees the same bytes.  A touch of
 * another node's partition, or of a local block that holds no object, gets
 * SIGBUS and a counter: never a page that would silently diverge from the
 * real owner's bytes.
 *
 * Race with release: a fault looks the page up (inserting it under
 * heap->lock), then locks the page and re-checks that the store still holds
 * it before handing it to the core mm, which installs the PTE before the
 * page is unlocked.  odsm_store_release() erases pages under heap->lock,
 * locks and unlocks each one (waiting out any fault past its re-check) and
 * zaps the PTEs, all before it drops heap->lock, so no PTE to a released
 * page survives and none is left when the block can be handed out again
 * (a write through a stale PTE would land in a page about to be dropped).
 * A block the cache emptied may instead keep its pages, and with them any
 * PTE to them, until it is released (odsm_heap_free_kept()): those pages
 * stay the store's, and a stale PTE reaches them as one reaches a free
 * slot of a slab that holds other objects.
 * Lock order: heap->lock -> page lock -> i_mmap_rwsem -> page table lock;
 * the fault handler takes the page lock only after dropping heap->lock.
 */
#include <linux/module.h>
#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/pagemap.h>
#include "odsm.h"

static inline pgoff_t store_index(const struct odsm_heap *h, u64 addr)
{
	return (addr - odsm_part_start(&h->geom, h->geom.node_id)) >> PAGE_SHIFT;
}

/*
 * An absent page of a lazily filled copy is not zero: its bytes are at the
 * object's home.  No zero page may be inserted there (a fault, a write or
 * an atomic would hide the object's bytes from every later touch), nor may
 * it be read as zeros: -ENODATA, the cache fetches it first.  The cache
 * registers the copy's pages before it discards what the slot held, so
 * once the discard is done nothing but a fill brings a page there.  Caller
 * holds heap->lock.
 */
static bool store_fill_only(struct odsm_heap *h, pgoff_t idx)
{
	bool (*fill_only)(u64 addr) = READ_ONCE(h->fill_only);

	lockdep_assert_held(&h->lock);
	return fill_only &&
	       fill_only(odsm_part_start(&h->geom, h->geom.node_id) +
			 ((u64)idx << PAGE_SHIFT));
}

/*
 * Where the store's pages are charged, and what happens when there is no
 * memory.  A heap page is user memory that happens to be shared through
 * the store's xarray rather than a file, so it is charged (__GFP_ACCOUNT)
 * to the memory cgroup of the task that makes it exist:
 *
 * - a fault: the faulting process.  The page is allocated with heap->lock
 *   dropped and with the flags anonymous memory gets, so a cgroup at its
 *   limit reclaims or runs its OOM killer as for any other user page;
 * - ODSM_IOC_WRITE, ODSM_IOC_ATOMIC, ODSM_IOC_MOVE and the fills of cached
 *   copies and moved objects: the calling process.  These allocate under
 *   heap->lock, so they may fail (__GFP_RETRY_MAYFAIL): the caller gets
 *   -ENOMEM, counted in store_enomem, and no OOM killer runs while every
 *   fault on the heap waits for the lock;
 * - a peer's WRITE, ATOMIC or MAP, served on the cluster's workqueue: a
 *   kernel worker of the root cgroup, which __GFP_ACCOUNT does not charge.
 *   A remote process has no cgroup here to charge; those pages are bounded
 *   by the partition's blocks that hold objects, and fail with -ENOMEM
 *   rather than wake the OOM killer on behalf of the network.
 */
#define STORE_GFP_FAULT		(GFP_HIGHUSER | __GFP_ZERO | __GFP_ACCOUNT)
#define STORE_GFP		(STORE_GFP_FAULT | __GFP_RETRY_MAYFAIL | \
				 __GFP_NOWARN)
/* the xarray's nodes for those pages */
#define STORE_XA_GFP_FAULT	GFP_KERNEL_ACCOUNT
#define STORE_XA_GFP		(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | \
				 __GFP_NOWARN)

/*
 * Long copies and zeroing take heap->lock for at most this many pages at a
 * time, so no fault or PING waits behind a whole object (issue 12).
 */
#define STORE_BATCH		16

/*
 * The store's pages belong to the node, not to a process: an OOM kill
 * gets none of them back.  Filled up to the last page the kernel would
 * give, the store would leave the next allocation anywhere to the OOM
 * killer, which then kills every process and panics (seen in a 256 MiB
 * guest: the shell, then init).  So the store refuses a page, -ENOMEM,
 * when less than store_reserve_mb MiB would stay available to the rest of
 * the machine (si_mem_available(): free and reclaimable memory).  0, the
 * default, means 1/16 of RAM, at least 16 MiB.
 */
static uint store_reserve_mb;
module_param(store_reserve_mb, uint, 0644);
MODULE_PARM_DESC(store_reserve_mb, "MiB of available memory the page store leaves to the rest of the machine: past it, new heap pages get -ENOMEM (a fault: SIGBUS; default 0: 1/16 of RAM, at least 16)");

static bool store_room(void)
{
	unsigned long reserve = READ_ONCE(store_reserve_mb);

	if (reserve)
		reserve <<= 20 - PAGE_SHIFT;
	else
		reserve = max(totalram_pages() / 16, 16UL << (20 - PAGE_SHIFT));
	return si_mem_available() > (long)reserve;
}

/*
 * A fresh page for the store, or ERR_PTR(): -ENOSPC when the store keeps
 * its reserve (store_room()), -ENOMEM when the allocation failed; both
 * counted in store_enomem.
 */
static struct page *store_alloc_page(gfp_t gfp)
{
	struct page *page;

	if (!store_room()) {
		odsm_stat_inc(ODSM_STAT_store_enomem);
		return ERR_PTR(-ENOSPC);
	}
	page = alloc_page(gfp);
	if (!page) {
		odsm_stat_inc(ODSM_STAT_store_enomem);
		return ERR_PTR(-ENOMEM);
	}
	return page;
}

/*
 * Insert @page (fresh, owned by the caller) at partition page @idx, which
 * is absent, allocating the xarray's nodes with @gfp (charged and failing
 * as the page's allocation does); returns it with an extra reference for
 * the caller, or an error (the page is freed).  Caller holds heap->lock.
 */
static struct page *store_insert_locked(struct odsm_heap *h, pgoff_t idx,
					struct page *page, gfp_t gfp)
{
	void *old = xa_store(&h->pages, idx, page, gfp);

	if (xa_is_err(old)) {
		__free_page(page);
		return ERR_PTR(xa_err(old));
	}
	atomic_long_inc(&h->nr_pages);
	odsm_stat_inc(ODSM_STAT_page_allocs);
	get_page(page);
	return page;
}

/*
 * The page behind partition page @idx, allocated if absent; with an extra
 * reference.  Caller holds heap->lock.
 */
static struct page *store_get_locked(struct odsm_heap *h, pgoff_t idx)
{
	struct page *page = xa_load(&h->pages, idx);

	lockdep_assert_held(&h->lock);
	if (page) {
		get_page(page);
		return page;
	}
	if (store_fill_only(h, idx))
		return ERR_PTR(-ENODATA);
	page = store_alloc_page(STORE_GFP);
	if (IS_ERR(page))
		return ERR_PTR(-ENOMEM);	/* what the ioctls say */
	return store_insert_locked(h, idx, page, STORE_XA_GFP);
}

/*
 * Is the object that starts at addr the one allocated with color, still
 * live?  Colors never repeat at an address, so (addr, allocation color)
 * names one object for good.  Caller holds heap->lock.
 */
static bool store_obj_live(struct odsm_heap *h, u64 addr, u16 color)
{
	struct odsm_objinfo oi;

	return !odsm_palloc_lookup(&h->pa, addr, &oi) && oi.color == color;
}

/*
 * The page of the local partition at addr for a fault: the store's page,
 * inserted on first touch, returned locked and referenced (*page).  -EFAULT
 * for an address in blocks that hold no object, -ENOSPC when the store
 * keeps its reserve (store_room()), -ENOMEM, or -EAGAIN when the page was
 * released meanwhile (the access faults again), -ENODATA for a page of a
 * lazily filled copy that was not fetched (store_fill_only()).
 */
int odsm_store_fault(struct odsm_heap *h, u64 addr, struct page **pagep)
{
	pgoff_t idx = store_index(h, addr);
	struct page *page, *fresh = NULL;
	unsigned long seq = 0;

	mutex_lock(&h->lock);
	for (;;) {
		seq = h->drop_seq;
		if (!odsm_palloc_backed(&h->pa, addr)) {
			page = ERR_PTR(-EFAULT);
			break;
		}
		page = xa_load(&h->pages, idx);
		if (page) {
			get_page(page);
			break;
		}
		if (store_fill_only(h, idx)) {
			page = ERR_PTR(-ENODATA);
			break;
		}
		if (fresh) {
			page = store_insert_locked(h, idx, fresh,
						   STORE_XA_GFP_FAULT);
			fresh = NULL;
			break;
		}
		/*
		 * Allocate (reclaim, perhaps the cgroup's OOM killer) with
		 * the lock dropped: no other fault waits for this one's
		 * memory.  Then look again: the block may have emptied, or
		 * another fault inserted the page.
		 */
		mutex_unlock(&h->lock);
		fresh = store_alloc_page(STORE_GFP_FAULT);
		if (IS_ERR(fresh))
			return PTR_ERR(fresh);
		mutex_lock(&h->lock);
	}
	mutex_unlock(&h->lock);
	if (fresh)
		__free_page(fresh);
	if (IS_ERR(page))
		return PTR_ERR(page);

	lock_page(page);
	/*
	 * Released meanwhile: gone from the store, or -- a page pinned for a
	 * peer stays in the store when its block empties, unmapped and
	 * zeroed -- a drop began since we looked (its lock and unlock of
	 * the page orders its count before our look here).
	 */
	if (xa_load(&h->pages, idx) != page || READ_ONCE(h->drop_seq) != seq) {
		unlock_page(page);
		put_page(page);
		return -EAGAIN;
	}
	*pagep = page;
	return 0;
}

/* Does the store hold the page of the local partition at addr? */
bool odsm_store_present(struct odsm_heap *h, u64 addr)
{
	return !!xa_load(&h->pages, store_index(h, addr));
}

/*
 * Walk [addr, addr + len) of the local partition page by page.  @fn gets
 * the page index, the offset and length inside the page.  Stops at the
 * first error.
 */
typedef int (*store_walk_fn)(struct odsm_heap *h, pgoff_t idx,
			     unsigned int off, unsigned int n, void *arg);

static int store_walk(struct odsm_heap *h, u64 addr, u64 len,
		      store_walk_fn fn, void *arg)
{
	while (len) {
		unsigned int off = offset_in_page(addr);
		unsigned int n = min_t(u64, len, PAGE_SIZE - off);
		int ret = fn(h, store_index(h, addr), off, n, arg);

		if (ret)
			return ret;
		addr += n;
		len -= n;
		cond_resched();
	}
	return 0;
}

/*
 * Zero the first len bytes of the live object at addr, allocated with
 * color: an object just allocated, before its address is handed out.
 * Called without heap->lock: it takes it for STORE_BATCH present pages at
 * a time (absent pages are zero when first touched, and are skipped
 * without a walk over them), each time checking the object still lives:
 * -ESTALE if it was freed meanwhile (by someone who guessed its address).
 */
int odsm_store_zero(struct odsm_heap *h, u64 addr, u16 color, u64 len)
{
	pgoff_t first = store_index(h, addr), idx = first;
	pgoff_t last = store_index(h, addr + len - 1);
	unsigned int n, off, end;
	struct page *page;
	unsigned long i;
	int ret = 0;

	if (!len)
		return 0;
	while (idx <= last && !ret) {
		n = 0;
		mutex_lock(&h->lock);
		if (!store_obj_live(h, addr, color)) {
			ret = -ESTALE;
		} else {
			xa_for_each_range(&h->pages, i, page, idx, last) {
				off = i == first ? offset_in_page(addr) : 0;
				end = i == last ?
				      offset_in_page(addr + len - 1) + 1 :
				      PAGE_SIZE;
				memzero_page(page, off, end - off);
				if (++n == STORE_BATCH)
					break;
			}
			idx = n == STORE_BATCH ? i + 1 : last + 1;
		}
		mutex_unlock(&h->lock);
		cond_resched();
	}
	return ret;
}

struct copy_state {
	u64 src;	/* next source byte */
};

static int copy_one(struct odsm_heap *h, pgoff_t idx, unsigned int off,
		    unsigned int n, void *arg)
{
	struct copy_state *cs = arg;
	unsigned int done = 0;
	struct page *dst = NULL;

	while (done < n) {
		unsigned int soff = offset_in_page(cs->src);
		unsigned int k = min_t(unsigned int, n - done, PAGE_SIZE - soff);
		struct page *src = xa_load(&h->pages, store_index(h, cs->src));

		/* zero source bytes land on a destination that may be absent
		 * (zero already) or present (must be zeroed)
		 */
		if (src || xa_load(&h->pages, idx)) {
			if (!dst) {
				dst = store_get_locked(h, idx);
				if (IS_ERR(dst))
					return PTR_ERR(dst);
			}
			if (src)
				memcpy_page(dst, off + done, src, soff, k);
			else
				memzero_page(dst, off + done, k);
		}
		done += k;
		cs->src += k;
	}
	if (dst)
		put_page(dst);
	return 0;
}

/*
 * Copy the first len bytes of the live object at src (allocated with
 * src_color) to the live object at dst (dst_color), which do not overlap:
 * a move.  Called without heap->lock: it takes it for STORE_BATCH pages
 * at a time, each time checking that both objects still live (-ESTALE
 * otherwise), so a fault or a PING answer waits for one batch, never for
 * a whole object of up to part_size.  Writes to src while it is copied are
 * the mover's own business: the owner moves an object it holds, and
 * stores through the mapping never took the lock anyway.
 */
int odsm_store_copy(struct odsm_heap *h, u64 dst, u16 dst_color, u64 src,
		    u16 src_color, u64 len)
{
	struct copy_state cs = { .src = src };
	u64 done = 0, n;
	int ret = 0;

	while (done < len && !ret) {
		n = min_t(u64, len - done, STORE_BATCH * PAGE_SIZE -
			  offset_in_page(dst + done));
		mutex_lock(&h->lock);
		if (!store_obj_live(h, src, src_color) ||
		    !store_obj_live(h, dst, dst_color))
			ret = -ESTALE;
		else
			ret = store_walk(h, dst + done, n, copy_one, &cs);
		mutex_unlock(&h->lock);
		done += n;
		cond_resched();
	}
	return ret;
}

/*
 * Give back the pages behind [addr, addr + len), blocks that a free just
 * emptied, and unmap them from every process.  Called without heap->lock;
 * it takes it for each batch.
 *
 * The free already dropped heap->lock, so a block of the range may have
 * been handed out again meanwhile: a page is erased only if its block
 * still holds no object, under the same lock as that check.  A reused
 * block keeps its pages (a new object there reads what the last one left,
 * as in a reused slab slot; ODSM_ALLOC_ZERO clears it), and no write to a
 * new object is ever lost.  Batches on the stack: nothing to allocate, so
 * nothing can fail.  See the comment at the top for the ordering of page
 * lock, unmap and put against a racing fault and a reallocation.
 */
static unsigned long pin_count(struct odsm_heap *h, pgoff_t idx)
{
	void *v = xa_load(&h->pinned, idx >> (ODSM_BLOCK_SHIFT - PAGE_SHIFT));

	return v ? xa_to_value(v) : 0;
}

bool odsm_store_block_pinned(struct odsm_heap *h, u32 blk)
{
	return pin_count(h, (pgoff_t)blk << (ODSM_BLOCK_SHIFT - PAGE_SHIFT));
}

/*
 * Pages of a block pinned by an RDMA registration stay in the store: they
 * are unmapped and zeroed instead of freed, so the registration and the
 * store keep naming the same pages (see odsm_store_pin).  Returns how many
 * pages were kept that way.
 */
static unsigned long store_drop(struct odsm_heap *h, u64 addr, u64 len,
				bool backed_too)
{
	u64 part = odsm_part_start(&h->geom, h->geom.node_id);
	pgoff_t idx = store_index(h, addr), end = idx + (len >> PAGE_SHIFT);
	struct page *page, *batch[32];
	unsigned long i, at[32], kept = 0;
	bool keep[32];
	unsigned int n, k, freed;

	while (idx < end) {
		n = 0;
		mutex_lock(&h->lock);
		/* before the pages' lock and unlock below: odsm_store_fault() */
		WRITE_ONCE(h->drop_seq, h->drop_seq + 1);
		xa_for_each_range(&h->pages, i, page, idx, end - 1) {
			if (!backed_too &&
			    odsm_palloc_backed(&h->pa, part + ((u64)i << PAGE_SHIFT)))
				continue;
			keep[n] = pin_count(h, i) != 0;
			if (!keep[n])
				xa_erase(&h->pages, i);
			at[n] = i;
			batch[n++] = page;
			if (n == ARRAY_SIZE(batch))
				break;
		}
		idx = n == ARRAY_SIZE(batch) ? at[n - 1] + 1 : end;
		if (!n) {
			mutex_unlock(&h->lock);
			continue;
		}

		/* unmap before the block can be handed out again */
		for (k = 0; k < n; k++) {
			lock_page(batch[k]);
			unlock_page(batch[k]);
		}
		unmap_mapping_range(h->inode->i_mapping,
				    part - h->geom.base + ((u64)at[0] << PAGE_SHIFT),
				    (u64)(at[n - 1] - at[0] + 1) << PAGE_SHIFT, 1);
		/* a pinned page starts its block's next object zeroed too */
		for (k = 0; k < n; k++)
			if (keep[k])
				clear_highpage(batch[k]);
		mutex_unlock(&h->lock);
		for (k = 0, freed = 0; k < n; k++) {
			if (keep[k]) {
				kept++;
				continue;
			}
			put_page(batch[k]);
			freed++;
		}
		atomic_long_sub(freed, &h->nr_pages);
		odsm_stat_add(ODSM_STAT_page_frees, freed);
		cond_resched();
	}
	return kept;
}

void odsm_store_release(struct odsm_heap *h, u64 addr, u64 len)
{
	store_drop(h, addr, len, false);
}

/*
 * Give back every page behind [addr, addr + len) of an object that its
 * allocator just handed out and nobody has seen yet, whatever a former
 * object there left: a lazily filled copy must start with no page at all.
 * -EBUSY when a pinned block kept (zeroed) pages: the range cannot be
 * filled lazily.
 */
int odsm_store_discard(struct odsm_heap *h, u64 addr, u64 len)
{
	return store_drop(h, addr, len, true) ? -EBUSY : 0;
}

/* A block's page of published words, from the allocator, little-endian. */
static void pub_fill(struct odsm_heap *h, u64 addr, void *page)
{
	u32 *w = page;
	unsigned int i;

	odsm_palloc_pub_fill(&h->pa, addr, w);
	for (i = 0; i < ODSM_PUB_WORDS; i++)
		cpu_to_le32s(&w[i]);
}

/*
 * Pin the 64 KiB block at addr of the local partition (which must hold an
 * object) for an RDMA registration: every page present (zeroed ones added
 * where absent), a reference on each in pages[ODSM_BLOCK_PAGES], and a pin
 * count that keeps store_drop from freeing them until odsm_store_unpin.
 * While pinned, a block that empties keeps its pages, zeroed, so a peer's
 * one-sided access never reaches a page the store no longer serves.
 *
 * *pub: the block's page of published slot words (odsm_pubword.h), with a
 * reference for the caller, or NULL when there was no memory for one (the
 * registration then goes without: peers' misses ask the home).  The first
 * pin fills it from the allocator; odsm_store_publish() keeps it current
 * while any pin lasts.  Takes heap->lock.
 */
int odsm_store_pin(struct odsm_heap *h, u64 addr, struct page **pages,
		   struct page **pub)
{
	struct page *page, *fresh;
	unsigned long n, blk;
	unsigned int i;
	pgoff_t idx;
	int ret;

	*pub = NULL;
	if (addr % ODSM_BLOCK_SIZE ||
	    !odsm_range_is_local(&h->geom, addr, ODSM_BLOCK_SIZE))
		return -EINVAL;
	idx = store_index(h, addr);
	blk = idx >> (ODSM_BLOCK_SHIFT - PAGE_SHIFT);
	/* allocated before the lock: most pins are a block's first */
	/* zeroed: a peer may read all of it, past the words too */
	fresh = alloc_page(GFP_KERNEL | __GFP_NOWARN | __GFP_ZERO);
	mutex_lock(&h->lock);
	ret = -EFAULT;
	if (!odsm_palloc_backed(&h->pa, addr))
		goto out;
	n = pin_count(h, idx);
	ret = xa_err(xa_store(&h->pinned, blk, xa_mk_value(n + 1),
			      GFP_KERNEL));
	if (ret)
		goto out;
	for (i = 0; i < ODSM_BLOCK_PAGES; i++) {
		page = store_get_locked(h, idx + i);
		if (IS_ERR(page)) {
			ret = PTR_ERR(page);
			goto err_undo;
		}
		pages[i] = page;
	}
	*pub = xa_load(&h->pubs, blk);
	if (!*pub && fresh &&
	    !xa_err(xa_store(&h->pubs, blk, fresh, GFP_KERNEL))) {
		/* the store's reference; the words from now on */
		pub_fill(h, addr, page_address(fresh));
		*pub = fresh;
		fresh = NULL;
	}
	if (*pub)
		get_page(*pub);
	mutex_unlock(&h->lock);
	if (fresh)
		__free_page(fresh);
	return 0;

err_undo:
	while (i--)
		put_page(pages[i]);
	if (n)
		xa_store(&h->pinned, blk, xa_mk_value(n), GFP_KERNEL);
	else
		xa_erase(&h->pinned, blk);
out:
	mutex_unlock(&h->lock);
	if (fresh)
		__free_page(fresh);
	return ret;
}

/*
 * The slot at addr (the start of an object, or of a slot an object just
 * left) changed in the allocator: rewrite its published word if its block
 * is pinned with a page of them.  Under heap->lock, as the change was.
 */
void odsm_store_publish(struct odsm_heap *h, u64 addr)
{
	struct page *pub;
	u32 idx, w;

	lockdep_assert_held(&h->lock);
	if (!odsm_range_is_local(&h->geom, addr, 1))
		return;
	pub = xa_load(&h->pubs, store_index(h, addr) >>
				(ODSM_BLOCK_SHIFT - PAGE_SHIFT));
	if (pub && odsm_palloc_pub_slot(&h->pa, addr, &idx, &w))
		WRITE_ONCE(((__le32 *)page_address(pub))[idx], cpu_to_le32(w));
}

/*
 * Undo one odsm_store_pin (pub as it gave it); an empty block then gives
 * its pages back, and the last pin takes the page of words with it.
 */
void odsm_store_unpin(struct odsm_heap *h, u64 addr, struct page **pages,
		      struct page *pub)
{
	pgoff_t idx = store_index(h, addr);
	unsigned long n, blk = idx >> (ODSM_BLOCK_SHIFT - PAGE_SHIFT);
	struct page *words = NULL;
	bool drop;
	unsigned int i;

	mutex_lock(&h->lock);
	n = pin_count(h, idx);
	if (n > 1) {	/* replaces a present entry: allocates nothing */
		xa_store(&h->pinned, blk, xa_mk_value(n - 1), GFP_KERNEL);
	} else {
		xa_erase(&h->pinned, blk);
		words = xa_erase(&h->pubs, blk);
	}
	drop = n <= 1 && !odsm_palloc_backed(&h->pa, addr);
	mutex_unlock(&h->lock);
	for (i = 0; i < ODSM_BLOCK_PAGES; i++)
		put_page(pages[i]);
	if (pub)
		put_page(pub);
	if (words)
		put_page(words);
	/* a block allocated meanwhile keeps its pages: store_drop skips it */
	if (drop)
		store_drop(h, addr, ODSM_BLOCK_SIZE, false);
}

/*
 * Insert pages holding buf's bytes at [addr, addr + len) of the local
 * partition, addr page aligned, where the store has no page yet; a page
 * already there (an earlier fill, or a write) is kept.  The tail of the
 * last page is zero.  Caller holds heap->lock.
 */
int odsm_store_fill_locked(struct odsm_heap *h, u64 addr, const void *buf,
			   u64 len)
{
	u64 done;

	lockdep_assert_held(&h->lock);
	for (done = 0; done < len; done += PAGE_SIZE) {
		pgoff_t idx = store_index(h, addr + done);
		unsigned int n = min_t(u64, len - done, PAGE_SIZE);
		struct page *page;

		if (xa_load(&h->pages, idx))
			continue;
		page = store_alloc_page(STORE_GFP);
		if (IS_ERR(page))
			return -ENOMEM;
		memcpy_to_page(page, 0, buf + done, n);
		page = store_insert_locked(h, idx, page, STORE_XA_GFP);
		if (IS_ERR(page))
			return PTR_ERR(page);
		put_page(page);
		odsm_stat_inc(ODSM_STAT_lazy_pages);
	}
	return 0;
}

/*
 * Is [addr, addr + len) inside this partition and inside blocks that hold
 * objects?  What a remote node, or a process through the read/write
 * ioctls, may touch.  Caller holds heap->lock.
 */
static bool range_backed(struct odsm_heap *h, u64 addr, u64 len)
{
	u64 a;

	if (!len || !odsm_range_is_local(&h->geom, addr, len))
		return false;
	for (a = addr; a < addr + len; a = (a | (ODSM_BLOCK_SIZE - 1)) + 1)
		if (!odsm_palloc_backed(&h->pa, a))
			return false;
	return true;
}

struct rw_state {
	u8 *buf;
	bool write;
};

static int rw_one(struct odsm_heap *h, pgoff_t idx, unsigned int off,
		  unsigned int n, void *arg)
{
	struct rw_state *st = arg;
	struct page *page;

	if (st->write) {
		page = store_get_locked(h, idx);
		if (IS_ERR(page))
			return PTR_ERR(page);
		memcpy_to_page(page, off, st->buf, n);
		put_page(page);
	} else {
		page = xa_load(&h->pages, idx);
		/* a lazy copy's page not fetched yet is not zero */
		if (!page && store_fill_only(h, idx))
			return -ENODATA;
		if (page)
			memcpy_from_page(st->buf, page, off, n);
		else
			memset(st->buf, 0, n);	/* never touched: zero */
	}
	st->buf += n;
	return 0;
}

/*
 * Copy between buf and [addr, addr + len) of the local partition, which
 * must lie in blocks that hold objects (-EINVAL otherwise).  The whole
 * range is checked first; then heap->lock is taken for STORE_BATCH pages
 * at a time, each batch checked again, so a long copy (a cached copy of a
 * large object) stalls no fault for longer than a batch.  A range freed
 * meanwhile stops the copy with -EINVAL, part of it done: the bytes of a
 * freed object are nobody's.
 */
/*
 * The object a guarded access must stay inside: the live object that
 * starts at addr, whatever its color.  0, or -EINVAL where none starts.
 */
int odsm_store_guard(struct odsm_heap *h, u64 addr, struct odsm_guard *g)
{
	struct odsm_objinfo oi;
	int ret;

	mutex_lock(&h->lock);
	ret = odsm_palloc_lookup(&h->pa, addr, &oi);
	mutex_unlock(&h->lock);
	if (ret)
		return -EINVAL;
	g->addr = oi.addr;
	g->len = oi.usable;
	g->color = oi.color;
	return 0;
}

/*
 * May an access of [addr, addr + len) go ahead under g (NULL: any in
 * blocks holding objects)?  0, -ESTALE when g's object is no longer the
 * one it was (freed, its address given to another), -EINVAL when the
 * range leaves it, or no object's block holds it.  Caller holds h->lock.
 */
static int guard_check(struct odsm_heap *h, const struct odsm_guard *g,
		       u64 addr, u64 len)
{
	if (g) {
		if (!store_obj_live(h, g->addr, g->color))
			return -ESTALE;
		if (addr < g->addr || len > g->len ||
		    addr - g->addr > g->len - len)
			return -EINVAL;
	}
	return range_backed(h, addr, len) ? 0 : -EINVAL;
}

int odsm_store_rw_guarded(struct odsm_heap *h, const struct odsm_guard *g,
			  u64 addr, void *buf, u64 len, bool write)
{
	struct rw_state st = { .buf = buf, .write = write };
	u64 done = 0, n;
	int ret;

	mutex_lock(&h->lock);
	ret = guard_check(h, g, addr, len);
	mutex_unlock(&h->lock);
	while (done < len && !ret) {
		n = min_t(u64, len - done, STORE_BATCH * PAGE_SIZE -
			  offset_in_page(addr + done));
		mutex_lock(&h->lock);
		ret = guard_check(h, g, addr + done, n);
		if (!ret)
			ret = store_walk(h, addr + done, n, rw_one, &st);
		mutex_unlock(&h->lock);
		done += n;
		cond_resched();
	}
	return ret;
}

int odsm_store_rw(struct odsm_heap *h, u64 addr, void *buf, u64 len,
		  bool write)
{
	return odsm_store_rw_guarded(h, NULL, addr, buf, len, write);
}

/* Copy what range_backed() accepts, with heap->lock held. */
int odsm_store_rw_locked(struct odsm_heap *h, u64 addr, void *buf, u64 len,
			 bool write)
{
	struct rw_state st = { .buf = buf, .write = write };

	lockdep_assert_held(&h->lock);
	return store_walk(h, addr, len, rw_one, &st);
}

/*
 * Does [addr, addr + len) of the local partition lie in blocks that hold
 * objects?  0 or -EINVAL; moves nothing.  (A multi-piece transfer checks
 * its whole range first; each piece is checked again when it moves.)
 */
int odsm_store_check(struct odsm_heap *h, u64 addr, u64 len)
{
	int ret;

	mutex_lock(&h->lock);
	ret = range_backed(h, addr, len) ? 0 : -EINVAL;
	mutex_unlock(&h->lock);
	return ret;
}

/*
 * Load the size-byte (4 or 8) aligned word at addr of the local
 * partition, which must lie in a block holding objects (-EINVAL
 * otherwise), as the processes that map its page see it: a page never
 * touched reads 0, a lazily filled copy's page not fetched is -ENODATA.
 */
int odsm_store_load_guarded(struct odsm_heap *h, const struct odsm_guard *g,
			    u64 addr, u32 size, u64 *val)
{
	pgoff_t idx = store_index(h, addr);
	struct page *page;
	void *kaddr;
	int ret = 0;

	if ((size != 4 && size != 8) || addr % size)
		return -EINVAL;
	mutex_lock(&h->lock);
	ret = guard_check(h, g, addr, size);
	if (ret)
		goto out;
	page = xa_load(&h->pages, idx);
	if (!page) {
		*val = 0;
		ret = store_fill_only(h, idx) ? -ENODATA : 0;
		goto out;
	}
	kaddr = kmap_local_page(page);
	if (size == 8)
		*val = READ_ONCE(*(u64 *)(kaddr + offset_in_page(addr)));
	else
		*val = READ_ONCE(*(u32 *)(kaddr + offset_in_page(addr)));
	kunmap_local(kaddr);
out:
	mutex_unlock(&h->lock);
	return ret;
}

int odsm_store_load(struct odsm_heap *h, u64 addr, u32 size, u64 *val)
{
	return odsm_store_load_guarded(h, NULL, addr, size, val);
}

/*
 * Run fn(word, arg) on the mapped word of size bytes at addr of the local
 * partition (its page made present), under heap->lock: 0, -EINVAL (not in
 * a block holding objects), -ESTALE (g's object gone), or the page's
 * allocation error.
 */
static int store_word_do(struct odsm_heap *h, const struct odsm_guard *g,
			 u64 addr, u32 size,
			 void (*fn)(void *word, void *arg), void *arg)
{
	struct page *page;
	void *kaddr;
	int ret = 0;

	mutex_lock(&h->lock);
	ret = guard_check(h, g, addr, size);
	if (ret)
		goto out;
	page = store_get_locked(h, store_index(h, addr));
	if (IS_ERR(page)) {
		ret = PTR_ERR(page);
		goto out;
	}
	kaddr = kmap_local_page(page);
	fn(kaddr + offset_in_page(addr), arg);
	kunmap_local(kaddr);
	put_page(page);
out:
	mutex_unlock(&h->lock);
	return ret;
}

struct word32_op {
	bool add;
	u32 val;
};

static void word32_do(void *word, void *arg)
{
	struct word32_op *op = arg;

	if (op->add)
		atomic_add(op->val, (atomic_t *)word);
	else		/* after the caller's writes into the partition */
		smp_store_release((u32 *)word, op->val);
}

/*
 * Store val into the 4-byte word at addr of the local partition (a
 * release: what the caller wrote into the partition before is seen
 * first), or add it atomically (add), as a CPU of this node would: the
 * processes that map the page see it.  Wakes no waiter: the caller does.
 */
int odsm_store_word32_guarded(struct odsm_heap *h, const struct odsm_guard *g,
			      u64 addr, bool add, u32 val)
{
	struct word32_op op = { .add = add, .val = val };

	if (addr % 4)
		return -EINVAL;
	return store_word_do(h, g, addr, 4, word32_do, &op);
}

int odsm_store_word32(struct odsm_heap *h, u64 addr, bool add, u32 val)
{
	return odsm_store_word32_guarded(h, NULL, addr, add, val);
}

struct atomic_op {
	u32 op;
	u64 operand, compare, old;
};

static void atomic_do(void *word, void *arg)
{
	struct atomic_op *a = arg;

	if (a->op == ODSM_ATOMIC_FETCH_ADD)
		a->old = atomic64_fetch_add(a->operand, (atomic64_t *)word);
	else
		a->old = atomic64_cmpxchg((atomic64_t *)word, a->compare,
					  a->operand);
}

/*
 * An atomic operation on the 8-byte word at addr of the local partition.
 * Processes of this node that map the page use CPU atomics on the same
 * physical word, so the two stay atomic with each other.
 */
int odsm_store_atomic(struct odsm_heap *h, u64 addr, u32 op, u64 operand,
		      u64 compare, u64 *old)
{
	struct atomic_op a = { .op = op, .operand = operand,
			       .compare = compare };
	int ret;

	if (addr % 8 || (op != ODSM_ATOMIC_FETCH_ADD && op != ODSM_ATOMIC_CMP_SWAP))
		return -EINVAL;
	ret = store_word_do(h, NULL, addr, 8, atomic_do, &a);
	if (!ret)
		*old = a.old;
	return ret;
}
