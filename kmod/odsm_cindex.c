// SPDX-License-Identifier: GPL-2.0
/*
 * The cache index (see odsm_cindex.h): a chained hash table of intrusive
 * nodes keyed by colored global address, and an LRU list of the nodes that
 * no borrow references.
 */
#include "odsm_cindex.h"

/* Fibonacci hashing: the top bits of key * 2^64/phi. */
static inline u32 cindex_hash(const struct odsm_cindex *ci, u64 key)
{
	return (u32)((key * 0x9e3779b97f4a7c15ULL) >> (64 - ci->shift));
}

static void lru_add_tail(struct odsm_cindex *ci, struct odsm_cnode *n)
{
	struct odsm_cnode *last = ci->lru.lprev;

	n->lprev = last;
	n->lnext = &ci->lru;
	last->lnext = n;
	ci->lru.lprev = n;
	ci->idle_entries++;
	ci->idle_bytes += n->bytes;
}

static void lru_del(struct odsm_cindex *ci, struct odsm_cnode *n)
{
	n->lprev->lnext = n->lnext;
	n->lnext->lprev = n->lprev;
	n->lprev = NULL;
	n->lnext = NULL;
	ci->idle_entries--;
	ci->idle_bytes -= n->bytes;
}

int odsm_cindex_init(struct odsm_cindex *ci, u32 shift)
{
	if (shift < 4 || shift > 24)
		return -EINVAL;
	memset(ci, 0, sizeof(*ci));
	ci->buckets = odsm_zalloc_array((size_t)1 << shift,
					sizeof(*ci->buckets));
	if (!ci->buckets)
		return -ENOMEM;
	ci->shift = shift;
	ci->lru.lprev = &ci->lru;
	ci->lru.lnext = &ci->lru;
	return 0;
}

void odsm_cindex_destroy(struct odsm_cindex *ci)
{
	odsm_free_array(ci->buckets);
	ci->buckets = NULL;
}

struct odsm_cnode *odsm_cindex_find(const struct odsm_cindex *ci, u64 key)
{
	struct odsm_cnode *n = ci->buckets[cindex_hash(ci, key)];

	while (n && n->key != key)
		n = n->hnext;
	return n;
}

void odsm_cindex_insert(struct odsm_cindex *ci, struct odsm_cnode *n)
{
	struct odsm_cnode **b = &ci->buckets[cindex_hash(ci, n->key)];

	n->hnext = *b;
	*b = n;
	n->lprev = NULL;
	n->lnext = NULL;
	ci->entries++;
	ci->bytes += n->bytes;
	if (!n->refs)
		lru_add_tail(ci, n);
}

void odsm_cindex_remove(struct odsm_cindex *ci, struct odsm_cnode *n)
{
	struct odsm_cnode **p = &ci->buckets[cindex_hash(ci, n->key)];

	while (*p && *p != n)
		p = &(*p)->hnext;
	if (!*p)
		return;		/* not indexed */
	*p = n->hnext;
	n->hnext = NULL;
	if (n->lnext)
		lru_del(ci, n);
	ci->entries--;
	ci->bytes -= n->bytes;
}

int odsm_cindex_get(struct odsm_cindex *ci, struct odsm_cnode *n)
{
	if (n->refs == U32_MAX)
		return -EOVERFLOW;
	if (!n->refs++ && n->lnext)
		lru_del(ci, n);
	return 0;
}

bool odsm_cindex_put(struct odsm_cindex *ci, struct odsm_cnode *n)
{
	if (!n->refs)
		return false;
	if (--n->refs)
		return false;
	lru_add_tail(ci, n);
	return true;
}

struct odsm_cnode *odsm_cindex_victim(const struct odsm_cindex *ci)
{
	return ci->lru.lnext == &ci->lru ? NULL : ci->lru.lnext;
}
