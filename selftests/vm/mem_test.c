// SPDX-License-Identifier: GPL-2.0
/*
 * The heap's pages and the memory they cost (issue 12, finding 12 and
 * memory pressure):
 *
 * - page-store pages are charged to the memory cgroup of the process that
 *   makes them exist, through ODSM_IOC_WRITE and through a fault, and
 *   uncharged when their object is freed (cgroup2's memory.current); the
 *   same for WRITEs submitted through io_uring, which run on a kernel
 *   worker;
 * - a cgroup at its memory.max gets -ENOMEM from ODSM_IOC_WRITE (counted
 *   in store_enomem), is not OOM-killed, and the heap works once memory is
 *   given back;
 * - in a guest with little memory (the lowmem scenario, 256 MiB), filling
 *   the partition through ODSM_IOC_WRITE ends in -ENOMEM (the store keeps
 *   store_reserve_mb available) before the partition is full, with no OOM
 *   kill anywhere (an OOM report's call
 *   trace would fail the guest), and the heap works afterwards.  Skipped
 *   in a larger guest, where the partition fits in memory.
 *
 * cgroup2 is mounted at /sys/fs/cgroup if it is not already (and unmounted
 * afterwards).  Each test runs in its own process (the harness forks), so
 * moving it into a cgroup affects nothing else.
 */
#include <sys/mount.h>
#include "odsm_vm.h"
#include "uring_raw.h"

#define CG_ROOT		"/sys/fs/cgroup"
#define CG_DIR		CG_ROOT "/odsm_mem_test"
#define PIECE		KiB(256)	/* one WRITE, as odsm_rw allows */

static uint64_t cg_current(void)
{
	return t_read_u64(CG_DIR "/memory.current");
}

static int t_write(int fd, uint64_t ga, void *buf, uint64_t len)
{
	struct odsm_rw r = { .gaddr = ga, .buf = (uintptr_t)buf, .len = len };

	return t_ioctl(fd, ODSM_IOC_WRITE, &r);
}

/* WRITE len bytes of c at ga in PIECE-sized ioctls: 0 or the first error */
static int fill(int fd, uint64_t ga, uint64_t len, uint8_t *piece, uint8_t c)
{
	uint64_t done;
	int ret;

	memset(piece, c, PIECE);
	for (done = 0; done < len; done += PIECE) {
		ret = t_write(fd, odsm_addr_of(ga) + done, piece,
			      len - done < PIECE ? len - done : PIECE);
		if (ret)
			return ret;
	}
	return 0;
}

FIXTURE(mem) {
	int fd;
	struct odsm_info in;
	uint8_t *base;
	struct t_objs objs;
	int mounted, made, moved;
	uint8_t *piece;
};

FIXTURE_SETUP(mem)
{
	self->fd = t_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, t_info(self->fd, &self->in));
	ASSERT_EQ((void *)(uintptr_t)self->in.heap_base,
		  t_map(self->fd, &self->in));
	self->base = (uint8_t *)(uintptr_t)self->in.heap_base;
	self->piece = malloc(PIECE);
	ASSERT_NE(NULL, self->piece);
	memset(self->piece, 0, PIECE);	/* its own pages charged now */
}

FIXTURE_TEARDOWN(mem)
{
	t_free_all(self->fd, &self->objs);
	munmap(self->base, self->in.heap_size);
	close(self->fd);
	if (self->moved)
		t_write_str(CG_ROOT "/cgroup.procs", "0");
	if (self->made)
		rmdir(CG_DIR);
	if (self->mounted)
		umount(CG_ROOT);
	free(self->piece);
}

