// SPDX-License-Identifier: GPL-2.0
/* Per-CPU event counters; see odsm_stats.h. */
#include <linux/cpumask.h>
#include "odsm_stats.h"

DEFINE_PER_CPU(struct odsm_pcpu_stats, odsm_stats);

const char * const odsm_stat_names[ODSM_STAT_NR] = {
	[ODSM_STAT_allocs] = "allocs",
	[ODSM_STAT_alloc_bytes] = "alloc_bytes",
	[ODSM_STAT_alloc_einval] = "alloc_einval",
	[ODSM_STAT_alloc_enomem] = "alloc_enomem",
	[ODSM_STAT_frees] = "frees",
	[ODSM_STAT_free_bytes] = "free_bytes",
	[ODSM_STAT_bad_frees] = "bad_frees",
	[ODSM_STAT_moves] = "moves",
	[ODSM_STAT_mmaps] = "mmaps",
	[ODSM_STAT_mmap_refused] = "mmap_refused",
	[ODSM_STAT_faults] = "faults",
	[ODSM_STAT_page_allocs] = "page_allocs",
	[ODSM_STAT_page_frees] = "page_frees",
	[ODSM_STAT_sigbus_remote] = "sigbus_remote",
	[ODSM_STAT_sigbus_unbacked] = "sigbus_unbacked",
	[ODSM_STAT_fault_enomem] = "fault_enomem",
	[ODSM_STAT_bad_ioctls] = "bad_ioctls",
	[ODSM_STAT_msgs_tx] = "msgs_tx",
	[ODSM_STAT_msgs_rx] = "msgs_rx",
	[ODSM_STAT_bad_msgs] = "bad_msgs",
	[ODSM_STAT_served] = "served",
	[ODSM_STAT_remote_reads] = "remote_reads",
	[ODSM_STAT_remote_writes] = "remote_writes",
	[ODSM_STAT_remote_atomics] = "remote_atomics",
	[ODSM_STAT_remote_allocs] = "remote_allocs",
	[ODSM_STAT_remote_frees] = "remote_frees",
	[ODSM_STAT_rpc_timeouts] = "rpc_timeouts",
	[ODSM_STAT_rpc_hostdown] = "rpc_hostdown",
	[ODSM_STAT_peers_down] = "peers_down",
	[ODSM_STAT_borrow_hits] = "borrow_hits",
	[ODSM_STAT_borrow_misses] = "borrow_misses",
	[ODSM_STAT_borrow_returns] = "borrow_returns",
	[ODSM_STAT_mut_moves] = "mut_moves",
	[ODSM_STAT_mut_taken] = "mut_taken",
	[ODSM_STAT_move_free_errors] = "move_free_errors",
	[ODSM_STAT_writebacks] = "writebacks",
	[ODSM_STAT_bytes_fetched] = "bytes_fetched",
	[ODSM_STAT_cache_evictions] = "cache_evictions",
	[ODSM_STAT_cache_shrunk] = "cache_shrunk",
	[ODSM_STAT_lazy_faults] = "lazy_faults",
	[ODSM_STAT_lazy_pages] = "lazy_pages",
	[ODSM_STAT_sigbus_lazy] = "sigbus_lazy",
	[ODSM_STAT_lazy_unlocked] = "lazy_unlocked",
	[ODSM_STAT_lazy_stale] = "lazy_stale",
	[ODSM_STAT_lazy_prefills] = "lazy_prefills",
	[ODSM_STAT_lazy_refused] = "lazy_refused",
	[ODSM_STAT_auth_failures] = "auth_failures",
	[ODSM_STAT_onesided_reads] = "onesided_reads",
	[ODSM_STAT_onesided_writes] = "onesided_writes",
	[ODSM_STAT_onesided_bytes] = "onesided_bytes",
	[ODSM_STAT_onesided_fallbacks] = "onesided_fallbacks",
	[ODSM_STAT_onesided_atomics] = "onesided_atomics",
	[ODSM_STAT_loop_atomics] = "loop_atomics",
	[ODSM_STAT_keys_sent] = "keys_sent",
	[ODSM_STAT_keys_received] = "keys_received",
	[ODSM_STAT_map_requests] = "map_requests",
	[ODSM_STAT_mr_registrations] = "mr_registrations",
	[ODSM_STAT_map_refused] = "map_refused",
	[ODSM_STAT_stale_refused] = "stale_refused",
	[ODSM_STAT_owner_refused] = "owner_refused",
	[ODSM_STAT_copies_dropped] = "copies_dropped",
	[ODSM_STAT_rdma_conn_refused] = "rdma_conn_refused",
	[ODSM_STAT_rdma_loop_refused] = "rdma_loop_refused",
	[ODSM_STAT_copy_writes_refused] = "copy_writes_refused",
	[ODSM_STAT_cache_stale_refused] = "cache_stale_refused",
	[ODSM_STAT_move_frees_stale] = "move_frees_stale",
	[ODSM_STAT_store_enomem] = "store_enomem",
	[ODSM_STAT_config_refused] = "config_refused",
	[ODSM_STAT_fault_drops] = "fault_drops",
	[ODSM_STAT_fault_delays] = "fault_delays",
	[ODSM_STAT_fault_dups] = "fault_dups",
	[ODSM_STAT_fault_holds] = "fault_holds",
	[ODSM_STAT_dup_requests] = "dup_requests",
	[ODSM_STAT_accept_refused] = "accept_refused",
	[ODSM_STAT_accept_evicted] = "accept_evicted",
	[ODSM_STAT_handshake_timeouts] = "handshake_timeouts",
	[ODSM_STAT_requests_refused] = "requests_refused",
	[ODSM_STAT_rdma_ids_parked] = "rdma_ids_parked",
};

u64 odsm_stat_read(enum odsm_stat s)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += per_cpu(odsm_stats, cpu).count[s];
	return sum;
}
