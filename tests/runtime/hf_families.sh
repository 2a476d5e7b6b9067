#!/usr/bin/env bash
# Hugging Face checkpoints of every family (Llama, Granite with its multipliers, Qwen2.5-VL's
# and Mistral Small 3.1's text models, Phi-3, GLM
# with RoPE in pairs over half
# of each head, GLM-4-0414 with its norms of the attention's and MLP's outputs, Gemma 3
# (GeGLU, norms of 1 + w, windows on every other layer with their own RoPE base), Gemma 2
# (the same layer with soft-capped attention scores and logits), Mistral,
# Mixtral and Phi-3 with sliding windows, Qwen2 and Qwen3 with theirs switched on and with
# vLLM's dual chunk attention (Qwen2.5-1M's; the forward applies it as vLLM does), InternLM2
# with q, k, v in one tensor grouped by KV head, Qwen2 with its q, k, v biases,
# Qwen3 with its per-head q/k norms, Qwen3-MoE and Mixtral with routed experts, Qwen2-MoE
# with them and a sigmoid-gated shared expert, GLM-4.5 with GQA attention (biases, head
# norms, rotate_half over half of each head), DeepSeek-V3's gate (sigmoid, correction bias,
# groups) and shared experts, its multi-token-prediction layer left out, dots.llm1 with
# Qwen3's attention (head norms, whole heads rotated) and that MoE, OLMo 2 with norms of
# the attention's and the MLP's outputs alone and q/k norms over the whole projections
# (their sums of squares added over the TPA ranks), OLMo 3 with that layer and windows on
# its sliding_attention layers (unscaled there under yarn), gpt-oss with its
# attention sinks, q, k, v and o biases, alternating windows, yarn without rounding, biased
# router and fused experts (gate and up interleaved, with biases, a clamped SwiGLU), Granite
# MoE with Granite's multipliers over routed experts fused output-major (and Granite MoE
# Shared's fused shared MLP beside them),
# DeepSeek-V3 and V2 with MLA and their gates) decode as the models' own code would: hf_forward.py
# (standard library only, independent of helix: its own safetensors reader, HF's layouts and
# rotate_half RoPE, float64) predicts the same greedy tokens for a prompt, in f32 and bf16,
# with each RoPE scaling (llama3, linear, Qwen2.5's yarn, longrope's two sets, dynamic NTK,
# DeepSeek's yarn), and from DeepSeek-V3's fp8 form (e4m3 weights, a scale per block).
# Then every family but Llama under --check on 1 rank, KVP 2 and 2 x 2 (biases, norms
# and fused rows split by head over TPA; the MoE families' experts over EP 2 and 4), with
# the same tokens on each; and the Qwen2/Qwen3 checkpoints equal to the model files they
# were written from (synthetic weights, qkv_bias / qk_norm).
# usage: hf_families.sh HELIX DATA HELIXRUN HF_FORWARD_PY [PART]
set -u
helix=$1 data=$2 helixrun=$3 fwd=$4
. "$(dirname "$0")/report.sh" # $dir (removed at exit), fail=0, json_field FILE EXPR

# The forwards (pure Python, 0.5-1 s each, about 150 of them) run in the background two
# at a time as checkpoints are made, and both_decode takes each one's output when it needs
# it.
# fwd_start CKPT: starts the forward of CKPT over $dir/prompt (written before any) into
# CKPT.fwd (bg_start)
fwd_start() {
    bg_start "$1.fwd" python3 "$fwd" "$1" "$dir/prompt" 6
}
# fwd_get CKPT: its forward's output in $dir/py.json and its errors in $dir/err (run now
# when not started); its exit status
fwd_get() {
    local rc
    [ -n "${bg_pid[$1.fwd]-}" ] || fwd_start "$1"
    bg_wait "$1.fwd"
    rc=$?
    cp "$1.fwd" "$dir/py.json" && cp "$1.fwd.err" "$dir/err" && return $rc
}

# both_decode CKPT WHAT: the forward's and helix's 7 tokens for $dir/prompt into $want and
# $got (f32 KV: the cache holds what the reference holds); 1 (after a FAIL line) when
# either run failed
both_decode() {
    fwd_get "$1" &&
        "$helix" decode --model "$1" --context 0 --steps 6 --prompt-ids "$dir/prompt" \
            --kv-dtype f32 --json >"$dir/hx.json" 2>>"$dir/err" ||
        { echo "FAIL: $2: $(cat "$dir/err")"; fail=1; return 1; }
    want=$(json_field "$dir/py.json" "[d['prefill_token']] + d['tokens']")
    got=$(json_field "$dir/hx.json" "d['prefill_tokens'] + d['tokens'][0]")
}

# changed_decode CKPT WHAT FAM CHANGE: both_decode, then helix's tokens must be the forward's
# and other than FAM's unchanged checkpoint's (first[FAM]), so that the match rests on the
# change; 1 only when a run failed
changed_decode() {
    both_decode "$1" "$2" || return 1
    echo "$2: transformers-style $want, helix $got (${4} ${first[$3]-?})"
    [ "$want" = "$got" ] && [ "$want" != "${first[$3]-x}" ] ||
        { echo "FAIL: $2: other tokens than the forward, or the same as ${4}"; fail=1; }
}

# synth_fam FAM DT SEED OUT: `model synth`; llama4's experts then fused as transformers saves
# them (multimodal.py llama4-text), its per-expert source kept as OUT.src
synth_fam() {
    local out=$4
    [ "$1" = llama4 ] && out=$4.src
    "$helix" model synth --family "$1" --dtype "$2" --seed "$3" --out "$out" >/dev/null &&
        { [ "$1" != llama4 ] ||
              python3 "$(dirname "$0")/multimodal.py" "$out" "$4" llama4-text new; }
}

# PART: forward (1 and 3: one helix at a time beside the forwards, but for six jobs of 2 and
# 4 ranks, each a second or two), sharded
# (2, every family on 2 and 4 ranks; makes its own bf16 checkpoints) or all (the default)
part=${5:-all}
case $part in
forward|sharded|all) ;;
*) echo "hf_families.sh: PART is forward, sharded or all, not '$part'"; exit 2 ;;
esac

# 2. the Qwen families, Phi-3 and InternLM2 (fused qkv_proj and wqkv read by head) sharded,
# checked against the fp64 reference
# sharded_fam FAM: $dir/FAM-bf16 under --check on 1 rank, KVP 2 and 2 x 2, the same tokens
# (its 1-rank run started by sharded_one beforehand where it was, else here)
sharded_args=(--steps 4 --batch 3 --prompt-ids "$data/prompt3.txt" --prefill-chunk 8
              --context 40 --check --json --timeout 60)
# sharded_one FAM: FAM's 1-rank run started in the background (bg_start: two at a time,
# one process each) into $dir/FAM.1
sharded_one() {
    bg_start "$dir/$1.1" "$helix" decode --model "$dir/$1-bf16" "${sharded_args[@]}"
}
sharded_fam() {
    local args fam=$1 ck tok lay n ep
    args=("${sharded_args[@]}")
    ck=$dir/$fam-bf16
    [ -n "${bg_pid[$dir/$fam.1]-}" ] || sharded_one "$fam"
    bg_wait "$dir/$fam.1" ||
        { echo "FAIL: $fam, 1 rank: $(cat "$dir/$fam.1.err")"; fail=1; return; }
    tok=$(json_field "$dir/$fam.1" "d['tokens']")
    for lay in "2 1" "2 2"; do # TPA 2 alone: as in 2 x 2, which splits the heads too
        set -- $lay
        n=$(($1 * $2)) ep=1
        case $fam in *moe|mixtral|gpt-oss|dots1|granitemoeshared|llama4) ep=$n ;; esac # each rank an expert group of 8 / N experts
        timeout -k 5 150 "$helixrun" --no-prefix -n $n --timeout 120 -- "$helix" decode \
            --model "$ck" --kvp "$1" --tpa "$2" --ep $ep "${args[@]}" >"$dir/out" 2>"$dir/err" ||
            { echo "FAIL: $fam, KVP $1 x TPA $2 EP $ep: $(cat "$dir/err")"; fail=1; continue; }
        echo "$fam KVP $1 x TPA $2 EP $ep: check rel err $(json_field "$dir/out" "d['max_rel_err']")"
        [ "$(json_field "$dir/out" "d['tokens']")" = "$tok" ] ||
            { echo "FAIL: $fam, KVP $1 x TPA $2 EP $ep: other tokens than 1 rank"; fail=1; }
    done
}

sharded() {
    local fam fams="qwen2 qwen2vl llavaov qwen3 qwen3vl phi3 glm glm4 gemma gemma2 gemma3
        gemma3mm internlm2 granite smollm3 seed-oss qwen2-moe qwen3-moe mixtral glm4-moe dots1
        deepseek-moe gpt-oss granitemoe granitemoeshared olmo2 olmo3 llama4"
    # the 1-rank runs first, two at a time; then each family's runs over ranks, one at a time
    for fam in $fams; do sharded_one $fam; done
    for fam in $fams; do
        sharded_fam $fam
    done
}

# StarCoder2's sharded part: its bf16 checkpoint (seed 4, as in 1.) on 1, 2 and 4 ranks
sharded_starcoder2() {
    [ -d "$dir/starcoder2-bf16" ] ||
        "$helix" model synth --family starcoder2 --dtype bf16 --seed 4 \
            --out "$dir/starcoder2-bf16" >/dev/null || { echo "FAIL: synth starcoder2 bf16"; fail=1; }
    sharded_fam starcoder2
}

