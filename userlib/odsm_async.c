// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm: asynchronous operations through io_uring (odsm_async.h), on a
 * ring set up and driven by raw system calls.
 *
 * The ring protocol: the kernel reads SQ entries between the SQ head and
 * the tail we publish (a release store), and posts completions between
 * the CQ head we publish and its tail (read with an acquire load).  Each
 * SQ entry is IORING_OP_URING_CMD on odsm_rt.fd: cmd_op the ioctl, the
 * command area a struct odsm_uring_cmd naming the argument.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/io_uring.h>
#include "odsm_async.h"

struct odsm_async {
	int fd;
	unsigned int entries;		/* SQ and CQ sizes (CQ is 2x) */
	unsigned int queued;		/* in the SQ, not yet submitted */
	unsigned int pending;		/* queued + in flight */
	/* the SQ ring */
	void *sq_map;
	size_t sq_map_len;
	unsigned int *sq_head, *sq_tail, *sq_mask, *sq_array;
	struct io_uring_sqe *sqes;
	size_t sqes_len;
	/* the CQ ring (in the SQ ring's mapping: IORING_FEAT_SINGLE_MMAP) */
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_cqe *cqes;
};

static int sys_setup(unsigned int entries, struct io_uring_params *p)
{
	return (int)syscall(__NR_io_uring_setup, entries, p);
}

static int sys_enter(int fd, unsigned int submit, unsigned int min,
		     unsigned int flags)
{
	return (int)syscall(__NR_io_uring_enter, fd, submit, min, flags,
			    NULL, 0);
}

#define AT(base, off) ((void *)((char *)(base) + (off)))

int odsm_async_new(unsigned int depth, struct odsm_async **out)
{
	struct io_uring_params p;
	struct odsm_async *a;
	size_t sq_len, cq_len;
	int ret;

	*out = NULL;
	if (!depth || depth > 4096)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	memset(&p, 0, sizeof(p));
	a->fd = sys_setup(depth, &p);
	if (a->fd < 0) {
		ret = -errno;
		goto err_free;
	}
	/* one mapping for both rings: every kernel odsm supports has it */
	ret = -EOPNOTSUPP;
	if (!(p.features & IORING_FEAT_SINGLE_MMAP))
		goto err_close;
	a->entries = p.sq_entries;
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	a->sq_map_len = sq_len > cq_len ? sq_len : cq_len;
	a->sq_map = mmap(NULL, a->sq_map_len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, a->fd, IORING_OFF_SQ_RING);
	if (a->sq_map == MAP_FAILED) {
		ret = -errno;
		goto err_close;
	}
	a->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
	a->sqes = mmap(NULL, a->sqes_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, a->fd, IORING_OFF_SQES);
	if (a->sqes == MAP_FAILED) {
		ret = -errno;
		goto err_unmap;
	}
	a->sq_head = AT(a->sq_map, p.sq_off.head);
	a->sq_tail = AT(a->sq_map, p.sq_off.tail);
	a->sq_mask = AT(a->sq_map, p.sq_off.ring_mask);
	a->sq_array = AT(a->sq_map, p.sq_off.array);
	a->cq_head = AT(a->sq_map, p.cq_off.head);
	a->cq_tail = AT(a->sq_map, p.cq_off.tail);
	a->cq_mask = AT(a->sq_map, p.cq_off.ring_mask);
	a->cqes = AT(a->sq_map, p.cq_off.cqes);
	*out = a;
	return 0;

err_unmap:
	munmap(a->sq_map, a->sq_map_len);
err_close:
	close(a->fd);
err_free:
	free(a);
	return ret;
}

void odsm_async_free(struct odsm_async *a)
{
	struct odsm_async_done d[16];

	if (!a)
		return;
	/* queued ones go out too: their arguments are the caller's */
	if (a->queued)
		odsm_async_submit(a);
	while (a->pending > a->queued &&
	       odsm_async_reap(a, d, 16, 1) > 0)
		;
	munmap(a->sqes, a->sqes_len);
	munmap(a->sq_map, a->sq_map_len);
	close(a->fd);
	free(a);
}

int odsm_async_queue(struct odsm_async *a, unsigned int op, void *arg,
		     uint64_t tag)
{
	struct odsm_uring_cmd c = { .arg = (uint64_t)(uintptr_t)arg };
	struct io_uring_sqe *sqe;
	unsigned int tail, idx;

	if (odsm_rt.fd < 0)
		return -EBADF;
	/* the CQ has twice the room: depth in flight never overflows it */
	if (a->pending >= a->entries)
		return -EBUSY;
	tail = *a->sq_tail;	/* only we write it */
	idx = tail & *a->sq_mask;
	sqe = &a->sqes[idx];
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = odsm_rt.fd;
	sqe->cmd_op = op;
	sqe->user_data = tag;
	memcpy(sqe->cmd, &c, sizeof(c));
	a->sq_array[idx] = idx;
	__atomic_store_n(a->sq_tail, tail + 1, __ATOMIC_RELEASE);
	a->queued++;
	a->pending++;
	return 0;
}

