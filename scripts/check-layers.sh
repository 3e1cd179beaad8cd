#!/bin/sh
# check-layers.sh — the layer rule over the #include graph (docs/architecture.md
# "Layers"): which folders may include which, and no cycle between the
# folders of modules/ or of adapters/.
#
#   common/       includes nothing of ours but common/
#   adapters/X/   common/ and other adapters (wire protocols only)
#   modules/X/    common/, adapters/, modules/, local-tools/
#   local-tools/  common/, adapters/, modules/ (the tools the model calls:
#                 a module in its own folder — in the cycle check beside
#                 the folders of modules/)
#   space/        common/, adapters/space/, adapters/mdns/, space/
#   cmd/          anything but tests/ and bench/
#   tests/, bench/ anything
#
# Usage: scripts/check-layers.sh [SOURCE_DIR]. Prints every include that
# breaks the rule (file:line: the include, the rule) and every cycle, and
# exits 1 when there is one; 0 and one line of counts otherwise. POSIX sh,
# grep, sed, awk and tsort only.
set -eu
root=${1:-$(dirname "$0")/..}
cd "$root"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# file<TAB>line<TAB>included path, for every quoted include of ours
find common adapters modules local-tools space cmd -name '*.[ch]' -o -name '*.def' |
	LC_ALL=C sort | while read -r f; do
	grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
		sed -E "s|^([0-9]+):.*#[[:space:]]*include[[:space:]]*\"([^\"]+)\".*|$f	\\1	\\2|"
done >"$tmp/edges"

awk -F'\t' '
function top(p) { split(p, a, "/"); return a[1] }
function sub2(p) { split(p, a, "/"); return a[1] "/" a[2] }
{
	from = $1; line = $2; inc = $3
	# a bare include ("x.h") is a neighbour of the same folder
	if (inc !~ /\//) next
	t = top(inc)
	if (t != "common" && t != "adapters" && t != "modules" && t != "local-tools" &&
	    t != "space" && t != "cmd" && t != "tests" && t != "bench")
		next
	f = top(from)
	ok = 1
	if (f == "common") ok = (t == "common")
	else if (f == "adapters") ok = (t == "common" || t == "adapters")
	else if (f == "modules")
		ok = (t == "common" || t == "adapters" || t == "modules" || t == "local-tools")
	else if (f == "local-tools")
		ok = (t == "common" || t == "adapters" || t == "modules" || t == "local-tools")
	else if (f == "space")
		ok = (t == "common" || t == "space" || sub2(inc) == "adapters/space" ||
		      sub2(inc) == "adapters/mdns")
	else if (f == "cmd") ok = (t != "tests" && t != "bench")
	if (!ok) {
		printf "%s:%s: includes %s: %s/ may not include %s/\n", from, line, inc, f, t
		bad++
	}
	# folder edges for the cycle check (local-tools counts as a module)
	fm = (f == "local-tools") ? "local-tools" : sub2(from)
	tm = (t == "local-tools") ? "local-tools" : sub2(inc)
	mf = (f == "modules" || f == "local-tools")
	mt = (t == "modules" || t == "local-tools")
	if (((mf && mt) || (f == "adapters" && t == "adapters")) && fm != tm)
		print fm, tm > "'"$tmp"'/folders"
	n++
}
END {
	printf "%d\n", bad > "'"$tmp"'/bad"
	printf "%d\n", n > "'"$tmp"'/count"
}' "$tmp/edges"

bad=$(cat "$tmp/bad")
cycles=0
if [ -s "$tmp/folders" ]; then
	LC_ALL=C sort -u "$tmp/folders" >"$tmp/folders.u"
	# tsort names the members of every cycle it meets on stderr
	if ! tsort "$tmp/folders.u" >/dev/null 2>"$tmp/tsort"; then
		cycles=1
	fi
	if grep -q 'loop' "$tmp/tsort"; then
		cycles=1
		echo "folders that include each other (a cycle):"
		grep -v 'input contains a loop' "$tmp/tsort" | sed 's/^tsort: /  /'
	fi
fi

if [ "$bad" -ne 0 ] || [ "$cycles" -ne 0 ]; then
	echo "check-layers: $bad include(s) across the layers, cycle: $([ $cycles -ne 0 ] && echo yes || echo no)"
	exit 1
fi
echo "check-layers: $(cat "$tmp/count") includes checked, every layer rule holds, no folder cycle"