if [ "$part" = sharded ]; then
    # the checkpoints made two at a time (bg_start: one process each), waited for in order
    fams="qwen2 qwen3 phi3 glm glm4 gemma gemma2 gemma3 internlm2 granite smollm3 seed-oss
        qwen2-moe qwen3-moe mixtral glm4-moe dots1 deepseek-moe gpt-oss granitemoe
        granitemoeshared olmo2 olmo3 llama4"
    for fam in $fams; do
        seed=11
        [ $fam = qwen2-moe ] && seed=1 # as in 1.
        [ $fam = olmo2 ] && seed=4
        bg_start "$dir/synth.$fam" synth_fam "$fam" bf16 $seed "$dir/$fam-bf16"
    done
    for fam in $fams; do
        bg_wait "$dir/synth.$fam" ||
            { echo "FAIL: synth $fam bf16: $(cat "$dir/synth.$fam.err")"; fail=1; }
    done
    mms=("gemma3 gemma3 gemma3mm" "qwen2 qwen2.5-vl qwen2vl" "qwen2 llava-onevision llavaov"
         "qwen3 qwen3-vl qwen3vl")
    for mm in "${mms[@]}"; do
        set -- $mm
        bg_start "$dir/mm.$3" python3 "$(dirname "$0")/multimodal.py" "$dir/$1-bf16" \
            "$dir/$3-bf16" $2 new
    done
    for mm in "${mms[@]}"; do
        set -- $mm
        bg_wait "$dir/mm.$3" || { cat "$dir/mm.$3" "$dir/mm.$3.err"; echo "FAIL: multimodal.py $2 bf16"; fail=1; }
    done
    sharded
    sharded_starcoder2
    exit $fail
fi

# 1. against the independent forward: 12 prompt tokens, 6 decoded
echo "3 77 501 9 13 200 7 1 300 42 65 128" >"$dir/prompt"
declare -A first
families="dense phi3 glm glm4 gemma gemma2 gemma3 internlm2 qwen2 qwen3 granite smollm3
    seed-oss qwen2-moe qwen3-moe mixtral glm4-moe dots1 deepseek-moe gpt-oss granitemoe
    granitemoeshared olmo2 olmo3 llama4 moe-mla deepseek-v2"
for fam in $families; do
    # qwen2-moe: seed 1, where the shared expert's gate changes the tokens (at 11 it does not)
    seed=11
    [ $fam = qwen2-moe ] && seed=1
    # olmo2: seed 4, where per-head q/k norms or a unit input norm change the tokens (at 11
    # they do not)
    [ $fam = olmo2 ] && seed=4
    for dt in f32 bf16; do
        synth_fam "$fam" $dt $seed "$dir/$fam-$dt" && fwd_start "$dir/$fam-$dt" ||
            { echo "FAIL: synth $fam $dt"; fail=1; }
    done
done
for fam in $families; do
    for dt in f32 bf16; do
        ck=$dir/$fam-$dt
        [ -d "$ck" ] || continue
        both_decode "$ck" "$fam $dt" || continue
        gap=$(json_field "$dir/py.json" "'%.2g' % d['min_gap_rel']")
        echo "$fam $dt: transformers-style $want, helix $got (smallest top-2 gap $gap of the largest logit)"
        if [ "$want" != "$got" ]; then
            # fp32 rounding can swap two logits this close; none of the seeds used is
            if python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 1e-5 else 1)" "$gap"; then
                echo "  (a near tie: not judged)"
            else
                echo "FAIL: $fam $dt: helix decodes other tokens than the HF forward"
                fail=1
            fi
        fi
        [ $dt = f32 ] && first[$fam]=$want
    done
done
# DeepSeek's yarn (V2-Lite's and V3's parameters: mscale and mscale_all_dim 0.707, which
# scale the softmax; an original context of 16 that puts the ramp inside the 8 pairs)
cp -r "$dir/moe-mla-f32" "$dir/yarn"
python3 - "$dir/yarn/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update({"max_position_embeddings": 640,
          "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 16,
                           "beta_fast": 32, "beta_slow": 1, "mscale": 0.707,
                           "mscale_all_dim": 0.707}})
json.dump(c, open(sys.argv[1], "w"))
PY
both_decode "$dir/yarn" yarn
echo "moe-mla with yarn: transformers-style $want, helix $got"
echo "$want" >"$dir/yarn.tokens"
[ "$want" = "$got" ] && [ "$want" != "${first[moe-mla]-x}" ] ||
    { echo "FAIL: yarn: other tokens than the forward, or the same as without yarn"; fail=1; }

# DeepSeek-V3's fp8 release form: e4m3 weights with one f32 scale per block (synth's blocks
# are 32 x 32), dequantized by the forward on its own
"$helix" model synth --family moe-mla --dtype fp8 --seed 11 --out "$dir/fp8" >/dev/null ||
    { echo "FAIL: synth fp8"; fail=1; }
both_decode "$dir/fp8" fp8
echo "moe-mla fp8: transformers-style $want, helix $got"
[ "$want" = "$got" ] || { echo "FAIL: fp8: other tokens than the forward"; fail=1; }
# GLM-4.5-FP8's form: the same block-scaled e4m3 linears around its F32 correction biases,
# the router and the MTP layer
"$helix" model synth --family glm4-moe --dtype fp8 --fp8-format fp8-block --seed 11 \
    --out "$dir/glm4-moe-fp8" >/dev/null || { echo "FAIL: synth glm4-moe fp8"; fail=1; }
both_decode "$dir/glm4-moe-fp8" glm4-moe-fp8
echo "glm4-moe fp8: transformers-style $want, helix $got"
[ "$want" = "$got" ] || { echo "FAIL: glm4-moe fp8: other tokens than the forward"; fail=1; }

# transformers' RoPE scalings, each in the form its models' config.json writes it: Llama
# 3.1's llama3 (an original context of 64 puts the three bands inside the 16 pairs),
# linear, Qwen2.5's yarn (no mscale keys: cos and sin times 0.1 ln 4 + 1, the softmax scale
# unchanged) and Phi-3-128k's longrope with its short set (the 18 positions within the
# original 32) and its long set (an original 8, below the 12-token prompt, so transformers'
# prefill already takes it). Each must decode as the forward does and otherwise than the
# same weights unscaled.
# config_case NAME FAMILY JSON [same]: keys merged into the family's f32 config.json, its
# forward started; finish_cases then checks the cases in order: they must change the
# tokens, or with "same" keep them
declare -A ropetok case_fam case_same # each case's tokens, family and "same"
cases=()
config_case() {
    cp -r "$dir/$2-f32" "$dir/$1"
    python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c.update(json.loads(sys.argv[2])); json.dump(c, open(sys.argv[1], "w"))' \
        "$dir/$1/config.json" "$3" && fwd_start "$dir/$1"
    cases+=("$1")
    case_fam[$1]=$2 case_same[$1]=${4-}
}
finish_cases() {
    local c f
    for c in "${cases[@]}"; do
        f=${case_fam[$c]}
        both_decode "$dir/$c" "$c" || continue
        echo "$c: transformers-style $want, helix $got (without the keys ${first[$f]-?})"
        [ "$want" = "$got" ] || { echo "FAIL: $c: other tokens than the forward"; fail=1; }
        if [ "${case_same[$c]}" = same ]; then
            [ "$want" = "${first[$f]-x}" ] ||
                { echo "FAIL: $c: other tokens than without the keys"; fail=1; }
        else
            [ "$want" != "${first[$f]-x}" ] ||
                { echo "FAIL: $c: the same tokens as without the keys"; fail=1; }
        fi
        ropetok[$c]=$want
    done
    cases=()
}
config_case llama3 dense '{"rope_scaling": {"rope_type": "llama3", "factor": 8.0,
    "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64}}'
config_case linear dense '{"rope_scaling": {"type": "linear", "factor": 4.0}}'
config_case qwen-yarn qwen2 '{"rope_scaling": {"type": "yarn", "factor": 4.0,
    "original_max_position_embeddings": 64}}'
# both mscale keys: their ratio on cos and sin, and still no factor on the softmax scale
# (DeepSeek's attention alone has one); mscale alone: not used by transformers' yarn
config_case qwen-yarn-mscale qwen2 '{"rope_scaling": {"type": "yarn", "factor": 4.0,
    "original_max_position_embeddings": 64, "mscale": 1.0, "mscale_all_dim": 3.0}}'
config_case qwen-yarn-mscale1 qwen2 '{"rope_scaling": {"type": "yarn", "factor": 4.0,
    "original_max_position_embeddings": 64, "mscale": 3.0}}'
# attention_factor: on cos and sin in place of mscale(4) (transformers and vLLM alike);
# the original context from the top level, which vLLM and transformers v5 write over
# rope_scaling's: the same rotation as qwen-yarn's (checked after finish_cases); truncate
# true is both's default
config_case qwen-yarn-attn qwen2 '{"rope_scaling": {"type": "yarn", "factor": 4.0,
    "original_max_position_embeddings": 64, "attention_factor": 2.5}}'
config_case qwen-yarn-top qwen2 '{"original_max_position_embeddings": 64, "rope_scaling":
    {"type": "yarn", "factor": 4.0, "truncate": true}}'
for set in short:32 long:8; do
    config_case "longrope-${set%:*}" phi3 '{"original_max_position_embeddings": '"${set#*:}"',
        "max_position_embeddings": '"$((${set#*:} * 16))"', "rope_scaling": {"type": "longrope",
        "short_factor": [1.25, 1.5, 1.75, 2, 2.25, 2.5, 2.75, 3, 3.25, 3.5, 3.75, 4, 4.25, 4.5, 4.75, 5],
        "long_factor": [1, 1.6, 2.2, 2.8, 3.4, 4, 4.6, 5.2, 5.8, 6.4, 7, 7.6, 8.2, 8.8, 9.4, 10]}}'
done
# dynamic NTK (transformers' dynamic_rope_update, InternLM2): the base grows once a forward
# is longer than max_position_embeddings, and cached keys keep the rotation they had. With
# 12 the 12-token prompt turns with the plain base and each decode step with its own larger
# one; with 8 the prompt already turns with the base of its 12 positions (the forward runs
# the prompt as one pass, helix prefills it), each step with its own.
for set in 12:1000 8:64; do
    config_case "dynamic-${set%:*}" qwen2 '{"max_position_embeddings": '"${set%:*}"',
        "rope_scaling": {"type": "dynamic", "factor": '"${set#*:}"'}}'
done
# InternLM2.5-7B-Chat-1M's form of it (factor 2.5 there), and InternLM3's (Llama's tensors
# under InternLM3ForCausalLM, its biases off, factor 6 there)
config_case internlm2-dynamic internlm2 '{"max_position_embeddings": 8,
    "rope_scaling": {"type": "dynamic", "factor": 64.0}}'
config_case internlm3-dynamic dense '{"architectures": ["InternLM3ForCausalLM"],
    "model_type": "internlm3", "qkv_bias": false, "bias": false, "max_position_embeddings": 8,
    "rope_scaling": {"rope_type": "dynamic", "factor": 64.0}}'
