#!/bin/sh
# shellcheck shell=dash disable=SC1091,SC2154
# Faults: every guest loads odsm, joins a cluster of all the rig's nodes
# and runs cluster_fault_test (ODSM_FAULTS=1: each node arms its own
# message fault injector, kmod/odsm_fault.c, test by test).  With
# rig.down=K it then runs cluster_movedown_test on every node, and node K
# powers itself off (poweroff -f, no goodbye on the wire) rig.down_after
# seconds (default 8) into it, in the middle of its moves; the survivors
# check the failure contract (Documentation/odsm/design.rst) and unload the
# module with the peer dead.  cluster_workdown_test runs next to it on
# every node (set up first): spawns to node K and a delegated mutex K
# holds, across the power-off.  Node K prints its own RIG_RESULT before it
# goes: its part (join, the fault test) passed or failed like any node's.
#
# Kernel command line (run.sh -a):
#   rig.transport=tcp|rdma   (default tcp; rdma brings up Soft-RoCE first)
#   rig.heartbeat_ms=N rig.timeout_ms=N   passed to odsmctl join
#   rig.down=K rig.down_after=S          the node that dies, and when
#   rig.fault_tests=0        skip cluster_fault_test (movedown only)
#   rig.fault_only=a,b       run only these tests of cluster_fault_test
#
# Markers:  RIG_MARK cluster_up node=K peers=N
#           RIG_MARK selftest_start NAME / selftest_end NAME rc=N
#           RIG_MARK node_down node=K
#           RIG_MARK rmmod secs=S rc=N
. /rig/lib.sh

PORT=7100
transport=${rig_transport:-tcp}
timeout_ms=${rig_timeout_ms:-2000}
down=${rig_down:-}
failed=0

fail() { echo "cluster-faults: $*"; exit 1; }

[ "$rig_nodes" -ge 2 ] || fail "a cluster needs 2 nodes or more (run.sh -n)"
[ -z "$down" ] || [ "$rig_nodes" -ge 3 ] || fail "rig.down needs 3 nodes or more"
net_up || fail "net_up failed"
if [ "$transport" = rdma ]; then
	rxe_up rxe0 eth0 || fail "rxe_up failed"
fi
modprobe odsm || fail "modprobe odsm failed"
# off by default: nothing armed it yet
for p in fault_drop fault_delay fault_dup; do
	[ "$(cat /sys/module/odsm/parameters/$p)" = 0 ] || fail "$p is not 0 at load"
done
for p in fault_hold_frees fault_hold_copies; do
	[ "$(cat /sys/module/odsm/parameters/$p)" = N ] || fail "$p is not N at load"
done
wait_peers || fail "peers unreachable"
KEY=/tmp/odsm.key
cluster_key "$KEY" || fail "cannot write the cluster key"
set -- --transport "$transport" --node-id "$rig_node" --nodes "$(cluster_addrs)" --key-file "$KEY"
[ -z "${rig_heartbeat_ms:-}" ] || set -- "$@" --heartbeat-ms "$rig_heartbeat_ms"
[ -z "${rig_timeout_ms:-}" ] || set -- "$@" --timeout-ms "$rig_timeout_ms"
barrier || fail "barrier before joining"
odsmctl join "$@" || fail "odsmctl join failed"
i=0
until [ "$(odsmctl status --raw | grep -c ' state=up ')" -eq $((rig_nodes - 1)) ]; do
	i=$((i + 1))
	[ "$i" -lt 300 ] || { odsmctl status; fail "peers never came up"; }
	sleep 0.2
done
mark cluster_up "node=$rig_node peers=$((rig_nodes - 1))"
barrier || fail "barrier before the programs"

run_test() { # PATH [ENV=VALUE...]
	local t=$1 name rc
	shift
	name=${t##*/}
	mark selftest_start "$name"
	env ODSM_NODE="$rig_node" ODSM_NODES="$rig_nodes" ODSM_TIMEOUT_MS="$timeout_ms" \
		"$@" "$t"
	rc=$?
	mark selftest_end "$name" "rc=$rc"
	[ "$rc" -eq 0 ] || failed=$((failed + 1))
}
if [ "${rig_fault_tests:-1}" != 0 ]; then
	run_test /rig/bin/cluster_fault_test ODSM_FAULTS=1 ODSM_FAULT_ONLY="${rig_fault_only:-}"
	odsmctl stats --raw | grep -E '^(fault_|dup_requests|bad_msgs|rpc_|move_free_errors)'
	barrier 600 || fail "barrier after cluster_fault_test"
fi

if [ -n "$down" ]; then
	# cluster_workdown_test runs next to it (spawns and a delegated
	# mutex across the power-off): each node starts it first and waits
	# until it is set up, so that its allocations come before
	# cluster_movedown_test counts the objects; the survivors' part frees
	# nothing before cluster_movedown_test is over (its ODSM_DONE_FILE)
	ready=/tmp/workdown.ready done=/tmp/movedown.done
	rm -f "$ready" "$done"
	mark selftest_start cluster_workdown_test
	env ODSM_NODE="$rig_node" ODSM_NODES="$rig_nodes" ODSM_TIMEOUT_MS="$timeout_ms" \
		ODSM_MOVEDOWN="$down" ODSM_READY_FILE="$ready" ODSM_DONE_FILE="$done" \
		/rig/bin/cluster_workdown_test &
	wd=$!
	i=0
	until [ -e "$ready" ] || ! kill -0 "$wd" 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -lt 1200 ] || break
		sleep 0.1
	done
	[ -e "$ready" ] || { echo "cluster-faults: cluster_workdown_test never got ready"; failed=$((failed + 1)); }
	if [ "$rig_node" = "$down" ]; then
		env ODSM_NODE="$rig_node" ODSM_NODES="$rig_nodes" ODSM_MOVEDOWN="$down" \
			/rig/bin/cluster_movedown_test &
		sleep "${rig_down_after:-8}"
		mark node_down "node=$rig_node"
		if [ "$failed" -eq 0 ]; then
			echo "RIG_RESULT: PASS scenario=$rig_scenario node=$rig_node powered off by the scenario"
		else
			echo "RIG_RESULT: FAIL scenario=$rig_scenario node=$rig_node rc=1 powered off by the scenario"
		fi
		poweroff -f
		sleep 30
		exit 1
	fi
	run_test /rig/bin/cluster_movedown_test ODSM_MOVEDOWN="$down"
	touch "$done"
	wait "$wd"
	rc=$?
	mark selftest_end cluster_workdown_test "rc=$rc"
	[ "$rc" -eq 0 ] || failed=$((failed + 1))
	odsmctl status
	odsmctl stats --raw | grep -E '^(rpc_|move_free_errors|peers_down|objects_in_use)'
else
	barrier || fail "barrier before unloading"
fi

t0=$(awk '{ printf "%d", $1 * 100 }' /proc/uptime)
timeout 60 rmmod odsm
rc=$?
mark rmmod "secs=$(awk -v a="$t0" '{ printf "%.2f", ($1 * 100 - a) / 100 }' /proc/uptime) rc=$rc"
[ "$rc" -eq 0 ] || { echo "cluster-faults: rmmod odsm failed (rc=$rc)"; failed=$((failed + 1)); }
[ "$failed" -eq 0 ]
