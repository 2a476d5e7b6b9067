/* The CUDA execution backend: the KV cache in device memory (cudaMalloc), the other buffers
 * in managed memory (the host-side schedule reads them after a queue sync), one stream as
 * the queue, a ring of cudaEvents, and every layer op through kernels/cuda. */
#include "hlx_backend_cuda.h"
#include "hlx_kernels_cuda.h"
#include "hlx_log.h"

#include <helix/device.h>

#include <cuda_runtime.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HLX_CUDA_EVENTS 64 /* events in the ring: a record reuses the oldest */

struct hlx_be_queue {
    cudaStream_t s;
};

struct hlx_be_event {
    cudaEvent_t e;
};

typedef struct hlx_cuda_state {
    int            device;    /* -1 until hlx_backend_cuda_open */
    double         timeout_s; /* deadline of every host wait on the device */
    float         *work;      /* attention split partials (device) */
    size_t         work_n;
    int           *tokens;    /* argmax output (device) */
    int            tokens_n;
    hlx_be_event_t ev[HLX_CUDA_EVENTS];
    int            ev_n, ev_next;
    /* the phase clock (hlx_backend_cuda_clock): timing events recorded this step, each
     * starting the interval of its phase (-1: none), created as needed and reused */
    cudaEvent_t   *mk_ev;
    int           *mk_ph;
    int            mk_n, mk_made, mk_cap;
} hlx_cuda_state_t;

static hlx_cuda_state_t *hlx_cu_st(hlx_backend_t *be)
{
    return (hlx_cuda_state_t *)be->priv;
}

/* A CUDA call's status, its words kept for the step's error message (hlx_cuda_note) */
static hlx_status_t hlx_cu_err_at(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return HLX_OK;
    (void)cudaGetLastError(); /* clear a sticky launch error's record, not the context */
    return hlx_cuda_note((int)e, what, NULL);
}
#define hlx_cu_err(e) hlx_cu_err_at((e), __func__)

static cudaStream_t hlx_cu_stream(hlx_be_queue_t *q)
{
    return q != NULL ? q->s : (cudaStream_t)0;
}

static double hlx_cu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Polls until the stream (or event) is done, at most the backend's deadline: a hung kernel
 * is reported (HLX_ERR_TIMEOUT) instead of blocking the rank forever. */
static hlx_status_t hlx_cu_wait(hlx_backend_t *be, cudaStream_t s, cudaEvent_t ev)
{
    hlx_cuda_state_t *cs = hlx_cu_st(be);
    double deadline = hlx_cu_now() + (cs && cs->timeout_s > 0 ? cs->timeout_s : 600.0);
    unsigned spins = 0;

    for (;;) {
        cudaError_t e = ev != NULL ? cudaEventQuery(ev) : cudaStreamQuery(s);
        if (e == cudaSuccess)
            return HLX_OK;
        if (e != cudaErrorNotReady) {
            hlx_error("cuda: waiting on the device failed: %s", cudaGetErrorString(e));
            return hlx_cu_err(e);
        }
        if ((++spins & 255) == 0) {
            if (hlx_cu_now() > deadline) {
                hlx_error("cuda: device work did not finish within %.0f s",
                          cs && cs->timeout_s > 0 ? cs->timeout_s : 600.0);
                (void)hlx_cuda_note(0, __func__, "device work did not finish in time");
                return HLX_ERR_TIMEOUT;
            }
            sched_yield();
        }
    }
}

/* ---- memory */

static hlx_status_t cu_alloc(hlx_backend_t *be, size_t bytes, int huge, void **p_p)
{
    void *p = NULL;
    cudaError_t e;
    hlx_status_t st;

    if (bytes == 0)
        bytes = 1;
    /* The KV cache lives in device memory; everything else is managed, so that the host
     * side (transport, checks) reads it after a queue sync, and kernels at HBM speed. */
    e = huge ? cudaMalloc(&p, bytes) : cudaMallocManaged(&p, bytes, cudaMemAttachGlobal);
    if (e != cudaSuccess)
        return hlx_cu_err(e);
    /* zeroed, as the host backend's memory, before the host may touch it */
    st = hlx_cu_err(cudaMemsetAsync(p, 0, bytes, (cudaStream_t)0));
    if (st == HLX_OK)
        st = hlx_cu_wait(be, (cudaStream_t)0, NULL);
    if (st != HLX_OK) {
        (void)cudaFree(p);
        return st;
    }
    *p_p = p;
    return HLX_OK;
}

