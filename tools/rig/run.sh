#!/bin/bash
# Boot NODES QEMU/TCG guests of a Debian kernel, run one scenario in each and
# judge the serial logs.  Node K (0-based) has IP 10.0.0.(K+1)/24 on a
# virtual Ethernet that uses no host IP networking:
#   1 node:   a QEMU hub with no other port (eth0 exists, frames go nowhere)
#   2 nodes:  -netdev stream over a UNIX socket (node 0 listens)
#   3+ nodes: one vde_switch on a UNIX socket directory
#
# Usage: run.sh [-k KVER] [-n NODES] -s SCENARIO [-i INITRD] [-t TIMEOUT_S]
#               [-m MEM] [-c SMP] [-l LOGDIR] [-a "kernel args"] [-v] [-B] [-D]
#   -k KVER      kernel to boot (default: kernels.sh --newest); a Debian
#                kernel in /boot or a debug kernel of tools/debug-kernel
#   -n NODES     number of guests, 1..8 (default 1)
#   -s SCENARIO  runs /rig/scenarios/SCENARIO.sh in every guest
#   -i INITRD    initramfs from mkinitramfs.sh (default: build one with the
#                default scenarios and no project module, ~2 s)
#   -t SECONDS   per-guest time limit (default 300)
#   -m MEM       guest memory (default 512M);  -c SMP  guest CPUs (default 1)
#                On a kernel with KASAN (the debug kernel, tools/debug-kernel)
#                the default memory is 1G and the time limit is multiplied by
#                RIG_KASAN_SLOWDOWN (default 3); such a kernel boots as a
#                bzImage (-B) with 4-level paging (no5lvl), see below
#   -l LOGDIR    serial logs go to LOGDIR/SCENARIO-KVER-nodeK.log (default logs/
#                next to this script)
#   -a ARGS      extra kernel command line, e.g. "rig.size=4096 loglevel=7"
#                (rig.NAME=VALUE becomes $rig_NAME in the scenario).  A value
#                with blanks goes in double quotes, which the kernel and the
#                guest's /init strip: -a 'rig.args="-n 3 -x"' gives
#                rig_args='-n 3 -x'.  A value cannot hold a double quote.
#   -v           verbose: echo every line the guests print (their console:
#                scenario output, kernel messages) as it comes, "[nodeK] "
#                before each line when NODES > 1.  Also RIG_VERBOSE=1.
#                By default only markers (RIG_*, ODSM_*) and TAP lines are
#                echoed, once the guests are done; the full serial logs are
#                always in LOGDIR, and their paths are printed at the end
#   -D           debug boot: slub_debug=FZPU (red zones, poisoning, sanity
#                checks and owner tracking on every slab cache) and, on a
#                kernel built with KFENCE (6.12; Debian's 6.1 has none),
#                kfence.sample_interval=1: an overflow or use after free in
#                the slab becomes a "BUG <cache> (...)" / "KFENCE:" report,
#                which fails the guest.  Also RIG_DEBUG=1
#   -B           boot the bzImage /boot/vmlinuz-KVER as is.  By default the ELF
#                kernel inside it (cached in out/) is started at its PVH entry:
#                no decompression under TCG, 1-4 s faster per guest
# Runs on one machine wait for each other (flock on RIG_LOCK, default
# /tmp/odsm-rig.lock): one set of guests at a time.  RIG_CPU: the guests'
# CPU model, QEMU's -cpu (default max,-cx16).
# A guest passes only if its log has "RIG_RESULT: PASS scenario=S node=K" and
# no kernel problem (WARNING, BUG, Oops, lockdep, hung task, stall, ...).
# Exit status 0 iff every guest passes.
set -euo pipefail

