#!/usr/bin/env bash
# The memory a rank is checked against counts the weights as the rank holds them. A model
# of 126 layers that fits nowhere, so every run stops at the start-up check, whose refusal
# names the bytes needed; differences between runs are computed here from the model's
# shapes:
# - bf16 against f32 weights (row-major) differ by 2 bytes an element of every projection,
#   the LM head AND the embedding table, which is held in the weights' dtype;
# - strips against row-major (bf16): no second copy of any matrix while it is packed (the
#   matrices are read into their strips a group of columns at a time, through a few MiB),
#   and every dimension here is a multiple of 16 (no padding), so the same need within
#   the message's 0.01 GiB. Skipped where the kernels keep row-major weights;
# - tied (tie_embeddings, bf16): one V x H table less, the embedding rows being read from
#   the LM head's columns (the host backend reads its weights);
# - an MoE model (3 leading dense layers, routed and shared experts): the dense FFN on the
#   dense layers only, each MoE layer's experts in bf16 and its router in f32;
# - with HELIXRUN, two ranks (KVP 2): bf16 against f32 again, with a rank's share of W_o,
#   the FFN, the LM head AND the embedding (each rank holds the rows of its vocabulary
#   slice, as the head holds its columns), while QKV stays whole (TPA 1).
# usage: weights_memory.sh HELIX [HELIXRUN]
set -u
helix=$1
helixrun=${2:-}
. "$(dirname "$0")/report.sh" # $dir (removed at exit), fail=0, json_field FILE EXPR

model() { # $1 weight dtype [$2 true: tied embeddings [$3 the MoE keys]]
    cat <<JSON
{ "name": "big", "attn": "gqa", "layers": 126, "hidden": 16384, "q_heads": 128,
  "kv_heads": 8, "head_dim": 128, "ffn": 53248, "vocab": 128256, "rope_theta": 500000,
  "norm_eps": 1e-5, "weight_dtype": "$1", "kv_dtype": "bf16", "tie_embeddings": ${2:-false}
  ${3:-} }
JSON
}
# need NAME DTYPE STRIPS [KVP [TIED]]: the GiB the refusal names (rank 0's), in need_NAME
need() {
    local kvp=${4:-1}
    model "$2" "${5:-false}" "${6:-}" >"$dir/$1.json"
    if [ "$kvp" -gt 1 ]; then
        HELIX_W_STRIPS=$3 "$helixrun" -n "$kvp" --timeout 60 -- "$helix" decode \
            --model "$dir/$1.json" --kvp "$kvp" --context 1K --steps 1 >"$dir/$1.out" 2>&1
    else
        HELIX_W_STRIPS=$3 "$helix" decode --model "$dir/$1.json" --context 1K --steps 1 \
            >"$dir/$1.out" 2>&1
    fi
    local rc=$? v
    v=$(sed -n 's/.*rank 0.* needs \([0-9.]*\) GiB .*/\1/p' "$dir/$1.out" | head -n 1)
    [ -n "$v" ] || v=$(sed -n 's/.* needs \([0-9.]*\) GiB .*/\1/p' "$dir/$1.out" | head -n 1)
    w=$(sed -n 's/.*rank 0.* GiB (weights \([0-9.]*\), KV shard .*/\1/p' "$dir/$1.out" | head -n 1)
    [ -n "$w" ] || w=$(sed -n 's/.* GiB (weights \([0-9.]*\), KV shard .*/\1/p' "$dir/$1.out" | head -n 1)
    echo "$1 (weights $2, HELIX_W_STRIPS=$3): exit $rc, needs ${v:-?} GiB, weights ${w:-?}"
    if [ $rc -ne 2 ] || [ -z "$v" ] || [ -z "$w" ]; then
        echo "FAIL: expected the start-up refusal (exit 2) naming the bytes needed and the weights'"
        cat "$dir/$1.out"
        exit 1
    fi
    printf -v "need_$1" '%s' "$v"
    printf -v "weights_$1" '%s' "$w"
}
need bf16 bf16 0
need f32 f32 0
# elements: per layer QKV (H x (Q + 2 KV) hd), W_o (Q hd x H), FFN (3 H F); the LM head and
# the embedding (V x H each)
if ! awk -v a="$need_bf16" -v b="$need_f32" 'BEGIN {
        L = 126; H = 16384; Q = 128; KV = 8; hd = 128; F = 53248; V = 128256
        e = L * (H * (Q + 2 * KV) * hd + Q * hd * H + 3 * H * F) + 2 * V * H
        d = b - a - 2 * e / 1073741824
        printf "f32 - bf16: %.3f GiB, expected %.3f\n", b - a, 2 * e / 1073741824
        exit !(d > -0.011 && d < 0.011) }'; then
    echo "FAIL: the f32 and bf16 needs differ by other than 2 bytes an element"
    fail=1
