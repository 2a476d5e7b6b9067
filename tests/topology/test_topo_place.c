/* topology: rank placement. Each expected mapping below is worked out by hand from the
 * fixture (machine or cluster file) and the policy in docs/topology.md: KVP groups are
 * blocks of consecutive ranks, placed whole on consecutive GPUs of the first NVLink domain
 * with room, and split over the largest free shares only when they cannot fit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <helix/jobplace.h>
#include <helix/topology.h>
#include "hlx_config.h"
#define HLX_TEST_TOPO
#include "hlx_test_files.h"
#include "hlx_test_place.h"

#define DATA HLX_SOURCE_ROOT "/tests/data/topology/"
#define CLUSTERS DATA "clusters/"

static int count_pairs(const hlx_placement_t *p, hlx_pair_kind_t kind, int link)
{
    int i, n = 0;
    for (i = 0; i < p->npairs; i++)
        if (p->pairs[i].kind == kind && (link < 0 || (int)p->pairs[i].link == link))
            n++;
    return n;
}

/* The contract the runtime relies on, for every rank of any placement. */
static void check_rank_order(const hlx_placement_t *p)
{
    int r, q;
    assert_int_equal(p->nranks, p->kvp * p->tpa);
    assert_int_equal(p->tpf * p->ep, p->nranks);
    for (r = 0; r < p->nranks; r++) {
        const hlx_rank_place_t *rp = &p->ranks[r];
        assert_int_equal(rp->rank, r);
        assert_int_equal(rp->tpa_rank, r / p->kvp);
        assert_int_equal(rp->kvp_rank, r % p->kvp);
        assert_int_equal(rp->ep_rank, r / p->tpf);
        assert_int_equal(rp->tpf_rank, r % p->tpf);
        assert_int_equal(hlx_place_link(p, r, r), HLX_LINK_SELF);
        for (q = r + 1; q < p->nranks && !p->cpu_only; q++)
            if (rp->node == p->ranks[q].node && rp->gpu == p->ranks[q].gpu)
                fail_msg("ranks %d and %d share node %d GPU %d", r, q, rp->node, rp->gpu);
    }
}

/* One HGX node: rank r on GPU r; the 4 ranks of a socket get one core (2 threads) each. */
static void test_hgx8_one_node(void **state)
{
    hlx_topo_t *t = hlx_test_topo(DATA "hgx8.xml");
    hlx_placement_t *p = hlx_test_place(NULL, 4, 2, 1, t);
    int r;
    (void)state;

    check_rank_order(p);
    assert_int_equal(p->cpu_only, 0);
    assert_int_equal(p->tpf, 8);
    assert_int_equal(p->ndomains, 1);
    for (r = 0; r < 8; r++) {
        const hlx_rank_place_t *rp = &p->ranks[r];
        char cpus[32], nic[16];
        snprintf(cpus, sizeof(cpus), "%d,%d", r, r + 8);
        snprintf(nic, sizeof(nic), "mlx5_%d", r / 2);
        assert_int_equal(rp->node, 0);
        assert_int_equal(rp->gpu, r);
        assert_int_equal(rp->gpu_global, r);
        assert_int_equal(rp->domain, 0);
        assert_int_equal(rp->numa, r / 4);
        assert_string_equal(rp->cpuset, cpus);
        assert_int_equal(rp->nic, r / 2);
        assert_string_equal(rp->nic_name, nic);
        assert_int_equal(rp->tpf_rank, r);
        assert_int_equal(rp->ep_rank, 0);
    }
    /* 2 groups x C(4,2) all-to-all pairs, an 8-rank ring, all on NVLink */
    assert_int_equal(p->a2a_pairs, 12);
    assert_int_equal(count_pairs(p, HLX_PAIR_A2A, HLX_LINK_NVLINK), 12);
    assert_int_equal(count_pairs(p, HLX_PAIR_ALLREDUCE, HLX_LINK_NVLINK), 8);
    assert_int_equal(p->npairs, 20);
    assert_int_equal(p->split_groups, 0);
    assert_int_equal(p->a2a_cross_pairs, 0);
    assert_int_equal(hlx_place_link(p, 0, 8), HLX_LINK_COUNT);
    hlx_placement_free(p);
    hlx_topo_free(t);
}