# GLM-4.5's gate limited to the best of 4 groups of 2 experts (the releases have one group;
# DeepSeek-V3's noaux_tc groups, scored by their two best choice values)
config_case glm4-moe-groups glm4-moe '{"n_group": 4, "topk_group": 1}'
# dots.llm1's reading of the same keys (its releases: one group too)
config_case dots1-groups dots1 '{"n_group": 4, "topk_group": 1}'
# Granite MoE: residual_multiplier on the experts' output as on the attention's (2.0, where
# the synth's 0.8 and 1.0 give the same tokens), and the top 4 and the top 1 of the router's
# logits softmaxed among themselves
config_case granitemoe-res granitemoe '{"residual_multiplier": 2.0}'
config_case granitemoe-top4 granitemoe '{"num_experts_per_tok": 4}'
config_case granitemoe-top1 granitemoe '{"num_experts_per_tok": 1}'
# OLMo 3: yarn on its full_attention layer alone (the windowed one turns unscaled), and no
# window (every layer whole) each give other tokens
config_case olmo3-yarn olmo3 '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0,
    "original_max_position_embeddings": 8}}'
config_case olmo3-nowin olmo3 '{"sliding_window": null}'
# the same with every correction bias at -1.5, so that every choice value is below 0: the
# other groups' experts stay out of the choice (vLLM's -inf; transformers' masked 0.0
# would take them over the kept ones), and the forward keeps vLLM's rule
cp -r "$dir/glm4-moe-f32" "$dir/glm4-moe-negbias"
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c.update(n_group=4, topk_group=1); json.dump(c, open(sys.argv[1], "w"))' \
    "$dir/glm4-moe-negbias/config.json"
for t in $(python3 -c 'import glob, json, struct, sys
for p in glob.glob(sys.argv[1] + "/*.safetensors"):
    f = open(p, "rb"); n = struct.unpack("<Q", f.read(8))[0]
    print(" ".join(k for k in json.loads(f.read(n)) if k.endswith("e_score_correction_bias")))' \
    "$dir/glm4-moe-negbias"); do
    python3 "$(dirname "$0")/st_edit.py" "$dir/glm4-moe-negbias" set "$t" -1.5 ||
        { echo "FAIL: setting $t"; fail=1; }
done
fwd_start "$dir/glm4-moe-negbias"
cases+=(glm4-moe-negbias)
case_fam[glm4-moe-negbias]=glm4-moe case_same[glm4-moe-negbias]=

# sliding windows, on every layer as MistralForCausalLM, MixtralForCausalLM and
# Phi3ForCausalLM have them (the forward keeps q - window < kv <= q): windows of 5 to 7
# positions against a 12-token prompt and 6 steps
config_case window-mistral dense '{"architectures": ["MistralForCausalLM"],
    "model_type": "mistral", "num_key_value_heads": 2, "sliding_window": 5}'
config_case window-mixtral mixtral '{"sliding_window": 6}'
config_case window-phi3 phi3 '{"sliding_window": 7, "max_position_embeddings": 4096}'
# Qwen2's and Qwen3's switch: the layers from max_window_layers on (layer 1 of 2), or as
# layer_types lists them; every layer from max_window_layers 0
config_case window-qwen2 qwen2 '{"use_sliding_window": true, "sliding_window": 5,
    "max_window_layers": 1}'
config_case window-qwen2-all qwen2 '{"use_sliding_window": true, "sliding_window": 5,
    "max_window_layers": 0}'
config_case window-qwen3 qwen3 '{"use_sliding_window": true, "sliding_window": 4,
    "layer_types": ["full_attention", "sliding_attention"]}'
# Qwen2.5-1M's dual chunk attention as vLLM runs it (transformers ignores it; hf_forward.py
# applies it): chunks of 5 positions with original_max_position_embeddings 2 on Qwen2 (the
# factor on keys and queries, the keys' taken as they are cached, changes the tokens from
# the fourth step on), of 5 with no factor (its default) on Qwen3, so that the 18 positions
# meet all three parts
config_case qwen-dca qwen2 '{"dual_chunk_attention_config": {"chunk_size": 8,
    "local_size": 3, "original_max_position_embeddings": 2}}'
config_case qwen3-dca qwen3 '{"dual_chunk_attention_config": {"chunk_size": 9,
    "local_size": 4}}'
finish_cases
# the same checkpoint exact over ranks, prefilled in chunks whose bounds fall mid-part
for lay in "2 --kvp 2 --kv-block 3" "4 --kvp 2 --tpa 2 --prefill-chunk 5"; do
    timeout -k 5 150 "$helixrun" --no-prefix --oversubscribe -n ${lay%% *} --timeout 120 -- \
        "$helix" decode --model "$dir/qwen-dca" --context 0 --steps 6 --prompt-ids \
        "$dir/prompt" --kv-dtype f32 --check --json ${lay#* } >"$dir/hx.json" 2>"$dir/err" ||
        { echo "FAIL: qwen-dca on ${lay#* }: $(cat "$dir/err")"; fail=1; continue; }
    got=$(json_field "$dir/hx.json" "d['prefill_tokens'] + d['tokens'][0]")
    echo "qwen-dca on ${lay#* }: $got"
    [ "$got" = "${ropetok[qwen-dca]-x}" ] ||
        { echo "FAIL: qwen-dca on ${lay#* }: other tokens than on 1 rank"; fail=1; }
done
# not combined with a RoPE scaling: refused at the config's key
cp -r "$dir/qwen-dca" "$dir/qwen-dca-yarn"
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["rope_scaling"] = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}; json.dump(c, open(sys.argv[1], "w"), indent=1)' \
    "$dir/qwen-dca-yarn/config.json"
"$helix" decode --model "$dir/qwen-dca-yarn" --steps 1 >/dev/null 2>"$dir/err"
rc=$?
{ [ $rc = 2 ] && grep -q 'config.json:[0-9]*:[0-9]*: dual_chunk_attention_config: dual chunk attention with rope_scaling "yarn" is not run' "$dir/err"; } ||
    { echo "FAIL: qwen-dca-yarn: exit $rc, $(cat "$dir/err")"; fail=1; }
[ "${ropetok[qwen-yarn-top]-a}" = "${ropetok[qwen-yarn]-b}" ] ||
    { echo "FAIL: qwen-yarn-top: other tokens than qwen-yarn's original in rope_scaling"; fail=1; }
[ "${ropetok[qwen-yarn-attn]-a}" != "${ropetok[qwen-yarn]-a}" ] ||
    { echo "FAIL: qwen-yarn-attn: attention_factor 2.5 decodes as mscale(4)"; fail=1; }
[ "${ropetok[window-qwen2]-a}" != "${ropetok[window-qwen2-all]-a}" ] ||
    { echo "FAIL: window-qwen2: max_window_layers 1 and 0 decode alike"; fail=1; }

# Gemma 3's pieces each change the tokens, in helix as in the forward: no window (a pattern
# of 1), another softmax scale (query_pre_attn_scalar 200 for 24; the head size 32 is too
# close to change a token of this model), another base for the windowed layers (10, where
# the tokens move), and a linear scaling on the whole-context layers only (Gemma 3 4B and
# up); and layer_types in place of sliding_window_pattern reads as the same pattern
config_case gemma3-nowindow gemma3 '{"sliding_window_pattern": 1}'
# Gemma 2's attention soft-capping changes the tokens (null: none; the logits' cap cannot,
# being monotone, and --check compares the capped logits below), and without layer_types
# (synth writes them) its class's alternating pattern is the same
config_case gemma2-nocap gemma2 '{"attn_logit_softcapping": null}'
config_case gemma2-types gemma2 '{"layer_types": null}' same
config_case gemma3-scale gemma3 '{"query_pre_attn_scalar": 200}'
config_case gemma3-localbase gemma3 '{"rope_local_base_freq": 10.0}'
config_case gemma3-linear gemma3 '{"rope_scaling": {"rope_type": "linear", "factor": 8.0}}'
# SmolLM3's NoPE layer changes the tokens (every layer turned: others, in helix as in the
# forward), and the list derived from no_rope_layer_interval is the list itself
config_case smollm3-rope smollm3 '{"no_rope_layers": [1, 1]}'
config_case smollm3-interval smollm3 '{"no_rope_layers": null, "no_rope_layer_interval": 2}' same
# DeepSeek-MoE's top-k renormalised (norm_topk_prob true; its releases say false) decodes
# other tokens, in helix as in the forward
config_case deepseek-moe-norm deepseek-moe '{"norm_topk_prob": true}'
# gpt-oss: yarn's ends rounded (truncate true), the releases' SwiGLU limit 7 (which the
# synthetic gates and ups do not reach), another sigmoid gain and a window of 3 each decode
# other tokens, in helix as in the forward; the older spelling of the top-k alone and
# layer_types left out (its class's alternation) the same ones
config_case gpt-oss-truncate gpt-oss '{"rope_scaling": {"rope_type": "yarn", "factor": 4.0,
    "original_max_position_embeddings": 64, "beta_fast": 32.0, "beta_slow": 1.0,
    "truncate": true}}'
config_case gpt-oss-limit gpt-oss '{"swiglu_limit": 7.0}'
config_case gpt-oss-alpha gpt-oss '{"swiglu_alpha": 1.0}'
config_case gpt-oss-window gpt-oss '{"sliding_window": 3}'
config_case gpt-oss-types gpt-oss '{"layer_types": null}' same
finish_cases
cp -r "$dir/gemma3-f32" "$dir/gemma3-types"
python3 - "$dir/gemma3-types/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
del c["sliding_window_pattern"]
c["layer_types"] = ["sliding_attention", "full_attention"]
json.dump(c, open(sys.argv[1], "w"))
PY
both_decode "$dir/gemma3-types" gemma3-types
echo "gemma3 with layer_types: transformers-style $want, helix $got (pattern ${first[gemma3]-?})"
[ "$want" = "$got" ] && [ "$got" = "${first[gemma3]-x}" ] ||
    { echo "FAIL: gemma3: layer_types decodes otherwise than its pattern"; fail=1; }
