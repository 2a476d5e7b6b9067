#!/usr/bin/env python3
"""helix plan / sweep --model with a Hugging Face checkpoint: a directory (as decode takes it)
and its config.json plan exactly as the model file `helix model info --json` writes for it
(its "model" member, and the whole document), that model file reads back as the same model
(model_roundtrip: hlx_model_hash, every field), a quantized checkpoint is planned in the
dtype decode holds it in (with --weight-dtype fp8: what it stores unquantized at its width),
and bad input exits 2 naming --model and file:line:column."""
import json
import os
import re
import subprocess
import sys
import tempfile

from plancheck import check, failures, helix  # beside this script

HELIX, ROUNDTRIP = sys.argv[1], sys.argv[2]
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HF_CONFIGS = [os.path.join(SRC, "tests/model/data/hf_config"), os.path.join(SRC, "tests/model/data/hf")]


def run(*args):
    return helix(HELIX, args)


def plan(model, *extra, hw="hgx-h200", context="100000"):
    rc, out, err = run("plan", "--model", model, "--hw", hw, "--context", context, "--json",
                       *extra)
    check(rc in (0, 1) and out.startswith("{"), f"plan --model {model} {extra}: exit {rc}: {err}")
    return json.loads(out) if out.startswith("{") else None


def info_files(ckpt, d, name, config_only=False):
    """model info --json of ckpt: the whole document and its "model" member, as files."""
    rc, out, err = run("model", "info", "--json", *(["--config-only"] if config_only else []),
                       ckpt)
    check(rc == 0, f"model info {ckpt}: exit {rc}: {err}")
    doc = json.loads(out)
    whole, member = os.path.join(d, name + ".info.json"), os.path.join(d, name + ".model.json")
    with open(whole, "w") as f:
        f.write(out)
    with open(member, "w") as f:
        json.dump(doc["model"], f, indent=2)
    return doc, whole, member


def same_model(ckpt, member):
    p = subprocess.run([ROUNDTRIP, ckpt, member], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, f"{ckpt}: {member} reads back as another model: {p.stdout}{p.stderr}")


def same_plans(ckpt, whole, member, layouts, all_forms=True, **kw):
    """plan of the directory, its config.json, the model member and the whole info document,
    for each layout: the same JSON, every value. Returns the first layout's plan."""
    first = None
    for lay in layouts:
        ref = plan(ckpt, *lay, **kw)
        first = first or ref
        for other in ((os.path.join(ckpt, "config.json"), member, whole) if all_forms
                      else (member,)):
            got = plan(other, *lay, **kw)
            check(ref is not None and got == ref,
                  f"plan {lay}: --model {other} differs from --model {ckpt}: " +
                  str([(k, ref[k], got.get(k)) for k in ref if ref[k] != got.get(k)][:4]
                      if ref and got else "no plan"))
    return first


