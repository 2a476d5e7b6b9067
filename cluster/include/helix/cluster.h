/* Cluster description shared by the planner and the topology layer: nodes, GPUs per node,
 * NVLink domains (which nodes share one), NICs, link classes with bandwidth and latency,
 * and the GPU's memory and peak rates. Loaded from JSON (a file or a preset name); a
 * single live node discovered by hwloc is a cluster of one. See docs/cluster.md. */
#ifndef HELIX_CLUSTER_H
#define HELIX_CLUSTER_H

#include <helix/status.h>
#include <helix/types.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Link classes, fastest first. */
typedef enum hlx_link {
    HLX_LINK_SELF   = 0, /* same process */
    HLX_LINK_SHM    = 1, /* shared memory, same host */
    HLX_LINK_NVLINK = 2, /* same NVLink domain (may span nodes: NVL72) */
    HLX_LINK_PCIE   = 3, /* same host, through PCIe / host memory */
    HLX_LINK_RDMA   = 4, /* across nodes, InfiniBand / RoCE */
    HLX_LINK_TCP    = 5, /* across nodes, sockets */
    HLX_LINK_COUNT
} hlx_link_t;

const char *hlx_link_name(hlx_link_t link);             /* "self", "shm", "nvlink", ... */
int         hlx_link_parse(const char *s, hlx_link_t *link_p);

typedef struct hlx_link_params {
    double bw_gbps;    /* GB/s per direction per GPU (0 = class not present) */
    double latency_us; /* per message / per collective step */
} hlx_link_params_t;

#define HLX_CLUSTER_MAX_NODES 1024

typedef struct hlx_cluster_node {
    char name[64];
    int  gpus;
    int  nics;
    int  domain;       /* NVLink domain id, 0 .. ndomains-1 */
    int  rack;
    int  nvlink;       /* 1: this node's GPUs are joined by NVLink, else by PCIe */
    int  first_gpu;    /* global index of its first GPU (node-major numbering) */
} hlx_cluster_node_t;

typedef struct hlx_cluster {
    char   name[64];
    int    nnodes;
    hlx_cluster_node_t *nodes;          /* nnodes entries */
    int    ndomains;                    /* NVLink domains */
    hlx_link_params_t link[HLX_LINK_COUNT];
    struct {
        char   name[64];
        double hbm_gib;                 /* capacity per GPU */
        double hbm_gbps;                /* bandwidth per GPU, GB/s */
        double peak_tflops[HLX_DTYPE_COUNT]; /* dense, per dtype */
    } gpu;
    double nic_gbps;                    /* per NIC, GB/s */
    int    total_gpus;                  /* sum of nodes[].gpus */
    int    max_domain_gpus;             /* GPUs in the largest NVLink domain */
    char   description[256];            /* free text from the file (sources, caveats) */
} hlx_cluster_t;

/* Loads a cluster from a JSON file or a preset name (gb200-nvl72, hgx-h200, hgx-b200).
 * Errors are written to err as "file:line:column: key: reason". */
hlx_status_t hlx_cluster_load(const char *path_or_preset, hlx_cluster_t *c, char *err,
                              size_t errlen);
void         hlx_cluster_free(hlx_cluster_t *c);
int          hlx_cluster_total_gpus(const hlx_cluster_t *c);
/* Link class between two global GPU indices (node-major numbering): the same GPU ->
 * self; same node -> nvlink when that node has NVLink, else pcie; different nodes of one
 * NVLink domain -> nvlink; different domains -> rdma (tcp when the cluster has no RDMA
 * bandwidth). HLX_LINK_COUNT when an index is out of range. */
hlx_link_t   hlx_cluster_link(const hlx_cluster_t *c, int gpu_a, int gpu_b);
/* Node holding a global GPU index, or -1 when out of range. */
int          hlx_cluster_gpu_node(const hlx_cluster_t *c, int gpu);
/* GPUs in NVLink domain d (0 when d is out of range). */
int          hlx_cluster_domain_gpus(const hlx_cluster_t *c, int domain);

#ifdef __cplusplus
}
#endif
#endif
