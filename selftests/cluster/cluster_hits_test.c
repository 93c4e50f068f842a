// SPDX-License-Identifier: GPL-2.0
/*
 * Cache hits in user space (issue 15, section 1): libodsm's table of the
 * copies a process references serves borrows and returns of them without
 * a system call, and the kernel's reclaim still never takes a copy that a
 * borrow reads.  Node 0 is the home of the object, node 1 borrows it, the
 * others keep step.
 *
 *   no_syscall_hits    after the first borrow (a miss), HITS borrows and
 *                      returns of the same version move none of the
 *                      kernel's borrow counters; a thread that seccomp
 *                      forbids every ioctl (it would fail with EMLINK)
 *                      does them all the same, and reads the right bytes;
 *                      what a hit costs against a local borrow and the
 *                      kernel's hit path (printed; the table must be 4x
 *                      faster than the kernel's path at least)
 *   other_process      a second process of the node: its first borrow of
 *                      the copy the first one fetched is one kernel hit
 *                      (no fetch), every later one enters no kernel
 *   in_use_not_taken   a thread holds a borrow served from the table while
 *                      the main thread forces eviction (DROP_COPIES, a
 *                      budget of 0, the shrinkers): the copy stays, its
 *                      bytes intact; once returned, the kernel's call for
 *                      idle references (want_epoch) reaches the table at
 *                      its next call, and the copy goes
 *   new_color_misses   the home writes the object (a new color): a borrow
 *                      of the new colored address misses and reads the new
 *                      bytes, never the table's copy of the old version
 *
 * Words of node 0's directory: 440 .. 442.  Barriers: ids 25 .. 27 of NODE
 * 1's directory: node 0's 60 .. 63 looked free, but cluster_cache_test
 * uses 61 (home_rejoin) and 62 .. 63 (slots_protected, its test 6), and
 * node 1's 60 .. 61 are cluster_ownership_test's; a barrier word already
 * at its count does not wait (run after cluster_cache_test, the home
 * dropped the object while node 1 still borrowed it).
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "odsm_cluster.h"

#define HOME		0
#define USER		1
#define W_HT		440	/* the object's colored address */
#define W_HT_DONE	441	/* USER: the first tests are done */
#define W_HT_NEW	442	/* HOME: the address after its write */
#define B_HOST		1	/* the barriers' directory: node 1's */
#define B_HT_START	25	/* .. 27; cluster_deleg_test has 20 .. 24 */
#define B_HT_MID	26
#define B_HT_END	27
#define SZ		3000
#define HITS		20000
#define SECS		120

struct kstats {
	uint64_t hits, misses, returns, fetched;
};

static void kstats(struct kstats *k)
{
	k->hits = c_stat("borrow_hits");
	k->misses = c_stat("borrow_misses");
	k->returns = c_stat("borrow_returns");
	k->fetched = c_stat("bytes_fetched");
}

/* HITS borrows and returns of b: 0, or the first failure (-errno, or 1
 * for wrong bytes, 2 for another copy than first).
 */
static int hit_loop(odsm_box *b, const void *first, unsigned int tag)
{
	const void *p;
	unsigned int i;
	odsm_ref r;
	int ret;

	for (i = 0; i < HITS; i++) {
		ret = odsm_borrow(b, &r, &p);
		if (ret)
			return ret;
		if (p != first)
			return 2;
		if (!(i % 1000) && c_check(p, SZ, HOME, tag) != -1)
			return 1;
		ret = odsm_return(&r);
		if (ret)
			return ret;
	}
	return 0;
}

struct seccomp_run {
	odsm_box *b;
	const void *first;
	int ret;		/* hit_loop's */
	int probe;		/* an ioctl's errno under the filter */
};

/* A thread that no ioctl can leave: the filter answers EMLINK. */
static void *no_ioctl_thread(void *arg)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EMLINK),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]),
				   .filter = f };
	struct seccomp_run *s = arg;
	struct odsm_info in;

	s->ret = -EPERM;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
		return NULL;
	/* the filter is on: an ioctl cannot succeed here */
	s->probe = ioctl(odsm_rt.fd, ODSM_IOC_INFO, &in) ? errno : 0;
	s->ret = hit_loop(s->b, s->first, 1);
	return NULL;
}

