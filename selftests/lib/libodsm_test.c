// SPDX-License-Identifier: GPL-2.0
/*
 * libodsm's coherence protocol on the host, against a fake /dev/odsm
 * (fake_odsm.h) that answers as uapi/linux/odsm.h promises: which paths
 * enter the kernel and with what, the extension words, the U bit, and the
 * write-back of an owner box wherever it lives.  Built WITHOUT ODSM_CHECK:
 * the inline paths must never call the checking hook.
 */
#include "ksft_host.h"
#include "fake_odsm.h"

#define SZ	256

FIXTURE(lib) {
	struct fk_stats s0;
	unsigned long checks0;
};

FIXTURE_SETUP(lib)
{
	fk_init();
	self->s0 = fk_snap();
	self->checks0 = fk_checks;
}

FIXTURE_TEARDOWN(lib)
{
	fk_fini();
}

static bool all(const void *p, size_t n, int c)
{
	const unsigned char *b = p;

	while (n--)
		if (*b++ != (unsigned char)c)
			return false;
	return true;
}

/* the address part of a copy word (box or ref ext) */
static uint64_t copy_addr(uint64_t ext)
{
	return ext & ODSM_ADDR_MASK & ~ODSM_EXT_LOW;
}

TEST_F(lib, local_paths_enter_no_kernel_and_call_no_check)
{
	odsm_box b = { fk_new_obj(0, SZ, 1), 0 };
	const void *p;
	odsm_ref r, r2;
	odsm_mut m;
	void *w;

	ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
	EXPECT_EQ(odsm_ptr(b.g), p);
	EXPECT_EQ(0ULL, r.ext);
	ASSERT_EQ(0, odsm_ref_clone(&r, &r2, &p));
	EXPECT_EQ(0, odsm_return(&r2));
	EXPECT_EQ(0, odsm_return(&r));
	ASSERT_EQ(0, odsm_borrow_mut(&b, &m, &w));
	memset(w, 2, SZ);
	ASSERT_EQ(0, odsm_borrow_from_mut(&m, &r, &p));
	EXPECT_EQ(0, odsm_return(&r));
	EXPECT_EQ(0, odsm_return_mut(&m));
	ASSERT_EQ(0, odsm_box_read(&b, &p));
	EXPECT_TRUE(all(p, SZ, 2));
	ASSERT_EQ(0, odsm_box_write(&b, &w));
	odsm_box_share(&b);
	EXPECT_EQ(0UL, fk_snap().calls - self->s0.calls);
	EXPECT_EQ(0UL, fk_checks - self->checks0);
}

TEST_F(lib, remote_shared_borrow_reads_a_tagged_copy)
{
	odsm_box b = { fk_new_obj(1, SZ, 7), 0 };
	struct fk_stats s;
	const void *p, *q;
	odsm_ref r, r2;

	ASSERT_FALSE(odsm_is_local(b.g));
	ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
	s = fk_snap();
	EXPECT_EQ(1UL, s.borrows);
	EXPECT_EQ(1UL, s.misses);
	/* ext: the copy in this node's partition, tagged as ours */
	EXPECT_EQ(odsm_rt.tag, r.ext >> ODSM_EXT_TAG_SHIFT);
	EXPECT_EQ((uint64_t)(uintptr_t)p, copy_addr(r.ext));
	EXPECT_TRUE(odsm_is_local((uintptr_t)p));
	EXPECT_NE(odsm_ptr(b.g), p);
	EXPECT_TRUE(all(p, SZ, 7));
	/* the borrow keeps the copy: no second kernel entry */
	ASSERT_EQ(0, odsm_ref_get(&r, &q));
	EXPECT_EQ(p, q);
	EXPECT_EQ(1UL, fk_snap().borrows);
	/* a clone is a borrow of its own: a hit, a second reference */
	ASSERT_EQ(0, odsm_ref_clone(&r, &r2, &q));
	EXPECT_EQ(p, q);
	EXPECT_EQ(1UL, fk_snap().hits);
	EXPECT_EQ(2U, fk_refs(b.g));
	EXPECT_EQ(0, odsm_return(&r2));
	EXPECT_EQ(0, odsm_return(&r));
	EXPECT_EQ(0U, fk_refs(b.g));
	EXPECT_EQ(2UL, fk_snap().returns);
	EXPECT_EQ(0ULL, r.g);
	EXPECT_EQ(0ULL, r.ext);
	EXPECT_EQ(0UL, fk_checks - self->checks0);
}

