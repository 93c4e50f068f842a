// SPDX-License-Identifier: GPL-2.0
/*
 * Lazily filled copies (a shared borrow of a large remote object, filled
 * page by page on first touch) under trouble, on 2 or more nodes: node 0
 * (HOME) is the home of a 4 MiB object, node 1 (USER) borrows it, the
 * others only keep step.
 *
 *   fault_drops_mmap_lock  USER's own link goes down for a while (the home
 *                      stays up, but no page fetch gets through); a thread
 *                      touches a page of the copy that is not there yet,
 *                      another thread of the same process mmaps and
 *                      munmaps meanwhile: that thread must not wait for
 *                      the fetch (its longest mmap/munmap stays under a
 *                      quarter of the touch's wait: over TCP, whose
 *                      connection outlives the bounce and whose fetch
 *                      waits for it), and the touch ends with the page's
 *                      bytes or SIGBUS, never a hang; after the link is
 *                      back, every node sees USER up again (over RDMA the
 *                      transport dialled anew: Soft-RoCE broke the
 *                      connection as soon as it had no route) and the
 *                      page reads right
 *   nonfault_access_fills  accesses that are not faults see the object's
 *                      bytes, never the zero pages of the store: USER's
 *                      ODSM_IOC_READ and fetch-add of 0 on pages of its
 *                      copy never touched, and the mapping after them;
 *                      HOME reading USER's copy (READ, a borrow: FETCH)
 *                      is refused or reads the object's bytes
 *
 * Words of node 0's directory: 300, 301, and word 302 of every node's
 * (see odsm_cluster.h; a directory has 512); barriers: node 1's ids 0 .. 5
 * except 1 (node 0's are all taken by other programs, and a barrier id is
 * used once per run).
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "odsm_cluster.h"

#define HOME		0
#define USER		1
#define W_LZ		300		/* HOME: the object's colored address */
#define W_LZ_SLOT	301		/* USER: its copy's colored address */
#define W_LZ_BACK	302		/* every node: 1, past the link test */
#define LAZY_SIZE	MiB(4)
#define SECS		120
#define B_HOST		1		/* the barriers' directory: node 1's */
#define B_LZ		0		/* 0, 2, 3: a test starts at 2 * n, ends
				 * at 2 * n + 1 (the link test in
				 * bounce_barrier instead)
				 */
#define B_LZ_PEER	4		/* .. 5: HOME reading USER's copy */
#define IFACE		"eth0"

static int borrow(uint64_t cg, struct odsm_borrow *b)
{
	memset(b, 0, sizeof(*b));
	b->gaddr = cg;
	return ioctl(odsm_rt.fd, ODSM_IOC_BORROW, b) ? -errno : 0;
}

static int give_back(uint64_t cg)
{
	struct odsm_borrow b = { .gaddr = cg };

	return ioctl(odsm_rt.fd, ODSM_IOC_RETURN, &b) ? -errno : 0;
}

static uint64_t obj;

/* Index of the first of n bytes that differs from the object at off, or -1 */
static int64_t c_check_at(const uint8_t *b, uint64_t n, uint64_t off)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		if (b[i] != c_pat(HOME, 7, off + i))
			return (int64_t)i;
	return -1;
}

/* HOME makes the object once; everyone meets; true on USER, which runs */
static bool start(struct __test_metadata *_metadata, unsigned int test)
{
	uint64_t have = 0;
	int ret;

	if (C.self == HOME && (c_get(HOME, W_LZ, &have) || !have)) {
		ret = odsm_alloc(LAZY_SIZE, 0, ODSM_ALLOC_ZERO, &obj);
		ASSERT_EQ(0, ret) TH_LOG("alloc: %s", odsm_strerror(ret));
		c_fill(odsm_ptr(obj), LAZY_SIZE, HOME, 7);
		ASSERT_EQ(0, c_put(HOME, W_LZ, obj));
	}
	ASSERT_EQ(0, c_dir_wait(HOME, SECS));
	ASSERT_EQ(0, c_dir_wait(B_HOST, SECS));
	ASSERT_EQ(0, c_barrier(B_HOST, B_LZ + 2 * test, C.nodes, SECS));
	ASSERT_EQ(0, c_get(HOME, W_LZ, &obj));
	if (C.self != USER)
		return false;
	ASSERT_EQ(0, c_set_knob("lazy_threshold", MiB(1)));
	ASSERT_EQ(0, c_set_knob("readahead_pages", 16));
	return true;
}

