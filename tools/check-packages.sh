#!/bin/bash
# make check's packages suite: the Debian packages are built, look sound,
# install, and work from the installed files alone, so that they cannot rot
# unseen.  One line per check, "ok: ..." or "not ok: ...":
#
#   deb       make deb builds odsm-dkms, libodsm1, libodsm-dev, odsm-tools
#   lintian   no error (warnings and their tags listed in the log)
#   files     unpacked into a root of their own (build/pkgtest/root, as
#             dpkg would, without maintainer scripts): every file in its
#             place, the library's soname and link, odsmctl linked with it,
#             the systemd unit verified
#   symbols   the packaged library exports what debian/libodsm1.symbols says
#   dkms      DKMS builds odsm.ko for KVER from the installed
#             /usr/src/odsm-VERSION, in trees of its own (nothing registered
#             on this machine), and installs it in the root's
#             lib/modules/KVER/updates/dkms
#   pkg-config  an example builds against the installed libodsm through
#             pkg-config, linked with libodsm.so.1 and, --static, libodsm.a
#   guests    the root as a guest image: 3 guests over TCP run the unit's
#             commands from /etc/odsm/cluster.conf, form the cluster with
#             the DKMS-built module, run the example, and go down
#             (tools/rig/scenarios/boot-cluster.sh)
#
#   tools/check-packages.sh [KVER]     (default: the newest installed kernel)
#
# Logs in build/logs/packages-*.  The postinst scripts are not run: they
# would register the module with this machine's DKMS and add a group here;
# what they do instead is done into the root (dkms) or left to the guests.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
K=${1:-$(tools/rig/kernels.sh --newest)}
LOGS=build/logs
OUT=$PWD/build/pkgtest
R=$OUT/root
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
VERSION=$(make -s --no-print-directory print-version)
mkdir -p "$LOGS"
status=0

ok() { echo "ok: $*"; }
bad() { echo "not ok: $*"; status=1; }
# the last lines of a log, then "not ok"
bad_log() { tail -n 30 "$1" | sed 's/^/  /'; shift; bad "$@"; }

# ---- deb ------------------------------------------------------------------------
if ! make -s deb >"$LOGS/packages-deb.txt" 2>&1; then
	bad_log "$LOGS/packages-deb.txt" "make deb"
	exit 1
fi
debs=()
for p in odsm-dkms libodsm1 libodsm-dev odsm-tools; do
	d=$(compgen -G "build/deb/${p}_${VERSION}_*.deb" | head -n 1)
	[ -n "$d" ] || { bad "make deb made no $p package"; exit 1; }
	debs+=("$d")
done
ok "make deb: ${debs[*]##*/}"