# Granite: each of its multipliers set to 1 in turn decodes other tokens (so the match
# above rests on each), helix still those of the forward; the logits' scale, which greedy
# tokens cannot show, divides the logits: with it, temperature T samples what T times it
# samples without it (the same draws)
for mult in embedding_multiplier attention_multiplier residual_multiplier; do
    cp -r "$dir/granite-f32" "$dir/granite-$mult"
    sed -i "s/\"$mult\": [0-9.e+-]*/\"$mult\": 1.0/" "$dir/granite-$mult/config.json"
    changed_decode "$dir/granite-$mult" "granite, $mult 1" granite "with it"
done
cp -r "$dir/granite-f32" "$dir/granite-nols"
sed -i 's/"logits_scaling": [0-9.e+-]*/"logits_scaling": 1.0/' "$dir/granite-nols/config.json"
for run in "granite-f32 0.25" "granite-nols 2" "granite-f32 2"; do
    set -- $run
    "$helix" generate --model "$dir/$1" --prompt-ids "$dir/prompt" --max-new 12 \
        --temperature $2 --seed 5 --json >"$dir/$1-$2.json" 2>"$dir/err" ||
        { echo "FAIL: generate $1 T $2: $(cat "$dir/err")"; fail=1; }
done
a=$(json_field "$dir/granite-f32-0.25.json" "d['tokens']")
b=$(json_field "$dir/granite-nols-2.json" "d['tokens']")
c=$(json_field "$dir/granite-f32-2.json" "d['tokens']")
echo "granite sampled: logits / 8 at T 0.25 $a, unscaled at T 2 $b, logits / 8 at T 2 $c"
[ "$a" = "$b" ] && [ "$a" != "$c" ] ||
    { echo "FAIL: granite's logits_scaling does not divide the logits"; fail=1; }

# Vision-language checkpoints holding a text model of the families above, in the forms
# transformers saved them (multimodal.py; a vision tensor beside, which a text decode
# leaves alone): each decodes as the text model alone, in the forward and in helix.
# Gemma 3 4B and up (Gemma3ForConditionalGeneration: text_config; language_model.model. or
# model.language_model.); Qwen2.5-VL (text keys at the top with an mrope rope_scaling, or
# under text_config; model. or model.language_model.: the sections of its multimodal RoPE
# turned by the one text position); Mistral Small 3.1 (Mistral3ForConditionalGeneration,
# Mistral's text model on Llama's layout, as Gemma 3's)
# LLaVA 1.5 (Llama's text model), LLaVA-NeXT (Mistral's, with its image_newline),
# LLaVA-OneVision (Qwen2's biases) and InternVL 3.5 (Qwen3's head norms), their vision parts
# under model. in the new form; Idefics3 / SmolVLM v1 and SmolVLM2 (Llama's text model under
# model.text_model., the vision model and connector beside it: one form, new); Qwen3-VL
# (Qwen3's text model under model.language_model., its interleaved multimodal RoPE, which the
# forward deals to a text token's three equal positions: one form, new)
for mm in "gemma3 gemma3 gemma3mm" "qwen2 qwen2.5-vl qwen2vl" "qwen2 qwen2-vl qwen2vl1" \
    "dense mistral3 mistral3" "dense llava llava" "dense llava-next llavanext" \
    "qwen2 llava-onevision llavaov" "qwen3 internvl internvl" "dense idefics3 idefics3 new" \
    "dense smolvlm smolvlm new" "qwen3 qwen3-vl qwen3vl new"; do
    set -- $mm
    for form in ${4:-old new}; do
        python3 "$(dirname "$0")/multimodal.py" "$dir/$1-f32" "$dir/$3-$form" $2 $form ||
            { echo "FAIL: multimodal.py $2 $form"; fail=1; continue; }
        both_decode "$dir/$3-$form" "$2 ($form)" || continue
        echo "$2 ($form): transformers-style $want, helix $got"
        [ "$want" = "$got" ] && [ "$got" = "${first[$1]-x}" ] ||
            { echo "FAIL: $2 ($form): other tokens than its text model"; fail=1; }
    done
    # bf16, for the layouts under --check (2.; the sharded part makes its own)
    [ "$part" = forward ] ||
        python3 "$(dirname "$0")/multimodal.py" "$dir/$1-bf16" "$dir/$3-bf16" $2 new ||
        { echo "FAIL: multimodal.py $2 bf16"; fail=1; }
done
# LLaVA-OneVision's text_config without a model_type: LlavaOnevisionConfig's qwen2 (its
# biases read), where LLaVA 1.5's would be llama
cp -r "$dir/llavaov-new" "$dir/llavaov-nomt"
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); del c["text_config"]["model_type"]; json.dump(c, open(sys.argv[1], "w"))' \
    "$dir/llavaov-nomt/config.json"
"$helix" model info "$dir/llavaov-nomt" >/dev/null 2>"$dir/err" ||
    { echo "FAIL: LLaVA-OneVision's default text model: $(cat "$dir/err")"; fail=1; }

# SmolVLM2 with a top-level tie_word_embeddings true beside a text_config without the key:
# untied, as vLLM ties by text_config's key alone (the head differs from the embedding
# here, so a tied read would decode other tokens)
cp -r "$dir/smolvlm-new" "$dir/smolvlm-toptie"
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); del c["text_config"]["tie_word_embeddings"]; c["tie_word_embeddings"] = True; json.dump(c, open(sys.argv[1], "w"))' \
    "$dir/smolvlm-toptie/config.json"
if "$helix" decode --model "$dir/smolvlm-toptie" --context 0 --steps 6 --prompt-ids \
    "$dir/prompt" --kv-dtype f32 --json >"$dir/hx.json" 2>"$dir/err"; then
    got=$(json_field "$dir/hx.json" "d['prefill_tokens'] + d['tokens'][0]")
    echo "smolvlm, top-level tie: helix $got (the text model: ${first[dense]-?})"
    [ "$got" = "${first[dense]-x}" ] ||
        { echo "FAIL: smolvlm: the top level's tie_word_embeddings read"; fail=1; }
else
    echo "FAIL: smolvlm, top-level tie: $(cat "$dir/err")"; fail=1
fi

# Qwen3-VL decodes as the Qwen3 checkpoint it was made from, to the hidden state; tied as
# Qwen3-VL-2B and 4B are (tie_word_embeddings true in text_config and at the top, no
# lm_head.weight) as the tied text model, in helix and in the forward; tied by text_config's
# key alone (vLLM's Qwen3LLMForCausalLM): a top-level true beside a text_config without the
# key reads lm_head.weight (the text model's tokens), or is refused where there is none; in
# transformers v5's form (rope_parameters with the base, the sections and the interleave)
# the same tokens
# refused NAME MESSAGE...: decoding $dir/NAME exits 2 with MESSAGE in its error
refused() {
    local name=$1
    shift
    "$helix" decode --model "$dir/$name" --context 20 --steps 1 >/dev/null 2>"$dir/err"
    local rc=$?
    echo "$name: exit $rc: $(cat "$dir/err")"
    [ $rc -eq 2 ] && grep -qF "$*" "$dir/err" || { echo "FAIL: $name not refused saying '$*'"; fail=1; }
}

hidden_of() { # CKPT OUT: helix's tokens and hidden hash of CKPT into OUT
    "$helix" decode --model "$1" --context 0 --steps 6 --prompt-ids "$dir/prompt" \
        --kv-dtype f32 --json >"$dir/hx.json" 2>"$dir/err" &&
        json_field "$dir/hx.json" "d['prefill_tokens'] + d['tokens'][0], d['hidden_hash']" >"$2" ||
        { echo "FAIL: $1: $(cat "$dir/err")"; fail=1; }
}

# Gemma 1 (GemmaConfig): gemma-7b's first config names "gelu" in hidden_act alone, which
# vLLM runs in the tanh form (the same tokens); hidden_activation "gelu" (vLLM's exact GELU)
# and a soft-capping key (GemmaConfig has none) are refused at their key
gemma_case() { # NAME JSON: gemma-f32 with JSON's keys, hidden_activation dropped for null
    cp -r "$dir/gemma-f32" "$dir/$1"
    python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c.update(json.loads(sys.argv[2])); [c.pop(k) for k in list(c) if c[k] is None]; json.dump(c, open(sys.argv[1], "w"))' \
        "$dir/$1/config.json" "$2"
}
gemma_case gemma-act '{"hidden_act": "gelu", "hidden_activation": null}'
gemma_case gemma-exact '{"hidden_activation": "gelu"}'
gemma_case gemma-cap '{"final_logit_softcapping": 30.0}'
hidden_of "$dir/gemma-f32" "$dir/gemma.ref"
hidden_of "$dir/gemma-act" "$dir/gemma-act.out"
cmp -s "$dir/gemma.ref" "$dir/gemma-act.out" ||
    { echo "FAIL: gemma with hidden_act gelu alone: other tokens or hidden states than gelu_pytorch_tanh"; fail=1; }
refused gemma-exact 'hidden_activation: "gelu" is not supported (the FFN runs GELU'"'"'s tanh form: "gelu_pytorch_tanh"; vLLM would run the exact GELU here'
refused gemma-cap 'final_logit_softcapping: soft-capping is read for Gemma2ForCausalLM only'
# SmolLM3: a NoPE first layer (every layer unrotated in the pattern it sets), an entry that is
# not 0 or 1, a window (use_sliding_window) and a sliding layer_types entry: refused at the key
# patched_refused FAMILY 'NAME|JSON|MESSAGE'...: each NAME, the family's f32 config.json with
# JSON's keys merged in, refused with MESSAGE (exit 2)
patched_refused() {
    local fam=$1 c name patch key
    shift
    for c in "$@"; do
        IFS='|' read -r name patch key <<<"$c"
        cp -r "$dir/$fam-f32" "$dir/$name"
        python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c.update(json.loads(sys.argv[2])); json.dump(c, open(sys.argv[1], "w"))' \
            "$dir/$name/config.json" "$patch"
        refused "$name" "$key"
    done
}
patched_refused smollm3 'smollm3-first|{"no_rope_layers": [0, 1]}|no_rope_layers[0] is 0' \
    'smollm3-two|{"no_rope_layers": [1, 2]}|no_rope_layers[1]: expected 1' \
    'smollm3-win|{"use_sliding_window": true, "sliding_window": 4}|use_sliding_window: true' \
    'smollm3-types|{"layer_types": ["full_attention", "sliding_attention"]}|layer_types[1] "sliding'
