#!/usr/bin/env bash
# The backend per communicator on the device path: 2 ranks on one GPU (PCI hidden from
# hwloc, so the pair is shared memory, not NVLink) decode with --device cuda and --check;
# the report must say ucx for the KVP group and the world (staged through pinned host
# memory, or on device memory when UCX has CUDA) with a reason, and choose the tokens of
# --device cpu. With HELIX_NCCL=on, a world of one says nccl for both when the build has
# NCCL. Exit 77 without a CUDA device.
# usage: comm_backends_cuda.sh HELIX HELIXRUN [decode args...]
set -u
helix=$1 helixrun=$2
shift 2
if ! "$helix" info 2>/dev/null | grep -q '^devices:   [0-9]* CUDA device'; then
    echo "no CUDA device: skipped"; "$helix" info 2>&1 | grep '^devices:'
    exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
two() { # device, output file, extra args
    local dev=$1 out=$2
    shift 2
    HELIX_GPU_SHARE=1 timeout -k 5 200 "$helixrun" --no-prefix -n 2 --timeout 180 -- \
        "$helix" decode --json --kvp 2 --device "$dev" "$@" >"$out" 2>"$out.err" ||
        { echo "FAIL: 2 ranks --device $dev: exit $?"; cat "$out" "$out.err"; exit 1; }
}
two cuda "$dir/cuda" --check "$@"
two cpu "$dir/cpu" "$@"
nccl=0
"$helix" info 2>/dev/null | grep -q 'NCCL [0-9]' && nccl=1
HELIX_NCCL=on timeout -k 5 200 "$helix" decode --json --device cuda "$@" >"$dir/one" \
    2>"$dir/one.err" || { echo "FAIL: 1 rank HELIX_NCCL=on"; cat "$dir/one.err"; exit 1; }
python3 - "$dir" "$nccl" <<'PY'
import json, os, sys
d, nccl = sys.argv[1], sys.argv[2] == "1"
def report(name):
    lines = [l for l in open(os.path.join(d, name)).read().splitlines() if l.startswith('{')]
    if len(lines) != 1:
        sys.exit("FAIL: %s: expected one JSON report, got %d" % (name, len(lines)))
    return json.loads(lines[0])
cu, cpu, one = report("cuda"), report("cpu"), report("one")
ok = True
for c in ("kvp", "world"):
    b, why = cu["comm_backends"][c], cu["comm_backends_why"][c]
    print("2 ranks cuda: %s on %s (%s)" % (c, b, why))
    if b not in ("ucx-staged", "ucx-device") or "shm, not NVLink" not in why:
        print("FAIL: expected ucx with the shm pair named, got %r (%s)" % (b, why))
        ok = False
    if cpu["comm_backends"][c] != "host":
        print("FAIL: cpu run: %s on %r" % (c, cpu["comm_backends"][c]))
        ok = False
    want = "nccl" if nccl else "self"
    print("1 rank HELIX_NCCL=on: %s on %s (%s)" % (c, one["comm_backends"][c],
                                                   one["comm_backends_why"][c]))
    if one["comm_backends"][c] != want:
        print("FAIL: expected %s" % want)
        ok = False
if not (cu["checked"] and cu["tokens_match"] and cu["replicas_match"]):
    print("FAIL: the cuda run did not pass --check")
    ok = False
if cu["tokens"] != cpu["tokens"]:
    print("FAIL: cuda and cpu tokens differ")
    ok = False
sys.exit(0 if ok else 1)
PY
