#!/usr/bin/env python3
"""Quantizes a bf16 (or f32) checkpoint's Linear weights to 4- or 8-bit integers (GPTQ also
2 or 3) in one of the packed forms the runtime reads (docs/model.md "Integer weights"),
independently of the runtime: GPTQ (checkpoint_format gptq: zeros stored minus one; or
gptq_v2; at 3 bits each 32 values in 3 words, AutoGPTQ's pack), AWQ's GEMM layout
(columns 0, 2, 4, 6, 1, 3, 5, 7 of each eight in fields 0..7) or compressed-tensors'
pack-quantized (signed values offset by 2^(bits-1), zero points packed along the output
rows). Round to nearest per group of input columns, asymmetric (a zero point per group) or
symmetric; with --act-order the groups are a permutation of the columns (g_idx).

It also writes DST.ref: the same model with every quantized weight dequantized from the
same integers, (q - z) x s with the product in f32, rounded to bf16 to nearest even, as
vLLM's and transformers' dequantizers define the value. A runtime that reads the packed
form right decodes the two bit for bit alike.

Quantized: every 2-D X.weight but the embedding, the head, the routers and what --skip
names (a substring), which stay as they are.

With --format int8: compressed-tensors' int-quantized (W8A8, W8A16): one I8 per weight,
symmetric, X.weight_scale per channel (--group -1) or per tensor (any other --group), the
activations declared dynamic (--a8 dynamic), static (an X.input_scale each) or none.

With --random (GPTQ only, no DST.ref): the words, zero points and fp16 scales drawn at
random instead of quantized, in seconds for a few GB, for timing the runtime on a
checkpoint of real shapes (docs/kernels.md "Packed integer weights").

usage: quantize_int.py SRC DST --format gptq|gptq_v2|awq|ct|int8 [--bits 2|3|4|8]
                       [--group G] [--sym] [--act-order] [--no-gidx] [--scale-dtype F16|BF16|F32]
                       [--skip S]... [--a8 dynamic|static|none] [--random]
"""
import argparse
import glob
import json
import os
import struct
from array import array

from st_edit import load, save  # the format's reader and writer, beside this script

AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)  # the column of each eight that field k holds


def read_all(src):
    tensors = {}
    for f in sorted(glob.glob(os.path.join(src, '*.safetensors'))):
        tensors.update(load(f)[1])
    return tensors


def floats(dt, raw):
    if dt == 'F32':
        return array('f', raw)
    if dt == 'BF16':
        return array('f', array('I', (h << 16 for h in array('H', raw))).tobytes())
    raise SystemExit(f'cannot quantize {dt}')


def bf16(x):
    """bf16 bits of x rounded to f32, then to bf16 to nearest even."""
    u = struct.unpack('<I', struct.pack('<f', x))[0]
    return (u + 0x7fff + ((u >> 16) & 1)) >> 16


def bf16_all(prod):
    """bf16 bits of every f32 of array('f') prod (each product rounded to f32 as it was
    stored), to nearest even as bf16() rounds; one pass, where the
    per-value packs took a third of a quantization's time."""
    return array('H', ((u + 0x7fff + ((u >> 16) & 1)) >> 16 for u in array('I', prod.tobytes())))


def scale_round(x, dt):
    """x as stored in the scale dtype, and its bytes."""
    code = {'F16': '<e', 'F32': '<f'}.get(dt)
    if code:
        b = struct.pack(code, x)
        return struct.unpack(code, b)[0], b
    h = bf16(x)
    return struct.unpack('<f', struct.pack('<I', h << 16))[0], struct.pack('<H', h)


def pack_words(vals, bits):
    """Consecutive values (unsigned, < 2^bits) into little-endian int32 words, field k of
    word w holding value w * p + k; the last word padded with zeros."""
    p = 32 // bits
    out = array('I')
    for w in range(0, len(vals), p):
        v = 0
        for k, x in enumerate(vals[w:w + p]):
            v |= x << (bits * k)
        out.append(v)
    return out


def pack3(vals):
    """AutoGPTQ's 3-bit pack of a multiple of 32 values (unsigned, < 8): each 32 into 3
    words, values 0-9 in word 0 (bits 3 k), value 10 across words 0 and 1 (its low 2 bits at
    30, its high bit at bit 0 of word 1), 11-20 in word 1 from bit 1, value 21 across words 1
    and 2 (its low bit at 31, its high 2 bits at 0), 22-31 in word 2 from bit 2."""
    assert len(vals) % 32 == 0
    out = array('I')
    for b in range(0, len(vals), 32):
        v = vals[b:b + 32]
        w0 = w1 = w2 = 0
        for k in range(10):
            w0 |= v[k] << (3 * k)
        w0 |= (v[10] << 30) & 0xffffffff
        w1 |= (v[10] >> 2) & 1
        for k in range(10):
            w1 |= v[11 + k] << (3 * k + 1)
        w1 |= (v[21] << 31) & 0xffffffff
        w2 |= (v[21] >> 1) & 3
        for k in range(10):
            w2 |= v[22 + k] << (3 * k + 2)
        out.extend((w0, w1, w2))
    return out


