// SPDX-License-Identifier: GPL-2.0
/*
 * libodsm's side of the coherence protocol across nodes: what the library
 * itself must get right for the kernel's cache to stay coherent.
 *
 *   shared_hit_and_miss    a remote borrow misses once; a clone of it and
 *                          a later borrow of the same version hit the copy
 *                          in the process's table of hits (no kernel
 *                          call), and once the table gave its reference
 *                          back, in the kernel's cache (borrow_misses,
 *                          borrow_hits, borrow_returns)
 *   heap_box_write_bumps   an owner box that lives in the heap is read by
 *                          other nodes behind its back: each write through
 *                          it must change the color, or a reader's cached
 *                          copy of the old bytes would be served again
 *   share_ends_the_epoch   a private owner that hands its address out with
 *                          odsm_box_share(): its next write bumps, and the
 *                          reader sees the new bytes
 *   write_back_clears_u    the owner box a mutable borrow wrote back into
 *                          another node's partition carries no U bit
 *   foreign_copy_word      a box in the heap whose ext holds another
 *                          process's copy word: a second process reads
 *                          through a reference of its own (a hit), never
 *                          through the first one's
 *   owner_writes_under_fire  node 0 writes through the owner boxes of its
 *                          table in place (odsm_box_write: objects come
 *                          back, or are written where they are, one bump
 *                          per write), the other nodes through mutable
 *                          borrows of them; readers on every node borrow;
 *                          no reader sees a torn or stale version
 *
 * Words of node 0's directory: 480 .. 495.  Barriers: ids 32 .. 49 in NODE
 * 1's directory (node 0's ids are taken by the other programs; node 1's
 * are used only by cluster_down_test's 16, when node 1 hosts it).
 */
#include <sys/wait.h>
#include "under_fire.h"

#define SECS		180
#define W_BR		480
#define B_HOST		1
#define B_BR		32	/* .. 49 */
#define SZ		1500

static int step(unsigned int id)
{
	return c_step(B_HOST, B_BR + id, SECS);
}

TEST(shared_hit_and_miss)
{
	uint64_t hits, misses, returns;
	const void *p, *q;
	odsm_ref r, r2;
	odsm_box b;

	C_BEGIN();
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_box_new(&b, SZ, 0));
		c_fill(odsm_ptr(b.g), SZ, 0, 21);
		ASSERT_EQ(0, c_put(0, W_BR, odsm_box_share(&b)));
	}
	ASSERT_EQ(0, step(0));
	if (C.self == 1) {
		b.ext = 0;
		ASSERT_EQ(0, c_get(0, W_BR, &b.g));
		hits = c_stat("borrow_hits");
		misses = c_stat("borrow_misses");
		returns = c_stat("borrow_returns");
		ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
		EXPECT_EQ(misses + 1, c_stat("borrow_misses"));
		EXPECT_EQ(hits, c_stat("borrow_hits"));
		EXPECT_EQ(-1, c_check(p, SZ, 0, 21));
		/* the clone is served by this process's table of hits: no
		 * kernel call, and neither are the returns
		 */
		ASSERT_EQ(0, odsm_ref_clone(&r, &r2, &q));
		EXPECT_EQ(p, q);			/* the same copy */
		EXPECT_EQ(hits, c_stat("borrow_hits"));
		EXPECT_EQ(0, odsm_return(&r2));
		EXPECT_EQ(0, odsm_return(&r));
		EXPECT_EQ(returns, c_stat("borrow_returns"));
		/* the table kept its reference: the next borrow hits there */
		ASSERT_EQ(0, odsm_borrow(&b, &r, &q));
		EXPECT_EQ(p, q);
		EXPECT_EQ(hits, c_stat("borrow_hits"));
		EXPECT_EQ(misses + 1, c_stat("borrow_misses"));
		EXPECT_EQ(0, odsm_return(&r));
		/* given back: idle in the kernel's cache, still cached, so
		 * the next borrow of this version is a kernel hit
		 */
		EXPECT_EQ(1, odsm_hits_flush());
		EXPECT_EQ(returns + 1, c_stat("borrow_returns"));
		ASSERT_EQ(0, odsm_borrow(&b, &r, &q));
		EXPECT_EQ(p, q);
		EXPECT_EQ(hits + 1, c_stat("borrow_hits"));
		EXPECT_EQ(misses + 1, c_stat("borrow_misses"));
		EXPECT_EQ(0, odsm_return(&r));
		EXPECT_EQ(1, odsm_hits_flush());
	}
	ASSERT_EQ(0, step(1));
	if (C.self == 0)
		EXPECT_EQ(0, odsm_box_drop(&b));
}

/* Node 1 borrows the object whose box is at global address at. */
static void read_through_box(struct __test_metadata *_metadata, uint64_t at,
			     unsigned int tag, uint64_t *g)
{
	const void *p;
	odsm_box b;
	odsm_ref r;

	ASSERT_EQ(0, odsm_read(at, &b, sizeof(b)));
	b.ext = 0;
	ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
	EXPECT_EQ(-1, c_check(p, SZ, 0, tag)) {
		TH_LOG("node 1 read stale bytes through the box (color %u)",
		       odsm_color_of(b.g));
	}
	EXPECT_EQ(0, odsm_return(&r));
	*g = b.g;
}

