// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/odsm and its ioctl ABI: the device node, ODSM_IOC_INFO against the
 * configuration files of /sys/kernel/odsm, refusal of unknown commands, of
 * non-zero reserved fields and of bad argument pointers, the
 * CAP_SYS_ADMIN check of ODSM_IOC_SET_CONFIG, the commands a file opened
 * read-only may not run, and an owner box's bounds.
 */
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <linux/capability.h>
#include "odsm_vm.h"

TEST(device_node_exists)
{
	unsigned int maj, min;
	struct stat st;
	FILE *f;
	int fd;

	ASSERT_EQ(0, stat(ODSM_DEVICE_PATH, &st));
	ASSERT_TRUE(S_ISCHR(st.st_mode));
	/* the misc device's mode: root only */
	EXPECT_EQ(0600U, st.st_mode & 07777);
	/* the node is the misc device the module registered */
	f = fopen("/sys/class/misc/odsm/dev", "r");
	ASSERT_NE(NULL, f);
	ASSERT_EQ(2, fscanf(f, "%u:%u", &maj, &min));
	fclose(f);
	EXPECT_EQ(maj, major(st.st_rdev));
	EXPECT_EQ(min, minor(st.st_rdev));

	fd = t_open();
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, close(fd));
}

TEST(info_matches_sysfs)
{
	struct odsm_info in;
	unsigned int i;
	int fd = t_open();

	ASSERT_LE(0, fd);
	/* every output byte is written, reserved ones included */
	memset(&in, 0xa5, sizeof(in));
	ASSERT_EQ(0, t_ioctl(fd, ODSM_IOC_INFO, &in));
	close(fd);

	EXPECT_EQ((uint32_t)ODSM_ABI_VERSION, in.abi_version);
	EXPECT_EQ((uint64_t)ODSM_ABI_VERSION, t_sysfs("abi_version"));
	EXPECT_EQ((uint64_t)in.node_id, t_sysfs("node_id"));
	EXPECT_EQ((uint64_t)in.nr_nodes, t_sysfs("nr_nodes"));
	EXPECT_EQ(in.heap_base, t_sysfs("heap_base"));
	EXPECT_EQ(in.part_size, t_sysfs("part_size"));
	EXPECT_EQ(in.heap_size, t_sysfs("heap_size"));
	EXPECT_EQ((uint32_t)sysconf(_SC_PAGESIZE), in.page_size);
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(0ULL, in.reserved[i]);
	}

	/* consistency of the geometry itself */
	EXPECT_LT(in.node_id, in.nr_nodes);
	EXPECT_EQ((uint64_t)in.nr_nodes * in.part_size, in.heap_size);
	EXPECT_EQ(0ULL, in.heap_base % ODSM_PART_ALIGN);
	EXPECT_EQ(0ULL, in.part_size % ODSM_PART_ALIGN);
	EXPECT_GE(in.heap_base, GiB(4));
	EXPECT_LE(in.heap_base + in.heap_size, 1ULL << ODSM_COLOR_SHIFT);
	EXPECT_LT(0ULL, in.max_alloc);
	EXPECT_LE(in.max_alloc, in.part_size);
}

TEST(unknown_ioctl_enotty)
{
	const unsigned long cmds[] = {
		_IO(ODSM_IOC_MAGIC, 0x7f),
		_IOWR(ODSM_IOC_MAGIC, 0x14, struct odsm_obj_info),
		/* a known number with another size or direction */
		_IOR(ODSM_IOC_MAGIC, 0x00, __u32),
		_IOW(ODSM_IOC_MAGIC, 0x10, struct odsm_alloc),
		/* another driver's magic */
		_IOWR('x', 0x10, struct odsm_alloc),
	};
	struct odsm_alloc buf;
	struct t_stats s0, s1;
	unsigned int i;
	int fd = t_open();

	ASSERT_LE(0, fd);
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		memset(&buf, 0, sizeof(buf));
		buf.size = 64;
		SNAP(s0);
		EXPECT_EQ(-ENOTTY, t_ioctl(fd, cmds[i], &buf));
		SNAP(s1);
		EXPECT_DELTA(s0, s1, "bad_ioctls", 1);
		EXPECT_DELTA(s0, s1, "allocs", 0);
		EXPECT_DELTA(s0, s1, "objects_in_use", 0);
	}
	close(fd);
}

