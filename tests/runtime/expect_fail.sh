#!/usr/bin/env bash
# Runs a command that must fail: asserts its exit code, that stderr contains a message,
# and that it ended within a time limit (nothing hangs).
# usage: expect_fail.sh EXIT_CODE 'MESSAGE' SECONDS command args...
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
if [ "$rc" -ne "$want" ]; then
    echo "FAIL: expected exit $want, got $rc"
    exit 1
fi
if ! grep -qF -- "$msg" "$err"; then
    echo "FAIL: expected '$msg' on stderr"
    exit 1
fi
exit 0
