#!/usr/bin/env python3
"""helix plan / sweep end to end: outputs parsed back and checked (JSON Lines, CSV, SVG,
--json), Pareto points not dominated, bad input gives exit 2 naming the flag or file:line."""
import csv
import json
import math
import os
import sys
import tempfile
import xml.etree.ElementTree as ET

from plancheck import check, failures, helix  # beside this script

HELIX, DATA = sys.argv[1], sys.argv[2]


def run(*args):
    return helix(HELIX, args)


# ---- helix plan --json: the paper's formulas for the Figure 1 example (hand values:
# t_kv = 8*2*1*128*131072*0.5/8e12 s, t_w = 60817408/8e12 s)
rc, out, err = run("plan", "--model", "helix-fig1", "--hw", "gb200-nvl72", "--context", "1M",
                   "--batch", "8", "--kvp", "8", "--tpa", "8", "--json")
check(rc == 0, f"plan --json exit {rc}: {err}")
o = json.loads(out)
for k in ("t_kv_us", "t_w_us", "ttl_ms", "tokens_per_s_user", "tokens_per_s_gpu", "feasible",
          "reason"):
    check(k in o, f"plan --json has {k}")
check(abs(o["t_kv_us"] - 134217728 / 8e12 * 1e6) < 1e-6, f"t_kv_us {o['t_kv_us']}")
check(abs(o["t_w_us"] - 60817408 / 8e12 * 1e6) < 1e-6, f"t_w_us {o['t_w_us']}")
check(o["feasible"] is True and o["reason"] == "", "fig1 example feasible")
check(abs(o["tokens_per_s_user"] * o["ttl_ms"] / 1e3 - 1) < 1e-6, "tokens/s/user = 1/TTL")
check(abs(o["tokens_per_s_gpu"] - 8 / (o["ttl_ms"] / 1e3 * 64)) < 1e-6 * o["tokens_per_s_gpu"],
      "tokens/s/GPU = B/(TTL N)")

# --formula paper: TTL = layers x (t_kv + t_w)
rc, out, err = run("plan", "--model", "helix-fig1", "--hw", "gb200-nvl72", "--context", "1M",
                   "--batch", "8", "--kvp", "8", "--tpa", "8", "--formula", "paper", "--json")
p = json.loads(out)
check(math.isclose(p["ttl_ms"], 126 * (p["t_kv_us"] + p["t_w_us"]) / 1e3, rel_tol=1e-6),
      "paper TTL")

# the table form names every phase and its bound
rc, out, err = run("plan", "--model", "llama-405b", "--hw", "hgx-h200", "--context", "128K",
                   "--strategy", "tp", "--tpa", "8", "--batch", "4")
check(rc == 0 and "attention" in out and "memory" in out and "TTL" in out, "plan table")

# infeasible: exit 1 with the reason
rc, out, err = run("plan", "--model", "llama-405b", "--hw", "gb200-nvl72", "--context", "1M",
                   "--strategy", "tp", "--tpa", "8", "--batch", "64", "--json")
o = json.loads(out)
check(rc == 1 and o["feasible"] is False and "GiB per GPU" in o["reason"], "infeasible plan")