/* Two HGX nodes, KVP 8: each group fills one node; only the ring crosses nodes. */
static void test_hgx2_groups_per_node(void **state)
{
    hlx_topo_t *t = hlx_test_topo(DATA "hgx8.xml");
    hlx_cluster_t c;
    hlx_placement_t *p;
    char warn[1024];
    int r;
    (void)state;

    hlx_test_cluster(CLUSTERS "hgx2.json", &c);
    p = hlx_test_place(&c, 8, 2, 1, t);
    check_rank_order(p);
    for (r = 0; r < 16; r++) {
        char cpus[32];
        snprintf(cpus, sizeof(cpus), "%d,%d", r % 8, r % 8 + 8);
        assert_int_equal(p->ranks[r].node, r / 8);
        assert_int_equal(p->ranks[r].gpu, r % 8);
        assert_int_equal(p->ranks[r].gpu_global, r);
        assert_int_equal(p->ranks[r].domain, r / 8);
        assert_string_equal(p->ranks[r].cpuset, cpus);
        assert_int_equal(p->ranks[r].nic, (r % 8) / 2);
    }
    assert_int_equal(count_pairs(p, HLX_PAIR_A2A, HLX_LINK_NVLINK), 2 * 28);
    assert_int_equal(count_pairs(p, HLX_PAIR_ALLREDUCE, HLX_LINK_RDMA), 2); /* 7-8, 15-0 */
    assert_int_equal(hlx_place_link(p, 7, 8), HLX_LINK_RDMA);
    assert_int_equal(hlx_place_link(p, 0, 7), HLX_LINK_NVLINK);
    assert_int_equal(hlx_place_warning(p, &c, 4096, warn, sizeof(warn)), 0);
    assert_string_equal(warn, "");
    hlx_placement_free(p);

    /* KVP 4 x TPA 4: two groups per node */
    p = hlx_test_place(&c, 4, 4, 1, t);
    for (r = 0; r < 16; r++)
        assert_int_equal(p->ranks[r].node, r / 8);
    assert_int_equal(p->a2a_cross_pairs, 0);
    hlx_placement_free(p);

    /* KVP 6 x TPA 2: the second group does not fit beside the first, so node 1 */
    p = hlx_test_place(&c, 6, 2, 1, t);
    for (r = 0; r < 12; r++) {
        assert_int_equal(p->ranks[r].node, r / 6);
        assert_int_equal(p->ranks[r].gpu, r % 6);
    }
    assert_int_equal(p->split_groups, 0);
    hlx_placement_free(p);
    hlx_cluster_free(&c);
    hlx_topo_free(t);
}

/* KVP 16 cannot fit in an 8-GPU domain: 8 + 8, 64 of 120 pairs cross over RDMA; the cost
 * model charges each link class its own bytes. */
static void test_hgx2_split_and_cost(void **state)
{
    hlx_cluster_t c;
    hlx_placement_t *p;
    hlx_place_cost_t cost;
    char warn[1024];
    int r;
    (void)state;

    hlx_test_cluster(CLUSTERS "hgx2.json", &c);
    p = hlx_test_place(&c, 16, 1, 1, NULL);
    check_rank_order(p);
    for (r = 0; r < 16; r++)
        assert_int_equal(p->ranks[r].node, r / 8);
    assert_int_equal(p->split_groups, 1);
    assert_int_equal(p->a2a_pairs, 120);
    assert_int_equal(p->a2a_cross_pairs, 64);
    assert_int_equal(count_pairs(p, HLX_PAIR_A2A, HLX_LINK_RDMA), 64);

    assert_int_equal(hlx_place_a2a_cost(p, &c, 1e6, &cost), HLX_OK);
    /* per rank: 7 MB on NVLink (450 GB/s, 2 us) beside 8 MB on RDMA (50 GB/s, 5 us) */
    assert_true(fabs(cost.a2a_us - (5 + 8e6 / 50e3)) < 1e-6);
    assert_true(fabs(cost.a2a_us_ideal - (2 + 15e6 / 450e3)) < 1e-6);
    assert_true(fabs(cost.cross_bytes - 2 * 64 * 1e6) < 1e-3);
    assert_int_equal(cost.worst_link, HLX_LINK_RDMA);
    assert_int_equal(hlx_place_warning(p, &c, 1e6, warn, sizeof(warn)), 1);
    assert_non_null(strstr(warn, "64 of 120"));
    assert_non_null(strstr(warn, "rdma"));
    hlx_placement_free(p);

    /* no topology: NICs shared out by GPU index (4 NICs for 8 GPUs), cores unknown */
    p = hlx_test_place(&c, 8, 1, 1, NULL);
    for (r = 0; r < 8; r++) {
        char nic[16];
        snprintf(nic, sizeof(nic), "nic%d", r / 2);
        assert_int_equal(p->ranks[r].nic, r / 2);
        assert_string_equal(p->ranks[r].nic_name, nic);
        assert_string_equal(p->ranks[r].cpuset, "");
        assert_int_equal(p->ranks[r].numa, -1);
    }
    hlx_placement_free(p);
    hlx_cluster_free(&c);
}

