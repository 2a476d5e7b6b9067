/* Communicators: settings, world creation (peer facts, link class -> backend per peer,
 * liveness), sub-groups, and the point-to-point collectives, each bounded by a deadline. */
#define _GNU_SOURCE
#include "comm_internal.h"

#include "hlx_hash.h"
#include "hlx_log.h"
#include "hlx_param.h"
#include "hlx_time.h"

#include <sched.h>
#include <stddef.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct hlx_comm_settings {
    double timeout;
    char   backend[HLX_PARAM_STRLEN];
    int    allreduce_small;
    char   ucx_err_mode[HLX_PARAM_STRLEN];
    char   shm_tls[HLX_PARAM_STRLEN];
    double hb_interval;
    double hb_timeout;
    int    chunk_shm;
    int    chunk_net;
    int    nap_us;
    int    tcp_seg;
    int    shm_rndv;
    int    chunk_tcp;
} hlx_comm_settings_t;

static const hlx_param_t hlx_comm_param_list[] = {
    { "COMM_TIMEOUT", HLX_PT_DOUBLE, "30", HLX_COMM_TIMEOUT_MIN, HLX_COMM_TIMEOUT_MAX,
      offsetof(hlx_comm_settings_t, timeout),
      "deadline in seconds for each blocking collective (and each wait)", NULL },
    { "COMM_BACKEND", HLX_PT_STRING, "auto", 0, 0, offsetof(hlx_comm_settings_t, backend),
      "communicator backend: auto (self for a world of one, else ucx), self, ucx",
      "auto|self|ucx" },
    { "COMM_ALLREDUCE_SMALL", HLX_PT_INT, "32768", 0, 1 << 30,
      offsetof(hlx_comm_settings_t, allreduce_small),
      "all-reduce payload in bytes up to which every rank gathers all contributions; "
      "above it reduce-scatter + all-gather (same fixed summation order either way)", NULL },
    { "COMM_UCX_ERR_MODE", HLX_PT_STRING, "none", 0, 0,
      offsetof(hlx_comm_settings_t, ucx_err_mode),
      "UCX endpoint error mode of the data paths: none (fast: UCX keeps its shared-memory "
      "transports; dead peers are found by the heartbeats) or peer (UCX also reports "
      "dead peers itself; UCX 1.13 then drops shared memory: several times slower)", "none|peer" },
    { "COMM_SHM_TLS", HLX_PT_STRING, "sm,self", 0, 0, offsetof(hlx_comm_settings_t, shm_tls),
      "UCX transports for peers on the same host (the network path keeps UCX_TLS and "
      "UCX_NET_DEVICES); a tcp entry here is confined to the loopback device", NULL },
    { "COMM_CHUNK_SHM", HLX_PT_INT, "0", 0, 1 << 30, offsetof(hlx_comm_settings_t, chunk_shm),
      "all-to-all blocks to same-host peers are sent in messages of at most this many "
      "bytes (0: one message per block)", NULL },
    { "COMM_CHUNK_NET", HLX_PT_INT, "1048576", 0, 1 << 30,
      offsetof(hlx_comm_settings_t, chunk_net),
      "all-to-all blocks to peers on other hosts are sent in messages of at most this many "
      "bytes (0: one message per block, but for HELIX_COMM_CHUNK_TCP's peers); must be "
      "equal on every rank", NULL },
    { "COMM_CHUNK_TCP", HLX_PT_INT, "auto", HLX_COMM_CHUNK_TCP_AUTO, 1 << 30,
      offsetof(hlx_comm_settings_t, chunk_tcp),
      "all-to-all blocks to peers of link class tcp go in messages of at most this many "
      "bytes, when smaller than HELIX_COMM_CHUNK_NET: each then fits one eager tcp segment "
      "and streams, where a larger one takes a rendezvous (auto: the tcp send segment in "
      "force less UCX's 8-byte tag header, at most 131072; 0: HELIX_COMM_CHUNK_NET alone); "
      "a number must fit HELIX_COMM_TCP_SEG - 8 (a segment UCX's variables set gets a "
      "warning instead); must be equal on every rank", "auto" },
    { "COMM_NAP_US", HLX_PT_INT, "30", 0, 10000, offsetof(hlx_comm_settings_t, nap_us),
      "with more ranks than cores on this host, a wait older than 250 us sleeps this many "
      "microseconds between progress rounds instead of yielding, so that the ranks "
      "sharing its core compute undisturbed (0: yield only, spinning)", NULL },
    { "COMM_TCP_SEG", HLX_PT_INT, "262144", 0, 1 << 22, offsetof(hlx_comm_settings_t, tcp_seg),
      "segment size in bytes of UCX's tcp transport on the network path, sending and "
      "receiving (UCX_TCP_TX_SEG_SIZE / UCX_TCP_RX_SEG_SIZE when set win): an all-to-all "
      "block up to this size goes as one eager message, with no rendezvous round trip "
      "(0: UCX's own, 8K and 64K)", NULL },
    { "COMM_SHM_RNDV", HLX_PT_INT, "65536", 0, 1 << 30, offsetof(hlx_comm_settings_t, shm_rndv),
      "message size in bytes from which UCX's same-host path switches from copies through "
      "its shared segments to a rendezvous (a single copy by cma); UCX_RNDV_THRESH when "
      "set wins (0: UCX's own choice, about 8 KiB)", NULL },
    { "HEARTBEAT_INTERVAL", HLX_PT_DOUBLE, "1", 0.01, 60,
      offsetof(hlx_comm_settings_t, hb_interval),
      "seconds between two heartbeats a rank sends to every peer (from its own thread)", NULL },
    { "HEARTBEAT_TIMEOUT", HLX_PT_DOUBLE, "10", 0.05, 3600,
      offsetof(hlx_comm_settings_t, hb_timeout),
      "a peer silent this long (stopped, hung, cut off) is reported lost (rank, host, "
      "pid) and every wait on it returns HLX_ERR_PEER; at least 2 heartbeat intervals", NULL },
};

/* The rules between the settings above and UCX's tcp segment variables, which take
 * HELIX_COMM_TCP_SEG's place (judged at every command's start-up). */
static hlx_status_t hlx_comm_settings_rules(const void *values, char *why, size_t whylen)
{
    const hlx_comm_settings_t *s = values;
    hlx_ucx_tcp_seg_t seg;
    size_t tcp_chunk;

    if ((s->chunk_shm > 0 && s->chunk_shm < 4096) || (s->chunk_net > 0 && s->chunk_net < 4096) ||
        (s->chunk_tcp > 0 && s->chunk_tcp < 4096)) {
        snprintf(why, whylen, "HELIX_COMM_CHUNK_SHM=%d / HELIX_COMM_CHUNK_NET=%d / "
                 "HELIX_COMM_CHUNK_TCP=%d: 0 (no chunks) or at least 4096 bytes",
                 s->chunk_shm, s->chunk_net, s->chunk_tcp);
        return HLX_ERR_INVALID;
    }
    if (s->tcp_seg > 0 && s->tcp_seg < 4096) {
        snprintf(why, whylen, "HELIX_COMM_TCP_SEG=%d: 0 (UCX's own) or at least 4096 bytes",
                 s->tcp_seg);
        return HLX_ERR_INVALID;
    }
    if (hlx_ucx_tcp_seg_env(&seg, why, whylen) != HLX_OK)
        return HLX_ERR_INVALID;
    /* A tcp chunk set as a number must go as one eager message: with UCX's tag header, in
     * one segment, whichever of HELIX_COMM_CHUNK_TCP and HELIX_COMM_CHUNK_NET is in force for
     * tcp peers. Where UCX's variables set the segment, UCX's value wins: a warning at world
     * creation (comm_ucx.c), where the peers are known. auto fits by construction. */
    tcp_chunk = hlx_comm_chunk_tcp_peer((size_t)s->chunk_net, (size_t)s->chunk_tcp);
    if (s->chunk_tcp > 0 && s->tcp_seg > 0 && seg.text[HLX_UCX_SEG_TX] == NULL &&
        seg.text[HLX_UCX_SEG_RX] == NULL && tcp_chunk + HLX_UCX_TAG_HDR > (size_t)s->tcp_seg) {
        char what[96];
        if (tcp_chunk == (size_t)s->chunk_tcp)
            snprintf(what, sizeof(what), "HELIX_COMM_CHUNK_TCP=%d", s->chunk_tcp);
        else
            snprintf(what, sizeof(what), "HELIX_COMM_CHUNK_NET=%d (smaller than "
                     "HELIX_COMM_CHUNK_TCP=%d, so the tcp peers' limit)", s->chunk_net,
                     s->chunk_tcp);
        if (s->tcp_seg - HLX_UCX_TAG_HDR < 4096) /* below any chunk but 0 */
            snprintf(why, whylen, "%s does not fit one HELIX_COMM_TCP_SEG=%d segment less "
                     "UCX's %d-byte tag header, nor does any chunk of 4096 bytes or more: "
                     "HELIX_COMM_CHUNK_TCP=0 or auto, or a larger HELIX_COMM_TCP_SEG", what,
                     s->tcp_seg, HLX_UCX_TAG_HDR);
        else
            snprintf(why, whylen, "%s does not fit one HELIX_COMM_TCP_SEG=%d segment: each "
                     "tcp message must go eager, so it may be at most HELIX_COMM_TCP_SEG - %d "
                     "(UCX's tag header), here %d; or HELIX_COMM_CHUNK_TCP=auto (follows the "
                     "segment) or 0", what, s->tcp_seg, HLX_UCX_TAG_HDR,
                     s->tcp_seg - HLX_UCX_TAG_HDR);
        return HLX_ERR_INVALID;
    }
    if (s->hb_timeout < 2 * s->hb_interval) {
        snprintf(why, whylen, "HELIX_HEARTBEAT_TIMEOUT=%g s must be at least twice "
                 "HELIX_HEARTBEAT_INTERVAL=%g s", s->hb_timeout, s->hb_interval);
        return HLX_ERR_INVALID;
    }
    return HLX_OK;
}

