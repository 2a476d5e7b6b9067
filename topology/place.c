/* Rank placement: KVP x TPA attention ranks (and the TPF x EP FFN grid over the same
 * processes) onto the slots of a cluster (GPUs, or hosts for CPU-only runs), keeping each
 * KVP all-to-all group inside one NVLink domain when it fits, then cores, NUMA node, NIC
 * and the link class of every pair that exchanges data in a layer. */
#define _GNU_SOURCE
#include "topo_int.h"
#include "hlx_log.h"

#include <limits.h>
#include <stdint.h>
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
    int *slots;     /* slot indices in order (a share of hlx_place_ctx_t.dom_slots) */
    int  nslots, next;
} hlx_dom_t;

typedef struct {
    const hlx_cluster_t *c;
    const hlx_topo_t    *t;
    int                  cpu_only, nslots, ndoms;
    hlx_slot_t          *slots;
    hlx_dom_t           *doms;
    int                 *dom_slots;    /* every domain's slot list, one after the other */
    const int           *node_of_rank; /* the launcher's hosts (hlx_place_on_nodes), or NULL */
    int                 *node_ranks;   /* ... ranks on each node */
} hlx_place_ctx_t;

/* Dense domain ids by (key_a, key_b), in order of first appearance: open addressing, grown
 * at half load, so that ids cost O(1) per slot on a cluster of a million GPUs. */
typedef struct {
    int key_a, key_b, id; /* id -1: empty */
} hlx_dom_key_t;

typedef struct {
    hlx_dom_key_t *tab;
    size_t         cap, used; /* cap: a power of 2 */
} hlx_dom_map_t;

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

static size_t hlx_dom_map_pos(size_t cap, int ka, int kb)
{
    uint64_t h = (uint64_t)(uint32_t)ka << 32 | (uint32_t)kb;
    h ^= h >> 33; /* murmur3's finalizer: consecutive keys spread over the table */
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return (size_t)h & (cap - 1);
}

static hlx_status_t hlx_dom_map_grow(hlx_dom_map_t *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64, i, k;
    hlx_dom_key_t *tab;

    if (cap > SIZE_MAX / sizeof(*tab))
        return HLX_ERR_NOMEM;
    tab = malloc(cap * sizeof(*tab));
    if (tab == NULL)
        return HLX_ERR_NOMEM;
    for (i = 0; i < cap; i++)
        tab[i].id = -1;
    for (i = 0; i < m->cap; i++) {
        const hlx_dom_key_t *e = &m->tab[i];
        if (e->id < 0)
            continue;
        k = hlx_dom_map_pos(cap, e->key_a, e->key_b);
        while (tab[k].id >= 0)
            k = (k + 1) & (cap - 1);
        tab[k] = *e;
    }
    free(m->tab);
    m->tab = tab;
    m->cap = cap;
    return HLX_OK;
}

/* The id of the first slot with these keys, or the next new id (x->ndoms). */
static hlx_status_t hlx_place_domain_id(hlx_place_ctx_t *x, hlx_dom_map_t *m, int ka, int kb,
                                        int *id_p)
{
    size_t k;
    hlx_status_t st;

    if ((m->used + 1) * 2 > m->cap && (st = hlx_dom_map_grow(m)) != HLX_OK)
        return st;
    for (k = hlx_dom_map_pos(m->cap, ka, kb); m->tab[k].id >= 0; k = (k + 1) & (m->cap - 1)) {
        if (m->tab[k].key_a == ka && m->tab[k].key_b == kb) {
            *id_p = m->tab[k].id;
            return HLX_OK;
        }
    }
    m->tab[k].key_a = ka;
    m->tab[k].key_b = kb;
    m->tab[k].id = *id_p = x->ndoms++;
    m->used++;
    return HLX_OK;
}

