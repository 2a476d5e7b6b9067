/* Vector kernels written once over a small set of vector macros and included by each ISA
 * file (avx2.c, avx512.c) after it defines them:
 *   HLX_V (type), HLX_W (lanes), HLX_GMAX (query heads per KV load), HLX_SFX (name suffix),
 *   hlx_v_load/store/set1/zero/add/mul/fma/max/sub, hlx_v_eqmask (lanes equal, ordered, as
 *   bits), hlx_v_hsum/hmax(v[HLX_W]) (lane t =
 *   sum/max of v[t]), hlx_v_exp, hlx_v_pair_f32/bf16 (2W elements ->
 *   two vectors; bf16 splits even and odd elements, so q and o use that order inside).
 * Shapes the vector path does not cover fall back to the reference (stated in each op). */

#ifndef HLX_PF_HINT
#define HLX_PF_HINT _MM_HINT_T0
#endif

#define HLX_CAT2(a, b) a##_##b
#define HLX_CAT(a, b) HLX_CAT2(a, b)
#define HLX_FN(name) HLX_CAT(name, HLX_SFX)

/* Tokens per superblock: its KV stays in L2 while every head chunk passes over it. Groups
 * of several chunks (MLA: 16) use longer superblocks so the per-chunk setup (q reordering)
 * is amortized; 256 MLA tokens are about 300 KB of bf16 latent. */
#define HLX_TB_ONE  (4 * HLX_W)
#define HLX_TB_MANY (16 * HLX_W)
#define HLX_HMAX 256        /* heads per pass: online-softmax state lives on the stack */

/* Loads 2W KV elements starting at p as two vectors (bf16: even, odd). */
/* BF is the KV type code: 0 f32, 1 bf16 (even/odd order), 2 fp8 e4m3 (natural order),
 * 3 fp8 e4m3 widened another way by the ISA file that defines HLX_V_PAIR_FP8T and
 * hlx_v_pair_fp8t / hlx_v_pair2_fp8t: avx512.c by table lookups (blocked path; its own
 * element order), avx2.c through fp16 for blocks without NaN (natural order, 2^-8 of the
 * value: the caller scales scores and p back); 4 (HLX_V_PAIR_FP8H and hlx_v_pair_fp8h):
 * avx512.c what avx2.c's 3 is, where 3 is taken by the lookups; avx2.c blocks without NaN
 * as fp32 bit patterns, 2^-120 of the value (the caller scales q and p). */
#ifndef HLX_V_PAIR_FP8T /* no KV type 3 in this ISA file */
#define hlx_v_pair_fp8t hlx_v_pair_fp8
#endif
#ifndef HLX_V_PAIR_FP8H /* no KV type 4 in this ISA file */
#define hlx_v_pair_fp8h hlx_v_pair_fp8
#endif
#define HLX_PAIR(BF, p, lo, hi) \
    do { \
        if ((BF) == 4) \
            hlx_v_pair_fp8h((const uint8_t *)(p), &(lo), &(hi)); \
        else if ((BF) == 3) \
            hlx_v_pair_fp8t((const uint8_t *)(p), &(lo), &(hi)); \
        else if ((BF) == 1) \
            hlx_v_pair_bf16((const uint16_t *)(p), &(lo), &(hi)); \
        else if ((BF) == 2) \
            hlx_v_pair_fp8((const uint8_t *)(p), &(lo), &(hi)); \
        else \
            hlx_v_pair_f32((const float *)(p), &(lo), &(hi)); \
    } while (0)
#define HLX_ES(BF) ((BF) == 1 ? 2 : (BF) >= 2 ? 1 : 4) /* bytes per KV element */

