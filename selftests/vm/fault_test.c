// SPDX-License-Identifier: GPL-2.0
/*
 * The fault handler and the node-local page store: first touches get zeroed
 * pages, every process of the node sees the same bytes, touches of local
 * blocks without objects and of other nodes' partitions get SIGBUS, freeing
 * gives pages back and unmaps them everywhere.  Also ODSM_IOC_SET_CONFIG,
 * which the remote-partition tests need: its refusals and limits.
 */
#include <sched.h>
#include <spawn.h>
#include "odsm_vm.h"

extern char **environ;

/* ---- a mapped heap ------------------------------------------------------ */

FIXTURE(heap) {
	int fd;
	struct odsm_info in;
	uint8_t *base;
	uint64_t lo;		/* this node's partition */
	struct t_objs objs;
};

FIXTURE_SETUP(heap)
{
	self->fd = t_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, t_info(self->fd, &self->in));
	ASSERT_EQ((void *)(uintptr_t)self->in.heap_base,
		  t_map(self->fd, &self->in));
	self->base = (uint8_t *)(uintptr_t)self->in.heap_base;
	self->lo = t_local_lo(&self->in);
}

FIXTURE_TEARDOWN(heap)
{
	t_free_all(self->fd, &self->objs);
	munmap(self->base, self->in.heap_size);
	close(self->fd);
}

TEST_F(heap, first_touch_reads_zero)
{
	struct t_stats s0, s1;
	uint64_t cg, usable;
	uint8_t v = 0xff, *p;

	/* a whole-block object: a block nothing used since it was freed */
	T_ALLOC(self->fd, &self->objs, T_BLOCK, 0, 0, &cg, &usable);
	ASSERT_EQ(T_BLOCK, usable);
	p = t_p(cg);

	SNAP(s0);
	ASSERT_EQ(0, t_touch(p, 0, &v));
	EXPECT_EQ(0, v);
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "faults", 1);
	EXPECT_DELTA(s0, s1, "page_allocs", 1);
	EXPECT_DELTA(s0, s1, "pages_in_use", 1);

	/* the rest of that page: no new fault, all zero */
	EXPECT_TRUE(t_all(p, T_PAGE, 0));
	p[17] = 0x5a;
	EXPECT_EQ(0x5a, p[17]);
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "page_allocs", 1);
	EXPECT_DELTA(s0, s1, "pages_in_use", 1);

	/* each further page: one more */
	EXPECT_TRUE(t_all(p + T_PAGE, 1, 0));
	EXPECT_TRUE(t_all(p + T_BLOCK - 1, 1, 0));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "page_allocs", 3);
	EXPECT_DELTA(s0, s1, "pages_in_use", 3);
	EXPECT_DELTA(s0, s1, "sigbus_unbacked", 0);
	EXPECT_DELTA(s0, s1, "sigbus_remote", 0);

	SNAP(s0);
	T_FREE(self->fd, &self->objs, cg);
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "page_frees", 3);
	EXPECT_DELTA(s0, s1, "pages_in_use", -3);
}

TEST_F(heap, first_touch_by_write)
{
	struct t_stats s0, s1;
	uint64_t cg;
	uint8_t v = 0x77, *p;

	T_ALLOC(self->fd, &self->objs, 3 * T_BLOCK, 0, 0, &cg, NULL);
	p = t_p(cg);
	SNAP(s0);
	ASSERT_EQ(0, t_touch(p + T_BLOCK + 100, 1, &v));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "faults", 1);
	EXPECT_DELTA(s0, s1, "page_allocs", 1);
	EXPECT_DELTA(s0, s1, "pages_in_use", 1);
	EXPECT_EQ(0x77, p[T_BLOCK + 100]);
	EXPECT_TRUE(t_all(p + T_BLOCK, 100, 0));
	EXPECT_TRUE(t_all(p + T_BLOCK + 101, T_PAGE - 101, 0));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "page_allocs", 1);
	T_FREE(self->fd, &self->objs, cg);
}

/* A second process that maps the heap itself (fresh open and mmap after
 * dropping the inherited mapping) shares the bytes both ways.
 */
