#!/bin/bash
# Build the rig's initramfs for booting a Debian kernel under QEMU/TCG:
# busybox-static in a merged-/usr layout, iproute2 (ip, rdma), libibverbs /
# librdmacm utilities with the rxe provider, perftest binaries when installed,
# the kernel's RDMA + virtio modules (decompressed, with dependencies), the
# project's out-of-tree modules, test programs and the scenario scripts.
#
# Usage: mkinitramfs.sh -k KVER -o OUT.cpio.gz [-x module.ko]... [-b program]...
#                       [-m kmodule]... [-d scenario_dir] [-r root_dir]
#   -k KVER   kernel release (see kernels.sh); its modules come from /lib/modules/KVER
#             (a debug kernel's: from its cache, kernels.sh --root KVER)
#   -o OUT    output file, a newc cpio archive; gzip'd unless OUT ends in .cpio
#             (an uncompressed one boots ~0.3 s faster under TCG)
#   -x KO     out-of-tree module, goes to /lib/modules/KVER/extra (+ depmod, so
#             `modprobe NAME` works in the guest); the in-tree modules it
#             depends on are shipped too.  Its vermagic must match KVER.
#   -b PROG   program copied to /rig/bin, with the shared libraries it needs
#   -m MOD    extra in-tree kernel module to ship (with its dependencies)
#   -d DIR    scenario directory copied to /rig/scenarios (default: scenarios/
#             next to this script)
#   -r DIR    a tree copied over the image's root as it is (packages unpacked
#             there, say): its modules in lib/modules/KVER are shipped (with
#             the in-tree modules they need), decompressed and indexed like
#             the rest, and the libraries its programs need are copied too
# Guest side: guest/init becomes /init, guest/lib.sh becomes /rig/lib.sh.
set -euo pipefail

RIG=$(cd "$(dirname "$0")" && pwd)
KVER="" OUT="" SCEN=$RIG/scenarios ROOT=""
EXTRA_KO=() PROGS=() USER_MODS=()
MODS=(rdma_rxe rdma_cm rdma_ucm ib_uverbs ib_cm iw_cm crc32_generic crc32_pclmul virtio_net virtio_pci
	sch_netem)
BINS=(/usr/bin/ip /usr/bin/rdma /usr/sbin/tc
	/usr/bin/rping /usr/bin/ucmatose /usr/bin/udaddy /usr/bin/rdma_server /usr/bin/rdma_client
	/usr/bin/ibv_devices /usr/bin/ibv_devinfo /usr/bin/ibv_rc_pingpong /usr/bin/ibv_ud_pingpong)
PERFTEST=(ib_read_lat ib_write_lat ib_read_bw ib_atomic_lat)
LIBDIR=/usr/lib/x86_64-linux-gnu

usage() { sed -n '2,23s/^# \{0,1\}//p' "$0"; exit "${1:-2}"; }
die() { echo "mkinitramfs: $*" >&2; exit 1; }
warn() { echo "mkinitramfs: warning: $*" >&2; }

while getopts "k:o:x:b:m:d:r:h" opt; do
	case $opt in
	k) KVER=$OPTARG ;;
	o) OUT=$OPTARG ;;
	x) EXTRA_KO+=("$(realpath -e "$OPTARG")") ;;
	b) PROGS+=("$(realpath -e "$OPTARG")") ;;
	m) USER_MODS+=("$OPTARG") ;;
	d) SCEN=$(realpath -e "$OPTARG") ;;
	r) ROOT=$(realpath -e "$OPTARG") ;;
	h) usage 0 ;;
	*) usage ;;
	esac
