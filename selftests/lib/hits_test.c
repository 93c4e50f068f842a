// SPDX-License-Identifier: GPL-2.0
/*
 * libodsm's table of cache hits (userlib/odsm_hits.c) on the host, against
 * the fake /dev/odsm (fake_odsm.h), which counts every ioctl and every
 * reference its cache holds, and a hit page of the test's own:
 *
 *   hits_enter_no_kernel   after the first borrow (one BORROW), borrows,
 *                          clones and returns of that colored address make
 *                          no ioctl; the reference stays while idle and
 *                          odsm_hits_flush() gives it back (one RETURN)
 *   new_color_never_matches  a borrow of another color of the same address
 *                          asks the kernel
 *   forget_epoch           a record made before the forget epoch moved is
 *                          never served again, and is given back once idle
 *   want_epoch             a moved want epoch: the next borrow or return
 *                          gives every idle reference back, not one in use
 *   idle_batch             a record made while 64 exist gives the idle
 *                          ones back first, in a batch
 *   handed_over            a borrow returned by another thread than the
 *                          one that took it, and one whose thread exited
 *                          with it out: counted right, given back once
 *                          returned, never before
 *   move_gives_back        a mutable borrow of a recorded version gives its
 *                          idle reference back first, so the copy is taken
 *   in_use_never_given_back  threads borrow, check and return while another
 *                          moves the want epoch all the time: every borrow
 *                          out is covered by a reference of the fake cache
 *                          (the kernel's rule: a referenced copy stays)
 *   fork_child_own_tag     a forked child has a tag of its own: a borrow
 *                          it inherited is foreign to it, its return
 *                          makes no ioctl and leaves the parent's
 *                          reference, and the child borrows anew
 */
#include <sys/wait.h>
#include "ksft_host.h"
#include "fake_odsm.h"
#include "odsm_hits_int.h"

#define SZ	256

static struct odsm_hits_page page;

FIXTURE(hits) {
	struct fk_stats s0;
};

FIXTURE_SETUP(hits)
{
	fk_init();
	memset(&page, 0, sizeof(page));
	odsm__hits_attach(&page);
	self->s0 = fk_snap();
}

FIXTURE_TEARDOWN(hits)
{
	odsm__hits_attach(NULL);
	fk_fini();
}

/* references the fake cache holds on the copy of cg (0: no copy) */
static unsigned int refs_of(uint64_t cg)
{
	struct fk_copy *c;
	unsigned int n;

	pthread_mutex_lock(&fk.lock);
	c = fk_copy_of(cg);
	n = c ? c->refs : 0;
	pthread_mutex_unlock(&fk.lock);
	return n;
}

static void bump(__u64 *w)
{
	__atomic_fetch_add(w, 1, __ATOMIC_RELEASE);
}

TEST_F(hits, hits_enter_no_kernel)
{
	odsm_box b = { .g = fk_new_obj(1, SZ, 0x5a) };
	struct odsm_hits_stats hs;
	const void *p, *q;
	odsm_ref r, r2;
	struct fk_stats s;
	int i;

	ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
	EXPECT_EQ(ODSM_EXT_HIT, r.ext & ODSM_EXT_HIT);
	ASSERT_EQ(0, odsm_return(&r));
	s = fk_snap();
	EXPECT_EQ(self->s0.calls + 1, s.calls);		/* the BORROW */
	EXPECT_EQ(1U, refs_of(b.g));			/* kept, idle */
	for (i = 0; i < 1000; i++) {
		ASSERT_EQ(0, odsm_borrow(&b, &r, &q));
		ASSERT_EQ(p, q);
		ASSERT_EQ(0, odsm_ref_clone(&r, &r2, &q));
		ASSERT_EQ(p, q);
		ASSERT_EQ(0, odsm_return(&r2));
		ASSERT_EQ(0, odsm_return(&r));
	}
	EXPECT_EQ(s.calls, fk_snap().calls);		/* no ioctl at all */
	odsm_hits_stats(&hs);
	EXPECT_EQ(2000U, hs.hits);
	EXPECT_EQ(2001U, hs.returns);
	EXPECT_EQ(1U, hs.recorded);
	EXPECT_EQ(1U, hs.idle);
	EXPECT_EQ(1, odsm_hits_flush());
	EXPECT_EQ(0U, refs_of(b.g));
	EXPECT_EQ(self->s0.returns + 1, fk_snap().returns);
	EXPECT_EQ(0, odsm_hits_flush());
}

TEST_F(hits, new_color_never_matches)
{
	uint64_t g = fk_new_obj(1, SZ, 0x11);
	odsm_box b = { .g = g };
	const void *p, *q;
	odsm_ref r;

	ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
	ASSERT_EQ(0, odsm_return(&r));
	/* the object's next color (a write there): another key */
	b.g = g + (1ULL << ODSM_COLOR_SHIFT);
	ASSERT_EQ(0, odsm_borrow(&b, &r, &q));
	EXPECT_NE(p, q);
	EXPECT_EQ(self->s0.borrows + 2, fk_snap().borrows);
	ASSERT_EQ(0, odsm_return(&r));
	EXPECT_EQ(2, odsm_hits_flush());
}

