#!/bin/sh
# shellcheck shell=dash disable=SC1091,SC2154
# A cluster that comes up at boot, from the installed packages: boot it on
# the image tools/check-packages.sh makes (the packages unpacked over the
# root, odsm.ko built by DKMS from odsm-dkms in updates/dkms, an example
# built against the installed libodsm through pkg-config as
# /rig/bin/pkgcfg-odsm-coherence).  Every guest:
#
#   - checks that a bad configuration line is reported with its file and
#     line, and that the shipped example file reads;
#   - writes /etc/odsm/cluster.conf (node 0 names itself and lists the
#     nodes on one line; node 1 is node_id = auto with one "nodes =" line
#     per node; node 2 is auto with a hosts_file) and the cluster key;
#   - runs odsm.service's commands exactly as the installed unit file says
#     (ConditionPathExists, ExecStartPre, ExecStart), in place of systemd;
#   - checks that modprobe loaded the DKMS-built module and that up wrote
#     the file's knobs, waits until every peer is up, runs the example on
#     every node at once;
#   - runs ExecStop, checks the node left, restarts (ExecStart again, as
#     "systemctl restart" would) and stops again, and unloads the module.
#
# Kernel command line (run.sh -a): rig.heartbeat_ms=N rig.timeout_ms=N
# (into cluster.conf), rig.rounds=N (the example's rounds, default 2).
# Markers: RIG_MARK unit CMD / cluster_up node=K peers=N secs=S /
#          boot_cluster checks=N failed=M
. /rig/lib.sh

UNIT=/lib/systemd/system/odsm.service
CONF=/etc/odsm/cluster.conf
failed=0
checks=0

fail() { echo "boot-cluster: $*"; exit 1; }
bad() { echo "boot-cluster: $*"; failed=$((failed + 1)); }
now_cs() { awk '{ printf "%d", $1 * 100 }' /proc/uptime; }
secs_since() { awk -v a="$1" -v b="$(now_cs)" 'BEGIN { printf "%.2f", (b - a) / 100 }'; }

# the unit's commands of one kind (ExecStartPre, ExecStart, ExecStop), run
# one by one as systemd would: split at blanks, no shell (none of them
# quotes anything)
unit_run() {
	local cmd
	sed -n "s/^$1=//p" "$UNIT" >/tmp/unit-cmds
	[ -s /tmp/unit-cmds ] || { bad "$UNIT has no $1"; return 1; }
	while read -r cmd; do
		mark unit "$1=$cmd"
		# shellcheck disable=SC2086
		$cmd || { bad "$1=$cmd failed (rc=$?)"; return 1; }
	done </tmp/unit-cmds
}

# ExecStart done: wait (60 s at most) until every peer is up
wait_up() {
	local t0 i=0 up
	t0=$(now_cs)
	while :; do
		up=$(odsmctl status --raw | grep -c ' state=up ')
		[ "$up" -eq $((rig_nodes - 1)) ] && break
		i=$((i + 1))
		if [ "$i" -ge 300 ]; then
			odsmctl status
			bad "only $up of $((rig_nodes - 1)) peers up after 60 s"
			return 1
		fi
		sleep 0.2
	done
	mark cluster_up "node=$rig_node peers=$up secs=$(secs_since "$t0")"
}

left() {
	checks=$((checks + 1))
	odsmctl status --raw | grep -q '^nodes=0 transport=none$' ||
		{ bad "still in a cluster after ExecStop:"; odsmctl status --raw; }
}

[ "$rig_nodes" -ge 2 ] || fail "a cluster needs 2 nodes or more (run.sh -n)"
[ -f "$UNIT" ] || fail "no $UNIT: boot this scenario on the image tools/check-packages.sh makes"
# the packaged odsmctl, not a static one of the rig's
PATH=/usr/bin:/usr/sbin:/rig/bin
[ -x /usr/bin/odsmctl ] || fail "no /usr/bin/odsmctl"
# Debian's kmod puts modprobe in /sbin (= /usr/sbin), where the unit calls
# it; the rig's busybox has it in /usr/bin
[ -e /usr/sbin/modprobe ] || ln -s /usr/bin/modprobe /usr/sbin/modprobe
net_up || fail "net_up failed"