const hlx_param_table_t hlx_comm_param_table = {
    "transport", hlx_comm_param_list,
    sizeof(hlx_comm_param_list) / sizeof(hlx_comm_param_list[0]),
    sizeof(hlx_comm_settings_t), hlx_comm_settings_rules,
};

/* Backend per path (HLX_PATH_*): chosen once per peer at world creation. */
static const hlx_comm_ops_t *const hlx_comm_backends[HLX_PATH_COUNT] = {
    &hlx_comm_ops_self,
    &hlx_comm_ops_ucx_shm,
    &hlx_comm_ops_ucx_net,
};

/* Occurrences of one rank list among the sub-groups created from a world: the n-th
 * group over the same list gets a different id on every member alike. */
typedef struct hlx_comm_subkey {
    uint64_t hash;
    int      count;
} hlx_comm_subkey_t;

struct hlx_comm {
    hlx_comm_net_t    *net;
    const hlx_comm_ops_t *coll;    /* collectives: the common backend's, or p2p */
    void              *be_priv;    /* that backend's state for this group */
    hlx_comm_t        *world;      /* NULL for the world itself */
    uint32_t           id;
    uint32_t           seq;
    int                rank, size;
    int               *world_ranks; /* comm rank -> world rank */
    double             timeout_s;
    size_t             allreduce_small;
    hlx_status_t       failed;      /* sticky: first fatal error */
    int                nsubs_alive;
    hlx_comm_subkey_t *subkeys;
    int                nsubkeys;
    uint32_t          *sub_ids;    /* ids of every sub-group created from this world */
    int                nsub_ids;
    float             *scratch;     /* all-reduce contributions, grown on demand */
    size_t             scratch_cap; /* floats */
    hlx_comm_req_t    *free_reqs;   /* reusable requests */
    hlx_comm_req_t    *zombies;     /* failed requests the backend may still touch */
    int               *order;       /* posting order of peers: receives (size - 1
                                     * entries), then sends; filled on first use */
    int                order_ready;
    size_t             pair_msgs;   /* all-to-all messages per pair and direction, at most */
};

void hlx_comm_params_default(hlx_comm_params_t *p)
{
    hlx_comm_settings_t s;

    memset(p, 0, sizeof(*p));
    p->links = NULL;
    if (hlx_param_load(&hlx_comm_param_table, &s, NULL) != HLX_OK) {
        /* A bad HELIX_COMM_* value was reported; fall back to the table's defaults. */
        s.timeout = 30;
        strcpy(s.backend, "auto");
    }
    p->timeout_s = s.timeout;
    snprintf(p->backend, sizeof(p->backend), "%s", s.backend);
}

/* The settings the parameters struct does not carry; bad values (and broken rules
 * between them) were reported by the loader and refuse the communicator. */
static hlx_status_t hlx_comm_settings(hlx_comm_settings_t *s)
{
    return hlx_param_load(&hlx_comm_param_table, s, NULL);
}

uint64_t hlx_comm_settings_hash(void)
{
    hlx_comm_settings_t s;
    hlx_ucx_tcp_seg_t seg;
    char why[256];
    uint64_t h = HLX_FNV1A_INIT;
    int d;

    memset(&s, 0, sizeof(s)); /* the padding too: the struct is hashed whole */
    if (hlx_comm_settings(&s) != HLX_OK || hlx_ucx_tcp_seg_env(&seg, why, sizeof(why)) != HLX_OK)
        return 0;
    h = hlx_fnv1a(h, &s, sizeof(s));
    for (d = 0; d < 2; d++) { /* set or not, and the value as UCX reads it */
        uint64_t v[2] = { seg.text[d] != NULL, seg.bytes[d] };
        h = hlx_fnv1a(h, v, sizeof(v));
    }
    return h;
}

hlx_status_t hlx_comm_timeout_check(const char *what, double timeout_s)
{
    if (timeout_s >= HLX_COMM_TIMEOUT_MIN && timeout_s <= HLX_COMM_TIMEOUT_MAX)
        return HLX_OK;
    hlx_error("%s %g s is outside the accepted range [%g, %g] s", what, timeout_s,
              HLX_COMM_TIMEOUT_MIN, HLX_COMM_TIMEOUT_MAX);
    return HLX_ERR_INVALID;
}

int hlx_comm_rank(const hlx_comm_t *comm)
{
    return comm->rank;
}

int hlx_comm_size(const hlx_comm_t *comm)
{
    return comm->size;
}

/* "self" for a world of one, else the backends in use joined by '+'. */
const char *hlx_comm_backend(const hlx_comm_t *comm)
{
    const hlx_comm_net_t *net = comm->net;

    if (net->be_open[HLX_PATH_SHM] && net->be_open[HLX_PATH_NET])
        return "ucx-shm+ucx-net";
    if (net->be_open[HLX_PATH_NET])
        return hlx_comm_backends[HLX_PATH_NET]->name;
    if (net->be_open[HLX_PATH_SHM])
        return hlx_comm_backends[HLX_PATH_SHM]->name;
    return hlx_comm_ops_self.name;
}

int hlx_comm_device_memory(const hlx_comm_t *comm)
{
    hlx_comm_net_t *net = comm->net;

    if (net->ucx_cuda_mem < 0) /* no UCX context in this world: ask a probe once */
        net->ucx_cuda_mem = hlx_ucx_probe_cuda_memory();
    return net->ucx_cuda_mem;
}

void **hlx_comm_be_priv(hlx_comm_t *comm)
{
    return &comm->be_priv;
}

hlx_comm_net_t *hlx_comm_net(hlx_comm_t *comm)
{
    return comm->net;
}

hlx_link_t hlx_comm_peer_link(const hlx_comm_t *comm, int rank)
{
    int w = hlx_comm_world_rank(comm, rank);

    if (w < 0)
        return HLX_LINK_COUNT;
    return w == comm->net->rank ? HLX_LINK_SELF : comm->net->link[w];
}

const char *hlx_comm_peer_backend(const hlx_comm_t *comm, int rank)
{
    int w = hlx_comm_world_rank(comm, rank);

    if (w < 0)
        return NULL;
    return comm->net->peer_be[w] ? comm->net->peer_be[w]->ops->name : hlx_comm_ops_self.name;
}

int hlx_comm_world_rank(const hlx_comm_t *comm, int rank)
{
    return rank >= 0 && rank < comm->size ? comm->world_ranks[rank] : -1;
}

/* ---- requests ------------------------------------------------------------------- */

void hlx_comm_slot_done(hlx_comm_slot_t *slot, hlx_status_t status, size_t got)
{
    if (slot->done)
        return;
    slot->done = 1;
    slot->status = status;
    slot->got = got;
    slot->handle = NULL;
    slot->req->npending--;
}

static hlx_status_t hlx_comm_req_get(hlx_comm_t *comm, const char *op, int nseq,
                                     hlx_comm_req_t **req_p)
{
    hlx_comm_req_t *req = comm->free_reqs;

    if (comm->failed != HLX_OK) {
        hlx_error("%s on a communicator that already failed (%s)", op,
                  hlx_status_str(comm->failed));
        return comm->failed;
    }
    if (req != NULL) {
        comm->free_reqs = req->next;
    } else {
        /* Only until the pool holds as many requests as are ever in flight at once. */
        req = calloc(1, sizeof(*req));
        if (req == NULL)
            return HLX_ERR_NOMEM;
        req->cap = 2 * comm->size;
        req->slots = calloc((size_t)req->cap, sizeof(*req->slots));
        if (req->slots == NULL) {
            free(req);
            return HLX_ERR_NOMEM;
        }
    }
    req->comm = comm;
    req->op = op;
    req->seq = comm->seq;
    comm->seq = (comm->seq + (uint32_t)nseq) & HLX_TAG_SEQ_MASK;
    req->nslots = 0;
    req->npending = 0;
    req->next = NULL;
    req->t0 = hlx_now_s();
    req->deadline = req->t0 + comm->timeout_s;
    *req_p = req;
    return HLX_OK;
}

