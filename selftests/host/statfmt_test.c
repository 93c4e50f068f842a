// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of tools/odsmctl/odsm_statfmt.c (odsmctl stats, latency,
 * top) and of odsmctl itself on a fake /sys/kernel/odsm (ODSM_SYSFS):
 *
 *   every counter the ABI file documents, and every name of
 *   kmod/odsm_stats.c, has a group (none falls to "other"); a name the
 *   table does not know is shown in "other", never dropped; errors come
 *   first and, in each group, non-zero values before zeros; --json is
 *   valid JSON (our checker, and python3's when it is installed) with
 *   every group's key; --raw is name=value lines in name order as before;
 *   percentiles from known buckets; top's rates from two snapshots.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "odsm_statfmt.h"
#include "json_check.h"

#include "ksft_host.h"

/* a tree of /sys/kernel/odsm: ROOT/node_id, ROOT/stats/, ROOT/latency/ */
static char root[64];

static void put(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

static void put_stat(const char *name, unsigned long long v)
{
	char rel[128], text[32];

	snprintf(rel, sizeof(rel), "stats/%s", name);
	snprintf(text, sizeof(text), "%llu\n", v);
	put(rel, text);
}

/* a histogram of 32 log2 buckets as the module prints it */
static void put_hist(const char *name, const unsigned long long *count)
{
	char rel[128], text[1024];
	size_t off = 0;
	int b;

	for (b = 0; b < 32; b++)
		off += snprintf(text + off, sizeof(text) - off, "%llu %llu\n",
				b ? 1ULL << b : 0ULL, count[b]);
	snprintf(rel, sizeof(rel), "latency/%s", name);
	put(rel, text);
}

static void make_tree(void)
{
	unsigned long long fetch[32] = { 0 }, none[32] = { 0 };
	char p[128];

	strcpy(root, "/tmp/statfmt_test.XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		exit(1);
	}
	snprintf(p, sizeof(p), "%s/stats", root);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/latency", root);
	mkdir(p, 0755);
	put("node_id", "2\n");
	put_stat("allocs", 10);
	put_stat("frees", 0);
	put_stat("alloc_bytes", 4096);
	put_stat("bad_msgs", 0);
	put_stat("rpc_timeouts", 7);
	put_stat("msgs_tx", 100);
	put_stat("msgs_rx", 0);
	put_stat("pages_in_use", 3);
	put_stat("zz_future_counter", 5);
	fetch[10] = 50;		/* [1024, 2048) ns */
	fetch[11] = 50;		/* [2048, 4096) ns */
	put_hist("fetch", fetch);
	put_hist("move", none);
	/* write-only in the module; here empty: no histogram either way */
	put("latency/reset", "");
}

static void rm_tree(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", root);
}

/* run odsmctl ARGS on the fake tree: its exit code, its stdout in OUT */
static int odsmctl(const char *args, char *out, size_t n)
{
	char cmd[512];
	size_t got = 0;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "ODSM_SYSFS='%s' %s %s 2>&1", root,
		 ODSM_ODSMCTL, args);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (got + 1 < n) {
		size_t r = fread(out + got, 1, n - 1 - got, f);

		if (!r)
			break;
		got += r;
	}
	out[got] = '\0';
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* python3's json.tool agrees (when python3 is installed: said otherwise) */
static int python_json_ok(const char *text)
{
	FILE *f;

	if (system("command -v python3 >/dev/null 2>&1")) {
		printf("# python3 missing: JSON checked by json_check.h only\n");
		return 1;
	}
	f = popen("python3 -m json.tool >/dev/null", "w");
	if (!f)
		return 0;
	fputs(text, f);
	return pclose(f) == 0;
}

/* every stats/ name that the ABI file documents has a group */
TEST(abi_names_have_groups)
{
	static const char pre[] = "What:\t\t/sys/kernel/odsm/stats/";
	char line[256];
	int seen = 0;
	FILE *f = fopen(ODSM_SRCDIR "/Documentation/ABI/testing/sysfs-kernel-odsm", "r");

	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		char *name = line + strlen(pre);

		if (strncmp(line, pre, strlen(pre)))
			continue;
		name[strcspn(name, "\n")] = '\0';
		if (!*name)
			continue;	/* the directory's own entry */
		EXPECT_TRUE(odsm_sf_known(name))
			TH_LOG("%s: documented but in no group of odsm_statfmt.c", name);
		seen++;
	}
	fclose(f);
	ASSERT_GT(seen, 90);
}

/* ... and so has every counter of the module's table */
TEST(module_names_have_groups)
{
	char line[256];
	int seen = 0;
	FILE *f = fopen(ODSM_SRCDIR "/kmod/odsm_stats.c", "r");

	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		char *q = strstr(line, "] = \"");
		char *end;

		if (!q)
			continue;
		q += 5;
		end = strchr(q, '"');
		ASSERT_NE(NULL, end);
		*end = '\0';
		EXPECT_TRUE(odsm_sf_known(q))
			TH_LOG("%s: a counter of the module in no group", q);
		seen++;
	}
	fclose(f);
	ASSERT_GT(seen, 80);
}

