#!/usr/bin/env bash
# `make demo`: the product as it is, on this machine, in about a minute.
#
# A room (agent-space) opens; two agents, Ada and Ben, join it, each with a
# model (the scripted stand-in from tests/fakes/llm: its answers are written
# below, what the agents do with them is real) and a GitHub account (the
# GitHub stand-in from tests/fakes/github, which speaks GitHub's REST API).
# The host asks Ben a question and he answers; the host asks for an issue:
# Ada, whom the room's ownership rule names, promises it, opens it on the
# GitHub stand-in and says its link in the room. `general-agent why` tells
# the story of the host's request; each agent's dashboard is on its own
# port. At a terminal the demo waits for Enter before it ends, so the
# dashboards can be opened.
#
# It builds what it runs (quietly: the output goes to BUILD/demo-build.log,
# shown if the build fails). Nothing needs credentials or the network beyond
# 127.0.0.1, nothing is left running, nothing outside one temp directory
# (and BUILD) is written. Colour only when stdout is a terminal (and NO_COLOR
# is unset). DEMO_NO_WAIT=1 never waits for Enter; DEMO_BUILT=1 uses BUILD as
# it is (no bootstrap, no build: for the test that runs the demo); DEMO_KEEP=1 keeps the temp
# directory (the homes, logs and the room's chat log) and says where.
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
printf 'Building general-agent, agent-space and the two stand-ins in %s (log: %s) ... ' \
  "$BUILD" "$buildlog"
if [ "${DEMO_BUILT:-0}" = 1 ]; then
  echo "skipped (DEMO_BUILT=1)."
elif ! {
  "$SRC/scripts/bootstrap.sh" &&
    { [ -f "$BUILD/CMakeCache.txt" ] ||
      cmake -S "$SRC" -B "$BUILD" -DCMAKE_INSTALL_PREFIX="${PREFIX:-/usr/local}" ${CMAKE_FLAGS:-}; } &&
    cmake --build "$BUILD" -j "$JOBS" --target general-agent agent-space llmfake-server ghfake-server
} >"$buildlog" 2>&1; then
  echo "failed."
  echo "The last lines of $buildlog:"
  tail -n 40 "$buildlog"
  exit 1
else
  echo "done."
fi

GA="$BUILD/general-agent"
SPACE="$BUILD/agent-space"
LLMFAKE="$BUILD/tests/fakes/llm/llmfake-server"
GHFAKE="$BUILD/tests/fakes/github/ghfake-server"

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  wait 2>/dev/null
  if [ "${DEMO_KEEP:-0}" = 1 ]; then echo "(kept: $work)"; else rm -rf "$work"; fi
}
trap cleanup EXIT

n=0
section() { n=$((n + 1)); printf '\n%s%d. %s%s\n' "$BOLD" "$n" "$*" "$OFF"; }
note() { printf '%s%s%s\n' "$DIM" "$*" "$OFF"; }
die() { echo "demo: $*" >&2; exit 1; }
wait_for() { # FILE TEXT SECONDS: true once FILE contains TEXT
  local i
  for ((i = 0; i < $3 * 20; i++)); do
    grep -qF -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}
wait_chat() { # NAME TEXT SECONDS: true once NAME said something holding TEXT in the room
  local i re="\"agentName\":\"$1\",[^}]*\"type\":\"chat\",\"content\":\"[^\"]*$2"
  for ((i = 0; i < $3 * 20; i++)); do
    grep -qE -- "$re" "$work/room-data/chat.jsonl" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}
port_of() { # FILE SECONDS: the port a server wrote to FILE
  wait_for "$1" "" "$2" && [ -s "$1" ] && cat "$1"
}

# The room's conversation as the host sees it: the chats the room recorded
# since the last call, "name: words" (its log, SPACE_DATA_DIR/chat.jsonl).
said=0
room_news() {
  local f="$work/room-data/chat.jsonl" total
  [ -f "$f" ] || return 0
  total=$(wc -l <"$f")
  sed -n "$((said + 1)),${total}p" "$f" |
    sed -nE 's/.*"agentName":"([^"]*)".*"type":"chat","content":"((\\.|[^"\\])*)".*/  room | \1: \2/p' |
    sed -e 's/\\"/"/g' -e 's/\\n/ /g'
  said=$total
}
# What an agent said to its owner (its stdout) since the last call.
declare -A told=()
owner_news() { # ada | ben
  local f="$work/$1.out" total
  total=$(wc -l <"$f")
  [ "$total" -gt "${told[$1]:-0}" ] || return 0
  sed -n "$((${told[$1]:-0} + 1)),${total}p" "$f" | sed "s/^/  ${1^}  | /"
  told[$1]=$total
}

