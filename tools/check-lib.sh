# shellcheck shell=bash
# The counting helpers of the test drivers (tools/check.sh,
# tools/check-debug.sh), sourced by them.  Every suite ends with
# "<suite>: N passed, M failed", added into total_pass and total_fail;
# run_guests() reads LOGS (the log directory) and img (the guest image).
# step and progress_run: tools/progress-lib.sh (a guest run, a suite's
# command: a line a minute while they run).
# shellcheck disable=SC2154 # img: set by the driver before each run

# shellcheck source=tools/progress-lib.sh
. tools/progress-lib.sh

suite_end() {	# name pass fail
	echo "$1: $2 passed, $3 failed"
	total_pass=$((total_pass + $2))
	total_fail=$((total_fail + $3))
}

# kselftest totals from a TAP stream: "# Totals: pass:N fail:M ... error:E"
tap_totals() {	# file -> "pass fail" summed over every program in it
	tr -d '\r' <"$1" | awk '/# Totals: pass:/ {
		for (i = 1; i <= NF; i++) {
			split($i, kv, ":")
			if (kv[1] == "pass") p += kv[2]
			if (kv[1] == "fail" || kv[1] == "error") f += kv[2]
		}
	} END { print p + 0, f + 0 }'
}

# A suite whose command prints a line per check: ok and bad are the
# patterns of a passed and a failed one (the lines are shown); a command
# that exits non-zero with no failed line counts as one failure.
counted_suite() {	# name log ok-pattern bad-pattern command...
	local name=$1 log=$2 okp=$3 badp=$4 rc p f
	shift 4
	progress_run "$@" >"$log" 2>&1
	rc=$?
	p=$(grep -c "$okp" "$log")
	f=$(grep -c "$badp" "$log")
	grep -E "($okp|$badp)" "$log" | sed 's/^/  /'
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		tail -n 20 "$log"
		f=1
	fi
	suite_end "$name" "$p" "$f"
}

# The fuzz suite: tools/fuzz/run.sh --short with ARGS, its output in LOG
# (shown but for its headings and summary); its "ok: " and "not ok: "
# lines count, and a run that fails with none failed counts as one.
fuzz_suite() {	# log run.sh-args...
	local log=$1 rc p f
	shift
	progress_run tools/fuzz/run.sh --short "$@" >"$log" 2>&1
	rc=$?
	grep -vE '^(== |fuzz: [0-9]+ passed)' "$log"
	p=$(grep -c '^ok: ' "$log")
	f=$(grep -c '^not ok: ' "$log")
	[ "$rc" = 0 ] || [ "$f" != 0 ] || f=1
	suite_end fuzz "$p" "$f"
}

# What a failed guest run says of itself, in a few lines, for the digest
# that ends make check's output (check.sh): run.sh's reason per node, and
# from each node's log its failed tests with their own lines and the
# scenario's complaints ("cluster: rmmod took ...") and kernel reports.
failure_digest() {	# SCEN KVER N RUNLOG NOTOK
	local scen=$1 k=$2 n=$3 runlog=$4 notok=$5 node log

	echo "== not ok: $notok ($scen, $k, $n guests)"
	grep -E '^\[node[0-9]+\] FAIL: ' "$runlog" | head -n 8
	for node in $(seq 0 $((n - 1))); do
		log=$LOGS/$scen-$k-node$node.log
		[ -f "$log" ] || continue
		# the failures themselves first (a test's own log lines that
		# merely say "failed", as a kill test's do, come after them)
		tr -d '\r' <"$log" | awk '
			/^(not ok|# +FAIL)|Expected|[Tt]erminated|.*(WARNING:|BUG:|Oops|INFO: task|soft lockup|stall)/ {
				print; next
			}
			/^# [^ ]+:[0-9]+:.*([Ff]ail|[Ee]rror|[Tt]imed? ?out)|^[a-z_-]+: .*(fail|took|left|not |never|refused|still|unreachable)/ {
				later[n++] = $0
			}
			END { for (i = 0; i < n; i++) print later[i] }' |
			head -n 12 | sed "s/^/[node$node] /"
	done
}

