#!/bin/bash
# make bench: run the benchmarks in guests and print their numbers, then
# one summary table (tools/bench-report.sh): each comparison against its
# reference and, where an issue set one, its goal.  A benchmark, not a
# test: it fails only when a run fails, never for a goal missed.
#
# What it prints is also kept in build/bench/bench-output.txt; the figures
# go to build/bench/results.csv, from which make bench-plots draws the
# plots of Documentation/odsm/.
set -euo pipefail
cd "$(dirname "$0")/.."
KVER=${KVER:-$(tools/rig/kernels.sh --newest)}
img=build/vm/bench-$KVER.cpio.gz
out=build/bench/bench-output.txt
mkdir -p build/vm build/logs build/bench
# step, progress_run: "== [N/7 elapsed] what" lines, and one a minute
# while a guest run lasts (a bench run takes about half an hour)
# shellcheck source=tools/progress-lib.sh
. tools/progress-lib.sh
PROGRESS_TOTAL=9

# A benchmark of user-space paths, natively on the host (no guest): build
# build/bin/NAME, run it into build/logs/LOG, print its rows (its last
# lines too if it failed); its exit code.
native() {	# NAME WHAT LOG
	local rc=0
	step "$1: $2"
	make -s "build/bin/$1"
	progress_run "build/bin/$1" >"build/logs/$3" 2>&1 || rc=$?
	grep '^ODSM_BENCH' "build/logs/$3" | sed 's/^ODSM_BENCH /  /'
	[ "$rc" = 0 ] || tail -n 5 "build/logs/$3"
	return "$rc"
}

benches() {
	# (errexit is off in here: the caller tests the pipeline)
	step "guest image for $KVER"
	progress_run tools/vm-image.sh "$KVER" "$img" || return 1
	rc=0
	step "odsm-bench: local borrows, one guest"
	progress_run tools/rig/run.sh -k "$KVER" -n 1 -s bench -i "$img" -l build/logs -c 1 \
		>build/logs/bench-run.txt 2>&1 || rc=$?
	echo "bench: kernel $KVER, one QEMU/TCG guest (emulated CPU: compare ratios, not absolute cycles)"
	tr -d '\r' <"build/logs/bench-$KVER-node0.log" | grep '^ODSM_BENCH' | sed 's/^ODSM_BENCH /  /'

	echo "bench: two guests, remote operations over kernel TCP and over RDMA (one-sided, two-sided), perftest over Soft-RoCE on the same link"
	rc2=0
	step "odsm-rbench and perftest: remote operations, two guests"
	progress_run tools/rig/run.sh -k "$KVER" -n 2 -s bench-cluster -i "$img" -l build/logs -t 900 \
		>build/logs/bench-cluster-run.txt 2>&1 || rc2=$?
	tr -d '\r' <"build/logs/bench-cluster-$KVER-node1.log" | grep '^ODSM_BENCH' |
		sed 's/^ODSM_BENCH /  /'
	[ "$rc2" = 0 ] || tail -n 30 build/logs/bench-cluster-run.txt

	echo "bench: two guests, the coherence protocol against raw operations, over TCP then RDMA (Soft-RoCE)"
	rc3=0
	step "odsm-cbench: the coherence protocol, two guests"
	progress_run tools/rig/run.sh -k "$KVER" -n 2 -s bench-coherence -i "$img" -l build/logs -t 1200 \
		>build/logs/bench-coherence-run.txt 2>&1 || rc3=$?
	tr -d '\r' <"build/logs/bench-coherence-$KVER-node1.log" | grep '^ODSM_BENCH' |
		sed 's/^ODSM_BENCH coherence /  /'
	[ "$rc3" = 0 ] || tail -n 30 build/logs/bench-coherence-run.txt

	# DRust's Table 2 (local borrows against plain pointers, random accesses
	# over 256 MiB): the local paths are user-space code, so natively on the
	# host's real CPU, no module
	echo "bench: native host, DRust Table 2: random 8-byte reads over 256 MiB, plain pointer vs local borrows (no module)"
	rc5=0
	native odsm-tbench "DRust's Table 2 on the host" bench-table2.txt || rc5=$?

	# A hit served by libodsm's table of hits is user-space code too once
	# the first borrow recorded the copy: natively, against a local borrow
	echo "bench: native host, a borrow of a cached copy through the table of hits vs a local borrow (no module)"
	rc7=0
	native odsm-hbench "cache hits on the host" bench-hits.txt || rc7=$?

	# Delegation on one node needs no kernel: run natively on the host (real
	# CPUs, not TCG); its ratios are printed together after it (only the
	# data structures' run comes after them).
	echo "bench: native host, delegation on one node vs mutex, MCS and atomic fetch-and-add (no module)"
	rc4=0
	native odsm-dbench "delegation on the host" bench-deleg.txt || rc4=$?
	# the delegation ratios together: across nodes (bench-cluster), then on one
	echo "bench: delegation ratios"
	{ tr -d '\r' <"build/logs/bench-cluster-$KVER-node1.log" | grep -E '^ODSM_BENCH deleg_(remote_vs_cas_lock|remote_batched_vs_unbatched|apply_vs_rpc_latency) '
	  grep '^ODSM_BENCH deleg_local_vs_mcs ' build/logs/bench-deleg.txt; } | sed 's/^ODSM_BENCH /  /' || true
	# remote execution, channels and tied allocation across two nodes
	# (bench-cluster)
	echo "bench: remote execution, channels and tied allocation"
	tr -d '\r' <"build/logs/bench-cluster-$KVER-node1.log" |
		grep -E '^ODSM_BENCH (spawn_to_vs_local_call|spawn_to_vs_pull|channel_msgs_per_s|tbox|tbox_group_fetch_vs_separate) ' |
		sed 's/^ODSM_BENCH /  /' || true

	# the data structures last: their three named rows end the output
	echo "bench: two guests, data structures one-sided vs requests against BCL's cost model, over TCP then RDMA (Soft-RoCE)"
	rc6=0
	step "odsm-dsbench: data structures and their cost model, two guests"
	progress_run tools/rig/run.sh -k "$KVER" -n 2 -s bench-ds -i "$img" -l build/logs -t 900 \
		>build/logs/bench-ds-run.txt 2>&1 || rc6=$?
	tr -d '\r' <"build/logs/bench-ds-$KVER-node1.log" | grep '^ODSM_BENCH' |
		grep -vE '^ODSM_BENCH ds_(model_rank_agreement|auto_vs_best_fixed|attentiveness_crossover_us)' |
		sed 's/^ODSM_BENCH /  /' || true
	[ "$rc6" = 0 ] || tail -n 30 build/logs/bench-ds-run.txt
	echo "bench: data structures, the model against the measurements"
	tr -d '\r' <"build/logs/bench-ds-$KVER-node1.log" |
		grep -E '^ODSM_BENCH ds_(model_rank_agreement|auto_vs_best_fixed|attentiveness_crossover_us)' |
		sed 's/^ODSM_BENCH /  /' || true
	[ "$rc" = 0 ] && [ "$rc2" = 0 ] && [ "$rc3" = 0 ] && [ "$rc4" = 0 ] && [ "$rc5" = 0 ] &&
		[ "$rc6" = 0 ] && [ "$rc7" = 0 ]
}

# the rows as they come, and a copy for the summary (the report reads the
# copy only once tee has written all of it: the pipeline has ended)
brc=0
benches 2>&1 | tee "$out" || brc=$?
# (benches ran in the pipeline's subshell: its steps are not counted here)
progress_n=7
step "summary"
tools/bench-report.sh -d build/bench "$out"
exit "$brc"
