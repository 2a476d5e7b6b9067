#!/usr/bin/env bash
# RoPE scaling (llama3 and dynamic NTK on the dense model, yarn on MLA; helix/model.h) in
# the runtime:
# decode with a prompt, --check against the fp64 reference, on 1 rank and on KVP 2 under
# helixrun; the same weights without the scaling give another hidden state (so the scaled
# frequencies are what runs), and a checkpoint's config.json rope_scaling is read; longrope
# from a checkpoint's config.json, its long and short sets each checked and told apart;
# Gemma 3's v5 rope_parameters per layer type decode as its legacy keys do.
# usage: rope_scaling.sh HELIX DATA HELIXRUN
set -u
helix=$1 data=$2 helixrun=$3
. "$(dirname "$0")/report.sh" # $dir (removed at exit), fail=0, json_field FILE EXPR

plain() { # MODEL_JSON OUT: the same model without its rope_scaling keys
    python3 - "$1" "$2" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for k in [k for k in m if k.startswith("rope_") and k not in ("rope_theta", "rope_dim")]:
    del m[k]
json.dump(m, open(sys.argv[2], "w"))
PY
}

# tiny-dynamic: its 621 positions end after the prompt (600 + 19), so the prompt turns with
# the plain base and the steps past 621 each with their own larger one
for model in tiny-llama3 tiny-mla-yarn tiny-dynamic; do
    plain "$data/$model.json" "$dir/plain.json"
    args=(--context 600 --steps 6 --batch 3 --prompt-ids "$data/prompt3.txt" --prefill-chunk 8
          --check --json --timeout 60)
    "$helix" decode --model "$dir/plain.json" "${args[@]}" >"$dir/p.json" 2>"$dir/err" ||
        { echo "FAIL: $model without scaling: $(cat "$dir/err")"; fail=1; continue; }
    "$helix" decode --model "$data/$model.json" "${args[@]}" >"$dir/s1.json" 2>"$dir/err" ||
        { echo "FAIL: $model, 1 rank: $(cat "$dir/err")"; fail=1; continue; }
    timeout -k 5 150 "$helixrun" --no-prefix -n 2 --timeout 120 -- "$helix" decode \
        --model "$data/$model.json" --kvp 2 "${args[@]}" >"$dir/s2.json" 2>"$dir/err" ||
        { echo "FAIL: $model, KVP 2: $(cat "$dir/err")"; fail=1; continue; }
    hp=$(json_field "$dir/p.json" "d['hidden_hash']")
    h1=$(json_field "$dir/s1.json" "d['hidden_hash']")
    t1=$(json_field "$dir/s1.json" "d['tokens']")
    t2=$(json_field "$dir/s2.json" "d['tokens']")
    e1=$(json_field "$dir/s1.json" "d['max_rel_err']")
    e2=$(json_field "$dir/s2.json" "d['max_rel_err']")
    echo "$model: 1 rank $t1 (check rel err $e1), KVP 2 $t2 ($e2); hidden $h1, without scaling $hp"
    [ "$h1" != "$hp" ] || { echo "FAIL: $model: the scaling changed nothing"; fail=1; }
    [ "$t1" = "$t2" ] || { echo "FAIL: $model: KVP 2 gives other tokens"; fail=1; }
done

# dynamic NTK with prompts of three lengths (8, 19 and 3 tokens; 600 + 8 within the 604 of
# the model below, the others past it): each request's prompt turns with the base of its own
# length, each step with its own position's, on 1 rank and on KVP 2 x TPA 2 (the prefill
# and the steps at different positions per request), checked against the reference
python3 - "$data/tiny-dynamic.json" "$dir/dyn604.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["rope_orig_ctx"] = 604
json.dump(m, open(sys.argv[2], "w"))
PY
printf '%s\n' "29 286 167 334 106 216 273 291" \
    "437 425 121 45 46 386 338 285 241 36 317 7 78 110 32 202 417 298 269" "159 43 347" \
    >"$dir/ragged.txt"
rargs=(--model "$dir/dyn604.json" --context 600 --steps 6 --batch 3 --prompt-ids "$dir/ragged.txt"
       --prefill-chunk 4 --check --json --timeout 100)
"$helix" decode "${rargs[@]}" >"$dir/r1.json" 2>"$dir/err" ||
    { echo "FAIL: dynamic, ragged prompts, 1 rank: $(cat "$dir/err")"; fail=1; }
timeout -k 5 200 "$helixrun" --no-prefix -n 4 --timeout 180 -- "$helix" decode --kvp 2 --tpa 2 \
    "${rargs[@]}" >"$dir/r4.json" 2>"$dir/err" ||
    { echo "FAIL: dynamic, ragged prompts, KVP 2 x TPA 2: $(cat "$dir/err")"; fail=1; }
