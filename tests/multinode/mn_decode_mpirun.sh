#!/bin/sh
# helix decode --check, KVP 2 x TPA 2 over two namespace nodes under Open MPI's mpirun (its
# own PMIx server, orted started in the other node through the rsh agent), ranks mapped by
# node so the KVP all-to-all crosses the link: once with UCX_TLS=tcp,self, once with UCX
# choosing its transports on the interface given in UCX_NET_DEVICES (kept by Helix).
. "$MN_SRC/tests/multinode/mn_common.sh"
mn_test_up mp 2
run() {
    mn_mpirun_timeout 180 -H "$(mn_addr 0):2,$(mn_addr 1):2" -n 4 --map-by node \
        -x HELIX_DEBUG=INFO -x HELIX_COMM_TIMEOUT=60 $1 \
        "$HELIX" decode --kvp 2 --tpa 2 --context 20000 --steps 4 --check > "$2" 2>&1 ||
        { cat "$2" >&2; mn_fail "mpirun ($1) failed"; }
}
for mode in tcp dev; do
    o=$MN_OUT/mpirun.$mode
    if [ $mode = tcp ]; then run "-x UCX_TLS=tcp,self" "$o"; else run "-x UCX_NET_DEVICES=$HLXMN_IF" "$o"; fi
    mn_expect "$o" "check: +PASS" "mpirun run ($mode) did not pass --check"
    mn_same_hash "$o" 4
    mn_expect "$o" "job placement over 2 host\(s\)" "the job is not seen on two hosts ($mode)"
    mn_expect "$o" "rank 0: hash .* a2a peers over tcp; links 0:self 1:tcp 2:shm 3:tcp" "rank 0's links ($mode)"
    mn_expect "$o" "rank 1 from PMIx_Init.*local rank 0 from PMIx pmix.lrank; node [^ ]+ from PMIx pmix.hname" "rank 1's sources ($mode)"
    # each node's ranks on its own CPU share, not every node's first rank on core 0
    for r in 0 1 2 3; do mn_expect_share "$o" $r $((r % 2)); done
done
mn_expect "$MN_OUT/mpirun.dev" "rank 3: UCX_NET_DEVICES=$HLXMN_IF \(given\)" "UCX_NET_DEVICES not kept"
echo "mpirun 2 nodes, KVP across: step $(mn_step "$MN_OUT/mpirun.tcp") ms (all-to-all $(mn_a2a "$MN_OUT/mpirun.tcp") ms) with UCX tcp; $(mn_step "$MN_OUT/mpirun.dev") ms ($(mn_a2a "$MN_OUT/mpirun.dev") ms) with UCX's choice on $HLXMN_IF"