/* Scores of nt <= W tokens for G heads: sc[g][t] = q_g . k_t (unscaled), as G vectors. */
static inline __attribute__((always_inline)) void
HLX_FN(hlx_qk)(const int G, const int BF, const float *qp, int dk, const char *k,
               size_t kstride_b, int nt, HLX_V *sc)
{
    HLX_V part[HLX_GMAX][HLX_W];
    int t, c, g;

    _Pragma("GCC unroll 16") for (t = 0; t < HLX_W; t++) {
        HLX_V acc[HLX_GMAX];
        /* past the end: recompute the last token (no branch, no zero fill); the softmax
         * masks those lanes */
        const char *kt = k + (size_t)(t < nt ? t : nt - 1) * kstride_b;
        _Pragma("GCC unroll 8") for (g = 0; g < G; g++)
            acc[g] = hlx_v_zero();
        for (c = 0; c < dk; c += 2 * HLX_W) {
            HLX_V k0, k1;
            HLX_PAIR(BF, kt + (size_t)c * HLX_ES(BF), k0, k1);
            _Pragma("GCC unroll 8") for (g = 0; g < G; g++) {
                acc[g] = hlx_v_fma(hlx_v_load(qp + (size_t)g * dk + c), k0, acc[g]);
                acc[g] = hlx_v_fma(hlx_v_load(qp + (size_t)g * dk + c + HLX_W), k1, acc[g]);
            }
        }
        _Pragma("GCC unroll 8") for (g = 0; g < G; g++)
            part[g][t] = acc[g];
    }
    _Pragma("GCC unroll 8") for (g = 0; g < G; g++)
        sc[g] = hlx_v_hsum(part[g]);
}

/* o[g][c..] = o*corr[g] + sum_t p[g][t] v_t for G heads, nt tokens, the columns [c0, c1)
 * of dv (multiples of 2W; corr NULL: o + sum_t p[g][t] v_t). The 2W columns from c of token t are read at
 * v + t * vts + (c / 2W) * vcs: rows have vts = the row stride and vcs = 2W elements, the
 * blocked values of avx512/avx2 (runs of 2W elements per token) vts = 2W elements and
 * vcs = 2W elements x the tokens of a block.
 * p is [g][W] (PT 0, head-major), [t][GMAX] (PT 1, token-major, the AMX path) or [g][32]
 * (PT 2, the blocked-key path of avx512.c). */
