#!/usr/bin/env bash
# Setup follows the goal (the Makefile, dry runs with make -n):
#   - make build, make install and make demo never run the tests' bootstrap
#     (bootstrap.sh --test: Chromium, Node, the PDS); make test does;
#   - make install builds only the two binaries it installs, never the
#     whole tree;
#   - scripts/bootstrap.sh without --test lists none of the test-only
#     packages, and refuses an unknown option (64).
# Usage: test_setup.sh SOURCE_DIR
set -uo pipefail
src=${1:?}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
dry() { make -s -n -C "$src" BUILD=/nonexistent-build "$@" 2>&1; }

for goal in build install demo; do
  out=$(dry "$goal")
  grep -q -- "--test" <<<"$out" && fail "make $goal runs the tests' bootstrap:"$'\n'"$out"
done
grep -q "bootstrap.sh --test" <<<"$(dry test)" || fail "make test does not run bootstrap.sh --test"
out=$(dry install)
grep -qE -- "--target general-agent agent-space" <<<"$out" ||
  fail "make install does not build just its two binaries:"$'\n'"$out"
grep -qE -- "cmake --build [^ ]+ -j [0-9]+$" <<<"$out" && fail "make install builds the whole tree"
grep -q "scripts/bootstrap.sh --test\|bootstrap-test" "$src/scripts/demo.sh" &&
  fail "the demo runs the tests' bootstrap"
# the base list holds no test-only package
base=$(sed -n '/^PACKAGES=(/,/^)/p' "$src/scripts/bootstrap.sh")
for p in chromium redis-server clang nodejs npm python3 systemd; do
  grep -qE "(^|[[:space:]])$p([[:space:]]|$)" <<<"$base" && fail "$p is in the base packages"
done
"$src/scripts/bootstrap.sh" --bogus >/dev/null 2>&1
[ $? -eq 64 ] || fail "bootstrap.sh --bogus did not exit 64"
[ $fails -eq 0 ] && echo "setup follows the goal"
exit $((fails != 0))
