/* The memory a cgroup limit leaves this process (memroom.c): what a batch job may take
 * where the node's MemAvailable says more, and a rank's share of it where ranks share the
 * cgroup. */
#ifndef HLX_MEMROOM_H
#define HLX_MEMROOM_H

#include <stdint.h>

/* limited levels whose ids a room keeps (a deeper nesting keeps the innermost and the
 * binding one) */
#define HLX_MEMROOM_LEVELS 8

typedef struct hlx_memroom {
    uint64_t bytes;     /* the room: limit less usage (page cache but shmem not counted);
                           UINT64_MAX: no limit found */
    uint64_t limit;     /* the binding cgroup's limit */
    int      version;   /* the binding cgroup's hierarchy: 1 or 2; 0: none */
    char     file[24];  /* the file its limit came from: memory.max, memory.high (v2),
                           memory.limit_in_bytes (v1) */
    char     path[512]; /* the binding cgroup, as /proc/self/cgroup names it ("/" the root) */
    uint64_t id;        /* the binding cgroup on this machine: a hash of the machine (its
                           boot id, else its host name), the hierarchy and the cgroup's
                           folder (device and inode: the same from any cgroup namespace);
                           0: none */
    int      nlevels;   /* the ids of every level with a limit, the binding one among them */
    uint64_t level[HLX_MEMROOM_LEVELS];
} hlx_memroom_t;

/* The smallest room over this process's memory cgroups and their parents, in the cgroup2
 * tree and the v1 memory controller's, whichever are mounted; on v2 a level's limit is the
 * smaller of memory.max and memory.high (past high the kernel throttles the cgroup into
 * reclaim: a run there crawls). root: "" (or NULL) for this system; a test's folder holding
 * proc/self/mountinfo, proc/self/cgroup, proc/sys/kernel/random/boot_id and the trees
 * under the mount points those name. Missing or unreadable files give no limit. */
void hlx_mem_cgroup_room(const char *root, hlx_memroom_t *r);

/* One rank's memory bounds, as the start-up record carries them to every rank. */
typedef struct hlx_memshare {
    uint64_t avail;   /* its bound other than a cgroup's: the node's MemAvailable over the
                         node's ranks, or HELIX_MEM_LIMIT; UINT64_MAX: none */
    uint64_t cg_room; /* its binding cgroup's room, whole (hlx_memroom_t.bytes) */
    uint64_t cg_id;   /* that cgroup (hlx_memroom_t.id); 0: no cgroup limit */
    uint64_t level[HLX_MEMROOM_LEVELS]; /* the ids of every limited cgroup it is in */
    int32_t  nlevels;
    int32_t  fixed;   /* 1: avail is HELIX_MEM_LIMIT, which overrides the cgroup */
} hlx_memshare_t;

/* The bytes rank me of n may take: the smaller of all[me].avail and its cgroup's room
 * shared over the ranks inside that cgroup (those whose levels hold its id: the id names
 * the machine, so only ranks of its node), a rank with HELIX_MEM_LIMIT (fixed) taking
 * avail alone though it counts in the others' share. *div_p: the ranks the cgroup's room
 * was shared over where it binds, else 0. UINT64_MAX: neither bound known (not checked). */
uint64_t hlx_mem_share(const hlx_memshare_t *all, int n, int me, int *div_p);

#endif