# the released configs of Seed-OSS-36B-Instruct, SmolLM3-3B, gemma-7b, gpt-oss-20b and
# gpt-oss-120b (as written on their model pages; rope_scaling {"rope_type": "default"},
# SmolLM3's list of 36 and layer_types, Gemma's hidden_act "gelu" alone; gpt-oss's as its
# bf16 copies keep them, without the MXFP4 quantization_config) read to their parameter
# counts (SmolLM3-3B's and gemma-7b's as published to the unit; Seed-OSS-36B's page rounds
# its to 36.2B, gpt-oss's to 20.9B and 116.8B: counted from the shapes, sinks and biases
# included)
python3 - "$dir" <<'PY'
import json, os, sys
d = sys.argv[1]
cfgs = {
    "real-seed": {"architectures": ["SeedOssForCausalLM"], "attention_bias": True,
                  "attention_dropout": 0.1, "attention_out_bias": False, "bos_token_id": 0,
                  "pad_token_id": 1, "eos_token_id": 2, "head_dim": 128, "hidden_act": "silu",
                  "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 27648,
                  "max_position_embeddings": 524288, "mlp_bias": False, "model_type": "seed_oss",
                  "num_attention_heads": 80, "num_hidden_layers": 64, "num_key_value_heads": 8,
                  "residual_dropout": 0.1, "rms_norm_eps": 1e-06,
                  "rope_scaling": {"rope_type": "default"}, "rope_theta": 10000000.0,
                  "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True,
                  "vocab_size": 155136},
    "real-smollm3": {"architectures": ["SmolLM3ForCausalLM"], "attention_bias": False,
                     "bos_token_id": None, "eos_token_id": 128012, "hidden_act": "silu",
                     "hidden_size": 2048, "intermediate_size": 11008,
                     "layer_types": ["full_attention"] * 36, "max_position_embeddings": 65536,
                     "max_window_layers": 28, "mlp_bias": False, "model_type": "smollm3",
                     "no_rope_layer_interval": 4,
                     "no_rope_layers": [int((i + 1) % 4 != 0) for i in range(36)],
                     "num_attention_heads": 16, "num_hidden_layers": 36,
                     "num_key_value_heads": 4, "pad_token_id": 128004, "pretraining_tp": 2,
                     "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 5000000.0,
                     "sliding_window": None, "torch_dtype": "bfloat16",
                     "use_sliding_window": False, "vocab_size": 128256},
    "real-gemma": {"architectures": ["GemmaForCausalLM"], "attention_bias": False,
                   "bos_token_id": 2, "eos_token_id": 1, "head_dim": 256, "hidden_act": "gelu",
                   "hidden_size": 3072, "intermediate_size": 24576,
                   "max_position_embeddings": 8192, "model_type": "gemma",
                   "num_attention_heads": 16, "num_hidden_layers": 28,
                   "num_key_value_heads": 16, "pad_token_id": 0, "rms_norm_eps": 1e-06,
                   "rope_scaling": None, "rope_theta": 10000.0, "torch_dtype": "bfloat16",
                   "vocab_size": 256000},
}
for name, layers, experts in (("real-gpt-oss-20b", 24, 32), ("real-gpt-oss-120b", 36, 128)):
    cfgs[name] = {
        "architectures": ["GptOssForCausalLM"], "attention_bias": True,
        "attention_dropout": 0.0, "eos_token_id": 200002, "experts_per_token": 4,
        "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880,
        "initial_context_length": 4096, "initializer_range": 0.02, "intermediate_size": 2880,
        "layer_types": ["sliding_attention" if i % 2 == 0 else "full_attention"
                        for i in range(layers)],
        "max_position_embeddings": 131072, "model_type": "gpt_oss", "num_attention_heads": 64,
        "num_experts_per_tok": 4, "num_hidden_layers": layers, "num_key_value_heads": 8,
        "num_local_experts": experts, "output_router_logits": False, "pad_token_id": 199999,
        "rms_norm_eps": 1e-05,
        "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                         "original_max_position_embeddings": 4096, "rope_type": "yarn",
                         "truncate": False},
        "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128,
        "swiglu_limit": 7.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "use_cache": True, "vocab_size": 201088}
for name, c in cfgs.items():
    os.makedirs(os.path.join(d, name), exist_ok=True)
    json.dump(c, open(os.path.join(d, name, "config.json"), "w"), indent=2)
PY
for c in 'real-seed 36151104512 0' 'real-smollm3 3075098624 4' 'real-gemma 8537680896 0' \
    'real-gpt-oss-20b 20914757184 0' 'real-gpt-oss-120b 116829156672 0'; do
    set -- $c
    got=$("$helix" model info --config-only --json "$dir/$1" 2>"$dir/err" |
          python3 -c 'import json, sys; d = json.load(sys.stdin); print(int(d["params"]), d["model"]["nope_pattern"])')
    echo "$1: $got (expected $2 parameters)"
    [ "$got" = "$2 $3" ] || { echo "FAIL: $1: $got, not $2 parameters and nope_pattern $3: $(cat "$dir/err")"; fail=1; }
done
# Seed-OSS: its q, k and v biases are qwen2's (the same tokens); a bias on o_proj
# (attention_out_bias) is refused at the key
[ "${first[seed-oss]-a}" = "${first[qwen2]-b}" ] ||
    { echo "FAIL: seed-oss: other tokens than qwen2's weights under Qwen2's class"; fail=1; }
cp -r "$dir/seed-oss-f32" "$dir/seed-oss-outbias"
sed -i 's/"attention_out_bias": false/"attention_out_bias": true/' "$dir/seed-oss-outbias/config.json"
refused seed-oss-outbias 'attention_out_bias: a bias on o_proj is not supported'
# gpt-oss: a quantization_config of MXFP4 over bf16 experts (no blocks), a layer_types entry off the
# alternation, a SwiGLU limit of 0, the two spellings of the top-k disagreeing and a null top-k
# (GptOssConfig's num_experts_per_tok is an int; the router's topk fails on None) refused
patched_refused gpt-oss \
    'gpt-oss-mxfp4|{"quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}}|gate_up_proj_blocks is missing (config.json'"'"'s quantization_config mxfp4: the experts as MXFP4 blocks and scales)' \
    'gpt-oss-types-bad|{"layer_types": ["full_attention", "sliding_attention"]}|layer_types[0] is "full_attention", which breaks gpt-oss'"'"'s pattern' \
    'gpt-oss-limit0|{"swiglu_limit": 0.0}|swiglu_limit: 0: the clamp of gate and up must be > 0' \
    'gpt-oss-topk|{"experts_per_token": 3}|experts_per_token: 3 contradicts num_experts_per_tok 2' \
    'gpt-oss-topk-null|{"num_experts_per_tok": null}|num_experts_per_tok: null is not a count'
# DeepSeek-MoE: a sigmoid gate and dense layers interleaved (moe_layer_freq 2) refused
patched_refused deepseek-moe \
    'deepseek-moe-sigmoid|{"scoring_func": "sigmoid"}|scoring_func: "sigmoid" is not read' \
    'deepseek-moe-freq|{"moe_layer_freq": 2}|moe_layer_freq: 2 interleaves dense layers'
cp -r "$dir/qwen3-f32" "$dir/qwen3-tied"
python3 "$(dirname "$0")/st_edit.py" "$dir/qwen3-tied" drop lm_head.weight &&
    sed -i 's/"tie_word_embeddings": false/"tie_word_embeddings": true/' \
        "$dir/qwen3-tied/config.json" &&
    python3 "$(dirname "$0")/multimodal.py" "$dir/qwen3-tied" "$dir/qwen3vl-tied" qwen3-vl new ||
    { echo "FAIL: the tied Qwen3-VL checkpoint"; fail=1; }
python3 - "$dir/qwen3vl-new" "$dir/qwen3vl-tied" "$dir/qwen3vl-toptie" "$dir/qwen3vl-toptie0" \
    "$dir/qwen3vl-v5" <<'PY' ||
import json, shutil, sys
new, tied, toptie, toptie0, v5 = sys.argv[1:6]
for src, dst in ((new, toptie), (tied, toptie0)):
    shutil.copytree(src, dst)
    c = json.load(open(dst + "/config.json"))
    del c["text_config"]["tie_word_embeddings"]
    c["tie_word_embeddings"] = True
    json.dump(c, open(dst + "/config.json", "w"), indent=1)
shutil.copytree(new, v5)
c = json.load(open(v5 + "/config.json"))
t = c["text_config"]
t["rope_parameters"] = dict(t.pop("rope_scaling"), rope_theta=t.pop("rope_theta"))
json.dump(c, open(v5 + "/config.json", "w"), indent=1)
PY
    { echo "FAIL: the Qwen3-VL config variants"; fail=1; }
hidden_of "$dir/qwen3-f32" "$dir/h.qwen3"
hidden_of "$dir/qwen3vl-new" "$dir/h.qwen3vl"
hidden_of "$dir/qwen3-tied" "$dir/h.qwen3-tied"
hidden_of "$dir/qwen3vl-tied" "$dir/h.qwen3vl-tied"
echo "qwen3-vl: helix $(cat "$dir/h.qwen3vl") (the text model: $(cat "$dir/h.qwen3"))"
echo "qwen3-vl tied: helix $(cat "$dir/h.qwen3vl-tied") (the text model: $(cat "$dir/h.qwen3-tied"))"
[ -s "$dir/h.qwen3" ] && cmp -s "$dir/h.qwen3" "$dir/h.qwen3vl" ||
    { echo "FAIL: qwen3-vl: another hidden state than its text model's"; fail=1; }
[ -s "$dir/h.qwen3-tied" ] && cmp -s "$dir/h.qwen3-tied" "$dir/h.qwen3vl-tied" &&
    ! cmp -s "$dir/h.qwen3" "$dir/h.qwen3-tied" ||
    { echo "FAIL: qwen3-vl tied: not its tied text model's tokens, or the untied ones"; fail=1; }
