#!/usr/bin/env bash
# The start-up memory check holds a rank to its memory cgroup's limit (a Slurm job's
# --mem, a container's limit) where that leaves less than the node's MemAvailable: in a
# cgroup of its own limited to 1 GiB, a decode whose KV needs about 4 GiB is refused at
# start-up (exit 2) naming the cgroup, where it would otherwise start and be killed by the
# OOM killer; a small decode in the same cgroup runs. Needs a memory cgroup this process
# may create a child in (root, cgroup v1's memory controller or a v2 tree with the memory
# controller delegated): skipped (77) otherwise.
# usage: mem_cgroup.sh HELIX
set -u
helix=$1
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
trap 'rmdir "$sub" 2>/dev/null; rm -rf "$dir"' EXIT
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
exit $fail
