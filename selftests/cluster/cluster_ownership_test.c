// SPDX-License-Identifier: GPL-2.0
/*
 * Owner boxes inside objects: the rule of uapi/linux/odsm.h ("Owner boxes
 * inside objects") on a real cluster, and the lost update it prevents.
 *
 *   box_in_copied_object   node 0 builds R -> P -> X (R a root read raw,
 *                          P an object holding X's owner box, X = 1);
 *                          the reader (node 1) caches P and X; the
 *                          writer (the last node) is refused the old way
 *                          (odsm_borrow_mut_at on the box inside P:
 *                          -EBUSY, nothing moved), then takes the right
 *                          one (P mutably through R, X through P's field)
 *                          and writes 2.  Every node then reads 2 through
 *                          R; the reader's next borrow of P misses, and
 *                          its mutable borrow of P finds X = 2 (P's
 *                          current version, never its stale copy of the
 *                          old one) and writes 3, which every node
 *                          reads.  Node 0 frees it all: no node has an
 *                          object more than before, nothing was freed
 *                          twice (bad_frees, move_free_errors), and a
 *                          node with no copy is told -ESTALE for P's old
 *                          address.
 *   drop_copies            odsm_drop_copies() leaves no idle copy
 *                          (copies_in_use 0) and objects_in_use never
 *                          counts copies; a box inside a copy is not an
 *                          owner anyone may change by address (-EINVAL)
 *   store_at_once          every node stores an owner into one empty box
 *                          at once: exactly one succeeds, the others get
 *                          -EEXIST and keep their objects
 *
 * Words of node 0's directory: 496 .. 503.  Barriers: ids 50 .. 61 in node
 * 1's directory (node 0's are taken by the other programs).
 */
#include "odsm_cluster.h"

#define SECS		120
#define W_OW		496	/* R's address */
#define B_HOST		1
#define B_OW		50	/* .. 59 */

struct xobj {			/* X: the counter */
	uint64_t val;
	uint64_t pad;
};

struct pobj {			/* P: a name and X's owner box */
	uint64_t name;
	uint64_t pad;
	odsm_box x;		/* at offset 16 */
	uint64_t more[4];
};

#define P_X		16

static int step(unsigned int id)
{
	return c_step(B_HOST, B_OW + id, SECS);
}

/* X's value, read through R -> P -> X with shared borrows; P's colored
 * address into *pg.
 */
static int read_val(uint64_t r_at, uint64_t *val, uint64_t *pg)
{
	const struct pobj *p;
	const struct xobj *x;
	odsm_box pb;
	odsm_ref pr, xr;
	int ret;

	ret = odsm_read(r_at, &pb, sizeof(pb));
	if (ret)
		return ret;
	pb.ext = 0;		/* another process's word: not ours */
	*pg = pb.g;
	ret = odsm_borrow(&pb, &pr, (const void **)&p);
	if (ret)
		return ret;
	ret = odsm_borrow_field(&p->x, &xr, (const void **)&x);
	if (!ret) {
		*val = x->val;
		ret = odsm_return(&xr);
	}
	odsm_return(&pr);
	return ret;
}

/* P mutably through R, X through P's field: X = val; what it was into
 * *prev.
 */
static int write_val(uint64_t r_at, uint64_t val, uint64_t *prev)
{
	struct xobj *x;
	odsm_mut pm, xm;
	void *pp;
	int ret;

	ret = odsm_borrow_mut_at(r_at, &pm, &pp);
	if (ret)
		return ret;
	ret = odsm_borrow_mut_field(&pm, P_X, &xm, (void **)&x);
	if (!ret) {
		*prev = x->val;
		x->val = val;
		ret = odsm_return_mut(&xm);
	}
	if (odsm_return_mut(&pm) && !ret)
		ret = -EIO;
	return ret;
}

/* Poll this node's gauge name until it is want (async frees): 0 or -1. */
static int settle(const char *name, uint64_t want)
{
	uint64_t end = c_now_ms() + 20000;

	while (c_stat(name) != want) {
		if (c_now_ms() > end)
			return -1;
		c_sleep_ms(50);
	}
	return 0;
}

