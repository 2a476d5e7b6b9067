/* Shared helpers of the kernel tests: a seeded generator, random inputs, naive fp64
 * oracles written independently of kernels/ref.c (two-pass softmax, no online rescale), a
 * counting check and whether this CPU runs a variant. */
#ifndef KT_COMMON_H
#define KT_COMMON_H

#include "hlx_kernels.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kt_rng {
    uint64_t s;
} kt_rng_t;

static inline uint64_t kt_next(kt_rng_t *r)
{
    /* splitmix64: small, seedable, good enough for test inputs */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [lo, hi) */
static inline double kt_unif(kt_rng_t *r, double lo, double hi)
{
    return lo + (hi - lo) * (double)(kt_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

static inline int kt_int(kt_rng_t *r, int lo, int hi) /* inclusive */
{
    return lo + (int)(kt_next(r) % (uint64_t)(hi - lo + 1));
}

/* Stated tolerance of the fp32 reference (ref.c) vs fp64, relative to the head's error scale
 * max_e sum_j p_j |v_j[e]| (= max |o| without cancellation), growing with the sequential
 * sums (length and head size); and of its lse, absolute. test_ref holds the reference to
 * them; checkasm holds a variant to them where the shape is off its vector path (the call
 * runs the reference over the variant's layout: amx with soft-capped scores). */
static inline double kt_tol_o(size_t len, int dk)
{
    return 2e-6 * (1.0 + sqrt((double)len)) + 1e-6 * sqrt((double)dk);
}

static inline double kt_tol_lse(size_t len, double lse64)
{
    return 2e-6 * fmax(1.0, fabs(lse64)) + 1e-6 * log1p((double)len);
}

/* fp8 e4m3 (OCP, no infinities, 0x7f/0xff NaN) -> float; exact, written from the format. */
static inline double kt_fp8_to_f64(uint8_t b)
{
    int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    double v;
    if (e == 15 && m == 7)
        return NAN;
    v = e == 0 ? ldexp(m / 8.0, -6) : ldexp(1.0 + m / 8.0, e - 7);
    return s ? -v : v;
}

static inline double kt_load(const void *p, hlx_dtype_t t, size_t i)
{
    if (t == HLX_DTYPE_BF16)
        return hlx_bf16_to_f32(((const uint16_t *)p)[i]);
    if (t == HLX_DTYPE_FP8)
        return kt_fp8_to_f64(((const uint8_t *)p)[i]);
    return ((const float *)p)[i];
}

static inline size_t kt_esize(hlx_dtype_t t)
{
    return t == HLX_DTYPE_BF16 ? 2 : t == HLX_DTYPE_FP8 ? 1 : 4;
}

/* Fills n elements of type t with values in [-a, a) (exactly representable). */
static inline void kt_fill(kt_rng_t *r, void *p, hlx_dtype_t t, size_t n, double a)
{
    size_t i;
    for (i = 0; i < n; i++) {
        float f = (float)kt_unif(r, -a, a);
        if (t == HLX_DTYPE_BF16)
            ((uint16_t *)p)[i] = hlx_f32_to_bf16(f);
        else if (t == HLX_DTYPE_FP8) /* |v| <= 3.75: sign, exponent 0..8, mantissa */
            ((uint8_t *)p)[i] = (uint8_t)(((kt_next(r) & 1) << 7) |
                                          ((uint64_t)kt_int(r, 0, 8) << 3) | (kt_next(r) & 7));
        else
            ((float *)p)[i] = f;
    }
}

/* Naive fp64 attention of one head g: two passes (max, then sums). Returns the error
 * scale of the head, max_e sum_j p_j |v_j[e]|: rounding errors of o grow with it, not with
 * |o| (which cancellation can make arbitrarily small). */
static inline double kt_attn_f64(const hlx_attn_desc_t *d, int g, double *o, double *lse)
{
    const float *q = d->q + (size_t)g * d->dk;
    double m = -INFINITY, s = 0.0, scale = 0.0;
    size_t j;
    int e;
    double *sc = malloc(sizeof(double) * (d->len ? d->len : 1));
    double *oa = calloc((size_t)d->dv + 1, sizeof(double));

    for (e = 0; e < d->dv; e++)
        o[e] = 0.0;
    for (j = 0; j < d->len; j++) {
        double dot = 0.0;
        for (e = 0; e < d->dk; e++)
            dot += (double)q[e] * kt_load(d->k, d->kv_dtype, j * d->k_stride + (size_t)e);
        sc[j] = dot * d->scale;
        if (d->softcap > 0.0f) /* Gemma 2's soft-capping */
            sc[j] = d->softcap * tanh(sc[j] / d->softcap);
        if (sc[j] > m)
            m = sc[j];
    }
    for (j = 0; j < d->len; j++) {
        double w = exp(sc[j] - m);
        s += w;
        for (e = 0; e < d->dv; e++) {
            double v = kt_load(d->v, d->kv_dtype, j * d->v_stride + (size_t)e);
            o[e] += w * v;
            oa[e] += w * fabs(v);
        }
    }
    free(sc);
    if (d->len == 0) {
        free(oa);
        *lse = -INFINITY;
        return 0.0;
    }
    for (e = 0; e < d->dv; e++) {
        o[e] /= s;
        scale = fmax(scale, oa[e] / s);
    }
    free(oa);
    *lse = m + log(s);
    return scale;
}

/* A random attention problem with its own buffers. */
typedef struct kt_attn {
    hlx_attn_desc_t d;
    float *q, *o, *lse;
    void  *k, *v;
} kt_attn_t;

static inline void kt_attn_make(kt_rng_t *r, kt_attn_t *a, int group, int dk, int dv,
                                size_t len, hlx_dtype_t t, int pad, double qamp)
{
    size_t ks = (size_t)dk + (pad ? (size_t)kt_int(r, 0, 9) : 0);
    size_t vs = (size_t)dv + (pad ? (size_t)kt_int(r, 0, 9) : 0);
    memset(a, 0, sizeof(*a));
    a->q   = malloc(sizeof(float) * (size_t)group * dk);
    a->o   = malloc(sizeof(float) * (size_t)group * dv);
    a->lse = malloc(sizeof(float) * (size_t)group);
    a->k   = malloc(kt_esize(t) * (ks * len + 1));
    a->v   = malloc(kt_esize(t) * (vs * len + 1));
    kt_fill(r, a->q, HLX_DTYPE_F32, (size_t)group * dk, qamp);
    kt_fill(r, a->k, t, ks * len, 1.0);
    kt_fill(r, a->v, t, vs * len, 1.0);
    a->d = (hlx_attn_desc_t){ .group = group, .dk = dk, .dv = dv, .len = len,
                              .kv_dtype = t, .q = a->q, .k = a->k, .v = a->v,
                              .k_stride = ks, .v_stride = vs,
                              .scale = (float)(1.0 / sqrt((double)dk)),
                              .o = a->o, .lse = a->lse };
}

/* Copy of one shard (rows of `stride` elements, the first d of them the token's, len
 * tokens) in blocks of b tokens, inside a block the token index innermost (chunk <= 1) or
 * runs of `chunk` elements per token ([d / chunk][b][chunk]; a chunk that does not divide
 * d: rows inside the block), the padding of the block's rows after its d x b elements
 * (hlx_kv_at, written out again here); slots past len and the row padding are poisoned
 * with 0xff bytes (NaN in every KV type), so a kernel that reads them fails. */
static inline void *kt_kv_relayout(const void *src, hlx_dtype_t t, size_t stride, size_t d,
                                   size_t len, int b, int chunk)
{
    const size_t es = kt_esize(t), bb = b > 1 ? (size_t)b : 1;
    const size_t slots = (len + bb - 1) / bb * bb;
    const size_t cc = chunk <= 1 ? 1 : d % (size_t)chunk ? d : (size_t)chunk;
    char *dst = malloc(es * (slots * stride + 1));
    size_t j, e;

    memset(dst, 0xff, es * (slots * stride + 1));
    for (j = 0; j < len; j++)
        for (e = 0; e < stride; e++) {
            size_t blk = j / bb * bb * stride, at;
            if (bb == 1)
                at = j * stride + e;
            else if (cc == 1)
                at = blk + e * bb + j % bb;
            else if (e < d)
                at = blk + e / cc * (bb * cc) + j % bb * cc + e % cc;
            else
                at = blk + bb * d + j % bb * (stride - d) + (e - d);
            memcpy(dst + at * es, (const char *)src + (j * stride + e) * es, es);
        }
    return dst;
}

static inline void kt_attn_free(kt_attn_t *a)
{
    free(a->q);
    free(a->o);
    free(a->lse);
    free(a->k);
    free(a->v);
}

/* A check that counts its failure in the including file's kt_fail and goes on. */
#define KT_EXPECT(cond, ...) \
    do { \
        if (!(cond)) { \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__); \
            fprintf(stderr, "\n"); \
            kt_fail++; \
        } \
    } while (0)

/* 1 when this CPU runs the variant (hlx_kernels_list names it). */
static inline int kt_usable(const char *name)
{
    const char *names[16];
    size_t i, n = hlx_kernels_list(names, 16);

    for (i = 0; i < n && i < 16; i++)
        if (!strcmp(names[i], name))
            return 1;
    return 0;
}

#endif
