#!/bin/sh
# shellcheck shell=dash disable=SC1091,SC2154,SC2015
# The RDMA transport under abuse, on Soft-RoCE (2 guests; run.sh -n 2).
# Boot the guests with slub_debug=FZPU (run.sh -a) so that a use after
# free or an overflow is reported (and judged) instead of passing silently.
#
# 1. Tiny timeouts with NIC-domain atomics (issue 12, finding 1): each node
#    alone (a table of itself and an address nobody has) joins over RDMA
#    with heartbeat_ms=1 timeout_ms=2 and hammers NIC atomics on fresh
#    blocks of its own partition (loopback pair, registrations) from three
#    threads; operations time out, connections die and are redialled; the
#    node leaves in the middle of it, then the module is unloaded.
# 2. Device removal during block registration: the same with a normal
#    timeout, and `rdma link delete rxe0` while the atomics register blocks;
#    the program must end in time (errnos, no hang), leave and rmmod too.
# 3. The real two-node cluster, node 1 attacking node 0 with
#    odsm-rdmacm (selftests/rdma/odsm-rdmacm.c):
#    a. a connect flood from node 1's own address (a member) and from a
#       second address (no member): node 0's MemAvailable must not drop by
#       more than 64 MiB, the non-member gets no connection, the member
#       no more than a few at once; rdma_conn_refused counts;
#    b. a connection that SENDs garbage (64-byte messages, then the
#       largest) as fast as it can: node 0 stops taking it after the first
#       message (at most 64 small SENDs complete, though the tick reaps the
#       dead connection only after up to a heartbeat of 1 s) and its memory
#       stays put;
#    c. the cluster still works: each node allocates, writes, reads, runs a
#       NIC atomic on and frees an object on the other (odsm-rdmacm remote);
#    d. node 1 learns node 0's incarnation from a HELLO challenge (sent in
#       clear), node 0's local user plants loopback-pair requests with it
#       for the next attempts: all refused (rdma_loop_refused), and node
#       0's own NIC atomics then work over its real loopback pair.
#
# Kernel command line (run.sh -a): rig.rdma_fuzz_only=cluster skips 1 and 2
# (to look at 3 alone, e.g. on a module that does not survive 1).
#
# Markers: RIG_MARK rdma_fuzz PHASE key=value...
. /rig/lib.sh

PORT=7100
KEY=/tmp/odsm.key
failed=0
bin=/rig/bin/odsm-rdmacm

fail() { echo "rdma-fuzz: $*"; exit 1; }
bad() { echo "rdma-fuzz: FAIL: $*"; failed=$((failed + 1)); }
stat_of() { cat "/sys/kernel/odsm/stats/$1" 2>/dev/null || echo 0; }
now_cs() { awk '{ printf "%d", $1 * 100 }' /proc/uptime; }
secs_since() { awk -v a="$1" -v b="$(now_cs)" 'BEGIN { printf "%.2f", (b - a) / 100 }'; }
mem_avail_mb() { awk '/^MemAvailable:/ { printf "%d", $2 / 1024 }' /proc/meminfo; }
val() { # KEY LINE: the value of key=value in LINE
	echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"
}
# the lowest MemAvailable seen while it runs, into /tmp/memmin
mem_watch_start() {
	mem_avail_mb >/tmp/memmin
	(
		while :; do
			m=$(mem_avail_mb)
			[ "$m" -lt "$(cat /tmp/memmin)" ] && echo "$m" >/tmp/memmin
			sleep 0.2
		done
	) &
	watcher=$!
}
mem_watch_stop() { kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null; cat /tmp/memmin; }
unload() { # WHAT: rmmod within 10 s
	local t0 rc
	t0=$(now_cs)
	timeout 60 rmmod odsm
	rc=$?
	mark rdma_fuzz "rmmod after=$1 rc=$rc secs=$(secs_since "$t0")"
	[ "$rc" -eq 0 ] || bad "rmmod after $1 failed (rc=$rc)"
	[ "$(secs_since "$t0" | cut -d. -f1)" -lt 10 ] || bad "rmmod after $1 took more than 10 s"
}
# join a cluster of this node alone (node 0) and an address nobody has
join_alone() { # HEARTBEAT_MS TIMEOUT_MS
	odsmctl join --transport rdma --node-id 0 \
		--nodes "$rig_addr:$PORT,10.0.0.250:$PORT" --key-file "$KEY" \
		--heartbeat-ms "$1" --timeout-ms "$2"
}

