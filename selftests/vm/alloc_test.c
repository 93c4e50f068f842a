// SPDX-License-Identifier: GPL-2.0
/*
 * The partition allocator through the ioctls: ODSM_IOC_ALLOC sizes,
 * alignments and refusals, ODSM_ALLOC_ZERO, exhaustion, the frees it must
 * refuse, colors of reused addresses, ODSM_IOC_MOVE and ODSM_IOC_OBJ_INFO,
 * with the allocation counters and gauges.
 */
#include "odsm_vm.h"

FIXTURE(heap) {
	int fd;
	struct odsm_info in;
	uint8_t *base;
	uint64_t lo, hi;	/* this node's partition */
	struct t_objs objs;
};

FIXTURE_SETUP(heap)
{
	self->fd = t_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, t_info(self->fd, &self->in));
	ASSERT_EQ((void *)(uintptr_t)self->in.heap_base,
		  t_map(self->fd, &self->in));
	self->base = (uint8_t *)(uintptr_t)self->in.heap_base;
	self->lo = t_local_lo(&self->in);
	self->hi = self->lo + self->in.part_size;
}

FIXTURE_TEARDOWN(heap)
{
	t_free_all(self->fd, &self->objs);
	munmap(self->base, self->in.heap_size);
	close(self->fd);
}

/*
 * Allocate objects of `size` (keeping them) until one lands at `addr`:
 * its colored address in *cg.  The allocator hands a freed slot of a slab
 * out again once the slots after it are taken.
 */
static void alloc_until(struct __test_metadata *_metadata, int fd,
			struct t_objs *objs, uint64_t size, uint32_t flags,
			uint64_t addr, int max_tries, uint64_t *cg)
{
	int i;

	for (i = 0; i < max_tries; i++) {
		T_ALLOC(fd, objs, size, 0, flags, cg, NULL);
		if (odsm_addr_of(*cg) == odsm_addr_of(addr))
			return;
	}
	ASSERT_EQ(odsm_addr_of(addr), odsm_addr_of(*cg)) {
		TH_LOG("address not reused after %d allocations", max_tries);
	}
}

TEST_F(heap, sizes_and_alignments)
{
	const uint64_t sizes[] = {
		1, 16, 17, 100, 4096, 32768, 32769, MiB(1),
	};
	const uint32_t aligns[] = { 0, 16, 64, 4096 };
	struct {
		uint64_t cg, size, usable;
	} o[32];
	struct odsm_obj_info oi;
	struct t_stats s0, s1, s2;
	uint64_t bytes = 0;
	unsigned int i, j, n = 0;

	SNAP(s0);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (j = 0; j < sizeof(aligns) / sizeof(aligns[0]); j++) {
			uint64_t a = aligns[j] ? aligns[j] : ODSM_MIN_ALIGN;
			uint64_t cg, usable, addr;

			T_ALLOC(self->fd, &self->objs, sizes[i], aligns[j], 0,
				&cg, &usable);
			addr = odsm_addr_of(cg);
			EXPECT_EQ(0ULL, addr % a) {
				TH_LOG("size %" PRIu64 " align %u: 0x%" PRIx64,
				       sizes[i], aligns[j], addr);
			}
			EXPECT_LE(sizes[i], usable);
			if (sizes[i] > T_SLAB_MAX) {
				/* whole blocks */
				EXPECT_EQ(0ULL, usable % T_BLOCK);
				EXPECT_GT(sizes[i] + T_BLOCK, usable);
				EXPECT_EQ(0ULL, addr % T_BLOCK);
			}
			EXPECT_LE(self->lo, addr);
			EXPECT_LE(addr + usable, self->hi);
			ASSERT_EQ(0, t_obj_info(self->fd, cg, &oi));
			EXPECT_EQ(cg, oi.gaddr);
			EXPECT_EQ(usable, oi.usable);
			EXPECT_EQ((uint32_t)odsm_color_of(cg), oi.alloc_color);
			/* every requested byte is there */
			t_p(cg)[0] = 1;
			t_p(cg)[sizes[i] - 1] = 2;
			o[n].cg = cg;
			o[n].size = sizes[i];
			o[n].usable = usable;
			bytes += usable;
			n++;
		}
	}
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "allocs", n);
	EXPECT_DELTA(s0, s1, "alloc_bytes", bytes);
	EXPECT_DELTA(s0, s1, "objects_in_use", n);
	EXPECT_DELTA(s0, s1, "bytes_in_use", bytes);
	EXPECT_DELTA(s0, s1, "alloc_einval", 0);

	/* no two objects overlap */
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++) {
			uint64_t a = odsm_addr_of(o[i].cg);
			uint64_t b = odsm_addr_of(o[j].cg);

			EXPECT_TRUE(a + o[i].usable <= b ||
				    b + o[j].usable <= a);
		}

	for (i = 0; i < n; i++)
		T_FREE(self->fd, &self->objs, o[i].cg);
	SNAP(s2);
	EXPECT_DELTA(s1, s2, "frees", n);
	EXPECT_DELTA(s1, s2, "free_bytes", bytes);
	EXPECT_DELTA(s0, s2, "objects_in_use", 0);
	EXPECT_DELTA(s0, s2, "bytes_in_use", 0);
}