static inline __attribute__((always_inline)) void
HLX_FN(hlx_pv_body)(const int G, const int BF, const int PT, const int PF, const float *p,
                    const float *corr, int dv, const char *v, size_t vts, size_t vcs,
                    int nt, float *o, const char *pfa, const char *pfb, size_t pfstep,
                    int c0, int c1)
{
    int c, t, g;

    for (c = c0; c < c1; c += 2 * HLX_W) {
        HLX_V a0[HLX_GMAX], a1[HLX_GMAX];
        if (corr != NULL) {
            _Pragma("GCC unroll 8") for (g = 0; g < G; g++) {
                HLX_V cg = hlx_v_set1(corr[g]);
                a0[g] = hlx_v_mul(hlx_v_load(o + (size_t)g * dv + c), cg);
                a1[g] = hlx_v_mul(hlx_v_load(o + (size_t)g * dv + c + HLX_W), cg);
            }
        } else { /* no rescale (the blocked path when the maxima did not change) */
            _Pragma("GCC unroll 8") for (g = 0; g < G; g++) {
                a0[g] = hlx_v_load(o + (size_t)g * dv + c);
                a1[g] = hlx_v_load(o + (size_t)g * dv + c + HLX_W);
            }
        }
        t = 0;
#ifdef HLX_V_PAIR_FP8T
        if (BF == 3) /* fp8 by table lookups: two value rows per lookup (64 bytes) */
            for (; t + 1 < nt; t += 2) {
                HLX_V v0, v1, w0, w1;
                hlx_v_pair2_fp8t((const uint8_t *)v + (size_t)t * vts +
                                     (size_t)(c / (2 * HLX_W)) * vcs,
                                 vts, &v0, &v1, &w0, &w1);
                if (PF) {
                    size_t at = ((size_t)(c / (2 * HLX_W)) * nt + t) * pfstep, l;
                    for (l = 0; l < 2 * pfstep; l += 64) {
                        _mm_prefetch(pfa + at + l, HLX_PF_HINT);
                        if (pfb != pfa)
                            _mm_prefetch(pfb + at + l, HLX_PF_HINT);
                    }
                }
                _Pragma("GCC unroll 8") for (g = 0; g < G; g++) {
                    HLX_V pg = hlx_v_set1(PT == 2 ? p[g * 32 + t]
                                          : PT ? p[t * HLX_GMAX + g] : p[g * HLX_W + t]);
                    HLX_V ph = hlx_v_set1(PT == 2 ? p[g * 32 + t + 1]
                                          : PT ? p[(t + 1) * HLX_GMAX + g]
                                               : p[g * HLX_W + t + 1]);
                    a0[g] = hlx_v_fma(pg, v0, a0[g]);
                    a1[g] = hlx_v_fma(pg, v1, a1[g]);
                    a0[g] = hlx_v_fma(ph, w0, a0[g]);
                    a1[g] = hlx_v_fma(ph, w1, a1[g]);
                }
            }
#endif
        for (; t < nt; t++) {
            HLX_V v0, v1;
            HLX_PAIR(BF, v + (size_t)t * vts + (size_t)(c / (2 * HLX_W)) * vcs, v0, v1);
            if (PF) { /* pfstep bytes of each of two later blocks per step */
                size_t at = ((size_t)(c / (2 * HLX_W)) * nt + t) * pfstep, l;
                for (l = 0; l < pfstep; l += 64) {
                    _mm_prefetch(pfa + at + l, HLX_PF_HINT);
                    if (pfb != pfa) /* one stream: given twice, prefetched once */
                        _mm_prefetch(pfb + at + l, HLX_PF_HINT);
                }
            }
            _Pragma("GCC unroll 8") for (g = 0; g < G; g++) {
                HLX_V pg = hlx_v_set1(PT == 2 ? p[g * 32 + t]
                                      : PT ? p[t * HLX_GMAX + g] : p[g * HLX_W + t]);
                a0[g] = hlx_v_fma(pg, v0, a0[g]);
                a1[g] = hlx_v_fma(pg, v1, a1[g]);
            }
        }
        _Pragma("GCC unroll 8") for (g = 0; g < G; g++) {
            hlx_v_store(o + (size_t)g * dv + c, a0[g]);
            hlx_v_store(o + (size_t)g * dv + c + HLX_W, a1[g]);
        }
    }
}

/* The same with prefetches of pfa/pfb when given: one loop each way, so the loop without
 * them carries no test (MLA, compute-bound, lost 3% to it). Columns [c0, c1). */
static inline __attribute__((always_inline)) void
HLX_FN(hlx_pv_cols)(const int G, const int BF, const int PT, const float *p, const float *corr,
                    int dv, const char *v, size_t vts, size_t vcs, int nt, float *o,
                    const char *pfa, const char *pfb, size_t pfstep, int c0, int c1)
{
    if (pfa != NULL)
        HLX_FN(hlx_pv_body)(G, BF, PT, 1, p, corr, dv, v, vts, vcs, nt, o, pfa, pfb, pfstep,
                            c0, c1);
    else
        HLX_FN(hlx_pv_body)(G, BF, PT, 0, p, corr, dv, v, vts, vcs, nt, o, pfa, pfb, pfstep,
                            c0, c1);
}

/* All dv columns. */
static inline __attribute__((always_inline)) void
HLX_FN(hlx_pv)(const int G, const int BF, const int PT, const float *p, const float *corr,
               int dv, const char *v, size_t vts, size_t vcs, int nt, float *o,
               const char *pfa, const char *pfb, size_t pfstep)
{
    HLX_FN(hlx_pv_cols)(G, BF, PT, p, corr, dv, v, vts, vcs, nt, o, pfa, pfb, pfstep, 0, dv);
}

/* One head chunk (G <= GMAX heads) over nt <= W tokens: scores, online softmax, P.V.
 * The softmax bookkeeping runs on all G heads at once: per-head maxima and sums come from
 * the same transpose-reduce trees as the scores, so no scalar exp or reduction per head. */
