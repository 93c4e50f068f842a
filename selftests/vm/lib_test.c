// SPDX-License-Identifier: GPL-2.0
/*
 * libodsm: odsm_init()/odsm_fini(), messages, raw allocation, and the DRust
 * fat pointers: owners, shared and mutable borrows, the U bit, ownership
 * transfer, color overflow (the object moves) and non-local addresses.
 * Borrows of local objects must never enter the kernel.
 */
#include "odsm_vm.h"

/* ---- without a fixture: init and messages --------------------------------- */

TEST(init_and_fini)
{
	struct t_stats s0, s1, s2;
	struct odsm_info in;
	int fd = t_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, t_info(fd, &in));
	close(fd);
	ASSERT_EQ(-1, odsm_rt.fd);

	SNAP(s0);
	ASSERT_EQ(0, odsm_init());
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "mmaps", 1);
	EXPECT_DELTA(s0, s1, "mappings", 1);
	EXPECT_LE(0, odsm_rt.fd);
	EXPECT_EQ(0, memcmp(&odsm_rt.info, &in, sizeof(in)));
	EXPECT_EQ(t_local_lo(&in), odsm_rt.local_lo);
	EXPECT_EQ(t_local_lo(&in) + in.part_size, odsm_rt.local_hi);
	/* the heap is mapped at its base, read-write */
	EXPECT_EQ(-EEXIST, t_map(odsm_rt.fd, &in) == MAP_FAILED ? -errno : 0);
	EXPECT_EQ(-EALREADY, odsm_init());

	odsm_fini();
	EXPECT_EQ(-1, odsm_rt.fd);
	SNAP(s2);
	EXPECT_DELTA(s0, s2, "mappings", 0);
	odsm_fini();		/* a second fini does nothing */
	EXPECT_EQ(-1, odsm_rt.fd);

	/* and again */
	ASSERT_EQ(0, odsm_init());
	odsm_fini();
	SNAP(s2);
	EXPECT_DELTA(s0, s2, "mmaps", 2);
	EXPECT_DELTA(s0, s2, "mappings", 0);
}

TEST(init_errors)
{
	struct odsm_info in;
	void *p;
	int fd = t_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, t_info(fd, &in));
	close(fd);

	/* $ODSM_DEVICE names the device */
	ASSERT_EQ(0, setenv("ODSM_DEVICE", "/dev/no-such-odsm", 1));
	EXPECT_EQ(-ENOENT, odsm_init());
	EXPECT_EQ(-1, odsm_rt.fd);
	ASSERT_EQ(0, unsetenv("ODSM_DEVICE"));

	/* something already sits in the heap's range */
	p = mmap((void *)(uintptr_t)(in.heap_base + in.heap_size - T_PAGE),
		 T_PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_FIXED_NOREPLACE, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-EEXIST, odsm_init());
	EXPECT_EQ(-1, odsm_rt.fd);
	munmap(p, T_PAGE);
	ASSERT_EQ(0, odsm_init());
	odsm_fini();
}

TEST(strerror_messages)
{
	const int errs[] = {
		0, -EINVAL, -ENOMEM, -ESTALE, -EBUSY, -EBADF, -EEXIST,
		-ENOENT, -EPROTO, -EALREADY, -EPERM, -1234, 1234, -EHWPOISON,
	};
	unsigned int i;

	for (i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		const char *m = odsm_strerror(errs[i]);

		ASSERT_NE(NULL, m);
		EXPECT_LT(0U, strlen(m)) {
			TH_LOG("empty message for %d", errs[i]);
		}
	}
	/* distinct errors, distinct messages */
	EXPECT_NE(0, strcmp(odsm_strerror(0), odsm_strerror(-EINVAL)));
	EXPECT_NE(0, strcmp(odsm_strerror(-EINVAL), odsm_strerror(-ENOMEM)));
	EXPECT_NE(0, strcmp(odsm_strerror(-ENOMEM), odsm_strerror(-ESTALE)));
	EXPECT_NE(0, strcmp(odsm_strerror(-ESTALE), odsm_strerror(-1234)));
}

/* ---- with the heap initialised ----------------------------------------- */

FIXTURE(lib) {
	int fd;			/* odsm_rt.fd, for tests that hide it */
	struct t_objs objs;	/* raw addresses the teardown frees */
};

