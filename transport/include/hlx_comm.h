/* Communicators over a backend chosen at creation (self for a world of one, UCX ucp
 * across processes; NCCL later): variable-size all-to-all, fp32 sum all-reduce,
 * all-gather, barrier, and sub-groups. Every blocking wait has a deadline and returns
 * HLX_ERR_TIMEOUT (or HLX_ERR_PEER) instead of hanging. After such an error the
 * communicator (and its world) refuses further operations with the same status. */
#ifndef HLX_COMM_H
#define HLX_COMM_H

#include "hlx_boot.h"

#include <helix/cluster.h>
#include <helix/status.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hlx_comm     hlx_comm_t;
typedef struct hlx_comm_req hlx_comm_req_t;

typedef struct hlx_comm_params {
    double timeout_s;    /* deadline for each blocking operation (HELIX_COMM_TIMEOUT) */
    char   backend[32];  /* "auto", "self", "ucx" */
    /* Link class from this rank to every world rank (job size entries, computed job-wide
     * by the topology layer; the entry for this rank is ignored). NULL: derived from the
     * host names exchanged at world creation (same host -> shm, else tcp). Read only
     * during hlx_comm_world. */
    const hlx_link_t *links;
} hlx_comm_params_t;

/* Defaults from the transport's settings table (environment applied). */
void hlx_comm_params_default(hlx_comm_params_t *p);

/* Accepted range of every deadline in seconds (HELIX_COMM_TIMEOUT, timeout_s). */
#define HLX_COMM_TIMEOUT_MIN 0.001
#define HLX_COMM_TIMEOUT_MAX 86400.0
/* HLX_OK when what (a flag or variable name, for the message) is a usable deadline;
 * otherwise reports it with the accepted range and returns HLX_ERR_INVALID. */
hlx_status_t hlx_comm_timeout_check(const char *what, double timeout_s);

/* The world communicator over all ranks of the job. Collective: every rank calls it. */
hlx_status_t hlx_comm_world(hlx_boot_t *boot, const hlx_comm_params_t *p,
                            hlx_comm_t **world_p);

/* A sub-group of the world: ranks[] lists world ranks in the order of the new
 * communicator's ranks. Every member calls it with the same list; no communication.
 * A caller that is not in ranks[] gets HLX_ERR_INVALID. */
hlx_status_t hlx_comm_sub(hlx_comm_t *world, const int *ranks, int n, hlx_comm_t **sub_p);

int         hlx_comm_rank(const hlx_comm_t *comm);
int         hlx_comm_size(const hlx_comm_t *comm);
const char *hlx_comm_backend(const hlx_comm_t *comm);

/* Byte counts and displacements per peer (rank order of this communicator). The block
 * for self is copied locally. */
hlx_status_t hlx_comm_alltoallv(hlx_comm_t *comm, const void *sbuf, const size_t *scounts,
                                const size_t *sdispls, void *rbuf, const size_t *rcounts,
                                const size_t *rdispls);
/* Non-blocking variant: buffers must stay valid until hlx_comm_wait() returns. */
hlx_status_t hlx_comm_ialltoallv(hlx_comm_t *comm, const void *sbuf, const size_t *scounts,
                                 const size_t *sdispls, void *rbuf, const size_t *rcounts,
                                 const size_t *rdispls, hlx_comm_req_t **req_p);
/* Progresses; HLX_OK when done (req freed), HLX_INPROGRESS when not, error otherwise
 * (req freed; past the deadline: HLX_ERR_TIMEOUT). */
hlx_status_t hlx_comm_test(hlx_comm_req_t *req);
/* Waits with the communicator's deadline; frees req in every case. */
hlx_status_t hlx_comm_wait(hlx_comm_req_t *req);

/* In-place sum. The result is bitwise identical on every rank (fixed reduction order),
 * so replicated state never drifts between ranks. */
hlx_status_t hlx_comm_allreduce_sum_f32(hlx_comm_t *comm, float *buf, size_t count);
/* out receives size * bytes, in rank order. */
hlx_status_t hlx_comm_allgather(hlx_comm_t *comm, const void *in, size_t bytes, void *out);
hlx_status_t hlx_comm_barrier(hlx_comm_t *comm);
/* A barrier with its own deadline, for a wait whose length is known to differ from the
 * usual operations (a rank doing work the others wait for). */
hlx_status_t hlx_comm_barrier_within(hlx_comm_t *comm, double timeout_s);

/* Frees a communicator (sub-groups before the world). Destroying the world is
 * collective: it ends with a barrier (bounded by the deadline) so that no rank closes
 * its endpoints while data of the last operations is still in flight. */
void hlx_comm_destroy(hlx_comm_t *comm);

/* World rank of a rank of comm (-1 when out of range). */
int hlx_comm_world_rank(const hlx_comm_t *comm, int rank);

