#!/bin/bash
# The layout of every struct libodsm's public headers define, as
# debian/libodsm1.layout states: the sizes and offsets a program compiles
# in.  The headers' inline functions read some of them in the library's
# memory (odsm__th, odsm_rt), and the others cross the API by pointer, so
# a changed layout breaks programs built against the old headers without
# any symbol changing: tools/check-symbols.sh cannot see it.  The structs
# are compiled with -g and printed by pahole (dwarves), then compared.
#
# A difference fails.  Before the version in the symbols file is
# released, write the new layout (--update) in the commit that changes
# it; after, a changed layout is an ABI break and needs a new soname
# (libodsm2) as well.  Run by make check's build step.
#
#   tools/check-layout.sh [--update]
set -euo pipefail
cd "$(dirname "$0")/.."
list=debian/libodsm1.layout
read -r -a headers <<<"$(make -s --no-print-directory print-pub-headers)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
names=$(sed -nE 's/^(typedef )?struct ([a-z_0-9]+) \{.*/\2/p' "${headers[@]}" | sort -u)
{
	for h in "${headers[@]}"; do
		echo "#include \"$(basename "$h")\""
	done
	for n in $names; do
		echo "struct $n layout_$n;"
	done
} >"$tmp/layout.c"
${CC:-cc} -D_GNU_SOURCE -Iuapi -Iuserlib -g -O0 -c "$tmp/layout.c" -o "$tmp/layout.o"
{
	sed -n '/^#/p' "$list"
	# members with their offsets and sizes, and each struct's size;
	# pahole's other remarks (holes, padding, cachelines) follow from them
	for n in $names; do
		pahole -C "$n" "$tmp/layout.o"
	done | sed -E '/^\s*\/\*/{/^\s*\/\* size:/!d}; /^\s*$/d'
} >"$tmp/now"
if [ "${1:-}" = --update ]; then
	cp "$tmp/now" "$list"
	echo "  LAYOUT $list: $(echo "$names" | wc -w) structs written"
	exit 0
fi
if diff -u "$list" "$tmp/now" >"$tmp/diff"; then
	echo "  LAYOUT $(echo "$names" | wc -w) public structs of ${headers[*]}: as $list states"
	exit 0
fi
cat "$tmp/diff" >&2
echo "check-layout: the public structs above differ from $list ('+': as built now)." >&2
echo "check-layout: once the version the symbols file names is released, that is an ABI break: bump the soname (libodsm2)." >&2
echo "check-layout: before, record it with tools/check-layout.sh --update in the commit that changes it." >&2
exit 1
