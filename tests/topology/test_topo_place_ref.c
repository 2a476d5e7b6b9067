/* topology: placement against a reference. Generated clusters are placed both by hlx_place
 * and by the straightforward O(slots^2) algorithm written out below (the policy of
 * docs/topology.md), which must agree rank for rank; then clusters of a million GPUs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <helix/topology.h>
#include "hlx_config.h"
#define HLX_TEST_TOPO
#include "hlx_test_files.h"
#include "hlx_test_place.h"

#define DATA HLX_SOURCE_ROOT "/tests/data/topology/"

/* ---- the reference: every step done the plain way ------------------------------------ */

typedef struct {
    int  nranks, split, ndomains;
    int *node, *gpu, *domain; /* per rank; domain: dense in order of first use, -1 CPU-only */
} ref_t;

static void ref_free(ref_t *r)
{
    free(r->node);
    free(r->gpu);
    free(r->domain);
}

/* Slots node-major; a slot's domain is the one of the first earlier slot with the same keys
 * (a scan), else a new one; groups of KVP go first fit, scanning from domain 0 each time;
 * the groups left take, again and again, the domain with the most free slots (a scan, the
 * lowest index winning ties). */
static void ref_place(const hlx_cluster_t *c, const hlx_topo_t *t, int kvp, int tpa, ref_t *out)
{
    hlx_topo_info_t ti;
    int n = kvp * tpa, total = 0, per_host = 0, cpu_only, nd, i, k, s, d, g, grp, ndoms = 0;
    int *snode, *sgpu, *ska, *skb, *sdom, *dcount, *dfirst, *dnext, *dlist, *slot, *ren;
    char *placed;

    memset(&ti, 0, sizeof(ti));
    if (t != NULL)
        hlx_topo_get_info(t, &ti);
    for (nd = 0; nd < c->nnodes; nd++)
        total += c->nodes[nd].gpus > 0 ? c->nodes[nd].gpus : 0;
    cpu_only = total == 0;
    if (cpu_only) {
        per_host = (n + c->nnodes - 1) / c->nnodes;
        total = per_host * c->nnodes;
    }
    assert_true(total >= n);
    snode = calloc((size_t)total, sizeof(int));
    sgpu = calloc((size_t)total, sizeof(int));
    ska = calloc((size_t)total, sizeof(int));
    skb = calloc((size_t)total, sizeof(int));
    sdom = calloc((size_t)total, sizeof(int));
    assert_true(snode && sgpu && ska && skb && sdom);
    for (nd = 0, s = 0; nd < c->nnodes; nd++) {
        const hlx_cluster_node_t *node = &c->nodes[nd];
        int applies = t != NULL && ti.ngpus == node->gpus;
        int topo_nv = applies && ti.ndomains < ti.ngpus;
        int cnt = cpu_only ? per_host : node->gpus;
        for (g = 0; g < cnt; g++, s++) {
            snode[s] = nd;
            sgpu[s] = cpu_only ? -1 : g;
            if (cpu_only) {
                ska[s] = nd;
                skb[s] = 0;
            } else if (applies ? topo_nv : node->nvlink) {
                ska[s] = node->domain;
                skb[s] = applies ? hlx_topo_gpu(t, g)->domain : 0;
            } else {
                ska[s] = -1 - nd;
                skb[s] = g;
            }
            sdom[s] = -1;
            for (i = 0; i < s && sdom[s] < 0; i++)
                if (ska[i] == ska[s] && skb[i] == skb[s])
                    sdom[s] = sdom[i];
            if (sdom[s] < 0)
                sdom[s] = ndoms++;
        }
    }
    /* each domain's slots in slot order: dlist[dfirst[d] ..] */
    dcount = calloc((size_t)ndoms, sizeof(int));
    dfirst = calloc((size_t)ndoms + 1, sizeof(int));
    dnext = calloc((size_t)ndoms, sizeof(int));
    dlist = calloc((size_t)total, sizeof(int));
    slot = calloc((size_t)n, sizeof(int));
    placed = calloc((size_t)tpa, 1);
    ren = calloc((size_t)ndoms, sizeof(int));
    assert_true(dcount && dfirst && dnext && dlist && slot && placed && ren);
    for (s = 0; s < total; s++)
        dcount[sdom[s]]++;
    for (d = 0; d < ndoms; d++)
        dfirst[d + 1] = dfirst[d] + dcount[d];
    for (s = 0; s < total; s++)
        dlist[dfirst[sdom[s]] + dnext[sdom[s]]++] = s;
    memset(dnext, 0, sizeof(int) * (size_t)ndoms);

    for (grp = 0; grp < tpa; grp++)
        for (d = 0; d < ndoms; d++) {
            if (dcount[d] - dnext[d] < kvp)
                continue;
            for (k = 0; k < kvp; k++)
                slot[grp * kvp + k] = dlist[dfirst[d] + dnext[d]++];
            placed[grp] = 1;
            break;
        }
    out->split = 0;
    for (grp = 0; grp < tpa; grp++) {
        if (placed[grp])
            continue;
        out->split++;
        for (k = 0; k < kvp;) {
            int best = -1;
            for (d = 0; d < ndoms; d++) {
                int f = dcount[d] - dnext[d];
                if (f > 0 && (best < 0 || f > dcount[best] - dnext[best]))
                    best = d;
            }
            assert_true(best >= 0);
            while (k < kvp && dnext[best] < dcount[best])
                slot[grp * kvp + k++] = dlist[dfirst[best] + dnext[best]++];
        }
    }

    out->nranks = n;
    out->ndomains = 0;
    out->node = calloc((size_t)n, sizeof(int));
    out->gpu = calloc((size_t)n, sizeof(int));
    out->domain = calloc((size_t)n, sizeof(int));
    assert_true(out->node && out->gpu && out->domain);
    for (d = 0; d < ndoms; d++)
        ren[d] = -1;
    for (i = 0; i < n; i++) {
        d = sdom[slot[i]];
        if (ren[d] < 0)
            ren[d] = out->ndomains++;
        out->node[i] = snode[slot[i]];
        out->gpu[i] = sgpu[slot[i]];
        out->domain[i] = cpu_only ? -1 : ren[d];
    }
    free(snode);
    free(sgpu);
    free(ska);
    free(skb);
    free(sdom);
    free(dcount);
    free(dfirst);
    free(dnext);
    free(dlist);
    free(slot);
    free(placed);
    free(ren);
}

