// SPDX-License-Identifier: GPL-2.0
/*
 * libodsm's tied allocation (userlib/odsm_tbox.c) against the fake
 * /dev/odsm (fake_odsm.h), which counts every call: a group of node 1
 * with 8 children is one BORROW (one miss) and its children are found
 * with no call at all; a mutable borrow moves the group (one move) and
 * the children come with it, again with no call to find them; a second
 * shared borrow of the same version is no new miss; grow keeps names; a
 * freed local group is -ESTALE, a zeroed plain object -ENOTTY.
 */
#include <stdlib.h>
#include "odsm.h"

#include "fake_odsm.h"

#include "ksft_host.h"

#define KIDS	8
#define KID	80

struct tparent {
	uint64_t magic;
	odsm_tbox kid[KIDS];
};

/* A local group with KIDS children, child i filled with i + 1. */
static int make(odsm_box *g)
{
	struct tparent *tp;
	odsm_mut m;
	void *p;
	int ret, i;

	ret = odsm_tgroup_new(g, sizeof(*tp), KIDS * (ODSM_TBOX_HDR + KID));
	if (!ret)
		ret = odsm_tgroup_borrow_mut(g, &m, (void **)&tp);
	if (ret)
		return ret;
	tp->magic = 0x7b;
	for (i = 0; i < KIDS && !ret; i++) {
		ret = odsm_tbox_new(&m, KID, &tp->kid[i], &p);
		if (!ret)
			memset(p, i + 1, KID);
	}
	odsm_return_mut(&m);
	return ret;
}

TEST(remote_group_one_borrow_no_lookup)
{
	const struct tparent *tp;
	struct tparent *wp;
	struct fk_stats s0, s1;
	odsm_box lg, rg;
	const uint8_t *p;
	uint32_t size;
	uint64_t cg;
	odsm_ref r, r2;
	odsm_mut m;
	void *w;
	int i;

	fk_init();
	ASSERT_EQ(0, make(&lg));
	/* the same group, as if node 1 had built it there */
	ASSERT_EQ(0, odsm_tgroup_borrow(&lg, &r, (const void **)&tp));
	ASSERT_EQ(0, odsm_tgroup_stat(&r, NULL, NULL, &size));
	cg = fk_new_obj(1, size, 0);
	memcpy(odsm_ptr(cg), (const char *)tp - ODSM_TGROUP_HDR, size);
	EXPECT_EQ(0, odsm_return(&r));
	rg.g = cg;
	rg.ext = 0;

	s0 = fk_snap();
	ASSERT_EQ(0, odsm_tgroup_borrow(&rg, &r, (const void **)&tp));
	s1 = fk_snap();
	EXPECT_EQ(s0.misses + 1, s1.misses);
	EXPECT_EQ(s0.calls + 1, s1.calls);	/* one BORROW: the whole group */
	EXPECT_FALSE(odsm_is_local((uint64_t)(uintptr_t)tp) &&
		     (uint64_t)(uintptr_t)tp - ODSM_TGROUP_HDR == odsm_addr_of(cg));
	for (i = 0; i < KIDS; i++) {
		ASSERT_EQ(0, odsm_tbox_get(&r, &tp->kid[i], (const void **)&p));
		EXPECT_EQ(i + 1, p[0]);
		EXPECT_EQ(i + 1, p[KID - 1]);
	}
	/* the children cost no call: they are bytes of the borrowed copy */
	EXPECT_EQ(s1.calls, fk_snap().calls);
	/* a second borrow of the version: the same copy, no new miss */
	ASSERT_EQ(0, odsm_tgroup_borrow(&rg, &r2, (const void **)&tp));
	EXPECT_EQ(s1.misses, fk_snap().misses);
	EXPECT_EQ(0, odsm_return(&r2));
	EXPECT_EQ(0, odsm_return(&r));

	/* a mutable borrow moves the group here, children with it */
	s0 = fk_snap();
	ASSERT_EQ(0, odsm_tgroup_borrow_mut(&rg, &m, (void **)&wp));
	s1 = fk_snap();
	EXPECT_EQ(s0.muts + 1, s1.muts);
	EXPECT_TRUE(odsm_is_local(m.g));
	for (i = 0; i < KIDS; i++) {
		ASSERT_EQ(0, odsm_tbox_get_mut(&m, &wp->kid[i], &w));
		EXPECT_TRUE(odsm_is_local((uint64_t)(uintptr_t)w));
		EXPECT_EQ(i + 1, ((uint8_t *)w)[KID - 1]);
	}
	EXPECT_EQ(s1.calls, fk_snap().calls);
	EXPECT_EQ(0, odsm_return_mut(&m));
	EXPECT_TRUE(odsm_is_local(rg.g));
	EXPECT_EQ(0, odsm_tgroup_drop(&rg));
	EXPECT_EQ(0, odsm_tgroup_drop(&lg));
	fk_fini();
}

TEST(grow_and_refusals)
{
	odsm_box g, g2, plain, stale, empty = { 0 };
	const struct tparent *tp;
	odsm_tbox extra, other;
	const void *p;
	odsm_ref r;
	odsm_mut m;
	void *w;

	fk_init();
	ASSERT_EQ(0, make(&g));
	ASSERT_EQ(0, make(&g2));
	ASSERT_EQ(0, odsm_tgroup_borrow(&g2, &r, (const void **)&tp));
	other = tp->kid[0];
	EXPECT_EQ(0, odsm_return(&r));
	/* full, then grown: the old names still resolve, one more fits */
	ASSERT_EQ(0, odsm_tgroup_borrow_mut(&g, &m, &w));
	EXPECT_EQ(-ENOSPC, odsm_tbox_new(&m, 1, &extra, &w));
	EXPECT_EQ(0, odsm_return_mut(&m));
	ASSERT_EQ(0, odsm_tgroup_grow(&g, KIDS * (ODSM_TBOX_HDR + KID) + 32));
	ASSERT_EQ(0, odsm_tgroup_borrow_mut(&g, &m, &w));
	ASSERT_EQ(0, odsm_tbox_new(&m, 16, &extra, &w));
	EXPECT_EQ(0, odsm_return_mut(&m));
	ASSERT_EQ(0, odsm_tgroup_borrow(&g, &r, (const void **)&tp));
	ASSERT_EQ(0, odsm_tbox_get(&r, &tp->kid[7], &p));
	EXPECT_EQ(8, ((const uint8_t *)p)[KID - 1]);
	ASSERT_EQ(0, odsm_tbox_get(&r, &extra, &p));
	EXPECT_EQ(-EXDEV, odsm_tbox_get(&r, &other, &p));
	EXPECT_EQ(0, odsm_return(&r));
	/* wrong kind, empty, freed */
	ASSERT_EQ(0, odsm_box_new(&plain, 128, ODSM_ALLOC_ZERO));
	EXPECT_EQ(-ENOTTY, odsm_tgroup_borrow(&plain, &r, &p));
	p = &r;
	EXPECT_EQ(-EINVAL, odsm_tgroup_borrow(&empty, &r, &p));
	EXPECT_EQ(NULL, p);	/* a failed borrow leaves no pointer */
	stale = g2;
	EXPECT_EQ(0, odsm_tgroup_drop(&g2));
	EXPECT_EQ(-ESTALE, odsm_tgroup_borrow(&stale, &r, &p));
	EXPECT_EQ(0, odsm_box_drop(&plain));
	EXPECT_EQ(0, odsm_tgroup_drop(&g));
	fk_fini();
}

TEST_HARNESS_MAIN
