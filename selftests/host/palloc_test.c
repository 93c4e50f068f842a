// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of kmod/odsm_palloc.c, the partition allocator's
 * bookkeeping: round trips, alignment, errors, the color floors that keep a
 * reused address from ever carrying a color an earlier object there had,
 * retirement, exhaustion, gauges, lookup/backed, and a randomized stress
 * run checked against a reference model.
 *
 * Every fixture test ends with a white-box walk of the allocator's
 * structures (pa_check) and, under AddressSanitizer, a leak check after
 * odsm_palloc_destroy().
 */
#include "odsm_palloc.h"
#include "odsm_addr.h"

#include <stdio.h>

#include "ksft_host.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

#define BLK		((u64)ODSM_BLOCK_SIZE)
/* node 3 of a heap of 1 GiB partitions at 16 TiB */
#define PBASE		(0x100000000000ULL + 3 * (1ULL << 30))
#define CMAX		0xffffU

static u64 cg_addr(u64 cg)
{
	return odsm_clear_color(cg);
}

static u32 cg_color(u64 cg)
{
	return odsm_color(cg);
}

static u32 block_index(const struct odsm_palloc *pa, u64 cg)
{
	return (u32)((cg_addr(cg) - pa->base) >> ODSM_BLOCK_SHIFT);
}

static int class_of_size(u32 cs)
{
	int c;

	for (c = 0; c < ODSM_NR_CLASSES; c++)
		if (odsm_class_size[c] == cs)
			return c;
	return -1;
}

static u32 popcount_map(const unsigned long *map, u32 bits)
{
	u32 i, n = 0;

	for (i = 0; i < bits; i++)
		if (map[i / BITS_PER_LONG] & (1UL << (i % BITS_PER_LONG)))
			n++;
	return n;
}

static bool map_test(const unsigned long *map, u32 i)
{
	return map[i / BITS_PER_LONG] & (1UL << (i % BITS_PER_LONG));
}

/*
 * White-box consistency of the allocator's structures: block kinds, slab
 * bitmaps, partial lists, floors and every gauge recomputed from scratch.
 */
static void pa_check(struct __test_metadata *_metadata,
		     const struct odsm_palloc *pa)
{
	u64 objects = 0, bytes = 0, slots_retired = 0;
	u32 free_blocks = 0, blocks_retired = 0, b, i;
	u8 *listed = calloc(pa->nr_blocks ? pa->nr_blocks : 1, 1);
	int c;

	ASSERT_NE(NULL, listed);
	ASSERT_EQ(pa->size, (u64)pa->nr_blocks << ODSM_BLOCK_SHIFT);
	ASSERT_LT(pa->rover, pa->nr_blocks);

	/* partial lists: well linked, only non-full slabs of their class */
	for (c = 0; c < ODSM_NR_CLASSES; c++) {
		s32 prev = -1, cur = pa->partial[c];
		u32 steps = 0;

		while (cur != -1) {
			const struct odsm_block *blk;

			ASSERT_GE(cur, 0);
			ASSERT_LT((u32)cur, pa->nr_blocks);
			ASSERT_LE(++steps, pa->nr_blocks)
				TH_LOG("class %d partial list loops", c);
			blk = &pa->blocks[cur];
			ASSERT_EQ(ODSM_BLK_SLAB, blk->kind)
				TH_LOG("block %d on partial list %d", cur, c);
			ASSERT_EQ(c, blk->cls);
			ASSERT_EQ(prev, blk->prev);
			ASSERT_LT(blk->slab->used, blk->slab->nr_slots);
			ASSERT_EQ(0, listed[cur]);
			listed[cur] = 1;
			prev = cur;
			cur = blk->next;
		}
	}

	for (b = 0; b < pa->nr_blocks; b++) {
		const struct odsm_block *blk = &pa->blocks[b];
		const struct odsm_slab *s;
		u32 cs;

		switch (blk->kind) {
		case ODSM_BLK_FREE:
			free_blocks++;
			ASSERT_LE(blk->floor, CMAX) TH_LOG("block %u", b);
			ASSERT_EQ(0, listed[b]);
			s = blk->slab;
			if (!s)
				break;
			/* history of the slab it last was: empty, per-slot
			 * colors no lower than the block's floor
			 */
			ASSERT_LT(blk->cls, ODSM_NR_CLASSES);
			ASSERT_EQ(odsm_class_slots(blk->cls), s->nr_slots);
			ASSERT_EQ(0U, s->used);
			ASSERT_EQ(0U, popcount_map(s->live, s->nr_slots));
			for (i = 0; i < s->nr_slots; i++)
				ASSERT_GE((u32)s->gen[i], blk->floor);
			break;
		case ODSM_BLK_SLAB:
			ASSERT_LT(blk->cls, ODSM_NR_CLASSES);
			ASSERT_LE(blk->floor, CMAX);
			s = blk->slab;
			ASSERT_NE(NULL, s);
			cs = odsm_class_size[blk->cls];
			ASSERT_EQ(odsm_class_slots(blk->cls), s->nr_slots);
			ASSERT_EQ(popcount_map(s->live, s->nr_slots), s->used)
				TH_LOG("block %u", b);
			/* no stray bits past the last slot */
			ASSERT_EQ(popcount_map(s->live,
					       (u32)(((s->nr_slots + BITS_PER_LONG - 1) /
						      BITS_PER_LONG) * BITS_PER_LONG)),
				  s->used);
			/* an empty slab goes back to the free blocks */
			ASSERT_GT(s->used, 0U) TH_LOG("empty slab %u", b);
			ASSERT_EQ(s->used < s->nr_slots, listed[b] != 0)
				TH_LOG("block %u used %u/%u", b, s->used,
				       s->nr_slots);
			for (i = 0; i < s->nr_slots; i++) {
				bool live = map_test(s->live, i);
				bool ret = map_test(s->retired, i);

				ASSERT_GE((u32)s->gen[i], blk->floor)
					TH_LOG("block %u slot %u", b, i);
				if (ret) {
					ASSERT_TRUE(live);
					slots_retired++;
				} else if (live) {
					objects++;
					bytes += cs;
				}
			}
			break;
		case ODSM_BLK_HEAD:
			ASSERT_GE(blk->nr, 1U);
			ASSERT_LE((u64)b + blk->nr, (u64)pa->nr_blocks);
			ASSERT_GT(blk->size, (u64)ODSM_SLAB_MAX);
			ASSERT_GT(blk->size, (u64)(blk->nr - 1) * BLK);
			ASSERT_LE(blk->size, (u64)blk->nr * BLK);
			ASSERT_EQ(0, listed[b]);
			objects++;
			bytes += (u64)blk->nr * BLK;
			for (i = 0; i < blk->nr; i++) {
				const struct odsm_block *t = &pa->blocks[b + i];

				if (i) {
					ASSERT_EQ(ODSM_BLK_TAIL, t->kind)
						TH_LOG("block %u of head %u",
						       b + i, b);
					/* containing() jumps back by it */
					ASSERT_EQ(i, t->nr)
						TH_LOG("tail %u of head %u",
						       b + i, b);
				}
				/* the object's color is above every floor */
				ASSERT_GE((u32)blk->color, t->floor);
			}
			b += blk->nr - 1;
			break;
		case ODSM_BLK_TAIL:
			ASSERT_TRUE(false) TH_LOG("orphan tail block %u", b);
			break;
		case ODSM_BLK_RETIRED:
			blocks_retired++;
			ASSERT_EQ(ODSM_COLOR_RETIRED, blk->floor);
			ASSERT_EQ(0, listed[b]);
			break;
		default:
			ASSERT_TRUE(false) TH_LOG("block %u kind %u", b,
						  blk->kind);
		}
	}
	free(listed);
	ASSERT_EQ(free_blocks, pa->free_blocks);
	ASSERT_EQ((u64)blocks_retired, pa->blocks_retired);
	ASSERT_EQ(slots_retired, pa->slots_retired);
	ASSERT_EQ(objects, pa->objects);
	ASSERT_EQ(bytes, pa->bytes);
}

static void leak_check(struct __test_metadata *_metadata)
{
#ifdef __SANITIZE_ADDRESS__
	ASSERT_EQ(0, __lsan_do_recoverable_leak_check());
#else
	(void)_metadata;
#endif
}

/* ---- helpers: allocate / free and check the obvious ----------------- */

static u64 do_alloc(struct __test_metadata *_metadata, struct odsm_palloc *pa,
		    u64 size, u32 align, u64 *usable_out)
{
	u64 cg = 0xdeadbeef, usable = 0, objects = pa->objects,
	    bytes = pa->bytes, a;
	u32 al = align > 16 ? align : 16;

	ASSERT_EQ(0, odsm_palloc_alloc(pa, size, align, &cg, &usable))
		TH_LOG("alloc size %llu align %u", (unsigned long long)size,
		       align);
	a = cg_addr(cg);
	ASSERT_GE(a, pa->base);
	ASSERT_GE(usable, size);
	ASSERT_LE(a + usable, pa->base + pa->size);
	ASSERT_EQ(0ULL, a % al);
	ASSERT_EQ(objects + 1, pa->objects);
	ASSERT_EQ(bytes + usable, pa->bytes);
	if (usable_out)
		*usable_out = usable;
	return cg;
}

static void do_free(struct __test_metadata *_metadata, struct odsm_palloc *pa,
		    u64 cg, u32 color, struct odsm_release *rel_out)
{
	struct odsm_release rel = { 0xdead, 0xdead };
	struct odsm_objinfo oi;
	u64 objects = pa->objects, bytes = pa->bytes;

	ASSERT_EQ(0, odsm_palloc_lookup(pa, cg, &oi));
	ASSERT_EQ(0, odsm_palloc_free(pa, odsm_with_color(cg, (u16)color),
				      &rel))
		TH_LOG("free %#llx color %#x", (unsigned long long)cg, color);
	ASSERT_EQ(objects - 1, pa->objects);
	ASSERT_EQ(bytes - oi.usable, pa->bytes);
	if (rel_out)
		*rel_out = rel;
}

/* The call must fail with -EINVAL and change nothing visible. */
static void free_einval(struct __test_metadata *_metadata,
			struct odsm_palloc *pa, u64 cg)
{
	struct odsm_release rel = { 0xdead, 0xdead };
	u64 objects = pa->objects, bytes = pa->bytes;
	u32 free_blocks = pa->free_blocks;

	ASSERT_EQ(-EINVAL, odsm_palloc_free(pa, cg, &rel))
		TH_LOG("free of %#llx should fail", (unsigned long long)cg);
	ASSERT_EQ(0U, rel.nr_blocks);
	ASSERT_EQ(objects, pa->objects);
	ASSERT_EQ(bytes, pa->bytes);
	ASSERT_EQ(free_blocks, pa->free_blocks);
}

static void alloc_fails(struct __test_metadata *_metadata,
			struct odsm_palloc *pa, u64 size, u32 align, int err)
{
	u64 cg = 0, usable = 0, objects = pa->objects, bytes = pa->bytes;
	u32 free_blocks = pa->free_blocks;

	ASSERT_EQ(err, odsm_palloc_alloc(pa, size, align, &cg, &usable))
		TH_LOG("alloc size %llu align %u should fail",
		       (unsigned long long)size, align);
	ASSERT_EQ(objects, pa->objects);
	ASSERT_EQ(bytes, pa->bytes);
	ASSERT_EQ(free_blocks, pa->free_blocks);
}

/* ---- init ------------------------------------------------------------- */

