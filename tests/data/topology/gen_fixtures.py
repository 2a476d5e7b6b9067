#!/usr/bin/env python3
"""Writes the hwloc 2.x XML fixtures of tests/topology (the committed .xml files are its
output; run it from this folder after editing). Each machine is described here in a few
lines so the expected placements in the tests can be worked out by hand from it."""
import re

class Obj:
    def __init__(self, type_, attrs=None, children=None, infos=None):
        self.type = type_
        self.attrs = dict(attrs or {})
        self.children = list(children or [])
        self.infos = list(infos or [])
        self.gp = None
        self.cpus = set()
        self.nodes = set()

def mask(bits):
    """hwloc bitmap text: 32-bit words, most significant first."""
    if not bits:
        return "0x0"
    v = 0
    for b in bits:
        v |= 1 << b
    words = []
    while v:
        words.append(v & 0xffffffff)
        v >>= 32
    return ",".join("0x%08x" % w for w in reversed(words))

def pu(i):
    o = Obj("PU", {"os_index": i})
    o.cpus = {i}
    return o

def core(i, pus):
    return Obj("Core", {"os_index": i}, [pu(p) for p in pus])

def numa(i, mem=1 << 40):
    o = Obj("NUMANode", {"os_index": i, "local_memory": mem})
    o.nodes = {i}
    return o

def package(i, numas, cores, io=(), infos=()):
    return Obj("Package", {"os_index": i}, list(numas) + list(cores) + list(io), infos)

def osdev(name, kind, infos=()):
    kinds = {"block": 0, "gpu": 1, "net": 2, "ofed": 3}
    return Obj("OSDev", {"name": name, "osdev_type": kinds[kind]}, [], infos)

def pcidev(busid, cls, ven, dev, sub=(0, 0), rev=0, speed=31.507692, osdevs=()):
    t = "%04x [%04x:%04x] [%04x:%04x] %02x" % (cls, ven, dev, sub[0], sub[1], rev)
    return Obj("PCIDev", {"pci_busid": busid, "pci_type": t,
                          "pci_link_speed": "%f" % speed}, list(osdevs))

def hostbridge(dom, lo, hi, children):
    return Obj("Bridge", {"bridge_type": "0-1", "depth": 0,
                          "bridge_pci": "%04x:[%02x-%02x]" % (dom, lo, hi)}, children)

def switch(busid, lo, hi, children, depth=1):
    dom = int(busid.split(":")[0], 16)
    return Obj("Bridge", {"pci_busid": busid, "pci_type": "0604 [1000:c030] [0000:0000] 00",
                          "pci_link_speed": "31.507692", "bridge_type": "1-1",
                          "depth": depth, "bridge_pci": "%04x:[%02x-%02x]" % (dom, lo, hi)},
               children)

IO_TYPES = ("Bridge", "PCIDev", "OSDev")

def finish(o, counter):
    o.gp = counter[0]
    counter[0] += 1
    for c in o.children:
        finish(c, counter)
        if c.type not in IO_TYPES:
            o.cpus |= c.cpus
    return o

def subtree_numa(o):
    if o.type == "NUMANode":
        return set(o.nodes)
    s = set()
    for c in o.children:
        if c.type not in IO_TYPES:
            s |= subtree_numa(c)
    return s

def set_nodes(o, above=frozenset()):
    """nodeset: NUMA nodes below an object and those attached to its ancestors (locality)."""
    if o.type == "NUMANode":
        return
    here = set(above) | {n for c in o.children if c.type == "NUMANode" for n in c.nodes}
    o.nodes = here | subtree_numa(o)
    for c in o.children:
        if c.type not in IO_TYPES:
            set_nodes(c, here)