# A failed run's node logs, copied where the next run of the same
# scenario and kernel does not overwrite them (build/logs/failed/RUN/),
# and each node's first kernel report with the 20 lines before it (a
# driver's own complaint often comes just before its WARN) and the 40
# after it (its trace), printed: make check's output keeps what a crash
# said.
keep_failed_logs() {	# SCEN KVER N RUNLOG
	local dir node log

	dir=$LOGS/failed/$(basename "$4" .txt)
	mkdir -p "$dir"
	for node in $(seq 0 $(($3 - 1))); do
		log=$LOGS/$1-$2-node$node.log
		[ -f "$log" ] || continue
		cp "$log" "$dir/"
		tr -d '\r' <"$log" |
			awk '!seen && /(BUG:|Oops|general protection fault|double fault|Kernel panic|WARNING:|KASAN|KFENCE:)/ {
				seen = 1; n = 41
				for (i = NR - 20; i < NR; i++) if (i > 0) print before[i % 20]
			}
			{ before[NR % 20] = $0 }
			n-- > 0' |
			sed "s/^/[node$node kernel] /"
	done
	echo "logs of this run kept in $dir"
}

# Whether a node of the run of SCEN on N guests of KVER found a peer
# unreachable before anything joined (wait_peers' report) and no node
# came up in a cluster.
rig_net_never_up() {	# SCEN KVER N
	local node log up=0 lost=0

	for node in $(seq 0 $(($3 - 1))); do
		log=$LOGS/$1-$2-node$node.log
		[ -f "$log" ] || continue
		grep -aq 'RIG_MARK cluster_up' "$log" && up=1
		grep -aq '^wait_peers: .* unreachable' "$log" && lost=1
	done
	[ "$lost" = 1 ] && [ "$up" = 0 ]
}

# Did a guest's virtio NIC stop sending?  The kernel's TX watchdog says so
# every 5 s for the rest of the run: QEMU stopped taking the guest's
# transmit queue (seen twice in 3-guest runs behind one vde_switch, over
# TCP on 2026-11-26 and over RDMA with packets lost on 2026-11-30; the
# guest's own stack, not odsm, owns that queue).
rig_nic_stalled() {	# SCEN KVER N
	local node

	for node in $(seq 0 $(($3 - 1))); do
		grep -aq 'NETDEV WATCHDOG: .*transmit queue [0-9]* timed out' \
			"$LOGS/$1-$2-node$node.log" 2>/dev/null && return 0
	done
	return 1
}

# Did the host stall a guest's clock or its start-up?  Two signatures,
# each seen failing an 8-guest run whose every program had passed
# (testing.rst, "The judge"): the guest's clock leapt (the clocksource
# watchdog's "Long readout interval": 5.6 days between two reads on
# 2026-12-03, and every test's harness timeout expired in the leap), or
# a soft lockup in the kernel's own start-up, before odsm was loaded
# (node 7's boot took 274 s where the others took 21-23 s).  A soft
# lockup once odsm is loaded is the code's and is never retried.
rig_host_stalled() {	# SCEN KVER N
	local node log

	for node in $(seq 0 $(($3 - 1))); do
		log=$LOGS/$1-$2-node$node.log
		[ -f "$log" ] || continue
		grep -aq 'clocksource: Long readout interval' "$log" && return 0
		tr -d '\r' <"$log" | awk '/odsm: loading|RIG_MARK / { exit } /soft lockup/ { hit = 1; exit }
			END { exit !hit }' &&
			return 0
	done
	return 1
}

