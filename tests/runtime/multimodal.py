#!/usr/bin/env python3
"""Rewrites a text model's checkpoint as the vision-language checkpoint that holds the same
text model, as transformers saves it, with one vision tensor that a text decode must leave
alone. Standard library only.

KIND gemma3 (a Gemma3ForCausalLM checkpoint -> Gemma3ForConditionalGeneration, Gemma 3 4B
and up) and mistral3 (a Llama-layout checkpoint -> Mistral3ForConditionalGeneration,
Mistral Small 3.1): the text keys under text_config (torch_dtype at the top, a
vision_config beside it), the tensors under language_model.model. and
language_model.lm_head. (FORM old: transformers 4.50's) or model.language_model. with
lm_head. kept (FORM new: 4.52's).

KIND qwen2.5-vl and qwen2-vl (a Qwen2ForCausalLM checkpoint ->
Qwen2_5_VLForConditionalGeneration or Qwen2VLForConditionalGeneration):
FORM old (4.49-4.51) keeps the text keys at the top of config.json with rope_scaling
{"type": "mrope", "mrope_section"} and the tensors under their text names, the vision tower
under visual.; FORM new (4.52 on) puts the text keys under text_config with rope_scaling
{"rope_type": "default", "mrope_section"}, the text tensors under model.language_model.
(lm_head. kept), the vision tower under model.visual. The sections split the head's
rotated pairs 1 : 1.5 : 1.5, as Qwen2.5-VL's [16, 24, 24] do.

KIND llava (a Llama-layout checkpoint -> LlavaForConditionalGeneration, LLaVA 1.5),
llava-next (the same as Mistral's text model -> LlavaNextForConditionalGeneration, LLaVA-NeXT
Mistral, with its image_newline) and llava-onevision (a Qwen2ForCausalLM checkpoint ->
LlavaOnevisionForConditionalGeneration): the text keys under text_config with its
model_type (llama, mistral, qwen2), the tensors as Gemma 3's, the vision parts moved under
model. too in FORM new. KIND internvl (a Qwen3ForCausalLM checkpoint ->
InternVLForConditionalGeneration, InternVL 3.5 in transformers' form) as the LLaVA ones.

KIND idefics3 and smolvlm (a Llama-layout checkpoint -> Idefics3ForConditionalGeneration,
Idefics3 and SmolVLM v1, or SmolVLMForConditionalGeneration, SmolVLM2): the text keys under
text_config (model_type llama), the text tensors under model.text_model. with lm_head. kept,
the vision tower under model.vision_model. and the projector under model.connector.; FORM
new alone, the one form transformers has saved them in.

KIND qwen3-vl (a Qwen3ForCausalLM checkpoint -> Qwen3VLForConditionalGeneration, Qwen3-VL
2B-32B): the text keys under text_config (model_type qwen3_vl_text) with rope_scaling
{"rope_type": "default", "mrope_section", "mrope_interleaved": true}, the sections split
the head's rotated pairs 6 : 5 : 5, as Qwen3-VL's [24, 20, 20] do; tie_word_embeddings
there and at the top alike, as Qwen3-VL's configs write it; the text tensors under
model.language_model. with lm_head. kept, the vision tower (with a deepstack merger) under
model.visual.; FORM new alone, the one form transformers has saved it in (4.57 on).

KIND qwen3-vl-moe (a Qwen3MoeForCausalLM checkpoint -> Qwen3VLMoeForConditionalGeneration,
Qwen3-VL-30B-A3B and 235B-A22B): as qwen3-vl (text_config's model_type qwen3_vl_moe_text),
each MoE layer's routed experts fused as transformers' Qwen3VLMoeTextExperts holds them:
mlp.experts.gate_up_proj [E, hidden, 2 x moe_intermediate] (expert e's gate_proj.weight
transposed in the first half of the last dimension, its up_proj.weight in the second) and
mlp.experts.down_proj [E, moe_intermediate, hidden] (down_proj.weight transposed), in the
shard of expert 0's gate_proj, the per-expert tensors dropped.

KIND llama4 (a Llama4ForCausalLM checkpoint whose experts are stored per expert, as `helix
model synth --family llama4` writes them -> Llama4ForConditionalGeneration, Llama 4 Scout
and Maverick): the text keys under text_config (model_type llama4_text), the tensors as
Gemma 3's, each MoE layer's experts fused as transformers' Llama4TextExperts holds them
(feed_forward.experts.gate_up_proj and down_proj, Qwen3-VL-MoE's layout), the vision model
under vision_model. and the projector under multi_modal_projector.; KIND llama4-text: the
same checkpoint with its experts fused alone (Llama4ForCausalLM, FORM ignored).

usage: multimodal.py SRC DST KIND old|new  (KIND: gemma3, mistral3, qwen2.5-vl, qwen2-vl,
                                           llava, llava-next, llava-onevision, internvl,
                                           idefics3, smolvlm, qwen3-vl, qwen3-vl-moe,
                                           llama4, llama4-text)"""
