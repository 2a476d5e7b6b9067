/* Placement from the whole job: the hosts every rank reported (node name, GPUs, NICs) made
 * into one cluster, the ranks placed where the launcher started them, a warning when a block
 * layout over the same hosts would cross fewer hosts or racks, and the per-peer link array. */
#define _GNU_SOURCE
#include "hlx_file.h"
#include "hlx_hash.h"
#include "hlx_json.h"
#include "topo_int.h"

#include <helix/jobplace.h>

#include "hlx_param.h"

#include <errno.h>
#include <jansson.h>
#include <sched.h>
#include <stddef.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const hlx_param_t hlx_jobplace_params[] = {
    { "CLUSTER", HLX_PT_STRING, "", 0, 0, offsetof(hlx_jobplace_settings_t, cluster),
      "cluster file or preset naming the job's hosts (racks, link figures); empty: the hosts "
      "as the launcher reports them", NULL },
    { "PLACEMENT_DUMP", HLX_PT_STRING, "", 0, 0, offsetof(hlx_jobplace_settings_t, dump),
      "each rank writes the job-wide placement as JSON to this path + \".<rank>\"", NULL },
    { "NET_DEVICE", HLX_PT_STRING, "auto", 0, 0, offsetof(hlx_jobplace_settings_t, net_device),
      "auto: set UCX_NET_DEVICES to the rank's placed NIC when it is unset; off: leave UCX "
      "to choose", NULL },
    { "GPU_SHARE", HLX_PT_INT, "0", 0, 1, offsetof(hlx_jobplace_settings_t, gpu_share),
      "1: a node may run more ranks than it has GPUs, the ranks sharing them (placed as on a "
      "CPU-only node, each rank on GPU local rank mod count: tests on one GPU, MPS); 0: one "
      "GPU per rank", NULL },
};

static const hlx_param_table_t hlx_jobplace_table = {
    "placement", hlx_jobplace_params, sizeof(hlx_jobplace_params) / sizeof(hlx_jobplace_params[0]),
    sizeof(hlx_jobplace_settings_t), NULL,
};

const struct hlx_param_table *hlx_jobplace_param_table(void)
{
    return &hlx_jobplace_table;
}

hlx_status_t hlx_jobplace_settings(hlx_jobplace_settings_t *s)
{
    hlx_status_t st = hlx_param_load(&hlx_jobplace_table, s, NULL);
    if (st == HLX_OK && strcmp(s->net_device, "auto") && strcmp(s->net_device, "off"))
        st = HLX_ERR_INVALID;
    return st;
}

void hlx_host_summary(const hlx_topo_t *t, const char *node, int local_rank,
                      hlx_host_summary_t *s)
{
    memset(s, 0, sizeof(*s));
    s->magic = HLX_HOST_SUMMARY_MAGIC;
    s->local_rank = local_rank;
    if (t != NULL) {
        s->ngpus = t->info.ngpus;
        s->ndomains = t->info.ndomains;
        s->nnuma = t->info.nnuma;
        s->ncores = t->info.ncores;
        s->npus = t->info.npus;
        s->nnics = t->info.nnics;
        s->nrdma = t->info.nrdma_nics;
        snprintf(s->hostname, sizeof(s->hostname), "%s", t->info.hostname);
        if (t->info.nnics > 0)
            snprintf(s->nic, sizeof(s->nic), "%s", t->nics[0].name);
    }
    snprintf(s->node, sizeof(s->node), "%s", node && node[0] ? node : s->hostname);
    {
        /* CPU_SETSIZE (1024) CPUs, as the mask holds; a kernel with more possible CPUs
         * fails the call (EINVAL): the mask stays empty, unknown rather than wrong */
        cpu_set_t set;
        int c;
        if (sched_getaffinity(0, sizeof(set), &set) == 0)
            for (c = 0; c < CPU_SETSIZE && c < 64 * HLX_SUMMARY_CPU_WORDS; c++)
                if (CPU_ISSET(c, &set))
                    s->cpus[c / 64] |= 1ull << (c % 64);
    }
    /* the machine only when the topology is this one's (a file describes another) */
    if (t != NULL && t->info.this_system) {
        FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
        if (f != NULL) {
            if (fgets(s->machine, sizeof(s->machine), f) == NULL)
                s->machine[0] = '\0';
            s->machine[strcspn(s->machine, "\n")] = '\0';
            fclose(f);
        }
    }
}

