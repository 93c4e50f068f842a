/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm: asynchronous operations through io_uring.
 *
 * Every odsm operation that may wait for another node (read, write,
 * atomics, alloc, free, shared and mutable borrows, returns, write-backs,
 * delegation calls) can be submitted without waiting: many go out
 * together, their round trips overlap, and their completions are reaped
 * later.  Each runs the ioctl of the same name in the module, with the
 * same argument struct (uapi/linux/odsm.h, struct odsm_uring_cmd), so it
 * checks and answers exactly as the blocking call does.
 *
 * The ring is io_uring spoken by raw system calls (no liburing): a
 * handful of lines, no library to link or ship in static test programs.
 * A ring belongs to one thread at a time.  Call odsm_init() first: the
 * commands name the process's /dev/odsm file, so a BORROW's reference is
 * the process's, returned by odsm_return() or an ODSM_IOC_RETURN.
 */
#ifndef ODSM_ASYNC_H
#define ODSM_ASYNC_H

#include <stddef.h>
#include <stdint.h>
#include "odsm.h"

struct odsm_async;

/* A ring for depth operations in flight (1..4096, rounded up to 2^n). */
int odsm_async_new(unsigned int depth, struct odsm_async **out);
/* Wait for every operation in flight, then free the ring. */
void odsm_async_free(struct odsm_async *a);

/*
 * Queue the ioctl op (ODSM_IOC_READ, ..._BORROW, ...) on arg, its usual
 * argument, which must stay in place until the completion; tag comes back
 * with it.  Nothing is sent before odsm_async_submit().  -EBUSY when depth
 * operations are queued or in flight already.
 */
int odsm_async_queue(struct odsm_async *a, unsigned int op, void *arg,
		     uint64_t tag);
/* Send what is queued: how many went, or -errno. */
int odsm_async_submit(struct odsm_async *a);

struct odsm_async_done {
	uint64_t tag;
	int result;		/* 0 or -errno, as the ioctl returns */
};

/*
 * Reap up to max completions into done, waiting until at least min
 * (no more than are in flight) are there: how many, or -errno.
 */
int odsm_async_reap(struct odsm_async *a, struct odsm_async_done *done,
		    unsigned int max, unsigned int min);
/* Operations queued or submitted and not reaped yet. */
unsigned int odsm_async_pending(const struct odsm_async *a);

/* ---- batches: N operations at once, on a ring of the calling thread ----- */

struct odsm_range {
	uint64_t gaddr;		/* any global address; color ignored */
	void *buf;
	size_t len;
};

/*
 * Read (write) the n ranges, all in flight together.  res[i] (when res is
 * not NULL) is each one's result; returns 0 when all succeeded, else the
 * first failed one's -errno.  The same bytes as n odsm_read() calls.
 */
int odsm_read_many(const struct odsm_range *r, unsigned int n, int *res);
int odsm_write_many(const struct odsm_range *r, unsigned int n, int *res);

/*
 * Shared borrows of n objects: r[i].g names each (a colored address, as
 * odsm_box_share() gives), and p[i] is where to read it after, as
 * odsm_ref_get() gives; the remote ones not cached here are fetched all
 * at once.  End each with odsm_return().  A borrow that failed (res[i])
 * is not out and p[i] is NULL.  Returns 0, or the first failure.  The
 * -DODSM_CHECK checker does not see these borrows.
 */
int odsm_borrow_many(odsm_ref *r, const void **p, unsigned int n, int *res);

#endif /* ODSM_ASYNC_H */
