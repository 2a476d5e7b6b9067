/* NCCL communicators (hlx_nccl.h): ids through the PMIx bootstrap, non-blocking
 * communicators polled against a deadline (ncclCommGetAsyncError, ncclCommAbort), the
 * all-to-all as grouped ncclSend/ncclRecv, all-reduce and all-gather on a CUDA stream. */
#define _GNU_SOURCE
#include "hlx_nccl.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct hlx_nccl {
    ncclComm_t comm;
    int        rank, size;
    double     timeout_s;
    int        broken;   /* aborted: every later call fails at once */
    char       err[256];
};

/* One record per world rank in the id exchange. */
typedef struct hlx_nccl_rec {
    int32_t      color, key, leader;
    ncclUniqueId id;
} hlx_nccl_rec_t;

static double hlx_nccl_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int hlx_nccl_version(void)
{
    int v = 0;

    if (ncclGetVersion(&v) != ncclSuccess)
        return 0;
    return v;
}

int hlx_nccl_compiled(void)
{
    return 1;
}

int hlx_nccl_rank(const hlx_nccl_t *c) { return c->rank; }
int hlx_nccl_size(const hlx_nccl_t *c) { return c->size; }
const char *hlx_nccl_error(const hlx_nccl_t *c) { return c->err; }

static hlx_status_t hlx_nccl_fail(hlx_nccl_t *c, hlx_status_t st, const char *what,
                                  ncclResult_t r)
{
    const char *last = c->comm != NULL ? ncclGetLastError(c->comm) : NULL;

    snprintf(c->err, sizeof(c->err), "nccl: %s: %s%s%s", what, ncclGetErrorString(r),
             last && last[0] ? ": " : "", last ? last : "");
    if (c->comm != NULL && !c->broken) {
        (void)ncclCommAbort(c->comm); /* frees the communicator; nothing waits on it again */
        c->comm = NULL;
    }
    c->broken = 1;
    return st;
}

/* Polls the communicator until its last operation left ncclInProgress, by the deadline. */
static hlx_status_t hlx_nccl_settle(hlx_nccl_t *c, const char *what, ncclResult_t r)
{
    double deadline = hlx_nccl_now() + c->timeout_s;

    while (r == ncclInProgress) {
        if (hlx_nccl_now() > deadline)
            return hlx_nccl_fail(c, HLX_ERR_TIMEOUT, what, ncclInProgress);
        sched_yield();
        if (ncclCommGetAsyncError(c->comm, &r) != ncclSuccess)
            return hlx_nccl_fail(c, HLX_ERR_TRANSPORT, what, ncclInternalError);
    }
    return r == ncclSuccess ? HLX_OK : hlx_nccl_fail(c, HLX_ERR_TRANSPORT, what, r);
}

hlx_status_t hlx_nccl_create(hlx_boot_t *boot, int color, int key, double timeout_s,
                             hlx_nccl_t **c_p, char *err, size_t errlen)
{
    hlx_boot_info_t info;
    hlx_nccl_rec_t me, *all = NULL;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    hlx_nccl_t *c;
    char k[64];
    int r, lead = -1, n = 0, pos = 0, dev = -1;
    hlx_status_t st;

    *c_p = NULL;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(err, errlen, "nccl: no CUDA device selected");
        return HLX_ERR_INTERNAL;
    }
    hlx_boot_get_info(boot, &info);
    c = calloc(1, sizeof(*c));
    all = calloc((size_t)info.size, sizeof(*all));
    if (c == NULL || all == NULL) {
        free(c);
        free(all);
        return HLX_ERR_NOMEM;
    }
    c->timeout_s = timeout_s > 0 ? timeout_s : 30.0;
    /* The group's leader is its member with the smallest (key, world rank); it makes the id
     * and every member finds it in one world all-gather. The leader is found from a first
     * all-gather of (color, key), so that only leaders call ncclGetUniqueId. */
    memset(&me, 0, sizeof(me));
    me.color = color, me.key = key;
    snprintf(k, sizeof(k), "hlx.nccl.key.%d", hlx_boot_calls(boot));
    st = hlx_boot_allgather(boot, k, &me, sizeof(me), all);
    if (st != HLX_OK) {
        snprintf(err, errlen, "nccl: exchanging group keys failed: %s", hlx_status_str(st));
        goto fail;
    }
    for (r = 0; r < info.size; r++) {
        if (all[r].color != color)
            continue;
        if (lead < 0 || all[r].key < all[lead].key)
            lead = r;
        if (all[r].key < key || (all[r].key == key && r < info.rank))
            pos++;
        n++;
    }
    me.leader = color >= 0 && lead == info.rank; /* color < 0: in no group */
    if (me.leader) {
        ncclResult_t res = ncclGetUniqueId(&me.id);
        if (res != ncclSuccess) {
            snprintf(err, errlen, "nccl: ncclGetUniqueId: %s", ncclGetErrorString(res));
            st = HLX_ERR_TRANSPORT;
            /* still take part in the all-gather below so that the others do not wait */
        }
    }
    snprintf(k, sizeof(k), "hlx.nccl.id.%d", hlx_boot_calls(boot));
    {
        hlx_status_t st2 = hlx_boot_allgather(boot, k, &me, sizeof(me), all);
        if (st2 != HLX_OK) {
            snprintf(err, errlen, "nccl: exchanging the unique id failed: %s",
                     hlx_status_str(st2));
            st = st2;
        }
    }
    if (st != HLX_OK)
        goto fail;
    if (color < 0) { /* took part in the exchanges only */
        free(all);
        free(c);
        return HLX_OK;
    }
    c->rank = pos, c->size = n;
    cfg.blocking = 0; /* every wait below is ours, with a deadline */
    {
        ncclResult_t res = ncclCommInitRankConfig(&c->comm, n, all[lead].id, pos, &cfg);
        if (res != ncclSuccess && res != ncclInProgress) {
            snprintf(err, errlen, "nccl: ncclCommInitRankConfig (rank %d of %d, device %d): %s",
                     pos, n, dev, ncclGetErrorString(res));
            c->comm = NULL;
            st = HLX_ERR_TRANSPORT;
            goto fail;
        }
        st = hlx_nccl_settle(c, "ncclCommInitRankConfig", res);
        if (st != HLX_OK) {
            snprintf(err, errlen, "%s (rank %d of %d, device %d, %.1f s deadline)", c->err,
                     pos, n, dev, c->timeout_s);
            goto fail;
        }
    }
    free(all);
    *c_p = c;
    return HLX_OK;
