/* Rank placement: KVP x TPA attention ranks (and the TPF x EP FFN grid over the same
 * processes) onto the slots of a cluster (GPUs, or hosts for CPU-only runs), keeping each
 * KVP all-to-all group inside one NVLink domain when it fits, then cores, NUMA node, NIC
 * and the link class of every pair that exchanges data in a layer. */
#define _GNU_SOURCE
#include "topo_int.h"
#include "hlx_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HLX_PLACE_MAX_RANKS 16384
#define HLX_PLACE_MAX_PAIRS (1L << 24) /* listed pairs: 16M x 16 bytes at most */

typedef struct {
    int node, gpu;  /* gpu -1: a CPU-only slot on that host */
    int key_a, key_b;
    int domain;     /* dense id */
} hlx_slot_t;

typedef struct {
    int *slots;     /* slot indices in order */
    int  nslots, next;
} hlx_dom_t;

typedef struct {
    const hlx_cluster_t *c;
    const hlx_topo_t    *t;
    int                  cpu_only, nslots, ndoms;
    hlx_slot_t          *slots;
    hlx_dom_t           *doms;
    const int           *node_of_rank; /* the launcher's hosts (hlx_place_on_nodes), or NULL */
    int                 *node_ranks;   /* ... ranks on each node */
} hlx_place_ctx_t;

const char *hlx_pair_kind_name(hlx_pair_kind_t k)
{
    static const char *const names[] = { "a2a", "allreduce", "ffn_allreduce", "ep_a2a" };
    return (unsigned)k < HLX_PAIR_KIND_COUNT ? names[k] : "?";
}

/* The topology describes a node when it has as many GPUs (nodes are assumed alike). */
static int hlx_place_topo_applies(const hlx_place_ctx_t *x, int node)
{
    if (x->t == NULL)
        return 0;
    return x->t->info.ngpus == x->c->nodes[node].gpus;
}

static int hlx_place_domain_id(hlx_place_ctx_t *x, int ka, int kb)
{
    int i;
    for (i = 0; i < x->nslots; i++) {
        if (x->slots[i].domain < 0)
            break;
        if (x->slots[i].key_a == ka && x->slots[i].key_b == kb)
            return x->slots[i].domain;
    }
    return x->ndoms++;
}

