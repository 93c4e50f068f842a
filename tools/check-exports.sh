#!/bin/bash
# libodsm.so exports exactly its API: every non-static function and
# variable declared in userlib/odsm.h (the odsm__* slow paths the inline
# functions call included), and nothing else.  Run by "make lib" on the
# library it just linked with userlib/libodsm.map.
#
#   tools/check-exports.sh [LIB [HEADER...]]
#
# LIB defaults to build/lib/libodsm.so.1, HEADER to userlib/odsm.h; with
# several, the API is what all of them declare.  The
# header's declarations are read by the compiler (gcc -aux-info: each
# function declaration with its file and linkage), its extern variables
# from the "extern type name;" lines.  Exits 1 and names each difference.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
lib=${1:-build/lib/libodsm.so.1}
shift || true
hdrs=("$@")
[ ${#hdrs[@]} -gt 0 ] || hdrs=(userlib/odsm.h)
hdr="${hdrs[*]}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

: >"$tmp/decl"
for h in "${hdrs[@]}"; do
	# functions declared extern (not static inline) in the header itself
	${CC:-cc} -D_GNU_SOURCE -I"$root/uapi" -I"$(dirname "$h")" -fsyntax-only \
		-aux-info "$tmp/aux" -x c "$h"
	grep -F "/* $h:" "$tmp/aux" |
		sed -n 's/^.*\*\/ extern .*[ *]\([A-Za-z_][A-Za-z0-9_]*\) (.*/\1/p' >>"$tmp/decl"
	# variables
	sed -n 's/^extern [^(]*[ *]\([A-Za-z_][A-Za-z0-9_]*\)\( *\[[^]]*\]\)*;$/\1/p' \
		"$h" >>"$tmp/decl"
done
sort -u -o "$tmp/decl" "$tmp/decl"
[ -s "$tmp/decl" ] || { echo "check-exports: no declarations read from $hdr" >&2; exit 2; }

# what the library defines in its dynamic symbol table (not the version
# node's own absolute symbol), without the @VERSION suffix
nm -D --defined-only "$lib" | awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' |
	sort -u >"$tmp/exp"

status=0
missing=$(comm -23 "$tmp/decl" "$tmp/exp")
extra=$(comm -13 "$tmp/decl" "$tmp/exp")
if [ -n "$missing" ]; then
	echo "check-exports: declared in $hdr but not exported by $lib" \
	     "(add to userlib/libodsm.map):" $missing >&2
	status=1
fi
if [ -n "$extra" ]; then
	echo "check-exports: exported by $lib but not declared in $hdr" \
	     "(make it static or declare it):" $extra >&2
	status=1
fi
[ "$status" = 0 ] && echo "  EXPORTS $lib: $(wc -l <"$tmp/exp") symbols, as $hdr declares"
exit "$status"
