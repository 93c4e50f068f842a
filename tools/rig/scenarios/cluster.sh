#!/bin/sh
# shellcheck shell=dash disable=SC1091,SC2154
# The cluster: every guest loads odsm, checks what a join must refuse (its
# own entry not one of its addresses, the port taken; over tcp), joins a
# cluster of all the rig's nodes (node K listens on 10.0.0.(K+1):7100),
# checks that a second join is refused, waits until it sees every
# peer up, and runs the multi-node kselftest programs (/rig/bin/cluster_*_test,
# selftests/cluster/) on every node at once, with a rig barrier between
# programs, then checks that odsmctl drop-copies leaves no copy.  Then
# cluster_rejoin_test runs once with ODSM_REJOIN_PREP=1 (node 1 exits
# holding two of node 0's locks), every node leaves the cluster, joins it again (with the
# module parameter nic_atomics=N, as on a device without RDMA atomics) and
# runs cluster_rejoin_test (the objects outlive the leave, the new
# connections work), and the module is unloaded.  Fails if any program fails.
#
# With rig.down=K, node K powers itself off (poweroff -f: no goodbye on the
# wire) once the programs are done; the survivors run cluster_down_test
# (operations on K's partition fail in time, the rest works), then unload
# the module with the peer dead.  Node K prints its own RIG_RESULT before it
# goes: its part (join, the programs) passed or failed like any node's.
#
# Kernel command line (run.sh -a):
#   rig.transport=tcp|rdma   (default tcp; rdma brings up Soft-RoCE first)
#   rig.down=K               take node K down after the programs
#   rig.heartbeat_ms=N rig.timeout_ms=N   passed to odsmctl join
#   rig.cluster_tests=a_test,b_test       run only these programs
#   rig.cluster_skip=a_test,b_test        do not run these programs
#   rig.odsm_params=a=1,b=2  odsm module parameters (commas become spaces)
#   rig.loss=P               eth0 drops P% of the packets it sends (netem),
#                            from before the join: RDMA retransmissions
#   rig.fake_peer=1          the cluster has one node more than the rig: its
#                            address is an alias of node 1 (FAKE_IP), where a
#                            test program speaks for it (fake_peer.h); only
#                            programs that know it can run (rig.cluster_tests),
#                            and the leave/re-join phase is skipped
#
# Unloading must take at most 5 s, and 2 s on a survivor that dials the
# dead node (rig.down=K, K lower than its id): leaving aborts a dial under
# way instead of waiting out its timeout.
#
# Markers:  RIG_MARK cluster_up node=K peers=N secs=S   (again after a re-join)
#           RIG_MARK selftest_start NAME / selftest_end NAME rc=N secs=S
#           RIG_MARK cluster_tests programs=N failed=M
#           RIG_MARK node_down node=K                     (node K, going)
#           RIG_MARK rmmod secs=S rc=N
# Each program's TAP output ("# Totals: pass:N fail:M ...") goes to the
# console unchanged.
. /rig/lib.sh

PORT=7100
transport=${rig_transport:-tcp}
timeout_ms=${rig_timeout_ms:-2000}
down=${rig_down:-}
failed=0

fail() { echo "cluster: $*"; exit 1; }
# centiseconds since boot (busybox date has no %N)
now_cs() { awk '{ printf "%d", $1 * 100 }' /proc/uptime; }
secs_since() { awk -v a="$1" -v b="$(now_cs)" 'BEGIN { printf "%.2f", (b - a) / 100 }'; }

[ "$rig_nodes" -ge 2 ] || fail "a cluster needs 2 nodes or more (run.sh -n)"
net_up || fail "net_up failed"
if [ "$transport" = rdma ]; then
	rxe_up rxe0 eth0 || fail "rxe_up failed"
fi
[ -z "${rig_loss:-}" ] || net_loss "$rig_loss" eth0 || fail "net_loss failed"
params=$(echo "${rig_odsm_params:-}" | tr ',' ' ')
# shellcheck disable=SC2086
modprobe odsm $params || fail "modprobe odsm $params failed"
[ -c /dev/odsm ] || fail "no /dev/odsm after modprobe"
wait_peers || fail "peers unreachable"
[ -z "$down" ] || [ "$down" -lt "$rig_nodes" ] || fail "rig.down=$down: there are only $rig_nodes nodes"

