/* Topology discovery: hwloc (this machine with I/O objects, or an XML file), GPUs and NICs
 * found as PCI devices, NVLink domains from the "NVLinkBandwidth" matrix or NVML, the
 * checks a loaded file must pass, the dump, and binding a rank to its cores. */
#define _GNU_SOURCE
#include "topo_int.h"
#include "hlx_file.h"
#include "hlx_log.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HLX_PCI_VENDOR_NVIDIA 0x10de

static const hlx_param_t hlx_topo_params[] = {
    { "TOPO_FILE", HLX_PT_STRING, "", 0, 0, offsetof(hlx_topo_settings_t, file),
      "hwloc XML topology used instead of discovering this machine (like NCCL_TOPO_FILE)", NULL },
    { "TOPO_DUMP_FILE", HLX_PT_STRING, "", 0, 0, offsetof(hlx_topo_settings_t, dump_file),
      "write the topology used (hwloc XML, NVLink matrix included) to this file", NULL },
    { "TOPO_THISSYSTEM", HLX_PT_INT, "0", 0, 1, offsetof(hlx_topo_settings_t, thissystem),
      "1: the topology file describes this machine (bind ranks, query NVML/CUDA/verbs)", NULL },
    { "TOPO_NVML_LIB", HLX_PT_STRING, "libnvidia-ml.so.1", 0, 0,
      offsetof(hlx_topo_settings_t, nvml_lib),
      "NVML library for NVLink discovery, opened at run time (\"none\" disables)", NULL },
    { "TOPO_CUDA_LIB", HLX_PT_STRING, "libcuda.so.1", 0, 0,
      offsetof(hlx_topo_settings_t, cuda_lib),
      "CUDA driver library matching GPUs to CUDA ordinals by PCI bus id (\"none\" disables)",
      NULL },
    { "TOPO_VERBS_LIB", HLX_PT_STRING, "libibverbs.so.1", 0, 0,
      offsetof(hlx_topo_settings_t, verbs_lib),
      "verbs library naming RDMA devices (\"none\" disables)", NULL },
    { "TOPO_LAUNCHER_XML", HLX_PT_STRING, "", 0, 0, offsetof(hlx_topo_settings_t, launcher_xml),
      "this machine as hwloc XML, written by the launcher (helixrun) for its ranks: read "
      "instead of discovering it live (HELIX_TOPO_FILE wins; unreadable: discovered)", NULL },
};

static const hlx_param_table_t hlx_topo_table = {
    "topology", hlx_topo_params, sizeof(hlx_topo_params) / sizeof(hlx_topo_params[0]),
    sizeof(hlx_topo_settings_t), NULL,
};

const struct hlx_param_table *hlx_topo_param_table(void)
{
    return &hlx_topo_table;
}

