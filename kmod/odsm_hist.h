/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The bucket of a latency histogram: log2 of the latency in ns.  Bucket 0
 * holds [0, 2) ns, bucket b (1 .. ODSM_HIST_BUCKETS - 2) holds
 * [2^b, 2^(b+1)) ns, and the last one everything from 2^31 ns (2.1 s) on,
 * past any call's timeout.  Pure logic: the host test builds it too.
 */
#ifndef _ODSM_HIST_H
#define _ODSM_HIST_H

#include "odsm_portable.h"

#define ODSM_HIST_BUCKETS	32

static inline unsigned int odsm_hist_bucket(u64 ns)
{
	unsigned int b;

	if (ns < 2)
		return 0;
	b = 63 - __builtin_clzll(ns);	/* floor(log2(ns)), ns != 0 */
	return b < ODSM_HIST_BUCKETS - 1 ? b : ODSM_HIST_BUCKETS - 1;
}

/* the least latency bucket b holds, in ns */
static inline u64 odsm_hist_floor(unsigned int b)
{
	return b ? 1ULL << b : 0;
}

#endif /* _ODSM_HIST_H */