done
[ $OPTIND -gt $# ] || usage
{ [ -n "$KVER" ] && [ -n "$OUT" ]; } || usage
MROOT=$("$RIG/kernels.sh" --root "$KVER") || die "no kernel $KVER (kernels.sh)"
MODDIR=${MROOT%/}/lib/modules/$KVER
[ -d "$MODDIR/kernel" ] || die "no modules for $KVER in $MODDIR"
[ -d "$SCEN" ] || die "no scenario directory $SCEN"
for ko in "${EXTRA_KO[@]}"; do
	vm=$(modinfo -F vermagic "$ko" | cut -d' ' -f1)
	[ "$vm" = "$KVER" ] || die "$ko was built for '$vm', not $KVER"
done

ST=$(mktemp -d "${TMPDIR:-/tmp}/rig-initramfs.XXXXXX")
trap 'rm -rf "$ST" "$OUT.tmp"' EXIT

# merged-/usr layout like Debian 12
mkdir -p "$ST"/{usr/bin,usr/sbin,usr/lib,usr/lib64,etc,proc,sys,dev,tmp,run,root,mnt,var} "$ST"/rig/bin
ln -s usr/bin "$ST/bin"
ln -s usr/sbin "$ST/sbin"
ln -s usr/lib "$ST/lib"
ln -s usr/lib64 "$ST/lib64"
ln -s ../run "$ST/var/run"

# copy a host file to the same resolved path in the stage, keeping the name it
# was referred to by as a symlink
copy_file() {
	local src=$1 real
	real=$(realpath -e "$src")
	mkdir -p "$ST$(dirname "$real")"
	[ -e "$ST$real" ] || cp -a "$real" "$ST$real"
	if [ "$src" != "$real" ] && [ ! -e "$ST$src" ] && [ ! -L "$ST$src" ]; then
		mkdir -p "$ST$(dirname "$src")"
		ln -s "$real" "$ST$src"
	fi
}
copy_libs() { # the shared libraries (and the loader) a binary needs
	local lib
	for lib in $(ldd "$1" 2>/dev/null | grep -o '/[^ ]*' || true); do
		copy_file "$lib"
	done
}

# --- userspace ---------------------------------------------------------------
for b in "${BINS[@]}"; do
	if [ -x "$b" ]; then copy_file "$b" && copy_libs "$b"; else warn "$b missing on host"; fi
done
for p in "${PERFTEST[@]}"; do
	if [ -x "/usr/bin/$p" ]; then
		copy_file "/usr/bin/$p" && copy_libs "/usr/bin/$p"
	else
		warn "/usr/bin/$p missing on host (package perftest)"
	fi
done
# glibc dlopen()s libgcc_s for thread exit/cancel (rping aborts without it)
copy_file "$LIBDIR/libgcc_s.so.1"
# libibverbs dlopen()s its providers: ship rxe + its driver file
rxe=$(compgen -G "$LIBDIR/libibverbs/librxe-rdmav*.so" | head -n 1 || true)
[ -n "$rxe" ] || die "no rxe provider in $LIBDIR/libibverbs (package ibverbs-providers)"
copy_file "$rxe" && copy_libs "$rxe"
mkdir -p "$ST/etc/libibverbs.d"
cp /etc/libibverbs.d/rxe.driver "$ST/etc/libibverbs.d/"

# busybox + applet links; never shadow a real binary copied above
cp /bin/busybox "$ST/usr/bin/busybox"
for a in $(/bin/busybox --list); do
	[ -e "$ST/usr/bin/$a" ] || [ -L "$ST/usr/bin/$a" ] || ln -s busybox "$ST/usr/bin/$a"
done

for b in "${PROGS[@]}"; do
	cp "$b" "$ST/rig/bin/"
	copy_libs "$b"
done

# the root tree: over the merged-/usr layout (its lib/ goes to usr/lib), and
# the host's libraries its programs need (its own ones it brings)
if [ -n "$ROOT" ]; then
	tar -C "$ROOT" -cf - . | tar -C "$ST" -xf - --keep-directory-symlink
	while IFS= read -r -d '' f; do
		copy_libs "$f"	# ldd says nothing of a script
	done < <(find "$ROOT" -type f -perm -u+x -print0)
fi

# --- kernel modules -----------------------------------------------------------
KM=$ST/lib/modules/$KVER
mkdir -p "$KM"
# in-tree modules the -x and the root tree's modules need (their deps come
# with --show-depends)
ROOT_KO=()
if [ -n "$ROOT" ] && [ -d "$ROOT/lib/modules/$KVER" ]; then
	while IFS= read -r -d '' ko; do ROOT_KO+=("$ko"); done \
		< <(find "$ROOT/lib/modules/$KVER" -name '*.ko*' -print0)
fi
for ko in "${EXTRA_KO[@]}" "${ROOT_KO[@]}"; do
	for dep in $(modinfo -F depends "$ko" | tr ',' ' '); do MODS+=("$dep"); done
done
for m in "${MODS[@]}" "${USER_MODS[@]}"; do
	if ! deps=$(modprobe -d "$MROOT" -S "$KVER" --show-depends "$m" 2>/dev/null); then
		[[ " ${USER_MODS[*]} " == *" $m "* ]] && die "module $m not found for $KVER"
		warn "module $m not found for $KVER"
		continue
	fi
	while read -r ko; do
		ko=$(tr -s / <<<"$ko")	# -d / gives //lib/modules/...
		rel=${ko#"$MODDIR"/}
		[ -e "$KM/$rel" ] && continue
		mkdir -p "$KM/$(dirname "$rel")"
		cp "$ko" "$KM/$rel"
	done < <(awk '$1 == "insmod" {print $2}' <<<"$deps")
done
# busybox insmod/modprobe cannot read compressed modules
find "$KM" -name '*.ko.xz' -exec xz -d {} +
find "$KM" -name '*.ko.zst' -exec zstd -q -d --rm {} +
for ko in "${EXTRA_KO[@]}"; do # named after the module, whatever the file's name
	name=$(modinfo -F name "$ko")
	mkdir -p "$KM/extra"
	cp "$ko" "$KM/extra/${name:-$(basename "$ko" .ko)}.ko"
done
cp "$MODDIR"/modules.builtin* "$MODDIR"/modules.order "$KM/"
depmod -b "$ST" "$KVER"

# --- init, helpers, scenarios --------------------------------------------------
install -m 755 "$RIG/guest/init" "$ST/init"
install -m 644 "$RIG/guest/lib.sh" "$ST/rig/lib.sh"
cp -r "$SCEN/." "$ST/rig/scenarios"
chmod -R a+rX "$ST/rig"
echo "root:x:0:0:root:/root:/bin/sh" >"$ST/etc/passwd"
echo "root:x:0:" >"$ST/etc/group"
echo "127.0.0.1 localhost" >"$ST/etc/hosts"

# --- pack ------------------------------------------------------------------------
mkdir -p "$(dirname "$OUT")"
compress() { if [[ $OUT == *.cpio ]]; then cat; else gzip -1 -n; fi; }
(cd "$ST" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet -R 0:0) | compress >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "mkinitramfs: $OUT ($(du -h "$OUT" | cut -f1)) kver=$KVER modules=$(find "$KM" -name '*.ko' | wc -l)" \
	"extra=${#EXTRA_KO[@]} programs=${#PROGS[@]} scenarios=$(find "$ST/rig/scenarios" -name '*.sh' | wc -l)"
