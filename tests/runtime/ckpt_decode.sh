#!/usr/bin/env bash
# Decoding from a `helix model synth` checkpoint (helix decode --model DIR).
# usage: ckpt_decode.sh equal HELIX DATA          f32 and bf16 checkpoints of seed S decode
#                                                  bitwise as tiny (f32 / bf16 weights) --seed S,
#                                                  with --threads 2 as well (the checkpoint's
#                                                  column groups read on both threads)
#        ckpt_decode.sh check HELIX DATA HELIXRUN KVP TPA
#                                                  --check (with a prompt) over that layout;
#                                                  with N > 1 each rank reads less than the
#                                                  whole checkpoint
#        ckpt_decode.sh moe HELIX DATA [HELIXRUN] a moe-mla checkpoint decodes exactly (1 rank,
#                                                  and 2 ranks EP 2 with HELIXRUN), in bf16 and
#                                                  in fp8 with block scales
#        ckpt_decode.sh kvscales HELIX DATA HELIXRUN
#                                                  fp8 KV-cache scales from the checkpoint:
#                                                  --check over KVP 2 (dense, MLA), ignored
#                                                  with bf16 KV, bad scales refused
#        ckpt_decode.sh ctfp8 HELIX DATA HELIXRUN
#                                                  compressed-tensors fp8 weights decode as
#                                                  their bf16 copy made by fp8_to_bf16.py
#        ckpt_decode.sh fp8forms HELIX DATA HELIXRUN
#                                                  AutoFP8's (quant_method fp8) and ModelOpt's
#                                                  (config.json and hf_quant_config.json) fp8
#                                                  checkpoints with KV-cache scales decode as
#                                                  their bf16 copies and as compressed-tensors;
#                                                  block scales on qwen3 and qwen3-moe as their
#                                                  bf16 copies; bad inputs refused
#        ckpt_decode.sh unquant HELIX DATA HELIXRUN
#                                                  fp8 checkpoints whose ignore lists leave
#                                                  kinds of Linear layer in bf16 (attention,
#                                                  shared experts, experts' down_proj,
#                                                  MLA's kv_b_proj, fbgemm_fp8's first and
#                                                  last layers' FFN) decode as their whole
#                                                  bf16 copies; 1 rank and TPA 2
#        ckpt_decode.sh int HELIX DATA HELIXRUN   GPTQ, AWQ and compressed-tensors
#                                                  pack-quantized and int8 weights decode as
#                                                  the bf16 copies quantize_int.py makes of
#                                                  the same integers (1, 2 and 4 ranks; fused
#                                                  and expert layouts); bad inputs refused
#        ckpt_decode.sh packhint HELIX DATA       a 4-bit checkpoint held dequantized and
#                                                  refused for memory is told HELIX_W_PACKED=on
#                                                  exactly where its packed need fits
#                                                  (HELIX_MEM_LIMIT); no act-order warning
#                                                  before the load
#        ckpt_decode.sh mxfp4 HELIX DATA HELIXRUN gpt-oss's MXFP4 experts decode as the bf16
#                                                  copy mxfp4_experts.py makes of the same
#                                                  codes (1, 2 and 4 ranks) and as
#                                                  hf_forward.py; bad MXFP4 sets refused
#        ckpt_decode.sh f16 HELIX DATA HELIXRUN HF_FORWARD_PY
#                                                  a float16 checkpoint held in bf16 (the
#                                                  default) and in f32 (--weight-dtype f32):
#                                                  --check exact on 1 rank, KVP 2 and 2 x 2;
#                                                  in f32 the tokens of hf_forward.py; MLA
#                                                  and MoE on 1 rank; bf16 holding of f32
#                                                  weights checked; bad values
#                                                  and f32 holding of fp8 weights refused
#        ckpt_decode.sh refuse HELIX DATA HELIXRUN truncated, corrupt and mismatched
#                                                  checkpoints: exit 2 naming file and tensor,
#                                                  at most one line per rank
set -u
mode=$1 helix=$2 data=$3
shift 3
. "$(dirname "$0")/report.sh" # $dir (removed at exit), fail=0, json_field FILE EXPR

# expect_refused NAME WANT ARGS...: `helix decode ARGS` exits 2 saying WANT (WANT "": it
# runs, exit 0)
expect_refused() {
    local name=$1 want=$2 rc
    shift 2
    local err=$dir/refused.$name.err # its own: cases may run two at a time (int)
    "$helix" decode "$@" >/dev/null 2>"$err"
    rc=$?
    echo "$name: exit $rc: $(head -c 300 "$err")"
    if [ -z "$want" ]; then
        [ $rc -eq 0 ] || { echo "FAIL: $name was not read"; fail=1; }
    else
        [ $rc -eq 2 ] && grep -qF -- "$want" "$err" ||
            { echo "FAIL: expected exit 2 naming '$want'"; fail=1; }
    fi
}

# in_lanes FN ARG...: FN ARG for each ARG in background jobs, two at a time (bg_start: the
# cases are one process each, a core each), each job's lines printed in ARG order once it is
# done; fail=1 where FN set fail in any (FN must return, not exit, to leave its status)
in_lanes() {
    local fn=$1 a
    shift
    for a in "$@"; do bg_start "$dir/lane.$a" lane_run "$fn" "$a"; done
    for a in "$@"; do
        bg_wait "$dir/lane.$a" || fail=1
        cat "$dir/lane.$a" "$dir/lane.$a.err"
    done
}
lane_run() { fail=0; "$1" "$2" 2>&1; return $fail; }

case $mode in
equal)
    # --threads 2: the checkpoint's column groups read on both threads; the attention's
    # split changes the bits, so against the synthetic model on two threads as well
    for dt in f32 bf16; do
        "$helix" model synth --family dense --dtype $dt --seed 7 --out "$dir/$dt" >/dev/null || exit 1
        want=tiny
        [ $dt = bf16 ] && want=$data/tiny_bf16.json
        for t in 1 2; do
            "$helix" decode --model "$want" --seed 7 --context 300 --steps 12 --batch 2 \
                --threads $t --json >"$dir/a.json" || exit 1
            "$helix" decode --model "$dir/$dt" --context 300 --steps 12 --batch 2 \
                --threads $t --json >"$dir/b.json" || exit 1
            a=$(json_field "$dir/a.json" "d['tokens'], d['hidden_hash']")
            b=$(json_field "$dir/b.json" "d['tokens'], d['hidden_hash']")
            seed=$(json_field "$dir/b.json" "d['seed']")
            bytes=$(json_field "$dir/b.json" "d['ckpt_bytes_rank0'] == d['ckpt_bytes_total'] > 0")
            echo "$dt, --threads $t: tiny --seed 7: $a"
            echo "$dt, --threads $t: checkpoint:     $b (seed $seed from helix_synth_seed, whole read: $bytes)"
            if [ "$a" != "$b" ] || [ "$seed" != 7 ] || [ "$bytes" != True ]; then
                echo "FAIL: the $dt checkpoint (--threads $t) does not decode as the synthetic model"
                fail=1
            fi
        done
    done
    ;;
check)
    helixrun=$1 kvp=$2 tpa=$3
    n=$((kvp * tpa))
    "$helix" model synth --family dense --seed 5 --out "$dir/ck" >/dev/null || exit 1
    timeout -k 5 150 "$helixrun" --no-prefix -n $n --timeout 120 -- "$helix" decode \
        --model "$dir/ck" --kvp $kvp --tpa $tpa --batch 3 --context 45 --steps 10 \
        --kv-block 4 --prompt-ids "$data/prompt3.txt" --prefill-chunk 8 --check --json \
        --timeout 60 >"$dir/out" 2>"$dir/err"
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "FAIL: exit $rc"; cat "$dir/out" "$dir/err"; exit 1
    fi
    json_field "$dir/out" "'passed', d['passed'], 'max_rel_err', d['max_rel_err'], 'kv rows', d['kv_rows_checked'], 'bytes per rank', d['ckpt_bytes_per_rank_min'], '..', d['ckpt_bytes_per_rank_max'], 'of', d['ckpt_bytes_total']"
    ok=$(json_field "$dir/out" "d['passed'] and d['tokens_match'] and d['kv_rows_checked'] > 0 and 0 < d['ckpt_bytes_per_rank_min'] and (d['ckpt_bytes_per_rank_max'] < d['ckpt_bytes_total'] if d['ranks'] > 1 else d['ckpt_bytes_per_rank_max'] == d['ckpt_bytes_total'])")
    [ "$ok" = True ] || { echo "FAIL"; fail=1; }
    ;;
moe)
    # A DeepSeek-V3-layout checkpoint (MLA + MoE, sigmoid gating with groups) decodes
    # exactly, on one rank and, given helixrun, on 2 ranks with EP 2; so does a
    # DeepSeek-V2-Lite-layout one (q_proj, softmax greedy top-k, two shared experts); the
    # V3 one's fp8 form (block scales) too, dequantized to bf16 at load.
    for fam in moe-mla deepseek-v2; do
        "$helix" model synth --family $fam --seed 3 --out "$dir/moe" >/dev/null || exit 1
        "$helix" decode --model "$dir/moe" --context 40 --steps 3 --check >"$dir/out" 2>"$dir/err"
        rc=$?
        echo "$fam, one rank: exit $rc: $(tail -n 1 "$dir/out")"
        [ $rc -eq 0 ] && grep -q "check:   PASS" "$dir/out" ||
            { echo "FAIL: the $fam checkpoint did not decode exactly"; cat "$dir/err"; fail=1; }
        if [ $# -ge 1 ] && [ -x "$1" ]; then
            "$1" -n 2 -- "$helix" decode --model "$dir/moe" --kvp 2 --ep 2 --context 40 \
                --steps 3 --check >"$dir/out" 2>"$dir/err"
            rc=$?
            echo "$fam, kvp 2, ep 2: exit $rc: $(tail -n 1 "$dir/out")"
            [ $rc -eq 0 ] && grep -q "check:   PASS" "$dir/out" ||
                { echo "FAIL: the $fam checkpoint did not decode exactly on 2 ranks"; cat "$dir/err"; fail=1; }
        fi
    done
    "$helix" model synth --family moe-mla --dtype fp8 --seed 3 --out "$dir/moe8" >/dev/null || exit 1
    for t in 1 2; do # two threads: the block scales' dequantization on both
        "$helix" decode --model "$dir/moe8" --context 40 --steps 3 --threads $t --check \
            >"$dir/out" 2>"$dir/err"
        rc=$?
        echo "fp8, --threads $t: exit $rc: $(tail -n 1 "$dir/out")"
        [ $rc -eq 0 ] && grep -q "check:   PASS" "$dir/out" ||
            { echo "FAIL: the fp8 checkpoint did not decode exactly (--threads $t)"; cat "$dir/err"; fail=1; }
    done
    # fp8 weights without a checkpoint (a model file) have no values to dequantize: refused
    sed 's/"weight_dtype": *"f32"/"weight_dtype": "fp8"/' "$data/tiny-mla-moe.json" >"$dir/fp8.json"
    "$helix" decode --model "$dir/fp8.json" --context 20 --steps 2 >"$dir/out" 2>"$dir/err"
    rc=$?
    echo "fp8 model file: exit $rc: $(cat "$dir/err")"
    [ $rc -eq 2 ] && grep -q "weight_dtype" "$dir/err" ||
        { echo "FAIL: fp8 weights from a model file were not refused naming weight_dtype"; fail=1; }
    ;;
kvscales)
    # fp8 KV-cache scales (quantization_config.kv_cache_scheme, self_attn.k_scale/v_scale):
    # other scales on each layer, a prompt, KVP 2, HOP-B off and on; MLA's one scale; the
    # scales ignored with bf16 KV; bad scales refused naming the tensor.
    helixrun=$1
    "$helix" model synth --family dense --seed 5 --kv-scales 0.03,0.07,0.125,0.5 \
        --out "$dir/ck" >/dev/null || exit 1
    for hopb in off on; do
        timeout -k 5 150 "$helixrun" --no-prefix -n 2 --timeout 120 -- "$helix" decode \
            --model "$dir/ck" --kvp 2 --batch 3 --context 45 --steps 6 --kv-dtype fp8 \
            --hopb $hopb --prompt-ids "$data/prompt3.txt" --check --json --timeout 60 \
            >"$dir/out" 2>"$dir/err"
        rc=$?
        echo "dense, KVP 2, hopb $hopb: exit $rc"
        [ $rc -eq 0 ] || { echo "FAIL"; cat "$dir/out" "$dir/err"; exit 1; }
        json_field "$dir/out" "'passed', d['passed'], 'max_rel_err', d['max_rel_err'], 'kv_scales', d['kv_scales'], 'hash', d['hidden_hash']"
        ok=$(json_field "$dir/out" "d['passed'] and d['tokens_match'] and d['kv_rows_checked'] > 0 and d['kv_scales'] == 'checkpoint' and d['kv_dtype'] == 'fp8' and d['kv_elems_apart'] >= 0")
        [ "$ok" = True ] || { echo "FAIL: expected a passed check with the scales in use"; fail=1; }
        json_field "$dir/out" "d['hidden_hash']" >>"$dir/hashes"
    done
    [ "$(sort -u "$dir/hashes" | wc -l)" -eq 1 ] || { echo "FAIL: HOP-B changed the bits"; fail=1; }
    # scales per KV head (strategy attn_head): over TPA 2 each rank holds one KV head and
    # its own scales, over KVP 2 both; with a prompt
    "$helix" model synth --family dense --seed 5 --kv-scales 0.03,0.07,0.125,0.5 \
        --kv-scales-per-head --out "$dir/ckh" >/dev/null || exit 1
    for lt in "2 1" "1 2"; do
        set -- $lt
        timeout -k 5 150 "$helixrun" --no-prefix -n 2 --timeout 120 -- "$helix" decode \
            --model "$dir/ckh" --kvp $1 --tpa $2 --batch 3 --context 45 --steps 6 \
            --kv-dtype fp8 --prompt-ids "$data/prompt3.txt" --check --json --timeout 60 \
            >"$dir/out" 2>"$dir/err"
        rc=$?
        ok=$(json_field "$dir/out" "d['passed'] and d['tokens_match'] and d['kv_scales'] == 'checkpoint'" 2>/dev/null)
        echo "dense, scales per head, KVP $1 x TPA $2: exit $rc, $ok"
        [ $rc -eq 0 ] && [ "$ok" = True ] || { echo "FAIL"; cat "$dir/err"; fail=1; }
    done
    # the same checkpoint with bf16 KV: the scales are not used (and the check passes)
    "$helix" decode --model "$dir/ck" --context 30 --steps 3 --kv-dtype bf16 --check --json \
        >"$dir/out" 2>"$dir/err"
    ok=$(json_field "$dir/out" "d['passed'] and d['kv_scales'] == 'ignored'")
    echo "dense, bf16 KV: $ok"
    [ "$ok" = True ] || { echo "FAIL: bf16 KV should ignore the scales"; cat "$dir/err"; fail=1; }
    # MLA: one latent row, one scale (k_scale = v_scale), over KVP 2
    "$helix" model synth --family moe-mla --seed 3 --kv-scales 0.03,0.03,0.25,0.25 \
        --out "$dir/mla" >/dev/null || exit 1
    timeout -k 5 150 "$helixrun" --no-prefix -n 2 --timeout 120 -- "$helix" decode \
        --model "$dir/mla" --kvp 2 --batch 2 --context 40 --steps 3 --kv-dtype fp8 --check \
        --json --timeout 60 >"$dir/out" 2>"$dir/err"
    rc=$?
    ok=$(json_field "$dir/out" "d['passed'] and d['kv_scales'] == 'checkpoint'" 2>/dev/null)
    echo "moe-mla, KVP 2: exit $rc, $ok"
    [ $rc -eq 0 ] && [ "$ok" = True ] || { echo "FAIL"; cat "$dir/err"; fail=1; }
    # refused, exit 2, naming what is wrong: MLA with two different scales; a scale of 0,
    # -1, NaN or two values; the tensors without the config's kv_cache_scheme; a
    # per-head scheme
    "$helix" model synth --family moe-mla --seed 3 --kv-scales 0.03,0.05 --out "$dir/mla2" \
        >/dev/null || exit 1
    "$helix" decode --model "$dir/mla2" --context 20 --steps 2 --kv-dtype fp8 >/dev/null \
        2>"$dir/err"
    rc=$?
    echo "moe-mla, k_scale != v_scale: exit $rc: $(head -c 300 "$dir/err")"
    [ $rc -eq 2 ] && grep -q "differ" "$dir/err" || { echo "FAIL: not refused"; fail=1; }
    for bad in zero neg nan int scalar noscheme perhead channel; do
        cp -r "$dir/ck" "$dir/$bad"
        python3 - "$dir/$bad" $bad <<'PY'