TEST_F(hits, forget_epoch)
{
	odsm_box b = { .g = fk_new_obj(1, SZ, 0x22) };
	struct odsm_hits_stats hs;
	const void *p;
	odsm_ref r, r2;

	ASSERT_EQ(0, odsm_borrow(&b, &r, &p));	/* recorded, in use */
	bump(&page.forget_epoch);
	/* not served from the table: a BORROW of its own */
	ASSERT_EQ(0, odsm_borrow(&b, &r2, &p));
	EXPECT_EQ(self->s0.borrows + 2, fk_snap().borrows);
	EXPECT_EQ(2U, refs_of(b.g));
	ASSERT_EQ(0, odsm_return(&r2));
	/* the old record, once idle, goes at the next look */
	ASSERT_EQ(0, odsm_return(&r));
	odsm_hits_stats(&hs);
	EXPECT_EQ(0U, hs.hits);
	bump(&page.want_epoch);
	ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
	ASSERT_EQ(0, odsm_return(&r));
	EXPECT_EQ(0, odsm_hits_flush() < 0);
	EXPECT_EQ(0U, refs_of(b.g));
}

TEST_F(hits, want_epoch)
{
	odsm_box a = { .g = fk_new_obj(1, SZ, 1) };
	odsm_box b = { .g = fk_new_obj(1, SZ, 2) };
	struct odsm_hits_stats hs;
	const void *p;
	odsm_ref ra, rb;

	ASSERT_EQ(0, odsm_borrow(&a, &ra, &p));
	ASSERT_EQ(0, odsm_return(&ra));		/* a: idle */
	ASSERT_EQ(0, odsm_borrow(&b, &rb, &p));	/* b: in use */
	bump(&page.want_epoch);
	/* the next call (a hit of b... or anything) hears it */
	ASSERT_EQ(0, odsm_borrow(&b, &ra, &p));
	ASSERT_EQ(0, odsm_return(&ra));
	odsm_hits_stats(&hs);
	EXPECT_EQ(1U, hs.given_back);
	EXPECT_EQ(0U, refs_of(a.g));
	EXPECT_EQ(1U, refs_of(b.g));		/* in use: kept */
	ASSERT_EQ(0, odsm_return(&rb));
	EXPECT_EQ(1, odsm_hits_flush());
	EXPECT_EQ(0U, refs_of(b.g));
	/* a return hears it too: the reference goes with the last borrow */
	ASSERT_EQ(0, odsm_borrow(&a, &ra, &p));
	ASSERT_EQ(0, odsm_return(&ra));
	ASSERT_EQ(0, odsm_borrow(&a, &ra, &p));	/* a hit, in use */
	bump(&page.want_epoch);
	EXPECT_EQ(1U, refs_of(a.g));
	ASSERT_EQ(0, odsm_return(&ra));
	EXPECT_EQ(0U, refs_of(a.g));
}

TEST_F(hits, idle_batch)
{
	struct odsm_hits_stats hs;
	const void *p;
	odsm_box b;
	odsm_ref r;
	int i;

	for (i = 0; i < 65; i++) {
		b.g = fk_new_obj(1, SZ, i);
		b.ext = 0;
		ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
		ASSERT_EQ(0, odsm_return(&r));
	}
	odsm_hits_stats(&hs);
	EXPECT_EQ(64U, hs.given_back);		/* the 65th's record did it */
	EXPECT_EQ(1U, hs.idle);			/* the 65th */
	EXPECT_EQ(self->s0.returns + 64, fk_snap().returns);
	EXPECT_EQ(1, odsm_hits_flush());
}

struct handover {
	odsm_box b;
	odsm_ref r;
	const unsigned char *p;
	int ret;
};

/* borrow twice (the second a hit, counted in this thread's entry) */
static void *take(void *arg)
{
	struct handover *h = arg;
	odsm_ref r0;

	h->ret = odsm_borrow(&h->b, &r0, (const void **)&h->p);
	h->ret = h->ret ?: odsm_return(&r0);
	h->ret = h->ret ?: odsm_borrow(&h->b, &h->r, (const void **)&h->p);
	return NULL;
}

TEST_F(hits, handed_over)
{
	struct handover h = { .b.g = fk_new_obj(1, SZ, 0x66) };
	struct odsm_hits_stats hs;
	const void *p;
	odsm_ref r;
	pthread_t t;

	/* a thread takes it and exits with it out: its count stays */
	ASSERT_EQ(0, pthread_create(&t, NULL, take, &h));
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_EQ(0, h.ret);
	EXPECT_EQ(0, odsm_hits_flush());	/* in use: kept */
	EXPECT_EQ(1U, refs_of(h.b.g));
	EXPECT_EQ(0x66, h.p[0]);
	/* this thread hits it too, then returns both */
	ASSERT_EQ(0, odsm_borrow(&h.b, &r, &p));
	EXPECT_EQ(h.p, p);
	ASSERT_EQ(0, odsm_return(&h.r));	/* the other thread's */
	EXPECT_EQ(0, odsm_hits_flush());	/* ours is out */
	EXPECT_EQ(1U, refs_of(h.b.g));
	ASSERT_EQ(0, odsm_return(&r));
	odsm_hits_stats(&hs);
	EXPECT_EQ(1U, hs.idle);
	EXPECT_EQ(1, odsm_hits_flush());
	EXPECT_EQ(0U, refs_of(h.b.g));
	EXPECT_EQ(self->s0.borrows + 1, fk_snap().borrows);
}

