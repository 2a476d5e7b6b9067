#!/usr/bin/env bash
# Sliding-window attention (helix/model.h: sliding_window, sliding_pattern) in the runtime.
# tiny-window has 3 layers, a window of 45 positions on layers 0 and 1 and layer 2 whole.
# Prompts of 100, 61 and 7 tokens (prompt3_long.txt) are prefilled in chunks of 16 after a
# context of 300, then 6 steps, under --check against the fp64 reference (which windows on
# its own): on 1 rank, KVP 2, TPA 2, 2 x 2 and KVP 4 (the window starts inside one rank's
# block or another's), with 2 threads per rank, with the avx2 and scalar kernels (other KV
# blocks) and with HOP-B micro-batches; every run must give the same tokens. The window must
# change the tokens (the model without it decodes others), and a window longer than every
# sequence must decode bit for bit as none (hidden_hash). The windowed layers keep their KV in
# rings (docs/architecture.md "KV layout"): a run whose appended rows outgrow the ring (the
# window moving past 0 inside a prompt of 100 in chunks of 8, then 40 steps) passes --check
# with the same tokens on 1 rank (a ring) and KVP 2 (none, with avx512's blocks), and at 1M
# tokens the KV memory is that of the one whole-context layer and the rings. tiny-gemma
# (Gemma 3's layer: a window on every other layer turning with its own base, GeGLU, the
# scaled embedding, query_pre_attn_scalar, q/k and output norms) the same way on 1 rank,
# KVP 2 and 2 x 2.
# usage: sliding_window.sh HELIX DATA HELIXRUN
set -u
helix=$1 data=$2 helixrun=$3
. "$(dirname "$0")/report.sh" # $dir (removed at exit), fail=0, json_field FILE EXPR

model=$data/tiny-window.json
args=(--context 300 --steps 6 --batch 3 --prompt-ids "$data/prompt3_long.txt"
      --prefill-chunk 16 --check --json --timeout 60)
declare -A tok # run NAME RANKS ARGS... (report.sh): tokens into tok[NAME]
run one 1 --model "$model"
run kvp2 2 --model "$model" --kvp 2
run tpa2 2 --model "$model" --tpa 2
run 2x2 4 --model "$model" --kvp 2 --tpa 2
run kvp4 4 --model "$model" --kvp 4
run threads2 1 --model "$model" --threads 2
run avx2 1 --model "$model" --kernels avx2
run scalar 1 --model "$model" --kernels scalar
run hopb 2 --model "$model" --kvp 2 --hopb on --micro-batch 1
for name in kvp2 tpa2 2x2 kvp4 threads2 avx2 scalar hopb; do
    [ "${tok[$name]}" = "${tok[one]}" ] ||
        { echo "FAIL: $name: other tokens than 1 rank"; fail=1; }
done
run gemma 1 --model "$data/tiny-gemma.json"
run gemma-kvp2 2 --model "$data/tiny-gemma.json" --kvp 2
run gemma-2x2 4 --model "$data/tiny-gemma.json" --kvp 2 --tpa 2
for name in gemma-kvp2 gemma-2x2; do
    [ "${tok[$name]}" = "${tok[gemma]}" ] ||
        { echo "FAIL: $name: other tokens than 1 rank"; fail=1; }
done

# the rings: on in these runs (slots < a shard's 406 or 203 positions), outgrown in a longer
# one, where the overwritten rows are not compared but the tokens agree with KVP 2's (whose
# shards of 70 positions are shorter than a ring: none)
for name in one kvp2 kvp4; do
    r=$(json_field "$dir/$name.json" "d['kv_ring_slots']")
    { [ "$r" -gt 0 ] && [ "$r" -lt 203 ]; } ||
        { echo "FAIL: $name: windowed layers' ring of $r slots"; fail=1; }
done
saved=("${args[@]}")
args=(--context 0 --steps 40 --batch 3 --prompt-ids "$data/prompt3_long.txt"
      --prefill-chunk 8 --check --json --timeout 60)
run long 1 --model "$model"
# a ring is whole kernel blocks: KVP 2's shards of 70 positions are shorter than one where
# the blocks are avx512's 32 tokens, not where they are 1 (amx, scalar) or 16 (avx2), so
# KVP 2 runs avx512 wherever the CPU has it; elsewhere it has a ring too (not required none)
k1=$(json_field "$dir/long.json" "d['kernels']")
kk=()
case $k1 in amx | avx512) kk=(--kernels avx512) ;; esac
run long-kvp2 2 --model "$model" --kvp 2 "${kk[@]}"
args=("${saved[@]}")
[ "${tok[long]}" = "${tok[long-kvp2]}" ] ||
    { echo "FAIL: long: other tokens with a ring (1 rank) than without (KVP 2)"; fail=1; }
