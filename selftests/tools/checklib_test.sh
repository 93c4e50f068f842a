#!/bin/bash
# Host test of tools/check-lib.sh's judgement of a failed guest run, on
# node logs written here: which failures are the host's and run again
# (rig_host_stalled, rig_nic_stalled), and the digest that ends make
# check's output (failure_digest), whose failed tests come before lines
# that merely say "failed".  TAP, ending with the kselftest "# Totals:"
# line that tools/check.sh reads.
#
# Built into build/tests/host/checklib_test with the source tree's path in
# SRCDIR (Makefile).
set -uo pipefail
SRCDIR=${SRCDIR:-@SRCDIR@}
cd "$SRCDIR" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=selftests/tools/tap-lib.sh
. selftests/tools/tap-lib.sh

# LOGS: where check-lib.sh finds a run's node logs (SCEN-KVER-nodeN.log)
LOGS=$tmp
# shellcheck source=tools/check-lib.sh
. tools/check-lib.sh

node_log() {	# SCEN NODE: stdin, with the serial console's \r
	sed 's/$/\r/' >"$LOGS/$1-K-node$2.log"
}

echo "TAP version 13"

# a clean start-up, a test that failed: the code's, not the host's
node_log clean 0 <<'L'
[   21.4] odsm: loading out-of-tree module taints kernel.
RIG_MARK cluster_up node=0 peers=2 secs=0.9
not ok 3 cl.something
L
ok "a failed test alone is not the host's" not rig_host_stalled clean K 1
ok "... nor a stalled NIC" not rig_nic_stalled clean K 1

# node 1 of 2: a soft lockup at 117 s of start-up, before odsm loaded
node_log boot 0 </dev/null
node_log boot 1 <<'L'
[  117.0] watchdog: BUG: soft lockup - CPU#0 stuck for 21s! [swapper/0:1]
[  274.2] odsm: loading out-of-tree module taints kernel.
L
ok "a soft lockup before odsm loaded is the host's" rig_host_stalled boot K 2

# a soft lockup after odsm loaded (or after the rig's first marker)
node_log late 0 <<'L'
[   21.4] odsm: loading out-of-tree module taints kernel.
[   90.0] watchdog: BUG: soft lockup - CPU#0 stuck for 21s! [odsm_rx:120]
L
node_log marker 0 <<'L'
RIG_MARK cluster_up node=0 peers=2 secs=0.9
[   90.0] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [kworker/1:2]
L
ok "a soft lockup once odsm is loaded is the code's" not rig_host_stalled late K 1
ok "... and once the rig marked anything" not rig_host_stalled marker K 1

# the clock's leap, on any node and at any time
node_log leap 0 </dev/null
node_log leap 2 <<'L'
[   21.4] odsm: loading out-of-tree module taints kernel.
[   87.1] clocksource: Long readout interval, skipping watchdog check: cs_nsec: 487108695224925 wd_nsec: 487108695224907
L
ok "a leap of a guest's clock is the host's" rig_host_stalled leap K 3

# a NIC that stopped sending
node_log nic 0 <<'L'
[  300.0] NETDEV WATCHDOG: eth0 (virtio_net): transmit queue 0 timed out 5120 ms
L
ok "a virtio NIC's transmit timeout is the host's" rig_nic_stalled nic K 1

# the digest: the failed test and its Expected line before a kill test's
# log line and the scenario's counter line, both of which say "fail"
node_log dig 0 <<'L'
# selftests/cluster/cluster_rdeleg_test.c:791:runtime_killed:the launch failed 218 ms after go
cluster: mismatched keys: peer-up samples=0 auth_failures +739
# selftests/cluster/cluster_x_test.c:10:one:Expected 0 (0) == ret (-5)
#            FAIL  cl.one
not ok 3 cl.one
L
echo "[node0] FAIL: 1 test failed" >"$tmp/run.txt"
failure_digest dig K 1 "$tmp/run.txt" "cluster of 1" >"$tmp/digest.txt"
D=$tmp/digest.txt
ok "the digest names the run" grep -qx '== not ok: cluster of 1 (dig, K, 1 guests)' "$D"
ok "... then run.sh's reason" bash -c "sed -n 2p '$D' | grep -qx '\[node0\] FAIL: 1 test failed'"
ok "... then the failure's lines, in their order" bash -c \
	"sed -n 3,5p '$D' | sed -E 's/^\[node0\] (# s|# +F|not ok 3).*/\\1/' | tr -s ' \n' '_|' | grep -qx '#_s|#_F|not_ok_3|'"
ok "... and after them the lines that merely say failed" bash -c \
	"sed -n 6,7p '$D' | grep -c 'failed 218 ms\|auth_failures' | grep -qx 2"
ok "no carriage return in the digest" bash -c "! grep -q \$'\\r' '$D'"

tap_end