struct holder {
	odsm_box *b;
	const void *p;
	volatile int held, release;
	int ret;
};

static void *holder_thread(void *arg)
{
	struct holder *h = arg;
	odsm_ref r;

	h->ret = odsm_borrow(h->b, &r, &h->p);
	h->held = 1;
	while (!h->ret && !h->release)
		c_sleep_ms(5);
	if (!h->ret)
		h->ret = odsm_return(&r);
	return NULL;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/*
 * What a hit costs, in this guest: a borrow and return served by the
 * table, one of a local object (libodsm's inline path), and one through
 * the kernel's hit path (BORROW + RETURN ioctls).  Printed, and the table
 * must beat the kernel by far (it makes no system call).
 */
static void hit_cost(struct __test_metadata *_metadata, odsm_box *b)
{
	double t0, table_ns, local_ns, kernel_ns;
	struct odsm_borrow br;
	const void *p;
	odsm_box lb;
	odsm_ref r;
	int i, n = HITS, nk = HITS / 10;

	ASSERT_EQ(0, odsm_box_new(&lb, SZ, ODSM_ALLOC_ZERO));
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		odsm_borrow(&lb, &r, &p);
		__asm__ volatile("" : : "r"(p) : "memory");
		odsm_return(&r);
	}
	local_ns = (now_ns() - t0) / n;
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		odsm_borrow(b, &r, &p);
		__asm__ volatile("" : : "r"(p) : "memory");
		odsm_return(&r);
	}
	table_ns = (now_ns() - t0) / n;
	t0 = now_ns();
	for (i = 0; i < nk; i++) {
		memset(&br, 0, sizeof(br));
		br.gaddr = b->g;
		ASSERT_EQ(0, ioctl(odsm_rt.fd, ODSM_IOC_BORROW, &br));
		ASSERT_EQ(0, ioctl(odsm_rt.fd, ODSM_IOC_RETURN, &br));
	}
	kernel_ns = (now_ns() - t0) / nk;
	printf("# cached_hit_loop_vs_local_borrow ratio=%.2f kernel_path_ratio=%.0f (a borrow and return: table hit %.0f ns, kernel hit %.0f ns, local %.0f ns)\n",
	       table_ns / local_ns, kernel_ns / local_ns, table_ns, kernel_ns,
	       local_ns);
	EXPECT_LT(table_ns * 4, kernel_ns);
	EXPECT_EQ(0, odsm_box_drop(&lb));
}

static int drop_copies(struct odsm_drop_copies *d)
{
	memset(d, 0, sizeof(*d));
	/* the kernel's own: odsm_drop_copies() would give back the idle
	 * references of the table first
	 */
	return ioctl(odsm_rt.fd, ODSM_IOC_DROP_COPIES, d) ? -errno : 0;
}

static int shrink(void)
{
	FILE *f = fopen("/proc/sys/vm/drop_caches", "w");
	int ret;

	if (!f)
		return -errno;
	ret = fputs("3\n", f) < 0 ? -EIO : 0;
	if (fclose(f))
		ret = -errno;
	return ret;
}

