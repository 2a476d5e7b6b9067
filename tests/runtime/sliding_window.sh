#!/usr/bin/env bash
# Sliding-window attention (helix/model.h: sliding_window, sliding_pattern) in the runtime.
# tiny-window has 3 layers, a window of 45 positions on layers 0 and 1 and layer 2 whole.
# Prompts of 100, 61 and 7 tokens (prompt3_long.txt) are prefilled in chunks of 16 after a
# context of 300, then 6 steps, under --check against the fp64 reference (which windows on
# its own): on 1 rank, KVP 2, TPA 2, 2 x 2 and KVP 4 (the window starts inside one rank's
# block or another's), with 2 threads per rank, with the avx2 and scalar kernels (other KV
# blocks) and with HOP-B micro-batches; every run must give the same tokens. The window must
# change the tokens (the model without it decodes others), and a window longer than every
# sequence must decode bit for bit as none (hidden_hash). tiny-gemma (Gemma 3's layer: a
# window on every other layer turning with its own base, GeGLU, the scaled embedding,
# query_pre_attn_scalar, q/k and output norms) the same way on 1 rank, KVP 2 and 2 x 2.
# usage: sliding_window.sh HELIX DATA HELIXRUN
set -u
helix=$1 data=$2 helixrun=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0

. "$(dirname "$0")/report.sh" # json_field FILE EXPR

model=$data/tiny-window.json
args=(--context 300 --steps 6 --batch 3 --prompt-ids "$data/prompt3_long.txt"
      --prefill-chunk 16 --check --json --timeout 60)
run() { # NAME RANKS ARGS...: decode into $dir/NAME.json, its tokens into tok[NAME]
    local name=$1 n=$2
    shift 2
    if [ "$n" = 1 ]; then
        "$helix" decode "$@" "${args[@]}" >"$dir/$name.json" 2>"$dir/err"
    else
        timeout -k 5 150 "$helixrun" --no-prefix --oversubscribe -n "$n" --timeout 120 -- \
            "$helix" decode "$@" "${args[@]}" >"$dir/$name.json" 2>"$dir/err"
    fi || { echo "FAIL: $name: $(cat "$dir/err")"; fail=1; tok[$name]=failed; return 1; }
    tok[$name]=$(json_field "$dir/$name.json" "d['tokens']")
    echo "$name: $(json_field "$dir/$name.json" "d['tokens'][0]") ... (check rel err" \
         "$(json_field "$dir/$name.json" "d['max_rel_err']"))"
}
declare -A tok
run one 1 --model "$model"
run kvp2 2 --model "$model" --kvp 2
run tpa2 2 --model "$model" --tpa 2
run 2x2 4 --model "$model" --kvp 2 --tpa 2
run kvp4 4 --model "$model" --kvp 4
run threads2 1 --model "$model" --threads 2
run avx2 1 --model "$model" --kernels avx2
run scalar 1 --model "$model" --kernels scalar
run hopb 2 --model "$model" --kvp 2 --hopb on --micro-batch 1
for name in kvp2 tpa2 2x2 kvp4 threads2 avx2 scalar hopb; do
    [ "${tok[$name]}" = "${tok[one]}" ] ||
        { echo "FAIL: $name: other tokens than 1 rank"; fail=1; }
done
run gemma 1 --model "$data/tiny-gemma.json"
run gemma-kvp2 2 --model "$data/tiny-gemma.json" --kvp 2
run gemma-2x2 4 --model "$data/tiny-gemma.json" --kvp 2 --tpa 2
for name in gemma-kvp2 gemma-2x2; do
    [ "${tok[$name]}" = "${tok[gemma]}" ] ||
        { echo "FAIL: $name: other tokens than 1 rank"; fail=1; }
done

# without the window: other tokens; a window past every sequence (300 + 100 + 6): none
python3 - "$model" "$dir" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
wide = dict(m, name="tiny-window-wide", sliding_window=1000)
for k in ("sliding_window", "sliding_pattern"):
    del m[k]
m["name"] = "tiny-window-none"
json.dump(m, open(sys.argv[2] + "/m-none.json", "w"))
json.dump(wide, open(sys.argv[2] + "/m-wide.json", "w"))
PY
run none 1 --model "$dir/m-none.json"
run wide 1 --model "$dir/m-wide.json"
[ "${tok[none]}" != "${tok[one]}" ] ||
    { echo "FAIL: the window changed no token"; fail=1; }
a=$(json_field "$dir/none.json" "d['hidden_hash']")
b=$(json_field "$dir/wide.json" "d['hidden_hash']")
[ "$a" = "$b" ] ||
    { echo "FAIL: a window past every sequence decodes otherwise than none ($b, $a)"; fail=1; }
exit $fail
