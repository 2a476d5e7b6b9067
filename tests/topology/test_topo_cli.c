/* topology: the `helix topo` command: JSON ranks and pairs for a few layouts (values worked
 * out from the fixtures), text output with attention and FFN ranks side by side, --dump,
 * and exit code 2 with the flag or file named for bad input. argv[1]: the helix binary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hlx_test_files.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hlx_config.h"

#define DATA HLX_SOURCE_ROOT "/tests/data/topology/"

static const char *helix;
static char out_path[] = "/tmp/hlx_topo_cli_out_XXXXXX";
static char err_path[] = "/tmp/hlx_topo_cli_err_XXXXXX";

/* Runs `helix topo ARGS`; returns the exit code, stdout and stderr (caller frees). */
static int run(const char *args, char **out, char **err)
{
    char cmd[2048];
    int st;

    snprintf(cmd, sizeof(cmd),
             "env -u HELIX_TOPO_FILE -u HELIX_TOPO_DUMP_FILE %s topo %s >%s 2>%s", helix, args,
             out_path, err_path);
    st = system(cmd);
    assert_true(st != -1 && WIFEXITED(st));
    *out = hlx_test_slurp(out_path, NULL);
    *err = hlx_test_slurp(err_path, NULL);
    return WEXITSTATUS(st);
}

static json_t *run_json(const char *args)
{
    char *out, *err;
    json_error_t je;
    json_t *root;
    int rc = run(args, &out, &err);

    if (rc != 0)
        fail_msg("helix topo %s: exit %d: %s", args, rc, err);
    root = json_loads(out, 0, &je);
    if (root == NULL)
        fail_msg("helix topo %s: output is not JSON (%s)", args, je.text);
    free(out);
    free(err);
    return root;
}

static int jint(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        fail_msg("missing integer \"%s\"", key);
    return (int)json_integer_value(v);
}

static const char *jstr(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        fail_msg("missing string \"%s\"", key);
    return json_string_value(v);
}

static int count_pairs(json_t *pairs, const char *kind, const char *link)
{
    size_t i;
    int n = 0;
    json_t *pp;

    json_array_foreach(pairs, i, pp)
        if (!strcmp(jstr(pp, "kind"), kind) && (link == NULL || !strcmp(jstr(pp, "link"), link)))
            n++;
    return n;
}

/* One HGX node, KVP 4 x TPA 2: rank r on GPU r, NIC r/2, NUMA r/4, all pairs NVLink. */
static void test_json_hgx8(void **state)
{
    json_t *root = run_json("--topo " DATA "hgx8.xml --kvp 4 --tpa 2 --json");
    json_t *ranks = json_object_get(root, "ranks"), *pairs = json_object_get(root, "pairs");
    json_t *rk, *pp;
    size_t i;
    (void)state;

    assert_int_equal(json_array_size(json_object_get(json_object_get(root, "machine"), "gpus")),
                     8);
    assert_int_equal(json_array_size(ranks), 8);
    json_array_foreach(ranks, i, rk) {
        int r = (int)i;
        assert_int_equal(jint(rk, "rank"), r);
        assert_int_equal(jint(rk, "node"), 0);
        assert_int_equal(jint(rk, "gpu"), r);
        assert_int_equal(jint(rk, "domain"), 0);
        assert_int_equal(jint(rk, "numa"), r / 4);
        assert_int_equal(jint(rk, "nic"), r / 2);
        assert_int_equal(jint(rk, "kvp_rank"), r % 4);
        assert_int_equal(jint(rk, "tpa_rank"), r / 4);
        assert_int_equal(jint(rk, "tpf_rank"), r);
        assert_int_equal(jint(rk, "ep_rank"), 0);
    }
    assert_int_equal(json_array_size(pairs), 20);
    json_array_foreach(pairs, i, pp) {
        int s = jint(pp, "src"), d = jint(pp, "dst");
        assert_true(s >= 0 && s < 8 && d >= 0 && d < 8 && s != d);
        assert_string_equal(jstr(pp, "link"), "nvlink");
        if (!strcmp(jstr(pp, "kind"), "a2a"))
            assert_int_equal(s / 4, d / 4); /* inside one KVP group */
    }
    assert_int_equal(count_pairs(pairs, "a2a", NULL), 12);
    assert_int_equal(count_pairs(pairs, "allreduce", NULL), 8);
    assert_null(json_object_get(root, "warnings"));
    json_decref(root);
}

