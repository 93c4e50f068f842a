/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm distributed data structures (issue 17, after BCL): a hash table
 * spread over the partitions of every node, whose operations run either
 * one-sided (the caller's remote reads, writes and NIC-domain atomics on
 * the buckets) or as one request to the owner of the bucket (delegation:
 * odsm_deleg_apply on the owner's runtime), and a cost model that says,
 * per operation and concurrency promise, which of the two is cheaper.
 *
 * Concurrency promises (BCL's): what the caller promises may run at the
 * same time as the operation, on the same structure, from any thread of
 * any node.
 *   ODSM_DS_CRW  anything: the operation is atomic (linearizable) against
 *                every other operation of any variant
 *   ODSM_DS_CW   only operations that write (insert, update, delete;
 *                push); no find (pop) runs until a barrier separates the
 *                phases.  For insert, update, delete and push.
 *   ODSM_DS_CR   only finds (pops); no writer (push) runs meanwhile.  For
 *                find and pop.
 * Documentation/odsm/datastructures.rst lists what each variant allows
 * when the promise is kept, interleaving by interleaving.
 *
 * Limits: keys of 1..ODSM_DS_KEY_MAX bytes, values of 0..ODSM_DS_VAL_MAX
 * bytes (-E2BIG beyond), compared and stored byte for byte.  A deleted
 * key's bucket stays a tombstone (not reused): a segment takes at most
 * its bucket count of inserts over its life, then -ENOSPC.
 *
 * Every function returns 0 or a negative errno value:
 *   -EINVAL    a promise the operation has no variant for, a bad argument
 *   -E2BIG     key or value longer than the limits
 *   -ENOSPC    insert: every bucket of the key's segment is taken
 *   -EEXIST    insert: the key is there (see the CW insert's promise)
 *   -ENOENT    find, update, delete: the key is not there
 *   and what odsm_read/odsm_write/odsm_cmp_swap_nic/odsm_deleg_apply give.
 */
#ifndef ODSM_DS_H
#define ODSM_DS_H

#include <stddef.h>
#include <stdint.h>

#include "odsm_deleg.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ODSM_DS_KEY_MAX		16
#define ODSM_DS_VAL_MAX		32

enum odsm_ds_promise {
	ODSM_DS_CRW = 0,
	ODSM_DS_CW = 1,
	ODSM_DS_CR = 2,
	ODSM_DS_NR_PROMISES
};

enum odsm_ds_op {
	ODSM_DS_INSERT = 0,
	ODSM_DS_FIND,
	ODSM_DS_UPDATE,
	ODSM_DS_DELETE,
	ODSM_DS_PUSH,		/* the queue's */
	ODSM_DS_POP,
	ODSM_DS_NR_OPS
};

/* how a structure runs its operations */
enum odsm_ds_mode {
	ODSM_DS_ONESIDED = 0,	/* always one-sided */
	ODSM_DS_REQUEST = 1,	/* always a request to the owner */
	ODSM_DS_AUTO = 2	/* per operation, what the model says is cheaper */
};

/*
 * The component latencies of the model, in nanoseconds: a remote read and
 * write of one bucket (64 bytes), a NIC-domain compare-and-swap and
 * fetch-and-add on a remote word, and a request's round trip to the owner
 * as measured now (the owner's load, its attentiveness, included).
 * req_idle_ns is the round trip the first calibration measured; gen
 * counts calibrations (a structure re-decides when it moves).
 */
struct odsm_ds_costs {
	double read_ns, write_ns, cas_ns, fao_ns;
	double req_ns, req_idle_ns;
	uint64_t gen;
};

/* The model's prediction for op at promise p done one-sided / as a
 * request; -1 when op has no one-sided variant at p.
 */
double odsm_ds_predict(const struct odsm_ds_costs *c, enum odsm_ds_op op,
		       enum odsm_ds_promise p, int request);
/*
 * The variant the model picks for op at p: 1 request, 0 one-sided,
 * -EINVAL when op takes no promise p.  Ties go one-sided (no owner CPU).
 */
int odsm_ds_choose(const struct odsm_ds_costs *c, enum odsm_ds_op op,
		   enum odsm_ds_promise p);
/* Is promise p one op accepts? */
int odsm_ds_promise_ok(enum odsm_ds_op op, enum odsm_ds_promise p);
/* "insert" .. "delete", "CRW" .. "CR" */
const char *odsm_ds_op_name(enum odsm_ds_op op);
const char *odsm_ds_promise_name(enum odsm_ds_promise p);

/* Text form, one "name value" line each (the calibration file's format). */
int odsm_ds_costs_format(const struct odsm_ds_costs *c, char *buf,
			 size_t len);
int odsm_ds_costs_parse(const char *buf, struct odsm_ds_costs *c);
/*
 * The calibration file: the text form in path (written whole, then
 * renamed over it).  When $ODSM_DS_COSTS names one, every calibration
 * of this process saves its result there, and a structure opened with no
 * costs takes them from it instead of measuring (odsmctl ds-model shows
 * it).  -ENOENT: no file; -EINVAL: not a calibration.
 */
int odsm_ds_costs_save(const char *path, const struct odsm_ds_costs *c);
int odsm_ds_costs_load(const char *path, struct odsm_ds_costs *c);

/* ---- the hash table ----------------------------------------------------- */

/*
 * One node's share of a table: buckets in an object of its partition,
 * entrusted to a trustee of a delegation runtime of that node.  Plain
 * data: the program publishes it to the other nodes as it likes.
 */
struct odsm_ds_seg {
	uint64_t addr;		/* the buckets' object (colored address) */
	uint32_t buckets;
	uint32_t node;
	odsm_trust t;		/* the object, entrusted */
};

/*
 * Register the table's delegated operations (in every process, before
 * starting a runtime or applying: the ids are names' hashes).
 */
int odsm_ds_register(void);

/*
 * This node's segment: buckets (1..2^24) zeroed buckets in this node's
 * partition, entrusted to trustee of runtime d.  Dropped with the
 * handle (odsm_trust_drop) when the table is done everywhere.
 */
int odsm_ds_seg_create(struct odsm_deleg *d, unsigned int trustee,
		       uint32_t buckets, struct odsm_ds_seg *s);

struct odsm_ds_hash;

/*
 * A table over nr segments (one per node, in any order, each node at most
 * once; a key's segment is its hash modulo nr), run in mode.  Every node
 * that opens it with the same segments in the same order sees the same
 * table.  c: the model's costs (NULL: calibrate now, against the first
 * segment of another node; see odsm_ds_calibrate).
 */
int odsm_ds_hash_open(const struct odsm_ds_seg *segs, unsigned int nr,
		      enum odsm_ds_mode mode, const struct odsm_ds_costs *c,
		      struct odsm_ds_hash **out);
void odsm_ds_hash_close(struct odsm_ds_hash *h);

int odsm_ds_insert(struct odsm_ds_hash *h, const void *key, size_t klen,
		   const void *val, size_t vlen, enum odsm_ds_promise p);
/* *vlen: in the room at val, out the value's length */
int odsm_ds_find(struct odsm_ds_hash *h, const void *key, size_t klen,
		 void *val, size_t *vlen, enum odsm_ds_promise p);
int odsm_ds_update(struct odsm_ds_hash *h, const void *key, size_t klen,
		   const void *val, size_t vlen, enum odsm_ds_promise p);
int odsm_ds_delete(struct odsm_ds_hash *h, const void *key, size_t klen,
		   enum odsm_ds_promise p);

/* The same, with the variant forced (request 1 / one-sided 0): benches. */
int odsm_ds_hash_op(struct odsm_ds_hash *h, enum odsm_ds_op op, int request,
		    const void *key, size_t klen, void *val, size_t *vlen,
		    enum odsm_ds_promise p);

/*
 * Measure the component costs against segment seg of h (one of another
 * node for an honest figure): reps (0: 64) of each component, the median
 * of each kept, req_ns as the owner answers now (its load included).
 * They become h's costs (gen one more; h re-decides) and, c not NULL,
 * are copied to *c.
 */
int odsm_ds_calibrate(struct odsm_ds_hash *h, unsigned int seg,
		      unsigned int reps, struct odsm_ds_costs *c);
/* Replace h's costs (a saved calibration, a test); h re-decides. */
void odsm_ds_set_costs(struct odsm_ds_hash *h, const struct odsm_ds_costs *c);
void odsm_ds_get_costs(const struct odsm_ds_hash *h, struct odsm_ds_costs *c);
/* What h runs op at p as now: 1 request, 0 one-sided, -EINVAL. */
int odsm_ds_variant(const struct odsm_ds_hash *h, enum odsm_ds_op op,
		    enum odsm_ds_promise p);

/* ---- the queue ----------------------------------------------------------- */

/*
 * A bounded multi-producer multi-consumer queue (a ring of cap slots of
 * up to ODSM_DS_VAL_MAX bytes) in this node's partition, entrusted to
 * trustee of runtime d: any node pushes and pops, one-sided or by request.
 * Every element pushed is popped once; the elements one producer pushed
 * come out in its order (to each consumer, and across consumers in the
 * order of the slots).  Push of a full queue: -ENOSPC, pop of an empty
 * one: -ENOENT; neither takes a slot.  The odsm_ds_seg describes it
 * (buckets is the capacity).
 */
int odsm_ds_queue_create(struct odsm_deleg *d, unsigned int trustee,
			 uint32_t cap, struct odsm_ds_seg *s);

struct odsm_ds_queue;

/* c NULL: calibrate against the queue's node now */
int odsm_ds_queue_open(const struct odsm_ds_seg *s, enum odsm_ds_mode mode,
		       const struct odsm_ds_costs *c,
		       struct odsm_ds_queue **out);
void odsm_ds_queue_close(struct odsm_ds_queue *q);
int odsm_ds_push(struct odsm_ds_queue *q, const void *val, size_t len,
		 enum odsm_ds_promise p);
/* *len: in the room at val, out the element's length */
int odsm_ds_pop(struct odsm_ds_queue *q, void *val, size_t *len,
		enum odsm_ds_promise p);
/* the same with the variant forced: request 1, one-sided 0 */
int odsm_ds_queue_op(struct odsm_ds_queue *q, enum odsm_ds_op op,
		     int request, void *val, size_t *len,
		     enum odsm_ds_promise p);
void odsm_ds_queue_set_costs(struct odsm_ds_queue *q,
			     const struct odsm_ds_costs *c);
int odsm_ds_queue_variant(const struct odsm_ds_queue *q, enum odsm_ds_op op,
			  enum odsm_ds_promise p);

/* What this process's tables counted (all of them together). */
struct odsm_ds_stats {
	uint64_t onesided;	/* operations run one-sided (queues too) */
	uint64_t requests;	/* operations sent to the owner */
	uint64_t served;	/* requests this process's trustees ran */
	uint64_t bad_requests;	/* requests refused as malformed (-EINVAL) */
	uint64_t waits;		/* polls of a bucket another op held */
	uint64_t retries;	/* claims again after readers came and went */
	uint64_t calibrations;
};
void odsm_ds_stats(struct odsm_ds_stats *s);

#ifdef __cplusplus
}
#endif

#endif /* ODSM_DS_H */
