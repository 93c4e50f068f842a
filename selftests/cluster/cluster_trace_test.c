// SPDX-License-Identifier: GPL-2.0
/*
 * The module's tracepoints (kmod/odsm_trace.h) and latency histograms
 * (/sys/kernel/odsm/latency/), seen from user space as an administrator
 * sees them: through tracefs and sysfs.
 *
 *   borrow_events         node 1 enables events/odsm/ and borrows an object
 *                         of node 0 twice: the trace holds an odsm_fetch
 *                         (ret=0) and an odsm_borrow_miss, then an
 *                         odsm_borrow_hit, each with the object's colored
 *                         address, and an odsm_rpc_send/odsm_rpc_done pair;
 *                         latency/borrow_miss counted the miss once and
 *                         latency/fetch the FETCH, one for an object of
 *                         two pages (FETCH's whole); latency/reset zeroes
 *                         them
 *   hit_cost              node 1 times loops of borrow hits (each one an
 *                         ioctl that passes trace_odsm_borrow_hit) with the
 *                         events off and on, in turns, and logs the ratio
 *                         of the best of each: a measurement, judged only
 *                         for being made (every borrow a hit)
 *
 * Words of node 0's directory: 504 .. 505.  Barriers: ids 8 .. 13 in node
 * 1's directory.
 */
#include <sys/mount.h>
#include <sys/stat.h>

#include "odsm_cluster.h"

#define SECS		120
#define W_TR		504	/* node 0: the object's colored address */
#define W_TR_COST	505	/* node 0: the cost test's object */
#define B_HOST		1
#define B_TR		8	/* .. 13 */
#define SZ		8000	/* two pages: one FETCH all the same */
#define HIT_LOOPS	5000
#define COST_ROUNDS	3

static char tracefs[64];

static int step(unsigned int id)
{
	return c_step(B_HOST, B_TR + id, SECS);
}

/* tracefs, mounted where the kernel documents it if nobody did */
static int find_tracefs(void)
{
	static const char * const where[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	char p[96];
	unsigned int i;

	for (i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/events/odsm", where[i]);
		if (!access(p, F_OK))
			goto found;
	}
	if (mount("nodev", where[0], "tracefs", 0, NULL))
		return -errno;
	i = 0;
	snprintf(p, sizeof(p), "%s/events/odsm", where[0]);
	if (access(p, F_OK))
		return -ENOENT;
found:
	snprintf(tracefs, sizeof(tracefs), "%s", where[i]);
	return 0;
}

static int tr_write(const char *file, const char *v)
{
	char p[128];
	int fd, ret = 0;

	snprintf(p, sizeof(p), "%s/%s", tracefs, file);
	fd = open(p, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -errno;
	if (write(fd, v, strlen(v)) != (ssize_t)strlen(v))
		ret = -errno ?: -EIO;
	close(fd);
	return ret;
}

/* the whole trace buffer, NUL-terminated (free it) */
static char *tr_read(void)
{
	size_t cap = 1 << 20, len = 0;
	char p[128], *buf = malloc(cap);
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "%s/trace", tracefs);
	fd = open(p, O_RDONLY);
	if (fd < 0 || !buf) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	while ((n = read(fd, buf + len, cap - 1 - len)) > 0) {
		len += n;
		if (len == cap - 1) {
			char *nb = realloc(buf, cap * 2);

			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
	}
	close(fd);
	buf[len] = 0;
	return buf;
}

/* the lines of the trace that hold every one of the needles */
static unsigned int tr_count(const char *trace, const char *event,
			     const char *also, const char *more)
{
	const char *line = trace;
	unsigned int n = 0;

	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char l[512];

		if (len >= sizeof(l))
			len = sizeof(l) - 1;
		memcpy(l, line, len);
		l[len] = 0;
		if (strstr(l, event) && (!also || strstr(l, also)) &&
		    (!more || strstr(l, more)))
			n++;
		line = end ? end + 1 : NULL;
	}
	return n;
}

/* the sum of /sys/kernel/odsm/latency/NAME's buckets, ~0 if unreadable */
static uint64_t lat_total(const char *name)
{
	unsigned long long lo, cnt, sum = 0;
	unsigned int lines = 0;
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "/sys/kernel/odsm/latency/%s", name);
	f = fopen(p, "r");
	if (!f)
		return ~0ULL;
	while (fscanf(f, "%llu %llu", &lo, &cnt) == 2) {
		sum += cnt;
		lines++;
	}
	fclose(f);
	return lines == 32 ? sum : ~0ULL;
}

