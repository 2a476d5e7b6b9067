#!/bin/sh
# Bad job-placement settings are refused before any work with exit 2 and the variable named:
# usage: bad_env.sh HELIX VAR=VALUE EXPECTED-TEXT
helix=$1; setting=$2; want=$3
out=$(env "$setting" "$helix" decode --context 300 --steps 1 2>&1 >/dev/null)
rc=$?
[ $rc = 2 ] || { echo "FAIL: $setting: exit $rc, expected 2: $out"; exit 1; }
case "$out" in *"$want"*) ;; *) echo "FAIL: $setting: no \"$want\" in: $out"; exit 1 ;; esac
echo "ok: $setting -> exit 2: $out"
