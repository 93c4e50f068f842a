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
 *              cached_hit_loop_vs_local_borrow measures this one);
 *   spread     OBJS objects in a random order (a hash probe each);
 *   threads    2 threads on the same object (its count's cache line
 *              bounces between the cores: the shared case);
 *   big        Table 2's access pattern and timing (odsm-tbench) on the
 *              OBJS objects, each BIG bytes (256 MiB in all): a random
 *              8-byte value of a random object per borrow, so the value
 *              misses the CPU's caches, each access timed on its own
 *              (cycles, rdtscp), against the same accesses through a
 *              plain pointer.  The table keeps OBJS copies a thread;
 *              Table 2's millions of 64-byte objects would miss it.
 * Nanoseconds per borrow and return, medians over ROUNDS rounds; for the
 * big kind cycles per access as Table 2 gives them (average, median and
 * 90th percentile, each the median over the rounds), and
 *   cached_hit_vs_local_borrow ratio=R syscalls_per_hit=S
 *       the fixed row of issue 15, on Table 2's workload: the big kind's
 *       average hit over its average local borrow, and the borrows the
 *       table did not serve (each would have been a system call) per
 *       borrow, from the library's own count of hits
 *   cached_hit_vs_local_borrow_host ratio=R  (one: hit over local)
 *
 *   odsm-hbench [ROUNDS]      (default 7)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <x86intrin.h>
#include "odsm.h"
#include "odsm_hits_int.h"
#include "bench.h"

#define HEAP_BASE	0x100000000000ULL	/* the module's default */
/*
 * Object i of this node at i * BIG, the copy of the other node's object i
 * at (OBJS + i) * BIG: the first partition holds both
 */
#define BIG		(4ULL << 20)
#define PART		(2 * OBJS * BIG)
#define OBJS		64	/* the spread kind's objects: idle ones kept at most */
#define N_ONE		(1L << 22)
#define N_SPREAD	(1L << 22)
#define N_BIG		(1L << 20)

static struct odsm_hits_page page;
static odsm_box local[OBJS], remote[OBJS];
static uint32_t order[N_SPREAD / 64];
static uint32_t big_off[N_BIG];		/* object << 24 | 8-byte word */

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