[ "$rig_nodes" -eq 2 ] || fail "run with 2 nodes (run.sh -n 2)"
[ -x "$bin" ] || fail "no $bin in the image"
net_up || fail "net_up failed"
rxe_up rxe0 eth0 || fail "rxe_up failed"
wait_peers || fail "peers unreachable"
cluster_key "$KEY" || fail "cannot write the cluster key"
modprobe odsm || fail "modprobe odsm"

if [ "${rig_rdma_fuzz_only:-}" != cluster ]; then
# ---- 1: tiny timeouts, NIC atomics, leave in the middle ----------------
join_alone 1 2 || fail "join with timeout_ms=2"
"$bin" atomics 12 3 32 >/tmp/at1 2>&1 &
apid=$!
sleep 8
t0=$(now_cs)
timeout 60 odsmctl leave || bad "odsmctl leave under tiny timeouts failed"
mark rdma_fuzz "tiny_timeouts leave_secs=$(secs_since "$t0")"
timeout 60 sh -c "while kill -0 $apid 2>/dev/null; do sleep 0.2; done" || bad "atomics did not end"
wait "$apid"
cat /tmp/at1
grep -q '^atomics: ' /tmp/at1 || bad "the atomics program failed"
mark rdma_fuzz "tiny_timeouts loop_atomics=$(stat_of loop_atomics) rpc_timeouts=$(stat_of rpc_timeouts)"
unload tiny_timeouts
modprobe odsm || fail "modprobe odsm"

# ---- 2: the device goes while blocks are being registered --------------
join_alone 200 2000 || fail "join for the device removal"
r0=$(stat_of mr_registrations)
"$bin" atomics 15 2 1024 >/tmp/at2 2>&1 &
apid=$!
# the first registrations: then the device goes at once (they run at some
# hundreds a second under TCG, so most of the 1024 are still to come)
i=0
until [ $(($(stat_of mr_registrations) - r0)) -ge 8 ] || [ "$i" -ge 200 ]; do
	i=$((i + 1))
	sleep 0.05
done
regs=$(($(stat_of mr_registrations) - r0))
mark rdma_fuzz "removal registrations_before=$regs"
# the removal must come while blocks are still being registered
[ "$regs" -gt 0 ] && [ "$regs" -lt 1024 ] || bad "$regs of 1024 blocks registered when the device went"
t0=$(now_cs)
timeout 60 rdma link delete rxe0 || bad "rdma link delete rxe0 failed"
mark rdma_fuzz "removal delete_secs=$(secs_since "$t0")"
timeout 60 sh -c "while kill -0 $apid 2>/dev/null; do sleep 0.2; done" || bad "atomics did not end after the device removal"
wait "$apid"
cat /tmp/at2
grep -q '^atomics: ' /tmp/at2 || bad "the atomics program failed"
t0=$(now_cs)
timeout 60 odsmctl leave || bad "odsmctl leave after the device removal failed"
mark rdma_fuzz "removal leave_secs=$(secs_since "$t0") registrations=$(($(stat_of mr_registrations) - r0))"
unload removal
rxe_up rxe0 eth0 || fail "rxe_up after the removal"
modprobe odsm || fail "modprobe odsm"
fi
barrier || fail "barrier before the cluster"

# ---- 3: the real cluster, node 1 attacks node 0 -------------------------
# a heartbeat of 1 s: a dead connection lives until the tick reaps it, so
# what a node takes after a bad header (b) shows
odsmctl join --transport rdma --node-id "$rig_node" --nodes "$(cluster_addrs)" \
	--key-file "$KEY" --heartbeat-ms 1000 --timeout-ms 5000 || fail "cluster join"
i=0
until [ "$(odsmctl status --raw | grep -c ' state=up ')" -eq 1 ]; do
	i=$((i + 1))
	[ "$i" -lt 300 ] || { odsmctl status; fail "the peer never came up"; }
	sleep 0.2
done
barrier || fail "barrier after joining"
if [ "$rig_node" = 0 ]; then
	ref0=$(stat_of rdma_conn_refused)
	mem0=$(mem_avail_mb)
	mem_watch_start
fi
barrier || fail "barrier before the flood"
if [ "$rig_node" = 1 ]; then
	out=$("$bin" flood "$(node_ip 0)" "$PORT" 48 10)
	echo "member $out"
	peak=$(val peak "$out")
	[ -n "$peak" ] && [ "$peak" -le 4 ] || bad "the member flood had $peak connections open at once (at most 4)"
	ip addr add 10.0.0.202/24 dev eth0
	sleep 1
	out=$("$bin" flood "$(node_ip 0)" "$PORT" 16 4 10.0.0.202)
	echo "non-member $out"
	[ "$(val established "$out")" = 0 ] || bad "a non-member address got a connection"
	ip addr del 10.0.0.202/24 dev eth0
