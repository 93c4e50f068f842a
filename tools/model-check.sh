#!/bin/bash
# make model: model-check the coherence protocol (model/odsm_coherence.pml)
# with spin.
#
#   the model   three scenarios (P and X, Q, both), each must pass: spin
#               finds no assertion violated in any state within the bounds
#   mutants     each breaks one rule of the code (-DMUTANT_...); the model
#               must catch it: some scenario fails, naming the invariant
#   known gaps  each models something the code does today that breaks the
#               protocol (model/README.rst); spin must still find it, so a
#               fix shows up here as a gap that is gone (update the model).
#               None today: issue 12 closed the three the model found,
#               which are mutants now
#
# One line per run ("ok: ..." / "not ok: ..."), then "model: N passed, M
# failed"; non-zero exit on any failure.  Work files, and the readable trail
# of every counterexample (trail.txt), go to build/model/<run>/.
# MODEL_JOBS (default 2) runs that many spin searches at once.
set -uo pipefail
cd "$(dirname "$0")/.."
MODEL=model/odsm_coherence.pml
OUT=build/model
JOBS=${MODEL_JOBS:-2}
MEMLIM=${MODEL_MEMLIM:-2048}	# MiB per search
pass=0 fail=0

# scenario name -> spin flags
declare -A SCEN=(
	[px]="-DONLY_PX -DOPS=5"
	[q]="-DONLY_Q -DOPS=12"
	[all]="-DOPS=5"
	[qo]="-DONLY_Q -DOPS=12 -DOVERFLOW"
	[pxo]="-DONLY_PX -DOPS=5 -DONESIDED"
)
declare -A SCEN_TEXT=(
	[px]="P and X, 5 operations"
	[q]="Q, 12 operations"
	[all]="P, X and Q, 5 operations"
	[qo]="Q, 12 operations, the move on color overflow (colors 0..1)"
	[pxo]="P and X, 5 operations, misses one-sided"
)
SCENARIOS="px q all qo pxo"
# the last three: issue 12's gaps 1, 2 and 3, closed in the code
MUTANTS="NO_COLOR_BUMP NO_COLOR_FLOOR HEAP_BOX_KEEPS_U NO_FORGET_ON_RESTART NO_OWNER_REFUSAL HIT_WITHOUT_HOME FREE_ANY_INCARNATION OVERFLOW_LOSES ONESIDED_UNMARKED"
# known gap -> the scenario that shows it (none today: see git history)
declare -A GAPS=()
GAP_ORDER=""

invariant() {	# assertion variable -> its name
	case "$1" in
	data_value) echo "data-value invariant" ;;
	single_writer_multiple_reader) echo "single-writer/multiple-reader invariant" ;;
	*) echo "assertion $1" ;;
	esac
}

# search NAME FLAGS [OPT]: run spin on the model in $OUT/NAME; leaves there
# result: "pass STATES DEPTH SECS", "fail INVARIANT STATES DEPTH SECS" or
# "error WHY".  OPT: gcc's optimization (-O2 for the long searches; -O1
# compiles pan.c in half the time, for the short ones), and pan's options.
search() {
	local name=$1 flags=$2 opt=${3:-} dir=$OUT/$1
	[ -n "$opt" ] || opt=-O1
	rm -rf "$dir"
	mkdir -p "$dir"
	cp "$MODEL" "$dir/"
	(
		cd "$dir" || exit 1
		t0=$(date +%s%N)
		if ! spin $flags -a odsm_coherence.pml >spin.txt 2>&1; then
			echo "error spin -a failed (see $dir/spin.txt)" >result
			exit 0
		fi
		# shellcheck disable=SC2086 # opt: several words
		if ! gcc $opt -w -DSAFETY -DMEMLIM="$MEMLIM" -o pan pan.c \
			>gcc.txt 2>&1; then
			echo "error gcc failed (see $dir/gcc.txt)" >result
			exit 0
		fi
		./pan -m100000 >pan.txt 2>&1
		ms=$((($(date +%s%N) - t0) / 1000000))
		secs=$((ms / 1000)).$((ms % 1000 / 100))
		states=$(awk '/states, stored/ {print $1; exit}' pan.txt)
		depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' pan.txt | head -1)
		errs=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.txt | head -1)
		if [ "$errs" = 0 ] &&
		   grep -qiE 'memlim|out of memory|search not completed|max search depth too small' pan.txt; then
			echo "error search incomplete (see $dir/pan.txt)" >result
		elif [ "$errs" = 0 ]; then
			echo "pass $states $depth $secs" >result
		elif a=$(sed -n 's/.*assertion violated \([a-z_]*\).*/\1/p' pan.txt | head -1) &&
		     [ -n "$a" ]; then
			spin $flags -t odsm_coherence.pml 2>&1 |
				grep -E '^ *(node|home)|assertion' >trail.txt
			at=$(sed -n 's/.*assertion violated.*(at depth \([0-9]*\)).*/\1/p' pan.txt | head -1)
			echo "fail $a $states ${at:-$depth} $secs" >result
		else
			echo "error pan: errors $errs without an assertion (see $dir/pan.txt)" >result
		fi
	)
}

