/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm's synchronisation for programs on N nodes: names (publish an
 * owner box, an address or a delegation handle under a name, look it up
 * or wait for it from any node), start-up (odsm_app_join: every node of
 * the program meets in one call), a barrier and a mutex whose state
 * lives in the global heap.  Documentation/odsm/programs.rst shows them
 * at work; libodsm.rst, "Names, barriers and mutexes", is the reference.
 *
 * Everything here is built on raw words (odsm_read(), odsm_write() and
 * the atomics) of objects that no node borrows: the directory of node 0,
 * the name table, the barrier and mutex objects.  Waiting backs off
 * (50 us doubling up to 10 ms between polls) and gives up with an errno
 * when the node it waits for is down.
 *
 * Every function returns 0 or a negative errno value.
 */
#ifndef ODSM_SYNC_H
#define ODSM_SYNC_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct odsm_box;

/* ---- the directory ------------------------------------------------------ */

/*
 * Node K's directory: its partition's first object, ODSM_DIR_SIZE zeroed
 * bytes at heap_base + K * part_size whose word 0 is ODSM_DIR_MAGIC ^ K
 * (programs.rst).  libodsm keeps its own roots in words
 * ODSM_DIR_W_LIB .. ODSM_DIR_W_LIB + 19 of node 0's directory.
 */
#define ODSM_DIR_SIZE		4096
#define ODSM_DIR_MAGIC		0x4f44534d44495200ULL	/* "ODSMDIR\0" */
#define ODSM_DIR_W_LIB		300

/* ---- names -------------------------------------------------------------- */

#define ODSM_NAME_MAX		31	/* bytes of a name, without the NUL */

enum odsm_name_kind {
	ODSM_NAME_ADDR = 1,	/* a global address (colored or not) */
	ODSM_NAME_BOX,		/* an owner box, kept in the name table */
	ODSM_NAME_DELEG,	/* a delegation runtime: odsm_deleg_addr() */
	ODSM_NAME_BARRIER,	/* an odsm_barrier_new() address */
	ODSM_NAME_MUTEX,	/* an odsm_mutex_new() address */
	ODSM_NAME_APP,		/* odsm_app_join()'s own record */
	ODSM_NAME_KINDS
};

struct odsm_name {
	unsigned int kind;	/* enum odsm_name_kind */
	unsigned int node;	/* the node that published it */
	/*
	 * ADDR, DELEG, BARRIER, MUTEX: the value published.  BOX and APP:
	 * the global address of the owner box in the name table, for
	 * odsm_borrow_mut_at() (a shared borrow: odsm_read() the box's 16
	 * bytes into an odsm_box and borrow that)
	 */
	uint64_t value;
};

/*
 * Publish value under name (kind: not BOX, not APP).  -EEXIST when the
 * name is taken (whatever its kind), -ENAMETOOLONG, -EINVAL (empty name,
 * bad kind, zero value), -ENOSPC when the table is full, -ENOENT when
 * node 0 has no directory (nobody called odsm_app_join()).
 */
int odsm_name_publish(const char *name, unsigned int kind, uint64_t value);
/*
 * Publish the owner *b under name: the object's owner box moves into the
 * name table (*b becomes empty); any node takes the object with
 * odsm_borrow_mut_at() on the lookup's value.  Errors as above.
 */
int odsm_name_publish_box(const char *name, struct odsm_box *b);
/* Look name up: 0 and *out, or -ENOENT when nobody published it. */
int odsm_name_lookup(const char *name, struct odsm_name *out);
/* The same, waiting up to timeout_ms for it: -ETIMEDOUT if it never came. */
int odsm_name_wait(const char *name, unsigned int timeout_ms,
		   struct odsm_name *out);

/* ---- start-up ------------------------------------------------------------ */

struct odsm_app {
	unsigned int self;	/* this node's id */
	unsigned int nodes;	/* how many nodes run the program */
	/* the application's root: the global address of an owner box in the
	 * name table, empty at first (odsm_box_store_at(), then
	 * odsm_borrow_mut_at() from any node)
	 */
	uint64_t root;
	uint64_t barrier;	/* a barrier of one thread per node */
};

