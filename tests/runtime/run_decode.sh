#!/usr/bin/env bash
# Runs `helix decode --check --json` under a launcher with --hopb off and then --hopb on
# (HLX_HOPB_MODES overrides the list) and asserts that each run passed the reference check
# (exit 0, tokens match, replicas identical, max_rel_err within tolerance) and that all
# runs are bitwise identical (same tokens, same hash of the final hidden state).
# usage: run_decode.sh none|helixrun|mpirun NP HELIX HELIXRUN [decode args...]
# HLX_EXPECT="key=value,..." additionally asserts fields of the report (JSON literals).
# HLX_NEED_KERNELS=name skips the test (exit 77) where `helix info` does not list that
# kernel variant as usable (the caller passes --kernels name itself).
set -u
launcher=$1 np=$2 helix=$3 helixrun=$4
shift 4
if [ -n "${HLX_NEED_KERNELS:-}" ] &&
   ! "$helix" info 2>/dev/null | grep -Eq "^  ${HLX_NEED_KERNELS} +usable"; then
    echo "kernel variant ${HLX_NEED_KERNELS} not usable on this machine: skipped"
    exit 77
fi
case $launcher in
none)     cmd=("$helix" decode) ;;
helixrun) cmd=("$helixrun" --no-prefix -n "$np" --timeout 100 -- "$helix" decode) ;;
mpirun)   cmd=(mpirun --oversubscribe --allow-run-as-root -n "$np" "$helix" decode) ;;
*)        echo "unknown launcher $launcher"; exit 2 ;;
esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
modes=${HLX_HOPB_MODES:-off on}
i=0
for mode in $modes; do
    i=$((i + 1))
    start=$(date +%s)
    timeout -k 5 120 "${cmd[@]}" --check --json --timeout 60 --hopb "$mode" "$@" \
        >"$dir/out.$i" 2>"$dir/err.$i"
    rc=$?
    echo "$launcher -n $np: ${cmd[*]} --check --json --hopb $mode $* -> exit $rc in" \
         "$(( $(date +%s) - start )) s"
    if [ $rc -ne 0 ]; then
        echo "--- stdout"; cat "$dir/out.$i"; echo "--- stderr"; cat "$dir/err.$i"
        exit 1
    fi
done
python3 - "$dir" $modes <<'PY'
import json, os, sys
d0, ok = None, True
for i, mode in enumerate(sys.argv[2:], 1):
    lines = [l for l in open(os.path.join(sys.argv[1], "out.%d" % i)).read().splitlines()
             if l.startswith('{')]
    if len(lines) != 1:
        sys.exit("expected exactly one JSON report (rank 0), got %d" % len(lines))
    d = json.loads(lines[0])
    good = d["checked"] and d["tokens_match"] and d["replicas_match"] and d["max_rel_err"] <= 1e-3
    for kv in filter(None, os.environ.get("HLX_EXPECT", "").split(",")):
        k, v = kv.split("=", 1)
        try:
            want = json.loads(v)
        except ValueError:
            want = v
        if d.get(k) != want:
            print("  %s: expected %r, got %r" % (k, want, d.get(k)))
            good = False
    if d0 is not None and (d["tokens"] != d0["tokens"] or d["hidden_hash"] != d0["hidden_hash"]):
        print("  hopb %s differs from hopb %s: hidden hash %s vs %s, tokens %s" %
              (mode, d0["hopb"], d["hidden_hash"], d0["hidden_hash"],
               "equal" if d["tokens"] == d0["tokens"] else "differ"))
        good = False
    d0 = d0 or d
    print("  kvp %d tpa %d batch %d context %d steps %d hopb %s micro-batch %d: max_rel_err "
          "%.2e tokens_match %s hash %s -> %s"
          % (d["kvp"], d["tpa"], d["batch"], d["context"], d["steps"], d["hopb"],
             d["micro_batch"], d["max_rel_err"], d["tokens_match"], d["hidden_hash"],
             "ok" if good else "FAIL"))
    ok = ok and good
sys.exit(0 if ok else 1)
PY