/* KVP 16 on two 8-GPU nodes: 64 all-to-all pairs over RDMA, and a warning with its cost. */
static void test_json_split(void **state)
{
    json_t *root = run_json("--cluster " DATA "clusters/hgx2.json --topo " DATA
                            "hgx8.xml --kvp 16 --json");
    json_t *pairs = json_object_get(root, "pairs"), *w = json_object_get(root, "warnings");
    (void)state;

    assert_int_equal(count_pairs(pairs, "a2a", "rdma"), 64);
    assert_int_equal(count_pairs(pairs, "a2a", "nvlink"), 56);
    assert_true(json_array_size(w) == 1);
    assert_non_null(strstr(json_string_value(json_array_get(w, 0)), "64 of 120"));
    assert_int_equal(jint(json_object_get(root, "summary"), "a2a_cross_domain_pairs"), 64);
    json_decref(root);
}

/* --distribution: KVP 8 x TPA 2 on two 8-GPU nodes. Helix's placement and block keep each
 * KVP group on one node; cyclic (srun -m cyclic) alternates the nodes, so each group
 * spans both and the placement warns with the cost. */
static void test_json_distribution(void **state)
{
    static const char *const dist[3] = { "helix", "block", "cyclic" };
    char args[512];
    int d, r;
    (void)state;

    for (d = 0; d < 3; d++) {
        json_t *root, *ranks, *pairs;
        snprintf(args, sizeof(args), "--cluster " DATA "clusters/hgx2.json --topo " DATA
                 "hgx8.xml --kvp 8 --tpa 2 --distribution %s --json", dist[d]);
        root = run_json(args);
        ranks = json_object_get(root, "ranks");
        pairs = json_object_get(root, "pairs");
        assert_string_equal(json_string_value(json_object_get(root, "distribution")), dist[d]);
        assert_int_equal(json_array_size(ranks), 16);
        for (r = 0; r < 16; r++) {
            json_t *rk = json_array_get(ranks, (size_t)r);
            int want = d == 2 ? r % 2 : r / 8;
            if (jint(rk, "node") != want)
                fail_msg("--distribution %s: rank %d on node %d, expected %d", dist[d], r,
                         jint(rk, "node"), want);
            /* the k-th rank of a node on its k-th GPU */
            assert_int_equal(jint(rk, "gpu"), d == 2 ? (r / 2) : (r % 8));
        }
        if (d < 2) {
            assert_int_equal(count_pairs(pairs, "a2a", "nvlink"), 56);
            assert_null(json_object_get(root, "warnings"));
        } else {
            /* each group: 4 ranks on either node, 16 of its 28 pairs across */
            assert_int_equal(count_pairs(pairs, "a2a", "rdma"), 32);
            assert_int_equal(json_array_size(json_object_get(root, "warnings")), 1);
        }
        json_decref(root);
    }
}

/* CPU-only node, KVP 2 x TPA 2 with EP 2: cores per rank, shared memory everywhere, the FFN
 * grid beside the attention grid. */
static void test_json_cpu_ep(void **state)
{
    static const char *const cpus[4] = { "0-1", "2-3", "4-5", "6-7" };
    json_t *root = run_json("--topo " DATA "cpu2s.xml --kvp 2 --tpa 2 --ep 2 --json");
    json_t *ranks = json_object_get(root, "ranks"), *pairs = json_object_get(root, "pairs");
    json_t *rk, *pp;
    size_t i;
    (void)state;

    json_array_foreach(ranks, i, rk) {
        assert_int_equal(jint(rk, "gpu"), -1);
        assert_string_equal(jstr(rk, "cpuset"), cpus[i]);
        assert_int_equal(jint(rk, "tpf_rank"), (int)i % 2);
        assert_int_equal(jint(rk, "ep_rank"), (int)i / 2);
    }
    json_array_foreach(pairs, i, pp)
        assert_string_equal(jstr(pp, "link"), "shm");
    assert_int_equal(count_pairs(pairs, "ep_a2a", NULL), 2);
    assert_int_equal(count_pairs(pairs, "ffn_allreduce", NULL), 2);
    json_decref(root);
}

