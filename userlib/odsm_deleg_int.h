/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libodsm delegation, inside: the arena's layout (shared by every process
 * of the node, so plain fixed-size data and process-shared futexes only),
 * and what the runtime's files share in one process.  Not installed.
 *
 * The arena:
 *
 *   struct dg_hdr                          identity, geometry, state
 *   struct dg_trustee [trustees]           liveness, wake futex, counters
 *   struct dg_client  [clients]            who holds each client slot
 *                                          (the first DG_LANES: lanes)
 *   struct dg_cell    [trustees * cells]   the entrusted objects
 *   slots [trustees][clients] { request, response }, slot_size each
 *
 * Slots are grouped by trustee, so a trustee scans its own contiguous
 * range.  Everything is 64-byte aligned: a trustee's hot words, a client's
 * and each slot are in cache lines of their own.
 */
#ifndef ODSM_DELEG_INT_H
#define ODSM_DELEG_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <linux/odsm_deleg.h>
#include "odsm_deleg.h"
#include "odsm_dslot.h"

#define DG_MAGIC	0x474c45444d53444fULL	/* "ODSMDELG" */
#define DG_VERSION	2
#define DG_MAX_TRUSTEES	64
#define DG_MAX_CLIENTS	4096
#define DG_MAX_ATTACH	8		/* runtimes one process uses at once */
#define DG_LINE		64
#define DG_GATEWAYS	2		/* threads relaying remote batches */
/*
 * Client slots [0, DG_LANES) of every arena are lanes: the module writes
 * other nodes' batches there itself (ODSM_DELEG_BIND_LANES), so that they
 * reach their trustee without a gateway thread.  No client thread takes
 * them; in an arena outside the heap they stay unused.
 */
#define DG_LANES	4

/* dg_hdr.state */
#define DG_RUNNING	1
#define DG_STOPPED	2
#define DG_DEAD		3		/* a trustee died: seen by a client */

struct dg_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t state;
	uint64_t gaddr;			/* this header's global address */
	uint64_t size;			/* bytes of the arena in use */
	uint32_t trustees, clients, slot_size, cells;
	uint32_t clients_hi;		/* 1 + the highest client slot used */
	int32_t owner_pid;		/* the process running the trustees */
	uint32_t lanes;			/* DG_LANES: clients counts them */
	uint32_t pad;
	uint64_t off_trustees, off_clients, off_cells, off_slots;
} __attribute__((aligned(DG_LINE)));

/* Counters: each written by one thread (relaxed), read by anyone. */
struct dg_tcount {
	uint64_t requests, batches, req_bytes, resp_bytes, sleeps, launches;
	uint64_t unknown_op, stale, malformed, bad_arg, no_cell;
	uint64_t deadlk;		/* apply refused on this trustee's thread */
};

struct dg_ccount {
	uint64_t sent, too_long, slot_full, deadlk, dead;
};

struct dg_trustee {
	/*
	 * Locked by the trustee thread for as long as it runs; robust and
	 * process-shared, so when the thread dies the kernel marks it
	 * owner-dead (a client's trylock sees EOWNERDEAD without a system
	 * call, and can never mistake a dead trustee for a slow one).
	 */
	pthread_mutex_t alive;
	uint32_t wake;			/* futex: bumped to wake the trustee */
	uint32_t sleeping;		/* 1 while it is about to sleep */
	struct dg_tcount n;
} __attribute__((aligned(DG_LINE)));

struct dg_client {
	/* the holder: its process << 32 | its thread id; 0: free.  One
	 * word, claimed in one compare-and-swap: a claimer that judges the
	 * holder dead reads both from the value it replaces
	 */
	uint64_t owner;
	uint32_t waiting;		/* 1 while it sleeps on a response */
	uint32_t pad;
	struct dg_ccount n;
} __attribute__((aligned(DG_LINE)));

/*
 * An entrusted object.  word = generation << 32 | references: clients
 * change the references with compare-and-swap (clone, drop); only the
 * trustee changes the generation (entrust, free), so a handle of an older
 * generation never matches again.
 */
struct dg_cell {
	uint64_t word;
	uint64_t g;			/* the object (trustee's) */
	uint64_t dtor;			/* op id run before freeing; 0 */
	uint32_t next_free;		/* trustee's free list */
	uint32_t pad;
};

/* One (client thread, trustee) pair as the client thread sees it. */
struct dg_pending {
	void *ret;
	size_t ret_cap;
	int *status;			/* apply: where to put the result */
	size_t *ret_len;
	odsm_deleg_done_fn fn;
	void *cookie;
	struct odsm_deleg_completion *c;
	bool *fin;			/* set once it completed */
	uint32_t tag;
};

