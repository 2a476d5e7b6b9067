#!/usr/bin/env bash
# Prefill (--prompt-ids) and helix generate.
# usage: prefill.sh ranks HELIX DATA HELIXRUN KVP TPA
#            decode with a prompt over KVP x TPA ranks (--check) gives the tokens of the
#            single-process run, token for token
#        prefill.sh generate HELIX DATA HELIXRUN
#            greedy generate = decode's tokens; sampling reproducible with one seed,
#            different with another, and --check exact with sampling over 2 ranks
#        prefill.sh chunked HELIX DATA HELIXRUN MODEL PROMPT BATCH KVP TPA EP
#            MLA and MoE models: prefill in chunks of 1, 7 and 32 tokens over KVP x TPA
#            ranks (--check) gives the tokens of the token-by-token prefill
#            (HELIX_PREFILL=steps); HOP-B on and off give the same hidden state
#        prefill.sh eos HELIX DATA HELIXRUN
#            --eos: the run stops after the step at which every request has produced a
#            stop id (tokens equal to the full run's up to each request's first), over
#            2 ranks with --check; --ignore-eos runs every step; bad lists exit 2
#        prefill.sh ragged HELIX DATA HELIXRUN MODEL KVP TPA   (MODEL: preset or file)
#            prompts of different lengths in one batch over KVP x TPA ranks (--check, HOP-B
#            on): request b's tokens are request b's of a batch whose requests all hold its
#            prompt (greedy, sampling, --eos; the synthetic context and the draws are per
#            request); chunks of 1 and 4 give the same tokens; decode --check gives them
#            too; HELIX_PREFILL=steps refuses them
#        prefill.sh faultstep HELIX DATA
#            HELIX_FAULT's step is a decode step: with HELIX_PREFILL=steps, step 0 fires in
#            the first decode step, not in the prompt's
#        prefill.sh inputs HELIX DATA
#            bad prompt files: exit 2 naming file:line:column (or what the path is: a
#            directory, a pipe without a writer, too many lines); a checkpoint's bad
#            eos_token_id: exit 2 naming config.json:line:column
#        prefill.sh rankdiff HELIX DATA prefill|eos   (one rank of a 2-rank job)
#            rank 1 runs with HELIX_PREFILL=steps or another --eos: the ranks must refuse
#        prefill.sh rankprompt HELIX DATA   (one rank of a 2-rank job)
#            rank 1 reads another prompt of the same length: the ranks must refuse
set -u
if [ "$1" = rankdiff ]; then # rankdiff HELIX DATA prefill|eos: rank 1 runs otherwise
    rank=${PMIX_RANK:-${OMPI_COMM_WORLD_RANK:-0}}
    extra=()
    if [ "$rank" = 1 ] && [ "$4" = prefill ]; then export HELIX_PREFILL=steps; fi
    if [ "$rank" = 1 ] && [ "$4" = eos ]; then extra=(--eos 7); fi
    exec "$2" generate --kvp 2 --max-new 3 --prompt-ids "$3/prompt3.txt" --timeout 20 \
        "${extra[@]}"
fi
if [ "$1" = rankprompt ]; then
    rank=${PMIX_RANK:-${OMPI_COMM_WORLD_RANK:-0}}
    p=$3/prompt3.txt
    [ "$rank" = 1 ] && p=$3/prompt3_other.txt # the same lines in another order
    exec "$2" decode --kvp 2 --steps 2 --context 10 --prompt-ids "$p" --timeout 20
fi
mode=$1 helix=$2 data=$3
shift 3
. "$(dirname "$0")/report.sh" # $dir (removed at exit), fail=0, json_field FILE EXPR

run() { # OUT CMD...: runs it with a deadline, prints it and fails the test on exit != 0
    local out=$1
    shift
    timeout -k 5 150 "$@" >"$out" 2>"$dir/err"
    local rc=$?
    echo "$* -> exit $rc"
    if [ $rc -ne 0 ]; then
        cat "$out" "$dir/err"
        exit 1
    fi
}