static inline __attribute__((always_inline)) void
HLX_FN(hlx_attn_blk)(const int G, const int BF, const int D, const hlx_attn_desc_t *d,
                     const float *qp, const char *k, const char *v, size_t ksb, size_t vsb,
                     int nt, float *m, float *s, float *o, const char *pfk, const char *pfv,
                     size_t pfstep)
{
    const int dk = D ? D : d->dk, dv = D ? D : d->dv; /* D: head size known at compile time */
    static const float tailmask[2 * HLX_W] = {
        0, 0, 0, 0, 0, 0, 0, 0,
#if HLX_W == 16
        0, 0, 0, 0, 0, 0, 0, 0,
        -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
#endif
        -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY,
    };
    HLX_V sc[HLX_W], mnew, corr, sum;
    float p[HLX_GMAX * HLX_W] __attribute__((aligned(64)));
    float mv[HLX_W] __attribute__((aligned(64))), cv[HLX_W] __attribute__((aligned(64)));
    float sv[HLX_W] __attribute__((aligned(64)));
    const HLX_V scale = hlx_v_set1(d->scale);
    int g;

    HLX_FN(hlx_qk)(G, BF, qp, dk, k, ksb, nt, sc);
    {
        const HLX_V tm = hlx_v_load(tailmask + HLX_W - nt); /* 0 for t < nt, else -inf */
        _Pragma("GCC unroll 8") for (g = 0; g < G; g++)
            sc[g] = hlx_v_add(hlx_v_mul(sc[g], scale), tm);
    }
    for (g = G; g < HLX_W; g++) /* unused lanes of the trees */
        sc[g] = sc[0];
    for (g = 0; g < HLX_W; g++) {
        mv[g] = g < G ? m[g] : 0.0f;
        sv[g] = g < G ? s[g] : 0.0f;
    }
    /* lane g: max over this block's tokens of head g, then the running max */
    mnew = hlx_v_max(hlx_v_hmax(sc), hlx_v_load(mv));
    /* m = -inf before the first token: corr is then tiny, and it multiplies o = 0, s = 0 */
    corr = hlx_v_exp(hlx_v_sub(hlx_v_load(mv), mnew));
    hlx_v_store(mv, mnew);
    hlx_v_store(cv, corr);
    _Pragma("GCC unroll 8") for (g = 0; g < G; g++) {
        sc[g] = hlx_v_exp(hlx_v_sub(sc[g], hlx_v_set1(mv[g])));
        hlx_v_store(p + g * HLX_W, sc[g]);
    }
    sum = hlx_v_hsum(sc);
    hlx_v_store(sv, hlx_v_fma(hlx_v_load(sv), corr, sum));
    for (g = 0; g < G; g++) {
        m[g] = mv[g];
        s[g] = sv[g];
    }
    HLX_FN(hlx_pv)(G, BF, 0, p, cv, dv, v, vsb, (size_t)(2 * HLX_W * HLX_ES(BF)), nt, o, pfk,
                   pfv, pfstep);
}

/* One out-of-line function per (heads, KV type): each gets its own register allocation
 * (inlined into one big switch, the accumulators were spilled). The full head chunk with
 * head size 128 (the GQA shape) also gets a copy with the size fixed, fully unrolled. */
#define HLX_BLK_DEF_D(n, bf, tag, D) \
    static __attribute__((noinline)) void HLX_FN(hlx_blk_##tag##n)( \
        const hlx_attn_desc_t *d, const float *qp, const char *k, const char *v, size_t ksb, \
        size_t vsb, int nt, float *m, float *s, float *o, const char *pfk, const char *pfv, \
        size_t pfstep) \
    { \
        HLX_FN(hlx_attn_blk)(n, bf, D, d, qp, k, v, ksb, vsb, nt, m, s, o, pfk, pfv, pfstep); \
    }
