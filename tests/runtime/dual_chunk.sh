#!/usr/bin/env bash
# Dual chunk attention (helix/model.h: dca_chunk; Qwen2.5-1M's dual_chunk_attention_config)
# in the runtime. tiny-dca has chunks of 24 positions (chunk_size 40 - local_size 16) and
# original_max_position_embeddings 60. Prompts of 100, 61 and 7 tokens (prompt3_long.txt)
# are prefilled in chunks of 16 after a context of 90, then 8 steps: every request's queries
# meet all three parts (its own chunk, the one before, the older ones), the parts' bounds
# fall inside one rank's kv block or another's, and past 60 positions keys and queries
# grow by vLLM's factor (a prompt's by its length's). Under --check against the fp64
# reference (which writes the parts and the factors out on its own): on 1 rank, KVP 2,
# TPA 2, 2 x 2, KVP 3 with blocks of 5 and KVP 4 with blocks of 3, with 2 threads, with the
# avx2 and scalar kernels and with HOP-B micro-batches, every run must
# give the same tokens; fp8 KV its own, on 1 rank and 2 x 2 alike, and a checkpoint's fp8
# scales per KV head on 1 rank and KVP 2 (its own); a Qwen2 checkpoint as LLaVA-OneVision's
# text model the hidden states of the checkpoint itself; prompts of one length
# prefilled token by token (HELIX_PREFILL=steps) those of the chunked prefill. Dual
# chunk attention must change the tokens (the model without it decodes others), and chunks
# longer than every sequence must decode bit for bit as none (hidden_hash: the prefill goes
# the plain way while its rows attend as without). Bad model files
# are refused at their key.
# usage: dual_chunk.sh HELIX DATA HELIXRUN
set -u
helix=$1 data=$2 helixrun=$3
. "$(dirname "$0")/report.sh" # $dir (removed at exit), fail=0, json_field FILE EXPR

model=$data/tiny-dca.json
args=(--context 90 --steps 8 --batch 3 --prompt-ids "$data/prompt3_long.txt"
      --prefill-chunk 16 --check --json --timeout 60)
declare -A tok # run NAME RANKS ARGS... (report.sh): tokens into tok[NAME]
run one 1 --model "$model"
run kvp2 2 --model "$model" --kvp 2
run tpa2 2 --model "$model" --tpa 2
run 2x2 4 --model "$model" --kvp 2 --tpa 2
run kvp3 3 --model "$model" --kvp 3 --kv-block 5
run kvp4 4 --model "$model" --kvp 4 --kv-block 3
run threads2 1 --model "$model" --threads 2
run avx2 1 --model "$model" --kernels avx2
run scalar 1 --model "$model" --kernels scalar
run hopb 2 --model "$model" --kvp 2 --hopb on --micro-batch 1
for name in kvp2 tpa2 2x2 kvp3 kvp4 threads2 avx2 scalar hopb; do
    [ "${tok[$name]}" = "${tok[one]}" ] ||
        { echo "FAIL: $name: other tokens than 1 rank"; fail=1; }
done
# prompts of one length (19 tokens each, prompt3.txt) prefilled in chunks of 7 or token by
# token through the decode step: the same tokens
saved=("${args[@]}")
args=(--context 90 --steps 8 --batch 3 --prompt-ids "$data/prompt3.txt" --prefill-chunk 7
      --check --json --timeout 60)
run chunks 2 --model "$model" --kvp 2
HELIX_PREFILL=steps run steps 2 --model "$model" --kvp 2
args=("${saved[@]}")
[ "${tok[steps]}" = "${tok[chunks]}" ] ||
    { echo "FAIL: steps: other tokens prefilled token by token than in chunks"; fail=1; }
# fp8 KV rounds the cache otherwise: its own tokens, the same on 1 rank and 2 x 2
run fp8 1 --model "$model" --kv-dtype fp8
run fp8-2x2 4 --model "$model" --kv-dtype fp8 --kvp 2 --tpa 2
[ "${tok[fp8]}" = "${tok[fp8-2x2]}" ] ||
    { echo "FAIL: fp8-2x2: other tokens than fp8 on 1 rank"; fail=1; }

# a checkpoint's fp8 KV-cache scales per KV head (each head appended on its own, the
# factor with its scale): Qwen2 with the same dual chunk attention, 1 rank and KVP 2
"$helix" model synth --family qwen2 --seed 4 --kv-scales 0.03,0.07,0.125,0.5 \
    --kv-scales-per-head --out "$dir/ph" >/dev/null || { echo "FAIL: synth"; fail=1; }
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["dual_chunk_attention_config"] = {"chunk_size": 40, "local_size": 16, "original_max_position_embeddings": 60}; json.dump(c, open(sys.argv[1], "w"))' \
    "$dir/ph/config.json"
run ph 1 --model "$dir/ph" --kv-dtype fp8
run ph-kvp2 2 --model "$dir/ph" --kv-dtype fp8 --kvp 2
[ "${tok[ph]}" = "${tok[ph-kvp2]}" ] ||
    { echo "FAIL: ph-kvp2: other tokens than on 1 rank"; fail=1; }

