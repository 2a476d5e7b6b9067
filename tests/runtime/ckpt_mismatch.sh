#!/bin/sh
# Two ranks given checkpoints of one config and other weights (synth seeds 1 and 2) must be
# refused before the first step naming the checkpoint (they decoded wrong tokens with exit
# 0; one --seed for both, as their synth seeds would differ); two copies of one checkpoint,
# one per rank, must run.
# usage: ckpt_mismatch.sh HELIX HELIXRUN
set -u
helix=$1 helixrun=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "ckpt_mismatch: FAIL: $*"; cat "$dir/log"; exit 1; }

"$helix" model synth --family dense --out "$dir/a" --seed 1 >/dev/null || fail "synth a"
"$helix" model synth --family dense --out "$dir/b" --seed 2 >/dev/null || fail "synth b"
cp -r "$dir/a" "$dir/a2"
printf '1 2 3 4\n' >"$dir/p.txt"
run() { # CHECKPOINT-OF-RANK-1: rank 0 reads a
    timeout -k 5 60 "$helixrun" -n 2 -- sh -c "if [ \"\$HELIX_RANK\" = 1 ]; then m=$1; \
        else m=$dir/a; fi; exec \"$helix\" generate --model \$m --prompt-ids $dir/p.txt \
        --kvp 2 --max-new 3 --seed 1 --timeout 20" >"$dir/log" 2>&1
}
run "$dir/b"
rc=$?
[ $rc -eq 2 ] || fail "other weights on rank 1: exit $rc, expected 2"
grep -q "reads other files than this rank from --model" "$dir/log" || fail "no checkpoint message"
run "$dir/a2"
rc=$?
[ $rc -eq 0 ] || fail "two copies of one checkpoint: exit $rc"
echo "ckpt_mismatch: other weights refused, copies accepted"