# ---- bad input: exit 2, message names the flag or the file position
bad = [
    (["plan", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1M", "--kvp", "x"], "--kvp"),
    (["plan", "--bogus"], "--bogus"),
    (["plan", "--model", "tiny", "--hw", "gb200-nvl72"], "--context"),
    (["plan", "--model", os.path.join(DATA, "bad_model.json"), "--hw", "gb200-nvl72",
      "--context", "1K"], "bad_model.json:3:3: layers"),
    (["plan", "--model", "tiny", "--hw", os.path.join(DATA, "bad_cluster.json"),
      "--context", "1K"], "bad_cluster.json:5:39: latency_us: expected a number"),
    (["plan", "--model", "lama-405b", "--hw", "gb200-nvl72", "--context", "1K"], "llama-405b"),
    (["plan", "--model", "llama-405b", "--hw", "gb200-nvl72", "--context", "1K", "--tpa", "3",
      "--strategy", "tp"], "tpa 3 does not divide"),
    # helix splits unevenly and cuts heads into pieces as the runtime does, but every rank
    # needs a piece after the a2a: tiny's shards of 4 heads x 32 values give 128 at most
    (["plan", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K", "--kvp", "129",
      "--tpa", "2"], "a TPA shard's 4 query head(s) of 32 values give at most 128 pieces, "
     "fewer than kvp"),
    (["plan", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K", "--hopb", "maybe"],
     "--hopb"),
    (["plan", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K", "--set", "NOPE=1"],
     "NOPE"),
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K", "--gpus", "5-2"],
     "--gpus"),
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K", "--strategies",
      "tp,fsdp"], "fsdp"),
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K", "--batch", "0"],
     "--batch"),
    # list flags: an empty element names the flag and its position; an element given twice
    # names both places (it used to be skipped, or evaluated twice)
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72,,hgx-h200", "--context", "1K"],
     "--hw 'gb200-nvl72,,hgx-h200': element 2 is empty"),
    (["sweep", "--model", "tiny", "--hw", ",gb200-nvl72", "--context", "1K"],
     "--hw ',gb200-nvl72': element 1 is empty"),
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72,", "--context", "1K"],
     "--hw 'gb200-nvl72,': element 2 is empty"),
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K", "--strategies",
      "tp,,helix"], "--strategies 'tp,,helix': element 2 is empty"),
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K", "--batch", "1,2,"],
     "--batch '1,2,': element 3 is empty"),
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K", "--vary",
      "rdma_gbps=25,"], "--vary 'rdma_gbps=25,': element 2 is empty"),
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K", "--strategies",
      "tp,tp,helix"], "--strategies: 'tp' (element 2) repeats 'tp' (element 1)"),
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K", "--strategies",
      "dp,helix,dp-ep"], "--strategies: 'dp-ep' (element 3) repeats 'dp' (element 1)"),
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72,hgx-h200", "--sweep-hw", "gb200-nvl72",
      "--context", "1K"], "--sweep-hw: 'gb200-nvl72' (element 1) repeats 'gb200-nvl72' "
     "(--hw element 1)"),
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72," + os.path.join(
        os.environ["HELIX_DATA_DIR"], "clusters", "gb200-nvl72.json"), "--context", "1K"],
     "(element 2) is cluster 'gb200-nvl72', as is 'gb200-nvl72' (--hw element 1)"),
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K", "--batch",
      "1,1K,1024"], "--batch: '1024' (element 3) repeats '1K' (element 2)"),
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K", "--vary",
      "rdma_gbps=25,25.0"], "--vary: '25.0' (element 2) repeats '25' (element 1)"),
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K", "--vary",
      "rdma_gbps=25", "--vary", "rdma_gbps=50"], "--vary: key 'rdma_gbps' is given twice"),
    # a value a double cannot hold is said as such (the common number rule), where 1e-400
    # was read as 0 and refused as "not a positive number", 4e-320 taken and 1e400 "not a
    # number"
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K", "--vary",
      "rdma_us=1,1e-400"], "element 2: '1e-400' underflows: too small to represent"),
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K", "--vary",
      "rdma_gbps=4e-320"], "element 1: '4e-320' underflows"),
    (["sweep", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K", "--vary",
      "rdma_gbps=1e400"], "element 1: '1e400' is too large to represent"),
    # --micro-batch is the runtime's HOP-B size on this machine: --hw local, --hopb on
    (["plan", "--model", "tiny", "--hw", "hgx-h200", "--context", "1K", "--micro-batch", "2"],
     "--micro-batch 2: requests per HOP-B micro-batch of the runtime on this machine: only "
     "with --hw local"),
    (["plan", "--model", "tiny", "--hw", "local", "--context", "1K", "--micro-batch", "0"],
     "--micro-batch"),
    (["plan", "--model", "tiny", "--hw", "local", "--context", "1K", "--kvp", "2", "--batch",
      "4", "--micro-batch", "5"], "--micro-batch 5: expected 1 .. --batch 4"),
]
for args, msg in bad:
    rc, out, err = run(*args)
    check(rc == 2 and msg in err, f"{' '.join(args)}: exit {rc}, stderr {err.strip()!r}")