TEST(heap_box_write_bumps)
{
	uint64_t at = 0, atc = 0, g1 = 0, g2 = 0;
	odsm_box *hb = NULL;
	void *w;

	C_BEGIN();
	if (C.self == 0) {
		/* the owner box inside an object of node 0 (a table) */
		ASSERT_EQ(0, odsm_alloc(64, 16, ODSM_ALLOC_ZERO, &atc));
		at = odsm_addr_of(atc);
		hb = odsm_ptr(at);
		ASSERT_EQ(0, odsm_box_new(hb, SZ, 0));
		ASSERT_EQ(0, odsm_box_write(hb, &w));
		c_fill(w, SZ, 0, 22);
		EXPECT_EQ(0ULL, hb->ext);	/* no U bit in the heap */
		ASSERT_EQ(0, c_put(0, W_BR + 1, at));
	}
	ASSERT_EQ(0, step(2));
	ASSERT_EQ(0, c_get(0, W_BR + 1, &at));
	if (C.self == 1)	/* a copy of version 1 stays in node 1's cache */
		read_through_box(_metadata, at, 22, &g1);
	ASSERT_EQ(0, step(3));
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_box_write(hb, &w));
		c_fill(w, SZ, 0, 23);
	}
	ASSERT_EQ(0, step(4));
	if (C.self == 1) {
		read_through_box(_metadata, at, 23, &g2);
		EXPECT_NE(g1, g2);
		EXPECT_EQ(odsm_addr_of(g1), odsm_addr_of(g2));
	}
	ASSERT_EQ(0, step(5));
	if (C.self == 0) {
		EXPECT_EQ(0, odsm_box_drop(hb));
		EXPECT_EQ(0, odsm_free(atc));
	}
}

TEST(share_ends_the_epoch)
{
	uint64_t g1 = 0, g2 = 0, misses;
	const void *p;
	odsm_box b;
	odsm_ref r;
	void *w;

	C_BEGIN();
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_box_new(&b, SZ, 0));
		ASSERT_EQ(0, odsm_box_write(&b, &w));
		c_fill(w, SZ, 0, 24);
		EXPECT_EQ(ODSM_EXT_U, b.ext);		/* a private box keeps it */
		ASSERT_EQ(0, c_put(0, W_BR + 2, odsm_box_share(&b)));
		EXPECT_EQ(0ULL, b.ext);
	}
	ASSERT_EQ(0, step(6));
	if (C.self == 1) {
		b.ext = 0;
		ASSERT_EQ(0, c_get(0, W_BR + 2, &b.g));
		g1 = b.g;
		ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
		EXPECT_EQ(-1, c_check(p, SZ, 0, 24));
		EXPECT_EQ(0, odsm_return(&r));		/* the copy stays */
	}
	ASSERT_EQ(0, step(7));
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_box_write(&b, &w));	/* a new epoch */
		c_fill(w, SZ, 0, 25);
		ASSERT_EQ(0, c_put(0, W_BR + 3, odsm_box_share(&b)));
	}
	ASSERT_EQ(0, step(8));
	if (C.self == 1) {
		b.ext = 0;
		ASSERT_EQ(0, c_get(0, W_BR + 3, &b.g));
		g2 = b.g;
		EXPECT_EQ(odsm_color_of(g1) + 1, odsm_color_of(g2));
		misses = c_stat("borrow_misses");
		ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
		EXPECT_EQ(misses + 1, c_stat("borrow_misses"));
		EXPECT_EQ(-1, c_check(p, SZ, 0, 25));
		EXPECT_EQ(0, odsm_return(&r));
	}
	ASSERT_EQ(0, step(9));
	if (C.self == 0)
		EXPECT_EQ(0, odsm_box_drop(&b));
}

TEST(write_back_clears_u)
{
	uint64_t at = 0, atc = 0, wb;
	odsm_box *hb, got;
	odsm_mut m;
	void *w;

	C_BEGIN();
	if (C.self == 0) {
		ASSERT_EQ(0, odsm_alloc(64, 16, ODSM_ALLOC_ZERO, &atc));
		at = odsm_addr_of(atc);
		hb = odsm_ptr(at);
		ASSERT_EQ(0, odsm_box_new(hb, SZ, 0));
		c_fill(odsm_ptr(hb->g), SZ, 0, 26);
		ASSERT_EQ(0, c_put(0, W_BR + 4, at));
	}
	ASSERT_EQ(0, step(10));
	ASSERT_EQ(0, c_get(0, W_BR + 4, &at));
	if (C.self == 1) {
		wb = c_stat("writebacks");
		ASSERT_EQ(0, odsm_borrow_mut_at(at, &m, &w));
		EXPECT_EQ(ODSM_EXT_U, m.ext & ODSM_EXT_U);	/* it bumped */
		EXPECT_EQ(-1, c_check(w, SZ, 0, 26));
		c_fill(w, SZ, 1, 27);
		EXPECT_EQ(0, odsm_return_mut(&m));
		EXPECT_EQ(wb + 1, c_stat("writebacks"));
		ASSERT_EQ(0, odsm_read(at, &got, sizeof(got)));
		EXPECT_TRUE(c_in_part(got.g, 1));
		EXPECT_EQ(0ULL, got.ext);
	}
	ASSERT_EQ(0, step(11));
	if (C.self == 0) {
		const void *p;

		hb = odsm_ptr(at);
		EXPECT_EQ(0ULL, hb->ext);
		ASSERT_EQ(0, odsm_box_read(hb, &p));	/* Algorithm 7 */
		EXPECT_EQ(-1, c_check(p, SZ, 1, 27));
		EXPECT_EQ(0, odsm_box_drop(hb));	/* freed on node 1 */
		EXPECT_EQ(0, odsm_free(atc));
	}
	ASSERT_EQ(0, step(12));
}

