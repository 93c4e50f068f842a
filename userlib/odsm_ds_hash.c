// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The distributed hash table (BCL's, open addressing with linear probing
 * inside a key's segment): one algorithm per operation and promise, run
 * either by the caller on remote buckets (one-sided: odsm_read,
 * odsm_write and the NIC-domain atomics) or by the segment's trustee on
 * its local buckets (a request through delegation).  Both follow the same
 * protocol on a bucket's flag word, so the two variants may run at the
 * same time on the same table: the choice is only a question of cost.
 *
 * A bucket's flag word, in the NIC atomic domain (only the _nic atomics
 * ever change it, on every node, the owner's trustee included):
 *   bits 0..7  the state: FREE, BUSY (an insert or update writing the
 *              body), READY, DEAD (a deleted key's tombstone)
 *   bits 8..   the readers a CRW find holds (one RD each)
 * The body (lengths, key, value) is written only by whoever moved the
 * flag out of FREE (insert) or READY (update) and read by a CRW find only
 * between its RD in and out; a key never changes while its bucket is
 * READY or DEAD, so locating a key needs no lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "odsm.h"
#include "odsm_ds.h"
#include "odsm_ds_int.h"

/* ---- the bucket's accessors: remote (one-sided) or the owner's own ---- */

/* Read len bytes at g: in place for the owner, odsm_read otherwise. */
int ds_io_read(const struct ds_ctx *x, uint64_t g, void *buf, size_t len)
{
	if (x->local) {
		memcpy(buf, (const void *)(uintptr_t)g, len);
		return 0;
	}
	return odsm_read(g, buf, len);
}

int ds_io_write(const struct ds_ctx *x, uint64_t g, const void *buf,
		size_t len)
{
	if (x->local) {
		memcpy((void *)(uintptr_t)g, buf, len);
		/* the body before the flag that publishes it: the flag
		 * changes by ioctl, a full barrier, but the compiler must
		 * not sink the copy past it either
		 */
		__atomic_thread_fence(__ATOMIC_RELEASE);
		return 0;
	}
	return odsm_write(g, buf, len);
}

/* The flag's atomics: NIC-domain for everyone, the owner included. */
static int io_cas(uint64_t g, uint64_t expect, uint64_t want, uint64_t *old)
{
	return odsm_cmp_swap_nic(g, expect, want, old);
}

static int io_fao(uint64_t g, uint64_t add, uint64_t *old)
{
	return odsm_fetch_add_nic(g, add, old);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * A bucket another operation holds (BUSY, or readers in the way of a
 * writer): poll again, but not for ever -- a writer that died mid-insert
 * leaves BUSY behind.
 */
int ds_wait(uint64_t *deadline)
{
	uint64_t t = now_ms();

	if (!*deadline)
		*deadline = t + DS_WAIT_MS;
	else if (t > *deadline)
		return -ETIMEDOUT;
	ds_stat_inc(DS_ST_WAITS);
	/*
	 * Past the first millisecond, poll no faster than every 50 us (1 ms
	 * past the first 100): a holder on this node (the trustee, a thread
	 * between its write and its publishing atomic) needs the CPU that
	 * a tight loop of ioctls would take, and so do the node's heartbeats
	 */
	if (t >= *deadline - DS_WAIT_MS + 1)
		usleep(t >= *deadline - DS_WAIT_MS + 100 ? 1000 : 50);
	return 0;
}

static int key_is(const struct ds_bucket *b, const struct ds_key *k)
{
	return b->klen == k->klen && !memcmp(b->key, k->key, k->klen);
}

/* ---- find --------------------------------------------------------------- */

int ds_find(const struct ds_ctx *x, const struct ds_key *k, uint32_t start,
	    enum odsm_ds_promise p, void *val, uint8_t *vlen)
{
	uint64_t g, old, deadline = 0;
	struct ds_bucket b;
	uint32_t i;
	int ret, r2;

	for (i = 0; i < x->buckets; i++) {
		g = ds_bucket_addr(x, (start + i) % x->buckets);
		if (p == ODSM_DS_CR) {
			/* no writer runs: one read of the whole bucket */
			ret = ds_io_read(x, g, &b, sizeof(b));
			if (ret)
				return ret;
			old = b.flag;
		} else {
			ret = io_fao(g, DS_RD, &old);
			if (ret)
				return ret;
			if (DS_STATE(old) == DS_READY)
				ret = ds_io_read(x, g, &b, sizeof(b));
			/* the reader goes out even when the read failed:
			 * a count left raised would refuse every later
			 * update and delete of the key
			 */
			r2 = io_fao(g, -DS_RD, NULL);
			ret = ret ?: r2;
			if (ret)
				return ret;
			if (DS_STATE(old) == DS_BUSY) {
				/* an insert or update is writing it */
				ret = ds_wait(&deadline);
				if (ret)
					return ret;
				i--;
				continue;
			}
		}
		if (DS_STATE(old) == DS_FREE)
			return -ENOENT;
		if (DS_STATE(old) == DS_READY && key_is(&b, k)) {
			/* the body is shared memory any node may have
			 * written: a length past the value is not copied
			 */
			if (b.vlen > ODSM_DS_VAL_MAX) {
				ds_stat_inc(DS_ST_BAD_REQ);
				return -EBADMSG;
			}
			memcpy(val, b.val, b.vlen);
			*vlen = b.vlen;
			return 0;
		}
	}
	return -ENOENT;
}

/* ---- insert ------------------------------------------------------------- */

/*
 * Claim a FREE bucket: FREE -> BUSY (CRW) or straight to READY (CW).
 * CRW finds passing by add and take away readers, so the compare goes
 * again with the readers seen, as long as the state is FREE.
 * 1 claimed, 0 not (*old: the flag), -errno.
 */
static int claim(uint64_t g, uint64_t to, uint64_t *old)
{
	uint64_t expect = DS_FREE;
	int ret;

	for (;;) {
		ret = io_cas(g, expect, (expect & ~DS_STATE_MASK) | to, old);
		if (ret)
			return ret;
		if (*old == expect)
			return 1;
		if (DS_STATE(*old) != DS_FREE)
			return 0;
		expect = *old;
		ds_stat_inc(DS_ST_RETRIES);
	}
}

int ds_insert(const struct ds_ctx *x, const struct ds_key *k, uint32_t start,
	      enum odsm_ds_promise p, const void *val, uint8_t vlen)
{
	uint64_t g, old, deadline = 0;
	struct ds_bucket b;
	uint32_t i;
	int ret;

	memset(&b, 0, sizeof(b));
	b.klen = k->klen;
	b.vlen = vlen;
	memcpy(b.key, k->key, k->klen);
	memcpy(b.val, val, vlen);
	for (i = 0; i < x->buckets; i++) {
		g = ds_bucket_addr(x, (start + i) % x->buckets);
		ret = claim(g, p == ODSM_DS_CRW ? DS_BUSY : DS_READY, &old);
		if (ret < 0)
			return ret;
		if (ret) {
			ret = ds_io_write(x, g + DS_BODY_OFF, &b.klen,
				       sizeof(b) - DS_BODY_OFF);
			if (p != ODSM_DS_CRW)
				return ret;
			/* a body that was not written leaves a tombstone,
			 * not a bucket BUSY for good that every probe
			 * passing by would wait out
			 */
			io_fao(g, ret ? DS_DEAD - DS_BUSY : DS_READY - DS_BUSY,
			       NULL);
			return ret;
		}
		/* taken: by this key? (a BUSY one is still being written) */
		while (DS_STATE(old) == DS_BUSY) {
			ret = ds_wait(&deadline);
			ret = ret ?: ds_io_read(x, g, &old, sizeof(old));
			if (ret)
				return ret;
		}
		if (DS_STATE(old) != DS_READY)
			continue;
		ret = ds_io_read(x, g, &b, sizeof(b));
		if (ret)
			return ret;
		if (key_is(&b, k))
			return -EEXIST;
		/* b is the next probe's body again */
		memset(&b, 0, sizeof(b));
		b.klen = k->klen;
		b.vlen = vlen;
		memcpy(b.key, k->key, k->klen);
		memcpy(b.val, val, vlen);
	}
	return -ENOSPC;
}

/* ---- update and delete: locate, then change READY ------------------------ */

/* The bucket that holds k READY (its address in *g), -ENOENT, -errno. */
static int locate(const struct ds_ctx *x, const struct ds_key *k,
		  uint32_t start, uint64_t *g)
{
	uint64_t deadline = 0;
	struct ds_bucket b;
	uint32_t i;
	int ret;

	for (i = 0; i < x->buckets; i++) {
		*g = ds_bucket_addr(x, (start + i) % x->buckets);
		ret = ds_io_read(x, *g, &b, sizeof(b));
		if (ret)
			return ret;
		if (DS_STATE(b.flag) == DS_FREE)
			return -ENOENT;
		if (DS_STATE(b.flag) == DS_BUSY) {
			/* an insert of this very key, perhaps */
			ret = ds_wait(&deadline);
			if (ret)
				return ret;
			i--;
			continue;
		}
		if (DS_STATE(b.flag) == DS_READY && key_is(&b, k))
			return 0;
	}
	return -ENOENT;
}

/*
 * READY with no reader -> to; waits out readers and other writers.
 * -ENOENT when the key was deleted meanwhile.
 */
static int take(uint64_t g, uint64_t to)
{
	uint64_t old, deadline = 0;
	int ret;

	for (;;) {
		ret = io_cas(g, DS_READY, to, &old);
		if (ret)
			return ret;
		if (old == DS_READY)
			return 0;
		if (DS_STATE(old) == DS_DEAD)
			return -ENOENT;
		ret = ds_wait(&deadline);
		if (ret)
			return ret;
	}
}

int ds_update(const struct ds_ctx *x, const struct ds_key *k, uint32_t start,
	      enum odsm_ds_promise p, const void *val, uint8_t vlen)
{
	struct ds_bucket b;
	uint64_t g;
	int r2, ret = locate(x, k, start, &g);

	if (ret)
		return ret;
	memset(&b, 0, sizeof(b));
	b.klen = k->klen;
	b.vlen = vlen;
	memcpy(b.key, k->key, k->klen);
	memcpy(b.val, val, vlen);
	if (p == ODSM_DS_CW)	/* no reader, no writer of this key */
		return ds_io_write(x, g + DS_BODY_OFF, &b.klen,
				sizeof(b) - DS_BODY_OFF);
	ret = take(g, DS_BUSY);
	if (ret)
		return ret;
	ret = ds_io_write(x, g + DS_BODY_OFF, &b.klen,
			  sizeof(b) - DS_BODY_OFF);
	/* READY again whether or not the body went: the old one, or part
	 * of the new, but never a bucket BUSY for good
	 */
	r2 = io_fao(g, DS_READY - DS_BUSY, NULL);
	return ret ?: r2;
}

int ds_delete(const struct ds_ctx *x, const struct ds_key *k, uint32_t start,
	      enum odsm_ds_promise p)
{
	uint64_t g;
	int ret = locate(x, k, start, &g);

	return ret ?: take(g, DS_DEAD);
}
