#!/bin/sh
# shellcheck shell=dash disable=SC1091,SC2154
# The in-VM kselftest programs of odsm (selftests/vm/*_test.c): load the
# module, run every /rig/bin/*_test in name order (zz_unload_test, which
# unloads and reloads the module, sorts last) and fail if any program fails.
#
# Markers:  RIG_MARK selftest_start NAME
#           RIG_MARK selftest_end NAME rc=N
#           RIG_MARK selftests programs=N failed=M
# Each program's TAP output (with its "# Totals: pass:N fail:M ..." line)
# goes to the console unchanged: the host-side checks parse it.
#
# Optional kernel command-line parameters:
#   rig.odsm_params=a=1,b=2    odsm module parameters (commas become spaces)
#   rig.selftests=x_test,y_test  run only these programs
. /rig/lib.sh

params=$(echo "${rig_odsm_params:-}" | tr ',' ' ')
# shellcheck disable=SC2086
if ! modprobe odsm $params; then
	echo "selftests: modprobe odsm $params failed"
	exit 1
fi
[ -c /dev/odsm ] || { echo "selftests: no /dev/odsm after modprobe"; exit 1; }

only=" $(echo "${rig_selftests:-}" | tr ',' ' ') "
n=0
failed=0
for t in /rig/bin/*_test; do
	[ -x "$t" ] || continue
	name=${t##*/}
	if [ "$only" != "  " ]; then
		case "$only" in *" $name "*) ;; *) continue ;; esac
	fi
	mark selftest_start "$name"
	"$t"
	rc=$?
	mark selftest_end "$name" "rc=$rc"
	n=$((n + 1))
	[ "$rc" -eq 0 ] || failed=$((failed + 1))
done
mark selftests "programs=$n failed=$failed"
[ "$n" -gt 0 ] || { echo "selftests: no test program in /rig/bin"; exit 1; }
[ "$failed" -eq 0 ]
