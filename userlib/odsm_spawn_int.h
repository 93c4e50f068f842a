/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm remote execution and channels, inside: what odsm_spawn.c and
 * odsm_chan.c share.  Not installed.
 */
#ifndef ODSM_SPAWN_INT_H
#define ODSM_SPAWN_INT_H

#include "odsm.h"

/* odsm_chan.c: the channel's operations, registered by odsm_spawn_start */
int ch_register(void);

/* The node whose partition holds global address g (in the heap). */
static inline unsigned int sp_node_of(uint64_t g)
{
	return (unsigned int)((odsm_addr_of(g) - odsm_rt.info.heap_base) /
			      odsm_rt.info.part_size);
}

#endif /* ODSM_SPAWN_INT_H */
