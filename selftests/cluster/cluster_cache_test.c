// SPDX-License-Identifier: GPL-2.0
/*
 * The node's cache of remote objects, through the kernel ABI itself
 * (ODSM_IOC_BORROW / RETURN / BORROW_MUT / WRITE_BACK), on 2 or more
 * nodes: node 0 is the home of every object, node 1 borrows them, the
 * others only keep step.
 *
 *   hit_miss_return    a miss copies, a hit of the same version does not,
 *                      another color is another copy; references are per
 *                      file and counted; a 900 KiB copy comes by chunks
 *                      several in flight (fetch_chunks_overlapped), every
 *                      byte right; bad arguments are refused; the
 *                      home served the FETCHes in its receiver over RDMA
 *                      (served_in_rx), on its workqueue over TCP; their
 *                      replies came from the completion handler over
 *                      RDMA (replies_in_cq)
 *   budget_eviction    over cache_budget_bytes, idle copies go oldest
 *                      first; a referenced copy never goes
 *   shrinker           memory pressure (the shrinkers, via drop_caches)
 *                      takes idle copies, never a referenced one
 *   lazy_fetch         a 4 MiB borrow fetches almost nothing up front;
 *                      touching a byte fetches its read-ahead window
 *                      only; every byte is right; the copy goes when
 *                      returned
 *   take_and_write_back  a mutable borrow takes over an idle copy of
 *                      exactly that version with no transfer, the
 *                      original is freed at its home, and WRITE_BACK
 *                      stores an owner box in the home's partition
 *   slots_protected    a copy's slot is never the caller's to free or move,
 *                      also while the cache allocates, fills, evicts or
 *                      reaps it: another thread freeing and moving the
 *                      slot's address (at any color) all the while is
 *                      refused every time (issue 12, finding 9)
 *   peer_write_refused  the home's WRITE and ATOMIC into the address of
 *                      USER's cached copy are refused (-EINVAL, counted
 *                      on USER: copy_writes_refused); the copy keeps its
 *                      bytes (finding 9)
 *   home_rejoin        HOME leaves the cluster and joins it again (a new
 *                      incarnation, as after a restart): while it is
 *                      down USER's idle copy of its object is not served
 *                      (-EHOSTDOWN: the home may come back as another
 *                      incarnation, whose addresses a third node may pass
 *                      on before USER forgot the old copies, the model's
 *                      gap 1); once it is up again the copy is forgotten
 *                      and a borrow misses
 *   onesided_miss      (USER alone, last) over RDMA a miss of an object
 *                      copied before reads it one-sided, checked by the
 *                      home's published words: right bytes, a stale
 *                      color refused, a reused slot's new object right
 *   onesided_miss_sizes, onesided_miss_runs  the same for slab objects of
 *                      12-32 KiB and multi-block objects under 1 MiB
 *   onesided_move      over RDMA a move of an object copied before reads
 *                      it one-sided (sizes up to 1 MiB), every byte
 *                      right, the original freed at its home; a never
 *                      copied one moves by FETCH without a read wasted;
 *                      a freed one is refused by its word (-ESTALE)
 *   onesided_move_ahead  over RDMA a move of a run without keys asks
 *                      for the next run's blocks' keys too: the next
 *                      one of a series moves with its rest one-sided
 *   onesided_lazy      over RDMA the faults of a lazily filled copy read
 *                      its pages one-sided once the home registered its
 *                      blocks (KEYS_ASK), checked by the run's word:
 *                      every byte right; an object freed under its copy
 *                      is refused by the word (SIGBUS: the FETCH says
 *                      -ESTALE); with onesided_lazy off, FETCHes
 *
 * Words of node 0's directory: 400 .. 414 (see odsm_cluster.h).
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <sys/mman.h>
#include "odsm_cluster.h"

#define HOME		0
#define USER		1
#define W_CC		400		/* colored addresses, published by HOME */
#define NR_SMALL	8		/* 32 KiB objects for the budget tests */
#define SMALL_SIZE	KiB(32)
#define LAZY_SIZE	MiB(4)
#define SECS		120

enum { O_TINY, O_MID, O_LAZY, O_BOX, O_TAKE, O_BIG, O_SMALL0 };
#define NR_OBJ		(O_SMALL0 + NR_SMALL)

/*
 * Barrier ids of this program, on HOME (ids are node-wide across the
 * programs of one run, see odsm_cluster.h): 32 .. 42, two per test and
 * one, for the first tests; then the free ones between the others'.
 */
#define B_CC		32
#define B_CC_TEST(t, k)	((t) < 6 ? B_CC + 2 * (t) + (k) : 62 + (k))
#define B_PW		29		/* .. 31: peer_write_refused */
#define B_RJ		61		/* home_rejoin */

static uint64_t obj_size(int o)
{
	switch (o) {
	case O_TINY:
		return 512;
	case O_MID:
		return KiB(100);	/* several blocks, under the lazy threshold */
	case O_LAZY:
		return LAZY_SIZE;
	case O_BOX:
		return 64;
	case O_TAKE:
		return KiB(4);
	case O_BIG:
		return KiB(900);	/* 4 chunks after the first FETCH, eager */
	}
	return SMALL_SIZE;
}

static int borrow(int fd, uint64_t cg, struct odsm_borrow *b)
{
	memset(b, 0, sizeof(*b));
	b->gaddr = cg;
	return ioctl(fd, ODSM_IOC_BORROW, b) ? -errno : 0;
}

static int give_back(int fd, uint64_t cg)
{
	struct odsm_borrow b = { .gaddr = cg };

	return ioctl(fd, ODSM_IOC_RETURN, &b) ? -errno : 0;
}

static uint64_t cc[NR_OBJ];
static int fd, fd2;

/*
 * Every test: HOME makes and publishes the objects (the first test only),
 * everyone meets, USER opens a second file and sets the knobs.  Returns
 * true on USER, which then runs the test; the others wait at its end.
 */
static bool start(struct __test_metadata *_metadata, unsigned int test)
{
	uint64_t have = 0;
	uint8_t *buf;
	int o, ret;

	if (C.self == HOME && (c_get(HOME, W_CC, &have) || !have)) {
		for (o = 0; o < NR_OBJ; o++) {
			ret = odsm_alloc(obj_size(o), 0, ODSM_ALLOC_ZERO, &cc[o]);
			ASSERT_EQ(0, ret) TH_LOG("alloc %d: %s", o, odsm_strerror(ret));
			buf = odsm_ptr(cc[o]);
			if (o != O_BOX)
				c_fill(buf, obj_size(o), HOME, o);
			ASSERT_EQ(0, c_put(HOME, W_CC + o, cc[o]));
		}
	}
	ASSERT_EQ(0, c_dir_wait(HOME, SECS));
	ASSERT_EQ(0, c_barrier(HOME, B_CC_TEST(test, 0), C.nodes, SECS));
	for (o = 0; o < NR_OBJ; o++)
		ASSERT_EQ(0, c_get(HOME, W_CC + o, &cc[o]));
	if (C.self != USER)
		return false;
	fd = odsm_rt.fd;
	fd2 = open(ODSM_DEVICE_PATH, O_RDWR);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, c_set_knob("cache_budget_bytes", MiB(64)));
	ASSERT_EQ(0, c_set_knob("lazy_threshold", MiB(1)));
	ASSERT_EQ(0, c_set_knob("readahead_pages", 16));
	return true;
}

static void finish(struct __test_metadata *_metadata, unsigned int test)
{
	if (C.self == USER)
		close(fd2);
	ASSERT_EQ(0, c_barrier(HOME, B_CC_TEST(test, 1), C.nodes, SECS));
}

#define CC_TEST(name, n)						\
static void name##_body(struct __test_metadata *_metadata);		\
TEST(name)								\
{									\
	C_BEGIN();							\
	if (start(_metadata, n))					\
		name##_body(_metadata);					\
	finish(_metadata, n);						\
}									\
static void name##_body(struct __test_metadata *_metadata)

static void hit_miss_return_body(struct __test_metadata *_metadata);

TEST(hit_miss_return)
{
	uint64_t rx0;

	C_BEGIN();
	/* read before the first barrier: USER borrows only after it */
	rx0 = c_stat("served_in_rx");
	if (start(_metadata, 0))
		hit_miss_return_body(_metadata);
	finish(_metadata, 0);
	if (C.self != HOME)
		return;
	/* FETCH is quick: served in the receiver where it may send */
	if (C.transport == ODSM_TRANSPORT_RDMA) {
		EXPECT_LE(rx0 + 2, c_stat("served_in_rx"));
	} else {
		EXPECT_EQ(rx0, c_stat("served_in_rx"));
	}
}

