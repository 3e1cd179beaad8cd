#!/usr/bin/env bash
# Footprint of general-agent with no credentials: stripped binary size,
# start-to-idle time (median of N runs) and idle RSS (median of N runs).
#
#   bench/footprint.sh [BUILD_DIR] [RUNS]
#
# Start-to-idle: the time from exec until the daemon has loaded its identity,
# scheduled its jobs and entered the loop; GA_EXIT_WHEN_IDLE=1 makes it shut
# down right there, so the figure includes the (fast) graceful shutdown too.
# Idle RSS: VmRSS from /proc after the daemon logged "ready and listening".
set -euo pipefail
BUILD=${1:-build}
RUNS=${2:-10}
BIN="$BUILD/general-agent"
[ -x "$BIN" ] || { echo "footprint: build first ($BIN missing)" >&2; exit 1; }
SRC=$(cd "$(dirname "$0")/.." && pwd)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$SRC/SOUL.md" "$SRC/SELF.md.template" "$work/"

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

strip -o "$work/ga-stripped" "$BIN"
size_bytes=$(stat -c %s "$work/ga-stripped")

# First start pins SOUL.md and writes SELF.md; measure warm starts.
(cd "$work" && env -i PATH="$PATH" AGENT_NAME=bench GA_EXIT_WHEN_IDLE=1 "$SRC/$BIN" --no-terminal 2>/dev/null) || true

times=()
for _ in $(seq "$RUNS"); do
  s=$(date +%s%N)
  (cd "$work" && env -i PATH="$PATH" AGENT_NAME=bench GA_EXIT_WHEN_IDLE=1 "$SRC/$BIN" --no-terminal 2>/dev/null)
  e=$(date +%s%N)
  times+=($(( (e - s) / 1000 )))
done
start_us=$(printf '%s\n' "${times[@]}" | median)

rss=()
for _ in $(seq "$RUNS"); do
  (cd "$work" && exec env -i PATH="$PATH" AGENT_NAME=bench "$SRC/$BIN" --no-terminal 2>"$work/err.log") &
  pid=$!
  for _ in $(seq 500); do grep -q "ready and listening" "$work/err.log" 2>/dev/null && break; sleep 0.01; done
  rss+=($(awk '/VmRSS/ {print $2}' /proc/$pid/status))
  kill -TERM $pid; wait $pid || true
done
rss_kb=$(printf '%s\n' "${rss[@]}" | median)

printf 'general-agent footprint (no credentials, %s runs, medians)\n' "$RUNS"
printf '  stripped binary   %8d bytes  (%.2f MB; target <= 1 MB)\n' "$size_bytes" "$(echo "$size_bytes/1048576" | bc -l)"
printf '  start-to-idle     %8.2f ms     (target <= 20 ms; includes exit)\n' "$(echo "$start_us/1000" | bc -l)"
printf '  idle RSS          %8d kB     (%.2f MB; target <= 4 MB)\n' "$rss_kb" "$(echo "$rss_kb/1024" | bc -l)"