# run the searches given as "NAME|FLAGS[|OPT]" words, JOBS at a time
run_all() {
	local job name flags opt
	for job in "$@"; do
		IFS='|' read -r name flags opt <<<"$job"
		while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do
			wait -n
		done
		search "$name" "$flags" "$opt" &
	done
	wait
}

result() { cat "$OUT/$1/result" 2>/dev/null || echo "error no result"; }

if ! command -v spin >/dev/null || ! command -v gcc >/dev/null; then
	echo "not ok: spin or gcc missing (run 'make setup')"
	echo "model: 0 passed, 1 failed"
	exit 1
fi
mkdir -p "$OUT"

# ---- first the model, the known gaps and the mutants in the first scenario;
# then each mutant not caught yet in the next scenario ----
runs=()
for s in $SCENARIOS; do
	# COLLAPSE: the state vectors compressed (Q's 9 M states fit in
	# MEMLIM), for a little time
	runs+=("model-$s|${SCEN[$s]}|-O2 -DCOLLAPSE")
done
for g in $GAP_ORDER; do
	runs+=("gap-${g,,}|-D$g ${SCEN[${GAPS[$g]}]}")
done
declare -A CAUGHT=()
pending=$MUTANTS
for s in $SCENARIOS; do
	for m in $pending; do
		runs+=("mutant-${m,,}-$s|-DMUTANT_$m ${SCEN[$s]}")
	done
	run_all "${runs[@]}"
	runs=()
	left=
	for m in $pending; do
		read -r what a b c d < <(result "mutant-${m,,}-$s")
		case "$what" in
		fail) CAUGHT[$m]="$(invariant "$a") in ${SCEN_TEXT[$s]} (states stored $b, violation at depth $c; trail: $OUT/mutant-${m,,}-$s/trail.txt)" ;;
		error) CAUGHT[$m]="error $s: $a $b $c $d" ;;
		*) left="$left $m" ;;
		esac
	done
	pending=$left
done

for s in $SCENARIOS; do
	read -r what a b c d < <(result "model-$s")
	case "$what" in
	pass)
		echo "ok: model passes: ${SCEN_TEXT[$s]} (states stored $a, depth $b, $c s)"
		pass=$((pass + 1)) ;;
	fail)
		echo "not ok: model fails: ${SCEN_TEXT[$s]}: $(invariant "$a") violated (trail: $OUT/model-$s/trail.txt)"
		sed 's/^/    /' "$OUT/model-$s/trail.txt" | tail -n 25
		fail=$((fail + 1)) ;;
	*)
		echo "not ok: model: ${SCEN_TEXT[$s]}: $a $b $c $d"
		fail=$((fail + 1)) ;;
	esac
done

for m in $MUTANTS; do
	c=${CAUGHT[$m]:-}
	case "$c" in
	"")
		echo "not ok: mutant ${m,,} not caught: every scenario passes"
		fail=$((fail + 1)) ;;
	error*)
		echo "not ok: mutant ${m,,}: search ${c}"
		fail=$((fail + 1)) ;;
	*)
		echo "ok: mutant ${m,,} caught: $c"
		pass=$((pass + 1)) ;;
	esac
done

for g in $GAP_ORDER; do
	read -r what a b c d < <(result "gap-${g,,}")
	case "$what" in
	fail)
		echo "ok: known gap ${g,,} still in the code: spin finds the $(invariant "$a") violated (trail: $OUT/gap-${g,,}/trail.txt)"
		pass=$((pass + 1)) ;;
	pass)
		echo "not ok: known gap ${g,,} no longer found: if the code was fixed, update the model and design.rst"
		fail=$((fail + 1)) ;;
	*)
		echo "not ok: known gap ${g,,}: $a $b $c $d"
		fail=$((fail + 1)) ;;
	esac
done

echo "model: $pass passed, $fail failed"
[ "$fail" = 0 ]
