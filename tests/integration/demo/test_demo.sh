#!/usr/bin/env bash
# `make demo` tells the true story: runs scripts/demo.sh on this build (its
# binaries already built, DEMO_BUILT=1) and checks what it printed:
#   - doctor says ready (exit 0) with the model, GitHub and the room answering;
#   - both agents print their dashboard's URL;
#   - Ben answers the host's question in the room;
#   - Ada promises the issue in the room, the GitHub stand-in holds exactly
#     that issue, and its link is said in the room by Ada;
#   - `why` tells the request's story through to "answered" with the
#     commitment, and `commitments` shows it completed with the link;
#   - both agents stop; the demo exits 0;
#   - no line says a feature is missing or comes later ("not yet", "next
#     piece of work", "no composer", "does not compose", "not implemented").
# Skipped (77) without curl, which the demo uses.
set -uo pipefail
: "${GA_BUILD_DIR:?}" "${GA_SOURCE_DIR:?}"
command -v curl >/dev/null || { echo "skipped: the demo needs curl"; exit 77; }

out=$(mktemp)
trap 'rm -f "$out"' EXIT
DEMO_BUILT=1 DEMO_NO_WAIT=1 NO_COLOR=1 timeout 240 \
  "$GA_SOURCE_DIR/scripts/demo.sh" "$GA_BUILD_DIR" </dev/null >"$out" 2>&1
rc=$?
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -qE -- "$1" "$out" || fail "no line matches /$1/"; }
[ $rc -eq 0 ] || fail "the demo exited $rc"

has '^verdict: the daemon can start and everything configured answers \(ready\)$'
has "^doctor's exit code: 0 "
has '^  model call   ok '
has '^  github call  ok .*logged in as ada-bot'
has "^  room         ok .*the room 'demo-room' answers"
has '^  Ada  \| Ada: my dashboard is http://127\.0\.0\.1:[0-9]+/$'
has '^  Ben  \| Ben: my dashboard is http://127\.0\.0\.1:[0-9]+/$'
has '^  room \| Ben: .+'
has "^  room \| Ada: I'll open it in acme/widgets now\.$"
has '^  room \| Ada: .*https://github\.com/acme/widgets/issues/1$'
has '^  "title":"The login page times out after 30 seconds"$'
has '^  "html_url":"https://github\.com/acme/widgets/issues/1"$'
has '^  [0-9:.]+ +event +pass +event +host host .*Please open an issue in acme/widgets'
has '^  [0-9:.]+ +outbound +sent +sent '
has '^  [0-9:.]+ +record +info +answered +answered; commitments: create_issue '
has ' completed +create_issue +space +attempts 1 .*https://github\.com/acme/widgets/issues/1$'
has '^Ada stopped\.$'
has '^Ben stopped\.$'
# exactly one issue: no second number on the stand-in
grep -qE '"number":2' "$out" && fail "a second issue"
# one promise said once, one link said once
[ "$(grep -cE '^  room \| Ada: .*issues/1$' "$out")" -eq 1 ] || fail "the link was not said exactly once"
# nothing says the product lacks a feature
if grep -niE 'not yet|next piece of work|no_composer|no composer|does not compose|not implemented|no (github|outbound) (client|port)' "$out"; then
  fail "a line says a feature is missing (above)"
fi
if [ $fails -ne 0 ]; then
  echo "---- the demo's output ----"
  cat "$out"
  exit 1
fi
echo "the demo told the story ($(wc -l <"$out") lines)"
