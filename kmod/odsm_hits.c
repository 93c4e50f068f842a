// SPDX-License-Identifier: GPL-2.0
/*
 * The cache's hit page (see odsm_hits.h).
 *
 * The page holds two counters, written only here, read by libodsm on
 * every user-space hit and return, and this node's incarnation, which
 * its mutexes name in their lock words.  Nothing in it is read back by the
 * kernel, and user space cannot write it (the mapping is read-only and
 * VM_MAYWRITE is cleared, so mprotect() cannot make it writable): it
 * carries no trust from user space into the module.  What makes a
 * user-space hit safe is the reference the process's file holds on the
 * copy (libodsm keeps one per copy it serves hits of): reclaim never
 * frees a referenced copy, whatever the process does.
 */
#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/spinlock.h>
#include "odsm.h"
#include "odsm_compat.h"
#include "odsm_hits.h"
#include "odsm_stats.h"

static struct page *hits_page;
static DEFINE_SPINLOCK(hits_lock);	/* the counters' read-modify-write */

static struct odsm_hits_page *hp(void)
{
	return page_address(hits_page);
}

int odsm_hits_init(void)
{
	hits_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!hits_page)
		return -ENOMEM;
	hp()->features = ODSM_HITS_F_NODE_INC;
	return 0;
}

void odsm_hits_exit(void)
{
	/* a mapping still out holds its own reference on the page */
	__free_page(hits_page);
	hits_page = NULL;
}

/* A mapping of the page has no fault handler: vm_insert_page() filled it. */
static const struct vm_operations_struct hits_vm_ops = {};

int odsm_hits_mmap(struct vm_area_struct *vma)
{
	int ret;

	if (vma->vm_end - vma->vm_start != PAGE_SIZE ||
	    (vma->vm_flags & (VM_WRITE | VM_EXEC))) {
		odsm_stat_inc(ODSM_STAT_mmap_refused);
		return -EINVAL;
	}
	vm_flags_clear(vma, VM_MAYWRITE | VM_MAYEXEC);
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &hits_vm_ops;
	ret = vm_insert_page(vma, vma->vm_start, hits_page);
	if (ret)
		odsm_stat_inc(ODSM_STAT_mmap_refused);
	return ret;
}

/*
 * The release orders what the caller did before (a copy left the index)
 * before the new value: a process that sees the old value may still serve
 * a hit it recorded, which is what it could have done a moment earlier
 * with its reference; one that sees the new value serves none of them.
 */
static void bump(u64 *word)
{
	unsigned long flags;

	spin_lock_irqsave(&hits_lock, flags);
	/* pairs with libodsm's load-acquire of the epoch before a lookup */
	smp_store_release(word, READ_ONCE(*word) + 1);
	spin_unlock_irqrestore(&hits_lock, flags);
}

void odsm_hits_forgot(void)
{
	bump(&hp()->forget_epoch);
}

void odsm_hits_want(void)
{
	bump(&hp()->want_epoch);
}

/*
 * Under the cluster's join lock, so joins and leaves store in order; a
 * process that reads the old value names the incarnation it would have
 * asked ODSM_IOC_STATUS for a moment earlier.
 */
void odsm_hits_node_inc(u64 inc)
{
	/* pairs with libodsm's load-acquire before it names the node */
	smp_store_release(&hp()->node_incarnation, inc);
}
