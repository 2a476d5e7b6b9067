#!/bin/sh
# HELIX_BIND=auto keeps a binding the rank started with (taskset here, as srun --cpu-bind
# or mpirun --bind-to would give): decode reports it as "kept" with that CPU, alone and
# under helixrun; HELIX_BIND=on replaces it with the placement's CPUs; a process that
# starts unbound is bound to its placement as before.
# usage: bind_kept.sh HELIX HELIXRUN
helix=$1 helixrun=$2
command -v taskset >/dev/null 2>&1 || { echo "no taskset: skipped"; exit 77; }
# the CPUs this test may use: a binding narrower than them is one "taskset -c LAST" makes
mine=$(python3 -c 'import os; print(len(os.sched_getaffinity(0)))')
last=$(python3 -c 'import os; print(max(os.sched_getaffinity(0)))')
[ "$mine" -ge 2 ] || { echo "one CPU to run on: nothing to narrow, skipped"; exit 77; }
fails=0
# field FILE KEY: one value of rank 0's decode JSON (the last line of FILE)
field() { tail -n 1 "$1" | python3 -c "import json,sys; v=json.load(sys.stdin)['$2']; print(str(v).lower() if isinstance(v, bool) else v)"; }
expect() { # FILE KEY WANT WHAT
    got=$(field "$1" "$2")
    if [ "$got" != "$3" ]; then
        echo "FAIL: $4: $2 is '$got', want '$3'"
        fails=$((fails + 1))
    else
        echo "ok: $4: $2 = $got"
    fi
}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
run() { # NAME ENV... -- decode args
    name=$1
    shift
    timeout -k 5 60 env "$@" >"$out/$name" 2>"$out/$name.err" ||
        { echo "FAIL: $name: exit $?"; cat "$out/$name.err"; fails=$((fails + 1)); }
}
D="decode --model tiny --steps 1 --context 64 --json"
run alone HELIX_BIND=auto taskset -c "$last" "$helix" $D
expect "$out/alone" binding kept "taskset -c $last, auto"
expect "$out/alone" cpuset "$last" "taskset -c $last, auto"
expect "$out/alone" bound true "taskset -c $last, auto"
run on HELIX_BIND=on taskset -c "$last" "$helix" $D
expect "$out/on" binding placed "taskset -c $last, HELIX_BIND=on"
expect "$out/on" cpuset "$(field "$out/on" place_cpuset)" "taskset -c $last, HELIX_BIND=on"
# started on every CPU (the test itself unbound): bound to the placement as before
if [ "$mine" -eq "$(nproc --all)" ]; then
    run free HELIX_BIND=auto "$helix" $D
    expect "$out/free" binding placed "unbound start, auto"
fi
run ranks HELIX_BIND=auto taskset -c "$last" "$helixrun" --no-prefix --oversubscribe -n 2 \
    "$helix" $D --kvp 2
expect "$out/ranks" binding kept "helixrun -n 2 under taskset -c $last, auto"
expect "$out/ranks" cpuset "$last" "helixrun -n 2 under taskset -c $last, auto"
# --threads beyond the CPUs of the kept binding: said once, the run goes on
run threads HELIX_BIND=auto taskset -c "$last" "$helix" $D --threads 2
expect "$out/threads" binding kept "taskset -c $last --threads 2"
if [ "$(grep -c -- "--threads 2 on the 1 CPU this rank was bound to before start ($last)" \
        "$out/threads.err")" != 1 ]; then
    echo "FAIL: --threads 2 on one kept CPU: no single warning:"; cat "$out/threads.err"
    fails=$((fails + 1))
fi
# helix info says the same of a process started that way
if taskset -c "$last" "$helix" info | grep -q "^binding: *started bound to CPU $last (of"; then
    echo "ok: helix info under taskset -c $last"
else
    echo "FAIL: helix info under taskset -c $last does not say it started bound:"
    "$helix" info | grep "^binding" ; fails=$((fails + 1))
fi
[ "$fails" -eq 0 ]
