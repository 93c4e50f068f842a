// SPDX-License-Identifier: GPL-2.0
/*
 * odsmctl stats / top / latency: grouping and formatting (odsm_statfmt.h).
 *
 * The table below places every counter of kmod/odsm_stats.c and every
 * gauge of /sys/kernel/odsm/stats/ in one group.  statfmt_test checks that
 * it knows every name the ABI file documents, so a new counter must be
 * placed here; a name it does not know (a newer module) still shows, in
 * "other", and never vanishes.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "odsm_statfmt.h"

#define G(grp, fl)	.group = ODSM_SF_##grp, .flags = (fl)

static const struct {
	const char *name;
	unsigned int group, flags;
} table[] = {
	/* errors: refusals, drops, failures; any non-zero one is news */
	{ "alloc_einval", G(ERRORS, 0) },
	{ "alloc_enomem", G(ERRORS, 0) },
	{ "bad_frees", G(ERRORS, 0) },
	{ "bad_ioctls", G(ERRORS, 0) },
	{ "mmap_refused", G(ERRORS, 0) },
	{ "sigbus_remote", G(ERRORS, 0) },
	{ "sigbus_unbacked", G(ERRORS, 0) },
	{ "sigbus_lazy", G(ERRORS, 0) },
	{ "fault_enomem", G(ERRORS, 0) },
	{ "store_enomem", G(ERRORS, 0) },
	{ "config_refused", G(ERRORS, 0) },
	{ "stale_refused", G(ERRORS, 0) },
	{ "owner_refused", G(ERRORS, 0) },
	{ "bad_msgs", G(ERRORS, 0) },
	{ "rpc_timeouts", G(ERRORS, 0) },
	{ "rpc_hostdown", G(ERRORS, 0) },
	{ "peers_down", G(ERRORS, 0) },
	{ "auth_failures", G(ERRORS, 0) },
	{ "accept_refused", G(ERRORS, 0) },
	{ "accept_evicted", G(ERRORS, 0) },
	{ "handshake_timeouts", G(ERRORS, 0) },
	{ "requests_refused", G(ERRORS, 0) },
	{ "requests_expired", G(ERRORS, 0) },
	{ "calls_retried", G(ERRORS, 0) },
	{ "dup_requests", G(ERRORS, 0) },
	{ "move_free_errors", G(ERRORS, 0) },
	{ "move_frees_stale", G(ERRORS, 0) },
	{ "lazy_stale", G(ERRORS, 0) },
	{ "lazy_refused", G(ERRORS, 0) },
	{ "copy_writes_refused", G(ERRORS, 0) },
	{ "cache_stale_refused", G(ERRORS, 0) },
	{ "map_refused", G(ERRORS, 0) },
	{ "rdma_conn_refused", G(ERRORS, 0) },
	{ "rdma_loop_refused", G(ERRORS, 0) },
	{ "deleg_out_errors", G(ERRORS, 0) },
	{ "deleg_in_errors", G(ERRORS, 0) },
	{ "deleg_malformed", G(ERRORS, 0) },
	{ "uring_refused", G(ERRORS, 0) },
	{ "wait_refused", G(ERRORS, 0) },
	/* the allocator of this node's partition */
	{ "allocs", G(ALLOC, 0) },
	{ "alloc_bytes", G(ALLOC, ODSM_SF_BYTES) },
	{ "frees", G(ALLOC, 0) },
	{ "free_bytes", G(ALLOC, ODSM_SF_BYTES) },
	{ "moves", G(ALLOC, 0) },
	{ "objects_in_use", G(ALLOC, ODSM_SF_GAUGE) },
	{ "bytes_in_use", G(ALLOC, ODSM_SF_GAUGE | ODSM_SF_BYTES) },
	{ "free_blocks", G(ALLOC, ODSM_SF_GAUGE) },
	{ "slots_retired", G(ALLOC, ODSM_SF_GAUGE) },
	{ "blocks_retired", G(ALLOC, ODSM_SF_GAUGE) },
	/* mappings, faults and the pages behind them */
	{ "mmaps", G(FAULTS, 0) },
	{ "mappings", G(FAULTS, ODSM_SF_GAUGE) },
	{ "faults", G(FAULTS, 0) },
	{ "page_allocs", G(FAULTS, 0) },
	{ "page_frees", G(FAULTS, 0) },
	{ "pages_in_use", G(FAULTS, ODSM_SF_GAUGE | ODSM_SF_PAGES) },
	{ "lazy_faults", G(FAULTS, 0) },
	{ "lazy_pages", G(FAULTS, 0) },
	{ "lazy_onesided", G(FAULTS, 0) },
	{ "lazy_unlocked", G(FAULTS, 0) },
	{ "lazy_prefills", G(FAULTS, 0) },
	/* the node cache of remote objects and the ownership protocol */
	{ "borrow_hits", G(CACHE, 0) },
	{ "borrow_misses", G(CACHE, 0) },
	{ "prefetched", G(CACHE, 0) },
	{ "borrow_returns", G(CACHE, 0) },
	{ "mut_moves", G(CACHE, 0) },
	{ "mut_taken", G(CACHE, 0) },
	{ "writebacks", G(CACHE, 0) },
	{ "bytes_fetched", G(CACHE, ODSM_SF_BYTES) },
	{ "fetch_chunks_overlapped", G(CACHE, 0) },
	{ "prefetch_overlapped", G(CACHE, 0) },
	{ "cache_evictions", G(CACHE, 0) },
	{ "cache_shrunk", G(CACHE, 0) },
	{ "copies_dropped", G(CACHE, 0) },
	{ "kept_dropped", G(CACHE, 0) },
	{ "kept_blocks", G(CACHE, ODSM_SF_GAUGE) },
	{ "cache_entries", G(CACHE, ODSM_SF_GAUGE) },
	{ "cache_bytes", G(CACHE, ODSM_SF_GAUGE | ODSM_SF_BYTES) },
	{ "copies_in_use", G(CACHE, ODSM_SF_GAUGE) },
	/* messages and the remote primitives (and the test fault injector) */
	{ "msgs_tx", G(CLUSTER, 0) },
	{ "tcp_send_waits", G(CLUSTER, 0) },
	{ "msgs_rx", G(CLUSTER, 0) },
	{ "served", G(CLUSTER, 0) },
	{ "remote_reads", G(CLUSTER, 0) },
	{ "remote_writes", G(CLUSTER, 0) },
	{ "remote_atomics", G(CLUSTER, 0) },
	{ "remote_allocs", G(CLUSTER, 0) },
	{ "remote_frees", G(CLUSTER, 0) },
	{ "uring_cmds", G(CLUSTER, 0) },
	{ "uring_done", G(CLUSTER, 0) },
	{ "uring_abandoned", G(CLUSTER, 0) },
	{ "fault_drops", G(CLUSTER, 0) },
	{ "fault_delays", G(CLUSTER, 0) },
	{ "fault_dups", G(CLUSTER, 0) },
	{ "fault_holds", G(CLUSTER, 0) },
	/* one-sided RDMA and its keys */
	{ "onesided_reads", G(ONESIDED, 0) },
	{ "onesided_writes", G(ONESIDED, 0) },
	{ "onesided_bytes", G(ONESIDED, ODSM_SF_BYTES) },
	{ "onesided_atomics", G(ONESIDED, 0) },
	{ "onesided_spills", G(ONESIDED, 0) },
	{ "onesided_overlaps", G(ONESIDED, 0) },
	{ "onesided_copies", G(ONESIDED, 0) },
	{ "onesided_copy_refused", G(ONESIDED, 0) },
	{ "onesided_copy_known", G(ONESIDED, 0) },
	{ "onesided_run_copies", G(ONESIDED, 0) },
	{ "move_onesided", G(ONESIDED, 0) },
	{ "move_rest_onesided", G(ONESIDED, 0) },
	{ "onesided_fallbacks", G(ONESIDED, 0) },
	{ "loop_atomics", G(ONESIDED, 0) },
	{ "atomic_qps", G(ONESIDED, 0) },
	{ "atomics_unanswered", G(ONESIDED, 0) },
	{ "keys_sent", G(ONESIDED, 0) },
	{ "keys_received", G(ONESIDED, 0) },
	{ "keys_asked", G(ONESIDED, 0) },
	{ "keys_asks_dropped", G(ONESIDED, 0) },
	{ "map_requests", G(ONESIDED, 0) },
	{ "mr_registrations", G(ONESIDED, 0) },
	{ "rdma_ids_parked", G(ONESIDED, 0) },
	{ "rdma_port_kills", G(ONESIDED, 0) },
	/* delegation across nodes */
	{ "deleg_out_batches", G(DELEG, 0) },
	{ "deleg_out_requests", G(DELEG, 0) },
	{ "deleg_out_bytes", G(DELEG, ODSM_SF_BYTES) },
	{ "deleg_in_batches", G(DELEG, 0) },
	{ "deleg_lane_batches", G(DELEG, 0) },
	{ "deleg_lane_full", G(DELEG, 0) },
	{ "deleg_in_requests", G(DELEG, 0) },
	{ "deleg_in_bytes", G(DELEG, ODSM_SF_BYTES) },
	/* waits on heap words (ODSM_IOC_WAIT / WAKE), delegation's sleeps */
	{ "wait_calls", G(DELEG, 0) },
	{ "wait_sleeps", G(DELEG, 0) },
	{ "wait_woken", G(DELEG, 0) },
	{ "wait_changed", G(DELEG, 0) },
	{ "wait_timeouts", G(DELEG, 0) },
	{ "wait_interrupted", G(DELEG, 0) },
	{ "wake_calls", G(DELEG, 0) },
	{ "wake_woken", G(DELEG, 0) },
	{ "wake_sent", G(DELEG, 0) },
	{ "wake_served", G(DELEG, 0) },
	{ "wait_write_woken", G(DELEG, 0) },
	{ "served_in_rx", G(CLUSTER, 0) },
	{ "replies_in_cq", G(CLUSTER, 0) },
};

