// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The hash table's front: segments, routing a key to its segment, the
 * choice between running an operation one-sided and sending it to the
 * segment's trustee, the trustee's side of that request, and the
 * calibration that feeds the cost model.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "odsm.h"
#include "odsm_ds.h"
#include "odsm_ds_int.h"

uint64_t ds_stats[DS_ST_NR];

uint64_t ds_op_hash, ds_op_queue;
static uint64_t op_nop;

struct odsm_ds_hash {
	unsigned int nr;
	struct ds_chooser ch;
	struct odsm_ds_seg segs[];
};

/*
 * A request: the operation, the promise the caller made, the bucket to
 * start probing at, the key and the value.  Everything in it is checked
 * by the trustee (bad_requests counts refusals).
 */
struct ds_req {
	uint8_t op, promise, klen, vlen;
	uint32_t start;
	uint8_t key[ODSM_DS_KEY_MAX];
	uint8_t val[ODSM_DS_VAL_MAX];
};

/* ---- the trustee's side --------------------------------------------------- */

static int serve(void *obj, const void *arg, size_t len, void *ret,
		 size_t *rl)
{
	const struct ds_seg_hdr *hdr = obj;
	struct ds_ctx x = { .base = (uintptr_t)obj, .local = 1 };
	struct ds_key k;
	struct ds_req r;
	uint8_t vlen = 0;
	int err;

	if (len != sizeof(r) || hdr->magic != DS_SEG_MAGIC ||
	    hdr->buckets > DS_MAX_BUCKETS)
		goto bad;
	memcpy(&r, arg, sizeof(r));
	x.buckets = (uint32_t)hdr->buckets;
	if (r.op >= ODSM_DS_NR_OPS ||
	    !odsm_ds_promise_ok(r.op, r.promise) || !r.klen ||
	    r.klen > ODSM_DS_KEY_MAX || r.vlen > ODSM_DS_VAL_MAX ||
	    r.start >= x.buckets)
		goto bad;
	k.klen = r.klen;
	memcpy(k.key, r.key, r.klen);
	ds_stat_inc(DS_ST_SERVED);
	switch (r.op) {
	case ODSM_DS_FIND:
		if (*rl < ODSM_DS_VAL_MAX) {
			err = -EINVAL;
			goto bad;
		}
		err = ds_find(&x, &k, r.start, r.promise, ret, &vlen);
		*rl = err ? 0 : vlen;
		return err;
	case ODSM_DS_INSERT:
		err = ds_insert(&x, &k, r.start, r.promise, r.val, r.vlen);
		break;
	case ODSM_DS_UPDATE:
		err = ds_update(&x, &k, r.start, r.promise, r.val, r.vlen);
		break;
	default:
		err = ds_delete(&x, &k, r.start, r.promise);
		break;
	}
	*rl = 0;
	return err;
bad:
	ds_stat_inc(DS_ST_BAD_REQ);
	*rl = 0;
	return -EINVAL;
}

/* the calibration's round trip: the request path, nothing done */
static int nop(void *obj, const void *arg, size_t len, void *ret, size_t *rl)
{
	*rl = 0;
	return 0;
}

int odsm_ds_register(void)
{
	int ret = odsm_deleg_register("odsm.ds.hash", serve, &ds_op_hash);

	ret = ret ?: odsm_deleg_register("odsm.ds.queue", ds_serve_queue,
					 &ds_op_queue);
	return ret ?: odsm_deleg_register("odsm.ds.nop", nop, &op_nop);
}

/*
 * A zeroed segment of bytes bytes in this node's partition, its header
 * saying n buckets (or slots) and magic, entrusted to trustee of d.
 */
