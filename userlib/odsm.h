/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm - the user-space side of odsm.
 *
 * One process-wide heap handle (odsm_init() opens /dev/odsm and maps the
 * global heap at its fixed base), allocation, and the DRust fat pointers:
 *
 *   odsm_box  the owner of an object      { colored global address, ext }
 *   odsm_ref  a shared (read) borrow      { colored global address, ext }
 *   odsm_mut  a mutable (write) borrow    { colored global address, ext }
 *
 * The color (bits 63..48 of the address) is the object's version: a write
 * bumps it, so a copy cached under an older colored address never matches
 * again.  ext is the extension word:
 *
 *   box  bits 47..4: a cached copy of the remote object it reads through
 *        (Algorithm 7), bits 63..48: the tag of the process holding the
 *        copy's reference (odsm_rt.tag), bit 0: the U bit
 *   ref  bits 47..4 and 63..48: the cached copy this borrow references
 *        (remote objects only) and the holder's tag, bit 1: the HIT bit
 *        (the reference is the process's table of hits', which counts
 *        this borrow: see odsm_hits_flush()), the other low bits 0
 *   mut  the address of the owner box to write the new colored address back
 *        to (a pointer in this process or a global address of the heap,
 *        bits 63..48 zero either way), bit 0: the U bit, bit 1: the AT
 *        bit (the box was named by its global address, odsm_borrow_mut_at:
 *        it is written back at its home, through the kernel's check)
 *
 * 0 in the copy bits means "no copy".  A copy reference belongs to the open
 * /dev/odsm file of the process that took it, so a copy word with another
 * process's tag (a fat pointer read out of the heap, written there by
 * another process or node) is ignored, never followed and never returned.
 * The U bit means "this entity already bumped the color in this epoch", so
 * a run of writes through the same owner or mut bumps it only once; a
 * shared borrow taken from it clears the bit.  A box that lives in the heap
 * never keeps the U bit: any process may read its address there and borrow
 * it without telling the owner, so each write through it starts a new
 * epoch.
 *
 * Borrowing an object of this node's partition never enters the kernel:
 * the functions below are inline and take a few instructions.  When a
 * color would pass 0xffff the object moves to a fresh address (one ioctl)
 * and starts again at the color the allocator gives that address.
 *
 * Every function that can fail returns 0 or a negative errno value;
 * odsm_strerror() turns it into a message.  A borrow that fails sets its
 * pointer out-parameter to NULL.
 */
#ifndef ODSM_USER_H
#define ODSM_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <linux/odsm.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct odsm_box { uint64_t g, ext; } odsm_box;
typedef struct odsm_ref { uint64_t g, ext; } odsm_ref;
typedef struct odsm_mut { uint64_t g, ext; } odsm_mut;

#define ODSM_EXT_U	1ULL	/* color already bumped in this epoch */
#define ODSM_EXT_AT	2ULL	/* mut: owner named by global address */
#define ODSM_EXT_HIT	2ULL	/* ref: counted in the table of hits */
/* a mut's flag bits: an owner box in process memory is 8-byte aligned */
#define ODSM_EXT_MUT_FLAGS	(ODSM_EXT_U | ODSM_EXT_AT)

/* Process-wide state, set by odsm_init(); read-only for callers. */
struct odsm_runtime {
	int fd;
	struct odsm_info info;
	uint64_t local_lo, local_hi;	/* this node's partition */
	uint64_t tag;	/* this process's copy-word tag: 1..0xffff, 0 before
			 * odsm_init()
			 */
};
extern struct odsm_runtime odsm_rt;

/*
 * libodsm's per-thread counts of the borrows served by its table of
 * cache hits (userlib/odsm_hits.c, design.rst "Cache hits in user
 * space"): the inline borrow and return below serve a hit of a copy this
 * thread used before with no call and no atomic read-modify-write.  The
 * library's own: the layout changes with its version.
 */
#define ODSM__TH_SLOTS	64
struct odsm__th_ent {
	uint64_t key;		/* colored address; 0: none */
	int64_t n;		/* borrows taken here minus returned here */
	uint64_t *rtag;		/* the tag word of the record counted */
	uint64_t tag;		/* its value when this entry was made */
	uint64_t copy, epoch;	/* the record's */
};
struct odsm__th {
	struct odsm__th_ent ent[ODSM__TH_SLOTS];
	const struct odsm_hits_page *page;
	uint64_t want;		/* the page's want_epoch this thread heeded */
	uint64_t hits, returns;
	struct odsm__th *next;	/* every thread's: never freed */
	int used;
};
/* initial-exec: an inline hit reads it with one load, no call */
#define ODSM__TLS_IE	__attribute__((tls_model("initial-exec")))
extern ODSM__TLS_IE __thread struct odsm__th *odsm__th;