import glob, json, struct, sys
d, bad = sys.argv[1], sys.argv[2]
if bad in ('noscheme', 'perhead', 'channel'):
    c = json.load(open(d + '/config.json'))
    if bad == 'noscheme':
        del c['quantization_config']
    else: # per head: the tensors hold one value, not one per KV head
        c['quantization_config']['kv_cache_scheme']['strategy'] = \
            'attn_head' if bad == 'perhead' else 'channel'
    json.dump(c, open(d + '/config.json', 'w'), indent=2)
    sys.exit(0)
for f in sorted(glob.glob(d + '/*.safetensors')):
    b = bytearray(open(f, 'rb').read())
    n = struct.unpack('<Q', b[:8])[0]
    h = json.loads(b[8:8 + n])
    t = h.get('model.layers.1.self_attn.v_scale')
    if t is None:
        continue
    at = 8 + n + t['data_offsets'][0]
    if bad in ('int', 'scalar'): # I32 for F32; shape [] (as torch saves a 0-d tensor)
        hs = b[8:8 + n].decode()
        i = hs.index('"model.layers.1.self_attn.v_scale"')
        a, z = ('"dtype":"F32"', '"dtype":"I32"') if bad == 'int' else ('"shape":[1]', '"shape":[] ')
        j = hs.index(a, i)
        hs = hs[:j] + z + hs[j + len(a):]
        b[8:8 + n] = hs.encode()
    else:
        b[at:at + 4] = struct.pack('<f', {'zero': 0.0, 'neg': -1.0, 'nan': float('nan')}[bad])
    open(f, 'wb').write(b)
PY
        case $bad in
        noscheme) want="no kv_cache_scheme" ;;
        perhead)  want="k_scale: shape [1], expected 2 values" ;;
        channel)  want='strategy: "tensor"' ;;
        int)      want="v_scale: dtype I32" ;;
        scalar)   want="" ;; # a 0-d scale is read as the [1] one is
        *)        want="model.layers.1.self_attn.v_scale" ;;
        esac
        expect_refused $bad "$want" --model "$dir/$bad" --context 20 --steps 2 --kv-dtype fp8
    done
    ;;
ctfp8)
    # compressed-tensors fp8 weights (llm-compressor's FP8 checkpoints): a scale per
    # channel or per tensor, dequantized at load; the same checkpoint dequantized by
    # fp8_to_bf16.py (its own e4m3 decoder) into a bf16 one decodes bit for bit the same,
    # for Llama's layout, Gemma 3, Qwen2's biases, the fused projections of Phi-3 and
    # InternLM2, and routed experts (Qwen3-MoE, Mixtral: their routers left unquantized),
    # on one rank and over TPA 2 (each rank reads its rows' scales); --check passes;
    # mis-shaped configs and a missing scale are refused
    helixrun=$1 conv="$(dirname "$0")/fp8_to_bf16.py"
    hash() { json_field "$1" "d['hidden_hash']"; }
    for fam in "dense channel" "dense tensor" "gemma3 channel" "qwen2 channel" "phi3 channel" \
        "internlm2 tensor" "qwen3-moe channel" "mixtral channel"; do
        set -- $fam
        "$helix" model synth --family $1 --dtype fp8 --fp8-scales $2 --seed 4 \
            --out "$dir/$1-$2" >/dev/null || exit 1
        python3 "$conv" "$dir/$1-$2" "$dir/$1-$2-bf16" || exit 1
        for m in "$dir/$1-$2" "$dir/$1-$2-bf16"; do
            "$helix" decode --model "$m" --context 60 --steps 4 --check --json \
                >"$dir/out.$(basename "$m")" 2>"$dir/err" ||
                { echo "FAIL: $m"; cat "$dir/err"; fail=1; }
        done
        a=$(hash "$dir/out.$1-$2") b=$(hash "$dir/out.$1-$2-bf16")
        ok=$(json_field "$dir/out.$1-$2" "d['passed']")
        echo "$1, fp8 scales per $2: hidden $a, its bf16 copy $b, check $ok"
        [ "$a" = "$b" ] && [ "$ok" = True ] || { echo "FAIL"; fail=1; }
    done
    # over TPA 2 each rank reads its rows' scales: also of the fused attention (Phi-3's
    # qkv_proj, InternLM2's wqkv grouped by KV head, quantized as every Linear)
    for c in dense-channel phi3-channel internlm2-tensor; do
        for m in $c $c-bf16; do
            timeout -k 5 150 "$helixrun" --no-prefix -n 2 --timeout 120 -- "$helix" decode \
                --model "$dir/$m" --tpa 2 --context 60 --steps 4 --batch 2 --check --json \
                --timeout 60 >"$dir/out.tpa.$m" 2>"$dir/err" || { cat "$dir/err"; fail=1; }
        done
        a=$(hash "$dir/out.tpa.$c") b=$(hash "$dir/out.tpa.$c-bf16")
        echo "$c, TPA 2: hidden $a, its bf16 copy $b"
        [ "$a" = "$b" ] || { echo "FAIL: $c over TPA 2 differs from the bf16 copy"; fail=1; }
    done
    python3 - "$dir/phi3-channel" <<'PY' || { echo "FAIL: Phi-3's attention is not stored in fp8"; fail=1; }
import glob, json, struct, sys
dt = {}
for f in glob.glob(sys.argv[1] + '/*.safetensors'):
    b = open(f, 'rb').read()
    dt.update({k: v['dtype'] for k, v in json.loads(b[8:8 + struct.unpack('<Q', b[:8])[0]]).items()
               if k != '__metadata__'})
sys.exit(0 if dt['model.layers.0.self_attn.qkv_proj.weight'] == 'F8_E4M3' and
         dt['model.layers.0.self_attn.o_proj.weight'] == 'F8_E4M3' else 1)
PY
    "$helix" model info "$dir/dense-channel" | grep -q "fp8 e4m3, a scale per channel" ||
        { echo "FAIL: model info does not name the scales"; fail=1; }
    # refused: two groups, a group strategy, an ignore list naming every down_proj where
    # the tensors are fp8 (the tensor named), one naming every Linear (a vision-tower
    # pattern with an alternation); a missing scale; read: an ignore list naming the head by
    # llm-compressor's pattern and a multimodal checkpoint's vision tower
    for bad in groups strategy ignore visall noscale vision; do
        cp -r "$dir/dense-channel" "$dir/$bad"
        python3 - "$dir/$bad" $bad <<'PY'
import json, sys
d, bad = sys.argv[1], sys.argv[2]
c = json.load(open(d + '/config.json'))
g = c['quantization_config']['config_groups']
if bad == 'groups':
    g['group_1'] = g['group_0']
elif bad == 'strategy':
    g['group_0']['weights']['strategy'] = 'group'
elif bad == 'ignore':
    c['quantization_config']['ignore'] = ['lm_head', 're:.*down_proj']
elif bad == 'visall':
    c['quantization_config']['ignore'] = ['lm_head', 're:visual.*|.*']
elif bad == 'vision':
    c['quantization_config']['ignore'] = ['re:.*lm_head', 're:vision_tower.*',
                                          're:multi_modal_projector.*', 're:visual.*',
                                          're:^model\\.visual\\..*']
json.dump(c, open(d + '/config.json', 'w'), indent=2)
PY
        [ $bad = noscale ] &&
            python3 "$(dirname "$0")/st_edit.py" "$dir/$bad" drop model.layers.1.mlp.up_proj.weight_scale
        case $bad in
        groups)   want="config_groups: expected one group" ;;
        strategy) want="config_groups: the group's weights must be 8-bit float" ;;
        ignore)   want='down_proj.weight: dtype F8_E4M3, expected BF16 (config.json: torch_dtype bfloat16, left unquantized by the quantization config' ;;
        visall)   want='ignore: leaves every Linear layer unquantized' ;;
        noscale)  want="up_proj.weight_scale" ;;
        vision)   want="" ;;
        esac
        expect_refused $bad "$want" --model "$dir/$bad" --context 20 --steps 2
    done
    ;;