TEST_F(heap, second_process_shares_bytes)
{
	struct t_stats s0, s1;
	uint64_t cg;
	uint8_t *p;
	pid_t pid;

	T_ALLOC(self->fd, &self->objs, 3 * T_PAGE, 0, 0, &cg, NULL);
	p = t_p(cg);
	memset(p, 0xa1, T_PAGE);
	memset(p + 2 * T_PAGE, 0xa3, T_PAGE);

	SNAP(s0);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct odsm_info in;
		int fd;

		if (munmap(self->base, self->in.heap_size) || close(self->fd))
			_exit(2);
		fd = t_open();
		if (fd < 0 || t_info(fd, &in) ||
		    t_map(fd, &in) != (void *)self->base)
			_exit(3);
		if (!t_all(p, T_PAGE, 0xa1) ||
		    !t_all(p + T_PAGE, T_PAGE, 0) ||
		    !t_all(p + 2 * T_PAGE, T_PAGE, 0xa3))
			_exit(4);
		memset(p + T_PAGE, 0xc2, T_PAGE);	/* a new page */
		p[0] = 0xc0;				/* an existing one */
		_exit(0);
	}
	ASSERT_EQ(0, t_wait(pid));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mmaps", 1);
	EXPECT_DELTA(s0, s1, "page_allocs", 1);
	EXPECT_DELTA(s0, s1, "mappings", 0);
	EXPECT_EQ(0xc0, p[0]);
	EXPECT_TRUE(t_all(p + 1, T_PAGE - 1, 0xa1));
	EXPECT_TRUE(t_all(p + T_PAGE, T_PAGE, 0xc2));
	EXPECT_TRUE(t_all(p + 2 * T_PAGE, T_PAGE, 0xa3));
	T_FREE(self->fd, &self->objs, cg);
}

/*
 * Helper mode of this program for second_process_exec_shares_bytes: with
 * ODSM_FAULT_HELPER="ADDR LEN EXPECT WRITE" in the environment, map the
 * heap, check LEN bytes at ADDR are EXPECT, overwrite them with WRITE and
 * exit (0: done; 2..5: what went wrong).  Runs before the harness.
 */
static void __attribute__((constructor)) fault_helper(void)
{
	const char *arg = getenv("ODSM_FAULT_HELPER");
	unsigned int expect, write;
	struct odsm_info in;
	uint64_t addr, len;
	int fd;

	if (!arg)
		return;
	if (sscanf(arg, "%" SCNx64 " %" SCNu64 " %x %x", &addr, &len,
		   &expect, &write) != 4)
		_exit(2);
	fd = t_open();
	if (fd < 0 || t_info(fd, &in))
		_exit(3);
	if (t_map(fd, &in) != (void *)(uintptr_t)in.heap_base)
		_exit(4);
	if (!t_all(t_p(addr), len, (uint8_t)expect))
		_exit(5);
	memset(t_p(addr), (uint8_t)write, len);
	_exit(0);
}

TEST_F(heap, second_process_exec_shares_bytes)
{
	char env[128], *argv[] = { "fault_test", NULL }, **envp;
	struct t_stats s0, s1;
	uint64_t cg, len = 2 * T_PAGE + 10;
	size_t n = 0, i;
	pid_t pid;
	uint8_t *p;

	T_ALLOC(self->fd, &self->objs, len, 0, 0, &cg, NULL);
	p = t_p(cg);
	memset(p, 0x3c, len);

	snprintf(env, sizeof(env), "ODSM_FAULT_HELPER=%" PRIx64 " %" PRIu64
		 " %x %x", (uint64_t)(uintptr_t)p, len, 0x3c, 0xd4);
	while (environ[n])
		n++;
	envp = calloc(n + 2, sizeof(*envp));
	ASSERT_NE(NULL, envp);
	for (i = 0; i < n; i++)
		envp[i] = environ[i];
	envp[n] = env;

	SNAP(s0);
	ASSERT_EQ(0, posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, envp));
	ASSERT_EQ(0, t_wait(pid));
	SNAP(s1);
	free(envp);
	EXPECT_DELTA(s0, s1, "mmaps", 1);
	EXPECT_DELTA(s0, s1, "page_allocs", 0);
	EXPECT_TRUE(t_all(p, len, 0xd4));
	T_FREE(self->fd, &self->objs, cg);
}

