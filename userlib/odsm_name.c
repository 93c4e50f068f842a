// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libodsm names: a table in node 0's partition where any node publishes
 * a value or an owner box under a name and any node finds it.  The
 * table is read and written raw (odsm_read(), odsm_write(), compare-and-
 * swap on an entry's state): no node ever caches it, so its words and
 * the owner boxes in it may change by address (programs.rst).
 */
#include <errno.h>
#include <string.h>
#include "odsm.h"
#include "odsm_sync_int.h"

#define ENT_STATE	offsetof(struct odsm_nt_entry, state)
#define ENT_V		offsetof(struct odsm_nt_entry, v)

static int name_check(const char *name)
{
	size_t n;

	if (!name || !*name)
		return -EINVAL;
	n = strnlen(name, ODSM_NAME_MAX + 1);
	return n > ODSM_NAME_MAX ? -ENAMETOOLONG : 0;
}

static uint64_t ent_at(uint64_t nt, unsigned int slot)
{
	return nt + (uint64_t)slot * ODSM_NT_ENTRY;
}

/*
 * How long a publisher waits for an entry another one CLAIMED: that one
 * writes the name, the value and READY (or DEAD) right after claiming,
 * three requests to node 0 that each may take up to the cluster's
 * timeout on a loaded node (seconds under emulation).  One that stays
 * longer is a publisher that died in between, or a word that is no
 * names table at all (another program wrote the directory word).
 * Lookups never wait for it (find()).
 */
#define ODSM_NT_CLAIM_MS	30000
unsigned int odsm__nt_claim_ms = ODSM_NT_CLAIM_MS;	/* tests shorten it */

/*
 * The state of the entry at e once it is not CLAIMED (a publisher that
 * claimed it writes the name, then READY, or DEAD when it failed):
 * polled with backoff; -ETIMEDOUT after ODSM_NT_CLAIM_MS, never a hang.
 */
static int ent_settled(uint64_t e, uint64_t *state)
{
	uint64_t end = odsm__sync_now_ms() + odsm__nt_claim_ms;
	unsigned int us = 0;
	int ret;

	for (;;) {
		ret = odsm_read(e + ENT_STATE, state, sizeof(*state));
		if (ret || odsm_nt_st(*state) != ODSM_NT_CLAIMED)
			return ret;
		if (odsm__sync_now_ms() >= end)
			return -ETIMEDOUT;
		odsm__sync_nap(&us);
	}
}

/* Does the READY entry at e carry name? 1, 0 or -errno. */
static int ent_is(uint64_t e, const char *name)
{
	char got[sizeof(((struct odsm_nt_entry *)0)->name)];
	int ret;

	ret = odsm_read(e + offsetof(struct odsm_nt_entry, name), got,
			sizeof(got));
	if (ret)
		return ret;
	got[sizeof(got) - 1] = 0;
	return !strcmp(got, name);
}

/*
 * Find name: 0 with the entry's address and state, -ENOENT at the first
 * EMPTY slot of its probe (or the whole table probed).  An entry still
 * CLAIMED is passed over, not waited for: its name is not published yet
 * (odsm_name_wait() asks again), and a lookup must not hang on a
 * publisher that a loaded or dying node keeps between its writes.
 */
static int find(uint64_t nt, const char *name, uint64_t *e, uint64_t *state)
{
	uint64_t h = odsm_nt_hash(name);
	unsigned int i;
	int ret;

	for (i = 0; i < ODSM_NT_SLOTS; i++) {
		*e = ent_at(nt, odsm_nt_slot(h, i));
		ret = odsm_read(*e + ENT_STATE, state, sizeof(*state));
		if (ret)
			return ret;
		if (odsm_nt_st(*state) == ODSM_NT_EMPTY)
			return -ENOENT;
		if (odsm_nt_st(*state) != ODSM_NT_READY)
			continue;
		ret = ent_is(*e, name);
		if (ret < 0)
			return ret;
		if (ret)
			return 0;
	}
	return -ENOENT;
}

/*
 * Claim an entry for name: 0 and its address (CLAIMED by us), -EEXIST
 * when the name is published (or being published), -ENOSPC.
 */
static int claim(uint64_t nt, const char *name, unsigned int kind,
		 uint64_t *e)
{
	uint64_t h = odsm_nt_hash(name), st, old;
	uint64_t mine = odsm_nt_state(ODSM_NT_CLAIMED, odsm_rt.info.node_id,
				      kind);
	unsigned int i;
	int ret;

	for (i = 0; i < ODSM_NT_SLOTS; i++) {
		*e = ent_at(nt, odsm_nt_slot(h, i));
		ret = odsm_cmp_swap(*e + ENT_STATE, 0, mine, &old);
		if (ret)
			return ret;
		if (!old)
			return 0;
		/* taken: wait for its name, which may be ours */
		ret = ent_settled(*e, &st);
		if (ret == -ETIMEDOUT) {
			/*
			 * Its publisher died between claiming and settling
			 * (or cannot reach node 0 for that long): its claim
			 * becomes a tombstone, which settle() then refuses
			 * it, and the probe goes on.  Before, every publish
			 * probing past it timed out, for as long as the
			 * module stays loaded.
			 */
			ret = odsm_cmp_swap(*e + ENT_STATE, st,
					    (st & ~(0xffULL << 56)) |
					    ODSM_NT_DEAD << 56, &old);
			if (ret)
				return ret;
			continue;
		}
		if (ret)
			return ret;
		if (odsm_nt_st(st) != ODSM_NT_READY)
			continue;
		ret = ent_is(*e, name);
		if (ret)
			return ret < 0 ? ret : -EEXIST;
	}
	return -ENOSPC;
}

/*
 * Set the claimed entry e READY (the value is in), or DEAD after err: only
 * while it is still our claim, which a publisher that waited too long for
 * it may have turned DEAD (claim()): then -ETIMEDOUT, never a name
 * published twice.
 */
static int settle(uint64_t e, unsigned int kind, int err)
{
	uint64_t mine = odsm_nt_state(ODSM_NT_CLAIMED, odsm_rt.info.node_id,
				      kind);
	uint64_t st = odsm_nt_state(err ? ODSM_NT_DEAD : ODSM_NT_READY,
				    odsm_rt.info.node_id, kind), old;
	int ret = odsm_cmp_swap(e + ENT_STATE, mine, st, &old);

	if (!ret && old != mine)
		ret = -ETIMEDOUT;
	return err ? err : ret;
}

/* Claim name and write it: 0 and the entry, CLAIMED. */
static int begin(const char *name, unsigned int kind, uint64_t *e)
{
	char buf[sizeof(((struct odsm_nt_entry *)0)->name)] = { 0 };
	uint64_t nt;
	int ret;

	ret = name_check(name);
	if (ret)
		return ret;
	ret = odsm__names_table(&nt);
	if (ret)
		return ret;
	ret = claim(nt, name, kind, e);
	if (ret)
		return ret;
	strcpy(buf, name);
	ret = odsm_write(*e + offsetof(struct odsm_nt_entry, name), buf,
			 sizeof(buf));
	return ret ? settle(*e, kind, ret) : 0;
}

int odsm_name_publish(const char *name, unsigned int kind, uint64_t value)
{
	uint64_t e;
	int ret;

	if (!kind || kind >= ODSM_NAME_KINDS || kind == ODSM_NAME_BOX ||
	    kind == ODSM_NAME_APP || !value)
		return -EINVAL;
	ret = begin(name, kind, &e);
	if (ret)
		return ret;
	return settle(e, kind, odsm_write(e + ENT_V, &value, sizeof(value)));
}

int odsm__name_publish_app(const char *name, uint64_t barrier)
{
	uint64_t e;
	int ret;

	ret = begin(name, ODSM_NAME_APP, &e);
	if (ret)
		return ret;
	ret = odsm_write(e + offsetof(struct odsm_nt_entry, spare), &barrier,
			 sizeof(barrier));
	return settle(e, ODSM_NAME_APP, ret);
}

int odsm_name_publish_box(const char *name, odsm_box *b)
{
	uint64_t e;
	int ret;

	if (!b || !b->g || !odsm_in_heap(b->g))
		return -EINVAL;
	ret = begin(name, ODSM_NAME_BOX, &e);
	if (ret)
		return ret;
	return settle(e, ODSM_NAME_BOX, odsm_box_store_at(e + ENT_V, b));
}

/* What the READY entry e says, into *out. */
static int describe(uint64_t e, uint64_t state, struct odsm_name *out)
{
	int ret = 0;

	out->kind = odsm_nt_kind(state);
	out->node = odsm_nt_node(state);
	switch (out->kind) {
	case ODSM_NAME_BOX:
		out->value = e + ENT_V;
		break;
	case ODSM_NAME_APP:	/* the app's root box; its barrier in spare */
		out->value = e + ENT_V;
		break;
	default:
		ret = odsm_read(e + ENT_V, &out->value, sizeof(out->value));
	}
	return ret;
}

int odsm__name_app_barrier(uint64_t root, uint64_t *barrier)
{
	return odsm_read(root - ENT_V + offsetof(struct odsm_nt_entry, spare),
			 barrier, sizeof(*barrier));
}

int odsm_name_lookup(const char *name, struct odsm_name *out)
{
	uint64_t nt, e, st;
	int ret;

	ret = name_check(name);
	if (ret)
		return ret;
	if (!out)
		return -EINVAL;
	ret = odsm__names_table(&nt);
	if (!ret)
		ret = find(nt, name, &e, &st);
	if (!ret)
		ret = describe(e, st, out);
	return ret;
}

int odsm_name_wait(const char *name, unsigned int timeout_ms,
		   struct odsm_name *out)
{
	uint64_t end = odsm__sync_now_ms() + timeout_ms;
	unsigned int us = 0;
	int ret;

	for (;;) {
		ret = odsm_name_lookup(name, out);
		if (ret != -ENOENT)
			return ret;
		if (odsm__sync_now_ms() >= end)
			return -ETIMEDOUT;
		odsm__sync_nap(&us);
	}
}
