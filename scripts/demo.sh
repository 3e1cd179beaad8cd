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

say "general-agent: first start pins SOUL.md, writes SELF.md from the template, idles"
(cd "$home" && exec "$BUILD/general-agent" --no-terminal) >"$work/agent.out" 2>"$work/agent.log" &
agent=$!
pids+=($agent)
wait_for "$work/agent.log" "ready and listening" 10
cat "$work/agent.log"

say "SELF.md as written for Ada (first lines)"
sed -n '1,4p' "$home/SELF.md"

say "general-agent status"
(cd "$home" && "$BUILD/general-agent" status)

say "a second daemon on the same memory is refused (exit 75)"
(cd "$home" && "$BUILD/general-agent" --no-terminal); echo "exit code: $?"

say "SIGTERM: graceful shutdown"
kill -TERM "$agent"; wait "$agent"; echo "exit code: $?"
tail -n 2 "$work/agent.log"

say "an edited SOUL.md is refused (exit 78) until the owner accepts it"
echo "A different soul." >> "$home/SOUL.md"
(cd "$home" && "$BUILD/general-agent" --no-terminal); echo "exit code: $?"

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