fi
# the weights item itself, bf16 row-major: 2 bytes an element of every projection, the
# embedding and the LM head
if ! awk -v w="$weights_bf16" 'BEGIN {
        L = 126; H = 16384; Q = 128; KV = 8; hd = 128; F = 53248; V = 128256
        e = L * (H * (Q + 2 * KV) * hd + Q * hd * H + 3 * H * F) + 2 * V * H
        printf "bf16 weights: %.3f GiB, expected %.3f\n", w, 2 * e / 1073741824
        d = w - 2 * e / 1073741824
        exit !(d > -0.011 && d < 0.011) }'; then
    echo "FAIL: the refusal's weights item is not the model's bf16 bytes"
    fail=1
fi
need tied bf16 0 1 true
need moe bf16 0 1 false ', "experts": 64, "top_k": 8, "expert_ffn": 2048,
  "shared_experts": 1, "dense_layers": 3'
if ! awk -v w="$weights_moe" 'BEGIN {
        L = 126; H = 16384; Q = 128; KV = 8; hd = 128; F = 53248; V = 128256
        D = 3; E = 64; S = 1; Fe = 2048
        e = L * (H * (Q + 2 * KV) * hd + Q * hd * H) + D * 3 * H * F
        e += (L - D) * 3 * H * Fe * (E + S) + 2 * V * H
        r = (L - D) * H * E * 4 # the routers in f32
        printf "MoE bf16 weights: %.3f GiB, expected %.3f\n", w, (2 * e + r) / 1073741824
        d = w - (2 * e + r) / 1073741824
        exit !(d > -0.011 && d < 0.011) }'; then
    echo "FAIL: the MoE model's weights are counted as other than held (a dense FFN on its MoE layers?)"
    fail=1
fi
if ! awk -v a="$need_bf16" -v b="$need_tied" 'BEGIN {
        d = a - b - 2 * 128256 * 16384 / 1073741824
        printf "untied - tied: %.3f GiB, expected %.3f\n", a - b, 2 * 128256 * 16384 / 1073741824
        exit !(d > -0.011 && d < 0.011) }'; then
    echo "FAIL: a tied model holds an embedding table of its own"
    fail=1
fi
if [ -n "$helixrun" ]; then
    need bf16_kvp2 bf16 0 2
    need f32_kvp2 f32 0 2
    # a rank of two: QKV whole, half of W_o's rows, the FFN's columns, the head's columns
    # and the embedding's rows (a replicated embedding would add V x H x 2 B / 2 = 1.96 GiB)
    if ! awk -v a="$need_bf16_kvp2" -v b="$need_f32_kvp2" 'BEGIN {
            L = 126; H = 16384; Q = 128; KV = 8; hd = 128; F = 53248; V = 128256
            e = L * (H * (Q + 2 * KV) * hd + Q / 2 * hd * H + 3 * H * F / 2) + 2 * V / 2 * H
            d = b - a - 2 * e / 1073741824
            printf "KVP 2, f32 - bf16: %.3f GiB, expected %.3f\n", b - a, 2 * e / 1073741824
            exit !(d > -0.011 && d < 0.011) }'; then
        echo "FAIL: a rank of two holds other than its share (the embedding replicated?)"
        fail=1
    fi
fi
"$helix" decode --context 64 --steps 1 --json >"$dir/tiny.json" || exit 1
if [ "$(json_field "$dir/tiny.json" "d['w_layout']")" != strips ]; then
    echo "SKIP: this machine's kernels keep row-major weights (the dtype check above passed)"
    exit $((fail ? 1 : 77))
fi
need strips bf16 1
if ! awk -v a="$need_bf16" -v b="$need_strips" 'BEGIN { d = b - a; exit !(d > -0.011 && d < 0.011) }'; then
    echo "FAIL: strips add $(awk -v a="$need_bf16" -v b="$need_strips" 'BEGIN { print b - a }') GiB to the row-major need: a matrix counted twice?"
    fail=1
fi
exit $fail
