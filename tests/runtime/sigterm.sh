#!/usr/bin/env bash
# A scheduler's SIGTERM to the launcher mid-decode: rank 0 says so, once, the other ranks
# exit quietly, and the job ends with 143 within a few seconds (Slurm's KillWait is 30 s).
# Then a SIGTERM while the engine is still being created (a 4M-token context takes seconds
# to set up): the same exit, and rank 0's message says so; another rank's is quiet.
# usage: sigterm.sh HELIXRUN HELIX
set -u
err=$(mktemp)
trap 'rm -f "$err"' EXIT
"$1" -n 2 -- "$2" decode --kvp 2 --context 256K --steps 100000 >/dev/null 2>"$err" &
pid=$!
sleep 3
start=$(date +%s%N)
kill -TERM "$pid"
timeout 20 tail --pid="$pid" -f /dev/null
wait "$pid"
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "exit $rc, ${ms} ms after SIGTERM"
sed 's/^/  stderr: /' "$err" | head
[ "$rc" -eq 143 ] || { echo "FAIL: expected exit 143"; exit 1; }
[ "$ms" -lt 10000 ] || { echo "FAIL: took ${ms} ms"; exit 1; }
n=$(grep -c "received SIGTERM; exiting" "$err")
[ "$n" -eq 1 ] || { echo "FAIL: $n lines report the SIGTERM, expected rank 0's alone"; exit 1; }
grep -q "rank 0 received SIGTERM; exiting" "$err" ||
    { echo "FAIL: rank 0 did not report the SIGTERM"; exit 1; }

for r in 0 5; do
    PMIX_RANK=$r "$2" decode --context 4M --steps 2 >/dev/null 2>"$err" &
    pid=$!
    sleep 1.5
    kill -TERM "$pid"
    timeout 20 tail --pid="$pid" -f /dev/null
    wait "$pid"
    rc=$?
    echo "rank $r, while starting: exit $rc"
    sed 's/^/  stderr: /' "$err" | head
    [ "$rc" -eq 143 ] || { echo "FAIL: expected exit 143 while starting"; exit 1; }
    if [ $r -eq 0 ]; then
        grep -q "^helix decode: rank 0 received SIGTERM while starting; exiting$" "$err" ||
            { echo "FAIL: no message for a SIGTERM while starting"; exit 1; }
    elif [ -s "$err" ]; then
        echo "FAIL: rank $r said something on a SIGTERM while starting"; exit 1
    fi
done
exit 0
