#!/bin/sh
# Benchmark (meson benchmark, suite multinode): the decode step and its all-to-all on one
# namespace node and across two (srun, KVP across the link), next to the link's own limits
# measured in the same run with ucx_perftest (UCX tcp: 8 B latency, 64 KiB bandwidth) over
# loopback inside a node and over the veth between nodes. Prints figures and ratios only.
# Each node computes on its own share of the machine's CPUs (ci/mn-lib.sh): one node's 4
# ranks have half the CPUs two nodes' have.
. "$MN_SRC/tests/multinode/mn_common.sh"
command -v ucx_perftest >/dev/null 2>&1 || mn_skip "ucx_perftest is missing (ucx-utils)"
command -v jq >/dev/null 2>&1 || mn_skip "jq is missing"
mn_test_up bn 2
CTX=${MN_BENCH_CONTEXT:-131072}
STEPS=${MN_BENCH_STEPS:-16}
export UCX_TLS=tcp,self

# perf SERVER_NODE ADDR TEST SIZE: ucx_perftest between node 0 and SERVER_NODE at ADDR, on
# the whole machine (not the nodes' CPU shares: two busy-polling processes on one CPU of a
# node would measure the scheduler, not the link)
perf() {
    ip netns exec "$(mn_ns "$1")" env UCX_TLS=tcp,self timeout 60 ucx_perftest -p 13337 \
        > "$MN_OUT/perf.srv" 2>&1 &
    _srv=$!
    sleep 0.5
    ip netns exec "$(mn_ns 0)" env UCX_TLS=tcp,self timeout 60 ucx_perftest "$2" -p 13337 \
        -t "$3" -s "$4" -n 5000 -w 500 > "$MN_OUT/perf.cli" 2>&1
    wait $_srv 2>/dev/null
    # "Final: iters latency(typical avg overall, us) bandwidth(avg overall, MB/s) msg/s(avg
    # overall)": the typical latency resists a loaded machine's outliers
    grep '^Final' "$MN_OUT/perf.cli" | tail -n 1
}
# best of REPS runs: the machine is shared, and load only ever makes a figure worse
REPS=${MN_BENCH_REPS:-3}
best() { # min|max CMD...: the best of REPS outputs of CMD
    _how=$1; shift
    _i=0
    while [ $_i -lt "$REPS" ]; do "$@"; _i=$((_i + 1)); done |
        awk -v how="$_how" 'NR == 1 || (how == "min" ? $1 < b : $1 > b) { b = $1 } END { print b }'
}
lat() { perf "$1" "$2" tag_lat 8 | awk '{print $3}'; }
bw()  { perf "$1" "$2" tag_bw 65536 | awk '{print $6}'; }
lat_lo=$(best min lat 0 127.0.0.1)
lat_x=$(best min lat 1 "$(mn_addr 1)")
bw_lo=$(best max bw 0 127.0.0.1)
bw_x=$(best max bw 1 "$(mn_addr 1)")
echo "link limits (UCX tcp): 8 B typical latency ${lat_lo} us on loopback, ${lat_x} us between nodes;" \
     "64 KiB bandwidth ${bw_lo} MB/s on loopback, ${bw_x} MB/s between nodes"

decode() { # NAME SRUN-ARGS
    timeout 300 sh -c "$(command -v ip) netns exec $(mn_ns 0) env SLURM_CONF=$MN_DIR/slurm.conf \
        srun --mpi=pmix --kill-on-bad-exit=1 $2 env UCX_TLS=tcp,self HELIX_COMM_TIMEOUT=120 \
        $HELIX decode --kvp 2 --tpa 2 --context $CTX --steps $STEPS --json" > "$MN_OUT/$1" 2>"$MN_OUT/$1.err" ||
        { cat "$MN_OUT/$1.err" >&2; mn_fail "decode $1 failed"; }
    jq -r '"\(.step_ms) \(.phase_ms["all-to-all"])"' "$MN_OUT/$1"
}
best_decode() { # NAME SRUN-ARGS: the run with the fastest median step of REPS
    _i=0
    while [ $_i -lt "$REPS" ]; do decode "$1" "$2"; _i=$((_i + 1)); done | sort -n | head -n 1
}
set -- $(best_decode one "-N 1 -n 4 -O"); one_step=$1; one_a2a=$2
set -- $(best_decode block "-N 2 -n 4 -m block"); blk_step=$1; blk_a2a=$2
set -- $(best_decode cyclic "-N 2 -n 4 -m cyclic"); cyc_step=$1; cyc_a2a=$2
echo "decode KVP 2 x TPA 2, context $CTX, UCX tcp, best of $REPS runs (median ms per step / all-to-all per step):"
echo "  (load average while measuring: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores)"
echo "  one node (4 ranks on CPUs $(mn_node_cpus 0)):  $one_step / $one_a2a"
echo "  two nodes, KVP inside:  $blk_step / $blk_a2a"
echo "  two nodes, KVP across:  $cyc_step / $cyc_a2a"
awk -v a="$one_step" -v b="$cyc_step" -v c="$one_a2a" -v d="$cyc_a2a" -v l="$lat_lo" -v x="$lat_x" 'BEGIN {
    printf "ratios across / one node: step %.2f, all-to-all %.2f; link latency between nodes / loopback %.2f\n", b / a, d / c, x / l }'
