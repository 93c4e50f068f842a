/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the multi-node kselftest programs
 * (selftests/cluster/cluster_NAME_test.c).  Header only: every .c file
 * builds into its own static program.
 *
 * The programs run as root on EVERY node of a rig cluster at the same time
 * (tools/rig/scenarios/cluster.sh), after the node joined and saw every
 * peer up.  They coordinate only through the heap itself: no sockets, no
 * files, no clock agreement.  The scenario runs a rig barrier between
 * programs; within a program the nodes wait for each other with the
 * heap's own atomics (c_barrier) and by polling words they publish.
 *
 * The directory.  Each node's first object, allocated by the first program
 * that runs on a freshly loaded module, is a zeroed 4 KiB "directory" at
 * the very start of its partition: part_start(K) is the one address every
 * node can compute for every other node without being told.  A node
 * publishes what its peers need (colored addresses, flags, counters) in
 * words of its directory; a peer polls them with ODSM_IOC_READ.  Word
 * indexes are fixed below, one range per program, so the programs can run
 * in any order or alone.
 *
 * Environment (set by the scenario; all optional):
 *   ODSM_NODE, ODSM_NODES   this node's id and the node count: checked
 *                           against what the module says
 *   ODSM_TIMEOUT_MS         the cluster's timeout_ms (default 2000)
 *   ODSM_HEARTBEAT_MS       the cluster's heartbeat_ms (default: the
 *                           module's)
 *   ODSM_PORT               the port the modules listen on (default 7100)
 *   ODSM_KEY_FILE           the cluster key file the nodes joined with
 *                           (cluster_badmsg_test checks proofs with it)
 *   ODSM_DOWN               the node the scenario powered off (down test)
 *   ODSM_REJOINED           set after every node left and joined again
 *                           (rejoin test)
 *   ODSM_FAKE_IP            the address of a node the cluster has but the
 *                           rig does not (rig.fake_peer=1): node 1 holds it
 *                           and a program speaks for that node (fake_peer.h)
 *
 * On a node that joined no cluster every test SKIPs, so the programs may
 * also sit in a single-node image.
 */
#ifndef _ODSM_CLUSTER_TEST_H
#define _ODSM_CLUSTER_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "odsm.h"		/* libodsm, and <linux/odsm.h> */
#include "kselftest_harness.h"

#define C_UNUSED	__attribute__((unused))

#define KiB(x)		((uint64_t)(x) << 10)
#define MiB(x)		((uint64_t)(x) << 20)

#define C_DIR_SIZE	KiB(4)
#define C_DIR_WORDS	(C_DIR_SIZE / 8)
#define C_DIR_MAGIC	0x4f44534d44495200ULL	/* "ODSMDIR\0" ^ node id */

/* Words of a directory.  Each range belongs to one program. */
enum {
	W_MAGIC = 0,		/* C_DIR_MAGIC ^ node: the directory is ready */
	/* cluster_rw_test */
	W_RW_SMALL = 8,		/* colored address of the 8-byte object */
	W_RW_PAGE,		/* ... of the 4 KiB object */
	W_RW_BIG,		/* ... of the 1 MiB object */
	W_RW_INBOX,		/* ... of the inbox: 4 KiB per node */
	W_RW_FULL,		/* node 0: 1 while its partition is full */
	/* cluster_atomic_test (the counters live in node 0's directory) */
	W_AT_COUNT = 24,	/* FETCH_ADD target */
	W_AT_CAS,		/* CMP_SWAP-increment target */
	W_AT_BITMAP,		/* colored address of this node's bitmap of
				 * the olds its fetch-adds returned
				 */
	W_AT_NIC_COUNT,		/* the same three for ODSM_ATOMIC_F_NIC */
	W_AT_NIC_CAS,
	W_AT_NIC_BITMAP,
	W_REJOIN_NIC = 30,	/* cluster_rejoin_test: F_NIC fetch-adds */
	W_REJOIN_HELD = 31,	/* node 1: 1 once it left the locks held */
	W_REJOIN_CAS = 13,	/* node 0: a CAS mutex node 1 left held */
	W_REJOIN_FIFO = 14,	/* node 0: a FIFO mutex node 1 left held */
	/* cluster_badmsg_test: handshakes between node 0 and node 1 */
	W_BAD_READY = 32,	/* node 0: 1 + bad_msgs before the first case */
	W_BAD_SENT,		/* node 1: number of the last case sent */
	W_BAD_ACK,		/* node 0: number of the last case counted */
	W_BAD_DONE,		/* node 1: number of cases, when all were sent */
	W_BAD_DELTA = 40,	/* node 0: 40 + case (1..19): bad_msgs moved by,
				 * auth_failures << 32
				 */
	/* cluster_down_test */
	W_DOWN_SEEN = 60,	/* survivor: ms the first failing op took + 1 */
	W_DOWN_END = 61,	/* the lowest survivor: arrivals at the end
				 * (a word of its own, not a barrier id: node
				 * 1's barrier ids are all other programs')
				 */
	/* barriers: one word each, in the barrier host's directory */
	W_BARRIER = 64,		/* 64 .. 127 */
	/* per-node scratch words: node K's are at 128 + K in every directory */
	W_SCRATCH = 128,
	/*
	 * The flood programs' words: 200 .. 242, which no other program
	 * uses (a directory's words outlive the program that wrote them;
	 * cluster_cache_test has 400 .., cluster_coherence_test 420 ..)
	 */
	/* cluster_accept_test: node 1 floods node 0's port */
	W_ACC_STEP = 200,	/* node 1: the step it finished */
	W_ACC_ACK,		/* node 0: the step it checked */
	W_ACC_READY = 204,	/* node 0: 1 once it took its counters */
	/* cluster_reqflood_test: a fake node floods node 0 with requests */
	W_RQ_OBJ = 220,		/* node 0: colored address of a 1 MiB object */
	W_RQ_STEP,		/* node 1: the step it finished */
	W_RQ_ACK,		/* node 0: the step it checked */
	W_RQ_RES = 224,		/* node 0: 224 + step: what it measured */
	/* cluster_twoway_test */
	W_TW_OBJ = 240,		/* colored address of this node's object;
				 * 241: ready to read, 242: done reading
				 */
	/* the fake-node tests: cluster_homerestart_test has 250 .. 254,
	 * cluster_deafpeer_test 255 .. 257, cluster_wrongreply_test
	 * 258 .. 259, cluster_lazyrestart_test 260 .. 264,
	 * cluster_delegwait_test 265 .. 267, cluster_returnpick_test
	 * 270 .. 273, cluster_mutpick_test 274 .. 277
	 */
};

