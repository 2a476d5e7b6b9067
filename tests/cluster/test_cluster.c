/* cluster: presets, link classes between GPUs, and file:line:column errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hlx_mutate.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <helix/model.h>

#include <helix/cluster.h>

static const char *g_data; /* tests/cluster/data */

static void test_nvl72(void **state)
{
    hlx_cluster_t c;
    char err[1024] = "";

    (void)state;
    assert_int_equal(hlx_cluster_load("gb200-nvl72", &c, err, sizeof(err)), HLX_OK);
    assert_int_equal(c.nnodes, 18);
    assert_int_equal(hlx_cluster_total_gpus(&c), 72);
    assert_int_equal(c.total_gpus, 72);
    assert_int_equal(c.ndomains, 1);
    assert_int_equal(c.max_domain_gpus, 72);
    assert_true(c.gpu.hbm_gbps == 8000.0);
    assert_true(c.link[HLX_LINK_NVLINK].bw_gbps == 900.0);
    assert_true(c.gpu.peak_tflops[HLX_DTYPE_FP4] > 0);
    /* GPU 0 and GPU 71 sit on different trays of the same domain */
    assert_int_equal(hlx_cluster_link(&c, 0, 71), HLX_LINK_NVLINK);
    assert_int_equal(hlx_cluster_link(&c, 0, 3), HLX_LINK_NVLINK);
    assert_int_equal(hlx_cluster_link(&c, 5, 5), HLX_LINK_SELF);
    assert_int_equal(hlx_cluster_link(&c, 0, 72), HLX_LINK_COUNT);
    assert_int_equal(hlx_cluster_gpu_node(&c, 71), 17);
    hlx_cluster_free(&c);
}

static void test_hgx(void **state)
{
    static const char *const names[] = { "hgx-h200", "hgx-b200" };
    static const double nvl[] = { 450.0, 900.0 }, hbm[] = { 4800.0, 8000.0 };
    hlx_cluster_t c;
    char err[1024] = "";
    int i;

    (void)state;
    for (i = 0; i < 2; i++) {
        assert_int_equal(hlx_cluster_load(names[i], &c, err, sizeof(err)), HLX_OK);
        assert_int_equal(c.max_domain_gpus, 8);
        assert_int_equal(c.ndomains, c.nnodes);
        assert_true(c.link[HLX_LINK_NVLINK].bw_gbps == nvl[i]);
        assert_true(c.link[HLX_LINK_RDMA].bw_gbps == 50.0); /* 400 Gb/s */
        assert_true(c.gpu.hbm_gbps == hbm[i]);
        assert_int_equal(hlx_cluster_link(&c, 0, 7), HLX_LINK_NVLINK);
        assert_int_equal(hlx_cluster_link(&c, 7, 8), HLX_LINK_RDMA);
        assert_int_equal(hlx_cluster_domain_gpus(&c, 1), 8);
        hlx_cluster_free(&c);
    }
}

static void test_mixed(void **state)
{
    hlx_cluster_t c;
    char path[1024], err[1024] = "";

    (void)state;
    snprintf(path, sizeof(path), "%s/mixed.json", g_data);
    assert_int_equal(hlx_cluster_load(path, &c, err, sizeof(err)), HLX_OK);
    assert_int_equal(c.nnodes, 3);
    assert_int_equal(c.total_gpus, 10);
    assert_int_equal(c.ndomains, 2);
    assert_int_equal(c.max_domain_gpus, 8);
    assert_int_equal(c.nodes[2].first_gpu, 8);
    assert_int_equal(c.nodes[2].rack, 5);
    assert_int_equal(c.nodes[0].nics, 4); /* one NIC per GPU by default */
    assert_int_equal(hlx_cluster_link(&c, 1, 6), HLX_LINK_NVLINK); /* a and b share a domain */
    assert_int_equal(hlx_cluster_link(&c, 8, 9), HLX_LINK_PCIE);   /* c has no NVLink */
    assert_int_equal(hlx_cluster_link(&c, 3, 9), HLX_LINK_RDMA);
    assert_true(c.link[HLX_LINK_PCIE].latency_us == 4.0);
    hlx_cluster_free(&c);
}

/* CPU-only hosts: "gpus": 0 is a host without GPUs, with one NIC unless told otherwise. */
static void test_cpu_hosts(void **state)
{
    hlx_cluster_t c;
    char path[1024], err[1024] = "";

    (void)state;
    snprintf(path, sizeof(path), "%s/cpu_hosts.json", g_data);
    assert_int_equal(hlx_cluster_load(path, &c, err, sizeof(err)), HLX_OK);
    assert_int_equal(c.nnodes, 3);
    assert_int_equal(c.total_gpus, 0);
    assert_int_equal(c.ndomains, 3);
    assert_string_equal(c.nodes[2].name, "h2");
    assert_int_equal(c.nodes[0].nics, 1);
    assert_int_equal(c.nodes[2].nics, 2);
    assert_int_equal(c.nodes[1].rack, 0);
    assert_int_equal(c.nodes[2].rack, 1);
    assert_true(c.link[HLX_LINK_TCP].bw_gbps == 1.0);
    hlx_cluster_free(&c);
}

