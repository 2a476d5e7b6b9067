/* Internal layout shared by the collective layer (comm.c), the liveness layer
 * (liveness.c) and the backends (comm_self.c, comm_ucx.c). Only transport/ includes it. */
#ifndef HLX_COMM_INTERNAL_H
#define HLX_COMM_INTERNAL_H

#include "hlx_comm.h"

#include <stdint.h>
#include <ucp/api/ucp.h>

/* Tag layout, 64 bits: communicator id (28) | operation sequence (20) | source world
 * rank (16). Receives match all 64 bits, so neither two communicators nor two
 * consecutive operations of one communicator can steal each other's messages. */
#define HLX_TAG_ID_BITS   28
#define HLX_TAG_SEQ_BITS  20
#define HLX_TAG_SRC_BITS  16
#define HLX_TAG_ID_MASK   ((1u << HLX_TAG_ID_BITS) - 1)
#define HLX_TAG_SEQ_MASK  ((1u << HLX_TAG_SEQ_BITS) - 1)
#define HLX_COMM_MAX_RANKS (1 << HLX_TAG_SRC_BITS)

static inline uint64_t hlx_tag_make(uint32_t id, uint32_t seq, int src_world)
{
    return ((uint64_t)(id & HLX_TAG_ID_MASK) << (HLX_TAG_SEQ_BITS + HLX_TAG_SRC_BITS)) |
           ((uint64_t)(seq & HLX_TAG_SEQ_MASK) << HLX_TAG_SRC_BITS) |
           (uint64_t)(uint32_t)src_world;
}

typedef struct hlx_comm_net  hlx_comm_net_t;
typedef struct hlx_comm_slot hlx_comm_slot_t;
typedef struct hlx_comm_be   hlx_comm_be_t;
typedef struct hlx_comm_ops  hlx_comm_ops_t;
typedef struct hlx_liveness  hlx_liveness_t;

/* Path kinds a peer's link class maps to; one backend instance per kind in use. */
enum { HLX_PATH_SELF = 0, HLX_PATH_SHM = 1, HLX_PATH_NET = 2, HLX_PATH_COUNT };

/* peer_lost value set when the heartbeats of a peer stopped. */
#define HLX_COMM_LOST_SILENT (-0x7fff0000)

/* One posted send or receive of an operation. */
struct hlx_comm_slot {
    hlx_comm_req_t *req;
    hlx_comm_be_t  *be;       /* backend of the peer */
    void           *handle;   /* backend request while in flight */
    int             peer;     /* rank in the communicator */
    int             is_recv;
    int             done;
    hlx_status_t    status;
    size_t          len;      /* bytes expected */
    size_t          got;      /* bytes received */
};

/* A backend: point-to-point entries (peers are world ranks; completion is reported
 * through hlx_comm_slot_done()) and collectives. The collective entries of every backend
 * default to comm.c's point-to-point versions (hlx_comm_p2p_*); a backend with its own
 * collectives (NCCL) points them elsewhere. A group uses a backend's collectives only
 * when every peer in it is served by that backend. */
struct hlx_comm_ops {
    const char *name;
    /* Collective over the whole world, called only when some rank has a peer of this
     * backend's path (every rank knows the same answer). */
    hlx_status_t (*open)(hlx_comm_be_t *be, hlx_boot_t *boot);
    /* graceful: flush outstanding traffic first (bounded by the net's timeout) */
    void (*close)(hlx_comm_be_t *be, int graceful);
    hlx_status_t (*isend)(hlx_comm_be_t *be, int peer, const void *buf, size_t len,
                          uint64_t tag, hlx_comm_slot_t *slot);
    hlx_status_t (*irecv)(hlx_comm_be_t *be, int peer, void *buf, size_t len,
                          uint64_t tag, hlx_comm_slot_t *slot);
    /* Returns non-zero when something happened. */
    int (*progress)(hlx_comm_be_t *be);
    /* Withdraws a posted receive; its completion (cancelled) arrives through progress. */
    void (*cancel)(hlx_comm_be_t *be, hlx_comm_slot_t *slot);
    /* Text for a backend status stored in the peer-lost record. */
    const char *(*strerror)(int backend_status);

