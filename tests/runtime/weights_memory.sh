#!/usr/bin/env bash
# The memory a rank is checked against counts the strips' packing: with strips the start-up
# refusal names the row-major need plus the largest prepared matrix once more (both copies
# exist while it is packed). A bf16 model of 126 layers that fits nowhere, so both runs stop
# at the check: the LM head (16384 x 128256 x 2 bytes, 3.914 GiB) is its largest matrix,
# and every dimension is a multiple of 16 (no padding). Skipped (77) where the kernels keep
# row-major weights.
# usage: w_strips_memory.sh HELIX
set -u
helix=$1
. "$(dirname "$0")/report.sh" # $dir (removed at exit), fail=0, json_field FILE EXPR

"$helix" decode --context 64 --steps 1 --json >"$dir/tiny.json" || exit 1
if [ "$(json_field "$dir/tiny.json" "d['w_layout']")" != strips ]; then
    echo "SKIP: this machine's kernels keep row-major weights"
    exit 77
fi
cat >"$dir/big.json" <<'JSON'
{ "name": "big", "attn": "gqa", "layers": 126, "hidden": 16384, "q_heads": 128,
  "kv_heads": 8, "head_dim": 128, "ffn": 53248, "vocab": 128256, "rope_theta": 500000,
  "norm_eps": 1e-5, "weight_dtype": "bf16", "kv_dtype": "bf16" }
JSON
for w in 0 1; do
    HELIX_W_STRIPS=$w "$helix" decode --model "$dir/big.json" --context 1K --steps 1 \
        >"$dir/$w.out" 2>&1
    rc=$?
    need[$w]=$(sed -n 's/.* needs \([0-9.]*\) GiB .*/\1/p' "$dir/$w.out" | head -n 1)
    echo "HELIX_W_STRIPS=$w: exit $rc, needs ${need[$w]:-?} GiB"
    if [ $rc -ne 2 ] || [ -z "${need[$w]}" ]; then
        echo "FAIL: expected the start-up refusal (exit 2) naming the bytes needed"
        cat "$dir/$w.out"
        exit 1
    fi
done
if ! awk -v a="${need[0]}" -v b="${need[1]}" \
    'BEGIN { d = b - a - 4202692608 / 1073741824; exit !(d > -0.011 && d < 0.011) }'; then
    echo "FAIL: strips add $(awk -v a="${need[0]}" -v b="${need[1]}" 'BEGIN { print b - a }') GiB, not the LM head's 3.914"
    fail=1
fi
exit $fail
