/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel facilities the module's pure-logic files use, mapped onto libc
 * so that those files also build into host programs (unit tests, tools).
 * Included by kmod/odsm_portable.h when __KERNEL__ is not defined.
 */
#ifndef _ODSM_KSHIM_H
#define _ODSM_KSHIM_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;

#define odsm_zalloc_array(n, sz)	calloc(n, sz)
#define odsm_free_array(p)		free(p)
#define U32_MAX				UINT32_MAX
#define BIT(n)				(1UL << (n))
#define BITS_PER_LONG			(8 * (int)sizeof(long))
#define is_power_of_2(n)		((n) != 0 && (((n) & ((n) - 1)) == 0))
#define unlikely(x)			__builtin_expect(!!(x), 0)
#define likely(x)			__builtin_expect(!!(x), 1)

#endif /* _ODSM_KSHIM_H */