    hlx_status_t (*ialltoallv)(hlx_comm_t *comm, const void *sbuf, const size_t *scounts,
                               const size_t *sdispls, void *rbuf, const size_t *rcounts,
                               const size_t *rdispls, hlx_comm_req_t **req_p);
    hlx_status_t (*allreduce_sum_f32)(hlx_comm_t *comm, float *buf, size_t count);
    hlx_status_t (*allgather)(hlx_comm_t *comm, const void *in, size_t bytes, void *out);
    /* Called for every new sub-group whose peers all use this backend; may communicate
     * over the world (every member calls it in the same order). */
    hlx_status_t (*sub_create)(hlx_comm_t *sub);
    void (*sub_destroy)(hlx_comm_t *sub);
};

extern const hlx_comm_ops_t hlx_comm_ops_self;
extern const hlx_comm_ops_t hlx_comm_ops_ucx_shm;
extern const hlx_comm_ops_t hlx_comm_ops_ucx_net;

/* The point-to-point collectives every backend starts from. */
hlx_status_t hlx_comm_p2p_ialltoallv(hlx_comm_t *comm, const void *sbuf,
                                     const size_t *scounts, const size_t *sdispls,
                                     void *rbuf, const size_t *rcounts,
                                     const size_t *rdispls, hlx_comm_req_t **req_p);
hlx_status_t hlx_comm_p2p_allreduce_sum_f32(hlx_comm_t *comm, float *buf, size_t count);
hlx_status_t hlx_comm_p2p_allgather(hlx_comm_t *comm, const void *in, size_t bytes,
                                    void *out);
hlx_status_t hlx_comm_p2p_sub_create(hlx_comm_t *sub);
void         hlx_comm_p2p_sub_destroy(hlx_comm_t *sub);

/* For backends with collectives of their own: the group's private state slot (set by
 * sub_create, freed by sub_destroy) and the world's shared state. */
void          **hlx_comm_be_priv(hlx_comm_t *comm);
hlx_comm_net_t *hlx_comm_net(hlx_comm_t *comm);

/* One backend instance of a world: the ops, the path it serves, its private state. */
struct hlx_comm_be {
    const hlx_comm_ops_t *ops;
    hlx_comm_net_t       *net;
    int                   path;  /* HLX_PATH_* */
    void                 *priv;  /* the backend's own state */
};

/* What every rank learns about every other at world creation. */
typedef struct hlx_comm_peer_info {
    char    host[64];
    int32_t pid;
} hlx_comm_peer_info_t;

/* State shared by the world and its sub-groups: backends and per-peer facts. */
struct hlx_comm_net {
    hlx_boot_t           *boot;
    int                   rank, size;      /* world */
    double                timeout_s;
    int                  *peer_lost;       /* per world rank: 0, or the backend status */
    int                   closing;         /* shutdown: peer loss is expected */
    hlx_comm_be_t         be[HLX_PATH_COUNT];
    int                   be_open[HLX_PATH_COUNT];
    hlx_link_t           *link;            /* per world rank: link class */
    hlx_comm_be_t       **peer_be;         /* per world rank: its backend (NULL: self) */
    hlx_comm_peer_info_t *peers;           /* per world rank */
    hlx_liveness_t       *live;            /* heartbeats; NULL for a world of one */
    char                  shm_tls[256];    /* UCX transports for same-host peers */
    int                   ucx_err_peer;    /* also ask UCX to report dead peers */
    int                   idle_rounds;     /* idle progress rounds before a yield */
    long                  nap_ns;          /* sleep between rounds of a late wait (ranks > cores) */
    size_t                chunk[HLX_PATH_COUNT]; /* all-to-all message limit per path */
    size_t                chunk_tcp;       /* ... for peers of link class tcp, when smaller */
    int                   chunk_auto;      /* chunk_tcp from HELIX_COMM_CHUNK_TCP=auto */
    size_t               *peer_chunk;      /* per world rank: its limit, from the two above */
    int                   tcp_seg;         /* UCX tcp segment size of the network path (0: UCX's) */
    int                   shm_rndv;        /* UCX rendezvous threshold of the same-host path (0: UCX's) */
    int                   ucx_cuda_mem;    /* -1 no UCX context yet; else 1 when every one
                                              reports the CUDA memory type */
};

