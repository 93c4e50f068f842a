// SPDX-License-Identifier: GPL-2.0
/*
 * DRust's coherence protocol through libodsm's fat pointers, on 2 or more
 * nodes (node 0 is the home of the objects at first).
 *
 *   remote_shared_borrow   a box of another node's object: the borrow reads
 *                          a cached copy, the right bytes; returning drops
 *                          the kernel reference
 *   owner_in_remote_partition  a mutable borrow through an owner box that
 *                          lives in node 0's partition moves the object to
 *                          node 1; its return writes the new address back
 *                          there, and node 0 reads the new bytes through it
 *   transfer_drops_copy    a box that read through the cache (Algorithm 7)
 *                          and is transferred drops its copy's reference
 *   owner_write_takes_copy Algorithm 8 with a local copy: no transfer, the
 *                          copy becomes the object, the original is freed
 *   address_reuse          an object freed and its address reused is never
 *                          served from the stale copy another node cached
 *   under_fire             objects with a version and a checksum; writers
 *                          on every node take turns moving and modifying
 *                          them while readers on every node borrow them; no
 *                          reader ever sees a torn or stale version
 *
 * Words of node 0's directory: 420 .. 479; barriers 44 .. 59.
 */
#include "under_fire.h"

#define SECS		180
#define W_CO		420	/* 420 .. 427: objects and boxes of the small tests */
#define W_FIRE		430	/* 430 .. 432: under_fire's table, locks, versions */
#define B_CO		44

static int step(struct __test_metadata *_metadata, unsigned int id)
{
	return c_step(0, B_CO + id, SECS);
}

/* A box for the object node 0 published at word w. */
static odsm_box box_at(unsigned int w)
{
	odsm_box b = { 0, 0 };

	c_get(0, w, &b.g);
	return b;
}

TEST(remote_shared_borrow)
{
	uint64_t misses, returns;
	const void *p;
	odsm_box b;
	odsm_ref r;

	C_BEGIN();
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_box_new(&b, 1000, 0));
		c_fill(odsm_ptr(b.g), 1000, 0, 1);
		ASSERT_EQ(0, c_put(0, W_CO, b.g));
	}
	ASSERT_EQ(0, step(_metadata, 0));
	if (C.self == 1) {
		b = box_at(W_CO);
		ASSERT_FALSE(odsm_is_local(b.g));
		misses = c_stat("borrow_misses");
		returns = c_stat("borrow_returns");
		ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
		EXPECT_NE(0ULL, r.ext);		/* it holds the cached copy */
		EXPECT_TRUE(odsm_is_local((uintptr_t)p));
		EXPECT_EQ(-1, c_check(p, 1000, 0, 1));
		EXPECT_EQ(misses + 1, c_stat("borrow_misses"));
		/* a second get through the same borrow enters no kernel */
		ASSERT_EQ(0, odsm_ref_get(&r, &p));
		EXPECT_EQ(misses + 1, c_stat("borrow_misses"));
		EXPECT_EQ(0, odsm_return(&r));
		/* the table of hits keeps the reference until given back */
		EXPECT_EQ(returns, c_stat("borrow_returns"));
		EXPECT_EQ(1, odsm_hits_flush());
		EXPECT_EQ(returns + 1, c_stat("borrow_returns"));
	}
	ASSERT_EQ(0, step(_metadata, 1));
}