/* Mount cgroup2 if needed, make CG_DIR with memory.max, move in. */
static void cg_enter(struct __test_metadata *_metadata, FIXTURE_DATA(mem) *self,
		     const char *max)
{
	struct stat st;

	if (stat(CG_ROOT "/cgroup.controllers", &st)) {
		mkdir(CG_ROOT, 0755);
		ASSERT_EQ(0, mount("none", CG_ROOT, "cgroup2", 0, NULL)) {
			TH_LOG("mount cgroup2: %s", strerror(errno));
		}
		self->mounted = 1;
	}
	ASSERT_EQ(0, t_write_str(CG_ROOT "/cgroup.subtree_control", "+memory"));
	rmdir(CG_DIR);	/* a leftover of an earlier run */
	ASSERT_EQ(0, mkdir(CG_DIR, 0755));
	self->made = 1;
	ASSERT_EQ(0, t_write_str(CG_DIR "/memory.max", max));
	ASSERT_EQ(0, t_write_str(CG_DIR "/cgroup.procs", "0"));
	self->moved = 1;
	ASSERT_NE(UINT64_MAX, cg_current());
}

/*
 * Pages written through the ioctl and pages faulted through the mapping
 * show in the caller's memory.current, and leave it with their object.
 */
TEST_F(mem, pages_charged_to_cgroup)
{
	const uint64_t half = MiB(8);
	uint64_t cg, c0, c1, c2, c3, i;

	cg_enter(_metadata, self, "max");
	T_ALLOC(self->fd, &self->objs, 2 * half, 0, 0, &cg, NULL);
	c0 = cg_current();
	ASSERT_EQ(0, fill(self->fd, cg, half, self->piece, 0x11));
	c1 = cg_current();
	for (i = half; i < 2 * half; i += T_PAGE)
		t_p(cg)[i] = 0x22;		/* faults */
	c2 = cg_current();
	T_FREE(self->fd, &self->objs, cg);
	c3 = cg_current();
	TH_LOG("memory.current: %llu, +%llu KiB written, +%llu KiB faulted, -%llu KiB freed",
	       (unsigned long long)c0 >> 10,
	       (unsigned long long)(c1 - c0) >> 10,
	       (unsigned long long)(c2 - c1) >> 10,
	       (unsigned long long)(c2 - c3) >> 10);
	/* at least the pages themselves; page tables etc. only add */
	EXPECT_LE(half, c1 - c0);
	EXPECT_LE(half, c2 - c1);
	/* the object's pages left the cgroup with it (PTEs' tables stay) */
	EXPECT_LE(2 * half - MiB(1), c2 - c3);
}

/*
 * WRITEs through io_uring run on a kernel worker, which by itself charges
 * no cgroup: the pages they make exist are the submitter's, as the
 * ioctl's are.  (Before 2026-12-01 they went to no cgroup: +0 KiB.)
 */
TEST_F(mem, uring_writes_charged_to_cgroup)
{
	const uint64_t len = MiB(8), n = len / PIECE;
	struct odsm_rw rw[MiB(8) / PIECE];
	uint64_t cg, c0, c1, tag, i;
	struct t_ring r;
	int res;

	cg_enter(_metadata, self, "max");
	T_ALLOC(self->fd, &self->objs, len, 0, 0, &cg, NULL);
	ASSERT_EQ(0, t_ring_init(&r, n, 0));
	memset(self->piece, 0x33, PIECE);
	c0 = cg_current();
	for (i = 0; i < n; i++) {
		rw[i] = (struct odsm_rw){ .gaddr = odsm_addr_of(cg) + i * PIECE,
					  .buf = (uintptr_t)self->piece,
					  .len = PIECE };
		t_ring_cmd(&r, self->fd, ODSM_IOC_WRITE, (uintptr_t)&rw[i], 0,
			   0, i);
		t_ring_push(&r);
	}
	ASSERT_EQ((int)n, t_ring_enter(&r, n, n));
	for (i = 0; i < n; i++) {
		while (!t_ring_cqe(&r, &tag, &res))
			ASSERT_LE(0, t_ring_enter(&r, 0, 1));
		EXPECT_EQ(0, res);
	}
	c1 = cg_current();
	t_ring_exit(&r);
	TH_LOG("memory.current: %llu, +%llu KiB written through io_uring",
	       (unsigned long long)c0 >> 10,
	       (unsigned long long)(c1 - c0) >> 10);
	/* the pages, give or take the cgroup's per-CPU charge batching */
	EXPECT_LE(len - MiB(1), c1 - c0);
	EXPECT_TRUE(t_all(t_p(cg), len, 0x33));
}

