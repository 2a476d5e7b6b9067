#!/bin/bash
# helixrun end-to-end cases: run_case.sh CASE HELIXRUN PMIX_CLIENT [HELIX [BOOT_CLIENT
# [SIG_AT_PARSE]]]. Each case runs helixrun under a hard timeout and asserts its exit code,
# the elapsed time, its messages, that no rank outlives it and that its private PMIx
# directory is gone. HELIX (the helix binary) is needed by the cases that decode,
# SIG_AT_PARSE (a preload library) by sigint-parse.
set -u
case_name=$1
HR=$2
CL=$3
HX=${4:-}
BC=${5:-}
SP=${6:-}

# keeper-reuse and sweep-reuse hand out pid numbers at will (ns_last_pid): they run in a
# pid namespace of their own, where this script is init (and everything left ends with it).
if [[ $case_name == *-reuse ]] && [ -z "${HLX_TEST_IN_PIDNS:-}" ]; then
    if ! unshare --pid --fork --mount-proc true 2>/dev/null; then
        echo "$case_name: cannot make a pid namespace here (needs unshare and privileges)"
        exit 77
    fi
    HLX_TEST_IN_PIDNS=1 exec unshare --pid --fork --mount-proc bash "$0" "$@"
fi

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

# expect_err_lines N: stderr has exactly N lines (one error, said once).
expect_err_lines() {
    [ "$(wc -l <"$err")" -eq "$1" ] || fail "stderr has $(wc -l <"$err") line(s), expected $1"
}

# count FILE LINE: how many times LINE appears as a whole line.
count() {
    grep -Fxc -- "$2" "$1"
}