/* Link class and backend name of the path to a rank of comm, fixed at world creation
 * (self for the caller; HLX_LINK_COUNT / NULL when out of range). */
hlx_link_t  hlx_comm_peer_link(const hlx_comm_t *comm, int rank);
const char *hlx_comm_peer_backend(const hlx_comm_t *comm, int rank);

/* Progresses req once and says whether the block from rank (of req's communicator) has
 * landed intact: 1 yes, 0 not yet (or failed: hlx_comm_wait/test reports errors). Lets
 * a caller use fast peers' data before slow ones' arrives. */
int hlx_comm_arrived(hlx_comm_req_t *req, int rank);

/* ---- which backend carries a communicator's collectives (transport/comm_choose.c)
 * A pure function of the members' link classes and what this build and process can do,
 * so that it is testable from placement fixtures and every rank computes the same answer
 * from the same job-wide matrix. */
typedef enum hlx_comm_choice {
    HLX_COMM_CHOICE_HOST = 0,   /* host buffers: the transport (UCX / self) reads them */
    HLX_COMM_CHOICE_SELF,       /* device buffers, a group of one: a copy within the rank */
    HLX_COMM_CHOICE_UCX_STAGED, /* device buffers copied through pinned host memory */
    HLX_COMM_CHOICE_UCX_DEVICE, /* device buffers handed to UCX directly (CUDA memory type) */
    HLX_COMM_CHOICE_NCCL,       /* device buffers, NCCL on the device queue */
    HLX_COMM_CHOICE_COUNT
} hlx_comm_choice_t;

/* HELIX_NCCL */
typedef enum hlx_nccl_mode {
    HLX_NCCL_AUTO = 0, /* NCCL when every pair of members is linked by NVLink */
    HLX_NCCL_ON,       /* NCCL for every group on device buffers (a build with NCCL) */
    HLX_NCCL_OFF,      /* never */
} hlx_nccl_mode_t;

typedef struct hlx_comm_caps {
    int             device_buffers;    /* the buffers are device memory (cuda backend) */
    int             nccl_compiled;     /* hlx_nccl_compiled() */
    hlx_nccl_mode_t nccl_mode;
    int             ucx_device_memory; /* hlx_comm_device_memory(): UCX reads CUDA memory */
} hlx_comm_caps_t;

/* pair_links: the n x n link classes of the group's members (row a, column b: from member
 * a to member b; the diagonal is ignored), in the group's rank order. why (may be NULL)
 * receives one line saying what decided. An unknown class (HLX_LINK_COUNT) counts as not
 * NVLink. */
hlx_comm_choice_t hlx_comm_choose_backend(const hlx_link_t *pair_links, int n,
                                          const hlx_comm_caps_t *caps, char *why,
                                          size_t whylen);
/* The same over a group too large for a matrix: row_fn fills row[0..n) with the classes
 * from member to every member and returns 0 (non-zero: unknown, not NVLink). The rows are
 * read in order, until the first pair that is not NVLink. */
typedef int (*hlx_comm_row_fn_t)(void *arg, int member, hlx_link_t *row);
hlx_comm_choice_t hlx_comm_choose_backend_rows(int n, hlx_comm_row_fn_t row_fn, void *arg,
                                               const hlx_comm_caps_t *caps, char *why,
                                               size_t whylen);
/* "host", "self", "ucx-staged", "ucx-device", "nccl" ("?" out of range). */
const char *hlx_comm_choice_name(hlx_comm_choice_t choice);
/* HLX_OK and *mode_p for "auto", "on" or "off"; HLX_ERR_INVALID otherwise. */
hlx_status_t hlx_nccl_mode_parse(const char *s, hlx_nccl_mode_t *mode_p);

/* 1 when the UCX contexts of this world can read and write CUDA memory (UCX built with
 * CUDA: ucp_context_query's memory types include CUDA), 0 otherwise and for a world with
 * no UCX context (a world of one asks a probe context). */
int hlx_comm_device_memory(const hlx_comm_t *comm);

/* A hash of every transport setting this process runs with (HELIX_COMM_*,
 * HELIX_HEARTBEAT_*) and of UCX's tcp segment variables (UCX_TCP_TX_SEG_SIZE,
 * UCX_TCP_RX_SEG_SIZE: set or not, and their values as UCX reads them, so that 64K and
 * 65536 agree), for ranks to compare at start-up; 0 when a value is invalid (the
 * settings' check reported it). */
uint64_t hlx_comm_settings_hash(void);

/* The transport's settings (HELIX_COMM_*, HELIX_HEARTBEAT_*), for `helix info` and
 * unknown-variable warnings. */
extern const struct hlx_param_table hlx_comm_param_table;

#endif
