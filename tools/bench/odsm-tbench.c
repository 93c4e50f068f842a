// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-tbench: DRust's Table 2 on the host's real CPU -- what a borrow of
 * a local object costs next to a plain pointer dereference, per access,
 * for random accesses to 8-byte values in objects spread over a working
 * set far larger than the CPU caches (DRust: 364 cycles plain, 395 for
 * its local borrow, a ratio of 1.085).  A benchmark, not a test.
 *
 * The local borrow paths of libodsm are inline user-space code (a range
 * check of the fat pointer and, once per epoch, a color bump), so no
 * module is needed: the heap is plain anonymous memory mapped where the
 * module would put it, and the library's runtime is told that it is this
 * node's partition.  A remote cached hit served by libodsm's table of
 * hits is measured natively by odsm-hbench, through the kernel in a
 * guest by odsm-cbench.
 *
 * Each access is timed on its own with rdtscp (the timer's own cost,
 * measured on an empty access, is subtracted), over a random permutation
 * of the objects; every kind runs over the same permutation, kinds
 * interleaved round by round.  Rows: average, median and p90 cycles per
 * access of each kind (medians over the rounds; the average without the
 * slowest 1%), and
 * deref_local_vs_plain ratio=R (the local shared borrow's average over
 * the plain pointer's; goal <= 1.05).
 *
 *   odsm-tbench [WORKING_SET_MIB] [ROUNDS]      (default 256, 5)
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <x86intrin.h>
#include "odsm.h"
#include "bench.h"

#define OBJ_SIZE	64	/* one cache line: one miss per access */
#define HEAP_BASE	0x100000000000ULL	/* the module's default */
#define SAMPLES		(1U << 20)	/* timed accesses per kind and round */
/*
 * The average leaves out the slowest 1%: on a shared 2-core machine an
 * access that an interrupt or another task's time slice lands in costs
 * 10^5 cycles and more, and a handful of those decide a plain average.
 */
#define TRIMMED		(SAMPLES - SAMPLES / 100)

struct obj {
	uint64_t value;
	uint64_t pad[OBJ_SIZE / 8 - 1];
};

enum kind { K_EMPTY, K_PLAIN, K_BORROW, K_BORROW_MUT, K_NR };

static const char *const kind_name[K_NR] = {
	"timer", "plain_deref", "local_borrow", "local_borrow_mut",
};

static inline uint64_t tsc(void)
{
	unsigned int aux;

	return __rdtscp(&aux);
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

struct result {
	double avg, med, p90;
};

/*
 * Time SAMPLES accesses of one kind over idx[], each on its own; the
 * cycles into t[], the summary into *r (the timer's cost off).
 */
static void run(enum kind k, struct obj **plain, odsm_box *boxes,
		const uint32_t *idx, uint32_t *t, double timer, struct result *r,
		uint64_t *sink)
{
	uint64_t t0, sum = 0;
	uint32_t i;

	for (i = 0; i < SAMPLES; i++) {
		uint32_t j = idx[i];

		switch (k) {
		case K_EMPTY:
			t0 = tsc();
			*sink += j;
			break;
		case K_PLAIN:
			t0 = tsc();
			*sink += plain[j]->value;
			break;
		case K_BORROW: {
			const struct obj *o;
			odsm_ref ref;

			t0 = tsc();
			if (odsm_borrow(&boxes[j], &ref, (const void **)&o))
				abort();
			*sink += o->value;
			odsm_return(&ref);
			break;
		}
		case K_BORROW_MUT: {
			struct obj *o;
			odsm_mut m;

			t0 = tsc();
			if (odsm_borrow_mut(&boxes[j], &m, (void **)&o))
				abort();
			o->value++;
			odsm_return_mut(&m);
			break;
		}
		default:
			abort();
		}
		t[i] = (uint32_t)(tsc() - t0);
	}
	qsort(t, SAMPLES, sizeof(*t), cmp_u32);
	for (i = 0; i < TRIMMED; i++)
		sum += t[i];
	r->avg = (double)sum / TRIMMED - timer;
	r->med = t[SAMPLES / 2] - timer;
	r->p90 = t[SAMPLES * 9 / 10] - timer;
}

static double median_of(double *v, int n)
{
	double med;

	stats(v, n, &med, NULL);
	return med;
}

int main(int argc, char **argv)
{
	size_t mib = arg_num(argc, argv, 1, 256);
	int rounds = arg_num(argc, argv, 2, 5);
	size_t n = (mib << 20) / OBJ_SIZE, i;
	double *avg[K_NR], *med[K_NR], *p90[K_NR], timer = 0;
	struct result res[K_NR];
	struct obj **plain;
	odsm_box *boxes;
	uint32_t *idx, *t;
	uint64_t sink = 0;
	void *heap;
	int r, k;

	if (n < SAMPLES || n > UINT32_MAX)
		die("working set (MiB)", -EINVAL);
	heap = mmap((void *)(uintptr_t)HEAP_BASE, mib << 20,
		    PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
		    MAP_FIXED_NOREPLACE | MAP_POPULATE, -1, 0);
	if (heap == MAP_FAILED)
		die("mmap of the heap", -errno);
	/* this process's node partition, as odsm_init() would set it */
	odsm_rt.info.heap_base = HEAP_BASE;
	odsm_rt.info.heap_size = mib << 20;
	odsm_rt.local_lo = HEAP_BASE;
	odsm_rt.local_hi = HEAP_BASE + (mib << 20);

	plain = calloc(n, sizeof(*plain));
	boxes = calloc(n, sizeof(*boxes));
	idx = calloc(SAMPLES, sizeof(*idx));
	t = calloc(SAMPLES, sizeof(*t));
	if (!plain || !boxes || !idx || !t)
		die("calloc", -ENOMEM);
	for (k = 0; k < K_NR; k++) {
		avg[k] = calloc(rounds, sizeof(double));
		med[k] = calloc(rounds, sizeof(double));
		p90[k] = calloc(rounds, sizeof(double));
		if (!avg[k] || !med[k] || !p90[k])
			die("calloc", -ENOMEM);
	}
	/* object i at slot i, color 1 (a fresh allocation's) */
	for (i = 0; i < n; i++) {
		boxes[i].g = (1ULL << ODSM_COLOR_SHIFT) | (HEAP_BASE + i * OBJ_SIZE);
		plain[i] = odsm_ptr(boxes[i].g);	/* the same bytes */
		plain[i]->value = i;
	}
	/* the boxes' first epoch (one bump each) is not what Table 2 measures */
	for (i = 0; i < n; i++) {
		struct obj *o;
		odsm_mut m;

		if (odsm_borrow_mut(&boxes[i], &m, (void **)&o))
			die("borrow_mut", -EINVAL);
		odsm_return_mut(&m);
	}

	for (r = 0; r < rounds; r++) {
		/* a fresh random sample of objects each round: cold lines */
		for (i = 0; i < SAMPLES; i++)
			idx[i] = (uint32_t)(next_rand() % n);
		for (k = 0; k < K_NR; k++) {
			run(k, plain, boxes, idx, t, k == K_EMPTY ? 0 : timer,
			    &res[k], &sink);
			if (k == K_EMPTY)
				timer = res[k].med;
			avg[k][r] = res[k].avg;
			med[k][r] = res[k].med;
			p90[k][r] = res[k].p90;
		}
	}

	row("table2 working_set_mib=%zu objects=%zu object_bytes=%d samples=%u rounds=%d timer_cycles=%.0f (subtracted)",
	    mib, n, OBJ_SIZE, SAMPLES, rounds, median_of(avg[K_EMPTY], rounds));
	for (k = K_PLAIN; k < K_NR; k++)
		row("table2_%s avg_cycles=%.1f median_cycles=%.1f p90_cycles=%.1f",
		    kind_name[k], median_of(avg[k], rounds),
		    median_of(med[k], rounds), median_of(p90[k], rounds));
	row("table2_local_borrow_mut_vs_plain ratio=%.3f",
	    median_of(avg[K_BORROW_MUT], rounds) / median_of(avg[K_PLAIN], rounds));
	row("deref_local_vs_plain ratio=%.3f (native host CPU; DRust 1.085, goal <= 1.05)",
	    median_of(avg[K_BORROW], rounds) / median_of(avg[K_PLAIN], rounds));
	munmap(heap, mib << 20);
	return sink == 42 ? 2 : 0;	/* keep sink alive */
}