static void hit_miss_return_body(struct __test_metadata *_metadata)
{
	uint64_t hits, misses, returns, fetched, moved, cq, overlapped;
	struct odsm_borrow b, b2;

	/* this thread's calls are the only ones of this node from here */
	cq = c_stat("replies_in_cq");
	hits = c_stat("borrow_hits");
	misses = c_stat("borrow_misses");
	returns = c_stat("borrow_returns");
	fetched = c_stat("bytes_fetched");
	ASSERT_EQ(0, borrow(fd, cc[O_TINY], &b));
	EXPECT_EQ((unsigned int)ODSM_BORROWED_MISS, b.result);
	EXPECT_EQ(512U, b.size);
	EXPECT_TRUE(odsm_is_local(b.addr));
	EXPECT_EQ(-1, c_check((uint8_t *)(uintptr_t)b.addr, 512, HOME, O_TINY));
	EXPECT_EQ(misses + 1, c_stat("borrow_misses"));
	EXPECT_EQ(fetched + 512, c_stat("bytes_fetched"));
	/* the copy is the cache's: not the caller's to free or move */
	EXPECT_EQ(-EINVAL, odsm_free(b.addr));
	moved = b.addr;
	EXPECT_EQ(-EINVAL, odsm_move(&moved));
	/* the same version again, from another file: a hit, no transfer */
	ASSERT_EQ(0, borrow(fd2, cc[O_TINY], &b2));
	EXPECT_EQ((unsigned int)ODSM_BORROWED_HIT, b2.result);
	EXPECT_EQ(b.addr, b2.addr);
	EXPECT_EQ(hits + 1, c_stat("borrow_hits"));
	EXPECT_EQ(fetched + 512, c_stat("bytes_fetched"));
	/* another color is another version: another copy */
	ASSERT_EQ(0, borrow(fd, cc[O_TINY] + (1ULL << ODSM_COLOR_SHIFT), &b2));
	EXPECT_EQ((unsigned int)ODSM_BORROWED_MISS, b2.result);
	EXPECT_NE(b.addr, b2.addr);
	EXPECT_EQ(0, give_back(fd, cc[O_TINY] + (1ULL << ODSM_COLOR_SHIFT)));
	/* references belong to files */
	EXPECT_EQ(0, give_back(fd2, cc[O_TINY]));
	EXPECT_EQ(-ENOENT, give_back(fd2, cc[O_TINY]));
	EXPECT_EQ(0, give_back(fd, cc[O_TINY]));
	EXPECT_EQ(-ENOENT, give_back(fd, cc[O_TINY]));
	EXPECT_EQ(returns + 3, c_stat("borrow_returns"));
	/* a multi-block object under the lazy threshold: eager, whole */
	ASSERT_EQ(0, borrow(fd, cc[O_MID], &b));
	EXPECT_EQ(KiB(100), b.size);
	EXPECT_EQ(-1, c_check((uint8_t *)(uintptr_t)b.addr, KiB(100), HOME, O_MID));
	EXPECT_EQ(0, give_back(fd, cc[O_MID]));
	/*
	 * Past its first FETCH (16 KiB), an eager copy comes by chunks of
	 * 256 KiB, up to 4 in flight: 884 KiB are 4 chunks, 3 of them sent
	 * while the first was out.  Every byte in its place.
	 */
	overlapped = c_stat("fetch_chunks_overlapped");
	ASSERT_EQ(0, borrow(fd, cc[O_BIG], &b));
	EXPECT_EQ(KiB(900), b.size);
	EXPECT_EQ(-1, c_check((uint8_t *)(uintptr_t)b.addr, KiB(900), HOME, O_BIG));
	EXPECT_EQ(overlapped + 3, c_stat("fetch_chunks_overlapped"));
	EXPECT_EQ(0, give_back(fd, cc[O_BIG]));
	/*
	 * The FETCH replies of these misses reached their caller from the
	 * RDMA completion handler, not through the receiver thread; each
	 * one that came while a message waited for the thread (a PING) went
	 * through it, so of several, at least one.
	 */
	if (C.transport == ODSM_TRANSPORT_RDMA) {
		EXPECT_LE(cq + 1, c_stat("replies_in_cq"));
	} else {
		EXPECT_EQ(cq, c_stat("replies_in_cq"));
	}
	/* what is refused */
	EXPECT_EQ(-EINVAL, borrow(fd, cc[O_TINY] + 16, &b));	/* not a start */
	EXPECT_EQ(-EINVAL, borrow(fd, cc[O_TINY] + 8, &b));	/* misaligned */
	EXPECT_EQ(-EINVAL, borrow(fd, C.in.heap_base - 4096, &b));
	memset(&b, 0, sizeof(b));
	b.gaddr = cc[O_TINY];
	b.flags = 1;
	EXPECT_EQ(-1, ioctl(fd, ODSM_IOC_BORROW, &b));
	EXPECT_EQ(EINVAL, errno);
}

CC_TEST(budget_eviction, 1)
{
	struct odsm_borrow b, b2;
	uint64_t evict;
	int o;

	/* start empty: a budget of 0 keeps nothing idle */
	ASSERT_EQ(0, c_set_knob("cache_budget_bytes", 0));
	EXPECT_EQ(0U, c_stat("cache_entries"));
	ASSERT_EQ(0, c_set_knob("cache_budget_bytes", MiB(64)));
	evict = c_stat("cache_evictions");
	for (o = O_SMALL0; o < NR_OBJ; o++) {
		ASSERT_EQ(0, borrow(fd, cc[o], &b));
		ASSERT_EQ(0, give_back(fd, cc[o]));
	}
	EXPECT_GE(c_stat("cache_bytes"), NR_SMALL * SMALL_SIZE);
	/* hold the first; a budget of 2 objects evicts the oldest others */
	ASSERT_EQ(0, borrow(fd, cc[O_SMALL0], &b));
	EXPECT_EQ((unsigned int)ODSM_BORROWED_HIT, b.result);
	ASSERT_EQ(0, c_set_knob("cache_budget_bytes", 2 * SMALL_SIZE));
	EXPECT_LE(c_stat("cache_bytes"), 2 * SMALL_SIZE);
	EXPECT_EQ(evict + NR_SMALL - 2, c_stat("cache_evictions"));
	/* the newest idle one survived, the oldest did not */
	ASSERT_EQ(0, borrow(fd, cc[NR_OBJ - 1], &b2));
	EXPECT_EQ((unsigned int)ODSM_BORROWED_HIT, b2.result);
	EXPECT_EQ(0, give_back(fd, cc[NR_OBJ - 1]));
	ASSERT_EQ(0, borrow(fd, cc[O_SMALL0 + 1], &b2));
	EXPECT_EQ((unsigned int)ODSM_BORROWED_MISS, b2.result);
	EXPECT_EQ(0, give_back(fd, cc[O_SMALL0 + 1]));
	/* nothing idle may stay; the referenced copy does, intact */
	ASSERT_EQ(0, c_set_knob("cache_budget_bytes", 0));
	EXPECT_EQ(1U, c_stat("cache_entries"));
	EXPECT_EQ(-1, c_check((uint8_t *)(uintptr_t)b.addr, SMALL_SIZE, HOME,
			      O_SMALL0));
	EXPECT_EQ(0, give_back(fd, cc[O_SMALL0]));
	EXPECT_EQ(0U, c_stat("cache_entries"));
	EXPECT_EQ(0U, c_stat("cache_bytes"));
}

CC_TEST(shrinker, 2)
{
	struct odsm_borrow b, b2;
	uint64_t shrunk;
	int o, dc;

	ASSERT_EQ(0, c_set_knob("cache_budget_bytes", MiB(64)));
	for (o = O_SMALL0; o < NR_OBJ; o++) {
		ASSERT_EQ(0, borrow(fd, cc[o], &b));
		if (o != O_SMALL0)
			ASSERT_EQ(0, give_back(fd, cc[o]));
	}
	EXPECT_EQ((uint64_t)NR_SMALL, c_stat("cache_entries"));
	shrunk = c_stat("cache_shrunk");
	/* every shrinker of the kernel is asked to free all it can */
	dc = open("/proc/sys/vm/drop_caches", O_WRONLY);
	ASSERT_LE(0, dc);
	ASSERT_EQ(2, write(dc, "2\n", 2));
	close(dc);
	/* the reaper frees the slots in the background */
	for (o = 0; o < 100 && c_stat("cache_entries") > 1; o++)
		c_sleep_ms(20);
	EXPECT_EQ(1U, c_stat("cache_entries"));
	EXPECT_EQ(shrunk + NR_SMALL - 1, c_stat("cache_shrunk"));
	ASSERT_EQ(0, borrow(fd, cc[O_SMALL0], &b2));
	EXPECT_EQ((unsigned int)ODSM_BORROWED_HIT, b2.result);
	EXPECT_EQ(-1, c_check((uint8_t *)(uintptr_t)b2.addr, SMALL_SIZE, HOME,
			      O_SMALL0));
	EXPECT_EQ(0, give_back(fd, cc[O_SMALL0]));
	EXPECT_EQ(0, give_back(fd, cc[O_SMALL0]));
}

