#!/bin/bash
# make fuzz: the ioctl fuzzer (odsm-fuzz) and the wire fuzzer
# (odsm-wirefuzz) in debug-booted guests (run.sh -D: slub_debug=FZPU,
# KFENCE on 6.12), scenario tools/rig/scenarios/fuzz.sh.  Per kernel, two
# runs:
#   1 guest    odsm-fuzz, then the SET_CONFIG/JOIN/LEAVE race
#   2 guests   a cluster over TCP: odsm-fuzz on both nodes at once (remote
#              borrows, moves, reads, writes, leave and re-join), then
#              node 1 speaks for a fake node to node 0 (odsm-wirefuzz)
#              while node 0 fuzzes its ioctls
#
# Usage: tools/fuzz/run.sh [--short] [-k KVER]... [-i IMAGE] [-s SECS] [-S SEED]
#   -s SECS   seconds of fuzzing in all (default $FUZZ_SECS, else 600),
#             split over the kernels and their runs (boots not counted)
#   -S SEED   base seed (default $FUZZ_SEED, else random); every run prints
#             its seed, each node adds its id
#   -k KVER   a kernel (default: the newest of each supported series)
#   -i IMAGE  the guest image (one kernel only; default: built by
#             tools/vm-image.sh into build/vm/fuzz-KVER.cpio.gz)
#   --short   make check's run: 33 s of fuzzing on one guest, 40 s on two
#
# Prints, per run, the operations tried per category (summed over its
# nodes and phases), then "ok: ..." or "not ok: ..."; ends with
# "fuzz: N passed, M failed".  A run fails on any fuzzer problem, a guest
# that fails (a kernel WARNING/BUG/Oops/KFENCE/slab report, hung task,
# time-out) or a missing result.  Logs: build/logs/fuzz-KVER-nodeK.log
# ($FUZZ_LOGS instead of build/logs when set).
set -uo pipefail
cd "$(dirname "$0")/../.."
LOGS=${FUZZ_LOGS:-build/logs}
SECS=${FUZZ_SECS:-600}
SEED=${FUZZ_SEED:-}
SHORT=0 IMG="" KVERS=()
while [ $# -gt 0 ]; do
	case $1 in
	--short) SHORT=1 ;;
	-k) KVERS+=("$2"); shift ;;
	-i) IMG=$2; shift ;;
	-s) SECS=$2; shift ;;
	-S) SEED=$2; shift ;;
	*) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 2 ;;
	esac
	shift
