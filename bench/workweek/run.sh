#!/usr/bin/env bash
# A simulated work week of a three-agent workspace at accelerated time
# (README.md): every day the host files a plan of three tasks in
# acme/www-lil-intdev-week; three general-agents (ada-bot, bob-bot,
# cal-bot) that watch it claim the tasks, open PRs, review each other's
# (the model is llmfake-server: it approves, and requests changes now and
# then), merge their own and close the plans. Some days two tasks write the
# same file (a conflict: the second PR is rebuilt), some days an agent is
# killed (SIGKILL) in the middle and started again.
#
#   bench/workweek/run.sh [BUILD_DIR] [DAYS]
#
# Prints: PRs merged / closed / left open (must be 0), plans complete or
# left to the owner, GitHub requests per task (the fake's own counters:
# REST and git), the RSS of each agent at its start and at the end, and
# at the end of each day (a restarted agent marked: its new process).
# Exits 1 when a PR is left open or a day does not end.
#
# Knobs (environment): DAY_S (a day's time limit, default 240),
# CYCLE_MS (the agents' plan cycle, default 1000), REVIEW_TIMEOUT_MS
# (default 20000), RESTARTS=0 (no agent is killed: each RSS line is one
# process's from start to end), KEEP=1 keeps the work directory,
# HEAPWALK=heapwalk.so (built from heapwalk.c) with HEAPWALK_DIR=DIR: each
# agent runs with it preloaded and at the end of each day writes its heap's
# chunks in use to DIR/NAME/heap.PID.N.txt (compare two with heapdiff.py).
set -euo pipefail
BUILD=${1:-build}
DAYS=${2:-5}
DAY_S=${DAY_S:-240}
CYCLE_MS=${CYCLE_MS:-1000}
REVIEW_TIMEOUT_MS=${REVIEW_TIMEOUT_MS:-20000}
RESTARTS=${RESTARTS:-1}
[ "$DAYS" -ge 1 ] 2>/dev/null || { echo "workweek: DAYS must be a number >= 1" >&2; exit 2; }
SRC=$(cd "$(dirname "$0")/../.." && pwd)
cd "$SRC"
BIN="$BUILD/general-agent"
GH="$BUILD/tests/fakes/github/ghfake-server"
LLM="$BUILD/tests/fakes/llm/llmfake-server"
for b in "$BIN" "$GH" "$LLM"; do
  [ -x "$b" ] || { echo "workweek: build first ($b missing)" >&2; exit 1; }
done
command -v git >/dev/null && command -v curl >/dev/null && command -v jq >/dev/null ||
  { echo "workweek: needs git, curl and jq" >&2; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  [ -n "${KEEP:-}" ] || rm -rf "$work"; [ -z "${KEEP:-}" ] || echo "kept $work" >&2
}
trap cleanup EXIT

sandbox=on
bwrap --unshare-all --ro-bind / / true >/dev/null 2>&1 || sandbox=off
OWNER=acme REPO=www-lil-intdev-week
LOGINS=(ada-bot bob-bot cal-bot) NAMES=(Ada Bob Cal)
tok() { echo "tok-$1-0123456789abcdef"; }

mkdir -p "$work/seed"
printf '# Week\n' > "$work/seed/README.md"
printf 'test:\n\t@echo tests pass\n' > "$work/seed/Makefile"
printf '# Agents\n' > "$work/seed/LIL-INTDEV-AGENTS.md"
printf '# Scenarios\n' > "$work/seed/SCENARIOS.md"
# The coder: the task's file (the task number from the branch); a task
# titled "Shared …" also writes shared.txt (two of them conflict); a run
# whose prompt carries the review's request adds the line asked for.
cat > "$work/coder.sh" <<'EOF'
set -e
n=$(git rev-parse --abbrev-ref HEAD | sed -n 's/^task-\([0-9]*\)-.*/\1/p')
b=$(git rev-parse --abbrev-ref HEAD)
if grep -q 'say who reviewed it' "$1" && [ -n "$(ls task-*.txt 2>/dev/null)" ] && git log --format=%s | grep -q "task($n)"; then
  echo "reviewed by a peer" >> "$b.txt"; git add "$b.txt"; git commit -q -m "task($n): the review's line"; exit 0
fi
echo "$b by $GIT_AUTHOR_NAME" > "$b.txt"; git add "$b.txt"
if grep -q '^### Task [0-9]*: Shared' "$1"; then echo "$b" > shared.txt; git add shared.txt; fi
git commit -q -m "task($n): the task's file"
EOF
# The model: two reviews of the week ask for changes (the first and the
# fifth review prompt, by the fake's entry budget), the others approve.
review() { # event body comments
  printf '{"match":{"tools":["github_review_pr"],"after_tool":false},%s"captures":{"pr":"Review pull request #([0-9]+)"},"tool_calls":[{"name":"github_review_pr","arguments":{"owner":"%s","repo":"%s","pull_number":"{{pr}}","event":"%s","body":"%s"}}]}' \
    "$4" "$OWNER" "$REPO" "$1" "$2"
}
{
  printf '['
  review REQUEST_CHANGES "The file should also say who reviewed it: please add that line." "" '"times":1,' ; printf ','
  printf '{"match":{"tools":["github_review_pr"],"after_tool":false},"times":3,"captures":{"pr":"Review pull request #([0-9]+)"},"tool_calls":[{"name":"github_review_pr","arguments":{"owner":"%s","repo":"%s","pull_number":"{{pr}}","event":"APPROVE","body":"Read the diff: it does what the task asks."}}]},' "$OWNER" "$REPO"
  review REQUEST_CHANGES "The file should also say who reviewed it: please add that line." "" '"times":1,' ; printf ','
  review APPROVE "Read the diff: it does what the task asks." "" ""; printf ','
  printf '{"match":{"after_tool":true},"content":"Done."},{"content":"OK."}]'
} > "$work/llm.json"