/* Room for n slots, before any of them is posted (posted slots must not move: the
 * backend holds pointers to them). Grows only until the largest operation was seen. */
static hlx_status_t hlx_comm_req_reserve(hlx_comm_req_t *req, int n)
{
    hlx_comm_slot_t *slots;

    if (n <= req->cap)
        return HLX_OK;
    slots = realloc(req->slots, (size_t)n * sizeof(*slots));
    if (slots == NULL)
        return HLX_ERR_NOMEM;
    req->slots = slots;
    req->cap = n;
    return HLX_OK;
}

static void hlx_comm_req_put(hlx_comm_req_t *req)
{
    hlx_comm_t *comm = req->comm;

    req->next = comm->free_reqs;
    comm->free_reqs = req;
}

static hlx_comm_slot_t *hlx_comm_slot_new(hlx_comm_req_t *req, int peer, int is_recv,
                                          size_t len)
{
    hlx_comm_slot_t *slot = &req->slots[req->nslots++];

    slot->req = req;
    slot->be = NULL;
    slot->handle = NULL;
    slot->peer = peer;
    slot->is_recv = is_recv;
    slot->done = 0;
    slot->status = HLX_OK;
    slot->len = len;
    slot->got = 0;
    req->npending++;
    return slot;
}

static hlx_status_t hlx_comm_post_recv(hlx_comm_req_t *req, uint32_t seq, int peer,
                                       void *buf, size_t len)
{
    hlx_comm_t *comm = req->comm;
    int wpeer = comm->world_ranks[peer];
    hlx_comm_slot_t *slot = hlx_comm_slot_new(req, peer, 1, len);

    slot->be = comm->net->peer_be[wpeer];
    return slot->be->ops->irecv(slot->be, wpeer, buf, len,
                                hlx_tag_make(comm->id, seq, wpeer), slot);
}

static hlx_status_t hlx_comm_post_send(hlx_comm_req_t *req, uint32_t seq, int peer,
                                       const void *buf, size_t len)
{
    hlx_comm_t *comm = req->comm;
    int wpeer = comm->world_ranks[peer];
    hlx_comm_slot_t *slot = hlx_comm_slot_new(req, peer, 0, len);

    slot->be = comm->net->peer_be[wpeer];
    return slot->be->ops->isend(slot->be, wpeer, buf, len,
                                hlx_tag_make(comm->id, seq, comm->net->rank), slot);
}

/* Lists, in comm ranks with world ranks, the peers whose slots of one kind are pending. */
static void hlx_comm_pending_list(const hlx_comm_req_t *req, int is_recv, char *buf,
                                  size_t size)
{
    size_t off = 0;
    int i, n = 0;

    buf[0] = '\0';
    for (i = 0; i < req->nslots; i++) {
        const hlx_comm_slot_t *s = &req->slots[i];
        if (s->done || s->is_recv != is_recv)
            continue;
        if (off + 24 >= size) {
            snprintf(buf + off, size - off, ",...");
            return;
        }
        if (req->comm->world == NULL)
            off += (size_t)snprintf(buf + off, size - off, "%s%d", n ? "," : "", s->peer);
        else
            off += (size_t)snprintf(buf + off, size - off, "%s%d(world %d)", n ? "," : "",
                                    s->peer, req->comm->world_ranks[s->peer]);
        n++;
    }
}

/* One progress round of every backend in use; non-zero when something happened. */
static int hlx_comm_net_progress(hlx_comm_net_t *net)
{
    int p, n = 0;

    for (p = HLX_PATH_SHM; p < HLX_PATH_COUNT; p++)
        if (net->be_open[p])
            n += net->be[p].ops->progress(&net->be[p]);
    return n;
}

/* Withdraws what can be withdrawn and makes the error sticky. The request is kept
 * alive (zombie) because the backend may still complete its sends into its slots. */
static hlx_status_t hlx_comm_req_fail(hlx_comm_req_t *req, hlx_status_t st)
{
    hlx_comm_t *comm = req->comm;
    hlx_comm_net_t *net = comm->net;
    double until = hlx_now_s() + 0.1;
    int i;

    for (i = 0; i < req->nslots; i++)
        if (!req->slots[i].done && req->slots[i].is_recv && req->slots[i].handle)
            req->slots[i].be->ops->cancel(req->slots[i].be, &req->slots[i]);
    while (req->npending > 0 && hlx_now_s() < until)
        hlx_comm_net_progress(net);
    comm->failed = st;
    if (comm->world)
        comm->world->failed = st;
    if (req->npending > 0) {
        req->next = comm->zombies;
        comm->zombies = req;
    } else {
        hlx_comm_req_put(req);
    }
    return st;
}

/* Text for a peer's lost record. */
static const char *hlx_comm_lost_str(const hlx_comm_net_t *net, int w)
{
    const hlx_comm_be_t *be = net->peer_be[w];

    if (net->peer_lost[w] == HLX_COMM_LOST_SILENT)
        return "no heartbeat";
    return be ? be->ops->strerror(net->peer_lost[w]) : "lost";
}

/* The liveness layer says world rank w went silent: reported once per peer, with its
 * host and pid, then treated like any lost peer. */
static int hlx_comm_peer_silent(hlx_comm_net_t *net, int w)
{
    double silent;

    if (net->live == NULL || net->peer_lost[w])
        return net->peer_lost[w] != 0;
    if (!hlx_liveness_lost(net->live, w, &silent))
        return 0;
    net->peer_lost[w] = HLX_COMM_LOST_SILENT;
    hlx_error("transport: rank %d (host %s, pid %d) silent for %.1f s (heartbeat timeout "
              "%g s, HELIX_HEARTBEAT_TIMEOUT): stopped, hung, dead or cut off", w,
              net->peers[w].host, (int)net->peers[w].pid, silent,
              hlx_liveness_timeout(net->live));
    return 1;
}

/* One progress round; HLX_OK when every slot completed without error. live: also ask
 * the liveness layer about the peers still pending (skipped while an operation is young,
 * which keeps the fast path free of it). */
static hlx_status_t hlx_comm_req_check(hlx_comm_req_t *req, int live)
{
    hlx_comm_t *comm = req->comm;
    hlx_comm_net_t *net = comm->net;
    int i, lost = hlx_boot_lost_rank(net->boot);

    for (i = 0; i < req->nslots; i++) {
        hlx_comm_slot_t *s = &req->slots[i];
        int w = comm->world_ranks[s->peer];
        if (s->done) {
            if (s->status != HLX_OK && s->status != HLX_INPROGRESS) {
                if (net->peer_lost[w] || s->status == HLX_ERR_PEER) {
                    hlx_error("%s (comm %u, seq %u): rank %d (world %d) lost: %s", req->op,
                              comm->id, req->seq, s->peer, w, hlx_comm_lost_str(net, w));
                    return HLX_ERR_PEER;
                }
                hlx_error("%s (comm %u, seq %u): %s %s rank %d (world %d) failed: %s",
                          req->op, comm->id, req->seq, s->is_recv ? "receive" : "send",
                          s->is_recv ? "from" : "to", s->peer, w,
                          hlx_status_str(s->status));
                return s->status;
            }
            if (s->is_recv && s->got != s->len) {
                hlx_error("%s (comm %u, seq %u): rank %d (world %d) sent %zu bytes, "
                          "expected %zu (inconsistent counts)", req->op, comm->id, req->seq,
                          s->peer, w, s->got, s->len);
                return HLX_ERR_MISMATCH;
            }
            continue;
        }
        if (net->peer_lost[w] || (live && hlx_comm_peer_silent(net, w)) || w == lost) {
            hlx_error("%s (comm %u, seq %u): rank %d (world %d) lost (%s) before %s",
                      req->op, comm->id, req->seq, s->peer, w,
                      net->peer_lost[w] ? hlx_comm_lost_str(net, w)
                                        : "reported by the launcher",
                      s->is_recv ? "its data arrived" : "the send to it completed");
            return HLX_ERR_PEER;
        }
    }
    return req->npending == 0 ? HLX_OK : HLX_INPROGRESS;
}

static hlx_status_t hlx_comm_req_progress(hlx_comm_req_t *req, int *idle_p)
{
    hlx_comm_net_t *net = req->comm->net;
    hlx_status_t st;
    char recvs[256], sends[256];
    double now;
    int i;

    /* A few rounds per call: cheap when there is work, bounded when there is none. */
    for (i = 0; i < 4 && req->npending > 0; i++) {
        if (hlx_comm_net_progress(net))
            *idle_p = 0;
        else
            (*idle_p)++;
    }
    /* every slot done: statuses and counts only (no clock read on the fast path) */
    if (req->npending == 0)
        return hlx_comm_req_check(req, 0);
    now = hlx_now_s();
    st = hlx_comm_req_check(req, now - req->t0 > 0.01);
    if (st != HLX_INPROGRESS)
        return st;
    if (now > req->deadline) {
        hlx_comm_pending_list(req, 1, recvs, sizeof(recvs));
        hlx_comm_pending_list(req, 0, sends, sizeof(sends));
        hlx_error("%s (comm %u, seq %u) timed out after %.2f s: no data yet from ranks "
                  "[%s]%s%s%s", req->op, req->comm->id, req->seq, hlx_now_s() - req->t0,
                  recvs, sends[0] ? ", sends not complete to ranks [" : "", sends,
                  sends[0] ? "]" : "");
        return HLX_ERR_TIMEOUT;
    }
    return HLX_INPROGRESS;
}