void hlx_place_launcher_order(const int *counts, int nnodes, int cyclic, int *node_of_rank)
{
    int k, q, r = 0, total = 0;

    if (!cyclic) {
        for (k = 0; k < nnodes; k++)
            for (q = 0; q < counts[k]; q++)
                node_of_rank[r++] = k;
        return;
    }
    for (k = 0; k < nnodes; k++)
        total += counts[k];
    for (q = 0; r < total; q++) /* round q: one rank to every node holding more than q */
        for (k = 0; k < nnodes; k++)
            if (counts[k] > q)
                node_of_rank[r++] = k;
}

int hlx_hosts_share_machine(const hlx_host_summary_t *all, int n)
{
    int *first = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1)), nh = 0, r, i, shared = 0;

    if (first == NULL)
        return 1; /* unknown: as if shared */
    /* one rank per node (its first); then every pair of nodes */
    for (r = 0; r < n && !shared; r++) {
        for (i = 0; i < nh && strcmp(all[first[i]].node, all[r].node) != 0; i++)
            ;
        if (i < nh)
            continue;
        for (i = 0; i < nh && !shared; i++)
            shared = all[first[i]].machine[0] == '\0' || all[r].machine[0] == '\0' ||
                     !strcmp(all[first[i]].machine, all[r].machine);
        first[nh++] = r;
    }
    free(first);
    return shared;
}

/* A rank's machine for hlx_job_cpu_load: its boot id, else (unknown) its node name. */
typedef struct hlx_mach_key {
    int         by_node; /* 0: key is the boot id; 1: the node name */
    const char *key;
    int         rank;
} hlx_mach_key_t;

static int hlx_mach_key_cmp(const void *a, const void *b)
{
    const hlx_mach_key_t *x = a, *y = b;
    int c = x->by_node - y->by_node;

    if (c == 0)
        c = strcmp(x->key, y->key);
    return c != 0 ? c : x->rank - y->rank;
}

double hlx_job_cpu_load(const hlx_host_summary_t *all, int n, int *ranks_p, int *threads_p,
                        int *cpus_p)
{
    enum { NCPU = 64 * HLX_SUMMARY_CPU_WORDS };
    double *load = malloc(sizeof(double) * NCPU), worst = 0;
    hlx_mach_key_t *keys = malloc(sizeof(*keys) * (size_t)(n > 0 ? n : 1));
    int i, j, c, w;

    if (ranks_p) *ranks_p = 0;
    if (threads_p) *threads_p = 0;
    if (cpus_p) *cpus_p = 0;
    if (load == NULL || keys == NULL) {
        free(load);
        free(keys);
        return 0;
    }
    /* the ranks sorted by machine (n log n: a job of many hosts), then one pass per
     * machine; the same order on every rank, so the same sums */
    for (i = 0; i < n; i++) {
        keys[i].by_node = all[i].machine[0] == '\0';
        keys[i].key = keys[i].by_node ? all[i].node : all[i].machine;
        keys[i].rank = i;
    }
    qsort(keys, (size_t)n, sizeof(*keys), hlx_mach_key_cmp);
    for (i = 0; i < n; i = j) {
        uint64_t uni[HLX_SUMMARY_CPU_WORDS] = { 0 };
        double top = 0;
        int nr = 0, nt = 0, ncpu = 0;
        memset(load, 0, sizeof(double) * NCPU);
        for (j = i; j < n && keys[j].by_node == keys[i].by_node &&
                    !strcmp(keys[j].key, keys[i].key); j++) {
            const hlx_host_summary_t *s = &all[keys[j].rank];
            int k = 0, t = s->threads > 0 ? s->threads : 1;
            for (w = 0; w < HLX_SUMMARY_CPU_WORDS; w++)
                k += __builtin_popcountll(s->cpus[w]);
            nr++;
            nt += t;
            if (k == 0)
                continue;
            for (c = 0; c < NCPU; c++)
                if (s->cpus[c / 64] >> (c % 64) & 1) {
                    load[c] += (double)t / k;
                    uni[c / 64] |= 1ull << (c % 64);
                }
        }
        for (c = 0; c < NCPU; c++)
            top = load[c] > top ? load[c] : top;
        for (w = 0; w < HLX_SUMMARY_CPU_WORDS; w++)
            ncpu += __builtin_popcountll(uni[w]);
        if (top > worst) {
            worst = top;
            if (ranks_p) *ranks_p = nr;
            if (threads_p) *threads_p = nt;
            if (cpus_p) *cpus_p = ncpu;
        }
    }
    free(load);
    free(keys);
    return worst;
}