# alive PID: the process exists and is not a zombie (one whose parent is gone waits for
# init to reap it, which in a container may take a while or never happen).
alive() {
    local st
    st=$(awk '{ sub(/.*\) /, ""); print substr($0, 1, 1) }' "/proc/$1/stat" 2>/dev/null)
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# Every pid a rank printed ("[R] rank R: pid P") must be gone once helixrun returned.
expect_no_survivors() {
    local pid
    for pid in $(sed -n 's/^\[[0-9]*\] rank [0-9]*: pid \([0-9]*\)$/\1/p' "$out"); do
        if alive "$pid"; then
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

# start_bg ARGS...: helixrun in the background (as a script's "&" job it inherits SIGINT
# and SIGQUIT ignored); sets hpid and t0.
start_bg() {
    # Emptied here, not by the background job's own redirection, which may come after
    # the caller has already looked at the previous run's output.
    : >"$out"
    : >"$err"
    t0=$EPOCHREALTIME
    "$HR" "$@" >"$out" 2>"$err" &
    hpid=$!
}

# finish_bg LIMIT_S: waits for the background helixrun at most LIMIT_S seconds (then
# SIGKILLs it); sets rc and elapsed (seconds since t1, the moment the fault was made).
finish_bg() {
    local limit=$1 i
    for ((i = 0; i < limit * 20; i++)); do
        kill -0 "$hpid" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$hpid" 2>/dev/null; then
        fail "helixrun still running $limit s after the fault"
        kill -KILL "$hpid"
    fi
    wait "$hpid"
    rc=$?
    elapsed=$(awk -v a="$t1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
    echo "helixrun (background) -> exit $rc, ${elapsed}s after the fault"
    sed 's/^/  stdout: /' "$out" | head -n 20
    sed 's/^/  stderr: /' "$err" | head -n 20
}

# wait_for FILE PATTERN LIMIT_S: until FILE has a line matching PATTERN.
wait_for() {
    local i
    for ((i = 0; i < $3 * 20; i++)); do
        grep -Eq -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    fail "no /$2/ in $1 after $3 s"
    return 1
}

# wait_gone PID LIMIT_S: until PID is gone (a zombie counts as gone), at most LIMIT_S.
wait_gone() {
    local i
    for ((i = 0; i < $2 * 20; i++)); do
        alive "$1" || return 0
        sleep 0.05
    done
    return 1
}

# The pids of helixrun's children (its ranks), for the checks after it ended.
rank_pids() {
    pgrep -P "$hpid" | tr '\n' ' '
}

expect_gone() {
    local pid
    for pid in "$@"; do
        if alive "$pid"; then
            fail "pid $pid ($(cat /proc/$pid/comm 2>/dev/null)) still alive after helixrun exited"
            kill -KILL "$pid" 2>/dev/null
        fi
    done
}

need_helix() {
    if [ -z "$HX" ] || [ ! -x "$HX" ]; then
        echo "$case_name: needs the helix binary"
        exit 77
    fi
}

# ranks_except N R: the ranks 0..N-1 but R, as helixrun lists them ("0,2-3").
ranks_except() {
    local n=$1 x=$2 list= r s
    for ((r = 0; r < n; r++)); do
        [ "$r" -eq "$x" ] && continue
        s=$r
        while [ $((r + 1)) -lt "$n" ] && [ $((r + 1)) -ne "$x" ]; do r=$((r + 1)); done
        if [ "$s" -eq "$r" ]; then list+=${list:+,}$s; else list+=${list:+,}$s-$r; fi
    done
    echo "$list"
}

# expect_collapsed N LINE: LINE, which N ranks printed on stderr, is there once as
# "[R] LINE", followed (not necessarily at once) by "[others] (the same line as [R] above)"
# naming the N-1 other ranks; sets first=R and sum_at (the summary's line number).
expect_collapsed() {
    local n=$1 line=$2 copies at
    copies=$(awk -v l="$line" 'match($0, /^\[[0-9]+\] /) && substr($0, RLENGTH + 1) == l' "$err" |
        wc -l)
    [ "$copies" -eq 1 ] || { fail "'$line': $copies copies on stderr, expected 1"; return; }
    first=$(awk -v l="$line" 'match($0, /^\[[0-9]+\] /) && substr($0, RLENGTH + 1) == l {
        print substr($0, 2, RLENGTH - 3) }' "$err")
    at=$(awk -v l="$line" 'match($0, /^\[[0-9]+\] /) && substr($0, RLENGTH + 1) == l {
        print NR }' "$err")
    sum_at=$(grep -nFx -- "[$(ranks_except "$n" "$first")] (the same line as [$first] above)" \
        "$err" | cut -d: -f1)
    if [ -z "$sum_at" ]; then
        fail "no '[$(ranks_except "$n" "$first")] (the same line as [$first] above)' on stderr"
    elif [ "$sum_at" -le "$at" ]; then
        fail "the summary (line $sum_at) comes before the line it sums up (line $at)"
    fi
}

# A normal job of N ranks: every rank exchanges values and reports once, prefixed.
check_basic() {
    local n=$1 r
    run 15 -n "$n" --oversubscribe "$CL"
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
    run 15 -n $n --oversubscribe "$CL" lines:$lines
    expect_rc 0
    # one pass per stream (a grep per line took 1600 processes, 13 s)
    for s in "out stdout $out" "err stderr $err"; do
        set -- $s
        miss=$(awk -v n=$n -v lines=$lines -v kind=$1 '{ c[$0]++ } END {
            for (r = 0; r < n; r++)
                for (i = 0; i < lines; i++)
                    if (c[sprintf("[%d] %s line %d of rank %d", r, kind, i, r)] != 1)
                        printf " %d/%d", i, r }' "$3")
        [ -z "$miss" ] || fail "$2 lines not exactly once (line/rank):$(echo "$miss" | cut -c1-200)"
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
    # A stdout that takes no write (a full disk): the job fails (1), said once, where
    # helixrun exited 0 with the ranks' output lost; a rank's own failure keeps its code.
    timeout -k 2 15 "$HR" -n 2 --oversubscribe "$CL" lines:3 >/dev/full 2>"$err"
    rc=$?
    expect_rc 1
    expect_err '^helixrun: writing the standard output failed: .*\(the ranks. output is incomplete\)$'
    [ "$(grep -c "standard output" "$err")" -eq 1 ] || fail "the stdout failure said more than once"
    timeout -k 2 15 "$HR" -n 1 "$CL" exit:3:0 >/dev/full 2>"$err"
    rc=$?
    expect_rc 3
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

unconnected)
    # A rank that never calls PMIx_Init while the others do: when another rank fails,
    # helixrun names the one that never connected (was: only the failing rank, while the
    # rank itself reported "ranks 1 never arrived").
    run 15 -n 3 --grace 1 bash -c \
        'if [ "$HELIX_RANK" = 1 ]; then exec sleep 30; fi; sleep 1.2; exec "$0" "$@"' \
        "$CL" exit:3:0
    expect_rc 3
    expect_time 1 8
    expect_err '^helixrun: rank 0 \(pid [0-9]+\) exited with status 3; rank 1 \(pid [0-9]+\) has not connected to the PMIx server in [0-9.]+ s \(did the program call PMIx_Init\?\); killing the job'
    expect_no_survivors
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

grace-cut)
    # A second SIGTERM cuts the 30 s grace short: the SIGKILL message says how long the
    # ranks really had (was: "still running 30 s after SIGTERM" after 0.5 s).
    start_bg -n 2 --grace 30 sh -c 'trap "" TERM INT; echo up; exec sleep 1008'
    wait_for "$out" '^\[0\] up' 10
    wait_for "$out" '^\[1\] up' 10
    pids=$(rank_pids)
    kill -TERM "$hpid"
    sleep 0.5
    t1=$EPOCHREALTIME
    kill -TERM "$hpid"
    finish_bg 10
    expect_rc 143
    expect_time 0 2
    expect_err '^helixrun: received SIGTERM; forwarding it to the job \(SIGKILL after 30 s\)$'
    expect_err '^helixrun: rank\(s\) 0 \(pid [0-9]+\), 1 \(pid [0-9]+\) still running (0\.[0-9]{2}|[1-9]\.[0-9]) s after SIGTERM; helixrun got a second signal \(SIGTERM\): sending SIGKILL$'
    grep -q 'still running 30 s' "$err" && fail "the SIGKILL message claims the whole grace"
    expect_gone $pids
    expect_clean_tmp
    ;;

sigint-parse)
    # SIGINT while helixrun parses its flags (sent by a preloaded getopt_long) to a
    # helixrun started as a "&" job, which inherits SIGINT ignored: it ends the job before
    # any rank starts (was: lost, the job ran to its end with exit 0).
    [ -n "$SP" ] && [ -e "$SP" ] || { echo "needs the sig_at_parse preload library"; exit 77; }
    t1=$EPOCHREALTIME
    LD_PRELOAD=$SP HLX_TEST_SIGNAL_AT_PARSE=2 \
        ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
        start_bg -n 2 sleep 5
    finish_bg 8
    expect_rc 130
    expect_time 0 2
    expect_err '^helixrun: received SIGINT before any rank started; not starting the job$'
    expect_clean_tmp
    ;;

sigint-early)
    # SIGINT at once to a helixrun started as a "&" job (SIGINT inherited ignored), 20
    # times, the moment its main has blocked the signal. (One sent while the shell still
    # forks or the dynamic loader runs, before main, is discarded by the kernel: no code
    # of helixrun runs yet.) Every run ends by the signal, within a few seconds, with
    # nothing left; and helixrun no longer keeps SIGINT ignored.
    for ((try = 0; try < 20; try++)); do
        start_bg -n 2 sleep 5.$try
        blk=0
        ign=2
        # builtins only, so the signal follows main's first action closely
        for ((i = 0; i < 200000; i++)); do
            if [ /proc/$hpid/exe -ef "$HR" ]; then
                while read -r key val; do
                    case $key in
                    SigBlk:) blk=$((16#$val & 2)) ;;
                    SigIgn:) ign=$((16#$val & 2)) ;;
                    esac
                done <"/proc/$hpid/status" 2>/dev/null
                if [ $blk -ne 0 ] && { [ $try -gt 0 ] || [ $ign -eq 0 ]; }; then
                    break
                fi
            fi
            kill -0 "$hpid" 2>/dev/null || break
        done
        [ $blk -ne 0 ] || fail "try $try: helixrun never blocked SIGINT"
        [ $try -gt 0 ] || [ $ign -eq 0 ] || fail "helixrun keeps the SIGINT its shell ignored"
        t1=$EPOCHREALTIME
        kill -INT "$hpid"
        # a plain wait: bounded by the ranks' sleep if the signal were lost
        wait "$hpid"
        rc=$?
        elapsed=$(awk -v a="$t1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
        echo "try $try: helixrun (background) -> exit $rc, ${elapsed}s after the fault"
        expect_rc 130
        expect_time 0 3
        pgrep -x -f "sleep 5\.$try" >/dev/null && fail "try $try: a rank outlived helixrun"
        expect_clean_tmp
        [ $fails -eq 0 ] || break
    done
    ;;

foreign)
    # A silent local connection to the PMIx port, made before the ranks connect, must
    # not stall them: helixrun shuts it down (it is no process of the job).
    go=$root/go
    start_bg -n 3 --timeout 30 --grace 2 bash -c \
        'echo "uri=$PMIX_SERVER_URI41"; while [ ! -e "$0" ]; do sleep 0.02; done; exec "$1"' \
        "$go" "$CL"
    wait_for "$out" 'uri=.*tcp4://127\.0\.0\.1:[0-9]+' 10
    port=$(sed -n 's/.*uri=.*tcp4:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out" | head -n 1)
    exec 7<>"/dev/tcp/127.0.0.1/$port" || fail "cannot connect to port $port"
    t1=$EPOCHREALTIME
    touch "$go"
    finish_bg 20
    exec 7>&-
    expect_rc 0
    expect_time 0 5
    expect_err "^helixrun: closed a connection to the job's PMIx port $port from pid [0-9]+, which is not part of the job"
    [ "$(grep -c 'exchange ok' "$out")" -eq 3 ] || fail "not every rank exchanged"
    expect_clean_tmp
    ;;

initwatchdog)
    # A PMIx server that accepts and never answers (a silent listener standing in for a
    # stalled launcher): the rank's PMIx_Init watchdog ends it after the bootstrap time
    # (helix decode --timeout 1) with a clear message.
    need_helix
    command -v python3 >/dev/null || { echo "needs python3"; exit 77; }
    coproc SILENT { exec python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16); s.settimeout(0.1)
print(s.getsockname()[1], flush=True)
held, end = [], time.time() + 30
while time.time() < end:
    try:
        held.append(s.accept()[0])
    except socket.timeout:
        pass
'; }
    read -r port <&"${SILENT[0]}"
    uri="fake.1.0;tcp4://127.0.0.1:$port"
    t0=$EPOCHREALTIME
    env PMIX_NAMESPACE=fake.1 PMIX_RANK=0 PMIX_SERVER_URI41="$uri" PMIX_SERVER_URI4="$uri" \
        timeout -k 2 20 "$HX" decode --kvp 1 --context 64 --steps 2 --timeout 1 >"$out" 2>"$err"
    rc=$?
    elapsed=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
    kill "$SILENT_PID" 2>/dev/null
    echo "helix decode against a silent PMIx server -> exit $rc in ${elapsed}s"
    sed 's/^/  stderr: /' "$err" | head -n 5
    expect_rc 1
    expect_time 0.9 8
    expect_err 'watchdog: PMIx_Init \(connecting to the pmix PMIx server of job fake\.1\) did not finish within 1 s; exiting with status 1'
    ;;

blame-kill)
    # SIGKILL of rank 1 mid-decode: rank 0 sees the peer vanish and calls PMIx_Abort,
    # often before rank 1 is reaped. helixrun names rank 1 and exits 137, every time.
    need_helix
    for trial in 1 2 3; do
        HELIX_FAULT=kill:rank=1:step=2 run 60 -n 2 --grace 2 -- "$HX" decode --kvp 2 \
            --context 100 --steps 5 --timeout 10
        expect_rc 137
        expect_time 0 10
        expect_err '^helixrun: rank 1 \(pid [0-9]+\) was killed by signal 9 \(SIGKILL\)'
        expect_clean_tmp
    done
    ;;

blame-exit3)
    # Rank 1 exits 3 while slow to die (128 MiB to free); the others fail the fence and
    # call PMIx_Abort(1) as the runtime does: exit 3 naming rank 1, every time.
    for trial in 1 2 3; do
        run 40 -n 4 --grace 2 "$CL" exit:3:1 abortonfail heavy:128
        expect_rc 3
        expect_time 0 15
        expect_err '^helixrun: rank 1 \(pid [0-9]+\) exited with status 3'
        expect_no_survivors
        expect_clean_tmp
    done
    ;;

events)
    # Before killing the survivors helixrun tells them, through a PMIx event, which rank
    # was lost and why.
    run 30 -n 4 --grace 2 "$CL" sigkill:1 events
    expect_rc 137
    expect_time 0 5
    for r in 0 2 3; do
        grep -Eq "^\[$r\] rank $r: event -?[0-9]+: affected 1: rank 1 \(host [^,]+, pid [0-9]+\) lost: killed by signal 9 \(SIGKILL\)$" "$out" ||
            fail "rank $r did not get the lost-rank event"
    done
    expect_clean_tmp
    ;;

