/* UCX ucp backends: one for same-host peers (shared-memory transports only), one for
 * peers on other hosts (UCX_TLS / UCX_NET_DEVICES as given), each its own context and
 * worker; tag-matched non-blocking sends and receives completed through callbacks. */
#define _GNU_SOURCE
#include "comm_internal.h"

#include "hlx_log.h"
#include "hlx_time.h"

#include <ucp/api/ucp.h>
#include <ucs/config/parser.h>
#include <ucs/datastruct/mpool_set.h>
#include <ucs/sys/string.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct hlx_ucx_peer {
    hlx_comm_net_t *net;
    int             rank;     /* world */
} hlx_ucx_peer_t;

#define HLX_UCX(be) ((struct hlx_comm_ucx *)(be)->priv)

struct hlx_comm_ucx {
    ucp_context_h   context;
    ucp_worker_h    worker;
    ucp_ep_h       *eps;      /* per world rank; NULL for self */
    hlx_ucx_peer_t *peers;
};

static hlx_status_t hlx_ucx_status(ucs_status_t s)
{
    switch (s) {
    case UCS_OK:                     return HLX_OK;
    case UCS_INPROGRESS:             return HLX_INPROGRESS;
    case UCS_ERR_NO_MEMORY:          return HLX_ERR_NOMEM;
    case UCS_ERR_MESSAGE_TRUNCATED:  return HLX_ERR_MISMATCH;
    case UCS_ERR_CANCELED:           return HLX_ERR_TIMEOUT;
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:           return HLX_ERR_PEER;
    default:                         return HLX_ERR_TRANSPORT;
    }
}

static const char *hlx_ucx_strerror(int backend_status)
{
    return backend_status ? ucs_status_string((ucs_status_t)backend_status) : "no error";
}

/* Marks the peer lost; comm.c turns this into HLX_ERR_PEER naming the rank. */
static void hlx_ucx_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    hlx_ucx_peer_t *peer = arg;
    hlx_comm_net_t *net = peer->net;

    if (net->peer_lost[peer->rank] == 0 && !net->closing)
        hlx_error("transport: connection to rank %d failed: %s", peer->rank,
                  ucs_status_string(status));
    if (net->peer_lost[peer->rank] == 0)
        net->peer_lost[peer->rank] = (int)status;
}

static void hlx_ucx_send_cb(void *request, ucs_status_t status, void *user_data)
{
    hlx_comm_slot_t *slot = user_data;

    ucp_request_free(request);
    hlx_comm_slot_done(slot, hlx_ucx_status(status), 0);
}

static void hlx_ucx_recv_cb(void *request, ucs_status_t status,
                            const ucp_tag_recv_info_t *info, void *user_data)
{
    hlx_comm_slot_t *slot = user_data;

    ucp_request_free(request);
    hlx_comm_slot_done(slot, hlx_ucx_status(status), status == UCS_OK ? info->length : 0);
}

static hlx_status_t hlx_ucx_isend(hlx_comm_be_t *be, int peer, const void *buf,
                                  size_t len, uint64_t tag, hlx_comm_slot_t *slot)
{
    hlx_comm_net_t *net = be->net;
    ucp_request_param_t prm;
    ucs_status_ptr_t r;

    if (net->peer_lost[peer]) {
        hlx_comm_slot_done(slot, HLX_ERR_PEER, 0);
        return HLX_OK; /* reported with the peer's name by the wait */
    }
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    prm.cb.send = hlx_ucx_send_cb;
    prm.user_data = slot;
    r = ucp_tag_send_nbx(HLX_UCX(be)->eps[peer], buf, len, tag, &prm);
    if (r == NULL) {
        hlx_comm_slot_done(slot, HLX_OK, 0);
    } else if (UCS_PTR_IS_ERR(r)) {
        hlx_comm_slot_done(slot, hlx_ucx_status(UCS_PTR_STATUS(r)), 0);
    } else {
        slot->handle = r;
    }
    return HLX_OK;
}