static hlx_status_t hlx_place_build_slots(hlx_place_ctx_t *x, int nranks, char *err,
                                          size_t errlen)
{
    const hlx_cluster_t *c = x->c;
    int n, g, i, total = 0, per_host = 0, warned = 0;

    for (n = 0; n < c->nnodes; n++)
        total += c->nodes[n].gpus > 0 ? c->nodes[n].gpus : 0;
    x->cpu_only = total == 0;
    if (x->node_of_rank != NULL) {
        /* ranks are already on their hosts: a host takes as many slots as it has ranks */
        for (n = 0; n < c->nnodes; n++) {
            if (!x->cpu_only && x->node_ranks[n] > c->nodes[n].gpus) {
                hlx_topo_seterr(err, errlen, "node %s runs %d rank(s) but has %d GPU(s)",
                                c->nodes[n].name, x->node_ranks[n], c->nodes[n].gpus);
                return HLX_ERR_INVALID;
            }
        }
        if (x->cpu_only)
            total = nranks;
    } else if (x->cpu_only) {
        per_host = (nranks + c->nnodes - 1) / c->nnodes;
        total = per_host * c->nnodes;
    }
    if (total < nranks) {
        hlx_topo_seterr(err, errlen,
                        "layout needs N = KVP x TPA = %d GPUs; cluster \"%s\" has %d", nranks,
                        c->name, total);
        return HLX_ERR_INVALID;
    }
    x->slots = calloc((size_t)total, sizeof(*x->slots));
    if (x->slots == NULL)
        return HLX_ERR_NOMEM;
    x->nslots = total;
    for (i = 0; i < total; i++)
        x->slots[i].domain = -1;

    i = 0;
    for (n = 0; n < c->nnodes; n++) {
        const hlx_cluster_node_t *nd = &c->nodes[n];
        int applies = hlx_place_topo_applies(x, n);
        int topo_nv = applies && x->t->info.ndomains < x->t->info.ngpus;
        int cnt = !x->cpu_only ? nd->gpus : x->node_of_rank ? x->node_ranks[n] : per_host;
        if (applies && !x->cpu_only && topo_nv != (nd->nvlink != 0) && nd->gpus > 1 &&
            !warned) {
            hlx_warn("cluster \"%s\" node %s: the cluster says %s NVLink, topology %s shows "
                     "%d NVLink domain(s) for %d GPUs; using the topology", c->name, nd->name,
                     nd->nvlink ? "with" : "without", x->t->info.source, x->t->info.ndomains,
                     x->t->info.ngpus);
            warned = 1;
        }
        for (g = 0; g < cnt; g++, i++) {
            hlx_slot_t *s = &x->slots[i];
            s->node = n;
            s->gpu = x->cpu_only ? -1 : g;
            if (x->cpu_only) {
                s->key_a = n;
                s->key_b = 0;
            } else if (applies ? topo_nv : nd->nvlink) {
                /* a cluster domain may span nodes (NVL72); the topology splits a node */
                s->key_a = nd->domain;
                s->key_b = applies ? x->t->gpus[g].domain : 0;
            } else {
                s->key_a = -1 - n; /* no NVLink: each GPU alone */
                s->key_b = g;
            }
            s->domain = hlx_place_domain_id(x, s->key_a, s->key_b);
        }
    }

    x->doms = calloc((size_t)x->ndoms, sizeof(*x->doms));
    if (x->doms == NULL)
        return HLX_ERR_NOMEM;
    for (i = 0; i < total; i++)
        x->doms[x->slots[i].domain].nslots++;
    for (i = 0; i < x->ndoms; i++) {
        x->doms[i].slots = malloc(sizeof(int) * (size_t)x->doms[i].nslots);
        if (x->doms[i].slots == NULL)
            return HLX_ERR_NOMEM;
        x->doms[i].nslots = 0;
    }
    for (i = 0; i < total; i++) {
        hlx_dom_t *d = &x->doms[x->slots[i].domain];
        d->slots[d->nslots++] = i;
    }
    return HLX_OK;
}

/* Groups of KVP consecutive ranks: first every group that fits whole goes to the first
 * domain with room (first fit is optimal for equal-size groups), then each remaining group
 * takes the largest free shares first, which maximizes the pairs kept inside a domain. */
static void hlx_place_groups(hlx_place_ctx_t *x, int kvp, int tpa, int *slot_of_rank,
                             int *split_p)
{
    int grp, d, k, split = 0;
    char *placed = calloc((size_t)tpa, 1);

    for (grp = 0; grp < tpa; grp++) {
        for (d = 0; d < x->ndoms; d++) {
            hlx_dom_t *dm = &x->doms[d];
            if (dm->nslots - dm->next < kvp)
                continue;
            for (k = 0; k < kvp; k++)
                slot_of_rank[grp * kvp + k] = dm->slots[dm->next++];
            if (placed)
                placed[grp] = 1;
            break;
        }
    }
    for (grp = 0; grp < tpa; grp++) {
        if (placed == NULL || placed[grp])
            continue;
        split++;
        k = 0;
        while (k < kvp) {
            int best = -1;
            for (d = 0; d < x->ndoms; d++) {
                int f = x->doms[d].nslots - x->doms[d].next;
                if (f > 0 && (best < 0 || f > x->doms[best].nslots - x->doms[best].next))
                    best = d;
            }
            if (best < 0)
                break; /* cannot happen: capacity was checked */
            while (k < kvp && x->doms[best].next < x->doms[best].nslots)
                slot_of_rank[grp * kvp + k++] = x->doms[best].slots[x->doms[best].next++];
        }
    }
    free(placed);
    *split_p = split;
}

/* Ranks already on their hosts: the k-th rank of a node (in rank order) takes that node's
 * k-th slot; a group counts as split when its ranks span several domains. */