CC_TEST(lazy_fetch, 3)
{
	uint64_t fetched, evict, lazyf, lazyp, at, k;
	const volatile uint8_t *p;
	struct odsm_borrow b;

	fetched = c_stat("bytes_fetched");
	lazyf = c_stat("lazy_faults");
	lazyp = c_stat("lazy_pages");
	evict = c_stat("cache_evictions");
	ASSERT_EQ(0, borrow(fd, cc[O_LAZY], &b));
	EXPECT_EQ((unsigned int)ODSM_BORROWED_MISS, b.result);
	EXPECT_EQ(LAZY_SIZE, b.size);
	/* only the first small fetch that learns the size */
	EXPECT_GE(fetched + KiB(4), c_stat("bytes_fetched"));
	p = (const uint8_t *)(uintptr_t)b.addr;
	at = MiB(2) + 5;
	EXPECT_EQ(c_pat(HOME, O_LAZY, at), p[at]);
	EXPECT_EQ(lazyf + 1, c_stat("lazy_faults"));
	EXPECT_EQ(lazyp + 16, c_stat("lazy_pages"));
	EXPECT_GE(fetched + KiB(4) + KiB(64), c_stat("bytes_fetched"));
	/* the window read ahead is there: no fault for it */
	for (k = MiB(2); k < MiB(2) + KiB(64); k += 4096)
		EXPECT_EQ(c_pat(HOME, O_LAZY, k), p[k]);
	EXPECT_EQ(lazyf + 1, c_stat("lazy_faults"));
	/* every byte */
	EXPECT_EQ(-1, c_check((const uint8_t *)p, LAZY_SIZE, HOME, O_LAZY));
	EXPECT_EQ(lazyp + LAZY_SIZE / 4096, c_stat("lazy_pages"));
	EXPECT_EQ(lazyf + LAZY_SIZE / KiB(64), c_stat("lazy_faults"));
	/* a lazy copy is kept only while borrowed */
	EXPECT_EQ(0, give_back(fd, cc[O_LAZY]));
	EXPECT_EQ(evict + 1, c_stat("cache_evictions"));
}

/* on HOME, after the test: see home_sees_take_and_write_back */
CC_TEST(take_and_write_back, 4)
{
	struct odsm_write_back w;
	struct odsm_borrow_mut m;
	struct odsm_borrow b;
	uint64_t fetched;

	ASSERT_EQ(0, borrow(fd, cc[O_TAKE], &b));
	ASSERT_EQ(0, give_back(fd, cc[O_TAKE]));
	fetched = c_stat("bytes_fetched");
	memset(&m, 0, sizeof(m));
	m.gaddr = cc[O_TAKE];
	ASSERT_EQ(0, ioctl(fd, ODSM_IOC_BORROW_MUT, &m));
	EXPECT_EQ((unsigned int)ODSM_BORROWED_TAKEN, m.result);
	EXPECT_EQ(fetched, c_stat("bytes_fetched"));
	EXPECT_TRUE(odsm_is_local(m.new_gaddr));
	EXPECT_EQ(-1, c_check(odsm_ptr(m.new_gaddr), KiB(4), HOME, O_TAKE));
	memset(&w, 0, sizeof(w));
	w.owner = odsm_addr_of(cc[O_BOX]);
	w.g = 0x1234000000000010ULL;
	w.ext = 1;
	ASSERT_EQ(0, ioctl(fd, ODSM_IOC_WRITE_BACK, &w));
	w.owner += 8;	/* a box is 16-byte aligned */
	EXPECT_EQ(-1, ioctl(fd, ODSM_IOC_WRITE_BACK, &w));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, odsm_free(m.new_gaddr));
	/* the asynchronous free of the original reaches the home first */
	c_sleep_ms(500);
}

/* HOME: the mutable borrow freed the original, WRITE_BACK stored the box */
TEST(home_sees_take_and_write_back)
{
	struct odsm_obj_info oi;
	uint64_t box[2];

	C_BEGIN();
	/* test 5 has no CC_TEST: its ids, B_CC + 10 and + 11, are free */
	ASSERT_EQ(0, c_barrier(HOME, B_CC_TEST(5, 0), C.nodes, SECS));
	if (C.self != HOME)
		return;
	ASSERT_EQ(0, c_get(HOME, W_CC + O_TAKE, &cc[O_TAKE]));
	ASSERT_EQ(0, c_get(HOME, W_CC + O_BOX, &cc[O_BOX]));
	EXPECT_EQ(-ESTALE, odsm_obj_info(cc[O_TAKE], &oi));	/* freed */
	memcpy(box, odsm_ptr(cc[O_BOX]), sizeof(box));
	EXPECT_EQ(0x1234000000000010ULL, box[0]);
	EXPECT_EQ(1ULL, box[1]);
}

/* ---- slots_protected ---------------------------------------------------- */

#define SP_RANGE	8		/* slab slots either side of the first */

static struct {
	uint64_t target[2 * SP_RANGE + 1];	/* where copies may land */
	int nr;
	volatile int stop;
	uint64_t tries, freed, moved;
} sp;

/*
 * Free and move the addresses where the cache puts its copies, at the
 * highest color (which the allocator's color check lets through for any
 * live object there), as fast as we can.  No call may succeed: the
 * targets held no object when the test began, and only the cache
 * allocates in this partition while it runs.
 */
static void *slot_attacker(void *arg)
{
	struct odsm_move mv;
	struct odsm_free f;

	uint64_t a;
	int k;

	(void)arg;
	while (!sp.stop) {
		for (k = 0; k < sp.nr; k++) {
			a = sp.target[k];
			memset(&f, 0, sizeof(f));
			f.gaddr = a | (0xffffULL << ODSM_COLOR_SHIFT);
			if (!ioctl(fd, ODSM_IOC_FREE, &f))
				sp.freed++;
			memset(&mv, 0, sizeof(mv));
			mv.gaddr = a | (0xffffULL << ODSM_COLOR_SHIFT);
			if (!ioctl(fd, ODSM_IOC_MOVE, &mv))
				sp.moved++;
			sp.tries++;
		}
	}
	return NULL;
}

CC_TEST(slots_protected, 6)
{
	uint64_t t0, rounds = 0, bad = 0, a;
	struct odsm_obj_info oi;
	struct odsm_borrow b;
	pthread_t th;
	int k;

	/* every return evicts the copy, the reaper frees its slab slot,
	 * and the next miss allocates one again, mostly the same (a 32 KiB
	 * object takes two FETCHes: the slot is allocated a round trip
	 * before the copy is indexed)
	 */
	ASSERT_EQ(0, c_set_knob("cache_budget_bytes", 0));
	ASSERT_EQ(0, borrow(fd, cc[O_SMALL0], &b));
	ASSERT_EQ(0, give_back(fd, cc[O_SMALL0]));
	/* that slot and its neighbours, unless a program's object is there
	 * (no copy is: a budget of 0 keeps none)
	 */
	sp.nr = 0;
	for (k = -SP_RANGE; k <= SP_RANGE; k++) {
		a = b.addr + k * (int64_t)SMALL_SIZE;
		if (odsm_in_heap(a) && odsm_obj_info(a, &oi) != 0)
			sp.target[sp.nr++] = a;
	}
	sp.stop = 0;
	ASSERT_EQ(0, pthread_create(&th, NULL, slot_attacker, NULL));
	t0 = c_now_ms();
	while (c_now_ms() - t0 < 4000 && !sp.freed && !sp.moved) {
		if (borrow(fd, cc[O_SMALL0], &b))
			continue;
		rounds++;
		if (c_check((uint8_t *)(uintptr_t)b.addr, SMALL_SIZE, HOME,
			    O_SMALL0) != -1)
			bad++;
		give_back(fd, cc[O_SMALL0]);
	}
	sp.stop = 1;
	pthread_join(th, NULL);
	/* the later programs keep idle copies again (drop_copies needs one) */
	EXPECT_EQ(0, c_set_knob("cache_budget_bytes", MiB(64)));
	TH_LOG("%llu borrows, %llu frees and moves tried",
	       (unsigned long long)rounds, (unsigned long long)sp.tries);
	EXPECT_EQ(0ULL, sp.freed);
	EXPECT_EQ(0ULL, sp.moved);
	EXPECT_EQ(0ULL, bad);
	EXPECT_LT(0ULL, rounds);
	EXPECT_LT(0ULL, sp.tries);
}

/* ---- peer_write_refused ----------------------------------------------- */

#define W_COPY		(W_CC + NR_OBJ)	/* USER's copy of O_SMALL0, for HOME */

TEST(peer_write_refused)
{
	uint64_t refused0 = 0, a = 0, old;
	struct odsm_borrow b;
	uint8_t junk[64];

	C_BEGIN();
	ASSERT_EQ(0, c_dir_wait(HOME, SECS));
	if (C.self == USER) {
		ASSERT_EQ(0, c_get(HOME, W_CC + O_SMALL0, &cc[O_SMALL0]));
		refused0 = c_stat("copy_writes_refused");
		ASSERT_EQ(0, borrow(odsm_rt.fd, cc[O_SMALL0], &b));
		ASSERT_EQ(0, c_put(HOME, W_COPY, b.addr));
	}
	ASSERT_EQ(0, c_barrier(HOME, B_PW, C.nodes, SECS));
	if (C.self == HOME) {
		ASSERT_EQ(0, c_get(HOME, W_COPY, &a));
		memset(junk, 0xa5, sizeof(junk));
		/* the copy's first bytes, and bytes inside it */
		EXPECT_EQ(-EINVAL, odsm_write(a, junk, sizeof(junk)));
		EXPECT_EQ(-EINVAL, odsm_write(a + KiB(8), junk, sizeof(junk)));
		EXPECT_EQ(-EINVAL, odsm_fetch_add(a + 64, 1, &old));
	}
	ASSERT_EQ(0, c_barrier(HOME, B_PW + 1, C.nodes, SECS));
	if (C.self == USER) {
		EXPECT_EQ(refused0 + 3, c_stat("copy_writes_refused"));
		EXPECT_EQ(-1, c_check((uint8_t *)(uintptr_t)b.addr, SMALL_SIZE,
				      HOME, O_SMALL0));
		EXPECT_EQ(0, give_back(odsm_rt.fd, cc[O_SMALL0]));
	}
	ASSERT_EQ(0, c_barrier(HOME, B_PW + 2, C.nodes, SECS));
}