static inline uint64_t tsc(void)
{
	unsigned int aux;

	return __rdtscp(&aux);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static uint32_t big_t[N_BIG];

struct big {
	double avg, med, p90;
};

/*
 * The big kind, as odsm-tbench times DRust's Table 2: each access on its
 * own between two rdtscp, a random 8-byte value of a random object (boxes
 * NULL: through a plain pointer to this node's object; else borrowed and
 * returned); the average cycles without the slowest 1%, the median and
 * the 90th percentile.
 */
static struct big run_big(odsm_box *boxes)
{
	struct big b;
	uint64_t sink = 0, sum = 0, t0;
	long i;

	for (i = 0; i < N_BIG; i++) {
		uint32_t o = big_off[i];
		const uint64_t *p;
		odsm_ref r;

		if (!boxes) {
			t0 = tsc();
			sink += ((const uint64_t *)(uintptr_t)(HEAP_BASE +
							       (o >> 24) * BIG))[o & 0xffffff];
		} else {
			t0 = tsc();
			if (odsm_borrow(&boxes[o >> 24], &r, (const void **)&p))
				abort();
			sink += p[o & 0xffffff];
			odsm_return(&r);
		}
		big_t[i] = (uint32_t)(tsc() - t0);
	}
	__asm__ volatile("" : : "r"(sink) : "memory");
	qsort(big_t, N_BIG, sizeof(*big_t), cmp_u32);
	for (i = 0; i < N_BIG - N_BIG / 100; i++)
		sum += big_t[i];
	b.avg = (double)sum / (N_BIG - N_BIG / 100);
	b.med = big_t[N_BIG / 2];
	b.p90 = big_t[N_BIG * 9 / 10];
	return b;
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
	enum { LOC1, HIT1, LOCS, HITS, LOC2, HIT2, PLNB, LOCB, HITB, NK };
	static const char *const name[NK] = {
		"local_one", "hit_one", "local_spread", "hit_spread",
		"local_2threads", "hit_2threads", "plain_big", "local_big",
		"hit_big",
	};
	double *t[NK], med[NK], *bmed[NK], *bp90[NK], med50[NK], med90[NK];
	unsigned long long big_hits = 0;
	struct odsm_hits_stats hs, hs0;
	struct big b;
	uint64_t rng = 0x9e3779b97f4a7c15ULL;
	void *heap;

	/* the second partition is never touched: only its addresses */
	heap = mmap((void *)(uintptr_t)HEAP_BASE, 2 * PART,
		    PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE |
		    MAP_NORESERVE, -1, 0);
	if (heap == MAP_FAILED)
		die("mmap of the heap", -errno);
	memset(heap, 1, PART);
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
		uint64_t copy = HEAP_BASE + (uint64_t)(OBJS + i) * BIG;

		local[i].g = (1ULL << ODSM_COLOR_SHIFT) | (HEAP_BASE + (uint64_t)i * BIG);
		remote[i].g = (1ULL << ODSM_COLOR_SHIFT) |
			      (HEAP_BASE + PART + (uint64_t)i * BIG);
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
	for (i = 0; i < (int)N_BIG; i++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		big_off[i] = (uint32_t)((rng % OBJS) << 24 |
					((rng >> 8) % (BIG / 8)));
	}
	for (k = 0; k < NK; k++) {
		t[k] = calloc(rounds, sizeof(double));
		bmed[k] = calloc(rounds, sizeof(double));
		bp90[k] = calloc(rounds, sizeof(double));
		if (!t[k] || !bmed[k] || !bp90[k])
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
		for (k = PLNB; k <= HITB; k++) {
			if (k == HITB)
				odsm_hits_stats(&hs0);
			b = run_big(k == PLNB ? NULL : k == LOCB ? local : remote);
			if (k == HITB) {
				odsm_hits_stats(&hs);
				big_hits += hs.hits - hs0.hits;
			}
			t[k][i] = b.avg;
			bmed[k][i] = b.med;
			bp90[k][i] = b.p90;
		}
	}
	for (k = 0; k < NK; k++) {
		stats(t[k], rounds, &med[k], NULL);
		if (k < PLNB) {
			row("hits host %s_borrow_return_ns=%.2f", name[k], med[k]);
			continue;
		}
		stats(bmed[k], rounds, &med50[k], NULL);
		stats(bp90[k], rounds, &med90[k], NULL);
		row("hits host %s_cycles=%.0f median_cycles=%.0f p90_cycles=%.0f",
		    name[k], med[k], med50[k], med90[k]);
	}
	odsm_hits_stats(&hs);
	row("hits host one_ratio=%.2f spread_ratio=%.2f 2threads_ratio=%.2f hits=%llu given_back=%llu rounds=%d",
	    med[HIT1] / med[LOC1], med[HITS] / med[LOCS], med[HIT2] / med[LOC2],
	    (unsigned long long)hs.hits, (unsigned long long)hs.given_back,
	    rounds);
	row("hits host big objects=%d object_mib=%llu working_set_mib=%llu local_vs_plain=%.3f hit_vs_plain=%.3f hit_vs_local=%.3f",
	    OBJS, (unsigned long long)(BIG >> 20),
	    (unsigned long long)(OBJS * BIG >> 20), med[LOCB] / med[PLNB],
	    med[HITB] / med[PLNB], med[HITB] / med[LOCB]);
	row("cached_hit_vs_local_borrow_host ratio=%.2f", med[HIT1] / med[LOC1]);
	/* last: the fixed row, Table 2's workload (native host CPU) */
	row("cached_hit_vs_local_borrow ratio=%.2f syscalls_per_hit=%.3f (Table 2's timing natively, %d objects of %llu MiB; median %.2f, p90 %.2f)",
	    med[HITB] / med[LOCB],
	    1.0 - (double)big_hits / ((double)N_BIG * rounds), OBJS,
	    (unsigned long long)(BIG >> 20), med50[HITB] / med50[LOCB],
	    med90[HITB] / med90[LOCB]);
	return 0;
}