TEST_F(lib, foreign_copy_words_are_ignored)
{
	odsm_box b = { fk_new_obj(1, SZ, 9), 0 };
	uint64_t foreign;
	const void *p;
	odsm_box d;
	odsm_ref r;
	void *w;

	/* a copy word another process (or node) left in a fat pointer */
	foreign = (fk_part(0) + 4096) |
		  (uint64_t)(odsm_rt.tag ^ 0x0101) << ODSM_EXT_TAG_SHIFT;
	EXPECT_EQ(0ULL, odsm__copy_of(foreign));
	EXPECT_EQ(0ULL, odsm__copy_of(foreign | ODSM_EXT_U));

	/* a ref: fetches its own copy, returns only that */
	r.g = b.g;
	r.ext = foreign;
	ASSERT_EQ(0, odsm_ref_get(&r, &p));
	EXPECT_EQ(1UL, fk_snap().misses);
	EXPECT_TRUE(all(p, SZ, 9));
	EXPECT_EQ(odsm_rt.tag, r.ext >> ODSM_EXT_TAG_SHIFT);
	EXPECT_EQ(0, odsm_return(&r));
	EXPECT_EQ(1UL, fk_snap().returns);
	r.g = b.g;
	r.ext = foreign;
	EXPECT_EQ(0, odsm_return(&r));	/* not ours: no RETURN */
	EXPECT_EQ(1UL, fk_snap().returns);

	/* a box: reads through its own copy; a transfer returns nothing */
	b.ext = foreign | ODSM_EXT_U;
	ASSERT_EQ(0, odsm_box_read(&b, &p));
	EXPECT_TRUE(all(p, SZ, 9));
	EXPECT_EQ(ODSM_EXT_U, b.ext & ODSM_EXT_U);	/* kept */
	EXPECT_EQ((uint64_t)(uintptr_t)p, odsm__copy_of(b.ext));
	b.ext = foreign;
	odsm_box_transfer(&d, &b);
	EXPECT_EQ(1UL, fk_snap().returns);
	EXPECT_EQ(0ULL, d.ext);

	/* a write moves the object: the foreign word is of an older
	 * version and goes (nothing returned, not passed as held)
	 */
	d.ext = foreign;
	ASSERT_EQ(0, odsm_box_write(&d, &w));
	EXPECT_EQ(0U, fk.last_mut_flags);
	EXPECT_EQ(0ULL, fk.last_mut_addr);
	EXPECT_EQ(1UL, fk_snap().moved);
	EXPECT_EQ(ODSM_EXT_U, d.ext);
	EXPECT_EQ(1UL, fk_snap().returns);
}

