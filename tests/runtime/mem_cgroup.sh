#!/usr/bin/env bash
# The start-up memory check holds a rank to its memory cgroup's limit (a Slurm job's
# --mem, a container's limit) where that leaves less than the node's MemAvailable: in a
# cgroup of its own limited to 1 GiB, a decode whose KV needs about 4 GiB is refused at
# start-up (exit 2) naming the cgroup, where it would otherwise start and be killed by the
# OOM killer; a small decode in the same cgroup runs. Needs a memory cgroup this process
# may create a child in (root, cgroup v1's memory controller or a v2 tree with the memory
# controller delegated): skipped (77) otherwise.
# With HELIXRUN, two ranks (KVP 2) that need about 0.6 GiB each: each in a
# 1 GiB cgroup of its own, they run (the room shared over the ranks inside the cgroup, one
# each, not over the node's two ranks); both in one 1 GiB cgroup, they are refused naming
# 0.50 GiB and the divisor 2; each in a 1 GiB cgroup of its own below that 1 GiB cgroup,
# they are refused naming the parent (its room shared over both).
# usage: mem_cgroup.sh HELIX [HELIXRUN]
set -u
helix=$1
helixrun=${2:-}
. "$(dirname "$0")/report.sh" # $dir (removed at exit), fail=0

# the folder of this process's memory cgroup: v1's memory controller, else the v2 tree
cg=""
rel=$(sed -n 's/^[0-9]*:[^:]*\bmemory\b[^:]*:\(.*\)$/\1/p' /proc/self/cgroup | head -n 1)
mnt=$(awk '$0 ~ / - cgroup / && $NF ~ /(^|,)memory(,|$)/ { print $5; exit }' /proc/self/mountinfo)
if [ -n "$rel" ] && [ -n "$mnt" ] && [ -d "$mnt$rel" ]; then
    cg=$mnt$rel limit_file=memory.limit_in_bytes
else
    rel=$(sed -n 's/^0::\(.*\)$/\1/p' /proc/self/cgroup | head -n 1)
    mnt=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
    [ -n "$rel" ] && [ -n "$mnt" ] && [ -d "$mnt$rel" ] && cg=$mnt$rel limit_file=memory.max
fi
[ -n "$cg" ] || { echo "SKIP: no memory cgroup found"; exit 77; }
sub=$cg/helix_mem_test_$$
if ! mkdir "$sub" 2>/dev/null || [ ! -w "$sub/$limit_file" ]; then
    rmdir "$sub" 2>/dev/null
    echo "SKIP: cannot make a memory cgroup under $cg (not root, or no memory controller there)"
    exit 77
fi
trap 'rmdir "$sub/r0" "$sub/r1" "$sub" "${sub}_r0" "${sub}_r1" 2>/dev/null; rm -rf "$dir"' EXIT
echo $((1 << 30)) >"$sub/$limit_file" || { echo "SKIP: cannot set $sub/$limit_file"; exit 77; }
sh -c 'echo $$ > "$1/cgroup.procs"' sh "$sub" 2>/dev/null ||
    { echo "SKIP: cannot move a process into $sub"; exit 77; }
# in_cgroup ARGS...: helix decode ARGS run inside the cgroup
in_cgroup() {
    sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$sub" "$helix" decode "$@"
}

in_cgroup --context 8M --steps 1 >"$dir/big.out" 2>&1
rc=$?
echo "8M tokens in a 1 GiB cgroup: exit $rc"
grep -m1 'needs' "$dir/big.out"
if [ $rc -ne 2 ] || ! grep -q "memory cgroup .*helix_mem_test_$$" "$dir/big.out"; then
    echo "FAIL: expected the start-up refusal (exit 2) naming the cgroup helix_mem_test_$$"
    cat "$dir/big.out"
    fail=1
fi
in_cgroup --context 64 --steps 2 --json >"$dir/small.json" 2>"$dir/small.err"
rc=$?
echo "64 tokens in the same cgroup: exit $rc"
if [ $rc -ne 0 ]; then
    echo "FAIL: a decode that fits the cgroup did not run"
    cat "$dir/small.err"
    fail=1
fi

[ -x "$helixrun" ] || exit $fail
# two_ranks HOW ARGS...: helix decode --kvp 2 ARGS on two ranks, each in the cgroup
# ${sub}_r$HELIX_RANK (HOW each; helixrun sets HELIX_RANK), each in $sub/r$HELIX_RANK (HOW
# nested) or both in $sub (HOW one)
two_ranks() {
    local how=$1
    shift
    "$helixrun" -n 2 --timeout 60 -- sh -c 'case $1 in each) d=$2_r$HELIX_RANK ;;
        nested) d=$2/r$HELIX_RANK ;; *) d=$2 ;; esac; shift 2
        echo $$ > "$d/cgroup.procs" && exec "$@"' \
        sh "$how" "$sub" "$helix" decode --kvp 2 "$@"
}
# limit_dirs DIR...: each made and limited to 1 GiB
limit_dirs() {
    local d
    for d in "$@"; do
        mkdir "$d" && echo $((1 << 30)) >"$d/$limit_file" || { echo "FAIL: cannot make $d"; exit 1; }
    done
}
# expect_two HOW WHAT: two_ranks HOW at 2304K tokens (about 0.6 GiB a rank); WHAT "runs",
# or "refused": exit 2 naming 0.50 GiB, the cgroup helix_mem_test_$$ and the divisor 2
expect_two() {
    local how=$1 what=$2 rc
    two_ranks "$how" --context 2304K --steps 1 >"$dir/$how.out" 2>&1
    rc=$?
    echo "2 ranks, 2304K tokens, cgroups '$how': exit $rc"
    grep -m1 'needs' "$dir/$how.out"
    if [ "$what" = runs ] && [ $rc -eq 0 ]; then
        return
    fi
    if [ "$what" = refused ] && [ $rc -eq 2 ] && grep -q "0\.50 GiB are available to it (memory cgroup [^:]*helix_mem_test_$$: [^)]*, / 2 rank(s) in that cgroup)" "$dir/$how.out"; then
        return
    fi
    echo "FAIL: '$how': expected it $what (refused: exit 2 naming 0.50 GiB, helix_mem_test_$$ and the divisor 2)"
    cat "$dir/$how.out"
    fail=1
}
limit_dirs "${sub}_r0" "${sub}_r1"
expect_two each runs    # a 1 GiB cgroup each: the room shared over one rank each
expect_two one refused  # both in one 1 GiB cgroup
# siblings below a shared limited parent (v2: the parent hands the controller down, which
# it may only while it holds no process; the ranks above have left it): the parent binds
[ "$limit_file" = memory.max ] && echo +memory >"$sub/cgroup.subtree_control" 2>/dev/null
limit_dirs "$sub/r0" "$sub/r1"
expect_two nested refused
exit $fail