/* ---- home_rejoin ------------------------------------------------------- */

#define RIG_KEY		"/tmp/odsm.key"	/* where the cluster scenario put it */
/*
 * Counts the nodes other than HOME that are done with HOME until it
 * leaves: USER once it has its idle copy, any other once it has seen
 * HOME's directory.  HOME leaves when all of them are.
 */
#define W_RJ_READY	(W_CC + NR_OBJ + 1)
#define RIG_PORT	7100

/* HOME's state as USER sees it becomes want, within secs */
static int wait_home(unsigned int want, unsigned int secs)
{
	unsigned int st[ODSM_MAX_NODES];
	uint64_t t0 = c_now_ms();

	while (c_now_ms() - t0 < secs * 1000ULL) {
		if (!c_states(st, C.nodes) && st[HOME] == want)
			return 0;
		c_sleep_ms(20);
	}
	return -ETIMEDOUT;
}

/*
 * Leave, stay away for ms, join again as the scenario did, with its
 * heartbeat and timeout: the module's defaults (200 / 2000 ms) are what
 * rig.timeout_ms=5000 is there to avoid under TCG, and would hold for
 * every later program on this node.
 */
static int leave_and_rejoin(unsigned int ms)
{
	struct odsm_node_addr nodes[ODSM_MAX_NODES];
	uint8_t key[ODSM_KEY_MAX];
	unsigned int k;
	ssize_t n;
	int kf, ret;

	kf = open(RIG_KEY, O_RDONLY);
	if (kf < 0)
		return -errno;
	n = read(kf, key, sizeof(key));
	close(kf);
	if (n < ODSM_KEY_MIN)
		return -EINVAL;
	memset(nodes, 0, sizeof(nodes));
	for (k = 0; k < C.nodes; k++) {	/* node K: 10.0.0.(K+1) */
		nodes[k].ipv4 = htonl(0x0a000001 + k);
		nodes[k].port = RIG_PORT;
	}
	ret = odsm_leave();
	if (ret)
		return ret;
	c_sleep_ms(ms);
	return odsm_join(C.transport, nodes, C.nodes, key, n,
			 c_env_uint("ODSM_HEARTBEAT_MS", 0), C.timeout_ms);
}

TEST(home_rejoin)
{
	uint64_t t0, misses;
	struct odsm_borrow b;
	int ret;

	C_BEGIN();
	if (access(RIG_KEY, R_OK))
		SKIP(return, "no %s: not the rig's cluster scenario", RIG_KEY);
	ASSERT_EQ(0, c_dir_wait(HOME, SECS));
	if (C.self == USER) {
		ASSERT_EQ(0, c_set_knob("cache_budget_bytes", MiB(64)));
		ASSERT_EQ(0, c_get(HOME, W_CC + O_TINY, &cc[O_TINY]));
		ASSERT_EQ(0, borrow(odsm_rt.fd, cc[O_TINY], &b));
		ASSERT_EQ(0, give_back(odsm_rt.fd, cc[O_TINY]));
		/* an idle copy, served while its home is up */
		ASSERT_EQ(0, borrow(odsm_rt.fd, cc[O_TINY], &b));
		EXPECT_EQ((unsigned int)ODSM_BORROWED_HIT, b.result);
		ASSERT_EQ(0, give_back(odsm_rt.fd, cc[O_TINY]));
	}
	/*
	 * Not a barrier: HOME leaves at once, and a barrier's last poll of
	 * HOME's word could find it gone.  Every other node counts itself
	 * in, so that HOME waits also for a third node still on its way to
	 * the c_dir_wait() above, which HOME's leave would fail (-EHOSTDOWN).
	 */
	if (C.self != HOME)
		ASSERT_EQ(0, odsm_fetch_add(c_word(HOME, W_RJ_READY), 1, NULL));
	if (C.self == HOME) {
		ASSERT_EQ(0, c_poll(HOME, W_RJ_READY, C.nodes - 1, 20, NULL));
		ASSERT_EQ(0, leave_and_rejoin(3000));
	} else if (C.self == USER) {
		ASSERT_EQ(0, wait_home(ODSM_PEER_DOWN, 10));
		ret = borrow(odsm_rt.fd, cc[O_TINY], &b);
		EXPECT_EQ(-EHOSTDOWN, ret) {
			TH_LOG("a copy of a home that is down was served: %s",
			       ret ? odsm_strerror(ret) : "hit");
		}
		if (!ret)
			give_back(odsm_rt.fd, cc[O_TINY]);
		ASSERT_EQ(0, wait_home(ODSM_PEER_UP, 15));
		/* the new incarnation's handshake forgot the copy */
		misses = c_stat("borrow_misses");
		t0 = c_now_ms();
		ASSERT_EQ(0, borrow(odsm_rt.fd, cc[O_TINY], &b));
		EXPECT_EQ((unsigned int)ODSM_BORROWED_MISS, b.result);
		EXPECT_EQ(misses + 1, c_stat("borrow_misses"));
		EXPECT_EQ(-1, c_check((uint8_t *)(uintptr_t)b.addr, 512, HOME,
				      O_TINY));
		EXPECT_EQ(0, give_back(odsm_rt.fd, cc[O_TINY]));
		TH_LOG("borrow after the re-join: %llu ms",
		       (unsigned long long)(c_now_ms() - t0));
	} else {
		/* the barrier below is on HOME: not before it is back */
		ASSERT_EQ(0, wait_home(ODSM_PEER_DOWN, 10));
		ASSERT_EQ(0, wait_home(ODSM_PEER_UP, 15));
	}
	/* every node sees every peer up again before the next program
	 * (within the harness's 30 s for the whole test)
	 */
	ASSERT_EQ(0, c_barrier(HOME, B_RJ, C.nodes, 20));
}

/* A borrow of cg that must miss, its bytes c_fill(.., a, b)'s, returned. */
static void miss_sized(struct __test_metadata *_metadata, uint64_t cg,
		       uint32_t size, unsigned int a, unsigned int b)
{
	struct odsm_borrow br;

	ASSERT_EQ(0, borrow(odsm_rt.fd, cg, &br));
	EXPECT_EQ((unsigned int)ODSM_BORROWED_MISS, br.result);
	EXPECT_EQ((uint64_t)size, br.size);
	EXPECT_EQ(-1, c_check((uint8_t *)(uintptr_t)br.addr, size, a, b))
		TH_LOG("a miss of %u bytes", size);
	ASSERT_EQ(0, give_back(odsm_rt.fd, cg));
}

static void miss_check(struct __test_metadata *_metadata, uint64_t cg,
		       unsigned int a, unsigned int b)
{
	miss_sized(_metadata, cg, 512, a, b);
}

/* USER's objects of size bytes on HOME, written with c_fill(.., HOME, tag). */
static uint64_t home_obj_of(struct __test_metadata *_metadata, uint32_t size,
			    unsigned int tag)
{
	uint8_t *buf = malloc(size);
	uint64_t cg = 0;

	EXPECT_NE(NULL, buf);
	if (!buf)
		return 0;
	c_fill(buf, size, HOME, tag);
	EXPECT_EQ(0, odsm_alloc_on(HOME, size, 0, 0, &cg));
	EXPECT_EQ(0, odsm_write(cg, buf, size));
	free(buf);
	return cg;
}

static uint64_t home_obj(struct __test_metadata *_metadata, unsigned int tag)
{
	return home_obj_of(_metadata, 512, tag);
}

/*
 * The one-sided tests: USER alone, with every borrow a miss
 * (cache_budget_bytes 0), copies of 1 MiB and more filled lazily; os: may
 * a miss go one-sided here?
 */
#define MISSES_BEGIN(os) do { \
	C_BEGIN(); \
	if (C.self != USER) \
		return; \
	(os) = C.transport == ODSM_TRANSPORT_RDMA && c_param_on("onesided"); \
	ASSERT_EQ(0, c_set_knob("cache_budget_bytes", 0)); \
	ASSERT_EQ(0, c_set_knob("lazy_threshold", MiB(1))); \
} while (0)

