/* topology: discovery from the hwloc XML fixtures (GPUs, NICs, NVLink domains, locality),
 * the refusal of broken files with file, line and object, dump/replay, and the live machine.
 * Expected values are read off the machine descriptions in tests/data/topology/gen_fixtures.py. */
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

#if defined(__SANITIZE_ADDRESS__)
#define HLX_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HLX_TEST_ASAN 1
#endif
#endif

#define DATA HLX_SOURCE_ROOT "/tests/data/topology/"

static hlx_topo_t *load_ok(const char *name)
{
    hlx_topo_t *t = NULL;
    char err[1024] = "";
    hlx_status_t st = hlx_topo_load(name, &t, err, sizeof(err));
    if (st != HLX_OK)
        fail_msg("loading %s: %s (%s)", name ? name : "this machine", err, hlx_status_str(st));
    return t;
}

static void test_hgx8(void **state)
{
    static const char *const bus[8] = { "0000:18:00.0", "0000:1c:00.0", "0000:3a:00.0",
                                        "0000:3e:00.0", "0000:9a:00.0", "0000:9e:00.0",
                                        "0000:ba:00.0", "0000:be:00.0" };
    hlx_topo_t *t = load_ok(DATA "hgx8.xml");
    hlx_topo_info_t in;
    int i;
    (void)state;

    hlx_topo_get_info(t, &in);
    assert_string_equal(in.hostname, "hgx-node-0");
    assert_int_equal(in.this_system, 0);
    assert_int_equal(in.npackages, 2);
    assert_int_equal(in.nnuma, 2);
    assert_int_equal(in.ncores, 8);
    assert_int_equal(in.npus, 16);
    assert_int_equal(in.ngpus, 8);
    assert_int_equal(in.nnics, 5);
    assert_int_equal(in.nrdma_nics, 4);
    assert_int_equal(in.ndomains, 1);
    assert_int_equal(in.nvlink_src, HLX_TOPO_NVLINK_HWLOC);
    for (i = 0; i < 8; i++) {
        const hlx_topo_gpu_t *g = hlx_topo_gpu(t, i);
        assert_non_null(g);
        assert_string_equal(g->busid, bus[i]);
        assert_int_equal(g->vendor_id, 0x10de);
        assert_int_equal(g->domain, 0);
        /* GPUs 0-3 hang off socket 0 (cores 0-3, threads k and k+8), 4-7 off socket 1 */
        assert_int_equal(g->package, i / 4);
        assert_int_equal(g->numa, i / 4);
        assert_string_equal(g->cpuset, i < 4 ? "0-3,8-11" : "4-7,12-15");
        /* each PCIe switch holds two GPUs and one ConnectX: the GPU's NIC is its switch's */
        assert_int_equal(g->nic, i / 2);
        assert_int_equal(g->nic_hops, 1);
        assert_int_equal(g->cuda_device, -1);
    }
    assert_null(hlx_topo_gpu(t, 8));
    assert_int_equal(hlx_topo_gpu_link(t, 0, 0), HLX_LINK_SELF);
    assert_int_equal(hlx_topo_gpu_link(t, 0, 7), HLX_LINK_NVLINK);
    assert_true(hlx_topo_nvlink_gbps(t, 0, 7) == 450.0);
    assert_true(hlx_topo_nvlink_gbps(t, 3, 3) == 0.0);
    /* RDMA NICs first, by bus id; the management port last */
    assert_string_equal(hlx_topo_nic(t, 0)->name, "mlx5_0");
    assert_string_equal(hlx_topo_nic(t, 0)->netdev, "ibp26s0");
    assert_string_equal(hlx_topo_nic(t, 0)->busid, "0000:1a:00.0");
    assert_string_equal(hlx_topo_nic(t, 3)->name, "mlx5_3");
    assert_int_equal(hlx_topo_nic(t, 3)->numa, 1);
    assert_string_equal(hlx_topo_nic(t, 4)->name, "eno1");
    assert_int_equal(hlx_topo_nic(t, 4)->rdma, 0);
    hlx_topo_free(t);
}

