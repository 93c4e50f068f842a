// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of kmod/odsm_cindex.c, the cache index: lookups by colored
 * address, references, the LRU order of unreferenced copies and the byte
 * accounting the budget relies on, and a randomized check against a plain
 * model.
 */
#include "odsm_cindex.h"

#include "ksft_host.h"

#define COLOR(c)	((u64)(c) << 48)

static struct odsm_cnode *node(u64 key, u64 bytes, u32 refs)
{
	struct odsm_cnode *n = calloc(1, sizeof(*n));

	n->key = key;
	n->bytes = bytes;
	n->refs = refs;
	return n;
}

TEST(init_bounds)
{
	struct odsm_cindex ci;

	ASSERT_EQ(-EINVAL, odsm_cindex_init(&ci, 3));
	ASSERT_EQ(-EINVAL, odsm_cindex_init(&ci, 25));
	ASSERT_EQ(0, odsm_cindex_init(&ci, 4));
	ASSERT_EQ(NULL, odsm_cindex_find(&ci, 0x1000));
	ASSERT_EQ(NULL, odsm_cindex_victim(&ci));
	odsm_cindex_destroy(&ci);
}

/* The same address at another color is another key: a stale copy never
 * matches the new version.
 */
TEST(color_is_part_of_the_key)
{
	struct odsm_cindex ci;
	struct odsm_cnode *a = node(COLOR(5) | 0x100000000000ULL, 64, 1);

	ASSERT_EQ(0, odsm_cindex_init(&ci, 4));
	odsm_cindex_insert(&ci, a);
	EXPECT_EQ(a, odsm_cindex_find(&ci, COLOR(5) | 0x100000000000ULL));
	EXPECT_EQ(NULL, odsm_cindex_find(&ci, COLOR(6) | 0x100000000000ULL));
	EXPECT_EQ(NULL, odsm_cindex_find(&ci, 0x100000000000ULL));
	EXPECT_EQ(1U, ci.entries);
	EXPECT_EQ(64U, ci.bytes);
	EXPECT_EQ(0U, ci.idle_entries);
	odsm_cindex_remove(&ci, a);
	EXPECT_EQ(NULL, odsm_cindex_find(&ci, a->key));
	EXPECT_EQ(0U, ci.entries);
	EXPECT_EQ(0U, ci.bytes);
	free(a);
	odsm_cindex_destroy(&ci);
}

/* Only unreferenced copies are victims, oldest release first. */
TEST(lru_order_and_references)
{
	struct odsm_cindex ci;
	struct odsm_cnode *a = node(1 << 4, 10, 1), *b = node(2 << 4, 20, 1),
			  *c = node(3 << 4, 30, 0);

	ASSERT_EQ(0, odsm_cindex_init(&ci, 4));
	odsm_cindex_insert(&ci, a);
	odsm_cindex_insert(&ci, b);
	odsm_cindex_insert(&ci, c);
	EXPECT_EQ(c, odsm_cindex_victim(&ci));
	EXPECT_EQ(1U, ci.idle_entries);
	EXPECT_EQ(30U, ci.idle_bytes);
	/* b released before a: b is older */
	EXPECT_TRUE(odsm_cindex_put(&ci, b));
	EXPECT_TRUE(odsm_cindex_put(&ci, a));
	EXPECT_EQ(c, odsm_cindex_victim(&ci));
	EXPECT_EQ(0, odsm_cindex_get(&ci, c));	/* a hit pins it again */
	EXPECT_EQ(b, odsm_cindex_victim(&ci));
	EXPECT_EQ(30U, ci.idle_bytes);
	odsm_cindex_remove(&ci, b);
	EXPECT_EQ(a, odsm_cindex_victim(&ci));
	EXPECT_EQ(0, odsm_cindex_get(&ci, a));
	EXPECT_EQ(0, odsm_cindex_get(&ci, a));
	EXPECT_FALSE(odsm_cindex_put(&ci, a));	/* one left */
	EXPECT_EQ(NULL, odsm_cindex_victim(&ci));
	EXPECT_TRUE(odsm_cindex_put(&ci, a));
	EXPECT_FALSE(odsm_cindex_put(&ci, a));	/* none left: no change */
	EXPECT_EQ(a, odsm_cindex_victim(&ci));
	EXPECT_EQ(1U, ci.idle_entries);
	EXPECT_EQ(2U, ci.entries);
	EXPECT_EQ(40U, ci.bytes);
	odsm_cindex_remove(&ci, a);
	odsm_cindex_remove(&ci, c);
	odsm_cindex_remove(&ci, c);	/* not indexed any more: no change */
	EXPECT_EQ(0U, ci.entries);
	EXPECT_EQ(0U, ci.bytes);
	EXPECT_EQ(0U, ci.idle_bytes);
	free(a);
	free(b);
	free(c);
	odsm_cindex_destroy(&ci);
}

