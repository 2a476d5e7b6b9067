#!/usr/bin/env python3
"""Predicted vs measured decode step on this machine: measures the machine first (helix
bench local, in this run), then runs a grid of `helix decode` points under helixrun and
reports predicted/measured per point as a table, a CSV and an SVG in the build folder.
--hw-each measures the machine again before every point (about 10 s each): on a shared
machine whose memory and caches drift within minutes, the prediction is then made from
the machine as it is when the point runs. --bracket (implies --hw-each) also measures it
after the last point, so every point has a measurement on each side: the same prediction
from the measurement after (`helix plan --hw local`) against the one from before says how
far the machine moved while the point ran (drift); points where it moved more than 10%
are counted apart, since no description of the machine taken before them could hold.

usage: bench_predict.py HELIX HELIXRUN OUTDIR [--quick] [--reps N] [--steps N]
                        [--hw-each] [--bracket] [--points CTX:KVP:TPA:BATCH,...]
"""
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

TARGET = 0.15  # |predicted / measured - 1| within this counts as a hit
STABLE = 0.10  # --bracket: |prediction after / prediction before - 1| within this: stable


def run(cmd, env, timeout):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def decode_json(out):
    """Rank 0's JSON object (helixrun prefixes lines with [rank])."""
    for line in out.splitlines():
        i = line.find('{')
        if i >= 0:
            try:
                return json.loads(line[i:])
            except ValueError:
                pass
    return None


