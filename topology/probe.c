/* Optional run-time sources opened with dlopen, so the build never needs them: NVML for
 * NVLink links, the CUDA driver for bus id -> CUDA ordinal, libibverbs for RDMA device
 * names. Only the few entry points used are declared here, with NVML's documented layouts. */
#define _GNU_SOURCE
#include "topo_int.h"
#include "hlx_log.h"

#include <dlfcn.h>

/* The libraries stay mapped after dlclose: drivers and libibverbs keep state in globals
 * (device lists, threads) that unloading would turn into leaks or crashes. */
#define HLX_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- NVML ---------------------------------------------------------------------------- */
#define HLX_NVML_SUCCESS   0
#define HLX_NVML_MAX_LINKS 18

typedef struct hlx_nvml_device *hlx_nvml_device_t;
typedef struct {
    char         bus_id_legacy[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    char         bus_id[32];
} hlx_nvml_pci_t; /* nvmlPciInfo_t */

typedef struct {
    void *lib;
    int (*init)(void);
    int (*shutdown)(void);
    int (*by_busid)(const char *, hlx_nvml_device_t *);
    int (*link_state)(hlx_nvml_device_t, unsigned int, int *);
    int (*link_remote)(hlx_nvml_device_t, unsigned int, hlx_nvml_pci_t *);
    int (*link_version)(hlx_nvml_device_t, unsigned int, unsigned int *);
} hlx_nvml_t;

/* Per-link bandwidth per direction, MB/s, from NVML's version number: NVLink 5 (version
 * 7 in the current enum) doubles the 25 GB/s that NVLink 2 to 4 links carry. */
static double hlx_nvml_link_mbps(unsigned version)
{
    if (version >= 7)
        return 50000;
    if (version == 1)
        return 20000;
    return 25000;
}

static int hlx_nvml_open(hlx_nvml_t *n, const char *lib)
{
    memset(n, 0, sizeof(*n));
    n->lib = dlopen(lib, HLX_DLOPEN_FLAGS);
    if (n->lib == NULL)
        return -1;
    *(void **)&n->init = dlsym(n->lib, "nvmlInit_v2");
    *(void **)&n->shutdown = dlsym(n->lib, "nvmlShutdown");
    *(void **)&n->by_busid = dlsym(n->lib, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&n->link_state = dlsym(n->lib, "nvmlDeviceGetNvLinkState");
    *(void **)&n->link_remote = dlsym(n->lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    *(void **)&n->link_version = dlsym(n->lib, "nvmlDeviceGetNvLinkVersion");
    if (!n->init || !n->shutdown || !n->by_busid || !n->link_state || !n->link_remote) {
        hlx_debug(HLX_SUB_TOPO, "%s lacks NVLink entry points", lib);
        dlclose(n->lib);
        return -1;
    }
    return 0;
}

hlx_status_t hlx_topo_nvml_links(hlx_topo_t *t, const char *lib)
{
    int ng = t->info.ngpus, maxsw = ng * HLX_NVML_MAX_LINKS + 1, nsw = 0, g, s, any = 0;
    char(*sw)[HLX_TOPO_BUSID_LEN + 8] = NULL;
    double *mbps = NULL;
    hlx_nvml_t n;
    hlx_status_t st = HLX_ERR_UNSUPPORTED;
    int total;

    if (hlx_nvml_open(&n, lib) < 0) {
        hlx_debug(HLX_SUB_TOPO, "NVML (%s) not available: %s", lib, dlerror());
        return HLX_ERR_UNSUPPORTED;
    }
    if (n.init() != HLX_NVML_SUCCESS) {
        hlx_debug(HLX_SUB_TOPO, "nvmlInit failed: no NVLink information");
        goto err_close;
    }
    total = ng + maxsw;
    sw = calloc((size_t)maxsw, sizeof(*sw));
    mbps = calloc((size_t)total * total, sizeof(*mbps));
    if (sw == NULL || mbps == NULL) {
        st = HLX_ERR_NOMEM;
        goto err_shutdown;
    }
    for (g = 0; g < ng; g++) {
        hlx_nvml_device_t dev;
        unsigned link;
        if (n.by_busid(t->gpus[g].busid, &dev) != HLX_NVML_SUCCESS) {
            hlx_debug(HLX_SUB_TOPO, "NVML does not know GPU %s", t->gpus[g].busid);
            continue;
        }
        for (link = 0; link < HLX_NVML_MAX_LINKS; link++) {
            hlx_nvml_pci_t pci;
            char rb[HLX_TOPO_BUSID_LEN + 8];
            unsigned ver = 0;
            int active = 0, peer = -1, k;
            if (n.link_state(dev, link, &active) != HLX_NVML_SUCCESS || !active)
                continue;
            if (n.link_version == NULL || n.link_version(dev, link, &ver) != HLX_NVML_SUCCESS)
                ver = 0;
            memset(&pci, 0, sizeof(pci));
            /* a link whose far end NVML cannot name goes to the (multi-node) fabric */
            if (n.link_remote(dev, link, &pci) != HLX_NVML_SUCCESS ||
                hlx_topo_busid_norm(pci.bus_id, rb, sizeof(rb)) < 0)
                snprintf(rb, sizeof(rb), "fabric");
            for (k = 0; k < ng; k++)
                if (!strcmp(t->gpus[k].busid, rb))
                    peer = k;
            if (peer < 0) {
                for (s = 0; s < nsw; s++)
                    if (!strcmp(sw[s], rb))
                        break;
                if (s == nsw && nsw < maxsw)
                    snprintf(sw[nsw++], sizeof(sw[0]), "%s", rb);
                peer = ng + (s < maxsw ? s : maxsw - 1);
            }
            mbps[(size_t)g * total + peer] += hlx_nvml_link_mbps(ver);
            if (peer >= ng)
                mbps[(size_t)peer * total + g] += hlx_nvml_link_mbps(ver);
            any = 1;
        }
    }
    if (any) {
        /* compact the graph to GPUs + the switches actually seen */
        int nn = ng + nsw, i, j;
        double *m2 = calloc((size_t)nn * nn + 1, sizeof(*m2));
        if (m2 == NULL) {
            st = HLX_ERR_NOMEM;
            goto err_shutdown;
        }
        for (i = 0; i < nn; i++)
            for (j = 0; j < nn; j++)
                m2[(size_t)i * nn + j] = mbps[(size_t)i * total + j];
        st = hlx_topo_nvlink_from_graph(t, nsw, m2);
        free(m2);
        hlx_info(HLX_SUB_TOPO, "NVML: %d GPUs in %d NVLink domains (%d switches)", ng,
                 t->info.ndomains, nsw);
    } else {
        hlx_debug(HLX_SUB_TOPO, "NVML: no active NVLink");
    }
err_shutdown:
    free(sw);
    free(mbps);
    n.shutdown();
err_close:
    dlclose(n.lib);
    return st;
}

/* ---- CUDA driver --------------------------------------------------------------------- */
hlx_status_t hlx_topo_cuda_match(hlx_topo_t *t, const char *lib)
{
    int (*cu_init)(unsigned int);
    int (*cu_count)(int *);
    int (*cu_get)(int *, int);
    int (*cu_busid)(char *, int, int);
    void *h = dlopen(lib, HLX_DLOPEN_FLAGS);
    int count = 0, i, g;

    if (h == NULL) {
        hlx_debug(HLX_SUB_TOPO, "CUDA driver (%s) not available: %s", lib, dlerror());
        return HLX_ERR_UNSUPPORTED;
    }
    *(void **)&cu_init = dlsym(h, "cuInit");
    *(void **)&cu_count = dlsym(h, "cuDeviceGetCount");
    *(void **)&cu_get = dlsym(h, "cuDeviceGet");
    *(void **)&cu_busid = dlsym(h, "cuDeviceGetPCIBusId");
    if (!cu_init || !cu_count || !cu_get || !cu_busid || cu_init(0) != 0 ||
        cu_count(&count) != 0) {
        hlx_debug(HLX_SUB_TOPO, "CUDA driver present but not usable: no CUDA ordinals");
        dlclose(h);
        return HLX_ERR_UNSUPPORTED;
    }
    for (i = 0; i < count; i++) {
        char raw[64], bus[HLX_TOPO_BUSID_LEN + 8];
        int dev;
        if (cu_get(&dev, i) != 0 || cu_busid(raw, (int)sizeof(raw), dev) != 0 ||
            hlx_topo_busid_norm(raw, bus, sizeof(bus)) < 0)
            continue;
        for (g = 0; g < t->info.ngpus; g++)
            if (!strcmp(t->gpus[g].busid, bus))
                t->gpus[g].cuda_device = i;
    }
    dlclose(h);
    return HLX_OK;
}

/* ---- libibverbs ---------------------------------------------------------------------- */
hlx_status_t hlx_topo_verbs_names(hlx_topo_t *t, const char *lib)
{
    void **(*get_list)(int *);
    const char *(*get_name)(void *);
    void (*free_list)(void **);
    void *h = dlopen(lib, HLX_DLOPEN_FLAGS);
    void **list;
    int n = 0, i, k;

    if (h == NULL)
        return HLX_ERR_UNSUPPORTED;
    *(void **)&get_list = dlsym(h, "ibv_get_device_list");
    *(void **)&get_name = dlsym(h, "ibv_get_device_name");
    *(void **)&free_list = dlsym(h, "ibv_free_device_list");
    if (!get_list || !get_name || !free_list || (list = get_list(&n)) == NULL) {
        dlclose(h);
        return HLX_ERR_UNSUPPORTED;
    }
    for (i = 0; i < n; i++) {
        const char *name = get_name(list[i]);
        char link[PATH_MAX], real[PATH_MAX], bus[HLX_TOPO_BUSID_LEN + 8];
        const char *base;
        if (name == NULL)
            continue;
        snprintf(link, sizeof(link), "/sys/class/infiniband/%s/device", name);
        if (realpath(link, real) == NULL)
            continue;
        base = strrchr(real, '/');
        if (base == NULL || hlx_topo_busid_norm(base + 1, bus, sizeof(bus)) < 0)
            continue;
        for (k = 0; k < t->info.nnics; k++) {
            if (strcmp(t->nics[k].busid, bus))
                continue;
            snprintf(t->nics[k].name, sizeof(t->nics[k].name), "%s", name);
            t->nics[k].rdma = 1;
        }
    }
    free_list(list);
    dlclose(h);
    return HLX_OK;
}