static hlx_status_t hlx_ucx_irecv(hlx_comm_be_t *be, int peer, void *buf, size_t len,
                                  uint64_t tag, hlx_comm_slot_t *slot)
{
    (void)peer;
    ucp_request_param_t prm;
    ucs_status_ptr_t r;

    /* UCX 1.13 leaves recv_info.tag_info unset on some immediate completions (the
     * length read back was stack garbage), so completion always goes through the
     * callback, which reports the length reliably. */
    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    prm.cb.recv = hlx_ucx_recv_cb;
    prm.user_data = slot;
    r = ucp_tag_recv_nbx(HLX_UCX(be)->worker, buf, len, tag, ~(ucp_tag_t)0, &prm);
    if (r == NULL) {
        hlx_comm_slot_done(slot, HLX_OK, len);
    } else if (UCS_PTR_IS_ERR(r)) {
        hlx_comm_slot_done(slot, hlx_ucx_status(UCS_PTR_STATUS(r)), 0);
    } else {
        slot->handle = r;
    }
    return HLX_OK;
}

static int hlx_ucx_progress(hlx_comm_be_t *be)
{
    return (int)ucp_worker_progress(HLX_UCX(be)->worker);
}

static void hlx_ucx_cancel(hlx_comm_be_t *be, hlx_comm_slot_t *slot)
{
    if (slot->handle != NULL && !slot->done)
        ucp_request_cancel(HLX_UCX(be)->worker, slot->handle);
}

/* Closes every endpoint (flushing first when graceful and the peer is alive), bounded
 * by the net's deadline, then the worker and the context. */
static void hlx_ucx_close(hlx_comm_be_t *be, int graceful)
{
    hlx_comm_net_t *net = be->net;
    struct hlx_comm_ucx *u = HLX_UCX(be);
    void **reqs;
    double deadline = hlx_now_s() + (net->timeout_s < 5 ? net->timeout_s : 5);
    int r, pending;

    if (u == NULL)
        return;
    reqs = calloc((size_t)net->size, sizeof(void *));
    for (r = 0; u->eps && r < net->size; r++) {
        ucp_request_param_t prm;
        ucs_status_ptr_t p;
        if (u->eps[r] == NULL)
            continue;
        prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        prm.flags = (graceful && !net->peer_lost[r]) ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
        p = ucp_ep_close_nbx(u->eps[r], &prm);
        if (p != NULL && !UCS_PTR_IS_ERR(p)) {
            if (reqs)
                reqs[r] = p;
            else
                ucp_request_free(p);
        }
        u->eps[r] = NULL;
    }
    do {
        pending = 0;
        ucp_worker_progress(u->worker);
        for (r = 0; reqs && r < net->size; r++) {
            if (reqs[r] == NULL)
                continue;
            if (ucp_request_check_status(reqs[r]) != UCS_INPROGRESS) {
                ucp_request_free(reqs[r]);
                reqs[r] = NULL;
            } else {
                pending++;
            }
        }
    } while (pending > 0 && hlx_now_s() < deadline);
    for (r = 0; reqs && r < net->size; r++)
        if (reqs[r] != NULL)
            ucp_request_free(reqs[r]);
    if (pending > 0)
        hlx_warn("transport: %d endpoints did not close within the deadline", pending);
    free(reqs);
    ucp_worker_destroy(u->worker);
    ucp_cleanup(u->context);
    free(u->eps);
    free(u->peers);
    free(u);
    be->priv = NULL;
}

/* Whether a transport list (UCX_TLS syntax: names, or ^ and the names left out; NULL or
 * empty is UCX's default, all of them) lets UCX open a transport any of names[n] (its
 * aliases, "all" among them) stands for. */
static int hlx_ucx_tls_allows(const char *tls, const char *const *names, size_t n)
{
    const char *p;
    int neg, named = 0;

    if (tls == NULL || tls[0] == '\0')
        return 1;
    neg = tls[0] == '^';
    for (p = tls + neg; *p != '\0';) {
        size_t len = strcspn(p, ",");
        for (size_t i = 0; i < n; i++)
            if (strlen(names[i]) == len && !strncmp(p, names[i], len))
                named = 1;
        p += len + (p[len] == ',');
    }
    return neg ? !named : named;
}

/* Whether UCX may open a tcp interface under the environment's UCX_TLS and
 * UCX_NET_DEVICES: a transport key no interface takes makes UCX warn at worker creation. */
