/* SPDX-License-Identifier: GPL-2.0 */
/*
 * odsm module internals: the node's heap state shared by the device, the
 * fault handler, the allocator glue and sysfs.
 */
#ifndef _ODSM_H
#define _ODSM_H

#include <linux/mutex.h>
#include <linux/xarray.h>
#include <linux/atomic.h>
#include <linux/fs.h>
#include "odsm_addr.h"
#include "odsm_palloc.h"
#include "odsm_stats.h"

/*
 * A buffer sized by one request -- a user's ioctl or a peer's message --
 * and freed once it is answered.  Under memory pressure its allocation
 * fails, and the request gets -ENOMEM (a peer's, its error reply), rather
 * than wake the OOM killer: the memory such a kill frees is little (the
 * heap's pages belong to no process), and a peer's request must never
 * cost this node a process.  The page store's own pages are allocated the
 * same way (odsm_store.c).
 */
#define ODSM_GFP_REQ	(GFP_KERNEL | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)

/*
 * One per node (the module is a singleton: one heap per machine).
 *
 * Locking: @lock (a mutex: every holder may sleep to allocate) serializes
 * the configuration, the allocator and insertions into / removals from
 * @pages.  Every fault, allocator ioctl and a peer's PING answer take it,
 * so nothing holds it across work that grows with an object's size: a
 * move's copy, ALLOC_ZERO's zeroing and long reads and writes take it for
 * a batch of pages at a time (odsm_store.c), and a fault allocates its
 * page with it dropped.  Lookups in @pages are lockless (xarray RCU); the fault path
 * re-checks a page under its page lock to close the race with a free that
 * releases it (see odsm_store.c).  @geom changes only when no process has
 * the heap mapped (@maps == 0) and no object is allocated, so code running
 * on behalf of a mapping reads it without the lock.
 *
 * Lock order: mmap_lock -> heap->lock -> page lock -> i_mmap_rwsem (the
 * release of pages nests the last three; the fault handler takes a page
 * lock only with heap->lock released).  The fault handler and ->mmap run
 * under mmap_lock and take heap->lock, so nothing may touch user memory
 * (copy_{to,from}_user) while holding heap->lock: a fault on the heap
 * would take it again.
 */
struct odsm_heap {
	struct mutex lock;		/* see above */
	struct odsm_geom geom;
	struct odsm_palloc pa;
	struct xarray pages;		/* partition page index -> page */
	/* store_drop()s begun (under lock): a fault that took a page before
	 * one maps it only if none began since (odsm_store_fault())
	 */
	unsigned long drop_seq;
	struct xarray pinned;		/* block index -> pin count (value) */
	struct xarray pubs;		/* pinned block index -> its page of
					 * published slot words
					 */
	atomic_long_t nr_pages;
	/*
	 * Per size class, a free block whose pages the cache's free of its
	 * last copy left in place (odsm_heap_free_kept()), or -1.  Written
	 * under the lock, counted without it (odsm_heap_kept_blocks()).
	 */
	s32 kept[ODSM_NR_CLASSES];
	atomic_t maps;			/* live VMAs of the heap */
	struct inode *inode;		/* every open file's f_mapping */
	/*
	 * Set by the cache (odsm_cache.c): is the page at addr one of a
	 * lazily filled copy, which only odsm_store_fill_locked() may bring?
	 * Called under heap->lock; takes nothing but RCU.
	 */
	bool (*fill_only)(u64 addr);
};

extern struct odsm_heap odsm_heap;

/* Are the n reserved words of an ABI structure all zero? */
static inline bool odsm_reserved_zero(const u64 *r, size_t n)
{
	while (n--)
		if (r[n])
			return false;
	return true;
}

/* odsm_heap.c */
u64 odsm_user_top(void);

/* odsm_fs.c: the pseudo inode whose mapping all heap VMAs hang off */
struct inode *odsm_fs_inode_new(void);
void odsm_fs_inode_put(struct inode *inode);

/* odsm_heap.c: configuration and objects, all under heap->lock */
int odsm_heap_init(struct odsm_heap *h, const struct odsm_geom *g);
void odsm_heap_destroy(struct odsm_heap *h);
int odsm_heap_set_config(struct odsm_heap *h, const struct odsm_geom *g);
int odsm_heap_alloc(struct odsm_heap *h, u64 size, u32 align, u32 flags,
		    u64 *cgaddr, u64 *usable);
int odsm_heap_free(struct odsm_heap *h, u64 cgaddr);
int odsm_heap_free_kept(struct odsm_heap *h, u64 cgaddr);
u32 odsm_heap_drop_kept(struct odsm_heap *h);
u32 odsm_heap_kept_free(struct odsm_heap *h);	/* under heap->lock */
u32 odsm_heap_kept_blocks(struct odsm_heap *h);

int odsm_heap_move(struct odsm_heap *h, u64 cgaddr, u64 *new_cgaddr);
int odsm_heap_obj_info(struct odsm_heap *h, u64 cgaddr,
		       struct odsm_objinfo *oi);
u32 odsm_heap_backed_blocks(struct odsm_heap *h, u64 from, u64 end, u64 *out,
			    u32 max);
/* odsm_heap_fetch() flags: mark the object copied only if sent whole */
#define ODSM_FETCH_WHOLE	0x1
/* len, whole: as a FETCH's (odsm_wire_fetch_span()); buf takes the larger */
int odsm_heap_fetch(struct odsm_heap *h, u64 cgaddr, u64 offset, void *buf,
		    u32 len, u32 whole, u32 flags, u64 *size, u16 *color,
		    u32 *got);
