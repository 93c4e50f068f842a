# shellcheck shell=bash
# Progress lines of the long drivers (tools/check.sh and tools/check-debug.sh
# through tools/check-lib.sh, tools/bench.sh), so that whoever watches a run
# of an hour knows which step it is at and that it is not stuck.  Sourced.
#
#   step WHAT...        "== [N/M 12:07] WHAT": the step's number, of
#                       PROGRESS_TOTAL when the driver set it (else "[N
#                       12:07]"), and the time since the driver started
#   progress_run CMD... runs CMD (its redirections, stdin and exit status
#                       its own) and, every PROGRESS_EVERY (60) seconds
#                       that it still runs, prints
#                       "== [N/M 13:07] ... still running: WHAT (1:00 in
#                       this step)" on the driver's own output, even when
#                       CMD's output goes to a file
#
# Plain lines at step boundaries and once a minute, no carriage returns or
# terminal control: a CI log that captures them reads as the terminal did.
# They start with "== " like the steps always did, so nothing that reads a
# driver's output takes them for a result line.

progress_t0=$(date +%s)
progress_n=0
progress_what=""
PROGRESS_TOTAL=${PROGRESS_TOTAL:-0}
PROGRESS_EVERY=${PROGRESS_EVERY:-60}
# the driver's output as it is now: progress_run's lines go there, not
# into the file its command's output is redirected to
exec {progress_fd}>&1

progress_clock() {	# SECONDS -> m:ss, or h:mm:ss from an hour on
	local s=$1
	if [ "$s" -ge 3600 ]; then
		printf '%d:%02d:%02d' $((s / 3600)) $((s % 3600 / 60)) $((s % 60))
	else
		printf '%d:%02d' $((s / 60)) $((s % 60))
	fi
}

progress_tag() {
	local n=$progress_n
	[ "$PROGRESS_TOTAL" -gt 0 ] && n="$n/$PROGRESS_TOTAL"
	printf '[%s %s]' "$n" "$(progress_clock $(($(date +%s) - progress_t0)))"
}

step() {
	progress_n=$((progress_n + 1))
	progress_what=$*
	echo "== $(progress_tag) $*"
}

progress_run() {
	local pid t0 now next=$PROGRESS_EVERY
	t0=$(date +%s)
	# <&0: a background job would get /dev/null as its stdin otherwise
	"$@" <&0 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		now=$(date +%s)
		if [ $((now - t0)) -ge "$next" ] && kill -0 "$pid" 2>/dev/null; then
			echo "== $(progress_tag) ... still running: $progress_what ($(progress_clock $((now - t0))) in this step)" >&"$progress_fd"
			next=$((next + PROGRESS_EVERY))
		fi
	done
	wait "$pid"
}