#define HLX_BLK_DEF(n, bf, tag) HLX_BLK_DEF_D(n, bf, tag, 0)
#define HLX_BLK_DEF_X(n, bf, tag, D) HLX_BLK_DEF_D(n, bf, tag, D) /* expands n first */
HLX_BLK_DEF_X(HLX_GMAX, 0, f128_, 128)
HLX_BLK_DEF_X(HLX_GMAX, 1, b128_, 128)
HLX_BLK_DEF_X(HLX_GMAX, 2, e128_, 128)
HLX_BLK_DEF(1, 0, f) HLX_BLK_DEF(2, 0, f) HLX_BLK_DEF(3, 0, f) HLX_BLK_DEF(4, 0, f)
HLX_BLK_DEF(1, 1, b) HLX_BLK_DEF(2, 1, b) HLX_BLK_DEF(3, 1, b) HLX_BLK_DEF(4, 1, b)
HLX_BLK_DEF(1, 2, e) HLX_BLK_DEF(2, 2, e) HLX_BLK_DEF(3, 2, e) HLX_BLK_DEF(4, 2, e)
#if HLX_GMAX > 4
HLX_BLK_DEF(5, 0, f) HLX_BLK_DEF(6, 0, f) HLX_BLK_DEF(7, 0, f) HLX_BLK_DEF(8, 0, f)
HLX_BLK_DEF(5, 1, b) HLX_BLK_DEF(6, 1, b) HLX_BLK_DEF(7, 1, b) HLX_BLK_DEF(8, 1, b)
HLX_BLK_DEF(5, 2, e) HLX_BLK_DEF(6, 2, e) HLX_BLK_DEF(7, 2, e) HLX_BLK_DEF(8, 2, e)
#endif

typedef void (*HLX_FN(hlx_blk_fn))(const hlx_attn_desc_t *, const float *, const char *,
                                   const char *, size_t, size_t, int, float *, float *, float *,
                                   const char *, const char *, size_t);
static const HLX_FN(hlx_blk_fn) HLX_FN(hlx_blk_tab)[3][HLX_GMAX] = {
    { HLX_FN(hlx_blk_f1), HLX_FN(hlx_blk_f2), HLX_FN(hlx_blk_f3), HLX_FN(hlx_blk_f4),
#if HLX_GMAX > 4
      HLX_FN(hlx_blk_f5), HLX_FN(hlx_blk_f6), HLX_FN(hlx_blk_f7), HLX_FN(hlx_blk_f8),
#endif
    },
    { HLX_FN(hlx_blk_b1), HLX_FN(hlx_blk_b2), HLX_FN(hlx_blk_b3), HLX_FN(hlx_blk_b4),
#if HLX_GMAX > 4
      HLX_FN(hlx_blk_b5), HLX_FN(hlx_blk_b6), HLX_FN(hlx_blk_b7), HLX_FN(hlx_blk_b8),
#endif
    },
    { HLX_FN(hlx_blk_e1), HLX_FN(hlx_blk_e2), HLX_FN(hlx_blk_e3), HLX_FN(hlx_blk_e4),
#if HLX_GMAX > 4
      HLX_FN(hlx_blk_e5), HLX_FN(hlx_blk_e6), HLX_FN(hlx_blk_e7), HLX_FN(hlx_blk_e8),
#endif
    },
};

#define HLX_BLK_NAME2(tag, n) HLX_FN(hlx_blk_##tag##n)
#define HLX_BLK_NAME(tag, n) HLX_BLK_NAME2(tag, n)
static const HLX_FN(hlx_blk_fn) HLX_FN(hlx_blk_tab128)[3] = {
    HLX_BLK_NAME(f128_, HLX_GMAX), HLX_BLK_NAME(b128_, HLX_GMAX), HLX_BLK_NAME(e128_, HLX_GMAX),
};

/* Puts q rows in the element order the KV loads produce (bf16: even then odd per 2W). */
static void HLX_FN(hlx_q_order)(int BF, const float *q, int G, int dk, float *qp)
{
    int g, c, i;

    for (g = 0; g < G; g++)
        for (c = 0; c < dk; c += 2 * HLX_W)
            for (i = 0; i < HLX_W; i++) {
                const float *src = q + (size_t)g * dk + c;
                float *dst = qp + (size_t)g * dk + c;
                dst[i]         = BF == 1 ? src[2 * i] : src[i];
                dst[HLX_W + i] = BF == 1 ? src[2 * i + 1] : src[HLX_W + i];
            }
}

