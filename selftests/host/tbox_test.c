// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of userlib/odsm_tbox_arena.c, tied allocation's arena
 * logic on a group's bytes: the layout (header, parent, children each
 * behind a header, 16-byte aligned, offsets from the group's start),
 * carving up to a full arena and no further, a child name resolving only
 * in its own group, at its own offset and size, a header that is not a
 * group's refused, and growth that keeps every name valid.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "odsm_tbox.h"
#include "odsm_tbox_int.h"

#include "ksft_host.h"

#define GID	0x1234000000001200ULL

/* a zeroed group of parent and arena bytes, 16-byte aligned */
static void *group(size_t parent, size_t arena, uint32_t *size)
{
	size_t n = odsm__tg_size(parent, arena);
	void *g;

	if (!n)
		return NULL;
	g = aligned_alloc(16, n);
	if (!g)
		return NULL;
	memset(g, 0, n);
	odsm__tg_init(g, (uint32_t)n, GID, parent);
	*size = (uint32_t)n;
	return g;
}

TEST(sizes)
{
	EXPECT_EQ(32U, ODSM_TGROUP_HDR);
	EXPECT_EQ(32U, sizeof(struct tg_hdr));
	EXPECT_EQ(16U, sizeof(struct tg_child));
	EXPECT_EQ(16U, sizeof(odsm_tbox));
	EXPECT_EQ(32U + 16 + 0, odsm__tg_size(1, 0));
	EXPECT_EQ(32U + 224 + 768, odsm__tg_size(224, 768));
	EXPECT_EQ(32U + 16 + 32, odsm__tg_size(16, 17));	/* rounded */
	EXPECT_EQ((size_t)ODSM_TGROUP_MAX,
		  odsm__tg_size(16, ODSM_TGROUP_MAX - 48));
	EXPECT_EQ(0U, odsm__tg_size(16, ODSM_TGROUP_MAX - 47));
	EXPECT_EQ(0U, odsm__tg_size(ODSM_TGROUP_MAX + 1, 0));
	/* no wrap-around with sizes that would overflow a sum */
	EXPECT_EQ(0U, odsm__tg_size(SIZE_MAX, SIZE_MAX));
	EXPECT_EQ(0U, odsm__tg_size(16, SIZE_MAX - 8));
}

TEST(carve_resolve)
{
	uint32_t size, off[8], prev = 0;
	const struct tg_hdr *h;
	odsm_tbox c;
	uint8_t *g;
	int i;

	g = group(100, 8 * (16 + 80), &size);
	ASSERT_NE(NULL, g);
	h = (const struct tg_hdr *)g;
	ASSERT_EQ(0, odsm__tg_check(g));
	EXPECT_EQ(GID, h->gid);
	EXPECT_EQ(112U, h->parent);
	EXPECT_EQ(32U + 112, h->used);
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, odsm__tg_carve(g, 80 - i, &off[i]));
		EXPECT_EQ(0U, off[i] % 16);
		/* in order, right after the parent, a header apart */
		EXPECT_EQ(i ? prev + 96 : 32U + 112 + 16, off[i]);
		prev = off[i];
		memset(g + off[i], 0x10 + i, 80 - i);
	}
	EXPECT_EQ(8U, h->nchild);
	EXPECT_EQ(size, h->used);
	/* full: nothing more, not even a byte */
	EXPECT_EQ(-ENOSPC, odsm__tg_carve(g, 1, &off[0]));
	EXPECT_EQ(-EINVAL, odsm__tg_carve(g, 0, &off[0]));
	EXPECT_EQ(-ENOSPC, odsm__tg_carve(g, (size_t)ODSM_TGROUP_MAX + 1,
					  &off[0]));
	EXPECT_EQ(8U, h->nchild);
	for (i = 0; i < 8; i++) {
		c.gid = GID;
		c.off = off[i];
		c.size = 80 - i;
		EXPECT_EQ(0, odsm__tg_resolve(g, &c));
		/* children do not overlap: each still holds its bytes */
		EXPECT_EQ(0x10 + i, g[off[i]]);
		EXPECT_EQ(0x10 + i, g[off[i] + 79 - i]);
	}
	free(g);
}