TEST_F(heap, alloc_einval)
{
	const struct {
		uint64_t size;
		uint32_t align, flags;
		const char *what;
	} bad[] = {
		{ 0, 0, 0, "size 0" },
		{ self->in.max_alloc + 1, 0, 0, "size max_alloc + 1" },
		{ self->in.part_size + T_BLOCK, 0, 0, "size past the partition" },
		{ UINT64_MAX, 0, 0, "size UINT64_MAX" },
		{ 64, 3, 0, "align 3" },
		{ 64, 24, 0, "align 24" },
		{ 64, 8192, 0, "align 8192" },
		{ 64, 1U << 31, 0, "align 2^31" },
		{ 64, 0, 1U << 3, "flag bit 3" },
		{ 64, 0, ODSM_ALLOC_ON_NODE | ODSM_ALLOC_ANYWHERE,
		  "ON_NODE | ANYWHERE" },
		{ 64, 0, 1U << 31, "flag bit 31" },
		{ 64, 0, ODSM_ALLOC_ZERO | (1U << 5), "ZERO | bit 5" },
	};
	struct t_stats s0, s1;
	unsigned int i;
	uint64_t cg = 0;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		SNAP(s0);
		EXPECT_EQ(-EINVAL, t_alloc(self->fd, bad[i].size, bad[i].align,
					   bad[i].flags, &cg, NULL)) {
			TH_LOG("%s accepted", bad[i].what);
			t_keep(&self->objs, cg);
		}
		SNAP(s1);
		/* counted once, as a refused allocation */
		EXPECT_DELTA(s0, s1, "alloc_einval", 1);
		EXPECT_DELTA(s0, s1, "bad_ioctls", 0);
		EXPECT_DELTA(s0, s1, "alloc_enomem", 0);
		EXPECT_DELTA(s0, s1, "allocs", 0);
		EXPECT_DELTA(s0, s1, "objects_in_use", 0);
	}
}

/* ODSM_ALLOC_ZERO clears a reused slot that held data (of a slab whose
 * pages stay: a neighbour keeps it alive).
 */
TEST_F(heap, alloc_zero_clears_reused_slot)
{
	struct t_stats s0, s1;
	uint64_t a, b, cg;
	uint8_t *p;

	/* 32 KiB objects: two slots per slab */
	T_ALLOC(self->fd, &self->objs, KiB(32), 0, 0, &a, NULL);
	T_ALLOC(self->fd, &self->objs, KiB(32), 0, 0, &b, NULL);
	p = t_p(a);
	memset(p, 0xab, KiB(32));
	T_FREE(self->fd, &self->objs, a);

	SNAP(s0);
	alloc_until(_metadata, self->fd, &self->objs, KiB(32), ODSM_ALLOC_ZERO,
		    a, 4, &cg);
	SNAP(s1);
	ASSERT_EQ(odsm_addr_of(a), odsm_addr_of(cg));
	EXPECT_TRUE(t_all(p, KiB(32), 0));
	/* zeroed in place: the slab's pages were never given back */
	EXPECT_DELTA(s0, s1, "page_frees", 0);
	EXPECT_DELTA(s0, s1, "page_allocs", 0);
	T_FREE(self->fd, &self->objs, cg);
	T_FREE(self->fd, &self->objs, b);
}

