#!/usr/bin/env bash
# The device choice from the command line, with or without a GPU: helix info names the
# devices or says why there are none; without a device --device cuda exits 2 naming the
# reason, and --device auto (also HELIX_DEVICE=auto) falls back to cpu, says so in --json
# and still passes --check. With a device: auto takes cuda and passes --check.
# usage: device_cli.sh HELIX
set -u
helix=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

timeout -k 5 60 "$helix" info >"$out/info" 2>&1 || fail "helix info exited $?"
grep -q '^devices:' "$out/info" || fail "helix info has no devices line"
if grep -q '^devices:   no CUDA device (' "$out/info"; then
    have=0
    grep '^devices:' "$out/info"
    timeout -k 5 60 "$helix" decode --device cuda --context 64 --steps 1 >/dev/null 2>"$out/err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "--device cuda without a device: exit $rc, expected 2"
    grep -q -- '--device cuda: no CUDA device (' "$out/err" || fail "no reason: $(cat "$out/err")"
    HELIX_DEVICE=cuda timeout -k 5 60 "$helix" decode --context 64 --steps 1 >/dev/null 2>"$out/err"
    [ $? -eq 2 ] || fail "HELIX_DEVICE=cuda without a device: not exit 2"
    grep -q 'HELIX_DEVICE=cuda: no CUDA device' "$out/err" || fail "HELIX_DEVICE not named: $(cat "$out/err")"
else
    have=1
    grep -A3 '^devices:' "$out/info"
fi
for how in flag env; do
    if [ $how = flag ]; then
        timeout -k 5 120 "$helix" decode --device auto --context 300 --steps 3 --check --json >"$out/j" 2>"$out/err"
    else
        HELIX_DEVICE=auto timeout -k 5 120 "$helix" decode --context 300 --steps 3 --check --json >"$out/j" 2>"$out/err"
    fi
    rc=$?
    [ "$rc" -eq 0 ] || fail "--device auto ($how): exit $rc: $(tail -3 "$out/err")"
    python3 - "$out/j" "$have" <<'PY' || fail "--device auto ($how): report"
import json, sys
o = json.load(open(sys.argv[1]))
want = "cuda" if sys.argv[2] == "1" else "cpu"
assert o["device"] == want, (o["device"], want)
if want == "cpu":
    assert o["device_note"].startswith("auto chose cpu: no CUDA device ("), o["device_note"]
assert o["max_rel_err"] is not None and o["max_rel_err"] < 1e-3, o["max_rel_err"]
print("auto ->", o["device"], "|", o["device_note"], "| max rel err", o["max_rel_err"])
PY
done
timeout -k 5 60 "$helix" decode --device gpu --context 64 >/dev/null 2>"$out/err"
[ $? -eq 2 ] || fail "--device gpu: not exit 2"
grep -q -- '--device' "$out/err" || fail "--device gpu: flag not named"
# The device settings: a value outside their choices exits 2 naming the variable; on the
# cpu backend the CUDA kernel choice, the device phase clock and GPU sharing change nothing
# (the same tokens as without them).
for bad in HELIX_CUDA_ATTN=fastest HELIX_PHASE_CLOCK=gpu HELIX_GPU_SHARE=2; do
    env "$bad" timeout -k 5 60 "$helix" decode --device cpu --context 64 --steps 1 \
        >/dev/null 2>"$out/err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "$bad: exit $rc, expected 2"
    grep -q "${bad%%=*}" "$out/err" || fail "$bad: not named: $(cat "$out/err")"
done
timeout -k 5 60 "$helix" decode --device cpu --context 300 --steps 3 --json >"$out/plain" 2>&1 ||
    fail "plain cpu decode"
HELIX_CUDA_ATTN=mma HELIX_PHASE_CLOCK=device HELIX_GPU_SHARE=1 timeout -k 5 60 "$helix" \
    decode --device cpu --context 300 --steps 3 --json >"$out/set" 2>&1 ||
    fail "cpu decode with the device settings: $(tail -3 "$out/set")"
python3 - "$out/plain" "$out/set" <<'PY' || fail "the device settings changed a cpu run"
import json, sys
a, b = (json.loads(next(l for l in open(f) if l.startswith("{"))) for f in sys.argv[1:])
assert a["tokens"] == b["tokens"] and a["hidden_hash"] == b["hidden_hash"], (a["tokens"], b["tokens"])
PY
echo ok
