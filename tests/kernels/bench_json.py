#!/usr/bin/env python3
"""`helix bench attention --json` as a program reads it: every key the docs name, finite,
and consistent with each other (roofline and stream-and-compute ceiling recomputed from the
reported bytes, flops and rates; the ceiling's intensity equal to the call's, exact at the
shapes below). Speed is not judged: that is the benchmarks' job.

usage: bench_json.py HELIX
"""
import json
import math
import os
import subprocess
import sys

KEYS = ['kv_bytes', 'flops', 'seconds', 'gbps', 'gflops', 'bw_gbps', 'peak_gflops',
        'roofline_seconds', 'roofline_fraction', 'stream_fma_gbps', 'stream_fma_flops_per_byte',
        'stream_fma_seconds', 'stream_fma_fraction', 'incache_seconds', 'compute_efficiency']


def close(a, b, rel=2e-3):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def check(helix, extra, fails):
    cmd = [helix, 'bench', 'attention', '--context', '4K', '--reps', '1', '--bw-bytes', '64M',
           '--json'] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    what = ' '.join(cmd[1:])
    if p.returncode != 0:
        fails.append('%s: exit %d: %s' % (what, p.returncode, p.stderr.strip()))
        return
    d = json.loads(p.stdout.strip().splitlines()[-1])
    for k in KEYS:
        if not isinstance(d.get(k), (int, float)) or not math.isfinite(d[k]) or d[k] <= 0:
            fails.append('%s: %s is %r, not a positive number' % (what, k, d.get(k)))
    if fails:
        return
    if not close(d['stream_fma_flops_per_byte'], d['flops'] / d['kv_bytes'], 1e-9):
        fails.append('%s: the ceiling issued %g flop/byte, the call has %g' %
                     (what, d['stream_fma_flops_per_byte'], d['flops'] / d['kv_bytes']))
    if not close(d['stream_fma_seconds'], d['kv_bytes'] / (d['stream_fma_gbps'] * 1e9)):
        fails.append('%s: stream_fma_seconds %g is not kv_bytes / stream_fma_gbps' %
                     (what, d['stream_fma_seconds']))
    if not close(d['stream_fma_fraction'], d['stream_fma_seconds'] / d['seconds']):
        fails.append('%s: stream_fma_fraction is not stream_fma_seconds / seconds' % what)
    roof = max(d['kv_bytes'] / (d['bw_gbps'] * 1e9), d['flops'] / (d['peak_gflops'] * 1e9))
    if not close(d['roofline_seconds'], roof):
        fails.append('%s: roofline_seconds %g, recomputed %g' % (what, d['roofline_seconds'], roof))


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    fails = []
    runs = [['--kv-dtype', 'bf16'], ['--kv-dtype', 'fp32'], ['--kv-dtype', 'fp8']]
    if len(os.sched_getaffinity(0)) >= 2:  # the rates of two pool threads summed
        runs.append(['--kv-dtype', 'bf16', '--threads', '2'])
    for extra in runs:
        check(sys.argv[1], extra, fails)
    for f in fails:
        print('FAIL', f)
    if not fails:
        print('bench attention JSON: ok')
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
