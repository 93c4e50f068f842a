// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring commands across nodes (uapi/linux/odsm.h, struct
 * odsm_uring_cmd; libodsm's odsm_async.h), run on every node at once.
 * Each node makes NR objects of OBJ bytes with its pattern and publishes
 * their addresses; each then works on the next node's objects:
 *
 *   - NR async READs in flight together complete once each, with the
 *     right bytes; odsm_read_many gives what odsm_read one at a time does;
 *   - odsm_borrow_many borrows all NR (fetched into this node's cache
 *     together: one prefetch, so every borrow hits), with the right bytes,
 *     then returned; again (hits);
 *   - odsm_prefetch: NR objects in one FETCH_MANY, then NR borrows that
 *     all hit; with 3 nodes or more, objects of two homes in one call,
 *     their two FETCH_MANYs out at once (prefetch_overlapped);
 *     what it skips (ours, gone, no object, over 2 KiB: not marked copied
 *     at its home, whose owner boxes stay readable; an address twice);
 *     bad calls (n 0 or too big, no array, flags, reserved);
 *   - the refusals through the ring: an object that is gone, no object
 *     (-EINVAL), a command that is no async one (-ENOTTY), no argument
 *     (-EINVAL);
 *   - a process that exits with NR borrows in flight loses none and
 *     keeps no copy referenced (uring_cmds meets uring_done, and
 *     copies_in_use comes back);
 *   - a process killed at once after submitting KILLED READs of BIG bytes
 *     of the peer's: every one stops at its next 256 KiB piece
 *     (uring_abandoned), none runs to its end for a program that is gone;
 *   - and NR async borrows against NR blocking ones, timed (printed; the
 *     bench row is odsm-xbench's).
 */
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include "odsm_cluster.h"
#include "odsm_async.h"

#define NR		64u
#define OBJ		512u
#define W_UR_TABLE	360	/* node K: its table of NR colored addresses */
#define B_UR		24	/* .. 25 on node 0 (44..59 are cluster_coherence_test's) */
#define SECS		120
#define KILLED		8u
#define BIG		(16u << 20)

FIXTURE(ur)
{
	int unused;
};

FIXTURE_SETUP(ur)
{
}

FIXTURE_TEARDOWN(ur)
{
}

/* Reap until every submitted one is back: how many failed, or -errno. */
static int reap_all(struct odsm_async *a, unsigned int n, int *res)
{
	struct odsm_async_done d[NR];
	unsigned int got = 0, i;
	int k, bad = 0;

	while (got < n) {
		k = odsm_async_reap(a, d, NR, 1);
		if (k < 0)
			return k;
		for (i = 0; i < (unsigned int)k; i++) {
			if (d[i].tag >= n || res[d[i].tag] != 1)
				return -EPROTO;	/* unknown, or twice */
			res[d[i].tag] = d[i].result;
			bad += d[i].result != 0;
		}
		got += k;
	}
	return bad;
}

/* Wait until every command taken here is done: 0, or the gap. */
static int64_t settle(unsigned int secs)
{
	int64_t gap = 0;
	unsigned int i;

	for (i = 0; i < secs * 20; i++) {
		gap = (int64_t)(c_stat("uring_cmds") - c_stat("uring_done"));
		if (!gap)
			return 0;
		c_sleep_ms(50);
	}
	return gap;
}

TEST_F(ur, async_across_nodes)
{
	static uint8_t buf[NR][OBJ], one[NR][OBJ];
	uint64_t mine[NR], theirs[NR], tcg, t0, t1, t2, c0, peer, dropped, kept, gone;
	uint64_t pf0, po0, h0, big, bigbox, skip[5], huge, ab0;
	struct odsm_prefetch pf;
	struct odsm_borrow b[NR], bad;
	struct odsm_range r[NR];
	struct odsm_rw rw[NR];
	struct odsm_async *a;
	odsm_ref refs[NR];
	const void *p[NR];
	unsigned int i;
	int res[NR], status, ret;
	pid_t pid;

	C_BEGIN();
	peer = (C.self + 1) % C.nodes;
	for (i = 0; i < NR; i++) {
		ASSERT_EQ(0, odsm_alloc(OBJ, 0, 0, &mine[i]));
		c_fill(odsm_ptr(mine[i]), OBJ, C.self, i);
	}
	ASSERT_EQ(0, odsm_alloc(sizeof(mine), 0, 0, &tcg));
	memcpy(odsm_ptr(tcg), mine, sizeof(mine));
	ASSERT_EQ(0, c_put(C.self, W_UR_TABLE, tcg));
	ASSERT_EQ(0, c_step(0, B_UR, SECS));

	ASSERT_EQ(0, c_get(peer, W_UR_TABLE, &tcg));
	ASSERT_EQ(0, odsm_read(tcg, theirs, sizeof(theirs)));
	ASSERT_EQ(0, odsm_async_new(NR, &a));

	/* NR reads in flight */
	c0 = c_stat("uring_cmds");
	memset(buf, 0, sizeof(buf));
	for (i = 0; i < NR; i++) {
		rw[i] = (struct odsm_rw){ .gaddr = theirs[i],
					  .buf = (uintptr_t)buf[i], .len = OBJ };
		res[i] = 1;
		ASSERT_EQ(0, odsm_async_queue(a, ODSM_IOC_READ, &rw[i], i));
	}
	ASSERT_EQ((int)NR, odsm_async_submit(a));
	ASSERT_EQ(0, reap_all(a, NR, res));
	for (i = 0; i < NR; i++)
		EXPECT_EQ(-1, c_check(buf[i], OBJ, peer, i));
	EXPECT_EQ(NR, c_stat("uring_cmds") - c0);

	/* the batch call and the calls one at a time: the same bytes */
	for (i = 0; i < NR; i++) {
		ASSERT_EQ(0, odsm_read(theirs[i] + 3, one[i], OBJ - 7));
		r[i] = (struct odsm_range){ theirs[i] + 3, buf[i], OBJ - 7 };
	}
	ASSERT_EQ(0, odsm_read_many(r, NR, res));
	for (i = 0; i < NR; i++)
		EXPECT_EQ(0, memcmp(one[i], buf[i], OBJ - 7));

	/* borrows: all fetched together (one prefetch), then hits */
	c0 = c_stat("borrow_misses");
	pf0 = c_stat("prefetched");
	for (i = 0; i < NR; i++)
		refs[i].g = theirs[i];
	ASSERT_EQ(0, odsm_borrow_many(refs, p, NR, res));
	EXPECT_EQ(0u, c_stat("borrow_misses") - c0);
	EXPECT_EQ(NR, c_stat("prefetched") - pf0);
	/* referenced, every one: none can be dropped */
	ASSERT_EQ(0, odsm_drop_copies(&dropped, &kept));
	EXPECT_EQ(NR, kept);
	for (i = 0; i < NR; i++) {
		EXPECT_EQ(-1, c_check(p[i], OBJ, peer, i));
		EXPECT_EQ(0, odsm_return(&refs[i]));
	}
	c0 = c_stat("borrow_hits");
	for (i = 0; i < NR; i++)
		refs[i].g = theirs[i];
	ASSERT_EQ(0, odsm_borrow_many(refs, p, NR, res));
	EXPECT_EQ(NR, c_stat("borrow_hits") - c0);
	for (i = 0; i < NR; i++) {
		EXPECT_EQ(-1, c_check(p[i], OBJ, peer, i));
		EXPECT_EQ(0, odsm_return(&refs[i]));
	}
	/* returned, every one: all can go */
	ASSERT_EQ(0, odsm_drop_copies(&dropped, &kept));
	EXPECT_EQ(0u, kept);
	EXPECT_EQ(NR, dropped);

	/* refusals, each with the ioctl's errno */
	/* an object of the peer's that is gone */
	ASSERT_EQ(0, odsm_alloc_on(peer, OBJ, 0, 0, &gone));
	ASSERT_EQ(0, odsm_free(gone));
	bad = (struct odsm_borrow){ .gaddr = gone };
	res[0] = res[1] = res[2] = res[3] = 1;
	b[0] = bad;
	b[1] = (struct odsm_borrow){ .gaddr = theirs[0] + 16 };
	ASSERT_EQ(0, odsm_async_queue(a, ODSM_IOC_BORROW, &b[0], 0));
	ASSERT_EQ(0, odsm_async_queue(a, ODSM_IOC_BORROW, &b[1], 1));
	ASSERT_EQ(0, odsm_async_queue(a, ODSM_IOC_LEAVE, &b[2], 2));
	ASSERT_EQ(0, odsm_async_queue(a, ODSM_IOC_BORROW, NULL, 3));
	ASSERT_EQ(4, odsm_async_submit(a));
	ret = reap_all(a, 4, res);
	TH_LOG("refusals: %d %d %d %d", res[0], res[1], res[2], res[3]);
	ASSERT_EQ(4, ret);
	/* gone: -ESTALE, or -EINVAL once its block held nothing */
	EXPECT_TRUE(res[0] == -ESTALE || res[0] == -EINVAL);
	EXPECT_EQ(-EINVAL, res[1]);
	EXPECT_EQ(-ENOTTY, res[2]);
	EXPECT_EQ(-EINVAL, res[3]);

	/* a process that exits with NR borrows in flight, on its own file */
	ASSERT_EQ(0, odsm_drop_copies(NULL, NULL));
	c0 = c_stat("uring_cmds");
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct odsm_async *ca;

		odsm_fini();
		if (odsm_init() || odsm_async_new(NR, &ca))
			_exit(2);
		for (i = 0; i < NR; i++) {
			b[i] = (struct odsm_borrow){ .gaddr = theirs[i] };
			odsm_async_queue(ca, ODSM_IOC_BORROW, &b[i], i);
		}
		_exit(odsm_async_submit(ca) == (int)NR ? 0 : 3);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, settle(SECS));
	EXPECT_EQ(NR, c_stat("uring_cmds") - c0);
	/* its references went with its file, when io_uring freed the last
	 * command's request
	 */
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(0, odsm_drop_copies(&dropped, &kept));
		if (!kept)
			break;
		c_sleep_ms(50);
	}
	EXPECT_EQ(0u, kept);

	/* a process killed with KILLED READs of BIG bytes in flight: a
	 * worker gets no signal, and without a look at its submitter each
	 * would read its 64 pieces to the end while the exit waited
	 */
	ASSERT_EQ(0, odsm_alloc_on(peer, BIG, 0, 0, &huge));
	ab0 = c_stat("uring_abandoned");
	c0 = c_stat("uring_cmds");
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct odsm_rw hr[KILLED];
		struct odsm_async *ca;
		void *hb = malloc(BIG);

		odsm_fini();
		if (!hb || odsm_init() || odsm_async_new(KILLED, &ca))
			_exit(2);
		for (i = 0; i < KILLED; i++) {
			hr[i] = (struct odsm_rw){ .gaddr = huge,
						  .buf = (uintptr_t)hb,
						  .len = BIG };
			odsm_async_queue(ca, ODSM_IOC_READ, &hr[i], i);
		}
		if (odsm_async_submit(ca) != (int)KILLED)
			_exit(3);
		raise(SIGKILL);
		_exit(4);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(SIGKILL, WTERMSIG(status));
	EXPECT_EQ(0, settle(SECS));
	EXPECT_EQ(KILLED, c_stat("uring_cmds") - c0);
	EXPECT_EQ(KILLED, c_stat("uring_abandoned") - ab0);
	EXPECT_EQ(0, odsm_free(huge));

	/* timed: NR blocking borrows that miss, then NR async ones */
	ASSERT_EQ(0, odsm_drop_copies(NULL, NULL));
	t0 = c_now_ms();
	for (i = 0; i < NR; i++) {
		refs[i].g = theirs[i];
		refs[i].ext = 0;
		ASSERT_EQ(0, odsm__ref_fetch(&refs[i]));
	}
	t1 = c_now_ms();
	for (i = 0; i < NR; i++)
		ASSERT_EQ(0, odsm_return(&refs[i]));
	ASSERT_EQ(0, odsm_drop_copies(NULL, NULL));
	/* odsm_return() cleared them */
	for (i = 0; i < NR; i++)
		refs[i].g = theirs[i];
	t2 = c_now_ms();
	ret = odsm_borrow_many(refs, p, NR, res);
	ASSERT_EQ(0, ret);
	t2 = c_now_ms() - t2;
	for (i = 0; i < NR; i++)
		ASSERT_EQ(0, odsm_return(&refs[i]));
	TH_LOG("node %u: %u borrow misses of %u B: blocking %" PRIu64 " ms, async %" PRIu64 " ms",
	       C.self, NR, OBJ, t1 - t0, t2);

	/* odsm_prefetch: one FETCH_MANY, then every borrow hits */
	ASSERT_EQ(0, odsm_drop_copies(NULL, NULL));
	pf0 = c_stat("prefetched");
	po0 = c_stat("prefetch_overlapped");
	c0 = c_stat("borrow_misses");
	h0 = c_stat("borrow_hits");
	EXPECT_EQ((int)NR, odsm_prefetch(theirs, NR));
	EXPECT_EQ(NR, c_stat("prefetched") - pf0);
	EXPECT_EQ(po0, c_stat("prefetch_overlapped"));	/* one FETCH_MANY */
	EXPECT_EQ(0, odsm_prefetch(theirs, NR));	/* cached already */
	for (i = 0; i < NR; i++) {
		refs[i].g = theirs[i];
		refs[i].ext = 0;
		ASSERT_EQ(0, odsm__ref_fetch(&refs[i]));
		EXPECT_EQ(-1, c_check((const void *)(uintptr_t)
				      odsm__copy_of(refs[i].ext), OBJ, peer, i));
		EXPECT_EQ(0, odsm_return(&refs[i]));
	}
	EXPECT_EQ(NR, c_stat("borrow_hits") - h0);
	EXPECT_EQ(0u, c_stat("borrow_misses") - c0);
	/* two homes in one call: a FETCH_MANY each */
	if (C.nodes > 2) {
		uint64_t two[NR], pcg;
		unsigned int pred = (C.self + C.nodes - 1) % C.nodes;

		ASSERT_EQ(0, odsm_drop_copies(NULL, NULL));
		ASSERT_EQ(0, c_get(pred, W_UR_TABLE, &pcg));
		ASSERT_EQ(0, odsm_read(pcg, two, sizeof(two)));
		for (i = 0; i < NR / 2; i++)
			two[2 * i + 1] = theirs[i];
		po0 = c_stat("prefetch_overlapped");
		EXPECT_EQ((int)NR, odsm_prefetch(two, NR));
		/* the second home's sent while the first's was out */
		EXPECT_EQ(po0 + 1, c_stat("prefetch_overlapped"));
		for (i = 0; i < NR; i++) {
			refs[i].g = two[i];
			refs[i].ext = 0;
			ASSERT_EQ(0, odsm__ref_fetch(&refs[i]));
			EXPECT_EQ(-1, c_check((const void *)(uintptr_t)
					      odsm__copy_of(refs[i].ext), OBJ,
					      i % 2 ? peer : pred,
					      i % 2 ? i / 2 : i));
			EXPECT_EQ(0, odsm_return(&refs[i]));
		}
	}
	/* skipped: ours, one that is gone, no object's start, one over
	 * 2 KiB; and one address three times is fetched once
	 */
	ASSERT_EQ(0, odsm_drop_copies(NULL, NULL));
	ASSERT_EQ(0, odsm_alloc_on(peer, 4096, 0, 0, &big));
	skip[0] = mine[0];
	skip[1] = gone;
	skip[2] = theirs[0] + 16;
	skip[3] = big;
	EXPECT_EQ(0, odsm_prefetch(skip, 4));
	/* sent in part, not cached: its home did not mark it copied, so an
	 * owner box in it is still read at its home, not refused -EBUSY
	 */
	EXPECT_EQ(0, odsm__read_owner(odsm_addr_of(big), &bigbox));
	skip[0] = skip[1] = skip[2] = theirs[1];
	EXPECT_EQ(1, odsm_prefetch(skip, 3));
	/* bad calls */
	EXPECT_EQ(-EINVAL, odsm_prefetch(theirs, 0));
	EXPECT_EQ(-EINVAL, odsm_prefetch(theirs, ODSM_PREFETCH_MAX + 1));
	EXPECT_EQ(-EFAULT, odsm_prefetch(NULL, 1));
	pf = (struct odsm_prefetch){ .gaddrs = (uintptr_t)theirs, .n = 1,
				     .flags = 1 };
	EXPECT_EQ(-1, ioctl(odsm_rt.fd, ODSM_IOC_PREFETCH, &pf));
	EXPECT_EQ(EINVAL, errno);
	pf.flags = 0;
	pf.reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(odsm_rt.fd, ODSM_IOC_PREFETCH, &pf));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, odsm_free(big));
	ASSERT_EQ(0, odsm_drop_copies(NULL, NULL));

	odsm_async_free(a);
	/* every node is done with the others' objects */
	ASSERT_EQ(0, c_barrier(0, B_UR + 1, C.nodes, SECS));
	for (i = 0; i < NR; i++)
		EXPECT_EQ(0, odsm_free(mine[i]));
	ASSERT_EQ(0, c_get(C.self, W_UR_TABLE, &tcg));
	EXPECT_EQ(0, odsm_free(tcg));
	EXPECT_EQ(0, c_put(C.self, W_UR_TABLE, 0));
}

TEST_HARNESS_MAIN