TEST(owner_in_remote_partition)
{
	uint64_t wb, moves, boxaddr, boxcg = 0, cg;
	const void *p;
	odsm_box *ob;
	odsm_ref r;
	odsm_mut m;
	void *w;

	C_BEGIN();
	if (C.self == 0) {
		/* the owner box lives inside an object of node 0 */
		ASSERT_EQ(0, odsm_alloc(64, 16, ODSM_ALLOC_ZERO, &boxcg));
		boxaddr = boxcg;
		ob = odsm_ptr(boxaddr);
		ASSERT_EQ(0, odsm_box_new(ob, 3000, 0));
		c_fill(odsm_ptr(ob->g), 3000, 0, 2);
		ASSERT_EQ(0, c_put(0, W_CO + 1, odsm_addr_of(boxaddr)));
	}
	ASSERT_EQ(0, step(_metadata, 2));
	ASSERT_EQ(0, c_get(0, W_CO + 1, &boxaddr));
	if (C.self == 1) {
		wb = c_stat("writebacks");
		moves = c_stat("mut_moves");
		ASSERT_EQ(0, odsm_borrow_mut_at(boxaddr, &m, &w));
		EXPECT_TRUE(odsm_is_local(m.g));	/* it moved here */
		EXPECT_EQ(moves + 1, c_stat("mut_moves"));
		EXPECT_EQ(-1, c_check(w, 3000, 0, 2));
		c_fill(w, 3000, 1, 3);
		cg = m.g;
		EXPECT_EQ(0, odsm_return_mut(&m));
		EXPECT_EQ(wb + 1, c_stat("writebacks"));
		ASSERT_EQ(0, c_put(0, W_CO + 2, cg));
	}
	ASSERT_EQ(0, step(_metadata, 3));
	if (C.self == 0) {
		ob = odsm_ptr(boxaddr);
		ASSERT_EQ(0, c_get(0, W_CO + 2, &cg));
		EXPECT_EQ(cg, ob->g);		/* written back here */
		EXPECT_TRUE(c_in_part(ob->g, 1));
		ASSERT_EQ(0, odsm_borrow(ob, &r, &p));
		EXPECT_EQ(-1, c_check(p, 3000, 1, 3));
		EXPECT_EQ(0, odsm_return(&r));
		EXPECT_EQ(0, odsm_box_drop(ob));
		/* its colored address: a reused one is not at color 0 */
		EXPECT_EQ(0, odsm_free(boxcg));
	}
	ASSERT_EQ(0, step(_metadata, 4));
}

TEST(transfer_drops_copy)
{
	uint64_t returns;
	odsm_box b, b2;
	const void *p;

	C_BEGIN();
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_box_new(&b, 500, 0));
		c_fill(odsm_ptr(b.g), 500, 0, 4);
		ASSERT_EQ(0, c_put(0, W_CO + 3, b.g));
	}
	ASSERT_EQ(0, step(_metadata, 5));
	if (C.self == 1) {
		b = box_at(W_CO + 3);
		ASSERT_EQ(0, odsm_box_read(&b, &p));	/* Algorithm 7 */
		EXPECT_NE(0ULL, b.ext);
		EXPECT_EQ(-1, c_check(p, 500, 0, 4));
		returns = c_stat("borrow_returns");
		odsm_box_transfer(&b2, &b);
		EXPECT_EQ(returns + 1, c_stat("borrow_returns"));
		EXPECT_EQ(0ULL, b2.ext);
		EXPECT_EQ(0ULL, b.g);
		/* the receiver reads through a copy of its own */
		ASSERT_EQ(0, odsm_box_read(&b2, &p));
		EXPECT_EQ(-1, c_check(p, 500, 0, 4));
		EXPECT_EQ(0, odsm_box_drop(&b2));	/* freed at its home */
	}
	ASSERT_EQ(0, step(_metadata, 6));
}

TEST(owner_write_takes_copy)
{
	uint64_t taken, fetched;
	struct odsm_obj_info oi;
	const void *p;
	odsm_box b;
	void *w;

	C_BEGIN();
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_box_new(&b, 700, 0));
		c_fill(odsm_ptr(b.g), 700, 0, 5);
		ASSERT_EQ(0, c_put(0, W_CO + 4, b.g));
	}
	ASSERT_EQ(0, step(_metadata, 7));
	if (C.self == 1) {
		b = box_at(W_CO + 4);
		ASSERT_EQ(0, odsm_box_read(&b, &p));
		taken = c_stat("mut_taken");
		fetched = c_stat("bytes_fetched");
		ASSERT_EQ(0, odsm_box_write(&b, &w));	/* Algorithm 8 */
		EXPECT_EQ(taken + 1, c_stat("mut_taken"));
		EXPECT_EQ(fetched, c_stat("bytes_fetched"));
		EXPECT_TRUE(odsm_is_local(b.g));
		EXPECT_EQ((uintptr_t)p, (uintptr_t)w);	/* the copy itself */
		EXPECT_EQ(ODSM_EXT_U, b.ext);
		EXPECT_EQ(-1, c_check(w, 700, 0, 5));
		EXPECT_EQ(0, odsm_box_drop(&b));
		c_sleep_ms(300);	/* the original's free reaches its home */
	}
	ASSERT_EQ(0, step(_metadata, 8));
	if (C.self == 0) {
		b = box_at(W_CO + 4);
		EXPECT_EQ(-ESTALE, odsm_obj_info(b.g, &oi));	/* moved */
	}
}

