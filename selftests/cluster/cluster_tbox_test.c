// SPDX-License-Identifier: GPL-2.0
/*
 * Tied allocation (userlib/odsm_tbox.h, DRust's TBox), run on every node
 * at once.  The nodes meet through libodsm (odsm_app_join(), one app
 * name per test, and names prefixed "tbox-"), never the rig's words:
 *
 *   - group_fetch_is_one: node 0 builds a group whose parent names 8
 *     tied children, and the same data as 9 separate objects; every
 *     other node, with its cache emptied, reads parent and children of
 *     the group with one fetch (borrow_misses + 1, bytes_fetched + the
 *     group's size, no remote read) and the separate ones with nine;
 *   - group_moves_whole: node 0 publishes a group's box; the last node
 *     borrows it mutably (it moves there: mut_moves + 1, the original
 *     freed at node 0, -ESTALE), finds every child with its bytes and
 *     changes one; every node then reads the group where it is now;
 *   - group_moves_with_owner: the same through a plain owner box handed
 *     over by address (odsm_tgroup_borrow_mut());
 *   - list_of_tied_nodes: node 0 builds a list whose nodes are groups,
 *     each with its payload tied to it; every node walks it with one
 *     fetch per list node (payloads come with their nodes);
 *   - bad_input: NULL and empty handles, a child of another group, an
 *     offset out of range, a resized child, a full arena, a group too
 *     big, an object that is not a group, a dropped group's box, and a
 *     freed group from another node (its home: -ESTALE) all get their
 *     errno; odsm_tgroup_grow() keeps every child's name valid.
 */
#include "odsm_cluster.h"

#define SECS		60
#define KIDS		8
#define KID_SIZE	80
#define PARENT_SIZE	224
/* 8 children of 80 bytes with their headers, 32 + 224 + 768: 1 KiB */
#define ARENA_SIZE	(KIDS * (ODSM_TBOX_HDR + KID_SIZE))
#define GROUP_SIZE	1024U
#define LIST_LEN	6
#define PAYLOAD		200

FIXTURE(cl)
{
	int unused;
};

FIXTURE_SETUP(cl)
{
}

FIXTURE_TEARDOWN(cl)
{
}

/* A parent that names its tied children. */
struct tparent {
	uint64_t magic;
	uint64_t nkids;
	odsm_tbox kid[KIDS];
};

/* The same data as separate objects: a parent of boxes. */
struct sparent {
	uint64_t magic;
	uint64_t nkids;
	odsm_box kid[KIDS];
};

_Static_assert(sizeof(struct tparent) <= PARENT_SIZE, "parent too big");

/* A list node: a group whose parent is this, its payload tied to it. */
struct lnode {
	odsm_box next;		/* the next list node's group, or empty */
	odsm_tbox payload;
	uint64_t key;
};

#define TBOX_BEGIN(app, name) do { \
	int __j; \
	C_BEGIN(); \
	__j = odsm_app_join(app, name, 0, SECS * 1000); \
	ASSERT_EQ(0, __j) TH_LOG("odsm_app_join: %s", odsm_strerror(__j)); \
	ASSERT_EQ(C.self, (app)->self); \
} while (0)

#define BARRIER(app) \
	ASSERT_EQ(0, odsm_barrier_wait((app)->barrier, SECS * 1000))

/* Node 0: a group of KIDS children, child i filled with pattern i. */
static int make_group(odsm_box *grp, unsigned int node)
{
	struct tparent *tp;
	odsm_mut m;
	void *p;
	int ret, i;

	ret = odsm_tgroup_new_on(grp, node, PARENT_SIZE, ARENA_SIZE);
	if (ret)
		return ret;
	ret = odsm_tgroup_borrow_mut(grp, &m, (void **)&tp);
	if (ret)
		return ret;
	tp->magic = 0x7b0c;
	tp->nkids = KIDS;
	for (i = 0; i < KIDS && !ret; i++) {
		ret = odsm_tbox_new(&m, KID_SIZE, &tp->kid[i], &p);
		if (!ret)
			c_fill(p, KID_SIZE, 0, i);
	}
	odsm_return_mut(&m);
	return ret;
}

