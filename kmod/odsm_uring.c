// SPDX-License-Identifier: GPL-2.0
/*
 * Asynchronous operations through io_uring (uapi/linux/odsm.h, struct
 * odsm_uring_cmd): IORING_OP_URING_CMD on a /dev/odsm file runs one of the
 * ioctls that may wait for another node, without blocking its submitter.
 *
 * The submission only checks the command and queues it: the command runs
 * on a worker of odsm's own unbound workqueue, in the submitter's address
 * space (kthread_use_mm(), on a reference to it taken at submission), and
 * through the ioctl's own code, so the two paths check, count and answer
 * alike and a batch of commands gives the bytes the ioctls one at a time
 * give.  Its result is posted from the submitter's task work
 * (io_uring_cmd_complete_in_task()), the completion NVMe passthrough uses.
 * Commands in flight are workers each waiting on its own request to a
 * home, so their round trips overlap instead of adding up.
 *
 * Only ioctls that check no capability run here: the worker has the
 * kernel's credentials, not the submitter's.  A command in flight holds
 * its file (io_uring's reference), so the module stays and a BORROW's
 * reference lands on a live file; a ring that goes away waits for it
 * (io_uring cancels no command that is not marked cancelable), and every
 * command ends within the cluster's timeout, so none is lost and none
 * hangs: uring_cmds and uring_done meet again.
 *
 * A worker gets no signal, so the ioctl's killable waits do not end when
 * the submitter is killed.  What would then keep a dying program's exit
 * waiting (io_uring waits for its commands) is the loops of many round
 * trips, each bounded by the cluster's timeout but not their number: a
 * READ or WRITE of gigabytes by 256 KiB pieces, a large object's FETCH by
 * chunks, a prefetch's batches.  They ask odsm_abandoned() before each
 * step (odsm_abandon.c), which on a command's worker asks ucmd_gone(),
 * registered at init: whether its submitter's process is exiting or
 * being killed (a fatal signal, exit_group(), an execve() ending its
 * other threads) or its thread is exiting.  The command then ends at the
 * step it is at, -EINTR, as the ioctl does when killed (uring_abandoned).
 * Still waited for: a copy into a buffer that userfaultfd or FUSE holds,
 * and a ring closed by a live program.
 *
 * A program (an address space: every ring and file of it together) has at
 * most ODSM_URING_INFLIGHT_MAX commands on workers, half the workers the
 * queue may run (of a NUMA node's share of them: inflight_cap()); past
 * that a command is refused (-EBUSY).  The workers are the node's:
 * without a bound, one program whose commands wait (a stalled runtime, a
 * peer going down, a buffer that userfaultfd or FUSE holds) would take
 * every one and leave the other programs' commands queued behind its own.
 */
#include <linux/cpumask.h>
#include <linux/kthread.h>
#include <linux/memcontrol.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/topology.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include "odsm.h"
#include "odsm_compat.h"

struct odsm_ucmd {
	struct work_struct work;
	struct io_uring_cmd *ioucmd;
	struct mm_struct *mm;		/* the submitter's; mmget() held */
	struct task_struct *task;	/* the submitter; a reference held */
	bool abandoned;			/* odsm_abandoned() said so once */
	unsigned int op;		/* the ioctl */
	unsigned long arg;		/* its user argument */
	long ret;
};

static struct workqueue_struct *odsm_uring_wq;

/*
 * Commands of each program not done on their worker yet: the address of
 * its mm (held by every one of them, so never another's meanwhile) ->
 * xa_mk_value(count).  ucmd_mms_lock makes the look and the change one.
 */
static DEFINE_XARRAY(ucmd_mms);
static DEFINE_MUTEX(ucmd_mms_lock);

/*
 * How many commands one program may have on workers: half of those the
 * queue runs at once.  From 6.9 an unbound queue's max_active is split
 * among the NUMA nodes by their share of the online CPUs and enforced per
 * node, and a command waits for a worker of the node of the CPU that
 * queued it: there, half of this node's share (at least min_active), if
 * that is less than ODSM_URING_INFLIGHT_MAX.
 */
static unsigned int inflight_cap(void)
{
#ifdef ODSM_HAVE_WQ_NODE_MAX_ACTIVE
	unsigned int total = num_online_cpus(), here, share;

	here = cpumask_weight_and(cpumask_of_node(numa_node_id()),
				  cpu_online_mask);
	share = clamp_t(unsigned int,
			DIV_ROUND_UP(WQ_UNBOUND_MAX_ACTIVE * here, total),
			WQ_DFL_MIN_ACTIVE, WQ_UNBOUND_MAX_ACTIVE);
	return min_t(unsigned int, ODSM_URING_INFLIGHT_MAX, share / 2);
#else
	return ODSM_URING_INFLIGHT_MAX;
#endif
}

