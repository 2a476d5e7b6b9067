/* Machine topology (hwloc: this machine or an XML file) and the placement of Helix ranks
 * (KVP x TPA attention, TPF x EP FFN) onto nodes, GPUs, NVLink domains, cores and NICs.
 * See docs/topology.md. */
#ifndef HELIX_TOPOLOGY_H
#define HELIX_TOPOLOGY_H

#include <helix/cluster.h>
#include <helix/status.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HLX_TOPO_NAME_LEN   64
#define HLX_TOPO_BUSID_LEN  16   /* "0000:18:00.0" */
#define HLX_TOPO_CPUSET_LEN 256  /* hwloc list format: "0-3,8-11" */

/* A loaded topology: an hwloc topology plus the GPUs, NICs and NVLink domains found in it. */
typedef struct hlx_topo hlx_topo_t;

/* Where the NVLink connectivity came from. */
typedef enum hlx_topo_nvlink_src {
    HLX_TOPO_NVLINK_NONE = 0, /* no information: each GPU is its own domain */
    HLX_TOPO_NVLINK_HWLOC,    /* the hwloc distances matrix "NVLinkBandwidth" */
    HLX_TOPO_NVLINK_NVML      /* NVML at run time (then added to the hwloc topology) */
} hlx_topo_nvlink_src_t;

typedef struct hlx_topo_gpu {
    int      index;                       /* local index: GPUs sorted by PCI bus id */
    char     busid[HLX_TOPO_BUSID_LEN];
    unsigned vendor_id, device_id, class_id;
    int      domain;                      /* local NVLink domain, 0 .. ndomains-1 */
    int      package;                     /* package os index, -1 unknown */
    int      numa;                        /* nearest NUMA node os index, -1 unknown */
    int      nic;                         /* closest NIC (index into the NICs), -1 none */
    int      nic_hops;                    /* tree hops from the GPU up to that NIC's common ancestor */
    int      cuda_device;                 /* CUDA ordinal matched by bus id, -1 without CUDA */
    double   pcie_gbps;                   /* PCIe link speed reported by hwloc, 0 unknown */
    char     cpuset[HLX_TOPO_CPUSET_LEN]; /* CPUs local to the GPU (its non-I/O ancestor) */
} hlx_topo_gpu_t;

typedef struct hlx_topo_nic {
    int      index;                       /* RDMA NICs first, then by PCI bus id */
    char     busid[HLX_TOPO_BUSID_LEN];
    unsigned vendor_id, device_id, class_id;
    char     name[HLX_TOPO_NAME_LEN];     /* verbs device ("mlx5_0") when present, else netdev */
    char     netdev[HLX_TOPO_NAME_LEN];   /* kernel network interface, "" when none */
    int      rdma;                        /* 1: has an OpenFabrics (verbs) device: IB or RoCE */
    int      package, numa;
    double   pcie_gbps;
    char     cpuset[HLX_TOPO_CPUSET_LEN];
} hlx_topo_nic_t;

typedef struct hlx_topo_info {
    char source[512];                     /* the XML file, or "live" */
    char hostname[HLX_TOPO_NAME_LEN];
    int  this_system;                     /* 1: describes the machine we run on (binding allowed) */
    int  npackages, nnuma, ncores, npus;
    int  ngpus, nnics, nrdma_nics, ndomains;
    hlx_topo_nvlink_src_t nvlink_src;
} hlx_topo_info_t;

/* Loads a topology. path: an hwloc XML file; NULL means HELIX_TOPO_FILE when set, else
 * discover this machine (I/O objects kept). The file is checked before and after hwloc
 * reads it (hlx_topo_validate); a bad one is refused with HLX_ERR_PARSE and
 * "file:line: object: reason" in err. When HELIX_TOPO_DUMP_FILE is set the topology used
 * is written there as hwloc XML (NVML-found NVLink included), so a run can be replayed.
 * For this system it may open NVML, the CUDA driver (cuInit) and libibverbs at run time. */
hlx_status_t hlx_topo_load(const char *path, hlx_topo_t **topo_p, char *err, size_t errlen);
void         hlx_topo_free(hlx_topo_t *topo);
/* Writes the topology as hwloc XML (what HELIX_TOPO_DUMP_FILE does), whole or not at all
 * (hlx_out): a failed write leaves an existing file as it was. */
