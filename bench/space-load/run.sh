#!/usr/bin/env bash
# Load benchmark for agent-space.
#
# For each member count (default 200, 1000 and 5000) and each run (default 3),
# starts a fresh agent-space on an ephemeral loopback port with an empty data
# directory and its default settings, measures its idle RSS, runs space-load
# against it and stops it. The room chats CHATS_PER_S in all (default 333),
# each member at most at the room's limit of one chat per 3 s (so 200
# members chat 67/s). Prints one line per run and a table of medians, then
# the targets:
#   N = 1000: zero lost deliveries, p99 <= 50 ms, server RSS <= 64 MB;
#   N = 5000: zero lost, all joined within 10 s, at most 30 GB received while
#             joining, p99 <= 100 ms, server RSS <= 64 MB;
#   idle server RSS <= 3 MB.
#
# usage: bench/space-load/run.sh [BUILD_DIR]        (default: build)
# env:   SIZES="200 1000 5000"  RUNS=3  DURATION=20 (seconds of load per run)
#        CHATS_PER_S=333  NICE=0 (e.g. -5 on a machine shared with builds)
#        SPACE_LOAD_ARGS="..." extra space-load arguments
# Benchmarks never run in ctest; timing targets live here only.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
case $build in /*) ;; *) build=$PWD/$build ;; esac
server=$build/agent-space
load=$build/bench/space-load/space-load
SIZES=${SIZES:-"200 1000 5000"}
CHATS_PER_S=${CHATS_PER_S:-333}
NICE=${NICE:-0}
RUNS=${RUNS:-3}
DURATION=${DURATION:-20}
SPACE_LOAD_ARGS=${SPACE_LOAD_ARGS:-}

for b in "$server" "$load"; do
	if [[ ! -x $b ]]; then
		echo "run.sh: $b is missing; build first (cmake --build $build)" >&2
		exit 1
	fi
done

# N clients in the generator (the server raises its own limit).
max_n=0
for n in $SIZES; do ((n > max_n)) && max_n=$n; done
need=$((max_n + 256))
if (($(ulimit -n) < need)); then
	ulimit -n "$need" 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
fi
if (($(ulimit -n) < need)); then
	echo "run.sh: ulimit -n is $(ulimit -n); $max_n members need at least $need" >&2
	exit 1
fi

work=$(mktemp -d /tmp/space-load.XXXXXX)
server_pid=
cleanup() {
	if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo -1; }

start_server() {
	local dir=$1
	mkdir -p "$dir"
	rm -f "$dir/port"
	SPACE_PORT=0 SPACE_BIND=127.0.0.1 SPACE_NAME=space-load SPACE_DATA_DIR="$dir/data" \
		LOG_LEVEL=warn nice -n "$NICE" \
		"$server" --no-mdns --port-file "$dir/port" </dev/null 2>"$dir/server.log" &
	server_pid=$!
	for _ in $(seq 200); do
		[[ -s $dir/port ]] && break
		kill -0 "$server_pid" 2>/dev/null || { cat "$dir/server.log" >&2; return 1; }
		sleep 0.05
	done
	port=$(head -n1 "$dir/port")
}

stop_server() {
	kill -TERM "$server_pid" 2>/dev/null || true
	for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=
}

# value KEY LINE: the value of KEY=... in a RESULT line
value() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }

median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "n/a"; else if (NR%2) print a[(NR+1)/2]; else printf "%.2f\n", (a[NR/2]+a[NR/2+1])/2}'; }

printf 'agent-space load benchmark: %s runs x %s s per member count, %s cores\n' \
	"$RUNS" "$DURATION" "$(nproc)"
declare -A results
for n in $SIZES; do
	for r in $(seq "$RUNS"); do
		dir=$work/n$n-r$r
		start_server "$dir"
		sleep 1 # let it settle before the idle reading
		idle=$(rss_kb "$server_pid")
		# per member: CHATS_PER_S / N, at most the room's 1 per 3 s
		rate=$(awk -v c="$CHATS_PER_S" -v n="$n" 'BEGIN { r = c / n; if (r > 1 / 3) r = 1 / 3; printf "%.6f", r }')
		load_avg=$(cut -d' ' -f1 /proc/loadavg)
		out=$(nice -n "$NICE" "$load" --url "ws://127.0.0.1:$port/" -n "$n" --duration "$DURATION" \
			--rate "$rate" --server-pid "$server_pid" $SPACE_LOAD_ARGS 2>"$dir/load.err" | tail -n1) || true
		stop_server
		if [[ $out != RESULT* ]]; then
			echo "N=$n run $r: space-load failed:" >&2
			tail -n 20 "$dir/load.err" >&2
			continue
		fi
		printf 'N=%-5s run %s: chats/s %s deliveries/s %s p50 %s ms p99 %s ms max %s ms lost %s dups %s idle %s KiB peak %s KiB (join %s s, %s MB received while joining; load average %s)\n' \
			"$n" "$r" "$(value chats_per_s "$out")" "$(value deliveries_per_s "$out")" \
			"$(value p50_ms "$out")" "$(value p99_ms "$out")" "$(value max_ms "$out")" \
			"$(value lost "$out")" "$(value dups "$out")" "$idle" "$(value hwm_kb "$out")" \
			"$(value join_s "$out")" "$(value join_rx_mb "$out")" "$load_avg"
		results[$n]+="$idle $out"$'\n'
	done
done

echo
printf '%-6s %10s %13s %9s %9s %9s %8s %10s %10s %8s %10s\n' members chats/s deliveries/s p50_ms p99_ms max_ms lost idle_KiB peak_KiB join_s join_MB
for n in $SIZES; do
	lines=${results[$n]:-}
	[[ -n $lines ]] || { printf '%-6s (no successful run)\n' "$n"; continue; }
	col() { while read -r idle rest; do [[ -n $idle ]] || continue; if [[ $1 == idle ]]; then echo "$idle"; else value "$1" "$rest"; fi; done <<<"$lines" | median; }
	printf '%-6s %10s %13s %9s %9s %9s %8s %10s %10s %8s %10s\n' "$n" "$(col chats_per_s)" \
		"$(col deliveries_per_s)" "$(col p50_ms)" "$(col p99_ms)" "$(col max_ms)" \
		"$(col lost)" "$(col idle)" "$(col hwm_kb)" "$(col join_s)" "$(col join_rx_mb)"
	if [[ $n == 1000 ]]; then
		t_lost=$(col lost) t_p99=$(col p99_ms) t_rss=$(col hwm_kb)
	fi
	if [[ $n == 5000 ]]; then
		b_lost=$(col lost) b_p99=$(col p99_ms) b_rss=$(col hwm_kb) b_join=$(col join_s)
		b_mb=$(col join_rx_mb)
	fi
	t_idle=$(col idle)
done

echo
check() { if awk "BEGIN {exit !($2)}"; then echo "  PASS  $1"; else echo "  MISS  $1"; fi; }
echo "targets (medians):"
if [[ -n ${t_lost:-} ]]; then
	check "N=1000 lost deliveries = 0 (got $t_lost)" "$t_lost == 0"
	check "N=1000 p99 <= 50 ms (got $t_p99)" "$t_p99 <= 50"
	check "N=1000 server RSS <= 64 MiB (peak VmHWM $t_rss KiB)" "$t_rss <= 65536"
fi
if [[ -n ${b_lost:-} ]]; then
	check "N=5000 lost deliveries = 0 (got $b_lost)" "$b_lost == 0"
	check "N=5000 all joined within 10 s (got $b_join s)" "$b_join <= 10"
	check "N=5000 at most 30 GB received while joining (got $b_mb MB)" "$b_mb <= 30050"
	check "N=5000 p99 <= 100 ms (got $b_p99)" "$b_p99 <= 100"
	check "N=5000 server RSS <= 64 MiB (peak VmHWM $b_rss KiB)" "$b_rss <= 65536"
fi
check "idle server RSS <= 3 MiB (got ${t_idle:-n/a} KiB)" "${t_idle:--1} >= 0 && ${t_idle:--1} <= 3072"