fi
barrier || fail "barrier after the flood"
if [ "$rig_node" = 0 ]; then
	min=$(mem_watch_stop)
	mark rdma_fuzz "flood mem_before=$mem0 mem_min=$min refused=$(($(stat_of rdma_conn_refused) - ref0))"
	[ $((mem0 - min)) -lt 64 ] || bad "MemAvailable dropped by $((mem0 - min)) MiB under the flood"
	[ "$(stat_of rdma_conn_refused)" -gt "$ref0" ] || bad "no rdma_conn_refused counted"
	mem0=$(mem_avail_mb)
	bad0=$(stat_of bad_msgs)
	mem_watch_start
fi
barrier || fail "barrier before the garbage"
if [ "$rig_node" = 1 ]; then
	out=$("$bin" garbage "$(node_ip 0)" "$PORT" 6 64)
	echo "$out"
	sent=$(val sent "$out")
	[ -n "$sent" ] && [ "$sent" -le 64 ] || bad "node 0 took $sent garbage SENDs (at most 64)"
	out=$("$bin" garbage "$(node_ip 0)" "$PORT" 6)
	echo "$out"
fi
barrier || fail "barrier after the garbage"
if [ "$rig_node" = 0 ]; then
	min=$(mem_watch_stop)
	mark rdma_fuzz "garbage mem_before=$mem0 mem_min=$min bad_msgs=$(($(stat_of bad_msgs) - bad0))"
	[ $((mem0 - min)) -lt 64 ] || bad "MemAvailable dropped by $((mem0 - min)) MiB under garbage"
fi
# c: the cluster still works
up=0
for _ in $(seq 100); do
	up=$(odsmctl status --raw | grep -c ' state=up ')
	[ "$up" -eq 1 ] && break
	sleep 0.2
done
[ "$up" -eq 1 ] || bad "the peer is not up after the attacks"
out=$("$bin" remote $((1 - rig_node)))
rc=$?
echo "$out"
[ "$rc" -eq 0 ] || bad "the cluster does not work after the attacks"
# d: the loopback pair's former public data, planted by a local user
if [ "$rig_node" = 1 ]; then
	out=$("$bin" hello "$(node_ip 0)" "$PORT" 1 2 \
		"$(cat /sys/module/odsm/parameters/heap_base)" \
		"$(cat /sys/module/odsm/parameters/part_size)")
	echo "$out"
	inc=$(val incarnation "$out")
	[ -n "$inc" ] || bad "no incarnation in node 0's challenge"
	i=0
	until echo "${inc:-0}" | nc "$(node_ip 0)" 6990 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -lt 100 ] || { bad "cannot tell node 0 the incarnation"; break; }
		sleep 0.2
	done
else
	inc=$(timeout 60 nc -l -p 6990 </dev/null)
	echo "node 0's incarnation, as node 1 read it: $inc"
	lr0=$(stat_of rdma_loop_refused)
	la0=$(stat_of loop_atomics)
	"$bin" loop "$rig_addr" "$PORT" "${inc:-0}" 1 8 10 >/tmp/plant 2>&1 &
	ppid=$!
	sleep 6
	"$bin" atomics 2 1 2 >/tmp/at3 2>&1
	wait "$ppid"
	cat /tmp/plant /tmp/at3
	out=$(cat /tmp/plant)
	[ "$(val established "$out")" = 0 ] || bad "a planted loopback request was accepted"
	[ "$(stat_of rdma_loop_refused)" -gt "$lr0" ] || bad "no rdma_loop_refused counted"
	out=$(cat /tmp/at3)
	[ "$(val ops "$out")" = "$(val ok "$out")" ] && [ "$(val ok "$out")" -gt 0 ] ||
		bad "NIC atomics on node 0's own words failed after the plant"
	mark rdma_fuzz "loop_plant refused=$(($(stat_of rdma_loop_refused) - lr0)) loop_atomics=$(($(stat_of loop_atomics) - la0))"
fi
barrier || fail "barrier after the plant"
barrier || fail "barrier before leaving"
odsmctl stats --raw | grep -E '^(bad_msgs|auth_failures|rdma_|loop_atomics|mr_registrations|peers_down)'
unload cluster
mark rdma_fuzz "done failed=$failed"
[ "$failed" -eq 0 ]
