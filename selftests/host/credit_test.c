// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of kmod/odsm_credit.h, the RDMA transport's flow control:
 * a message leaves the last credit for returning credits, senders take
 * credits in the order they came, owed credits ride along, a peer cannot
 * return more than it was given, a connection is stalled only when
 * nothing moved for the whole limit (jiffies wrapping included) and no
 * credit waits for its taker, and two nodes sending to each other at
 * random never wedge.
 */
#include <limits.h>
#include <stdbool.h>
#include "odsm_credit.h"

#include "ksft_host.h"

#define RECVS	16
#define SLOTS	32
#define BATCH	8

TEST(last_credit_is_for_returns)
{
	struct odsm_credit k;
	u32 imm = 99, i;

	odsm_credit_init(&k, RECVS, SLOTS, 0);
	for (i = 0; i < RECVS - 1; i++)
		ASSERT_TRUE(odsm_credit_take_msg(&k, odsm_credit_ticket(&k), &imm));
	ASSERT_EQ(1U, k.credits);
	ASSERT_FALSE(odsm_credit_take_msg(&k, odsm_credit_ticket(&k), &imm));
	for (i = 0; i < BATCH - 1; i++)
		odsm_credit_owe(&k);
	ASSERT_FALSE(odsm_credit_take_return(&k, BATCH, &imm));
	odsm_credit_owe(&k);
	ASSERT_TRUE(odsm_credit_take_return(&k, BATCH, &imm));
	ASSERT_EQ((u32)BATCH, imm);
	ASSERT_EQ(0U, k.credits);
	ASSERT_EQ(0U, k.owed);
	/* nothing left: no return either */
	odsm_credit_owe(&k);
	ASSERT_FALSE(odsm_credit_take_return(&k, 1, &imm));
}

TEST(senders_take_turns_in_order)
{
	struct odsm_credit k;
	u32 a, b, c, imm;

	odsm_credit_init(&k, RECVS, SLOTS, 0);
	a = odsm_credit_ticket(&k);
	b = odsm_credit_ticket(&k);
	c = odsm_credit_ticket(&k);
	/* credits enough for all, but not before their turn */
	ASSERT_FALSE(odsm_credit_take_msg(&k, b, &imm));
	ASSERT_FALSE(odsm_credit_take_msg(&k, c, &imm));
	ASSERT_EQ((u32)RECVS, k.credits);
	ASSERT_TRUE(odsm_credit_take_msg(&k, a, &imm));
	ASSERT_TRUE(odsm_credit_queued(&k));
	ASSERT_FALSE(odsm_credit_take_msg(&k, c, &imm));
	ASSERT_TRUE(odsm_credit_take_msg(&k, b, &imm));
	ASSERT_TRUE(odsm_credit_take_msg(&k, c, &imm));
	ASSERT_FALSE(odsm_credit_queued(&k));
	/* a turn taken is not taken twice */
	ASSERT_FALSE(odsm_credit_take_msg(&k, c, &imm));
}

TEST(turn_waits_for_credits_and_slots)
{
	struct odsm_credit k;
	u32 t, imm;

	odsm_credit_init(&k, 2, 1, 0);
	ASSERT_TRUE(odsm_credit_take_msg(&k, odsm_credit_ticket(&k), &imm));
	t = odsm_credit_ticket(&k);
	ASSERT_FALSE(odsm_credit_take_msg(&k, t, &imm));	/* 1 credit */
	ASSERT_TRUE(odsm_credit_returned(&k, 1, 2, 5));
	ASSERT_FALSE(odsm_credit_take_msg(&k, t, &imm));	/* no slot */
	odsm_credit_sent(&k, 6);
	ASSERT_TRUE(odsm_credit_take_msg(&k, t, &imm));
}

TEST(owed_credits_ride_along)
{
	struct odsm_credit k;
	u32 imm = 99;

	odsm_credit_init(&k, RECVS, SLOTS, 0);
	ASSERT_TRUE(odsm_credit_take_msg(&k, odsm_credit_ticket(&k), &imm));
	ASSERT_EQ(0U, imm);
	odsm_credit_owe(&k);
	odsm_credit_owe(&k);
	odsm_credit_owe(&k);
	ASSERT_TRUE(odsm_credit_take_msg(&k, odsm_credit_ticket(&k), &imm));
	ASSERT_EQ(3U, imm);
	ASSERT_EQ(0U, k.owed);
}

