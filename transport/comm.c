/* Communicators: settings, world and sub-group creation, and the collectives built on
 * the backend's tagged point-to-point operations, each bounded by a deadline. */
#define _GNU_SOURCE
#include "comm_internal.h"

#include "hlx_log.h"
#include "hlx_param.h"
#include "hlx_time.h"

#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct hlx_comm_settings {
    double timeout;
    char   backend[HLX_PARAM_STRLEN];
    int    allreduce_small;
    char   ucx_err_mode[HLX_PARAM_STRLEN];
} hlx_comm_settings_t;

static const hlx_param_t hlx_comm_param_list[] = {
    { "COMM_TIMEOUT", HLX_PT_DOUBLE, "30", 0.001, 86400,
      offsetof(hlx_comm_settings_t, timeout),
      "deadline in seconds for each blocking collective (and each wait)" },
    { "COMM_BACKEND", HLX_PT_STRING, "auto", 0, 0, offsetof(hlx_comm_settings_t, backend),
      "communicator backend: auto (self for a world of one, else ucx), self, ucx" },
    { "COMM_ALLREDUCE_SMALL", HLX_PT_INT, "32768", 0, 1 << 30,
      offsetof(hlx_comm_settings_t, allreduce_small),
      "all-reduce payload in bytes up to which every rank gathers all contributions; "
      "above it reduce-scatter + all-gather (same fixed summation order either way)" },
    { "COMM_UCX_ERR_MODE", HLX_PT_STRING, "peer", 0, 0,
      offsetof(hlx_comm_settings_t, ucx_err_mode),
      "UCX endpoint error mode: peer (a dead peer is reported at once; UCX 1.13 then "
      "uses tcp and cma only) or none (shared memory too, faster; a dead peer is found "
      "by the operation deadline)" },
};

const hlx_param_table_t hlx_comm_param_table = {
    "transport", hlx_comm_param_list,
    sizeof(hlx_comm_param_list) / sizeof(hlx_comm_param_list[0]),
    sizeof(hlx_comm_settings_t),
};

static const hlx_comm_ops_t *const hlx_comm_backends[] = {
    &hlx_comm_ops_self,
    &hlx_comm_ops_ucx,
};

/* Occurrences of one rank list among the sub-groups created from a world: the n-th
 * group over the same list gets a different id on every member alike. */
typedef struct hlx_comm_subkey {
    uint64_t hash;
    int      count;
} hlx_comm_subkey_t;

struct hlx_comm {
    hlx_comm_net_t    *net;
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
};

void hlx_comm_params_default(hlx_comm_params_t *p)
{
    hlx_comm_settings_t s;

    memset(p, 0, sizeof(*p));
    if (hlx_param_load(&hlx_comm_param_table, &s, NULL) != HLX_OK) {
        /* A bad HELIX_COMM_* value was reported; fall back to the table's defaults. */
        s.timeout = 30;
        strcpy(s.backend, "auto");
    }
    p->timeout_s = s.timeout;
    snprintf(p->backend, sizeof(p->backend), "%s", s.backend);
}

/* The settings the parameters struct does not carry; bad values were reported by the
 * loader and refuse the communicator. */
static hlx_status_t hlx_comm_settings(hlx_comm_settings_t *s)
{
    hlx_status_t st = hlx_param_load(&hlx_comm_param_table, s, NULL);

    if (st != HLX_OK)
        return st;
    if (strcmp(s->ucx_err_mode, "peer") && strcmp(s->ucx_err_mode, "none")) {
        hlx_error("HELIX_COMM_UCX_ERR_MODE=\"%s\": expected peer or none", s->ucx_err_mode);
        return HLX_ERR_INVALID;
    }
    return HLX_OK;
}

int hlx_comm_rank(const hlx_comm_t *comm)
{
    return comm->rank;
}

int hlx_comm_size(const hlx_comm_t *comm)
{
    return comm->size;
}

const char *hlx_comm_backend(const hlx_comm_t *comm)
{
    return comm->net->ops->name;
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

    return comm->net->ops->irecv(comm->net, wpeer, buf, len,
                                 hlx_tag_make(comm->id, seq, wpeer), slot);
}

