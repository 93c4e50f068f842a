/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The node's cache of remote objects (DRust's per-node copies), and the
 * references that open files hold on them.
 *
 * A shared borrow of a remote object copies it into a slot of this node's
 * partition, indexed by the object's *colored* global address
 * (odsm_cindex.h).  Copies are never invalidated: a write anywhere changes
 * the color, so a stale copy is never found again.  An unreferenced copy
 * stays (a later borrow of the same version hits it) until the cache goes
 * over its budget or the kernel needs memory (the shrinker).  A copy of an
 * object of at least lazy_threshold bytes is filled page by page on first
 * touch (odsm_cache_lazy_fault(), from the fault handler), with read-ahead.
 */
#ifndef _ODSM_CACHE_H
#define _ODSM_CACHE_H

#include <linux/compiler.h>
#include <linux/types.h>
#include "odsm_core.h"

struct odsm_fref;		/* one open file's references */

/* Tunables (sysfs, root): see Documentation/ABI/testing/sysfs-kernel-odsm */
extern u64 odsm_cache_budget;		/* bytes of unreferenced copies kept */
extern u64 odsm_lazy_threshold;		/* objects this big are fetched lazily */
extern u32 odsm_readahead_pages;	/* pages one lazy fault fetches */

#define ODSM_LAZY_MIN		(64U << 10)	/* whole 64 KiB blocks only */
#define ODSM_READAHEAD_MAX	64U		/* one 256 KiB message */

int odsm_cache_init(void);
/* Every file is closed: free every copy. */
void odsm_cache_exit(void);

/*
 * A service that reads a missed object without the home's CPU (the
 * one-sided service, odsm_onesided.c) registers here at init and leaves
 * at exit: the cache sits below it and never calls it by name.
 */
struct odsm_miss_reader {
	/*
	 * The whole object at the colored address cg of node's partition
	 * into buf (room bytes): 0 with *size; -EMSGSIZE with *size when
	 * the object is more than room bytes (the cache calls again with
	 * room for it, up to ODSM_MISS_READ_MAX); -EOPNOTSUPP to ask with
	 * a FETCH instead; another -errno: the home is gone.  known_only:
	 * only an object this node knows to be copied already (from its
	 * FETCH or an earlier read), else -EOPNOTSUPP without reading.
	 */
	int (*copy)(u32 node, u64 cg, void *buf, u32 room, u64 *size,
		    bool known_only);
	/*
	 * a FETCH from node's incarnation inc said the object at cg is size
	 * bytes and was allocated with color
	 */
	void (*learn)(u32 node, u64 inc, u64 cg, u64 size, u16 color);
	/*
	 * len bytes at offset off of the multi-block object at cg (size
	 * bytes, allocated with color, as the FETCH of node's incarnation
	 * inc that made its lazily filled copy, or began its move, said)
	 * into buf: 0, -EOPNOTSUPP to ask with a FETCH instead, another
	 * -errno: the home is gone.  lazy: for a lazily filled copy's pages.
	 */
	int (*run_read)(u32 node, u64 inc, u64 cg, u64 size, u16 color,
			u64 off, void *buf, u32 len, bool lazy);
};

/*
 * The most room a miss reader gets: a slab's slot or a run of up to 16
 * blocks (odsm_pubword.h, ODSM_PUB_RUN_MAX); never for a copy that will
 * be filled lazily
 */
#define ODSM_MISS_READ_MAX	(16U * ODSM_BLOCK_SIZE)

void odsm_cache_set_miss_reader(const struct odsm_miss_reader *r);

/*
 * For a move: the whole object at cg of node's partition, read by the
 * miss reader (one-sided, where a miss could be, and only an object this
 * node knows the home has handed copies of, so write-backs into its boxes
 * are refused until it is freed: another would be a read wasted before
 * the FETCH) into *firstp, from odsm_first_alloc(), after the room of a
 * FETCH reply's fixed part
 * (a bigger buffer, up to ODSM_MISS_READ_MAX bytes of object, replaces it
 * if need be): 0 with *size, -EOPNOTSUPP to move it with FETCHes instead,
 * another -errno: the home is gone.  The caller checks the home's
 * incarnation after, as for any one-sided miss.
 */
