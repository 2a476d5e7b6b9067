#!/usr/bin/env bash
# Benchmark of the chunked prefill of an MLA + MoE model (tiny-mla-moe, one rank): helix
# generate's prefill tokens/s for chunks of 1, 32 and 128 tokens against the token-by-token
# prefill (HELIX_PREFILL=steps) of the same run, and this machine's fp32 FMA peak and a
# GEMM of the prefill's shape measured alongside, reported as ratios.
# usage: bench_prefill_mla_moe.sh HELIX MODEL_JSON [PROMPT_TOKENS]
set -u
helix=$1 model=$2 n=${3:-1024}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 -c "
import random; random.seed(1)
print(' '.join(str(random.randrange(512)) for _ in range($n)))" >"$dir/p.txt"
peak=$("$helix" bench gemv --m 128 --n 768 --k 256 --reps 5 --json |
       python3 -c "import json,sys; d=json.load(sys.stdin); print(d['peak_gflops'], d['gflops'])")
echo "machine: fp32 FMA peak and a 128 x 768 x 256 bf16 GEMM (GFLOP/s): $peak"
best() { # MODE CHUNK: best prefill tokens/s of 3 runs, and the generated tokens
    local b=0 r out
    for rep in 1 2 3; do
        out=$(HELIX_PREFILL=$1 "$helix" generate --model "$model" --prompt-ids "$dir/p.txt" \
              --max-new 9 --prefill-chunk $2 --json) || exit 1
        r=$(echo "$out" | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['prefill_tokens_per_s'], ''.join(str(d['tokens'])).replace(' ', ''))")
        b=$(python3 -c "print(max($b, ${r% *}))")
    done
    echo "$b ${r#* }"
}
ref=$(best steps 1)
echo "token by token: prefill ${ref% *} tokens/s, tokens ${ref#* }"
for c in 1 32 128; do
    got=$(best chunked $c)
    python3 -c "
t, s, peak, gemm = float('${got% *}'), float('${ref% *}'), $(echo $peak | tr ' ' ,)
print('chunk %3d: prefill %8.1f tokens/s = %.2f x token by token (machine peak %.1f, GEMM %.1f GFLOP/s)' % ($c, t, t / s, peak, gemm))"
    [ "${got#* }" = "${ref#* }" ] || { echo "FAIL: chunk $c generated other tokens"; exit 1; }
done