/*
 * The end of the link test, on every node.  Over RDMA the bounce broke
 * every connection to USER, and the others see USER down until its module
 * has dialled them again: a barrier's fetch-add on USER's word could fail
 * after it was applied, and cannot be repeated.  So each node says it is
 * past the test in a word of its own directory (a local write) and reads
 * the others' words, through -EHOSTDOWN (and a call that timed out) until
 * secs.
 */
static int bounce_barrier(unsigned int secs)
{
	uint64_t end = c_now_ms() + secs * 1000ULL, v;
	unsigned int k;
	int ret;

	ret = c_put(C.self, W_LZ_BACK, 1);
	for (k = 0; !ret && k < C.nodes; k++) {
		do {
			if (c_now_ms() > end) {
				fprintf(stderr, "# node %u is not past the link test after %u s\n",
					k, secs);
				return -ETIMEDOUT;
			}
			v = 0;
			ret = c_get(k, W_LZ_BACK, &v);
			if (ret == -EHOSTDOWN || ret == -ETIMEDOUT)
				ret = 0;
			else if (ret)
				return ret;
			if (!v)
				c_sleep_ms(50);
		} while (!v);
	}
	return ret;
}

static void finish(struct __test_metadata *_metadata, unsigned int test)
{
	if (test == 0) {
		ASSERT_EQ(0, bounce_barrier(SECS));
	} else {
		ASSERT_EQ(0, c_barrier(B_HOST, B_LZ + 2 * test + 1, C.nodes,
				       SECS));
	}
}

#define LZ_TEST(name, n)						\
static void name##_body(struct __test_metadata *_metadata);		\
TEST(name)								\
{									\
	C_BEGIN();							\
	if (start(_metadata, n))					\
		name##_body(_metadata);					\
	finish(_metadata, n);						\
}									\
static void name##_body(struct __test_metadata *_metadata)

/* ---- a touch that may get SIGBUS -------------------------------------- */

static sigjmp_buf touch_env;

static void on_sigbus(int sig)
{
	siglongjmp(touch_env, 1);
}

/* The byte at p, or -1 after SIGBUS. */
static int touch(const volatile uint8_t *p)
{
	struct sigaction sa = { .sa_handler = on_sigbus }, old;
	volatile int v = -1;

	sigaction(SIGBUS, &sa, &old);
	if (!sigsetjmp(touch_env, 1))
		v = *p;
	sigaction(SIGBUS, &old, NULL);
	return v;
}

/* ---- another thread of the process: mmap and munmap ----------------- */

struct mapper {
	pthread_t t;
	volatile int stop;
	uint64_t worst_us, rounds;
};

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void *mapper_fn(void *arg)
{
	struct mapper *m = arg;

	while (!m->stop) {
		uint64_t t0 = now_us(), d;
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p != MAP_FAILED) {
			*(volatile char *)p = 1;
			munmap(p, 4096);
		}
		d = now_us() - t0;
		if (d > m->worst_us)
			m->worst_us = d;
		m->rounds++;
		usleep(2000);
	}
	return NULL;
}

static int ip_link(const char *state)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "/usr/bin/ip link set " IFACE " %s", state);
	return system(cmd);
}

/* Wait (up to secs) until every peer is up again. */
static bool peers_up(unsigned int secs)
{
	unsigned int st[ODSM_MAX_NODES], i;
	uint64_t end = c_now_ms() + secs * 1000ULL;

	while (c_now_ms() < end) {
		bool all = !c_states(st, C.nodes);

		for (i = 0; all && i < C.nodes; i++)
			if (i != C.self && st[i] != ODSM_PEER_UP)
				all = false;
		if (all)
			return true;
		c_sleep_ms(100);
	}
	return false;
}

