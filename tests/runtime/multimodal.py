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

usage: multimodal.py SRC DST KIND old|new  (KIND: gemma3, mistral3, qwen2.5-vl, qwen2-vl,
                                           llava, llava-next, llava-onevision, internvl,
                                           idefics3, smolvlm, qwen3-vl)"""
import json
import os
import struct
import sys

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
    "smolvlm": ("SmolVLMForConditionalGeneration", "smolvlm", "llama",
                ["model.vision_model.post_layernorm.weight",
                 "model.connector.modality_projection.proj.weight"]),
    "qwen3-vl": ("Qwen3VLForConditionalGeneration", "qwen3_vl", "qwen3_vl_text",
                 ["model.visual.blocks.0.norm1.weight",
                  "model.visual.deepstack_merger_list.0.norm.weight"]),
}
LLAVA = ("llava", "llava-next", "llava-onevision", "internvl")
IDEFICS3 = ("idefics3", "smolvlm")
NEW_ONLY = IDEFICS3 + ("qwen3-vl",)


def rename(name, kind, form):
    if kind in IDEFICS3:
        if name.startswith(("model.vision_model.", "model.connector.")):
            return name
        return "model.text_model." + name[len("model."):] if name.startswith("model.") else name
    if kind in LLAVA and form == "new" and name.startswith(
            ("vision_tower.", "multi_modal_projector.", "image_newline")):
        return "model." + name  # 4.52's: the vision parts under model. too
    if kind == "qwen3-vl":
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
    if kind == "qwen3-vl":
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
    where = {}
    for i, name in enumerate(files):
        with open(os.path.join(src, name), "rb") as f:
            blob = f.read()
        n = struct.unpack("<Q", blob[:8])[0]
        header = json.loads(blob[8:8 + n])
        data = blob[8 + n:]
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