static hlx_status_t hlx_comm_req_wait(hlx_comm_req_t *req)
{
    hlx_status_t st;
    int idle = 0;

    for (;;) {
        st = hlx_comm_req_progress(req, &idle);
        if (st == HLX_OK) {
            hlx_comm_req_put(req);
            return HLX_OK;
        }
        if (st != HLX_INPROGRESS)
            return hlx_comm_req_fail(req, st);
        /* Let the peer we wait for run: soon when this host has more ranks than cores
         * (Open MPI's yield_when_idle does the same when oversubscribed). */
        if (idle > req->comm->net->idle_rounds) {
            /* more ranks than cores: once the peer is clearly late (it computes on
             * this core), sleep rather than spin; a yield leaves this rank runnable and
             * the scheduler gives it half the core it shares with the one we wait for */
            if (req->comm->net->nap_ns > 0 && hlx_now_s() - req->t0 > 250e-6) {
                struct timespec ts = { 0, req->comm->net->nap_ns };
                nanosleep(&ts, NULL);
            } else {
                sched_yield();
            }
            idle = 0;
        }
    }
}

/* A post failed: report it, then fail the request. */
static hlx_status_t hlx_comm_req_post_fail(hlx_comm_req_t *req, hlx_status_t st)
{
    hlx_error("%s (comm %u, seq %u): posting failed: %s", req->op, req->comm->id, req->seq,
              hlx_status_str(st));
    return hlx_comm_req_fail(req, st);
}

/* ---- creation ------------------------------------------------------------------- */

static hlx_comm_t *hlx_comm_alloc(int size)
{
    hlx_comm_t *comm = calloc(1, sizeof(*comm));

    if (comm == NULL)
        return NULL;
    comm->world_ranks = calloc((size_t)size, sizeof(int));
    comm->order = calloc(2 * (size_t)size, sizeof(int));
    if (comm->world_ranks == NULL || comm->order == NULL) {
        free(comm->world_ranks);
        free(comm->order);
        free(comm);
        return NULL;
    }
    comm->size = size;
    comm->pair_msgs = hlx_comm_pair_msgs(size);
    return comm;
}

static void hlx_comm_free(hlx_comm_t *comm)
{
    hlx_comm_req_t *r, *next;

    for (r = comm->free_reqs; r; r = next) {
        next = r->next;
        free(r->slots);
        free(r);
    }
    for (r = comm->zombies; r; r = next) {
        next = r->next;
        free(r->slots);
        free(r);
    }
    free(comm->scratch);
    free(comm->subkeys);
    free(comm->sub_ids);
    free(comm->world_ranks);
    free(comm->order);
    free(comm);
}

static const char *hlx_comm_link_str(hlx_link_t l)
{
    static const char *const names[HLX_LINK_COUNT] = {
        "self", "shm", "nvlink", "pcie", "rdma", "tcp",
    };
    return (unsigned)l < HLX_LINK_COUNT ? names[l] : "?";
}

/* Every rank learns every rank's host and pid (one bootstrap all-gather). */
static hlx_status_t hlx_comm_exchange_peers(hlx_comm_net_t *net, const hlx_boot_info_t *info)
{
    hlx_comm_peer_info_t me;
    char key[64];

    memset(&me, 0, sizeof(me));
    snprintf(me.host, sizeof(me.host), "%s", info->host ? info->host : "?");
    me.pid = (int32_t)getpid();
    snprintf(key, sizeof(key), "hlx.comm.peers.%d", hlx_boot_calls(net->boot));
    return hlx_boot_allgather(net->boot, key, &me, sizeof(me), net->peers);
}

/* Path of the link from a to b (world ranks), knowing both hosts. The same-host classes
 * share the shared-memory path; NVLink groups on device buffers use NCCL, chosen per
 * communicator by its owner (hlx_comm_choose_backend), not here. */
static int hlx_comm_path_of(const hlx_comm_net_t *net, hlx_link_t l, int a, int b)
{
    int same = !strcmp(net->peers[a].host, net->peers[b].host);

    switch (l) {
    case HLX_LINK_SELF:   return HLX_PATH_SELF;
    case HLX_LINK_SHM:
    case HLX_LINK_PCIE:
    case HLX_LINK_NVLINK: return same ? HLX_PATH_SHM : HLX_PATH_NET;
    default:              return HLX_PATH_NET;
    }
}

/* This rank's row of link classes: the caller's, else same host -> shm, other host -> tcp.
 * Returns the first peer whose given class is not a peer link class (-1: none); the
 * agreement that follows makes every rank refuse it. */
static int hlx_comm_links_row(hlx_comm_net_t *net, const hlx_comm_params_t *p)
{
    int r, me = net->rank, nvlink = 0, bad = -1;

    for (r = 0; r < net->size; r++) {
        int same = !strcmp(net->peers[me].host, net->peers[r].host);
        if (r == me)
            net->link[r] = HLX_LINK_SELF;
        else if (p->links != NULL)
            net->link[r] = p->links[r];
        else
            net->link[r] = same ? HLX_LINK_SHM : HLX_LINK_TCP;
        if (r != me && ((unsigned)net->link[r] >= HLX_LINK_COUNT ||
                        net->link[r] == HLX_LINK_SELF)) {
            if (bad < 0)
                bad = r;
            continue;
        }
        if (r != me && !same && (net->link[r] == HLX_LINK_SHM || net->link[r] == HLX_LINK_PCIE))
            hlx_warn("communicator: link class %s to rank %d, but it runs on host %s and "
                     "this rank on %s: using the network path", hlx_comm_link_str(net->link[r]),
                     r, net->peers[r].host, net->peers[me].host);
        if (net->link[r] == HLX_LINK_NVLINK)
            nvlink++;
    }
    if (nvlink)
        hlx_info(HLX_SUB_NET, "%d peer(s) of link class nvlink: this world's point-to-point "
                 "path to them is the same-host one (the network path across hosts); a group "
                 "on device buffers chooses NCCL itself (hlx_comm_choose_backend)", nvlink);
    return bad;
}

/* One entry (a sees b as class l) of the link matrix, hashed for the symmetry check:
 * (a, b, l) packed one-to-one (ranks below 2^16), then murmur3's finalizer, a nonlinear
 * bijection. FNV-1a would not do: over entries that differ in a few low bits it is nearly
 * additive, and the sums of a swapped pair cancelled. */
