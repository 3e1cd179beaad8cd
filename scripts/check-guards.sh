#!/bin/sh
# check-guards.sh — every header of ours opens with the one include-guard
# pattern: GA_<its path from the repository root, upper case, '/', '.' and
# '-' as '_'>_H (modules/space/link.h: GA_MODULES_SPACE_LINK_H).
#
# Usage: scripts/check-guards.sh [SOURCE_DIR]. Prints each header whose
# guard differs (path: found, wanted) and exits 1; 0 and a count otherwise.
set -eu
root=${1:-$(dirname "$0")/..}
cd "$root"
bad=0
n=0
for f in $(find common adapters modules local-tools space cmd tests bench -name '*.h' | LC_ALL=C sort); do
	n=$((n + 1))
	want="GA_$(printf '%s' "${f%.h}" | tr 'a-z/.-' 'A-Z___')_H"
	got=$(awk '/^#ifndef[ \t]/ { print $2; exit }' "$f")
	def=$(awk '/^#define[ \t]/ { print $2; exit }' "$f")
	if [ "$got" != "$want" ] || [ "$def" != "$want" ]; then
		echo "$f: guard '${got:-none}', wanted '$want'"
		bad=$((bad + 1))
	fi
done
if [ "$bad" -gt 0 ]; then
	echo "check-guards: $bad of $n headers break the pattern GA_<PATH>_H"
	exit 1
fi
echo "check-guards: $n headers, every guard GA_<PATH>_H"
