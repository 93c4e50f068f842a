#!/bin/bash
# make demo: odsm on QEMU guests of the newest supported kernel.
#  1. one node: the example application (tools/examples/odsm-demo.c) builds
#     a binary search tree in the global heap through libodsm's owner boxes
#     and borrows, walks it from a second process, updates and frees it;
#  2. a cluster of three nodes over kernel TCP: every node at once builds a
#     key-value table spread over all partitions with remote compare-and-
#     swap, writes and fetch-and-add (tools/examples/odsm-kvs.c), then
#     checks every key of every node; then a bank ledger that the nodes
#     update in turns through mutable borrows (each account moves to the
#     node that writes it) and audit through shared borrows (copies in
#     each node's cache), balanced after every turn
#     (tools/examples/odsm-coherence.c); last, a work queue written like
#     a DRust application: every node sends tasks (boxes) through the
#     nodes' channels, workers on every node spawn_to the data object
#     each task names, so the work runs where the data lives, and record
#     the results in a table behind a mutex; node 0 checks that every
#     task ran exactly once (tools/examples/odsm-workq.c).
set -euo pipefail
cd "$(dirname "$0")/.."
KVER=${KVER:-$(tools/rig/kernels.sh --newest)}
NODES=${NODES:-3}
img=build/vm/demo-$KVER.cpio.gz
mkdir -p build/vm build/logs
echo "demo: building odsm for $KVER and a guest image"
tools/vm-image.sh "$KVER" "$img"

show() {	# scenario node
	tr -d '\r' <"build/logs/$1-$KVER-node$2.log" |
		sed -n '/RIG_MARK demo_begin/,/RIG_MARK demo_end/p' | grep -v 'RIG_MARK' |
		sed "s/^/  [node$2] /" || true
}

echo
echo "demo 1/2: one node (QEMU TCG guest, ~10 s)"
rc=0
tools/rig/run.sh -k "$KVER" -n 1 -s demo -i "$img" -l build/logs >build/logs/demo-run.txt 2>&1 || rc=$?
show demo 0
tail -n 1 build/logs/demo-run.txt

echo
echo "demo 2/2: a cluster of $NODES nodes over kernel TCP ($NODES QEMU guests, ~90 s)"
rc2=0
tools/rig/run.sh -k "$KVER" -n "$NODES" -s demo-cluster -i "$img" -l build/logs -t 600 \
	>build/logs/demo-cluster-run.txt 2>&1 || rc2=$?
for k in $(seq 0 $((NODES - 1))); do
	if [ "$k" = 0 ]; then
		show demo-cluster "$k"
	else
		# the other nodes: what their odsm-kvs and odsm-workq said
		show demo-cluster "$k" | grep -E '^\s*\[node[0-9]+\] node [0-9]+[:,]'
	fi
done
tail -n 1 build/logs/demo-cluster-run.txt
[ "$rc" = 0 ] && [ "$rc2" = 0 ]
