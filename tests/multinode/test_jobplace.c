/* multinode (unit): the job-wide placement from per-rank host summaries, worked out by hand:
 * hosts kept where the launcher put the ranks, the k-th rank of a host on its k-th GPU,
 * cluster files matched by node name, the block-layout warning (hosts and racks), link
 * arrays, the UCX device of an RDMA NIC, agreement with hlx_place on the same cluster, and
 * the busiest CPU's load over the ranks' CPU masks. */
#define _GNU_SOURCE
#include <math.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <helix/jobplace.h>
#include "hlx_config.h"
#define HLX_TEST_TOPO
#include "hlx_test_files.h"

#define DATA HLX_SOURCE_ROOT "/tests/data/topology/"

/* n summaries of topology t, rank r on host names[host_of[r]] */
static hlx_host_summary_t *summaries(const hlx_topo_t *t, int n, const int *host_of,
                                     const char *const *names)
{
    hlx_host_summary_t *s = calloc((size_t)n, sizeof(*s));
    int r, q, local;
    assert_non_null(s);
    for (r = 0; r < n; r++) {
        for (q = 0, local = 0; q < r; q++)
            local += host_of[q] == host_of[r];
        hlx_host_summary(t, names[host_of[r]], local, &s[r]);
    }
    return s;
}

static void job(const hlx_host_summary_t *s, int n, const hlx_cluster_t *c, int kvp, int tpa,
                const hlx_topo_t *t, hlx_job_place_t *j)
{
    char err[512] = "";
    if (hlx_place_job(s, n, c, kvp, tpa, 1, t, 4096, j, err, sizeof(err)) != HLX_OK)
        fail_msg("job placement kvp %d tpa %d: %s", kvp, tpa, err);
}

/* Two HGX hosts, KVP 8 x TPA 2, block: each KVP group on one host's NVLink domain. */
static void test_gpu_block(void **state)
{
    static const char *const names[] = { "gpu-a", "gpu-b" };
    hlx_topo_t *t = hlx_test_topo(DATA "hgx8.xml");
    int host_of[16], r;
    hlx_host_summary_t *s;
    hlx_job_place_t j;
    hlx_link_t links[16];
    char dev[64];

    (void)state;
    for (r = 0; r < 16; r++)
        host_of[r] = r / 8;
    s = summaries(t, 16, host_of, names);
    job(s, 16, NULL, 8, 2, t, &j);
    assert_int_equal(j.nhosts, 2);
    assert_string_equal(j.cluster.nodes[1].name, "gpu-b");
    assert_int_equal(j.place->ranks[9].node, 1);
    assert_int_equal(j.place->ranks[9].gpu, 1);  /* second rank of gpu-b: its GPU 1 */
    assert_int_equal(j.place->a2a_cross_pairs, 0);
    assert_int_equal(j.worse, 0);
    assert_int_equal(hlx_place_links(j.place, 0, links), 16);
    assert_int_equal(links[0], HLX_LINK_SELF);
    assert_int_equal(links[7], HLX_LINK_NVLINK);
    assert_int_equal(links[8], HLX_LINK_RDMA);   /* every host has RDMA NICs */
    assert_int_equal(hlx_place_links(j.place, 16, links), 0);
    /* the nearest NIC of GPU 0 in hgx8.xml is the first ConnectX-7 */
    assert_int_equal(hlx_place_net_device(j.place, t, 0, dev, sizeof(dev)), 1);
    assert_string_equal(dev, "mlx5_0:1");
    hlx_job_place_free(&j);
    free(s);
    hlx_topo_free(t);
}