TEST_F(lib, owner_read_keeps_a_copy_and_owner_write_takes_it)
{
	odsm_box b = { fk_new_obj(1, SZ, 3), 0 };
	const void *p, *q;
	uint64_t old = b.g;
	struct fk_stats s;
	void *w;

	/* Algorithm 7: one fetch, then reads from the box's copy */
	ASSERT_EQ(0, odsm_box_read(&b, &p));
	ASSERT_EQ(0, odsm_box_read(&b, &q));
	EXPECT_EQ(p, q);
	EXPECT_EQ(1UL, fk_snap().borrows);
	EXPECT_EQ((uint64_t)(uintptr_t)p, odsm__copy_of(b.ext));
	EXPECT_TRUE(all(p, SZ, 3));

	/* Algorithm 8 with a local copy: passed as held, taken over */
	ASSERT_EQ(0, odsm_box_write(&b, &w));
	s = fk_snap();
	EXPECT_EQ(1UL, s.muts);
	EXPECT_EQ((uint32_t)ODSM_MUT_HELD_REF, fk.last_mut_flags);
	/* named by its address: not any copy of the object's */
	EXPECT_EQ((uint64_t)(uintptr_t)p, fk.last_mut_addr);
	EXPECT_EQ(1UL, s.taken);
	EXPECT_EQ(0UL, s.moved);
	EXPECT_EQ(p, w);		/* the copy itself */
	EXPECT_TRUE(odsm_is_local(b.g));
	EXPECT_EQ(ODSM_EXT_U, b.ext);	/* no copy any more; bumped once */
	EXPECT_NE(odsm_addr_of(old), odsm_addr_of(b.g));
	EXPECT_TRUE(all(w, SZ, 3));
	EXPECT_EQ(NULL, fk_find(old));	/* the original is gone */
	/* a second write enters no kernel and does not bump */
	old = b.g;
	ASSERT_EQ(0, odsm_box_write(&b, &w));
	EXPECT_EQ(old, b.g);
	EXPECT_EQ(1UL, fk_snap().muts);
}

TEST_F(lib, owner_write_with_a_shared_copy_moves)
{
	odsm_box b = { fk_new_obj(1, SZ, 4), 0 };
	const void *p;
	odsm_ref r;
	void *w;

	ASSERT_EQ(0, odsm_box_read(&b, &p));
	ASSERT_EQ(0, odsm_borrow(&b, &r, &p));	/* a second reader */
	ASSERT_EQ(0, odsm_return(&r));
	/* the copy is idle but for the box: still taken */
	ASSERT_EQ(0, odsm_box_write(&b, &w));
	EXPECT_EQ(1UL, fk_snap().taken);

	b.g = fk_new_obj(1, SZ, 5);
	b.ext = 0;
	ASSERT_EQ(0, odsm_box_read(&b, &p));
	ASSERT_EQ(0, odsm_borrow(&b, &r, &p));	/* still out */
	ASSERT_EQ(0, odsm_box_write(&b, &w));
	EXPECT_EQ(1UL, fk_snap().moved);	/* not taken from the reader */
	EXPECT_NE(p, w);
	EXPECT_TRUE(all(w, SZ, 5));
	EXPECT_EQ(ODSM_EXT_U, b.ext);
	EXPECT_EQ(1U, fk_refs(r.g));		/* the reader's reference */
	EXPECT_EQ(0, odsm_return(&r));
}

TEST_F(lib, failed_move_forgets_the_consumed_copy)
{
	odsm_box b = { fk_new_obj(1, SZ, 6), 0 };
	const void *p;
	void *w = &w;

	ASSERT_EQ(0, odsm_box_read(&b, &p));
	fk.fail_mut = ETIMEDOUT;
	EXPECT_EQ(-ETIMEDOUT, odsm_box_write(&b, &w));
	EXPECT_EQ(NULL, w);
	/* the kernel consumed the reference: the box must not keep the
	 * word, or its next read would follow a copy it no longer holds
	 */
	EXPECT_EQ(0ULL, odsm__copy_of(b.ext));
	EXPECT_EQ(0U, fk_refs(b.g));
	ASSERT_EQ(0, odsm_box_read(&b, &p));
	EXPECT_EQ(2UL, fk_snap().borrows);	/* a fresh reference */
	EXPECT_EQ(1U, fk_refs(b.g));
	ASSERT_EQ(0, odsm_box_write(&b, &w));	/* and now it works */
	EXPECT_EQ(1UL, fk_snap().taken);
}