static void cu_free(hlx_backend_t *be, void *p, int huge)
{
    (void)be; (void)huge;
    if (p != NULL)
        (void)cudaFree(p);
}

/* Page-locked host memory: copies to and from it are DMA at full PCIe speed and
 * asynchronous (the transport's staging for a UCX without CUDA memory). */
static hlx_status_t cu_palloc(hlx_backend_t *be, size_t bytes, void **p_p)
{
    void *p = NULL;
    cudaError_t e;

    (void)be;
    e = cudaMallocHost(&p, bytes ? bytes : 1);
    if (e != cudaSuccess)
        return hlx_cu_err(e);
    memset(p, 0, bytes ? bytes : 1);
    *p_p = p;
    return HLX_OK;
}

static void cu_pfree(hlx_backend_t *be, void *p)
{
    (void)be;
    if (p != NULL)
        (void)cudaFreeHost(p);
}

/* Host to backend. The source may be reused on return (cudaMemcpyAsync from pageable
 * memory returns once the source is staged), but pinned memory is read by the DMA as the
 * stream gets there: the caller syncs before writing it again. */
static hlx_status_t cu_copy_to(hlx_backend_t *be, hlx_be_queue_t *q, void *dst,
                               const void *src, size_t bytes)
{
    (void)be;
    if (bytes == 0)
        return HLX_OK;
    return hlx_cu_err(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, hlx_cu_stream(q)));
}

/* Backend to host: complete on return (the queue's earlier work included). */
static hlx_status_t cu_copy_from(hlx_backend_t *be, hlx_be_queue_t *q, void *dst,
                                 const void *src, size_t bytes)
{
    hlx_status_t st;

    if (bytes == 0)
        return HLX_OK;
    st = hlx_cu_err(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, hlx_cu_stream(q)));
    return st == HLX_OK ? hlx_cu_wait(be, hlx_cu_stream(q), NULL) : st;
}

/* Strided rows between two backend buffers: one 2-D copy on the queue. */
static hlx_status_t cu_copy_rows(hlx_backend_t *be, hlx_be_queue_t *q, float *dst, size_t ldd,
                                 const float *src, size_t lds, int rows, int n)
{
    (void)be;
    if (rows < 0 || n < 0 || ldd < (size_t)n || lds < (size_t)n ||
        ldd > SIZE_MAX / sizeof(float) || lds > SIZE_MAX / sizeof(float))
        return HLX_ERR_INVALID;
    if (rows == 0 || n == 0)
        return HLX_OK;
    return hlx_cu_err(cudaMemcpy2DAsync(dst, ldd * sizeof(float), src, lds * sizeof(float),
                                        (size_t)n * sizeof(float), (size_t)rows,
                                        cudaMemcpyDefault, hlx_cu_stream(q)));
}

/* ---- queue and events */

static hlx_status_t cu_qcreate(hlx_backend_t *be, hlx_be_queue_t **q_p)
{
    hlx_be_queue_t *q;
    cudaError_t e;

    if (hlx_cu_st(be) == NULL || hlx_cu_st(be)->device < 0)
        return HLX_ERR_INVALID; /* hlx_backend_cuda_open first */
    q = calloc(1, sizeof(*q));
    if (q == NULL)
        return HLX_ERR_NOMEM;
    e = cudaStreamCreateWithFlags(&q->s, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        free(q);
        return hlx_cu_err(e);
    }
    *q_p = q;
    return HLX_OK;
}

static void cu_qdestroy(hlx_backend_t *be, hlx_be_queue_t *q)
{
    if (q == NULL)
        return;
    (void)hlx_cu_wait(be, q->s, NULL);
    (void)cudaStreamDestroy(q->s);
    free(q);
}

static hlx_status_t cu_qsync(hlx_backend_t *be, hlx_be_queue_t *q)
{
    return hlx_cu_wait(be, hlx_cu_stream(q), NULL);
}

/* Events come from a ring owned by the backend (the table has no destroy): an event stays
 * valid until HLX_CUDA_EVENTS later records. */
