#!/bin/bash
# make demo: boot a guest of the newest supported kernel, load odsm and run
# the example application (tools/examples/odsm-demo.c): it builds a binary
# search tree in the global heap through libodsm, walks it from a second
# process, updates it through mutable borrows and frees it.
set -euo pipefail
cd "$(dirname "$0")/.."
KVER=${KVER:-$(tools/rig/kernels.sh --newest)}
img=build/vm/demo-$KVER.cpio.gz
mkdir -p build/vm build/logs
echo "demo: building odsm for $KVER and a guest image"
tools/vm-image.sh "$KVER" "$img"
echo "demo: booting a QEMU guest (software emulation: ~10 s)"
rc=0
tools/rig/run.sh -k "$KVER" -n 1 -s demo -i "$img" -l build/logs >build/logs/demo-run.txt 2>&1 || rc=$?
# the guest's own words, between the markers
tr -d '\r' <"build/logs/demo-$KVER-node0.log" |
	sed -n '/RIG_MARK demo_begin/,/RIG_MARK demo_end/p' | grep -v 'RIG_MARK' || true
tail -n 1 build/logs/demo-run.txt
exit $rc
