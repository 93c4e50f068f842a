#!/bin/sh
# Guest side of `make demo`, on every node of the cluster: load odsm, join
# the cluster over kernel TCP, build a key-value table spread over all the
# nodes' partitions at once (tools/examples/odsm-kvs.c), show the cluster
# and the counters.  Then, on a freshly loaded module, a bank ledger that
# the nodes update in turns through mutable borrows (the accounts move to
# the writer) and audit through shared borrows (copies in each node's
# cache): tools/examples/odsm-coherence.c.  Last, on a freshly loaded
# module again, a work queue: tasks sent through channels to every node,
# whose workers spawn_to the data each task names, the results in a
# table behind a mutex (tools/examples/odsm-workq.c).
# shellcheck shell=dash disable=SC1091,SC2154
. /rig/lib.sh
set -e
net_up
modprobe odsm
wait_peers
nodes=$(cluster_addrs)
echo "RIG_MARK demo_begin"
echo "\$ odsmctl join --transport tcp --node-id $rig_node --nodes $nodes --key-file /tmp/odsm.key"
cluster_key /tmp/odsm.key
# join, and wait (60 s at most) until every peer is up
join() { cluster_join tcp /tmp/odsm.key; }
join
barrier 60
echo "\$ odsm-kvs ${rig_keys:-150}"
odsm-kvs "${rig_keys:-150}"
barrier 300
echo "\$ odsmctl status"
odsmctl status
echo "\$ odsmctl stats --raw   (cluster counters)"
odsmctl stats --raw | grep -E '^(msgs_|served|remote_|rpc_|bad_msgs|peers_down)'
barrier 60

# the ledger: a fresh module, so its root is node 0's first object
odsmctl leave
rmmod odsm
modprobe odsm
join
barrier 60
echo "\$ odsm-coherence ${rig_rounds:-3}"
odsm-coherence "${rig_rounds:-3}"
barrier 300
echo "\$ odsmctl stats --raw   (coherence counters)"
odsmctl stats --raw | grep -E '^(borrow_|mut_|writebacks|bytes_fetched|cache_)'
barrier 60

# the work queue: a fresh module, so that odsm_app_join() makes the
# directory at the start of every partition
odsmctl leave
rmmod odsm
modprobe odsm
join
barrier 60
echo "\$ odsm-workq ${rig_tasks:-8}"
odsm-workq "${rig_tasks:-8}"
barrier 300
echo "RIG_MARK demo_end"
barrier 60
rmmod odsm
