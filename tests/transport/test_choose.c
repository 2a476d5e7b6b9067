/* transport: the backend chosen per communicator (hlx_comm_choose_backend) from the link
 * classes of real placements (tests/data/topology fixtures and clusters built in memory)
 * and from the capabilities: NCCL inside an NVLink domain on device buffers, UCX (staged
 * or on device memory) otherwise, the host transport on host buffers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <helix/jobplace.h>
#include <helix/topology.h>
#include "hlx_comm.h"
#include "hlx_config.h"
#define HLX_TEST_TOPO
#include "hlx_test_files.h"

#define DATA HLX_SOURCE_ROOT "/tests/data/topology/"
#define CLUSTERS DATA "clusters/"

static const hlx_comm_caps_t cuda_auto = {
    .device_buffers = 1, .nccl_compiled = 1, .nccl_mode = HLX_NCCL_AUTO,
    .ucx_device_memory = 0,
};

static hlx_placement_t *place(const hlx_cluster_t *c, int kvp, int tpa, const hlx_topo_t *t)
{
    hlx_placement_t *p = NULL;
    char err[512] = "";
    if (hlx_place(c, kvp, tpa, 1, t, &p, err, sizeof(err)) != HLX_OK)
        fail_msg("place kvp %d tpa %d: %s", kvp, tpa, err);
    return p;
}

/* The n x n matrix of the listed ranks, read from each member's row as the engine does
 * (hlx_place_links, what the transport is given). */
static hlx_link_t *matrix(const hlx_placement_t *p, const int *ranks, int n)
{
    hlx_link_t *m = calloc((size_t)n * n, sizeof(*m));
    hlx_link_t *row = calloc((size_t)p->nranks, sizeof(*row));
    int a, b;

    assert_non_null(m);
    assert_non_null(row);
    for (a = 0; a < n; a++) {
        assert_int_equal(hlx_place_links(p, ranks[a], row), p->nranks);
        for (b = 0; b < n; b++)
            m[(size_t)a * n + b] = row[ranks[b]];
    }
    free(row);
    return m;
}

/* The choice for the KVP group of tpa_rank (ranks tpa_rank * kvp + j) or, with
 * tpa_rank < 0, for the world. */
static hlx_comm_choice_t choose(const hlx_placement_t *p, int tpa_rank,
                                const hlx_comm_caps_t *caps, char *why, size_t whylen)
{
    int n = tpa_rank < 0 ? p->nranks : p->kvp, j;
    int *ranks = malloc(sizeof(int) * (size_t)n);
    hlx_link_t *m;
    hlx_comm_choice_t c;

    assert_non_null(ranks);
    for (j = 0; j < n; j++)
        ranks[j] = tpa_rank < 0 ? j : tpa_rank * p->kvp + j;
    m = matrix(p, ranks, n);
    c = hlx_comm_choose_backend(m, n, caps, why, whylen);
    free(m);
    free(ranks);
    return c;
}

/* One node, 4 ranks on 4 NVLink GPUs: the world (= the KVP group) runs on NCCL. */
static void test_one_nvlink_node(void **state)
{
    hlx_topo_t *t = hlx_test_topo(DATA "hgx8.xml");
    hlx_placement_t *p = place(NULL, 4, 1, t);
    char why[160] = "";
    (void)state;

    assert_int_equal(choose(p, -1, &cuda_auto, why, sizeof(why)), HLX_COMM_CHOICE_NCCL);
    assert_non_null(strstr(why, "every pair of the 4 members is NVLink"));
    assert_int_equal(choose(p, 0, &cuda_auto, NULL, 0), HLX_COMM_CHOICE_NCCL);
    hlx_placement_free(p);
    hlx_topo_free(t);
}

/* Two nodes of 4 NVLink GPUs, RDMA between them, KVP 4 x TPA 2: each KVP group fills one
 * node (NCCL), the world crosses the nodes (UCX, staged without CUDA in UCX). */
static void test_two_nodes(void **state)
{
    hlx_cluster_t c;
    hlx_placement_t *p;
    hlx_comm_caps_t dev = cuda_auto;
    char why[160] = "";
    (void)state;

    hlx_test_mem_cluster(&c, 2, 4, 1, 50);
    p = place(&c, 4, 2, NULL);
    assert_int_equal(p->ranks[0].node, 0);
    assert_int_equal(p->ranks[4].node, 1);
    assert_int_equal(choose(p, 0, &cuda_auto, NULL, 0), HLX_COMM_CHOICE_NCCL);
    assert_int_equal(choose(p, 1, &cuda_auto, NULL, 0), HLX_COMM_CHOICE_NCCL);
    assert_int_equal(choose(p, -1, &cuda_auto, why, sizeof(why)), HLX_COMM_CHOICE_UCX_STAGED);
    assert_non_null(strstr(why, "by rdma, not NVLink"));
    assert_non_null(strstr(why, "pinned host memory"));
    /* UCX with the CUDA memory type takes the device buffers as they are */
    dev.ucx_device_memory = 1;
    assert_int_equal(choose(p, -1, &dev, why, sizeof(why)), HLX_COMM_CHOICE_UCX_DEVICE);
    assert_non_null(strstr(why, "on device memory"));
    assert_int_equal(choose(p, 1, &dev, NULL, 0), HLX_COMM_CHOICE_NCCL);
    hlx_placement_free(p);
    hlx_cluster_free(&c);
}