fp8forms)
    # The per-tensor fp8 forms other than compressed-tensors: AutoFP8's (quant_method fp8
    # without weight_block_size, static input scales, kv_cache_scheme "static") and
    # ModelOpt's (quant_method modelopt, quant_algo FP8, kv_cache_quant_algo FP8; and the
    # same moved into hf_quant_config.json), one-value scales of shape [], KV-cache scales
    # named self_attn.k_proj.k_scale / v_proj.v_scale. Each decodes with fp8 KV as its bf16
    # copy (fp8_to_bf16.py: its own decoder, the KV scales renamed to compressed-tensors'
    # form) and as the compressed-tensors checkpoint of the same values, --check passing;
    # over 2 and 4 ranks too. Undeclared KV scales under fp8 and modelopt are used (as vLLM
    # does). Block scales (quant_method fp8 with weight_block_size) on Qwen3 and Qwen3-MoE,
    # also stored as BF16. Bad configs, tensors and scale values are refused.
    helixrun=$1 conv="$(dirname "$0")/fp8_to_bf16.py" edit="$(dirname "$0")/st_edit.py"
    run() { # run NAME MODEL ARGS...: decode with fp8 KV, check, hash into $dir/out.NAME
        local name=$1 m=$2
        shift 2
        "$helix" decode --model "$m" --kv-dtype fp8 --context 60 --steps 4 --batch 2 --check \
            --json "$@" >"$dir/out.$name" 2>"$dir/err" || { echo "FAIL: $name"; cat "$dir/err"; fail=1; }
        echo "$name: $(json_field "$dir/out.$name" "d['hidden_hash'], d['passed'], d['kv_scales']")"
    }
    same() { # same A B: the runs A and B decoded alike
        [ "$(json_field "$dir/out.$1" "d['hidden_hash'], d['passed'], d['kv_scales']")" = \
            "$(json_field "$dir/out.$2" "d['hidden_hash'], d['passed'], d['kv_scales']")" ] ||
            { echo "FAIL: $1 does not decode as $2"; fail=1; }
    }
    "$helix" model synth --family dense --dtype fp8 --fp8-scales tensor --kv-scales 0.5,0.25,2,1 \
        --seed 4 --out "$dir/ct" >/dev/null || exit 1
    run ct "$dir/ct"
    for f in fp8 modelopt; do
        "$helix" model synth --family dense --dtype fp8 --fp8-format $f --kv-scales 0.5,0.25,2,1 \
            --seed 4 --out "$dir/$f" >/dev/null || exit 1
    done
    cp -r "$dir/modelopt" "$dir/hfq"
    python3 - "$dir/hfq" <<'PY'
import json, sys
d = sys.argv[1]
c = json.load(open(d + '/config.json'))
q = c.pop('quantization_config')
json.dump(c, open(d + '/config.json', 'w'), indent=2)
json.dump({'producer': {'name': 'modelopt'},
           'quantization': {k: q[k] for k in ('quant_algo', 'kv_cache_quant_algo',
                                              'exclude_modules')}},
          open(d + '/hf_quant_config.json', 'w'), indent=2)
PY
    cp -r "$dir/fp8" "$dir/undecl"
    sed -i 's/"kv_cache_scheme": "static"/"kv_cache_scheme": null/' "$dir/undecl/config.json"
    cp -r "$dir/modelopt" "$dir/moundecl"
    sed -i 's/"kv_cache_quant_algo": "FP8"/"kv_cache_quant_algo": null/' "$dir/moundecl/config.json"
    for f in fp8 modelopt hfq undecl moundecl; do
        python3 "$conv" "$dir/$f" "$dir/$f-bf16" || exit 1
        run $f "$dir/$f"
        run $f-bf16 "$dir/$f-bf16"
        same $f ct
        same $f-bf16 ct
    done
    "$helix" model info "$dir/hfq" | grep -q "a scale per tensor; modelopt" ||
        { echo "FAIL: model info does not name ModelOpt's form"; fail=1; }
    "$helix" model info "$dir/fp8" | grep -q "self_attn.k_proj.k_scale and self_attn.v_proj.v_scale" ||
        { echo "FAIL: model info does not name the KV scales"; fail=1; }
    for m in fp8 hfq; do
        "$helix" model info "$dir/$m" --json >"$dir/info.json" || fail=1
        q=$(python3 -c "import json, sys; q = json.load(open(sys.argv[1]))['quantization']; print(q['weights']['form'], q['weights']['scales'], q['kv_cache_scales']['k'])" "$dir/info.json")
        echo "$m: model info --json quantization: $q"
        case $m in fp8) want="fp8 tensor self_attn.k_proj.k_scale" ;; hfq) want="modelopt tensor self_attn.k_proj.k_scale" ;; esac
        [ "$q" = "$want" ] || { echo "FAIL: $m: model info says $q, expected $want"; fail=1; }
    done
    # block scales on dense models (quant_method fp8 with weight_block_size, as Qwen3's and
    # Qwen3-MoE's FP8 releases; scales by block row and column): as their bf16 copies,
    # which fp8_to_bf16.py dequantizes block by block; the scales stored as BF16 (as some of
    # those releases do) decode alike
    for fam in qwen3 qwen3-moe; do
        "$helix" model synth --family $fam --dtype fp8 --fp8-format fp8-block \
            --kv-scales 0.5,0.25 --seed 4 --out "$dir/$fam-block" >/dev/null || exit 1
        python3 "$conv" "$dir/$fam-block" "$dir/$fam-block-bf16" || exit 1
        cp -r "$dir/$fam-block" "$dir/$fam-block-s16"
        python3 "$edit" "$dir/$fam-block-s16" cast _scale_inv BF16 || exit 1
        for m in $fam-block $fam-block-bf16 $fam-block-s16; do
            run $m "$dir/$m"
        done
        same $fam-block-bf16 $fam-block
        same $fam-block-s16 $fam-block
        # llm-compressor's FP8_BLOCK (compressed-tensors' block strategy, X.weight_scale per
        # block): the same values as the fp8 method's blocks
        "$helix" model synth --family $fam --dtype fp8 --fp8-format compressed-tensors-block \
            --kv-scales 0.5,0.25 --seed 4 --out "$dir/$fam-ctblock" >/dev/null || exit 1
        python3 "$conv" "$dir/$fam-ctblock" "$dir/$fam-ctblock-bf16" || exit 1
        for m in $fam-ctblock $fam-ctblock-bf16; do
            run $m "$dir/$m"
        done
        same $fam-ctblock $fam-block
        same $fam-ctblock-bf16 $fam-block
    done
    # over TPA 2 (each rank its rows' scales) and KVP 2 x TPA 2 (W_o and down over 4)
    for m in fp8 fp8-bf16 qwen3-block qwen3-block-bf16; do
        for n in 2 4; do
            timeout -k 5 150 "$helixrun" --no-prefix -n $n --timeout 120 -- "$helix" decode \
                --model "$dir/$m" --tpa 2 --kvp $((n / 2)) --kv-dtype fp8 --context 60 \
                --steps 4 --batch 2 --check --json --timeout 60 >"$dir/out.n$n.$m" \
                2>"$dir/err" || { cat "$dir/err"; fail=1; }
        done
    done
    for m in fp8 qwen3-block; do
        for n in 2 4; do
            a=$(json_field "$dir/out.n$n.$m" "d['hidden_hash'], d['passed']")
            b=$(json_field "$dir/out.n$n.$m-bf16" "d['hidden_hash'], d['passed']")
            echo "$m, $n ranks: $a, its bf16 copy $b"
            [ "$a" = "$b" ] || { echo "FAIL: $n ranks differ from the bf16 copy"; fail=1; }
        done
    done
    # refused, each naming what is wrong
    "$helix" model synth --family moe-mla --dtype fp8 --seed 4 --out "$dir/mla" >/dev/null || exit 1
    # fp8_refused BAD: $dir/BAD made from its source, refused naming what is wrong (or read);
    # its verdict in $fail (in_lanes: two cases at a time)
    fp8_refused() {
        local bad=$1 src want
        case $bad in
        ctb*) src=qwen3-ctblock ;;
        nvfp4 | noalgo | nested | int8kv | kvgone | noinput) src=modelopt ;;
        hqnvfp4 | hqbad) src=hfq ;;
        mlatensor) src=mla ;;
        negblock) src=qwen3-block ;;
        *) src=fp8 ;;
        esac
        cp -r "$dir/$src" "$dir/$bad"
        python3 - "$dir/$bad" $bad <<'PY'
import json, sys
d, bad = sys.argv[1], sys.argv[2]
c = json.load(open(d + '/config.json'))
q = c.get('quantization_config')
if bad == 'nvfp4':
    q['quant_algo'] = 'NVFP4'
elif bad == 'noalgo':
    del q['quant_algo']
elif bad == 'nested':  # vLLM reads the nested form whenever it is there
    q['quantization'] = {'quant_algo': 'NVFP4'}
elif bad == 'int8kv':
    q['kv_cache_quant_algo'] = 'INT8'
elif bad == 'ignored':
    q['ignored_layers'] = ['lm_head', 'model.layers.0.mlp.down_proj']
elif bad == 'scheme':
    q['activation_scheme'] = 'per-token'
elif bad == 'blockstatic':
    q['weight_block_size'] = [128, 128]
elif bad == 'method':
    q['quant_method'] = 'bitsandbytes'
elif bad == 'nokv0':  # undeclared, and layer 0 has none: layer 1's are unknown tensors
    q['kv_cache_scheme'] = None
elif bad == 'hqnvfp4':
    json.dump({'quantization': {'quant_algo': 'NVFP4'}}, open(d + '/hf_quant_config.json', 'w'))
elif bad == 'hqbad':
    open(d + '/hf_quant_config.json', 'w').write('{"quantization": [1, 2]}')
elif bad == 'mlatensor':  # no weight_block_size: a scale per tensor, which MLA does not take
    del q['weight_block_size']
elif bad == 'ctbstatic':
    q['config_groups']['group_0']['input_activations']['dynamic'] = False
elif bad == 'ctbshape':
    q['config_groups']['group_0']['weights']['block_structure'] = [32]
elif bad == 'ctbstr':  # compressed-tensors' first releases: "rowsxcols", read
    q['config_groups']['group_0']['weights']['block_structure'] = '32x32'
elif bad == 'ctbscale':  # another block size than the scales were written with
    q['config_groups']['group_0']['weights']['block_structure'] = [64, 64]
json.dump(c, open(d + '/config.json', 'w'), indent=2)
PY
        case $bad in
        noinput) python3 "$edit" "$dir/$bad" drop model.layers.1.mlp.up_proj.input_scale ;;
        kvgone) python3 "$edit" "$dir/$bad" drop model.layers.1.self_attn.v_proj.v_scale ;;
        nokv0) python3 "$edit" "$dir/$bad" drop model.layers.0.self_attn.k_proj.k_scale \
            model.layers.0.self_attn.v_proj.v_scale ;;
        nanscale) python3 "$edit" "$dir/$bad" set model.layers.0.self_attn.q_proj.weight_scale nan ;;
        negblock) python3 "$edit" "$dir/$bad" set model.layers.1.mlp.down_proj.weight_scale_inv -1 ;;
        esac
        case $bad in
        nvfp4)       want='config.json:22:5: quant_algo: only "FP8"' ;;
        noalgo)      want='quant_algo: required key is missing' ;;
        nested)      want='config.json:31:7: quant_algo: only "FP8"' ;;
        int8kv)      want='kv_cache_quant_algo: only "FP8"' ;;
        ignored)     want='tensor model.layers.0.mlp.down_proj.weight: dtype F8_E4M3, expected BF16 (config.json: torch_dtype bfloat16, left unquantized by the quantization config' ;;
        scheme)      want='activation_scheme: expected "dynamic" or "static"' ;;
        ctbstatic)   want='block-scaled weights take dynamic input activations' ;;
        ctbshape)    want="the block strategy's block_structure must be [rows, cols]" ;;
        ctbscale)    want='q_proj.weight_scale: shape [8, 8], expected [4, 4]' ;;
        ctbstr)      want='' ;;
        blockstatic) want='block-scaled weights (weight_block_size) take dynamic activations' ;;
        method)      want='quant_method: supported: "compressed-tensors"' ;;
        noinput)     want='tensor model.layers.1.mlp.up_proj.input_scale is missing' ;;
        kvgone)      want='tensor model.layers.1.self_attn.v_proj.v_scale is missing' ;;
        nokv0)       want='model.layers.1.self_attn.k_proj.k_scale is not part of a LlamaForCausalLM of this config.json (a KV-cache scale, where layer 0 has none)' ;;
        hqnvfp4)     want='hf_quant_config.json:1:19: quant_algo: only "FP8"' ;;
        hqbad)       want='hf_quant_config.json:1:2: quantization: expected an object' ;;
        mlatensor)   want="takes DeepSeek's fp8 block scales" ;;
        nanscale)    want='q_proj.weight_scale: nan is not a weight scale' ;;
        negblock)    want='down_proj.weight_scale_inv: value 0 is -1, not a weight scale' ;;
        esac
        expect_refused $bad "$want" --model "$dir/$bad" --kv-dtype fp8 --context 20 --steps 2
    }
    in_lanes fp8_refused nvfp4 noalgo nested int8kv ignored scheme blockstatic method noinput \
        kvgone nokv0 hqnvfp4 hqbad mlatensor nanscale negblock ctbstatic ctbshape ctbscale ctbstr
    ;;