/* Open ODSM_DEVICE_PATH (or $ODSM_DEVICE) and map the heap. */
int odsm_init(void);
/* Unmap and close; objects stay allocated (they belong to the node). */
void odsm_fini(void);

/* The message for a value returned by any odsm function (0 included). */
const char *odsm_strerror(int err);

/* Raw allocation in this node's partition: colored global address out. */
int odsm_alloc(size_t size, size_t align, unsigned int flags, uint64_t *cg);
int odsm_free(uint64_t cg);
int odsm_obj_info(uint64_t cg, struct odsm_obj_info *oi);
/* Move a local object to a fresh address; *cg is updated. */
int odsm_move(uint64_t *cg);
/* CAP_SYS_ADMIN: reconfigure the node while nothing is mapped. */
int odsm_set_config(const struct odsm_config *c);

/* ---- the cluster ------------------------------------------------------ */

/*
 * These work with or without odsm_init(): they use its file descriptor when
 * there is one and open the device for the call otherwise, so tools can call
 * them without mapping the heap.  Remote operations may also fail with
 * -EHOSTDOWN (the node that holds the address is down) or -ETIMEDOUT (it
 * did not answer within the cluster's timeout).
 */

/*
 * CAP_SYS_ADMIN: join a cluster of nr nodes (the configured node count),
 * nodes[i] being where node i's module listens, this node's own address
 * among them.  transport: ODSM_TRANSPORT_TCP or ODSM_TRANSPORT_RDMA;
 * key: the cluster secret, key_len ODSM_KEY_MIN..ODSM_KEY_MAX (16..64)
 * bytes, the same on every node (-ENOKEY without one); heartbeat_ms /
 * timeout_ms 0 take the module's defaults.
 */
int odsm_join(unsigned int transport, const struct odsm_node_addr *nodes,
	      unsigned int nr, const void *key, unsigned int key_len,
	      unsigned int heartbeat_ms, unsigned int timeout_ms);
/* CAP_SYS_ADMIN: leave the cluster (nothing happens if not joined). */
int odsm_leave(void);
/*
 * The cluster as this node sees it.  in: *nr entries of room at out (out
 * may be NULL when *nr is 0).  out: *nr = the node count (0 when not
 * joined; entries beyond the room given are not written), *transport (0
 * when not joined; may be NULL).
 */
int odsm_status(struct odsm_peer_info *out, unsigned int *nr,
		unsigned int *transport);

/*
 * Copy len bytes from / to any global address (colored or not), local or
 * remote.  The range must lie in one partition, in blocks holding objects.
 */
int odsm_read(uint64_t gaddr, void *buf, size_t len);
int odsm_write(uint64_t gaddr, const void *buf, size_t len);
/* Atomics on the 8-byte aligned word at gaddr; *old (may be NULL) gets
 * the value it had before.
 */
int odsm_fetch_add(uint64_t gaddr, uint64_t add, uint64_t *old);
int odsm_cmp_swap(uint64_t gaddr, uint64_t expect, uint64_t desired,
		  uint64_t *old);
/*
 * The same on a word of the NIC atomic domain (ODSM_ATOMIC_F_NIC): over
 * RDMA, a peer's run one-sided by the devices, never by the home's CPU.
 * Every atomic on such a word, on every node, must be one of these, and
 * nothing else may write it meanwhile (reads are fine).
 */
int odsm_fetch_add_nic(uint64_t gaddr, uint64_t add, uint64_t *old);
int odsm_cmp_swap_nic(uint64_t gaddr, uint64_t expect, uint64_t desired,
		      uint64_t *old);
/*
 * A futex for heap words (ODSM_IOC_WAIT / ODSM_IOC_WAKE).  odsm_word_wait
 * sleeps while the size-byte (4 or 8) word at gaddr, of this node's
 * partition, holds expect: 0 when woken (read the word again), -EAGAIN
 * when it did not hold expect, -ETIMEDOUT after timeout_ns (0: none),
 * -EINTR.  odsm_word_wake wakes up to nr (0: every) waiters of the word at
 * gaddr, of any node's partition (a peer's is woken by its home): the
 * number woken, or -errno.  A store wakes nobody by itself, whether a CPU
 * store or a peer's odsm_write() that went one-sided: the writer calls
 * odsm_word_wake() after it.
 */
int odsm_word_wait(uint64_t gaddr, unsigned int size, uint64_t expect,
		   uint64_t timeout_ns);