FIXTURE_SETUP(lib)
{
	ASSERT_EQ(0, odsm_init());
	self->fd = odsm_rt.fd;
}

FIXTURE_TEARDOWN(lib)
{
	odsm_rt.fd = self->fd;
	t_free_all(self->fd, &self->objs);
	odsm_fini();
}

/* A new box, kept for the teardown. */
#define BOX_NEW(b, size, flags) do { \
	ASSERT_EQ(0, odsm_box_new(b, size, flags)); \
	ASSERT_EQ(0, t_keep(&self->objs, (b)->g)); \
} while (0)

#define BOX_DROP(b) do { \
	uint64_t __g = (b)->g; \
	ASSERT_EQ(0, odsm_box_drop(b)); \
	t_forget(&self->objs, __g); \
} while (0)

TEST_F(lib, box_new_and_drop)
{
	struct odsm_obj_info oi;
	struct t_stats s0, s1;
	odsm_box b, z;
	uint64_t g;

	SNAP(s0);
	BOX_NEW(&b, 100, 0);
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "allocs", 1);
	EXPECT_DELTA(s0, s1, "objects_in_use", 1);
	EXPECT_TRUE(odsm_is_local(b.g));
	EXPECT_EQ(0ULL, b.ext);
	ASSERT_EQ(0, odsm_obj_info(b.g, &oi));
	EXPECT_EQ(b.g, oi.gaddr);
	EXPECT_LE(100ULL, oi.usable);

	g = b.g;
	BOX_DROP(&b);
	EXPECT_EQ(0ULL, b.g);
	EXPECT_EQ(0ULL, b.ext);
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "frees", 1);
	EXPECT_DELTA(s0, s1, "objects_in_use", 0);

	/* a failed drop leaves the box as it was */
	b.g = g;
	b.ext = 0;
	EXPECT_EQ(-ESTALE, odsm_box_drop(&b));
	EXPECT_EQ(g, b.g);

	EXPECT_EQ(-EINVAL, odsm_box_new(&z, 0, 0));
	EXPECT_EQ(-EINVAL, odsm_box_new(&z, 16, 1U << 7));
	BOX_NEW(&z, 5000, ODSM_ALLOC_ZERO);
	EXPECT_TRUE(t_all(odsm_ptr(z.g), 5000, 0));
	BOX_DROP(&z);
}

TEST_F(lib, raw_alloc_move_free)
{
	struct odsm_config c = { 0 };
	struct odsm_obj_info oi;
	struct t_stats s0, s1;
	uint64_t cg, old;

	ASSERT_EQ(0, odsm_alloc(100, 64, 0, &cg));
	ASSERT_EQ(0, t_keep(&self->objs, cg));
	EXPECT_EQ(0ULL, odsm_addr_of(cg) % 64);
	memset(odsm_ptr(cg), 0x6b, 100);
	old = cg;
	ASSERT_EQ(0, odsm_move(&cg));
	t_rekeep(&self->objs, old, cg);
	EXPECT_NE(odsm_addr_of(old), odsm_addr_of(cg));
	EXPECT_TRUE(t_all(odsm_ptr(cg), 100, 0x6b));
	EXPECT_EQ(-ESTALE, odsm_free(old));
	EXPECT_EQ(-ESTALE, odsm_obj_info(old, &oi));
	ASSERT_EQ(0, odsm_obj_info(cg, &oi));
	EXPECT_EQ(cg, oi.gaddr);
	ASSERT_EQ(0, odsm_free(cg));
	t_forget(&self->objs, cg);

	EXPECT_EQ(-EINVAL, odsm_alloc(0, 0, 0, &cg));
	/* an alignment the ABI cannot carry is refused before the kernel */
	SNAP(s0);
	EXPECT_EQ(-EINVAL, odsm_alloc(64, (size_t)1 << 33, 0, &cg));
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "alloc_einval", 0);

	/* reconfiguring while this process maps the heap */
	c.node_id = odsm_rt.info.node_id;
	c.nr_nodes = odsm_rt.info.nr_nodes;
	c.heap_base = odsm_rt.info.heap_base;
	c.part_size = odsm_rt.info.part_size;
	EXPECT_EQ(-EBUSY, odsm_set_config(&c));
}

/*
 * A local object's borrows, reads and writes are plain memory accesses:
 * with the device file hidden (any ioctl would fail with -EBADF) they all
 * work, and the module sees nothing.
 */