static hlx_status_t hlx_place_build_slots(hlx_place_ctx_t *x, int nranks, char *err,
                                          size_t errlen)
{
    const hlx_cluster_t *c = x->c;
    hlx_dom_map_t map = { NULL, 0, 0 };
    hlx_status_t st = HLX_OK;
    long total = 0;
    int n, g, i, off, per_host = 0, warned = 0, map_all = 0;

    for (n = 0; n < c->nnodes; n++)
        total += c->nodes[n].gpus > 0 ? c->nodes[n].gpus : 0;
    x->cpu_only = total == 0;
    if (x->node_of_rank != NULL) {
        /* ranks are already on their hosts: a host takes as many slots as it has ranks */
        for (n = 0; n < c->nnodes; n++) {
            if (!x->cpu_only && x->node_ranks[n] > c->nodes[n].gpus) {
                hlx_topo_seterr(err, errlen, "node %s runs %d rank(s) but has %d GPU(s) "
                                "(HELIX_GPU_SHARE=1 lets ranks share them)",
                                c->nodes[n].name, x->node_ranks[n], c->nodes[n].gpus);
                return HLX_ERR_INVALID;
            }
        }
        if (x->cpu_only)
            total = nranks;
    } else if (x->cpu_only) {
        per_host = (nranks + c->nnodes - 1) / c->nnodes;
        total = (long)per_host * c->nnodes;
    }
    if (total > INT_MAX) {
        hlx_topo_seterr(err, errlen, "cluster \"%s\" has %ld slots, more than %d", c->name,
                        total, INT_MAX);
        return HLX_ERR_INVALID;
    }
    if (total < nranks) {
        hlx_topo_seterr(err, errlen,
                        "layout needs N = KVP x TPA = %d GPUs; cluster \"%s\" has %d", nranks,
                        c->name, (int)total);
        return HLX_ERR_INVALID;
    }
    x->slots = calloc((size_t)total, sizeof(*x->slots));
    if (x->slots == NULL)
        return HLX_ERR_NOMEM;
    x->nslots = (int)total;
    /* With domain ids >= 0 (as a cluster file has them), a key first seen here is new
     * without a lookup when it cannot have come before: a host's (CPU-only: its slots are
     * consecutive) or a GPU's without NVLink (key_a < 0, one slot each); only NVLink keys,
     * which nodes share, go through the map (a million one-GPU domains cost no hashing). */
    for (n = 0; n < c->nnodes; n++)
        map_all |= c->nodes[n].domain < 0;

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
            /* most slots share the previous one's domain: no lookup for them */
            if (i > 0 && s[-1].key_a == s->key_a && s[-1].key_b == s->key_b)
                s->domain = s[-1].domain;
            else if (!map_all && (x->cpu_only || s->key_a < 0))
                s->domain = x->ndoms++;
            else if ((st = hlx_place_domain_id(x, &map, s->key_a, s->key_b, &s->domain)) !=
                     HLX_OK)
                goto out;
        }
    }

    /* each domain's slots, in slot order, as shares of one array */
    x->doms = calloc((size_t)x->ndoms, sizeof(*x->doms));
    x->dom_slots = malloc(sizeof(int) * (size_t)total);
    if (x->doms == NULL || x->dom_slots == NULL) {
        st = HLX_ERR_NOMEM;
        goto out;
    }
    for (i = 0; i < x->nslots; i++)
        x->doms[x->slots[i].domain].nslots++;
    for (i = 0, off = 0; i < x->ndoms; i++) {
        x->doms[i].slots = x->dom_slots + off;
        off += x->doms[i].nslots;
        x->doms[i].nslots = 0;
    }
    for (i = 0; i < x->nslots; i++) {
        hlx_dom_t *d = &x->doms[x->slots[i].domain];
        d->slots[d->nslots++] = i;
    }
out:
    free(map.tab);
    return st;
}

static int hlx_dom_free(const hlx_place_ctx_t *x, int d)
{
    return x->doms[d].nslots - x->doms[d].next;
}

/* Heap order for the split groups: more free slots first, then the lower domain index. */
static int hlx_dom_before(const hlx_place_ctx_t *x, int a, int b)
{
    int fa = hlx_dom_free(x, a), fb = hlx_dom_free(x, b);
    return fa > fb || (fa == fb && a < b);
}

static void hlx_dom_sift_down(const hlx_place_ctx_t *x, int *heap, int n, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, top = i, tmp;
        if (l < n && hlx_dom_before(x, heap[l], heap[top]))
            top = l;
        if (r < n && hlx_dom_before(x, heap[r], heap[top]))
            top = r;
        if (top == i)
            return;
        tmp = heap[i];
        heap[i] = heap[top];
        heap[top] = tmp;
        i = top;
    }
}

/* Groups of KVP consecutive ranks: first every group that fits whole goes to the first
 * domain with room (first fit is optimal for equal-size groups), then each remaining group
 * takes the largest free shares first, which maximizes the pairs kept inside a domain.
 * A domain's free count only falls, so once it is below KVP the first fit never looks at
 * it again (a cursor), and the groups left over are the last ones; every domain then has
 * fewer than KVP free slots, and a binary heap yields the largest (lowest index on ties). */