# --- the story -------------------------------------------------------------------------
section "A room opens: agent-space on 127.0.0.1 (a port of its own)"
mkfifo "$work/host.in"
SPACE_PORT=0 SPACE_BIND=127.0.0.1 SPACE_DATA_DIR="$work/room-data" SPACE_NAME=demo-room \
  "$SPACE" --no-mdns --port-file "$work/room.port" <"$work/host.in" >"$work/room.log" 2>&1 &
pids+=($!)
exec 9>"$work/host.in"
room=$(port_of "$work/room.port" 5) || { cat "$work/room.log"; die "agent-space did not start"; }
echo "GET http://127.0.0.1:$room/healthz: $(curl -fsS "http://127.0.0.1:$room/healthz")"

section "Two stand-ins: a GitHub (acme/widgets, a token each) and a model per agent"
"$GHFAKE" --token ada-token-0123456789:ada-bot --token ben-token-0123456789:ben-bot \
  --repo acme/widgets --port-file "$work/github.port" </dev/null >"$work/github.log" 2>&1 &
pids+=($!)
github=$(port_of "$work/github.port" 5) || die "the GitHub stand-in did not start"
echo "GitHub stand-in on http://127.0.0.1:$github (the agents' GITHUB_API_URL)"

# The scripted answers. The model is asked in several ways in the room: is
# the host's message a discussion or an action request (no tools,
# `Message: "…"`), should I speak and what (the space_decision tool), is
# this candidate an echo (`Candidate:`), does a reply promise something
# (`Reply 1:`). Ada's model promises the issue; Ben's answers the question.
DECIDE='"match":{"tool_choice":"space_decision"'
cat >"$work/ada-model.json" <<JSON
[
 {"match":{"no_tools":true,"last_user_contains":"Candidate:"},"content":"NO"},
 {"match":{"no_tools":true,"last_user_contains":"Reply 1:"},"content":"[]"},
 {"match":{"no_tools":true,"last_user_contains":"The request:"},
  "content":"## The login page times out\n\nAfter 30 seconds the login page gives up.\n\n- [ ] logins finish well within 30 seconds"},
 {"match":{"no_tools":true,"last_user_contains":"open an issue"},"content":"ACTION_REQUEST"},
 {"match":{"no_tools":true,"last_user_contains":"Message: "},"content":"DISCUSSION"},
 {$DECIDE,"last_user_contains":"open an issue in acme/widgets"},"tool_calls":[{"name":"space_decision",
  "arguments":{"shouldSpeak":true,"reason":"the host asked for an issue and the room names me",
   "message":"I'll open it in acme/widgets now.",
   "commitments":[{"type":"create_issue","repo":"acme/widgets",
     "title":"The login page times out after 30 seconds",
     "description":"The host reports that the login page gives up after 30 seconds. Ben suspects the session store: the login waits on it until the proxy's 30 s timeout."}]}}]},
 {$DECIDE},"tool_calls":[{"name":"space_decision","arguments":{"shouldSpeak":false,"reason":"Ben was asked"}}]},
 {"content":"NO"}
]
JSON
cat >"$work/ben-model.json" <<JSON
[
 {"match":{"no_tools":true,"last_user_contains":"Candidate:"},"content":"NO"},
 {"match":{"no_tools":true,"last_user_contains":"Reply 1:"},"content":"[]"},
 {"match":{"no_tools":true,"last_user_contains":"open an issue"},"content":"ACTION_REQUEST"},
 {"match":{"no_tools":true,"last_user_contains":"Message: "},"content":"DISCUSSION"},
 {$DECIDE,"last_user_contains":"open an issue in acme/widgets"},"tool_calls":[{"name":"space_decision",
  "arguments":{"shouldSpeak":false,"reason":"Ada owns the request"}}]},
 {$DECIDE,"last_user_contains":"time out"},"tool_calls":[{"name":"space_decision",
  "arguments":{"shouldSpeak":true,"reason":"the host asked me",
   "message":"Usually the session store: the login waits on it, and the proxy in front gives up at 30 seconds."}}]},
 {$DECIDE},"tool_calls":[{"name":"space_decision","arguments":{"shouldSpeak":false,"reason":"nothing to add"}}]},
 {"content":"NO"}
]
JSON
for a in ada ben; do
  "$LLMFAKE" --script "$work/$a-model.json" --port-file "$work/$a-model.port" </dev/null \
    >"$work/$a-model.log" 2>&1 &
  pids+=($!)
  port_of "$work/$a-model.port" 5 >/dev/null || die "the model stand-in for $a did not start"
done
echo "model stand-ins on http://127.0.0.1:$(cat "$work/ada-model.port") (Ada)" \
  "and http://127.0.0.1:$(cat "$work/ben-model.port") (Ben)"

# Each agent's home: the example SOUL.md and a .env, as README.md's "Your
# first agent" sets one up.
for a in ada ben; do
  name=${a^}
  mkdir -p "$work/$a"
  cp "$SRC/SOUL.md" "$work/$a/"
  cat >"$work/$a/.env" <<ENV
