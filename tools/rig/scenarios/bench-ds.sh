#!/bin/sh
# Guest side of `make bench`, two nodes: the data structures of odsm_ds.h
# against BCL's cost model (odsm-dsbench: node 0 holds a hash table
# segment and a queue, node 1 measures the components, every operation
# one-sided and as a request, a mixed workload in the three modes, and
# the owner's attentiveness), over kernel TCP, where "one-sided" is a
# request the module serves, then over RDMA (Soft-RoCE).
# Numbers only; nothing is judged.
# shellcheck shell=dash disable=SC1091,SC2154
. /rig/lib.sh
set -e
net_up
rxe_up
modprobe odsm
wait_peers
cluster_key /tmp/odsm.key
ds() {	# transport
	cluster_join "$1" /tmp/odsm.key
	barrier 60
	if [ "$rig_node" = 0 ]; then
		odsm-dsbench serve || echo "ODSM_BENCH ds_failed serve label=$1"
	fi
	# a failed client must not leave node 0 waiting at the barrier
	if [ "$rig_node" = 1 ]; then
		odsm-dsbench 10.0.0.1 "${rig_ds_n:-30}" "$1" ||
			echo "ODSM_BENCH ds_failed label=$1"
	fi
	barrier 600
	odsmctl leave
	barrier 60
}
ds tcp
ds rdma
