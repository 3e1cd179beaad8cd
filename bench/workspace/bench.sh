#!/usr/bin/env bash
# The work loop's figures (modules/workspace): what a task costs, what an
# agent watching a workspace costs at rest, and what a plan cycle asks of
# GitHub. Every figure is a median.
#
#   bench/workspace/bench.sh [BUILD_DIR] [RUNS]
#
# Everything on 127.0.0.1: ghfake-server (the GitHub fake, real git behind
# it: clones, pushes and PRs are real git work) and the real general-agent
# binary with GitHub configured, no model, no room (GA_SPACE_LOCALHOST_URL
# at a closed port, no D-Bus: nothing of a user's is reached), the
# dashboard off, the plan-awareness cycle every second (GA_WS_CYCLE_MS), and
# a scripted coder that writes and commits one file (in the bubblewrap
# sandbox when it works here, else CODER_SANDBOX=off — the report says which).
#
#   task wall time   RUNS agents, each on a fresh plan of 5 tasks it works
#                    through alone; every task's phases as the agent logs them
#                    ("task timing": clone = mirror fetch + remote reads +
#                    clone, coder = the sandboxed coder, tests = make test in
#                    the sandbox, push = push + ls-remote + the plan re-read,
#                    pr = opening the PR through outbound); medians of the
#                    5 × RUNS tasks;
#   idle RSS         VmRSS of the agent 20 cycles after its last task (a
#                    workspace watched, its plan read every second, nothing to
#                    do), against the same agent with GitHub configured and
#                    no workspace; medians of RUNS;
#   requests/cycle   from the agent's "plan cycle done" lines, one open plan:
#                    a cycle of an unchanged plan (GET the plan list and the
#                    plan's comments, both answered 304 from the ETag cache:
#                    free of rate budget), and a cycle right after a change
#                    (a person's comment).
# Each run's plan has task titles of its own (task branches are named after
# the titles: the same titles would find the previous run's branches).
set -euo pipefail
BUILD=${1:-build}
RUNS=${2:-5}
[ "$RUNS" -ge 3 ] 2>/dev/null || { echo "bench: RUNS must be a number >= 3" >&2; exit 2; }
BIN="$BUILD/general-agent"
FAKE="$BUILD/tests/fakes/github/ghfake-server"
[ -x "$BIN" ] && [ -x "$FAKE" ] || { echo "bench: build first (general-agent, ghfake-server)" >&2; exit 1; }
command -v git >/dev/null && command -v curl >/dev/null || { echo "bench: needs git and curl" >&2; exit 1; }
SRC=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  [ -n "${KEEP:-}" ] || rm -rf "$work"; [ -z "${KEEP:-}" ] || echo "kept $work" >&2
}
trap cleanup EXIT

sandbox=on
bwrap --unshare-all --ro-bind / / true >/dev/null 2>&1 || sandbox=off

median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) {print "n/a"; exit} m=int((NR+1)/2); if (NR%2) print a[m]; else printf "%.0f\n", (a[m]+a[m+1])/2}'; }

mkdir -p "$work/seed"
printf '# Demo\n' > "$work/seed/README.md"
printf 'test:\n\t@echo tests pass\n' > "$work/seed/Makefile"
printf '# Agents\n' > "$work/seed/LIL-INTDEV-AGENTS.md"
printf '# Scenarios\n' > "$work/seed/SCENARIOS.md"
cat > "$work/coder.sh" <<'EOF'
set -e
n=$(sed -n 's/^### Task \([0-9]*\):.*/\1/p' "$1" | head -1)
echo "task $n" > "task-$n.txt"
git add "task-$n.txt"
git commit -q -m "task($n): the task's file"
EOF

TOKEN=tok-bench-0123456789abcdef
"$FAKE" --token "$TOKEN:bench-bot" --org acme --repo acme/www-lil-intdev-bench \
  --seed "acme/www-lil-intdev-bench=$work/seed" --port-file "$work/fake.port" \
  > "$work/fake.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/fake.port" ] && break; sleep 0.1; done
PORT=$(cat "$work/fake.port")
API="http://127.0.0.1:$PORT"

new_plan() { # title → the issue number
  local body n i
  body="# [PLAN] $1\n\n## Goal\nFive files.\n\n## Context\n\n## Tasks\n\n"
  for i in 1 2 3 4 5; do
    body+="### Task $i: File $i of $1\n**Status:** pending\n**Assignee:** (empty if unclaimed)\n**Dependencies:** none\n\n**Description:**\nWrite file $i.\n\n---\n\n"
  done
  body+="## Verification\n- [ ] All tasks completed\n"
  n=$(curl -s -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    --data "{\"title\":\"[PLAN] $1\",\"body\":\"$body\",\"labels\":[\"plan\"]}" \
    "$API/repos/acme/www-lil-intdev-bench/issues" | sed -n 's/.*"number":\([0-9]*\).*/\1/p' | head -1)
  echo "$n"
}

