#!/bin/bash
# Host test of make bench's end (tools/bench-report.sh, tools/bench-plots.sh)
# on a saved bench output (bench-output.txt, this directory), not on a run:
# the CSV holds every figure, the summary names every fixed row of issues
# 14 and 15 and judges the goals, a fixed row the benchmarks print wins
# over a figure made from others, and the plots are drawn.  TAP, ending
# with the kselftest "# Totals:" line that tools/check.sh reads.
#
# Built into build/tests/host/bench_report_test with the source tree's
# path in SRCDIR (Makefile).
set -uo pipefail
SRCDIR=${SRCDIR:-@SRCDIR@}
cd "$SRCDIR" || exit 1
FIX=selftests/bench/bench-output.txt
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=selftests/tools/tap-lib.sh
. selftests/tools/tap-lib.sh

# the summary row of METRIC: its columns, space-separated
row() { grep -E "^$1 " "$2" | head -n 1 | sed -E 's/  +/ /g'; }
# field F of the summary row (from the right: ratio goal met are -3..-1
# as "ratio goal-op goal-value met" when there is a goal)
met_of() { row "$1" "$2" | awk '{ print $NF }'; }
ratio_of() { row "$1" "$2" | awk '{ print ($(NF-1) == "-" ? $(NF-2) : $(NF-3)) }'; }

echo "TAP version 13"

tools/bench-report.sh -d "$tmp/a" "$FIX" >"$tmp/a.out" 2>&1
ok "bench-report on the fixture exits 0" test $? = 0
S=$tmp/a/summary.txt
C=$tmp/a/results.csv

for m in deref_local_vs_plain cached_hit_vs_local_borrow cached_hit_syscalls_per_hit \
	 uncached_borrow_vs_raw_read_512 async_64_borrows_vs_sequential \
	 move_1MiB_vs_ib_read_bw deleg_local_vs_mcs deleg_remote_vs_cas_lock \
	 deleg_remote_batched_vs_unbatched deleg_apply_vs_rpc_latency \
	 mutex_cas_vs_delegated tbox_group_fetch_vs_separate ds_auto_vs_best_fixed \
	 cached_hit_vs_local_borrow_host; do
	ok "summary names the fixed row $m" grep -qE "^$m( |$)" "$S"
done
ok "the summary is printed, headed and last" \
	bash -c "grep -q '^metric  *odsm  *reference  *ratio  *goal  *met$' '$tmp/a.out' &&
		 tail -n 1 '$tmp/a.out' | grep -q 'every figure in'"

# not measured in this run: no figure, no verdict
ok "async_64_borrows_vs_sequential: not measured, goal >= 8, met -" \
	test "$(row async_64_borrows_vs_sequential "$S")" = "async_64_borrows_vs_sequential - - - >= 8 -"
# printed by odsm-tbench, with the averages it came from
ok "cached_hit_vs_local_borrow_host: 5.00 / 1.25 ns, the printed 4.00, a loop: no goal" \
	test "$(row cached_hit_vs_local_borrow_host "$S")" = "cached_hit_vs_local_borrow_host 5.00 ns 1.25 ns 4 - -"
# the fixed row: Table 2's workload on the host, with its cycles
ok "cached_hit_vs_local_borrow: 519 / 494 cycles, the printed 1.05, met yes" \
	test "$(row cached_hit_vs_local_borrow "$S")" = "cached_hit_vs_local_borrow 519 cyc 494 cyc 1.05 <= 1.5 yes"
# system calls per hit: the kernel's count in the guests wins over the library's
ok "cached_hit_syscalls_per_hit: the guests' 0.002, met no" \
	test "$(row cached_hit_syscalls_per_hit "$S")" = "cached_hit_syscalls_per_hit 0.002 - 0.002 <= 0 no"
ok "deref_local_vs_plain: Table 2's 1261 / 1272 cycles, the printed 0.992, met yes" \
	test "$(row deref_local_vs_plain "$S")" = "deref_local_vs_plain 1261 cyc 1272 cyc 0.992 <= 1.05 yes"
# made from the coherence rows: 1129 / 1137 over RDMA (not the later raw
# read of the move row, 1324)
ok "uncached_borrow_vs_raw_read_512 = 1129 us / 1137 us, met yes" \
	test "$(row uncached_borrow_vs_raw_read_512 "$S")" = \
	     "uncached_borrow_vs_raw_read_512 1129 us 1137 us 0.993 <= 1.2 yes"
