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
 *   slot_touched_before_cached  issue 12, finding 10(a): a copy's slot is
 *                      touched (a stale pointer into the slot of a former
 *                      copy at the same address) while the new copy waits
 *                      to enter the cache (the test hold fault_hold_copies
 *                      keeps that window open): the touch gets the
 *                      object's bytes or SIGBUS, and once the borrow is
 *                      done every page of the copy reads the object's
 *                      bytes -- never a zero page the store inserted
 *                      between the discard of the slot's pages and the
 *                      copy's lazy registration
 *
 * Words of node 0's directory: 460, 461, and word 462 of every node's
 * (see odsm_cluster.h; a directory has 512); barriers: node 1's ids 0 .. 7
 * except 1 (node 0's are all taken by other programs, and a barrier id is
 * used once per run).
 */
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "odsm_cluster.h"
#include "odsm_faults.h"

#define HOME		0
#define USER		1
#define W_LZ		460		/* HOME: the object's colored address */
#define W_LZ_SLOT	461		/* USER: its copy's colored address */
#define W_LZ_BACK	462		/* every node: 1, past the link test */
#define LAZY_SIZE	MiB(4)
#define SECS		120
#define B_HOST		1		/* the barriers' directory: node 1's */
#define B_LZ		0		/* 0, 2, 3: a test starts at 2 * n, ends
				 * at 2 * n + 1 (the link test in
				 * bounce_barrier instead)
				 */
