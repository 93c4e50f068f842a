/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm mutex, inside: what the API (odsm_mutex.c) asks of a lock kind
 * (odsm_mutex_cas.c, odsm_mutex_fifo.c).  Not installed.
 */
#ifndef ODSM_MUTEX_INT_H
#define ODSM_MUTEX_INT_H

#include <stdbool.h>
#include "odsm_sync.h"

/* The kind of the mutex at mutex, or -EINVAL when it is not one. */
int odsm__mutex_kind(uint64_t mutex, unsigned int *kind);
/*
 * Take the lock of g->mutex (wait: with backoff, else -EBUSY): 0, or
 * -EOWNERDEAD (taken from a dead holder), with g->flags HELD (| INCONS)
 * and g->word set; -ENOTRECOVERABLE, -EHOSTDOWN, -EDEADLK, ...
 */
int odsm__mutex_lock_cas(struct odsm_guard *g, bool wait);
int odsm__mutex_lock_fifo(struct odsm_guard *g, bool wait);
/* Still ours (nobody took it for dead)?  0 or -EPERM. */
int odsm__mutex_still_ours_cas(struct odsm_guard *g);
int odsm__mutex_still_ours_fifo(struct odsm_guard *g);
/* Release the lock g holds (unrecoverable if it is inconsistent). */
int odsm__mutex_release_cas(struct odsm_guard *g);
int odsm__mutex_release_fifo(struct odsm_guard *g);
/* The guarded object is consistent again. */
int odsm__mutex_consistent_cas(struct odsm_guard *g);
int odsm__mutex_consistent_fifo(struct odsm_guard *g);

#endif /* ODSM_MUTEX_INT_H */
