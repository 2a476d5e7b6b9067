#!/usr/bin/env bash
# A scheduler's SIGTERM to the launcher mid-decode: every rank says so and the job ends
# with 143 within a few seconds (Slurm's KillWait is 30 s). Then a SIGTERM while the
# engine is still being created (a 4M-token context takes seconds to set up): the same
# exit, and the message says so.
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
[ "$n" -ge 1 ] || { echo "FAIL: no rank reported the SIGTERM"; exit 1; }

PMIX_RANK=5 "$2" decode --context 4M --steps 2 >/dev/null 2>"$err" &
pid=$!
sleep 1.5
kill -TERM "$pid"
timeout 20 tail --pid="$pid" -f /dev/null
wait "$pid"
rc=$?
echo "while starting: exit $rc"
sed 's/^/  stderr: /' "$err" | head
[ "$rc" -eq 143 ] || { echo "FAIL: expected exit 143 while starting"; exit 1; }
grep -q "^helix decode: rank 5 received SIGTERM while starting; exiting$" "$err" ||
    { echo "FAIL: no message for a SIGTERM while starting"; exit 1; }
exit 0
