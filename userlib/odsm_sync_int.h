/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm's synchronisation, inside: the layouts of the name table, the
 * barrier and the mutex objects, and the pure logic on their words
 * (hashing, the lock and ticket words, the barrier's rounds, backoff),
 * which selftests/host/sync_test.c checks on the host.  Not installed.
 */
#ifndef ODSM_SYNC_INT_H
#define ODSM_SYNC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/odsm.h>	/* ODSM_MAX_NODES */
#include "odsm_sync.h"

/* ---- the name table ------------------------------------------------------ */

/*
 * A table of ODSM_NT_SLOTS entries of 64 bytes in node 0's partition,
 * its address in word ODSM_DIR_W_NAMES of node 0's directory.  Open
 * addressing from the name's hash, linear probing.  An entry goes
 * EMPTY -> CLAIMED (compare-and-swap: one publisher wins the slot) ->
 * READY, or DEAD when the publisher failed after claiming; entries never
 * go back to EMPTY, so a probe may stop at the first EMPTY one.
 */
#define ODSM_NT_SLOTS		128U
#define ODSM_NT_ENTRY		64
#define ODSM_NT_SIZE		(ODSM_NT_SLOTS * ODSM_NT_ENTRY)
#define ODSM_DIR_W_NAMES	(ODSM_DIR_W_LIB + 0)

struct odsm_nt_entry {
	uint64_t state;		/* ODSM_NT_* << 56 | node + 1 << 8 | kind */
	uint64_t spare;
	uint64_t v[2];		/* the value, or an owner box (16-aligned) */
	char name[32];		/* NUL-terminated */
};

#define ODSM_NT_EMPTY		0ULL
#define ODSM_NT_CLAIMED		1ULL
#define ODSM_NT_READY		2ULL
#define ODSM_NT_DEAD		3ULL

static inline uint64_t odsm_nt_state(uint64_t st, unsigned int node,
				     unsigned int kind)
{
	return st << 56 | (uint64_t)(node + 1) << 8 | (kind & 0xff);
}

static inline uint64_t odsm_nt_st(uint64_t state)
{
	return state >> 56;
}

static inline unsigned int odsm_nt_kind(uint64_t state)
{
	return state & 0xff;
}

static inline unsigned int odsm_nt_node(uint64_t state)
{
	return (unsigned int)((state >> 8) & 0xffff) - 1;
}

/* FNV-1a: the same slot on every node for the same name. */
static inline uint64_t odsm_nt_hash(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*name) {
		h ^= (unsigned char)*name++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The i-th slot a probe for hash h visits. */
static inline unsigned int odsm_nt_slot(uint64_t h, unsigned int i)
{
	return (unsigned int)((h + i) % ODSM_NT_SLOTS);
}

/* ---- barrier ------------------------------------------------------------- */

/*
 * A barrier object: magic, count, one word with the round (high 32
 * bits) and the arrivals in it (low 32), and a mask of the nodes whose
 * threads wait in it (for the down check).  The count-th arrival adds
 * 2^32 - count: arrivals back to 0 and the next round, in one atomic.
 */
struct odsm_barrier_obj {
	uint64_t magic;		/* ODSM_BARRIER_MAGIC */
	uint64_t count;
	uint64_t word;		/* round << 32 | arrived */
	/* bit K % 64 of word K / 64: a thread of node K waited here */
	uint64_t nodes[ODSM_MAX_NODES / 64];
};

#define ODSM_BARRIER_MAGIC	0x4f44534d42415252ULL	/* "ODSMBARR" */
#define ODSM_B_WORD		offsetof(struct odsm_barrier_obj, word)
#define ODSM_B_NODES		offsetof(struct odsm_barrier_obj, nodes)

static inline uint32_t odsm_b_round(uint64_t w)
{
	return (uint32_t)(w >> 32);
}

/* Did the arrival that saw old complete the round of count? */
static inline bool odsm_b_last(uint64_t old, uint64_t count)
{
	return (old & 0xffffffffULL) + 1 == count;
}

/* What the last arrival adds on top of its own 1: arrivals to 0, round + 1. */
static inline uint64_t odsm_b_close(uint64_t count)
{
	return (1ULL << 32) - count;
}

/* ---- mutex --------------------------------------------------------------- */

/*
 * A mutex object: magic and kind, the lock word, the owner box of the
 * guarded object (16-aligned), and for the FIFO kind a ring of who took
 * the last tickets (odsm_mx_ring_entry()), for the dead-holder check;
 * for the delegated kind, the ring's first 16 bytes hold the odsm_trust
 * of the queue its trustee keeps (odsm_mutex_dq.h).
 */
#define ODSM_MX_RING	16

struct odsm_mutex_obj {
	uint64_t magic;		/* ODSM_MUTEX_MAGIC ^ kind */
	uint64_t word;		/* CAS: the holder; FIFO: next << 32 | serving */
	uint64_t box[2];	/* owner of the guarded object */
	uint64_t state;		/* FIFO: ODSM_MX_INCONSISTENT, _NOTRECOVERABLE */
	uint64_t pad;
	uint64_t ring[ODSM_MX_RING];
};

#define ODSM_MUTEX_MAGIC	0x4f44534d4d555400ULL	/* "ODSMMUT\0" */
#define ODSM_MX_WORD		offsetof(struct odsm_mutex_obj, word)
#define ODSM_MX_BOX		offsetof(struct odsm_mutex_obj, box)
#define ODSM_MX_STATE		offsetof(struct odsm_mutex_obj, state)
#define ODSM_MX_RINGOFF		offsetof(struct odsm_mutex_obj, ring)

/* struct odsm_guard's flags */
#define ODSM_GUARD_HELD		1U
#define ODSM_GUARD_INCONS	2U	/* taken from a dead holder */
#define ODSM_GUARD_FIFO		4U
#define ODSM_GUARD_DELEG	8U

/*
 * The CAS kind's lock word: 0 when free; else the holder's node + 1 in
 * bits 0..15, a tag of the holding thread in 16..47 (a guard is
 * released only by the holder that took it), the tag of its node's
 * incarnation in 48..61 (odsm_mx_inc_tag(); 0: not known), and two flags.
 */
#define ODSM_MX_INCONSISTENT	(1ULL << 62)	/* taken from a dead holder */
#define ODSM_MX_NOTRECOVERABLE	(1ULL << 63)	/* unlocked while inconsistent */
#define ODSM_MX_INC_MAX		0x3fffU
/* the holder's node and thread in the CAS kind's word */
#define ODSM_MX_WHO		0xffffffffffffULL

/*
 * 14 bits of (32 bits of) a node's incarnation (struct odsm_peer_info),
 * 1..0x3fff, or 0 for one not known: a holder's node that left and
 * joined again (its processes gone, as after a restart) is seen in the
 * lock words as the incarnation before the last, but for one chance in
 * 16383.
 */
static inline uint32_t odsm_mx_inc_tag(uint32_t incarnation)
{
	return incarnation ?
	       incarnation % ODSM_MX_INC_MAX + 1 : 0;
}

static inline uint64_t odsm_mx_holder_word(unsigned int node, uint32_t tag,
					   uint32_t inc)
{
	return (uint64_t)(node + 1) | (uint64_t)(tag & 0xffffffffU) << 16 |
	       (uint64_t)(inc & ODSM_MX_INC_MAX) << 48;
}

/* The node holding the CAS kind's word w (not free), or -1. */
static inline int odsm_mx_holder(uint64_t w)
{
	return (int)(w & 0xffff) - 1;
}

/* The incarnation tag of the holder of the CAS kind's word w, or 0. */
static inline uint32_t odsm_mx_holder_inc(uint64_t w)
{
	return (uint32_t)(w >> 48) & ODSM_MX_INC_MAX;
}

/* The FIFO kind's word: tickets handed out, and the ticket served. */
static inline uint32_t odsm_mx_next(uint64_t w)
{
	return (uint32_t)(w >> 32);
}

static inline uint32_t odsm_mx_serving(uint64_t w)
{
	return (uint32_t)w;
}

/* w with the ticket served set to s (the tickets handed out untouched). */
static inline uint64_t odsm_mx_serve(uint64_t w, uint32_t s)
{
	return (w & ~0xffffffffULL) | s;
}

/*
 * A FIFO ring entry: the node that took a ticket (+ 1) in bits 0..15, the
 * ticket in 16..47, its node's incarnation tag in 48..61 (0: not known).
 */
static inline uint64_t odsm_mx_ring_entry(uint32_t ticket, unsigned int node,
					  uint32_t inc)
{
	return (uint64_t)ticket << 16 | (node + 1) |
	       (uint64_t)(inc & ODSM_MX_INC_MAX) << 48;
}

/*
 * The node that took ticket t, from the ring entry e of its slot: -1
 * when e is of another ticket (not written yet, or overwritten).
 */
static inline int odsm_mx_ring_node(uint64_t e, uint32_t t)
{
	if ((uint32_t)(e >> 16) != t || !(e & 0xffff))
		return -1;
	return (int)(e & 0xffff) - 1;
}

/* The incarnation tag of ring entry e's node, or 0. */
static inline uint32_t odsm_mx_ring_inc(uint64_t e)
{
	return (uint32_t)(e >> 48) & ODSM_MX_INC_MAX;
}

/* ---- backoff ------------------------------------------------------------- */

#define ODSM_BACKOFF_MIN_US	50U
#define ODSM_BACKOFF_MAX_US	10000U

/* The next pause after one of us microseconds: doubling, bounded. */
static inline unsigned int odsm_backoff_next(unsigned int us)
{
	if (us < ODSM_BACKOFF_MIN_US)
		return ODSM_BACKOFF_MIN_US;
	return us >= ODSM_BACKOFF_MAX_US / 2 ? ODSM_BACKOFF_MAX_US : us * 2;
}

/*
 * Proportional backoff of a ticket lock's waiter (Mellor-Crummey and
 * Scott): @ahead tickets are served before ours, a grant took @grant_us
 * on average as this waiter saw it (0: not seen yet).  The next in line
 * polls with the doubling pause (@us); one further back sleeps about the
 * grants before its own, so the mutex's home answers about one poll a
 * grant instead of one per waiter and backoff step.  Bounded so that a
 * waiter still notices its predecessors' nodes going down.
 */
#define ODSM_TICKET_FAR_MAX_US	100000U

static inline unsigned int odsm_ticket_nap_us(uint32_t ahead,
					      unsigned int grant_us,
					      unsigned int *us)
{
	uint64_t far;

	if (ahead <= 1 || !grant_us) {
		*us = odsm_backoff_next(*us);
		return *us;
	}
	*us = 0;	/* the next in line starts polling quickly */
	far = (uint64_t)(ahead - 1) * grant_us;
	if (far < ODSM_BACKOFF_MIN_US)
		far = ODSM_BACKOFF_MIN_US;
	return far > ODSM_TICKET_FAR_MAX_US ? ODSM_TICKET_FAR_MAX_US :
					      (unsigned int)far;
}

/*
 * The mean time of a grant, from @served grants seen in @elapsed_us, folded
 * into the running estimate @grant_us (an even mix: it follows a lock whose
 * hold time changes within a few grants).
 */
static inline unsigned int odsm_ticket_grant_us(unsigned int grant_us,
						uint32_t served,
						uint64_t elapsed_us)
{
	uint64_t g;

	if (!served)
		return grant_us;
	g = elapsed_us / served;
	if (g > ODSM_TICKET_FAR_MAX_US)
		g = ODSM_TICKET_FAR_MAX_US;
	return grant_us ? (unsigned int)((grant_us + g) / 2) : (unsigned int)g;
}

/* ---- helpers of the library (odsm_sync_util.c) ---------------------------- */

uint64_t odsm__sync_now_ms(void);
uint64_t odsm__sync_now_us(void);
/* Sleep *us microseconds, then make *us the next pause. */
void odsm__sync_nap(unsigned int *us);
void odsm__sync_sleep_us(unsigned int us);
/* Global address of word idx of node's directory. */
uint64_t odsm__dir_word(unsigned int node, unsigned int idx);
/* 1 when any node of mask (words * 64 bits, node K bit K % 64 of word
 * K / 64) is down, 0 when none, -errno.
 */
int odsm__any_down(const uint64_t *mask, unsigned int words);
/*
 * node's incarnation as this node saw it last (its low 32 bits), this
 * node's own included (from the hit page, no system call), in *inc; 0
 * there when not known (no cluster, a module that does not say).  0 or
 * -errno.
 */
int odsm__node_inc(unsigned int node, uint32_t *inc);
/* The same as a tag (odsm_mx_inc_tag()), what the lock words name. */
int odsm__node_inc_tag(unsigned int node, uint32_t *tag);
/*
 * Is node gone for a lock call it made as incarnation inc (0: not known):
 * down, or seen joining as another incarnation since?  1, 0 or -errno.
 */
int odsm__node_gone(unsigned int node, uint32_t inc);
/*
 * Is the holder of a lock gone: its node down, or tag (0: not known, not
 * compared) that of the incarnation this node saw before the last one,
 * as when the node left and joined again (a restart) with nobody
 * looking meanwhile?  1, 0 or -errno.
 */
int odsm__holder_gone(unsigned int node, uint32_t tag);
/* Wait (deadline_ms: odsm__sync_now_ms() time, 0 for ever) until node's
 * directory exists: 0, -ETIMEDOUT, -EHOSTDOWN, -EBADMSG (not one).
 */
int odsm__dir_wait(unsigned int node, uint64_t deadline_ms);
/* The name table's address (made by the first caller, in node 0's
 * partition): 0 and *nt, or -ENOENT when node 0 has no directory.
 */
int odsm__names_table(uint64_t *nt);
/* how long a publisher waits for another's claim (ms; tests shorten it) */
extern unsigned int odsm__nt_claim_ms;

/* odsm_app_join()'s record: name, with its barrier (odsm_name.c) */
int odsm__name_publish_app(const char *name, uint64_t barrier);
/* The barrier of the record whose root box is at root. */
int odsm__name_app_barrier(uint64_t root, uint64_t *barrier);

#endif /* ODSM_SYNC_INT_H */
