#!/usr/bin/env bash
# Every check that needs a GPU, in under 2 minutes on an H200 (7 at most), from a build made
# on the CPU machine: the gpu test suite (run directly, no meson needed), `helix bench
# attention --device cuda` at 1M tokens for every kernel (bf16 and fp8 KV at GQA group 8,
# MLA) against the copy kernel's HBM bandwidth measured in the same run, decode with
# --device cuda on 1 and 2 ranks (one GPU) with --check, prompts of different lengths, the
# checkpoint families, the tensor-core kernel inside decodes, a 1M-token step with the
# phases on the device clock, and Nsight Compute profiles of the attention kernels where
# ncu is there. Each step's output, steps.jsonl (step, exit code, seconds) and one
# summary.json go into OUT.
#
#   bash ci/device-check.sh [OUT]       (default: $OUT, else ./device-out)
#
# Build first with `make build-gpu` (build-gpu/, -Dcuda=enabled, and build-gpu/devlibs.tar.xz:
# this machine's PMIx, UCX, hwloc, jansson and OpenBLAS, made by ci/device-libs.sh) and carry
# build-gpu/ over; the script rebuilds only when build-gpu/ is missing and meson is there.
# Where the device machine lacks those libraries (another distribution's CUDA image), they
# are unpacked there from devlibs.tar.xz without replacing any file it has; NCCL and cuBLAS
# come from the machine itself (its CUDA toolkit or its Python packages' lib folders).
# Nothing waits forever: every step has a timeout; the exit status is non-zero if any step failed
# (77 = skipped counts as passed).
set -u
cd "$(dirname "$0")/.."
out=${1:-${OUT:-device-out}}
build=${BUILD_GPU:-build-gpu}
mkdir -p "$out"
: >"$out/steps.jsonl"
export HELIX_DATA_DIR="$PWD/data" # the build's source path may not exist on this machine
fails=0
t_all=$(date +%s)
budget=${DEVICE_CHECK_BUDGET:-420} # seconds for all steps together (7 minutes with margin)
step() { # step NAME TIMEOUT_S CMD...: runs CMD, output to OUT/NAME.txt, records rc
    local name=$1 t=$2 rc t0 left
    shift 2
    t0=$(date +%s)
    left=$(( budget - (t0 - t_all) ))
    if [ "$left" -lt 10 ]; then
        echo "== $name: not run, the ${budget} s budget is spent" | tee "$out/$name.txt"
        printf '{"step": "%s", "rc": 124, "seconds": 0}\n' "$name" >>"$out/steps.jsonl"
        fails=$((fails + 1))
        return 124
    fi
    [ "$t" -gt "$left" ] && t=$left
    echo "== $name: $*"
    timeout -k 5 "$t" "$@" >"$out/$name.txt" 2>&1
    rc=$?
    printf '{"step": "%s", "rc": %d, "seconds": %d}\n' "$name" "$rc" $(( $(date +%s) - t0 )) \
        >>"$out/steps.jsonl"
    tail -n 4 "$out/$name.txt" | cut -c1-300
    case $rc in 0|77) ;; *) fails=$((fails + 1)); echo "   FAILED rc=$rc" ;; esac
    return $rc
}

if [ ! -f "$build/build.ninja" ] && [ ! -x "$build/cli/helix" ]; then
    command -v meson >/dev/null || { echo "device-check: no $build/ and no meson: run make build-gpu on the CPU machine and carry $build/" >&2; exit 2; }
    step setup 120 meson setup "$build" -Dcuda=enabled || exit 1
    step build 300 ninja -C "$build" || exit 1
fi
helix=$build/cli/helix
helixrun=$build/launcher/helixrun

# The build's libraries on a machine of another distribution: the packed ones where missing
# (no file there replaced), then NCCL and cuBLAS from wherever the machine keeps them.
if ldd "$helix" | grep -q 'not found' && [ -f "$build/devlibs.tar.xz" ]; then
    step devlibs 60 sh -c "tar -xJf '$build/devlibs.tar.xz' -C / --skip-old-files && ldconfig && echo unpacked"
fi
for lib in libnccl.so.2 libcublas.so.13 libcudart.so.13; do
    ldconfig -p | grep -q "$lib " && continue
    d=$(find /usr/local /opt /usr/lib -name "$lib" 2>/dev/null | head -n 1)
    [ -n "$d" ] && export LD_LIBRARY_PATH="$(dirname "$d")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"

