#!/usr/bin/env bash
# `make demo`: a short, self-contained tour on this machine. It runs an
# agent-space room and a general-agent with the example identity in a
# scratch home, with no credentials, shows what each says, and stops them.
# Nothing is left running and nothing outside a temp directory is written.
set -uo pipefail
BUILD=${1:-build}
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$BUILD" && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
wait_for() { # file text seconds
  for _ in $(seq $(( $3 * 20 ))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
  return 1
}

home="$work/ada"
mkdir -p "$home"
cp "$SRC/SOUL.md" "$SRC/SELF.md.template" "$home/"
cat > "$home/.env" <<ENV
AGENT_NAME=Ada
# No model, Bluesky or GitHub credentials: the agent says what is off and why.
ENV

if [ -x "$BUILD/agent-space" ]; then
  say "agent-space: a room on 127.0.0.1 (ephemeral port, no mDNS)"
  mkfifo "$work/host.in"
  SPACE_PORT=0 SPACE_BIND=127.0.0.1 SPACE_DATA_DIR="$work/space-data" SPACE_NAME=demo-room \
    "$BUILD/agent-space" --no-mdns --port-file "$work/space.port" \
    <"$work/host.in" >"$work/space.log" 2>&1 &
  pids+=($!)
  exec 9>"$work/host.in"
  if wait_for "$work/space.port" . 5; then
    port=$(cat "$work/space.port")
    echo "listening on ws://127.0.0.1:$port"
    curl -fsS "http://127.0.0.1:$port/healthz" && echo
    echo "SPACE_URL=ws://127.0.0.1:$port" >> "$home/.env"
    echo "/who" >&9
    sleep 0.3
    sed -n '1,8p' "$work/space.log"
  else
    echo "(agent-space did not start; see below)"; cat "$work/space.log"
  fi
fi

say "general-agent doctor (home $home)"
(cd "$home" && "$BUILD/general-agent" doctor)

say "general-agent: first start pins SOUL.md, writes SELF.md from the template, joins the room"
mkfifo "$work/owner.in"
(cd "$home" && exec "$BUILD/general-agent") <"$work/owner.in" >"$work/agent.out" 2>"$work/agent.log" &
agent=$!
pids+=($agent)
exec 8>"$work/owner.in"
wait_for "$work/agent.log" "ready and listening" 10
wait_for "$work/agent.log" "joined the room" 5
cat "$work/agent.log"

if [ -n "${port:-}" ]; then
  say "the host speaks to Ada in the room (no model here: Ada notes it and stays quiet)"
  echo "@Ada welcome to the room" >&9
  wait_for "$work/agent.log" "host addressed me" 5
  grep "host addressed me" "$work/agent.log" | tail -n 1
fi

say "the owner types at Ada's terminal (no model configured)"
echo "hello Ada" >&8
wait_for "$work/agent.out" "needs a model" 5
cat "$work/agent.out"

say "SELF.md as written for Ada (first lines)"
sed -n '1,4p' "$home/SELF.md"

say "general-agent status"
(cd "$home" && "$BUILD/general-agent" status)

say "a second daemon on the same memory is refused (exit 75)"
(cd "$home" && "$BUILD/general-agent" --no-terminal); echo "exit code: $?"

say "SIGTERM: graceful shutdown (Ada leaves the room politely)"
kill -TERM "$agent"; wait "$agent"; echo "exit code: $?"
exec 8>&-
tail -n 3 "$work/agent.log"

fake="$BUILD/tests/fakes/llm/llmfake-server"
if [ -x "$fake" ]; then
  say "with a model: a scripted OpenAI-compatible stand-in (tests/fakes/llm) on 127.0.0.1"
  cat > "$work/model.json" <<'JSON'
[
  {"match": {"call": 0}, "content": "Hello! I'm Ada. I keep my promises and stay quiet unless I have something to add."},
  {"match": {"call": 1}, "tool_calls": [{"name": "github_create_issue",
     "arguments": {"owner": "acme", "repo": "widgets", "title": "Document the release checklist"}}]},
  {"match": {"call": 2}, "content": "Done: the issue is in my commitment ledger and will be opened on acme/widgets."}
]
JSON
  "$fake" --script "$work/model.json" --port-file "$work/model.port" </dev/null >/dev/null 2>&1 &
  pids+=($!)
  wait_for "$work/model.port" . 5
  mport=$(cat "$work/model.port")
  printf 'LLM_BASE_URL=http://127.0.0.1:%s/v1\nLLM_MODEL=demo-model\n' "$mport" >> "$home/.env"
  rm -f "$work/owner.in"; mkfifo "$work/owner.in"
  (cd "$home" && exec "$BUILD/general-agent") <"$work/owner.in" >"$work/agent2.out" 2>"$work/agent2.log" &
  agent=$!
  pids+=($agent)
  exec 8>"$work/owner.in"
  wait_for "$work/agent2.log" "ready and listening" 10
  echo "owner> who are you?"
  echo "who are you?" >&8
  wait_for "$work/agent2.out" "Hello!" 10
  tail -n 1 "$work/agent2.out"
  echo "owner> please open an issue on acme/widgets to document the release checklist"
  echo "please open an issue on acme/widgets to document the release checklist" >&8
  wait_for "$work/agent2.out" "Done:" 10
  tail -n 1 "$work/agent2.out"
  echo "commitment ledger (memory/commitments.jsonl):"
  cat "$home/memory/commitments.jsonl"
  echo "exit" >&8
  wait "$agent"; echo "exit code: $?"
  exec 8>&-
fi

say "an edited SOUL.md is refused (exit 78) until the owner accepts it"
cp "$home/SOUL.md" "$work/SOUL.orig"
echo "A different soul." >> "$home/SOUL.md"
(cd "$home" && "$BUILD/general-agent" --no-terminal); echo "exit code: $?"
cp "$work/SOUL.orig" "$home/SOUL.md"

if [ -x "$BUILD/general-agent" ] && "$BUILD/general-agent" validate --help >/dev/null 2>&1; then
  say "general-agent validate: the post-generation validator"
  printf 'I think we should cache the user list in Redis for five minutes.\n' > "$work/history.txt"
  "$BUILD/general-agent" validate --history "$work/history.txt" \
    "Agreed, caching the user list in Redis for five minutes is the way to go." || true
fi

if [ -n "${port:-}" ]; then
  say "agent-space: the host quits the room"
  echo "/quit" >&9
  sleep 0.5
  tail -n 4 "$work/space.log"
fi
echo
echo "demo done."
