// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm tied allocation: the arena logic on a group's bytes
 * (odsm_tbox_int.h).  Pure: no heap, no system call.  Whatever is read
 * here may be a copy of another node's object, or not a group at all,
 * so every field is checked before it is used as a bound.
 */
#include <errno.h>
#include <string.h>
#include "odsm_tbox_int.h"

#define TG_ALIGN	16U

static uint64_t round16(uint64_t n)
{
	return (n + TG_ALIGN - 1) & ~(uint64_t)(TG_ALIGN - 1);
}

size_t odsm__tg_size(size_t parent, size_t arena)
{
	uint64_t n;

	/* each bounded first: their sum cannot wrap */
	if (parent > ODSM_TGROUP_MAX || arena > ODSM_TGROUP_MAX)
		return 0;
	n = ODSM_TGROUP_HDR + round16(parent) + round16(arena);
	return n > ODSM_TGROUP_MAX ? 0 : (size_t)n;
}

void odsm__tg_init(void *g, uint32_t size, uint64_t gid, size_t parent)
{
	struct tg_hdr *h = g;

	h->gid = gid;
	h->magic = (uint32_t)TG_MAGIC;
	h->size = size;
	h->parent = (uint32_t)round16(parent);
	h->used = ODSM_TGROUP_HDR + h->parent;
	h->nchild = 0;
	h->rsvd = 0;
}

int odsm__tg_check(const void *g)
{
	const struct tg_hdr *h = g;
	uint64_t start;

	if (h->magic == TG_DEAD)
		return -ESTALE;
	if (h->magic != (uint32_t)TG_MAGIC || !h->gid)
		return -ENOTTY;
	start = (uint64_t)ODSM_TGROUP_HDR + h->parent;
	if (h->size > ODSM_TGROUP_MAX || h->size % TG_ALIGN ||
	    h->parent % TG_ALIGN || start > h->size ||
	    h->used < start || h->used > h->size || h->used % TG_ALIGN)
		return -ENOTTY;
	return 0;
}

int odsm__tg_carve(void *g, size_t size, uint32_t *off)
{
	struct tg_hdr *h = g;
	struct tg_child *c;
	uint64_t need;

	if (!size)
		return -EINVAL;
	if (size > ODSM_TGROUP_MAX)
		return -ENOSPC;
	need = ODSM_TBOX_HDR + round16(size);
	if (need > (uint64_t)h->size - h->used)
		return -ENOSPC;
	c = (struct tg_child *)((char *)g + h->used);
	*off = h->used + ODSM_TBOX_HDR;
	c->magic = TB_MAGIC ^ *off;
	c->size = (uint32_t)size;
	c->idx = h->nchild;
	c->rsvd = 0;
	memset((char *)g + *off, 0, round16(size));
	h->used += (uint32_t)need;
	h->nchild++;
	return 0;
}

int odsm__tg_resolve(const void *g, const odsm_tbox *c)
{
	const struct tg_hdr *h = g;
	const struct tg_child *ch;
	uint64_t first = (uint64_t)ODSM_TGROUP_HDR + h->parent + ODSM_TBOX_HDR;

	if (!c || !c->size)
		return -EINVAL;
	if (c->gid != h->gid)
		return -EXDEV;
	if (c->off % TG_ALIGN || c->off < first ||
	    (uint64_t)c->off + c->size > h->used)
		return -ERANGE;
	ch = (const struct tg_child *)((const char *)g + c->off -
				       ODSM_TBOX_HDR);
	if (ch->magic != (TB_MAGIC ^ c->off) || ch->size != c->size)
		return -ERANGE;
	return 0;
}

int odsm__tg_grow(void *dst, uint32_t size, const void *src)
{
	const struct tg_hdr *s = src;
	struct tg_hdr *d = dst;

	if (size % TG_ALIGN || size > ODSM_TGROUP_MAX || size < s->size)
		return -EINVAL;
	/* only what is in use: the rest of dst is zeroed already */
	memcpy(dst, src, s->used);
	d->size = size;
	return 0;
}