AGENT_NAME=$name
SPACE_URL=ws://127.0.0.1:$room
LLM_BASE_URL=http://127.0.0.1:$(cat "$work/$a-model.port")/v1
LLM_MODEL=demo-model
LLM_API_KEY=demo-key-0123456789
GITHUB_API_URL=http://127.0.0.1:$github
AGENT_GITHUB_USERNAME=$a-bot
AGENT_GITHUB_TOKEN=$a-token-0123456789
DASHBOARD_ADDR=127.0.0.1:0
ENV
done

section "Ada's home is a directory with a SOUL.md and a .env; doctor asks everything once"
note "\$ cat .env        (in $work/ada)"
sed 's/^/  /' "$work/ada/.env"
note "\$ general-agent doctor"
(cd "$work/ada" && "$GA" doctor 2>&1)
echo "doctor's exit code: $? (0 ready, 1 cannot start, 2 can start but something is down)"

section "Ada and Ben start and join the room"
# GA_FULFIL_INTERVAL_MS: how often a promise is worked on (the default is
# minutes; one second keeps the demo short).
agents=()
for a in ada ben; do
  (cd "$work/$a" && GA_FULFIL_INTERVAL_MS=1000 exec "$GA" --no-terminal) \
    </dev/null >"$work/$a.out" 2>"$work/$a.log" &
  pids+=($!)
  agents+=($!)
done
for a in ada ben; do
  wait_for "$work/$a.log" "joined the room" 15 || { cat "$work/$a.log"; die "${a^} did not join the room"; }
done
for a in ada ben; do owner_news "$a"; done
room_news

section "The host asks Ben a question"
q="Ben, what usually makes a login page time out after 30 seconds?"
note "host> $q"
echo "$q" >&9
wait_chat Ben "" 30 || note "(Ben did not answer within 30 s)"
room_news

section "The host asks for an issue: the room's ownership rule names Ada; she promises and opens it"
req="Please open an issue in acme/widgets: the login page times out after 30 seconds."
note "host> $req"
echo "$req" >&9
wait_chat Ada "/acme/widgets/issues/1" 45 || note "(no link in the room within 45 s)"
room_news
owner_news ada

section "The issue on the GitHub stand-in"
note "\$ curl http://127.0.0.1:$github/repos/acme/widgets/issues/1"
curl -fsS -H "Authorization: Bearer ada-token-0123456789" \
  "http://127.0.0.1:$github/repos/acme/widgets/issues/1" |
  grep -oE '"(number|title|html_url|state)":("[^"]*"|[0-9]+)' | sed 's/^/  /'
note "  (one issue, opened once: a restart or a retry finds it by the key in its body)"

section "general-agent why: the story of the host's request, stage by stage"
id=$(grep -F '"stage":"event"' "$work/ada/memory/decisions.jsonl" 2>/dev/null |
  grep -F "open an issue" | head -n 1 | grep -oE '"messageId":"[^"]*"' | cut -d'"' -f4)
if [ -n "$id" ]; then
  note "\$ general-agent why ${id:0:14}        (in Ada's home; a unique prefix of the id is enough)"
  (cd "$work/ada" && "$GA" why "${id:0:14}")
else
  note "(the request is not in Ada's decision log)"
fi

section "general-agent commitments: what Ada promised and what became of it"
(cd "$work/ada" && "$GA" commitments)

dash_ada=$(grep -oE 'http://127\.0\.0\.1:[0-9]+/?' "$work/ada.out" | head -n 1)
dash_ben=$(grep -oE 'http://127\.0\.0\.1:[0-9]+/?' "$work/ben.out" | head -n 1)
section "The dashboards: Ada's at $dash_ada, Ben's at $dash_ben"
note "(status, every decision live, commitments, the kill switch; the room's own page is http://127.0.0.1:$room/)"
if [ -t 0 ] && [ -t 1 ] && [ "${DEMO_NO_WAIT:-0}" != 1 ]; then
  printf 'Open them in a browser now; press Enter to end the demo. '
  read -r _
fi

section "The host closes the room; the agents leave and stop"
echo "/quit" >&9
exec 9>&-
for a in ada ben; do
  wait_for "$work/$a.log" "left the room" 10 || true
done
kill -TERM "${agents[@]}" 2>/dev/null
for a in ada ben; do
  wait_for "$work/$a.log" "agent resting" 10 && echo "${a^} stopped."
done

cat <<EOF

${BOLD}What to try next${OFF}
  Your first agent: README.md, "Your first agent" (a home, SOUL.md, a model in .env)
  A room:           $SPACE      (type lines as the host; /who, /quit)
  What it decided:  $GA decisions --follow      (in the agent's home)
  As a service:     make install, then docs/install.md
  Everything else:  make test
EOF