args=()
for l in "${LOGINS[@]}"; do args+=(--token "$(tok "$l"):$l"); done
args+=(--token "$(tok host):host")
"$GH" "${args[@]}" --org $OWNER --repo $OWNER/$REPO --seed "$OWNER/$REPO=$work/seed" \
  --port-file "$work/gh.port" > "$work/gh.log" 2>&1 &
pids+=($!)
"$LLM" --script "$work/llm.json" --port-file "$work/llm.port" > "$work/llm.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/gh.port" ] && [ -s "$work/llm.port" ] && break; sleep 0.1; done
API="http://127.0.0.1:$(cat "$work/gh.port")"
LLM_URL="http://127.0.0.1:$(cat "$work/llm.port")/v1"
HOST=$(tok host)
# The test's reads go to the fake's state (a control endpoint, not
# counted): the request figures are the agents' own.
state() { curl -s "$API/_ghfake/state"; }

new_plan() { # title task-title... → the issue number
  local title=$1 body i=1 t
  shift
  body="# [PLAN] $title\n\n## Goal\nThe day's pages.\n\n## Context\n\n## Tasks\n\n"
  for t in "$@"; do
    body+="### Task $i: $t\n**Status:** pending\n**Assignee:** (empty if unclaimed)\n**Dependencies:** none\n\n**Description:**\nWrite the page.\n\n---\n\n"
    i=$((i + 1))
  done
  body+="## Verification\n- [ ] All tasks completed\n"
  curl -s -H "Authorization: Bearer $HOST" -H 'Content-Type: application/json' \
    --data "{\"title\":\"[PLAN] $title\",\"body\":\"$body\",\"labels\":[\"plan\",\"plan:active\"]}" \
    "$API/repos/$OWNER/$REPO/issues" | jq -r .number
}

new_home() { # i
  local h="$work/home-$1"
  mkdir -p "$h/memory"
  cp "$SRC/SOUL.md" "$SRC/SELF.md.template" "$h/"
  cat > "$h/.env" <<EOF
AGENT_NAME=${NAMES[$1]}
AGENT_GITHUB_USERNAME=${LOGINS[$1]}
AGENT_GITHUB_TOKEN=$(tok "${LOGINS[$1]}")
GITHUB_API_URL=$API
LLM_BASE_URL=$LLM_URL
LLM_MODEL=fake-model
LLM_API_KEY=test-key-0123456789
CODER_COMMAND=sh $work/coder.sh {prompt_file}
CODER_RO_PATHS=$work/coder.sh
CODER_SANDBOX=$sandbox
GA_WS_CYCLE_MS=$CYCLE_MS
GA_REVIEW_TIMEOUT_MS=$REVIEW_TIMEOUT_MS
GA_MAX_REVISIONS=2
GA_GITHUB_SPACING_MS=10
GA_GITHUB_WRITE_SPACING_MS=50
GA_GITHUB_POLL_MS=86400000
DASHBOARD_ADDR=off
EOF
  cat > "$h/memory/watched_workspaces.json" <<EOF
{"version":"bench","savedAt":"2026-01-01T00:00:00.000Z","data":{"format":1,"workspaces":[{"owner":"$OWNER","repo":"$REPO","source":"owner","thread":"","discoveredMs":1,"polledMs":0,"plans":[]}]}}
EOF
}

apid=()
start_agent() { # i
  local h="$work/home-$1"
  local pre=()
  if [ -n "${HEAPWALK:-}" ]; then
    mkdir -p "$HEAPWALK_DIR/${NAMES[$1]}"
    pre=(env "LD_PRELOAD=$(realpath "$HEAPWALK")" "HEAPWALK_DIR=$HEAPWALK_DIR/${NAMES[$1]}")
  fi
  (cd "$h" && GA_SPACE_LOCALHOST_URL=ws://127.0.0.1:1 \
    DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent/ga-bench-no-bus \
    exec "${pre[@]}" "$SRC/$BIN" --no-terminal >>"$h/log" 2>&1) &
  apid[$1]=$!
  pids+=($!)
  local end=$((SECONDS + 30))
  until grep -q "ready and listening" "$h/log" 2>/dev/null; do
    [ $SECONDS -lt $end ] || { echo "workweek: ${NAMES[$1]} did not start" >&2; tail -20 "$h/log" >&2; exit 1; }
    sleep 0.2
  done
}
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
heapwalk() { # i: the agent's heap at this moment (HEAPWALK), waited for
  [ -n "${HEAPWALK:-}" ] || return 0
  local d="$HEAPWALK_DIR/${NAMES[$1]}" n end=$((SECONDS + 20))
  n=$(find "$d" -name "*.txt" | wc -l)
  kill -USR2 "${apid[$1]}"
  until [ "$(find "$d" -name "*.txt" | wc -l)" -gt "$n" ]; do
    [ $SECONDS -lt $end ] || { echo "workweek: no heap walk from ${NAMES[$1]}" >&2; return 0; }
    sleep 0.2
  done
}