static void hlx_place_fixed(hlx_place_ctx_t *x, int kvp, int tpa, int *slot_of_rank,
                            int *split_p)
{
    int n = kvp * tpa, r, i, grp, split = 0;
    int *next = calloc((size_t)x->c->nnodes, sizeof(int));

    if (next == NULL) {
        *split_p = 0;
        return;
    }
    /* slots are node-major: each node's first slot */
    for (i = x->nslots - 1; i >= 0; i--)
        next[x->slots[i].node] = i;
    for (r = 0; r < n; r++)
        slot_of_rank[r] = next[x->node_of_rank[r]]++;
    for (grp = 0; grp < tpa; grp++)
        for (i = 1; i < kvp; i++)
            if (x->slots[slot_of_rank[grp * kvp + i]].domain !=
                x->slots[slot_of_rank[grp * kvp]].domain) {
                split++;
                break;
            }
    free(next);
    *split_p = split;
}

/* Cores (or PUs when the topology has no cores) inside a set, in logical order. */
static int hlx_place_cores_in(const hlx_topo_t *t, hwloc_const_bitmap_t set, hwloc_obj_t *out,
                              int max)
{
    hwloc_obj_type_t type = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_CORE) > 0
                                ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    int n = hwloc_get_nbobjs_by_type(t->hw, type), i, k = 0;

    for (i = 0; i < n && k < max; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(t->hw, type, i);
        if (o->cpuset && hwloc_bitmap_isincluded(o->cpuset, set))
            out[k++] = o;
    }
    return k;
}

/* Rank j of m sharing a set of cores gets a contiguous share of them (at least one core;
 * several ranks share a core only when there are more ranks than cores). */
static void hlx_place_share(const hlx_topo_t *t, hwloc_const_bitmap_t set, int j, int m,
                            char *out, size_t len)
{
    int ncores = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_PU);
    hwloc_obj_t *cores = malloc(sizeof(*cores) * (size_t)(ncores + 1));
    hwloc_bitmap_t acc = hwloc_bitmap_alloc();
    int c, start, end, i;

    out[0] = '\0';
    if (cores == NULL || acc == NULL)
        goto out;
    c = hlx_place_cores_in(t, set, cores, ncores);
    if (c == 0 || m <= 0)
        goto out;
    start = (int)((long)j * c / m);
    end = (int)((long)(j + 1) * c / m);
    if (end <= start)
        end = start + 1;
    for (i = start; i < end && i < c; i++)
        hwloc_bitmap_or(acc, acc, cores[i]->cpuset);
    hwloc_bitmap_list_snprintf(out, len, acc);
out:
    free(cores);
    if (acc)
        hwloc_bitmap_free(acc);
}

/* GPU ranks on one node: ranks whose GPUs share a locality (a package, a NUMA node) split
 * its cores, in GPU order. */
static void hlx_place_gpu_cpus(const hlx_place_ctx_t *x, hlx_placement_t *p, int node)
{
    const hlx_topo_t *t = x->t;
    int r, q;

    for (r = 0; r < p->nranks; r++) {
        hlx_rank_place_t *rp = &p->ranks[r];
        const hlx_topo_gpu_t *g;
        hwloc_obj_t anc;
        int j = 0, m = 0;
        if (rp->node != node)
            continue;
        g = &t->gpus[rp->gpu];
        anc = hwloc_get_non_io_ancestor_obj(t->hw, t->gpu_obj[rp->gpu]);
        rp->numa = g->numa;
        rp->cuda_device = g->cuda_device;
        if (anc == NULL || anc->cpuset == NULL)
            continue;
        for (q = 0; q < p->nranks; q++) {
            const hlx_rank_place_t *o = &p->ranks[q];
            if (o->node != node || strcmp(t->gpus[o->gpu].cpuset, g->cpuset))
                continue;
            m++;
            if (o->gpu < rp->gpu)
                j++;
        }
        hlx_place_share(t, anc->cpuset, j, m, rp->cpuset, sizeof(rp->cpuset));
    }
}

/* CPU-only ranks on one host: spread over the NUMA nodes that have cores, in order, then
 * each NUMA node's ranks split its cores. */