TEST_F(heap, free_outside_heap)
{
	const uint64_t bad[] = {
		0, 16, self->in.heap_base - T_PAGE, self->in.heap_base - 16,
		self->in.heap_base + self->in.heap_size,
		t_color(self->in.heap_base + self->in.heap_size, 1),
		(uint64_t)(uintptr_t)&bad,
	};
	struct t_stats s0, s1;
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		SNAP(s0);
		EXPECT_EQ(-EINVAL, t_free(self->fd, bad[i]));
		SNAP(s1);
		EXPECT_DELTA(s0, s1, "bad_frees", 1);
		EXPECT_DELTA(s0, s1, "frees", 0);
	}
}

TEST_F(heap, free_mid_object)
{
	struct t_stats s0, s1;
	uint64_t big, small, bad[5];
	unsigned int i;

	T_ALLOC(self->fd, &self->objs, KiB(200), 0, 0, &big, NULL);
	T_ALLOC(self->fd, &self->objs, 100, 0, 0, &small, NULL);	/* 128 */
	bad[0] = big + 16;
	bad[1] = big + T_PAGE;
	bad[2] = big + T_BLOCK;		/* a tail block */
	bad[3] = big + 3 * T_BLOCK + 16;
	bad[4] = small + 16;		/* inside a slot */
	for (i = 0; i < 5; i++) {
		SNAP(s0);
		EXPECT_EQ(-EINVAL, t_free(self->fd, bad[i]));
		SNAP(s1);
		EXPECT_DELTA(s0, s1, "bad_frees", 1);
		EXPECT_DELTA(s0, s1, "frees", 0);
		EXPECT_DELTA(s0, s1, "objects_in_use", 0);
	}
	T_FREE(self->fd, &self->objs, big);
	T_FREE(self->fd, &self->objs, small);
}

TEST_F(heap, free_never_allocated)
{
	struct odsm_obj_info oi;
	struct t_stats s0, s1;
	uint64_t obj, slot, block;

	/* a free slot of a live slab: the one after a fresh object, or the
	 * one before it
	 */
	T_ALLOC(self->fd, &self->objs, 3000, 0, 0, &obj, NULL);	/* 3072 */
	slot = odsm_addr_of(obj) + 3072;
	if (t_obj_info(self->fd, slot, &oi) == 0)
		slot = odsm_addr_of(obj) - 3072;
	/* a color no object there reached (earlier tests may have used the
	 * address: below their colors it would be -ESTALE, a gone object)
	 */
	slot = t_color(slot, T_FRESH_COLOR);
	ASSERT_EQ(-EINVAL, t_obj_info(self->fd, slot, &oi));
	/* a block nothing was allocated in: the partition's last */
	block = t_color(self->hi - T_BLOCK, T_FRESH_COLOR);
	ASSERT_EQ(-EINVAL, t_obj_info(self->fd, block, &oi));

	SNAP(s0);
	EXPECT_EQ(-EINVAL, t_free(self->fd, slot));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "bad_frees", 1);
	EXPECT_EQ(-EINVAL, t_free(self->fd, block));
	EXPECT_EQ(-EINVAL, t_free(self->fd, t_color(block, T_FRESH_COLOR + 7)));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "bad_frees", 3);
	EXPECT_DELTA(s0, s1, "frees", 0);
	T_FREE(self->fd, &self->objs, obj);
}

TEST_F(heap, free_double)
{
	/* a slab emptied by the free, a slab kept alive by a neighbour, and
	 * a whole-block object
	 */
	const uint64_t sizes[] = { 48, 48, KiB(100) };
	struct t_stats s0, s1;
	uint64_t cg, neighbour = 0;
	unsigned int i;

	for (i = 0; i < 3; i++) {
		T_ALLOC(self->fd, &self->objs, sizes[i], 0, 0, &cg, NULL);
		if (i == 1)
			T_ALLOC(self->fd, &self->objs, sizes[i], 0, 0,
				&neighbour, NULL);
		SNAP(s0);
		T_FREE(self->fd, &self->objs, cg);
		/* the object is gone: its own color is stale now */
		EXPECT_EQ(-ESTALE, t_free(self->fd, cg));
		SNAP(s1);
		EXPECT_DELTA(s0, s1, "frees", 1);
		EXPECT_DELTA(s0, s1, "bad_frees", 1);
		EXPECT_DELTA(s0, s1, "stale_refused", 1);
		EXPECT_DELTA(s0, s1, "objects_in_use", -1);
		if (i == 1)
			T_FREE(self->fd, &self->objs, neighbour);
	}
}