struct hlx_comm_req {
    hlx_comm_t      *comm;
    const char      *op;
    uint32_t         seq;
    int              nslots, npending, cap;
    hlx_comm_slot_t *slots;
    double           t0, deadline;
    hlx_comm_req_t  *next;
};

/* An all-to-all's messages (send and receive slots) are at most HLX_COMM_A2A_SLOTS, shared
 * out evenly over its 2 (n - 1) directions: each direction may use hlx_comm_pair_msgs(n).
 * Both ends of a pair know its byte count and n, so both split a block alike and no rank
 * can run out of slots where its peer does not. */
#define HLX_COMM_A2A_SLOTS (1u << 24)

static inline size_t hlx_comm_pair_msgs(int n)
{
    return n > 1 ? HLX_COMM_A2A_SLOTS / (2 * (size_t)(n - 1)) : HLX_COMM_A2A_SLOTS;
}

/* The message size of a block of len bytes to or from a peer whose limit is chunk (0:
 * none): chunk, unless the block would then need more than pair_msgs messages; such a
 * block (pair_msgs x chunk is 32 GiB at 4 KiB chunks between two ranks) goes in the
 * fewest messages of equal size that the pair's share allows. */
static inline size_t hlx_comm_msg_size(size_t len, size_t chunk, size_t pair_msgs)
{
    if (chunk == 0 || len <= chunk * pair_msgs) /* chunk <= 2^30, pair_msgs <= 2^24 */
        return chunk;
    return len / pair_msgs + (len % pair_msgs != 0); /* rounded up, without wrapping */
}

/* Messages of a block of len bytes in messages of at most msg bytes (0: one message). */
static inline size_t hlx_comm_nmsgs(size_t len, size_t msg)
{
    return msg == 0 || len <= msg ? 1 : len / msg + (len % msg != 0);
}

/* The all-to-all message limit of a tcp-class peer on the network path: HELIX_COMM_CHUNK_TCP
 * where it is set and smaller than HELIX_COMM_CHUNK_NET (or that one is 0), else the
 * latter. */
static inline size_t hlx_comm_chunk_tcp_peer(size_t chunk_net, size_t chunk_tcp)
{
    return chunk_tcp > 0 && (chunk_net == 0 || chunk_tcp < chunk_net) ? chunk_tcp : chunk_net;
}

/* UCX 1.13 sends a tagged message of up to a tcp segment less this many bytes (its tag
 * header) as one eager message (ucx_info -e with 256 KiB segments: `tag_send:
 * 0..<egr/short>..262137`, the first size that is not); a larger one takes more. */
#define HLX_UCX_TAG_HDR 8
/* UCX 1.13's own UCX_TCP_TX_SEG_SIZE (`ucx_info -c`), in force where neither
 * HELIX_COMM_TCP_SEG nor the variable sets one (a ucx.conf aside). */
#define HLX_UCX_TCP_TX_SEG_DEFAULT 8192

/* UCX's tcp segment variables in the environment, parsed as UCX parses memory units (its
 * own ucs_config_sscanf_memunits: a number with b, k/kb, m/mb, g/gb, t/tb in any case),
 * so that 64K and 65536 are one value. inf, auto and sizes over UCX's pool limit, which UCX
 * reads but its tcp interface cannot open with, are refused where a rank opens that
 * interface (comm_ucx.c), not here: ranks with only same-host peers never open it. */
enum { HLX_UCX_SEG_TX = 0, HLX_UCX_SEG_RX = 1 };
typedef struct hlx_ucx_tcp_seg {
    const char *var[2];   /* UCX_TCP_TX_SEG_SIZE, UCX_TCP_RX_SEG_SIZE */
    const char *text[2];  /* the environment's values; NULL when unset */
    size_t      bytes[2]; /* as UCX reads them (0 when unset) */
} hlx_ucx_tcp_seg_t;
/* HLX_ERR_INVALID, the variable and its value in why, when UCX could not read a value. */
hlx_status_t hlx_ucx_tcp_seg_env(hlx_ucx_tcp_seg_t *seg, char *why, size_t whylen);

