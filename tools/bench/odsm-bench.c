// SPDX-License-Identifier: GPL-2.0
/*
 * odsm-bench: what a borrow of a local object costs next to a plain pointer
 * dereference of the same data, in TSC cycles per access, in one run.
 * (DRust reports 395 vs 364 cycles for its local borrow.)  A benchmark, not
 * a test: it prints numbers and judges nothing.
 *
 *   odsm-bench [OBJECTS] [ROUNDS]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>
#include "odsm.h"
#include "bench.h"

struct obj {
	uint64_t value;
	uint64_t pad[3];
};

static inline uint64_t tsc(void)
{
	unsigned int aux;

	return __rdtscp(&aux);
}

int main(int argc, char **argv)
{
	size_t n = arg_num(argc, argv, 1, 4096);
	int rounds = arg_num(argc, argv, 2, 50);
	struct obj **plain;
	odsm_box *boxes;
	uint64_t t, best_plain = UINT64_MAX, best_ref = UINT64_MAX,
		 best_mut = UINT64_MAX, sink = 0;
	size_t i;
	int r, ret;

	ret = odsm_init();
	if (ret)
		die("odsm_init", ret);
	plain = calloc(n, sizeof(*plain));
	boxes = calloc(n, sizeof(*boxes));
	if (!plain || !boxes)
		die("calloc", -ENOMEM);
	for (i = 0; i < n; i++) {
		ret = odsm_box_new(&boxes[i], sizeof(struct obj), ODSM_ALLOC_ZERO);
		if (ret)
			die("alloc", ret);
		plain[i] = odsm_ptr(boxes[i].g);	/* the same bytes */
		plain[i]->value = i;
	}

	for (r = 0; r < rounds; r++) {
		t = tsc();
		for (i = 0; i < n; i++)
			sink += plain[i]->value;
		t = tsc() - t;
		if (t < best_plain)
			best_plain = t;

		t = tsc();
		for (i = 0; i < n; i++) {
			const struct obj *o = NULL;
			odsm_ref ref;

			if (odsm_borrow(&boxes[i], &ref, (const void **)&o))
				abort();
			sink += o->value;
			odsm_return(&ref);
		}
		t = tsc() - t;
		if (t < best_ref)
			best_ref = t;

		t = tsc();
		for (i = 0; i < n; i++) {
			struct obj *o = NULL;
			odsm_mut m;

			if (odsm_borrow_mut(&boxes[i], &m, (void **)&o))
				abort();
			o->value++;
			odsm_return_mut(&m);
		}
		t = tsc() - t;
		if (t < best_mut)
			best_mut = t;
	}

	row("local_access objects=%zu rounds=%d best-of-rounds cycles/access:",
	    n, rounds);
	row("plain_deref_cycles=%.1f", (double)best_plain / n);
	row("borrow_cycles=%.1f ratio=%.2f", (double)best_ref / n,
	    (double)best_ref / best_plain);
	row("borrow_mut_cycles=%.1f ratio=%.2f", (double)best_mut / n,
	    (double)best_mut / best_plain);
	for (i = 0; i < n; i++)
		odsm_box_drop(&boxes[i]);
	odsm_fini();
	return sink == 42 ? 2 : 0;	/* keep sink alive */
}
