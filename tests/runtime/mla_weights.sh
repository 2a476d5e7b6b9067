#!/usr/bin/env bash
# Writes a `helix model synth --family moe-mla` checkpoint (bf16 and f32) and checks that
# the MLA tensors the runtime reads hold the synthetic source's values there.
# usage: mla_weights.sh HELIX TEST_MLA_WEIGHTS
set -u
helix=$1 test=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for dt in bf16 f32; do
    "$helix" model synth --family moe-mla --out "$dir/$dt" --layers 2 --seed 11 --dtype "$dt" \
        >/dev/null || { echo "FAIL: model synth --dtype $dt"; exit 1; }
    "$test" "$dir/$dt" || exit 1
done
