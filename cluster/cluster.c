/* Cluster descriptions: JSON files or presets under <data dir>/clusters. Compact form
 * ("nodes": N with gpus_per_node and nodes_per_domain) or an explicit node list for mixed
 * clusters; validated after loading so the planner and topology layer can trust it. */
#define _GNU_SOURCE
#include <helix/cluster.h>
#include <helix/model.h>

#include "hlx_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const hlx_link_names[HLX_LINK_COUNT] = {
    "self", "shm", "nvlink", "pcie", "rdma", "tcp",
};

const char *hlx_link_name(hlx_link_t link)
{
    return (unsigned)link < HLX_LINK_COUNT ? hlx_link_names[link] : "?";
}

int hlx_link_parse(const char *s, hlx_link_t *link_p)
{
    int i;

    for (i = 0; i < HLX_LINK_COUNT; i++) {
        if (!strcmp(s, hlx_link_names[i])) {
            *link_p = (hlx_link_t)i;
            return 0;
        }
    }
    if (!strcmp(s, "ib") || !strcmp(s, "infiniband") || !strcmp(s, "roce")) {
        *link_p = HLX_LINK_RDMA;
        return 0;
    }
    return -1;
}

/* Top-level keys; "nodes" is a count or a list, "gpu" and "links" are objects. */
typedef struct {
    char   name[64];
    char   description[256];
    int    gpus_per_node;
    int    nodes_per_domain;
    int    nodes_per_rack;
    int    nics_per_node;
    double nic_gbps;
} hlx_cluster_top_t;

static const hlx_jfield_t hlx_cluster_fields[] = {
    { "name", HLX_JT_STRING, offsetof(hlx_cluster_top_t, name), 1, 1, 0, 64, "cluster name" },
    { "description", HLX_JT_STRING, offsetof(hlx_cluster_top_t, description), 0, 1, 0, 256,
      "free text" },
    { "nodes", HLX_JT_ANY, 0, 1, 1, 0, 0, "node count or list of node objects" },
    { "gpus_per_node", HLX_JT_INT, offsetof(hlx_cluster_top_t, gpus_per_node), 0, 0, 1024, 0,
      "GPUs in each node (0: CPU-only hosts)" },
    { "nodes_per_domain", HLX_JT_INT, offsetof(hlx_cluster_top_t, nodes_per_domain), 0, 1,
      HLX_CLUSTER_MAX_NODES, 0, "nodes sharing one NVLink domain" },
    { "nodes_per_rack", HLX_JT_INT, offsetof(hlx_cluster_top_t, nodes_per_rack), 0, 1,
      HLX_CLUSTER_MAX_NODES, 0, "nodes per rack" },
    { "nics_per_node", HLX_JT_INT, offsetof(hlx_cluster_top_t, nics_per_node), 0, 0, 1024, 0,
      "NICs per node" },
    { "nic_gbps", HLX_JT_DOUBLE, offsetof(hlx_cluster_top_t, nic_gbps), 0, 0, 1e6, 0,
      "GB/s per NIC" },
    { "gpu", HLX_JT_ANY, 0, 0, 1, 0, 0, "GPU object (required when a node has GPUs)" },
    { "links", HLX_JT_ANY, 0, 1, 1, 0, 0, "link classes object" },
};

typedef struct {
    char   name[64];
    double hbm_gib;
    double hbm_gbps;
} hlx_cluster_gpu_t;

static const hlx_jfield_t hlx_gpu_fields[] = {
    { "name", HLX_JT_STRING, offsetof(hlx_cluster_gpu_t, name), 1, 1, 0, 64, "GPU name" },
    { "hbm_gib", HLX_JT_DOUBLE, offsetof(hlx_cluster_gpu_t, hbm_gib), 1, 1e-3, 1e6, 0,
      "HBM capacity per GPU, GiB" },
    { "hbm_gbps", HLX_JT_DOUBLE, offsetof(hlx_cluster_gpu_t, hbm_gbps), 1, 1e-3, 1e7, 0,
      "HBM bandwidth per GPU, GB/s" },
    { "peak_tflops", HLX_JT_ANY, 0, 1, 1, 0, 0, "object {fp4, fp8, bf16, f32}" },
};

