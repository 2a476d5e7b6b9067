#!/bin/sh
# The job-wide placement every rank computed (HELIX_PLACEMENT_DUMP) equals, field by field,
# what `helix topo` gives on an equivalent cluster file: once with the hosts taken from the
# job (no cluster file) and once with HELIX_CLUSTER naming them.
. "$MN_SRC/tests/multinode/mn_common.sh"
command -v jq >/dev/null 2>&1 || mn_skip "jq is missing (run ci/install-deps.sh as root)"
mn_test_up pl 2
cat > "$MN_OUT/eq.json" <<JSON
{
  "name": "eq",
  "links": { "shm": { "bw_gbps": 10, "latency_us": 1 }, "tcp": { "bw_gbps": 1, "latency_us": 20 } },
  "nodes": [ { "name": "$(mn_host 0)", "gpus": 0 }, { "name": "$(mn_host 1)", "gpus": 0 } ]
}
JSON
"$HELIX" topo --cluster "$MN_OUT/eq.json" --kvp 2 --tpa 2 --json > "$MN_OUT/topo.json" ||
    mn_fail "helix topo failed"
view='{ranks: [.ranks[] | {rank, node, node_name, gpu, domain, numa, cpuset, kvp_rank, tpa_rank, tpf_rank, ep_rank}], pairs: .pairs}'
jq -S "$view" "$MN_OUT/topo.json" > "$MN_OUT/want"
for mode in job file; do
    extra=""
    [ $mode = file ] && extra="HELIX_CLUSTER=$MN_OUT/eq.json"
    rm -f "$MN_OUT"/place.*
    timeout 180 sh -c "$(command -v ip) netns exec $(mn_ns 0) env SLURM_CONF=$MN_DIR/slurm.conf \
        srun --mpi=pmix --kill-on-bad-exit=1 -N 2 -n 4 env $MN_ENV $extra \
        HELIX_PLACEMENT_DUMP=$MN_OUT/place \
        $HELIX decode --kvp 2 --tpa 2 --context 1000 --steps 1" > "$MN_OUT/run.$mode" 2>&1 ||
        { cat "$MN_OUT/run.$mode" >&2; mn_fail "srun ($mode) failed"; }
    for r in 0 1 2 3; do
        [ -s "$MN_OUT/place.$r" ] || mn_fail "rank $r wrote no placement ($mode)"
        jq -S "$view" "$MN_OUT/place.$r" > "$MN_OUT/got.$r"
        diff -u "$MN_OUT/want" "$MN_OUT/got.$r" || mn_fail "rank $r's placement ($mode) differs from helix topo"
    done
    mn_same_hash "$MN_OUT/run.$mode" 4
done
# the comparison can fail: the same file with another layout differs
"$HELIX" topo --cluster "$MN_OUT/eq.json" --kvp 4 --tpa 1 --json | jq -S "$view" > "$MN_OUT/other"
! cmp -s "$MN_OUT/other" "$MN_OUT/got.0" || mn_fail "KVP 4 x TPA 1 compares equal to KVP 2 x TPA 2"
echo "placement of 4 ranks on 2 hosts: every rank agrees with helix topo (hosts from the job and from HELIX_CLUSTER)"