/* AMX (bf16 KV, avx512.c only): full 32-token blocks take the tile path, whose scores come
 * from tile dot products of q split into three exact bf16 parts; the rest of a superblock
 * (fewer than 32 tokens) takes the vector block functions, which share m, s and o. */
static inline __attribute__((always_inline)) void
HLX_FN(hlx_attn_typed)(const int BF, const int AMX, uint16_t *qb, const hlx_attn_desc_t *d)
{
    const size_t es = HLX_ES(BF), ksb = d->k_stride * es, vsb = d->v_stride * es;
    /* prefetch bytes per P.V step (dv / 2W column passes x W tokens) covering one block */
    const size_t pfspan = HLX_W * (ksb > vsb ? ksb : vsb);
    const size_t pfsteps = d->dv >= 2 ? (size_t)d->dv / 2 : 1; /* dv 0: no steps, no prefetch */
    const size_t pfstep = ((pfspan + pfsteps - 1) / pfsteps + 63) / 64 * 64;
    float m[HLX_HMAX], s[HLX_HMAX];
    float qp[HLX_GMAX * 1024] __attribute__((aligned(64)));
    int h0, g0, g, e;
    size_t j0, j;

    for (h0 = 0; h0 < d->group; h0 += HLX_HMAX) {
        int H = d->group - h0 < HLX_HMAX ? d->group - h0 : HLX_HMAX;
        float *oh = d->o + (size_t)h0 * d->dv;
        for (g = 0; g < H; g++) {
            m[g] = -INFINITY;
            s[g] = 0.0f;
        }
        memset(oh, 0, sizeof(float) * (size_t)H * d->dv);
        /* AMX: the tile pipeline restarts per superblock, so one head chunk takes the
         * whole shard; several chunks (MLA) take 1024 tokens (1.1 MB of bf16 latent, in
         * L2), which measured faster than 256 or 512 (0.138 vs 0.148 / 0.143 s at 64K) */
        const size_t tb = AMX ? (H > HLX_GMAX ? 4 * HLX_TB_MANY : (size_t)1 << 62)
                              : H > HLX_GMAX ? HLX_TB_MANY : HLX_TB_ONE;
        for (j0 = 0; j0 < d->len; j0 += tb) {
            size_t jn = d->len - j0 < tb ? d->len - j0 : tb;
            for (g0 = 0; g0 < H; g0 += HLX_GMAX) {
                int G = H - g0 < HLX_GMAX ? H - g0 : HLX_GMAX;
                const float *qg = d->q + (size_t)(h0 + g0) * d->dk;
                /* one head chunk: q in load order (re-done per superblock only when the
                 * group needs several chunks) */
                if (BF == 1 && (j0 == 0 || H > HLX_GMAX))
                    HLX_FN(hlx_q_order)(BF, qg, G, d->dk, qp);
                j = j0;
#ifdef HLX_AMX_TB
                if (AMX) {
                    if (j0 == 0 || H > HLX_GMAX)
                        hlx_amx_q_tiles(qg, G, d->dk, qb);
                    size_t nb = jn / HLX_AMX_TB;
                    hlx_amx_run(G, d, qb, (const char *)d->k + j * ksb,
                                (const char *)d->v + j * vsb, ksb, vsb, nb, g0 == 0, m + g0,
                                s + g0, oh + (size_t)g0 * d->dv);
                    j += nb * HLX_AMX_TB;
                }
#endif
                for (; j < j0 + jn; j += HLX_W) {
                    int nt = (int)(j0 + jn - j < HLX_W ? j0 + jn - j : HLX_W);
                    const char *kb = (const char *)d->k + j * ksb;
                    const char *vb = (const char *)d->v + j * vsb;
                    const float *qq = BF == 1 ? qp : qg;
                    float *og = oh + (size_t)g0 * d->dv;
                    /* prefetch the next block's key and value rows, spread over the P.V
                     * steps, when one head chunk streams the shard (several chunks, as
                     * MLA's, are compute-bound and find the superblock in L2).
                     * One block ahead measured best at 1M tokens (bf16 67 -> 57 ms, f32
                     * 111 -> 86 ms; two or four blocks ahead gained less); bursts of
                     * prefetches at a block start, tried before, stalled on the line fill
                     * buffers and were slower than none. */
                    const int pf = nt == HLX_W && H <= HLX_GMAX;
                    const char *pk = pf ? kb + HLX_W * ksb : NULL;
                    const char *pv = pf ? vb + HLX_W * vsb : NULL;
                    if (G == HLX_GMAX && d->dk == 128 && d->dv == 128)
                        HLX_FN(hlx_blk_tab128)[BF](d, qq, kb, vb, ksb, vsb, nt, m + g0, s + g0,
                                                   og, pk, pv, pfstep);
                    else
                        HLX_FN(hlx_blk_tab)[BF][G - 1](d, qq, kb, vb, ksb, vsb, nt, m + g0,
                                                       s + g0, og, pk, pv, pfstep);
                }
            }
        }
        for (g = 0; g < H; g++) {
            float *og = oh + (size_t)g * d->dv;
            float inv = d->len ? 1.0f / s[g] : 0.0f;
            if (BF == 1) { /* back to natural order */
                float tmp[2 * HLX_W];
                int c;
                for (c = 0; c < d->dv; c += 2 * HLX_W) {
                    for (e = 0; e < HLX_W; e++) {
                        tmp[2 * e]     = og[c + e];
                        tmp[2 * e + 1] = og[c + HLX_W + e];
                    }
                    memcpy(og + c, tmp, sizeof(tmp));
                }
            }
            for (e = 0; e < d->dv; e++)
                og[e] *= inv;
            d->lse[h0 + g] = d->len ? m[g] + logf(s[g]) : -INFINITY;
        }
    }
}

