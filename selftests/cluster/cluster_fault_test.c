// SPDX-License-Identifier: GPL-2.0
/*
 * Calls under the message fault injector (kmod/odsm_fault.c): every node
 * arms its own, so what it sends -- requests and replies -- is dropped,
 * delayed or sent twice.  Run only when ODSM_FAULTS is set (scenario
 * cluster-faults); every test SKIPs otherwise, and disarms the injector
 * when it ends, whatever happened.
 *
 *   replay_served_once   every request of the non-idempotent kinds sent
 *                        twice (fetch-and-add, alloc, free): each applied
 *                        once (the replay window), the duplicates counted
 *   under_fire_faulted   the coherence-under-fire stress (under_fire.h)
 *                        with delays and duplicates on every call: no
 *                        torn, stale or lost write, exact totals
 *   deleg_served_once    delegation batches (DELEG) and their answers
 *                        sent twice and late: each neighbour's counter,
 *                        entrusted to its runtime, counts every apply
 *                        once, and each apply returns the count it made
 *   drops_errno_or_value drops, delays and duplicates together: every
 *                        write, read and fetch-and-add either succeeds
 *                        with the right value or fails with -ETIMEDOUT,
 *                        and what a failed call did is one of the two
 *                        outcomes it could have had, never a third
 */
#include "odsm_faults.h"
#include "under_fire.h"

/* ODSM_FAULT_ONLY=a,b runs only these tests (by hand: the harness here
 * has no filter of its own)
 */
static int f_skipped(const char *name)
{
	const char *only = getenv("ODSM_FAULT_ONLY"), *dot = strchr(name, '.');

	return only && *only && !strstr(only, dot ? dot + 1 : name);
}

#define FAULT_BEGIN() do { \
	if (!getenv("ODSM_FAULTS")) \
		SKIP(return, "no ODSM_FAULTS: the injector stays off"); \
	if (f_skipped(_metadata->name)) \
		SKIP(return, "not in ODSM_FAULT_ONLY"); \
	C_BEGIN(); \
} while (0)

FIXTURE(fl)
{
	int unused;
};

FIXTURE_SETUP(fl)
{
}

/* whatever happened, this node's injector is off when a test ends */
FIXTURE_TEARDOWN(fl)
{
	f_faults(0, 0, 0, F_ALL, 1);
}

/* phases of f_barrier: each test's, in order */
enum { P_REPLAY = 10, P_DELEG = 15, P_FIRE = 20, P_DROPS = 30 };

static unsigned int neighbour(void)
{
	return (C.self + 1) % C.nodes;
}

TEST_F_TIMEOUT(fl, replay_served_once, 300)
{
	uint64_t allocs, bad_frees, dup_req, dups, v, old, cg;
	unsigned int nb, i;

	FAULT_BEGIN();
	nb = neighbour();
	ASSERT_EQ(0, f_barrier(P_REPLAY, -1, 120));
	allocs = c_stat("allocs");
	bad_frees = c_stat("bad_frees");
	dup_req = c_stat("dup_requests");
	dups = c_stat("fault_dups");
	ASSERT_EQ(0, f_barrier(P_REPLAY + 1, -1, 120));
	/* every request of these kinds goes out twice, the second late */
	ASSERT_EQ(0, f_faults(0, 0, 1000, 1U << F_ATOMIC | 1U << F_ALLOC |
			      1U << F_FREE, 12));
	for (i = 0; i < 40; i++) {
		/* only this node adds to its neighbour's word */
		EXPECT_EQ(0, odsm_fetch_add(c_word(nb, W_F_COUNT), 1, &old));
		EXPECT_EQ((uint64_t)i, old) TH_LOG("add %u saw %" PRIu64 ": a replay was applied", i, old);
	}
	for (i = 0; i < 10; i++) {
		ASSERT_EQ(0, odsm_alloc_on(nb, 100, 0, 0, &cg));
		EXPECT_EQ(0, odsm_free(cg));
	}
	EXPECT_LE(dups + 60ULL, c_stat("fault_dups"));
	ASSERT_EQ(0, f_faults(0, 0, 0, F_ALL, 1));
	ASSERT_EQ(0, f_barrier(P_REPLAY + 2, -1, 120));

	/* what the previous node did here: applied once each */
	ASSERT_EQ(0, c_get(C.self, W_F_COUNT, &v));
	EXPECT_EQ(40ULL, v);
	EXPECT_EQ(allocs + 10ULL, c_stat("allocs"));
	EXPECT_EQ(bad_frees, c_stat("bad_frees"));
	EXPECT_LE(dup_req + 60ULL, c_stat("dup_requests"));
	TH_LOG("node %u: dup_requests +%" PRIu64, C.self,
	       c_stat("dup_requests") - dup_req);
}

