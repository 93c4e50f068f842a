// SPDX-License-Identifier: GPL-2.0
/*
 * The mapping front end: mmap of the heap at its fixed base, the VMA
 * operations and the fault handler.  A fault in this node's partition is
 * backed by the page store (odsm_store.c); a page of a lazily filled copy
 * is fetched by the cache first (odsm_cache.c).  So the store knows
 * nothing of the network, and the cache nothing of VMAs.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include "odsm.h"
#include "odsm_cache.h"
#include "odsm_compat.h"
#include "odsm_hits.h"

/*
 * A page of a lazily filled copy is fetched before it is mapped, which
 * takes up to the cluster's timeout_ms.  Not with mmap_lock held where the
 * fault may be retried: every other thread of the process would wait with
 * us (an mmap, a munmap, another fault's lookup...).  So, as filemap_fault
 * does for a read from disk, the lock is dropped (the file pinned: our
 * module stays), the page fetched, and VM_FAULT_RETRY sends the fault
 * round again, which then finds the page.  A fetch that failed is
 * remembered for that page: the retry (FAULT_FLAG_TRIED) answers SIGBUS
 * instead of fetching again.  With FAULT_FLAG_RETRY_NOWAIT we may not wait
 * at all; a fault that may not be retried fetches with the lock held.
 * On 6.12 a fault under the per-VMA lock (FAULT_FLAG_VMA_LOCK) never
 * reaches us (no ->map_pages: the core retries under mmap_lock), but
 * odsm_release_fault_lock() drops whichever lock the fault holds.
 * 0 to go on with the page store; else what the fault returns.
 */
static vm_fault_t lazy_fault(struct vm_fault *vmf, u64 addr)
{
	struct file *fpin;
	int ret = odsm_cache_lazy_check(addr);

	if (!ret)
		return 0;
	if (ret < 0)
		goto sigbus;
	if (!(vmf->flags & FAULT_FLAG_ALLOW_RETRY)) {
		if (odsm_cache_lazy_fault(addr, false))
			goto sigbus;
		return 0;
	}
	/* our own fetch, made with the lock dropped, failed */
	if ((vmf->flags & FAULT_FLAG_TRIED) && odsm_cache_lazy_error(addr))
		goto sigbus;
	if (vmf->flags & FAULT_FLAG_RETRY_NOWAIT)
		return VM_FAULT_RETRY;
	fpin = get_file(vmf->vma->vm_file);
	odsm_release_fault_lock(vmf);
	/* no VMA from here on: it may be unmapped meanwhile */
	odsm_cache_lazy_fault(addr, true);
	odsm_stat_inc(ODSM_STAT_lazy_unlocked);
	fput(fpin);
	return VM_FAULT_RETRY;

sigbus:
	odsm_stat_inc(ODSM_STAT_sigbus_lazy);
	return VM_FAULT_SIGBUS;
}

static vm_fault_t odsm_vm_fault(struct vm_fault *vmf)
{
	struct odsm_heap *h = &odsm_heap;
	u64 addr = vmf->address;
	struct page *page;
	vm_fault_t vret;
	int ret;

	odsm_stat_inc(ODSM_STAT_faults);
	if (!odsm_range_is_local(&h->geom, addr, 1)) {
		odsm_stat_inc(ODSM_STAT_sigbus_remote);
		return VM_FAULT_SIGBUS;
	}
	if (!odsm_store_present(h, addr)) {
		vret = lazy_fault(vmf, addr);
		if (vret)
			return vret;
	}
	ret = odsm_store_fault(h, addr, &page);
	switch (ret) {
	case 0:
		vmf->page = page;
		return VM_FAULT_LOCKED;
	case -EAGAIN:		/* released meanwhile: fault again */
		return VM_FAULT_NOPAGE;
	case -EFAULT:
		odsm_stat_inc(ODSM_STAT_sigbus_unbacked);
		return VM_FAULT_SIGBUS;
	case -ENODATA:		/* a lazy copy's page, not ours to zero-fill:
				 * a slot its borrow has not handed out yet
				 */
		odsm_stat_inc(ODSM_STAT_sigbus_lazy);
		return VM_FAULT_SIGBUS;
	case -ENOSPC:
		/*
		 * The store keeps its reserve to the rest of the machine:
		 * the heap is full, as a tmpfs at its size is.  Not
		 * VM_FAULT_OOM: pagefault_out_of_memory() runs no OOM killer
		 * outside a memory cgroup (6.1 and 6.12 alike) and the
		 * fault is retried, for ever while memory stays short.
		 */
		odsm_stat_inc(ODSM_STAT_fault_enomem);
		return VM_FAULT_SIGBUS;
	default:
		odsm_stat_inc(ODSM_STAT_fault_enomem);
		return VM_FAULT_OOM;
	}
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

static const struct vm_operations_struct odsm_vm_ops = {
	.open = odsm_vm_open,
	.close = odsm_vm_close,
	.mremap = odsm_vm_mremap,
	.fault = odsm_vm_fault,
};

/*
 * The heap has one address.  A caller that leaves the address to the kernel
 * gets the heap base, unless something already sits there: then -EEXIST,
 * as MAP_FIXED_NOREPLACE would say, rather than silently replacing it.
 */
unsigned long odsm_get_unmapped_area(struct file *filp, unsigned long addr,
				     unsigned long len, unsigned long pgoff,
				     unsigned long flags)
{
	const struct odsm_geom *g = &odsm_heap.geom;
	u64 size = (u64)g->nr_nodes * g->part_size;

	/* the hit page: only where the caller reserved room for it */
	if (pgoff == ODSM_HITS_OFFSET >> PAGE_SHIFT) {
		if ((flags & MAP_FIXED) && len == PAGE_SIZE &&
		    !(addr & ~PAGE_MASK))
			return addr;
		odsm_stat_inc(ODSM_STAT_mmap_refused);
		return -EINVAL;
	}
	/* no address is a hint, but not with MAP_FIXED: that one is at 0 */
	if (pgoff || len != size ||
	    ((addr || (flags & MAP_FIXED)) && addr != g->base)) {
		odsm_stat_inc(ODSM_STAT_mmap_refused);
		return -EINVAL;
	}
	if (!(flags & MAP_FIXED) &&
	    find_vma_intersection(current->mm, g->base, g->base + size)) {
		odsm_stat_inc(ODSM_STAT_mmap_refused);
		return -EEXIST;
	}
	return g->base;
}

int odsm_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct odsm_heap *h = &odsm_heap;
	u64 size;
	int ret = 0;

	if (vma->vm_pgoff == ODSM_HITS_OFFSET >> PAGE_SHIFT)
		return odsm_hits_mmap(vma);
	mutex_lock(&h->lock);
	size = (u64)h->geom.nr_nodes * h->geom.part_size;
	if (vma->vm_start != h->geom.base || vma->vm_end - vma->vm_start != size ||
	    vma->vm_pgoff || !(vma->vm_flags & VM_SHARED)) {
		ret = -EINVAL;
		odsm_stat_inc(ODSM_STAT_mmap_refused);
		goto out;
	}
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &odsm_vm_ops;
	atomic_inc(&h->maps);
	odsm_stat_inc(ODSM_STAT_mmaps);
out:
	mutex_unlock(&h->lock);
	return ret;
}