hlx_status_t hlx_topo_dump(const hlx_topo_t *topo, const char *path, char *err, size_t errlen);
/* Checks a loaded topology: non-empty cpusets, every PU under the machine's cpuset, each
 * GPU and NIC under a non-I/O object with CPUs, distance matrices of nbobjs^2 sane values
 * over objects that exist. hlx_topo_load already calls it. */
hlx_status_t hlx_topo_validate(const hlx_topo_t *topo, char *err, size_t errlen);

void                  hlx_topo_get_info(const hlx_topo_t *topo, hlx_topo_info_t *info_p);
const hlx_topo_gpu_t *hlx_topo_gpu(const hlx_topo_t *topo, int index); /* NULL out of range */
const hlx_topo_nic_t *hlx_topo_nic(const hlx_topo_t *topo, int index);
/* Link class between two local GPUs: self, nvlink (same domain) or pcie. */
hlx_link_t            hlx_topo_gpu_link(const hlx_topo_t *topo, int gpu_a, int gpu_b);
/* NVLink bandwidth between two local GPUs in GB/s per direction (0: not connected). */
double                hlx_topo_nvlink_gbps(const hlx_topo_t *topo, int gpu_a, int gpu_b);
/* The machine as a cluster of one node (free with hlx_cluster_free). Link parameters are
 * rough defaults (NVLink from the matrix, PCIe from hwloc), documented in docs/topology.md. */
hlx_status_t          hlx_topo_to_cluster(const hlx_topo_t *topo, hlx_cluster_t *cluster_p);

/* ---- Placement ------------------------------------------------------------------------
 * RANK ORDER CONTRACT. N = KVP x TPA ranks.
 *   attention: tpa_rank = r / KVP, kvp_rank = r % KVP: the KVP group of TPA shard t (its
 *              all-to-all group) is the block of ranks [t*KVP, (t+1)*KVP).
 *   FFN:       a TPF x EP grid with N = TPF x EP (EP = 1: TPF = N, tpf_rank = r).
 *              ep_rank = r / TPF, tpf_rank = r % TPF: each FFN tensor-parallel group is a
 *              block of TPF consecutive ranks, each expert-parallel group a stride of TPF.
 * Ranks are mapped to GPUs so that each KVP group lies on consecutive GPUs of one NVLink
 * domain whenever it fits; the groups that cannot are spread over as few domains as
 * possible, largest free share first, which minimizes cross-domain all-to-all bytes. */

typedef enum hlx_pair_kind {
    HLX_PAIR_A2A = 0,       /* attention all-to-all inside a KVP group */
    HLX_PAIR_ALLREDUCE,     /* W_o (and FFN when EP = 1) all-reduce over N: ring neighbours */
    HLX_PAIR_FFN_ALLREDUCE, /* FFN all-reduce inside a TPF group (EP > 1): ring neighbours */
    HLX_PAIR_EP_A2A,        /* MoE dispatch/combine all-to-all inside an EP group (EP > 1) */
    HLX_PAIR_KIND_COUNT
} hlx_pair_kind_t;

typedef struct hlx_rank_place {
    int  rank;
    int  node;                            /* index into the cluster's nodes */
    int  gpu;                             /* local GPU on that node, -1 CPU-only */
    int  gpu_global;                      /* node-major global GPU index, -1 CPU-only */
    int  cuda_device;                     /* CUDA ordinal when known, else -1 */
    int  domain;                          /* NVLink domain id in this placement, -1 CPU-only */
    int  numa;                            /* NUMA node os index, -1 unknown */
    int  nic;                             /* local NIC index, -1 none */
    char nic_name[HLX_TOPO_NAME_LEN];     /* "mlx5_0", or "nic<i>" without a topology */
    char cpuset[HLX_TOPO_CPUSET_LEN];     /* cores for this rank ("" unknown) */
    int  kvp_rank, tpa_rank;              /* attention grid */
    int  tpf_rank, ep_rank;               /* FFN grid */
} hlx_rank_place_t;

typedef struct hlx_pair {
    int             src, dst;
    hlx_pair_kind_t kind;
    hlx_link_t      link;
} hlx_pair_t;

