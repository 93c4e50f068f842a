# The host suite's shell tests' TAP (sourced after they cd to the source
# tree): ok DESCRIPTION COMMAND... runs COMMAND as a test, not COMMAND...
# inverts one, tap_end prints the plan and the kselftest "# Totals:" line
# that tools/check.sh reads and returns non-zero if any failed.
# shellcheck shell=bash
pass=0 fail=0 n=0

ok() {	# DESCRIPTION COMMAND...
	local what=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n $what"
		pass=$((pass + 1))
	else
		echo "not ok $n $what"
		fail=$((fail + 1))
	fi
}

not() {	# COMMAND...: succeeds where COMMAND fails
	! "$@"
}

tap_end() {
	echo "1..$n"
	echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:0 error:0"
	[ "$fail" = 0 ]
}
