/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A bare io_uring for the tests that must write SQE fields libodsm never
 * writes wrong (flags, reserved words, 128-byte SQEs, IOSQE_ASYNC, a
 * cancel): raw system calls, one SQE in flight at a time per call.
 */
#ifndef _ODSM_URING_RAW_H
#define _ODSM_URING_RAW_H

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/io_uring.h>

struct t_ring {
	int fd;
	unsigned int sqe_size;		/* 64 or 128 */
	void *map;
	size_t map_len;
	unsigned int *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_cqe *cqes;
	uint8_t *sqes;
	size_t sqes_len;
};

/* 0 or -errno; flags: io_uring_setup's (IORING_SETUP_SQE128, ...) */
static inline int t_ring_init(struct t_ring *r, unsigned int entries,
			      unsigned int flags)
{
	struct io_uring_params p;
	size_t sq_len, cq_len;

	memset(&p, 0, sizeof(p));
	memset(r, 0, sizeof(*r));
	p.flags = flags;
	r->fd = (int)syscall(__NR_io_uring_setup, entries, &p);
	if (r->fd < 0)
		return -errno;
	r->sqe_size = (flags & IORING_SETUP_SQE128) ? 128 : 64;
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	r->map_len = sq_len > cq_len ? sq_len : cq_len;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		      r->fd, IORING_OFF_SQ_RING);
	if (r->map == MAP_FAILED)
		return -errno;
	r->sqes_len = (size_t)p.sq_entries * r->sqe_size;
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       r->fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED)
		return -errno;
	r->sq_tail = (unsigned int *)((char *)r->map + p.sq_off.tail);
	r->sq_mask = (unsigned int *)((char *)r->map + p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)((char *)r->map + p.sq_off.array);
	r->cq_head = (unsigned int *)((char *)r->map + p.cq_off.head);
	r->cq_tail = (unsigned int *)((char *)r->map + p.cq_off.tail);
	r->cq_mask = (unsigned int *)((char *)r->map + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)((char *)r->map + p.cq_off.cqes);
	return 0;
}

static inline void t_ring_exit(struct t_ring *r)
{
	munmap(r->sqes, r->sqes_len);
	munmap(r->map, r->map_len);
	close(r->fd);
}

/* The next SQE, zeroed (all of a 128-byte one); queued by t_ring_push(). */
static inline struct io_uring_sqe *t_ring_sqe(struct t_ring *r)
{
	unsigned int idx = *r->sq_tail & *r->sq_mask;
	struct io_uring_sqe *sqe =
		(struct io_uring_sqe *)(r->sqes + (size_t)idx * r->sqe_size);

	memset(sqe, 0, r->sqe_size);
	r->sq_array[idx] = idx;
	return sqe;
}

static inline void t_ring_push(struct t_ring *r)
{
	__atomic_store_n(r->sq_tail, *r->sq_tail + 1, __ATOMIC_RELEASE);
}

/* An odsm command SQE: cmd_op op, command area {arg, flags, reserved}. */
static inline struct io_uring_sqe *t_ring_cmd(struct t_ring *r, int fd,
					      uint32_t op, uint64_t arg,
					      uint32_t flags, uint32_t reserved,
					      uint64_t tag)
{
	struct odsm_uring_cmd c = { .arg = arg, .flags = flags,
				    .reserved = reserved };
	struct io_uring_sqe *sqe = t_ring_sqe(r);

	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = op;
	sqe->user_data = tag;
	memcpy(sqe->cmd, &c, sizeof(c));
	return sqe;
}

/* Submit n pushed SQEs and wait for min CQEs: io_uring_enter's result. */
static inline int t_ring_enter(struct t_ring *r, unsigned int n,
			       unsigned int min)
{
	int ret = (int)syscall(__NR_io_uring_enter, r->fd, n, min,
			       min ? IORING_ENTER_GETEVENTS : 0, NULL, 0);

	return ret < 0 ? -errno : ret;
}

/* Take one CQE if there is one: 1, else 0. */
static inline int t_ring_cqe(struct t_ring *r, uint64_t *tag, int *res)
{
	unsigned int head = *r->cq_head;
	struct io_uring_cqe *cqe;

	if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		return 0;
	cqe = &r->cqes[head & *r->cq_mask];
	*tag = cqe->user_data;
	*res = cqe->res;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return 1;
}

/* One command, submitted and waited for: its CQE's res. */
static inline int t_ring_run(struct t_ring *r, int fd, uint32_t op,
			     uint64_t arg, uint32_t flags, uint32_t reserved)
{
	uint64_t tag;
	int res, ret;

	t_ring_cmd(r, fd, op, arg, flags, reserved, 7);
	t_ring_push(r);
	ret = t_ring_enter(r, 1, 1);
	if (ret < 0)
		return ret;
	while (!t_ring_cqe(r, &tag, &res)) {
		ret = t_ring_enter(r, 0, 1);
		if (ret < 0)
			return ret;
	}
	return res;
}

#endif /* _ODSM_URING_RAW_H */
