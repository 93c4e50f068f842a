/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Inside the core: what its files (odsm_conn.c, odsm_core_reg.c,
 * odsm_call.c, odsm_cluster.c) give each other.  Calls go one way only:
 * membership (odsm_cluster.c) -> calls (odsm_call.c) -> connections
 * (odsm_conn.c) and the registry (odsm_core_reg.c), which call no other
 * file of the core.  Nothing outside the core includes this.
 */
#ifndef _ODSM_CORE_PRI_H
#define _ODSM_CORE_PRI_H

#include "odsm_cluster.h"

/* odsm_core_reg.c */
const struct odsm_transport_ops *odsm_transport_find(u32 id);
const struct odsm_msg_handler *odsm_handler_of(u8 type);
void odsm_peer_event_up(struct odsm_conn *conn, u32 node);
void odsm_peer_event_restarted(u32 node);
void odsm_peer_event_down(u32 node);

/* odsm_call.c */
int odsm_send_msg(struct odsm_cluster *c, struct odsm_conn *conn, u32 dst,
		  u8 type, u16 flags, u64 seq, s32 status, const void *payload,
		  u32 plen, const void *data, u32 dlen);
/* The connection to node (an up one, with up_only), referenced, or NULL. */
struct odsm_conn *odsm_peer_conn(struct odsm_cluster *c, u32 node,
				 bool up_only);
/* Fail every call waiting on node: its peer is gone. */
void odsm_fail_calls(struct odsm_cluster *c, u32 node, int err);
void odsm_on_reply(struct odsm_cluster *c, const struct odsm_wire_hdr *h,
		   const u8 *payload);
void odsm_serve_request(struct odsm_cluster *c, struct odsm_conn *conn,
			const struct odsm_wire_hdr *h, const u8 *payload,
			const struct odsm_msg_handler *mh);

#endif /* _ODSM_CORE_PRI_H */
