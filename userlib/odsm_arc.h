/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm shared immutable objects (DRust's Arc): an object that any node
 * clones and reads, through the node's cached copy, and that the last
 * drop frees at its home.  Nobody writes it: there is no mutable access
 * while it is shared (odsm_arc_get_mut is -EBUSY then), so every copy of
 * it on every node holds the same bytes for as long as it lives.
 *
 * The handle is plain data: the object's colored address and the global
 * address of its reference count, a word at the object's home that
 * clones and drops change with the heap's atomics (no message to an
 * owner, no order to keep).  Documentation/odsm/libodsm.rst ("Shared
 * immutable objects") has the rules.
 *
 * Every function returns 0 or a negative errno value:
 *   -EINVAL   a NULL or empty handle or box
 *   -ESTALE   the object was freed (its count reached zero)
 *   -EBUSY    get_mut: other references exist (a write is refused);
 *             clone: the count is at its limit (2^48 - 1)
 */
#ifndef ODSM_ARC_H
#define ODSM_ARC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct odsm_box;
struct odsm_ref;

typedef struct odsm_arc {
	uint64_t g;		/* the object's colored address */
	uint64_t cnt;		/* its reference count's global address */
} odsm_arc;

/* Freeze the object *b owns into *a, its first reference: *b is empty. */
int odsm_arc_new(struct odsm_box *b, odsm_arc *a);
/* One more reference, from a live one (on any node). */
int odsm_arc_clone(const odsm_arc *a, odsm_arc *out);
/* A shared borrow of the object (odsm_return() ends it). */
int odsm_arc_read(const odsm_arc *a, struct odsm_ref *r, const void **p);
/* End this reference (*a becomes empty); the last frees the object. */
int odsm_arc_drop(odsm_arc *a);
/*
 * The last reference back into an owner box, which may write: -EBUSY
 * while any other reference exists (*a is kept).
 */
int odsm_arc_get_mut(odsm_arc *a, struct odsm_box *b);

#ifdef __cplusplus
}
#endif

#endif /* ODSM_ARC_H */