int odsm_word_wake(uint64_t gaddr, unsigned int nr);
/* An object in node's partition (ODSM_ALLOC_ON_NODE); flags may add
 * ODSM_ALLOC_ZERO.  Free it with odsm_free().
 */
int odsm_alloc_on(unsigned int node, size_t size, size_t align,
		  unsigned int flags, uint64_t *cg);
/* An object here if there is room, else on the up peer with the most
 * (ODSM_ALLOC_ANYWHERE).
 */
int odsm_alloc_anywhere(size_t size, size_t align, unsigned int flags,
			uint64_t *cg);

/* ---- colors and addresses (DRust Algorithm 3) ------------------------ */

static inline uint16_t odsm_color_of(uint64_t cg)
{
	return (uint16_t)(cg >> ODSM_COLOR_SHIFT);
}

static inline uint64_t odsm_addr_of(uint64_t cg)
{
	return cg & ODSM_ADDR_MASK;
}

static inline void *odsm_ptr(uint64_t cg)
{
	return (void *)(uintptr_t)odsm_addr_of(cg);
}

static inline bool odsm_is_local(uint64_t cg)
{
	uint64_t a = odsm_addr_of(cg);

	return a >= odsm_rt.local_lo && a < odsm_rt.local_hi;
}

static inline bool odsm_in_heap(uint64_t cg)
{
	uint64_t a = odsm_addr_of(cg);

	return a >= odsm_rt.info.heap_base &&
	       a - odsm_rt.info.heap_base < odsm_rt.info.heap_size;
}

#define ODSM_EXT_TAG_SHIFT	48
#define ODSM_EXT_LOW		15ULL	/* below the 16-byte alignment */

/*
 * The cached-copy address an ext word of a box or ref holds: 0 for none,
 * and for a copy word of another process (its reference is not ours).
 */
static inline uint64_t odsm__copy_of(uint64_t ext)
{
	uint64_t c = ext & ~ODSM_EXT_LOW;

	if ((c >> ODSM_EXT_TAG_SHIFT) != odsm_rt.tag)
		return 0;
	c &= ODSM_ADDR_MASK;
	/*
	 * A copy is in this node's partition: a word of another process
	 * that drew the same 16-bit tag, naming anything else, is not
	 * followed either (a tag is random, not unique)
	 */
	if (c < odsm_rt.local_lo || c >= odsm_rt.local_hi)
		return 0;
	return c;
}

/* The copy word for a cached copy at addr, tagged as this process's. */
static inline uint64_t odsm__copy_word(uint64_t addr)
{
	return addr | odsm_rt.tag << ODSM_EXT_TAG_SHIFT;
}

/* Whether the fat pointer at p lives in the heap (seen by every process). */
static inline bool odsm__in_heap_ptr(const void *p)
{
	return odsm_in_heap((uint64_t)(uintptr_t)p);
}

/*
 * Out-of-line slow paths of the inline functions below: the remote cases
 * (ioctls on odsm_rt.fd), color overflow, and the checking hooks.
 */
int odsm__bump_overflow(uint64_t *g);
int odsm__ref_fetch(odsm_ref *r);
int odsm__box_fetch(odsm_box *b);
int odsm__move_here(uint64_t *g, uint64_t *copy_ext);
int odsm__drop_copy(uint64_t g, uint64_t *ext);
int odsm__drop_ref(odsm_ref *r);
int odsm__write_back(uint64_t owner, uint64_t g, uint64_t ext);
/* The same two for a box named by its global address: the move keeps the
 * original (ODSM_MUT_KEEP_ORIGINAL), the write-back of the new address
 * frees it (ODSM_WB_FREE_OLD).
 */
int odsm__move_here_kept(uint64_t *g);
int odsm__write_back_moved(uint64_t owner, uint64_t g);

/*
 * Checking mode: build the program with -DODSM_CHECK and the inline
 * functions below report misuse of the borrow discipline (see
 * "Checking mode" in Documentation/odsm/libodsm.rst).  Without it they
 * call none of these and pay nothing.
 */
#define ODSM_CHK_BORROW		1	/* shared borrow taken */
#define ODSM_CHK_RETURN		2	/* shared borrow returned */
#define ODSM_CHK_USE		3	/* shared borrow dereferenced */
#define ODSM_CHK_MUT		4	/* mutable borrow taken */
#define ODSM_CHK_RETURN_MUT	5	/* mutable borrow returned */
#define ODSM_CHK_USE_MUT	6	/* mutable borrow dereferenced */
#define ODSM_CHK_OWNER_WRITE	7	/* owner writes without a borrow */
#define ODSM_CHK_REBORROW	8	/* shared borrow taken from a mut */
#define ODSM_CHK_OWNER_READ	9	/* owner reads without a borrow */
#define ODSM_CHK_OWNER_MOVE	10	/* owner transferred */
#define ODSM_CHK_FAILED		11	/* the borrow just taken failed */
#define ODSM_CHK_OWNER_DROP	12	/* owner dropped */
int odsm__check(int event, const void *who, uint64_t g);

