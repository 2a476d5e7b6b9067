#!/usr/bin/env bash
# helix bench hopb under helixrun -n 2: untimed warm-up rounds before the timed ones
# (--warmup, default 2, as bench a2a's -w), said in the JSON and the text; every figure a
# positive finite number; a bad --warmup refused naming it; --model a checkpoint directory.
# No speed is judged.
# usage: bench_hopb.sh HELIXRUN HELIX
set -u
helixrun=$1 helix=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
run() { # OUT ARGS...: the bench under helixrun -n 2, stdout to OUT
    local out=$1
    shift
    timeout -k 5 100 "$helixrun" --no-prefix -n 2 --timeout 90 -- "$helix" bench hopb --kvp 2 \
        --batch 4 --micro-batch 2 --context 4K --reps 3 "$@" >"$out" 2>"$dir/err"
}
for w in default 0 3; do
    extra=()
    [ "$w" != default ] && extra=(--warmup "$w")
    if ! run "$dir/$w.json" --json "${extra[@]}"; then
        echo "FAIL: --warmup $w: exit $?"; cat "$dir/err"; fail=1; continue
    fi
    want=$w
    [ "$w" = default ] && want=2
    python3 - "$dir/$w.json" "$want" <<'PY' || fail=1
import json, math, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
want = int(sys.argv[2])
bad = []
if d.get("warmup") != want or d.get("reps") != 3:
    bad.append("warmup %r reps %r, expected %d and 3" % (d.get("warmup"), d.get("reps"), want))
keys = ("c_ms", "m_ms", "lockstep_ms", "pipelined_ms", "c_busy_ms", "predicted_ms",
        "predicted_idle_ms")
for k in keys:
    if not isinstance(d.get(k), (int, float)) or not math.isfinite(d[k]) or d[k] <= 0:
        bad.append("%s is %r" % (k, d.get(k)))
if not bad:
    # the two models, recomputed: nb micro-batches of equal size (batch 4, micro-batch 2)
    nb = (d["batch"] + d["micro_batch"] - 1) // d["micro_batch"]
    c, cb, m = d["c_ms"], d["c_busy_ms"], d["m_ms"]
    for k, want_ms in (("predicted_ms", c + (nb - 1) * max(cb, m) + m),
                       ("predicted_idle_ms", c + (nb - 1) * max(c, m) + m)):
        if abs(d[k] - want_ms) > 1e-4 * want_ms:
            bad.append("%s %r, expected %r from c, c_busy and m" % (k, d[k], want_ms))
    for k, den in (("model_ratio", "predicted_ms"), ("model_ratio_idle", "predicted_idle_ms")):
        if abs(d.get(k, -1) - d["pipelined_ms"] / d[den]) > 1e-3:
            bad.append("%s %r is not pipelined / %s" % (k, d.get(k), den))
for b in bad:
    print("FAIL: --warmup %d:" % want, b)
sys.exit(1 if bad else 0)
PY
done
if run "$dir/text" --warmup 1 && grep -q "3 timed rounds after 1 warm-up" "$dir/text"; then :; else
    echo "FAIL: text output does not say the warm-up:"; cat "$dir/text" "$dir/err"; fail=1
fi
"$helix" bench hopb --help | grep -q -- "--warmup W" || { echo "FAIL: --help lacks --warmup"; fail=1; }
"$helix" bench hopb --warmup -1 >/dev/null 2>"$dir/err"
rc=$?
if [ $rc -ne 2 ] || ! grep -q -- "--warmup" "$dir/err"; then
    echo "FAIL: --warmup -1: exit $rc"; cat "$dir/err"; fail=1
fi
# --model takes a Hugging Face checkpoint directory as plan does (its config.json's shapes,
# weights synthetic): its name in the report; one without config.json refused naming --model
"$helix" model synth --family dense --seed 5 --out "$dir/ck" >/dev/null 2>&1 || fail=1
if run "$dir/ck.json" --json --model "$dir/ck" &&
   python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).read().strip().splitlines()[-1]); sys.exit(d["model"] != "synth-dense")' "$dir/ck.json"; then :; else
    echo "FAIL: --model CHECKPOINT_DIR:"; cat "$dir/ck.json" "$dir/err"; fail=1
fi
mkdir "$dir/empty"
"$helix" bench hopb --model "$dir/empty" >/dev/null 2>"$dir/err"
rc=$?
if [ $rc -ne 2 ] || ! grep -q -- "--model .*a directory without config.json" "$dir/err"; then
    echo "FAIL: --model without config.json: exit $rc"; cat "$dir/err"; fail=1
fi
[ $fail -eq 0 ] && echo "bench hopb warm-up: ok"
exit $fail
