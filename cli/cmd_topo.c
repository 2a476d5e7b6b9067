/* helix topo: shows the machine (GPUs, NICs, NVLink domains, link matrix) or a cluster, and
 * with a layout the placement of KVP x TPA ranks and the link class of every pair. */
#include "hlx_cmd.h"
#include "hlx_log.h"
#include "hlx_flags.h"

#include <helix/cluster.h>
#include <helix/jobplace.h>
#include <helix/topology.h>

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *topo_file;
    const char *cluster;
    const char *dump;
    int64_t     kvp, tpa, ep;
    int64_t     hidden, batch;
    int         json, pairs;
    int         dist; /* HLX_TOPO_DIST_* */
} hlx_topo_opts_t;

/* --distribution: Helix's own placement, or the launcher's rank order over the same
 * nodes (srun -m block / cyclic). */
enum { HLX_TOPO_DIST_HELIX, HLX_TOPO_DIST_BLOCK, HLX_TOPO_DIST_CYCLIC };
static const char *const hlx_topo_dist_names[] = { "helix", "block", "cyclic" };

#define HLX_TOPO_FLAG(_n, _t, _def, _lo, _hi, _f, _meta, _help) \
    { _n, _t, _def, _lo, _hi, 0, 0, NULL, offsetof(hlx_topo_opts_t, _f), _meta, _help }

/* The flags of `helix topo`: parsed, bounded and listed in --help from this table. */
static const hlx_flag_t hlx_topo_flag_list[] = {
    HLX_TOPO_FLAG("topo", HLX_FT_STRING, NULL, 0, 0, topo_file, "FILE",
                  "hwloc XML topology instead of this machine (default:\n"
                  "$HELIX_TOPO_FILE, else discover this machine with hwloc)"),
    HLX_TOPO_FLAG("cluster", HLX_FT_STRING, NULL, 0, 0, cluster, "C",
                  "cluster description (JSON file or preset: gb200-nvl72, hgx-h200,\n"
                  "hgx-b200); default: this machine as a cluster of one node"),
    HLX_TOPO_FLAG("kvp", HLX_FT_INT, NULL, 1, 16384, kvp, "K",
                  "KV-parallel ranks per attention group (default: no layout)"),
    HLX_TOPO_FLAG("tpa", HLX_FT_INT, NULL, 1, 16384, tpa, "T",
                  "tensor-parallel attention shards (1 when --kvp is given alone)"),
    HLX_TOPO_FLAG("ep", HLX_FT_INT, "1", 1, 16384, ep, "E",
                  "expert-parallel ways of the FFN grid TPF x EP; E divides N\n"
                  "and 1 keeps the FFN at TPF = N"),
    { "distribution", HLX_FT_CHOICE, "helix", 0, 0, 0, 0, "helix|block|cyclic",
      offsetof(hlx_topo_opts_t, dist), "D",
      "helix: the placement Helix chooses; block or cyclic: the\n"
      "ranks in a launcher's order over the same nodes, as srun -m\n"
      "block (mpirun --map-by slot) or -m cyclic (--map-by node)\n"
      "would start them, the ranks then placed where they landed" },
    HLX_TOPO_FLAG("json", HLX_FT_BOOL, NULL, 0, 0, json, NULL,
                  "machine-readable output: \"machine\", \"ranks\", \"pairs\", ..."),
    HLX_TOPO_FLAG("pairs", HLX_FT_BOOL, NULL, 0, 0, pairs, NULL,
                  "list every pair in the text output (default: only when <= 64)"),
    HLX_TOPO_FLAG("hidden", HLX_FT_INT, "16384", 1, 1 << 24, hidden, "H",
                  "hidden size for the cross-domain cost warning"),
    HLX_TOPO_FLAG("batch", HLX_FT_INT, "1", 1, 1 << 20, batch, "B",
                  "requests per step for that warning; each rank sends\n"
                  "B x H / N bf16 values to each KVP peer per layer"),
    HLX_TOPO_FLAG("dump", HLX_FT_STRING, NULL, 0, 0, dump, "FILE",
                  "also write the topology used as hwloc XML (like\n"
                  "HELIX_TOPO_DUMP_FILE)"),
};

const hlx_flag_table_t hlx_topo_flags = {
    "topo", hlx_topo_flag_list, sizeof(hlx_topo_flag_list) / sizeof(hlx_topo_flag_list[0]),
    NULL, 0,
};