/* The hash every rank compares: nodes, GPUs, domains, both grids and each pair's link. */
static uint64_t hlx_job_hash(const hlx_placement_t *p, const hlx_cluster_t *c)
{
    uint64_t h = HLX_FNV1A_INIT;
    int r, i, v[7];

    h = hlx_fnv1a(h, &p->nranks, sizeof(p->nranks));
    for (r = 0; r < p->nranks; r++) {
        const hlx_rank_place_t *rp = &p->ranks[r];
        v[0] = rp->node; v[1] = rp->gpu; v[2] = rp->domain; v[3] = rp->kvp_rank;
        v[4] = rp->tpa_rank; v[5] = rp->tpf_rank; v[6] = rp->ep_rank;
        h = hlx_fnv1a(h, v, sizeof(v));
        h = hlx_fnv1a(h, c->nodes[rp->node].name, strlen(c->nodes[rp->node].name));
    }
    for (i = 0; i < p->npairs; i++) {
        v[0] = p->pairs[i].src; v[1] = p->pairs[i].dst; v[2] = (int)p->pairs[i].kind;
        v[3] = (int)p->pairs[i].link;
        h = hlx_fnv1a(h, v, 4 * sizeof(int));
    }
    return h;
}

/* The job's hosts as a cluster: from the file (every host named in it), else from the
 * summaries with the local topology's default link figures. */
