#!/usr/bin/env bash
# The real install into scratch directories (tests/integration/install/
# CMakeLists.txt registers it): cmake --install with the prefix given at
# install time, as `make install PREFIX=… DESTDIR=…` runs it.
#   1. DESTDIR=<root>/dest, prefix /opt/ga-test: every file lands under
#      DESTDIR/opt/ga-test and nowhere else; the units name /opt/ga-test,
#      never the prefix the build was configured with.
#   2. prefix <root>/prefix (kept for test_units): the installed
#      general-agent runs --version and doctor there and writes SELF.md from
#      the installed template (a marker is added to it to tell it apart
#      from the source tree's); a copy of the prefix moved elsewhere does
#      the same from its new place.
#   3. the Makefile passes PREFIX and DESTDIR through at install time.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR ROOT HAVE_AGENT_SPACE(0|1)
set -uo pipefail
B=$1 SRC=$2 ROOT=$3 HAVE_SPACE=$4
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
check_file() { [ -f "$1" ] || fail "missing $1"; }
check_exec() { [ -x "$1" ] && [ -f "$1" ] || fail "missing or not executable: $1"; }

rm -rf "$ROOT"
mkdir -p "$ROOT"
configured=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$B/CMakeCache.txt")

# --- 1. DESTDIR staging ----------------------------------------------------------
P=/opt/ga-test
D="$ROOT/dest"
if ! DESTDIR="$D" cmake --install "$B" --prefix "$P" >"$ROOT/install-dest.log" 2>&1; then
  cat "$ROOT/install-dest.log" >&2
  fail "cmake --install with DESTDIR failed"
fi
check_exec "$D$P/bin/general-agent"
if [ "$HAVE_SPACE" = 1 ]; then check_exec "$D$P/bin/agent-space"; fi
for f in SOUL.md SELF.md.template env.example; do check_file "$D$P/share/general-agent/$f"; done
check_file "$D$P/share/doc/general-agent/README.md"
# the README's links into docs/ work where it is installed too
check_file "$D$P/share/doc/general-agent/docs/running.md"
check_file "$D$P/lib/sysusers.d/general-agent.conf"
n_src=$(find "$SRC/skills" -name SKILL.md | wc -l)
n_inst=$(find "$D$P/share/general-agent/skills" -name SKILL.md 2>/dev/null | wc -l)
[ "$n_src" -gt 0 ] && [ "$n_src" = "$n_inst" ] ||
  fail "skills: $n_inst SKILL.md installed, $n_src in the source tree"
outside=$(cd "$D" && find . -mindepth 1 -maxdepth 2 ! -path ./opt ! -path ./opt/ga-test)
[ -z "$outside" ] || fail "installed outside DESTDIR$P: $outside"

units="$D$P/lib/systemd/system"
for u in general-agent.service general-agent@.service agent-space.service; do
  check_file "$units/$u"
  [ -f "$units/$u" ] || continue
  if grep -n '@GA_[A-Z_]*@' "$units/$u"; then fail "$u: a placeholder was left"; fi
  case $u in
    agent-space*) want="ExecStart=$P/bin/agent-space" ;;
    *) want="ExecStart=$P/bin/general-agent --no-terminal" ;;
  esac
  got=$(grep '^ExecStart=' "$units/$u")
  [ "$got" = "$want" ] || fail "$u: '$got', expected '$want'"
  grep -qx "Documentation=file://$P/share/doc/general-agent/README.md" "$units/$u" ||
    fail "$u: Documentation does not name $P/share/doc/general-agent/README.md"
  if [ "$configured" != "$P" ] && grep -q "$configured/" "$units/$u"; then
    fail "$u names the configured prefix $configured instead of $P"
  fi
  if grep -q "$D" "$units/$u"; then fail "$u names the DESTDIR $D"; fi
done

# --- 2. a real prefix: the installed binaries find their data -------------------
P2="$ROOT/prefix"
if ! cmake --install "$B" --prefix "$P2" >"$ROOT/install-prefix.log" 2>&1; then
  cat "$ROOT/install-prefix.log" >&2
  fail "cmake --install --prefix $P2 failed"
fi
marker="<!-- installed template: $P2 -->"
printf '\n%s\n' "$marker" >>"$P2/share/general-agent/SELF.md.template"

# first_start PREFIX MARKER: a fresh home with SOUL.md only (no template of
# its own); doctor says the template will be used, a first start (the
# daemon exits once idle) writes SELF.md, which must carry MARKER.
first_start() {
  local prefix=$1 mark=$2 home
  home=$(mktemp -d "$ROOT/home.XXXXXX")
  cp "$SRC/SOUL.md" "$home/"
  # Its own room URL (nothing listens on port 1) and name: never a user's.
  printf 'AGENT_NAME=Installtest\nSPACE_URL=ws://127.0.0.1:1\n' >"$home/.env"
  local out
  out=$(cd "$home" && "$prefix/bin/general-agent" --version 2>&1)
  [[ $out == "general-agent "* ]] || fail "$prefix/bin/general-agent --version: $out"
  out=$(cd "$home" && "$prefix/bin/general-agent" doctor 2>&1)
  local rc=$?
  # 2: it can start, and the room of SPACE_URL (port 1) does not answer
  [ $rc = 2 ] || fail "doctor from $prefix exited $rc: $out"
  [[ $out == *"verdict: the daemon can start, but the room did not answer"* ]] ||
    fail "doctor from $prefix: $out"
  [[ $out == *"written from the template"* ]] ||
    fail "doctor from $prefix finds no SELF.md.template: $out"
  (cd "$home" && GA_EXIT_WHEN_IDLE=1 timeout 30 "$prefix/bin/general-agent" --no-terminal \
    >"$home/daemon.out" 2>"$home/daemon.log" </dev/null)
  rc=$?
  [ $rc = 0 ] || { cat "$home/daemon.log" >&2; fail "daemon from $prefix exited $rc"; }
  grep -qF "$mark" "$home/SELF.md" 2>/dev/null ||
    fail "SELF.md in $home was not written from $prefix/share/general-agent/SELF.md.template"
  grep -q '^# Installtest' "$home/SELF.md" 2>/dev/null ||
    fail "SELF.md in $home does not name the agent"
}
first_start "$P2" "$marker"
if [ "$HAVE_SPACE" = 1 ]; then
  out=$("$P2/bin/agent-space" --version 2>&1) || fail "agent-space --version: $out"
  [[ $out == "agent-space "* ]] || fail "agent-space --version: $out"
fi

# Relocated: the same tree copied elsewhere finds its own data, not the
# place it was installed to.
cp -a "$P2" "$ROOT/moved"
moved_marker="<!-- moved template -->"
printf '%s\n' "$moved_marker" >>"$ROOT/moved/share/general-agent/SELF.md.template"
first_start "$ROOT/moved" "$moved_marker"

# --- 3. the Makefile gives PREFIX and DESTDIR at install time -------------------
plan=$(make -n -C "$SRC" --no-print-directory install BUILD="$B" PREFIX=/opt/x DESTDIR=/tmp/stage 2>&1)
[[ $plan == *'DESTDIR="/tmp/stage" cmake --install '"$B"' --prefix "/opt/x"'* ]] ||
  fail "make install does not pass PREFIX/DESTDIR to cmake --install: $plan"

if [ $fails -gt 0 ]; then
  echo "$fails check(s) failed (scratch tree kept in $ROOT)" >&2
  exit 1
fi
echo "install: DESTDIR, prefix and relocated trees ok"
