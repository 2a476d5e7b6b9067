/* The memory a cgroup limit leaves this process (memroom.c): what a batch job may take
 * where the node's MemAvailable says more, and a rank's share of it where ranks share the
 * cgroup. */
#ifndef HLX_MEMROOM_H
#define HLX_MEMROOM_H

#include <stdint.h>

/* limited levels a room keeps (a deeper nesting keeps the innermost and the binding one) */
#define HLX_MEMROOM_LEVELS 8

/* One limited cgroup the process sits in: its room and how to name it. */
typedef struct hlx_memlevel {
    uint64_t id;        /* the cgroup on this machine: a hash of the machine (its boot id,
                           else its host name), the hierarchy and the cgroup's folder (device
                           and inode: the same from any cgroup namespace); never 0 */
    uint64_t room;      /* its limit less its usage (page cache but shmem not counted) */
    uint64_t limit;
    int32_t  version;   /* its hierarchy: 1 or 2 */
    char     file[24];  /* the file its limit came from: memory.max, memory.high (v2),
                           memory.limit_in_bytes (v1) */
    char     path[128]; /* as /proc/self/cgroup names it ("/" the root); a longer one's last
                           127 bytes */
} hlx_memlevel_t;

typedef struct hlx_memroom {
    uint64_t bytes;     /* the smallest room over the levels; UINT64_MAX: no limit found */
    int      bind;      /* the level of that room (it binds); -1: none */
    int      nlevels;   /* every level with a limit, innermost first, the binding one among
                           them */
    hlx_memlevel_t level[HLX_MEMROOM_LEVELS];
} hlx_memroom_t;

/* The smallest room over this process's memory cgroups and their parents, in the cgroup2
 * tree and the v1 memory controller's, whichever are mounted; on v2 a level's limit is the
 * smaller of memory.max and memory.high (past high the kernel throttles the cgroup into
 * reclaim: a run there crawls). root: "" (or NULL) for this system; a test's folder holding
 * proc/self/mountinfo, proc/self/cgroup, proc/sys/kernel/random/boot_id and the trees
 * under the mount points those name. Missing or unreadable files give no limit. */
void hlx_mem_cgroup_room(const char *root, hlx_memroom_t *r);

/* The node's MemAvailable (/proc/meminfo) in bytes; UINT64_MAX where it does not say. */
uint64_t hlx_mem_node_available(void);

/* One rank's memory bounds, as the start-up record carries them to every rank. */
typedef struct hlx_memshare {
    uint64_t avail;   /* its bound other than a cgroup's: the node's MemAvailable over the
                         node's ranks, or HELIX_MEM_LIMIT; UINT64_MAX: none */
    int32_t  nlevels; /* the limited cgroups it is in (hlx_memroom_t.level), rooms whole */
    int32_t  fixed;   /* 1: avail is HELIX_MEM_LIMIT, which overrides the cgroups */
    hlx_memlevel_t level[HLX_MEMROOM_LEVELS];
} hlx_memshare_t;

/* The bytes rank me of n may take: the smallest of all[me].avail and, for each limited
 * cgroup it is in, that cgroup's room shared over the ranks inside it (those whose levels
 * hold its id: the id names the machine, so only ranks of its node), so that ranks each in
 * a cgroup of their own below a shared parent also share the parent; a rank with
 * HELIX_MEM_LIMIT (fixed) takes avail alone though it counts in the others' shares.
 * *div_p: the ranks the binding cgroup's room was shared over, else 0 (avail binds);
 * *lv_p: that cgroup's index in all[me].level. UINT64_MAX: no bound known (not checked). */
uint64_t hlx_mem_share(const hlx_memshare_t *all, int n, int me, int *div_p, int *lv_p);

#endif
