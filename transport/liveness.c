/* Liveness: a thread per process sends a heartbeat to every peer each interval over a
 * UCX worker of its own and records when each peer was last heard, so that a stopped,
 * hung or cut-off rank is named within the heartbeat timeout whatever the data paths do. */
#define _GNU_SOURCE
#include "comm_internal.h"

#include "hlx_log.h"

#include <ucp/api/ucp.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct hlx_live_peer {
    hlx_liveness_t *live;
    int             rank;
    int             inflight;   /* thread only: a heartbeat to it is still being sent */
} hlx_live_peer_t;

struct hlx_liveness {
    hlx_comm_net_t   *net;      /* only size and rank are read by the thread */
    ucp_context_h     context;
    ucp_worker_h      worker;
    ucp_ep_h         *eps;
    hlx_live_peer_t  *peers;
    _Atomic int64_t  *last_ns;  /* per world rank: monotonic time last heard */
    _Atomic int      *failed;   /* per world rank: the heartbeat connection failed */
    _Atomic int64_t   drained_ns; /* when this thread last drained its worker */
    int64_t           interval_ns, timeout_ns;
    double            timeout_s;
    void             *rx_req;   /* thread only: the posted receive, NULL when none */
    int32_t           rx_buf;
    int32_t           my_rank;  /* the heartbeat's payload */
    atomic_int        stop;
    atomic_int        quiet;    /* stop sending, keep receiving */
    pthread_t         thread;
    pthread_mutex_t   lock;     /* with wake: ends the thread's nap at stop */
    pthread_cond_t    wake;
    int               started;
    int               sync;     /* lock and wake initialized */
};

#define HLX_HB_TAG 0x4842000000000000ull /* 'HB' in the top bits, source rank below */

static int64_t hlx_live_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void hlx_live_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    hlx_live_peer_t *p = arg;

    (void)ep;
    (void)status;
    atomic_store(&p->live->failed[p->rank], 1);
}

static void hlx_live_send_cb(void *request, ucs_status_t status, void *user_data)
{
    hlx_live_peer_t *p = user_data;

    ucp_request_free(request);
    p->inflight = 0;
    if (status != UCS_OK && status != UCS_ERR_CANCELED)
        atomic_store(&p->live->failed[p->rank], 1);
}

static void hlx_live_recv_cb(void *request, ucs_status_t status,
                             const ucp_tag_recv_info_t *info, void *user_data)
{
    hlx_liveness_t *live = user_data;

    ucp_request_free(request);
    live->rx_req = NULL;
    (void)info;
    if (status == UCS_OK) {
        /* The sender's rank is the payload: UCX 1.13 does not always fill sender_tag
         * when a waiting message completes a receive inside ucp_tag_recv_nbx. */
        int src = (int)live->rx_buf;
        if (src >= 0 && src < live->net->size)
            atomic_store(&live->last_ns[src], hlx_live_now_ns());
    }
}

static void hlx_live_post_recv(hlx_liveness_t *live)
{
    ucp_request_param_t prm;
    ucs_status_ptr_t r;

    prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    prm.cb.recv = hlx_live_recv_cb;
    prm.user_data = live;
    /* The callback may run inside the call (a heartbeat already waiting): it clears
     * rx_req, which then must not be overwritten with the freed request. */
    live->rx_req = &live->rx_buf;
    r = ucp_tag_recv_nbx(live->worker, &live->rx_buf, sizeof(live->rx_buf), HLX_HB_TAG,
                         ~(ucp_tag_t)0xffff, &prm);
    if (!UCS_PTR_IS_PTR(r))
        live->rx_req = NULL;
    else if (live->rx_req != NULL)
        live->rx_req = r;
}