/*
 * One more command of mm's on a worker: 0, -EBUSY past the bound.  The
 * entry's slot is reserved before the lock, so that nothing is allocated
 * under it (a submitter at its cgroup's limit would reclaim there, and
 * every other program's submissions and completions wait on the lock);
 * a put that erased the entry meanwhile took the slot away: again.
 */
static int mm_count_get(struct mm_struct *mm)
{
	unsigned long key = (unsigned long)mm, n;
	int ret;

	do {
		ret = xa_reserve(&ucmd_mms, key, GFP_KERNEL_ACCOUNT);
		if (ret)
			return ret;
		mutex_lock(&ucmd_mms_lock);
		/* a reserved slot reads NULL */
		n = xa_to_value(xa_load(&ucmd_mms, key) ?: xa_mk_value(0));
		ret = -EBUSY;
		if (n < inflight_cap())
			ret = xa_err(xa_store(&ucmd_mms, key, xa_mk_value(n + 1),
					      GFP_NOWAIT));
		mutex_unlock(&ucmd_mms_lock);
	} while (ret == -ENOMEM);
	/* refused: a slot still only reserved is given back */
	if (ret)
		xa_release(&ucmd_mms, key);
	return ret;
}

static void mm_count_put(struct mm_struct *mm)
{
	unsigned long n;

	mutex_lock(&ucmd_mms_lock);
	n = xa_to_value(xa_load(&ucmd_mms, (unsigned long)mm));
	/* an entry that is there is replaced in place: no allocation */
	if (n > 1)
		xa_store(&ucmd_mms, (unsigned long)mm, xa_mk_value(n - 1),
			 GFP_KERNEL);
	else
		xa_erase(&ucmd_mms, (unsigned long)mm);
	mutex_unlock(&ucmd_mms_lock);
}

/* The ioctls a command may run: the remote operations, no admin ones. */
static bool async_op(unsigned int op)
{
	switch (op) {
	case ODSM_IOC_READ:
	case ODSM_IOC_WRITE:
	case ODSM_IOC_ATOMIC:
	case ODSM_IOC_ALLOC:
	case ODSM_IOC_FREE:
	case ODSM_IOC_BORROW:
	case ODSM_IOC_PREFETCH:
	case ODSM_IOC_RETURN:
	case ODSM_IOC_BORROW_MUT:
	case ODSM_IOC_WRITE_BACK:
	case ODSM_IOC_READ_OWNER:
	case ODSM_IOC_DELEG_CALL:
		return true;
	}
	return false;
}

static struct odsm_ucmd **ucmd_slot(struct io_uring_cmd *ioucmd)
{
	BUILD_BUG_ON(sizeof(struct odsm_ucmd *) > sizeof(ioucmd->pdu));
	return (struct odsm_ucmd **)ioucmd->pdu;
}

/* In the submitter's task work (or io_uring's fallback when it is gone). */
static void ucmd_complete(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	struct odsm_ucmd *u = *ucmd_slot(ioucmd);
	long ret = u->ret;

	kfree(u);
	odsm_stat_inc(ODSM_STAT_uring_done);
	odsm_uring_cmd_done(ioucmd, ret, issue_flags);
}

/* the callback's signature: see odsm_compat.h */
#ifdef ODSM_HAVE_URING_TW_FLAGS
static void ucmd_complete_tw(struct io_uring_cmd *ioucmd, unsigned int flags)
{
	ucmd_complete(ioucmd, flags);
}
#else
static void ucmd_complete_tw(struct io_uring_cmd *ioucmd)
{
	ucmd_complete(ioucmd, 0);
}
#endif

/*
 * Run the command's ioctl in the submitter's address space, charging what
 * it allocates with __GFP_ACCOUNT (the page store's pages) to the
 * submitter's memory cgroup, as the ioctl itself does: a kernel worker is
 * charged to no cgroup (memcg_kmem_bypass()) unless told whom to charge.
 */
static void ucmd_work(struct work_struct *work)
{
	struct odsm_ucmd *u = container_of(work, struct odsm_ucmd, work);
	struct mem_cgroup *memcg = get_mem_cgroup_from_mm(u->mm), *old;

	old = set_active_memcg(memcg);
	kthread_use_mm(u->mm);
	u->ret = odsm_dev_ioctl(u->ioucmd->file, u->op, u->arg);
	kthread_unuse_mm(u->mm);
	set_active_memcg(old);
	mem_cgroup_put(memcg);
	/* the worker is free again: before mmput(), so mm is still its key */
	mm_count_put(u->mm);
	mmput(u->mm);
	put_task_struct(u->task);
	io_uring_cmd_complete_in_task(u->ioucmd, ucmd_complete_tw);
}