static const char hlx_topo_usage_head[] =
    "usage: helix topo [--topo FILE] [--cluster FILE|PRESET] [--kvp K --tpa T [--ep E]]\n"
    "                  [--distribution D] [--json] [--pairs] [--hidden H] [--batch B]\n"
    "                  [--dump FILE]\n\n"
    "Shows the machine (GPUs, NICs, NVLink domains, GPU link matrix) and, with a layout,\n"
    "where each of the N = KVP x TPA ranks runs (node, GPU, NVLink domain, NUMA node,\n"
    "cores, NIC), its attention rank (kvp, tpa) beside its FFN rank (tpf, ep), and the\n"
    "link class of every pair that exchanges data in a layer. Integers take K, M, G and T\n"
    "suffixes (2^10 ... 2^40).\n\n";

static const char hlx_topo_usage_tail[] =
    "\nRank order: tpa_rank = r / KVP, kvp_rank = r % KVP (each KVP group is a block of KVP\n"
    "consecutive ranks); ep_rank = r / TPF, tpf_rank = r % TPF.\n\n"
    "examples:\n"
    "  helix topo                                  # this machine\n"
    "  helix topo --topo hgx.xml --kvp 4 --tpa 2   # 8 ranks on a dumped HGX node\n"
    "  helix topo --cluster gb200-nvl72 --kvp 64 --tpa 1 --json\n";

static int hlx_topo_parse(int argc, char **argv, hlx_topo_opts_t *o)
{
    int rc;

    memset(o, 0, sizeof(*o));
    rc = hlx_flags_parse(&hlx_topo_flags, argc, argv, o, NULL, hlx_topo_usage_head,
                         hlx_topo_usage_tail);
    if (rc >= 0)
        return rc;
    if (o->tpa > 0 && o->kvp == 0) {
        fprintf(stderr, "helix topo: --tpa needs --kvp\n");
        return 2;
    }
    if (o->kvp > 0 && o->tpa == 0)
        o->tpa = 1;
    if (o->dist != HLX_TOPO_DIST_HELIX && o->kvp == 0) {
        fprintf(stderr, "helix topo: --distribution needs a layout (--kvp)\n");
        return 2;
    }
    if (o->ep > 1 && o->kvp == 0) {
        fprintf(stderr, "helix topo: --ep needs --kvp\n");
        return 2;
    }
    if (o->kvp * o->tpa > 16384) {
        fprintf(stderr, "helix topo: --kvp x --tpa = %lld ranks, at most 16384\n",
                (long long)(o->kvp * o->tpa));
        return 2;
    }
    return -1;
}

static const char *hlx_topo_nvsrc(hlx_topo_nvlink_src_t s)
{
    switch (s) {
    case HLX_TOPO_NVLINK_HWLOC: return "hwloc matrix NVLinkBandwidth";
    case HLX_TOPO_NVLINK_NVML: return "NVML";
    default: return "none: each GPU is its own domain";
    }
}

/* ---- text output ----------------------------------------------------------------------- */
static void hlx_topo_print_machine(const hlx_topo_t *t)
{
    hlx_topo_info_t in;
    int i, j;

    hlx_topo_get_info(t, &in);
    printf("machine: %s (%s%s)\n", in.hostname, in.source,
           in.this_system ? ", this system" : "");
    printf("  %d packages, %d NUMA nodes, %d cores, %d PUs\n", in.npackages, in.nnuma,
           in.ncores, in.npus);
    printf("  GPUs: %d in %d NVLink domain%s (NVLink: %s)\n", in.ngpus, in.ndomains,
           in.ndomains == 1 ? "" : "s", hlx_topo_nvsrc(in.nvlink_src));
    if (in.ngpus > 0) {
        printf("    %-4s %-13s %-10s %-6s %-4s %-16s %-10s %-4s\n", "gpu", "busid", "pci id",
               "domain", "numa", "cpus", "nic", "cuda");
        for (i = 0; i < in.ngpus; i++) {
            const hlx_topo_gpu_t *g = hlx_topo_gpu(t, i);
            const hlx_topo_nic_t *n = hlx_topo_nic(t, g->nic);
            char pciid[16], cuda[16];
            snprintf(pciid, sizeof(pciid), "%04x:%04x", g->vendor_id, g->device_id);
            snprintf(cuda, sizeof(cuda), "%d", g->cuda_device);
            printf("    %-4d %-13s %-10s %-6d %-4d %-16s %-10s %-4s\n", i, g->busid, pciid,
                   g->domain, g->numa, g->cpuset, n ? n->name : "-",
                   g->cuda_device >= 0 ? cuda : "-");
        }
    }
    printf("  NICs: %d (%d RDMA)\n", in.nnics, in.nrdma_nics);
    if (in.nnics > 0) {
        printf("    %-4s %-10s %-14s %-13s %-5s %-4s %s\n", "nic", "name", "netdev", "busid",
               "rdma", "numa", "cpus");
        for (i = 0; i < in.nnics; i++) {
            const hlx_topo_nic_t *n = hlx_topo_nic(t, i);
            printf("    %-4d %-10s %-14s %-13s %-5s %-4d %s\n", i, n->name,
                   n->netdev[0] ? n->netdev : "-", n->busid, n->rdma ? "yes" : "no", n->numa,
                   n->cpuset);
        }
    }
    if (in.ngpus > 1) {
        printf("  GPU link matrix (class, NVLink GB/s per direction):\n       ");
        for (j = 0; j < in.ngpus; j++)
            printf(" %-10d", j);
        printf("\n");
        for (i = 0; i < in.ngpus; i++) {
            printf("    %-3d", i);
            for (j = 0; j < in.ngpus; j++) {
                char cell[32];
                hlx_link_t l = hlx_topo_gpu_link(t, i, j);
                if (l == HLX_LINK_NVLINK && hlx_topo_nvlink_gbps(t, i, j) > 0)
                    snprintf(cell, sizeof(cell), "nvlink%.0f", hlx_topo_nvlink_gbps(t, i, j));
                else
                    snprintf(cell, sizeof(cell), "%s", hlx_link_name(l));
                printf(" %-10s", cell);
            }
            printf("\n");
        }
    }
}