static const hlx_jfield_t hlx_peak_fields[] = {
    { "fp4", HLX_JT_DOUBLE, sizeof(double) * HLX_DTYPE_FP4, 1, 1e-6, 1e7, 0, "dense TFLOP/s" },
    { "fp8", HLX_JT_DOUBLE, sizeof(double) * HLX_DTYPE_FP8, 1, 1e-6, 1e7, 0, "dense TFLOP/s" },
    { "bf16", HLX_JT_DOUBLE, sizeof(double) * HLX_DTYPE_BF16, 1, 1e-6, 1e7, 0, "dense TFLOP/s" },
    { "f32", HLX_JT_DOUBLE, sizeof(double) * HLX_DTYPE_F32, 1, 1e-6, 1e7, 0, "dense TFLOP/s" },
};

static const hlx_jfield_t hlx_link_fields[] = {
    { "bw_gbps", HLX_JT_DOUBLE, offsetof(hlx_link_params_t, bw_gbps), 1, 0, 1e7, 0,
      "GB/s per direction per GPU" },
    { "latency_us", HLX_JT_DOUBLE, offsetof(hlx_link_params_t, latency_us), 1, 0, 1e6, 0,
      "microseconds per message / collective step" },
};

typedef struct {
    char name[64];
    int  gpus;
    int  nics;
    int  domain;
    int  rack;
    int  nvlink;
} hlx_cluster_node_raw_t;

static const hlx_jfield_t hlx_node_fields[] = {
    { "name", HLX_JT_STRING, offsetof(hlx_cluster_node_raw_t, name), 0, 1, 0, 64, "node name" },
    { "gpus", HLX_JT_INT, offsetof(hlx_cluster_node_raw_t, gpus), 0, 0, 1024, 0,
      "GPUs (0: a CPU-only host)" },
    { "nics", HLX_JT_INT, offsetof(hlx_cluster_node_raw_t, nics), 0, 0, 1024, 0, "NICs" },
    { "domain", HLX_JT_INT, offsetof(hlx_cluster_node_raw_t, domain), 0, 0,
      HLX_CLUSTER_MAX_NODES - 1, 0, "NVLink domain id" },
    { "rack", HLX_JT_INT, offsetof(hlx_cluster_node_raw_t, rack), 0, 0,
      HLX_CLUSTER_MAX_NODES - 1, 0, "rack id" },
    { "nvlink", HLX_JT_BOOL, offsetof(hlx_cluster_node_raw_t, nvlink), 0, 1, 0, 0,
      "GPUs joined by NVLink" },
};

#define HLX_NFIELDS(_t) (sizeof(_t) / sizeof((_t)[0]))

static hlx_status_t hlx_cluster_read_links(hlx_jdoc_t *doc, json_t *links, hlx_cluster_t *c)
{
    const char *key;
    json_t *v;
    char path[128];
    hlx_link_t l;
    hlx_status_t st;

    if (!json_is_object(links))
        return hlx_jdoc_fail(doc, "/links", HLX_ERR_PARSE,
                             "expected an object of link classes (nvlink, rdma, ...)");
    json_object_foreach(links, key, v) {
        snprintf(path, sizeof(path), "/links/%s", key);
        if (hlx_link_parse(key, &l) != 0 || strcmp(key, hlx_link_names[l]) != 0) {
            const char *near = hlx_nearest_name(key, hlx_link_names, HLX_LINK_COUNT);
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                                 "unknown link class%s%s%s (self, shm, nvlink, pcie, rdma, tcp)",
                                 near ? " (did you mean \"" : "", near ? near : "",
                                 near ? "\"?)" : "");
        }
        st = hlx_jdoc_read_object(doc, v, path, hlx_link_fields, HLX_NFIELDS(hlx_link_fields),
                                  &c->link[l]);
        if (st != HLX_OK)
            return st;
    }
    return HLX_OK;
}

static hlx_status_t hlx_cluster_read_gpu(hlx_jdoc_t *doc, json_t *gpu, hlx_cluster_t *c)
{
    hlx_cluster_gpu_t g;
    hlx_status_t st;

    memset(&g, 0, sizeof(g));
    st = hlx_jdoc_read_object(doc, gpu, "/gpu", hlx_gpu_fields, HLX_NFIELDS(hlx_gpu_fields), &g);
    if (st != HLX_OK)
        return st;
    st = hlx_jdoc_read_object(doc, json_object_get(gpu, "peak_tflops"), "/gpu/peak_tflops",
                              hlx_peak_fields, HLX_NFIELDS(hlx_peak_fields),
                              c->gpu.peak_tflops);
    if (st != HLX_OK)
        return st;
    memcpy(c->gpu.name, g.name, sizeof(c->gpu.name));
    c->gpu.hbm_gib  = g.hbm_gib;
    c->gpu.hbm_gbps = g.hbm_gbps;
    return HLX_OK;
}

