/* C reference kernels: plain loops, fp32 storage with fp32 accumulation in the order a
 * reader expects. They are the oracle every vectorized variant is checked against. */
#include "hlx_kernels_priv.h"

#include <cblas.h>
#include <math.h>
#include <string.h>

/* f32, bf16 and fp8 e4m3 elements (fp8 used to be read as f32 here). */

void hlx_attn_ref_layout(const hlx_attn_desc_t *d, hlx_kv_layout_t lay)
{
    int g, e;
    size_t j;

    if (d->v == d->k) { /* MLA absorbed: the value is the head of the key row, as a key */
        lay.v_block = lay.k_block;
        lay.v_chunk = lay.k_chunk;
    }
    for (g = 0; g < d->group; g++) {
        const float *q = d->q + (size_t)g * d->dk;
        float *o = d->o + (size_t)g * d->dv;
        float m = -INFINITY, s = 0.0f;

        for (e = 0; e < d->dv; e++)
            o[e] = 0.0f;
        /* Online softmax: running max m, running sum s, o rescaled when m grows. */
        for (j = 0; j < d->len; j++) {
            float dot = 0.0f, mnew, corr, p;
            for (e = 0; e < d->dk; e++)
                dot += q[e] * hlx_dtype_load(d->k, d->kv_dtype,
                                             hlx_kv_at(lay.k_block, lay.k_chunk, d->k_stride,
                                                       d->dk, j, e));
            dot = hlx_softcapf(dot * d->scale, d->softcap);
            mnew = dot > m ? dot : m;
            corr = expf(m - mnew);
            p    = expf(dot - mnew);
            s    = s * corr + p;
            for (e = 0; e < d->dv; e++)
                o[e] = o[e] * corr +
                       p * hlx_dtype_load(d->v, d->kv_dtype,
                                          hlx_kv_at(lay.v_block, lay.v_chunk, d->v_stride,
                                                    d->k == d->v ? d->dk : d->dv, j, e));
            m = mnew;
        }
        if (d->len == 0) {
            d->lse[g] = -INFINITY;
            continue;
        }
        for (e = 0; e < d->dv; e++)
            o[e] /= s;
        d->lse[g] = m + logf(s);
    }
}

static void hlx_ref_attn(const hlx_attn_desc_t *d)
{
    hlx_attn_ref_layout(d, (hlx_kv_layout_t){ 1, 1, 1, 1 });
}

static void hlx_ref_merge(int nparts, int nheads, int dv, const float *o_parts,
                          const float *lse_parts, float *o, float *lse)
{
    int h, p, e;

    for (h = 0; h < nheads; h++) {
        float m = -INFINITY, s = 0.0f;
        float *oh = o + (size_t)h * dv;

        for (p = 0; p < nparts; p++) {
            float l = lse_parts[(size_t)p * nheads + h];
            if (l > m)
                m = l;
        }
        for (e = 0; e < dv; e++)
            oh[e] = 0.0f;
        if (m == -INFINITY) {
            lse[h] = -INFINITY;
            continue;
        }
        for (p = 0; p < nparts; p++) {
            float w = expf(lse_parts[(size_t)p * nheads + h] - m);
            const float *op = o_parts + ((size_t)p * nheads + h) * dv;
            s += w;
            for (e = 0; e < dv; e++)
                oh[e] += w * op[e];
        }
        for (e = 0; e < dv; e++)
            oh[e] /= s;
        lse[h] = m + logf(s);
    }
}

static void hlx_ref_rmsnorm(float *y, const float *x, const float *w, int n, float eps)
{
    double ss = 0.0;
    float r;
    int i;

    for (i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    r = (float)(1.0 / sqrt(ss / n + eps));
    for (i = 0; i < n; i++)
        y[i] = x[i] * r * w[i];
}

void hlx_rope_plain_freqs(double theta, int rot_dim, double *inv_freq)
{
    int i;

    for (i = 0; i < rot_dim / 2; i++)
        inv_freq[i] = pow(theta, -2.0 * i / rot_dim);
}

void hlx_rope_fill_cs(const double *inv_freq, float mscale, int rot_dim, int64_t pos,
                      float *cs)
{
    int i;

    for (i = 0; i < rot_dim / 2; i++) {
        double ang = (double)pos * inv_freq[i];
        cs[2 * i]     = (float)(cos(ang) * mscale);
        cs[2 * i + 1] = (float)(sin(ang) * mscale);
    }
}

/* cos and sin once per call for every head (the table's when it is for this position),
 * in chunks of 64 pairs; each pair rotated as a c - b s, a s + b c. */
static void hlx_ref_rope(float *x, int nheads, int hd, int rot_dim, int64_t pos,
                         const hlx_rope_tab_t *r)
{
    float buf[128];
    int h, i, i0;

    for (i0 = 0; i0 < rot_dim / 2; i0 += 64) {
        int n = rot_dim / 2 - i0 < 64 ? rot_dim / 2 - i0 : 64;
        const float *cs = buf;
        if (r->cs != NULL && r->cs_pos == pos)
            cs = r->cs + 2 * i0;
        else
            hlx_rope_fill_cs(r->inv_freq + i0, r->mscale, 2 * n, pos, buf);
        for (h = 0; h < nheads; h++) {
            float *xh = x + (size_t)h * hd + 2 * i0;
            for (i = 0; i < n; i++) {
                float c = cs[2 * i], s = cs[2 * i + 1];
                float a = xh[2 * i], b = xh[2 * i + 1];
                xh[2 * i]     = a * c - b * s;
                xh[2 * i + 1] = a * s + b * c;
            }
        }
    }
}

static void hlx_ref_swiglu(float *y, const float *gate, const float *up, int n)
{
    int i;

    for (i = 0; i < n; i++)
        y[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

static int hlx_ref_argmax(const float *x, int n, float *max)
{
    float best = -INFINITY;
    int i, arg = -1;

    for (i = 0; i < n; i++)
        if (x[i] > best) {
            best = x[i];
            arg  = i;
        }
    *max = best;
    return arg;
}

static void hlx_ref_geglu(float *y, const float *gate, const float *up, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        float g = gate[i];
        y[i] = 0.5f * g * (1.0f + tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g))) *
               up[i];
    }
}