/* The same hosts with the launcher's cyclic order: every KVP group spans both hosts. */
static void test_gpu_cyclic_warns(void **state)
{
    static const char *const names[] = { "gpu-a", "gpu-b" };
    hlx_topo_t *t = hlx_test_topo(DATA "hgx8.xml");
    int host_of[16], r;
    hlx_host_summary_t *s;
    hlx_job_place_t j, b;

    (void)state;
    for (r = 0; r < 16; r++)
        host_of[r] = r % 2;
    s = summaries(t, 16, host_of, names);
    job(s, 16, NULL, 8, 2, t, &j);
    assert_int_equal(j.place->ranks[1].node, 1);
    assert_int_equal(j.place->ranks[3].gpu, 1);
    /* 4 + 4 per group: 16 of 28 pairs cross, twice */
    assert_int_equal(j.place->a2a_cross_pairs, 32);
    assert_int_equal(j.worse, 1);
    assert_non_null(strstr(j.warning, "32 of 56 all-to-all pairs cross hosts"));
    assert_non_null(strstr(j.warning, "would have 0 (0 racks) and 0."));
    assert_non_null(strstr(j.warning, "instead of"));
    /* the hash covers the layout: the block order hashes differently */
    for (r = 0; r < 16; r++)
        host_of[r] = r / 8;
    free(s);
    s = summaries(t, 16, host_of, names);
    job(s, 16, NULL, 8, 2, t, &b);
    assert_true(j.hash != b.hash);
    hlx_job_place_free(&b);
    job(s, 16, NULL, 8, 2, t, &b);
    hlx_job_place_free(&j);
    job(s, 16, NULL, 8, 2, t, &j);
    assert_true(j.hash == b.hash); /* deterministic */
    hlx_job_place_free(&j);
    hlx_job_place_free(&b);
    free(s);
    hlx_topo_free(t);
}

/* A cluster file names the hosts: ranks map to its nodes by name, in the file's order. */
static void test_cluster_file_names(void **state)
{
    static const char *const names[] = { "node1", "node0", "node7" };
    hlx_topo_t *t = hlx_test_topo(DATA "hgx8.xml");
    hlx_cluster_t c;
    int host_of[16], r;
    hlx_host_summary_t *s;
    hlx_job_place_t j;
    char err[512] = "";

    (void)state;
    hlx_test_cluster(DATA "clusters/hgx2.json", &c);
    for (r = 0; r < 16; r++)
        host_of[r] = r / 8;
    s = summaries(t, 16, host_of, names);
    job(s, 16, &c, 8, 2, t, &j);
    assert_int_equal(j.place->ranks[0].node, 1);
    assert_int_equal(j.place->ranks[8].node, 0);
    assert_int_equal(j.place->ranks[8].gpu_global, 0);
    assert_string_equal(j.cluster.name, "hgx2");
    hlx_job_place_free(&j);
    free(s);
    host_of[15] = 2; /* a host the file does not name */
    s = summaries(t, 16, host_of, names);
    assert_int_equal(hlx_place_job(s, 16, &c, 8, 2, 1, t, 4096, &j, err, sizeof(err)),
                     HLX_ERR_INVALID);
    assert_non_null(strstr(err, "node node7 (rank 15) is not in cluster \"hgx2\""));
    free(s);
    /* nine ranks on an 8-GPU host */
    for (r = 0; r < 16; r++)
        host_of[r] = r < 9 ? 0 : 1;
    s = summaries(t, 16, host_of, names);
    assert_int_equal(hlx_place_job(s, 16, &c, 8, 2, 1, t, 4096, &j, err, sizeof(err)),
                     HLX_ERR_INVALID);
    assert_non_null(strstr(err, "node node1 runs 9 rank(s) but has 8 GPU(s)"));
    free(s);
    /* a rank that sent something else */
    s = summaries(t, 16, host_of, names);
    s[3].magic = 0;
    assert_int_equal(hlx_place_job(s, 16, NULL, 8, 2, 1, t, 4096, &j, err, sizeof(err)),
                     HLX_ERR_BOOTSTRAP);
    assert_non_null(strstr(err, "rank 3 sent no host summary"));
    free(s);
    hlx_cluster_free(&c);
    hlx_topo_free(t);
}