/* The children of the group a shared borrow holds: every byte right. */
static int check_kids(odsm_ref *r, const struct tparent *tp)
{
	const void *p;
	int ret, i;

	if (tp->magic != 0x7b0c || tp->nkids != KIDS)
		return -EBADMSG;
	for (i = 0; i < KIDS; i++) {
		ret = odsm_tbox_get(r, &tp->kid[i], &p);
		if (ret)
			return ret;
		if (c_check(p, KID_SIZE, 0, i) != -1)
			return -EBADMSG;
	}
	return 0;
}

TEST_F_TIMEOUT(cl, group_fetch_is_one, 120)
{
	uint64_t misses, fetched, reads, g, size;
	const struct tparent *tp;
	const struct sparent *sp;
	struct odsm_name nm;
	odsm_box grp = { 0 }, sep = { 0 }, f;
	struct odsm_app app;
	odsm_ref r, kr;
	uint32_t gsize;
	const void *p;
	int ret, i;

	TBOX_BEGIN(&app, "tbox-fetch");
	if (C.self == 0) {
		struct sparent *w;

		ASSERT_EQ(0, make_group(&grp, 0));
		ASSERT_EQ(0, odsm_box_new(&sep, sizeof(*w), ODSM_ALLOC_ZERO));
		ASSERT_EQ(0, odsm_box_write(&sep, (void **)&w));
		w->magic = 0x5e9;
		w->nkids = KIDS;
		for (i = 0; i < KIDS; i++) {
			uint8_t buf[KID_SIZE];

			c_fill(buf, KID_SIZE, 0, i);
			ASSERT_EQ(0, odsm_box_new_on(&w->kid[i], 0, KID_SIZE,
						     0, buf));
		}
		ASSERT_EQ(0, odsm_name_publish("tbox-grp", ODSM_NAME_ADDR,
					       odsm_box_share(&grp)));
		ASSERT_EQ(0, odsm_name_publish("tbox-sep", ODSM_NAME_ADDR,
					       odsm_box_share(&sep)));
	}
	BARRIER(&app);
	if (C.self != 0) {
		/* the group: one fetch brings the parent and all 8 children */
		ASSERT_EQ(0, odsm_name_wait("tbox-grp", SECS * 1000, &nm));
		f.g = nm.value;
		f.ext = 0;
		ASSERT_EQ(0, odsm_drop_copies(NULL, NULL));
		misses = c_stat("borrow_misses");
		fetched = c_stat("bytes_fetched");
		reads = c_stat("remote_reads");
		ret = odsm_tgroup_borrow_field(&f, &r, (const void **)&tp);
		ASSERT_EQ(0, ret) TH_LOG("borrow: %s", odsm_strerror(ret));
		EXPECT_EQ(0, check_kids(&r, tp));
		ASSERT_EQ(0, odsm_tgroup_stat(&r, NULL, NULL, &gsize));
		EXPECT_EQ(GROUP_SIZE, gsize);
		EXPECT_EQ(0, odsm_return(&r));
		EXPECT_EQ(misses + 1, c_stat("borrow_misses"));
		EXPECT_EQ(fetched + gsize, c_stat("bytes_fetched"));
		EXPECT_EQ(reads, c_stat("remote_reads"));

		/* the same as 9 objects: 9 fetches */
		ASSERT_EQ(0, odsm_name_wait("tbox-sep", SECS * 1000, &nm));
		f.g = nm.value;
		ASSERT_EQ(0, odsm_drop_copies(NULL, NULL));
		misses = c_stat("borrow_misses");
		fetched = c_stat("bytes_fetched");
		ASSERT_EQ(0, odsm_borrow_field(&f, &r, (const void **)&sp));
		EXPECT_EQ(0x5e9ULL, sp->magic);
		for (i = 0; i < KIDS; i++) {
			ASSERT_EQ(0, odsm_borrow_field(&sp->kid[i], &kr, &p));
			EXPECT_EQ(-1, c_check(p, KID_SIZE, 0, i));
			EXPECT_EQ(0, odsm_return(&kr));
		}
		EXPECT_EQ(0, odsm_return(&r));
		EXPECT_EQ(misses + 1 + KIDS, c_stat("borrow_misses"));
		size = c_stat("bytes_fetched") - fetched;
		TH_LOG("group: 1 fetch of %u bytes; separate: %d fetches of %" PRIu64 " bytes",
		       gsize, 1 + KIDS, size);
	}
	BARRIER(&app);
	if (C.self == 0) {
		/* the owner reads its own group in place: no fetch */
		misses = c_stat("borrow_misses");
		ASSERT_EQ(0, odsm_tgroup_borrow(&grp, &r, (const void **)&tp));
		EXPECT_EQ(0, check_kids(&r, tp));
		EXPECT_EQ(0, odsm_return(&r));
		EXPECT_EQ(misses, c_stat("borrow_misses"));
		g = grp.g;
		EXPECT_EQ(0, odsm_tgroup_drop(&grp));
		EXPECT_EQ(0ULL, grp.g);
		EXPECT_TRUE(g != 0);
	}
}