/*
 * onesided_miss (USER alone, after the others' last test): every borrow
 * misses (cache_budget_bytes 0).  Over RDMA with one-sided access on, a
 * miss of an object the home sent a copy of before reads it one-sided
 * (onesided_copies): its bytes and its published word after them, the
 * word before them known from the FETCH (onesided_copy_known); a miss
 * without a known word (or with onesided_known off) reads it before the
 * bytes too.
 *  - the first miss of an object is a FETCH (it sets the copied mark);
 *    every later one is one-sided, with the right bytes, and makes its
 *    copy in the pages the last one's free kept (no page allocated);
 *  - a never-copied object in a block whose class is known: the word says
 *    no (onesided_copy_refused), the FETCH gives the bytes;
 *  - the object freed and its slot reused by a new object: the old
 *    colored address is -ESTALE (the words refuse it, though the old
 *    word is known: the word after the bytes is the new object's; the
 *    FETCH says why), the new object's bytes come right, one-sided from
 *    its second miss on, with its own word known from its FETCH;
 *  - a pointer bumped past the allocation color (a written box's): its
 *    word is known from its FETCH as well;
 * Over TCP (or one-sided off) nothing goes one-sided, the bytes are the
 * same.
 */
TEST(onesided_miss)
{
	uint64_t c0, k0, r0, c1, k1, p0, cg, cg2, cg3 = 0, bumped, extra[256];
	struct odsm_borrow br;
	unsigned int i, n;
	bool os;

	MISSES_BEGIN(os);
	cg = home_obj(_metadata, 1);
	cg2 = home_obj(_metadata, 2);
	c0 = c_stat("onesided_copies");
	k0 = c_stat("onesided_copy_known");

	miss_check(_metadata, cg, HOME, 1);		/* the first: a FETCH */
	EXPECT_EQ(c0, c_stat("onesided_copies"));
	p0 = c_stat("page_allocs");
	for (i = 0; i < 8; i++)
		miss_check(_metadata, cg, HOME, 1);
	EXPECT_EQ(c0 + (os ? 8 : 0), c_stat("onesided_copies"));
	/* each copy made where the last one was freed, in pages kept */
	EXPECT_EQ(p0, c_stat("page_allocs"));
	/* the word before the bytes known from the FETCH */
	EXPECT_EQ(k0 + (os ? 8 : 0), c_stat("onesided_copy_known"));

	/* never copied: refused by its word if in the same block */
	r0 = c_stat("onesided_copy_refused");
	miss_check(_metadata, cg2, HOME, 2);
	if (os && (cg2 >> 16) == (cg >> 16))
		EXPECT_EQ(r0 + 1, c_stat("onesided_copy_refused"));
	miss_check(_metadata, cg2, HOME, 2);
	EXPECT_EQ(c0 + (os ? 9 : 0), c_stat("onesided_copies"));
	EXPECT_EQ(k0 + (os ? 9 : 0), c_stat("onesided_copy_known"));

	/* freed, and its slot taken by a new object (the slab's search
	 * goes on from a hint: at most a slab's 128 slots)
	 */
	ASSERT_EQ(0, odsm_free(cg));
	for (n = 0; n < 256; n++) {
		extra[n] = home_obj(_metadata, 3);
		if (odsm_addr_of(extra[n]) == odsm_addr_of(cg))
			break;
	}
	ASSERT_LT(n, 256U);
	cg3 = extra[n];
	while (n--)
		EXPECT_EQ(0, odsm_free(extra[n]));
	EXPECT_NE(odsm_color_of(cg), odsm_color_of(cg3));
	/* the old word is known, but the word after the bytes is cg3's */
	r0 = c_stat("onesided_copy_refused");
	EXPECT_EQ(-ESTALE, borrow(odsm_rt.fd, cg, &br));
	EXPECT_EQ(r0 + (os ? 1 : 0), c_stat("onesided_copy_refused"));
	miss_check(_metadata, cg3, HOME, 3);		/* a FETCH again */
	EXPECT_EQ(c0 + (os ? 9 : 0), c_stat("onesided_copies"));
	miss_check(_metadata, cg3, HOME, 3);		/* cg3's word known */
	EXPECT_EQ(c0 + (os ? 10 : 0), c_stat("onesided_copies"));
	EXPECT_EQ(k0 + (os ? 10 : 0), c_stat("onesided_copy_known"));
	miss_check(_metadata, cg3, HOME, 3);
	EXPECT_EQ(c0 + (os ? 11 : 0), c_stat("onesided_copies"));
	EXPECT_EQ(k0 + (os ? 11 : 0), c_stat("onesided_copy_known"));
	if (os) {	/* onesided_known off: both words read, same bytes */
		ASSERT_EQ(0, c_set_param("onesided_known", false));
		miss_check(_metadata, cg3, HOME, 3);
		miss_check(_metadata, cg3, HOME, 3);
		EXPECT_EQ(0, c_set_param("onesided_known", true));
		EXPECT_EQ(c0 + 13, c_stat("onesided_copies"));
		EXPECT_EQ(k0 + 11, c_stat("onesided_copy_known"));
	}
	if (!os)
		EXPECT_EQ(c0, c_stat("onesided_copies"));

	/*
	 * A pointer bumped past the allocation color, as a written box's:
	 * its word is known too, from the FETCH (of the allocation color,
	 * read through this pointer), so every later miss leaves out the
	 * read before the bytes.
	 */
	bumped = home_obj(_metadata, 4) + (1ULL << ODSM_COLOR_SHIFT);
	miss_check(_metadata, bumped, HOME, 4);		/* a FETCH */
	c1 = c_stat("onesided_copies");
	k1 = c_stat("onesided_copy_known");
	for (i = 0; i < 3; i++)
		miss_check(_metadata, bumped, HOME, 4);
	EXPECT_EQ(c1 + (os ? 3 : 0), c_stat("onesided_copies"));
	EXPECT_EQ(k1 + (os ? 3 : 0), c_stat("onesided_copy_known"));
	EXPECT_EQ(0, odsm_free(bumped - (1ULL << ODSM_COLOR_SHIFT)));

	EXPECT_EQ(0, odsm_free(cg2));
	EXPECT_EQ(0, odsm_free(cg3));
	ASSERT_EQ(0, c_set_knob("cache_budget_bytes", MiB(64)));
	TH_LOG("%s: %llu misses read one-sided, %llu refused", os ?
	       "one-sided" : "no one-sided path",
	       (unsigned long long)(c_stat("onesided_copies") - c0),
	       (unsigned long long)(c_stat("onesided_copy_refused") - r0));
}

/*
 * kept_blocks (USER alone, every copy evicted on its return): the free of
 * a copy that empties its slab block keeps the block's pages for the next
 * copy (kept_blocks); memory short (every shrinker asked: drop_caches)
 * gives them back, through the cache's reaper, and so does DROP_COPIES,
 * at once (kept_dropped, page_frees).  Over both transports: the cache's
 * own, as the budget is.
 */
static void drop_copies_now(struct __test_metadata *_metadata)
{
	struct odsm_drop_copies d = { 0 };

	ASSERT_EQ(0, ioctl(odsm_rt.fd, ODSM_IOC_DROP_COPIES, &d));
}

TEST(kept_blocks)
{
	uint64_t cg, f0, k0;
	bool os;
	int dc, i;

	MISSES_BEGIN(os);
	TH_LOG("misses %s one-sided", os ? "may go" : "do not go");
	cg = home_obj(_metadata, 7);
	drop_copies_now(_metadata);
	ASSERT_EQ(0U, c_stat("kept_blocks"));
	miss_check(_metadata, cg, HOME, 7);
	ASSERT_EQ(0U, c_stat("cache_entries"));
	ASSERT_EQ(1U, c_stat("kept_blocks"));
	f0 = c_stat("page_frees");
	k0 = c_stat("kept_dropped");
	dc = open("/proc/sys/vm/drop_caches", O_WRONLY);
	ASSERT_LE(0, dc);
	ASSERT_EQ(2, write(dc, "2\n", 2));
	close(dc);
	/* the reaper gives it back in the background, then counts it */
	for (i = 0; i < 100 && c_stat("kept_dropped") == k0; i++)
		c_sleep_ms(20);
	EXPECT_EQ(k0 + 1, c_stat("kept_dropped"));
	EXPECT_EQ(0U, c_stat("kept_blocks"));
	EXPECT_LT(f0, c_stat("page_frees"));

	/* kept again by the next miss's free; DROP_COPIES, at once */
	miss_check(_metadata, cg, HOME, 7);
	ASSERT_EQ(1U, c_stat("kept_blocks"));
	f0 = c_stat("page_frees");
	k0 = c_stat("kept_dropped");
	drop_copies_now(_metadata);
	EXPECT_EQ(0U, c_stat("kept_blocks"));
	EXPECT_EQ(k0 + 1, c_stat("kept_dropped"));
	EXPECT_LT(f0, c_stat("page_frees"));
	EXPECT_EQ(0, odsm_free(cg));
	ASSERT_EQ(0, c_set_knob("cache_budget_bytes", MiB(64)));
}

/*
 * onesided_miss_sizes (USER alone): slab objects past the cache's first
 * buffer (12 KiB) go one-sided too, whole: 12, 16, 24 and 32 KiB objects
 * (the largest slab classes), each copied once by a FETCH, then missed
 * again, one-sided over RDMA, with every byte right.
 */