#define TABLE_LEN (sizeof(table) / sizeof(table[0]))

static const char *const group_key[ODSM_SF_NR_GROUPS] = {
	"errors", "allocator", "faults", "cache", "cluster", "onesided",
	"delegation", "other",
};

static const char *const group_title[ODSM_SF_NR_GROUPS] = {
	"errors (refused, dropped, failed)",
	"allocator (this node's partition)",
	"faults and pages",
	"cache and coherence (copies of remote objects, moves)",
	"cluster (messages, remote operations)",
	"one-sided RDMA",
	"delegation across nodes",
	"other (counters odsmctl does not know)",
};

const char *odsm_sf_group_key(unsigned int g)
{
	return g < ODSM_SF_NR_GROUPS ? group_key[g] : "other";
}

const char *odsm_sf_group_title(unsigned int g)
{
	return g < ODSM_SF_NR_GROUPS ? group_title[g] : group_title[ODSM_SF_OTHER];
}

void odsm_sf_classify(const char *name, unsigned int *group,
		      unsigned int *flags, unsigned int *order)
{
	size_t i;

	for (i = 0; i < TABLE_LEN; i++)
		if (!strcmp(table[i].name, name)) {
			*group = table[i].group;
			*flags = table[i].flags;
			*order = (unsigned int)i;
			return;
		}
	*group = ODSM_SF_OTHER;
	*flags = 0;
	*order = TABLE_LEN;	/* after the table's; then by name */
}

