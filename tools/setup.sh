#!/bin/bash
# Install every Debian package odsm needs to build, test and demo, on a bare
# Debian 12 (bookworm) machine.  Idempotent: when everything is present it only
# checks and returns in about a second.  Run as root (or via sudo).
#
# Usage: setup.sh [--debug-kernel]
#   --debug-kernel  also what building the rig's debug kernel needs
#                   (tools/debug-kernel/build.sh, make check-debug); kept out
#                   of the default so that `make setup` installs no more than
#                   the other targets use
#
# Kernels: Debian bookworm's 6.1 (linux-image-amd64) and bookworm-backports'
# 6.12.  The ABI names move with Debian's updates, so nothing here hard-codes
# them: the newest of each series is resolved from the package index.
set -euo pipefail

# Kernel series the project supports; tools/rig/kernels.sh lists the installed ones.
SERIES="6.1 6.12"

PKGS=(
	build-essential make gcc bc bison flex kmod cpio xz-utils zstd
	pkg-config dwarves libelf-dev
	qemu-system-x86 busybox-static vde2 iproute2
	rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest
	libibverbs-dev librdmacm-dev
	linux-source-6.1
	spin
	# make bench-plots (tools/bench-plots.sh)
	gnuplot-nox
	# make deb, and make check's packages suite
	dkms dh-dkms debhelper lintian
)
# tools/debug-kernel/build.sh: a kernel from linux-source-6.1 (already above:
# checkpatch comes from it) whose certs/ tools link against OpenSSL
DEBUG_PKGS=(linux-source-6.1 libssl-dev)

case ${1:-} in
"") ;;
--debug-kernel) PKGS+=("${DEBUG_PKGS[@]}") ;;
*) echo "usage: $0 [--debug-kernel]" >&2; exit 2 ;;
esac

have_all() {
	local p
	for p in "${PKGS[@]}"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
			grep -q '^install ok installed$' || return 1
	done
	for s in $SERIES; do
		ls -d /usr/src/linux-headers-"$s".*-amd64 >/dev/null 2>&1 || return 1
		ls /boot/vmlinuz-"$s".*-amd64 >/dev/null 2>&1 || return 1
	done
	return 0
}

if have_all; then
	echo "setup: all packages present"
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "setup: packages are missing; run as root (sudo make setup)" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
APT_OPTS=(-y -q --no-install-recommends -o Dpkg::Use-Pty=0)

# bookworm-backports, from the same mirror as the main suite
# (a line that is no comment, of a file apt reads: not a .save copy)
if ! grep -qs '^[^#]*bookworm-backports' /etc/apt/sources.list \
	/etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; then
	uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
	[ -n "$uri" ] || uri=$(awk '/^deb .*bookworm /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
	[ -n "$uri" ] || uri=http://deb.debian.org/debian
	echo "deb $uri bookworm-backports main" >/etc/apt/sources.list.d/odsm-bookworm-backports.list
fi

echo "setup: apt-get update"
# Third-party sources configured on the machine may be unreachable; that must
# not stop us as long as Debian's own index was fetched.
# (the log in a file of our own, in $TMPDIR: a fixed name is anyone's to plant)
aptlog=$(mktemp -t odsm-apt-update.XXXXXX)
apt-get update -q -o Dpkg::Use-Pty=0 >"$aptlog" 2>&1 ||
	echo "setup: apt-get update reported errors (see $aptlog); continuing"

# Resolve the newest kernel ABI of each series, e.g. 6.1.0-37-amd64, and the
# package of its image: "ABI PACKAGE".  The index may name an image that no
# suite holds yet (debian-security publishes linux-image-X-amd64-unsigned and
# the headers before the signed linux-image-X-amd64 that refers to it), and
# apt-cache show succeeds for such a name: madison lists only real packages.
# The newest ABI with a signed image is taken; failing that, the newest with
# an unsigned one (the same vmlinuz, without the signature).
abi_of() {
	local abi signed="" unsigned=""

	while read -r abi; do
		if [ -n "$(apt-cache madison "linux-image-$abi" 2>/dev/null)" ]; then
			signed="$abi linux-image-$abi"
		elif [ -n "$(apt-cache madison "linux-image-$abi-unsigned" 2>/dev/null)" ]; then
			unsigned="$abi linux-image-$abi-unsigned"
		fi
	done < <(apt-cache search --names-only "^linux-headers-$1\.[0-9]" | awk '{print $1}' |
		grep -E -- '-amd64$' | grep -vE -- '-(cloud|rt)-amd64$' |
		sed 's/^linux-headers-//' | sort -V)
	echo "${signed:-$unsigned}"
}
KPKGS=()
for s in $SERIES; do
	read -r abi image <<<"$(abi_of "$s")"
	[ -n "$abi" ] || { echo "setup: no linux-headers and linux-image for kernel $s in the index" >&2; exit 1; }
	KPKGS+=("$image" "linux-headers-$abi")
done

echo "setup: installing ${#PKGS[@]} packages and kernels: ${KPKGS[*]}"
apt-get install "${APT_OPTS[@]}" "${PKGS[@]}" "${KPKGS[@]}"
have_all || { echo "setup: packages still missing after install" >&2; exit 1; }
echo "setup: done"
