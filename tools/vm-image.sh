#!/bin/bash
# Build the module for one kernel and an initramfs holding it with every
# program the guests run (tests, odsmctl, examples, benchmarks).
#
# Usage: tools/vm-image.sh KVER OUT.cpio.gz
set -euo pipefail
cd "$(dirname "$0")/.."
KVER=${1:?usage: vm-image.sh KVER OUT}
OUT=${2:?usage: vm-image.sh KVER OUT}

make -s module KVER="$KVER"
make -s lib tools tests
bins=()
for b in build/bin/* build/tests/vm/* build/tests/cluster/* build/tests/rdma/*; do
	[ -x "$b" ] && bins+=(-b "$b")
done
tools/rig/mkinitramfs.sh -k "$KVER" -o "$OUT" \
	-x "build/kmod/$KVER/kmod/odsm.ko" "${bins[@]}" >/dev/null