# every node's address, in node order: nothing hard-coded but the port
addrs=$(cluster_addrs)
nodes_total=$rig_nodes
FAKE_IP=10.0.0.200
fake_ip=
if [ "${rig_fake_peer:-0}" = 1 ]; then
	# node 1 answers for the fake node too; nobody dials it (it has the
	# highest id: it dials), so it stays down until a program speaks for it
	[ "$rig_nodes" -ge 2 ] || fail "rig.fake_peer needs 2 nodes"
	[ "$rig_node" != 1 ] || ip addr add "$FAKE_IP/24" dev eth0 || fail "cannot add $FAKE_IP"
	addrs="$addrs,$FAKE_IP:$PORT"
	nodes_total=$((rig_nodes + 1))
	fake_ip=$FAKE_IP
fi
KEY=/tmp/odsm.key
cluster_key "$KEY" || fail "cannot write the cluster key"
set -- --transport "$transport" --node-id "$rig_node" --nodes "$addrs" --key-file "$KEY"
[ -z "${rig_heartbeat_ms:-}" ] || set -- "$@" --heartbeat-ms "$rig_heartbeat_ms"
[ -z "${rig_timeout_ms:-}" ] || set -- "$@" --timeout-ms "$rig_timeout_ms"
# join, and wait until every peer is up (60 s at most)
join() {
	local t0 i=0 up
	echo "\$ odsmctl join $*"
	odsmctl join "$@" || fail "odsmctl join failed"
	t0=$(now_cs)
	while :; do
		up=$(odsmctl status --raw | grep -c ' state=up ')
		[ "$up" -eq $((rig_nodes - 1)) ] && break
		i=$((i + 1))
		if [ "$i" -ge 300 ]; then
			odsmctl status
			fail "only $up of $((rig_nodes - 1)) peers up after 60 s"
		fi
		sleep 0.2
	done
	mark cluster_up "node=$rig_node peers=$up secs=$(secs_since "$t0")"
}
# what a join must refuse, and leave no trace of: a table whose entry for
# this node is not one of its addresses; a port that is taken; a second join
expect_join_fail() { # WHAT ARGS...: the join fails and says WHAT
	local what=$1 out rc
	shift
	out=$(odsmctl join "$@" 2>&1)
	rc=$?
	echo "$out"
	if [ "$rc" = 0 ] || ! echo "$out" | grep -q "$what"; then
		echo "cluster: 'odsmctl join $*' should have failed with '$what' (rc=$rc)"
		failed=$((failed + 1))
	fi
}
if [ "$transport" = tcp ]; then
	bad=""
	for k in $(seq 0 $((rig_nodes - 1))); do
		a=$(node_ip "$k"):$PORT
		[ "$k" != "$rig_node" ] || a=10.0.0.250:$PORT
		bad="${bad:+$bad,}$a"
	done
	expect_join_fail "not an address of this machine" --node-id "$rig_node" --nodes "$bad" --key-file "$KEY"
	# no cluster without its key
	expect_join_fail "key-file FILE is required" --node-id "$rig_node" --nodes "$addrs"
	# the module bounds the timeouts it accepts (ODSM_TIMEOUT_MS_MAX)
	expect_join_fail "invalid argument" "$@" --timeout-ms 600000
	expect_join_fail "invalid argument" "$@" --heartbeat-ms 20000 --timeout-ms 40000
	# odsmctl keygen: 32 random bytes, owner-only, never over a file
	rm -f /tmp/odsm-gen.key
	odsmctl keygen /tmp/odsm-gen.key || { echo "cluster: odsmctl keygen failed"; failed=$((failed + 1)); }
	[ "$(wc -c </tmp/odsm-gen.key)" -eq 32 ] && [ "$(stat -c %a /tmp/odsm-gen.key)" = 600 ] ||
		{ echo "cluster: odsmctl keygen wrote:"; ls -l /tmp/odsm-gen.key; failed=$((failed + 1)); }
	! odsmctl keygen /tmp/odsm-gen.key 2>/dev/null ||
		{ echo "cluster: odsmctl keygen overwrote a key"; failed=$((failed + 1)); }
	chmod 644 "$KEY"
	expect_join_fail "may be read by others" "$@"
	chmod 600 "$KEY"
	nc -l -p "$PORT" >/dev/null 2>&1 &
	ncpid=$!
	porthex=$(printf ':%04X ' "$PORT")
	i=0
	# 0A: listening (busybox nc listens on IPv6, dual stack)
	until cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | grep -q "$porthex.* 0A "; do
		i=$((i + 1))
		[ "$i" -lt 100 ] || fail "nc does not listen on port $PORT"
		sleep 0.1
	done
	expect_join_fail "already in use" "$@"
	kill "$ncpid" 2>/dev/null
	wait "$ncpid" 2>/dev/null
	# no node joins (and dials) before every node is done with the port
	barrier || fail "barrier before joining"