int ds_seg_make(struct odsm_deleg *d, unsigned int trustee, size_t bytes,
		uint32_t n, uint64_t magic, struct odsm_ds_seg *s)
{
	struct ds_seg_hdr *hdr;
	odsm_box b;
	int ret;

	ret = odsm_box_new(&b, bytes, ODSM_ALLOC_ZERO);
	if (ret)
		return ret;
	hdr = odsm_ptr(b.g);
	hdr->buckets = n;
	hdr->magic = magic;
	s->addr = b.g;
	s->buckets = n;
	s->node = odsm_rt.info.node_id;
	ret = odsm_deleg_entrust(d, trustee, &b, 0, &s->t);
	if (ret)
		odsm_box_drop(&b);
	return ret;
}

int odsm_ds_seg_create(struct odsm_deleg *d, unsigned int trustee,
		       uint32_t buckets, struct odsm_ds_seg *s)
{
	if (!buckets || buckets > DS_MAX_BUCKETS)
		return -EINVAL;
	return ds_seg_make(d, trustee, DS_HDR + (size_t)buckets * DS_BUCKET,
			   buckets, DS_SEG_MAGIC, s);
}

/* ---- the caller's side ---------------------------------------------------- */

/* FNV-1a, then a finalizer: segment and bucket from different bits */
static uint64_t key_hash(const void *key, size_t len)
{
	const uint8_t *p = key;
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	return h ^ (h >> 33);
}

void odsm_ds_set_costs(struct odsm_ds_hash *h, const struct odsm_ds_costs *c)
{
	ds_chooser_set(&h->ch, c);
}

void odsm_ds_get_costs(const struct odsm_ds_hash *h, struct odsm_ds_costs *c)
{
	*c = h->ch.costs;
}

int odsm_ds_variant(const struct odsm_ds_hash *h, enum odsm_ds_op op,
		    enum odsm_ds_promise p)
{
	if (op > ODSM_DS_DELETE)
		return -EINVAL;
	return ds_chooser_get(&h->ch, op, p);
}

int odsm_ds_hash_open(const struct odsm_ds_seg *segs, unsigned int nr,
		      enum odsm_ds_mode mode, const struct odsm_ds_costs *c,
		      struct odsm_ds_hash **out)
{
	struct odsm_ds_hash *h;
	unsigned int i, j, other = 0;
	int ret;

	if (!nr || nr > ODSM_MAX_NODES || mode > ODSM_DS_AUTO)
		return -EINVAL;
	for (i = 0; i < nr; i++) {
		if (!segs[i].buckets || segs[i].buckets > DS_MAX_BUCKETS)
			return -EINVAL;
		for (j = 0; j < i; j++)
			if (segs[j].node == segs[i].node)
				return -EINVAL;
		if (segs[i].node != odsm_rt.info.node_id && !other)
			other = i + 1;
	}
	h = calloc(1, sizeof(*h) + nr * sizeof(*segs));
	if (!h)
		return -ENOMEM;
	h->nr = nr;
	h->ch.mode = mode;
	memcpy(h->segs, segs, nr * sizeof(*segs));
	if (!c && getenv("ODSM_DS_COSTS") &&
	    !odsm_ds_costs_load(getenv("ODSM_DS_COSTS"), &h->ch.costs))
		c = &h->ch.costs;	/* a saved calibration */
	if (c) {
		odsm_ds_set_costs(h, c);
	} else {
		ret = odsm_ds_calibrate(h, other ? other - 1 : 0, 0, NULL);
		if (ret)
			goto free;
	}
	*out = h;
	return 0;
free:
	free(h);
	return ret;
}

void odsm_ds_hash_close(struct odsm_ds_hash *h)
{
	free(h);
}

int odsm_ds_hash_op(struct odsm_ds_hash *h, enum odsm_ds_op op, int request,
		    const void *key, size_t klen, void *val, size_t *vlen,
		    enum odsm_ds_promise p)
{
	uint64_t hv = key_hash(key, klen);
	const struct odsm_ds_seg *s;
	struct ds_ctx x;
	struct ds_key k;
	struct ds_req r;
	uint8_t got = 0;
	size_t rl;
	int ret;