static void hlx_topo_print_cluster(const hlx_cluster_t *c)
{
    int l;

    printf("cluster: %s: %d nodes, %d GPUs, %d NVLink domains (largest %d GPUs)\n", c->name,
           c->nnodes, hlx_cluster_total_gpus(c), c->ndomains, c->max_domain_gpus);
    printf("  links:");
    for (l = 0; l < HLX_LINK_COUNT; l++)
        if (c->link[l].bw_gbps > 0)
            printf(" %s %g GB/s %g us;", hlx_link_name((hlx_link_t)l), c->link[l].bw_gbps,
                   c->link[l].latency_us);
    printf("\n");
}

static void hlx_topo_print_placement(const hlx_placement_t *p, const hlx_cluster_t *c,
                                     int all_pairs)
{
    int r, g, k, l, i;
    int count[HLX_PAIR_KIND_COUNT][HLX_LINK_COUNT];

    printf("placement: KVP %d x TPA %d = %d ranks; FFN TPF %d x EP %d%s\n", p->kvp, p->tpa,
           p->nranks, p->tpf, p->ep, p->cpu_only ? " (CPU-only: ranks get cores)" : "");
    printf("  %-5s %-14s %-4s %-4s %-4s %-16s %-10s| %-4s %-4s | %-4s %-4s\n", "rank", "node",
           "gpu", "dom", "numa", "cpus", "nic", "kvp", "tpa", "tpf", "ep");
    for (r = 0; r < p->nranks; r++) {
        const hlx_rank_place_t *rp = &p->ranks[r];
        char gpu[16], dom[16], numa[16];
        snprintf(gpu, sizeof(gpu), "%d", rp->gpu);
        snprintf(dom, sizeof(dom), "%d", rp->domain);
        snprintf(numa, sizeof(numa), "%d", rp->numa);
        printf("  %-5d %-14s %-4s %-4s %-4s %-16s %-10s| %-4d %-4d | %-4d %-4d\n", r,
               c->nodes[rp->node].name, rp->gpu >= 0 ? gpu : "-",
               rp->domain >= 0 ? dom : "-", rp->numa >= 0 ? numa : "-",
               rp->cpuset[0] ? rp->cpuset : "-", rp->nic >= 0 ? rp->nic_name : "-",
               rp->kvp_rank, rp->tpa_rank, rp->tpf_rank, rp->ep_rank);
    }
    printf("attention groups (the KVP all-to-all group of each TPA shard):\n");
    for (g = 0; g < p->tpa; g++) {
        int first = g * p->kvp, last = first + p->kvp - 1, nd = 0, prev = -2;
        printf("  tpa %d: ranks %d-%d, %s", g, first, last,
               p->cpu_only ? "hosts" : "NVLink domains");
        for (r = first; r <= last; r++) {
            int d = p->cpu_only ? p->ranks[r].node : p->ranks[r].domain;
            if (d != prev) {
                printf("%s%d", nd++ ? "," : " ", d);
                prev = d;
            }
        }
        printf("\n");
    }
    memset(count, 0, sizeof(count));
    for (i = 0; i < p->npairs; i++)
        count[p->pairs[i].kind][p->pairs[i].link]++;
    printf("pairs by link class:\n");
    for (k = 0; k < HLX_PAIR_KIND_COUNT; k++) {
        int tot = 0;
        for (l = 0; l < HLX_LINK_COUNT; l++)
            tot += count[k][l];
        if (tot == 0)
            continue;
        printf("  %-14s %5d:", hlx_pair_kind_name((hlx_pair_kind_t)k), tot);
        for (l = 0; l < HLX_LINK_COUNT; l++)
            if (count[k][l])
                printf(" %s %d", hlx_link_name((hlx_link_t)l), count[k][l]);
        printf("\n");
    }
    if (all_pairs || p->npairs <= 64) {
        printf("pairs:\n  %-14s %-5s %-5s %s\n", "kind", "src", "dst", "link");
        for (i = 0; i < p->npairs; i++)
            printf("  %-14s %-5d %-5d %s\n", hlx_pair_kind_name(p->pairs[i].kind),
                   p->pairs[i].src, p->pairs[i].dst, hlx_link_name(p->pairs[i].link));
    }
}

