#!/usr/bin/env bash
# GPU checks for a machine with an NVIDIA GPU: the gpu test suite, the CUDA attention
# benchmarks against the HBM bandwidth, results (text and JSON) written to one folder.
#
#   ci/device-check.sh [OUT_DIR]        (default: $OUT, else ./device-out)
#
# Build on the CPU machine first (`make build-gpu`: build-gpu/ with -Dcuda=enabled) and carry
# build-gpu/ over; the script builds only when build-gpu/ is missing and meson is present.
# It never waits forever: every step has a timeout; it exits non-zero if any step failed.
set -u
cd "$(dirname "$0")/.."
out=${1:-${OUT:-device-out}}
build=${BUILD_GPU:-build-gpu}
mkdir -p "$out"
fails=0
step() { # step NAME TIMEOUT_S CMD...: runs CMD, output to OUT/NAME.txt, records rc
    local name=$1 t=$2 rc
    shift 2
    echo "== $name: $*"
    timeout -k 5 "$t" "$@" >"$out/$name.txt" 2>&1
    rc=$?
    echo "{\"step\": \"$name\", \"rc\": $rc}" >>"$out/steps.jsonl"
    tail -n 5 "$out/$name.txt"
    case $rc in 0|77) ;; *) fails=$((fails + 1)); echo "   FAILED rc=$rc" ;; esac
    return $rc
}

if [ ! -f "$build/build.ninja" ]; then
    command -v meson >/dev/null || { echo "device-check: no $build/ and no meson: build on the CPU machine and carry it" >&2; exit 2; }
    step setup 300 meson setup "$build" -Dcuda=enabled || exit 1
fi
command -v ninja >/dev/null && step build 300 ninja -C "$build"

step nvidia-smi 30 nvidia-smi
step ldd 30 sh -c "ldd $build/tests/kernels/bench_cuda $build/cli/helix | grep -i 'not found' || echo 'all libraries found'"

# The gpu suite, run directly so that the device machine needs no meson.
step gpu-kernels 120 "$build/tests/kernels/test_kernels_cuda"
step gpu-bench-smoke 120 "$build/tests/kernels/bench_cuda" 65536

# Attention at 1M tokens: bf16 and fp8 KV, GQA group 8, and MLA-sized groups.
for t in bf16 fp8; do
    step "bench-attn-$t-gqa8" 180 "$build/tests/kernels/bench_cuda" 1048576 "$t" 8
done
step bench-attn-bf16-mla 180 "$build/tests/kernels/bench_cuda" 1048576 bf16 128

# Device decode, once the runtime has a CUDA execution backend.
if "$build/cli/helix" decode --help 2>&1 | grep -q -- '--device'; then
    step decode-cuda-1rank 180 "$build/cli/helix" decode --device cuda --context 65536 --steps 8 --check --json
    step decode-cuda-2rank 180 "$build/launcher/helixrun" -n 2 -- "$build/cli/helix" decode --device cuda \
        --kvp 2 --context 65536 --steps 8 --check --json
fi

echo "device-check: $fails step(s) failed; results in $out"
[ "$fails" -eq 0 ]
