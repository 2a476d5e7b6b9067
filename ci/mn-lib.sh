# Multi-node test cluster on one machine (sourced by ci/mn-cluster.sh and tests/multinode):
# network-namespace nodes on bridges (racks joined by a tbf-limited link), munge, Slurm, rsh agent.
#
# Every cluster has a tag; its namespaces are hlxmn-TAG-<i> (nodes) and hlxmn-TAG-sw<r>
# (one bridge per rack), its files live in $HLXMN_ROOT/hlxmn-TAG and every daemon it
# starts is recorded there by PID. Addresses 10.77.0.<i+1>/24 exist only inside the
# node namespaces; the root namespace gets no address, route or interface.

HLXMN_ROOT=${HLXMN_ROOT:-/tmp}
HLXMN_IF=hm0                      # the node's interface name, the same in every node

mn_log() { printf 'hlxmn: %s\n' "$*" >&2; }

# Sets the cluster's variables for TAG (no side effects).
mn_init() {
    MN_TAG=$1
    MN_DIR=$HLXMN_ROOT/hlxmn-$MN_TAG
    MN_PREFIX=hlxmn-$MN_TAG
}

mn_ns()   { echo "$MN_PREFIX-$1"; }            # node i -> namespace
mn_host() { echo "$MN_PREFIX-$1"; }            # node i -> host (and Slurm node) name
mn_addr() { echo "10.77.0.$(($1 + 1))"; }      # node i -> address inside the namespaces

# mn_cpu_share I N: node I's CPUs when N nodes split the CPUs this process may run on:
# consecutive equal shares, or CPU I mod C when there are more nodes than CPUs; written as
# hwloc and taskset write a list ("0-3,8"). Each node then computes on CPUs of its own,
# as separate machines would: a launcher that binds (mpirun binds a node's first rank to
# core 0) would otherwise stack every node's first rank on the machine's core 0.
mn_cpu_share() {
    awk -v i="$1" -v n="$2" '$1 == "Cpus_allowed_list:" {
        k = split($2, part, ","); c = 0
        for (j = 1; j <= k; j++) {
            if (split(part[j], r, "-") == 1) r[2] = r[1]
            for (x = r[1] + 0; x <= r[2] + 0; x++) cpu[c++] = x
        }
        if (c == 0) exit 1
        if (n > c) { lo = i % c; hi = lo + 1 } else { lo = int(i * c / n); hi = int((i + 1) * c / n) }
        s = ""
        for (x = lo; x < hi; x = y + 1) {
            for (y = x; y + 1 < hi && cpu[y + 1] == cpu[y] + 1; y++) ;
            s = s (s == "" ? "" : ",") cpu[x] (y > x ? "-" cpu[y] : "")
        }
        print s; found = 1; exit
    }
    END { if (!found) exit 1 }' /proc/self/status
}

# mn_node_cpus I: node I's CPU share, as recorded when the cluster came up ("" before).
mn_node_cpus() {
    [ -f "$MN_DIR/hosts" ] || return 0
    awk -v h="$(mn_host "$1")" '$2 == h { print $4 }' "$MN_DIR/hosts"
}

# Runs a command inside node i's network namespace, on the node's CPU share once the
# cluster has one.
mn_exec() {
    _n=$1; shift
    _mc=$(mn_node_cpus "$_n")
    if [ -n "$_mc" ]; then
        ip netns exec "$(mn_ns "$_n")" taskset -c "$_mc" "$@"
    else
        ip netns exec "$(mn_ns "$_n")" "$@"
    fi
}