case $mode in
ranks)
    helixrun=$1 kvp=$2 tpa=$3
    n=$((kvp * tpa))
    args=(--context 29 --steps 8 --kv-block 4 --prompt-ids "$data/prompt3.txt" --prefill-chunk 5
          --check --json --timeout 60)
    run "$dir/one" "$helix" decode "${args[@]}"
    run "$dir/many" "$helixrun" --no-prefix -n $n --timeout 120 -- "$helix" decode --kvp $kvp \
        --tpa $tpa "${args[@]}"
    a=$(json_field "$dir/one" "d['prefill_tokens'], d['tokens']")
    b=$(json_field "$dir/many" "d['prefill_tokens'], d['tokens']")
    echo "1 rank:   $a"
    echo "$n ranks: $b"
    ok=$(json_field "$dir/many" "d['passed'] and d['batch'] == 3 and d['prompt_len'] == 19 and d['kv_rows_checked'] == 2 * 3 * 2 * (19 + 8)")
    if [ "$a" != "$b" ] || [ "$ok" != True ]; then
        echo "FAIL: tokens differ or the check did not pass"
        fail=1
    fi
    ;;
chunked)
    helixrun=$1 model=$2 prompt=$3 batch=$4 kvp=$5 tpa=$6 ep=$7
    n=$((kvp * tpa))
    cmd=("$helixrun" --no-prefix -n $n --timeout 120 -- "$helix" decode --model "$data/$model"
         --kvp $kvp --tpa $tpa --ep $ep --batch $batch --prompt-ids "$data/$prompt"
         --context 29 --kv-block 4 --steps 6 --check --json --timeout 60)
    HELIX_PREFILL=steps run "$dir/steps" "${cmd[@]}" --hopb off
    ref=$(json_field "$dir/steps" "d['prefill_tokens'], d['tokens']")
    echo "token by token: $ref"
    for cm in 1:on 7:off 7:on 32:on; do
        c=${cm%:*} hopb=${cm#*:}
        run "$dir/c$cm" "${cmd[@]}" --prefill-chunk $c --hopb $hopb
        got=$(json_field "$dir/c$cm" "d['prefill_tokens'], d['tokens']")
        ok=$(json_field "$dir/c$cm" "d['passed'] and d['tokens_match'] and d['batch'] == $batch and d['kv_rows_checked'] > 0")
        echo "chunk $c hopb $hopb (check $ok): $got"
        if [ "$got" != "$ref" ] || [ "$ok" != True ]; then
            echo "FAIL: chunk $c: tokens differ from the token-by-token prefill or the check failed"
            fail=1
        fi
    done
    h0=$(json_field "$dir/c7:off" "d['hidden_hash']")
    h1=$(json_field "$dir/c7:on" "d['hidden_hash']")
    [ "$h0" = "$h1" ] || { echo "FAIL: hopb on and off differ (hidden $h0 vs $h1)"; fail=1; }
    ;;
generate)
    helixrun=$1
    # greedy generate: the prefill's token, then decode's
    run "$dir/dec" "$helix" decode --prompt-ids "$data/prompt1.txt" --batch 2 --context 0 \
        --steps 9 --json
    run "$dir/gen" "$helix" generate --prompt-ids "$data/prompt1.txt" --batch 2 --max-new 10 \
        --json
    a=$(json_field "$dir/dec" "[[p] + t for p, t in zip(d['prefill_tokens'], d['tokens'])]")
    b=$(json_field "$dir/gen" "d['tokens']")
    echo "decode:   $a"
    echo "generate: $b"
    [ "$a" = "$b" ] || { echo "FAIL: greedy generate differs from decode"; fail=1; }
    # sampling: same seed twice, then another seed
    s=(--prompt-ids "$data/prompt3.txt" --max-new 12 --temperature 0.9 --top-p 0.95 --json)
    run "$dir/s1" "$helix" generate "${s[@]}" --seed 3
    run "$dir/s2" "$helix" generate "${s[@]}" --seed 3
    run "$dir/s3" "$helix" generate "${s[@]}" --seed 4
    t1=$(json_field "$dir/s1" "d['tokens']")
    t2=$(json_field "$dir/s2" "d['tokens']")
    t3=$(json_field "$dir/s3" "d['tokens']")
    echo "seed 3: $t1"; echo "seed 3: $t2"; echo "seed 4: $t3"
    [ "$t1" = "$t2" ] || { echo "FAIL: sampling with one seed is not reproducible"; fail=1; }
    [ "$t1" != "$t3" ] || { echo "FAIL: another seed drew the same tokens"; fail=1; }
    # the same draws over 2 x 2 ranks, checked against the reference
    run "$dir/s4" "$helixrun" --no-prefix -n 4 --timeout 120 -- "$helix" generate "${s[@]}" \
        --seed 3 --kvp 2 --tpa 2 --check --timeout 60
    t4=$(json_field "$dir/s4" "d['tokens']")
    ok=$(json_field "$dir/s4" "d['passed'] and d['tokens_match']")
    echo "seed 3, 4 ranks, --check $ok: $t4"
    [ "$t1" = "$t4" ] && [ "$ok" = True ] || { echo "FAIL: sampling over 4 ranks"; fail=1; }
    ;;