TEST_F(lib, mutable_borrow_moves_and_bumps_once)
{
	odsm_box b = { fk_new_obj(1, SZ, 8), 0 };
	uint64_t g1;
	const void *p;
	odsm_mut m;
	odsm_ref r;
	void *w, *w2;

	ASSERT_EQ(0, odsm_borrow_mut(&b, &m, &w));
	EXPECT_EQ(1UL, fk_snap().moved);
	EXPECT_EQ(0U, fk.last_mut_flags);	/* the box held no copy */
	EXPECT_EQ(0ULL, fk.last_mut_addr);
	EXPECT_TRUE(odsm_is_local(m.g));
	EXPECT_EQ((uint64_t)(uintptr_t)&b | ODSM_EXT_U, m.ext);
	EXPECT_TRUE(all(w, SZ, 8));
	g1 = m.g;
	ASSERT_EQ(0, odsm_mut_get(&m, &w2));
	EXPECT_EQ(w, w2);
	EXPECT_EQ(g1, m.g);
	EXPECT_EQ(1UL, fk_snap().muts);
	/* the color was bumped past the one the move gave */
	EXPECT_NE(NULL, fk_find(g1));
	EXPECT_EQ(fk_find(g1)->color + 1, odsm_color_of(g1));
	/* a reborrow ends the epoch */
	ASSERT_EQ(0, odsm_borrow_from_mut(&m, &r, &p));
	EXPECT_EQ(0, odsm_return(&r));
	ASSERT_EQ(0, odsm_mut_get(&m, &w2));
	EXPECT_EQ(odsm_color_of(g1) + 1, odsm_color_of(m.g));
	g1 = m.g;
	EXPECT_EQ(0, odsm_return_mut(&m));
	/* a private owner: a plain store, and it continues the epoch */
	EXPECT_EQ(g1, b.g);
	EXPECT_EQ(ODSM_EXT_U, b.ext);
	EXPECT_EQ(0UL, fk_snap().writebacks);
	EXPECT_EQ(0UL, fk_checks - self->checks0);
}

/*
 * The model's gap 3 (issue 12): a mutable borrow's move lands on the last
 * color, and the move on color overflow that the bump would make fails
 * (-ENOMEM: a full partition).  The original is already freed at its home,
 * so a borrow that failed then would leave its owner naming a freed
 * object.  The moved object's address is fresh -- nobody ever saw it, no
 * copy of it exists anywhere -- so it needs no bump: the borrow succeeds
 * and its return hands the owner the moved object.
 */
TEST_F(lib, move_onto_the_last_color_loses_nothing)
{
	odsm_box b = { fk_new_obj(1, SZ, 12), 0 };
	uint64_t orig = b.g;
	odsm_mut m;
	void *w;

	fk.next_color = ODSM_COLOR_MAX;	/* where the move lands */
	fk.fail_move = ENOMEM;		/* no room for another move */
	ASSERT_EQ(0, odsm_borrow_mut(&b, &m, &w));
	EXPECT_EQ(1UL, fk_snap().moved);
	EXPECT_EQ(0UL, fk.move_calls);
	EXPECT_EQ((unsigned int)ODSM_COLOR_MAX, odsm_color_of(m.g));
	EXPECT_TRUE(odsm_is_local(m.g));
	EXPECT_TRUE(all(w, SZ, 12));
	memset(w, 13, SZ);
	EXPECT_EQ(0, odsm_return_mut(&m));
	/* the owner names the live moved object, not the freed original */
	EXPECT_EQ(NULL, fk_object(orig));
	ASSERT_NE(NULL, fk_object(b.g));
	EXPECT_TRUE(all(odsm_ptr(b.g), SZ, 13));
	/* its next epoch needs a new color: that one may be refused, and
	 * then nothing moved and the owner still names the object
	 */
	b.ext = 0;
	EXPECT_EQ(-ENOMEM, odsm_borrow_mut(&b, &m, &w));
	EXPECT_EQ(1UL, fk.move_calls);
	ASSERT_NE(NULL, fk_object(b.g));
	fk.fail_move = 0;
}

