# shellcheck shell=dash disable=SC2154
# Helpers for scenario scripts: `. /rig/lib.sh` (busybox ash).
# Uses the variables /init exports from the kernel command line:
#   rig_ip=10.0.0.(K+1)/24  rig_peers=<other nodes' IPs, comma separated>
#   rig_node=K  rig_nodes=N  rig_scenario=NAME
# Functions return non-zero on failure; they do not exit.

# Debian's busybox-static ash runs its own applets before $PATH; busybox ip
# lacks what we need, so always use iproute2's.
ip() { /usr/bin/ip "$@"; }

rig_addr=${rig_ip:-}
rig_addr=${rig_addr%/*}   # this node's IPv4 address without /24

# node_ip K: IPv4 address of node K (0-based)
node_ip() { echo "10.0.0.$(($1 + 1))"; }

# cluster_key FILE [wrong]: write this run's cluster key (run.sh passes it
# as rig.key, the same on every guest) to FILE, mode 0600, for odsmctl join
# --key-file; with "wrong", a key of this node's own that no other node has
cluster_key() {
	local key=${rig_key:-0000000000000000000000000000000000000000000000000000000000000000}
	[ "${2:-}" != wrong ] || key="wrong-key-of-node-$rig_node-${key#??????????????????????}"
	(umask 077 && rm -f "$1" && printf '%s' "$key" >"$1")
}

# cluster_addrs: every node's address for odsmctl join --nodes, in node
# order, all on port 7100: nothing hard-coded but the port
cluster_addrs() {
	local k=0 a=""
	while [ "$k" -lt "$rig_nodes" ]; do
		a="$a${a:+,}$(node_ip "$k"):7100"
		k=$((k + 1))
	done
	echo "$a"
}

# cluster_join TRANSPORT KEYFILE: join every node of the rig over
# TRANSPORT, then wait (60 s at most) until every peer is up
cluster_join() {
	local i=0
	odsmctl join --transport "$1" --node-id "$rig_node" \
		--nodes "$(cluster_addrs)" --key-file "$2" || return 1
	until [ "$(odsmctl status --raw | grep -c ' state=up ')" -eq $((rig_nodes - 1)) ]; do
		i=$((i + 1))
		[ "$i" -lt 300 ] || { odsmctl status; echo "peers never came up"; return 1; }
		sleep 0.2
	done
}

# perftest_pair TAG TOOL ARGS...: one of Debian's perftest tools over rxe0,
# node 0 serving and node 1 measuring; node 1 prints the result rows as
# "ODSM_BENCH TAG TOOL ARGS : row" and the column names once
perftest_pair() {
	local tag=$1 name=$2 spid="" i
	shift 2
	if [ "$rig_node" = 0 ]; then
		timeout 120 "$name" -d rxe0 -R "$@" >/tmp/perf.s 2>&1 &
		spid=$!
	fi
	barrier 60
	if [ "$rig_node" = 1 ]; then
		# a client that came before the server listened fails (once
		# with a general protection fault in librdmacm): again, while
		# the server still waits for one
		for i in 1 2 3 4 5; do
			sleep 1
			timeout 120 "$name" -d rxe0 -R "$@" "$(node_ip 0)" >/tmp/perf.c 2>&1 &&
				break
			echo "perftest_pair: $name failed (attempt $i):"
			tail -n 3 /tmp/perf.c
			# it measured (the server is gone): no second try
			! grep -q '#bytes' /tmp/perf.c || break
		done
		# the result rows: a size, an iteration count, then figures
		grep -E '^[[:space:]]*[0-9]+[[:space:]]+[0-9]+[[:space:]]+[0-9.]+' /tmp/perf.c |
			sed "s/^ */ODSM_BENCH $tag $name $* : /" || true
		grep -E '^ *#bytes' /tmp/perf.c | head -n 1 | sed "s/^ */ODSM_BENCH $tag-columns $name: /"
	fi
	[ -z "$spid" ] || wait "$spid" || true
	barrier 60
}