static void test_gb200(void **state)
{
    hlx_topo_t *t = load_ok(DATA "gb200.xml");
    hlx_topo_info_t in;
    int i;
    (void)state;

    hlx_topo_get_info(t, &in);
    assert_int_equal(in.ngpus, 4);
    assert_int_equal(in.nrdma_nics, 4);
    /* the matrix is over NVML OS devices below the GPUs: still one domain */
    assert_int_equal(in.ndomains, 1);
    assert_int_equal(in.nvlink_src, HLX_TOPO_NVLINK_HWLOC);
    assert_string_equal(hlx_topo_gpu(t, 0)->busid, "0008:01:00.0");
    assert_string_equal(hlx_topo_gpu(t, 3)->busid, "0019:01:00.0");
    for (i = 0; i < 4; i++) {
        const hlx_topo_gpu_t *g = hlx_topo_gpu(t, i);
        assert_int_equal(g->domain, 0);
        assert_string_equal(g->cpuset, i < 2 ? "0-3" : "4-7");
        /* two NICs per socket, equally close (host bridge -> package): shared out evenly */
        assert_int_equal(g->nic, i);
        assert_int_equal(g->nic_hops, 2);
    }
    assert_true(hlx_topo_nvlink_gbps(t, 0, 3) == 900.0);
    hlx_topo_free(t);
}

static void test_pcie4(void **state)
{
    hlx_topo_t *t = load_ok(DATA "pcie4.xml");
    hlx_topo_info_t in;
    int i;
    (void)state;

    hlx_topo_get_info(t, &in);
    assert_int_equal(in.ngpus, 4);
    assert_int_equal(in.ndomains, 4);
    assert_int_equal(in.nvlink_src, HLX_TOPO_NVLINK_NONE);
    for (i = 0; i < 4; i++) {
        assert_int_equal(hlx_topo_gpu(t, i)->domain, i);
        assert_int_equal(hlx_topo_gpu(t, i)->nic, 0);
    }
    assert_int_equal(hlx_topo_gpu_link(t, 0, 1), HLX_LINK_PCIE);
    assert_true(hlx_topo_nvlink_gbps(t, 0, 1) == 0.0);
    /* class 0x0200 but with a verbs device: RoCE counts as RDMA */
    assert_int_equal(hlx_topo_nic(t, 0)->rdma, 1);
    assert_string_equal(hlx_topo_nic(t, 0)->name, "mlx5_0");
    hlx_topo_free(t);
}

static void test_cpu_only(void **state)
{
    hlx_topo_t *t = load_ok(DATA "cpu2s.xml");
    hlx_topo_info_t in;
    hlx_cluster_t c;
    (void)state;

    hlx_topo_get_info(t, &in);
    assert_int_equal(in.ngpus, 0);
    assert_int_equal(in.ndomains, 0);
    assert_int_equal(in.nnics, 1);
    assert_int_equal(in.nrdma_nics, 0);
    assert_string_equal(hlx_topo_nic(t, 0)->name, "enp3s0f0");
    assert_string_equal(hlx_topo_nic(t, 0)->cpuset, "0-3");
    assert_int_equal(hlx_topo_to_cluster(t, &c), HLX_OK);
    assert_int_equal(c.nnodes, 1);
    assert_int_equal(c.nodes[0].gpus, 0);
    assert_string_equal(c.nodes[0].name, "cpu-node");
    hlx_cluster_free(&c);
    hlx_topo_free(t);
}

static void expect_refused(const char *file, const char *const *parts)
{
    hlx_topo_t *t = NULL;
    char err[1024] = "";
    hlx_status_t st = hlx_topo_load(file, &t, err, sizeof(err));
    const char *const *p;

    assert_int_equal(st, HLX_ERR_PARSE);
    assert_null(t);
    if (strstr(err, file) == NULL)
        fail_msg("error does not name the file %s: %s", file, err);
    for (p = parts; *p != NULL; p++)
        if (strstr(err, *p) == NULL)
            fail_msg("expected \"%s\" in \"%s\"", *p, err);
}