TEST_F(lib, mutable_borrow_takes_the_owner_copy)
{
	odsm_box b = { fk_new_obj(1, SZ, 10), 0 };
	const void *p;
	odsm_mut m;
	void *w;

	ASSERT_EQ(0, odsm_box_read(&b, &p));
	ASSERT_EQ(0, odsm_borrow_mut(&b, &m, &w));
	EXPECT_EQ((uint32_t)ODSM_MUT_HELD_REF, fk.last_mut_flags);
	EXPECT_EQ((uint64_t)(uintptr_t)p, fk.last_mut_addr);
	EXPECT_EQ(1UL, fk_snap().taken);
	EXPECT_EQ(p, w);
	EXPECT_EQ(0ULL, odsm__copy_of(b.ext));	/* consumed */
	EXPECT_EQ(0, odsm_return_mut(&m));
	EXPECT_EQ(0ULL, odsm__copy_of(b.ext));
	EXPECT_TRUE(odsm_is_local(b.g));
}

TEST_F(lib, owner_box_in_a_remote_partition_is_written_back)
{
	uint64_t boxat = odsm_addr_of(fk_new_obj(1, 64, 0));
	odsm_box *ob = odsm_ptr(boxat);	/* another node's memory */
	volatile uint64_t outside = fk.base - 4096;
	struct fk_stats s;
	uint64_t orig;
	odsm_mut m;
	void *w;

	ob->g = fk_new_obj(1, SZ, 11);
	ob->ext = ODSM_EXT_U;
	orig = ob->g;
	ASSERT_EQ(0, odsm_borrow_mut_at(boxat, &m, &w));
	s = fk_snap();
	EXPECT_EQ(1UL, s.reads);		/* the box, read at its home */
	EXPECT_EQ(1UL, s.moved);
	/* the original stays the object until the box names the new one
	 * (a node that dies now loses its changes, not the object)
	 */
	EXPECT_EQ((uint32_t)ODSM_MUT_KEEP_ORIGINAL, fk.last_mut_flags);
	EXPECT_NE(NULL, fk_object(orig));
	EXPECT_EQ(boxat | ODSM_EXT_AT | ODSM_EXT_U, m.ext);
	EXPECT_TRUE(all(w, SZ, 11));
	memset(w, 12, SZ);
	EXPECT_EQ(0, odsm_return_mut(&m));
	s = fk_snap();
	EXPECT_EQ(1UL, s.writebacks);
	EXPECT_EQ(boxat, fk.last_wb[0]);
	EXPECT_TRUE(odsm_is_local(fk.last_wb[1]));
	EXPECT_EQ(NULL, fk_object(orig));	/* freed by the write-back */
	/* no U bit into a box everyone can read */
	EXPECT_EQ(0ULL, fk.last_wb[2]);
	EXPECT_EQ(fk.last_wb[1], ob->g);
	EXPECT_EQ(0ULL, ob->ext);
	EXPECT_TRUE(all(odsm_ptr(ob->g), SZ, 12));
	/* misaligned or outside the heap: refused, nothing read */
	EXPECT_EQ(-EINVAL, odsm_borrow_mut_at(boxat + 8, &m, &w));
	EXPECT_EQ(-EINVAL, odsm_borrow_mut_at(outside, &m, &w));
	EXPECT_EQ(1UL, fk_snap().reads);
}

TEST_F(lib, owner_box_in_the_local_partition_is_stored)
{
	uint64_t boxat = odsm_addr_of(fk_new_obj(0, 64, 0));
	odsm_box *ob = odsm_ptr(boxat);
	uint64_t g;
	odsm_mut m;
	void *w;

	ob->g = fk_new_obj(1, SZ, 13);
	ob->ext = 0;
	/* named by its global address: read and written back at its home,
	 * which checks it, even when that home is this node
	 */
	ASSERT_EQ(0, odsm_borrow_mut_at(boxat, &m, &w));
	EXPECT_EQ(1UL, fk_snap().reads);
	EXPECT_EQ(boxat | ODSM_EXT_AT | ODSM_EXT_U, m.ext);
	EXPECT_EQ(0, odsm_return_mut(&m));
	EXPECT_EQ(1UL, fk_snap().writebacks);
	EXPECT_TRUE(odsm_is_local(ob->g));
	EXPECT_EQ(0ULL, ob->ext);		/* heap box: no U */
	/* each write through a box in the heap starts a new epoch */
	g = ob->g;
	ASSERT_EQ(0, odsm_box_write(ob, &w));
	EXPECT_EQ(odsm_color_of(g) + 1, odsm_color_of(ob->g));
	ASSERT_EQ(0, odsm_box_write(ob, &w));
	EXPECT_EQ(odsm_color_of(g) + 2, odsm_color_of(ob->g));
	EXPECT_EQ(0ULL, ob->ext);
}

