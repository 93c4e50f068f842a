#!/bin/sh
# Guest side of `make bench`: benchmarks print ODSM_BENCH lines; nothing is
# judged but that they ran.
. /rig/lib.sh
set -e
modprobe odsm
odsm-bench 4096 50