RIG=$(cd "$(dirname "$0")" && pwd)
KVER="" NODES=1 SCEN="" INITRD="" TIMEOUT=300 MEM=512M MEM_SET=0 SMP=1 LOGDIR=$RIG/logs EXTRA="" BZIMAGE=0
# how long a guest may take to reach its init's RIG_BOOTED line (guests
# say it within 15-40 s, eight of them on this machine included)
BOOT_LIMIT=${RIG_BOOT_LIMIT:-120}
# the guests' CPU model (QEMU's -cpu): every feature TCG emulates but
# CMPXCHG16B, which QEMU 7.2 emulates with wrong flags (README.md,
# qemu-bugs/cmpxchg16b-flags.c), unless RIG_CPU names another
CPU=${RIG_CPU:-max,-cx16}
[[ $BOOT_LIMIT =~ ^[1-9][0-9]*$ ]] || { echo "RIG_BOOT_LIMIT must be a positive integer" >&2; exit 2; }
VERBOSE=0 DEBUG=0
case ${RIG_VERBOSE:-0} in 0 | "") ;; *) VERBOSE=1 ;; esac
case ${RIG_DEBUG:-0} in 0 | "") ;; *) DEBUG=1 ;; esac
# kernel problems: any of these in a log fails the guest
# (slub_debug reports "BUG kmalloc-64 (Not tainted): Right Redzone
# overwritten", "Object already free", "Poison overwritten"...; KFENCE
# "BUG: KFENCE: use-after-free read in ...")
PROBLEMS='WARNING:|BUG:|BUG [^ ]+ \(|Oops|general protection fault|Kernel panic|KASAN|KFENCE:|UBSAN|Redzone overwritten|Poison overwritten|Object padding overwritten|Object already free|Freepointer corrupt|Object corrupt|list_add corruption|list_del corruption|possible circular locking|possible recursive locking|inconsistent lock state|INFO: task .* blocked for more than|hung_task|soft lockup|rcu_sched self-detected stall|rcu: INFO|Call Trace:'
# lines echoed to the terminal: markers and TAP
SHOW='^TAP version|^(\[ *[0-9]+\.[0-9]+\] )?(ODSM_|RIG_)|^[[:space:]]*(not )?ok [0-9]+|^[[:space:]]*# |^[[:space:]]*1\.\.[0-9]+$'

usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit "${1:-2}"; }
die() { echo "run.sh: $*" >&2; exit 2; }
[[ $CPU =~ ^[A-Za-z0-9_.,+=-]+$ ]] || die "RIG_CPU: not a CPU model: '$CPU'"

while getopts "k:n:s:i:t:m:c:l:a:vBDh" opt; do
	case $opt in
	k) KVER=$OPTARG ;;
	n) NODES=$OPTARG ;;
	s) SCEN=$OPTARG ;;
	i) INITRD=$(realpath -e "$OPTARG") ;;
	t) TIMEOUT=$OPTARG ;;
	m) MEM=$OPTARG MEM_SET=1 ;;
	c) SMP=$OPTARG ;;
	l) LOGDIR=$OPTARG ;;
	a) EXTRA=$OPTARG ;;
	v) VERBOSE=1 ;;
	B) BZIMAGE=1 ;;
	D) DEBUG=1 ;;
	h) usage 0 ;;
	*) usage ;;
	esac
