/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm tied allocation (DRust's TBox): objects allocated *into* a
 * parent's group live in the same heap object as the parent, so they
 * are wherever the parent is.
 *
 * A group is one heap object: a header, the parent's bytes, then an
 * arena that tied children are carved from.  A shared borrow of the
 * group is one fetch that brings the parent and every child (one
 * transfer, not one per child); a mutable borrow moves them all at
 * once; a child is read or written through the group's borrow, with no
 * lookup of its own.  A child is named by an odsm_tbox: its group's id
 * and its offset in the group.  Both stay the same when the group moves
 * (a mutable borrow on another node, odsm_tgroup_grow()), so a child's
 * name can be kept anywhere, the parent's own bytes included (a list
 * node naming its payload).
 *
 * The children are bytes of the group object: they have no color, no
 * owner and no borrows of their own, and the group's color covers them
 * (DRust's rule; Documentation/odsm/libodsm.rst, "Tied allocation").
 *
 * Every function returns 0 or a negative errno value:
 *   -EINVAL   a NULL argument, an empty box or borrow, a size of 0
 *   -ENOTTY   the object is not a group (wrong kind)
 *   -EXDEV    a child of another group
 *   -ERANGE   an offset that names no child of the group
 *   -ENOSPC   the group's arena is full (odsm_tgroup_grow() makes room)
 *   -E2BIG    a group past ODSM_TGROUP_MAX bytes
 *   -ESTALE   the group was freed (a remote home says so; a local one's
 *             header is marked freed while its slot holds it: a stale
 *             local address is otherwise undefined, as for any object)
 * and those of odsm_borrow() / odsm_borrow_mut() (-EHOSTDOWN, ...).
 */
#ifndef ODSM_TBOX_H
#define ODSM_TBOX_H

#include <stddef.h>
#include <stdint.h>
/* the borrows below are odsm.h's inline ones (which includes this file
 * at its end: the guard above is set first, so either order works)
 */
#include "odsm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The name of a tied child; plain data, valid on every node. */
typedef struct odsm_tbox {
	uint64_t gid;	/* its group's id (the group's first colored address) */
	uint32_t off;	/* its bytes' offset from the group's start */
	uint32_t size;	/* its size, as allocated */
} odsm_tbox;

/*
 * The largest group: its object stays below the kernel's lazy_threshold
 * (1 MiB by default), so a shared borrow of it is one whole transfer,
 * never a page-by-page fill.
 */
#define ODSM_TGROUP_MAX		(512U << 10)
/* what a group adds to its parent and children (its header) */
#define ODSM_TGROUP_HDR		32U
/* and to each child (its own header; children are 16-byte aligned) */
#define ODSM_TBOX_HDR		16U

/*
 * A new group in this node's partition (odsm_tgroup_new) or in node's
 * (odsm_tgroup_new_on), owned by *grp: a zeroed parent of parent_size
 * bytes and an arena of arena_size bytes for children (each child takes
 * ODSM_TBOX_HDR more than its size, rounded up to 16).
 */
int odsm_tgroup_new(struct odsm_box *grp, size_t parent_size,
		    size_t arena_size);
int odsm_tgroup_new_on(struct odsm_box *grp, unsigned int node,
		       size_t parent_size, size_t arena_size);
/* Free the group, its parent and every child; *grp becomes empty. */
int odsm_tgroup_drop(struct odsm_box *grp);
/*
 * Make room: the group moves (here) to a new object whose arena is
 * arena_size bytes (not less than it has); its id and every child's name
 * stay valid, the old object is freed.  No borrow of it may be out.
 */
int odsm_tgroup_grow(struct odsm_box *grp, size_t arena_size);

/*
 * 0 if g (a group's bytes, as a borrow of it gives them) holds a group's
 * header; -ESTALE if one marked freed, -ENOTTY if not a group's.  The
 * slow path of the inline borrows below.
 */
int odsm__tg_check(const void *g);

/*
 * The group borrows are inline, like odsm.h's: in a program built with
 * -DODSM_CHECK the checking mode records them where the program's own
 * odsm_return() / odsm_return_mut() will look for them.
 */

/* A borrow just taken: its bytes must be a group's, or it goes back. */
static inline int odsm__tg_ref_done(struct odsm_ref *r, int ret,
				    const void *g, const void **parent)
{
	if (ret)
		return ret;
	ret = odsm__tg_check(g);
	if (ret) {
		odsm_return(r);
		return ret;
	}
	*parent = (const char *)g + ODSM_TGROUP_HDR;
	return 0;
}

static inline int odsm__tg_mut_done(struct odsm_mut *m, int ret, void *g,
				    void **parent)
{
	if (ret)
		return ret;
	ret = odsm__tg_check(g);
	if (ret) {
		/* it may have moved: the owner learns where */
		odsm_return_mut(m);
		return ret;
	}
	*parent = (char *)g + ODSM_TGROUP_HDR;
	return 0;
}

/*
 * A shared borrow of the group that *grp owns, or that a box read out of
 * another object's bytes names (_field: a list node's next group):
 * one fetch when the group is remote.  *parent points at the parent's
 * bytes (NULL when it fails).  End it with odsm_return().
 */
static inline int odsm_tgroup_borrow(struct odsm_box *grp, struct odsm_ref *r,
				     const void **parent)
{
	const void *g = NULL;
	int ret;

	if (parent)
		*parent = NULL;
	if (!grp || !r || !parent || !grp->g)
		return -EINVAL;
	ret = odsm_borrow(grp, r, &g);
	return odsm__tg_ref_done(r, ret, g, parent);
}

static inline int odsm_tgroup_borrow_field(const struct odsm_box *field,
					   struct odsm_ref *r,
					   const void **parent)
{
	const void *g = NULL;
	int ret;

	if (parent)
		*parent = NULL;
	if (!field || !r || !parent || !field->g)
		return -EINVAL;
	ret = odsm_borrow_field(field, r, &g);
	return odsm__tg_ref_done(r, ret, g, parent);
}

/*
 * A mutable borrow: a remote group moves here, children with it.  _at:
 * through an owner box in the heap at owner (odsm_borrow_mut_at(): a
 * name's box).  End it with odsm_return_mut().
 */
static inline int odsm_tgroup_borrow_mut(struct odsm_box *grp,
					 struct odsm_mut *m, void **parent)
{
	void *g = NULL;
	int ret;

	if (parent)
		*parent = NULL;
	if (!grp || !m || !parent || !grp->g)
		return -EINVAL;
	ret = odsm_borrow_mut(grp, m, &g);
	return odsm__tg_mut_done(m, ret, g, parent);
}

static inline int odsm_tgroup_borrow_mut_at(uint64_t owner, struct odsm_mut *m,
					    void **parent)
{
	void *g = NULL;
	int ret;

	if (parent)
		*parent = NULL;
	if (!m || !parent)
		return -EINVAL;
	ret = odsm_borrow_mut_at(owner, m, &g);
	return odsm__tg_mut_done(m, ret, g, parent);
}

/* A new child of size bytes (zeroed) in the group held by *gm. */
int odsm_tbox_new(struct odsm_mut *gm, size_t size, odsm_tbox *c, void **p);
/* Where child *c is, in the group a shared or mutable borrow holds. */
int odsm_tbox_get(struct odsm_ref *gr, const odsm_tbox *c, const void **p);
int odsm_tbox_get_mut(struct odsm_mut *gm, const odsm_tbox *c, void **p);

/* How full the group a shared borrow holds is (any may be NULL). */
int odsm_tgroup_stat(struct odsm_ref *gr, uint32_t *children,
		     uint32_t *used, uint32_t *size);

#ifdef __cplusplus
}
#endif

#endif /* ODSM_TBOX_H */