TEST(init_and_destroy)
{
	struct odsm_palloc pa;

	EXPECT_EQ(-EINVAL, odsm_palloc_init(&pa, PBASE, 0));
	EXPECT_EQ(-EINVAL, odsm_palloc_init(&pa, PBASE, BLK - 1));
	EXPECT_EQ(-EINVAL, odsm_palloc_init(&pa, PBASE, BLK + 16));
	EXPECT_EQ(-EINVAL, odsm_palloc_init(&pa, PBASE, 3 * BLK / 2));
	EXPECT_EQ(-EINVAL, odsm_palloc_init(&pa, PBASE + 4096, BLK));
	EXPECT_EQ(-EINVAL, odsm_palloc_init(&pa, PBASE + 1, BLK));
	EXPECT_EQ(-EINVAL, odsm_palloc_init(&pa, PBASE + BLK / 2, 4 * BLK));

	ASSERT_EQ(0, odsm_palloc_init(&pa, PBASE, 32 * BLK));
	EXPECT_EQ(PBASE, pa.base);
	EXPECT_EQ(32 * BLK, pa.size);
	EXPECT_EQ(32U, pa.nr_blocks);
	EXPECT_EQ(32U, pa.free_blocks);
	EXPECT_EQ(32 * BLK, odsm_palloc_max_alloc(&pa));
	EXPECT_EQ(0ULL, pa.objects);
	EXPECT_EQ(0ULL, pa.bytes);
	EXPECT_EQ(0ULL, pa.slots_retired);
	EXPECT_EQ(0ULL, pa.blocks_retired);
	pa_check(_metadata, &pa);
	odsm_palloc_destroy(&pa);
	EXPECT_EQ(NULL, pa.blocks);
	odsm_palloc_destroy(&pa);	/* twice is harmless */

	/* a partition at address 0 and a one-block one are fine */
	ASSERT_EQ(0, odsm_palloc_init(&pa, 0, BLK));
	EXPECT_EQ(1U, pa.nr_blocks);
	EXPECT_EQ(BLK, odsm_palloc_max_alloc(&pa));
	odsm_palloc_destroy(&pa);

	/* the largest partition the ABI allows */
	ASSERT_EQ(0, odsm_palloc_init(&pa, PBASE, ODSM_MAX_PART_SIZE));
	EXPECT_EQ((u32)(ODSM_MAX_PART_SIZE / BLK), pa.nr_blocks);
	odsm_palloc_destroy(&pa);
	leak_check(_metadata);
}

/* ---- the fixture: a fresh partition, checked and leak-checked at the end */

FIXTURE(pa)
{
	struct odsm_palloc pa;
	bool live;
};

static void pa_reinit(struct __test_metadata *_metadata,
		      FIXTURE_DATA(pa) *self, u32 nr_blocks)
{
	if (self->live)
		odsm_palloc_destroy(&self->pa);
	self->live = false;
	ASSERT_EQ(0, odsm_palloc_init(&self->pa, PBASE,
				      (u64)nr_blocks * BLK));
	self->live = true;
}

FIXTURE_SETUP(pa)
{
	pa_reinit(_metadata, self, 16);
}

FIXTURE_TEARDOWN(pa)
{
	if (!self->live)
		return;
	if (_metadata->passed)
		pa_check(_metadata, &self->pa);
	odsm_palloc_destroy(&self->pa);
	self->live = false;
	if (_metadata->passed)
		leak_check(_metadata);
}

TEST_F(pa, small_round_trip)
{
	struct odsm_palloc *pa = &self->pa;
	struct odsm_release rel;
	struct odsm_objinfo oi;
	u64 cg, usable, a;

	cg = do_alloc(_metadata, pa, 1, 0, &usable);
	a = cg_addr(cg);
	EXPECT_EQ(16ULL, usable);
	EXPECT_EQ(0U, cg_color(cg));
	EXPECT_EQ(1ULL, pa->objects);
	EXPECT_EQ(16ULL, pa->bytes);
	EXPECT_EQ(pa->nr_blocks - 1, pa->free_blocks);

	ASSERT_EQ(0, odsm_palloc_lookup(pa, cg, &oi));
	EXPECT_EQ(a, oi.addr);
	EXPECT_EQ(16ULL, oi.size);
	EXPECT_EQ(16ULL, oi.usable);
	EXPECT_EQ(0, oi.color);
	/* lookup ignores the color it is given */
	ASSERT_EQ(0, odsm_palloc_lookup(pa, odsm_with_color(cg, 0x1234), &oi));
	EXPECT_EQ(a, oi.addr);

	/* the whole slab block is backed, nothing else is */
	EXPECT_TRUE(odsm_palloc_backed(pa, a));
	EXPECT_TRUE(odsm_palloc_backed(pa, a + 16));
	EXPECT_TRUE(odsm_palloc_backed(pa, (a & ~(BLK - 1)) + BLK - 1));
	EXPECT_FALSE(odsm_palloc_backed(pa, (a & ~(BLK - 1)) + BLK));
	pa_check(_metadata, pa);

	do_free(_metadata, pa, cg, cg_color(cg), &rel);
	/* the slab emptied: its block is given back */
	EXPECT_EQ(1U, rel.nr_blocks);
	EXPECT_EQ(block_index(pa, cg), rel.first_block);
	EXPECT_EQ(0ULL, pa->objects);
	EXPECT_EQ(0ULL, pa->bytes);
	EXPECT_EQ(pa->nr_blocks, pa->free_blocks);
	EXPECT_FALSE(odsm_palloc_backed(pa, a));
	EXPECT_EQ(-EINVAL, odsm_palloc_lookup(pa, cg, &oi));
}

TEST_F(pa, slab_keeps_block_until_empty)
{
	struct odsm_palloc *pa = &self->pa;
	struct odsm_release rel;
	u64 cg[10];
	int i;

	for (i = 0; i < 10; i++) {
		cg[i] = do_alloc(_metadata, pa, 100, 0, NULL);
		/* one slab of the 128-byte class holds them all */
		ASSERT_EQ(block_index(pa, cg[0]), block_index(pa, cg[i]));
		if (i)
			ASSERT_NE(cg_addr(cg[i - 1]), cg_addr(cg[i]));
	}
	EXPECT_EQ(pa->nr_blocks - 1, pa->free_blocks);
	for (i = 0; i < 9; i++) {
		do_free(_metadata, pa, cg[i], cg_color(cg[i]), &rel);
		EXPECT_EQ(0U, rel.nr_blocks);
		EXPECT_TRUE(odsm_palloc_backed(pa, cg_addr(cg[i])));
	}
	/* a slab's block is not free: no class of a free slab */
	EXPECT_EQ(-1, odsm_palloc_free_class(pa, block_index(pa, cg[0])));
	do_free(_metadata, pa, cg[9], cg_color(cg[9]), &rel);
	EXPECT_EQ(1U, rel.nr_blocks);
	EXPECT_EQ(block_index(pa, cg[0]), rel.first_block);
	EXPECT_EQ(pa->nr_blocks, pa->free_blocks);
	/* the free block tells the class of the slab it held (the heap's
	 * kept blocks), and a block past the partition none
	 */
	EXPECT_EQ(odsm_size_to_class(100, 0),
		  odsm_palloc_free_class(pa, rel.first_block));
	EXPECT_EQ(-1, odsm_palloc_free_class(pa, pa->nr_blocks));
}

TEST_F(pa, every_class)
{
	struct odsm_palloc *pa = &self->pa;
	u64 cg[ODSM_NR_CLASSES][2];
	u64 bytes = 0;
	int c, k;

	pa_reinit(_metadata, self, 64);
	pa = &self->pa;
	for (c = 0; c < ODSM_NR_CLASSES; c++) {
		u32 cs = odsm_class_size[c];
		u64 sizes[2] = { c ? odsm_class_size[c - 1] + 1ULL : 1ULL, cs };

		for (k = 0; k < 2; k++) {
			struct odsm_objinfo oi;
			u64 usable;

			cg[c][k] = do_alloc(_metadata, pa, sizes[k], 0, &usable);
			ASSERT_EQ((u64)cs, usable)
				TH_LOG("size %llu", (unsigned long long)sizes[k]);
			bytes += usable;
			ASSERT_EQ(0ULL, (cg_addr(cg[c][k]) - PBASE) % BLK % cs);
			ASSERT_EQ(0, odsm_palloc_lookup(pa, cg[c][k], &oi));
			/* slab objects report their usable size */
			ASSERT_EQ((u64)cs, oi.size);
			ASSERT_EQ((u64)cs, oi.usable);
		}
		/* both in one slab of this class, no other class there */
		ASSERT_EQ(block_index(pa, cg[c][0]), block_index(pa, cg[c][1]));
		for (k = 0; k < c; k++)
			ASSERT_NE(block_index(pa, cg[k][0]),
				  block_index(pa, cg[c][0]));
		ASSERT_EQ(ODSM_BLK_SLAB,
			  pa->blocks[block_index(pa, cg[c][0])].kind);
		ASSERT_EQ(c, pa->blocks[block_index(pa, cg[c][0])].cls);
	}
	EXPECT_EQ(2ULL * ODSM_NR_CLASSES, pa->objects);
	EXPECT_EQ(bytes, pa->bytes);
	EXPECT_EQ(64U - ODSM_NR_CLASSES, pa->free_blocks);
	pa_check(_metadata, pa);
	for (c = 0; c < ODSM_NR_CLASSES; c++)
		for (k = 0; k < 2; k++)
			do_free(_metadata, pa, cg[c][k], 0, NULL);
	EXPECT_EQ(64U, pa->free_blocks);
	EXPECT_EQ(0ULL, pa->bytes);
}

TEST_F(pa, large_round_trip)
{
	static const struct {
		u64 size;
		u32 nr;
	} tab[] = {
		{ ODSM_SLAB_MAX + 1, 1 }, { BLK - 1, 1 }, { BLK, 1 },
		{ BLK + 1, 2 }, { 2 * BLK, 2 }, { 5 * BLK - 1, 5 },
	};
	struct odsm_palloc *pa = &self->pa;
	u64 cg[ARRAY_SIZE(tab)];
	u32 used = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(tab); i++) {
		struct odsm_objinfo oi;
		u64 usable, a;
		u32 j;

		cg[i] = do_alloc(_metadata, pa, tab[i].size, 0, &usable);
		a = cg_addr(cg[i]);
		used += tab[i].nr;
		ASSERT_EQ(tab[i].nr * BLK, usable);
		ASSERT_EQ(0ULL, (a - PBASE) % BLK);
		ASSERT_EQ(0U, cg_color(cg[i]));
		ASSERT_EQ(pa->nr_blocks - used, pa->free_blocks);
		ASSERT_EQ(0, odsm_palloc_lookup(pa, cg[i], &oi));
		ASSERT_EQ(a, oi.addr);
		ASSERT_EQ(tab[i].size, oi.size);	/* as requested */
		ASSERT_EQ(usable, oi.usable);
		ASSERT_EQ(0, oi.color);
		for (j = 0; j < tab[i].nr; j++) {
			ASSERT_TRUE(odsm_palloc_backed(pa, a + j * BLK));
			ASSERT_TRUE(odsm_palloc_backed(pa, a + j * BLK + BLK - 1));
			if (j) /* no lookup inside the object */
				ASSERT_EQ(-EINVAL, odsm_palloc_lookup(pa,
							a + j * BLK, &oi));
		}
	}
	pa_check(_metadata, pa);
	for (i = 0; i < ARRAY_SIZE(tab); i++) {
		struct odsm_release rel;
		u64 a = cg_addr(cg[i]);
		u32 j;

		do_free(_metadata, pa, cg[i], cg_color(cg[i]), &rel);
		used -= tab[i].nr;
		ASSERT_EQ(block_index(pa, cg[i]), rel.first_block);
		ASSERT_EQ(tab[i].nr, rel.nr_blocks);
		ASSERT_EQ(pa->nr_blocks - used, pa->free_blocks);
		/* a run's free blocks held no slab */
		ASSERT_EQ(-1, odsm_palloc_free_class(pa, rel.first_block));
		for (j = 0; j < tab[i].nr; j++)
			ASSERT_FALSE(odsm_palloc_backed(pa, a + j * BLK));
	}
	/* the whole partition as one object */
	cg[0] = do_alloc(_metadata, pa, pa->size, 0, NULL);
	EXPECT_EQ(PBASE, cg_addr(cg[0]));
	EXPECT_EQ(0U, pa->free_blocks);
	alloc_fails(_metadata, pa, 1, 0, -ENOMEM);
	do_free(_metadata, pa, cg[0], cg_color(cg[0]), NULL);
	EXPECT_EQ(pa->nr_blocks, pa->free_blocks);
}

