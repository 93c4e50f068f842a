#!/bin/bash
# make deb: the Debian packages of odsm, built from a copy of this tree by
# dpkg-buildpackage (debian/ says how), into build/deb/:
#
#   odsm-dkms     the module's source and dkms.conf (DKMS builds odsm.ko
#                 for every kernel with headers)
#   libodsm1      libodsm.so.1
#   libodsm-dev   odsm.h, linux/odsm.h, libodsm.a, libodsm.so, odsm.pc
#   odsm-tools    odsmctl, the benchmarks and examples, odsm.service and
#                 the udev rule
#
# The copy holds the files git knows of (committed or not, ignored ones
# left out), as they are now: so build/ stays out of the package's source
# and dpkg-buildpackage's clean never touches the working tree.
#
# Usage: tools/mkdeb.sh [VERSION]   (default: the Makefile's)
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${1:-$(make -s --no-print-directory print-version)}
OUT=build/deb
SRC=$OUT/src/odsm-$VERSION

command -v dpkg-buildpackage >/dev/null && command -v dh_dkms >/dev/null ||
	{ echo "mkdeb: no dpkg-buildpackage or dh_dkms: run 'make setup'" >&2; exit 1; }
git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
	{ echo "mkdeb: not a git checkout: the package's files are the ones git knows" >&2; exit 1; }

rm -rf "$OUT"
mkdir -p "$SRC"
git ls-files -z -c -o --exclude-standard |
	while IFS= read -r -d '' f; do if [ -e "$f" ]; then printf '%s\0' "$f"; fi; done |
	tar --null -T - -cf - | tar -xf - -C "$SRC"

echo "  DEB     odsm $VERSION (log: $OUT/build.log)"
if ! (cd "$SRC" && nice -n 19 ionice -c3 dpkg-buildpackage -us -uc -b -j2) \
	>"$OUT/build.log" 2>&1; then
	tail -n 40 "$OUT/build.log"
	echo "mkdeb: dpkg-buildpackage failed (see $OUT/build.log)" >&2
	exit 1
fi
mv "$OUT"/src/*.deb "$OUT"/src/*.changes "$OUT"/src/*.buildinfo "$OUT"/
rm -rf "$OUT/src"
for d in "$OUT"/*.deb; do
	echo "  $d ($(du -h "$d" | cut -f1))"
done