step nvidia-smi 30 nvidia-smi
step ldd 30 sh -c "ldd $helix $helixrun $build/tests/gpu/test_backend_cuda | grep -i 'not found' && exit 1 || echo 'all libraries found'"
# cuBLAS is opened at the first f32 GEMM (kernels/cuda/elementwise.cu), not linked
step cublas 30 sh -c "ldconfig -p | grep 'libcublas.so.13 ' && exit 0; for d in /usr/local/cuda/lib64 \$(echo \"\${LD_LIBRARY_PATH:-}\" | tr : ' '); do ls \$d/libcublas.so.13 2>/dev/null && exit 0; done; echo 'no libcublas.so.13'; exit 1"
step info 30 "$helix" info

# The gpu suite, run directly (tests/gpu/meson.build and tests/kernels/meson.build).
step gpu-kernels 90 "$build/tests/kernels/test_kernels_cuda"
step gpu-backend 90 "$build/tests/gpu/test_backend_cuda"
step gpu-nccl-world1 60 "$build/tests/gpu/test_nccl"
# Attention at 1M tokens against the copy kernel's bandwidth in the same run (early: the
# multi-rank steps below are the likeliest to hang on a first run).
step bench-attn-bf16-gqa8 60 "$helix" bench attention --device cuda --kv-dtype bf16 \
    --context 1M --group 8 --json
for v in warp tokens mma; do
    step "bench-attn-bf16-gqa8-$v" 60 "$helix" bench attention --device cuda --kv-dtype bf16 \
        --context 1M --group 8 --variant "$v" --json
done
step bench-attn-fp8-gqa8 60 "$helix" bench attention --device cuda --kv-dtype fp8 \
    --context 1M --group 8 --json
step bench-attn-bf16-mla 60 "$helix" bench attention --device cuda --kv-dtype bf16 \
    --context 1M --mla --json

step gpu-decode-1rank 120 bash tests/gpu/decode_cuda.sh "$helix" "$helixrun" none 1 \
    --batch 3 --context 5000 --steps 6
step gpu-decode-2rank 120 bash tests/gpu/decode_cuda.sh "$helix" "$helixrun" helixrun 2 \
    --kvp 2 --batch 4 --context 4099 --steps 6
# the backend per communicator (2 ranks on one GPU: ucx, staged or on device memory;
# HELIX_NCCL=on with one rank: nccl), reported and checked
step gpu-comm-backends 120 bash tests/gpu/comm_backends_cuda.sh "$helix" "$helixrun" \
    --batch 2 --context 1003 --steps 4

# Decode at a long context: 1 and 2 ranks on the one GPU, --check, JSON reports.
step decode-cuda-1rank-json 60 "$helix" decode --device cuda --context 65536 --steps 4 \
    --check --json
# NCCL inside the decode (HELIX_NCCL=on forces it for a world of one: NCCL refuses two
# ranks on one GPU, so the 2-rank runs above use the host transport).
HELIX_NCCL=on step decode-cuda-1rank-nccl 60 "$helix" decode --device cuda --context 65536 \
    --steps 4 --check --json
HELIX_GPU_SHARE=1 step decode-cuda-2rank-json 60 "$helixrun" --no-prefix -n 2 \
    --timeout 55 -- "$helix" decode --device cuda --kvp 2 --context 65536 --steps 4 --check --json
# A tied model on 2 ranks: each holds the embedding rows of its vocabulary slice (the CUDA
# backend has no weights_col, so a slice table rather than the head's columns), a step's rows
# and the prompt chunk's summed over the ranks from pinned host memory, --check.
printf '1 2 3\n4 5 6 7 8\n' >"$out/tied-prompt.txt"
HELIX_GPU_SHARE=1 step decode-cuda-2rank-tied 60 "$helixrun" --no-prefix -n 2 --timeout 55 -- \
    "$helix" decode --device cuda --model tests/model/data/tied.json --tpa 2 --context 1000 \
    --batch 2 --steps 4 --prompt-ids "$out/tied-prompt.txt" --check --json
