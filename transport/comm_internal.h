/* Internal layout shared by the collective layer (comm.c) and the point-to-point
 * backends (comm_self.c, comm_ucx.c). Not installed; only transport/ includes it. */
#ifndef HLX_COMM_INTERNAL_H
#define HLX_COMM_INTERNAL_H

#include "hlx_comm.h"

#include <stdint.h>

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
struct hlx_comm_ucx;

/* One posted send or receive of an operation. */
struct hlx_comm_slot {
    hlx_comm_req_t *req;
    void           *handle;   /* backend request while in flight */
    int             peer;     /* rank in the communicator */
    int             is_recv;
    int             done;
    hlx_status_t    status;
    size_t          len;      /* bytes expected */
    size_t          got;      /* bytes received */
};

/* Point-to-point backend, chosen once when the world is created. Peers are world
 * ranks. Completion is reported through hlx_comm_slot_done(). */
typedef struct hlx_comm_ops {
    const char *name;
    hlx_status_t (*open)(hlx_comm_net_t *net, hlx_boot_t *boot);
    /* graceful: flush outstanding traffic first (bounded by the net's timeout) */
    void (*close)(hlx_comm_net_t *net, int graceful);
    hlx_status_t (*isend)(hlx_comm_net_t *net, int peer, const void *buf, size_t len,
                          uint64_t tag, hlx_comm_slot_t *slot);
    hlx_status_t (*irecv)(hlx_comm_net_t *net, int peer, void *buf, size_t len,
                          uint64_t tag, hlx_comm_slot_t *slot);
    /* Returns non-zero when something happened. */
    int (*progress)(hlx_comm_net_t *net);
    /* Withdraws a posted receive; its completion (cancelled) arrives through progress. */
    void (*cancel)(hlx_comm_net_t *net, hlx_comm_slot_t *slot);
    /* Text for a backend status stored in the peer-lost record. */
    const char *(*strerror)(int backend_status);
} hlx_comm_ops_t;

extern const hlx_comm_ops_t hlx_comm_ops_self;
extern const hlx_comm_ops_t hlx_comm_ops_ucx;

/* State shared by the world and its sub-groups: the backend's worker and endpoints. */
struct hlx_comm_net {
    const hlx_comm_ops_t *ops;
    hlx_boot_t           *boot;
    int                   rank, size;      /* world */
    double                timeout_s;
    int                  *peer_lost;       /* per world rank: 0, or the backend status */
    int                   closing;         /* shutdown: peer loss is expected */
    int                   peer_failure;    /* ask the backend to report dead peers */
    struct hlx_comm_ucx  *ucx;
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

void hlx_comm_slot_done(hlx_comm_slot_t *slot, hlx_status_t status, size_t got);

#endif