static void hlx_place_host_cpus(const hlx_place_ctx_t *x, hlx_placement_t *p, int node)
{
    const hlx_topo_t *t = x->t;
    int nn = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_NUMANODE), i, r, m = 0, j, nuse = 0;
    hwloc_obj_t *numa = malloc(sizeof(*numa) * (size_t)(nn + 1));
    hwloc_obj_t probe[1];

    if (numa == NULL)
        return;
    for (i = 0; i < nn; i++) {
        hwloc_obj_t o = hwloc_get_obj_by_type(t->hw, HWLOC_OBJ_NUMANODE, i);
        if (o->cpuset && hlx_place_cores_in(t, o->cpuset, probe, 1) > 0) {
            int dup = 0, k;
            /* several NUMA nodes (e.g. HBM) can share one locality: count it once */
            for (k = 0; k < nuse; k++)
                dup |= hwloc_bitmap_isequal(numa[k]->cpuset, o->cpuset);
            if (!dup)
                numa[nuse++] = o;
        }
    }
    for (r = 0; r < p->nranks; r++)
        m += p->ranks[r].node == node;
    for (r = 0, j = 0; r < p->nranks; r++) {
        hlx_rank_place_t *rp = &p->ranks[r];
        if (rp->node != node)
            continue;
        if (nuse == 0) {
            hlx_place_share(t, hwloc_get_root_obj(t->hw)->cpuset, j, m, rp->cpuset,
                            sizeof(rp->cpuset));
        } else if (m <= nuse) {
            /* fewer ranks than NUMA nodes: each takes whole NUMA nodes */
            int a = (int)((long)j * nuse / m), b = (int)((long)(j + 1) * nuse / m), k;
            hwloc_bitmap_t acc = hwloc_bitmap_alloc();
            if (acc) {
                for (k = a; k < b; k++)
                    hwloc_bitmap_or(acc, acc, numa[k]->cpuset);
                hwloc_bitmap_list_snprintf(rp->cpuset, sizeof(rp->cpuset), acc);
                hwloc_bitmap_free(acc);
            }
            rp->numa = (int)numa[a]->os_index;
        } else {
            int k = (int)((long)j * nuse / m), first = -1, cnt = 0, q, jj = 0;
            /* ranks of this host that fall on NUMA node k, and our position among them */
            for (q = 0; q < m; q++) {
                if ((int)((long)q * nuse / m) != k)
                    continue;
                if (first < 0)
                    first = q;
                cnt++;
            }
            jj = j - first;
            hlx_place_share(t, numa[k]->cpuset, jj, cnt, rp->cpuset, sizeof(rp->cpuset));
            rp->numa = (int)numa[k]->os_index;
        }
        j++;
    }
    free(numa);
}

/* The NIC a CPU-only rank uses: an RDMA NIC near its cores, else any NIC near them, else
 * the first NIC. */
static int hlx_place_host_nic(const hlx_topo_t *t, const char *cpuset)
{
    hwloc_bitmap_t mine = hwloc_bitmap_alloc(), nic = hwloc_bitmap_alloc();
    int i, best = t->info.nnics > 0 ? 0 : -1, pass;

    if (mine == NULL || nic == NULL || hwloc_bitmap_list_sscanf(mine, cpuset) < 0)
        goto out;
    for (pass = 0; pass < 2; pass++) {
        for (i = 0; i < t->info.nnics; i++) {
            if (pass == 0 && !t->nics[i].rdma)
                continue;
            if (hwloc_bitmap_list_sscanf(nic, t->nics[i].cpuset) == 0 &&
                hwloc_bitmap_intersects(nic, mine)) {
                best = i;
                goto out;
            }
        }
    }
out:
    if (mine)
        hwloc_bitmap_free(mine);
    if (nic)
        hwloc_bitmap_free(nic);
    return best;
}

