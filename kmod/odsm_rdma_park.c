// SPDX-License-Identifier: GPL-2.0
/*
 * The RDMA transport's parked CM ids: a connection's last words to the
 * connection manager wait until its peer can be routed to again.
 *
 * Disconnecting an RDMA CM id, or destroying one the CM is connecting or
 * has connected, makes the CM send a MAD (a DREQ, DREP or REJ) on the
 * device's QP1.  Soft-RoCE looks the route to the peer up for every
 * packet it builds, and one built with no route (this node's link is
 * down: its connected route went with it) completes in error and moves
 * the QP that sent it to the error state -- QP1 included, which the MAD
 * layer never brings back.  From then on the CM of that device sends
 * nothing: no connection to or from this node is ever made again on it,
 * by this module or any other, until the device is removed (issue 12: a
 * link that goes down and up for less than the cluster timeout broke the
 * connection, which is expected, and every later dial, which is not).  A
 * real HCA just cannot deliver such a MAD, which the CM then times out.
 *
 * So the transport never hands the CM a message for a peer it has no
 * route to: disc_work skips rdma_disconnect then, and the teardown of a
 * connection whose id may make the CM talk (cm_started) keeps the id,
 * parked, when it finds no route, instead of destroying it.  The id is
 * destroyed once its connection is released (the CM handler may look at
 * the connection's struct until then, so the struct goes with the id) and
 * either a route is back (polled every PARK_POLL_MS), or its device is
 * going away (the CM waits for every id on it), or the module unloads.
 * A parked id holds no verbs resources: its QP, CQ, PD and buffers went
 * with the teardown.  Counted in rdma_ids_parked.
 *
 * The check is the one Soft-RoCE makes (rxe_find_route4): an IPv4 route
 * from the id's source to its destination through the id's net device.
 * A link that goes down between the check and the CM's send still loses
 * QP1, as does a retransmitted REQ of a dial under way when the link
 * goes: narrow windows that a ULP cannot close.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/workqueue.h>
#include <net/route.h>
#include "odsm_rdma.h"

#define PARK_POLL_MS	100

/* park_lock guards every connection's park state and the parked list */
static DEFINE_MUTEX(park_lock);
static LIST_HEAD(parked);		/* released connections with an id */
static void park_work_fn(struct work_struct *w);
static DECLARE_DELAYED_WORK(park_work, park_work_fn);

/* May the CM of the device send to x's peer: is there a route there? */
static bool routed(const struct odsm_rdma_park *pk)
{
	struct flowi4 fl = {
		.flowi4_oif = pk->ifindex,
		.flowi4_proto = IPPROTO_UDP,
		.saddr = pk->src,
		.daddr = pk->dst,
	};
	struct rtable *rt = ip_route_output_key(&init_net, &fl);

	if (IS_ERR(rt))
		return false;
	ip_rt_put(rt);
	return true;
}

/* Where id sends: its addresses and net device, for routed(). */
static void park_where(struct odsm_rdma_park *pk, struct rdma_cm_id *id)
{
	const struct sockaddr_in *s = (void *)&id->route.addr.src_addr;
	const struct sockaddr_in *d = (void *)&id->route.addr.dst_addr;

	pk->src = s->sin_family == AF_INET ? s->sin_addr.s_addr : 0;
	pk->dst = d->sin_family == AF_INET ? d->sin_addr.s_addr : 0;
	pk->ifindex = id->route.addr.dev_addr.bound_dev_if;
}

/* Under x->res_sem: may x's CM id send to its peer now? */
bool odsm_rdma_routed(struct odsm_rdma_conn *x)
{
	struct odsm_rdma_park pk;

	if (!x->id)
		return false;
	park_where(&pk, x->id);
	return routed(&pk);
}

/*
 * The teardown has taken id out of x: park it (true) if the CM could
 * send for it and x's peer has no route now, unless its device is going.
 */
bool odsm_rdma_park_id(struct odsm_rdma_conn *x, struct rdma_cm_id *id)
{
	bool park = false;

	mutex_lock(&park_lock);
	if (x->park.cm_started && !x->park.dev_gone) {
		park_where(&x->park, id);
		park = !routed(&x->park);
	}
	if (park)
		x->park.id = id;
	mutex_unlock(&park_lock);
	if (park) {
		odsm_stat_inc(ODSM_STAT_rdma_ids_parked);
		pr_notice_ratelimited("rdma: no route to %pI4: its connection's CM id waits for one\n",
				      &x->park.dst);
	}
	return park;
}

/* x's device is going away: its id cannot wait for a route any more. */
void odsm_rdma_park_dev_gone(struct odsm_rdma_conn *x)
{
	mutex_lock(&park_lock);
	x->park.dev_gone = true;
	if (x->park.listed)
		mod_delayed_work(system_wq, &park_work, 0);
	mutex_unlock(&park_lock);
}

/*
 * x is released: false when it holds no parked id (the caller frees it),
 * else it is the parked list's now, freed with its id.
 */
bool odsm_rdma_park_release(struct odsm_rdma_conn *x)
{
	mutex_lock(&park_lock);
	if (!x->park.id) {
		mutex_unlock(&park_lock);
		return false;
	}
	x->park.listed = true;
	list_add_tail(&x->park.node, &parked);
	mod_delayed_work(system_wq, &park_work, 0);
	mutex_unlock(&park_lock);
	return true;
}

/* Destroy the parked ids that may go (all of them with all). */
static void park_reap(bool all)
{
	struct odsm_rdma_conn *x, *tmp;
	LIST_HEAD(go);
	bool more;

	mutex_lock(&park_lock);
	list_for_each_entry_safe(x, tmp, &parked, park.node)
		if (all || x->park.dev_gone || routed(&x->park))
			list_move_tail(&x->park.node, &go);
	more = !list_empty(&parked);
	if (more && !all)
		mod_delayed_work(system_wq, &park_work,
				 msecs_to_jiffies(PARK_POLL_MS));
	mutex_unlock(&park_lock);

	/* outside park_lock: the CM handler may wait for it meanwhile */
	list_for_each_entry_safe(x, tmp, &go, park.node) {
		list_del(&x->park.node);
		rdma_destroy_id(x->park.id);
		kfree(x);
	}
}

static void park_work_fn(struct work_struct *w)
{
	park_reap(false);
}

/* At unload: every parked id goes, routed or not. */
void odsm_rdma_park_flush(void)
{
	cancel_delayed_work_sync(&park_work);
	park_reap(true);
}