sighup)
    # SIGHUP to helixrun mid-decode: UCX in the ranks catches SIGHUP, so the job is ended
    # with SIGTERM; every rank goes within a few seconds (well before the 10 s grace).
    # Sent once the ranks are past the world's creation and its PMIx fences (the weights'
    # INFO line, which comes after it, then a second): a SIGHUP inside libpmix's start-up
    # fence is another case (a fixed 3 s sleep could land there on a loaded machine).
    need_helix
    HELIX_DEBUG=INFO HELIX_DEBUG_SUBSYS=CORE \
        start_bg -n 2 --grace 10 -- "$HX" decode --kvp 2 --context 256K --steps 100000
    wait_for "$err" 'INFO weights: the projections take' 30
    sleep 1
    pids=$(rank_pids)
    t1=$EPOCHREALTIME
    kill -HUP "$hpid"
    finish_bg 15
    expect_rc 129
    expect_time 0 5
    expect_err '^helixrun: received SIGHUP; ending the job with SIGTERM'
    expect_gone $pids
    expect_clean_tmp
    ;;

sigquit)
    # SIGQUIT and SIGINT to a helixrun started as a background job (which inherits both
    # ignored): the ranks get default dispositions back, so the job ends at once.
    for sig in QUIT INT; do
        start_bg -n 3 --grace 10 "$CL" sleep:30:0
        wait_for "$out" '^\[2\] rank 2: pid' 10
        sleep 0.3
        t1=$EPOCHREALTIME
        kill -$sig "$hpid"
        finish_bg 15
        [ $sig = QUIT ] && expect_rc 131 || expect_rc 130
        expect_time 0 3
        expect_err "^helixrun: received SIG$sig"
        expect_no_survivors
        expect_clean_tmp
    done
    ;;

leftover)
    # Background children of the ranks (one in the rank's group, one in a session of its
    # own) do not outlive a successful job.
    run 20 -n 2 "$CL" child
    expect_rc 0
    expect_time 0 5
    expect_err '^helixrun: [1-4] process\(es\) left running by the ranks after they ended: '
    expect_gone $(sed -n 's/^\[[0-9]*\] rank [0-9]*: child pid \([0-9]*\).*/\1/p' "$out")
    [ "$(grep -c 'child pid' "$out")" -eq 4 ] || fail "expected 4 children reported"
    expect_clean_tmp
    ;;

stale)
    # helixrun SIGKILLed together with its keeper (which would remove the directory): its
    # ranks die with it (PDEATHSIG) but its directory stays; the next helixrun removes it
    # since its owner is gone, and leaves a live one's alone.
    start_bg -n 2 "$CL" sleep:30:0
    wait_for "$out" '^\[1\] rank 1: pid' 10
    sleep 0.3
    pids=$(rank_pids)
    kill -KILL $(pgrep -P "$hpid" -x helixrun-keeper) "$hpid"
    wait "$hpid" 2>/dev/null
    sleep 0.5
    expect_gone $pids
    [ -n "$(ls -A "$TMPDIR")" ] || fail "expected the SIGKILLed helixrun's directory"
    stale=$(ls -A "$TMPDIR")
    start_bg -n 1 "$CL" sleep:30:0
    wait_for "$out" '^\[0\] rank 0: pid' 10
    live=$(ls -A "$TMPDIR")
    run 15 -n 2 "$CL"
    expect_rc 0
    [ ! -e "$TMPDIR/$stale" ] || fail "stale directory $stale not removed"
    [ "$(ls -A "$TMPDIR")" = "$live" ] || fail "the running helixrun's directory is gone"
    kill -TERM "$hpid"
    t1=$EPOCHREALTIME
    finish_bg 10
    expect_clean_tmp
    ;;