TEST_F(pa, alignment)
{
	static const u64 sizes[] = {
		1, 16, 17, 33, 48, 80, 100, 200, 1000, 3000, 5000, 12000,
		20000, 32768, 32769, 40000, 70000,
	};
	struct odsm_palloc *pa;
	u64 *cgs;
	u32 n = 0, align, i, k;

	pa_reinit(_metadata, self, 512);
	pa = &self->pa;
	cgs = calloc(14 * ARRAY_SIZE(sizes) * 3, sizeof(*cgs));
	ASSERT_NE(NULL, cgs);
	for (align = 0; align <= ODSM_MAX_ALIGN; align = align ? 2 * align : 1) {
		for (i = 0; i < ARRAY_SIZE(sizes); i++) {
			for (k = 0; k < 3; k++) {
				u64 cg = do_alloc(_metadata, pa, sizes[i], align,
						  NULL);

				/* do_alloc checked max(align, 16) */
				cgs[n++] = cg;
				if (align >= 16)
					ASSERT_EQ(0ULL, cg_addr(cg) % align);
			}
		}
	}
	pa_check(_metadata, pa);
	for (i = 0; i < n; i++)
		do_free(_metadata, pa, cgs[i], cg_color(cgs[i]), NULL);
	free(cgs);
	EXPECT_EQ(pa->nr_blocks, pa->free_blocks);
}

TEST_F(pa, alloc_einval)
{
	static const u32 bad_aligns[] = {
		3, 5, 6, 7, 12, 24, 48, 96, 3072, 4095, 4097, 8192, 1U << 16,
		1U << 31, 0xffffffffU,
	};
	struct odsm_palloc *pa = &self->pa;
	unsigned int i;
	u64 cg;

	alloc_fails(_metadata, pa, 0, 0, -EINVAL);
	alloc_fails(_metadata, pa, 0, 16, -EINVAL);
	alloc_fails(_metadata, pa, pa->size + 1, 0, -EINVAL);
	alloc_fails(_metadata, pa, pa->size + BLK, 0, -EINVAL);
	alloc_fails(_metadata, pa, 1ULL << 40, 0, -EINVAL);
	alloc_fails(_metadata, pa, ~0ULL, 0, -EINVAL);
	alloc_fails(_metadata, pa, ~0ULL - BLK + 2, 0, -EINVAL);
	for (i = 0; i < ARRAY_SIZE(bad_aligns); i++) {
		alloc_fails(_metadata, pa, 16, bad_aligns[i], -EINVAL);
		alloc_fails(_metadata, pa, 100000, bad_aligns[i], -EINVAL);
	}
	EXPECT_EQ(0ULL, pa->objects);
	EXPECT_EQ(pa->nr_blocks, pa->free_blocks);
	/* while the biggest valid object is fine */
	cg = do_alloc(_metadata, pa, pa->size, 4096, NULL);
	do_free(_metadata, pa, cg, cg_color(cg), NULL);
}

TEST_F(pa, free_einval)
{
	struct odsm_palloc *pa = &self->pa;
	struct odsm_objinfo oi;
	u64 a32, a48, big, x, a, objects, bytes;
	u32 b48, k;

	a32 = do_alloc(_metadata, pa, 32, 0, NULL);
	a48 = do_alloc(_metadata, pa, 48, 0, NULL);
	big = do_alloc(_metadata, pa, 2 * BLK, 0, NULL);
	b48 = block_index(pa, a48);
	objects = pa->objects;
	bytes = pa->bytes;

	/* foreign addresses, colored or not */
	free_einval(_metadata, pa, 0);
	free_einval(_metadata, pa, ~0ULL);
	free_einval(_metadata, pa, ODSM_ADDR_MASK);
	free_einval(_metadata, pa, PBASE - 16);
	free_einval(_metadata, pa, PBASE - BLK);
	free_einval(_metadata, pa, PBASE + pa->size);
	free_einval(_metadata, pa, PBASE + pa->size + 16);
	free_einval(_metadata, pa, PBASE + (1ULL << 30));	/* node 4 */
	free_einval(_metadata, pa, PBASE - (1ULL << 30));	/* node 2 */
	free_einval(_metadata, pa, odsm_with_color(PBASE - 16, 0));
	free_einval(_metadata, pa, odsm_with_color(PBASE + pa->size, 5));

	/* the middle of a slab object, unaligned pointers */
	for (k = 1; k < 32; k++)
		free_einval(_metadata, pa, a32 + k);
	for (k = 1; k < 48; k++)
		free_einval(_metadata, pa, a48 + k);
	/* never-allocated slots of a live slab */
	for (k = 1; k < 40; k++) {
		free_einval(_metadata, pa, a32 + 32 * k);
		free_einval(_metadata, pa, a48 + 48 * k);
	}
	/* the bytes past the last slot of a 48-byte slab (65520..65535) */
	x = PBASE + b48 * BLK + 1365 * 48;
	ASSERT_EQ(1365U, odsm_class_slots(class_of_size(48)));
	free_einval(_metadata, pa, x);
	EXPECT_EQ(-EINVAL, odsm_palloc_lookup(pa, x, &oi));
	EXPECT_TRUE(odsm_palloc_backed(pa, x));

	/* inside a multi-block object: head+16, tail block, its end */
	free_einval(_metadata, pa, big + 16);
	free_einval(_metadata, pa, big + 4096);
	free_einval(_metadata, pa, big + BLK);
	free_einval(_metadata, pa, big + BLK + 16);
	free_einval(_metadata, pa, big + 2 * BLK - 16);

	/* a block nothing was ever allocated in */
	for (a = PBASE; a < PBASE + pa->size; a += BLK)
		if (!odsm_palloc_backed(pa, a)) {
			free_einval(_metadata, pa, a);
			free_einval(_metadata, pa, a + 16);
		}

	EXPECT_EQ(objects, pa->objects);
	EXPECT_EQ(bytes, pa->bytes);
	pa_check(_metadata, pa);

	/* double free: slab that stays (a second object keeps it) ... */
	x = do_alloc(_metadata, pa, 32, 0, NULL);
	do_free(_metadata, pa, a32, cg_color(a32), NULL);
	free_einval(_metadata, pa, a32);
	free_einval(_metadata, pa, odsm_with_color(a32, 1));
	free_einval(_metadata, pa, odsm_with_color(a32, CMAX));
	/* ... a slab that went away, and a multi-block object */
	do_free(_metadata, pa, x, cg_color(x), NULL);
	free_einval(_metadata, pa, x);
	do_free(_metadata, pa, a48, cg_color(a48), NULL);
	free_einval(_metadata, pa, a48);
	do_free(_metadata, pa, big, cg_color(big), NULL);
	free_einval(_metadata, pa, big);
	free_einval(_metadata, pa, odsm_with_color(big, CMAX));
	EXPECT_EQ(0ULL, pa->objects);
	EXPECT_EQ(pa->nr_blocks, pa->free_blocks);
}

/*
 * A slot freed with color c comes back with color c + 1; a free with an
 * older color than the object's is refused (a stale pointer); climbing to
 * 0xffff retires the slot for good.
 */
TEST_F(pa, slot_colors_and_retirement)
{
	struct odsm_palloc *pa;
	struct odsm_release rel;
	struct odsm_objinfo oi;
	u32 slots = odsm_class_slots(0), i, c;
	u64 *cg, x, a5;

	pa_reinit(_metadata, self, 1);
	pa = &self->pa;
	cg = calloc(slots, sizeof(*cg));
	ASSERT_NE(NULL, cg);
	for (i = 0; i < slots; i++) {
		cg[i] = do_alloc(_metadata, pa, 16, 0, NULL);
		ASSERT_EQ(PBASE + 16ULL * i, cg_addr(cg[i]));
		ASSERT_EQ(0U, cg_color(cg[i]));
	}
	alloc_fails(_metadata, pa, 16, 0, -ENOMEM);
	alloc_fails(_metadata, pa, 32, 0, -ENOMEM);
	alloc_fails(_metadata, pa, BLK, 0, -ENOMEM);

	/* slot 5 is the only free one, so it comes back each time */
	a5 = cg_addr(cg[5]);
	do_free(_metadata, pa, cg[5], cg_color(cg[5]), &rel);
	EXPECT_EQ(0U, rel.nr_blocks);
	x = do_alloc(_metadata, pa, 1, 0, NULL);
	ASSERT_EQ(a5, cg_addr(x));
	ASSERT_EQ(1U, cg_color(x));
	free_einval(_metadata, pa, odsm_with_color(x, 0));	/* stale */
	/* a free may carry any color the object had: a later one */
	do_free(_metadata, pa, odsm_with_color(x, 7), 7, NULL);
	x = do_alloc(_metadata, pa, 16, 0, NULL);
	ASSERT_EQ(a5, cg_addr(x));
	ASSERT_EQ(8U, cg_color(x));
	for (c = 0; c < 8; c++)
		free_einval(_metadata, pa, odsm_with_color(x, (u16)c));
	ASSERT_EQ(0, odsm_palloc_lookup(pa, a5, &oi));
	EXPECT_EQ(8, oi.color);

	/* climb through every color */
	for (c = 8; c < CMAX; c++) {
		do_free(_metadata, pa, x, c, NULL);
		x = do_alloc(_metadata, pa, 16, 0, NULL);
		ASSERT_EQ(a5, cg_addr(x));
		ASSERT_EQ(c + 1, cg_color(x));
	}
	ASSERT_EQ(CMAX, cg_color(x));
	free_einval(_metadata, pa, odsm_with_color(x, CMAX - 1));
	EXPECT_EQ(0ULL, pa->slots_retired);
	do_free(_metadata, pa, x, CMAX, &rel);
	EXPECT_EQ(0U, rel.nr_blocks);
	EXPECT_EQ(1ULL, pa->slots_retired);
	EXPECT_EQ(0ULL, pa->blocks_retired);
	/* retired: not live, not freeable, never handed out again */
	EXPECT_EQ(-EINVAL, odsm_palloc_lookup(pa, a5, &oi));
	free_einval(_metadata, pa, x);
	free_einval(_metadata, pa, a5);
	alloc_fails(_metadata, pa, 16, 0, -ENOMEM);
	EXPECT_TRUE(odsm_palloc_backed(pa, a5));
	pa_check(_metadata, pa);

	/* another slot still cycles normally */
	do_free(_metadata, pa, cg[9], 3, NULL);
	x = do_alloc(_metadata, pa, 16, 0, NULL);
	ASSERT_EQ(cg_addr(cg[9]), cg_addr(x));
	ASSERT_EQ(4U, cg_color(x));
	cg[9] = x;

	/* free all the others: the slab is kept (a retired slot lives on) */
	for (i = 0; i < slots; i++) {
		if (i == 5)
			continue;
		do_free(_metadata, pa, cg[i], cg_color(cg[i]), &rel);
		ASSERT_EQ(0U, rel.nr_blocks);
	}
	EXPECT_EQ(0ULL, pa->objects);
	EXPECT_EQ(0ULL, pa->bytes);
	EXPECT_EQ(0U, pa->free_blocks);
	EXPECT_TRUE(odsm_palloc_backed(pa, PBASE));
	/* the block stays a 16-byte slab: other classes find no room */
	alloc_fails(_metadata, pa, 32, 0, -ENOMEM);
	alloc_fails(_metadata, pa, BLK, 0, -ENOMEM);
	/* and all its slots but the retired one can be reused */
	for (i = 0; i < slots - 1; i++) {
		x = do_alloc(_metadata, pa, 16, 0, NULL);
		ASSERT_NE(a5, cg_addr(x));
		cg[i] = x;
	}
	alloc_fails(_metadata, pa, 16, 0, -ENOMEM);
	for (i = 0; i < slots - 1; i++) {
		ASSERT_GE(cg_color(cg[i]), 1U);	/* all were used before */
		do_free(_metadata, pa, cg[i], cg_color(cg[i]), NULL);
	}
	free(cg);
}

