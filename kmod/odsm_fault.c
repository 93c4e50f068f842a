// SPDX-License-Identifier: GPL-2.0
/*
 * Faults on the wire (the injector), the test holds of the ownership
 * protocol's windows, and the replay window that keeps a request that
 * arrives twice from being applied twice; see odsm_fault.h.
 *
 * The injector is off unless a fault_* probability is set: it is a test
 * tool (Documentation/odsm/admin-guide.rst, "Fault injection"), never on
 * by default.  It acts only on calls -- requests with a sequence number
 * and their replies, of the types in fault_types -- never on HELLO, PING,
 * PONG or KEYS: faults in the handshake and the heartbeat have tests of
 * their own (cluster_badmsg_test, cluster_down_test), and those messages
 * are sent from receivers, which must not sleep for a delay.  One-sided
 * RDMA operations are no messages and never see it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/moduleparam.h>
#include <linux/prandom.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>
#include <linux/wait.h>
#include "odsm.h"
#include "odsm_cluster.h"
#include "odsm_fault.h"

/* ---- the injector ---------------------------------------------------- */

/*
 * The types it may touch: services' requests and replies, READ..MAP_REPLY
 * and DELEG..AQP_REPLY (not KEYS, sent unasked from a receiver)
 */
#define FAULT_TYPES_ALL	(GENMASK(ODSM_MSG_MAP_REPLY, ODSM_MSG_READ) | \
			 GENMASK(ODSM_MSG_AQP_REPLY, ODSM_MSG_DELEG))
/* longest delay (ms): well below any timeout_ms a test would use */
#define FAULT_DELAY_MS_MAX	1000

static unsigned int fault_drop, fault_delay, fault_dup;	/* per mille */
static unsigned int fault_delay_ms = 20;
static unsigned int fault_types = FAULT_TYPES_ALL;
static u64 fault_seed = 1;

/* one stream of decisions, so that a seed replays them (in message order) */
static DEFINE_SPINLOCK(rnd_lock);
static struct rnd_state rnd;
static bool rnd_seeded;

static int set_per_mille(const char *val, const struct kernel_param *kp)
{
	int ret = param_set_uint_minmax(val, kp, 0, 1000);

	if (!ret && *(unsigned int *)kp->arg)
		pr_notice("fault injection on: %s=%u per mille (test use only)\n",
			  kp->name, *(unsigned int *)kp->arg);
	return ret;
}

static const struct kernel_param_ops per_mille_ops = {
	.set = set_per_mille,
	.get = param_get_uint,
};

static int set_delay_ms(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 0, FAULT_DELAY_MS_MAX);
}

static const struct kernel_param_ops delay_ms_ops = {
	.set = set_delay_ms,
	.get = param_get_uint,
};

static int set_types(const char *val, const struct kernel_param *kp)
{
	unsigned int v;
	int ret = kstrtouint(val, 0, &v);

	if (ret)
		return ret;
	if (v & ~FAULT_TYPES_ALL)
		return -EINVAL;
	WRITE_ONCE(fault_types, v);
	return 0;
}

static int get_types(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%#x\n", READ_ONCE(fault_types));
}

static const struct kernel_param_ops types_ops = {
	.set = set_types,
	.get = get_types,
};

static int set_seed(const char *val, const struct kernel_param *kp)
{
	u64 v;
	int ret = kstrtou64(val, 0, &v);

	if (ret)
		return ret;
	spin_lock(&rnd_lock);
	fault_seed = v;
	prandom_seed_state(&rnd, v);
	rnd_seeded = true;
	spin_unlock(&rnd_lock);
	return 0;
}

static int get_seed(char *buf, const struct kernel_param *kp)
{
	u64 v;

	spin_lock(&rnd_lock);
	v = fault_seed;
	spin_unlock(&rnd_lock);
	return sysfs_emit(buf, "%llu\n", v);
}

static const struct kernel_param_ops seed_ops = {
	.set = set_seed,
	.get = get_seed,
};

module_param_cb(fault_drop, &per_mille_ops, &fault_drop, 0644);
MODULE_PARM_DESC(fault_drop, "TESTS ONLY: drop this many calls' messages in 1000 (0)");
module_param_cb(fault_delay, &per_mille_ops, &fault_delay, 0644);
MODULE_PARM_DESC(fault_delay, "TESTS ONLY: delay this many in 1000 by up to fault_delay_ms (0)");
module_param_cb(fault_dup, &per_mille_ops, &fault_dup, 0644);
MODULE_PARM_DESC(fault_dup, "TESTS ONLY: send this many in 1000 twice (0)");
module_param_cb(fault_delay_ms, &delay_ms_ops, &fault_delay_ms, 0644);
MODULE_PARM_DESC(fault_delay_ms, "longest injected delay, ms (20, at most 1000)");
module_param_cb(fault_types, &types_ops, &fault_types, 0644);
MODULE_PARM_DESC(fault_types, "bit mask of the message types faults may hit (all calls: 0x7fbfff0)");
module_param_cb(fault_seed, &seed_ops, &fault_seed, 0644);
MODULE_PARM_DESC(fault_seed, "seed of the injector's decisions; writing it restarts them (1)");