TEST(reserved_nonzero_einval)
{
	struct odsm_obj_info oi;
	struct odsm_config c;
	struct odsm_alloc a;
	struct odsm_free f;
	struct odsm_move m;
	struct odsm_info in;
	struct t_stats s0, s1;
	uint64_t cg;
	int fd = t_open(), i;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, t_info(fd, &in));

	/* ALLOC: counted once, as a refused allocation; a node without
	 * ODSM_ALLOC_ON_NODE is refused like a reserved field
	 */
	for (i = 0; i < 3; i++) {
		memset(&a, 0, sizeof(a));
		a.size = 64;
		if (i == 2)
			a.node = 1;
		else if (i)
			a.reserved = 1;
		else
			a.reserved0 = 1;
		SNAP(s0);
		EXPECT_EQ(-EINVAL, t_ioctl(fd, ODSM_IOC_ALLOC, &a));
		SNAP(s1);
		EXPECT_DELTA(s0, s1, "alloc_einval", 1);
		EXPECT_DELTA(s0, s1, "bad_ioctls", 0);
		EXPECT_DELTA(s0, s1, "allocs", 0);
		EXPECT_DELTA(s0, s1, "objects_in_use", 0);
	}

	ASSERT_EQ(0, t_alloc(fd, 64, 0, 0, &cg, NULL));

	/* FREE: counted once, as a refused free; the object stays */
	for (i = 0; i < 3; i++) {
		memset(&f, 0, sizeof(f));
		f.gaddr = cg;
		f.reserved[i] = 1;
		SNAP(s0);
		EXPECT_EQ(-EINVAL, t_ioctl(fd, ODSM_IOC_FREE, &f));
		SNAP(s1);
		EXPECT_DELTA(s0, s1, "bad_frees", 1);
		EXPECT_DELTA(s0, s1, "bad_ioctls", 0);
		EXPECT_DELTA(s0, s1, "frees", 0);
		EXPECT_DELTA(s0, s1, "objects_in_use", 0);
	}

	/* MOVE: the object does not move */
	for (i = 0; i < 2; i++) {
		memset(&m, 0, sizeof(m));
		m.gaddr = cg;
		m.reserved[i] = 1;
		SNAP(s0);
		EXPECT_EQ(-EINVAL, t_ioctl(fd, ODSM_IOC_MOVE, &m));
		SNAP(s1);
		EXPECT_DELTA(s0, s1, "bad_ioctls", 1);
		EXPECT_DELTA(s0, s1, "moves", 0);
		EXPECT_DELTA(s0, s1, "allocs", 0);
	}
	ASSERT_EQ(0, t_obj_info(fd, cg, &oi));
	EXPECT_EQ(cg, oi.gaddr);

	/* OBJ_INFO: reserved0 and reserved[] */
	for (i = -1; i < 2; i++) {
		memset(&oi, 0, sizeof(oi));
		oi.gaddr = cg;
		if (i < 0)
			oi.reserved0 = 1;
		else
			oi.reserved[i] = 1;
		SNAP(s0);
		EXPECT_EQ(-EINVAL, t_ioctl(fd, ODSM_IOC_OBJ_INFO, &oi));
		SNAP(s1);
		EXPECT_DELTA(s0, s1, "bad_ioctls", 1);
	}

	ASSERT_EQ(0, t_free(fd, cg));

	/* SET_CONFIG: refused even for the current, valid, geometry */
	for (i = 0; i < 2; i++) {
		memset(&c, 0, sizeof(c));
		c.node_id = in.node_id;
		c.nr_nodes = in.nr_nodes;
		c.heap_base = in.heap_base;
		c.part_size = in.part_size;
		c.reserved[i] = 1;
		SNAP(s0);
		EXPECT_EQ(-EINVAL, t_ioctl(fd, ODSM_IOC_SET_CONFIG, &c));
		SNAP(s1);
		EXPECT_DELTA(s0, s1, "bad_ioctls", 1);
	}
	close(fd);
}