/* barrier ids: W_BARRIER + id */
enum {
	B_RW_READY = 0, B_RW_READ, B_RW_WRITTEN, B_RW_VERIFIED, B_RW_END,
	B_RW_FULL, B_RW_FULL_DONE, B_RW_ALLOCS_DONE,
	B_AT_COUNTED = 8, B_AT_CAS, B_AT_END, B_AT_ADD_GO, B_AT_CAS_GO,
	/* 16: free on node 0; on node 1, cluster_rdeleg_test's */
	B_AT_NIC_ADD_GO = 17, B_AT_NIC_COUNTED, B_AT_NIC_CAS_GO, B_AT_NIC_CAS,
	B_RW_REUSE_DONE = 21,
	B_REJOIN_NIC = 27,
	B_REJOIN_END = 28,
};

struct c_env {
	struct odsm_info in;
	unsigned int self, nodes;
	unsigned int timeout_ms;
	unsigned int port;
	int down;		/* ODSM_DOWN, or -1 */
	unsigned int transport;
};

static struct c_env C C_UNUSED;

/* ---- time ------------------------------------------------------------ */

static C_UNUSED uint64_t c_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static C_UNUSED void c_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- a touch that may get SIGBUS ----------------------------------------- */

static sigjmp_buf c_touch_env C_UNUSED;

static C_UNUSED void c_on_sigbus(int sig)
{
	siglongjmp(c_touch_env, 1);
}

/*
 * The byte at p, or -1 after SIGBUS (a fault the module could not fill:
 * a lazily filled copy's page that its home refused).  One thread of the
 * process at a time.
 */
static C_UNUSED int c_touch(const volatile uint8_t *p)
{
	struct sigaction sa = { .sa_handler = c_on_sigbus }, old;
	volatile int v = -1;

	sigaction(SIGBUS, &sa, &old);
	if (!sigsetjmp(c_touch_env, 1))
		v = *p;
	sigaction(SIGBUS, &old, NULL);
	return v;
}

/* ---- geometry ------------------------------------------------------------ */

static C_UNUSED uint64_t c_part(unsigned int node)
{
	return C.in.heap_base + (uint64_t)node * C.in.part_size;
}

static C_UNUSED uint64_t c_word(unsigned int node, unsigned int idx)
{
	return c_part(node) + 8ULL * idx;
}

static C_UNUSED int c_in_part(uint64_t cg, unsigned int node)
{
	uint64_t a = odsm_addr_of(cg);

	return a >= c_part(node) && a < c_part(node) + C.in.part_size;
}

/* A byte of a test pattern: differs by node, by tag and by position (also
 * across 256-byte periods).
 */
static C_UNUSED uint8_t c_pat(unsigned int node, unsigned int tag, uint64_t i)
{
	return (uint8_t)(i * 131 + (i >> 8) * 7 + node * 17 + tag * 59 + 1);
}