ragged)
    helixrun=$1 model=$2 kvp=$3 tpa=$4 # MODEL: a preset or a model file
    n=$((kvp * tpa))
    # lengths 3, 45 and 4 after 37 context tokens: the long prompt spans chunks alone
    printf '5 6 7\n%s\n3 4 5 6\n' "$(seq -s ' ' 9 53)" >"$dir/p.txt"
    common=(--model "$model" --context 37 --max-new 5 --json)
    mr=("$helixrun" --no-prefix -n "$n" --timeout 150 -- "$helix" generate "${common[@]}"
        --kvp "$kvp" --tpa "$tpa" --prompt-ids "$dir/p.txt" --check --hopb on --timeout 60)
    for mode in greedy sampling; do
        samp=()
        [ $mode = sampling ] && samp=(--temperature 0.9 --top-p 0.95 --seed 5)
        run "$dir/all" "${mr[@]}" "${samp[@]}"
        got=$(json_field "$dir/all" "d['tokens']")
        ok=$(json_field "$dir/all" "d['passed'] and d['tokens_match'] and d['prompt_lens'] == [3, 45, 4] and d['max_new'] == 5 and d['kv_rows_checked'] > 0")
        want=()
        # request r - 1 of a batch whose three requests all hold prompt r: its synthetic
        # context and its draws are those of request r - 1
        for r in 1 2 3; do
            sed -n "${r}p" "$dir/p.txt" >"$dir/p$r.txt"
            run "$dir/one" "$helix" generate "${common[@]}" --prompt-ids "$dir/p$r.txt" \
                --batch 3 "${samp[@]}"
            want+=("$(json_field "$dir/one" "d['tokens'][$((r - 1))]")")
        done
        want_s=$(python3 -c "import json,sys; print(json.dumps([json.loads(a) for a in sys.argv[1:]]))" "${want[@]}")
        echo "$mode: batch $got, alone $want_s, check $ok"
        [ $mode = greedy ] && greedy=$got
        [ "$got" = "$want_s" ] && [ "$ok" = True ] ||
            { echo "FAIL: $mode: prompts of different lengths"; fail=1; }
    done
    # other chunk sizes: the same tokens (chunks of 1 hold all three requests; of 4 the
    # short ones leave after the first)
    for c in 1 4; do
        run "$dir/c" "${mr[@]}" --prefill-chunk $c
        got=$(json_field "$dir/c" "d['tokens'] if d['passed'] else 'check failed'")
        echo "chunks of $c: $got"
        [ "$got" = "$greedy" ] || { echo "FAIL: chunks of $c: not the tokens of chunks of 32"; fail=1; }
    done
    # a stop id: each request ends as when it runs alone
    e=$(json_field "$dir/one" "d['tokens'][2][1]")
    run "$dir/stop" "${mr[@]}" --eos "$e"
    for r in 1 2 3; do
        run "$dir/one" "$helix" generate "${common[@]}" --prompt-ids "$dir/p$r.txt" \
            --batch 3 --eos "$e"
        want[r - 1]=$(json_field "$dir/one" "d['tokens'][$((r - 1))]")
    done
    want_s=$(python3 -c "import json,sys; print(json.dumps([json.loads(a) for a in sys.argv[1:]]))" "${want[@]}")
    got=$(json_field "$dir/stop" "d['tokens'] if d['passed'] else 'check failed'")
    echo "--eos $e: batch $got, alone $want_s"
    [ "$got" = "$want_s" ] || { echo "FAIL: --eos with prompts of different lengths"; fail=1; }
    # --max-new 1: the prefill's tokens alone, each at its request's last prompt token
    run "$dir/one" "${mr[@]}" --max-new 1
    got=$(json_field "$dir/one" "[t[0] for t in d['tokens']] if d['passed'] and d['decode_steps'] == 0 else 'wrong'")
    want_s=$(python3 -c "import json,sys; print([t[0] for t in json.loads(sys.argv[1])])" "$greedy")
    echo "--max-new 1: $got, want $want_s"
    [ "$got" = "$want_s" ] || { echo "FAIL: --max-new 1 with prompts of different lengths"; fail=1; }
    # decode takes them too: --check over the same layout
    run "$dir/dec" "$helixrun" --no-prefix -n "$n" --timeout 150 -- "$helix" decode \
        --model "$model" --context 37 --kvp "$kvp" --tpa "$tpa" --prompt-ids "$dir/p.txt" \
        --steps 4 --check --json --timeout 60
    got=$(json_field "$dir/dec" "[[p] + t for p, t in zip(d['prefill_tokens'], d['tokens'])] if d['passed'] and d['prompt_lens'] == [3, 45, 4] else 'check failed'")
    echo "decode: $got"
    [ "$got" = "$greedy" ] || { echo "FAIL: decode with prompts of different lengths"; fail=1; }
    # the token-by-token prefill takes prompts of one length: refused, naming the setting
    HELIX_PREFILL=steps "$helix" generate "${common[@]}" --prompt-ids "$dir/p.txt" \
        >/dev/null 2>"$dir/err"
    rc=$?
    echo "HELIX_PREFILL=steps: exit $rc: $(cat "$dir/err")"
    [ $rc -eq 2 ] && grep -qF "HELIX_PREFILL=steps runs prompts of one length" "$dir/err" ||
        { echo "FAIL: HELIX_PREFILL=steps with prompts of different lengths"; fail=1; }
    ;;
