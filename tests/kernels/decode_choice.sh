#!/bin/sh
# helix decode's kernel variant for the rank's shape: auto with bf16 KV and the tiny model
# (head size 32, group 4) takes amx at one thread and avx512 at two where amx is usable (else
# auto's best at both), a model of one query head per KV head (mha8) avx512 at one thread,
# --kernels binds, and the log's reason says which; each run is --check'ed.
# A head size off every vector width (40) says its attention runs the reference loop.
set -eu
helix="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # out-file, flags...
    out=$1; shift
    timeout 120 "$helix" decode --context 300 --steps 3 --check --json "$@" >"$out"
}
run "$tmp/t1" --threads 1
run "$tmp/t2" --threads 2
run "$tmp/named" --threads 2 --kernels amx 2>/dev/null || : >"$tmp/named"
sed 's/"head_dim": 128/"head_dim": 40/; s/"name": "head128"/"name": "head40"/' \
    "$(dirname "$0")/../runtime/data/head128.json" >"$tmp/head40.json"
run "$tmp/h40" --model "$tmp/head40.json"
run "$tmp/mha" --model "$(dirname "$0")/../runtime/data/mha8.json" --threads 1
if "$helix" info | grep -q '^  amx     usable'; then amx=1; else amx=0; fi
python3 - "$tmp" "$amx" <<'PY'
import json, sys
d, amx = sys.argv[1], sys.argv[2] == "1"
def load(n):
    txt = open(f"{d}/{n}").read().strip()
    return json.loads(txt.splitlines()[-1]) if txt else None
t1, t2, named, h40, mha = load("t1"), load("t2"), load("named"), load("h40"), load("mha")
for o in (t1, t2, h40, mha):
    assert o["checked"] and o["passed"], o
slow = "no vector path for head size 40 x 40" in h40["kernels_note"]
assert slow == (h40["kernels"] != "scalar"), h40["kernels_note"]
assert "no vector path" not in t1["kernels_note"] + t2["kernels_note"]
if amx:
    assert t1["kernels"] == "amx", t1["kernels"]
    assert "auto, the best" in t1["kernels_note"], t1["kernels_note"]
    assert t2["kernels"] == "avx512", t2["kernels"]
    assert "head size 32 < 64 and 2 threads" in t2["kernels_note"], t2["kernels_note"]
    assert named["kernels"] == "amx" and "named by --kernels" in named["kernels_note"], named
    assert mha["kernels"] == "avx512", mha["kernels"]
    assert "1 query head per KV head < 4" in mha["kernels_note"], mha["kernels_note"]
else:
    assert t1["kernels"] == t2["kernels"] == mha["kernels"], (t1["kernels"], t2["kernels"])
    assert t2["kernels_note"].startswith(t2["kernels"] + ": auto"), t2["kernels_note"]
print("threads 1:", t1["kernels_note"])
print("threads 2:", t2["kernels_note"])
PY
