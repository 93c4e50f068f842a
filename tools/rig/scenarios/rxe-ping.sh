#!/bin/sh
# shellcheck shell=dash disable=SC1091,SC2154
# Soft-RoCE smoke test: rdma_rxe on eth0, then an rping exchange (10 verified
# pings of 64 bytes) between node 0 as server and every other node as client.
# An rping server serves only one client, so node 0 runs one server per
# client node, client K on port 7000+K; clients retry until their server is up.
# With one node: rping to the node's own address through its rxe device.
# A barrier at the end keeps every node up until all are done.
. /rig/lib.sh
set -u
net_up || exit 10
rxe_up rxe0 eth0 || exit 11
wait_peers || exit 12
server=$(node_ip 0)

pings() { grep -c 'ping data' "$1"; }
client() { # PORT: be served by $server:PORT, retrying for about a minute
	local try
	for try in $(seq 60); do
		if timeout 20 rping -c -a "$server" -p "$1" -C 10 -S 64 -v -V >/tmp/rping.c 2>&1 &&
			[ "$(pings /tmp/rping.c)" -ge 10 ]; then
			mark rping_client "$rig_addr->$server:$1 tries=$try"
			return 0
		fi
		sleep 0.5
	done
	echo "rping client failed:"
	cat /tmp/rping.c
	return 1
}
serve() { # PORT: one rping server in the background (pid in $spid), output in /tmp/rping.s.PORT
	timeout 90 rping -s -a "$server" -p "$1" -C 10 -S 64 -v -V >"/tmp/rping.s.$1" 2>&1 &
	spid=$!
}
served() { # PORT PID: did the server on PORT serve its client?
	wait "$2" && [ "$(pings "/tmp/rping.s.$1")" -ge 10 ] && return 0
	echo "rping server on port $1 failed:"
	cat "/tmp/rping.s.$1"
	return 1
}

if [ "$rig_nodes" = 1 ]; then
	serve 7000
	client 7000 || exit 20
	served 7000 "$spid" || exit 21
	exit 0
fi
if [ "$rig_node" != 0 ]; then
	rc=0
	client $((7000 + rig_node)) || rc=20
	barrier || exit 30
	exit $rc
fi
pids=""
for k in $(seq 1 $((rig_nodes - 1))); do
	serve $((7000 + k))
	pids="$pids $spid"
done
k=0 ok=0
for pid in $pids; do
	k=$((k + 1))
	served $((7000 + k)) "$pid" && ok=$((ok + 1))
done
mark rping_served "$ok/$((rig_nodes - 1))"
barrier || exit 30
[ "$ok" = $((rig_nodes - 1)) ]
