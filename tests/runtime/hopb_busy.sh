#!/usr/bin/env bash
# --hopb auto and on (no --micro-batch) choose with c_busy, the attention of a micro-batch
# beside the previous one's exchange: on 2 ranks (KVP 2) the report has hopb_c_busy_ms > 0
# and at least hopb_c_ms, hopb_predicted_ms is the busy model recomputed here from the
# reported c, c_busy, m1, m(batch) (c M + (nb-1) max(c_busy M, m) + m, the last micro-batch
# smaller), and the size is the one that model plus the posting cost prefers; one rank
# (KVP 1, nothing in flight) measures nothing, says why and models c for it.
# usage: hopb_busy.sh HELIXRUN HELIX
set -u
helixrun=$1 helix=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args=(--batch 6 --context 2000 --steps 3 --check --json --timeout 60)
run() { # NAME RANKS HOPB (the ranks KVP ones)
    local launch=()
    [ "$2" -gt 1 ] && launch=("$helixrun" --no-prefix -n "$2" --timeout 90 --)
    timeout -k 5 100 "${launch[@]}" "$helix" decode "${args[@]}" --kvp "$2" --hopb "$3" \
        >"$dir/$1" 2>"$dir/$1.err"
    rc=$?
    if [ $rc -ne 0 ]; then
        cat "$dir/$1.err"
        echo "FAIL: $1: decode exited $rc"
        exit 1
    fi
}
run auto2 2 auto
run on2 2 on
run auto1 1 auto
python3 - "$dir" <<'PY'
import json, os, sys

def rank0(name):
    for line in open(os.path.join(sys.argv[1], name)):
        if line.startswith("{"):
            return json.loads(line)
    sys.exit("FAIL: %s: no JSON object" % name)

def close(a, b, tol=1e-4):  # the JSON's reals carry 7 digits
    return abs(a - b) <= tol * max(abs(a), abs(b), 1e-6)

def model(B, M, c, cb, m1, mB):  # hlx_schedule_model, written again
    nb, last = (B + M - 1) // M, B - ((B + M - 1) // M - 1) * M
    m = lambda k: max(m1, m1 + (k - 1) * (mB - m1) / (B - 1))
    if nb == 1:
        return c * B + mB
    return c * M + (nb - 2) * max(cb * M, m(M)) + max(cb * last, m(M)) + m(last)

def check(name, busy):
    d = rank0(name)
    B, M = d["batch"], d["micro_batch"]
    c, cb = d["hopb_c_ms"] / M, d["hopb_c_busy_ms"] / M
    m1, mB, po = d["hopb_m1_ms"], d["hopb_m_batch_ms"], d["hopb_post_ms"]
    if not d["checked"] or not d["tokens_match"]:
        sys.exit("FAIL: %s: the check failed" % name)
    if busy:
        if "take turns" in d["hopb_why"]:
            print("%s: %s: nothing measured, skipped" % (name, d["hopb_why"]))
            return False
        if d["hopb_why"] or not cb > 0 or cb < c * (1 - 1e-5):
            sys.exit("FAIL: %s: c_busy %r ms per micro-batch (c %r), why '%s'"
                     % (name, d["hopb_c_busy_ms"], d["hopb_c_ms"], d["hopb_why"]))
    else:
        if cb != 0 or "c_busy not measured (KVP 1" not in d["hopb_why"]:
            sys.exit("FAIL: %s: c_busy %r, why '%s'" % (name, cb, d["hopb_why"]))
        cb = c
    if not all(x > 0 for x in (c, m1, mB, d["hopb_predicted_ms"])):
        sys.exit("FAIL: %s: a timing is missing: %r" % (name, d))
    want = model(B, M, c, cb, m1, mB)
    idle = model(B, M, c, c, m1, mB)
    if not close(d["hopb_predicted_ms"], want):
        sys.exit("FAIL: %s: hopb_predicted_ms %r, the busy model gives %r (idle %r)"
                 % (name, d["hopb_predicted_ms"], want, idle))
    # the size: the model plus the posting cost of every extra micro-batch, a smaller one
    # taken where it is 0.1% better; auto keeps lockstep unless some split beats it
    cost = {k: model(B, k, c, cb, m1, mB) + ((B + k - 1) // k - 1) * po
            for k in range(1, B + 1)}
    cands = [k for k in cost if k < B] if d["hopb"] == "on" else list(cost)
    best = min(cost[k] for k in cands)
    if M not in cands or cost[M] > best / 0.999 * (1 + 1e-5):
        sys.exit("FAIL: %s: micro-batch %d costs %r, the model's best %r (%r)"
                 % (name, M, cost[M], best, cost))
    if d["hopb"] == "auto" and M == B and any(cost[k] < cost[B] * 0.999 * (1 - 1e-5)
                                              for k in range(1, B)):
        sys.exit("FAIL: %s: lockstep kept though a split is predicted faster: %r"
                 % (name, cost))
    print("%s: micro-batch %d of %d, c %.4f c_busy %.4f m %.4f..%.4f post %.4f ms: model "
          "%.4f (idle model %.4f) ms per layer" % (name, M, B, c, cb, m1, mB, po,
                                                   d["hopb_predicted_ms"], idle))
    return True

ran = [check("auto2", True), check("on2", True)]
check("auto1", False)
if not any(ran):
    sys.exit(77)
PY