def emit(o, out, ind, parent=None):
    a = {"type": o.type}
    a.update(o.attrs)
    if o.type not in IO_TYPES:
        cpus = o.cpus if o.type != "NUMANode" else parent.cpus
        a["cpuset"] = a["complete_cpuset"] = mask(cpus)
        a["nodeset"] = a["complete_nodeset"] = mask(o.nodes)
        if o.type == "Machine":
            a["allowed_cpuset"] = mask(cpus)
            a["allowed_nodeset"] = mask(o.nodes)
    a["gp_index"] = o.gp
    text = " ".join('%s="%s"' % (k, v) for k, v in a.items())
    body = o.infos or o.children
    if not body:
        out.append("%s<object %s/>" % (ind, text))
        return
    out.append("%s<object %s>" % (ind, text))
    for k, v in o.infos:
        out.append('%s  <info name="%s" value="%s"/>' % (ind, k, v))
    # hwloc lists memory children first
    kids = [c for c in o.children if c.type == "NUMANode"] + \
           [c for c in o.children if c.type != "NUMANode"]
    for c in kids:
        emit(c, out, ind + "  ", o)
    out.append("%s</object>" % ind)

def distances(name, objs, values, kind=9):
    n = len(objs)
    assert len(values) == n * n
    idx = " ".join(str(o.gp) for o in objs) + " "
    val = " ".join(str(v) for v in values) + " "
    types = {o.type for o in objs}
    if len(types) == 1:
        head = '<distances2 type="%s" nbobjs="%d" kind="%d" name="%s" indexing="gp">' % (
            objs[0].type, n, kind, name)
        tail = "</distances2>"
    else:
        idx = " ".join("%s:%d" % (o.type, o.gp) for o in objs) + " "
        head = '<distances2hetero nbobjs="%d" kind="%d" name="%s">' % (n, kind | 16, name)
        tail = "</distances2hetero>"
    return ["  " + head,
            '    <indexes length="%d">%s</indexes>' % (len(idx), idx),
            '    <u64values length="%d">%s</u64values>' % (len(val), val),
            "  " + tail]

def write(path, machine, dists=()):
    finish(machine, [1])
    set_nodes(machine)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<!DOCTYPE topology SYSTEM "hwloc2.dtd">',
           '<topology version="2.0">']
    emit(machine, out, "  ")
    for d in dists:
        out += distances(*d)
    out.append("</topology>")
    text = "\n".join(out) + "\n"
    with open(path, "w") as f:
        f.write(text)
    return text

def all_pairs(n, bw):
    return [0 if i == j else bw for i in range(n) for j in range(n)]

def machine(host, arch, packages, io=()):
    return Obj("Machine", {"os_index": 0}, list(packages) + list(io),
               [("Backend", "Linux"), ("OSName", "Linux"), ("HostName", host),
                ("Architecture", arch), ("hwlocVersion", "2.9.0")])

NV, MLX, INTEL = 0x10de, 0x15b3, 0x8086

def h200(busid):
    return pcidev(busid, 0x0302, NV, 0x2335, (NV, 0x18be), 0xa1)

def cx7(busid, ofed, net):
    return pcidev(busid, 0x0207, MLX, 0x1021, (MLX, 0x0041), 0,
                  osdevs=[osdev(ofed, "ofed", [("Port1State", "4"), ("Port1LinkLayer",
                                                                     "InfiniBand")]),
                          osdev(net, "net", [("Address", "00:00:00:00:00:00")])])

# ---- HGX-style 8-GPU node: 2 sockets x 4 cores x 2 threads (core k: PUs k and k+8),
# each socket has 2 PCIe switches with 2 H200 and one ConnectX-7 each, plus a management
# Ethernet port on socket 0; NVLinkBandwidth matrix: all 8 GPUs at 450 GB/s.
def hgx8_gpus():
    return ["0000:18:00.0", "0000:1c:00.0", "0000:3a:00.0", "0000:3e:00.0",
            "0000:9a:00.0", "0000:9e:00.0", "0000:ba:00.0", "0000:be:00.0"]