fail:
    free(all);
    hlx_nccl_destroy(c);
    return st;
}

hlx_status_t hlx_nccl_alltoallv(hlx_nccl_t *c, const void *sbuf, const size_t *scounts,
                                const size_t *sdispls, void *rbuf, const size_t *rcounts,
                                const size_t *rdispls, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    ncclResult_t r;
    int p;

    if (c->broken)
        return HLX_ERR_TRANSPORT;
    r = ncclGroupStart();
    for (p = 0; p < c->size && r == ncclSuccess; p++) {
        if (rcounts[p])
            r = ncclRecv((char *)rbuf + rdispls[p], rcounts[p], ncclInt8, p, c->comm, s);
        if ((r == ncclSuccess || r == ncclInProgress) && scounts[p])
            r = ncclSend((const char *)sbuf + sdispls[p], scounts[p], ncclInt8, p, c->comm, s);
        if (r == ncclInProgress)
            r = ncclSuccess;
    }
    {
        ncclResult_t e = ncclGroupEnd(); /* ends the group even after a failed call */
        if (r == ncclSuccess)
            r = e;
    }
    return hlx_nccl_settle(c, "alltoallv (grouped send/recv)", r);
}

hlx_status_t hlx_nccl_allreduce_sum_f32(hlx_nccl_t *c, float *buf, size_t count, void *stream)
{
    if (c->broken)
        return HLX_ERR_TRANSPORT;
    return hlx_nccl_settle(c, "allreduce",
                           ncclAllReduce(buf, buf, count, ncclFloat32, ncclSum, c->comm,
                                         (cudaStream_t)stream));
}

hlx_status_t hlx_nccl_allgather(hlx_nccl_t *c, const void *in, size_t bytes, void *out,
                                void *stream)
{
    if (c->broken)
        return HLX_ERR_TRANSPORT;
    return hlx_nccl_settle(c, "allgather",
                           ncclAllGather(in, out, bytes, ncclInt8, c->comm,
                                         (cudaStream_t)stream));
}

hlx_status_t hlx_nccl_wait(hlx_nccl_t *c, void *stream)
{
    double deadline = hlx_nccl_now() + c->timeout_s;

    if (c->broken)
        return HLX_ERR_TRANSPORT;
    for (;;) {
        cudaError_t e = cudaStreamQuery((cudaStream_t)stream);
        ncclResult_t a = ncclSuccess;
        if (e == cudaSuccess)
            return HLX_OK;
        if (e != cudaErrorNotReady) {
            (void)cudaGetLastError();
            snprintf(c->err, sizeof(c->err), "nccl: the stream failed: %s",
                     cudaGetErrorString(e));
            return hlx_nccl_fail(c, HLX_ERR_TRANSPORT, "stream", ncclUnhandledCudaError);
        }
        if (ncclCommGetAsyncError(c->comm, &a) != ncclSuccess ||
            (a != ncclSuccess && a != ncclInProgress))
            return hlx_nccl_fail(c, HLX_ERR_TRANSPORT, "asynchronous error", a);
        if (hlx_nccl_now() > deadline)
            return hlx_nccl_fail(c, HLX_ERR_TIMEOUT, "wait past the deadline", ncclInProgress);
        sched_yield();
    }
}

void hlx_nccl_destroy(hlx_nccl_t *c)
{
    if (c == NULL)
        return;
    if (c->comm != NULL && !c->broken) {
        ncclResult_t r = ncclCommFinalize(c->comm);
        if (hlx_nccl_settle(c, "ncclCommFinalize", r) == HLX_OK)
            (void)ncclCommDestroy(c->comm);
        /* on failure settle aborted (and freed) it */
    }
    free(c);
}