#define B_LZ_PEER	4		/* .. 5: HOME reading USER's copy */
#define B_LZ_SLOT	6		/* .. 7: test 2's start and end */
#define B_LZ_START(t)	((t) < 2 ? B_LZ + 2 * (t) : B_LZ_SLOT)
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
	ASSERT_EQ(0, c_barrier(B_HOST, B_LZ_START(test), C.nodes, SECS));
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
		ASSERT_EQ(0, c_barrier(B_HOST, B_LZ_START(test) + 1, C.nodes,
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
	uint64_t at = MiB(3) + 123, t0, waited_ms, unlocked, parked, kills;
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
	ASSERT_EQ(c_pat(HOME, 7, 5), c_touch(p + 5));
	unlocked = c_stat("lazy_unlocked");
	parked = c_stat("rdma_ids_parked");
	kills = c_stat("rdma_port_kills");

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
	v = c_touch(p + at);
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
	if (!tcp) {
		TH_LOG("CM ids parked for a route meanwhile: %" PRIu64,
		       c_stat("rdma_ids_parked") - parked);
		/* the port went down (the rig's RDMA is Soft-RoCE): every
		 * connection to a peer closed then, not only the one whose
		 * packet found no route (design.rst, "A port that goes
		 * down")
		 */
		EXPECT_LE(kills + C.nodes - 1, c_stat("rdma_port_kills"));
	}
	/* (TCP may still be backing off: a few tries) */
	for (i = 0; i < 5 && (v = c_touch(p + at)) < 0; i++)
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
	EXPECT_EQ(c_pat(HOME, 7, at), c_touch(p + at));
	EXPECT_EQ(c_pat(HOME, 7, at + 4095), c_touch(p + at + 4095));
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

/* ---- a copy's slot touched before the copy is cached (10a) ------------ */

/* Drop this node's idle copies and wait until their slots are free. */
static int drop_idle(void)
{
	struct odsm_drop_copies d = { 0 };
	int i;

	if (ioctl(odsm_rt.fd, ODSM_IOC_DROP_COPIES, &d))
		return -errno;
	/* the reaper frees the slots just after */
	for (i = 0; i < 100 && c_stat("copies_in_use"); i++)
		c_sleep_ms(20);
	return c_stat("copies_in_use") ? -EBUSY : 0;
}

struct held_borrow {
	struct odsm_borrow b;
	int ret;
};

static void *borrow_fn(void *arg)
{
	struct held_borrow *hb = arg;

	hb->ret = borrow(obj, &hb->b);
	return NULL;
}

/*
 * Wait (10 s at most) until the counter passed want: true if it did.
 * ~0 is a counter that cannot be read.
 */
static bool stat_reached(const char *name, uint64_t want)
{
	uint64_t end = c_now_ms() + 10000, v;

	while (((v = c_stat(name)) < want || v == ~0ULL) &&
	       c_now_ms() < end)
		c_sleep_ms(20);
	return v >= want && v != ~0ULL;
}

#define MAX_BIG	64U

/*
 * The objects of LAZY_SIZE bytes that start in this node's partition (a
 * 64 KiB block each at most: an object that large starts at a block),
 * at most MAX_BIG of them; their number.
 */
static unsigned int big_objects(uint64_t *at)
{
	uint64_t a, start = c_part(C.self), end = start + C.in.part_size;
	struct odsm_obj_info oi;
	unsigned int n = 0;

	for (a = start; a < end && n < MAX_BIG; a += KiB(64))
		if (!odsm_obj_info(a, &oi) && oi.size == LAZY_SIZE &&
		    odsm_addr_of(oi.gaddr) == a)
			at[n++] = a;
	return n;
}

/* The first of the LAZY_SIZE objects now[] that is not in was[], or 0. */
static uint64_t new_big(const uint64_t *was, unsigned int nw,
			const uint64_t *now, unsigned int nn)
{
	unsigned int i, j;

	for (i = 0; i < nn; i++) {
		for (j = 0; j < nw && was[j] != now[i]; j++)
			;
		if (j == nw)
			return now[i];
	}
	return 0;
}

LZ_TEST(slot_touched_before_cached, 2)
{
	/* a page past the copy's first, never fetched: its pattern is not
	 * zero (c_pat)
	 */
	uint64_t at = MiB(2) + KiB(12) + 5, slot = 0, holds;
	uint64_t was[MAX_BIG], now[MAX_BIG];
	struct held_borrow hb = { .ret = 1 };
	const volatile uint8_t *p = NULL;
	unsigned int nw, nn = 0;
	int v = -2, ret;
	bool held;
	pthread_t th;

	ASSERT_NE(0, c_pat(HOME, 7, at));
	/* the borrow must make a copy: no idle one from the tests before */
	ASSERT_EQ(0, drop_idle());
	nw = big_objects(was);
	ASSERT_GT(MAX_BIG, nw);

	holds = c_stat("fault_holds");
	ASSERT_NE(~0ULL, holds) TH_LOG("no fault_holds counter");
	ASSERT_EQ(0, f_param("fault_hold_copies", 1));
	ret = pthread_create(&th, NULL, borrow_fn, &hb);
	if (ret) {
		f_param("fault_hold_copies", 0);
		ASSERT_EQ(0, ret);
	}
	/*
	 * The copy has its slot, and waits before it enters the cache: find
	 * the slot (the one new object of its size here) and touch it, as a
	 * stray or stale pointer into the heap would
	 */
	held = stat_reached("fault_holds", holds + 1);
	if (held) {
		nn = big_objects(now);
		slot = new_big(was, nw, now, nn);
	}
	if (slot) {
		p = (const volatile uint8_t *)(uintptr_t)slot;
		v = c_touch(p + at);
	}
	/* no assertion before the hold is cleared: the borrow would wait */
	ret = f_param("fault_hold_copies", 0);
	pthread_join(th, NULL);
	ASSERT_EQ(0, ret);
	ASSERT_TRUE(held) TH_LOG("the borrow was not held (fault_holds)");
	ASSERT_EQ(0, hb.ret) TH_LOG("borrow: %s", odsm_strerror(hb.ret));
	ASSERT_EQ((uint32_t)ODSM_BORROWED_MISS, hb.b.result);
	ASSERT_EQ(LAZY_SIZE, hb.b.size);
	ASSERT_EQ(hb.b.addr, slot) {
		TH_LOG("the held copy's slot was not found (%u objects of its size before, %u while held)",
		       nw, nn);
	}
	TH_LOG("the touch of the slot %#" PRIx64 " before the copy was cached: %s (%d)",
	       slot, v < 0 ? "SIGBUS" : v ? "a byte" : "zero", v);
	/* the object's byte, or SIGBUS: never a zero page */
	EXPECT_TRUE(v == -1 || v == c_pat(HOME, 7, at)) {
		TH_LOG("the touch read %d, not the object's %u", v,
		       c_pat(HOME, 7, at));
	}
	/* and now, through the borrow: every byte around it the object's */
	EXPECT_EQ(c_pat(HOME, 7, at), c_touch(p + at)) {
		TH_LOG("the copy's page reads zeros: a zero page was inserted before the copy was registered lazy");
	}
	EXPECT_EQ(-1, c_check_at((const uint8_t *)p + MiB(2), KiB(64), MiB(2)));
	EXPECT_EQ(0, give_back(obj));
}

TEST_HARNESS_MAIN