/* The last block of the local partition holds no object. */
TEST_F(heap, unbacked_local_block_sigbus)
{
	uint8_t *p = t_p(self->lo + self->in.part_size - T_BLOCK);
	struct odsm_obj_info oi;
	struct t_stats s0, s1;
	uint8_t v = 1;

	ASSERT_EQ(-EINVAL, t_obj_info(self->fd, t_color((uint64_t)(uintptr_t)p,
						      T_FRESH_COLOR), &oi));
	SNAP(s0);
	EXPECT_EQ(SIGBUS, t_touch(p, 0, &v));
	EXPECT_EQ((void *)p, t_sigaddr);
	EXPECT_EQ(SIGBUS, t_touch(p + T_BLOCK - 1, 1, &v));
	EXPECT_EQ((void *)(p + T_BLOCK - 1), t_sigaddr);
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "sigbus_unbacked", 2);
	EXPECT_DELTA(s0, s1, "sigbus_remote", 0);
	EXPECT_DELTA(s0, s1, "faults", 2);
	EXPECT_DELTA(s0, s1, "page_allocs", 0);
	EXPECT_DELTA(s0, s1, "pages_in_use", 0);
}

/* A freed whole-block object: its pages go, and so does access to them. */
TEST_F(heap, freed_block_sigbus)
{
	struct t_stats s0, s1;
	uint64_t cg;
	uint8_t v, *p;

	T_ALLOC(self->fd, &self->objs, T_BLOCK, 0, 0, &cg, NULL);
	p = t_p(cg);
	memset(p, 0xee, 2 * T_PAGE);
	SNAP(s0);
	T_FREE(self->fd, &self->objs, cg);
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "page_frees", 2);
	EXPECT_DELTA(s0, s1, "pages_in_use", -2);

	SNAP(s0);
	EXPECT_EQ(SIGBUS, t_touch(p, 0, &v));
	EXPECT_EQ(SIGBUS, t_touch(p + T_PAGE, 0, &v));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "sigbus_unbacked", 2);
	EXPECT_DELTA(s0, s1, "page_allocs", 0);
}

#define RESERVE_PARAM	"/sys/module/odsm/parameters/store_reserve_mb"

/*
 * A fault that finds no page, because the store keeps store_reserve_mb of
 * memory to the rest of the machine (set here past all of it): SIGBUS at
 * once, counted in fault_enomem and store_enomem.  Never VM_FAULT_OOM,
 * which since Linux 5.16 runs no OOM killer outside a cgroup and retries
 * the fault for as long as memory stays short: this test would hang.  The
 * same page faults in once the reserve is back.
 */
TEST_F(heap, fault_past_reserve_sigbus)
{
	uint64_t cg, old = t_read_u64(RESERVE_PARAM);
	struct t_stats s0, s1;
	uint8_t v = 0x5a, *p;
	char buf[32];
	int sig;

	ASSERT_NE(UINT64_MAX, old);
	/* a block of its own: no page there yet (a slab's might be) */
	T_ALLOC(self->fd, &self->objs, T_BLOCK, 0, 0, &cg, NULL);
	p = t_p(cg);
	SNAP(s0);
	ASSERT_EQ(0, t_write_str(RESERVE_PARAM, "4194304"));	/* 4 TiB */
	sig = t_touch(p, 1, &v);
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)old);
	ASSERT_EQ(0, t_write_str(RESERVE_PARAM, buf));
	SNAP(s1);
	EXPECT_EQ(SIGBUS, sig);
	EXPECT_EQ((void *)p, t_sigaddr);
	EXPECT_DELTA(s0, s1, "fault_enomem", 1);
	EXPECT_DELTA(s0, s1, "store_enomem", 1);
	EXPECT_DELTA(s0, s1, "page_allocs", 0);
	EXPECT_EQ(0, t_touch(p, 1, &v));
	EXPECT_EQ(0x5a, p[0]);
}

