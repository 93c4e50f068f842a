// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of kmod/odsm_addr.h: pointer colors (DRust Algorithm 3),
 * heap geometry lookups and odsm_geom_check().
 */
#include "odsm_addr.h"

#include "ksft_host.h"

#define TiB(x)		((__u64)(x) << 40)
#define GiB(x)		((__u64)(x) << 30)
#define MiB(x)		((__u64)(x) << 20)

/* x86-64 TASK_SIZE_MAX with 4-level paging */
#define USER_TOP_X86	0x00007ffffffff000ULL
/* ... and with 5-level paging */
#define USER_TOP_LA57	0x00fffffffffff000ULL

static const __u64 sample_addrs[] = {
	0, 1, 16, 0xfff, 0x1000, GiB(4), TiB(16) + 0x123450,
	0x00007ffffffff000ULL, 0x00007fffffffffffULL, 0x0000800000000000ULL,
	ODSM_ADDR_MASK, ODSM_ADDR_MASK - 15,
};

static const __u16 sample_colors[] = {
	0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xfffe, 0xffff,
};

TEST(color_constants)
{
	ASSERT_EQ(48, ODSM_COLOR_SHIFT);
	ASSERT_EQ(0xffffULL, ODSM_COLOR_MAX);
	ASSERT_EQ(0x0000ffffffffffffULL, ODSM_ADDR_MASK);
	/* colors and addresses partition the 64 bits */
	ASSERT_EQ(~0ULL, ODSM_ADDR_MASK | (ODSM_COLOR_MAX << ODSM_COLOR_SHIFT));
	ASSERT_EQ(0ULL, ODSM_ADDR_MASK & (ODSM_COLOR_MAX << ODSM_COLOR_SHIFT));
}

TEST(color_get_clear_append)
{
	unsigned int i, j, k;

	for (i = 0; i < ARRAY_SIZE(sample_addrs); i++) {
		__u64 a = sample_addrs[i];

		/* uncolored addresses have color 0 and are unchanged by clear */
		ASSERT_EQ(0, odsm_color(a));
		ASSERT_EQ(a, odsm_clear_color(a));
		ASSERT_EQ(a, odsm_with_color(a, 0));

		for (j = 0; j < ARRAY_SIZE(sample_colors); j++) {
			__u16 c = sample_colors[j];
			__u64 cg = odsm_with_color(a, c);

			ASSERT_EQ(c, odsm_color(cg));
			ASSERT_EQ(a, odsm_clear_color(cg));
			ASSERT_EQ(a | ((__u64)c << 48), cg);
			/* re-coloring replaces, never ORs into, the old color */
			for (k = 0; k < ARRAY_SIZE(sample_colors); k++) {
				__u16 c2 = sample_colors[k];
				__u64 cg2 = odsm_with_color(cg, c2);

				ASSERT_EQ(c2, odsm_color(cg2));
				ASSERT_EQ(a, odsm_clear_color(cg2));
			}
			/* clearing is idempotent */
			ASSERT_EQ(odsm_clear_color(cg),
				  odsm_clear_color(odsm_clear_color(cg)));
		}
	}
	/* color is exactly the top 16 bits, whatever the low bits hold */
	ASSERT_EQ(0xffff, odsm_color(~0ULL));
	ASSERT_EQ(ODSM_ADDR_MASK, odsm_clear_color(~0ULL));
	ASSERT_EQ(0x8001, odsm_color(0x8001000000000000ULL));
	ASSERT_EQ(0, odsm_color(0x0000ffffffffffffULL));
	ASSERT_EQ(1, odsm_color(0x0001000000000000ULL));
}

/* 4 nodes of 1 GiB at 16 TiB; this is node 2. */
static const struct odsm_geom g4 = {
	.base = TiB(16), .part_size = GiB(1), .nr_nodes = 4, .node_id = 2,
};

TEST(heap_bounds)
{
	__u64 end = TiB(16) + GiB(4);

	ASSERT_EQ(end, odsm_heap_end(&g4));
	EXPECT_FALSE(odsm_in_heap(&g4, 0));
	EXPECT_FALSE(odsm_in_heap(&g4, g4.base - 1));
	EXPECT_TRUE(odsm_in_heap(&g4, g4.base));
	EXPECT_TRUE(odsm_in_heap(&g4, g4.base + 12345));
	EXPECT_TRUE(odsm_in_heap(&g4, end - 1));
	EXPECT_FALSE(odsm_in_heap(&g4, end));
	EXPECT_FALSE(odsm_in_heap(&g4, ~0ULL));
	/* callers must clear the color first: a colored address is not in
	 * the heap (its top bits put it far above any user address)
	 */
	EXPECT_FALSE(odsm_in_heap(&g4, odsm_with_color(g4.base, 1)));
	EXPECT_TRUE(odsm_in_heap(&g4,
		odsm_clear_color(odsm_with_color(g4.base, 1))));
}

