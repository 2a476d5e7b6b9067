#!/usr/bin/env bash
# --hopb auto with more ranks than CPUs: two ranks started on one CPU (taskset) run
# lockstep and say why (hopb_why), with --check exact; --hopb on still splits the batch;
# the same two ranks on two CPUs (where the machine has them) leave auto to its timings.
# usage: hopb_oversub.sh HELIXRUN HELIX
set -u
helixrun=$1 helix=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# the first one and two CPUs this test may run on (a cpuset need not hold CPU 0)
read -r one two_cpus < <(python3 -c 'import os; c = sorted(os.sched_getaffinity(0)); print(c[0], ",".join(map(str, c[:2])) if len(c) > 1 else "")')
run() { # NAME CPUS HOPB
    timeout -k 5 100 taskset -c "$2" "$helixrun" --no-prefix --oversubscribe -n 2 \
        --timeout 90 -- "$helix" decode --kvp 2 --batch 4 --context 1000 --steps 3 \
        --check --json --hopb "$3" >"$dir/$1" 2>"$dir/$1.err"
    rc=$?
    if [ $rc -ne 0 ]; then
        cat "$dir/$1.err"
        echo "FAIL: $1: decode exited $rc"
        exit 1
    fi
}
run auto1 "$one" auto
run on1 "$one" on
two=""
if [ -n "$two_cpus" ]; then
    run auto2 "$two_cpus" auto
    two=auto2
fi
python3 - "$dir" $two <<'PY'
import json, os, sys
def rank0(name):
    for line in open(os.path.join(sys.argv[1], name)):
        if line.startswith("{"):
            return json.loads(line)
    sys.exit("FAIL: %s: no JSON object" % name)
a, o = rank0("auto1"), rank0("on1")
if a["micro_batch"] != 4 or "2 ranks (2 threads) on 1 CPU take turns" not in a["hopb_why"]:
    sys.exit("FAIL: auto on one CPU: micro-batch %d, why '%s'" % (a["micro_batch"], a["hopb_why"]))
if o["micro_batch"] >= 4 or o["hopb_why"]:
    sys.exit("FAIL: on, one CPU: micro-batch %d, why '%s'" % (o["micro_batch"], o["hopb_why"]))
if a["hidden_hash"] != o["hidden_hash"]:
    sys.exit("FAIL: lockstep and HOP-B differ: %s vs %s" % (a["hidden_hash"], o["hidden_hash"]))
if len(sys.argv) > 2 and rank0(sys.argv[2])["hopb_why"]:
    sys.exit("FAIL: two ranks on two CPUs: %s" % rank0(sys.argv[2])["hopb_why"])
print("ok: auto on one CPU ran lockstep (%s); on split into micro-batches of %d; same hash %s"
      % (a["hopb_why"], o["micro_batch"], a["hidden_hash"]))
PY
