#!/usr/bin/env bash
# Packs the shared libraries that the GPU build's programs need from this Debian machine
# (PMIx, UCX, hwloc, jansson, OpenBLAS and what they load: UCX's transport modules,
# PMIx's and hwloc's plugins) into BUILD/devlibs.tar.xz, with their paths as installed
# here, so that a device machine with another distribution (a CUDA image without these
# packages) can run a build made here. ci/device-check.sh unpacks it there without
# replacing any file that machine already has. glibc, the CUDA driver and NCCL/cuBLAS stay
# out: the device machine has its own (NCCL and cuBLAS are found there by device-check.sh).
#
#   bash ci/device-libs.sh [BUILD]       (default build-gpu)
set -eu
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
[ -x "$build/cli/helix" ] || { echo "device-libs: no $build/cli/helix: run make build-gpu first" >&2; exit 2; }
list=$(mktemp)
trap 'rm -f "$list" "$list".*' EXIT
multi=/usr/lib/x86_64-linux-gnu
# the plugin folders, loaded by path at run time (ldd cannot see them)
plugins=()
for d in "$multi/ucx" "$multi/pmix2/lib/pmix"; do
    [ -d "$d" ] && plugins+=("$d")
done
# hwloc's PCI plugin only (its GL, OpenCL and libxml ones would bring X11 and ICU)
[ -f "$multi/hwloc/hwloc_pci.so" ] && plugins+=("$multi/hwloc/hwloc_pci.so")
progs=("$build/cli/helix" "$build/launcher/helixrun")
for p in "$build"/tests/gpu/test_* "$build"/tests/kernels/test_kernels_cuda; do
    [ -x "$p" ] && progs+=("$p")
done
objs=("${progs[@]}")
while IFS= read -r f; do objs+=("$f"); done < <(find "${plugins[@]}" -name '*.so*' -type f)
# every library these load, as resolved here, minus the ones every Linux has or the
# device brings itself
for o in "${objs[@]}"; do
    ldd "$o" 2>/dev/null | awk '$3 ~ /^\// {print $3}'
done | sort -u | grep -v -E '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libcuda|libnccl|libcublas[^/]*|libstdc\+\+|libgcc_s)\.so' \
    >"$list"
for f in $(sed "s,^/lib/,/usr/lib/," "$list"); do
    echo "$f"
    # the name as ldd found it may be a symlink: keep the link and what it points to
    r=$(readlink -f "$f")
    [ "$r" != "$f" ] && echo "$r"
done | sort -u >"$list.files"
# the plugins themselves, without static archives and libtool files
find "${plugins[@]}" \( -type f -o -type l \) -name '*.so*' >>"$list.files"
# PMIx's help texts (its error messages are read from them)
[ -d "$multi/pmix2/share" ] && find "$multi/pmix2/share" -type f >>"$list.files"
# OpenBLAS is found through an alternatives link here (/etc/alternatives is not packed):
# give it its plain name as a link to the real file
tmpd=$(mktemp -d)
ob=$(grep -m1 'openblas-pthread/libopenblas.*\.so$' "$list.files" || true)
grep -v '/libopenblas.so.0$' "$list.files" >"$list.f2" || true
mkdir -p "$tmpd$multi"
[ -n "$ob" ] && ln -s "${ob#"$multi"/}" "$tmpd$multi/libopenblas.so.0"
tar -cJf "$build/devlibs.tar.xz" -C / $(sed 's,^/,,' "$list.f2" | sort -u) \
    -C "$tmpd" $(cd "$tmpd" && find . -type l | sed 's,^\./,,')
rm -rf "$tmpd" "$list.files" "$list.f2"
echo "device-libs: $(tar -tJf "$build/devlibs.tar.xz" | wc -l) files, $(du -h "$build/devlibs.tar.xz" | cut -f1) in $build/devlibs.tar.xz"