TEST(onesided_miss_sizes)
{
	static const uint32_t sizes[] = { 12288, 16384, 24576, 32768 };
	uint64_t c0, k0, cg;
	unsigned int i, k;
	bool os;

	MISSES_BEGIN(os);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		cg = home_obj_of(_metadata, sizes[i], 20 + i);
		c0 = c_stat("onesided_copies");
		k0 = c_stat("onesided_copy_known");
		for (k = 0; k < 3; k++)		/* a FETCH, then one-sided */
			miss_sized(_metadata, cg, sizes[i], HOME, 20 + i);
		EXPECT_EQ(c0 + (os ? 2 : 0), c_stat("onesided_copies"))
			TH_LOG("%u bytes: %llu of 2 later misses one-sided",
			       sizes[i], (unsigned long long)(c_stat("onesided_copies") - c0));
		EXPECT_EQ(k0 + (os ? 2 : 0), c_stat("onesided_copy_known"));
		EXPECT_EQ(0, odsm_free(cg));
	}
	ASSERT_EQ(0, c_set_knob("cache_budget_bytes", MiB(64)));
}

/*
 * onesided_miss_runs (USER alone): multi-block objects (runs) under the
 * lazy threshold (1 MiB) go one-sided too, whole: a READ per block and
 * the head's word after them, known from the FETCH (onesided_run_copies;
 * past three blocks, the later blocks in operations of their own first);
 * a 1 MiB one, filled lazily, stays a FETCH.  Each copied once by a FETCH (which teaches this node its size),
 * then missed twice, every byte and the size right.  Then one is freed:
 * its head's word is not live (refused), the FETCH says -ESTALE.  (A run
 * of another size at the same head, which the allocator's rover does not
 * give a test soon, is refused by its color: pubword_test.)
 */
TEST(onesided_miss_runs)
{
	static const uint32_t sizes[] = { 40000, 65536, 100000, 196608,
					  196609, 500000, 983040, 1048576 };
	uint64_t c0, k0, r0, cg, cg2 = 0;
	struct odsm_borrow br;
	unsigned int i, k;
	bool os, one;

	MISSES_BEGIN(os);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		/* 1 MiB: the lazy threshold (MISSES_BEGIN), filled lazily */
		one = os && sizes[i] < MiB(1);
		cg = home_obj_of(_metadata, sizes[i], 30 + i);
		c0 = c_stat("onesided_run_copies");
		for (k = 0; k < 3; k++)		/* a FETCH, then one-sided */
			miss_sized(_metadata, cg, sizes[i], HOME, 30 + i);
		EXPECT_EQ(c0 + (one ? 2 : 0), c_stat("onesided_run_copies"))
			TH_LOG("%u bytes: %llu of 2 later misses one-sided",
			       sizes[i], (unsigned long long)(c_stat("onesided_run_copies") - c0));
		if (sizes[i] == 100000)
			cg2 = cg;	/* kept for the reuse below */
		else
			ASSERT_EQ(0, odsm_free(cg));
	}

	/* freed: its head's word is not live, the FETCH says -ESTALE */
	ASSERT_NE(0ULL, cg2);
	ASSERT_EQ(0, odsm_free(cg2));
	r0 = c_stat("onesided_copy_refused");
	EXPECT_EQ(-ESTALE, borrow(odsm_rt.fd, cg2, &br));
	EXPECT_EQ(r0 + (os ? 1 : 0), c_stat("onesided_copy_refused"));

	/* a run of another size: learnt from its own FETCH */
	cg = home_obj_of(_metadata, 70000, 40);
	c0 = c_stat("onesided_run_copies");
	for (k = 0; k < 3; k++) {
		miss_sized(_metadata, cg, 70000, HOME, 40);
		if (!k)
			EXPECT_EQ(c0, c_stat("onesided_run_copies"));
	}
	EXPECT_EQ(c0 + (os ? 2 : 0), c_stat("onesided_run_copies"));
	if (os) {	/* onesided_known off: the word before read too */
		k0 = c_stat("onesided_copy_known");
		ASSERT_EQ(0, c_set_param("onesided_known", false));
		miss_sized(_metadata, cg, 70000, HOME, 40);
		EXPECT_EQ(c0 + 3, c_stat("onesided_run_copies"));
		EXPECT_EQ(k0, c_stat("onesided_copy_known"));
		/* past one chain a run needs its word known: a FETCH */
		cg2 = home_obj_of(_metadata, 500000, 41);
		miss_sized(_metadata, cg2, 500000, HOME, 41);
		miss_sized(_metadata, cg2, 500000, HOME, 41);
		EXPECT_EQ(0, c_set_param("onesided_known", true));
		EXPECT_EQ(c0 + 3, c_stat("onesided_run_copies"));
		EXPECT_EQ(0, odsm_free(cg2));
	}
	EXPECT_EQ(0, odsm_free(cg));
	ASSERT_EQ(0, c_set_knob("cache_budget_bytes", MiB(64)));
}

/* ---- onesided_move ----------------------------------------------------- */

/* Move cg here (BORROW_MUT): 0 with *m filled, or -errno. */
static int move_of(uint64_t cg, struct odsm_borrow_mut *m)
{
	memset(m, 0, sizeof(*m));
	m->gaddr = cg;
	return ioctl(odsm_rt.fd, ODSM_IOC_BORROW_MUT, m) ? -errno : 0;
}

/*
 * Wait up to 3 s for the original of a move to be freed at its home (the
 * free is sent after the move, asynchronously): true once a borrow of
 * cg says -ESTALE.
 */
static bool original_gone(uint64_t cg)
{
	struct odsm_borrow br;
	unsigned int i;
	int ret;

	for (i = 0; i < 60; i++) {
		ret = borrow(odsm_rt.fd, cg, &br);
		if (ret == -ESTALE)
			return true;
		if (!ret)
			give_back(odsm_rt.fd, cg);
		c_sleep_ms(50);
	}
	return false;
}

/*
 * onesided_move (USER alone): a move (BORROW_MUT of a remote object, no
 * cached copy) of an object this node copied before reads its bytes as a
 * one-sided miss would (move_onesided): the home had marked it copied,
 * so write-backs into its boxes stay refused until the move's free.  For
 * objects of 512 B, 16 KiB (past the cache's first buffer), 192 KiB (a
 * run of three blocks) and 1 MiB (a run the size of a lazily filled copy,
 * moved whole):
 *  - one never copied moves by FETCH, with no read wasted before it (not
 *    one refused by its word); over RDMA a run's rest is read one-sided
 *    after that FETCH, which marked it copied (move_rest_onesided, a
 *    piece of up to 256 KiB each after the FETCH's first page: its
 *    blocks' keys are here, the one-sided WRITE that filled it asked);
 *  - one copied (borrowed, given back, evicted) moves one-sided over
 *    RDMA, every byte and the size right, and its original is freed at
 *    the home (a borrow of it then says -ESTALE);
 *  - so does one copied and moved through a pointer whose color was
 *    bumped past its allocation color (as a written box's is);
 *  - a copied run whose blocks have no keys here (written by requests)
 *    moves by FETCH and asks for them (KEYS_ASK), rather than a MAP per
 *    block; unless an earlier object left keys for those blocks.
 * A copied object freed at its home: the word refuses the read, the
 * FETCH says -ESTALE.  With onesided off, and over TCP, every move is a
 * FETCH, the same bytes.
 */