	if ((unsigned int)op > ODSM_DS_DELETE || !odsm_ds_promise_ok(op, p) ||
	    !klen)
		return -EINVAL;
	if (klen > ODSM_DS_KEY_MAX)
		return -E2BIG;
	if (op != ODSM_DS_DELETE && !vlen)
		return -EINVAL;
	if ((op == ODSM_DS_INSERT || op == ODSM_DS_UPDATE) &&
	    *vlen > ODSM_DS_VAL_MAX)
		return -E2BIG;
	s = &h->segs[hv % h->nr];
	memset(&r, 0, sizeof(r));
	r.op = op;
	r.promise = p;
	r.klen = (uint8_t)klen;
	r.start = (uint32_t)((hv / h->nr) % s->buckets);
	memcpy(r.key, key, klen);
	if (op == ODSM_DS_INSERT || op == ODSM_DS_UPDATE) {
		r.vlen = (uint8_t)*vlen;
		memcpy(r.val, val, *vlen);
	}
	if (request) {
		uint8_t buf[ODSM_DS_VAL_MAX];

		ds_stat_inc(DS_ST_REQUESTS);
		rl = op == ODSM_DS_FIND ? sizeof(buf) : 0;
		ret = odsm_deleg_apply(&s->t, ds_op_hash, &r, sizeof(r), buf,
				       &rl);
		if (ret || op != ODSM_DS_FIND)
			return ret;
		/* the owner is trusted no further than a slot's bytes */
		if (rl > *vlen)
			return -ENOBUFS;
		memcpy(val, buf, rl);
		*vlen = rl;
		return 0;
	}
	ds_stat_inc(DS_ST_ONESIDED);
	x.base = odsm_addr_of(s->addr);
	x.buckets = s->buckets;
	x.local = 0;
	k.klen = r.klen;
	memcpy(k.key, key, klen);
	switch (op) {
	case ODSM_DS_FIND: {
		uint8_t buf[ODSM_DS_VAL_MAX];

		ret = ds_find(&x, &k, r.start, p, buf, &got);
		if (ret)
			return ret;
		if (got > *vlen)
			return -ENOBUFS;
		memcpy(val, buf, got);
		*vlen = got;
		return 0;
	}
	case ODSM_DS_INSERT:
		return ds_insert(&x, &k, r.start, p, r.val, r.vlen);
	case ODSM_DS_UPDATE:
		return ds_update(&x, &k, r.start, p, r.val, r.vlen);
	default:
		return ds_delete(&x, &k, r.start, p);
	}
}

static int run(struct odsm_ds_hash *h, enum odsm_ds_op op, const void *key,
	       size_t klen, void *val, size_t *vlen, enum odsm_ds_promise p)
{
	int v = odsm_ds_variant(h, op, p);

	if (v < 0)
		return v;
	return odsm_ds_hash_op(h, op, v, key, klen, val, vlen, p);
}

int odsm_ds_insert(struct odsm_ds_hash *h, const void *key, size_t klen,
		   const void *val, size_t vlen, enum odsm_ds_promise p)
{
	return run(h, ODSM_DS_INSERT, key, klen, (void *)val, &vlen, p);
}

int odsm_ds_find(struct odsm_ds_hash *h, const void *key, size_t klen,
		 void *val, size_t *vlen, enum odsm_ds_promise p)
{
	return run(h, ODSM_DS_FIND, key, klen, val, vlen, p);
}

int odsm_ds_update(struct odsm_ds_hash *h, const void *key, size_t klen,
		   const void *val, size_t vlen, enum odsm_ds_promise p)
{
	return run(h, ODSM_DS_UPDATE, key, klen, (void *)val, &vlen, p);
}

int odsm_ds_delete(struct odsm_ds_hash *h, const void *key, size_t klen,
		   enum odsm_ds_promise p)
{
	return run(h, ODSM_DS_DELETE, key, klen, NULL, NULL, p);
}

/* ---- calibration ------------------------------------------------------------ */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

enum { C_READ, C_WRITE, C_CAS, C_FAO, C_REQ, C_NR };

