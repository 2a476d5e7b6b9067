/* topology: the startup path of a rank on this (CPU-only) machine: place N ranks on the live
 * topology, bind each rank (a child process) with hlx_topo_bind_self and read its affinity
 * back from the kernel. Skipped (77) when this machine has GPUs: the GPU case is covered by
 * the fixtures. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

#define CHECK(_c) \
    do { \
        if (!(_c)) { \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #_c); \
            exit(1); \
        } \
    } while (0)

/* "0-3,8" -> CPU set, written independently of hwloc. */
static int parse_list(const char *s, cpu_set_t *set)
{
    CPU_ZERO(set);
    while (*s) {
        char *end;
        long a = strtol(s, &end, 10), b = a, i;
        if (end == s)
            return -1;
        s = end;
        if (*s == '-') {
            b = strtol(s + 1, &end, 10);
            s = end;
        }
        for (i = a; i <= b && i < CPU_SETSIZE; i++)
            CPU_SET((int)i, set);
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return 0;
}

/* Child: bind as `rank`, report whether the kernel affinity equals the placed cpuset. */
static int bind_child(hlx_topo_t *t, const hlx_placement_t *p, int rank)
{
    pid_t pid = fork();
    int status;

    CHECK(pid >= 0);
    if (pid == 0) {
        cpu_set_t want, got;
        if (hlx_topo_bind_self(t, p, rank) != HLX_OK)
            _exit(2);
        if (parse_list(p->ranks[rank].cpuset, &want) < 0)
            _exit(3);
        if (sched_getaffinity(0, sizeof(got), &got) < 0)
            _exit(4);
        _exit(CPU_EQUAL(&want, &got) ? 0 : 5);
    }
    CHECK(waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

int main(void)
{
    hlx_topo_t *t = NULL, *file = NULL;
    hlx_topo_info_t in;
    hlx_placement_t *p = NULL;
    cpu_set_t before, after, a, b, both;
    char err[512] = "";
    int n, r, q;

    /* hwloc's PCI discovery (libpciaccess) leaks about 1 KB per load in Debian 12: under
     * AddressSanitizer the live-machine checks run without it */
#ifdef HLX_TEST_ASAN
    setenv("HWLOC_COMPONENTS", "-pci", 0);
#endif
    unsetenv("HELIX_TOPO_FILE");
    unsetenv("HELIX_TOPO_DUMP_FILE");
    unsetenv("HELIX_TOPO_THISSYSTEM");
    CHECK(hlx_topo_load(NULL, &t, err, sizeof(err)) == HLX_OK);
    hlx_topo_get_info(t, &in);
    if (in.ngpus > 0) {
        printf("this machine has %d GPUs: the CPU-only binding test does not apply\n",
               in.ngpus);
        hlx_topo_free(t);
        return 77;
    }
    CHECK(in.this_system == 1);

    /* one rank per core (at least 2 ranks): disjoint cores, shared memory between them */
    n = in.ncores >= 2 ? in.ncores : 2;
    CHECK(hlx_place(NULL, n, 1, 1, t, &p, err, sizeof(err)) == HLX_OK);
    CHECK(p->cpu_only == 1);
    for (r = 0; r < n; r++) {
        CHECK(p->ranks[r].cpuset[0] != '\0');
        CHECK(parse_list(p->ranks[r].cpuset, &a) == 0 && CPU_COUNT(&a) >= 1);
        for (q = 0; q < n; q++)
            CHECK(hlx_place_link(p, r, q) == (r == q ? HLX_LINK_SELF : HLX_LINK_SHM));
        for (q = r + 1; q < n && in.ncores >= n; q++) {
            CHECK(parse_list(p->ranks[q].cpuset, &b) == 0);
            CPU_AND(&both, &a, &b);
            CHECK(CPU_COUNT(&both) == 0);
        }
        if (bind_child(t, p, r) != 0) {
            fprintf(stderr, "rank %d: affinity after hlx_topo_bind_self differs from %s\n",
                    r, p->ranks[r].cpuset);
            return 1;
        }
    }

    /* a topology read from a file is not this system: no binding, no error */
    CHECK(sched_getaffinity(0, sizeof(before), &before) == 0);
    CHECK(hlx_topo_load(HLX_SOURCE_ROOT "/tests/data/topology/cpu2s.xml", &file, err,
                        sizeof(err)) == HLX_OK);
    CHECK(hlx_topo_bind_self(file, p, 0) == HLX_OK);
    CHECK(sched_getaffinity(0, sizeof(after), &after) == 0);
    CHECK(CPU_EQUAL(&before, &after));
    CHECK(hlx_topo_bind_self(t, p, n) == HLX_ERR_INVALID);
    CHECK(hlx_topo_bind_self(t, p, -1) == HLX_ERR_INVALID);

    hlx_topo_free(file);
    hlx_placement_free(p);
    hlx_topo_free(t);
    printf("bound %d ranks on %d cores of this machine\n", n, in.ncores);
    return 0;
}
