#!/usr/bin/env bash
# RoPE numbers at the edges that config.json may hold and that transformers rotates with
# (docs/model.md, "RoPE scaling"): factors below 1 for yarn (GQA and DeepSeek's MLA),
# linear, llama3, dynamic NTK and longrope (its factor max_position_embeddings / original,
# the short set and the long one), and yarn's beta_fast below beta_slow (the ramp reversed).
# Each checkpoint decodes the greedy tokens of hf_forward.py (an independent
# transformers-style forward), and each but those that leave the tokens alone decodes
# otherwise than the same weights unscaled.
# usage: rope_hostile.sh HELIX HF_FORWARD_PY
set -u
helix=$1 fwd=$2
. "$(dirname "$0")/report.sh" # $dir (removed at exit), fail=0, json_field FILE EXPR

echo "3 77 501 9 13 200 7 1 300 42 65 128" >"$dir/prompt"

# tokens CKPT: the forward's and helix's 7 tokens (the prefill's and 6 steps) for the prompt
# into $want and $got; 1 (after a FAIL line) when either run failed
tokens() {
    python3 "$fwd" "$1" "$dir/prompt" 6 >"$dir/py.json" 2>"$dir/err" &&
        "$helix" decode --model "$1" --context 0 --steps 6 --prompt-ids "$dir/prompt" \
            --kv-dtype f32 --json >"$dir/hx.json" 2>>"$dir/err" ||
        { echo "FAIL: $1: $(cat "$dir/err")"; fail=1; return 1; }
    want=$(json_field "$dir/py.json" "[d['prefill_token']] + d['tokens']")
    got=$(json_field "$dir/hx.json" "d['prefill_tokens'] + d['tokens'][0]")
}

declare -A plain
for fam in dense qwen2 phi3 moe-mla; do
    "$helix" model synth --family $fam --dtype f32 --seed 11 --out "$dir/$fam" >/dev/null ||
        { echo "FAIL: synth $fam"; fail=1; continue; }
    tokens "$dir/$fam" && plain[$fam]=$want
done

# case NAME FAMILY JSON [same]: the keys merged into the family's config.json; the tokens
# must be the forward's, and other than unscaled (with "same": the unscaled ones)
case_() {
    cp -r "$dir/$2" "$dir/$1"
    python3 -c 'import json, sys; p = sys.argv[1]; c = json.load(open(p))
c.update(json.loads(sys.argv[2])); json.dump(c, open(p, "w"))' "$dir/$1/config.json" "$3" ||
        { echo "FAIL: $1: config"; fail=1; return; }
    tokens "$dir/$1" || return
    echo "$1: transformers-style $want, helix $got (unscaled ${plain[$2]-?})"
    [ "$want" = "$got" ] || { echo "FAIL: $1: other tokens than the forward"; fail=1; }
    if [ "${4-}" = same ]; then
        [ "$want" = "${plain[$2]-x}" ] || { echo "FAIL: $1: other tokens than unscaled"; fail=1; }
    else
        [ "$want" != "${plain[$2]-x}" ] || { echo "FAIL: $1: the unscaled tokens"; fail=1; }
    fi
}

# an original context of 64 (as decode_hf_families takes it) puts yarn's ramp (pairs 0..5 at
# base 10^4) and llama3's three bands inside the 16 pairs
case_ yarn-half qwen2 '{"rope_scaling": {"type": "yarn", "factor": 0.5,
    "original_max_position_embeddings": 64}}'
case_ yarn-beta-reversed qwen2 '{"rope_scaling": {"type": "yarn", "factor": 4.0,
    "original_max_position_embeddings": 64, "beta_fast": 1.0, "beta_slow": 32.0}}'
case_ yarn-half-mla moe-mla '{"rope_scaling": {"type": "yarn", "factor": 0.5,
    "original_max_position_embeddings": 64, "mscale": 1.0, "mscale_all_dim": 1.0}}'
case_ linear-half dense '{"rope_scaling": {"type": "linear", "factor": 0.5}}'
case_ llama3-half dense '{"rope_scaling": {"rope_type": "llama3", "factor": 0.5,
    "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64}}'
# dynamic past a max_position_embeddings of 1 (the least there is): every forward grows the
# base, slowly at 0.5
case_ dynamic-half qwen2 '{"max_position_embeddings": 1, "rope_scaling": {"type": "dynamic",
    "factor": 0.5}}'
# longrope's factor max_position_embeddings / original below 1: attention factor 1; an
# original of 32 keeps the short set, of 8 takes the long one (16 factors each, one a pair)
sets='"short_factor": ['$(LC_ALL=C seq -s, 1.25 0.25 5)'],
    "long_factor": ['$(LC_ALL=C seq -s, 1 0.6 10)']'
for set in short:32 long:8; do
    orig=${set#*:}
    case_ "longrope-half-${set%:*}" phi3 '{"original_max_position_embeddings": '$orig',
        "max_position_embeddings": '$((orig / 2))',
        "rope_scaling": {"type": "longrope", '"$sets"'}}'
done
exit $fail