TEST_F(lib, local_borrows_stay_in_user_space)
{
	odsm_ref r, r2, r3;
	const void *p, *p2;
	struct t_stats s0, s1;
	struct odsm_obj_info oi;
	odsm_box b;
	odsm_mut m;
	uint64_t cg;
	void *w;

	BOX_NEW(&b, 256, 0);
	ASSERT_EQ(0, odsm_box_write(&b, &w));
	memset(w, 0x5a, 256);		/* first touch: faults before s0 */

	odsm_rt.fd = -1;
	SNAP(s0);
	ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
	EXPECT_EQ(odsm_ptr(b.g), p);
	EXPECT_TRUE(t_all(p, 256, 0x5a));
	ASSERT_EQ(0, odsm_ref_clone(&r, &r2, &p2));
	EXPECT_EQ(p, p2);
	ASSERT_EQ(0, odsm_ref_get(&r2, &p2));
	EXPECT_EQ(p, p2);
	odsm_return(&r2);
	odsm_return(&r);
	EXPECT_EQ(0ULL, r.g);

	ASSERT_EQ(0, odsm_borrow_mut(&b, &m, &w));
	((uint8_t *)w)[0] = 1;
	ASSERT_EQ(0, odsm_borrow_from_mut(&m, &r3, &p));
	EXPECT_EQ(1, ((const uint8_t *)p)[0]);
	odsm_return(&r3);
	ASSERT_EQ(0, odsm_mut_get(&m, &w));
	((uint8_t *)w)[1] = 2;
	odsm_return_mut(&m);

	ASSERT_EQ(0, odsm_box_read(&b, &p));
	EXPECT_EQ(1, ((const uint8_t *)p)[0]);
	EXPECT_EQ(2, ((const uint8_t *)p)[1]);
	ASSERT_EQ(0, odsm_box_write(&b, &w));
	((uint8_t *)w)[2] = 3;

	/* the device really was out of reach */
	EXPECT_EQ(-EBADF, odsm_alloc(16, 0, 0, &cg));
	EXPECT_EQ(-EBADF, odsm_obj_info(b.g, &oi));
	SNAP(s1);
	odsm_rt.fd = self->fd;

	EXPECT_DELTA(s0, s1, "faults", 0);
	EXPECT_DELTA(s0, s1, "allocs", 0);
	EXPECT_DELTA(s0, s1, "frees", 0);
	EXPECT_DELTA(s0, s1, "moves", 0);
	EXPECT_DELTA(s0, s1, "bad_ioctls", 0);
	EXPECT_DELTA(s0, s1, "alloc_einval", 0);
	EXPECT_DELTA(s0, s1, "bad_frees", 0);
	/* colors live in user space only: the allocator's is unchanged */
	ASSERT_EQ(0, odsm_obj_info(b.g, &oi));
	EXPECT_LT(oi.alloc_color, (uint32_t)odsm_color_of(b.g));
	BOX_DROP(&b);
}

TEST_F(lib, borrow_mut_bumps_once)
{
	odsm_box b;
	odsm_mut m;
	uint64_t g0;
	uint16_t c;
	void *w, *w2;

	BOX_NEW(&b, 64, 0);
	g0 = b.g;
	c = odsm_color_of(g0);

	ASSERT_EQ(0, odsm_borrow_mut(&b, &m, &w));
	EXPECT_EQ(odsm_ptr(g0), w);
	EXPECT_EQ(odsm_addr_of(g0), odsm_addr_of(m.g));
	EXPECT_EQ(c + 1, odsm_color_of(m.g));
	EXPECT_EQ((uint64_t)(uintptr_t)&b | ODSM_EXT_U, m.ext);
	/* the owner learns the new color only when the borrow ends */
	EXPECT_EQ(g0, b.g);

	/* writes through the same borrow: no further bump */
	ASSERT_EQ(0, odsm_mut_get(&m, &w2));
	EXPECT_EQ(w, w2);
	ASSERT_EQ(0, odsm_mut_get(&m, &w2));
	EXPECT_EQ(c + 1, odsm_color_of(m.g));

	odsm_return_mut(&m);
	EXPECT_EQ(t_color(g0, c + 1), b.g);
	EXPECT_EQ(0ULL, m.g);
	EXPECT_EQ(0ULL, m.ext);
	/* the owner continues the borrow's epoch: no reader saw c + 1, so
	 * a write through the owner needs no new color
	 */
	EXPECT_EQ(ODSM_EXT_U, b.ext & ODSM_EXT_U);
	ASSERT_EQ(0, odsm_box_write(&b, &w));
	EXPECT_EQ(t_color(g0, c + 1), b.g);

	/* a new borrow, a new epoch */
	ASSERT_EQ(0, odsm_borrow_mut(&b, &m, &w));
	EXPECT_EQ(c + 2, odsm_color_of(m.g));
	odsm_return_mut(&m);
	EXPECT_EQ(t_color(g0, c + 2), b.g);
	BOX_DROP(&b);
}