TEST_F_TIMEOUT(cl, group_moves_whole, 120)
{
	unsigned int last;
	const struct tparent *tp;
	struct tparent *wp;
	struct odsm_obj_info oi;
	struct odsm_name nm;
	struct odsm_app app;
	odsm_box grp = { 0 }, f;
	uint64_t old_g = 0, moves;
	odsm_mut m;
	odsm_ref r;
	const void *p;
	void *w;
	int ret, i;

	TBOX_BEGIN(&app, "tbox-move");
	last = C.nodes - 1;
	if (C.self == 0) {
		ASSERT_EQ(0, make_group(&grp, 0));
		old_g = odsm_box_share(&grp);
		ASSERT_EQ(0, odsm_name_publish_box("tbox-mv", &grp));
		EXPECT_EQ(0ULL, grp.g);
	}
	BARRIER(&app);
	ASSERT_EQ(0, odsm_name_wait("tbox-mv", SECS * 1000, &nm));
	if (C.self == last) {
		moves = c_stat("mut_moves");
		ret = odsm_tgroup_borrow_mut_at(nm.value, &m, (void **)&wp);
		ASSERT_EQ(0, ret) TH_LOG("borrow_mut_at: %s", odsm_strerror(ret));
		/* here now, every child with it, found with no lookup */
		EXPECT_TRUE(c_in_part(m.g, C.self));
		EXPECT_EQ(moves + 1, c_stat("mut_moves"));
		EXPECT_EQ(0x7b0cULL, wp->magic);
		for (i = 0; i < KIDS; i++) {
			ASSERT_EQ(0, odsm_tbox_get_mut(&m, &wp->kid[i], &w));
			EXPECT_EQ(-1, c_check(w, KID_SIZE, 0, i));
			EXPECT_TRUE(c_in_part((uint64_t)(uintptr_t)w, C.self));
		}
		/* a write to a child is a write to the group */
		ASSERT_EQ(0, odsm_tbox_get_mut(&m, &wp->kid[3], &w));
		memset(w, 0xa5, KID_SIZE);
		ret = odsm_return_mut(&m);
		EXPECT_EQ(0, ret) TH_LOG("return_mut: %s", odsm_strerror(ret));
	}
	BARRIER(&app);
	if (C.self == 0) {
		/* the old home's object is gone (freed by the write-back;
		 * a second at most, however late the free runs)
		 */
		for (i = 0; i < 20 && odsm_obj_info(old_g, &oi) == 0; i++)
			c_sleep_ms(50);
		EXPECT_EQ(-ESTALE, odsm_obj_info(old_g, &oi));
	}
	/* every node reads the group where it is now */
	ASSERT_EQ(0, odsm_drop_copies(NULL, NULL));
	ASSERT_EQ(0, odsm_read(nm.value, &f, sizeof(f)));
	f.ext = 0;
	EXPECT_TRUE(c_in_part(f.g, last));
	ret = odsm_tgroup_borrow_field(&f, &r, (const void **)&tp);
	ASSERT_EQ(0, ret) TH_LOG("borrow: %s", odsm_strerror(ret));
	for (i = 0; i < KIDS; i++) {
		ASSERT_EQ(0, odsm_tbox_get(&r, &tp->kid[i], &p));
		if (i == 3) {
			EXPECT_EQ(0xa5, ((const uint8_t *)p)[KID_SIZE - 1]);
		} else {
			EXPECT_EQ(-1, c_check(p, KID_SIZE, 0, i));
		}
	}
	EXPECT_EQ(0, odsm_return(&r));
	BARRIER(&app);
}