/* A free unmaps the pages from every process, not only the caller. */
TEST_F(heap, free_unmaps_other_process)
{
	int to_child[2], to_parent[2];
	struct t_stats s0, s1;
	uint64_t cg;
	uint8_t *p;
	char c = 0;
	pid_t pid;

	T_ALLOC(self->fd, &self->objs, T_BLOCK, 0, 0, &cg, NULL);
	p = t_p(cg);
	memset(p, 0x42, T_PAGE);
	ASSERT_EQ(0, pipe(to_child));
	ASSERT_EQ(0, pipe(to_parent));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		uint8_t v = 0;

		/* map the page into this process, report, wait for the free */
		if (t_touch(p, 0, &v) || v != 0x42)
			_exit(2);
		if (write(to_parent[1], "r", 1) != 1 ||
		    read(to_child[0], &c, 1) != 1)
			_exit(3);
		_exit(t_touch(p, 0, &v) == SIGBUS ? 0 : 4);
	}
	ASSERT_EQ(1, read(to_parent[0], &c, 1));
	SNAP(s0);
	T_FREE(self->fd, &self->objs, cg);
	ASSERT_EQ(1, write(to_child[1], "f", 1));
	ASSERT_EQ(0, t_wait(pid));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "page_frees", 1);
	EXPECT_DELTA(s0, s1, "sigbus_unbacked", 1);
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);
}

TEST_F(heap, free_releases_pages)
{
	struct t_stats s0, s1, s2;
	uint64_t cg, i, npages = MiB(1) / T_PAGE;
	uint8_t *p;

	SNAP(s0);
	T_ALLOC(self->fd, &self->objs, MiB(1), 0, 0, &cg, NULL);
	p = t_p(cg);
	for (i = 0; i < npages; i++)
		p[i * T_PAGE + (i % 7)] = (uint8_t)(i + 1);
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "page_allocs", npages);
	EXPECT_DELTA(s0, s1, "pages_in_use", npages);
	EXPECT_DELTA(s0, s1, "faults", npages);
	T_FREE(self->fd, &self->objs, cg);
	SNAP(s2);
	EXPECT_DELTA(s1, s2, "page_frees", npages);
	EXPECT_DELTA(s0, s2, "pages_in_use", 0);
}

/*
 * Several processes allocate, write, check and free objects while another
 * touches the blocks they use, so frees (page release, unmapping) race
 * with faults and with reallocation of the same blocks.  No write to a
 * live object may be lost, and everything is given back at the end.
 */
#define RACE_WORKERS	3
#define RACE_ROUNDS	1000

static int race_worker(int fd, unsigned int id)
{
	unsigned int i;

	for (i = 0; i < RACE_ROUNDS; i++) {
		uint64_t size = (i % 3) ? T_BLOCK : 3000, cg;
		uint8_t tag = (uint8_t)(id * 64 + i % 64 + 1), *p;

		if (t_alloc(fd, size, 0, 0, &cg, NULL))
			return 2;
		p = t_p(cg);
		p[0] = tag;
		p[size - 1] = tag;
		if (size > T_PAGE)
			p[T_PAGE + i % 100] = tag;
		sched_yield();
		if (p[0] != tag || p[size - 1] != tag ||
		    (size > T_PAGE && p[T_PAGE + i % 100] != tag)) {
			fprintf(stderr, "# worker %u round %u: wrote %u to the %" PRIu64
				"-byte object at %p, read back %u %u\n", id, i,
				tag, size, (void *)p, p[0], p[size - 1]);
			t_free(fd, cg);	/* leave the node clean */
			return 3;
		}
		if (t_free(fd, cg))
			return 4;
	}
	return 0;
}

