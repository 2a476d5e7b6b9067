#!/usr/bin/env bash
# Phi3ForCausalLM checkpoints (fused qkv_proj and gate_up_proj, longrope,
# partial_rotary_factor) decode exactly as the same weights in Llama's layout: the split is
# made by phi3_split.py (independent of helix) and must equal `model synth --family dense`
# byte for byte; then --check on 1 rank and KVP 2, same tokens and hidden state.
# usage: phi3.sh HELIX DATA HELIXRUN SPLIT_PY
set -u
helix=$1 data=$2 helixrun=$3 split=$4
. "$(dirname "$0")/report.sh" # $dir (removed at exit), fail=0, json_field FILE EXPR

args=(--steps 4 --batch 3 --prompt-ids "$data/prompt3.txt" --prefill-chunk 8 --check --json
      --timeout 60)
declare -A hash tok
run() { # KEY MODEL CONTEXT [extra args]: 1 rank and KVP 2, both checked, same tokens
    local key=$1 model=$2 ctx=$3
    shift 3
    "$helix" decode --model "$model" --context "$ctx" "${args[@]}" "$@" >"$dir/$key.1" \
        2>"$dir/err" || { echo "FAIL: $key, 1 rank: $(cat "$dir/err")"; fail=1; return; }
    timeout -k 5 150 "$helixrun" --no-prefix -n 2 --timeout 120 -- "$helix" decode \
        --model "$model" --context "$ctx" --kvp 2 "${args[@]}" "$@" >"$dir/$key.2" \
        2>"$dir/err" || { echo "FAIL: $key, KVP 2: $(cat "$dir/err")"; fail=1; return; }
    hash[$key]=$(json_field "$dir/$key.1" "d['hidden_hash']")
    tok[$key]=$(json_field "$dir/$key.1" "d['tokens']")
    echo "$key: ${tok[$key]} hidden ${hash[$key]} (check rel err" \
         "$(json_field "$dir/$key.1" "d['max_rel_err']"), KVP 2 $(json_field "$dir/$key.2" "d['max_rel_err']"))"
    [ "$(json_field "$dir/$key.2" "d['tokens']")" = "${tok[$key]}" ] ||
        { echo "FAIL: $key: KVP 2 gives other tokens"; fail=1; }
}
same() { # A B what
    [ -n "${hash[$1]-}" ] && [ "${hash[$1]}" = "${hash[$2]-}" ] && [ "${tok[$1]}" = "${tok[$2]-}" ] ||
        { echo "FAIL: $3: $1 and $2 differ"; fail=1; }
}

"$helix" model synth --family phi3 --seed 5 --out "$dir/phi" >/dev/null &&
    "$helix" model synth --family dense --seed 5 --out "$dir/llama" >/dev/null || exit 1
grep -q '"Phi3ForCausalLM"' "$dir/phi/config.json" || { echo "FAIL: synth phi3 config"; exit 1; }
# Phi-3-mini-128k's form: longrope with the original context at the top level, the keys
# Phi-3 configs carry that helix does not use, a sliding window past the context
cp -r "$dir/phi" "$dir/philr"
python3 - "$dir/philr/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update({"original_max_position_embeddings": 256, "max_position_embeddings": 8192,
          "sliding_window": 262144, "resid_pdrop": 0.0, "embd_pdrop": 0.0,
          "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 32000,
          "pad_token_id": 32000, "initializer_range": 0.02, "use_cache": True,
          "auto_map": {"AutoConfig": "configuration_phi3.Phi3Config"},
          "rope_scaling": {"type": "longrope", "short_factor": [1.0 + 0.02 * i for i in range(16)],
                           "long_factor": [1.0 + 0.6 * i for i in range(16)]}})
json.dump(c, open(sys.argv[1], "w"), indent=2)
PY
for ck in phi philr; do
    python3 "$split" "$dir/$ck" "$dir/$ck.split" >"$dir/err" 2>&1 ||
        { echo "FAIL: split $ck: $(cat "$dir/err")"; fail=1; }
done
# with a Llama-layout copy written independently, the phi3 synth holds the dense synth's bytes
python3 "$split" "$dir/phi" "$dir/chk" "$dir/llama" >"$dir/err" 2>&1 ||
    { echo "FAIL: synth phi3 is not synth dense fused: $(cat "$dir/err")"; fail=1; }
run phi "$dir/phi" 300
run phi.split "$dir/phi.split" 300
run llama "$dir/llama" 300
same phi phi.split "fused vs split"
same phi llama "synth phi3 vs synth dense"
# 234 + 19 + 4 = 257 positions over the original 256: the long factors
run philr "$dir/philr" 234
run philr.split "$dir/philr.split" 234
same philr philr.split "longrope: fused vs split"
[ "${hash[philr]-x}" != "${hash[phi]-x}" ] || { echo "FAIL: longrope changed nothing"; fail=1; }

# partial_rotary_factor 0.75 (Phi-4-mini's): tiny with rope_dim 24 of head 32; the checkpoint
# decodes as the model file with its synthetic weights
python3 - "$data/../../../data/models/tiny.json" "$dir" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for r in (24, 32):
    m.update({"name": "tiny%d" % r, "rope_dim": r, "weight_dtype": "f32"})
    json.dump(m, open("%s/tiny%d.json" % (sys.argv[2], r), "w"))
PY
for r in 24 32; do
    "$helix" model synth --family phi3 --model "$dir/tiny$r.json" --dtype f32 --seed 5 \
        --out "$dir/phip$r" >/dev/null || exit 1
done
mv "$dir/phip24" "$dir/phip"
python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['partial_rotary_factor'] == 0.75" \
    "$dir/phip/config.json" || { echo "FAIL: partial_rotary_factor not written"; fail=1; }
cp -r "$dir/phip" "$dir/phiplr"
python3 - "$dir/phiplr/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update({"original_max_position_embeddings": 256, "max_position_embeddings": 8192,
          "rope_scaling": {"type": "longrope", "short_factor": [1.0 + 0.02 * i for i in range(12)],
                           "long_factor": [1.0 + 0.6 * i for i in range(12)]}})
json.dump(c, open(sys.argv[1], "w"), indent=2)
PY
run phip "$dir/phip" 300
run tiny24 "$dir/tiny24.json" 300 --seed 5
same phip tiny24 "partial_rotary_factor 0.75 vs rope_dim 24"
run phip32 "$dir/phip32" 300 # the same weights rotating all 32 elements must differ
[ "${hash[phip]-x}" != "${hash[phip32]-x}" ] || { echo "FAIL: partial rotary changed nothing"; fail=1; }
run phiplr "$dir/phiplr" 234
[ "${hash[phiplr]-x}" != "${hash[phip]-x}" ] || { echo "FAIL: partial longrope changed nothing"; fail=1; }
exit $fail