/* Compact form: N identical nodes, nodes_per_domain consecutive nodes per domain. */
static hlx_status_t hlx_cluster_compact(hlx_jdoc_t *doc, json_t *root, json_t *nodes,
                                        const hlx_cluster_top_t *t, hlx_cluster_t *c)
{
    json_int_t n = json_integer_value(nodes);
    int npd = t->nodes_per_domain ? t->nodes_per_domain : 1;
    int npr = t->nodes_per_rack ? t->nodes_per_rack : npd;
    int i;

    if (n < 1 || n > HLX_CLUSTER_MAX_NODES)
        return hlx_jdoc_fail(doc, "/nodes", HLX_ERR_PARSE, "%lld is outside [1, %d]",
                             (long long)n, HLX_CLUSTER_MAX_NODES);
    if (json_object_get(root, "gpus_per_node") == NULL)
        return hlx_jdoc_fail(doc, "/gpus_per_node", HLX_ERR_PARSE,
                             "required key is missing (with \"nodes\" as a count)");
    if (n % npd != 0)
        return hlx_jdoc_fail(doc, "/nodes_per_domain", HLX_ERR_PARSE,
                             "%d does not divide nodes %lld", npd, (long long)n);
    if (npd > 1 && c->link[HLX_LINK_NVLINK].bw_gbps <= 0)
        return hlx_jdoc_fail(doc, "/nodes_per_domain", HLX_ERR_PARSE,
                             "%d nodes per NVLink domain but links.nvlink.bw_gbps is 0", npd);
    c->nnodes = (int)n;
    c->nodes  = calloc((size_t)n, sizeof(*c->nodes));
    if (c->nodes == NULL)
        return HLX_ERR_NOMEM;
    for (i = 0; i < c->nnodes; i++) {
        hlx_cluster_node_t *nd = &c->nodes[i];
        snprintf(nd->name, sizeof(nd->name), "node%d", i);
        nd->gpus   = t->gpus_per_node;
        /* a CPU-only host has one NIC unless told otherwise */
        nd->nics   = json_object_get(root, "nics_per_node") ? t->nics_per_node
                                                            : (t->gpus_per_node > 0 ? t->gpus_per_node : 1);
        nd->domain = i / npd;
        nd->rack   = i / npr;
        nd->nvlink = c->link[HLX_LINK_NVLINK].bw_gbps > 0;
    }
    return HLX_OK;
}