/* ---- generated clusters ------------------------------------------------------------------ */

static unsigned long long rng = 0x9e3779b97f4a7c15ULL;

static int rnd(int n)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int)((rng >> 33) % (unsigned long long)n);
}

enum { GEN_MIXED, GEN_NVLINK, GEN_PCIE, GEN_CPU, GEN_TOPO, GEN_KINDS };

/* A cluster of one kind: mixed (node sizes 0 to 12, NVLink or not, domains shared by any
 * nodes, in any order, now and then negative ids), NVLink domains of consecutive nodes, no
 * NVLink at all (one-GPU domains), CPU-only hosts, or nodes the size of the topology's
 * machine (tgpus GPUs, tnvlink: whether it has NVLink). */
static void gen_cluster(hlx_cluster_t *c, int kind, int tgpus, int tnvlink)
{
    static const int sizes[] = { 0, 1, 2, 3, 4, 6, 8, 12 };
    int nnodes = 1 + rnd(kind == GEN_PCIE || kind == GEN_NVLINK ? 80 : 24), npd = 1 + rnd(4);
    int negative = kind == GEN_MIXED && rnd(6) == 0, i, g = 0;

    memset(c, 0, sizeof(*c));
    snprintf(c->name, sizeof(c->name), "gen%d", kind);
    c->nnodes = nnodes;
    c->nodes = calloc((size_t)nnodes, sizeof(*c->nodes));
    assert_non_null(c->nodes);
    for (i = 0; i < nnodes; i++) {
        hlx_cluster_node_t *nd = &c->nodes[i];
        snprintf(nd->name, sizeof(nd->name), "n%d", i);
        nd->nics = rnd(3);
        nd->domain = i / npd;
        switch (kind) {
        case GEN_MIXED:
            nd->gpus = sizes[rnd(8)];
            nd->nvlink = rnd(3) != 0;
            if (rnd(2))
                nd->domain = rnd(nnodes / 2 + 1); /* shared by nodes far apart */
            if (negative) /* outside the contract, but placed alike: keys as a PCIe node's */
                nd->domain = -1 - rnd(nnodes);
            break;
        case GEN_NVLINK:
            nd->gpus = 1 + rnd(8);
            nd->nvlink = 1;
            break;
        case GEN_PCIE:
            nd->gpus = 1 + rnd(12);
            break;
        case GEN_CPU:
            break;
        default:
            nd->gpus = rnd(4) ? tgpus : 1 + rnd(8); /* most nodes: the topology applies */
            nd->nvlink = nd->gpus == tgpus ? tnvlink : rnd(2); /* agreeing: no warning */
            break;
        }
        nd->first_gpu = g;
        g += nd->gpus;
        if (nd->domain + 1 > c->ndomains)
            c->ndomains = nd->domain + 1;
    }
    c->total_gpus = g;
    c->link[HLX_LINK_NVLINK].bw_gbps = 450;
    c->link[HLX_LINK_RDMA].bw_gbps = rnd(2) ? 50 : 0;
    c->link[HLX_LINK_TCP].bw_gbps = 5;
}