static hlx_status_t hlx_job_cluster(const hlx_host_summary_t *all, int n,
                                    const hlx_cluster_t *file, const hlx_topo_t *topo,
                                    hlx_job_place_t *job, char *err, size_t errlen)
{
    hlx_cluster_t *c = &job->cluster;
    int r, i, hosts = 0, *first = calloc((size_t)n, sizeof(int));

    if (first == NULL)
        return HLX_ERR_NOMEM;
    /* distinct node names in order of first appearance */
    for (r = 0; r < n; r++) {
        if (all[r].magic != HLX_HOST_SUMMARY_MAGIC) {
            free(first);
            hlx_topo_seterr(err, errlen, "rank %d sent no host summary (a different Helix "
                            "version?)", r);
            return HLX_ERR_BOOTSTRAP;
        }
        for (i = 0; i < hosts; i++)
            if (!strncmp(all[first[i]].node, all[r].node, sizeof(all[r].node)))
                break;
        if (i == hosts)
            first[hosts++] = r;
        job->node_of_rank[r] = i; /* host index for now */
    }
    job->nhosts = hosts;
    memset(c, 0, sizeof(*c));
    if (file != NULL) {
        *c = *file;
        c->nodes = malloc(sizeof(*c->nodes) * (size_t)file->nnodes);
        if (c->nodes == NULL) {
            free(first);
            return HLX_ERR_NOMEM;
        }
        memcpy(c->nodes, file->nodes, sizeof(*c->nodes) * (size_t)file->nnodes);
        for (i = 0; i < hosts; i++) {
            const char *name = all[first[i]].node;
            int k;
            for (k = 0; k < c->nnodes; k++)
                if (!strcmp(c->nodes[k].name, name))
                    break;
            if (k == c->nnodes) {
                hlx_topo_seterr(err, errlen, "node %s (rank %d) is not in cluster \"%s\": name "
                                "each host of the job in its node list", name, first[i], c->name);
                free(first);
                return HLX_ERR_INVALID;
            }
            first[i] = -1 - k; /* host i -> cluster node k */
        }
        for (r = 0; r < n; r++)
            job->node_of_rank[r] = -1 - first[job->node_of_rank[r]];
        free(first);
        return HLX_OK;
    }
    if (topo != NULL) {
        hlx_cluster_t own;
        if (hlx_topo_to_cluster(topo, &own) == HLX_OK) {
            memcpy(c->link, own.link, sizeof(c->link));
            c->gpu = own.gpu;
            hlx_cluster_free(&own);
        }
    } else {
        c->link[HLX_LINK_SHM] = (hlx_link_params_t){ 10, 1 };
        c->link[HLX_LINK_TCP] = (hlx_link_params_t){ 1, 20 };
    }
    if (c->link[HLX_LINK_TCP].bw_gbps <= 0)
        c->link[HLX_LINK_TCP] = (hlx_link_params_t){ 1, 20 };
    /* every host has an RDMA NIC: a rough RDMA figure (200 Gb/s, 5 us) so that hosts are
     * joined by rdma rather than tcp; a cluster file gives the real one */
    for (i = 0; i < hosts && all[first[i]].nrdma > 0; i++)
        ;
    if (i == hosts && c->link[HLX_LINK_RDMA].bw_gbps <= 0)
        c->link[HLX_LINK_RDMA] = (hlx_link_params_t){ 25, 5 };
    snprintf(c->name, sizeof(c->name), "job");
    snprintf(c->description, sizeof(c->description), "the hosts of this job as the launcher "
             "reported them");
    c->nnodes = hosts;
    c->nodes = calloc((size_t)hosts, sizeof(*c->nodes));
    if (c->nodes == NULL) {
        free(first);
        return HLX_ERR_NOMEM;
    }
    for (i = 0; i < hosts; i++) {
        const hlx_host_summary_t *s = &all[first[i]];
        hlx_cluster_node_t *nd = &c->nodes[i];
        snprintf(nd->name, sizeof(nd->name), "%s", s->node);
        nd->gpus = s->ngpus;
        nd->nics = s->nrdma > 0 ? s->nrdma : s->nnics;
        nd->domain = i;
        nd->rack = 0;
        nd->nvlink = s->ngpus > 1 && s->ndomains < s->ngpus && c->link[HLX_LINK_NVLINK].bw_gbps > 0;
        nd->first_gpu = c->total_gpus;
        c->total_gpus += s->ngpus;
        if (s->ngpus > c->max_domain_gpus)
            c->max_domain_gpus = s->ngpus;
    }
    c->ndomains = hosts;
    free(first);
    return HLX_OK;
}

typedef struct {
    int a2a_host, a2a_rack, tpa_rack; /* pairs crossing hosts / racks */
} hlx_cross_t;