# Prompts of different lengths (3, 45 and 4 tokens): chunked prefill of each, then every
# request at its own position, on the device, --check against the fp64 reference.
printf '5 6 7\n%s\n3 4 5 6\n' "$(seq -s ' ' 9 53)" >"$out/ragged.txt"
step generate-cuda-ragged 60 "$helix" generate --device cuda --prompt-ids "$out/ragged.txt" \
    --context 37 --max-new 6 --prefill-chunk 8 --check --json

# The families' extra operations on the device (Qwen2's q/k/v biases and Qwen3's per-head
# norms go through the backend's add_rows and rmsnorm_heads, over all rows at once; GLM's
# RoPE over half of each head, and GLM-4-0414's output norms after the NCCL all-reduce;
# InternLM2's grouped wqkv, read on the host as any checkpoint; Gemma 3's windows, GeGLU
# and 1 + w norms): checkpoints written here, --check against the fp64 reference (MLA and
# MoE below).
ckdir=$(mktemp -d) # not under $out: the checkpoints need not come back
# (gemma2: the attention scores soft-capped in both device kernels, the logits in pad_rows;
# granite: its residual multiplier and logits scale through the backend's scale op)
for fam in qwen2 qwen3 glm glm4 internlm2 gemma2 gemma3 granite; do
    "$helix" model synth --family "$fam" --seed 3 --out "$ckdir/$fam" >/dev/null 2>&1 || true
    step "decode-cuda-$fam" 60 "$helix" decode --device cuda --model "$ckdir/$fam" \
        --prompt-ids "$out/ragged.txt" --batch 3 --context 300 --steps 4 --prefill-chunk 8 \
        --check --json
done
# OLMo 2's q and k norms over whole projections split by TPA 2: each rank's sums of squares
# (the backend's sumsq_rows), all-reduced, then rmsnorm_ss, on the device
"$helix" model synth --family olmo2 --seed 4 --out "$ckdir/olmo2" >/dev/null 2>&1 || true
HELIX_GPU_SHARE=1 step decode-cuda-olmo2-tpa2 60 "$helixrun" --no-prefix -n 2 --timeout 55 -- \
    "$helix" decode --device cuda --model "$ckdir/olmo2" --tpa 2 \
    --prompt-ids "$out/ragged.txt" --batch 3 --context 300 --steps 4 --prefill-chunk 8 \
    --check --json
# StarCoder2's LayerNorms and plain GELU-tanh MLP (the backend's layernorm and bias_act) on
# the device, over KVP 2 x TPA 2 (the MLP's columns split, its down bias added once)
"$helix" model synth --family starcoder2 --seed 4 --out "$ckdir/starcoder2" >/dev/null 2>&1 || true
HELIX_GPU_SHARE=1 step decode-cuda-starcoder2 60 "$helixrun" --no-prefix -n 4 --timeout 55 -- \
    "$helix" decode --device cuda --model "$ckdir/starcoder2" --kvp 2 --tpa 2 \
    --prompt-ids "$out/ragged.txt" --batch 3 --context 300 --steps 4 --prefill-chunk 8 \
    --check --json
rm -rf "$ckdir"
# Sliding windows on the device (KV in rows: every window read in place from its first
# slot; a windowed layer's KV in a ring, read in two pieces merged when it wraps), with the
# prompt's window moving past 0 in the prefill and rows overwritten in the ring, on 1 rank
# and KVP 2; then Gemma 3's layer (windows on every other layer with their own RoPE base,
# GeGLU, the scaled embedding, query_pre_attn_scalar, q/k and output norms)
step decode-cuda-window 60 "$helix" decode --device cuda \
    --model tests/runtime/data/tiny-window.json --context 300 --steps 40 --batch 3 \
    --prompt-ids tests/runtime/data/prompt3_long.txt --prefill-chunk 8 --check --json
HELIX_GPU_SHARE=1 step decode-cuda-window-kvp2 60 "$helixrun" --no-prefix -n 2 \
    --oversubscribe -- "$helix" decode --device cuda --kvp 2 \
    --model tests/runtime/data/tiny-window.json --context 300 --steps 6 --batch 3 \
    --prompt-ids tests/runtime/data/prompt3_long.txt --prefill-chunk 16 --check --json
step decode-cuda-gemma 60 "$helix" decode --device cuda \
    --model tests/runtime/data/tiny-gemma.json --context 300 --steps 6 --batch 3 \
    --prompt-ids tests/runtime/data/prompt3_long.txt --prefill-chunk 16 --check --json
