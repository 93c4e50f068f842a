#!/bin/sh
# Guest side of `make bench`, two nodes: what the coherence protocol costs
# against the raw operations on the same link (odsm-cbench, node 1 against
# objects it places on node 0), over kernel TCP and then over RDMA
# (Soft-RoCE) after leaving and joining again, and Debian's perftest
# ib_read_lat / ib_read_bw on the same rxe link as the raw-link reference.
# Numbers only; nothing is judged.  rig.cbench_xports (default "tcp rdma",
# comma-separated) and rig.cbench_rows ("all", or "uncached", "move" or
# "lazy": that row alone) narrow it for a quick comparison of two builds.
# shellcheck shell=dash disable=SC1091,SC2154
. /rig/lib.sh
set -e
net_up
rxe_up
modprobe odsm
wait_peers
cluster_key /tmp/odsm.key
for xport in $(echo "${rig_cbench_xports:-tcp,rdma}" | tr , ' '); do
	cluster_join "$xport" /tmp/odsm.key
	barrier 60
	[ "$rig_node" = 1 ] &&
		odsm-cbench 0 "${rig_iters:-60}" "$xport" "${rig_cbench_rows:-all}"
	barrier 900
	odsmctl leave
	barrier 60
done

# the raw link: node 0 serves, node 1 measures
perf() { perftest_pair "coherence perftest" "$@"; }
if command -v ib_read_lat >/dev/null; then
	perf ib_read_lat -s 512 -n 200
	perf ib_read_bw -s 1048576 -n 20
fi
barrier 60
