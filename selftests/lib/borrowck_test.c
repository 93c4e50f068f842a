// SPDX-License-Identifier: GPL-2.0
/*
 * libodsm's checking mode on the host (userlib/odsm_check.c), built with
 * ODSM_CHECK against the fake /dev/odsm: every misuse is reported on
 * stderr naming the operation, the object and what was wrong, counted,
 * and fails with -ENOTRECOVERABLE (abort() with ODSM_CHECK_ABORT); a
 * borrow that failed is not out; correct use from many threads at once
 * reports nothing and counts exactly.
 */
#define ODSM_CHECK
#include "ksft_host.h"
#include "fake_odsm.h"
#include "check_capture.h"

#define SZ	128

FIXTURE(ck) {
	odsm_box b;		/* a local object */
	odsm_box rb;		/* a remote one */
	FILE *err;
	int saved;
	uint64_t v0;
};

FIXTURE_SETUP(ck)
{
	fk_init();
	self->b.g = fk_new_obj(0, SZ, 1);
	self->b.ext = 0;
	self->rb.g = fk_new_obj(1, SZ, 2);
	self->rb.ext = 0;
	ASSERT_EQ(0, ck_capture_start(&self->err, &self->saved));
	self->v0 = violations();
}

FIXTURE_TEARDOWN(ck)
{
	ck_capture_stop(self->err, self->saved);
	fk_fini();
}

TEST_F(ck, correct_use_reports_nothing)
{
	struct odsm_lib_stats s0, s1;
	const void *p, *q;
	odsm_ref r, r2, rr;
	odsm_box d;
	odsm_mut m;
	void *w;

	odsm_lib_stats(&s0);
	ASSERT_EQ(0, odsm_borrow(&self->b, &r, &p));
	ASSERT_EQ(0, odsm_ref_clone(&r, &r2, &q));
	ASSERT_EQ(0, odsm_box_read(&self->b, &p));	/* readers may */
	EXPECT_EQ(0, odsm_return(&r2));
	EXPECT_EQ(0, odsm_return(&r));
	ASSERT_EQ(0, odsm_borrow_mut(&self->b, &m, &w));
	ASSERT_EQ(0, odsm_borrow_from_mut(&m, &rr, &p));
	EXPECT_EQ(0, odsm_return(&rr));
	ASSERT_EQ(0, odsm_mut_get(&m, &w));
	EXPECT_EQ(0, odsm_return_mut(&m));
	ASSERT_EQ(0, odsm_box_write(&self->b, &w));
	/* remote ones too */
	ASSERT_EQ(0, odsm_borrow(&self->rb, &r, &p));
	EXPECT_EQ(0, odsm_return(&r));
	ASSERT_EQ(0, odsm_borrow_mut(&self->rb, &m, &w));
	EXPECT_EQ(0, odsm_return_mut(&m));
	odsm_box_transfer(&d, &self->b);
	EXPECT_EQ(0, odsm_box_drop(&d));
	EXPECT_STREQ("", printed(self->err));
	EXPECT_EQ(self->v0, violations());
	odsm_lib_stats(&s1);
	EXPECT_EQ(s0.local_borrows + 3, s1.local_borrows);
	EXPECT_EQ(s0.remote_borrows + 1, s1.remote_borrows);
	EXPECT_EQ(s0.local_muts + 1, s1.local_muts);
	EXPECT_EQ(s0.remote_muts + 1, s1.remote_muts);
	EXPECT_EQ(s0.returns + 4, s1.returns);
	EXPECT_EQ(s0.returns_mut + 2, s1.returns_mut);
}

TEST_F(ck, mutable_borrow_or_owner_write_while_shared_out)
{
	const void *p;
	odsm_ref r, r2;
	odsm_mut m;
	void *w = &w;

	ASSERT_EQ(0, odsm_borrow(&self->b, &r, &p));
	ASSERT_EQ(0, odsm_ref_clone(&r, &r2, &p));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_borrow_mut(&self->b, &m, &w));
	EXPECT_EQ(NULL, w);
	EXPECT_REPORT("mutable borrow", self->b.g,
		      "2 shared and 0 mutable borrows of it are out");
	w = &w;
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_box_write(&self->b, &w));
	EXPECT_EQ(NULL, w);
	EXPECT_REPORT("owner write", self->b.g,
		      "2 shared and 0 mutable borrows of it are out");
	EXPECT_EQ(self->v0 + 2, violations());
	EXPECT_EQ(0, odsm_return(&r2));
	EXPECT_EQ(0, odsm_return(&r));
	ASSERT_EQ(0, odsm_borrow_mut(&self->b, &m, &w));
	EXPECT_EQ(0, odsm_return_mut(&m));
	EXPECT_EQ(0, odsm_box_write(&self->b, &w));
	EXPECT_STREQ("", printed(self->err));
}