# A home with the agent's identity and, unless "none", the workspace watched.
new_home() { # dir watch(yes|none)
  mkdir -p "$1/memory"
  cp "$SRC/SOUL.md" "$SRC/SELF.md.template" "$1/"
  cat > "$1/.env" <<EOF
AGENT_NAME=Bench
AGENT_GITHUB_USERNAME=bench-bot
AGENT_GITHUB_TOKEN=$TOKEN
GITHUB_API_URL=$API
CODER_COMMAND=sh $work/coder.sh {prompt_file}
CODER_RO_PATHS=$work/coder.sh
CODER_SANDBOX=$sandbox
GA_WS_CYCLE_MS=1000
GA_GITHUB_SPACING_MS=10
GA_GITHUB_WRITE_SPACING_MS=50
GA_GITHUB_POLL_MS=86400000
DASHBOARD_ADDR=off
EOF
  if [ "$2" = yes ]; then
    cat > "$1/memory/watched_workspaces.json" <<'EOF'
{"version":"bench","savedAt":"2026-01-01T00:00:00.000Z","data":{"format":1,"workspaces":[{"owner":"acme","repo":"www-lil-intdev-bench","source":"owner","thread":"","discoveredMs":1,"polledMs":0,"plans":[]}]}}
EOF
  fi
}

start_agent() { # home log
  (cd "$1" && GA_SPACE_LOCALHOST_URL=ws://127.0.0.1:1 \
    DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent/ga-bench-no-bus \
    exec "$SRC/$BIN" --no-terminal >"$2" 2>&1) &
  echo $!
}

wait_count() { # file needle n seconds
  local end=$((SECONDS + $4))
  while [ "$(grep -c -- "$2" "$1" 2>/dev/null || true)" -lt "$3" ]; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.2
  done
}

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
field() { sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }

: > "$work/tasks.txt"; : > "$work/rss_ws.txt"; : > "$work/rss_none.txt"
: > "$work/idle_req.txt"; : > "$work/idle_304.txt"; : > "$work/chg_req.txt"; : > "$work/chg_304.txt"
for run in $(seq "$RUNS"); do
  plan=$(new_plan "Bench $run")
  home="$work/home-$run"
  new_home "$home" yes
  pid=$(start_agent "$home" "$home/log")
  pids+=("$pid")
  wait_count "$home/log" "task timing" 5 300 || { echo "bench: run $run: the tasks did not finish" >&2; tail -30 "$home/log" >&2; exit 1; }
  grep "task timing" "$home/log" >> "$work/tasks.txt"
  # at rest: 20 cycles after the last task (the last report's cycle included)
  n=$(grep -c "plan cycle done" "$home/log")
  wait_count "$home/log" "plan cycle done" $((n + 20)) 120
  rss_kb "$pid" >> "$work/rss_ws.txt"
  grep "plan cycle done" "$home/log" | tail -5 | field requests >> "$work/idle_req.txt"
  grep "plan cycle done" "$home/log" | tail -5 | field not_modified >> "$work/idle_304.txt"
  # a change: a comment on the plan; the next cycle reads it
  n=$(grep -c "plan cycle done" "$home/log")
  curl -s -o /dev/null -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    --data '{"body":"a comment from a person"}' "$API/repos/acme/www-lil-intdev-bench/issues/$plan/comments"
  wait_count "$home/log" "plan cycle done" $((n + 2)) 60
  grep "plan cycle done" "$home/log" | sed -n "$((n + 1))p" | field requests >> "$work/chg_req.txt"
  grep "plan cycle done" "$home/log" | sed -n "$((n + 1))p" | field not_modified >> "$work/chg_304.txt"
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
  # one open plan at a time: the next run's cycles read one plan
  curl -s -o /dev/null -X PATCH -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
    --data '{"state":"closed"}' "$API/repos/acme/www-lil-intdev-bench/issues/$plan"
  # the same agent with no workspace
  home2="$work/none-$run"
  new_home "$home2" none
  pid=$(start_agent "$home2" "$home2/log")
  pids+=("$pid")
  wait_count "$home2/log" "ready and listening" 1 30
  sleep 20
  rss_kb "$pid" >> "$work/rss_none.txt"
  kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
done

echo "work loop figures: $RUNS runs, $((RUNS * 5)) tasks, coder sandbox $sandbox ($(nproc) cores)"
echo
echo "| a task's phase | median ms |"
echo "|---|---|"
for f in clone_ms coder_ms tests_ms push_ms pr_ms total_ms; do
  printf '| %s | %s |\n' "${f%_ms}" "$(field "$f" < "$work/tasks.txt" | median)"
done
echo
printf '| idle RSS, a workspace watched (its plan read every second) | %s kB |\n' "$(median < "$work/rss_ws.txt")"
printf '| idle RSS, GitHub configured, no workspace | %s kB |\n' "$(median < "$work/rss_none.txt")"
printf '| GitHub requests per cycle, unchanged plan | %s (%s of them 304) |\n' \
  "$(median < "$work/idle_req.txt")" "$(median < "$work/idle_304.txt")"
printf '| GitHub requests per cycle after a comment | %s (%s of them 304) |\n' \
  "$(median < "$work/chg_req.txt")" "$(median < "$work/chg_304.txt")"
