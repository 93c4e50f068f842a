// SPDX-License-Identifier: GPL-2.0
/*
 * The node-local page store behind this node's partition, and the fault
 * handler that maps it.
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
 * then locks and unlocks each one (waiting out any fault past its re-check)
 * and only then zaps the PTEs, so no PTE to a released page survives.
 */
#include <linux/mm.h>
#include <linux/highmem.h>
#include <linux/pagemap.h>
#include "odsm.h"

static inline pgoff_t store_index(const struct odsm_heap *h, u64 addr)
{
	return (addr - odsm_part_start(&h->geom, h->geom.node_id)) >> PAGE_SHIFT;
}

/*
 * The page behind partition page @idx, allocated if absent; with an extra
 * reference.  Caller holds heap->lock.
 */
static struct page *store_get_locked(struct odsm_heap *h, pgoff_t idx)
{
	struct page *page = xa_load(&h->pages, idx);
	void *old;

	if (page) {
		get_page(page);
		return page;
	}
	page = alloc_page(GFP_HIGHUSER | __GFP_ZERO);
	if (!page)
		return ERR_PTR(-ENOMEM);
	old = xa_store(&h->pages, idx, page, GFP_KERNEL);
	if (xa_is_err(old)) {
		__free_page(page);
		return ERR_PTR(xa_err(old));
	}
	atomic_long_inc(&h->nr_pages);
	odsm_stat_inc(ODSM_STAT_page_allocs);
	get_page(page);
	return page;
}

static vm_fault_t odsm_vm_fault(struct vm_fault *vmf)
{
	struct odsm_heap *h = &odsm_heap;
	u64 addr = vmf->address;
	struct page *page;
	pgoff_t idx;

	odsm_stat_inc(ODSM_STAT_faults);
	if (!odsm_range_is_local(&h->geom, addr, 1)) {
		odsm_stat_inc(ODSM_STAT_sigbus_remote);
		return VM_FAULT_SIGBUS;
	}
	idx = store_index(h, addr);

	mutex_lock(&h->lock);
	if (!odsm_palloc_backed(&h->pa, addr))
		page = ERR_PTR(-EFAULT);
	else
		page = store_get_locked(h, idx);
	mutex_unlock(&h->lock);

	if (IS_ERR(page)) {
		if (PTR_ERR(page) == -EFAULT) {
			odsm_stat_inc(ODSM_STAT_sigbus_unbacked);
			return VM_FAULT_SIGBUS;
		}
		odsm_stat_inc(ODSM_STAT_fault_enomem);
		return VM_FAULT_OOM;
	}

	lock_page(page);
	if (xa_load(&h->pages, idx) != page) {
		/* released meanwhile: let the access fault again */
		unlock_page(page);
		put_page(page);
		return VM_FAULT_NOPAGE;
	}
	vmf->page = page;
	return VM_FAULT_LOCKED;
}

static void odsm_vm_open(struct vm_area_struct *vma)
{
	atomic_inc(&odsm_heap.maps);
}

static void odsm_vm_close(struct vm_area_struct *vma)
{
	atomic_dec(&odsm_heap.maps);
}

/* The heap lives at one address in every process: it cannot move. */
static int odsm_vm_mremap(struct vm_area_struct *vma)
{
	return -EINVAL;
}

const struct vm_operations_struct odsm_vm_ops = {
	.open = odsm_vm_open,
	.close = odsm_vm_close,
	.mremap = odsm_vm_mremap,
	.fault = odsm_vm_fault,
};

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

static int zero_one(struct odsm_heap *h, pgoff_t idx, unsigned int off,
		    unsigned int n, void *arg)
{
	struct page *page = xa_load(&h->pages, idx);

	/* an absent page is zero when it is first touched */
	if (page)
		memzero_page(page, off, n);
	return 0;
}

/* Zero bytes of the local partition.  Caller holds heap->lock. */
int odsm_store_zero(struct odsm_heap *h, u64 addr, u64 len)
{
	lockdep_assert_held(&h->lock);
	return store_walk(h, addr, len, zero_one, NULL);
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
 * Copy len bytes between two non-overlapping local ranges whose blocks are
 * allocated.  Caller holds heap->lock.
 */
int odsm_store_copy(struct odsm_heap *h, u64 dst, u64 src, u64 len)
{
	struct copy_state cs = { .src = src };

	lockdep_assert_held(&h->lock);
	return store_walk(h, dst, len, copy_one, &cs);
}

/*
 * Give back the pages behind [addr, addr + len), whole pages of blocks that
 * no longer hold objects, and unmap them from every process.  Called
 * without heap->lock (it takes it); see the comment at the top for the
 * ordering against faults.
 */
void odsm_store_release(struct odsm_heap *h, u64 addr, u64 len)
{
	pgoff_t first = store_index(h, addr), last = first + (len >> PAGE_SHIFT);
	u64 file_off = addr - h->geom.base;
	struct page *page, **victims;
	unsigned long n = 0, i, idx;

	victims = kvmalloc_array(len >> PAGE_SHIFT, sizeof(*victims), GFP_KERNEL);

	mutex_lock(&h->lock);
	xa_for_each_range(&h->pages, idx, page, first, last - 1) {
		if (!victims) {
			/* no room to batch: keep the page; it is reused, and
			 * zeroed by ODSM_ALLOC_ZERO, when the block is
			 */
			continue;
		}
		xa_erase(&h->pages, idx);
		victims[n++] = page;
	}
	mutex_unlock(&h->lock);

	for (i = 0; i < n; i++) {
		lock_page(victims[i]);
		unlock_page(victims[i]);
	}
	if (n)
		unmap_mapping_range(h->inode->i_mapping, file_off, len, 1);
	for (i = 0; i < n; i++)
		put_page(victims[i]);
	atomic_long_sub(n, &h->nr_pages);
	odsm_stat_add(ODSM_STAT_page_frees, n);
	kvfree(victims);
}