/* KVP 5 x TPA 3 on 2 x 8: groups 0 and 1 fit (one per node), group 2 is split into the
 * largest free shares: 3 GPUs left on node 0, then 2 of the 3 on node 1. */
static void test_hgx2_partial_split(void **state)
{
    static const int node[15] = { 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1 };
    static const int gpu[15] = { 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 5, 6, 7, 5, 6 };
    hlx_cluster_t c;
    hlx_placement_t *p;
    int r;
    (void)state;

    hlx_test_cluster(CLUSTERS "hgx2.json", &c);
    p = hlx_test_place(&c, 5, 3, 1, NULL);
    check_rank_order(p);
    for (r = 0; r < 15; r++) {
        assert_int_equal(p->ranks[r].node, node[r]);
        assert_int_equal(p->ranks[r].gpu, gpu[r]);
    }
    assert_int_equal(p->split_groups, 1);
    assert_int_equal(p->a2a_cross_pairs, 3 * 2);
    assert_int_equal(hlx_place_link(p, 10, 13), HLX_LINK_RDMA);
    assert_int_equal(hlx_place_link(p, 13, 14), HLX_LINK_NVLINK);
    hlx_placement_free(p);
    hlx_cluster_free(&c);
}

static void test_errors(void **state)
{
    hlx_cluster_t c;
    hlx_placement_t *p = NULL;
    char err[512];
    (void)state;

    hlx_test_cluster(CLUSTERS "hgx2.json", &c);
    assert_int_equal(hlx_place(&c, 6, 3, 1, NULL, &p, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "18"));
    assert_non_null(strstr(err, "16"));
    assert_null(p);
    assert_int_equal(hlx_place(&c, 4, 2, 3, NULL, &p, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "ep 3"));
    assert_int_equal(hlx_place(&c, 0, 2, 1, NULL, &p, err, sizeof(err)), HLX_ERR_INVALID);
    assert_int_equal(hlx_place(NULL, 2, 2, 1, NULL, &p, err, sizeof(err)), HLX_ERR_INVALID);
    hlx_cluster_free(&c);
}

/* Two NVL72 racks: a KVP group of 64 stays in one 72-GPU domain across 16 trays. */
static void test_nvl72(void **state)
{
    hlx_topo_t *t = hlx_test_topo(DATA "gb200.xml");
    hlx_cluster_t c;
    hlx_placement_t *p;
    static const char *const cpus[4] = { "0-1", "2-3", "4-5", "6-7" };
    int r;
    (void)state;

    hlx_test_cluster(CLUSTERS "nvl72x2.json", &c);
    p = hlx_test_place(&c, 64, 2, 1, t);
    check_rank_order(p);
    for (r = 0; r < 128; r++) {
        int g = r < 64 ? r : 72 + (r - 64); /* group 1 starts domain 1 at GPU 72 */
        assert_int_equal(p->ranks[r].gpu_global, g);
        assert_int_equal(p->ranks[r].node, g / 4);
        assert_int_equal(p->ranks[r].domain, r / 64);
        /* the tray's topology applies: 2 GPUs per Grace socket split its 4 cores */
        assert_string_equal(p->ranks[r].cpuset, cpus[g % 4]);
        assert_int_equal(p->ranks[r].nic, g % 4);
    }
    assert_int_equal(count_pairs(p, HLX_PAIR_A2A, HLX_LINK_NVLINK), 2 * 64 * 63 / 2);
    assert_int_equal(hlx_place_link(p, 0, 63), HLX_LINK_NVLINK); /* tray 0 to tray 15 */
    assert_int_equal(hlx_place_link(p, 63, 64), HLX_LINK_RDMA);
    hlx_placement_free(p);

    /* 96 does not fit in 72: 72 + 24 */
    p = hlx_test_place(&c, 96, 1, 1, NULL);
    assert_int_equal(p->split_groups, 1);
    assert_int_equal(p->a2a_pairs, 96 * 95 / 2);
    assert_int_equal(p->a2a_cross_pairs, 72 * 24);
    assert_int_equal(p->ranks[71].domain, 0);
    assert_int_equal(p->ranks[72].domain, 1);
    assert_int_equal(p->ranks[72].gpu_global, 72);
    hlx_placement_free(p);

    /* KVP 8 x TPA 18: 9 groups per domain, none split */
    p = hlx_test_place(&c, 8, 18, 1, NULL);
    check_rank_order(p);
    assert_int_equal(p->split_groups, 0);
    assert_int_equal(p->a2a_cross_pairs, 0);
    hlx_placement_free(p);
    hlx_cluster_free(&c);
    hlx_topo_free(t);
}