TEST(node_of_and_part_start)
{
	__u32 n;

	for (n = 0; n < g4.nr_nodes; n++) {
		__u64 s = odsm_part_start(&g4, n);

		ASSERT_EQ(g4.base + n * GiB(1), s);
		ASSERT_EQ(n, odsm_node_of(&g4, s));
		ASSERT_EQ(n, odsm_node_of(&g4, s + 1));
		ASSERT_EQ(n, odsm_node_of(&g4, s + GiB(1) / 2));
		ASSERT_EQ(n, odsm_node_of(&g4, s + GiB(1) - 1));
		if (n + 1 < g4.nr_nodes)
			ASSERT_EQ(n + 1, odsm_node_of(&g4, s + GiB(1)));
	}
	ASSERT_EQ(odsm_heap_end(&g4), odsm_part_start(&g4, g4.nr_nodes));
}

TEST(node_of_max_geometry)
{
	/* 256 nodes of 64 GiB: the product needs more than 32 bits */
	struct odsm_geom g = {
		.base = TiB(32), .part_size = GiB(64), .nr_nodes = 256,
		.node_id = 255,
	};
	__u32 n;

	ASSERT_EQ(0, odsm_geom_check(&g, USER_TOP_X86));
	ASSERT_EQ(TiB(32) + TiB(16), odsm_heap_end(&g));
	for (n = 0; n < 256; n++) {
		__u64 s = odsm_part_start(&g, n);

		ASSERT_EQ(TiB(32) + (__u64)n * GiB(64), s);
		ASSERT_EQ(n, odsm_node_of(&g, s));
		ASSERT_EQ(n, odsm_node_of(&g, s + GiB(64) - 1));
	}
	EXPECT_TRUE(odsm_range_is_local(&g, odsm_part_start(&g, 255),
					GiB(64)));
	EXPECT_FALSE(odsm_range_is_local(&g, odsm_part_start(&g, 255),
					 GiB(64) + 1));
	EXPECT_FALSE(odsm_range_is_local(&g, odsm_part_start(&g, 254),
					 GiB(64)));
}

TEST(range_is_local)
{
	__u64 lo = odsm_part_start(&g4, 2), ps = g4.part_size, hi = lo + ps;
	static const __u64 lens[] = { 1, 16, 4096, MiB(2) };
	unsigned int i;

	/* whole partition, and pieces at both ends */
	EXPECT_TRUE(odsm_range_is_local(&g4, lo, ps));
	EXPECT_TRUE(odsm_range_is_local(&g4, lo, 1));
	EXPECT_TRUE(odsm_range_is_local(&g4, hi - 1, 1));
	EXPECT_TRUE(odsm_range_is_local(&g4, lo + 1, ps - 1));
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		__u64 l = lens[i];

		EXPECT_TRUE(odsm_range_is_local(&g4, lo, l));
		EXPECT_TRUE(odsm_range_is_local(&g4, hi - l, l));
		/* one byte out at either end */
		EXPECT_FALSE(odsm_range_is_local(&g4, lo - 1, l));
		EXPECT_FALSE(odsm_range_is_local(&g4, hi - l + 1, l));
		/* the neighbours' partitions */
		EXPECT_FALSE(odsm_range_is_local(&g4, lo - ps, l));
		EXPECT_FALSE(odsm_range_is_local(&g4, hi, l));
		EXPECT_FALSE(odsm_range_is_local(&g4, g4.base, l));
	}
	/* empty ranges inside the partition are local */
	EXPECT_TRUE(odsm_range_is_local(&g4, lo, 0));
	EXPECT_TRUE(odsm_range_is_local(&g4, hi - 1, 0));
	EXPECT_FALSE(odsm_range_is_local(&g4, lo - 1, 0));
	/* too long */
	EXPECT_FALSE(odsm_range_is_local(&g4, lo, ps + 1));
	EXPECT_FALSE(odsm_range_is_local(&g4, lo + 1, ps));
	EXPECT_FALSE(odsm_range_is_local(&g4, lo, 2 * ps));
	/* lengths whose end wraps around 2^64 back into the partition:
	 * addr + len would overflow to an in-partition value
	 */
	EXPECT_FALSE(odsm_range_is_local(&g4, lo, ~0ULL));
	EXPECT_FALSE(odsm_range_is_local(&g4, lo + 16, ~0ULL - 15));
	EXPECT_FALSE(odsm_range_is_local(&g4, lo + 4096, 0ULL - 4096));
	EXPECT_FALSE(odsm_range_is_local(&g4, hi - 1, ~0ULL));
	EXPECT_FALSE(odsm_range_is_local(&g4, ~0ULL - 4095, lo + 8192));
	EXPECT_FALSE(odsm_range_is_local(&g4, ~0ULL, 1));
	EXPECT_FALSE(odsm_range_is_local(&g4, ~0ULL, lo + 2));
	EXPECT_FALSE(odsm_range_is_local(&g4, 0, lo + 16));
	/* a colored address is not local: colors must be cleared first */
	EXPECT_FALSE(odsm_range_is_local(&g4, odsm_with_color(lo, 1), 1));
	EXPECT_FALSE(odsm_range_is_local(&g4, odsm_with_color(lo, 0xffff),
					 16));
}