static void test_text(void **state)
{
    char *out, *err;
    (void)state;

    assert_int_equal(run("--topo " DATA "gb200.xml --kvp 2 --tpa 2", &out, &err), 0);
    assert_non_null(strstr(out, "gb200-tray-0"));
    assert_non_null(strstr(out, "mlx5_3"));
    assert_non_null(strstr(out, "nvlink900"));
    /* the table shows both grids of each rank: "| kvp tpa | tpf ep" */
    assert_non_null(strstr(out, "| kvp  tpa  | tpf  ep"));
    assert_non_null(strstr(out, "tpa 1: ranks 2-3"));
    free(out);
    free(err);
    assert_int_equal(run("--help", &out, &err), 0);
    assert_non_null(strstr(out, "--kvp"));
    assert_non_null(strstr(out, "--cluster"));
    free(out);
    free(err);
}

static void test_dump(void **state)
{
    char path[] = "/tmp/hlx_topo_cli_dump_XXXXXX", args[512];
    char *out, *err;
    int fd = mkstemp(path);
    (void)state;

    assert_true(fd >= 0);
    close(fd);
    snprintf(args, sizeof(args), "--topo %spcie4.xml --dump %s", DATA, path);
    assert_int_equal(run(args, &out, &err), 0);
    free(out);
    free(err);
    snprintf(args, sizeof(args), "--topo %s --json", path);
    {
        json_t *root = run_json(args);
        json_t *m = json_object_get(root, "machine");
        assert_string_equal(jstr(m, "hostname"), "pcie-box");
        assert_int_equal(jint(m, "nvlink_domains"), 4);
        json_decref(root);
    }
    unlink(path);
}

static void expect_bad(const char *args, const char *needle)
{
    char *out, *err;
    int rc = run(args, &out, &err);
    if (rc != 2)
        fail_msg("helix topo %s: exit %d, expected 2 (%s)", args, rc, err);
    if (strstr(err, needle) == NULL)
        fail_msg("helix topo %s: expected \"%s\" in \"%s\"", args, needle, err);
    free(out);
    free(err);
}

static void test_bad_input(void **state)
{
    (void)state;
    expect_bad("--kvp 0", "--kvp");
    expect_bad("--kvp two", "--kvp");
    expect_bad("--tpa 2", "--tpa needs --kvp");
    expect_bad("--distribution cyclic", "--distribution needs a layout");
    expect_bad("--kvp 2 --distribution zigzag", "not one of helix|block|cyclic");
    expect_bad("--frobnicate", "--frobnicate");
    expect_bad("--kvp", "--kvp");
    expect_bad("--topo " DATA "hgx8.xml --kvp 4 --tpa 2 --ep 3", "ep 3");
    expect_bad("--topo " DATA "hgx8.xml --kvp 4 --tpa 4", "16");
    expect_bad("--topo " DATA "bad-cpuset.xml", "bad-cpuset.xml");
    expect_bad("--topo " DATA "bad-nonsquare.xml", "NVLinkBandwidth");
    expect_bad("--topo " DATA "missing.xml", "missing.xml");
    expect_bad("--topo " DATA "cpu2s.xml --cluster " DATA "clusters/missing.json",
               "missing.json");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_hgx8),
        cmocka_unit_test(test_json_split),
        cmocka_unit_test(test_json_distribution),
        cmocka_unit_test(test_json_cpu_ep),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_dump),
        cmocka_unit_test(test_bad_input),
    };
    int fd, rc;

    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH/TO/helix\n", argv[0]);
        return 2;
    }
    helix = argv[1];
    fd = mkstemp(out_path);
    close(fd);
    fd = mkstemp(err_path);
    close(fd);
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(out_path);
    unlink(err_path);
    return rc;
}