TEST(groups_and_order)
{
	struct odsm_sf_snap s;
	char dir[128];
	size_t i;
	unsigned int g, f, o;

	make_tree();
	EXPECT_EQ(-ENOENT, odsm_sf_snap_read(ODSM_SRCDIR "/nonexistent", &s));
	snprintf(dir, sizeof(dir), "%s/stats", root);
	ASSERT_EQ(0, odsm_sf_snap_read(dir, &s));
	ASSERT_EQ(9U, s.n);
	/* errors first, the non-zero one before the zero one */
	EXPECT_STREQ("rpc_timeouts", s.s[0].name);
	EXPECT_STREQ("bad_msgs", s.s[1].name);
	EXPECT_EQ((unsigned int)ODSM_SF_ERRORS, s.s[1].group);
	/* the allocator: non-zero in the table's order, then the zero */
	EXPECT_STREQ("allocs", s.s[2].name);
	EXPECT_STREQ("alloc_bytes", s.s[3].name);
	EXPECT_STREQ("frees", s.s[4].name);
	EXPECT_STREQ("pages_in_use", s.s[5].name);
	EXPECT_STREQ("msgs_tx", s.s[6].name);
	EXPECT_STREQ("msgs_rx", s.s[7].name);
	/* unknown: last, in other, not dropped */
	EXPECT_STREQ("zz_future_counter", s.s[8].name);
	EXPECT_EQ((unsigned int)ODSM_SF_OTHER, s.s[8].group);
	for (i = 1; i < s.n; i++)
		EXPECT_LE(s.s[i - 1].group, s.s[i].group);
	odsm_sf_classify("pages_in_use", &g, &f, &o);
	EXPECT_TRUE(!!(f & ODSM_SF_GAUGE));
	EXPECT_TRUE(!!(f & ODSM_SF_PAGES));
	odsm_sf_snap_free(&s);
	rm_tree();
}

TEST(json_valid_and_stable)
{
	struct odsm_sf_snap s;
	char *buf = NULL, dir[128];
	size_t len = 0;
	unsigned int g;
	FILE *f;

	make_tree();
	snprintf(dir, sizeof(dir), "%s/stats", root);
	ASSERT_EQ(0, odsm_sf_snap_read(dir, &s));
	f = open_memstream(&buf, &len);
	ASSERT_NE(NULL, f);
	odsm_sf_print_json(f, &s, 2);
	fclose(f);
	EXPECT_TRUE(json_valid(buf)) TH_LOG("not JSON:\n%s", buf);
	EXPECT_TRUE(python_json_ok(buf));
	for (g = 0; g < ODSM_SF_NR_GROUPS; g++) {
		char key[64];

		snprintf(key, sizeof(key), "\"%s\": {", odsm_sf_group_key(g));
		EXPECT_NE(NULL, strstr(buf, key)) TH_LOG("no group %s", key);
	}
	EXPECT_EQ(2, json_ull_after(buf, "node_id"));
	EXPECT_EQ(7, json_ull_after(buf, "rpc_timeouts"));
	EXPECT_EQ(5, json_ull_after(buf, "zz_future_counter"));
	free(buf);
	/* no node id: null, still JSON; and nothing at all */
	buf = NULL;
	f = open_memstream(&buf, &len);
	odsm_sf_print_json(f, &s, -1);
	fclose(f);
	EXPECT_TRUE(json_valid(buf));
	EXPECT_NE(NULL, strstr(buf, "\"node_id\": null"));
	free(buf);
	odsm_sf_snap_free(&s);
	buf = NULL;
	f = open_memstream(&buf, &len);
	odsm_sf_print_json(f, &s, 0);
	fclose(f);
	EXPECT_TRUE(json_valid(buf)) TH_LOG("not JSON:\n%s", buf);
	free(buf);
	rm_tree();
}