/*
 * Is t's program going away?  t is a thread of it, maybe an io_uring one
 * (an io-wq worker, the SQPOLL thread), which comes and goes on its own:
 * only the whole program's end counts for those.  t's signal_struct lives
 * as long as t does.
 */
static bool submitter_gone(struct task_struct *t)
{
	const struct signal_struct *sig = t->signal;

	if ((READ_ONCE(sig->flags) & SIGNAL_GROUP_EXIT) ||
	    READ_ONCE(sig->group_exec_task))
		return true;
	return !(t->flags & PF_IO_WORKER) && (READ_ONCE(t->flags) & PF_EXITING);
}

/* odsm_abandoned() on a worker: is w a command whose program went? */
static bool ucmd_gone(struct work_struct *w)
{
	struct odsm_ucmd *u;

	if (!w || w->func != ucmd_work)
		return false;
	u = container_of(w, struct odsm_ucmd, work);
	if (!u->abandoned && submitter_gone(u->task)) {
		u->abandoned = true;
		odsm_stat_inc(ODSM_STAT_uring_abandoned);
	}
	return u->abandoned;
}

/* The command area: its fields, and for a 128-byte SQE the rest zero. */
static int read_area(struct io_uring_cmd *ioucmd, unsigned int issue_flags,
		     struct odsm_uring_cmd *c)
{
	const u8 *area = odsm_uring_cmd_area(ioucmd);

	/* one read of shared ring memory; the checks look at the copy */
	memcpy(c, area, sizeof(*c));
	if (c->flags || c->reserved || !c->arg)
		return -EINVAL;
	/* a 128-byte SQE's area is 80 bytes: the rest is reserved */
	if ((issue_flags & IO_URING_F_SQE128) &&
	    memchr_inv(area + sizeof(*c), 0, 80 - sizeof(*c)))
		return -EINVAL;
	return 0;
}

int odsm_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	struct odsm_uring_cmd c;
	struct odsm_ucmd *u;
	int ret;

	ret = -ENOTTY;
	if (!async_op(ioucmd->cmd_op))
		goto refused;
	ret = read_area(ioucmd, issue_flags, &c);
	if (ret)
		goto refused;
	/* charged to the submitter's memory cgroup, as its ring is */
	u = kzalloc(sizeof(*u), GFP_KERNEL_ACCOUNT);
	if (!u)
		return -ENOMEM;
	/* the submitter, an io-wq worker or SQPOLL thread: all have its mm */
	ret = -EFAULT;
	if (!current->mm || !mmget_not_zero(current->mm))
		goto err_free;
	BUILD_BUG_ON(WQ_UNBOUND_MAX_ACTIVE / 2 < ODSM_URING_INFLIGHT_MAX);
	ret = mm_count_get(current->mm);
	if (ret) {
		mmput(current->mm);
		goto err_free;
	}
	u->mm = current->mm;
	u->task = get_task_struct(current);
	u->ioucmd = ioucmd;
	u->op = ioucmd->cmd_op;
	u->arg = (unsigned long)c.arg;
	INIT_WORK(&u->work, ucmd_work);
	*ucmd_slot(ioucmd) = u;
	odsm_stat_inc(ODSM_STAT_uring_cmds);
	queue_work(odsm_uring_wq, &u->work);
	return -EIOCBQUEUED;

err_free:
	kfree(u);
refused:
	odsm_stat_inc(ODSM_STAT_uring_refused);
	return ret;
}

int odsm_uring_init(void)
{
	/*
	 * Unbound, and as many active as a workqueue may have: each command
	 * in flight is a worker waiting on a peer, and a queue short of
	 * workers would put the round trips back in series.
	 */
	odsm_uring_wq = alloc_workqueue("odsm_uring", WQ_UNBOUND,
					WQ_UNBOUND_MAX_ACTIVE);
	if (!odsm_uring_wq)
		return -ENOMEM;
	odsm_abandon_register(ucmd_gone);
	return 0;
}

/* Only with no file open: no command is in flight. */
void odsm_uring_exit(void)
{
	odsm_abandon_register(NULL);
	destroy_workqueue(odsm_uring_wq);
	xa_destroy(&ucmd_mms);
}
