// SPDX-License-Identifier: GPL-2.0
/*
 * Waits on words of this node's partition: ODSM_IOC_WAIT sleeps until a
 * word no longer holds an expected value, ODSM_IOC_WAKE wakes its waiters.
 *
 * Why not futexes: FUTEX_WAIT keys a shared word by its page's page-cache
 * mapping, and the heap's pages are the module's own, with none, so it
 * fails with EFAULT on every heap word.  This is the same protocol done by
 * the module: a waiter queues itself in a bucket hashed from the word's
 * address, then reads the word, and sleeps only if it still holds the
 * expected value; a waker stores first, then calls ODSM_IOC_WAKE, which
 * looks at the bucket.  Either the waker sees the queued waiter, or the
 * waiter's read comes after the waker's store (the smp_mb() on both
 * sides), so no wakeup is lost.  A store by a CPU is invisible to the
 * kernel: a process that stores a word others wait on must call the wake.
 * The writes the module makes into the partition itself (a peer's WRITE
 * or ATOMIC, this node's WRITE and ATOMIC ioctls) wake the waiters of the
 * words they touch on their own.
 *
 * A word of a peer's partition is woken by its home: ODSM_IOC_WAKE sends
 * it a WAKE request, which it serves as its own ODSM_IOC_WAKE.  That is
 * how a store the home's CPU never saw (a one-sided RDMA WRITE or atomic,
 * which ODSM_IOC_WRITE may make over RDMA) wakes anyone: the writer wakes
 * after it stores, as with a CPU store.
 *
 * Memory is bounded: the table has a fixed number of buckets, and a
 * waiter lives on its own task's stack for the length of its wait.
 */
#include <linux/hash.h>
#include <linux/hrtimer.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>
#include "odsm.h"
#include "odsm_core.h"
#include "odsm_wait.h"

#define WAIT_HASH_BITS	8
#define WAIT_BUCKETS	BIT(WAIT_HASH_BITS)
/* a module write longer than this looks at every bucket instead */
#define WAIT_RANGE_WORDS	16
/* how late a timed wait may end: lets the timer share an interrupt */
#define WAIT_SLACK_NS	(10 * NSEC_PER_USEC)

struct wait_bucket {
	spinlock_t lock;		/* waiters, and each one's woken */
	struct list_head waiters;
} ____cacheline_aligned_in_smp;

/* one per waiting task, on its stack */
struct waiter {
	struct list_head node;		/* in its bucket, empty once woken */
	struct task_struct *task;
	u64 addr;
	u32 size;
	bool woken;			/* under the bucket's lock */
};

static struct wait_bucket wait_table[WAIT_BUCKETS];
/* waiters queued anywhere: lets the module's writes skip the table */
static atomic_t wait_nr = ATOMIC_INIT(0);

void odsm_wait_init(void)
{
	unsigned int i;

	for (i = 0; i < WAIT_BUCKETS; i++) {
		spin_lock_init(&wait_table[i].lock);
		INIT_LIST_HEAD(&wait_table[i].waiters);
	}
}

static struct wait_bucket *bucket_of(u64 addr)
{
	return &wait_table[hash_64(addr, WAIT_HASH_BITS)];
}

/*
 * Wake up to nr (0: all) waiters of b whose word overlaps [lo, hi), or
 * with exact, whose word starts at lo (ODSM_IOC_WAKE's key).  The
 * waiter cannot leave before it takes the bucket's lock, which we hold:
 * its struct and task stay valid here.
 */
static unsigned int wake_bucket(struct wait_bucket *b, u64 lo, u64 hi,
				bool exact, unsigned int nr)
{
	struct waiter *w, *t;
	unsigned int n = 0;

	spin_lock(&b->lock);
	list_for_each_entry_safe(w, t, &b->waiters, node) {
		if (exact ? w->addr != lo :
			    w->addr >= hi || w->addr + w->size <= lo)
			continue;
		list_del_init(&w->node);
		/* before the wakeup: the waiter checks it after it wakes */
		WRITE_ONCE(w->woken, true);
		wake_up_process(w->task);
		if (++n == nr)
			break;
	}
	spin_unlock(&b->lock);
	return n;
}

/* Anyone queued?  After the caller's store to the word. */
static bool wait_anyone(void)
{
	/* the store before the look: pairs with wait_word()'s queue, read */
	smp_mb();
	return atomic_read(&wait_nr) != 0;
}