# mark NAME [VALUE...]: print a marker line that run.sh echoes on the host
mark() {
	local name="$1"
	shift
	echo "RIG_MARK $name $*"
}

# net_up [DEV]: bring up the virtio NIC (default eth0) with $rig_ip
net_up() {
	local dev="${1:-eth0}" i
	modprobe virtio_pci 2>/dev/null   # built in on 6.12
	modprobe virtio_net || return 1
	for i in $(seq 50); do
		[ -e "/sys/class/net/$dev" ] && break
		sleep 0.1
	done
	[ -e "/sys/class/net/$dev" ] || { echo "net_up: no $dev"; return 1; }
	ip addr add "${rig_ip:?rig.ip missing}" dev "$dev" && ip link set "$dev" up
}

# net_loss PCT [DEV]: DEV (default eth0) drops PCT% of the packets it sends
# (netem), so that Soft-RoCE retransmits: what a lossy fabric does (the
# real tc: busybox has an applet of that name, without netem)
net_loss() {
	local pct="$1" dev="${2:-eth0}"
	modprobe sch_netem &&
		/usr/sbin/tc qdisc add dev "$dev" root netem loss "$pct%" || return 1
	echo "net_loss: $dev drops $pct% of what it sends"
}

# rxe_up [NAME] [DEV]: Soft-RoCE device NAME (default rxe0) on DEV (default
# eth0); waits until its port is ACTIVE
rxe_up() {
	local name="${1:-rxe0}" dev="${2:-eth0}" i
	modprobe rdma_rxe && modprobe rdma_ucm || return 1
	rdma link add "$name" type rxe netdev "$dev" || return 1
	for i in $(seq 50); do
		rdma link show "$name/1" | grep -q 'state ACTIVE' && return 0
		sleep 0.1
	done
	echo "rxe_up: $name/1 not ACTIVE:"
	rdma link show "$name/1"
	return 1
}

# rxe_counters [NAME]: Soft-RoCE's counters that are not zero (retries,
# RNR NAKs, packets it failed to send, ...) and the send queue's drops, as
# one line: what the network did to a run, for reading its failures
rxe_counters() {
	local d="/sys/class/infiniband/${1:-rxe0}/ports/1/hw_counters" f v line=""
	[ -d "$d" ] || return 0
	for f in "$d"/*; do
		v=$(cat "$f" 2>/dev/null) || continue
		[ "$v" = 0 ] || line="$line ${f##*/}=$v"
	done
	# the root qdisc's line comes first and counts its children's drops
	v=$(/usr/sbin/tc -s qdisc show dev eth0 2>/dev/null | grep -m 1 -o 'dropped [0-9]*')
	line="$line qdisc_dropped=${v#dropped }"
	# packets the receiving side dropped before Soft-RoCE saw them: the
	# backlog's (softnet_stat's second column, hex, per CPU) and the NIC's
	v=0
	while read -r _ d _; do
		v=$((v + 0x$d))
	done < /proc/net/softnet_stat
	line="$line backlog_dropped=$v"
	v=$(cat /sys/class/net/eth0/statistics/rx_dropped 2>/dev/null)
	line="$line rx_dropped=${v:-?}"
	# and UDP's, which carries RoCE v2: its errors (a bad checksum among
	# them) and its checksum errors alone
	v=$(grep '^Udp: [0-9]' /proc/net/snmp)
	# shellcheck disable=SC2086 # split into the fields on purpose
	set -- $v
	mark rxe_counters "$line udp_in_errors=${4:-?} udp_csum_errors=${8:-?}"
}

# wait_peers_report PEER: what the node knows of its link when PEER never
# answered (a rig failure seen once in CI left nothing else to go on)
wait_peers_report() {
	echo "wait_peers: $1 unreachable; this node's link and neighbours:"
	/usr/bin/ip -s link show eth0
	/usr/bin/ip addr show eth0
	/usr/bin/ip neigh show
}