r1=$(json_field "$dir/long.json" "d['kv_ring_slots']")
o1=$(json_field "$dir/long.json" "d['kv_rows_overwritten']")
r2=$(json_field "$dir/long-kvp2.json" "d['kv_ring_slots']")
{ [ "$r1" -gt 0 ] && [ "$o1" -gt 0 ] && { [ "$r2" = 0 ] || [ ${#kk[@]} = 0 ]; }; } ||
    { echo "FAIL: long: ring $r1 slots, $o1 rows overwritten, KVP 2's ring $r2 slots" \
           "(kernels $k1)"; fail=1; }
[ ${#kk[@]} = 0 ] && echo "note: kernels $k1: KVP 2 has a ring of $r2 slots too"

# without the window: other tokens; a window past every sequence (300 + 100 + 6): none
python3 - "$model" "$dir" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
wide = dict(m, name="tiny-window-wide", sliding_window=1000)
for k in ("sliding_window", "sliding_pattern"):
    del m[k]
m["name"] = "tiny-window-none"
json.dump(m, open(sys.argv[2] + "/m-none.json", "w"))
json.dump(wide, open(sys.argv[2] + "/m-wide.json", "w"))
PY
run none 1 --model "$dir/m-none.json"
run wide 1 --model "$dir/m-wide.json"
[ "${tok[none]}" != "${tok[one]}" ] ||
    { echo "FAIL: the window changed no token"; fail=1; }
a=$(json_field "$dir/none.json" "d['hidden_hash']")
b=$(json_field "$dir/wide.json" "d['hidden_hash']")
[ "$a" = "$b" ] ||
    { echo "FAIL: a window past every sequence decodes otherwise than none ($b, $a)"; fail=1; }
r=$(json_field "$dir/wide.json" "d['kv_ring_slots']")
[ "$r" = 0 ] || { echo "FAIL: a window past every sequence has a ring of $r slots"; fail=1; }

# 1M tokens: the two windowed layers' rings beside the whole layer's 1M positions
# (the two runs side by side, one process each: bg_start, report.sh)
for m in one:"$model" none:"$dir/m-none.json"; do
    bg_start "$dir/1m-${m%%:*}.json" "$helix" decode --model "${m#*:}" --context 1M --steps 2 \
        --json
done
for m in one none; do
    bg_wait "$dir/1m-$m.json" || { echo "FAIL: 1M $m: $(cat "$dir/1m-$m.json.err")"; fail=1; }
done
a=$(json_field "$dir/1m-one.json" "d['kv_bytes_per_rank_max']")
b=$(json_field "$dir/1m-none.json" "d['kv_bytes_per_rank_max']")
echo "1M tokens: KV $a bytes with the windows' rings, $b without windows"
[ -n "$a" ] && [ -n "$b" ] && [ $((a * 5)) -lt $((b * 2)) ] ||
    { echo "FAIL: 1M tokens: KV of $a bytes with rings is not under 0.4 of $b"; fail=1; }

# every layer windowed (Mistral's form): the KV is the rings alone, the same at 1M tokens
# and at 2^40 (the largest --context), and the synthetic fill makes only the ring's slots
# (it walked every position: 49 s at 1G tokens, hours at 2^40), on 1 rank and KVP 2
python3 -c 'import json, sys; m = json.load(open(sys.argv[1])); m.update(name="tiny-allwin", sliding_pattern=0); json.dump(m, open(sys.argv[2], "w"))' \
    "$model" "$dir/m-all.json"
for ctx in 1M 1T; do
    bg_start "$dir/all-$ctx.json" timeout -k 5 60 "$helix" decode --model "$dir/m-all.json" \
        --context $ctx --steps 3 --batch 2 --json
done
for ctx in 1M 1T; do
    bg_wait "$dir/all-$ctx.json" ||
        { echo "FAIL: every layer windowed, context $ctx: $(cat "$dir/all-$ctx.json.err")"; fail=1; }
done
timeout -k 5 90 "$helixrun" --no-prefix --oversubscribe -n 2 --timeout 60 -- "$helix" decode --kvp 2 \
    --model "$dir/m-all.json" --context 1T --steps 3 --batch 2 --json >"$dir/all-kvp2.json" \
    2>"$dir/err" || { echo "FAIL: every layer windowed, KVP 2, 1T: $(cat "$dir/err")"; fail=1; }
a=$(json_field "$dir/all-1M.json" "d['kv_bytes_per_rank_max']")
b=$(json_field "$dir/all-1T.json" "d['kv_bytes_per_rank_max']")
echo "every layer windowed: KV $a bytes at 1M tokens, $b at 2^40"
[ -n "$a" ] && [ "$a" = "$b" ] ||
    { echo "FAIL: every layer windowed: KV $a bytes at 1M, $b at 2^40"; fail=1; }
a=$(json_field "$dir/all-1T.json" "d['tokens']")
b=$(json_field "$dir/all-kvp2.json" "d['tokens']")
[ -n "$a" ] && [ "$a" = "$b" ] ||
    { echo "FAIL: every layer windowed at 2^40: KVP 2 decodes $b, 1 rank $a"; fail=1; }
exit $fail