TEST_F(heap, concurrent_alloc_touch_free)
{
	pid_t workers[RACE_WORKERS], toucher;
	struct t_stats s0, s1;
	unsigned int i;

	SNAP(s0);
	toucher = fork();
	ASSERT_LE(0, toucher);
	if (toucher == 0) {
		/* the blocks the workers will be using: first-touch, touch
		 * after release, SIGBUS on free blocks
		 */
		unsigned int k, seed = 1;
		uint8_t v;

		for (k = 0; k < 20000; k++) {
			seed = seed * 1103515245 + 12345;
			t_touch(self->base + (uint64_t)(seed >> 16) % 256 *
				T_BLOCK, 0, &v);
			if (k % 16 == 0)
				sched_yield();
		}
		_exit(0);
	}
	for (i = 0; i < RACE_WORKERS; i++) {
		workers[i] = fork();
		ASSERT_LE(0, workers[i]);
		if (workers[i] == 0)
			_exit(race_worker(self->fd, i));
	}
	for (i = 0; i < RACE_WORKERS; i++) {
		EXPECT_EQ(0, t_wait(workers[i])) {
			TH_LOG("worker %u failed", i);
		}
	}
	kill(toucher, SIGKILL);
	t_wait(toucher);

	SNAP(s1);
	EXPECT_DELTA(s0, s1, "allocs", RACE_WORKERS * RACE_ROUNDS);
	EXPECT_DELTA(s0, s1, "frees", RACE_WORKERS * RACE_ROUNDS);
	EXPECT_DELTA(s0, s1, "objects_in_use", 0);
	EXPECT_DELTA(s0, s1, "bytes_in_use", 0);
	EXPECT_DELTA(s0, s1, "pages_in_use", 0);
	EXPECT_DELTA(s0, s1, "fault_enomem", 0);
	EXPECT_EQ(t_delta(&s0, &s1, "page_allocs"),
		  t_delta(&s0, &s1, "page_frees"));
}

/* ---- a reconfigured node ----------------------------------------------- */

/* Tests that change the configuration: see struct t_reconf. */
FIXTURE(reconf) {
	struct t_reconf r;
};

FIXTURE_SETUP(reconf)
{
	t_reconf_setup(_metadata, &self->r);
}

FIXTURE_TEARDOWN(reconf)
{
	t_reconf_teardown(_metadata, &self->r);
}

TEST_F(reconf, remote_partition_sigbus)
{
	struct t_reconf *r = &self->r;
	uint64_t part = MiB(64), cg;
	struct t_stats s0, s1;
	uint8_t v = 9;

	t_reconf_map(_metadata, r, 0, 2, part);
	SNAP(s0);
	EXPECT_EQ(SIGBUS, t_touch(r->base + part, 0, &v));
	EXPECT_EQ((void *)(r->base + part), t_sigaddr);
	EXPECT_EQ(SIGBUS, t_touch(r->base + 2 * part - 1, 1, &v));
	EXPECT_EQ(SIGBUS, t_touch(r->base + part + MiB(5) + 3, 0, &v));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "sigbus_remote", 3);
	EXPECT_DELTA(s0, s1, "sigbus_unbacked", 0);
	EXPECT_DELTA(s0, s1, "page_allocs", 0);

	/* the local partition works as before */
	T_ALLOC(r->fd, &r->objs, 100, 0, 0, &cg, NULL);
	EXPECT_LT(odsm_addr_of(cg), r->in.heap_base + part);
	EXPECT_EQ(0, t_touch(t_p(cg), 1, &v));
	EXPECT_EQ(9, *t_p(cg));
	T_FREE(r->fd, &r->objs, cg);
}

TEST_F(reconf, node1_owns_second_partition)
{
	struct t_reconf *r = &self->r;
	uint64_t part = MiB(64), cg;
	struct t_stats s0, s1;
	uint8_t v = 0;

	t_reconf_map(_metadata, r, 1, 2, part);
	T_ALLOC(r->fd, &r->objs, 5000, 0, 0, &cg, NULL);
	EXPECT_LE(r->in.heap_base + part, odsm_addr_of(cg));
	EXPECT_LT(odsm_addr_of(cg), r->in.heap_base + 2 * part);
	SNAP(s0);
	EXPECT_EQ(0, t_touch(t_p(cg) + 4999, 0, &v));
	EXPECT_EQ(0, v);
	EXPECT_EQ(SIGBUS, t_touch(r->base, 0, &v));
	EXPECT_EQ(SIGBUS, t_touch(r->base + part - 1, 0, &v));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "sigbus_remote", 2);
	EXPECT_DELTA(s0, s1, "page_allocs", 1);
	T_FREE(r->fd, &r->objs, cg);
}

