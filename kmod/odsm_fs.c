// SPDX-License-Identifier: GPL-2.0
/*
 * A private pseudo filesystem holding one anonymous inode.  Every open file
 * of /dev/odsm uses its address_space as f_mapping, so all heap VMAs of all
 * processes hang off one mapping and a released page can be unmapped from
 * all of them with one unmap_mapping_range() (the DRM drivers do the same),
 * whichever device node the files were opened through.
 */
#include <linux/fs.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/fs_context.h>
#include "odsm.h"

#define ODSM_FS_MAGIC	0x6f64736d	/* "odsm" */

static int odsm_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, ODSM_FS_MAGIC) ? 0 : -ENOMEM;
}

/*
 * No .owner: the module's own kern_mount() would then hold a reference on
 * the module for as long as it is loaded, and rmmod could never succeed.
 * The type is never registered, so nothing else can mount it, and
 * odsm_fs_inode_put() unmounts it synchronously in module exit.
 */
static struct file_system_type odsm_fs_type = {
	.name = "odsm",
	.init_fs_context = odsm_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

static struct vfsmount *odsm_mnt;

struct inode *odsm_fs_inode_new(void)
{
	struct inode *inode;

	odsm_mnt = kern_mount(&odsm_fs_type);
	if (IS_ERR(odsm_mnt))
		return ERR_CAST(odsm_mnt);
	inode = alloc_anon_inode(odsm_mnt->mnt_sb);
	if (IS_ERR(inode))
		kern_unmount(odsm_mnt);
	return inode;
}

void odsm_fs_inode_put(struct inode *inode)
{
	iput(inode);
	kern_unmount(odsm_mnt);
}