/*
 * Start the program called name on this node and meet the others: maps
 * the heap (odsm_init(), if not yet), waits until every node of the
 * cluster is up, makes this node's directory (or reuses it), and returns
 * once the program runs on every node (nodes: 0 for the cluster's node
 * count, or that count).  Call it before any allocation.  -ETIMEDOUT when
 * a node did not come within timeout_ms, -ENOTCONN when this node joined
 * no cluster, -EEXIST when the start of this node's partition holds
 * another object (programs.rst, Requirements).
 */
int odsm_app_join(struct odsm_app *app, const char *name, unsigned int nodes,
		  unsigned int timeout_ms);

/* ---- barrier ------------------------------------------------------------- */

/*
 * A barrier of count threads, on any nodes, in this node's partition:
 * *barrier gets its address (publish it with odsm_name_publish()).
 * Rounds repeat: the count-th arrival opens the round and starts the
 * next.
 */
int odsm_barrier_new(uint64_t *barrier, unsigned int count);
/*
 * Wait until count threads arrived (timeout_ms: 0 waits for ever):
 * 0, -EHOSTDOWN when the node of a thread that waits in the barrier or
 * the barrier's own node is down, -ETIMEDOUT.  After an error the
 * barrier is broken (a thread counted in a round that never ends).
 */
int odsm_barrier_wait(uint64_t barrier, unsigned int timeout_ms);
/* Free it (nobody may wait in it). */
int odsm_barrier_free(uint64_t barrier);

/* ---- mutex --------------------------------------------------------------- */

enum odsm_mutex_kind {
	/* a lock word taken with compare-and-swap (the NIC's atomics over
	 * RDMA), with bounded backoff
	 */
	ODSM_MUTEX_CAS = 1,
	/* a FIFO ticket lock: the ticket is a fetch-and-add run by the
	 * mutex's home (grants in the order the requests arrive there),
	 * waiters poll the grant with backoff
	 */
	ODSM_MUTEX_FIFO,
	/* a FIFO queue lock delegated to a trustee: the process that makes
	 * the mutex must run a delegation runtime (odsm_spawn_start(), else
	 * odsm_mutex_new() is -ESRCH) and keep it running while the mutex
	 * is used; lock and unlock are operations it runs, grants go in the
	 * order the requests reach it, a waiter polls a word of its own
	 * node (programs.rst, "The delegated mutex")
	 */
	ODSM_MUTEX_DELEG,
	ODSM_MUTEX_KINDS
};

/* A locked mutex: the mutable borrow of the object it guards. */
struct odsm_guard {
	uint64_t mutex;
	uint64_t word;		/* what the lock word holds for us */
	uint64_t m_g, m_ext;	/* the borrow (an odsm_mut) */
	unsigned int flags;	/* the library's */
};

/*
 * A mutex of kind guarding the object *obj owns (*obj becomes empty: the
 * mutex owns it now), in this node's partition; *mutex gets its address.
 */
int odsm_mutex_new(uint64_t *mutex, unsigned int kind, struct odsm_box *obj);
/*
 * Lock: *p points at the guarded object, here (a mutable borrow: the
 * object moves to this node).  Waits for ever with backoff unless
 * the mutex's node is down (-EHOSTDOWN).  -EOWNERDEAD: the holder's node
 * died holding it (or, CAS and FIFO kinds, left and joined again); the
 * lock is ours, *p is the object as the last unlock
 * left it (the dead holder's changes are lost): make it consistent and
 * call odsm_mutex_consistent(), or unlock and every later lock fails
 * -ENOTRECOVERABLE.  -EINVAL: not a mutex.  The delegated kind also
 * fails when its trustee does: -EHOSTDOWN or -ETIMEDOUT (its node died),
 * -ENOTCONN (its process died), -ESRCH or -ESHUTDOWN (its runtime
 * stopped), within the cluster's timeout.
 */
int odsm_mutex_lock(uint64_t mutex, struct odsm_guard *g, void **p);
/* The same without waiting: -EBUSY when another holds it. */
int odsm_mutex_trylock(uint64_t mutex, struct odsm_guard *g, void **p);
/* After -EOWNERDEAD: the object is consistent again. */
int odsm_mutex_consistent(struct odsm_guard *g);
/* Return the borrow and release the lock.  -EPERM: not ours any more. */
int odsm_mutex_unlock(struct odsm_guard *g);
/* Free the mutex; *obj (may be NULL: the object is freed) takes it back. */
int odsm_mutex_free(uint64_t mutex, struct odsm_box *obj);

#ifdef __cplusplus
}
#endif

#endif /* ODSM_SYNC_H */
