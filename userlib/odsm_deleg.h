/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm delegation (Trust<T>): an object is entrusted to a trustee
 * thread, and every other thread ships registered operations to it
 * instead of locking the object or moving it.
 *
 * On one node, client and trustee talk through request and response slots
 * in an arena that every process of the node maps at one address (the
 * heap's local partition, odsm_deleg_arena_heap(); or any shared mapping,
 * odsm_deleg_arena_mem()): no system call on the request path.  The batch
 * format is uapi/linux/odsm_deleg.h; Documentation/odsm/delegation.rst
 * describes the API, the rules and the failure behaviour.
 *
 * Every function returns 0 (apply: the operation's own result) or a
 * negative errno value.  Errors of the runtime itself:
 *   -EBADRQC      the trustee does not know the operation id
 *   -E2BIG        argument or result room longer than a slot can carry
 *   -ESTALE       the handle's object was freed (or the handle is forged)
 *   -EAGAIN       ODSM_DELEG_NOWAIT and the batch is full with one in flight
 *   -EDEADLK      apply from inside an operation that a trustee runs
 *   -EOWNERDEAD   the trustee's process died (its clients learn it in
 *                 milliseconds, never hang)
 *   -ESHUTDOWN    the runtime was stopped
 *   -EBADMSG      the trustee dropped the batch as malformed
 *   -EUSERS       every client slot of the arena is taken
 *   -EFAULT       apply_with: the argument cannot be read (or copied to
 *                 the trustee's node)
 *   -EREMOTE      entrust: the object is not where the trustee can hold it
 *                 (a runtime in plain shared memory, not the heap)
 */
#ifndef ODSM_DELEG_H
#define ODSM_DELEG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct odsm_box;

/*
 * A registered operation: runs on the trustee with the object, the
 * argument bytes, and room for *ret_len result bytes (in: the room, out:
 * the bytes written).  Its return value is apply's.  It must not block
 * or call apply (-EDEADLK): that is what launch is for.
 */
typedef int (*odsm_deleg_fn)(void *obj, const void *arg, size_t arg_len,
			     void *ret, size_t *ret_len);

/*
 * Register fn under name; *id (may be NULL) gets its id: a 64-bit hash of
 * the name, so the same in every process of the application on every node
 * (never a code pointer).  Registering the same name and function again
 * is a no-op; -EEXIST when the name has another function or another
 * name has the same id; -ENOSPC when the table is full.  Register every
 * operation before starting trustees or applying.
 */
int odsm_deleg_register(const char *name, odsm_deleg_fn fn, uint64_t *id);
/* The id name has (registered or not). */
uint64_t odsm_deleg_op_id(const char *name);

/*
 * Where the runtime's slots live: base..base+size, mapped at base in every
 * process that takes part.  obj_free frees an entrusted object when its
 * last handle goes (NULL: nothing to free); local returns where
 * [g, g + len) can be read in place on this node, or NULL.
 */
struct odsm_deleg_arena {
	void *base;
	size_t size;
	uint64_t cg;			/* heap arenas: the object's address */
	int (*obj_free)(const struct odsm_deleg_arena *a, uint64_t g);
	void *(*local)(const struct odsm_deleg_arena *a, uint64_t g,
		       size_t len);
};

struct odsm_deleg_config {
	unsigned int trustees;	/* trustee threads, 1..64 */
	unsigned int clients;	/* client threads at once, all processes
				 * and launch workers included: 1..4096
				 */
	unsigned int slot_size;	/* power of 2, 256..65536; 0: 1024 */
	unsigned int cells;	/* entrusted objects per trustee; 0: 1024 */
	unsigned int workers;	/* launch workers; 0: 1 */
	const int *cpus;	/* trustee i runs on cpus[i] (< 0: anywhere);
				 * NULL: not pinned
				 */
	unsigned int spin;	/* empty polls before a trustee sleeps; 0:
				 * the default
				 */
};

/* The bytes an arena needs for config c (0 for a config that is invalid). */
size_t odsm_deleg_arena_size(const struct odsm_deleg_config *c);
/* An arena of size bytes at base, which the caller mapped (shared). */
void odsm_deleg_arena_mem(struct odsm_deleg_arena *a, void *base,
			  size_t size);
/* An arena in this node's partition of the heap (after odsm_init()). */
int odsm_deleg_arena_heap(struct odsm_deleg_arena *a, size_t size);
/* The heap arena whose runtime another process published at gaddr. */
int odsm_deleg_arena_at(struct odsm_deleg_arena *a, uint64_t gaddr);
int odsm_deleg_arena_heap_free(struct odsm_deleg_arena *a);

struct odsm_deleg;

/* This process runs the trustees of a new runtime in arena a. */
int odsm_deleg_start(const struct odsm_deleg_arena *a,
		     const struct odsm_deleg_config *c,
		     struct odsm_deleg **out);
/* This process is a client of the runtime another one started in a. */
int odsm_deleg_attach(const struct odsm_deleg_arena *a,
		      struct odsm_deleg **out);
/*
 * Stop the trustees (when this process started them: clients then get
 * -ESHUTDOWN) and detach.  Every other thread of this process must be
 * done with the runtime.
 */
void odsm_deleg_stop(struct odsm_deleg *d);
/* The global address of the runtime: what another process attaches to. */
uint64_t odsm_deleg_addr(const struct odsm_deleg *d);
/*
 * The runtime at addr (an odsm_deleg_addr(), a handle's arena) as this
 * process sees it: attached (once) when it is on this node, else a
 * runtime of another node, whose batches the module carries.  For
 * entrust, flush, poll and drain; apply and the rest find a handle's
 * runtime themselves.  -EINVAL when addr is no runtime's.
 */
int odsm_deleg_at(uint64_t addr, struct odsm_deleg **out);

/*
 * A handle to an entrusted object: plain data, valid in every process
 * that attached the runtime.  Copy it with odsm_trust_clone() (a
 * reference), end it with odsm_trust_drop(); the object is freed when
 * the last reference goes.
 */
typedef struct odsm_trust {
	uint64_t arena;		/* odsm_deleg_addr() */
	uint32_t cell;		/* the trust cell */
	uint32_t gen;		/* its generation */
} odsm_trust;

/*
 * Hand the object *b owns to trustee number trustee: *b becomes empty and
 * *t is its first reference.  An object of another node than the
 * runtime's is moved there first (by this process for a runtime of this
 * node, by the runtime's gateway for one of another node); when entrust
 * then fails, *b still owns it, at its new address.  dtor (an op id, or
 * 0) runs on the object before it is freed.  -ENOSPC: the trustee has no
 * free cell.
 */
int odsm_deleg_entrust(struct odsm_deleg *d, unsigned int trustee,
		       struct odsm_box *b, uint64_t dtor, odsm_trust *t);
int odsm_trust_clone(const odsm_trust *t, odsm_trust *out);
int odsm_trust_drop(odsm_trust *t);
/*
 * End t's object now, whatever references remain (those of a node that
 * died are never returned): every handle of it is -ESTALE from then on,
 * and the trustee runs dtor and frees it.  -ESTALE when it had ended.
 */
int odsm_trust_revoke(odsm_trust *t);

/*
 * Run op on t's object with arg_len bytes of arg and wait for it; ret
 * gets up to *ret_len bytes (ret_len may be NULL for none, in: room,
 * out: bytes).  Pending apply_then requests of this thread to the same
 * trustee go first, in one batch with it.
 */
int odsm_deleg_apply(const odsm_trust *t, uint64_t op, const void *arg,
		     size_t arg_len, void *ret, size_t *ret_len);

/* A completion the caller polls: done becomes 1 when it completed. */
struct odsm_deleg_completion {
	volatile int done;
	int status;
	size_t ret_len;
};

/* Called on the issuing thread when an apply_then completes.  ret: the
 * caller's buffer, or without one the answer's bytes, which stay as they
 * are until fn returns, whatever fn sends meanwhile.
 */
typedef void (*odsm_deleg_done_fn)(void *cookie, int status,
				   const void *ret, size_t ret_len);

#define ODSM_DELEG_NOWAIT	1	/* -EAGAIN rather than wait for room */

/*
 * Queue op on t's object without waiting: it goes in the next batch to
 * t's trustee, sent when the batch is full, on odsm_deleg_flush(),
 * odsm_deleg_poll() or before this thread waits.  On completion, ret
 * (may be NULL) gets up to ret_cap result bytes, then fn (may be NULL)
 * runs and c (may be NULL) is marked done, on this thread, in the order
 * the requests to that trustee were issued.  0 when queued.
 */
int odsm_deleg_apply_then(const odsm_trust *t, uint64_t op, const void *arg,
			  size_t arg_len, void *ret, size_t ret_cap,
			  odsm_deleg_done_fn fn, void *cookie,
			  struct odsm_deleg_completion *c, unsigned int flags);

/*
 * apply with a big argument: len bytes at global address gaddr, which the
 * trustee reads in place (the caller keeps them unchanged until the call
 * returns).  When they are on another node than the trustee's, they are
 * copied to the trustee's node first (by this process, or by the
 * trustee's gateway) and the copy is freed when the call returns.
 * -EFAULT when they cannot be read.
 */
int odsm_deleg_apply_with(const odsm_trust *t, uint64_t op, uint64_t gaddr,
			  size_t len, void *ret, size_t *ret_len);

/*
 * Run op on a launch worker of the trustee's process, not in its loop:
 * it may block, allocate, apply (to any trustee, its own included).  Its
 * obj argument is a const odsm_trust * (the handle, not the object: it
 * reaches the object by applying to it like any client).
 */
int odsm_deleg_launch(const odsm_trust *t, uint64_t op, const void *arg,
		      size_t arg_len, void *ret, size_t *ret_len);

/* Send this thread's queued requests to d's trustees. */
int odsm_deleg_flush(struct odsm_deleg *d);
/* Complete what has been answered and send what is queued when the slot
 * is free; never waits.  The number of requests completed, or -errno.
 */
int odsm_deleg_poll(struct odsm_deleg *d);
/* Flush and wait until every request of this thread completed. */
int odsm_deleg_drain(struct odsm_deleg *d);
/* This thread is done with d: what it sent completes (as in drain), and
 * its client slot is free for another.  From a callback, when the call
 * that ran the callback returns.
 */
void odsm_deleg_thread_done(struct odsm_deleg *d);

/* What the runtime counted, summed over its trustees and clients. */
struct odsm_deleg_stats {
	uint64_t requests;	/* requests the trustees ran (or refused) */
	uint64_t batches;	/* request batches they served */
	uint64_t req_bytes;	/* request batch bytes they read */
	uint64_t resp_bytes;	/* response batch bytes they wrote */
	uint64_t sleeps;	/* times a trustee slept on its futex */
	uint64_t launches;	/* requests handed to launch workers */
	uint64_t unknown_op;	/* -EBADRQC answers */
	uint64_t stale;		/* -ESTALE answers: freed or forged handles */
	uint64_t malformed;	/* batches dropped as malformed */
	uint64_t bad_arg;	/* -EFAULT/-EREMOTE/-EINVAL answers */
	uint64_t no_cell;	/* entrusts refused: no free cell */
	uint64_t sent;		/* batches the clients sent */
	uint64_t too_long;	/* -E2BIG refusals on the client */
	uint64_t slot_full;	/* -EAGAIN refusals on the client */
	uint64_t deadlk;	/* -EDEADLK refusals on the client */
	uint64_t dead;		/* waits that ended with -EOWNERDEAD */
};
void odsm_deleg_stats(const struct odsm_deleg *d, struct odsm_deleg_stats *s);

/*
 * Whether runtime d (started by this process, in the heap) serves other
 * nodes: 0 when its gateways run; else why not, as a negative errno (the
 * module's bind refused it: -EADDRINUSE when another file bound its
 * address first; no module; no thread).  -EINVAL for a runtime this
 * process does not run, or one in plain shared memory (not in the heap:
 * it never serves other nodes).
 */
int odsm_deleg_gateway_status(const struct odsm_deleg *d);

#ifdef __cplusplus
}
#endif

#endif /* ODSM_DELEG_H */