# One run of the VM rig, counted into the suite being run (s_pass, s_fail):
# scenario SCEN on N guests of kernel KVER booted from $img, run.sh's
# output in RUNLOG, more run.sh options after the fixed arguments.  Each
# node's log gives its kselftest totals and its failure lines ("[nodeI] "
# before them when N > 1, as run.sh does); with SUMMARY, the run's totals
# follow as "SUMMARY: P passed, F failed".  The run itself counts once
# more: "ok: OK" when run.sh passed (each guest's result marker, no kernel
# problem in its log), else run.sh's last lines and "not ok: NOTOK".
run_guests() {	# SCEN KVER N RUNLOG SUMMARY OK NOTOK [run.sh options...]
	local scen=$1 k=$2 n=$3 runlog=$4 summary=$5 ok=$6 notok=$7
	local rc node log p f pat tp=0 tf=0
	shift 7
	progress_run tools/rig/run.sh -k "$k" -n "$n" -s "$scen" -i "$img" -l "$LOGS" -t 600 "$@" \
		>"$runlog" 2>&1
	rc=$?
	# a guest that hung before its init (run.sh: "did not boot"),
	# guests that never reached each other over the rig's switch before
	# any node joined (wait_peers: an 8-guest run lost node 1 so, every
	# node's ping of it unanswered for 60 s), or a guest whose virtio
	# NIC stopped sending (rig_nic_stalled), or a host that stalled a
	# guest's clock or start-up (rig_host_stalled) say nothing of the code:
	# the run is made once more, and says so
	if [ "$rc" != 0 ] && { grep -qE '^\[node[0-9]+\] FAIL: did not boot' "$runlog" ||
			       rig_net_never_up "$scen" "$k" "$n" ||
			       rig_nic_stalled "$scen" "$k" "$n" ||
			       rig_host_stalled "$scen" "$k" "$n"; }; then
		grep -E '^\[node[0-9]+\] FAIL: did not boot' "$runlog"
		rig_net_never_up "$scen" "$k" "$n" && grep -h '^wait_peers: ' \
			"$LOGS/$scen-$k"-node*.log | tr -d '\r' | head -n 3
		rig_nic_stalled "$scen" "$k" "$n" && grep -ah 'NETDEV WATCHDOG' \
			"$LOGS/$scen-$k"-node*.log | tr -d '\r' | head -n 1
		rig_host_stalled "$scen" "$k" "$n" && grep -ahE 'clocksource: Long readout|soft lockup' \
			"$LOGS/$scen-$k"-node*.log | tr -d '\r' | head -n 2
		echo "retry: a guest did not boot, the guests never reached each other, a guest's NIC stopped sending or the host stalled a guest's clock or start-up; running $scen once more"
		echo "retry: $notok: a guest did not boot, the guests never reached each other, a guest's NIC stopped sending or the host stalled a guest's clock or start-up; the second run counts" \
			>>"$LOGS/failures.txt"
		progress_run tools/rig/run.sh -k "$k" -n "$n" -s "$scen" -i "$img" -l "$LOGS" -t 600 "$@" \
			>"$runlog" 2>&1
		rc=$?
	fi
	for node in $(seq 0 $((n - 1))); do
		log=$LOGS/$scen-$k-node$node.log
		[ -f "$log" ] || continue	# no guest: run.sh failed, see below
		read -r p f < <(tap_totals "$log")
		# a failed run also shows the programs' own log lines
		pat='^(not ok|# FAIL|#  )'
		[ "$rc" = 0 ] || pat='^(not ok|# FAIL|#  |# [^ ]+:[0-9]+:)'
		tr -d '\r' <"$log" | grep -E "$pat" |
			if [ "$n" -gt 1 ]; then sed "s/^/[node$node] /"; else cat; fi
		tp=$((tp + p))
		tf=$((tf + f))
	done
	[ -z "$summary" ] || echo "$summary: $tp passed, $tf failed"
	if [ "$rc" = 0 ]; then
		tp=$((tp + 1))
		echo "ok: $ok"
	else
		tf=$((tf + 1))
		# every failed node's reason first: the tail shows the last one only
		grep -E '^\[node[0-9]+\] FAIL: ' "$runlog"
		tail -n 100 "$runlog"
		keep_failed_logs "$scen" "$k" "$n" "$runlog"
		echo "not ok: $notok"
		failure_digest "$scen" "$k" "$n" "$runlog" "$notok" >>"$LOGS/failures.txt"
	fi
	s_pass=$((s_pass + tp))
	s_fail=$((s_fail + tf))
}
