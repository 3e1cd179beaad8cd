#!/usr/bin/env bash
# The systemd units and the sysusers.d entry as installed by test_install
# (ROOT/prefix), checked with systemd's own tools: `systemd-analyze verify`
# must print nothing (it exits 0 even for an unknown key, so any output is a
# failure), `systemd-sysusers --dry-run` must accept the sysusers entry, and
# the units must carry what docs/install.md "Installing as a service" promises.
# Exits 77 (skipped) when systemd-analyze is not installed (Debian package
# systemd; scripts/bootstrap.sh --test installs it).
# Usage: test_units.sh ROOT
set -uo pipefail
ROOT=$1
P="$ROOT/prefix"
units="$P/lib/systemd/system"
if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "SKIP: systemd-analyze not installed (apt-get install systemd); units not verified"
  exit 77
fi
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
has() { grep -qx "$2" "$units/$1" || fail "$1: no line '$2'"; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for u in general-agent.service general-agent@.service agent-space.service; do
  [ -f "$units/$u" ] || { fail "missing $units/$u"; continue; }
  # An instance of the template is what systemd would run.
  name=$u
  [ "$u" = general-agent@.service ] && name=general-agent@ada.service
  cp "$units/$u" "$work/$name"
  out=$(cd "$work" && SYSTEMD_LOG_COLOR=0 systemd-analyze verify --man=no "$work/$name" 2>&1)
  rc=$?
  [ $rc = 0 ] && [ -z "$out" ] || fail "systemd-analyze verify $name (exit $rc): $out"
  for line in NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes \
              "RestartPreventExitStatus=64 69 75 77 78" Restart=on-failure; do
    has "$u" "$line"
  done
  case $u in
    agent-space*) state=agent-space; dir=/var/lib/agent-space; user=agent-space ;;
    general-agent@*) state='general-agent/%i'; dir='/var/lib/general-agent/%i'; user=general-agent ;;
    *) state=general-agent; dir=/var/lib/general-agent; user=general-agent ;;
  esac
  has "$u" "StateDirectory=$state"
  has "$u" "User=$user"
  # Writable: the state directory and nothing else.
  rw=$(grep '^ReadWritePaths=' "$units/$u")
  [ "$rw" = "ReadWritePaths=$dir" ] || fail "$u: '$rw', expected ReadWritePaths=$dir only"
  case $u in agent-space*) ;; *) has "$u" "Environment=AGENT_HOME=$dir" ;; esac
done
if command -v systemd-sysusers >/dev/null 2>&1; then
  mkdir -p "$work/sysroot/etc"
  out=$(systemd-sysusers --root="$work/sysroot" --dry-run "$P/lib/sysusers.d/general-agent.conf" 2>&1)
  rc=$?
  [ $rc = 0 ] || fail "systemd-sysusers --dry-run (exit $rc): $out"
  for u in general-agent agent-space; do
    [[ $out == *"Creating user '$u'"* ]] || fail "sysusers entry does not create user $u: $out"
  done
else
  fail "systemd-analyze is installed but systemd-sysusers is not"
fi

if [ $fails -gt 0 ]; then
  echo "$fails check(s) failed" >&2
  exit 1
fi
echo "units: verified by systemd-analyze; sysusers entry accepted"