# a bad --set value is said once, naming the flag and the setting (it was the settings
# table's log line, "helix HOST:PID:-1 ERROR setting PLAN_HBM_RESERVE: ...")
for cmd, val, msg in (("plan", "PLAN_HBM_RESERVE=2", "'2' is outside [0, 0.9]"),
                      ("sweep", "helix_plan_act_bytes=1x", "'1x' is not a finite decimal")):
    rc, out, err = run(cmd, "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K",
                       "--set", val)
    name = val.split("=")[0].upper().replace("HELIX_", "")
    check(rc == 2 and err.startswith(f"helix {cmd}: --set {name}: {msg}") and
          err.count("\n") == 1, f"{cmd} --set {val}: exit {rc}, stderr {err!r}")

# ---- KVP past a shard's query heads: each head cut into pieces (hlx_helix_split), as the
# runtime runs it. tiny's shards of 4 heads over KVP 5: halves, 2 a rank at most.
rc, out, err = run("plan", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K",
                   "--kvp", "5", "--tpa", "2", "--json")
check(rc == 0 and json.loads(out)["feasible"] is True and json.loads(out)["q_split"] == 2,
      f"tiny kvp 5 x tpa 2: {rc} {out!r} {err!r}")
rc, out, err = run("plan", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K",
                   "--kvp", "5", "--tpa", "2")
check(rc == 0 and "heads: each query head in 2 pieces of 16 value(s) for the all-to-all (kvp 5 "
      "exceeds a tpa shard's 4 heads)" in out, f"tiny kvp 5 x tpa 2 text: {rc} {out!r}")
rc, out, err = run("plan", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K",
                   "--kvp", "4", "--tpa", "2")
check(rc == 0 and "heads:" not in out, f"tiny kvp 4 x tpa 2 (whole heads): {rc} {out!r}")
# Llama 4 Scout (40 query heads, 8 KV heads of 128) at 10M tokens on GB200 NVL72: TPA 8
# leaves 5 heads a shard, so KVP 8 (refused before the pieces) cuts them into eighths; it is
# now Helix's most interactive layout (docs/planner.md), ahead of medha's KVP 8 x TPA 8
with tempfile.TemporaryDirectory() as d:
    scout = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "model", "data",
                         "hf_config", "llama4-scout.json")
    with open(scout) as fi, open(os.path.join(d, "config.json"), "w") as fo:
        fo.write(fi.read())
    rc, out, err = run("plan", "--model", d, "--hw", "gb200-nvl72", "--context", "10M",
                       "--strategy", "helix", "--kvp", "8", "--tpa", "8", "--tpf", "64",
                       "--batch", "1", "--json")
    check(rc == 0 and json.loads(out)["feasible"] is True, f"Scout kvp 8 x tpa 8: {rc} {err!r}")
    jl = os.path.join(d, "scout.jsonl")
    rc, out, err = run("sweep", "--model", d, "--hw", "gb200-nvl72", "--context", "10M",
                       "--strategies", "medha,helix", "--quiet", "--jsonl", jl)
    best = [line for line in out.splitlines() if ": best interactivity: helix" in line]
    check(rc == 0 and len(best) == 1 and "(helix kvp=8 tpa=8 " in best[0] and
          "(medha) = " in best[0] and float(best[0].rsplit("= ", 1)[1].rstrip("x")) > 1.0,
          f"Scout sweep: {rc} {out!r} {err!r}")
    # each point's q_split as plan gives it: eighths at KVP 8 x TPA 8 (5 heads a shard),
    # whole heads at KVP 5 and for medha
    pts = [json.loads(line) for line in open(jl)] if rc == 0 else []
    cut = {(p["strategy"], p["kvp"], p["tpa"]): p["q_split"] for p in pts}
    check(cut.get(("helix", 8, 8)) == 8 and cut.get(("helix", 5, 8)) == 1 and
          cut.get(("medha", 8, 8)) == 1, f"Scout sweep q_split: {[(k, v) for k, v in cut.items() if k[1] in (5, 8) and k[2] == 8]}")
    rc, out, err = run("plan", "--model", d, "--hw", "gb200-nvl72", "--context", "10M",
                       "--strategy", "helix", "--kvp", "16", "--tpa", "4", "--json")
    check(rc in (0, 1) and json.loads(out)["q_split"] == cut.get(("helix", 16, 4)) > 1,
          f"Scout kvp 16 x tpa 4: plan's q_split against the sweep's {cut.get(('helix', 16, 4))}")