TEST_F(hits, move_gives_back)
{
	odsm_box b = { .g = fk_new_obj(1, SZ, 0x33) };
	const void *p;
	odsm_mut m;
	odsm_ref r;
	void *w;

	ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
	ASSERT_EQ(0, odsm_return(&r));
	EXPECT_EQ(1U, refs_of(b.g));
	ASSERT_EQ(0, odsm_borrow_mut(&b, &m, &w));
	EXPECT_EQ(p, w);			/* the copy itself, taken */
	EXPECT_EQ(self->s0.taken + 1, fk_snap().taken);
	ASSERT_EQ(0, odsm_return_mut(&m));
}

#define THREADS	4
#define ROUNDS	20000

static odsm_box objs[3];
static volatile int stop;
static int bad;
static unsigned int bumps;	/* want epochs the wanter moved */

static void *borrower(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;
	int i;

	/*
	 * ROUNDS, and on until the wanter moved the epoch a few times: on a
	 * loaded machine it may not have run at all by then (a check once
	 * saw 80000 borrows and no give-back)
	 */
	for (i = 0; i < ROUNDS ||
		    __atomic_load_n(&bumps, __ATOMIC_RELAXED) < 20; i++) {
		odsm_box b = objs[rand_r(&seed) % 3];
		const unsigned char *p;
		odsm_ref r;

		if (odsm_borrow(&b, &r, (const void **)&p)) {
			__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
			continue;
		}
		/* a borrow out: the fake cache holds a reference */
		if (!refs_of(b.g) || p[0] != p[SZ - 1])
			__atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
		odsm_return(&r);
	}
	return NULL;
}

static void *wanter(void *arg)
{
	while (!stop) {
		bump(&page.want_epoch);
		__atomic_add_fetch(&bumps, 1, __ATOMIC_RELAXED);
		usleep(50);
	}
	return NULL;
}

TEST_F(hits, in_use_never_given_back)
{
	pthread_t t[THREADS], w;
	struct odsm_hits_stats hs;
	int i;

	for (i = 0; i < 3; i++)
		objs[i].g = fk_new_obj(1, SZ, 0x40 + i);
	stop = 0;
	bad = 0;
	bumps = 0;
	ASSERT_EQ(0, pthread_create(&w, NULL, wanter, NULL));
	for (i = 0; i < THREADS; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, borrower,
					    (void *)(uintptr_t)(i + 1)));
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	stop = 1;
	pthread_join(w, NULL);
	EXPECT_EQ(0, bad);
	odsm_hits_stats(&hs);
	fprintf(stderr, "# %u hits, %u recorded, %u given back\n",
	       (unsigned int)hs.hits, (unsigned int)hs.recorded,
	       (unsigned int)hs.given_back);
	EXPECT_LE(1U, hs.given_back);
	odsm_hits_flush();
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0U, refs_of(objs[i].g));
	EXPECT_EQ(fk_snap().borrows - self->s0.borrows,
		  fk_snap().returns - self->s0.returns);
}

TEST_F(hits, fork_child_own_tag)
{
	odsm_box b = { .g = fk_new_obj(1, SZ, 0x77) };
	uint64_t parent_tag = odsm_rt.tag;
	const void *p, *q;
	odsm_ref r, r2;
	struct fk_stats s;
	int status;
	pid_t pid;

	ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
	ASSERT_EQ(ODSM_EXT_HIT, r.ext & ODSM_EXT_HIT);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* the fake device is this process's copy: its counts too */
		if (!odsm_rt.tag || odsm_rt.tag == parent_tag)
			_exit(1);
		if (odsm__copy_of(r.ext))
			_exit(2);
		s = fk_snap();
		if (odsm_return(&r) || fk_snap().calls != s.calls)
			_exit(3);	/* it gave the parent's back */
		if (refs_of(b.g) != 1)
			_exit(4);
		if (odsm_borrow(&b, &r2, &q))
			_exit(5);
		if (fk_snap().calls != s.calls + 1)
			_exit(20 + (int)(fk_snap().calls - s.calls));
		if (memcmp(p, q, SZ))
			_exit(7);
		if (odsm_return(&r2))
			_exit(8);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(parent_tag, odsm_rt.tag);
	EXPECT_NE(0ULL, odsm__copy_of(r.ext));
	EXPECT_EQ(1U, refs_of(b.g));
	EXPECT_EQ(0, odsm_return(&r));
	EXPECT_EQ(1, odsm_hits_flush());
	EXPECT_EQ(0U, refs_of(b.g));
}

TEST_HARNESS_MAIN
