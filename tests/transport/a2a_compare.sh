#!/bin/sh
# Side by side in one run: `helix bench a2a` (the transport's all-to-all) and MPI_Alltoall
# (mpi_a2a, Open MPI over its shared-memory path), same ranks and sizes, alternated twice;
# prints the best median of each per size and the ratio helix / MPI (below 1: faster).
# usage: a2a_compare.sh MPIRUN HELIX MPI_A2A NP [SIZE-FLAGS...]
set -u
mpirun=$1 helix=$2 mpi=$3 np=$4
shift 4
[ $# -gt 0 ] || set -- -b 1K -e 256K -f 2 -n 2000 -w 200
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() { # name program...
    name=$1
    shift
    timeout -k 5 300 "$mpirun" --oversubscribe --allow-run-as-root -n "$np" "$@" >>"$out/$name" ||
        { echo "a2a_compare: $name failed"; cat "$out/$name"; exit 1; }
}
for round in 1 2; do
    run helix "$helix" bench a2a -c 1 --json "$@"
    OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 run mpi -x OMPI_MCA_btl -x OMPI_MCA_pml \
        "$mpi" -c 1 -j "$@"
done
grep -q '"wrong": [1-9]' "$out/helix" "$out/mpi" && { echo "a2a_compare: wrong values"; exit 1; }
echo "# all-to-all, $np ranks, best of 2 runs of the median per operation"
printf '# %12s %12s %12s %8s\n' bytes/peer helix_us mpi_us ratio
awk '
    function field(line, key,   m) {
        if (match(line, "\"" key "\": [0-9.e+-]+")) {
            m = substr(line, RSTART, RLENGTH); sub(/.*: /, "", m); return m + 0
        }
        return -1
    }
    FNR == 1 { prog = (FILENAME ~ /helix$/) ? "helix" : "mpi" }
    /bytes_per_peer/ {
        b = field($0, "bytes_per_peer"); t = field($0, "time_us")
        if (!((prog, b) in best) || t < best[prog, b]) best[prog, b] = t
        sizes[b] = 1
    }
    END {
        for (b in sizes) {
            r = best["mpi", b] > 0 ? best["helix", b] / best["mpi", b] : 0
            printf "  %12d %12.2f %12.2f %8.2f\n", b, best["helix", b], best["mpi", b], r
        }
    }' "$out/helix" "$out/mpi" | sort -n