import json
import os
import re
import struct
import sys

# Qwen3-VL's vision tower and a deepstack merger, dense or MoE
QWEN3_VL_VISION = ["model.visual.blocks.0.norm1.weight",
                   "model.visual.deepstack_merger_list.0.norm.weight"]
KINDS = {
    # kind: (architecture, model_type, the text config's model_type, vision tensors)
    "gemma3": ("Gemma3ForConditionalGeneration", "gemma3", "gemma3_text",
               ["vision_tower.vision_model.post_layernorm.weight"]),
    "mistral3": ("Mistral3ForConditionalGeneration", "mistral3", "mistral",
                 ["vision_tower.ln_pre.weight", "multi_modal_projector.norm.weight"]),
    "qwen2.5-vl": ("Qwen2_5_VLForConditionalGeneration", "qwen2_5_vl", "qwen2_5_vl_text",
                   ["visual.blocks.0.norm1.weight"]),
    "qwen2-vl": ("Qwen2VLForConditionalGeneration", "qwen2_vl", "qwen2_vl_text",
                 ["visual.blocks.0.norm1.weight"]),
    "llava": ("LlavaForConditionalGeneration", "llava", "llama",
              ["vision_tower.vision_model.post_layernorm.weight",
               "multi_modal_projector.linear_1.bias"]),
    "llava-next": ("LlavaNextForConditionalGeneration", "llava_next", "mistral",
                   ["vision_tower.vision_model.post_layernorm.weight", "image_newline"]),
    "llava-onevision": ("LlavaOnevisionForConditionalGeneration", "llava_onevision", "qwen2",
                        ["vision_tower.vision_model.post_layernorm.weight", "image_newline"]),
    "internvl": ("InternVLForConditionalGeneration", "internvl", "qwen3",
                 ["vision_tower.embeddings.cls_token", "multi_modal_projector.layer_norm.weight"]),
    "idefics3": ("Idefics3ForConditionalGeneration", "idefics3", "llama",
                 ["model.vision_model.post_layernorm.weight",
                  "model.connector.modality_projection.proj.weight"]),
    "llama4": ("Llama4ForConditionalGeneration", "llama4", "llama4_text",
               ["vision_model.layernorm_post.weight", "multi_modal_projector.linear_1.weight"]),
    "llama4-text": ("Llama4ForCausalLM", "llama4_text", "llama4_text", []),
    "smolvlm": ("SmolVLMForConditionalGeneration", "smolvlm", "llama",
                ["model.vision_model.post_layernorm.weight",
                 "model.connector.modality_projection.proj.weight"]),
    "qwen3-vl": ("Qwen3VLForConditionalGeneration", "qwen3_vl", "qwen3_vl_text",
                 QWEN3_VL_VISION),
    "qwen3-vl-moe": ("Qwen3VLMoeForConditionalGeneration", "qwen3_vl_moe", "qwen3_vl_moe_text",
                     QWEN3_VL_VISION),
}
QWEN3_VL = ("qwen3-vl", "qwen3-vl-moe")
LLAVA = ("llava", "llava-next", "llava-onevision", "internvl")
IDEFICS3 = ("idefics3", "smolvlm")
NEW_ONLY = IDEFICS3 + QWEN3_VL