unquant)
    # Ignore lists that leave kinds of Linear layer unquantized (docs/model.md "Ignore
    # lists"): an fp8 checkpoint of which fp8_to_bf16.py --only dequantizes the modules an
    # ignore list names (its own e4m3 decoder, the rest kept fp8 with their scales) decodes
    # bit for bit as the whole bf16 copy, --check passing: Llama 4 with llm-compressor's
    # list (attention, the shared expert, routers, vision tower, a class name), Llama's
    # layout with the fp8 method's per-layer names, Qwen3-MoE with ModelOpt's wildcards
    # (every expert's down_proj), DeepSeek's MLA with block scales (kv_b_proj and the shared
    # experts' down_proj by expressions); TPA 2 on the first; model info names the kinds
    helixrun=$1 conv="$(dirname "$0")/fp8_to_bf16.py"
    hash() { json_field "$1" "d['hidden_hash']"; }
    # case NAME FAMILY SYNTH-ARGS ONLY-REGEX KEY ENTRY...: the checkpoint, its bf16 copy,
    # its partial copy with KEY (ignore, ignored_layers, exclude_modules) holding ENTRY...
    unq_case() {
        local name=$1 fam=$2 args=$3 only=$4 key=$5
        shift 5
        "$helix" model synth --family $fam --dtype fp8 $args --seed 4 --out "$dir/$name" \
            >/dev/null || { echo "FAIL: synth $name"; fail=1; return; }
        python3 "$conv" "$dir/$name" "$dir/$name-bf16" &&
            python3 "$conv" "$dir/$name" "$dir/$name-mix" --only "$only" ||
            { echo "FAIL: fp8_to_bf16.py $name"; fail=1; return; }
        python3 - "$dir/$name-mix" "$key" "$@" <<'PY'
import json, os, sys
d, key, entries = sys.argv[1], sys.argv[2], sys.argv[3:]
c = json.load(open(d + '/config.json'))
q = c.get('quantization_config')
q = q.get('quantization', q)
q[key] = (q.get(key) or ['lm_head']) + entries
json.dump(c, open(d + '/config.json', 'w'), indent=2)
PY
        for m in $name $name-bf16 $name-mix; do
            "$helix" decode --model "$dir/$m" --context 60 --steps 4 --check --json \
                >"$dir/out.$m" 2>"$dir/err.$m" || { echo "FAIL: $m"; cat "$dir/err.$m"; fail=1; }
        done
        local a b c ok
        a=$(hash "$dir/out.$name") b=$(hash "$dir/out.$name-bf16") c=$(hash "$dir/out.$name-mix")
        ok=$(json_field "$dir/out.$name-mix" "d['passed']")
        echo "$name: fp8 $a, bf16 $b, partly bf16 $c, check $ok"
        [ "$a" = "$b" ] && [ "$b" = "$c" ] && [ "$ok" = True ] ||
            { echo "FAIL: $name's partly bf16 copy decodes otherwise"; fail=1; }
        "$helix" model info "$dir/$name-mix" | grep "left unquantized"
    }
    unq_case l4 llama4 "--fp8-scales channel" '.*(self_attn|shared_expert)' ignore \
        're:.*lm_head' 're:.*self_attn' 're:.*router' 're:vision_model.*' \
        're:multi_modal_projector.*' 're:.*shared_expert.*' Llama4TextAttention
    "$helix" model info "$dir/l4-mix" | grep -qF "left unquantized by the ignore list (stored bfloat16): self_attn.q_proj, self_attn.k_proj, self_attn.v_proj, self_attn.o_proj, feed_forward.shared_expert.gate_proj, feed_forward.shared_expert.up_proj, feed_forward.shared_expert.down_proj" ||
        { echo "FAIL: model info does not name the kinds read unquantized"; fail=1; }
    unq_case dn dense "--fp8-format fp8" 'model\.layers\.\d+\.mlp\.(gate|up)_proj$' \
        ignored_layers model.layers.0.mlp.gate_proj model.layers.1.mlp.gate_proj \
        model.layers.0.mlp.up_proj model.layers.1.mlp.up_proj
    unq_case moe qwen3-moe "--fp8-format modelopt" '.*experts\.\d+\.down_proj$' \
        exclude_modules '*.experts.*.down_proj'
    unq_case mla moe-mla "" '.*(kv_b_proj|shared_experts\.down_proj)$' ignored_layers \
        're:.*kv_b_proj' 're:.*shared_experts.down_proj'
    # fbgemm_fp8 (Meta's form) with the Llama 3 paper's recipe: attention everywhere and the
    # first and last layers' FFN unquantized, named as transformers matches them (a parent
    # module names its Linears)
    unq_case fb dense "--fp8-format fbgemm_fp8 --layers 4" \
        '.*self_attn.*|model\.layers\.(0|3)\.mlp\..*' modules_to_not_convert \
        $(for l in 0 1 2 3; do for p in q k v o; do echo model.layers.$l.self_attn.${p}_proj; done; done) \
        model.layers.0.mlp model.layers.3.mlp
    "$helix" model info "$dir/fb-mix" | grep -qF "mlp.gate_proj (layers 0 3), mlp.up_proj (layers 0 3), mlp.down_proj (layers 0 3)" ||
        { echo "FAIL: model info does not name the layers read unquantized"; fail=1; }
    # Llama 4 in fbgemm_fp8 with its experts fused as transformers' FbgemmFp8Llama4TextExperts
    # holds them (multimodal.py llama4-text: gate_up_proj [E, H, 2I] with gate_up_proj_scale
    # [E, 1, 2I], down_proj [E, I, H] with down_proj_scale [E, H, 1]), attention and shared
    # expert unquantized by expressions: as the per-expert checkpoint
    unq_case l4fb llama4 "--fp8-format fbgemm_fp8" '.*(self_attn|shared_expert)\.' \
        modules_to_not_convert 'model\.layers\.\d+\.self_attn' \
        'model.layers.\d+.feed_forward.shared_expert'
    python3 "$(dirname "$0")/multimodal.py" "$dir/l4fb-mix" "$dir/l4fb-fused" llama4-text new ||
        { echo "FAIL: multimodal.py could not fuse the fp8 experts"; fail=1; }
    "$helix" decode --model "$dir/l4fb-fused" --context 60 --steps 4 --check --json \
        >"$dir/out.l4fb-fused" 2>"$dir/err" || { cat "$dir/err"; fail=1; }
    a=$(hash "$dir/out.l4fb") b=$(hash "$dir/out.l4fb-fused")
    echo "l4fb, experts fused in fp8: $b (per expert $a)"
    [ "$a" = "$b" ] || { echo "FAIL: the fused fp8 experts decode otherwise"; fail=1; }
    for m in l4 l4-mix fb fb-mix l4fb l4fb-fused; do
        timeout -k 5 150 "$helixrun" --no-prefix -n 2 --timeout 120 -- "$helix" decode \
            --model "$dir/$m" --tpa 2 --context 60 --steps 4 --batch 2 --check --json \
            --timeout 60 >"$dir/out.tpa.$m" 2>"$dir/err" || { cat "$dir/err"; fail=1; }
    done
    for m in l4 fb l4fb; do
        b=-mix; [ $m = l4fb ] && b=-fused
        a=$(hash "$dir/out.tpa.$m") b=$(hash "$dir/out.tpa.$m$b")
        echo "$m, TPA 2: fp8 $a, partly bf16 (or fused) $b"
        [ "$a" = "$b" ] || { echo "FAIL: $m over TPA 2 differs from the fp8 checkpoint"; fail=1; }
    done
    # the fused experts over EP 2 (each rank its experts' views and scales)
    for m in l4fb l4fb-fused; do
        timeout -k 5 150 "$helixrun" --no-prefix -n 2 --timeout 120 -- "$helix" decode \
            --model "$dir/$m" --kvp 2 --ep 2 --context 60 --steps 4 --batch 2 --check --json \
            --timeout 60 >"$dir/out.ep.$m" 2>"$dir/err" || { cat "$dir/err"; fail=1; }
    done
    a=$(hash "$dir/out.ep.l4fb") b=$(hash "$dir/out.ep.l4fb-fused")
    echo "l4fb, KVP 2 x EP 2: per expert $a, fused $b"
    [ "$a" = "$b" ] || { echo "FAIL: the fused fp8 experts over EP 2 differ"; fail=1; }
    # refused: fused fp8 experts without their scales, or scales of another shape
    edit="$(dirname "$0")/st_edit.py"
    cp -r "$dir/l4fb-fused" "$dir/l4fb-nosc"
    python3 "$edit" "$dir/l4fb-nosc" drop model.layers.1.feed_forward.experts.down_proj_scale
    expect_refused nosc "tensor model.layers.1.feed_forward.experts.down_proj_scale is missing (the fused experts model.layers.1.feed_forward.experts.0.down_proj.weight_scale reads, [8, 1, 256] or its [experts, out, 1])" \
        --model "$dir/l4fb-nosc" --context 20 --steps 2
    # a NaN scale named in the stored tensor, at its index (expert 1's up rows: 128 + 64 on)
    cp -r "$dir/l4fb-fused" "$dir/l4fb-nan"
    python3 "$edit" "$dir/l4fb-nan" setf16 model.layers.1.feed_forward.experts.gate_up_proj_scale 200 nan
    expect_refused nan "tensor model.layers.1.feed_forward.experts.gate_up_proj_scale: value 200 is nan, not a weight scale (a finite value >= 0), read as model.layers.1.feed_forward.experts.1.up_proj.weight_scale" \
        --model "$dir/l4fb-nan" --context 20 --steps 2
    ;;
