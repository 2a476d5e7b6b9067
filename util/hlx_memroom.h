/* The memory a cgroup limit leaves this process (memroom.c): what a batch job may take
 * where the node's MemAvailable says more. */
#ifndef HLX_MEMROOM_H
#define HLX_MEMROOM_H

#include <stdint.h>

typedef struct hlx_memroom {
    uint64_t bytes;     /* the room: limit less usage (page cache but shmem not counted);
                           UINT64_MAX: no limit found */
    uint64_t limit;     /* the binding cgroup's limit */
    int      version;   /* the binding cgroup's hierarchy: 1 or 2; 0: none */
    char     path[512]; /* the binding cgroup, as /proc/self/cgroup names it ("/" the root) */
} hlx_memroom_t;

/* The smallest room over this process's memory cgroups and their parents, in the cgroup2
 * tree and the v1 memory controller's, whichever are mounted. root: "" (or NULL) for this
 * system; a test's folder holding proc/self/mountinfo, proc/self/cgroup and the trees
 * under the mount points those name. Missing or unreadable files give no limit. */
void hlx_mem_cgroup_room(const char *root, hlx_memroom_t *r);

#endif