/* one component once, on segment s: 0 or -errno */
static int component(const struct odsm_ds_seg *s, unsigned int what,
		     uint64_t *seen)
{
	uint64_t base = odsm_addr_of(s->addr);
	uint8_t buf[DS_BUCKET];
	size_t rl = 0;

	switch (what) {
	case C_READ:
		return odsm_read(base, buf, sizeof(buf));
	case C_WRITE:
		memset(buf, 0x5a, sizeof(buf));
		return odsm_write(base + offsetof(struct ds_seg_hdr, scratch),
				  buf, sizeof(((struct ds_seg_hdr *)0)->scratch));
	case C_CAS:
		/* expecting what it saw last: succeeds unless another
		 * node calibrates at the same time (a CAS all the same)
		 */
		return odsm_cmp_swap_nic(base, *seen, *seen + 1, seen);
	case C_FAO:
		return odsm_fetch_add_nic(base, 1, seen);
	default:
		return odsm_deleg_apply(&s->t, op_nop, NULL, 0, NULL, &rl);
	}
}

int ds_calibrate_seg(const struct odsm_ds_seg *s, unsigned int reps,
		     struct odsm_ds_costs *c)
{
	uint64_t *t, t0, seen = 0;
	double med[C_NR];
	unsigned int w, i;
	int ret = 0;

	if (reps > 100000)
		return -EINVAL;
	if (!reps)
		reps = 64;
	t = calloc(reps, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (w = 0; w < C_NR; w++) {
		/* one untimed first: connection set-up, keys, page faults */
		ret = component(s, w, &seen);
		for (i = 0; i < reps && !ret; i++) {
			t0 = now_ns();
			ret = component(s, w, &seen);
			t[i] = now_ns() - t0;
		}
		if (ret)
			goto out;
		qsort(t, reps, sizeof(*t), cmp_u64);
		med[w] = (double)t[reps / 2];
	}
	c->read_ns = med[C_READ];
	c->write_ns = med[C_WRITE];
	c->cas_ns = med[C_CAS];
	c->fao_ns = med[C_FAO];
	c->req_ns = med[C_REQ];
	if (!c->req_idle_ns)
		c->req_idle_ns = c->req_ns;
	c->gen++;
	ds_stat_inc(DS_ST_CALIBRATIONS);
	/*
	 * Kept for the next process and shown by odsmctl ds-model; a file
	 * that cannot be written does not undo the measurement
	 */
	if (getenv("ODSM_DS_COSTS"))
		odsm_ds_costs_save(getenv("ODSM_DS_COSTS"), c);
out:
	free(t);
	return ret;
}

int odsm_ds_calibrate(struct odsm_ds_hash *h, unsigned int seg,
		      unsigned int reps, struct odsm_ds_costs *out)
{
	struct odsm_ds_costs c = h->ch.costs;
	int ret;

	if (seg >= h->nr)
		return -EINVAL;
	ret = ds_calibrate_seg(&h->segs[seg], reps, &c);
	if (ret)
		return ret;
	odsm_ds_set_costs(h, &c);
	if (out)
		*out = c;
	return 0;
}

void odsm_ds_stats(struct odsm_ds_stats *s)
{
	s->onesided = __atomic_load_n(&ds_stats[DS_ST_ONESIDED], __ATOMIC_RELAXED);
	s->requests = __atomic_load_n(&ds_stats[DS_ST_REQUESTS], __ATOMIC_RELAXED);
	s->served = __atomic_load_n(&ds_stats[DS_ST_SERVED], __ATOMIC_RELAXED);
	s->bad_requests = __atomic_load_n(&ds_stats[DS_ST_BAD_REQ],
					  __ATOMIC_RELAXED);
	s->waits = __atomic_load_n(&ds_stats[DS_ST_WAITS], __ATOMIC_RELAXED);
	s->retries = __atomic_load_n(&ds_stats[DS_ST_RETRIES], __ATOMIC_RELAXED);
	s->calibrations = __atomic_load_n(&ds_stats[DS_ST_CALIBRATIONS],
					  __ATOMIC_RELAXED);
}