orphans)
    # helixrun SIGKILLed while its ranks run behind a wrapper: PDEATHSIG ends only the
    # wrappers (the ranks' own processes); the keeper ends what is left in the ranks'
    # process groups and removes the job's directory (was: both left forever).
    start_bg -n 2 sh -c 'sleep 1003 & echo "sleep pid $!"; wait; true'
    wait_for "$out" '^\[0\] sleep pid [0-9]+$' 10
    wait_for "$out" '^\[1\] sleep pid [0-9]+$' 10
    sleeps=$(sed -n 's/^\[[0-9]*\] sleep pid \([0-9]*\)$/\1/p' "$out")
    keeper=$(pgrep -P "$hpid" -x helixrun-keeper)
    t1=$EPOCHREALTIME
    kill -KILL "$hpid"
    wait "$hpid" 2>/dev/null
    for ((i = 0; i < 60; i++)); do
        left=0
        for pid in $sleeps; do alive "$pid" && left=1; done
        [ $left -eq 0 ] && [ -z "$(ls -A "$TMPDIR")" ] && break
        sleep 0.05
    done
    elapsed=$(awk -v a="$t1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
    echo "helixrun (SIGKILLed) -> exit 137, ${elapsed}s after the fault to the last leftover"
    expect_gone $sleeps $keeper
    expect_clean_tmp
    ;;

collapse)
    # A stderr line every rank prints alike comes once, then one line naming the others
    # (was: one copy per rank, 64 of them with 64 ranks).
    run 15 -n 4 --oversubscribe sh -c 'echo same >&2; echo "out $HELIX_RANK"; echo same'
    expect_rc 0
    expect_collapsed 4 same
    expect_err_lines 2
    # stdout is never collapsed
    [ "$(grep -c '^\[[0-3]\] same$' "$out")" -eq 4 ] || fail "stdout lines collapsed"
    [ "$(grep -c '^\[[0-3]\] out [0-3]$' "$out")" -eq 4 ] || fail "stdout lines lost"
    # lines that differ are all printed; so is a rank's own line said twice
    run 15 -n 4 --oversubscribe sh -c 'echo "rank $HELIX_RANK" >&2'
    expect_rc 0
    for r in 0 1 2 3; do
        [ "$(count "$err" "[$r] rank $r")" -eq 1 ] || fail "rank $r's own line not printed"
    done
    expect_err_lines 4
    run 15 -n 1 sh -c 'echo twice >&2; echo twice >&2'
    expect_rc 0
    [ "$(count "$err" "[0] twice")" -eq 2 ] || fail "a rank's line said twice not printed twice"
    expect_err_lines 2
    # the log header's host, pid and rank differ between ranks: masked
    run 15 -n 3 --oversubscribe sh -c \
        'echo "helix $(hostname):$$:$HELIX_RANK ERROR the same failure" >&2'
    expect_rc 0
    [ "$(grep -c 'ERROR the same failure$' "$err")" -eq 1 ] || fail "log lines not collapsed"
    expect_err '^\[(1-2|0,2|0-1)\] \(the same line as \[[0-2]\] above\)$'
    expect_err_lines 2
    # the summary comes before helixrun's line about the job's end; every rank prints before
    # any exits (a barrier of files, at most 5 s): the first exit ends the job, and a rank
    # that had not printed yet (a loaded machine) would leave one copy fewer
    export HLX_TEST_BARRIER=$root/barrier
    mkdir -p "$HLX_TEST_BARRIER"
    run 15 -n 3 --oversubscribe sh -c 'echo same >&2; : >"$HLX_TEST_BARRIER/$HELIX_RANK"
        i=0; while [ "$(ls "$HLX_TEST_BARRIER" | wc -l)" -lt 3 ] && [ $i -lt 100 ]; do
            sleep 0.05; i=$((i + 1)); done; exit 3'
    expect_rc 3
    expect_collapsed 3 same
    end_at=$(grep -n '^helixrun: rank [0-2] (pid [0-9]*) exited with status 3' "$err" | cut -d: -f1)
    [ -n "$end_at" ] && [ -n "$sum_at" ] && [ "$sum_at" -lt "$end_at" ] ||
        fail "the summary (line ${sum_at:-none}) is not before the exit line (${end_at:-none})"
    expect_err_lines 3
    # --tag-output marks the summary as stderr
    run 15 -n 2 --tag-output sh -c 'echo same >&2'
    expect_rc 0
    expect_err '^\[[01]\]<stderr>: same$'
    expect_err '^\[[01]\]<stderr>: \(the same line as \[[01]\] above\)$'
    expect_err_lines 2
    # --no-collapse and HELIX_RUN_COLLAPSE=0 print every copy
    run 15 -n 4 --oversubscribe --no-collapse sh -c 'echo same >&2'
    expect_rc 0
    [ "$(grep -c '^\[[0-3]\] same$' "$err")" -eq 4 ] || fail "--no-collapse: not 4 copies"
    expect_err_lines 4
    HELIX_RUN_COLLAPSE=0 run 15 -n 4 --oversubscribe sh -c 'echo same >&2'
    expect_rc 0
    [ "$(grep -c '^\[[0-3]\] same$' "$err")" -eq 4 ] || fail "HELIX_RUN_COLLAPSE=0: not 4 copies"
    # the real error every rank of helix detects alike (a settle window that waits for the
    # three: on a loaded machine the first rank's exit could end the job before another
    # had printed; the window ends as soon as all three have exited)
    if [ -n "$HX" ] && [ -x "$HX" ]; then
        HELIX_RUN_SETTLE=5 run 30 -n 3 --oversubscribe "$HX" decode --bogus
        expect_rc 2
        expect_collapsed 3 "helix decode: unknown option '--bogus' (see helix decode --help)"
        expect_err '^helixrun: rank [0-2] \(pid [0-9]+\) exited with status 2'
        expect_err_lines 3
    fi
    # the ranks failing with the first, grouped by cause in helixrun's line (all six
    # started before the first ends, a settle window long enough for all six)
    HELIX_RUN_SETTLE=3 run 20 -n 6 --oversubscribe sh -c 'sleep 0.5; exit 5'
    expect_rc 5
    expect_err '^helixrun: rank [0-5] \(pid [0-9]+\) exited with status 5 \(failed about the same time: ranks [0-5][-0-5,]* exited with status 5\)$'
    expect_clean_tmp
    ;;

oversubscribe)
    # More ranks than the CPUs in helixrun's affinity mask: one warning, the job still
    # runs; --oversubscribe and HELIX_RUN_OVERSUBSCRIBE=1 silence it; as many ranks as
    # CPUs: none (was: silence). taskset -c 0 gives helixrun one CPU on any machine.
    taskset -c 0 true 2>/dev/null || { echo "$case_name: needs taskset"; exit 77; }
    on_one() { # ARGS...: helixrun on CPU 0 alone
        timeout -k 2 15 taskset -c 0 "$HR" "$@" >"$out" 2>"$err"
        rc=$?
        echo "taskset -c 0 helixrun $* -> exit $rc"
        sed 's/^/  stderr: /' "$err" | head -n 5
    }
    on_one -n 2 sh -c 'echo "rank $HELIX_RANK"'
    expect_rc 0
    expect_err "^helixrun: 2 ranks on 1 CPU \(helixrun's affinity mask\): the ranks share them, so bench and decode timings are not those of one core per rank; --oversubscribe or HELIX_RUN_OVERSUBSCRIBE=1 silences this$"
    expect_err_lines 1
    [ "$(wc -l <"$out")" -eq 2 ] || fail "not every rank ran"
    on_one -n 2 --oversubscribe sh -c 'echo "rank $HELIX_RANK"'
    expect_rc 0
    [ ! -s "$err" ] || fail "--oversubscribe did not silence the warning"
    HELIX_RUN_OVERSUBSCRIBE=1 on_one -n 2 true
    expect_rc 0
    [ ! -s "$err" ] || fail "HELIX_RUN_OVERSUBSCRIBE=1 did not silence the warning"
    on_one -n 1 true
    expect_rc 0
    [ ! -s "$err" ] || fail "-n 1 on 1 CPU warned"
    # the same with this machine's own mask
    ncpu=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
    if [ "$ncpu" -lt 256 ]; then
        run 30 -n $((ncpu + 1)) true
        expect_rc 0
        expect_err "^helixrun: $((ncpu + 1)) ranks on $ncpu CPUs? "
        expect_err_lines 1
        run 30 -n "$ncpu" true
        expect_rc 0
        [ ! -s "$err" ] || fail "-n $ncpu on $ncpu CPUs warned"
    fi
    expect_clean_tmp
    ;;