static void hlx_job_cross(const hlx_placement_t *p, const hlx_cluster_t *c, hlx_cross_t *x)
{
    int g, i, j, k, kvp = p->kvp, tpa = p->tpa;

    memset(x, 0, sizeof(*x));
#define HLX_NODE(_r) (&c->nodes[p->ranks[_r].node])
    for (g = 0; g < tpa; g++)
        for (i = 0; i < kvp; i++)
            for (j = i + 1; j < kvp; j++) {
                int a = g * kvp + i, b = g * kvp + j;
                x->a2a_host += p->ranks[a].node != p->ranks[b].node;
                x->a2a_rack += HLX_NODE(a)->rack != HLX_NODE(b)->rack;
            }
    /* a TPA group: the ranks of one kvp_rank, a stride of KVP */
    for (k = 0; k < kvp; k++)
        for (i = 0; i < tpa; i++)
            for (j = i + 1; j < tpa; j++)
                x->tpa_rack += HLX_NODE(i * kvp + k)->rack != HLX_NODE(j * kvp + k)->rack;
#undef HLX_NODE
}

/* 1 when crossing counts a are worse than b: the slowest links first (all-to-all pairs
 * across racks, then across hosts, then TPA groups across racks, whose ranks meet only in
 * the all-reduce). */
static int hlx_cross_worse(const hlx_cross_t *a, const hlx_cross_t *b)
{
    if (a->a2a_rack != b->a2a_rack)
        return a->a2a_rack > b->a2a_rack;
    if (a->a2a_host != b->a2a_host)
        return a->a2a_host > b->a2a_host;
    return a->tpa_rack > b->tpa_rack;
}

/* Compares the launcher's layout with the best of two over the same hosts and the same
 * ranks per host: a block layout (consecutive ranks on one host) and the one hlx_place (and
 * `helix topo`) chooses when its ranks per host are the same; writes the warning. */
static hlx_status_t hlx_job_compare(hlx_job_place_t *job, int kvp, int tpa, int ep,
                                    const hlx_topo_t *topo, double pair_bytes)
{
    const hlx_cluster_t *c = &job->cluster;
    const hlx_placement_t *p = job->place;
    int n = p->nranks, *block = malloc(sizeof(int) * (size_t)n), *cnt, *cnt2, r;
    hlx_placement_t *best = NULL, *free_p = NULL;
    const char *how = "srun -m block or mpirun --map-by slot";
    hlx_place_cost_t cost, bcost;
    hlx_cross_t xa, xb, xf;
    char err[256];
    size_t len;
    hlx_status_t st;

    cnt = calloc((size_t)c->nnodes, sizeof(int));
    cnt2 = calloc((size_t)c->nnodes, sizeof(int));
    if (block == NULL || cnt == NULL || cnt2 == NULL) {
        free(block);
        free(cnt);
        free(cnt2);
        return HLX_ERR_NOMEM;
    }
    for (r = 0; r < n; r++)
        cnt[job->node_of_rank[r]]++;
    hlx_place_launcher_order(cnt, c->nnodes, 0, block);
    st = hlx_place_on_nodes(c, kvp, tpa, ep, topo, block, &best, err, sizeof(err));
    free(block);
    if (st == HLX_OK && hlx_place(c, kvp, tpa, ep, topo, &free_p, err, sizeof(err)) == HLX_OK) {
        for (r = 0; r < n; r++)
            cnt2[free_p->ranks[r].node]++;
        if (memcmp(cnt, cnt2, sizeof(int) * (size_t)c->nnodes) == 0) {
            hlx_job_cross(best, c, &xb);
            hlx_job_cross(free_p, c, &xf);
            if (hlx_cross_worse(&xb, &xf)) {
                hlx_placement_free(best);
                best = free_p;
                free_p = NULL;
                how = "the rank order `helix topo --cluster` prints for these hosts";
            }
        }
    }
    hlx_placement_free(free_p);
    free(cnt);
    free(cnt2);
    if (st != HLX_OK)
        return st;
    hlx_job_cross(p, c, &xa);
    hlx_job_cross(best, c, &xb);
    job->warning[0] = '\0';
    if (hlx_cross_worse(&xa, &xb)) {
        job->worse = 1;
        len = (size_t)snprintf(job->warning, sizeof(job->warning),
            "the launcher's layout crosses more than it must: %d of %d all-to-all pairs cross "
            "hosts (%d racks) and %d TPA-group pairs cross racks; a better layout over the same "
            "hosts and ranks per host would have %d (%d racks) and %d.",
            xa.a2a_host, p->a2a_pairs, xa.a2a_rack, xa.tpa_rack, xb.a2a_host, xb.a2a_rack,
            xb.tpa_rack);
        if (hlx_place_a2a_cost(p, c, pair_bytes, &cost) == HLX_OK &&
            hlx_place_a2a_cost(best, c, pair_bytes, &bcost) == HLX_OK && len < sizeof(job->warning)) {
            if (cost.a2a_us > bcost.a2a_us)
                snprintf(job->warning + len, sizeof(job->warning) - len,
                         "\n  cost at %.0f bytes per pair: all-to-all about %.1f us per layer "
                         "instead of %.1f us; launch with %s", pair_bytes, cost.a2a_us,
                         bcost.a2a_us, how);
            else
                snprintf(job->warning + len, sizeof(job->warning) - len,
                         "\n  cost at %.0f bytes per pair: all-to-all about %.1f us per layer "
                         "either way on the %s link figures, plus what the racks' uplinks add; "
                         "launch with %s", pair_bytes, cost.a2a_us,
                         hlx_link_name(cost.worst_link), how);
        }
    } else {
        hlx_place_warning(p, c, pair_bytes, job->warning, sizeof(job->warning));
    }
    hlx_placement_free(best);
    return HLX_OK;
}