TEST_F(ck, shared_borrow_or_owner_read_while_mutable_out)
{
	const void *p = &p;
	odsm_mut m, m2;
	odsm_ref r;
	void *w;

	ASSERT_EQ(0, odsm_borrow_mut(&self->b, &m, &w));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_borrow(&self->b, &r, &p));
	EXPECT_EQ(NULL, p);
	EXPECT_REPORT("shared borrow", self->b.g, "a mutable borrow of it is out");
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_box_read(&self->b, &p));
	EXPECT_REPORT("owner read", self->b.g, "a mutable borrow of it is out");
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_borrow_mut(&self->b, &m2, &w));
	EXPECT_REPORT("mutable borrow", self->b.g,
		      "0 shared and 1 mutable borrows of it are out");
	EXPECT_EQ(0, odsm_return_mut(&m));
	EXPECT_EQ(self->v0 + 3, violations());
}

TEST_F(ck, remote_mutable_borrow_is_tracked_where_it_moved)
{
	uint64_t old = self->rb.g;
	const void *p;
	odsm_ref r, rr;
	odsm_mut m;
	void *w;

	ASSERT_EQ(0, odsm_borrow_mut(&self->rb, &m, &w));
	EXPECT_TRUE(odsm_is_local(m.g));
	/* the owner still names the old address until the return */
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_borrow(&self->rb, &r, &p));
	EXPECT_REPORT("shared borrow", old, "a mutable borrow of it is out");
	/* a reborrow reads where it is now; a write waits for its return */
	ASSERT_EQ(0, odsm_borrow_from_mut(&m, &rr, &p));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_mut_get(&m, &w));
	EXPECT_REPORT("use of a mutable borrow", m.g, "a shared reborrow of it is out");
	EXPECT_EQ(0, odsm_return(&rr));
	ASSERT_EQ(0, odsm_mut_get(&m, &w));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_borrow(&self->rb, &r, &p));
	EXPECT_REPORT("shared borrow", old, "a mutable borrow of it is out");
	EXPECT_EQ(0, odsm_return_mut(&m));
	ASSERT_EQ(0, odsm_borrow(&self->rb, &r, &p));
	EXPECT_EQ(0, odsm_return(&r));
	EXPECT_STREQ("", printed(self->err));
}

TEST_F(ck, transfer_or_drop_while_borrowed)
{
	odsm_box d = { 0, 0 };
	uint64_t g = self->b.g;
	const void *p;
	odsm_ref r;

	ASSERT_EQ(0, odsm_borrow(&self->b, &r, &p));
	odsm_box_transfer(&d, &self->b);
	EXPECT_REPORT("ownership transfer", g,
		      "1 shared and 0 mutable borrows of it are out");
	EXPECT_EQ(g, self->b.g);		/* nothing moved */
	EXPECT_EQ(0ULL, d.g);
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_box_drop(&self->b));
	EXPECT_REPORT("owner drop", g,
		      "1 shared and 0 mutable borrows of it are out");
	EXPECT_NE(NULL, fk_find(g));		/* not freed */
	EXPECT_EQ(0, odsm_return(&r));
	odsm_box_transfer(&d, &self->b);
	EXPECT_EQ(g, d.g);
	EXPECT_EQ(0, odsm_box_drop(&d));
	EXPECT_EQ(NULL, fk_find(g));
	EXPECT_EQ(self->v0 + 2, violations());
}

TEST_F(ck, use_after_return_names_the_object)
{
	uint64_t g = self->b.g, rg = self->rb.g;
	odsm_ref r, copy;
	const void *p;
	odsm_mut m;
	void *w;

	ASSERT_EQ(0, odsm_borrow(&self->rb, &r, &p));
	EXPECT_EQ(0, odsm_return(&r));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_ref_get(&r, &p));
	EXPECT_EQ(NULL, p);
	EXPECT_REPORT("use of a shared borrow", rg, "the borrow was already returned");
	EXPECT_EQ(1UL, fk_snap().borrows);	/* nothing fetched for it */

	ASSERT_EQ(0, odsm_borrow_mut(&self->b, &m, &w));
	g = m.g;
	EXPECT_EQ(0, odsm_return_mut(&m));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_mut_get(&m, &w));
	EXPECT_REPORT("use of a mutable borrow", g, "the borrow was already returned");

	/* a copy made by value was never taken as a borrow */
	ASSERT_EQ(0, odsm_borrow(&self->b, &r, &p));
	copy = r;
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_ref_get(&copy, &p));
	EXPECT_REPORT("use of a shared borrow", self->b.g,
		      "no such borrow is out (never taken, or it failed)");
	EXPECT_EQ(0, odsm_return(&r));
	EXPECT_EQ(self->v0 + 3, violations());
}

