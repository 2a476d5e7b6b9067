#!/usr/bin/env python3
"""Checks the layering on the compile commands of a build: a source file of component C
may be given -I for its own folder, and for LAYER/include (or util/, planner/: all public)
of the layers C depends on, never another component's private folder nor a higher layer.
usage: check_layers.py SOURCE_ROOT BUILD_ROOT"""
import json, os, shlex, sys

# component -> the components it may see (its own headers always), lowest layers first
BELOW = {
    "util": [],
    "kernels": ["util"],
    "model": ["util"],
    "cluster": ["util", "model"],
    "transport": ["util", "model", "cluster"],
    "topology": ["util", "model", "cluster"],
    "planner": ["util", "model", "cluster"],
    "runtime": ["util", "kernels", "model", "cluster", "transport", "topology"],
    "launcher": ["util"],
    "cli": ["util", "kernels", "model", "cluster", "transport", "topology", "planner",
            "runtime"],
}
# folders whose every header is public (no private header beside the code)
ALL_PUBLIC = {"util", "planner"}

src, build = (os.path.realpath(a) for a in sys.argv[1:3])
cmds = json.load(open(os.path.join(build, "compile_commands.json")))
bad, seen = [], 0
for c in cmds:
    f = os.path.realpath(os.path.join(c["directory"], c["file"]))
    rel = os.path.relpath(f, src)
    comp = rel.split(os.sep)[0]
    if comp not in BELOW or "cuda" in rel.split(os.sep):
        continue  # tests (white-box) and the CUDA kernels are not layers
    seen += 1
    args = c.get("arguments") or shlex.split(c["command"])
    incs = []
    for i, a in enumerate(args):
        if a.startswith("-I") and len(a) > 2:
            incs.append(a[2:])
        elif a in ("-I", "-isystem") and i + 1 < len(args):
            incs.append(args[i + 1])
    for inc in incs:
        path = os.path.realpath(os.path.join(c["directory"], inc))
        r = os.path.relpath(path, src)
        if r.startswith("..") or r == ".":
            continue  # system headers, the build folder
        parts = r.split(os.sep)
        other = parts[0]
        if other not in BELOW or other == comp:
            continue
        public = len(parts) >= 2 and parts[1] == "include" or (len(parts) == 1 and other in ALL_PUBLIC)
        if not public:
            bad.append(f"{rel}: sees {r}/ (private headers of {other})")
        elif other not in BELOW[comp]:
            bad.append(f"{rel}: sees {r}/ ({other} is not below {comp})")
for b in sorted(set(bad)):
    print("FAIL:", b)
print(f"{seen} compile commands of {len(BELOW)} components checked, {len(set(bad))} violation(s)")
sys.exit(1 if bad or seen == 0 else 0)