/* Explicit list: each node names its domain (defaults to its own) and rack. */
static hlx_status_t hlx_cluster_list(hlx_jdoc_t *doc, json_t *root, json_t *nodes,
                                     const hlx_cluster_top_t *t, hlx_cluster_t *c)
{
    static const char *const compact_only[] = { "nodes_per_domain", "nodes_per_rack" };
    size_t n = json_array_size(nodes), i, k;
    int *seen = NULL, maxd = -1;
    char path[64];
    hlx_status_t st = HLX_OK;

    for (k = 0; k < HLX_NFIELDS(compact_only); k++) {
        if (json_object_get(root, compact_only[k]) != NULL) {
            snprintf(path, sizeof(path), "/%s", compact_only[k]);
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                                 "only with \"nodes\" as a count; give each node a domain/rack");
        }
    }
    if (n < 1 || n > HLX_CLUSTER_MAX_NODES)
        return hlx_jdoc_fail(doc, "/nodes", HLX_ERR_PARSE, "%zu nodes is outside [1, %d]", n,
                             HLX_CLUSTER_MAX_NODES);
    c->nnodes = (int)n;
    c->nodes  = calloc(n, sizeof(*c->nodes));
    seen      = calloc(n, sizeof(*seen));
    if (c->nodes == NULL || seen == NULL) {
        free(seen);
        return HLX_ERR_NOMEM;
    }
    for (i = 0; i < n; i++) {
        json_t *o = json_array_get(nodes, i);
        hlx_cluster_node_raw_t r;
        memset(&r, 0, sizeof(r));
        snprintf(r.name, sizeof(r.name), "node%zu", i);
        r.gpus   = json_object_get(root, "gpus_per_node") ? t->gpus_per_node : -1;
        r.nics   = json_object_get(root, "nics_per_node") ? t->nics_per_node : -1;
        r.domain = (int)i;
        r.rack   = -1;
        r.nvlink = c->link[HLX_LINK_NVLINK].bw_gbps > 0;
        snprintf(path, sizeof(path), "/nodes/%zu", i);
        st = hlx_jdoc_read_object(doc, o, path, hlx_node_fields, HLX_NFIELDS(hlx_node_fields),
                                  &r);
        if (st != HLX_OK)
            goto out;
        if (r.gpus < 0) {
            snprintf(path, sizeof(path), "/nodes/%zu/gpus", i);
            st = hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                               "required key is missing (no top-level gpus_per_node)");
            goto out;
        }
        if (r.nvlink && c->link[HLX_LINK_NVLINK].bw_gbps <= 0) {
            snprintf(path, sizeof(path), "/nodes/%zu/nvlink", i);
            st = hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                               "true but links.nvlink.bw_gbps is 0");
            goto out;
        }
        if ((size_t)r.domain >= n) {
            snprintf(path, sizeof(path), "/nodes/%zu/domain", i);
            st = hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                               "%d is not below the node count %zu", r.domain, n);
            goto out;
        }
        /* a job's hosts are matched to nodes by name (topology/jobplace.c): a second node
         * of one name could never be used; reports name nodes too */
        for (k = 0; k < i && strcmp(c->nodes[k].name, r.name) != 0; k++)
            ;
        if (k < i) {
            int named = json_object_get(o, "name") != NULL;
            snprintf(path, sizeof(path), "/nodes/%zu/name", i);
            st = hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                               "\"%s\" is already the name of node %zu%s; give each node its "
                               "own name", r.name, k,
                               named ? "" : " (this node has none: node<i> is its default)");
            goto out;
        }
        memcpy(c->nodes[i].name, r.name, sizeof(r.name));
        c->nodes[i].gpus   = r.gpus;
        c->nodes[i].nics   = r.nics >= 0 ? r.nics : (r.gpus > 0 ? r.gpus : 1);
        c->nodes[i].domain = r.domain;
        c->nodes[i].rack   = r.rack >= 0 ? r.rack : r.domain;
        c->nodes[i].nvlink = r.nvlink;
        seen[r.domain]++;
        if (r.domain > maxd)
            maxd = r.domain;
    }
    /* Domains are numbered densely, and a multi-node domain needs NVLink on every node. */
    for (i = 0; i < n; i++) {
        int d = c->nodes[i].domain;
        if (d > 0 && seen[d - 1] == 0) {
            snprintf(path, sizeof(path), "/nodes/%zu/domain", i);
            st = hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                               "domain %d used but domain %d has no nodes (ids are 0..N-1)",
                               d, d - 1);
            goto out;
        }
        if (seen[d] > 1 && !c->nodes[i].nvlink) {
            snprintf(path, sizeof(path), "/nodes/%zu/nvlink", i);
            st = hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                               "node shares NVLink domain %d with other nodes but has no NVLink",
                               d);
            goto out;
        }
    }
out:
    free(seen);
    return st;
}

static void hlx_cluster_summarize(hlx_cluster_t *c)
{
    int i, d, g = 0;

    c->ndomains = 0;
    for (i = 0; i < c->nnodes; i++) {
        c->nodes[i].first_gpu = g;
        g += c->nodes[i].gpus;
        if (c->nodes[i].domain + 1 > c->ndomains)
            c->ndomains = c->nodes[i].domain + 1;
    }
    c->total_gpus      = g;
    c->max_domain_gpus = 0;
    for (d = 0; d < c->ndomains; d++) {
        int dg = hlx_cluster_domain_gpus(c, d);
        if (dg > c->max_domain_gpus)
            c->max_domain_gpus = dg;
    }
}