int)
    # Integer weights (docs/model.md "Integer weights"): each form quantized by
    # quantize_int.py on its own (its packing written from each format's definition) decodes
    # to the same hidden state as the bf16 copy it dequantizes from the same integers, with
    # --check passing (the reference sees the weights as the runtime holds them); older
    # exports' quantize_config.json and quant_config.json read in place of quantization_config
    helixrun=$1 quant="$(dirname "$0")/quantize_int.py" edit="$(dirname "$0")/st_edit.py"
    # the packed forms are held packed whatever this CPU's variant (its default, auto, keeps
    # them so only where the variant multiplies them in registers: checked below)
    export HELIX_W_PACKED=on
    hash() { json_field "$1" "d['hidden_hash']"; }
    # q_bg NAME SRC ARGS...: quantize_int.py SRC ARGS into $dir/NAME in the background
    # (bg_start: two at a time; each takes seconds); q_get NAME: waits for it, its output
    # shown when it failed; its exit status
    q_bg() {
        bg_start "$dir/$1.q" python3 "$quant" "$2" "$dir/$1" "${@:3}"
    }
    q_get() {
        bg_wait "$dir/$1.q" || { cat "$dir/$1.q" "$dir/$1.q.err"; return 1; }
    }
    # same NAME OUT OUT.ref: the two runs' hidden hashes equal, both checks passed
    same() {
        local a b
        a=$(hash "$2") b=$(hash "$3")
        echo "$1: hidden $a, its bf16 copy $b, check $(json_field "$2" "d['passed']")"
        [ -n "$a" ] && [ "$a" = "$b" ] && [ "$(json_field "$2" "d['passed']")" = True ] &&
            [ "$(json_field "$3" "d['passed']")" = True ] || { echo "FAIL: $1"; fail=1; }
    }
    decode1() { # decode1 DIR OUT (its log, at INFO, in OUT.err)
        HELIX_DEBUG=INFO HELIX_DEBUG_SUBSYS=CORE "$helix" decode --model "$1" --context 60 \
            --steps 4 --check --json >"$2" 2>"$2.err" ||
            { echo "FAIL: $1"; cat "$2.err"; fail=1; }
    }
    # counted NAME ERR RANKS: every rank's projections kept packed take no more bytes than
    # the start-up memory check counted for them, and it counted less than 1% more (each
    # matrix in the form the load holds it: fused act-order parts whose groups differ in
    # bf16, skipped modules plain, a row-parallel rank's act-order groups, the experts')
    counted() {
        python3 - "$1" "$2" "$3" <<'PY' || fail=1
import re, sys
name, err, ranks = sys.argv[1], open(sys.argv[2]).read(), int(sys.argv[3])
got = re.findall(r'the projections take (\d+) bytes \((\d+) of them packed\), the start-up '
                 r'memory check counted (\d+)', err)
for held, packed, est in got:
    print(f"{name}: projections {held} bytes held ({packed} matrices packed), "
          f"{est} counted ({int(est) / int(held):.4f}x)")
assert len(got) == ranks, f"FAIL: {name}: {len(got)} ranks said what they hold, not {ranks}"
assert all(int(h) <= int(e) for h, _, e in got), \
    f"FAIL: {name}: the memory check counted fewer projection bytes than a rank holds"
assert all(int(e) <= 1.01 * int(h) for h, _, e in got), \
    f"FAIL: {name}: the memory check counted over 1% more projection bytes than a rank holds"
PY
    }
    for fam in dense phi3 internlm2 qwen3-moe mixtral moe-mla; do
        "$helix" model synth --family $fam --seed 6 --out "$dir/b-$fam" >/dev/null || exit 1
    done
    forms=("dense gptq --bits 4 --group 32 --act-order"
        "dense gptq_v2 --bits 8 --group -1 --sym" "dense awq --group 64" "dense awq --group -1"
        "dense ct --bits 4 --group 64 --sym" "dense ct --bits 8 --group 128 --act-order"
        "dense ct --bits 4 --group -1 --scale-dtype F32"
        "dense gptq --group 64 --no-gidx --scale-dtype BF16 --skip down_proj"
        "phi3 gptq --group 64" "internlm2 awq --group 32" "qwen3-moe ct --group 32"
        "mixtral gptq --bits 8 --group 64 --act-order" "moe-mla gptq --group 32"
        "qwen3-moe gptq --group 32 --act-order --skip experts.1."
        "moe-mla gptq --group 32 --act-order --skip shared_experts.down"
        "dense int8 --group -1"
        "dense int8 --group 0 --a8 static --scale-dtype F32" "mixtral int8 --group -1"
        "dense gptq --bits 3 --group 32" "dense gptq --bits 2 --group 64 --act-order"
        "dense gptq_v2 --bits 3 --group -1 --sym" "dense gptq_v2 --bits 2 --group 128 --no-gidx")
    # q_form FORM: its quantization started in the background, as $dir/NAME (the form's
    # letters and digits)
    q_form() {
        local name
        name=$(echo "$1" | tr -c 'a-z0-9\n' '_')
        set -- $1
        q_bg "$name" "$dir/b-$1" --format "$2" "${@:3}"
    }
    q_form "${forms[0]}"
    for i in "${!forms[@]}"; do
        form=${forms[$i]}
        # the next form quantized while this one decodes
        [ $((i + 1)) -lt ${#forms[@]} ] && q_form "${forms[$((i + 1))]}"
        set -- $form
        fam=$1 fmt=$2 name=$(echo "$form" | tr -c 'a-z0-9\n' '_')
        shift 2
        q_get "$name" || exit 1
        # the bf16 copy decoded beside the packed form (one process each, a core each)
        ( fail=0; decode1 "$dir/$name.ref" "$dir/out.b"; exit $fail ) &
        ref_pid=$!
        decode1 "$dir/$name" "$dir/out.a"
        wait $ref_pid || fail=1
        same "$fam, $fmt $*" "$dir/out.a" "$dir/out.b"
        # kept packed (HELIX_W_PACKED, docs/kernels.md "Packed integer weights"), act
        # order's permuted groups included; int8 (I8 with a scale, not packed words) and
        # GPTQ's 2 and 3 bits dequantized at load
        case "$fmt $*" in
        int8*) want="strips False" ;;
        *--bits\ [23]*) want="strips False" ;;
        *) want="packed True" ;;
        esac
        got=$(json_field "$dir/out.a" "d['w_layout'], d['w_packed'] > 0")
        [ -z "$want" ] || [ "$got" = "$want" ] ||
            { echo "FAIL: $fam, $fmt $*: weights held as '$got', expected '$want'"; fail=1; }
        # the start-up memory check counts the projections' bytes the rank holds (act
        # order here gives gate and up different groups: held in bf16, q, k and v the same:
        # packed); dequantized at load, its weights at least those bytes
        case "$want" in
        packed*) counted "$fam, $fmt $*" "$dir/out.a.err" 1
            # MoE: moe_bytes_per_rank as loaded, below its bf16 copy's
            case $fam in qwen3-moe|mixtral|moe-mla)
                a=$(json_field "$dir/out.a" "d['moe_bytes_per_rank']")
                b=$(json_field "$dir/out.b" "d['moe_bytes_per_rank']")
                [ -n "$a" ] && [ -n "$b" ] && [ "$a" -gt 0 ] && [ "$a" -lt "$b" ] ||
                    { echo "FAIL: $fam, $fmt $*: moe_bytes_per_rank $a packed, $b bf16"; fail=1; } ;;
            esac ;;
        *) got=$(json_field "$dir/out.a" "d['weight_bytes_per_rank_max'] >= d['w_proj_bytes_rank']")
            [ "$got" = True ] || { echo "FAIL: $fam, $fmt $*: the memory check counted" \
                "fewer weight bytes than the rank holds"; fail=1; } ;;
        esac
    done
    # HELIX_W_PACKED=0: dequantized at load, the same bits at more than twice the bytes (4
    # bits in groups of 32: the codes, and a zero point and a scale of f32 per group and
    # column)
    python3 "$quant" "$dir/b-dense" "$dir/g4" --format gptq --group 32 || exit 1
    decode1 "$dir/g4" "$dir/out.a"
    HELIX_W_PACKED=0 decode1 "$dir/g4" "$dir/out.b"
    same "HELIX_W_PACKED=0" "$dir/out.a" "$dir/out.b"
    python3 - "$dir/out.a" "$dir/out.b" <<'PY' || fail=1
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
print(f"projections: {a['w_proj_bytes_rank']} bytes packed ({a['w_layout']}, {a['w_packed']}), "
      f"{b['w_proj_bytes_rank']} dequantized ({b['w_layout']})")
assert a['w_layout'] == 'packed' and b['w_layout'] != 'packed' and b['w_packed'] == 0
assert a['w_proj_bytes_rank'] < 0.5 * b['w_proj_bytes_rank'], 'packed weights not smaller'
PY
    # HELIX_W_PACKED=auto: dequantized at load by avx2 (its packed GEMM goes through
    # scratch), packed by avx512 (in registers) where this CPU runs it; the same bits as
    # the variant's own decode of them dequantized (variants sum in orders of their own)
    for kv in avx2 avx512; do
        "$helix" info 2>/dev/null | grep -q "^  $kv  *usable" || continue
        want=strips; [ $kv = avx2 ] || want=packed
        HELIX_W_PACKED=auto HELIX_KERNELS=$kv decode1 "$dir/g4" "$dir/out.c"
        HELIX_W_PACKED=0 HELIX_KERNELS=$kv decode1 "$dir/g4" "$dir/out.d"
        same "HELIX_W_PACKED=auto, $kv" "$dir/out.c" "$dir/out.d"
        got=$(json_field "$dir/out.c" "d['w_layout']")
        [ "$got" = $want ] ||
            { echo "FAIL: HELIX_W_PACKED=auto, $kv: weights held as '$got', expected '$want'"; fail=1; }
        HELIX_W_PACKED=auto HELIX_KERNELS=$kv "$helix" model info --json "$dir/g4" >"$dir/info" 2>&1 ||
            { cat "$dir/info"; fail=1; }
        got=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['quantization']['weights']['cpu'])" "$dir/info")
        [ "$got" = "$( [ $want = packed ] && echo packed || echo dequantized)" ] ||
            { echo "FAIL: HELIX_W_PACKED=auto, $kv: model info says '$got'"; fail=1; }
    done
    # over ranks: AWQ over TPA 2 (each rank its rows of the packed words), GPTQ in act
    # order over TPA 2 (each rank the groups its rows use), compressed-tensors' experts
    # over KVP 2 x TPA 2, GPTQ's experts in act order over TPA 2 (each rank its columns of
    # each expert, its down projection's rows keeping every group); on each rank the
    # memory check counts what it holds
    q_bg awq "$dir/b-dense" --format awq --group 64
    q_bg gao "$dir/b-dense" --format gptq --group 16 --act-order
    q_bg ctm "$dir/b-qwen3-moe" --format ct --bits 8 --group 32
    q_bg mao "$dir/b-qwen3-moe" --format gptq --group 16 --act-order
    # and those the sections after this one read
    q_bg sgptq "$dir/b-dense" --format gptq --group 32 --act-order
    q_bg gptqao "$dir/b-dense" --format gptq --group 64 --act-order
    q_bg ctao "$dir/b-dense" --format ct --group 64 --act-order
    q_bg gptq "$dir/b-dense" --format gptq --group 64
    q_bg i8 "$dir/b-dense" --format int8 --group -1
    q_bg g3 "$dir/b-dense" --format gptq --bits 3 --group 32
    for q in awq gao ctm mao; do q_get $q || exit 1; done
    for l in "awq 2 1 2" "gao 2 1 2" "ctm 4 2 2" "mao 2 1 2"; do
        set -- $l
        for m in "$1" "$1.ref"; do
            HELIX_DEBUG=INFO HELIX_DEBUG_SUBSYS=CORE timeout -k 5 200 "$helixrun" --no-prefix \
                --no-collapse -n $2 --timeout 180 -- "$helix" decode --model "$dir/$m" --kvp $3 --tpa $4 \
                --context 60 --steps 4 --batch 2 --check --json --timeout 60 \
                >"$dir/out.$m" 2>"$dir/err.$m" || { cat "$dir/err.$m"; fail=1; }
        done
        same "$1 over KVP $3 x TPA $4" "$dir/out.$1" "$dir/out.$1.ref"
        counted "$1 over KVP $3 x TPA $4" "$dir/err.$1" $2
    done
    # older exports: AutoGPTQ's quantize_config.json (no quant_method: its keys say GPTQ)
    # and AutoAWQ's quant_config.json (w_bit, q_group_size, version GEMM) beside a
    # config.json without quantization_config decode as the same checkpoint with it
    q_get sgptq || exit 1
    cp -r "$dir/awq" "$dir/sawq"
    python3 - "$dir/sgptq" "$dir/sawq" <<'PY' || exit 1
import json, sys
for d, name in ((sys.argv[1], 'quantize_config.json'), (sys.argv[2], 'quant_config.json')):
    c = json.load(open(d + '/config.json'))
    q = c.pop('quantization_config')
    if name == 'quant_config.json':  # AutoAWQ's own keys
        side = {'zero_point': True, 'q_group_size': q['group_size'], 'w_bit': q['bits'],
                'version': 'GEMM'}
    else:
        side = {k: q[k] for k in ('bits', 'group_size', 'desc_act')}
        side.update(sym=False, true_sequential=True, damp_percent=0.01,
                    model_file_base_name='model')
    json.dump(c, open(d + '/config.json', 'w'), indent=2)
    json.dump(side, open(d + '/' + name, 'w'), indent=2)
PY
    for m in sgptq sgptq.ref sawq; do decode1 "$dir/$m" "$dir/out.$m"; done
    same "gptq from quantize_config.json" "$dir/out.sgptq" "$dir/out.sgptq.ref"
    decode1 "$dir/awq" "$dir/out.awq1"
    same "awq from quant_config.json" "$dir/out.sawq" "$dir/out.awq1"
    "$helix" model info --json "$dir/sgptq" >"$dir/info" 2>&1 || { cat "$dir/info"; fail=1; }
    q=$(python3 -c "import json,sys; w=json.load(open(sys.argv[1]))['quantization']['weights']; print(w['form'], w['group'], w.get('config_file'))" "$dir/info")
    echo "model info of the sidecar: $q"
    [ "$q" = "gptq 32 quantize_config.json" ] || { echo "FAIL: model info --json says '$q'"; fail=1; }
    # a sidecar neither GPTQ's nor AWQ's, one of another method (or not a name), 5 bits, a
    # Marlin repack, AutoAWQ's keys without its bits: refused at its keys
    for side in '{"damp_percent": 0.01}|not GPTQ.s or AWQ.s keys' \
        '{"quant_method": "exl2", "bits": 4}|quant_method: quant_method "exl2" is not read' \
        '{"bits": 5, "group_size": 32}|bits: expected 2, 3, 4 or 8' \
        '{"quant_method": 5, "bits": 4}|quant_method: quant_method "(not a string)" is not read' \
        '{"bits": 4, "group_size": 32, "is_marlin_format": true}|is_marlin_format: a checkpoint repacked for Marlin' \
        '{"version": "GEMM", "zero_point": true}|required key w_bit is missing'; do
        rm -rf "$dir/sbad" && cp -r "$dir/sgptq" "$dir/sbad" && echo "${side%%|*}" \
            >"$dir/sbad/quantize_config.json"
        "$helix" decode --model "$dir/sbad" --steps 1 >/dev/null 2>"$dir/err"
        rc=$?
        { [ $rc = 2 ] && grep -q "quantize_config.json:[0-9]*:[0-9]*: .*${side#*|}" "$dir/err"; } ||
            { echo "FAIL: sidecar ${side%%|*}: exit $rc, $(cat "$dir/err")"; fail=1; }
        echo "sidecar ${side%%|*}: $(cat "$dir/err")"
    done
    # both files: which holds the packing is not guessed
    rm -rf "$dir/sbad" && cp -r "$dir/sgptq" "$dir/sbad" &&
        cp "$dir/sawq/quant_config.json" "$dir/sbad/"
    "$helix" decode --model "$dir/sbad" --steps 1 >/dev/null 2>"$dir/err"
    rc=$?
    { [ $rc = 2 ] && grep -q "both quantize_config.json and quant_config.json" "$dir/err"; } ||
        { echo "FAIL: both sidecars: exit $rc, $(cat "$dir/err")"; fail=1; }
    # nor beside ModelOpt's hf_quant_config.json
    rm -rf "$dir/sbad" && cp -r "$dir/sgptq" "$dir/sbad" &&
        echo '{"quantization": {"quant_algo": "FP8"}}' >"$dir/sbad/hf_quant_config.json"
    "$helix" model info "$dir/sbad" >/dev/null 2>"$dir/err"
    rc=$?
    { [ $rc = 2 ] && grep -q "both hf_quant_config.json and quantize_config.json" "$dir/err"; } ||
        { echo "FAIL: hf_quant_config.json and a sidecar: exit $rc, $(cat "$dir/err")"; fail=1; }
    # quant_method in any case, as vLLM lowercases it: the sidecar's and config.json's
    rm -rf "$dir/sbad" "$dir/awqU" && cp -r "$dir/sgptq" "$dir/sbad" && cp -r "$dir/awq" "$dir/awqU"
    python3 - "$dir/sbad/quantize_config.json" "$dir/awqU/config.json" <<'PY' || exit 1