TEST_F(lib, box_write_bumps_once_per_epoch)
{
	const void *p;
	odsm_box b;
	odsm_ref r;
	uint64_t g0;
	uint16_t c;
	void *w;
	int i;

	BOX_NEW(&b, 64, 0);
	g0 = b.g;
	c = odsm_color_of(g0);

	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, odsm_box_write(&b, &w));
		EXPECT_EQ(odsm_ptr(g0), w);
		EXPECT_EQ(t_color(g0, c + 1), b.g);
		EXPECT_EQ(ODSM_EXT_U, b.ext & ODSM_EXT_U);
	}
	/* reads do not bump */
	ASSERT_EQ(0, odsm_box_read(&b, &p));
	EXPECT_EQ(t_color(g0, c + 1), b.g);

	/* a shared borrow ends the epoch: the next write bumps again */
	ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
	EXPECT_EQ(0ULL, b.ext & ODSM_EXT_U);
	EXPECT_EQ(t_color(g0, c + 1), r.g);
	odsm_return(&r);
	ASSERT_EQ(0, odsm_box_write(&b, &w));
	EXPECT_EQ(t_color(g0, c + 2), b.g);
	ASSERT_EQ(0, odsm_box_write(&b, &w));
	EXPECT_EQ(t_color(g0, c + 2), b.g);
	BOX_DROP(&b);
}

TEST_F(lib, reborrow_from_mut_resets_u)
{
	const void *p;
	odsm_box b;
	odsm_mut m;
	odsm_ref r;
	uint64_t g0;
	uint16_t c;
	void *w;

	BOX_NEW(&b, 64, 0);
	g0 = b.g;
	c = odsm_color_of(g0);

	ASSERT_EQ(0, odsm_borrow_mut(&b, &m, &w));
	EXPECT_EQ(c + 1, odsm_color_of(m.g));
	ASSERT_EQ(0, odsm_borrow_from_mut(&m, &r, &p));
	EXPECT_EQ(m.g, r.g);
	EXPECT_EQ(w, p);
	EXPECT_EQ(0ULL, m.ext & ODSM_EXT_U);
	/* still the owner's address */
	EXPECT_EQ((uint64_t)(uintptr_t)&b, m.ext);
	odsm_return(&r);

	ASSERT_EQ(0, odsm_mut_get(&m, &w));
	EXPECT_EQ(c + 2, odsm_color_of(m.g));
	EXPECT_EQ(ODSM_EXT_U, m.ext & ODSM_EXT_U);
	odsm_return_mut(&m);
	EXPECT_EQ(t_color(g0, c + 2), b.g);
	EXPECT_EQ(ODSM_EXT_U, b.ext & ODSM_EXT_U);

	/* a reader saw the mut's color last: the owner's next write bumps */
	ASSERT_EQ(0, odsm_borrow_mut(&b, &m, &w));
	EXPECT_EQ(c + 3, odsm_color_of(m.g));
	ASSERT_EQ(0, odsm_borrow_from_mut(&m, &r, &p));
	odsm_return(&r);
	odsm_return_mut(&m);
	EXPECT_EQ(t_color(g0, c + 3), b.g);
	EXPECT_EQ(0ULL, b.ext & ODSM_EXT_U);
	ASSERT_EQ(0, odsm_box_write(&b, &w));
	EXPECT_EQ(t_color(g0, c + 4), b.g);
	BOX_DROP(&b);
}

