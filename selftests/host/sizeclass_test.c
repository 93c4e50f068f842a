// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of kmod/odsm_sizeclass.c: the class table and
 * odsm_size_to_class() for every size a slab can hold and every alignment
 * the ABI allows.
 */
#include "odsm_sizeclass.h"

#include "ksft_host.h"

/* Independent reference: the documented rule, written out. */
static int ref_class(u64 size, u32 align)
{
	int c;

	if (size == 0 || size > ODSM_SLAB_MAX)
		return -1;
	for (c = 0; c < ODSM_NR_CLASSES; c++) {
		u32 cs = odsm_class_size[c];

		if (cs < size)
			continue;
		/* slots sit at multiples of the class size in a 64 KiB
		 * aligned slab: any class that is a multiple of align will do
		 * (every class is a multiple of 16)
		 */
		if (align <= 16 || cs % align == 0)
			return c;
	}
	return -1;
}

TEST(table_shape)
{
	int c;

	ASSERT_EQ(22, ODSM_NR_CLASSES);
	ASSERT_EQ(16U, odsm_class_size[0]);
	ASSERT_EQ(ODSM_SLAB_MAX, odsm_class_size[ODSM_NR_CLASSES - 1]);
	ASSERT_EQ(32768U, ODSM_SLAB_MAX);
	ASSERT_EQ(65536U, ODSM_BLOCK_SIZE);
	ASSERT_EQ(1U << ODSM_BLOCK_SHIFT, ODSM_BLOCK_SIZE);
	ASSERT_EQ(4096U, ODSM_MAX_ALIGN);

	for (c = 0; c < ODSM_NR_CLASSES; c++) {
		u32 cs = odsm_class_size[c];

		/* every slot is at least 16-aligned */
		EXPECT_EQ(0U, cs % 16) TH_LOG("class %d size %u", c, cs);
		/* a slab holds at least two objects and fits its block */
		EXPECT_GE(odsm_class_slots(c), 2U);
		EXPECT_EQ(ODSM_BLOCK_SIZE / cs, odsm_class_slots(c));
		EXPECT_LE((u64)odsm_class_slots(c) * cs, (u64)ODSM_BLOCK_SIZE);
		if (c == 0)
			continue;
		EXPECT_GT(cs, odsm_class_size[c - 1]);
		/* internal fragmentation: the worst object in class c is
		 * one byte above the previous class.  Below 1/3 from 48 up;
		 * 17 bytes in the 32-byte class waste 15/32 (the 16-byte
		 * granule makes that unavoidable), so below 1/2 there.
		 */
		EXPECT_LT(2ULL * (cs - odsm_class_size[c - 1] - 1), (u64)cs)
			TH_LOG("class %d size %u wastes half", c, cs);
		if (c >= 2)
			EXPECT_LT(3ULL * (cs - odsm_class_size[c - 1] - 1),
				  (u64)cs)
				TH_LOG("class %d size %u wastes a third", c, cs);
	}
}

TEST(every_size_no_align)
{
	static const u32 small_aligns[] = { 0, 1, 2, 4, 8, 16 };
	u64 size;
	unsigned int a;

	for (a = 0; a < ARRAY_SIZE(small_aligns); a++) {
		for (size = 1; size <= ODSM_SLAB_MAX; size++) {
			int cls = odsm_size_to_class(size, small_aligns[a]);

			ASSERT_GE(cls, 0) TH_LOG("size %llu align %u",
					       (unsigned long long)size,
					       small_aligns[a]);
			ASSERT_LT(cls, ODSM_NR_CLASSES);
			/* fits ... */
			ASSERT_GE((u64)odsm_class_size[cls], size);
			/* ... and is the smallest that fits */
			if (cls > 0)
				ASSERT_LT((u64)odsm_class_size[cls - 1], size)
					TH_LOG("size %llu align %u -> class %d",
					       (unsigned long long)size,
					       small_aligns[a], cls);
			ASSERT_EQ(ref_class(size, small_aligns[a]), cls);
		}
	}
}

TEST(every_size_every_align)
{
	u32 align;
	u64 size;

	for (align = 16; align <= ODSM_MAX_ALIGN; align <<= 1) {
		for (size = 1; size <= ODSM_SLAB_MAX; size++) {
			int cls = odsm_size_to_class(size, align);
			u32 cs;

			ASSERT_GE(cls, 0) TH_LOG("size %llu align %u",
					       (unsigned long long)size, align);
			ASSERT_LT(cls, ODSM_NR_CLASSES);
			cs = odsm_class_size[cls];
			ASSERT_GE((u64)cs, size);
			/* safety: slot k of a 64 KiB-aligned slab is at k*cs,
			 * which must be a multiple of align for every k
			 */
			ASSERT_EQ(0U, cs % align)
				TH_LOG("size %llu align %u -> class size %u",
				       (unsigned long long)size, align, cs);
			ASSERT_EQ(0U, ODSM_BLOCK_SIZE % align);
			/* the documented rule, exactly */
			ASSERT_EQ(ref_class(size, align), cls)
				TH_LOG("size %llu align %u",
				       (unsigned long long)size, align);
		}
	}
}

TEST(spot_values)
{
	static const struct {
		u64 size;
		u32 align;
		u32 class_size;
	} tab[] = {
		{ 1, 0, 16 },		{ 16, 0, 16 },		{ 17, 0, 32 },
		{ 33, 0, 48 },		{ 48, 0, 48 },		{ 49, 0, 64 },
		{ 65, 0, 96 },		{ 97, 0, 128 },		{ 129, 0, 192 },
		{ 4097, 0, 6144 },	{ 6145, 0, 8192 },	{ 16385, 0, 24576 },
		{ 24577, 0, 32768 },	{ 32768, 0, 32768 },
		{ 33, 16, 48 },		{ 33, 32, 64 },		{ 1, 32, 32 },
		{ 1, 64, 64 },		{ 65, 64, 128 },	{ 1, 4096, 4096 },
		{ 4097, 4096, 8192 },	{ 8193, 4096, 12288 },
		{ 16385, 4096, 24576 },	{ 16385, 16, 24576 },
		{ 100, 128, 128 },	{ 129, 128, 256 },
		{ 65, 32, 96 },		{ 97, 64, 128 },	{ 3000, 1024, 3072 },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(tab); i++) {
		int cls = odsm_size_to_class(tab[i].size, tab[i].align);

		ASSERT_GE(cls, 0);
		EXPECT_EQ(tab[i].class_size, odsm_class_size[cls])
			TH_LOG("size %llu align %u",
			       (unsigned long long)tab[i].size, tab[i].align);
	}
}

TEST(out_of_range)
{
	static const u64 sizes[] = {
		0, ODSM_SLAB_MAX + 1ULL, ODSM_BLOCK_SIZE, 1ULL << 32,
		(1ULL << 32) + 16, ~0ULL, ~0ULL - ODSM_SLAB_MAX,
	};
	u32 align;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		EXPECT_EQ(-1, odsm_size_to_class(sizes[i], 0));
		for (align = 16; align <= ODSM_MAX_ALIGN; align <<= 1)
			EXPECT_EQ(-1, odsm_size_to_class(sizes[i], align));
	}
}

TEST_HARNESS_MAIN
