// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/odsm, the misc device: its file operations (open, release, mmap of
 * the heap at its fixed base, the ioctls, io_uring commands) and its
 * registration.  The ioctls are odsm_dev.c's, the io_uring commands
 * odsm_uring.c's, the mapping odsm_mmap.c's.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include "odsm.h"
#include "odsm_compat.h"
#include "odsm_cache.h"
#include "odsm_deleg.h"

static int odsm_open(struct inode *inode, struct file *filp)
{
	/* the references this file holds on cached copies */
	filp->private_data = odsm_fref_new();
	if (!filp->private_data)
		return -ENOMEM;
	/* one mapping for all files: see odsm_fs.c */
	filp->f_mapping = odsm_heap.inode->i_mapping;
	return 0;
}

static int odsm_release(struct inode *inode, struct file *filp)
{
	odsm_deleg_release(filp);
	odsm_fref_release(filp->private_data);
	return 0;
}

static const struct file_operations odsm_fops = {
	.owner = THIS_MODULE,
	.open = odsm_open,
	.release = odsm_release,
	.mmap = odsm_mmap,
	.get_unmapped_area = odsm_get_unmapped_area,
	.unlocked_ioctl = odsm_dev_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.uring_cmd = odsm_uring_cmd,
	.llseek = noop_llseek,
};

static struct miscdevice odsm_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "odsm",
	.fops = &odsm_fops,
	.mode = 0600,		/* root only unless udev says otherwise */
};

int odsm_dev_register(void)
{
	return misc_register(&odsm_misc);
}

void odsm_dev_unregister(void)
{
	misc_deregister(&odsm_misc);
}