# Why this machine cannot run the multi-node tests ("" when it can).
mn_missing() {
    [ "$(id -u)" = 0 ] || { echo "needs root (network namespaces, Slurm daemons)"; return; }
    for _c in ip tc nsenter unshare setpriv taskset munged slurmctld slurmd srun sinfo mpirun; do
        command -v "$_c" >/dev/null 2>&1 || { echo "missing $_c (run ci/install-deps.sh as root)"; return; }
    done
    [ -e /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix_v4.so ] ||
        [ -n "$(find /usr/lib -name 'mpi_pmix*.so' 2>/dev/null | head -n 1)" ] ||
        { echo "Slurm has no PMIx plugin (slurm-wlm-basic-plugins)"; return; }
    ip netns add "hlxmn-probe-$$" 2>/dev/null || { echo "cannot create network namespaces here"; return; }
    ip netns del "hlxmn-probe-$$"
    echo ""
}

# Kills the PIDs recorded in $MN_DIR/pids (only processes whose command line still
# names this cluster's directory, so a recycled PID is never hit), then removes the
# namespaces and the directory.
mn_down() {
    [ -n "${MN_DIR:-}" ] || return 0
    if [ -f "$MN_DIR/pids" ]; then
        for _sig in TERM KILL; do
            _alive=""
            while read -r _pid _what; do
                [ -r "/proc/$_pid/cmdline" ] || continue
                tr '\0' ' ' < "/proc/$_pid/cmdline" | grep -q "$MN_DIR" || continue
                kill -"$_sig" "$_pid" 2>/dev/null && _alive="$_alive $_pid"
            done < "$MN_DIR/pids"
            [ -z "$_alive" ] && break
            _i=0
            while [ $_i -lt 30 ]; do
                _left=""
                for _pid in $_alive; do [ -d "/proc/$_pid" ] && _left="$_left $_pid"; done
                [ -z "$_left" ] && break
                sleep 0.1; _i=$((_i + 1))
            done
            [ -z "$_left" ] && break
        done
    fi
    for _ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$MN_PREFIX-"); do
        # processes a test left inside a node (job steps) go with it
        for _pid in $(ip netns pids "$_ns" 2>/dev/null); do kill -KILL "$_pid" 2>/dev/null; done
        ip netns del "$_ns" 2>/dev/null
    done
    case "$MN_DIR" in */hlxmn-?*) rm -rf "$MN_DIR" ;; esac
}

# Starts a daemon in the background, records its PID. Usage: mn_daemon WHAT cmd...
mn_daemon() {
    _what=$1; shift
    "$@" > "$MN_DIR/log/$_what.out" 2>&1 < /dev/null &
    echo "$! $_what" >> "$MN_DIR/pids"
}

