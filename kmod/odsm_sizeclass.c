// SPDX-License-Identifier: GPL-2.0
/*
 * Size classes: powers of two and the midpoints between them, from 16 bytes
 * to 32 KiB.  Above 32 bytes a class is at most 1.5x the one below it, so
 * an object wastes under a third of its slot; below, the 16-byte minimum
 * (every object is 16-aligned) sets the waste.
 */
#include "odsm_sizeclass.h"

const u32 odsm_class_size[ODSM_NR_CLASSES] = {
	16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768,
	1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
};

int odsm_size_to_class(u64 size, u32 align)
{
	int cls;

	if (size == 0 || size > ODSM_SLAB_MAX)
		return -1;
	/* slab blocks are 64 KiB-aligned and a slot offset is a multiple of
	 * the class size, so a class that is a multiple of align is aligned
	 * (every class is a multiple of 16)
	 */
	for (cls = 0; cls < ODSM_NR_CLASSES; cls++) {
		u32 cs = odsm_class_size[cls];

		if (cs >= size && (align <= 16 || cs % align == 0))
			return cls;
	}
	return -1;
}