TEST(range_is_local_node0_and_last)
{
	struct odsm_geom g = g4;

	g.node_id = 0;
	EXPECT_TRUE(odsm_range_is_local(&g, g.base, g.part_size));
	EXPECT_FALSE(odsm_range_is_local(&g, g.base - 1, 2));
	EXPECT_FALSE(odsm_range_is_local(&g, 0, g.base + 1));
	EXPECT_FALSE(odsm_range_is_local(&g, g.base + g.part_size, 1));
	g.node_id = 3;
	EXPECT_TRUE(odsm_range_is_local(&g, odsm_heap_end(&g) - 1, 1));
	EXPECT_FALSE(odsm_range_is_local(&g, odsm_heap_end(&g), 1));
	EXPECT_FALSE(odsm_range_is_local(&g, odsm_heap_end(&g) - 1, 2));
}

struct geom_case {
	const char *what;
	__u64 base, part_size, user_top;
	__u32 nr_nodes, node_id;
	int ret;
};

#define OK(w, b, p, n, id, top)		{ w, b, p, top, n, id, 0 }
#define BAD(w, b, p, n, id, top)	{ w, b, p, top, n, id, -EINVAL }

static const struct geom_case geom_cases[] = {
	OK("typical", TiB(16), GiB(1), 4, 0, USER_TOP_X86),
	OK("last node", TiB(16), GiB(1), 4, 3, USER_TOP_X86),
	OK("single node", TiB(1), MiB(2), 1, 0, USER_TOP_X86),
	OK("min part size", TiB(1), ODSM_PART_ALIGN, 8, 7, USER_TOP_X86),
	OK("max part size", TiB(1), ODSM_MAX_PART_SIZE, 2, 1, USER_TOP_X86),
	OK("max nodes", TiB(1), GiB(1), ODSM_MAX_NODES, 255, USER_TOP_X86),
	OK("max everything", TiB(64), ODSM_MAX_PART_SIZE, 256, 0,
	   USER_TOP_X86),
	OK("base at 4 GiB", GiB(4), MiB(2), 1, 0, USER_TOP_X86),
	OK("heap ends at user_top", TiB(128) - GiB(4), GiB(1), 4, 0, TiB(128)),
	OK("heap ends 2 MiB below a ragged top", TiB(128) - GiB(1) - MiB(2),
	   GiB(1), 1, 0, USER_TOP_X86),
	OK("heap ends at the color bits (5-level paging top)",
	   TiB(256) - GiB(1), GiB(1), 1, 0, USER_TOP_LA57),

	BAD("no nodes", TiB(16), GiB(1), 0, 0, USER_TOP_X86),
	BAD("too many nodes", TiB(1), GiB(1), ODSM_MAX_NODES + 1, 0,
	    USER_TOP_X86),
	BAD("node id == nr_nodes", TiB(16), GiB(1), 4, 4, USER_TOP_X86),
	BAD("node id huge", TiB(16), GiB(1), 4, ~0U, USER_TOP_X86),
	BAD("part size 0", TiB(16), 0, 4, 0, USER_TOP_X86),
	BAD("part size 1 MiB", TiB(16), MiB(1), 4, 0, USER_TOP_X86),
	BAD("part size 2 MiB + 4 KiB", TiB(16), MiB(2) + 4096, 4, 0,
	    USER_TOP_X86),
	BAD("part size 64 KiB", TiB(16), 1ULL << 16, 4, 0, USER_TOP_X86),
	BAD("part size over max", TiB(16), ODSM_MAX_PART_SIZE + MiB(2), 1, 0,
	    USER_TOP_X86),
	BAD("part size 2^63", TiB(16), 1ULL << 63, 1, 0, ~0ULL),
	BAD("base unaligned 4 KiB", TiB(16) + 4096, GiB(1), 4, 0,
	    USER_TOP_X86),
	BAD("base unaligned 1 MiB", TiB(16) + MiB(1), GiB(1), 4, 0,
	    USER_TOP_X86),
	BAD("base 0", 0, GiB(1), 4, 0, USER_TOP_X86),
	BAD("base below 4 GiB", GiB(4) - MiB(2), MiB(2), 1, 0, USER_TOP_X86),
	BAD("base at user_top", TiB(128), MiB(2), 1, 0, TiB(128)),
	BAD("base above user_top", TiB(128) + MiB(2), MiB(2), 1, 0, TiB(128)),
	BAD("base in kernel half", 0xffff800000000000ULL, MiB(2), 1, 0,
	    USER_TOP_X86),
	BAD("heap crosses user_top by one partition", TiB(128) - GiB(3),
	    GiB(1), 4, 0, TiB(128)),
	BAD("heap crosses ragged top", TiB(128) - GiB(1), GiB(1), 1, 0,
	    USER_TOP_X86),
	BAD("heap would wrap 2^64", ~0ULL << 21, MiB(4), 1, 0, ~0ULL),
	/* colors live in bits 63..48: no heap byte may be at 2^48 or up,
	 * even when user space reaches higher (5-level paging)
	 */
	BAD("heap crosses 2^48 (5-level paging top)", TiB(256) - GiB(1),
	    GiB(1), 2, 0, USER_TOP_LA57),
	BAD("heap above 2^48 (5-level paging top)", TiB(256), MiB(2), 1, 0,
	    USER_TOP_LA57),
	BAD("heap above 2^48 (no top)", TiB(512), MiB(2), 1, 0, ~0ULL),
	BAD("heap near 2^64 (no top)", (~0ULL << 21) - MiB(2), MiB(2), 1, 0,
	    ~0ULL),
	BAD("max geometry over top", TiB(128) - TiB(8), ODSM_MAX_PART_SIZE,
	    256, 0, USER_TOP_X86),
};

