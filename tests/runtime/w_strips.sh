#!/usr/bin/env bash
# Weights in strips of 16 columns (the host backend's layout where the kernels read it fast)
# decode the same bits as row-major weights (HELIX_W_STRIPS=0): tokens and hidden_hash of
# dense, MoE, MLA and MLA+MoE models, with a ragged prompt (the prefill's GEMMs of more than
# 8 rows), a batch (the decode's few-row GEMMs) and 1 or 2 threads (column ranges), on the
# variant auto picks and on the avx2 table where this CPU runs it.
# One exception, asserted as such: the avx2 table's f32 GEMMs of more than 8 rows (a
# prefill chunk) go to OpenBLAS on row-major W and to the hand loop on strips, which round
# otherwise; there the tokens must agree, and the bits are checked on the decode steps
# alone (no prompt) and on bf16 weights with the prompt.
# usage: w_strips.sh HELIX DATA
set -u
helix=$1 data=$2
. "$(dirname "$0")/report.sh" # $dir (removed at exit), fail=0, json_field FILE EXPR

# same MODEL THREADS KERNELS PROMPT(0|1) WEIGHT_DTYPE: both layouts, compared
same() {
    local model=$1 threads=$2 kern=$3 prompt=$4 wdt=$5 w a b what ta tb
    local args=(--context 200 --steps 6 --batch 3 --threads "$threads" --json)
    [ "$kern" != auto ] && args+=(--kernels "$kern")
    [ "$prompt" = 1 ] && args+=(--prompt-ids "$data/prompt3.txt")
    for w in 0 1; do
        HELIX_W_STRIPS=$w "$helix" decode --model "$model" "${args[@]}" >"$dir/$w.json" || exit 1
    done
    if [ "$(json_field "$dir/0.json" "d['w_layout']")" != rows ]; then
        echo "FAIL: HELIX_W_STRIPS=0 reports w_layout '$(json_field "$dir/0.json" "d['w_layout']")', not rows"
        fail=1
    fi
    kern=$(json_field "$dir/1.json" "d['kernels']")
    what="$(basename "$model") kernels $kern threads $threads prompt $prompt"
    a=$(json_field "$dir/0.json" "d['tokens'], d['hidden_hash']")
    b=$(json_field "$dir/1.json" "d['tokens'], d['hidden_hash']")
    echo "$what: row-major $a"
    echo "$what: $(json_field "$dir/1.json" "d['w_layout']")    $b"
    if [ "$kern" = avx2 ] && [ "$prompt" = 1 ] && [ "$wdt" = f32 ]; then
        ta=$(json_field "$dir/0.json" "d['tokens']")
        tb=$(json_field "$dir/1.json" "d['tokens']")
        if [ "$ta" != "$tb" ]; then
            echo "FAIL: $what: other tokens in strips"
            fail=1
        fi
        return
    fi
    if [ "$a" != "$b" ]; then
        echo "FAIL: $what decodes otherwise in strips"
        fail=1
    fi
}

# (these four models have f32 weights)
for model in tiny "$data/tiny-moe.json" "$data/tiny-mla.json" "$data/tiny-mla-moe.json"; do
    for threads in 1 2; do
        same "$model" $threads auto 1 f32
    done
done
if "$helix" info 2>/dev/null | grep -q '^  avx2 *usable'; then
    same tiny 1 avx2 0 f32
    same tiny 2 avx2 1 f32
    same "$data/tiny_bf16.json" 2 avx2 1 bf16
    same "$data/tiny-mla-moe.json" 1 avx2 0 f32
fi
exit $fail