/* the checker itself refuses what it must */
TEST(json_checker)
{
	EXPECT_TRUE(json_valid("{\"a\": [1, -2.5e3, \"x\\u00e9\", true, null]}"));
	EXPECT_FALSE(json_valid("{\"a\": 1,}"));
	EXPECT_FALSE(json_valid("{\"a\": 1, \"a\": 2}"));
	EXPECT_FALSE(json_valid("{\"a\": 01}"));
	EXPECT_FALSE(json_valid("[1] [2]"));
	EXPECT_FALSE(json_valid("{\"a\": \"tab\there\"}"));
	EXPECT_FALSE(json_valid(""));
}

TEST(percentiles)
{
	struct odsm_sf_hist h;
	char text[1024];
	size_t off = 0;
	int b;

	/* 50 in [1024, 2048), 50 in [2048, 4096) */
	for (b = 0; b < 32; b++)
		off += snprintf(text + off, sizeof(text) - off, "%llu %d\n",
				b ? 1ULL << b : 0ULL, b == 10 || b == 11 ? 50 : 0);
	ASSERT_EQ(0, odsm_sf_hist_parse(text, &h));
	ASSERT_EQ(32U, h.nr);
	ASSERT_EQ(100ULL, h.total);
	/* the 50th operation is the last of [1024, 2048): its top */
	EXPECT_EQ(2048.0, odsm_sf_hist_pct(&h, 0.50));
	/* 25th: halfway through the first bucket */
	EXPECT_EQ(1536.0, odsm_sf_hist_pct(&h, 0.25));
	/* 90th: 40 of 50 into [2048, 4096) */
	EXPECT_EQ(2048.0 + 2048.0 * 40 / 50, odsm_sf_hist_pct(&h, 0.90));
	EXPECT_EQ(2048.0 + 2048.0 * 49 / 50, odsm_sf_hist_pct(&h, 0.99));
	/* the last bucket has no top: its least value */
	ASSERT_EQ(0, odsm_sf_hist_parse("0 0\n2 0\n4 3\n", &h));
	EXPECT_EQ(4.0, odsm_sf_hist_pct(&h, 0.99));
	/* empty: 0; malformed: refused */
	ASSERT_EQ(0, odsm_sf_hist_parse("0 0\n2 0\n", &h));
	EXPECT_EQ(0.0, odsm_sf_hist_pct(&h, 0.5));
	EXPECT_EQ(-EINVAL, odsm_sf_hist_parse("4 1\n2 1\n", &h));
	EXPECT_EQ(-EINVAL, odsm_sf_hist_parse("4 x\n", &h));
	EXPECT_EQ(-EINVAL, odsm_sf_hist_parse("", &h));
}

TEST(top_rates)
{
	struct odsm_sf_stat a[3] = {
		{ .name = "msgs_tx", .v = 100 },
		{ .name = "allocs", .v = 50 },
		{ .name = "faults", .v = 10 },
	};
	struct odsm_sf_stat b[4] = {
		{ .name = "msgs_tx", .v = 300 },
		{ .name = "allocs", .v = 20 },	/* reloaded: from 0 */
		{ .name = "faults", .v = 10 },
		{ .name = "objects_in_use", .v = 42 },
	};
	struct odsm_sf_snap prev = { a, 3, 10.0 }, cur = { b, 4, 12.0 };
	char *buf = NULL;
	size_t len = 0, i;
	FILE *f;

	for (i = 0; i < 3; i++)
		odsm_sf_classify(a[i].name, &a[i].group, &a[i].flags, &a[i].order);
	for (i = 0; i < 4; i++)
		odsm_sf_classify(b[i].name, &b[i].group, &b[i].flags, &b[i].order);
	EXPECT_EQ(100.0, odsm_sf_rate(&prev, &b[0], 2.0));
	EXPECT_EQ(10.0, odsm_sf_rate(&prev, &b[1], 2.0));
	EXPECT_EQ(0.0, odsm_sf_rate(&prev, &b[2], 2.0));
	EXPECT_EQ(42.0, odsm_sf_rate(&prev, &b[3], 2.0));	/* a gauge */
	odsm_sf_snap_sort(&cur);
	f = open_memstream(&buf, &len);
	odsm_sf_print_rates(f, &prev, &cur);
	fclose(f);
	EXPECT_NE(NULL, strstr(buf, "over the last 2.0 s"));
	EXPECT_NE(NULL, strstr(buf, "msgs_tx                       100.0/s"))
		TH_LOG("%s", buf);
	EXPECT_NE(NULL, strstr(buf, "objects_in_use                   42  [now]"));
	EXPECT_EQ(NULL, strstr(buf, "faults ")) TH_LOG("a zero rate shown:\n%s", buf);
	free(buf);
}