/*
 * A slot freed with color c (a color the object carried) comes back with a
 * color above c; a free or move with a color below the new object's
 * allocation color (a stale pointer to the earlier object) is refused.
 */
TEST_F(heap, reuse_color_and_stale_free)
{
	struct odsm_obj_info oi;
	struct t_stats s0, s1;
	uint64_t a, b, cg, moved;
	uint16_t c;

	T_ALLOC(self->fd, &self->objs, KiB(32), 0, 0, &a, NULL);
	T_ALLOC(self->fd, &self->objs, KiB(32), 0, 0, &b, NULL);
	c = odsm_color_of(a) + 5;
	T_FREE(self->fd, &self->objs, t_color(a, c));

	alloc_until(_metadata, self->fd, &self->objs, KiB(32), 0, a, 4, &cg);
	EXPECT_GT(odsm_color_of(cg), c);
	ASSERT_EQ(0, t_obj_info(self->fd, cg, &oi));
	EXPECT_EQ((uint32_t)odsm_color_of(cg), oi.alloc_color);

	/* stale: the freed object's colors, the new one's minus one */
	SNAP(s0);
	EXPECT_EQ(-ESTALE, t_free(self->fd, t_color(cg, c)));
	EXPECT_EQ(-ESTALE, t_free(self->fd, t_color(cg, odsm_color_of(cg) - 1)));
	EXPECT_EQ(-ESTALE, t_move(self->fd, t_color(cg, c), &moved));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "bad_frees", 2);
	EXPECT_DELTA(s0, s1, "stale_refused", 3);
	EXPECT_DELTA(s0, s1, "frees", 0);
	EXPECT_DELTA(s0, s1, "moves", 0);
	EXPECT_DELTA(s0, s1, "bad_ioctls", 1);
	EXPECT_DELTA(s0, s1, "objects_in_use", 0);

	/* any color the object carried frees it */
	T_FREE(self->fd, &self->objs, t_color(cg, odsm_color_of(cg) + 100));
	T_FREE(self->fd, &self->objs, b);
}

TEST_F(heap, move_preserves_bytes)
{
	struct odsm_obj_info oi;
	struct t_stats s0, s1;
	uint64_t cg, old;
	unsigned int i;

	T_ALLOC(self->fd, &self->objs, 1000, 0, 0, &cg, NULL);
	for (i = 0; i < 1000; i++)
		t_p(cg)[i] = (uint8_t)(i * 7 + 1);
	old = cg;
	SNAP(s0);
	ASSERT_EQ(0, t_move(self->fd, old, &cg));
	t_rekeep(&self->objs, old, cg);
	SNAP(s1);
	EXPECT_NE(odsm_addr_of(old), odsm_addr_of(cg));
	for (i = 0; i < 1000; i++) {
		ASSERT_EQ((uint8_t)(i * 7 + 1), t_p(cg)[i]);
	}
	EXPECT_DELTA(s0, s1, "moves", 1);
	EXPECT_DELTA(s0, s1, "objects_in_use", 0);
	EXPECT_DELTA(s0, s1, "bytes_in_use", 0);
	ASSERT_EQ(0, t_obj_info(self->fd, cg, &oi));
	EXPECT_EQ((uint32_t)odsm_color_of(cg), oi.alloc_color);
	EXPECT_EQ(1024ULL, oi.usable);

	/* the old address holds no object any more */
	SNAP(s0);
	EXPECT_EQ(-ESTALE, t_obj_info(self->fd, old, &oi));
	EXPECT_EQ(-ESTALE, t_free(self->fd, old));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "bad_frees", 1);
	EXPECT_DELTA(s0, s1, "frees", 0);
	T_FREE(self->fd, &self->objs, cg);
}

/* Moving a whole-block object copies the pages it has and no others, and
 * gives the old blocks' pages back.
 */
