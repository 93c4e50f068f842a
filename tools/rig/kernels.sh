#!/bin/bash
# List the kernels the rig can build for and boot: every KVER that has both
# /boot/vmlinuz-KVER and /lib/modules/KVER/build (installed headers), one per
# line, sorted by version (oldest first).  The debug kernels that
# tools/debug-kernel/build.sh keeps in its cache are not in this list (the
# suites of `make check` run on Debian's kernels); they are KVERs like the
# others for every other mode, which say where a kernel's parts are.
#
# Usage: kernels.sh [--newest]
#        kernels.sh --debug
#        kernels.sh --image|--root|--kdir|--config KVER
#   --newest   print only the newest installed KVER
#   --debug    the debug kernels built in the cache, oldest first
#   --image    the bzImage to boot: /boot/vmlinuz-KVER, or the cache's
#   --root     the directory that holds lib/modules/KVER: / or the cache's
#   --kdir     the build tree for out-of-tree modules
#   --config   the kernel's .config
# Exit status 1 if there is no such kernel (or part).
# The cache is $ODSM_DEBUG_KERNEL_CACHE, default /var/cache/odsm/debug-kernel.
set -euo pipefail

DCACHE=${ODSM_DEBUG_KERNEL_CACHE:-/var/cache/odsm/debug-kernel}

usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit "${1:-2}"; }

list() {
	local img kver
	for img in /boot/vmlinuz-*; do
		[ -e "$img" ] || continue
		kver=${img#/boot/vmlinuz-}
		# build is a symlink into /usr/src; -d follows it, so a dangling one is skipped
		[ -d "/lib/modules/$kver/build" ] && echo "$kver"
	done | sort -V
}

list_debug() {
	local d
	for d in "$DCACHE"/*/done; do
		[ -e "$d" ] || continue
		d=${d%/done}
		echo "${d##*/}"
	done | sort -V
}

# a part of KVER: Debian's path when that exists, else the debug kernel's
part() { # KVER PART
	local k=$1 dir=$DCACHE/$1 p=""
	case $k in "" | */* | .*) echo "kernels.sh: bad KVER '$k'" >&2; exit 2 ;; esac
	if [ -e "/boot/vmlinuz-$k" ]; then
		case $2 in
		image) p=/boot/vmlinuz-$k ;;
		root) p=/ ;;
		kdir) p=/lib/modules/$k/build ;;
		config) p=/boot/config-$k ;;
		esac
	elif [ -e "$dir/done" ]; then
		case $2 in
		image) p=$dir/bzImage ;;
		root) p=$dir/root ;;
		kdir) p=$dir/obj ;;
		config) p=$dir/config ;;
		esac
	fi
	[ -n "$p" ] && [ -e "$p" ] || exit 1
	echo "$p"
}

case ${1:-} in
"" | --newest) ;;
--debug) list_debug; exit 0 ;;
--image | --root | --kdir | --config)
	[ $# = 2 ] || usage
	part "$2" "${1#--}"
	exit 0
	;;
-h | --help) usage 0 ;;
*) usage ;;
esac

kvers=$(list)
[ -n "$kvers" ] || { echo "kernels.sh: no kernel with both image and headers installed" >&2; exit 1; }
if [ "${1:-}" = --newest ]; then
	tail -n 1 <<<"$kvers"
else
	echo "$kvers"
fi
