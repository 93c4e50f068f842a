// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of the published slot words (kmod/odsm_pubword.h and the
 * allocator's odsm_palloc_pub_slot()/odsm_palloc_pub_fill()): what a
 * peer's one-sided borrow miss trusts instead of the home's CPU.
 *
 * The property that makes a one-sided miss safe: a word the home keeps
 * the way the module does (filled when the block is pinned, then the
 * word of each slot rewritten after every allocation, free and copied
 * mark there) never says "live, copied, this class, this color" unless
 * the allocator holds exactly such an object at that slot -- through
 * frees, reuse of a block by another class or by a multi-block object,
 * and retirement.  And it says so for every such object (else misses
 * would never go one-sided).
 */
#include "odsm_palloc.h"
#include "odsm_addr.h"

#include <stdlib.h>
#include <string.h>

#include "ksft_host.h"

#define BLK		((u64)ODSM_BLOCK_SIZE)
#define PBASE		(0x100000000000ULL + 3 * (1ULL << 30))
#define NBLK		6

TEST(word_and_usable)
{
	int c64 = odsm_pub_class_of_size(64), c512 = odsm_pub_class_of_size(512);
	u32 w = odsm_pub_word(c512, true, true, 7);

	ASSERT_GE(c64, 0);
	ASSERT_GE(c512, 0);
	EXPECT_EQ(64U, odsm_class_size[c64]);
	/* classes whose slots do not fit the page have no word */
	EXPECT_EQ(-1, odsm_pub_class_of_size(48));
	EXPECT_EQ(0U, odsm_pub_word(odsm_pub_class_of_size(64) - 1, true,
				    true, 1));
	/* sizes that are no class */
	EXPECT_EQ(-1, odsm_pub_class_of_size(500));
	EXPECT_EQ(-1, odsm_pub_class_of_size(65536));
	EXPECT_EQ(-1, odsm_pub_class(0));
	EXPECT_EQ(c512, odsm_pub_class(w));
	EXPECT_EQ(7U, w & ODSM_PUB_GEN_MASK);

	/* usable: equal, this class, live, copied, color not older */
	EXPECT_TRUE(odsm_pub_usable(w, w, c512, 7));
	EXPECT_TRUE(odsm_pub_usable(w, w, c512, 9));	/* recolored since */
	EXPECT_FALSE(odsm_pub_usable(w, w, c512, 6));	/* an older object */
	EXPECT_FALSE(odsm_pub_usable(w, w + 1, c512, 9));	/* changed */
	EXPECT_FALSE(odsm_pub_usable(w, w, c64, 9));	/* another class */
	EXPECT_FALSE(odsm_pub_usable(0, 0, -1, 9));
	/* known: usable, and of exactly the pointer's color */
	EXPECT_TRUE(odsm_pub_known(w, 0, c512, 7));
	EXPECT_FALSE(odsm_pub_known(w, 0, c512, 9));
	EXPECT_FALSE(odsm_pub_known(w, 0, c512, 6));
	EXPECT_FALSE(odsm_pub_known(w, 0, c64, 7));
	EXPECT_FALSE(odsm_pub_known(0, 0, c512, 0));
	/* ... or read through a pointer of exactly this (bumped) color */
	EXPECT_TRUE(odsm_pub_known(w, 9, c512, 9));
	EXPECT_FALSE(odsm_pub_known(w, 9, c512, 8));
	EXPECT_FALSE(odsm_pub_known(w, 6, c512, 6));	/* an older object */
	EXPECT_FALSE(odsm_pub_known(w, 9, c64, 9));
	/* a run's word: no class's, usable only as a run of exactly the color */
	w = odsm_pub_run_word(true, true, 7);
	EXPECT_EQ((int)ODSM_PUB_RUN, odsm_pub_class(w));
	EXPECT_FALSE(odsm_pub_usable(w, w, c512, 7));
	EXPECT_TRUE(odsm_pub_run_usable(w, w, 7, 7));
	EXPECT_TRUE(odsm_pub_run_usable(w, w, 7, 9));	/* a newer pointer */
	EXPECT_FALSE(odsm_pub_run_usable(w, w, 6, 9));	/* another object */
	EXPECT_FALSE(odsm_pub_run_usable(w, w, 7, 6));	/* an older one */
	EXPECT_FALSE(odsm_pub_run_usable(w, w + 1, 7, 7));
	EXPECT_FALSE(odsm_pub_run_usable(odsm_pub_run_word(true, false, 7),
					 odsm_pub_run_word(true, false, 7),
					 7, 7));
	EXPECT_FALSE(odsm_pub_run_usable(odsm_pub_run_word(false, false, 7),
					 odsm_pub_run_word(false, false, 7),
					 7, 7));
	w = odsm_pub_word(c512, true, false, 7);	/* never copied */
	EXPECT_FALSE(odsm_pub_known(w, 0, c512, 7));
	EXPECT_FALSE(odsm_pub_usable(w, w, c512, 7));
	w = odsm_pub_word(c512, false, true, 7);	/* free */
	EXPECT_FALSE(odsm_pub_usable(w, w, c512, 7));
}