TEST_F(heap, move_block_object_pages)
{
	uint64_t cg, old, size = 3 * T_BLOCK;
	struct t_stats s0, s1;
	uint8_t *p;

	T_ALLOC(self->fd, &self->objs, size, 0, 0, &cg, NULL);
	p = t_p(cg);
	memset(p, 0x11, T_PAGE);
	memset(p + 40 * T_PAGE, 0x44, T_PAGE);
	old = cg;
	SNAP(s0);
	ASSERT_EQ(0, t_move(self->fd, old, &cg));
	t_rekeep(&self->objs, old, cg);
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "moves", 1);
	EXPECT_DELTA(s0, s1, "page_allocs", 2);
	EXPECT_DELTA(s0, s1, "page_frees", 2);
	EXPECT_DELTA(s0, s1, "pages_in_use", 0);
	p = t_p(cg);
	EXPECT_NE(odsm_addr_of(old), odsm_addr_of(cg));
	EXPECT_TRUE(t_all(p, T_PAGE, 0x11));
	EXPECT_TRUE(t_all(p + 40 * T_PAGE, T_PAGE, 0x44));
	EXPECT_TRUE(t_all(p + 20 * T_PAGE, T_PAGE, 0));
	T_FREE(self->fd, &self->objs, cg);
}

TEST_F(heap, move_refused)
{
	struct t_stats s0, s1;
	uint64_t cg, out = 0;

	T_ALLOC(self->fd, &self->objs, KiB(100), 0, 0, &cg, NULL);
	SNAP(s0);
	EXPECT_EQ(-EINVAL, t_move(self->fd, cg + T_PAGE, &out));
	EXPECT_EQ(-EINVAL, t_move(self->fd, t_color(self->hi - T_BLOCK,
						    T_FRESH_COLOR), &out));
	EXPECT_EQ(-EINVAL, t_move(self->fd, self->in.heap_base - T_BLOCK, &out));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "moves", 0);
	EXPECT_DELTA(s0, s1, "bad_ioctls", 3);
	EXPECT_DELTA(s0, s1, "allocs", 0);
	EXPECT_DELTA(s0, s1, "objects_in_use", 0);
	T_FREE(self->fd, &self->objs, cg);
}

TEST_F(heap, obj_info_reports_object)
{
	struct odsm_obj_info oi;
	struct t_stats s0, s1;
	uint64_t big, small, usable;

	T_ALLOC(self->fd, &self->objs, 100000, 0, 0, &big, &usable);
	EXPECT_EQ(2 * T_BLOCK, usable);
	/* asked with a later color of the object: the allocation's comes back */
	ASSERT_EQ(0, t_obj_info(self->fd, t_color(big, odsm_color_of(big) + 3),
				&oi));
	EXPECT_EQ(big, oi.gaddr);
	EXPECT_EQ(100000ULL, oi.size);
	EXPECT_EQ(2 * T_BLOCK, oi.usable);
	EXPECT_EQ((uint32_t)odsm_color_of(big), oi.alloc_color);
	EXPECT_EQ(0U, oi.reserved0);
	EXPECT_EQ(0ULL, oi.reserved[0]);
	EXPECT_EQ(0ULL, oi.reserved[1]);

	/* an object of 32 KiB or less: size is its slot size */
	T_ALLOC(self->fd, &self->objs, 100, 0, 0, &small, &usable);
	EXPECT_EQ(128ULL, usable);
	ASSERT_EQ(0, t_obj_info(self->fd, small, &oi));
	EXPECT_EQ(small, oi.gaddr);
	EXPECT_EQ(128ULL, oi.size);
	EXPECT_EQ(128ULL, oi.usable);
	EXPECT_EQ((uint32_t)odsm_color_of(small), oi.alloc_color);

	SNAP(s0);
	EXPECT_EQ(-EINVAL, t_obj_info(self->fd, big + 16, &oi));
	EXPECT_EQ(-EINVAL, t_obj_info(self->fd, small + 16, &oi));
	T_FREE(self->fd, &self->objs, big);
	EXPECT_EQ(-ESTALE, t_obj_info(self->fd, big, &oi));	/* gone */
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "bad_ioctls", 3);
	T_FREE(self->fd, &self->objs, small);
}

/* ---- a reconfigured node: see struct t_reconf --------------------------- */

