#!/bin/sh
# Builds one libFuzzer target with clang (ASan + UBSan + libFuzzer, whatever compiler the
# meson build uses) and runs it from a seed corpus: fuzz.sh SRC BUILD TARGET SECONDS.
# TARGET: model, cluster, settings or topo_xml. Exit 77 (skipped) without clang; non-zero
# when an input crashes or trips a check (the input is kept as BUILD/tests/fuzz/crash-*).
set -u
src=$1
build=$2
target=$3
secs=$4

cc=""
for c in clang clang-14; do
    if command -v "$c" >/dev/null 2>&1; then cc=$c; break; fi
done
if [ -z "$cc" ]; then
    echo "fuzz: no clang: skipped (apt-get install clang)"
    exit 77
fi
out=$build/tests/fuzz
mkdir -p "$out/corpus_$target"
# a clang without the libFuzzer runtime (libclang-rt / libclang-common-dev) cannot build any
# target: skipped, not failed
if [ ! -f "$out/.fuzzer_ok" ]; then
    printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' \
        >"$out/probe.c"
    if ! "$cc" -fsanitize=fuzzer,address "$out/probe.c" -o "$out/probe" 2>/dev/null; then
        echo "fuzz: $cc cannot link -fsanitize=fuzzer: skipped"
        exit 77
    fi
    : >"$out/.fuzzer_ok"
fi

util="util/dtype.c util/file.c util/flags.c util/json.c util/log.c util/param.c util/parse.c util/phase.c util/status.c"
libs="$(pkg-config --libs jansson) -lm"
seeds=""
close=0
case $target in
model)
    files="tests/fuzz/fuzz_model.c model/model.c $util"
    seeds="$src/tests/model/data $src/data/models" ;;
cluster)
    files="tests/fuzz/fuzz_cluster.c cluster/cluster.c model/model.c $util"
    seeds="$src/tests/cluster/data $src/data/clusters" ;;
settings)
    files="tests/fuzz/fuzz_settings.c $util"
    seeds="$src/tests/fuzz/settings_seeds"
    close=2 ;; # the refusals are printed by design: keep them out of the log
topo_xml)
    files="tests/topology/fuzz_topo_xml.c topology/place.c topology/probe.c topology/topo.c
           topology/topo_xml.c cluster/cluster.c model/model.c $util"
    libs="$libs $(pkg-config --libs hwloc) -ldl"
    seeds="$src/tests/data/topology" ;;
*)
    echo "fuzz: unknown target $target (model, cluster, settings, topo_xml)" >&2
    exit 2 ;;
esac

bin=$out/fuzz_$target
# rebuild when a source is newer than the binary
stale=1
if [ -x "$bin" ]; then
    stale=0
    for f in $files; do
        [ "$src/$f" -nt "$bin" ] && stale=1
    done
    for h in "$src"/util/*.h "$src"/*/include/helix/*.h "$src"/tests/fuzz/*.h; do
        [ "$h" -nt "$bin" ] && stale=1
    done
fi
if [ $stale = 1 ]; then
    paths=""
    for f in $files; do paths="$paths $src/$f"; done
    # shellcheck disable=SC2086
    "$cc" -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -I"$src/util/include" -I"$src/model/include" -I"$src/cluster/include" \
        -I"$src/topology/include" -I"$src/util" -I"$src/topology" -I"$src/tests/fuzz" -I"$build" \
        $(pkg-config --cflags jansson hwloc) $paths $libs -o "$bin.tmp" || exit 1
    mv "$bin.tmp" "$bin"
fi
# new inputs go to the corpus in the build tree; the seed folders are read-only
export HELIX_TOPO_VERBS_LIB=none HELIX_TOPO_NVML_LIB=none HELIX_TOPO_CUDA_LIB=none
export HELIX_DATA_DIR="$src/data"
# hwloc's XML reader and libxml2 leak on some malformed inputs: leaks are checked for the
# JSON readers only
leaks=1
[ "$target" = topo_xml ] && leaks=0
export ASAN_OPTIONS="detect_leaks=$leaks" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# shellcheck disable=SC2086
# libFuzzer's own failure code is 77, which meson reads as "skipped": make failures fail
exec "$bin" -max_total_time="$secs" -max_len=16384 -seed=1 -detect_leaks=$leaks \
    -error_exitcode=1 -timeout_exitcode=1 \
    -close_fd_mask=$close -artifact_prefix="$out/crash-$target-" -print_final_stats=1 \
    "$out/corpus_$target" $seeds