/* CPU-only hosts, 2 + 1 + 1: cores spread over the first host's NUMA nodes, shm inside a
 * host, tcp between hosts. */
static void test_cpu_uneven(void **state)
{
    static const char *const names[] = { "h0", "h1", "h2" };
    static const int host_of[4] = { 0, 0, 1, 2 };
    hlx_topo_t *t = hlx_test_topo(DATA "cpu2s.xml");
    hlx_host_summary_t *s;
    hlx_job_place_t j;
    hlx_link_t links[4];

    (void)state;
    s = summaries(t, 4, host_of, names);
    job(s, 4, NULL, 4, 1, t, &j);
    assert_int_equal(j.nhosts, 3);
    assert_true(j.place->cpu_only);
    assert_int_equal(j.place->ranks[0].numa, 0);
    assert_int_equal(j.place->ranks[1].numa, 1);
    assert_int_equal(j.place->ranks[2].node, 1);
    assert_int_equal(j.place->ranks[3].node, 2);
    hlx_place_links(j.place, 0, links);
    assert_int_equal(links[1], HLX_LINK_SHM);
    assert_int_equal(links[2], HLX_LINK_TCP);
    assert_int_equal(links[3], HLX_LINK_TCP);
    assert_int_equal(j.worse, 0);
    hlx_job_place_free(&j);
    free(s);
    hlx_topo_free(t);
}

/* Racks: KVP groups across racks when a block layout keeps them inside are warned about. */
static void test_racks(void **state)
{
    static const char *const names[] = { "h0", "h1", "h2" };
    static const int good[4] = { 0, 1, 2, 2 }, bad[4] = { 0, 2, 1, 2 };
    hlx_topo_t *t = hlx_test_topo(DATA "cpu2s.xml");
    hlx_cluster_t c;
    hlx_host_summary_t *s;
    hlx_job_place_t j;

    (void)state;
    hlx_test_cluster(HLX_SOURCE_ROOT "/tests/cluster/data/cpu_hosts.json", &c); /* h0 h1 rack 0, h2 rack 1 */
    s = summaries(t, 4, good, names);
    job(s, 4, &c, 2, 2, t, &j);
    assert_int_equal(j.worse, 0);
    hlx_job_place_free(&j);
    free(s);
    s = summaries(t, 4, bad, names);
    job(s, 4, &c, 2, 2, t, &j);
    assert_int_equal(j.worse, 1);
    assert_non_null(strstr(j.warning, "2 of 2 all-to-all pairs cross hosts (2 racks)"));
    assert_non_null(strstr(j.warning, "would have 1 (0 racks)"));
    hlx_job_place_free(&j);
    free(s);
    hlx_cluster_free(&c);
    hlx_topo_free(t);
}

/* KVP 3 x TPA 2 on three hosts of two: block order splits both groups over two hosts,
 * hlx_place's order keeps 2 + 1 and 2 + 1 as well, so block order is not warned about; an
 * order that spreads every group over three hosts is. */
static void test_best_of_two(void **state)
{
    static const char *const names[] = { "h0", "h1", "h2" };
    static const int block[6] = { 0, 0, 1, 1, 2, 2 }, spread[6] = { 0, 1, 2, 0, 1, 2 };
    hlx_topo_t *t = hlx_test_topo(DATA "cpu2s.xml");
    hlx_cluster_t c;
    hlx_host_summary_t *s;
    hlx_job_place_t j;

    (void)state;
    hlx_test_cluster(HLX_SOURCE_ROOT "/tests/cluster/data/cpu_hosts.json", &c);
    s = summaries(t, 6, block, names);
    job(s, 6, &c, 3, 2, t, &j);
    assert_int_equal(j.worse, 0);
    assert_non_null(strstr(j.warning, "do not fit in one host")); /* unavoidable split */
    hlx_job_place_free(&j);
    free(s);
    s = summaries(t, 6, spread, names);
    job(s, 6, &c, 3, 2, t, &j);
    assert_int_equal(j.worse, 1);
    assert_non_null(strstr(j.warning, "6 of 6 all-to-all pairs cross hosts (4 racks)"));
    hlx_job_place_free(&j);
    free(s);
    hlx_cluster_free(&c);
    hlx_topo_free(t);
}

