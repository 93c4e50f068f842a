#!/bin/bash
# libodsm's ABI is the one debian/libodsm1.symbols states: the soname
# libodsm.so.1, and every exported symbol with its version node.  Compares
# the built library with that list through dpkg-gensymbols at its strictest
# level (the tool that checks it again when the packages are built), so
# that a symbol dropped or moved to another version node fails, and so
# does a new one that the list does not have yet: the list stays complete,
# and each line it lacks is printed ready to paste.  Run by make check's
# build step.
#
#   tools/check-symbols.sh [LIB]     (default build/lib/libodsm.so.1)
set -euo pipefail
cd "$(dirname "$0")/.."
lib=${1:-build/lib/libodsm.so.1}
list=debian/libodsm1.symbols
version=$(make -s --no-print-directory print-version)

soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')
want=$(awk '!/^#/ { print $1; exit }' "$list")
if [ "$soname" != "$want" ]; then
	echo "check-symbols: $lib has the soname '$soname', $list states '$want'" >&2
	exit 1
fi

# As a version later than every symbol's: dpkg-gensymbols forgives a
# symbol of the version being built that disappears (it was never
# released), which would be every symbol until the version moves on.
out=$(dpkg-gensymbols -plibodsm1 -v"$version+check" -e"$lib" -I"$list" -O/dev/null -c4 2>&1 |
	sed "s/ $version+check\$/ $version/; s/#MISSING: $version+check#/#MISSING#/") && rc=0 || rc=$?
if [ "$rc" = 0 ]; then
	echo "  SYMBOLS $lib: $soname, $(grep -c '^ ' "$list") symbols, as $list states"
	exit 0
fi
echo "$out" >&2
if echo "$out" | grep -q '^+#MISSING'; then
	echo "check-symbols: the '#MISSING' lines are symbols $list promises and $lib no longer exports (with that version node): an ABI break" >&2
fi
if echo "$out" | grep -q '^+ '; then
	echo "check-symbols: the '+' lines are symbols $lib exports that $list lacks: add them to it as they are shown (without the '+')" >&2
fi
exit 1