/* A slot by offset: starts of the class's slots only, none past the last. */
TEST(slot_of)
{
	int c96 = odsm_pub_class_of_size(96), c12k = odsm_pub_class_of_size(12288);
	int c512 = odsm_pub_class_of_size(512);
	u32 idx = 77;

	ASSERT_GE(c96, 0);
	ASSERT_GE(c12k, 0);
	EXPECT_TRUE(odsm_pub_slot_of(0, c512, &idx));
	EXPECT_EQ(0U, idx);
	EXPECT_TRUE(odsm_pub_slot_of(65536 - 512, c512, &idx));
	EXPECT_EQ(127U, idx);
	EXPECT_FALSE(odsm_pub_slot_of(512 + 16, c512, &idx));
	EXPECT_FALSE(odsm_pub_slot_of(65536, c512, &idx));
	/* 682 slots of 96 bytes: 65472 is a multiple of 96, past the last */
	EXPECT_TRUE(odsm_pub_slot_of(681 * 96, c96, &idx));
	EXPECT_EQ(681U, idx);
	EXPECT_FALSE(odsm_pub_slot_of(65472, c96, &idx));
	/* 5 slots of 12 KiB: 61440 is the sixth */
	EXPECT_TRUE(odsm_pub_slot_of(4 * 12288, c12k, &idx));
	EXPECT_FALSE(odsm_pub_slot_of(61440, c12k, &idx));
}

/*
 * The home's side as the module keeps it: pages of words per block; and
 * every value a word has left, by its place (an open-addressed set): a
 * word must never come back to a live one (odsm_pub_known() relies on
 * it).  A free one may: a slot retired by the free of a recolored pointer
 * keeps the color its last object had, and its word is the one it had
 * before that object -- not live, which no reader keeps.
 */
#define LEFT_SLOTS	(1U << 17)

struct mirror {
	u32 words[NBLK][ODSM_PUB_WORDS];
	u64 left[LEFT_SLOTS];		/* place << 32 | value, + 1; 0: empty */
	u64 checks, usable, changes, returns;
};

/* Was (place, w) left before?  With add, it is now. */
static bool left_before(struct mirror *m, u32 place, u32 w, bool add)
{
	u64 key = ((u64)place << 32 | w) + 1;
	u32 i = (u32)(key * 0x9e3779b97f4a7c15ULL >> 47) & (LEFT_SLOTS - 1);

	for (; m->left[i]; i = (i + 1) & (LEFT_SLOTS - 1))
		if (m->left[i] == key)
			return true;
	if (add)
		m->left[i] = key;
	return false;
}

static void publish(struct odsm_palloc *pa, struct mirror *m, u64 addr)
{
	u32 b = (u32)((addr - pa->base) >> ODSM_BLOCK_SHIFT), idx, w;
	u32 place;

	if (!odsm_palloc_pub_slot(pa, addr, &idx, &w))
		return;
	place = b * ODSM_PUB_WORDS + idx;
	if (m->words[b][idx] != w) {
		m->changes++;
		left_before(m, place, m->words[b][idx], true);
		if ((w & ODSM_PUB_LIVE) && left_before(m, place, w, false))
			m->returns++;
	}
	m->words[b][idx] = w;
}

/*
 * Every word, read at every index as every class would: usable only for
 * a live, copied object of that class and color; and every live copied
 * slab object of a class with words has a usable word.
 */
static void check_all(struct __test_metadata *_metadata,
		      struct odsm_palloc *pa, struct mirror *m)
{
	struct odsm_objinfo oi;
	u32 b, i, cs;
	int cls;

