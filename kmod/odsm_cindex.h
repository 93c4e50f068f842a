/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The cache index: which remote objects this node holds a copy of, keyed by
 * *colored* global address, with the references that pin each copy and the
 * order in which unreferenced copies are reclaimed.
 *
 * DRust keeps a per-node hashmap from global address to (local copy,
 * reference count).  Because the key carries the color and every write
 * changes the color, a copy that went stale can never be found again: no
 * invalidation message is ever needed.  Unreferenced copies stay indexed
 * (a later borrow of the same version hits them) on an LRU list, oldest
 * first, until the cache needs room.
 *
 * Pure bookkeeping: intrusive nodes that the caller allocates and frees, no
 * locks (the caller serializes), no memory of its own but the bucket array.
 * Builds into the module and the host unit tests.
 */
#ifndef _ODSM_CINDEX_H
#define _ODSM_CINDEX_H

#include "odsm_portable.h"

struct odsm_cnode {
	u64 key;			/* colored global address */
	u64 bytes;			/* what the copy costs, for the budget */
	u32 refs;			/* borrows that pin it */
	struct odsm_cnode *hnext;	/* hash chain */
	struct odsm_cnode *lprev, *lnext; /* LRU, while refs == 0 */
};

struct odsm_cindex {
	struct odsm_cnode **buckets;
	u32 shift;			/* 1 << shift buckets */
	u64 entries, bytes;		/* every indexed copy */
	u64 idle_entries, idle_bytes;	/* those with no reference */
	struct odsm_cnode lru;		/* sentinel: lnext is the oldest */
};

/* 2^shift buckets, shift 4..24.  -EINVAL or -ENOMEM. */
int odsm_cindex_init(struct odsm_cindex *ci, u32 shift);
/* Frees the buckets only: the nodes are the caller's. */
void odsm_cindex_destroy(struct odsm_cindex *ci);

struct odsm_cnode *odsm_cindex_find(const struct odsm_cindex *ci, u64 key);
/* Index n (n->key not indexed yet), with n->refs references. */
void odsm_cindex_insert(struct odsm_cindex *ci, struct odsm_cnode *n);
void odsm_cindex_remove(struct odsm_cindex *ci, struct odsm_cnode *n);
/*
 * Take a reference; a copy with one leaves the LRU.  -EOVERFLOW, and no
 * change, when n already has U32_MAX: a count that wrapped to 0 would put
 * a copy in use on the LRU, where reclaim frees it under its borrowers.
 */
int odsm_cindex_get(struct odsm_cindex *ci, struct odsm_cnode *n);
/*
 * Drop a reference; true when it was the last: the copy joins the LRU as
 * its newest member.  A node with no reference is left alone (false).
 */
bool odsm_cindex_put(struct odsm_cindex *ci, struct odsm_cnode *n);
/* The oldest copy with no reference, or NULL: what to reclaim next. */
struct odsm_cnode *odsm_cindex_victim(const struct odsm_cindex *ci);

#endif /* _ODSM_CINDEX_H */
