/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Published slot words: what a peer's one-sided borrow miss reads of an
 * object's state, instead of asking the home's CPU (a FETCH).
 *
 * A home that registers a 64 KiB block for one-sided access also keeps a
 * page of words for it, one 32-bit word per slot of the slab the block is
 * (for classes of at least ODSM_PUB_MIN_SLOT bytes, so that the slots fit
 * the page), registered right after the block's 16 pages in the same
 * memory region.  Each word says what the home's allocator says of its
 * slot: the class of the slab that wrote it, whether an object lives
 * there, the color it was allocated with, and whether the home has handed
 * a copy of it to a peer already (the copied mark).  The home rewrites a
 * slot's word under its heap lock whenever the slot changes; nothing else
 * writes it.
 *
 * A reader that knows the block's class reads the slot's word, the slot's
 * bytes and the word again, in that order on one queue pair (the
 * responder runs them in order): if both reads of the word are the same
 * and say "live, copied, this class, allocated with a color the pointer
 * may carry", no free, allocation or first copy happened while the bytes
 * were read (every one of them changes the word: colors only grow), and
 * the bytes are what a FETCH would have sent.  Anything else: the reader
 * asks with a FETCH, which also gives the precise error.  A reader that
 * read the word so before may leave out the read before the bytes
 * (odsm_pub_known()).
 *
 * Why only objects already copied: the copied mark makes the home refuse
 * in-place write-backs into boxes the object holds (design.rst, "Owner
 * boxes inside objects").  A one-sided read cannot set it, so the first
 * copy of an object is always a FETCH, which sets it; every later miss of
 * it, on any node, may be one-sided.
 *
 * Pure logic: builds into host tests.
 */
#ifndef _ODSM_PUBWORD_H
#define _ODSM_PUBWORD_H

#include "odsm_portable.h"
#include "odsm_sizeclass.h"

#define ODSM_PUB_BYTES		4096U	/* the page of words of a block */
#define ODSM_PUB_WORDS		(ODSM_PUB_BYTES / 4)
/* the smallest slot with a word: a block's slots fit the page */
#define ODSM_PUB_MIN_SLOT	(ODSM_BLOCK_SIZE / ODSM_PUB_WORDS)

#define ODSM_PUB_GEN_MASK	0xffffU		/* bits 0-15: color */
#define ODSM_PUB_CLS_SHIFT	16		/* bits 16-21: class + 1 */
#define ODSM_PUB_CLS_MASK	0x3fU
#define ODSM_PUB_LIVE		BIT(22)
#define ODSM_PUB_COPIED		BIT(23)

/* The word of a slot of class cls; 0 (no word) for a class without one. */
static inline u32 odsm_pub_word(int cls, bool live, bool copied, u16 gen)
{
	if (cls < 0 || cls >= ODSM_NR_CLASSES ||
	    odsm_class_size[cls] < ODSM_PUB_MIN_SLOT)
		return 0;
	return gen | (u32)(cls + 1) << ODSM_PUB_CLS_SHIFT |
	       (live ? ODSM_PUB_LIVE : 0) | (copied ? ODSM_PUB_COPIED : 0);
}

/*
 * A multi-block object (a run of blocks) has one word, the first of its
 * head block's page, with ODSM_PUB_RUN in place of the class: live and
 * copied as the object is, and its allocation color.  A block that is
 * free and no slab's (after a run's free, or never used), or retired,
 * has the run word "not live" there (with its floor, or 0), so that the
 * word of a freed head never stays live.  The object's size is not in
 * the word: a reader learns it from a FETCH, with the allocation color
 * it was for, and trusts it only for a word of exactly that color (the
 * same object: colors at an address only grow).
 */
#define ODSM_PUB_RUN		(ODSM_PUB_CLS_MASK - 1)	/* "class" of a run */
/*
 * The part of a run read in one chain with its word after it, three
 * blocks: four READs (one operation of the RDMA transport posts at most
 * RDMA_OS_WRS, five; a fourth block would leave the 256 KiB bounce buffer
 * no room for the word).  A longer run's other blocks are read before,
 * in operations of their own, and the largest run read one-sided is 1 MiB
 * (the cache's lazy threshold by default: longer copies are filled page
 * by page).
 */
#define ODSM_PUB_RUN_CHAIN	(3U * ODSM_BLOCK_SIZE)
#define ODSM_PUB_RUN_MAX	(16U * ODSM_BLOCK_SIZE)

static inline u32 odsm_pub_run_word(bool live, bool copied, u16 gen)
{
	return gen | (u32)(ODSM_PUB_RUN + 1) << ODSM_PUB_CLS_SHIFT |
	       (live ? ODSM_PUB_LIVE : 0) | (copied ? ODSM_PUB_COPIED : 0);
}

/*
 * May the bytes read between the words before and after be kept as the
 * copy of the run at a pointer of that color, whose size a FETCH gave for
 * the object of allocation color learnt?  Only if the words agree and say:
 * a run, live, copied, allocated with exactly learnt (the object whose
 * size is known), which is no newer than the pointer's color.
 */
static inline bool odsm_pub_run_usable(u32 before, u32 after, u16 learnt,
				       u16 color)
{
	return before == after &&
	       before == odsm_pub_run_word(true, true, learnt) &&
	       learnt <= color;
}

/* The class a word was written for, or -1 (no word). */
static inline int odsm_pub_class(u32 w)
{
	return (int)((w >> ODSM_PUB_CLS_SHIFT) & ODSM_PUB_CLS_MASK) - 1;
}

/*
 * May the bytes read between the words before and after be kept as the
 * copy of the object at a pointer of the given color, read as a slot of
 * class cls?  Only if the words agree and say: written for that class, live,
 * copied, allocated with a color no newer than the pointer's (a FETCH
 * refuses a pointer older than its object: -ESTALE).
 */
static inline bool odsm_pub_usable(u32 before, u32 after, int cls, u16 color)
{
	return before == after && before &&
	       odsm_pub_class(before) == cls &&
	       (before & ODSM_PUB_LIVE) && (before & ODSM_PUB_COPIED) &&
	       (before & ODSM_PUB_GEN_MASK) <= color;
}

/*
 * May a word this node read before (both reads of it equal and usable),
 * or that a FETCH of the object left (the FETCH sets the copied mark under
 * the home's heap lock and answers the allocation color), stand for the
 * read before the bytes, when a pointer of the given color
 * misses the slot again as class cls?  A word never comes back to a live
 * value it has left (every change of a slot changes it, colors only grow
 * and an address retires rather than wrapping, and the copied mark goes
 * only with a free; pubword_test checks it), so if the read after the
 * bytes finds the known word, the word held it from before the bytes were
 * read until then, and they are the object's as with both reads.  For
 * a word of exactly the pointer's color, or one read through a pointer of
 * exactly this color (seen: a written object's pointer is bumped past its
 * allocation color, a mutable borrow bumps it): a pointer of another
 * color is more likely an object that has replaced the known one, and
 * that read would be refused.  The colors only pick the words likely the
 * object's; odsm_pub_usable() is what keeps the read safe.  The word must
 * come from the incarnation of the home the bytes come from: a restarted
 * home starts its colors again.
 */
static inline bool odsm_pub_known(u32 known, u16 seen, int cls, u16 color)
{
	return odsm_pub_usable(known, known, cls, color) &&
	       ((known & ODSM_PUB_GEN_MASK) == color || seen == color);
}

/*
 * The slot (and so the word) of the object at offset off of its block, if
 * the block is a slab of class cls: false when off is no slot start of
 * that class, or past its last slot (a class need not divide the block:
 * a stale class guess can name an offset past the end).
 */
static inline bool odsm_pub_slot_of(u64 off, int cls, u32 *idx)
{
	u32 cs = odsm_class_size[cls];

	if (off >= ODSM_BLOCK_SIZE || off % cs ||
	    off / cs >= odsm_class_slots(cls))
		return false;
	*idx = (u32)(off / cs);
	return true;
}

/*
 * The class of a slab whose objects a FETCH says are size bytes (a slab's
 * objects are its slot size), or -1: no class with a word has that size.
 * A guess the words check: a wrong one is a miss that asks the home.
 */
static inline int odsm_pub_class_of_size(u64 size)
{
	int cls;

	for (cls = 0; cls < ODSM_NR_CLASSES; cls++)
		if (odsm_class_size[cls] == size)
			return odsm_class_size[cls] >= ODSM_PUB_MIN_SLOT ?
			       cls : -1;
	return -1;
}

#endif /* _ODSM_PUBWORD_H */
