/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Waits on a word of this node's partition (odsm_wait.c): ODSM_IOC_WAIT
 * and ODSM_IOC_WAKE, a futex for heap words, which FUTEX_WAIT cannot key
 * (the heap's pages have no page-cache mapping), and the wakeups of the
 * writes the module itself makes into the partition.
 */
#ifndef _ODSM_WAIT_H
#define _ODSM_WAIT_H

#include <linux/types.h>

void odsm_wait_init(void);
/* serve peers' WAKEs of our words: a service of the core */
int odsm_wait_register(void);
void odsm_wait_unregister(void);

long odsm_ioc_wait(void __user *arg);
long odsm_ioc_wake(void __user *arg);

/*
 * The module wrote [addr, addr + len) of this partition (a peer's WRITE
 * or ATOMIC, or an ioctl's): wake every waiter on a word in it.  Costs one
 * atomic read while nobody waits.  Any context that may take a spinlock.
 */
void odsm_wait_wake_range(u64 addr, u64 len);

/*
 * The module's own wait on a word of this partition (a lane's response
 * seq, odsm_deleg_lane.c): as ODSM_IOC_WAIT's, woken the same way, ended
 * early only by a fatal signal (-EINTR or -ERESTARTSYS), or with
 * -ECANCELED when *stop is true: a waker sets *stop, then wakes the
 * word (odsm_wait_wake_range()), and the waiter sees one or the other.
 * timeout_ns 0: none.
 */
long odsm_wait_word_killable(u64 addr, u32 size, u64 expect, u64 timeout_ns,
			     const bool *stop);

#endif /* _ODSM_WAIT_H */
