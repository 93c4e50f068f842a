#!/bin/sh
# Guest side of `make bench`, two nodes: what the coherence protocol costs
# against the raw operations on the same link (odsm-cbench, node 1 against
# objects it places on node 0), over kernel TCP and then over RDMA
# (Soft-RoCE) after leaving and joining again, and Debian's perftest
# ib_read_lat / ib_read_bw on the same rxe link as the raw-link reference.
# Numbers only; nothing is judged.
# shellcheck shell=dash disable=SC1091,SC2154
. /rig/lib.sh
set -e
net_up
rxe_up
modprobe odsm
wait_peers
cluster_key /tmp/odsm.key
nodes=""
k=0
while [ "$k" -lt "$rig_nodes" ]; do
	nodes="$nodes${nodes:+,}$(node_ip "$k"):7100"
	k=$((k + 1))
done
join() {	# transport
	odsmctl join --transport "$1" --node-id "$rig_node" --nodes "$nodes" \
		--key-file /tmp/odsm.key
	i=0
	until odsmctl status --raw | grep -q 'state=up'; do
		i=$((i + 1))
		[ "$i" -lt 300 ] || { echo "peer never came up"; exit 1; }
		sleep 0.2
	done
}
for xport in tcp rdma; do
	join "$xport"
	barrier 60
	[ "$rig_node" = 1 ] && odsm-cbench 0 "${rig_iters:-60}" "$xport"
	barrier 900
	odsmctl leave
	barrier 60
done

# the raw link: node 0 serves, node 1 measures
perf() {	# name args...
	name=$1
	shift
	if [ "$rig_node" = 0 ]; then
		timeout 120 "$name" -d rxe0 -R "$@" >/tmp/perf.s 2>&1 &
		spid=$!
	fi
	barrier 60
	if [ "$rig_node" = 1 ]; then
		sleep 1
		timeout 120 "$name" -d rxe0 -R "$@" "$(node_ip 0)" >/tmp/perf.c 2>&1 || true
		grep -E '^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+' /tmp/perf.c |
			sed "s/^ */ODSM_BENCH coherence perftest $name $* : /" || true
	fi
	[ "$rig_node" = 0 ] && { wait "$spid" || true; }
	barrier 60
}
if command -v ib_read_lat >/dev/null; then
	perf ib_read_lat -s 512 -n 200
	perf ib_read_bw -s 1048576 -n 20
fi
barrier 60