static hlx_status_t hlx_comm_post_send(hlx_comm_req_t *req, uint32_t seq, int peer,
                                       const void *buf, size_t len)
{
    hlx_comm_t *comm = req->comm;
    hlx_comm_slot_t *slot = hlx_comm_slot_new(req, peer, 0, len);

    return comm->net->ops->isend(comm->net, comm->world_ranks[peer], buf, len,
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
            net->ops->cancel(net, &req->slots[i]);
    while (req->npending > 0 && hlx_now_s() < until)
        net->ops->progress(net);
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

/* One progress round; HLX_OK when every slot completed without error. */
static hlx_status_t hlx_comm_req_check(hlx_comm_req_t *req)
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
                              comm->id, req->seq, s->peer, w,
                              net->ops->strerror(net->peer_lost[w]));
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
        if (net->peer_lost[w] || w == lost) {
            hlx_error("%s (comm %u, seq %u): rank %d (world %d) lost (%s) before %s",
                      req->op, comm->id, req->seq, s->peer, w,
                      net->peer_lost[w] ? net->ops->strerror(net->peer_lost[w])
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
    int i;

    /* A few rounds per call: cheap when there is work, bounded when there is none. */
    for (i = 0; i < 4 && req->npending > 0; i++) {
        if (net->ops->progress(net))
            *idle_p = 0;
        else
            (*idle_p)++;
    }
    st = hlx_comm_req_check(req);
    if (st != HLX_INPROGRESS)
        return st;
    if (hlx_now_s() > req->deadline) {
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
        /* More ranks than cores: let the peer we wait for run. */
        if (idle > 64) {
            sched_yield();
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
    if (comm->world_ranks == NULL) {
        free(comm);
        return NULL;
    }
    comm->size = size;
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
    free(comm);
}

hlx_status_t hlx_comm_world(hlx_boot_t *boot, const hlx_comm_params_t *p,
                            hlx_comm_t **world_p)
{
    hlx_comm_params_t defaults;
    hlx_comm_settings_t set;
    hlx_boot_info_t info;
    const hlx_comm_ops_t *ops = NULL;
    hlx_comm_net_t *net;
    hlx_comm_t *comm;
    hlx_status_t st;
    size_t i;
    int r;

    if (p == NULL) {
        hlx_comm_params_default(&defaults);
        p = &defaults;
    }
    if (!(p->timeout_s > 0)) {
        hlx_error("communicator: timeout %g s must be positive", p->timeout_s);
        return HLX_ERR_INVALID;
    }
    st = hlx_comm_settings(&set);
    if (st != HLX_OK)
        return st;
    hlx_boot_get_info(boot, &info);
    if (info.size > HLX_COMM_MAX_RANKS) {
        hlx_error("communicator: %d ranks, at most %d", info.size, HLX_COMM_MAX_RANKS);
        return HLX_ERR_UNSUPPORTED;
    }
    if (p->backend[0] == '\0' || !strcmp(p->backend, "auto")) {
        ops = info.size == 1 ? &hlx_comm_ops_self : &hlx_comm_ops_ucx;
    } else {
        for (i = 0; i < sizeof(hlx_comm_backends) / sizeof(hlx_comm_backends[0]); i++)
            if (!strcmp(p->backend, hlx_comm_backends[i]->name))
                ops = hlx_comm_backends[i];
        if (ops == NULL) {
            hlx_error("communicator: unknown backend \"%s\" (HELIX_COMM_BACKEND: auto, "
                      "self, ucx)", p->backend);
            return HLX_ERR_INVALID;
        }
        if (ops == &hlx_comm_ops_self && info.size > 1) {
            hlx_error("communicator: backend self needs a world of one, this job has %d "
                      "ranks", info.size);
            return HLX_ERR_INVALID;
        }
    }

    net = calloc(1, sizeof(*net));
    comm = hlx_comm_alloc(info.size);
    if (net == NULL || comm == NULL) {
        st = HLX_ERR_NOMEM;
        goto err_free;
    }
    net->peer_lost = calloc((size_t)info.size, sizeof(int));
    if (net->peer_lost == NULL) {
        st = HLX_ERR_NOMEM;
        goto err_free;
    }
    net->ops = ops;
    net->boot = boot;
    net->rank = info.rank;
    net->size = info.size;
    net->timeout_s = p->timeout_s;
    net->peer_failure = !strcmp(set.ucx_err_mode, "peer");
    st = ops->open(net, boot);
    if (st != HLX_OK)
        goto err_free;

    comm->net = net;
    comm->id = 1;
    comm->rank = info.rank;
    comm->timeout_s = p->timeout_s;
    comm->allreduce_small = (size_t)set.allreduce_small;
    for (r = 0; r < info.size; r++)
        comm->world_ranks[r] = r;

    /* Connects every endpoint now, so a rank that cannot reach another fails here with
     * the peer's name rather than in the first decode step. */
    st = hlx_comm_barrier(comm);
    if (st != HLX_OK) {
        hlx_error("communicator: world creation failed (backend %s)", ops->name);
        goto err_close;
    }
    hlx_debug(HLX_SUB_NET, "world communicator: %d ranks over %s, timeout %g s",
              info.size, ops->name, p->timeout_s);
    *world_p = comm;
    return HLX_OK;

err_close:
    ops->close(net, 0);
err_free:
    if (net)
        free(net->peer_lost);
    free(net);
    if (comm)
        hlx_comm_free(comm);
    return st;
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
    world->nsubs_alive++;
    *sub_p = sub;
    return HLX_OK;
}

void hlx_comm_destroy(hlx_comm_t *comm)
{
    hlx_comm_net_t *net;
    int graceful;

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
        hlx_comm_free(comm);
        return;
    }
    if (comm->nsubs_alive > 0)
        hlx_warn("communicator: world destroyed before %d sub-groups", comm->nsubs_alive);
    /* A last barrier tells every rank that all data of the final operations arrived
     * everywhere, so closing endpoints cannot drop anything still in flight. */
    graceful = comm->failed == HLX_OK && comm->size > 1 &&
               hlx_comm_barrier(comm) == HLX_OK;
    net->closing = 1;
    net->ops->close(net, graceful);
    hlx_comm_free(comm);
    free(net->peer_lost);
    free(net);
}

/* ---- collectives ---------------------------------------------------------------- */

hlx_status_t hlx_comm_ialltoallv(hlx_comm_t *comm, const void *sbuf, const size_t *scounts,
                                 const size_t *sdispls, void *rbuf, const size_t *rcounts,
                                 const size_t *rdispls, hlx_comm_req_t **req_p)
{
    hlx_comm_req_t *req;
    hlx_status_t st;
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
    for (i = 1; i < n; i++) {
        int peer = (me - i + n) % n;
        st = hlx_comm_post_recv(req, req->seq, peer, (char *)rbuf + rdispls[peer],
                                rcounts[peer]);
        if (st != HLX_OK)
            return hlx_comm_req_post_fail(req, st);
    }
    for (i = 1; i < n; i++) {
        int peer = (me + i) % n;
        st = hlx_comm_post_send(req, req->seq, peer, (const char *)sbuf + sdispls[peer],
                                scounts[peer]);
        if (st != HLX_OK)
            return hlx_comm_req_post_fail(req, st);
    }
    if (scounts[me] > 0)
        memmove((char *)rbuf + rdispls[me], (const char *)sbuf + sdispls[me], scounts[me]);
    *req_p = req;
    return HLX_OK;
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

hlx_status_t hlx_comm_allgather(hlx_comm_t *comm, const void *in, size_t bytes, void *out)
{
    return hlx_comm_allgather_op(comm, "allgather", in, bytes, out);
}

hlx_status_t hlx_comm_barrier(hlx_comm_t *comm)
{
    return hlx_comm_allgather_op(comm, "barrier", NULL, 0, NULL);
}

hlx_status_t hlx_comm_barrier_within(hlx_comm_t *comm, double timeout_s)
{
    double saved = comm->timeout_s;
    hlx_status_t st;

    comm->timeout_s = timeout_s > 0 ? timeout_s : saved;
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