hlx_status_t hlx_place_job(const hlx_host_summary_t *all, int n, const hlx_cluster_t *file,
                           int kvp, int tpa, int ep, const hlx_topo_t *topo, double pair_bytes,
                           hlx_job_place_t *job, char *err, size_t errlen)
{
    hlx_status_t st;

    memset(job, 0, sizeof(*job));
    if (all == NULL || n < 1 || (long)kvp * tpa != n) {
        hlx_topo_seterr(err, errlen, "job placement: %d rank(s) for KVP %d x TPA %d", n, kvp, tpa);
        return HLX_ERR_INVALID;
    }
    job->node_of_rank = calloc((size_t)n, sizeof(int));
    if (job->node_of_rank == NULL)
        return HLX_ERR_NOMEM;
    st = hlx_job_cluster(all, n, file, topo, job, err, errlen);
    if (st == HLX_OK)
        st = hlx_place_on_nodes(&job->cluster, kvp, tpa, ep, topo, job->node_of_rank,
                                &job->place, err, errlen);
    if (st == HLX_OK)
        st = hlx_job_compare(job, kvp, tpa, ep, topo, pair_bytes);
    if (st != HLX_OK) {
        hlx_job_place_free(job);
        return st;
    }
    job->hash = hlx_job_hash(job->place, &job->cluster);
    return HLX_OK;
}

void hlx_job_place_free(hlx_job_place_t *job)
{
    if (job == NULL)
        return;
    hlx_placement_free(job->place);
    free(job->cluster.nodes);
    free(job->node_of_rank);
    memset(job, 0, sizeof(*job));
}

int hlx_place_links(const hlx_placement_t *p, int rank, hlx_link_t *links)
{
    int q;

    if (p == NULL || rank < 0 || rank >= p->nranks)
        return 0;
    for (q = 0; q < p->nranks; q++)
        links[q] = hlx_place_link(p, rank, q);
    return p->nranks;
}

int hlx_place_net_device(const hlx_placement_t *p, const hlx_topo_t *t, int rank, char *buf,
                         size_t len)
{
    const hlx_topo_nic_t *nic;

    buf[0] = '\0';
    if (p == NULL || t == NULL || rank < 0 || rank >= p->nranks || p->ranks[rank].nic < 0 ||
        p->ranks[rank].nic >= t->info.nnics)
        return 0;
    nic = &t->nics[p->ranks[rank].nic];
    if (nic->rdma && strcmp(nic->name, nic->netdev))
        snprintf(buf, len, "%s:1", nic->name); /* UCX names verbs devices device:port */
    else if (nic->netdev[0] && if_nametoindex(nic->netdev) != 0)
        snprintf(buf, len, "%s", nic->netdev);
    return buf[0] != '\0';
}