TEST_F(ck, double_return_names_the_object)
{
	uint64_t g;
	const void *p;
	odsm_ref r;
	odsm_mut m;
	void *w;

	ASSERT_EQ(0, odsm_borrow(&self->rb, &r, &p));
	EXPECT_EQ(0, odsm_return(&r));
	EXPECT_EQ(1UL, fk_snap().returns);
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_return(&r));
	EXPECT_REPORT("return", self->rb.g, "returned twice");
	EXPECT_EQ(1UL, fk_snap().returns);	/* not returned again */

	ASSERT_EQ(0, odsm_borrow_mut(&self->b, &m, &w));
	g = m.g;
	EXPECT_EQ(0, odsm_return_mut(&m));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_return_mut(&m));
	EXPECT_REPORT("return of a mutable borrow", g, "returned twice");
	EXPECT_EQ(g, self->b.g);		/* the owner untouched */
	EXPECT_EQ(self->v0 + 2, violations());
}

TEST_F(ck, a_borrow_that_failed_is_not_out)
{
	const void *p;
	odsm_ref r;
	odsm_mut m;
	void *w;

	fk.fail_borrow = EHOSTDOWN;
	EXPECT_EQ(-EHOSTDOWN, odsm_borrow(&self->rb, &r, &p));
	/* not out: a mutable borrow is fine, returning it is not */
	fk.fail_mut = ETIMEDOUT;
	EXPECT_EQ(-ETIMEDOUT, odsm_borrow_mut(&self->rb, &m, &w));
	EXPECT_STREQ("", printed(self->err));
	/* retried, both work */
	ASSERT_EQ(0, odsm_borrow(&self->rb, &r, &p));
	EXPECT_EQ(0, odsm_return(&r));
	ASSERT_EQ(0, odsm_borrow_mut(&self->rb, &m, &w));
	EXPECT_EQ(0, odsm_return_mut(&m));
	EXPECT_STREQ("", printed(self->err));
	/* a failed borrow was never taken: returning it is a misuse */
	EXPECT_TRUE(odsm_is_local(self->rb.g));	/* it moved here */
	self->rb.g = fk_new_obj(1, SZ, 3);
	fk.fail_borrow = EHOSTDOWN;
	EXPECT_EQ(-EHOSTDOWN, odsm_borrow(&self->rb, &r, &p));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_return(&r));
	EXPECT_REPORT("return", self->rb.g,
		      "no such borrow is out to return (never taken, or it failed)");
	EXPECT_EQ(self->v0 + 1, violations());
}

TEST_F(ck, abort_on_request)
{
	ck_expect_abort(_metadata, &self->b, self->err);
}

/* ---- threads --------------------------------------------------------------- */

#define THREADS	8
#define ROUNDS	3000

struct th {
	odsm_box own;		/* this thread's object */
	odsm_box *shared;	/* everybody reads this one */
	pthread_barrier_t *bar;
	int errors;
};

static void *reader_writer(void *arg)
{
	struct th *t = arg;
	const void *p;
	odsm_ref r, r2;
	odsm_mut m;
	void *w;
	int i;

	pthread_barrier_wait(t->bar);
	for (i = 0; i < ROUNDS; i++) {
		odsm_ref *rp = i % 2 ? &r : &r2;

		/* clones of the shared object's borrow: readers at once */
		if (odsm_ref_clone(&(odsm_ref){ t->shared->g, 0 }, rp, &p))
			t->errors++;
		if (odsm_return(rp))
			t->errors++;
		if (odsm_borrow_mut(&t->own, &m, &w))
			t->errors++;
		memset(w, i, 16);
		if (odsm_return_mut(&m))
			t->errors++;
		if (odsm_borrow(&t->own, &r, &p))
			t->errors++;
		if (odsm_return(&r))
			t->errors++;
	}
	return NULL;
}

/*
 * A stale owner of a local object: the fast paths would use the address
 * in place whatever its color; the checking mode asks the allocator.
 */
