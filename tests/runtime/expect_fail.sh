#!/usr/bin/env bash
# Runs a command that must fail: asserts its exit code, that stderr contains a message,
# and that it ended within a time limit (nothing hangs).
# usage: expect_fail.sh EXIT_CODE|nonzero 'MESSAGE' SECONDS command args...
# (nonzero: any failure except a timeout, for races where either of two ranks reports.)
set -u
want=$1 msg=$2 limit=$3
shift 3
err=$(mktemp)
trap 'rm -f "$err"' EXIT
start=$(date +%s)
timeout -k 5 "$limit" "$@" >/dev/null 2>"$err"
rc=$?
took=$(( $(date +%s) - start ))
echo "$* -> exit $rc in $took s"
sed 's/^/  stderr: /' "$err" | head -20
if [ "$want" = nonzero ]; then
    if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || [ "$rc" -eq 137 -a "$took" -ge "$limit" ]; then
        echo "FAIL: expected a failure within $limit s, got exit $rc"
        exit 1
    fi
elif [ "$rc" -ne "$want" ]; then
    echo "FAIL: expected exit $want, got $rc"
    exit 1
fi
if ! grep -qF -- "$msg" "$err"; then
    echo "FAIL: expected '$msg' on stderr"
    exit 1
fi
exit 0