/*
 * The same move through a plain owner box: node 0 hands the group's
 * address to the last node (ownership passes by hand, as a channel
 * passes it), whose odsm_tgroup_borrow_mut() moves it; the move frees
 * the original at node 0.
 */
TEST_F_TIMEOUT(cl, group_moves_with_owner, 120)
{
	unsigned int last;
	const struct tparent *tp;
	struct tparent *wp;
	struct odsm_obj_info oi;
	struct odsm_name nm;
	struct odsm_app app;
	odsm_box grp = { 0 }, f;
	uint64_t old_g = 0, moves;
	odsm_mut m;
	odsm_ref r;
	const void *p;
	void *w;
	int ret, i;

	TBOX_BEGIN(&app, "tbox-move2");
	last = C.nodes - 1;
	if (C.self == 0) {
		ASSERT_EQ(0, make_group(&grp, 0));
		old_g = odsm_box_share(&grp);
		ASSERT_EQ(0, odsm_name_publish("tbox-mv2", ODSM_NAME_ADDR,
					       old_g));
		grp.g = 0;	/* the last node owns it now */
	}
	BARRIER(&app);
	if (C.self == last) {
		ASSERT_EQ(0, odsm_name_wait("tbox-mv2", SECS * 1000, &nm));
		grp.g = nm.value;
		grp.ext = 0;
		moves = c_stat("mut_moves");
		ret = odsm_tgroup_borrow_mut(&grp, &m, (void **)&wp);
		ASSERT_EQ(0, ret) TH_LOG("borrow_mut: %s", odsm_strerror(ret));
		EXPECT_TRUE(c_in_part(m.g, C.self));
		EXPECT_EQ(moves + 1, c_stat("mut_moves"));
		for (i = 0; i < KIDS; i++) {
			ASSERT_EQ(0, odsm_tbox_get_mut(&m, &wp->kid[i], &w));
			EXPECT_EQ(-1, c_check(w, KID_SIZE, 0, i));
		}
		ASSERT_EQ(0, odsm_tbox_get_mut(&m, &wp->kid[5], &w));
		memset(w, 0x5a, KID_SIZE);
		ASSERT_EQ(0, odsm_return_mut(&m));
		EXPECT_TRUE(c_in_part(grp.g, C.self));
		ASSERT_EQ(0, odsm_name_publish("tbox-moved2", ODSM_NAME_ADDR,
					       odsm_box_share(&grp)));
	}
	BARRIER(&app);
	if (C.self == 0) {
		for (i = 0; i < 20 && odsm_obj_info(old_g, &oi) == 0; i++)
			c_sleep_ms(50);
		EXPECT_EQ(-ESTALE, odsm_obj_info(old_g, &oi));
	}
	ASSERT_EQ(0, odsm_name_wait("tbox-moved2", SECS * 1000, &nm));
	ASSERT_EQ(0, odsm_drop_copies(NULL, NULL));
	f.g = nm.value;
	f.ext = 0;
	ret = odsm_tgroup_borrow_field(&f, &r, (const void **)&tp);
	ASSERT_EQ(0, ret) TH_LOG("borrow: %s", odsm_strerror(ret));
	for (i = 0; i < KIDS; i++) {
		ASSERT_EQ(0, odsm_tbox_get(&r, &tp->kid[i], &p));
		if (i == 5) {
			EXPECT_EQ(0x5a, ((const uint8_t *)p)[0]);
		} else {
			EXPECT_EQ(-1, c_check(p, KID_SIZE, 0, i));
		}
	}
	EXPECT_EQ(0, odsm_return(&r));
	BARRIER(&app);
	if (C.self == last)
		EXPECT_EQ(0, odsm_tgroup_drop(&grp));
}