keeper-reuse)
    # The number of a rank's process group, once the group is gone, may be another's: the
    # keeper of a SIGKILLed helixrun must end the job's groups, not a newcomer's. Rank 0
    # ends at once; its number is handed (ns_last_pid) to a new session leader while the
    # keeper still lists it; helixrun is SIGKILLed: rank 1 goes, the newcomer stays (was:
    # SIGTERM to the newcomer's group, which the keeper took for rank 0's). Rank 1 runs
    # behind a wrapper, so the keeper is what ends its sleep.
    start_bg -n 2 sh -c 'echo "pid $$"; [ "$HELIX_RANK" = 0 ] && exit 0
                         sleep 1004 & echo "sleep pid $!"; wait'
    wait_for "$out" '^\[0\] pid [0-9]+$' 10
    wait_for "$out" '^\[1\] sleep pid [0-9]+$' 10
    g=$(sed -n 's/^\[0\] pid \([0-9]*\)$/\1/p' "$out")
    r1=$(sed -n 's/^\[1\] sleep pid \([0-9]*\)$/\1/p' "$out")
    keeper=$(pgrep -P "$hpid" -x helixrun-keeper)
    # rank 0 reaped, its group empty: the number is free (builtins only from here on, so
    # no other process takes it)
    for ((i = 0; i < 200000; i++)); do
        [ -e "/proc/$g" ] || break
    done
    echo $((g - 1)) >/proc/sys/kernel/ns_last_pid
    setsid sleep 1005 &
    newcomer=$!
    for ((i = 0; i < 200000; i++)); do # until setsid has made its group
        read -r -a st <"/proc/$newcomer/stat"
        [ "${st[4]}" = "$newcomer" ] && break
    done
    echo "rank 0's group $g; newcomer pid $newcomer, process group ${st[4]}"
    if [ "$newcomer" != "$g" ] || [ "${st[4]}" != "$g" ]; then
        fail "could not hand number $g to a new process group (got pid $newcomer)"
    fi
    t1=$EPOCHREALTIME
    kill -KILL "$hpid"
    wait "$hpid" 2>/dev/null
    # the keeper's work: SIGTERM, at most 1 s for the groups to go, SIGKILL, exit
    wait_gone "$keeper" 5
    elapsed=$(awk -v a="$t1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
    echo "helixrun (SIGKILLed) -> the keeper done ${elapsed}s later"
    alive "$keeper" && fail "the keeper still runs 5 s after helixrun was SIGKILLed"
    alive "$newcomer" || fail "the keeper signalled process group $g, a newcomer's, not the job's"
    { kill -KILL "$newcomer" && wait "$newcomer"; } 2>/dev/null
    expect_gone "$r1"
    expect_clean_tmp
    ;;

sweep-reuse)
    # The same number reuse against helixrun's own sweep of leftovers at the job's end:
    # rank 0 ends at once leaving nothing, its number goes to a new session leader, then
    # rank 1 ends (it waits on a FIFO, so nothing else forks meanwhile). The newcomer is
    # not the job's leftover (was: "1 process(es) left running by the ranks after they
    # ended: N (sleep); sent SIGTERM", and it was ended).
    mkfifo "$root/go"
    HELIX_DEBUG=DEBUG start_bg -n 2 -x GO="$root/go" sh -c 'echo "pid $$"
        [ "$HELIX_RANK" = 0 ] && exit 0; read -r x <"$GO"; echo "done $x"'
    wait_for "$out" '^\[0\] pid [0-9]+$' 10
    wait_for "$out" '^\[1\] pid [0-9]+$' 10
    g=$(sed -n 's/^\[0\] pid \([0-9]*\)$/\1/p' "$out")
    # helixrun has reaped rank 0 and looked at its group
    wait_for "$err" "DEBUG .*rank 0 \\(pid $g\\) exited with status 0" 10
    echo $((g - 1)) >/proc/sys/kernel/ns_last_pid
    setsid sleep 1006 &
    newcomer=$!
    for ((i = 0; i < 200000; i++)); do
        read -r -a st <"/proc/$newcomer/stat"
        [ "${st[4]}" = "$newcomer" ] && break
    done
    echo "rank 0's group $g; newcomer pid $newcomer, process group ${st[4]}"
    [ "$newcomer" = "$g" ] && [ "${st[4]}" = "$g" ] ||
        fail "could not hand number $g to a new process group (got pid $newcomer)"
    echo now >"$root/go"
    t1=$EPOCHREALTIME
    finish_bg 10
    expect_rc 0
    expect_out '^\[1\] done now$'
    grep -q 'left running' "$err" && fail "a newcomer's process taken for the job's leftover"
    alive "$newcomer" || fail "helixrun ended process group $g, a newcomer's, not the job's"
    { kill -KILL "$newcomer" && wait "$newcomer"; } 2>/dev/null
    expect_clean_tmp
    ;;

nofile)
    # Too few descriptors for the ranks: the message says why and what to do.
    t0=$EPOCHREALTIME
    (ulimit -n 48 && exec timeout -k 2 15 "$HR" -n 40 "$CL") >"$out" 2>"$err"
    rc=$?
    elapsed=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
    echo "helixrun -n 40 (ulimit -n 48) -> exit $rc in ${elapsed}s"
    sed 's/^/  stderr: /' "$err" | head -n 5
    expect_rc 1
    expect_time 0 8
    # refused before any rank starts (helixrun counts its descriptors first), or at a
    # rank's start when the count fell short
    expect_err '^helixrun: cannot start ([0-9]+ ranks \(room for [0-9]+\)|rank [0-9]+): [a-z ]+: Too many open files \(open-file limit 48; each rank needs 3 descriptors: raise it with ulimit -n\)'
    expect_no_survivors
    expect_clean_tmp
    ;;

nofilesoft)
    # A soft open-file limit too low for the ranks under a hard one that allows them:
    # helixrun raises its soft limit and the job runs.
    hard=$(ulimit -H -n)
    if [ "$hard" != unlimited ] && [ "$hard" -lt 400 ]; then
        echo "hard open-file limit $hard: too low to raise the soft one far enough"
        exit 77
    fi
    (ulimit -S -n 48 && exec timeout -k 2 30 "$HR" -n 40 "$CL") >"$out" 2>"$err"
    rc=$?
    echo "helixrun -n 40 (ulimit -S -n 48, hard $hard) -> exit $rc"
    sed 's/^/  stderr: /' "$err" | head -n 5
    expect_rc 0
    expect_no_survivors
    expect_clean_tmp
    ;;