/* The lost update of a box changed behind a copy of its parent. */
TEST_F(lib, owner_box_in_a_copied_object_is_refused)
{
	uint64_t pg = fk_new_obj(1, 64, 0), boxat = odsm_addr_of(pg);
	odsm_box *ob = odsm_ptr(boxat), pb = { pg, 0 };
	const void *p;
	odsm_ref r;
	odsm_mut m;
	void *w;

	ob->g = fk_new_obj(1, SZ, 15);
	ob->ext = 0;
	/* a shared borrow copies the parent into this node's cache */
	ASSERT_EQ(0, odsm_borrow(&pb, &r, &p));
	EXPECT_EQ(0, odsm_return(&r));
	EXPECT_EQ(-EBUSY, odsm_borrow_mut_at(boxat, &m, &w));
	EXPECT_EQ(NULL, w);
	EXPECT_EQ(0UL, fk_snap().muts);		/* nothing moved */
	EXPECT_EQ(-EBUSY, odsm_box_store_at(boxat, &pb));
	EXPECT_EQ(pg, pb.g);			/* still the owner */
	EXPECT_STREQ(odsm_strerror(-EBUSY), odsm_strerror(-EBUSY));
	EXPECT_NE(NULL, strstr(odsm_strerror(-EBUSY), "odsm_borrow_mut_field"));
}

/* A write-back the home refuses leaves the borrow out: nothing is lost. */
TEST_F(lib, refused_write_back_keeps_the_borrow)
{
	uint64_t pg = fk_new_obj(1, 64, 0), boxat = odsm_addr_of(pg);
	odsm_box *ob = odsm_ptr(boxat);
	odsm_mut m;
	uint64_t g;
	void *w;

	ob->g = fk_new_obj(1, SZ, 16);
	ob->ext = 0;
	ASSERT_EQ(0, odsm_borrow_mut_at(boxat, &m, &w));
	g = m.g;
	fk_find(pg)->copied = true;	/* a peer copied the parent meanwhile */
	EXPECT_EQ(-EBUSY, odsm_return_mut(&m));
	EXPECT_EQ(g, m.g);
	EXPECT_TRUE(all(odsm_ptr(m.g), SZ, 16));
	fk_find(pg)->copied = false;
	EXPECT_EQ(0, odsm_return_mut(&m));
	EXPECT_EQ(g, ob->g);
	EXPECT_EQ(0ULL, m.g);
}

