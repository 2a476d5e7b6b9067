#!/usr/bin/env bash
# The start-up memory check's count of a model's weights held unpacked equals, to the byte,
# what the loaded rank holds, and both equal the model's shapes: rank 0's counted weights
# (its INFO line) against the projections it allocated (w_proj_bytes_rank: every dense,
# MLA, LM head and expert matrix as laid out) plus the weights that are not projections,
# computed here from the model's shapes: its vocabulary slice of the embedding (w_dtype;
# none where it is tied to the LM head, the host reading its weights), every MoE layer's
# router [H][E] in f32 with its correction bias [E] (sigmoid scoring) and shared gate
# [H], and MLA's absorbed W_UK (all heads) and W_UV (its query slice) per layer. The
# projections themselves are then computed here matrix by matrix from the shapes and
# rank 0's slices (row-major, or strips of 16 columns with their padding, as the run's
# w_layout says): the count and the load walk the same loops, so a matrix a walk missed
# would be missing from both, and only this catches it. Models: checkpoints of Llama
# (dense GQA), Qwen2-MoE (shared experts and their gate), Qwen3-MoE (a dense layer),
# Mixtral (no shared expert), DeepSeek's MLA with MoE (sigmoid, a dense layer) and V2's
# (no query compression); synthetic weights of a dense GQA model whose columns are not
# multiples of 16 (tied), an MLA one and a GQA MoE one, in strips and row-major; one rank,
# and with HELIXRUN over EP 2, KVP 2 x TPA 2 and TPA 4.
# usage: weights_held.sh HELIX [HELIXRUN]
set -u
helix=$1
helixrun=${2:-}
. "$(dirname "$0")/report.sh" # $dir (removed at exit), fail=0, json_field FILE EXPR

[ -x "$helixrun" ] || helixrun=
for fam in dense qwen2-moe qwen3-moe mixtral moe-mla deepseek-v2; do
    "$helix" model synth --family $fam --seed 3 --out "$dir/$fam" >/dev/null || exit 1
    "$helix" model info --json "$dir/$fam" >"$dir/$fam.info" || exit 1
done
# Synthetic weights (no checkpoint): every field the runtime reads written out, for the
# shapes computed below. Columns here are not multiples of 16 (H 200, vocab 500, ...).
cat >"$dir/odd.json" <<'JSON'
{ "name": "odd", "attn": "gqa", "layers": 3, "hidden": 200, "q_heads": 12, "kv_heads": 4,
  "head_dim": 24, "v_head_dim": 24, "ffn": 300, "vocab": 500, "rope_theta": 10000,
  "norm_eps": 1e-5, "weight_dtype": "bf16", "kv_dtype": "bf16", "tie_embeddings": true }
JSON
cat >"$dir/odd-mla.json" <<'JSON'
{ "name": "odd-mla", "attn": "mla", "layers": 2, "hidden": 200, "q_heads": 6,
  "v_head_dim": 20, "q_lora_rank": 52, "kv_lora_rank": 40, "qk_nope_dim": 20,
  "qk_rope_dim": 8, "ffn": 300, "vocab": 500, "rope_theta": 10000, "norm_eps": 1e-6,
  "weight_dtype": "f32", "kv_dtype": "bf16" }
JSON
cat >"$dir/odd-moe.json" <<'JSON'
{ "name": "odd-moe", "attn": "gqa", "layers": 3, "hidden": 200, "q_heads": 12,
  "kv_heads": 4, "head_dim": 24, "v_head_dim": 24, "ffn": 300, "vocab": 500,
  "rope_theta": 10000, "norm_eps": 1e-5, "weight_dtype": "bf16", "kv_dtype": "bf16",
  "experts": 4, "top_k": 2, "shared_experts": 2, "expert_ffn": 50, "dense_layers": 1 }
