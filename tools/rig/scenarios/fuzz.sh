#!/bin/sh
# shellcheck shell=dash disable=SC1091,SC2154
# The fuzzers (selftests/fuzz/, tools/fuzz/run.sh; boot the guests with
# run.sh -D so that slab corruption is reported).
#
# One guest: load odsm, run odsm-fuzz (random ioctl and mm sequences from
# several processes and threads) for rig.fuzz_secs, unload the module
# (nothing the fuzzer did may keep it loaded), load it again and race
# SET_CONFIG against JOIN/LEAVE, mmap and ALLOC for rig.fuzz_race_secs
# (odsm-fuzz --config-race), unload.
#
# Two guests or more: every node joins the cluster as cluster.sh does, then
# runs odsm-fuzz at the same time for rig.fuzz_secs (the nodes borrow, move,
# read and write each other's published objects, and leave and re-join now
# and then); then, when the image has odsm-wirefuzz, node 1 is a fake peer
# of node 0's for rig.fuzz_wire_secs while node 0 fuzzes its ioctls again
# (over TCP: the cluster then has a fake node more, an alias address of
# node 1's that odsm-wirefuzz speaks for).
# Every node unloads the module at the end.
#
# Kernel command line (run.sh -a):
#   rig.fuzz_secs=N        seconds of odsm-fuzz (default 60)
#   rig.fuzz_race_secs=N   seconds of the configuration race (default 10;
#                          one guest)
#   rig.fuzz_wire_secs=N   seconds of the wire fuzzer (default 30; 2+ guests)
#   rig.fuzz_seed=S        base seed (default: random); node K runs S+K
#   rig.fuzz_args="..."    more odsm-fuzz options (e.g. "--procs 2")
#   rig.fuzz_wire_args="..." more odsm-wirefuzz options (e.g. "--only restart")
#   rig.transport=tcp|rdma rig.heartbeat_ms=N rig.timeout_ms=N  the cluster
#
# Markers: RIG_MARK fuzz_start MODE seed=S, RIG_MARK fuzz_end MODE rc=N;
# odsm-fuzz prints FUZZ_OPS (per category) and FUZZ_RESULT lines.
. /rig/lib.sh

PORT=7100
FAKE_IP=10.0.0.200
transport=${rig_transport:-tcp}
hb=${rig_heartbeat_ms:-250}
to=${rig_timeout_ms:-5000}
secs=${rig_fuzz_secs:-60}
race=${rig_fuzz_race_secs:-10}
wire=${rig_fuzz_wire_secs:-30}
failed=0

fail() { echo "fuzz: $*"; exit 1; }

seed=${rig_fuzz_seed:-}
[ -n "$seed" ] || seed=$(od -An -tu4 -N4 /dev/urandom | tr -d ' ')
seed=$((seed + rig_node))
hang=$((to * 3 / 1000 + 60))

# run NAME ARGS...: one fuzzer run, bracketed by markers; counts a failure
run() {
	local mode=$1 rc
	shift
	mark fuzz_start "$mode" "seed=$seed"
	# shellcheck disable=SC2086
	"$@" ${rig_fuzz_args:-}
	rc=$?
	mark fuzz_end "$mode" "rc=$rc"
	[ "$rc" -eq 0 ] || failed=$((failed + 1))
}

unload() {
	timeout 60 rmmod odsm || { echo "fuzz: rmmod odsm failed"; failed=$((failed + 1)); }
	[ ! -e /sys/module/odsm ] || { echo "fuzz: odsm still loaded"; failed=$((failed + 1)); }
}

# what the fuzzing reached, for the log
stats() {
	odsmctl stats --raw | grep -E '^(bad_ioctls|bad_msgs|auth_failures|peers_down|rpc_|borrow_misses|mut_moves|mut_taken|lazy_|sigbus_|cache_evictions|cache_shrunk|fault_enomem)'
}

net_up || fail "net_up failed"
command -v odsm-fuzz >/dev/null || fail "no odsm-fuzz in /rig/bin"
if [ "$rig_nodes" -gt 1 ] && [ "$transport" = rdma ]; then
	rxe_up rxe0 eth0 || fail "rxe_up failed"
fi
modprobe odsm || fail "modprobe odsm failed"
[ -c /dev/odsm ] || fail "no /dev/odsm after modprobe"
echo "fuzz: $(cat /proc/cmdline)"

if [ "$rig_nodes" -eq 1 ]; then
	run ops odsm-fuzz --seed "$seed" --secs "$secs" --hang-secs "$hang"
	stats
	unload
	modprobe odsm || fail "modprobe odsm (again) failed"
	run config-race odsm-fuzz --config-race --seed "$seed" --secs "$race" \
		--addr "$rig_addr" --hang-secs "$hang"
	unload
	[ "$failed" -eq 0 ]
	exit
fi

wait_peers || fail "peers unreachable"
KEY=/tmp/odsm.key
cluster_key "$KEY" || fail "cannot write the cluster key"
addrs=$(cluster_addrs)
nodes_total=$rig_nodes
wirefuzz=
if command -v odsm-wirefuzz >/dev/null && [ "$transport" = tcp ]; then
	# one node more than the rig, the fake node: its address is an alias
	# of node 1, where odsm-wirefuzz speaks for it (fake_peer.h); nobody
	# dials it (it has the highest id), so it is down until then
	wirefuzz=1
	[ "$rig_node" != 1 ] || ip addr add "$FAKE_IP/24" dev eth0 || fail "cannot add $FAKE_IP"
	addrs="$addrs,$FAKE_IP:$PORT"
	nodes_total=$((rig_nodes + 1))
fi
odsmctl join --transport "$transport" --node-id "$rig_node" --nodes "$addrs" \
	--key-file "$KEY" --heartbeat-ms "$hb" --timeout-ms "$to" || fail "odsmctl join failed"
i=0
# every real peer up (the fake node stays down)
until [ "$(odsmctl status --raw | grep -c ' state=up ')" -eq $((rig_nodes - 1)) ]; do
	i=$((i + 1))
	[ "$i" -lt 300 ] || { odsmctl status; fail "peers never came up"; }
	sleep 0.2
done
mark cluster_up "node=$rig_node"
barrier || fail "barrier before fuzzing"
run cluster odsm-fuzz --seed "$seed" --secs "$secs" --hang-secs "$hang" \
	--join-nodes "$addrs" --key-file "$KEY" --transport "$transport" \
	--heartbeat-ms "$hb" --timeout-ms "$to"
barrier 600 || fail "barrier after fuzzing"
if [ -n "$wirefuzz" ]; then
	# node 1 speaks for the fake node to node 0, which keeps fuzzing its
	# own ioctls meanwhile (joined throughout: the fake peer dials it)
	if [ "$rig_node" = 1 ]; then
		run wire odsm-wirefuzz --seed "$seed" --secs "$wire" --target "$(node_ip 0):$PORT" \
			--fake-ip "$FAKE_IP" --own-ip "$rig_addr" --nodes "$nodes_total" \
			--key-file "$KEY" --timeout-ms "$to" ${rig_fuzz_wire_args:-}
	elif [ "$rig_node" = 0 ]; then
		run ops-under-wire odsm-fuzz --seed "$seed" --secs "$wire" --hang-secs "$hang" \
			--procs 1 --no-leave
	fi
	barrier 600 || fail "barrier after the wire fuzzer"
fi
odsmctl status
stats
barrier || fail "barrier before unloading"
unload
[ "$failed" -eq 0 ]
