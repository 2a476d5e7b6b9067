#!/usr/bin/env bash
# Runs `helix decode --check --json` under a launcher and asserts the reference check
# passed: exit 0, tokens match, replicas identical, max_rel_err within tolerance.
# usage: run_decode.sh none|helixrun|mpirun NP HELIX HELIXRUN [decode args...]
# HLX_EXPECT="key=value,..." additionally asserts fields of the report (JSON literals).
set -u
launcher=$1 np=$2 helix=$3 helixrun=$4
shift 4
case $launcher in
none)     cmd=("$helix" decode) ;;
helixrun) cmd=("$helixrun" --no-prefix -n "$np" --timeout 100 -- "$helix" decode) ;;
mpirun)   cmd=(mpirun --oversubscribe --allow-run-as-root -n "$np" "$helix" decode) ;;
*)        echo "unknown launcher $launcher"; exit 2 ;;
esac
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
start=$(date +%s)
timeout -k 5 120 "${cmd[@]}" --check --json --timeout 60 "$@" >"$out" 2>"$err"
rc=$?
echo "$launcher -n $np: ${cmd[*]} --check --json $* -> exit $rc in $(( $(date +%s) - start )) s"
if [ $rc -ne 0 ]; then
    echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"
    exit 1
fi
python3 - "$out" <<'PY'
import json, os, sys
lines = [l for l in open(sys.argv[1]).read().splitlines() if l.startswith('{')]
if len(lines) != 1:
    sys.exit("expected exactly one JSON report (rank 0), got %d" % len(lines))
d = json.loads(lines[0])
ok = d["checked"] and d["tokens_match"] and d["replicas_match"] and d["max_rel_err"] <= 1e-3
for kv in filter(None, os.environ.get("HLX_EXPECT", "").split(",")):
    k, v = kv.split("=", 1)
    try:
        want = json.loads(v)
    except ValueError:
        want = v
    if d.get(k) != want:
        print("  %s: expected %r, got %r" % (k, want, d.get(k)))
        ok = False
print("  kvp %d tpa %d batch %d context %d steps %d: max_rel_err %.2e tokens_match %s -> %s"
      % (d["kvp"], d["tpa"], d["batch"], d["context"], d["steps"], d["max_rel_err"],
         d["tokens_match"], "ok" if ok else "FAIL"))
sys.exit(0 if ok else 1)
PY