fi

join "$@"
expect_join_fail "already joined" "$@"
# a joined node keeps its geometry: reconfiguring it, even to the same
# one with nothing mapped or allocated yet, is refused until it leaves
out=$(odsmctl config --node-id "$rig_node" --nodes "$rig_nodes" 2>&1)
rc=$?
echo "$out"
if [ "$rc" = 0 ] || ! echo "$out" | grep -q "busy"; then
	echo "cluster: 'odsmctl config' while joined should have failed busy (rc=$rc)"
	failed=$((failed + 1))
fi
odsmctl status
barrier || fail "barrier before the programs"

# the programs, on every node at once; a rig barrier after each
only=" $(echo "${rig_cluster_tests:-}" | tr ',' ' ') "
skip=" $(echo "${rig_cluster_skip:-}" | tr ',' ' ') "
run_test() { # PATH [ENV=VALUE...]
	local t=$1 name rc t0
	shift
	name=${t##*/}
	mark selftest_start "$name"
	t0=$(now_cs)
	env ODSM_NODE="$rig_node" ODSM_NODES="$nodes_total" ODSM_TIMEOUT_MS="$timeout_ms" \
		ODSM_HEARTBEAT_MS="${rig_heartbeat_ms:-}" ODSM_PORT="$PORT" ODSM_KEY_FILE="$KEY" ODSM_FAKE_IP="$fake_ip" \
		"$@" "$t"
	rc=$?
	mark selftest_end "$name" "rc=$rc secs=$(secs_since "$t0")"
	n=$((n + 1))
	[ "$rc" -eq 0 ] || failed=$((failed + 1))
}
n=0
for t in /rig/bin/cluster_*_test; do
	[ -x "$t" ] || continue
	name=${t##*/}
	case "$name" in cluster_down_test | cluster_rejoin_test) continue ;; esac
	case "$skip" in *" $name "*) continue ;; esac
	if [ "$only" != "  " ]; then
		case "$only" in *" $name "*) ;; *) continue ;; esac
	fi
	run_test "$t"
	barrier 600 || fail "barrier after $name"
done
[ "$n" -gt 0 ] || fail "no cluster test program in /rig/bin"
echo "\$ odsmctl status"
odsmctl status
odsmctl stats --raw | grep -E '^(msgs_|bad_msgs|served|remote_|rpc_|peers_down)'
# every program has exited, so no copy is referenced: all of them go
echo "\$ odsmctl drop-copies"
out=$(odsmctl drop-copies) || { echo "cluster: odsmctl drop-copies failed"; failed=$((failed + 1)); }
echo "$out"
copies_gone() { # a reaper already under way may free the last ones
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		odsmctl stats --raw | grep -q '^copies_in_use=0$' && return 0
		sleep 0.1
	done
	return 1
}
echo "$out" | grep -qE '^dropped [0-9]+ idle cached copies; 0 still borrowed$' &&
	copies_gone ||
	{ echo "cluster: copies left after odsmctl drop-copies"; odsmctl stats --raw | grep copies; failed=$((failed + 1)); }

if [ -n "$down" ]; then
	# everyone is done with everyone: node $down goes
	barrier || fail "barrier before node $down goes down"
	if [ "$rig_node" = "$down" ]; then
		mark cluster_tests "programs=$n failed=$failed"
		mark node_down "node=$rig_node"
		if [ "$failed" -eq 0 ]; then
			echo "RIG_RESULT: PASS scenario=$rig_scenario node=$rig_node powered off by the scenario"
		else
			echo "RIG_RESULT: FAIL scenario=$rig_scenario node=$rig_node rc=1 powered off by the scenario"
		fi
		sync
		poweroff -f
		sleep 30
		exit 1
	fi
	if [ -x /rig/bin/cluster_down_test ]; then
		run_test /rig/bin/cluster_down_test ODSM_DOWN="$down"
	else
		echo "cluster: no /rig/bin/cluster_down_test"
		failed=$((failed + 1))
	fi
	echo "\$ odsmctl status"
	odsmctl status
	# the dead node is down here
	odsmctl status --raw | grep -q "^node=$down .* state=down " ||
		{ echo "cluster: node $down is not down in odsmctl status"; failed=$((failed + 1)); }
