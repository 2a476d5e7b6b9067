/* hlx_mem_cgroup_room: the memory a cgroup limit leaves this process. A batch job's
 * memory is bounded by its cgroup (Slurm's task/cgroup plugin with ConstrainRAMSpace,
 * containers), not by the node's MemAvailable, which reads the whole machine; a start-up
 * check against MemAvailable alone would pass and the job be killed by the OOM killer
 * during the load. Reads /proc/self/mountinfo for the cgroup2 mount and the v1 memory
 * controller's, /proc/self/cgroup for this process's cgroup in each, and walks from it up
 * to the mount's root: the room at a level is its limit less its usage, where reclaimable
 * page cache (inactive_file) does not count as used; the smallest room over the levels
 * binds. */
#define _GNU_SOURCE
#include "hlx_memroom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* v1's "no limit": PAGE_COUNTER_MAX rounded to pages, about 2^63; anything past 2^62 */
#define HLX_MEMROOM_NOLIMIT (1ull << 62)

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

/* The value of key in a memory.stat file (0 where absent). */
static unsigned long long hlx_memroom_stat(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    char line[256];
    unsigned long long v = 0;
    const size_t kl = strlen(key);

    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, key, kl) && line[kl] == ' ') {
            v = strtoull(line + kl + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
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

/* The mount (point and root within the hierarchy) of the cgroup2 tree (v 2) or the v1
 * memory controller's (v 1) from mountinfo: 1 found. */
static int hlx_memroom_mount(const char *root, int v, char *point, size_t pn, char *mroot,
                             size_t rn)
{
    char path[4096], line[4096];
    FILE *f;
    int found = 0;

    snprintf(path, sizeof(path), "%s/proc/self/mountinfo", root);
    if ((f = fopen(path, "r")) == NULL)
        return 0;
    /* ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER_OPTIONS */
    while (!found && fgets(line, sizeof(line), f)) {
        char r[1024], p[1024], type[64], super[1024] = "";
        const char *dash = strstr(line, " - ");
        if (dash == NULL || sscanf(line, "%*s %*s %*s %1023s %1023s", r, p) != 2 ||
            sscanf(dash + 3, "%63s %*s %1023s", type, super) < 1)
            continue;
        if ((v == 2 && !strcmp(type, "cgroup2")) ||
            (v == 1 && !strcmp(type, "cgroup") && hlx_memroom_has(super, "memory"))) {
            snprintf(point, pn, "%s%s", root, p);
            snprintf(mroot, rn, "%s", r);
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
            snprintf(cg, cn, "%s", c2 + 1);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

/* One hierarchy (v 1 or 2): the smallest room over the levels from this process's cgroup
 * up to the mount's root into r where it is smaller than r's. */
static void hlx_memroom_tree(const char *root, int v, hlx_memroom_t *r)
{
    static const char *const files[3][3] = {
        { NULL, NULL, NULL },
        { "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file" },
        { "memory.max", "memory.current", "inactive_file" },
    };
    char point[2048], mroot[1024], cg[1024], dir[4096], path[4200];
    size_t base;
    const char *rel;

    if (!hlx_memroom_mount(root, v, point, sizeof(point), mroot, sizeof(mroot)) ||
        !hlx_memroom_self(root, v, cg, sizeof(cg)))
        return;
    /* a mount of part of the tree (a container's) shows the cgroups below its root */
    rel = cg;
    if (strcmp(mroot, "/") != 0 && !strncmp(cg, mroot, strlen(mroot)))
        rel = cg + strlen(mroot);
    base = strlen(point);
    if (snprintf(dir, sizeof(dir), "%s%s", point, rel) >= (int)sizeof(dir))
        return;
    while (strlen(dir) > 1 && dir[strlen(dir) - 1] == '/')
        dir[strlen(dir) - 1] = '\0';
    for (;;) {
        unsigned long long lim, use;
        char *slash;
        snprintf(path, sizeof(path), "%s/%s", dir, files[v][0]);
        if (hlx_memroom_num(path, &lim) && lim < HLX_MEMROOM_NOLIMIT) {
            unsigned long long room = 0, cache;
            snprintf(path, sizeof(path), "%s/%s", dir, files[v][1]);
            if (!hlx_memroom_num(path, &use))
                use = 0;
            snprintf(path, sizeof(path), "%s/memory.stat", dir);
            cache = hlx_memroom_stat(path, files[v][2]);
            use = use > cache ? use - cache : 0;
            room = lim > use ? lim - use : 0;
            if (room < r->bytes) {
                r->bytes = room;
                r->limit = lim;
                r->version = v;
                snprintf(r->path, sizeof(r->path), "%s", dir + base);
                if (r->path[0] == '\0')
                    snprintf(r->path, sizeof(r->path), "/");
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
    memset(r, 0, sizeof(*r));
    r->bytes = UINT64_MAX;
    if (root == NULL)
        root = "";
    hlx_memroom_tree(root, 2, r);
    hlx_memroom_tree(root, 1, r);
}