static hlx_status_t cu_evrec(hlx_backend_t *be, hlx_be_queue_t *q, hlx_be_event_t **ev_p)
{
    hlx_cuda_state_t *cs = hlx_cu_st(be);
    hlx_be_event_t *ev;

    if (cs == NULL)
        return HLX_ERR_INVALID;
    ev = &cs->ev[cs->ev_next];
    if (cs->ev_next >= cs->ev_n) {
        hlx_status_t st = hlx_cu_err(cudaEventCreateWithFlags(&ev->e, cudaEventDisableTiming));
        if (st != HLX_OK)
            return st;
        cs->ev_n++;
    }
    cs->ev_next = (cs->ev_next + 1) % HLX_CUDA_EVENTS;
    *ev_p = ev;
    return hlx_cu_err(cudaEventRecord(ev->e, hlx_cu_stream(q)));
}

static hlx_status_t cu_evsync(hlx_backend_t *be, hlx_be_event_t *ev)
{
    return ev == NULL ? HLX_OK : hlx_cu_wait(be, NULL, ev->e);
}

/* ---- layer operations */

static hlx_status_t cu_rmsnorm(hlx_backend_t *be, hlx_be_queue_t *q, float *y, const float *x,
                               const float *w, int rows, int n, float eps)
{
    (void)be;
    return hlx_cuda_rmsnorm_rows(y, x, w, rows, n, eps, hlx_cu_stream(q));
}

static hlx_status_t cu_rmsnorm_heads(hlx_backend_t *be, hlx_be_queue_t *q, float *x, int rows,
                                     size_t ld, int nheads, int hd, const float *w, float eps)
{
    (void)be;
    return hlx_cuda_rmsnorm_heads(x, rows, ld, nheads, hd, w, eps, hlx_cu_stream(q));
}

static hlx_status_t cu_sumsq_rows(hlx_backend_t *be, hlx_be_queue_t *q, const float *x,
                                  size_t ld, int rows, int n, float *ss)
{
    (void)be;
    return hlx_cuda_sumsq_rows(x, ld, rows, n, ss, hlx_cu_stream(q));
}

static hlx_status_t cu_rmsnorm_ss(hlx_backend_t *be, hlx_be_queue_t *q, float *x, size_t ld,
                                  int rows, int n, const float *w, const float *ss, int total,
                                  float eps)
{
    (void)be;
    return hlx_cuda_rmsnorm_ss(x, ld, rows, n, w, ss, total, eps, hlx_cu_stream(q));
}

static hlx_status_t cu_gemm(hlx_backend_t *be, hlx_be_queue_t *q, int M, int N, int K,
                            const float *x, const void *w, hlx_dtype_t w_dtype, float *y,
                            int accumulate)
{
    (void)be;
    return hlx_cuda_gemm(M, N, K, x, w, w_dtype, y, accumulate, hlx_cu_stream(q));
}

static hlx_status_t cu_gemm_batched(hlx_backend_t *be, hlx_be_queue_t *q,
                                    const hlx_gemm_batch_desc_t *d)
{
    (void)be;
    return hlx_cuda_gemm_batched(d->batch, d->M, d->N, d->K, d->x, d->ldx, d->sx, d->w, d->sw,
                                 d->w_dtype, d->y, d->ldy, d->sy, d->accumulate,
                                 hlx_cu_stream(q));
}

static hlx_status_t cu_rope(hlx_backend_t *be, hlx_be_queue_t *q, float *x, int rows,
                            size_t ld, int nheads, int hd, int rot_dim, int64_t pos,
                            const hlx_rope_tab_t *r)
{
    (void)be;
    return hlx_cuda_rope_rows(x, rows, ld, nheads, hd, rot_dim, pos, r, hlx_cu_stream(q));
}

static hlx_status_t cu_append(hlx_backend_t *be, hlx_be_queue_t *q,
                              const hlx_kv_append_desc_t *d)
{
    (void)be;
    int h;

    if (d->layout.k_block > 1 || d->layout.v_block > 1)
        return HLX_ERR_INVALID; /* this backend stores KV in rows */
    for (h = 0; d->nan_seen != NULL && h < d->nheads; h++)
        d->nan_seen[d->shard0 + (size_t)h] = 1; /* the bytes stay on the device: unknown */
    return hlx_cuda_kv_append(d->kc, d->vc, d->kv_dtype, d->dk, d->dv, d->cap, d->shard0, d->t,
                              d->nheads, d->k_new, d->v_new, d->k_mul, d->v_mul,
                              hlx_cu_stream(q));
}