# wait_peers [SECONDS]: wait until every address in $rig_peers answers ping
# (default 60 s per peer)
wait_peers() {
	local max="${1:-60}" p i
	for p in $(echo "${rig_peers:-}" | tr ',' ' '); do
		i=0
		until ping -c 1 -W 1 "$p" >/dev/null 2>&1; do
			i=$((i + 1))
			[ "$i" -lt "$max" ] || { wait_peers_report "$p"; return 1; }
		done
	done
}

# Release node k from node 0's barrier: 0 once its listener took the
# connection.  The listener closes as soon as it has accepted, and nc
# returns 0 when it sees that.  A released node may power off at once
# (rig.down): its end can vanish before it closes, and an nc without a
# timeout waits for that close for ever (node 0 of a 3-guest run once
# did), so the outer timeout (124 coreutils, 143 busybox) also means
# released -- but only because nc -w 3 gives up connecting first (rc 1,
# tried again): with packets lost a connect can take longer than a plain
# timeout, which then released a node that never saw it (2026-11-30,
# rig.loss=2: the node waited out the last barrier).  Refused (not
# listening yet): rc 1 at once, tried again.
barrier_release() {
	timeout 10 nc -w 3 "$(node_ip "$1")" 6998 </dev/null >/dev/null 2>&1
	case $? in 0 | 124 | 143) return 0 ;; esac
	return 1
}

# barrier [SECONDS]: wait until every node has called barrier (default: give
# up after 120 s).  Use it before a node's scenario ends while others may
# still need it, and between phases.  TCP over eth0 (net_up first): node 0
# collects "ID SEQ" from every other node on port 6999, then releases each
# of them by connecting to its port 6998.  SEQ counts this node's barriers,
# so a late message of one barrier never counts for the next.  A busybox
# nc may exit before it has read what the other side sent, so nothing
# depends on a reply's content: a node sends its id again every half
# second until it is released (node 0 ignores repeats), and a release is
# the connection itself (an 8-node run once lost an id that had been
# answered, and every node waited out the barrier).
barrier() {
	local max="${1:-120}" end msg id seq got left k
	[ "${rig_nodes:-1}" -gt 1 ] || return 0
	end=$(($(date +%s) + max))
	seq=$(($(cat /tmp/.rig-barrier-seq 2>/dev/null || echo 0) + 1))
	echo "$seq" >/tmp/.rig-barrier-seq
	if [ "$rig_node" = 0 ]; then
		got=" " left=$((rig_nodes - 1))
		while [ "$left" -gt 0 ]; do
			[ "$(date +%s)" -lt "$end" ] || { echo "barrier $seq: $left node(s) missing, got:$got"; return 1; }
			msg=$(echo ack | timeout $((end - $(date +%s) + 1)) nc -l -p 6999 2>/dev/null) || true
			set -- $msg
			id=${1:-} k=${2:-}
			[ -n "$id" ] && [ "$k" = "$seq" ] || continue
			case "$got" in *" $id "*) continue ;; esac
			got="$got$id " left=$((left - 1))
		done
		for k in $(seq 1 $((rig_nodes - 1))); do
			until barrier_release "$k"; do
				[ "$(date +%s)" -lt "$end" ] || { echo "barrier $seq: cannot release node $k"; return 1; }
				sleep 0.2
			done
		done
	else
		echo ok | timeout "$max" nc -l -p 6998 >/dev/null 2>&1 &
		k=$!
		while kill -0 "$k" 2>/dev/null; do
			[ "$(date +%s)" -lt "$end" ] || break
			# (refused while node 0 is not listening: a scenario may run
			# under set -e)
			echo "$rig_node $seq" | timeout 5 nc "$(node_ip 0)" 6999 >/dev/null 2>&1 || true
			sleep 0.5
		done
		if ! wait "$k"; then
			echo "barrier $seq: not released (node 0 not answering, or a node missing)"
			return 1
		fi
	fi
}
