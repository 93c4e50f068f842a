#!/bin/bash
# make check: every test of the project, on every supported kernel.
#
#   build     the module builds with W=1 and no warning on each kernel;
#             checkpatch --strict is clean on kmod/ and uapi/; no kmod
#             file calls a layer above its own (tools/kmod-deps.sh);
#             libodsm.so.1 exports what debian/libodsm1.symbols states
#             (tools/check-symbols.sh), and its headers' structs are laid
#             out as debian/libodsm1.layout states (tools/check-layout.sh)
#   host      unit tests of the pure logic, and of libodsm against a fake
#             /dev/odsm (ASan + UBSan)
#   model     spin checks the coherence protocol's model (model/): the
#             model passes, every mutant fails (tools/model-check.sh)
#   rig       the VM rig's own checks: guests boot, Soft-RoCE comes up,
#             a kernel WARN or panic is judged a failure
#   packages  make deb; lintian; the packages unpacked into a root of
#             their own, DKMS building odsm.ko from them, an example built
#             through pkg-config; then 3 guests of the newest kernel, over
#             TCP, booted from that root, bring their cluster up and down
#             with odsm.service's commands from /etc/odsm/cluster.conf
#             (tools/check-packages.sh, tools/rig/scenarios/boot-cluster.sh)
#   vm-KVER   kselftest programs in a QEMU/TCG guest of each kernel, and the
#             demo application; a kernel WARNING/BUG/Oops/lockdep/hung-task
#             line in a guest log fails the suite
#   cluster-KVER  the multi-node programs (selftests/cluster) on 3 guests
#             of which one powers off mid-run, over TCP and over RDMA
#             (Soft-RoCE); on the newest kernel also on 2 guests over
#             both and on 8 guests over TCP; and 3 guests over TCP under
#             the message fault injector, one powering off mid-moves
#   fuzz      the ioctl and wire fuzzers (tools/fuzz/run.sh --short) in
#             debug-booted guests (slub_debug, KFENCE) of the newest kernel:
#             operations tried per category, 0 problems
#
# Each suite ends with "<suite>: N passed, M failed"; the run ends with the
# total "N passed, M failed" and exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "$0")/.."
SERIES="6.1 6.12"
LOGS=build/logs
mkdir -p "$LOGS" build/vm
rm -rf "$LOGS/failures.txt" "$LOGS/failed"
total_pass=0 total_fail=0
t_start=$(date +%s)

# shellcheck source=tools/check-lib.sh
. tools/check-lib.sh

KVERS=()
for s in $SERIES; do
	k=$(tools/rig/kernels.sh | grep -E "^${s//./\\.}\.[0-9]" | tail -n 1 || true)
	if [ -z "$k" ]; then
		echo "check: no installed kernel of the $s series (run 'make setup')"
		suite_end "kernels" 0 1
		continue
	fi
	KVERS+=("$k")
done