static hlx_status_t cu_scale(hlx_backend_t *be, hlx_be_queue_t *q, float *x, size_t n, float s)
{
    (void)be;
    return hlx_cuda_scale(x, n, s, hlx_cu_stream(q));
}

static hlx_status_t cu_attn(hlx_backend_t *be, hlx_be_queue_t *q, const hlx_attn_desc_t *d)
{
    hlx_cuda_state_t *cs = hlx_cu_st(be);
    int nsplit = hlx_cuda_attn_splits_desc(d);
    size_t need = hlx_cuda_attn_work_floats(d->group, d->dv, nsplit);

    if (cs == NULL || d->group < 1 || d->dv < 1)
        return HLX_ERR_INVALID;
    if (need > cs->work_n) {
        /* grows once per shape: the old area may still be read by queued work */
        hlx_status_t st = hlx_cu_wait(be, hlx_cu_stream(q), NULL);
        void *p = NULL;
        if (st != HLX_OK)
            return st;
        if (need > SIZE_MAX / sizeof(float))
            return HLX_ERR_INVALID;
        cudaFree(cs->work);
        cs->work = NULL, cs->work_n = 0;
        st = hlx_cu_err(cudaMalloc(&p, need * sizeof(float)));
        if (st != HLX_OK)
            return st;
        cs->work = p, cs->work_n = need;
    }
    return hlx_cuda_attn(d, nsplit, cs->work, hlx_cu_stream(q));
}

static hlx_status_t cu_pack(hlx_backend_t *be, hlx_be_queue_t *q, const hlx_xchg_desc_t *d,
                            const float *opart, const float *lsepart, float *sendbuf)
{
    int j;

    (void)be;
    for (j = 0; j < d->kvp; j++) {
        size_t per = (size_t)d->head_count[j] * (size_t)(d->dv + 1);
        hlx_status_t st = hlx_cuda_pack_peer(sendbuf + d->displ[j] + per * (size_t)d->b0,
                                             opart, lsepart, d->q_local, d->sub,
                                             d->head_first[j], d->head_count[j], d->dv, d->b0,
                                             d->b1, hlx_cu_stream(q));
        if (st != HLX_OK)
            return st;
    }
    return HLX_OK;
}

static hlx_status_t cu_unpack(hlx_backend_t *be, hlx_be_queue_t *q, const hlx_xchg_desc_t *d,
                              int cnt, int nb, const float *recvbuf, float *oparts,
                              float *lseparts)
{
    size_t per = (size_t)cnt * (size_t)(d->dv + 1), nh = (size_t)nb * (size_t)cnt;
    int j;

    (void)be;
    for (j = 0; j < d->kvp; j++) {
        hlx_status_t st = hlx_cuda_unpack_peer(oparts + (size_t)j * nh * (size_t)d->dv,
                                               lseparts + (size_t)j * nh,
                                               recvbuf + d->displ[j] + per * (size_t)d->b0,
                                               cnt, d->dv, d->b0, d->b1, hlx_cu_stream(q));
        if (st != HLX_OK)
            return st;
    }
    return HLX_OK;
}

static hlx_status_t cu_merge(hlx_backend_t *be, hlx_be_queue_t *q, int nparts, int nheads,
                             int dv, const float *o_parts, const float *lse_parts, float *o,
                             float *lse)
{
    (void)be;
    return hlx_cuda_merge(nparts, nheads, dv, o_parts, lse_parts, o, lse, hlx_cu_stream(q));
}

static hlx_status_t cu_add(hlx_backend_t *be, hlx_be_queue_t *q, float *x, const float *y,
                           size_t n)
{
    (void)be;
    return hlx_cuda_add(x, y, n, hlx_cu_stream(q));
}

static hlx_status_t cu_add_rows(hlx_backend_t *be, hlx_be_queue_t *q, float *x, size_t ld,
                                const float *b, int rows, int n)
{
    (void)be;
    return hlx_cuda_add_rows(x, ld, b, rows, n, hlx_cu_stream(q));
}

static hlx_status_t cu_layernorm(hlx_backend_t *be, hlx_be_queue_t *q, float *y,
                                 const float *x, const float *w, const float *b, int rows, int n,
                                 float eps)
{
    (void)be;
    return hlx_cuda_layernorm_rows(y, x, w, b, rows, n, eps, hlx_cu_stream(q));
}

