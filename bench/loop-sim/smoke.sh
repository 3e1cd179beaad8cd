#!/bin/sh
# ctest loop_sim_smoke (label "bench"): a small loop-sim run — 3 agents,
# 3 rounds, the room restarted before the last — must finish, print every
# figure, and pass its targets (the last round too, after the agents rejoined).
# Usage: smoke.sh PATH/TO/loop-sim
set -u
bin=$1
out=$("$bin" -n 3 -r 3 --restart-at 3 --quiet-ms 6000 --round-max-ms 30000 2>&1)
rc=$?
printf '%s\n' "$out"
fail=0
for figure in 'round   1/3 ' 'round   3/3 ' 'total messages: ' 'longest chain: ' \
              'echoes delivered: ' 'duplicate actions: ' 'time to quiescence: median ' \
              'TARGET quiet within MAX_ACL hops: PASS' 'TARGET 0 echoes delivered: PASS' \
              'TARGET 0 duplicate actions: PASS' 'RESULT: PASS' \
              '-- restarting agent-space' '[after restart]'; do
	case $out in
	*"$figure"*) ;;
	*) echo "smoke: missing from the output: '$figure'"; fail=1 ;;
	esac
done
if [ "$rc" -ne 0 ]; then
	echo "smoke: loop-sim exited $rc"
	fail=1
fi
exit $fail
