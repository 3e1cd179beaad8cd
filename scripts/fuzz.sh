#!/usr/bin/env bash
# Runs every libFuzzer target built in BUILD_DIR for SECONDS each, starting
# from its seed corpus (tests/fuzz/corpus/<name>) copied to a scratch dir so
# the checked-in corpus is never modified. Fails on the first finding.
set -euo pipefail
BUILD=${1:-build-fuzz}
SECONDS_EACH=${2:-300}
cd "$(dirname "$0")/.."
found=0
for bin in "$BUILD"/fuzz_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin")
  seed=$(cat "$BUILD/$name.corpus" 2>/dev/null || true)
  work=$(mktemp -d)
  [ -d "$seed" ] && cp -r "$seed"/. "$work"/
  echo "fuzz: $name for ${SECONDS_EACH}s (seeds: $seed)"
  if ! "$bin" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -artifact_prefix="$BUILD/$name-" "$work" 2>"$BUILD/$name.log"; then
    echo "fuzz: $name FOUND A CRASH — see $BUILD/$name.log and $BUILD/$name-*"; found=1
  else
    tail -n 2 "$BUILD/$name.log"
  fi
  rm -rf "$work"
done
exit $found