static hlx_status_t cu_bias_act(hlx_backend_t *be, hlx_be_queue_t *q, float *x, size_t ld,
                                const float *b, int rows, int n, hlx_act_t kind)
{
    (void)be;
    if (kind != HLX_ACT_SILU && kind != HLX_ACT_GELU_TANH)
        return HLX_ERR_INVALID;
    return hlx_cuda_bias_act(x, ld, b, rows, n, kind == HLX_ACT_GELU_TANH, hlx_cu_stream(q));
}

static hlx_status_t cu_glu(hlx_backend_t *be, hlx_be_queue_t *q, float *act,
                           const float *gu, int rows, int n, hlx_act_t kind, float alpha,
                           float limit)
{
    (void)be;
    return hlx_cuda_glu_rows(act, gu, rows, n, (int)kind, alpha, limit, hlx_cu_stream(q));
}

static hlx_status_t cu_attn_sink(hlx_backend_t *be, hlx_be_queue_t *q, float *o,
                                 const float *lse, const float *sinks, int rows, int cnt, int dv)
{
    (void)be;
    return hlx_cuda_attn_sink(o, lse, sinks, rows, cnt, dv, hlx_cu_stream(q));
}

static hlx_status_t cu_pad(hlx_backend_t *be, hlx_be_queue_t *q, float *dst, int dcols,
                           const float *src, int scols, int rows, float fill, float cap)
{
    (void)be;
    return hlx_cuda_pad_rows(dst, dcols, src, scols, rows, fill, cap, hlx_cu_stream(q));
}

static hlx_status_t cu_gather(hlx_backend_t *be, hlx_be_queue_t *q, float *dst,
                              const float *src, const int *idx, int rows, int n)
{
    (void)be;
    return hlx_cuda_gather_rows(dst, src, idx, rows, n, hlx_cu_stream(q));
}

static hlx_status_t cu_scatter(hlx_backend_t *be, hlx_be_queue_t *q, float *y, const float *x,
                               const int *idx, const float *w, int rows, int n)
{
    (void)be;
    return hlx_cuda_scatter_add(y, x, idx, w, rows, n, hlx_cu_stream(q));
}

/* tokens is host memory (the schedule's token ids): the one host sync of a step. */
static hlx_status_t cu_argmax(hlx_backend_t *be, hlx_be_queue_t *q, const float *logits,
                              int n, int B, int vocab, int pad, int *tokens)
{
    hlx_cuda_state_t *cs = hlx_cu_st(be);
    hlx_status_t st;

    if (cs == NULL || B < 0)
        return HLX_ERR_INVALID;
    if (B > cs->tokens_n) {
        void *p = NULL;
        st = hlx_cu_wait(be, hlx_cu_stream(q), NULL);
        if (st != HLX_OK)
            return st;
        cudaFree(cs->tokens);
        cs->tokens = NULL, cs->tokens_n = 0;
        st = hlx_cu_err(cudaMalloc(&p, sizeof(int) * (size_t)B));
        if (st != HLX_OK)
            return st;
        cs->tokens = p, cs->tokens_n = B;
    }
    st = hlx_cuda_argmax(logits, n, B, vocab, pad, cs->tokens, hlx_cu_stream(q));
    if (st == HLX_OK && B > 0)
        st = cu_copy_from(be, q, tokens, cs->tokens, sizeof(int) * (size_t)B);
    return st;
}

static const hlx_backend_ops_t hlx_backend_cuda = {
    .name = "cuda",
    .mem_alloc = cu_alloc, .mem_free = cu_free,
    .pinned_alloc = cu_palloc, .pinned_free = cu_pfree,
    .copy_to = cu_copy_to, .copy_from = cu_copy_from, .copy_rows = cu_copy_rows,
    .queue_create = cu_qcreate, .queue_destroy = cu_qdestroy, .queue_sync = cu_qsync,
    .event_record = cu_evrec, .event_sync = cu_evsync,
    .rmsnorm = cu_rmsnorm, .rmsnorm_heads = cu_rmsnorm_heads, .sumsq_rows = cu_sumsq_rows,
    .rmsnorm_ss = cu_rmsnorm_ss, .gemm = cu_gemm,
    .gemm_batched = cu_gemm_batched,
    .rope = cu_rope, .kv_append = cu_append,
    .attn = cu_attn, .pack = cu_pack, .unpack = cu_unpack, .merge = cu_merge,
    .add = cu_add, .scale = cu_scale, .add_rows = cu_add_rows, .glu = cu_glu, .attn_sink = cu_attn_sink, .pad_rows = cu_pad,
    .layernorm = cu_layernorm, .bias_act = cu_bias_act,
    .gather_rows = cu_gather,
    .scatter_add = cu_scatter, .argmax = cu_argmax,
};