static hlx_status_t hlx_place_groups(hlx_place_ctx_t *x, int kvp, int tpa, int *slot_of_rank,
                                     int *split_p)
{
    int grp, d = 0, k, nheap = 0, *heap;

    for (grp = 0; grp < tpa; grp++) {
        hlx_dom_t *dm;
        while (d < x->ndoms && hlx_dom_free(x, d) < kvp)
            d++;
        if (d == x->ndoms)
            break;
        dm = &x->doms[d];
        for (k = 0; k < kvp; k++)
            slot_of_rank[grp * kvp + k] = dm->slots[dm->next++];
    }
    *split_p = tpa - grp;
    if (grp == tpa)
        return HLX_OK;

    heap = malloc(sizeof(int) * (size_t)x->ndoms);
    if (heap == NULL)
        return HLX_ERR_NOMEM;
    for (d = 0; d < x->ndoms; d++)
        if (hlx_dom_free(x, d) > 0)
            heap[nheap++] = d;
    for (k = nheap / 2 - 1; k >= 0; k--)
        hlx_dom_sift_down(x, heap, nheap, k);
    for (; grp < tpa; grp++) {
        k = 0;
        while (k < kvp && nheap > 0) { /* the heap never empties first: capacity was checked */
            hlx_dom_t *dm = &x->doms[heap[0]];
            while (k < kvp && dm->next < dm->nslots)
                slot_of_rank[grp * kvp + k++] = dm->slots[dm->next++];
            if (dm->next == dm->nslots)
                heap[0] = heap[--nheap];
            hlx_dom_sift_down(x, heap, nheap, 0);
        }
    }
    free(heap);
    return HLX_OK;
}

/* Ranks already on their hosts: the k-th rank of a node (in rank order) takes that node's
 * k-th slot; a group counts as split when its ranks span several domains. */
static hlx_status_t hlx_place_fixed(hlx_place_ctx_t *x, int kvp, int tpa, int *slot_of_rank,
                                    int *split_p)
{
    int n = kvp * tpa, r, i, grp, split = 0;
    int *next = calloc((size_t)x->c->nnodes, sizeof(int));

    if (next == NULL)
        return HLX_ERR_NOMEM;
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
    return HLX_OK;
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

typedef struct {
    const char *cpuset; /* the GPU's locality */
    int         gpu, idx; /* idx: position in the node's rank list */
} hlx_place_loc_t;

static int hlx_place_loc_cmp(const void *pa, const void *pb)
{
    const hlx_place_loc_t *a = pa, *b = pb;
    int c = strcmp(a->cpuset, b->cpuset);
    if (c != 0)
        return c;
    return (a->gpu > b->gpu) - (a->gpu < b->gpu);
}

/* GPU ranks on one node (rl: its m ranks, in rank order): ranks whose GPUs share a locality
 * (a package, a NUMA node) split its cores, in GPU order. Sorted by (locality, GPU), a
 * rank's share index is its offset in its run of equal localities (ranks on a lower GPU
 * before it) and the run's length is the number of sharers. */
static hlx_status_t hlx_place_gpu_cpus(const hlx_place_ctx_t *x, hlx_placement_t *p,
                                       const int *rl, int m)
{
    const hlx_topo_t *t = x->t;
    hlx_place_loc_t *loc = malloc(sizeof(*loc) * (size_t)m);
    int *share = malloc(sizeof(int) * 2 * (size_t)m); /* j then count, by list position */
    int i, run, first = 0;

    if (loc == NULL || share == NULL) {
        free(loc);
        free(share);
        return HLX_ERR_NOMEM;
    }
    for (i = 0; i < m; i++) {
        int gpu = p->ranks[rl[i]].gpu;
        loc[i] = (hlx_place_loc_t){ t->gpus[gpu].cpuset, gpu, i };
    }
    qsort(loc, (size_t)m, sizeof(*loc), hlx_place_loc_cmp);
    for (run = 0; run < m; run = i) {
        int end = run + 1;
        while (end < m && strcmp(loc[end].cpuset, loc[run].cpuset) == 0)
            end++;
        for (i = run; i < end; i++) {
            if (i == run || loc[i].gpu != loc[i - 1].gpu)
                first = i; /* the run's first entry on this GPU */
            share[2 * loc[i].idx] = first - run;
            share[2 * loc[i].idx + 1] = end - run;
        }
    }
    for (i = 0; i < m; i++) {
        hlx_rank_place_t *rp = &p->ranks[rl[i]];
        const hlx_topo_gpu_t *g = &t->gpus[rp->gpu];
        hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t->hw, t->gpu_obj[rp->gpu]);
        rp->numa = g->numa;
        rp->cuda_device = g->cuda_device;
        if (anc == NULL || anc->cpuset == NULL)
            continue;
        hlx_place_share(t, anc->cpuset, share[2 * i], share[2 * i + 1], rp->cpuset,
                        sizeof(rp->cpuset));
    }
    free(loc);
    free(share);
    return HLX_OK;
}