# Dual chunk attention (Qwen2.5-1M's): the succ and inter queries copied and turned on the
# device, each part's slots attended and merged; prompts past the first chunk through the
# chunked prefill, and KVP 2 with parts' bounds inside kv blocks
step decode-cuda-dca 60 "$helix" decode --device cuda \
    --model tests/runtime/data/tiny-dca.json --context 90 --steps 8 --batch 3 \
    --prompt-ids tests/runtime/data/prompt3_long.txt --prefill-chunk 16 --check --json
HELIX_GPU_SHARE=1 step decode-cuda-dca-kvp2 60 "$helixrun" --no-prefix -n 2 \
    --oversubscribe -- "$helix" decode --device cuda --kvp 2 --kv-block 3 \
    --model tests/runtime/data/tiny-dca.json --context 90 --steps 8 --batch 3 \
    --prompt-ids tests/runtime/data/prompt3_long.txt --prefill-chunk 16 --check --json
# Dynamic NTK RoPE: each request's table copied to the device when its length changes (the
# ragged prompts end before and after the model's 621 positions past --context 600)
step decode-cuda-dynamic 60 "$helix" decode --device cuda \
    --model tests/runtime/data/tiny-dynamic.json --prompt-ids "$out/ragged.txt" --batch 3 \
    --context 600 --steps 6 --prefill-chunk 8 --check --json

# The tensor-core kernel (HELIX_CUDA_ATTN=mma: bf16 KV, heads of 128) inside the decode:
# a 64K context over 3 requests, ragged prompts through the chunked prefill (its attention
# calls carry 8 rows x the group as one head set) and KVP 2 on the one GPU, all --check.
HELIX_CUDA_ATTN=mma step decode-cuda-mma 60 "$helix" decode --device cuda \
    --model tests/runtime/data/head128.json --context 65536 --batch 3 --steps 6 --check --json
HELIX_CUDA_ATTN=mma step decode-cuda-mma-prompt 60 "$helix" decode --device cuda \
    --model tests/runtime/data/head128.json --prompt-ids "$out/ragged.txt" --batch 3 \
    --context 3000 --steps 4 --prefill-chunk 8 --check --json
HELIX_CUDA_ATTN=mma HELIX_GPU_SHARE=1 step decode-cuda-mma-kvp2 60 "$helixrun" --no-prefix -n 2 \
    --timeout 55 -- "$helix" decode --device cuda --kvp 2 \
    --model tests/runtime/data/head128.json --context 20000 --batch 4 --steps 4 --check --json
# A forced kernel that does not take the model's heads (mma, the tiny model's 32-element
# heads) is refused at start-up, exit 2 naming HELIX_CUDA_ATTN, before any step runs
step decode-cuda-mma-refused 30 bash -c 'o=$(HELIX_CUDA_ATTN=mma "$0" decode --device cuda \
    --context 64 --steps 1 2>&1); rc=$?; echo "$o"; echo "exit $rc"; [ "$rc" -eq 2 ] &&
    printf "%s" "$o" | grep -q "HELIX_CUDA_ATTN=mma: that kernel does not take"' "$helix"
# fp8 KV-cache scales from a checkpoint: the device append's k_mul / v_mul and the scale op;
# then ModelOpt's fp8 form (weights dequantized on the host, its k_proj.k_scale names)
ckdir=$(mktemp -d) # the families' directory above is gone
"$helix" model synth --family dense --seed 5 --kv-scales 0.03,0.07,0.125,0.5 \
    --out "$ckdir/kvscales" >/dev/null 2>&1 || true
step decode-cuda-fp8-kv-scales 60 "$helix" decode --device cuda --kv-dtype fp8 \
    --model "$ckdir/kvscales" --context 4096 --batch 2 --steps 4 --check --json
"$helix" model synth --family qwen3 --dtype fp8 --fp8-format modelopt --seed 5 \
    --kv-scales 0.5,0.25 --out "$ckdir/modelopt" >/dev/null 2>&1 || true
step decode-cuda-fp8-modelopt 60 "$helix" decode --device cuda --kv-dtype fp8 \
    --model "$ckdir/modelopt" --context 4096 --batch 2 --steps 4 --check --json