done
[ $OPTIND -gt $# ] || usage
[ -n "$SCEN" ] || die "-s SCENARIO is required"
[[ $NODES =~ ^[1-8]$ ]] || die "-n must be 1..8"
[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "-t must be a number of seconds"
[[ $SCEN =~ ^[A-Za-z0-9_.-]+$ ]] || die "bad scenario name '$SCEN'"
[ -n "$KVER" ] || KVER=$("$RIG/kernels.sh" --newest)
IMAGE=$("$RIG/kernels.sh" --image "$KVER") ||
	die "no /boot/vmlinuz-$KVER, and no debug kernel $KVER (tools/debug-kernel/build.sh)"
[ -n "$INITRD" ] || [ -f "$RIG/scenarios/$SCEN.sh" ] || die "no scenario $RIG/scenarios/$SCEN.sh"
[ "$NODES" -lt 3 ] || command -v vde_switch >/dev/null || die "vde_switch missing (package vde2)"
# KASAN runs the same code several times slower (every access checks its
# shadow byte, freed memory waits in a quarantine) and keeps an eighth of
# the memory as shadow: the debug kernel's guests get more of both
if grep -qx 'CONFIG_KASAN=y' "$("$RIG/kernels.sh" --config "$KVER")" 2>/dev/null; then
	slow=${RIG_KASAN_SLOWDOWN:-3}
	[[ $slow =~ ^[1-9][0-9]*$ ]] || die "RIG_KASAN_SLOWDOWN must be a positive integer"
	TIMEOUT=$((TIMEOUT * slow))
	BOOT_LIMIT=$((BOOT_LIMIT * slow))
	[ "$MEM_SET" = 1 ] || MEM=1G
	# Its PVH entry runs arch/x86/platform/pvh/enlighten.c, which is
	# instrumented, before KASAN has an early shadow: QEMU exits before the
	# guest's first line.  The bzImage's path is safe.
	BZIMAGE=1
	# With 5-level paging (-cpu max has LA57) 6.1's KASAN reported a
	# "wild-memory-access" at boot, on the first interrupt's desc->lock in
	# the direct map (ff11...); with 4-level paging it boots clean.  (The
	# fragment turns X86_5LEVEL off now; kernels built before still boot.)
	! grep -qx 'CONFIG_X86_5LEVEL=y' "$("$RIG/kernels.sh" --config "$KVER")" ||
		EXTRA="no5lvl $EXTRA"
fi
# an unbalanced " would make the kernel (and /init) take the rest of the
# command line as one value
quotes=${EXTRA//[^\"]/}
[ $((${#quotes} % 2)) = 0 ] || die "-a: unbalanced double quote in '$EXTRA'"
mkdir -p "$LOGDIR"
LOGDIR=$(cd "$LOGDIR" && pwd)

# One set of guests at a time on this machine: TCG guests of two runs
# starve each other of CPU and time out for no fault of the code.  A run
# waits here for the one before it (RIG_LOCK names the lock file).
exec 9>"${RIG_LOCK:-/tmp/odsm-rig.lock}"
if ! flock -n 9; then
	echo "run.sh: waiting for another rig run to end (${RIG_LOCK:-/tmp/odsm-rig.lock})" >&2
	flock 9
fi

RUN=$(mktemp -d "${TMPDIR:-/tmp}/rig-run.XXXXXX")
PIDS=() FOLLOWS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}" "${FOLLOWS[@]}"; do wait "$p" 2>/dev/null || true; done
	[ -f "$RUN/vde.pid" ] && kill "$(cat "$RUN/vde.pid")" 2>/dev/null
	rm -rf "$RUN"
}
trap cleanup EXIT
trap 'echo "run.sh: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM

# The ELF kernel inside a bzImage, cached in out/: QEMU starts it at its PVH
# entry point, which skips the bzImage's decompressor (slow under TCG).
vmlinux_of() {
	local img=$IMAGE out=$RIG/out/vmlinux-$1 tmp fmt pat off
	[ "$out" -nt "$img" ] && { echo "$out"; return 0; }
	mkdir -p "$RIG/out"
	tmp=$out.tmp.$$
	for fmt in xz zstd gzip; do
		case $fmt in
		xz) pat='\xfd7zXZ\x00' ;;
		zstd) pat='\x28\xb5\x2f\xfd' ;;
		gzip) pat='\x1f\x8b\x08' ;;
		esac
		for off in $(LC_ALL=C grep -obUaP "$pat" "$img" | head -n 3 | cut -d: -f1); do
			tail -c +$((off + 1)) "$img" | "$fmt" -dc >"$tmp" 2>/dev/null || true
			# an ELF with the XEN_ELFNOTE_PHYS32_ENTRY (0x12) note is PVH-bootable
			if readelf -n "$tmp" 2>/dev/null | grep -q 'Xen.*(0x00000012)'; then
				mv "$tmp" "$out" && echo "$out" && return 0
			fi
		done
	done
	rm -f "$tmp"
	return 1
}
KERNEL=$IMAGE
if [ "$BZIMAGE" = 0 ]; then
	KERNEL=$(vmlinux_of "$KVER") || {
		echo "run.sh: warning: no PVH kernel in $IMAGE, booting the bzImage" >&2
		KERNEL=$IMAGE
	}
fi

# -D: the slab's own checks, and KFENCE where the kernel has it
if [ "$DEBUG" = 1 ]; then
	EXTRA="slub_debug=FZPU $EXTRA"
	! grep -qx 'CONFIG_KFENCE=y' "$("$RIG/kernels.sh" --config "$KVER")" 2>/dev/null ||
		EXTRA="kfence.sample_interval=1 $EXTRA"
fi

if [ -z "$INITRD" ]; then
	INITRD=$RUN/initrd.cpio
	"$RIG/mkinitramfs.sh" -k "$KVER" -o "$INITRD" >/dev/null
fi

log_of() { echo "$LOGDIR/$SCEN-$KVER-node$1.log"; }
ip_of() { echo "10.0.0.$(($1 + 1))"; }

# netdev option string of node K
netdev_of() {
	case $NODES in
	1) echo "hubport,id=n0,hubid=0" ;;
	2) echo "stream,id=n0,server=$([ "$1" = 0 ] && echo on || echo off),addr.type=unix,addr.path=$RUN/link.sock" ;;
	*) echo "vde,id=n0,sock=$RUN/sw" ;;
	esac
}