TEST_F(lib, box_transfer)
{
	struct t_stats s0, s1;
	odsm_box src, dst = { 0x1234, 0x5678 };
	const void *p;
	uint64_t g;
	void *w;

	BOX_NEW(&src, 128, 0);
	ASSERT_EQ(0, odsm_box_write(&src, &w));
	memset(w, 0x3e, 128);
	EXPECT_EQ(ODSM_EXT_U, src.ext);
	g = src.g;

	SNAP(s0);
	odsm_box_transfer(&dst, &src);
	SNAP(s1);
	EXPECT_DELTA(s0, s1, "allocs", 0);
	EXPECT_DELTA(s0, s1, "moves", 0);
	EXPECT_EQ(g, dst.g);
	EXPECT_EQ(0ULL, dst.ext);
	EXPECT_EQ(0ULL, src.g);
	EXPECT_EQ(0ULL, src.ext);

	ASSERT_EQ(0, odsm_box_read(&dst, &p));
	EXPECT_TRUE(t_all(p, 128, 0x3e));
	/* the new owner starts a new epoch */
	ASSERT_EQ(0, odsm_box_write(&dst, &w));
	EXPECT_EQ(t_color(g, odsm_color_of(g) + 1), dst.g);
	BOX_DROP(&dst);
	EXPECT_EQ(-EINVAL, odsm_box_drop(&src));
}

/*
 * A borrow that would take the color past 0xffff moves the object: a new
 * address with the allocator's color for it, same bytes, and the old
 * address retired (its last color was spent).
 */
TEST_F(lib, color_overflow_moves_object)
{
	struct odsm_obj_info oi;
	struct t_stats s0, s1;
	const void *p;
	odsm_box b;
	odsm_mut m;
	uint64_t old;
	unsigned int i;
	uint16_t nc;
	void *w;

	BOX_NEW(&b, 200, 0);
	ASSERT_EQ(0, odsm_box_write(&b, &w));
	for (i = 0; i < 200; i++)
		((uint8_t *)w)[i] = (uint8_t)(3 * i + 7);

	/* any color at or above the allocation's is the object's */
	b.g = t_color(b.g, ODSM_COLOR_MAX);
	b.ext = 0;
	old = b.g;

	SNAP(s0);
	ASSERT_EQ(0, odsm_borrow_mut(&b, &m, &w));
	SNAP(s1);
	t_rekeep(&self->objs, old, m.g);
	EXPECT_DELTA(s0, s1, "moves", 1);
	EXPECT_DELTA(s0, s1, "objects_in_use", 0);
	EXPECT_DELTA(s0, s1, "slots_retired", 1);
	EXPECT_NE(odsm_addr_of(old), odsm_addr_of(m.g));
	EXPECT_EQ(odsm_ptr(m.g), w);
	EXPECT_TRUE(odsm_is_local(m.g));
	for (i = 0; i < 200; i++) {
		ASSERT_EQ((uint8_t)(3 * i + 7), ((uint8_t *)w)[i]);
	}
	ASSERT_EQ(0, odsm_obj_info(m.g, &oi));
	EXPECT_EQ((uint32_t)odsm_color_of(m.g), oi.alloc_color);
	EXPECT_EQ((uint64_t)(uintptr_t)&b | ODSM_EXT_U, m.ext);
	nc = odsm_color_of(m.g);

	/* the old address is no object any more: the one it was is gone */
	EXPECT_EQ(-ESTALE, odsm_obj_info(old, &oi));
	EXPECT_EQ(-ESTALE, odsm_free(old));

	odsm_return_mut(&m);
	EXPECT_EQ(odsm_addr_of(b.g), (uint64_t)(uintptr_t)w);
	/* and colors count up from there again */
	ASSERT_EQ(0, odsm_borrow_mut(&b, &m, &w));
	EXPECT_EQ(nc + 1, odsm_color_of(m.g));
	odsm_return_mut(&m);
	ASSERT_EQ(0, odsm_box_read(&b, &p));
	EXPECT_EQ(w, p);
	BOX_DROP(&b);
}