eos)
    helixrun=$1
    g=(generate --prompt-ids "$data/prompt3.txt" --max-new 12 --json)
    run "$dir/full" "$helix" "${g[@]}"
    full=$(json_field "$dir/full" "d['tokens']")
    # stop ids: request r's token 2 + 2r (3 requests: tokens 2, 4, 6); the run must end
    # after the step at which the last request meets one, each request cut at its first
    ids=$(json_field "$dir/full" "','.join(str(t[2 + 2 * r]) for r, t in enumerate(d['tokens']))")
    want=$(python3 -c "import json,sys
t=json.loads(sys.argv[1]); e={int(x) for x in sys.argv[2].split(',')}
cut=[r[:next(i for i, x in enumerate(r) if x in e) + 1] for r in t]
print(json.dumps(cut).replace(' ', ''), max(len(c) for c in cut) - 1)" "$full" "$ids")
    run "$dir/stop" "$helixrun" --no-prefix -n 2 --timeout 120 -- "$helix" "${g[@]}" \
        --kvp 2 --eos "$ids" --check --timeout 60
    got="$(json_field "$dir/stop" "json.dumps(d['tokens']).replace(' ', '')") $(json_field "$dir/stop" "d['decode_steps']")"
    ok=$(json_field "$dir/stop" "d['eos_stop'] and d['passed'] and d['tokens_match']")
    echo "full: $full; stop ids $ids: want $want, got $got (eos_stop, check: $ok)"
    [ "$got" = "$want" ] && [ "$ok" = True ] || { echo "FAIL: --eos"; fail=1; }
    run "$dir/ign" "$helix" "${g[@]}" --eos "$ids" --ignore-eos
    [ "$(json_field "$dir/ign" "d['tokens']")" = "$full" ] &&
        [ "$(json_field "$dir/ign" "d['eos_stop']")" = False ] ||
        { echo "FAIL: --ignore-eos did not run every step"; fail=1; }
    for bad in "1,x" "1," "-1" "99999999" " 5" "+5" "1, 2" "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"; do
        "$helix" "${g[@]}" --eos "$bad" >/dev/null 2>"$dir/err"
        rc=$?
        echo "--eos $bad: exit $rc: $(cat "$dir/err")"
        [ $rc -eq 2 ] && grep -qF -- "--eos" "$dir/err" || { echo "FAIL: --eos $bad"; fail=1; }
    done
    ;;
faultstep)
    for n in 1 2; do # --max-new 1: no decode step (the fault must not fire); 2: one
        HELIX_PREFILL=steps HELIX_FAULT=nan:rank=0:step=0 timeout -k 5 60 "$helix" generate \
            --prompt-ids "$data/prompt3.txt" --max-new $n >"$dir/out" 2>"$dir/err"
        rc=$?
        echo "--max-new $n: exit $rc: $(grep -m1 -o 'non-finite value[^,]*' "$dir/err")"
        if [ $n = 1 ] && [ $rc -ne 0 ]; then echo "FAIL: the fault fired in the prompt"; fail=1; fi
        if [ $n = 2 ] && { [ $rc -ne 1 ] || ! grep -q "non-finite value" "$dir/err"; }; then
            echo "FAIL: the fault did not fire in decode step 0"; fail=1
        fi
    done
    ;;
