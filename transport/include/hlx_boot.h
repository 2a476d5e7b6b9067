/* Bootstrap through the PMIx client API only: rank, size and a small all-gather of
 * per-rank blobs (UCX worker addresses, the run-configuration record). A process started
 * with no launcher (PMIx_Init fails) runs as a world of one. */
#ifndef HLX_BOOT_H
#define HLX_BOOT_H

#include <helix/status.h>
#include <stddef.h>

typedef struct hlx_boot hlx_boot_t;

typedef struct hlx_boot_info {
    int         rank, size;             /* in the job */
    int         local_rank, local_size; /* on this node */
    const char *launcher;               /* "helixrun", "mpirun", "srun", "pmix", "none" */
    const char *nspace;
    const char *host;
} hlx_boot_info_t;

/* Connects to the launcher's PMIx server, or becomes a world of one when there is none.
 * timeout_s bounds every later fence, and PMIx_Init itself: a watchdog ends the process
 * (exit 1, with a message naming the launcher) if PMIx_Init has not returned by then. */
hlx_status_t hlx_boot_init(double timeout_s, hlx_boot_t **boot_p);
void         hlx_boot_get_info(const hlx_boot_t *boot, hlx_boot_info_t *info);

/* Every rank contributes len bytes under key; out receives size * len bytes in rank
 * order. PMIx Put + Commit + Fence(collect data, timeout) + Get. Keys must be new per
 * call (the same key twice in one job is refused). On timeout the error names the ranks
 * that did not arrive when PMIx can tell. */
hlx_status_t hlx_boot_allgather(hlx_boot_t *boot, const char *key, const void *data,
                                size_t len, void *out);

/* Fence with no data (used as a start barrier). */
hlx_status_t hlx_boot_barrier(hlx_boot_t *boot);

/* Asks the launcher to kill the whole job (PMIx_Abort with msg, which the launcher
 * reports), then returns; the caller has logged the reason itself, so the rank's own log
 * says only that it aborts. Arms a watchdog
 * first (HELIX_ABORT_GRACE, 10 s) that _exit()s with exit_code if the process has not
 * ended by then, so a hung PMIx_Abort or teardown cannot keep the rank alive. */
void hlx_boot_abort(hlx_boot_t *boot, int exit_code, const char *msg);

void hlx_boot_fini(hlx_boot_t *boot);

/* The timeout given to hlx_boot_init. */
double hlx_boot_timeout(const hlx_boot_t *boot);

/* Number of all-gathers done so far: equal on every rank that made the same calls,
 * so layers above can derive new keys from it ("hlx.ucx.addr.<n>"). */
int hlx_boot_calls(const hlx_boot_t *boot);

/* A rank PMIx reported lost through an error event (catch-all handler), or -1. helixrun
 * sends such an event, naming the lost rank and its cause, before it kills the job. */
int hlx_boot_lost_rank(const hlx_boot_t *boot);

/* This rank's node and where each part of its identity came from (all from PMIx, never
 * from launcher-specific variables), for the job-wide placement and HELIX_DEBUG=INFO. */
typedef struct hlx_boot_node {
    char        name[256];    /* PMIX_HOSTNAME, else "node<PMIX_NODEID>", else gethostname */
    int         nodeid;       /* PMIX_NODEID, -1 when PMIx gives none */
    const char *rank_src, *size_src, *local_src, *node_src;
} hlx_boot_node_t;

hlx_status_t hlx_boot_node(hlx_boot_t *boot, hlx_boot_node_t *node_p);

#endif
