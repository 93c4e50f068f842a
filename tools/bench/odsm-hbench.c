// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-hbench: a shared borrow served by libodsm's table of cache hits
 * (userlib/odsm_hits.c) against a shared borrow of a local object, on the
 * host's real CPU (issue 15, section 1: goal <= 1.5).  The hit path is
 * user-space code once the first borrow recorded the copy, so no module
 * is needed: the heap is anonymous memory mapped where the module would
 * put it, the library's runtime is told that its first partition is this
 * node's, the hit page is a zeroed page of this program's, and the copies
 * of the second partition's objects are recorded in the table as a BORROW
 * would record them.  A benchmark, not a test.
 *
 * Each kind borrows, reads 8 bytes and returns, over and over:
 *   one        the same object (the table's best case; cbench's guest row
 *              cached_hit_vs_local_borrow measures this one);
 *   spread     OBJS objects in a random order (a hash probe each);
 *   threads    2 threads on the same object (its count's cache line
 *              bounces between the cores: the shared case).
 * Nanoseconds per borrow and return, medians over ROUNDS rounds, and
 *   cached_hit_vs_local_borrow_host ratio=R  (one: hit over local)
 *
 *   odsm-hbench [ROUNDS]      (default 7)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "odsm.h"
#include "odsm_hits_int.h"
#include "bench.h"

#define HEAP_BASE	0x100000000000ULL	/* the module's default */
#define PART		(1ULL << 20)
#define OBJ		64
#define OBJS		64	/* the spread kind's objects: idle ones kept at most */
#define N_ONE		(1L << 22)
#define N_SPREAD	(1L << 22)

static struct odsm_hits_page page;
static odsm_box local[OBJS], remote[OBJS];
static uint32_t order[N_SPREAD / 64];

/* n borrows, reads and returns of boxes[order...]; ns per one */
static double run(odsm_box *boxes, bool spread, long n)
{
	uint64_t sink = 0;
	double t0 = now_us();
	long i;

	for (i = 0; i < n; i++) {
		odsm_box *b = &boxes[spread ? order[i % (N_SPREAD / 64)] : 0];
		const uint64_t *p;
		odsm_ref r;

		int ret = odsm_borrow(b, &r, (const void **)&p);

		if (ret)
			die("odsm_borrow", ret);
		sink += *p;
		odsm_return(&r);
	}
	__asm__ volatile("" : : "r"(sink) : "memory");
	return (now_us() - t0) * 1000 / n;
}

struct thr {
	odsm_box *boxes;
	double ns;
	pthread_barrier_t *bar;
};

static void *thread_run(void *arg)
{
	struct thr *t = arg;

	pthread_barrier_wait(t->bar);
	t->ns = run(t->boxes, false, N_ONE);
	return NULL;
}

/* two threads at once on boxes[0]: the slower one's ns */
static double run2(odsm_box *boxes)
{
	pthread_barrier_t bar;
	struct thr t[2] = { { boxes, 0, &bar }, { boxes, 0, &bar } };
	pthread_t th;

	pthread_barrier_init(&bar, NULL, 2);
	if (pthread_create(&th, NULL, thread_run, &t[1]))
		die("pthread_create", -EAGAIN);
	thread_run(&t[0]);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&bar);
	return t[0].ns > t[1].ns ? t[0].ns : t[1].ns;
}

int main(int argc, char **argv)
{
	int rounds = arg_num(argc, argv, 1, 7), k, i;
	enum { LOC1, HIT1, LOCS, HITS, LOC2, HIT2, NK };
	static const char *const name[NK] = {
		"local_one", "hit_one", "local_spread", "hit_spread",
		"local_2threads", "hit_2threads",
	};
	double *t[NK], med[NK];
	struct odsm_hits_stats hs;
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	void *heap;

	heap = mmap((void *)(uintptr_t)HEAP_BASE, 2 * PART,
		    PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE |
		    MAP_POPULATE, -1, 0);
	if (heap == MAP_FAILED)
		die("mmap of the heap", -errno);
	odsm_rt.info.heap_base = HEAP_BASE;
	odsm_rt.info.heap_size = 2 * PART;
	odsm_rt.local_lo = HEAP_BASE;
	odsm_rt.local_hi = HEAP_BASE + PART;
	odsm__hits_attach(&page);
	/*
	 * local object i at slot i; remote object i at slot i of the second
	 * partition, its copy at slot OBJS + i of the first, as a BORROW
	 * would have recorded it
	 */
	for (i = 0; i < OBJS; i++) {
		uint64_t copy = HEAP_BASE + (uint64_t)(OBJS + i) * OBJ;

		local[i].g = (1ULL << ODSM_COLOR_SHIFT) | (HEAP_BASE + (uint64_t)i * OBJ);
		remote[i].g = (1ULL << ODSM_COLOR_SHIFT) |
			      (HEAP_BASE + PART + (uint64_t)i * OBJ);
		*(uint64_t *)(uintptr_t)copy = i;
		if (!odsm__hit_record(remote[i].g, copy, 0))
			die("odsm__hit_record", -ENOSPC);
		/* the record counts the borrow that made it: return it */
		if (!odsm__hit_return(remote[i].g, copy))
			die("odsm__hit_return", -ENOENT);
	}
	for (i = 0; i < (int)(N_SPREAD / 64); i++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		order[i] = (uint32_t)(rng % OBJS);
	}
	for (k = 0; k < NK; k++) {
		t[k] = calloc(rounds, sizeof(double));
		if (!t[k])
			die("calloc", -ENOMEM);
	}
	run(local, false, N_ONE / 8);	/* warm up */
	run(remote, false, N_ONE / 8);
	for (i = 0; i < rounds; i++) {
		t[LOC1][i] = run(local, false, N_ONE);
		t[HIT1][i] = run(remote, false, N_ONE);
		t[LOCS][i] = run(local, true, N_SPREAD);
		t[HITS][i] = run(remote, true, N_SPREAD);
		t[LOC2][i] = run2(local);
		t[HIT2][i] = run2(remote);
	}
	for (k = 0; k < NK; k++) {
		stats(t[k], rounds, &med[k], NULL);
		row("hits host %s_borrow_return_ns=%.2f", name[k], med[k]);
	}
	odsm_hits_stats(&hs);
	row("hits host one_ratio=%.2f spread_ratio=%.2f 2threads_ratio=%.2f hits=%llu given_back=%llu rounds=%d",
	    med[HIT1] / med[LOC1], med[HITS] / med[LOCS], med[HIT2] / med[LOC2],
	    (unsigned long long)hs.hits, (unsigned long long)hs.given_back,
	    rounds);
	row("cached_hit_vs_local_borrow_host ratio=%.2f", med[HIT1] / med[LOC1]);
	return 0;
}
