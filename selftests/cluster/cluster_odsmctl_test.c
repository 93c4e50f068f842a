// SPDX-License-Identifier: GPL-2.0
/*
 * odsmctl's views for people and monitoring systems on a running cluster,
 * on every node (each on its own: no barrier):
 *
 *   stats_json    after this node read a peer's directory (a remote read),
 *                 "odsmctl stats --json" is valid JSON with every group,
 *                 msgs_tx and the reads counted; "odsmctl stats" groups
 *                 them, errors first; --raw is name=value lines
 *   status_json   "odsmctl status --json": valid, this node "self", every
 *                 peer "up"
 *   latency       "odsmctl latency" and "--json": valid, remote_read
 *                 counted at least once, its p50 inside the buckets' range
 *   top           "odsmctl top -n 2 -i 1" prints two screens and ends
 *
 * odsmctl is the one in PATH (the image's /rig/bin).  JSON is checked with
 * selftests/host/json_check.h: the guests have no python.
 */
#include <sys/wait.h>

#include "odsm_cluster.h"
#include "../host/json_check.h"

#define SECS	60

static char out[1 << 16];

/* odsmctl ARGS: its exit code, its output (stdout and stderr) in out */
static int odsmctl(const char *args)
{
	char cmd[256];
	size_t got = 0;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd), "odsmctl %s 2>&1", args);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (got + 1 < sizeof(out)) {
		size_t r = fread(out + got, 1, sizeof(out) - 1 - got, f);

		if (!r)
			break;
		got += r;
	}
	out[got] = '\0';
	st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* a remote read of the next node's directory: traffic the views count */
static int read_peer(void)
{
	return c_dir_wait((C.self + 1) % C.nodes, SECS);
}

TEST(stats_json)
{
	long long tx, reads;
	char *p;

	C_BEGIN();
	ASSERT_EQ(0, read_peer());
	ASSERT_EQ(0, odsmctl("stats --json")) TH_LOG("%s", out);
	ASSERT_TRUE(json_valid(out)) TH_LOG("not JSON:\n%s", out);
	ASSERT_EQ((long long)C.self, json_ull_after(out, "node_id"));
	ASSERT_NE(NULL, strstr(out, "\"errors\": {"));
	ASSERT_NE(NULL, strstr(out, "\"cluster\": {"));
	ASSERT_NE(NULL, strstr(out, "\"other\": {"));
	tx = json_ull_after(out, "msgs_tx");
	reads = json_ull_after(out, "remote_reads") +
		json_ull_after(out, "onesided_reads");
	EXPECT_LT(0, tx) TH_LOG("%s", out);
	EXPECT_LT(0, reads) TH_LOG("%s", out);

	ASSERT_EQ(0, odsmctl("stats"));
	p = strstr(out, "cluster (messages");
	ASSERT_NE(NULL, p) TH_LOG("%s", out);
	ASSERT_NE(NULL, strstr(out, "errors ("));
	EXPECT_LT(strstr(out, "errors ("), p);
	EXPECT_NE(NULL, strstr(p, "  msgs_tx  "));

	ASSERT_EQ(0, odsmctl("stats --raw"));
	for (p = out; *p; p = strchr(p, '\n') + 1) {
		size_t name = strspn(p, "abcdefghijklmnopqrstuvwxyz_0123456789");
		size_t num = strspn(p + name + 1, "0123456789");

		ASSERT_EQ('=', p[name]) TH_LOG("raw line '%.40s'", p);
		ASSERT_EQ('\n', p[name + 1 + num]) TH_LOG("raw line '%.40s'", p);
	}
	ASSERT_NE(NULL, strstr(out, "\nmsgs_tx="));
}

TEST(status_json)
{
	unsigned int up = 0;
	char *p;

	C_BEGIN();
	ASSERT_EQ(0, odsmctl("status --json")) TH_LOG("%s", out);
	ASSERT_TRUE(json_valid(out)) TH_LOG("not JSON:\n%s", out);
	ASSERT_EQ((long long)C.nodes, json_ull_after(out, "nodes"));
	for (p = out; (p = strstr(p, "\"state\": \"up\"")); p++)
		up++;
	EXPECT_EQ(C.nodes - 1, up) TH_LOG("%s", out);
	p = strstr(out, "\"state\": \"self\"");
	ASSERT_NE(NULL, p) TH_LOG("%s", out);
	/* the self entry is this node's: its "node" comes just before */
	while (p > out && strncmp(p, "{\"node\": ", 9))
		p--;
	EXPECT_EQ((long long)C.self, strtoll(p + 9, NULL, 10));
}

TEST(latency)
{
	long long n, p50;
	char *p;

	C_BEGIN();
	ASSERT_EQ(0, read_peer());
	ASSERT_EQ(0, odsmctl("latency")) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "operation         count        p50"));
	p = strstr(out, "\nremote_read ");
	ASSERT_NE(NULL, p) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "\nremote_read (")) TH_LOG("no bar chart:\n%s", out);

	ASSERT_EQ(0, odsmctl("latency --json")) TH_LOG("%s", out);
	ASSERT_TRUE(json_valid(out)) TH_LOG("not JSON:\n%s", out);
	p = strstr(out, "\"remote_read\": {");
	ASSERT_NE(NULL, p) TH_LOG("%s", out);
	n = json_ull_after(p, "count");
	p50 = json_ull_after(p, "p50_ns");
	EXPECT_LT(0, n);
	/* a read over an emulated network: between 1 us and 2 s */
	EXPECT_LT(1000, p50);
	EXPECT_GT(2000000000LL, p50);
	TH_LOG("remote_read: %lld operations, p50 %lld ns", n, p50);
}

TEST(top)
{
	char *p;

	C_BEGIN();
	ASSERT_EQ(0, odsmctl("top -n 2 -i 1")) TH_LOG("%s", out);
	p = strstr(out, "--- odsmctl top ");
	ASSERT_NE(NULL, p) TH_LOG("%s", out);
	p = strstr(p + 1, "--- odsmctl top ");
	ASSERT_NE(NULL, p) TH_LOG("%s", out);
	EXPECT_EQ(NULL, strstr(p + 1, "--- odsmctl top "));
	/* the interval measured: 1.0 s asked, more on a slow (KASAN) guest */
	EXPECT_NE(NULL, strstr(out, "per second over the last ")) TH_LOG("%s", out);
	/* its heartbeats keep the cluster's counters moving */
	EXPECT_NE(NULL, strstr(out, "msgs_tx")) TH_LOG("%s", out);
}

/*
 * Usage errors exit 2 and change nothing: numbers with a sign, past 64
 * bits or past a field's range, a stray argument, a node id outside the
 * list.  Before, "--node-id 4294967297" was node 1 (truncated), a stray
 * argument was ignored, and each went on to the ioctl (here refused
 * while joined: exit 1).
 */
TEST(usage_errors_exit_2)
{
	static const char *const bad[] = {
		"config --node-id 4294967297 --nodes 2",
		"config --node-id 1 --nodes 4294967298",
		"config --node-id -4294967294 --nodes 3",
		"config --node-id 1 --nodes 2 --part-size 17179869185G",
		"config --node-id 1 --nodes 2 stray",
		"join --node-id 5 --nodes 10.0.0.1,10.0.0.2 --key-file /nonexistent",
	};
	unsigned int i;

	C_BEGIN();
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *a = bad[i] ? bad[i] : "";

		EXPECT_EQ(2, odsmctl(a)) TH_LOG("odsmctl %s: %s", a, out);
	}
}

TEST_HARNESS_MAIN