const hlx_backend_ops_t *hlx_backend_cuda_ops(void)
{
    return &hlx_backend_cuda;
}

int hlx_backend_cuda_devices(char *why, size_t whylen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);

    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(why, whylen, "%s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
        return 0;
    }
    if (n < 1)
        snprintf(why, whylen, "no CUDA device visible");
    return n;
}

hlx_status_t hlx_backend_cuda_init(hlx_backend_t *be, char *why, size_t whylen)
{
    hlx_cuda_state_t *cs;

    if (hlx_backend_cuda_devices(why, whylen) < 1)
        return HLX_ERR_UNSUPPORTED;
    cs = calloc(1, sizeof(*cs));
    if (cs == NULL)
        return HLX_ERR_NOMEM;
    cs->device = -1;
    be->priv = cs;
    /* The device kernels read KV in rows, whatever the CPU variant's blocks. */
    be->k.kv_layout.k_block = 1;
    be->k.kv_layout.v_block = 1;
    return HLX_OK;
}

hlx_status_t hlx_backend_cuda_open(hlx_backend_t *be, int dev, double timeout_s, char *why,
                                   size_t whylen)
{
    hlx_cuda_state_t *cs = hlx_cu_st(be);
    int n = hlx_backend_cuda_devices(why, whylen);
    cudaError_t e;

    if (cs == NULL)
        return HLX_ERR_INVALID;
    if (dev < 0 || dev >= n) {
        if (n > 0)
            snprintf(why, whylen, "device %d, but %d visible", dev, n);
        return HLX_ERR_UNSUPPORTED;
    }
    e = cudaSetDevice(dev);
    if (e == cudaSuccess)
        e = cudaFree(NULL); /* creates the context now, not inside the first step */
    if (e != cudaSuccess) {
        snprintf(why, whylen, "device %d: %s", dev, cudaGetErrorString(e));
        (void)cudaGetLastError();
        return HLX_ERR_UNSUPPORTED;
    }
    cs->device = dev;
    cs->timeout_s = timeout_s;
    /* cuBLAS loads now rather than in the first step (its f32 GEMM says "unsupported"
     * then if the library is missing; bf16 weights never need it) */
    (void)hlx_cuda_blas_open();
    return HLX_OK;
}

hlx_status_t hlx_backend_cuda_clock(hlx_backend_t *be, hlx_be_queue_t *q, int phase)
{
    hlx_cuda_state_t *cs = hlx_cu_st(be);

    if (cs == NULL)
        return HLX_ERR_INVALID;
    if (cs->mk_n == cs->mk_cap) {
        int cap = cs->mk_cap ? 2 * cs->mk_cap : 256;
        cudaEvent_t *ev = realloc(cs->mk_ev, sizeof(*ev) * (size_t)cap);
        int *ph;
        if (ev == NULL)
            return HLX_ERR_NOMEM;
        cs->mk_ev = ev;
        if ((ph = realloc(cs->mk_ph, sizeof(*ph) * (size_t)cap)) == NULL)
            return HLX_ERR_NOMEM;
        cs->mk_ph = ph;
        cs->mk_cap = cap;
    }
    if (cs->mk_n == cs->mk_made) { /* timing enabled: the default flags */
        hlx_status_t st = hlx_cu_err(cudaEventCreate(&cs->mk_ev[cs->mk_made]));
        if (st != HLX_OK)
            return st;
        cs->mk_made++;
    }
    cs->mk_ph[cs->mk_n] = phase;
    return hlx_cu_err(cudaEventRecord(cs->mk_ev[cs->mk_n++], hlx_cu_stream(q)));
}