/* Ranks in block order on a CPU cluster file: the same placement as hlx_place (what
 * `helix topo` prints), rank by rank and pair by pair. */
static void test_agrees_with_place(void **state)
{
    static const char *const names[] = { "h0", "h1", "h2" };
    static const int host_of[6] = { 0, 0, 1, 1, 2, 2 };
    hlx_topo_t *t = hlx_test_topo(DATA "cpu2s.xml");
    hlx_cluster_t c;
    hlx_host_summary_t *s;
    hlx_job_place_t j;
    hlx_placement_t *p = NULL;
    char err[512] = "";
    int r, i;

    (void)state;
    hlx_test_cluster(HLX_SOURCE_ROOT "/tests/cluster/data/cpu_hosts.json", &c);
    s = summaries(t, 6, host_of, names);
    job(s, 6, &c, 2, 3, t, &j);
    assert_int_equal(hlx_place(&c, 2, 3, 1, t, &p, err, sizeof(err)), HLX_OK);
    assert_int_equal(p->nranks, j.place->nranks);
    for (r = 0; r < 6; r++) {
        assert_int_equal(p->ranks[r].node, j.place->ranks[r].node);
        assert_int_equal(p->ranks[r].numa, j.place->ranks[r].numa);
        assert_string_equal(p->ranks[r].cpuset, j.place->ranks[r].cpuset);
        assert_int_equal(p->ranks[r].kvp_rank, j.place->ranks[r].kvp_rank);
    }
    assert_int_equal(p->npairs, j.place->npairs);
    for (i = 0; i < p->npairs; i++) {
        assert_int_equal(p->pairs[i].src, j.place->pairs[i].src);
        assert_int_equal(p->pairs[i].dst, j.place->pairs[i].dst);
        assert_int_equal(p->pairs[i].link, j.place->pairs[i].link);
    }
    hlx_placement_free(p);
    hlx_job_place_free(&j);
    free(s);
    hlx_cluster_free(&c);
    hlx_topo_free(t);
}

/* Hosts that are one machine (network namespaces, containers: one boot id) are told from
 * distinct machines, which HELIX_BIND=auto binds. */
static void test_share_machine(void **state)
{
    hlx_host_summary_t s[6];
    static const char *const node[] = { "a", "a", "b", "b", "c", "c" };
    int r;

    (void)state;
    memset(s, 0, sizeof(s));
    for (r = 0; r < 6; r++) {
        snprintf(s[r].node, sizeof(s[r].node), "%s", node[r]);
        snprintf(s[r].machine, sizeof(s[r].machine), "id-%s", node[r]);
    }
    assert_int_equal(hlx_hosts_share_machine(s, 6), 0); /* three machines */
    assert_int_equal(hlx_hosts_share_machine(s, 2), 0); /* one host */
    snprintf(s[5].machine, sizeof(s[5].machine), "id-a"); /* c's second rank: not compared */
    assert_int_equal(hlx_hosts_share_machine(s, 6), 0);
    snprintf(s[4].machine, sizeof(s[4].machine), "id-a"); /* c is a's machine */
    assert_int_equal(hlx_hosts_share_machine(s, 6), 1);
    assert_int_equal(hlx_hosts_share_machine(s, 4), 0);
    s[2].machine[0] = '\0'; /* b unknown: as if shared */
    assert_int_equal(hlx_hosts_share_machine(s, 4), 1);
    /* a live summary carries this machine's boot id; a topology file's none */
    {
        hlx_topo_t *t = hlx_test_topo(DATA "hgx8.xml"), *live = NULL;
        hlx_host_summary_t f;
        char err[256], id[40] = "";
        FILE *b = fopen("/proc/sys/kernel/random/boot_id", "r");
        hlx_host_summary(t, "x", 0, &f);
        assert_string_equal(f.machine, "");
        hlx_topo_free(t);
        if (b != NULL) {
            if (fgets(id, sizeof(id), b) != NULL)
                id[strcspn(id, "\n")] = '\0';
            fclose(b);
        }
        assert_int_equal(hlx_topo_load(NULL, &live, err, sizeof(err)), HLX_OK);
        hlx_host_summary(live, "x", 0, &f);
        assert_string_equal(f.machine, id);
        hlx_topo_free(live);
    }
}

