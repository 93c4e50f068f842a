// SPDX-License-Identifier: GPL-2.0
/*
 * Long heap operations must not stall everyone else on the heap (issue 12,
 * finding 5).  ODSM_IOC_MOVE copies an object of up to part_size and
 * ODSM_ALLOC_ZERO clears one; every fault of every process mapping the
 * heap, every allocator ioctl and a peer's PING answer take the heap's
 * lock.  While one thread runs the long operation in a loop, another
 * measures its own OBJ_INFO ioctl and fault on the heap (the page's PTE is
 * dropped with MADV_DONTNEED before each touch, so every probe faults).
 *
 * The bound is a ratio, not an absolute time (guests run under TCG on a
 * shared host): the longest probe must stay under a quarter of the
 * shortest long operation, or under twice the longest probe seen while the
 * heap was idle plus 10 ms of scheduling slack, whichever is larger.  With
 * the lock held across the whole copy or zeroing, a probe waits for most
 * of the operation.
 */
#include <pthread.h>
#include <time.h>
#include "odsm_vm.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

struct probe {
	int fd;
	uint64_t small;		/* an object for OBJ_INFO */
	uint8_t *page;		/* a page of it, faulted in by each probe */
	volatile int stop;
	volatile int busy;	/* the long operation is running */
	uint64_t max_ns;	/* longest probe that overlapped busy */
	uint64_t n, n_busy;
	int errors;
};

static void *probe_loop(void *arg)
{
	struct probe *p = arg;
	struct odsm_obj_info oi;

	while (!p->stop) {
		int busy = p->busy;
		uint64_t t0 = now_ns(), dt;

		if (t_obj_info(p->fd, p->small, &oi))
			p->errors++;
		if (madvise(p->page, T_PAGE, MADV_DONTNEED))
			p->errors++;
		p->page[0]++;	/* faults: odsm_store_fault() */
		dt = now_ns() - t0;
		busy |= p->busy;
		p->n++;
		if (busy) {
			p->n_busy++;
			if (dt > p->max_ns)
				p->max_ns = dt;
		}
	}
	return NULL;
}

FIXTURE(stall) {
	int fd;
	struct odsm_info in;
	uint8_t *base;
	struct t_objs objs;
	struct probe p;
	pthread_t thr;
	int started;
};

FIXTURE_SETUP(stall)
{
	uint64_t usable;

	self->fd = t_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, t_info(self->fd, &self->in));
	ASSERT_EQ((void *)(uintptr_t)self->in.heap_base,
		  t_map(self->fd, &self->in));
	self->base = (uint8_t *)(uintptr_t)self->in.heap_base;
	self->p.fd = self->fd;
	T_ALLOC(self->fd, &self->objs, T_PAGE, T_PAGE, 0, &self->p.small,
		&usable);
	self->p.page = t_p(self->p.small);
}

FIXTURE_TEARDOWN(stall)
{
	if (self->started) {
		self->p.stop = 1;
		pthread_join(self->thr, NULL);
	}
	t_free_all(self->fd, &self->objs);
	munmap(self->base, self->in.heap_size);
	close(self->fd);
}

/* Run the probe alone for ms: its longest latency on an idle heap. */
static uint64_t idle_max(struct probe *p, unsigned int ms)
{
	pthread_t thr;
	uint64_t m;

	p->stop = 0;
	p->busy = 1;	/* count every probe */
	p->max_ns = 0;
	if (pthread_create(&thr, NULL, probe_loop, p))
		return UINT64_MAX;
	usleep(ms * 1000);
	p->stop = 1;
	pthread_join(thr, NULL);
	m = p->max_ns;
	p->busy = 0;
	p->stop = 0;
	p->max_ns = 0;
	p->n = 0;
	p->n_busy = 0;
	return m;
}

static void judge(struct __test_metadata *_metadata, struct probe *p,
		  uint64_t idle, uint64_t op_min, uint64_t op_max,
		  const char *what)
{
	uint64_t bound = op_min / 4;

	if (bound < 2 * idle + 10000000ULL)
		bound = 2 * idle + 10000000ULL;
	TH_LOG("%s: op %.1f..%.1f ms, probes %llu (%llu during), longest %.2f ms, idle %.2f ms, bound %.2f ms",
	       what, op_min / 1e6, op_max / 1e6,
	       (unsigned long long)p->n, (unsigned long long)p->n_busy,
	       p->max_ns / 1e6, idle / 1e6, bound / 1e6);
	ASSERT_EQ(0, p->errors);
	/*
	 * No probe overlapped the operation: it was too short to be caught
	 * (ALLOC_ZERO of absent pages costs nothing now), and no probe can
	 * have waited longer than the operation took.
	 */
	if (!p->n_busy)
		EXPECT_GE(bound, op_max);
	EXPECT_GE(bound, p->max_ns);
}

/*
 * MOVE a large object whose pages are all present, over and over.  The
 * size is raised (up to 64 MiB) until one move takes 400 ms, so the ratio
 * says something on a fast or slow emulator alike.
 */