/*
 * ODSM__CHECKED(): the checking hook's verdict on an event, 0 or the error
 * the call must fail with; each caller acts on it in plain sight.  Without
 * ODSM_CHECK it is the constant 0 (its arguments type-checked, never
 * evaluated), so the call and the branch on it disappear.
 * ODSM__UNDO(): a borrow that failed after its check is not out.
 */
#ifdef ODSM_CHECK
#define ODSM__CHECKED(ev, who, g) odsm__check(ev, who, g)
#define ODSM__UNDO(who) ((void)odsm__check(ODSM_CHK_FAILED, who, 0))
#else
#define ODSM__CHECKED(ev, who, g) ((void)sizeof(odsm__check(ev, who, g)), 0)
#define ODSM__UNDO(who) ((void)sizeof(odsm__check(ODSM_CHK_FAILED, who, 0)))
#endif

/* Bump the color of *g, moving the object when the color is spent. */
static inline int odsm__bump(uint64_t *g)
{
	if (__builtin_expect(odsm_color_of(*g) == ODSM_COLOR_MAX, 0))
		return odsm__bump_overflow(g);
	*g += 1ULL << ODSM_COLOR_SHIFT;
	return 0;
}

/* ---- owners ----------------------------------------------------------- */

/*
 * A new object of size bytes owned by *b, placed as DRust's allocator
 * places it: in this node's partition if there is room, else on the up
 * peer that reported the most free memory (ODSM_ALLOC_ANYWHERE; -ENOMEM
 * only when no node has room).  flags: ODSM_ALLOC_ZERO, and ODSM_BOX_HERE
 * for this node's partition or -ENOMEM (ODSM_ALLOC_ANYWHERE, the default,
 * is accepted too; both at once is -EINVAL).  odsm_box_new_on() places it
 * on a given node.
 */
#define ODSM_BOX_HERE	(1U << 16)	/* libodsm's: not an ODSM_ALLOC_* bit */
int odsm_box_new(odsm_box *b, size_t size, unsigned int flags);
/*
 * A new object of size bytes in node's partition (this node's included),
 * owned by *b, its first size bytes copied from init (NULL: none; flags
 * may ask for ODSM_ALLOC_ZERO) where it is: the object is not moved here
 * (as odsm_box_write() on a remote object would), so a program can build
 * data on the node that will use it.  Raw writes are right here: nobody
 * can have borrowed an object whose address was never handed out.
 */
int odsm_box_new_on(odsm_box *b, unsigned int node, size_t size,
		    unsigned int flags, const void *init);
/*
 * Store the owner *src into the empty owner box at the global address
 * owner (a box inside an object of any node that no node caches: a
 * directory; see "Owner boxes inside objects" in Documentation/odsm/
 * libodsm.rst): *src becomes empty.  -EEXIST when that box already owns
 * an object (it would leak), -EBUSY when the object holding the box has
 * copies on other nodes, -EINVAL for a bad address.  Into a field of an
 * object this process holds mutably, use odsm_box_transfer() on the field.
 */
int odsm_box_store_at(uint64_t owner, odsm_box *src);
/* Free the object (on its home node) and any copy *b holds; *b becomes
 * empty.  Refused (checking mode's -ENOTRECOVERABLE) while a checked
 * borrow of the object is out in this process.
 */
int odsm_box_drop(odsm_box *b);

/*
 * Ownership transfer: *dst takes the object, *src becomes empty.  A copy
 * the sender cached stays with the sender's node: its reference is
 * dropped here (DRust drops the sender's cached copy on transfer).
 */
static inline void odsm_box_transfer(odsm_box *dst, odsm_box *src)
{
	if (ODSM__CHECKED(ODSM_CHK_OWNER_MOVE, src, src->g))
		return;		/* reported; nothing moves */
	if (__builtin_expect(src->ext > ODSM_EXT_U, 0) &&
	    odsm__copy_of(src->ext))
		odsm__drop_copy(src->g, &src->ext);
	dst->g = src->g;
	dst->ext = 0;
	src->g = 0;
	src->ext = 0;
}

/*
 * Read through the owner without a borrow (DRust Algorithm 7): a remote
 * object is read from a copy in this node's cache, which the box keeps
 * (and references) in ext until it writes, transfers or drops.
 */