static void hlx_live_send_all(hlx_liveness_t *live)
{
    int r, me = live->net->rank;

    for (r = 0; r < live->net->size; r++) {
        hlx_live_peer_t *p = &live->peers[r];
        ucp_request_param_t prm;
        ucs_status_ptr_t q;
        if (live->eps[r] == NULL || p->inflight || atomic_load(&live->failed[r]))
            continue;
        prm.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        prm.cb.send = hlx_live_send_cb;
        prm.user_data = p;
        q = ucp_tag_send_nbx(live->eps[r], &live->my_rank, sizeof(live->my_rank),
                             HLX_HB_TAG | (uint64_t)me, &prm);
        if (UCS_PTR_IS_PTR(q))
            p->inflight = 1;
        else if (UCS_PTR_IS_ERR(q))
            atomic_store(&live->failed[r], 1);
    }
}

/* Drains every heartbeat that arrived, keeping one receive posted. */
static void hlx_live_drain(hlx_liveness_t *live)
{
    int n, rounds = 0;

    do {
        if (live->rx_req == NULL)
            hlx_live_post_recv(live);
        n = (int)ucp_worker_progress(live->worker);
    } while ((n > 0 || live->rx_req == NULL) && ++rounds < 10000);
}

/* Sleeps ns nanoseconds or until hlx_liveness_stop, whichever is first: a rank's exit
 * does not wait out the rest of a 50 ms nap in pthread_join. */
static void hlx_live_nap(hlx_liveness_t *live, int64_t ns)
{
    int64_t until = hlx_live_now_ns() + ns;
    struct timespec ts = { (time_t)(until / 1000000000), (long)(until % 1000000000) };

    pthread_mutex_lock(&live->lock);
    while (!atomic_load(&live->stop) &&
           pthread_cond_timedwait(&live->wake, &live->lock, &ts) == 0)
        ;
    pthread_mutex_unlock(&live->lock);
}

static void *hlx_live_main(void *arg)
{
    hlx_liveness_t *live = arg;
    int64_t next = hlx_live_now_ns();
    int64_t nap = live->interval_ns / 4 < 50000000 ? live->interval_ns / 4 : 50000000;

    while (!atomic_load(&live->stop)) {
        if (hlx_live_now_ns() >= next && !atomic_load(&live->quiet)) {
            hlx_live_send_all(live);
            next += live->interval_ns;
            if (next < hlx_live_now_ns())
                next = hlx_live_now_ns() + live->interval_ns;
        }
        hlx_live_drain(live);
        atomic_store(&live->drained_ns, hlx_live_now_ns());
        hlx_live_nap(live, nap);
    }
    return NULL;
}

/* Same host only: the shared-memory transports (no listener); otherwise UCX's own choice
 * with peer-failure reporting, which also names a killed peer at once. */
static hlx_status_t hlx_live_open(hlx_liveness_t *live, int one_host)
{
    hlx_comm_net_t *net = live->net;
    ucp_config_t *config;
    ucp_worker_params_t wparams;
    ucs_status_t s = UCS_OK;

    if (hlx_ucx_config_read("heartbeat ", &config) != HLX_OK)
        return HLX_ERR_TRANSPORT;
    if (one_host)
        s = hlx_ucx_config_local(config, net->shm_tls);
    if (s == UCS_OK)
        s = hlx_ucx_init_tag(config, one_host ? net->shm_tls : NULL, net->size,
                             &live->context);
    ucp_config_release(config);
    if (s != UCS_OK) {
        hlx_error("transport: heartbeat ucp_init: %s", ucs_status_string(s));
        return HLX_ERR_TRANSPORT;
    }
    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    s = ucp_worker_create(live->context, &wparams, &live->worker);
    if (s != UCS_OK) {
        hlx_error("transport: heartbeat ucp_worker_create: %s", ucs_status_string(s));
        ucp_cleanup(live->context);
        live->context = NULL;
        return HLX_ERR_TRANSPORT;
    }
    return HLX_OK;
}

/* Worker addresses through the bootstrap (lengths, then padded addresses), then an
 * endpoint to every peer. */
