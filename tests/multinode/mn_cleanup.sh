#!/bin/sh
# The namespace cluster cleans up after itself: a cluster left running (as by a killed run)
# is removed by the next bring-up with the same tag, and an interrupted run (SIGTERM while
# its cluster is up) stops every daemon by PID and removes its namespaces and files.
. "$MN_SRC/tests/multinode/mn_common.sh"
why=$(mn_missing)
[ -z "$why" ] || mn_skip "$why"
tag=cl$(printf %s "$HELIX" | cksum | cut -c1-6)

# leftovers of TAG: namespaces, live processes naming its directory, the directory
leftovers() {
    mn_init "$1"
    _n=$(ip netns list | awk '{print $1}' | grep -c "^$MN_PREFIX-")
    _p=0
    for _d in /proc/[0-9]*; do
        tr '\0' ' ' < "$_d/cmdline" 2>/dev/null | grep -q "$MN_DIR/" && _p=$((_p + 1))
    done
    _f=0
    [ -e "$MN_DIR" ] && _f=1
    echo "$_n $_p $_f"
}

# 1. a cluster left up, then a bring-up with the same tag
sh "$MN_SRC/ci/mn-cluster.sh" up "$tag" 2 > /dev/null || mn_fail "first bring-up failed"
mn_init "$tag"
old=$(awk '{print $1}' "$MN_DIR/pids" | tr '\n' ' ')
trap 'mn_init "$tag"; mn_down' EXIT
mn_up_net "$tag" 2 && mn_up_slurm || mn_fail "bring-up over a stale cluster failed"
for p in $old; do
    tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q "$MN_DIR" && mn_fail "stale daemon $p survived"
done
[ "$(mn_exec 0 sinfo -h -N -o %t | sort -u)" = idle ] || mn_fail "the new cluster is not idle"
mn_down
set -- $(leftovers "$tag")
[ "$*" = "0 0 0" ] || mn_fail "after mn_down: $1 namespace(s), $2 process(es), directory $3"

# 2. an interrupted run: SIGTERM while the cluster is up and a job step runs
sh -c '. "$MN_SRC/ci/mn-lib.sh"; trap mn_down EXIT; trap "exit 130" TERM
       mn_up_net "$0" 2 && mn_up_slurm || exit 1
       touch "$MN_DIR/up"
       SLURM_CONF=$MN_DIR/slurm.conf mn_exec 0 srun -N 2 -n 2 sleep 60 &
       wait' "$tag" > /dev/null 2>&1 &
run=$!
mn_init "$tag"
i=0
while [ ! -e "$MN_DIR/up" ]; do
    i=$((i + 1)); [ $i -lt 300 ] || mn_fail "the interrupted run never came up"
    sleep 0.1
done
sleep 1
kill -TERM $run
wait $run
set -- $(leftovers "$tag")
[ "$*" = "0 0 0" ] || mn_fail "after SIGTERM: $1 namespace(s), $2 process(es), directory $3"
echo "a stale cluster is replaced; SIGTERM leaves no namespace, process or file"
