# Sourced by the decode test scripts, once their arguments are read: a scratch folder $dir,
# removed when the script exits, fail=0 for the script's verdict, and json_field FILE EXPR,
# which prints Python expression EXPR evaluated over d, the one JSON report (the first line
# starting with '{') in FILE, with python3 -c's output, errors and exit status.
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0

# json_field asks one Python process, started here as a coprocess (json_field.py), rather
# than starting Python per call (0.1-0.2 s each on the 2-core machines). The coprocess is a
# job of the script: a script that sources this file must wait for its own jobs by pid, never
# with a bare `wait`, and count its jobs without $HLX_JSON_PID. Not for background jobs
# running at the same time: the questions and answers of two would mix. A FILE or EXPR with
# a newline or a tab (the request is one line, FILE<TAB>EXPR) starts a Python of its own.
coproc HLX_JSON { exec python3 "$(dirname "${BASH_SOURCE[0]}")/json_field.py"; }
json_field() {
    local line out= err= part=out
    case "$1$2" in *$'\n'*|*$'\t'*) # not one line: asked of a Python of its own
        python3 -c "import json,sys; d=json.loads([l for l in open(sys.argv[1]) if l.startswith('{')][0]); print($2)" "$1"
        return ;;
    esac
    printf '%s\t%s\n' "$1" "$2" >&"${HLX_JSON[1]}" || return 1
    while IFS= read -r line <&"${HLX_JSON[0]}"; do
        if [ "$line" = $'\x1e' ]; then
            [ $part = out ] && { part=err; continue; }
            IFS= read -r line <&"${HLX_JSON[0]}"
            printf '%s' "$out"
            printf '%s' "$err" >&2
            return "$line"
        fi
        if [ $part = out ]; then out+=$line$'\n'; else err+=$line$'\n'; fi
    done
    echo "json_field: the evaluator (json_field.py) ended" >&2
    return 1
}

# bg_start OUT CMD...: CMD in the background, two such jobs at a time (one a core of the
# 2-core machines the tests are sized for), its output in OUT, its errors in OUT.err, its exit
# status in OUT.rc. bg_wait OUT: waits for it (at once when waited for before); true when
# it exited 0.
declare -A bg_pid
bg_start() {
    local out=$1
    shift
    while [ "$(jobs -rp | grep -cvx "$HLX_JSON_PID")" -ge 2 ]; do wait -n; done
    { "$@" >"$out" 2>"$out.err"; echo $? >"$out.rc"; } &
    bg_pid[$out]=$!
}
bg_wait() {
    [ -n "${bg_pid[$1]-}" ] && wait "${bg_pid[$1]}" 2>/dev/null
    unset "bg_pid[$1]"
    [ "$(cat "$1.rc" 2>/dev/null)" = 0 ]
}

# run NAME RANKS ARGS...: helix decode ARGS and the script's "${args[@]}" on RANKS ranks
# (helixrun past 1; $helix and $helixrun set) into $dir/NAME.json, its tokens into
# tok[NAME] (an associative array the script declares); prints the first request's tokens
# and the check's relative error, or a FAIL line
run() {
    local name=$1 n=$2
    shift 2
    if [ "$n" = 1 ]; then
        "$helix" decode "$@" "${args[@]}" >"$dir/$name.json" 2>"$dir/err"
    else
        timeout -k 5 150 "$helixrun" --no-prefix --oversubscribe -n "$n" --timeout 120 -- \
            "$helix" decode "$@" "${args[@]}" >"$dir/$name.json" 2>"$dir/err"
    fi || { echo "FAIL: $name: $(cat "$dir/err")"; fail=1; tok[$name]=failed; return 1; }
    tok[$name]=$(json_field "$dir/$name.json" "d['tokens']")
    echo "$name: $(json_field "$dir/$name.json" "d['tokens'][0]") ... (check rel err" \
         "$(json_field "$dir/$name.json" "d['max_rel_err']"))"
}