static void user_side(struct __test_metadata *_metadata, odsm_box *b)
{
	struct odsm_hits_stats hs, hs2;
	struct odsm_drop_copies d;
	struct seccomp_run s = { 0 };
	struct holder h = { 0 };
	struct kstats k0, k1;
	const void *first, *p;
	pthread_t t;
	int status;
	odsm_ref r;
	pid_t pid;

	/* --- no_syscall_hits ------------------------------------------- */
	kstats(&k0);
	ASSERT_EQ(0, odsm_borrow(b, &r, &first));
	EXPECT_EQ(-1, c_check(first, SZ, HOME, 1));
	ASSERT_EQ(0, odsm_return(&r));
	kstats(&k1);
	EXPECT_EQ(k0.misses + 1, k1.misses);
	odsm_hits_stats(&hs);
	EXPECT_EQ(1ULL, hs.idle);	/* kept: its reference stays */

	ASSERT_EQ(0, hit_loop(b, first, 1));
	kstats(&k0);
	EXPECT_EQ(k1.hits, k0.hits);
	EXPECT_EQ(k1.misses, k0.misses);
	EXPECT_EQ(k1.returns, k0.returns);
	EXPECT_EQ(k1.fetched, k0.fetched);
	odsm_hits_stats(&hs2);
	EXPECT_EQ(hs.hits + HITS, hs2.hits);
	EXPECT_EQ(hs.returns + HITS, hs2.returns);
	EXPECT_EQ(hs.recorded, hs2.recorded);
	printf("# %u hits: kernel borrow_hits +%" PRIu64 ", misses +%" PRIu64 ", returns +%" PRIu64 "\n",
	       HITS, k0.hits - k1.hits, k0.misses - k1.misses,
	       k0.returns - k1.returns);

	s.b = b;
	s.first = first;
	ASSERT_EQ(0, pthread_create(&t, NULL, no_ioctl_thread, &s));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(EMLINK, s.probe);
	EXPECT_EQ(0, s.ret);
	printf("# %u hits in a thread whose every ioctl fails (probe: %s): %s\n",
	       HITS, strerror(s.probe), s.ret ? "FAILED" : "all served");
	hit_cost(_metadata, b);

	/* --- other_process --------------------------------------------- */
	kstats(&k0);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct kstats c0, c1;
		const void *q;

		/* a process of its own: its own file and table */
		odsm_fini();
		if (odsm_init())
			_exit(10);
		c_get(HOME, W_HT, &b->g);	/* (odsm_fini unmapped the heap) */
		b->ext = 0;
		if (odsm_borrow(b, &r, &q) || odsm_return(&r))
			_exit(11);
		kstats(&c0);
		if (c0.hits != k0.hits + 1 || c0.misses != k0.misses ||
		    c0.fetched != k0.fetched)
			_exit(12);	/* not one kernel hit */
		if (hit_loop(b, q, 1))
			_exit(13);
		kstats(&c1);
		if (c1.hits != c0.hits || c1.returns != c0.returns)
			_exit(14);	/* a later one entered the kernel */
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));

	/* --- in_use_not_taken ------------------------------------------ */
	h.b = b;
	ASSERT_EQ(0, pthread_create(&t, NULL, holder_thread, &h));
	while (!h.held)
		c_sleep_ms(5);
	ASSERT_EQ(0, h.ret);
	EXPECT_EQ(first, h.p);		/* served from the table */
	ASSERT_EQ(0, c_set_knob("cache_budget_bytes", 0));
	ASSERT_EQ(0, drop_copies(&d));
	EXPECT_LE(1ULL, d.kept);
	EXPECT_EQ(0, shrink());
	ASSERT_EQ(0, drop_copies(&d));
	EXPECT_LE(1ULL, d.kept);
	EXPECT_LE(1ULL, c_stat("copies_in_use"));
	EXPECT_EQ(-1, c_check(h.p, SZ, HOME, 1));	/* intact */
	odsm_hits_stats(&hs);
	kstats(&k0);
	h.release = 1;
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, h.ret);
	/* the return heard the kernel's call (a budget of 0, DROP_COPIES:
	 * copies were left) and gave the idle reference back: the copy went
	 */
	odsm_hits_stats(&hs2);
	kstats(&k1);
	EXPECT_LE(hs.given_back + 1, hs2.given_back);
	EXPECT_EQ(k0.returns + 1, k1.returns);
	ASSERT_EQ(0, drop_copies(&d));
	EXPECT_EQ(0ULL, d.kept);
	ASSERT_EQ(0, c_set_knob("cache_budget_bytes", MiB(64)));

	/* an idle reference is the table's until it hears the kernel */
	ASSERT_EQ(0, odsm_borrow(b, &r, &first));
	ASSERT_EQ(0, odsm_return(&r));
	ASSERT_EQ(0, drop_copies(&d));
	EXPECT_EQ(1ULL, d.kept);		/* kept idle by the table */
	odsm_hits_stats(&hs);
	kstats(&k0);
	/* its next call gives it back (a RETURN); the copy stayed (within
	 * the budget), so the borrow is one kernel hit
	 */
	ASSERT_EQ(0, odsm_borrow(b, &r, &p));
	EXPECT_EQ(-1, c_check(p, SZ, HOME, 1));
	ASSERT_EQ(0, odsm_return(&r));
	odsm_hits_stats(&hs2);
	kstats(&k1);
	EXPECT_EQ(hs.given_back + 1, hs2.given_back);
	EXPECT_EQ(k0.returns + 1, k1.returns);
	EXPECT_EQ(k0.hits + 1, k1.hits);
	EXPECT_EQ(k0.misses, k1.misses);
	EXPECT_EQ(1, odsm_hits_flush());
	ASSERT_EQ(0, drop_copies(&d));
	EXPECT_EQ(0ULL, d.kept);
}

