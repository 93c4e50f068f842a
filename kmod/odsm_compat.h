/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Differences between the kernels odsm supports (6.1 .. 6.12).  Kbuild
 * probes the headers for each feature (ODSM_HAVE_*), as conftest scripts
 * do, rather than comparing version numbers that distributions backport
 * around.
 */
#ifndef _ODSM_COMPAT_H
#define _ODSM_COMPAT_H

#include <linux/mm.h>

#ifndef ODSM_HAVE_VM_FLAGS_SET
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma,
				  vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/*
 * Drop the lock a fault holds before returning VM_FAULT_RETRY: the VMA's
 * own (FAULT_FLAG_VMA_LOCK, 6.4+) or mmap_lock.
 */
static inline void odsm_release_fault_lock(struct vm_fault *vmf)
{
#ifdef ODSM_HAVE_RELEASE_FAULT_LOCK
	release_fault_lock(vmf);
#else
	mmap_read_unlock(vmf->vma->vm_mm);
#endif
}

#endif /* _ODSM_COMPAT_H */