static hlx_status_t hlx_place_pairs(hlx_placement_t *p)
{
    int n = p->nranks, kvp = p->kvp, tpf = p->tpf, ep = p->ep, g, i, j, max;
    hlx_pair_t *pp;

    long lmax = (long)p->tpa * kvp * (kvp - 1) / 2 + n +
                (ep > 1 ? n + (long)ep * (ep - 1) / 2 * tpf : 0) + 1;

    if (lmax > HLX_PLACE_MAX_PAIRS)
        return HLX_ERR_NOSPACE;
    max = (int)lmax;
    p->pairs = pp = calloc((size_t)max, sizeof(*pp));
    if (pp == NULL)
        return HLX_ERR_NOMEM;
#define HLX_ADD_PAIR(_s, _d, _k) \
    do { \
        pp[p->npairs].src = (_s); \
        pp[p->npairs].dst = (_d); \
        pp[p->npairs].kind = (_k); \
        pp[p->npairs].link = hlx_place_link(p, (_s), (_d)); \
        p->npairs++; \
    } while (0)
    /* attention all-to-all: every pair inside each KVP group */
    for (g = 0; g < p->tpa; g++)
        for (i = 0; i < kvp; i++)
            for (j = i + 1; j < kvp; j++) {
                HLX_ADD_PAIR(g * kvp + i, g * kvp + j, HLX_PAIR_A2A);
                p->a2a_pairs++;
            }
    /* W_o all-reduce over all N ranks (and the FFN's when EP = 1): ring in rank order */
    if (n == 2)
        HLX_ADD_PAIR(0, 1, HLX_PAIR_ALLREDUCE);
    else if (n > 2)
        for (i = 0; i < n; i++)
            HLX_ADD_PAIR(i, (i + 1) % n, HLX_PAIR_ALLREDUCE);
    if (ep > 1) {
        /* FFN all-reduce inside each TPF group (a block of TPF ranks) */
        for (g = 0; g < ep; g++) {
            if (tpf == 2)
                HLX_ADD_PAIR(g * tpf, g * tpf + 1, HLX_PAIR_FFN_ALLREDUCE);
            else if (tpf > 2)
                for (i = 0; i < tpf; i++)
                    HLX_ADD_PAIR(g * tpf + i, g * tpf + (i + 1) % tpf, HLX_PAIR_FFN_ALLREDUCE);
        }
        /* expert all-to-all inside each EP group (ranks with the same tpf_rank) */
        for (g = 0; g < tpf; g++)
            for (i = 0; i < ep; i++)
                for (j = i + 1; j < ep; j++)
                    HLX_ADD_PAIR(i * tpf + g, j * tpf + g, HLX_PAIR_EP_A2A);
    }
#undef HLX_ADD_PAIR
    return HLX_OK;
}

void hlx_placement_free(hlx_placement_t *p)
{
    if (p == NULL)
        return;
    free(p->ranks);
    free(p->pairs);
    free(p);
}

static void hlx_place_ctx_free(hlx_place_ctx_t *x)
{
    int i;
    if (x->doms)
        for (i = 0; i < x->ndoms; i++)
            free(x->doms[i].slots);
    free(x->doms);
    free(x->slots);
    free(x->node_ranks);
}

