#!/usr/bin/env python3
"""A bf16 copy of a compressed-tensors fp8 checkpoint, dequantized independently of the
runtime: every F8_E4M3 tensor X with its F32 scale X_scale (one value, or one per row) is
decoded here (OCP e4m3 by its bit fields), multiplied by its scale and stored as BF16
(exact when the product has at most 8 significant bits, which a power-of-two scale keeps:
checked); the scale and input_scale tensors are dropped and config.json loses its weight
quantization. A runtime that dequantizes the same way decodes the copy bit for bit as the
original.

usage: fp8_to_bf16.py SRC DST
"""
import glob
import json
import os
import struct
import sys


def e4m3(b):
    """The value of e4m3 byte b (NaN for 0x7f and 0xff)."""
    s = -1.0 if b & 0x80 else 1.0
    e, m = (b >> 3) & 15, b & 7
    if e == 15 and m == 7:
        return float('nan')
    if e == 0:
        return s * m * 2.0 ** -9
    return s * (1 + m / 8.0) * 2.0 ** (e - 7)


def bf16_bits(x):
    """bf16 bits of x, which must be exact in bf16."""
    u = struct.unpack('<I', struct.pack('<f', x))[0]
    if u & 0xffff:
        raise SystemExit(f'{x!r} is not exact in bf16')
    return u >> 16


def read(path):
    b = open(path, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    hdr = json.loads(b[8:8 + n])
    return hdr, b[8 + n:]


def main():
    src, dst = sys.argv[1], sys.argv[2]
    os.makedirs(dst, exist_ok=True)
    shards = sorted(glob.glob(os.path.join(src, '*.safetensors')))
    tensors = {}
    for f in shards:
        hdr, data = read(f)
        for name, t in hdr.items():
            if name == '__metadata__':
                continue
            a, z = t['data_offsets']
            tensors[name] = (t['dtype'], t['shape'], data[a:z])
    out = {}
    for name, (dt, shape, raw) in tensors.items():
        if name.endswith('.weight_scale') or name.endswith('.input_scale'):
            continue
        if dt != 'F8_E4M3':
            out[name] = (dt, shape, raw)
            continue
        sdt, sshape, sraw = tensors[name + '_scale']
        assert sdt == 'F32', name
        scales = struct.unpack(f'<{len(sraw) // 4}f', sraw)
        rows, cols = shape
        vals = bytearray()
        for r in range(rows):
            s = scales[r if len(scales) > 1 else 0]
            for c in range(cols):
                vals += struct.pack('<H', bf16_bits(e4m3(raw[r * cols + c]) * s))
        out[name] = ('BF16', shape, bytes(vals))
    hdr, off, blob = {}, 0, bytearray()
    for name in sorted(out):
        dt, shape, raw = out[name]
        hdr[name] = {'dtype': dt, 'shape': shape, 'data_offsets': [off, off + len(raw)]}
        blob += raw
        off += len(raw)
    h = json.dumps(hdr, separators=(',', ':')).encode()
    h += b' ' * (-len(h) % 8)
    with open(os.path.join(dst, 'model.safetensors'), 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + blob)
    cfg = json.load(open(os.path.join(src, 'config.json')))
    q = cfg.get('quantization_config') or {}
    if 'kv_cache_scheme' in q:  # only the weights' quantization goes
        cfg['quantization_config'] = {'quant_method': 'compressed-tensors', 'config_groups': {},
                                      'kv_cache_scheme': q['kv_cache_scheme']}
    else:
        cfg.pop('quantization_config', None)
    json.dump(cfg, open(os.path.join(dst, 'config.json'), 'w'), indent=2)


if __name__ == '__main__':
    main()
