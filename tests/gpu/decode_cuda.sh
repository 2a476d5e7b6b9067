#!/usr/bin/env bash
# Decode with --device cuda under a launcher (tests/runtime/run_decode.sh: --check against
# the fp64 reference, --hopb off and on bitwise equal), the report saying cuda; then the
# same run with --device cpu must choose the same tokens. Exit 77 without a CUDA device.
# usage: decode_cuda.sh HELIX HELIXRUN none|helixrun NP [decode args...]
set -u
helix=$1 helixrun=$2 launcher=$3 np=$4
shift 4
here=$(dirname "$0")
if ! "$helix" info 2>/dev/null | grep -q '^devices:   [0-9]* CUDA device'; then
    echo "no CUDA device: skipped"; "$helix" info 2>&1 | grep '^devices:'
    exit 77
fi
# Placement gives each rank its own GPU and refuses more ranks than GPUs on a node;
# HELIX_GPU_SHARE=1 places as on a CPU-only node, and each rank then takes GPU local rank
# mod device count: several ranks share the one GPU.
[ "$np" -gt 1 ] && export HELIX_GPU_SHARE=1
HLX_EXPECT='device="cuda"' bash "$here/../runtime/run_decode.sh" "$launcher" "$np" "$helix" \
    "$helixrun" --device cuda "$@" || exit 1
args=("$@")
run() {
    local dev=$1
    if [ "$launcher" = none ]; then
        timeout -k 5 200 "$helix" decode --json --device "$dev" "${args[@]}"
    else
        timeout -k 5 200 "$helixrun" --no-prefix -n "$np" --timeout 180 -- "$helix" decode \
            --json --device "$dev" "${args[@]}"
    fi | grep '^{' | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["tokens"]))'
}
a=$(run cuda) b=$(run cpu)
echo "tokens cuda $a"
echo "tokens cpu  $b"
[ -n "$a" ] && [ "$a" = "$b" ] || { echo "FAIL: cuda and cpu tokens differ"; exit 1; }
echo ok