# two outputs onto one file (the same name, or another spelling of it): refused before the
# sweep, nothing written, where the second silently replaced the first
with tempfile.TemporaryDirectory() as d:
    d = os.path.realpath(d)
    f = os.path.join(d, "points.out")
    for a, b in ((f, f), (f, os.path.join(d, ".", "..", os.path.basename(d), "points.out"))):
        rc, out, err = run("sweep", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K",
                           "--gpus", "1-2", "--batch", "1", "--csv", a, "--jsonl", b, "--quiet")
        check(rc == 2 and f"--csv {a} and --jsonl {b} are one file ({f})" in err and
              not os.path.exists(f), f"sweep --csv {a} --jsonl {b}: exit {rc}, stderr {err!r}")

# ---- helix sweep over two clusters; every output parsed back
with tempfile.TemporaryDirectory() as d:
    jl, cs, sv = (os.path.join(d, n) for n in ("p.jsonl", "p.csv", "p.svg"))
    rc, out, err = run("sweep", "--model", "llama-405b", "--hw", "gb200-nvl72",
                       "--sweep-hw", "hgx-h200", "--context", "256K", "--gpus", "1-32",
                       "--batch", "1-256", "--jsonl", jl, "--csv", cs, "--svg", sv)
    check(rc == 0, f"sweep exit {rc}: {err}")
    check(err == "", f"no progress on a non-terminal stderr: {err!r}")
    check("best interactivity" in out and "matched interactivity" in out, "sweep summary")
    pts = [json.loads(line) for line in open(jl)]
    rows = list(csv.DictReader(open(cs)))
    check(len(pts) > 500 and len(pts) == len(rows), f"{len(pts)} points, {len(rows)} rows")
    keys = ("strategy", "gpus", "kvp", "tpa", "tpf", "ep", "pp", "batch", "hopb", "q_split",
            "ttl_ms", "tokens_per_s_user", "tokens_per_s_gpu", "feasible", "pareto")
    for p, r in zip(pts, rows):
        for k in keys:
            if k not in p:
                check(False, f"jsonl point lacks {k}")
                break
        check(p["gpus"] == p["kvp"] * p["tpa"] * p["dp"] * p["pp"] and 1 <= p["gpus"] <= 32,
              f"gpus {p}")
        check(int(r["q_split"]) == p["q_split"] == 1, "llama-405b's heads stay whole")
        check(p["strategy"] == r["strategy"] and int(r["batch"]) == p["batch"] and
              math.isclose(float(r["tokens_per_s_gpu"]), p["tokens_per_s_gpu"], rel_tol=1e-5),
              "csv and jsonl agree")
        check(not p["pareto"] or p["feasible"], "pareto points are feasible")
        check(math.isclose(p["tokens_per_s_user"] * p["ttl_ms"] / 1e3, 1, rel_tol=1e-4),
              "1/TTL")
        check(math.isclose(p["tokens_per_s_gpu"],
                           p["batch"] / (p["ttl_ms"] / 1e3 * p["gpus"]), rel_tol=1e-4),
              "B/(TTL G)")
        if not p["feasible"]:
            check(p["reason"] in ("memory", "gpus"), "reason given")
    check({p["cluster"] for p in pts} == {"gb200-nvl72", "hgx-h200"}, "both clusters")
    check({p["strategy"] for p in pts} == {"tp", "pp", "dp-ep", "medha", "helix"},
          "all strategies")
    groups = {}
    for p in pts:
        if p["feasible"]:
            groups.setdefault((p["cluster"], p["strategy"]), []).append(p)
    npareto = 0
    for g in groups.values():
        front = [p for p in g if p["pareto"]]
        npareto += len(front)
        check(len(front) > 0, "each strategy has a frontier")
        for p in front:
            for q in g:
                dom = (q["tokens_per_s_user"] >= p["tokens_per_s_user"] and
                       q["tokens_per_s_gpu"] >= p["tokens_per_s_gpu"] and
                       (q["tokens_per_s_user"] > p["tokens_per_s_user"] or
                        q["tokens_per_s_gpu"] > p["tokens_per_s_gpu"]))
                if dom:
                    check(False, f"pareto point dominated: {p} by {q}")
        for p in g:
            if not p["pareto"]:
                check(any(q["tokens_per_s_user"] >= p["tokens_per_s_user"] and
                          q["tokens_per_s_gpu"] >= p["tokens_per_s_gpu"] for q in front),
                      "non-pareto point dominated by the frontier")
    # the SVG is well-formed, one titled circle per frontier point, one panel per cluster
    ns = {"s": "http://www.w3.org/2000/svg"}
    root = ET.parse(sv).getroot()
    titled = [c for c in root.iter("{http://www.w3.org/2000/svg}circle")
              if c.find("s:title", ns) is not None]
    check(len(titled) == npareto, f"{len(titled)} titled circles for {npareto} pareto points")
    panels = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")
              if t.get("class") == "panel"]
    check(panels == ["gb200-nvl72", "hgx-h200"], f"panels {panels}")

