#!/usr/bin/env python3
"""Edits a safetensors checkpoint directory in place, for tests that need a tensor gone,
a value changed or scales stored in another dtype (written here from the format's
definition: an 8-byte little-endian header length, a JSON header, the data).

usage: st_edit.py DIR drop NAME...          remove the tensors (shards and index)
       st_edit.py DIR rename NAME NEW       NAME becomes NEW (shards and index)
       st_edit.py DIR set NAME VALUE        every element of NAME (F32) becomes VALUE
                                            (a float: nan and inf too)
       st_edit.py DIR cast SUFFIX DTYPE     every F32 tensor whose name ends with SUFFIX
                                            stored as DTYPE (BF16 or F16; the values must
                                            be exact in it: checked)
       st_edit.py DIR half                  every F32 and BF16 tensor stored as F16, each
                                            value rounded to nearest (ties to even; one
                                            beyond F16's range refused), but a routing
                                            correction bias (F32 in every checkpoint)
       st_edit.py DIR bf16                  every F32 tensor stored as BF16, each value
                                            rounded to nearest (ties to even), but a
                                            routing correction bias
       st_edit.py DIR copy NAME NEW         NAME stored a second time as NEW
       st_edit.py DIR setint NAME I VALUE   element I of NAME (I32 or I64) becomes VALUE
       st_edit.py DIR setf16 NAME I VALUE   element I of NAME (F16, BF16 or F32) becomes VALUE
       st_edit.py DIR zero NAME             every byte of NAME zero
"""
import glob
import json
import os
import struct
import sys


def load(path):
    b = open(path, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    hdr = json.loads(b[8:8 + n])
    meta = hdr.pop('__metadata__', None)
    data = b[8 + n:]
    return meta, {k: (v['dtype'], v['shape'], data[v['data_offsets'][0]:v['data_offsets'][1]])
                  for k, v in hdr.items()}


def save(path, meta, tensors):
    hdr, blob, off = {}, bytearray(), 0
    if meta is not None:
        hdr['__metadata__'] = meta
    for k, (dt, shape, raw) in tensors.items():
        hdr[k] = {'dtype': dt, 'shape': shape, 'data_offsets': [off, off + len(raw)]}
        blob += raw
        off += len(raw)
    h = json.dumps(hdr, separators=(',', ':')).encode()
    h += b' ' * (-len(h) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + blob)


def cast(raw, dt, name):
    vals = struct.unpack(f'<{len(raw) // 4}f', raw)
    if dt == 'F16':
        out = struct.pack(f'<{len(vals)}e', *vals)
        back = struct.unpack(f'<{len(vals)}e', out)
    elif dt == 'BF16':
        bits = [struct.unpack('<I', struct.pack('<f', v))[0] for v in vals]
        if any(u & 0xffff for u in bits):
            raise SystemExit(f'{name}: not exact in BF16')
        out = struct.pack(f'<{len(vals)}H', *[u >> 16 for u in bits])
        back = vals
    else:
        raise SystemExit(f'cast to {dt}: BF16 or F16')
    if list(back) != list(vals):
        raise SystemExit(f'{name}: not exact in {dt}')
    return out


def half(raw, dt, name):
    """F32 or BF16 values rounded to F16 (struct's 'e' rounds to nearest even)."""
    if dt == 'BF16':
        raw = b''.join(b'\0\0' + raw[i:i + 2] for i in range(0, len(raw), 2))
    vals = struct.unpack(f'<{len(raw) // 4}f', raw)
    try:
        return struct.pack(f'<{len(vals)}e', *vals)
    except OverflowError:
        raise SystemExit(f'{name}: a value beyond F16\'s range')


def bf16(raw):
    """F32 values rounded to BF16 (to nearest, ties to even)."""
    u = struct.unpack(f'<{len(raw) // 4}I', raw)
    return struct.pack(f'<{len(u)}H',
                       *[((x + 0x7fff + ((x >> 16) & 1)) >> 16) & 0xffff for x in u])


def main():
    d, op, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    found = set()
    for path in sorted(glob.glob(os.path.join(d, '*.safetensors'))):
        meta, t = load(path)
        for k in list(t):
            dt, shape, raw = t[k]
            if op == 'drop' and k in args:
                del t[k]
                found.add(k)
            elif op == 'rename' and k == args[0]:
                t[args[1]] = t.pop(k)
                found.add(k)
            elif op == 'set' and k == args[0]:
                assert dt == 'F32', k
                t[k] = (dt, shape, struct.pack('<f', float(args[1])) * (len(raw) // 4))
                found.add(k)
            elif op == 'zero' and k == args[0]:
                t[k] = (dt, shape, bytes(len(raw)))
                found.add(k)
            elif op == 'copy' and k == args[0]:
                t[args[1]] = t[k]
                found.add(k)
            elif op in ('setint', 'setf16') and k == args[0]:
                code = {'I32': 'i', 'I64': 'q', 'F16': 'e', 'F32': 'f', 'BF16': 'H'}[dt]
                size, i = struct.calcsize(code), int(args[1])
                v = float(args[2]) if op == 'setf16' else int(args[2])
                if dt == 'BF16':
                    v = struct.unpack('<I', struct.pack('<f', v))[0] >> 16
                b = bytearray(raw)
                b[i * size:(i + 1) * size] = struct.pack('<' + code, v)
                t[k] = (dt, shape, bytes(b))
                found.add(k)
            elif op == 'half' and dt in ('F32', 'BF16') and \
                    not k.endswith('e_score_correction_bias'):
                t[k] = ('F16', shape, half(raw, dt, k))
                found.add(k)
            elif op == 'bf16' and dt == 'F32' and not k.endswith('e_score_correction_bias'):
                t[k] = ('BF16', shape, bf16(raw))
                found.add(k)
            elif op == 'cast' and k.endswith(args[0]) and dt == 'F32':
                t[k] = (args[1], shape, cast(raw, args[1], k))
                found.add(k)
        save(path, meta, t)
    if not found:
        raise SystemExit(f'{op} {args}: no such tensor')
    index = os.path.join(d, 'model.safetensors.index.json')
    if op in ('drop', 'rename', 'copy') and os.path.exists(index):
        j = json.load(open(index))
        for k in args[:1] if op in ('rename', 'copy') else args:
            f = j['weight_map'].get(k) if op == 'copy' else j['weight_map'].pop(k, None)
            if op in ('rename', 'copy') and f is not None:
                j['weight_map'][args[1]] = f
        json.dump(j, open(index, 'w'), indent=2)


if __name__ == '__main__':
    main()