static u32 roll(void)
{
	u32 v;

	spin_lock(&rnd_lock);
	if (!rnd_seeded) {
		prandom_seed_state(&rnd, fault_seed);
		rnd_seeded = true;
	}
	v = prandom_u32_state(&rnd);
	spin_unlock(&rnd_lock);
	return v;
}

static bool chance(unsigned int per_mille)
{
	return per_mille && roll() % 1000 < per_mille;
}

static void fault_sleep(void)
{
	unsigned int ms = READ_ONCE(fault_delay_ms);

	might_sleep();
	if (ms)
		msleep(1 + roll() % ms);
}

int odsm_fault_send(struct odsm_conn *conn, const struct odsm_wire_hdr *h,
		    const void *payload, u32 plen, const void *data, u32 dlen)
{
	unsigned int drop = READ_ONCE(fault_drop);
	unsigned int delay = READ_ONCE(fault_delay);
	unsigned int dup = READ_ONCE(fault_dup);
	void *copy = NULL;
	int ret;

	/* off (the default), or a message that is not a call's */
	if (likely(!(drop | delay | dup)) || !h->seq || h->type >= 32 ||
	    !(READ_ONCE(fault_types) & BIT(h->type)))
		return conn->ops->send(conn, h, payload, plen, data, dlen);

	if (chance(drop)) {
		/* lost on the wire: the caller times out (-ETIMEDOUT) */
		odsm_stat_inc(ODSM_STAT_fault_drops);
		return 0;
	}
	if (chance(delay)) {
		/* late: the caller's timeout runs from its send, so a delayed
		 * reply may also find its call gone (counted in bad_msgs)
		 */
		odsm_stat_inc(ODSM_STAT_fault_delays);
		fault_sleep();
	}
	/*
	 * The same message again, a little later: a replayed request must
	 * not be served twice (odsm_fault_rx_fresh), a second reply finds its
	 * call answered.  Sent from a copy taken now: a caller may receive
	 * its reply into the buffer its request came from (odsm_remote_alloc,
	 * atomic_rpc), and the reply can land before the copy goes out.
	 */
	if (chance(dup)) {
		copy = kvmalloc(plen + dlen ?: 1, GFP_KERNEL);
		if (copy && plen)
			memcpy(copy, payload, plen);
		if (copy && dlen)
			memcpy(copy + plen, data, dlen);
	}
	ret = conn->ops->send(conn, h, payload, plen, data, dlen);
	if (!ret && copy) {
		odsm_stat_inc(ODSM_STAT_fault_dups);
		fault_sleep();
		conn->ops->send(conn, h, copy, plen, copy + plen, dlen);
	}
	kvfree(copy);
	return ret;
}

/* ---- holds ----------------------------------------------------------- */

/*
 * Windows of the ownership protocol that a peer's restart (or a stray
 * touch) must be able to fall into, which it almost never does by itself:
 * the frees of moved originals go out from a work item right after the
 * move, a copy is indexed right after its last FETCH, and a lazy fault
 * sends its page's FETCH right after it checked the copy's home.  A test
 * sets a hold, restarts the home (or touches the copy's slot), clears the
 * hold, and sees what reaches the home's new incarnation or the copy
 * (cluster_homerestart_test, cluster_lazyrestart_test, cluster_lazy_test).
 * A cleared hold wakes the copies and lazy faults held; the queued frees
 * look again every few milliseconds on their own (odsm_borrow.c): the core
 * calls no service.
 */
static bool fault_hold_frees, fault_hold_copies, fault_hold_lazy;
static DECLARE_WAIT_QUEUE_HEAD(hold_wq);

static int set_hold(const char *val, const struct kernel_param *kp)
{
	int ret = param_set_bool(val, kp);

	if (ret)
		return ret;
	if (*(bool *)kp->arg)
		pr_notice("fault injection on: %s (test use only)\n", kp->name);
	else
		wake_up_all(&hold_wq);
	return 0;
}

static const struct kernel_param_ops hold_ops = {
	.set = set_hold,
	.get = param_get_bool,
};

module_param_cb(fault_hold_frees, &hold_ops, &fault_hold_frees, 0644);
MODULE_PARM_DESC(fault_hold_frees, "TESTS ONLY: keep the frees of moved originals queued while set (N)");
module_param_cb(fault_hold_copies, &hold_ops, &fault_hold_copies, 0644);
MODULE_PARM_DESC(fault_hold_copies, "TESTS ONLY: hold each fetched copy before it is cached while set (N)");
module_param_cb(fault_hold_lazy, &hold_ops, &fault_hold_lazy, 0644);
MODULE_PARM_DESC(fault_hold_lazy, "TESTS ONLY: hold each lazy page fetch before it is sent while set (N)");

bool odsm_fault_frees_held(void)
{
	return READ_ONCE(fault_hold_frees);
}