r1=$(json_field "$dir/r1.json" "d['tokens']")
r4=$(json_field "$dir/r4.json" "d['tokens']")
echo "dynamic, ragged prompts: 1 rank $r1, 2 x 2 $r4"
[ "$r1" = "$r4" ] || { echo "FAIL: dynamic, ragged prompts: 2 x 2 gives other tokens"; fail=1; }

# a checkpoint: config.json's rope_scaling (llama3) is read, the run checked; a kind that is
# not implemented is refused naming it
"$helix" model synth --family dense --seed 5 --out "$dir/ck" >/dev/null || exit 1
cp -r "$dir/ck" "$dir/ck3"
cp -r "$dir/ck" "$dir/ckd"
python3 - "$dir/ck3/config.json" "$dir/ckd/config.json" <<'PY'
import json, sys
for path, rs in ((sys.argv[1], {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                "high_freq_factor": 4.0,
                                "original_max_position_embeddings": 128}),
                 (sys.argv[2], {"type": "ntk", "factor": 2.0})):
    c = json.load(open(path))
    c["rope_scaling"] = rs
    json.dump(c, open(path, "w"), indent=2)
PY
for ck in ck ck3; do
    "$helix" decode --model "$dir/$ck" --context 300 --steps 4 --check --json >"$dir/$ck.out" \
        2>"$dir/err" || { echo "FAIL: checkpoint $ck: $(cat "$dir/err")"; fail=1; }
done
a=$(json_field "$dir/ck.out" "d['hidden_hash']")
b=$(json_field "$dir/ck3.out" "d['hidden_hash']")
echo "checkpoint: hidden $a, with llama3 rope_scaling $b (checked)"
[ "$a" != "$b" ] || { echo "FAIL: the checkpoint's rope_scaling changed nothing"; fail=1; }
"$helix" decode --model "$dir/ckd" --steps 1 >/dev/null 2>"$dir/err"
rc=$?
echo "ntk: exit $rc: $(cat "$dir/err")"
[ $rc -eq 2 ] && grep -q 'config.json:[0-9]*:[0-9]*: rope_scaling: "ntk" RoPE scaling is not implemented' "$dir/err" ||
    { echo "FAIL: an unknown rope_scaling kind was not refused naming it"; fail=1; }

# transformers v5's rope_parameters per layer type (Gemma 3): the full_attention set's
# linear scaling and the sliding_attention set's own base decode as the legacy rope_scaling
# and rope_local_base_freq say, checked; the windowed layers' base is the set's (another
# base there gives another hidden state), and the legacy keys change the plain model's
"$helix" model synth --family gemma3 --seed 7 --out "$dir/g3" >/dev/null || exit 1
for v in v5 v5b legacy; do cp -r "$dir/g3" "$dir/g3$v"; done
python3 - "$dir" <<'PY2'
import json, sys
d = sys.argv[1]
c = json.load(open(d + "/g3legacy/config.json"))
c["rope_scaling"] = {"rope_type": "linear", "factor": 8.0}
c["rope_local_base_freq"] = 20000.0
json.dump(c, open(d + "/g3legacy/config.json", "w"), indent=2)
for v, local in (("v5", 20000.0), ("v5b", 10000.0)):
    c = json.load(open(d + "/g3%s/config.json" % v))
    theta = c.pop("rope_theta")
    c.pop("rope_local_base_freq", None)
    c["rope_parameters"] = {
        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": theta},
        "sliding_attention": {"rope_type": "default", "rope_theta": local}}
    json.dump(c, open(d + "/g3%s/config.json" % v, "w"), indent=2)
PY2
declare -A g3_hash g3_tok
for v in "" legacy v5 v5b; do
    "$helix" decode --model "$dir/g3$v" --context 40 --steps 4 --check --json >"$dir/g3$v.out" \
        2>"$dir/err" || { echo "FAIL: gemma3 ${v:-plain}: $(cat "$dir/err")"; fail=1; continue; }
    g3_hash[${v:-plain}]=$(json_field "$dir/g3$v.out" "d['hidden_hash']")
    g3_tok[${v:-plain}]=$(json_field "$dir/g3$v.out" "d['tokens']")
done
echo "gemma3: plain ${g3_hash[plain]-}, legacy keys ${g3_hash[legacy]-} ${g3_tok[legacy]-}," \
     "v5 per-type ${g3_hash[v5]-} ${g3_tok[v5]-}, sliding base 10000 ${g3_hash[v5b]-}"
[ -n "${g3_hash[v5]-}" ] && [ "${g3_hash[v5]}" = "${g3_hash[legacy]-}" ] &&
    [ "${g3_tok[v5]-}" = "${g3_tok[legacy]-}" ] ||
    { echo "FAIL: gemma3: the per-layer-type rope_parameters decode otherwise than the legacy keys"; fail=1; }
