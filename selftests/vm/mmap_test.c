// SPDX-License-Identifier: GPL-2.0
/*
 * mmap of /dev/odsm: the heap has one address and one length, is shared,
 * never moves, and is mapped at most once per process.  The mmaps,
 * mmap_refused and mappings stats follow exactly.
 */
#include "odsm_vm.h"

FIXTURE(dev) {
	int fd;
	struct odsm_info in;
	void *base;
	size_t size;
};

FIXTURE_SETUP(dev)
{
	self->fd = t_open();
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, t_info(self->fd, &self->in));
	self->base = (void *)(uintptr_t)self->in.heap_base;
	self->size = self->in.heap_size;
}

FIXTURE_TEARDOWN(dev)
{
	munmap(self->base, self->size);
	close(self->fd);
}

static void *map_at(int fd, void *addr, size_t len, int flags, off_t off)
{
	return mmap(addr, len, PROT_READ | PROT_WRITE, flags, fd, off);
}

/* Is [addr, addr + len) free in this process (nothing mapped there)? */
static int range_free(void *addr, size_t len)
{
	void *p = mmap(addr, len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE |
		       MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return 0;
	munmap(p, len);
	return p == addr;
}

TEST_F(dev, map_exact_shared)
{
	struct t_stats s0, s1, s2;
	void *p;

	SNAP(s0);
	p = map_at(self->fd, self->base, self->size, MAP_SHARED, 0);
	ASSERT_EQ(self->base, p);
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mmaps", 1);
	EXPECT_DELTA(s0, s1, "mappings", 1);
	EXPECT_DELTA(s0, s1, "mmap_refused", 0);

	ASSERT_EQ(0, munmap(p, self->size));
	SNAP(s2);
	EXPECT_DELTA(s0, s2, "mappings", 0);
	EXPECT_DELTA(s0, s2, "mmaps", 1);
	EXPECT_TRUE(range_free(self->base, self->size));
}

TEST_F(dev, map_null_hint_gets_base)
{
	struct t_stats s0, s1;
	void *p;

	SNAP(s0);
	p = map_at(self->fd, NULL, self->size, MAP_SHARED, 0);
	ASSERT_EQ(self->base, p);
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mmaps", 1);
	EXPECT_DELTA(s0, s1, "mappings", 1);
}

TEST_F(dev, map_fixed_at_base)
{
	void *p = map_at(self->fd, self->base, self->size,
			 MAP_SHARED | MAP_FIXED, 0);

	ASSERT_EQ(self->base, p);
}

TEST_F(dev, map_wrong_address_einval)
{
	char *b = self->base;
	struct {
		void *addr;
		int flags;
	} cases[] = {
		{ b + MiB(2), MAP_SHARED | MAP_FIXED },
		{ b - MiB(2), MAP_SHARED | MAP_FIXED },
		{ b + T_PAGE, MAP_SHARED | MAP_FIXED },
		{ b + MiB(2), MAP_SHARED | MAP_FIXED_NOREPLACE },
		{ b + MiB(2), MAP_SHARED },	/* a hint elsewhere, too */
		{ NULL, MAP_SHARED | MAP_FIXED },	/* fixed at 0, not base */
	};
	struct t_stats s0, s1;
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		SNAP(s0);
		errno = 0;
		EXPECT_EQ(MAP_FAILED, map_at(self->fd, cases[i].addr,
					     self->size, cases[i].flags, 0)) {
			TH_LOG("case %u mapped", i);
		}
		EXPECT_EQ(EINVAL, errno);
		SNAP(s1);
		EXPECT_DELTA(s0, s1, "mmap_refused", 1);
		EXPECT_DELTA(s0, s1, "mmaps", 0);
		EXPECT_DELTA(s0, s1, "mappings", 0);
		/* nothing replaced or left behind at either address (at 0
		 * nothing may be mapped anyway: mmap_min_addr)
		 */
		if (cases[i].addr)
			EXPECT_TRUE(range_free(cases[i].addr, self->size));
		EXPECT_TRUE(range_free(self->base, self->size));
	}
}

TEST_F(dev, map_wrong_length_einval)
{
	size_t lens[] = {
		T_PAGE, self->size - T_PAGE, self->size - MiB(2),
		self->size + MiB(2), 2 * self->size,
	};
	struct t_stats s0, s1;
	unsigned int i;

	SNAP(s0);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		errno = 0;
		EXPECT_EQ(MAP_FAILED, map_at(self->fd, NULL, lens[i],
					     MAP_SHARED, 0)) {
			TH_LOG("length %zu mapped", lens[i]);
		}
		EXPECT_EQ(EINVAL, errno);
		errno = 0;
		EXPECT_EQ(MAP_FAILED, map_at(self->fd, self->base, lens[i],
					     MAP_SHARED | MAP_FIXED, 0));
		EXPECT_EQ(EINVAL, errno);
	}
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mmap_refused", 2 * i);
	EXPECT_DELTA(s0, s1, "mmaps", 0);
	EXPECT_DELTA(s0, s1, "mappings", 0);
	EXPECT_TRUE(range_free(self->base, self->size));
}