static inline int odsm_box_read(odsm_box *b, const void **p)
{
	uint64_t c;
	int ret;

	ret = ODSM__CHECKED(ODSM_CHK_OWNER_READ, b, b->g);
	if (ret) {
		*p = NULL;
		return ret;
	}
	if (__builtin_expect(!odsm_is_local(b->g), 0)) {
		c = odsm__copy_of(b->ext);
		if (!c) {
			ret = odsm__box_fetch(b);
			if (ret) {
				*p = NULL;
				return ret;
			}
			c = odsm__copy_of(b->ext);
		}
		*p = (const void *)(uintptr_t)c;
		return 0;
	}
	*p = odsm_ptr(b->g);
	return 0;
}

/*
 * Write through the owner without a borrow (DRust Algorithm 8): a remote
 * object moves here first (taking over the box's own cached copy when it
 * is the only reader of it), then the color is bumped once per epoch.
 */
static inline int odsm_box_write(odsm_box *b, void **p)
{
	int ret;

	ret = ODSM__CHECKED(ODSM_CHK_OWNER_WRITE, b, b->g);
	if (ret) {
		*p = NULL;
		return ret;
	}
	if (__builtin_expect(!odsm_is_local(b->g), 0)) {
		ret = odsm__move_here(&b->g, &b->ext);
		if (ret) {
			*p = NULL;
			return ret;
		}
	}
	if (!(b->ext & ODSM_EXT_U)) {
		ret = odsm__bump(&b->g);
		if (ret) {
			*p = NULL;
			return ret;
		}
		/* a box in the heap is read by others behind its back */
		if (!odsm__in_heap_ptr(b))
			b->ext |= ODSM_EXT_U;
	}
	*p = odsm_ptr(b->g);
	return 0;
}

/*
 * The colored address to hand another process or node (a directory word,
 * a message) so it can borrow the object: the owner's epoch ends, so its
 * next write bumps the color and a copy the receiver caches can never be
 * served after that write.  Copying b->g out by hand skips this.
 */
static inline uint64_t odsm_box_share(odsm_box *b)
{
	b->ext &= ~ODSM_EXT_U;
	return b->g;
}

/* ---- cache hits in user space ------------------------------------------- */

/*
 * The first shared borrow of a remote object's version in this process
 * takes a reference on the node's cached copy (one ioctl); a table of
 * this process then serves every later borrow of that colored address,
 * and takes every return, without a system call.  A reference the table
 * keeps for a copy no borrow reads (an idle one) goes back to the kernel
 * in batches: when a record is made while 64 exist, when the module asks
 * (its cache is over budget or short of memory: the next borrow of the
 * process gives them back), and here.  The number given back, or -EBADF
 * before odsm_init().
 */
int odsm_hits_flush(void);

/* What this process's table did since odsm_init(). */
struct odsm_hits_stats {
	uint64_t hits;		/* borrows served with no system call */
	uint64_t recorded;	/* references recorded (one BORROW each) */
	uint64_t returns;	/* returns taken with no system call */
	uint64_t given_back;	/* idle references given back (a RETURN each) */
	uint64_t idle;		/* idle references kept now */
};
void odsm_hits_stats(struct odsm_hits_stats *s);

/* ---- shared borrows (DRust Algorithm 2) -------------------------------- */

static inline unsigned int odsm__th_slot(uint64_t g)
{
	return (unsigned int)((g * 0x9e3779b97f4a7c15ULL) >> 52) &
	       (ODSM__TH_SLOTS - 1);
}

/*
 * A borrow of the remote colored address g served by this thread's entry
 * of it: counted there (a plain store, then the record's tag read back:
 * a give-back that claimed the record meanwhile makes it back out), the
 * copy in *copy.  false: ask the library (odsm__ref_fetch).
 */
static inline bool odsm__hit_fast(uint64_t g, uint64_t *copy)
{
	struct odsm__th *t = odsm__th;
	struct odsm__th_ent *e;
	int64_t n;

	if (!t)
		return false;
	e = &t->ent[odsm__th_slot(g)];
	if (e->key != g ||
	    __atomic_load_n(&t->page->want_epoch, __ATOMIC_RELAXED) != t->want ||
	    __atomic_load_n(&t->page->forget_epoch, __ATOMIC_ACQUIRE) != e->epoch)
		return false;
	n = e->n;
	__atomic_store_n(&e->n, n + 1, __ATOMIC_RELAXED);
	/* the count before the tag: the give-back's membarrier(2) pairs */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(e->rtag, __ATOMIC_RELAXED) != e->tag) {
		__atomic_store_n(&e->n, n, __ATOMIC_RELAXED);
		return false;
	}
	__atomic_store_n(&t->hits, t->hits + 1, __ATOMIC_RELAXED);
	*copy = e->copy;
	return true;
}