static int hlx_ucx_tcp_possible(void)
{
    static const char *const tcp[] = { "all", "tcp" };
    const char *dev = getenv("UCX_NET_DEVICES"), *p;

    if (!hlx_ucx_tls_allows(getenv("UCX_TLS"), tcp, sizeof(tcp) / sizeof(tcp[0])))
        return 0;
    if (dev == NULL || !strcmp(dev, "all") || dev[0] == '^') /* ^: all but those named */
        return 1;
    for (p = dev; *p != '\0';) { /* a network interface has no ":port" (mlx5_0:1 has) */
        size_t n = strcspn(p, ",");
        if (memchr(p, ':', n) == NULL)
            return 1;
        p += n + (p[n] == ',');
    }
    return 0;
}

hlx_status_t hlx_ucx_tcp_seg_env(hlx_ucx_tcp_seg_t *seg, char *why, size_t whylen)
{
    static const char *const var[2] = { "UCX_TCP_TX_SEG_SIZE", "UCX_TCP_RX_SEG_SIZE" };
    int d;

    for (d = 0; d < 2; d++) {
        seg->var[d] = var[d];
        seg->text[d] = getenv(var[d]);
        seg->bytes[d] = 0;
        if (seg->text[d] != NULL && !ucs_config_sscanf_memunits(seg->text[d], &seg->bytes[d],
                                                                NULL)) {
            snprintf(why, whylen, "%s='%s': not a size UCX reads (a number with b, k, kb, "
                     "m, mb, g, gb, t or tb, any case)", var[d], seg->text[d]);
            return HLX_ERR_INVALID;
        }
    }
    return HLX_OK;
}

/* The largest segment UCX's worker takes: its active-message buffers come from a memory
 * pool set whose elements are at most UCS_MPOOL_SET_MAX_SIZE (1 GiB in UCX 1.13; "invalid
 * maximal mpool element size" and ucp_worker_create's Invalid parameter above it). */
#ifdef UCS_MPOOL_SET_MAX_SIZE
#define HLX_UCX_TCP_SEG_MAX ((size_t)UCS_MPOOL_SET_MAX_SIZE)
#else
#define HLX_UCX_TCP_SEG_MAX ((size_t)1 << 30)
#endif

/* Whether UCX's tcp interface can open with the segments read by hlx_ucx_tcp_seg_env:
 * asked only where this rank opens it (a network backend with tcp allowed), so that a job
 * whose ranks all share memory runs whatever the variables say, as UCX leaves them
 * unused there. */
static hlx_status_t hlx_ucx_tcp_seg_usable(const hlx_ucx_tcp_seg_t *seg, char *why,
                                           size_t whylen)
{
    int d;

    for (d = 0; d < 2; d++) {
        if (seg->text[d] == NULL)
            continue;
        /* inf and auto read as sizes near SIZE_MAX (UCX adds its header to the segment and
         * wraps around: "AM Zcopy context (160) must be <= TX segment size (4)"), anything
         * over the pools' limit fails alike: the tcp interface does not open */
        if (seg->bytes[d] > HLX_UCX_TCP_SEG_MAX) {
            snprintf(why, whylen, "%s='%s': %s the %zu bytes UCX's worker takes for a "
                     "segment (the tcp interface fails to open): give a size such as 256K, "
                     "or unset it", seg->var[d], seg->text[d],
                     seg->bytes[d] >= UCS_MEMUNITS_AUTO ? "unbounded, not within"
                                                        : "more than", HLX_UCX_TCP_SEG_MAX);
            return HLX_ERR_INVALID;
        }
    }
    return HLX_OK;
}

/* This rank's message limit to its tcp-class peers against the tcp segment UCX sends with
 * (HELIX_COMM_TCP_SEG where applied, else UCX's variable or its own size): logged (NET,
 * info) where it has such peers, and warned about once where a limit set as a number does
 * not fit, as a segment from UCX wins (each message then takes a rendezvous; where both are
 * Helix settings, the settings' rules refused the pair at start-up). auto fits. */
