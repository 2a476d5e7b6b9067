# Sourced by the decode test scripts, once their arguments are read: a scratch folder $dir,
# removed when the script exits, fail=0 for the script's verdict, and json_field FILE EXPR,
# which prints Python expression EXPR evaluated over d, the one JSON report (the first line
# starting with '{') in FILE.
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0

json_field() {
    python3 -c "import json,sys; d=json.loads([l for l in open(sys.argv[1]) if l.startswith('{')][0]); print($2)" "$1"
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