TEST(box_in_copied_object)
{
	uint64_t objs0, bad0, mfe0, refused0, misses, val = 0, pg = 0;
	uint64_t old_pg = 0, r_at = 0, rcg;
	unsigned int reader = 1, writer;
	struct xobj xv = { 1, 0 };
	odsm_box xb, pb, *rbox;
	struct pobj *p;
	odsm_mut m;
	void *w;
	int ret;

	C_BEGIN();
	writer = C.nodes - 1;	/* the reader itself on two nodes */
	objs0 = c_stat("objects_in_use");
	bad0 = c_stat("bad_frees");
	mfe0 = c_stat("move_free_errors");
	refused0 = c_stat("owner_refused");
	if (C.self == 0) {
		/* built where it lives, stored by address: nothing raw */
		ASSERT_EQ(0, odsm_box_new_on(&xb, 0, sizeof(xv), 0, &xv));
		ASSERT_EQ(0, odsm_box_new_on(&pb, 0, sizeof(struct pobj),
					     ODSM_ALLOC_ZERO, NULL));
		ASSERT_EQ(0, odsm_box_store_at(odsm_addr_of(pb.g) + P_X, &xb));
		EXPECT_EQ(0ULL, xb.g);
		ASSERT_EQ(0, odsm_alloc(sizeof(odsm_box), 16, ODSM_ALLOC_ZERO,
					&rcg));
		r_at = odsm_addr_of(rcg);
		ASSERT_EQ(0, odsm_box_store_at(r_at, &pb));
		/* a box that owns an object is not overwritten */
		ASSERT_EQ(0, odsm_box_new(&xb, 16, 0));
		EXPECT_EQ(-EEXIST, odsm_box_store_at(r_at, &xb));
		EXPECT_EQ(0, odsm_box_drop(&xb));
		ASSERT_EQ(0, c_put(0, W_OW, r_at));
	}
	ASSERT_EQ(0, step(0));
	ASSERT_EQ(0, c_get(0, W_OW, &r_at));

	/* the reader caches P and X */
	if (C.self == reader) {
		ASSERT_EQ(0, read_val(r_at, &val, &old_pg));
		EXPECT_EQ(1ULL, val);
	}
	ASSERT_EQ(0, step(1));

	if (C.self == writer) {
		ASSERT_EQ(0, odsm_read(r_at, &pb, sizeof(pb)));
		old_pg = pb.g;
		/* the old way: X's box changed behind the reader's copy of P */
		misses = c_stat("mut_moves");
		ret = odsm_borrow_mut_at(odsm_addr_of(pb.g) + P_X, &m, &w);
		EXPECT_EQ(-EBUSY, ret) {
			TH_LOG("borrow_mut_at on a box inside a copied object: %s",
			       odsm_strerror(ret));
		}
		EXPECT_EQ(NULL, w);
		EXPECT_EQ(misses, c_stat("mut_moves"));	/* nothing moved */
		/* the rule: &mut P, then &mut P.x */
		ret = write_val(r_at, 2, &val);
		ASSERT_EQ(0, ret) {
			TH_LOG("writing through P: %s", odsm_strerror(ret));
		}
		EXPECT_EQ(1ULL, val);
	}
	ASSERT_EQ(0, step(2));
	if (C.self == 0 && writer != 0)	/* the home refused it, counted */
		EXPECT_EQ(refused0 + 1, c_stat("owner_refused"));

	/* everybody reads 2; the reader's old copy of P never matches */
	misses = c_stat("borrow_misses");
	ASSERT_EQ(0, read_val(r_at, &val, &pg));
	EXPECT_EQ(2ULL, val) {
		TH_LOG("node %u read X = %llu through R (P at color %u, was %u)",
		       C.self, (unsigned long long)val, odsm_color_of(pg),
		       odsm_color_of(old_pg));
	}
	if (C.self == reader && C.self != writer) {
		EXPECT_NE(old_pg, pg);
		EXPECT_LE(misses + 1, c_stat("borrow_misses"));
	}
	ASSERT_EQ(0, step(3));

	/*
	 * The reader takes P mutably: P's current version (its idle copy of
	 * that one may become the object), never its stale copy of the old
	 * one, whose box still names X's freed original.
	 */
	if (C.self == reader) {
		ASSERT_EQ(0, write_val(r_at, 3, &val));
		EXPECT_EQ(2ULL, val);
	}
	ASSERT_EQ(0, step(4));
	ASSERT_EQ(0, read_val(r_at, &val, &pg));
	EXPECT_EQ(3ULL, val);

	/* a node that holds no copy asks P's old home: gone */
	if (C.self == writer && writer != 0) {
		const void *q;
		odsm_ref r;
		odsm_box ob = { old_pg, 0 };

		ASSERT_EQ(0, odsm_drop_copies(NULL, NULL));
		EXPECT_EQ(-ESTALE, odsm_borrow(&ob, &r, &q));
	}
	ASSERT_EQ(0, step(5));

	/* node 0 frees it all: X through P's field, P, then R */
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_borrow_mut_at(r_at, &m, (void **)&p));
		EXPECT_EQ(0, odsm_box_drop(&p->x));
		EXPECT_EQ(0, odsm_return_mut(&m));
		rbox = odsm_ptr(r_at);
		EXPECT_EQ(0, odsm_box_drop(rbox));
		EXPECT_EQ(0, odsm_free(rcg));
	}
	ASSERT_EQ(0, step(6));
	/* the moved originals' frees are asynchronous */
	EXPECT_EQ(0, settle("objects_in_use", objs0)) {
		TH_LOG("node %u: %llu objects in use, %llu before", C.self,
		       (unsigned long long)c_stat("objects_in_use"),
		       (unsigned long long)objs0);
	}
	EXPECT_EQ(bad0, c_stat("bad_frees"));
	EXPECT_EQ(mfe0, c_stat("move_free_errors"));
	ASSERT_EQ(0, step(7));
}

