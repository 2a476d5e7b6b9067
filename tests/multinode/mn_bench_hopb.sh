#!/bin/sh
# Benchmark (suite multinode): HOP-B where the exchange costs real time. Two namespace
# nodes, one rank each (KVP 2 across the link); both nodes' interfaces get a tbf qdisc
# with a one-packet burst (1600 bytes), so every byte of an exchange waits for its tokens
# (a 32 KiB burst let the small exchanges through at once), at rates that make the
# exchange m about 10% to 100% of the attention c. The model is tiny's shape widened to
# 32 query heads of 128 (16.5 KB per micro-batch of 2 and peer; tiny's 1 KB messages are
# too small for any rate to matter next to their attention). For each
# setting `helix bench hopb` measures lockstep and pipelined (medians, slowest rank) and
# `helix decode --hopb off|on --json` the whole step. Figures are printed, not asserted: the
# run fails only when a run fails or its JSON lacks a figure.
. "$MN_SRC/tests/multinode/mn_common.sh"
command -v jq >/dev/null 2>&1 || mn_skip "jq is missing"
tc qdisc help 2>&1 | grep -q . || mn_skip "tc is missing"
mn_test_up hb 2
CTX=${MN_HOPB_CONTEXT:-4K}
REPS=${MN_HOPB_REPS:-20}
STEPS=${MN_HOPB_STEPS:-8}
# settings: name|qdisc arguments ("" = none); m from 0 to about c at the default context
SETTINGS=${MN_HOPB_SETTINGS:-"none|
tbf-400mbit|tbf rate 400mbit burst 1600 latency 200ms
tbf-200mbit|tbf rate 200mbit burst 1600 latency 200ms
tbf-100mbit|tbf rate 100mbit burst 1600 latency 200ms
tbf-50mbit|tbf rate 50mbit burst 1600 latency 200ms"}
MODEL=$MN_OUT/hopb-demo.json
cat > "$MODEL" <<EOF
{"name": "hopb-demo", "attn": "gqa", "layers": 1, "hidden": 1024, "q_heads": 32,
 "kv_heads": 8, "head_dim": 128, "ffn": 1024, "vocab": 512, "rope_theta": 10000,
 "norm_eps": 1e-5, "weight_dtype": "f32", "kv_dtype": "bf16"}
EOF

shape() { # QDISC-ARGS: on both nodes' interfaces (egress), replacing what was there
    for _n in 0 1; do
        tc -n "$(mn_ns $_n)" qdisc del dev "$HLXMN_IF" root 2>/dev/null
        [ -z "$1" ] || tc -n "$(mn_ns $_n)" qdisc add dev "$HLXMN_IF" root $1 ||
            mn_fail "tc qdisc add $1 failed"
    done
}
# run OUT ARGS...: one rank on each node through mpirun, UCX over the veth
run() {
    _o=$1; shift
    mn_mpirun_timeout 240 -H "$(mn_addr 0):1,$(mn_addr 1):1" -n 2 -x UCX_TLS=tcp,self \
        -x HELIX_COMM_TIMEOUT=60 "$HELIX" "$@" > "$_o" 2>&1 < /dev/null ||
        { cat "$_o" >&2; mn_fail "$* failed"; }
}
json() { grep '^{' "$1" | tail -n 1; }
field() { # FILE KEY: a number from the run's JSON, or fail
    _v=$(json "$1" | jq -e ".$2" 2>/dev/null) || { cat "$1" >&2; mn_fail "no $2 in $1"; }
    echo "$_v"
}

echo "HOP-B across a shaped link: kvp 2 (one rank per node), model hopb-demo, batch 8," \
     "micro-batch 2, context $CTX, bench $REPS reps, decode $STEPS steps; load average" \
     "$(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
printf '%-16s %7s %7s %7s %6s %9s %9s %9s %6s %6s %7s %7s %9s %9s %7s\n' setting c_ms c_busy \
    m_ms m/c lockstep pipelined predicted ratio r_idle speedup hidden dec_off dec_on speedup
echo "$SETTINGS" | while IFS='|' read -r name qd; do
    [ -n "$name" ] || continue
    shape "$qd"
    o=$MN_OUT/hopb.$name
    run "$o" bench hopb --model "$MODEL" --kvp 2 --batch 8 --micro-batch 2 --context "$CTX" --reps "$REPS" --json
    c=$(field "$o" c_ms); m=$(field "$o" m_ms); cb=$(field "$o" c_busy_ms)
    lk=$(field "$o" lockstep_ms); pl=$(field "$o" pipelined_ms)
    pr=$(field "$o" predicted_ms); hid=$(field "$o" hidden_fraction)
    pri=$(field "$o" predicted_idle_ms)
    for h in off on; do
        run "$o.dec$h" decode --model "$MODEL" --kvp 2 --batch 8 --context "$CTX" --steps "$STEPS" \
            --hopb "$h" --micro-batch 2 --json
        eval "d_$h=\$(field \"\$o.dec$h\" step_ms)"
    done
    awk -v n="$name" -v c="$c" -v cb="$cb" -v m="$m" -v lk="$lk" -v pl="$pl" -v pr="$pr" \
        -v pri="$pri" -v hid="$hid" -v doff="$d_off" -v don="$d_on" 'BEGIN {
        printf "%-16s %7.3f %7.3f %7.3f %6.2f %9.3f %9.3f %9.3f %6.3f %6.3f %7.2f %7.2f %9.3f %9.3f %7.2f\n",
            n, c, cb, m, (c > 0 ? m / c : 0), lk, pl, pr, (pr > 0 ? pl / pr : 0),
            (pri > 0 ? pl / pri : 0), (pl > 0 ? lk / pl : 0), hid, doff, don,
            (don > 0 ? doff / don : 0) }'
done
shape ""
echo "c_busy = attention of a micro-batch while the previous one's exchange is in flight;" \
     "predicted = c + (nb - 1) max(c_busy, m) + m; ratio = pipelined / predicted;" \
     "r_idle = pipelined / (c + (nb - 1) max(c, m) + m);" \
     "speedup = lockstep / pipelined (bench) and step off / step on (decode); hidden =" \
     "share of the exchange the pipeline hid; load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
