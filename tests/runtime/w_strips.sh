#!/usr/bin/env bash
# Weights in strips of 16 columns (the host backend's layout where the kernels read it fast)
# decode the same bits as row-major weights (HELIX_W_STRIPS=0): tokens and hidden_hash of
# dense, MoE, MLA and MLA+MoE models, with a ragged prompt (the prefill's GEMMs of more than
# 8 rows), a batch (the decode's few-row GEMMs) and 1 or 2 threads (column ranges).
# usage: w_strips.sh HELIX DATA
set -u
helix=$1 data=$2
. "$(dirname "$0")/report.sh" # $dir (removed at exit), fail=0, json_field FILE EXPR

for model in tiny "$data/tiny-moe.json" "$data/tiny-mla.json" "$data/tiny-mla-moe.json"; do
    for threads in 1 2; do
        for w in 0 1; do
            HELIX_W_STRIPS=$w "$helix" decode --model "$model" --context 200 --steps 6 \
                --batch 3 --threads $threads --prompt-ids "$data/prompt3.txt" --json \
                >"$dir/$w.json" || exit 1
        done
        lay=$(json_field "$dir/0.json" "d['w_layout']")
        if [ "$lay" != rows ]; then
            echo "FAIL: HELIX_W_STRIPS=0 reports w_layout '$lay', not rows"
            fail=1
        fi
        a=$(json_field "$dir/0.json" "d['tokens'], d['hidden_hash']")
        b=$(json_field "$dir/1.json" "d['tokens'], d['hidden_hash']")
        echo "$(basename "$model") threads $threads: row-major $a"
        echo "$(basename "$model") threads $threads: $(json_field "$dir/1.json" "d['w_layout']")    $b"
        if [ "$a" != "$b" ]; then
            echo "FAIL: $(basename "$model") with $threads threads decodes otherwise in strips"
            fail=1
        fi
    done
done
exit $fail