FIXTURE(reconf) {
	struct t_reconf r;
};

FIXTURE_SETUP(reconf)
{
	t_reconf_setup(_metadata, &self->r);
}

FIXTURE_TEARDOWN(reconf)
{
	t_reconf_teardown(_metadata, &self->r);
}

/* A 2 MiB partition holds exactly 32 blocks of 64 KiB. */
TEST_F(reconf, exhaustion)
{
	struct t_reconf *r = &self->r;
	struct odsm_obj_info oi;
	struct t_stats s0, s1;
	uint64_t cg;
	int n, ret;

	t_reconf_set(_metadata, r, 0, 1, MiB(2));
	SNAP(s0);
	EXPECT_EQ(32ULL, t_val(&s0, "free_blocks"));
	for (n = 0; n < 64; n++) {
		ret = t_alloc(r->fd, T_BLOCK, 0, 0, &cg, NULL);
		if (ret)
			break;
		ASSERT_EQ(0, t_keep(&r->objs, cg));
	}
	EXPECT_EQ(-ENOMEM, ret);
	EXPECT_EQ(32, n);
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "alloc_enomem", 1);
	EXPECT_DELTA(s0, s1, "allocs", 32);
	EXPECT_DELTA(s0, s1, "bad_ioctls", 0);
	EXPECT_EQ(0ULL, t_val(&s1, "free_blocks"));
	EXPECT_EQ(32ULL, t_val(&s1, "objects_in_use"));
	/* a small object needs a block for its slab too */
	EXPECT_EQ(-ENOMEM, t_alloc(r->fd, 16, 0, 0, &cg, NULL));
	/* nowhere to move to: the object stays, not a bad ioctl */
	SNAP(s0);
	EXPECT_EQ(-ENOMEM, t_move(r->fd, r->objs.cg[0], &cg));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "moves", 0);
	EXPECT_DELTA(s0, s1, "bad_ioctls", 0);
	EXPECT_DELTA(s0, s1, "objects_in_use", 0);
	EXPECT_EQ(0, t_obj_info(r->fd, r->objs.cg[0], &oi));
	SNAP(s0);

	t_free_all(r->fd, &r->objs);
	SNAP(s1);
	EXPECT_EQ(32ULL, t_val(&s1, "free_blocks"));
	EXPECT_EQ(0ULL, t_val(&s1, "objects_in_use"));

	T_ALLOC(r->fd, &r->objs, T_BLOCK, 0, 0, &cg, NULL);
	T_FREE(r->fd, &r->objs, cg);
	/* the largest object fits an empty partition */
	EXPECT_LE(r->in.max_alloc, MiB(2));
	T_ALLOC(r->fd, &r->objs, r->in.max_alloc, 0, 0, &cg, NULL);
	t_free_all(r->fd, &r->objs);
}

TEST_F(reconf, free_other_partition)
{
	struct t_reconf *r = &self->r;
	uint64_t part = MiB(64), cg, other, moved;
	struct odsm_obj_info oi;
	struct t_stats s0, s1;

	t_reconf_map(_metadata, r, 0, 2, part);
	T_ALLOC(r->fd, &r->objs, T_BLOCK, 0, 0, &cg, NULL);
	/* the same place in partition 1 */
	other = odsm_addr_of(cg) + part;
	SNAP(s0);
	EXPECT_EQ(-EINVAL, t_free(r->fd, other));
	EXPECT_EQ(-EINVAL, t_free(r->fd, r->in.heap_base + part));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "bad_frees", 2);
	EXPECT_DELTA(s0, s1, "frees", 0);
	EXPECT_EQ(-EINVAL, t_obj_info(r->fd, other, &oi));
	EXPECT_EQ(-EINVAL, t_move(r->fd, other, &moved));
	T_FREE(r->fd, &r->objs, cg);
}