static hlx_status_t hlx_live_connect(hlx_liveness_t *live, int one_host)
{
    hlx_comm_net_t *net = live->net;
    ucp_address_t *addr = NULL;
    size_t addr_len = 0, maxlen = 0;
    uint32_t *lens = NULL;
    char *all = NULL;
    hlx_status_t st;
    ucs_status_t s;
    int r;

    s = ucp_worker_get_address(live->worker, &addr, &addr_len);
    if (s != UCS_OK) {
        hlx_error("transport: heartbeat worker address: %s", ucs_status_string(s));
        return HLX_ERR_TRANSPORT;
    }
    lens = calloc((size_t)net->size, sizeof(*lens));
    if (lens == NULL) {
        st = HLX_ERR_NOMEM;
        goto out;
    }
    st = hlx_comm_allgather_blobs(net->boot, "hb", net->size, addr, addr_len, lens, &all,
                                  &maxlen);
    if (st != HLX_OK)
        goto out;
    for (r = 0; r < net->size; r++) {
        ucp_ep_params_t ep;
        if (r == net->rank)
            continue;
        memset(&ep, 0, sizeof(ep));
        ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep.address = (const ucp_address_t *)(all + (size_t)r * maxlen);
        ep.err_mode = one_host ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER;
        ep.err_handler.cb = hlx_live_ep_error;
        ep.err_handler.arg = &live->peers[r];
        s = ucp_ep_create(live->worker, &ep, &live->eps[r]);
        if (s != UCS_OK) {
            hlx_error("transport: heartbeat endpoint to rank %d: %s", r,
                      ucs_status_string(s));
            st = HLX_ERR_TRANSPORT;
            goto out;
        }
    }
out:
    ucp_worker_release_address(live->worker, addr);
    free(all);
    free(lens);
    return st;
}

/* The nap's mutex and condition variable, the latter on the monotonic clock (the nap's
 * deadline is hlx_live_now_ns's). */
static hlx_status_t hlx_live_sync_init(hlx_liveness_t *live)
{
    pthread_condattr_t attr;
    int ok;

    if (pthread_condattr_init(&attr) != 0)
        return HLX_ERR_NOMEM;
    ok = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
         pthread_cond_init(&live->wake, &attr) == 0;
    pthread_condattr_destroy(&attr);
    if (!ok)
        return HLX_ERR_INTERNAL;
    if (pthread_mutex_init(&live->lock, NULL) != 0) {
        pthread_cond_destroy(&live->wake);
        return HLX_ERR_INTERNAL;
    }
    live->sync = 1;
    return HLX_OK;
}

hlx_status_t hlx_liveness_start(hlx_comm_net_t *net, double interval_s, double timeout_s,
                                hlx_liveness_t **live_p)
{
    hlx_liveness_t *live;
    hlx_status_t st;
    int64_t now;
    int r, one_host = 1;

    for (r = 0; r < net->size; r++)
        if (net->peer_be[r] != NULL && net->peer_be[r]->path != HLX_PATH_SHM)
            one_host = 0;
    for (r = 0; r < net->size; r++)
        if (strcmp(net->peers[r].host, net->peers[net->rank].host))
            one_host = 0;
    live = calloc(1, sizeof(*live));
    if (live == NULL)
        return HLX_ERR_NOMEM;
    live->net = net;
    live->my_rank = net->rank;
    if ((st = hlx_live_sync_init(live)) != HLX_OK) {
        free(live);
        return st;
    }
    live->eps = calloc((size_t)net->size, sizeof(*live->eps));
    live->peers = calloc((size_t)net->size, sizeof(*live->peers));
    live->last_ns = calloc((size_t)net->size, sizeof(*live->last_ns));
    live->failed = calloc((size_t)net->size, sizeof(*live->failed));
    if (!live->eps || !live->peers || !live->last_ns || !live->failed) {
        st = HLX_ERR_NOMEM;
        goto err;
    }
    live->interval_ns = (int64_t)(interval_s * 1e9);
    live->timeout_ns = (int64_t)(timeout_s * 1e9);
    live->timeout_s = timeout_s;
    for (r = 0; r < net->size; r++) {
        live->peers[r].live = live;
        live->peers[r].rank = r;
    }
    st = hlx_live_open(live, one_host);
    if (st == HLX_OK)
        st = hlx_live_connect(live, one_host);
    if (st != HLX_OK)
        goto err;
    now = hlx_live_now_ns();
    for (r = 0; r < net->size; r++)
        atomic_store(&live->last_ns[r], now);
    atomic_store(&live->drained_ns, now);
    if (pthread_create(&live->thread, NULL, hlx_live_main, live) != 0) {
        hlx_error("transport: cannot start the heartbeat thread");
        st = HLX_ERR_INTERNAL;
        goto err;
    }
    live->started = 1;
    hlx_debug(HLX_SUB_NET, "heartbeats every %g s, peers silent for %g s are lost",
              interval_s, timeout_s);
    *live_p = live;
    return HLX_OK;
err:
    hlx_liveness_stop(live);
    return st;
}