static void hlx_ucx_check_tcp_chunk(const hlx_comm_be_t *be, const hlx_ucx_tcp_seg_t *seg)
{
    const hlx_comm_net_t *net = be->net;
    size_t chunk = hlx_comm_chunk_tcp_peer(net->chunk[HLX_PATH_NET], net->chunk_tcp);
    const size_t tx = hlx_comm_tcp_tx_seg(net->tcp_seg, seg);
    const char *what = chunk == net->chunk_tcp ? "HELIX_COMM_CHUNK_TCP" : "HELIX_COMM_CHUNK_NET";
    char from[160];
    int r, tcp_peers = 0;

    for (r = 0; r < net->size; r++)
        tcp_peers += net->link[r] == HLX_LINK_TCP && net->peer_be[r] == be;
    if (tcp_peers == 0)
        return;
    if (net->tcp_seg > 0 && seg->text[HLX_UCX_SEG_TX] == NULL &&
        seg->text[HLX_UCX_SEG_RX] == NULL)
        snprintf(from, sizeof(from), "HELIX_COMM_TCP_SEG=%d", net->tcp_seg);
    else if (seg->text[HLX_UCX_SEG_TX] != NULL)
        snprintf(from, sizeof(from), "%s=%s", seg->var[HLX_UCX_SEG_TX],
                 seg->text[HLX_UCX_SEG_TX]);
    else
        snprintf(from, sizeof(from), "UCX's own %d bytes (%s)", HLX_UCX_TCP_TX_SEG_DEFAULT,
                 net->tcp_seg <= 0 ? "HELIX_COMM_TCP_SEG=0"
                                   : "UCX_TCP_RX_SEG_SIZE is set, so HELIX_COMM_TCP_SEG is "
                                     "not applied");
    hlx_info(HLX_SUB_NET, "%d tcp-class peer(s): all-to-all messages of at most %zu bytes "
             "(%s%s), tcp send segment %s", tcp_peers, chunk,
             chunk == 0 ? "whole blocks: HELIX_COMM_CHUNK_NET=0 and HELIX_COMM_CHUNK_TCP=0"
                        : what,
             chunk != 0 && chunk == net->chunk_tcp && net->chunk_auto ? "=auto" : "", from);
    if (net->chunk_tcp == 0 || chunk == 0 || net->chunk_auto) /* the user's choice; fits */
        return;
    if (tx >= HLX_UCX_TAG_HDR && chunk <= tx - HLX_UCX_TAG_HDR)
        return;
    hlx_warn("transport: %s=%zu does not fit one tcp segment of %s with UCX's %d-byte tag "
             "header: every all-to-all message to this rank's %d tcp-class peer(s) takes a "
             "rendezvous (UCX's segment wins; HELIX_COMM_CHUNK_TCP=auto, or at most the "
             "segment less %d bytes, or 0, avoids it)", what, chunk, from, HLX_UCX_TAG_HDR,
             tcp_peers, HLX_UCX_TAG_HDR);
}

/* The network path's tcp segments (HELIX_COMM_TCP_SEG), sending and receiving, unless the
 * user set either of UCX's own variables (UCX refuses a send segment larger than the
 * receive one; a ucx.conf value is not looked at and is overridden). With UCX's 8 KiB
 * sends a 32 KiB to 256 KiB block took a rendezvous round trip or many fragments:
 * 1.2-2.6x Open MPI's tcp all-to-all between namespace nodes (docs/transport.md). UCX
 * applies a transport key to every interface whose table has the field, by its name
 * without the transport's prefix; only tcp's has these two. */
static hlx_status_t hlx_ucx_configure_net(hlx_comm_be_t *be, ucp_config_t *config)
{
    static const char *const key[2] = { "TX_SEG_SIZE", "RX_SEG_SIZE" };
    hlx_ucx_tcp_seg_t seg;
    char val[32], why[256];
    ucs_status_t s;
    int d;

    if (!hlx_ucx_tcp_possible())
        return HLX_OK;
    if (hlx_ucx_tcp_seg_env(&seg, why, sizeof(why)) != HLX_OK || /* the rules refuse it first */
        hlx_ucx_tcp_seg_usable(&seg, why, sizeof(why)) != HLX_OK) {
        hlx_error("transport: %s", why);
        return HLX_ERR_INVALID;
    }
    hlx_ucx_check_tcp_chunk(be, &seg);
    if (be->net->tcp_seg <= 0 || seg.text[HLX_UCX_SEG_TX] || seg.text[HLX_UCX_SEG_RX]) {
        if (be->net->tcp_seg > 0)
            hlx_info(HLX_SUB_NET, "HELIX_COMM_TCP_SEG=%d not applied: UCX_TCP_TX_SEG_SIZE "
                     "or UCX_TCP_RX_SEG_SIZE is set", be->net->tcp_seg);
        return HLX_OK;
    }
    snprintf(val, sizeof(val), "%d", be->net->tcp_seg);
    for (d = 0; d < 2; d++) {
        s = ucp_config_modify(config, key[d], val);
        if (s != UCS_OK) {
            hlx_error("transport: HELIX_COMM_TCP_SEG=%s: UCX refused TCP_%s: %s", val, key[d],
                      ucs_status_string(s));
            return HLX_ERR_INVALID;
        }
    }
    return HLX_OK;
}

