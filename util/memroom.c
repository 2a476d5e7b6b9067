/* hlx_mem_cgroup_room: the memory a cgroup limit leaves this process. A batch job's
 * memory is bounded by its cgroup (Slurm's task/cgroup plugin with ConstrainRAMSpace,
 * containers), not by the node's MemAvailable, which reads the whole machine; a start-up
 * check against MemAvailable alone would pass and the job be killed by the OOM killer
 * during the load. Reads /proc/self/mountinfo for the cgroup2 mount and the v1 memory
 * controller's, /proc/self/cgroup for this process's cgroup in each, and walks from it up
 * to the mount's root: the room at a level is its limit less its usage, where page cache
 * the kernel reclaims before it kills (file pages, shared memory's excepted) does not count
 * as used, as MemAvailable counts it available; the smallest room over the levels binds.
 * Of several mounts of a hierarchy, the one whose root holds the process's cgroup. On v2 a
 * level's limit is the smaller of memory.max and memory.high: past high the kernel throttles
 * the cgroup into reclaim, and a run there crawls. v1 has no such second limit (its
 * memory.soft_limit_in_bytes is only a reclaim target under pressure on the whole machine),
 * so only memory.limit_in_bytes counts there. Each limited level is also named by an id
 * that ranks compare (hlx_mem_share), and the room shared over the ranks inside it. */
#define _GNU_SOURCE
#include "hlx_memroom.h"
#include "hlx_hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* v1's "no limit": PAGE_COUNTER_MAX rounded to pages, about 2^63; anything past 2^62 */
#define HLX_MEMROOM_NOLIMIT (1ull << 62)

/* The machine's hash, the start of every cgroup id: its boot id (random at every boot, the
 * same in every container and namespace of the machine), else its host name. */
static uint64_t hlx_memroom_machine(const char *root)
{
    char path[4096], s[256] = "";
    FILE *f;

    snprintf(path, sizeof(path), "%s/proc/sys/kernel/random/boot_id", root);
    if ((f = fopen(path, "r")) != NULL) {
        if (fgets(s, sizeof(s), f) == NULL)
            s[0] = '\0';
        fclose(f);
    }
    s[strcspn(s, "\n")] = '\0';
    if (s[0] == '\0' && gethostname(s, sizeof(s) - 1) != 0)
        s[0] = '\0';
    return hlx_fnv1a(HLX_FNV1A_INIT, s, strlen(s));
}

/* The id of the cgroup in folder dir of hierarchy v (name: its path, where dir cannot be
 * read): the folder's device and inode are the cgroup's whichever mount or cgroup
 * namespace shows it. Never 0. */
static uint64_t hlx_memroom_id(uint64_t machine, int v, const char *dir, const char *name)
{
    struct stat sb;
    uint64_t h = hlx_fnv1a(machine, &v, sizeof(v));

    if (stat(dir, &sb) == 0) {
        const uint64_t dev = (uint64_t)sb.st_dev, ino = (uint64_t)sb.st_ino;
        h = hlx_fnv1a(hlx_fnv1a(h, &dev, sizeof(dev)), &ino, sizeof(ino));
    } else {
        h = hlx_fnv1a(h, name, strlen(name));
    }
    return h != 0 ? h : 1;
}

/* A limited level: its id, room, limit, the limit's file and its path (the tail where
 * longer than the field). */
static void hlx_memroom_level(hlx_memlevel_t *l, uint64_t id, uint64_t room, uint64_t limit,
                              int version, const char *file, const char *path)
{
    const size_t n = strlen(path), keep = sizeof(l->path) - 1;

    l->id = id;
    l->room = room;
    l->limit = limit;
    l->version = version;
    snprintf(l->file, sizeof(l->file), "%s", file);
    snprintf(l->path, sizeof(l->path), "%s", n > keep ? path + (n - keep) : path);
}

/* The first line of a small file as an unsigned number: 1 read (*v), 0 none (no file, or
 * "max": no limit). */
static int hlx_memroom_num(const char *path, unsigned long long *v)
{
    FILE *f = fopen(path, "r");
    char line[64];
    int ok;

    if (f == NULL)
        return 0;
    ok = fgets(line, sizeof(line), f) != NULL && sscanf(line, "%llu", v) == 1;
    fclose(f);
    return ok;
}

/* The values of keys k0 and k1 in a memory.stat file (0 where absent), in one pass. */
static void hlx_memroom_stat(const char *path, const char *k0, const char *k1,
                             unsigned long long *v0, unsigned long long *v1)
{
    FILE *f = fopen(path, "r");
    char line[256];
    const size_t l0 = strlen(k0), l1 = strlen(k1);

    *v0 = *v1 = 0;
    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f)) {
        if (!strncmp(line, k0, l0) && line[l0] == ' ')
            *v0 = strtoull(line + l0 + 1, NULL, 10);
        else if (!strncmp(line, k1, l1) && line[l1] == ' ')
            *v1 = strtoull(line + l1 + 1, NULL, 10);
    }
    fclose(f);
}

