// SPDX-License-Identifier: GPL-2.0
/*
 * A RETURN costs the same whatever the file holds (issue 12, 12b).
 *
 * ODSM_IOC_RETURN looks the address up in the cache's index; when the
 * index has no copy there that the file holds, the copy may still be an
 * orphan the file holds (its home restarted while it was borrowed).  The
 * module used to find it by walking every reference of the file under
 * cache.lock; since 373e418 it looks in the orphan hash (kmod/odsm_cache.c,
 * find_held_locked()).  A RETURN of an address the file does not hold at
 * all takes that same path to its end: before the fix a walk of every
 * reference, after it one bucket of an empty hash.
 *
 *   cost_independent_of_held  USER opens two files: A holds one copy of
 *                      HOME's objects, B holds NR_HELD of them.  It times
 *                      RETURNs of an address neither holds (-ENOENT) on A
 *                      and on B, interleaved, NR_SAMPLES of each: the
 *                      median on B must stay under RATIO_MAX times the
 *                      median on A.  A walk of NR_HELD references costs a
 *                      few ms under TCG against tens of us for the call:
 *                      the ratio is then far above RATIO_MAX; without a
 *                      walk both medians are the same call.  A structural
 *                      measure, not a wall-time bound: both medians are
 *                      taken in the same seconds on the same guest.
 *
 * Words of node 0's directory: 380 (the array of addresses), 381 (its
 * count).  Barriers on node 0: 22, 23.
 */
#include <sys/ioctl.h>
#include "odsm_cluster.h"

#define HOME		0
#define USER		1
#define W_RT_ARRAY	380
#define W_RT_COUNT	381
#define B_RT_READY	22
#define B_RT_DONE	23
#define NR_HELD		2048		/* B's references */
#define NR_OBJS		(NR_HELD + 1)	/* the last: held by nobody */
#define NR_SAMPLES	301
#define RATIO_MAX	3
#define SECS		240

static int borrow(int fd, uint64_t cg)
{
	struct odsm_borrow b = { .gaddr = cg };

	return ioctl(fd, ODSM_IOC_BORROW, &b) ? -errno : 0;
}

static int give_back(int fd, uint64_t cg)
{
	struct odsm_borrow b = { .gaddr = cg };

	return ioctl(fd, ODSM_IOC_RETURN, &b) ? -errno : 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* ns one RETURN of cg on fd took; *ret its result */
static uint64_t timed_return(int fd, uint64_t cg, int *ret)
{
	uint64_t t0 = now_ns();

	*ret = give_back(fd, cg);
	return now_ns() - t0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

static uint64_t arr;		/* HOME: the array of addresses */

/* HOME: NR_OBJS small objects, their addresses in an object of their own */
static void publish(struct __test_metadata *_metadata)
{
	uint64_t *cgs;
	unsigned int i;
	int ret;

	ret = odsm_alloc(NR_OBJS * sizeof(uint64_t), 0, ODSM_ALLOC_ZERO, &arr);
	ASSERT_EQ(0, ret) TH_LOG("alloc of the array: %s", odsm_strerror(ret));
	cgs = odsm_ptr(arr);
	for (i = 0; i < NR_OBJS; i++) {
		ret = odsm_alloc(16, 0, ODSM_ALLOC_ZERO, &cgs[i]);
		ASSERT_EQ(0, ret) TH_LOG("alloc %u: %s", i, odsm_strerror(ret));
	}
	ASSERT_EQ(0, c_put(HOME, W_RT_COUNT, NR_OBJS));
	ASSERT_EQ(0, c_put(HOME, W_RT_ARRAY, arr));
}

FIXTURE(rt)
{
	int unused;
};

FIXTURE_SETUP(rt)
{
}

FIXTURE_TEARDOWN(rt)
{
}

/* the harness's default 30 s: too little for NR_HELD misses on 8 guests */
TEST_F_TIMEOUT(rt, cost_independent_of_held, 300)
{
	uint64_t n = 0, *cgs, *ta, *tb, t0, ma, mb, none;
	unsigned int i, held = 0;
	int fa, fb, ra, rb;

	C_BEGIN();
	if (C.self == HOME)
		publish(_metadata);
	ASSERT_EQ(0, c_barrier(HOME, B_RT_READY, C.nodes, SECS));
	if (C.self != USER)
		goto out;

	ASSERT_EQ(0, c_get(HOME, W_RT_COUNT, &n));
	ASSERT_EQ((uint64_t)NR_OBJS, n);
	ASSERT_EQ(0, c_get(HOME, W_RT_ARRAY, &arr));
	cgs = calloc(NR_OBJS, sizeof(*cgs));
	ta = calloc(NR_SAMPLES, sizeof(*ta));
	tb = calloc(NR_SAMPLES, sizeof(*tb));
	ASSERT_TRUE(cgs && ta && tb);
	ASSERT_EQ(0, odsm_read(arr, cgs, NR_OBJS * sizeof(*cgs)));
	none = cgs[NR_HELD];

	fa = open(ODSM_DEVICE_PATH, O_RDWR);
	fb = open(ODSM_DEVICE_PATH, O_RDWR);
	ASSERT_LE(0, fa);
	ASSERT_LE(0, fb);
	ASSERT_EQ(0, borrow(fa, cgs[0]));
	t0 = c_now_ms();
	for (i = 0; i < NR_HELD; i++) {
		ra = borrow(fb, cgs[i]);
		EXPECT_EQ(0, ra) {
			TH_LOG("borrow %u of %u: %s", i, NR_HELD,
			       odsm_strerror(ra));
			break;
		}
		held++;
	}
	TH_LOG("B borrowed %u copies in %llu ms", held,
	       (unsigned long long)(c_now_ms() - t0));

	/* interleaved: whatever else the guest does falls on both alike */
	for (i = 0; i < NR_SAMPLES; i++) {
		ta[i] = timed_return(fa, none, &ra);
		tb[i] = timed_return(fb, none, &rb);
		EXPECT_EQ(-ENOENT, ra);
		EXPECT_EQ(-ENOENT, rb);
		if (ra != -ENOENT || rb != -ENOENT)
			break;
	}
	ma = median(ta, NR_SAMPLES);
	mb = median(tb, NR_SAMPLES);
	TH_LOG("RETURN of an address not held: median %llu ns holding 1, %llu ns holding %u (x%.2f)",
	       (unsigned long long)ma, (unsigned long long)mb, held,
	       ma ? (double)mb / ma : 0.0);
	EXPECT_EQ((unsigned int)NR_HELD, held);
	EXPECT_GT(RATIO_MAX * ma, mb) {
		TH_LOG("a RETURN walks the file's references: %.1f ns more per reference held",
		       held > 1 ? ((double)mb - ma) / (held - 1) : 0.0);
	}

	/* the held ones still come back, each once */
	EXPECT_EQ(0, give_back(fa, cgs[0]));
	for (i = 0; i < held; i++)
		EXPECT_EQ(0, give_back(fb, cgs[i]));
	EXPECT_EQ(-ENOENT, give_back(fb, cgs[0]));
	close(fa);
	close(fb);
	free(cgs);
	free(ta);
	free(tb);
out:
	ASSERT_EQ(0, c_barrier(HOME, B_RT_DONE, C.nodes, SECS));
	if (C.self == HOME) {
		/* the later programs get the partition as they found it */
		cgs = odsm_ptr(arr);
		for (i = 0; i < NR_OBJS; i++)
			EXPECT_EQ(0, odsm_free(cgs[i]));
		EXPECT_EQ(0, odsm_free(arr));
	}
}

TEST_HARNESS_MAIN
