// SPDX-License-Identifier: GPL-2.0
/*
 * Connections: the cluster's state, and the life of a connection as every
 * transport shares it (set up, published, killed, referenced, and the
 * header checks of what arrives on it).  The lowest file of the core: it
 * calls no other.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include "odsm.h"
#include "odsm_cluster.h"
#include "odsm_core_pri.h"
#include "odsm_trace.h"

struct odsm_cluster odsm_cluster = {
	.join_lock = __MUTEX_INITIALIZER(odsm_cluster.join_lock),
	.users = __RWSEM_INITIALIZER(odsm_cluster.users),
	.lock = __SPIN_LOCK_UNLOCKED(odsm_cluster.lock),
	.conns = LIST_HEAD_INIT(odsm_cluster.conns),
	.calls = XARRAY_INIT(odsm_cluster.calls, 0),
};

void odsm_conn_init(struct odsm_conn *conn, const struct odsm_transport_ops *ops,
		    void *xprt, u32 peer, bool dialled)
{
	kref_init(&conn->ref);		/* the conns list's reference */
	conn->ops = ops;
	conn->xprt = xprt;
	conn->peer = peer;
	conn->dialled = dialled;
	conn->born_ns = ktime_get_ns();
	get_random_bytes(conn->nonce, sizeof(conn->nonce));
	INIT_LIST_HEAD(&conn->node);
}

void odsm_conn_publish(struct odsm_conn *conn)
{
	struct odsm_cluster *c = &odsm_cluster;

	spin_lock(&c->lock);
	list_add(&conn->node, &c->conns);
	spin_unlock(&c->lock);
}

static void conn_release(struct kref *ref)
{
	struct odsm_conn *conn = container_of(ref, struct odsm_conn, ref);

	conn->ops->release(conn);
	kfree(conn);
}

void odsm_conn_put(struct odsm_conn *conn)
{
	kref_put(&conn->ref, conn_release);
}

/* Stop all traffic: the receiver ends and the tick reaps it. */
void odsm_conn_kill(struct odsm_conn *conn)
{
	WRITE_ONCE(conn->dead, true);
	conn->ops->kill(conn);
}

int odsm_cluster_check_hdr(struct odsm_conn *conn, const u8 *raw,
			   struct odsm_wire_hdr *h)
{
	struct odsm_cluster *c = &odsm_cluster;
	int ret = odsm_wire_get_hdr(raw, h, c->self, c->nr_nodes);

	/* a known peer speaks only for itself; before HELLO, nothing else */
	if (!ret && conn->peer != U32_MAX && h->src_node != conn->peer)
		ret = -EPROTO;
	/* before the handshake completed, only the handshake */
	if (!ret && !READ_ONCE(conn->authed) && h->type != ODSM_MSG_HELLO) {
		odsm_stat_inc(ODSM_STAT_auth_failures);
		trace_odsm_auth_fail(conn->peer, ODSM_AUTH_EARLY_MSG);
		pr_notice_ratelimited("message type %u before authentication on a connection %s node %d over %s: closed\n",
				      h->type, conn->dialled ? "to" : "from",
				      odsm_conn_peer_id(conn),
				      conn->ops->name);
		WRITE_ONCE(conn->dead, true);	/* counted once, here */
		return -EACCES;
	}
	if (ret && h->magic == ODSM_WIRE_MAGIC &&
	    h->version != ODSM_WIRE_VERSION) {
		odsm_stat_inc(ODSM_STAT_bad_msgs);
		pr_notice_ratelimited("a peer speaks wire protocol version %u, this node speaks %u: connection closed\n",
				      h->version, ODSM_WIRE_VERSION);
	} else if (ret) {
		odsm_stat_inc(ODSM_STAT_bad_msgs);
		pr_notice_ratelimited("malformed message header (%d) on a connection %s node %d over %s: closed\n",
				      ret, conn->dialled ? "to" : "from",
				      odsm_conn_peer_id(conn),
				      conn->ops->name);
	}
	/* the receiver closes it: counted once, here */
	if (ret)
		WRITE_ONCE(conn->dead, true);
	return ret;
}

const struct odsm_transport_ops *odsm_conn_ops(const struct odsm_conn *conn)
{
	return conn->ops;
}

bool odsm_conn_dead(const struct odsm_conn *conn)
{
	return READ_ONCE(conn->dead);
}

void odsm_conn_hold(struct odsm_conn *conn)
{
	kref_get(&conn->ref);
}

u32 odsm_cluster_self(void)
{
	return odsm_cluster.self;
}

u32 odsm_cluster_nr_nodes(void)
{
	return odsm_cluster.nr_nodes;
}

struct sockaddr_in odsm_cluster_addr(u32 node)
{
	return odsm_cluster.peers[node].addr;
}

u64 odsm_cluster_incarnation(void)
{
	return odsm_cluster.incarnation;
}

u32 odsm_cluster_timeout_ms(void)
{
	return odsm_cluster.timeout_ms;
}

bool odsm_cluster_leaving(void)
{
	return !READ_ONCE(odsm_cluster.joined);
}
