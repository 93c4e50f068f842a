#!/bin/sh
# Guest side of `make bench`, two nodes: odsm's remote operations
# (odsm-rbench, node 1 against objects it places on node 0) over the
# kernel-TCP transport, then over RDMA (Soft-RoCE) one-sided and with
# one-sided turned off (requests in SEND messages), then Debian's perftest
# over the same emulated link with Soft-RoCE as the raw-link reference.
# odsm-abench: 64 borrow misses one at a time against all together
# through io_uring, over TCP and over RDMA.
# Delegation across nodes (odsm-xbench: node 1's clients increment a
# counter held on node 0: delegation batched and not, a remote CAS lock,
# remote fetch-and-add, and one apply's latency against one read's) runs
# over TCP and over RDMA with one-sided off (the read is then a plain
# two-sided request, like the apply's batch).
# libodsm's mutexes (odsm-mbench: threads on both nodes lock a mutex of
# node 0, the CAS kind then the delegated kind) run first on each transport:
# they meet through node 0's directory, which must be the first object of
# its partition.
# Remote execution and channels (odsm-sbench: spawn_to against a local
# call and a pull of the object, boxes through a channel) over TCP;
# with rig.bench_only=sbench, only those (after the TCP join);
# rig.bench_only=mbench: only the mutexes, over TCP then RDMA;
# rig.bench_only=abench: only the 64 borrows and reads (odsm-abench).
# Tied allocation (odsm-gbench: node 1 reads node 0's parent and 8
# children cold, as one group and as 9 objects) over TCP and over RDMA;
# with rig.bench_only=gbench, only that (over TCP, the tied list
# example, then over RDMA).
# Numbers only; nothing is judged.
# shellcheck shell=dash disable=SC1091,SC2154
. /rig/lib.sh
set -e
net_up
rxe_up
modprobe odsm
wait_peers
cluster_key /tmp/odsm.key
join() {	# transport
	cluster_join "$1" /tmp/odsm.key
	barrier 60
}
join tcp
# rig.bench_only=sbench: the spawn and channel rows only (a quick look)
if [ "${rig_bench_only:-}" = mbench ]; then
	odsm-mbench tcp 1000 2
	barrier 300
	odsmctl leave
	barrier 60
	join rdma
	odsm-mbench rdma 1000 2
	barrier 300
	odsmctl leave
	exit 0
fi
if [ "${rig_bench_only:-}" = sbench ]; then
	[ "$rig_node" = 0 ] && odsm-sbench serve
	[ "$rig_node" = 1 ] && odsm-sbench 10.0.0.1 tcp
	barrier 300
	odsmctl leave
	exit 0
fi
# rig.bench_only=abench: the 64 borrows and reads one after another
# against all at once, over TCP, over RDMA (the summary's rows) and over
# RDMA with one-sided access off
if [ "${rig_bench_only:-}" = abench ]; then
	[ "$rig_node" = 1 ] && odsm-abench 0 7 tcp
	barrier 300
	odsmctl leave
	barrier 60
	join rdma
	[ "$rig_node" = 1 ] && odsm-abench 0 7
	barrier 300
	echo N >/sys/module/odsm/parameters/onesided
	[ "$rig_node" = 1 ] && odsm-abench 0 7 rdma-twosided
	barrier 300
	echo Y >/sys/module/odsm/parameters/onesided
	odsmctl leave
	exit 0
fi
# rig.bench_only=xbench: delegation across nodes with the gateway taking
# every batch (ODSM_DELEG_NOLANES on the runtime's node), then through the
# lanes, over TCP and over RDMA two-sided
if [ "${rig_bench_only:-}" = xbench ]; then
	xgw() {	# label
		[ "$rig_node" = 0 ] && ODSM_DELEG_NOLANES=1 odsm-xbench serve 1
		[ "$rig_node" = 1 ] && odsm-xbench 10.0.0.1 1000 3 2 "$1-gateway"
		barrier 300
		[ "$rig_node" = 0 ] && odsm-xbench serve 1
		[ "$rig_node" = 1 ] && odsm-xbench 10.0.0.1 1000 3 2 "$1"
		barrier 300
	}
	xgw tcp
	odsmctl leave
	barrier 60
	join rdma
	echo N >/sys/module/odsm/parameters/onesided
	xgw rdma-twosided
	echo Y >/sys/module/odsm/parameters/onesided
	odsmctl leave
	exit 0
fi
# rig.bench_only=gbench: the tied allocation rows only, then the tied
# list example (odsm-tlist) on node 0
if [ "${rig_bench_only:-}" = gbench ]; then
	odsm-gbench tcp 30
	barrier 300
	[ "$rig_node" = 0 ] && odsm-tlist 8
	barrier 300
	odsmctl leave
	barrier 60
	join rdma
	odsm-gbench rdma 30
	barrier 300
	odsmctl leave
	exit 0
fi
odsm-mbench tcp 1000 2
barrier 300
[ "$rig_node" = 1 ] && odsm-rbench 0 200
[ "$rig_node" = 1 ] && odsm-rbench 0 200 tcp
barrier 300
xbench() {	# label
	[ "$rig_node" = 0 ] && odsm-xbench serve 1
	[ "$rig_node" = 1 ] && odsm-xbench 10.0.0.1 1000 3 2 "$1"
	barrier 300
}
xbench tcp
# remote execution and channels (odsm-sbench: node 1 spawns to node 0's
# object and sends boxes of 64 B and 64 KiB to node 0's channel), over TCP
sbench() {	# label
	[ "$rig_node" = 0 ] && odsm-sbench serve
	[ "$rig_node" = 1 ] && odsm-sbench 10.0.0.1 "$1"
	barrier 300
}
sbench tcp
# tied allocation: a group of a parent and 8 children against 9 objects
odsm-gbench tcp 30
barrier 300
# 64 borrows that miss, blocking one after another vs through io_uring
[ "$rig_node" = 1 ] && odsm-abench 0 7 tcp
barrier 300
odsmctl leave
barrier 60
join rdma
odsm-mbench rdma 1000 2
barrier 300
odsm-gbench rdma 30
barrier 300
[ "$rig_node" = 1 ] && odsm-rbench 0 200 rdma-onesided
barrier 300
# the summary's fixed row: over RDMA, as issue 15's other rows
[ "$rig_node" = 1 ] && odsm-abench 0 7
barrier 300
echo N >/sys/module/odsm/parameters/onesided
[ "$rig_node" = 1 ] && odsm-rbench 0 200 rdma-twosided
barrier 300
xbench rdma-twosided
echo Y >/sys/module/odsm/parameters/onesided
odsmctl leave
barrier 60

# perftest: node 0 serves, node 1 measures; one tool at a time
perf() { perftest_pair perftest "$@"; }
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
