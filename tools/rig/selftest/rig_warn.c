// SPDX-License-Identifier: GPL-2.0
/*
 * Rig self-test module: fires one WARN() when loaded, so the fail-warn
 * scenario can prove that tools/rig/run.sh fails a guest whose kernel warned.
 */
#include <linux/module.h>
#include <linux/bug.h>

static int __init rig_warn_init(void)
{
	WARN(1, "rig_warn: deliberate warning for the rig's judge\n");
	return 0;
}

static void __exit rig_warn_exit(void)
{
}

module_init(rig_warn_init);
module_exit(rig_warn_exit);
MODULE_DESCRIPTION("QEMU rig self-test: deliberate WARN()");
MODULE_LICENSE("GPL");