static uint64_t hlx_comm_link_hash(int a, int b, int l)
{
    uint64_t x = (uint64_t)(uint16_t)a << 40 ^ (uint64_t)(uint16_t)b << 16 ^ (uint32_t)l;

    x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdull;
    x = (x ^ (x >> 33)) * 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* What each rank contributes to the agreement on the link classes. */
typedef struct hlx_comm_links_rec {
    int32_t  paths;     /* HLX_PATH_* bits this rank needs */
    int32_t  given;     /* 1: the caller gave the row; 0: derived from host names */
    int32_t  bad_peer;  /* first peer with a class that is not a peer class, or -1 */
    int32_t  bad_class;
    uint64_t row, col;  /* sums of hlx_comm_link_hash over the row as (me, r) and as (r, me) */
    uint64_t chunk[3];  /* the message limits in force: same host, network, tcp peers */
} hlx_comm_links_rec_t;

/* Rows larger than this are not gathered whole to name a disagreeing pair (n^2 bytes). */
#define HLX_COMM_LINKS_NAME_MAX 4096

/* The rows disagree somewhere: every rank gathers every row and names the same first pair. */
static hlx_status_t hlx_comm_links_name_pair(hlx_comm_net_t *net,
                                             const hlx_comm_links_rec_t *all)
{
    const size_t n = (size_t)net->size;
    uint8_t *rows, *mine;
    char key[64];
    hlx_status_t st;
    size_t a, b;

    if (n > HLX_COMM_LINKS_NAME_MAX) {
        hlx_error("communicator: the ranks' link classes disagree for some pair (each rank "
                  "must see a peer as that peer sees it; with %zu ranks the pair is not "
                  "named)", n);
        return HLX_ERR_MISMATCH;
    }
    rows = calloc(n + 1, n);
    if (rows == NULL)
        return HLX_ERR_NOMEM;
    mine = rows + n * n;
    for (b = 0; b < n; b++)
        mine[b] = (uint8_t)net->link[b];
    snprintf(key, sizeof(key), "hlx.comm.links.%d", hlx_boot_calls(net->boot));
    st = hlx_boot_allgather(net->boot, key, mine, n, rows);
    for (a = 0; st == HLX_OK && a < n; a++)
        for (b = a + 1; b < n; b++) {
            if (rows[a * n + b] == rows[b * n + a])
                continue;
            hlx_error("communicator: rank %zu sees rank %zu as %s%s, rank %zu sees rank %zu as "
                      "%s%s: the link classes given to the ranks must agree for every pair",
                      a, b, hlx_comm_link_str(rows[a * n + b]),
                      all[a].given ? "" : " (from host names)", b, a,
                      hlx_comm_link_str(rows[b * n + a]),
                      all[b].given ? "" : " (from host names)");
            free(rows);
            return HLX_ERR_MISMATCH;
        }
    free(rows);
    if (st == HLX_OK) { /* the sums differed without a pair: cannot be, but refuse */
        hlx_error("communicator: the link classes' checksums disagree but the rows do not");
        st = HLX_ERR_INTERNAL;
    }
    return st;
}

/* The message limits: both ends of a pair split a block alike from its byte count, so every
 * rank must use the same ones. A command that compares its settings at start-up (decode,
 * generate) refused a difference already; the others (comm_check, the benchmarks) and
 * HELIX_COMM_CHUNK_TCP=auto, which follows each rank's own UCX_TCP_*_SEG_SIZE, are caught
 * here. */
static hlx_status_t hlx_comm_chunks_agree(const hlx_comm_links_rec_t *all, int n)
{
    static const char *const what[3] = { "same-host peers (HELIX_COMM_CHUNK_SHM)",
                                         "peers on other hosts (HELIX_COMM_CHUNK_NET)",
                                         "tcp-class peers (HELIX_COMM_CHUNK_TCP, auto from "
                                         "UCX_TCP_TX_SEG_SIZE / HELIX_COMM_TCP_SEG)" };
    int r, k;

    for (r = 1; r < n; r++)
        for (k = 0; k < 3; k++)
            if (all[r].chunk[k] != all[0].chunk[k]) {
                hlx_error("communicator: rank %d sends all-to-all blocks to %s in messages of "
                          "at most %llu bytes, rank 0 in %llu: the limits must be equal on "
                          "every rank (0: whole blocks)", r, what[k],
                          (unsigned long long)all[r].chunk[k],
                          (unsigned long long)all[0].chunk[k]);
                return HLX_ERR_MISMATCH;
            }
    return HLX_OK;
}

/* One bootstrap all-gather: the paths every rank needs (every rank then opens the same
 * backends), any class that is not a peer class, whether the rows are symmetric (a matrix
 * M equals its transpose exactly when the sum of h(a, b, M[a][b]) over all entries equals
 * that of h(b, a, M[a][b]), but for a 2^-64 chance) and the message limits. Every rank gets
 * the same records, so a disagreement fails every rank, with the same message. */
static hlx_status_t hlx_comm_links_agree(hlx_comm_net_t *net, int given, int bad, int *paths_p)
{
    hlx_comm_links_rec_t mine, *all;
    uint64_t row = 0, col = 0;
    hlx_status_t st;
    char key[64];
    int r, me = net->rank, paths = 0;

    memset(&mine, 0, sizeof(mine));
    mine.given = given;
    mine.bad_peer = bad;
    mine.bad_class = bad >= 0 ? (int32_t)net->link[bad] : 0;
    mine.chunk[0] = net->chunk[HLX_PATH_SHM];
    mine.chunk[1] = net->chunk[HLX_PATH_NET];
    mine.chunk[2] = hlx_comm_chunk_tcp_peer(net->chunk[HLX_PATH_NET], net->chunk_tcp);
    for (r = 0; r < net->size; r++) {
        if (r == me)
            continue;
        mine.row += hlx_comm_link_hash(me, r, net->link[r]);
        mine.col += hlx_comm_link_hash(r, me, net->link[r]);
        if (net->peer_be[r] != NULL)
            mine.paths |= 1 << net->peer_be[r]->path;
    }
    all = calloc((size_t)net->size, sizeof(*all));
    if (all == NULL)
        return HLX_ERR_NOMEM;
    snprintf(key, sizeof(key), "hlx.comm.links.%d", hlx_boot_calls(net->boot));
    st = hlx_boot_allgather(net->boot, key, &mine, sizeof(mine), all);
    for (r = 0; st == HLX_OK && r < net->size; r++) {
        if (all[r].bad_peer >= 0) {
            hlx_error("communicator: rank %d gives link class %d for rank %d, which is not a "
                      "peer link class (shm, nvlink, pcie, rdma, tcp)", r,
                      (int)all[r].bad_class, (int)all[r].bad_peer);
            st = HLX_ERR_INVALID;
            break;
        }
        paths |= all[r].paths;
        row += all[r].row;
        col += all[r].col;
    }
    if (st == HLX_OK && row != col)
        st = hlx_comm_links_name_pair(net, all);
    if (st == HLX_OK)
        st = hlx_comm_chunks_agree(all, net->size);
    free(all);
    if (st == HLX_OK)
        *paths_p = paths;
    return st;
}

/* Backend and all-to-all message limit of every peer, from its link class. */
static void hlx_comm_links_backends(hlx_comm_net_t *net)
{
    int r, me = net->rank;

    for (r = 0; r < net->size; r++) {
        int path = hlx_comm_path_of(net, net->link[r], me, r);
        net->peer_be[r] = path == HLX_PATH_SELF ? NULL : &net->be[path];
        /* the path's limit, or the tcp one for a peer of link class tcp (the class is the
         * pair's, the same seen from either side: hlx_comm_links_agree) */
        net->peer_chunk[r] = path == HLX_PATH_SELF ? 0 : net->chunk[path];
        if (path == HLX_PATH_NET && net->link[r] == HLX_LINK_TCP)
            net->peer_chunk[r] = hlx_comm_chunk_tcp_peer(net->chunk[path], net->chunk_tcp);
    }
}

/* Link class, backend and message limit of every peer, once; the paths needed anywhere in
 * the job, so that every rank opens the same backends. */
static hlx_status_t hlx_comm_assign_links(hlx_comm_net_t *net, const hlx_comm_params_t *p,
                                          int *paths_p)
{
    int bad = hlx_comm_links_row(net, p);

    hlx_comm_links_backends(net);
    return hlx_comm_links_agree(net, p->links != NULL, bad, paths_p);
}

hlx_status_t hlx_comm_world(hlx_boot_t *boot, const hlx_comm_params_t *p,
                            hlx_comm_t **world_p)
{
    hlx_comm_params_t defaults;
    hlx_comm_settings_t set;
    hlx_boot_info_t info;
    hlx_comm_net_t *net;
    hlx_comm_t *comm;
    hlx_status_t st;
    int r, path, paths = 0;

    if (p == NULL) {
        hlx_comm_params_default(&defaults);
        p = &defaults;
    }
    st = hlx_comm_timeout_check("communicator deadline (timeout_s, HELIX_COMM_TIMEOUT)",
                                p->timeout_s);
    if (st != HLX_OK)
        return st;
    st = hlx_comm_settings(&set);
    if (st != HLX_OK)
        return st;
    hlx_boot_get_info(boot, &info);
    if (info.size > HLX_COMM_MAX_RANKS) {
        hlx_error("communicator: %d ranks, at most %d", info.size, HLX_COMM_MAX_RANKS);
        return HLX_ERR_UNSUPPORTED;
    }
    if (p->backend[0] != '\0' && strcmp(p->backend, "auto") && strcmp(p->backend, "ucx") &&
        strcmp(p->backend, "self")) {
        hlx_error("communicator: unknown backend \"%s\" (auto, self, ucx)", p->backend);
        return HLX_ERR_INVALID;
    }
    if (!strcmp(p->backend, "self") && info.size > 1) {
        hlx_error("communicator: backend self needs a world of one, this job has %d "
                  "ranks", info.size);
        return HLX_ERR_INVALID;
    }

    net = calloc(1, sizeof(*net));
    comm = hlx_comm_alloc(info.size);
    if (net == NULL || comm == NULL) {
        st = HLX_ERR_NOMEM;
        goto err_free;
    }
    net->peer_lost = calloc((size_t)info.size, sizeof(int));
    net->link = calloc((size_t)info.size, sizeof(*net->link));
    net->peer_be = calloc((size_t)info.size, sizeof(*net->peer_be));
    net->peer_chunk = calloc((size_t)info.size, sizeof(*net->peer_chunk));
    net->peers = calloc((size_t)info.size, sizeof(*net->peers));
    if (!net->peer_lost || !net->link || !net->peer_be || !net->peer_chunk || !net->peers) {
        st = HLX_ERR_NOMEM;
        goto err_free;
    }
    net->boot = boot;
    net->rank = info.rank;
    net->size = info.size;
    net->timeout_s = p->timeout_s;
    net->ucx_err_peer = !strcmp(set.ucx_err_mode, "peer");
    snprintf(net->shm_tls, sizeof(net->shm_tls), "%s", set.shm_tls);
    net->chunk[HLX_PATH_SHM] = (size_t)set.chunk_shm;
    net->chunk[HLX_PATH_NET] = (size_t)set.chunk_net;
    if (set.chunk_tcp == HLX_COMM_CHUNK_TCP_AUTO) { /* the rules read the same variables */
        hlx_ucx_tcp_seg_t seg;
        char why[256];
        if (hlx_ucx_tcp_seg_env(&seg, why, sizeof(why)) != HLX_OK) {
            hlx_error("transport: %s", why);
            st = HLX_ERR_INVALID;
            goto err_free;
        }
        net->chunk_tcp = hlx_comm_chunk_tcp_auto(hlx_comm_tcp_tx_seg(set.tcp_seg, &seg));
        net->chunk_auto = 1;
    } else {
        net->chunk_tcp = (size_t)set.chunk_tcp;
    }
    net->tcp_seg = set.tcp_seg;
    net->shm_rndv = set.shm_rndv;
    net->ucx_cuda_mem = -1;
    for (path = 0; path < HLX_PATH_COUNT; path++) {
        net->be[path].ops = hlx_comm_backends[path];
        net->be[path].net = net;
        net->be[path].path = path;
    }
    net->link[info.rank] = HLX_LINK_SELF;
    snprintf(net->peers[info.rank].host, sizeof(net->peers[0].host), "%s",
             info.host ? info.host : "?");
    net->peers[info.rank].pid = (int32_t)getpid();

    if (info.size > 1) {
        st = hlx_comm_exchange_peers(net, &info);
        if (st == HLX_OK)
            st = hlx_comm_assign_links(net, p, &paths);
        if (st != HLX_OK)
            goto err_free;
    }
    for (path = HLX_PATH_SHM; path < HLX_PATH_COUNT; path++) {
        if (!(paths & (1 << path)))
            continue;
        st = net->be[path].ops->open(&net->be[path], boot);
        if (st != HLX_OK)
            goto err_close;
        net->be_open[path] = 1;
    }
    if (info.size > 1) {
        st = hlx_liveness_start(net, set.hb_interval, set.hb_timeout, &net->live);
        if (st != HLX_OK)
            goto err_close;
    }

    comm->net = net;
    comm->coll = &hlx_comm_ops_self;
    comm->id = 1;
    comm->rank = info.rank;
    comm->timeout_s = p->timeout_s;
    comm->allreduce_small = (size_t)set.allreduce_small;
    for (r = 0; r < info.size; r++)
        comm->world_ranks[r] = r;
    if (paths == (1 << HLX_PATH_SHM) || paths == (1 << HLX_PATH_NET))
        comm->coll = hlx_comm_backends[paths == (1 << HLX_PATH_SHM) ? HLX_PATH_SHM
                                                                     : HLX_PATH_NET];

    /* Connects every endpoint now, so a rank that cannot reach another fails here with
     * the peer's name rather than in the first decode step. */
    st = hlx_comm_barrier(comm);
    if (st != HLX_OK) {
        hlx_error("communicator: world creation failed (backend %s)", hlx_comm_backend(comm));
        goto err_close;
    }
    {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        int local = 0;
        for (r = 0; r < info.size; r++)
            local += !strcmp(net->peers[r].host, net->peers[info.rank].host);
        net->idle_rounds = cpus > 0 && local > cpus ? 0 : 64;
        net->nap_ns = cpus > 0 && local > cpus ? (long)set.nap_us * 1000L : 0;
    }
    hlx_debug(HLX_SUB_NET, "world communicator: %d ranks over %s, timeout %g s",
              info.size, hlx_comm_backend(comm), p->timeout_s);
    *world_p = comm;
    return HLX_OK;

err_close:
    if (net->live)
        hlx_liveness_stop(net->live);
    for (path = HLX_PATH_COUNT - 1; path > HLX_PATH_SELF; path--)
        if (net->be_open[path])
            net->be[path].ops->close(&net->be[path], 0);
err_free:
    if (net) {
        free(net->peer_lost);
        free(net->link);
        free(net->peer_be);
        free(net->peer_chunk);
        free(net->peers);
    }
    free(net);
    if (comm)
        hlx_comm_free(comm);
    return st;
}

/* Collectives of a group: its backend's when every peer in it uses that one backend. */
static const hlx_comm_ops_t *hlx_comm_sub_coll(const hlx_comm_net_t *net, const int *ranks,
                                               int n)
{
    const hlx_comm_be_t *be = NULL;
    int i;

    for (i = 0; i < n; i++) {
        const hlx_comm_be_t *b = net->peer_be[ranks[i]];
        if (b == NULL)
            continue;
        if (be != NULL && b != be)
            return &hlx_comm_ops_self; /* mixed: the point-to-point versions */
        be = b;
    }
    return be ? be->ops : &hlx_comm_ops_self;
}

hlx_status_t hlx_comm_p2p_sub_create(hlx_comm_t *sub)
{
    (void)sub;
    return HLX_OK;
}

void hlx_comm_p2p_sub_destroy(hlx_comm_t *sub)
{
    (void)sub;
}

static uint64_t hlx_comm_hash_ranks(const int *ranks, int n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    int i, b;

    for (i = 0; i < n; i++)
        for (b = 0; b < 4; b++) {
            h ^= (uint64_t)(((unsigned)ranks[i] >> (8 * b)) & 0xff);
            h *= 1099511628211ull;
        }
    return h;
}

hlx_status_t hlx_comm_sub(hlx_comm_t *world, const int *ranks, int n, hlx_comm_t **sub_p)
{
    hlx_comm_subkey_t *keys;
    hlx_comm_t *sub;
    uint64_t h;
    int i, j, me = -1, occurrence = 0;

    if (world->world != NULL) {
        hlx_error("hlx_comm_sub: the parent must be the world communicator");
        return HLX_ERR_INVALID;
    }
    if (ranks == NULL || n <= 0 || n > world->size) {
        hlx_error("hlx_comm_sub: %d ranks for a world of %d", n, world->size);
        return HLX_ERR_INVALID;
    }
    for (i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= world->size) {
            hlx_error("hlx_comm_sub: rank %d outside the world of %d", ranks[i],
                      world->size);
            return HLX_ERR_INVALID;
        }
        for (j = 0; j < i; j++)
            if (ranks[j] == ranks[i]) {
                hlx_error("hlx_comm_sub: rank %d listed twice", ranks[i]);
                return HLX_ERR_INVALID;
            }
        if (ranks[i] == world->rank)
            me = i;
    }
    if (me < 0) {
        hlx_error("hlx_comm_sub: world rank %d is not in the list", world->rank);
        return HLX_ERR_INVALID;
    }

    h = hlx_comm_hash_ranks(ranks, n);
    for (i = 0; i < world->nsubkeys; i++)
        if (world->subkeys[i].hash == h)
            break;
    if (i == world->nsubkeys) {
        keys = realloc(world->subkeys, (size_t)(i + 1) * sizeof(*keys));
        if (keys == NULL)
            return HLX_ERR_NOMEM;
        world->subkeys = keys;
        keys[i].hash = h;
        keys[i].count = 0;
        world->nsubkeys++;
    }
    occurrence = world->subkeys[i].count++;

    sub = hlx_comm_alloc(n);
    if (sub == NULL)
        return HLX_ERR_NOMEM;
    memcpy(sub->world_ranks, ranks, (size_t)n * sizeof(int));
    sub->net = world->net;
    sub->coll = hlx_comm_sub_coll(world->net, ranks, n);
    sub->world = world;
    sub->rank = me;
    sub->timeout_s = world->timeout_s;
    sub->allreduce_small = world->allreduce_small;
    /* Same list, same creation count -> same id on every member; id 0 and 1 (world)
     * are never used for sub-groups. */
    h ^= (uint64_t)occurrence * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    sub->id = 2 + (uint32_t)(h % (HLX_TAG_ID_MASK - 1));
    /* Two groups with the same id and common members would match each other's messages.
     * The ids are hashes (no communication), so a collision is possible in principle:
     * every common member sees it here and refuses, instead of mixing data. */
    for (i = 0; i < world->nsub_ids; i++)
        if (world->sub_ids[i] == sub->id) {
            hlx_error("hlx_comm_sub: id %u of this %d-rank group is already used by another "
                      "group this rank belongs to; create the groups in another order",
                      sub->id, n);
            hlx_comm_free(sub);
            return HLX_ERR_INTERNAL;
        }
    {
        uint32_t *ids = realloc(world->sub_ids, (size_t)(world->nsub_ids + 1) * sizeof(*ids));
        if (ids == NULL) {
            hlx_comm_free(sub);
            return HLX_ERR_NOMEM;
        }
        world->sub_ids = ids;
        ids[world->nsub_ids++] = sub->id;
    }
    {
        hlx_status_t st = sub->coll->sub_create(sub);
        if (st != HLX_OK) {
            world->nsub_ids--;
            hlx_comm_free(sub);
            return st;
        }
    }
    world->nsubs_alive++;
    *sub_p = sub;
    return HLX_OK;
}