TEST(no_more_back_than_given)
{
	struct odsm_credit k;
	u32 imm;

	odsm_credit_init(&k, RECVS, SLOTS, 0);
	ASSERT_FALSE(odsm_credit_returned(&k, 1, RECVS, 1));
	ASSERT_EQ((u32)RECVS, k.credits);
	ASSERT_TRUE(odsm_credit_take_msg(&k, odsm_credit_ticket(&k), &imm));
	ASSERT_TRUE(odsm_credit_take_msg(&k, odsm_credit_ticket(&k), &imm));
	ASSERT_FALSE(odsm_credit_returned(&k, 3, RECVS, 1));
	ASSERT_FALSE(odsm_credit_returned(&k, UINT_MAX, RECVS, 1));
	ASSERT_TRUE(odsm_credit_returned(&k, 2, RECVS, 1));
	ASSERT_EQ((u32)RECVS, k.credits);
	/* none returned is no news: it moves nothing */
	ASSERT_TRUE(odsm_credit_returned(&k, 0, RECVS, 50));
	ASSERT_EQ(1UL, k.moved);
}

TEST(stalled_only_when_nothing_moved)
{
	struct odsm_credit k;
	u32 imm;

	/* two credits: one message, then a credit-only SEND takes the last */
	odsm_credit_init(&k, 2, SLOTS, 1000);
	ASSERT_TRUE(odsm_credit_take_msg(&k, odsm_credit_ticket(&k), &imm));
	ASSERT_TRUE(odsm_credit_take_return(&k, 0, &imm));
	ASSERT_EQ(0U, k.credits);
	ASSERT_FALSE(odsm_credit_stalled(&k, 1499, 500));
	ASSERT_TRUE(odsm_credit_stalled(&k, 1500, 500));
	/* a credit back at 1450 (still one short of a message): a waiter
	 * since 1000 is not stalled at 1900
	 */
	ASSERT_TRUE(odsm_credit_returned(&k, 1, 2, 1450));
	ASSERT_FALSE(odsm_credit_stalled(&k, 1900, 500));
	ASSERT_TRUE(odsm_credit_stalled(&k, 1950, 500));
	/* a SEND completed at 1950 */
	odsm_credit_sent(&k, 1950);
	ASSERT_FALSE(odsm_credit_stalled(&k, 2449, 500));
	ASSERT_TRUE(odsm_credit_stalled(&k, 2450, 500));
}

TEST(a_credit_waiting_for_its_taker_is_no_stall)
{
	struct odsm_credit k;
	u32 imm, i;

	odsm_credit_init(&k, RECVS, SLOTS, 0);
	/* nothing moved for long, but the next turn could take a credit */
	ASSERT_FALSE(odsm_credit_stalled(&k, 10000, 500));
	for (i = 0; i < RECVS - 1; i++)
		ASSERT_TRUE(odsm_credit_take_msg(&k, odsm_credit_ticket(&k), &imm));
	ASSERT_TRUE(odsm_credit_stalled(&k, 10000, 500));
	/* a credit back: the deadline moves with it */
	ASSERT_TRUE(odsm_credit_returned(&k, 1, RECVS, 10000));
	ASSERT_EQ(10500UL, odsm_credit_deadline(&k, 500));
	ASSERT_FALSE(odsm_credit_stalled(&k, 10000, 500));
	/* no send slot either: nothing can go, stalled once the limit passed */
	k.sq_free = 0;
	ASSERT_FALSE(odsm_credit_stalled(&k, 10499, 500));
	ASSERT_TRUE(odsm_credit_stalled(&k, 10500, 500));
}

TEST(stalled_across_the_tick_wrapping)
{
	struct odsm_credit k;

	odsm_credit_init(&k, 0, SLOTS, ULONG_MAX - 10);
	ASSERT_FALSE(odsm_credit_stalled(&k, ULONG_MAX, 500));
	ASSERT_FALSE(odsm_credit_stalled(&k, 488, 500));	/* 499 later */
	ASSERT_TRUE(odsm_credit_stalled(&k, 489, 500));
	ASSERT_EQ(489UL, odsm_credit_deadline(&k, 500));
}

/*
 * Two nodes, each with SENDERS threads sending MSGS messages to the other
 * at random moments, the wire delivering in order at random moments: every
 * message arrives, the credits add up at every step, the takes on each
 * node follow the tickets, and at no step is nothing able to move while
 * messages are still to go (the last credit always returns credits).
 */