typedef struct hlx_placement {
    int               nranks, kvp, tpa, tpf, ep;
    int               cpu_only;           /* no GPUs: ranks get cores, shm on one host */
    int               ndomains;           /* NVLink domains (CPU-only: hosts) in use */
    hlx_rank_place_t *ranks;              /* nranks entries, index = rank */
    int               npairs;
    hlx_pair_t       *pairs;              /* each exchanging pair once per kind */
    int               split_groups;       /* KVP groups spread over more than one domain */
    int               a2a_pairs;          /* attention all-to-all pairs */
    int               a2a_cross_pairs;    /* ... of which cross NVLink domains */
    hlx_link_t        internode;          /* link class between nodes: rdma or tcp */
} hlx_placement_t;

/* Places KVP x TPA ranks (FFN on TPF x EP, ep >= 1 dividing N) on a cluster. cluster may be
 * NULL: the topology's machine is then a cluster of one. topo may be NULL: GPUs, NICs and
 * domains then come from the cluster alone and cpusets are unknown. When both are given, the
 * topology details (cpusets, NUMA, nearest NIC, domains inside a node) apply to every
 * cluster node with as many GPUs as the topology (nodes are assumed alike). With no GPU at
 * all the placement is CPU-only: ranks split the cores, NUMA node by NUMA node. N is at most
 * 16384 and the pairs listed at most 2^24 (HLX_ERR_NOSPACE beyond). */
hlx_status_t hlx_place(const hlx_cluster_t *cluster, int kvp, int tpa, int ep,
                       const hlx_topo_t *topo, hlx_placement_t **placement_p, char *err,
                       size_t errlen);
void         hlx_placement_free(hlx_placement_t *placement);
/* Link class between ranks a and b (HLX_LINK_COUNT when out of range). */
hlx_link_t   hlx_place_link(const hlx_placement_t *placement, int rank_a, int rank_b);
const char  *hlx_pair_kind_name(hlx_pair_kind_t kind); /* "a2a", "allreduce", ... */

/* Estimated cost of one attention all-to-all when each rank sends pair_bytes to each KVP
 * peer, from the cluster's link model: per rank, traffic on each link class runs in
 * parallel with the others and shares that class's bandwidth. */
typedef struct hlx_place_cost {
    double     a2a_us;       /* the slowest rank, on the placed links */
    double     a2a_us_ideal; /* the same with every pair on NVLink */
    double     cross_bytes;  /* bytes per all-to-all crossing domains, all ranks together */
    hlx_link_t worst_link;   /* slowest link class any a2a pair uses */
} hlx_place_cost_t;
hlx_status_t hlx_place_a2a_cost(const hlx_placement_t *placement, const hlx_cluster_t *cluster,
                                double pair_bytes, hlx_place_cost_t *cost_p);
/* Writes a warning (one or more lines) when the layout forces cross-domain all-to-all
 * traffic, with its cost at pair_bytes; returns 0 and writes "" when there is none. */
int          hlx_place_warning(const hlx_placement_t *placement, const hlx_cluster_t *cluster,
                               double pair_bytes, char *buf, size_t len);

/* Called by each rank at startup: binds the calling process to the cpuset of `rank` when
 * the topology describes this system (live, or a file with HELIX_TOPO_THISSYSTEM=1);
 * otherwise, or when the cpuset is unknown, returns HLX_OK without binding. */
hlx_status_t hlx_topo_bind_self(hlx_topo_t *topo, const hlx_placement_t *placement, int rank);

/* Whether this process was bound before it started (srun --cpu-bind, mpirun --bind-to,
 * numactl, taskset): the number of CPUs of its binding when the topology describes this
 * system and that binding is a strict part of the CPUs it may use; the binding then goes
 * to buf as a list ("1", "0-3,8"). 0 when unbound (or unknown), buf "". */
int hlx_topo_inherited_binding(hlx_topo_t *topo, char *buf, size_t len);

/* Settings of the topology layer (HELIX_TOPO_*), for `helix info`. */
struct hlx_param_table;
const struct hlx_param_table *hlx_topo_param_table(void);

#ifdef __cplusplus
}
#endif
#endif