static int line_of(const char *file, const char *needle)
{
    FILE *f = fopen(file, "r");
    char buf[4096];
    int line = 0, found = -1;

    assert_non_null(f);
    while (found < 0 && fgets(buf, sizeof(buf), f) != NULL) {
        line++;
        if (strstr(buf, needle) != NULL)
            found = line;
    }
    fclose(f);
    assert_true(found > 0);
    return found;
}

static void test_broken(void **state)
{
    static const char *const trunc[] = { "truncated", "never closed", NULL };
    static char where[32];
    static const char *const cpuset[] = { where, "object Core os_index=5", "\"0xzz\"", NULL };
    static const char *const empty[] = { "object Core os_index=2", "empty cpuset", NULL };
    static const char *const square[] = { "NVLinkBandwidth", "56 values", "expected 64", NULL };
    static const char *const neg[] = { "NVLinkBandwidth", "\"-450000\"", NULL };
    static const char *const pu[] = { "Core L#7", "CPUs 15", NULL };
    static const char *const dup[] = { "bad-dupindex.xml:", "NVLinkBandwidth",
                                       "PCIDev object gp_index=18", "listed twice", NULL };
    static const char *const core[] = { "bad-corematrix.xml:", "NVLinkBandwidth",
                                        "over Core objects", NULL };
    (void)state;

    /* the error names the line of that Core's start tag, found here in the file itself */
    snprintf(where, sizeof(where), ":%d:",
             line_of(DATA "bad-cpuset.xml", "type=\"Core\" os_index=\"5\""));
    expect_refused(DATA "bad-truncated.xml", trunc);
    expect_refused(DATA "bad-cpuset.xml", cpuset);
    expect_refused(DATA "bad-emptycpuset.xml", empty);
    expect_refused(DATA "bad-nonsquare.xml", square);
    expect_refused(DATA "bad-negative.xml", neg);
    expect_refused(DATA "bad-missing-pu.xml", pu);
    expect_refused(DATA "bad-dupindex.xml", dup);
    expect_refused(DATA "bad-corematrix.xml", core);
}

static void test_missing_and_garbage(void **state)
{
    hlx_topo_t *t = NULL;
    char err[512] = "", path[] = "/tmp/hlx_topo_garbage_XXXXXX";
    int fd;
    (void)state;

    /* a missing file or a directory is bad input (exit 2), each said as such */
    assert_int_equal(hlx_topo_load(DATA "no-such-file.xml", &t, err, sizeof(err)),
                     HLX_ERR_NOT_FOUND);
    assert_non_null(strstr(err, "no-such-file.xml: no such topology file"));
    assert_int_equal(hlx_status_exit_code(HLX_ERR_NOT_FOUND), 2);
    assert_int_equal(hlx_topo_load(DATA, &t, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "is a directory, not a topology file"));
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "{\"not\": \"xml\"}\n", 15), 15);
    close(fd);
    assert_int_equal(hlx_topo_load(path, &t, err, sizeof(err)), HLX_ERR_PARSE);
    assert_non_null(strstr(err, "not an hwloc XML topology"));
    unlink(path);
}

/* Inputs that crash hwloc 2.9 itself (found by fuzzing) are refused before it reads them:
 * a bitmap with a leading comma (hwloc_bitmap_sscanf asserts) and an object without
 * complete_cpuset (hwloc dereferences it). Each is cpu2s.xml with one edit. */