int hlx_topo_busid_norm(const char *in, char *out, size_t outlen)
{
    unsigned dom, bus, dev, fn;
    char tail;

    if (in == NULL || sscanf(in, "%x:%x:%x.%x%c", &dom, &bus, &dev, &fn, &tail) != 4 ||
        dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7)
        return -1;
    snprintf(out, outlen, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
    return 0;
}

static int hlx_topo_is_gpu(hwloc_obj_t o)
{
    return o->type == HWLOC_OBJ_PCI_DEVICE &&
           o->attr->pcidev.vendor_id == HLX_PCI_VENDOR_NVIDIA &&
           (o->attr->pcidev.class_id >> 8) == 0x03;
}

static int hlx_topo_is_nic(hwloc_obj_t o)
{
    return o->type == HWLOC_OBJ_PCI_DEVICE &&
           ((o->attr->pcidev.class_id >> 8) == 0x02 || o->attr->pcidev.class_id == 0x0c06);
}

/* "Core L#3 (P#3)" or "PCIDev 0000:18:00.0" for error messages. */
static void hlx_topo_objname(hwloc_obj_t o, char *buf, size_t len)
{
    char type[32];

    hwloc_obj_type_snprintf(type, sizeof(type), o, 0);
    if (o->type == HWLOC_OBJ_PCI_DEVICE)
        snprintf(buf, len, "%s %04x:%02x:%02x.%x", type, o->attr->pcidev.domain,
                 o->attr->pcidev.bus, o->attr->pcidev.dev, o->attr->pcidev.func);
    else if (o->type == HWLOC_OBJ_OS_DEVICE || o->type == HWLOC_OBJ_BRIDGE)
        snprintf(buf, len, "%s %s (gp_index %llu)", type, o->name ? o->name : "",
                 (unsigned long long)o->gp_index);
    else
        snprintf(buf, len, "%s L#%u (P#%u, gp_index %llu)", type, o->logical_index,
                 o->os_index, (unsigned long long)o->gp_index);
}

static void hlx_topo_pci_busid(hwloc_obj_t o, char *buf, size_t len)
{
    snprintf(buf, len, "%04x:%02x:%02x.%x", o->attr->pcidev.domain, o->attr->pcidev.bus,
             o->attr->pcidev.dev, o->attr->pcidev.func);
}

static int hlx_topo_pci_cmp(const void *a, const void *b)
{
    hwloc_obj_t x = *(const hwloc_obj_t *)a, y = *(const hwloc_obj_t *)b;
    const struct hwloc_pcidev_attr_s *p = &x->attr->pcidev, *q = &y->attr->pcidev;

    if (p->domain != q->domain)
        return p->domain < q->domain ? -1 : 1;
    if (p->bus != q->bus)
        return p->bus < q->bus ? -1 : 1;
    if (p->dev != q->dev)
        return p->dev < q->dev ? -1 : 1;
    return (int)p->func - (int)q->func;
}

/* NICs that can do RDMA first (they carry cross-node traffic), then by bus id. */
static int hlx_topo_nic_cmp(const void *a, const void *b)
{
    const hlx_topo_nic_t *x = a, *y = b;

    if (x->rdma != y->rdma)
        return y->rdma - x->rdma;
    return strcmp(x->busid, y->busid);
}

static int hlx_topo_package_of(hwloc_topology_t hw, hwloc_obj_t anc)
{
    hwloc_obj_t o, pkg = NULL;
    int found = 0;

    for (o = anc; o != NULL; o = o->parent)
        if (o->type == HWLOC_OBJ_PACKAGE)
            return (int)o->os_index;
    /* I/O attached above the packages: the one package holding all its CPUs, if any */
    while ((o = hwloc_get_next_obj_by_type(hw, HWLOC_OBJ_PACKAGE, pkg)) != NULL) {
        pkg = o;
        if (anc->cpuset && hwloc_bitmap_isincluded(anc->cpuset, o->cpuset)) {
            if (found)
                return -1;
            found = 1 + (int)o->os_index;
        }
    }
    return found ? found - 1 : -1;
}

static int hlx_topo_numa_of(hwloc_obj_t anc)
{
    int n;
    if (anc == NULL || anc->nodeset == NULL)
        return -1;
    n = hwloc_bitmap_first(anc->nodeset);
    return n < 0 ? -1 : n;
}

static void hlx_topo_locality(hwloc_topology_t hw, hwloc_obj_t o, int *pkg, int *numa,
                              char *cpuset, size_t len)
{
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(hw, o);

    cpuset[0] = '\0';
    *pkg = *numa = -1;
    if (anc == NULL)
        return;
    *pkg = hlx_topo_package_of(hw, anc);
    *numa = hlx_topo_numa_of(anc);
    if (anc->cpuset)
        hwloc_bitmap_list_snprintf(cpuset, len, anc->cpuset);
}

/* Tree hops from a up to the closest ancestor shared with b (I/O objects included). */
static int hlx_topo_hops(hwloc_obj_t a, hwloc_obj_t b)
{
    hwloc_obj_t x, y;
    int hops = 0;

    for (x = a; x != NULL; x = x->parent, hops++)
        for (y = b; y != NULL; y = y->parent)
            if (x == y)
                return hops;
    return 1 << 20;
}

static hlx_status_t hlx_topo_find_devices(hlx_topo_t *t)
{
    hwloc_obj_t o = NULL, *objs;
    int n = 0, ng = 0, nn = 0, i;

    while ((o = hwloc_get_next_pcidev(t->hw, o)) != NULL)
        n++;
    objs = calloc((size_t)n + 1, sizeof(*objs));
    t->gpu_obj = calloc((size_t)n + 1, sizeof(*t->gpu_obj));
    t->nic_obj = calloc((size_t)n + 1, sizeof(*t->nic_obj));
    t->gpus = calloc((size_t)n + 1, sizeof(*t->gpus));
    t->nics = calloc((size_t)n + 1, sizeof(*t->nics));
    if (!objs || !t->gpu_obj || !t->nic_obj || !t->gpus || !t->nics) {
        free(objs);
        return HLX_ERR_NOMEM;
    }
    n = 0;
    while ((o = hwloc_get_next_pcidev(t->hw, o)) != NULL)
        objs[n++] = o;
    qsort(objs, (size_t)n, sizeof(*objs), hlx_topo_pci_cmp);

    for (i = 0; i < n; i++) {
        o = objs[i];
        if (hlx_topo_is_gpu(o)) {
            hlx_topo_gpu_t *g = &t->gpus[ng];
            t->gpu_obj[ng] = o;
            g->index = ng;
            hlx_topo_pci_busid(o, g->busid, sizeof(g->busid));
            g->vendor_id = o->attr->pcidev.vendor_id;
            g->device_id = o->attr->pcidev.device_id;
            g->class_id = o->attr->pcidev.class_id;
            g->pcie_gbps = o->attr->pcidev.linkspeed;
            g->domain = ng; /* until NVLink says otherwise */
            g->nic = -1;
            g->nic_hops = -1;
            g->cuda_device = -1;
            hlx_topo_locality(t->hw, o, &g->package, &g->numa, g->cpuset, sizeof(g->cpuset));
            ng++;
        } else if (hlx_topo_is_nic(o)) {
            hlx_topo_nic_t *c = &t->nics[nn];
            hwloc_obj_t ch;
            t->nic_obj[nn] = o;
            hlx_topo_pci_busid(o, c->busid, sizeof(c->busid));
            c->vendor_id = o->attr->pcidev.vendor_id;
            c->device_id = o->attr->pcidev.device_id;
            c->class_id = o->attr->pcidev.class_id;
            c->pcie_gbps = o->attr->pcidev.linkspeed;
            c->rdma = c->class_id == 0x0207 || c->class_id == 0x0c06;
            for (ch = o->io_first_child; ch != NULL; ch = ch->next_sibling) {
                if (ch->type != HWLOC_OBJ_OS_DEVICE || ch->name == NULL)
                    continue;
                if (ch->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
                    snprintf(c->name, sizeof(c->name), "%s", ch->name);
                    c->rdma = 1;
                } else if (ch->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK &&
                           c->netdev[0] == '\0') {
                    snprintf(c->netdev, sizeof(c->netdev), "%s", ch->name);
                }
            }
            hlx_topo_locality(t->hw, o, &c->package, &c->numa, c->cpuset, sizeof(c->cpuset));
            nn++;
        }
    }
    free(objs);
    t->info.ngpus = ng;
    t->info.nnics = nn;
    return HLX_OK;
}

/* Names NICs, orders them (RDMA first) and gives each GPU its closest NIC. */
static void hlx_topo_finish_nics(hlx_topo_t *t)
{
    int nn = t->info.nnics, i, g;
    int *load;
    hlx_topo_nic_t tmp;
    hwloc_obj_t otmp;

    for (i = 0; i < nn; i++) {
        hlx_topo_nic_t *c = &t->nics[i];
        if (c->name[0] == '\0')
            snprintf(c->name, sizeof(c->name), "%s", c->netdev[0] ? c->netdev : c->busid);
    }
    /* insertion sort keeps nics[] and nic_obj[] together */
    for (i = 1; i < nn; i++) {
        int j = i;
        while (j > 0 && hlx_topo_nic_cmp(&t->nics[j - 1], &t->nics[j]) > 0) {
            tmp = t->nics[j];
            t->nics[j] = t->nics[j - 1];
            t->nics[j - 1] = tmp;
            otmp = t->nic_obj[j];
            t->nic_obj[j] = t->nic_obj[j - 1];
            t->nic_obj[j - 1] = otmp;
            j--;
        }
    }
    t->info.nrdma_nics = 0;
    for (i = 0; i < nn; i++) {
        t->nics[i].index = i;
        t->info.nrdma_nics += t->nics[i].rdma;
    }

    load = calloc((size_t)nn + 1, sizeof(*load));
    if (load == NULL)
        return;
    for (g = 0; g < t->info.ngpus; g++) {
        int best = -1, best_hops = 0;
        for (i = 0; i < nn; i++) {
            int h;
            if (t->info.nrdma_nics > 0 && !t->nics[i].rdma)
                continue;
            h = hlx_topo_hops(t->gpu_obj[g], t->nic_obj[i]);
            /* closest first; equally close NICs are shared out evenly */
            if (best < 0 || h < best_hops || (h == best_hops && load[i] < load[best])) {
                best = i;
                best_hops = h;
            }
        }
        t->gpus[g].nic = best;
        t->gpus[g].nic_hops = best < 0 ? -1 : best_hops;
        if (best >= 0)
            load[best]++;
    }
    free(load);
}

/* Union-find over GPUs (0..ngpus-1) and switches (ngpus..): components are domains. */
static int hlx_topo_uf_find(int *parent, int x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

/* Sets NVLink bandwidths and domains from a graph whose nodes are the GPUs then nextra
 * switches, with mbps[i*n+j] the bandwidth in MB/s from node i to node j. */
static hlx_status_t hlx_topo_set_nvlink(hlx_topo_t *t, int nextra, const double *mbps)
{
    int ng = t->info.ngpus, n = ng + nextra, i, j, s, nd = 0;
    int *parent = malloc(sizeof(int) * (size_t)(n + 1));
    int *label = malloc(sizeof(int) * (size_t)(n + 1));

    if (parent == NULL || label == NULL) {
        free(parent);
        free(label);
        return HLX_ERR_NOMEM;
    }
    for (i = 0; i < n; i++) {
        parent[i] = i;
        label[i] = -1;
    }
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j++)
            if (i != j && mbps[(size_t)i * n + j] > 0)
                parent[hlx_topo_uf_find(parent, i)] = hlx_topo_uf_find(parent, j);
    for (i = 0; i < ng; i++) {
        int r = hlx_topo_uf_find(parent, i);
        if (label[r] < 0)
            label[r] = nd++;
        t->gpus[i].domain = label[r];
    }
    t->info.ndomains = nd;
    for (i = 0; i < ng; i++) {
        for (j = 0; j < ng; j++) {
            double bw = 0;
            if (i == j)
                continue;
            bw = mbps[(size_t)i * n + j];
            if (mbps[(size_t)j * n + i] > bw)
                bw = mbps[(size_t)j * n + i];
            for (s = ng; s < n; s++) {
                double a = mbps[(size_t)i * n + s] > mbps[(size_t)s * n + i]
                               ? mbps[(size_t)i * n + s] : mbps[(size_t)s * n + i];
                double b = mbps[(size_t)j * n + s] > mbps[(size_t)s * n + j]
                               ? mbps[(size_t)j * n + s] : mbps[(size_t)s * n + j];
                double via = a < b ? a : b;
                if (via > bw)
                    bw = via;
            }
            t->nvlink[(size_t)i * ng + j] = bw / 1000.0;
        }
    }
    free(parent);
    free(label);
    return HLX_OK;
}

/* Index of a matrix object in the graph: a GPU (the PCI device or an OS device below it,
 * as NVML-backed hwloc reports) or -1 for anything else (an NVSwitch, a CPU). */
static int hlx_topo_gpu_index(const hlx_topo_t *t, hwloc_obj_t o)
{
    int i;

    while (o != NULL && o->type == HWLOC_OBJ_OS_DEVICE)
        o = o->parent;
    for (i = 0; i < t->info.ngpus; i++)
        if (t->gpu_obj[i] == o)
            return i;
    return -1;
}

static hlx_status_t hlx_topo_nvlink_from_hwloc(hlx_topo_t *t)
{
    struct hwloc_distances_s *d = NULL;
    unsigned nr = 1, i, j;
    int ng = t->info.ngpus, n, nextra = 0, *map;
    double *mbps;
    hlx_status_t st;

    if (hwloc_distances_get_by_name(t->hw, "NVLinkBandwidth", &nr, &d, 0) < 0 || nr == 0)
        return HLX_ERR_NOT_FOUND;
    map = malloc(sizeof(int) * d->nbobjs);
    if (map == NULL) {
        hwloc_distances_release(t->hw, d);
        return HLX_ERR_NOMEM;
    }
    for (i = 0; i < d->nbobjs; i++) {
        int g = hlx_topo_gpu_index(t, d->objs[i]);
        map[i] = g >= 0 ? g : ng + nextra++;
    }
    n = ng + nextra;
    mbps = calloc((size_t)n * (size_t)n + 1, sizeof(*mbps));
    if (mbps == NULL) {
        free(map);
        hwloc_distances_release(t->hw, d);
        return HLX_ERR_NOMEM;
    }
    for (i = 0; i < d->nbobjs; i++)
        for (j = 0; j < d->nbobjs; j++)
            if (i != j)
                mbps[(size_t)map[i] * n + map[j]] = (double)d->values[i * d->nbobjs + j];
    st = hlx_topo_set_nvlink(t, nextra, mbps);
    if (st == HLX_OK)
        t->info.nvlink_src = HLX_TOPO_NVLINK_HWLOC;
    free(mbps);
    free(map);
    hwloc_distances_release(t->hw, d);
    return st;
}

hlx_status_t hlx_topo_nvlink_from_graph(hlx_topo_t *t, int nextra, const double *mbps)
{
    int ng = t->info.ngpus, i, j;
    hwloc_uint64_t *vals;
    hwloc_distances_add_handle_t h;
    hlx_status_t st = hlx_topo_set_nvlink(t, nextra, mbps);

    if (st != HLX_OK)
        return st;
    t->info.nvlink_src = HLX_TOPO_NVLINK_NVML;
    if (ng < 2)
        return HLX_OK;
    vals = calloc((size_t)ng * ng, sizeof(*vals));
    if (vals == NULL)
        return HLX_ERR_NOMEM;
    for (i = 0; i < ng; i++)
        for (j = 0; j < ng; j++)
            vals[i * ng + j] = (hwloc_uint64_t)(t->nvlink[(size_t)i * ng + j] * 1000.0 + 0.5);
    h = hwloc_distances_add_create(t->hw, "NVLinkBandwidth",
                                   HWLOC_DISTANCES_KIND_FROM_OS |
                                       HWLOC_DISTANCES_KIND_MEANS_BANDWIDTH, 0);
    if (h == NULL || hwloc_distances_add_values(t->hw, h, (unsigned)ng, t->gpu_obj, vals, 0) < 0 ||
        hwloc_distances_add_commit(t->hw, h, 0) < 0)
        hlx_warn("topology: could not record the NVML NVLink matrix for dumps: %s",
                 strerror(errno));
    free(vals);
    return HLX_OK;
}

static void hlx_topo_count(hlx_topo_t *t)
{
    hwloc_obj_t root = hwloc_get_root_obj(t->hw);
    const char *host = hwloc_obj_get_info_by_name(root, "HostName");

    t->info.npackages = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_PACKAGE);
    t->info.nnuma = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_NUMANODE);
    t->info.ncores = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_CORE);
    t->info.npus = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_PU);
    if (host != NULL)
        snprintf(t->info.hostname, sizeof(t->info.hostname), "%s", host);
    else if (gethostname(t->info.hostname, sizeof(t->info.hostname)) != 0 ||
             !t->info.this_system)
        snprintf(t->info.hostname, sizeof(t->info.hostname), "node0");
    t->info.hostname[sizeof(t->info.hostname) - 1] = '\0';
}