/* &mut parent.field: the parent moves here, the box is stored in place. */
TEST_F(lib, field_borrowed_through_a_mutable_parent)
{
	uint64_t pg = fk_new_obj(1, 64, 0), xg = fk_new_obj(1, SZ, 17);
	odsm_box pb = { pg, 0 }, *field;
	odsm_mut pm, xm;
	struct fk_stats s;
	void *pp, *w;

	((odsm_box *)odsm_ptr(pg))[1] = (odsm_box){ xg, 0 };
	EXPECT_EQ(-EINVAL, odsm_borrow_mut_field(&pm, 8, &xm, &w));
	ASSERT_EQ(0, odsm_borrow_mut(&pb, &pm, &pp));
	ASSERT_EQ(0, odsm_borrow_mut_field(&pm, 16, &xm, &w));
	EXPECT_TRUE(odsm_is_local(pm.g));
	EXPECT_TRUE(odsm_is_local(xm.g));
	EXPECT_TRUE(all(w, SZ, 17));
	memset(w, 18, SZ);
	EXPECT_EQ(0, odsm_return_mut(&xm));
	field = (odsm_box *)((char *)odsm_ptr(pm.g) + 16);
	EXPECT_TRUE(odsm_is_local(field->g));	/* stored in the parent */
	EXPECT_EQ(0, odsm_return_mut(&pm));
	s = fk_snap();
	EXPECT_EQ(2UL, s.moved);
	EXPECT_EQ(0UL, s.writebacks);		/* no write behind a copy */
	EXPECT_EQ(0UL, s.reads);
	EXPECT_NE(pg, pb.g);
	EXPECT_TRUE(all(odsm_ptr(field->g), SZ, 18));
}

/* &parent.field from a read-only copy: only the address counts. */
TEST_F(lib, field_borrowed_from_a_copy)
{
	uint64_t pg = fk_new_obj(1, 64, 0), xg = fk_new_obj(1, SZ, 19);
	odsm_box pb = { pg, 0 };
	const odsm_box *f;
	const void *pp, *p;
	odsm_ref pr, xr;

	/* another process's copy word in the box's ext: ignored */
	((odsm_box *)odsm_ptr(pg))[0] = (odsm_box){ xg, 0x1234ULL << 48 | 0x40 };
	ASSERT_EQ(0, odsm_borrow(&pb, &pr, &pp));
	f = pp;
	ASSERT_EQ(0, odsm_borrow_field(&f[0], &xr, &p));
	EXPECT_TRUE(all(p, SZ, 19));
	EXPECT_EQ(xg, xr.g);
	EXPECT_EQ(0, odsm_return(&xr));
	EXPECT_EQ(0, odsm_return(&pr));
	EXPECT_EQ(2UL, fk_snap().misses);
}

/* A new object where it is to live, filled there; boxes stored by address. */
/* odsm_box_new places as DRust does: here, else the peer with most room */
TEST_F(lib, box_new_placement)
{
	odsm_box b;

	ASSERT_EQ(0, odsm_box_new(&b, SZ, ODSM_ALLOC_ZERO));
	EXPECT_EQ(ODSM_ALLOC_ZERO | ODSM_ALLOC_ANYWHERE, fk.last_alloc_flags);
	ASSERT_EQ(0, odsm_box_drop(&b));
	ASSERT_EQ(0, odsm_box_new(&b, SZ, ODSM_BOX_HERE));
	EXPECT_EQ(0U, fk.last_alloc_flags);
	ASSERT_EQ(0, odsm_box_drop(&b));
	ASSERT_EQ(0, odsm_box_new(&b, SZ, ODSM_ALLOC_ANYWHERE));
	EXPECT_EQ(ODSM_ALLOC_ANYWHERE, fk.last_alloc_flags);
	ASSERT_EQ(0, odsm_box_drop(&b));
	EXPECT_EQ(-EINVAL, odsm_box_new(&b, SZ, ODSM_BOX_HERE |
					ODSM_ALLOC_ANYWHERE));
	EXPECT_EQ(-EINVAL, odsm_box_new(&b, SZ, ODSM_ALLOC_ON_NODE));
	EXPECT_EQ(-EINVAL, odsm_box_new(&b, SZ, 1U << 30));
}

