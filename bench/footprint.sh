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
# (The agent-space client runs in every mode: without a room to join it is
# discovering — an mDNS browse loads avahi-client and libdbus on first use —
# and then retrying ws://localhost:7777 with backoff.)
# Connected RSS: a real agent-space on an ephemeral port (127.0.0.1, no
# mDNS), SPACE_URL pointing at it; VmRSS once the agent has joined and
# processed the room's presence.
set -euo pipefail
BUILD=${1:-build}
RUNS=${2:-10}
BIN="$BUILD/general-agent"
[ -x "$BIN" ] || { echo "footprint: build first ($BIN missing)" >&2; exit 1; }
SRC=$(cd "$(dirname "$0")/.." && pwd)

work=$(mktemp -d)
space_pid=""
cleanup() {
  if [ -n "$space_pid" ]; then kill -TERM "$space_pid" 2>/dev/null || true; wait "$space_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
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

# Connected to a room and idle.
SPACE_BIN="$BUILD/agent-space"
room_kb=""
if [ -x "$SPACE_BIN" ]; then
  mkdir -p "$work/room"
  (cd "$work/room" && exec env -i PATH="$PATH" SPACE_PORT=0 SPACE_BIND=127.0.0.1 \
     SPACE_DATA_DIR="$work/room/data" "$SRC/$SPACE_BIN" --no-mdns --port-file "$work/room/port" \
     </dev/null >"$work/room/log" 2>&1) &
  space_pid=$!
  for _ in $(seq 500); do [ -s "$work/room/port" ] && break; sleep 0.01; done
  port=$(cat "$work/room/port")
  rss2=()
  for _ in $(seq "$RUNS"); do
    : >"$work/err2.log"
    (cd "$work" && exec env -i PATH="$PATH" AGENT_NAME=bench SPACE_URL="ws://127.0.0.1:$port" \
       "$SRC/$BIN" --no-terminal 2>"$work/err2.log") &
    pid=$!
    # "presence members=" is logged once the join sequence (join echo,
    # presence, history, identity) has been processed.
    for _ in $(seq 500); do grep -q "presence members=" "$work/err2.log" 2>/dev/null && break; sleep 0.01; done
    rss2+=($(awk '/VmRSS/ {print $2}' /proc/$pid/status))
    kill -TERM $pid; wait $pid || true
  done
  room_kb=$(printf '%s\n' "${rss2[@]}" | median)
fi

printf 'general-agent footprint (no credentials, %s runs, medians)\n' "$RUNS"
printf '  stripped binary   %8d bytes  (%.2f MB; target <= 1 MB)\n' "$size_bytes" "$(echo "$size_bytes/1048576" | bc -l)"
printf '  start-to-idle     %8.2f ms     (target <= 20 ms; includes exit)\n' "$(echo "$start_us/1000" | bc -l)"
printf '  idle RSS          %8d kB     (%.2f MB; target <= 4 MB; no room reachable)\n' "$rss_kb" "$(echo "$rss_kb/1024" | bc -l)"
if [ -n "$room_kb" ]; then
  printf '  in a room, idle   %8d kB     (%.2f MB; target <= 6 MB; SPACE_URL, joined)\n' "$room_kb" "$(echo "$room_kb/1024" | bc -l)"
else
  printf '  in a room, idle   (skipped: %s missing)\n' "$SPACE_BIN"
fi
