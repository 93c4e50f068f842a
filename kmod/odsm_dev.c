// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/odsm's ioctls: the dispatcher (odsm_dev_ioctl, also the body of an
 * io_uring command) and the calls of the front itself.  The device, its
 * file operations and their life are odsm_chrdev.c's, so that the io_uring
 * path (odsm_uring.c) can call the dispatcher without a cycle of calls.
 */
#include <linux/miscdevice.h>
#include <linux/uaccess.h>
#include <linux/capability.h>
#include <linux/mman.h>
#include <linux/mm.h>
#include "odsm.h"
#include "odsm_compat.h"
#include "odsm_cluster.h"
#include "odsm_cache.h"
#include "odsm_deleg.h"
#include "odsm_remote.h"
#include "odsm_wait.h"

static long ioc_info(void __user *arg)
{
	const struct odsm_geom *g = &odsm_heap.geom;
	struct odsm_info info = {
		.abi_version = ODSM_ABI_VERSION,
		.page_size = PAGE_SIZE,
	};

	mutex_lock(&odsm_heap.lock);
	info.node_id = g->node_id;
	info.nr_nodes = g->nr_nodes;
	info.heap_base = g->base;
	info.part_size = g->part_size;
	info.heap_size = (u64)g->nr_nodes * g->part_size;
	info.max_alloc = odsm_palloc_max_alloc(&odsm_heap.pa);
	mutex_unlock(&odsm_heap.lock);
	return copy_to_user(arg, &info, sizeof(info)) ? -EFAULT : 0;
}

static long ioc_set_config(void __user *arg)
{
	struct odsm_config c;
	struct odsm_geom g;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&c, arg, sizeof(c)))
		return -EFAULT;
	if (!odsm_reserved_zero(c.reserved, ARRAY_SIZE(c.reserved)))
		return -EINVAL;
	g.node_id = c.node_id;
	g.nr_nodes = c.nr_nodes;
	g.base = c.heap_base;
	g.part_size = c.part_size;
	return odsm_cluster_set_config(&g);
}

/* Where an allocation goes: this node, or a peer's node id. */
static int alloc_target(const struct odsm_alloc *a)
{
	const struct odsm_geom *g = &odsm_heap.geom;
	bool local;

	if ((a->flags & ODSM_ALLOC_ON_NODE) && (a->flags & ODSM_ALLOC_ANYWHERE))
		return -EINVAL;
	/* what the home node would refuse, refused here: a malformed
	 * request gets no answer at all
	 */
	if (!a->size || a->size > g->part_size ||
	    (a->align && (!is_power_of_2(a->align) || a->align > ODSM_MAX_ALIGN)))
		return -EINVAL;
	/* a node only with the flag: the field may mean more one day */
	if (!(a->flags & ODSM_ALLOC_ON_NODE))
		return a->node ? -EINVAL : g->node_id;
	if (a->node >= g->nr_nodes)
		return -EINVAL;
	/* no way to another node without a cluster */
	return odsm_home_of(odsm_part_start(g, a->node), 1, &local);
}

static long ioc_alloc(void __user *arg)
{
	struct odsm_alloc a;
	int node, ret;

	if (copy_from_user(&a, arg, sizeof(a)))
		return -EFAULT;
	node = alloc_target(&a);
	if (a.reserved0 || a.reserved || (a.flags & ~ODSM_ALLOC_FLAGS) ||
	    node < 0) {
		odsm_stat_inc(ODSM_STAT_alloc_einval);
		return -EINVAL;
	}
	if (node == odsm_heap.geom.node_id) {
		ret = odsm_heap_alloc(&odsm_heap, a.size, a.align, a.flags,
				      &a.gaddr, &a.usable);
		/* full here: the up peer with the most room */
		if (ret == -ENOMEM && (a.flags & ODSM_ALLOC_ANYWHERE)) {
			node = odsm_peer_most_free();
			if (node >= 0)
				ret = odsm_remote_alloc(node, a.size, a.align,
							a.flags, &a.gaddr,
							&a.usable);
		}
	} else {
		ret = odsm_remote_alloc(node, a.size, a.align, a.flags,
					&a.gaddr, &a.usable);
	}
	if (ret)
		return ret;
	if (copy_to_user(arg, &a, sizeof(a))) {
		/* the caller cannot learn the address: take it back */
		if (odsm_range_is_local(&odsm_heap.geom,
					odsm_clear_color(a.gaddr), 1))
			odsm_heap_free(&odsm_heap, a.gaddr);
		else
			odsm_remote_free(odsm_node_of(&odsm_heap.geom,
						      odsm_clear_color(a.gaddr)),
					 a.gaddr);
		return -EFAULT;
	}
	return 0;
}

