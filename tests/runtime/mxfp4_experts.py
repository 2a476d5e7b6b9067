#!/usr/bin/env python3
"""Stores a gpt-oss checkpoint's experts as MXFP4, the form of the released gpt-oss
checkpoints, independently of the runtime (the OCP Microscaling format, written here from
its definition): each layer's mlp.experts.gate_up_proj [E, H, 2F] and down_proj [E, F, H]
(input-major) become X_blocks [E, out, in / 32, 16] (U8: two E2M1 codes a byte, the even
element in the low nibble) and X_scales [E, out, in / 32] (U8: E8M0, 2^(s - 127)),
output-major as the releases store them; config.json gains quantization_config
{"quant_method": "mxfp4"}. A block's scale is 2^(floor(log2(amax)) - 2), its elements the
nearest E2M1 value (ties to the smaller magnitude), saturated at 6.

It also writes DST.ref: the source with every expert weight replaced by the value its
MXFP4 codes stand for (exact in bf16 and f32), in the source's dtype and layout. A runtime
that reads MXFP4 right decodes the two bit for bit alike.

usage: mxfp4_experts.py SRC DST
"""
import json
import math
import os
import shutil
import struct
import sys
from array import array

from quantize_int import floats  # F32 / BF16 bytes as floats, beside this script
from st_edit import load, save  # the format's reader and writer

E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def store(dt, vals):
    raw = array('f', vals).tobytes()
    if dt == 'F32':
        return raw
    bits = array('I', raw)
    if any(u & 0xffff for u in bits):
        raise SystemExit('an MXFP4 value is not exact in BF16')
    return array('H', (u >> 16 for u in bits)).tobytes()


def code(x):
    """The E2M1 code nearest x (ties to the smaller magnitude), saturated at 6."""
    a = abs(x)
    best = min(range(8), key=lambda c: (abs(E2M1[c] - a), c))
    return best | (8 if x < 0 else 0)


def quantize(w, E, n_in, n_out):
    """w: [E][n_in][n_out] input-major floats -> blocks [E][n_out][n_in/32][16] bytes,
    scales [E][n_out][n_in/32] bytes and the dequantized w in w's layout."""
    g = n_in // 32
    blocks, scales = bytearray(E * n_out * g * 16), bytearray(E * n_out * g)
    deq = array('f', bytes(4 * E * n_in * n_out))
    for e in range(E):
        for o in range(n_out):
            for b in range(g):
                col = [w[(e * n_in + b * 32 + i) * n_out + o] for i in range(32)]
                amax = max(abs(v) for v in col)
                ex = math.floor(math.log2(amax)) - 2 if amax > 0 else 0
                ex = max(-127, min(127, ex))
                s = (e * n_out + o) * g + b
                scales[s] = ex + 127
                codes = [code(v / 2.0 ** ex) for v in col]
                for i in range(16):
                    blocks[s * 16 + i] = codes[2 * i] | codes[2 * i + 1] << 4
                for i in range(32):
                    v = E2M1[codes[i] & 7] * 2.0 ** ex
                    deq[(e * n_in + b * 32 + i) * n_out + o] = -v if codes[i] & 8 else v
    return bytes(blocks), bytes(scales), deq


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    src, dst = sys.argv[1], sys.argv[2]
    ref = dst + '.ref'
    tensors, meta = {}, None
    for f in sorted(os.listdir(src)):
        if f.endswith('.safetensors'):
            m, t = load(os.path.join(src, f))
            meta = meta or m
            tensors.update(t)
    cfg = json.load(open(os.path.join(src, 'config.json')))
    E, H, F = cfg['num_local_experts'], cfg['hidden_size'], cfg['intermediate_size']
    out, back = {}, {}
    for name, (dt, shape, raw) in tensors.items():
        if name.endswith('mlp.experts.gate_up_proj') or name.endswith('mlp.experts.down_proj'):
            n_in, n_out = (H, 2 * F) if name.endswith('gate_up_proj') else (F, H)
            assert shape == [E, n_in, n_out], (name, shape)
            blocks, scales, deq = quantize(floats(dt, raw), E, n_in, n_out)
            out[name + '_blocks'] = ('U8', [E, n_out, n_in // 32, 16], blocks)
            out[name + '_scales'] = ('U8', [E, n_out, n_in // 32], scales)
            back[name] = (dt, shape, store(dt, deq))
        else:
            out[name] = back[name] = (dt, shape, raw)
    for d, ts, q in ((dst, out, True), (ref, back, False)):
        os.makedirs(d, exist_ok=True)
        save(os.path.join(d, 'model.safetensors'), meta, ts)
        c = dict(cfg)
        if q:
            c['quantization_config'] = {'quant_method': 'mxfp4',
                                        'modules_to_not_convert': ['model.layers.*.self_attn',
                                                                   'model.layers.*.mlp.router',
                                                                   'model.embed_tokens',
                                                                   'lm_head']}
        with open(os.path.join(d, 'config.json'), 'w') as f:
            json.dump(c, f, indent=2)
        for extra in os.listdir(src):  # tokenizer and generation files, if any
            if extra.endswith('.json') and extra not in ('config.json',
                                                         'model.safetensors.index.json'):
                shutil.copy(os.path.join(src, extra), d)
    return 0


if __name__ == '__main__':
    sys.exit(main())