def gptq_pack(vals, bits):
    """GPTQ's words of consecutive values: pack_words, or at 3 bits pack3."""
    return pack3(vals) if bits == 3 else pack_words(vals, bits)


def gptq_block(bits):
    """Values and words of one GPTQ packing block: (32 / bits, 1), or (32, 3) at 3 bits."""
    return (32, 3) if bits == 3 else (32 // bits, 1)


def quantize_int8(name, rows, cols, w, a, ref):
    """compressed-tensors' int-quantized: q in [-127, 127], a scale per row or per tensor."""
    m = [max(abs(v) for v in w[r * cols:(r + 1) * cols]) for r in range(rows)]
    if a.group != -1:
        m = [max(m)] * rows
    out, prod = array('b'), array('f')
    scales = []
    for r in range(rows):
        sc, sb = scale_round(m[r] / 127 if m[r] > 0 else 1.0, a.scale_dtype)
        scales.append(sb)
        for v in w[r * cols:(r + 1) * cols]:
            qv = min(max(round(v / sc), -127), 127)
            out.append(qv)
            prod.append(qv * sc)
    ref[name] = ('BF16', [rows, cols], bf16_all(prod).tobytes())
    res = {name: ('I8', [rows, cols], out.tobytes()),
           name + '_scale': (a.scale_dtype, [rows, 1] if a.group == -1 else [],
                             b''.join(scales) if a.group == -1 else scales[0])}
    if a.a8 == 'static':
        res[name[:-len('.weight')] + '.input_scale'] = ('F32', [], struct.pack('<f', 0.03125))
    return res


def random_gptq(name, rows, cols, a):
    """GPTQ's tensors of a rows x cols Linear with random words, zero points and scales
    (fp16 in [2^-10, 2^-7)), groups in order."""
    base = name[:-len('.weight')]
    nb, nw = gptq_block(a.bits)
    group = cols if a.group == -1 else a.group
    ng = -(-cols // group)
    assert cols % nb == 0 and rows % nb == 0, name
    wr, zc = cols // nb * nw, rows // nb * nw  # qweight's rows, qzeros' columns
    sc = array('H', os.urandom(2 * ng * rows))
    for i in range(len(sc)):
        sc[i] = 0x1800 | (sc[i] & 0x0bff)  # exponent 6..8 of fp16 (bias 15), any mantissa
    out = {base + '.qweight': ('I32', [wr, rows], os.urandom(4 * wr * rows)),
           base + '.qzeros': ('I32', [ng, zc], os.urandom(4 * ng * zc)),
           base + '.scales': ('F16', [ng, rows], sc.tobytes())}
    if not a.no_gidx:
        out[base + '.g_idx'] = ('I32', [cols], array('i', (i // group for i in range(cols))).tobytes())
    return out


def quantize(name, rows, cols, w, a, ref):
    bits, maxq = a.bits, (1 << a.bits) - 1
    group = cols if a.group == -1 else a.group
    if a.format == 'int8':  # symmetric, 8 bits, per channel (--group -1) or per tensor
        return quantize_int8(name, rows, cols, w, a, ref)
    ngroups = -(-cols // group)
    # each column's group: i // group, or with --act-order a permutation's
    if a.act_order:
        perm = sorted(range(cols), key=lambda i: ((i * 7919 + len(name)) % cols, i))
        gidx = [0] * cols
        for j, i in enumerate(perm):
            gidx[i] = j // group
    else:
        gidx = [i // group for i in range(cols)]
    members = [[] for _ in range(ngroups)]
    for i, g in enumerate(gidx):
        members[g].append(i)
    q = [[0] * cols for _ in range(rows)]   # stored unsigned values
    z = [[0] * ngroups for _ in range(rows)]  # zero points (unsigned), per row and group
    s = [[0.0] * ngroups for _ in range(rows)]
    sbytes = [[b''] * ngroups for _ in range(rows)]
    prod = array('f', bytes(4 * rows * cols))  # (q - z) x s, rounded to f32
    half = 1 << (bits - 1)
    for r in range(rows):
        row = w[r * cols:(r + 1) * cols]
        for g in range(ngroups):
            vals = [row[i] for i in members[g]]
            if a.sym:
                m = max(abs(v) for v in vals)
                sc = m / (half - 0.5) if m > 0 else 1.0
                zp = half
            else:
                lo, hi = min(min(vals), 0.0), max(max(vals), 0.0)
                sc = (hi - lo) / maxq if hi > lo else 1.0
                zp = min(max(round(-lo / sc), 0), maxq)
            if a.format == 'gptq' and zp == 0:
                zp = 1  # GPTQ's v1 form stores zero minus one: 0 does not fit
            sc, sb = scale_round(sc, a.scale_dtype)
            s[r][g], sbytes[r][g], z[r][g] = sc, sb, zp
            qr, base_i = q[r], r * cols
            for i in members[g]:
                qi = min(max(round(row[i] / sc) + zp, 0), maxq)
                qr[i] = qi
                prod[base_i + i] = (qi - zp) * sc
    ref[name] = ('BF16', [rows, cols], bf16_all(prod).tobytes())
    out = {}
    base = name[:-len('.weight')]
    if a.format in ('gptq', 'gptq_v2'):
        # qweight [in / nb x nw, out]: each nb inputs of column o in nw words, word j of
        # block b at row b nw + j (nb = 32 / bits, nw = 1; at 3 bits nb = 32, nw = 3)
        nb, nw = gptq_block(bits)
        assert cols % nb == 0, name
        blocks = [[gptq_pack(q[o][b * nb:(b + 1) * nb], bits) for o in range(rows)]
                  for b in range(cols // nb)]
        words = array('I')
        for b in range(cols // nb):
            for j in range(nw):
                words.extend(blocks[b][o][j] for o in range(rows))
        out[base + '.qweight'] = ('I32', [cols // nb * nw, rows], words.tobytes())
        zw = array('I')
        dz = 1 if a.format == 'gptq' else 0
        for g in range(ngroups):  # qzeros [G, ceil(out / nb) x nw], packed along out
            zw.extend(gptq_pack([(z[o][g] - dz) & maxq for o in range(rows)], bits))
        out[base + '.qzeros'] = ('I32', [ngroups, len(zw) // ngroups], zw.tobytes())
        out[base + '.scales'] = (a.scale_dtype, [ngroups, rows],
                                 b''.join(sbytes[o][g] for g in range(ngroups) for o in range(rows)))
        if not a.no_gidx:
            out[base + '.g_idx'] = ('I32', [cols], array('i', gidx).tobytes())
    elif a.format == 'awq':
        assert bits == 4 and rows % 8 == 0 and not a.act_order, name

        def awq_pack(get, n):  # [n, rows / 8]: field k of [i][c] = get(i, 8 c + AWQ_ORDER[k])
            words = array('I')
            for i in range(n):
                for c in range(rows // 8):
                    v = 0
                    for k in range(8):
                        v |= get(i, 8 * c + AWQ_ORDER[k]) << (4 * k)
                    words.append(v)
            return words.tobytes()
        out[base + '.qweight'] = ('I32', [cols, rows // 8], awq_pack(lambda i, o: q[o][i], cols))
        out[base + '.qzeros'] = ('I32', [ngroups, rows // 8], awq_pack(lambda g, o: z[o][g], ngroups))
        out[base + '.scales'] = (a.scale_dtype, [ngroups, rows],
                                 b''.join(sbytes[o][g] for g in range(ngroups) for o in range(rows)))
    else:
        # compressed-tensors stores each signed value plus 2^(bits-1): q here, unsigned, is
        # that stored field (signed value q - half), and z the stored zero point (signed
        # z - half; symmetric: half, no tensor), so q - z is the same difference
        p = 32 // bits
        words = array('I')
        for o in range(rows):  # weight_packed [out, ceil(in / p)]
            words.extend(pack_words([q[o][i] for i in range(cols)], bits))
        out[base + '.weight_packed'] = ('I32', [rows, -(-cols // p)], words.tobytes())
        out[base + '.weight_shape'] = ('I64', [2], struct.pack('<2q', rows, cols))
        out[base + '.weight_scale'] = (a.scale_dtype, [rows, ngroups],
                                       b''.join(sbytes[o][g] for o in range(rows) for g in range(ngroups)))
        if not a.sym:  # weight_zero_point [ceil(out / p), G], packed along the rows
            zw = array('I', bytes(4 * (-(-rows // p)) * ngroups))
            for o in range(rows):
                for g in range(ngroups):
                    zw[(o // p) * ngroups + g] |= z[o][g] << (bits * (o % p))
            out[base + '.weight_zero_point'] = ('I32', [-(-rows // p), ngroups], zw.tobytes())
        if a.act_order:
            out[base + '.weight_g_idx'] = ('I32', [cols], array('i', gidx).tobytes())
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('src')
    ap.add_argument('dst')
    ap.add_argument('--format', required=True, choices=['gptq', 'gptq_v2', 'awq', 'ct', 'int8'])
    ap.add_argument('--a8', default='dynamic', choices=['dynamic', 'static', 'none'])
    ap.add_argument('--bits', type=int, default=4, choices=[2, 3, 4, 8])
    ap.add_argument('--group', type=int, default=64)
    ap.add_argument('--sym', action='store_true')
    ap.add_argument('--act-order', action='store_true')
    ap.add_argument('--no-gidx', action='store_true')
    ap.add_argument('--scale-dtype', default=None, choices=['F16', 'BF16', 'F32'])
    ap.add_argument('--skip', action='append', default=[])
    ap.add_argument('--random', action='store_true')
    a = ap.parse_args()
    if a.bits in (2, 3) and a.format not in ('gptq', 'gptq_v2'):
        raise SystemExit('--bits 2 and 3: GPTQ only (gptq, gptq_v2)')
    if a.random and (a.format not in ('gptq', 'gptq_v2') or a.act_order):
        raise SystemExit('--random: GPTQ only, groups in order')
    if a.scale_dtype is None:
        a.scale_dtype = 'BF16' if a.format == 'ct' else 'F16'
    tensors = read_all(a.src)
    cfg = json.load(open(os.path.join(a.src, 'config.json')))
    out, ref = {}, {}
    for name, (dt, shape, raw) in tensors.items():
        leaf = name.split('.')
        plain = (len(shape) != 2 or not name.endswith('.weight') or
                 any(k in name for k in ('embed_tokens', 'lm_head', 'tok_embeddings')) or
                 name in ('output.weight',) or leaf[-2] in ('gate', 'shared_expert_gate') or
                 any(k in name for k in a.skip))
        if plain:
            out[name] = ref[name] = (dt, shape, raw)
            continue
        if a.random:
            out.update(random_gptq(name, shape[0], shape[1], a))
            continue
        out.update(quantize(name, shape[0], shape[1], floats(dt, raw), a, ref))
    os.makedirs(a.dst, exist_ok=True)
    save(os.path.join(a.dst, 'model.safetensors'), None, dict(sorted(out.items())))
    if not a.random:
        os.makedirs(a.dst + '.ref', exist_ok=True)
        save(os.path.join(a.dst + '.ref', 'model.safetensors'), None, dict(sorted(ref.items())))
        json.dump(cfg, open(os.path.join(a.dst + '.ref', 'config.json'), 'w'), indent=2)
    if a.format in ('gptq', 'gptq_v2'):
        qc = {'quant_method': 'gptq', 'bits': a.bits, 'group_size': a.group,
              'desc_act': a.act_order, 'sym': a.sym, 'damp_percent': 0.01,
              'true_sequential': True, 'static_groups': False, 'lm_head': False,
              'checkpoint_format': a.format}
    elif a.format == 'awq':
        qc = {'quant_method': 'awq', 'bits': 4, 'group_size': a.group, 'zero_point': True,
              'version': 'gemm', 'modules_to_not_convert': None}
    elif a.format == 'int8':
        act = None if a.a8 == 'none' else {'num_bits': 8, 'type': 'int', 'symmetric': True,
                                           'strategy': 'token' if a.a8 == 'dynamic' else 'tensor',
                                           'dynamic': a.a8 == 'dynamic'}
        qc = {'quant_method': 'compressed-tensors', 'format': 'int-quantized',
              'config_groups': {'group_0': {'targets': ['Linear'],
                                            'weights': {'num_bits': 8, 'type': 'int',
                                                        'symmetric': True, 'dynamic': False,
                                                        'strategy': 'channel' if a.group == -1
                                                        else 'tensor'},
                                            'input_activations': act,
                                            'output_activations': None,
                                            'format': 'int-quantized'}},
              'ignore': ['lm_head'], 'quantization_status': 'compressed'}
    else:
        w = {'num_bits': a.bits, 'type': 'int', 'symmetric': a.sym,
             'strategy': 'channel' if a.group == -1 else 'group', 'dynamic': False,
             'actorder': 'group' if a.act_order else None, 'observer': 'minmax'}
        if a.group != -1:
            w['group_size'] = a.group
        qc = {'quant_method': 'compressed-tensors', 'format': 'pack-quantized',
              'config_groups': {'group_0': {'targets': ['Linear'], 'weights': w,
                                            'input_activations': None,
                                            'output_activations': None,
                                            'format': 'pack-quantized'}},
              'ignore': ['lm_head'], 'quantization_status': 'compressed'}
    cfg['quantization_config'] = qc
    json.dump(cfg, open(os.path.join(a.dst, 'config.json'), 'w'), indent=2)


if __name__ == '__main__':
    main()
