#!/usr/bin/env python3
"""A bf16 copy of an fp8 checkpoint with a scale per tensor or channel (compressed-tensors,
quant_method fp8 without blocks, ModelOpt FP8 in config.json or hf_quant_config.json) or
per block (quant_method fp8 with weight_block_size, or compressed-tensors' block strategy
with its block_structure), dequantized independently of the
runtime: every F8_E4M3 tensor X with its scale X_scale (one value, or one per row) or
X_scale_inv (one per block), F32, BF16 or F16, is decoded here (OCP e4m3 by its bit
fields), multiplied by its scale and stored as BF16 (exact when the product has at most 8
significant bits: checked); the scale and input_scale tensors are dropped and config.json
loses its weight quantization. KV-cache scales stay, as compressed-tensors names and
declares them (self_attn.k_proj.k_scale -> self_attn.k_scale, a kv_cache_scheme of one
scale per tensor; also where quant_method fp8 or modelopt leaves them undeclared). A
runtime that dequantizes the same way decodes the copy bit for bit as the original.

With --only REGEX, only the weights whose module (the name without ".weight") re.match()es
REGEX are dequantized, their scales dropped; every other tensor, the tensor names and
config.json stay as they are (a checkpoint whose ignore list leaves those modules
unquantized, once the caller names them there).

usage: fp8_to_bf16.py SRC DST [--only REGEX]
"""
import glob
import json
import os
import re
import struct
import sys
from array import array


def e4m3(b):
    """The value of e4m3 byte b (NaN for 0x7f and 0xff)."""
    s = -1.0 if b & 0x80 else 1.0
    e, m = (b >> 3) & 15, b & 7
    if e == 15 and m == 7:
        return float('nan')
    if e == 0:
        return s * m * 2.0 ** -9
    return s * (1 + m / 8.0) * 2.0 ** (e - 7)


E4M3 = [e4m3(b) for b in range(256)]


def bf16_row(vals):
    """bf16 bits of the floats vals (an array('H')), each of which must be exact in bf16:
    rounded to f32 as stored into an array('f') (struct.pack('<f')'s rounding), their low
    halves checked to be zero; one that rounds past f32's range refused, as struct.pack
    refuses it."""
    u = array('I', array('f', vals).tobytes())
    for x, b in zip(vals, u):
        if b & 0xffff or (b & 0x7fffffff == 0x7f800000 and abs(x) != float('inf')):
            raise SystemExit(f'{x!r} is not exact in bf16')
    return array('H', (b >> 16 for b in u))


def decode_scales(dt, raw, name):
    """F32, BF16 or F16 scale values as floats."""
    if dt == 'F32':
        return struct.unpack(f'<{len(raw) // 4}f', raw)
    if dt == 'F16':
        return struct.unpack(f'<{len(raw) // 2}e', raw)
    if dt == 'BF16':
        return [struct.unpack('<f', struct.pack('<I', h << 16))[0]
                for h in struct.unpack(f'<{len(raw) // 2}H', raw)]
    raise SystemExit(f'{name}: scale dtype {dt}')


def read(path):
    b = open(path, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    hdr = json.loads(b[8:8 + n])
    return hdr, b[8 + n:]


def main():
    src, dst = sys.argv[1], sys.argv[2]
    only = re.compile(sys.argv[4]) if len(sys.argv) == 5 and sys.argv[3] == '--only' else None
    if len(sys.argv) != 3 and only is None:
        raise SystemExit('usage: fp8_to_bf16.py SRC DST [--only REGEX]')

    def kept(name):  # --only: a tensor left as it is (a weight not matched, or its scales)
        for suf in ('.weight_scale_inv', '.weight_scale', '.input_scale', '.weight'):
            if name.endswith(suf):
                return not only.match(name[:-len(suf)])
        return True
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
    q0 = json.load(open(os.path.join(src, 'config.json'))).get('quantization_config') or {}
    block = q0.get('weight_block_size')  # quant_method fp8 with blocks
    for name, (dt, shape, raw) in tensors.items():
        if only is not None and kept(name):
            out[name] = (dt, shape, raw)
            continue
        if name.endswith(('.weight_scale', '.weight_scale_inv', '.input_scale')):
            continue
        for kv in 'kv':  # AutoFP8's and ModelOpt's KV-scale names
            name = name.replace(f'.self_attn.{kv}_proj.{kv}_scale', f'.self_attn.{kv}_scale')
        if dt != 'F8_E4M3':
            out[name] = (dt, shape, raw)
            continue
        rows, cols = shape
        if name + '_scale_inv' in tensors:  # a scale per block of br x bc (weight_block_size)
            sdt, sshape, sraw = tensors[name + '_scale_inv']
            br, bc = block
            assert sshape == [-(-rows // br), -(-cols // bc)], name
        else:  # one value, one per row, or one per block (compressed-tensors' block strategy)
            sdt, sshape, sraw = tensors[name + '_scale']
            n = len(decode_scales(sdt, sraw, name))
            if n == 1:
                br, bc = rows, cols
            elif sshape == [rows, 1]:
                br, bc = 1, cols
            else:
                g = q0['config_groups']
                br, bc = next(iter(g.values()))['weights']['block_structure']
                assert sshape == [-(-rows // br), -(-cols // bc)], name
        scales = decode_scales(sdt, sraw, name)
        sc = -(-cols // bc)
        vals = array('H')
        for r in range(rows):
            srow = scales[(r // br) * sc:(r // br + 1) * sc]
            vals.extend(bf16_row([E4M3[raw[r * cols + c]] * srow[c // bc] for c in range(cols)]))
        out[name] = ('BF16', shape, vals.tobytes())
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
    if only is not None:  # config.json (and hf_quant_config.json) as they are
        for f in ('config.json', 'hf_quant_config.json'):
            if os.path.exists(os.path.join(src, f)):
                open(os.path.join(dst, f), 'w').write(open(os.path.join(src, f)).read())
        return
    cfg = json.load(open(os.path.join(src, 'config.json')))
    q = cfg.get('quantization_config')
    if q is None and os.path.exists(os.path.join(src, 'hf_quant_config.json')):
        q = json.load(open(os.path.join(src, 'hf_quant_config.json')))['quantization']
    q = q or {}
    kvs = q.get('kv_cache_scheme')
    undeclared = not kvs and q.get('quant_method') in ('fp8', 'modelopt') and any(
        n.endswith('.self_attn.k_scale') for n in out)  # used where they are (vLLM)
    if kvs == 'static' or q.get('kv_cache_quant_algo') == 'FP8' or undeclared:
        kvs = {'num_bits': 8, 'type': 'float', 'strategy': 'tensor', 'dynamic': False,
               'symmetric': True}
    if kvs:  # only the weights' quantization goes
        cfg['quantization_config'] = {'quant_method': 'compressed-tensors', 'config_groups': {},
                                      'kv_cache_scheme': kvs}
    else:
        cfg.pop('quantization_config', None)
    json.dump(cfg, open(os.path.join(dst, 'config.json'), 'w'), indent=2)


if __name__ == '__main__':
    main()
