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
