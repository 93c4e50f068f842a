#!/bin/sh
# shellcheck shell=dash disable=SC1091,SC2154
# Smoke test: the guest boots, runs a scenario and powers off.
. /rig/lib.sh
uname -a
mark kernel "$(uname -r)"
