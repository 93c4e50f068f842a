/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Lanes of a delegation endpoint (odsm_deleg_lane.c): request/response
 * slot pairs in the runtime's arena that the module fills itself, so that
 * a batch from another node reaches its trustee without the runtime's
 * gateway thread (ODSM_DELEG_BIND_LANES, Documentation/odsm/delegation.rst).
 */
#ifndef _ODSM_DELEG_LANE_H
#define _ODSM_DELEG_LANE_H

#include <linux/types.h>

struct odsm_deleg_lanes;
struct deleg_lanes;

/*
 * Check a runtime's lanes (user input: all in the object that starts at
 * endpoint) and set them up: ERR_PTR or them.
 */
struct deleg_lanes *odsm_lanes_create(const struct odsm_deleg_lanes *u,
				      u32 slot_size, u64 endpoint);
void odsm_lanes_free(struct deleg_lanes *l);

/*
 * Take a free lane for the validated batch req (its trustee's), into
 * *lane: 0; or the batch goes to the gateway instead: -EAGAIN (it asks
 * for it, needs an argument brought from another node, or names no
 * trustee) or -EBUSY (every lane of its trustee is busy).
 */
int odsm_lanes_take(struct deleg_lanes *l, const u8 *req, u32 *lane);

/*
 * Publish req (req_len bytes) in lane, wake its trustee, and wait up to
 * wait_ms for the answer: 0 with the answer in resp (the caller's
 * slot_size bytes, zeroed) and *resp_len, or -ETIMEDOUT, -EINTR (a fatal
 * signal), -EOWNERDEAD (*dead became true, or the arena is gone), or
 * -EAGAIN: it could not be published (the arena's page, a
 * cached copy there), nothing of it ran, the gateway may take it.  The
 * lane is free again once answered (a lane whose waiter gave up is reused
 * only after its trustee answered).
 */
int odsm_lanes_run(struct deleg_lanes *l, u32 lane, const u8 *req,
		   u32 req_len, const bool *dead, u32 wait_ms, u8 *resp,
		   u32 *resp_len);

/*
 * *dead became true (the runtime's file closed): wait for the writes into
 * the arena in flight to end (none starts after), then wake every waiter
 * of a lane, to see it.  The arena is the runtime's again on return.
 */
void odsm_lanes_close(struct deleg_lanes *l);

#endif /* _ODSM_DELEG_LANE_H */