void hlx_comm_destroy(hlx_comm_t *comm)
{
    hlx_comm_net_t *net;
    int graceful, p;

    if (comm == NULL)
        return;
    net = comm->net;
    if (comm->world != NULL) {
        /* Failed requests may still be completed by the backend: the world keeps them
         * until its endpoints are closed. */
        while (comm->zombies) {
            hlx_comm_req_t *z = comm->zombies;
            comm->zombies = z->next;
            z->next = comm->world->zombies;
            comm->world->zombies = z;
        }
        comm->world->nsubs_alive--;
        comm->coll->sub_destroy(comm);
        hlx_comm_free(comm);
        return;
    }
    if (comm->nsubs_alive > 0)
        hlx_warn("communicator: world destroyed before %d sub-groups", comm->nsubs_alive);
    /* A last barrier tells every rank that all data of the final operations arrived
     * everywhere, so closing endpoints cannot drop anything still in flight. */
    graceful = comm->failed == HLX_OK && comm->size > 1 &&
               hlx_comm_barrier(comm) == HLX_OK;
    /* Everyone stops sending heartbeats, then a second barrier: after it none is sent,
     * so the ones in flight are drained before the heartbeat worker goes. */
    if (graceful && net->live) {
        hlx_liveness_quiet(net->live);
        graceful = hlx_comm_barrier(comm) == HLX_OK;
    }
    net->closing = 1;
    if (net->live)
        hlx_liveness_stop(net->live);
    for (p = HLX_PATH_COUNT - 1; p > HLX_PATH_SELF; p--)
        if (net->be_open[p])
            net->be[p].ops->close(&net->be[p], graceful);
    hlx_comm_free(comm);
    free(net->peer_lost);
    free(net->link);
    free(net->peer_be);
    free(net->peer_chunk);
    free(net->peers);
    free(net);
}