# Qwen3-VL's 1M context (its model card: yarn with the interleaved sections, factor 3 over
# 262144; vLLM's get_rope builds MRotaryEmbedding with yarn's parameters): a text decode
# turns as plain yarn does, the hidden state of its Qwen3 source under that yarn, which is
# not the unscaled one
python3 - "$dir/qwen3-f32" "$dir/qwen3-yarn" "$dir/qwen3vl-new" "$dir/qwen3vl-yarn" <<'PY' ||
import json, shutil, sys
yarn = {"rope_type": "yarn", "factor": 3.0, "original_max_position_embeddings": 262144}
for src, dst, key in ((sys.argv[1], sys.argv[2], None), (sys.argv[3], sys.argv[4], "text_config")):
    shutil.copytree(src, dst)
    c = json.load(open(dst + "/config.json"))
    t = c[key] if key else c
    t["rope_scaling"] = dict(yarn, **{k: v for k, v in (t.get("rope_scaling") or {}).items()
                                      if k.startswith("mrope_")})
    json.dump(c, open(dst + "/config.json", "w"), indent=1)
PY
    { echo "FAIL: the yarn variants"; fail=1; }
hidden_of "$dir/qwen3-yarn" "$dir/h.qwen3-yarn"
hidden_of "$dir/qwen3vl-yarn" "$dir/h.qwen3vl-yarn"
echo "qwen3-vl yarn: helix $(cat "$dir/h.qwen3vl-yarn") (the text model under yarn: $(cat "$dir/h.qwen3-yarn"))"
[ -s "$dir/h.qwen3-yarn" ] && cmp -s "$dir/h.qwen3-yarn" "$dir/h.qwen3vl-yarn" &&
    ! cmp -s "$dir/h.qwen3" "$dir/h.qwen3-yarn" ||
    { echo "FAIL: qwen3-vl yarn: not its text model's hidden state under yarn, or the unscaled one"; fail=1; }
tied_tok=$(sed 's/ [0-9a-f]*$//' "$dir/h.qwen3-tied") # its tokens, less the hash
for v in "qwen3vl-tied $tied_tok" "qwen3vl-toptie ${first[qwen3]-x}" \
    "qwen3vl-v5 ${first[qwen3]-x}"; do
    set -- $v
    name=$1
    shift
    both_decode "$dir/$name" "$name" || continue
    echo "$name: transformers-style $want, helix $got (expected $*)"
    [ "$want" = "$got" ] && [ "$got" = "$*" ] || { echo "FAIL: $name"; fail=1; }
done
# the older forms' names (language_model.model.: vLLM maps only model.language_model. for
# Qwen3-VL) refused; another text model
cp -r "$dir/qwen3vl-new" "$dir/qwen3vl-oldname"
python3 "$(dirname "$0")/st_edit.py" "$dir/qwen3vl-oldname" rename \
    model.language_model.embed_tokens.weight language_model.model.embed_tokens.weight || fail=1
cp -r "$dir/qwen3vl-new" "$dir/qwen3vl-qwen3"
sed -i 's/"model_type": "qwen3_vl_text"/"model_type": "qwen3"/' "$dir/qwen3vl-qwen3/config.json"
cp -r "$dir/qwen3vl-yarn" "$dir/qwen3vl-yarnsec"
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["text_config"]["rope_scaling"]["mrope_section"] = [6, 5]; json.dump(c, open(sys.argv[1], "w"), indent=1)' \
    "$dir/qwen3vl-yarnsec/config.json"
cp -r "$dir/qwen3vl-new" "$dir/qwen3vl-sections"
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["text_config"]["rope_scaling"]["mrope_section"] = [6, 5, 4]; json.dump(c, open(sys.argv[1], "w"), indent=1)' \
    "$dir/qwen3vl-sections/config.json"
for bad in "qwen3vl-toptie0 tensor lm_head.weight is missing" \
    "qwen3vl-oldname tensor model.language_model.embed_tokens.weight is missing" \
    "qwen3vl-qwen3 model_type: \"qwen3\" is not read" \
    "qwen3vl-sections mrope_section: sections of 15 pairs in all" \
    "qwen3vl-yarnsec mrope_section: sections of 11 pairs in all"; do
    refused $bad
done

# Qwen3-VL-MoE (Qwen3VLMoeForConditionalGeneration) made from the Qwen3-MoE checkpoint: its
# routed experts fused in 3-D tensors as transformers saves them (multimodal.py), read
# through per-expert views as vLLM splits them; the hidden state of its source on 1 rank,
# and over ranks (KVP 2 x TPA 1 and 2 x 2, each rank an expert group) the tokens, hash and
# check of its source under the same layout. Refused: a fused tensor of another shape (the
# gate_up_proj of hidden x moe_intermediate, its gate half alone) and a missing one
for dt in f32 bf16; do
    python3 "$(dirname "$0")/multimodal.py" "$dir/qwen3-moe-$dt" "$dir/qwen3vlmoe-$dt" \
        qwen3-vl-moe new || { echo "FAIL: multimodal.py qwen3-vl-moe $dt"; fail=1; }
done
# against the forward, which reads the fused tensors on its own (gate_up_proj's halves,
# input-major): the same tokens as helix and as the Qwen3-MoE source's per-expert tensors
fwd_start "$dir/qwen3vlmoe-f32"
if both_decode "$dir/qwen3vlmoe-f32" qwen3-vl-moe; then
    echo "qwen3-vl-moe: transformers-style $want, helix $got (the text model: ${first[qwen3-moe]-?})"
    [ "$want" = "$got" ] && [ "$got" = "${first[qwen3-moe]-x}" ] ||
        { echo "FAIL: qwen3-vl-moe: other tokens than the forward or its text model"; fail=1; }
fi
hidden_of "$dir/qwen3-moe-f32" "$dir/h.qwen3moe"
hidden_of "$dir/qwen3vlmoe-f32" "$dir/h.qwen3vlmoe"
echo "qwen3-vl-moe: helix $(cat "$dir/h.qwen3vlmoe") (the text model: $(cat "$dir/h.qwen3moe"))"
[ -s "$dir/h.qwen3moe" ] && cmp -s "$dir/h.qwen3moe" "$dir/h.qwen3vlmoe" ||
    { echo "FAIL: qwen3-vl-moe: another hidden state than its text model's"; fail=1; }
moeargs=(--steps 4 --batch 3 --prompt-ids "$data/prompt3.txt" --prefill-chunk 8 --context 40
         --check --json --timeout 60)
for lay in "2 1" "2 2"; do
    set -- $lay
    n=$(($1 * $2))
    for ck in qwen3-moe qwen3vlmoe; do
        timeout -k 5 150 "$helixrun" --no-prefix -n $n --timeout 120 -- "$helix" decode \
            --model "$dir/$ck-bf16" --kvp "$1" --tpa "$2" --ep $n "${moeargs[@]}" \
            >"$dir/out.$ck" 2>"$dir/err" ||
            { echo "FAIL: $ck, KVP $1 x TPA $2 EP $n: $(cat "$dir/err")"; fail=1; }
    done
    a=$(json_field "$dir/out.qwen3-moe" "d['tokens'], d['hidden_hash'], d['max_rel_err']")
    b=$(json_field "$dir/out.qwen3vlmoe" "d['tokens'], d['hidden_hash'], d['max_rel_err']")
    echo "qwen3-vl-moe KVP $1 x TPA $2 EP $n: $b (qwen3-moe: $a)"
    [ -n "$a" ] && [ "$a" = "$b" ] ||
        { echo "FAIL: qwen3-vl-moe, KVP $1 x TPA $2 EP $n: not its text model's decode"; fail=1; }