int odsm_async_submit(struct odsm_async *a)
{
	int n;

	if (!a->queued)
		return 0;
	n = sys_enter(a->fd, a->queued, 0, 0);
	if (n < 0)
		return -errno;
	a->queued -= n;
	return n;
}

int odsm_async_reap(struct odsm_async *a, struct odsm_async_done *done,
		    unsigned int max, unsigned int min)
{
	unsigned int head, tail, got, n = 0, inflight = a->pending - a->queued;

	if (min > inflight)
		min = inflight;
	if (min > max)
		min = max;
	for (;;) {
		got = 0;
		head = *a->cq_head;
		tail = __atomic_load_n(a->cq_tail, __ATOMIC_ACQUIRE);
		while (head != tail && n < max) {
			const struct io_uring_cqe *cqe =
				&a->cqes[head & *a->cq_mask];

			done[n].tag = cqe->user_data;
			done[n].result = cqe->res;
			n++;
			got++;
			head++;
		}
		/* the entries read: the kernel may reuse them now */
		__atomic_store_n(a->cq_head, head, __ATOMIC_RELEASE);
		a->pending -= got;
		if (n >= min)
			return (int)n;
		if (sys_enter(a->fd, 0, min - n, IORING_ENTER_GETEVENTS) < 0 &&
		    errno != EINTR)
			return n ? (int)n : -errno;
	}
}

unsigned int odsm_async_pending(const struct odsm_async *a)
{
	return a->pending;
}

/* ---- batches ------------------------------------------------------------- */

#define BATCH_DEPTH 64		/* in flight at once per thread */

static pthread_once_t ring_once = PTHREAD_ONCE_INIT;
static pthread_key_t ring_key;
static bool ring_key_ok;
static __thread struct odsm_async *thread_ring;

static void ring_dtor(void *ring)
{
	odsm_async_free(ring);
}

/*
 * A child of fork() would share the forking thread's ring with its parent
 * (the ring's memory is a shared mapping): each would take the other's
 * completions and submit the other's commands.  The child lets go of it,
 * without waiting for commands that are the parent's, and makes its own
 * at its first batch.
 */
static void ring_atfork_child(void)
{
	struct odsm_async *a = thread_ring;

	if (!a)
		return;
	thread_ring = NULL;
	if (ring_key_ok)
		(void)pthread_setspecific(ring_key, NULL);
	munmap(a->sqes, a->sqes_len);
	munmap(a->sq_map, a->sq_map_len);
	close(a->fd);
	free(a);
}

static void ring_key_init(void)
{
	/* without the key a thread's ring outlives it: a leak, not a fault
	 * (and no other key of the process is named in its place)
	 */
	ring_key_ok = !pthread_key_create(&ring_key, ring_dtor);
	(void)pthread_atfork(NULL, NULL, ring_atfork_child);
}

/* The calling thread's ring, set up on its first batch. */
static int my_ring(struct odsm_async **out)
{
	int ret;

	if (!thread_ring) {
		pthread_once(&ring_once, ring_key_init);
		ret = odsm_async_new(BATCH_DEPTH, &thread_ring);
		if (ret)
			return ret;
		if (ring_key_ok)
			(void)pthread_setspecific(ring_key, thread_ring);
	}
	*out = thread_ring;
	return 0;
}

/* A batch's ring that failed: the kernel may still use its commands. */
static void drop_ring(void)
{
	if (ring_key_ok)
		(void)pthread_setspecific(ring_key, NULL);
	thread_ring = NULL;	/* and its arguments leak with it */
}

/* Take back what is queued and not submitted: how many. */
static unsigned int unqueue(struct odsm_async *a)
{
	unsigned int n = a->queued;

	__atomic_store_n(a->sq_tail, *a->sq_tail - n, __ATOMIC_RELEASE);
	a->queued = 0;
	a->pending -= n;
	return n;
}

#define NOT_RUN 1		/* no result is positive */

/*
 * Run the ioctl op on the n arguments at args (size bytes apart), at most
 * BATCH_DEPTH in flight; res[i] each one's result (those that could not
 * be sent: the error that stopped them).  0, or the first failure by
 * index.  *abandoned: the ring failed with commands in flight, which may
 * still write args.
 *
 * A command the module refused for the program's cap on commands in
 * flight (-EBUSY: READ, WRITE and BORROW never answer it themselves) did
 * not run: it goes again, after the next completion of ours, or after a
 * pause when none of ours is in flight (other threads hold the cap).
 */