void odsm_wait_wake_range(u64 addr, u64 len)
{
	unsigned int i, n = 0;
	u64 a;

	if (!len || !wait_anyone())
		return;
	if (len <= WAIT_RANGE_WORDS * 4) {
		/* every word start that can overlap: 8-byte words too */
		for (a = round_down(addr, 8); a < addr + len; a += 4)
			n += wake_bucket(bucket_of(a), addr, addr + len,
					 false, 0);
	} else {
		for (i = 0; i < WAIT_BUCKETS; i++)
			n += wake_bucket(&wait_table[i], addr, addr + len,
					 false, 0);
	}
	odsm_stat_add(ODSM_STAT_wait_write_woken, n);
}

/*
 * Sleep while the size-byte word at addr holds expect.  0 when woken,
 * -EAGAIN when it did not hold expect, -ETIMEDOUT, -EINTR (timed) or
 * -ERESTARTSYS (untimed: restarted whole, as FUTEX_WAIT without a
 * timeout is) on a signal (TASK_INTERRUPTIBLE: any; TASK_KILLABLE: a
 * fatal one), or the error of reading the word; -ECANCELED when *stop
 * (if not NULL) is true once queued: a waker that sets it, then wakes
 * the word, is never missed.
 */
static long wait_word(u64 addr, u32 size, u64 expect, u64 timeout_ns,
		      unsigned int state, const bool *stop)
{
	struct wait_bucket *b = bucket_of(addr);
	struct waiter w = { .task = current, .addr = addr, .size = size };
	ktime_t expires = 0;
	u64 val;
	long ret;

	atomic_inc(&wait_nr);
	spin_lock(&b->lock);
	list_add_tail(&w.node, &b->waiters);
	spin_unlock(&b->lock);
	/* queued before the read: pairs with wait_anyone() after a store */
	smp_mb();
	ret = odsm_store_load(&odsm_heap, addr, size, &val);
	if (!ret && val != expect)
		ret = -EAGAIN;
	if (!ret && stop && READ_ONCE(*stop))
		ret = -ECANCELED;
	if (ret)
		goto out;
	/* queued and the word checked: a wake from now on finds us */
	odsm_stat_inc(ODSM_STAT_wait_sleeps);
	if (timeout_ns)
		expires = ktime_add_safe(ktime_get(), ns_to_ktime(timeout_ns));
	for (;;) {
		set_current_state(state);
		if (READ_ONCE(w.woken))
			break;
		if (signal_pending_state(state, current)) {
			ret = timeout_ns ? -EINTR : -ERESTARTSYS;
			break;
		}
		if (!timeout_ns) {
			schedule();
		} else if (!schedule_hrtimeout_range(&expires, WAIT_SLACK_NS,
						     HRTIMER_MODE_ABS)) {
			ret = -ETIMEDOUT;
			break;
		}
	}
	__set_current_state(TASK_RUNNING);
out:
	spin_lock(&b->lock);
	/* a wakeup that raced the timeout or the signal is not lost */
	if (w.woken)
		ret = ret == -EAGAIN || ret == -ECANCELED ? ret : 0;
	else
		list_del(&w.node);
	spin_unlock(&b->lock);
	atomic_dec(&wait_nr);
	return ret;
}

long odsm_wait_word_killable(u64 addr, u32 size, u64 expect, u64 timeout_ns,
			     const bool *stop)
{
	return wait_word(addr, size, expect, timeout_ns, TASK_KILLABLE, stop);
}

/* a word this node's waits may name: aligned, in our partition */
static bool word_ok(u64 addr, u32 size)
{
	return (size == 4 || size == 8) && !(addr % size) &&
	       odsm_range_is_local(&odsm_heap.geom, addr, size);
}