elif [ "${rig_fake_peer:-0}" = 1 ]; then
	# the programs knew the fake node; the re-join phase does not
	barrier || fail "barrier before unloading"
else
	# node 1 leaves two locks held, for cluster_rejoin_test after the
	# re-join (its former incarnation's locks are taken over)
	if [ -x /rig/bin/cluster_rejoin_test ]; then
		run_test /rig/bin/cluster_rejoin_test ODSM_REJOIN_PREP=1
		barrier || fail "barrier after leaving locks held"
	fi
	# leave (twice: the second does nothing), join again, check
	odsmctl leave || { echo "cluster: odsmctl leave failed"; failed=$((failed + 1)); }
	odsmctl leave || { echo "cluster: a second odsmctl leave failed"; failed=$((failed + 1)); }
	odsmctl status --raw | grep -q '^nodes=0 transport=none$' ||
		{ echo "cluster: still in a cluster after leaving:"; odsmctl status --raw; failed=$((failed + 1)); }
	barrier || fail "barrier after leaving"
	# every node with a key of its own: the handshakes fail, no peer
	# ever comes up, and every node counts auth_failures
	auth0=$(cat /sys/kernel/odsm/stats/auth_failures)
	cluster_key /tmp/odsm-wrong.key wrong
	shift 8
	set -- --transport "$transport" --node-id "$rig_node" --nodes "$addrs" --key-file /tmp/odsm-wrong.key "$@"
	echo "\$ odsmctl join $*"
	odsmctl join "$@" || { echo "cluster: odsmctl join with a wrong key failed"; failed=$((failed + 1)); }
	i=0
	ups=0
	# three timeouts: every dialer tried again a few times
	while [ "$i" -lt $((timeout_ms * 3 / 200)) ]; do
		ups=$((ups + $(odsmctl status --raw | grep -c ' state=up ')))
		sleep 0.2
		i=$((i + 1))
	done
	auth1=$(cat /sys/kernel/odsm/stats/auth_failures)
	echo "cluster: mismatched keys: peer-up samples=$ups auth_failures +$((auth1 - auth0))"
	[ "$ups" -eq 0 ] || { echo "cluster: a peer came up with mismatched keys"; odsmctl status; failed=$((failed + 1)); }
	# a dialer refuses the challenge, the node it dialled sees it walk away
	[ "$auth1" -gt "$auth0" ] ||
		{ echo "cluster: no auth_failures counted with mismatched keys"; failed=$((failed + 1)); }
	odsmctl leave || { echo "cluster: odsmctl leave failed"; failed=$((failed + 1)); }
	barrier || fail "barrier after the mismatched keys"
	shift 8
	set -- --transport "$transport" --node-id "$rig_node" --nodes "$addrs" --key-file "$KEY" "$@"
	# the re-joined cluster runs as on a device without RDMA atomics:
	# cluster_rejoin_test checks the two-sided fallback of F_NIC atomics
	echo N >/sys/module/odsm/parameters/nic_atomics
	join "$@"
	barrier || fail "barrier after joining again"
	if [ -x /rig/bin/cluster_rejoin_test ]; then
		run_test /rig/bin/cluster_rejoin_test ODSM_REJOINED=1
	else
		echo "cluster: no /rig/bin/cluster_rejoin_test"
		failed=$((failed + 1))
	fi
	# nobody needs anybody any more
	barrier || fail "barrier before unloading"
fi
mark cluster_tests "programs=$n failed=$failed"
[ "$transport" != rdma ] || rxe_counters

# unloading leaves the cluster, also with a peer dead: a few seconds at most
t0=$(now_cs)
timeout 60 rmmod odsm
rc=$?
secs=$(secs_since "$t0")
mark rmmod "secs=$secs rc=$rc"
[ "$rc" -eq 0 ] || { echo "cluster: rmmod odsm failed (rc=$rc)"; failed=$((failed + 1)); }
# with a peer dead, a survivor of a higher id is dialling it (nearly all
# the time: each dial waits up to timeout_ms for an answer that never
# comes); leaving must abort that dial, not wait it out
limit=5
[ -z "$down" ] || [ "$rig_node" -lt "$down" ] || limit=2
awk -v s="$secs" -v l="$limit" 'BEGIN { exit !(s <= l) }' ||
	{ echo "cluster: rmmod took ${secs}s (more than $limit)"; failed=$((failed + 1)); }
[ ! -e /sys/module/odsm ] || { echo "cluster: odsm still loaded"; failed=$((failed + 1)); }
[ "$failed" -eq 0 ]
