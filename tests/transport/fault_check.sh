#!/bin/sh
# Fault test driver: 3 ranks under mpirun, rank 1 skips an operation (skip), dies before
# it (kill), stops itself with SIGSTOP (stop), computes outside the transport for longer
# than the heartbeat timeout (busy: no error allowed) or never joins the bootstrap
# all-gather (boot). The other two ranks must report the expected error naming rank 1 in
# time and exit non-zero; all of it under a hard timeout.
# usage: fault_check.sh MPIRUN COMM_CHECK skip|kill|stop|busy|boot
set -u
mpirun=$1 prog=$2 fault=$3
deadline=1
# stop / busy: heartbeats every 0.2 s, a peer silent for 2 s is lost; the operation
# deadline is far beyond, so only the heartbeats can name the stopped rank in time.
hb_timeout=2
case $fault in stop|busy) deadline=60 ;; esac
export HELIX_HEARTBEAT_INTERVAL=0.2 HELIX_HEARTBEAT_TIMEOUT=$hb_timeout
log=$(mktemp)
trap 'rm -f "$log"' EXIT

start=$(date +%s.%N)
timeout -k 5 40 "$mpirun" --oversubscribe --allow-run-as-root -n 3 \
    -x HELIX_HEARTBEAT_INTERVAL -x HELIX_HEARTBEAT_TIMEOUT \
    "$prog" --fault "$fault" --victim 1 --timeout "$deadline" --busy 5 >"$log" 2>&1
rc=$?
end=$(date +%s.%N)
elapsed=$(echo "$end - $start" | bc)
cat "$log"
echo "fault_check: fault $fault: launcher exit $rc after $elapsed s"

fail() { echo "fault_check: FAIL: $*"; exit 1; }

if [ "$fault" = busy ]; then
    [ "$rc" -eq 0 ] || fail "a rank busy outside the transport for 5 s broke the job"
    grep -q 'kept alive by its heartbeats' "$log" || fail "no success line"
    echo "fault_check: fault busy: ok"
    exit 0
fi
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
stop)
    # named with host and pid within heartbeat timeout + 2 s, whatever the deadline
    n=$(grep -c 'expected failure: alltoallv returned "peer lost"' "$log")
    [ "$n" -ge 1 ] || fail "no survivor reported the stopped rank"
    grep -q 'rank 1 (host [^,]*, pid [0-9]*) silent for' "$log" ||
        fail "no message naming rank 1 with host and pid"
    grep 'expected failure' "$log" | sed 's/.*after \([0-9.]*\) s.*/\1/' | while read -r t; do
        [ "$(echo "$t <= $hb_timeout + 2" | bc)" -eq 1 ] ||
            { echo "fault_check: FAIL: reported after $t s, heartbeat timeout $hb_timeout s"; exit 1; }
    done || exit 1
    ;;
boot)
    n=$(grep -c 'expected failure: bootstrap all-gather returned "timed out"' "$log")
    [ "$n" -eq 2 ] || fail "$n of 2 survivors reported the bootstrap timeout"
    grep -q 'rank 1 never put its data' "$log" || fail "no message naming rank 1 as missing"
    ;;
esac
echo "fault_check: fault $fault: ok"
