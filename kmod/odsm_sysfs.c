// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/odsm/: the node's configuration (read-only files at the top)
 * and stats/, one file per counter or gauge, one value per file.
 * Documentation/ABI/testing/sysfs-kernel-odsm describes each file.
 */
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include "odsm.h"
#include "odsm_cache.h"
#include "odsm_lat.h"

static struct kobject *odsm_kobj;

/* ---- configuration -------------------------------------------------- */

enum geom_field { GEOM_NODE_ID, GEOM_NR_NODES, GEOM_BASE, GEOM_PART, GEOM_SIZE };

struct odsm_geom_attr {
	struct kobj_attribute kattr;
	enum geom_field field;
};

static ssize_t geom_show(struct kobject *k, struct kobj_attribute *a, char *buf)
{
	struct odsm_geom_attr *ga = container_of(a, struct odsm_geom_attr, kattr);
	const struct odsm_geom *g = &odsm_heap.geom;
	ssize_t n = -EINVAL;

	mutex_lock(&odsm_heap.lock);
	switch (ga->field) {
	case GEOM_NODE_ID:
		n = sysfs_emit(buf, "%u\n", g->node_id);
		break;
	case GEOM_NR_NODES:
		n = sysfs_emit(buf, "%u\n", g->nr_nodes);
		break;
	case GEOM_BASE:
		n = sysfs_emit(buf, "0x%llx\n", g->base);
		break;
	case GEOM_PART:
		n = sysfs_emit(buf, "%llu\n", g->part_size);
		break;
	case GEOM_SIZE:
		n = sysfs_emit(buf, "%llu\n", (u64)g->nr_nodes * g->part_size);
		break;
	}
	mutex_unlock(&odsm_heap.lock);
	return n;
}

static ssize_t abi_version_show(struct kobject *k, struct kobj_attribute *a,
				char *buf)
{
	return sysfs_emit(buf, "%d\n", ODSM_ABI_VERSION);
}

static struct kobj_attribute abi_version_attr = __ATTR_RO(abi_version);

/* ---- tunables of the cache (root may write) ------------------------------ */

static ssize_t cache_budget_bytes_show(struct kobject *k,
				       struct kobj_attribute *a, char *buf)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(odsm_cache_budget));
}

static ssize_t cache_budget_bytes_store(struct kobject *k,
					struct kobj_attribute *a,
					const char *buf, size_t n)
{
	u64 v;
	int ret = kstrtou64(buf, 0, &v);

	if (ret)
		return ret;
	WRITE_ONCE(odsm_cache_budget, v);
	odsm_cache_trim();	/* a lower budget takes effect now */
	return n;
}

static ssize_t lazy_threshold_show(struct kobject *k, struct kobj_attribute *a,
				   char *buf)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(odsm_lazy_threshold));
}

static ssize_t lazy_threshold_store(struct kobject *k, struct kobj_attribute *a,
				    const char *buf, size_t n)
{
	u64 v;
	int ret = kstrtou64(buf, 0, &v);

	if (ret)
		return ret;
	if (v < ODSM_LAZY_MIN)
		return -EINVAL;
	WRITE_ONCE(odsm_lazy_threshold, v);
	return n;
}

static ssize_t readahead_pages_show(struct kobject *k, struct kobj_attribute *a,
				    char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(odsm_readahead_pages));
}

static ssize_t readahead_pages_store(struct kobject *k,
				     struct kobj_attribute *a,
				     const char *buf, size_t n)
{
	u32 v;
	int ret = kstrtou32(buf, 0, &v);

	if (ret)
		return ret;
	if (!v || v > ODSM_READAHEAD_MAX)
		return -EINVAL;
	WRITE_ONCE(odsm_readahead_pages, v);
	return n;
}

static struct kobj_attribute cache_budget_bytes_attr =
	__ATTR_RW_MODE(cache_budget_bytes, 0644);
static struct kobj_attribute lazy_threshold_attr =
	__ATTR_RW_MODE(lazy_threshold, 0644);
static struct kobj_attribute readahead_pages_attr =
	__ATTR_RW_MODE(readahead_pages, 0644);

static struct odsm_geom_attr geom_attrs[] = {
	{ __ATTR(node_id, 0444, geom_show, NULL), GEOM_NODE_ID },
	{ __ATTR(nr_nodes, 0444, geom_show, NULL), GEOM_NR_NODES },
	{ __ATTR(heap_base, 0444, geom_show, NULL), GEOM_BASE },
	{ __ATTR(part_size, 0444, geom_show, NULL), GEOM_PART },
	{ __ATTR(heap_size, 0444, geom_show, NULL), GEOM_SIZE },
};

static struct attribute *config_attrs[] = {
	&abi_version_attr.attr,
	&geom_attrs[0].kattr.attr,
	&geom_attrs[1].kattr.attr,
	&geom_attrs[2].kattr.attr,
	&geom_attrs[3].kattr.attr,
	&geom_attrs[4].kattr.attr,
	&cache_budget_bytes_attr.attr,
	&lazy_threshold_attr.attr,
	&readahead_pages_attr.attr,
	NULL,
};