TEST(resolve_refuses)
{
	uint32_t size, size2, off, off2;
	uint8_t *g, *g2;
	odsm_tbox c;

	g = group(16, 4 * 64, &size);
	g2 = group(16, 4 * 64, &size2);
	ASSERT_NE(NULL, g);
	ASSERT_NE(NULL, g2);
	/* another group: another id */
	((struct tg_hdr *)g2)->gid = GID + (1ULL << 48);
	ASSERT_EQ(0, odsm__tg_carve(g, 40, &off));
	ASSERT_EQ(0, odsm__tg_carve(g2, 40, &off2));
	EXPECT_EQ(off, off2);
	c.gid = GID;
	c.off = off;
	c.size = 40;
	EXPECT_EQ(0, odsm__tg_resolve(g, &c));
	EXPECT_EQ(-EXDEV, odsm__tg_resolve(g2, &c));
	EXPECT_EQ(-EINVAL, odsm__tg_resolve(g, NULL));
	c.size = 0;
	EXPECT_EQ(-EINVAL, odsm__tg_resolve(g, &c));
	c.size = 41;		/* past what was carved */
	EXPECT_EQ(-ERANGE, odsm__tg_resolve(g, &c));
	c.size = 39;		/* not its size */
	EXPECT_EQ(-ERANGE, odsm__tg_resolve(g, &c));
	c.size = 40;
	c.off = off + 8;	/* misaligned */
	EXPECT_EQ(-ERANGE, odsm__tg_resolve(g, &c));
	c.off = off + 16;	/* inside the child */
	EXPECT_EQ(-ERANGE, odsm__tg_resolve(g, &c));
	c.off = off + 64;	/* past used */
	EXPECT_EQ(-ERANGE, odsm__tg_resolve(g, &c));
	c.off = ODSM_TGROUP_HDR;	/* the parent */
	EXPECT_EQ(-ERANGE, odsm__tg_resolve(g, &c));
	c.off = 0;
	EXPECT_EQ(-ERANGE, odsm__tg_resolve(g, &c));
	c.off = UINT32_MAX - 15;	/* off + size must not wrap */
	EXPECT_EQ(-ERANGE, odsm__tg_resolve(g, &c));
	/* a child's bytes that copy a header do not make a child there */
	ASSERT_EQ(0, odsm__tg_carve(g, 96, &off2));
	memcpy(g + off2 + 16, g + off - 16, 16);
	c.off = off2 + 32;
	c.size = 40;
	EXPECT_EQ(-ERANGE, odsm__tg_resolve(g, &c));
	free(g);
	free(g2);
}

TEST(check_refuses)
{
	struct tg_hdr *h;
	uint32_t size;
	uint8_t *g;

	g = group(32, 128, &size);
	ASSERT_NE(NULL, g);
	h = (struct tg_hdr *)g;
	ASSERT_EQ(0, odsm__tg_check(g));
	h->magic = 0;		/* a zeroed object is no group */
	EXPECT_EQ(-ENOTTY, odsm__tg_check(g));
	h->magic = TG_DEAD;	/* odsm_tgroup_drop() marks a local one */
	EXPECT_EQ(-ESTALE, odsm__tg_check(g));
	h->magic = (uint32_t)TG_MAGIC;
	h->gid = 0;
	EXPECT_EQ(-ENOTTY, odsm__tg_check(g));
	h->gid = GID;
	h->used = size + 16;	/* past the group */
	EXPECT_EQ(-ENOTTY, odsm__tg_check(g));
	h->used = 16;		/* before the arena */
	EXPECT_EQ(-ENOTTY, odsm__tg_check(g));
	h->used = 32 + 32;
	h->size = ODSM_TGROUP_MAX + 16;
	EXPECT_EQ(-ENOTTY, odsm__tg_check(g));
	h->size = size + 1;	/* not a multiple of 16 */
	EXPECT_EQ(-ENOTTY, odsm__tg_check(g));
	h->size = size;
	h->parent = size;	/* no room for it */
	EXPECT_EQ(-ENOTTY, odsm__tg_check(g));
	h->parent = 32;
	EXPECT_EQ(0, odsm__tg_check(g));
	free(g);
}

TEST(grow_keeps_names)
{
	uint32_t size, big, off[3], off4;
	uint8_t *g, *g2;
	odsm_tbox c;
	int i;

	g = group(48, 3 * 48, &size);
	ASSERT_NE(NULL, g);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, odsm__tg_carve(g, 32, &off[i]));
		memset(g + off[i], 0x40 + i, 32);
	}
	EXPECT_EQ(-ENOSPC, odsm__tg_carve(g, 32, &off4));
	big = (uint32_t)odsm__tg_size(48, 6 * 48);
	g2 = aligned_alloc(16, big);
	ASSERT_NE(NULL, g2);
	memset(g2, 0, big);
	EXPECT_EQ(-EINVAL, odsm__tg_grow(g2, size - 16, g));	/* smaller */
	EXPECT_EQ(-EINVAL, odsm__tg_grow(g2, big + 1, g));	/* unaligned */
	ASSERT_EQ(0, odsm__tg_grow(g2, big, g));
	ASSERT_EQ(0, odsm__tg_check(g2));
	EXPECT_EQ(big, ((struct tg_hdr *)g2)->size);
	for (i = 0; i < 3; i++) {
		c.gid = GID;
		c.off = off[i];
		c.size = 32;
		EXPECT_EQ(0, odsm__tg_resolve(g2, &c));
		EXPECT_EQ(0x40 + i, g2[off[i] + 31]);
	}
	ASSERT_EQ(0, odsm__tg_carve(g2, 32, &off4));
	EXPECT_EQ(off[2] + 48, off4);
	EXPECT_EQ(4U, ((struct tg_hdr *)g2)->nchild);
	free(g);
	free(g2);
}

TEST_HARNESS_MAIN
