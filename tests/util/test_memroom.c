/* util: hlx_mem_cgroup_room over fixture trees (a folder standing for /: its
 * proc/self/mountinfo, proc/self/cgroup and the cgroup files under the mount points):
 * a Slurm job's limit on cgroup v2 found from a task's cgroup below it, page cache other
 * than shared memory not counted as used; the smallest room over the levels binds (a parent
 * with less room than the child); v1's memory controller and its "unlimited"; a
 * container's mount of part of the tree; of several mounts the one holding the process's
 * cgroup, a mount point with an escaped space; both hierarchies at once (the smaller
 * binds); usage past the limit (no room); no cgroup files at all (no limit). */
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
    assert_int_equal(r.version, 2);
    assert_true(r.bytes == 8 * G - G / 2);
    assert_true(r.limit == 8 * G);
    assert_string_equal(r.path, "/system.slice/slurmstepd.scope/job_7");
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
    assert_string_equal(r.path, "/a");
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
    assert_int_equal(r.version, 2);
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
    assert_int_equal(r.version, 1);
    assert_true(r.bytes == 12 * G);
    assert_string_equal(r.path, "/slurm/uid_0/job_3");
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
    assert_string_equal(r.path, "/");
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
    assert_string_equal(r.path, "/ab/c");
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
    assert_int_equal(r.version, 1);
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
    assert_int_equal(r.version, 0);
    teardown(NULL);
    setup(NULL);
    hlx_mem_cgroup_room(root, &r);
    assert_true(r.bytes == UINT64_MAX);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