static int hlx_topo_lib_enabled(const char *lib)
{
    return lib[0] != '\0' && strcmp(lib, "none") != 0;
}

/* The live machine without hwloc's gl and opencl components: they only add OS devices
 * (X displays, OpenCL devices) below PCI devices that are found anyway, and gl alone
 * tries ten X displays, each on a socket and on TCP port 600x, at every load (about 230
 * of a load's 900 system calls). A file keeps whatever it holds. */
static void hlx_topo_skip_display(hwloc_topology_t hw, const char *path)
{
#if HWLOC_API_VERSION >= 0x00020100
    if (path == NULL) {
        hwloc_topology_set_components(hw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "gl");
        hwloc_topology_set_components(hw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "opencl");
    }
#else
    (void)hw;
    (void)path;
#endif
}

/* This machine as its launcher loaded it (helixrun writes it once for all its ranks, with
 * the I/O filter and components of the live load, hlx_topo_load_hw), read as this
 * system: a few milliseconds instead of the live discovery's 60-90 (the PCI devices'
 * config space, each read a trap to the hypervisor in a VM). Returns 1 with t->hw
 * loaded; 0 (t->hw left NULL) when the file cannot be read: the caller then discovers
 * the machine. */
static int hlx_topo_load_launcher(hlx_topo_t *t, const char *xml)
{
    hwloc_topology_t hw;

    if (hwloc_topology_init(&hw) < 0)
        return 0;
    hwloc_topology_set_io_types_filter(hw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    /* the allowed CPUs and memory (cgroup) read here, as a live load does: the rank's own */
    hwloc_topology_set_flags(hw, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM |
                                 HWLOC_TOPOLOGY_FLAG_THISSYSTEM_ALLOWED_RESOURCES);
    if (hwloc_topology_set_xml(hw, xml) < 0 || hwloc_topology_load(hw) < 0) {
        hlx_warn("topology: %s (HELIX_TOPO_LAUNCHER_XML): hwloc cannot read it (run "
                 "with HWLOC_XML_VERBOSE=1 for its reason); discovering this machine "
                 "instead", xml);
        hwloc_topology_destroy(hw);
        return 0;
    }
    /* The variable is inherited by whatever a rank starts (srun and ssh pass it on; a
     * shared TMPDIR leaves the file readable there): another machine's XML is not this
     * one, whose allowed resources would then be cut out of it. */
    {
        const char *host = hwloc_obj_get_info_by_name(hwloc_get_root_obj(hw), "HostName");
        char self[256];

        if (gethostname(self, sizeof(self)) == 0) {
            self[sizeof(self) - 1] = '\0';
            if (host == NULL || strcmp(host, self) != 0) {
                hlx_warn("topology: %s (HELIX_TOPO_LAUNCHER_XML) describes host %s, not "
                         "this one (%s); discovering this machine instead", xml,
                         host ? host : "(unnamed)", self);
                hwloc_topology_destroy(hw);
                return 0;
            }
        }
    }
    hlx_debug(HLX_SUB_TOPO, "this machine read from the launcher's %s "
              "(HELIX_TOPO_LAUNCHER_XML)", xml);
    t->hw = hw;
    return 1;
}

/* hwloc's load of a file (path) or of this machine, into t->hw (freed by the caller on
 * failure too): the I/O filter, components and flags each source takes. */
static hlx_status_t hlx_topo_load_hw(hlx_topo_t *t, const char *path, char *err,
                                     size_t errlen)
{
    if (hwloc_topology_init(&t->hw) < 0) {
        t->hw = NULL;
        hlx_topo_seterr(err, errlen, "hwloc_topology_init: %s", strerror(errno));
        return HLX_ERR_NOMEM;
    }
    /* a file is kept whole (NVSwitches and OS devices carry the NVLink matrix); the live
     * machine keeps the I/O devices that matter: GPUs, NICs and the bridges above them */
    hwloc_topology_set_io_types_filter(t->hw, path ? HWLOC_TYPE_FILTER_KEEP_ALL
                                                   : HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    hlx_topo_skip_display(t->hw, path);
    if (path != NULL) {
        if (t->settings.thissystem)
            hwloc_topology_set_flags(t->hw, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM);
        if (hwloc_topology_set_xml(t->hw, path) < 0) {
            hlx_topo_seterr(err, errlen,
                            "%s: hwloc cannot read it as an XML topology (run with "
                            "HWLOC_XML_VERBOSE=1 for its reason)", path);
            return HLX_ERR_PARSE;
        }
    }
    if (hwloc_topology_load(t->hw) < 0) {
        if (path != NULL)
            hlx_topo_seterr(err, errlen,
                            "%s: hwloc refused the topology (run with HWLOC_XML_VERBOSE=1 "
                            "for its reason)", path);
        else
            hlx_topo_seterr(err, errlen, "hwloc could not discover this machine: %s",
                            strerror(errno));
        return path ? HLX_ERR_PARSE : HLX_ERR_IO;
    }
    return HLX_OK;
}

hlx_status_t hlx_topo_load(const char *path, hlx_topo_t **topo_p, char *err, size_t errlen)
{
    hlx_topo_t *t;
    hlx_status_t st;
    int ng, from_env = 0;

    hlx_log_init();
    t = calloc(1, sizeof(*t));
    if (t == NULL)
        return HLX_ERR_NOMEM;
    st = hlx_param_load(&hlx_topo_table, &t->settings, NULL);
    if (st != HLX_OK) {
        hlx_topo_seterr(err, errlen, "bad HELIX_TOPO_* setting (see the message above)");
        goto err_free;
    }
    if (path == NULL && t->settings.file[0] != '\0') {
        path = t->settings.file;
        from_env = 1;
    }
    snprintf(t->info.source, sizeof(t->info.source), "%s", path ? path : "live");

    if (path != NULL) {
        st = hlx_topo_xml_check(path, err, errlen);
        if (st != HLX_OK) {
            size_t n = strlen(err);
            /* say where a path nobody typed on this command line came from */
            if (from_env && n + 24 < errlen)
                snprintf(err + n, errlen - n, " (HELIX_TOPO_FILE)");
            goto err_free;
        }
    }
    if (path != NULL || t->settings.launcher_xml[0] == '\0' ||
        !hlx_topo_load_launcher(t, t->settings.launcher_xml)) {
        st = hlx_topo_load_hw(t, path, err, errlen);
        if (st != HLX_OK)
            goto err_destroy;
    }
    t->info.this_system = hwloc_topology_is_thissystem(t->hw);

    st = hlx_topo_find_devices(t);
    if (st != HLX_OK)
        goto err_destroy;
    st = hlx_topo_validate(t, err, errlen);
    if (st != HLX_OK)
        goto err_destroy;

    if (t->info.this_system && hlx_topo_lib_enabled(t->settings.verbs_lib))
        (void)hlx_topo_verbs_names(t, t->settings.verbs_lib);
    hlx_topo_finish_nics(t);

    ng = t->info.ngpus;
    t->nvlink = calloc((size_t)ng * ng + 1, sizeof(*t->nvlink));
    if (t->nvlink == NULL) {
        st = HLX_ERR_NOMEM;
        goto err_destroy;
    }
    t->info.ndomains = ng;
    st = hlx_topo_nvlink_from_hwloc(t);
    if (st == HLX_ERR_NOT_FOUND && t->info.this_system && ng > 0 &&
        hlx_topo_lib_enabled(t->settings.nvml_lib))
        st = hlx_topo_nvml_links(t, t->settings.nvml_lib);
    if (st != HLX_OK && st != HLX_ERR_NOT_FOUND && st != HLX_ERR_UNSUPPORTED)
        goto err_destroy;
    if (t->info.this_system && ng > 0 && hlx_topo_lib_enabled(t->settings.cuda_lib))
        (void)hlx_topo_cuda_match(t, t->settings.cuda_lib);
    hlx_topo_count(t);
    hlx_debug(HLX_SUB_TOPO, "topology %s: %d GPUs in %d NVLink domains, %d NICs (%d RDMA)",
              t->info.source, t->info.ngpus, t->info.ndomains, t->info.nnics,
              t->info.nrdma_nics);

    if (t->settings.dump_file[0] != '\0') {
        st = hlx_topo_dump(t, t->settings.dump_file, err, errlen);
        if (st != HLX_OK)
            goto err_destroy;
        hlx_info(HLX_SUB_TOPO, "topology written to %s (HELIX_TOPO_DUMP_FILE)",
                 t->settings.dump_file);
    }
    *topo_p = t;
    return HLX_OK;

err_destroy:
    hlx_topo_free(t);
    return st;
err_free:
    free(t);
    return st;
}

void hlx_topo_free(hlx_topo_t *t)
{
    if (t == NULL)
        return;
    if (t->hw != NULL)
        hwloc_topology_destroy(t->hw);
    free(t->gpus);
    free(t->gpu_obj);
    free(t->nics);
    free(t->nic_obj);
    free(t->nvlink);
    free(t);
}

hlx_status_t hlx_topo_dump(const hlx_topo_t *t, const char *path, char *err, size_t errlen)
{
    char *xml = NULL, oerr[4400];
    const char *why;
    int len = 0;
    hlx_out_t out;
    hlx_status_t st;

    if (t == NULL || path == NULL || path[0] == '\0') {
        hlx_topo_seterr(err, errlen, "topology dump: no topology or no file name");
        return HLX_ERR_INVALID;
    }
    if (hwloc_topology_export_xmlbuffer(t->hw, &xml, &len, 0) < 0 || len < 1) {
        hlx_topo_seterr(err, errlen, "%s: cannot write the topology: hwloc cannot export it "
                        "as XML", path);
        return HLX_ERR_INTERNAL;
    }
    /* whole or not at all (hlx_out: a temporary file renamed into place), as every output
     * file: hwloc's own export truncated an existing file first and left it cut short when
     * the write failed */
    st = hlx_out_begin(&out, path, oerr, sizeof(oerr));
    if (st == HLX_OK) { /* len counts the NUL */
        int ok = fwrite(xml, 1, (size_t)len - 1, out.f) == (size_t)len - 1 &&
                 fflush(out.f) == 0, e = errno;
        st = hlx_out_end(&out, ok, oerr, sizeof(oerr));
        if (!ok) {
            snprintf(oerr, sizeof(oerr), "%s: %s", path, strerror(e));
            st = HLX_ERR_IO;
        }
    }
    hwloc_free_xmlbuffer(t->hw, xml);
    if (st != HLX_OK) {
        /* "PATH: reason" from hlx_out, said as the topology's */
        why = strncmp(oerr, path, strlen(path)) == 0 && oerr[strlen(path)] == ':'
                  ? oerr + strlen(path) + 2 : oerr;
        hlx_topo_seterr(err, errlen, "%s: cannot write the topology: %s", path, why);
        return st == HLX_ERR_INVALID ? HLX_ERR_INVALID : HLX_ERR_IO;
    }
    return HLX_OK;
}

/* Every normal and NUMA object has CPUs; PUs cover exactly the machine's cpuset. */
static hlx_status_t hlx_topo_check_cpusets(const hlx_topo_t *t, char *err, size_t errlen)
{
    hwloc_obj_t root = hwloc_get_root_obj(t->hw), o;
    hwloc_bitmap_t pus;
    int depth, d, i, n;
    char name[128], buf[HLX_TOPO_CPUSET_LEN];
    hlx_status_t st = HLX_OK;

    depth = hwloc_topology_get_depth(t->hw);
    for (d = 0; d < depth && st == HLX_OK; d++) {
        n = hwloc_get_nbobjs_by_depth(t->hw, d);
        for (i = 0; i < n && st == HLX_OK; i++) {
            o = hwloc_get_obj_by_depth(t->hw, d, i);
            if (o->cpuset == NULL || hwloc_bitmap_iszero(o->cpuset)) {
                hlx_topo_objname(o, name, sizeof(name));
                hlx_topo_seterr(err, errlen, "%s: %s: empty cpuset", t->info.source, name);
                st = HLX_ERR_PARSE;
            }
        }
    }
    n = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_NUMANODE);
    for (i = 0; i < n && st == HLX_OK; i++) {
        o = hwloc_get_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, i);
        if (o->cpuset == NULL || o->nodeset == NULL || hwloc_bitmap_iszero(o->nodeset)) {
            hlx_topo_objname(o, name, sizeof(name));
            hlx_topo_seterr(err, errlen, "%s: %s: empty cpuset or nodeset", t->info.source,
                            name);
            st = HLX_ERR_PARSE;
        }
    }
    if (st != HLX_OK)
        return st;

    pus = hwloc_bitmap_alloc();
    if (pus == NULL)
        return HLX_ERR_NOMEM;
    n = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_PU);
    for (i = 0; i < n; i++)
        hwloc_bitmap_or(pus, pus, hwloc_get_obj_by_type(t->hw, HWLOC_OBJ_PU, i)->cpuset);
    if (n == 0) {
        hlx_topo_seterr(err, errlen, "%s: no PU (processing unit) at all", t->info.source);
        st = HLX_ERR_PARSE;
    } else if (!hwloc_bitmap_isequal(pus, root->cpuset)) {
        int cpu, found = 0;
        hwloc_bitmap_xor(pus, pus, root->cpuset);
        hwloc_bitmap_list_snprintf(buf, sizeof(buf), pus);
        cpu = hwloc_bitmap_first(pus);
        /* name the deepest object that claims the first such CPU */
        for (d = depth - 1; d >= 0 && !found; d--) {
            n = hwloc_get_nbobjs_by_depth(t->hw, d);
            for (i = 0; i < n && !found; i++) {
                o = hwloc_get_obj_by_depth(t->hw, d, i);
                if (o->cpuset && hwloc_bitmap_isset(o->cpuset, (unsigned)cpu)) {
                    hlx_topo_objname(o, name, sizeof(name));
                    found = 1;
                }
            }
        }
        hlx_topo_seterr(err, errlen,
                        "%s: %s: CPUs %s of the machine's cpuset have no PU (an object with a "
                        "bad cpuset was dropped, or a PU is missing)",
                        t->info.source, found ? name : "Machine", buf);
        st = HLX_ERR_PARSE;
    }
    hwloc_bitmap_free(pus);
    return st;
}