JSON
# held NAME MODEL RANKS KVP TPA EP [STRIPS]: decode MODEL (a checkpoint $dir/MODEL with
# its $dir/MODEL.info, or synthetic weights of $dir/MODEL.json) on RANKS ranks with
# HELIX_W_STRIPS=STRIPS (default 1), compare rank 0's count, hold and shapes
held() {
    local name=$1 model=$2 n=$3 kvp=$4 tpa=$5 ep=$6 strips=${7:-1} path
    path=$dir/$model
    [ -d "$path" ] || path=$dir/$model.json
    local args=(decode --model "$path" --kvp "$kvp" --tpa "$tpa" --ep "$ep" --context 60
                --steps 1 --json)
    if [ "$n" = 1 ]; then
        HELIX_W_STRIPS=$strips HELIX_DEBUG=INFO HELIX_DEBUG_SUBSYS=CORE "$helix" "${args[@]}" \
            >"$dir/$name.out" 2>"$dir/$name.err"
    else
        HELIX_W_STRIPS=$strips HELIX_DEBUG=INFO HELIX_DEBUG_SUBSYS=CORE timeout -k 5 150 \
            "$helixrun" --no-prefix --oversubscribe -n "$n" --timeout 120 -- "$helix" \
            "${args[@]}" >"$dir/$name.out" 2>"$dir/$name.err"
    fi || { echo "FAIL: $name: $(cat "$dir/$name.err")"; fail=1; return; }
    python3 - "$name" "$dir/$name.out" "$dir/$name.err" "$path" "$n" "$kvp" "$tpa" "$ep" \
        <<'PY' || fail=1
import json, os, re, sys
name, out, err, path = sys.argv[1:5]
n, kvp, tpa, ep = (int(a) for a in sys.argv[5:9])
d = json.loads([l for l in open(out) if l.startswith('{')][0])
if os.path.isdir(path):  # a checkpoint: its shapes as the runtime reads them
    i = json.load(open(path + '.info'))
    m = i['model']
    es = {'bfloat16': 2, 'float32': 4}[i['torch_dtype']]
    tied = json.load(open(os.path.join(path, 'config.json'))).get('tie_word_embeddings')
else:
    m = json.load(open(path))
    es = {'bf16': 2, 'f32': 4}[m['weight_dtype']]
    tied = m.get('tie_embeddings', False)
counted = re.findall(r'rank 0: the start-up memory check counts \d+ bytes \(weights (\d+),',
                     open(err).read())
assert len(counted) == 1, f'FAIL: {name}: rank 0 said its count {len(counted)} times'
H, V, L, Q = m['hidden'], m['vocab'], m['layers'], m['q_heads']
E = m.get('experts', 0)
dense = m.get('dense_layers', 0) if E else L
mla = m['attn'] == 'mla'
rest = 0 if tied else V // n * H * es  # rank 0's vocabulary slice: [0, V / n)
rest += (L - dense) * 4 * (H * E + (E if m.get('scoring_func') == 'sigmoid' else 0) +
                           (H if m.get('shared_expert_gate') else 0)) if E else 0
if mla:  # TPA 1 here: rank 0's query slice is the first Q / KVP heads
    r = m['kv_lora_rank']
    rest += L * es * (Q * m['qk_nope_dim'] * r + Q // kvp * r * m['v_head_dim'])
# rank 0's projections from the shapes (runtime/layout.c, hlx_moe_layout_init)
strips = d['w_layout'] == 'strips'
def mat(k, c):  # a K x N matrix as laid out (hlx_kernels_w_s16_bytes for strips)
    if strips:
        return k * ((c + 15) // 16 * 16) * es if k > 0 and c > 0 else 0
    return k * c * es
K = 1 if mla else m['kv_heads']
G = Q // K
kvl = K // tpa if tpa <= K else 1
ql = kvl * G if tpa <= K else G // (tpa // K)
dv = m['v_head_dim']
fc = m['ffn'] // n
proj = mat(H, V // n)  # the LM head's vocabulary slice
for l in range(L):
    if mla:  # q_a (with q_lora_rank), q_b or q, kv_a: whole on every rank
        qr, qc = m.get('q_lora_rank', 0), Q * (m['qk_nope_dim'] + m['qk_rope_dim'])
        proj += (mat(H, qr) if qr else 0) + mat(qr or H, qc)
        proj += mat(H, m['kv_lora_rank'] + m['qk_rope_dim'])
    else:  # Q | K | V of rank 0's heads
        proj += mat(H, (ql + kvl) * m['head_dim'] + kvl * dv)
    proj += mat(ql // kvp * dv, H)  # W_o's rows of its query slice
    if l < dense:
        proj += mat(H, 2 * fc) + mat(fc, H)
    else:  # its shared columns, its EP group's experts' columns
        tpf, f = n // ep, m['expert_ffn']
        sc, cc = m.get('shared_experts', 0) * f // n, f // tpf
        proj += mat(H, 2 * sc) + mat(sc, H) + E // ep * (mat(H, 2 * cc) + mat(cc, H))
held = d['w_proj_bytes_rank'] + rest
print(f"{name}: rank 0 counted {counted[0]} bytes of weights, holds {held} "
      f"({d['w_proj_bytes_rank']} of projections, {d['w_layout']}, {rest} other); "
      f"the shapes give {proj} of projections")
assert d['w_packed'] == 0, f'FAIL: {name}: packed weights ({d["w_packed"]})'
assert int(counted[0]) == held, \
    f'FAIL: {name}: the count differs from the weights held by {int(counted[0]) - held} bytes'
assert d['w_proj_bytes_rank'] == proj, \
    f'FAIL: {name}: the projections held differ from the shapes by ' \
    f'{d["w_proj_bytes_rank"] - proj} bytes'
PY
}
held dense dense 1 1 1 1
held qwen2-moe qwen2-moe 1 1 1 1
held qwen3-moe qwen3-moe 1 1 1 1
held mixtral mixtral 1 1 1 1
held moe-mla moe-mla 1 1 1 1
held deepseek-v2 deepseek-v2 1 1 1 1
held odd odd 1 1 1 1
held odd_rows odd 1 1 1 1 0
held odd-mla odd-mla 1 1 1 1
held odd-mla_rows odd-mla 1 1 1 1 0
held odd-moe odd-moe 1 1 1 1
held odd-moe_rows odd-moe 1 1 1 1 0
if [ -n "$helixrun" ]; then
    held qwen2-moe_kvp2_ep2 qwen2-moe 2 2 1 2
    held qwen2-moe_kvp2_tpa2_ep2 qwen2-moe 4 2 2 2
    held mixtral_kvp2_tpa2_ep4 mixtral 4 2 2 4
    held moe-mla_kvp2_ep2 moe-mla 2 2 1 2
    held odd_kvp2_tpa2 odd 4 2 2 1
    held odd_tpa4_rows odd 4 1 4 1 0
    held odd-mla_kvp2 odd-mla 2 2 1 1
    held odd-moe_kvp2_tpa2_ep2 odd-moe 4 2 2 2
fi
exit $fail
