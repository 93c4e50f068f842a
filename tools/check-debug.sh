#!/bin/bash
# make check-debug: the VM suites on the rig's debug kernel, a 6.1 kernel
# built with KASAN, lockdep (PROVE_LOCKING), DEBUG_ATOMIC_SLEEP, KFENCE,
# DEBUG_LIST and hung-task detection (tools/debug-kernel/build.sh: built
# once, ~20 minutes on 2 cores, then cached in /var/cache/odsm/debug-kernel).
# Debian's kernels have none of these checkers, so `make check` never sees
# what they report.  Not a part of `make check`: its guests are several
# times slower.
#
#   kernel    the debug kernel is built, or found in the cache
#   build     odsm.ko builds against it with W=1 and no warning
#   rig       the judge fails a guest on a KASAN, a lockdep and an
#             atomic-sleep report (tools/rig/selftest.sh's fail-warn)
#   vm        kselftest programs and the demo in one guest
#   cluster   the multi-node programs on 2 guests over TCP and over RDMA
#             (Soft-RoCE); cluster3: on 3 guests of which one powers off
#             mid-run, over both
#   fuzz      the ioctl and wire fuzzers (tools/fuzz/run.sh --short)
#
# Usage: tools/check-debug.sh [-k KVER] [SUITE...]
#   SUITE     rig, vm, cluster, cluster3, fuzz (default: all but cluster3,
#             whose 3-guest runs take long); the kernel and the build always
#   -k KVER   a debug kernel already in the cache (kernels.sh --debug),
#             instead of the one the current tools/debug-kernel gives
# A guest fails on any WARNING/BUG/KASAN/lockdep/hung-task line in its log
# (tools/rig/run.sh).  Each suite ends with "<suite>: N passed, M failed";
# the run ends with "N passed, M failed".  Logs: build/logs-debug
# (CHECK_DEBUG_LOGS).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
LOGS=${CHECK_DEBUG_LOGS:-build/logs-debug}
mkdir -p "$LOGS" build/vm
total_pass=0 total_fail=0
t_start=$(date +%s)

# shellcheck source=tools/check-lib.sh
. tools/check-lib.sh

KVER=""
if [ "${1:-}" = -k ]; then
	KVER=${2:-}
	shift 2 || true
fi
SUITES=("$@")
[ ${#SUITES[@]} -gt 0 ] || SUITES=(rig vm cluster fuzz)
for s in "${SUITES[@]}"; do
	case $s in
	rig | vm | cluster | cluster3 | fuzz) ;;
	*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 2 ;;
	esac
done
want() { [[ " ${SUITES[*]} " == *" $1 "* ]]; }

# ---- kernel ---------------------------------------------------------------------
step "debug kernel (tools/debug-kernel/build.sh)"
if [ -n "$KVER" ]; then
	k=$KVER
	tools/rig/kernels.sh --debug | grep -qxF -- "$k" || k=""
elif ! k=$(tools/debug-kernel/build.sh | tail -n 1); then
	k=""
fi
if [ -z "$k" ]; then
	echo "not ok: debug kernel"
	suite_end kernel 0 1
	echo "$total_pass passed, $total_fail failed"
	exit 1
fi
echo "ok: debug kernel $k ($(tools/rig/kernels.sh --image "$k"))"
suite_end kernel 1 0

# ---- build ----------------------------------------------------------------------
step "module for $k (W=1)"
if make -s lib tools tests >"$LOGS/build-user.txt" 2>&1 &&
   make -s module KVER="$k" >"$LOGS/build-$k.txt" 2>&1 &&
   ! grep -qiE 'warning:|error:' "$LOGS/build-$k.txt"; then
	echo "ok: odsm.ko for $k, no warnings"
	suite_end build 1 0
else
	cat "$LOGS/build-user.txt" "$LOGS/build-$k.txt"
	echo "not ok: odsm.ko for $k"
	suite_end build 0 1
	echo "$total_pass passed, $total_fail failed"
	exit 1
fi

img=build/vm/check-debug-$k.cpio.gz
step "guest image"
if ! tools/vm-image.sh "$k" "$img" >"$LOGS/image-$k.txt" 2>&1; then
	cat "$LOGS/image-$k.txt"
	suite_end image 0 1
	echo "$total_pass passed, $total_fail failed"
	exit 1
fi

# ---- the judge sees the checkers' reports ----------------------------------------
if want rig; then
	step "rig self-test on $k (1 guest; KASAN, lockdep and atomic-sleep reports fail it)"
	counted_suite rig "$LOGS/rig-selftest.txt" '^ok ' '^BAD ' \
		env RIG_SELFTEST_NODES=1 tools/rig/selftest.sh -k "$k"
fi

# ---- one guest: the kselftests and the demo --------------------------------------
# run.sh gives a KASAN guest 1G and three times the time limit on its own
if want vm; then
	s_pass=0 s_fail=0
	for spec in "selftests kselftests" "demo"; do
		set -- $spec
		scen=$1 summary=${2:-}
		step "vm $k: $scen"
		run_guests "$scen" "$k" 1 "$LOGS/run-$scen-$k.txt" "$summary" \
			"$scen guest passed, kernel log clean" \
			"$scen guest (see $LOGS/$scen-$k-node0.log)"
	done
	suite_end "vm-$k" $s_pass $s_fail
fi

# ---- the cluster ------------------------------------------------------------------
# as make check runs it, without the programs that need its fake node (the
# floods, timing-sensitive under TCG already on Debian's kernels, and the
# fake home's restart)
specs=()
! want cluster || specs+=("2 tcp" "2 rdma")
! want cluster3 || specs+=("3 tcp rig.down=0" "3 rdma rig.down=2")
if [ ${#specs[@]} -gt 0 ]; then
	s_pass=0 s_fail=0
	flood=cluster_accept_test,cluster_deafpeer_test,cluster_delegwait_test,cluster_homerestart_test,cluster_lazyrestart_test,cluster_reqflood_test,cluster_returnpick_test,cluster_twoway_test,cluster_wrongreply_test
	for spec in "${specs[@]}"; do
		set -- $spec
		n=$1 xport=$2 extra=${3:-}
		step "cluster $k: $n guests over $xport ${extra:+($extra)}"
		run_guests cluster "$k" "$n" "$LOGS/run-cluster-$n-$xport-$k.txt" "" \
			"$n guests over $xport passed, kernel logs clean" "cluster of $n over $xport" \
			-a "rig.transport=$xport rig.heartbeat_ms=250 rig.timeout_ms=5000 rig.cluster_skip=$flood $extra"
	done
	suite_end "cluster-$k" $s_pass $s_fail
fi

# ---- fuzzers ----------------------------------------------------------------------
if want fuzz; then
	step "fuzz $k: ioctl and wire fuzzers"
	FUZZ_LOGS=$LOGS fuzz_suite "$LOGS/fuzz.txt" -k "$k" -i "$img"
fi

echo "check-debug: $(($(date +%s) - t_start)) s"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" = 0 ]