TEST(bad_pointer_efault)
{
	/* what each command's -EFAULT counts (sysfs-kernel-odsm): SET_CONFIG,
	 * MOVE and OBJ_INFO in bad_ioctls; INFO, ALLOC and FREE nowhere
	 */
	const struct {
		unsigned long cmd;
		int bad_ioctl;
	} cmds[] = {
		{ ODSM_IOC_INFO, 0 }, { ODSM_IOC_SET_CONFIG, 1 },
		{ ODSM_IOC_ALLOC, 0 }, { ODSM_IOC_FREE, 0 },
		{ ODSM_IOC_MOVE, 1 }, { ODSM_IOC_OBJ_INFO, 1 },
	};
	void *bad[] = { NULL, (void *)16, (void *)-4096L };
	struct t_stats s0, s1;
	unsigned int i, j;
	int fd = t_open();

	ASSERT_LE(0, fd);
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		for (j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
			SNAP(s0);
			EXPECT_EQ(-EFAULT, t_ioctl(fd, cmds[i].cmd, bad[j])) {
				TH_LOG("cmd 0x%lx arg %p", cmds[i].cmd, bad[j]);
			}
			SNAP(s1);
			EXPECT_DELTA(s0, s1, "bad_ioctls", cmds[i].bad_ioctl);
			EXPECT_DELTA(s0, s1, "alloc_einval", 0);
			EXPECT_DELTA(s0, s1, "bad_frees", 0);
			EXPECT_DELTA(s0, s1, "allocs", 0);
			EXPECT_DELTA(s0, s1, "frees", 0);
			EXPECT_DELTA(s0, s1, "moves", 0);
			EXPECT_DELTA(s0, s1, "objects_in_use", 0);
		}
	}
	close(fd);
}

/*
 * An ALLOC whose result cannot be written back (a read-only argument) is
 * undone: the caller cannot learn the address.  It counts in allocs and
 * frees, and leaves no object.
 */
TEST(alloc_result_unwritable_is_undone)
{
	struct odsm_alloc *a;
	struct t_stats s0, s1;
	void *page;
	int fd = t_open();

	ASSERT_LE(0, fd);
	page = mmap(NULL, T_PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	a = page;
	memset(a, 0, sizeof(*a));
	a->size = 1000;
	ASSERT_EQ(0, mprotect(page, T_PAGE, PROT_READ));

	SNAP(s0);
	EXPECT_EQ(-EFAULT, t_ioctl(fd, ODSM_IOC_ALLOC, a));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "allocs", 1);
	EXPECT_DELTA(s0, s1, "frees", 1);
	EXPECT_DELTA(s0, s1, "alloc_bytes", 1024);
	EXPECT_DELTA(s0, s1, "free_bytes", 1024);
	EXPECT_DELTA(s0, s1, "objects_in_use", 0);
	EXPECT_DELTA(s0, s1, "bytes_in_use", 0);
	EXPECT_DELTA(s0, s1, "bad_frees", 0);
	EXPECT_EQ(0ULL, a->gaddr);
	munmap(page, T_PAGE);
	close(fd);
}

/* SET_CONFIG needs CAP_SYS_ADMIN; INFO and ALLOC do not. */
TEST(set_config_needs_cap_sys_admin)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	struct odsm_info in;
	struct t_stats s0, s1;
	uint64_t cg;
	int fd = t_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, t_info(fd, &in));

	/* this test runs in its own process: drop the capability for good */
	ASSERT_EQ(0, syscall(SYS_capget, &hdr, data));
	data[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
	data[CAP_TO_INDEX(CAP_SYS_ADMIN)].permitted &= ~CAP_TO_MASK(CAP_SYS_ADMIN);
	ASSERT_EQ(0, syscall(SYS_capset, &hdr, data));

	SNAP(s0);
	EXPECT_EQ(-EPERM, t_set_config(fd, in.node_id, in.nr_nodes,
				       in.heap_base, in.part_size));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "bad_ioctls", 1);

	EXPECT_EQ(0, t_info(fd, &in));
	ASSERT_EQ(0, t_alloc(fd, 64, 0, 0, &cg, NULL));
	EXPECT_EQ(0, t_free(fd, cg));
	close(fd);
}

/* Every open file is the same heap: an object allocated through one file
 * is freed through another.
 */
TEST(files_share_the_heap)
{
	struct odsm_obj_info oi;
	uint64_t cg;
	int fd1 = t_open(), fd2 = t_open();

	ASSERT_LE(0, fd1);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, t_alloc(fd1, 200, 0, 0, &cg, NULL));
	EXPECT_EQ(0, t_obj_info(fd2, cg, &oi));
	EXPECT_EQ(0, t_free(fd2, cg));
	EXPECT_EQ(-ESTALE, t_obj_info(fd1, cg, &oi));
	close(fd1);
	close(fd2);
}