done
[[ $SECS =~ ^[0-9]+$ ]] || { echo "fuzz: bad seconds '$SECS'"; exit 2; }
[ -n "$SEED" ] || SEED=$(od -An -tu4 -N4 /dev/urandom | tr -d ' ')
if [ ${#KVERS[@]} = 0 ]; then
	for s in 6.1 6.12; do
		k=$(tools/rig/kernels.sh | grep -E "^${s//./\\.}\.[0-9]" | tail -n 1 || true)
		[ -z "$k" ] || KVERS+=("$k")
	done
	# the short run: the newest kernel (it has KFENCE)
	[ "$SHORT" = 0 ] || KVERS=("${KVERS[-1]}")
fi
[ ${#KVERS[@]} -gt 0 ] || { echo "fuzz: no kernel (run 'make setup')"; echo "fuzz: 0 passed, 1 failed"; exit 1; }
[ -z "$IMG" ] || [ ${#KVERS[@]} = 1 ] || { echo "fuzz: -i needs exactly one -k"; exit 2; }
mkdir -p "$LOGS" build/vm

pass=0 fail=0
# seconds for a phase: a share (percent) of one kernel's time, 10 at least
share() { local s=$((SECS * $1 / 100 / ${#KVERS[@]})); [ "$s" -ge 10 ] && echo "$s" || echo 10; }
if [ "$SHORT" = 1 ]; then
	ops1=25 race=8 ops2=25 wire=15
else
	ops1=$(share 40) race=$(share 10) ops2=$(share 30) wire=$(share 20)
fi

# sum the FUZZ_OPS lines of a run's logs per category; the problems of its
# FUZZ_RESULT lines and any FUZZ_PROBLEM line
report() {	# LOG...
	cat "$@" | tr -d '\r' | awk '
		/^FUZZ_OPS / { for (i = 3; i <= NF; i++) { split($i, kv, "=")
				if (kv[1] == "tried") t[$2] += kv[2]; else if (kv[1] == "faults") f[$2] += kv[2] }
			if (!($2 in seen)) { seen[$2] = 1; order[n++] = $2 } }
		/^FUZZ_RESULT / { for (i = 2; i <= NF; i++) { split($i, kv, "=")
				if (kv[1] == "problems") p += kv[2]; if (kv[1] == "mode") m[kv[2]] = 1 } r++ }
		/^FUZZ_PROBLEM / { if (shown++ < 10) print "  " $0 }
		END {
			line = "  ops:"
			for (i = 0; i < n; i++) {
				k = order[i]; line = line " " k "=" t[k]; tot += t[k]
				if (f[k]) line = line "(" f[k] " faults)"
				if (length(line) > 100) { print line; line = "      " }
			}
			if (line != "      ") print line
			printf "  total: %d operations, %d results, %d problems\n", tot, r, p
			print "RESULTS " r " " p " " tot
		}'
}

for k in "${KVERS[@]}"; do
	img=${IMG:-build/vm/fuzz-$k.cpio.gz}
	if [ -z "$IMG" ]; then
		echo "== fuzz $k: guest image"
		if ! tools/vm-image.sh "$k" "$img" >"$LOGS/fuzz-image-$k.txt" 2>&1; then
			cat "$LOGS/fuzz-image-$k.txt"
			echo "not ok: fuzz $k: no guest image"
			fail=$((fail + 1))
			continue
		fi
	fi
	for spec in "1 $ops1 $race" "2 $ops2 $wire"; do
		set -- $spec
		n=$1
		if [ "$n" = 1 ]; then
			args="rig.fuzz_secs=$2 rig.fuzz_race_secs=$3"
			what="1 guest, ${2}s ops + ${3}s config race"
		else
			args="rig.fuzz_secs=$2 rig.fuzz_wire_secs=$3 rig.transport=tcp rig.heartbeat_ms=250 rig.timeout_ms=5000"
			what="2 guests over tcp, ${2}s ops + ${3}s wire"
		fi
		echo "== fuzz $k: $what (seed $SEED)"
		runlog=$LOGS/run-fuzz-$n-$k.txt
		tools/rig/run.sh -D -k "$k" -n "$n" -s fuzz -i "$img" -l "$LOGS" \
			-t $(($2 + $3 + 300)) -a "rig.fuzz_seed=$SEED $args" >"$runlog" 2>&1
		rc=$?
		logs=()
		for ((i = 0; i < n; i++)); do logs+=("$LOGS/fuzz-$k-node$i.log"); done
		out=$(report "${logs[@]}")
		grep -v '^RESULTS ' <<<"$out"
		read -r _ results problems total < <(grep '^RESULTS ' <<<"$out" || echo "RESULTS 0 0 0")
		# a FUZZ_RESULT of each phase: ops + race on 1 guest, ops on
		# each of 2 (and the wire phase's two)
		if [ "$rc" = 0 ] && [ "${problems:-1}" = 0 ] && [ "${results:-0}" -ge 2 ]; then
			echo "ok: fuzz $k $what: $total operations, 0 problems"
			pass=$((pass + 1))
		else
			grep -E 'FAIL|kernel problem' "$runlog" | head -n 5 | sed 's/^/  /'
			echo "not ok: fuzz $k $what: ${problems:-?} problems, rig $([ "$rc" = 0 ] && echo PASS || echo FAIL) (seed $SEED, see $runlog)"
			fail=$((fail + 1))
		fi
	done
done
echo "fuzz: $pass passed, $fail failed"
[ "$fail" = 0 ]