/* Zeroes columns [n0, n1) of the M rows of y (row stride N). */
void hlx_gemm_zero_cols(int M, int N, float *y, int n0, int n1)
{
    int i;
    for (i = 0; i < M; i++)
        memset(y + (size_t)i * N + n0, 0, sizeof(float) * (size_t)(n1 - n0));
}

static void hlx_ref_gemm_cols(int M, int N, int K, const float *x, const void *w,
                              hlx_dtype_t w_dtype, float *y, int accumulate, int n0, int n1)
{
    const int s16 = hlx_w_s16(w_dtype); /* strips: element (k, j) where they keep it */
    const hlx_dtype_t et = hlx_w_elem(w_dtype);
    int i, j, kk;

    if (n1 <= n0)
        return;
    if (!s16 && w_dtype == HLX_DTYPE_F32) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, n1 - n0, K, 1.0f, x, K,
                    (const float *)w + n0, N, accumulate ? 1.0f : 0.0f, y + n0, N);
        return;
    }
    if (!accumulate)
        hlx_gemm_zero_cols(M, N, y, n0, n1);
    for (i = 0; i < M; i++)
        for (kk = 0; kk < K; kk++) {
            float a = x[(size_t)i * K + kk];
            for (j = n0; j < n1; j++)
                y[(size_t)i * N + j] +=
                    a * hlx_dtype_load(w, et, s16 ? hlx_w_s16_at(K, kk, j) : (size_t)kk * N + j);
        }
}

static void hlx_ref_gemm(int M, int N, int K, const float *x, const void *w,
                         hlx_dtype_t w_dtype, float *y, int accumulate)
{
    hlx_ref_gemm_cols(M, N, K, x, w, w_dtype, y, accumulate, 0, N);
}

size_t hlx_kernels_w_s16_bytes(hlx_dtype_t t, int K, int N)
{
    const size_t es = t == HLX_DTYPE_F32 ? 4 : t == HLX_DTYPE_BF16 ? 2 : 0;
    size_t cols, n;

    if (es == 0 || K < 0 || N < 0)
        return 0;
    cols = ((size_t)N + 15) / 16 * 16;
    if (K > 0 && cols > SIZE_MAX / es / (size_t)K)
        return 0;
    n = cols * (size_t)K * es;
    return n;
}

void hlx_kernels_w_s16_pack_cols(hlx_dtype_t t, int K, int N, int n0, int n1, const void *src,
                                 size_t ld, void *dst)
{
    const size_t es = t == HLX_DTYPE_F32 ? 4 : t == HLX_DTYPE_BF16 ? 2 : 0;
    size_t s, s1;
    int k;

    /* f32 and bf16 only (hlx_kernels_w_s16_bytes gives 0 for the rest); whole strips */
    if (es == 0 || n0 < 0 || n0 % 16 != 0 || n1 > N || n1 <= n0 || (n1 < N && n1 % 16 != 0) ||
        ld < (size_t)(n1 - n0))
        return;
    s1 = ((size_t)n1 + 15) / 16;
    for (s = (size_t)n0 / 16; s < s1; s++) { /* strip by strip: dst is written in order */
        const size_t c = (size_t)n1 - s * 16 < 16 ? (size_t)n1 - s * 16 : 16;
        const char *from = (const char *)src + (s * 16 - (size_t)n0) * es;
        for (k = 0; k < K; k++) {
            char *d = (char *)dst + ((s * (size_t)K + (size_t)k) * 16) * es;
            memcpy(d, from + (size_t)k * ld * es, c * es);
            memset(d + c * es, 0, (16 - c) * es);
        }
    }
}

void hlx_kernels_w_s16_pack(hlx_dtype_t t, int K, int N, const void *src, void *dst)
{
    hlx_kernels_w_s16_pack_cols(t, K, N, 0, N, src, (size_t)N, dst);
}

void hlx_kernels_reference(hlx_kernels_t *k)
{
    k->name    = "scalar";
    k->kv_layout = (hlx_kv_layout_t){ 1, 1, 1, 1 };
    k->w_s16   = 0;
    k->gemm_pass_rows[0] = k->gemm_pass_rows[1] = 0;
    k->attn    = hlx_ref_attn;
    k->attn_covers = NULL; /* the reference is this variant's path */
    k->merge   = hlx_ref_merge;
    k->rmsnorm = hlx_ref_rmsnorm;
    k->rope    = hlx_ref_rope;
    k->swiglu  = hlx_ref_swiglu;
    k->geglu   = hlx_ref_geglu;
    k->argmax  = hlx_ref_argmax;
    k->gemm    = hlx_ref_gemm;
    k->gemm_cols = hlx_ref_gemm_cols;
    k->wq_dequant = hlx_wq_dequant_ref;
    k->wq_gemm = NULL; /* through the dequantized scratch */
    k->wq_rows = 0;
    k->wq_rows_exact = 0;
    k->wq_fast = 0;
}