TEST(geom_check_table)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(geom_cases); i++) {
		const struct geom_case *c = &geom_cases[i];
		struct odsm_geom g = {
			.base = c->base, .part_size = c->part_size,
			.nr_nodes = c->nr_nodes, .node_id = c->node_id,
		};

		EXPECT_EQ(c->ret, odsm_geom_check(&g, c->user_top))
			TH_LOG("case \"%s\"", c->what);
		/* an accepted heap lies wholly below user_top */
		if (c->ret == 0)
			EXPECT_LE(odsm_heap_end(&g), c->user_top)
				TH_LOG("case \"%s\"", c->what);
	}
}

/* For an accepted geometry, the node math is exact for every node. */
TEST(geom_accept_implies_consistent)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(geom_cases); i++) {
		const struct geom_case *c = &geom_cases[i];
		struct odsm_geom g = {
			.base = c->base, .part_size = c->part_size,
			.nr_nodes = c->nr_nodes, .node_id = c->node_id,
		};
		__u32 n;

		if (c->ret)
			continue;
		for (n = 0; n < g.nr_nodes; n++) {
			__u64 s = odsm_part_start(&g, n);

			ASSERT_TRUE(odsm_in_heap(&g, s));
			ASSERT_TRUE(odsm_in_heap(&g, s + g.part_size - 1));
			ASSERT_EQ(n, odsm_node_of(&g, s));
			ASSERT_EQ(n, odsm_node_of(&g, s + g.part_size - 1));
			ASSERT_EQ(n == g.node_id,
				  odsm_range_is_local(&g, s, g.part_size));
			/* addresses fit below the color bits */
			ASSERT_EQ(s, odsm_clear_color(s));
		}
	}
}

TEST_HARNESS_MAIN