/* ---- collectives ---------------------------------------------------------------- */

/* Rank of a link class in the posting order of an all-to-all: slowest first. */
static int hlx_comm_link_slowness(hlx_link_t l)
{
    switch (l) {
    case HLX_LINK_TCP:    return 0;
    case HLX_LINK_RDMA:   return 1;
    case HLX_LINK_PCIE:   return 2;
    case HLX_LINK_SHM:    return 3;
    case HLX_LINK_NVLINK: return 4;
    default:              return 5;
    }
}

/* Peers in posting order: the rotation (me+i) % n, stably regrouped slowest link class
 * first, so that the long transfers start before the short ones and the fast peers' data
 * lands while the slow links still carry theirs. dir: +1 for sends, -1 for receives. */
static void hlx_comm_peer_order(const hlx_comm_t *comm, int dir, int *order)
{
    int i, cls, k = 0, me = comm->rank, n = comm->size;

    for (cls = 0; cls <= 5; cls++)
        for (i = 1; i < n; i++) {
            int peer = ((me + dir * i) % n + n) % n;
            if (hlx_comm_link_slowness(comm->net->link[comm->world_ranks[peer]]) == cls)
                order[k++] = peer;
        }
}

/* The receive and send orders, computed once per communicator (the links never change):
 * recomputing them per operation cost a division per peer and class on every post. */
static const int *hlx_comm_orders(hlx_comm_t *comm)
{
    if (!comm->order_ready) {
        hlx_comm_peer_order(comm, -1, comm->order);
        hlx_comm_peer_order(comm, 1, comm->order + comm->size);
        comm->order_ready = 1;
    }
    return comm->order;
}

/* Message size of a block of len bytes to or from a rank of comm: the peer's limit (0:
 * none; chosen per peer at world creation, hlx_comm_assign_links), raised for a block that
 * would need more than the pair's share of the operation's messages (hlx_comm_msg_size). */
static size_t hlx_comm_msg(const hlx_comm_t *comm, int peer, size_t len)
{
    return hlx_comm_msg_size(len, comm->net->peer_chunk[comm->world_ranks[peer]],
                             comm->pair_msgs);
}

hlx_status_t hlx_comm_p2p_ialltoallv(hlx_comm_t *comm, const void *sbuf,
                                     const size_t *scounts, const size_t *sdispls,
                                     void *rbuf, const size_t *rcounts,
                                     const size_t *rdispls, hlx_comm_req_t **req_p)
{
    hlx_comm_req_t *req;
    hlx_status_t st;
    size_t nslots;
    const int *order;
    int i, me = comm->rank, n = comm->size;

    st = hlx_comm_req_get(comm, "alltoallv", 1, &req);
    if (st != HLX_OK)
        return st;
    if (scounts[me] != rcounts[me]) {
        hlx_error("alltoallv: self block %zu bytes sent but %zu expected", scounts[me],
                  rcounts[me]);
        hlx_comm_req_put(req);
        return HLX_ERR_INVALID;
    }
    /* Receives first so that eager data lands in place; every pair exchanges a message
     * even when empty, which both checks the counts and proves the peer reached here. */
    /* Blocks over a link with a chunk size go as several messages of one tag, which
     * UCX matches in order. Both ends split a block alike from its byte count, and each
     * pair keeps within its share of HLX_COMM_A2A_SLOTS, so no rank runs out of slots
     * alone (leaving its peers to wait for the deadline). */
    for (i = 0, nslots = 0; i < n; i++)
        if (i != me)
            nslots += hlx_comm_nmsgs(rcounts[i], hlx_comm_msg(comm, i, rcounts[i])) +
                      hlx_comm_nmsgs(scounts[i], hlx_comm_msg(comm, i, scounts[i]));
    st = hlx_comm_req_reserve(req, (int)nslots);
    if (st != HLX_OK) {
        hlx_comm_req_put(req);
        return st;
    }
    order = hlx_comm_orders(comm);
    for (i = 0; i < n - 1; i++) {
        int peer = order[i];
        size_t off = 0, len = rcounts[peer], chunk = hlx_comm_msg(comm, peer, len);
        do {
            size_t part = chunk && len - off > chunk ? chunk : len - off;
            st = hlx_comm_post_recv(req, req->seq, peer, (char *)rbuf + rdispls[peer] + off,
                                    part);
            if (st != HLX_OK)
                return hlx_comm_req_post_fail(req, st);
            off += part;
        } while (off < len);
    }
    for (i = 0; i < n - 1; i++) {
        int peer = order[n + i];
        size_t off = 0, len = scounts[peer], chunk = hlx_comm_msg(comm, peer, len);
        do {
            size_t part = chunk && len - off > chunk ? chunk : len - off;
            st = hlx_comm_post_send(req, req->seq, peer,
                                    (const char *)sbuf + sdispls[peer] + off, part);
            if (st != HLX_OK)
                return hlx_comm_req_post_fail(req, st);
            off += part;
        } while (off < len);
    }
    if (scounts[me] > 0)
        memmove((char *)rbuf + rdispls[me], (const char *)sbuf + sdispls[me], scounts[me]);
    *req_p = req;
    return HLX_OK;
}

hlx_status_t hlx_comm_ialltoallv(hlx_comm_t *comm, const void *sbuf, const size_t *scounts,
                                 const size_t *sdispls, void *rbuf, const size_t *rcounts,
                                 const size_t *rdispls, hlx_comm_req_t **req_p)
{
    return comm->coll->ialltoallv(comm, sbuf, scounts, sdispls, rbuf, rcounts, rdispls,
                                  req_p);
}

int hlx_comm_arrived(hlx_comm_req_t *req, int rank)
{
    int i;

    /* progress only: errors and the deadline are reported by hlx_comm_test / wait */
    hlx_comm_net_progress(req->comm->net);
    for (i = 0; i < req->nslots; i++) {
        const hlx_comm_slot_t *s = &req->slots[i];
        if (s->is_recv && s->peer == rank && !(s->done && s->status == HLX_OK &&
                                                 s->got == s->len))
            return 0; /* one of its messages (chunks) is missing */
    }
    return rank >= 0 && rank < req->comm->size;
}

hlx_status_t hlx_comm_test(hlx_comm_req_t *req)
{
    hlx_status_t st;
    int idle = 0;

    st = hlx_comm_req_progress(req, &idle);
    if (st == HLX_OK) {
        hlx_comm_req_put(req);
        return HLX_OK;
    }
    if (st == HLX_INPROGRESS)
        return st;
    return hlx_comm_req_fail(req, st);
}

hlx_status_t hlx_comm_wait(hlx_comm_req_t *req)
{
    return hlx_comm_req_wait(req);
}

hlx_status_t hlx_comm_alltoallv(hlx_comm_t *comm, const void *sbuf, const size_t *scounts,
                                const size_t *sdispls, void *rbuf, const size_t *rcounts,
                                const size_t *rdispls)
{
    hlx_comm_req_t *req;
    hlx_status_t st;

    st = hlx_comm_ialltoallv(comm, sbuf, scounts, sdispls, rbuf, rcounts, rdispls, &req);
    if (st != HLX_OK)
        return st;
    return hlx_comm_req_wait(req);
}