TEST_F(dev, map_nonzero_offset_einval)
{
	off_t offs[] = { (off_t)T_PAGE, (off_t)MiB(2), (off_t)self->size };
	struct t_stats s0, s1;
	unsigned int i;

	SNAP(s0);
	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		errno = 0;
		EXPECT_EQ(MAP_FAILED, map_at(self->fd, NULL, self->size,
					     MAP_SHARED, offs[i]));
		EXPECT_EQ(EINVAL, errno);
		errno = 0;
		EXPECT_EQ(MAP_FAILED, map_at(self->fd, self->base, self->size,
					     MAP_SHARED | MAP_FIXED, offs[i]));
		EXPECT_EQ(EINVAL, errno);
	}
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mmap_refused", 2 * i);
	EXPECT_DELTA(s0, s1, "mmaps", 0);
	EXPECT_DELTA(s0, s1, "mappings", 0);
}

TEST_F(dev, map_private_refused)
{
	struct t_stats s0, s1;

	/*
	 * A writable private mapping of 1 GiB is charged to the commit limit
	 * before the driver sees it (ENOMEM in a small guest): ask for one
	 * that is not, read-only or MAP_NORESERVE.
	 */
	SNAP(s0);
	errno = 0;
	EXPECT_EQ(MAP_FAILED, mmap(NULL, self->size, PROT_READ, MAP_PRIVATE,
				   self->fd, 0));
	EXPECT_EQ(EINVAL, errno);
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mmap_refused", 1);
	EXPECT_DELTA(s0, s1, "mmaps", 0);
	EXPECT_DELTA(s0, s1, "mappings", 0);

	errno = 0;
	EXPECT_EQ(MAP_FAILED, map_at(self->fd, self->base, self->size,
				     MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, 0));
	EXPECT_EQ(EINVAL, errno);
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mmap_refused", 2);
	EXPECT_DELTA(s0, s1, "mmaps", 0);
	EXPECT_DELTA(s0, s1, "mappings", 0);
	EXPECT_TRUE(range_free(self->base, self->size));
}

TEST_F(dev, map_twice_eexist)
{
	struct t_stats s0, s1;
	int fd2;

	SNAP(s0);
	ASSERT_EQ(self->base, map_at(self->fd, NULL, self->size, MAP_SHARED, 0));
	errno = 0;
	EXPECT_EQ(MAP_FAILED, map_at(self->fd, NULL, self->size, MAP_SHARED, 0));
	EXPECT_EQ(EEXIST, errno);
	errno = 0;
	EXPECT_EQ(MAP_FAILED, map_at(self->fd, self->base, self->size,
				     MAP_SHARED, 0));
	EXPECT_EQ(EEXIST, errno);
	/* through another open file of the device as well */
	fd2 = t_open();
	ASSERT_LE(0, fd2);
	errno = 0;
	EXPECT_EQ(MAP_FAILED, map_at(fd2, NULL, self->size, MAP_SHARED, 0));
	EXPECT_EQ(EEXIST, errno);
	close(fd2);
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mmaps", 1);
	EXPECT_DELTA(s0, s1, "mappings", 1);
	/* the device itself says -EEXIST, and counts it */
	EXPECT_DELTA(s0, s1, "mmap_refused", 3);
}

