// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit test of the pure logic of libodsm's synchronisation
 * (userlib/odsm_sync_int.h): the name table's hashing, probing and entry
 * states, the barrier word's rounds (simulated for many rounds and
 * arrival orders, and across the round counter's wrap), the mutex words
 * (the CAS holder word and its flags, the FIFO ticket word with serving
 * wrapping without a carry, the ring's stale entries), the backoff's
 * bounds and the FIFO waiters' proportional backoff.
 */
#include <stdlib.h>
#include <string.h>

#include "odsm_sync_int.h"

#include "ksft_host.h"

TEST(layouts_are_fixed)
{
	/* every node reads these with raw words: offsets are the ABI */
	ASSERT_EQ(64U, sizeof(struct odsm_nt_entry));
	ASSERT_EQ(16U, offsetof(struct odsm_nt_entry, v));
	ASSERT_EQ(32U, offsetof(struct odsm_nt_entry, name));
	ASSERT_EQ(ODSM_NAME_MAX + 1, (int)sizeof(((struct odsm_nt_entry *)0)->name));
	ASSERT_EQ(0U, ODSM_MX_BOX % 16);
	ASSERT_EQ(8U, ODSM_MX_WORD);
	ASSERT_EQ(16U, ODSM_B_WORD);
	ASSERT_EQ(48U, ODSM_MX_RINGOFF);
	ASSERT_GE(ODSM_DIR_SIZE / 8, ODSM_DIR_W_LIB + 20);
}

TEST(name_hash_is_fnv1a)
{
	/* published values of FNV-1a 64: the same on every node */
	ASSERT_EQ(0xcbf29ce484222325ULL, odsm_nt_hash(""));
	ASSERT_EQ(0xaf63dc4c8601ec8cULL, odsm_nt_hash("a"));
	ASSERT_EQ(0x85944171f73967e8ULL, odsm_nt_hash("foobar"));
}

TEST(probe_visits_every_slot_once)
{
	static const char *names[] = { "a", "sync-box", "cluster-sync", "z" };
	unsigned int n, i, seen[ODSM_NT_SLOTS];
	uint64_t h;

	for (n = 0; n < 4; n++) {
		h = odsm_nt_hash(names[n]);
		memset(seen, 0, sizeof(seen));
		for (i = 0; i < ODSM_NT_SLOTS; i++)
			seen[odsm_nt_slot(h, i)]++;
		for (i = 0; i < ODSM_NT_SLOTS; i++)
			ASSERT_EQ(1U, seen[i]);
	}
	/* the wrap of h + i is still in the table */
	ASSERT_GT(ODSM_NT_SLOTS, odsm_nt_slot(~0ULL, 5));
}

TEST(entry_state_round_trip)
{
	uint64_t s;
	unsigned int node, kind;

	for (node = 0; node < 64; node += 7)
		for (kind = 1; kind < ODSM_NAME_KINDS; kind++) {
			s = odsm_nt_state(ODSM_NT_READY, node, kind);
			ASSERT_EQ(ODSM_NT_READY, odsm_nt_st(s));
			ASSERT_EQ(node, odsm_nt_node(s));
			ASSERT_EQ(kind, odsm_nt_kind(s));
			/* a claimed or dead entry is never EMPTY (0) */
			ASSERT_NE(0ULL, odsm_nt_state(ODSM_NT_CLAIMED, node, kind));
		}
	ASSERT_EQ(ODSM_NT_EMPTY, odsm_nt_st(0));
}

/* The barrier's word under n threads arriving in a random order. */
static int simulate(uint64_t w0, uint64_t count, unsigned int rounds)
{
	uint64_t w = w0, old;
	unsigned int r, a, opened;

	for (r = 0; r < rounds; r++) {
		opened = 0;
		for (a = 0; a < count; a++) {
			old = w;
			w += 1;			/* the arrival's fetch-add */
			if (odsm_b_round(old) != odsm_b_round(w0) + r)
				return -1;	/* arrived in another round */
			if (odsm_b_last(old, count)) {
				w += odsm_b_close(count);
				opened++;
			} else if (odsm_b_round(w) != odsm_b_round(old)) {
				return -2;	/* opened early */
			}
		}
		if (opened != 1 || (w & 0xffffffffULL) != 0 ||
		    odsm_b_round(w) != (uint32_t)(odsm_b_round(w0) + r + 1))
			return -3;
	}
	return 0;
}

TEST(barrier_rounds)
{
	uint64_t count;

	for (count = 1; count <= 17; count++)
		ASSERT_EQ(0, simulate(0, count, 100));
	/* the round counter wraps: waiters compare for inequality */
	ASSERT_EQ(0, simulate(0xfffffffeULL << 32, 5, 4));
	ASSERT_EQ(0, simulate(0, 1000, 3));
}

TEST(cas_holder_word)
{
	uint64_t w = odsm_mx_holder_word(5, 0xdeadbeef, ODSM_MX_INC_MAX);

	ASSERT_NE(0ULL, w);
	ASSERT_EQ(5, odsm_mx_holder(w));
	ASSERT_EQ(5, odsm_mx_holder(w | ODSM_MX_INCONSISTENT));
	ASSERT_EQ(0, odsm_mx_holder(odsm_mx_holder_word(0, 0, 0)));
	ASSERT_NE(0ULL, odsm_mx_holder_word(0, 0, 0));	/* node 0 holds too */
	/* the flags stay off the holder and the tag */
	ASSERT_EQ(0ULL, w & (ODSM_MX_INCONSISTENT | ODSM_MX_NOTRECOVERABLE));
	ASSERT_NE(odsm_mx_holder_word(5, 1, 1), odsm_mx_holder_word(5, 2, 1));
	/* the incarnation tag: its own bits, read back whole */
	ASSERT_EQ(ODSM_MX_INC_MAX, odsm_mx_holder_inc(w));
	ASSERT_EQ(0xdeadbeefULL, (w >> 16) & 0xffffffffULL);
	ASSERT_EQ(0U, odsm_mx_holder_inc(odsm_mx_holder_word(5, 1, 0)));
	ASSERT_EQ(0U, odsm_mx_inc_tag(0));	/* not known */
	ASSERT_LE(1U, odsm_mx_inc_tag(ODSM_MX_INC_MAX));
	ASSERT_GE(ODSM_MX_INC_MAX, odsm_mx_inc_tag(~0U));
	ASSERT_NE(odsm_mx_inc_tag(1), odsm_mx_inc_tag(2));
}

TEST(fifo_ticket_word)
{
	uint64_t w = 0;
	uint32_t t;

	/* three tickets, served in order */
	for (t = 0; t < 3; t++) {
		ASSERT_EQ(t, odsm_mx_next(w));
		w += 1ULL << 32;
	}
	ASSERT_EQ(0U, odsm_mx_serving(w));
	w = odsm_mx_serve(w, 1);
	ASSERT_EQ(3U, odsm_mx_next(w));
	ASSERT_EQ(1U, odsm_mx_serving(w));
	/* serving wraps without carrying into the tickets */
	w = (5ULL << 32) | 0xffffffffULL;
	w = odsm_mx_serve(w, odsm_mx_serving(w) + 1);
	ASSERT_EQ(5U, odsm_mx_next(w));
	ASSERT_EQ(0U, odsm_mx_serving(w));
	/* the tickets wrap off the top */
	w = 0xffffffffULL << 32 | 7;
	w += 1ULL << 32;
	ASSERT_EQ(0U, odsm_mx_next(w));
	ASSERT_EQ(7U, odsm_mx_serving(w));
}

TEST(fifo_ring_entries)
{
	uint64_t e = odsm_mx_ring_entry(1234, 2, 77);

	ASSERT_EQ(2, odsm_mx_ring_node(e, 1234));
	ASSERT_EQ(77U, odsm_mx_ring_inc(e));
	/* of another ticket (overwritten, or not written yet): unknown */
	ASSERT_EQ(-1, odsm_mx_ring_node(e, 1234 + ODSM_MX_RING));
	ASSERT_EQ(-1, odsm_mx_ring_node(0, 0));
	ASSERT_EQ(0, odsm_mx_ring_node(odsm_mx_ring_entry(0, 0, 0), 0));
	ASSERT_EQ(3, odsm_mx_ring_node(odsm_mx_ring_entry(0xffffffffU, 3, ODSM_MX_INC_MAX),
				       0xffffffffU));
}

TEST(backoff_is_bounded)
{
	unsigned int us = 0, i, prev = 0;

	for (i = 0; i < 40; i++) {
		us = odsm_backoff_next(us);
		ASSERT_LE(ODSM_BACKOFF_MIN_US, us);
		ASSERT_GE(ODSM_BACKOFF_MAX_US, us);
		ASSERT_LE(prev, us);
		prev = us;
	}
	ASSERT_EQ(ODSM_BACKOFF_MAX_US, us);
	ASSERT_EQ(ODSM_BACKOFF_MAX_US, odsm_backoff_next(~0U));
}

TEST(ticket_nap_is_proportional)
{
	unsigned int us = 0, i, nap;

	/* the next in line, or no grant seen yet: the doubling pause */
	for (i = 0; i < 40; i++) {
		nap = odsm_ticket_nap_us(1, 500, &us);
		ASSERT_EQ(us, nap);
		ASSERT_GE(ODSM_BACKOFF_MAX_US, nap);
	}
	ASSERT_EQ(ODSM_BACKOFF_MAX_US, nap);
	us = 0;
	ASSERT_EQ(ODSM_BACKOFF_MIN_US, odsm_ticket_nap_us(9, 0, &us));
	/* further back: the grants before its own, and a fresh start for
	 * the doubling pause once it is next
	 */
	ASSERT_EQ(4 * 2000U, odsm_ticket_nap_us(5, 2000, &us));
	ASSERT_EQ(0U, us);
	ASSERT_EQ(ODSM_BACKOFF_MIN_US, odsm_ticket_nap_us(2, 1, &us));
	/* bounded however far back and however slow the grants */
	ASSERT_EQ(ODSM_TICKET_FAR_MAX_US,
		  odsm_ticket_nap_us(0xffffffffU, ODSM_TICKET_FAR_MAX_US, &us));
}

TEST(ticket_grant_estimate)
{
	/* nothing served: unchanged; the first sample taken as it is */
	ASSERT_EQ(700U, odsm_ticket_grant_us(700, 0, 123456));
	ASSERT_EQ(1000U, odsm_ticket_grant_us(0, 3, 3000));
	/* then an even mix with the running estimate */
	ASSERT_EQ(1500U, odsm_ticket_grant_us(1000, 1, 2000));
	/* a stall counts as at most the bound */
	ASSERT_EQ(ODSM_TICKET_FAR_MAX_US,
		  odsm_ticket_grant_us(0, 1, 60ULL * 1000 * 1000 * 1000));
}

TEST_HARNESS_MAIN