# ---- lintian ----------------------------------------------------------------------
lintian --fail-on error --pedantic build/deb/*.changes >"$LOGS/packages-lintian.txt" 2>&1
rc=$?
tags=$(awk '/^[WIP]: / { print $3 }' "$LOGS/packages-lintian.txt" | sort | uniq -c |
	awk '{ printf "%s%s x%s", sep, $2, $1; sep = ", " }')
if [ "$rc" = 0 ] && ! grep -q '^E: ' "$LOGS/packages-lintian.txt"; then
	ok "lintian: no error${tags:+ (other tags: $tags)}"
else
	grep '^E: ' "$LOGS/packages-lintian.txt" | sed 's/^/  /'
	bad "lintian (see $LOGS/packages-lintian.txt)"
fi

# ---- files ------------------------------------------------------------------------
rm -rf "$OUT"
mkdir -p "$R" "$OUT/bin"
for d in "${debs[@]}"; do
	dpkg-deb -x "$d" "$R" || bad "dpkg-deb -x $d"
done
missing=()
for f in usr/src/odsm-$VERSION/dkms.conf usr/src/odsm-$VERSION/Kbuild \
	 usr/src/odsm-$VERSION/kmod/Kbuild usr/src/odsm-$VERSION/uapi/linux/odsm.h \
	 usr/lib/$MA/libodsm.so.1 usr/lib/$MA/libodsm.so usr/lib/$MA/libodsm.a \
	 usr/lib/$MA/pkgconfig/odsm.pc usr/include/odsm.h usr/include/linux/odsm.h \
	 usr/bin/odsmctl usr/bin/odsm-bench usr/bin/odsm-demo \
	 lib/systemd/system/odsm.service lib/udev/rules.d/70-odsm.rules \
	 usr/share/doc/odsm-tools/examples/cluster.conf \
	 usr/share/doc/libodsm-dev/examples/odsm-coherence.c etc/odsm; do
	[ -e "$R/$f" ] || missing+=("$f")
done
grep -q "^PACKAGE_VERSION=\"$VERSION\"$" "$R/usr/src/odsm-$VERSION/dkms.conf" ||
	missing+=("PACKAGE_VERSION=\"$VERSION\" in dkms.conf")
[ "$(readlink "$R/usr/lib/$MA/libodsm.so")" = libodsm.so.1 ] || missing+=("libodsm.so -> libodsm.so.1")
readelf -d "$R/usr/lib/$MA/libodsm.so.1" | grep -q 'SONAME.*\[libodsm\.so\.1\]' ||
	missing+=("the soname libodsm.so.1")
readelf -d "$R/usr/bin/odsmctl" 2>/dev/null | grep -q 'NEEDED.*\[libodsm\.so\.1\]' ||
	missing+=("odsmctl linked with libodsm.so.1")
# the unit: only the installed programs are missing on this machine
systemd-analyze verify "$R/lib/systemd/system/odsm.service" >"$LOGS/packages-unit.txt" 2>&1
if grep -v "Command /usr/bin/odsmctl is not executable" "$LOGS/packages-unit.txt" | grep -q .; then
	missing+=("a unit systemd-analyze verify accepts: $(tr '\n' ' ' <"$LOGS/packages-unit.txt")")
fi
if [ ${#missing[@]} = 0 ]; then
	ok "installed files: $(find "$R" -type f | wc -l) files in place, libodsm.so.1 and its link, odsmctl linked with it, the unit verified"
else
	printf '  missing or wrong: %s\n' "${missing[@]}"
	bad "installed files"
fi

# ---- symbols ----------------------------------------------------------------------
if tools/check-symbols.sh "$R/usr/lib/$MA/libodsm.so.1" >"$LOGS/packages-symbols.txt" 2>&1; then
	ok "the packaged libodsm.so.1 exports what debian/libodsm1.symbols says"
else
	bad_log "$LOGS/packages-symbols.txt" "symbols of the packaged libodsm.so.1"
fi

# ---- dkms -------------------------------------------------------------------------
# Trees of its own; not signed (the rig's guests load unsigned modules, and
# signing would make a key in this machine's /var/lib/dkms)
dkms_in_root() {
	sign_file=/nonexistent nice -n 19 ionice -c3 dkms "$@" -m odsm -v "$VERSION" --sourcetree "$R/usr/src" \
		--dkmstree "$OUT/dkms" --installtree "$R/lib/modules"
}
# the kernel is "installed" in the root: dkms installs only into one
mkdir -p "$OUT/dkms" "$R/lib/modules/$K"
ko=$R/lib/modules/$K/updates/dkms/odsm.ko
if { dkms_in_root add && dkms_in_root build -k "$K" &&
     dkms_in_root install -k "$K" --no-depmod; } >"$LOGS/packages-dkms.txt" 2>&1 &&
   { [ ! -f "$ko.xz" ] || xz -d "$ko.xz"; } && [ -f "$ko" ] &&
   [ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$K" ]; then
	ok "dkms built and installed odsm.ko for $K from the odsm-dkms files"
else
	bad_log "$LOGS/packages-dkms.txt" "dkms build of odsm-dkms for $K"
fi

# ---- pkg-config -------------------------------------------------------------------
# pkg-config as on a machine with the packages installed, but in the root:
# its paths prefixed with it (and kept, although they are system paths)
pc() {
	PKG_CONFIG_SYSROOT_DIR=$R PKG_CONFIG_LIBDIR=$R/usr/lib/$MA/pkgconfig \
		PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1 pkg-config "$@"
}
ex=$R/usr/share/doc/libodsm-dev/examples/odsm-coherence.c
# shellcheck disable=SC2046 # pkg-config's words are meant to be split
(
	set -x
	[ "$(pc --modversion odsm)" = "$VERSION" ] &&
	cc -O2 -Wall -Werror -o "$OUT/bin/pkgcfg-odsm-coherence" "$ex" $(pc --cflags --libs odsm) &&
	readelf -d "$OUT/bin/pkgcfg-odsm-coherence" | grep -q 'NEEDED.*\[libodsm\.so\.1\]' &&
	cc -O2 -Wall -Werror -static -o "$OUT/bin/pkgcfg-odsm-coherence-static" "$ex" \
		$(pc --static --cflags --libs odsm)
) >"$LOGS/packages-pkgconfig.txt" 2>&1
if [ $? = 0 ]; then
	ok "pkg-config odsm $VERSION: an example builds with the installed libodsm.so.1 and, static, libodsm.a"
else
	bad_log "$LOGS/packages-pkgconfig.txt" "an example built with pkg-config odsm"
fi

# ---- guests -----------------------------------------------------------------------
if [ "$status" != 0 ]; then
	bad "guests: not run (a check above failed)"
	exit 1
fi
img=$OUT/image-$K.cpio.gz
if ! tools/rig/mkinitramfs.sh -k "$K" -o "$img" -r "$R" -b "$OUT/bin/pkgcfg-odsm-coherence" \
	>"$LOGS/packages-image.txt" 2>&1; then
	bad_log "$LOGS/packages-image.txt" "the packages' guest image"
	exit 1
fi
tools/rig/run.sh -k "$K" -n 3 -s boot-cluster -i "$img" -l "$LOGS" -t 600 \
	-a "rig.heartbeat_ms=250 rig.timeout_ms=5000" >"$LOGS/packages-run.txt" 2>&1
rc=$?
grep -E 'RIG_MARK boot_cluster|^\[node[0-9]+\] (FAIL|boot-cluster):' "$LOGS/packages-run.txt" | sed 's/^/  /'
if [ "$rc" = 0 ]; then
	ok "3 guests from the packages: odsm.service's commands formed the cluster from cluster.conf, the example ran, the nodes went down"
else
	grep -E '^\[node[0-9]+\] FAIL: ' "$LOGS/packages-run.txt"
	tail -n 60 "$LOGS/packages-run.txt"
	bad "boot-cluster on 3 guests (see $LOGS/boot-cluster-$K-node*.log)"
fi
exit "$status"
