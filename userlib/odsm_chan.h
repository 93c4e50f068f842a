/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm channels: bounded multi-producer channels that carry owner
 * boxes (fat pointers) from any node to the node that made the channel.
 *
 * A channel is an object in its receiver's partition, entrusted to the
 * receiver process's runtime (odsm_spawn_start): a send is an apply to
 * that trustee (the module carries it from another node), which queues
 * the box's colored address; the object's bytes never travel.  The
 * sender's box is empty afterwards, the receiver's box owns the object
 * (its first write moves the object to the receiver's node, as any
 * owner's does).  recv waits on a futex word of the channel object, in
 * this node's memory: no polling over the network.
 *
 * Every function returns 0 or a negative errno value:
 *   -EINVAL       a NULL handle or box, an empty box
 *   -EBADFD       the handle's object is not a channel (a wrong kind)
 *   -ESTALE       the channel was freed (or the handle is forged)
 *   -EAGAIN       try_send: full; try_recv: empty
 *   -EPIPE        closed (recv: closed and empty)
 *   -EREMOTE      recv on another node than the channel's
 *   -EHOSTDOWN    recv: a node that sent on the channel is down (*from
 *                 says which; reported once per node, after the boxes
 *                 it sent before; senders on nodes 0..63 only); send:
 *                 the receiver's node is down
 *   -ETIMEDOUT    recv: nothing within timeout_ms
 * Documentation/odsm/libodsm.rst ("Channels") has the rules.
 */
#ifndef ODSM_CHAN_H
#define ODSM_CHAN_H

#include <stdint.h>
#include "odsm_deleg.h"

#ifdef __cplusplus
extern "C" {
#endif

struct odsm_box;

#define ODSM_CHAN_CAP_MAX	4096

/* A channel: plain data, valid on every node (a trust handle). */
typedef struct odsm_chan {
	odsm_trust t;
} odsm_chan;

/* A channel of cap (1..ODSM_CHAN_CAP_MAX) boxes that this node receives. */
int odsm_chan_new(unsigned int cap, odsm_chan *c);
/*
 * Queue the object *b owns: *b becomes empty.  send waits while the
 * channel is full (backing off 1..16 ms between tries); try_send is
 * -EAGAIN then.  On an error *b keeps the object.
 */
int odsm_chan_send(const odsm_chan *c, struct odsm_box *b);
int odsm_chan_try_send(const odsm_chan *c, struct odsm_box *b);
/*
 * The next box, in send order per sender thread, into the empty *b;
 * *from (may be NULL) gets the sender's node.  recv waits up to
 * timeout_ms (< 0: for ever); try_recv never waits.
 */
int odsm_chan_recv(const odsm_chan *c, struct odsm_box *b,
		   unsigned int *from, int timeout_ms);
int odsm_chan_try_recv(const odsm_chan *c, struct odsm_box *b,
		       unsigned int *from);
/* No more sends (-EPIPE); what is queued is still received. */
int odsm_chan_close(const odsm_chan *c);
/* On the receiver's node: drop what is queued, free the channel. */
int odsm_chan_free(odsm_chan *c);

#ifdef __cplusplus
}
#endif

#endif /* ODSM_CHAN_H */
