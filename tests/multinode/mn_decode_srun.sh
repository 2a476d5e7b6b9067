#!/bin/sh
# helix decode --check, KVP 2 x TPA 2 over two namespace nodes under srun --mpi=pmix: cyclic
# (TPA inside a node, KVP across: the all-to-all crosses the link, and the placement warns
# that a block layout would not) and block (KVP inside a node, no warning).
. "$MN_SRC/tests/multinode/mn_common.sh"
mn_test_up sr 2
run() {
    timeout 180 sh -c "$(command -v ip) netns exec $(mn_ns 0) env SLURM_CONF=$MN_DIR/slurm.conf \
        srun --mpi=pmix --kill-on-bad-exit=1 -N 2 -n 4 $1 env ${3:-$MN_ENV} \
        $HELIX decode --kvp 2 --tpa 2 --context 20000 --steps 4 --check" > "$2" 2>&1 ||
        { cat "$2" >&2; mn_fail "srun $1 failed"; }
}
run "-m cyclic" "$MN_OUT/cyclic"
mn_expect "$MN_OUT/cyclic" "check: +PASS" "cyclic run did not pass --check"
mn_same_hash "$MN_OUT/cyclic" 4
for r in 0 1 2 3; do mn_rank_node "$MN_OUT/cyclic" $r "$(mn_host $((r % 2)))"; done
mn_expect "$MN_OUT/cyclic" "rank 0: hash .* a2a peers over tcp; links 0:self 1:tcp 2:shm 3:tcp" "rank 0's links"
mn_expect "$MN_OUT/cyclic" "crosses more than it must: 2 of 2 all-to-all pairs cross hosts" "no warning for the cyclic layout"
mn_expect "$MN_OUT/cyclic" "local rank 1 from PMIx pmix.lrank" "local rank not from PMIx"

run "-m block" "$MN_OUT/block"
mn_expect "$MN_OUT/block" "check: +PASS" "block run did not pass --check"
mn_same_hash "$MN_OUT/block" 4
for r in 0 1 2 3; do mn_rank_node "$MN_OUT/block" $r "$(mn_host $((r / 2)))"; done
mn_expect "$MN_OUT/block" "rank 0: hash .* a2a peers over shm; links 0:self 1:shm 2:tcp 3:tcp" "rank 0's links (block)"
mn_expect_not "$MN_OUT/block" "crosses more than it must" "block layout warned"
# the two nodes are namespaces of one machine (one boot id): HELIX_BIND=auto binds no rank
# itself, since each node's placement splits the same cores; every rank keeps the CPU share
# its node's slurmd runs on (ci/mn-lib.sh), as a rank confined by a real node's cgroup would
mn_expect_not "$MN_OUT/block" "rank [0-3]: hash [0-9a-f]+, cpus [^ ]+ \(bound\)" "a rank was bound on namespace nodes"
for r in 0 1 2 3; do mn_expect_share "$MN_OUT/block" $r $((r / 2)); done
# UCX left to choose (UCX_TLS unset): each slurmd gives its node its own host name, which
# UCX's shared-memory transports compare, so same-node peers keep shared memory and the
# other node is reached over tcp on the link
run "-m block" "$MN_OUT/default" "-u UCX_TLS HELIX_DEBUG=INFO HELIX_COMM_TIMEOUT=60"
mn_expect "$MN_OUT/default" "check: +PASS" "block run with UCX's own transport choice did not pass --check"
mn_same_hash "$MN_OUT/default" 4
echo "srun 2 nodes, KVP across: step $(mn_step "$MN_OUT/cyclic") ms (all-to-all $(mn_a2a "$MN_OUT/cyclic") ms); KVP inside: step $(mn_step "$MN_OUT/block") ms (all-to-all $(mn_a2a "$MN_OUT/block") ms)"