/* ---- delegation ------------------------------------------------------ */

#define D_SYNC		20	/* applies, one batch each */
#define D_THEN		40	/* apply_then, batched */

static int d_inc(void *obj, const void *arg, size_t len, void *ret,
		 size_t *rl)
{
	uint64_t *c = obj;

	if (*rl < sizeof(*c))
		return -EINVAL;
	*c += 1;
	memcpy(ret, c, sizeof(*c));
	*rl = sizeof(*c);
	return 0;
}

static uint64_t d_seen[D_THEN];
static int d_then_bad;

static void d_done(void *cookie, int st, const void *ret, size_t len)
{
	uintptr_t i = (uintptr_t)cookie;

	if (st || len != 8 || i >= D_THEN)
		d_then_bad++;
	else
		memcpy(&d_seen[i], ret, 8);
}

/*
 * Every DELEG request and every answer sent twice, the second late: the
 * home's replay window serves a batch once, its caller takes the first
 * answer.  Only this node increments its neighbour's counter, so the
 * applies return 1 .. D_SYNC + D_THEN in order, none skipped.
 */
TEST_F_TIMEOUT(fl, deleg_served_once, 300)
{
	struct odsm_deleg_config cfg = { .trustees = 1, .clients = 8 };
	uint64_t dup_req, dups, *ctr, v, w, arena, op;
	struct odsm_deleg_arena a;
	struct odsm_deleg *d = NULL, *rd;
	odsm_trust mine, nb;
	size_t l;
	odsm_box b;
	unsigned int i;

	FAULT_BEGIN();
	ASSERT_EQ(0, odsm_deleg_register("fl.inc", d_inc, &op));
	ASSERT_EQ(0, odsm_deleg_arena_heap(&a, odsm_deleg_arena_size(&cfg)));
	ASSERT_EQ(0, odsm_deleg_start(&a, &cfg, &d));
	ASSERT_EQ(0, odsm_deleg_gateway_status(d));
	ASSERT_EQ(0, odsm_box_new(&b, 8, ODSM_ALLOC_ZERO));
	ctr = odsm_ptr(b.g);
	ASSERT_EQ(0, odsm_deleg_entrust(d, 0, &b, 0, &mine));
	ASSERT_EQ(0, c_put(C.self, W_F_DCTR,
			   mine.cell | (uint64_t)mine.gen << 32));
	ASSERT_EQ(0, c_put(C.self, W_F_DRT, mine.arena));
	ASSERT_EQ(0, f_barrier(P_DELEG, -1, 120));
	ASSERT_EQ(0, c_get(neighbour(), W_F_DRT, &arena));
	ASSERT_EQ(0, c_get(neighbour(), W_F_DCTR, &w));
	nb.arena = arena;
	nb.cell = (uint32_t)w;
	nb.gen = (uint32_t)(w >> 32);
	dup_req = c_stat("dup_requests");
	dups = c_stat("fault_dups");
	ASSERT_EQ(0, f_faults(0, 300, 1000, 1U << F_DELEG |
			      1U << F_DELEG_REPLY, 15 + C.self));
	for (i = 1; i <= D_SYNC; i++) {
		l = sizeof(v);
		EXPECT_EQ(0, odsm_deleg_apply(&nb, op, NULL, 0, &v, &l));
		EXPECT_EQ((uint64_t)i, v) TH_LOG("apply %u counted %" PRIu64 ": a batch served twice?", i, v);
	}
	d_then_bad = 0;
	for (i = 0; i < D_THEN; i++)
		EXPECT_EQ(0, odsm_deleg_apply_then(&nb, op, NULL, 0, NULL, 8,
						   d_done, (void *)(uintptr_t)i,
						   NULL, 0));
	rd = NULL;
	ASSERT_EQ(0, odsm_deleg_at(nb.arena, &rd));
	EXPECT_EQ(0, odsm_deleg_drain(rd));
	EXPECT_EQ(0, d_then_bad);
	for (i = 0; i < D_THEN; i++)
		EXPECT_EQ((uint64_t)D_SYNC + 1 + i, d_seen[i]);
	EXPECT_LE(dups + D_SYNC, c_stat("fault_dups"));
	ASSERT_EQ(0, f_faults(0, 0, 0, F_ALL, 1));
	ASSERT_EQ(0, f_barrier(P_DELEG + 1, -1, 120));

	/* the previous node's applies here: each served once */
	EXPECT_EQ((uint64_t)(D_SYNC + D_THEN), *ctr);
	EXPECT_LE(dup_req + D_SYNC, c_stat("dup_requests"));
	TH_LOG("node %u: dup_requests +%" PRIu64 ", fault_dups +%" PRIu64,
	       C.self, c_stat("dup_requests") - dup_req,
	       c_stat("fault_dups") - dups);
	EXPECT_EQ(0, odsm_trust_drop(&mine));
	odsm_deleg_stop(d);
	EXPECT_EQ(0, odsm_deleg_arena_heap_free(&a));
}