/* Sets rank r of s to node and machine with CPUs [lo, hi] and threads t. */
static void hlx_t_cpus(hlx_host_summary_t *s, const char *node, const char *machine, int lo,
                       int hi, int t)
{
    int c;

    memset(s, 0, sizeof(*s));
    snprintf(s->node, sizeof(s->node), "%s", node);
    snprintf(s->machine, sizeof(s->machine), "%s", machine);
    for (c = lo; c <= hi; c++)
        s->cpus[c / 64] |= 1ull << (c % 64);
    s->threads = t;
}

/* The busiest CPU's threads over the job (--hopb auto runs lockstep above 1): ranks of one
 * machine count together, whatever their node names; masks and threads spread evenly. */
static void test_cpu_load(void **state)
{
    hlx_host_summary_t s[4];
    int ranks, threads, cpus, r;

    (void)state;
    for (r = 0; r < 4; r++) /* helixrun -n 4 on 2 CPUs, unbound */
        hlx_t_cpus(&s[r], "a", "m1", 0, 1, 1);
    assert_true(fabs(hlx_job_cpu_load(s, 4, &ranks, &threads, &cpus) - 2.0) < 1e-12);
    assert_int_equal(ranks, 4);
    assert_int_equal(threads, 4);
    assert_int_equal(cpus, 2);
    assert_true(fabs(hlx_job_cpu_load(s, 2, NULL, NULL, NULL) - 1.0) < 1e-12); /* 2 on 2 */
    hlx_t_cpus(&s[0], "a", "m1", 0, 0, 1); /* bound one each */
    hlx_t_cpus(&s[1], "a", "m1", 1, 1, 1);
    assert_true(fabs(hlx_job_cpu_load(s, 2, NULL, NULL, NULL) - 1.0) < 1e-12);
    s[1].threads = 2; /* two threads on one CPU */
    assert_true(fabs(hlx_job_cpu_load(s, 2, &ranks, &threads, &cpus) - 2.0) < 1e-12);
    assert_int_equal(cpus, 2);
    assert_int_equal(threads, 3);
    hlx_t_cpus(&s[1], "a", "m1", 0, 0, 1); /* taskset -c 0 helixrun -n 2 */
    assert_true(fabs(hlx_job_cpu_load(s, 2, NULL, NULL, NULL) - 2.0) < 1e-12);
    /* namespaces of one machine (another node name, the same boot id) share its CPUs;
     * distinct machines do not */
    for (r = 0; r < 4; r++)
        hlx_t_cpus(&s[r], r < 2 ? "ns0" : "ns1", "m1", 0, 1, 1);
    assert_true(fabs(hlx_job_cpu_load(s, 4, &ranks, NULL, NULL) - 2.0) < 1e-12);
    assert_int_equal(ranks, 4);
    for (r = 2; r < 4; r++)
        snprintf(s[r].machine, sizeof(s[r].machine), "m2");
    assert_true(fabs(hlx_job_cpu_load(s, 4, &ranks, NULL, NULL) - 1.0) < 1e-12);
    assert_int_equal(ranks, 2);
    /* an unknown boot id falls back to the node name */
    for (r = 0; r < 4; r++)
        s[r].machine[0] = '\0';
    assert_true(fabs(hlx_job_cpu_load(s, 4, NULL, NULL, NULL) - 1.0) < 1e-12);
    /* a wide mask beside a narrow one: 1/4 + 1 on CPU 0; CPUs past the first word */
    hlx_t_cpus(&s[0], "a", "m1", 0, 3, 1);
    hlx_t_cpus(&s[1], "a", "m1", 0, 0, 1);
    hlx_t_cpus(&s[2], "a", "m1", 700, 700, 3);
    assert_true(fabs(hlx_job_cpu_load(s, 2, &ranks, &threads, &cpus) - 1.25) < 1e-12);
    assert_int_equal(cpus, 4);
    assert_true(fabs(hlx_job_cpu_load(s, 3, &ranks, &threads, &cpus) - 3.0) < 1e-12);
    assert_int_equal(cpus, 5);
    assert_int_equal(ranks, 3);
    assert_int_equal(threads, 5);
    /* a large job: 2500 machines of 8 ranks, one per CPU (1.0); a ninth rank on CPU 3
     * of machine 1234 makes it 2.0 there, and that machine is the one named */
    {
        enum { NM = 2500, PER = 8 };
        hlx_host_summary_t *big = calloc(NM * PER + 1, sizeof(*big));
        char node[16], mach[16];
        assert_non_null(big);
        for (r = 0; r < NM * PER; r++) {
            snprintf(node, sizeof(node), "n%d", r / PER);
            snprintf(mach, sizeof(mach), "m%d", r / PER);
            hlx_t_cpus(&big[r], node, mach, r % PER, r % PER, 1);
        }
        assert_true(fabs(hlx_job_cpu_load(big, NM * PER, &ranks, &threads, &cpus) - 1.0) <
                    1e-12);
        hlx_t_cpus(&big[NM * PER], "n1234", "m1234", 3, 3, 1);
        assert_true(fabs(hlx_job_cpu_load(big, NM * PER + 1, &ranks, &threads, &cpus) - 2.0) <
                    1e-12);
        assert_int_equal(ranks, PER + 1);
        assert_int_equal(cpus, PER);
        free(big);
    }
    /* no rank said its CPUs: 0 */
    memset(s, 0, sizeof(s));
    assert_true(hlx_job_cpu_load(s, 4, &ranks, &threads, &cpus) == 0.0);
    /* a live summary carries this process's CPUs */
    {
        hlx_host_summary_t f;
        cpu_set_t set;
        int k = 0, w;
        hlx_host_summary(NULL, "x", 0, &f);
        for (w = 0; w < HLX_SUMMARY_CPU_WORDS; w++)
            k += __builtin_popcountll(f.cpus[w]);
        assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
        assert_int_equal(k, CPU_COUNT(&set));
    }
}

/* A launcher's rank order over given nodes: block and cyclic, an empty node left out. */
static void test_launcher_order(void **state)
{
    static const int counts[3] = { 2, 0, 3 }, block[5] = { 0, 0, 2, 2, 2 },
                     cyclic[5] = { 0, 2, 0, 2, 2 };
    int got[5];

    (void)state;
    hlx_place_launcher_order(counts, 3, 0, got);
    assert_memory_equal(got, block, sizeof(block));
    hlx_place_launcher_order(counts, 3, 1, got);
    assert_memory_equal(got, cyclic, sizeof(cyclic));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_block),
        cmocka_unit_test(test_gpu_cyclic_warns),
        cmocka_unit_test(test_cluster_file_names),
        cmocka_unit_test(test_cpu_uneven),
        cmocka_unit_test(test_racks),
        cmocka_unit_test(test_best_of_two),
        cmocka_unit_test(test_agrees_with_place),
        cmocka_unit_test(test_share_machine),
        cmocka_unit_test(test_cpu_load),
        cmocka_unit_test(test_launcher_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