TEST_F(dev, map_fixed_noreplace_eexist)
{
	char *b = self->base;
	struct t_stats s0, s1;
	void *anon;

	SNAP(s0);
	ASSERT_EQ(self->base, map_at(self->fd, NULL, self->size, MAP_SHARED, 0));
	errno = 0;
	EXPECT_EQ(MAP_FAILED, map_at(self->fd, self->base, self->size,
				     MAP_SHARED | MAP_FIXED_NOREPLACE, 0));
	EXPECT_EQ(EEXIST, errno);
	/* refused by the core mm, not the device */
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mmap_refused", 0);
	ASSERT_EQ(0, munmap(self->base, self->size));

	/* something else in the middle of the heap's range */
	anon = mmap(b + self->size / 2, T_PAGE, PROT_READ,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ASSERT_EQ(b + self->size / 2, anon);
	errno = 0;
	EXPECT_EQ(MAP_FAILED, map_at(self->fd, self->base, self->size,
				     MAP_SHARED | MAP_FIXED_NOREPLACE, 0));
	EXPECT_EQ(EEXIST, errno);
	errno = 0;
	EXPECT_EQ(MAP_FAILED, map_at(self->fd, NULL, self->size, MAP_SHARED, 0));
	EXPECT_EQ(EEXIST, errno);
	/* still there, untouched */
	EXPECT_EQ(0, munmap(anon, T_PAGE));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mmaps", 1);
	EXPECT_DELTA(s0, s1, "mappings", 0);
	/* only the mmap without MAP_FIXED_NOREPLACE reached the device's
	 * refusal
	 */
	EXPECT_DELTA(s0, s1, "mmap_refused", 1);
}

/* MAP_FIXED over the process's own heap mapping replaces it. */
TEST_F(dev, map_fixed_replaces_own_mapping)
{
	struct t_stats s0, s1;

	SNAP(s0);
	ASSERT_EQ(self->base, map_at(self->fd, NULL, self->size, MAP_SHARED, 0));
	ASSERT_EQ(self->base, map_at(self->fd, self->base, self->size,
				     MAP_SHARED | MAP_FIXED, 0));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mmaps", 2);
	EXPECT_DELTA(s0, s1, "mappings", 1);
}

TEST_F(dev, mremap_cannot_move_or_grow)
{
	struct t_stats s0, s1;
	void *elsewhere, *p;

	/* a free range of the heap's size, somewhere else */
	elsewhere = mmap(NULL, self->size, PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ASSERT_NE(MAP_FAILED, elsewhere);
	ASSERT_EQ(0, munmap(elsewhere, self->size));

	ASSERT_EQ(self->base, map_at(self->fd, NULL, self->size, MAP_SHARED, 0));
	SNAP(s0);

	errno = 0;
	p = mremap(self->base, self->size, self->size,
		   MREMAP_MAYMOVE | MREMAP_FIXED, elsewhere);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);

	/* VM_DONTEXPAND: no growing, in place or moved */
	errno = 0;
	p = mremap(self->base, self->size, self->size + MiB(2), 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EFAULT, errno);
	errno = 0;
	p = mremap(self->base, self->size, self->size + MiB(2), MREMAP_MAYMOVE);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EFAULT, errno);

	/* still mapped where it was */
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mappings", 0);
	EXPECT_DELTA(s0, s1, "mmaps", 0);
	errno = 0;
	EXPECT_EQ(MAP_FAILED, map_at(self->fd, NULL, self->size, MAP_SHARED, 0));
	EXPECT_EQ(EEXIST, errno);
	EXPECT_TRUE(range_free(elsewhere, self->size));
}

/* The mappings gauge counts VMAs: a partial munmap splits and shrinks. */
TEST_F(dev, partial_munmap_keeps_count)
{
	char *b = self->base;
	struct t_stats s0, s1;

	SNAP(s0);
	ASSERT_EQ(self->base, map_at(self->fd, NULL, self->size, MAP_SHARED, 0));
	/* a hole in the middle: two VMAs */
	ASSERT_EQ(0, munmap(b + self->size / 2, MiB(2)));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mappings", 2);
	/* the tail goes: one left */
	ASSERT_EQ(0, munmap(b + self->size / 2, self->size / 2));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mappings", 1);
	ASSERT_EQ(0, munmap(b, self->size));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mappings", 0);
	EXPECT_DELTA(s0, s1, "mmaps", 1);

	/* mprotect of a middle range: three VMAs */
	ASSERT_EQ(self->base, map_at(self->fd, NULL, self->size, MAP_SHARED, 0));
	ASSERT_EQ(0, mprotect(b + MiB(4), MiB(2), PROT_READ));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mappings", 3);
	EXPECT_DELTA(s0, s1, "mmaps", 2);
	ASSERT_EQ(0, munmap(b, self->size));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mappings", 0);
}

TEST_F(dev, fork_inherits_mapping)
{
	struct t_stats s0, s1;
	pid_t pid;

	ASSERT_EQ(self->base, map_at(self->fd, NULL, self->size, MAP_SHARED, 0));
	SNAP(s0);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct t_stats c;

		if (t_snap(&c))
			_exit(2);
		/* the child's copy is one more VMA; the driver's mmap is
		 * not called again
		 */
		_exit(t_delta(&s0, &c, "mappings") == 1 &&
		      t_delta(&s0, &c, "mmaps") == 0 ? 0 : 1);
	}
	ASSERT_EQ(0, t_wait(pid));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mappings", 0);
}

TEST_HARNESS_MAIN