[ "${g3_hash[legacy]-x}" != "${g3_hash[plain]-x}" ] && [ "${g3_hash[v5]-x}" != "${g3_hash[v5b]-x}" ] ||
    { echo "FAIL: gemma3: the scaling or the sliding_attention set's base changed nothing"; fail=1; }

# longrope (Phi-3): one factor set per run, long when the run's longest sequence (context +
# prompt + steps) exceeds original_max_position_embeddings. lrA is Phi-3's form (original
# 256 at the top level, max_position_embeddings 8192: factor 32, attention_factor derived);
# lrB and lrC take original 512 in rope_scaling with A's attention factor given, B with A's
# sets swapped. With 19 prompt tokens and 4 steps, --context 234 is 257 positions (A long,
# B and C short) and 233 is 256 (all short): A at 257 must equal B (A's long set), A at 256
# must equal C (A's short set), and C at 257 (the short set) must differ from A there.
for n in A B C; do cp -r "$dir/ck" "$dir/lr$n"; done
python3 - "$dir" <<'PY'
import json, math, sys
d = sys.argv[1]
short = [1.0 + 0.02 * i for i in range(16)]  # head_dim 32: 16 rotated pairs
long_ = [1.0 + 0.6 * i for i in range(16)]
attn = math.sqrt(1 + math.log(8192 / 256) / math.log(256))
for name, top, rs in (
        ("A", {"original_max_position_embeddings": 256, "max_position_embeddings": 8192},
         {"type": "longrope", "short_factor": short, "long_factor": long_}),
        ("B", {}, {"rope_type": "longrope", "short_factor": long_, "long_factor": short,
                   "original_max_position_embeddings": 512, "factor": 16.0,
                   "attention_factor": attn}),
        ("C", {}, {"rope_type": "longrope", "short_factor": short, "long_factor": long_,
                   "original_max_position_embeddings": 512, "factor": 16.0,
                   "attention_factor": attn})):
    p = "%s/lr%s/config.json" % (d, name)
    c = json.load(open(p))
    c.update(top)
    c["rope_scaling"] = rs
    json.dump(c, open(p, "w"), indent=2)
PY
"$helix" model info "$dir/lrA" >"$dir/lri" 2>&1 &&
    grep -q 'longrope scaling: factor 32, original context 256, attention_factor 1.27' "$dir/lri" ||
    { echo "FAIL: longrope: model info: $(cat "$dir/lri")"; fail=1; }
lr_args=(--steps 4 --batch 3 --prompt-ids "$data/prompt3.txt" --prefill-chunk 8 --check --json
         --timeout 60)
declare -A lr_hash lr_tok
for run in A:234 A:233 B:234 C:234 C:233; do
    ck=${run%:*} ctx=${run#*:}
    out="$dir/lr_${ck}_$ctx.json"
    "$helix" decode --model "$dir/lr$ck" --context "$ctx" "${lr_args[@]}" >"$out" \
        2>"$dir/err" || { echo "FAIL: longrope $run, 1 rank: $(cat "$dir/err")"; fail=1; continue; }
    lr_hash[$run]=$(json_field "$out" "d['hidden_hash']")
    lr_tok[$run]=$(json_field "$out" "d['tokens']")
    echo "longrope $run (context $ctx + 19 + 4): hidden ${lr_hash[$run]}," \
         "check rel err $(json_field "$out" "d['max_rel_err']")"
done
for ctx in 234 233; do # both sets on KVP 2, checked, the tokens of 1 rank
    timeout -k 5 150 "$helixrun" --no-prefix -n 2 --timeout 120 -- "$helix" decode \
        --model "$dir/lrA" --context "$ctx" --kvp 2 "${lr_args[@]}" >"$dir/lr2.json" \
        2>"$dir/err" || { echo "FAIL: longrope A:$ctx, KVP 2: $(cat "$dir/err")"; fail=1; continue; }
    [ "$(json_field "$dir/lr2.json" "d['tokens']")" = "${lr_tok[A:$ctx]-}" ] ||
        { echo "FAIL: longrope A:$ctx: KVP 2 gives other tokens"; fail=1; }
done
[ -n "${lr_hash[A:234]-}" ] && [ "${lr_hash[A:234]}" = "${lr_hash[B:234]-}" ] ||
    { echo "FAIL: longrope: 257 positions over original 256 did not rotate with long_factor"; fail=1; }
[ -n "${lr_hash[A:233]-}" ] && [ "${lr_hash[A:233]}" = "${lr_hash[C:233]-}" ] ||
    { echo "FAIL: longrope: 256 positions within original 256 did not rotate with short_factor"; fail=1; }
[ "${lr_hash[A:234]-x}" != "${lr_hash[C:234]-x}" ] && [ "${lr_tok[A:234]-x}" != "${lr_tok[C:234]-x}" ] ||
    { echo "FAIL: longrope: the long and the short set give the same hidden state and tokens"; fail=1; }
exit $fail