/* The same-host path's rendezvous threshold (HELIX_COMM_SHM_RNDV): blocks below it go
 * eager through the shared segments, up to 2x faster than UCX's rendezvous by cma below
 * 64 KiB on host memory (docs/transport.md). *applied says whether it was set. */
static hlx_status_t hlx_ucx_configure_rndv(hlx_comm_be_t *be, ucp_config_t *config,
                                           int *applied)
{
    char val[32];
    ucs_status_t s;

    *applied = 0;
    if (be->net->shm_rndv <= 0)
        return HLX_OK;
    if (getenv("UCX_RNDV_THRESH") != NULL) {
        hlx_info(HLX_SUB_NET, "HELIX_COMM_SHM_RNDV=%d not applied: UCX_RNDV_THRESH is set",
                 be->net->shm_rndv);
        return HLX_OK;
    }
    snprintf(val, sizeof(val), "%d", be->net->shm_rndv);
    s = ucp_config_modify(config, "RNDV_THRESH", val);
    if (s != UCS_OK) {
        hlx_error("transport: HELIX_COMM_SHM_RNDV=%s: UCX refused it: %s", val,
                  ucs_status_string(s));
        return HLX_ERR_INVALID;
    }
    *applied = 1;
    return HLX_OK;
}

/* The context's transports: same-host peers get the shared-memory list (any tcp in it
 * confined to loopback, so a one-host job listens on no network interface) and, with
 * host_tuning, the eager range of HELIX_COMM_SHM_RNDV; other hosts get UCX's own choice
 * from UCX_TLS and UCX_NET_DEVICES, with larger tcp segments. */
static hlx_status_t hlx_ucx_configure(hlx_comm_be_t *be, ucp_config_t *config,
                                      int host_tuning, int *rndv_applied)
{
    const char *tls = be->net->shm_tls;
    char with_tcp[300];
    ucs_status_t s;

    *rndv_applied = 0;
    if (be->path != HLX_PATH_SHM)
        return hlx_ucx_configure_net(be, config);
    /* Peer-failure mode: UCX 1.13's shared-memory transports cannot serve it, so tcp
     * (on loopback) is added for the endpoints to have a path at all. */
    if (be->net->ucx_err_peer && !strstr(tls, "tcp") && !strstr(tls, "all")) {
        snprintf(with_tcp, sizeof(with_tcp), "%s,tcp", tls);
        tls = with_tcp;
    }
    s = hlx_ucx_config_local(config, tls);
    if (s != UCS_OK) {
        hlx_error("transport: HELIX_COMM_SHM_TLS=\"%s\": UCX refused it: %s", tls,
                  ucs_status_string(s));
        return HLX_ERR_INVALID;
    }
    return host_tuning ? hlx_ucx_configure_rndv(be, config, rndv_applied) : HLX_OK;
}

/* 1 when the context's memory types include CUDA (UCX built with CUDA and its cuda_copy
 * component loaded under the context's UCX_TLS). */
