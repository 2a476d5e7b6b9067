#!/usr/bin/env python3
"""Every attention kernel variant this machine runs, at the issue's shapes, as a Markdown
table for docs/kernels.md: `helix bench attention ... --json` per row (each run measures its
own limits: read bandwidth, FMA peak, and the same bytes streamed at the call's flops per
byte as plain FMAs: stream_fma_fraction, that loop's time over the kernel's, and the loop's
own roofline fraction), every row in turn, ROUNDS rounds, the median and
range per column. One core (taskset -c CORE), OpenBLAS on one thread.

usage: bench_variants.py HELIX [--rounds N] [--core C] [--variants amx,avx512,avx2]
(default variants: every vector variant `helix info` lists for this CPU, best first)
"""
import json
import os
import statistics
import subprocess
import sys

ROWS = [  # label, args, environment, the variants it applies to (None: all)
    ('GQA 8, bf16, 1M', ['--kv-dtype', 'bf16', '--context', '1M'], {}, None),
    ('GQA 8, fp32, 1M', ['--kv-dtype', 'fp32', '--context', '1M'], {}, None),
    ('GQA 8, fp8, 1M', ['--kv-dtype', 'fp8', '--context', '1M'], {}, None),
    # fp8 as AVX-512 CPUs without VBMI (Skylake-X) widen it
    ('GQA 8, fp8, 1M, no VBMI', ['--kv-dtype', 'fp8', '--context', '1M'],
     {'HELIX_FP8_LOOKUP': '0'}, ['avx512']),
    # a small group (Llama 3.2 3B's): below 4 auto takes avx512 for bf16 where amx exists
    ('GQA 3, bf16, 1M', ['--kv-dtype', 'bf16', '--group', '3', '--context', '1M'], {}, None),
    ('MLA, bf16, 64K', ['--mla', '--context', '64K'], {}, None),
    ('MLA, fp32, 64K', ['--mla', '--kv-dtype', 'fp32', '--context', '64K'], {}, None),
]
KEYS = ['seconds', 'bw_gbps', 'peak_gflops', 'roofline_fraction', 'incache_gflops',
        'compute_efficiency', 'stream_fma_fraction', 'stream_fma_roofline_fraction']


def usage(msg):
    sys.stderr.write('bench_variants.py: %s\n%s' % (msg, __doc__))
    sys.exit(2)


def cpu_variants(helix):
    """The vector variants this CPU runs, best first, from `helix info`'s kernels line
    ("kernels:   scalar, avx2, avx512, amx (selected: amx)"); avx512 and avx2 when it
    cannot be read."""
    try:
        out = subprocess.run([helix, 'info'], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        out = ''
    for line in out.splitlines():
        if line.startswith('kernels:'):
            names = [n.strip() for n in line[len('kernels:'):].split('(')[0].split(',')]
            names = [n for n in names if n and n != 'scalar']
            if names:
                return names[::-1]
    return ['avx512', 'avx2']


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith('-'):
        usage('the helix binary is the first argument')
    helix, rounds, core, variants = args[0], 3, '1', None
    i = 1
    while i < len(args):
        if i + 1 >= len(args):
            usage('%s needs a value' % args[i])
        if args[i] == '--rounds':
            try:
                rounds = int(args[i + 1])
            except ValueError:
                rounds = 0
            if not 1 <= rounds <= 100:
                usage('--rounds: %r is not a count from 1 to 100' % args[i + 1])
        elif args[i] == '--core':
            core = args[i + 1]
        elif args[i] == '--variants':
            variants = [v for v in args[i + 1].split(',') if v]
        else:
            usage('unknown argument %s' % args[i])
        i += 2
    if variants is None:
        variants = cpu_variants(helix)
    env = dict(os.environ, OPENBLAS_NUM_THREADS='1')
    res = {}
    for r in range(rounds):
        for v in variants:
            for label, extra, renv, only in ROWS:
                if only is not None and v not in only:
                    continue
                cmd = ['taskset', '-c', core, helix, 'bench', 'attention', '--variant', v,
                       '--json'] + extra
                p = subprocess.run(cmd, env=dict(env, **renv), capture_output=True, text=True,
                                   timeout=600)
                if p.returncode != 0:
                    sys.stderr.write('%s: exit %d\n%s' % (' '.join(cmd), p.returncode, p.stderr))
                    return 1
                d = json.loads(p.stdout.strip().splitlines()[-1])
                res.setdefault((label, v), []).append([float(d[k]) for k in KEYS])
                print('round %d %-16s %-7s %.4f s fraction %.3f' %
                      (r + 1, label, v, d['seconds'], d['roofline_fraction']), file=sys.stderr)
    print('| config | variant | seconds | read_bw GB/s | FMA peak | roofline_fraction | '
          'in-cache GFLOP/s | eff | stream_fma_fraction | plain loop\'s roofline_fraction |')
    print('|---|---|---|---|---|---|---|---|---|---|')
    for v in variants:
        for label, _, _, only in ROWS:
            if only is not None and v not in only:
                continue
            cols = list(zip(*res[(label, v)]))

            def cell(i, fmt):
                med = statistics.median(cols[i])
                if len(cols[i]) == 1:
                    return fmt % med
                return (fmt + ' (' + fmt + '-' + fmt + ')') % (med, min(cols[i]), max(cols[i]))
            print('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |' %
                  (label, v, cell(0, '%.4f'), cell(1, '%.1f'), cell(2, '%.0f'),
                   cell(3, '%.3f'), cell(4, '%.0f'), cell(5, '%.2f'), cell(6, '%.3f'),
                   cell(7, '%.3f')))
    return 0


if __name__ == '__main__':
    sys.exit(main())
