#!/bin/sh
# Guest side of `make bench`, two nodes: odsm's remote operations
# (odsm-rbench, node 1 against objects it places on node 0) over the
# kernel-TCP transport, then over RDMA (Soft-RoCE) one-sided and with
# one-sided turned off (requests in SEND messages), then Debian's perftest
# over the same emulated link with Soft-RoCE as the raw-link reference.
# Numbers only; nothing is judged.
# shellcheck shell=dash disable=SC1091,SC2154
. /rig/lib.sh
set -e
net_up
rxe_up
modprobe odsm
wait_peers
nodes=""
k=0
while [ "$k" -lt "$rig_nodes" ]; do
	nodes="$nodes${nodes:+,}$(node_ip "$k"):7100"
	k=$((k + 1))
done
cluster_key /tmp/odsm.key
join() {	# transport
	odsmctl join --transport "$1" --node-id "$rig_node" --nodes "$nodes" \
		--key-file /tmp/odsm.key
	i=0
	until odsmctl status --raw | grep -q 'state=up'; do
		i=$((i + 1))
		[ "$i" -lt 300 ] || { echo "peer never came up"; exit 1; }
		sleep 0.2
	done
	barrier 60
}
join tcp
[ "$rig_node" = 1 ] && odsm-rbench 0 200
[ "$rig_node" = 1 ] && odsm-rbench 0 200 tcp
barrier 300
odsmctl leave
barrier 60
join rdma
[ "$rig_node" = 1 ] && odsm-rbench 0 200 rdma-onesided
barrier 300
echo N >/sys/module/odsm/parameters/onesided
[ "$rig_node" = 1 ] && odsm-rbench 0 200 rdma-twosided
barrier 300
echo Y >/sys/module/odsm/parameters/onesided
odsmctl leave
barrier 60

# perftest: node 0 serves, node 1 measures; one tool at a time
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
		# the result rows: a size, an iteration count, then figures
		grep -E '^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+' /tmp/perf.c |
			sed "s/^ */ODSM_BENCH perftest $name $* : /" || true
		grep -E '^ *#bytes' /tmp/perf.c | head -n 1 | sed "s/^ */ODSM_BENCH perftest-columns $name: /"
	fi
	[ "$rig_node" = 0 ] && { wait "$spid" || true; }
	barrier 60
}
if command -v ib_read_lat >/dev/null; then
	perf ib_read_lat -s 8 -n 200
	perf ib_read_lat -s 4096 -n 200
	perf ib_write_lat -s 8 -n 200
	perf ib_write_lat -s 4096 -n 200
	perf ib_read_bw -s 1048576 -n 20
	perf ib_atomic_lat -n 200
else
	echo "ODSM_BENCH perftest not installed in the guest image"
fi
barrier 60
