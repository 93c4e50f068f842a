// SPDX-License-Identifier: GPL-2.0
/*
 * The mapping front end: mmap of the heap at its fixed base, the VMA
 * operations and the fault handler.  A fault in this node's partition is
 * backed by the page store (odsm_store.c); a page of a lazily filled copy
 * is fetched by the cache first (odsm_cache.c).  So the store knows
 * nothing of the network, and the cache nothing of VMAs.
 */
#include <linux/mm.h>
#include <linux/mman.h>
#include "odsm.h"
#include "odsm_cache.h"
#include "odsm_compat.h"

static vm_fault_t odsm_vm_fault(struct vm_fault *vmf)
{
	struct odsm_heap *h = &odsm_heap;
	u64 addr = vmf->address;
	struct page *page;
	int ret;

	odsm_stat_inc(ODSM_STAT_faults);
	if (!odsm_range_is_local(&h->geom, addr, 1)) {
		odsm_stat_inc(ODSM_STAT_sigbus_remote);
		return VM_FAULT_SIGBUS;
	}
	/* a page of a lazily filled copy is fetched before it is mapped */
	if (!odsm_store_present(h, addr) && odsm_cache_lazy_fault(addr)) {
		odsm_stat_inc(ODSM_STAT_sigbus_lazy);
		return VM_FAULT_SIGBUS;
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

	if (pgoff || len != size || (addr && addr != g->base)) {
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