/* the non-empty buckets of latency/NAME, on one "# " line */
static void lat_show(const char *name)
{
	unsigned long long lo, cnt;
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "/sys/kernel/odsm/latency/%s", name);
	f = fopen(p, "r");
	if (!f)
		return;
	printf("# latency/%s (least ns: count):", name);
	while (fscanf(f, "%llu %llu", &lo, &cnt) == 2)
		if (cnt)
			printf(" %llu: %llu", lo, cnt);
	printf("\n");
	fclose(f);
}

static int lat_reset(void)
{
	FILE *f = fopen("/sys/kernel/odsm/latency/reset", "w");
	int ret = 0;

	if (!f)
		return -errno;
	if (fputs("1\n", f) < 0)
		ret = -EIO;
	if (fclose(f))
		ret = -errno;
	return ret;
}

static int publish(unsigned int word, odsm_box *b)
{
	int ret = odsm_box_new(b, SZ, 0);

	if (ret)
		return ret;
	c_fill(odsm_ptr(b->g), SZ, 0, 31);
	return c_put(0, word, odsm_box_share(b));
}

TEST(borrow_events)
{
	char gaddr[32], *trace;
	uint64_t miss0, fetch0;
	const void *p, *q;
	odsm_box b;
	odsm_ref r;

	C_BEGIN();
	if (C.self == 0)
		ASSERT_EQ(0, publish(W_TR, &b));
	ASSERT_EQ(0, step(0));
	if (C.self == 1) {
		b.ext = 0;
		ASSERT_EQ(0, c_get(0, W_TR, &b.g));
		ASSERT_EQ(0, find_tracefs()) {
			TH_LOG("no tracefs with events/odsm");
		}
		ASSERT_EQ(0, tr_write("tracing_on", "0"));
		ASSERT_EQ(0, tr_write("trace", ""));
		ASSERT_EQ(0, tr_write("events/odsm/enable", "1"));
		ASSERT_EQ(0, tr_write("tracing_on", "1"));
		miss0 = lat_total("borrow_miss");
		fetch0 = lat_total("fetch");
		ASSERT_NE(~0ULL, miss0);
		ASSERT_NE(~0ULL, fetch0);

		ASSERT_EQ(0, odsm_borrow(&b, &r, &p));	/* the miss */
		EXPECT_EQ(-1, c_check(p, SZ, 0, 31));
		EXPECT_EQ(0, odsm_return(&r));
		/* the process's table of hits gives its reference back, so
		 * the next borrow asks the kernel
		 */
		EXPECT_EQ(1, odsm_hits_flush());
		ASSERT_EQ(0, odsm_borrow(&b, &r, &q));	/* the hit */
		EXPECT_EQ(p, q);
		EXPECT_EQ(0, odsm_return(&r));

		EXPECT_EQ(0, tr_write("tracing_on", "0"));
		EXPECT_EQ(0, tr_write("events/odsm/enable", "0"));
		EXPECT_EQ(miss0 + 1, lat_total("borrow_miss"));
		/* all of it in the first FETCH: it asked for it whole */
		EXPECT_EQ(fetch0 + 1, lat_total("fetch"));

		trace = tr_read();
		ASSERT_NE(NULL, trace);
		snprintf(gaddr, sizeof(gaddr), "gaddr=0x%" PRIx64 " ", b.g);
		EXPECT_EQ(1U, tr_count(trace, "odsm_borrow_miss:", gaddr,
				      "node=0 "));
		EXPECT_EQ(1U, tr_count(trace, "odsm_borrow_hit:", gaddr,
				      "node=0 "));
		EXPECT_LE(1U, tr_count(trace, "odsm_fetch:", gaddr, "ret=0 "));
		EXPECT_LE(1U, tr_count(trace, "odsm_rpc_send:", "node=0 ",
				      NULL));
		EXPECT_LE(1U, tr_count(trace, "odsm_rpc_done:", "node=0 ",
				      "ret=0 "));
		if (_metadata->passed == 0 || getenv("ODSM_TRACE_SHOW"))
			fprintf(stderr, "# the trace:\n%s", trace);
		free(trace);

		lat_show("borrow_miss");
		lat_show("fetch");
		lat_show("rpc");
		EXPECT_EQ(0, lat_reset());
		EXPECT_EQ(0ULL, lat_total("borrow_miss"));
		EXPECT_EQ(0ULL, lat_total("fetch"));
	}
	ASSERT_EQ(0, step(1));
	if (C.self == 0)
		EXPECT_EQ(0, odsm_box_drop(&b));
}