TEST(onesided_move)
{
	static const uint32_t sizes[] = { 512, 16384, 196608, 1048576 };
	static uint8_t raw[1048576];
	uint64_t cg, cg2, m0, r0, a0, rest0;
	struct odsm_borrow_mut m;
	struct odsm_borrow br;
	unsigned int i;
	bool os;

	MISSES_BEGIN(os);
	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		cg = home_obj_of(_metadata, sizes[i], 60 + i);
		cg2 = home_obj_of(_metadata, sizes[i], 70 + i);
		m0 = c_stat("move_onesided");
		r0 = c_stat("onesided_copy_refused");
		rest0 = c_stat("move_rest_onesided");

		/* never copied: a FETCH, nothing read before it (a run's
		 * rest one-sided after it); a raw read registers every
		 * block of it (MAP: the write's later pieces may have gone
		 * as requests) and marks nothing copied
		 */
		if (sizes[i] > KiB(32))
			ASSERT_EQ(0, odsm_read(cg, raw, sizes[i]));
		ASSERT_EQ(0, move_of(cg, &m));
		EXPECT_EQ((unsigned int)ODSM_BORROWED_MOVED, m.result);
		EXPECT_EQ((uint64_t)sizes[i], m.size);
		EXPECT_EQ(-1, c_check(odsm_ptr(m.new_gaddr), sizes[i], HOME,
				      60 + i));
		EXPECT_EQ(m0, c_stat("move_onesided"));
		EXPECT_EQ(r0, c_stat("onesided_copy_refused"));
		if (os && sizes[i] > KiB(32)) {
			/*
			 * its first piece at least (a later one may fall
			 * back to FETCHes: seen in 3 guests of 6.1)
			 */
			EXPECT_LT(rest0, c_stat("move_rest_onesided"));
			EXPECT_GE(rest0 + (sizes[i] - 4096 + KiB(256) - 1) /
					  KiB(256),
				  c_stat("move_rest_onesided"));
		} else {
			EXPECT_EQ(rest0, c_stat("move_rest_onesided"));
		}
		TH_LOG("%u bytes never copied: %llu pieces of the rest one-sided",
		       sizes[i], (unsigned long long)
				 (c_stat("move_rest_onesided") - rest0));
		EXPECT_EQ(0, odsm_free(m.new_gaddr));
		EXPECT_TRUE(original_gone(cg));

		/* copied before: one-sided */
		ASSERT_EQ(0, borrow(odsm_rt.fd, cg2, &br));
		ASSERT_EQ(0, give_back(odsm_rt.fd, cg2));
		r0 = c_stat("onesided_copy_refused");
		ASSERT_EQ(0, move_of(cg2, &m));
		EXPECT_EQ((unsigned int)ODSM_BORROWED_MOVED, m.result);
		EXPECT_EQ((uint64_t)sizes[i], m.size);
		EXPECT_TRUE(odsm_is_local(m.new_gaddr));
		EXPECT_EQ(-1, c_check(odsm_ptr(m.new_gaddr), sizes[i], HOME,
				      70 + i));
		EXPECT_EQ(m0 + (os ? 1 : 0), c_stat("move_onesided"))
			TH_LOG("%u bytes: the move of a copied object", sizes[i]);
		EXPECT_EQ(r0, c_stat("onesided_copy_refused"));
		EXPECT_EQ(0, odsm_free(m.new_gaddr));
		EXPECT_TRUE(original_gone(cg2));
		if (!os || sizes[i] <= KiB(32))
			continue;

		/* a run written by requests (a one-sided WRITE would MAP
		 * its blocks): without its blocks' keys a FETCH that asks
		 * for them, unless they are there from an earlier object
		 */
		ASSERT_EQ(0, c_set_param("onesided", false));
		cg = home_obj_of(_metadata, sizes[i], 90 + i);
		ASSERT_EQ(0, c_set_param("onesided", true));
		ASSERT_EQ(0, borrow(odsm_rt.fd, cg, &br));
		ASSERT_EQ(0, give_back(odsm_rt.fd, cg));
		m0 = c_stat("move_onesided");
		a0 = c_stat("keys_asked");
		ASSERT_EQ(0, move_of(cg, &m));
		EXPECT_EQ(-1, c_check(odsm_ptr(m.new_gaddr), sizes[i], HOME,
				      90 + i));
		if (c_stat("move_onesided") == m0) {
			/* its blocks, and as many after it for the next run
			 * (onesided_move_ahead); a part of them here already
			 * from an earlier object: the rest
			 */
			EXPECT_LT(a0, c_stat("keys_asked"));
			EXPECT_GE(a0 + 2 * (sizes[i] + KiB(64) - 1) / KiB(64),
				  c_stat("keys_asked"));
		} else {
			EXPECT_EQ(a0, c_stat("keys_asked"));
		}
		TH_LOG("%u bytes without the keys of its blocks: %s", sizes[i],
		       c_stat("move_onesided") == m0 ?
		       "a FETCH, the keys asked for" : "the keys were there");
		EXPECT_EQ(0, odsm_free(m.new_gaddr));
	}

	/* a pointer bumped past the allocation color, as a written box's */
	cg = home_obj_of(_metadata, 512, 82) + (1ULL << ODSM_COLOR_SHIFT);
	ASSERT_EQ(0, borrow(odsm_rt.fd, cg, &br));
	ASSERT_EQ(0, give_back(odsm_rt.fd, cg));
	m0 = c_stat("move_onesided");
	ASSERT_EQ(0, move_of(cg, &m));
	EXPECT_EQ(-1, c_check(odsm_ptr(m.new_gaddr), 512, HOME, 82));
	EXPECT_EQ(m0 + (os ? 1 : 0), c_stat("move_onesided"));
	EXPECT_EQ(0, odsm_free(m.new_gaddr));
	EXPECT_TRUE(original_gone(cg));

	/* copied, then freed at its home: refused by its word, -ESTALE */
	cg = home_obj_of(_metadata, 512, 80);
	ASSERT_EQ(0, borrow(odsm_rt.fd, cg, &br));
	ASSERT_EQ(0, give_back(odsm_rt.fd, cg));
	ASSERT_EQ(0, odsm_free(cg));
	m0 = c_stat("move_onesided");
	r0 = c_stat("onesided_copy_refused");
	EXPECT_EQ(-ESTALE, move_of(cg, &m));
	EXPECT_EQ(r0 + (os ? 1 : 0), c_stat("onesided_copy_refused"));
	EXPECT_EQ(m0, c_stat("move_onesided"));

	/* onesided off: a FETCH, the same bytes */
	if (os) {
		cg = home_obj_of(_metadata, 196608, 81);
		ASSERT_EQ(0, borrow(odsm_rt.fd, cg, &br));
		ASSERT_EQ(0, give_back(odsm_rt.fd, cg));
		ASSERT_EQ(0, c_set_param("onesided", false));
		ASSERT_EQ(0, move_of(cg, &m));
		EXPECT_EQ(0, c_set_param("onesided", true));
		EXPECT_EQ(-1, c_check(odsm_ptr(m.new_gaddr), 196608, HOME, 81));
		EXPECT_EQ(m0, c_stat("move_onesided"));
		EXPECT_EQ(0, odsm_free(m.new_gaddr));
	}
	ASSERT_EQ(0, c_set_knob("cache_budget_bytes", MiB(64)));
}

/* ---- onesided_move_ahead ----------------------------------------------- */

#define AHEAD_SIZE	KiB(320)	/* five blocks */
#define AHEAD_BLOCKS	(AHEAD_SIZE / KiB(64))
#define AHEAD_OBJS	24

/* Is the object moved to m all zeros, its size right? */
static bool moved_zero(const struct odsm_borrow_mut *m, uint32_t size)
{
	const uint8_t *p = odsm_ptr(m->new_gaddr);
	uint32_t i;

	if (m->result != ODSM_BORROWED_MOVED || m->size != size)
		return false;
	for (i = 0; i < size; i++)
		if (p[i])
			return false;
	return true;
}

static int cg_cmp(const void *x, const void *y)
{
	uint64_t a = odsm_addr_of(*(const uint64_t *)x);
	uint64_t b = odsm_addr_of(*(const uint64_t *)y);

	return a < b ? -1 : a > b;
}

/*
 * onesided_move_ahead (USER alone): a move of a never-copied run whose
 * blocks have no keys here goes by FETCH and asks the home for the keys
 * of its blocks and of as many after it (KEYS_ASK: keys_asked grows by
 * more than its blocks), so that the next run of a series, which the home's
 * allocator placed right after it, finds its keys here when it moves:
 * its rest (after the FETCH of its first page) is read one-sided
 * (move_rest_onesided, pieces of 256 KiB), every byte right.  Objects
 * allocated zeroed at the home and never written here, so that their
 * blocks have no keys here; blocks an earlier object left keys for
 * (keys stay with the connection) ask nothing, and the test goes on to
 * the next pair then (all allocated first: a freed original's blocks
 * are not taken again).  Over TCP, or with onesided off, nothing is
 * asked and nothing read one-sided.
 */
TEST(onesided_move_ahead)
{
	uint64_t cg[AHEAD_OBJS], k0, a0, rest0;
	struct odsm_borrow_mut m;
	unsigned int i, j, pairs = 0;
	bool os, done = false;

	MISSES_BEGIN(os);
	for (i = 0; i < AHEAD_OBJS; i++)
		ASSERT_EQ(0, odsm_alloc_on(HOME, AHEAD_SIZE, 0,
					   ODSM_ALLOC_ZERO, &cg[i]));
	qsort(cg, AHEAD_OBJS, sizeof(cg[0]), cg_cmp);
	for (i = 0; i + 1 < AHEAD_OBJS && !done; i++) {
		/* a run and the next one right after it */
		if (odsm_addr_of(cg[i + 1]) != odsm_addr_of(cg[i]) + AHEAD_SIZE)
			continue;
		pairs++;
		k0 = c_stat("keys_received");
		a0 = c_stat("keys_asked");
		ASSERT_EQ(0, move_of(cg[i], &m));
		cg[i] = 0;
		EXPECT_TRUE(moved_zero(&m, AHEAD_SIZE));
		EXPECT_EQ(0, odsm_free(m.new_gaddr));
		if (os && c_stat("keys_asked") == a0)
			continue;	/* its blocks had keys here already */
		if (os) {
			/* its blocks from the first without a key, and
			 * the next run's: past its end
			 */
			EXPECT_LT(a0 + AHEAD_BLOCKS, c_stat("keys_asked"));
			EXPECT_GE(a0 + 2 * AHEAD_BLOCKS, c_stat("keys_asked"));
			/* the next one's keys (the moved one's may not come:
			 * it is freed by now)
			 */
			for (j = 0; j < 150 && c_stat("keys_received") <
						  k0 + AHEAD_BLOCKS; j++)
				c_sleep_ms(20);
			EXPECT_LE(k0 + AHEAD_BLOCKS, c_stat("keys_received"));
		} else {
			EXPECT_EQ(a0, c_stat("keys_asked"));
		}
		rest0 = c_stat("move_rest_onesided");
		ASSERT_EQ(0, move_of(cg[i + 1], &m));
		cg[i + 1] = 0;
		EXPECT_TRUE(moved_zero(&m, AHEAD_SIZE));
		if (os) {
			/* its two pieces after the first page (one at least,
			 * as in onesided_move)
			 */
			EXPECT_LT(rest0, c_stat("move_rest_onesided"));
			EXPECT_GE(rest0 + 2, c_stat("move_rest_onesided"));
		} else {
			EXPECT_EQ(rest0, c_stat("move_rest_onesided"));
		}
		TH_LOG("pair %u: the next run's rest in %llu pieces one-sided",
		       pairs, (unsigned long long)
			      (c_stat("move_rest_onesided") - rest0));
		EXPECT_EQ(0, odsm_free(m.new_gaddr));
		done = true;
	}
	EXPECT_TRUE(done)
		TH_LOG("no pair of runs without keys here of %u placed one after the other",
		       pairs);
	for (i = 0; i < AHEAD_OBJS; i++)
		if (cg[i])
			EXPECT_EQ(0, odsm_free(cg[i]));
}