/* hlx_place and the reference agree on every rank's node, GPU and domain, the number of
 * domains and of split groups; returns the split count. */
static int compare_one(const hlx_cluster_t *c, const hlx_topo_t *t, int kvp, int tpa,
                       const char *what)
{
    hlx_placement_t *p = NULL;
    char err[512] = "";
    ref_t ref;
    int r, split;

    if (hlx_place(c, kvp, tpa, 1, t, &p, err, sizeof(err)) != HLX_OK)
        fail_msg("%s: kvp %d tpa %d: %s", what, kvp, tpa, err);
    ref_place(c, t, kvp, tpa, &ref);
    for (r = 0; r < ref.nranks; r++)
        if (p->ranks[r].node != ref.node[r] || p->ranks[r].gpu != ref.gpu[r] ||
            p->ranks[r].domain != ref.domain[r])
            fail_msg("%s: kvp %d tpa %d rank %d: node %d gpu %d domain %d, reference %d %d %d",
                     what, kvp, tpa, r, p->ranks[r].node, p->ranks[r].gpu, p->ranks[r].domain,
                     ref.node[r], ref.gpu[r], ref.domain[r]);
    if (p->split_groups != ref.split || p->ndomains != ref.ndomains)
        fail_msg("%s: kvp %d tpa %d: %d split, %d domains; reference %d, %d", what, kvp, tpa,
                 p->split_groups, p->ndomains, ref.split, ref.ndomains);
    split = ref.split;
    ref_free(&ref);
    hlx_placement_free(p);
    return split;
}

/* Layouts on each of 500 generated clusters, with and without a topology: group sizes
 * below, at and above the domain sizes, clusters filled up, so that many groups split. */
static void test_reference(void **state)
{
    static const char *const names[] = { "hgx8.xml", "pcie4.xml", "gb200.xml",
                                         "hgx8-nomatrix.xml", "cpu2s.xml" };
    hlx_topo_t *t[5];
    int i, k, l, cases = 0, split_cases = 0, whole_cases = 0, kinds[GEN_KINDS] = { 0 };
    (void)state;

    for (i = 0; i < 5; i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s%s", DATA, names[i]);
        t[i] = hlx_test_topo(path);
    }
    for (k = 0; k < 500; k++) {
        int kind = k % GEN_KINDS, tgpus = 8, tnvlink = 1, slots;
        const hlx_topo_t *topo = NULL;
        hlx_cluster_t c;
        char what[64];
        if (kind == GEN_TOPO) {
            hlx_topo_info_t ti;
            topo = t[rnd(4)];
            hlx_topo_get_info(topo, &ti);
            tgpus = ti.ngpus;
            tnvlink = ti.ndomains < ti.ngpus;
        } else if (kind == GEN_CPU && rnd(2)) {
            topo = t[4];
        }
        gen_cluster(&c, kind, tgpus, tnvlink);
        slots = c.total_gpus > 0 ? c.total_gpus : 64; /* CPU-only: hosts take what is asked */
        for (l = 0; l < 4; l++) {
            int kvp, tpa, split;
            switch (l) {
            case 0: /* small groups, the cluster full */
                kvp = 1 + rnd(slots < 4 ? slots : 4);
                tpa = slots / kvp;
                break;
            case 1:
                kvp = 1 + rnd(slots < 16 ? slots : 16);
                tpa = 1 + rnd(slots / kvp);
                break;
            case 2: /* groups of any size, full */
                kvp = 1 + rnd(slots);
                tpa = slots / kvp;
                break;
            default:
                kvp = 1 + rnd(slots);
                tpa = 1 + rnd(slots / kvp);
                break;
            }
            snprintf(what, sizeof(what), "cluster %d (kind %d, %d nodes)", k, kind, c.nnodes);
            split = compare_one(&c, topo, kvp, tpa, what);
            split_cases += split > 0;
            whole_cases += split == 0;
            cases++;
        }
        kinds[kind]++;
        hlx_cluster_free(&c);
    }
    /* the generator reaches what it is for */
    assert_int_equal(cases, 2000);
    assert_true(split_cases > 200);
    assert_true(whole_cases > 200);
    for (k = 0; k < GEN_KINDS; k++)
        assert_true(kinds[k] > 0);
    for (i = 0; i < 5; i++)
        hlx_topo_free(t[i]);
}

