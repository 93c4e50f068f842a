#!/bin/bash
# Which kmod/*.c file calls (or uses a non-static object of) which other:
# read from the module's object files with nm, so it sees exactly what the
# compiler linked, macros and inline functions expanded.
#
#   tools/kmod-deps.sh [BUILD_DIR]     edges "a -> b" and the cycles
#
# BUILD_DIR is where the .o files are (default: the newest
# build/kmod/*/kmod).  An edge a -> b means a.o has an undefined symbol that
# b.o defines (a global function or variable).  A cycle is a strongly
# connected component of more than one file.  Exits 1 if a cycle joins
# files that are not all siblings of one transport (odsm_rdma*.c), the only
# cycles the layer map allows (Documentation/odsm/design.rst).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-$(ls -d build/kmod/*/kmod 2>/dev/null | sort -V | tail -n 1)}
[ -n "$dir" ] && [ -d "$dir" ] || { echo "kmod-deps: no build/kmod/*/kmod: run 'make module' first" >&2; exit 2; }

objs=()
for c in kmod/*.c; do
	o=$dir/$(basename "${c%.c}").o
	[ -f "$o" ] && objs+=("$o")
done
[ "${#objs[@]}" -gt 0 ] || { echo "kmod-deps: no object files in $dir" >&2; exit 2; }

# "file defines sym" and "file uses sym" lines, then the edges
for o in "${objs[@]}"; do
	f=$(basename "${o%.o}")
	nm "$o" | awk -v f="$f" '$2 ~ /^[TDBR]$/ { print "D", f, $3 } $1 == "U" { print "U", f, $2 }'
done | awk '
	$1 == "D" { def[$3] = $2 }
	$1 == "U" { use[NR] = $2 " " $3 }
	END {
		for (i in use) {
			split(use[i], u, " ")
			if ((u[2] in def) && def[u[2]] != u[1])
				edge[u[1] " -> " def[u[2]]] = 1
		}
		for (e in edge)
			print e
	}' | sort >"${TMPDIR:-/tmp}/kmod-deps.$$"

python3 - "${TMPDIR:-/tmp}/kmod-deps.$$" <<'EOF'
import sys
edges = [l.split(" -> ") for l in open(sys.argv[1]).read().split("\n") if l]
g = {}
for a, b in edges:
    g.setdefault(a, set()).add(b)
    g.setdefault(b, set())
for a, b in edges:
    print(f"{a} -> {b}")
# Tarjan's strongly connected components
index, low, on, st, sccs, n = {}, {}, set(), [], [], [0]
def visit(v):
    index[v] = low[v] = n[0]; n[0] += 1; st.append(v); on.add(v)
    for w in sorted(g[v]):
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        c = []
        while True:
            w = st.pop(); on.discard(w); c.append(w)
            if w == v:
                break
        sccs.append(sorted(c))
sys.setrecursionlimit(10000)
for v in sorted(g):
    if v not in index:
        visit(v)
bad = 0
for c in sccs:
    if len(c) < 2:
        continue
    allowed = all(x.startswith("odsm_rdma") for x in c)
    print(("cycle (one transport's files): " if allowed else "CYCLE: ") + " ".join(c))
    bad += not allowed
print(f"kmod-deps: {len(edges)} edges, {bad} cycle(s) across layers")
sys.exit(1 if bad else 0)
EOF
rc=$?
rm -f "${TMPDIR:-/tmp}/kmod-deps.$$"
exit $rc