#define SENDERS	6
#define MSGS	40
#define WIRE	(RECVS + 8)

struct node {
	struct odsm_credit k;
	u32 ticket[SENDERS];	/* the sender's ticket while it waits */
	bool waiting[SENDERS];
	int left[SENDERS];	/* messages still to send */
	u32 last_turn;		/* turns seen taken, in order */
	/* the wire to the peer: each SEND, with the credits it returns */
	struct { u32 imm; bool msg; } wire[WIRE];
	int head, tail, inflight;
	u32 delivered;
};

static u32 rnd(u32 *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

/* one step of node n toward peer p; true: something happened */
static bool step(struct node *n, struct node *p, u32 *seed,
		 struct __test_metadata *_metadata)
{
	int i = rnd(seed) % (SENDERS + 2);
	u32 imm;

	if (i < SENDERS) {
		if (!n->left[i])
			return false;
		if (!n->waiting[i]) {
			n->ticket[i] = odsm_credit_ticket(&n->k);
			n->waiting[i] = true;
		}
		if (!odsm_credit_take_msg(&n->k, n->ticket[i], &imm))
			return false;
		/* the turns are taken in ticket order */
		EXPECT_EQ(n->last_turn, n->ticket[i]);
		n->last_turn++;
		n->waiting[i] = false;
		n->left[i]--;
		EXPECT_LT(n->inflight, WIRE);
		n->wire[n->tail].imm = imm;
		n->wire[n->tail].msg = true;
		n->tail = (n->tail + 1) % WIRE;
		n->inflight++;
		return true;
	}
	if (i == SENDERS) {
		/* the peer receives one SEND, reposts, takes its credits */
		if (!n->inflight)
			return false;
		imm = n->wire[n->head].imm;
		n->delivered += n->wire[n->head].msg;
		n->head = (n->head + 1) % WIRE;
		n->inflight--;
		EXPECT_TRUE(odsm_credit_returned(&p->k, imm, RECVS, 0));
		odsm_credit_owe(&p->k);
		odsm_credit_sent(&n->k, 0);	/* completes at once */
		/* and, from its CQ handler, a credit-only SEND */
		if (odsm_credit_take_return(&p->k, BATCH, &imm)) {
			EXPECT_LT(p->inflight, WIRE);
			p->wire[p->tail].imm = imm;
			p->wire[p->tail].msg = false;
			p->tail = (p->tail + 1) % WIRE;
			p->inflight++;
		}
		return true;
	}
	return false;
}

/* credits in the peer's hands + in flight + owed back = all RECVS */
static u32 in_flight_credits(const struct node *n)
{
	u32 c = 0;
	int i, j = n->head;

	for (i = 0; i < n->inflight; i++, j = (j + 1) % WIRE)
		c += n->wire[j].imm;
	return c;
}

TEST(two_nodes_never_wedge)
{
	u32 seed;

	for (seed = 1; seed <= 200; seed++) {
		struct node a = { 0 }, b = { 0 };
		u32 s = seed, idle = 0;
		int i;

		odsm_credit_init(&a.k, RECVS, SLOTS, 0);
		odsm_credit_init(&b.k, RECVS, SLOTS, 0);
		for (i = 0; i < SENDERS; i++)
			a.left[i] = b.left[i] = MSGS;
		while (a.delivered < SENDERS * MSGS ||
		       b.delivered < SENDERS * MSGS) {
			bool moved = rnd(&s) & 1 ? step(&a, &b, &s, _metadata) :
					    step(&b, &a, &s, _metadata);

			/* each node's RECVS credits are all accounted for:
			 * held, spent on SENDs on the wire, owed by the
			 * peer, or on their way back
			 */
			ASSERT_EQ((u32)RECVS, a.k.credits + a.inflight +
				  b.k.owed + in_flight_credits(&b));
			ASSERT_EQ((u32)RECVS, b.k.credits + b.inflight +
				  a.k.owed + in_flight_credits(&a));
			idle = moved ? 0 : idle + 1;
			ASSERT_LT(idle, 100000U);
		}
		ASSERT_EQ((u32)(SENDERS * MSGS), a.delivered);
		ASSERT_EQ((u32)(SENDERS * MSGS), b.delivered);
	}
}

TEST_HARNESS_MAIN