ok "move_1MiB_vs_ib_read_bw = 11.1 MiB/s / 25.81 MB/s (in MB/s: 11.64 / 25.81), met no" \
	test "$(row move_1MiB_vs_ib_read_bw "$S")" = \
	     "move_1MiB_vs_ib_read_bw 11.10 MiB/s 25.81 MB/s 0.451 >= 0.9 no"
ok "deleg_local_vs_mcs: the printed ratio, at the most threads on 1 counter, no goal" \
	test "$(row deleg_local_vs_mcs "$S")" = \
	     "deleg_local_vs_mcs (8 threads) 12M op/s 3.3M op/s 3.63 - -"
ok "onesided_read_8_vs_ib_read_lat = 316 / 252.10 (t_typical)" \
	test "$(ratio_of onesided_read_8_vs_ib_read_lat "$S")" = 1.25

# the CSV: a header, five fields a line, the figures as printed
ok "results.csv has its header" test "$(head -n 1 "$C")" = "section,row,label,key,value"
ok "every CSV line has 5 fields" \
	test "$(awk -F, 'NF != 5' "$C" | wc -l)" = 0
ok "CSV: rdma-onesided read_8_us 316.0" grep -qE '^remote,[0-9]+,rdma-onesided,read_8_us,316.0$' "$C"
ok "CSV: a p90 in parentheses" grep -qE '^coherence,[0-9]+,tcp,uncached_borrow_512_us_p90,1210.4$' "$C"
ok "CSV: perftest ib_read_bw's BW average" \
	grep -qE '^coherence,[0-9]+,perftest ib_read_bw -s 1048576 -n 20,bw_avg_MB_s,25.81$' "$C"
ok "CSV: perftest ib_atomic_lat's t_typical" \
	grep -qE '^remote,[0-9]+,perftest ib_atomic_lat -n 200,typical_us,245.20$' "$C"
ok "CSV: the fixed row deleg_local_vs_mcs" grep -qE '^deleg,[0-9]+,deleg_local_vs_mcs,ratio,3.63$' "$C"
ok "CSV: no perftest column-name row" bash -c "! grep -q 'perftest-columns' '$C'"
ok "CSV: every key=value of the fixture's rows is there" \
	test "$(grep -E '^  ' "$FIX" | grep -v perftest | grep -oE '[A-Za-z0-9_]+=[-+0-9.eE]+' | wc -l)" = \
	     "$(grep -cvE '^section,|,perftest |_p90,' "$C")"

# fixed rows printed by the benchmarks win, and are judged
{
	cat "$FIX"
	echo "bench: more rows"
	echo "  deref_local_vs_plain ratio=1.07"
	echo "  cached_hit_vs_local_borrow ratio=1.70 syscalls_per_hit=0"
	echo "  cached_hit_loop_vs_local_borrow ratio=3.10 syscalls_per_hit=0.000"
	echo "  uncached_borrow_vs_raw_read_512 ratio=1.30"
	echo "  async_64_borrows_vs_sequential speedup=9.50"
	echo "  deleg_remote_vs_cas_lock ratio=4.20"
	echo "  ds_auto_vs_best_fixed ratio=0.90 label=tcp"
	echo "  ds_auto_vs_best_fixed ratio=1.04 label=rdma"
} >"$tmp/more.txt"
tools/bench-report.sh -d "$tmp/b" "$tmp/more.txt" >/dev/null 2>&1
ok "bench-report with the fixed rows exits 0" test $? = 0
S=$tmp/b/summary.txt
ok "deref_local_vs_plain: the last printed, 1.07 <= 1.05: no" test "$(met_of deref_local_vs_plain "$S")" = no
ok "cached_hit_vs_local_borrow 1.70 <= 1.5: no" test "$(met_of cached_hit_vs_local_borrow "$S")" = no
ok "cached_hit_syscalls_per_hit: the last loop row's 0.000 <= 0: yes" test "$(met_of cached_hit_syscalls_per_hit "$S")" = yes
ok "uncached_borrow_vs_raw_read_512: the printed 1.30 wins, no" \
	test "$(ratio_of uncached_borrow_vs_raw_read_512 "$S") $(met_of uncached_borrow_vs_raw_read_512 "$S")" = "1.3 no"
ok "async_64_borrows_vs_sequential speedup 9.50 >= 8: yes" \
	test "$(met_of async_64_borrows_vs_sequential "$S")" = yes
