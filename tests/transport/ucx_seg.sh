#!/bin/sh
# UCX's tcp segment variables between ranks and against HELIX_COMM_CHUNK_TCP, 2 ranks under
# helixrun: sizes spelled differently but equal as UCX reads them (16K / 16384, 65536 /
# 64kb) are one setting and the decode runs; different sizes are refused at start-up by
# the settings comparison; a segment UCX's variable sets below a HELIX_COMM_CHUNK_TCP set as
# a number is kept (UCX wins) with one warning per rank that has tcp-class peers, and none
# once the chunk fits; HELIX_COMM_CHUNK_TCP=auto follows the segment, and a segment one rank
# alone sets (auto then differs) is refused at world creation; inf, auto and sizes over
# UCX's pool limit are refused where tcp opens, and left to UCX where it does not.
# usage: ucx_seg.sh HELIXRUN HELIX COMM_CHECK
# (per rank: ucx_seg.sh rank same|differ HELIX, or ucx_seg.sh rank check COMM_CHECK LOG)
set -u
if [ "$1" = rank ]; then
    r=${PMIX_RANK:-0}
    case $2 in
    same)   if [ "$r" = 0 ]; then tx=16K rx=65536; else tx=16384 rx=64kb; fi ;;
    differ) if [ "$r" = 0 ]; then tx=16K rx=64K; else tx=16K rx=128K; fi ;;
    check)  exec "$3" --links tcp 2>"$4.$r" ;; # a log per rank: helixrun folds equal lines
    oneseg) [ "$r" = 1 ] && export UCX_TCP_TX_SEG_SIZE=16K # rank 1 alone: auto differs
            exec "$3" --links tcp ;;
    esac
    export UCX_TCP_TX_SEG_SIZE=$tx UCX_TCP_RX_SEG_SIZE=$rx
    exec "$3" decode --kvp 2 --steps 4 --context 64 --timeout 20
fi
helixrun=$1 helix=$2 check=$3
log=$(mktemp)
trap 'rm -f "$log" "$log".0 "$log".1' EXIT
fails=0
fail() { echo "ucx_seg: FAIL: $*"; sed 's/^/    /' "$log" | head -30; fails=$((fails + 1)); }
# refused WHAT CASE PROG PATTERN NAMED: 2 ranks of this script's rank CASE (running PROG)
# exit 2 with PATTERN in their output
refused() {
    timeout -k 5 60 "$helixrun" -n 2 --timeout 50 -- sh "$0" rank "$2" "$3" >"$log" 2>&1
    rc=$?
    if [ "$rc" -eq 2 ] && grep -q "$4" "$log"; then
        echo "ucx_seg: $1: refused"
    else
        fail "$1: exit $rc (expected 2 and $5)"
    fi
}

timeout -k 5 60 "$helixrun" -n 2 --timeout 50 -- sh "$0" rank same "$helix" >"$log" 2>&1
rc=$?
[ "$rc" -eq 0 ] && echo "ucx_seg: equal sizes spelled differently: accepted" ||
    fail "equal sizes spelled differently: exit $rc, expected 0"

refused "64K against 128K" differ "$helix" \
    'runs with other HELIX_COMM_\* (or UCX_TCP_\*_SEG_SIZE) values' "the transport settings named"

# every peer tcp-class (4 KiB blocks and up cross it), UCX's 16 KiB send segment: a chunk
# set above it is kept and warned about; auto (the default) follows it: 16376 bytes; a
# chunk set within it draws no warning
want='HELIX_COMM_CHUNK_TCP=131072 does not fit one tcp segment of UCX_TCP_TX_SEG_SIZE=16K'
UCX_TCP_TX_SEG_SIZE=16K UCX_TCP_RX_SEG_SIZE=64K HELIX_COMM_CHUNK_TCP=131072 \
    timeout -k 5 60 "$helixrun" -n 2 --timeout 50 -- sh "$0" rank check "$check" "$log" \
    >/dev/null 2>&1