# mn_up TAG NODES [RACKS [RATE]]: nodes 0..NODES-1, consecutive nodes in RACKS racks of
# equal size, the racks' bridges joined in a line by links limited to RATE (tbf, e.g.
# 200mbit) in both directions. Removes what a previous cluster with this tag left first.
mn_up_net() {
    mn_init "$1"
    MN_NODES=$2
    MN_RACKS=${3:-1}
    MN_RATE=${4:-}
    mn_down
    mkdir -p "$MN_DIR/log" || return 1
    : > "$MN_DIR/pids"
    _per=$(( (MN_NODES + MN_RACKS - 1) / MN_RACKS ))
    _r=0
    while [ $_r -lt "$MN_RACKS" ]; do
        _sw=$MN_PREFIX-sw$_r
        ip netns add "$_sw" || return 1
        ip -n "$_sw" link add br0 type bridge || return 1
        ip -n "$_sw" link set br0 up
        ip -n "$_sw" link set lo up
        if [ $_r -gt 0 ]; then
            _prev=$MN_PREFIX-sw$((_r - 1))
            ip link add up$_r netns "$_prev" type veth peer name dn netns "$_sw" || return 1
            ip -n "$_prev" link set up$_r master br0 up
            ip -n "$_sw" link set dn master br0 up
            if [ -n "$MN_RATE" ]; then
                tc -n "$_prev" qdisc add dev up$_r root tbf rate "$MN_RATE" burst 32kb latency 50ms || return 1
                tc -n "$_sw" qdisc add dev dn root tbf rate "$MN_RATE" burst 32kb latency 50ms || return 1
            fi
        fi
        _r=$((_r + 1))
    done
    _i=0
    : > "$MN_DIR/hosts"
    while [ $_i -lt "$MN_NODES" ]; do
        _ns=$(mn_ns $_i)
        _sw=$MN_PREFIX-sw$((_i / _per))
        ip netns add "$_ns" || return 1
        ip link add "$HLXMN_IF" netns "$_ns" type veth peer name n$_i netns "$_sw" || return 1
        ip -n "$_sw" link set n$_i master br0 up
        ip -n "$_ns" link set lo up
        ip -n "$_ns" addr add "$(mn_addr $_i)/24" dev "$HLXMN_IF"
        ip -n "$_ns" link set "$HLXMN_IF" up
        _cpus=$(mn_cpu_share $_i "$MN_NODES") && [ -n "$_cpus" ] ||
            { mn_log "no CPU share for node $_i (Cpus_allowed_list of /proc/self/status)"; return 1; }
        echo "$(mn_addr $_i) $(mn_host $_i) rack$((_i / _per)) $_cpus" >> "$MN_DIR/hosts"
        _i=$((_i + 1))
    done
    # rsh agent for mpirun: "AGENT [-x ...] HOST CMD..." runs CMD in HOST's namespace
    cat > "$MN_DIR/rsh" <<EOF
#!/bin/sh
# rsh agent of cluster $MN_TAG: maps a node address or name to its namespace
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host=\$1; shift
line=\$(awk -v h="\$host" '\$1 == h || \$2 == h { print \$2, \$4 }' "$MN_DIR/hosts")
ns=\${line%% *} cpus=\${line#* }
[ -n "\$ns" ] && [ -n "\$cpus" ] && [ "\$cpus" != "\$line" ] ||
    { echo "rsh agent: unknown host \$host (or no CPU share in $MN_DIR/hosts)" >&2; exit 255; }
# the node's network, its own host name (as under slurmd) and its share of the CPUs
exec ip netns exec "\$ns" taskset -c "\$cpus" unshare --uts sh -c "hostname \$ns && \$*"
EOF
    chmod +x "$MN_DIR/rsh"
}

# Starts munged (own key and socket) and Slurm: slurmctld and slurmd 0 in node 0, one
# slurmd per other node, each with its own config directory (mpi.conf with its own PMIx
# tmpdir), spool and log; waits until every node is idle. CPUS: CPUs per Slurm node.
mn_up_slurm() {
    _cpus=${1:-2}
    _m=$MN_DIR/munge
    mkdir -p "$_m" && chown munge:munge "$_m" && chmod 700 "$_m" || return 1
    dd if=/dev/urandom of="$_m/munge.key" bs=1024 count=1 2>/dev/null
    chown munge:munge "$_m/munge.key" && chmod 400 "$_m/munge.key"
    mn_daemon munged setpriv --reuid=munge --regid=munge --clear-groups \
        munged -F -f --key-file="$_m/munge.key" --socket="$_m/munge.sock" \
        --pid-file="$_m/munged.pid" --log-file="$_m/munged.log" --seed-file="$_m/seed"
    _i=0
    while [ ! -S "$_m/munge.sock" ]; do
        _i=$((_i + 1)); [ $_i -lt 50 ] || { mn_log "munged did not start"; cat "$MN_DIR/log/munged.out" >&2; return 1; }
        sleep 0.1
    done
    _node_list=""
    _i=0
    while [ $_i -lt "$MN_NODES" ]; do
        _node_list="${_node_list}NodeName=$(mn_host $_i) NodeAddr=$(mn_addr $_i) CPUs=$_cpus State=UNKNOWN
"
        _i=$((_i + 1))
    done
    mkdir -p "$MN_DIR/ctld"
    cat > "$MN_DIR/slurm.conf" <<EOF
ClusterName=$(echo "$MN_PREFIX" | tr -cd 'a-z0-9')
SlurmctldHost=$(mn_host 0)($(mn_addr 0))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$_m/munge.sock
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
SchedulerType=sched/builtin
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
StateSaveLocation=$MN_DIR/ctld
SlurmctldPidFile=$MN_DIR/ctld/slurmctld.pid
SlurmctldLogFile=$MN_DIR/log/slurmctld.log
SlurmdSpoolDir=$MN_DIR/%n/spool
SlurmdPidFile=$MN_DIR/%n/slurmd.pid
SlurmdLogFile=$MN_DIR/log/slurmd-%n.log
SlurmctldPort=6817
SlurmdPort=6818
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=10
KillWait=2
InactiveLimit=0
$_node_list
PartitionName=hlxmn Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
    _i=0
    while [ $_i -lt "$MN_NODES" ]; do
        _d=$MN_DIR/$(mn_host $_i)
        mkdir -p "$_d/spool" "$_d/etc" "$_d/pmix"
        cp "$MN_DIR/slurm.conf" "$_d/etc/slurm.conf"
        echo "PMIxCliTmpDirBase=$_d/pmix" > "$_d/etc/mpi.conf"
        _i=$((_i + 1))
    done
    cp "$MN_DIR/slurm.conf" "$MN_DIR/ctld/slurm.conf"
    # nsenter + unshare (not ip netns exec, whose bare /sys remount hides the cgroup mounts
    # slurmd checks): each daemon gets the node's network and host name; slurmd also gets
    # the node's own /sys (so UCX and hwloc list this node's interfaces) with the machine's
    # cgroup tree moved back under it
    mn_daemon slurmctld nsenter --net=/run/netns/"$(mn_ns 0)" unshare --uts sh -c \
        "hostname $(mn_host 0) && exec slurmctld -D -f $MN_DIR/ctld/slurm.conf"
    _i=0
    while [ $_i -lt "$MN_NODES" ]; do
        _h=$(mn_host $_i)
        mkdir -p "$MN_DIR/$_h/cg"
        mn_daemon "slurmd-$_h" nsenter --net=/run/netns/"$(mn_ns $_i)" \
            taskset -c "$(mn_node_cpus $_i)" unshare --uts --mount --propagation private sh -c \
            "mount --rbind /sys/fs/cgroup $MN_DIR/$_h/cg && mount -t sysfs $MN_PREFIX /sys &&
             mount --move $MN_DIR/$_h/cg /sys/fs/cgroup && hostname $_h &&
             exec slurmd -D -N $_h -f $MN_DIR/$_h/etc/slurm.conf"
        _i=$((_i + 1))
    done
    export SLURM_CONF=$MN_DIR/slurm.conf
    _i=0
    while :; do
        _idle=$(mn_exec 0 sinfo -h -N -o '%N %t' 2>/dev/null | grep -c ' idle$')
        [ "$_idle" = "$MN_NODES" ] && break
        _i=$((_i + 1))
        if [ $_i -ge 300 ]; then
            mn_log "Slurm nodes not idle after 30 s:"
            mn_exec 0 sinfo -N >&2
            tail -n 5 "$MN_DIR"/log/* >&2
            return 1
        fi
        sleep 0.1
    done
}

# srun inside node 0 (Slurm's own PMIx server on each node).
mn_srun() {
    SLURM_CONF=$MN_DIR/slurm.conf mn_exec 0 srun --mpi=pmix "$@"
}

# mpirun inside node 0 under node 0's host name, reaching the other nodes through the rsh
# agent; its out-of-band traffic stays on the nodes' link. Every node's processes run on
# that node's CPU share (mn_cpu_share), unbound within it: Open MPI reads the whole
# machine's topology, so its default binding would put each node's first rank on core 0.
mn_mpirun() {
    mn_exec 0 unshare --uts sh -c "hostname $(mn_host 0) && exec \"\$@\"" mpirun \
        mpirun --allow-run-as-root --oversubscribe --bind-to none \
        --mca plm_rsh_agent "$MN_DIR/rsh" --mca oob_tcp_if_include "$HLXMN_IF" "$@"
}