static hlx_status_t hlx_topo_check_io(const hlx_topo_t *t, char *err, size_t errlen)
{
    int i, k;
    char name[128];

    for (k = 0; k < 2; k++) {
        int n = k == 0 ? t->info.ngpus : t->info.nnics;
        for (i = 0; i < n; i++) {
            hwloc_obj_t o = k == 0 ? t->gpu_obj[i] : t->nic_obj[i];
            hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t->hw, o);
            if (anc == NULL || anc->cpuset == NULL || hwloc_bitmap_iszero(anc->cpuset)) {
                hlx_topo_objname(o, name, sizeof(name));
                hlx_topo_seterr(err, errlen,
                                "%s: %s (%s): no non-I/O ancestor with CPUs, so its locality "
                                "is unknown", t->info.source, name, k == 0 ? "GPU" : "NIC");
                return HLX_ERR_PARSE;
            }
        }
    }
    return HLX_OK;
}

static hlx_status_t hlx_topo_check_distances(const hlx_topo_t *t, char *err, size_t errlen)
{
    struct hwloc_distances_s *d[16];
    unsigned nr = 16, i, a, b;
    char name[128], name2[128];
    hlx_status_t st = HLX_OK;

    if (hwloc_distances_get(t->hw, &nr, d, 0, 0) < 0)
        return HLX_OK; /* none */
    if (nr > 16)
        nr = 16;
    for (i = 0; i < nr; i++) {
        const char *dn = hwloc_distances_get_name(t->hw, d[i]);
        int nvlink = dn != NULL && !strcmp(dn, "NVLinkBandwidth");
        if (dn == NULL)
            dn = "(unnamed)";
        if (st != HLX_OK)
            continue;
        if (d[i]->nbobjs < 2) {
            hlx_topo_seterr(err, errlen, "%s: distances \"%s\": %u object(s), need at least 2",
                            t->info.source, dn, d[i]->nbobjs);
            st = HLX_ERR_PARSE;
            continue;
        }
        for (a = 0; a < d[i]->nbobjs && st == HLX_OK; a++) {
            if (d[i]->objs[a] == NULL) {
                hlx_topo_seterr(err, errlen, "%s: distances \"%s\": object %u does not exist",
                                t->info.source, dn, a);
                st = HLX_ERR_PARSE;
                break;
            }
            if (nvlink && hlx_topo_gpu_index(t, d[i]->objs[a]) < 0 &&
                d[i]->objs[a]->type != HWLOC_OBJ_PCI_DEVICE &&
                d[i]->objs[a]->type != HWLOC_OBJ_BRIDGE) {
                hlx_topo_objname(d[i]->objs[a], name, sizeof(name));
                hlx_topo_seterr(err, errlen,
                                "%s: distances \"%s\": %s is neither a GPU nor an NVSwitch",
                                t->info.source, dn, name);
                st = HLX_ERR_PARSE;
                break;
            }
            for (b = 0; b < a; b++) {
                if (d[i]->objs[b] == d[i]->objs[a]) {
                    hlx_topo_objname(d[i]->objs[a], name, sizeof(name));
                    hlx_topo_seterr(err, errlen, "%s: distances \"%s\": %s is listed twice "
                                    "(rows %u and %u)", t->info.source, dn, name, b, a);
                    st = HLX_ERR_PARSE;
                    break;
                }
            }
            if (st != HLX_OK)
                break;
            for (b = 0; b < d[i]->nbobjs; b++) {
                hwloc_uint64_t v = d[i]->values[a * d[i]->nbobjs + b];
                /* negative text is read by hwloc as a huge unsigned number */
                if (v >= ((hwloc_uint64_t)1 << 62)) {
                    hlx_topo_objname(d[i]->objs[a], name, sizeof(name));
                    hlx_topo_objname(d[i]->objs[b], name2, sizeof(name2));
                    hlx_topo_seterr(err, errlen,
                                    "%s: distances \"%s\": value %llu from %s to %s is "
                                    "negative or absurd", t->info.source, dn,
                                    (unsigned long long)v, name, name2);
                    st = HLX_ERR_PARSE;
                    break;
                }
            }
        }
    }
    for (i = 0; i < nr; i++)
        hwloc_distances_release(t->hw, d[i]);
    return st;
}