rc=$?
cat "$log".[01] >"$log"
n=$(grep -l -F "$want" "$log".[01] | wc -l)
[ "$rc" -eq 0 ] && [ "$n" -eq 2 ] && echo "ucx_seg: chunk over UCX's segment: kept, warned" ||
    fail "chunk over UCX's segment: exit $rc (expected 0), warned by $n of 2 ranks"
want='messages of at most 16376 bytes (HELIX_COMM_CHUNK_TCP=auto), tcp send segment UCX_TCP_TX_SEG_SIZE=16K'
UCX_TCP_TX_SEG_SIZE=16K UCX_TCP_RX_SEG_SIZE=64K HELIX_DEBUG=info HELIX_DEBUG_SUBSYS=net \
    timeout -k 5 60 "$helixrun" -n 2 --timeout 50 -- sh "$0" rank check "$check" "$log" \
    >/dev/null 2>&1
rc=$?
cat "$log".[01] >"$log"
n=$(grep -l -F "$want" "$log".[01] | wc -l)
w=$(grep -c 'does not fit one tcp segment' "$log")
[ "$rc" -eq 0 ] && [ "$n" -eq 2 ] && [ "$w" -eq 0 ] &&
    echo "ucx_seg: auto chunk follows UCX's segment: 16376, no warning" ||
    fail "auto chunk: exit $rc (expected 0), limit named by $n of 2 ranks, $w warning(s)"
UCX_TCP_TX_SEG_SIZE=16K UCX_TCP_RX_SEG_SIZE=64K HELIX_COMM_CHUNK_TCP=16376 \
    timeout -k 5 60 "$helixrun" -n 2 --timeout 50 -- sh "$0" rank check "$check" "$log" \
    >/dev/null 2>&1
rc=$?
cat "$log".[01] >"$log"
n=$(grep -c 'does not fit one tcp segment' "$log")
[ "$rc" -eq 0 ] && [ "$n" -eq 0 ] && echo "ucx_seg: chunk within UCX's segment: no warning" ||
    fail "chunk within UCX's segment: exit $rc (expected 0), $n warning(s) (expected 0)"
# auto from a segment one rank alone sets: the ranks would split blocks differently; refused
# at world creation by every rank (comm_check compares no settings at start-up, as decode does)
refused "auto chunk differing between ranks" oneseg "$check" \
    'rank 1 sends all-to-all blocks to tcp-class peers .* in messages of at most 16376 bytes, rank 0 in 131072' \
    "the limits named"
# inf and auto read as unbounded sizes, which UCX's tcp interface refuses once the job runs
# (its header added, the size wraps), and 2g is over the pool limit of UCX's worker
# (ucp_worker_create: Invalid parameter): refused where a rank opens that interface, the
# variable named (exit 2); ranks with only same-host peers never open it and run
for v in UCX_TCP_TX_SEG_SIZE=inf UCX_TCP_RX_SEG_SIZE=auto UCX_TCP_TX_SEG_SIZE=2g; do
    env "$v" timeout -k 5 60 "$helixrun" -n 2 --timeout 50 -- "$check" --links tcp >"$log" 2>&1
    rc=$?
    { [ "$rc" -eq 2 ] && grep -q "${v%%=*}='${v#*=}': \(unbounded, not within\|more than\) the [0-9]* bytes UCX's worker takes" "$log"; } &&
        echo "ucx_seg: $v over tcp: refused" || fail "$v over tcp: exit $rc (expected 2 and the variable named)"
    env "$v" timeout -k 5 60 "$helixrun" -n 2 --timeout 50 -- "$check" >"$log" 2>&1
    rc=$?
    { [ "$rc" -eq 0 ] && grep -q 'backend ucx-shm' "$log"; } &&
        echo "ucx_seg: $v, same-host peers only: runs" || fail "$v, same-host peers only: exit $rc (expected 0)"
done
exit $((fails > 0))
