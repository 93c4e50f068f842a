#!/bin/bash
# Host test of tools/progress-lib.sh, the progress lines of make check and
# make bench: "== [N/M m:ss] WHAT" at each step, and while a command runs
# through progress_run a "still running" line every PROGRESS_EVERY seconds
# on the driver's output, not in the file the command writes to; the
# command's exit status and stdin are its own.  TAP, ending with the
# kselftest "# Totals:" line that tools/check.sh reads.
#
# Built into build/tests/host/progress_test with the source tree's path in
# SRCDIR (Makefile).
set -uo pipefail
SRCDIR=${SRCDIR:-@SRCDIR@}
cd "$SRCDIR" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=selftests/tools/tap-lib.sh
. selftests/tools/tap-lib.sh

echo "TAP version 13"

# a driver of two steps, the first a command of ~3.5 s whose output goes
# to a file, a heartbeat every second
cat >"$tmp/driver.sh" <<'DRIVER'
. tools/progress-lib.sh
PROGRESS_TOTAL=2 PROGRESS_EVERY=1
step "the first one"
progress_run bash -c 'sleep 3.5; echo from-the-command; exit 7' >"$1/cmd.out" 2>&1
echo "rc=$?"
step "the second"
echo through-stdin | progress_run cat
DRIVER
bash "$tmp/driver.sh" "$tmp" >"$tmp/driver.out" 2>&1
O=$tmp/driver.out
ok "a driver that sources it runs" test -s "$O"
ok "step 1 of 2 at 0:00" grep -qxE '== \[1/2 0:0[01]\] the first one' "$O"
ok "step 2 of 2 after the command" grep -qxE '== \[2/2 0:0[3-9]\] the second' "$O"
ok "the command's status: 7" grep -qx 'rc=7' "$O"
ok "'still running' lines while it ran, on the driver's output" \
	test "$(grep -cE '^== \[1/2 0:0[0-9]\] \.\.\. still running: the first one \(0:0[0-9] in this step\)$' "$O")" -ge 2
ok "... and none in the command's file" test "$(cat "$tmp/cmd.out")" = from-the-command
ok "the lines in order: step 1, its heartbeats, rc, step 2" \
	bash -c "cut -c1-8 '$O' | tr '\n' ' ' | grep -qxE '(== \[1/2  ){3,}rc=7 == \[2/2  through- '"
ok "stdin reaches the command" grep -qx through-stdin "$O"

# no total set: the step's number alone
out=$(bash -c '. tools/progress-lib.sh; step x; step y')
# (the clock may pass a second between sourcing and the steps on a
# loaded machine: 0:00 or 0:01, as the timed steps above allow)
ok "no PROGRESS_TOTAL: '[N m:ss]'" \
	bash -c "printf '%s\n' \"\$1\" | tr '\n' ' ' | grep -qxE '== \[1 0:0[01]\] x == \[2 0:0[01]\] y '" _ "$out"

# the clock
out=$(bash -c '. tools/progress-lib.sh; progress_clock 65; echo; progress_clock 3725')
ok "progress_clock: 1:05 and 1:02:05" test "$out" = "$(printf '1:05\n1:02:05')"

# no carriage return or escape anywhere: CI logs keep plain lines
ok "no carriage return or escape in the output" bash -c "! grep -q \$'[\\r\\e]' '$O'"

tap_end
