// SPDX-License-Identifier: GPL-2.0
/*
 * What registers with the core: transports, the handlers of message types
 * and the peer-event callbacks of services (odsm_core.h, odsm_cluster.h).
 * It calls nothing of the core's: the rest of the core looks things up
 * here.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/list.h>
#include <linux/mutex.h>
#include "odsm.h"
#include "odsm_cluster.h"
#include "odsm_core_pri.h"

/*
 * Transports, message handlers and peer-event callbacks register at module
 * load and unload, while no cluster is joined (odsm_core.h): the lists and
 * the table are written under reg_lock and read without it by what a join
 * starts.
 */
static DEFINE_MUTEX(reg_lock);
static LIST_HEAD(transports);
static LIST_HEAD(peer_events);
static const struct odsm_msg_handler *handlers[256];

const struct odsm_msg_handler *odsm_handler_of(u8 type)
{
	return READ_ONCE(handlers[type]);
}

void odsm_transport_register(struct odsm_transport_ops *t)
{
	mutex_lock(&reg_lock);
	list_add_tail(&t->list, &transports);
	mutex_unlock(&reg_lock);
}

void odsm_transport_unregister(struct odsm_transport_ops *t)
{
	mutex_lock(&reg_lock);
	list_del(&t->list);
	mutex_unlock(&reg_lock);
}

const struct odsm_transport_ops *odsm_transport_find(u32 id)
{
	const struct odsm_transport_ops *t, *found = NULL;

	mutex_lock(&reg_lock);
	list_for_each_entry(t, &transports, list)
		if (t->id == id)
			found = t;
	mutex_unlock(&reg_lock);
	return found;
}

int odsm_handler_register(const struct odsm_msg_handler *mh)
{
	int ret = 0;

	/* a request is served and answered, a one-way message received */
	if (!mh->type || !mh->serve == !mh->rx || !mh->serve != !mh->reply)
		return -EINVAL;
	mutex_lock(&reg_lock);
	if (handlers[mh->type])
		ret = -EBUSY;
	else
		WRITE_ONCE(handlers[mh->type], mh);
	mutex_unlock(&reg_lock);
	return ret;
}

void odsm_handler_unregister(const struct odsm_msg_handler *mh)
{
	mutex_lock(&reg_lock);
	if (handlers[mh->type] == mh)
		WRITE_ONCE(handlers[mh->type], NULL);
	mutex_unlock(&reg_lock);
}

void odsm_peer_events_register(struct odsm_peer_events *ev)
{
	mutex_lock(&reg_lock);
	list_add_tail(&ev->list, &peer_events);
	mutex_unlock(&reg_lock);
}

void odsm_peer_events_unregister(struct odsm_peer_events *ev)
{
	mutex_lock(&reg_lock);
	list_del(&ev->list);
	mutex_unlock(&reg_lock);
}

void odsm_peer_event_up(struct odsm_conn *conn, u32 node)
{
	struct odsm_peer_events *ev;

	list_for_each_entry(ev, &peer_events, list)
		if (ev->up)
			ev->up(conn, node);
}

void odsm_peer_event_restarted(u32 node)
{
	struct odsm_peer_events *ev;

	list_for_each_entry(ev, &peer_events, list)
		if (ev->restarted)
			ev->restarted(node);
}

void odsm_peer_event_down(u32 node)
{
	struct odsm_peer_events *ev;

	list_for_each_entry(ev, &peer_events, list)
		if (ev->down)
			ev->down(node);
}