static hlx_status_t hlx_place_impl(const hlx_cluster_t *cluster, int kvp, int tpa, int ep,
                                   const hlx_topo_t *topo, const int *node_of_rank,
                                   hlx_placement_t **placement_p, char *err, size_t errlen)
{
    hlx_place_ctx_t x;
    hlx_cluster_t own;
    hlx_placement_t *p = NULL;
    int *slot_of_rank = NULL, n, r, q, node, own_cluster = 0;
    hlx_status_t st;

    memset(&x, 0, sizeof(x));
    if (kvp < 1 || tpa < 1 || ep < 1 || (long)kvp * tpa > HLX_PLACE_MAX_RANKS) {
        hlx_topo_seterr(err, errlen, "bad layout: kvp %d, tpa %d, ep %d (each >= 1, N <= %d)",
                        kvp, tpa, ep, HLX_PLACE_MAX_RANKS);
        return HLX_ERR_INVALID;
    }
    n = kvp * tpa;
    if (n % ep != 0) {
        hlx_topo_seterr(err, errlen, "ep %d does not divide N = KVP x TPA = %d", ep, n);
        return HLX_ERR_INVALID;
    }
    if (cluster == NULL) {
        if (topo == NULL) {
            hlx_topo_seterr(err, errlen, "placement needs a cluster or a topology");
            return HLX_ERR_INVALID;
        }
        st = hlx_topo_to_cluster(topo, &own);
        if (st != HLX_OK)
            return st;
        cluster = &own;
        own_cluster = 1;
    }
    if (cluster->nnodes < 1 || cluster->nodes == NULL) {
        hlx_topo_seterr(err, errlen, "cluster \"%s\" has no nodes", cluster->name);
        st = HLX_ERR_INVALID;
        goto out;
    }
    x.c = cluster;
    x.t = topo;
    if (node_of_rank != NULL) {
        x.node_of_rank = node_of_rank;
        x.node_ranks = calloc((size_t)cluster->nnodes, sizeof(int));
        if (x.node_ranks == NULL) {
            st = HLX_ERR_NOMEM;
            goto out;
        }
        for (r = 0; r < n; r++) {
            if (node_of_rank[r] < 0 || node_of_rank[r] >= cluster->nnodes) {
                hlx_topo_seterr(err, errlen, "rank %d: node %d is not in cluster \"%s\" "
                                "(%d nodes)", r, node_of_rank[r], cluster->name, cluster->nnodes);
                st = HLX_ERR_INVALID;
                goto out;
            }
            x.node_ranks[node_of_rank[r]]++;
        }
    }
    st = hlx_place_build_slots(&x, n, err, errlen);
    if (st != HLX_OK)
        goto out;

    p = calloc(1, sizeof(*p));
    slot_of_rank = malloc(sizeof(int) * (size_t)n);
    if (p == NULL || slot_of_rank == NULL ||
        (p->ranks = calloc((size_t)n, sizeof(*p->ranks))) == NULL) {
        st = HLX_ERR_NOMEM;
        goto out;
    }
    p->nranks = n;
    p->kvp = kvp;
    p->tpa = tpa;
    p->ep = ep;
    p->tpf = n / ep;
    p->cpu_only = x.cpu_only;
    if (node_of_rank != NULL)
        hlx_place_fixed(&x, kvp, tpa, slot_of_rank, &p->split_groups);
    else
        hlx_place_groups(&x, kvp, tpa, slot_of_rank, &p->split_groups);

    for (r = 0; r < n; r++) {
        hlx_rank_place_t *rp = &p->ranks[r];
        const hlx_slot_t *s = &x.slots[slot_of_rank[r]];
        const hlx_cluster_node_t *nd = &cluster->nodes[s->node];
        rp->rank = r;
        rp->node = s->node;
        rp->gpu = s->gpu;
        rp->gpu_global = s->gpu >= 0 ? nd->first_gpu + s->gpu : -1;
        rp->cuda_device = -1;
        rp->domain = x.cpu_only ? -1 : s->domain;
        rp->numa = -1;
        rp->nic = -1;
        /* the rank order contract (see topology.h) */
        rp->kvp_rank = r % kvp;
        rp->tpa_rank = r / kvp;
        rp->tpf_rank = r % p->tpf;
        rp->ep_rank = r / p->tpf;
    }
    /* domains in use, renumbered densely in order of first use */
    {
        int *ren = malloc(sizeof(int) * (size_t)(x.ndoms + 1));
        if (ren == NULL) {
            st = HLX_ERR_NOMEM;
            goto out;
        }
        for (q = 0; q < x.ndoms; q++)
            ren[q] = -1;
        for (r = 0; r < n; r++) {
            int d = x.slots[slot_of_rank[r]].domain;
            if (ren[d] < 0)
                ren[d] = p->ndomains++;
            if (!x.cpu_only)
                p->ranks[r].domain = ren[d];
        }
        free(ren);
    }

    for (node = 0; node < cluster->nnodes; node++) {
        int applies = x.cpu_only ? topo != NULL : hlx_place_topo_applies(&x, node);
        if (!applies) {
            for (r = 0; r < n; r++) {
                hlx_rank_place_t *rp = &p->ranks[r];
                int nics = cluster->nodes[node].nics, gpus = cluster->nodes[node].gpus;
                if (rp->node != node || nics <= 0)
                    continue;
                rp->nic = x.cpu_only || gpus <= 0 ? 0 : (int)((long)rp->gpu * nics / gpus);
                snprintf(rp->nic_name, sizeof(rp->nic_name), "nic%d", rp->nic);
            }
            continue;
        }
        if (x.cpu_only)
            hlx_place_host_cpus(&x, p, node);
        else
            hlx_place_gpu_cpus(&x, p, node);
        for (r = 0; r < n; r++) {
            hlx_rank_place_t *rp = &p->ranks[r];
            if (rp->node != node)
                continue;
            rp->nic = x.cpu_only ? hlx_place_host_nic(topo, rp->cpuset) : topo->gpus[rp->gpu].nic;
            if (rp->nic >= 0)
                snprintf(rp->nic_name, sizeof(rp->nic_name), "%s", topo->nics[rp->nic].name);
        }
    }

    /* between nodes: RDMA when the cluster has it (on every host, for CPU-only runs) */
    p->internode = cluster->link[HLX_LINK_RDMA].bw_gbps > 0 ? HLX_LINK_RDMA : HLX_LINK_TCP;
    for (node = 0; node < cluster->nnodes && x.cpu_only; node++)
        if (cluster->nodes[node].nics <= 0)
            p->internode = HLX_LINK_TCP;
    st = hlx_place_pairs(p);
    if (st == HLX_ERR_NOSPACE)
        hlx_topo_seterr(err, errlen, "layout KVP %d x TPA %d (EP %d) has more than %ld "
                        "exchanging pairs to list", kvp, tpa, ep, HLX_PLACE_MAX_PAIRS);
    if (st != HLX_OK)
        goto out;
    for (q = 0; q < p->npairs; q++) {
        const hlx_pair_t *pp = &p->pairs[q];
        const hlx_slot_t *sa = &x.slots[slot_of_rank[pp->src]];
        const hlx_slot_t *sb = &x.slots[slot_of_rank[pp->dst]];
        if (pp->kind == HLX_PAIR_A2A && sa->domain != sb->domain)
            p->a2a_cross_pairs++;
    }
    *placement_p = p;
    p = NULL;

out:
    hlx_placement_free(p);
    free(slot_of_rank);
    hlx_place_ctx_free(&x);
    if (own_cluster)
        hlx_cluster_free(&own);
    return st;
}

