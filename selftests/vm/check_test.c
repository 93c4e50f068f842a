// SPDX-License-Identifier: GPL-2.0
/*
 * libodsm's checking mode (built with ODSM_CHECK): each misuse of the
 * borrow discipline the library can see is caught, reported on stderr
 * with the operation and the object, counted, and fails the call with
 * -ENOTRECOVERABLE (abort() with ODSM_CHECK_ABORT); correct use passes
 * untouched.
 */
#define ODSM_CHECK
#include "odsm_vm.h"
#include "../lib/check_capture.h"

FIXTURE(chk) {
	odsm_box b;
	FILE *err;		/* what the checker printed */
	int saved;		/* the real stderr */
};

FIXTURE_SETUP(chk)
{
	ASSERT_EQ(0, odsm_init());
	ASSERT_EQ(0, odsm_box_new(&self->b, 256, ODSM_ALLOC_ZERO));
	ASSERT_EQ(0, ck_capture_start(&self->err, &self->saved));
}

FIXTURE_TEARDOWN(chk)
{
	ck_capture_stop(self->err, self->saved);
	odsm_box_drop(&self->b);
	odsm_fini();
}

TEST_F(chk, correct_use_passes)
{
	uint64_t v = violations();
	struct odsm_lib_stats s0, s1;
	const void *p, *q;
	odsm_ref r, r2, rr;
	odsm_mut m;
	void *w;

	odsm_lib_stats(&s0);
	ASSERT_EQ(0, odsm_borrow(&self->b, &r, &p));
	ASSERT_EQ(0, odsm_ref_clone(&r, &r2, &q));
	ASSERT_EQ(0, odsm_ref_get(&r, &p));
	EXPECT_EQ(0, odsm_return(&r2));
	EXPECT_EQ(0, odsm_return(&r));
	ASSERT_EQ(0, odsm_borrow_mut(&self->b, &m, &w));
	memset(w, 1, 256);
	ASSERT_EQ(0, odsm_borrow_from_mut(&m, &rr, &p));	/* a reborrow */
	EXPECT_EQ(0, odsm_return(&rr));
	ASSERT_EQ(0, odsm_mut_get(&m, &w));
	EXPECT_EQ(0, odsm_return_mut(&m));
	ASSERT_EQ(0, odsm_box_write(&self->b, &w));
	EXPECT_EQ(v, violations());
	EXPECT_STREQ("", printed(self->err));
	odsm_lib_stats(&s1);
	/* the local borrows the kernel never sees are counted here */
	EXPECT_EQ(s0.local_borrows + 3, s1.local_borrows);
	EXPECT_EQ(s0.local_muts + 1, s1.local_muts);
	EXPECT_EQ(s0.returns + 3, s1.returns);
	EXPECT_EQ(s0.returns_mut + 1, s1.returns_mut);
}

TEST_F(chk, mutable_borrow_while_shared_out)
{
	uint64_t v = violations();
	const void *p;
	odsm_ref r;
	odsm_mut m;
	void *w = &w;

	ASSERT_EQ(0, odsm_borrow(&self->b, &r, &p));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_borrow_mut(&self->b, &m, &w));
	EXPECT_EQ(NULL, w);	/* a failed borrow gives no pointer */
	EXPECT_REPORT("mutable borrow", self->b.g, "1 shared and 0 mutable borrows of it are out");
	EXPECT_EQ(v + 1, violations());
	/* and an owner write */
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_box_write(&self->b, &w));
	EXPECT_REPORT("owner write", self->b.g, "1 shared and 0 mutable borrows of it are out");
	EXPECT_EQ(0, odsm_return(&r));
	/* with the borrow returned, both are fine */
	ASSERT_EQ(0, odsm_borrow_mut(&self->b, &m, &w));
	EXPECT_EQ(0, odsm_return_mut(&m));
	EXPECT_EQ(0, odsm_box_write(&self->b, &w));
	EXPECT_EQ(v + 2, violations());
}

TEST_F(chk, shared_borrow_while_mutable_out)
{
	const void *p;
	odsm_ref r;
	odsm_mut m;
	void *w;

	ASSERT_EQ(0, odsm_borrow_mut(&self->b, &m, &w));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_borrow(&self->b, &r, &p));
	EXPECT_REPORT("shared borrow", self->b.g, "a mutable borrow of it is out");
	EXPECT_EQ(0, odsm_return_mut(&m));
}

TEST_F(chk, write_through_mut_while_reborrowed)
{
	const void *p;
	odsm_ref rr;
	odsm_mut m;
	void *w;

	ASSERT_EQ(0, odsm_borrow_mut(&self->b, &m, &w));
	ASSERT_EQ(0, odsm_borrow_from_mut(&m, &rr, &p));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_mut_get(&m, &w));
	EXPECT_REPORT("use of a mutable borrow", self->b.g, "a shared reborrow of it is out");
	EXPECT_EQ(0, odsm_return(&rr));
	EXPECT_EQ(0, odsm_mut_get(&m, &w));
	EXPECT_EQ(0, odsm_return_mut(&m));
}

TEST_F(chk, use_after_return)
{
	uint64_t v = violations();
	odsm_ref r, copy;
	const void *p;
	odsm_mut m;
	void *w;

	ASSERT_EQ(0, odsm_borrow(&self->b, &r, &p));
	copy = r;	/* a second, unchecked borrow: kept for later */
	EXPECT_EQ(0, odsm_return(&r));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_ref_get(&copy, &p));
	EXPECT_REPORT("use of a shared borrow", self->b.g, "no such borrow is out (never taken, or it failed)");
	ASSERT_EQ(0, odsm_borrow_mut(&self->b, &m, &w));
	EXPECT_EQ(0, odsm_return_mut(&m));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_mut_get(&m, &w));
	/* a returned borrow is empty, but the report names its object */
	EXPECT_REPORT("use of a mutable borrow", self->b.g, "the borrow was already returned");
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_ref_get(&r, &p));
	EXPECT_REPORT("use of a shared borrow", self->b.g, "the borrow was already returned");
	EXPECT_EQ(v + 3, violations());
}