static void expect_edit_refused(const char *from, const char *to, const char *needle)
{
    FILE *f = fopen(DATA "cpu2s.xml", "rb");
    char text[16384], out[16400], path[] = "/tmp/hlx_topo_edit_XXXXXX", err[512] = "";
    size_t n;
    char *at;
    hlx_topo_t *t = NULL;
    int fd;

    assert_non_null(f);
    n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    at = strstr(text, from);
    assert_non_null(at);
    snprintf(out, sizeof(out), "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, out, strlen(out)), (ssize_t)strlen(out));
    close(fd);
    assert_int_equal(hlx_topo_load(path, &t, err, sizeof(err)), HLX_ERR_PARSE);
    if (strstr(err, needle) == NULL || strstr(err, path) == NULL)
        fail_msg("expected \"%s\" and the file name in \"%s\"", needle, err);
    unlink(path);
}

static void test_hwloc_crashers(void **state)
{
    (void)state;
    expect_edit_refused(" cpuset=\"0x000000ff\"", " cpuset=\",0x000000ff\"",
                        "not an hwloc bitmap");
    expect_edit_refused(" complete_cpuset=\"0x000000ff\"", "", "no complete_cpuset");
    expect_edit_refused("encoding=\"UTF-8\"", "encoding=\"UsTF-8\"", "UTF-8");
}

/* HELIX_TOPO_FILE replaces discovery; HELIX_TOPO_DUMP_FILE writes what was used, and the
 * dump reads back to the same machine. */
static void test_env_and_dump(void **state)
{
    char dump[] = "/tmp/hlx_topo_dump_XXXXXX";
    hlx_topo_t *t = NULL, *u = NULL;
    hlx_topo_info_t a, b;
    char err[512];
    int fd, i;
    (void)state;

    fd = mkstemp(dump);
    assert_true(fd >= 0);
    close(fd);
    setenv("HELIX_TOPO_FILE", DATA "gb200.xml", 1);
    setenv("HELIX_TOPO_DUMP_FILE", dump, 1);
    assert_int_equal(hlx_topo_load(NULL, &t, err, sizeof(err)), HLX_OK);
    unsetenv("HELIX_TOPO_FILE");
    unsetenv("HELIX_TOPO_DUMP_FILE");
    hlx_topo_get_info(t, &a);
    assert_string_equal(a.source, DATA "gb200.xml");
    assert_int_equal(hlx_topo_load(dump, &u, err, sizeof(err)), HLX_OK);
    hlx_topo_get_info(u, &b);
    assert_string_equal(b.hostname, "gb200-tray-0");
    assert_int_equal(b.ngpus, a.ngpus);
    assert_int_equal(b.nnics, a.nnics);
    assert_int_equal(b.ndomains, 1);
    for (i = 0; i < a.ngpus; i++) {
        assert_string_equal(hlx_topo_gpu(u, i)->busid, hlx_topo_gpu(t, i)->busid);
        assert_int_equal(hlx_topo_gpu(u, i)->nic, hlx_topo_gpu(t, i)->nic);
        assert_string_equal(hlx_topo_gpu(u, i)->cpuset, hlx_topo_gpu(t, i)->cpuset);
    }
    hlx_topo_free(u);
    hlx_topo_free(t);
    unlink(dump);
}

/* This machine: whatever it has, the topology is this system and passes validation. */
static void test_live(void **state)
{
    hlx_topo_t *t = load_ok(NULL);
    hlx_topo_info_t in;
    char err[256];
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    (void)state;

    hlx_topo_get_info(t, &in);
    assert_string_equal(in.source, "live");
    assert_int_equal(in.this_system, 1);
    assert_true(in.npus >= 1);
    assert_true(online < 1 || in.npus <= online);
    assert_int_equal(hlx_topo_validate(t, err, sizeof(err)), HLX_OK);
    hlx_topo_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hgx8),
        cmocka_unit_test(test_gb200),
        cmocka_unit_test(test_pcie4),
        cmocka_unit_test(test_cpu_only),
        cmocka_unit_test(test_broken),
        cmocka_unit_test(test_missing_and_garbage),
        cmocka_unit_test(test_hwloc_crashers),
        cmocka_unit_test(test_env_and_dump),
        cmocka_unit_test(test_live),
    };
    /* hwloc's PCI discovery (libpciaccess) leaks about 1 KB per load in Debian 12: under
     * AddressSanitizer the live-machine checks run without it */
#ifdef HLX_TEST_ASAN
    setenv("HWLOC_COMPONENTS", "-pci", 0);
#endif
    unsetenv("HELIX_TOPO_FILE");
    unsetenv("HELIX_TOPO_DUMP_FILE");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