/* Whether the comma-separated list s (up to its end or a space) holds word. */
static int hlx_memroom_has(const char *s, const char *word)
{
    const size_t wl = strlen(word);

    while (*s && *s != ' ' && *s != '\n') {
        const size_t n = strcspn(s, ", \n");
        if (n == wl && !strncmp(s, word, wl))
            return 1;
        s += n;
        if (*s == ',')
            s++;
    }
    return 0;
}

/* mountinfo's octal escapes (\040 a space, \011, \012, \134) decoded in place. */
static void hlx_memroom_unescape(char *s)
{
    char *o = s;

    for (; *s; s++, o++) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
            s[3] >= '0' && s[3] <= '7') {
            *o = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 3;
        } else {
            *o = *s;
        }
    }
    *o = '\0';
}

/* Whether fgets cut the line (it filled the buffer without reaching the line's end). */
static int hlx_memroom_cut(const char *line, size_t size)
{
    const size_t n = strlen(line);

    return n == size - 1 && line[n - 1] != '\n';
}

/* Whether cgroup path cg lies in the tree under root r (r itself included). */
static int hlx_memroom_under(const char *cg, const char *r)
{
    const size_t n = strlen(r);

    return !strcmp(r, "/") || (!strncmp(cg, r, n) && (cg[n] == '\0' || cg[n] == '/'));
}

/* The mount (point and root within the hierarchy) of the cgroup2 tree (v 2) or the v1
 * memory controller's (v 1) that shows cgroup cg, from mountinfo: of several (a bind mount
 * of part of the tree beside the whole), the one with the longest root holding cg. 1
 * found. */
