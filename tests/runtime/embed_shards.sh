#!/usr/bin/env bash
# The embedding in vocabulary slices: each rank holds the rows of the LM head's vocabulary
# slice (a tied model none: it reads them from the head's columns), a step's rows are
# summed over the ranks, which leaves the owner's values. Checked against the
# single-process reference (--check) with prompts (the prefill's rows take the same path)
# on 1 rank, TPA 2 and KVP 3 (vocab 512 in slices of 170 and 171), for Gemma's scaled
# embedding untied and tied; the tokens are the same on every layout, and `embed` is a
# phase of the report. On one rank the tied model holds exactly one V x H table less
# (weight_bytes_per_rank).
# usage: embed_shards.sh HELIX HELIXRUN DATA
set -u
helix=$1 helixrun=$2 data=$3
. "$(dirname "$0")/report.sh"

python3 - "$data/tiny-gemma.json" "$dir" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
json.dump(dict(m, name="untied"), open(sys.argv[2] + "/untied.json", "w"))
json.dump(dict(m, name="tied", tie_embeddings=True), open(sys.argv[2] + "/tied.json", "w"))
PY
args=(--context 40 --batch 3 --steps 4 --prompt-ids "$data/prompt3.txt" --check --json)
for m in untied tied; do
    ref=
    for lay in "1 1" "1 2" "3 1"; do
        set -- $lay
        n=$(($1 * $2)) out="$dir/$m.$1.$2"
        if [ $n -eq 1 ]; then
            "$helix" decode --model "$dir/$m.json" "${args[@]}" >"$out" 2>"$out.err"
        else
            "$helixrun" --no-prefix --oversubscribe -n $n --timeout 120 -- "$helix" decode \
                --model "$dir/$m.json" --kvp $1 --tpa $2 "${args[@]}" >"$out" 2>"$out.err"
        fi || { echo "FAIL: $m KVP $1 x TPA $2: $(tail -n 3 "$out.err")"; fail=1; continue; }
        ok=$(json_field "$out" "d['passed'] and d['tokens_match'] and 'embed' in d['phase_ms']")
        tok=$(json_field "$out" "d['tokens']")
        echo "$m KVP $1 x TPA $2: check $ok, max rel err $(json_field "$out" "d['max_rel_err']")"
        [ "$ok" = True ] || { echo "FAIL: $m KVP $1 x TPA $2: --check failed"; fail=1; }
        [ -z "$ref" ] && ref=$tok
        [ "$tok" = "$ref" ] || { echo "FAIL: $m KVP $1 x TPA $2: other tokens than 1 rank"; fail=1; }
    done
done
# one table less when tied: vocab x hidden elements of the weights' dtype
if ! python3 - "$dir" "$data/tiny-gemma.json" <<'PY'; then
import json, sys
d, m = sys.argv[1], json.load(open(sys.argv[2]))
w = {}
for name in ("untied", "tied"):
    r = json.loads([l for l in open("%s/%s.1.1" % (d, name)) if l.startswith("{")][0])
    w[name] = r["weight_bytes_per_rank_max"]
es = {"f32": 4, "bf16": 2}[m.get("weight_dtype", "f32")]
want = m["vocab"] * m["hidden"] * es
print("weights untied %d, tied %d bytes: %d less, expected %d" %
      (w["untied"], w["tied"], w["untied"] - w["tied"], want))
sys.exit(0 if w["untied"] - w["tied"] == want else 1)
PY
    echo "FAIL: the tied model holds other than one embedding table less"
    fail=1
fi
exit $fail