/* Mixed cluster: an 8-GPU node, a PCIe-only node (each GPU its own domain), and two
 * 4-GPU nodes sharing one NVLink domain. */
static void test_mix(void **state)
{
    hlx_cluster_t c;
    hlx_placement_t *p;
    int r;
    (void)state;

    hlx_test_cluster(CLUSTERS "mix.json", &c);
    p = hlx_test_place(&c, 8, 2, 1, NULL);
    check_rank_order(p);
    for (r = 0; r < 8; r++)
        assert_int_equal(p->ranks[r].node, 0);
    for (r = 8; r < 16; r++) {
        /* the PCIe node cannot hold a group of 8 in one domain: the shared domain can */
        assert_int_equal(p->ranks[r].node, r < 12 ? 2 : 3);
        assert_int_equal(p->ranks[r].gpu, r % 4);
    }
    assert_int_equal(hlx_place_link(p, 8, 12), HLX_LINK_NVLINK);
    assert_int_equal(p->a2a_cross_pairs, 0);
    hlx_placement_free(p);

    p = hlx_test_place(&c, 4, 5, 1, NULL);
    check_rank_order(p);
    for (r = 16; r < 20; r++) {
        assert_int_equal(p->ranks[r].node, 1);
        assert_int_equal(p->ranks[r].gpu, r - 16);
    }
    assert_int_equal(p->split_groups, 1);
    assert_int_equal(p->a2a_cross_pairs, 6);
    assert_int_equal(hlx_place_link(p, 16, 17), HLX_LINK_PCIE);
    assert_int_equal(p->ranks[8].node, 2);
    assert_int_equal(p->ranks[12].node, 3);
    hlx_placement_free(p);
    hlx_cluster_free(&c);
}

/* A PCIe-only box alone: every group is split, its pairs go over PCIe. */
static void test_pcie_box(void **state)
{
    hlx_topo_t *t = hlx_test_topo(DATA "pcie4.xml");
    hlx_placement_t *p = hlx_test_place(NULL, 2, 2, 1, t);
    hlx_cluster_t c;
    char warn[1024];
    int r;
    (void)state;

    check_rank_order(p);
    for (r = 0; r < 4; r++) {
        char cpus[16];
        snprintf(cpus, sizeof(cpus), "%d-%d", 2 * r, 2 * r + 1);
        assert_int_equal(p->ranks[r].gpu, r);
        assert_int_equal(p->ranks[r].domain, r);
        assert_string_equal(p->ranks[r].cpuset, cpus);
        assert_string_equal(p->ranks[r].nic_name, "mlx5_0");
    }
    assert_int_equal(p->split_groups, 2);
    assert_int_equal(count_pairs(p, HLX_PAIR_A2A, HLX_LINK_PCIE), 2);
    assert_int_equal(hlx_topo_to_cluster(t, &c), HLX_OK);
    assert_int_equal(c.nodes[0].nvlink, 0);
    assert_int_equal(hlx_place_warning(p, &c, 4096, warn, sizeof(warn)), 1);
    assert_non_null(strstr(warn, "pcie"));
    hlx_cluster_free(&c);
    hlx_placement_free(p);
    hlx_topo_free(t);
}

/* CPU-only node (2 sockets x 4 cores): ranks spread over the NUMA nodes, then split cores;
 * every pair uses shared memory. */