TEST_F(pa, stale_color_refused_multi_block)
{
	struct odsm_palloc *pa;
	struct odsm_objinfo oi;
	u64 x;
	u32 c;

	pa_reinit(_metadata, self, 2);
	pa = &self->pa;
	x = do_alloc(_metadata, pa, 2 * BLK, 0, NULL);
	ASSERT_EQ(0U, cg_color(x));
	do_free(_metadata, pa, x, 9, NULL);
	x = do_alloc(_metadata, pa, BLK + 1, 0, NULL);
	ASSERT_EQ(PBASE, cg_addr(x));
	ASSERT_EQ(10U, cg_color(x));
	for (c = 0; c < 10; c++)
		free_einval(_metadata, pa, odsm_with_color(x, (u16)c));
	ASSERT_EQ(0, odsm_palloc_lookup(pa, x, &oi));
	EXPECT_EQ(10, oi.color);
	EXPECT_EQ(BLK + 1, oi.size);
	do_free(_metadata, pa, x, 13, NULL);
	x = do_alloc(_metadata, pa, 2 * BLK, 0, NULL);
	EXPECT_EQ(14U, cg_color(x));
	do_free(_metadata, pa, x, 14, NULL);
}

/*
 * An emptied slab stays with its block: a slab of the same class there
 * again gives every slot the color after its own last one, so one hot slot
 * does not spend the colors of the whole block.
 */
TEST_F(pa, same_class_keeps_per_slot_colors)
{
	struct odsm_palloc *pa = &self->pa;
	struct odsm_release rel;
	u64 a, b;

	/* the hint brings the class back to its block even when next-fit
	 * has moved on ...
	 */
	a = do_alloc(_metadata, pa, 64, 0, NULL);
	do_free(_metadata, pa, a, 7, &rel);
	EXPECT_EQ(1U, rel.nr_blocks);
	a = do_alloc(_metadata, pa, 64, 0, NULL);
	ASSERT_EQ(PBASE, cg_addr(a));
	EXPECT_EQ(8U, cg_color(a));
	do_free(_metadata, pa, a, 8, NULL);

	/* ... and in a one-block partition every step lands on block 0 */
	pa_reinit(_metadata, self, 1);
	pa = &self->pa;

	a = do_alloc(_metadata, pa, 64, 0, NULL);
	b = do_alloc(_metadata, pa, 64, 0, NULL);
	ASSERT_EQ(PBASE, cg_addr(a));
	ASSERT_EQ(PBASE + 64, cg_addr(b));
	do_free(_metadata, pa, a, 900, &rel);	/* a hot object */
	EXPECT_EQ(0U, rel.nr_blocks);
	do_free(_metadata, pa, b, 0, &rel);
	EXPECT_EQ(1U, rel.nr_blocks);		/* the block is free again */
	EXPECT_EQ(0U, pa->blocks[0].floor);

	a = do_alloc(_metadata, pa, 64, 0, NULL);
	b = do_alloc(_metadata, pa, 64, 0, NULL);
	ASSERT_EQ(PBASE, cg_addr(a));
	ASSERT_EQ(PBASE + 64, cg_addr(b));
	EXPECT_EQ(901U, cg_color(a));
	EXPECT_EQ(1U, cg_color(b));		/* not 901 */
	do_free(_metadata, pa, a, 901, NULL);
	do_free(_metadata, pa, b, 1, NULL);

	/* another class folds the whole history into the floor */
	a = do_alloc(_metadata, pa, 128, 0, NULL);
	ASSERT_EQ(PBASE, cg_addr(a));
	EXPECT_EQ(902U, cg_color(a));
	do_free(_metadata, pa, a, 902, NULL);
}

/*
 * The floor is per block: a block that was a 16-byte slab and becomes a
 * 48-byte slab (whose slots start at other offsets) starts every new slot
 * above every color any old slot had; the same between slabs and
 * multi-block objects, both ways.
 */
TEST_F(pa, floor_carries_across_kinds)
{
	struct odsm_palloc *pa;
	struct odsm_release rel;
	u64 cg[8], x, y, *c48;
	u32 i, n48 = odsm_class_slots(class_of_size(48));

	pa_reinit(_metadata, self, 1);
	pa = &self->pa;
	for (i = 0; i < 8; i++)
		cg[i] = do_alloc(_metadata, pa, 16, 0, NULL);
	/* slot 3 (offset 48) goes with color 40, slot i with color i */
	for (i = 0; i < 8; i++) {
		do_free(_metadata, pa, cg[i], i == 3 ? 40 : i, &rel);
		EXPECT_EQ(i == 7 ? 1U : 0U, rel.nr_blocks);
	}
	/* the block keeps the 16-byte slab as history: folded into the
	 * floor when a 48-byte slab forms there (colors checked below)
	 */

	/* 48-byte class: offset 48 is slot 1 now; it had color 40 */
	c48 = calloc(n48, sizeof(*c48));
	ASSERT_NE(NULL, c48);
	for (i = 0; i < n48; i++) {
		c48[i] = do_alloc(_metadata, pa, 48, 0, NULL);
		ASSERT_EQ(PBASE + 48ULL * i, cg_addr(c48[i]));
		ASSERT_EQ(41U, cg_color(c48[i]));
	}
	alloc_fails(_metadata, pa, 48, 0, -ENOMEM);
	for (i = 0; i < n48; i++)
		do_free(_metadata, pa, c48[i], i == 1000 ? 100 : 41, NULL);
	free(c48);

	/* slab -> one-block object */
	x = do_alloc(_metadata, pa, 40000, 0, NULL);
	ASSERT_EQ(PBASE, cg_addr(x));
	ASSERT_EQ(101U, cg_color(x));
	do_free(_metadata, pa, x, 200, NULL);
	/* one-block object -> slab */
	x = do_alloc(_metadata, pa, 4096, 4096, NULL);
	ASSERT_EQ(PBASE, cg_addr(x));
	ASSERT_EQ(201U, cg_color(x));
	y = do_alloc(_metadata, pa, 4096, 0, NULL);
	ASSERT_EQ(201U, cg_color(y));
	do_free(_metadata, pa, x, 201, NULL);
	do_free(_metadata, pa, y, 201, NULL);
	/* the emptied slab stays as the block's history ... */
	EXPECT_EQ(201U, pa->blocks[0].floor);
	ASSERT_NE(NULL, pa->blocks[0].slab);
	/* ... and a block-sized object there folds it in */
	x = do_alloc(_metadata, pa, 40000, 0, NULL);
	ASSERT_EQ(PBASE, cg_addr(x));
	ASSERT_EQ(202U, cg_color(x));
	ASSERT_EQ(202U, pa->blocks[0].floor);
	do_free(_metadata, pa, x, 202, NULL);

	/* two blocks with different floors: the object takes the higher */
	pa_reinit(_metadata, self, 2);
	pa = &self->pa;
	x = do_alloc(_metadata, pa, 16, 0, NULL);	/* block 0 */
	y = do_alloc(_metadata, pa, 32, 0, NULL);	/* block 1 */
	ASSERT_NE(block_index(pa, x), block_index(pa, y));
	do_free(_metadata, pa, x, 10, NULL);
	do_free(_metadata, pa, y, 30, NULL);
	x = do_alloc(_metadata, pa, 2 * BLK, 0, NULL);
	ASSERT_EQ(31U, cg_color(x));
	do_free(_metadata, pa, x, 31, NULL);
	/* both blocks now start at 32, whichever a slab lands in */
	x = do_alloc(_metadata, pa, 16, 0, NULL);
	y = do_alloc(_metadata, pa, 32, 0, NULL);
	EXPECT_EQ(32U, cg_color(x));
	EXPECT_EQ(32U, cg_color(y));
	do_free(_metadata, pa, x, 32, NULL);
	do_free(_metadata, pa, y, 32, NULL);
	/* a tail block's history counts as much as the head's */
	x = do_alloc(_metadata, pa, BLK, 0, NULL);
	y = do_alloc(_metadata, pa, BLK, 0, NULL);
	EXPECT_EQ(33U, cg_color(x));
	EXPECT_EQ(33U, cg_color(y));
	do_free(_metadata, pa, x, 33, NULL);
	do_free(_metadata, pa, y, 500, NULL);
	x = do_alloc(_metadata, pa, 2 * BLK, 0, NULL);
	EXPECT_EQ(501U, cg_color(x));
	do_free(_metadata, pa, x, 501, NULL);
}

