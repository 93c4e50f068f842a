#!/bin/sh
# shellcheck shell=dash disable=SC1091,SC2154
# Judge self-test, must be reported FAIL although it exits 0: makes the kernel
# log a WARNING.  With the rig_warn module in the initramfs (selftest.sh builds
# it) a real WARN_ON(1) fires (rig.report=kasan|lockdep|sleep: that checker's
# report instead, on the debug kernel; rig.report=softlockup with the kernel
# argument watchdog_thresh=1: a soft lockup, on any kernel); without it, a
# level-4 "WARNING:" line is written to /dev/kmsg (the level WARN() prints at).
. /rig/lib.sh
if modprobe rig_warn "report=${rig_report:-warn}" 2>/dev/null; then
	mark warn module "${rig_report:-warn}"
else
	echo "<4>WARNING: CPU: 0 PID: $$ at rig fail-warn scenario (injected)" >/dev/kmsg
	mark warn kmsg
fi
sleep 1
exit 0