static void test_cpu_only(void **state)
{
    static const char *const four[4] = { "0-1", "2-3", "4-5", "6-7" };
    static const char *const three[3] = { "0-1", "2-3", "4-7" };
    static const char *const ten[10] = { "0", "0", "1", "2", "3", "4", "4", "5", "6", "7" };
    hlx_topo_t *t = hlx_test_topo(DATA "cpu2s.xml");
    hlx_placement_t *p;
    int r, q;
    (void)state;

    p = hlx_test_place(NULL, 2, 2, 1, t);
    check_rank_order(p);
    assert_int_equal(p->cpu_only, 1);
    for (r = 0; r < 4; r++) {
        assert_int_equal(p->ranks[r].gpu, -1);
        assert_int_equal(p->ranks[r].domain, -1);
        assert_int_equal(p->ranks[r].numa, r / 2);
        assert_string_equal(p->ranks[r].cpuset, four[r]);
        assert_string_equal(p->ranks[r].nic_name, "enp3s0f0");
        for (q = 0; q < 4; q++)
            assert_int_equal(hlx_place_link(p, r, q), r == q ? HLX_LINK_SELF : HLX_LINK_SHM);
    }
    assert_int_equal(count_pairs(p, HLX_PAIR_A2A, HLX_LINK_SHM), 2);
    hlx_placement_free(p);

    p = hlx_test_place(NULL, 3, 1, 1, t);
    for (r = 0; r < 3; r++) {
        assert_string_equal(p->ranks[r].cpuset, three[r]);
        assert_int_equal(p->ranks[r].numa, r / 2);
    }
    hlx_placement_free(p);

    /* more ranks than cores: two share a core per socket */
    p = hlx_test_place(NULL, 5, 2, 1, t);
    for (r = 0; r < 10; r++)
        assert_string_equal(p->ranks[r].cpuset, ten[r]);
    hlx_placement_free(p);

    p = hlx_test_place(NULL, 1, 1, 1, t); /* one rank takes the whole machine */
    assert_string_equal(p->ranks[0].cpuset, "0-7");
    assert_int_equal(p->ranks[0].numa, 0);
    hlx_placement_free(p);
    hlx_topo_free(t);
}

/* FFN grid TPF x EP: blocks of TPF ranks all-reduce, strides of TPF exchange experts. */
static void test_ep(void **state)
{
    hlx_topo_t *t = hlx_test_topo(DATA "hgx8.xml");
    hlx_placement_t *p = hlx_test_place(NULL, 4, 2, 2, t);
    int i;
    (void)state;

    check_rank_order(p);
    assert_int_equal(p->tpf, 4);
    assert_int_equal(count_pairs(p, HLX_PAIR_A2A, -1), 12);
    assert_int_equal(count_pairs(p, HLX_PAIR_ALLREDUCE, -1), 8);
    assert_int_equal(count_pairs(p, HLX_PAIR_FFN_ALLREDUCE, -1), 8);
    assert_int_equal(count_pairs(p, HLX_PAIR_EP_A2A, -1), 4);
    for (i = 0; i < p->npairs; i++) {
        const hlx_pair_t *pp = &p->pairs[i];
        if (pp->kind == HLX_PAIR_EP_A2A) {
            assert_int_equal(pp->dst, pp->src + 4);
            assert_int_equal(p->ranks[pp->src].tpf_rank, p->ranks[pp->dst].tpf_rank);
        } else if (pp->kind == HLX_PAIR_FFN_ALLREDUCE) {
            assert_int_equal(p->ranks[pp->src].ep_rank, p->ranks[pp->dst].ep_rank);
        } else if (pp->kind == HLX_PAIR_A2A) {
            assert_int_equal(p->ranks[pp->src].tpa_rank, p->ranks[pp->dst].tpa_rank);
        }
    }
    assert_string_equal(hlx_pair_kind_name(HLX_PAIR_EP_A2A), "ep_a2a");
    hlx_placement_free(p);
    hlx_topo_free(t);
}

/* Clusters built in memory: no RDMA bandwidth means TCP between nodes; CPU-only hosts get
 * blocks of ceil(N / hosts) ranks; a large cluster places 8192 ranks with every group whole. */