TEST_F(pa, multi_block_retirement)
{
	struct odsm_palloc *pa;
	struct odsm_release rel;
	struct odsm_objinfo oi;
	u64 x, y;
	u32 i, b;

	pa_reinit(_metadata, self, 4);
	pa = &self->pa;
	x = do_alloc(_metadata, pa, 3 * BLK, 0, NULL);
	ASSERT_EQ(PBASE, cg_addr(x));
	/* the holder of a pointer may have raised its color to the last */
	do_free(_metadata, pa, x, CMAX, &rel);
	EXPECT_EQ(0U, rel.first_block);
	EXPECT_EQ(3U, rel.nr_blocks);	/* pages may go */
	EXPECT_EQ(3ULL, pa->blocks_retired);
	EXPECT_EQ(1U, pa->free_blocks);
	EXPECT_EQ(0ULL, pa->objects);
	for (b = 0; b < 3; b++) {
		EXPECT_FALSE(odsm_palloc_backed(pa, PBASE + b * BLK));
		EXPECT_EQ(-EINVAL, odsm_palloc_lookup(pa, PBASE + b * BLK, &oi));
		free_einval(_metadata, pa, odsm_with_color(PBASE + b * BLK,
							   CMAX));
	}
	alloc_fails(_metadata, pa, 2 * BLK, 0, -ENOMEM);
	/* only block 3 is ever handed out again */
	for (i = 0; i < 300; i++) {
		x = do_alloc(_metadata, pa, i % 2 ? BLK : 16 + i, 0, NULL);
		ASSERT_EQ(3U, block_index(pa, x));
		alloc_fails(_metadata, pa, i % 2 ? 16 : BLK, 0, -ENOMEM);
		do_free(_metadata, pa, x, cg_color(x), NULL);
	}
	pa_check(_metadata, pa);

	/* climbing naturally: a block at floor 0xffff retires after one use */
	x = do_alloc(_metadata, pa, BLK, 0, NULL);
	do_free(_metadata, pa, x, CMAX - 1, NULL);
	x = do_alloc(_metadata, pa, BLK, 0, NULL);
	ASSERT_EQ(CMAX, cg_color(x));
	free_einval(_metadata, pa, odsm_with_color(x, CMAX - 1));
	do_free(_metadata, pa, x, CMAX, &rel);
	EXPECT_EQ(3U, rel.first_block);
	EXPECT_EQ(4ULL, pa->blocks_retired);
	EXPECT_EQ(0U, pa->free_blocks);
	alloc_fails(_metadata, pa, 16, 0, -ENOMEM);
	alloc_fails(_metadata, pa, BLK, 0, -ENOMEM);
	alloc_fails(_metadata, pa, pa->size, 0, -ENOMEM);

	/* an object over a high-floor and a fresh block takes the high
	 * floor, and its retirement takes both blocks
	 */
	pa_reinit(_metadata, self, 2);
	pa = &self->pa;
	x = do_alloc(_metadata, pa, BLK, 0, NULL);
	y = do_alloc(_metadata, pa, BLK, 0, NULL);
	do_free(_metadata, pa, x, cg_color(x), NULL);
	do_free(_metadata, pa, y, CMAX - 1, NULL);
	x = do_alloc(_metadata, pa, 2 * BLK, 0, NULL);
	ASSERT_EQ(CMAX, cg_color(x));
	do_free(_metadata, pa, x, CMAX, &rel);
	EXPECT_EQ(2U, rel.nr_blocks);
	EXPECT_EQ(2ULL, pa->blocks_retired);
	alloc_fails(_metadata, pa, 16, 0, -ENOMEM);
}

/* A slab in a block whose floor is 0xffff: every slot is single-use. */
TEST_F(pa, slab_at_last_color)
{
	struct odsm_palloc *pa;
	struct odsm_release rel;
	u64 x, y, cg[2];
	u32 i, n = odsm_class_slots(class_of_size(4096));

	pa_reinit(_metadata, self, 1);
	pa = &self->pa;
	x = do_alloc(_metadata, pa, BLK, 0, NULL);
	do_free(_metadata, pa, x, CMAX - 1, NULL);
	for (i = 0; i < n; i++) {
		x = do_alloc(_metadata, pa, 4096, 0, NULL);
		ASSERT_EQ(CMAX, cg_color(x));
		ASSERT_EQ(PBASE + 4096ULL * i, cg_addr(x));
		do_free(_metadata, pa, x, CMAX, &rel);
		ASSERT_EQ(0U, rel.nr_blocks);
		ASSERT_EQ(i + 1ULL, pa->slots_retired);
	}
	/* every slot retired: the block is dead for every size */
	alloc_fails(_metadata, pa, 4096, 0, -ENOMEM);
	alloc_fails(_metadata, pa, 16, 0, -ENOMEM);
	alloc_fails(_metadata, pa, BLK, 0, -ENOMEM);
	EXPECT_EQ(0ULL, pa->objects);
	EXPECT_EQ(0ULL, pa->bytes);
	EXPECT_EQ(0U, pa->free_blocks);
	pa_check(_metadata, pa);

	/* two-slot class: retire a slot of a full slab, then reuse the other */
	pa_reinit(_metadata, self, 1);
	pa = &self->pa;
	cg[0] = do_alloc(_metadata, pa, ODSM_SLAB_MAX, 0, NULL);
	cg[1] = do_alloc(_metadata, pa, ODSM_SLAB_MAX, 0, NULL);
	alloc_fails(_metadata, pa, ODSM_SLAB_MAX, 0, -ENOMEM);
	do_free(_metadata, pa, cg[0], CMAX, NULL);	/* full slab stays full */
	alloc_fails(_metadata, pa, ODSM_SLAB_MAX, 0, -ENOMEM);
	pa_check(_metadata, pa);
	do_free(_metadata, pa, cg[1], 3, NULL);
	for (i = 0; i < 5; i++) {
		y = do_alloc(_metadata, pa, 30000, 0, NULL);	/* 32 KiB */
		ASSERT_EQ(cg_addr(cg[1]), cg_addr(y));
		ASSERT_EQ(4 + i, cg_color(y));
		alloc_fails(_metadata, pa, 30000, 0, -ENOMEM);
		do_free(_metadata, pa, y, cg_color(y), &rel);
		ASSERT_EQ(0U, rel.nr_blocks);
	}
}

TEST_F(pa, exhaustion_and_recovery)
{
	static const u32 sizes[] = { 16, 48, 1000, 24576, 32768 };
	struct odsm_palloc *pa;
	u64 *cg, x;
	u32 i, n, s, b;

	pa_reinit(_metadata, self, 8);
	pa = &self->pa;
	cg = calloc(8 * odsm_class_slots(0) + 1, sizeof(*cg));
	ASSERT_NE(NULL, cg);
	for (s = 0; s < ARRAY_SIZE(sizes); s++) {
		int cls = odsm_size_to_class(sizes[s], 0);
		u32 want = 8 * odsm_class_slots(cls);
		u64 usable;

		for (n = 0; ; n++) {
			u64 u = 0;
			int ret = odsm_palloc_alloc(pa, sizes[s], 0, &cg[n], &u);

			if (ret) {
				ASSERT_EQ(-ENOMEM, ret);
				break;
			}
			ASSERT_LT(n, want);
		}
		ASSERT_EQ(want, n) TH_LOG("size %u", sizes[s]);
		usable = odsm_class_size[cls];
		EXPECT_EQ((u64)n, pa->objects);
		EXPECT_EQ(n * usable, pa->bytes);
		EXPECT_EQ(0U, pa->free_blocks);
		/* nothing fits, of any size */
		alloc_fails(_metadata, pa, sizes[s], 0, -ENOMEM);
		alloc_fails(_metadata, pa, sizes[s] == 16 ? 32 : 16, 0, -ENOMEM);
		alloc_fails(_metadata, pa, BLK, 0, -ENOMEM);
		alloc_fails(_metadata, pa, 8 * BLK, 0, -ENOMEM);
		pa_check(_metadata, pa);
		for (i = 0; i < n; i++)
			do_free(_metadata, pa, cg[i], cg_color(cg[i]), NULL);
		EXPECT_EQ(8U, pa->free_blocks);
		EXPECT_EQ(0ULL, pa->objects);
		EXPECT_EQ(0ULL, pa->bytes);
		/* everything usable again: the whole partition at once */
		x = do_alloc(_metadata, pa, 8 * BLK, 0, NULL);
		ASSERT_EQ(PBASE, cg_addr(x));
		do_free(_metadata, pa, x, cg_color(x), NULL);
	}

	/* fragmentation: free blocks 0, 2, 4, 6 -> no two-block run */
	for (b = 0; b < 8; b++)
		cg[b] = do_alloc(_metadata, pa, BLK, 0, NULL);
	alloc_fails(_metadata, pa, 16, 0, -ENOMEM);
	/* the whole-partition object above left the rover at 0 */
	for (b = 0; b < 8; b++)
		ASSERT_EQ(b, block_index(pa, cg[b]));
	for (b = 0; b < 8; b += 2)
		do_free(_metadata, pa, cg[b], cg_color(cg[b]), NULL);
	EXPECT_EQ(4U, pa->free_blocks);
	alloc_fails(_metadata, pa, BLK + 1, 0, -ENOMEM);
	alloc_fails(_metadata, pa, 2 * BLK, 0, -ENOMEM);
	x = do_alloc(_metadata, pa, BLK, 0, NULL);
	do_free(_metadata, pa, x, cg_color(x), NULL);
	/* free block 1 too: now 0..2 is a run */
	do_free(_metadata, pa, cg[1], cg_color(cg[1]), NULL);
	x = do_alloc(_metadata, pa, 3 * BLK, 0, NULL);
	EXPECT_EQ(PBASE, cg_addr(x));
	alloc_fails(_metadata, pa, 2 * BLK, 0, -ENOMEM);
	do_free(_metadata, pa, x, cg_color(x), NULL);
	for (b = 3; b < 8; b += 2)
		do_free(_metadata, pa, cg[b], cg_color(cg[b]), NULL);
	x = do_alloc(_metadata, pa, 8 * BLK, 0, NULL);
	do_free(_metadata, pa, x, cg_color(x), NULL);
	free(cg);
}

/* Runs never wrap around the end; a wrapped search still finds a run. */
TEST_F(pa, run_search_wraps)
{
	struct odsm_palloc *pa;
	u64 cg[4], x;
	u32 b, k, j;

	pa_reinit(_metadata, self, 4);
	pa = &self->pa;
	for (b = 0; b < 3; b++) {
		cg[b] = do_alloc(_metadata, pa, BLK, 0, NULL);
		ASSERT_EQ(b, block_index(pa, cg[b]));
	}
	/* rover at 3; blocks 3, 0, 1 free: the run 3,0 must not be taken,
	 * the run 0..1 after the wrap must
	 */
	do_free(_metadata, pa, cg[0], cg_color(cg[0]), NULL);
	do_free(_metadata, pa, cg[1], cg_color(cg[1]), NULL);
	x = do_alloc(_metadata, pa, 2 * BLK, 0, NULL);
	EXPECT_EQ(PBASE, cg_addr(x));
	do_free(_metadata, pa, x, cg_color(x), NULL);
	/* rover at 2: single blocks go to 3, then (wrapping) 0, then 1 */
	ASSERT_EQ(2U, pa->rover);
	cg[3] = do_alloc(_metadata, pa, BLK, 0, NULL);
	cg[0] = do_alloc(_metadata, pa, BLK, 0, NULL);
	cg[1] = do_alloc(_metadata, pa, BLK, 0, NULL);
	for (b = 0; b < 4; b++)
		ASSERT_EQ(b, block_index(pa, cg[b]));
	/* blocks 1, 2 used; 3 and 0 free, adjacent only across the end */
	do_free(_metadata, pa, cg[3], cg_color(cg[3]), NULL);
	do_free(_metadata, pa, cg[0], cg_color(cg[0]), NULL);
	alloc_fails(_metadata, pa, 2 * BLK, 0, -ENOMEM);
	do_free(_metadata, pa, cg[1], cg_color(cg[1]), NULL);
	do_free(_metadata, pa, cg[2], cg_color(cg[2]), NULL);
	ASSERT_EQ(4U, pa->free_blocks);
	/* from every rover position the whole partition is found */
	for (k = 0; k < 4; k++) {
		x = do_alloc(_metadata, pa, 4 * BLK, 0, NULL);
		ASSERT_EQ(PBASE, cg_addr(x));
		do_free(_metadata, pa, x, cg_color(x), NULL);
		ASSERT_EQ(0U, pa->rover);
		for (j = 0; j <= k; j++) {
			x = do_alloc(_metadata, pa, BLK, 0, NULL);
			do_free(_metadata, pa, x, cg_color(x), NULL);
		}
		ASSERT_EQ((k + 1) % 4, pa->rover);
	}
}

