#!/bin/sh
# Two racks of two nodes whose inter-rack link is slowed (tbf): KVP 2 x TPA 2 with a cluster
# file naming the racks (HELIX_CLUSTER). Block order keeps each KVP group in a rack; an
# arbitrary order that puts every KVP group across the racks passes --check too but is
# warned about, with the pair counts of the block layout beside it.
. "$MN_SRC/tests/multinode/mn_common.sh"
mn_test_up rk 4 2 200mbit
cat > "$MN_OUT/racks.json" <<JSON
{
  "name": "two-racks",
  "description": "four CPU-only namespace hosts, two per rack",
  "links": { "shm": { "bw_gbps": 10, "latency_us": 1 }, "tcp": { "bw_gbps": 1, "latency_us": 20 } },
  "nodes": [
    { "name": "$(mn_host 0)", "gpus": 0, "rack": 0 }, { "name": "$(mn_host 1)", "gpus": 0, "rack": 0 },
    { "name": "$(mn_host 2)", "gpus": 0, "rack": 1 }, { "name": "$(mn_host 3)", "gpus": 0, "rack": 1 }
  ]
}
JSON
# the rack link really is slowed: 1 MiB messages from rack 0 to rack 1 stay under twice the
# tbf rate (200 Mbit/s = 25 MB/s; an upper bound, which a loaded machine cannot break)
if command -v ucx_perftest >/dev/null 2>&1; then
    mn_exec 2 env UCX_TLS=tcp,self timeout 60 ucx_perftest -p 13340 > "$MN_OUT/perf.srv" 2>&1 &
    srv=$!
    sleep 0.5
    bw=$(mn_exec 0 env UCX_TLS=tcp,self timeout 60 ucx_perftest "$(mn_addr 2)" -p 13340 -t tag_bw \
         -s 1048576 -n 100 -w 5 2>&1 | awk '/^Final/ { print $7 }')
    wait $srv
    [ -n "$bw" ] || mn_fail "ucx_perftest across the racks gave no figure"
    awk -v b="$bw" 'BEGIN { exit !(b < 50) }' || mn_fail "rack link not limited: $bw MB/s"
    echo "inter-rack link: $bw MB/s with 1 MiB messages (tbf 200 Mbit/s = 25 MB/s)"
fi
printf '%s\n' "$(mn_host 0)" "$(mn_host 2)" "$(mn_host 1)" "$(mn_host 3)" > "$MN_OUT/hostfile"
run() {
    timeout 180 sh -c "$(command -v ip) netns exec $(mn_ns 0) env SLURM_CONF=$MN_DIR/slurm.conf \
        $3 srun --mpi=pmix --kill-on-bad-exit=1 -N 4 -n 4 $1 \
        env $MN_ENV HELIX_CLUSTER=$MN_OUT/racks.json \
        $HELIX decode --kvp 2 --tpa 2 --batch 4 --context 20000 --steps 4 --check" > "$2" 2>&1 ||
        { cat "$2" >&2; mn_fail "srun $1 failed"; }
}
run "-m block" "$MN_OUT/block" ""
o=$MN_OUT/block
mn_expect "$o" "check: +PASS" "block run did not pass --check"
mn_same_hash "$o" 4
mn_expect "$o" 'cluster "two-racks"' "HELIX_CLUSTER not used"
mn_expect "$o" "rank 1: node $(mn_host 1) \(rack 0\)" "rank 1 not in rack 0"
mn_expect "$o" "rank 2: node $(mn_host 2) \(rack 1\)" "rank 2 not in rack 1"
mn_expect_not "$o" "crosses more than it must" "the rack-aligned layout was warned about"

run "-m arbitrary" "$MN_OUT/across" "SLURM_HOSTFILE=$MN_OUT/hostfile"
o=$MN_OUT/across
mn_expect "$o" "check: +PASS" "cross-rack run did not pass --check"
mn_same_hash "$o" 4
mn_expect "$o" "rank 1: node $(mn_host 2) \(rack 1\)" "the hostfile order was not kept"
mn_expect "$o" "crosses more than it must: 2 of 2 all-to-all pairs cross hosts \(2 racks\).* would have 2 \(0 racks\)" \
    "no warning for KVP groups across racks"
echo "2 racks, inter-rack link 200 Mbit/s: KVP in a rack: step $(mn_step "$MN_OUT/block") ms (all-to-all $(mn_a2a "$MN_OUT/block") ms); KVP across racks: step $(mn_step "$o") ms (all-to-all $(mn_a2a "$o") ms)"
