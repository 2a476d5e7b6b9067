/* Job-wide placement: every rank's host summary (exchanged at start-up) turned into one
 * cluster and one placement, the same on every rank, with the launcher's hosts kept.
 * See docs/topology.md ("Placement from the whole job") and docs/cluster.md. */
#ifndef HELIX_JOBPLACE_H
#define HELIX_JOBPLACE_H

#include <helix/cluster.h>
#include <helix/status.h>
#include <helix/topology.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HLX_HOST_SUMMARY_MAGIC 0x484c5848u /* "HXLH" */

#define HLX_SUMMARY_CPU_WORDS 16 /* CPU numbers 0..1023 */

/* What one rank tells the others about its host (fixed size: exchanged as bytes). */
typedef struct hlx_host_summary {
    uint32_t magic;                       /* HLX_HOST_SUMMARY_MAGIC */
    int32_t  local_rank;                  /* on its node, from the launcher */
    int32_t  ngpus, ndomains;             /* GPUs and NVLink domains on the host */
    int32_t  nnuma, ncores, npus;
    int32_t  nnics, nrdma;
    char     node[HLX_TOPO_NAME_LEN];     /* node name from the launcher (PMIx) */
    char     hostname[HLX_TOPO_NAME_LEN]; /* the host's own name (gethostname) */
    char     nic[HLX_TOPO_NAME_LEN];      /* first NIC (RDMA first), "" none */
    char     machine[40];                 /* the running kernel's boot id: hosts that are
                                           * network namespaces or containers of one
                                           * machine share it; "" unknown */
    uint64_t cpus[HLX_SUMMARY_CPU_WORDS]; /* CPUs this rank may run on when it filled the
                                           * summary (before any binding); all 0: unknown
                                           * (a kernel with more than 1024 possible CPUs) */
    int32_t  threads;                     /* cores it will use (the caller sets it; 0: 1) */
} hlx_host_summary_t;

/* Fills the summary of this host from its topology; node is the launcher's node name. */
void hlx_host_summary(const hlx_topo_t *topo, const char *node, int local_rank,
                      hlx_host_summary_t *summary_p);

/* How many threads the job asks of its busiest CPU: on each machine (hosts that are one
 * machine count together: ranks by their boot id, a rank without one by its node name;
 * n log n in the ranks) every rank's threads spread
 * evenly over the CPUs it may run on, summed per CPU. Above 1, ranks take turns on cores.
 * ranks_p, threads_p and cpus_p (any may be NULL) get that machine's ranks, their threads
 * in all and its distinct CPUs. 0 when no rank said its CPUs, or on allocation failure. */
double hlx_job_cpu_load(const hlx_host_summary_t *all, int nranks, int *ranks_p,
                        int *threads_p, int *cpus_p);

/* Whether two hosts of the job (different node names) may be one machine: the same boot
 * id, or one not known. Their placements each split the machine's cores as if alone, so
 * binding to them would put ranks of both on the same cores. 0 for a single host. */
int hlx_hosts_share_machine(const hlx_host_summary_t *all, int nranks);

/* The placement of a whole job. */
typedef struct hlx_job_place {
    hlx_placement_t *place;      /* ranks on the hosts where the launcher put them */
    hlx_cluster_t    cluster;    /* the job's hosts (from the cluster file or the summaries) */
    int              nhosts;     /* hosts that run ranks */
    int             *node_of_rank;
    uint64_t         hash;       /* of the job-wide part (nodes, GPUs, domains, grids, links) */
    int              worse;      /* 1: a block layout over the same hosts would cross less */
    char             warning[1024]; /* "" when the layout is as good as it can be */
} hlx_job_place_t;

/* Places KVP x TPA ranks (FFN on EP) from every rank's summary, in rank order. cluster
 * (may be NULL) names the hosts and their racks and link figures: every host must appear
 * in it by name; without it the hosts come from the summaries (GPUs, NICs; one rack) and
 * the link figures from the local topology's defaults. pair_bytes: bytes each rank sends
 * to each KVP peer (for the cost in the warning). Deterministic: every rank computes the
 * same placement from the same summaries. */
hlx_status_t hlx_place_job(const hlx_host_summary_t *all, int nranks, const hlx_cluster_t *cluster,
                           int kvp, int tpa, int ep, const hlx_topo_t *topo, double pair_bytes,
                           hlx_job_place_t *job_p, char *err, size_t errlen);
void         hlx_job_place_free(hlx_job_place_t *job);

/* The node of each rank in a launcher's order over given nodes, counts[k] ranks on node k
 * (node_of_rank gets the sum of counts): block, consecutive ranks on one node (srun -m
 * block, mpirun --map-by slot); cyclic, rank r on the next node round robin that still has
 * room (srun -m cyclic, --map-by node). Nodes with a count of 0 are left out. */
void hlx_place_launcher_order(const int *counts, int nnodes, int cyclic, int *node_of_rank);

/* Places ranks that are already on given nodes: node_of_rank[r] indexes cluster->nodes;
 * the k-th rank of a node takes its k-th GPU (or a share of its cores when CPU-only). */
hlx_status_t hlx_place_on_nodes(const hlx_cluster_t *cluster, int kvp, int tpa, int ep,
                                const hlx_topo_t *topo, const int *node_of_rank,
                                hlx_placement_t **placement_p, char *err, size_t errlen);

/* The link class from rank to every rank (links[nranks]), what the transport is given at
 * world creation; returns the number written (0 when rank is out of range). */
int hlx_place_links(const hlx_placement_t *placement, int rank, hlx_link_t *links);

/* Adds the placement to a JSON object (jansson's json_t): layout, ranks, attention_groups,
 * pairs and summary, the form `helix topo --json` prints and HELIX_PLACEMENT_DUMP writes.
 * Returns root. */
struct json_t *hlx_place_json_add(struct json_t *root, const hlx_placement_t *placement,
                                  const hlx_cluster_t *cluster);

/* The UCX network device for rank's NIC ("mlx5_0:1" for an RDMA NIC, else its netdev when
 * that interface exists here); returns 0 and writes "" when there is none. */
int hlx_place_net_device(const hlx_placement_t *placement, const hlx_topo_t *topo, int rank,
                         char *buf, size_t len);

/* Writes the placement as JSON (ranks and pairs, the fields of `helix topo --json`). */
hlx_status_t hlx_place_write_json(const hlx_placement_t *placement, const hlx_cluster_t *cluster,
                                  const char *path, char *err, size_t errlen);

/* Settings (HELIX_CLUSTER, HELIX_PLACEMENT_DUMP, HELIX_NET_DEVICE, HELIX_GPU_SHARE), for
 * `helix info`. */
typedef struct hlx_jobplace_settings {
    char cluster[256];    /* cluster file or preset naming the job's hosts, "" none */
    char dump[256];       /* JSON path prefix, "" none */
    char net_device[256]; /* "auto" or "off" */
    int  gpu_share;       /* 1: a node's ranks may outnumber its GPUs and share them */
} hlx_jobplace_settings_t;
struct hlx_param_table;
const struct hlx_param_table *hlx_jobplace_param_table(void);
/* Loads the settings; HLX_ERR_INVALID for a bad HELIX_NET_DEVICE. */
hlx_status_t hlx_jobplace_settings(hlx_jobplace_settings_t *settings_p);

#ifdef __cplusplus
}
#endif
#endif
