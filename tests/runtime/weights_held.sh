#!/usr/bin/env bash
# The start-up memory check's count of an MoE model's weights held unpacked equals, to the
# byte, what the loaded rank holds: rank 0's counted weights (its INFO line) against the
# projections it allocated (w_proj_bytes_rank: every dense, MLA, LM head and expert matrix
# as laid out) plus the weights that are not projections, computed here from the model's
# shapes: its vocabulary slice of the embedding (w_dtype), every MoE layer's router [H][E]
# in f32 with its correction bias [E] (sigmoid scoring) and shared gate [H], and MLA's
# absorbed W_UK (all heads) and W_UV (its query slice) per layer. A matrix counted and not
# loaded, or loaded and not counted, is a difference of its bytes. Models: Qwen2-MoE
# (shared experts and their gate), Mixtral (no shared expert), DeepSeek's MLA with MoE
# (sigmoid, a dense layer); one rank, and with HELIXRUN over EP 2 and KVP 2 x TPA 2.
# usage: weights_held.sh HELIX [HELIXRUN]
set -u
helix=$1
helixrun=${2:-}
. "$(dirname "$0")/report.sh" # $dir (removed at exit), fail=0, json_field FILE EXPR

[ -x "$helixrun" ] || helixrun=
for fam in qwen2-moe mixtral moe-mla; do
    "$helix" model synth --family $fam --seed 3 --out "$dir/$fam" >/dev/null || exit 1
    "$helix" model info --json "$dir/$fam" >"$dir/$fam.info" || exit 1
done
# held NAME FAMILY RANKS KVP TPA EP: decode on RANKS ranks, compare rank 0's count and hold
held() {
    local name=$1 fam=$2 n=$3 kvp=$4 tpa=$5 ep=$6
    local args=(decode --model "$dir/$fam" --kvp "$kvp" --tpa "$tpa" --ep "$ep" --context 60
                --steps 1 --json)
    if [ "$n" = 1 ]; then
        HELIX_DEBUG=INFO HELIX_DEBUG_SUBSYS=CORE "$helix" "${args[@]}" >"$dir/$name.json" \
            2>"$dir/$name.err"
    else
        HELIX_DEBUG=INFO HELIX_DEBUG_SUBSYS=CORE timeout -k 5 150 "$helixrun" --no-prefix \
            --oversubscribe -n "$n" --timeout 120 -- "$helix" "${args[@]}" \
            >"$dir/$name.json" 2>"$dir/$name.err"
    fi || { echo "FAIL: $name: $(cat "$dir/$name.err")"; fail=1; return; }
    python3 - "$name" "$dir/$name.json" "$dir/$name.err" "$dir/$fam.info" "$dir/$fam/config.json" \
        "$n" "$kvp" <<'PY' || fail=1
import json, re, sys
name, out, err, info, cfg = sys.argv[1:6]
n, kvp = int(sys.argv[6]), int(sys.argv[7])
d = json.loads([l for l in open(out) if l.startswith('{')][0])
i = json.load(open(info))
m = i['model']
assert not json.load(open(cfg)).get('tie_word_embeddings'), f'{name}: a tied model here'
es = {'bfloat16': 2, 'float32': 4}[i['torch_dtype']]
counted = re.findall(r'rank 0: the start-up memory check counts \d+ bytes \(weights (\d+),',
                     open(err).read())
assert len(counted) == 1, f'FAIL: {name}: rank 0 said its count {len(counted)} times'
H, V, E, L = m['hidden'], m['vocab'], m['experts'], m['layers']
rest = V // n * H * es  # rank 0's vocabulary slice: [0, V / n)
rest += (L - m['dense_layers']) * 4 * (H * E + (E if m['scoring_func'] == 'sigmoid' else 0) +
                                       (H if m['shared_expert_gate'] else 0))
if m['attn'] == 'mla':  # TPA 1 here: rank 0's query slice is the first Q / KVP heads
    r, Q = m['kv_lora_rank'], m['q_heads']
    rest += L * es * (Q * m['qk_nope_dim'] * r + Q // kvp * r * m['v_head_dim'])
held = d['w_proj_bytes_rank'] + rest
print(f"{name}: rank 0 counted {counted[0]} bytes of weights, holds {held} "
      f"({d['w_proj_bytes_rank']} of projections, {d['w_layout']}, {rest} other)")
assert d['w_packed'] == 0, f'FAIL: {name}: packed weights ({d["w_packed"]})'
assert int(counted[0]) == held, \
    f'FAIL: {name}: the count differs from the weights held by {int(counted[0]) - held} bytes'
PY
}
held qwen2-moe qwen2-moe 1 1 1 1
held mixtral mixtral 1 1 1 1
held moe-mla moe-mla 1 1 1 1
if [ -n "$helixrun" ]; then
    held qwen2-moe_kvp2_ep2 qwen2-moe 2 2 1 2
    held qwen2-moe_kvp2_tpa2_ep2 qwen2-moe 4 2 2 2
    held mixtral_kvp2_tpa2_ep4 mixtral 4 2 2 4
    held moe-mla_kvp2_ep2 moe-mla 2 2 1 2
fi
exit $fail