static struct fire fire = {
	.name = "under_fire_faulted",
	.nr_obj = 4,
	.writes = 8,		/* per node */
	.reads = 10,		/* per reader thread */
	.readers = 2,		/* per node */
};

TEST_F_TIMEOUT(fl, under_fire_faulted, 600)
{
	uint64_t delays, dups;
	int64_t sum;

	FAULT_BEGIN();
	ASSERT_EQ(0, f_barrier(P_FIRE, -1, 120));
	if (C.self == 0)
		ASSERT_EQ(0, fire_setup(&fire, W_F_FIRE));
	ASSERT_EQ(0, f_barrier(P_FIRE + 1, -1, 120));
	ASSERT_EQ(0, fire_attach(&fire, W_F_FIRE));
	delays = c_stat("fault_delays");
	dups = c_stat("fault_dups");
	/* no drops here: the fire's locks are compare-and-swaps, which a
	 * lost reply would leave taken (drops_errno_or_value has drops)
	 */
	ASSERT_EQ(0, f_faults(0, 150, 150, F_ALL, 100 + C.self));
	EXPECT_EQ(0, fire_run(&fire, 2000 * (C.self + 1)));
	ASSERT_EQ(0, f_faults(0, 0, 0, F_ALL, 1));
	/* node 0 holds the table, the locks and the objects' first home:
	 * it may send nothing at all; the others must have been hit
	 */
	if (C.self) {
		EXPECT_LT(delays, c_stat("fault_delays"));
		EXPECT_LT(dups, c_stat("fault_dups"));
	}
	TH_LOG("node %u: fault_delays +%" PRIu64 " fault_dups +%" PRIu64 " dup_requests %" PRIu64,
	       C.self, c_stat("fault_delays") - delays,
	       c_stat("fault_dups") - dups, c_stat("dup_requests"));
	ASSERT_EQ(0, f_barrier(P_FIRE + 2, -1, 600));
	if (C.self == 0) {
		sum = fire_versions(&fire);
		EXPECT_EQ((int64_t)fire_total_writes(&fire), sum);
	}
}

/* a value this node writes: its id, and the write's number */
#define WVAL(i)		((uint64_t)(C.self + 1) << 32 | (i))

