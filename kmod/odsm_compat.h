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

/*
 * io_uring commands.  6.6 moved struct io_uring_cmd to its own header and
 * gave it the whole SQE instead of the SQE's command area; 6.3 (and the
 * 6.1.y stable series) passed the issuer's flags to the task-work callback
 * and to io_uring_cmd_done(), and 6.7 made res2 a u64.
 */
#ifdef ODSM_HAVE_IO_URING_CMD_H
#include <linux/io_uring/cmd.h>

static inline const void *odsm_uring_cmd_area(const struct io_uring_cmd *c)
{
	return io_uring_sqe_cmd(c->sqe);
}
#else
#include <linux/io_uring.h>

static inline const void *odsm_uring_cmd_area(const struct io_uring_cmd *c)
{
	return c->cmd;
}
#endif

static inline void odsm_uring_cmd_done(struct io_uring_cmd *cmd, long ret,
				       unsigned int issue_flags)
{
#ifdef ODSM_HAVE_URING_TW_FLAGS
	io_uring_cmd_done(cmd, ret, 0, issue_flags);
#else
	io_uring_cmd_done(cmd, ret, 0);
#endif
}

#endif /* _ODSM_COMPAT_H */