# the cluster key of this run's guests (odsmctl join --key-file; lib.sh
# cluster_key): fresh per run, the same for every guest
RIGKEY=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')

# -v: copy guest K's log to stdout as it grows, each line cleaned as judge()
# cleans it, until its QEMU (PID) has exited and been reaped
follow() { # K PID
	local pfx=""
	[ "$NODES" = 1 ] || pfx="[node$1] "
	tail -n +1 -s 0.2 -f --pid="$2" "$(log_of "$1")" 2>/dev/null |
		awk -v p="$pfx" '{ gsub(/\r/, ""); gsub(/\033\[[0-9;?]*[A-Za-z]/, ""); gsub(/\033c/, "")
			print p $0; fflush() }' &
	FOLLOWS+=($!)
}

boot() { # K: start guest K in the background
	local k=$1 peers="" j
	for ((j = 0; j < NODES; j++)); do
		[ "$j" = "$k" ] || peers=${peers:+$peers,}$(ip_of "$j")
	done
	rm -f "$(log_of "$k")"
	: >"$(log_of "$k")"	# for follow(): exists before QEMU writes
	# no_timer_check: under TCG the kernel's check that the 8254 timer
	# reaches the IO-APIC can fail ("..MP-BIOS bug: 8254 timer not
	# connected to IO-APIC") and the boot then hangs silently; the debug
	# kernel (make check-debug) did so in about 1 boot of 12.  The check
	# is for broken BIOSes of real machines; QEMU's timer works.
	# initcall_blacklist=i8042_init: no PS/2 controller driver.  Nothing
	# here types on a keyboard, and its shutdown commands crawl under TCG:
	# a node that powered itself off (rig.down) while its NIC took a storm
	# of interrupts spent over 20 s in ps2_command and reported an RCU
	# stall (make check, 2026-11-28).
	timeout -k 5 "$TIMEOUT" qemu-system-x86_64 -accel tcg -M pc -cpu "$CPU" -smp "$SMP" -m "$MEM" \
		-nographic -no-reboot \
		-netdev "$(netdev_of "$k")" \
		-device "virtio-net-pci,netdev=n0,romfile=,mac=52:54:00:00:00:$(printf %02x $((k + 1)))" \
		-kernel "$KERNEL" -initrd "$INITRD" \
		-append "console=ttyS0 panic=-1 oops=panic loglevel=4 no_timer_check initcall_blacklist=i8042_init rig.scenario=$SCEN rig.node=$k rig.nodes=$NODES rig.ip=$(ip_of "$k")/24 rig.peers=$peers rig.key=$RIGKEY $EXTRA" \
		</dev/null >"$(log_of "$k")" 2>&1 9>&- &
	PIDS+=($!)
	[ "$VERBOSE" = 0 ] || follow "$k" "$!"
}