import json, sys
for f, key, m in ((sys.argv[1], None, 'GPTQ'), (sys.argv[2], 'quantization_config', 'AwQ')):
    c = json.load(open(f))
    (c[key] if key else c)['quant_method'] = m
    json.dump(c, open(f, 'w'), indent=2)
PY
    for m in sbad awqU; do
        "$helix" model info --json "$dir/$m" >"$dir/info" 2>&1 || { cat "$dir/info"; fail=1; }
        q=$(python3 -c "import json,sys; w=json.load(open(sys.argv[1]))['quantization']['weights']; print(w['form'], w['group'])" "$dir/info")
        [ "$q" = "$([ $m = sbad ] && echo gptq 32 || echo awq 64)" ] ||
            { echo "FAIL: $m: quant_method in upper case read as '$q'"; fail=1; }
    done
    "$helix" model info --json "$dir/awq" >"$dir/info" 2>&1 || { cat "$dir/info"; fail=1; }
    q=$(python3 -c "import json,sys; w=json.load(open(sys.argv[1]))['quantization']['weights']; print(w['form'], w['bits'], w['group'], w['packed_layers'], w['cpu'])" "$dir/info")
    echo "model info: $q"
    [ "$q" = "awq 4 64 14 packed" ] || { echo "FAIL: model info --json says '$q'"; fail=1; }
    # the bytes CPU decode holds: the 14 packed layers at 4 bits and their groups' zero points
    # and scales, less than half the dequantized total
    python3 - "$dir/info" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
cpu, tot = d['cpu_bytes_per_rank'], d['bytes_per_rank']['total']
print(f"model info: {cpu:.0f} bytes per rank held on the CPU, {tot:.0f} dequantized")
assert 0 < cpu < 0.5 * tot, (cpu, tot)
PY
    # how decode holds them: dequantized with HELIX_W_PACKED=0, packed in act order
    for how in "HELIX_W_PACKED=off awq dequantized False" "HELIX_W_PACKED=on gptqao packed True"; do
        set -- $how
        q_get gptqao || exit 1
        env $1 "$helix" model info --json "$dir/$2" >"$dir/info" 2>&1 ||
            { cat "$dir/info"; fail=1; }
        q=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['quantization']['weights']['cpu'], 'cpu_bytes_per_rank' in d)" "$dir/info")
        [ "$q" = "$3 $4" ] ||
            { echo "FAIL: $how: model info says the CPU holds it '$q'"; fail=1; }
    done
    # refused: configs at their line:column, packed sets with a part missing, misshaped or
    # out of range, a Linear both packed and plain, a stray part, a NaN scale
    P=model.layers.0.self_attn.q_proj
    # refused_case BAD: $dir/BAD made from its source and decoded, refused with its message
    # (or read); its verdict in $fail (in_lanes: two cases at a time)
    refused_case() {
        local bad=$1 src want
        case $bad in
        gemv|nozero|llmawq|awqbits3) src=awq ;;
        w8a8|ctfmt|ctshape|ctsym|ctnullfmt|ctbits3) src=ctm ;;
        q3*) src=g3 ;;
        i8*) src=i8 ;;
        nogidx) src=gptqao ;;
        ctnogidx) src=ctao ;;
        *) src=gptq ;;
        esac
        q_get "$src" || exit 1
        rm -rf "$dir/$bad"
        cp -r "$dir/$src" "$dir/$bad"
        python3 - "$dir/$bad" $bad <<'PY'
import json, sys
d, bad = sys.argv[1], sys.argv[2]
c = json.load(open(d + '/config.json'))
q = c['quantization_config']
w = q.get('config_groups', {}).get('group_0', {})
edit = {'bits5': lambda: q.update(bits=5), 'bits3': lambda: q.update(bits=3),
        'awqbits3': lambda: q.update(bits=3), 'ctbits3': lambda: w['weights'].update(num_bits=3),
        'marlin': lambda: q.update(checkpoint_format='marlin'),
        'lmhead': lambda: q.update(lm_head=True), 'gemv': lambda: q.update(version='gemv'),
        'nozero': lambda: q.update(zero_point=False),
        'w8a8': lambda: w.update(input_activations={'num_bits': 8, 'type': 'int'}),
        'ctfmt': lambda: (q.update(format='marlin-24'), w.update(format='marlin-24')),
        'group0': lambda: q.update(group_size=0),
        'i8asym': lambda: w['input_activations'].update(symmetric=False, dynamic=False),
        'ctsym': lambda: w['weights'].update(symmetric=True),
        'noconfig': lambda: c.pop('quantization_config'),
        'dynamic': lambda: q.update(dynamic={'+:.*down_proj': {'bits': 8}, '-:.*o_proj': {}}),
        'llmawq': lambda: q.update(backend='llm-awq'),
        'ctnullfmt': lambda: w.update(format=None)}
if bad in edit:
    edit[bad]()
json.dump(c, open(d + '/config.json', 'w'), indent=2)
PY
        case $bad in
        noqzeros) python3 "$edit" "$dir/$bad" drop $P.qzeros ;;
        scales) python3 "$edit" "$dir/$bad" rename $P.scales $P.scales_old &&
                python3 "$edit" "$dir/$bad" rename model.layers.0.self_attn.k_proj.scales $P.scales &&
                python3 "$edit" "$dir/$bad" rename $P.scales_old model.layers.0.self_attn.k_proj.scales ;;
        gidx) python3 "$edit" "$dir/$bad" setint $P.g_idx 0 99 ;;
        both) python3 "$edit" "$dir/$bad" copy model.layers.0.input_layernorm.weight $P.weight ;;
        stray) python3 "$edit" "$dir/$bad" copy $P.g_idx model.layers.0.mlp.gate_proj.g_idx_extra ;;
        nanscale) python3 "$edit" "$dir/$bad" setf16 model.layers.1.mlp.down_proj.scales 5 nan ;;
        ctshape) python3 "$edit" "$dir/$bad" setint model.layers.0.self_attn.o_proj.weight_shape 1 300 ;;
        i8noscale) python3 "$edit" "$dir/$bad" drop model.layers.1.mlp.up_proj.weight_scale ;;
        negscale) python3 "$edit" "$dir/$bad" setf16 model.layers.1.mlp.down_proj.scales 5 -0.01 ;;
        zbias|nzbias) # AutoGPTQ's bias beside a packed layer that had none: zeros, or not
            python3 "$edit" "$dir/$bad" copy model.layers.0.input_layernorm.weight $P.bias &&
                if [ $bad = zbias ]; then python3 "$edit" "$dir/$bad" zero $P.bias; fi ;;
        nogidx) python3 "$edit" "$dir/$bad" drop model.layers.1.mlp.up_proj.g_idx ;;
        ctnogidx) python3 "$edit" "$dir/$bad" drop model.layers.1.mlp.up_proj.weight_g_idx ;;
        q3rows) # down_proj's 3-bit words (in 512) under q_proj's name: its groups disagree
            python3 "$edit" "$dir/$bad" drop $P.qweight &&
                python3 "$edit" "$dir/$bad" copy model.layers.0.mlp.down_proj.qweight $P.qweight ;;
        qwshape|q3shape) # k_proj's whole packed set (64 rows) under q_proj's names (256 expected)
            for part in qweight qzeros scales g_idx; do
                python3 "$edit" "$dir/$bad" drop $P.$part &&
                    python3 "$edit" "$dir/$bad" copy model.layers.0.self_attn.k_proj.$part $P.$part
            done ;;
        esac
        case $bad in
        bits5)    want='bits: expected 2, 3, 4 or 8 (bits per weight)' ;;
        bits3)    want='model.layers.0.mlp.down_proj.qweight: shape [64, 256], expected [in / 32 x 3, out]: 64 rows are not a multiple of 3, so the in-features are not a multiple of 32' ;;
        awqbits3) want="bits: expected 4 (AWQ's weights are 4-bit)" ;;
        ctbits3)  want="the group's integer weights must be 4 or 8 bits" ;;
        q3shape)  want="q_proj.weight: shape [64, 256], expected [256, 256] (packed in $P.qweight [24, 64], GPTQ 3-bit)" ;;
        q3rows)   want="$P.scales: shape [8, 256], expected [16, 256] (GPTQ 3-bit, group 32: qweight [in / 32 x 3, out], qzeros [G, out / 32 x 3], scales [G, out], G = 16)" ;;
        marlin)   want='checkpoint_format: "gptq" or "gptq_v2"' ;;
        lmhead)   want='lm_head: a quantized head is not read' ;;
        gemv)     want='version: only "gemm" is read' ;;
        nozero)   want='zero_point: only true' ;;
        w8a8)     want='integer weights are read with unquantized activations' ;;
        ctfmt)    want='integer weights are read in format "pack-quantized"' ;;
        group0)   want='group_size: expected a group size > 0, or -1' ;;
        noqzeros) want="tensor $P.qzeros is missing (GPTQ 4-bit" ;;
        scales)   want="tensor model.layers.0.self_attn.k_proj.scales: shape [4, 256], expected [4, 64]" ;;
        gidx)     want="tensor $P.g_idx: value 0 is 99, not a group (0 to 3)" ;;
        both)     want="tensor $P.weight is stored both packed ($P.qweight) and as it is" ;;
        stray)    want='tensor model.layers.0.mlp.gate_proj.g_idx_extra is not part of' ;;
        nanscale) want='down_proj.scales: value 5 is nan, not a weight scale' ;;
        ctshape)  want='o_proj.weight_packed: shape [256, 64], expected [256, 75]' ;;
        i8asym)   want="input_activations must be null or 8-bit int, dynamic or symmetric" ;;
        i8noscale) want='tensor model.layers.1.mlp.up_proj.weight_scale is missing' ;;
        negscale) want='' ;; # AutoRound's symmetric scales keep a sign: read
        zbias)    want='' ;; # vLLM skips it; zeros change nothing
        nzbias)   want="tensor $P.bias is not part of a LlamaForCausalLM" ;;
        ctnullfmt) want='' ;; # the group's format null: the config's
        nogidx)   want='tensor model.layers.1.mlp.up_proj.g_idx is missing' ;;
        ctnogidx) want='tensor model.layers.1.mlp.up_proj.weight_g_idx is missing' ;;
        ctsym)    want='weight_zero_point: the quantization config declares symmetric weights' ;;
        noconfig) want='holds it packed, but no quantization config says how: add config.json' ;;
        dynamic)  want='rule "+:.*down_proj" gives some modules other bits or groups' ;;
        llmawq)   want='backend: only "autoawq" is read' ;;
        qwshape)  want="q_proj.weight: shape [64, 256], expected [256, 256] (packed in $P.qweight [32, 64], GPTQ 4-bit)" ;;
        esac
        expect_refused $bad "$want" --model "$dir/$bad" --context 20 --steps 2
    }
    for q in awq ctm g3 i8 gptqao ctao gptq; do q_get $q || exit 1; done
    in_lanes refused_case bits5 bits3 awqbits3 ctbits3 q3shape q3rows marlin lmhead gemv \
        nozero w8a8 ctfmt group0 noqzeros scales gidx both stray nanscale ctshape i8asym \
        i8noscale negscale nogidx ctnogidx ctsym noconfig dynamic llmawq qwshape ctnullfmt \
        zbias nzbias
    ;;
