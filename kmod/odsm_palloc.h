/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Partition allocator: the bookkeeping of which objects live in this node's
 * partition and which color the next object at each address must start at.
 * (An emptied slab stays attached to its free block, so colors are spent
 * per address, not per block, while the block is reused for that class.)
 *
 * The partition is cut into 64 KiB blocks.  A block is free, a slab of one
 * size class, the head or a tail of a multi-block object, or retired.  Every
 * address remembers the first color a new object there may carry (per slot
 * in a slab, per block otherwise); a free raises it above the color the
 * object had, so a stale cached copy of an earlier object can never match a
 * later one at the same address.  When an address has used all 65536 colors
 * it is retired for good rather than wrapping.
 *
 * Pure bookkeeping: it never touches the objects' bytes, takes no locks (the
 * caller serializes) and builds into the host unit tests.
 */
#ifndef _ODSM_PALLOC_H
#define _ODSM_PALLOC_H

#include "odsm_portable.h"
#include "odsm_sizeclass.h"
#include "odsm_pubword.h"

enum odsm_block_kind {
	ODSM_BLK_FREE = 0,
	ODSM_BLK_SLAB,
	ODSM_BLK_HEAD,		/* first block of a multi-block object */
	ODSM_BLK_TAIL,
	ODSM_BLK_RETIRED,	/* every color used: never handed out again */
};

#define ODSM_COLOR_RETIRED	0x10000U	/* a floor past the last color */

struct odsm_slab {
	u32 nr_slots;
	u32 used;		/* live + retired slots */
	u32 hint;		/* where the next free-slot search starts */
	unsigned long *live;	/* bit per slot: allocated (or retired) */
	unsigned long *retired;
	unsigned long *copied;	/* live slot: copied into a peer's cache */
	u16 gen[];		/* free slot: first color of its next object;
				 * live slot: the color it was allocated with
				 */
};

struct odsm_block {
	u8 kind;
	u8 cls;			/* SLAB, FREE with history: size class */
	u16 color;		/* HEAD: allocation color */
	u32 floor;		/* first color a new object here may carry */
	u32 nr;			/* HEAD: blocks in the object; TAIL: how
				 * many blocks back its head is
				 */
	s32 prev, next;		/* SLAB: partial list of its class */
	u8 copied;		/* HEAD: copied into a peer's cache */
	union {
		u64 size;	/* HEAD: bytes requested */
		/* SLAB: its slots.  FREE: the slab it last was, or NULL:
		 * its per-slot colors carry on if a slab of the same class
		 * forms there again; anything else folds them into floor.
		 */
		struct odsm_slab *slab;
	};
};

struct odsm_palloc {
	u64 base;		/* global address of the partition */
	u64 size;
	u32 nr_blocks;
	u32 free_blocks;
	u32 rover;		/* next-fit start for block runs */
	s32 partial[ODSM_NR_CLASSES];	/* slabs with a free slot */
	s32 emptied[ODSM_NR_CLASSES];	/* last free block with a slab of
					 * the class as history: tried first
					 */
	struct odsm_block *blocks;
	/* gauges, read under the caller's lock */
	u64 objects;
	u64 bytes;		/* usable bytes of live objects */
	u64 slots_retired;
	u64 blocks_retired;
};

/* What a successful free gave back: whole blocks whose pages may go. */
struct odsm_release {
	u32 first_block;
	u32 nr_blocks;		/* 0: no block became free */
};

struct odsm_objinfo {
	u64 addr;		/* uncolored start */
	u64 size;		/* requested (slab objects: their usable size) */
	u64 usable;
	u16 color;		/* allocation color */
	bool copied;		/* a peer cached a copy of it (see below) */
};

int odsm_palloc_init(struct odsm_palloc *pa, u64 base, u64 size);
void odsm_palloc_destroy(struct odsm_palloc *pa);

/* -EINVAL for a bad size/align, -ENOMEM when nothing fits. */
int odsm_palloc_alloc(struct odsm_palloc *pa, u64 size, u32 align,
		      u64 *cgaddr, u64 *usable);

/* -EINVAL unless cgaddr is the start of a live object, with a color it had. */
int odsm_palloc_free(struct odsm_palloc *pa, u64 cgaddr,
		     struct odsm_release *rel);

/* The live object starting at cgaddr (color ignored), or -EINVAL. */
int odsm_palloc_lookup(const struct odsm_palloc *pa, u64 cgaddr,
		       struct odsm_objinfo *oi);

/*
 * The live object whose bytes [addr, addr + usable) hold the uncolored
 * address addr (any byte of it, not only its start), or -EINVAL.
 */
int odsm_palloc_containing(const struct odsm_palloc *pa, u64 addr,
			   struct odsm_objinfo *oi);

/*
 * Copies.  The home marks a live object when it hands its bytes to a peer
 * for that peer's cache: a copy keyed by the object's colored address may
 * then exist anywhere, for as long as the object lives, and the home can
 * never call it back.  Writes that do not change the object's color (the
 * write-back of an owner box it contains) are refused for such an object.
 * The mark goes with the object: a new object at the address starts clean.
 */
void odsm_palloc_set_copied(struct odsm_palloc *pa, u64 addr);

/*
 * Does the colored address cgaddr name an object that is gone: an earlier
 * object at a live object's start (a color below its allocation color), or
 * one freed (moved away) since, whose address has not been reused at a
 * color that high?  The -ESTALE of the ioctls and messages.
 */
bool odsm_palloc_stale(const struct odsm_palloc *pa, u64 cgaddr);

/* Is the byte at addr part of a block that holds objects (fault path)? */
bool odsm_palloc_backed(const struct odsm_palloc *pa, u64 addr);

/*
 * The size class of the slab that block b, now free, held last (the one a
 * slab of that class forms in first): -1 when b is not free or held none.
 */
int odsm_palloc_free_class(const struct odsm_palloc *pa, u32 b);

u64 odsm_palloc_max_alloc(const struct odsm_palloc *pa);

/*
 * Published words (odsm_pubword.h), what a peer's one-sided miss checks.
 * The word of the slot that starts at addr and its index in the block's
 * page: false when addr is no slot start of a slab (or an emptied slab
 * kept as history) whose class has words.  The start of a block that is
 * a run's head, free without slab history, or retired has the run word
 * (odsm_pub_run_word()), index 0.
 */
bool odsm_palloc_pub_slot(const struct odsm_palloc *pa, u64 addr, u32 *idx,
			  u32 *word);
/* Every word of the block holding addr into words[ODSM_PUB_WORDS] (0: none). */
void odsm_palloc_pub_fill(const struct odsm_palloc *pa, u64 addr, u32 *words);

#endif /* _ODSM_PALLOC_H */