static C_UNUSED void c_fill(uint8_t *p, uint64_t n, unsigned int node,
			    unsigned int tag)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		p[i] = c_pat(node, tag, i);
}

/* Index of the first byte that differs from the pattern, or -1. */
static C_UNUSED int64_t c_check(const uint8_t *p, uint64_t n,
				unsigned int node, unsigned int tag)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		if (p[i] != c_pat(node, tag, i))
			return (int64_t)i;
	return -1;
}

/* ---- this node's counters ------------------------------------------------ */

/* Write v to /sys/kernel/odsm/NAME (a knob): 0 or -errno */
/* Write val to the file name under the sysfs directory dir; 0 or -errno. */
static C_UNUSED int c_sysfs_write(const char *dir, const char *name,
				  const char *val)
{
	char path[128];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	ret = fputs(val, f) < 0 ? -EIO : 0;
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}

static C_UNUSED int c_set_knob(const char *name, uint64_t v)
{
	char val[24];

	snprintf(val, sizeof(val), "%llu\n", (unsigned long long)v);
	return c_sysfs_write("/sys/kernel/odsm", name, val);
}

/* /sys/kernel/odsm/stats/NAME, or ~0 when it cannot be read */
static C_UNUSED uint64_t c_stat(const char *name)
{
	char path[128];
	unsigned long long v = ~0ULL;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/odsm/stats/%s", name);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = ~0ULL;
		fclose(f);
	}
	return v;
}

/* ---- words ------------------------------------------------------------ */

static C_UNUSED int c_get(unsigned int node, unsigned int idx, uint64_t *v)
{
	return odsm_read(c_word(node, idx), v, sizeof(*v));
}

static C_UNUSED int c_put(unsigned int node, unsigned int idx, uint64_t v)
{
	return odsm_write(c_word(node, idx), &v, sizeof(v));
}

/*
 * Poll word idx of node's directory until it is non-zero (into *v) or,
 * with want != 0, until it is >= want.  A directory that does not exist
 * yet reads as -EINVAL: polled through too.  0, -ETIMEDOUT after secs, or
 * the first other error.
 */
static C_UNUSED int c_poll(unsigned int node, unsigned int idx, uint64_t want,
			   unsigned int secs, uint64_t *v)
{
	uint64_t end = c_now_ms() + secs * 1000ULL, x = 0;
	int ret;

	for (;;) {
		ret = c_get(node, idx, &x);
		if (ret && ret != -EINVAL)
			return ret;
		if (!ret && (want ? x >= want : x != 0)) {
			if (v)
				*v = x;
			return 0;
		}
		if (c_now_ms() > end) {
			fprintf(stderr, "# poll of node %u word %u timed out after %u s (last read: %s, value %" PRIu64 ", want %s)\n",
				node, idx, secs, ret ? odsm_strerror(ret) : "ok",
				x, want ? ">= the target" : "non-zero");
			return -ETIMEDOUT;
		}
		c_sleep_ms(20);
	}
}

/*
 * A barrier of n nodes on word W_BARRIER + id of host's directory: each
 * node adds 1, then waits until the word reaches n.  Every barrier id is
 * used once per program run, so a node that failed before an earlier
 * barrier does not shift the later ones.
 */
static C_UNUSED int c_barrier(unsigned int host, unsigned int id,
			      unsigned int n, unsigned int secs)
{
	uint64_t old = 0;
	int ret;

	ret = odsm_fetch_add(c_word(host, W_BARRIER + id), 1, &old);
	if (ret) {
		fprintf(stderr, "# barrier %u on node %u: %s\n", id, host,
			odsm_strerror(ret));
		return ret;
	}
	return c_poll(host, W_BARRIER + id, n, secs, NULL);
}

/* ---- setup ------------------------------------------------------------- */

static C_UNUSED unsigned int c_env_uint(const char *name, unsigned int dflt)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return dflt;
	v = strtoul(s, &end, 0);
	return *end ? dflt : (unsigned int)v;
}

/*
 * Map the heap, read the configuration and the cluster: 1 when this node
 * is in a cluster, 0 when it joined none (the caller SKIPs), -errno.
 */
static C_UNUSED int c_setup(void)
{
	unsigned int nr = 0;
	int ret;

	if (odsm_rt.fd < 0) {
		ret = odsm_init();
		if (ret)
			return ret;
	}
	memset(&C, 0, sizeof(C));
	C.in = odsm_rt.info;
	C.self = C.in.node_id;
	C.nodes = C.in.nr_nodes;
	C.timeout_ms = c_env_uint("ODSM_TIMEOUT_MS", 2000);
	C.port = c_env_uint("ODSM_PORT", 7100);
	C.down = getenv("ODSM_DOWN") && *getenv("ODSM_DOWN") ?
		 (int)c_env_uint("ODSM_DOWN", (unsigned int)-1) : -1;
	ret = odsm_status(NULL, &nr, &C.transport);
	if (ret)
		return ret;
	return C.transport != 0;
}