static long ioc_free(void __user *arg)
{
	struct odsm_free f;
	bool local;
	u64 addr;
	int node, ret;

	if (copy_from_user(&f, arg, sizeof(f)))
		return -EFAULT;
	if (!odsm_reserved_zero(f.reserved, ARRAY_SIZE(f.reserved))) {
		odsm_stat_inc(ODSM_STAT_bad_frees);
		return -EINVAL;
	}
	/* another node's object is freed by its home node */
	addr = odsm_clear_color(f.gaddr);
	node = odsm_home_of(addr, 1, &local);
	if (node >= 0 && !local)
		return odsm_remote_free(node, f.gaddr);
	/* the check and the free with no slot allocated in between */
	odsm_cache_slots_hold();
	if (odsm_cache_is_slot(addr)) {
		odsm_stat_inc(ODSM_STAT_bad_frees);
		ret = -EINVAL;		/* the cache's, not the caller's */
	} else {
		ret = odsm_heap_free(&odsm_heap, f.gaddr);
	}
	odsm_cache_slots_release();
	return ret;
}

static long ioc_join(void __user *arg)
{
	struct odsm_node_addr *nodes;
	struct odsm_join j;
	u8 *key;
	long ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&j, arg, sizeof(j)))
		return -EFAULT;
	if (j.reserved || j.nr_nodes < 2 || j.nr_nodes > ODSM_MAX_NODES)
		return -EINVAL;
	/* no cluster without its secret */
	if (!j.key && !j.key_len)
		return -ENOKEY;
	if (j.key_len < ODSM_KEY_MIN || j.key_len > ODSM_KEY_MAX)
		return -EINVAL;
	key = memdup_user(u64_to_user_ptr(j.key), j.key_len);
	if (IS_ERR(key))
		return PTR_ERR(key);
	nodes = memdup_user(u64_to_user_ptr(j.nodes),
			    sizeof(*nodes) * j.nr_nodes);
	if (IS_ERR(nodes)) {
		ret = PTR_ERR(nodes);
		goto out_key;
	}
	ret = odsm_cluster_join(&j, nodes, key);
	kfree(nodes);
out_key:
	kfree_sensitive(key);
	return ret;
}

static long ioc_status(void __user *arg)
{
	struct odsm_peer_info *info = NULL;
	struct odsm_status st;
	u32 room;
	int ret;

	if (copy_from_user(&st, arg, sizeof(st)))
		return -EFAULT;
	if (st.reserved[0] || st.reserved[1])
		return -EINVAL;
	room = min_t(u32, st.nr, ODSM_MAX_NODES);
	if (room) {
		info = kcalloc(room, sizeof(*info), GFP_KERNEL);
		if (!info)
			return -ENOMEM;
	}
	ret = odsm_cluster_status(&st, info, room);
	if (!ret && room &&
	    copy_to_user(u64_to_user_ptr(st.peers), info,
			 sizeof(*info) * min(room, st.nr)))
		ret = -EFAULT;
	kfree(info);
	if (!ret && copy_to_user(arg, &st, sizeof(st)))
		ret = -EFAULT;
	return ret;
}

static long ioc_move(void __user *arg)
{
	struct odsm_move m;
	int ret;

	if (copy_from_user(&m, arg, sizeof(m)))
		return -EFAULT;
	if (!odsm_reserved_zero(m.reserved, ARRAY_SIZE(m.reserved)))
		return -EINVAL;
	/* the check and the move with no slot allocated in between */
	odsm_cache_slots_hold();
	if (odsm_cache_is_slot(odsm_clear_color(m.gaddr)))
		ret = -EINVAL;
	else
		ret = odsm_heap_move(&odsm_heap, m.gaddr, &m.new_gaddr);
	odsm_cache_slots_release();
	if (ret)
		return ret;
	/* the object already moved: a caller that faults here lost it, as it
	 * would with any pointer it failed to store
	 */
	return copy_to_user(arg, &m, sizeof(m)) ? -EFAULT : 0;
}

static long ioc_obj_info(void __user *arg)
{
	struct odsm_obj_info o;
	struct odsm_objinfo oi;
	int ret;

	if (copy_from_user(&o, arg, sizeof(o)))
		return -EFAULT;
	if (!odsm_reserved_zero(o.reserved, ARRAY_SIZE(o.reserved)) || o.reserved0)
		return -EINVAL;
	ret = odsm_heap_obj_info(&odsm_heap, o.gaddr, &oi);
	if (ret)
		return ret;
	o.gaddr = odsm_with_color(oi.addr, oi.color);
	o.size = oi.size;
	o.usable = oi.usable;
	o.alloc_color = oi.color;
	return copy_to_user(arg, &o, sizeof(o)) ? -EFAULT : 0;
}

/*
 * Leave the cluster: first the frees of moved originals still queued (they
 * need the cluster), then forget every cached copy: after a re-join, a
 * peer's addresses may mean other objects.
 */