LZ_TEST(fault_drops_mmap_lock, 0)
{
	/* down for a third of timeout_ms: TCP's retransmissions (200 ms,
	 * doubling) get the heartbeats through again well within it, so the
	 * peers do not declare each other down; the fetch just gets no
	 * answer meanwhile.  Soft-RoCE fails the first packet it cannot
	 * route, which breaks the RDMA connection at once: the fetch fails,
	 * and the transport must dial again once the link is back (issue 12:
	 * it never did)
	 */
	bool tcp = C.transport == ODSM_TRANSPORT_TCP;
	unsigned int down_ms = C.timeout_ms / 3;
	uint64_t at = MiB(3) + 123, t0, waited_ms, unlocked, parked;
	struct mapper m = {};
	struct odsm_borrow b;
	const volatile uint8_t *p;
	pid_t child;
	int v, status, i;

	ASSERT_LE(1500U, C.timeout_ms) TH_LOG("timeout_ms too small for this test");
	ASSERT_EQ(0, borrow(obj, &b));
	ASSERT_EQ(LAZY_SIZE, b.size);
	p = (const volatile uint8_t *)(uintptr_t)b.addr;
	/* a first page, with the link up: the copy works */
	ASSERT_EQ(c_pat(HOME, 7, 5), touch(p + 5));
	unlocked = c_stat("lazy_unlocked");
	parked = c_stat("rdma_ids_parked");

	ASSERT_EQ(0, ip_link("down"));
	/* the link comes back after down_ms whatever happens to us */
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		c_sleep_ms(down_ms);
		execl("/usr/bin/ip", "ip", "link", "set", IFACE, "up", NULL);
		_exit(127);
	}
	ASSERT_EQ(0, pthread_create(&m.t, NULL, mapper_fn, &m));
	c_sleep_ms(100);
	t0 = c_now_ms();
	v = touch(p + at);
	waited_ms = c_now_ms() - t0;
	c_sleep_ms(100);
	m.stop = 1;
	pthread_join(m.t, NULL);
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	TH_LOG("link down %u ms: the touch waited %" PRIu64 " ms (%s); the other thread's worst mmap+munmap took %" PRIu64 " us over %" PRIu64 " rounds",
	       down_ms, waited_ms, v < 0 ? "SIGBUS" : "data", m.worst_us,
	       m.rounds);
	if (tcp) {
		/* the fetch did wait for the link: else the mmap_lock part
		 * proves nothing
		 */
		EXPECT_LE(down_ms / 2, waited_ms);
		/* the other thread did not wait with it */
		EXPECT_GT(waited_ms * 1000, 4 * m.worst_us);
	}
	EXPECT_LT(0U, m.rounds);
	if (v >= 0)
		EXPECT_EQ(c_pat(HOME, 7, at), v);
	EXPECT_LT(unlocked, c_stat("lazy_unlocked"));

	/* the link is back: the peers are up again (over RDMA, a new
	 * connection), and the page reads right
	 */
	EXPECT_TRUE(peers_up(3 * C.timeout_ms / 1000 + 5));
	if (!tcp)
		TH_LOG("CM ids parked for a route meanwhile: %" PRIu64,
		       c_stat("rdma_ids_parked") - parked);
	/* (TCP may still be backing off: a few tries) */
	for (i = 0; i < 5 && (v = touch(p + at)) < 0; i++)
		c_sleep_ms(500);
	EXPECT_EQ(c_pat(HOME, 7, at), v);
	EXPECT_EQ(-1, c_check_at((const uint8_t *)p + MiB(3), KiB(64), MiB(3)));
	EXPECT_EQ(0, give_back(obj));
}

