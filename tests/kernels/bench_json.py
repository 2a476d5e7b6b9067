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
        'stream_fma_seconds', 'stream_fma_fraction', 'stream_fma_roofline_fraction',
        'incache_seconds', 'compute_efficiency']


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
    if d.get('vector_path') is not True:
        fails.append('%s: vector_path is %r at head size 128' % (what, d.get('vector_path')))
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
    if not close(d['stream_fma_roofline_fraction'],
                 d['roofline_seconds'] / d['stream_fma_seconds']):
        fails.append('%s: stream_fma_roofline_fraction is not roofline_seconds / '
                     'stream_fma_seconds' % what)
    roof = max(d['kv_bytes'] / (d['bw_gbps'] * 1e9), d['flops'] / (d['peak_gflops'] * 1e9))
    if not close(d['roofline_seconds'], roof):
        fails.append('%s: roofline_seconds %g, recomputed %g' % (what, d['roofline_seconds'], roof))


def check_edges(helix, fails):
    """A head size off every vector width runs the reference loop and says so; a call too
    small for the stream-and-compute loop is reported without it (it exited 1); a device
    that does not exist is refused."""
    base = [helix, 'bench', 'attention', '--reps', '1', '--bw-bytes', '64M', '--json']
    p = subprocess.run(base + ['--context', '256', '--head-dim', '40'], capture_output=True,
                       text=True, timeout=300)
    d = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else {}
    want = d.get('variant') == 'scalar'  # the reference is the scalar variant's own path
    if p.returncode != 0 or d.get('vector_path') is not want or \
            (not want and 'no vector path for head size 40' not in p.stderr):
        fails.append('head size 40: exit %d, vector_path %r, stderr %r' %
                     (p.returncode, d.get('vector_path'), p.stderr.strip()))
    p = subprocess.run(base + ['--context', '1', '--head-dim', '1', '--group', '1'],
                       capture_output=True, text=True, timeout=300)
    d = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else {}
    if p.returncode != 0 or 'stream_fma_gbps' in d or not d.get('seconds', 0) > 0:
        fails.append('one token of head size 1: exit %d, %r' % (p.returncode, p.stderr.strip()))
    # soft-capped scores: on the blocked variants' vector path, the cap reported; the row
    # kernels (scalar aside) take the reference and say so; refused beside --mla
    for v in ['avx512', 'avx2', 'amx']:
        p = subprocess.run(base + ['--context', '256', '--softcap', '50', '--variant', v],
                           capture_output=True, text=True, timeout=300)
        if p.returncode == 2 and 'not a kernel variant this CPU runs' in p.stderr:
            continue
        d = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else {}
        if d.get('softcap') != 50 or d.get('vector_path') is not (v != 'amx') or \
                (v == 'amx') != ('soft-capped scores' in p.stderr):
            fails.append('--softcap 50 --variant %s: exit %d, %r, stderr %r' %
                         (v, p.returncode, d, p.stderr.strip()))
    # fp8 KV: the fill holds no NaN, so the kernel is told (kv_clean) unless --fp8-scan
    for extra, want in [([], False), (['--fp8-scan'], True)]:
        p = subprocess.run(base + ['--context', '256', '--kv-dtype', 'fp8'] + extra,
                           capture_output=True, text=True, timeout=300)
        d = json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else {}
        if d.get('fp8_scan') is not want:
            fails.append('fp8 %r: exit %d, fp8_scan %r' % (extra, p.returncode,
                                                           d.get('fp8_scan')))
    p = subprocess.run(base + ['--mla', '--softcap', '50'], capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 2 or '--mla and --softcap' not in p.stderr:
        fails.append('--mla --softcap: exit %d, %r' % (p.returncode, p.stderr.strip()))
    # the text names HELIX_KV_PREFETCH's mode as the setting spells it (avx512 and avx2)
    for v in ['avx512', 'avx2']:
        env = dict(os.environ, HELIX_KV_PREFETCH='software-l2')
        p = subprocess.run([helix, 'bench', 'attention', '--reps', '1', '--bw-bytes', '64M',
                            '--context', '256', '--variant', v], capture_output=True,
                           text=True, timeout=300, env=env)
        if p.returncode == 2 and 'not a kernel variant this CPU runs' in p.stderr:
            continue
        if p.returncode != 0 or 'KV prefetch (HELIX_KV_PREFETCH): software-l2\n' not in p.stdout:
            fails.append('HELIX_KV_PREFETCH=software-l2 --variant %s: exit %d, %r' %
                         (v, p.returncode, p.stdout[-400:]))
    for dev in ['--device=tpu', '--device=']:
        p = subprocess.run(base + [dev], capture_output=True, text=True, timeout=60)
        if p.returncode != 2 or 'expected cpu or cuda' not in p.stderr:
            fails.append('%s: exit %d, %r' % (dev, p.returncode, p.stderr.strip()))


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
    check_edges(sys.argv[1], fails)
    for f in fails:
        print('FAIL', f)
    if not fails:
        print('bench attention JSON: ok')
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
