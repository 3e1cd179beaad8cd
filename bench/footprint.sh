#!/usr/bin/env bash
# Footprint of general-agent: stripped binary size, start-to-idle time with
# no credentials, and idle memory (RSS and PSS) with nothing configured and
# with a model, Bluesky and GitHub configured. Every figure is the median of
# RUNS runs (default 10, at least 5).
#
#   bench/footprint.sh [BUILD_DIR] [RUNS]
#
# Start-to-idle: the time from exec until the daemon has loaded its identity,
# scheduled its jobs and entered the loop; GA_EXIT_WHEN_IDLE=1 makes it shut
# down right there, so the figure includes the (fast) graceful shutdown too.
# Idle memory: sampled once the daemon logged "ready and listening". RSS is
# VmRSS from /proc/PID/status: every resident page the process maps, shared
# library pages counted in full. PSS is Pss from /proc/PID/smaps_rollup:
# each resident page divided by the number of processes mapping it, so it
# depends on what else runs (shared libc, libcrypto... pages are split).
# Configured: LLM_BASE_URL/LLM_API_KEY/LLM_MODEL, AGENT_BLUESKY_USERNAME/
# PASSWORD + BLUESKY_SERVICE, AGENT_GITHUB_USERNAME/TOKEN + GITHUB_API_URL,
# every URL on 127.0.0.1 at a port where nothing listens (nothing is
# contacted while idle; the model's HTTP client loads its transport's TLS
# library at start: GnuTLS for the native one, libcurl for a curl build,
# docs/http.md). The report lists the
# heavy libraries each case had mapped, the platform services the daemon
# started (cmd/services.h: "service started"), and per mapped object what
# that configuration adds to the nothing-configured one.
# (The agent-space client runs in every mode: without a room to join it is
# discovering — an mDNS browse, which loads avahi-client and libdbus on first
# use where a D-Bus system bus exists — and then retrying the default room
# with backoff.) A benchmark must never reach a user's real room, so the
# no-room cases (start-to-idle, nothing configured, configured) run with
# DBUS_SYSTEM_BUS_ADDRESS pointing at no bus (the browse fails before it
# loads avahi: no mDNS, so no room of the user's found that way) and
# GA_SPACE_LOCALHOST_URL=ws://127.0.0.1:1 in place of ws://localhost:7777
# (nothing listens on port 1). SPACE_URL stays unset there: what they
# measure is still the daemon with no room configured, discovering and
# retrying — the same as on a machine without a system bus, where the
# published figures were taken; a run on a machine with avahi no longer
# counts avahi-client and libdbus. A no-room sample that joined a room
# anyway stops the run.
# Connected RSS: a real agent-space on an ephemeral port (127.0.0.1, no
# mDNS), SPACE_URL pointing at it; VmRSS once the agent has joined and
# processed the room's presence; with the dashboard on (the default) and off.
# What the dashboard adds: /proc/PID/smaps of the last nothing-configured
# sample with the dashboard on against the last one with it off, summed per
# mapped object, each delta split into private dirty pages (relocations,
# heap: memory this process alone costs) and clean file pages (library code
# and tables read from the page cache, shared with every other process that
# maps the library; VmRSS counts them in full, PSS divides them).
set -euo pipefail
BUILD=${1:-build}
RUNS=${2:-10}
[ "$RUNS" -ge 5 ] 2>/dev/null || { echo "footprint: RUNS must be a number >= 5" >&2; exit 2; }
BIN="$BUILD/general-agent"
[ -x "$BIN" ] || { echo "footprint: build first ($BIN missing)" >&2; exit 1; }
SRC=$(cd "$(dirname "$0")/.." && pwd)
# The no-room cases' isolation from a user's room (see above).
NOROOM=(GA_SPACE_LOCALHOST_URL=ws://127.0.0.1:1 DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent/ga-test-no-bus)

work=$(mktemp -d)
space_pid=""
cleanup() {
  if [ -n "$space_pid" ]; then kill -TERM "$space_pid" 2>/dev/null || true; wait "$space_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
cp "$SRC/SOUL.md" "$SRC/SELF.md.template" "$work/"

median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%d\n", (a[NR/2]+a[NR/2+1])/2 + 0.5}'; }

strip -o "$work/ga-stripped" "$BIN"
size_bytes=$(stat -c %s "$work/ga-stripped")

# First start pins SOUL.md and writes SELF.md; measure warm starts.
(cd "$work" && env -i PATH="$PATH" AGENT_NAME=bench "${NOROOM[@]}" GA_EXIT_WHEN_IDLE=1 "$SRC/$BIN" --no-terminal 2>/dev/null) || true

times=()
for _ in $(seq "$RUNS"); do
  s=$(date +%s%N)
  (cd "$work" && env -i PATH="$PATH" AGENT_NAME=bench "${NOROOM[@]}" GA_EXIT_WHEN_IDLE=1 "$SRC/$BIN" --no-terminal 2>/dev/null)
  e=$(date +%s%N)
  times+=($(( (e - s) / 1000 )))
done
start_us=$(printf '%s\n' "${times[@]}" | median)

# The same launch of /bin/true: what the shell's fork, env and exec cost on
# this machine (14-21 ms in the development container), reported apart and
# subtracted, so the figure is the daemon's own start-to-idle.
base=()
for _ in $(seq "$RUNS"); do
  s=$(date +%s%N)
  (cd "$work" && env -i PATH="$PATH" AGENT_NAME=bench "${NOROOM[@]}" GA_EXIT_WHEN_IDLE=1 /bin/true)
  e=$(date +%s%N)
  base+=($(( (e - s) / 1000 )))
done
base_us=$(printf '%s\n' "${base[@]}" | median)
own_us=$(( start_us > base_us ? start_us - base_us : 0 ))

# smaps_objects PID: one line per mapped object (the file's base name, or
# [heap], [stack], [anon]...): name Rss Pss Private_Dirty Clean, in kB.
smaps_objects() {
  awk '/^[0-9a-f]+-[0-9a-f]+ / { n = (NF >= 6) ? $NF : "[anon]"; sub(/.*\//, "", n); seen[n] = 1; next }
       /^Rss:/ { rss[n] += $2 } /^Pss:/ { pss[n] += $2 } /^Private_Dirty:/ { dirty[n] += $2 }
       /^(Shared|Private)_Clean:/ { clean[n] += $2 }
       END { for (k in seen) print k, rss[k] + 0, pss[k] + 0, dirty[k] + 0, clean[k] + 0 }' "/proc/$1/smaps"
}

# objects_delta OFF ON: the objects whose Rss or Pss differ by 8 kB or more,
# largest Rss growth first, then the totals (kB, signed).
objects_delta() {
  awk 'FNR == NR { r0[$1] = $2; p0[$1] = $3; d0[$1] = $4; c0[$1] = $5; all[$1] = 1; next }
       { r1[$1] = $2; p1[$1] = $3; d1[$1] = $4; c1[$1] = $5; all[$1] = 1 }
       END {
         for (k in all) {
           r = r1[k] - r0[k]; p = p1[k] - p0[k]; d = d1[k] - d0[k]; c = c1[k] - c0[k]
           tr += r; tp += p; td += d; tc += c
           if (r >= 8 || r <= -8 || p >= 8 || p <= -8)
             printf "%d    %-28s %+7d %+7d %+9d %+9d\n", r, k, r, p, d, c
         }
         printf "-1000000    %-28s %+7d %+7d %+9d %+9d\n", "total", tr, tp, td, tc
       }' "$1" "$2" | sort -k1,1nr | sed 's/^-\{0,1\}[0-9]*    /    /'
}

# One idle sample: starts the daemon with VAR=VALUE... (and NOROOM) added to a clean
# environment, waits for "ready and listening" in LOG, sets sample_rss and
# sample_pss (kB) and writes the heavy libraries it had mapped to LOG.libs.
idle_sample() {
  local log=$1; shift
  : >"$log"
  (cd "$work" && exec env -i PATH="$PATH" AGENT_NAME=bench "${NOROOM[@]}" "$@" "$SRC/$BIN" --no-terminal 2>"$log") &
  local pid=$!
  for _ in $(seq 500); do grep -q "ready and listening" "$log" 2>/dev/null && break; sleep 0.01; done
  if ! grep -q "ready and listening" "$log"; then
    kill -TERM $pid 2>/dev/null || true; wait $pid || true
    echo "footprint: the daemon did not become ready; its log:" >&2; cat "$log" >&2; exit 1
  fi
  # A figure "dashboard on" must be one with the dashboard serving.
  case " $* " in
  *" $dash "*)
    if ! grep -q "dashboard listening" "$log"; then
      kill -TERM $pid 2>/dev/null || true; wait $pid || true
      echo "footprint: the dashboard did not start; the daemon's log:" >&2; cat "$log" >&2; exit 1
    fi ;;
  esac
  if grep -q "joined the room" "$log"; then
    kill -TERM $pid 2>/dev/null || true; wait $pid || true
    echo "footprint: a no-room sample joined a room; its log:" >&2; cat "$log" >&2; exit 1
  fi
  sample_rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
  sample_pss=$(awk '/^Pss:/ {print $2}' /proc/$pid/smaps_rollup)
  smaps_objects $pid >"$log.objects"
  grep -oE 'lib(curl|curl-gnutls|ssl|crypto|gnutls|microhttpd|avahi-client|dbus-1)\.so' /proc/$pid/maps | sort -u >"$log.libs" || true
  kill -TERM $pid; wait $pid || true
}

# Medians of RUNS idle samples (arguments as for idle_sample): sets med_rss
# and med_pss (kB).
idle_medians() {
  local rs=() ps=()
  for _ in $(seq "$RUNS"); do
    idle_sample "$@"
    rs+=("$sample_rss"); ps+=("$sample_pss")
  done
  med_rss=$(printf '%s\n' "${rs[@]}" | median)
  med_pss=$(printf '%s\n' "${ps[@]}" | median)
}

# The dashboard on a port of the system's choosing: the same memory as on
# its default 7780, and a run on a shared machine does not depend on that
# port being free.
dash=DASHBOARD_ADDR=127.0.0.1:0
idle_medians "$work/err.log" "$dash"
rss_kb=$med_rss pss_kb=$med_pss
# The dashboard (on by default) brings libmicrohttpd and, with it, GnuTLS
# (loaded when it starts, modules/dashboard/mhd_shim.h): the same without it.
idle_medians "$work/err-nodash.log" DASHBOARD_ADDR=off
nodash_rss_kb=$med_rss nodash_pss_kb=$med_pss

# A model, Bluesky and GitHub configured; every URL on a local port where
# nothing listens.
dead=127.0.0.1:9
if (exec 3<>"/dev/tcp/${dead%:*}/${dead#*:}") 2>/dev/null; then
  echo "footprint: something listens on $dead; the configured run would talk to it" >&2; exit 1
fi
idle_medians "$work/err-cfg.log" "$dash" \
  LLM_BASE_URL="http://$dead/v1" LLM_API_KEY=bench-key LLM_MODEL=bench-model \
  AGENT_BLUESKY_USERNAME=bench.test AGENT_BLUESKY_PASSWORD=bench-app-password \
  BLUESKY_SERVICE="http://$dead" \
  AGENT_GITHUB_USERNAME=bench AGENT_GITHUB_TOKEN=bench-token GITHUB_API_URL="http://$dead"
cfg_rss_kb=$med_rss cfg_pss_kb=$med_pss
libs() { sed 's/\.so$//' "$1" | paste -sd, - | sed 's/^$/none/; s/,/, /g'; }
cfg_note="libraries mapped: $(libs "$work/err-cfg.log.libs")"
svcs=$(grep -oE 'service started service=[a-z_-]+' "$work/err-cfg.log" | sed 's/.*=//' | sort -u | paste -sd, - | sed 's/,/, /g')
cfg_note="$cfg_note; services started: ${svcs:-none}"

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
  # room_medians VAR=VALUE...: medians of RUNS joined samples; sets
  # med_rss and med_pss (kB).
  room_medians() {
    local rs=() ps=()
    for _ in $(seq "$RUNS"); do
      : >"$work/err2.log"
      (cd "$work" && exec env -i PATH="$PATH" AGENT_NAME=bench SPACE_URL="ws://127.0.0.1:$port" \
         "$@" "$SRC/$BIN" --no-terminal 2>"$work/err2.log") &
      pid=$!
      # "presence members=" is logged once the join sequence (join echo,
      # presence, history, identity) has been processed.
      for _ in $(seq 500); do grep -q "presence members=" "$work/err2.log" 2>/dev/null && break; sleep 0.01; done
      if ! grep -q "presence members=" "$work/err2.log" ||
         { [ "${1:-}" = "$dash" ] && ! grep -q "dashboard listening" "$work/err2.log"; }; then
        kill -TERM $pid 2>/dev/null || true; wait $pid || true
        echo "footprint: the agent did not join the room (or its dashboard did not start); its log:" >&2
        cat "$work/err2.log" >&2; exit 1
      fi
      rs+=($(awk '/VmRSS/ {print $2}' /proc/$pid/status))
      ps+=($(awk '/^Pss:/ {print $2}' /proc/$pid/smaps_rollup))
      kill -TERM $pid; wait $pid || true
    done
    med_rss=$(printf '%s\n' "${rs[@]}" | median)
    med_pss=$(printf '%s\n' "${ps[@]}" | median)
  }
  room_medians "$dash"
  room_kb=$med_rss room_pss_kb=$med_pss
  room_medians DASHBOARD_ADDR=off
  room_nodash_kb=$med_rss room_nodash_pss_kb=$med_pss
fi

mb() { echo "$1/1024" | bc -l; }
printf 'general-agent footprint (%s runs, medians; PSS splits shared pages with the other\n' "$RUNS"
printf 'processes that map them at the time, so it moves with what else runs)\n'
printf '  stripped binary   %8d bytes  (%.2f MB; target <= 1 MB)\n' "$size_bytes" "$(echo "$size_bytes/1048576" | bc -l)"
printf '  start-to-idle     %8.2f ms     (target <= 20 ms; includes exit; nothing configured; the launch itself subtracted)\n' "$(echo "$own_us/1000" | bc -l)"
printf '    measured        %8.2f ms     (as launched: fork + env + exec + the daemon)\n' "$(echo "$start_us/1000" | bc -l)"
printf '    the launch      %8.2f ms     (the same launch of /bin/true)\n' "$(echo "$base_us/1000" | bc -l)"
printf '  nothing configured, no room reachable, dashboard on (the default):\n'
printf '    idle RSS        %8d kB     (%.2f MB)\n' "$rss_kb" "$(mb "$rss_kb")"
printf '    idle PSS        %8d kB     (%.2f MB)\n' "$pss_kb" "$(mb "$pss_kb")"
printf '  nothing configured, no room reachable, DASHBOARD_ADDR=off (libraries mapped: %s):\n' "$(libs "$work/err-nodash.log.libs")"
printf '    idle RSS        %8d kB     (%.2f MB; target <= 4 MB)\n' "$nodash_rss_kb" "$(mb "$nodash_rss_kb")"
printf '    idle PSS        %8d kB     (%.2f MB)\n' "$nodash_pss_kb" "$(mb "$nodash_pss_kb")"
printf '  model + Bluesky + GitHub configured, no room reachable (%s):\n' "$cfg_note"
printf '    idle RSS        %8d kB     (%.2f MB)\n' "$cfg_rss_kb" "$(mb "$cfg_rss_kb")"
printf '    idle PSS        %8d kB     (%.2f MB)\n' "$cfg_pss_kb" "$(mb "$cfg_pss_kb")"
if [ -n "$room_kb" ]; then
  printf '  in a room (SPACE_URL, joined), nothing else configured, dashboard on (the default):\n'
  printf '    idle RSS        %8d kB     (%.2f MB; target <= 6 MB)\n' "$room_kb" "$(mb "$room_kb")"
  printf '    idle PSS        %8d kB     (%.2f MB)\n' "$room_pss_kb" "$(mb "$room_pss_kb")"
  printf '  in a room (SPACE_URL, joined), nothing else configured, DASHBOARD_ADDR=off:\n'
  printf '    idle RSS        %8d kB     (%.2f MB)\n' "$room_nodash_kb" "$(mb "$room_nodash_kb")"
  printf '    idle PSS        %8d kB     (%.2f MB)\n' "$room_nodash_pss_kb" "$(mb "$room_nodash_pss_kb")"
else
  printf '  in a room, idle   (skipped: %s missing)\n' "$SPACE_BIN"
fi
printf '  what the dashboard adds, nothing configured (one sample each, /proc/PID/smaps per object, kB):\n'
printf '    %-28s %7s %7s %9s %9s\n' object Rss Pss 'priv.dirty' 'clean file'
objects_delta "$work/err-nodash.log.objects" "$work/err.log.objects"
printf '  what the model, Bluesky and GitHub add, dashboard on (one sample each, /proc/PID/smaps per object, kB):\n'
printf '    %-28s %7s %7s %9s %9s\n' object Rss Pss 'priv.dirty' 'clean file'
objects_delta "$work/err.log.objects" "$work/err-cfg.log.objects"