def rename(name, kind, form):
    if kind == "llama4-text":
        return name
    if kind in IDEFICS3:
        if name.startswith(("model.vision_model.", "model.connector.")):
            return name
        return "model.text_model." + name[len("model."):] if name.startswith("model.") else name
    if kind in LLAVA and form == "new" and name.startswith(
            ("vision_tower.", "multi_modal_projector.", "image_newline")):
        return "model." + name  # 4.52's: the vision parts under model. too
    if kind in QWEN3_VL:
        if name.startswith("model.") and not name.startswith("model.visual."):
            return "model.language_model." + name[len("model."):]
        return name
    if kind in ("qwen2.5-vl", "qwen2-vl"):
        if form == "new" and (name.startswith("model.") or name.startswith("visual.")):
            return "model." + (name if name.startswith("visual.") else
                               "language_model." + name[len("model."):])
        return name
    if name.startswith("model."):
        rest = name[len("model."):]
        return ("language_model.model." if form == "old" else "model.language_model.") + rest
    if name.startswith("lm_head.") and form == "old":
        return "language_model." + name
    return name


def sections(head_dim):
    pairs = head_dim // 2
    t = pairs // 4
    return [t, (pairs - t) // 2, pairs - t - (pairs - t) // 2]


def sections3(head_dim):
    """Qwen3-VL's [24, 20, 20] of 64 pairs, for head_dim / 2 pairs: 5 / 16 to height and to
    width each, the rest to time."""
    pairs = head_dim // 2
    hw = pairs * 5 // 16
    return [pairs - 2 * hw, hw, hw]


def config(text, kind, form):
    arch, mtype, ttype, _ = KINDS[kind]
    if kind == "llama4-text":
        return text
    top = {"architectures": [arch], "model_type": mtype,
           "vision_config": {"hidden_size": 8}}
    text.pop("architectures")
    if kind in ("qwen2.5-vl", "qwen2-vl"):
        head_dim = text.get("head_dim", text["hidden_size"] // text["num_attention_heads"])
        if form == "old":
            text.update(top)
            text["rope_scaling"] = {"type": "mrope", "mrope_section": sections(head_dim)}
            return text
        text["rope_scaling"] = {"rope_type": "default", "type": "default",
                                "mrope_section": sections(head_dim)}
    if kind in QWEN3_VL:
        head_dim = text.get("head_dim", text["hidden_size"] // text["num_attention_heads"])
        text["rope_scaling"] = {"rope_type": "default", "mrope_section": sections3(head_dim),
                                "mrope_interleaved": True}
        top["tie_word_embeddings"] = text.get("tie_word_embeddings", False)
        top["vision_config"]["deepstack_visual_indexes"] = [0]
    if kind == "gemma3":
        top["mm_tokens_per_image"] = 256
    if kind in ("mistral3", "llava-next"):  # MistralConfig's defaults: a window, 8 KV heads
        text["sliding_window"] = None
        text.setdefault("num_key_value_heads", text["num_attention_heads"])
    text["model_type"] = ttype
    top["torch_dtype"] = text.pop("torch_dtype")
    top["text_config"] = text
    return top


EXPERT = re.compile(r"^model\.layers\.(\d+)\.(mlp|feed_forward)\.experts\.(\d+)\."
                    r"(gate|up|down)_proj\.weight(_scale)?$")
SIZES = {"F32": 4, "BF16": 2, "F16": 2, "F8_E4M3": 1}


def transposed(raw, rows, cols, es):
    """raw, [rows][cols] elements of es bytes, as [cols][rows]."""
    out = bytearray(len(raw))
    for r in range(rows):
        for c in range(cols):
            o = (c * rows + r) * es
            i = (r * cols + c) * es
            out[o:o + es] = raw[i:i + es]
    return bytes(out)


def fuse_experts(shards):
    """shards: [(header, data)] of the source; the per-expert weights of each layer become
    its fused gate_up_proj and down_proj (transformers' Qwen3VLMoeTextExperts), in the shard
    of expert 0's gate_proj. F8_E4M3 weights with a weight_scale per channel ([out, 1]) as
    transformers' FbgemmFp8Llama4TextExperts holds them: gate_up_proj_scale [E, 1, 2 x I]
    (gate's scales, then up's) and down_proj_scale [E, hidden, 1]. Returns [(header, data)]
    with offsets rebuilt."""
    experts = {}  # layer -> {(e, part): (shard index, info, bytes)}
    scales = {}  # layer -> {(e, part): bytes}
    block = {}  # layer -> mlp (Qwen3-VL-MoE) or feed_forward (Llama 4)
    for i, (header, data) in enumerate(shards):
        for k, v in header.items():
            m = EXPERT.match(k)
            if m:
                b, e = v["data_offsets"]
                block[int(m.group(1))] = m.group(2)
                if m.group(5):
                    assert v["dtype"] == "F32" and v["shape"][1:] == [1], k
                    scales.setdefault(int(m.group(1)), {})[(int(m.group(3)), m.group(4))] = \
                        data[b:e]
                    continue
                experts.setdefault(int(m.group(1)), {})[(int(m.group(3)), m.group(4))] = \
                    (i, v, data[b:e])
    extra = [[] for _ in shards]
    for layer, parts in sorted(experts.items()):
        n = 1 + max(e for e, _ in parts)
        where, g0, _ = parts[(0, "gate")]
        dt, es = g0["dtype"], SIZES[g0["dtype"]]
        inter, hidden = g0["shape"]
        gate_up, down = bytearray(), bytearray()
        for e in range(n):
            for r in range(hidden):  # row r: gate's column r, then up's
                for part in ("gate", "up"):
                    raw = parts[(e, part)][2]
                    for c in range(inter):
                        i = (c * hidden + r) * es
                        gate_up += raw[i:i + es]
            down += transposed(parts[(e, "down")][2], hidden, inter, es)
        pre = "model.layers.%d.%s.experts." % (layer, block[layer])
        extra[where].append((pre + "gate_up_proj", dt, [n, hidden, 2 * inter], bytes(gate_up)))
        extra[where].append((pre + "down_proj", dt, [n, inter, hidden], bytes(down)))
        if dt == "F8_E4M3":  # FbgemmFp8Llama4TextExperts' scales, one per output channel
            sc = scales[layer]
            gu = b"".join(sc[(e, "gate")] + sc[(e, "up")] for e in range(n))
            dn = b"".join(sc[(e, "down")] for e in range(n))
            extra[where].append((pre + "gate_up_proj_scale", "F32", [n, 1, 2 * inter], gu))
            extra[where].append((pre + "down_proj_scale", "F32", [n, hidden, 1], dn))
    out = []
    for i, (header, data) in enumerate(shards):
        h, d = {}, bytearray()
        for k, v in header.items():
            if k == "__metadata__":
                h[k] = v
                continue
            if EXPERT.match(k):
                continue
            b, e = v["data_offsets"]
            h[k] = dict(v, data_offsets=[len(d), len(d) + e - b])
            d += data[b:e]
        for name, dt, shape, raw in extra[i]:
            h[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(d), len(d) + len(raw)]}
            d += raw
        out.append((h, bytes(d)))
    return out


def main(argv):
    if len(argv) != 4 or argv[2] not in KINDS or argv[3] not in ("old", "new") or \
            (argv[2] in NEW_ONLY and argv[3] != "new"):
        print(__doc__, file=sys.stderr)
        return 2
    src, dst, kind, form = argv
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(src, "config.json")) as f:
        text = json.load(f)
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(config(text, kind, form), f, indent=1)
    files = sorted(n for n in os.listdir(src) if n.endswith(".safetensors"))
    shards = []
    for name in files:
        with open(os.path.join(src, name), "rb") as f:
            blob = f.read()
        n = struct.unpack("<Q", blob[:8])[0]
        shards.append((json.loads(blob[8:8 + n]), blob[8 + n:]))
    if kind in ("qwen3-vl-moe", "llama4", "llama4-text"):
        shards = fuse_experts(shards)
    where = {}
    for i, name in enumerate(files):
        header, data = shards[i]
        out = {k if k == "__metadata__" else rename(k, kind, form): v for k, v in header.items()}
        for vis in KINDS[kind][3] if i == 0 else []:  # vision tensors: [4] f32 each
            vis = rename(vis, kind, form)
            out[vis] = {"dtype": "F32", "shape": [4],
                        "data_offsets": [len(data), len(data) + 16]}
            data += struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)
        hb = json.dumps(out).encode()
        hb += b" " * (-len(hb) % 8)
        with open(os.path.join(dst, name), "wb") as f:
            f.write(struct.pack("<Q", len(hb)) + hb + data)
        where.update({k: name for k in out if k != "__metadata__"})
    if os.path.exists(os.path.join(src, "model.safetensors.index.json")):
        with open(os.path.join(dst, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {}, "weight_map": where}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
