// SPDX-License-Identifier: GPL-2.0
/*
 * A node powered off in the middle of moves: the failure contract
 * (Documentation/odsm/design.rst, "The failure contract").  Run with
 * ODSM_MOVEDOWN=K on every node of a cluster of 3 or more (scenario
 * cluster-faults with rig.down=K), which powers node K off a few seconds
 * into the program; every test SKIPs without it.
 *
 * Node 0 keeps a table of owner boxes (its partition), whose turn it is to
 * move each object and the last version each was written back with.
 * Objects travel between pairs of nodes: {0, K}, {1, K} and, as a control
 * the dead node has no part in, {0, 1}; K also takes a few objects of its
 * own once and keeps them (lost with it, for sure).  The node whose turn it is takes
 * the object with a mutable borrow through its box (odsm_borrow_mut_at:
 * the object moves to it), checks it, bumps its version, returns it (the
 * box at node 0 learns the new address), publishes the version and hands
 * the turn over.  Node K holds each borrow for a while, so that it powers
 * off most likely holding one.
 *
 * When the survivors have seen K down, they check, for every object:
 *   - its box names exactly one instance: a live object at a survivor,
 *     whole, of the last version written back -- or an address of K's
 *     partition, which the survivors are refused with -EHOSTDOWN (lost
 *     with K, and said so);
 *   - never neither: a box naming a survivor's address names a live
 *     object (not -ESTALE: an original freed while its box still names
 *     it);
 *   - never both: each survivor holds exactly the objects the boxes name
 *     there, plus at most one original that K's move in flight had not
 *     yet freed (an instance no box names: memory lost at its home, never
 *     reachable through the owner);
 *   - only objects K had a part in are lost; the control pair moved on.
 */
#include "odsm_faults.h"
#include "under_fire.h"

#define MD_OBJ		16
#define MD_HOLD_MS	150	/* node K holds each borrow this long */

FIXTURE(md)
{
	int unused;
};

FIXTURE_SETUP(md)
{
}

FIXTURE_TEARDOWN(md)
{
}

enum { P_MD = 50 };

static unsigned int d;	/* the node that dies */

/* the kinds of objects: travelling between {0, K}, {1, K}, {0, 1} (the
 * control), and K's own: K takes them once and keeps them
 */
enum { K_0D, K_1D, K_CTL, K_OWN, K_NR };

/* the pair of nodes object j travels between: a moves it first, from b */
static void pair(unsigned int j, unsigned int *a, unsigned int *b)
{
	switch (j % K_NR) {
	case K_0D:
		*a = 0;
		*b = d;
		break;
	case K_1D:
		*a = 1;
		*b = d;
		break;
	case K_CTL:
		*a = 0;
		*b = 1;
		break;
	default:
		*a = d;
		*b = (j / K_NR) % 2;
		break;
	}
}

static uint64_t table, turn, ver;

static int node_of(uint64_t g)
{
	uint64_t a = odsm_addr_of(g);

	if (a < C.in.heap_base)
		return -1;
	return (int)((a - C.in.heap_base) / C.in.part_size);
}

/* Node 0: the table, the turns, the versions; the objects at their b. */
static int mv_setup(void)
{
	static struct fire_obj init;
	unsigned int j, a, b;
	odsm_box *tab = NULL;
	uint64_t *tu, *ve;
	int ret;

	ret = odsm_alloc(16 * MD_OBJ, 16, ODSM_ALLOC_ZERO, &table);
	ret = ret ?: odsm_alloc(8 * MD_OBJ, 8, ODSM_ALLOC_ZERO, &turn);
	ret = ret ?: odsm_alloc(8 * MD_OBJ, 8, ODSM_ALLOC_ZERO, &ver);
	if (ret)
		return ret;
	tab = odsm_ptr(table);
	tu = odsm_ptr(turn);
	ve = odsm_ptr(ver);
	for (j = 0; j < MD_OBJ; j++) {
		pair(j, &a, &b);
		fire_fill(&init, (uint64_t)j << 32);
		ret = odsm_box_new_on(&tab[j], b, sizeof(init), 0, &init);
		if (ret)
			return ret;
		tab[j].ext = 0;
		tu[j] = a;	/* a takes it first, from b */
		ve[j] = (uint64_t)j << 32;
	}
	ret = c_put(0, W_MD_TABLE, odsm_addr_of(table));
	ret = ret ?: c_put(0, W_MD_TURN, odsm_addr_of(turn));
	ret = ret ?: c_put(0, W_MD_VER, odsm_addr_of(ver));
	return ret;
}