/* Node 0: a list of n tied nodes, node i's payload holding pattern i. */
static int make_list(odsm_box *head, unsigned int n)
{
	odsm_box next = { 0 }, g;
	struct lnode *ln;
	unsigned int i;
	odsm_mut m;
	void *p;
	int ret;

	for (i = n; i-- > 0;) {
		ret = odsm_tgroup_new(&g, sizeof(*ln), ODSM_TBOX_HDR + PAYLOAD);
		if (ret)
			return ret;
		ret = odsm_tgroup_borrow_mut(&g, &m, (void **)&ln);
		if (ret)
			return ret;
		ln->key = 100 + i;
		ret = odsm_tbox_new(&m, PAYLOAD, &ln->payload, &p);
		if (!ret)
			c_fill(p, PAYLOAD, 1, i);
		/* the next node's owner lives in this one */
		if (next.g)
			odsm_box_transfer(&ln->next, &next);
		odsm_return_mut(&m);
		if (ret)
			return ret;
		next = g;
	}
	*head = next;
	return 0;
}

/* Walk the list from its head's group address: the keys and payloads. */
static int walk_list(uint64_t head, unsigned int *count)
{
	const struct lnode *ln;
	odsm_box f = { head, 0 };
	odsm_ref r[LIST_LEN + 1];
	unsigned int i = 0, k;
	const void *p;
	int ret = 0;

	while (f.g && i < LIST_LEN + 1) {
		ret = odsm_tgroup_borrow_field(&f, &r[i], (const void **)&ln);
		if (ret)
			break;
		i++;
		ret = odsm_tbox_get(&r[i - 1], &ln->payload, &p);
		if (!ret && (ln->key != 100 + i - 1 ||
			     c_check(p, PAYLOAD, 1, i - 1) != -1))
			ret = -EBADMSG;
		if (ret)
			break;
		/* the next box is read out of this node's bytes */
		f = ln->next;
	}
	for (k = 0; k < i; k++)
		odsm_return(&r[k]);
	*count = i;
	return ret;
}

TEST_F_TIMEOUT(cl, list_of_tied_nodes, 120)
{
	struct odsm_name nm;
	struct odsm_app app;
	odsm_box head = { 0 };
	uint64_t misses;
	unsigned int n;
	int ret;

	TBOX_BEGIN(&app, "tbox-list");
	if (C.self == 0) {
		ASSERT_EQ(0, make_list(&head, LIST_LEN));
		ASSERT_EQ(0, odsm_name_publish("tbox-head", ODSM_NAME_ADDR,
					       odsm_box_share(&head)));
	}
	BARRIER(&app);
	ASSERT_EQ(0, odsm_name_wait("tbox-head", SECS * 1000, &nm));
	ASSERT_EQ(0, odsm_drop_copies(NULL, NULL));
	misses = c_stat("borrow_misses");
	ret = walk_list(nm.value, &n);
	EXPECT_EQ(0, ret) TH_LOG("walk: %s after %u nodes", odsm_strerror(ret), n);
	EXPECT_EQ((unsigned int)LIST_LEN, n);
	/* one fetch per list node on a reader, none at home */
	EXPECT_EQ(misses + (C.self ? LIST_LEN : 0), c_stat("borrow_misses"));
	BARRIER(&app);
}