/* The fixture cluster of two 8-GPU HGX nodes, KVP 4 x TPA 4: two groups per node. */
static void test_hgx2_fixture(void **state)
{
    hlx_topo_t *t = hlx_test_topo(DATA "hgx8.xml");
    hlx_cluster_t c;
    hlx_placement_t *p;
    int g;
    (void)state;

    hlx_test_cluster(CLUSTERS "hgx2.json", &c);
    p = place(&c, 4, 4, t);
    for (g = 0; g < 4; g++)
        assert_int_equal(choose(p, g, &cuda_auto, NULL, 0), HLX_COMM_CHOICE_NCCL);
    assert_int_equal(choose(p, -1, &cuda_auto, NULL, 0), HLX_COMM_CHOICE_UCX_STAGED);
    hlx_placement_free(p);
    hlx_cluster_free(&c);
    hlx_topo_free(t);
}

/* A PCIe-only box: every pair is PCIe, nothing goes to NCCL under auto; on forces it. */
static void test_pcie_only(void **state)
{
    hlx_topo_t *t = hlx_test_topo(DATA "pcie4.xml");
    hlx_placement_t *p = place(NULL, 2, 2, t);
    hlx_comm_caps_t on = cuda_auto;
    char why[160] = "";
    (void)state;

    assert_int_equal(hlx_place_link(p, 0, 1), HLX_LINK_PCIE);
    assert_int_equal(choose(p, 0, &cuda_auto, why, sizeof(why)), HLX_COMM_CHOICE_UCX_STAGED);
    assert_non_null(strstr(why, "by pcie, not NVLink"));
    assert_int_equal(choose(p, -1, &cuda_auto, NULL, 0), HLX_COMM_CHOICE_UCX_STAGED);
    on.nccl_mode = HLX_NCCL_ON;
    assert_int_equal(choose(p, -1, &on, why, sizeof(why)), HLX_COMM_CHOICE_NCCL);
    assert_non_null(strstr(why, "HELIX_NCCL=on"));
    hlx_placement_free(p);
    hlx_topo_free(t);
}

/* Nodes without RDMA: the world has TCP pairs, named in the reason. */
static void test_tcp_pair(void **state)
{
    hlx_cluster_t c;
    hlx_placement_t *p;
    char why[160] = "";
    (void)state;

    hlx_test_mem_cluster(&c, 2, 4, 1, 0);
    p = place(&c, 4, 2, NULL);
    assert_int_equal(hlx_place_link(p, 0, 4), HLX_LINK_TCP);
    assert_int_equal(choose(p, -1, &cuda_auto, why, sizeof(why)), HLX_COMM_CHOICE_UCX_STAGED);
    assert_non_null(strstr(why, "by tcp, not NVLink"));
    assert_int_equal(choose(p, 0, &cuda_auto, NULL, 0), HLX_COMM_CHOICE_NCCL);
    hlx_placement_free(p);
    hlx_cluster_free(&c);
}