TEST_F(pa, gauges)
{
	struct odsm_palloc *pa = &self->pa;
	u64 a, b, c, d;

	a = do_alloc(_metadata, pa, 1, 0, NULL);		/* 16 */
	b = do_alloc(_metadata, pa, 100, 0, NULL);		/* 128 */
	c = do_alloc(_metadata, pa, 100000, 0, NULL);		/* 2 blocks */
	d = do_alloc(_metadata, pa, 100, 256, NULL);		/* 256 */
	EXPECT_EQ(4ULL, pa->objects);
	EXPECT_EQ(16 + 128 + 2 * BLK + 256, pa->bytes);
	do_free(_metadata, pa, c, cg_color(c), NULL);
	EXPECT_EQ(3ULL, pa->objects);
	EXPECT_EQ(16ULL + 128 + 256, pa->bytes);
	free_einval(_metadata, pa, c);
	do_free(_metadata, pa, b, CMAX, NULL);			/* retires */
	EXPECT_EQ(2ULL, pa->objects);
	EXPECT_EQ(16ULL + 256, pa->bytes);
	EXPECT_EQ(1ULL, pa->slots_retired);
	do_free(_metadata, pa, a, cg_color(a), NULL);
	do_free(_metadata, pa, d, cg_color(d), NULL);
	EXPECT_EQ(0ULL, pa->objects);
	EXPECT_EQ(0ULL, pa->bytes);
	/* the slab with the retired slot stays */
	EXPECT_EQ(pa->nr_blocks - 1, pa->free_blocks);
}

TEST_F(pa, backed_and_lookup)
{
	struct odsm_palloc *pa = &self->pa;
	struct odsm_objinfo oi;
	u64 s, m, end = PBASE + pa->size, a;

	s = do_alloc(_metadata, pa, 48, 0, NULL);
	m = do_alloc(_metadata, pa, 3 * BLK - 100, 0, NULL);

	EXPECT_FALSE(odsm_palloc_backed(pa, 0));
	EXPECT_FALSE(odsm_palloc_backed(pa, PBASE - 1));
	EXPECT_FALSE(odsm_palloc_backed(pa, end));
	EXPECT_FALSE(odsm_palloc_backed(pa, ~0ULL));
	EXPECT_FALSE(odsm_palloc_backed(pa, ODSM_ADDR_MASK));
	for (a = PBASE; a < end; a += 4096) {
		u32 b = (u32)((a - PBASE) / BLK);
		bool want = b == block_index(pa, s) ||
			    (b >= block_index(pa, m) &&
			     b < block_index(pa, m) + 3);

		ASSERT_EQ(want, odsm_palloc_backed(pa, a));
		ASSERT_EQ(want, odsm_palloc_backed(pa, a + 4095));
	}

	/* lookup: exact starts only, color ignored */
	ASSERT_EQ(0, odsm_palloc_lookup(pa, odsm_with_color(s, 77), &oi));
	EXPECT_EQ(cg_addr(s), oi.addr);
	EXPECT_EQ(48ULL, oi.size);
	EXPECT_EQ(48ULL, oi.usable);
	ASSERT_EQ(0, odsm_palloc_lookup(pa, odsm_with_color(m, CMAX), &oi));
	EXPECT_EQ(cg_addr(m), oi.addr);
	EXPECT_EQ(3 * BLK - 100, oi.size);
	EXPECT_EQ(3 * BLK, oi.usable);
	EXPECT_EQ(0, oi.color);
	EXPECT_EQ(-EINVAL, odsm_palloc_lookup(pa, s + 16, &oi));
	EXPECT_EQ(-EINVAL, odsm_palloc_lookup(pa, s + 48, &oi));
	EXPECT_EQ(-EINVAL, odsm_palloc_lookup(pa, s + 1, &oi));
	EXPECT_EQ(-EINVAL, odsm_palloc_lookup(pa, m + 16, &oi));
	EXPECT_EQ(-EINVAL, odsm_palloc_lookup(pa, m + BLK, &oi));
	EXPECT_EQ(-EINVAL, odsm_palloc_lookup(pa, m + 2 * BLK, &oi));
	EXPECT_EQ(-EINVAL, odsm_palloc_lookup(pa, PBASE - 16, &oi));
	EXPECT_EQ(-EINVAL, odsm_palloc_lookup(pa, end, &oi));
	EXPECT_EQ(-EINVAL, odsm_palloc_lookup(pa, ~0ULL, &oi));

	do_free(_metadata, pa, s, cg_color(s), NULL);
	do_free(_metadata, pa, m, cg_color(m), NULL);
	for (a = PBASE; a < end; a += BLK / 2)
		ASSERT_FALSE(odsm_palloc_backed(pa, a));
	EXPECT_EQ(-EINVAL, odsm_palloc_lookup(pa, s, &oi));
	EXPECT_EQ(-EINVAL, odsm_palloc_lookup(pa, m, &oi));
}

/*
 * The object that holds an interior address (a box inside it), the mark a
 * FETCH leaves, and which colored addresses name an object that is gone.
 */
TEST_F(pa, containing_copied_and_stale)
{
	struct odsm_palloc *pa = &self->pa;
	struct odsm_release rel;
	struct odsm_objinfo oi;
	u64 s, s2, m, x;

	s = do_alloc(_metadata, pa, 48, 0, NULL);
	s2 = do_alloc(_metadata, pa, 48, 0, NULL);
	m = do_alloc(_metadata, pa, 3 * BLK - 100, 0, NULL);

	/* containing: any byte of the object's usable span */
	ASSERT_EQ(0, odsm_palloc_containing(pa, cg_addr(s) + 32, &oi));
	EXPECT_EQ(cg_addr(s), oi.addr);
	ASSERT_EQ(0, odsm_palloc_containing(pa, cg_addr(s) + 47, &oi));
	EXPECT_EQ(cg_addr(s), oi.addr);
	ASSERT_EQ(0, odsm_palloc_containing(pa, cg_addr(s2), &oi));
	EXPECT_EQ(cg_addr(s2), oi.addr);
	ASSERT_EQ(0, odsm_palloc_containing(pa, cg_addr(m) + 2 * BLK + 16,
					    &oi));
	EXPECT_EQ(cg_addr(m), oi.addr);
	EXPECT_EQ(3 * BLK, oi.usable);
	EXPECT_EQ(-EINVAL, odsm_palloc_containing(pa, cg_addr(s2) + 48, &oi));
	EXPECT_EQ(-EINVAL, odsm_palloc_containing(pa, cg_addr(m) + 3 * BLK,
						  &oi));
	EXPECT_EQ(-EINVAL, odsm_palloc_containing(pa, PBASE - 16, &oi));
	/* the last byte of a run freed and allocated again, longer */
	ASSERT_EQ(0, odsm_palloc_free(pa, m, &rel));
	m = do_alloc(_metadata, pa, 5 * BLK, 0, NULL);
	ASSERT_EQ(0, odsm_palloc_containing(pa, cg_addr(m) + 5 * BLK - 1,
					    &oi));
	EXPECT_EQ(cg_addr(m), oi.addr);
	EXPECT_EQ(5 * BLK, oi.usable);

	/* copied: set per object, read by lookup and containing alike */
	ASSERT_EQ(0, odsm_palloc_lookup(pa, s, &oi));
	EXPECT_FALSE(oi.copied);
	odsm_palloc_set_copied(pa, cg_addr(s));
	odsm_palloc_set_copied(pa, cg_addr(m));
	odsm_palloc_set_copied(pa, cg_addr(s2) + 16);	/* not a start */
	ASSERT_EQ(0, odsm_palloc_containing(pa, cg_addr(s) + 16, &oi));
	EXPECT_TRUE(oi.copied);
	ASSERT_EQ(0, odsm_palloc_containing(pa, cg_addr(m) + BLK, &oi));
	EXPECT_TRUE(oi.copied);
	ASSERT_EQ(0, odsm_palloc_lookup(pa, s2, &oi));
	EXPECT_FALSE(oi.copied);

	/* stale: a color below a live object's, none at or above it */
	EXPECT_FALSE(odsm_palloc_stale(pa, s));
	EXPECT_FALSE(odsm_palloc_stale(pa, odsm_with_color(s, 5)));
	EXPECT_FALSE(odsm_palloc_stale(pa, s + 16));	/* no object starts */

	/* the mark goes with the object; the freed address is stale below
	 * the next color it may carry
	 */
	do_free(_metadata, pa, s, 6, NULL);
	EXPECT_TRUE(odsm_palloc_stale(pa, odsm_with_color(s, 6)));
	EXPECT_FALSE(odsm_palloc_stale(pa, odsm_with_color(s, 7)));
	do_free(_metadata, pa, m, 3, NULL);
	EXPECT_TRUE(odsm_palloc_stale(pa, odsm_with_color(m, 3)));
	EXPECT_FALSE(odsm_palloc_stale(pa, odsm_with_color(m, 4)));
	do_free(_metadata, pa, s2, 0, NULL);
	/* an emptied slab keeps its slots' colors as history */
	EXPECT_TRUE(odsm_palloc_stale(pa, odsm_with_color(s2, 0)));
	EXPECT_TRUE(odsm_palloc_stale(pa, odsm_with_color(s, 6)));
	EXPECT_FALSE(odsm_palloc_stale(pa, odsm_with_color(s2, 1)));

	/* a new object where a copied one was starts unmarked */
	pa_reinit(_metadata, self, 3);
	pa = &self->pa;
	m = do_alloc(_metadata, pa, 3 * BLK, 0, NULL);
	odsm_palloc_set_copied(pa, cg_addr(m));
	do_free(_metadata, pa, m, 2, NULL);
	x = do_alloc(_metadata, pa, 3 * BLK, 0, NULL);
	ASSERT_EQ(cg_addr(m), cg_addr(x));
	ASSERT_EQ(3U, cg_color(x));
	ASSERT_EQ(0, odsm_palloc_lookup(pa, x, &oi));
	EXPECT_FALSE(oi.copied);
	EXPECT_TRUE(odsm_palloc_stale(pa, odsm_with_color(x, 2)));
	do_free(_metadata, pa, x, 3, NULL);
	s = do_alloc(_metadata, pa, 48, 0, NULL);
	odsm_palloc_set_copied(pa, cg_addr(s));
	do_free(_metadata, pa, s, cg_color(s), NULL);
	pa_reinit(_metadata, self, 1);
	pa = &self->pa;
	for (;;) {	/* one slab: every slot once, then the first again */
		x = do_alloc(_metadata, pa, 48, 0, NULL);
		if (cg_color(x) == 0) {
			odsm_palloc_set_copied(pa, cg_addr(x));
			do_free(_metadata, pa, x, 0, NULL);
			continue;
		}
		break;
	}
	ASSERT_EQ(0, odsm_palloc_lookup(pa, x, &oi));
	EXPECT_FALSE(oi.copied);
	do_free(_metadata, pa, x, cg_color(x), NULL);
}

/* ---- randomized stress against a reference model --------------------- */

enum { M_FREE, M_SLAB, M_MULTI, M_RETIRED };

struct mobj {
	u64 addr, size, usable;
	u32 color;		/* allocation color */
	int cls;		/* -1: multi-block */
};

struct model {
	u32 nr_blocks;
	u64 granules;
	s32 *start;		/* per 16 bytes: live index + 1 of the object
				 * starting there, or 0
				 */
	s32 *maxc;		/* per 16 bytes: highest color any object
				 * starting there had, -1 if none ever
				 */
	u8 *kind;		/* per block */
	int8_t *cls;
	u32 *used;		/* SLAB: live + retired slots */
	u32 *rslots;		/* SLAB: retired slots */
	s32 *bhist;		/* per block: highest color of any object that
				 * ever covered a byte of it, -1 if none
				 */
	struct mobj *live;
	u32 nlive, cap;
	u64 bytes, slots_retired, blocks_retired;
	u64 stale[256];		/* colored pointers to freed objects */
	u32 nstale;
	/* statistics */
	u64 allocs, frees, enomem, einval_checks, lookups, retire_events,
	    max_live, restarts, enomem_streak;
};

