#!/usr/bin/env python3
"""helix plan --hw local and decode's prediction end to end, from a given hw file (no
measurement): the file is used as is and left unchanged, phases sum to the step, corrupt
and hostile files exit 2 naming file:line:column, overflowing layouts exit 2 naming the
flags, and decode --json carries predicted_step_ms beside step_ms.

usage: check_local.py HELIX DATA_DIR [--measure]
  --measure: also measure this machine (plan --hw local with no file: helix bench local's
             measurement, needs helixrun) and read its file back."""
import calendar
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from plancheck import check, failures, helix  # beside this script

HELIX, DATA = sys.argv[1], sys.argv[2]
MEASURE = "--measure" in sys.argv


def run(args, env=None, timeout=120):
    e = dict(os.environ)
    e.pop("HELIX_HW_FILE", None)
    e.update(env or {})
    return helix(HELIX, args, e, timeout)


tmp = tempfile.mkdtemp(prefix="hlx_local_")
try:
    hw = os.path.join(tmp, "hw.json")
    shutil.copy(os.path.join(DATA, "hw-local.json"), hw)
    before = open(hw, "rb").read()
    mtime = os.stat(hw).st_mtime_ns
    env = {"HELIX_HW_FILE": hw}

    # ---- plan --hw local from the given file: no measurement, the local predictor
    rc, out, err = run(["plan", "--model", "tiny", "--hw", "local", "--context", "64K",
                        "--kvp", "2", "--batch", "4", "--json"], env)
    check(rc == 0, f"plan --hw local exit {rc}: {err}")
    check("measuring" not in err, f"plan --hw local measured although the file exists: {err}")
    check(open(hw, "rb").read() == before and os.stat(hw).st_mtime_ns == mtime,
          "the hw file is left unchanged")
    o = json.loads(out)
    check(o.get("predictor") == "local", f"predictor {o.get('predictor')}")
    check(o.get("hw_file") == hw, f"hw_file {o.get('hw_file')}")
    check("2026-01-01T00:00:00Z" in o.get("predictor_note", ""),
          "the note names the file's measurement time")
    tsum = sum(p["time_us"] for p in o["phases"].values())
    check(abs(tsum / 1e3 - o["ttl_ms"]) <= 1e-6 * o["ttl_ms"], f"phases {tsum} us sum to TTL "
          f"{o['ttl_ms']} ms")
    check(o["feasible"] is True, "KVP 2 on 2 cores is feasible")
    # attention from the file by hand: 2 layers x 2 KV heads x 4 requests x 32768 tokens at
    # 8 ns (bf16 from DRAM: the two ranks' KV, 2 x 64 MiB, is above the 32 MiB LLC) + 16
    # calls x 1 us
    want = 2 * 2 * 4 * 32768 * 8e-3 + 16 * 1.0
    check(abs(o["phases"]["attention"]["time_us"] - want) < 1e-3 * want,
          f"attention {o['phases']['attention']['time_us']} us, by hand {want}")

    # a working set below half of the LLC (2 MiB of KV, 3 MiB of f32 weights): the cached
    # rate, 4 ns, + 4 calls x 1 us
    rc, out, err = run(["plan", "--model", "tiny", "--hw", "local", "--context", "4K",
                        "--json"], env)
    oc = json.loads(out) if rc == 0 else {"phases": {"attention": {"time_us": -1}}}
    want = 2 * 2 * 4096 * 4e-3 + 4 * 1.0
    check(abs(oc["phases"]["attention"]["time_us"] - want) < 1e-3 * want,
          f"cached attention {oc['phases']['attention']['time_us']} us, by hand {want}")

    # more ranks than cores: still feasible (they share cores), the compute doubles
    rc, out, err = run(["plan", "--model", "tiny", "--hw", "local", "--context", "64K",
                        "--kvp", "4", "--batch", "4", "--json"], env)
    o4 = json.loads(out) if rc == 0 else {}
    check(rc == 0 and o4.get("feasible") is True, f"KVP 4 on 2 cores: exit {rc} {err}")
    if rc == 0:
        want4 = 2 * (2 * 2 * 4 * 16384 * 8e-3 + 16 * 1.0)
        check(abs(o4["phases"]["attention"]["time_us"] - want4) < 1e-3 * want4,
              f"KVP 4 attention {o4['phases']['attention']['time_us']} us, by hand {want4}")

    # --set HW_FILE=... names the file as HELIX_HW_FILE does
    rc, out, err = run(["plan", "--model", "tiny", "--hw", "local", "--context", "4K",
                        "--set", "HW_FILE=" + hw, "--json"])
    check(rc == 0 and json.loads(out).get("hw_file") == hw, f"--set HW_FILE: {rc} {err}")

    # the text table says which predictor ran
    rc, out, err = run(["plan", "--model", "tiny", "--hw", "local", "--context", "1M"], env)
    check(rc == 0 and "predictor: local" in out, f"plan table names the predictor: {out}")
    # --threads: a rank on 2 cores of the fixture's 2 (attention and GEMMs split over them)
    # predicts a shorter step than on 1, and says so; refused without --hw local
    ttl = {}
    for t in (1, 2):
        rc, out, err = run(["plan", "--model", "tiny", "--hw", "local", "--context", "1M",
                            "--threads", str(t), "--json"], env)
        d = json.loads(out) if rc == 0 else {}
        ttl[t] = d.get("ttl_ms", 0)
        check(rc == 0 and f"{t} thread" in d.get("predictor_note", ""),
              f"plan --threads {t}: {rc} {err} {d.get('predictor_note')}")
    check(0 < ttl[2] < ttl[1], f"--threads 2 predicts a shorter step: {ttl}")
    rc, out, err = run(["plan", "--model", "tiny", "--hw", "hgx-h200", "--context", "1M",
                        "--threads", "2"])
    check(rc == 2 and "--threads" in err and "--hw local" in err,
          f"--threads without --hw local: exit {rc}: {err}")
    rc, out, err = run(["plan", "--model", "tiny", "--hw", "local", "--context", "1M",
                        "--threads", "0"], env)
    check(rc == 2 and "threads" in err, f"--threads 0: exit {rc}: {err}")
    # --micro-batch: the size in the note and the JSON; with --hopb off a warning and the
    # lockstep step (as decode's), never a refusal
    base = ["plan", "--model", "tiny", "--hw", "local", "--context", "4K", "--kvp", "2",
            "--batch", "8", "--json"]
    rc, out, err = run(base + ["--micro-batch", "3"], env)
    d = json.loads(out) if rc == 0 else {}
    check(rc == 0 and d.get("micro_batch") == 3 and
          "micro-batches of 3 requests" in d.get("predictor_note", ""),
          f"plan --micro-batch 3: {rc} {err} {d.get('micro_batch')} {d.get('predictor_note')}")
    rc, out, err = run(base + ["--hopb", "off", "--micro-batch", "3"], env)
    rc2, out2, _ = run(base + ["--hopb", "off"], env)
    check(rc == 0 and "has no effect with --hopb off" in err and rc2 == 0 and
          json.loads(out)["ttl_ms"] == json.loads(out2)["ttl_ms"] and
          "micro_batch" not in json.loads(out),
          f"plan --hopb off --micro-batch 3: {rc} {err}")
    # a layout the runtime cannot run falls back to the roofline over the cluster, named so
    rc, out, err = run(["plan", "--model", "tiny", "--hw", "local", "--context", "1M",
                        "--weight-dtype", "fp4", "--json"], env)
    check(rc == 0 and json.loads(out).get("predictor") == "roofline",
          f"fp4 weights: roofline ({rc}, {err})")
    # a sweep over the machine as a cluster
    rc, out, err = run(["sweep", "--model", "tiny", "--hw", "local", "--context", "64K",
                        "--gpus", "1-2", "--quiet"], env)
    check(rc == 0, f"sweep --hw local exit {rc}: {err}")

    # ---- corrupt and hostile files: exit 2, file:line:column
    bad = os.path.join(tmp, "bad.json")
    text = before.decode()
    cases = [
        ("negative bandwidth", text.replace('"read_gbps": 20.0', '"read_gbps": -20.0'), 11),
        ("truncated", text[: len(text) // 2], None),
        ("wrong format", text.replace('"helix-hw-local"', '"helix-hw-remote"'), 2),
        ("huge number", text.replace('"cores": 2', '"cores": 1e300'), 8),
        ("unknown key", text.replace('"seconds": 5.0', '"secnds": 5.0'), 13),
    ]
    # a file that is not text at all is named with the byte offset (no line to give)
    with open(bad, "wb") as f:
        f.write(b"\x00\x01\x02garbage\xff")
    rc, out, err = run(["plan", "--model", "tiny", "--hw", "local", "--context", "4K"],
                       {"HELIX_HW_FILE": bad})
    check(rc == 2 and bad in err and "NUL byte" in err and "measuring" not in err,
          f"binary: exit {rc}, want 2 naming the file and the NUL byte: {err}")
    for what, body, line in cases:
        with open(bad, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(body)
        rc, out, err = run(["plan", "--model", "tiny", "--hw", "local", "--context", "4K"],
                           {"HELIX_HW_FILE": bad})
        check(rc == 2, f"{what}: exit {rc} (want 2): {err}")
        m = re.search(re.escape(bad) + r":(\d+):(\d+):", err)
        check(m is not None, f"{what}: file:line:column in '{err.strip()}'")
        if m and line is not None:
            check(int(m.group(1)) == line, f"{what}: line {m.group(1)}, want {line}")
        check("measuring" not in err, f"{what}: a bad file is refused, not re-measured")

    # ---- overflowing layouts: exit 2 naming the flags
    rc, out, err = run(["plan", "--model", "tiny", "--hw", "hgx-h200", "--context", "4K",
                        "--kvp", "1000000", "--tpa", "1000000"])
    check(rc == 2 and "--kvp" in err and "--tpa" in err and "at least 1" not in err,
          f"kvp x tpa overflow: exit {rc}: {err}")
    rc, out, err = run(["plan", "--model", "tiny", "--hw", "hgx-h200", "--context", "4K",
                        "--strategy", "dp-ep", "--dp", "1000000", "--tpf", "1000000",
                        "--ep", "1000000"])
    check(rc == 2 and "tpf x ep" in err, f"tpf x ep overflow: exit {rc}: {err}")
    rc, out, err = run(["plan", "--model", "tiny", "--hw", "hgx-h200", "--context", "4K",
                        "--kvp", "1024", "--tpa", "1024", "--dp", "1024", "--strategy", "medha"])
    check(rc == 2 and "kvp x tpa x dp" in err, f"kvp x tpa x dp overflow: exit {rc}: {err}")

    # ---- decode --json: predicted beside measured (a world of one, no launcher)
    rc, out, err = run(["decode", "--json", "--context", "4K", "--steps", "2", "--batch", "2"],
                       env)
    check(rc == 0, f"decode exit {rc}: {err}")
    d = json.loads(out)
    check(isinstance(d.get("predicted_step_ms"), float) and d["predicted_step_ms"] > 0,
          f"predicted_step_ms {d.get('predicted_step_ms')}")
    ph = d.get("predicted_phase_ms") or {}
    check(set(ph) == set(d["phase_ms"]), f"predicted phases {sorted(ph)} = measured "
          f"{sorted(d['phase_ms'])}")
    check(abs(sum(ph.values()) - d["predicted_step_ms"]) <= 1e-4 * d["predicted_step_ms"],
          "predicted phases sum to predicted_step_ms")
    check(d.get("predicted_hw") == hw, "decode names the hw file")
    # the measurement's age (the fixture says 2026-01-01T00:00:00Z) and no note when the
    # file measured the run's kernels
    want_age = time.time() - calendar.timegm((2026, 1, 1, 0, 0, 0))
    check(isinstance(d.get("predicted_hw_age_s"), int) and
          abs(d["predicted_hw_age_s"] - want_age) < 600,
          f"predicted_hw_age_s {d.get('predicted_hw_age_s')} (about {want_age:.0f})")
    check("predicted_note" not in d or d["kernels"] != "avx512",
          f"no note for the same kernels: {d.get('predicted_note')}")
    # a prompt is context for the steps: 4K of synthetic context and two prompts of 4000
    # and 4192 tokens (mean 4096) predict as 8K of synthetic context
    ids = os.path.join(tmp, "prompts.txt")
    with open(ids, "w") as f:
        for n in (4000, 4192):
            f.write(" ".join(str((7 * i) % 500) for i in range(n)) + "\n")
    rc, out, err = run(["decode", "--json", "--prompt-ids", ids, "--context", "4K",
                        "--steps", "2"], env)
    rc2, out2, err2 = run(["decode", "--json", "--context", "8K", "--steps", "2",
                           "--batch", "2"], env)
    p1 = json.loads(out).get("predicted_step_ms") if rc == 0 else None
    p2 = json.loads(out2).get("predicted_step_ms") if rc2 == 0 else None
    check(rc == 0 and rc2 == 0 and p1 is not None and p2 is not None and
          abs(p1 - p2) <= 1e-9 * p2, f"prompts predict as their mean context: {p1} vs {p2} "
          f"({err}{err2})")
    other = os.path.join(tmp, "hw-other-kernels.json")
    doc = json.load(open(hw))
    doc["kernels"] = "scalar" if d["kernels"] != "scalar" else "avx2"
    doc["measured"] = "not a time"
    json.dump(doc, open(other, "w"))
    rc, out, err = run(["decode", "--json", "--context", "4K", "--steps", "1"],
                       {"HELIX_HW_FILE": other})
    d2 = json.loads(out) if rc == 0 else {}
    check(rc == 0 and doc["kernels"] in d2.get("predicted_note", "") and
          d2["kernels"] in d2.get("predicted_note", "") and "predicted_hw_age_s" not in d2,
          f"kernels note, no age for an unparsable time: {rc} {d2.get('predicted_note')} "
          f"{d2.get('predicted_hw_age_s')}")
    # a file written by another build of helix: the note says which, with the fix
    rc, ver, _ = run(["--version"])
    build = ver.split("(build ", 1)[1].split(")", 1)[0] if "(build " in ver else ""
    check(rc == 0 and build != "", f"helix --version names its build: {ver!r}")
    doc = json.load(open(hw))
    doc["build"] = "v0.0-1-g000000000000"
    json.dump(doc, open(other, "w"))
    rc, out, err = run(["decode", "--json", "--context", "4K", "--steps", "1"],
                       {"HELIX_HW_FILE": other})
    note = json.loads(out).get("predicted_note", "") if rc == 0 else ""
    check(rc == 0 and "v0.0-1-g000000000000" in note and build in note and
          "helix bench local" in note, f"other build note: {rc} {note!r}")
    doc["build"] = build
    json.dump(doc, open(other, "w"))
    rc, out, err = run(["decode", "--json", "--context", "4K", "--steps", "1"],
                       {"HELIX_HW_FILE": other})
    note = json.loads(out).get("predicted_note", "") if rc == 0 else "?"
    check(rc == 0 and "build" not in note, f"no build note for this build's file: {note!r}")
    doc["build"] = "x" * 64  # one more than the field holds
    json.dump(doc, open(other, "w"))
    rc, out, err = run(["decode", "--json", "--context", "4K", "--steps", "1"],
                       {"HELIX_HW_FILE": other})
    check(rc == 0 and "build" in json.loads(out).get("predicted_error", ""),
          f"an over-long build is refused by name: {rc} {out[:300]}")
    # no hw file: the run still succeeds, the prediction is null and says why
    rc, out, err = run(["decode", "--json", "--context", "4K", "--steps", "1"],
                       {"HELIX_HW_FILE": os.path.join(tmp, "none.json")})
    d = json.loads(out) if rc == 0 else {}
    check(rc == 0 and d.get("predicted_step_ms", 0) is None and
          "none.json" in d.get("predicted_error", ""), f"decode without a hw file: {rc} {out}")

    # ---- the real measurement (integration): bench local writes a file plan reads back
    if MEASURE:
        # one measurement (about 13 s) serves both paths: plan --hw local with no file yet
        # measures, stores it, prints the table on stderr and plans; helix bench local is
        # the same measurement (hlx_bench_local_measure) with the table on stdout
        out_file = os.path.join(tmp, "measured", "hw.json")
        rc, out, err = run(["plan", "--model", "tiny", "--hw", "local", "--context", "64K",
                            "--kvp", "2", "--json"], {"HELIX_HW_FILE": out_file}, timeout=600)
        check(rc == 0 and "measuring" in err and os.path.exists(out_file),
              f"plan --hw local measures when there is no file: {rc} {err}")
        if rc == 0:
            check(json.loads(out)["hw_file"] == out_file, "plan names the fresh file")
            m = json.load(open(out_file))
            check(m["read_gbps"] > 0 and m["fma_gflops"] > 0, "limits measured")
            check(m.get("build") == build, f"the file records the build: {m.get('build')}")
            check(m["links"].get("shm", {}).get("ranks") == 2, "shm collectives over 2 ranks")
            shm = m["links"].get("shm", {})
            # after compute: never below the back-to-back latency's floor, never absurd
            check(0 < shm.get("step_us", 0) < 10000,
                  f"the in-step collective measured: {shm.get('step_us')} us")
            check(0 < m.get("dram_gbps_1", 0) < 1000 and 0 < m.get("dram_gbps_n", 0) < 1000,
                  f"the attention kernels' shared DRAM rate: {m.get('dram_gbps_1')}, "
                  f"{m.get('dram_gbps_n')}")
            check(any(a["cached"] for a in m["attention"]) and
                  any(not a["cached"] for a in m["attention"]), "attention cached and DRAM")
            # the kernels' GEMM passes (kernels/avx512.c: 2 and 8 passes of 8 rows)
            want_pass = (16, 64) if m["kernels"] in ("avx512", "amx") else (0, 0)
            check((m.get("gemm_pass_rows_f32"), m.get("gemm_pass_rows_bf16")) == want_pass,
                  f"GEMM passes recorded for {m['kernels']}: {m.get('gemm_pass_rows_f32')}, "
                  f"{m.get('gemm_pass_rows_bf16')}")
            check({a["kv_dtype"] for a in m["attention"]} == {"f32", "bf16", "fp8"},
                  "attention timed for every KV type the runtime stores: "
                  f"{sorted({a['kv_dtype'] for a in m['attention']})}")
            check("stored in " + out_file in err, "the table names the file")
            curve = m.get("read_curve", [])
            check(len(curve) >= 2 and all(c["gbps"] > 0 for c in curve) and
                  all(b["mib"] > a["mib"] for a, b in zip(curve, curve[1:])),
                  f"a read curve of growing sizes: {curve}")
            check(m["llc_mib"] > 0 and "read by buffer" in err, "LLC and the curve reported")
            rc, out, err = run(["plan", "--model", "tiny", "--hw", "local", "--context", "1M",
                                "--json"], {"HELIX_HW_FILE": out_file})
            check(rc == 0 and json.loads(out)["predictor"] == "local" and
                  "measuring" not in err, f"read back, not measured again: {err}")
        # the collective part binds its ranks one to a core when they have one each (as the
        # decode does), and leaves more ranks than cores unbound: unbound, two ranks shared
        # one of two vCPUs in a third of the runs and step_us read 48 us instead of 1-5
        helixrun = os.path.join(os.path.dirname(HELIX), "..", "launcher", "helixrun")
        ncpu = len(os.sched_getaffinity(0))
        for n in (2, ncpu + 1):
            e = dict(os.environ, HELIX_BENCH_LOCAL_CPU="1")
            p = subprocess.run([helixrun, "-n", str(n), HELIX, "bench", "local", "--comm-child"],
                               capture_output=True, text=True, timeout=300, env=e)
            cpus = {int(m.group(1)): int(m.group(2)) for m in
                    re.finditer(r"rank (\d+) bound to cpu (-?\d+)", p.stdout + p.stderr)}
            want = ("distinct cpus" if n <= ncpu else "unbound")
            ok = (p.returncode == 0 and len(cpus) == n and
                  (len(set(cpus.values())) == n and min(cpus.values()) >= 0 if n <= ncpu
                   else set(cpus.values()) == {-1}))
            check(ok, f"bench local's collective part, {n} ranks on {ncpu} cpus: {want}: "
                      f"{cpus} (exit {p.returncode})")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all local checks passed")
