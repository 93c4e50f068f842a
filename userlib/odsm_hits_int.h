/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm's table of cache hits (odsm_hits.c), as odsm.c uses it.
 */
#ifndef ODSM_HITS_INT_H
#define ODSM_HITS_INT_H

#include <stdbool.h>
#include <stdint.h>

/* Map the hit page of the open file fd; 0 or -errno (no hits then). */
int odsm__hits_init(int fd);
void odsm__hits_fini(void);
/* Use page as the hit page (NULL: none), with an empty table: the host
 * tests give one of their own.
 */
struct odsm_hits_page;
void odsm__hits_attach(const struct odsm_hits_page *page);
/*
 * This node's incarnation as the hit page keeps it (0: in no cluster):
 * false when there is no page, or the module keeps none there.
 */
bool odsm__hits_node_inc(uint64_t *inc);
/* The hit page's forget_epoch, read before a BORROW that may be recorded. */
uint64_t odsm__hits_epoch(void);
/* A borrow of g served from the table: the copy, its count raised. */
bool odsm__hit_get(uint64_t g, uint64_t *copy);
/*
 * Record the reference a BORROW of g just took (copy at copy, the epoch
 * read before the BORROW), counting the borrow that took it.  false: the
 * table has no room; the borrow keeps its reference to itself.
 */
bool odsm__hit_record(uint64_t g, uint64_t copy, uint64_t epoch);
/*
 * Give back the idle references of g: a mutable borrow may then take the
 * copy over (only one nobody references is taken) instead of moving it.
 */
void odsm__hit_release(uint64_t g);
/* The return of a borrow counted in the table; false if none counts it. */
bool odsm__hit_return(uint64_t g, uint64_t copy);

#endif /* ODSM_HITS_INT_H */