/* ---- a million GPUs ---------------------------------------------------------------------- */

/* Every rank on its own GPU, and a group in more than one domain only when counted split. */
static void check_scale(const hlx_placement_t *p, const hlx_cluster_t *c)
{
    char *used = calloc((size_t)c->total_gpus, 1);
    int r, g, split = 0;

    assert_non_null(used);
    assert_int_equal(p->nranks, p->kvp * p->tpa);
    for (r = 0; r < p->nranks; r++) {
        const hlx_rank_place_t *rp = &p->ranks[r];
        assert_int_equal(rp->rank, r);
        assert_true(rp->gpu_global >= 0 && rp->gpu_global < c->total_gpus);
        assert_int_equal(rp->gpu_global, c->nodes[rp->node].first_gpu + rp->gpu);
        if (used[rp->gpu_global])
            fail_msg("rank %d: GPU %d taken twice", r, rp->gpu_global);
        used[rp->gpu_global] = 1;
    }
    for (g = 0; g < p->tpa; g++)
        for (r = g * p->kvp + 1; r < (g + 1) * p->kvp; r++)
            if (p->ranks[r].domain != p->ranks[g * p->kvp].domain) {
                split++;
                break;
            }
    assert_int_equal(p->split_groups, split);
    free(used);
}

/* 1024 nodes of 1024 GPUs, one NVLink domain each (the `helix topo` case that took minutes). */
static void test_million_nvlink(void **state)
{
    hlx_cluster_t c;
    hlx_placement_t *p;
    int r;
    (void)state;

    hlx_test_mem_cluster(&c, 1024, 1024, 1, 50);
    p = hlx_test_place(&c, 2, 1, 1, NULL);
    check_scale(p, &c);
    assert_int_equal(p->ranks[0].gpu_global, 0);
    assert_int_equal(p->ranks[1].gpu_global, 1);
    assert_int_equal(p->ranks[1].domain, 0);
    assert_int_equal(p->split_groups, 0);
    assert_int_equal(p->ndomains, 1);
    hlx_placement_free(p);

    /* 8192 groups of 2: first fit fills node 0 with 512 of them, then node 1, ... */
    p = hlx_test_place(&c, 2, 8192, 1, NULL);
    check_scale(p, &c);
    for (r = 0; r < p->nranks; r++) {
        assert_int_equal(p->ranks[r].node, r / 1024);
        assert_int_equal(p->ranks[r].gpu, r % 1024);
        assert_int_equal(p->ranks[r].domain, r / 1024);
    }
    assert_int_equal(p->split_groups, 0);
    assert_int_equal(p->ndomains, 16);
    hlx_placement_free(p);

    /* groups of 1030 never fit: group g takes all of domain 2g (1024 free beats the 1018
     * left in domain 2g - 1), then 6 of domain 2g + 1 (lowest of the full ones) */
    p = hlx_test_place(&c, 1030, 4, 1, NULL);
    check_scale(p, &c);
    for (r = 0; r < p->nranks; r++) {
        int g = r / 1030, k = r % 1030;
        assert_int_equal(p->ranks[r].node, k < 1024 ? 2 * g : 2 * g + 1);
        assert_int_equal(p->ranks[r].gpu, k < 1024 ? k : k - 1024);
    }
    assert_int_equal(p->split_groups, 4);
    assert_int_equal(p->a2a_cross_pairs, 4 * 1024 * 6);
    hlx_placement_free(p);
    hlx_cluster_free(&c);
}

/* The same GPUs without NVLink: a million one-GPU domains. No group of 2 fits, so each of
 * the 8192 groups splits, taking the lowest free domains (all tie at one free slot). */
