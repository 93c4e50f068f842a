#!/bin/bash
# make bench: run the benchmarks in a guest and print their numbers.
# A benchmark, not a test: it reports, it does not judge.
set -euo pipefail
cd "$(dirname "$0")/.."
KVER=${KVER:-$(tools/rig/kernels.sh --newest)}
img=build/vm/bench-$KVER.cpio.gz
mkdir -p build/vm build/logs
tools/vm-image.sh "$KVER" "$img"
rc=0
tools/rig/run.sh -k "$KVER" -n 1 -s bench -i "$img" -l build/logs -c 1 >build/logs/bench-run.txt 2>&1 || rc=$?
echo "bench: kernel $KVER, one QEMU/TCG guest (emulated CPU: compare ratios, not absolute cycles)"
tr -d '\r' <"build/logs/bench-$KVER-node0.log" | grep '^ODSM_BENCH' | sed 's/^ODSM_BENCH /  /'
exit $rc