/* Vector path: f32, bf16 and fp8 e4m3 KV with dk, dv multiples of 2W and dk <= 1024,
 * without soft-capping; other head sizes and capped scores go to the reference. */
static __attribute__((unused)) int HLX_FN(hlx_attn_covers)(const hlx_attn_desc_t *d)
{
    return hlx_attn_shape_fits(d, 2 * HLX_W, 0) && d->softcap == 0.0f;
}

static __attribute__((unused)) void HLX_FN(hlx_attn)(const hlx_attn_desc_t *d)
{
    if (!HLX_FN(hlx_attn_covers)(d)) {
        hlx_kernels_t ref;
        hlx_kernels_reference(&ref);
        ref.attn(d);
        return;
    }
    if (d->kv_dtype == HLX_DTYPE_BF16)
        HLX_FN(hlx_attn_typed)(1, 0, NULL, d);
    else if (d->kv_dtype == HLX_DTYPE_FP8)
        HLX_FN(hlx_attn_typed)(2, 0, NULL, d);
    else
        HLX_FN(hlx_attn_typed)(0, 0, NULL, d);
}

static void HLX_FN(hlx_merge)(int nparts, int nheads, int dv, const float *o_parts,
                              const float *lse_parts, float *o, float *lse)
{
    int h, p, e;

    for (h = 0; h < nheads; h++) {
        float mx = -INFINITY, sum = 0.0f, inv;
        float *oh = o + (size_t)h * dv;
        for (p = 0; p < nparts; p++)
            mx = lse_parts[(size_t)p * nheads + h] > mx ? lse_parts[(size_t)p * nheads + h] : mx;
        memset(oh, 0, sizeof(float) * (size_t)dv);
        if (mx == -INFINITY) {
            lse[h] = -INFINITY;
            continue;
        }
        for (p = 0; p < nparts; p++) {
            float w = expf(lse_parts[(size_t)p * nheads + h] - mx);
            const float *op = o_parts + ((size_t)p * nheads + h) * dv;
            HLX_V wv = hlx_v_set1(w);
            if (w == 0.0f)
                continue; /* an empty part: its o may be anything finite or not */
            sum += w;
            for (e = 0; e + HLX_W <= dv; e += HLX_W)
                hlx_v_store(oh + e, hlx_v_fma(wv, hlx_v_load(op + e), hlx_v_load(oh + e)));
            for (; e < dv; e++)
                oh[e] += w * op[e];
        }
        inv = 1.0f / sum;
        for (e = 0; e + HLX_W <= dv; e += HLX_W)
            hlx_v_store(oh + e, hlx_v_mul(hlx_v_load(oh + e), hlx_v_set1(inv)));
        for (; e < dv; e++)
            oh[e] *= inv;
        lse[h] = mx + logf(sum);
    }
}