long odsm_ioc_wait(void __user *arg)
{
	struct odsm_wait wt;
	long ret;

	if (copy_from_user(&wt, arg, sizeof(wt)))
		return -EFAULT;
	odsm_stat_inc(ODSM_STAT_wait_calls);
	wt.gaddr = odsm_clear_color(wt.gaddr);
	if (wt.flags || wt.reserved[0] || wt.reserved[1] ||
	    !word_ok(wt.gaddr, wt.size) ||
	    (wt.size == 4 && wt.expect > U32_MAX)) {
		odsm_stat_inc(ODSM_STAT_wait_refused);
		return -EINVAL;
	}
	ret = wait_word(wt.gaddr, wt.size, wt.expect, wt.timeout_ns,
			TASK_INTERRUPTIBLE, NULL);
	switch (ret) {
	case 0:
		odsm_stat_inc(ODSM_STAT_wait_woken);
		break;
	case -EAGAIN:
		odsm_stat_inc(ODSM_STAT_wait_changed);
		break;
	case -ETIMEDOUT:
		odsm_stat_inc(ODSM_STAT_wait_timeouts);
		break;
	case -EINTR:
	case -ERESTARTSYS:
		odsm_stat_inc(ODSM_STAT_wait_interrupted);
		break;
	default:
		/* not in a block holding objects, or a copy's absent page */
		odsm_stat_inc(ODSM_STAT_wait_refused);
		ret = -EINVAL;
	}
	return ret;
}

/* Wake up to nr waiters of the word at addr of our partition. */
static unsigned int wake_word(u64 addr, u32 nr)
{
	unsigned int n = 0;

	/* only waiters on exactly this word: the key is its address */
	if (wait_anyone())
		n = wake_bucket(bucket_of(addr), addr, 0, true, nr);
	odsm_stat_add(ODSM_STAT_wake_woken, n);
	return n;
}

/* A peer's WAKE of a word of our partition. */
static int serve_wake(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		      const u8 *payload, u8 *reply, u32 *rlen,
		      const void **data, u32 *dlen)
{
	struct odsm_wire_wake_reply r = { 0 };
	struct odsm_wire_wake w;

	*rlen = 0;
	odsm_stat_inc(ODSM_STAT_wake_served);
	if (odsm_wire_get_wake(payload, h->len, &w)) {
		odsm_stat_inc(ODSM_STAT_wait_refused);
		return -EPROTO;
	}
	/* a word of another partition is none of ours to wake */
	if (!word_ok(w.gaddr, 4)) {
		odsm_stat_inc(ODSM_STAT_wait_refused);
		return -EINVAL;
	}
	r.woken = wake_word(w.gaddr, w.nr);
	*rlen = odsm_wire_put_wake_reply(reply, &r);
	return 0;
}

static const struct odsm_msg_handler wake_handler = {
	.type = ODSM_MSG_WAKE, .reply = ODSM_MSG_WAKE_REPLY,
	.serve = serve_wake,
};

/* Ask node, the home of the word at addr, to wake its waiters. */
static long wake_remote(u32 node, u64 addr, u32 nr)
{
	struct odsm_wire_wake w = { .gaddr = addr, .nr = nr };
	struct odsm_wire_wake_reply r;
	u8 p[ODSM_WIRE_WAKE_SIZE];	/* the request, then its reply */
	u32 n = odsm_wire_put_wake(p, &w), got = 0;
	int ret;

	odsm_stat_inc(ODSM_STAT_wake_sent);
	ret = odsm_rpc(node, ODSM_MSG_WAKE, p, n, NULL, 0, p, sizeof(p),
		       &got);
	if (!ret)
		ret = odsm_wire_get_wake_reply(p, got, &r);
	/* not "ret ? ret : r.woken": that is an unsigned int, and an error
	 * would be a long of about 4 billion, no error at all
	 */
	if (ret)
		return ret;
	return r.woken;
}

long odsm_ioc_wake(void __user *arg)
{
	struct odsm_wake wk;
	bool local;
	int node;

	if (copy_from_user(&wk, arg, sizeof(wk)))
		return -EFAULT;
	odsm_stat_inc(ODSM_STAT_wake_calls);
	wk.gaddr = odsm_clear_color(wk.gaddr);
	node = -EINVAL;
	if (!wk.flags && !wk.reserved[0] && !wk.reserved[1] &&
	    !(wk.gaddr % 4) && wk.nr <= INT_MAX)
		node = odsm_home_of(wk.gaddr, 4, &local);
	if (node < 0) {
		odsm_stat_inc(ODSM_STAT_wait_refused);
		return -EINVAL;
	}
	if (!local)
		return wake_remote(node, wk.gaddr, wk.nr);
	return wake_word(wk.gaddr, wk.nr);
}

int odsm_wait_register(void)
{
	return odsm_handler_register(&wake_handler);
}

void odsm_wait_unregister(void)
{
	odsm_handler_unregister(&wake_handler);
}