abortwatchdog)
    # The abort path hangs (PMIx_Abort waits on a stopped launcher, then the rank would
    # pause forever): the abort watchdog ends the rank with its code after
    # HELIX_ABORT_GRACE. helixrun, continued later, reports that exit.
    [ -x "$BC" ] || { echo "needs boot_client"; exit 77; }
    HELIX_ABORT_GRACE=1 start_bg -n 2 --grace 2 -x HELIX_ABORT_GRACE "$BC" stopabort:5
    for ((i = 0; i < 200; i++)); do
        [ "$(ps -o stat= -p "$hpid" | cut -c1)" = T ] && break
        sleep 0.05
    done
    t1=$EPOCHREALTIME
    pids=$(rank_pids)
    # The rank must be gone by itself while helixrun is still stopped.
    # helixrun is stopped, so the rank's own output is not forwarded: find it by its
    # environment.
    r0=
    for pid in $pids; do
        tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx HELIX_RANK=0 && r0=$pid
    done
    [ -n "$r0" ] || fail "rank 0 not found among $pids"
    wait_gone "$r0" 5
    gone_after=$(awk -v a="$t1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
    echo "rank 0 gone ${gone_after}s after its launcher stopped"
    alive "$r0" && fail "rank 0 (pid $r0) still alive 5 s into its abort"
    kill -CONT "$hpid"
    finish_bg 15
    expect_rc 5
    expect_err 'watchdog: the abort \(PMIx_Abort, teardown\) did not finish within 1 s; exiting with status 5'
    # Its abort or its exit, whichever helixrun handles first once continued: both are
    # rank 0 with status 5.
    expect_err '^helixrun: rank 0 \(pid [0-9]+\) (exited with status 5|called PMIx_Abort with status 5)'
    expect_gone $pids
    expect_clean_tmp
    ;;

mpirun-kill)
    # The same kill under mpirun: only what Helix controls is asserted (the survivor
    # names the lost rank, found by heartbeats shrunk below mpirun's own 1.3 s kill, and
    # everything ends with a non-zero status).
    need_helix
    command -v mpirun >/dev/null || { echo "no mpirun"; exit 77; }
    t0=$EPOCHREALTIME
    HELIX_FAULT=kill:rank=1:step=2 HELIX_HEARTBEAT_INTERVAL=0.1 HELIX_HEARTBEAT_TIMEOUT=0.5 timeout -k 2 60 mpirun --allow-run-as-root --oversubscribe \
        -n 2 "$HX" decode --kvp 2 --context 100 --steps 5 --timeout 10 >"$out" 2>"$err"
    rc=$?
    elapsed=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
    echo "mpirun (rank 1 SIGKILLed) -> exit $rc in ${elapsed}s"
    sed 's/^/  stderr: /' "$err" | head -n 12
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "exit code $rc, expected a failure (not 0, not a timeout)"
    expect_time 0 30
    expect_err 'rank 1 \(world 1\) lost'
    ;;

