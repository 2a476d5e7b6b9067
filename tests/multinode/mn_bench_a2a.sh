#!/bin/sh
# helix bench a2a across two namespace nodes (srun, KVP across the link) beside the same on
# one node (4 ranks on its CPU share, ci/mn-lib.sh: --overcommit); skipped (77) while this
# build's helix has no `bench a2a`.
. "$MN_SRC/tests/multinode/mn_common.sh"
"$HELIX" bench --help 2>&1 | grep -q a2a || mn_skip "helix bench a2a does not exist in this build"
mn_test_up ba 2
for where in "-N 2 -m cyclic" "-N 1 --overcommit"; do
    o=$MN_OUT/a2a.$(echo "$where" | tr -cd 'A-Za-z0-9')
    timeout 240 sh -c "$(command -v ip) netns exec $(mn_ns 0) env SLURM_CONF=$MN_DIR/slurm.conf \
        srun --mpi=pmix --kill-on-bad-exit=1 -n 4 $where env $MN_ENV \
        $HELIX bench a2a ${MN_A2A_ARGS:-}" > "$o" 2>&1 ||
        { cat "$o" >&2; mn_fail "helix bench a2a ($where) failed"; }
    echo "== bench a2a, srun $where"
    grep -v ' INFO ' "$o"
done