/* ---- onesided_lazy ----------------------------------------------------- */

/*
 * Wait up to 2 s for the keys this node asked for since (asked0,
 * received0) to come (the home answers an ask with exactly the blocks
 * asked, which hold the object), and for at least one: true when they
 * did.
 */
static bool asked_keys_came(uint64_t asked0, uint64_t received0)
{
	unsigned int i;

	for (i = 0; i < 200; i++) {
		if (c_stat("keys_received") - received0 >=
		    c_stat("keys_asked") - asked0 &&
		    c_stat("keys_received") > received0)
			return true;
		c_sleep_ms(10);
	}
	return false;
}

/*
 * onesided_lazy (USER alone): a 4 MiB object of HOME's, borrowed (a
 * lazily filled copy, 64 faults of a 64 KiB window each).  Over RDMA,
 * USER first leaves and joins again, so that its new connection to HOME
 * has keys only for the blocks that held objects then (KEYS at connect),
 * and the object is made after (and written by requests, not one-sided
 * WRITEs, which would MAP its blocks): the first fault finds no keys for its
 * blocks, asks for all 64 (KEYS_ASK) and is a FETCH; once the keys came,
 * every other fault reads its window one-sided with the run's word after
 * it (lazy_onesided), and every byte is right.  A second object made
 * next to it, borrowed within the second of the first ask, is asked for
 * too (its blocks lie in the first ask's 256-block window, past its 64
 * blocks) and read one-sided the same.  Then the object is freed
 * under a borrowed copy: the next fault's word is not live
 * (onesided_copy_refused), the FETCH says -ESTALE, the touch gets
 * SIGBUS.  With onesided_lazy off every fault is a FETCH, the same
 * bytes.  Over TCP: FETCHes, nothing asked.
 */
TEST(onesided_lazy)
{
	uint64_t cg, cg2, f0, o0, a0, k0, r0, n;
	const volatile uint8_t *p, *p2;
	struct odsm_borrow br, br2;
	bool os;

	MISSES_BEGIN(os);
	os = os && c_param_on("onesided_lazy");
	ASSERT_EQ(0, c_set_knob("readahead_pages", 16));
	if (os) {	/* the others wait at the rig's barrier meanwhile */
		k0 = c_stat("keys_received");
		ASSERT_EQ(0, leave_and_rejoin(200));
		ASSERT_EQ(0, wait_home(ODSM_PEER_UP, 15));
		/* HOME's KEYS of the new connection (it has objects), made
		 * before the object below exists: it is not among them
		 */
		ASSERT_TRUE(asked_keys_came(c_stat("keys_asked"), k0));
	}
	/* written by requests: a one-sided WRITE would MAP its blocks */
	if (os)
		ASSERT_EQ(0, c_set_param("onesided", false));
	cg = home_obj_of(_metadata, LAZY_SIZE, 50);
	cg2 = home_obj_of(_metadata, LAZY_SIZE, 52);
	if (os)
		ASSERT_EQ(0, c_set_param("onesided", true));
	TH_LOG("the second object is %lld blocks from the first",
	       (long long)(odsm_addr_of(cg2) - odsm_addr_of(cg)) /
	       (long long)KiB(64));
	f0 = c_stat("lazy_faults");
	o0 = c_stat("lazy_onesided");
	a0 = c_stat("keys_asked");
	k0 = c_stat("keys_received");
	ASSERT_EQ(0, borrow(odsm_rt.fd, cg, &br));
	EXPECT_EQ((unsigned int)ODSM_BORROWED_MISS, br.result);
	ASSERT_EQ(LAZY_SIZE, br.size);
	p = (const uint8_t *)(uintptr_t)br.addr;
	EXPECT_EQ(c_pat(HOME, 50, 5), p[5]);
	EXPECT_EQ(f0 + 1, c_stat("lazy_faults"));
	if (os) {
		EXPECT_TRUE(asked_keys_came(a0, k0));
		EXPECT_EQ(a0 + LAZY_SIZE / KiB(64), c_stat("keys_asked"));
	}
	/* the second object at once: asked for, though near the first */
	ASSERT_EQ(0, borrow(odsm_rt.fd, cg2, &br2));
	p2 = (const uint8_t *)(uintptr_t)br2.addr;
	k0 = c_stat("keys_received");
	EXPECT_EQ(c_pat(HOME, 52, 5), p2[5]);
	EXPECT_EQ(f0 + 2, c_stat("lazy_faults"));
	if (os) {
		EXPECT_EQ(a0 + 2 * LAZY_SIZE / KiB(64), c_stat("keys_asked"));
		EXPECT_TRUE(asked_keys_came(a0 + LAZY_SIZE / KiB(64), k0));
	}
	/* every other window, and every byte, of both */
	EXPECT_EQ(-1, c_check((const uint8_t *)p, LAZY_SIZE, HOME, 50));
	EXPECT_EQ(-1, c_check((const uint8_t *)p2, LAZY_SIZE, HOME, 52));
	n = c_stat("lazy_faults") - f0;
	EXPECT_EQ(2 * LAZY_SIZE / KiB(64), n);
	if (os) {
		EXPECT_EQ(a0 + 2 * LAZY_SIZE / KiB(64), c_stat("keys_asked"));
		EXPECT_EQ(n - 2, c_stat("lazy_onesided") - o0);
	} else {
		EXPECT_EQ(o0, c_stat("lazy_onesided"));
		EXPECT_EQ(a0, c_stat("keys_asked"));
	}
	TH_LOG("%llu faults, %llu read one-sided, %llu blocks asked for",
	       (unsigned long long)n,
	       (unsigned long long)(c_stat("lazy_onesided") - o0),
	       (unsigned long long)(c_stat("keys_asked") - a0));
	ASSERT_EQ(0, give_back(odsm_rt.fd, cg));
	ASSERT_EQ(0, give_back(odsm_rt.fd, cg2));
	ASSERT_EQ(0, odsm_free(cg2));

	/* freed under a borrowed copy: the word refuses, the FETCH says */
	ASSERT_EQ(0, borrow(odsm_rt.fd, cg, &br));
	p = (const uint8_t *)(uintptr_t)br.addr;
	EXPECT_EQ(c_pat(HOME, 50, 7), c_touch(p + 7));
	ASSERT_EQ(0, odsm_free(cg));
	r0 = c_stat("onesided_copy_refused");
	o0 = c_stat("lazy_onesided");
	EXPECT_EQ(-1, c_touch(p + MiB(2)));
	EXPECT_EQ(r0 + (os ? 1 : 0), c_stat("onesided_copy_refused"));
	EXPECT_EQ(o0, c_stat("lazy_onesided"));
	EXPECT_EQ(0, give_back(odsm_rt.fd, cg));

	/* onesided_lazy off: FETCHes, the same bytes */
	if (os) {
		cg = home_obj_of(_metadata, LAZY_SIZE, 51);
		o0 = c_stat("lazy_onesided");
		ASSERT_EQ(0, c_set_param("onesided_lazy", false));
		ASSERT_EQ(0, borrow(odsm_rt.fd, cg, &br));
		EXPECT_EQ(-1, c_check((const uint8_t *)(uintptr_t)br.addr,
				      LAZY_SIZE, HOME, 51));
		EXPECT_EQ(0, c_set_param("onesided_lazy", true));
		EXPECT_EQ(o0, c_stat("lazy_onesided"));
		EXPECT_EQ(0, give_back(odsm_rt.fd, cg));
		EXPECT_EQ(0, odsm_free(cg));
	}
	ASSERT_EQ(0, c_set_knob("cache_budget_bytes", MiB(64)));
}

TEST_HARNESS_MAIN