packhint)
    # The memory refusal of a rank holding a checkpoint's packed weights dequantized names
    # HELIX_W_PACKED=on where the need with them kept packed, counted matrix by matrix as
    # the load would hold them, fits the rank's memory, and not where it does not (a fixed
    # ratio of all the weights offered it below the packed need: the embedding and the
    # head stay bf16); HELIX_MEM_LIMIT sets the memory to the byte
    quant="$(dirname "$0")/quantize_int.py"
    "$helix" model synth --family dense --seed 6 --out "$dir/b" >/dev/null || exit 1
    python3 "$quant" "$dir/b" "$dir/g4" --format gptq --group 32 >/dev/null || exit 1
    python3 "$quant" "$dir/b" "$dir/gao" --format gptq --group 32 --act-order >/dev/null ||
        exit 1
    # counts NAME DIR PACKED [BYTES]: decode DIR with HELIX_W_PACKED=PACKED and
    # HELIX_MEM_LIMIT=BYTES (in GiB, exact), at INFO, into $dir/NAME; its exit in rc, the
    # memory check's need in need, the need with the packed weights kept packed (counted
    # only on a refused rank) in pneed
    counts() {
        local lim=0
        [ -z "${4:-}" ] || lim=$(awk -v b="$4" 'BEGIN { printf "%.17g", b / 1073741824 }')
        HELIX_W_PACKED=$3 HELIX_MEM_LIMIT=$lim HELIX_DEBUG=INFO HELIX_DEBUG_SUBSYS=CORE \
            "$helix" decode --model "$2" --context 60 --steps 2 >"$dir/$1" 2>&1
        rc=$?
        need=$(sed -n 's/.*memory check counts \([0-9]*\) bytes.*/\1/p' "$dir/$1")
        pneed=$(sed -n 's/.*; \([0-9]*\) with the packed weights kept packed.*/\1/p' "$dir/$1")
        echo "$1: exit $rc, needs ${need:-?}${pneed:+, $pneed kept packed}$(grep -q \
            'or HELIX_W_PACKED=on to keep' "$dir/$1" && echo ', names HELIX_W_PACKED=on')"
    }
    # expect NAME RC HINT(0/1): the run's exit and whether the refusal named the hint
    expect() {
        local h=0
        grep -q 'or HELIX_W_PACKED=on to keep' "$dir/$1" && h=1
        [ "$rc" = "$2" ] && [ $h = "$3" ] ||
            { echo "FAIL: $1: expected exit $2, hint $3"; cat "$dir/$1"; fail=1; }
    }
    counts on "$dir/g4" on
    expect on 0 0
    won=$need
    counts off "$dir/g4" off
    expect off 0 0
    [ -n "$won" ] && [ -n "$need" ] && [ "$won" -lt "$need" ] && [ -z "$pneed" ] ||
        { echo "FAIL: packed need $won not below the dequantized $need, or counted on a rank that fits"; fail=1; }
    counts fits "$dir/g4" off "$won"
    expect fits 2 1
    [ "$pneed" = "$won" ] ||
        { echo "FAIL: the refusal counted $pneed bytes kept packed, the packed run $won"; fail=1; }
    counts fits_on "$dir/g4" on "$won"
    expect fits_on 0 0
    counts short "$dir/g4" off $((won - 1))
    expect short 2 0
    counts bf16 "$dir/b" off $((won - 1))
    expect bf16 2 0
    # act order, gate and up with different groups: held in bf16, said once at the load,
    # never by the start-up count (refused runs load nothing)
    for p in on off; do
        counts "ao_$p" "$dir/gao" $p 1048576
        expect "ao_$p" 2 0
        ! grep -q 'act-order groups' "$dir/ao_$p" ||
            { echo "FAIL: ao_$p: the act-order warning before any load"; fail=1; }
    done
    counts ao "$dir/gao" on
    expect ao 0 0
    n=$(grep -c 'act-order groups' "$dir/ao")
    [ "$n" = 1 ] || { echo "FAIL: ao: the act-order warning said $n times, not once"; fail=1; }
    ;;
refuse)
    helixrun=$1
    "$helix" model synth --family dense --seed 5 --out "$dir/ck" >/dev/null || exit 1
    cp -r "$dir/ck" "$dir/trunc"
    truncate -s -100 "$dir/trunc/model-00002-of-00002.safetensors"
    cp -r "$dir/ck" "$dir/shape"
    sed -i 's/"intermediate_size": 512/"intermediate_size": 640/' "$dir/shape/config.json"
    cp -r "$dir/ck" "$dir/header"
    # a data offset of the first shard's JSON header bent out of shape
    python3 - "$dir/header/model-00001-of-00002.safetensors" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
n = struct.unpack('<Q', b[:8])[0]
h = b[8:8 + n].decode()
i = h.index('"data_offsets":[') + len('"data_offsets":[')
j = h.index(',', i)
h2 = h[:i] + '7'.rjust(j - i) + h[j:]
b[8:8 + n] = h2.encode()
open(sys.argv[1], 'wb').write(b)
PY
    cp -r "$dir/ck" "$dir/rope"
    # a RoPE scaling kind not implemented: refused naming it
    python3 - "$dir/rope/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["rope_scaling"] = {"type": "ntk", "factor": 2.0}
json.dump(c, open(sys.argv[1], "w"), indent=2)
PY
    cases=("rope|config.json:20:3: rope_scaling: \"ntk\" RoPE scaling is not implemented"
           "trunc|model-00002-of-00002.safetensors: tensor lm_head.weight"
           "shape|tensor model.layers.0.mlp.gate_proj.weight: shape [512, 256], expected [640, 256]"
           "header|model-00001-of-00002.safetensors: tensor")
    for c in "${cases[@]}"; do
        name=${c%%|*} msg=${c#*|}
        timeout -k 5 60 "$helixrun" -n 2 --timeout 50 -- "$helix" decode --model "$dir/$name" \
            --kvp 2 --steps 2 >"$dir/out" 2>"$dir/err"
        rc=$?
        lines=$(grep -cF -- "$msg" "$dir/err")
        echo "$name: exit $rc, $lines line(s) with '$msg'"
        sed 's/^/  stderr: /' "$dir/err" | head -6
        # helixrun reports the exit of the ranks (status 2); each rank says why at most once
        if [ $rc -ne 2 ] || [ "$lines" -lt 1 ] || [ "$lines" -gt 2 ]; then
            echo "FAIL: expected exit 2 and one line per rank at most"
            fail=1
        fi
        # helixrun prefixes each line with the rank ("[1] ..."): one line per rank at most
        if grep -F -- "$msg" "$dir/err" | sed 's/^\(\[[0-9]*\]\).*/\1/' | sort | uniq -d |
           grep -q .; then
            echo "FAIL: a rank repeated the message"
            fail=1
        fi
    done
    # a single process: the same, once
    "$helix" decode --model "$dir/shape" --steps 2 >/dev/null 2>"$dir/err"
    rc=$?
    lines=$(grep -c "expected \[640, 256\]" "$dir/err")
    echo "single process: exit $rc, $lines line(s)"
    if [ $rc -ne 2 ] || [ "$lines" -ne 1 ]; then
        echo "FAIL: expected exit 2 and one line"; fail=1
    fi
    ;;
mxfp4)
    # gpt-oss's released form (docs/model.md, GptOssForCausalLM): experts as MXFP4 blocks
    # and scales, quantized by mxfp4_experts.py (written from the OCP definition), decode to
    # the same hidden state as the bf16 copy it dequantizes from the same codes, with
    # --check passing, on 1 rank and on 2 and 4 (EP 2, TPF 2; KVP 2 x TPA 2 with EP 4; TPF
    # 4), also kept as 4-bit E2M1 codes (HELIX_W_PACKED=on, docs/kernels.md), and
    # to the tokens of hf_forward.py reading the MXFP4 tensors itself; NaN scales named (of
    # down, and of gate and up through the clamped SwiGLU); a missing scales
    # tensor, blocks of another shape and MXFP4 blocks without the quantization_config
    # refused (exit 2)
    helixrun=$1 edit="$(dirname "$0")/st_edit.py"
    "$helix" model synth --family gpt-oss --dtype bf16 --seed 5 --out "$dir/src" >/dev/null &&
        python3 "$(dirname "$0")/mxfp4_experts.py" "$dir/src" "$dir/mx" || exit 1
    grep -q '"quant_method": "mxfp4"' "$dir/mx/config.json" || { echo "FAIL: no config"; exit 1; }
    "$helix" model info "$dir/mx" >"$dir/info" 2>&1 && grep -q "routed experts MXFP4" "$dir/info" ||
        { echo "FAIL: model info does not say MXFP4"; cat "$dir/info"; fail=1; }
    # (mx.on: the MXFP4 experts kept as their codes, HELIX_W_PACKED=on; 4 x 1 with TPF 4
    # splits down_proj's 64 inputs into 16 a rank, half a scale block: kofs 16)
    for run in "1 1 1 1" "2 2 1 1" "2 2 1 2" "4 2 2 4" "4 1 4 1"; do
        set -- $run
        for d in mx mx.ref mx.on; do
            HELIX_W_PACKED=$([ $d = mx.on ] && echo on || echo off) \
            "$helixrun" --no-prefix -n "$1" --timeout 100 -- "$helix" decode \
                --model "$dir/${d%.on}" --kvp "$2" --tpa "$3" --ep "$4" --batch 2 --context 40 \
                --steps 5 --check --json >"$dir/out.$d" 2>"$dir/err.$d" ||
                { echo "FAIL: $d on $1 rank(s)"; cat "$dir/err.$d"; fail=1; }
        done
        a=$(json_field "$dir/out.mx" "d['hidden_hash'], d['passed'], d['tokens']")
        b=$(json_field "$dir/out.mx.ref" "d['hidden_hash'], d['passed'], d['tokens']")
        c=$(json_field "$dir/out.mx.on" "d['hidden_hash'], d['passed'], d['tokens']")
        echo "kvp $2 x tpa $3, ep $4: MXFP4 $a; its bf16 copy $b"
        [ -n "$a" ] && [ "$a" = "$b" ] && [ "$(json_field "$dir/out.mx" "d['passed']")" = True ] ||
            { echo "FAIL: MXFP4 and its bf16 copy differ"; fail=1; }
        [ "$c" = "$b" ] || { echo "FAIL: MXFP4 kept as codes: $c"; fail=1; }
        # every expert matrix of the rank packed (2 layers x 8 / EP experts x gate_up and
        # down), and in 4 bits: the bytes saved against the bf16 copy's, over the bf16
        # bytes of the rank's expert weights (layers x experts x 3 H I / ranks), are about
        # (2 - 0.75) / 2 (4-bit codes and an f32 zero point and scale per 32 rows; TPF 4's
        # down projections of 16 rows hold one group each: 0.5); 8-bit codes would save
        # 0.375 at most
        saved=$(python3 -c 'import json, sys
c = json.load(open(sys.argv[1])); on, ref = (json.load(open(f))["w_proj_bytes_rank"] for f in sys.argv[2:4])
n = c["num_hidden_layers"] * c["num_local_experts"] * 3 * c["hidden_size"] * c["intermediate_size"] / int(sys.argv[4])
print(round((ref - on) / (2 * n), 3))' "$dir/mx/config.json" "$dir/out.mx.on" "$dir/out.mx.ref" "$1")
        p=$(json_field "$dir/out.mx.on" "d['w_layout'], d['w_packed']")
        echo "  kept as codes: $c; w_layout, w_packed: $p; saved over the experts' bf16 bytes: $saved"
        [ "$p" = "packed $((2 * 8 / $4 * 2))" ] ||
            { echo "FAIL: MXFP4 not kept packed on every rank: $p"; fail=1; }
        python3 -c 'import sys; sys.exit(not 0.5 <= float(sys.argv[1]) <= 0.625)' "$saved" ||
            { echo "FAIL: MXFP4 kept packed in other than 4 bits: saved $saved"; fail=1; }
    done
    HELIX_W_PACKED=on "$helix" model info "$dir/mx" >"$dir/info" 2>&1 &&
        grep -q "kept on the CPU as their 4-bit E2M1 codes with a scale per 32, 0.75 bytes" "$dir/info" ||
        { echo "FAIL: model info does not say the MXFP4 experts are kept as codes"; cat "$dir/info"; fail=1; }
    # against the independent forward (which decodes the blocks itself), from a prompt
    echo "5 17 300 42" >"$dir/prompt"
    "$helix" decode --model "$dir/mx" --prompt-ids "$dir/prompt" --context 0 --batch 1 \
        --steps 4 --json >"$dir/out.fw" 2>"$dir/err.fw" || { cat "$dir/err.fw"; fail=1; }
    python3 "$(dirname "$0")/hf_forward.py" "$dir/mx" "$dir/prompt" 4 >"$dir/fw" ||
        { echo "FAIL: hf_forward.py"; fail=1; }
    a=$(json_field "$dir/out.fw" "d['tokens'][0]")
    b=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["tokens"])' "$dir/fw")
    echo "tokens: helix $a, hf_forward.py $b"
    [ -n "$a" ] && [ "$a" = "$b" ] || { echo "FAIL: the forward's tokens differ"; fail=1; }
    cp -r "$dir/mx" "$dir/noscale"
    python3 "$edit" "$dir/noscale" drop model.layers.1.mlp.experts.down_proj_scales || exit 1
    expect_refused noscale "tensor model.layers.1.mlp.experts.down_proj_scales is missing (the MXFP4 scales of model.layers.1.mlp.experts.down_proj_blocks)" \
        --model "$dir/noscale" --steps 1
    cp -r "$dir/mx" "$dir/swapped"
    python3 "$edit" "$dir/swapped" rename model.layers.0.mlp.experts.down_proj_blocks tmp &&
        python3 "$edit" "$dir/swapped" rename model.layers.0.mlp.experts.gate_up_proj_blocks \
            model.layers.0.mlp.experts.down_proj_blocks &&
        python3 "$edit" "$dir/swapped" rename tmp model.layers.0.mlp.experts.gate_up_proj_blocks ||
        exit 1
    expect_refused swapped "tensor model.layers.0.mlp.experts.gate_up_proj_blocks: U8 [8, 256, 2, 16], expected U8 [8, 128, 8, 16] (MXFP4 blocks" \
        --model "$dir/swapped" --steps 1
    cp -r "$dir/mx" "$dir/noconfig"
    python3 - "$dir/noconfig/config.json" <<'PY' || exit 1
