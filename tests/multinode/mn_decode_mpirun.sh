#!/bin/sh
# helix decode --check, KVP 2 x TPA 2 over two namespace nodes under Open MPI's mpirun (its
# own PMIx server, orted started in the other node through the rsh agent), ranks mapped by
# node so the KVP all-to-all crosses the link.
. "$MN_SRC/tests/multinode/mn_common.sh"
mn_test_up mp 2
timeout 180 sh -c "$(command -v ip) netns exec $(mn_ns 0) mpirun --allow-run-as-root \
    --oversubscribe --mca plm_rsh_agent $MN_DIR/rsh --mca oob_tcp_if_include $HLXMN_IF \
    -H $(mn_addr 0):2,$(mn_addr 1):2 -n 4 --map-by node \
    -x HELIX_DEBUG=INFO -x UCX_TLS=tcp,self -x HELIX_COMM_TIMEOUT=60 \
    $HELIX decode --kvp 2 --tpa 2 --context 20000 --steps 4 --check" > "$MN_OUT/mpirun" 2>&1 ||
    { cat "$MN_OUT/mpirun" >&2; mn_fail "mpirun failed"; }
o=$MN_OUT/mpirun
mn_expect "$o" "check: +PASS" "mpirun run did not pass --check"
mn_same_hash "$o" 4
mn_expect "$o" "job placement over 2 host\(s\)" "the job is not seen on two hosts"
mn_expect "$o" "rank 0: hash .* a2a peers over tcp; links 0:self 1:tcp 2:shm 3:tcp" "rank 0's links"
mn_expect "$o" "rank 1 from PMIx_Init.*local rank 0 from PMIx pmix.lrank; node [^ ]+ from PMIx pmix.hname" "rank 1's sources"
echo "mpirun 2 nodes, KVP across: step $(mn_step "$o") ms (all-to-all $(mn_a2a "$o") ms)"
