// SPDX-License-Identifier: GPL-2.0
/* Per-CPU latency histograms; see odsm_lat.h. */
#include <linux/cpumask.h>
#include <linux/kobject.h>
#include <linux/kstrtox.h>
#include <linux/sysfs.h>
#include <linux/string.h>
#include "odsm_lat.h"

DEFINE_PER_CPU(struct odsm_pcpu_lat, odsm_lat);

const char * const odsm_lat_names[ODSM_LAT_NR] = {
	[ODSM_LAT_borrow_miss] = "borrow_miss",
	[ODSM_LAT_fetch] = "fetch",
	[ODSM_LAT_move] = "move",
	[ODSM_LAT_remote_read] = "remote_read",
	[ODSM_LAT_remote_write] = "remote_write",
	[ODSM_LAT_atomic] = "atomic",
	[ODSM_LAT_rpc] = "rpc",
	[ODSM_LAT_lazy_fault] = "lazy_fault",
};

void odsm_lat_read(enum odsm_lat k, u64 sum[ODSM_HIST_BUCKETS])
{
	unsigned int b;
	int cpu;

	memset(sum, 0, ODSM_HIST_BUCKETS * sizeof(*sum));
	for_each_possible_cpu(cpu) {
		const struct odsm_pcpu_lat *l = per_cpu_ptr(&odsm_lat, cpu);

		for (b = 0; b < ODSM_HIST_BUCKETS; b++)
			sum[b] += READ_ONCE(l->count[k][b]);
	}
}

/*
 * Zeroes every histogram.  Not atomic against recorders running on other
 * CPUs: an operation that ends during the reset may be counted or not.
 * That is the price of a hot path without a lock, and a reset is for a
 * person starting a measurement, not for the protocol.
 */
void odsm_lat_reset(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct odsm_pcpu_lat *l = per_cpu_ptr(&odsm_lat, cpu);
		unsigned int k, b;

		for (k = 0; k < ODSM_LAT_NR; k++)
			for (b = 0; b < ODSM_HIST_BUCKETS; b++)
				WRITE_ONCE(l->count[k][b], 0);
	}
}

/* ---- /sys/kernel/odsm/latency/: one file per kind, and reset ------------ */

struct odsm_lat_attr {
	struct kobj_attribute kattr;
	enum odsm_lat kind;
};

static struct odsm_lat_attr lat_attrs[ODSM_LAT_NR];
static struct attribute *lat_attr_ptrs[ODSM_LAT_NR + 2];

/* every bucket, one line each: the least latency it holds (ns), its count */
static ssize_t lat_show(struct kobject *k, struct kobj_attribute *a,
			char *buf)
{
	struct odsm_lat_attr *la = container_of(a, struct odsm_lat_attr, kattr);
	u64 sum[ODSM_HIST_BUCKETS];
	unsigned int b;
	int len = 0;

	odsm_lat_read(la->kind, sum);
	for (b = 0; b < ODSM_HIST_BUCKETS; b++)
		len += sysfs_emit_at(buf, len, "%llu %llu\n",
				     odsm_hist_floor(b), sum[b]);
	return len;
}

static ssize_t reset_store(struct kobject *k, struct kobj_attribute *a,
			   const char *buf, size_t count)
{
	bool v;

	if (kstrtobool(buf, &v) || !v)
		return -EINVAL;
	odsm_lat_reset();
	return count;
}

static struct kobj_attribute reset_attr = __ATTR_WO(reset);

const struct attribute_group odsm_lat_group = {
	.name = "latency",
	.attrs = lat_attr_ptrs,
};

void odsm_lat_attrs_init(void)
{
	unsigned int i;

	for (i = 0; i < ODSM_LAT_NR; i++) {
		struct odsm_lat_attr *la = &lat_attrs[i];

		sysfs_attr_init(&la->kattr.attr);
		la->kattr.attr.name = odsm_lat_names[i];
		la->kattr.attr.mode = 0444;
		la->kattr.show = lat_show;
		la->kind = i;
		lat_attr_ptrs[i] = &la->kattr.attr;
	}
	lat_attr_ptrs[ODSM_LAT_NR] = &reset_attr.attr;
}