wait_for_socket() { # PATH: QEMU/vde_switch listening on it
	local i
	for ((i = 0; i < 100; i++)); do
		[ -S "$1" ] && return 0
		sleep 0.1
	done
	[ -f "$(log_of 0)" ] && tail -n 5 "$(log_of 0)" >&2
	die "$1 did not appear"
}

start=$EPOCHREALTIME
if [ "$NODES" -ge 3 ]; then
	vde_switch -s "$RUN/sw" -d -p "$RUN/vde.pid" -n $((NODES + 2)) >/dev/null 9>&-
	wait_for_socket "$RUN/sw/ctl"
fi
boot 0
[ "$NODES" != 2 ] || wait_for_socket "$RUN/link.sock"
for ((k = 1; k < NODES; k++)); do boot "$k"; done

# A guest that hangs before its init runs (the debug kernel did, silently,
# after "Booting from ROM", in about one boot of twelve) would hold the
# run for its whole time limit.  One that has not said RIG_BOOTED within
# BOOT_LIMIT seconds ends the run: every guest is stopped and the run is
# judged "did not boot" (tools/check-lib.sh runs such a run once more).
# Its sleep is killed with it: left behind, it would hold for up to
# BOOT_LIMIT seconds whatever the caller passed down (a flock(1) on the
# lock file that serializes guest runs, which the next run then waits on).
(
	trap 'kill "$s" 2>/dev/null; exit 0' TERM
	sleep "$BOOT_LIMIT" &
	s=$!
	wait "$s"
	for ((k = 0; k < NODES; k++)); do
		grep -aq 'RIG_BOOTED ' "$(log_of "$k")" || echo "$k" >>"$RUN/noboot"
	done
	[ ! -s "$RUN/noboot" ] || kill -TERM "${PIDS[@]}" 2>/dev/null
) </dev/null >/dev/null 2>&1 9>&- &
WATCH=$!

RCS=()
for p in "${PIDS[@]}"; do
	rc=0
	wait "$p" || rc=$?
	RCS+=("$rc")
done
PIDS=()
kill "$WATCH" 2>/dev/null || true
wait "$WATCH" 2>/dev/null || true
wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
# the followers end once tail sees their QEMU gone (within 0.2 s)
for p in "${FOLLOWS[@]}"; do wait "$p" || true; done
FOLLOWS=()

# Judge guest K; prints its markers (unless -v showed every line already)
# and, on failure, why
judge() {
	local k=$1 rc=$2 log text sre bad=""
	log=$(log_of "$k")
	text=$(tr -d '\r' <"$log" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g')
	[ "$VERBOSE" = 1 ] || grep -E "$SHOW" <<<"$text" | sed "s/^/[node$k] /" || true
	sre=${SCEN//./\\.}
	if grep -qx "$k" "$RUN/noboot" 2>/dev/null; then
		bad="did not boot: no RIG_BOOTED line in ${BOOT_LIMIT}s"
	elif grep -qE "$PROBLEMS" <<<"$text"; then
		bad="kernel problem: $(grep -m 1 -E "$PROBLEMS" <<<"$text")"
	elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		bad="timed out after ${TIMEOUT}s"
	elif ! grep -qE "^RIG_RESULT: PASS scenario=$sre node=$k( |$)" <<<"$text"; then
		bad="no PASS marker: $(grep -m 1 '^RIG_RESULT:' <<<"$text" || echo "no RIG_RESULT (qemu rc=$rc)")"
	fi
	[ -z "$bad" ] && return 0
	echo "[node$k] FAIL: $bad"
	echo "[node$k] last 80 lines of $log:"
	tail -n 80 <<<"$text" | sed "s/^/[node$k] | /"
	return 1
}
result=PASS
for ((k = 0; k < NODES; k++)); do
	judge "$k" "${RCS[$k]}" || result=FAIL
done
for ((k = 0; k < NODES; k++)); do
	echo "[node$k] serial log: $(log_of "$k")"
done
echo "rig: $SCEN N=$NODES kver=$KVER $result wall=${wall}s"
[ "$result" = PASS ]