TEST_F_TIMEOUT(cl, bad_input, 120)
{
	odsm_box a = { 0 }, b = { 0 }, plain = { 0 }, f, gone = { 0 };
	const struct tparent *tp;
	struct tparent *wp;
	struct odsm_name nm;
	struct odsm_app app;
	odsm_tbox c, kids[4];
	uint32_t n, used, size;
	odsm_mut m;
	odsm_ref r;
	const void *p;
	void *w;
	int ret, i;

	TBOX_BEGIN(&app, "tbox-bad");
	/* NULL and empty */
	EXPECT_EQ(-EINVAL, odsm_tgroup_new(NULL, 16, 16));
	EXPECT_EQ(-EINVAL, odsm_tgroup_borrow(&a, &r, &p));
	EXPECT_EQ(-EINVAL, odsm_tgroup_borrow(NULL, &r, &p));
	EXPECT_EQ(-EINVAL, odsm_tgroup_borrow_field(&a, &r, &p));
	EXPECT_EQ(-EINVAL, odsm_tgroup_borrow_mut(&a, &m, &w));
	EXPECT_EQ(-EINVAL, odsm_tgroup_drop(&a));
	EXPECT_EQ(-EINVAL, odsm_tgroup_grow(&a, 64));
	EXPECT_EQ(-EINVAL, odsm_tgroup_borrow_mut_at(7, &m, &w));
	/* too big */
	EXPECT_EQ(-E2BIG, odsm_tgroup_new(&a, 16, ODSM_TGROUP_MAX));
	EXPECT_EQ(0ULL, a.g);

	ASSERT_EQ(0, make_group(&a, C.self));
	ASSERT_EQ(0, make_group(&b, C.self));
	ASSERT_EQ(0, odsm_tgroup_borrow(&a, &r, (const void **)&tp));
	c = tp->kid[2];
	/* a child of b is not a's */
	{
		odsm_ref rb;
		const struct tparent *tb;

		ASSERT_EQ(0, odsm_tgroup_borrow(&b, &rb, (const void **)&tb));
		EXPECT_EQ(-EXDEV, odsm_tbox_get(&rb, &c, &p));
		EXPECT_EQ(NULL, p);
		EXPECT_EQ(0, odsm_tbox_get(&rb, &tb->kid[2], &p));
		EXPECT_EQ(0, odsm_return(&rb));
	}
	/* offsets that name no child */
	c.off += 16;
	EXPECT_EQ(-ERANGE, odsm_tbox_get(&r, &c, &p));
	c.off -= 8;
	EXPECT_EQ(-ERANGE, odsm_tbox_get(&r, &c, &p));
	c.off = 1u << 30;
	EXPECT_EQ(-ERANGE, odsm_tbox_get(&r, &c, &p));
	c.off = ODSM_TGROUP_HDR;	/* the parent */
	EXPECT_EQ(-ERANGE, odsm_tbox_get(&r, &c, &p));
	c = tp->kid[2];
	c.size++;
	EXPECT_EQ(-ERANGE, odsm_tbox_get(&r, &c, &p));
	c.size = 0;
	EXPECT_EQ(-EINVAL, odsm_tbox_get(&r, &c, &p));
	EXPECT_EQ(-EINVAL, odsm_tbox_get(&r, NULL, &p));
	c = tp->kid[2];
	EXPECT_EQ(0, odsm_tbox_get(&r, &c, &p));
	EXPECT_EQ(-1, c_check(p, KID_SIZE, 0, 2));
	ASSERT_EQ(0, odsm_tgroup_stat(&r, &n, &used, &size));
	EXPECT_EQ((uint32_t)KIDS, n);
	EXPECT_EQ(size, used);	/* full */
	EXPECT_EQ(0, odsm_return(&r));

	/* a full arena, then room made: every child's name stays valid */
	ASSERT_EQ(0, odsm_tgroup_borrow_mut(&a, &m, (void **)&wp));
	EXPECT_EQ(-ENOSPC, odsm_tbox_new(&m, 16, &kids[0], &w));
	EXPECT_EQ(-EINVAL, odsm_tbox_new(&m, 0, &kids[0], &w));
	EXPECT_EQ(0, odsm_return_mut(&m));
	ret = odsm_tgroup_grow(&a, ARENA_SIZE + 4 * (ODSM_TBOX_HDR + 32));
	ASSERT_EQ(0, ret) TH_LOG("grow: %s", odsm_strerror(ret));
	EXPECT_EQ(-EINVAL, odsm_tgroup_grow(&a, 64));	/* would shrink */
	ASSERT_EQ(0, odsm_tgroup_borrow_mut(&a, &m, (void **)&wp));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, odsm_tbox_new(&m, 32, &kids[i], &w));
		memset(w, i + 1, 32);
	}
	EXPECT_EQ(-ENOSPC, odsm_tbox_new(&m, 1, &c, &w));
	for (i = 0; i < KIDS; i++) {
		ASSERT_EQ(0, odsm_tbox_get_mut(&m, &wp->kid[i], &w));
		EXPECT_EQ(-1, c_check(w, KID_SIZE, 0, i));
	}
	EXPECT_EQ(wp->kid[0].gid, kids[0].gid);
	EXPECT_EQ(0, odsm_return_mut(&m));

	/* an object that is not a group */
	ASSERT_EQ(0, odsm_box_new(&plain, 256, ODSM_ALLOC_ZERO));
	EXPECT_EQ(-ENOTTY, odsm_tgroup_borrow(&plain, &r, &p));
	EXPECT_EQ(NULL, p);
	EXPECT_EQ(-ENOTTY, odsm_tgroup_borrow_mut(&plain, &m, &w));
	EXPECT_EQ(-ENOTTY, odsm_tgroup_grow(&plain, 64));
	EXPECT_EQ(0, odsm_box_drop(&plain));

	/*
	 * A freed group, here: its box is emptied.  (A stale copy of a
	 * local box is not borrowed here: the fast path reads a local
	 * address in place, and a freed object's page may be gone --
	 * SIGBUS, as for any local object; the checking mode's job.)
	 */
	EXPECT_EQ(0, odsm_tgroup_drop(&b));
	EXPECT_EQ(-EINVAL, odsm_tgroup_drop(&b));
	EXPECT_EQ(-EINVAL, odsm_tgroup_borrow(&b, &r, &p));
	EXPECT_EQ(0, odsm_tgroup_drop(&a));

	/* a freed group, from another node: its home says -ESTALE */
	if (C.self == 0) {
		ASSERT_EQ(0, make_group(&gone, 0));
		ASSERT_EQ(0, odsm_name_publish("tbox-gone", ODSM_NAME_ADDR,
					       odsm_box_share(&gone)));
	}
	BARRIER(&app);
	ASSERT_EQ(0, odsm_name_wait("tbox-gone", SECS * 1000, &nm));
	f.g = nm.value;
	f.ext = 0;
	if (C.self != 0) {
		ret = odsm_tgroup_borrow_field(&f, &r, (const void **)&tp);
		EXPECT_EQ(0, ret) TH_LOG("borrow: %s", odsm_strerror(ret));
		if (!ret) {
			EXPECT_EQ(0, check_kids(&r, tp));
			EXPECT_EQ(0, odsm_return(&r));
		}
	}
	BARRIER(&app);
	if (C.self == 0)
		EXPECT_EQ(0, odsm_tgroup_drop(&gone));
	BARRIER(&app);
	if (C.self != 0) {
		ASSERT_EQ(0, odsm_drop_copies(NULL, NULL));
		EXPECT_EQ(-ESTALE, odsm_tgroup_borrow_field(&f, &r, &p));
		EXPECT_EQ(NULL, p);
	}
	BARRIER(&app);
}

TEST_HARNESS_MAIN