static int mv_attach(void)
{
	int ret = c_get(0, W_MD_TABLE, &table);

	ret = ret ?: c_get(0, W_MD_TURN, &turn);
	ret = ret ?: c_get(0, W_MD_VER, &ver);
	table = odsm_addr_of(table);
	turn = odsm_addr_of(turn);
	ver = odsm_addr_of(ver);
	return ret;
}

/*
 * One move of object j by this node: 0, a down-node error (the object is
 * out of reach), or 1 after logging a contract failure.
 */
static int mv_move(struct __test_metadata *_metadata, unsigned int j,
		   unsigned int other)
{
	uint64_t v, next;
	struct fire_obj *o;
	unsigned int tries;
	odsm_mut m;
	void *w;
	int ret;

	ret = odsm_read(ver + 8 * j, &v, 8);
	if (ret)
		return ret;
	ret = odsm_borrow_mut_at(table + 16 * j, &m, &w);
	if (ret) {
		if (c_is_down_err(ret))
			return ret;
		TH_LOG("object %u: borrow_mut_at: %s", j, odsm_strerror(ret));
		return 1;
	}
	o = w;
	if (o->sum != fire_sum(o) || o->version != v) {
		TH_LOG("object %u: version %#" PRIx64 " (want %#" PRIx64 "), %s",
		       j, o->version, v,
		       o->sum == fire_sum(o) ? "whole" : "torn");
		ret = 1;
	}
	next = v + 1;
	fire_fill(o, next);
	if (C.self == d)
		c_sleep_ms(MD_HOLD_MS);
	/* a failed write-back leaves the borrow out: try again */
	for (tries = 0; tries < 5; tries++) {
		ret = odsm_return_mut(&m);
		if (!ret)
			break;
		TH_LOG("object %u: return_mut: %s", j, odsm_strerror(ret));
	}
	if (ret)
		return c_is_down_err(ret) ? ret : 1;
	ret = odsm_write(ver + 8 * j, &next, 8);
	ret = ret ?: odsm_write(turn + 8 * j, &(uint64_t){ other }, 8);
	return ret;
}