# ---- a topology sweep with derived clusters
with tempfile.TemporaryDirectory() as d:
    jl = os.path.join(d, "v.jsonl")
    rc, out, err = run("sweep", "--model", "deepseek-r1", "--hw", "gb200-nvl72", "--context",
                       "128K", "--gpus", "8-16", "--batch", "1,8", "--vary",
                       "domain_gpus=8,72", "--vary", "rdma_gbps=25,100", "--jsonl", jl,
                       "--quiet")
    check(rc == 0, f"--vary exit {rc}: {err}")
    names = sorted({json.loads(line)["cluster"] for line in open(jl)})
    check(names == ["gb200-nvl72 domain_gpus=72 rdma_gbps=100",
                    "gb200-nvl72 domain_gpus=72 rdma_gbps=25",
                    "gb200-nvl72 domain_gpus=8 rdma_gbps=100",
                    "gb200-nvl72 domain_gpus=8 rdma_gbps=25"], f"variant names {names}")
    check(out.count(": best interactivity: helix") == 4, "one summary per variant")
rc, out, err = run("sweep", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K",
                   "--vary", "domain_gpus=6")
check(rc == 2 and "not a multiple" in err, f"--vary domain_gpus=6: {rc} {err!r}")
rc, out, err = run("sweep", "--model", "tiny", "--hw", "gb200-nvl72", "--context", "1K",
                   "--vary", "ib=6")
check(rc == 2 and "unknown key 'ib'" in err, f"--vary ib: {rc} {err!r}")

# ---- outputs are whole or absent: an unwritable path fails before the sweep (exit 2) and
# replaces nothing; a write error (a full device) replaces nothing either
with tempfile.TemporaryDirectory() as d:
    old = os.path.join(d, "old.csv")
    jl = os.path.join(d, "a.jsonl")
    with open(old, "w") as f:
        f.write("OLD\n")
    base = ["sweep", "--model", "tiny", "--hw", "hgx-h200", "--context", "4K", "--gpus", "1-8",
            "--batch", "1,2", "--quiet"]
    rc, out, err = run(*base, "--csv", old, "--jsonl", jl, "--svg", os.path.join(d, "no", "x.svg"))
    check(rc == 2 and "--svg" in err and "cannot create a file there" in err and out == "",
          f"unwritable --svg: exit {rc}, {err!r}, printed {len(out)} bytes")
    check(open(old).read() == "OLD\n" and not os.path.exists(jl), "outputs untouched by a refused sweep")
    rc, out, err = run(*base, "--csv", d)
    check(rc == 2 and "is a directory" in err, f"--csv DIR: exit {rc}, {err!r}")
    if os.path.exists("/dev/full"):
        rc, out, err = run(*base, "--csv", old, "--jsonl", "/dev/full")
        check(rc == 1 and "No space left" in err, f"--jsonl /dev/full: exit {rc}, {err!r}")
    rc, out, err = run(*base, "--csv", old)
    check(rc == 0 and open(old).read().startswith("cluster,"), f"--csv over an old file: {rc}")
    check(sorted(os.listdir(d)) == ["old.csv"], f"temporary files left: {os.listdir(d)}")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
