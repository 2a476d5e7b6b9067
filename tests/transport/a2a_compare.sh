#!/bin/sh
# Side by side in one run: `helix bench a2a` (the transport's all-to-all) and MPI_Alltoall
# (mpi_a2a, Open MPI over its shared-memory path), same ranks, sizes and binding; prints
# the best median of each per size, the ratio helix / MPI (below 1: faster), the cores
# and the load average.
# usage: a2a_compare.sh MPIRUN HELIX MPI_A2A NP [ROUNDS [ITERS-FLAGS...]]
# Sizes: A2A_SIZES (default 1K 2K ... 256K). Each size is run ROUNDS times (default 5),
# helix and MPI alternated, so that another process's burst on this shared machine hits
# both about equally; both are bound the same way (ranks round robin over the cores,
# several per core when there are more ranks than cores): unbound, which ranks shared a
# core changed from run to run and moved either side by 25%.
# A2A_LAUNCHER: an executable that starts "PROGRAM ARGS..." on NP ranks in place of
# MPIRUN's local launch, the same for both programs, with its own placement (the
# namespace nodes' benchmark gives one that runs mpirun across nodes, one rank on each
# node's CPU share); A2A_MPI_BTL: Open MPI's byte transfer layers (default self,vader;
# across nodes self,vader,tcp). A2A_WHERE names the ranks' places in the header.
set -u
mpirun=$1 helix=$2 mpi=$3 np=$4
rounds=${5:-5}
[ $# -gt 5 ] && shift 5 || set -- -n 4000 -w 1000
sizes=${A2A_SIZES:-1K 2K 4K 8K 16K 32K 64K 128K 256K}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
launcher=${A2A_LAUNCHER:-}
btl=${A2A_MPI_BTL:-self,vader}
run() { # name program...
    name=$1
    shift
    if [ -n "$launcher" ]; then
        timeout -k 5 300 "$launcher" "$@" >>"$out/$name"
    else
        timeout -k 5 300 "$mpirun" --oversubscribe --allow-run-as-root --map-by core \
            --bind-to core:overload-allowed -n "$np" "$@" >>"$out/$name"
    fi || { echo "a2a_compare: $name failed"; cat "$out/$name"; exit 1; }
}
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for size in $sizes; do
    r=0
    while [ "$r" -lt "$rounds" ]; do
        run helix "$helix" bench a2a -c 1 --json -b "$size" -e "$size" "$@"
        OMPI_MCA_btl=$btl OMPI_MCA_pml=ob1 run mpi -x OMPI_MCA_btl -x OMPI_MCA_pml \
            "$mpi" -c 1 -j -b "$size" -e "$size" "$@"
        r=$((r + 1))
    done
done
grep -q '"wrong": [1-9]' "$out/helix" "$out/mpi" && { echo "a2a_compare: wrong values"; exit 1; }
echo "# all-to-all, $np ranks ${A2A_WHERE:-on $(nproc) cores}, best of $rounds runs of the median per operation"
echo "# load average before: $load0, after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '# %12s %12s %12s %8s %12s %12s\n' bytes/peer helix_us mpi_us ratio helix_med mpi_med
awk '
    function field(line, key,   m) {
        if (match(line, "\"" key "\": [0-9.e+-]+")) {
            m = substr(line, RSTART, RLENGTH); sub(/.*: /, "", m); return m + 0
        }
        return -1
    }
    function median(list,   a, n, i, j, t) {
        n = split(list, a, " ")
        for (i = 1; i <= n; i++)
            for (j = i + 1; j <= n; j++)
                if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    FNR == 1 { prog = (FILENAME ~ /helix$/) ? "helix" : "mpi" }
    /bytes_per_peer/ {
        b = field($0, "bytes_per_peer"); t = field($0, "time_us")
        if (!((prog, b) in best) || t < best[prog, b]) best[prog, b] = t
        all[prog, b] = all[prog, b] " " t
        sizes[b] = 1
    }
    END {
        for (b in sizes) {
            r = best["mpi", b] > 0 ? best["helix", b] / best["mpi", b] : 0
            printf "  %12d %12.2f %12.2f %8.2f %12.2f %12.2f\n", b, best["helix", b],
                   best["mpi", b], r, median(all["helix", b]), median(all["mpi", b])
        }
    }' "$out/helix" "$out/mpi" | sort -n