/*
 * A launch set aside until the next batch of its pair is sent, which it
 * ends (dg_add_launch()); in the frame of the call that waits for it.
 */
struct dg_launch {
	struct odsm_dreq r;
	const void *arg;
	struct dg_pending pd;
};

/*
 * A batch to a runtime of another node (odsm_deleg_remote.c): sent with
 * ODSM_IOC_DELEG_CALL by the client thread itself (when it waits for the
 * answer anyway) or by a courier thread (apply_then: the client goes on
 * staging, and collects later); done is the futex it waits on.
 */
struct dg_rjob {
	struct dg_rjob *next;		/* on the couriers' queue */
	uint64_t endpoint;
	uint8_t *req, *resp;		/* slot_size bytes each */
	uint32_t slot_size, req_len, resp_len;
	int32_t status;			/* the call's: 0 or -errno */
	uint32_t done;			/* 1 once status and resp are set */
};

struct dg_pair {
	uint32_t seq;			/* the last batch published */
	bool inflight;
	uint32_t nfly;			/* requests in the batch in flight */
	uint8_t *stage;			/* the next batch, built here */
	struct odsm_dbatch b;		/* over stage */
	struct dg_pending *pstage, *pfly, *pdone;
	struct odsm_dresp_view *rv;
	/*
	 * The answers dg_complete() is handing out: the response slot, or
	 * rcopy once a callback sent the next batch, whose answer lands there
	 */
	const uint8_t *cresp;
	uint8_t *rcopy;
	bool in_cb;			/* completions of this pair running */
	bool failing;			/* dg_fail_staged() completes in
					 * place: no staging, no flush
					 */
	struct dg_launch *launch;	/* ends the next batch sent */
	struct dg_rjob *job;		/* remote runtimes: the batch out */
};

struct dg_thread {
	struct odsm_deleg *d;
	uint64_t did;			/* d's id when this was made */
	unsigned long fgen;		/* dg_fork_gen then: of this process */
	uint32_t client;
	uint32_t tag;
	struct dg_pair *pairs;		/* [trustees] */
	struct dg_client rcl;		/* remote runtimes: this thread's
					 * counters (it holds no slot there)
					 */
	uint32_t cb_depth;		/* callbacks of d's requests running
					 * on this thread (nested ones count)
					 */
	bool retire;			/* odsm_deleg_thread_done() from a
					 * callback: done when the call that
					 * ran it returns (dg_leave())
					 */
};

struct dg_job;

/* The runtime as one process sees it. */
struct odsm_deleg {
	struct odsm_deleg_arena a;
	struct dg_hdr *h;
	uint8_t *base;
	uint64_t did;			/* unique in this process */
	/*
	 * The geometry, as it was checked at start or attach, in this
	 * process's memory: the header in the arena is anyone's to write,
	 * and a slot size or a count read from it again at each use would
	 * size what the parser fills (state, clients_hi and magic stay live)
	 */
	struct {
		uint32_t trustees, clients, slot_size, cells;
	} geo;
	int att;			/* index in the attachment table */
	bool host;			/* this process runs the trustees */
	unsigned long fgen;		/* dg_fork_gen when it was attached */
	bool remote;			/* another node runs it: h is a copy
					 * of its header, nothing else is here
					 */
	/* host only */
	pthread_t *threads;
	struct dg_tlocal *tl;		/* per trustee */
	unsigned int nthreads;
	pthread_t *workers;
	unsigned int nworkers;
	pthread_mutex_t jlock;
	pthread_cond_t jcond;
	struct dg_job *jhead, *jtail;
	bool jstop;
	unsigned int spin;
	/* the gateway: batches from other nodes (odsm_deleg_gateway.c) */
	int gw_fd;
	pthread_t gw[DG_GATEWAYS];
	unsigned int ngw;
	int gw_err;			/* why there is none: -errno */
};

static inline struct dg_trustee *dg_trustee(const struct odsm_deleg *d,
					    unsigned int t)
{
	return (struct dg_trustee *)(d->base + d->h->off_trustees) + t;
}

static inline struct dg_client *dg_client(const struct odsm_deleg *d,
					  unsigned int c)
{
	return (struct dg_client *)(d->base + d->h->off_clients) + c;
}

static inline struct dg_cell *dg_cell(const struct odsm_deleg *d,
				      uint32_t i)
{
	return (struct dg_cell *)(d->base + d->h->off_cells) + i;
}