ok "deleg_remote_vs_cas_lock 4.20 >= 5: no" test "$(met_of deleg_remote_vs_cas_lock "$S")" = no
ok "ds_auto_vs_best_fixed: the last printed (rdma) 1.04 >= 1.0: yes" \
	test "$(ratio_of ds_auto_vs_best_fixed "$S") $(met_of ds_auto_vs_best_fixed "$S")" = "1.04 yes"
ok "lazy_16MiB_onesided_vs_fetch: one-sided ms over FETCH ms, no goal" \
	test "$(row 'lazy_16MiB_onesided_vs_fetch \(rdma\)' "$S")" = \
	     "lazy_16MiB_onesided_vs_fetch (rdma) 891 ms 1087 ms 0.82 - -"
ok "move_copied_1MiB_onesided_vs_fetch: one-sided us over FETCH us, no goal" \
	test "$(row 'move_copied_1MiB_onesided_vs_fetch \(rdma\)' "$S")" = \
	     "move_copied_1MiB_onesided_vs_fetch (rdma) 57626 us 67973 us 0.848 - -"
ok "move_written_1MiB_onesided_vs_fetch: one-sided us over FETCH us, no goal" \
	test "$(row 'move_written_1MiB_onesided_vs_fetch \(rdma\)' "$S")" = \
	     "move_written_1MiB_onesided_vs_fetch (rdma) 41575 us 52764 us 0.788 - -"

# nothing measured at all: every row still named, nothing judged
: >"$tmp/empty.txt"
tools/bench-report.sh -d "$tmp/c" "$tmp/empty.txt" >/dev/null 2>&1
ok "an empty output: exit 0" test $? = 0
ok "an empty output: 30 rows, none judged" \
	test "$(tail -n +2 "$tmp/c/summary.txt" | awk '$NF != "-"' | wc -l) $(tail -n +2 "$tmp/c/summary.txt" | wc -l)" = "0 30"
# odsm-mbench's row gives the mutex ratio (issue 16)
printf 'bench: two guests, remote operations over kernel TCP\n  mutex_cas_vs_delegated ratio=2.50 label=tcp\n' >"$tmp/mutex.txt"
tools/bench-report.sh -d "$tmp/m" "$tmp/mutex.txt" >/dev/null 2>&1
ok "mutex_cas_vs_delegated: the printed ratio" \
	grep -qE '^mutex_cas_vs_delegated +- +- +2.5 ' "$tmp/m/summary.txt"
# odsm-gbench's row gives the tied allocation ratio (issue 16)
printf 'bench: remote execution, channels and tied allocation\n  tbox_group_fetch_vs_separate ratio=6.25 label=tcp\n' >"$tmp/tbox.txt"
tools/bench-report.sh -d "$tmp/t" "$tmp/tbox.txt" >/dev/null 2>&1
ok "tbox_group_fetch_vs_separate: the printed ratio" \
	grep -qE '^tbox_group_fetch_vs_separate +- +- +6.25 ' "$tmp/t/summary.txt"
tools/bench-report.sh -d "$tmp/d" "$tmp/nonexistent" >/dev/null 2>&1
ok "a missing output: exit 1" test $? = 1

# the plots, from the fixture's CSV
if command -v gnuplot >/dev/null; then
	tools/bench-plots.sh "$tmp/a/results.csv" "$tmp/plots" >"$tmp/plots.out" 2>&1
	ok "bench-plots exits 0" test $? = 0
	for p in bench-remote bench-coherence bench-deleg; do
		ok "$p.svg drawn, an SVG document" \
			bash -c "head -c 200 '$tmp/plots/$p.svg' | grep -q '<svg' && tail -n 2 '$tmp/plots/$p.svg' | grep -q '</svg>'"
	done
	ok "bench-remote.svg shows the four series" \
		bash -c "grep -c -E 'odsm, kernel TCP|odsm, RDMA one-sided|odsm, RDMA two-sided|perftest over Soft-RoCE' '$tmp/plots/bench-remote.svg' | grep -qx 4"
	tools/bench-plots.sh "$tmp/c/results.csv" "$tmp/plots-empty" >"$tmp/plots-empty.out" 2>&1
	ok "no figures: no plot drawn, said so" \
		bash -c "test -z \"\$(ls -A '$tmp/plots-empty')\" && grep -c 'not drawn' '$tmp/plots-empty.out' | grep -qx 3"
else
	n=$((n + 1))
	echo "not ok $n gnuplot is not installed (make setup installs gnuplot-nox)"
	fail=$((fail + 1))
fi

tap_end