	for (b = 0; b < NBLK; b++) {
		for (cls = 0; cls < ODSM_NR_CLASSES; cls++) {
			cs = odsm_class_size[cls];
			if (cs < ODSM_PUB_MIN_SLOT)
				continue;
			for (i = 0; i < ODSM_BLOCK_SIZE / cs; i++) {
				u64 a = pa->base + b * BLK + (u64)i * cs;
				u32 w = m->words[b][i];
				u16 gen = w & ODSM_PUB_GEN_MASK;
				bool ok = odsm_pub_usable(w, w, cls, gen);
				bool live = !odsm_palloc_lookup(pa, a, &oi);

				m->checks++;
				if (!ok)
					continue;
				m->usable++;
				ASSERT_TRUE(live)
					TH_LOG("block %u slot %u class %u: word %#x for no object",
					       b, i, cs, w);
				ASSERT_TRUE(oi.copied);
				ASSERT_EQ(cs, oi.size);
				ASSERT_EQ(gen, oi.color);
				ASSERT_TRUE(odsm_palloc_stale(pa, odsm_with_color(a, gen)) == false);
			}
		}
	}
	/* a run's word: usable only for that run, and each copied run's is */
	for (b = 0; b < NBLK; b++) {
		const struct odsm_block *blk = &pa->blocks[b];
		u64 a = pa->base + b * BLK;
		u32 w = m->words[b][0];
		u16 gen = w & ODSM_PUB_GEN_MASK;

		if (odsm_pub_run_usable(w, w, gen, gen)) {
			m->usable++;
			ASSERT_EQ(ODSM_BLK_HEAD, blk->kind)
				TH_LOG("block %u: run word %#x, kind %u", b, w,
				       blk->kind);
			ASSERT_EQ(0, odsm_palloc_lookup(pa, a, &oi));
			ASSERT_TRUE(oi.copied);
			ASSERT_EQ(gen, oi.color);
		}
		if (blk->kind == ODSM_BLK_HEAD && blk->copied)
			ASSERT_TRUE(odsm_pub_run_usable(w, w, blk->color,
							blk->color))
				TH_LOG("block %u: copied run, word %#x", b, w);
	}
	/* completeness: the live copied slab objects of classes with words */
	for (b = 0; b < NBLK; b++) {
		const struct odsm_block *blk = &pa->blocks[b];

		if (blk->kind != ODSM_BLK_SLAB ||
		    odsm_class_size[blk->cls] < ODSM_PUB_MIN_SLOT)
			continue;
		cs = odsm_class_size[blk->cls];
		for (i = 0; i < ODSM_BLOCK_SIZE / cs; i++) {
			u64 a = pa->base + b * BLK + (u64)i * cs;
			u32 w = m->words[b][i];

			if (odsm_palloc_lookup(pa, a, &oi) || !oi.copied)
				continue;
			ASSERT_TRUE(odsm_pub_usable(w, w, blk->cls, oi.color))
				TH_LOG("block %u slot %u: live copied, word %#x",
				       b, i, w);
		}
	}
}

struct obj {
	u64 cg;
	bool copied;
};

/* Sizes that move blocks between classes, and multi-block objects. */
static u64 pick_size(unsigned int r)
{
	static const u64 sizes[] = { 16, 48, 64, 100, 512, 700, 4096, 12288,
				     32768, 70000, 140000 };

	return sizes[r % (sizeof(sizes) / sizeof(sizes[0]))];
}

TEST(mirror_never_claims_a_wrong_object)
{
	static struct mirror m;
	struct odsm_release rel;
	struct odsm_palloc pa;
	struct obj live[512];
	unsigned int n = 0, op, i, b;
	u64 cg, usable;

	srand(12345);
	memset(&m, 0, sizeof(m));
	ASSERT_EQ(0, odsm_palloc_init(&pa, PBASE, NBLK * BLK));
	for (op = 0; op < 20000; op++) {
		unsigned int r = (unsigned int)rand();

		if (op == 3000) {
			/* the blocks pinned now: filled from the allocator */
			for (b = 0; b < NBLK; b++)
				odsm_palloc_pub_fill(&pa, pa.base + b * BLK,
						     m.words[b]);
		}
		if (n && (r % 3 == 0 || n == 512)) {
			i = r / 3 % n;
			/* a free with the object's color, or a later one
			 * (a recolored pointer): sometimes the last one,
			 * which retires the slot
			 */
			cg = live[i].cg;
			if (r % 97 == 0)
				cg = odsm_with_color(cg, 0xffff);
			ASSERT_EQ(0, odsm_palloc_free(&pa, cg, &rel));
			publish(&pa, &m, odsm_clear_color(cg));
			live[i] = live[--n];
		} else if (n && r % 3 == 1) {
			i = r / 3 % n;
			odsm_palloc_set_copied(&pa, odsm_clear_color(live[i].cg));
			publish(&pa, &m, odsm_clear_color(live[i].cg));
			live[i].copied = true;
		} else if (!odsm_palloc_alloc(&pa, pick_size(r / 3), 0, &cg,
					      &usable)) {
			publish(&pa, &m, odsm_clear_color(cg));
			live[n].cg = cg;
			live[n++].copied = false;
		}
		if (op >= 3000 && op % 50 == 0)
			check_all(_metadata, &pa, &m);
	}
	check_all(_metadata, &pa, &m);
	ksft_print_msg("%llu words checked, %llu usable, %llu changes, none back to a value left\n",
		       (unsigned long long)m.checks,
		       (unsigned long long)m.usable,
		       (unsigned long long)m.changes);
	ASSERT_GT(m.usable, 0ULL);
	ASSERT_GT(m.changes, 0ULL);
	ASSERT_EQ(0ULL, m.returns);
	odsm_palloc_destroy(&pa);
}

