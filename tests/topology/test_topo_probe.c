/* topology: the run-time sources (NVML for NVLink, the CUDA driver for device ordinals)
 * through stand-in libraries (fake_nvml.c, fake_cuda.c), the dump that replays what NVML
 * found, and a placement on the two NVLink domains NVML reports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <helix/topology.h>
#include "hlx_config.h"

#define DATA HLX_SOURCE_ROOT "/tests/data/topology/"

static hlx_topo_t *load(const char *file)
{
    hlx_topo_t *t = NULL;
    char err[512] = "";
    if (hlx_topo_load(file, &t, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    return t;
}

static void use_fakes(int on)
{
    setenv("HELIX_TOPO_THISSYSTEM", on ? "1" : "0", 1);
    setenv("HELIX_TOPO_NVML_LIB", on ? getenv("HLX_FAKE_NVML") : "none", 1);
    setenv("HELIX_TOPO_CUDA_LIB", on ? getenv("HLX_FAKE_CUDA") : "none", 1);
}

static void test_nvml_domains(void **state)
{
    char dump[] = "/tmp/hlx_topo_nvml_XXXXXX";
    hlx_topo_t *t, *u;
    hlx_topo_info_t in;
    int g, fd;
    (void)state;

    fd = mkstemp(dump);
    assert_true(fd >= 0);
    close(fd);
    use_fakes(1);
    setenv("HELIX_TOPO_DUMP_FILE", dump, 1);
    t = load(DATA "hgx8-nomatrix.xml");
    unsetenv("HELIX_TOPO_DUMP_FILE");
    hlx_topo_get_info(t, &in);
    assert_int_equal(in.this_system, 1);
    assert_int_equal(in.nvlink_src, HLX_TOPO_NVLINK_NVML);
    assert_int_equal(in.ndomains, 2);
    for (g = 0; g < 8; g++) {
        assert_int_equal(hlx_topo_gpu(t, g)->domain, g / 4);
        assert_int_equal(hlx_topo_gpu(t, g)->cuda_device, 7 - g);
    }
    /* 4 links x 25 GB/s to the shared switch; GPU 7 reaches it over 3 */
    assert_true(hlx_topo_nvlink_gbps(t, 0, 3) == 100.0);
    assert_true(hlx_topo_nvlink_gbps(t, 4, 7) == 75.0);
    assert_true(hlx_topo_nvlink_gbps(t, 0, 4) == 0.0);
    assert_int_equal(hlx_topo_gpu_link(t, 0, 4), HLX_LINK_PCIE);

    /* the dump carries NVML's answer as an NVLinkBandwidth matrix: replay without NVML */
    use_fakes(0);
    u = load(dump);
    hlx_topo_get_info(u, &in);
    assert_int_equal(in.this_system, 0);
    assert_int_equal(in.nvlink_src, HLX_TOPO_NVLINK_HWLOC);
    assert_int_equal(in.ndomains, 2);
    for (g = 0; g < 8; g++)
        assert_int_equal(hlx_topo_gpu(u, g)->domain, g / 4);
    assert_true(hlx_topo_nvlink_gbps(u, 1, 2) == 100.0);
    hlx_topo_free(u);
    hlx_topo_free(t);
    unlink(dump);
}

static void test_sources_order(void **state)
{
    hlx_topo_t *t;
    hlx_topo_info_t in;
    (void)state;

    /* a file's own matrix wins over NVML */
    use_fakes(1);
    t = load(DATA "hgx8.xml");
    hlx_topo_get_info(t, &in);
    assert_int_equal(in.nvlink_src, HLX_TOPO_NVLINK_HWLOC);
    assert_int_equal(in.ndomains, 1);
    hlx_topo_free(t);
    /* a file that is not this system never asks NVML or CUDA */
    use_fakes(0);
    setenv("HELIX_TOPO_NVML_LIB", getenv("HLX_FAKE_NVML"), 1);
    setenv("HELIX_TOPO_CUDA_LIB", getenv("HLX_FAKE_CUDA"), 1);
    t = load(DATA "hgx8-nomatrix.xml");
    hlx_topo_get_info(t, &in);
    assert_int_equal(in.nvlink_src, HLX_TOPO_NVLINK_NONE);
    assert_int_equal(in.ndomains, 8);
    assert_int_equal(hlx_topo_gpu(t, 0)->cuda_device, -1);
    hlx_topo_free(t);
    /* a library that is not there is no information, not an error */
    use_fakes(1);
    setenv("HELIX_TOPO_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
    t = load(DATA "hgx8-nomatrix.xml");
    hlx_topo_get_info(t, &in);
    assert_int_equal(in.ndomains, 8);
    hlx_topo_free(t);
}

/* KVP 4 fits in each NVML domain; KVP 8 must span both, over PCIe inside the node. */
static void test_place_on_nvml_domains(void **state)
{
    hlx_topo_t *t;
    hlx_placement_t *p = NULL;
    char err[256];
    int r;
    (void)state;

    use_fakes(1);
    t = load(DATA "hgx8-nomatrix.xml");
    assert_int_equal(hlx_place(NULL, 4, 2, 1, t, &p, err, sizeof(err)), HLX_OK);
    for (r = 0; r < 8; r++) {
        assert_int_equal(p->ranks[r].domain, r / 4);
        assert_int_equal(p->ranks[r].cuda_device, 7 - r);
    }
    assert_int_equal(p->a2a_cross_pairs, 0);
    assert_int_equal(hlx_place_link(p, 3, 4), HLX_LINK_PCIE);
    hlx_placement_free(p);
    assert_int_equal(hlx_place(NULL, 8, 1, 1, t, &p, err, sizeof(err)), HLX_OK);
    assert_int_equal(p->split_groups, 1);
    assert_int_equal(p->a2a_cross_pairs, 16);
    hlx_placement_free(p);
    hlx_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nvml_domains),
        cmocka_unit_test(test_sources_order),
        cmocka_unit_test(test_place_on_nvml_domains),
    };
    if (getenv("HLX_FAKE_NVML") == NULL || getenv("HLX_FAKE_CUDA") == NULL) {
        fprintf(stderr, "HLX_FAKE_NVML / HLX_FAKE_CUDA not set: run through meson test\n");
        return 77;
    }
    unsetenv("HELIX_TOPO_FILE");
    unsetenv("HELIX_TOPO_DUMP_FILE");
    setenv("HELIX_TOPO_VERBS_LIB", "none", 1);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
