/* util: hlx_mem_cgroup_room over fixture trees (a folder standing for /: its
 * proc/self/mountinfo, proc/self/cgroup and the cgroup files under the mount points):
 * a Slurm job's limit on cgroup v2 found from a task's cgroup below it, page cache other
 * than shared memory not counted as used; the smallest room over the levels binds (a parent
 * with less room than the child); v1's memory controller and its "unlimited"; a
 * container's mount of part of the tree; of several mounts the one holding the process's
 * cgroup, a mount point with an escaped space; both hierarchies at once (the smaller
 * binds); usage past the limit (no room); no cgroup files at all (no limit); v2's
 * memory.high below memory.max, "max", on a parent only, and a v1 folder's memory.high not
 * read; the ids ranks compare (one cgroup one id, siblings and machines apart); and
 * hlx_mem_share's divisor over gathered records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hlx_memroom.h"

#define G (1ull << 30)

static char root[256];

/* root/rel (folders made as needed) holding text. */
static void put(const char *rel, const char *text)
{
    char path[1024], *s;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    for (s = path + strlen(root) + 1; (s = strchr(s, '/')) != NULL; s++) {
        *s = '\0';
        mkdir(path, 0755);
        *s = '/';
    }
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void putnum(const char *rel, unsigned long long v)
{
    char t[64];

    snprintf(t, sizeof(t), "%llu\n", v);
    put(rel, t);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/hlx_memroom_XXXXXX");
    assert_non_null(mkdtemp(root));
    return 0;
}

static int teardown(void **state)
{
    char cmd[512];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *v2_mounts =
    "23 1 0:21 / /proc rw - proc proc rw\n"
    "31 23 0:28 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";

static void test_v2_slurm_job(void **state)
{
    hlx_memroom_t r;

    (void)state;
    put("proc/self/mountinfo", v2_mounts);
    put("proc/self/cgroup", "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0\n");
    /* the job's --mem 8 GiB: 1 GiB used, of it 1 GiB page cache of which 0.5 GiB shared
     * memory (tmpfs: not reclaimed) */
    putnum("sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/memory.max", 8 * G);
    putnum("sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/memory.current", 1 * G);
    put("sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/memory.stat",
        "anon 0\nfile 1073741824\nshmem 536870912\nactive_file 1\ninactive_file 1\n");
    put("sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/step_0/memory.max", "max\n");
    putnum("sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/step_0/memory.current", G / 2);
    put("sys/fs/cgroup/system.slice/memory.max", "max\n");
    hlx_mem_cgroup_room(root, &r);
    assert_int_equal(r.level[r.bind].version, 2);
    assert_true(r.bytes == 8 * G - G / 2);
    assert_true(r.level[r.bind].limit == 8 * G);
    assert_string_equal(r.level[r.bind].path, "/system.slice/slurmstepd.scope/job_7");
}

static void test_parent_binds(void **state)
{
    hlx_memroom_t r;

    (void)state;
    put("proc/self/mountinfo", v2_mounts);
    put("proc/self/cgroup", "0::/a/b\n");
    /* b: 4 GiB, 1 used (3 of room); a: 10 GiB, 8 used by b and its siblings (2 of room) */
    putnum("sys/fs/cgroup/a/b/memory.max", 4 * G);
    putnum("sys/fs/cgroup/a/b/memory.current", 1 * G);
    putnum("sys/fs/cgroup/a/memory.max", 10 * G);
    putnum("sys/fs/cgroup/a/memory.current", 8 * G);
    hlx_mem_cgroup_room(root, &r);
    assert_true(r.bytes == 2 * G);
    assert_string_equal(r.level[r.bind].path, "/a");
}

static void test_over_limit(void **state)
{
    hlx_memroom_t r;

    (void)state;
    put("proc/self/mountinfo", v2_mounts);
    put("proc/self/cgroup", "0::/a\n");
    putnum("sys/fs/cgroup/a/memory.max", 1 * G);
    putnum("sys/fs/cgroup/a/memory.current", 2 * G);
    hlx_mem_cgroup_room(root, &r);
    assert_true(r.bytes == 0);
    assert_int_equal(r.level[r.bind].version, 2);
}

static const char *v1_mounts =
    "31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n";

static void test_v1_memory(void **state)
{
    hlx_memroom_t r;

    (void)state;
    put("proc/self/mountinfo", v1_mounts);
    put("proc/self/cgroup", "9:cpu,cpuacct:/x\n4:memory:/slurm/uid_0/job_3\n0::/\n");
    /* the job: 16 GiB, 6 used of which 3 page cache, 1 of it shared memory; the root:
     * unlimited */
    putnum("sys/fs/cgroup/memory/slurm/uid_0/job_3/memory.limit_in_bytes", 16 * G);
    putnum("sys/fs/cgroup/memory/slurm/uid_0/job_3/memory.usage_in_bytes", 6 * G);
    put("sys/fs/cgroup/memory/slurm/uid_0/job_3/memory.stat",
        "cache 1\nshmem 1\ntotal_cache 3221225472\ntotal_shmem 1073741824\n");
    putnum("sys/fs/cgroup/memory/memory.limit_in_bytes", 9223372036854771712ull);
    putnum("sys/fs/cgroup/memory/memory.usage_in_bytes", 20 * G);
    hlx_mem_cgroup_room(root, &r);
    assert_int_equal(r.level[r.bind].version, 1);
    assert_true(r.bytes == 12 * G);
    assert_string_equal(r.level[r.bind].path, "/slurm/uid_0/job_3");
}

static void test_container_mount(void **state)
{
    hlx_memroom_t r;

    (void)state;
    /* the container sees its own cgroup as the mount's root */
    put("proc/self/mountinfo",
        "40 31 0:38 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
    put("proc/self/cgroup", "0::/docker/abc\n");
    putnum("sys/fs/cgroup/memory.max", 3 * G);
    putnum("sys/fs/cgroup/memory.current", G);
    hlx_mem_cgroup_room(root, &r);
    assert_true(r.bytes == 2 * G);
    assert_string_equal(r.level[r.bind].path, "/");
}

static void test_mount_holding_cgroup(void **state)
{
    hlx_memroom_t r;

    (void)state;
    /* a bind mount of a sibling's subtree listed first, a mount point with a space
     * (mountinfo writes \040): the limit read is the process's own cgroup's */
    put("proc/self/mountinfo",
        "30 23 0:28 /y /mnt/y rw - cgroup2 cgroup2 rw\n"
        "31 23 0:28 /a /mnt/ab rw - cgroup2 cgroup2 rw\n"
        "32 23 0:28 / /sys/fs/cg\\040two rw - cgroup2 cgroup2 rw\n");
    put("proc/self/cgroup", "0::/ab/c\n");
    putnum("mnt/y/memory.max", G / 2);
    putnum("mnt/ab/b/c/memory.max", G / 4);
    putnum("sys/fs/cg two/ab/c/memory.max", 1 * G);
    putnum("sys/fs/cg two/ab/c/memory.current", 0);
    hlx_mem_cgroup_room(root, &r);
    assert_true(r.bytes == 1 * G);
    assert_string_equal(r.level[r.bind].path, "/ab/c");
}

static void test_long_path(void **state)
{
    char line[5200];
    hlx_memroom_t r;

    (void)state;
    /* a cgroup path past the reader's 4 KiB line: not read at all (cut, it could name a
     * sibling, job_1 for job_12), though an ancestor of it has a limit */
    put("proc/self/mountinfo", v2_mounts);
    memset(line, 'x', sizeof(line));
    memcpy(line, "0::/j/", 6);
    line[sizeof(line) - 2] = '\n';
    line[sizeof(line) - 1] = '\0';
    put("proc/self/cgroup", line);
    putnum("sys/fs/cgroup/j/memory.max", 2 * G);
    hlx_mem_cgroup_room(root, &r);
    assert_true(r.bytes == UINT64_MAX);
}

static void test_both_hierarchies(void **state)
{
    hlx_memroom_t r;

    (void)state;
    put("proc/self/mountinfo",
        "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
    put("proc/self/cgroup", "4:memory:/j\n0::/j\n");
    putnum("sys/fs/cgroup/memory/j/memory.limit_in_bytes", 5 * G);
    putnum("sys/fs/cgroup/memory/j/memory.usage_in_bytes", 1 * G);
    putnum("sys/fs/cgroup/unified/j/memory.max", 7 * G);
    putnum("sys/fs/cgroup/unified/j/memory.current", 1 * G);
    hlx_mem_cgroup_room(root, &r);
    assert_int_equal(r.level[r.bind].version, 1);
    assert_true(r.bytes == 4 * G);
}

static void test_no_limit(void **state)
{
    hlx_memroom_t r;

    (void)state;
    /* mounts and a cgroup but no limit files; then no proc files at all */
    put("proc/self/mountinfo", v2_mounts);
    put("proc/self/cgroup", "0::/user.slice\n");
    put("sys/fs/cgroup/user.slice/memory.max", "max\n");
    hlx_mem_cgroup_room(root, &r);
    assert_true(r.bytes == UINT64_MAX);
    assert_int_equal(r.bind, -1); /* no hierarchy binds */
    teardown(NULL);
    setup(NULL);
    hlx_mem_cgroup_room(root, &r);
    assert_true(r.bytes == UINT64_MAX);
}

static void test_v2_high_below_max(void **state)
{
    hlx_memroom_t r;

    (void)state;
    put("proc/self/mountinfo", v2_mounts);
    put("proc/self/cgroup", "0::/a\n");
    putnum("sys/fs/cgroup/a/memory.max", 8 * G);
    putnum("sys/fs/cgroup/a/memory.high", 4 * G);
    putnum("sys/fs/cgroup/a/memory.current", 1 * G);
    hlx_mem_cgroup_room(root, &r);
    assert_true(r.bytes == 3 * G);
    assert_true(r.level[r.bind].limit == 4 * G);
    assert_string_equal(r.level[r.bind].file, "memory.high");
    assert_string_equal(r.level[r.bind].path, "/a");
}

static void test_v2_high_max(void **state)
{
    hlx_memroom_t r;

    (void)state;
    put("proc/self/mountinfo", v2_mounts);
    put("proc/self/cgroup", "0::/a\n");
    putnum("sys/fs/cgroup/a/memory.max", 8 * G);
    put("sys/fs/cgroup/a/memory.high", "max\n");
    putnum("sys/fs/cgroup/a/memory.current", 1 * G);
    hlx_mem_cgroup_room(root, &r);
    assert_true(r.bytes == 7 * G);
    assert_true(r.level[r.bind].limit == 8 * G);
    assert_string_equal(r.level[r.bind].file, "memory.max");
}

static void test_v2_high_parent_only(void **state)
{
    hlx_memroom_t r;

    (void)state;
    /* b: max 4 GiB, high "max"; a: max "max", high 2 GiB with 0.5 used: a's high binds */
    put("proc/self/mountinfo", v2_mounts);
    put("proc/self/cgroup", "0::/a/b\n");
    putnum("sys/fs/cgroup/a/b/memory.max", 4 * G);
    put("sys/fs/cgroup/a/b/memory.high", "max\n");
    putnum("sys/fs/cgroup/a/b/memory.current", G / 4);
    put("sys/fs/cgroup/a/memory.max", "max\n");
    putnum("sys/fs/cgroup/a/memory.high", 2 * G);
    putnum("sys/fs/cgroup/a/memory.current", G / 2);
    hlx_mem_cgroup_room(root, &r);
    assert_true(r.bytes == 2 * G - G / 2);
    assert_true(r.level[r.bind].limit == 2 * G);
    assert_string_equal(r.level[r.bind].file, "memory.high");
    assert_string_equal(r.level[r.bind].path, "/a");
    assert_int_equal(r.nlevels, 2); /* b and a: both limited */
}

static void test_v1_no_high(void **state)
{
    hlx_memroom_t r;

    (void)state;
    /* v1 has no memory.high: a file of that name (or the soft limit) is no limit there */
    put("proc/self/mountinfo", v1_mounts);
    put("proc/self/cgroup", "4:memory:/j\n");
    putnum("sys/fs/cgroup/memory/j/memory.limit_in_bytes", 6 * G);
    putnum("sys/fs/cgroup/memory/j/memory.high", 1 * G);
    putnum("sys/fs/cgroup/memory/j/memory.soft_limit_in_bytes", 1 * G);
    putnum("sys/fs/cgroup/memory/j/memory.usage_in_bytes", 0);
    hlx_mem_cgroup_room(root, &r);
    assert_true(r.bytes == 6 * G);
    assert_string_equal(r.level[r.bind].file, "memory.limit_in_bytes");
}

/* The id of the cgroup binding a process in cgroup cg of the v2 fixture, with its levels. */
static uint64_t id_of(const char *cg, hlx_memroom_t *r)
{
    char line[256];

    snprintf(line, sizeof(line), "0::%s\n", cg);
    put("proc/self/cgroup", line);
    hlx_mem_cgroup_room(root, r);
    return r->bind >= 0 ? r->level[r->bind].id : 0;
}

static void test_ids(void **state)
{
    hlx_memroom_t r0, r1;
    uint64_t job, t0, t1;

    (void)state;
    put("proc/self/mountinfo", v2_mounts);
    put("proc/sys/kernel/random/boot_id", "6d1c3a9e-0000-4000-8000-000000000001\n");
    putnum("sys/fs/cgroup/job/memory.max", 8 * G);
    put("sys/fs/cgroup/job/t0/memory.max", "max\n");
    put("sys/fs/cgroup/job/t1/memory.max", "max\n");
    /* two tasks in one job's cgroup: bound by it, one id */
    job = id_of("/job/t0", &r0);
    assert_true(job != 0);
    assert_true(id_of("/job/t1", &r1) == job);
    assert_string_equal(r1.level[r1.bind].path, "/job");
    /* each task with a limit of its own: two ids, the job's among both's levels */
    putnum("sys/fs/cgroup/job/t0/memory.max", 1 * G);
    putnum("sys/fs/cgroup/job/t1/memory.max", 1 * G);
    t0 = id_of("/job/t0", &r0);
    t1 = id_of("/job/t1", &r1);
    assert_true(t0 != t1 && t0 != job && t1 != job);
    assert_int_equal(r0.nlevels, 2);
    assert_true(r0.level[0].id == t0 && r0.level[1].id == job);
    assert_true(r1.level[0].id == t1 && r1.level[1].id == job);
    /* each level's own room, limit, file and path, innermost first */
    assert_true(r0.level[0].limit == 1 * G && r0.level[1].limit == 8 * G);
    assert_true(r0.level[1].room == 8 * G);
    assert_string_equal(r0.level[0].path, "/job/t0");
    assert_string_equal(r0.level[1].path, "/job");
    assert_string_equal(r0.level[1].file, "memory.max");
    /* the same cgroup path on another machine (another boot id): another id */
    put("proc/sys/kernel/random/boot_id", "6d1c3a9e-0000-4000-8000-000000000002\n");
    assert_true(id_of("/job/t0", &r0) != t0);
}

/* A rank's bounds for hlx_mem_share: avail, then the limited levels it sits in as (id,
 * room) pairs, innermost first, ended by an id of 0. */
static hlx_memshare_t rank_of(uint64_t avail, ...)
{
    hlx_memshare_t m;
    va_list ap;
    uint64_t l;

    memset(&m, 0, sizeof(m));
    m.avail = avail;
    va_start(ap, avail);
    while ((l = va_arg(ap, uint64_t)) != 0) {
        m.level[m.nlevels].id = l;
        m.level[m.nlevels++].room = va_arg(ap, uint64_t);
    }
    va_end(ap);
    return m;
}

/* hlx_mem_share of rank me: the share, its divisor and binding level checked */
static void share_is(const hlx_memshare_t *s, int n, int me, uint64_t want, int div, int lv)
{
    int d, l;

    assert_true(hlx_mem_share(s, n, me, &d, &l) == want);
    assert_int_equal(d, div);
    assert_int_equal(l, lv);
}

static void test_share(void **state)
{
    const uint64_t NONE = UINT64_MAX, J = 0x10, A = 0x20, B = 0x30, J2 = 0x40, P = 0x50;
    hlx_memshare_t s[8];
    int i;

    (void)state;
    /* four ranks of one node in a Slurm job's 8 GiB cgroup (MemAvailable 64 GiB over 4):
     * 2 GiB each, the cgroup shared over 4 */
    for (i = 0; i < 4; i++)
        s[i] = rank_of(16 * G, J, 8 * G, (uint64_t)0);
    share_is(s, 4, 2, 2 * G, 4, 0);
    /* and four more on another node, the same path but another machine: still 4 */
    for (i = 4; i < 8; i++)
        s[i] = rank_of(16 * G, J2, 8 * G, (uint64_t)0);
    share_is(s, 8, 5, 2 * G, 4, 0);
    /* two ranks each in a 1 GiB container of its own (MemAvailable 64 GiB over 2): 1 GiB
     * each, not 0.5 as sharing one cgroup */
    s[0] = rank_of(32 * G, A, 1 * G, (uint64_t)0);
    s[1] = rank_of(32 * G, B, 1 * G, (uint64_t)0);
    share_is(s, 2, 0, 1 * G, 1, 0);
    share_is(s, 2, 1, 1 * G, 1, 0);
    /* rank 0 in a 1 GiB cgroup of its own inside the 6 GiB job that binds rank 1: rank 1
     * shares the job with rank 0, 3 GiB; rank 0 is held by its own 1 GiB */
    s[0] = rank_of(32 * G, A, 1 * G, J, 6 * G, (uint64_t)0);
    s[1] = rank_of(32 * G, J, 6 * G, (uint64_t)0);
    share_is(s, 2, 1, 3 * G, 2, 0);
    share_is(s, 2, 0, 1 * G, 1, 0);
    /* siblings each in a 3 GiB cgroup below a 4 GiB parent: the parent shared, 2 GiB each
     * (the binding cgroup alone would give each 3) */
    s[0] = rank_of(32 * G, A, 3 * G, P, 4 * G, (uint64_t)0);
    s[1] = rank_of(32 * G, B, 3 * G, P, 4 * G, (uint64_t)0);
    share_is(s, 2, 0, 2 * G, 2, 1);
    share_is(s, 2, 1, 2 * G, 2, 1);
    /* MemAvailable over the node's ranks binds: no divisor */
    s[0] = rank_of(2 * G, J, 6 * G, (uint64_t)0);
    s[1] = rank_of(2 * G, J, 6 * G, (uint64_t)0);
    share_is(s, 2, 0, 2 * G, 0, -1);
    /* HELIX_MEM_LIMIT (fixed): that rank takes it whole, and counts in the other's share */
    s[0] = rank_of(5 * G, J, 6 * G, (uint64_t)0);
    s[0].fixed = 1;
    s[1] = rank_of(NONE, J, 6 * G, (uint64_t)0);
    share_is(s, 2, 0, 5 * G, 0, -1);
    share_is(s, 2, 1, 3 * G, 2, 0);
    /* nothing known: not checked (UINT64_MAX, never divided) */
    s[0] = rank_of(NONE, (uint64_t)0);
    s[1] = rank_of(NONE, (uint64_t)0);
    share_is(s, 2, 0, NONE, 0, -1);
    /* a cgroup with no room left: 0 */
    s[0] = rank_of(NONE, A, (uint64_t)0, (uint64_t)0);
    share_is(s, 1, 0, 0, 1, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_v2_slurm_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parent_binds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_over_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_container_mount, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mount_holding_cgroup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_both_hierarchies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_high_below_max, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_high_max, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_high_parent_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v1_no_high, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ids, setup, teardown),
        cmocka_unit_test(test_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
