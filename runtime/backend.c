/* Execution backends: the static list, the choice at init, the stubs that fill the
 * operations a backend lacks, and the host backend over the CPU kernels (kernels/). */
#include "hlx_backend.h"
#include "hlx_backend_cuda.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- stubs: one per operation signature, all HLX_ERR_UNSUPPORTED */

static hlx_status_t st_alloc(hlx_backend_t *be, size_t n, int h, void **p)
{ (void)be; (void)n; (void)h; (void)p; return HLX_ERR_UNSUPPORTED; }
static void st_free(hlx_backend_t *be, void *p, int h) { (void)be; (void)p; (void)h; }
static hlx_status_t st_palloc(hlx_backend_t *be, size_t n, void **p)
{ (void)be; (void)n; (void)p; return HLX_ERR_UNSUPPORTED; }
static void st_pfree(hlx_backend_t *be, void *p) { (void)be; (void)p; }
static hlx_status_t st_copy(hlx_backend_t *be, hlx_be_queue_t *q, void *d, const void *s, size_t n)
{ (void)be; (void)q; (void)d; (void)s; (void)n; return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_crows(hlx_backend_t *be, hlx_be_queue_t *q, float *d, size_t ldd,
                             const float *s, size_t lds, int r, int n)
{ (void)be; (void)q; (void)d; (void)ldd; (void)s; (void)lds; (void)r; (void)n;
  return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_qcreate(hlx_backend_t *be, hlx_be_queue_t **q)
{ (void)be; (void)q; return HLX_ERR_UNSUPPORTED; }
static void st_qdestroy(hlx_backend_t *be, hlx_be_queue_t *q) { (void)be; (void)q; }
static hlx_status_t st_qsync(hlx_backend_t *be, hlx_be_queue_t *q)
{ (void)be; (void)q; return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_evrec(hlx_backend_t *be, hlx_be_queue_t *q, hlx_be_event_t **e)
{ (void)be; (void)q; (void)e; return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_evsync(hlx_backend_t *be, hlx_be_event_t *e)
{ (void)be; (void)e; return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_rmsnorm(hlx_backend_t *be, hlx_be_queue_t *q, float *y, const float *x,
                               const float *w, int r, int n, float eps)
{ (void)be; (void)q; (void)y; (void)x; (void)w; (void)r; (void)n; (void)eps; return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_normh(hlx_backend_t *be, hlx_be_queue_t *q, float *x, int r, size_t ld,
                             int nh, int hd, const float *w, float eps)
{ (void)be; (void)q; (void)x; (void)r; (void)ld; (void)nh; (void)hd; (void)w; (void)eps;
  return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_sumsq(hlx_backend_t *be, hlx_be_queue_t *q, const float *x, size_t ld,
                             int r, int n, float *ss)
{ (void)be; (void)q; (void)x; (void)ld; (void)r; (void)n; (void)ss; return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_normss(hlx_backend_t *be, hlx_be_queue_t *q, float *x, size_t ld, int r,
                              int n, const float *w, const float *ss, int total, float eps)
{ (void)be; (void)q; (void)x; (void)ld; (void)r; (void)n; (void)w; (void)ss; (void)total;
  (void)eps; return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_lnorm(hlx_backend_t *be, hlx_be_queue_t *q, float *y, const float *x,
                             const float *w, const float *b, int r, int n, float eps)
{ (void)be; (void)q; (void)y; (void)x; (void)w; (void)b; (void)r; (void)n; (void)eps;
  return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_bact(hlx_backend_t *be, hlx_be_queue_t *q, float *x, size_t ld,
                            const float *b, int r, int n, hlx_act_t k)
{ (void)be; (void)q; (void)x; (void)ld; (void)b; (void)r; (void)n; (void)k;
  return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_addr(hlx_backend_t *be, hlx_be_queue_t *q, float *x, size_t ld,
                            const float *b, int r, int n)
{ (void)be; (void)q; (void)x; (void)ld; (void)b; (void)r; (void)n; return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_gemm(hlx_backend_t *be, hlx_be_queue_t *q, int M, int N, int K,
                            const float *x, const void *w, hlx_dtype_t dt, float *y, int acc)
{ (void)be; (void)q; (void)M; (void)N; (void)K; (void)x; (void)w; (void)dt; (void)y; (void)acc;
  return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_gemm_b(hlx_backend_t *be, hlx_be_queue_t *q, const hlx_gemm_batch_desc_t *d)
{ (void)be; (void)q; (void)d; return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_rope(hlx_backend_t *be, hlx_be_queue_t *q, float *x, int rows, size_t ld,
                            int nh, int hd, int rd, int64_t pos, const hlx_rope_tab_t *th)
{ (void)be; (void)q; (void)x; (void)rows; (void)ld; (void)nh; (void)hd; (void)rd; (void)pos;
  (void)th; return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_append(hlx_backend_t *be, hlx_be_queue_t *q, const hlx_kv_append_desc_t *d)
{ (void)be; (void)q; (void)d; return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_attn(hlx_backend_t *be, hlx_be_queue_t *q, const hlx_attn_desc_t *d)
{ (void)be; (void)q; (void)d; return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_pack(hlx_backend_t *be, hlx_be_queue_t *q, const hlx_xchg_desc_t *d,
                            const float *o, const float *l, float *s)
{ (void)be; (void)q; (void)d; (void)o; (void)l; (void)s; return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_unpack(hlx_backend_t *be, hlx_be_queue_t *q, const hlx_xchg_desc_t *d,
                              int c, int nb, const float *r, float *o, float *l)
{ (void)be; (void)q; (void)d; (void)c; (void)nb; (void)r; (void)o; (void)l; return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_merge(hlx_backend_t *be, hlx_be_queue_t *q, int np, int nh, int dv,
                             const float *op, const float *lp, float *o, float *l)
{ (void)be; (void)q; (void)np; (void)nh; (void)dv; (void)op; (void)lp; (void)o; (void)l;
  return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_add(hlx_backend_t *be, hlx_be_queue_t *q, float *x, const float *y, size_t n)
{ (void)be; (void)q; (void)x; (void)y; (void)n; return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_scale(hlx_backend_t *be, hlx_be_queue_t *q, float *x, size_t n, float s)
{ (void)be; (void)q; (void)x; (void)n; (void)s; return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_glu(hlx_backend_t *be, hlx_be_queue_t *q, float *a, const float *gu,
                           int r, int n, hlx_act_t k, float al, float li)
{ (void)be; (void)q; (void)a; (void)gu; (void)r; (void)n; (void)k; (void)al; (void)li;
  return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_sink(hlx_backend_t *be, hlx_be_queue_t *q, float *o, const float *l,
                            const float *s, int r, int c, int dv)
{ (void)be; (void)q; (void)o; (void)l; (void)s; (void)r; (void)c; (void)dv;
  return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_pad(hlx_backend_t *be, hlx_be_queue_t *q, float *d, int dc, const float *s,
                           int sc, int r, float f, float cap)
{ (void)be; (void)q; (void)d; (void)dc; (void)s; (void)sc; (void)r; (void)f; (void)cap;
  return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_gather(hlx_backend_t *be, hlx_be_queue_t *q, float *d, const float *s,
                              const int *idx, int r, int n)
{ (void)be; (void)q; (void)d; (void)s; (void)idx; (void)r; (void)n; return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_scatter(hlx_backend_t *be, hlx_be_queue_t *q, float *y, const float *x,
                               const int *idx, const float *w, int r, int n)
{ (void)be; (void)q; (void)y; (void)x; (void)idx; (void)w; (void)r; (void)n;
  return HLX_ERR_UNSUPPORTED; }
static hlx_status_t st_wlayout(const hlx_backend_t *be, hlx_dtype_t *t_p, int K, int N,
                               size_t *bytes_p)
{
    const size_t es = (size_t)hlx_dtype_bytes(*t_p);

    (void)be;
    *bytes_p = 0;
    if (K < 0 || N < 0 || es == 0 || (K > 0 && (size_t)N > SIZE_MAX / es / (size_t)K))
        return HLX_ERR_INVALID;
    *bytes_p = (size_t)K * (size_t)N * es;
    return HLX_OK;
}
static hlx_status_t st_wstore(hlx_backend_t *be, void *w, hlx_dtype_t t, int K, int N, int n0,
                              int n1, const void *src, size_t ld)
{
    const size_t es = (size_t)hlx_dtype_bytes(t);
    int k;

    (void)be;
    if (es == 0 || n0 < 0 || n1 > N || n1 < n0 || ld < (size_t)(n1 - n0))
        return HLX_ERR_INVALID;
    for (k = 0; k < K && n1 > n0; k++)
        memcpy((char *)w + ((size_t)k * (size_t)N + (size_t)n0) * es,
               (const char *)src + (size_t)k * ld * es, (size_t)(n1 - n0) * es);
    return HLX_OK;
}
static hlx_status_t st_argmax(hlx_backend_t *be, hlx_be_queue_t *q, const float *lg, int n, int B,
                              int V, int pad, int *t)
{ (void)be; (void)q; (void)lg; (void)n; (void)B; (void)V; (void)pad; (void)t; return HLX_ERR_UNSUPPORTED; }

void hlx_backend_fill_stubs(hlx_backend_ops_t *o)
{
#define HLX_STUB(_f, _s) if (o->_f == NULL) o->_f = _s
    HLX_STUB(mem_alloc, st_alloc);     HLX_STUB(mem_free, st_free);
    HLX_STUB(pinned_alloc, st_palloc); HLX_STUB(pinned_free, st_pfree);
    HLX_STUB(copy_to, st_copy);        HLX_STUB(copy_from, st_copy);
    HLX_STUB(copy_rows, st_crows);
    HLX_STUB(queue_create, st_qcreate); HLX_STUB(queue_destroy, st_qdestroy);
    HLX_STUB(queue_sync, st_qsync);    HLX_STUB(event_record, st_evrec);
    HLX_STUB(event_sync, st_evsync);   HLX_STUB(rmsnorm, st_rmsnorm);
    HLX_STUB(gemm, st_gemm);           HLX_STUB(rope, st_rope);
    HLX_STUB(gemm_batched, st_gemm_b); HLX_STUB(rmsnorm_heads, st_normh);
    HLX_STUB(add_rows, st_addr);
    HLX_STUB(layernorm, st_lnorm);     HLX_STUB(bias_act, st_bact);
    HLX_STUB(sumsq_rows, st_sumsq);    HLX_STUB(rmsnorm_ss, st_normss);
    HLX_STUB(kv_append, st_append);    HLX_STUB(attn, st_attn);
    HLX_STUB(pack, st_pack);           HLX_STUB(unpack, st_unpack);
    HLX_STUB(merge, st_merge);         HLX_STUB(add, st_add);
    HLX_STUB(scale, st_scale);
    HLX_STUB(glu, st_glu);       HLX_STUB(pad_rows, st_pad);
    HLX_STUB(attn_sink, st_sink);
    HLX_STUB(gather_rows, st_gather); HLX_STUB(scatter_add, st_scatter);
    HLX_STUB(argmax, st_argmax);       HLX_STUB(weights_layout, st_wlayout);
    HLX_STUB(weights_store, st_wstore);
#undef HLX_STUB
}

/* ---- host backend: backend memory is host memory, the queue runs inline */

/* Zeroed, on 64-byte lines: the pool's GEMM split gives each thread whole 16-column groups
 * of y, which are whole cache lines only when y starts on one (two threads writing one line
 * pass it between their cores at every block of W). From 2 MiB on (the weights), on 2 MiB
 * pages as the KV (huge): a 3B model's weights faulted in 4 KiB pages took 20 s of system
 * time on the Zen 5 VM, and the strips' packing faulted each matrix a second time. Not
 * zeroed when huge (the KV is written before it is read). */
#define HLX_HOST_HUGE_MIN ((size_t)2 << 20)
static hlx_status_t host_alloc(hlx_backend_t *be, size_t bytes, int huge, void **p_p)
{
    void *p = NULL;

    (void)be;
    if (bytes == 0)
        bytes = 1;
    if (huge || bytes >= HLX_HOST_HUGE_MIN) {
        p = hlx_kernels_alloc_huge(bytes);
        if (p != NULL && !huge)
            memset(p, 0, bytes);
    } else if (bytes <= SIZE_MAX - 63) {
        bytes = (bytes + 63) & ~(size_t)63;
        if (posix_memalign(&p, 64, bytes) != 0)
            p = NULL;
        else
            memset(p, 0, bytes);
    }
    if (p == NULL)
        return HLX_ERR_NOMEM;
    *p_p = p;
    return HLX_OK;
}

/* Host memory is what copy_to / copy_from move already: nothing to pin. */
static hlx_status_t host_palloc(hlx_backend_t *be, size_t bytes, void **p_p)
{
    return host_alloc(be, bytes, 0, p_p);
}

static void host_pfree(hlx_backend_t *be, void *p)
{
    (void)be;
    free(p);
}

static void host_free(hlx_backend_t *be, void *p, int huge)
{
    (void)be;
    if (huge)
        hlx_kernels_free_huge(p);
    else
        free(p);
}

static hlx_status_t host_copy(hlx_backend_t *be, hlx_be_queue_t *q, void *dst, const void *src,
                              size_t bytes)
{
    (void)be; (void)q;
    if (bytes)
        memmove(dst, src, bytes);
    return HLX_OK;
}

static hlx_status_t host_copy_rows(hlx_backend_t *be, hlx_be_queue_t *q, float *dst,
                                   size_t ldd, const float *src, size_t lds, int rows, int n)
{
    int r;

    (void)be; (void)q;
    if (rows < 0 || n < 0 || ldd < (size_t)n || lds < (size_t)n)
        return HLX_ERR_INVALID;
    for (r = 0; r < rows && n > 0; r++)
        memcpy(dst + (size_t)r * ldd, src + (size_t)r * lds, sizeof(float) * (size_t)n);
    return HLX_OK;
}

static hlx_status_t host_qcreate(hlx_backend_t *be, hlx_be_queue_t **q_p)
{
    (void)be;
    *q_p = NULL;
    return HLX_OK;
}

static void host_qdestroy(hlx_backend_t *be, hlx_be_queue_t *q) { (void)be; (void)q; }

static hlx_status_t host_qsync(hlx_backend_t *be, hlx_be_queue_t *q)
{
    (void)be; (void)q;
    return HLX_OK;
}

static hlx_status_t host_evrec(hlx_backend_t *be, hlx_be_queue_t *q, hlx_be_event_t **ev_p)
{
    (void)be; (void)q;
    *ev_p = NULL;
    return HLX_OK;
}

static hlx_status_t host_evsync(hlx_backend_t *be, hlx_be_event_t *ev)
{
    (void)be; (void)ev;
    return HLX_OK;
}

static hlx_status_t host_rmsnorm(hlx_backend_t *be, hlx_be_queue_t *q, float *y, const float *x,
                                 const float *w, int rows, int n, float eps)
{
    int r;

    (void)q;
    for (r = 0; r < rows; r++)
        be->k.rmsnorm(y + (size_t)r * n, x + (size_t)r * n, w, n, eps);
    return HLX_OK;
}

static hlx_status_t host_rmsnorm_heads(hlx_backend_t *be, hlx_be_queue_t *q, float *x,
                                       int rows, size_t ld, int nheads, int hd,
                                       const float *w, float eps)
{
    int r, h;

    (void)q;
    if (rows < 0 || nheads < 0 || hd < 1 || ld < (size_t)nheads * (size_t)hd)
        return HLX_ERR_INVALID;
    for (r = 0; r < rows; r++)
        for (h = 0; h < nheads; h++) {
            float *v = x + (size_t)r * ld + (size_t)h * hd;
            be->k.rmsnorm(v, v, w, hd, eps);
        }
    return HLX_OK;
}

/* the kernels' rmsnorm (kernels/ref.c) in two halves: the sum in double, the factor rounded
 * to float once, x * r * w */
static hlx_status_t host_sumsq_rows(hlx_backend_t *be, hlx_be_queue_t *q, const float *x,
                                    size_t ld, int rows, int n, float *ss)
{
    int r, i;

    (void)be;
    (void)q;
    if (rows < 0 || n < 0 || ld < (size_t)n)
        return HLX_ERR_INVALID;
    for (r = 0; r < rows; r++) {
        const float *v = x + (size_t)r * ld;
        double s = 0.0;
        for (i = 0; i < n; i++)
            s += (double)v[i] * v[i];
        ss[r] = (float)s;
    }
    return HLX_OK;
}

static hlx_status_t host_rmsnorm_ss(hlx_backend_t *be, hlx_be_queue_t *q, float *x, size_t ld,
                                    int rows, int n, const float *w, const float *ss, int total,
                                    float eps)
{
    int r, i;

    (void)be;
    (void)q;
    if (rows < 0 || n < 0 || total < 1 || ld < (size_t)n)
        return HLX_ERR_INVALID;
    for (r = 0; r < rows; r++) {
        float *v = x + (size_t)r * ld;
        const float f = (float)(1.0 / sqrt((double)ss[r] / total + eps));
        for (i = 0; i < n; i++)
            v[i] = v[i] * f * w[i];
    }
    return HLX_OK;
}

static hlx_status_t host_layernorm(hlx_backend_t *be, hlx_be_queue_t *q, float *y,
                                   const float *x, const float *w, const float *b, int rows,
                                   int n, float eps)
{
    int r, i;

    (void)be;
    (void)q;
    if (rows < 0 || n < 1)
        return HLX_ERR_INVALID;
    for (r = 0; r < rows; r++) {
        const float *v = x + (size_t)r * n;
        float *o = y + (size_t)r * n, mf, f;
        double s = 0.0, mean, var = 0.0;
        for (i = 0; i < n; i++)
            s += v[i];
        mean = s / n;
        for (i = 0; i < n; i++)
            var += ((double)v[i] - mean) * ((double)v[i] - mean);
        mf = (float)mean;
        f = (float)(1.0 / sqrt(var / n + eps));
        for (i = 0; i < n; i++)
            o[i] = (v[i] - mf) * f * w[i] + (b != NULL ? b[i] : 0.0f);
    }
    return HLX_OK;
}

static hlx_status_t host_gemm(hlx_backend_t *be, hlx_be_queue_t *q, int M, int N, int K,
                              const float *x, const void *w, hlx_dtype_t w_dtype, float *y,
                              int accumulate)
{
    (void)q;
    if (be->pool != NULL)
        hlx_pool_gemm(be->pool, &be->k, M, N, K, x, w, w_dtype, y, accumulate);
    else /* any w_dtype, packed weights (HLX_W_Q) included */
        hlx_kernels_gemm_cols(&be->k, M, N, K, x, w, w_dtype, y, accumulate, 0, N);
    return HLX_OK;
}

/* Strips of 16 columns where the kernels read them fast (hlx_kernels_t.w_s16): one
 * sequential stream per strip instead of one per row of W, which a decode batch's few rows
 * read from DRAM 1.1-1.9x faster (docs/kernels.md, "Weights in strips"). */
static int host_packs(const hlx_backend_t *be, hlx_dtype_t t)
{
    return be->k.w_s16 && (t == HLX_DTYPE_F32 || t == HLX_DTYPE_BF16);
}

static hlx_status_t host_wlayout(const hlx_backend_t *be, hlx_dtype_t *t_p, int K, int N,
                                 size_t *bytes_p)
{
    if (!host_packs(be, *t_p))
        return st_wlayout(be, t_p, K, N, bytes_p);
    *bytes_p = 0;
    if (K < 0 || N < 0)
        return HLX_ERR_INVALID;
    /* an empty matrix has no element: any buffer is it in strips */
    if (K > 0 && N > 0 && (*bytes_p = hlx_kernels_w_s16_bytes(*t_p, K, N)) == 0)
        return HLX_ERR_INVALID;
    *t_p = hlx_w_s16_of(*t_p);
    return HLX_OK;
}

static hlx_status_t host_wstore(hlx_backend_t *be, void *w, hlx_dtype_t t, int K, int N, int n0,
                                int n1, const void *src, size_t ld)
{
    if (hlx_w_q(t)) /* the plain matrices of a model whose packed ones stay packed */
        return n1 > n0 && K > 0 ? hlx_kernels_wq_plain_cols(w, n0, n1, src, ld) : HLX_OK;
    if (!hlx_w_s16(t))
        return st_wstore(be, w, t, K, N, n0, n1, src, ld);
    if (n0 < 0 || n0 % 16 != 0 || n1 > N || n1 < n0 || (n1 < N && n1 % 16 != 0) ||
        ld < (size_t)(n1 - n0))
        return HLX_ERR_INVALID;
    if (n1 > n0 && K > 0)
        hlx_kernels_w_s16_pack_cols(hlx_w_elem(t), K, N, n0, n1, src, ld, w);
    return HLX_OK;
}

/* Element (k, n): row-major at k N + n, in strips at hlx_w_s16_at (as the reference GEMM
 * reads them). */
static hlx_status_t host_wcol(const hlx_backend_t *be, const void *w, hlx_dtype_t t, int K,
                              int N, int n, float *dst)
{
    const hlx_dtype_t e = hlx_w_elem(t);
    int k;

    (void)be;
    if (n < 0 || n >= N || K < 0 || (e != HLX_DTYPE_F32 && e != HLX_DTYPE_BF16))
        return HLX_ERR_INVALID;
    if (hlx_w_q(t)) { /* hlx_wq_t, packed or plain */
        for (k = 0; k < K; k++)
            dst[k] = hlx_kernels_wq_at(w, k, n);
        return HLX_OK;
    }
    for (k = 0; k < K; k++)
        dst[k] = hlx_dtype_load(w, e, hlx_w_s16(t) ? hlx_w_s16_at(K, k, n)
                                                   : (size_t)k * (size_t)N + (size_t)n);
    return HLX_OK;
}

/* Each GEMM of the batch through host_gemm: in place where the rows are packed, else its x
 * (and y when accumulating) copied into packed rows first and y copied back. */
static hlx_status_t host_gemm_batched(hlx_backend_t *be, hlx_be_queue_t *q,
                                      const hlx_gemm_batch_desc_t *d)
{
    const size_t es = (size_t)hlx_dtype_bytes(d->w_dtype);
    const int packed = d->ldx == (size_t)d->K && d->ldy == (size_t)d->N;
    float *xs = NULL, *ys = NULL;
    hlx_status_t st = HLX_OK;
    int b;

    if (d->batch < 0 || d->M < 1 || d->N < 1 || d->K < 1 || d->ldx < (size_t)d->K ||
        d->ldy < (size_t)d->N || es == 0)
        return HLX_ERR_INVALID;
    if (!packed && d->batch > 0) {
        xs = malloc(sizeof(float) * (size_t)d->M * (size_t)d->K);
        ys = malloc(sizeof(float) * (size_t)d->M * (size_t)d->N);
        if (xs == NULL || ys == NULL) {
            free(xs), free(ys);
            return HLX_ERR_NOMEM;
        }
    }
    for (b = 0; b < d->batch && st == HLX_OK; b++) {
        const float *xb = d->x + (size_t)b * d->sx;
        const void *wb = (const char *)d->w + (size_t)b * d->sw * es;
        float *yb = d->y + (size_t)b * d->sy;
        if (packed) {
            st = host_gemm(be, q, d->M, d->N, d->K, xb, wb, d->w_dtype, yb, d->accumulate);
            continue;
        }
        (void)host_copy_rows(be, q, xs, (size_t)d->K, xb, d->ldx, d->M, d->K);
        if (d->accumulate)
            (void)host_copy_rows(be, q, ys, (size_t)d->N, yb, d->ldy, d->M, d->N);
        st = host_gemm(be, q, d->M, d->N, d->K, xs, wb, d->w_dtype, ys, d->accumulate);
        if (st == HLX_OK)
            (void)host_copy_rows(be, q, yb, d->ldy, ys, (size_t)d->N, d->M, d->N);
    }
    free(xs), free(ys);
    return st;
}

static hlx_status_t host_rope(hlx_backend_t *be, hlx_be_queue_t *q, float *x, int rows,
                              size_t ld, int nheads, int hd, int rot_dim, int64_t pos,
                              const hlx_rope_tab_t *rt)
{
    int r;

    (void)q;
    for (r = 0; r < rows; r++)
        be->k.rope(x + (size_t)r * ld, nheads, hd, rot_dim, pos, rt);
    return HLX_OK;
}

/* One token's d elements into slot t of shard s: hlx_kv_slot once, then its runs (c
 * consecutive elements, the next run block x c further on; rows: one run of d). The index
 * arithmetic per element (four divisions) was most of an append's time. Returns 1 when an
 * fp8 byte stored is a NaN (0x7f, 0xff), else 0. */
static int host_append_row(void *cache, hlx_dtype_t dt, hlx_kv_layout_t lay, int is_key, int d,
                           size_t cap, size_t s, size_t t, const float *src, float mul)
{
    int blk = is_key ? lay.k_block : lay.v_block, chunk = is_key ? lay.k_chunk : lay.v_chunk;
    int c = hlx_kv_run(blk, chunk, d), e0, e, nan = 0;
    size_t at = hlx_kv_slot(lay, is_key, d, cap, s, t, 0), gap = hlx_kv_run_gap(blk, chunk, d);
    const float m = mul != 0.0f ? mul : 1.0f; /* 0: no scale (x 1 is exact) */

    for (e0 = 0; e0 < d; e0 += c, at += gap)
        for (e = 0; e < c; e++) {
            hlx_dtype_store(cache, dt, at + (size_t)e, src[e0 + e] * m);
            if (dt == HLX_DTYPE_FP8)
                nan |= hlx_fp8_is_nan(((const uint8_t *)cache)[at + (size_t)e]);
        }
    return nan;
}

static hlx_status_t host_append(hlx_backend_t *be, hlx_be_queue_t *q,
                                const hlx_kv_append_desc_t *d)
{
    int h;

    (void)be; (void)q;
    for (h = 0; h < d->nheads; h++) {
        size_t s = d->shard0 + (size_t)h;
        int nan = host_append_row(d->kc, d->kv_dtype, d->layout, 1, d->dk, d->cap, s, d->t,
                                  d->k_new + (size_t)h * d->dk, d->k_mul);
        if (d->vc != NULL) /* MLA: the latent row only */
            nan |= host_append_row(d->vc, d->kv_dtype, d->layout, 0, d->dv, d->cap, s, d->t,
                                   d->v_new + (size_t)h * d->dv, d->v_mul);
        if (nan && d->nan_seen != NULL)
            d->nan_seen[s] = 1;
    }
    return HLX_OK;
}

static hlx_status_t host_attn(hlx_backend_t *be, hlx_be_queue_t *q, const hlx_attn_desc_t *d)
{
    (void)q;
    if (be->pool != NULL) {
        /* The work area is sized by the first call of each shape, then reused. */
        size_t n = hlx_pool_attn_work_floats(be->pool, d);
        if (n > be->pool_work_n) {
            float *w = realloc(be->pool_work, n * sizeof(float));
            if (w == NULL)
                return HLX_ERR_NOMEM;
            be->pool_work = w, be->pool_work_n = n;
        }
        hlx_pool_attn(be->pool, &be->k, d, be->pool_work);
        return HLX_OK;
    }
    be->k.attn(d);
    return HLX_OK;
}

static hlx_status_t host_pack(hlx_backend_t *be, hlx_be_queue_t *q, const hlx_xchg_desc_t *d,
                              const float *opart, const float *lsepart, float *sendbuf)
{
    int j, b;

    (void)be; (void)q;
    if (d->sub < 1)
        return HLX_ERR_INVALID;
    for (j = 0; j < d->kvp; j++) {
        size_t cnt = (size_t)d->head_count[j], per = cnt * (size_t)(d->dv + 1);
        for (b = d->b0; b < d->b1; b++) {
            float *dst = sendbuf + d->displ[j] + (size_t)b * per;
            size_t h0 = (size_t)b * d->q_local + (size_t)d->head_first[j], i;
            memcpy(dst, opart + h0 * d->dv, sizeof(float) * cnt * d->dv);
            if (d->sub == 1)
                memcpy(dst + cnt * d->dv, lsepart + h0, sizeof(float) * cnt);
            else /* each piece its head's LSE */
                for (i = 0; i < cnt; i++)
                    dst[cnt * d->dv + i] = lsepart[(h0 + i) / (size_t)d->sub];
        }
    }
    return HLX_OK;
}

static hlx_status_t host_unpack(hlx_backend_t *be, hlx_be_queue_t *q, const hlx_xchg_desc_t *d,
                                int cnt, int nb, const float *recvbuf, float *oparts,
                                float *lseparts)
{
    size_t per = (size_t)cnt * (size_t)(d->dv + 1), nh = (size_t)nb * cnt;
    int j, b;

    (void)be; (void)q;
    for (j = 0; j < d->kvp; j++)
        for (b = d->b0; b < d->b1; b++) {
            const float *src = recvbuf + d->displ[j] + (size_t)b * per;
            memcpy(oparts + ((size_t)j * nh + (size_t)b * cnt) * d->dv, src,
                   sizeof(float) * (size_t)cnt * d->dv);
            memcpy(lseparts + (size_t)j * nh + (size_t)b * cnt, src + (size_t)cnt * d->dv,
                   sizeof(float) * (size_t)cnt);
        }
    return HLX_OK;
}

static hlx_status_t host_merge(hlx_backend_t *be, hlx_be_queue_t *q, int nparts, int nheads,
                               int dv, const float *o_parts, const float *lse_parts, float *o,
                               float *lse)
{
    (void)q;
    be->k.merge(nparts, nheads, dv, o_parts, lse_parts, o, lse);
    return HLX_OK;
}

static hlx_status_t host_add(hlx_backend_t *be, hlx_be_queue_t *q, float *x, const float *y,
                             size_t n)
{
    size_t i;

    (void)be; (void)q;
    for (i = 0; i < n; i++)
        x[i] += y[i];
    return HLX_OK;
}

static hlx_status_t host_scale(hlx_backend_t *be, hlx_be_queue_t *q, float *x, size_t n, float s)
{
    size_t i;

    (void)be; (void)q;
    for (i = 0; i < n; i++)
        x[i] *= s;
    return HLX_OK;
}

static hlx_status_t host_add_rows(hlx_backend_t *be, hlx_be_queue_t *q, float *x, size_t ld,
                                  const float *b, int rows, int n)
{
    int r, i;

    (void)be; (void)q;
    if (rows < 0 || n < 0 || ld < (size_t)n)
        return HLX_ERR_INVALID;
    for (r = 0; r < rows; r++)
        for (i = 0; i < n; i++)
            x[(size_t)r * ld + i] += b[i];
    return HLX_OK;
}

static hlx_status_t host_glu(hlx_backend_t *be, hlx_be_queue_t *q, float *act,
                             const float *gu, int rows, int n, hlx_act_t kind, float alpha,
                             float limit)
{
    void (*f)(float *, const float *, const float *, int) =
        kind == HLX_ACT_GELU_TANH ? be->k.geglu : be->k.swiglu;
    int r, i;

    (void)q;
    if (kind == HLX_ACT_SWIGLU_CLAMP) { /* gpt-oss's experts: elementwise, in f32 */
        for (r = 0; r < rows; r++)
            for (i = 0; i < n; i++) {
                /* clamped as torch.clamp does, a NaN kept (fminf would make it the limit) */
                const float *g_row = gu + (size_t)r * 2 * n;
                float g = g_row[i] > limit ? limit : g_row[i], u = g_row[n + i];
                u = u > limit ? limit : u < -limit ? -limit : u;
                act[(size_t)r * n + i] = g / (1.0f + expf(-alpha * g)) * (u + 1.0f);
            }
        return HLX_OK;
    }
    for (r = 0; r < rows; r++)
        f(act + (size_t)r * n, gu + (size_t)r * 2 * n, gu + (size_t)r * 2 * n + n, n);
    return HLX_OK;
}

/* up factors of 1 for bias_act's calls of the kernels' glu, HLX_BACT_CHUNK at a time */
#define HLX_BACT_CHUNK 256
#define HLX_ONES4 1.0f, 1.0f, 1.0f, 1.0f
#define HLX_ONES16 HLX_ONES4, HLX_ONES4, HLX_ONES4, HLX_ONES4
#define HLX_ONES64 HLX_ONES16, HLX_ONES16, HLX_ONES16, HLX_ONES16
static const float hlx_bact_ones[HLX_BACT_CHUNK] = { HLX_ONES64, HLX_ONES64, HLX_ONES64,
                                                     HLX_ONES64 };

/* x += b, then the kernels' geglu or swiglu in place with an up factor of 1: the plain MLP's
 * activation is the gated one's gate half, the same vector code and rounding */
static hlx_status_t host_bias_act(hlx_backend_t *be, hlx_be_queue_t *q, float *x, size_t ld,
                                  const float *b, int rows, int n, hlx_act_t kind)
{
    void (*f)(float *, const float *, const float *, int) =
        kind == HLX_ACT_GELU_TANH ? be->k.geglu : be->k.swiglu;
    int r, i;

    (void)q;
    if (rows < 0 || n < 0 || ld < (size_t)n ||
        (kind != HLX_ACT_SILU && kind != HLX_ACT_GELU_TANH))
        return HLX_ERR_INVALID;
    for (r = 0; r < rows; r++) {
        float *v = x + (size_t)r * ld;
        if (b != NULL)
            for (i = 0; i < n; i++)
                v[i] += b[i];
        for (i = 0; i < n; i += HLX_BACT_CHUNK)
            f(v + i, v + i, hlx_bact_ones, n - i < HLX_BACT_CHUNK ? n - i : HLX_BACT_CHUNK);
    }
    return HLX_OK;
}

static hlx_status_t host_attn_sink(hlx_backend_t *be, hlx_be_queue_t *q, float *o,
                                   const float *lse, const float *sinks, int rows, int cnt,
                                   int dv)
{
    int r, e;

    (void)be; (void)q;
    if (rows < 0 || cnt < 1 || dv < 0)
        return HLX_ERR_INVALID;
    for (r = 0; r < rows; r++) {
        /* lse -inf (no key): the factor is 0 and o already 0 */
        const float f = (float)(1.0 / (1.0 + exp((double)sinks[r % cnt] - (double)lse[r])));
        for (e = 0; e < dv; e++)
            o[(size_t)r * dv + e] *= f;
    }
    return HLX_OK;
}

static hlx_status_t host_pad(hlx_backend_t *be, hlx_be_queue_t *q, float *dst, int dcols,
                             const float *src, int scols, int rows, float fill, float cap)
{
    int r, c;

    (void)be; (void)q;
    for (r = 0; r < rows; r++)
        for (c = 0; c < dcols; c++)
            dst[(size_t)r * dcols + c] = c < scols ? hlx_softcapf(src[(size_t)r * scols + c], cap)
                                                   : fill;
    return HLX_OK;
}

static hlx_status_t host_gather(hlx_backend_t *be, hlx_be_queue_t *q, float *dst,
                                const float *src, const int *idx, int rows, int n)
{
    int r;

    (void)be; (void)q;
    if (rows < 0 || n < 0 || idx == NULL)
        return HLX_ERR_INVALID;
    for (r = 0; r < rows && n > 0; r++)
        memcpy(dst + (size_t)r * n, src + (size_t)idx[r] * n, sizeof(float) * (size_t)n);
    return HLX_OK;
}

static hlx_status_t host_scatter(hlx_backend_t *be, hlx_be_queue_t *q, float *y, const float *x,
                                 const int *idx, const float *w, int rows, int n)
{
    int r, i;

    (void)be; (void)q;
    if (rows < 0 || n < 0 || w == NULL)
        return HLX_ERR_INVALID;
    for (r = 0; r < rows; r++) {
        float *yr = y + (size_t)(idx != NULL ? idx[r] : r) * n, wr = w[r];
        const float *xr = x + (size_t)r * n;
        for (i = 0; i < n; i++)
            yr[i] += wr * xr[i];
    }
    return HLX_OK;
}

static hlx_status_t host_argmax(hlx_backend_t *be, hlx_be_queue_t *q, const float *logits,
                                int n, int B, int vocab, int pad, int *tokens)
{
    int b, r;

    (void)q;
    for (b = 0; b < B; b++) {
        float best = -INFINITY;
        int arg = 0;
        /* the slices in vocabulary order, each's first largest against the ones before:
         * the first largest of the whole row (0 when nothing is above -inf) */
        for (r = 0; r < n; r++) {
            int first = (int)((int64_t)vocab * r / n);
            int cnt = (int)((int64_t)vocab * (r + 1) / n) - first;
            float mx;
            int v = be->k.argmax(logits + ((size_t)r * B + b) * pad, cnt, &mx);
            if (v >= 0 && mx > best) {
                best = mx;
                arg  = first + v;
            }
        }
        tokens[b] = arg;
    }
    return HLX_OK;
}

static const hlx_backend_ops_t hlx_backend_host = {
    .name = "host",
    .mem_alloc = host_alloc, .mem_free = host_free,
    .pinned_alloc = host_palloc, .pinned_free = host_pfree,
    .copy_to = host_copy, .copy_from = host_copy, .copy_rows = host_copy_rows,
    .queue_create = host_qcreate, .queue_destroy = host_qdestroy, .queue_sync = host_qsync,
    .event_record = host_evrec, .event_sync = host_evsync,
    .rmsnorm = host_rmsnorm, .rmsnorm_heads = host_rmsnorm_heads, .gemm = host_gemm,
    .sumsq_rows = host_sumsq_rows, .rmsnorm_ss = host_rmsnorm_ss,
    .gemm_batched = host_gemm_batched, .weights_layout = host_wlayout,
    .weights_store = host_wstore, .weights_col = host_wcol,
    .rope = host_rope, .kv_append = host_append,
    .attn = host_attn, .pack = host_pack, .unpack = host_unpack, .merge = host_merge,
    .add = host_add, .scale = host_scale, .add_rows = host_add_rows, .glu = host_glu, .attn_sink = host_attn_sink, .pad_rows = host_pad,
    .layernorm = host_layernorm, .bias_act = host_bias_act,
    .gather_rows = host_gather,
    .scatter_add = host_scatter, .argmax = host_argmax,
};

/* Backends compiled in, chosen once at init. */
static const hlx_backend_ops_t *const hlx_backends[] = {
    &hlx_backend_host,
};

size_t hlx_backend_list(const char **names, size_t max)
{
    size_t i, n = sizeof(hlx_backends) / sizeof(hlx_backends[0]);

    for (i = 0; i < n && i < max; i++)
        names[i] = hlx_backends[i]->name;
    if (hlx_backend_cuda_ops() != NULL && n++ < max) /* runtime/cuda, when compiled */
        names[n - 1] = hlx_backend_cuda_ops()->name;
    return n;
}

hlx_status_t hlx_backend_init(const char *name, const char *kernels, hlx_dtype_t kv_dtype,
                              hlx_backend_t *be)
{
    return hlx_backend_init_shape(name, kernels, kv_dtype, NULL, be);
}

hlx_status_t hlx_backend_init_shape(const char *name, const char *kernels, hlx_dtype_t kv_dtype,
                                    const hlx_kernels_shape_t *shape, hlx_backend_t *be)
{
    size_t i, n = sizeof(hlx_backends) / sizeof(hlx_backends[0]);
    const hlx_backend_ops_t *ops = NULL;
    hlx_status_t st;
    char why[256];

    memset(be, 0, sizeof(*be));
    for (i = 0; i < n && ops == NULL; i++)
        if (name == NULL || !strcmp(name, hlx_backends[i]->name))
            ops = hlx_backends[i];
    if (ops == NULL && name != NULL && !strcmp(name, "cuda")) {
        ops = hlx_backend_cuda_ops();
        if (ops == NULL)
            return HLX_ERR_UNSUPPORTED;
    }
    if (ops == NULL)
        return HLX_ERR_INVALID;
    /* the variant knows the head size, the group and the threads: it fixes the KV layout,
     * so it is chosen here, before any cache is allocated, and never changed after */
    st = hlx_kernels_init_shape(kernels, kv_dtype, shape, &be->k, be->kernels_why,
                                sizeof(be->kernels_why));
    if (st != HLX_OK)
        return st;
    be->table = *ops;
    hlx_backend_fill_stubs(&be->table);
    be->ops = &be->table;
    if (ops == hlx_backend_cuda_ops()) /* its state and KV layout (rows) */
        return hlx_backend_cuda_init(be, why, sizeof(why));
    return HLX_OK;
}

hlx_status_t hlx_backend_set_threads(hlx_backend_t *be, int threads)
{
    if (be->pool != NULL || threads < 1)
        return HLX_ERR_INVALID;
    if (threads == 1)
        return HLX_OK;
    return hlx_pool_create(threads, NULL, &be->pool);
}

void hlx_backend_fini(hlx_backend_t *be)
{
    if (hlx_backend_cuda_ops() != NULL && be->table.mem_alloc == hlx_backend_cuda_ops()->mem_alloc)
        hlx_backend_cuda_fini(be);
    hlx_pool_destroy(be->pool);
    free(be->pool_work);
    be->pool = NULL, be->pool_work = NULL, be->pool_work_n = 0;
}