static void HLX_FN(hlx_rmsnorm)(float *y, const float *x, const float *w, int n, float eps)
{
    double ss = 0.0;
    HLX_V acc = hlx_v_zero(), r;
    float rs;
    int i;

    /* fp32 partial sums per lane, fp64 total: same accuracy class as the reference */
    for (i = 0; i + HLX_W <= n; i += HLX_W) {
        HLX_V xv = hlx_v_load(x + i);
        acc = hlx_v_fma(xv, xv, acc);
    }
    {
        float tmp[HLX_W];
        int l;
        hlx_v_store(tmp, acc);
        for (l = 0; l < HLX_W; l++)
            ss += tmp[l];
    }
    for (; i < n; i++)
        ss += (double)x[i] * x[i];
    rs = (float)(1.0 / sqrt(ss / n + eps));
    r = hlx_v_set1(rs);
    for (i = 0; i + HLX_W <= n; i += HLX_W)
        hlx_v_store(y + i, hlx_v_mul(hlx_v_mul(hlx_v_load(x + i), r), hlx_v_load(w + i)));
    for (; i < n; i++)
        y[i] = x[i] * rs * w[i];
}

/* The reference's argmax in two passes: the largest value (max(x, acc) keeps acc where x is
 * NaN), then the first element equal to it (a value above -inf equals only itself and, for
 * zero, the other zero: the element the reference's strict > keeps). m is one of x, so the
 * second pass stops inside it. */
static int HLX_FN(hlx_argmax)(const float *x, int n, float *max)
{
    HLX_V a0 = hlx_v_set1(-INFINITY), a1 = a0, a2 = a0, a3 = a0, mv;
    float lanes[HLX_W], m = -INFINITY;
    int i = 0, t;

    for (; i + 4 * HLX_W <= n; i += 4 * HLX_W) {
        a0 = hlx_v_max(hlx_v_load(x + i), a0);
        a1 = hlx_v_max(hlx_v_load(x + i + HLX_W), a1);
        a2 = hlx_v_max(hlx_v_load(x + i + 2 * HLX_W), a2);
        a3 = hlx_v_max(hlx_v_load(x + i + 3 * HLX_W), a3);
    }
    for (; i + HLX_W <= n; i += HLX_W)
        a0 = hlx_v_max(hlx_v_load(x + i), a0);
    hlx_v_store(lanes, hlx_v_max(hlx_v_max(a0, a1), hlx_v_max(a2, a3)));
    for (t = 0; t < HLX_W; t++)
        m = lanes[t] > m ? lanes[t] : m;
    for (; i < n; i++)
        m = x[i] > m ? x[i] : m;
    *max = m;
    if (m == -INFINITY)
        return -1;
    mv = hlx_v_set1(m);
    for (i = 0; i + HLX_W <= n; i += HLX_W) {
        unsigned eq = hlx_v_eqmask(hlx_v_load(x + i), mv);
        if (eq != 0) {
            i += __builtin_ctz(eq);
            break;
        }
    }
    for (; i < n && x[i] != m; i++)
        ;
    *max = x[i]; /* the element itself: of two zeros, the first one's sign */
    return i;
}

static void HLX_FN(hlx_swiglu)(float *y, const float *gate, const float *up, int n)
{
    const HLX_V one = hlx_v_set1(1.0f), zero = hlx_v_zero();
    int i;

    for (i = 0; i + HLX_W <= n; i += HLX_W) {
        HLX_V gv = hlx_v_load(gate + i);
        HLX_V den = hlx_v_add(one, hlx_v_exp(hlx_v_sub(zero, gv)));
        hlx_v_store(y + i, hlx_v_mul(hlx_v_div(gv, den), hlx_v_load(up + i)));
    }
    for (; i < n; i++)
        y[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}