/*
 * Issue 12, finding 11: a copy's reference count saturates.  At U32_MAX
 * a reference more is refused and nothing changes; had it wrapped to 0,
 * the copy would be on the LRU, reclaim's next victim, while U32_MAX
 * borrowers still use it.
 */
TEST(reference_count_saturates)
{
	struct odsm_cindex ci;
	struct odsm_cnode *a = node(1 << 4, 10, U32_MAX - 1);

	ASSERT_EQ(0, odsm_cindex_init(&ci, 4));
	odsm_cindex_insert(&ci, a);
	EXPECT_EQ(0, odsm_cindex_get(&ci, a));
	EXPECT_EQ(U32_MAX, a->refs);
	EXPECT_EQ(-EOVERFLOW, odsm_cindex_get(&ci, a));
	EXPECT_EQ(U32_MAX, a->refs);
	EXPECT_EQ(NULL, odsm_cindex_victim(&ci));
	EXPECT_EQ(0U, ci.idle_entries);
	/* the references there are still drop one by one */
	EXPECT_FALSE(odsm_cindex_put(&ci, a));
	EXPECT_EQ(U32_MAX - 1, a->refs);
	EXPECT_EQ(0, odsm_cindex_get(&ci, a));
	odsm_cindex_remove(&ci, a);
	free(a);
	odsm_cindex_destroy(&ci);
}

/* Random inserts, lookups, gets, puts, removals and reclaims against a
 * model: an array of (key, bytes, refs, idle since) records.
 */
#define MODEL_KEYS	64

struct model {
	struct odsm_cnode *n;	/* NULL: not cached */
	u64 idle_since;		/* order of the last release */
};

TEST(randomized_against_model)
{
	struct model m[MODEL_KEYS] = { 0 };
	struct odsm_cindex ci;
	u64 tick = 0, seed = 42;
	int op, i, k;

	ASSERT_EQ(0, odsm_cindex_init(&ci, 4));	/* long chains on purpose */
	for (op = 0; op < 200000; op++) {
		u64 entries = 0, bytes = 0, idle = 0, idle_bytes = 0, oldest = ~0ULL;
		struct odsm_cnode *want = NULL;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		k = (int)((seed >> 33) % MODEL_KEYS);
		/* keys: 16 addresses x 4 colors */
		switch ((seed >> 40) % 6) {
		case 0:	/* miss: insert with the borrower's reference */
			if (!m[k].n) {
				m[k].n = node(COLOR(k / 16) | ((u64)(k % 16) << 12),
					      16 + (u64)k, 1);
				odsm_cindex_insert(&ci, m[k].n);
			}
			break;
		case 1:	/* hit */
			if (m[k].n)
				ASSERT_EQ(0, odsm_cindex_get(&ci, m[k].n));
			break;
		case 2:
		case 3:	/* return */
			if (m[k].n && m[k].n->refs) {
				bool last = m[k].n->refs == 1;

				ASSERT_EQ(last, odsm_cindex_put(&ci, m[k].n));
				if (last)
					m[k].idle_since = ++tick;
			}
			break;
		case 4:	/* reclaim the victim */
			want = odsm_cindex_victim(&ci);
			if (want) {
				for (i = 0; i < MODEL_KEYS; i++)
					if (m[i].n == want)
						break;
				ASSERT_LT(i, MODEL_KEYS);
				ASSERT_EQ(0U, want->refs);
				odsm_cindex_remove(&ci, want);
				free(want);
				m[i].n = NULL;
			}
			break;
		case 5:	/* take over an unreferenced copy */
			if (m[k].n && !m[k].n->refs) {
				odsm_cindex_remove(&ci, m[k].n);
				free(m[k].n);
				m[k].n = NULL;
			}
			break;
		}
		want = NULL;
		for (i = 0; i < MODEL_KEYS; i++) {
			u64 key = COLOR(i / 16) | ((u64)(i % 16) << 12);

			ASSERT_EQ(m[i].n, odsm_cindex_find(&ci, key));
			if (!m[i].n)
				continue;
			entries++;
			bytes += m[i].n->bytes;
			if (!m[i].n->refs) {
				idle++;
				idle_bytes += m[i].n->bytes;
				if (m[i].idle_since < oldest) {
					oldest = m[i].idle_since;
					want = m[i].n;
				}
			}
		}
		ASSERT_EQ(entries, ci.entries);
		ASSERT_EQ(bytes, ci.bytes);
		ASSERT_EQ(idle, ci.idle_entries);
		ASSERT_EQ(idle_bytes, ci.idle_bytes);
		ASSERT_EQ(want, odsm_cindex_victim(&ci));
	}
	for (i = 0; i < MODEL_KEYS; i++)
		free(m[i].n);
	odsm_cindex_destroy(&ci);
}

TEST_HARNESS_MAIN