# ---- the configuration ----------------------------------------------------
# a bad line: named with its file and line, nothing done (no module yet)
checks=$((checks + 1))
printf 'node_id = 0\nnodes = %s\nkey_file = /etc/odsm/cluster.key\n# the next line is wrong\ntransport = udp\n' \
	"$(cluster_addrs)" >/tmp/bad.conf
out=$(odsmctl up --config /tmp/bad.conf 2>&1)
rc=$?
echo "$out"
[ "$rc" = 2 ] && [ "$out" = "odsmctl up: /tmp/bad.conf:5: transport = udp: want tcp or rdma" ] ||
	bad "a bad line: rc=$rc, not the message that names /tmp/bad.conf:5"
checks=$((checks + 1))
odsmctl up --check --config /usr/share/doc/odsm-tools/examples/cluster.conf ||
	bad "the shipped example cluster.conf does not read"

mkdir -p /etc/odsm
cluster_key /etc/odsm/cluster.key || fail "cannot write the cluster key"
{
	echo "# node $rig_node of $rig_nodes, written by the rig's boot-cluster scenario"
	case $rig_node in
	0)
		echo "node_id = 0"
		echo "nodes = $(cluster_addrs)"
		;;
	1)
		echo "node_id = auto"
		k=0
		while [ "$k" -lt "$rig_nodes" ]; do
			echo "nodes = $(node_ip "$k")   # node $k"
			k=$((k + 1))
		done
		;;
	*)
		echo "node_id = auto"
		echo "hosts_file = hosts"
		k=0
		while [ "$k" -lt "$rig_nodes" ]; do
			echo "$(node_ip "$k"):7100 node-$k"
			k=$((k + 1))
		done >/etc/odsm/hosts
		;;
	esac
	echo "transport = tcp"
	echo "key_file = cluster.key"
	[ -z "${rig_heartbeat_ms:-}" ] || echo "heartbeat_ms = $rig_heartbeat_ms"
	[ -z "${rig_timeout_ms:-}" ] || echo "timeout_ms = $rig_timeout_ms"
	echo "cache_budget_bytes = 32M"
	echo "readahead_pages = 8"
} >"$CONF"
sed 's/^/  | /' "$CONF"

# ---- start, as systemd would ------------------------------------------------
cond=$(sed -n 's/^ConditionPathExists=//p' "$UNIT")
[ -n "$cond" ] && [ -e "$cond" ] || fail "ConditionPathExists=$cond does not hold"
unit_run ExecStartPre || fail "the unit's ExecStartPre failed"
# the module modprobe found is the one DKMS built and installed
checks=$((checks + 1))
grep -q "^updates/dkms/odsm.ko:" "/lib/modules/$(uname -r)/modules.dep" && [ -d /sys/module/odsm ] ||
	bad "odsm is not the DKMS-built module in updates/dkms"
unit_run ExecStart || fail "the unit's ExecStart failed"
checks=$((checks + 1))
[ "$(cat /sys/kernel/odsm/cache_budget_bytes)" = 33554432 ] &&
	[ "$(cat /sys/kernel/odsm/readahead_pages)" = 8 ] ||
	bad "the knobs of $CONF were not written"
checks=$((checks + 1))
wait_up || fail "the cluster did not come up"
odsmctl status
barrier || fail "barrier before the example"

# ---- a program, built against the installed libodsm ---------------------------
checks=$((checks + 1))
echo "\$ pkgcfg-odsm-coherence ${rig_rounds:-2}"
pkgcfg-odsm-coherence "${rig_rounds:-2}" || bad "pkgcfg-odsm-coherence failed"
barrier 300 || fail "barrier after the example"

# ---- stop, restart, stop -------------------------------------------------------
unit_run ExecStop || fail "the unit's ExecStop failed"
left
barrier || fail "barrier after stopping"
unit_run ExecStart || fail "the unit's ExecStart failed on a restart"
checks=$((checks + 1))
wait_up || fail "the cluster did not come up again"
barrier || fail "barrier after restarting"
unit_run ExecStop || fail "the unit's ExecStop failed"
left
# stopping twice, or with the module gone, is no error
checks=$((checks + 1))
unit_run ExecStop || bad "a second ExecStop failed"
barrier || fail "barrier before unloading"
checks=$((checks + 1))
rmmod odsm || bad "rmmod odsm failed"
unit_run ExecStop || bad "ExecStop with the module unloaded failed"

mark boot_cluster "checks=$checks failed=$failed"
[ "$failed" -eq 0 ]
