#!/usr/bin/env bash
# Benchmark of helix generate on a tiny-shaped bf16 checkpoint (one rank): prefill tokens/s
# and GFLOP/s (2 x parameters per token, attention aside) for chunks of 1, 32 and 128
# tokens, decode ms/token, and this machine's fp32 FMA peak measured in the same run
# (helix bench gemv of the prefill's own GEMM shape), reported as ratios.
# usage: bench_generate.sh HELIX [PROMPT_TOKENS]
set -u
helix=$1 n=${2:-1024}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$helix" model synth --family dense --seed 3 --out "$dir/ck" >/dev/null || exit 1
python3 -c "
import random; random.seed(1)
print(' '.join(str(random.randrange(512)) for _ in range($n)))" >"$dir/p.txt"
# tiny: 2 layers x (H (Q + 2 K) d + Q d H + 3 H F) + V H (LM head) multiply-adds per token
params=$((2 * (256 * (8 + 4) * 32 + 8 * 32 * 256 + 3 * 256 * 512) + 512 * 256))
peak=$("$helix" bench gemv --m 128 --n 768 --k 256 --reps 5 --json |
       python3 -c "import json,sys; d=json.load(sys.stdin); print(d['peak_gflops'], d['gflops'])")
echo "machine: fp32 FMA peak and a 128 x 768 x 256 bf16 GEMM (GFLOP/s): $peak"
for c in 1 32 128; do
    best=0 dec=0
    for rep in 1 2 3; do
        out=$("$helix" generate --model "$dir/ck" --prompt-ids "$dir/p.txt" --max-new 33 \
              --prefill-chunk $c --json) || exit 1
        r=$(echo "$out" | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['prefill_tokens_per_s'], d['decode_ms_per_token'])")
        best=$(python3 -c "print(max($best, ${r% *}))")
        dec=${r#* }
    done
    python3 - "$c" "$best" "$dec" "$params" $peak <<'PY'
import sys
c, tps, dec, params, peak, gemm = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), \
    int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
gf = 2.0 * params * tps / 1e9
print("chunk %3d: prefill %8.1f tokens/s (%.1f GFLOP/s = %.2f of the FMA peak, %.2f of the "
      "GEMM alone); decode %.3f ms/token (prefill/decode tokens per s: %.1f x)"
      % (c, tps, gf, gf / peak, gf / gemm, dec, tps * dec / 1000.0))
PY
done
