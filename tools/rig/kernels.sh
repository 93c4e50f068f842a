#!/bin/bash
# List the kernels the rig can build for and boot: every KVER that has both
# /boot/vmlinuz-KVER and /lib/modules/KVER/build (installed headers), one per
# line, sorted by version (oldest first).
#
# Usage: kernels.sh [--newest]
#   --newest   print only the newest such KVER
# Exit status 1 if there is none.
set -euo pipefail

newest=0
case ${1:-} in
	"") ;;
	--newest) newest=1 ;;
	-h | --help) sed -n '2,9s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "usage: $0 [--newest]" >&2; exit 2 ;;
esac

list() {
	local img kver
	for img in /boot/vmlinuz-*; do
		[ -e "$img" ] || continue
		kver=${img#/boot/vmlinuz-}
		# build is a symlink into /usr/src; -d follows it, so a dangling one is skipped
		[ -d "/lib/modules/$kver/build" ] && echo "$kver"
	done | sort -V
}

kvers=$(list)
[ -n "$kvers" ] || { echo "kernels.sh: no kernel with both image and headers installed" >&2; exit 1; }
if [ "$newest" = 1 ]; then
	tail -n 1 <<<"$kvers"
else
	echo "$kvers"
fi
