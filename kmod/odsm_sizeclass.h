/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Object size classes.  Objects up to ODSM_SLAB_MAX live in slabs: one
 * 64 KiB block cut into equal slots.  Bigger objects take whole blocks.
 */
#ifndef _ODSM_SIZECLASS_H
#define _ODSM_SIZECLASS_H

#include "odsm_portable.h"

#define ODSM_BLOCK_SHIFT	16
#define ODSM_BLOCK_SIZE		((u32)BIT(ODSM_BLOCK_SHIFT))
#define ODSM_SLAB_MAX		(32U << 10)
#define ODSM_NR_CLASSES		22
#define ODSM_MAX_ALIGN		4096U

extern const u32 odsm_class_size[ODSM_NR_CLASSES];

/*
 * The smallest class for an object of size bytes aligned to align (0 or a
 * power of two): its slots are at multiples of the class size inside a
 * block-aligned slab, so a class that is a multiple of align is aligned.
 * Returns -1 when the object needs whole blocks.
 */
int odsm_size_to_class(u64 size, u32 align);

/* Slots of a slab of class cls. */
static inline u32 odsm_class_slots(int cls)
{
	return ODSM_BLOCK_SIZE / odsm_class_size[cls];
}

#endif /* _ODSM_SIZECLASS_H */