int odsm_cache_read_whole(u32 node, u64 cg, void **firstp, u64 *size);
/*
 * For a move whose first FETCH (its reply and got bytes in first, from
 * node's incarnation inc) marked a multi-block object copied: the rest of
 * its size bytes into the local range at dst, read one-sided by the miss
 * reader where it can (the run's word after each piece), FETCHed from
 * where it cannot (odsm_fetch_rest()).  -EREMCHG: the home restarted
 * during a one-sided read (nothing can be kept).
 */
int odsm_cache_move_rest(u32 node, u64 inc, u64 cg, const void *first,
			 u32 got, u64 size, u64 dst);

struct odsm_fref *odsm_fref_new(void);
/* The file is closing: drop every reference it still holds. */
void odsm_fref_release(struct odsm_fref *f);

/*
 * Fetch up to ODSM_WIRE_FETCH_MANY_MAX objects of node, by colored address,
 * in one FETCH_MANY, into the cache as idle copies: a later borrow of each
 * hits.  Objects cached already, bigger than 2 KiB or refused by the home
 * are left to the borrow (which reports what is wrong).
 *
 * In two steps, so that one caller has the FETCH_MANYs of several homes
 * out at once: _start() sends it (1; 0 when the cache has every object
 * already: nothing to finish; or -errno), _finish() waits for the reply
 * and makes the copies (how many, or -errno when the request failed).
 * Every call started must be finished, by the thread that started it.
 */
struct odsm_prefetch_call {
	struct odsm_rpc_call rc;
	struct odsm_wire_fetch_many fm;
	u64 want[ODSM_WIRE_FETCH_MANY_MAX];
	u64 inc;
	u32 node;
	u8 *p, *rbuf;
};

int odsm_cache_prefetch_start(struct odsm_prefetch_call *pc, u32 node,
			      const u64 *cg, u32 n);
int odsm_cache_prefetch_finish(struct odsm_prefetch_call *pc);
long odsm_ioc_prefetch(void __user *arg);
/*
 * A shared borrow of the remote object at colored address cg, on node.
 * out: where to read it, its size, ODSM_BORROWED_HIT or _MISS.
 */
int odsm_cache_borrow(struct odsm_fref *f, u32 node, u64 cg, u64 *addr,
		      u64 *size, u32 *result);
/*
 * Drop one reference f holds on the copy of cg at addr (0: on the current
 * copy, else on one of a former incarnation): 0 or -ENOENT.
 */
int odsm_cache_return(struct odsm_fref *f, u64 cg, u64 addr);
/*
 * For a mutable borrow: make the cached copy of exactly cg the object (it
 * leaves the cache, its slot stays).  Only a complete copy that nobody else
 * references; with held, f's own reference on the copy at addr (0: any
 * copy of cg, the current one first) is consumed (and dropped if the copy
 * cannot be taken), -EINVAL if f holds none.  0 with the slot's colored
 * address and the
 * object's size, and the incarnation of the home the copy is of (where
 * the original is to be freed), or -ENOENT.  A copy of another
 * incarnation than the home's up one is never taken.
 */
int odsm_cache_take(struct odsm_fref *f, u64 cg, bool held, u64 addr,
		    u64 *local_cg, u64 *size, u64 *inc);
/*
 * Does a touch of addr need a fetch first?  1: addr lies in a lazily
 * filled copy (whose page the caller found absent); 0: no (no lazy copy
 * there, or the slot's tail past the object); -EHOSTDOWN: the copy's home
 * restarted, the page can never be had.  No lock needed, none taken long.
 */
int odsm_cache_lazy_check(u64 addr);
/*
 * If addr lies in a lazily filled copy whose page is not there yet, fetch
 * it (and read-ahead): 0 when the normal path may go on.  Sleeps up to the
 * cluster's timeout: the fault handler calls it with mmap_lock dropped
 * where it may, and then asks it to remember a failure (@remember) for the
 * fault's retry, which odsm_cache_lazy_error() then reports.
 */
int odsm_cache_lazy_fault(u64 addr, bool remember);
/* The error of the last failed fetch remembered for addr's page, or 0. */
int odsm_cache_lazy_error(u64 addr);
/*
 * Fill every absent page of a lazily filled copy in [addr, addr + len) of
 * the local partition before an access that does not fault (READ, atomics,
 * a peer's FETCH): such an access would otherwise read zeros, or insert a
 * zero page that no fault would ever fetch over.  0 or -errno.
 */