rss0=()
for i in 0 1 2; do new_home $i; start_agent $i; done
sleep 5
for i in 0 1 2; do rss0[$i]=$(rss_kb "${apid[$i]}"); done

plans=() tasks=0 restarts=0 late=0
daily=("" "" "") # each agent's RSS at the end of each day, "*" after a restart that day
for day in $(seq "$DAYS"); do
  victim=-1
  if [ $((day % 2)) -eq 1 ] && [ "$day" -gt 1 ]; then
    plan=$(new_plan "Day $day" "Shared note $day a" "Shared note $day b" "Page $day c")
  else
    plan=$(new_plan "Day $day" "Page $day a" "Page $day b" "Page $day c")
  fi
  plans+=("$plan"); tasks=$((tasks + 3))
  killed=no
  end=$((SECONDS + DAY_S))
  while :; do
    s=$(state)
    st=$(echo "$s" | jq -r --argjson n "$plan" '.repos[0].issues[] | select(.number==$n) | .state')
    open=$(echo "$s" | jq '[.repos[0].issues[] | select(.pull and .pull.state=="open")] | length')
    [ "$st" = closed ] && [ "$open" = 0 ] && break
    # even days: once the day's first PR is open, one agent dies and comes back
    if [ "$RESTARTS" != 0 ] && [ $((day % 2)) -eq 0 ] && [ $killed = no ] && [ "$open" -ge 1 ]; then
      v=$(( (day / 2) % 3 ))
      kill -KILL "${apid[$v]}"; wait "${apid[$v]}" 2>/dev/null || true
      start_agent $v
      killed=yes; restarts=$((restarts + 1)); victim=$v
    fi
    [ $SECONDS -lt $end ] || { late=$((late + 1)); echo "workweek: day $day did not end in ${DAY_S}s (plan #$plan $st, $open PRs open)" >&2; break; }
    sleep 1
  done
  for i in 0 1 2; do
    mark=""; [ "$victim" = "$i" ] && mark="*"
    daily[$i]+=" $(rss_kb "${apid[$i]}")$mark"
  done
  for i in 0 1 2; do heapwalk $i; done
done

rss1=()
for i in 0 1 2; do rss1[$i]=$(rss_kb "${apid[$i]}"); done
s=$(state)
pulls=$(echo "$s" | jq '[.repos[0].issues[] | select(.pull) | .pull]')
merged=$(echo "$pulls" | jq '[.[] | select(.merged_at != null)] | length')
closed=$(echo "$pulls" | jq '[.[] | select(.state == "closed" and .merged_at == null)] | length')
openprs=$(echo "$pulls" | jq '[.[] | select(.state == "open")] | length')
complete=0 leftover=0
for p in "${plans[@]}"; do
  if echo "$s" | jq -e --argjson n "$p" '.repos[0].issues[] | select(.number==$n) | .state=="closed" and ([.labels[].name] | index("plan:complete"))' >/dev/null; then
    complete=$((complete + 1)); else leftover=$((leftover + 1)); fi
done
stats=$(curl -s "$API/_ghfake/stats")
rest=$(echo "$stats" | jq .rest) git=$(echo "$stats" | jq .git) nm=$(echo "$stats" | jq .not_modified)
writes=$(echo "$stats" | jq .writes)

echo "workweek: $DAYS days, $tasks tasks, ${#plans[@]} plans, $restarts restarts, cycle ${CYCLE_MS} ms, coder sandbox $sandbox ($(nproc) cores)"
echo
echo "| figure | value |"
echo "|---|---|"
echo "| PRs merged / closed (rebuilt) / left open | $merged / $closed / $openprs |"
echo "| plans complete / left to the owner | $complete / $leftover |"
echo "| days that did not end in ${DAY_S}s | $late |"
printf '| GitHub REST requests per task (304s, writes) | %s (%s, %s) |\n' \
  "$(( rest / tasks ))" "$(( nm / tasks ))" "$(( writes / tasks ))"
printf '| git requests per task | %s |\n' "$(( git / tasks ))"
for i in 0 1 2; do
  printf '| RSS of %s at start / end | %s kB / %s kB |\n' "${NAMES[$i]}" "${rss0[$i]}" "${rss1[$i]}"
done
for i in 0 1 2; do
  printf '| RSS of %s at the end of each day, kB (* restarted that day) |%s |\n' "${NAMES[$i]}" "${daily[$i]}"
done
[ "$openprs" = 0 ] && [ "$late" = 0 ]