static hlx_status_t hlx_cluster_parse(hlx_jdoc_t *doc, hlx_cluster_t *c)
{
    json_t *root = hlx_jdoc_root(doc);
    json_t *nodes;
    hlx_cluster_top_t t;
    hlx_status_t st;

    memset(&t, 0, sizeof(t));
    st = hlx_jdoc_read_object(doc, root, "", hlx_cluster_fields,
                              HLX_NFIELDS(hlx_cluster_fields), &t);
    if (st != HLX_OK)
        return st;
    memcpy(c->name, t.name, sizeof(c->name));
    memcpy(c->description, t.description, sizeof(c->description));
    c->nic_gbps = t.nic_gbps;
    if ((json_object_get(root, "gpu") != NULL &&
         (st = hlx_cluster_read_gpu(doc, json_object_get(root, "gpu"), c)) != HLX_OK) ||
        (st = hlx_cluster_read_links(doc, json_object_get(root, "links"), c)) != HLX_OK)
        return st;
    nodes = json_object_get(root, "nodes");
    if (json_is_integer(nodes))
        st = hlx_cluster_compact(doc, root, nodes, &t, c);
    else if (json_is_array(nodes))
        st = hlx_cluster_list(doc, root, nodes, &t, c);
    else
        st = hlx_jdoc_fail(doc, "/nodes", HLX_ERR_PARSE,
                           "expected a node count or a list of node objects");
    if (st != HLX_OK)
        return st;
    hlx_cluster_summarize(c);
    if (c->total_gpus > 0 && json_object_get(root, "gpu") == NULL)
        return hlx_jdoc_fail(doc, "/gpu", HLX_ERR_PARSE,
                             "required key is missing (the cluster has %d GPUs)", c->total_gpus);
    if (c->ndomains > 1 && c->link[HLX_LINK_RDMA].bw_gbps <= 0 &&
        c->link[HLX_LINK_TCP].bw_gbps <= 0)
        return hlx_jdoc_fail(doc, "/links", HLX_ERR_PARSE,
                             "%d NVLink domains but neither rdma nor tcp has bandwidth",
                             c->ndomains);
    for (int i = 0; i < c->nnodes; i++) {
        if (c->nodes[i].gpus > 1 && !c->nodes[i].nvlink &&
            c->link[HLX_LINK_PCIE].bw_gbps <= 0) {
            return hlx_jdoc_fail(doc, "/links", HLX_ERR_PARSE,
                                 "node %s has %d GPUs without NVLink but pcie has no bandwidth",
                                 c->nodes[i].name, c->nodes[i].gpus);
        }
    }
    return HLX_OK;
}

hlx_status_t hlx_cluster_load(const char *path_or_preset, hlx_cluster_t *c, char *err,
                              size_t errlen)
{
    char path[1024];
    hlx_cluster_t tmp;
    hlx_jdoc_t *doc = NULL;
    hlx_status_t st;

    st = hlx_data_resolve("clusters", path_or_preset, path, sizeof(path), err, errlen);
    if (st != HLX_OK)
        return st;
    memset(&tmp, 0, sizeof(tmp));
    st = hlx_jdoc_load_file(path, &doc);
    if (st == HLX_OK)
        st = hlx_cluster_parse(doc, &tmp);
    if (st != HLX_OK) {
        if (st == HLX_ERR_NOMEM)
            snprintf(err, errlen, "%s: out of memory", path);
        else
            snprintf(err, errlen, "%s", doc ? hlx_jdoc_error(doc) : "out of memory");
        hlx_cluster_free(&tmp);
        hlx_jdoc_free(doc);
        return st;
    }
    hlx_jdoc_free(doc);
    *c = tmp;
    return HLX_OK;
}

void hlx_cluster_free(hlx_cluster_t *c)
{
    if (c == NULL)
        return;
    free(c->nodes);
    c->nodes  = NULL;
    c->nnodes = 0;
}

int hlx_cluster_total_gpus(const hlx_cluster_t *c)
{
    int i, g = 0;

    for (i = 0; i < c->nnodes; i++)
        g += c->nodes[i].gpus;
    return g;
}

int hlx_cluster_domain_gpus(const hlx_cluster_t *c, int domain)
{
    int i, g = 0;

    for (i = 0; i < c->nnodes; i++)
        if (c->nodes[i].domain == domain)
            g += c->nodes[i].gpus;
    return g;
}

int hlx_cluster_gpu_node(const hlx_cluster_t *c, int gpu)
{
    int i, g = 0;

    if (gpu < 0)
        return -1;
    for (i = 0; i < c->nnodes; i++) {
        g += c->nodes[i].gpus;
        if (gpu < g)
            return i;
    }
    return -1;
}

hlx_link_t hlx_cluster_link(const hlx_cluster_t *c, int gpu_a, int gpu_b)
{
    int na = hlx_cluster_gpu_node(c, gpu_a), nb = hlx_cluster_gpu_node(c, gpu_b);

    if (na < 0 || nb < 0)
        return HLX_LINK_COUNT;
    if (gpu_a == gpu_b)
        return HLX_LINK_SELF;
    if (na == nb)
        return c->nodes[na].nvlink ? HLX_LINK_NVLINK : HLX_LINK_PCIE;
    if (c->nodes[na].domain == c->nodes[nb].domain)
        return HLX_LINK_NVLINK;
    return c->link[HLX_LINK_RDMA].bw_gbps > 0 ? HLX_LINK_RDMA : HLX_LINK_TCP;
}
