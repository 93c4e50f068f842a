/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm tied allocation: the layout of a group object and the arena
 * logic on its bytes (odsm_tbox_arena.c), which knows nothing of the
 * heap, so the host tests run it on plain buffers.
 *
 *   0                 the header (struct tg_hdr, ODSM_TGROUP_HDR bytes)
 *   ODSM_TGROUP_HDR   the parent (tg_hdr.parent bytes, a multiple of 16)
 *   then              the arena: children, each a struct tg_child header
 *                     and its bytes rounded up to 16, carved in order up
 *                     to tg_hdr.used; never given back but with the group
 *
 * Every offset counts from the group's start, so it stays right when the
 * group moves or grows.
 */
#ifndef ODSM_TBOX_INT_H
#define ODSM_TBOX_INT_H

#include <stddef.h>
#include <stdint.h>
#include "odsm_tbox.h"

#define TG_MAGIC	0x7462677270ULL	/* "tbgrp" */
#define TB_MAGIC	0x74626f78U	/* "tbox" */
/* what odsm_tgroup_drop() leaves in a local group's magic before the free */
#define TG_DEAD		0x64656164U	/* "dead" */

struct tg_hdr {
	uint64_t gid;		/* the group's first colored address */
	uint32_t magic;		/* (uint32_t)TG_MAGIC */
	uint32_t size;		/* the group's bytes (header included) */
	uint32_t parent;	/* the parent's bytes, a multiple of 16 */
	uint32_t used;		/* the arena's first free byte */
	uint32_t nchild;	/* children carved */
	uint32_t rsvd;
};

struct tg_child {
	/* TB_MAGIC ^ the child's offset: a header copied elsewhere (or a
	 * child's bytes that look like one) does not name a child there
	 */
	uint32_t magic;
	uint32_t size;		/* as allocated */
	uint32_t idx;		/* 0 for the first child carved, ... */
	uint32_t rsvd;
};

/* The group's bytes for parent and arena sizes; 0 past ODSM_TGROUP_MAX. */
size_t odsm__tg_size(size_t parent, size_t arena);
/* Lay out a zeroed group of size bytes (odsm__tg_size's) with id gid. */
void odsm__tg_init(void *g, uint32_t size, uint64_t gid, size_t parent);
/* odsm__tg_check(): in odsm_tbox.h (the inline borrows call it) */
/* Carve a child of size bytes: *off its bytes' offset; -ENOSPC. */
int odsm__tg_carve(void *g, size_t size, uint32_t *off);
/* 0 if c names a child of group g; -EXDEV, -ERANGE, -EINVAL. */
int odsm__tg_resolve(const void *g, const odsm_tbox *c);
/* Copy group src into dst, a zeroed group of size bytes (larger). */
int odsm__tg_grow(void *dst, uint32_t size, const void *src);

#endif /* ODSM_TBOX_INT_H */