/*
 * After a touched object is freed, the blocks that come back with a later
 * allocation read zeros.  A 2 MiB partition (32 blocks) makes the allocator
 * hand the same blocks out again within three 1 MiB allocations.
 */
TEST_F(reconf, reallocated_blocks_read_zero)
{
	struct t_reconf *r = &self->r;
	uint64_t cg, first, npages = MiB(1) / T_PAGE;
	struct t_stats s0, s1;
	int i;

	t_reconf_map(_metadata, r, 0, 1, MiB(2));
	T_ALLOC(r->fd, &r->objs, MiB(1), 0, 0, &first, NULL);
	memset(t_p(first), 0xcd, MiB(1));
	SNAP(s0);
	T_FREE(r->fd, &r->objs, first);
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "page_frees", npages);
	EXPECT_DELTA(s0, s1, "pages_in_use", -(int64_t)npages);

	for (i = 0; i < 3; i++) {
		T_ALLOC(r->fd, &r->objs, MiB(1), 0, 0, &cg, NULL);
		if (odsm_addr_of(cg) == odsm_addr_of(first))
			break;
		T_FREE(r->fd, &r->objs, cg);
	}
	ASSERT_EQ(odsm_addr_of(first), odsm_addr_of(cg));
	SNAP(s0);
	EXPECT_TRUE(t_all(t_p(cg), MiB(1), 0));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "page_allocs", npages);
	T_FREE(r->fd, &r->objs, cg);
}

TEST_F(reconf, set_config_busy)
{
	struct t_reconf *r = &self->r;
	const struct odsm_info *o = &r->orig;
	int to_parent[2], to_child[2];
	struct t_stats s0, s1;
	uint64_t cg;
	pid_t pid;
	char c;

	/* mapped by this process */
	ASSERT_EQ((void *)(uintptr_t)o->heap_base, t_map(r->fd, o));
	r->base = (uint8_t *)(uintptr_t)o->heap_base;
	r->mapped = 1;
	SNAP(s0);
	EXPECT_EQ(-EBUSY, t_set_config(r->fd, 0, 2, o->heap_base, MiB(64)));
	EXPECT_EQ(-EBUSY, t_set_config(r->fd, o->node_id, o->nr_nodes,
				       o->heap_base, o->part_size));
	SNAP(s1);
	/* a busy node is not a bad ioctl, but it is counted */
	EXPECT_DELTA(s0, s1, "bad_ioctls", 0);
	EXPECT_DELTA(s0, s1, "config_refused", 2);
	ASSERT_EQ(0, munmap(r->base, o->heap_size));
	r->mapped = 0;

	/* mapped by another process only */
	ASSERT_EQ(0, pipe(to_parent));
	ASSERT_EQ(0, pipe(to_child));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (t_map(r->fd, o) != (void *)(uintptr_t)o->heap_base)
			_exit(2);
		if (write(to_parent[1], "m", 1) != 1 ||
		    read(to_child[0], &c, 1) != 1)
			_exit(3);
		_exit(0);
	}
	ASSERT_EQ(1, read(to_parent[0], &c, 1));
	EXPECT_EQ(-EBUSY, t_set_config(r->fd, 0, 2, o->heap_base, MiB(64)));
	ASSERT_EQ(1, write(to_child[1], "x", 1));
	ASSERT_EQ(0, t_wait(pid));

	/* unmapped, but an object is allocated */
	T_ALLOC(r->fd, &r->objs, 64, 0, 0, &cg, NULL);
	SNAP(s0);
	EXPECT_EQ(-EBUSY, t_set_config(r->fd, 0, 2, o->heap_base, MiB(64)));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "config_refused", 1);
	T_FREE(r->fd, &r->objs, cg);

	/* nothing mapped, nothing allocated: accepted */
	EXPECT_EQ(0, t_set_config(r->fd, 0, 2, o->heap_base, MiB(64)));
	EXPECT_EQ(2ULL, t_sysfs("nr_nodes"));
	close(to_parent[0]);
	close(to_parent[1]);
	close(to_child[0]);
	close(to_child[1]);
}

