/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm data structures, inside: the segment and bucket layout, the
 * per-bucket algorithms (odsm_ds_hash.c) that the caller and the owner's
 * trustee both run, and the library's counters.
 */
#ifndef ODSM_DS_INT_H
#define ODSM_DS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "odsm_ds.h"

/* a bucket's flag word: the state in bits 0..7, CRW readers above */
#define DS_FREE		0ULL
#define DS_BUSY		1ULL
#define DS_READY	2ULL
#define DS_DEAD		3ULL
#define DS_STATE_MASK	0xffULL
#define DS_STATE(f)	((f) & DS_STATE_MASK)
#define DS_RD		(1ULL << 8)

/* a bucket waited on longer than this is a dead writer's: -ETIMEDOUT */
#define DS_WAIT_MS	5000

struct ds_bucket {
	uint64_t flag;
	uint8_t klen, vlen;
	uint8_t pad[6];
	uint8_t key[ODSM_DS_KEY_MAX];
	uint8_t val[ODSM_DS_VAL_MAX];
};

#define DS_BUCKET	64
#define DS_BODY_OFF	8	/* the body: everything after the flag */
_Static_assert(sizeof(struct ds_bucket) == DS_BUCKET, "a bucket is 64 bytes");

/*
 * A segment: this header, then the buckets.  calib is a NIC-domain word
 * the calibration's atomics hit, scratch what its writes overwrite: both
 * away from the buckets, so calibrating never disturbs the table.
 */
struct ds_seg_hdr {
	uint64_t calib;
	uint64_t magic;
	uint64_t buckets;
	uint64_t scratch[5];
};

#define DS_SEG_MAGIC	0x6f64736d2d647331ULL	/* "odsm-ds1" */
#define DS_HDR		64
#define DS_MAX_BUCKETS	(1u << 24)
_Static_assert(sizeof(struct ds_seg_hdr) == DS_HDR, "the header is 64 bytes");

/* where the algorithms run: on the segment at base, here or remote */
struct ds_ctx {
	uint64_t base;		/* the segment's (uncolored) address */
	uint32_t buckets;
	int local;		/* the owner: base is readable in place */
};

static inline uint64_t ds_bucket_addr(const struct ds_ctx *x, uint32_t i)
{
	return x->base + DS_HDR + (uint64_t)i * DS_BUCKET;
}

struct ds_key {
	uint8_t klen;
	uint8_t key[ODSM_DS_KEY_MAX];
};

int ds_find(const struct ds_ctx *x, const struct ds_key *k, uint32_t start,
	    enum odsm_ds_promise p, void *val, uint8_t *vlen);
int ds_insert(const struct ds_ctx *x, const struct ds_key *k, uint32_t start,
	      enum odsm_ds_promise p, const void *val, uint8_t vlen);
int ds_update(const struct ds_ctx *x, const struct ds_key *k, uint32_t start,
	      enum odsm_ds_promise p, const void *val, uint8_t vlen);
int ds_delete(const struct ds_ctx *x, const struct ds_key *k, uint32_t start,
	      enum odsm_ds_promise p);

/* a bucket's or slot's bytes and flag words, here or remote */
int ds_io_read(const struct ds_ctx *x, uint64_t g, void *buf, size_t len);
/* odsm_ds_table.c: a new segment entrusted to a trustee (table or queue) */
int ds_seg_make(struct odsm_deleg *d, unsigned int trustee, size_t bytes,
		uint32_t n, uint64_t magic, struct odsm_ds_seg *s);
int ds_io_write(const struct ds_ctx *x, uint64_t g, const void *buf,
		size_t len);
int ds_wait(uint64_t *deadline);

/* ---- the queue (odsm_ds_queue.c) ----------------------------------------- */

/*
 * The queue's object: a segment header (calibration words; buckets is
 * the capacity), its four counters in the NIC atomic domain, the slots.
 *   tail        slots reserved by pushes
 *   tail_ready  pushes published, in slot order (CRW pushes, CAS-P)
 *   head        slots reserved by pops
 *   head_done   pops done with their slot (CRW: in order, CAS-P; CR: a
 *               count, in order once the phase is over)
 */
struct ds_q_ctr {
	uint64_t tail, tail_ready, head, head_done;
	uint64_t pad[4];
};

#define DS_Q_MAGIC	0x6f64736d2d647371ULL	/* "odsm-dsq" */
#define DS_Q_CTR	DS_HDR			/* the counters' offset */
#define DS_Q_SLOTS	(DS_HDR + 64)		/* the first slot's */
#define DS_Q_SLOT	64
#define DS_Q_LEN_OFF	ODSM_DS_VAL_MAX		/* a slot: value, length */
#define DS_Q_POISON	0xff	/* a length: the push failed, no element */

/*
 * Where a caller starts: the counters as it last saw them.  Limits only
 * grow, so an old value is a lower bound (a refusal re-reads it); each
 * field is a hint of its own counter only.
 */
struct ds_q_hints {
	uint64_t tail, tail_ready, head, head_done;
};

int ds_push(const struct ds_ctx *x, struct ds_q_hints *hn, const void *val,
	    uint8_t len, enum odsm_ds_promise p);
int ds_pop(const struct ds_ctx *x, struct ds_q_hints *hn, void *val,
	   uint8_t *len, enum odsm_ds_promise p);
int ds_serve_queue(void *obj, const void *arg, size_t len, void *ret,
		   size_t *rl);

/* ---- the chooser and the calibration ------------------------------------- */

struct ds_chooser {
	enum odsm_ds_mode mode;
	struct odsm_ds_costs costs;
	/* what op at promise runs as: 1 request, 0 one-sided, -1 none */
	int choice[ODSM_DS_NR_OPS][ODSM_DS_NR_PROMISES];
};

void ds_chooser_set(struct ds_chooser *ch, const struct odsm_ds_costs *c);
int ds_chooser_get(const struct ds_chooser *ch, enum odsm_ds_op op,
		   enum odsm_ds_promise p);
/* the components measured on segment (or queue) s: into *c, gen + 1 */
int ds_calibrate_seg(const struct odsm_ds_seg *s, unsigned int reps,
		     struct odsm_ds_costs *c);
extern uint64_t ds_op_hash, ds_op_queue;

/* the library's counters (odsm_ds_stats) */
enum {
	DS_ST_ONESIDED, DS_ST_REQUESTS, DS_ST_SERVED, DS_ST_BAD_REQ,
	DS_ST_WAITS, DS_ST_RETRIES, DS_ST_CALIBRATIONS, DS_ST_NR
};

extern uint64_t ds_stats[DS_ST_NR];

static inline void ds_stat_inc(unsigned int i)
{
	__atomic_fetch_add(&ds_stats[i], 1, __ATOMIC_RELAXED);
}

#endif /* ODSM_DS_INT_H */