import json, sys
c = json.load(open(sys.argv[1]))
del c["quantization_config"]
json.dump(c, open(sys.argv[1], "w"))
PY
    expect_refused noconfig "MXFP4 experts, where config.json's quantization_config does not say" \
        --model "$dir/noconfig" --steps 1
    # mx_scales NAME TENSOR BYTE: a copy of the MXFP4 checkpoint with every scale of
    # TENSOR (layer L's experts) set to BYTE
    mx_scales() {
        cp -r "$dir/mx" "$dir/$1"
        python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from st_edit import load, save
m, t = load(sys.argv[2]); n = sys.argv[3]
dt, sh, raw = t[n]; t[n] = (dt, sh, bytes([int(sys.argv[4])]) * len(raw)); save(sys.argv[2], m, t)' \
            "$(dirname "$0")" "$dir/$1/model.safetensors" "model.layers.$2_scales" "$3" || exit 1
    }
    # named_by_decode NAME WHAT TENSOR: the decode of that copy, decoded to bf16 at load
    # (kept as codes, below, it is refused at load instead), fails naming TENSOR
    named_by_decode() {
        HELIX_W_PACKED=off "$helix" decode --model "$dir/$1" --steps 3 >/dev/null 2>"$dir/err"
        rc=$?
        echo "decode ($2): exit $rc: $(tail -1 "$dir/err")"
        [ $rc -ne 0 ] && grep -qF "the checkpoint's weights are not finite: model.layers.$3_scales holds" "$dir/err" ||
            { echo "FAIL: $2 not named by decode"; fail=1; }
    }
    # E8M0 scales of 255 (NaN), every block of layer 1's down projections: named by model
    # info --scan (exit 2) and by the decode that meets them
    mx_scales nan 1.mlp.experts.down_proj 255
    "$helix" model info "$dir/nan" --scan >"$dir/scan" 2>&1
    rc=$?
    echo "scan: exit $rc: $(tail -1 "$dir/scan")"
    [ $rc -eq 2 ] && grep -qF "down_proj_scales (U8 [8, 256, 2], model.safetensors): 4096 non-finite values, the first nan (bits 0xff) at [0, 0, 0]" "$dir/scan" ||
        { echo "FAIL: the NaN scale not named by --scan"; fail=1; }
    named_by_decode nan "NaN scales" "1.mlp.experts.down_proj"
    # kept as codes, a NaN scale is refused as the codes are made, naming where
    HELIX_W_PACKED=on "$helix" decode --model "$dir/nan" --steps 3 >/dev/null 2>"$dir/err"
    rc=$?
    echo "decode, kept as codes (NaN scales): exit $rc: $(tail -1 "$dir/err")"
    [ $rc -eq 2 ] && grep -qF "tensor model.layers.1.mlp.experts.down_proj_scales: scale byte 255 (E8M0's NaN) at [0, 0, 0]; replace it" "$dir/err" ||
        { echo "FAIL: a NaN scale kept as codes not named"; fail=1; }
    # the same in layer 0's gate and up: their NaN through the clamped SwiGLU stays NaN
    # (torch.clamp keeps it), so the decode names them too, where a clamp to the limit
    # would decode finite tokens from them
    mx_scales nangu 0.mlp.experts.gate_up_proj 255
    named_by_decode nangu "NaN gate/up scales" "0.mlp.experts.gate_up_proj"
    # scales of 2^127 (254) over layer 0's gate and up: the blocks' elements of 2 or more
    # overflow to inf (E2M1 x 2^127 passes f32's largest); --scan names the scales, as the
    # decode that meets them does (both read "every value finite" before)
    mx_scales big 0.mlp.experts.gate_up_proj 254
    "$helix" model info "$dir/big" --scan >"$dir/scan" 2>&1
    rc=$?
    echo "scan (2^127 scales): exit $rc: $(tail -1 "$dir/scan")"
    [ $rc -eq 2 ] && grep -F "gate_up_proj_scales" "$dir/scan" | grep -qF "the first inf (the block's values overflow) (bits 0xfe)" ||
        { echo "FAIL: the overflowing scales not named by --scan"; fail=1; }
    named_by_decode big "2^127 scales" "0.mlp.experts.gate_up_proj"
    ;;
f16)
    # the dense f32 checkpoint rounded to F16 (st_edit.py half) with torch_dtype float16:
    # held in bf16 by default (each F16 value rounded again) and exactly in f32 with
    # --weight-dtype f32; the reference reads what the ranks hold, so --check is exact
    # either way, and the two holdings differ (the bf16 rounding of F16's 11-bit
    # significands moves the hidden state)
    helixrun=$1 fwd=$2 edit="$(dirname "$0")/st_edit.py"
    declare -A tok
    "$helix" model synth --family dense --dtype f32 --seed 11 --out "$dir/f32" >/dev/null ||
        exit 1
    # to_f16 DIR: DIR's tensors rounded to F16, its torch_dtype float16
    to_f16() {
        python3 "$edit" "$1" half && python3 - "$1/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["torch_dtype"] = "float16"
json.dump(c, open(sys.argv[1], "w"))
PY
    }
    cp -r "$dir/f32" "$dir/f16"
    to_f16 "$dir/f16" || exit 1
    echo "3 77 501 9 13 200 7 1 300 42 65 128" >"$dir/prompt"
    bg_start "$dir/py" python3 "$fwd" "$dir/f16" "$dir/prompt" 6 # F16 read exactly
    args=(--model "$dir/f16" --context 0 --steps 6 --prompt-ids "$dir/prompt" --kv-dtype f32
          --check --json --timeout 60)
    for w in bf16 f32; do
        wf=(--weight-dtype f32)
        [ $w = bf16 ] && wf=(--kv-block 16) # the default holding (a no-op flag in its place)
        run "$w-1" 1 "${wf[@]}"
        run "$w-2x1" 2 --kvp 2 "${wf[@]}"
        run "$w-2x2" 4 --kvp 2 --tpa 2 "${wf[@]}"
        for l in 2x1 2x2; do
            [ "${tok[$w-$l]}" = "${tok[$w-1]}" ] ||
                { echo "FAIL: held in $w, $l: other tokens than 1 rank"; fail=1; }
        done
        for l in 1 2x1 2x2; do
            [ "$(json_field "$dir/$w-$l.json" "d['weight_dtype']")" = $w ] ||
                { echo "FAIL: held in $w, $l: the report says another weight_dtype"; fail=1; }
        done
    done
    ok=$(json_field "$dir/f32-1.json" "d['weight_bytes_per_rank_max']")
    ob=$(json_field "$dir/bf16-1.json" "d['weight_bytes_per_rank_max']")
    echo "weight bytes per rank: f32 $ok, bf16 $ob"
    [ "$ok" -gt $((ob * 3 / 2)) ] 2>/dev/null ||
        { echo "FAIL: f32 holding does not take about twice bf16's bytes"; fail=1; }
    [ "$(json_field "$dir/f32-1.json" "d['hidden_hash']")" != \
      "$(json_field "$dir/bf16-1.json" "d['hidden_hash']")" ] ||
        { echo "FAIL: held in f32 and in bf16, the same hidden states"; fail=1; }
    if bg_wait "$dir/py"; then
        want=$(json_field "$dir/py" "[d['prefill_token']] + d['tokens']")
        got=$(json_field "$dir/f32-1.json" "d['prefill_tokens'] + d['tokens'][0]")
        echo "held in f32: helix $got, transformers-style $want"
        [ "$want" = "$got" ] || { echo "FAIL: f32 holding: other tokens than the forward"; fail=1; }
    else
        echo "FAIL: hf_forward.py: $(cat "$dir/py.err")"; fail=1
    fi
    # generate holds them as decode does (its tokens: the prefill's, then the decoded)
    "$helix" generate --model "$dir/f16" --prompt-ids "$dir/prompt" --max-new 7 \
        --weight-dtype f32 --kv-dtype f32 --check --json >"$dir/gen.json" 2>"$dir/err" ||
        { echo "FAIL: generate --weight-dtype f32 --check: $(cat "$dir/err")"; fail=1; }
    [ "$(json_field "$dir/gen.json" "d['tokens'][0], d['weight_dtype']")" = \
      "$(json_field "$dir/f32-1.json" "d['prefill_tokens'] + d['tokens'][0], 'f32'")" ] ||
        { echo "FAIL: generate --weight-dtype f32: other tokens or dtype than decode"; fail=1; }
    # MLA and MoE (DeepSeek-V3's gate, its F32 correction bias kept F32) held either way
    "$helix" model synth --family moe-mla --dtype f32 --seed 11 --out "$dir/mla" >/dev/null &&
        to_f16 "$dir/mla" || exit 1
    args=(--model "$dir/mla" --context 20 --steps 4 --check --json --timeout 60)
    run mla-bf16 1
    run mla-f32 1 --weight-dtype f32
    # bf16 holding of f32 weights rounds them, the reference too: a checkpoint and a preset
    args=(--context 20 --steps 4 --weight-dtype bf16 --check --json --timeout 60)
    run f32ck-bf16 1 --model "$dir/f32"
    run tiny-bf16 1 --model tiny
    [ "$(json_field "$dir/f32ck-bf16.json" "d['weight_dtype']")" = bf16 ] ||
        { echo "FAIL: an f32 checkpoint held in bf16: the report says otherwise"; fail=1; }
    # Gemma 3 (norms stored as w - 1, the embedding times sqrt(hidden)): its f32 checkpoint
    # held in bf16 runs as its bf16 rounding does: each stored w - 1 rounded before its 1
    # is added, sqrt(hidden) rounded as the held embedding
    "$helix" model synth --family gemma3 --dtype f32 --seed 5 --out "$dir/g32" >/dev/null &&
        cp -r "$dir/g32" "$dir/gbf" && python3 "$edit" "$dir/gbf" bf16 >/dev/null &&
        sed -i 's/"float32"/"bfloat16"/' "$dir/gbf/config.json" || exit 1
    args=(--context 8 --steps 4 --kv-dtype f32 --check --json --timeout 60)
    run g32-bf16 1 --model "$dir/g32" --weight-dtype bf16
    run gbf 1 --model "$dir/gbf"
    [ "$(json_field "$dir/g32-bf16.json" "d['hidden_hash']")" = \
      "$(json_field "$dir/gbf.json" "d['hidden_hash']")" ] ||
        { echo "FAIL: gemma3's f32 checkpoint held in bf16: other hidden states than its bf16" \
               "rounding"; fail=1; }
    # what is not a holding: exit 2 naming the flag; the names helix plan takes are read
    for v in "" fp8 fp4 f16 fp16 float16 int4 "bf16 "; do
        expect_refused "--weight-dtype '$v'" "--weight-dtype" --model tiny --weight-dtype "$v"
    done
    "$helix" generate --model tiny --prompt-ids "$dir/prompt" --weight-dtype fp8 \
        >/dev/null 2>"$dir/err"
    rc=$?
    [ $rc -eq 2 ] && grep -qF -- "--weight-dtype fp8" "$dir/err" ||
        { echo "FAIL: generate --weight-dtype fp8: exit $rc: $(cat "$dir/err")"; fail=1; }
    for v in F32 fp32 BFloat16; do
        expect_refused "--weight-dtype $v" "" --model tiny --weight-dtype "$v" --context 8 \
            --steps 1
    done
    # fp8 weights are dequantized to bf16 only
    "$helix" model synth --family moe-mla --dtype fp8 --seed 3 --out "$dir/fp8" >/dev/null ||
        exit 1
    expect_refused "fp8 checkpoint held in f32" "--weight-dtype f32: $dir/fp8 holds quantized" \
        --model "$dir/fp8" --weight-dtype f32 --context 8 --steps 1
    expect_refused "fp8 checkpoint held in bf16" "" --model "$dir/fp8" --weight-dtype bf16 \
        --context 8 --steps 1
    ;;
*)
    echo "unknown mode $mode"; exit 2 ;;
esac
exit $fail