/* ---- a launcher's rank order ----------------------------------------------------------- */

/* Replaces *p (Helix's placement) by the ranks of a launcher's order over the same nodes
 * with the same ranks per node (hlx_place_launcher_order), each placed where it lands. */
static hlx_status_t hlx_topo_redistribute(const hlx_cluster_t *c, const hlx_topo_opts_t *o,
                                          const hlx_topo_t *t, hlx_placement_t **p, char *err,
                                          size_t errlen)
{
    int n = (*p)->nranks, *cnt = calloc((size_t)c->nnodes, sizeof(int));
    int *node_of = malloc(sizeof(int) * (size_t)n), r;
    hlx_placement_t *np = NULL;
    hlx_status_t st = HLX_ERR_NOMEM;

    if (cnt != NULL && node_of != NULL) {
        for (r = 0; r < n; r++)
            cnt[(*p)->ranks[r].node]++;
        hlx_place_launcher_order(cnt, c->nnodes, o->dist == HLX_TOPO_DIST_CYCLIC, node_of);
        st = hlx_place_on_nodes(c, (int)o->kvp, (int)o->tpa, (int)o->ep, t, node_of, &np, err,
                                errlen);
    }
    if (st == HLX_OK) {
        hlx_placement_free(*p);
        *p = np;
    }
    free(cnt);
    free(node_of);
    return st;
}

/* ---- JSON output ----------------------------------------------------------------------- */
static json_t *hlx_topo_json_machine(const hlx_topo_t *t)
{
    hlx_topo_info_t in;
    json_t *m, *gpus, *nics, *links;
    int i, j;

    hlx_topo_get_info(t, &in);
    gpus = json_array();
    for (i = 0; i < in.ngpus; i++) {
        const hlx_topo_gpu_t *g = hlx_topo_gpu(t, i);
        char pciid[16];
        snprintf(pciid, sizeof(pciid), "%04x:%04x", g->vendor_id, g->device_id);
        json_array_append_new(gpus, json_pack("{s:i,s:s,s:s,s:i,s:i,s:i,s:s,s:i,s:i,s:f}",
            "gpu", i, "busid", g->busid, "pci_id", pciid, "domain", g->domain, "package",
            g->package, "numa", g->numa, "cpuset", g->cpuset, "nic", g->nic, "cuda_device",
            g->cuda_device, "pcie_gbps", g->pcie_gbps));
    }
    nics = json_array();
    for (i = 0; i < in.nnics; i++) {
        const hlx_topo_nic_t *n = hlx_topo_nic(t, i);
        json_array_append_new(nics, json_pack("{s:i,s:s,s:s,s:s,s:b,s:i,s:i,s:s}",
            "nic", i, "name", n->name, "netdev", n->netdev, "busid", n->busid, "rdma", n->rdma,
            "package", n->package, "numa", n->numa, "cpuset", n->cpuset));
    }
    links = json_array();
    for (i = 0; i < in.ngpus; i++) {
        json_t *row = json_array();
        for (j = 0; j < in.ngpus; j++)
            json_array_append_new(row, json_pack("{s:s,s:f}", "link",
                hlx_link_name(hlx_topo_gpu_link(t, i, j)), "nvlink_gbps",
                hlx_topo_nvlink_gbps(t, i, j)));
        json_array_append_new(links, row);
    }
    m = json_pack("{s:s,s:s,s:b,s:i,s:i,s:i,s:i,s:i,s:s,s:o,s:o,s:o}", "hostname",
                  in.hostname, "source", in.source, "this_system", in.this_system, "packages",
                  in.npackages, "numa_nodes", in.nnuma, "cores", in.ncores, "pus", in.npus,
                  "nvlink_domains", in.ndomains, "nvlink_source", hlx_topo_nvsrc(in.nvlink_src),
                  "gpus", gpus, "nics", nics, "gpu_links", links);
    return m;
}

