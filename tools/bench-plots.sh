#!/bin/bash
# make bench-plots: the main comparisons of a bench run as SVG plots, from
# the figures tools/bench-report.sh wrote (build/bench/results.csv), with
# gnuplot (Debian's gnuplot-nox, installed by make setup).
#
#   tools/bench-plots.sh [CSV [OUTDIR]]    (build/bench/results.csv,
#                                           Documentation/odsm)
#
#   bench-remote.svg      remote operations, median latency: kernel TCP,
#                         RDMA one-sided, RDMA two-sided, and perftest's
#                         typical latency on the same link
#   bench-coherence.svg   an uncached shared borrow against a raw read of
#                         the same size, over TCP and RDMA
#   bench-deleg.svg       delegation on one node against a mutex, an MCS
#                         lock and an atomic, ops/s by threads, 1 counter
#
# A figure the run does not have is left out of its plot (a gap); a plot
# with no figure at all is not drawn, and said so.
set -euo pipefail
csv=${1:-build/bench/results.csv}
out=${2:-Documentation/odsm}
command -v gnuplot >/dev/null ||
	{ echo "bench-plots: no gnuplot (make setup installs gnuplot-nox)" >&2; exit 1; }
[ -r "$csv" ] || { echo "bench-plots: no $csv: run make bench first" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C

# value SECTION LABEL KEY: the first such figure of the CSV, or NaN
value() {
	awk -F, -v s="$1" -v l="$2" -v k="$3" '
		NR > 1 { lab = $3; gsub(/"/, "", lab) }
		NR > 1 && $1 == s && lab == l && $4 == k { print $5; found = 1; exit }
		END { if (!found) print "NaN" }' "$csv"
}

# the remote operations: one line per operation, one column per transport
{
	echo '# op tcp rdma-onesided rdma-twosided perftest'
	for spec in "read_8B read_8_us ib_read_lat -s 8 -n 200" \
		    "read_4KiB read_4096_us ib_read_lat -s 4096 -n 200" \
		    "write_8B write_8_us ib_write_lat -s 8 -n 200" \
		    "write_4KiB write_4096_us ib_write_lat -s 4096 -n 200" \
		    "fetch-add fetch_add_us ib_atomic_lat -n 200" \
		    "fetch-add_F_NIC fetch_add_nic_us ib_atomic_lat -n 200"; do
		read -r name key perf <<<"$spec"
		echo "$name $(value remote tcp "$key") $(value remote rdma-onesided "$key")" \
		     "$(value remote rdma-twosided "$key") $(value remote "perftest $perf" typical_us)"
	done
} >"$tmp/remote.dat"

# the coherence protocol: borrow and raw read by size and transport
{
	echo '# size tcp-borrow tcp-raw rdma-borrow rdma-raw'
	for sz in 512 4096 65536; do
		row="$sz"
		for x in tcp rdma; do
			row="$row $(value coherence "$x" "uncached_borrow_${sz}_us")"
			# the raw read measured next to that borrow (same row)
			row="$row $(awk -F, -v x="$x" -v k="uncached_borrow_${sz}_us" -v k2="raw_read_${sz}_us" '
				NR > 1 && $1 == "coherence" && $3 == x && $4 == k { r = $2 }
				NR > 1 && r != "" && $2 == r && $4 == k2 { print $5; f = 1; exit }
				END { if (!f) print "NaN" }' "$csv")"
		done
		echo "$row"
	done
} >"$tmp/coherence.dat"

# delegation on one node: one counter, by threads
awk -F, 'NR > 1 && $1 == "deleg" && $3 == "deleg_local" { v[$2, $4] = $5; rows[$2] = 1 }
	END {
		print "# threads deleg mutex mcs atomic"
		for (r in rows)
			if (v[r, "counters"] == 1 && v[r, "threads"] != "")
				print v[r, "threads"], v[r, "deleg"], v[r, "mutex"], v[r, "mcs"], v[r, "atomic"]
	}' "$csv" | sort -n >"$tmp/deleg.dat"

has_data() { grep -v '^#' "$1" | awk '{ for (i = 2; i <= NF; i++) if ($i != "NaN") f = 1 } END { exit !f }'; }

common='set terminal svg size 720,400 dynamic noenhanced font "sans,11" background rgb "#ffffff"
set grid ytics lc rgb "#dddddd"
set key below
set style fill solid 0.85 border -1
set style data histograms
set style histogram clustered gap 1
set datafile missing "NaN"
'

plot() {	# NAME DATA SCRIPT
	if ! has_data "$2"; then
		echo "bench-plots: no figures for $1: not drawn"
		return 0
	fi
	# one script on stdin: gnuplot -e takes no multi-line commands
	printf '%s\nset output "%s"\n%s\n' "$common" "$out/$1" "$3" | gnuplot
	echo "bench-plots: $out/$1"
}

plot bench-remote.svg "$tmp/remote.dat" "
set title 'Remote operations between two TCG guests: median latency (perftest: typical)'
set ylabel 'microseconds'
set yrange [0:*]
plot '$tmp/remote.dat' using 2:xtic(1) title 'odsm, kernel TCP', \
     '' using 3 title 'odsm, RDMA one-sided', \
     '' using 4 title 'odsm, RDMA two-sided', \
     '' using 5 title 'perftest over Soft-RoCE'"

plot bench-coherence.svg "$tmp/coherence.dat" "
set title 'Uncached shared borrow against a raw read of the same size (median)'
set ylabel 'microseconds'
set xlabel 'object size, bytes'
set yrange [0:*]
plot '$tmp/coherence.dat' using 2:xtic(1) title 'borrow, TCP', \
     '' using 3 title 'raw read, TCP', \
     '' using 4 title 'borrow, RDMA', \
     '' using 5 title 'raw read, RDMA'"

plot bench-deleg.svg "$tmp/deleg.dat" "
set title 'One counter, native host: operations per second (median of 5)'
set logscale y
set format y '%.0s%c'
set ylabel 'operations per second'
set xlabel 'threads'
set logscale x 2
plot '$tmp/deleg.dat' using 1:2 with linespoints title 'delegation' lw 2, \
     '' using 1:3 with linespoints title 'pthread mutex', \
     '' using 1:4 with linespoints title 'MCS lock', \
     '' using 1:5 with linespoints title 'atomic fetch-and-add'"
