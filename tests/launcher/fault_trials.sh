#!/bin/bash
# Repeats helixrun fault cases and prints, per case: trials, trials that passed every
# check, and the median and worst time from the fault to helixrun's exit (or the whole
# run where the fault comes from inside the job). Not a test: a measurement.
# usage: fault_trials.sh TRIALS HELIXRUN PMIX_CLIENT HELIX BOOT_CLIENT [CASE...]
set -u
n=$1
shift 1
here=$(dirname "$0")
args=("$1" "$2" "$3" "$4")
shift 4
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(foreign blame-kill blame-exit3 events sighup sigquit
                                 leftover stale abortwatchdog mpirun-kill)
printf "%-14s %7s %7s %9s %9s\n" case trials passed median_s worst_s
for c in "${cases[@]}"; do
    times=()
    passed=0
    for ((i = 0; i < n; i++)); do
        log=$(bash "$here/run_case.sh" "$c" "${args[@]}" 2>&1)
        grep -q "^$c: ok$" <<<"$log" && passed=$((passed + 1))
        # Each check prints "-> exit RC in Xs" or "-> exit RC, Xs after the fault".
        while read -r t; do times+=("$t"); done < <(
            sed -n 's/.*-> exit [0-9]*\(,\| in\) \([0-9.]*\)s.*/\2/p' <<<"$log")
    done
    stats=$(printf "%s\n" "${times[@]}" | sort -n |
        awk '{a[NR]=$1} END {if (NR) printf "%9.3f %9.3f", a[int((NR+1)/2)], a[NR]}')
    printf "%-14s %7d %7d %s\n" "$c" "$n" "$passed" "$stats"
done