static u64 rng_state;

static u64 rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dULL;
}

static u64 rnd_below(u64 n)
{
	return n ? rnd() % n : 0;
}

FIXTURE(stress)
{
	struct odsm_palloc pa;
	struct model m;
	bool live;
};

FIXTURE_VARIANT(stress)
{
	u32 nr_blocks;
	u32 ops;
	u64 seed;
	u32 ppm_high;		/* frees with a random higher color, per 10^6 */
	u32 ppm_max;		/* frees with color 0xffff, per 10^6 */
	u32 pct_large;		/* allocations of more than 32 KiB, % */
	u32 max_blocks;		/* largest multi-block request */
};

/* 256 blocks (16 MiB), mostly small objects, a little retirement */
FIXTURE_VARIANT_ADD(stress, medium)
{
	.nr_blocks = 256, .ops = 200000, .seed = 0x0d5a0d5a12345678ULL,
	.ppm_high = 5000, .ppm_max = 200, .pct_large = 15, .max_blocks = 8,
};

/* 4 blocks: constant exhaustion and address reuse; colors only climb in
 * small steps, so busy addresses retire by using up all 65536
 */
FIXTURE_VARIANT_ADD(stress, tiny)
{
	.nr_blocks = 4, .ops = 200000, .seed = 0x9e3779b97f4a7c15ULL,
	.ppm_high = 0, .ppm_max = 0, .pct_large = 5, .max_blocks = 4,
};

/* 32 blocks, colors jumping: much retirement, the partition is rebuilt
 * whenever it has mostly retired
 */
FIXTURE_VARIANT_ADD(stress, retire)
{
	.nr_blocks = 32, .ops = 200000, .seed = 0xfeedfacecafebeefULL,
	.ppm_high = 150000, .ppm_max = 10000, .pct_large = 20,
	.max_blocks = 6,
};

FIXTURE_SETUP(stress)
{
	struct model *m = &self->m;

	ASSERT_EQ(0, odsm_palloc_init(&self->pa, PBASE,
				      (u64)variant->nr_blocks * BLK));
	self->live = true;
	m->nr_blocks = variant->nr_blocks;
	m->granules = (u64)variant->nr_blocks * BLK / 16;
	m->start = calloc(m->granules, sizeof(*m->start));
	m->maxc = malloc(m->granules * sizeof(*m->maxc));
	m->kind = calloc(m->nr_blocks, 1);
	m->cls = calloc(m->nr_blocks, 1);
	m->used = calloc(m->nr_blocks, sizeof(*m->used));
	m->rslots = calloc(m->nr_blocks, sizeof(*m->rslots));
	m->bhist = malloc(m->nr_blocks * sizeof(*m->bhist));
	m->cap = 8 * m->nr_blocks * odsm_class_slots(0) + 16;
	if (m->cap > 200000)
		m->cap = 200000;
	m->live = calloc(m->cap, sizeof(*m->live));
	ASSERT_TRUE(m->start && m->maxc && m->kind && m->cls && m->used &&
		    m->rslots && m->bhist && m->live);
	memset(m->bhist, 0xff, m->nr_blocks * sizeof(*m->bhist));
	memset(m->maxc, 0xff, m->granules * sizeof(*m->maxc));
	rng_state = variant->seed;
}

FIXTURE_TEARDOWN(stress)
{
	struct model *m = &self->m;

	if (self->live) {
		if (_metadata->passed)
			pa_check(_metadata, &self->pa);
		odsm_palloc_destroy(&self->pa);
	}
	free(m->start);
	free(m->maxc);
	free(m->kind);
	free(m->cls);
	free(m->used);
	free(m->rslots);
	free(m->bhist);
	free(m->live);
	if (_metadata->passed)
		leak_check(_metadata);
}

static u64 granule(const struct odsm_palloc *pa, u64 addr)
{
	return (addr - pa->base) / 16;
}

static void model_gauges(struct __test_metadata *_metadata,
			 const struct odsm_palloc *pa, const struct model *m)
{
	u32 b, nfree = 0, nret = 0;

	ASSERT_EQ((u64)m->nlive, pa->objects);
	ASSERT_EQ(m->bytes, pa->bytes);
	ASSERT_EQ(m->slots_retired, pa->slots_retired);
	ASSERT_EQ(m->blocks_retired, pa->blocks_retired);
	for (b = 0; b < m->nr_blocks; b++) {
		nfree += m->kind[b] == M_FREE;
		nret += m->kind[b] == M_RETIRED;
	}
	ASSERT_EQ(nfree, pa->free_blocks);
	ASSERT_EQ((u64)nret, m->blocks_retired);
}

