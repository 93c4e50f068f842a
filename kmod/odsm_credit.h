/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The RDMA transport's flow control by credits (odsm_rdma.c, "Flow
 * control by credits"), as pure logic: the caller holds the lock that
 * guards the struct and does the waiting and the posting.
 *
 * A sender holds one credit per receive buffer the peer has posted for it
 * and spends one per SEND; a message needs two, so the last credit always
 * remains for a credit-only SEND, which returns credits once batch are
 * owed: two nodes that both ran out cannot wait for each other.
 *
 * Senders of messages take their turns in the order they came (a ticket
 * each): under load every waiting sender gets a credit within as many
 * credit returns as there are senders before it, where letting any woken
 * sender take the credit left one of 56 threads without a credit for 5 s
 * while credits flowed (testing.rst, "Two-way RDMA stalls").
 *
 * Whether the connection still moves is told apart from how long one
 * sender waited: moved is when credits last came back or a SEND last
 * completed, and a connection is stalled only when neither happened for
 * the whole limit.  A busy connection is slow, not dead.
 *
 * Pure logic: the host test (selftests/host/credit_test.c) drives it.
 */
#ifndef _ODSM_CREDIT_H
#define _ODSM_CREDIT_H

#include "odsm_portable.h"

struct odsm_credit {
	u32 credits;		/* SENDs the peer has room for */
	u32 owed;		/* credits to return to the peer */
	u32 sq_free;		/* send queue slots */
	u32 next;		/* the next message sender's ticket */
	u32 turn;		/* the ticket that may take a credit now */
	unsigned long moved;	/* a tick: credits back or a SEND completed */
};

static inline void odsm_credit_init(struct odsm_credit *k, u32 credits,
				    u32 slots, unsigned long now)
{
	*k = (struct odsm_credit){ .credits = credits, .sq_free = slots,
				   .moved = now };
}

/* A message sender's place in the queue. */
static inline u32 odsm_credit_ticket(struct odsm_credit *k)
{
	return k->next++;
}

/*
 * A message: its turn, two credits' room (spending one) and a send slot.
 * true: taken, the credits owed to the peer in *imm (they ride along).
 */
static inline bool odsm_credit_take_msg(struct odsm_credit *k, u32 ticket,
					u32 *imm)
{
	if (ticket != k->turn || k->credits < 2 || !k->sq_free)
		return false;
	k->credits--;
	k->sq_free--;
	k->turn++;
	*imm = k->owed;
	k->owed = 0;
	return true;
}

/* Is a sender queued behind the one that just took its credit? */
static inline bool odsm_credit_queued(const struct odsm_credit *k)
{
	return k->next != k->turn;
}

/*
 * A credit-only SEND, once batch are owed: it may spend the last credit
 * and goes ahead of the queue (it is what refills it).
 */
static inline bool odsm_credit_take_return(struct odsm_credit *k, u32 batch,
					   u32 *imm)
{
	if (k->owed < batch || !k->credits || !k->sq_free)
		return false;
	k->credits--;
	k->sq_free--;
	*imm = k->owed;
	k->owed = 0;
	return true;
}

/*
 * The peer returned n credits of the total it gave at the start.  false:
 * more than it was given (a broken or hostile peer), nothing taken.
 */
static inline bool odsm_credit_returned(struct odsm_credit *k, u32 n,
					u32 total, unsigned long now)
{
	if (n > total - k->credits)
		return false;
	k->credits += n;
	if (n)
		k->moved = now;
	return true;
}

/* A SEND completed: its slot is free, and the connection moved. */
static inline void odsm_credit_sent(struct odsm_credit *k, unsigned long now)
{
	k->sq_free++;
	k->moved = now;
}

/* A receive buffer was reposted: one more credit owed to the peer. */
static inline void odsm_credit_owe(struct odsm_credit *k)
{
	k->owed++;
}

/*
 * Neither credits back nor a SEND completed for limit ticks, and no
 * message's credit waiting to be taken: a turn whose sender has not run
 * yet (a starved CPU, steal time) is no stall of the connection.
 */
static inline bool odsm_credit_stalled(const struct odsm_credit *k,
				       unsigned long now, unsigned long limit)
{
	if (k->credits >= 2 && k->sq_free)
		return false;
	return (long)(now - k->moved) >= (long)limit;
}

/* When the connection will be stalled if nothing moves before. */
static inline unsigned long odsm_credit_deadline(const struct odsm_credit *k,
						 unsigned long limit)
{
	return k->moved + limit;
}

#endif /* _ODSM_CREDIT_H */
