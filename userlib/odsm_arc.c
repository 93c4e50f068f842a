// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm shared immutable objects (odsm_arc.h).
 *
 * The count is an 8-byte object of its own at the object's home, not a
 * word inside the object: the object's bytes never change while it is
 * shared, so the copies other nodes cache stay right, and a count that
 * changes behind them would not.  It is changed only with the heap's
 * atomics (odsm_fetch_add, odsm_cmp_swap), at its home, the same way on
 * every node.  A clone is made from a live reference, so the count
 * cannot reach zero under it; zero is final (the word is freed with the
 * object).
 */
#include <errno.h>
#include "odsm.h"
#include "odsm_spawn_int.h"

int odsm_arc_new(odsm_box *b, odsm_arc *a)
{
	uint64_t cnt, one = 1;
	int ret;

	if (!b || !a || !b->g || !odsm_in_heap(b->g))
		return -EINVAL;
	ret = odsm_alloc_on(sp_node_of(b->g), 8, 8, ODSM_ALLOC_ZERO, &cnt);
	if (ret)
		return ret;
	ret = odsm_write(cnt, &one, sizeof(one));
	if (ret) {
		odsm_free(cnt);
		return ret;
	}
	/* readers may cache it from now on: the owner's epoch ends */
	a->g = odsm_box_share(b);
	a->cnt = cnt;
	/* the box's own copy goes with it, as in a transfer */
	if (odsm__copy_of(b->ext))
		odsm__drop_copy(b->g, &b->ext);
	b->g = 0;
	b->ext = 0;
	return 0;
}

int odsm_arc_clone(const odsm_arc *a, odsm_arc *out)
{
	uint64_t old;
	int ret;

	if (!a || !out || !a->g || !a->cnt)
		return -EINVAL;
	ret = odsm_fetch_add(a->cnt, 1, &old);
	if (ret)
		return ret == -EINVAL ? -ESTALE : ret;
	if (!old) {
		/* not a live reference: undo, refuse */
		odsm_fetch_add(a->cnt, (uint64_t)-1, NULL);
		return -ESTALE;
	}
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
	uint64_t old;
	int ret;

	if (!a || !a->g || !a->cnt)
		return -EINVAL;
	ret = odsm_fetch_add(a->cnt, (uint64_t)-1, &old);
	if (ret)
		return ret == -EINVAL ? -ESTALE : ret;
	if (!old) {
		odsm_fetch_add(a->cnt, 1, NULL);
		return -ESTALE;
	}
	if (old == 1)
		ret = arc_free(a);
	a->g = 0;
	a->cnt = 0;
	return ret;
}

int odsm_arc_get_mut(odsm_arc *a, odsm_box *b)
{
	uint64_t old;
	int ret;

	if (!a || !b || !a->g || !a->cnt || b->g)
		return -EINVAL;
	ret = odsm_cmp_swap(a->cnt, 1, 0, &old);
	if (ret)
		return ret == -EINVAL ? -ESTALE : ret;
	if (old != 1)
		return old ? -EBUSY : -ESTALE;
	odsm_free(a->cnt);
	b->g = a->g;
	b->ext = 0;
	a->g = 0;
	a->cnt = 0;
	return 0;
}
