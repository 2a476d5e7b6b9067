#!/bin/sh
# Benchmark (suite multinode): `helix bench a2a` against Open MPI's MPI_Alltoall between
# two namespace nodes, one rank on each (each node on its own CPU share), side by side in
# one run through tests/transport/a2a_compare.sh: both under mpirun through the rsh agent,
# helix over UCX tcp (UCX_TLS=tcp,self), MPI over its tcp byte transfer layer; best and
# median of A2A_ROUNDS runs per size, ratio helix / MPI (below 1: faster).
# usage: mn_bench_a2a_mpi.sh MPI_A2A (HELIX, MN_SRC from the environment)
. "$MN_SRC/tests/multinode/mn_common.sh"
[ -x "${1:-}" ] || mn_skip "no mpi_a2a program (Open MPI's development files missing)"
mpi_a2a=$1
mn_test_up am 2
cat > "$MN_OUT/launch" <<EOL
#!/bin/sh
# one rank on each node, UCX over the link's tcp
export MN_SRC="$MN_SRC"
exec sh -c '. "\$MN_SRC/ci/mn-lib.sh"; mn_init "\$0"; mn_mpirun "\$@"' "$MN_TAG" \
    -H "$(mn_addr 0):1,$(mn_addr 1):1" -n 2 -x UCX_TLS=tcp,self -x HELIX_COMM_TIMEOUT=60 "\$@"
EOL
chmod +x "$MN_OUT/launch"
A2A_LAUNCHER=$MN_OUT/launch A2A_MPI_BTL=self,vader,tcp \
    A2A_WHERE="on 2 namespace nodes (CPUs $(mn_node_cpus 0) and $(mn_node_cpus 1)), over tcp" \
    sh "$MN_SRC/tests/transport/a2a_compare.sh" mpirun "$HELIX" "$mpi_a2a" 2 \
    "${A2A_ROUNDS:-3}" -n "${A2A_ITERS:-2000}" -w 200 || mn_fail "a2a_compare failed"