/*
 * A file opened read-only reads, and changes nothing: every command that
 * would is -EBADF (counted in bad_ioctls), as its mmap of the heap is
 * refused.  (Before 2026-12-02 the ioctls ignored the open mode.)
 */
TEST(readonly_file_changes_nothing)
{
	int fd = t_open(), ro = open(ODSM_DEVICE_PATH, O_RDONLY | O_CLOEXEC);
	struct odsm_atomic at = { .op = ODSM_ATOMIC_FETCH_ADD, .operand = 1 };
	struct odsm_write_back wb = { 0 };
	struct odsm_obj_info oi;
	struct odsm_info in;
	struct odsm_rw rw;
	uint64_t cg, cg2, word = 7, got = 0;
	struct t_stats s0, s1;

	ASSERT_LE(0, fd);
	ASSERT_LE(0, ro);
	ASSERT_EQ(0, t_alloc(fd, 64, 0, ODSM_ALLOC_ZERO, &cg, NULL));
	rw = (struct odsm_rw){ .gaddr = cg, .buf = (uintptr_t)&word, .len = 8 };
	ASSERT_EQ(0, t_ioctl(fd, ODSM_IOC_WRITE, &rw));
	t_snap(&s0);
	/* reading is its to do */
	EXPECT_EQ(0, t_info(ro, &in));
	EXPECT_EQ(0, t_obj_info(ro, cg, &oi));
	rw.buf = (uintptr_t)&got;
	EXPECT_EQ(0, t_ioctl(ro, ODSM_IOC_READ, &rw));
	EXPECT_EQ(7ULL, got);
	/* changing is not */
	EXPECT_EQ(-EBADF, t_alloc(ro, 64, 0, 0, &cg2, NULL));
	EXPECT_EQ(-EBADF, t_free(ro, cg));
	EXPECT_EQ(-EBADF, t_move(ro, cg, &cg2));
	rw.buf = (uintptr_t)&word;
	EXPECT_EQ(-EBADF, t_ioctl(ro, ODSM_IOC_WRITE, &rw));
	at.gaddr = cg;
	EXPECT_EQ(-EBADF, t_ioctl(ro, ODSM_IOC_ATOMIC, &at));
	wb.owner = cg & ODSM_ADDR_MASK;
	EXPECT_EQ(-EBADF, t_ioctl(ro, ODSM_IOC_WRITE_BACK, &wb));
	EXPECT_EQ(-EBADF, t_set_config(ro, 0, 1, in.heap_base, in.part_size));
	t_snap(&s1);
	EXPECT_DELTA(s0, s1, "bad_ioctls", 7);
	/* nothing changed: the object is there, its word 7 */
	rw.buf = (uintptr_t)&got;
	got = 0;
	EXPECT_EQ(0, t_ioctl(fd, ODSM_IOC_READ, &rw));
	EXPECT_EQ(7ULL, got);
	EXPECT_EQ(0, t_free(fd, cg));
	close(ro);
	close(fd);
}

/*
 * An owner box must lie in its object's bytes, not only in its run: a box
 * past the object's size but inside the blocks it spans is -EINVAL (before
 * 2026-12-02 the bound's subtraction wrapped and took it).
 */
TEST(owner_box_within_object_bytes)
{
	struct odsm_write_back wb = { 0 };
	uint64_t cg, usable, a;
	int fd = t_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, t_alloc(fd, 100000, 0, ODSM_ALLOC_ZERO, &cg, &usable));
	ASSERT_LT(100032ULL, usable);	/* a run of whole blocks */
	a = cg & ODSM_ADDR_MASK;
	wb.owner = a + 99984;		/* the last box inside */
	EXPECT_EQ(0, t_ioctl(fd, ODSM_IOC_READ_OWNER, &wb));
	EXPECT_EQ(0ULL, wb.g);
	wb.owner = a + 100000;		/* the first past the size */
	EXPECT_EQ(-EINVAL, t_ioctl(fd, ODSM_IOC_READ_OWNER, &wb));
	wb.owner = a + 100016;
	EXPECT_EQ(-EINVAL, t_ioctl(fd, ODSM_IOC_READ_OWNER, &wb));
	wb = (struct odsm_write_back){ .owner = a + 100016 };
	EXPECT_EQ(-EINVAL, t_ioctl(fd, ODSM_IOC_WRITE_BACK, &wb));
	EXPECT_EQ(0, t_free(fd, cg));
	close(fd);
}

TEST_HARNESS_MAIN
