#!/bin/sh
# Guest side of `make demo`: load odsm, show the node, run the example
# application, show the counters it moved.
. /rig/lib.sh
set -e
modprobe odsm
echo "RIG_MARK demo_begin"
echo "\$ odsmctl info"
odsmctl info
echo "\$ odsm-demo 2000"
odsm-demo 2000
echo "\$ odsmctl stats"
odsmctl stats
echo "RIG_MARK demo_end"