/* The placement as JSON (layout, ranks, attention groups, pairs, summary), the form `helix
 * topo --json` prints and HELIX_PLACEMENT_DUMP writes. */
json_t *hlx_place_json_add(json_t *root, const hlx_placement_t *p, const hlx_cluster_t *c)
{
    json_t *ranks = json_array(), *pairs = json_array(), *groups = json_array();
    int r, i, g;

    for (r = 0; r < p->nranks; r++) {
        const hlx_rank_place_t *rp = &p->ranks[r];
        json_array_append_new(ranks, json_pack(
            "{s:i,s:i,s:s,s:i,s:i,s:i,s:i,s:s,s:i,s:s,s:i,s:i,s:i,s:i,s:i}", "rank", r,
            "node", rp->node, "node_name", c->nodes[rp->node].name, "gpu", rp->gpu,
            "gpu_global", rp->gpu_global, "domain", rp->domain, "numa", rp->numa, "cpuset",
            rp->cpuset, "nic", rp->nic, "nic_name", rp->nic_name, "cuda_device",
            rp->cuda_device, "kvp_rank", rp->kvp_rank, "tpa_rank", rp->tpa_rank, "tpf_rank",
            rp->tpf_rank, "ep_rank", rp->ep_rank));
    }
    for (i = 0; i < p->npairs; i++)
        json_array_append_new(pairs, json_pack("{s:i,s:i,s:s,s:s}", "src", p->pairs[i].src,
            "dst", p->pairs[i].dst, "kind", hlx_pair_kind_name(p->pairs[i].kind), "link",
            hlx_link_name(p->pairs[i].link)));
    for (g = 0; g < p->tpa; g++) {
        json_t *members = json_array();
        for (r = g * p->kvp; r < (g + 1) * p->kvp; r++)
            json_array_append_new(members, json_integer(r));
        json_array_append_new(groups, json_pack("{s:i,s:o}", "tpa_rank", g, "ranks", members));
    }
    json_object_set_new(root, "layout", json_pack("{s:i,s:i,s:i,s:i,s:i,s:b}", "kvp", p->kvp,
                        "tpa", p->tpa, "tpf", p->tpf, "ep", p->ep, "nranks", p->nranks,
                        "cpu_only", p->cpu_only));
    json_object_set_new(root, "ranks", ranks);
    json_object_set_new(root, "attention_groups", groups);
    json_object_set_new(root, "pairs", pairs);
    json_object_set_new(root, "summary", json_pack("{s:i,s:i,s:i,s:i}", "domains_used",
                        p->ndomains, "split_groups", p->split_groups, "a2a_pairs",
                        p->a2a_pairs, "a2a_cross_domain_pairs", p->a2a_cross_pairs));
    return root;
}

hlx_status_t hlx_place_write_json(const hlx_placement_t *p, const hlx_cluster_t *c,
                                  const char *path, char *err, size_t errlen)
{
    json_t *root = json_object();
    char why[4200];
    hlx_status_t st;

    if (root == NULL)
        return HLX_ERR_NOMEM;
    hlx_place_json_add(root, p, c);
    /* whole or not at all; a path that cannot take a file is bad input (exit 2) */
    st = hlx_json_write_file(root, JSON_INDENT(1) | JSON_SORT_KEYS, path, why, sizeof(why));
    json_decref(root);
    if (st != HLX_OK)
        hlx_topo_seterr(err, errlen, "HELIX_PLACEMENT_DUMP: %s", why);
    return st;
}
