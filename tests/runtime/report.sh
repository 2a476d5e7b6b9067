# Sourced by the decode test scripts: json_field FILE EXPR prints Python expression EXPR
# evaluated over d, the one JSON report (the first line starting with '{') in FILE.
json_field() {
    python3 -c "import json,sys; d=json.loads([l for l in open(sys.argv[1]) if l.startswith('{')][0]); print($2)" "$1"
}
