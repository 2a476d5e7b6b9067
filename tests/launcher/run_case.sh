#!/bin/bash
# helixrun end-to-end cases: run_case.sh CASE HELIXRUN PMIX_CLIENT. Each case runs helixrun
# under a hard timeout and asserts its exit code, the elapsed time, its messages, that no
# rank outlives it and that its private PMIx directory is gone.
set -u
case_name=$1
HR=$2
CL=$3

root=$(mktemp -d "${TMPDIR:-/tmp}/hlx_launcher_test.XXXXXX") || exit 1
# helixrun makes its private directory under $TMPDIR: point that at an empty folder of
# our own, so "nothing left behind" is simply "still empty".
export TMPDIR=$root/tmp
mkdir "$TMPDIR"
out=$root/out
err=$root/err
fails=0
trap 'rm -rf "$root"' EXIT

fail() {
    echo "FAIL [$case_name]: $*"
    fails=$((fails + 1))
}

# run LIMIT_S ARGS...: runs helixrun with ARGS under a hard limit; sets rc and elapsed (s).
run() {
    local limit=$1 t0 t1
    shift
    t0=$EPOCHREALTIME
    timeout -k 2 "$limit" "$HR" "$@" >"$out" 2>"$err"
    rc=$?
    t1=$EPOCHREALTIME
    elapsed=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    echo "helixrun $* -> exit $rc in ${elapsed}s"
    sed 's/^/  stdout: /' "$out" | head -n 40
    sed 's/^/  stderr: /' "$err" | head -n 40
}

expect_rc() {
    [ "$rc" -eq "$1" ] || fail "exit code $rc, expected $1"
}

# expect_time MIN MAX: elapsed seconds within [MIN, MAX].
expect_time() {
    awk -v e="$elapsed" -v lo="$1" -v hi="$2" 'BEGIN { exit !(e >= lo && e <= hi) }' ||
        fail "took ${elapsed}s, expected between $1 and $2 s"
}

expect_err() {
    grep -Eq -- "$1" "$err" || fail "stderr lacks /$1/"
}

expect_out() {
    grep -Eq -- "$1" "$out" || fail "stdout lacks /$1/"
}

# count FILE LINE: how many times LINE appears as a whole line.
count() {
    grep -Fxc -- "$2" "$1"
}

# Every pid a rank printed ("[R] rank R: pid P") must be gone once helixrun returned.
expect_no_survivors() {
    local pid
    for pid in $(sed -n 's/^\[[0-9]*\] rank [0-9]*: pid \([0-9]*\)$/\1/p' "$out"); do
        if kill -0 "$pid" 2>/dev/null; then
            fail "rank pid $pid still alive after helixrun exited"
            kill -KILL "$pid" 2>/dev/null
        fi
    done
}