hlx_status_t hlx_place(const hlx_cluster_t *cluster, int kvp, int tpa, int ep,
                       const hlx_topo_t *topo, hlx_placement_t **placement_p, char *err,
                       size_t errlen)
{
    return hlx_place_impl(cluster, kvp, tpa, ep, topo, NULL, placement_p, err, errlen);
}

hlx_status_t hlx_place_on_nodes(const hlx_cluster_t *cluster, int kvp, int tpa, int ep,
                                const hlx_topo_t *topo, const int *node_of_rank,
                                hlx_placement_t **placement_p, char *err, size_t errlen)
{
    if (cluster == NULL || node_of_rank == NULL) {
        hlx_topo_seterr(err, errlen, "placement on given nodes needs a cluster and a node "
                        "per rank");
        return HLX_ERR_INVALID;
    }
    return hlx_place_impl(cluster, kvp, tpa, ep, topo, node_of_rank, placement_p, err, errlen);
}

/* Computed from the two ranks rather than stored: O(N) memory for any N. */
hlx_link_t hlx_place_link(const hlx_placement_t *p, int a, int b)
{
    const hlx_rank_place_t *ra, *rb;

    if (p == NULL || p->ranks == NULL || a < 0 || b < 0 || a >= p->nranks || b >= p->nranks)
        return HLX_LINK_COUNT;
    if (a == b)
        return HLX_LINK_SELF;
    ra = &p->ranks[a];
    rb = &p->ranks[b];
    if (p->cpu_only)
        return ra->node == rb->node ? HLX_LINK_SHM : p->internode;
    if (ra->domain == rb->domain)
        return HLX_LINK_NVLINK; /* one domain may span nodes (NVL72) */
    return ra->node == rb->node ? HLX_LINK_PCIE : p->internode;
}