static void test_million_pcie(void **state)
{
    hlx_cluster_t c;
    hlx_placement_t *p;
    int r;
    (void)state;

    hlx_test_mem_cluster(&c, 1024, 1024, 1, 50);
    for (r = 0; r < c.nnodes; r++)
        c.nodes[r].nvlink = 0;
    p = hlx_test_place(&c, 2, 8192, 1, NULL);
    check_scale(p, &c);
    for (r = 0; r < p->nranks; r++) {
        assert_int_equal(p->ranks[r].gpu_global, r);
        assert_int_equal(p->ranks[r].domain, r);
    }
    assert_int_equal(p->split_groups, 8192);
    assert_int_equal(p->a2a_cross_pairs, 8192);
    assert_int_equal(p->ndomains, 16384);
    hlx_placement_free(p);

    /* groups of one fit anywhere: first fit, in order */
    p = hlx_test_place(&c, 1, 16384, 1, NULL);
    check_scale(p, &c);
    for (r = 0; r < p->nranks; r++)
        assert_int_equal(p->ranks[r].gpu_global, r);
    assert_int_equal(p->split_groups, 0);
    hlx_placement_free(p);
    hlx_cluster_free(&c);
}

/* ---- cores ------------------------------------------------------------------------------- */

/* CPU-only cpu2s.xml (NUMA 0: cores 0-3, NUMA 1: 4-7, one PU each), m ranks on the host:
 * rank j of m goes to NUMA node j * 2 / m, and the ranks of a NUMA node split its 4 cores
 * contiguously; the NUMA node's ranks are counted here by walking them all. */
static void test_host_cores(void **state)
{
    static const int ms[] = { 1, 2, 3, 5, 10, 17, 1000, 16384 };
    hlx_topo_t *t = hlx_test_topo(DATA "cpu2s.xml");
    int i, j;
    (void)state;

    for (i = 0; i < (int)(sizeof(ms) / sizeof(ms[0])); i++) {
        int m = ms[i], first[2] = { -1, -1 }, cnt[2] = { 0, 0 };
        hlx_placement_t *p = hlx_test_place(NULL, 1, m, 1, t);
        for (j = 0; j < m; j++) {
            int k = (int)((long)j * 2 / m);
            if (first[k] < 0)
                first[k] = j;
            cnt[k]++;
        }
        for (j = 0; j < m; j++) {
            int k = (int)((long)j * 2 / m), jj = j - first[k], a, b;
            char want[32];
            if (m == 1) {
                snprintf(want, sizeof(want), "0-7");
            } else {
                a = (int)((long)jj * 4 / cnt[k]);
                b = (int)((long)(jj + 1) * 4 / cnt[k]);
                if (b <= a)
                    b = a + 1;
                if (b - a == 1)
                    snprintf(want, sizeof(want), "%d", 4 * k + a);
                else
                    snprintf(want, sizeof(want), "%d-%d", 4 * k + a, 4 * k + b - 1);
            }
            if (strcmp(p->ranks[j].cpuset, want) != 0)
                fail_msg("%d ranks: rank %d has cpus %s, not %s", m, j, p->ranks[j].cpuset, want);
            assert_int_equal(p->ranks[j].numa, k);
        }
        hlx_placement_free(p);
    }
    hlx_topo_free(t);
}

/* hgx8.xml (GPUs 0-3 under socket 0, 4-7 under socket 1; core c has PUs c and c + 8): the
 * ranks on one socket's GPUs split its 4 cores, those on the other socket theirs. */
static void test_gpu_cores(void **state)
{
    static const char *const five[5] = { "0,8", "1,9", "2,10", "3,11", "4-7,12-15" };
    static const char *const six[6] = { "0,8", "1,9", "2,10", "3,11", "4-5,12-13",
                                        "6-7,14-15" };
    static const char *const three[3] = { "0,8", "1,9", "2-3,10-11" };
    hlx_topo_t *t = hlx_test_topo(DATA "hgx8.xml");
    hlx_placement_t *p;
    int r;
    (void)state;

    p = hlx_test_place(NULL, 5, 1, 1, t);
    for (r = 0; r < 5; r++)
        assert_string_equal(p->ranks[r].cpuset, five[r]);
    hlx_placement_free(p);
    p = hlx_test_place(NULL, 3, 2, 1, t);
    for (r = 0; r < 6; r++)
        assert_string_equal(p->ranks[r].cpuset, six[r]);
    hlx_placement_free(p);
    p = hlx_test_place(NULL, 3, 1, 1, t);
    for (r = 0; r < 3; r++)
        assert_string_equal(p->ranks[r].cpuset, three[r]);
    hlx_placement_free(p);
    hlx_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference),
        cmocka_unit_test(test_million_nvlink),
        cmocka_unit_test(test_million_pcie),
        cmocka_unit_test(test_host_cores),
        cmocka_unit_test(test_gpu_cores),
    };
    unsetenv("HELIX_TOPO_FILE");
    unsetenv("HELIX_TOPO_DUMP_FILE");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