hlx_status_t hlx_topo_validate(const hlx_topo_t *t, char *err, size_t errlen)
{
    hlx_status_t st;

    if (t == NULL || t->hw == NULL) {
        hlx_topo_seterr(err, errlen, "no topology");
        return HLX_ERR_INVALID;
    }
    st = hlx_topo_check_cpusets(t, err, errlen);
    if (st == HLX_OK)
        st = hlx_topo_check_io(t, err, errlen);
    if (st == HLX_OK)
        st = hlx_topo_check_distances(t, err, errlen);
    return st;
}

void hlx_topo_get_info(const hlx_topo_t *t, hlx_topo_info_t *info_p)
{
    *info_p = t->info;
}

const hlx_topo_gpu_t *hlx_topo_gpu(const hlx_topo_t *t, int i)
{
    return (t && i >= 0 && i < t->info.ngpus) ? &t->gpus[i] : NULL;
}

const hlx_topo_nic_t *hlx_topo_nic(const hlx_topo_t *t, int i)
{
    return (t && i >= 0 && i < t->info.nnics) ? &t->nics[i] : NULL;
}

hlx_link_t hlx_topo_gpu_link(const hlx_topo_t *t, int a, int b)
{
    if (t == NULL || a < 0 || b < 0 || a >= t->info.ngpus || b >= t->info.ngpus)
        return HLX_LINK_COUNT;
    if (a == b)
        return HLX_LINK_SELF;
    return t->gpus[a].domain == t->gpus[b].domain ? HLX_LINK_NVLINK : HLX_LINK_PCIE;
}