/* Sleep while *hold is set; a fatal signal ends the wait too. */
static void hold_while(const bool *hold)
{
	if (likely(!READ_ONCE(*hold)))
		return;
	odsm_stat_inc(ODSM_STAT_fault_holds);
	/* the caller then goes on as if never held */
	wait_event_killable(hold_wq, !READ_ONCE(*hold));
}

void odsm_fault_hold_copy(void)
{
	hold_while(&fault_hold_copies);
}

void odsm_fault_hold_lazy(void)
{
	hold_while(&fault_hold_lazy);
}

/*
 * A slow teardown (TESTS ONLY): the RDMA transport's teardown of a
 * connection sleeps this long once its QPs are drained, as one with
 * thousands of registrations to undo does under load.  An operation that
 * failed on that connection must not wait for it (cluster_down_test).
 * Bounded: the teardown runs in the cluster's tick.
 */
#define SLOW_TEARDOWN_MAX_MS	10000
static unsigned int fault_slow_teardown_ms;

static int set_slow_teardown(const char *val, const struct kernel_param *kp)
{
	unsigned int ms;
	int ret = kstrtouint(val, 0, &ms);

	if (ret)
		return ret;
	if (ms > SLOW_TEARDOWN_MAX_MS)
		return -ERANGE;
	if (ms)
		pr_notice("fault injection on: %s=%u (test use only)\n",
			  kp->name, ms);
	WRITE_ONCE(fault_slow_teardown_ms, ms);
	return 0;
}

static const struct kernel_param_ops slow_teardown_ops = {
	.set = set_slow_teardown,
	.get = param_get_uint,
};

module_param_cb(fault_slow_teardown_ms, &slow_teardown_ops,
		&fault_slow_teardown_ms, 0644);
MODULE_PARM_DESC(fault_slow_teardown_ms, "TESTS ONLY: an RDMA connection's teardown sleeps this long (ms, up to 10000) after draining its QPs (0)");

void odsm_fault_slow_teardown(void)
{
	unsigned int ms = READ_ONCE(fault_slow_teardown_ms);

	if (likely(!ms))
		return;
	odsm_stat_inc(ODSM_STAT_fault_holds);
	msleep(ms);
}

/* ---- the replay window ------------------------------------------------ */

/*
 * Sequence numbers come from one counter of the sender's module instance
 * (odsm_rpc), so the requests a node gets from one peer incarnation carry
 * distinct, increasing numbers -- with gaps (calls to other nodes) and
 * slightly out of order (threads race between taking a number and
 * sending).  As IPsec's anti-replay window does, remember the highest
 * number served and which of the RW_BITS below it were: a number seen
 * before, or too old to tell, is refused.  "Too old" needs RW_BITS calls
 * overtaking one in flight: the refused caller times out, which is what a
 * lost request costs anyway.  The windows are static (one per possible
 * node, 128 bytes each), so no peer can make this node allocate for them.
 */
#define RW_BITS		1024

struct replay_win {
	u64 inc;		/* the sender incarnation these are of */
	u64 top;		/* highest sequence number served, 0: none */
	DECLARE_BITMAP(seen, RW_BITS);	/* bit seq % RW_BITS */
};

static struct replay_win wins[ODSM_MAX_NODES];
static DEFINE_SPINLOCK(wins_lock);	/* every window; held briefly */

enum odsm_rx_age odsm_fault_rx_fresh(struct odsm_conn *conn,
				     const struct odsm_wire_hdr *h)
{
	enum odsm_rx_age age = ODSM_RX_FRESH;
	struct replay_win *w;
	u64 seq = h->seq, s;

	/* a one-way message (KEYS) is no call and has no number */
	if (!seq || h->src_node >= ODSM_MAX_NODES)
		return ODSM_RX_FRESH;
	w = &wins[h->src_node];
	spin_lock(&wins_lock);
	if (w->inc != conn->peer_inc || !w->top) {
		/* the peer's first request, or a new incarnation of it,
		 * whose numbers start over
		 */
		w->inc = conn->peer_inc;
		w->top = seq;
		bitmap_zero(w->seen, RW_BITS);
		__set_bit(seq % RW_BITS, w->seen);
	} else if (seq > w->top) {
		if (seq - w->top >= RW_BITS)
			bitmap_zero(w->seen, RW_BITS);
		else
			for (s = w->top + 1; s < seq; s++)
				__clear_bit(s % RW_BITS, w->seen);
		__set_bit(seq % RW_BITS, w->seen);
		w->top = seq;
	} else if (w->top - seq >= RW_BITS) {
		/*
		 * Too old to tell: the sender numbers its calls to every
		 * node from one counter, so a call that lost its CPU after
		 * taking its number falls out of the window behind 1024
		 * calls to any node and one later to us.  Answered, not
		 * served: a refusal is safe either way, a silent drop cost
		 * the caller the whole timeout.
		 */
		age = ODSM_RX_TOO_OLD;
	} else if (__test_and_set_bit(seq % RW_BITS, w->seen)) {
		age = ODSM_RX_SEEN;
	}
	spin_unlock(&wins_lock);
	if (age == ODSM_RX_SEEN)
		odsm_stat_inc(ODSM_STAT_dup_requests);
	return age;
}
