#!/bin/bash
# Self-test of the rig itself.  For every kernel of kernels.sh (or each -k):
# build the rig_warn module (selftest/) and an initramfs with it, then check
# that smoke and rxe-ping on 1, 2 and 3 nodes pass, and that fail-warn (a real
# WARN, and a soft lockup) and fail-panic (a kernel crash) are judged FAIL.  The smoke runs also
# check that a quoted rig.echo="..." value with blanks reaches the guest
# intact, that run.sh prints only markers by default and every guest line
# with -v, and that it names the serial log.  On a kernel with KASAN (the
# debug kernel of tools/debug-kernel), a KASAN, a lockdep and an
# atomic-sleep report must each be judged FAIL, by their header line.
#
# Usage: selftest.sh [-k KVER]...     Exit status 0 iff every check held.
set -euo pipefail

RIG=$(cd "$(dirname "$0")" && pwd)
KVERS=()
while getopts "k:h" opt; do
	case $opt in
	k) KVERS+=("$OPTARG") ;;
	*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 2 ;;
	esac
done
[ ${#KVERS[@]} -gt 0 ] || mapfile -t KVERS < <("$RIG/kernels.sh")
T=$(mktemp -d "${TMPDIR:-/tmp}/rig-selftest.XXXXXX")
trap 'rm -rf "$T"' EXIT
unset RIG_VERBOSE	# the checks below expect run.sh's default output

bad=0
expect() { # pass|problem RUN.SH-ARGS...: run.sh must pass, or fail on a kernel problem
	local want=$1 got=pass
	shift
	"$RIG/run.sh" "$@" >"$T/out" 2>&1 || got=fail
	[ "$got" = fail ] && grep -q '^\[node[0-9]\] FAIL: kernel problem' "$T/out" && got=problem
	if [ "$got" = "$want" ]; then
		echo "ok   (want $want) $(grep '^rig: ' "$T/out" | tail -n 1)"
	else
		echo "BAD  (want $want) run.sh $*"
		cat "$T/out"
		bad=1
	fi
}
check() { # WHAT COMMAND...: COMMAND must succeed on the last run ($T/out)
	local what=$1
	shift
	if "$@"; then
		echo "ok   $what"
	else
		echo "BAD  $what"
		cat "$T/out"
		bad=1
	fi
}
# shellcheck disable=SC2317 # has, lacks, logged, problem_is: called by check
{
problem_is() { # TEXT: the first kernel problem run.sh named holds TEXT
	grep '^\[node0\] FAIL: kernel problem: ' "$T/out" | grep -qF -- "$1"
}
has() { grep -qxF -- "$1" "$T/out"; }	# LINE: the last run printed LINE
lacks() { ! grep -qF -- "$1" "$T/out"; }	# TEXT: no line of it holds TEXT
logged() { # LINE: the serial log run.sh named has LINE
	local log
	log=$(sed -n 's/^\[node0\] serial log: //p' "$T/out")
	[ -f "$log" ] && tr -d '\r' <"$log" | grep -qxF -- "$1"
}
}

# a value with blanks (two in a row), =, quote, $ and a glob character,
# then one more argument: both must reach the guest as they are
val="a  b=c 'd' \$HOME *"
echo_args=(-a "rig.echo=\"$val\" rig.echo2=end")

for k in "${KVERS[@]}"; do
	mkdir "$T/$k"
	cp "$RIG/selftest/rig_warn.c" "$RIG/selftest/Kbuild" "$T/$k/"
	make -C "$("$RIG/kernels.sh" --kdir "$k")" M="$T/$k" modules >"$T/make.log" 2>&1 || {
		cat "$T/make.log"
		exit 1
	}
	"$RIG/mkinitramfs.sh" -k "$k" -x "$T/$k/rig_warn.ko" -o "$T/$k.cpio" >/dev/null
	run=(-k "$k" -i "$T/$k.cpio" -t 120)
	expect pass "${run[@]}" -s smoke "${echo_args[@]}"
	check "rig.echo=\"$val\": the guest got it intact" has "[node0] RIG_MARK echo [$val] [end]"
	check "default output: markers only, not the guest's plain lines" lacks "smoke: echo"
	check "the serial log named at the end, with every line" logged "smoke: echo [$val] [end]"
	expect pass "${run[@]}" -s smoke "${echo_args[@]}" -v
	check "run.sh -v: a plain line of the guest shown" has "smoke: echo [$val] [end]"
	# RIG_SELFTEST_NODES=1 (make check): rping between guests is flaky
	# under a loaded TCG host; the cluster suites cover multi-guest RDMA
	for n in $(seq 1 "${RIG_SELFTEST_NODES:-3}"); do
		expect pass "${run[@]}" -n "$n" -s rxe-ping
	done
	expect problem "${run[@]}" -s fail-warn
	expect problem "${run[@]}" -s fail-panic
	# a guest that has not reached its init when the boot limit is up
	# ends the run at once, judged so (no guest boots in 1 s under TCG)
	if RIG_BOOT_LIMIT=1 "$RIG/run.sh" "${run[@]}" -s smoke >"$T/out" 2>&1; then
		echo "BAD  RIG_BOOT_LIMIT=1: the run passed"
		bad=1
	fi
	check "RIG_BOOT_LIMIT=1: judged 'did not boot'" \
		grep -q '^\[node0\] FAIL: did not boot' "$T/out"
	# a loop that never reschedules (issue 12, 12c): Debian's kernels have
	# the soft-lockup detector, 2 s with watchdog_thresh=1
	expect problem "${run[@]}" -s fail-warn -a "watchdog_thresh=1 rig.report=softlockup"
	check "rig.report=softlockup: judged by its header 'BUG: soft lockup'" problem_is "BUG: soft lockup"
	grep -qx 'CONFIG_KASAN=y' "$("$RIG/kernels.sh" --config "$k")" 2>/dev/null || continue
	for r in "kasan:BUG: KASAN: slab-out-of-bounds" \
		"lockdep:WARNING: possible circular locking dependency detected" \
		"sleep:BUG: sleeping function called from invalid context"; do
		expect problem "${run[@]}" -s fail-warn -a "rig.report=${r%%:*}"
		check "rig.report=${r%%:*}: judged by its header '${r#*:}'" problem_is "${r#*:}"
	done
done
echo "selftest: $([ "$bad" = 0 ] && echo PASS || echo FAIL)"
exit "$bad"
