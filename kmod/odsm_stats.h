/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Event counters.  Each is a per-CPU u64 bumped without locks on the paths
 * that count it and summed over CPUs when /sys/kernel/odsm/stats/<name> is
 * read.  odsm_stat_names[] in odsm_stats.c holds the file names, and
 * Documentation/ABI/testing/sysfs-kernel-odsm describes every one; keep the
 * three in step.
 */
#ifndef _ODSM_STATS_H
#define _ODSM_STATS_H

#include <linux/percpu.h>

enum odsm_stat {
	ODSM_STAT_allocs,		/* objects allocated */
	ODSM_STAT_alloc_bytes,		/* usable bytes allocated */
	ODSM_STAT_alloc_einval,		/* allocations refused: bad arguments */
	ODSM_STAT_alloc_enomem,		/* allocations refused: partition full */
	ODSM_STAT_frees,		/* objects freed */
	ODSM_STAT_free_bytes,		/* usable bytes freed */
	ODSM_STAT_bad_frees,		/* frees refused: not a live object */
	ODSM_STAT_moves,		/* objects moved to a fresh address */
	ODSM_STAT_mmaps,		/* heap mappings created */
	ODSM_STAT_mmap_refused,		/* mmap calls refused */
	ODSM_STAT_faults,		/* page faults in the heap */
	ODSM_STAT_page_allocs,		/* zeroed pages added to the store */
	ODSM_STAT_page_frees,		/* pages released with their blocks */
	ODSM_STAT_sigbus_remote,	/* touches of another node's partition */
	ODSM_STAT_sigbus_unbacked,	/* touches of local blocks with no object */
	ODSM_STAT_fault_enomem,		/* faults that found no memory */
	ODSM_STAT_bad_ioctls,		/* ioctls refused: bad command or args */
	ODSM_STAT_msgs_tx,		/* messages sent to peers */
	ODSM_STAT_msgs_rx,		/* well-formed messages received */
	ODSM_STAT_bad_msgs,		/* messages dropped as malformed */
	ODSM_STAT_served,		/* peers' requests answered */
	ODSM_STAT_remote_reads,		/* read requests sent */
	ODSM_STAT_remote_writes,	/* write requests sent */
	ODSM_STAT_remote_atomics,	/* atomic requests sent */
	ODSM_STAT_remote_allocs,	/* alloc requests sent */
	ODSM_STAT_remote_frees,		/* free requests sent */
	ODSM_STAT_rpc_timeouts,		/* requests unanswered in time */
	ODSM_STAT_rpc_hostdown,		/* requests failed: peer down */
	ODSM_STAT_peers_down,		/* peers that went from up to down */
	ODSM_STAT_borrow_hits,		/* remote shared borrows: cached copy */
	ODSM_STAT_borrow_misses,	/* remote shared borrows: copied now */
	ODSM_STAT_prefetched,		/* copies PREFETCH made, idle */
	ODSM_STAT_borrow_returns,	/* references on cached copies dropped */
	ODSM_STAT_mut_moves,		/* remote mutable borrows: moved here */
	ODSM_STAT_mut_taken,		/* ... a cached copy became the object */
	ODSM_STAT_move_onesided,	/* moves read one-sided (RDMA) */
	ODSM_STAT_move_rest_onesided,	/* pieces of moves' rests one-sided */
	ODSM_STAT_move_free_errors,	/* moved originals not freed at home */
	ODSM_STAT_writebacks,		/* owner boxes written by WRITE_BACK */
	ODSM_STAT_bytes_fetched,	/* object bytes fetched from homes */
	ODSM_STAT_cache_evictions,	/* cached copies that left the cache */
	ODSM_STAT_cache_shrunk,		/* ... of them, taken by the shrinker */
	ODSM_STAT_kept_dropped,		/* kept blocks given back (reclaim, drop) */
	ODSM_STAT_lazy_faults,		/* faults that fetched a lazy copy's pages */
	ODSM_STAT_lazy_pages,		/* pages those faults filled */
	ODSM_STAT_lazy_onesided,	/* ... of them read one-sided (RDMA) */
	ODSM_STAT_sigbus_lazy,		/* touches of a lazy copy that failed */
	ODSM_STAT_lazy_unlocked,	/* lazy fetches made with mmap_lock
					 * dropped (the fault retried)
					 */
	ODSM_STAT_lazy_stale,		/* lazy fetches refused: the home
					 * restarted meanwhile
					 */
	ODSM_STAT_lazy_prefills,	/* accesses that are no faults (READ,
					 * atomics, FETCH) that filled a lazy
					 * copy's pages first
					 */
	ODSM_STAT_lazy_refused,		/* peers' requests refused: they
					 * reached a lazily filled copy
					 */
	ODSM_STAT_auth_failures,	/* handshakes refused: no proof of the key */
	ODSM_STAT_onesided_reads,	/* one-sided RDMA READs of peers' memory */
	ODSM_STAT_onesided_writes,	/* one-sided RDMA WRITEs to peers' memory */
	ODSM_STAT_onesided_bytes,	/* bytes those READs and WRITEs moved */
	ODSM_STAT_onesided_fallbacks,	/* requests over RDMA instead */
	ODSM_STAT_onesided_atomics,	/* one-sided RDMA atomics on peers */
	ODSM_STAT_onesided_spills,	/* reads/writes sent as requests: the
					 * connection's slots (or its QP's
					 * READ depth) were all in use
					 */
	ODSM_STAT_onesided_overlaps,	/* one-sided operations started while
					 * another was in flight on the
					 * connection
					 */
	ODSM_STAT_onesided_copies,	/* borrow misses read one-sided */
	ODSM_STAT_onesided_copy_refused,	/* read so, but the published
						 * words said no: FETCH
						 */
	ODSM_STAT_onesided_copy_known,	/* read so without the word before
					 * the bytes: known from before
					 */
	ODSM_STAT_onesided_run_copies,	/* read so: multi-block objects */
	ODSM_STAT_loop_atomics,		/* flagged atomics of our own words,
					 * run by our device (loopback)
					 */
	ODSM_STAT_atomic_qps,		/* atomics QPs connected for peers */
	ODSM_STAT_atomics_unanswered,	/* one-sided atomics completed without
					 * their old value: connection closed
					 */
	ODSM_STAT_keys_sent,		/* blocks registered for a peer when
					 * its connection came up or it asked
					 * (KEYS)
					 */
	ODSM_STAT_keys_received,	/* peers' blocks we got keys for so */
	ODSM_STAT_keys_asked,		/* blocks we asked peers to register
					 * (KEYS_ASK)
					 */
	ODSM_STAT_keys_asks_dropped,	/* peers' KEYS_ASKs dropped: one of
					 * theirs was being served
					 */
	ODSM_STAT_map_requests,		/* MAP requests sent */
	ODSM_STAT_mr_registrations,	/* blocks registered for peers */
	ODSM_STAT_map_refused,		/* MAP requests refused */
	ODSM_STAT_stale_refused,	/* stale colored addresses refused */
	ODSM_STAT_owner_refused,	/* owner-box accesses refused: the
					 * object holding it has copies out
					 */
	ODSM_STAT_copies_dropped,	/* idle copies dropped on request */
	ODSM_STAT_rdma_conn_refused,	/* RDMA connection requests refused:
					 * no member's address, or too many
					 * unauthenticated
					 */
	ODSM_STAT_rdma_loop_refused,	/* loopback pair requests refused:
					 * not this attempt's token
					 */
	ODSM_STAT_copy_writes_refused,	/* peers' writes into our copies */
	ODSM_STAT_cache_stale_refused,	/* copies of a home's former
					 * incarnation not served or indexed
					 */
	ODSM_STAT_move_frees_stale,	/* frees of moved originals dropped:
					 * their home restarted
					 */
	ODSM_STAT_store_enomem,		/* page-store pages not allocated */
	ODSM_STAT_config_refused,	/* SET_CONFIG refused: busy node */
	ODSM_STAT_fault_drops,		/* messages the injector dropped */
	ODSM_STAT_fault_delays,		/* ... delayed */
	ODSM_STAT_fault_dups,		/* ... sent twice */
	ODSM_STAT_fault_holds,		/* holds and slowed teardowns */
	ODSM_STAT_dup_requests,		/* peers' requests refused as replays */
	ODSM_STAT_accept_refused,	/* accepted sockets closed at once: not
					 * from a node that dials us, or too
					 * many unauthenticated ones
					 */
	ODSM_STAT_accept_evicted,	/* unauthenticated connections closed
					 * for a newer one from their address
					 */
	ODSM_STAT_handshake_timeouts,	/* accepted connections closed with no
					 * handshake done by the deadline
					 */
	ODSM_STAT_requests_refused,	/* peers' requests refused: their
					 * queue was full
					 */
	ODSM_STAT_requests_expired,	/* peers' requests not served: their
					 * caller had given up meanwhile
					 */
	ODSM_STAT_calls_retried,	/* calls sent again after a refusal
					 * (-EAGAIN: nothing ran)
					 */
	ODSM_STAT_rdma_ids_parked,	/* RDMA CM ids kept after their
					 * teardown until a route to the peer
					 * is back (odsm_rdma_park.c)
					 */
	ODSM_STAT_rdma_port_kills,	/* connections closed because their
					 * Soft-RoCE port went down
					 */
	ODSM_STAT_tcp_send_waits,	/* waits for room to send the rest of
					 * a message a signal cut short (TCP)
					 */
	ODSM_STAT_deleg_out_batches,	/* delegation batches sent by clients
					 * here (DELEG_CALL)
					 */
	ODSM_STAT_deleg_out_requests,	/* ... the requests in them */
	ODSM_STAT_deleg_out_bytes,	/* ... their bytes, and their answers' */
	ODSM_STAT_deleg_out_errors,	/* ... that failed: refused, no
					 * runtime, runtime gone, node down
					 */
	ODSM_STAT_deleg_in_batches,	/* batches delivered to runtimes here */
	ODSM_STAT_deleg_in_requests,	/* ... the requests in them */
	ODSM_STAT_deleg_in_bytes,	/* ... their bytes, and their answers' */
	ODSM_STAT_deleg_in_errors,	/* batches for runtimes here that got
					 * no answer from one: none bound,
					 * gone, too slow
					 */
	ODSM_STAT_deleg_malformed,	/* batches and answers dropped as
					 * malformed (odsm_dslot checks)
					 */
	ODSM_STAT_deleg_lane_batches,	/* ... of deleg_in_batches, answered
					 * through a lane (no gateway)
					 */
	ODSM_STAT_deleg_lane_full,	/* batches for a runtime with lanes
					 * queued for its gateway: every lane
					 * of their trustee was busy
					 */
	/* io_uring commands (odsm_uring.c) */
	ODSM_STAT_uring_cmds,		/* commands taken to run async */
	ODSM_STAT_uring_done,		/* ... of them, completed */
	ODSM_STAT_uring_refused,	/* commands refused before running:
					 * no such command, bad command area,
					 * too many of the program's in flight
					 */
	ODSM_STAT_uring_abandoned,	/* commands that stopped early because
					 * their submitter's process was going
					 */
	/* waits on heap words (odsm_wait.c) */
	ODSM_STAT_wait_calls,		/* ODSM_IOC_WAIT calls */
	ODSM_STAT_wait_sleeps,		/* ... that found the word holding the
					 * value and went to sleep
					 */
	ODSM_STAT_wait_woken,		/* ... that ended woken */
	ODSM_STAT_wait_changed,		/* ... that found the word changed
					 * already (-EAGAIN)
					 */
	ODSM_STAT_wait_timeouts,	/* ... that timed out */
	ODSM_STAT_wait_interrupted,	/* ... that a signal ended */
	ODSM_STAT_wait_refused,		/* WAIT and WAKE calls refused: bad
					 * word or fields (-EINVAL)
					 */
	ODSM_STAT_wake_calls,		/* ODSM_IOC_WAKE calls */
	ODSM_STAT_wake_woken,		/* ... waiters they woke, here or
					 * for a peer's WAKE
					 */
	ODSM_STAT_wake_sent,		/* ... of a peer's word: sent to its
					 * home as WAKE requests
					 */
	ODSM_STAT_wake_served,		/* peers' WAKE requests served here */
	ODSM_STAT_wait_write_woken,	/* waiters woken by the module's own
					 * writes into their word
					 */
	ODSM_STAT_served_in_rx,		/* of served: quick requests served in
					 * the connection's receiver
					 */
	ODSM_STAT_replies_in_cq,	/* replies to calls delivered by the
					 * RDMA completion handler itself
					 */
	ODSM_STAT_fetch_chunks_overlapped,	/* chunks of a large fetch
						 * sent while another of it
						 * was out
						 */
	ODSM_STAT_prefetch_overlapped,	/* FETCH_MANYs of a prefetch sent
					 * while another of it was out
					 */
	ODSM_STAT_NR
};

extern const char * const odsm_stat_names[ODSM_STAT_NR];

struct odsm_pcpu_stats {
	u64 count[ODSM_STAT_NR];
};

DECLARE_PER_CPU(struct odsm_pcpu_stats, odsm_stats);

static inline void odsm_stat_add(enum odsm_stat s, u64 n)
{
	this_cpu_add(odsm_stats.count[s], n);
}

static inline void odsm_stat_inc(enum odsm_stat s)
{
	this_cpu_inc(odsm_stats.count[s]);
}

u64 odsm_stat_read(enum odsm_stat s);

#endif /* _ODSM_STATS_H */