/* ns per borrow hit and return, over HIT_LOOPS of them */
/*
 * The kernel's hit path, by its ioctls: libodsm's odsm_borrow() would
 * serve these from its table of hits without entering the kernel.
 */
static double hit_loop(odsm_box *b)
{
	struct odsm_borrow br = { 0 };
	struct timespec a, z;
	unsigned int i;
	uint64_t t0;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < HIT_LOOPS; i++) {
		memset(&br, 0, sizeof(br));
		br.gaddr = b->g;
		if (ioctl(odsm_rt.fd, ODSM_IOC_BORROW, &br) ||
		    ioctl(odsm_rt.fd, ODSM_IOC_RETURN, &br))
			return -1;
	}
	clock_gettime(CLOCK_MONOTONIC, &z);
	t0 = (z.tv_sec - a.tv_sec) * 1000000000ULL + z.tv_nsec - a.tv_nsec;
	return (double)t0 / HIT_LOOPS;
}

TEST(hit_cost)
{
	double off = 1e30, on = 1e30, t;
	unsigned int round;
	uint64_t hits;
	const void *p;
	odsm_box b;
	odsm_ref r;

	C_BEGIN();
	if (C.self == 0)
		ASSERT_EQ(0, publish(W_TR_COST, &b));
	ASSERT_EQ(0, step(2));
	if (C.self == 1) {
		b.ext = 0;
		ASSERT_EQ(0, c_get(0, W_TR_COST, &b.g));
		ASSERT_EQ(0, find_tracefs());
		/* the copy is made: every borrow of the loops is a hit */
		ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
		ASSERT_EQ(0, odsm_return(&r));
		hits = c_stat("borrow_hits");
		ASSERT_LT(0, hit_loop(&b));	/* warm caches and TLBs */
		/* off and on in turns, the best of each: a TCG guest's
		 * neighbours on the host make single loops noisy
		 */
		for (round = 0; round < COST_ROUNDS; round++) {
			t = hit_loop(&b);
			ASSERT_LT(0, t);
			off = t < off ? t : off;
			ASSERT_EQ(0, tr_write("events/odsm/enable", "1"));
			ASSERT_EQ(0, tr_write("tracing_on", "1"));
			t = hit_loop(&b);
			EXPECT_EQ(0, tr_write("tracing_on", "0"));
			EXPECT_EQ(0, tr_write("events/odsm/enable", "0"));
			EXPECT_EQ(0, tr_write("trace", ""));
			ASSERT_LT(0, t);
			on = t < on ? t : on;
		}
		EXPECT_EQ(hits + (2 * COST_ROUNDS + 1) * HIT_LOOPS,
			  c_stat("borrow_hits"));
		printf("# trace cost: borrow hit+return, best of %u loops of %u: %.0f ns with the odsm events off, %.0f ns on: on/off %.3f\n",
		       COST_ROUNDS, HIT_LOOPS, off, on, on / off);
	}
	ASSERT_EQ(0, step(3));
	if (C.self == 0)
		EXPECT_EQ(0, odsm_box_drop(&b));
}

TEST_HARNESS_MAIN
