#!/bin/bash
# Build (once) the rig's debug kernel: Debian's linux-source-6.1 with KASAN,
# lockdep (PROVE_LOCKING), DEBUG_ATOMIC_SLEEP, KFENCE, DEBUG_LIST and hung-task
# detection, configured from x86_64 defconfig + kvm_guest.config + the
# fragment debug.config next to this script (not Debian's full config: the
# build runs on 2 cores).
#
# The kernel is cached outside the tree, so every clone on the machine reuses
# it:  CACHE/KVER/  (CACHE: $ODSM_DEBUG_KERNEL_CACHE, default
# /var/cache/odsm/debug-kernel) where KVER = <kernel version>-dbg-<hash> and
# <hash> covers debug.config's settings (not its comments), the recipe
# below, the linux-source-6.1 package version and the compiler: change any
# of them and a new kernel is built.
#   CACHE/KVER/bzImage          the kernel run.sh boots
#   CACHE/KVER/vmlinux          the same as an ELF with its symbols (there is no
#                               debug info: the build is faster without)
#   CACHE/KVER/config           its .config
#   CACHE/KVER/obj/             the build tree: KDIR for out-of-tree modules
#   CACHE/KVER/root/lib/modules/KVER/   its modules, as modules_install left them
#   CACHE/KVER/build.log        the full build output
# A kernel is complete once CACHE/KVER/done exists; -f removes CACHE/KVER and
# builds again (so does `rm -rf CACHE/KVER`).
#
# Usage: build.sh [-f] [-q]     build if needed; prints KVER as the last line
#        build.sh --kver        print the KVER the current inputs give, build nothing
#   -f   force a rebuild        -q   no progress lines
# Needs the linux-source-6.1 package (tools/setup.sh --debug-kernel installs it).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${ODSM_DEBUG_KERNEL_CACHE:-/var/cache/odsm/debug-kernel}
TARBALL=/usr/src/linux-source-6.1.tar.xz
FRAG=$HERE/debug.config
# The recipe: what the fragment is merged over.  Part of the hash.
BASE_TARGETS=(defconfig kvm_guest.config)
FORCE=0 QUIET=0 ONLY_KVER=0

usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit "${1:-2}"; }
die() { echo "debug-kernel: $*" >&2; exit 1; }
say() { [ "$QUIET" = 1 ] || echo "debug-kernel: $*" >&2; }

for a in "$@"; do
	case $a in
	-f) FORCE=1 ;;
	-q) QUIET=1 ;;
	--kver) ONLY_KVER=1 ;;
	-h | --help) usage 0 ;;
	*) usage ;;
	esac
done

[ -f "$TARBALL" ] || die "no $TARBALL: run 'tools/setup.sh --debug-kernel' (as root)"
pkgver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null) ||
	die "package linux-source-6.1 is not installed"
ccver=$(gcc -dumpfullversion)
# the settings, not the comments, of the fragment
hash=$({ grep '^CONFIG_' "$FRAG"; echo "base=${BASE_TARGETS[*]} src=$pkgver gcc=$ccver"; } |
	sha256sum | cut -c1-10)
# the kernel version of the source: VERSION.PATCHLEVEL.SUBLEVEL of its Makefile
# (the package version, e.g. 6.1.192-2, is in the hash)
kbase=${pkgver%%-*}
KVER=$kbase-dbg-$hash
if [ "$ONLY_KVER" = 1 ]; then
	echo "$KVER"
	exit 0
fi

DIR=$CACHE/$KVER
mkdir -p "$CACHE"
# two clones building at once would build the same tree twice over each other
exec 8>"$CACHE/.lock-$KVER"
if ! flock -n 8; then
	say "waiting for another build of $KVER"
	flock 8
fi
[ "$FORCE" = 0 ] || rm -rf "$DIR"
if [ -e "$DIR/done" ]; then
	say "$KVER is built ($DIR)"
	echo "$KVER"
	exit 0
fi