static void test_memory_clusters(void **state)
{
    hlx_cluster_t c;
    hlx_placement_t *p;
    int r;
    (void)state;

    hlx_test_mem_cluster(&c, 2, 4, 1, 0);
    p = hlx_test_place(&c, 4, 2, 1, NULL);
    assert_int_equal(p->internode, HLX_LINK_TCP);
    assert_int_equal(hlx_place_link(p, 0, 4), HLX_LINK_TCP);
    assert_int_equal(hlx_place_link(p, 0, 3), HLX_LINK_NVLINK);
    hlx_placement_free(p);
    hlx_cluster_free(&c);

    /* two CPU-only hosts with RDMA: 5 ranks -> 3 on the first, 2 on the second */
    hlx_test_mem_cluster(&c, 2, 0, 1, 0);
    c.link[HLX_LINK_RDMA].bw_gbps = 25;
    p = hlx_test_place(&c, 5, 1, 1, NULL);
    assert_int_equal(p->cpu_only, 1);
    for (r = 0; r < 5; r++) {
        assert_int_equal(p->ranks[r].node, r < 3 ? 0 : 1);
        assert_int_equal(p->ranks[r].gpu, -1);
    }
    assert_int_equal(hlx_place_link(p, 0, 2), HLX_LINK_SHM);
    assert_int_equal(hlx_place_link(p, 2, 3), HLX_LINK_RDMA);
    assert_int_equal(p->a2a_cross_pairs, 3 * 2);
    hlx_placement_free(p);
    c.nodes[1].nics = 0; /* a host without a NIC: sockets */
    p = hlx_test_place(&c, 5, 1, 1, NULL);
    assert_int_equal(hlx_place_link(p, 2, 3), HLX_LINK_TCP);
    hlx_placement_free(p);
    hlx_cluster_free(&c);

    /* 1024 nodes of 8 GPUs in 2-node domains: 8192 ranks, KVP 16 fills each domain */
    hlx_test_mem_cluster(&c, 1024, 8, 2, 0);
    c.link[HLX_LINK_RDMA].bw_gbps = 50;
    p = hlx_test_place(&c, 16, 512, 1, NULL);
    check_rank_order(p);
    assert_int_equal(p->split_groups, 0);
    assert_int_equal(p->a2a_cross_pairs, 0);
    assert_int_equal(p->ndomains, 512);
    for (r = 0; r < 8192; r++)
        assert_int_equal(p->ranks[r].domain, r / 16);
    assert_int_equal(count_pairs(p, HLX_PAIR_ALLREDUCE, HLX_LINK_RDMA), 512);
    hlx_placement_free(p);
    hlx_cluster_free(&c);
}

/* HELIX_PLACEMENT_DUMP's writer names why a write failed (a full disk: /dev/full behind the
 * path), for a placement that fits stdio's buffer and one that does not, where a failure
 * inside the JSON writer read "writing failed" and no reason. */
static void test_dump_write_failure(void **state)
{
    char dir[] = "/tmp/hlx_place_dump_XXXXXX", path[64], err[4600], msg[2][4600];
    hlx_cluster_t c;
    hlx_placement_t *p;
    hlx_status_t st[2];
    int i, n[2];
    (void)state;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/place.0", dir);
    assert_int_equal(symlink("/dev/full", path), 0);
    hlx_test_mem_cluster(&c, 16, 8, 2, 0);
    for (i = 0; i < 2; i++) {
        p = hlx_test_place(&c, i == 0 ? 2 : 16, i == 0 ? 1 : 8, 1, NULL);
        err[0] = '\0';
        st[i] = hlx_place_write_json(p, &c, path, err, sizeof(err));
        n[i] = p->nranks;
        snprintf(msg[i], sizeof(msg[i]), "%s", err);
        hlx_placement_free(p);
    }
    hlx_cluster_free(&c);
    unlink(path);
    rmdir(dir);
    for (i = 0; i < 2; i++)
        if (st[i] != HLX_ERR_IO || strstr(msg[i], "HELIX_PLACEMENT_DUMP: ") != msg[i] ||
            strstr(msg[i], "No space left on device") == NULL)
            fail_msg("%d ranks: status %d, '%s' names no reason", n[i], st[i], msg[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hgx8_one_node),
        cmocka_unit_test(test_hgx2_groups_per_node),
        cmocka_unit_test(test_hgx2_split_and_cost),
        cmocka_unit_test(test_hgx2_partial_split),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_nvl72),
        cmocka_unit_test(test_mix),
        cmocka_unit_test(test_pcie_box),
        cmocka_unit_test(test_cpu_only),
        cmocka_unit_test(test_ep),
        cmocka_unit_test(test_memory_clusters),
        cmocka_unit_test(test_dump_write_failure),
    };
    unsetenv("HELIX_TOPO_FILE");
    unsetenv("HELIX_TOPO_DUMP_FILE");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
