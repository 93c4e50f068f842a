/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Delegation across nodes (odsm_deleg.c): the ioctls of clients and
 * trustee runtimes, and the DELEG messages it serves.
 */
#ifndef _ODSM_DELEG_H
#define _ODSM_DELEG_H

#include <linux/types.h>

struct file;

int odsm_deleg_init(void);	/* registers the messages it serves */
void odsm_deleg_exit(void);

long odsm_ioc_deleg_bind(struct file *filp, void __user *arg);
long odsm_ioc_deleg_call(void __user *arg);
long odsm_ioc_deleg_serve(struct file *filp, void __user *arg);
/* filp closes: the runtime it served is gone */
void odsm_deleg_release(struct file *filp);

#endif /* _ODSM_DELEG_H */