/* Whole blocks remember the last color too, each block on its own. */
TEST_F(reconf, reuse_block_color)
{
	struct t_reconf *r = &self->r;
	uint64_t cg, first, got[3] = { 0, 0, 0 };
	int i, n = 0;
	uint16_t c;

	t_reconf_set(_metadata, r, 0, 1, MiB(2));
	T_ALLOC(r->fd, &r->objs, 3 * T_BLOCK, 0, 0, &first, NULL);
	c = odsm_color_of(first) + 7;
	T_FREE(r->fd, &r->objs, t_color(first, c));

	/* single blocks until all three came back (32 blocks in all) */
	for (i = 0; i < 32 && n < 3; i++) {
		T_ALLOC(r->fd, &r->objs, T_BLOCK, 0, 0, &cg, NULL);
		if (odsm_addr_of(cg) >= odsm_addr_of(first) &&
		    odsm_addr_of(cg) < odsm_addr_of(first) + 3 * T_BLOCK) {
			got[(odsm_addr_of(cg) - odsm_addr_of(first)) / T_BLOCK] = cg;
			n++;
		}
	}
	ASSERT_EQ(3, n);
	for (i = 0; i < 3; i++) {
		EXPECT_GT(odsm_color_of(got[i]), c);
	}
	t_free_all(r->fd, &r->objs);
}

/* Freed with the last color, an address is retired, never handed out. */
TEST_F(reconf, retire_at_max_color)
{
	struct t_reconf *r = &self->r;
	uint64_t a, b, blk, cg;
	struct odsm_obj_info oi;
	struct t_stats s0, s1;
	uint8_t v;
	int i;

	t_reconf_map(_metadata, r, 0, 1, MiB(2));
	T_ALLOC(r->fd, &r->objs, KiB(32), 0, 0, &a, NULL);
	T_ALLOC(r->fd, &r->objs, KiB(32), 0, 0, &b, NULL);
	T_ALLOC(r->fd, &r->objs, T_BLOCK, 0, 0, &blk, NULL);
	memset(t_p(a), 1, KiB(32));
	memset(t_p(blk), 2, T_PAGE);

	SNAP(s0);
	T_FREE(r->fd, &r->objs, t_color(a, ODSM_COLOR_MAX));
	T_FREE(r->fd, &r->objs, t_color(blk, ODSM_COLOR_MAX));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "slots_retired", 1);
	EXPECT_DELTA(s0, s1, "blocks_retired", 1);
	EXPECT_DELTA(s0, s1, "frees", 2);
	EXPECT_DELTA(s0, s1, "objects_in_use", -2);
	/* the retired block is not free */
	EXPECT_DELTA(s0, s1, "free_blocks", 0);
	EXPECT_EQ(-ESTALE, t_obj_info(r->fd, t_color(a, ODSM_COLOR_MAX), &oi));
	EXPECT_EQ(-ESTALE, t_free(r->fd, t_color(a, ODSM_COLOR_MAX)));
	EXPECT_EQ(-ESTALE, t_free(r->fd, t_color(blk, ODSM_COLOR_MAX)));
	/* a retired block's pages are gone, and so is access to it; a
	 * retired slot's slab stays
	 */
	EXPECT_DELTA(s0, s1, "page_frees", 1);
	SNAP(s0);
	EXPECT_EQ(SIGBUS, t_touch(t_p(blk), 0, &v));
	EXPECT_EQ(0, t_touch(t_p(a), 0, &v));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "sigbus_unbacked", 1);

	/* fill the partition: neither address comes back */
	for (i = 0; i < 64; i++) {
		if (t_alloc(r->fd, KiB(32), 0, 0, &cg, NULL))
			break;
		ASSERT_EQ(0, t_keep(&r->objs, cg));
		EXPECT_NE(odsm_addr_of(a), odsm_addr_of(cg));
		EXPECT_NE(odsm_addr_of(blk), odsm_addr_of(cg));
		EXPECT_NE(odsm_addr_of(blk) + KiB(32), odsm_addr_of(cg));
	}
	/* 32 blocks: one retired, one slab with a live and a retired slot,
	 * 30 slabs of two
	 */
	EXPECT_EQ(60, i);
	/* everything freed: the retired block and the slab holding the
	 * retired slot stay out of the free blocks
	 */
	t_free_all(r->fd, &r->objs);
	SNAP(s1);
	EXPECT_EQ(30ULL, t_val(&s1, "free_blocks"));
	EXPECT_EQ(1ULL, t_val(&s1, "slots_retired"));
	EXPECT_EQ(1ULL, t_val(&s1, "blocks_retired"));
}

TEST_HARNESS_MAIN