expect_clean_tmp() {
    if [ -n "$(ls -A "$TMPDIR")" ]; then
        fail "left behind in \$TMPDIR: $(ls -A "$TMPDIR" | tr '\n' ' ')"
        rm -rf "${TMPDIR:?}"/*
    fi
}

# A normal job of N ranks: every rank exchanges values and reports once, prefixed.
check_basic() {
    local n=$1 r
    run 15 -n "$n" "$CL"
    expect_rc 0
    expect_time 0 5
    for ((r = 0; r < n; r++)); do
        [ "$(count "$out" "[$r] rank $r of $n: exchange ok")" -eq 1 ] ||
            fail "rank $r did not report its exchange exactly once"
    done
    [ "$(wc -l <"$out")" -eq $((2 * n)) ] || fail "expected $((2 * n)) stdout lines"
    [ ! -s "$err" ] || fail "unexpected stderr output"
    expect_clean_tmp
}

case $case_name in
basic1) check_basic 1 ;;
basic2) check_basic 2 ;;
basic4) check_basic 4 ;;

output)
    # Every line of every rank exactly once, on the right stream, with the right prefix.
    n=4
    lines=200
    run 15 -n $n "$CL" lines:$lines
    expect_rc 0
    for ((r = 0; r < n; r++)); do
        for ((i = 0; i < lines; i++)); do
            [ "$(count "$out" "[$r] out line $i of rank $r")" -eq 1 ] ||
                fail "stdout line $i of rank $r not exactly once"
            [ "$(count "$err" "[$r] err line $i of rank $r")" -eq 1 ] ||
                fail "stderr line $i of rank $r not exactly once"
        done
    done
    [ "$(wc -l <"$out")" -eq $((n * lines + 2 * n)) ] || fail "stray stdout lines"
    [ "$(wc -l <"$err")" -eq $((n * lines)) ] || fail "stray stderr lines"
    run 15 -n 2 --tag-output "$CL" lines:3
    expect_rc 0
    [ "$(count "$out" "[1]<stdout>: out line 2 of rank 1")" -eq 1 ] || fail "--tag-output stdout"
    [ "$(count "$err" "[0]<stderr>: err line 0 of rank 0")" -eq 1 ] || fail "--tag-output stderr"
    run 15 -n 2 --no-prefix "$CL" lines:3
    expect_rc 0
    [ "$(count "$out" "out line 2 of rank 1")" -eq 1 ] || fail "--no-prefix stdout"
    [ "$(count "$err" "err line 1 of rank 0")" -eq 1 ] || fail "--no-prefix stderr"
    # A last line without a newline still appears; -x sets and forwards variables.
    export HLX_TEST_FWD=forwarded
    run 15 -n 2 -x HLX_TEST_SET=set -x HLX_TEST_FWD sh -c \
        'printf "%s %s %s %s" "$HELIXRUN" "$HELIX_RANK/$HELIX_SIZE" "$HLX_TEST_SET" "$HLX_TEST_FWD"'
    expect_rc 0
    [ "$(count "$out" "[0] 1 0/2 set forwarded")" -eq 1 ] || fail "rank 0 environment"
    [ "$(count "$out" "[1] 1 1/2 set forwarded")" -eq 1 ] || fail "rank 1 environment"
    expect_clean_tmp
    ;;

exit3)
    run 15 -n 4 --grace 2 "$CL" exit:3:1
    expect_rc 3
    expect_time 0 3
    expect_err '^helixrun: rank 1 \(pid [0-9]+\) exited with status 3( |;|$)'
    expect_no_survivors
    expect_clean_tmp
    ;;

sigkill)
    run 15 -n 4 --grace 2 "$CL" sigkill:2
    expect_rc 137
    expect_time 0 2
    expect_err '^helixrun: rank 2 \(pid [0-9]+\) was killed by signal 9 \(SIGKILL\)'
    expect_no_survivors
    expect_clean_tmp
    ;;

abort)
    run 15 -n 4 --grace 2 "$CL" abort:7:3
    expect_rc 7
    expect_time 0 3
    expect_err '^helixrun: rank 3 \(pid [0-9]+\) called PMIx_Abort with status 7: test abort'
    expect_no_survivors
    expect_clean_tmp
    ;;

nofence)
    # Rank 1 never joins PMIx; the others wait for it in the fence until it exits (0.3 s).
    run 15 -n 4 --grace 2 "$CL" nopmix:1
    expect_rc 1
    expect_time 0.25 3
    expect_err '^helixrun: rank 1 \(pid [0-9]+\) exited with status 0 without ever connecting to PMIx'
    expect_no_survivors
    expect_clean_tmp
    # Rank 1 joins but finalizes without the fence: the others' fence fails, the job ends.
    run 15 -n 4 --grace 2 "$CL" nofence:1
    [ "$rc" -ne 0 ] || fail "exit 0 although rank 1 skipped the fence"
    expect_time 0.25 3
    expect_err '^helixrun: rank [0-9] \(pid [0-9]+\) exited with status'
    expect_no_survivors
    # Rank 1 runs the whole exchange but exits without PMIx_Finalize.
    run 15 -n 2 --grace 2 "$CL" nofinalize:1
    expect_rc 1
    expect_time 0 3
    expect_err '^helixrun: rank 1 \(pid [0-9]+\) exited with status 0 without calling PMIx_Finalize'
    expect_clean_tmp
    ;;

timeout)
    run 15 -n 3 --timeout 1 --grace 1 "$CL" sleep:30:1
    expect_rc 124
    expect_time 0.9 3
    expect_err '^helixrun: timeout after 1 s; 3 rank\(s\) still running: 0 \(pid [0-9]+\), 1 \(pid [0-9]+\), 2 \(pid [0-9]+\)'
    expect_no_survivors
    expect_clean_tmp
    # A rank that never reaches PMIx is named as such.
    run 15 -n 2 --timeout 1 --grace 1 bash -c \
        'if [ "$HELIX_RANK" = 1 ]; then exec sleep 30; else exec "$0" "$@"; fi' "$CL"
    expect_rc 124
    expect_time 0.9 3
    expect_err '^helixrun: timeout after 1 s; 2 rank\(s\) still running: .*; never connected to PMIx: 1 \(pid [0-9]+\)'
    expect_clean_tmp
    # Ranks that ignore SIGTERM are SIGKILLed after the grace period.
    run 15 -n 2 --timeout 0.5 --grace 0.5 bash -c 'trap "" TERM; sleep 30 & wait'
    expect_rc 124
    expect_time 0.9 3
    expect_err 'still running 0.5 s after SIGTERM; sending SIGKILL'
    expect_clean_tmp
    # A stopped rank (SIGSTOP) goes at SIGTERM, well before the 5 s grace ends.
    run 15 -n 2 --timeout 0.5 --grace 5 bash -c \
        'if [ "$HELIX_RANK" = 1 ]; then kill -STOP $$; fi; sleep 30'
    expect_rc 124
    expect_time 0.4 2.5
    expect_clean_tmp
    ;;

signal)
    # SIGTERM to helixrun is forwarded; it exits 128+15 and cleans up.
    t0=$EPOCHREALTIME
    "$HR" -n 3 --grace 2 "$CL" sleep:30:0 >"$out" 2>"$err" &
    hpid=$!
    sleep 0.5
    kill -TERM $hpid
    wait $hpid
    rc=$?
    elapsed=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
    echo "helixrun (SIGTERM after 0.5 s) -> exit $rc in ${elapsed}s"
    cat "$err"
    expect_rc 143
    expect_time 0.4 3
    expect_err '^helixrun: received SIGTERM; forwarding it to the job'
    expect_no_survivors
    expect_clean_tmp
    ;;

badflags)
    run 5 -n 2 --bogus "$CL"
    expect_rc 2
    expect_err "unknown option '--bogus'"
    run 5 -n 0 "$CL"
    expect_rc 2
    expect_err "-n/--np '0'"
    run 5 -n 2 --timeout abc "$CL"
    expect_rc 2
    expect_err "--timeout 'abc'"
    run 5 -n 2 --grace -1 "$CL"
    expect_rc 2
    expect_err "--grace '-1'"
    run 5 -n 2 --prefix fancy "$CL"
    expect_rc 2
    expect_err "--prefix 'fancy'"
    run 5 -n 2 -x 1BAD "$CL"
    expect_rc 2
    expect_err "-x '1BAD'"
    run 5 -n 2 --timeout
    expect_rc 2
    expect_err "--timeout: needs a value"
    run 5 "$CL"
    expect_rc 2
    expect_err "-n/--np: the number of ranks is required"
    run 5 -n 2
    expect_rc 2
    expect_err "missing program"
    run 5 -n 2 /nonexistent/program
    expect_rc 127
    expect_err "/nonexistent/program: command not found"
    run 5 --help
    expect_rc 0
    expect_out "^usage: helixrun -n N"
    run 5 --version
    expect_rc 0
    expect_out "^helixrun \(helix\) [0-9]+\.[0-9]+"
    # A program whose own flags look like ours: they belong to it.
    run 5 -n 1 sh -c 'echo "$@"' sh --timeout -n 7
    expect_rc 0
    [ "$(count "$out" "[0] --timeout -n 7")" -eq 1 ] || fail "program flags were not left alone"
    expect_clean_tmp
    ;;

*)
    echo "unknown case $case_name"
    exit 2
    ;;
esac

if [ $fails -ne 0 ]; then
    echo "$case_name: $fails check(s) failed"
    exit 1
fi
echo "$case_name: ok"
exit 0