TEST_F_TIMEOUT(md, power_off_mid_moves, 300)
{
	uint64_t base, now_objs, t, seen_down = 0, end, g, v, nmoves = 0;
	unsigned int j, a, b, state[ODSM_MAX_NODES], init = 0, final = 0;
	unsigned int lost = 0, failures = 0, ctl_moves = 0;
	bool done[MD_OBJ] = { false };
	struct odsm_obj_info oi;
	struct fire_obj got;
	odsm_box *tab = NULL;
	int ret, extra;

	if (!getenv("ODSM_MOVEDOWN"))
		SKIP(return, "no ODSM_MOVEDOWN: no node powers off");
	C_BEGIN();
	d = c_env_uint("ODSM_MOVEDOWN", 0);
	ASSERT_LE(3U, C.nodes);
	ASSERT_NE(0U, d);
	ASSERT_NE(1U, d);
	ASSERT_GT(C.nodes, d);
	if (C.self == 0)
		ASSERT_EQ(0, mv_setup());
	ASSERT_EQ(0, f_barrier(P_MD, -1, 120));
	ASSERT_EQ(0, mv_attach());
	for (j = 0; j < MD_OBJ; j++) {
		pair(j, &a, &b);
		init += b == C.self;
	}
	base = c_stat("objects_in_use");
	ASSERT_EQ(0, f_barrier(P_MD + 1, -1, 120));

	/* move until K is gone (K: until it is powered off) */
	end = c_now_ms() + (C.self == d ? 200000 : 120000);
	while (c_now_ms() < end) {
		bool idle = true;

		for (j = 0; j < MD_OBJ; j++) {
			pair(j, &a, &b);
			if (done[j] || (C.self != a && C.self != b))
				continue;
			if (odsm_read(turn + 8 * j, &t, 8) ||
			    t != C.self)
				continue;
			/* the turn goes to the other of the pair; K keeps
			 * its own
			 */
			ret = mv_move(_metadata, j, j % K_NR == K_OWN ? d :
				      C.self == a ? b : a);
			idle = false;
			if (ret == 1) {
				failures++;
				done[j] = true;
			} else if (ret) {
				/* K is gone: this object is out of reach */
				done[j] = true;
			} else {
				nmoves++;
				ctl_moves += j % K_NR == K_CTL;
				/* K keeps its own: one move each */
				done[j] = j % K_NR == K_OWN;
			}
		}
		if (C.self != d && !seen_down) {
			if (!c_states(state, C.nodes) &&
			    state[d] == ODSM_PEER_DOWN)
				seen_down = c_now_ms();
		}
		/* a few more rounds of the control pair after K went */
		if (seen_down && c_now_ms() > seen_down + 3000)
			break;
		if (idle)
			c_sleep_ms(10);
	}
	EXPECT_EQ(0U, failures);
	ASSERT_NE(0ULL, seen_down) TH_LOG("node %u never went down", d);
	TH_LOG("node %u: %" PRIu64 " moves (%u of the control pair) before and after node %u went",
	       C.self, nmoves, ctl_moves, d);
	EXPECT_LT(0U, ctl_moves);
	/* the survivors stop; the frees of their last moves land */
	ASSERT_EQ(0, f_barrier(P_MD + 2, (int)d, 120));
	c_sleep_ms(1000);
	ASSERT_EQ(0, f_barrier(P_MD + 3, (int)d, 120));

	/* every object: one instance, named by its box (node 0's table) */
	if (C.self == 0)
		tab = odsm_ptr(table);
	for (j = 0; j < MD_OBJ; j++) {
		odsm_box bx;

		pair(j, &a, &b);
		ASSERT_EQ(0, odsm_read(table + 16 * j, &bx, sizeof(bx)));
		g = bx.g;
		if (C.self == 0)
			ASSERT_EQ(g, tab[j].g);
		ASSERT_EQ(0, odsm_read(ver + 8 * j, &v, 8));
		if (node_of(g) == (int)d) {
			/* lost with K, and said so at once */
			if (C.self == 0) {
				ret = odsm_read(g, &got, 8);
				EXPECT_EQ(-EHOSTDOWN, ret) TH_LOG("object %u at node %u", j, d);
				EXPECT_NE((unsigned int)K_CTL, j % K_NR) TH_LOG("control object %u lost", j);
				lost++;
			}
			continue;
		}
		/* K took its own before it went (8 s: plenty of time) */
		if (C.self == 0)
			EXPECT_NE((unsigned int)K_OWN, j % K_NR) {
				TH_LOG("object %u: node %u never took it", j, d);
			}
		if (node_of(g) != (int)C.self)
			continue;
		final++;
		/* never neither: the instance the box names lives */
		ret = odsm_obj_info(g, &oi);
		EXPECT_EQ(0, ret) {
			TH_LOG("object %u: its box names 0x%" PRIx64 " here, which is %s: neither old nor new home",
			       j, g, odsm_strerror(ret));
			continue;
		}
		memcpy(&got, odsm_ptr(g), sizeof(got));
		EXPECT_EQ(got.sum, fire_sum(&got)) TH_LOG("object %u torn", j);
		EXPECT_EQ(v, got.version) TH_LOG("object %u: version", j);
	}
	/* never both: this node holds what boxes name here, and at most the
	 * original of K's one move in flight
	 */
	now_objs = c_stat("objects_in_use");
	extra = (int)((int64_t)now_objs - (int64_t)(base - init + final));
	TH_LOG("node %u: %u objects named here (%u at the start), %d more; %u lost with node %u",
	       C.self, final, init, extra, lost, d);
	EXPECT_LE(0, extra);
	EXPECT_GE(1, extra);
	/* what K took is lost with it, and said so (above) */
	if (C.self == 0)
		EXPECT_LE((unsigned int)(MD_OBJ / K_NR), lost);
	ASSERT_EQ(0, f_barrier(P_MD + 4, (int)d, 120));
}

TEST_HARNESS_MAIN