def hgx8(matrix=True):
    b = hgx8_gpus()
    gpus = [h200(x) for x in b]
    pk0 = package(0, [numa(0)], [core(k, [k, k + 8]) for k in range(0, 4)], [
        hostbridge(0, 0x15, 0x3f, [
            switch("0000:15:00.0", 0x16, 0x1c, [gpus[0], cx7("0000:1a:00.0", "mlx5_0", "ibp26s0"),
                                                 gpus[1]]),
            switch("0000:37:00.0", 0x38, 0x3e, [gpus[2], cx7("0000:3c:00.0", "mlx5_1", "ibp60s0"),
                                                 gpus[3]])]),
        hostbridge(0, 0x02, 0x02, [
            pcidev("0000:02:00.0", 0x0200, INTEL, 0x1533, (INTEL, 0), 3, 0.25,
                   [osdev("eno1", "net", [("Address", "00:00:00:00:00:01")])])])],
        [("CPUModel", "Intel(R) Xeon(R) Platinum 8480C")])
    pk1 = package(1, [numa(1)], [core(k, [k, k + 8]) for k in range(4, 8)], [
        hostbridge(0, 0x95, 0xbf, [
            switch("0000:97:00.0", 0x98, 0x9e, [gpus[4], cx7("0000:9c:00.0", "mlx5_2", "ibp156s0"),
                                                 gpus[5]]),
            switch("0000:b7:00.0", 0xb8, 0xbe, [gpus[6], cx7("0000:bc:00.0", "mlx5_3", "ibp188s0"),
                                                 gpus[7]])])],
        [("CPUModel", "Intel(R) Xeon(R) Platinum 8480C")])
    m = machine("hgx-node-0", "x86_64", [pk0, pk1])
    d = [("NVLinkBandwidth", gpus, all_pairs(8, 450000))] if matrix else []
    return m, d

# ---- GB200-style compute tray: 2 Grace sockets x 4 cores, each with 2 B200 GPUs and 2
# ConnectX-7, every device under its own host bridge (PCI domains as on Grace). The matrix
# is over NVML OS devices (what NVML-backed hwloc writes), 900 GB/s between all four.
def gb200():
    gpu_bus = ["0008:01:00.0", "0009:01:00.0", "0018:01:00.0", "0019:01:00.0"]
    nic_bus = [("0000:03:00.0", "mlx5_0", "ibp3s0"), ("0002:03:00.0", "mlx5_1", "ibP2p3s0"),
               ("0010:03:00.0", "mlx5_2", "ibP16p3s0"), ("0012:03:00.0", "mlx5_3", "ibP18p3s0")]
    nvml = [osdev("nvml%d" % i, "gpu", [("Backend", "NVML")]) for i in range(4)]
    gpus = [pcidev(b, 0x0302, NV, 0x2941, (NV, 0x2046), 0xa1, 63.015385, [nvml[i]])
            for i, b in enumerate(gpu_bus)]
    def hb(dev, bus):
        dom = int(bus.split(":")[0], 16)
        return hostbridge(dom, 1 if dev in gpus else 3, 1 if dev in gpus else 3, [dev])
    nics = [cx7(*n) for n in nic_bus]
    pk0 = package(0, [numa(0)], [core(k, [k]) for k in range(0, 4)],
                  [hb(gpus[0], gpu_bus[0]), hb(gpus[1], gpu_bus[1]),
                   hb(nics[0], nic_bus[0][0]), hb(nics[1], nic_bus[1][0])],
                  [("CPUModel", "Neoverse-V2")])
    pk1 = package(1, [numa(1)], [core(k, [k]) for k in range(4, 8)],
                  [hb(gpus[2], gpu_bus[2]), hb(gpus[3], gpu_bus[3]),
                   hb(nics[2], nic_bus[2][0]), hb(nics[3], nic_bus[3][0])],
                  [("CPUModel", "Neoverse-V2")])
    m = machine("gb200-tray-0", "aarch64", [pk0, pk1])
    return m, [("NVLinkBandwidth", nvml, all_pairs(4, 900000))]

# ---- PCIe-only box: one socket x 8 cores, 4 L40S on two PCIe switches, one RoCE NIC,
# no NVLink matrix: every GPU is its own domain.
def pcie4():
    l40s = lambda b: pcidev(b, 0x0302, NV, 0x26b9, (NV, 0x1851), 0xa1, 31.507692)
    g = [l40s(b) for b in ("0000:01:00.0", "0000:02:00.0", "0000:81:00.0", "0000:82:00.0")]
    roce = pcidev("0000:41:00.0", 0x0200, MLX, 0x101d, (MLX, 0x0016), 0, 15.753846,
                  [osdev("mlx5_0", "ofed", [("Port1LinkLayer", "Ethernet")]),
                   osdev("enp65s0f0np0", "net", [("Address", "00:00:00:00:00:02")])])
    pk = package(0, [numa(0)], [core(k, [k]) for k in range(8)], [
        hostbridge(0, 0x00, 0x02, [switch("0000:00:01.0", 0x01, 0x02, g[:2])]),
        hostbridge(0, 0x41, 0x41, [roce]),
        hostbridge(0, 0x80, 0x82, [switch("0000:80:01.0", 0x81, 0x82, g[2:])])])
    return machine("pcie-box", "x86_64", [pk]), []