def svg(points, path):
    w, h, m = 640, 560, 70
    vals = [p[k] for p in points for k in ('measured', 'predicted') if p[k] > 0]
    lo = 10 ** math.floor(math.log10(min(vals)))
    hi = 10 ** math.ceil(math.log10(max(vals)))

    def x(v):
        return m + (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * (w - 2 * m)

    def y(v):
        return h - m - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * (h - 2 * m)

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (w, h),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="24" font-size="14">helix decode: predicted vs measured step '
           '(median), ms</text>' % m]
    d = lo
    while d <= hi * 1.0001:
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>' % (x(d), m, x(d), h - m))
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (m, y(d), w - m, y(d)))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' % (x(d), h - m + 16, d))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>' % (m - 6, y(d) + 4, d))
        d *= 10
    for f, dash in ((1.0, ''), (1 + TARGET, '4,3'), (1 - TARGET, '4,3')):
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888" %s/>' %
                   (x(lo), y(lo * f), x(hi / f if f > 1 else hi), y(hi if f > 1 else hi * f),
                    'stroke-dasharray="%s"' % dash if dash else ''))
    colors = {1: '#1f77b4', 2: '#ff7f0e', 4: '#2ca02c'}
    for p in points:
        c = colors.get(p['kvp'], '#d62728') if p.get('tpa', 1) == 1 else '#9467bd'
        shape = 'circle' if not p['hopb'] else 'rect'
        title = ('context %d, KVP %d x TPA %d, batch %d, HOP-B %s: measured %.3f ms, predicted '
                 '%.3f ms (ratio %.2f)' % (p['context'], p['kvp'], p.get('tpa', 1), p['batch'],
                                           'on' if p['hopb'] else 'off',
                                   p['measured'], p['predicted'], p['ratio']))
        if shape == 'circle':
            out.append('<circle cx="%.1f" cy="%.1f" r="5" fill="%s"><title>%s</title></circle>' %
                       (x(p['measured']), y(p['predicted']), c, title))
        else:
            out.append('<rect x="%.1f" y="%.1f" width="9" height="9" fill="%s"><title>%s</title>'
                       '</rect>' % (x(p['measured']) - 4.5, y(p['predicted']) - 4.5, c, title))
    out.append('<text x="%d" y="%d" text-anchor="middle">measured step, ms</text>' % (w // 2, h - 24))
    out.append('<text x="18" y="%d" transform="rotate(-90 18 %d)" text-anchor="middle">'
               'predicted step, ms</text>' % (h // 2, h // 2))
    ly = m + 10
    for k, c in colors.items():
        out.append('<circle cx="%d" cy="%d" r="5" fill="%s"/><text x="%d" y="%d">KVP %d</text>' %
                   (m + 12, ly, c, m + 22, ly + 4, k))
        ly += 16
    out.append('<circle cx="%d" cy="%d" r="5" fill="#9467bd"/><text x="%d" y="%d">KVP 2 x TPA 2'
               '</text>' % (m + 12, ly, m + 22, ly + 4))
    ly += 16
    out.append('<text x="%d" y="%d">dashed: within %d%%; squares: HOP-B on</text>' %
               (m + 6, ly + 4, int(TARGET * 100)))
    out.append('</svg>')
    with open(path, 'w') as f:
        f.write('\n'.join(out) + '\n')


def tokens(text):
    """An integer with an optional K or M suffix (2^10, 2^20), as helix reads --context."""
    mult = {'K': 1 << 10, 'M': 1 << 20}.get(text[-1:].upper(), 1)
    return int(text[:-1] if mult > 1 else text) * mult


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    quick = '--quick' in sys.argv
    bracket = '--bracket' in sys.argv
    hw_each = '--hw-each' in sys.argv or bracket
    # the first 5-10 steps of a run are 2-5x slower than the rest (caches, lazy set-up):
    # 64 steps make the median the steady step the model predicts
    reps, steps = 3, 64
    for i, a in enumerate(sys.argv):
        if a == '--reps':
            reps = int(sys.argv[i + 1])
        if a == '--steps':
            steps = int(sys.argv[i + 1])
    if len(args) < 3:
        print(__doc__)
        return 2
    only = None
    for i, a in enumerate(sys.argv):
        if a == '--points':  # CTX:KVP:TPA:BATCH,... (context in tokens, K and M suffixes)
            try:
                only = [tuple(tokens(v) for v in q.split(':')) for q in sys.argv[i + 1].split(',')]
            except (IndexError, ValueError):
                only = []
            if not only or any(len(q) != 4 or min(q) < 1 for q in only):
                print('--points takes CTX:KVP:TPA:BATCH,... (4K:2:1:8), positive integers')
                return 2
    helix, helixrun, outdir = args[0], args[1], args[2]
    hw = os.path.join(outdir, 'hw-local.json')
    env = dict(os.environ, HELIX_HW_FILE=hw)
    t0 = time.time()
    rc, out, err = run([helix, 'bench', 'local', '--out', hw], env, 300)
    if rc != 0:
        print('helix bench local failed:\n' + err)
        return 1
    print(out)
    rc, helptext, _ = run([helix, 'decode', '--help'], env, 30)
    hopbs = [0, 1] if '--hopb' in helptext else [0]
    contexts = [4096, 65536, 1048576]
    layouts = [(1, 1), (2, 1), (4, 1), (2, 2)]  # (KVP, TPA)
    batches = [1, 8]
    if quick:
        contexts, batches = [4096, 65536], [1, 8]
    if only is not None:
        contexts = sorted({q[0] for q in only})
        layouts = sorted({(q[1], q[2]) for q in only})
        batches = sorted({q[3] for q in only})
    def plan_ms(hwfile, d, ctx, kvp, tpa, b, hb):
        """The local predictor's step from hwfile for a point (helix plan --hw local)."""
        cmd = [helix, 'plan', '--model', d.get('model', 'tiny'), '--hw', 'local', '--context',
               str(ctx), '--kvp', str(kvp), '--tpa', str(tpa), '--batch', str(b), '--json']
        if len(hopbs) > 1:
            cmd += ['--hopb', 'on' if hb else 'off']
        if hb and 0 < d.get('micro_batch', 0) < b:  # the size the run chose
            cmd += ['--micro-batch', str(d['micro_batch'])]
        rc, out, err = run(cmd, dict(os.environ, HELIX_HW_FILE=hwfile), 60)
        if rc != 0:
            raise RuntimeError('helix plan failed: %s\n%s' % (' '.join(cmd), err))
        return json.loads(out)['ttl_ms']

    points = []
    for ctx in contexts:
        for kvp, tpa in layouts:
            for b in batches:
                for hb in hopbs:
                    if hb and kvp == 1:
                        continue
                    if only is not None and (ctx, kvp, tpa, b) not in only:
                        continue
                    cmd = [helixrun, '-n', str(kvp * tpa), helix, 'decode', '--json', '--kvp',
                           str(kvp), '--tpa', str(tpa), '--context', str(ctx), '--batch', str(b),
                           '--steps', str(steps)]
                    if len(hopbs) > 1:
                        cmd += ['--hopb', 'on' if hb else 'off']
                    if hw_each:
                        rc, out, err = run([helix, 'bench', 'local', '--out', hw, '--quiet'],
                                           env, 300)
                        if rc != 0:
                            print('helix bench local failed:\n' + err)
                            return 1
                    meas, best, pred, phm, php, mbs = [], [], None, {}, None, []
                    load = os.getloadavg()[0]
                    ru0, w0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.time()
                    for _ in range(reps):
                        rc, out, err = run(cmd, env, 600)
                        d = decode_json(out)
                        if rc != 0 or d is None:
                            print('failed: %s\n%s' % (' '.join(cmd), err[-2000:]))
                            return 1
                        meas.append(d['step_ms'])
                        best.append(d['step_ms_min'])
                        mbs.append(d.get('micro_batch', b))
                        pred = d.get('predicted_step_ms')
                        php = d.get('predicted_phase_ms')
                        for k, v in d['phase_ms'].items():
                            phm.setdefault(k, []).append(v)
                    if pred is None:
                        print('no prediction: %s' % d.get('predicted_error'))
                        return 1
                    # the bracket's plan models the size most runs chose (--hopb on picks
                    # it from each run's first step)
                    d['micro_batch'] = max(set(mbs), key=mbs.count)
                    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                    # how much of a core each rank had: CPU time of the runs over wall x ranks
                    cpu = ((ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime) /
                           ((time.time() - w0) * min(kvp * tpa, os.cpu_count())))
                    with open(hw) as f:
                        hwd = json.load(f)
                    mm = statistics.median(meas)
                    mb = statistics.median(best)
                    p = dict(context=ctx, kvp=kvp, tpa=tpa, batch=b, hopb=hb, measured=mm, load=load,
                             best=mb, ratio_best=pred / mb, cpu=cpu,
                             predicted=pred, ratio=pred / mm,
                             spread=(max(meas) - min(meas)) / mm,
                             phases={k: (statistics.median(v), php.get(k, 0)) for k, v in phm.items()},
                             hw_read_gbps=hwd.get('read_gbps'), hw_kernel_gbps=hwd.get('dram_gbps_1'),
                             hw_measured=hwd.get('measured'))
                    if bracket:
                        p['hw_file'] = os.path.join(outdir, 'hw-local-%d.json' % len(points))
                        os.replace(hw, p['hw_file'])
                        p['plan_before'] = plan_ms(p['hw_file'], d, ctx, kvp, tpa, b, hb)
                        p['cmd'] = (d, ctx, kvp, tpa, b, hb)
                    points.append(p)
                    print('context %8d  KVP %d x TPA %d  batch %d  HOP-B %-3s  measured %9.3f ms  '
                          'predicted %9.3f ms  ratio %.3f  (fastest step %.3f ms: ratio %.3f; runs '
                          'spread %.0f%%, load %.1f on %d cpus, ranks had %.0f%% of their cores)' %
                          (ctx, kvp, tpa, b, 'on' if hb else 'off', mm, pred, pred / mm, mb,
                           pred / mb, p['spread'] * 100, load, os.cpu_count(), cpu * 100),
                          flush=True)
    if bracket and points:
        # the measurement after the last point; each point's "after" is the next one's before
        rc, out, err = run([helix, 'bench', 'local', '--out', hw, '--quiet'], env, 300)
        if rc != 0:
            print('helix bench local failed:\n' + err)
            return 1
        for i, p in enumerate(points):
            after = points[i + 1]['hw_file'] if i + 1 < len(points) else hw
            p['plan_after'] = plan_ms(after, *p.pop('cmd'))
            p['drift'] = p['plan_after'] / p['plan_before'] - 1
            # the decode's own prediction moved as the plan's did
            p['ratio_after'] = p['ratio'] * p['plan_after'] / p['plan_before']
        print('\nbracketed (the machine measured before and after each point):')
        for p in points:
            print('context %8d  KVP %d x TPA %d  batch %d  HOP-B %-3s  ratio before %.3f, '
                  'after %.3f (machine moved %+.0f%%%s)' %
                  (p['context'], p['kvp'], p['tpa'], p['batch'], 'on' if p['hopb'] else 'off',
                   p['ratio'], p['ratio_after'], p['drift'] * 100,
                   '' if abs(p['drift']) <= STABLE else ': unstable'))
        st = [p for p in points if abs(p['drift']) <= STABLE]
        hs = sum(1 for p in st if abs(p['ratio'] - 1) <= TARGET)
        either = sum(1 for p in points if min(abs(p['ratio'] - 1), abs(p['ratio_after'] - 1))
                     <= TARGET)
        print('stable points (machine moved %d%% or less): %d of %d, %d of them within %d%%; '
              'within %d%% of the prediction before or after: %d of %d' %
              (STABLE * 100, len(st), len(points), hs, TARGET * 100, TARGET * 100, either,
               len(points)))
    hits = sum(1 for p in points if abs(p['ratio'] - 1) <= TARGET)
    errs = sorted(abs(p['ratio'] - 1) for p in points)
    print('\n%d of %d points within %d%%; median |error| %.1f%%, worst %.1f%% (%d runs each, '
          'median of %d steps; %.0f s; load average %.1f-%.1f on %d cpus: other processes '
          'slow the measured runs, not the prediction; machine measured %s)' %
          (hits, len(points), TARGET * 100, statistics.median(errs) * 100, errs[-1] * 100, reps,
           steps, time.time() - t0, min(p['load'] for p in points),
           max(p['load'] for p in points), os.cpu_count(),
           'before every point' if hw_each else 'once, at the start'))
    # the points where every rank has a core, apart from those that share cores (four ranks
    # on two vCPUs wait on the scheduler: docs/planner.md)
    cores = len(os.sched_getaffinity(0))
    own = [p for p in points if p['kvp'] * p['tpa'] <= cores]
    shared = [p for p in points if p['kvp'] * p['tpa'] > cores]
    if own and shared:
        print('every rank with a core of its own: %d of %d within %d%%; more ranks than cores: '
              '%d of %d' % (sum(1 for p in own if abs(p['ratio'] - 1) <= TARGET), len(own),
                            TARGET * 100, sum(1 for p in shared if abs(p['ratio'] - 1) <= TARGET),
                            len(shared)))
    hb_ = sum(1 for p in points if abs(p['ratio_best'] - 1) <= TARGET)
    eb = sorted(abs(p['ratio_best'] - 1) for p in points)
    print('against the fastest step of each run (the machine when the ranks had their cores): '
          '%d of %d within %d%%, median |error| %.1f%%, worst %.1f%%' %
          (hb_, len(points), TARGET * 100, statistics.median(eb) * 100, eb[-1] * 100))
    if len(hopbs) == 1:
        print('HOP-B on: skipped (helix decode --help has no --hopb)')
    with open(os.path.join(outdir, 'predict.csv'), 'w') as f:
        f.write('context,kvp,tpa,batch,hopb,measured_ms,predicted_ms,ratio,load\n')
        for p in points:
            f.write('%d,%d,%d,%d,%d,%.6f,%.6f,%.4f,%.2f\n' %
                    (p['context'], p['kvp'], p['tpa'], p['batch'], p['hopb'], p['measured'],
                     p['predicted'], p['ratio'], p['load']))
    with open(os.path.join(outdir, 'predict.json'), 'w') as f:
        json.dump(points, f, indent=1)
    svg(points, os.path.join(outdir, 'predict.svg'))
    print('wrote %s, predict.csv, predict.json' % os.path.join(outdir, 'predict.svg'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