/* CPU-only ranks on one host (rl: its m ranks, in rank order): spread over the NUMA nodes
 * that have cores, in order, then each NUMA node's ranks split its cores. */
static hlx_status_t hlx_place_host_cpus(const hlx_place_ctx_t *x, hlx_placement_t *p,
                                        const int *rl, int m)
{
    const hlx_topo_t *t = x->t;
    int nn = hwloc_get_nbobjs_by_type(t->hw, HWLOC_OBJ_NUMANODE), i, j, nuse = 0;
    hwloc_obj_t *numa = malloc(sizeof(*numa) * (size_t)(nn + 1));
    hwloc_obj_t probe[1];

    if (numa == NULL)
        return HLX_ERR_NOMEM;
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
    for (j = 0; j < m; j++) {
        hlx_rank_place_t *rp = &p->ranks[rl[j]];
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
            /* rank q of m goes to NUMA node floor(q * nuse / m): node k takes the ranks from
             * ceil(k * m / nuse) up to ceil((k + 1) * m / nuse), and we are one of them */
            int  k = (int)((long)j * nuse / m);
            long first = ((long)k * m + nuse - 1) / nuse;
            long end = ((long)(k + 1) * m + nuse - 1) / nuse;
            hlx_place_share(t, numa[k]->cpuset, j - (int)first, (int)(end - first), rp->cpuset,
                            sizeof(rp->cpuset));
            rp->numa = (int)numa[k]->os_index;
        }
    }
    free(numa);
    return HLX_OK;
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

/* Cores, NUMA node and NIC of every rank, node by node: the ranks are bucketed by node
 * first (in rank order), so that the work is O(N + nodes), not O(N x nodes). */
static hlx_status_t hlx_place_nodes(const hlx_place_ctx_t *x, hlx_placement_t *p)
{
    const hlx_cluster_t *cluster = x->c;
    const hlx_topo_t    *topo = x->t;
    int n = p->nranks, nnodes = cluster->nnodes, node, r, i;
    int *first = calloc((size_t)nnodes + 1, sizeof(int));
    int *list = malloc(sizeof(int) * (size_t)n);
    hlx_status_t st = HLX_OK;

    if (first == NULL || list == NULL) {
        st = HLX_ERR_NOMEM;
        goto out;
    }
    for (r = 0; r < n; r++)
        first[p->ranks[r].node + 1]++;
    for (node = 0; node < nnodes; node++)
        first[node + 1] += first[node];
    for (r = 0; r < n; r++)
        list[first[p->ranks[r].node]++] = r;
    for (node = nnodes; node > 0; node--) /* first[node] ran up to the next node's start */
        first[node] = first[node - 1];
    first[0] = 0;

    for (node = 0; node < nnodes; node++) {
        const int *rl = list + first[node];
        int m = first[node + 1] - first[node];
        int applies = x->cpu_only ? topo != NULL : hlx_place_topo_applies(x, node);
        if (m == 0)
            continue;
        if (!applies) {
            int nics = cluster->nodes[node].nics, gpus = cluster->nodes[node].gpus;
            for (i = 0; i < m && nics > 0; i++) {
                hlx_rank_place_t *rp = &p->ranks[rl[i]];
                rp->nic = x->cpu_only || gpus <= 0 ? 0 : (int)((long)rp->gpu * nics / gpus);
                snprintf(rp->nic_name, sizeof(rp->nic_name), "nic%d", rp->nic);
            }
            continue;
        }
        st = x->cpu_only ? hlx_place_host_cpus(x, p, rl, m) : hlx_place_gpu_cpus(x, p, rl, m);
        if (st != HLX_OK)
            goto out;
        for (i = 0; i < m; i++) {
            hlx_rank_place_t *rp = &p->ranks[rl[i]];
            rp->nic = x->cpu_only ? hlx_place_host_nic(topo, rp->cpuset) : topo->gpus[rp->gpu].nic;
            if (rp->nic >= 0)
                snprintf(rp->nic_name, sizeof(rp->nic_name), "%s", topo->nics[rp->nic].name);
        }
    }
out:
    free(first);
    free(list);
    return st;
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
    free(x->dom_slots);
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
    st = node_of_rank != NULL ? hlx_place_fixed(&x, kvp, tpa, slot_of_rank, &p->split_groups)
                              : hlx_place_groups(&x, kvp, tpa, slot_of_rank, &p->split_groups);
    if (st != HLX_OK)
        goto out;

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

    st = hlx_place_nodes(&x, p);
    if (st != HLX_OK)
        goto out;

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
