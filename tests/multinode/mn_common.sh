# Shared by the multinode tests (sourced): skip with 77 when this machine cannot run them,
# bring up a namespace cluster whose tag is unique to this build and test, tear it down on
# every exit (pass, failure, interrupt), and small assertions on a run's output.
set -u
. "$MN_SRC/ci/mn-lib.sh"

mn_skip() { echo "SKIP: $*"; exit 77; }
mn_fail() { echo "FAIL: $*" >&2; exit 1; }

# mn_test_up NAME NODES [RACKS RATE]: the tag is NAME plus a checksum of the build's helix
# path, so a rerun of the same test removes what a killed run left.
mn_test_up() {
    _why=$(mn_missing)
    [ -z "$_why" ] || mn_skip "$_why"
    [ -x "$HELIX" ] || mn_fail "no helix executable at $HELIX"
    _tag=$1$(printf %s "$HELIX" | cksum | cut -c1-6)
    trap 'mn_down' EXIT
    trap 'exit 130' INT TERM
    _t0=$(date +%s.%N)
    mn_up_net "$_tag" "$2" "${3:-1}" "${4:-}" && mn_up_slurm || mn_fail "bring-up failed"
    echo "cluster $_tag: $2 node(s) in ${3:-1} rack(s) up in $(awk "BEGIN { printf \"%.2f\", $(date +%s.%N) - $_t0 }") s"
    MN_OUT=$MN_DIR/out
    mkdir -p "$MN_OUT"
}

# Common run environment: UCX over tcp (else it takes shared memory between namespaces),
# a deadline on every collective, INFO logs for the placement lines.
MN_ENV="HELIX_DEBUG=INFO UCX_TLS=tcp,self HELIX_COMM_TIMEOUT=60"

# mn_expect FILE PATTERN WHAT: the output must contain the (extended) pattern.
mn_expect() {
    grep -Eq -- "$2" "$1" || { cat "$1" >&2; mn_fail "$3"; }
}
mn_expect_not() {
    ! grep -Eq -- "$2" "$1" || { cat "$1" >&2; mn_fail "$3"; }
}

# mn_same_hash FILE N: every one of the N ranks logged the same placement hash.
mn_same_hash() {
    _n=$(grep -Eo 'rank [0-9]+: hash [0-9a-f]+' "$1" | sort -u | wc -l)
    _h=$(grep -Eo 'rank [0-9]+: hash [0-9a-f]+' "$1" | awk '{print $4}' | sort -u | wc -l)
    [ "$_n" = "$2" ] && [ "$_h" = 1 ] || { cat "$1" >&2; mn_fail "expected one placement hash from $2 ranks, got $_h from $_n"; }
}

# mn_rank_node FILE RANK NODE: the rank said PMIx put it on NODE.
mn_rank_node() {
    mn_expect "$1" "rank $2 from PMIx_Init.* node $3 from PMIx" "rank $2 is not on node $3 (from PMIx)"
}

# mn_expect_share FILE RANK NODE: the rank logged its placement line and ran on NODE's CPU
# share (ci/mn-lib.sh), kept as a binding it started with ("(bound before start)"); the
# share is checked only where nodes 0 and 1 have different ones (not on a one-CPU machine,
# where every share is the whole machine and nothing binds).
mn_expect_share() {
    mn_expect "$1" "rank $2: hash [0-9a-f]+, cpus [0-9][0-9,-]*" "no placement line from rank $2"
    [ "$(mn_node_cpus 0)" != "$(mn_node_cpus 1)" ] || return 0
    mn_expect "$1" "rank $2: hash [0-9a-f]+, cpus $(mn_node_cpus "$3") \(bound before start\)" \
        "rank $2 does not run on node $3's CPU share ($(mn_node_cpus "$3"))"
}

# mn_step FILE: the median step time the run reported (ms).
mn_step() { sed -n 's/^step: *median \([0-9.]*\) ms.*/\1/p' "$1" | head -n 1; }
mn_a2a()  { sed -n 's/^phases:.*all-to-all \([0-9.]*\),.*/\1/p' "$1" | head -n 1; }

# mn_mpirun_timeout SECS ARGS...: mn_mpirun (ci/mn-lib.sh) with a deadline.
mn_mpirun_timeout() {
    _secs=$1; shift
    timeout "$_secs" sh -c '. "$MN_SRC/ci/mn-lib.sh"; mn_init "$0"; mn_mpirun "$@"' "$MN_TAG" "$@"
}