TEST(hits)
{
	const void *p;
	uint64_t v;
	odsm_box b;
	int ret;
	odsm_ref r;
	void *w;

	C_BEGIN();
	if (C.self == HOME) {
		ASSERT_EQ(0, odsm_box_new(&b, SZ, 0));
		c_fill(odsm_ptr(b.g), SZ, HOME, 1);
		ASSERT_EQ(0, c_put(HOME, W_HT, odsm_box_share(&b)));
	}
	ASSERT_EQ(0, c_step(B_HOST, B_HT_START, SECS));
	if (C.self == USER) {
		memset(&b, 0, sizeof(b));
		ASSERT_EQ(0, c_get(HOME, W_HT, &b.g));
		user_side(_metadata, &b);
		/* the table records the version the home is about to write */
		ASSERT_EQ(0, odsm_borrow(&b, &r, &p));
		ASSERT_EQ(0, odsm_return(&r));
		ASSERT_EQ(0, c_put(HOME, W_HT_DONE, 1));
	}
	/* --- new_color_misses ------------------------------------------- */
	if (C.self == HOME) {
		ASSERT_EQ(0, c_poll(HOME, W_HT_DONE, 0, SECS, NULL));
		v = b.g;
		ASSERT_EQ(0, odsm_box_write(&b, &w));	/* a new color */
		c_fill(w, SZ, HOME, 2);
		printf("# the home wrote 0x%" PRIx64 ": now 0x%" PRIx64 "\n", v,
		       b.g);
		ASSERT_EQ(0, c_put(HOME, W_HT_NEW, odsm_box_share(&b)));
	}
	ASSERT_EQ(0, c_step(B_HOST, B_HT_MID, SECS));
	if (C.self == USER) {
		uint64_t misses = c_stat("borrow_misses");
		const void *old;

		/* the old colored address still names the old version's
		 * copy, from the table
		 */
		ASSERT_EQ(0, odsm_borrow(&b, &r, &old));
		EXPECT_EQ(-1, c_check(old, SZ, HOME, 1));
		ASSERT_EQ(0, odsm_return(&r));
		EXPECT_EQ(misses, c_stat("borrow_misses"));
		/* the new one never matches it */
		ASSERT_EQ(0, c_get(HOME, W_HT_NEW, &v));
		EXPECT_NE(b.g, v);
		b.g = v;
		ret = odsm_borrow(&b, &r, &p);
		ASSERT_EQ(0, ret) {
			struct odsm_obj_info oi;

			TH_LOG("borrow of 0x%" PRIx64 ": %s; its object: %s", v,
			       odsm_strerror(ret),
			       odsm_strerror(odsm_obj_info(v, &oi)));
		}
		EXPECT_NE(old, p);
		EXPECT_EQ(-1, c_check(p, SZ, HOME, 2));
		EXPECT_EQ(misses + 1, c_stat("borrow_misses"));
		ASSERT_EQ(0, odsm_return(&r));
		EXPECT_LE(1, odsm_hits_flush());
	}
	ASSERT_EQ(0, c_step(B_HOST, B_HT_END, SECS));
	if (C.self == HOME)
		EXPECT_EQ(0, odsm_box_drop(&b));
}

TEST_HARNESS_MAIN