TEST_F(reconf, set_config_einval)
{
	struct t_reconf *r = &self->r;
	const uint64_t b = r->orig.heap_base;
	const struct {
		uint32_t node_id, nr_nodes;
		uint64_t base, part;
		const char *what;
	} bad[] = {
		{ 0, 0, b, MiB(64), "nr_nodes 0" },
		{ 2, 2, b, MiB(64), "node_id == nr_nodes" },
		{ 5, 2, b, MiB(64), "node_id > nr_nodes" },
		{ 0, ODSM_MAX_NODES + 1, b, MiB(2), "too many nodes" },
		{ 0, 2, b + T_PAGE, MiB(64), "base not 2 MiB aligned" },
		{ 0, 2, b + MiB(1), MiB(64), "base 1 MiB aligned" },
		{ 0, 2, b, MiB(64) + T_PAGE, "part_size not 2 MiB aligned" },
		{ 0, 2, b, MiB(1), "part_size 1 MiB" },
		{ 0, 1, b, 0, "part_size 0" },
		{ 0, 1, b, GiB(64) + MiB(2), "part_size just over 64 GiB" },
		{ 0, 1, b, GiB(128), "part_size 128 GiB" },
		{ 0, 1, GiB(2), MiB(64), "base below 4 GiB" },
		{ 0, 1, GiB(4) - MiB(2), MiB(64), "base just below 4 GiB" },
		{ 0, 1, 0, MiB(64), "base 0" },
		{ 0, 2, (1ULL << 47) - GiB(64), GiB(64), "heap past user space" },
		{ 0, 1, 1ULL << 47, MiB(2), "base past user space" },
		{ 0, 1, 1ULL << 50, MiB(2), "base in the color bits" },
	};
	struct odsm_info now;
	struct t_stats s0, s1;
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		SNAP(s0);
		EXPECT_EQ(-EINVAL, t_set_config(r->fd, bad[i].node_id,
						bad[i].nr_nodes, bad[i].base,
						bad[i].part)) {
			TH_LOG("%s accepted", bad[i].what);
		}
		SNAP(s1);
		EXPECT_DELTA(s0, s1, "bad_ioctls", 1);
		ASSERT_EQ(0, t_info(r->fd, &now));
		ASSERT_EQ(0, memcmp(&now, &r->orig, sizeof(now))) {
			TH_LOG("%s changed the configuration", bad[i].what);
		}
	}
}

/* The limits themselves are accepted. */
TEST_F(reconf, set_config_limits_accepted)
{
	struct t_reconf *r = &self->r;
	struct odsm_info now;

	ASSERT_EQ(0, t_set_config(r->fd, 0, 1, GiB(4), MiB(2)));
	ASSERT_EQ(0, t_info(r->fd, &now));
	EXPECT_EQ(GiB(4), now.heap_base);
	EXPECT_EQ(MiB(2), now.part_size);
	EXPECT_EQ(GiB(4), t_sysfs("heap_base"));

	ASSERT_EQ(0, t_set_config(r->fd, 0, 1, r->orig.heap_base,
				  GiB(64)));
	ASSERT_EQ(0, t_info(r->fd, &now));
	EXPECT_EQ(GiB(64), now.part_size);
	EXPECT_EQ(GiB(64), now.heap_size);

	ASSERT_EQ(0, t_set_config(r->fd, ODSM_MAX_NODES - 1, ODSM_MAX_NODES,
				  r->orig.heap_base, MiB(2)));
	ASSERT_EQ(0, t_info(r->fd, &now));
	EXPECT_EQ((uint32_t)ODSM_MAX_NODES - 1, now.node_id);
	EXPECT_EQ((uint32_t)ODSM_MAX_NODES, now.nr_nodes);
	EXPECT_EQ(MiB(2) * ODSM_MAX_NODES, now.heap_size);
}

TEST_HARNESS_MAIN
