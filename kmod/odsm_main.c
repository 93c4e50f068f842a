// SPDX-License-Identifier: GPL-2.0
/*
 * odsm - ownership-guided distributed shared memory.
 *
 * Module entry: parameters, the node's heap, the device and sysfs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/init.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include "odsm.h"
#include "odsm_cluster.h"
#include "odsm_cache.h"
#include "odsm_onesided.h"
#include "odsm_deleg.h"
#include "odsm_remote.h"
#include "odsm_wait.h"

static uint node_id;
module_param(node_id, uint, 0444);
MODULE_PARM_DESC(node_id, "This node's id, 0 .. nr_nodes-1 (default 0)");

static uint nr_nodes = 1;
module_param(nr_nodes, uint, 0444);
MODULE_PARM_DESC(nr_nodes, "Nodes (partitions) in the heap (default 1)");

static ulong heap_base = 0x100000000000UL;
module_param(heap_base, ulong, 0444);
MODULE_PARM_DESC(heap_base, "Virtual address of the heap in every process, 2 MiB aligned (default 0x100000000000)");

static ulong part_size = 1UL << 30;
module_param(part_size, ulong, 0444);
MODULE_PARM_DESC(part_size, "Bytes per node partition, a multiple of 2 MiB, at most 64 GiB (default 1 GiB)");

static int __init odsm_init(void)
{
	struct odsm_geom g = {
		.base = heap_base,
		.part_size = part_size,
		.nr_nodes = nr_nodes,
		.node_id = node_id,
	};
	int ret;

	odsm_wait_init();
	ret = odsm_heap_init(&odsm_heap, &g);
	if (ret) {
		pr_err("bad configuration node_id=%u nr_nodes=%u heap_base=0x%lx part_size=%lu: %d\n",
		       node_id, nr_nodes, heap_base, part_size, ret);
		return ret;
	}
	odsm_heap.inode = odsm_fs_inode_new();
	if (IS_ERR(odsm_heap.inode)) {
		ret = PTR_ERR(odsm_heap.inode);
		goto err_heap;
	}
	/* services, then transports: they register with the core */
	ret = odsm_cache_init();
	if (ret)
		goto err_inode;
	ret = odsm_remote_init();
	if (ret)
		goto err_cache;
	ret = odsm_onesided_init();
	if (ret)
		goto err_remote;
	ret = odsm_deleg_init();
	if (ret)
		goto err_onesided;
	ret = odsm_wait_register();
	if (ret)
		goto err_deleg;
	ret = odsm_tcp_init();
	if (ret)
		goto err_wait;
	ret = odsm_rdma_init();
	if (ret)
		goto err_tcp;
	ret = odsm_uring_init();
	if (ret)
		goto err_rdma;
	/* last but the device: its files read and write what is above */
	ret = odsm_sysfs_init();
	if (ret)
		goto err_uring;
	ret = odsm_dev_register();
	if (ret)
		goto err_sysfs;
	pr_info("node %u of %u, heap 0x%llx + %u x %llu MiB\n",
		g.node_id, g.nr_nodes, g.base, g.nr_nodes, g.part_size >> 20);
	return 0;

err_sysfs:
	odsm_sysfs_exit();
err_uring:
	odsm_uring_exit();
err_rdma:
	odsm_rdma_exit();
err_tcp:
	odsm_tcp_exit();
err_wait:
	odsm_wait_unregister();
err_deleg:
	odsm_deleg_exit();
err_onesided:
	odsm_onesided_exit();
err_remote:
	odsm_remote_exit();
err_cache:
	odsm_cache_exit();
err_inode:
	odsm_fs_inode_put(odsm_heap.inode);
err_heap:
	odsm_heap_destroy(&odsm_heap);
	return ret;
}

/*
 * Reached only when no file of the device is open (the fops hold a module
 * reference, and every mapping holds its file), so nothing maps the heap
 * and no ioctl waits on a peer.  Leaving the cluster stops the threads and
 * waits out the requests being served; peers that are down cost nothing.
 */
static void __exit odsm_exit(void)
{
	odsm_leave();
	odsm_dev_unregister();
	odsm_sysfs_exit();
	odsm_uring_exit();
	odsm_rdma_exit();
	odsm_tcp_exit();
	odsm_wait_unregister();
	odsm_deleg_exit();
	odsm_onesided_exit();
	odsm_remote_exit();
	odsm_cache_exit();
	odsm_fs_inode_put(odsm_heap.inode);
	odsm_heap_destroy(&odsm_heap);
	pr_info("unloaded\n");
}

module_init(odsm_init);
module_exit(odsm_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("odsm: ownership-guided distributed shared memory");
MODULE_AUTHOR("The odsm authors");
