#!/usr/bin/env bash
# helix decode --hopb on --timeline: the file has one attention and one exchange bar per
# micro-batch and layer, micro-batches' attention runs in order, and each exchange starts
# once its micro-batch's attention is done; the text rendering follows.
# usage: timeline.sh HELIXRUN HELIX
set -u
helixrun=$1 helix=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
timeout -k 5 60 "$helixrun" --no-prefix -n 2 --timeout 50 -- "$helix" decode --kvp 2 \
    --batch 4 --context 2000 --steps 3 --hopb on --micro-batch 2 --timeline "$dir/tl.txt" \
    >"$dir/out" 2>&1
rc=$?
cat "$dir/tl.txt" 2>/dev/null
if [ $rc -ne 0 ]; then
    cat "$dir/out"
    echo "FAIL: decode exited $rc"
    exit 1
fi
python3 - "$dir/tl.txt" <<'PY'
import sys
bars = {}
render = 0
for line in open(sys.argv[1]):
    if line.startswith("# L"):
        render += 1
        continue
    if line.startswith("#"):
        continue
    layer, mb, kind, t0, t1 = line.split()
    bars[(int(layer), int(mb), kind)] = (float(t0), float(t1))
want = {(l, m, k) for l in range(2) for m in range(2) for k in ("attention", "exchange")}
if set(bars) != want:
    sys.exit("FAIL: bars %s, expected %s" % (sorted(bars), sorted(want)))
for l in range(2):
    a0, a1 = bars[(l, 0, "attention")], bars[(l, 1, "attention")]
    if not (a0[0] <= a0[1] <= a1[0] <= a1[1]):
        sys.exit("FAIL: layer %d: attention of micro-batch 1 before micro-batch 0 ended" % l)
    for m in range(2):
        a, x = bars[(l, m, "attention")], bars[(l, m, "exchange")]
        if not (a[1] <= x[0] <= x[1]):
            sys.exit("FAIL: layer %d micro-batch %d: exchange %s vs attention %s" % (l, m, x, a))
if render != len(want):
    sys.exit("FAIL: %d rendered bars, expected %d" % (render, len(want)))
print("timeline ok: %d bars" % len(bars))
PY