TEST_F_TIMEOUT(fl, drops_errno_or_value, 600)
{
	uint64_t word, add, got, old, last_old = 0, drops;
	unsigned int i, acked = 0, pending_lo = 0, pending_hi = 0;
	unsigned int adds_ok = 0, adds_unknown = 0, failed = 0, prev;
	uint64_t ok, unknown;
	int ret;

	FAULT_BEGIN();
	word = c_word(neighbour(), W_F_WORD);
	add = c_word(neighbour(), W_F_ADD);
	ASSERT_EQ(0, f_barrier(P_DROPS, -1, 120));
	drops = c_stat("fault_drops");
	ASSERT_EQ(0, f_faults(25, 100, 100, F_ALL, 300 + C.self));
	for (i = 1; i <= 25; i++) {
		/*
		 * Writes 1..acked are known done; pending_lo..pending_hi
		 * failed after acked and may or may not have been applied
		 * (a lost request was not, a lost reply was).  Only this
		 * node writes the word.
		 */
		ret = odsm_write(word, &(uint64_t){ WVAL(i) }, 8);
		if (!ret) {
			acked = i;
			pending_lo = pending_hi = 0;
		} else {
			EXPECT_TRUE(c_is_down_err(ret)) TH_LOG("%d", ret);
			failed++;
			if (!pending_lo)
				pending_lo = i;
			pending_hi = i;
		}
		ret = odsm_read(word, &got, 8);
		if (ret) {
			EXPECT_TRUE(c_is_down_err(ret)) TH_LOG("%d", ret);
			failed++;
			continue;
		}
		if (got == WVAL(acked) && acked)
			continue;
		if (pending_lo && got >= WVAL(pending_lo) &&
		    got <= WVAL(pending_hi)) {
			/* a failed write that was applied: now known */
			acked = (unsigned int)(got & 0xffffffff);
			pending_lo = acked < pending_hi ? acked + 1 : 0;
			pending_hi = pending_lo ? pending_hi : 0;
			continue;
		}
		if (!acked && !got)
			continue;	/* nothing applied yet */
		EXPECT_EQ(WVAL(acked), got) {
			TH_LOG("write %u: read %#" PRIx64 ", last known %u, unknown %u..%u",
			       i, got, acked, pending_lo, pending_hi);
		}
	}
	for (i = 0; i < 25; i++) {
		ret = odsm_fetch_add(add, 1, &old);
		if (ret) {
			EXPECT_TRUE(c_is_down_err(ret)) TH_LOG("%d", ret);
			adds_unknown++;
			continue;
		}
		/* the olds only grow: no add is applied twice or undone */
		if (adds_ok)
			EXPECT_LT(last_old, old);
		last_old = old;
		adds_ok++;
	}
	ASSERT_EQ(0, f_faults(0, 0, 0, F_ALL, 1));
	EXPECT_GE(c_stat("fault_drops"), drops);
	TH_LOG("node %u: %u writes/reads and %u adds failed with -ETIMEDOUT, fault_drops +%" PRIu64,
	       C.self, failed, adds_unknown, c_stat("fault_drops") - drops);
	/* publish what this node knows of its adds (local words) */
	ASSERT_EQ(0, c_put(C.self, W_F_ADDS_OK, adds_ok));
	ASSERT_EQ(0, c_put(C.self, W_F_ADDS_UNKNOWN, adds_unknown));
	ASSERT_EQ(0, f_barrier(P_DROPS + 1, -1, 300));
	/* the previous node's adds here: each applied at most once, every
	 * acknowledged one applied
	 */
	prev = (C.self + C.nodes - 1) % C.nodes;
	ASSERT_EQ(0, c_get(prev, W_F_ADDS_OK, &ok));
	ASSERT_EQ(0, c_get(prev, W_F_ADDS_UNKNOWN, &unknown));
	ASSERT_EQ(0, c_get(C.self, W_F_ADD, &got));
	EXPECT_LE(ok, got);
	EXPECT_GE(ok + unknown, got);
	TH_LOG("node %u: %" PRIu64 " adds here, %" PRIu64 " acknowledged, %" PRIu64 " unknown",
	       C.self, got, ok, unknown);
	ASSERT_EQ(0, f_barrier(P_DROPS + 2, -1, 120));
}

TEST_HARNESS_MAIN