static int hlx_ucx_context_cuda(ucp_context_h context)
{
    ucp_context_attr_t attr;

    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    if (ucp_context_query(context, &attr) != UCS_OK)
        return 0;
    return (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
}

int hlx_ucx_probe_cuda_memory(void)
{
    ucp_params_t params;
    ucp_context_h context;
    int cuda;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG;
    if (ucp_init(&params, NULL, &context) != UCS_OK)
        return 0;
    cuda = hlx_ucx_context_cuda(context);
    ucp_cleanup(context);
    return cuda;
}

hlx_status_t hlx_ucx_config_read(const char *what, ucp_config_t **config_p)
{
    ucs_status_t s = ucp_config_read(NULL, NULL, config_p);

    if (s == UCS_OK)
        return HLX_OK;
    hlx_error("transport: %sucp_config_read: %s", what, ucs_status_string(s));
    return HLX_ERR_TRANSPORT;
}

ucs_status_t hlx_ucx_config_local(ucp_config_t *config, const char *tls)
{
    ucs_status_t s = ucp_config_modify(config, "TLS", tls);

    if (s == UCS_OK && (strstr(tls, "tcp") || strstr(tls, "all")))
        s = ucp_config_modify(config, "NET_DEVICES", "lo");
    return s;
}

/* The mm receive pool's first chunk: UCX's 512 descriptors of 8 KiB (RX_BUFS_GROW), 4 MiB
 * of /dev/shm touched page by page for each of posix and sysv, took 20-45 ms of every
 * worker's creation (two a rank: data and heartbeats) against 5 ms with 128, twice the
 * FIFO UCX fills at once; the pool still grows by 128 whenever messages wait. UCX's own
 * variables win. */
#define HLX_UCX_MM_RX_GROW "128"
static void hlx_ucx_config_mm_pool(ucp_config_t *config, const char *tls)
{
    static const char *const mm[] = { "all", "sm", "shm", "mm", "posix", "sysv" };

    if (!hlx_ucx_tls_allows(tls, mm, sizeof(mm) / sizeof(mm[0])) ||
        getenv("UCX_MM_RX_BUFS_GROW") != NULL || getenv("UCX_POSIX_RX_BUFS_GROW") != NULL ||
        getenv("UCX_SYSV_RX_BUFS_GROW") != NULL)
        return;
    /* a UCX without the key keeps its default: nothing is lost but the time */
    (void)ucp_config_modify(config, "MM_RX_BUFS_GROW", HLX_UCX_MM_RX_GROW);
}

ucs_status_t hlx_ucx_init_tag(ucp_config_t *config, const char *tls, int n,
                              ucp_context_h *context_p)
{
    ucp_params_t params;

    hlx_ucx_config_mm_pool(config, tls != NULL ? tls : getenv("UCX_TLS"));
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features = UCP_FEATURE_TAG;
    params.estimated_num_eps = (size_t)n;
    return ucp_init(&params, config, context_p);
}

/* The backend's ucp context. The same-host eager range was measured on host memory only:
 * a context that also carries CUDA memory is made again without it. */
static hlx_status_t hlx_ucx_context_init(hlx_comm_be_t *be, int host_tuning,
                                         ucp_context_h *context_p)
{
    ucp_config_t *config;
    ucs_status_t s;
    hlx_status_t st;
    int rndv;

    st = hlx_ucx_config_read("", &config);
    if (st != HLX_OK)
        return st;
    st = hlx_ucx_configure(be, config, host_tuning, &rndv);
    if (st != HLX_OK) {
        ucp_config_release(config);
        return st;
    }
    s = hlx_ucx_init_tag(config, be->path == HLX_PATH_SHM ? be->net->shm_tls : NULL,
                         be->net->size, context_p);
    ucp_config_release(config);
    if (s != UCS_OK) {
        hlx_error("transport: ucp_init: %s", ucs_status_string(s));
        return HLX_ERR_TRANSPORT;
    }
    if (rndv && hlx_ucx_context_cuda(*context_p)) {
        hlx_info(HLX_SUB_NET, "same-host context carries CUDA memory: UCX's own rendezvous "
                 "threshold (HELIX_COMM_SHM_RNDV is measured on host memory only)");
        ucp_cleanup(*context_p);
        *context_p = NULL;
        return hlx_ucx_context_init(be, 0, context_p);
    }
    return HLX_OK;
}

static hlx_status_t hlx_ucx_open(hlx_comm_be_t *be, hlx_boot_t *boot)
{
    hlx_comm_net_t *net = be->net;
    struct hlx_comm_ucx *u;
    ucp_worker_params_t wparams;
    ucp_address_t *addr = NULL;
    size_t addr_len = 0, maxlen = 0;
    uint32_t *lens = NULL;
    char *all = NULL;
    ucs_status_t s;
    hlx_status_t st;
    int r;

    u = calloc(1, sizeof(*u));
    if (u == NULL)
        return HLX_ERR_NOMEM;
    u->eps = calloc((size_t)net->size, sizeof(*u->eps));
    u->peers = calloc((size_t)net->size, sizeof(*u->peers));
    lens = calloc((size_t)net->size, sizeof(*lens));
    if (u->eps == NULL || u->peers == NULL || lens == NULL) {
        st = HLX_ERR_NOMEM;
        goto err_free;
    }

    st = hlx_ucx_context_init(be, 1, &u->context);
    if (st != HLX_OK)
        goto err_free;
    {
        int cuda = hlx_ucx_context_cuda(u->context);
        net->ucx_cuda_mem = net->ucx_cuda_mem < 0 ? cuda : net->ucx_cuda_mem && cuda;
    }
    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    s = ucp_worker_create(u->context, &wparams, &u->worker);
    if (s != UCS_OK) {
        hlx_error("transport: ucp_worker_create: %s", ucs_status_string(s));
        st = HLX_ERR_TRANSPORT;
        goto err_cleanup;
    }
    s = ucp_worker_get_address(u->worker, &addr, &addr_len);
    if (s != UCS_OK) {
        hlx_error("transport: ucp_worker_get_address: %s", ucs_status_string(s));
        st = HLX_ERR_TRANSPORT;
        goto err_worker;
    }

    /* Addresses differ in length: exchanged padded to the longest. */
    st = hlx_comm_allgather_blobs(boot, be->ops->name, net->size, addr, addr_len, lens, &all,
                                  &maxlen);
    if (st != HLX_OK)
        goto err_addr;

    be->priv = u;
    for (r = 0; r < net->size; r++) {
        ucp_ep_params_t ep;
        u->peers[r].net = net;
        u->peers[r].rank = r;
        if (r == net->rank || net->peer_be[r] != be)
            continue;
        if (lens[r] == 0) {
            hlx_error("transport: rank %d has no %s worker although this rank reaches it "
                      "through one: the link classes given to the ranks disagree", r,
                      be->ops->name);
            st = HLX_ERR_INVALID;
            goto err_eps;
        }
        memset(&ep, 0, sizeof(ep));
        ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep.address = (const ucp_address_t *)(all + (size_t)r * maxlen);
        ep.err_mode = net->ucx_err_peer ? UCP_ERR_HANDLING_MODE_PEER
                                        : UCP_ERR_HANDLING_MODE_NONE;
        ep.err_handler.cb = hlx_ucx_ep_error;
        ep.err_handler.arg = &u->peers[r];
        s = ucp_ep_create(u->worker, &ep, &u->eps[r]);
        if (s != UCS_OK) {
            hlx_error("transport: %s endpoint to rank %d: %s", be->ops->name, r,
                      ucs_status_string(s));
            st = HLX_ERR_TRANSPORT;
            goto err_eps;
        }
    }
    ucp_worker_release_address(u->worker, addr);
    free(all);
    free(lens);
    return HLX_OK;

err_eps:
    ucp_worker_release_address(u->worker, addr);
    free(all);
    free(lens);
    hlx_ucx_close(be, 0);
    return st;
err_addr:
    ucp_worker_release_address(u->worker, addr);
err_worker:
    ucp_worker_destroy(u->worker);
err_cleanup:
    ucp_cleanup(u->context);
err_free:
    free(all);
    free(lens);
    free(u->eps);
    free(u->peers);
    free(u);
    be->priv = NULL;
    return st;
}

#define HLX_UCX_OPS(NAME)                               \
    {                                                   \
        .name              = NAME,                      \
        .open              = hlx_ucx_open,              \
        .close             = hlx_ucx_close,             \
        .isend             = hlx_ucx_isend,             \
        .irecv             = hlx_ucx_irecv,             \
        .progress          = hlx_ucx_progress,          \
        .cancel            = hlx_ucx_cancel,            \
        .strerror          = hlx_ucx_strerror,          \
        .ialltoallv        = hlx_comm_p2p_ialltoallv,   \
        .allreduce_sum_f32 = hlx_comm_p2p_allreduce_sum_f32, \
        .allgather         = hlx_comm_p2p_allgather,    \
        .sub_create        = hlx_comm_p2p_sub_create,   \
        .sub_destroy       = hlx_comm_p2p_sub_destroy,  \
    }

/* Same host: shared memory (HELIX_COMM_SHM_TLS). */
const hlx_comm_ops_t hlx_comm_ops_ucx_shm = HLX_UCX_OPS("ucx-shm");
/* Other hosts: RDMA verbs where present, tcp otherwise (UCX's choice). */
const hlx_comm_ops_t hlx_comm_ops_ucx_net = HLX_UCX_OPS("ucx-net");
