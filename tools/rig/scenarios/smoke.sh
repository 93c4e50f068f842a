#!/bin/sh
# shellcheck shell=dash disable=SC1091,SC2154
# Smoke test: the guest boots, runs a scenario and powers off.
# With rig.echo=VALUE (selftest.sh): print VALUE and rig.echo2 back, once as
# a marker and once as a plain line, so the host can check how a value with
# blanks came through, and that run.sh -v shows lines that are not markers.
. /rig/lib.sh
uname -a
mark kernel "$(uname -r)"
if [ -n "${rig_echo+set}" ]; then
	mark echo "[$rig_echo] [${rig_echo2-}]"
	printf 'smoke: echo [%s] [%s]\n' "$rig_echo" "${rig_echo2-}"
fi
