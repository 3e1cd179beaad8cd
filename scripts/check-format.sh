#!/bin/sh
# check-format.sh — every C file of ours is as `make format` leaves it
# (the repository's .clang-format; <cmocka.h> in an include block of its
# own, after the headers it needs, since clang-format sorts within blocks).
#
# Usage: scripts/check-format.sh [SOURCE_DIR]. Prints each file that
# differs and exits 1; 0 and a count otherwise; 77 (skipped) without
# clang-format or outside a git checkout.
set -eu
root=${1:-$(dirname "$0")/..}
cd "$root"
if ! command -v clang-format >/dev/null 2>&1; then
	echo "check-format: clang-format is not installed (scripts/bootstrap.sh --test installs it)"
	exit 77
fi
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	echo "check-format: not a git checkout: nothing to list the files by"
	exit 77
fi
files=$(git ls-files '*.c' '*.h')
n=$(printf '%s\n' $files | wc -l)
# one clang-format for every file; its errors name the file first
if out=$(clang-format --dry-run -Werror $files 2>&1); then
	echo "check-format: $n files formatted"
	exit 0
fi
bad=$(printf '%s\n' "$out" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error.*/\1/p' | sort -u)
if [ -z "$bad" ]; then
	printf '%s\n' "$out" | head -20
	echo "check-format: clang-format failed"
	exit 1
fi
for f in $bad; do
	echo "$f: not formatted (make format)"
done
echo "check-format: $(printf '%s\n' $bad | wc -l) of $n files differ from clang-format's output"
exit 1
