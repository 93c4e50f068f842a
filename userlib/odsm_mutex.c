// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm mutex: an object in the global heap guarded by a lock whose
 * state is a word of a mutex object (raw, never borrowed).  Locking
 * takes the lock (odsm_mutex_cas.c, odsm_mutex_fifo.c or
 * odsm_mutex_deleg.c), then a mutable
 * borrow of the guarded object through the owner box in the mutex
 * object (odsm_borrow_mut_at: the object moves here, and the box names
 * the old version until the unlock writes it back, so a holder that
 * dies loses its changes, never the object).  Unlocking writes the box
 * back, then releases the lock.
 */
#include <errno.h>
#include <string.h>
#include "odsm.h"
#include "odsm_sync_int.h"
#include "odsm_mutex_int.h"

int odsm_mutex_new(uint64_t *mutex, unsigned int kind, odsm_box *obj)
{
	struct odsm_mutex_obj mo = { .magic = ODSM_MUTEX_MAGIC ^ kind };
	uint64_t cg;
	int ret;

	if (!mutex || !obj || !obj->g || !odsm_in_heap(obj->g) || !kind ||
	    kind >= ODSM_MUTEX_KINDS)
		return -EINVAL;
	if (kind == ODSM_MUTEX_DELEG) {
		ret = odsm__mutex_new_deleg(&mo);
		if (ret)
			return ret;
	}
	ret = odsm_alloc(sizeof(mo), 64, ODSM_ALLOC_ZERO, &cg);
	if (ret)
		goto err_deleg;
	ret = odsm_write(cg, &mo, sizeof(mo));
	if (!ret)
		ret = odsm_box_store_at(odsm_addr_of(cg) + ODSM_MX_BOX, obj);
	if (ret)
		goto err_free;
	*mutex = cg;		/* colored: odsm_mutex_free() frees it */
	return 0;
err_free:
	odsm_free(cg);
err_deleg:
	if (kind == ODSM_MUTEX_DELEG) {
		odsm_trust t;

		memcpy(&t, mo.ring, sizeof(t));
		odsm_trust_drop(&t);
	}
	return ret;
}

int odsm__mutex_kind(uint64_t mutex, unsigned int *kind)
{
	uint64_t magic;
	int ret;

	if (!mutex || mutex % 16 || !odsm_in_heap(mutex))
		return -EINVAL;
	ret = odsm_read(odsm_addr_of(mutex), &magic, sizeof(magic));
	if (ret)
		return ret;
	*kind = (unsigned int)(magic ^ ODSM_MUTEX_MAGIC);
	if (!*kind || *kind >= ODSM_MUTEX_KINDS)
		return -EINVAL;
	return 0;
}

#define BY_KIND(g, fn) \
	((g)->flags & ODSM_GUARD_DELEG ? fn##_deleg(g) : \
	 (g)->flags & ODSM_GUARD_FIFO ? fn##_fifo(g) : fn##_cas(g))

static int still_ours(struct odsm_guard *g)
{
	return BY_KIND(g, odsm__mutex_still_ours);
}

static int release(struct odsm_guard *g)
{
	return BY_KIND(g, odsm__mutex_release);
}

/* Taken: the borrow of the object, or the lock back after a failure. */
static int borrow(struct odsm_guard *g, int taken, void **p)
{
	odsm_mut m;
	int ret;

	ret = odsm_borrow_mut_at(g->mutex + ODSM_MX_BOX, &m, p);
	if (ret) {
		/* the object is gone with its node: nothing to guard */
		release(g);
		memset(g, 0, sizeof(*g));
		return ret;
	}
	g->m_g = m.g;
	g->m_ext = m.ext;
	return taken;
}

static int lock(uint64_t mutex, struct odsm_guard *g, void **p, bool wait)
{
	unsigned int kind;
	int ret;

	if (!g || !p)
		return -EINVAL;
	*p = NULL;
	memset(g, 0, sizeof(*g));
	ret = odsm__mutex_kind(mutex, &kind);
	if (ret)
		return ret;
	g->mutex = odsm_addr_of(mutex);
	if (kind == ODSM_MUTEX_CAS)
		ret = odsm__mutex_lock_cas(g, wait);
	else if (kind == ODSM_MUTEX_FIFO)
		ret = odsm__mutex_lock_fifo(g, wait);
	else
		ret = odsm__mutex_lock_deleg(g, wait);
	if (ret && ret != -EOWNERDEAD) {
		memset(g, 0, sizeof(*g));
		return ret;
	}
	return borrow(g, ret, p);
}

int odsm_mutex_lock(uint64_t mutex, struct odsm_guard *g, void **p)
{
	return lock(mutex, g, p, true);
}

int odsm_mutex_trylock(uint64_t mutex, struct odsm_guard *g, void **p)
{
	return lock(mutex, g, p, false);
}

int odsm_mutex_consistent(struct odsm_guard *g)
{
	int ret;

	if (!g || !(g->flags & ODSM_GUARD_HELD))
		return -EINVAL;
	if (!(g->flags & ODSM_GUARD_INCONS))
		return 0;
	ret = BY_KIND(g, odsm__mutex_consistent);
	if (!ret)
		g->flags &= ~ODSM_GUARD_INCONS;
	return ret;
}

int odsm_mutex_unlock(struct odsm_guard *g)
{
	odsm_mut m;
	int ret;

	if (!g || !(g->flags & ODSM_GUARD_HELD))
		return -EINVAL;
	/* a holder taken for dead must not write its version back */
	ret = still_ours(g);
	if (ret)
		return ret;
	m.g = g->m_g;
	m.ext = g->m_ext;
	ret = odsm_return_mut(&m);
	if (ret)
		return ret;	/* the borrow (and the lock) stay out */
	ret = release(g);
	memset(g, 0, sizeof(*g));
	return ret;
}

int odsm_mutex_free(uint64_t mutex, odsm_box *obj)
{
	uint64_t at = odsm_addr_of(mutex), box[2], zero = 0;
	unsigned int kind;
	int ret;

	ret = odsm__mutex_kind(mutex, &kind);
	if (!ret)
		ret = odsm_read(at + ODSM_MX_BOX, box, sizeof(box));
	if (!ret)	/* a stale handle must not find a mutex here again */
		ret = odsm_write(at, &zero, sizeof(zero));
	if (ret)
		return ret;
	/*
	 * The queue goes with the last reference to it.  A trustee that
	 * is gone took it along: the mutex object is freed either way.
	 */
	if (kind == ODSM_MUTEX_DELEG)
		odsm__mutex_free_deleg(at);
	if (obj) {
		obj->g = box[0];
		obj->ext = 0;
	} else if (box[0]) {
		odsm_free(box[0]);
	}
	return odsm_free(mutex);
}