/* Every rank sends the same block to every other one: direct exchange, n-1 messages
 * each way, lowest latency at the group sizes Helix uses. */
static hlx_status_t hlx_comm_allgather_op(hlx_comm_t *comm, const char *op, const void *in,
                                          size_t bytes, void *out)
{
    hlx_comm_req_t *req;
    hlx_status_t st;
    int i, me = comm->rank, n = comm->size;

    st = hlx_comm_req_get(comm, op, 1, &req);
    if (st != HLX_OK)
        return st;
    for (i = 1; i < n; i++) {
        int peer = (me - i + n) % n;
        st = hlx_comm_post_recv(req, req->seq, peer, (char *)out + (size_t)peer * bytes,
                                bytes);
        if (st != HLX_OK)
            return hlx_comm_req_post_fail(req, st);
    }
    for (i = 1; i < n; i++) {
        st = hlx_comm_post_send(req, req->seq, (me + i) % n, in, bytes);
        if (st != HLX_OK)
            return hlx_comm_req_post_fail(req, st);
    }
    if (bytes > 0 && out != NULL && (const char *)out + (size_t)me * bytes != in)
        memmove((char *)out + (size_t)me * bytes, in, bytes);
    return hlx_comm_req_wait(req);
}

hlx_status_t hlx_comm_p2p_allgather(hlx_comm_t *comm, const void *in, size_t bytes,
                                    void *out)
{
    return hlx_comm_allgather_op(comm, "allgather", in, bytes, out);
}

hlx_status_t hlx_comm_allgather(hlx_comm_t *comm, const void *in, size_t bytes, void *out)
{
    return comm->coll->allgather(comm, in, bytes, out);
}

hlx_status_t hlx_comm_barrier(hlx_comm_t *comm)
{
    return hlx_comm_allgather_op(comm, "barrier", NULL, 0, NULL);
}

hlx_status_t hlx_comm_barrier_within(hlx_comm_t *comm, double timeout_s)
{
    double saved = comm->timeout_s;
    hlx_status_t st;

    if (timeout_s > 0) { /* 0 or less: the communicator's own deadline */
        st = hlx_comm_timeout_check("barrier deadline", timeout_s);
        if (st != HLX_OK)
            return st;
        comm->timeout_s = timeout_s;
    }
    st = hlx_comm_allgather_op(comm, "barrier", NULL, 0, NULL);
    comm->timeout_s = saved;
    return st;
}

static hlx_status_t hlx_comm_scratch(hlx_comm_t *comm, size_t floats)
{
    float *p;

    if (floats <= comm->scratch_cap)
        return HLX_OK;
    p = realloc(comm->scratch, floats * sizeof(float));
    if (p == NULL) {
        hlx_error("allreduce: no memory for %zu bytes of scratch", floats * sizeof(float));
        return HLX_ERR_NOMEM;
    }
    comm->scratch = p;
    comm->scratch_cap = floats;
    return HLX_OK;
}

/* dst = parts[0] + parts[1] + ... + parts[n-1], added in that order for every element,
 * which makes the result independent of who computes it. */
static void hlx_comm_sum_rank_order(float *dst, const float *parts, size_t stride, int n,
                                    size_t count)
{
    size_t i;
    int j;

    memcpy(dst, parts, count * sizeof(float));
    for (j = 1; j < n; j++) {
        const float *p = parts + (size_t)j * stride;
        for (i = 0; i < count; i++)
            dst[i] += p[i];
    }
}

static size_t hlx_comm_chunk_off(size_t count, int n, int j)
{
    size_t base = count / (size_t)n, rem = count % (size_t)n;
    return (size_t)j * base + ((size_t)j < rem ? (size_t)j : rem);
}

hlx_status_t hlx_comm_allreduce_sum_f32(hlx_comm_t *comm, float *buf, size_t count)
{
    return comm->coll->allreduce_sum_f32(comm, buf, count);
}

hlx_status_t hlx_comm_p2p_allreduce_sum_f32(hlx_comm_t *comm, float *buf, size_t count)
{
    hlx_comm_req_t *req;
    hlx_status_t st;
    int i, me = comm->rank, n = comm->size;
    size_t my_off, my_len, chunk_cap;

    uint32_t seq0;

    if (comm->failed != HLX_OK)
        return comm->failed;
    if (n == 1 || count == 0)
        return HLX_OK; /* nothing to exchange; every rank knows it */

    if (count * sizeof(float) <= comm->allreduce_small || count < (size_t)n) {
        /* Gather every contribution, then every rank sums them in rank order. */
        st = hlx_comm_scratch(comm, (size_t)n * count);
        if (st != HLX_OK)
            return st;
        st = hlx_comm_allgather_op(comm, "allreduce", buf, count * sizeof(float),
                                   comm->scratch);
        if (st != HLX_OK)
            return st;
        hlx_comm_sum_rank_order(buf, comm->scratch, count, n, count);
        return HLX_OK;
    }

    /* Reduce-scatter: rank j owns elements [off_j, off_j + len_j) and sums the n
     * contributions to them in rank order; then all-gather the owned sums. */
    chunk_cap = count / (size_t)n + 1;
    st = hlx_comm_scratch(comm, (size_t)n * chunk_cap);
    if (st != HLX_OK)
        return st;
    my_off = hlx_comm_chunk_off(count, n, me);
    my_len = hlx_comm_chunk_off(count, n, me + 1) - my_off;

    st = hlx_comm_req_get(comm, "allreduce", 2, &req);
    if (st != HLX_OK)
        return st;
    seq0 = req->seq;
    for (i = 1; i < n; i++) {
        int peer = (me - i + n) % n;
        st = hlx_comm_post_recv(req, req->seq, peer, comm->scratch + (size_t)peer * chunk_cap,
                                my_len * sizeof(float));
        if (st != HLX_OK)
            return hlx_comm_req_post_fail(req, st);
    }
    for (i = 1; i < n; i++) {
        int peer = (me + i) % n;
        size_t off = hlx_comm_chunk_off(count, n, peer);
        size_t len = hlx_comm_chunk_off(count, n, peer + 1) - off;
        st = hlx_comm_post_send(req, req->seq, peer, buf + off, len * sizeof(float));
        if (st != HLX_OK)
            return hlx_comm_req_post_fail(req, st);
    }
    memcpy(comm->scratch + (size_t)me * chunk_cap, buf + my_off, my_len * sizeof(float));
    st = hlx_comm_req_wait(req);
    if (st != HLX_OK)
        return st;
    /* The sends of buf have completed, so the owned chunk may be overwritten. */
    hlx_comm_sum_rank_order(buf + my_off, comm->scratch, chunk_cap, n, my_len);

    st = hlx_comm_req_get(comm, "allreduce", 0, &req);
    if (st != HLX_OK)
        return st;
    req->seq = (seq0 + 1) & HLX_TAG_SEQ_MASK; /* the second of the two reserved */
    for (i = 1; i < n; i++) {
        int peer = (me - i + n) % n;
        size_t off = hlx_comm_chunk_off(count, n, peer);
        size_t len = hlx_comm_chunk_off(count, n, peer + 1) - off;
        st = hlx_comm_post_recv(req, req->seq, peer, buf + off, len * sizeof(float));
        if (st != HLX_OK)
            return hlx_comm_req_post_fail(req, st);
    }
    for (i = 1; i < n; i++) {
        st = hlx_comm_post_send(req, req->seq, (me + i) % n, buf + my_off,
                                my_len * sizeof(float));
        if (st != HLX_OK)
            return hlx_comm_req_post_fail(req, st);
    }
    return hlx_comm_req_wait(req);
}

hlx_status_t hlx_comm_allgather_blobs(hlx_boot_t *boot, const char *what, int size,
                                      const void *data, size_t len, uint32_t *lens,
                                      char **all_p, size_t *stride_p)
{
    uint32_t mylen = (uint32_t)len;
    size_t maxlen = 1;
    char key[64], *blob, *all;
    int r, gen = hlx_boot_calls(boot);
    hlx_status_t st;

    *all_p = NULL;
    snprintf(key, sizeof(key), "hlx.%s.len.%d", what, gen);
    st = hlx_boot_allgather(boot, key, &mylen, sizeof(mylen), lens);
    if (st != HLX_OK)
        return st;
    for (r = 0; r < size; r++)
        if (lens[r] > maxlen)
            maxlen = lens[r];
    blob = calloc(1, maxlen);
    all = calloc((size_t)size, maxlen);
    if (blob == NULL || all == NULL) {
        free(blob);
        free(all);
        return HLX_ERR_NOMEM;
    }
    if (len > 0)
        memcpy(blob, data, len);
    snprintf(key, sizeof(key), "hlx.%s.addr.%d", what, gen);
    st = hlx_boot_allgather(boot, key, blob, maxlen, all);
    free(blob);
    if (st != HLX_OK) {
        free(all);
        return st;
    }
    *all_p = all;
    *stride_p = maxlen;
    return HLX_OK;
}