double hlx_topo_nvlink_gbps(const hlx_topo_t *t, int a, int b)
{
    if (t == NULL || a < 0 || b < 0 || a >= t->info.ngpus || b >= t->info.ngpus || a == b)
        return 0;
    return t->nvlink[(size_t)a * t->info.ngpus + b];
}

hlx_status_t hlx_topo_to_cluster(const hlx_topo_t *t, hlx_cluster_t *c)
{
    int i, j, ng = t->info.ngpus;
    double nv = 0, pcie = 0;

    memset(c, 0, sizeof(*c));
    c->nodes = calloc(1, sizeof(*c->nodes));
    if (c->nodes == NULL)
        return HLX_ERR_NOMEM;
    snprintf(c->name, sizeof(c->name), "%s", t->info.hostname);
    snprintf(c->description, sizeof(c->description), "one node from topology %.200s",
             t->info.source);
    c->nnodes = 1;
    c->ndomains = 1;
    snprintf(c->nodes[0].name, sizeof(c->nodes[0].name), "%s", t->info.hostname);
    c->nodes[0].gpus = ng;
    c->nodes[0].nics = t->info.nrdma_nics > 0 ? t->info.nrdma_nics : t->info.nnics;
    c->nodes[0].nvlink = ng > 1 && t->info.ndomains < ng;
    for (i = 0; i < ng; i++) {
        if (t->gpus[i].pcie_gbps > pcie)
            pcie = t->gpus[i].pcie_gbps;
        for (j = 0; j < ng; j++)
            if (t->nvlink[(size_t)i * ng + j] > nv)
                nv = t->nvlink[(size_t)i * ng + j];
    }
    c->total_gpus = ng;
    c->max_domain_gpus = ng;
    /* rough figures for cost estimates only; a cluster file gives real ones */
    c->link[HLX_LINK_SELF] = (hlx_link_params_t){ 1000, 0 };
    c->link[HLX_LINK_SHM] = (hlx_link_params_t){ 10, 1 };
    c->link[HLX_LINK_NVLINK] = (hlx_link_params_t){ nv, nv > 0 ? 2 : 0 };
    c->link[HLX_LINK_PCIE] = (hlx_link_params_t){ pcie > 0 ? pcie : 16, 3 };
    c->link[HLX_LINK_TCP] = (hlx_link_params_t){ 1, 20 };
    return HLX_OK;
}

