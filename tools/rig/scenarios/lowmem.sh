#!/bin/sh
# shellcheck shell=dash disable=SC1091,SC2154
# The heap under memory pressure: the selftests scenario limited to
# mem_test (or rig.selftests=...), meant for a guest with little memory
# (run.sh -m 320M): mem_test's lowmem_guest_enomem fills the partition
# through ODSM_IOC_WRITE until the page store says -ENOMEM, with no OOM
# kill, and checks the heap works afterwards.  Same markers as selftests.
rig_selftests=${rig_selftests:-mem_test}
. /rig/scenarios/selftests.sh
