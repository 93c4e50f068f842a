// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm shared immutable objects (odsm_arc.h).
 *
 * The count is an 8-byte object of its own at the object's home, not a
 * word inside the object: the object's bytes never change while it is
 * shared, so the copies other nodes cache stay right, and a count that
 * changes behind them would not.  It is changed only with the heap's
 * atomics (odsm_cmp_swap), at its home, the same way on every node.  A
 * clone is made from a live reference, so the count cannot reach zero
 * under it; zero is final (the word is freed with the object).
 *
 * The word is tagged: bits 63..48 hold the color the count object was
 * allocated with (from the handle's colored address; colors never repeat
 * at an address), bits 47..0 the count.  The heap's atomics ignore the
 * color, so a handle kept after the last drop reaches whatever the heap
 * put at its count's address since: another arc's count, or any word.
 * Every change is a compare-and-swap from a value whose tag is the
 * handle's and whose count is not 0, so such a handle changes nothing
 * and gets -ESTALE (a fetch-and-add would first change the word, then
 * find it foreign).  The first swap guesses the value (count 1): when
 * the guess is right that is one round trip, else the value it returns
 * is the next guess.
 */
#include <errno.h>
#include "odsm.h"
#include "odsm_spawn_int.h"

#define ARC_COUNT_MASK	((1ULL << 48) - 1)

/* The word a count of n has for handle a. */
static uint64_t arc_word(const odsm_arc *a, uint64_t n)
{
	return (uint64_t)odsm_color_of(a->cnt) << 48 | n;
}

/*
 * Add delta (+1 or -1) to a's count, which must be live and a's: the
 * count before, or -ESTALE (freed, or the word another's now), -EBUSY for
 * a count that would leave 1..ARC_COUNT_MASK, or the atomics' error.
 */
static int arc_add(const odsm_arc *a, int delta, uint64_t *before)
{
	uint64_t w = arc_word(a, 1), old, n;
	int ret;

	for (;;) {
		n = w & ARC_COUNT_MASK;
		if (w >> 48 != odsm_color_of(a->cnt) || !n)
			return -ESTALE;
		if (delta > 0 && n == ARC_COUNT_MASK)
			return -EBUSY;
		ret = odsm_cmp_swap(a->cnt, w, w + (uint64_t)(int64_t)delta,
				    &old);
		if (ret)
			return ret == -EINVAL ? -ESTALE : ret;
		if (old == w) {
			*before = n;
			return 0;
		}
		w = old;
	}
}

int odsm_arc_new(odsm_box *b, odsm_arc *a)
{
	uint64_t cnt, one;
	int ret;

	if (!b || !a || !b->g || !odsm_in_heap(b->g))
		return -EINVAL;
	ret = odsm_alloc_on(sp_node_of(b->g), 8, 8, ODSM_ALLOC_ZERO, &cnt);
	if (ret)
		return ret;
	a->cnt = cnt;
	one = arc_word(a, 1);
	ret = odsm_write(cnt, &one, sizeof(one));
	if (ret) {
		odsm_free(cnt);
		a->cnt = 0;
		return ret;
	}
	/* readers may cache it from now on: the owner's epoch ends */
	a->g = odsm_box_share(b);
	/* the box's own copy goes with it, as in a transfer */
	if (odsm__copy_of(b->ext))
		odsm__drop_copy(b->g, &b->ext);
	b->g = 0;
	b->ext = 0;
	return 0;
}

int odsm_arc_clone(const odsm_arc *a, odsm_arc *out)
{
	uint64_t n;
	int ret;

	if (!a || !out || !a->g || !a->cnt)
		return -EINVAL;
	ret = arc_add(a, 1, &n);
	if (ret)
		return ret;
	*out = *a;
	return 0;
}

int odsm_arc_read(const odsm_arc *a, odsm_ref *r, const void **p)
{
	odsm_box field;

	if (!a || !r || !p || !a->g)
		return -EINVAL;
	field.g = a->g;
	field.ext = 0;
	return odsm_borrow_field(&field, r, p);
}

/* Free the object and its count: the last reference went. */
static int arc_free(const odsm_arc *a)
{
	int ret = odsm_free(a->g);
	int r2 = odsm_free(a->cnt);

	return ret ? ret : r2;
}

int odsm_arc_drop(odsm_arc *a)
{
	uint64_t n;
	int ret;

	if (!a || !a->g || !a->cnt)
		return -EINVAL;
	ret = arc_add(a, -1, &n);
	if (ret)
		return ret;
	if (n == 1)
		ret = arc_free(a);
	a->g = 0;
	a->cnt = 0;
	return ret;
}

int odsm_arc_get_mut(odsm_arc *a, odsm_box *b)
{
	uint64_t one, old;
	int ret;

	if (!a || !b || !a->g || !a->cnt || b->g)
		return -EINVAL;
	one = arc_word(a, 1);
	ret = odsm_cmp_swap(a->cnt, one, 0, &old);
	if (ret)
		return ret == -EINVAL ? -ESTALE : ret;
	if (old != one)
		return old >> 48 == one >> 48 && (old & ARC_COUNT_MASK) ?
		       -EBUSY : -ESTALE;
	odsm_free(a->cnt);
	b->g = a->g;
	b->ext = 0;
	a->g = 0;
	a->cnt = 0;
	return 0;
}