TEST(fill_matches_the_allocator)
{
	static u32 words[ODSM_PUB_WORDS];
	struct odsm_palloc pa;
	struct odsm_objinfo oi;
	struct odsm_release rel;
	u64 a, b2, big, usable;
	u32 idx, w;
	int c;

	ASSERT_EQ(0, odsm_palloc_init(&pa, PBASE, NBLK * BLK));
	c = odsm_pub_class_of_size(512);
	ASSERT_EQ(0, odsm_palloc_alloc(&pa, 512, 0, &a, &usable));
	ASSERT_EQ(0, odsm_palloc_alloc(&pa, 512, 0, &b2, &usable));
	odsm_palloc_set_copied(&pa, odsm_clear_color(a));
	odsm_palloc_pub_fill(&pa, odsm_clear_color(a), words);
	ASSERT_EQ(0, odsm_palloc_lookup(&pa, a, &oi));
	idx = (u32)((odsm_clear_color(a) - PBASE) % BLK / 512);
	EXPECT_TRUE(odsm_pub_usable(words[idx], words[idx], c, oi.color));
	idx = (u32)((odsm_clear_color(b2) - PBASE) % BLK / 512);
	EXPECT_FALSE(odsm_pub_usable(words[idx], words[idx], c, 0xffff));
	/* past the slab's slots: no word */
	EXPECT_EQ(0U, words[ODSM_BLOCK_SIZE / 512]);

	/* the slot's own word, and none for what is no slot start */
	ASSERT_TRUE(odsm_palloc_pub_slot(&pa, odsm_clear_color(a), &idx, &w));
	EXPECT_EQ(words[idx], w);
	EXPECT_FALSE(odsm_palloc_pub_slot(&pa, odsm_clear_color(a) + 16, &idx,
					  &w));

	/* a multi-block object: its head's first word, none in its tails */
	ASSERT_EQ(0, odsm_palloc_alloc(&pa, 3 * BLK, 0, &big, &usable));
	ASSERT_TRUE(odsm_palloc_pub_slot(&pa, odsm_clear_color(big), &idx,
					 &w));
	EXPECT_EQ(0U, idx);
	EXPECT_EQ(odsm_pub_run_word(true, false, odsm_color(big)), w);
	odsm_palloc_set_copied(&pa, odsm_clear_color(big));
	ASSERT_TRUE(odsm_palloc_pub_slot(&pa, odsm_clear_color(big), &idx,
					 &w));
	EXPECT_TRUE(odsm_pub_run_usable(w, w, odsm_color(big),
					odsm_color(big)));
	odsm_palloc_pub_fill(&pa, odsm_clear_color(big), words);
	EXPECT_EQ(w, words[0]);
	for (idx = 1; idx < ODSM_PUB_WORDS; idx++)
		ASSERT_EQ(0U, words[idx]);
	EXPECT_FALSE(odsm_palloc_pub_slot(&pa, odsm_clear_color(big) + 64,
					  &idx, &w));
	odsm_palloc_pub_fill(&pa, odsm_clear_color(big) + BLK, words);
	for (idx = 0; idx < ODSM_PUB_WORDS; idx++)
		ASSERT_EQ(0U, words[idx]);
	EXPECT_FALSE(odsm_palloc_pub_slot(&pa, odsm_clear_color(big) + BLK,
					  &idx, &w));
	/* freed: the head's word is not live any more */
	ASSERT_EQ(0, odsm_palloc_free(&pa, big, &rel));
	ASSERT_TRUE(odsm_palloc_pub_slot(&pa, odsm_clear_color(big), &idx,
					 &w));
	EXPECT_EQ(0U, w & ODSM_PUB_LIVE);
	/* a class too small for words: none */
	ASSERT_EQ(0, odsm_palloc_alloc(&pa, 16, 0, &a, &usable));
	odsm_palloc_set_copied(&pa, odsm_clear_color(a));
	EXPECT_FALSE(odsm_palloc_pub_slot(&pa, odsm_clear_color(a), &idx, &w));
	odsm_palloc_destroy(&pa);
}

TEST_HARNESS_MAIN