/*
 * The return of a borrow of g's copy through this thread's entry; false
 * (ask the library) also when the module asked for idle references.
 */
static inline bool odsm__hit_return_fast(uint64_t g, uint64_t copy)
{
	struct odsm__th *t = odsm__th;
	struct odsm__th_ent *e;

	if (!t)
		return false;
	e = &t->ent[odsm__th_slot(g)];
	/* the generation counted here (the flags may have changed) */
	if (e->key != g || e->copy != copy ||
	    (__atomic_load_n(e->rtag, __ATOMIC_RELAXED) >> 2) != e->tag >> 2 ||
	    __atomic_load_n(&t->page->want_epoch, __ATOMIC_RELAXED) != t->want)
		return false;
	__atomic_store_n(&e->n, e->n - 1, __ATOMIC_RELEASE);
	__atomic_store_n(&t->returns, t->returns + 1, __ATOMIC_RELAXED);
	return true;
}

/*
 * Where to read a shared borrow: a local object in place; a remote one
 * from this node's cache (the first call copies it there or finds the
 * copy, and ext keeps it until odsm_return()).
 */
static inline int odsm_ref_get(odsm_ref *r, const void **p)
{
	uint64_t c;
	int ret;

	ret = ODSM__CHECKED(ODSM_CHK_USE, r, r->g);
	if (ret) {
		*p = NULL;
		return ret;
	}
	if (__builtin_expect(!odsm_is_local(r->g), 0)) {
		c = odsm__copy_of(r->ext);
		if (!c && odsm__hit_fast(r->g, &c)) {
			r->ext = odsm__copy_word(c) | ODSM_EXT_HIT;
		} else if (!c) {
			ret = odsm__ref_fetch(r);
			if (ret) {
				*p = NULL;
				return ret;
			}
			c = odsm__copy_of(r->ext);
		}
		*p = (const void *)(uintptr_t)c;
		return 0;
	}
	*p = odsm_ptr(r->g);
	return 0;
}

/*
 * A new shared borrow *r: checked as event ev, then its first access; one
 * that fails is not out.
 */
static inline int odsm__ref_first(int ev, odsm_ref *r, const void **p)
{
	int ret;

	ret = ODSM__CHECKED(ev, r, r->g);
	if (ret) {
		*p = NULL;
		return ret;
	}
	ret = odsm_ref_get(r, p);
	if (__builtin_expect(ret != 0, 0))
		ODSM__UNDO(r);
	return ret;
}

/* Borrow the owner's object for reading; *p points at its bytes. */
static inline int odsm_borrow(odsm_box *b, odsm_ref *r, const void **p)
{
	b->ext &= ~ODSM_EXT_U;	/* the next write must bump again */
	r->g = b->g;
	r->ext = 0;
	return odsm__ref_first(ODSM_CHK_BORROW, r, p);
}

/* A shared borrow of what a mutable borrow holds (a reborrow). */
static inline int odsm_borrow_from_mut(odsm_mut *m, odsm_ref *r,
				       const void **p)
{
	m->ext &= ~ODSM_EXT_U;
	r->g = m->g;
	r->ext = 0;
	return odsm__ref_first(ODSM_CHK_REBORROW, r, p);
}

/*
 * A shared borrow of the object that the owner box *field, read out of an
 * object this process is reading (a shared borrow's bytes, which may be a
 * copy in this node's cache and are read-only), owns: Rust's &parent.field.
 * Only field->g counts: the box's ext word was written by whoever wrote
 * the box and means nothing here.
 */
static inline int odsm_borrow_field(const odsm_box *field, odsm_ref *r,
				    const void **p)
{
	r->g = field->g;
	r->ext = 0;
	return odsm__ref_first(ODSM_CHK_BORROW, r, p);
}

/* Another shared borrow from a shared borrow. */
static inline int odsm_ref_clone(const odsm_ref *src, odsm_ref *r,
				 const void **p)
{
	r->g = src->g;
	r->ext = 0;
	return odsm__ref_first(ODSM_CHK_BORROW, r, p);
}

/* End a shared borrow: a cached copy it referenced may be reclaimed. */
static inline int odsm_return(odsm_ref *r)
{
	int ret;

	ret = ODSM__CHECKED(ODSM_CHK_RETURN, r, r->g);
	if (ret)
		return ret;
	if (__builtin_expect(r->ext != 0, 0) &&
	    !((r->ext & ODSM_EXT_HIT) &&
	      odsm__hit_return_fast(r->g, odsm__copy_of(r->ext))))
		ret = odsm__drop_ref(r);
	r->g = 0;
	r->ext = 0;
	return ret;
}

