/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Latency histograms of the operations that wait on a peer, one per kind,
 * in the log2 buckets of odsm_hist.h.  Each is per-CPU: recording is one
 * this_cpu_inc, no lock and no shared cache line on the hot path; a read
 * of /sys/kernel/odsm/latency/<kind> sums the CPUs.  odsm_lat_names[] holds
 * the file names, Documentation/ABI/testing/sysfs-kernel-odsm describes
 * them; keep the three in step.
 */
#ifndef _ODSM_LAT_H
#define _ODSM_LAT_H

#include <linux/ktime.h>
#include <linux/percpu.h>
#include "odsm_hist.h"

enum odsm_lat {
	ODSM_LAT_borrow_miss,	/* a shared borrow that copied the object */
	ODSM_LAT_fetch,		/* one FETCH round trip */
	ODSM_LAT_move,		/* a mutable borrow that moved the object */
	ODSM_LAT_remote_read,	/* READ of a peer's memory (any transport) */
	ODSM_LAT_remote_write,	/* WRITE of a peer's memory (any transport) */
	ODSM_LAT_atomic,	/* an atomic on a peer's word */
	ODSM_LAT_rpc,		/* any request's round trip, answered */
	ODSM_LAT_lazy_fault,	/* a lazy copy's pages fetched on a fault */
	ODSM_LAT_NR
};

extern const char * const odsm_lat_names[ODSM_LAT_NR];

struct odsm_pcpu_lat {
	u64 count[ODSM_LAT_NR][ODSM_HIST_BUCKETS];
};

DECLARE_PER_CPU(struct odsm_pcpu_lat, odsm_lat);

/* Records the time since start (a ktime_get_ns()) and returns it. */
static inline u64 odsm_lat_record(enum odsm_lat k, u64 start)
{
	u64 ns = ktime_get_ns() - start;

	this_cpu_inc(odsm_lat.count[k][odsm_hist_bucket(ns)]);
	return ns;
}

void odsm_lat_read(enum odsm_lat k, u64 sum[ODSM_HIST_BUCKETS]);
void odsm_lat_reset(void);

/* the latency/ group of /sys/kernel/odsm (odsm_sysfs.c adds it) */
extern const struct attribute_group odsm_lat_group;
void odsm_lat_attrs_init(void);

#endif /* _ODSM_LAT_H */