/* The tcp segment this rank sends with: HELIX_COMM_TCP_SEG where it is applied (set, and
 * neither UCX variable is), else UCX_TCP_TX_SEG_SIZE, else UCX's own. */
static inline size_t hlx_comm_tcp_tx_seg(int tcp_seg, const hlx_ucx_tcp_seg_t *seg)
{
    if (tcp_seg > 0 && seg->text[HLX_UCX_SEG_TX] == NULL && seg->text[HLX_UCX_SEG_RX] == NULL)
        return (size_t)tcp_seg;
    return seg->text[HLX_UCX_SEG_TX] != NULL ? seg->bytes[HLX_UCX_SEG_TX]
                                             : HLX_UCX_TCP_TX_SEG_DEFAULT;
}

/* HELIX_COMM_CHUNK_TCP=auto: the largest message one segment of tx bytes sends eager (less
 * the tag header), at most HLX_COMM_CHUNK_TCP_CAP; 0 (HELIX_COMM_CHUNK_NET alone) where that
 * is below the 4096-byte minimum of a chunk. */
#define HLX_COMM_CHUNK_TCP_AUTO (-1)
#define HLX_COMM_CHUNK_TCP_CAP  131072
static inline size_t hlx_comm_chunk_tcp_auto(size_t tx)
{
    size_t c = tx > HLX_UCX_TAG_HDR ? tx - HLX_UCX_TAG_HDR : 0;

    c = c < HLX_COMM_CHUNK_TCP_CAP ? c : HLX_COMM_CHUNK_TCP_CAP;
    return c < 4096 ? 0 : c;
}

/* 1 when a UCX context (created and released here) reports the CUDA memory type. */
int hlx_ucx_probe_cuda_memory(void);
/* ucp_config_read, reported once with what ("" or "heartbeat ") on failure. */
hlx_status_t hlx_ucx_config_read(const char *what, ucp_config_t **config_p);
/* A same-host context's transports: UCX_TLS = tls, a tcp entry confined to loopback (so a
 * one-host job listens on no network interface). */
ucs_status_t hlx_ucx_config_local(ucp_config_t *config, const char *tls);
/* ucp_init of a context for tag matching among n ranks; tls is what hlx_ucx_config_local
 * set (NULL: the environment's UCX_TLS), for the shared-memory receive pool's size. */
ucs_status_t hlx_ucx_init_tag(ucp_config_t *config, const char *tls, int n,
                              ucp_context_h *context_p);

void hlx_comm_slot_done(hlx_comm_slot_t *slot, hlx_status_t status, size_t got);

/* Liveness (liveness.c): a thread per process sends a heartbeat to every peer each
 * interval over its own UCX worker and records when each peer was last heard. */
hlx_status_t hlx_liveness_start(hlx_comm_net_t *net, double interval_s, double timeout_s,
                                hlx_liveness_t **live_p);
/* Non-zero when world rank w has been silent longer than the heartbeat timeout (or its
 * heartbeat connection failed); *silent_s_p receives how long. */
int  hlx_liveness_lost(hlx_liveness_t *live, int w, double *silent_s_p);
double hlx_liveness_timeout(const hlx_liveness_t *live);
/* Stops sending heartbeats (the peers do the same before a last barrier at teardown). */
void hlx_liveness_quiet(hlx_liveness_t *live);
void hlx_liveness_stop(hlx_liveness_t *live);

/* All-gathers one blob of a different length per rank (UCX worker addresses): first the
 * lengths into lens[size] (0 for a rank without one), then the blobs padded to the longest,
 * *stride_p bytes apart in *all_p (freed by the caller). Keys "hlx.WHAT.len/addr.N". */
hlx_status_t hlx_comm_allgather_blobs(hlx_boot_t *boot, const char *what, int size,
                                      const void *data, size_t len, uint32_t *lens,
                                      char **all_p, size_t *stride_p);

#endif
