/* Cluster variants for topology sweeps: a copy of a cluster with one property changed
 * (InfiniBand or NVLink bandwidth and latency, NVLink domain size, HBM). */
#include "hlx_plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const hlx_variant_keys[] = {
    "rdma_gbps", "rdma_us", "nvlink_gbps", "nvlink_us", "domain_gpus", "hbm_gbps", "hbm_gib",
};

int hlx_cluster_variant_key(const char *key)
{
    size_t i;

    for (i = 0; i < sizeof(hlx_variant_keys) / sizeof(hlx_variant_keys[0]); i++)
        if (!strcmp(key, hlx_variant_keys[i]))
            return (int)i;
    return -1;
}

const char *hlx_cluster_variant_keys(void)
{
    return "rdma_gbps, rdma_us, nvlink_gbps, nvlink_us, domain_gpus, hbm_gbps, hbm_gib";
}

/* Regroups nodes into NVLink domains of `gpus` GPUs (consecutive nodes). */
static hlx_status_t hlx_variant_domains(hlx_cluster_t *c, int gpus, char *err, size_t errlen)
{
    int g = c->nodes[0].gpus, i, npd;

    for (i = 1; i < c->nnodes; i++) {
        if (c->nodes[i].gpus != g) {
            snprintf(err, errlen, "domain_gpus: %s has nodes of different sizes", c->name);
            return HLX_ERR_INVALID;
        }
    }
    if (gpus < g || gpus % g != 0) {
        snprintf(err, errlen, "domain_gpus: %d is not a multiple of the %d GPUs per node of %s",
                 gpus, g, c->name);
        return HLX_ERR_INVALID;
    }
    npd = gpus / g;
    if (npd > 1 && c->link[HLX_LINK_NVLINK].bw_gbps <= 0) {
        snprintf(err, errlen, "domain_gpus: %s has no NVLink bandwidth to span nodes", c->name);
        return HLX_ERR_INVALID;
    }
    if (npd > 1 && c->link[HLX_LINK_RDMA].bw_gbps <= 0 && c->link[HLX_LINK_TCP].bw_gbps <= 0 &&
        npd < c->nnodes) {
        snprintf(err, errlen, "domain_gpus: %s has no link between domains", c->name);
        return HLX_ERR_INVALID;
    }
    c->ndomains = 0;
    c->max_domain_gpus = 0;
    for (i = 0; i < c->nnodes; i++) {
        c->nodes[i].domain = i / npd;
        if (npd > 1)
            c->nodes[i].nvlink = 1;
        if (c->nodes[i].domain + 1 > c->ndomains)
            c->ndomains = c->nodes[i].domain + 1;
    }
    for (i = 0; i < c->ndomains; i++) {
        int dg = hlx_cluster_domain_gpus(c, i);
        if (dg > c->max_domain_gpus)
            c->max_domain_gpus = dg;
    }
    return HLX_OK;
}

hlx_status_t hlx_cluster_variant(const hlx_cluster_t *base, const char *key, double value,
                                 hlx_cluster_t *out, char *err, size_t errlen)
{
    int k = hlx_cluster_variant_key(key);
    hlx_status_t st = HLX_OK;
    hlx_cluster_t c = *base;
    char name[64];

    if (k < 0) {
        snprintf(err, errlen, "unknown property '%s' (%s)", key, hlx_cluster_variant_keys());
        return HLX_ERR_INVALID;
    }
    if (!isfinite(value) || value < 0 || (value == 0 && k != 1 && k != 3)) {
        snprintf(err, errlen, "%s: %g is not a positive number", key, value);
        return HLX_ERR_INVALID;
    }
    c.nodes = malloc((size_t)base->nnodes * sizeof(*c.nodes));
    if (c.nodes == NULL)
        return HLX_ERR_NOMEM;
    memcpy(c.nodes, base->nodes, (size_t)base->nnodes * sizeof(*c.nodes));
    switch (k) {
    case 0: c.link[HLX_LINK_RDMA].bw_gbps = value; break;
    case 1: c.link[HLX_LINK_RDMA].latency_us = value; break;
    case 2: c.link[HLX_LINK_NVLINK].bw_gbps = value; break;
    case 3: c.link[HLX_LINK_NVLINK].latency_us = value; break;
    case 4:
        if (value != floor(value) || value > 1 << 20) {
            snprintf(err, errlen, "domain_gpus: %g is not a GPU count", value);
            st = HLX_ERR_INVALID;
        } else {
            st = hlx_variant_domains(&c, (int)value, err, errlen);
        }
        break;
    case 5: c.gpu.hbm_gbps = value; break;
    case 6: c.gpu.hbm_gib = value; break;
    }
    if (st != HLX_OK) {
        free(c.nodes);
        return st;
    }
    snprintf(name, sizeof(name), "%.40s %s=%g", base->name, key, value);
    memcpy(c.name, name, sizeof(c.name));
    *out = c;
    return HLX_OK;
}