TEST_F(ck, stale_local_owner_is_reported)
{
	odsm_box old = self->b, older;
	char why[256];
	const void *p;
	odsm_ref r;
	odsm_mut m;
	void *w;

	/* the object is gone: freed (or moved away) */
	ASSERT_EQ(0, odsm_box_drop(&self->b));
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_borrow(&old, &r, &p));
	EXPECT_EQ(NULL, p);
	EXPECT_REPORT("shared borrow", old.g,
		      "no object starts at its address any more: it was freed or moved (a stale owner or borrow)");
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_borrow_mut(&old, &m, &w));
	EXPECT_REPORT("mutable borrow", old.g,
		      "no object starts at its address any more: it was freed or moved (a stale owner or borrow)");
	/* a color older than the object now there: its address was reused */
	self->b.g = fk_new_obj(0, SZ, 3);
	older.g = self->b.g - (1ULL << ODSM_COLOR_SHIFT);
	older.ext = 0;
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_box_read(&older, &p));
	snprintf(why, sizeof(why), "its color %u is older than the object now at its address (allocated at color %u): the object it named was freed or moved and the address reused (a stale owner or borrow)",
		 odsm_color_of(older.g), odsm_color_of(self->b.g));
	EXPECT_REPORT("owner read", older.g, why);
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_box_write(&older, &w));
	EXPECT_EQ(self->v0 + 4, violations());
	/* the live owner is fine */
	ASSERT_EQ(0, odsm_borrow(&self->b, &r, &p));
	EXPECT_EQ(0, odsm_return(&r));
}

TEST_F(ck, many_threads_no_false_report_exact_counts)
{
	struct odsm_lib_stats s0, s1;
	pthread_t tid[THREADS];
	pthread_barrier_t bar;
	struct th t[THREADS];
	int i;

	odsm_lib_stats(&s0);
	ASSERT_EQ(0, pthread_barrier_init(&bar, NULL, THREADS));
	for (i = 0; i < THREADS; i++) {
		t[i].own.g = fk_new_obj(0, 64, 0);
		t[i].own.ext = 0;
		t[i].shared = &self->b;
		t[i].bar = &bar;
		t[i].errors = 0;
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, reader_writer, &t[i]));
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(tid[i], NULL);
		EXPECT_EQ(0, t[i].errors);
	}
	pthread_barrier_destroy(&bar);
	odsm_lib_stats(&s1);
	EXPECT_STREQ("", printed(self->err));
	EXPECT_EQ(self->v0, violations());
	EXPECT_EQ(s0.local_borrows + 2ULL * THREADS * ROUNDS, s1.local_borrows);
	EXPECT_EQ(s0.local_muts + 1ULL * THREADS * ROUNDS, s1.local_muts);
	EXPECT_EQ(s0.returns + 2ULL * THREADS * ROUNDS, s1.returns);
	EXPECT_EQ(s0.returns_mut + 1ULL * THREADS * ROUNDS, s1.returns_mut);
}

struct holder {
	odsm_box *b;
	pthread_barrier_t *bar;
};

static void *hold_shared(void *arg)
{
	struct holder *h = arg;
	const void *p;
	odsm_ref r;

	if (odsm_borrow(h->b, &r, &p))
		return (void *)1;
	pthread_barrier_wait(h->bar);	/* borrowed */
	pthread_barrier_wait(h->bar);	/* the other thread tried */
	return (void *)(intptr_t)odsm_return(&r);
}

TEST_F(ck, a_borrow_in_one_thread_is_seen_by_another)
{
	struct holder h = { &self->b, NULL };
	pthread_barrier_t bar;
	pthread_t tid;
	odsm_mut m;
	void *w, *res;

	ASSERT_EQ(0, pthread_barrier_init(&bar, NULL, 2));
	h.bar = &bar;
	ASSERT_EQ(0, pthread_create(&tid, NULL, hold_shared, &h));
	pthread_barrier_wait(&bar);
	EXPECT_EQ(-ENOTRECOVERABLE, odsm_borrow_mut(&self->b, &m, &w));
	pthread_barrier_wait(&bar);
	pthread_join(tid, &res);
	EXPECT_EQ(NULL, res);
	pthread_barrier_destroy(&bar);
	EXPECT_REPORT("mutable borrow", self->b.g,
		      "1 shared and 0 mutable borrows of it are out");
	ASSERT_EQ(0, odsm_borrow_mut(&self->b, &m, &w));
	EXPECT_EQ(0, odsm_return_mut(&m));
}

TEST_HARNESS_MAIN