# ---- CPU-only node: 2 sockets x 4 cores, one Ethernet port on socket 0, no GPU.
def cpu2s():
    eth = pcidev("0000:03:00.0", 0x0200, INTEL, 0x1572, (INTEL, 0), 1, 7.876923,
                 [osdev("enp3s0f0", "net", [("Address", "00:00:00:00:00:03")])])
    pk0 = package(0, [numa(0)], [core(k, [k]) for k in range(4)],
                  [hostbridge(0, 0x03, 0x03, [eth])])
    pk1 = package(1, [numa(1)], [core(k, [k]) for k in range(4, 8)])
    return machine("cpu-node", "x86_64", [pk0, pk1]), []

def matrix_values(text, values):
    """Replaces the values of the (single) matrix, keeping hwloc's length attribute right."""
    val = " ".join(values) + " "
    return re.sub(r'<u64values length="\d+">[^<]*</u64values>',
                  '<u64values length="%d">%s</u64values>' % (len(val), val), text)

if __name__ == "__main__":
    hgx = write("hgx8.xml", *hgx8())
    write("hgx8-nomatrix.xml", *hgx8(matrix=False))
    write("gb200.xml", *gb200())
    write("pcie4.xml", *pcie4())
    write("cpu2s.xml", *cpu2s())

    # broken variants of hgx8.xml
    lines = hgx.splitlines(True)
    with open("bad-truncated.xml", "w") as f:
        f.write("".join(lines[:len(lines) * 2 // 3]))
    bad = re.sub(r'(<object type="Core" os_index="5") cpuset="[^"]*" complete_cpuset="[^"]*"',
                 r'\1 cpuset="0xzz" complete_cpuset="0xzz"', hgx)
    assert bad != hgx
    open("bad-cpuset.xml", "w").write(bad)
    bad = re.sub(r'(<object type="Core" os_index="2") cpuset="[^"]*" complete_cpuset="[^"]*"',
                 r'\1 cpuset="0x0" complete_cpuset="0x0"', hgx)
    assert bad != hgx
    open("bad-emptycpuset.xml", "w").write(bad)
    # 8 objects but 8 x 7 values: not square
    open("bad-nonsquare.xml", "w").write(
        matrix_values(hgx, [str(v) for v in all_pairs(8, 450000)[:56]]))
    # a PU missing: its core and the machine claim a CPU no PU has (hwloc accepts it)
    bad = "".join(l for l in lines if 'type="PU" os_index="15"' not in l)
    assert bad != hgx
    open("bad-missing-pu.xml", "w").write(bad)
    # one value written as a negative number
    vals = [str(v) for v in all_pairs(8, 450000)]
    vals[1] = "-450000"
    open("bad-negative.xml", "w").write(matrix_values(hgx, vals))
    # one GPU listed twice in the NVLink matrix (hwloc accepts it: two domains appear)
    idx = re.search(r'<indexes length="\d+">([^<]*)</indexes>', hgx).group(1).split()
    dup = idx[:5] + idx[:1] + idx[6:]
    bad = hgx.replace(" ".join(idx) + " ", " ".join(dup) + " ")
    assert bad != hgx
    open("bad-dupindex.xml", "w").write(bad)
    # the NVLink matrix over Core objects instead of GPUs
    cores = re.findall(r'type="Core" os_index="\d+" [^>]*gp_index="(\d+)"', hgx)[:8]
    text = " ".join(cores) + " "
    bad = hgx.replace('<distances2 type="PCIDev"', '<distances2 type="Core"').replace(
        '<indexes length="%d">%s </indexes>' % (len(" ".join(idx)) + 1, " ".join(idx)),
        '<indexes length="%d">%s</indexes>' % (len(text), text))
    assert bad.count('type="Core"') > hgx.count('type="Core"') and text in bad
    open("bad-corematrix.xml", "w").write(bad)