/* HOME's half of nonfault_access_fills: a peer's READ and FETCH of a copy */
static void home_reads_copy(struct __test_metadata *_metadata)
{
	uint64_t slot = 0, at = MiB(3) + KiB(8);
	struct odsm_borrow b;
	uint8_t buf[64];
	int ret;

	ASSERT_EQ(0, c_barrier(B_HOST, B_LZ_PEER, 2, SECS));
	ASSERT_EQ(0, c_get(HOME, W_LZ_SLOT, &slot));
	ASSERT_NE(0ULL, (unsigned long long)slot);
	memset(buf, 0, sizeof(buf));
	ret = odsm_read(odsm_addr_of(slot) + at, buf, sizeof(buf));
	TH_LOG("READ of node 1's copy: %s", odsm_strerror(ret));
	if (!ret)
		EXPECT_EQ(-1, c_check_at(buf, sizeof(buf), at));
	ret = borrow(slot, &b);
	TH_LOG("borrow (FETCH) of node 1's copy: %s", odsm_strerror(ret));
	if (!ret) {
		EXPECT_EQ(-1, c_check_at((uint8_t *)(uintptr_t)b.addr + at,
					 sizeof(buf), at));
		EXPECT_EQ(0, give_back(slot));
	}
	ASSERT_EQ(0, c_barrier(B_HOST, B_LZ_PEER + 1, 2, SECS));
}

static void user_nonfault(struct __test_metadata *_metadata)
{
	uint64_t old = 1, want = 0, at, prefills;
	struct odsm_obj_info oi;
	struct odsm_borrow b;
	const volatile uint8_t *p;
	uint8_t buf[64];
	int ret, i;

	ASSERT_EQ(0, borrow(obj, &b));
	ASSERT_EQ(LAZY_SIZE, b.size);
	p = (const volatile uint8_t *)(uintptr_t)b.addr;
	prefills = c_stat("lazy_prefills");

	/* READ of pages never touched: the object's bytes, not zeros */
	at = MiB(1) + 8;
	memset(buf, 0, sizeof(buf));
	ret = odsm_read(b.addr + at, buf, sizeof(buf));
	EXPECT_EQ(0, ret) TH_LOG("read: %s", odsm_strerror(ret));
	EXPECT_EQ(-1, c_check_at(buf, sizeof(buf), at));

	/* a fetch-add of 0: refused, or the word's old value is the object's */
	at = MiB(2);
	ret = odsm_fetch_add(b.addr + at, 0, &old);
	TH_LOG("fetch-add on the copy: %s", odsm_strerror(ret));
	for (i = 0; i < 8; i++)
		want |= (uint64_t)c_pat(HOME, 7, at + i) << (8 * i);
	if (!ret)
		EXPECT_EQ(want, old);
	/* and the page the atomic reached is no zero page for the mapping */
	EXPECT_EQ(c_pat(HOME, 7, at), touch(p + at));
	EXPECT_EQ(c_pat(HOME, 7, at + 4095), touch(p + at + 4095));
	EXPECT_LT(prefills, c_stat("lazy_prefills"));

	/* HOME reads the copy through the heap meanwhile */
	ASSERT_EQ(0, odsm_obj_info(b.addr, &oi));
	ASSERT_EQ(0, c_put(HOME, W_LZ_SLOT, b.addr +
			   ((uint64_t)oi.alloc_color << ODSM_COLOR_SHIFT)));
	ASSERT_EQ(0, c_barrier(B_HOST, B_LZ_PEER, 2, SECS));
	ASSERT_EQ(0, c_barrier(B_HOST, B_LZ_PEER + 1, 2, SECS));
	/* whatever HOME got, the copy is still the object's bytes */
	EXPECT_EQ(-1, c_check_at((const uint8_t *)p + MiB(3), KiB(16), MiB(3)));
	EXPECT_EQ(0, give_back(obj));
}

TEST(nonfault_access_fills)
{
	C_BEGIN();
	if (start(_metadata, 1))
		user_nonfault(_metadata);
	else if (C.self == HOME)
		home_reads_copy(_metadata);
	finish(_metadata, 1);
}

TEST_HARNESS_MAIN
