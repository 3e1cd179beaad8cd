#!/usr/bin/env bash
# `make demo`: a short tour of general-agent and agent-space on this machine.
#
# It builds what it runs (quietly: the build's output goes to
# BUILD/demo-build.log and is shown only if the build fails), then tells one
# story in numbered sections: a room opens, an agent called Ada checks its
# configuration, starts and joins the room, the host speaks to it and the
# pipeline records what it decided, its owner talks to it (without a model,
# then with a scripted stand-in), it refuses what it must refuse, and it
# leaves. Each section shows only the lines of the room and of Ada written
# during that section, merged in time order.
#
# Nothing here needs credentials or the network beyond 127.0.0.1, nothing is
# left running, and nothing outside one temp directory (and BUILD) is
# written. Colour only when stdout is a terminal (and NO_COLOR is unset).
#
# Usage: scripts/demo.sh [BUILD_DIR]   (JOBS, PREFIX, CMAKE_FLAGS from the Makefile)
set -uo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-build}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}

if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
  BOLD=$'\033[1m' DIM=$'\033[2m' OFF=$'\033[0m'
else
  BOLD='' DIM='' OFF=''
fi

# --- 0. the build, quietly ----------------------------------------------------------
mkdir -p "$BUILD"
BUILD=$(cd "$BUILD" && pwd)
buildlog="$BUILD/demo-build.log"
printf 'Building general-agent and agent-space in %s (log: %s) ... ' "$BUILD" "$buildlog"
if ! {
  "$SRC/scripts/bootstrap.sh" &&
    { [ -f "$BUILD/CMakeCache.txt" ] ||
      cmake -S "$SRC" -B "$BUILD" -DCMAKE_INSTALL_PREFIX="${PREFIX:-/usr/local}" ${CMAKE_FLAGS:-}; } &&
    cmake --build "$BUILD" -j "$JOBS" --target general-agent agent-space llmfake-server
} >"$buildlog" 2>&1; then
  echo "failed."
  echo "The last lines of $buildlog:"
  tail -n 40 "$buildlog"
  exit 1
fi
echo "done."

GA="$BUILD/general-agent"
SPACE="$BUILD/agent-space"
FAKE="$BUILD/tests/fakes/llm/llmfake-server"

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

n=0
section() { n=$((n + 1)); printf '\n%s%d. %s%s\n' "$BOLD" "$n" "$*" "$OFF"; }
note() { printf '%s%s%s\n' "$DIM" "$*" "$OFF"; }
wait_for() { # FILE TEXT SECONDS: true once FILE contains TEXT
  local i
  for ((i = 0; i < $3 * 20; i++)); do
    grep -qF -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# news: the lines the room's and Ada's logs got since the last call, merged
# in time order (log lines start with an ISO time; a line without one keeps
# the time of the line before it), each labelled with who wrote it.
declare -A seen=()
news() {
  local f label lines
  : >"$work/news"
  for f in "$work/space.log" "$work/agent.log"; do
    [ -f "$f" ] || continue
    case $f in *space.log) label='room' ;; *) label='Ada ' ;; esac
    lines=$(wc -l <"$f")
    awk -v from="${seen[$f]:-0}" -v label="$label" '
      function stamped() { return $1 ~ /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T/ }
      NR <= from { if (stamped()) t = $1; next }
      NR > upto { exit }
      { if (stamped()) { t = $1; sub(/^[^ ]+/, substr(t, 12, 12)) }
        else if (t != "") $0 = substr(t, 12, 12) " " $0
        print (t == "" ? "0" : t) "\t" label " | " $0 }' upto="$lines" "$f" >>"$work/news"
    seen[$f]=$lines
  done
  sort -s -t $'\t' -k1,1 "$work/news" | cut -f2-
}

# A scratch home for Ada: the example SOUL.md, nothing else of its own (the
# SELF.md template comes from the source tree, as for any build).
home="$work/ada"
mkdir -p "$home"
cp "$SRC/SOUL.md" "$home/"
printf 'AGENT_NAME=Ada\n' >"$home/.env"
ga() { (cd "$home" && "$GA" "$@"); }

# --- the story -------------------------------------------------------------------------
section "A room opens: agent-space on 127.0.0.1 (a port of its own, no mDNS)"
mkfifo "$work/host.in"
SPACE_PORT=0 SPACE_BIND=127.0.0.1 SPACE_DATA_DIR="$work/space-data" SPACE_NAME=demo-room \
  "$SPACE" --no-mdns --port-file "$work/space.port" <"$work/host.in" >"$work/space.log" 2>&1 &
pids+=($!)
exec 9>"$work/host.in"
if ! wait_for "$work/space.port" "" 5 || [ ! -s "$work/space.port" ]; then
  echo "agent-space did not start:"
  cat "$work/space.log"
  exit 1
fi
port=$(cat "$work/space.port")
news
echo "GET /healthz: $(curl -fsS "http://127.0.0.1:$port/healthz")"
printf 'SPACE_URL=ws://127.0.0.1:%s\n' "$port" >>"$home/.env"

section "Ada's home is a directory with a SOUL.md; doctor checks it before the first start"
note "\$ general-agent doctor        (in $home)"
ga doctor

section "Ada starts: SOUL.md is pinned, SELF.md written from the template, the room joined"
mkfifo "$work/owner.in"
(cd "$home" && exec "$GA") <"$work/owner.in" >"$work/agent.out" 2>"$work/agent.log" &
agent=$!
pids+=($agent)
exec 8>"$work/owner.in"
wait_for "$work/agent.log" "joined the room" 10 || note "(Ada did not report joining the room within 10 s)"
wait_for "$work/space.log" "member joined" 2
news
note "SELF.md, first lines:"
sed -n '1,4p' "$home/SELF.md"

