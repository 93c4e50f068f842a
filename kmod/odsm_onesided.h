/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one-sided service (odsm_onesided.c): peers' memory read, written
 * and operated on atomically by this node's device, where the cluster's
 * transport can (its optional ops), and the home's side of it.
 */
#ifndef _ODSM_ONESIDED_H
#define _ODSM_ONESIDED_H

#include <linux/types.h>

int odsm_onesided_init(void);	/* registers its messages and events */
void odsm_onesided_exit(void);

/* Does the joined cluster's transport access peers' memory one-sided? */
bool odsm_onesided_active(void);
/*
 * One-sided READ/WRITE of len (<= ODSM_WIRE_MAX_DATA) bytes at addr of
 * node's partition, registering its blocks first (MAP) where needed:
 * -EOPNOTSUPP when the request path must do it instead (no one-sided
 * transport, a block the home does not register, one-sided turned off).
 */
int odsm_onesided_rw(u32 node, u64 addr, void *buf, u32 len, bool write);
/* The same for an atomic on a word of node's partition (ODSM_ATOMIC_F_NIC). */
int odsm_onesided_atomic(u32 node, u64 addr, u32 op, u64 operand,
			 u64 compare, u64 *old);
/*
 * Does this node run its flagged (F_NIC) atomics through its device?  Yes
 * when it is joined over a transport whose device has atomics: then so
 * must it, since peers run theirs one-sided.
 */
bool odsm_nic_domain_here(void);
/* A flagged atomic on our own word, run by our device (loopback). */
int odsm_nic_atomic_here(u64 addr, u32 op, u64 operand, u64 compare,
			 u64 *old);

#endif /* _ODSM_ONESIDED_H */