/*
 * A cgroup at its limit: -ENOMEM from WRITE, no OOM kill, counted; the
 * heap works again once the objects are freed.  Heap pages belong to no
 * process, so a cgroup full of them OOM-kills the next process in it that
 * touches a new page of its own: at -ENOMEM the test frees its objects
 * first, with ioctls only (every page it uses was touched before it
 * entered the cgroup), and only then logs and checks.
 */
TEST_F(mem, cgroup_limit_enomem)
{
	const uint64_t obj = MiB(4), limit = MiB(24);
	uint64_t cg, written = 0, enomem0, enomem1;
	char max[32];
	int ret = 0, i;

	snprintf(max, sizeof(max), "%llu", (unsigned long long)limit);
	memset(&self->objs, 0, sizeof(self->objs));	/* touched now */
	enomem0 = t_read_u64(T_STATS "/store_enomem");
	ASSERT_NE(UINT64_MAX, enomem0);
	TH_LOG("limit %llu MiB", (unsigned long long)limit >> 20);
	cg_enter(_metadata, self, max);
	for (i = 0; i < 32 && !ret; i++) {	/* 128 MiB: far past the limit */
		ret = t_alloc(self->fd, obj, 0, 0, &cg, NULL);
		if (ret || t_keep(&self->objs, cg))
			break;
		ret = fill(self->fd, cg, obj, self->piece, (uint8_t)i);
		if (!ret)
			written += obj;
	}
	t_free_all(self->fd, &self->objs);
	enomem1 = t_read_u64(T_STATS "/store_enomem");
	TH_LOG("%llu MiB written, then %d", (unsigned long long)written >> 20,
	       ret);
	ASSERT_EQ(-ENOMEM, ret);
	EXPECT_GE(limit, written);
	EXPECT_LT(enomem0, enomem1);
	/* the heap works once the memory is given back */
	T_ALLOC(self->fd, &self->objs, obj, 0, 0, &cg, NULL);
	ASSERT_EQ(0, fill(self->fd, cg, obj, self->piece, 0x77));
	ASSERT_TRUE(t_all(t_p(cg), obj, 0x77));
}

static uint64_t mem_total(void)
{
	char line[128];
	unsigned long long kb = 0;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb << 10;
}

/*
 * The whole guest short of memory: WRITE until the store refuses.  The
 * partition (1 GiB by default) is larger than the guest's memory, so the
 * store must say -ENOMEM first; the test is not OOM-killed, and nothing
 * is (the judge fails the guest on an OOM report's call trace).
 */
TEST_F(mem, lowmem_guest_enomem)
{
	const uint64_t obj = MiB(4);
	uint64_t cg, written = 0, total = mem_total(), enomem0;
	int ret = 0;

	if (!total || total > MiB(320))
		SKIP(return, "guest has %llu MiB: the lowmem scenario runs this",
		     (unsigned long long)total >> 20);
	enomem0 = t_read_u64(T_STATS "/store_enomem");
	while (!ret && written < self->in.part_size) {
		ret = t_alloc(self->fd, obj, 0, 0, &cg, NULL);
		if (ret || t_keep(&self->objs, cg))
			break;	/* the partition is full */
		ret = fill(self->fd, cg, obj, self->piece, 0x33);
		if (!ret)
			written += obj;
	}
	/* give the memory back before anything else runs short */
	t_free_all(self->fd, &self->objs);
	TH_LOG("guest of %llu MiB: %llu MiB written, then %d",
	       (unsigned long long)total >> 20,
	       (unsigned long long)written >> 20, ret);
	ASSERT_EQ(-ENOMEM, ret);
	EXPECT_GT(total, written);
	EXPECT_LT(enomem0, t_read_u64(T_STATS "/store_enomem"));
	T_ALLOC(self->fd, &self->objs, obj, 0, 0, &cg, NULL);
	ASSERT_EQ(0, fill(self->fd, cg, obj, self->piece, 0x44));
	ASSERT_TRUE(t_all(t_p(cg), obj, 0x44));
}

TEST_HARNESS_MAIN