TEST(foreign_copy_word)
{
	uint64_t at = 0, word, hits;
	odsm_box *hb = NULL, mine;
	const void *p;
	int status;
	pid_t pid;

	C_BEGIN();
	if (C.self == 0) {
		odsm_box b;

		ASSERT_EQ(0, odsm_box_new(&b, SZ, 0));
		c_fill(odsm_ptr(b.g), SZ, 0, 28);
		ASSERT_EQ(0, c_put(0, W_BR + 5, odsm_box_share(&b)));
	}
	ASSERT_EQ(0, step(13));
	if (C.self == 1) {
		/* a box in node 1's partition, read through by this process */
		ASSERT_EQ(0, odsm_alloc(64, 16, ODSM_ALLOC_ZERO, &at));
		hb = odsm_ptr(at);
		ASSERT_EQ(0, c_get(0, W_BR + 5, &hb->g));
		ASSERT_EQ(0, odsm_box_read(hb, &p));
		EXPECT_EQ(-1, c_check(p, SZ, 0, 28));
		word = hb->ext;
		EXPECT_EQ(odsm_rt.tag, word >> ODSM_EXT_TAG_SHIFT);
		hits = c_stat("borrow_hits");
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			const void *q = NULL;

			/* another process: its own file, its own tag */
			odsm_fini();
			if (odsm_init())
				_exit(10);
			if (odsm__copy_of(hb->ext))
				_exit(11);	/* took the word as its own */
			if (odsm_box_read(hb, &q))
				_exit(12);
			if (c_check(q, SZ, 0, 28) != -1)
				_exit(13);
			if (hb->ext >> ODSM_EXT_TAG_SHIFT != odsm_rt.tag)
				_exit(14);
			_exit(0);	/* closing drops its reference */
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status));
		/* it borrowed for itself: a hit on this node's copy */
		EXPECT_EQ(hits + 1, c_stat("borrow_hits"));
		/* this process: the child's word is not its own either */
		EXPECT_EQ(0ULL, odsm__copy_of(hb->ext));
		ASSERT_EQ(0, odsm_box_read(hb, &p));
		EXPECT_EQ(-1, c_check(p, SZ, 0, 28));
		EXPECT_EQ(hits + 2, c_stat("borrow_hits"));
		odsm_box_transfer(&mine, hb);	/* returns our copy */
		EXPECT_EQ(0, odsm_free(at));
	}
	ASSERT_EQ(0, step(14));
	if (C.self == 0) {
		odsm_box b = { 0, 0 };

		ASSERT_EQ(0, c_get(0, W_BR + 5, &b.g));
		EXPECT_EQ(0, odsm_box_drop(&b));
	}
}

/* ---- owner writes under fire ------------------------------------------- */

static struct fire owner_fire = {
	.name = "owner_writes_under_fire",
	.nr_obj = 2,
	.writes = 10,		/* per node; node 0 (owner writes) twice that */
	.reads = 20,		/* per reader thread */
	.readers = 2,		/* per node */
	.owner_writes = true,
	.keep_ext = true,
};

TEST(owner_writes_under_fire)
{
	struct fire *f = &owner_fire;
	odsm_box *tab;
	unsigned int i;

	C_BEGIN();
	if (C.self == 0)
		ASSERT_EQ(0, fire_setup(f, W_BR + 6));
	ASSERT_EQ(0, step(15));
	ASSERT_EQ(0, fire_attach(f, W_BR + 6));
	EXPECT_EQ(0, fire_run(f, 7000 * (C.self + 1)));
	ASSERT_EQ(0, step(16));

	if (C.self == 0) {	/* every write counted, no box left borrowed */
		EXPECT_EQ((int64_t)fire_total_writes(f), fire_versions(f));
		tab = odsm_ptr(f->table);
		for (i = 0; i < f->nr_obj; i++)
			EXPECT_EQ(0ULL, tab[i].ext & ODSM_EXT_U);
	}
	ASSERT_EQ(0, step(17));
}

TEST_HARNESS_MAIN
