#!/bin/sh
# Three nodes, four ranks placed 2 + 1 + 1 (KVP 4 x TPA 1: one all-to-all group over three
# hosts, uneven), under srun --mpi=pmix (Slurm's block distribution) and under mpirun.
. "$MN_SRC/tests/multinode/mn_common.sh"
mn_test_up un 3
o=$MN_OUT/srun
timeout 180 sh -c "$(command -v ip) netns exec $(mn_ns 0) env SLURM_CONF=$MN_DIR/slurm.conf \
    srun --mpi=pmix --kill-on-bad-exit=1 -N 3 -n 4 env $MN_ENV \
    $HELIX decode --kvp 4 --tpa 1 --context 9999 --steps 3 --check" > "$o" 2>&1 ||
    { cat "$o" >&2; mn_fail "srun -N 3 -n 4 failed"; }
mn_expect "$o" "check: +PASS" "uneven srun run did not pass --check"
mn_same_hash "$o" 4
mn_expect "$o" "job placement over 3 host\(s\)" "the job is not seen on three hosts"
# Slurm's block distribution: two ranks on the first node, one on each of the others
mn_rank_node "$o" 0 "$(mn_host 0)"
mn_rank_node "$o" 1 "$(mn_host 0)"
mn_rank_node "$o" 2 "$(mn_host 1)"
mn_rank_node "$o" 3 "$(mn_host 2)"
mn_expect "$o" "rank 0: hash .* links 0:self 1:shm 2:tcp 3:tcp" "rank 0's links"
mn_expect "$o" "rank 3: hash .* links 0:tcp 1:tcp 2:tcp 3:self" "rank 3's links"

o=$MN_OUT/mpirun
mn_mpirun_timeout 180 -H "$(mn_addr 0):2,$(mn_addr 1):1,$(mn_addr 2):1" -n 4 \
    -x HELIX_DEBUG=INFO -x UCX_TLS=tcp,self -x HELIX_COMM_TIMEOUT=60 \
    "$HELIX" decode --kvp 4 --tpa 1 --context 9999 --steps 3 --check > "$o" 2>&1 ||
    { cat "$o" >&2; mn_fail "mpirun 2 + 1 + 1 failed"; }
mn_expect "$o" "check: +PASS" "uneven mpirun run did not pass --check"
mn_same_hash "$o" 4
mn_expect "$o" "job placement over 3 host\(s\)" "the mpirun job is not seen on three hosts"
echo "3 nodes (2+1+1), KVP 4: srun step $(mn_step "$MN_OUT/srun") ms, mpirun step $(mn_step "$o") ms"