TEST(drop_copies)
{
	uint64_t dropped = 0, kept = 0, objs, g;
	const void *q;
	odsm_box b;
	odsm_ref r;

	C_BEGIN();
	objs = c_stat("objects_in_use");
	/* one copy on every node but 0, of an object of node 0 */
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_box_new(&b, 300, ODSM_ALLOC_ZERO));
		ASSERT_EQ(0, c_put(0, W_OW + 1, odsm_box_share(&b)));
		objs++;
	}
	ASSERT_EQ(0, step(8));
	if (C.self != 0) {
		b.ext = 0;
		ASSERT_EQ(0, c_get(0, W_OW + 1, &b.g));
		ASSERT_EQ(0, odsm_borrow(&b, &r, &q));
		EXPECT_LE(1ULL, c_stat("copies_in_use"));
		/* the copy's bytes are the cache's, not an owner's */
		EXPECT_EQ(-EINVAL, odsm__read_owner((uintptr_t)q, &g));
		EXPECT_EQ(objs, c_stat("objects_in_use"));	/* not a copy */
		ASSERT_EQ(0, odsm_drop_copies(&dropped, &kept));
		EXPECT_LE(1ULL, kept);			/* ours is referenced */
		EXPECT_EQ(0, odsm_return(&r));
		ASSERT_EQ(0, odsm_drop_copies(&dropped, &kept));
		EXPECT_LE(1ULL, dropped);
		EXPECT_EQ(0ULL, kept);
		EXPECT_EQ(0ULL, c_stat("copies_in_use"));
	}
	ASSERT_EQ(0, step(9));
	if (C.self == 0)
		EXPECT_EQ(0, odsm_box_drop(&b));
}

TEST(store_at_once)
{
	uint64_t at = 0, won = 0, cg = 0;
	odsm_box mine, got;
	int ret;

	C_BEGIN();
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_alloc(sizeof(odsm_box), 16, ODSM_ALLOC_ZERO,
					&cg));
		ASSERT_EQ(0, c_put(0, W_OW + 2, odsm_addr_of(cg)));
		ASSERT_EQ(0, c_put(0, W_OW + 3, 0));
	}
	ASSERT_EQ(0, step(10));
	ASSERT_EQ(0, c_get(0, W_OW + 2, &at));
	ASSERT_EQ(0, odsm_box_new(&mine, 64, ODSM_ALLOC_ZERO));
	ret = odsm_box_store_at(at, &mine);
	if (ret == 0) {
		EXPECT_EQ(0ULL, mine.g);
		ASSERT_EQ(0, odsm_fetch_add(c_word(0, W_OW + 3), 1, NULL));
	} else {
		EXPECT_EQ(-EEXIST, ret);
		EXPECT_NE(0ULL, mine.g);	/* still ours */
		EXPECT_EQ(0, odsm_box_drop(&mine));
	}
	ASSERT_EQ(0, step(11));
	ASSERT_EQ(0, c_get(0, W_OW + 3, &won));
	EXPECT_EQ(1ULL, won);
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_read(at, &got, sizeof(got)));
		EXPECT_NE(0ULL, got.g);
		got.ext = 0;
		EXPECT_EQ(0, odsm_box_drop(&got));
		EXPECT_EQ(0, odsm_free(cg));
	}
}

TEST_HARNESS_MAIN
