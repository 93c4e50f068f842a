/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The few kernel facilities the pure-logic files (odsm_addr.h,
 * odsm_sizeclass.c, odsm_palloc.c) use.  Those files include only this
 * header, so they stay free of anything that needs a running kernel and
 * also build into host programs, where tools/include/odsm_kshim.h maps
 * these names onto libc.
 */
#ifndef _ODSM_PORTABLE_H
#define _ODSM_PORTABLE_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/errno.h>
#include <linux/bits.h>
#include <linux/string.h>
#include <linux/slab.h>
#include <linux/log2.h>

#define odsm_zalloc_array(n, sz)	kvcalloc(n, sz, GFP_KERNEL)
#define odsm_free_array(p)		kvfree(p)
#else
#include "../tools/include/odsm_kshim.h"
#endif

static inline u32 odsm_max_u32(u32 a, u32 b)
{
	return a > b ? a : b;
}

#endif /* _ODSM_PORTABLE_H */