NICE=(nice -n 19 ionice -c3)
JOBS=${JOBS:-2}
SRC=$DIR/src OBJ=$DIR/obj LOG=$DIR/build.log
rm -rf "$DIR"
mkdir -p "$SRC" "$OBJ"
say "building $KVER in $DIR (log: $LOG)"
say "unpacking $TARBALL"
"${NICE[@]}" tar -xJf "$TARBALL" -C "$SRC" --strip-components=1

kmake() { "${NICE[@]}" make -C "$SRC" O="$OBJ" -j"$JOBS" "$@"; }

say "configuring: ${BASE_TARGETS[*]} + $(basename "$FRAG")"
{
	kmake "${BASE_TARGETS[@]}"
	"$SRC/scripts/kconfig/merge_config.sh" -m -O "$OBJ" "$OBJ/.config" "$FRAG"
	"$SRC/scripts/config" --file "$OBJ/.config" --set-str LOCALVERSION "-dbg-$hash"
	kmake olddefconfig
} >>"$LOG" 2>&1 || { tail -n 30 "$LOG" >&2; die "configuration failed"; }
# Kconfig drops a setting whose dependencies are not met without a word on
# the exit status: every line of the fragment must have survived
missing=0
while IFS= read -r line; do
	case $line in
	CONFIG_*=n)
		opt=${line%%=*}
		if grep -qE "^$opt=[ym]" "$OBJ/.config"; then
			echo "debug-kernel: $opt is set, the fragment wants it off" >&2
			missing=1
		fi
		;;
	CONFIG_*=*)
		grep -qxF "$line" "$OBJ/.config" || {
			echo "debug-kernel: $line did not survive: $(grep -E "^(# )?${line%%=*}[= ]" "$OBJ/.config" || echo unset)" >&2
			missing=1
		}
		;;
	esac
done <"$FRAG"
[ "$missing" = 0 ] || die "the fragment does not apply to this source (see above)"

# Progress: a line a minute with the files compiled so far, against the count
# of the last complete build of any KVER in the cache (when there is one)
expect=$(cat "$CACHE"/*/files 2>/dev/null | sort -n | tail -n 1 || true)
start=$(date +%s)
progress() {
	local n last
	while sleep 60; do
		n=$(grep -cE '^  (CC|AS|LD|AR)( \[M\])? ' "$LOG" || true)
		last=$(grep -E '^  (CC|AS|LD|AR)( \[M\])? ' "$LOG" | tail -n 1 | awk '{print $NF}')
		echo "debug-kernel: $(( ($(date +%s) - start) / 60 )) min, $n files built${expect:+ of ~$expect}, at $last" >&2
	done
}
say "compiling bzImage and modules (nice 19, -j$JOBS); a line a minute"
if [ "$QUIET" = 0 ]; then
	progress &
	PROG=$!
	trap 'kill "$PROG" 2>/dev/null || true' EXIT
fi
kmake bzImage modules >>"$LOG" 2>&1 || { tail -n 40 "$LOG" >&2; die "build failed (full log: $LOG)"; }
kmake INSTALL_MOD_PATH="$DIR/root" INSTALL_MOD_STRIP=1 DEPMOD=/sbin/depmod modules_install \
	>>"$LOG" 2>&1 || { tail -n 20 "$LOG" >&2; die "modules_install failed"; }
[ -z "${PROG:-}" ] || kill "$PROG" 2>/dev/null || true

rel=$(cat "$OBJ/include/config/kernel.release")
[ "$rel" = "$KVER" ] || die "the built kernel calls itself '$rel', not $KVER"
cp "$OBJ/vmlinux" "$DIR/vmlinux"
cp "$OBJ/arch/x86/boot/bzImage" "$DIR/bzImage"
cp "$OBJ/.config" "$DIR/config"
# the build link modules_install made points at OBJ already; make sure
ln -sfn "$OBJ" "$DIR/root/lib/modules/$KVER/build"
grep -cE '^  (CC|AS|LD|AR)( \[M\])? ' "$LOG" >"$DIR/files" || true
# the source is only needed through OBJ's Makefile and headers: keep it
touch "$DIR/done"
say "built $KVER in $(( ($(date +%s) - start) / 60 )) min: $DIR"
echo "$KVER"