static int cmp_mobj(const void *a, const void *b)
{
	const struct mobj *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* No two live objects overlap; all lie in the partition. */
static void model_overlap_sweep(struct __test_metadata *_metadata,
				const struct odsm_palloc *pa,
				const struct model *m)
{
	struct mobj *v = malloc((m->nlive + 1) * sizeof(*v));
	u32 i;

	ASSERT_NE(NULL, v);
	memcpy(v, m->live, m->nlive * sizeof(*v));
	qsort(v, m->nlive, sizeof(*v), cmp_mobj);
	for (i = 0; i < m->nlive; i++) {
		ASSERT_GE(v[i].addr, pa->base);
		ASSERT_LE(v[i].addr + v[i].usable, pa->base + pa->size);
		if (i)
			ASSERT_LE(v[i - 1].addr + v[i - 1].usable, v[i].addr)
				TH_LOG("objects at %#llx and %#llx overlap",
				       (unsigned long long)v[i - 1].addr,
				       (unsigned long long)v[i].addr);
	}
	free(v);
}

/* Blocks retired, or kept as slabs of one class by a retired slot. */
static u32 model_dead_blocks(const struct model *m)
{
	u32 b, n = 0;

	for (b = 0; b < m->nr_blocks; b++)
		n += m->kind[b] == M_RETIRED ||
		     (m->kind[b] == M_SLAB && m->rslots[b]);
	return n;
}

static bool model_has_run(const struct model *m, u32 nr)
{
	u32 b, run = 0;

	for (b = 0; b < m->nr_blocks; b++) {
		run = m->kind[b] == M_FREE ? run + 1 : 0;
		if (run >= nr)
			return true;
	}
	return false;
}

static bool model_has_partial(const struct model *m, int cls)
{
	u32 b;

	for (b = 0; b < m->nr_blocks; b++)
		if (m->kind[b] == M_SLAB && m->cls[b] == cls &&
		    m->used[b] < odsm_class_slots(cls))
			return true;
	return false;
}

static void stress_alloc(struct __test_metadata *_metadata,
			 struct odsm_palloc *pa, struct model *m,
			 const FIXTURE_VARIANT(stress) *variant)
{
	u64 r = rnd_below(100), size, cg = 0, usable = 0, addr, g;
	u32 align = 0, color, al, b, nr, i;
	struct mobj *o;
	int cls, ret;

	if (r >= variant->pct_large) {
		u32 bits = (u32)rnd_below(16);		/* log-uniform */

		size = 1 + rnd_below(1ULL << bits);
	} else if (rnd_below(4)) {
		size = ODSM_SLAB_MAX + 1 + rnd_below(BLK * 2);
	} else {
		size = 1 + rnd_below((u64)variant->max_blocks * BLK);
	}
	if (size > pa->size)
		size = pa->size;
	if (rnd_below(4) == 0)
		align = 1U << rnd_below(13);
	cls = odsm_size_to_class(size, align);

	ret = odsm_palloc_alloc(pa, size, align, &cg, &usable);
	if (ret == -ENOMEM) {
		m->enomem++;
		m->enomem_streak++;
		if (cls >= 0) {
			ASSERT_FALSE(model_has_run(m, 1))
				TH_LOG("-ENOMEM with a free block");
			ASSERT_FALSE(model_has_partial(m, cls))
				TH_LOG("-ENOMEM with a partial class-%d slab",
				       cls);
		} else {
			nr = (u32)((size + BLK - 1) / BLK);
			ASSERT_FALSE(model_has_run(m, nr))
				TH_LOG("-ENOMEM for %u blocks with a run", nr);
		}
		return;
	}
	ASSERT_EQ(0, ret) TH_LOG("size %llu align %u",
				 (unsigned long long)size, align);
	ASSERT_LT(m->nlive, m->cap);
	addr = cg_addr(cg);
	color = cg_color(cg);
	al = align > 16 ? align : 16;
	ASSERT_EQ(0ULL, addr % al);
	ASSERT_GE(addr, pa->base);
	ASSERT_LE(addr + usable, pa->base + pa->size);
	b = (u32)((addr - pa->base) / BLK);
	g = granule(pa, addr);
	ASSERT_EQ(0, m->start[g]) TH_LOG("address handed out twice");

	if (cls >= 0) {
		u32 cs = odsm_class_size[cls];
		u64 off = addr - pa->base - (u64)b * BLK;

		ASSERT_EQ((u64)cs, usable);
		ASSERT_EQ(0ULL, off % cs);
		ASSERT_LT(off / cs, (u64)odsm_class_slots(cls));
		if (m->kind[b] == M_FREE) {
			/* a new slab only when no partial one exists */
			ASSERT_FALSE(model_has_partial(m, cls))
				TH_LOG("new slab with a partial one around");
			m->kind[b] = M_SLAB;
			m->cls[b] = (int8_t)cls;
			m->used[b] = 0;
			ASSERT_EQ(0U, m->rslots[b]);
		} else {
			ASSERT_EQ(M_SLAB, m->kind[b]);
			ASSERT_EQ(cls, m->cls[b]);
			ASSERT_LT(m->used[b], odsm_class_slots(cls));
		}
		m->used[b]++;
		/* no block-wide bound: an emptied slab keeps its per-slot
		 * colors for the next slab of its class, so the bound is
		 * per start address (maxc, checked below)
		 */
		if ((s32)color > m->bhist[b])
			m->bhist[b] = (s32)color;
	} else {
		nr = (u32)((size + BLK - 1) / BLK);
		ASSERT_EQ(nr * BLK, usable);
		ASSERT_EQ(0ULL, (addr - pa->base) % BLK);
		ASSERT_LE(b + nr, m->nr_blocks);
		for (i = 0; i < nr; i++) {
			ASSERT_EQ(M_FREE, m->kind[b + i])
				TH_LOG("block %u reused while in use", b + i);
			m->kind[b + i] = M_MULTI;
			/* above every color any of its blocks saw */
			ASSERT_GT((s32)color, m->bhist[b + i])
				TH_LOG("block %u: color %u, block had %d",
				       b + i, color, m->bhist[b + i]);
			m->bhist[b + i] = (s32)color;
		}
	}
	/* the heart of it: never a color an earlier object here had */
	ASSERT_GT((s32)color, m->maxc[g])
		TH_LOG("address %#llx reused with color %u, had %d",
		       (unsigned long long)addr, color, m->maxc[g]);
	m->maxc[g] = (s32)color;

	m->enomem_streak = 0;
	o = &m->live[m->nlive++];
	o->addr = addr;
	o->size = size;
	o->usable = usable;
	o->color = color;
	o->cls = cls;
	m->start[g] = (s32)m->nlive;
	m->bytes += usable;
	m->allocs++;
	if (m->nlive > m->max_live)
		m->max_live = m->nlive;
}

static u32 pick_free_color(u32 acolor, const FIXTURE_VARIANT(stress) *v)
{
	u64 r = rnd_below(1000000);

	if (r < v->ppm_max)
		return CMAX;
	if (r < v->ppm_max + v->ppm_high)
		return acolor + (u32)rnd_below(CMAX - acolor); /* < 0xffff */
	if (r < 900000 || acolor >= CMAX - 8)
		return acolor;
	return acolor + 1 + (u32)rnd_below(8);
}

static void stale_push(struct model *m, u64 cg)
{
	m->stale[m->nstale++ % ARRAY_SIZE(m->stale)] = cg;
}

static void stress_free(struct __test_metadata *_metadata,
			struct odsm_palloc *pa, struct model *m, u32 idx,
			u32 fcolor)
{
	struct mobj o = m->live[idx];
	struct odsm_release rel = { 0xdead, 0xdead };
	u64 g = granule(pa, o.addr);
	u32 b = (u32)((o.addr - pa->base) / BLK), i;

	ASSERT_EQ(0, odsm_palloc_free(pa, odsm_with_color(o.addr, (u16)fcolor),
				      &rel))
		TH_LOG("free %#llx color %u (alloc color %u)",
		       (unsigned long long)o.addr, fcolor, o.color);
	if (o.cls >= 0) {
		ASSERT_EQ(M_SLAB, m->kind[b]);
		if (fcolor == CMAX) {
			m->slots_retired++;
			m->rslots[b]++;
			m->retire_events++;
			ASSERT_EQ(0U, rel.nr_blocks);
		} else if (--m->used[b] == 0) {
			m->kind[b] = M_FREE;
			ASSERT_EQ(1U, rel.nr_blocks);
			ASSERT_EQ(b, rel.first_block);
		} else {
			ASSERT_EQ(0U, rel.nr_blocks);
		}
	} else {
		u32 nr = (u32)(o.usable / BLK);

		ASSERT_EQ(nr, rel.nr_blocks);
		ASSERT_EQ(b, rel.first_block);
		for (i = 0; i < nr; i++) {
			ASSERT_EQ(M_MULTI, m->kind[b + i]);
			m->kind[b + i] = fcolor == CMAX ? M_RETIRED : M_FREE;
		}
		if (fcolor == CMAX) {
			m->blocks_retired += nr;
			m->retire_events++;
		}
	}
	if ((s32)fcolor > m->maxc[g])
		m->maxc[g] = (s32)fcolor;
	for (i = 0; i < (o.usable + BLK - 1) / BLK; i++)
		if ((s32)fcolor > m->bhist[b + i])
			m->bhist[b + i] = (s32)fcolor;
	stale_push(m, odsm_with_color(o.addr, (u16)fcolor));
	if (fcolor != o.color)
		stale_push(m, odsm_with_color(o.addr, (u16)o.color));

	/* swap-remove */
	m->start[g] = 0;
	m->bytes -= o.usable;
	m->nlive--;
	if (idx != m->nlive) {
		m->live[idx] = m->live[m->nlive];
		m->start[granule(pa, m->live[idx].addr)] = (s32)idx + 1;
	}
	m->frees++;
}

/* Calls that must fail and leave everything as it was. */
static void stress_misc(struct __test_metadata *_metadata,
			struct odsm_palloc *pa, struct model *m)
{
	struct odsm_objinfo oi;
	u64 r = rnd_below(8), a, g;
	u32 b;
	int ret;

	switch (r) {
	case 0:	/* a stale pointer: freed, maybe reused since */
		if (!m->nstale)
			return;
		a = m->stale[rnd_below(m->nstale < ARRAY_SIZE(m->stale) ?
				       m->nstale : ARRAY_SIZE(m->stale))];
		free_einval(_metadata, pa, a);
		m->einval_checks++;
		return;
	case 1:	/* inside a live object */
		if (!m->nlive)
			return;
		{
			struct mobj *o = &m->live[rnd_below(m->nlive)];

			if (o->usable < 32)
				return;
			a = o->addr + 16 * (1 + rnd_below(o->usable / 16 - 1));
			free_einval(_metadata, pa,
				    odsm_with_color(a, (u16)o->color));
			free_einval(_metadata, pa, o->addr + 1 +
				    rnd_below(15));
			m->einval_checks += 2;
		}
		return;
	case 2:	/* an older color than the object's */
		if (!m->nlive)
			return;
		{
			struct mobj *o = &m->live[rnd_below(m->nlive)];

			if (!o->color)
				return;
			free_einval(_metadata, pa, odsm_with_color(o->addr,
				(u16)rnd_below(o->color)));
			m->einval_checks++;
		}
		return;
	case 3:	/* bad allocation requests */
		alloc_fails(_metadata, pa, 0, 0, -EINVAL);
		alloc_fails(_metadata, pa, pa->size + 1 + rnd_below(BLK), 0,
			    -EINVAL);
		alloc_fails(_metadata, pa, 1 + rnd_below(BLK),
			    (1U << (1 + rnd_below(12))) + 1, -EINVAL);
		alloc_fails(_metadata, pa, 16, 8192, -EINVAL);
		m->einval_checks += 4;
		return;
	case 4:	/* lookup of a live object */
		if (!m->nlive)
			return;
		{
			struct mobj *o = &m->live[rnd_below(m->nlive)];

			ASSERT_EQ(0, odsm_palloc_lookup(pa,
				odsm_with_color(o->addr, (u16)rnd()), &oi));
			ASSERT_EQ(o->addr, oi.addr);
			ASSERT_EQ(o->usable, oi.usable);
			ASSERT_EQ(o->cls >= 0 ? o->usable : o->size, oi.size);
			ASSERT_EQ(o->color, (u32)oi.color);
			m->lookups++;
		}
		return;
	default: /* lookup and backed at any address */
		a = pa->base + 16 * rnd_below(m->granules);
		if (rnd_below(16) == 0)
			a = pa->base - 16 * (1 + rnd_below(64));
		if (rnd_below(16) == 0)
			a = pa->base + pa->size + 16 * rnd_below(64);
		ret = odsm_palloc_lookup(pa, a, &oi);
		if (a < pa->base || a >= pa->base + pa->size) {
			ASSERT_EQ(-EINVAL, ret);
			ASSERT_FALSE(odsm_palloc_backed(pa, a));
			return;
		}
		g = granule(pa, a);
		b = (u32)((a - pa->base) / BLK);
		ASSERT_EQ(m->start[g] ? 0 : -EINVAL, ret)
			TH_LOG("lookup %#llx", (unsigned long long)a);
		if (!ret)
			ASSERT_EQ(m->live[m->start[g] - 1].color,
				  (u32)oi.color);
		ASSERT_EQ(m->kind[b] == M_SLAB || m->kind[b] == M_MULTI,
			  odsm_palloc_backed(pa, a + rnd_below(16)));
		m->lookups++;
		return;
	}
}

/*
 * Free everything, check the partition is whole again but for what was
 * retired, and (rebuild) start over with a fresh allocator and model.
 */
static void stress_drain(struct __test_metadata *_metadata,
			 struct odsm_palloc *pa, struct model *m,
			 const FIXTURE_VARIANT(stress) *variant, bool rebuild)
{
	u32 b, run, best;
	u64 x;

	model_overlap_sweep(_metadata, pa, m);
	pa_check(_metadata, pa);
	while (m->nlive)
		stress_free(_metadata, pa, m, m->nlive - 1,
			    pick_free_color(m->live[m->nlive - 1].color,
					    variant));
	model_gauges(_metadata, pa, m);
	ASSERT_EQ(0ULL, pa->objects);
	ASSERT_EQ(0ULL, pa->bytes);
	pa_check(_metadata, pa);
	/* only blocks with retired slots are still slabs */
	for (b = 0; b < m->nr_blocks; b++)
		if (m->kind[b] == M_SLAB)
			ASSERT_EQ(ODSM_BLK_SLAB, pa->blocks[b].kind);
	for (b = 0, run = 0, best = 0; b < m->nr_blocks; b++) {
		run = m->kind[b] == M_FREE ? run + 1 : 0;
		if (run > best)
			best = run;
	}
	if (best) {
		x = do_alloc(_metadata, pa, (u64)best * BLK, 0, NULL);
		ASSERT_GT((s32)cg_color(x), m->maxc[granule(pa, cg_addr(x))]);
		do_free(_metadata, pa, x, cg_color(x), NULL);
		m->maxc[granule(pa, cg_addr(x))] = (s32)cg_color(x);
	}
	if (!rebuild)
		return;
	odsm_palloc_destroy(pa);
	ASSERT_EQ(0, odsm_palloc_init(pa, PBASE, (u64)m->nr_blocks * BLK));
	memset(m->start, 0, m->granules * sizeof(*m->start));
	memset(m->maxc, 0xff, m->granules * sizeof(*m->maxc));
	memset(m->kind, 0, m->nr_blocks);
	memset(m->cls, 0, m->nr_blocks);
	memset(m->used, 0, m->nr_blocks * sizeof(*m->used));
	memset(m->rslots, 0, m->nr_blocks * sizeof(*m->rslots));
	memset(m->bhist, 0xff, m->nr_blocks * sizeof(*m->bhist));
	m->bytes = m->slots_retired = m->blocks_retired = 0;
	m->nstale = 0;
	m->enomem_streak = 0;
	m->restarts++;
}

TEST_F_TIMEOUT(stress, random_ops, 900)
{
	struct odsm_palloc *pa = &self->pa;
	struct model *m = &self->m;
	u32 op, phase_alloc = 60;

	for (op = 0; op < variant->ops; op++) {
		u64 r = rnd_below(100);

		/* alternate filling and draining phases */
		if (op % 4096 == 0)
			phase_alloc = phase_alloc == 60 ? 40 : 60;
		if (r < 8) {
			stress_misc(_metadata, pa, m);
		} else if (m->nlive && (r < 8 + (100 - phase_alloc) ||
					m->nlive == m->cap)) {
			u32 idx = (u32)rnd_below(m->nlive);

			stress_free(_metadata, pa, m, idx,
				    pick_free_color(m->live[idx].color,
						    variant));
		} else {
			stress_alloc(_metadata, pa, m, variant);
		}
		model_gauges(_metadata, pa, m);
		if (op % 4099 == 0) {
			model_overlap_sweep(_metadata, pa, m);
			pa_check(_metadata, pa);
		}
		/* mostly retired, or nothing fits any more: start over */
		if (model_dead_blocks(m) * 4 >= 3 * m->nr_blocks ||
		    m->enomem_streak >= 1000)
			stress_drain(_metadata, pa, m, variant, true);
	}
	stress_drain(_metadata, pa, m, variant, false);
	ksft_print_msg("%s: %llu allocs, %llu frees, %llu ENOMEM, %llu refused calls, %llu lookups, max live %llu, %llu retiring frees, %llu rebuilds\n",
		       _metadata->name,
		       (unsigned long long)m->allocs,
		       (unsigned long long)m->frees,
		       (unsigned long long)m->enomem,
		       (unsigned long long)m->einval_checks,
		       (unsigned long long)m->lookups,
		       (unsigned long long)m->max_live,
		       (unsigned long long)m->retire_events,
		       (unsigned long long)m->restarts);
	fflush(stdout);	/* the test child leaves with _exit() */
}

TEST_HARNESS_MAIN