TEST(address_reuse)
{
	odsm_box extra[64];
	uint64_t old, cg;
	unsigned int n;
	const void *p;
	odsm_box b;
	odsm_ref r;

	C_BEGIN();
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_box_new(&b, 4096, 0));
		c_fill(odsm_ptr(b.g), 4096, 0, 6);
		ASSERT_EQ(0, c_put(0, W_CO + 5, b.g));
	}
	ASSERT_EQ(0, step(_metadata, 9));
	if (C.self == 1) {
		/* cached, and kept idle after the return */
		b = box_at(W_CO + 5);
		ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
		EXPECT_EQ(-1, c_check(p, 4096, 0, 6));
		EXPECT_EQ(0, odsm_return(&r));
	}
	ASSERT_EQ(0, step(_metadata, 10));
	if (C.self == 0) {
		/* free it; the next object of its size class takes the slot */
		old = b.g;
		ASSERT_EQ(0, odsm_box_drop(&b));
		/* the allocator searches on from a hint: allocate until the
		 * freed slot comes back, then give the others back
		 */
		for (n = 0; n < 64; n++) {
			ASSERT_EQ(0, odsm_box_new(&extra[n], 4096, 0));
			if (odsm_addr_of(extra[n].g) == odsm_addr_of(old))
				break;
		}
		ASSERT_LT(n, 64U);
		b = extra[n];
		while (n--)
			EXPECT_EQ(0, odsm_box_drop(&extra[n]));
		ASSERT_EQ(odsm_addr_of(old), odsm_addr_of(b.g));
		EXPECT_NE(odsm_color_of(old), odsm_color_of(b.g));
		c_fill(odsm_ptr(b.g), 4096, 0, 7);
		ASSERT_EQ(0, c_put(0, W_CO + 6, b.g));
	}
	ASSERT_EQ(0, step(_metadata, 11));
	if (C.self == 1) {
		ASSERT_EQ(0, c_get(0, W_CO + 6, &cg));
		b.g = cg;
		b.ext = 0;
		ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
		EXPECT_EQ(-1, c_check(p, 4096, 0, 7));	/* the new bytes */
		EXPECT_EQ(0, odsm_return(&r));
	}
	ASSERT_EQ(0, step(_metadata, 12));
}

/* ---- under fire -------------------------------------------------------- */

static struct fire fire = {
	.name = "under_fire",
	.nr_obj = 4,
	.writes = 12,		/* per node */
	.reads = 16,		/* per reader thread */
	.readers = 2,		/* per node */
};

TEST(under_fire)
{
	uint64_t os0, rf0, mo0, mm0, mt0;

	C_BEGIN();
	if (C.self == 0)
		ASSERT_EQ(0, fire_setup(&fire, W_FIRE));
	ASSERT_EQ(0, step(_metadata, 13));
	ASSERT_EQ(0, fire_attach(&fire, W_FIRE));
	/*
	 * Node 1 keeps no idle copies: its readers miss more, and over
	 * RDMA the misses of versions another node copied first are read
	 * one-sided (onesided_copies) -- checked like any other read.  A
	 * move of a version its readers copied would be too
	 * (move_onesided, logged).
	 */
	if (C.self == 1)
		ASSERT_EQ(0, c_set_knob("cache_budget_bytes", 0));
	os0 = c_stat("onesided_copies");
	rf0 = c_stat("onesided_copy_refused");
	mo0 = c_stat("move_onesided");
	mm0 = c_stat("mut_moves");
	mt0 = c_stat("mut_taken");
	EXPECT_EQ(0, fire_run(&fire, 1000 * (C.self + 1)));
	TH_LOG("misses read one-sided: %llu (refused %llu); moves %llu, %llu of them one-sided; copies taken over %llu",
	       (unsigned long long)(c_stat("onesided_copies") - os0),
	       (unsigned long long)(c_stat("onesided_copy_refused") - rf0),
	       (unsigned long long)(c_stat("mut_moves") - mm0),
	       (unsigned long long)(c_stat("move_onesided") - mo0),
	       (unsigned long long)(c_stat("mut_taken") - mt0));
	if (C.self == 1)
		ASSERT_EQ(0, c_set_knob("cache_budget_bytes", MiB(64)));
	ASSERT_EQ(0, step(_metadata, 14));

	/* every write counted: the versions add up to the writes made */
	if (C.self == 0)
		EXPECT_EQ((int64_t)fire_total_writes(&fire), fire_versions(&fire));
	ASSERT_EQ(0, step(_metadata, 15));
}

TEST_HARNESS_MAIN