TEST_F(chk, double_return)
{
	uint64_t v = violations();
	const void *p;
	odsm_ref r;
	odsm_mut m;
	void *w;

	ASSERT_EQ(0, odsm_borrow(&self->b, &r, &p));
	EXPECT_EQ(0, odsm_return(&r));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_return(&r));
	EXPECT_REPORT("return", self->b.g, "returned twice");
	ASSERT_EQ(0, odsm_borrow_mut(&self->b, &m, &w));
	EXPECT_EQ(0, odsm_return_mut(&m));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_return_mut(&m));
	EXPECT_REPORT("return of a mutable borrow", self->b.g, "returned twice");
	EXPECT_EQ(v + 2, violations());
}

TEST_F(chk, owner_read_transfer_drop_while_borrowed)
{
	uint64_t v = violations();
	odsm_box d = { 0, 0 };
	const void *p;
	odsm_ref r;
	odsm_mut m;
	void *w;

	ASSERT_EQ(0, odsm_borrow_mut(&self->b, &m, &w));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_box_read(&self->b, &p));
	EXPECT_REPORT("owner read", self->b.g, "a mutable borrow of it is out");
	EXPECT_EQ(0, odsm_return_mut(&m));
	ASSERT_EQ(0, odsm_borrow(&self->b, &r, &p));
	odsm_box_transfer(&d, &self->b);
	EXPECT_REPORT("ownership transfer", self->b.g, "1 shared and 0 mutable borrows of it are out");
	EXPECT_EQ(0ULL, d.g);		/* nothing moved */
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_box_drop(&self->b));
	EXPECT_REPORT("owner drop", self->b.g, "1 shared and 0 mutable borrows of it are out");
	EXPECT_EQ(0, odsm_return(&r));
	EXPECT_EQ(v + 3, violations());
}

/*
 * A borrow that fails is not out: taking it again through the same
 * odsm_mut is no "still holds a borrow".  (Here the failure is a color
 * overflow's move of an address that starts no object; remote failures
 * are in selftests/lib/borrowck_test.c.)
 */
TEST_F(chk, failed_borrow_is_not_out)
{
	odsm_box bad = { self->b.g + 16, 0 };
	const void *p;
	odsm_ref r;
	odsm_mut m;
	void *w = &w;

	bad.g |= (uint64_t)ODSM_COLOR_MAX << ODSM_COLOR_SHIFT;
	EXPECT_EQ(-EINVAL, odsm_borrow_mut(&bad, &m, &w));
	EXPECT_EQ(NULL, w);
	EXPECT_EQ(-EINVAL, odsm_borrow_mut(&bad, &m, &w));
	EXPECT_STREQ("", printed(self->err));
	ASSERT_EQ(0, odsm_borrow(&self->b, &r, &p));
	EXPECT_EQ(0, odsm_return(&r));
}

/*
 * A stale owner of a local object: the fast paths would use its address
 * in place; the checking mode asks the module's allocator.
 */
TEST_F(chk, stale_local_owner_is_reported)
{
	static odsm_box again[4096];
	uint64_t v = violations();
	unsigned int n, k;
	odsm_box x, old;
	char why[256];
	const void *p;
	odsm_ref r;
	odsm_mut m;
	void *w;

	ASSERT_EQ(0, odsm_box_new(&x, 100, 0));
	old = x;
	ASSERT_EQ(0, odsm_box_drop(&x));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_borrow(&old, &r, &p));
	EXPECT_REPORT("shared borrow", old.g,
		      "no object starts at its address any more: it was freed or moved (a stale owner or borrow)");
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_borrow_mut(&old, &m, &w));
	EXPECT_REPORT("mutable borrow", old.g,
		      "no object starts at its address any more: it was freed or moved (a stale owner or borrow)");
	EXPECT_EQ(-ESTALE, odsm_box_drop(&old));	/* the module says so too */
	EXPECT_STREQ("", printed(self->err));

	/* its address reused: the old owner's color is below the new one's */
	for (n = 0; n < 4096; n++) {
		ASSERT_EQ(0, odsm_box_new(&again[n], 100, 0));
		if (odsm_addr_of(again[n].g) == odsm_addr_of(old.g))
			break;
	}
	ASSERT_GT(4096U, n) {
		TH_LOG("the freed address was not handed out again");
	}
	EXPECT_GT(odsm_color_of(again[n].g), odsm_color_of(old.g));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_box_write(&old, &w));
	snprintf(why, sizeof(why), "its color %u is older than the object now at its address (allocated at color %u): the object it named was freed or moved and the address reused (a stale owner or borrow)",
		 odsm_color_of(old.g), odsm_color_of(again[n].g));
	EXPECT_REPORT("owner write", old.g, why);
	for (k = 0; k <= n; k++)
		EXPECT_EQ(0, odsm_box_drop(&again[k]));
	EXPECT_EQ(v + 3, violations());
}

/* ODSM_CHECK_ABORT: the first misuse aborts the program */
TEST_F(chk, abort_on_request)
{
	ck_expect_abort(_metadata, &self->b, self->err);
}

TEST_HARNESS_MAIN
