/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Global-address arithmetic and pointer colors (DRust Algorithm 3), shared by
 * the module, libodsm and the host unit tests.  No allocation, no locking:
 * every function is a few instructions on the values given.
 */
#ifndef _ODSM_ADDR_H
#define _ODSM_ADDR_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/errno.h>
#else
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#endif
#include "../uapi/linux/odsm.h"

/* The heap geometry one node was configured with. */
struct odsm_geom {
	__u64 base;		/* first byte of the heap */
	__u64 part_size;	/* bytes per partition */
	__u32 nr_nodes;
	__u32 node_id;		/* this node */
};

static inline __u16 odsm_color(__u64 cg)
{
	return (__u16)(cg >> ODSM_COLOR_SHIFT);
}

static inline __u64 odsm_clear_color(__u64 cg)
{
	return cg & ODSM_ADDR_MASK;
}

static inline __u64 odsm_with_color(__u64 cg, __u16 color)
{
	return odsm_clear_color(cg) | ((__u64)color << ODSM_COLOR_SHIFT);
}

static inline __u64 odsm_heap_end(const struct odsm_geom *g)
{
	return g->base + (__u64)g->nr_nodes * g->part_size;
}

static inline bool odsm_in_heap(const struct odsm_geom *g, __u64 addr)
{
	return addr >= g->base && addr < odsm_heap_end(g);
}

/* Node whose partition holds addr; only meaningful when odsm_in_heap(). */
static inline __u32 odsm_node_of(const struct odsm_geom *g, __u64 addr)
{
	return (__u32)((addr - g->base) / g->part_size);
}

static inline __u64 odsm_part_start(const struct odsm_geom *g, __u32 node)
{
	return g->base + (__u64)node * g->part_size;
}

/* Is the (uncolored) range [addr, addr + len) inside this node's partition? */
static inline bool odsm_range_is_local(const struct odsm_geom *g, __u64 addr,
				       __u64 len)
{
	__u64 lo = odsm_part_start(g, g->node_id);

	return addr >= lo && len <= g->part_size &&
	       addr - lo <= g->part_size - len;
}

/*
 * A configuration is usable when the whole heap lies in canonical user
 * space below user_top, partitions and base are ODSM_PART_ALIGN-aligned and
 * this node is one of the nodes.  Returns 0 or -EINVAL.
 *
 * The heap must also end at or below 1 << ODSM_COLOR_SHIFT, whatever
 * user_top says (5-level paging puts it at 2^56): an address with a bit in
 * 63..48 would be cut by odsm_clear_color().
 */
static inline int odsm_geom_check(const struct odsm_geom *g, __u64 user_top)
{
	if (user_top > (1ULL << ODSM_COLOR_SHIFT))
		user_top = 1ULL << ODSM_COLOR_SHIFT;
	if (g->nr_nodes == 0 || g->nr_nodes > ODSM_MAX_NODES ||
	    g->node_id >= g->nr_nodes)
		return -EINVAL;
	if (g->part_size == 0 || g->part_size > ODSM_MAX_PART_SIZE ||
	    g->part_size % ODSM_PART_ALIGN || g->base % ODSM_PART_ALIGN)
		return -EINVAL;
	/* keep the first 4 GiB free for the program itself */
	if (g->base < (4ULL << 30) || g->base >= user_top)
		return -EINVAL;
	if ((__u64)g->nr_nodes * g->part_size > user_top - g->base)
		return -EINVAL;
	return 0;
}

#endif /* _ODSM_ADDR_H */