section "The host speaks to Ada in the room; every stage's decision is logged"
note "host> @Ada welcome to the room"
echo "@Ada welcome to the room" >&9
wait_for "$work/agent.log" "host addressed me" 5 || note "(Ada did not note the message within 5 s)"
sleep 0.3
news
note "\$ general-agent decisions    (memory/decisions.jsonl; 'general-agent why ID' tells one message's story)"
ga decisions --tail 5
note "(Ada does not compose replies in the room yet: that is the next piece of work.)"

section "Ada's owner types at its terminal; no model is configured"
note "owner> hello Ada"
echo "hello Ada" >&8
wait_for "$work/agent.out" "needs a model" 5 || note "(no answer within 5 s)"
cat "$work/agent.out"

section "general-agent status: what the running daemon reports"
ga status

section "A second daemon on the same memory is refused (exit 75)"
ga --no-terminal
echo "exit code: $?"

section "SIGTERM: Ada shuts down and leaves the room"
kill -TERM "$agent"
wait "$agent"
echo "exit code: $?"
exec 8>&-
wait_for "$work/space.log" "member left" 2
news

if [ -x "$FAKE" ]; then
  section "With a model: a scripted OpenAI-compatible stand-in (tests/fakes/llm) on 127.0.0.1"
  cat >"$work/model.json" <<'JSON'
[
  {"match": {"call": 0}, "content": "Hello! I'm Ada. I keep my promises and stay quiet unless I have something to add."},
  {"match": {"call": 1}, "tool_calls": [{"name": "github_create_issue",
     "arguments": {"owner": "acme", "repo": "widgets", "title": "Document the release checklist"}}]},
  {"match": {"call": 2}, "content": "Noted: it is in my commitment ledger, pending. This build has no GitHub client yet, so it waits there."}
]
JSON
  "$FAKE" --script "$work/model.json" --port-file "$work/model.port" </dev/null >/dev/null 2>&1 &
  pids+=($!)
  if wait_for "$work/model.port" "" 5 && [ -s "$work/model.port" ]; then
    note "(the model's answers are scripted; Ada's handling of them is real)"
    printf 'LLM_BASE_URL=http://127.0.0.1:%s/v1\nLLM_MODEL=demo-model\n' "$(cat "$work/model.port")" >>"$home/.env"
    rm -f "$work/owner.in" "$work/agent.out"
    mkfifo "$work/owner.in"
    (cd "$home" && exec "$GA") <"$work/owner.in" >"$work/agent.out" 2>"$work/agent2.log" &
    agent=$!
    pids+=($agent)
    exec 8>"$work/owner.in"
    wait_for "$work/agent2.log" "ready and listening" 10
    echo "owner> who are you?"
    echo "who are you?" >&8
    wait_for "$work/agent.out" "Hello!" 10 || note "(no answer within 10 s)"
    tail -n 1 "$work/agent.out"
    echo "owner> please open an issue on acme/widgets to document the release checklist"
    echo "please open an issue on acme/widgets to document the release checklist" >&8
    wait_for "$work/agent.out" "Noted:" 10 || note "(no answer within 10 s)"
    tail -n 1 "$work/agent.out"
    note "memory/commitments.jsonl:"
    cat "$home/memory/commitments.jsonl" 2>/dev/null || note "(no commitment was written)"
    echo "owner> exit"
    echo "exit" >&8
    wait "$agent"
    echo "exit code: $?"
    exec 8>&-
  else
    note "(the model stand-in did not start; skipping this section)"
  fi
  # This run's own log is agent2.log; the room's lines about it are not retold.
  seen["$work/space.log"]=$(wc -l <"$work/space.log")
fi

section "An edited SOUL.md is refused (exit 78) until the owner accepts it"
cp "$home/SOUL.md" "$work/SOUL.orig"
echo "A different soul." >>"$home/SOUL.md"
ga --no-terminal
echo "exit code: $?"
cp "$work/SOUL.orig" "$home/SOUL.md"

if "$GA" validate --help >/dev/null 2>&1; then
  section "general-agent validate: the check every reply passes before it is sent"
  printf 'I think we should cache the user list in Redis for five minutes.\n' >"$work/history.txt"
  note "earlier in the room: I think we should cache the user list in Redis for five minutes."
  note "candidate reply:     Agreed, caching the user list in Redis for five minutes is the way to go."
  "$GA" validate --history "$work/history.txt" \
    "Agreed, caching the user list in Redis for five minutes is the way to go."
fi

section "The host closes the room"
note "host> /quit"
echo "/quit" >&9
exec 9>&-
wait_for "$work/space.log" "shutting down" 3
sleep 0.3
news

cat <<EOF

${BOLD}What to try next${OFF}
  Your own agent:   mkdir -p ~/agents/ada && cd ~/agents/ada
                    write SOUL.md (who the agent is; $SRC/SOUL.md is an example)
                    $GA doctor      then      $GA
  A model:          LLM_BASE_URL and LLM_MODEL (or AI_GATEWAY_API_KEY) in the agent's .env
                    (README.md, "The model": OpenAI, OpenRouter, Ollama, llama.cpp, vLLM)
  A room:           $SPACE      (type lines as the host; /who, /quit)
  What it decided:  $GA decisions --follow      (in the agent's home)
  As a service:     make install, then README.md "Installing as a service"
  Everything else:  make test
EOF