with tempfile.TemporaryDirectory() as d:
    # ---- synthetic checkpoints: dense, MoE (GQA), MLA with MoE, windows (gemma3: every
    # other layer; gpt-oss: MoE, yarn, sinks, a clamped SwiGLU), Granite's multipliers,
    # NoPE layers, and fp8 ones (held in bf16)
    fams = [("dense", []), ("qwen3-moe", []), ("moe-mla", []), ("gemma3", []),
            ("gpt-oss", []), ("granite", []), ("smollm3", []),
            ("dense-fp8", ["--family", "dense", "--dtype", "fp8"]),
            ("moe-mla-fp8", ["--family", "moe-mla", "--dtype", "fp8"])]
    plans = {}
    for name, how in fams:
        ckpt = os.path.join(d, name)
        rc, out, err = run("model", "synth", *(how or ["--family", name]), "--seed", "1",
                           "--out", ckpt)
        check(rc == 0, f"synth {name}: exit {rc}: {err}")
        doc, whole, member = info_files(ckpt, d, name)
        same_model(ckpt, member)
        m = doc["model"]
        layouts = [[], ["--kvp", "2", "--batch", "4"]]
        if m["attn"] == "gqa":
            layouts.append(["--kvp", "2", "--tpa", "2"])
        if m.get("experts", 0) > 0:
            layouts.append(["--kvp", "2", "--ep", "2", "--batch", "8"])
        plans[name] = same_plans(ckpt, whole, member, layouts)
        check(m["weight_dtype"] == doc["held_dtype"],
              f"{name}: the model member's weight_dtype {m['weight_dtype']} is not the held "
              f"dtype {doc['held_dtype']}")
        # zero-valued optional keys the reader bounds away from 0 are left out
        for k in ("sliding_window", "attn_scalar", "attn_softcap", "final_softcap",
                  "embed_mult", "residual_mult", "logits_scale", "rope_local_theta"):
            check(m.get(k, 1) != 0, f"{name}: model info writes {k} 0")

    # what each family's keys say reached the plan
    check(plans["gemma3"]["mem_kv_gib"] < plans["dense"]["mem_kv_gib"],
          "gemma3's windowed layer holds less KV than the dense model's at 100000 tokens")
    # fp8 checkpoints: planned in bf16, as decode holds them (the dense family's bytes), and
    # --weight-dtype still overrides
    for q, base in (("dense-fp8", "dense"), ("moe-mla-fp8", "moe-mla")):
        check(plans[q]["mem_weights_gib"] == plans[base]["mem_weights_gib"],
              f"{q}: weights {plans[q]['mem_weights_gib']} GiB, not the bf16 "
              f"{plans[base]['mem_weights_gib']} of {base}")
    for q in ("dense-fp8", "moe-mla-fp8", "dense"):
        check(plans[q]["weight_dtype"] == "bf16" and plans[q]["kv_dtype"] == "bf16",
              f"{q}: planned with weights {plans[q]['weight_dtype']}, KV {plans[q]['kv_dtype']}")
    over = plan(os.path.join(d, "dense-fp8"), "--weight-dtype", "fp8")
    check(over and over["weight_dtype"] == "fp8", "--weight-dtype fp8 not in plan --json")
    # planned as stored: the Linear layers in fp8, the embedding and the head (512 x 256
    # each) in bf16, as every fp8 checkpoint keeps them
    gib = 2.0 ** 30
    check(over and abs(over["mem_weights_gib"] * gib -
                       (plans["dense"]["mem_weights_gib"] * gib / 2 + 2 * 512 * 256)) < 1,
          f"--weight-dtype fp8 on the fp8 checkpoint: {over and over['mem_weights_gib']} GiB")
    # an ignore list leaving the attention unquantized: its 2 layers' q, k, v and o (256 x
    # 256, 64 x 256, 64 x 256, 256 x 256) a byte more each (config.json alone is planned)
    os.makedirs(os.path.join(d, "dense-fp8-attn"))
    with open(os.path.join(d, "dense-fp8", "config.json")) as f:
        cfg = json.load(f)
    cfg["quantization_config"]["ignore"] = ["lm_head", "re:.*self_attn"]
    with open(os.path.join(d, "dense-fp8-attn", "config.json"), "w") as f:
        json.dump(cfg, f)
    attn = plan(os.path.join(d, "dense-fp8-attn"), "--weight-dtype", "fp8")
    check(attn and over and
          abs((attn["mem_weights_gib"] - over["mem_weights_gib"]) * gib -
              2 * (2 * 256 * 256 + 2 * 64 * 256)) < 1,
          f"fp8 with bf16 attention: {attn and attn['mem_weights_gib']} GiB against "
          f"{over and over['mem_weights_gib']}")
    rc, out, err = run("plan", "--model", os.path.join(d, "dense-fp8"), "--hw", "hgx-h200",
                       "--context", "100000")
    check(rc == 0 and "weights bf16, KV bf16" in out, f"plan table of dense-fp8: {out[:200]}")

    # decode takes the member too: the dense checkpoint holds the runtime's synthetic values
    # for its seed (1), so its tokens are those of its model file's synthetic weights
    toks = []
    for model in (os.path.join(d, "dense"), os.path.join(d, "dense.model.json"),
                  os.path.join(d, "dense.info.json")):
        rc, out, err = run("decode", "--model", model, "--seed", "1", "--context", "64",
                           "--steps", "6", "--json")
        lines = [l for l in out.splitlines() if l.startswith("{")]
        check(rc == 0 and lines, f"decode --model {model}: exit {rc}: {err}")
        toks.append(json.loads(lines[0])["tokens"] if lines else None)
    check(toks[0] and toks[0] == toks[1] == toks[2], f"decode tokens differ: {toks}")

    # sweep --model DIR: the same JSON Lines as the model member's
    outs = []
    for model in (os.path.join(d, "moe-mla"), os.path.join(d, "moe-mla.model.json")):
        jl = os.path.join(d, "sweep%d.jsonl" % len(outs))
        rc, out, err = run("sweep", "--model", model, "--hw", "hgx-h200", "--context", "64K",
                           "--gpus", "1-8", "--jsonl", jl, "--quiet")
        check(rc == 0, f"sweep --model {model}: exit {rc}: {err}")
        outs.append(open(jl).read() if rc == 0 else None)
    check(outs[0] and outs[0] == outs[1], "sweep of moe-mla: the checkpoint's points differ "
          "from its model file's")

    # ---- checkpoint configs with what synth does not make: longrope (Phi-3), dual chunk
    # attention (Qwen2.5-1M), yarn, llama3, dynamic NTK, fp8/int quantization, multimodal
    n = 0
    for top in HF_CONFIGS:
        for f in sorted(os.listdir(top)):
            src = os.path.join(top, f, "config.json") if os.path.isdir(os.path.join(top, f)) \
                else os.path.join(top, f)
            if not f.endswith(".json") and not os.path.isfile(src):
                continue
            name = "cfg-" + f.replace(".json", "")
            ckpt = os.path.join(d, name)
            os.makedirs(ckpt)
            with open(src) as fi, open(os.path.join(ckpt, "config.json"), "w") as fo:
                fo.write(fi.read())
            doc, whole, member = info_files(ckpt, d, name, config_only=True)
            same_model(ckpt, member)
            same_plans(ckpt, whole, member, [["--kvp", "8", "--batch", "8"]], False,
                       hw="gb200-nvl72", context="1M")
            n += 1
    check(n >= 20, f"only {n} checkpoint configs found under {HF_CONFIGS}")

    # ---- refusals: exit 2, naming --model and where
    empty = os.path.join(d, "empty")
    os.makedirs(empty)
    rc, out, err = run("plan", "--model", empty, "--hw", "hgx-h200", "--context", "1K")
    check(rc == 2 and f"--model {empty}: a directory without config.json" in err,
          f"a directory without config.json: exit {rc}: {err}")
    bad = os.path.join(d, "bad")
    os.makedirs(bad)
    cfg = json.load(open(os.path.join(d, "dense", "config.json")))
    cfg["rope_theta"] = "abc"
    text = json.dumps(cfg, indent=2)
    with open(os.path.join(bad, "config.json"), "w") as f:
        f.write(text)
    line = 1 + text[:text.index('"rope_theta"')].count("\n")
    for cmd in ("plan", "sweep"):
        for model in (bad, os.path.join(bad, "config.json")):
            rc, out, err = run(cmd, "--model", model, "--hw", "hgx-h200", "--context", "1K")
            want = f"--model {model}: {bad}/config.json:{line}:3: rope_theta: "
            check(rc == 2 and want in err, f"{cmd} --model {model} (a bad key): exit {rc}, "
                  f"expected '{want}' in: {err}")
    # the model file: the "rope" object beside a flat RoPE key, and a key of another scaling
    m = json.load(open(os.path.join(d, "dense.model.json")))
    m["rope_theta"] = 500000.0
    text = json.dumps(m, indent=2)
    path = os.path.join(d, "twice.json")
    with open(path, "w") as f:
        f.write(text)
    line = 1 + text[:text.index('"rope_theta"')].count("\n")
    rc, out, err = run("plan", "--model", path, "--hw", "hgx-h200", "--context", "1K")
    check(rc == 2 and re.search(rf"--model: {re.escape(path)}:{line}:3: rope_theta: not beside "
                                r"the \"rope\" object", err),
          f"rope twice: exit {rc}: {err}")
    m = json.load(open(os.path.join(d, "dense.model.json")))
    m["rope"]["beta_fast"] = 32.0
    path = os.path.join(d, "kind.json")
    with open(path, "w") as f:
        json.dump(m, f, indent=2)
    rc, out, err = run("plan", "--model", path, "--hw", "hgx-h200", "--context", "1K")
    check(rc == 2 and re.search(rf"{re.escape(path)}:\d+:5: beta_fast: not a parameter", err),
          f"a yarn key with no scaling: exit {rc}: {err}")
    # --help says what --model takes
    rc, out, err = run("plan", "--help")
    check("Hugging Face checkpoint" in out and "model info --json" in out, "plan --help")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
