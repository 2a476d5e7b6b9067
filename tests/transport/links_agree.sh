#!/bin/sh
# World creation with link classes the ranks disagree on (comm_check --links asym|derived|bad,
# 3 ranks): every rank must refuse at once with the same message naming the pair (or the
# rank and class) and exit 2; the job must end well before the 10 s deadline, so no rank
# waited for it.
# usage: links_agree.sh MPIRUN COMM_CHECK MODE EXPECTED_MESSAGE
set -u
mpirun=$1 prog=$2 mode=$3 want=$4
log=$(mktemp)
trap 'rm -f "$log"' EXIT
fail() { echo "links_agree: FAIL: --links $mode: $*"; exit 1; }

timeout -k 2 7 "$mpirun" --oversubscribe --allow-run-as-root -n 3 \
    "$prog" --links "$mode" --timeout 10 >"$log" 2>&1
rc=$?
cat "$log"
[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || fail "still running after 7 s (deadline 10 s)"
[ "$rc" -eq 2 ] || fail "exit $rc, expected 2 (ranks disagree: input to fix)"
n=$(grep -F -c "$want" "$log")
[ "$n" -eq 3 ] || fail "$n of 3 ranks said \"$want\""
n=$(grep -c 'world communicator failed' "$log")
[ "$n" -eq 3 ] || fail "$n of 3 ranks refused the world"
echo "links_agree: --links $mode: ok"
