/* SPDX-License-Identifier: GPL-2.0 */
/*
 * odsmctl's view of /sys/kernel/odsm/stats/ and latency/: the counters in
 * groups by subsystem, errors and non-zero values first, as text or JSON;
 * rates per second between two snapshots (odsmctl top); the latency
 * histograms with percentiles.  Pure logic over a directory given by the
 * caller, so that the host test (selftests/host/statfmt_test.c) runs it on
 * a fake tree.
 */
#ifndef _ODSM_STATFMT_H
#define _ODSM_STATFMT_H

#include <stddef.h>
#include <stdio.h>

enum odsm_sf_group {
	ODSM_SF_ERRORS,
	ODSM_SF_ALLOC,
	ODSM_SF_FAULTS,
	ODSM_SF_CACHE,
	ODSM_SF_CLUSTER,
	ODSM_SF_ONESIDED,
	ODSM_SF_DELEG,
	ODSM_SF_OTHER,		/* what the table does not know (yet) */
	ODSM_SF_NR_GROUPS
};

#define ODSM_SF_GAUGE	0x1	/* the state now, not an event count */
#define ODSM_SF_BYTES	0x2	/* shown in KiB/MiB/... too */
#define ODSM_SF_PAGES	0x4	/* shown as bytes too (pages * page size) */

#define ODSM_SF_NAME_LEN 64

struct odsm_sf_stat {
	char name[ODSM_SF_NAME_LEN];
	unsigned long long v;
	unsigned int group, flags, order;
};

struct odsm_sf_snap {
	struct odsm_sf_stat *s;
	size_t n;
	double t;		/* CLOCK_MONOTONIC seconds at the read */
};

/* The group's key ("errors", "allocator", ...): JSON keys, stable. */
const char *odsm_sf_group_key(unsigned int g);
/* The group's title for a person. */
const char *odsm_sf_group_title(unsigned int g);
/* Group, flags and display order of a counter; unknown: ODSM_SF_OTHER. */
void odsm_sf_classify(const char *name, unsigned int *group,
		      unsigned int *flags, unsigned int *order);
/* 1 if the table knows the name. */
int odsm_sf_known(const char *name);

/*
 * Read every file of DIR (ROOT/stats) into SNAP, in display order: groups
 * in enum order, in each the non-zero values first, then the table's
 * order (unknown names: by name).  0 or -errno.
 */
int odsm_sf_snap_read(const char *dir, struct odsm_sf_snap *snap);
void odsm_sf_snap_sort(struct odsm_sf_snap *snap);
void odsm_sf_snap_free(struct odsm_sf_snap *snap);
/* the entry of NAME in SNAP, or NULL */
const struct odsm_sf_stat *odsm_sf_find(const struct odsm_sf_snap *snap,
					const char *name);

void odsm_sf_print_text(FILE *f, const struct odsm_sf_snap *snap,
			unsigned long long page_size);
/* {"node_id": N|null, "groups": {"errors": {"name": v, ...}, ...}} */
void odsm_sf_print_json(FILE *f, const struct odsm_sf_snap *snap,
			long long node_id);

/*
 * The rate of a counter per second from PREV to CUR, which must be of the
 * same module load: a counter that went backwards (the module was
 * reloaded in between) counts from 0.  Gauges: their value now.
 */
double odsm_sf_rate(const struct odsm_sf_snap *prev,
		    const struct odsm_sf_stat *cur, double secs);
/* odsmctl top's screen: counters whose rate is non-zero, by group */
void odsm_sf_print_rates(FILE *f, const struct odsm_sf_snap *prev,
			 const struct odsm_sf_snap *cur);

/* ---- latency histograms (ROOT/latency/NAME: "LEAST_NS COUNT" lines) ---- */
#define ODSM_SF_HIST_MAX 64

struct odsm_sf_hist {
	char name[ODSM_SF_NAME_LEN];
	unsigned int nr;	/* buckets */
	unsigned long long lo[ODSM_SF_HIST_MAX];	/* least ns of each */
	unsigned long long count[ODSM_SF_HIST_MAX];
	unsigned long long total;
};

/* Parse a histogram file's text; 0 or -EINVAL (not increasing, too long). */
int odsm_sf_hist_parse(const char *text, struct odsm_sf_hist *h);
/*
 * The latency under which a fraction P (0 < P <= 1) of the operations fell,
 * in ns, interpolated linearly inside the log2 bucket that holds it (the
 * last bucket has no upper bound: its least value); 0 when empty.
 */
double odsm_sf_hist_pct(const struct odsm_sf_hist *h, double p);
/* Read every histogram of DIR (ROOT/latency), by name; count or -errno. */
int odsm_sf_hists_read(const char *dir, struct odsm_sf_hist **out);
void odsm_sf_print_hists(FILE *f, const struct odsm_sf_hist *h, int n);
void odsm_sf_print_hists_json(FILE *f, const struct odsm_sf_hist *h, int n);

/* helpers shared with odsmctl's other commands */
const char *odsm_sf_human_bytes(unsigned long long v, char *buf, size_t n);
const char *odsm_sf_human_ns(double ns, char *buf, size_t n);
void odsm_sf_json_str(FILE *f, const char *s);

#endif /* _ODSM_STATFMT_H */
