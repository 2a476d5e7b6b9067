#!/bin/sh
# Brings up or tears down a namespace test cluster by hand (the multinode tests use
# ci/mn-lib.sh directly): nodes, racks, munge, Slurm and the mpirun rsh agent.
# Usage: ci/mn-cluster.sh up TAG NODES [RACKS [RATE]] | down TAG | env TAG
set -u
. "$(dirname "$0")/mn-lib.sh"
cmd=${1:-}; tag=${2:-}
[ -n "$cmd" ] && [ -n "$tag" ] || { echo "usage: $0 up TAG NODES [RACKS [RATE]] | down TAG | env TAG" >&2; exit 2; }
case "$tag" in *[!a-z0-9]*) echo "$0: TAG: lower-case letters and digits only" >&2; exit 2 ;; esac
case "$cmd" in
up)
    why=$(mn_missing); [ -z "$why" ] || { echo "$0: $why" >&2; exit 1; }
    mn_up_net "$tag" "${3:-2}" "${4:-1}" "${5:-}" && mn_up_slurm || { mn_down; exit 1; }
    echo "cluster $tag up: $MN_NODES node(s) in $MN_RACKS rack(s); export SLURM_CONF=$MN_DIR/slurm.conf"
    echo "  srun:   ip netns exec $(mn_ns 0) srun --mpi=pmix -N 2 -n 4 CMD"
    echo "  mpirun: ip netns exec $(mn_ns 0) taskset -c $(mn_node_cpus 0) unshare --uts sh -c 'hostname $(mn_host 0) && exec mpirun --allow-run-as-root --bind-to none --mca plm_rsh_agent $MN_DIR/rsh -H $(mn_addr 0):2,$(mn_addr 1):2 CMD'"
    echo "  (each node runs on its CPU share: $(awk '{ printf "%s%s %s", sep, $2, $4; sep = ", " }' "$MN_DIR/hosts"))" ;;
down) mn_init "$tag"; mn_down ;;
env)  mn_init "$tag"; echo "SLURM_CONF=$MN_DIR/slurm.conf" ;;
*) echo "$0: unknown command $cmd" >&2; exit 2 ;;
esac