TEST_F(stall, move_big_object)
{
	uint64_t size = MiB(8), cg, ncg, usable, t0, dt, idle;
	uint64_t op_min = UINT64_MAX, op_max = 0;
	int i;

	idle = idle_max(&self->p, 300);
	ASSERT_NE(UINT64_MAX, idle);
	for (;;) {
		T_ALLOC(self->fd, &self->objs, size, 0, 0, &cg, &usable);
		memset(t_p(cg), 0x5a, size);	/* every page present */
		t0 = now_ns();
		ASSERT_EQ(0, t_move(self->fd, cg, &ncg));
		dt = now_ns() - t0;
		t_rekeep(&self->objs, cg, ncg);
		cg = ncg;
		if (dt >= 400000000ULL || size >= MiB(64))
			break;
		T_FREE(self->fd, &self->objs, cg);
		size *= 2;
	}
	TH_LOG("object of %llu MiB: a move takes %.1f ms",
	       (unsigned long long)(size >> 20), dt / 1e6);

	ASSERT_EQ(0, pthread_create(&self->thr, NULL, probe_loop, &self->p));
	self->started = 1;
	usleep(20000);
	for (i = 0; i < 4; i++) {
		self->p.busy = 1;
		t0 = now_ns();
		ASSERT_EQ(0, t_move(self->fd, cg, &ncg));
		dt = now_ns() - t0;
		self->p.busy = 0;
		t_rekeep(&self->objs, cg, ncg);
		cg = ncg;
		op_min = dt < op_min ? dt : op_min;
		op_max = dt > op_max ? dt : op_max;
		usleep(5000);
	}
	self->p.stop = 1;
	pthread_join(self->thr, NULL);
	self->started = 0;
	/* and the bytes moved intact */
	ASSERT_TRUE(t_all(t_p(cg), size, 0x5a));
	ASSERT_LT(0ULL, self->p.n_busy);	/* moves of 400 ms: probes ran */
	judge(_metadata, &self->p, idle, op_min, op_max, "move");
}

/*
 * ALLOC_ZERO of the largest object the partition holds, allocated and
 * freed over and over.  Its pages are absent (a free gives them back):
 * with the zeroing done under the lock as a walk over every page index of
 * the object, each probe waited for that walk.
 */
TEST_F(stall, alloc_zero_big_object)
{
	uint64_t size, cg, usable, t0, dt, idle;
	uint64_t op_min = UINT64_MAX, op_max = 0;
	int i;

	/* the largest that fits what earlier tests left */
	for (size = self->in.max_alloc; size >= MiB(64); size /= 2)
		if (!t_alloc(self->fd, size, 0, 0, &cg, &usable)) {
			ASSERT_EQ(0, t_free(self->fd, cg));
			break;
		}
	ASSERT_LE(MiB(64), size);
	idle = idle_max(&self->p, 300);
	ASSERT_NE(UINT64_MAX, idle);
	ASSERT_EQ(0, pthread_create(&self->thr, NULL, probe_loop, &self->p));
	self->started = 1;
	usleep(20000);
	for (i = 0; i < 4; i++) {
		self->p.busy = 1;
		t0 = now_ns();
		ASSERT_EQ(0, t_alloc(self->fd, size, 0, ODSM_ALLOC_ZERO, &cg,
				     &usable));
		dt = now_ns() - t0;
		self->p.busy = 0;
		ASSERT_EQ(0, t_free(self->fd, cg));
		op_min = dt < op_min ? dt : op_min;
		op_max = dt > op_max ? dt : op_max;
		usleep(5000);
	}
	self->p.stop = 1;
	pthread_join(self->thr, NULL);
	self->started = 0;
	judge(_metadata, &self->p, idle, op_min, op_max, "alloc_zero");
}

/*
 * ALLOC_ZERO of an object over pages a former object left (a reused
 * block keeps its pages): allocate, fill, free and allocate the same
 * size zeroed until it lands on the filled blocks, then check the zeroing
 * really cleared every byte, with the probe running.
 */
TEST_F(stall, alloc_zero_clears)
{
	uint64_t size = MiB(4), cg, cg2, usable;

	T_ALLOC(self->fd, &self->objs, size, 0, 0, &cg, &usable);
	memset(t_p(cg), 0xa5, size);
	ASSERT_EQ(0, pthread_create(&self->thr, NULL, probe_loop, &self->p));
	self->started = 1;
	T_FREE(self->fd, &self->objs, cg);
	T_ALLOC(self->fd, &self->objs, size, 0, ODSM_ALLOC_ZERO, &cg2, &usable);
	ASSERT_TRUE(t_all(t_p(cg2), size, 0));
	self->p.stop = 1;
	pthread_join(self->thr, NULL);
	self->started = 0;
	ASSERT_EQ(0, self->p.errors);
}

TEST_HARNESS_MAIN