static double hlx_place_bw(const hlx_cluster_t *c, hlx_link_t l)
{
    /* a class the cluster leaves at 0 is charged 1 GB/s rather than infinity */
    double bw = c->link[l].bw_gbps;
    return bw > 0 ? bw : 1.0;
}

hlx_status_t hlx_place_a2a_cost(const hlx_placement_t *p, const hlx_cluster_t *c,
                                double pair_bytes, hlx_place_cost_t *cost_p)
{
    hlx_place_cost_t cost;
    hlx_link_t ideal;
    int r, q, l;

    if (p == NULL || c == NULL || !(pair_bytes >= 0))
        return HLX_ERR_INVALID;
    memset(&cost, 0, sizeof(cost));
    cost.worst_link = HLX_LINK_SELF;
    for (r = 0; r < p->nranks; r++) {
        double bytes[HLX_LINK_COUNT] = { 0 }, t = 0;
        int g = r / p->kvp;
        for (q = g * p->kvp; q < (g + 1) * p->kvp; q++) {
            hlx_link_t lk = hlx_place_link(p, r, q);
            if (q == r)
                continue;
            bytes[lk] += pair_bytes;
            if (lk > cost.worst_link)
                cost.worst_link = lk;
        }
        /* link classes run side by side; each one's bytes share its bandwidth */
        for (l = 0; l < HLX_LINK_COUNT; l++) {
            double tl;
            if (bytes[l] <= 0)
                continue;
            tl = c->link[l].latency_us + bytes[l] / (hlx_place_bw(c, (hlx_link_t)l) * 1e3);
            if (tl > t)
                t = tl;
        }
        if (t > cost.a2a_us)
            cost.a2a_us = t;
    }
    ideal = p->cpu_only ? HLX_LINK_SHM : HLX_LINK_NVLINK;
    if (p->kvp > 1)
        cost.a2a_us_ideal = c->link[ideal].latency_us +
                            (p->kvp - 1) * pair_bytes / (hlx_place_bw(c, ideal) * 1e3);
    cost.cross_bytes = 2.0 * p->a2a_cross_pairs * pair_bytes;
    *cost_p = cost;
    return HLX_OK;
}

int hlx_place_warning(const hlx_placement_t *p, const hlx_cluster_t *c, double pair_bytes,
                      char *buf, size_t len)
{
    hlx_place_cost_t cost;

    if (len > 0)
        buf[0] = '\0';
    if (p == NULL || p->a2a_cross_pairs == 0)
        return 0;
    if (c == NULL || hlx_place_a2a_cost(p, c, pair_bytes, &cost) != HLX_OK) {
        snprintf(buf, len,
                 "warning: %d of %d KVP groups (KVP = %d) do not fit in one %s: %d of %d "
                 "all-to-all pairs cross them\n",
                 p->split_groups, p->tpa, p->kvp, p->cpu_only ? "host" : "NVLink domain",
                 p->a2a_cross_pairs, p->a2a_pairs);
        return 1;
    }
    snprintf(buf, len,
             "warning: %d of %d KVP groups (KVP = %d) do not fit in one %s: %d of %d "
             "all-to-all pairs cross them, the slowest over %s (%g GB/s, %g us).\n"
             "  cost at %.0f bytes per pair: all-to-all about %.1f us per layer instead of "
             "%.1f us on %s; %.3f MB per step cross.\n",
             p->split_groups, p->tpa, p->kvp, p->cpu_only ? "host" : "NVLink domain",
             p->a2a_cross_pairs, p->a2a_pairs, hlx_link_name(cost.worst_link),
             c->link[cost.worst_link].bw_gbps, c->link[cost.worst_link].latency_us, pair_bytes,
             cost.a2a_us, cost.a2a_us_ideal, p->cpu_only ? "shm" : "nvlink",
             cost.cross_bytes / 1e6);
    return 1;
}