/* ---- mutable borrows (DRust Algorithm 1 / 6) ---------------------------- */

/*
 * The owner box of a mutable borrow, if this process stores to it itself;
 * NULL for a box named by its global address (written back at its home).
 */
static inline odsm_box *odsm__owner_of(const odsm_mut *m)
{
	if (m->ext & ODSM_EXT_AT)
		return NULL;
	return (odsm_box *)(uintptr_t)(m->ext & ~ODSM_EXT_MUT_FLAGS);
}

/*
 * Where to write through a mutable borrow: a remote object moves here on
 * the first call (DRust: a mutable borrow moves the object); the color is
 * bumped once per epoch.  A move that lands on the last color is not
 * bumped: the bump would move the object again (odsm__bump_overflow), and
 * if that failed (-ENOMEM) the borrow would fail after its original was
 * freed at its home, with the owner still naming the original -- the
 * object lost.  It needs no bump: a moved object's colored address is
 * new (the allocator never hands one out twice), so no copy of it exists.
 */
static inline int odsm_mut_get(odsm_mut *m, void **p)
{
	odsm_box *owner;
	int ret;

	ret = ODSM__CHECKED(ODSM_CHK_USE_MUT, m, m->g);
	if (ret) {
		*p = NULL;
		return ret;
	}
	if (__builtin_expect(!odsm_is_local(m->g), 0)) {
		owner = odsm__owner_of(m);
		/* a box named by its address keeps naming the original
		 * until the write-back: a node that dies before loses its
		 * changes, never the object
		 */
		if (m->ext & ODSM_EXT_AT)
			ret = odsm__move_here_kept(&m->g);
		else
			ret = odsm__move_here(&m->g, owner && owner->g == m->g ?
						     &owner->ext : NULL);
		if (ret) {
			*p = NULL;
			return ret;
		}
		if (__builtin_expect(odsm_color_of(m->g) == ODSM_COLOR_MAX, 0))
			m->ext |= ODSM_EXT_U;
	}
	if (!(m->ext & ODSM_EXT_U)) {
		ret = odsm__bump(&m->g);
		if (ret) {
			*p = NULL;
			return ret;
		}
		m->ext |= ODSM_EXT_U;
	}
	*p = odsm_ptr(m->g);
	return 0;
}

/*
 * A new mutable borrow *m: checked as event ev, then its first access; one
 * that fails is not out.
 */
static inline int odsm__mut_first(int ev, odsm_mut *m, void **p)
{
	int ret;

	ret = ODSM__CHECKED(ev, m, m->g);
	if (ret) {
		*p = NULL;
		return ret;
	}
	ret = odsm_mut_get(m, p);
	if (__builtin_expect(ret != 0, 0))
		ODSM__UNDO(m);
	return ret;
}

/* Borrow the owner's object for writing; *p points at its bytes. */
static inline int odsm_borrow_mut(odsm_box *b, odsm_mut *m, void **p)
{
	m->g = b->g;
	m->ext = (uint64_t)(uintptr_t)b;	/* owner: for the write-back */
	return odsm__mut_first(ODSM_CHK_MUT, m, p);
}

/*
 * A mutable borrow of the object owned by the box at offset off of the
 * object the mutable borrow *parent holds: Rust's &mut parent.field.  The
 * parent is here first (odsm_mut_get() moves it and bumps its color), so
 * the box is written back in place and every node's copy of the parent
 * is of an older color.  This is how a box inside an object that other
 * nodes borrow is changed (the ownership rule, "Owner boxes inside
 * objects" in Documentation/odsm/libodsm.rst).  Return it before the
 * parent.
 */
static inline int odsm_borrow_mut_field(odsm_mut *parent, size_t off,
					odsm_mut *m, void **p)
{
	void *pp;
	int ret;

	if (off % 16) {
		*p = NULL;
		return -EINVAL;
	}
	ret = odsm_mut_get(parent, &pp);
	if (ret) {
		*p = NULL;
		return ret;
	}
	return odsm_borrow_mut((odsm_box *)((char *)pp + off), m, p);
}

/*
 * A mutable borrow through an owner box that lives in the heap at the
 * global address owner, on any node, inside an object no node caches (a
 * directory that nodes read with odsm_read()): the box is read at its
 * home (ODSM_IOC_READ_OWNER) and odsm_return_mut() writes it back there
 * (ODSM_IOC_WRITE_BACK).  Both are refused with -EBUSY once any node has
 * a copy of the object holding the box: changing it behind that copy
 * would be read stale through it; take odsm_borrow_mut_field() through a
 * mutable borrow of that object instead.  Like any mutable borrow it must
 * be the only one: nothing stops two nodes from taking the box at once,
 * and then the later write-back frees the object the earlier one moved
 * (a lost update).  Programs serialise them (an odsm_mutex does).
 */