int odsm_cache_lazy_fill_range(u64 addr, u64 len);
/* A peer restarted (its addresses start over) or the cluster is left:
 * forget every copy of node's objects (U32_MAX: of every node).
 */
void odsm_cache_forget(u32 node);
/* Evict unreferenced copies until the cache fits its budget. */
void odsm_cache_trim(void);
/* Idle copies go to make room for size bytes (all: every idle one). */
bool odsm_cache_make_room(u64 size, bool all);

/*
 * Is the local object at addr a cached copy (not the caller's to free)?
 * A slot is one from its allocation until it is freed.  The answer holds
 * between odsm_cache_slots_hold() and odsm_cache_slots_release(), which
 * bracket the check and the heap operation it guards (a FREE, MOVE,
 * WRITE or ATOMIC on a caller's behalf): no slot is allocated meanwhile.
 */
bool odsm_cache_is_slot(u64 addr);
void odsm_cache_slots_hold(void);
void odsm_cache_slots_release(void);
/* Does [addr, addr + len) of this partition touch a cached copy's slot? */
bool odsm_cache_overlaps(u64 addr, u64 len);
bool odsm_cache_lazy_block(u64 addr);
/*
 * Does [addr, addr + len) of the local partition reach a lazily filled
 * copy?  A peer's request that does is refused (counted in lazy_refused):
 * a copy is this node's, not an object of the heap, and serving it would
 * mean fetching its pages from a third node first.
 */
bool odsm_cache_lazy_range(u64 addr, u64 len);

/* Gauges */
u64 odsm_cache_entries(void);
u64 odsm_cache_bytes(void);
int odsm_owner_rw_local(u64 addr, void *box, enum odsm_owner_op op);
/* Slots of the partition that hold copies (not objects of programs). */
u64 odsm_cache_copies(void);

/*
 * odsm_fetch.c: FETCH, the requester's side.
 *
 * One FETCH from one incarnation of node (-EREMCHG from another; inc 0:
 * any): up to len bytes of the object at cg from offset into buf, or the
 * rest whole when at most whole bytes are left from offset (buf has room
 * for the larger of len and whole).  out: the object's size, the bytes
 * got.  Checks the reply against cg.
 */
int odsm_fetch_at(u32 node, u64 inc, u64 cg, u64 offset, void *buf, u32 len,
		  u32 whole, u64 *size, u32 *got);
/*
 * A first FETCH of a miss or a move: the start of an object (one page of
 * reply), or all of one of up to ODSM_FIRST_WHOLE bytes, in one round trip
 */
#define ODSM_FIRST_FETCH	(PAGE_SIZE - ODSM_WIRE_FETCH_REPLY_SIZE)
#define ODSM_FIRST_WHOLE	(4 * PAGE_SIZE - ODSM_WIRE_FETCH_REPLY_SIZE)
/*
 * The buffer a miss or a move starts with ("first"): a FETCH reply's
 * fixed part and ODSM_FIRST_READ bytes, one page, which a one-sided read
 * fills (a bigger object gets a buffer of its size); before a FETCH,
 * odsm_first_grow() makes it room for ODSM_FIRST_WHOLE bytes.  One page
 * comes from the slab's per-CPU lists; four would come from the page
 * allocator on every miss (past SLUB's largest kmalloc cache), which was
 * a fifth of a one-sided miss's own work.
 */
#define ODSM_FIRST_READ		(PAGE_SIZE - ODSM_WIRE_FETCH_REPLY_SIZE)
void *odsm_first_alloc(void);
int odsm_first_grow(void **firstp);
/* The object's bytes [from, size) into the local range at dst (inc: as
 * odsm_fetch_at()), by chunks, several in flight.
 */
int odsm_fetch_rest(u32 node, u64 inc, u64 cg, u64 from, u64 size, u64 dst);

/* odsm_borrow.c: the ioctls of the ownership protocol */
long odsm_ioc_borrow(struct odsm_fref *f, void __user *arg);
long odsm_ioc_return(struct odsm_fref *f, void __user *arg);
long odsm_ioc_borrow_mut(struct odsm_fref *f, void __user *arg);
long odsm_ioc_write_back(void __user *arg);
long odsm_ioc_read_owner(void __user *arg);
long odsm_ioc_drop_copies(void __user *arg);
/* Wait for the frees of moved originals queued so far. */
void odsm_borrow_flush(void);

#endif /* _ODSM_CACHE_H */