# GPTQ 4-bit integer weights (dequantized on the host; the device holds bf16 as for any
# checkpoint): quantized by the test script, decoded on the device under --check
"$helix" model synth --family qwen2 --seed 5 --out "$ckdir/q2" >/dev/null 2>&1 &&
    python3 tests/runtime/quantize_int.py "$ckdir/q2" "$ckdir/gptq" --format gptq --group 32 \
        --act-order >/dev/null 2>&1 || true
step decode-cuda-gptq 60 "$helix" decode --device cuda --model "$ckdir/gptq" \
    --context 4096 --batch 2 --steps 4 --check --json
rm -rf "$ckdir"

# fp8 e4m3 KV on the device: the append's conversion (__NV_SATFINITE, nearest even) against
# the reference's host rounding, the mma kernel's fp8 tiles (head 128) and the warp kernel
# (tiny, head 32), one rank and KVP 2, all --check.
step decode-cuda-fp8 60 "$helix" decode --device cuda --kv-dtype fp8 --context 65536 \
    --batch 2 --steps 4 --check --json
HELIX_CUDA_ATTN=mma HELIX_GPU_SHARE=1 step decode-cuda-mma-fp8-kvp2 60 "$helixrun" --no-prefix \
    -n 2 --timeout 55 -- "$helix" decode --device cuda --kvp 2 --kv-dtype fp8 \
    --model tests/runtime/data/head128.json --context 20000 --batch 4 --steps 4 --check --json

# MLA (DeepSeek's absorbed form) on the device: the latent rows and their append (one row,
# no values), the absorbed queries (a strided batched GEMM over the heads, the rope parts by
# copy_rows), the MLA attention kernels (tiny-mla 96/64, mla-ds-heads 576/512) and W_UV
# (batched again) after the merge. Ragged prompts through the chunked prefill, KVP 2 on
# the one GPU, all --check; then mla-ds-heads at 64K tokens, its phases on the device clock.
step decode-cuda-mla 60 "$helix" decode --device cuda --model tests/runtime/data/tiny-mla.json \
    --prompt-ids "$out/ragged.txt" --batch 3 --context 300 --steps 6 --prefill-chunk 8 \
    --check --json
step decode-cuda-mla-ds 60 "$helix" decode --device cuda \
    --model tests/runtime/data/mla-ds-heads.json --context 64 --batch 2 --steps 4 --check --json
HELIX_GPU_SHARE=1 step decode-cuda-mla-kvp2 60 "$helixrun" --no-prefix -n 2 --timeout 55 -- \
    "$helix" decode --device cuda --kvp 2 --model tests/runtime/data/mla-ds-heads.json \
    --context 64 --batch 2 --steps 4 --check --json
HELIX_PHASE_CLOCK=device step decode-cuda-mla-64k 60 "$helix" decode --device cuda \
    --model tests/runtime/data/mla-ds-heads.json --context 65536 --batch 4 --steps 6 --json

# MoE FFNs on the device: the routing on the host (fp64, after a queue sync), each expert's
# rows gathered, its SwiGLU on its columns, weight x output scattered into the rows
# (gather_rows, scatter_add); softmax and sigmoid gating, EP 2 over 2 ranks on the one GPU,
# DeepSeek's MLA + MoE with ragged prompts through the prefill, and Qwen2-MoE's shared gate
# from a checkpoint; all --check.
step decode-cuda-moe 60 "$helix" decode --device cuda --model tests/runtime/data/tiny-moe.json \
    --batch 3 --context 501 --steps 6 --check --json
HELIX_GPU_SHARE=1 step decode-cuda-moe-ep2 60 "$helixrun" --no-prefix -n 2 --timeout 55 -- \
    "$helix" decode --device cuda --kvp 2 --ep 2 \
    --model tests/runtime/data/tiny-moe-sigmoid.json --batch 3 --context 501 --steps 6 \
    --check --json
step decode-cuda-mla-moe 60 "$helix" decode --device cuda \
    --model tests/runtime/data/tiny-mla-moe.json --prompt-ids "$out/ragged.txt" --batch 3 \
    --context 300 --steps 6 --prefill-chunk 8 --check --json
# Llama 4's layer on the device: chunked attention in rings (context 300 past chunks of 8),
# weightless q/k norms on the RoPE layers, the NoPE layers' query temperature (the backend's
# scale per row), MoE every other layer with the routing weight on the expert's input
# (pad_rows, then scatter_add without an index), on 1 rank and over KVP 2 x EP 2; all --check
step decode-cuda-llama4 60 "$helix" decode --device cuda \
    --model tests/runtime/data/tiny-llama4.json --prompt-ids "$out/ragged.txt" --batch 3 \
    --context 300 --steps 6 --prefill-chunk 8 --check --json
