#!/usr/bin/env bash
# Runs every benchmark that exists in this tree and prints its figures.
set -uo pipefail
BUILD=${1:-build}
cd "$(dirname "$0")/.."
bench/footprint.sh "$BUILD"
[ -x bench/space-load/run.sh ] && bench/space-load/run.sh "$BUILD"
[ -x "$BUILD/bench-echo" ] && "$BUILD/bench-echo"
[ -x bench/workweek/run.sh ] && bench/workweek/run.sh "$BUILD"
exit 0