/* odsmctl itself on the fake tree */
TEST(odsmctl_commands)
{
	static char out[65536];
	char *p, *q;

	make_tree();
	ASSERT_EQ(0, access(ODSM_ODSMCTL, X_OK)) TH_LOG("no %s: make tools", ODSM_ODSMCTL);

	/* --raw: as before this file existed, name order */
	ASSERT_EQ(0, odsmctl("stats --raw", out, sizeof(out)));
	EXPECT_STREQ("alloc_bytes=4096\nallocs=10\nbad_msgs=0\nfrees=0\nmsgs_rx=0\n"
		     "msgs_tx=100\npages_in_use=3\nrpc_timeouts=7\nzz_future_counter=5\n",
		     out);

	ASSERT_EQ(0, odsmctl("stats", out, sizeof(out)));
	/* the errors group first, the unknown counter in other, zeros listed */
	p = strstr(out, "errors (");
	q = strstr(out, "allocator (");
	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, q);
	EXPECT_LT(p, q);
	EXPECT_NE(NULL, strstr(out, "  rpc_timeouts                      7\n"));
	EXPECT_NE(NULL, strstr(out, "  zero: bad_msgs\n"));
	p = strstr(out, "other (");
	ASSERT_NE(NULL, p);
	EXPECT_NE(NULL, strstr(p, "zz_future_counter"));
	EXPECT_NE(NULL, strstr(out, "alloc_bytes                    4096  (4.0 KiB)"));

	ASSERT_EQ(0, odsmctl("stats --json", out, sizeof(out)));
	EXPECT_TRUE(json_valid(out)) TH_LOG("%s", out);
	EXPECT_TRUE(python_json_ok(out));
	EXPECT_EQ(100, json_ull_after(out, "msgs_tx"));

	ASSERT_EQ(0, odsmctl("latency", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "fetch               100     2.0 us     3.7 us     4.1 us\n"))
		TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "move                  0          -          -          -\n"));
	EXPECT_NE(NULL, strstr(out, "     1.0 us - 2.0 us            50 |########################################\n"));
	EXPECT_EQ(NULL, strstr(out, "reset"));

	ASSERT_EQ(0, odsmctl("latency --json", out, sizeof(out)));
	EXPECT_TRUE(json_valid(out)) TH_LOG("%s", out);
	EXPECT_TRUE(python_json_ok(out));
	EXPECT_EQ(100, json_ull_after(out, "count"));
	EXPECT_EQ(2048, json_ull_after(out, "p50_ns"));

	ASSERT_EQ(0, odsmctl("top -n 2 -i 0.1", out, sizeof(out)));
	p = strstr(out, "--- odsmctl top ");
	ASSERT_NE(NULL, p);
	p = strstr(p + 1, "--- odsmctl top ");
	ASSERT_NE(NULL, p);
	EXPECT_EQ(NULL, strstr(p + 1, "--- odsmctl top ")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "node 2: per second"));
	EXPECT_NE(NULL, strstr(out, "(no events in this interval)")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "pages_in_use")) TH_LOG("a gauge not shown");

	/* what it refuses */
	EXPECT_EQ(2, odsmctl("top -n 0", out, sizeof(out)));
	EXPECT_EQ(2, odsmctl("top -i 0", out, sizeof(out)));
	EXPECT_EQ(2, odsmctl("stats --raw --json", out, sizeof(out)));
	EXPECT_EQ(2, odsmctl("stats --bogus", out, sizeof(out)));
	rm_tree();
	/* no tree: the module is not loaded */
	EXPECT_EQ(1, odsmctl("stats", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "is the odsm module loaded?"));
	EXPECT_EQ(1, odsmctl("latency --json", out, sizeof(out)));
}

TEST_HARNESS_MAIN
