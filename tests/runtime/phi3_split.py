#!/usr/bin/env python3
"""Phi-3 checkpoint -> the same weights in Llama's layout, written independently of helix:
qkv_proj rows [0, Q*d) q_proj, [Q*d, Q*d + K*d) k_proj, the rest v_proj; gate_up_proj rows
[0, F) gate_proj, [F, 2F) up_proj (transformers' modeling_phi3 split). Stdlib only.
usage: phi3_split.py PHI3_DIR OUT_DIR [LLAMA_DIR]
With LLAMA_DIR, every tensor of OUT_DIR must equal LLAMA_DIR's byte for byte (exit 1)."""
import json, os, struct, sys

SIZES = {"F32": 4, "BF16": 2, "F16": 2, "F64": 8}


def load(d):
    """name -> (dtype, shape, bytes) over the shards of checkpoint dir d."""
    idx = os.path.join(d, "model.safetensors.index.json")
    files = sorted(set(json.load(open(idx))["weight_map"].values())) if os.path.exists(idx) \
        else ["model.safetensors"]
    out = {}
    for f in files:
        raw = open(os.path.join(d, f), "rb").read()
        n = struct.unpack("<Q", raw[:8])[0]
        hdr = json.loads(raw[8:8 + n])
        for name, t in hdr.items():
            if name == "__metadata__":
                continue
            b, e = t["data_offsets"]
            out[name] = (t["dtype"], t["shape"], raw[8 + n + b:8 + n + e])
    return out


def main():
    src, dst = sys.argv[1], sys.argv[2]
    cfg = json.load(open(os.path.join(src, "config.json")))
    assert cfg["architectures"] == ["Phi3ForCausalLM"], cfg["architectures"]
    Q = cfg["num_attention_heads"]
    K = cfg.get("num_key_value_heads") or Q
    d = cfg.get("head_dim") or cfg["hidden_size"] // Q
    F = cfg["intermediate_size"]
    tensors = {}
    for name, (dt, shape, data) in load(src).items():
        row = shape[1] * SIZES[dt] if len(shape) == 2 else 0
        if name.endswith("self_attn.qkv_proj.weight"):
            assert shape[0] == Q * d + 2 * K * d, (name, shape)
            base = name[:-len("qkv_proj.weight")]
            for part, r0, nr in (("q", 0, Q * d), ("k", Q * d, K * d), ("v", Q * d + K * d, K * d)):
                tensors[base + part + "_proj.weight"] = (dt, [nr, shape[1]],
                                                         data[r0 * row:(r0 + nr) * row])
        elif name.endswith("mlp.gate_up_proj.weight"):
            assert shape[0] == 2 * F, (name, shape)
            base = name[:-len("gate_up_proj.weight")]
            tensors[base + "gate_proj.weight"] = (dt, [F, shape[1]], data[:F * row])
            tensors[base + "up_proj.weight"] = (dt, [F, shape[1]], data[F * row:])
        else:
            tensors[name] = (dt, shape, data)
    os.makedirs(dst, exist_ok=True)
    hdr, off, blobs = {}, 0, []
    for name in sorted(tensors):
        dt, shape, data = tensors[name]
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(data)]}
        off += len(data)
        blobs.append(data)
    h = json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    prf = cfg.pop("partial_rotary_factor", 1.0)
    assert prf == 1.0, "Llama has no partial_rotary_factor"
    cfg.pop("hidden_act", None)
    cfg["architectures"] = ["LlamaForCausalLM"]
    cfg["model_type"] = "llama"
    json.dump(cfg, open(os.path.join(dst, "config.json"), "w"), indent=2)
    if len(sys.argv) > 3:
        ref = load(sys.argv[3])
        if set(ref) != set(tensors):
            print("split: tensor names differ from %s: %s" % (sys.argv[3],
                  sorted(set(ref) ^ set(tensors))))
            return 1
        for name in sorted(ref):
            if ref[name][0] != tensors[name][0] or list(ref[name][1]) != tensors[name][1] or \
                    ref[name][2] != tensors[name][2]:
                print("split: %s differs from %s's" % (name, sys.argv[3]))
                return 1
    return 0


sys.exit(main())