static void test_link_names(void **state)
{
    hlx_link_t l;
    int i;

    (void)state;
    for (i = 0; i < HLX_LINK_COUNT; i++) {
        assert_int_equal(hlx_link_parse(hlx_link_name((hlx_link_t)i), &l), 0);
        assert_int_equal(l, i);
    }
    assert_int_equal(hlx_link_parse("ib", &l), 0);
    assert_int_equal(l, HLX_LINK_RDMA);
    assert_int_equal(hlx_link_parse("ethernet", &l), -1);
}

static void expect_error(const char *file, hlx_status_t want, const char *msg)
{
    char path[1024], err[1024] = "";
    hlx_cluster_t c;

    snprintf(path, sizeof(path), "%s/%s", g_data, file);
    assert_int_equal(hlx_cluster_load(path, &c, err, sizeof(err)), want);
    if (strstr(err, msg) == NULL)
        fail_msg("%s: expected \"%s\" in \"%s\"", file, msg, err);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("unknown_link.json", HLX_ERR_PARSE,
                 "unknown_link.json:5:5: nvlnk: unknown link class (did you mean \"nvlink\"?)");
    expect_error("nondividing.json", HLX_ERR_PARSE,
                 "nondividing.json:3:3: nodes_per_domain: 2 does not divide nodes 9");
    expect_error("negative_bw.json", HLX_ERR_PARSE,
                 "negative_bw.json:6:32: bw_gbps: -50 is outside [0, 1e+07]");
    expect_error("nan_bw.json", HLX_ERR_PARSE, "nan_bw.json:5:");
    expect_error("domain_gap.json", HLX_ERR_PARSE,
                 "domain_gap.json:7:7: domain: domain 2 used but domain 1 has no nodes");
    expect_error("missing_fp4.json", HLX_ERR_PARSE,
                 "missing_fp4.json:4:12: fp4: required key is missing (dense TFLOP/s)");
    expect_error("no_internode.json", HLX_ERR_PARSE,
                 "no_internode.json:4:3: links: 2 NVLink domains but neither rdma nor tcp");
    expect_error("zero_hbm.json", HLX_ERR_PARSE,
                 "zero_hbm.json:4:5: hbm_gbps: 0 is outside [0.001, 1e+07]");
    expect_error("gpus_no_gpu.json", HLX_ERR_PARSE,
                 "gpu: required key is missing (the cluster has 2 GPUs)");
    /* two nodes of one name: the second is named, at its own "name" or, unnamed, its node */
    expect_error("dup_node.json", HLX_ERR_PARSE,
                 "dup_node.json:11:18: name: \"a\" is already the name of node 0; give each "
                 "node its own name");
    expect_error("dup_default_name.json", HLX_ERR_PARSE,
                 "dup_default_name.json:10:5: name: \"node1\" is already the name of node 0 "
                 "(this node has none: node<i> is its default)");
}

static void test_unknown_preset(void **state)
{
    hlx_cluster_t c;
    char err[1024] = "";

    (void)state;
    assert_int_equal(hlx_cluster_load("gb200-nvl73", &c, err, sizeof(err)), HLX_ERR_NOT_FOUND);
    assert_non_null(strstr(err, "gb200-nvl72, hgx-b200, hgx-h200"));
}

/* Every truncation of a preset and every single-character corruption of it is either
 * accepted or refused with "path:line:column: ..."; nothing crashes or leaks. */
static hlx_status_t load_cluster(const char *path, char *err, size_t errlen)
{
    hlx_cluster_t c;
    hlx_status_t st = hlx_cluster_load(path, &c, err, errlen);

    if (st == HLX_OK) {
        int i, g = 0;
        for (i = 0; i < c.nnodes; i++)
            g += c.nodes[i].gpus;
        assert_int_equal(c.total_gpus, g); /* 0 only for CPU-only hosts */
        hlx_cluster_free(&c);
    }
    return st;
}

static void test_mutations(void **state)
{
    char src[1024];

    (void)state;
    snprintf(src, sizeof(src), "%s/clusters/hgx-h200.json", hlx_data_dir());
    hlx_mutate_file(src, load_cluster);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvl72),
        cmocka_unit_test(test_hgx),
        cmocka_unit_test(test_mixed),
        cmocka_unit_test(test_cpu_hosts),
        cmocka_unit_test(test_link_names),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_unknown_preset),
        cmocka_unit_test(test_mutations),
    };

    g_data = argc > 1 ? argv[1] : "tests/cluster/data";
    return cmocka_run_group_tests(tests, NULL, NULL);
}