TEST_F(lib, box_write_color_overflow_moves_object)
{
	struct odsm_obj_info oi;
	struct t_stats s0, s1;
	odsm_box b;
	uint64_t old;
	void *w;

	BOX_NEW(&b, KiB(100), 0);	/* whole blocks this time */
	ASSERT_EQ(0, odsm_box_write(&b, &w));
	memset(w, 0x9d, KiB(100));
	b.g = t_color(b.g, ODSM_COLOR_MAX);
	b.ext = 0;
	old = b.g;

	SNAP(s0);
	ASSERT_EQ(0, odsm_box_write(&b, &w));
	SNAP(s1);
	t_rekeep(&self->objs, old, b.g);
	EXPECT_DELTA(s0, s1, "moves", 1);
	EXPECT_DELTA(s0, s1, "objects_in_use", 0);
	EXPECT_DELTA(s0, s1, "blocks_retired", 2);
	EXPECT_NE(odsm_addr_of(old), odsm_addr_of(b.g));
	EXPECT_EQ(odsm_ptr(b.g), w);
	EXPECT_EQ(ODSM_EXT_U, b.ext);
	EXPECT_TRUE(t_all(w, KiB(100), 0x9d));
	ASSERT_EQ(0, odsm_obj_info(b.g, &oi));
	EXPECT_EQ((uint32_t)odsm_color_of(b.g), oi.alloc_color);
	EXPECT_EQ(KiB(100), oi.size);
	EXPECT_EQ(-ESTALE, odsm_obj_info(old, &oi));
	BOX_DROP(&b);
}

/* An address outside the heap is -EINVAL, with no pointer, and changes
 * nothing: the library refuses it without entering the kernel.
 */
TEST_F(lib, outside_heap_is_einval)
{
	const uint64_t addrs[] = {
		t_color(odsm_rt.info.heap_base + odsm_rt.info.heap_size, 3),
		t_color(odsm_rt.info.heap_base - 16, 0),
		t_color(odsm_rt.info.heap_base + odsm_rt.info.heap_size + 4096, 9),
		0x10,
	};
	struct t_stats s0, s1;
	const void *p;
	unsigned int i;
	odsm_box b;
	odsm_ref r;
	odsm_mut m;
	void *w;

	odsm_rt.fd = -1;	/* and without the kernel */
	SNAP(s0);
	for (i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		b.g = addrs[i];
		b.ext = 0;
		EXPECT_FALSE(odsm_is_local(b.g));

		p = &p;
		EXPECT_EQ(-EINVAL, odsm_borrow(&b, &r, &p));
		EXPECT_EQ(NULL, p);
		EXPECT_EQ(addrs[i], r.g);
		EXPECT_EQ(0ULL, r.ext);
		p = &p;
		EXPECT_EQ(-EINVAL, odsm_ref_get(&r, &p));
		EXPECT_EQ(NULL, p);
		w = &w;
		EXPECT_EQ(-EINVAL, odsm_borrow_mut(&b, &m, &w));
		EXPECT_EQ(NULL, w);
		EXPECT_EQ(addrs[i], m.g);	/* no bump */
		p = &p;
		EXPECT_EQ(-EINVAL, odsm_box_read(&b, &p));
		EXPECT_EQ(NULL, p);
		w = &w;
		EXPECT_EQ(-EINVAL, odsm_box_write(&b, &w));
		EXPECT_EQ(NULL, w);
		EXPECT_EQ(addrs[i], b.g);
		EXPECT_EQ(0ULL, b.ext);
		EXPECT_EQ(-EINVAL, odsm_borrow_mut_at(addrs[i] & ODSM_ADDR_MASK,
						      &m, &w));
	}
	SNAP(s1);
	odsm_rt.fd = self->fd;
	EXPECT_DELTA(s0, s1, "faults", 0);
	EXPECT_DELTA(s0, s1, "moves", 0);
	EXPECT_DELTA(s0, s1, "bad_ioctls", 0);
}

/* Another process of the node sees what one wrote through a box. */
TEST_F(lib, second_process_through_lib)
{
	const void *p;
	odsm_box b;
	pid_t pid;
	void *w;

	BOX_NEW(&b, 3000, 0);
	ASSERT_EQ(0, odsm_box_write(&b, &w));
	memset(w, 0x71, 3000);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		odsm_fini();
		if (odsm_init())
			_exit(2);
		if (odsm_box_read(&b, &p) || !t_all(p, 3000, 0x71))
			_exit(3);
		if (odsm_box_write(&b, &w))
			_exit(4);
		memset(w, 0x72, 3000);
		odsm_fini();
		_exit(0);
	}
	ASSERT_EQ(0, t_wait(pid));
	ASSERT_EQ(0, odsm_box_read(&b, &p));
	EXPECT_TRUE(t_all(p, 3000, 0x72));
	BOX_DROP(&b);
}

TEST_HARNESS_MAIN