int odsm_sf_known(const char *name)
{
	unsigned int g, f, o;

	odsm_sf_classify(name, &g, &f, &o);
	return g != ODSM_SF_OTHER;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_display(const void *pa, const void *pb)
{
	const struct odsm_sf_stat *a = pa, *b = pb;

	if (a->group != b->group)
		return a->group < b->group ? -1 : 1;
	if (!a->v != !b->v)
		return a->v ? -1 : 1;
	if (a->order != b->order)
		return a->order < b->order ? -1 : 1;
	return strcmp(a->name, b->name);
}

void odsm_sf_snap_sort(struct odsm_sf_snap *snap)
{
	if (snap->n)
		qsort(snap->s, snap->n, sizeof(*snap->s), cmp_display);
}

/* one unsigned decimal (or 0x) number and nothing else but blanks */
static int read_ull(const char *path, unsigned long long *v)
{
	char buf[64], *end;
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	errno = 0;
	*v = strtoull(buf, &end, 0);
	if (errno || end == buf || buf[0] == '-')
		return -EINVAL;
	while (*end == '\n' || *end == ' ')
		end++;
	return *end ? -EINVAL : 0;
}

int odsm_sf_snap_read(const char *dir, struct odsm_sf_snap *snap)
{
	struct dirent **ents;
	int n, i, ret = 0;

	snap->s = NULL;
	snap->n = 0;
	n = scandir(dir, &ents, NULL, alphasort);
	if (n < 0)
		return -errno;
	snap->t = now_s();
	snap->s = calloc(n ? n : 1, sizeof(*snap->s));
	if (!snap->s) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		struct odsm_sf_stat *st = &snap->s[snap->n];
		char path[4096];

		if (ents[i]->d_name[0] == '.' ||
		    strlen(ents[i]->d_name) >= sizeof(st->name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		/* a file that is no number (none today) is not a counter */
		if (read_ull(path, &st->v))
			continue;
		strcpy(st->name, ents[i]->d_name);
		odsm_sf_classify(st->name, &st->group, &st->flags, &st->order);
		snap->n++;
	}
	odsm_sf_snap_sort(snap);
out:
	for (i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	return ret;
}

void odsm_sf_snap_free(struct odsm_sf_snap *snap)
{
	free(snap->s);
	snap->s = NULL;
	snap->n = 0;
}

const struct odsm_sf_stat *odsm_sf_find(const struct odsm_sf_snap *snap,
					const char *name)
{
	size_t i;

	for (i = 0; i < snap->n; i++)
		if (!strcmp(snap->s[i].name, name))
			return &snap->s[i];
	return NULL;
}

/* 1536 -> "1.5 KiB" */
const char *odsm_sf_human_bytes(unsigned long long v, char *buf, size_t n)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double d = (double)v;
	int u = 0;

	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%llu B", v);
	else
		snprintf(buf, n, "%.1f %s", d, unit[u]);
	return buf;
}

const char *odsm_sf_human_ns(double ns, char *buf, size_t n)
{
	if (ns < 1000)
		snprintf(buf, n, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, n, "%.1f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, n, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, n, "%.2f s", ns / 1e9);
	return buf;
}

static void print_value(FILE *f, const struct odsm_sf_stat *st,
			unsigned long long page_size)
{
	char buf[32];

	fprintf(f, "  %-20s %14llu", st->name, st->v);
	if (st->flags & ODSM_SF_BYTES)
		fprintf(f, "  (%s)", odsm_sf_human_bytes(st->v, buf, sizeof(buf)));
	else if ((st->flags & ODSM_SF_PAGES) && page_size)
		fprintf(f, "  (%s)", odsm_sf_human_bytes(st->v * page_size, buf,
							 sizeof(buf)));
	if (st->flags & ODSM_SF_GAUGE)
		fprintf(f, "  [now]");
	fputc('\n', f);
}

/* the zeros of a group on wrapped lines: they are read least */
static void print_zeros(FILE *f, const struct odsm_sf_stat *s, size_t n)
{
	size_t i, col = 0;

	for (i = 0; i < n; i++) {
		size_t len = strlen(s[i].name);

		if (!col) {
			fputs("  zero:", f);
			col = 7;
		} else if (col + len + 2 > 78) {
			fputs(",\n       ", f);
			col = 7;
		} else {
			fputc(',', f);
			col++;
		}
		fprintf(f, " %s", s[i].name);
		col += len + 1;
	}
	if (col)
		fputc('\n', f);
}

void odsm_sf_print_text(FILE *f, const struct odsm_sf_snap *snap,
			unsigned long long page_size)
{
	size_t i = 0, j, nz;
	unsigned int g;

	fprintf(f, "odsm counters (node-wide, since the module was loaded) and gauges ([now]):\n");
	for (g = 0; g < ODSM_SF_NR_GROUPS; g++) {
		size_t start = i;

		while (i < snap->n && snap->s[i].group == g)
			i++;
		if (i == start)
			continue;
		for (nz = start; nz < i && snap->s[nz].v; nz++)
			;
		fprintf(f, "\n%s", odsm_sf_group_title(g));
		if (g == ODSM_SF_ERRORS && nz == start)
			fprintf(f, ": none of %zu\n", i - start);
		else
			fprintf(f, ":\n");
		for (j = start; j < nz; j++)
			print_value(f, &snap->s[j], page_size);
		if (g != ODSM_SF_ERRORS || nz != start)
			print_zeros(f, &snap->s[nz], i - nz);
	}
}

void odsm_sf_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* JSON wants names in a stable order: by name inside each group */
static int cmp_json(const void *pa, const void *pb)
{
	const struct odsm_sf_stat *a = pa, *b = pb;

	if (a->group != b->group)
		return a->group < b->group ? -1 : 1;
	return strcmp(a->name, b->name);
}

void odsm_sf_print_json(FILE *f, const struct odsm_sf_snap *snap,
			long long node_id)
{
	struct odsm_sf_stat *s = NULL;
	size_t i = 0;
	unsigned int g;

	if (snap->n) {
		s = malloc(snap->n * sizeof(*s));
		if (s) {
			memcpy(s, snap->s, snap->n * sizeof(*s));
			qsort(s, snap->n, sizeof(*s), cmp_json);
		}
	}
	if (node_id >= 0)
		fprintf(f, "{\n  \"node_id\": %lld,\n  \"groups\": {", node_id);
	else
		fprintf(f, "{\n  \"node_id\": null,\n  \"groups\": {");
	/* every group, empty or not: a monitoring system's keys stay put */
	for (g = 0; g < ODSM_SF_NR_GROUPS; g++) {
		int first = 1;

		fprintf(f, "%s\n    \"%s\": {", g ? "," : "", group_key[g]);
		for (; s && i < snap->n && s[i].group == g; i++) {
			fprintf(f, "%s\n      ", first ? "" : ",");
			odsm_sf_json_str(f, s[i].name);
			fprintf(f, ": %llu", s[i].v);
			first = 0;
		}
		fprintf(f, first ? "}" : "\n    }");
	}
	fprintf(f, "\n  }\n}\n");
	free(s);
}

double odsm_sf_rate(const struct odsm_sf_snap *prev,
		    const struct odsm_sf_stat *cur, double secs)
{
	const struct odsm_sf_stat *p;
	unsigned long long before = 0;

	if (cur->flags & ODSM_SF_GAUGE)
		return (double)cur->v;
	p = odsm_sf_find(prev, cur->name);
	if (p && p->v <= cur->v)
		before = p->v;
	if (secs <= 0)
		return 0;
	return (double)(cur->v - before) / secs;
}

void odsm_sf_print_rates(FILE *f, const struct odsm_sf_snap *prev,
			 const struct odsm_sf_snap *cur)
{
	double secs = cur->t - prev->t;
	unsigned int g, shown_group = ODSM_SF_NR_GROUPS;
	size_t i;
	int events = 0;
	char buf[32];

	fprintf(f, "per second over the last %.1f s (gauges: now)\n", secs);
	for (i = 0; i < cur->n; i++) {
		const struct odsm_sf_stat *st = &cur->s[i];
		double r = odsm_sf_rate(prev, st, secs);

		/* a gauge is shown only when it is busy: non-zero */
		if (r == 0)
			continue;
		g = st->group;
		if (g != shown_group) {
			fprintf(f, "%s:\n", odsm_sf_group_title(g));
			shown_group = g;
		}
		if (st->flags & ODSM_SF_GAUGE)
			fprintf(f, "  %-20s %14.0f  [now]", st->name, r);
		else
			fprintf(f, "  %-20s %14.1f/s", st->name, r);
		if ((st->flags & ODSM_SF_BYTES) && r >= 1024)
			fprintf(f, "  (%s%s)",
				odsm_sf_human_bytes((unsigned long long)r, buf,
						    sizeof(buf)),
				st->flags & ODSM_SF_GAUGE ? "" : "/s");
		fputc('\n', f);
		events |= !(st->flags & ODSM_SF_GAUGE);
	}
	if (!events)
		fprintf(f, "  (no events in this interval)\n");
}

/* ---- latency histograms ------------------------------------------------- */

int odsm_sf_hist_parse(const char *text, struct odsm_sf_hist *h)
{
	const char *p = text;

	h->nr = 0;
	h->total = 0;
	while (*p) {
		unsigned long long lo, c;
		char *end;

		if (*p == '\n') {
			p++;
			continue;
		}
		if (h->nr == ODSM_SF_HIST_MAX)
			return -EINVAL;
		errno = 0;
		lo = strtoull(p, &end, 10);
		if (errno || end == p || *end != ' ')
			return -EINVAL;
		p = end + 1;
		c = strtoull(p, &end, 10);
		if (errno || end == p || (*end && *end != '\n'))
			return -EINVAL;
		p = end;
		if (h->nr && lo <= h->lo[h->nr - 1])
			return -EINVAL;
		h->lo[h->nr] = lo;
		h->count[h->nr] = c;
		h->total += c;
		h->nr++;
	}
	return h->nr ? 0 : -EINVAL;
}

double odsm_sf_hist_pct(const struct odsm_sf_hist *h, double p)
{
	double rank, before = 0;
	unsigned int i;

	if (!h->total)
		return 0;
	rank = p * (double)h->total;
	for (i = 0; i < h->nr; i++) {
		double c = (double)h->count[i];

		if (!h->count[i] || before + c < rank) {
			before += c;
			continue;
		}
		if (i + 1 == h->nr)
			return (double)h->lo[i];
		return (double)h->lo[i] +
		       (double)(h->lo[i + 1] - h->lo[i]) * (rank - before) / c;
	}
	/* rounding: the last non-empty bucket */
	for (i = h->nr; i-- > 0;)
		if (h->count[i])
			return (double)(i + 1 < h->nr ? h->lo[i + 1] : h->lo[i]);
	return 0;
}

static int read_hist(const char *path, struct odsm_sf_hist *h)
{
	char text[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -errno;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	if (n == sizeof(text) - 1)
		return -EFBIG;
	text[n] = '\0';
	return odsm_sf_hist_parse(text, h);
}

int odsm_sf_hists_read(const char *dir, struct odsm_sf_hist **out)
{
	struct odsm_sf_hist *h;
	struct dirent **ents;
	int n, i, nr = 0;

	n = scandir(dir, &ents, NULL, alphasort);
	if (n < 0)
		return -errno;
	h = calloc(n ? n : 1, sizeof(*h));
	for (i = 0; i < n; i++) {
		char path[4096];

		if (h && ents[i]->d_name[0] != '.' &&
		    strlen(ents[i]->d_name) < sizeof(h->name)) {
			snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
			/* reset (write-only) and anything else no histogram */
			if (!read_hist(path, &h[nr])) {
				strcpy(h[nr].name, ents[i]->d_name);
				nr++;
			}
		}
		free(ents[i]);
	}
	free(ents);
	if (!h)
		return -ENOMEM;
	*out = h;
	return nr;
}

#define BAR_WIDTH 40

void odsm_sf_print_hists(FILE *f, const struct odsm_sf_hist *h, int n)
{
	char b1[32], b2[32], b3[32], lo[32], hi[32];
	int k;

	fprintf(f, "%-12s %10s %10s %10s %10s\n", "operation", "count", "p50",
		"p90", "p99");
	for (k = 0; k < n; k++) {
		if (!h[k].total) {
			fprintf(f, "%-12s %10llu %10s %10s %10s\n", h[k].name, 0ULL,
				"-", "-", "-");
			continue;
		}
		fprintf(f, "%-12s %10llu %10s %10s %10s\n", h[k].name, h[k].total,
			odsm_sf_human_ns(odsm_sf_hist_pct(&h[k], 0.50), b1, sizeof(b1)),
			odsm_sf_human_ns(odsm_sf_hist_pct(&h[k], 0.90), b2, sizeof(b2)),
			odsm_sf_human_ns(odsm_sf_hist_pct(&h[k], 0.99), b3, sizeof(b3)));
	}
	for (k = 0; k < n; k++) {
		unsigned long long max = 0;
		unsigned int i, first = h[k].nr, last = 0;

		if (!h[k].total)
			continue;
		for (i = 0; i < h[k].nr; i++) {
			if (!h[k].count[i])
				continue;
			if (first == h[k].nr)
				first = i;
			last = i;
			if (h[k].count[i] > max)
				max = h[k].count[i];
		}
		fprintf(f, "\n%s (%llu operations):\n", h[k].name, h[k].total);
		/* from the first non-empty bucket to the last, gaps shown */
		for (i = first; i <= last; i++) {
			int w = (int)((h[k].count[i] * BAR_WIDTH + max - 1) / max);

			odsm_sf_human_ns((double)h[k].lo[i], lo, sizeof(lo));
			if (i + 1 < h[k].nr)
				odsm_sf_human_ns((double)h[k].lo[i + 1], hi, sizeof(hi));
			else
				snprintf(hi, sizeof(hi), "...");
			fprintf(f, "  %9s - %-9s %10llu |%.*s\n", lo, hi,
				h[k].count[i], w,
				"########################################");
		}
	}
}

void odsm_sf_print_hists_json(FILE *f, const struct odsm_sf_hist *h, int n)
{
	int k;
	unsigned int i;

	fprintf(f, "{\n  \"latency\": {");
	for (k = 0; k < n; k++) {
		fprintf(f, "%s\n    ", k ? "," : "");
		odsm_sf_json_str(f, h[k].name);
		fprintf(f, ": {\"count\": %llu, \"p50_ns\": %.0f, \"p90_ns\": %.0f, \"p99_ns\": %.0f, \"buckets\": [",
			h[k].total, odsm_sf_hist_pct(&h[k], 0.50),
			odsm_sf_hist_pct(&h[k], 0.90), odsm_sf_hist_pct(&h[k], 0.99));
		for (i = 0; i < h[k].nr; i++)
			fprintf(f, "%s{\"ge_ns\": %llu, \"count\": %llu}",
				i ? ", " : "", h[k].lo[i], h[k].count[i]);
		fprintf(f, "]}");
	}
	fprintf(f, "%s}\n}\n", n ? "\n  " : "");
}