static int run_many(unsigned int op, void *args, size_t size, unsigned int n,
		    int *res, int *abandoned)
{
	struct odsm_async_done d[BATCH_DEPTH];
	unsigned int redo[BATCH_DEPTH], nredo = 0;
	unsigned int sent = 0, done = 0, i, t, qr, qs;
	struct odsm_async *a;
	int k, ret, q;

	*abandoned = 0;
	for (i = 0; i < n; i++)
		res[i] = NOT_RUN;
	ret = my_ring(&a);
	if (ret)
		goto not_run;
	while (done < n) {
		q = 0;
		qr = 0;
		qs = 0;
		while (nredo && !(q = odsm_async_queue(a, op, (char *)args +
						       redo[nredo - 1] * size,
						       redo[nredo - 1]))) {
			nredo--;
			qr++;
		}
		while (!q && sent < n &&
		       !(q = odsm_async_queue(a, op, (char *)args + sent * size,
					      sent))) {
			sent++;
			qs++;
		}
		/* no device (odsm_init() not called): nothing will run */
		if (q && q != -EBUSY && !a->pending) {
			ret = q;
			goto not_run;
		}
		ret = odsm_async_submit(a);
		if (ret < 0) {
			/* the kernel took none: they are sent again, or not
			 * (the redone ones are still in redo[] past nredo)
			 */
			unqueue(a);
			nredo += qr;
			sent -= qs;
			if (!a->pending)
				goto not_run;
		}
		if (!a->pending) {	/* all refused by the cap: wait */
			usleep(1000);
			continue;
		}
		k = odsm_async_reap(a, d, BATCH_DEPTH, 1);
		if (k < 0) {
			drop_ring();
			*abandoned = 1;
			return k;
		}
		for (i = 0; i < (unsigned int)k; i++) {
			t = (unsigned int)d[i].tag;
			if (t >= n)
				continue;	/* never ours */
			if (d[i].result == -EBUSY && nredo < BATCH_DEPTH) {
				redo[nredo++] = t;
				continue;
			}
			res[t] = d[i].result;
			done++;
		}
	}
	for (i = 0; i < n; i++)
		if (res[i])
			return res[i];
	return 0;

not_run:
	for (i = 0; i < n; i++)
		if (res[i] == NOT_RUN)
			res[i] = ret;
	for (i = 0; i < n; i++)
		if (res[i])
			return res[i];
	return ret;
}

static int rw_many(unsigned int op, const struct odsm_range *r,
		   unsigned int n, int *res)
{
	struct odsm_rw *rw;
	int *own = NULL, abandoned, ret;
	unsigned int i;

	if (!n)
		return 0;
	rw = calloc(n, sizeof(*rw));
	if (!res)
		res = own = calloc(n, sizeof(*res));
	if (!rw || !res) {
		free(rw);
		free(own);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		rw[i].gaddr = r[i].gaddr;
		rw[i].buf = (uint64_t)(uintptr_t)r[i].buf;
		rw[i].len = r[i].len;
	}
	ret = run_many(op, rw, sizeof(*rw), n, res, &abandoned);
	if (!abandoned) {
		free(rw);
		free(own);
	}
	return ret;
}

int odsm_read_many(const struct odsm_range *r, unsigned int n, int *res)
{
	return rw_many(ODSM_IOC_READ, r, n, res);
}

int odsm_write_many(const struct odsm_range *r, unsigned int n, int *res)
{
	return rw_many(ODSM_IOC_WRITE, r, n, res);
}

int odsm_borrow_many(odsm_ref *r, const void **p, unsigned int n, int *res)
{
	struct odsm_borrow *b;
	unsigned int i, nr = 0, *idx;
	int *own = NULL, *bres, abandoned = 0, ret = 0, first = 0;

	if (!n)
		return 0;
	b = calloc(n, sizeof(*b));
	idx = calloc(n, sizeof(*idx));
	bres = calloc(n, sizeof(*bres));
	if (!res)
		res = own = calloc(n, sizeof(*res));
	if (!b || !idx || !bres || !res) {
		ret = -ENOMEM;
		goto out;
	}
	/* local objects are read in place; the remote ones go together */
	for (i = 0; i < n; i++) {
		r[i].ext = 0;
		p[i] = NULL;
		res[i] = 0;
		if (!odsm_in_heap(r[i].g))
			res[i] = -EINVAL;
		else if (odsm_is_local(r[i].g))
			p[i] = odsm_ptr(r[i].g);
		else {
			b[nr].gaddr = r[i].g;
			idx[nr++] = i;
		}
	}
	if (nr > 1) {
		/* small objects: one round trip per home brings them all,
		 * and the borrows below hit (a hint: its failure is theirs)
		 */
		uint64_t *g = calloc(nr, sizeof(*g));

		for (i = 0; g && i < nr; i += ODSM_PREFETCH_MAX) {
			unsigned int k, m = nr - i < ODSM_PREFETCH_MAX ?
					    nr - i : ODSM_PREFETCH_MAX;

			for (k = 0; k < m; k++)
				g[i + k] = b[i + k].gaddr;
			odsm_prefetch(g + i, m);
		}
		free(g);
	}
	if (nr)
		ret = run_many(ODSM_IOC_BORROW, b, sizeof(*b), nr, bres,
			       &abandoned);
	if (abandoned)
		return ret;
	for (i = 0; i < nr; i++) {
		res[idx[i]] = bres[i];
		if (bres[i])
			continue;
		r[idx[i]].ext = odsm__copy_word(b[i].addr);
		p[idx[i]] = (const void *)(uintptr_t)b[i].addr;
	}
	for (i = 0; i < n && !first; i++)
		first = res[i];
	ret = first;
out:
	free(b);
	free(idx);
	free(bres);
	free(own);
	return ret;
}