/* HELIX_NCCL=off, a build without NCCL, host buffers, a group of one. */
static void test_caps(void **state)
{
    hlx_topo_t *t = hlx_test_topo(DATA "hgx8.xml");
    hlx_placement_t *p = place(NULL, 4, 1, t);
    hlx_comm_caps_t caps = cuda_auto;
    hlx_link_t one = HLX_LINK_SELF;
    char why[160] = "";
    (void)state;

    caps.nccl_mode = HLX_NCCL_OFF;
    assert_int_equal(choose(p, -1, &caps, why, sizeof(why)), HLX_COMM_CHOICE_UCX_STAGED);
    assert_non_null(strstr(why, "HELIX_NCCL=off"));
    caps = cuda_auto;
    caps.nccl_compiled = 0;
    assert_int_equal(choose(p, -1, &caps, why, sizeof(why)), HLX_COMM_CHOICE_UCX_STAGED);
    assert_non_null(strstr(why, "no NCCL"));
    caps.nccl_mode = HLX_NCCL_ON; /* on without NCCL in the build falls back too */
    assert_int_equal(choose(p, -1, &caps, NULL, 0), HLX_COMM_CHOICE_UCX_STAGED);
    caps = cuda_auto;
    caps.device_buffers = 0; /* the cpu backend: every mode is the host transport */
    assert_int_equal(choose(p, -1, &caps, why, sizeof(why)), HLX_COMM_CHOICE_HOST);
    assert_non_null(strstr(why, "host buffers"));
    caps.nccl_mode = HLX_NCCL_ON;
    assert_int_equal(choose(p, -1, &caps, NULL, 0), HLX_COMM_CHOICE_HOST);
    /* a group of one: no NCCL under auto, a local copy; on: NCCL (the device check) */
    caps = cuda_auto;
    assert_int_equal(hlx_comm_choose_backend(&one, 1, &caps, why, sizeof(why)),
                     HLX_COMM_CHOICE_SELF);
    caps.nccl_mode = HLX_NCCL_ON;
    assert_int_equal(hlx_comm_choose_backend(&one, 1, &caps, NULL, 0), HLX_COMM_CHOICE_NCCL);
    hlx_placement_free(p);
    hlx_topo_free(t);
}

static int row_unknown(void *arg, int member, hlx_link_t *row)
{
    (void)arg; (void)row;
    return member == 1 ? -1 : (row[0] = HLX_LINK_SELF, row[1] = HLX_LINK_NVLINK, 0);
}

/* Matrices by hand: one non-NVLink pair anywhere (also below the diagonal) or an unknown
 * class is enough to leave NCCL; names and the mode parser. */
static void test_matrix_edges(void **state)
{
    hlx_link_t m[9];
    hlx_nccl_mode_t mode = HLX_NCCL_OFF;
    char why[160] = "";
    int i;
    (void)state;

    for (i = 0; i < 9; i++)
        m[i] = i % 4 == 0 ? HLX_LINK_SELF : HLX_LINK_NVLINK;
    assert_int_equal(hlx_comm_choose_backend(m, 3, &cuda_auto, NULL, 0), HLX_COMM_CHOICE_NCCL);
    m[2 * 3 + 1] = HLX_LINK_SHM; /* member 2 to member 1 only */
    assert_int_equal(hlx_comm_choose_backend(m, 3, &cuda_auto, why, sizeof(why)),
                     HLX_COMM_CHOICE_UCX_STAGED);
    assert_non_null(strstr(why, "members 2 and 1 are linked by shm"));
    m[2 * 3 + 1] = HLX_LINK_COUNT;
    assert_int_equal(hlx_comm_choose_backend(m, 3, &cuda_auto, why, sizeof(why)),
                     HLX_COMM_CHOICE_UCX_STAGED);
    assert_non_null(strstr(why, "an unknown class"));
    assert_int_equal(hlx_comm_choose_backend(NULL, 3, &cuda_auto, NULL, 0), HLX_COMM_CHOICE_HOST);
    /* a row that cannot be read is not NVLink */
    assert_int_equal(hlx_comm_choose_backend_rows(2, row_unknown, NULL, &cuda_auto, why,
                                                  sizeof(why)), HLX_COMM_CHOICE_UCX_STAGED);
    assert_non_null(strstr(why, "unknown"));
    assert_int_equal(hlx_comm_choose_backend(m, 3, NULL, NULL, 0), HLX_COMM_CHOICE_HOST);
    assert_string_equal(hlx_comm_choice_name(HLX_COMM_CHOICE_NCCL), "nccl");
    assert_string_equal(hlx_comm_choice_name(HLX_COMM_CHOICE_UCX_STAGED), "ucx-staged");
    assert_string_equal(hlx_comm_choice_name(HLX_COMM_CHOICE_UCX_DEVICE), "ucx-device");
    assert_string_equal(hlx_comm_choice_name(HLX_COMM_CHOICE_HOST), "host");
    assert_string_equal(hlx_comm_choice_name(HLX_COMM_CHOICE_COUNT), "?");
    assert_int_equal(hlx_nccl_mode_parse("on", &mode), HLX_OK);
    assert_int_equal(mode, HLX_NCCL_ON);
    assert_int_equal(hlx_nccl_mode_parse("auto", &mode), HLX_OK);
    assert_int_equal(mode, HLX_NCCL_AUTO);
    assert_int_equal(hlx_nccl_mode_parse("yes", &mode), HLX_ERR_INVALID);
    assert_int_equal(hlx_nccl_mode_parse(NULL, &mode), HLX_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_nvlink_node),
        cmocka_unit_test(test_two_nodes),
        cmocka_unit_test(test_hgx2_fixture),
        cmocka_unit_test(test_pcie_only),
        cmocka_unit_test(test_tcp_pair),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_matrix_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
