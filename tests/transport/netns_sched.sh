#!/bin/sh
# Per-link scheduling across two network namespaces: ranks 0 and 1 in namespace A share
# memory, rank 2 in namespace B is reached over a veth slowed to 20 Mbit/s with tbf. The
# all-to-all's shared-memory blocks must land before the slow link's (link_sched checks
# it and every byte). mpirun runs inside A and starts B's daemon through an rsh agent that
# enters B. A second run lets the transport derive the classes from host names: B's side
# runs in its own UTS namespace with another host name. A third run cuts the link (veth
# down) during a barrier: the heartbeats must name the lost rank within their timeout +
# 2 s. Namespaces, veth, addresses and what ran in them are this test's own and removed
# on every exit.
# Skipped (77) when not root or when network namespaces cannot be made.
# usage: netns_sched.sh MPIRUN LINK_SCHED
set -u
mpirun=$1 prog=$2
skip() { echo "netns_sched: skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root"
command -v ip >/dev/null 2>&1 || skip "no ip command"
command -v tc >/dev/null 2>&1 || skip "no tc command"
ip netns list >/dev/null 2>&1 || skip "ip netns unavailable"

tag=hx$$
nsa=${tag}a nsb=${tag}b vea=${tag}va veb=${tag}vb
addr_a=10.251.$(( $$ % 200 )).1 addr_b=10.251.$(( $$ % 200 )).2
dir=$(mktemp -d)
cleanup() {
    for ns in "$nsa" "$nsb"; do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
    done
    ip netns del "$nsa" 2>/dev/null
    ip netns del "$nsb" 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

ip netns add "$nsa" || skip "cannot create a network namespace"
ip netns add "$nsb" || skip "cannot create a network namespace"
ip link add "$vea" type veth peer name "$veb" || skip "cannot create a veth pair"
ip link set "$vea" netns "$nsa" && ip link set "$veb" netns "$nsb" &&
ip -n "$nsa" addr add "$addr_a/24" dev "$vea" && ip -n "$nsb" addr add "$addr_b/24" dev "$veb" &&
ip -n "$nsa" link set lo up && ip -n "$nsb" link set lo up &&
ip -n "$nsa" link set "$vea" up && ip -n "$nsb" link set "$veb" up ||
    { echo "netns_sched: FAIL: network setup"; exit 1; }
# the slow link, both directions
tc -n "$nsa" qdisc add dev "$vea" root tbf rate 20mbit burst 32kb latency 400ms &&
tc -n "$nsb" qdisc add dev "$veb" root tbf rate 20mbit burst 32kb latency 400ms ||
    skip "no tbf qdisc"

cat >"$dir/rsh" <<EOS
#!/bin/sh
# mpirun's rsh agent: run the daemon command in the namespace of the host address
host=\$1
shift
case \$host in
$addr_a) ns=$nsa ;;
$addr_b) ns=$nsb ;;
*) echo "rsh: unknown host \$host" >&2; exit 1 ;;
esac
if [ "\$ns" = "$nsb" ] && [ -n "\${HLX_SCHED_UTS:-}" ]; then
    exec ip netns exec "\$ns" unshare --uts sh -c "hostname $tag-b && \$*"
fi
exec ip netns exec "\$ns" sh -c "\$*"
EOS
chmod +x "$dir/rsh"

launch() { # log, link_sched arguments...
    log=$1
    shift
    timeout -k 5 90 ip netns exec "$nsa" "$mpirun" --allow-run-as-root --oversubscribe \
        -H "$addr_a:2,$addr_b:1" -n 3 \
        --mca plm_rsh_agent "$dir/rsh" --mca oob_tcp_if_include "$addr_a/24" \
        --mca btl self,tcp --mca btl_tcp_if_include "$addr_a/24" \
        -x UCX_TLS=tcp,self -x UCX_WARN_UNUSED_ENV_VARS=n -x HELIX_COMM_TIMEOUT=60 \
        -x HELIX_HEARTBEAT_INTERVAL=0.3 -x HELIX_HEARTBEAT_TIMEOUT=3 \
        "$prog" 4194304 "$@" >"$log" 2>&1
}
run() { # label, extra link_sched argument
    log=$dir/log.$1
    launch "$log" $2
    rc=$?
    cat "$log"
    [ "$rc" -eq 0 ] || { echo "netns_sched: FAIL ($1): job exited $rc"; exit 1; }
    n=$(grep -c 'ok: shm blocks by' "$log")
    [ "$n" -eq 2 ] ||
        { echo "netns_sched: FAIL ($1): $n of 2 ranks with both link kinds passed"; exit 1; }
    echo "netns_sched: $1: ok"
}
run "links given" ""
HLX_SCHED_UTS=1 run "links from host names" --from-hosts

# partition: the job runs in the background; the link goes down between two barriers
log=$dir/log.partition
mkdir "$dir/part"
launch "$log" --partition "$dir/part" &
job=$!
i=0
while [ ! -e "$dir/part/ready" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ -e "$dir/part/ready" ] || { cat "$log"; echo "netns_sched: FAIL: partition run never ready"; exit 1; }
ip -n "$nsa" link set "$vea" down
touch "$dir/part/cut"
# survivors in A report within heartbeat timeout (3 s) + 2 s; allow the launcher 20 s
i=0
while [ "$(grep -c 'partition: barrier returned' "$log")" -lt 2 ] && [ $i -lt 200 ]; do
    sleep 0.1; i=$((i + 1))
done
kill "$job" 2>/dev/null
wait "$job" 2>/dev/null
cat "$log"
n=$(grep -c 'partition: barrier returned "peer lost"' "$log")
[ "$n" -ge 2 ] || { echo "netns_sched: FAIL: $n ranks reported the partition"; exit 1; }
grep -q 'rank 2 (host [^,]*, pid [0-9]*) silent for' "$log" ||
    { echo "netns_sched: FAIL: rank 2 not named with host and pid"; exit 1; }
grep 'partition: barrier returned "peer lost"' "$log" | sed 's/.*after \([0-9.]*\) s.*/\1/' |
    while read -r t; do
        [ "$(echo "$t <= 3 + 2" | bc)" -eq 1 ] ||
            { echo "netns_sched: FAIL: partition reported after $t s"; exit 1; }
    done || exit 1
echo "netns_sched: partition: ok"
