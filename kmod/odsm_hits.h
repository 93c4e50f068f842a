/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The cache's hit page: one page the module writes and every process maps
 * read-only (ODSM_HITS_OFFSET in <linux/odsm.h>), so that libodsm can serve
 * a borrow of a copy it already references from its own table without a
 * system call, and still learn, with one load, when that table must not be
 * trusted any more (copies were forgotten) or when the cache wants the
 * references the table keeps idle back.  See "Cache hits in user space"
 * in Documentation/odsm/design.rst.
 */
#ifndef _ODSM_HITS_H
#define _ODSM_HITS_H

#include <linux/mm_types.h>

int odsm_hits_init(void);
void odsm_hits_exit(void);

/* mmap of the page: -EINVAL (counted in mmap_refused) unless read-only */
int odsm_hits_mmap(struct vm_area_struct *vma);

/* Both from any context but an interrupt handler's. */
/* Copies were forgotten: no process may serve a hit it recorded before. */
void odsm_hits_forgot(void);
/* The cache needs room: processes return the references they keep idle. */
void odsm_hits_want(void);
/* This node joined a cluster as incarnation inc, or left it (0). */
void odsm_hits_node_inc(u64 inc);

#endif /* _ODSM_HITS_H */