static int hlx_memroom_mount(const char *root, int v, const char *cg, char *point, size_t pn,
                             char *mroot, size_t rn)
{
    char path[4096], line[4096];
    FILE *f;
    size_t best = 0;
    int found = 0;

    snprintf(path, sizeof(path), "%s/proc/self/mountinfo", root);
    if ((f = fopen(path, "r")) == NULL)
        return 0;
    /* ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER_OPTIONS */
    while (fgets(line, sizeof(line), f)) {
        char r[1024], p[1024], type[64], super[1024] = "";
        const char *dash = strstr(line, " - ");
        if (hlx_memroom_cut(line, sizeof(line)) || dash == NULL ||
            sscanf(line, "%*s %*s %*s %1023s %1023s", r, p) != 2 ||
            sscanf(dash + 3, "%63s %*s %1023s", type, super) < 1 ||
            strlen(r) >= sizeof(r) - 1 || strlen(p) >= sizeof(p) - 1) /* cut: not read */
            continue;
        hlx_memroom_unescape(r);
        hlx_memroom_unescape(p);
        if (((v == 2 && !strcmp(type, "cgroup2")) ||
             (v == 1 && !strcmp(type, "cgroup") && hlx_memroom_has(super, "memory"))) &&
            hlx_memroom_under(cg, r) && (!found || strlen(r) > best)) {
            snprintf(point, pn, "%s%s", root, p);
            snprintf(mroot, rn, "%s", r);
            best = strlen(r);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

/* This process's cgroup path in the v2 tree (v 2: the "0::" line) or the v1 memory
 * controller's (v 1): 1 found. */
static int hlx_memroom_self(const char *root, int v, char *cg, size_t cn)
{
    char path[4096], line[4096];
    FILE *f;
    int found = 0;

    snprintf(path, sizeof(path), "%s/proc/self/cgroup", root);
    if ((f = fopen(path, "r")) == NULL)
        return 0;
    while (!found && fgets(line, sizeof(line), f)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c2 == NULL)
            continue;
        *c2 = '\0';
        if ((v == 2 && !strncmp(line, "0:", 2) && c1[1] == '\0') ||
            (v == 1 && hlx_memroom_has(c1 + 1, "memory"))) {
            c2[1 + strcspn(c2 + 1, "\n")] = '\0';
            /* a longer path (a line fgets cut among them) is not read: cut, it could
             * name a sibling (job_1 for job_12) */
            found = snprintf(cg, cn, "%s", c2 + 1) < (int)cn;
        }
    }
    fclose(f);
    return found;
}

/* One hierarchy (v 1 or 2): the smallest room over the levels from this process's cgroup
 * up to the mount's root into r where it is smaller than r's; every limited level's id into
 * r's levels. */
static void hlx_memroom_tree(const char *root, int v, uint64_t machine, hlx_memroom_t *r)
{
    /* limit, usage, and in memory.stat the page cache and the part of it in shared memory
     * (tmpfs, which is not reclaimed without swap) */
    static const char *const files[3][4] = {
        { NULL, NULL, NULL, NULL },
        { "memory.limit_in_bytes", "memory.usage_in_bytes", "total_cache", "total_shmem" },
        { "memory.max", "memory.current", "file", "shmem" },
    };
    char point[2048], mroot[1024], cg[1024], dir[4096], path[4200];
    size_t base;
    const char *rel;

    if (!hlx_memroom_self(root, v, cg, sizeof(cg)) ||
        !hlx_memroom_mount(root, v, cg, point, sizeof(point), mroot, sizeof(mroot)))
        return;
    /* a mount of part of the tree (a container's) shows the cgroups below its root */
    rel = strcmp(mroot, "/") != 0 ? cg + strlen(mroot) : cg;
    base = strlen(point);
    if (snprintf(dir, sizeof(dir), "%s%s", point, rel) >= (int)sizeof(dir))
        return;
    while (strlen(dir) > 1 && dir[strlen(dir) - 1] == '/')
        dir[strlen(dir) - 1] = '\0';
    for (;;) {
        unsigned long long lim, high, use;
        const char *file = files[v][0];
        int limited;
        char *slash;
        snprintf(path, sizeof(path), "%s/%s", dir, files[v][0]);
        limited = hlx_memroom_num(path, &lim) && lim < HLX_MEMROOM_NOLIMIT;
        snprintf(path, sizeof(path), "%s/memory.high", dir);
        if (v == 2 && hlx_memroom_num(path, &high) && high < HLX_MEMROOM_NOLIMIT &&
            (!limited || high < lim)) {
            lim = high;
            file = "memory.high";
            limited = 1;
        }
        if (limited) {
            unsigned long long room, cache, shm;
            const char *name = dir[base] != '\0' ? dir + base : "/";
            const uint64_t id = hlx_memroom_id(machine, v, dir, name);
            snprintf(path, sizeof(path), "%s/%s", dir, files[v][1]);
            if (!hlx_memroom_num(path, &use))
                use = 0;
            snprintf(path, sizeof(path), "%s/memory.stat", dir);
            hlx_memroom_stat(path, files[v][2], files[v][3], &cache, &shm);
            cache = cache > shm ? cache - shm : 0;
            use = use > cache ? use - cache : 0;
            room = lim > use ? lim - use : 0;
            /* past the last place only a level that binds is kept, in that place */
            const int at = r->nlevels < HLX_MEMROOM_LEVELS ? r->nlevels++
                           : room < r->bytes              ? HLX_MEMROOM_LEVELS - 1
                                                          : -1;
            if (at >= 0)
                hlx_memroom_level(&r->level[at], id, room, lim, v, file, name);
            if (room < r->bytes) {
                r->bytes = room;
                r->bind = at;
            }
        }
        if (strlen(dir) <= base || (slash = strrchr(dir, '/')) == NULL ||
            slash < dir + base)
            break;
        *slash = '\0';
    }
}

void hlx_mem_cgroup_room(const char *root, hlx_memroom_t *r)
{
    uint64_t machine;

    memset(r, 0, sizeof(*r));
    r->bytes = UINT64_MAX;
    r->bind = -1;
    if (root == NULL)
        root = "";
    machine = hlx_memroom_machine(root);
    hlx_memroom_tree(root, 2, machine, r);
    hlx_memroom_tree(root, 1, machine, r);
}

/* The ranks of all[0, n) inside cgroup id (at least 1: the asking rank is). */
static int hlx_mem_inside(const hlx_memshare_t *all, int n, uint64_t id)
{
    int r, i, k = 0;

    for (r = 0; r < n; r++)
        for (i = 0; i < all[r].nlevels && i < HLX_MEMROOM_LEVELS; i++)
            if (all[r].level[i].id == id) {
                k++;
                break;
            }
    return k > 0 ? k : 1;
}

uint64_t hlx_mem_share(const hlx_memshare_t *all, int n, int me, int *div_p, int *lv_p)
{
    const hlx_memshare_t *m = &all[me];
    uint64_t share = m->avail;
    int i, k;

    *div_p = 0;
    *lv_p = -1;
    for (i = 0; !m->fixed && i < m->nlevels && i < HLX_MEMROOM_LEVELS; i++) {
        k = hlx_mem_inside(all, n, m->level[i].id);
        if (m->level[i].room / (uint64_t)k < share) {
            share = m->level[i].room / (uint64_t)k;
            *div_p = k;
            *lv_p = i;
        }
    }
    return share;
}

uint64_t hlx_mem_node_available(void)
{
    unsigned long long kb = 0;
    char line[256];
    FILE *f;

    if ((f = fopen("/proc/meminfo", "r")) == NULL)
        return UINT64_MAX;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return kb > 0 ? (uint64_t)kb * 1024 : UINT64_MAX;
}
