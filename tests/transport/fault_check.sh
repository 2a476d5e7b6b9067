#!/bin/sh
# Fault test driver: 3 ranks under mpirun, rank 1 skips an operation (skip), dies before
# it (kill) or never joins the bootstrap all-gather (boot). The other two ranks must report
# the expected error naming rank 1 within the deadline and exit non-zero; all of it under
# a hard timeout.
# usage: fault_check.sh MPIRUN COMM_CHECK skip|kill|boot
set -u
mpirun=$1 prog=$2 fault=$3
deadline=1
log=$(mktemp)
trap 'rm -f "$log"' EXIT

start=$(date +%s.%N)
timeout -k 5 40 "$mpirun" --oversubscribe --allow-run-as-root -n 3 \
    "$prog" --fault "$fault" --victim 1 --timeout "$deadline" >"$log" 2>&1
rc=$?
end=$(date +%s.%N)
elapsed=$(echo "$end - $start" | bc)
cat "$log"
echo "fault_check: fault $fault: launcher exit $rc after $elapsed s"

fail() { echo "fault_check: FAIL: $*"; exit 1; }

[ "$rc" -ne 0 ] || fail "the job exited 0"
# 124: the hard timeout fired (137 alone is mpirun passing on the victim's SIGKILL)
[ "$rc" -ne 124 ] || fail "the hard timeout had to stop the job"
[ "$(echo "$elapsed < 20" | bc)" -eq 1 ] || fail "took $elapsed s"

case $fault in
skip)
    n=$(grep -c 'expected failure: alltoallv returned "timed out"' "$log")
    [ "$n" -eq 2 ] || fail "$n of 2 survivors reported the timeout"
    grep -q 'timed out after [0-9.]* s: no data yet from ranks \[1\]' "$log" ||
        fail "no message naming rank 1 as missing"
    # the deadline held: reported elapsed between the deadline and deadline + 1 s
    grep 'expected failure' "$log" | sed 's/.*after \([0-9.]*\) s.*/\1/' | while read -r t; do
        [ "$(echo "$t >= $deadline * 0.95 && $t <= $deadline + 1" | bc)" -eq 1 ] ||
            { echo "fault_check: FAIL: reported after $t s, deadline $deadline s"; exit 1; }
    done || exit 1
    ;;
kill)
    # UCX peer-failure mode reports the dead rank; a survivor still in its wait when the
    # launcher tears the job down is acceptable, a silent one is not.
    n=$(grep -c 'expected failure: alltoallv returned "\(peer lost\|timed out\)"' "$log")
    [ "$n" -ge 1 ] || fail "no survivor reported the lost rank"
    grep -q 'rank 1 .*lost\|connection to rank 1 failed\|no data yet from ranks \[1\]' "$log" ||
        fail "no message naming rank 1"
    ;;
boot)
    n=$(grep -c 'expected failure: bootstrap all-gather returned "timed out"' "$log")
    [ "$n" -eq 2 ] || fail "$n of 2 survivors reported the bootstrap timeout"
    grep -q 'ranks 1 never arrived' "$log" || fail "no message naming rank 1 as missing"
    ;;
esac
echo "fault_check: fault $fault: ok"
