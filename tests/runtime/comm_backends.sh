#!/usr/bin/env bash
# The backend of each communicator's collectives in the decode report: on the cpu backend
# the KVP group and the world both say "host" with the reason (also with HELIX_NCCL=on,
# which applies to device buffers only), in --json (comm_backends, comm_backends_why) and
# in the text report's comms line. HELIX_STAGE=on runs the staging path (copies through
# the backend's pinned memory around UCX, as a cuda run without CUDA in UCX does) on the
# cpu backend: reported as ucx-staged, it must pass --check and be bitwise identical to
# the run without it (same tokens, same hash of the hidden state).
# usage: comm_backends.sh HELIX HELIXRUN|none NP [decode args...]
set -u
helix=$1 helixrun=$2 np=$3
shift 3
if [ "$helixrun" = none ]; then
    cmd=("$helix" decode)
else
    cmd=("$helixrun" --no-prefix -n "$np" --timeout 100 -- "$helix" decode)
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run() { # name, env..., then the decode arguments after --
    local name=$1 rc
    shift
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    env "${envs[@]}" timeout -k 5 120 "${cmd[@]}" --timeout 60 "$@" >"$dir/$name" 2>"$dir/$name.err"
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "$name: exit $rc"; cat "$dir/$name" "$dir/$name.err"; exit 1
    fi
}
run auto HELIX_NCCL=auto -- --json --check "$@"
run on HELIX_NCCL=on -- --json "$@"
run stage HELIX_STAGE=on -- --json --check "$@"
run text HELIX_NCCL=auto -- "$@"
python3 - "$dir" <<'PY' || exit 1
import json, os, sys
d = sys.argv[1]
def report(name):
    lines = [l for l in open(os.path.join(d, name)).read().splitlines() if l.startswith('{')]
    if len(lines) != 1:
        sys.exit("%s: expected one JSON report, got %d" % (name, len(lines)))
    return json.loads(lines[0])
ok = True
runs = {n: report(n) for n in ("auto", "on")}
for name, r in runs.items():
    cb, why = r.get("comm_backends"), r.get("comm_backends_why")
    if r["device"] != "cpu" or cb != {"kvp": "host", "world": "host"}:
        print("%s: device %s, comm_backends %r: expected host for both" % (name, r["device"], cb))
        ok = False
        continue
    for c in ("kvp", "world"):
        if "host buffers" not in why.get(c, ""):
            print("%s: comm_backends_why[%s] = %r: expected the host-buffers reason" %
                  (name, c, why.get(c)))
            ok = False
    print("%s: ranks %d, kvp %s (%s), world %s (%s)" % (name, r["ranks"], cb["kvp"], why["kvp"],
                                                        cb["world"], why["world"]))
st = report("stage")
runs["stage"] = st
print("stage: ranks %d, kvp %s, world %s (%s); micro-batch %d, hash %s vs %s" %
      (st["ranks"], st["comm_backends"]["kvp"], st["comm_backends"]["world"],
       st["comm_backends_why"]["world"], st["micro_batch"], st["hidden_hash"],
       runs["auto"]["hidden_hash"]))
if st["comm_backends"] != {"kvp": "ucx-staged", "world": "ucx-staged"} or \
   any("HELIX_STAGE=on" not in st["comm_backends_why"][c] for c in ("kvp", "world")):
    print("HELIX_STAGE=on: expected ucx-staged with the reason for both, got %r %r" %
          (st["comm_backends"], st["comm_backends_why"]))
    ok = False
for name in ("auto", "stage"):
    r = runs[name]
    if not (r["checked"] and r["tokens_match"] and r["replicas_match"]):
        print("%s: did not pass --check" % name)
        ok = False
for name in ("on", "stage"):
    if runs["auto"]["tokens"] != runs[name]["tokens"] or \
       runs["auto"]["hidden_hash"] != runs[name]["hidden_hash"]:
        print("%s changed the cpu run's result" % name)
        ok = False
text = open(os.path.join(d, "text")).read()
line = [l for l in text.splitlines() if l.startswith("comms:")]
if len(line) != 1 or "KVP exchange on host" not in line[0] or "world all-reduce and " \
        "all-gather on host" not in line[0]:
    print("text report: expected one comms line naming host twice, got %r" % line)
    ok = False
sys.exit(0 if ok else 1)
PY