int odsm_heap_fetch_alloc(struct odsm_heap *h, u64 cgaddr, u64 offset,
			  u32 len, u32 whole, size_t headroom, void **bufp,
			  u64 *size, u16 *color, u32 *got);
/* The live object at cgaddr, of at least its color: -ESTALE, -EINVAL. */
int odsm_heap_object(struct odsm_heap *h, u64 cgaddr, struct odsm_objinfo *oi);
#define ODSM_BOX_SIZE	16	/* an owner box: { colored address, ext } */
enum odsm_owner_op {
	ODSM_OWNER_READ,
	ODSM_OWNER_WRITE,
	ODSM_OWNER_FILL,	/* write into an empty box only */
};

int odsm_heap_owner_rw(struct odsm_heap *h, u64 addr, void *box,
		       enum odsm_owner_op op);
/* The live object whose bytes hold addr, or -EINVAL. */
int odsm_heap_containing(struct odsm_heap *h, u64 addr,
			 struct odsm_objinfo *oi);

/* odsm_store.c: the node-local page store behind the partition */
int odsm_store_zero(struct odsm_heap *h, u64 addr, u16 color, u64 len);
int odsm_store_fault(struct odsm_heap *h, u64 addr, struct page **pagep);
bool odsm_store_present(struct odsm_heap *h, u64 addr);
int odsm_store_copy(struct odsm_heap *h, u64 dst, u16 dst_color, u64 src,
		    u16 src_color, u64 len);
void odsm_store_release(struct odsm_heap *h, u64 addr, u64 len);
int odsm_store_discard(struct odsm_heap *h, u64 addr, u64 len);
int odsm_store_fill_locked(struct odsm_heap *h, u64 addr, const void *buf,
			   u64 len);
int odsm_store_rw_locked(struct odsm_heap *h, u64 addr, void *buf, u64 len,
			 bool write);
int odsm_store_rw(struct odsm_heap *h, u64 addr, void *buf, u64 len,
		  bool write);
int odsm_store_check(struct odsm_heap *h, u64 addr, u64 len);
int odsm_store_load(struct odsm_heap *h, u64 addr, u32 size, u64 *val);
int odsm_store_word32(struct odsm_heap *h, u64 addr, bool add, u32 val);
/*
 * Accesses that must stay inside one object, and only while it is the
 * same object (the live one allocated with color at addr): a module that
 * writes into memory a process named long ago (a delegation runtime's
 * lanes) must not write into whatever the heap put there since.  Each
 * checks the object under heap->lock with the access: -ESTALE once it is
 * gone, -EINVAL past its end.
 */
struct odsm_guard {
	u64 addr;		/* the object's uncolored start */
	u64 len;		/* its usable bytes */
	u16 color;		/* its allocation color */
};

int odsm_store_guard(struct odsm_heap *h, u64 addr, struct odsm_guard *g);
int odsm_store_rw_guarded(struct odsm_heap *h, const struct odsm_guard *g,
			  u64 addr, void *buf, u64 len, bool write);
int odsm_store_load_guarded(struct odsm_heap *h, const struct odsm_guard *g,
			    u64 addr, u32 size, u64 *val);
int odsm_store_word32_guarded(struct odsm_heap *h, const struct odsm_guard *g,
			      u64 addr, bool add, u32 val);
/* Pins of whole 64 KiB blocks for RDMA registrations (odsm_store.c). */
#define ODSM_BLOCK_PAGES	(ODSM_BLOCK_SIZE >> PAGE_SHIFT)
int odsm_store_pin(struct odsm_heap *h, u64 addr, struct page **pages,
		   struct page **pub);
void odsm_store_unpin(struct odsm_heap *h, u64 addr, struct page **pages,
		      struct page *pub);
void odsm_store_publish(struct odsm_heap *h, u64 addr);
/* Is block blk of the partition pinned?  Under heap->lock. */
bool odsm_store_block_pinned(struct odsm_heap *h, u32 blk);
int odsm_store_atomic(struct odsm_heap *h, u64 addr, u32 op, u64 operand,
		      u64 compare, u64 *old);

/* odsm_mmap.c: the mapping front end */
unsigned long odsm_get_unmapped_area(struct file *filp, unsigned long addr,
				     unsigned long len, unsigned long pgoff,
				     unsigned long flags);
int odsm_mmap(struct file *filp, struct vm_area_struct *vma);

/* odsm_dev.c */
void odsm_leave(void);
long odsm_dev_ioctl(struct file *filp, unsigned int cmd, unsigned long arg);
int odsm_dev_register(void);
void odsm_dev_unregister(void);

/* odsm_uring.c: io_uring commands, run on workers */
struct io_uring_cmd;
int odsm_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags);
int odsm_uring_init(void);
void odsm_uring_exit(void);

/*
 * odsm_abandon.c: should the operation this thread runs stop at its next
 * step: a fatal signal, or on a worker of a registered service (io_uring
 * commands) the program it works for going away (gone(current_work())).
 */
struct work_struct;
bool odsm_abandoned(void);
void odsm_abandon_register(bool (*gone)(struct work_struct *w));

/* odsm_sysfs.c */
int odsm_sysfs_init(void);
void odsm_sysfs_exit(void);

#endif /* _ODSM_H */