int hlx_cmd_topo(int argc, char **argv)
{
    hlx_topo_opts_t o;
    hlx_topo_t *t = NULL;
    hlx_cluster_t cl, *c = NULL;
    hlx_placement_t *p = NULL;
    char err[1024] = "", warn[1024] = "";
    hlx_status_t st;
    int rc, have_cluster = 0;
    json_t *root = NULL;

    rc = hlx_topo_parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    hlx_log_init();

    st = hlx_topo_load(o.topo_file, &t, err, sizeof(err));
    if (st != HLX_OK) {
        /* a broken file is always fatal; a machine hwloc cannot read is not when a cluster
         * file says what to place on */
        if (o.topo_file != NULL || getenv("HELIX_TOPO_FILE") != NULL || o.cluster == NULL) {
            fprintf(stderr, "helix topo: %s\n", err);
            return hlx_status_exit_code(st);
        }
        fprintf(stderr, "helix topo: warning: %s; using the cluster file alone\n", err);
        t = NULL;
    }
    if (o.dump != NULL && t != NULL) {
        st = hlx_topo_dump(t, o.dump, err, sizeof(err));
        if (st != HLX_OK) {
            fprintf(stderr, "helix topo: %s\n", err);
            rc = hlx_status_exit_code(st);
            goto out;
        }
    }
    if (o.cluster != NULL) {
        st = hlx_cluster_load(o.cluster, &cl, err, sizeof(err));
        if (st != HLX_OK) {
            fprintf(stderr, "helix topo: %s\n", err);
            rc = hlx_status_exit_code(st);
            goto out;
        }
        have_cluster = 1;
    } else {
        st = hlx_topo_to_cluster(t, &cl);
        if (st != HLX_OK) {
            rc = 1;
            goto out;
        }
        have_cluster = 1;
    }
    c = &cl;

    if (o.kvp > 0) {
        double pair_bytes = 2.0 * (double)o.batch * (double)o.hidden / ((double)o.kvp * o.tpa);
        st = hlx_place(c, (int)o.kvp, (int)o.tpa, (int)o.ep, t, &p, err, sizeof(err));
        if (st == HLX_OK && o.dist != HLX_TOPO_DIST_HELIX)
            st = hlx_topo_redistribute(c, &o, t, &p, err, sizeof(err));
        if (st != HLX_OK) {
            fprintf(stderr, "helix topo: %s\n", err);
            rc = hlx_status_exit_code(st);
            goto out;
        }
        hlx_place_warning(p, c, pair_bytes, warn, sizeof(warn));
    }

    if (o.json) {
        root = json_object();
        if (t != NULL)
            json_object_set_new(root, "machine", hlx_topo_json_machine(t));
        json_object_set_new(root, "cluster", json_pack("{s:s,s:i,s:i,s:i,s:i}", "name",
                            c->name, "nodes", c->nnodes, "gpus", hlx_cluster_total_gpus(c),
                            "nvlink_domains", c->ndomains, "max_domain_gpus",
                            c->max_domain_gpus));
        if (p != NULL) {
            hlx_place_json_add(root, p, c);
            json_object_set_new(root, "distribution", json_string(hlx_topo_dist_names[o.dist]));
        }
        if (warn[0]) {
            json_t *w = json_array();
            json_array_append_new(w, json_string(warn));
            json_object_set_new(root, "warnings", w);
        }
        json_dumpf(root, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        printf("\n");
    } else {
        if (t != NULL)
            hlx_topo_print_machine(t);
        if (o.cluster != NULL)
            hlx_topo_print_cluster(c);
        if (p != NULL && o.dist != HLX_TOPO_DIST_HELIX)
            printf("distribution: %s, the ranks in a launcher's order (%s) over the nodes "
                   "and ranks per node of Helix's placement\n", hlx_topo_dist_names[o.dist],
                   o.dist == HLX_TOPO_DIST_BLOCK ? "srun -m block, mpirun --map-by slot"
                                                 : "srun -m cyclic, mpirun --map-by node");
        if (p != NULL)
            hlx_topo_print_placement(p, c, o.pairs);
        if (warn[0])
            printf("%s", warn);
    }
    if (warn[0] && o.json)
        fprintf(stderr, "%s", warn);
    rc = 0;
out:
    json_decref(root);
    hlx_placement_free(p);
    if (have_cluster)
        hlx_cluster_free(&cl);
    hlx_topo_free(t);
    return rc;
}