HELIX_GPU_SHARE=1 step decode-cuda-llama4-ep2 60 "$helixrun" --no-prefix -n 2 --timeout 55 -- \
    "$helix" decode --device cuda --kvp 2 --ep 2 --model tests/runtime/data/tiny-llama4.json \
    --batch 3 --context 300 --steps 6 --check --json
# KVP past a shard's heads: tiny-q3's 3 heads in quarters over KVP 4 (3 pieces a rank;
# rank 1's span two heads), each piece its head's LSE (the pack kernel's sub) and sink,
# with a prompt through the prefill's exchange
HELIX_GPU_SHARE=1 step decode-cuda-pieces-kvp4 60 "$helixrun" --no-prefix -n 4 --timeout 55 -- \
    "$helix" decode --device cuda --kvp 4 --model tests/runtime/data/tiny-q3.json \
    --prompt-ids "$out/ragged.txt" --batch 3 --context 300 --steps 6 --prefill-chunk 8 \
    --check --json
ckdir=$(mktemp -d)
"$helix" model synth --family qwen2-moe --seed 3 --out "$ckdir/qwen2-moe" >/dev/null 2>&1 || true
step decode-cuda-qwen2-moe 60 "$helix" decode --device cuda --model "$ckdir/qwen2-moe" \
    --prompt-ids "$out/ragged.txt" --batch 3 --context 300 --steps 4 --prefill-chunk 8 \
    --check --json
rm -rf "$ckdir"

# A 1M-token decode step end to end (head128: 2 layers, 2 KV heads of 128, bf16 KV, 4
# requests: 8.6 GB of KV read per step), its phases timed on the device in the JSON report;
# then the phase clock on the device under a check, and with HOP-B on 2 ranks.
HELIX_PHASE_CLOCK=device step decode-cuda-1M 100 "$helix" decode --device cuda \
    --model tests/runtime/data/head128.json --context 1M --batch 4 --steps 8 --json
HELIX_PHASE_CLOCK=device step decode-cuda-clock 60 "$helix" decode --device cuda \
    --model tests/runtime/data/head128.json --context 30000 --batch 4 --steps 6 --check --json
HELIX_PHASE_CLOCK=device HELIX_GPU_SHARE=1 step decode-cuda-clock-hopb 60 "$helixrun" \
    --no-prefix -n 2 --timeout 55 -- "$helix" decode --device cuda --kvp 2 --hopb on \
    --model tests/runtime/data/head128.json --context 30000 --batch 4 --steps 6 --check --json

# Where Nsight Compute is there (it reads the counters on the Firecracker machines), one
# launch of each attention kernel at 1M tokens profiled: speed of light, occupancy, launch
# figures and warp stalls. The clocks are left as they are (--clock-control none).
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
if [ -n "$ncu" ]; then
    for shape in "gqa8 --group 8" "gqa8-mma --group 8 --variant mma" "mla --mla"; do
        set -- $shape
        name=$1
        shift
        step "ncu-attn-$name" 90 "$ncu" --clock-control none --section SpeedOfLight \
            --section Occupancy --section LaunchStats --section WarpStateStats \
            -k regex:hlx_cu_attn --launch-count 1 "$helix" bench attention --device cuda \
            --kv-dtype bf16 --context 1M "$@"
    done
fi

# One summary: every step's rc and the JSON objects the steps printed.
python3 - "$out" <<'PY' || echo "device-check: summary.json not written"
import json, os, sys
out = sys.argv[1]
steps = [json.loads(l) for l in open(os.path.join(out, "steps.jsonl")) if l.strip()]
for s in steps:
    objs = []
    try:
        for line in open(os.path.join(out, s["step"] + ".txt"), errors="replace"):
            line = line.strip()
            if line.startswith("{") and line.endswith("}"):
                try:
                    objs.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    if objs:
        s["json"] = objs
json.dump({"steps": steps, "failed": sum(s["rc"] not in (0, 77) for s in steps)},
          open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
echo "device-check: $fails step(s) failed in $(( $(date +%s) - t_all )) s; results in $out"
[ "$fails" -eq 0 ]