mpirun-usage-once)
    # A typo under mpirun (no helixrun to collapse copies): rank 0 says it once, the other
    # ranks exit 2 without a word (was: one copy per rank). With --help, and the commands'
    # own checks after the table, likewise.
    need_helix
    command -v mpirun >/dev/null || { echo "no mpirun"; exit 77; }
    timeout -k 2 60 mpirun --allow-run-as-root --oversubscribe -n 3 "$HX" decode --kvp 3 \
        --bogus >"$out" 2>"$err"
    rc=$?
    echo "mpirun -n 3 helix decode --bogus -> exit $rc"
    sed 's/^/  stderr: /' "$err" | head -n 12
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "exit code $rc, expected a failure"
    [ "$(grep -c "helix decode: unknown option '--bogus'" "$err")" -eq 1 ] ||
        fail "the error should be printed exactly once"
    timeout -k 2 60 mpirun --allow-run-as-root --oversubscribe -n 3 "$HX" decode --help \
        >"$out" 2>"$err"
    [ "$(grep -c '^usage: helix decode' "$out")" -eq 1 ] || fail "--help should print once"
    # checks made after the flag table (flags that do not go together) likewise
    timeout -k 2 60 mpirun --allow-run-as-root --oversubscribe -n 3 "$HX" decode --kvp 3 \
        --timeline t.txt --steps 0 >"$out" 2>"$err"
    rc=$?
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "--timeline --steps 0: exit $rc"
    [ "$(grep -c "helix decode: --timeline t.txt: --steps 0 decodes no step" "$err")" -eq 1 ] ||
        fail "--timeline with --steps 0 should be refused exactly once: $(cat "$err")"
    # the runtime's layout errors, which every rank meets alike: before the bootstrap (the
    # layout against the model) and after it (against the job's size); no rank says more
    for a in "--kvp 2|this job has 3 rank(s) (mpirun) but --kvp 2" \
             "--kvp 129 --tpa 2|a TPA shard holds 4 query head(s) of 32 value(s), fewer than KVP 129"; do
        timeout -k 2 60 mpirun --allow-run-as-root --oversubscribe -n 3 "$HX" decode \
            --context 1K ${a%%|*} >"$out" 2>"$err"
        rc=$?
        [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "decode ${a%%|*}: exit $rc"
        [ "$(grep -c -F "${a#*|}" "$err")" -eq 1 ] && ! grep -q 'received SIGTERM' "$err" ||
            fail "decode ${a%%|*} should be refused in one line: $(cat "$err")"
    done
    for e in OMPI_COMM_WORLD_RANK=1 NONE=1; do
        env "$e" "$HX" generate --max-new 2 >"$out" 2>"$err"
        rc=$?
        if [ "$e" = NONE=1 ]; then
            [ "$rc" -eq 2 ] && grep -q "^helix generate: --prompt-ids: required" "$err" ||
                fail "generate without --prompt-ids: exit $rc, '$(cat "$err")'"
        else
            [ "$rc" -eq 2 ] && [ ! -s "$err" ] || fail "$e generate: exit $rc, '$(cat "$err")'"
        fi
    done
    # the rule itself: a launcher's rank variable other than 0 mutes argv errors (exit 2
    # all the same), rank 0, no launcher, helixrun and a rank that is not a number do not
    for e in OMPI_COMM_WORLD_RANK=2 SLURM_PROCID=1 PMIX_RANK=5; do
        env "$e" "$HX" decode --steps x >"$out" 2>"$err"
        rc=$?
        [ "$rc" -eq 2 ] && [ ! -s "$err" ] || fail "$e: exit $rc, stderr '$(cat "$err")'"
    done
    for e in OMPI_COMM_WORLD_RANK=0 SLURM_PROCID=x HELIXRUN=1 NONE=1; do
        env "$e" PMIX_RANK=3 "$HX" decode --steps x >"$out" 2>"$err"
        rc=$?
        if [ "$e" = OMPI_COMM_WORLD_RANK=0 ] || [ "$e" = HELIXRUN=1 ] ||
           [ "$e" = SLURM_PROCID=x ]; then
            [ "$rc" -eq 2 ] && grep -q "^helix decode: --steps: 'x'" "$err" ||
                fail "$e PMIX_RANK=3: exit $rc, stderr '$(cat "$err")'"
        else
            [ "$rc" -eq 2 ] && [ ! -s "$err" ] || fail "PMIX_RANK=3: exit $rc, '$(cat "$err")'"
        fi
    done
    ;;

badflags)
    run 5 -n 2 --bogus "$CL"
    expect_rc 2
    expect_err "unknown option '--bogus'"
    # one line naming the flag, the value, the reason and the range (was: a logger line
    # and "bad value")
    run 5 -n 0 "$CL"
    expect_rc 2
    expect_err "^helixrun: -n/--np: '0' is outside \[1, 256\]"
    run 5 -n 2 --timeout abc "$CL"
    expect_rc 2
    expect_err "^helixrun: --timeout: 'abc' is not a finite decimal number"
    expect_err_lines 1
    run 5 -n 2 --timeout -1 "$CL"
    expect_rc 2
    expect_err "^helixrun: --timeout: '-1' is outside \[0, 1e\+07\]"
    expect_err_lines 1
    run 5 -n 2 --grace -1 "$CL"
    expect_rc 2
    expect_err "^helixrun: --grace: '-1' is outside \[0, 3600\]"
    expect_err_lines 1
    run 5 -n 2 --prefix fancy "$CL"
    expect_rc 2
    expect_err "^helixrun: --prefix: 'fancy' is not one of rank\|tag\|none"
    expect_err_lines 1
    # a flag without a value given one (was: "unknown option '-'", getopt's code as a char)
    run 5 -n 2 --no-collapse=1 "$CL"
    expect_rc 2
    expect_err "^helixrun: --no-collapse takes no value \(given '--no-collapse=1'"
    expect_err_lines 1
    # the variables helixrun sets itself cannot be set with -x (was: silently overridden)
    run 5 -n 1 -x HELIX_RANK=9 sh -c 'echo $HELIX_RANK'
    expect_rc 2
    expect_err "^helixrun: -x 'HELIX_RANK=9': HELIX_RANK is set by helixrun in every rank itself \(reserved: HELIXRUN, HELIX_RANK, HELIX_SIZE and PMIX_\*"
    run 5 -n 1 -x PMIX_RANK=9 sh -c 'echo $PMIX_RANK'
    expect_rc 2
    expect_err "^helixrun: -x 'PMIX_RANK=9': PMIX_RANK is set by helixrun"
    run 5 -n 1 -x PMIX_MCA_hlx_test=7 sh -c 'echo "mca $PMIX_MCA_hlx_test"'
    expect_rc 0
    expect_out '^\[0\] mca 7$'
    # an unusable --tmpdir is bad input, named (was: exit 1, no flag)
    run 5 -n 1 --tmpdir "$root/nonexistent" true
    expect_rc 2
    expect_err "^helixrun: --tmpdir '$root/nonexistent': cannot make the job's directory there: No such file or directory$"
    expect_err_lines 1
    # a repeated flag takes its last value, as every helix command does
    run 5 -n 3 -n 1 sh -c 'echo "size $HELIX_SIZE"'
    expect_rc 0
    [ "$(count "$out" "[0] size 1")" -eq 1 ] && [ "$(wc -l <"$out")" -eq 1 ] ||
        fail "-n 3 -n 1 did not start one rank"
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

badenv)
    # A bad HELIX_RUN_* value: one line naming the variable, its value and the reason
    # (was: a logger line and "bad HELIX_RUN_* environment setting"), exit 2.
    HELIX_RUN_TIMEOUT=abc run 5 -n 1 true
    expect_rc 2
    expect_err "^helixrun: HELIX_RUN_TIMEOUT: 'abc' is not a finite decimal number"
    expect_err_lines 1
    HELIX_RUN_GRACE=-1 run 5 -n 1 true
    expect_rc 2
    expect_err "^helixrun: HELIX_RUN_GRACE: '-1' is outside \[0, 3600\]"
    expect_err_lines 1
    # named as the variable, not as --prefix (no flag was given)
    HELIX_RUN_PREFIX=zz run 5 -n 1 true
    expect_rc 2
    expect_err "^helixrun: HELIX_RUN_PREFIX: 'zz' is not one of rank\|tag\|none"
    grep -q -- '--prefix' "$err" && fail "a HELIX_RUN_PREFIX value reported as --prefix"
    HELIX_RUN_TMPDIR=$root/nonexistent run 5 -n 1 true
    expect_rc 2
    expect_err "^helixrun: HELIX_RUN_TMPDIR '$root/nonexistent': cannot make the job's directory there"
    # --help and --version work whatever the environment holds (was: exit 2)
    HELIX_RUN_TIMEOUT=abc run 5 --help
    expect_rc 0
    expect_out "^usage: helixrun -n N"
    expect_out "ignored .*HELIX_RUN_TIMEOUT: 'abc' is not a finite decimal number"
    HELIX_RUN_TIMEOUT=abc run 5 --version
    expect_rc 0
    # a misspelt name is warned about with the nearest one (was: silence)
    HELIX_RUN_TIMOUT=5 run 5 -n 1 true
    expect_rc 0
    expect_err "^helixrun: unknown environment variable HELIX_RUN_TIMOUT \(did you mean HELIX_RUN_TIMEOUT\?\)"
    expect_err_lines 1
    # a name of any length, its start shown (one of 128 characters or more was skipped)
    long=$(printf 'X%.0s' $(seq 1 200))
    env "HELIX_RUN_$long=1" timeout -k 2 5 "$HR" -n 1 true >"$out" 2>"$err"
    rc=$?
    expect_rc 0
    expect_err "^helixrun: unknown environment variable HELIX_RUN_X{96}\.\.\. \(204 characters\) \(see helixrun --help\)$"
    expect_err_lines 1
    # a good value still applies, and a flag still overrides it
    HELIX_RUN_PREFIX=none run 5 -n 1 sh -c 'echo plain'
    expect_rc 0
    [ "$(count "$out" "plain")" -eq 1 ] || fail "HELIX_RUN_PREFIX=none not applied"
    HELIX_RUN_PREFIX=none run 5 -n 1 --prefix rank sh -c 'echo marked'
    expect_rc 0
    [ "$(count "$out" "[0] marked")" -eq 1 ] || fail "--prefix did not override HELIX_RUN_PREFIX"
    expect_clean_tmp
    ;;

envdefaults)
    # What helixrun sets for its ranks (PMIx's hash store, hwloc without its unused
    # plugins, this machine as XML) yields to what the user set, in the environment or
    # with -x; the ranks' topology from helixrun's XML is the one a fresh load finds.
    show='echo "gds=${PMIX_MCA_gds-unset} plugins=${HWLOC_PLUGINS_BLACKLIST-unset} xml=${HELIX_TOPO_LAUNCHER_XML:+set}"'
    # HELIX_RUN_TOPO_XML=auto: the XML only for more than two ranks per CPU
    run 10 -n 1 --prefix none sh -c "$show"
    expect_rc 0
    [ "$(count "$out" "gds=hash plugins=hwloc_gl,hwloc_opencl,hwloc_xml_libxml xml=")" -eq 1 ] ||
        fail "auto: one rank was handed the XML"
    ncpu=$(nproc)
    if [ "$ncpu" -le 16 ]; then
        np=$((2 * ncpu + 1))
        run 20 -n $np --oversubscribe --prefix none sh -c "$show"
        expect_rc 0
        [ "$(count "$out" "gds=hash plugins=hwloc_gl,hwloc_opencl,hwloc_xml_libxml xml=set")" -eq $np ] ||
            fail "auto: $np ranks on $ncpu CPUs not handed the XML"
    fi
    export HELIX_RUN_TOPO_XML=on # (the names of -1, 0 and 1: auto, off, on)
    run 10 -n 1 --prefix none sh -c "$show"
    expect_rc 0
    [ "$(count "$out" "gds=hash plugins=hwloc_gl,hwloc_opencl,hwloc_xml_libxml xml=set")" -eq 1 ] ||
        fail "helixrun's defaults not given to the rank"
    PMIX_MCA_gds=ds21,hash HWLOC_PLUGINS_BLACKLIST=hwloc_gl run 10 -n 1 --prefix none sh -c "$show"
    expect_rc 0
    [ "$(count "$out" "gds=ds21,hash plugins=hwloc_gl xml=set")" -eq 1 ] ||
        fail "the user's PMIX_MCA_gds / HWLOC_PLUGINS_BLACKLIST did not win"
    run 10 -n 1 --prefix none -x PMIX_MCA_gds=ds12 -x HWLOC_PLUGINS_BLACKLIST= sh -c "$show"
    expect_rc 0
    [ "$(count "$out" "gds=ds12 plugins= xml=set")" -eq 1 ] ||
        fail "-x PMIX_MCA_gds / -x HWLOC_PLUGINS_BLACKLIST did not win"
    HELIX_RUN_TOPO_XML=0 run 10 -n 1 --prefix none sh -c "$show"
    expect_rc 0
    [ "$(count "$out" "gds=hash plugins=hwloc_gl,hwloc_opencl,hwloc_xml_libxml xml=")" -eq 1 ] ||
        fail "HELIX_RUN_TOPO_XML=0 still handed the ranks an XML"
    # the job runs under the user's stores, on both ends (server and clients); ds21 alone
    # never did (the server's job data needs hash)
    for g in ds21,hash hash; do
        PMIX_MCA_gds=$g run 10 -n 2 --oversubscribe "$CL"
        expect_rc 0
        [ "$(grep -c 'exchange ok' "$out")" -eq 2 ] || fail "PMIX_MCA_gds=$g: the exchange failed"
    done
    if [ -n "$HX" ]; then
        fix=$(cd "$(dirname "$0")/../data/topology" && pwd)
        # same cores, NUMA nodes, PCI GPUs and NICs with their cpusets as a fresh load
        "$HX" topo --json >"$root/fresh.json" 2>"$root/fresh.err" ||
            fail "helix topo --json: $(cat "$root/fresh.err")"
        HELIX_DEBUG=debug HELIX_DEBUG_SUBSYS=topo run 20 -n 1 --prefix none "$HX" topo --json
        expect_rc 0
        expect_err "this machine read from the launcher's .*topology\.xml"
        cmp -s "$out" "$root/fresh.json" || fail "the topology from helixrun's XML differs: $(diff "$root/fresh.json" "$out" | head -n 20)"
        grep -q '"pus": [1-9]' "$out" || fail "no PUs in the topology"
        # an XML that cannot be read: one warning, then the machine discovered
        run 20 -n 1 --prefix none -x HELIX_TOPO_LAUNCHER_XML="$root/none.xml" "$HX" topo --json
        expect_rc 0
        expect_err "none\.xml \(HELIX_TOPO_LAUNCHER_XML\): hwloc cannot read it .*discovering this machine instead"
        cmp -s "$out" "$root/fresh.json" || fail "the topology discovered after a bad XML differs"
        # another machine's XML (the variable inherited by a job started on another node,
        # a shared TMPDIR): one warning, then this machine discovered, not read as it
        run 20 -n 1 --prefix none -x HELIX_TOPO_LAUNCHER_XML="$fix/hgx8.xml" "$HX" topo --json
        expect_rc 0
        expect_err "hgx8\.xml \(HELIX_TOPO_LAUNCHER_XML\) describes host hgx-node-0, not this one .*discovering this machine instead"
        cmp -s "$out" "$root/fresh.json" || fail "another host's XML taken as this machine: $(head -n 3 "$err")"
        # the user's topology wins: helix's HELIX_TOPO_FILE, hwloc's HWLOC_XMLFILE
        HELIX_TOPO_FILE=$fix/hgx8.xml "$HX" topo --json >"$root/user.json" 2>/dev/null
        HELIX_TOPO_FILE=$fix/hgx8.xml run 20 -n 1 --prefix none "$HX" topo --json
        expect_rc 0
        cmp -s "$out" "$root/user.json" || fail "HELIX_TOPO_FILE did not win under helixrun"
        grep -q '"gpu": 7' "$out" || fail "HELIX_TOPO_FILE: hgx8.xml's 8 GPUs not seen"
        HWLOC_XMLFILE=$fix/pcie4.xml "$HX" topo --json >"$root/user.json" 2>/dev/null
        HWLOC_XMLFILE=$fix/pcie4.xml run 20 -n 1 --prefix none sh -c "$show; exec \"$HX\" topo --json"
        expect_rc 0
        [ "$(count "$out" "gds=hash plugins=hwloc_gl,hwloc_opencl xml=")" -eq 1 ] ||
            fail "HWLOC_XMLFILE set, yet helixrun handed the ranks its XML or left out libxml2"
        sed -i 1d "$out"
        cmp -s "$out" "$root/user.json" || fail "HWLOC_XMLFILE did not win under helixrun"
        # (HWLOC_COMPONENTS=-pci, as make check-asan sets it, drops the file's PCI devices)
        case ${HWLOC_COMPONENTS-} in
        *-pci*) ;;
        *) grep -q '"gpu": 3' "$out" || fail "HWLOC_XMLFILE: pcie4.xml's 4 GPUs not seen" ;;
        esac
        # the user's XML as libxml2 reads it and hwloc's own reader does not (CRLF line
        # ends): read under helixrun as without it, by either variable
        sed 's/$/\r/' "$fix/cpu2s.xml" >"$root/crlf.xml"
        "$HX" topo --json --topo "$root/crlf.xml" >"$root/user.json" 2>/dev/null ||
            fail "helix topo --topo crlf.xml failed without helixrun"
        for v in HELIX_TOPO_FILE HWLOC_XMLFILE; do
            env $v="$root/crlf.xml" "$HX" topo --json >"$root/user.json" 2>/dev/null
            run 20 -n 1 --prefix none -x $v="$root/crlf.xml" "$HX" topo --json
            expect_rc 0
            cmp -s "$out" "$root/user.json" || fail "-x $v=crlf.xml: read otherwise under helixrun: $(head -n 3 "$err")"
            export "$v=$root/crlf.xml"
            run 20 -n 1 --prefix none "$HX" topo --json
            unset "$v"
            expect_rc 0
            cmp -s "$out" "$root/user.json" || fail "$v=crlf.xml: read otherwise under helixrun: $(head -n 3 "$err")"
        done
    fi
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