void odsm_leave(void)
{
	odsm_borrow_flush();
	odsm_cluster_leave();
	odsm_cache_forget(U32_MAX);
}

/*
 * The commands that change the heap, the cluster or a runtime's state: a
 * file opened without write access may not (as its mmap may not map the
 * heap).  Reading, borrowing and waiting are left to it.
 */
static bool ioc_writes(unsigned int cmd)
{
	switch (cmd) {
	case ODSM_IOC_SET_CONFIG:
	case ODSM_IOC_ALLOC:
	case ODSM_IOC_FREE:
	case ODSM_IOC_MOVE:
	case ODSM_IOC_WRITE:
	case ODSM_IOC_ATOMIC:
	case ODSM_IOC_BORROW_MUT:
	case ODSM_IOC_WRITE_BACK:
	case ODSM_IOC_DROP_COPIES:
	case ODSM_IOC_JOIN:
	case ODSM_IOC_LEAVE:
	case ODSM_IOC_DELEG_BIND:
	case ODSM_IOC_DELEG_CALL:
	case ODSM_IOC_DELEG_SERVE:
	case ODSM_IOC_WAKE:
		return true;
	}
	return false;
}

/* also the body of an io_uring command, on a worker (odsm_uring.c) */
long odsm_dev_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	long ret;

	if (ioc_writes(cmd) && !(filp->f_mode & FMODE_WRITE)) {
		odsm_stat_inc(ODSM_STAT_bad_ioctls);
		return -EBADF;
	}
	switch (cmd) {
	case ODSM_IOC_INFO:
		return ioc_info(uarg);
	case ODSM_IOC_SET_CONFIG:
		ret = ioc_set_config(uarg);
		break;
	case ODSM_IOC_ALLOC:
		return ioc_alloc(uarg);
	case ODSM_IOC_FREE:
		return ioc_free(uarg);
	case ODSM_IOC_MOVE:
		ret = ioc_move(uarg);
		break;
	case ODSM_IOC_OBJ_INFO:
		ret = ioc_obj_info(uarg);
		break;
	case ODSM_IOC_READ:
		ret = odsm_ioc_rw(uarg, false);
		break;
	case ODSM_IOC_WRITE:
		ret = odsm_ioc_rw(uarg, true);
		break;
	case ODSM_IOC_ATOMIC:
		ret = odsm_ioc_atomic(uarg);
		break;
	case ODSM_IOC_BORROW:
		ret = odsm_ioc_borrow(filp->private_data, uarg);
		break;
	case ODSM_IOC_RETURN:
		ret = odsm_ioc_return(filp->private_data, uarg);
		break;
	case ODSM_IOC_BORROW_MUT:
		ret = odsm_ioc_borrow_mut(filp->private_data, uarg);
		break;
	case ODSM_IOC_WRITE_BACK:
		ret = odsm_ioc_write_back(uarg);
		break;
	case ODSM_IOC_READ_OWNER:
		ret = odsm_ioc_read_owner(uarg);
		break;
	case ODSM_IOC_DROP_COPIES:
		ret = odsm_ioc_drop_copies(uarg);
		break;
	case ODSM_IOC_PREFETCH:
		ret = odsm_ioc_prefetch(uarg);
		break;
	case ODSM_IOC_JOIN:
		ret = ioc_join(uarg);
		break;
	case ODSM_IOC_LEAVE:
		if (!capable(CAP_SYS_ADMIN))
			return -EPERM;
		odsm_leave();
		return 0;
	case ODSM_IOC_STATUS:
		ret = ioc_status(uarg);
		break;
	case ODSM_IOC_DELEG_BIND:
		ret = odsm_ioc_deleg_bind(filp, uarg);
		break;
	case ODSM_IOC_DELEG_CALL:
		/* its failures are counted as deleg_out_errors */
		return odsm_ioc_deleg_call(uarg);
	case ODSM_IOC_DELEG_SERVE:
		ret = odsm_ioc_deleg_serve(filp, uarg);
		/* no batch in time: a runtime's idle life */
		if (ret == -EAGAIN)
			return ret;
		break;
	case ODSM_IOC_WAIT:
		/* counted by outcome in wait_* (a refusal in wait_refused) */
		return odsm_ioc_wait(uarg);
	case ODSM_IOC_WAKE:
		return odsm_ioc_wake(uarg);
	default:
		ret = -ENOTTY;
	}
	/* errors of the caller's making; not a busy, full or down node */
	if (ret && ret != -EBUSY && ret != -ENOMEM && ret != -EHOSTDOWN &&
	    ret != -ETIMEDOUT && ret != -EINTR)
		odsm_stat_inc(ODSM_STAT_bad_ioctls);
	return ret;
}