int odsm__read_owner(uint64_t owner, uint64_t *g);

static inline int odsm_borrow_mut_at(uint64_t owner, odsm_mut *m, void **p)
{
	int ret;

	*p = NULL;
	if (owner % 16 || !odsm_in_heap(owner))
		return -EINVAL;
	ret = odsm__read_owner(owner, &m->g);
	if (ret)
		return ret;
	if (!m->g)
		return -EINVAL;		/* an empty box owns nothing */
	m->ext = owner | ODSM_EXT_AT;	/* written back at its home */
	return odsm__mut_first(ODSM_CHK_MUT, m, p);
}

/*
 * End the mutable borrow: the owner learns the (new) colored address.  A
 * plain store when the owner box is one this process stores to (its own,
 * or a field of an object it holds); for a box named by its global
 * address (odsm_borrow_mut_at), a write-back at the box's home, which may
 * refuse it (-EBUSY, see there): then the borrow stays out and *m still
 * holds the object, so nothing is lost.
 */
static inline int odsm_return_mut(odsm_mut *m)
{
	odsm_box *owner = odsm__owner_of(m);
	int ret;

	if (__builtin_expect(!owner && m->g, 0)) {
		/* a box in the heap keeps no U bit (see the top) */
		ret = odsm__write_back_moved(m->ext & ~ODSM_EXT_MUT_FLAGS,
					     m->g);
		if (ret)
			return ret;
	}
	ret = ODSM__CHECKED(ODSM_CHK_RETURN_MUT, m, m->g);
	if (ret)
		return ret;
	if (owner) {
		owner->g = m->g;
		/* the owner continues the mut's epoch: if a reader saw the
		 * mut's color (the U bit was cleared by a reborrow), the
		 * owner's next write must bump it again; and a box in the
		 * heap, read by others behind its back, always bumps.  A
		 * copy the owner cached is of an older version: the move
		 * consumed it.
		 */
		owner->ext &= ~ODSM_EXT_U;
		if (!odsm__in_heap_ptr(owner))
			owner->ext |= m->ext & ODSM_EXT_U;
	}
	m->g = 0;
	m->ext = 0;
	return 0;
}

/* ---- library counters ----------------------------------------------------- */

/*
 * What this process did that the kernel cannot count because it never
 * entered it: borrows of local objects.  Counted only in programs built
 * with ODSM_CHECK (counting costs the fast path an atomic add); the
 * kernel's counters (/sys/kernel/odsm/stats) count every remote event.
 */
struct odsm_lib_stats {
	uint64_t local_borrows;		/* shared borrows of local objects */
	uint64_t remote_borrows;	/* shared borrows of remote objects */
	uint64_t local_muts;		/* mutable borrows of local objects */
	uint64_t remote_muts;		/* mutable borrows that moved */
	uint64_t returns;		/* shared borrows returned */
	uint64_t returns_mut;		/* mutable borrows returned */
	uint64_t violations;		/* misuses the checking mode caught */
};
void odsm_lib_stats(struct odsm_lib_stats *st);

/*
 * Drop every idle copy in this node's cache (copies no borrow references),
 * after giving back the idle references of this process's table of hits
 * (odsm_hits_flush()): after a program freed its objects, /sys/kernel/odsm/stats/copies_in_use
 * shows what is left.  *dropped and *kept (either may be NULL): how many
 * went, how many are still referenced.
 */
int odsm_drop_copies(uint64_t *dropped, uint64_t *kept);

/*
 * A hint before borrowing many small remote objects (odsm_borrow_many()
 * gives it itself): fetch the objects at the n colored addresses g[] into
 * this node's cache, one round trip per home and 64 objects, so that
 * their borrows hit.  Local objects, cached ones, objects over 2 KiB and
 * ones their home refuses are skipped (their borrow says what is wrong).
 * The copies made, or -EINVAL (n 0 or over 1024), -EFAULT, -ENOTTY (a
 * module without it).
 */
int odsm_prefetch(const uint64_t *g, unsigned int n);

#ifdef __cplusplus
}
#endif

/* delegation: trustees run registered operations on entrusted objects */
#include "odsm_deleg.h"
/* names, start-up, barrier and mutex for programs on N nodes */
#include "odsm_sync.h"
/* remote execution and channels on top of it */
#include "odsm_spawn.h"
#include "odsm_chan.h"
/* shared immutable objects */
#include "odsm_arc.h"
/* tied allocation: children that live and move with their parent */
#include "odsm_tbox.h"

#endif /* ODSM_USER_H */