done
cp -r "$dir/qwen3vlmoe-f32" "$dir/qwen3vlmoe-shape"
python3 - "$dir/qwen3vlmoe-shape" <<'PY' || { echo "FAIL: could not reshape gate_up_proj"; fail=1; }
import glob, json, struct, sys
for path in glob.glob(sys.argv[1] + "/*.safetensors"):
    blob = open(path, "rb").read()
    n = struct.unpack("<Q", blob[:8])[0]
    h = json.loads(blob[8:8 + n])
    for k, v in h.items():
        if k.endswith("layers.1.mlp.experts.gate_up_proj"):
            e, hid, two = v["shape"]
            v["shape"] = [e, two // 2, 2 * hid]  # the same bytes, another shape
    hb = json.dumps(h).encode()
    hb += b" " * (-len(hb) % 8)
    open(path, "wb").write(struct.pack("<Q", len(hb)) + hb + blob[8 + n:])
PY
cp -r "$dir/qwen3vlmoe-f32" "$dir/qwen3vlmoe-nodown"
python3 "$(dirname "$0")/st_edit.py" "$dir/qwen3vlmoe-nodown" drop \
    model.language_model.layers.1.mlp.experts.down_proj || fail=1
for bad in "qwen3vlmoe-shape tensor model.language_model.layers.1.mlp.experts.gate_up_proj: shape [8, 64, 512], expected [8, 256, 128]" \
    "qwen3vlmoe-nodown tensor model.language_model.layers.1.mlp.experts.down_proj is missing"; do
    refused $bad
done

# Llama 4: the synthetic checkpoint with its experts per expert (as `model synth` writes
# them) decodes as the fused one (the tokens and hidden state); Llama4ForConditionalGeneration
# (its text model under text_config and language_model., or model.language_model.) as its
# text model and the forward; each Llama 4 key changed in config.json (chunks off, the q/k
# norm off, also by a null, the temperature off, its slope 2 with the key 4 as the releases
# write it, its floor 16 at that slope: other tokens than the slope alone) decodes to the
# forward's tokens
# and to other tokens than the unchanged checkpoint; refused: moe_layers or layer_types off
# their pattern, attention_bias true
hidden_of "$dir/llama4-f32" "$dir/h.llama4"
hidden_of "$dir/llama4-f32.src" "$dir/h.llama4src"
echo "llama4: fused $(cat "$dir/h.llama4"), per expert $(cat "$dir/h.llama4src")"
[ -s "$dir/h.llama4" ] && cmp -s "$dir/h.llama4" "$dir/h.llama4src" ||
    { echo "FAIL: llama4: the per-expert checkpoint decodes otherwise than the fused one"; fail=1; }
for form in old new; do
    python3 "$(dirname "$0")/multimodal.py" "$dir/llama4-f32.src" "$dir/llama4mm-$form" llama4 \
        $form || { echo "FAIL: multimodal.py llama4 $form"; fail=1; }
    fwd_start "$dir/llama4mm-$form"
done
for form in old new; do
    both_decode "$dir/llama4mm-$form" "llama4 $form" || continue
    echo "llama4 ConditionalGeneration ($form): transformers-style $want, helix $got (text model ${first[llama4]-?})"
    [ "$want" = "$got" ] && [ "$got" = "${first[llama4]-x}" ] ||
        { echo "FAIL: llama4 $form: other tokens than the forward or its text model"; fail=1; }
done
llama4_case() { # NAME JSON: llama4-f32 with JSON's keys in config.json
    cp -r "$dir/llama4-f32" "$dir/$1"
    python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c.update(json.loads(sys.argv[2])); json.dump(c, open(sys.argv[1], "w"))' \
        "$dir/$1/config.json" "$2"
}
llama4_case llama4-nochunk '{"attention_chunk_size": null}'
llama4_case llama4-noqkn '{"use_qk_norm": false}'
llama4_case llama4-notemp '{"attn_temperature_tuning": false}'
llama4_case llama4-slope '{"attn_scale": 2.0, "attn_temperature_tuning": 4}'
llama4_case llama4-floor '{"attn_scale": 2.0, "floor_scale": 16}'
llama4_case llama4-qknnull '{"use_qk_norm": null}'
for c in nochunk noqkn notemp slope floor qknnull; do
    fwd_start "$dir/llama4-$c"
done
declare -A l4got
for c in nochunk noqkn notemp slope floor qknnull; do
    changed_decode "$dir/llama4-$c" "llama4 $c" llama4 "unchanged:" && l4got[$c]=$got
done
[ -n "${l4got[floor]-}" ] && [ "${l4got[floor]}" != "${l4got[slope]-}" ] ||
    { echo "FAIL: llama4: floor_scale 16 decodes as the slope alone (the floor not read)"; fail=1; }
[ -n "${l4got[noqkn]-}" ] && [ "${l4got[noqkn]}" != "${l4got[notemp]-}" ] ||
    { echo "FAIL: llama4: the q/k norm off and the temperature off decode alike"; fail=1; }
# use_qk_norm null: no norm, as Llama4TextAttention tests the None (not the class default)
[ -n "${l4got[qknnull]-}" ] && [ "${l4got[qknnull]}" = "${l4got[noqkn]-}" ] ||
    { echo "FAIL: llama4: use_qk_norm null decodes otherwise than false"; fail=1; }
llama4_case llama4-moelayers '{"moe_layers": [0]}'
llama4_case llama4-types '{"layer_types": ["full_attention", "full_attention", "full_attention"]}'
llama4_case llama4-bias '{"attention_bias": true}'
refused llama4-moelayers 'moe_layers[0]: expected layer 1 (interleave_moe_layer_step 2'
refused llama4-types 'layer_types[0]: expected "chunked_attention"'
refused llama4-bias 'attention_bias: projection biases are not supported for Llama4ForCausalLM'

# LLaVA 1.5's own config.json (llava-1.5-7b-hf): its text_config gives the vocabulary, the
# norm's eps and little more, LlamaConfig's defaults the rest (7B's 32 layers of 4096); a
# text model other than Llama's, Mistral's or Qwen2's is refused at its model_type
mkdir -p "$dir/llava15"
cat >"$dir/llava15/config.json" <<'JSON'
{"architectures": ["LlavaForConditionalGeneration"], "image_token_index": 32000,
 "model_type": "llava", "pad_token_id": 32001, "projector_hidden_act": "gelu",
 "text_config": {"_name_or_path": "lmsys/vicuna-7b-v1.5", "architectures": ["LlamaForCausalLM"],
                 "max_position_embeddings": 4096, "model_type": "llama", "rms_norm_eps": 1e-05,
                 "torch_dtype": "float16", "vocab_size": 32064},
 "tie_word_embeddings": false, "torch_dtype": "float16",
 "vision_config": {"hidden_size": 1024, "model_type": "clip_vision_model"},
 "vision_feature_layer": -2, "vocab_size": 32064}
JSON
got=$("$helix" model info --config-only --json "$dir/llava15" 2>&1 |
      python3 -c "import json, sys; d = json.load(sys.stdin); m = d['model']; print(m['layers'], m['hidden'], m['q_heads'], m['kv_heads'], m['ffn'], m['vocab'])" 2>&1)
echo "llava-1.5-7b's config: $got"
[ "$got" = "32 4096 32 32 11008 32064" ] || { echo "FAIL: llava-1.5's text defaults"; fail=1; }
sed -i 's/"model_type": "llama"/"model_type": "gemma"/' "$dir/llava15/config.json"
"$helix" model info --config-only "$dir/llava15" >/dev/null 2>"$dir/err"
rc=$?
echo "llava, gemma text: exit $rc: $(cat "$dir/err")"
[ $rc = 2 ] && grep -q 'model_type: "gemma" is not read' "$dir/err" ||
    { echo "FAIL: a LLaVA text model other than Llama's, Mistral's, Qwen2's"; fail=1; }

# Qwen2.5-VL without rope_theta, rms_norm_eps and max_window_layers: its text config's
# defaults (1e6, 1e-5, 80), not Qwen2's, in helix and in the forward (other tokens than
# with the text model's 10000); as transformers v5 saves it (text_config's
# rope_parameters with the base and the sections, tie_word_embeddings at the top), and
# with "text_config": null beside the flat keys (and no tie_word_embeddings: false, the
# class default): the text model's tokens
python3 - "$dir/qwen2vl-old" "$dir/qwenvl-defaults" "$dir/qwen2vl-new" "$dir/qwenvl-v5" \
    "$dir/qwenvl-null" <<'PY' ||
import json, shutil, sys
old, dflt, new, v5, null = sys.argv[1:6]
shutil.copytree(old, null)
c = json.load(open(null + "/config.json"))
c["text_config"] = None
c.pop("tie_word_embeddings", None)
json.dump(c, open(null + "/config.json", "w"), indent=1)
shutil.copytree(old, dflt)
c = json.load(open(dflt + "/config.json"))
for k in ("rope_theta", "rms_norm_eps", "max_window_layers"):
    c.pop(k, None)
json.dump(c, open(dflt + "/config.json", "w"), indent=1)
shutil.copytree(new, v5)
c = json.load(open(v5 + "/config.json"))
t = c["text_config"]
t["rope_parameters"] = {"rope_type": "default", "rope_theta": t.pop("rope_theta"),
                        "mrope_section": t.pop("rope_scaling")["mrope_section"]}
c["tie_word_embeddings"] = t.pop("tie_word_embeddings")
json.dump(c, open(v5 + "/config.json", "w"), indent=1)
PY
    { echo "FAIL: the Qwen2.5-VL config variants"; fail=1; }
for v in qwenvl-defaults qwenvl-v5 qwenvl-null; do
    both_decode "$dir/$v" "$v" || continue
    echo "$v: transformers-style $want, helix $got (the text model: ${first[qwen2]-?})"
    if [ $v != qwenvl-defaults ]; then
        [ "$want" = "$got" ] && [ "$got" = "${first[qwen2]-x}" ] || { echo "FAIL: $v"; fail=1; }
    else
        [ "$want" = "$got" ] && [ "$got" != "${first[qwen2]-x}" ] || { echo "FAIL: $v"; fail=1; }
    fi
done

# transformers v5 writes rope_theta, partial_rotary_factor and the scaling into one
# rope_parameters object: the same checkpoints in that form decode the same tokens, in
# helix and in the forward (which reads v5's form on its own); so does a base alone (Llama
# 3's 500000, which must differ from the default 10000 it would fall back to if unread)
to_v5() { # CONFIG_JSON
    python3 - "$1" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
rp = {"rope_type": "default"}
rs = c.pop("rope_scaling", None)
if rs:
    rs = dict(rs)
    kind = rs.pop("type", None)
    rp["rope_type"] = rs.pop("rope_type", kind)
    rp.update(rs)
rp["rope_theta"] = c.pop("rope_theta", 10000.0)
if "partial_rotary_factor" in c:
    rp["partial_rotary_factor"] = c.pop("partial_rotary_factor")
c["rope_parameters"] = rp
json.dump(c, open(sys.argv[1], "w"), indent=2)
PY
}
cp -r "$dir/dense-f32" "$dir/theta"
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["rope_theta"] = 500000.0; json.dump(c, open(sys.argv[1], "w"))' "$dir/theta/config.json"
python3 "$fwd" "$dir/theta" "$dir/prompt" 6 >"$dir/py.json" &&
    ropetok[theta]=$(json_field "$dir/py.json" "[d['prefill_token']] + d['tokens']")
[ "${ropetok[theta]-x}" != "${first[dense]-x}" ] ||
    { echo "FAIL: theta 500000 decodes as 10000 in the forward"; fail=1; }
v5_cases="theta llama3 qwen-yarn longrope-long yarn dynamic-8"
for case in $v5_cases; do
    [ -d "$dir/$case" ] || continue
    cp -r "$dir/$case" "$dir/$case-v5"
    to_v5 "$dir/$case-v5/config.json" && fwd_start "$dir/$case-v5"
done
for case in $v5_cases; do
    [ -d "$dir/$case-v5" ] || continue
    both_decode "$dir/$case-v5" "$case in v5's form" || continue
    before=${ropetok[$case]-}
    [ $case = yarn ] && before=$(cat "$dir/yarn.tokens")
    echo "$case in rope_parameters: transformers-style $want, helix $got (older form $before)"
    [ "$want" = "$got" ] && [ "$got" = "$before" ] ||
        { echo "FAIL: $case: rope_parameters decodes otherwise"; fail=1; }
done

# the families' additions change what is decoded (same seed, same other weights); InternLM2
# holds the dense family's weights under its own names and layout, so it decodes as dense
for fam in qwen2 qwen3 glm; do
    [ "${first[$fam]-a}" != "${first[dense]-a}" ] ||
        { echo "FAIL: $fam decodes as dense: its additions did nothing"; fail=1; }
done
# GLM-4-0414 holds glm's weights plus its two output norms
[ "${first[glm4]-a}" != "${first[glm]-a}" ] ||
    { echo "FAIL: glm4 decodes as glm: its output norms did nothing"; fail=1; }
[ "${first[internlm2]-a}" = "${first[dense]-b}" ] ||
    { echo "FAIL: internlm2 decodes otherwise than the dense weights it holds"; fail=1; }
# GLM-4.5's multi-token-prediction layer (model.layers.2.*, read by neither the forward nor
# helix): left out, said once; model info's table says so
"$helix" decode --model "$dir/glm4-moe-bf16" --context 0 --steps 1 --prompt-ids "$dir/prompt" \
    >/dev/null 2>"$dir/err" &&
    [ "$(grep -c 'multi-token-prediction layers (num_nextn_predict_layers 1, model.layers.2.\* on where stored) are not read' "$dir/err")" = 1 ] ||
    { echo "FAIL: glm4-moe: the MTP layer not said once to be left out: $(cat "$dir/err")"; fail=1; }
"$helix" model info "$dir/glm4-moe-bf16" | grep -q '^  left out .*(model.layers.2.\* on, [0-9]* tensors: multi-token prediction' ||
    { echo "FAIL: glm4-moe: model info does not say the MTP layer is left out"; fail=1; }

# StarCoder2 (LayerNorms with biases, q, k, v and o biases, the plain GELU-tanh MLP with
# biases) at seed 4, where dropping the LayerNorms' mean or their biases changes the forward's
# tokens; then Starcoder2Config's window (every layer, as Mistral's) of 3, which must change
# them too, hidden_act silu, and use_bias false
for dt in f32 bf16; do
    "$helix" model synth --family starcoder2 --dtype $dt --seed 4 --out "$dir/starcoder2-$dt" \
        >/dev/null || { echo "FAIL: synth starcoder2 $dt"; fail=1; continue; }
    both_decode "$dir/starcoder2-$dt" "starcoder2 $dt" || continue
    echo "starcoder2 $dt: transformers-style $want, helix $got"
    [ "$want" = "$got" ] || { echo "FAIL: starcoder2 $dt: helix decodes other tokens than the HF forward"; fail=1; }
    [ $dt = f32 ] && first[starcoder2]=$want
done
for sc in 'starcoder2-win {"sliding_window": 3}' 'starcoder2-silu {"hidden_act": "silu"}'; do
    set -- $sc
    cp -r "$dir/starcoder2-f32" "$dir/$1"
    python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c.update(json.loads(sys.argv[2])); json.dump(c, open(sys.argv[1], "w"))' \
        "$dir/$1/config.json" "$2 $3" || fail=1
    changed_decode "$dir/$1" "$1" starcoder2 "without the key"
done
# use_bias false: no bias on q, k, v, o_proj nor the MLP (the LayerNorms keep theirs), the
# checkpoint without those tensors: the forward's tokens, other than with the biases, and
# exact under --check
cp -r "$dir/starcoder2-f32" "$dir/starcoder2-nobias"
python3 - "$dir/starcoder2-nobias" "$(dirname "$0")" <<'PY2' || fail=1
import glob, json, subprocess, sys
d, here = sys.argv[1], sys.argv[2]
sys.path.insert(0, here)
from st_edit import load
c = json.load(open(d + "/config.json"))
c["use_bias"] = False
json.dump(c, open(d + "/config.json", "w"))
names = [k for f in glob.glob(d + "/*.safetensors") for k in load(f)[1]
         if k.endswith(".bias") and "layernorm" not in k and k != "model.norm.bias"]
assert len(names) == 12, names  # 2 layers: q, k, v, o, c_fc, c_proj
subprocess.check_call([sys.executable, here + "/st_edit.py", d, "drop"] + names)
PY2
if changed_decode "$dir/starcoder2-nobias" "starcoder2 use_bias false" starcoder2 \
    "with the biases"; then
    "$helix" decode --model "$dir/starcoder2-nobias" --context 40 --steps 4 --check --json \
        >"$dir/scnb.json" 2>"$dir/err" ||
        { echo "FAIL: starcoder2 use_bias false under --check: $(cat "$dir/err")"; fail=1; }
fi

# 2. (sharded, above)
if [ "$part" = all ]; then
    sharded
    sharded_starcoder2
fi

# 3. a checkpoint equals the model file it was written from (phi3: a window of 7 positions
# on every layer, Phi-3's sliding_window, against a context of 300)
python3 - "$data/../../../data/models/tiny.json" "$dir" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for key, value, fam in (("qkv_bias", True, "qwen2"), ("qk_norm", True, "qwen3"),
                        ("sliding_window", 7, "phi3"), ("tie_embeddings", True, "dense")):
    d = dict(m, name="tiny-" + fam, weight_dtype="f32")
    d[key] = value
    json.dump(d, open("%s/tiny-%s.json" % (sys.argv[2], fam), "w"))
PY
# (dense: a tied head, written as tie_word_embeddings without lm_head.weight: the reader's
# head from the embedding tensor equals the model file's synthetic one)
for fam in qwen2 qwen3 phi3 dense; do
    "$helix" model synth --family $fam --model "$dir/tiny-$fam.json" --dtype f32 --seed 4 \
        --out "$dir/m-$fam" >/dev/null || { echo "FAIL: synth --model $fam"; fail=1; continue; }
    for m in "$dir/tiny-$fam.json" "$dir/m-$fam"; do
        "$helix" decode --model "$m" --seed 4 --context 300 --steps 6 --batch 2 --check --json \
            >"$dir/eq.$(basename "$m")" 2>"$dir/err" || { echo "FAIL: $m: $(cat "$dir/err")"; fail=1; }
    done
    a=$(json_field "$dir/eq.tiny-$fam.json" "d['tokens'], d['hidden_hash']")
    b=$(json_field "$dir/eq.m-$fam" "d['tokens'], d['hidden_hash']")
    echo "$fam: model file $a, checkpoint $b"
    [ "$a" = "$b" ] || { echo "FAIL: $fam: the checkpoint decodes otherwise than its model file"; fail=1; }
done
python3 - "$dir/m-dense" <<'PY' || { echo "FAIL: the tied checkpoint holds a head or says untied"; fail=1; }
import json, sys
c = json.load(open(sys.argv[1] + "/config.json"))
idx = json.load(open(sys.argv[1] + "/model.safetensors.index.json"))
sys.exit(0 if c["tie_word_embeddings"] is True and "lm_head.weight" not in idx["weight_map"] else 1)
PY
# the tied checkpoint with an lm_head.weight beside it (zeros, a shard of its own): the head
# is the embedding, as transformers ties them and vLLM skips the tensor; decodes as without
# it, with a warning (and model info says so)
cp -r "$dir/m-dense" "$dir/m-dense-head"
python3 - "$dir/m-dense-head" <<'PY' || { echo "FAIL: could not add lm_head.weight"; fail=1; }
import json, struct, sys
d = sys.argv[1]
c = json.load(open(d + "/config.json"))
V, H = c["vocab_size"], c["hidden_size"]
hdr = json.dumps({"lm_head.weight": {"dtype": "F32", "shape": [V, H],
                                     "data_offsets": [0, 4 * V * H]}}).encode()
hdr += b" " * (-len(hdr) % 8)
with open(d + "/model-head.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(hdr)) + hdr + bytes(4 * V * H))
idx = json.load(open(d + "/model.safetensors.index.json"))
idx["weight_map"]["lm_head.weight"] = "model-head.safetensors"
json.dump(idx, open(d + "/model.safetensors.index.json", "w"))
PY
"$helix" decode --model "$dir/m-dense" --context 30 --steps 3 --json >"$dir/tied.json" || fail=1
"$helix" decode --model "$dir/m-dense-head" --context 30 --steps 3 --json >"$dir/out" 2>"$dir/err"
rc=$?
echo "tied, with an lm_head.weight as well: exit $rc: $(cat "$dir/err")"
a=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['tokens'], d['hidden_hash'])" "$dir/tied.json")
b=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['tokens'], d['hidden_hash'])" "$dir/out" 2>/dev/null)
[ $rc -eq 0 ] && [ "$a" = "$b" ] && grep -q "lm_head.weight is not read: tie_word_embeddings is true" "$dir/err" ||
    { echo "FAIL: a tied checkpoint's extra lm_head.weight was not left unread with a warning ($a / $b)"; fail=1; }