int hlx_liveness_lost(hlx_liveness_t *live, int w, double *silent_s_p)
{
    int64_t now = hlx_live_now_ns();
    int64_t silent = now - atomic_load(&live->last_ns[w]);

    *silent_s_p = (double)silent * 1e-9;
    if (w == live->net->rank)
        return 0;
    if (atomic_load(&live->failed[w]))
        return 1;
    /* Only a verdict while this rank's own thread keeps up: on an overloaded machine it
     * may itself not have run, and then every peer would look silent. */
    return silent > live->timeout_ns &&
           now - atomic_load(&live->drained_ns) < live->interval_ns;
}

void hlx_liveness_quiet(hlx_liveness_t *live)
{
    atomic_store(&live->quiet, 1);
}

double hlx_liveness_timeout(const hlx_liveness_t *live)
{
    return live->timeout_s;
}

/* Joins the thread, then closes the endpoints without flushing (peers may be gone). */
void hlx_liveness_stop(hlx_liveness_t *live)
{
    int r, i;

    if (live == NULL)
        return;
    if (live->started) {
        pthread_mutex_lock(&live->lock);
        atomic_store(&live->stop, 1);
        pthread_cond_signal(&live->wake);
        pthread_mutex_unlock(&live->lock);
        pthread_join(live->thread, NULL);
    }
    if (live->worker != NULL) {
        /* Heartbeats still in flight are received, not left to UCX's destructor. */
        int64_t until = hlx_live_now_ns() + 2000000;
        if (live->started)
            while (hlx_live_now_ns() < until)
                hlx_live_drain(live);
        if (live->rx_req != NULL)
            ucp_request_cancel(live->worker, live->rx_req);
        for (r = 0; live->eps && r < live->net->size; r++) {
            ucp_request_param_t prm;
            ucs_status_ptr_t p;
            if (live->eps[r] == NULL)
                continue;
            prm.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            prm.flags = UCP_EP_CLOSE_FLAG_FORCE;
            p = ucp_ep_close_nbx(live->eps[r], &prm);
            for (i = 0; UCS_PTR_IS_PTR(p) && i < 100000 &&
                        ucp_request_check_status(p) == UCS_INPROGRESS; i++)
                ucp_worker_progress(live->worker);
            if (UCS_PTR_IS_PTR(p))
                ucp_request_free(p);
        }
        for (i = 0; i < 100 && ucp_worker_progress(live->worker); i++)
            ;
        ucp_worker_destroy(live->worker);
    }
    if (live->context != NULL)
        ucp_cleanup(live->context);
    free(live->eps);
    free(live->peers);
    free((void *)live->last_ns);
    free((void *)live->failed);
    if (live->sync) {
        pthread_cond_destroy(&live->wake);
        pthread_mutex_destroy(&live->lock);
    }
    free(live);
}