hlx_status_t hlx_backend_cuda_clock_read(hlx_backend_t *be, uint64_t *phase_ns, int nphases)
{
    hlx_cuda_state_t *cs = hlx_cu_st(be);
    hlx_status_t st = HLX_OK;
    int i;

    if (cs == NULL || cs->mk_n == 0)
        return HLX_OK;
    st = hlx_cu_wait(be, NULL, cs->mk_ev[cs->mk_n - 1]);
    for (i = 0; st == HLX_OK && i + 1 < cs->mk_n; i++) {
        float ms = 0.0f;
        if (cs->mk_ph[i] < 0 || cs->mk_ph[i] >= nphases)
            continue;
        st = hlx_cu_err(cudaEventElapsedTime(&ms, cs->mk_ev[i], cs->mk_ev[i + 1]));
        if (st == HLX_OK && ms > 0.0f)
            phase_ns[cs->mk_ph[i]] += (uint64_t)((double)ms * 1e6);
    }
    cs->mk_n = 0;
    return st;
}

const char *hlx_backend_cuda_attn_kernel(int dk, int dv, hlx_dtype_t kv_dtype, int v_in_k)
{
    /* the choice depends on the shape, the type and the rows' alignment: device KV rows
     * start 256-byte aligned (cudaMalloc) and are dk or dv elements long */
    hlx_attn_desc_t d = { .group = 1, .dk = dk, .dv = dv, .kv_dtype = kv_dtype,
                          .k = (const void *)(uintptr_t)256,
                          .v = (const void *)(uintptr_t)(v_in_k ? 256 : 512),
                          .k_stride = (size_t)dk, .v_stride = (size_t)(v_in_k ? dk : dv) };
    const char *v = hlx_cuda_attn_variant_for(&d);

    return v != NULL ? v : "none (the chosen kernel does not take this shape)";
}

hlx_status_t hlx_backend_cuda_set_attn(const char *variant)
{
    return hlx_cuda_attn_set_variant(variant);
}

const char *hlx_backend_cuda_error(void)
{
    return hlx_cuda_error_text();
}

void *hlx_backend_cuda_stream(hlx_be_queue_t *q)
{
    return q != NULL ? (void *)q->s : NULL;
}

int hlx_backend_cuda_device(const hlx_backend_t *be)
{
    const hlx_cuda_state_t *cs = (const hlx_cuda_state_t *)be->priv;

    return cs != NULL ? cs->device : -1;
}

void hlx_backend_cuda_fini(hlx_backend_t *be)
{
    hlx_cuda_state_t *cs = hlx_cu_st(be);
    int i;

    if (cs == NULL)
        return;
    if (cs->device >= 0) {
        for (i = 0; i < cs->ev_n; i++)
            (void)cudaEventDestroy(cs->ev[i].e);
        for (i = 0; i < cs->mk_made; i++)
            (void)cudaEventDestroy(cs->mk_ev[i]);
        (void)cudaFree(cs->work);
        (void)cudaFree(cs->tokens);
    }
    free(cs->mk_ev);
    free(cs->mk_ph);
    free(cs);
    be->priv = NULL;
}

void hlx_devices_query(hlx_devices_t *d)
{
    int i;

    memset(d, 0, sizeof(*d));
    d->compiled = 1;
    /* both versions answer without a device; the driver's is 0 without libcuda */
    if (cudaDriverGetVersion(&d->driver_version) != cudaSuccess)
        d->driver_version = 0;
    if (cudaRuntimeGetVersion(&d->runtime_version) != cudaSuccess)
        d->runtime_version = 0;
    (void)cudaGetLastError();
    d->count = hlx_backend_cuda_devices(d->reason, sizeof(d->reason));
    for (i = 0; i < d->count && i < HLX_DEVICES_MAX; i++) {
        hlx_device_desc_t *o = &d->dev[i];
        struct cudaDeviceProp pr;
        int clk = 0, bus = 0;

        if (cudaGetDeviceProperties(&pr, i) != cudaSuccess) {
            (void)cudaGetLastError();
            snprintf(o->name, sizeof(o->name), "(properties unavailable)");
            continue;
        }
        snprintf(o->name, sizeof(o->name), "%.127s", pr.name);
        o->mem_bytes = (uint64_t)pr.totalGlobalMem;
        o->cc_major = pr.major, o->cc_minor = pr.minor;
        o->sms = pr.multiProcessorCount;
        if (cudaDeviceGetAttribute(&clk, cudaDevAttrMemoryClockRate, i) == cudaSuccess &&
            cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, i) == cudaSuccess)
            o->hbm_gbps = 2.0 * clk * 1e3 * (bus / 8.0) * 1e-9; /* kHz, bits, double rate */
        (void)cudaGetLastError();
    }
}