# The steps below, counted for the progress lines ("== [N/M elapsed]"):
# keep in step with them.  HOST: the host suite's programs, known for sure
# only once they are built (recounted then).
host_count() {	# TEST PATH...: how many PATHs pass test TEST (-f, -x)
	local op=$1 t c=0
	shift
	for t in "$@"; do test "$op" "$t" && c=$((c + 1)); done
	echo "$c"
}
check_steps() {	# HOST
	local nk=${#KVERS[@]} m
	m=$((1 + nk + 3 + $1 + 1 + 1))	# build, module/kernel, 3 checks; host; model; rig
	if [ "$nk" -gt 0 ]; then
		# packages and fuzz; per kernel: image, selftests, demo, lowmem,
		# 2 clusters (3 guests), faults; the newest: 2 guests twice,
		# 8 guests, fake node, rdma-fuzz; the oldest: 2 lossy links
		m=$((m + 2 + 7 * nk + 5 + 2))
	fi
	echo "$m"
}
PROGRESS_TOTAL=$(check_steps "$(host_count -f selftests/host/*_test.c selftests/bench/*_test.sh \
	selftests/tools/*_test.sh selftests/lib/*_test.c)")

# ---- build ----------------------------------------------------------------
# one job per CPU: the test programs and tools compile independently
# (2:51 instead of about 4:30 on 2 cores)
JOBS=$(nproc)
step "building libodsm, tools and tests"
if ! progress_run make -s -j"$JOBS" lib tools tests >"$LOGS/build-user.txt" 2>&1; then
	cat "$LOGS/build-user.txt"
	echo "check: user-space build failed"
	suite_end build 0 1
	echo "$total_pass passed, $((total_fail)) failed"
	exit 1
fi
bp=0 bf=0
for k in "${KVERS[@]}"; do
	step "module for $k (W=1)"
	if progress_run make -s -j"$JOBS" module KVER="$k" >"$LOGS/build-$k.txt" 2>&1 &&
	   ! grep -qiE 'warning:|error:' "$LOGS/build-$k.txt"; then
		echo "ok: odsm.ko for $k, no warnings"
		bp=$((bp + 1))
	else
		cat "$LOGS/build-$k.txt"
		echo "not ok: odsm.ko for $k"
		bf=$((bf + 1))
	fi
done
step "checkpatch --strict on kmod/ uapi/"
if make -s checkpatch >"$LOGS/checkpatch.txt" 2>&1 &&
   ! grep -qE '(ERROR|WARNING|CHECK):' "$LOGS/checkpatch.txt"; then
	echo "ok: checkpatch clean"
	bp=$((bp + 1))
else
	cat "$LOGS/checkpatch.txt"
	echo "not ok: checkpatch"
	bf=$((bf + 1))
fi
# the layer map (Documentation/odsm/design.rst): no file calls a layer above
step "kmod layers: no cycle of calls across them"
k=${KVERS[${#KVERS[@]}-1]:-}
if [ -n "$k" ] && tools/kmod-deps.sh "build/kmod/$k/kmod" >"$LOGS/kmod-deps.txt" 2>&1; then
	grep -E '^(cycle|kmod-deps:)' "$LOGS/kmod-deps.txt"
	echo "ok: no cycle across layers"
	bp=$((bp + 1))
else
	grep -E '^(CYCLE|cycle|kmod-deps)' "$LOGS/kmod-deps.txt" 2>/dev/null
	echo "not ok: kmod layers"
	bf=$((bf + 1))
fi
# libodsm's ABI: its soname, every symbol with its version node, and the
# layout of the structs its headers define
step "libodsm ABI: debian/libodsm1.symbols and .layout"
if tools/check-symbols.sh >"$LOGS/symbols.txt" 2>&1 &&
	tools/check-layout.sh >>"$LOGS/symbols.txt" 2>&1; then
	echo "ok: libodsm.so.1 exports what debian/libodsm1.symbols states, its structs are laid out as debian/libodsm1.layout states"
	bp=$((bp + 1))
else
	cat "$LOGS/symbols.txt"
	echo "not ok: libodsm ABI (tools/check-symbols.sh, tools/check-layout.sh)"
	bf=$((bf + 1))
fi
suite_end build $bp $bf

# ---- host unit tests ------------------------------------------------------------
# (the loop below runs what is executable there)
PROGRESS_TOTAL=$(check_steps "$(host_count -x build/tests/host/* build/tests/lib/*)")
hp=0 hf=0
for t in build/tests/host/* build/tests/lib/*; do
	[ -x "$t" ] || continue
	step "host: $(basename "$t")"
	out=$LOGS/host-$(basename "$t").txt
	"$t" >"$out" 2>&1
	rc=$?
	read -r p f < <(tap_totals "$out")
	grep -E '^(not ok|# FAIL|#.*ERROR|.*runtime error)' "$out" || true
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		tail -n 20 "$out"
		f=1	# crashed or failed outside a test
	fi
	echo "$(basename "$t"): $p passed, $f failed"
	hp=$((hp + p))
	hf=$((hf + f))
done
suite_end host $hp $hf

# ---- the protocol, model-checked ------------------------------------------------
step "model: spin on model/odsm_coherence.pml and its mutants"
counted_suite model "$LOGS/model.txt" '^ok: ' '^not ok: ' tools/model-check.sh

# ---- the rig judges what it should -----------------------------------------------
# smoke and Soft-RoCE rping in one guest must pass; a module that fires a
# real WARN() and a kernel panic must be judged FAIL.  (Soft-RoCE between
# guests is covered by the cluster suite over RDMA; rping between guests,
# flaky under a loaded host, stays in tools/rig/selftest.sh.)
step "rig self-test (judge, 1-3 guests with Soft-RoCE)"
counted_suite rig "$LOGS/rig-selftest.txt" '^ok ' '^BAD ' \
	env RIG_SELFTEST_NODES=1 tools/rig/selftest.sh "${KVERS[@]/#/-k}"

# ---- the packages, installed and used --------------------------------------------
if [ ${#KVERS[@]} -gt 0 ]; then
	step "packages: make deb, lintian, dkms, pkg-config, a cluster of 3 from the packages"
	counted_suite packages "$LOGS/packages.txt" '^ok: ' '^not ok: ' \
		tools/check-packages.sh "${KVERS[${#KVERS[@]}-1]}"
fi

# ---- VM suites -------------------------------------------------------------------
for k in "${KVERS[@]}"; do
	img=build/vm/check-$k.cpio.gz
	step "vm $k: guest image"
	if ! progress_run tools/vm-image.sh "$k" "$img" >"$LOGS/image-$k.txt" 2>&1; then
		cat "$LOGS/image-$k.txt"
		suite_end "vm-$k" 0 1
		continue
	fi
	# the kselftest programs, then the demo (no TAP of its own)
	s_pass=0 s_fail=0
	for spec in "selftests kselftests" "demo"; do
		set -- $spec
		scen=$1 summary=${2:-}
		step "vm $k: $scen"
		run_guests "$scen" "$k" 1 "$LOGS/run-$scen-$k.txt" "$summary" \
			"$scen guest passed, kernel log clean" \
			"$scen guest (see $LOGS/$scen-$k-node0.log)"
	done
	# memory pressure (issue 12): mem_test alone in a guest of 320 MiB
	# (mem_test's ceiling for the test).  256 MiB stopped booting once
	# the image's 65 static programs unpacked to 90 MB: "Initramfs
	# unpacking failed: write error" (fresh-clone check, 2026-11-26)
	step "vm $k: lowmem"
	run_guests lowmem "$k" 1 "$LOGS/run-lowmem-$k.txt" lowmem \
		"lowmem guest passed, kernel log clean" \
		"lowmem guest (see $LOGS/lowmem-$k-node0.log)" -m 320M
	suite_end "vm-$k" $s_pass $s_fail

	# the cluster: 2 guests; 3 guests of which one dies after the
	# programs (the survivors check that operations on it fail in time
	# and that rmmod works with a peer dead); the same two over Soft-RoCE
	s_pass=0 s_fail=0
	# (and cluster_homerestart_test and cluster_lazyrestart_test, whose
	# fake home restarts, cluster_delegwait_test, whose fake client
	# sends DELEG budgets no real node would, cluster_deafpeer_test,
	# whose fake peer reads nothing, cluster_wrongreply_test, whose fake
	# home answers with the wrong reply, and cluster_returnpick_test
	# and cluster_mutpick_test, whose fake home restarts too: they need
	# the fake node too)
	flood=cluster_accept_test,cluster_deafpeer_test,cluster_delegwait_test,cluster_homerestart_test,cluster_lazyrestart_test,cluster_replaywin_test,cluster_reqflood_test,cluster_returnpick_test,cluster_mutpick_test,cluster_twoway_test,cluster_wrongreply_test
	# On the older kernel the 3-guest runs only: what differs between
	# kernels is the kernel's API under the module (compat shims, the
	# mm, io_uring, the verbs), which they exercise whole; what differs
	# between 2 and 3 guests is the module's own logic, the same on
	# both, and run on the newest (which kept make check near 40 min).
	specs=("3 tcp rig.down=0" "3 rdma rig.down=2")
	# the newest kernel: the 2-guest runs too, and eight nodes, the most
	# the rig boots (run.sh -n): every guest gets a quarter of a host
	# core, so that run has more time
	[ "$k" != "${KVERS[${#KVERS[@]}-1]}" ] ||
		specs=("2 tcp" "2 rdma" "${specs[@]}" "8 tcp")
	# The programs eight guests add nothing to: one node's requests to
	# one other (forged messages, the cache, returns, lazy faults, the
	# wait word, io_uring, odsmctl, tracing, hits, node-down
	# bookkeeping; reads and writes of 1 MiB, whose one-sided half is
	# RDMA's and took 76 s of this run over TCP), run on 2 and 3 nodes
	# above.  The 8-guest run keeps the ones where every node works on
	# shared state at once.
	few=cluster_rw_test,cluster_badmsg_test,cluster_cache_test,cluster_return_test,cluster_lazy_test,cluster_waitword_test,cluster_uring_test,cluster_odsmctl_test,cluster_trace_test,cluster_ownership_test,cluster_hits_test,cluster_fault_test,cluster_movedown_test,cluster_workdown_test,cluster_tbox_test
	for spec in "${specs[@]}"; do
		set -- $spec
		n=$1 xport=$2 extra=${3:-}
		step "cluster $k: $n guests over $xport ${extra:+($extra)}"
		skip=$flood
		# two-way load over Soft-RoCE, where senders once starved for
		# credits killed a healthy connection (testing.rst, "Two-way
		# RDMA stalls"): on the 2-guest RDMA run, the flood's only
		# program that needs no fake node
		[ "$n.$xport" != 2.rdma ] || skip=${flood/cluster_twoway_test,/}
		[ "$n" -le 3 ] || skip=$flood,$few
		run_guests cluster "$k" "$n" "$LOGS/run-cluster-$n-$xport-$k.txt" "" \
			"$n guests passed, kernel logs clean" "cluster of $n" \
			-t $((n > 3 ? 1200 : 600)) \
			-a "rig.transport=$xport rig.heartbeat_ms=250 rig.timeout_ms=5000 rig.cluster_skip=$skip $extra"
	done
	# Soft-RoCE retransmitting: eth0 drops 2% of what it sends.  Once,
	# on the oldest kernel: cluster_rw_test's one-sided reads, writes and
	# registrations on 2 guests (rxe replayed a REG_MR queued behind a
	# retransmitted request: design.rst, "The registration QP"); the NIC
	# atomics and mutexes on 3 (rxe completed an atomic on a resent
	# SEND's ACK: "The atomics QP"), where that showed in every run and
	# on 2 guests in none.  Apart: the 1 MiB reads of cluster_rw_test
	# on 3 guests behind one vde_switch are where a guest's virtio NIC
	# once stopped sending (testing.rst, "Packet loss").
	if [ "$k" = "${KVERS[0]}" ]; then
		step "cluster $k: 2 guests over rdma, 2% of packets lost"
		run_guests cluster "$k" 2 "$LOGS/run-cluster-loss-$k.txt" "" \
			"2 guests passed, kernel logs clean" "cluster over a lossy link" \
			-a "rig.transport=rdma rig.heartbeat_ms=250 rig.timeout_ms=5000 rig.loss=2 rig.cluster_tests=cluster_rw_test"
		step "cluster $k: 3 guests over rdma, NIC atomics, 2% of packets lost"
		run_guests cluster "$k" 3 "$LOGS/run-cluster-loss-atomics-$k.txt" "" \
			"3 guests passed, kernel logs clean" "NIC atomics over a lossy link" \
			-a "rig.transport=rdma rig.heartbeat_ms=250 rig.timeout_ms=5000 rig.loss=2 rig.cluster_tests=cluster_atomic_test,cluster_sync_test"
	fi
	# the programs that flood node 0 (connections, a fake node's
	# requests, two-way load) and the fake home's restart, over TCP with
	# a fake node: once, on the newest kernel
	if [ "$k" = "${KVERS[-1]}" ]; then
		step "cluster $k: 2 guests over tcp and a fake node"
		# The floods are timing-sensitive under TCG (a starved guest
		# misses a deadline or a heartbeat): a failed run is run once
		# more, said so, and only the second one counts.  A known
		# flake to fix (issue 12), not a pass by default.
		s0_pass=$s_pass s0_fail=$s_fail
		for try in 1 2; do
			run_guests cluster "$k" 2 "$LOGS/run-cluster-fake-$k.txt" "" \
				"2 guests and a fake node passed, kernel logs clean" \
				"cluster with a fake node" \
				-a "rig.transport=tcp rig.heartbeat_ms=250 rig.timeout_ms=5000 rig.fake_peer=1 rig.cluster_tests=$flood"
			[ "$s_fail" != "$s0_fail" ] && [ "$try" = 1 ] || break
			echo "retry: the fake-node run failed (above); running it once more"
			echo "retry: the fake-node run above was made once more; the second run counts" >>"$LOGS/failures.txt"
			s_pass=$s0_pass s_fail=$s0_fail
		done
	fi
	# faults: calls under the message fault injector, then node 2
	# powered off in the middle of moves (the failure contract)
	step "cluster $k: 3 guests over tcp, faults and a node down mid-moves"
	run_guests cluster-faults "$k" 3 "$LOGS/run-cluster-faults-$k.txt" "" \
		"3 guests under faults passed, kernel logs clean" "cluster-faults of 3" \
		-a "rig.transport=tcp rig.heartbeat_ms=250 rig.timeout_ms=5000 rig.down=2"
	# the RDMA transport under abuse (tools/rig/scenarios/rdma-fuzz.sh),
	# freed memory poisoned so a use after free shows: newest kernel only
	if [ "$k" = "${KVERS[${#KVERS[@]} - 1]}" ]; then
		step "cluster $k: rdma-fuzz, 2 guests over Soft-RoCE"
		run_guests rdma-fuzz "$k" 2 "$LOGS/run-rdma-fuzz-$k.txt" "" \
			"2 guests passed, kernel logs clean" "rdma-fuzz" \
			-a "slub_debug=FZPU"
	fi
	suite_end "cluster-$k" $s_pass $s_fail
done

# ---- fuzzers ---------------------------------------------------------------------
# odsm-fuzz (random ioctl and mm sequences) and odsm-wirefuzz (a hostile
# peer) on the newest kernel, booted with slub_debug=FZPU and KFENCE: one
# guest (~33 s of fuzzing) and a cluster of two (~40 s); each run passes
# with 0 problems and a clean kernel log (tools/fuzz/run.sh)
if [ ${#KVERS[@]} -gt 0 ]; then
	k=${KVERS[${#KVERS[@]}-1]}
	step "fuzz $k: ioctl and wire fuzzers in debug-booted guests"
	fimg=build/vm/check-$k.cpio.gz
	[ -f "$fimg" ] || fimg=""
	fuzz_suite "$LOGS/fuzz.txt" -k "$k" ${fimg:+-i "$fimg"}
fi

# the failed guest runs again, in short, last: a reader of the output's
# end sees what failed and why (each run's full story is above and in
# build/logs)
if [ -s "$LOGS/failures.txt" ]; then
	echo "failures (build/logs/failures.txt):"
	head -n 80 "$LOGS/failures.txt"
	# and last of all the failed tests alone, where a reader of the
	# output's last lines (a CI page's tail) sees them
	if grep -qE '^\[node[0-9]+\] (not ok|# +FAIL)' "$LOGS/failures.txt"; then
		echo "failed tests:"
		grep -E '^(== not ok|\[node[0-9]+\] (not ok|# +FAIL))' "$LOGS/failures.txt" | tail -n 24
	fi
fi
echo "check: $(( $(date +%s) - t_start )) s, $progress_n steps"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" = 0 ]