TEST_F(lib, box_new_on_and_store_at)
{
	unsigned char init[SZ];
	uint64_t dir = fk_new_obj(0, 64, 0), at = odsm_addr_of(dir);
	odsm_box b, c;

	memset(init, 20, sizeof(init));
	ASSERT_EQ(0, odsm_box_new_on(&b, 1, SZ, 0, init));
	EXPECT_FALSE(odsm_is_local(b.g));
	EXPECT_TRUE(all(odsm_ptr(b.g), SZ, 20));
	EXPECT_EQ(-EINVAL, odsm_box_new_on(&c, 1, SZ, ODSM_ALLOC_ANYWHERE, NULL));
	memset(odsm_ptr(at), 0, 64);
	ASSERT_EQ(0, odsm_box_store_at(at, &b));
	EXPECT_EQ(0ULL, b.g);
	EXPECT_FALSE(odsm_is_local(((odsm_box *)odsm_ptr(at))->g));
	ASSERT_EQ(0, odsm_box_new_on(&c, 0, SZ, ODSM_ALLOC_ZERO, NULL));
	EXPECT_TRUE(odsm_is_local(c.g));
	EXPECT_EQ(-EEXIST, odsm_box_store_at(at, &c));	/* would leak */
	EXPECT_NE(0ULL, c.g);
	EXPECT_EQ(-EINVAL, odsm_box_store_at(at + 8, &c));
}

TEST_F(lib, share_ends_the_epoch)
{
	odsm_box b = { fk_new_obj(0, SZ, 0), 0 };
	uint64_t g;
	void *w;

	ASSERT_EQ(0, odsm_box_write(&b, &w));
	ASSERT_EQ(ODSM_EXT_U, b.ext);
	g = odsm_box_share(&b);
	EXPECT_EQ(b.g, g);
	EXPECT_EQ(0ULL, b.ext);
	ASSERT_EQ(0, odsm_box_write(&b, &w));
	EXPECT_EQ(odsm_color_of(g) + 1, odsm_color_of(b.g));
}

TEST_F(lib, transfer_returns_the_sender_copy)
{
	odsm_box b = { fk_new_obj(1, SZ, 14), 0 }, d;
	const void *p;
	uint64_t g = b.g;

	ASSERT_EQ(0, odsm_box_read(&b, &p));
	ASSERT_EQ(1U, fk_refs(g));
	odsm_box_transfer(&d, &b);
	EXPECT_EQ(1UL, fk_snap().returns);
	EXPECT_EQ(0U, fk_refs(g));
	EXPECT_EQ(g, d.g);
	EXPECT_EQ(0ULL, d.ext);
	EXPECT_EQ(0ULL, b.g);
	EXPECT_EQ(0ULL, b.ext);
	/* the receiver reads through a reference of its own */
	ASSERT_EQ(0, odsm_box_read(&d, &p));
	EXPECT_EQ(1U, fk_refs(g));
	EXPECT_EQ(1UL, fk_snap().hits);
}

TEST_F(lib, drop_of_a_remote_object_frees_it_at_home)
{
	odsm_box b = { fk_new_obj(1, SZ, 15), 0 };
	uint64_t g = b.g;
	const void *p;
	struct fk_stats s;

	ASSERT_EQ(0, odsm_box_read(&b, &p));
	EXPECT_EQ(0, odsm_box_drop(&b));
	s = fk_snap();
	EXPECT_EQ(1UL, s.returns);		/* the copy first */
	EXPECT_EQ(1UL, s.remote_frees);		/* FREE of the remote address */
	EXPECT_EQ(NULL, fk_find(g));
	EXPECT_EQ(0ULL, b.g);
	EXPECT_EQ(0ULL, b.ext);
}

TEST_F(lib, failed_borrows_give_no_pointer)
{
	odsm_box b = { fk_new_obj(1, SZ, 16), 0 };
	const void *p = &p;
	odsm_ref r;

	fk.fail_borrow = EHOSTDOWN;
	EXPECT_EQ(-EHOSTDOWN, odsm_borrow(&b, &r, &p));
	EXPECT_EQ(NULL, p);
	EXPECT_EQ(0ULL, r.ext);
	EXPECT_EQ(0, odsm_return(&r));		/* nothing to return */
	EXPECT_EQ(0UL, fk_snap().returns);
	ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
	EXPECT_TRUE(all(p, SZ, 16));
	EXPECT_EQ(0, odsm_return(&r));
}

TEST_HARNESS_MAIN
