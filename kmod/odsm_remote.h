/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The remote primitives (odsm_remote.c): the ioctls that reach any node's
 * partition, the calls the other services make to a home, and the home's
 * side that serves them.
 */
#ifndef _ODSM_REMOTE_H
#define _ODSM_REMOTE_H

#include <linux/types.h>
#include "odsm.h"

int odsm_remote_init(void);	/* registers the messages it serves */
void odsm_remote_exit(void);

long odsm_ioc_rw(void __user *arg, bool write);
long odsm_ioc_atomic(void __user *arg);
/*
 * Copy len (<= ODSM_WIRE_MAX_DATA) bytes between buf and [addr, addr + len)
 * of node's partition (not this node's): the raw reads and writes of
 * ODSM_IOC_READ / ODSM_IOC_WRITE (object bytes of borrows travel by FETCH).
 */
int odsm_remote_rw(u32 node, u64 addr, void *buf, u32 len, bool write);
/* The owner box at addr of node's partition, read or written at the home
 * with ODSM_WIRE_RW_OWNER (see odsm_heap_owner_rw()).
 */
int odsm_remote_owner_rw(u32 node, u64 addr, void *box,
			 enum odsm_owner_op op);
int odsm_remote_alloc(u32 node, u64 size, u32 align, u32 flags, u64 *cg,
		      u64 *usable);
int odsm_remote_free(u32 node, u64 cg);
/* The same to one incarnation of node only: -EREMCHG from another. */
int odsm_remote_free_at(u32 node, u64 inc, u64 cg);

#endif /* _ODSM_REMOTE_H */
