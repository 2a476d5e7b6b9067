#!/usr/bin/env python3
"""Rewrites a Qwen2ForCausalLM checkpoint as the Qwen2.5-VL checkpoint that holds the same
text model, as transformers saves Qwen2_5_VLForConditionalGeneration: FORM old (4.49-4.51:
the text keys at the top of config.json, rope_scaling {"type": "mrope", "mrope_section"},
the tensors under their text names, the vision tower under visual.) or FORM new (4.52 and
later: the text keys under text_config with rope_scaling {"rope_type": "default",
"mrope_section"}, the text tensors under model.language_model., lm_head. kept, the vision
tower under model.visual.). One vision tensor that a text decode must leave alone; the
sections split the head's rotated pairs 1 : 1.5 : 1.5 as Qwen2.5-VL's [16, 24, 24] do.
Standard library only.

usage: qwen_vl.py SRC DST old|new"""
import json
import os
import struct
import sys


def sections(head_dim):
    pairs = head_dim // 2
    t = pairs // 4
    return [t, (pairs - t) // 2, pairs - t - (pairs - t) // 2]


def rename(name, form):
    if form == "new" and name.startswith("model."):
        return "model.language_model." + name[len("model."):]
    return name


def main(argv):
    if len(argv) != 3 or argv[2] not in ("old", "new"):
        print(__doc__, file=sys.stderr)
        return 2
    src, dst, form = argv
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(src, "config.json")) as f:
        text = json.load(f)
    head_dim = text.get("head_dim", text["hidden_size"] // text["num_attention_heads"])
    arch = {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
            "vision_config": {"hidden_size": 8, "depth": 1}}
    text.pop("architectures")
    if form == "old":
        text.update(arch)
        text["rope_scaling"] = {"type": "mrope", "mrope_section": sections(head_dim)}
        top = text
    else:
        text["model_type"] = "qwen2_5_vl_text"
        text["rope_scaling"] = {"rope_type": "default", "type": "default",
                                "mrope_section": sections(head_dim)}
        top = dict(arch, torch_dtype=text.pop("torch_dtype"), text_config=text)
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(top, f, indent=1)
    index = {"metadata": {}, "weight_map": {}}
    for shard in sorted(n for n in os.listdir(src) if n.endswith(".safetensors")):
        with open(os.path.join(src, shard), "rb") as f:
            raw = f.read()
        n = struct.unpack("<Q", raw[:8])[0]
        hdr = json.loads(raw[8:8 + n])
        data = raw[8 + n:]
        out, blob = {}, bytearray()
        for name, t in hdr.items():
            if name == "__metadata__":
                continue
            a, b = t["data_offsets"]
            new = rename(name, form)
            out[new] = {"dtype": t["dtype"], "shape": t["shape"],
                        "data_offsets": [len(blob), len(blob) + b - a]}
            blob += data[a:b]
            index["weight_map"][new] = shard
        if shard == sorted(x for x in os.listdir(src) if x.endswith(".safetensors"))[0]:
            vis = ("visual." if form == "old" else "model.visual.") + "blocks.0.norm1.weight"
            out[vis] = {"dtype": "F32", "shape": [8], "data_offsets": [len(blob), len(blob) + 32]}
            blob += struct.pack("<8f", *([1.0] * 8))
            index["weight_map"][vis] = shard
        h = json.dumps(out, separators=(",", ":")).encode()
        h += b" " * (-len(h) % 8)
        with open(os.path.join(dst, shard), "wb") as f:
            f.write(struct.pack("<Q", len(h)) + h + blob)
    if os.path.exists(os.path.join(src, "model.safetensors.index.json")):
        with open(os.path.join(dst, "model.safetensors.index.json"), "w") as f:
            json.dump(index, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