int hlx_topo_inherited_binding(hlx_topo_t *t, char *buf, size_t len)
{
    hwloc_bitmap_t cur, allowed;
    int narrower = 0;

    if (len > 0)
        buf[0] = '\0';
    if (t == NULL || !t->info.this_system)
        return 0;
    cur = hwloc_bitmap_alloc();
    allowed = hwloc_bitmap_dup(hwloc_topology_get_allowed_cpuset(t->hw));
    if (cur != NULL && allowed != NULL &&
        hwloc_get_cpubind(t->hw, cur, HWLOC_CPUBIND_PROCESS) == 0) {
        /* CPUs the topology does not show (offline) do not make a binding */
        hwloc_bitmap_and(allowed, allowed, hwloc_topology_get_topology_cpuset(t->hw));
        hwloc_bitmap_and(cur, cur, allowed);
        narrower = !hwloc_bitmap_iszero(cur) && !hwloc_bitmap_isequal(cur, allowed)
                       ? hwloc_bitmap_weight(cur) : 0;
        if (narrower > 0 && len > 0)
            hwloc_bitmap_list_snprintf(buf, len, cur);
    }
    hwloc_bitmap_free(cur);
    hwloc_bitmap_free(allowed);
    return narrower;
}

hlx_status_t hlx_topo_bind_self(hlx_topo_t *t, const hlx_placement_t *p, int rank)
{
    const hlx_rank_place_t *rp;
    hwloc_bitmap_t set;
    hlx_status_t st = HLX_OK;

    if (t == NULL || p == NULL || rank < 0 || rank >= p->nranks)
        return HLX_ERR_INVALID;
    rp = &p->ranks[rank];
    if (!t->info.this_system) {
        hlx_info(HLX_SUB_TOPO, "rank %d: not binding: topology %s is not this system "
                 "(HELIX_TOPO_THISSYSTEM=1 says it is)", rank, t->info.source);
        return HLX_OK;
    }
    if (rp->cpuset[0] == '\0') {
        hlx_info(HLX_SUB_TOPO, "rank %d: no cpuset in the placement, not binding", rank);
        return HLX_OK;
    }
    set = hwloc_bitmap_alloc();
    if (set == NULL)
        return HLX_ERR_NOMEM;
    if (hwloc_bitmap_list_sscanf(set, rp->cpuset) < 0) {
        hlx_error("rank %d: cpuset \"%s\" does not parse", rank, rp->cpuset);
        st = HLX_ERR_INVALID;
        goto out;
    }
    if (!hwloc_bitmap_isincluded(set, hwloc_topology_get_allowed_cpuset(t->hw))) {
        hlx_error("rank %d: cpuset %s is not allowed for this process", rank, rp->cpuset);
        st = HLX_ERR_INVALID;
        goto out;
    }
    if (hwloc_set_cpubind(t->hw, set, HWLOC_CPUBIND_PROCESS) < 0) {
        hlx_error("rank %d: binding to cpuset %s failed: %s", rank, rp->cpuset,
                  strerror(errno));
        st = HLX_ERR_IO;
        goto out;
    }
    hlx_info(HLX_SUB_TOPO, "rank %d bound to CPUs %s (NUMA %d, GPU %d, NIC %s)", rank,
             rp->cpuset, rp->numa, rp->gpu, rp->nic_name);
out:
    hwloc_bitmap_free(set);
    return st;
}