static const struct attribute_group config_group = {
	.attrs = config_attrs,
};

/* ---- stats/: event counters, then gauges of the current state ---------- */

enum gauge { G_PAGES, G_OBJECTS, G_BYTES, G_FREE_BLOCKS, G_SLOTS_RETIRED,
	     G_BLOCKS_RETIRED, G_MAPPINGS, G_CACHE_ENTRIES, G_CACHE_BYTES,
	     G_COPIES, G_KEPT_BLOCKS, G_NR };

static const char * const gauge_names[G_NR] = {
	[G_PAGES] = "pages_in_use",
	[G_OBJECTS] = "objects_in_use",
	[G_BYTES] = "bytes_in_use",
	[G_FREE_BLOCKS] = "free_blocks",
	[G_SLOTS_RETIRED] = "slots_retired",
	[G_BLOCKS_RETIRED] = "blocks_retired",
	[G_MAPPINGS] = "mappings",
	[G_CACHE_ENTRIES] = "cache_entries",
	[G_CACHE_BYTES] = "cache_bytes",
	[G_COPIES] = "copies_in_use",
	[G_KEPT_BLOCKS] = "kept_blocks",
};

static u64 gauge_read(enum gauge g)
{
	struct odsm_heap *h = &odsm_heap;
	u64 v = 0;

	/* the cache's own lock, never nested in heap->lock */
	if (g == G_CACHE_ENTRIES)
		return odsm_cache_entries();
	if (g == G_CACHE_BYTES)
		return odsm_cache_bytes();
	if (g == G_COPIES)
		return odsm_cache_copies();
	mutex_lock(&h->lock);
	switch (g) {
	case G_PAGES:
		v = atomic_long_read(&h->nr_pages);
		break;
	case G_OBJECTS:
		/* programs' objects: the cache's copies are counted apart */
		v = h->pa.objects - min(h->pa.objects, odsm_cache_copies());
		break;
	case G_BYTES:
		v = h->pa.bytes;
		break;
	case G_FREE_BLOCKS:
		v = h->pa.free_blocks;
		break;
	case G_SLOTS_RETIRED:
		v = h->pa.slots_retired;
		break;
	case G_BLOCKS_RETIRED:
		v = h->pa.blocks_retired;
		break;
	case G_MAPPINGS:
		v = atomic_read(&h->maps);
		break;
	case G_KEPT_BLOCKS:
		v = odsm_heap_kept_free(h);
		break;
	case G_CACHE_ENTRIES:
	case G_CACHE_BYTES:
	case G_COPIES:
	case G_NR:
		break;
	}
	mutex_unlock(&h->lock);
	return v;
}

/* One attribute per counter (index < ODSM_STAT_NR) or gauge (after them). */
struct odsm_stat_attr {
	struct kobj_attribute kattr;
	unsigned int idx;
};

#define NR_STAT_FILES	(ODSM_STAT_NR + G_NR)

static struct odsm_stat_attr stat_attrs[NR_STAT_FILES];
static struct attribute *stats_attrs[NR_STAT_FILES + 1];

static ssize_t stat_show(struct kobject *k, struct kobj_attribute *a,
			 char *buf)
{
	struct odsm_stat_attr *sa = container_of(a, struct odsm_stat_attr, kattr);
	u64 v;

	if (sa->idx < ODSM_STAT_NR)
		v = odsm_stat_read(sa->idx);
	else
		v = gauge_read(sa->idx - ODSM_STAT_NR);
	return sysfs_emit(buf, "%llu\n", v);
}

static const struct attribute_group stats_group = {
	.name = "stats",
	.attrs = stats_attrs,
};

static const struct attribute_group *odsm_groups[] = {
	&config_group,
	&stats_group,
	&odsm_lat_group,
	NULL,
};

static void stats_attrs_init(void)
{
	unsigned int i;

	for (i = 0; i < NR_STAT_FILES; i++) {
		struct odsm_stat_attr *sa = &stat_attrs[i];

		sysfs_attr_init(&sa->kattr.attr);
		sa->kattr.attr.name = i < ODSM_STAT_NR ? odsm_stat_names[i] :
				      gauge_names[i - ODSM_STAT_NR];
		sa->kattr.attr.mode = 0444;
		sa->kattr.show = stat_show;
		sa->idx = i;
		stats_attrs[i] = &sa->kattr.attr;
	}
}

int odsm_sysfs_init(void)
{
	int ret;

	stats_attrs_init();
	odsm_lat_attrs_init();
	odsm_kobj = kobject_create_and_add("odsm", kernel_kobj);
	if (!odsm_kobj)
		return -ENOMEM;
	ret = sysfs_create_groups(odsm_kobj, odsm_groups);
	if (ret)
		kobject_put(odsm_kobj);
	return ret;
}

void odsm_sysfs_exit(void)
{
	sysfs_remove_groups(odsm_kobj, odsm_groups);
	kobject_put(odsm_kobj);
}
