/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm mutex, inside: what the API (odsm_mutex.c) asks of a lock kind
 * (odsm_mutex_cas.c, odsm_mutex_fifo.c, odsm_mutex_deleg.c).  Not
 * installed.
 */
#ifndef ODSM_MUTEX_INT_H
#define ODSM_MUTEX_INT_H

#include <stdbool.h>
#include "odsm_sync.h"

/* The kind of the mutex at mutex, or -EINVAL when it is not one. */
int odsm__mutex_kind(uint64_t mutex, unsigned int *kind);

struct odsm_mutex_obj;
/*
 * The delegated kind: entrust its queue to this process's runtime
 * (odsm_spawn_start(); -ESRCH without one) and keep the handle in *mo;
 * at free, drop that handle (the trustee frees the queue).
 */
int odsm__mutex_new_deleg(struct odsm_mutex_obj *mo);
int odsm__mutex_free_deleg(uint64_t mutex);
/*
 * Take the lock of g->mutex (wait: with backoff, else -EBUSY): 0, or
 * -EOWNERDEAD (taken from a dead holder), with g->flags HELD (| INCONS)
 * and g->word set; -ENOTRECOVERABLE, -EHOSTDOWN, -EDEADLK, ...
 */
int odsm__mutex_lock_cas(struct odsm_guard *g, bool wait);
int odsm__mutex_lock_fifo(struct odsm_guard *g, bool wait);
int odsm__mutex_lock_deleg(struct odsm_guard *g, bool wait);
/* Still ours (nobody took it for dead)?  0 or -EPERM. */
int odsm__mutex_still_ours_cas(struct odsm_guard *g);
int odsm__mutex_still_ours_fifo(struct odsm_guard *g);
int odsm__mutex_still_ours_deleg(struct odsm_guard *g);
/* Release the lock g holds (unrecoverable if it is inconsistent). */
int odsm__mutex_release_cas(struct odsm_guard *g);
int odsm__mutex_release_fifo(struct odsm_guard *g);
int odsm__mutex_release_deleg(struct odsm_guard *g);
/* The guarded object is consistent again. */
int odsm__mutex_consistent_cas(struct odsm_guard *g);
int odsm__mutex_consistent_fifo(struct odsm_guard *g);
int odsm__mutex_consistent_deleg(struct odsm_guard *g);

#endif /* ODSM_MUTEX_INT_H */