# a Qwen2 checkpoint with dual chunk attention as LLaVA-OneVision's text model (the key
# under text_config, where vLLM, building Qwen2's model from that text_config, reads it):
# the same hidden states on KVP 2 as the Qwen2 checkpoint itself; as Qwen2.5-VL's (its
# multimodal RoPE) refused at the key, exit 2
"$helix" model synth --family qwen2 --seed 5 --out "$dir/q2" >/dev/null || { echo "FAIL: synth q2"; fail=1; }
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["dual_chunk_attention_config"] = {"chunk_size": 40, "local_size": 16, "original_max_position_embeddings": 60}; json.dump(c, open(sys.argv[1], "w"))' \
    "$dir/q2/config.json"
for kind in llava-onevision qwen2.5-vl; do
    python3 "$(dirname "$0")/multimodal.py" "$dir/q2" "$dir/q2-$kind" $kind new ||
        { echo "FAIL: multimodal.py $kind"; fail=1; }
done
run q2 2 --model "$dir/q2" --kvp 2
run q2-ov 2 --model "$dir/q2-llava-onevision" --kvp 2
a=$(json_field "$dir/q2.json" "d['hidden_hash']")
b=$(json_field "$dir/q2-ov.json" "d['hidden_hash']")
[ "$a" = "$b" ] && [ "$a" != "" ] ||
    { echo "FAIL: LLaVA-OneVision's Qwen2 text model with dual chunk attention: hidden $b, Qwen2's $a"; fail=1; }
"$helix" decode --model "$dir/q2-qwen2.5-vl" --steps 1 >/dev/null 2>"$dir/err"
rc=$?
[ $rc = 2 ] && grep -q 'config.json:[0-9]*:[0-9]*: .*dual_chunk_attention_config.*remove it to run Qwen2_5_VLForConditionalGeneration' "$dir/err" ||
    { echo "FAIL: Qwen2.5-VL with dual chunk attention: exit $rc, $(cat "$dir/err")"; fail=1; }

# without dual chunk attention: other tokens; chunks past every sequence (90 + 100 + 8
# positions) and no scale factor: the same hidden states as none, bit for bit
python3 - "$model" "$dir" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
wide = dict(m, name="tiny-dca-wide", dca_chunk_size=1000, dca_local_size=0)
del wide["dca_orig_ctx"]
for k in ("dca_chunk_size", "dca_local_size", "dca_orig_ctx"):
    del m[k]
m["name"] = "tiny-dca-wide"  # the same name: the synthetic weights are seeded by it too
json.dump(m, open(sys.argv[2] + "/m-none.json", "w"))
json.dump(wide, open(sys.argv[2] + "/m-wide.json", "w"))
PY
run none 1 --model "$dir/m-none.json"
run wide 1 --model "$dir/m-wide.json"
[ "${tok[none]}" != "${tok[one]}" ] ||
    { echo "FAIL: dual chunk attention changed no token"; fail=1; }
a=$(json_field "$dir/none.json" "d['hidden_hash']")
b=$(json_field "$dir/wide.json" "d['hidden_hash']")
[ "$a" = "$b" ] ||
    { echo "FAIL: chunks past every sequence decode otherwise than none ($b, $a)"; fail=1; }

# bad model files: each refused at its key (file:line:column), exit 2
bad() { # NAME JSON-PATCH EXPECTED-TEXT
    python3 -c 'import json, sys; m = json.load(open(sys.argv[1])); m.update(json.loads(sys.argv[2])); json.dump(m, open(sys.argv[3], "w"), indent=1)' \
        "$model" "$2" "$dir/bad.json"
    "$helix" decode --model "$dir/bad.json" --steps 1 >/dev/null 2>"$dir/err"
    rc=$?
    if [ $rc != 2 ] || ! grep -q "bad.json:[0-9]*:[0-9]*: .*$3" "$dir/err"; then
        echo "FAIL: $1: exit $rc, $(cat "$dir/err") (expected \"$3\")"; fail=1
    else
        echo "$1: $(cat "$dir/err")"
    fi
}
bad local-ge-chunk '{"dca_local_size": 48}' "dca_local_size: local_size 48 must be"
bad chunk-1 '{"dca_chunk_size": 1, "dca_local_size": 0}' "dca_chunk_size: 1 is outside"
bad rope '{"rope_scaling": "linear", "rope_factor": 2}' "rope_scaling: dual chunk attention"
bad window '{"sliding_window": 8}' "sliding_window: dual chunk attention"
python3 -c 'import json, sys; m = json.load(open(sys.argv[1])); del m["dca_chunk_size"]; json.dump(m, open(sys.argv[2], "w"), indent=1)' \
    "$model" "$dir/nochunk.json"
"$helix" decode --model "$dir/nochunk.json" --steps 1 >/dev/null 2>"$dir/err"
[ $? = 2 ] && grep -q 'dca_local_size: only meaningful with "dca_chunk_size"' "$dir/err" ||
    { echo "FAIL: dca_local_size without a chunk size: $(cat "$dir/err")"; fail=1; }
exit $fail