"$helix" model info "$dir/m-dense-head" | grep -q "lm_head.weight: not read" ||
    { echo "FAIL: model info does not say the lm_head.weight is not read"; fail=1; }
# a tied DeepSeek config (whose reader takes lm_head.weight by name) is refused; a head at
# the top of a tied Gemma 3 multimodal checkpoint of the nested form (whose head would be
# language_model.lm_head.weight) is a tensor the model does not have, exit 2
cp -r "$dir/moe-mla-f32" "$dir/mla-tied"
sed -i 's/"tie_word_embeddings": false/"tie_word_embeddings": true/' "$dir/mla-tied/config.json"
cp -r "$dir/gemma3mm-old" "$dir/mm-head"
python3 "$(dirname "$0")/st_edit.py" "$dir/mm-head" rename language_model.lm_head.weight \
    lm_head.weight || fail=1
sed -i 's/"tie_word_embeddings": false/"tie_word_embeddings": true/' "$dir/mm-head/config.json"
# and the multimodal configs: mrope sections that miss the head's pairs, mrope on a text
# model, Mistral3 with another text model
cp -r "$dir/qwen2vl-old" "$dir/vl-sections"
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["rope_scaling"]["mrope_section"] = [1, 1, 1]; json.dump(c, open(sys.argv[1], "w"))' \
    "$dir/vl-sections/config.json"
cp -r "$dir/qwen2-f32" "$dir/qwen2-mrope"
python3 -c 'import json, sys; c = json.load(open(sys.argv[1])); c["rope_scaling"] = {"type": "mrope", "mrope_section": [4, 6, 6]}; json.dump(c, open(sys.argv[1], "w"))' \
    "$dir/qwen2-mrope/config.json"
cp -r "$dir/mistral3-old" "$dir/ministral3"
sed -i 's/"model_type": "mistral"/"model_type": "ministral3"/' "$dir/ministral3/config.json"
for bad in "mla-tied tie_word_embeddings: true is not read" \
    "mm-head tensor lm_head.weight is not part of" \
    "vl-sections mrope_section: sections of 3 pairs in all" \
    "qwen2-mrope \"mrope\" (Qwen2-VL's multimodal RoPE) is read for" \
    "ministral3 model_type: \"ministral3\" is not read"; do
    refused $bad
done
exit $fail
