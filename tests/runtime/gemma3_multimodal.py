#!/usr/bin/env python3
"""Rewrites a Gemma3ForCausalLM checkpoint as the Gemma3ForConditionalGeneration checkpoint
that holds the same text model, as transformers saves Gemma 3 4B and up: config.json with the
text model's keys under text_config (torch_dtype at the top, a vision_config beside it), its
tensors under language_model.model. and language_model.lm_head. (FORM old: 4.50's) or
model.language_model. with lm_head. kept (FORM new: 4.52's), and one vision tower tensor
that a text decode must leave alone. Standard library only.

usage: gemma3_multimodal.py SRC DST old|new"""
import json
import os
import struct
import sys


def rename(name, form):
    if name.startswith("model."):
        rest = name[len("model."):]
        return ("language_model.model." if form == "old" else "model.language_model.") + rest
    if name.startswith("lm_head.") and form == "old":
        return "language_model." + name
    return name


def main(argv):
    if len(argv) != 3 or argv[2] not in ("old", "new"):
        print(__doc__, file=sys.stderr)
        return 2
    src, dst, form = argv
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(src, "config.json")) as f:
        text = json.load(f)
    top = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
           "torch_dtype": text.pop("torch_dtype"), "vision_config": {"hidden_size": 8},
           "mm_tokens_per_image": 256}
    text.pop("architectures")
    text["model_type"] = "gemma3_text"
    top["text_config"] = text
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(top, f, indent=1)
    files = sorted(n for n in os.listdir(src) if n.endswith(".safetensors"))
    where = {}
    for i, name in enumerate(files):
        with open(os.path.join(src, name), "rb") as f:
            blob = f.read()
        n = struct.unpack("<Q", blob[:8])[0]
        header = json.loads(blob[8:8 + n])
        data = blob[8 + n:]
        out = {k if k == "__metadata__" else rename(k, form): v for k, v in header.items()}
        if i == 0:  # a vision tower tensor: [4] f32
            out["vision_tower.vision_model.post_layernorm.weight"] = {
                "dtype": "F32", "shape": [4], "data_offsets": [len(data), len(data) + 16]}
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