/* Client c's request slot to trustee t; its response slot follows. */
static inline uint8_t *dg_req_slot(const struct odsm_deleg *d,
				   unsigned int t, unsigned int c)
{
	return d->base + d->h->off_slots +
	       ((uint64_t)t * d->geo.clients + c) * 2 * d->geo.slot_size;
}

static inline uint8_t *dg_resp_slot(const struct odsm_deleg *d,
				    unsigned int t, unsigned int c)
{
	return dg_req_slot(d, t, c) + d->geo.slot_size;
}

#define DG_INC(field)	__atomic_store_n(&(field), (field) + 1, __ATOMIC_RELAXED)
#define DG_ADD(field, v) __atomic_store_n(&(field), (field) + (v), __ATOMIC_RELAXED)

/* odsm_deleg_ops.c */
odsm_deleg_fn dg_op_lookup(uint64_t id);
/*
 * The gateway's own request (odsm_deleg_gateway.c): a batch of one APPLY
 * of this id, argument a struct odsm_box, asks a runtime's node to move
 * the box's object into its partition (entrust of an object of another
 * node); the answer is the object's new address.  Its name, DG_OP_NAME_MOVE,
 * cannot be registered.
 */
#define DG_OP_NAME_MOVE	"odsm.deleg.move-here"
uint64_t dg_op_move_id(void);

/* odsm_deleg_arena.c: the attachment table, liveness */
struct odsm_deleg *dg_find(uint64_t arena);
int dg_attach_remote(struct odsm_deleg *d, struct odsm_deleg **out);
int dg_layout(const struct odsm_deleg_config *c, struct dg_hdr *h);
/* odsm_deleg_wait.c: sleep on a word (a futex, or the module's wait) */
int dg_futex_wait(uint32_t *w, uint32_t val, long timeout_ns);
void dg_futex_wake(uint32_t *w, int n);
/* does w sleep in the module (else a heap word naps)? */
bool dg_kwait_ok(const uint32_t *w);
int dg_trustee_alive(struct odsm_deleg *d, unsigned int t);
void dg_detach(struct odsm_deleg *d);
/* Lock the table if d (with id did) is still attached: true, then unlock. */
bool dg_lock_attached(struct odsm_deleg *d, uint64_t did);
void dg_unlock_attached(void);

/* odsm_deleg_trustee.c */
int dg_trustees_start(struct odsm_deleg *d, const struct odsm_deleg_config *c);
void dg_trustees_stop(struct odsm_deleg *d);
/* set on trustee threads: apply from there is refused */
extern __thread bool dg_in_trustee;
extern __thread unsigned int dg_my_trustee;

/* odsm_deleg_client.c */
void dg_thread_release_all(struct odsm_deleg *d);
int dg_relay(struct odsm_deleg *d, const uint8_t *req, uint32_t req_len,
	     uint8_t *resp, uint32_t *resp_len);

/* odsm_deleg_remote.c: runtimes of other nodes */
int dg_remote_attach(uint64_t arena, struct odsm_deleg **out);
void dg_remote_free(struct odsm_deleg *d);
void dg_rcall(struct dg_rjob *j);
int dg_copy_here(uint64_t gaddr, uint64_t len, uint64_t *cg);
void dg_rsend(struct dg_rjob *j);
int dg_rwait(struct dg_rjob *j);
uint64_t dg_cell_gaddr(const struct odsm_deleg *d, uint32_t idx);

/* odsm_deleg_gateway.c */
/* the most bytes of apply_with arguments copied here for one batch */
#define DG_GW_COPY_MAX	(64ULL << 20)
unsigned int dg_gw_bring_args(const struct odsm_deleg *d, uint8_t *req,
			      const struct odsm_dreq_view *v, uint32_t n,
			      uint64_t *copies);
void dg_gateway_start(struct odsm_deleg *d);
void dg_gateway_stop(struct odsm_deleg *d);

static inline void dg_pause(void)
{
	__builtin_ia32_pause();
}

/*
 * Bumped in a child of fork(): a client slot, a thread record or the
 * trustees a process had are its parent's in the child (the slot is in
 * shared memory), so what carries an older value is not the child's.
 * Compared on every call: no getpid() system call on the fast path.
 */
extern unsigned long dg_fork_gen;
/* Count forks from now on (once per process; any runtime's attach). */
void dg_fork_watch(void);

/* d's geometry from the header h it was started or checked with */
static inline void dg_geo_set(struct odsm_deleg *d, const struct dg_hdr *h)
{
	d->geo.trustees = h->trustees;
	d->geo.clients = h->clients;
	d->geo.slot_size = h->slot_size;
	d->geo.cells = h->cells;
}

#endif /* ODSM_DELEG_INT_H */
