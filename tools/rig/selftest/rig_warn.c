// SPDX-License-Identifier: GPL-2.0
/*
 * Rig self-test module: makes the kernel report one problem when loaded, so
 * the fail-warn scenario can prove that tools/rig/run.sh fails a guest whose
 * kernel reported it.  report= chooses which:
 *   warn      a WARN() (default; every kernel)
 *   kasan     a slab out-of-bounds read: "BUG: KASAN: slab-out-of-bounds"
 *   lockdep   two mutexes taken in both orders by one thread, which never
 *             deadlocks but is "WARNING: possible circular locking dependency"
 *   sleep     might_sleep() with preemption off: "BUG: sleeping function
 *             called from invalid context" (DEBUG_ATOMIC_SLEEP)
 *   softlockup  4 s of busy-waiting that never offers to reschedule: the
 *             soft-lockup detector's "BUG: soft lockup" once the guest is
 *             booted with watchdog_thresh=1 (a report after 2 s; the
 *             default 10 would need 20 s).  Every Debian kernel has it.
 * kasan, lockdep and sleep report only on a kernel built with the checker
 * (the rig's debug kernel, tools/debug-kernel); elsewhere they pass
 * silently.
 */
#include <linux/module.h>
#include <linux/bug.h>
#include <linux/compiler.h>
#include <linux/delay.h>
#include <linux/mutex.h>
#include <linux/preempt.h>
#include <linux/slab.h>
#include <linux/string.h>

static char *report = "warn";
module_param(report, charp, 0444);
MODULE_PARM_DESC(report,
		 "problem to cause: warn, kasan, lockdep, sleep or softlockup");

static DEFINE_MUTEX(rig_a);
static DEFINE_MUTEX(rig_b);

static int rig_kasan(void)
{
	char *p = kmalloc(13, GFP_KERNEL);

	if (!p)
		return -ENOMEM;
	/* the compiler must not see that the read is out of bounds */
	OPTIMIZER_HIDE_VAR(p);
	pr_info("rig_warn: byte past the object: %d\n", READ_ONCE(p[13]));
	kfree(p);
	return 0;
}

static void rig_lockdep(void)
{
	mutex_lock(&rig_a);
	mutex_lock(&rig_b);
	mutex_unlock(&rig_b);
	mutex_unlock(&rig_a);
	/* b then a: a cycle with the above, although one thread cannot deadlock */
	mutex_lock(&rig_b);
	mutex_lock(&rig_a);
	mutex_unlock(&rig_a);
	mutex_unlock(&rig_b);
}

static int __init rig_warn_init(void)
{
	if (!strcmp(report, "kasan"))
		return rig_kasan();
	if (!strcmp(report, "lockdep")) {
		rig_lockdep();
		return 0;
	}
	if (!strcmp(report, "softlockup")) {
		unsigned int ms;

		/* mdelay() spins: no cond_resched(), no sleep in 4 s */
		for (ms = 0; ms < 4000; ms++)
			mdelay(1);
		return 0;
	}
	if (!strcmp(report, "sleep")) {
		preempt_disable();
		might_sleep();
		preempt_enable();
		return 0;
	}
	WARN(1, "rig_warn: deliberate warning for the rig's judge\n");
	return 0;
}

static void __exit rig_warn_exit(void)
{
}

module_init(rig_warn_init);
module_exit(rig_warn_exit);
MODULE_DESCRIPTION("QEMU rig self-test: a deliberate WARN(), KASAN, lockdep, atomic-sleep or soft-lockup report");
MODULE_LICENSE("GPL");