/* Is the odsm module's boolean parameter name on (Y)? */
static C_UNUSED bool c_param_on(const char *name)
{
	char path[128];
	FILE *f;
	int ch = 0;

	snprintf(path, sizeof(path), "/sys/module/odsm/parameters/%s", name);
	f = fopen(path, "r");
	if (f) {
		ch = fgetc(f);
		fclose(f);
	}
	return ch == 'Y';
}

/* Set the odsm module's boolean parameter name (Y or N); 0 or -errno. */
static C_UNUSED int c_set_param(const char *name, bool on)
{
	return c_sysfs_write("/sys/module/odsm/parameters", name,
			     on ? "Y" : "N");
}

/* The state of every node as this one sees it; 0 or -errno. */
static C_UNUSED int c_states(unsigned int *state, unsigned int nr)
{
	struct odsm_peer_info p[ODSM_MAX_NODES];
	unsigned int n = ODSM_MAX_NODES, i;
	int ret = odsm_status(p, &n, NULL);

	if (ret)
		return ret;
	if (n != nr)
		return -ERANGE;
	for (i = 0; i < nr; i++)
		state[i] = p[i].state;
	return 0;
}

/*
 * This node's directory: allocated (zeroed) if this is the first program
 * on a fresh module, which puts it at the start of the partition; then its
 * magic word is set.  0, or -1 after saying why.
 */
static C_UNUSED int c_dir_self(struct __test_metadata *_metadata)
{
	struct odsm_obj_info oi;
	uint64_t cg, magic = C_DIR_MAGIC ^ C.self;
	int ret;

	if (odsm_obj_info(c_part(C.self), &oi) == 0) {
		EXPECT_LE(C_DIR_SIZE, oi.usable);
		return 0;
	}
	ret = odsm_alloc(C_DIR_SIZE, 0, ODSM_ALLOC_ZERO, &cg);
	EXPECT_EQ(0, ret) {
		TH_LOG("allocating the directory: %s", odsm_strerror(ret));
		return -1;
	}
	/* the first object of a fresh partition is at its start */
	EXPECT_EQ(c_part(C.self), odsm_addr_of(cg)) {
		TH_LOG("the first object is not at the partition's start: was something allocated before the cluster tests?");
		return -1;
	}
	ret = c_put(C.self, W_MAGIC, magic);
	EXPECT_EQ(0, ret)
		return -1;
	return 0;
}

/* Wait until node's directory is ready; 0 or -errno. */
static C_UNUSED int c_dir_wait(unsigned int node, unsigned int secs)
{
	uint64_t v = 0;
	int ret = c_poll(node, W_MAGIC, 0, secs, &v);

	if (ret)
		return ret;
	return v == (C_DIR_MAGIC ^ node) ? 0 : -EBADMSG;
}

/*
 * A step of a program: once node 0's and host's directories exist, the
 * barrier id on host's (a program whose barriers live on node 1 because
 * node 0's ids are taken).
 */
static C_UNUSED int c_step(unsigned int host, unsigned int id,
			   unsigned int secs)
{
	int ret = c_dir_wait(0, secs);

	if (!ret && host)
		ret = c_dir_wait(host, secs);
	if (!ret)
		ret = c_barrier(host, id, C.nodes, secs);
	return ret;
}

/*
 * Start a test: set up, SKIP off a cluster, fail on a geometry that is not
 * the one the scenario announced, make this node's directory.
 */
#define C_BEGIN() do { \
	int __r = c_setup(); \
	ASSERT_LE(0, __r) { \
		TH_LOG("setup: %s", odsm_strerror(__r)); \
	} \
	if (__r == 0) \
		SKIP(return, "this node joined no cluster"); \
	if (getenv("ODSM_NODE")) \
		ASSERT_EQ(c_env_uint("ODSM_NODE", 0), C.self); \
	if (getenv("ODSM_NODES")) \
		ASSERT_EQ(c_env_uint("ODSM_NODES", 0), C.nodes); \
	ASSERT_LE(2U, C.nodes); \
	ASSERT_EQ(0, c_dir_self(_metadata)); \
} while (0)

/* errors a dead peer may give */
static C_UNUSED int c_is_down_err(int ret)
{
	return ret == -EHOSTDOWN || ret == -ETIMEDOUT;
}

#endif /* _ODSM_CLUSTER_TEST_H */