inputs)
    expect2() { # FILE_CONTENT MESSAGE [extra args]
        printf "$1" >"$dir/p.txt"
        shift
        local msg=$1
        shift
        "$helix" decode --prompt-ids "$dir/p.txt" --steps 1 "$@" >/dev/null 2>"$dir/err"
        local rc=$?
        echo "exit $rc: $(cat "$dir/err")"
        if [ $rc -ne 2 ] || ! grep -qF -- "$msg" "$dir/err"; then
            echo "FAIL: expected exit 2 and '$msg'"
            fail=1
        fi
    }
    expect2 '1 2 3\n4 x5 6\n' "p.txt:2:3: 'x5' is not a token id"
    expect2 '1 2 3\n4 5-6 7\n' "p.txt:2:3: '5-6' is not a token id"
    expect2 '1 2 3\n  4 512 6\n' "p.txt:2:5: token id 512 is outside the vocabulary"
    expect2 '1 2 3\n4 99999999999999999999 6\n' "p.txt:2:3: token id 99999999999999999999 is outside"
    expect2 '1 2 3\n4 5 6\n' "has 2 lines (one per request) but --batch is 3" --batch 3
    expect2 '\n \n' "no token ids"
    # an empty line between prompts (or before the first) would shift the later requests;
    # empty lines at the end are only the file's end
    expect2 '1 2 3\n\n4 5 6\n' "p.txt:2:1: an empty line before the prompt of line 3"
    expect2 ' \t\n1 2 3\n' "p.txt:1:1: an empty line before the prompt of line 2"
    # a line ends at \n or \r\n: a lone \r (old Mac files), \v or \f between prompts would
    # join two requests' prompts
    expect2 '1 2 3\r4 5 6\r' "p.txt:1:6: a carriage return inside a line"
    expect2 '1 2\v3\n' "p.txt:1:4: a vertical tab inside a line"
    expect2 '1 2 3\n\f\n4\n' "p.txt:2:1: a form feed inside a line"
    printf '1 2 3\r\n4 5 6\r\n' >"$dir/p.txt"
    "$helix" decode --prompt-ids "$dir/p.txt" --steps 1 --batch 2 >/dev/null 2>"$dir/err" || {
        echo "FAIL: CRLF lines refused: $(cat "$dir/err")"
        fail=1
    }
    printf '1 2 3\n4 5 6\n\n \n' >"$dir/p.txt"
    "$helix" decode --prompt-ids "$dir/p.txt" --steps 1 --batch 2 >/dev/null 2>"$dir/err" || {
        echo "FAIL: empty lines at the end refused: $(cat "$dir/err")"
        fail=1
    }
    "$helix" decode --prompt-ids "$dir/missing.txt" >/dev/null 2>"$dir/err"
    rc=$?
    echo "exit $rc: $(cat "$dir/err")"
    [ $rc -eq 2 ] && grep -qF "missing.txt: no such prompt file" "$dir/err" || fail=1
    expect_file() { # PATH MESSAGE: exit 2 naming the problem, within the deadline
        timeout -k 2 20 "$helix" decode --prompt-ids "$1" --steps 1 >/dev/null 2>"$dir/err"
        local rc=$?
        echo "exit $rc: $(cat "$dir/err")"
        if [ $rc -ne 2 ] || ! grep -qF -- "$2" "$dir/err"; then
            echo "FAIL: $1: expected exit 2 and '$2'"
            fail=1
        fi
    }
    # a named pipe nobody writes to reads as empty (its open used to block for ever)
    mkfifo "$dir/fifo"
    expect_file "$dir/fifo" "no token ids"
    expect_file "$dir" "is a directory, not a prompt file"
    # more lines than --batch allows requests
    yes 7 | head -n 65537 >"$dir/many.txt"
    expect_file "$dir/many.txt" "has 65537 lines (one request each): at most 65536 requests"
    # the checkpoint's eos_token_id: ids only (a wrapped 2^32 + 5 used to become 5)
    "$helix" model synth --family dense --out "$dir/ck" >/dev/null 2>&1 || fail=1
    for eos in 4294967301 -1 '"2"' '[1, 2.5]' "[$(seq -s, 1 17)]"; do
        python3 - "$dir/ck/config.json" "$eos" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["eos_token_id"] = json.loads(sys.argv[2])
json.dump(c, open(sys.argv[1], "w"), indent=1)
PY
        printf '1 2 3\n' >"$dir/p.txt"
        timeout -k 2 60 "$helix" generate --model "$dir/ck" --prompt-ids "$dir/p.txt" \
            --max-new 2 >/dev/null 2>"$dir/err"
        rc=$?
        echo "eos_token_id $eos: exit $rc: $(cat "$dir/err")"
        if [ $rc -ne 2 ] || ! grep -qE "config.json:[0-9]+:[0-9]+: eos_token_id: " "$dir/err"; then
            echo "FAIL: eos_token_id $eos: expected exit 2 naming config.json:line:column"
            fail=1
        fi
    done
    "$helix" generate --max-new 3 >/dev/null 2>"$dir/err"
    rc=$?
    echo "exit $rc: $(cat "$dir/err")"
    [ $rc -eq 2 ] && grep -qF -- "--prompt-ids: required" "$dir/err" || fail=1
    ;;
*)
    echo "unknown mode $mode"; exit 2 ;;
esac
exit $fail
