/* AVX2+FMA variant: 8-lane fp32 vectors, 4 query heads per KV load (16 ymm registers),
 * bf16 KV widened by shifts, GEMMs by hand for weights in strips (any row count) and
 * row-major ones (bf16, f32 up to 8 rows; more f32 rows go to OpenBLAS). Built with -mavx2
 * -mfma; only entered after dispatch.c has checked the CPU. */
#include "hlx_kernels_priv.h"

#include <cblas.h>
#include <immintrin.h>

#define HLX_V    __m256
#define HLX_W    8
#define HLX_GMAX 4
#define HLX_SFX  avx2

static inline HLX_V hlx_v_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void  hlx_v_store(float *p, HLX_V v) { _mm256_storeu_ps(p, v); }
static inline HLX_V hlx_v_set1(float x) { return _mm256_set1_ps(x); }
static inline HLX_V hlx_v_zero(void) { return _mm256_setzero_ps(); }
static inline HLX_V hlx_v_add(HLX_V a, HLX_V b) { return _mm256_add_ps(a, b); }
static inline HLX_V hlx_v_sub(HLX_V a, HLX_V b) { return _mm256_sub_ps(a, b); }
static inline HLX_V hlx_v_mul(HLX_V a, HLX_V b) { return _mm256_mul_ps(a, b); }
static inline HLX_V hlx_v_div(HLX_V a, HLX_V b) { return _mm256_div_ps(a, b); }
static inline HLX_V hlx_v_fma(HLX_V a, HLX_V b, HLX_V c) { return _mm256_fmadd_ps(a, b, c); }

static inline HLX_V hlx_v_max(HLX_V a, HLX_V b) { return _mm256_max_ps(a, b); }
static inline unsigned hlx_v_eqmask(HLX_V a, HLX_V b)
{
    return (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(a, b, _CMP_EQ_OQ));
}

static inline float hlx_v_rsum(HLX_V v)
{
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_shuffle_ps(x, x, 1));
    return _mm_cvtss_f32(x);
}

static inline void hlx_v_pair_f32(const float *p, HLX_V *lo, HLX_V *hi)
{
    *lo = _mm256_loadu_ps(p);
    *hi = _mm256_loadu_ps(p + 8);
}

/* 16 bf16 -> even elements (shift up) and odd elements (mask the low half). */
static inline void hlx_v_pair_bf16(const uint16_t *p, HLX_V *lo, HLX_V *hi)
{
    __m256i x = _mm256_loadu_si256((const __m256i *)p);
    *lo = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
    *hi = _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32((int)0xffff0000u)));
}

/* 8 bf16 in order -> 8 floats. */
static inline HLX_V hlx_v_bf16_8(const uint16_t *p)
{
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}

/* 8 fp8 e4m3 bytes -> 8 floats, exactly (see avx512.c). */
static inline HLX_V hlx_v_fp8_8(const uint8_t *p)
{
    __m256i x = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
    __m256i mag = _mm256_and_si256(x, _mm256_set1_epi32(0x7f));
    __m256i sign = _mm256_slli_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x80)), 24);
    __m256 nrm = _mm256_castsi256_ps(
        _mm256_add_epi32(_mm256_slli_epi32(mag, 20), _mm256_set1_epi32(120 << 23)));
    __m256 sub = _mm256_mul_ps(_mm256_cvtepi32_ps(mag), _mm256_set1_ps(0x1p-9f));
    __m256 is_sub = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(8), mag));
    __m256 is_nan = _mm256_castsi256_ps(_mm256_cmpeq_epi32(mag, _mm256_set1_epi32(0x7f)));
    __m256 v = _mm256_blendv_ps(nrm, sub, is_sub);
    v = _mm256_blendv_ps(v, _mm256_set1_ps(NAN), is_nan);
    return _mm256_or_ps(v, _mm256_castsi256_ps(sign));
}

static inline void hlx_v_pair_fp8(const uint8_t *p, HLX_V *lo, HLX_V *hi)
{
    *lo = hlx_v_fp8_8(p);
    *hi = hlx_v_fp8_8(p + 8);
}

/* KV type 3 here: fp8 in blocks hlx_kb2_fp8_clean found free of NaN bytes. 16 fp8 e4m3
 * bytes -> 16 floats (elements 0-7, 8-15) in 6 ops where hlx_v_fp8_8 takes 13 for 8,
 * exact for every byte but the NaNs 0x7f and 0xff (+-480 here): e4m3 is fp16 with the
 * exponent bias 8 lower and 7 fewer mantissa bits, so s.eeee.mmm moved to fp16's
 * s.0eeee.mmm0000000 (sign-extended, shifted, bit 14 cleared) converts by vcvtph2ps,
 * subnormals included, to 2^-8 times the e4m3 value (Zen 5, 1M tokens: 84 -> 62 ms).
 * The factor 2^8 is left to the caller, which folds it into the scale of the scores and
 * into p (HLX_FP8T_UNIT; a power of two: the results are the same bits as with the
 * values multiplied back; in cache 74 -> 78 GFLOP/s, 1M tokens 61-65 -> 59-63 ms). */
#define HLX_FP8T_UNIT 256.0f
static inline void hlx_v_pair_fp8t(const uint8_t *p, HLX_V *lo, HLX_V *hi)
{
    const __m256i h = _mm256_and_si256(
        _mm256_slli_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p)), 7),
        _mm256_set1_epi16((short)0xbfff));
    *lo = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
    *hi = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
}

/* Two rows of 16 (p and p + stride) for the P.V of simd_tmpl.h. */
static inline void hlx_v_pair2_fp8t(const uint8_t *p, size_t stride, HLX_V *lo, HLX_V *hi,
                                    HLX_V *lo2, HLX_V *hi2)
{
    hlx_v_pair_fp8t(p, lo, hi);
    hlx_v_pair_fp8t(p + stride, lo2, hi2);
}
#define HLX_V_PAIR_FP8T 1

/* KV type 4 here: fp8 in blocks free of NaN bytes (as type 3) as the bits of an fp32 that
 * is 2^-120 times the e4m3 value: the byte sign-extended, shifted so e4m3's exponent sits
 * in the low 4 bits of fp32's (its subnormals become fp32 subnormals, exactly) and the
 * extended sign bits cleared: 3 integer ops per 8 elements and no conversion, where type 3
 * spends 6 per 16 with two vcvtph2ps (Zen 3, GQA 8, 1M tokens: 74-76 -> 67-71 ms).
 * The caller multiplies q by HLX_FP8H_UNIT (exact where every |q| < 2^8, which it checks),
 * so each product q.k in the FMAs is exactly the true one and the scores come out in true
 * units, and p by HLX_FP8H_UNIT for the values; DAZ must be off (as for type 3). */
#define HLX_FP8H_UNIT 0x1p120f
#define HLX_FP8H_QMAX 256.0f
static inline HLX_V hlx_v_fp8h_8(const uint8_t *p)
{
    const __m256i x = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p));
    return _mm256_castsi256_ps(
        _mm256_and_si256(_mm256_slli_epi32(x, 20), _mm256_set1_epi32((int)0x87f00000u)));
}

static inline void hlx_v_pair_fp8h(const uint8_t *p, HLX_V *lo, HLX_V *hi)
{
    *lo = hlx_v_fp8h_8(p);
    *hi = hlx_v_fp8h_8(p + 8);
}
#define HLX_V_PAIR_FP8H 1

/* 8 vectors -> one vector whose lane t is OP over v[t]: a transpose tree. */
#define HLX_HRED(name, OP) \
    static inline HLX_V name(const HLX_V *v) \
    { \
        HLX_V x[4], z0, z1; \
        int i; \
        for (i = 0; i < 4; i++) \
            x[i] = OP(_mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]), \
                      _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1])); \
        z0 = OP(_mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(x[0]), _mm256_castps_pd(x[1]))), \
                _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(x[0]), _mm256_castps_pd(x[1])))); \
        z1 = OP(_mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(x[2]), _mm256_castps_pd(x[3]))), \
                _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(x[2]), _mm256_castps_pd(x[3])))); \
        return OP(_mm256_permute2f128_ps(z0, z1, 0x20), _mm256_permute2f128_ps(z0, z1, 0x31)); \
    }
HLX_HRED(hlx_v_hsum, _mm256_add_ps)
HLX_HRED(hlx_v_hmax, _mm256_max_ps)

/* exp(x) as in avx512.c: clamp to [-87.3, 88.3], 2^n * degree-7 Taylor polynomial. */
static inline HLX_V hlx_v_exp(HLX_V x)
{
    HLX_V n, r, p;
    __m256i ei;

    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
    n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-06f), r);
    p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    ei = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(ei));
}

#include "simd_tmpl.h"

/* 2^x for x <= 0 (-inf too), as hlx_v_exp2n in avx512.c: round, exact fraction, degree-6
 * Taylor polynomial of 2^f, exponent added to the bits; clamped at -126. The blocked path
 * keeps its scores and maxima in log2 units. */
static inline __m256 hlx_v_exp2n(__m256 x)
{
    __m256 n, f, p;
    __m256i ei;

    x = _mm256_max_ps(x, _mm256_set1_ps(-126.0f));
    n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    f = _mm256_sub_ps(x, n);
    p = _mm256_set1_ps(1.5403530393381606e-4f);
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3333558146428443e-3f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.6181291076284772e-3f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.5504108664821580e-2f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.4022650695910071e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.9314718055994531e-1f));
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
    ei = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(ei));
}

/* Soft-capped scores in log2 units from raw ones x, as hlx_v_softcap in avx512.c:
 * out tanh(u), u = x in ln(2) / 2; |u| >= 1/4: sign(u) (1 - t) / (1 + t) with
 * t = 2^(-|x in|) <= e^(-1/2), below: the Taylor series to u^9. */
static inline __m256 hlx_v_softcap(__m256 x, __m256 in, __m256 out)
{
    const __m256 sign = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
    const __m256 a = _mm256_mul_ps(x, in);
    const __m256 u = _mm256_mul_ps(a, _mm256_set1_ps(0.34657359027997264f)); /* ln(2) / 2 */
    const __m256 u2 = _mm256_mul_ps(u, u);
    const __m256 t = hlx_v_exp2n(_mm256_or_ps(a, sign)); /* -|a| */
    const __m256 th = _mm256_div_ps(_mm256_sub_ps(one, t), _mm256_add_ps(one, t));
    const __m256 big = _mm256_or_ps(th, _mm256_and_ps(a, sign));
    __m256 p = _mm256_set1_ps(62.0f / 2835.0f);

    p = _mm256_fmadd_ps(p, u2, _mm256_set1_ps(-17.0f / 315.0f));
    p = _mm256_fmadd_ps(p, u2, _mm256_set1_ps(2.0f / 15.0f));
    p = _mm256_fmadd_ps(p, u2, _mm256_set1_ps(-1.0f / 3.0f));
    p = _mm256_fmadd_ps(_mm256_mul_ps(u, u2), p, u); /* u (1 + u^2 p) */
    return _mm256_mul_ps(_mm256_blendv_ps(big, p, _mm256_cmp_ps(_mm256_andnot_ps(sign, u),
                                                                 _mm256_set1_ps(0.25f),
                                                                 _CMP_LT_OQ)),
                         out);
}

/* Blocked-key path (the avx2 variant's layout, hlx_kv_layout_t {16, 1, 1, 1}): keys
 * stored per block of 16 tokens with the token index innermost ([block][dk][16]), so one
 * 32-byte load (bf16) holds dimension e of 16 tokens and the scores of 16 tokens
 * accumulate in two vectors per head by FMAs with q[g][e] broadcast: no horizontal sums,
 * no reordering of q. Up to 4 heads per pass (8 accumulators, two key vectors and the
 * broadcast in 16 registers). Values stay in rows for the P.V of simd_tmpl.h (values in
 * blocks of 16-element runs, as the avx512 variant keeps them, measured no faster here:
 * Zen 5, 1M tokens, bf16 53.7 against 51.1 ms, f32 and fp8 equal); when v == k (MLA
 * absorbed) the value rows of a block are unpacked to fp32 rows on the stack first. */
#define HLX_KB2 16
static const hlx_kv_layout_t hlx_kb2_layout = { HLX_KB2, 1, 1, 1 };

/* The 16 keys' dimension e: bf16 as even / odd tokens (shift, mask), f32 and fp8 as
 * tokens 0-7 / 8-15. */
static inline __attribute__((always_inline)) void hlx_kb2_load(const int BF, const char *kb, int e,
                                                               __m256 *k0, __m256 *k1)
{
    if (BF == 1) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(kb + (size_t)e * 32));
        *k0 = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
        *k1 = _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32((int)0xffff0000u)));
    } else if (BF == 2) {
        *k0 = hlx_v_fp8_8((const uint8_t *)kb + (size_t)e * 16);
        *k1 = hlx_v_fp8_8((const uint8_t *)kb + (size_t)e * 16 + 8);
    } else if (BF == 3) {
        hlx_v_pair_fp8t((const uint8_t *)kb + (size_t)e * 16, k0, k1);
    } else if (BF == 4) {
        hlx_v_pair_fp8h((const uint8_t *)kb + (size_t)e * 16, k0, k1);
    } else {
        *k0 = _mm256_loadu_ps((const float *)kb + (size_t)e * 16);
        *k1 = _mm256_loadu_ps((const float *)kb + (size_t)e * 16 + 8);
    }
}

/* Scores of one block for G <= 4 heads into sc ([g][2][8], unscaled). pfs: one line per
 * 2^psh key dimensions prefetched from there (a chunk's share of a later block); far (when
 * not NULL): the far prefetch's share per dimension.
 * kw != NULL: the widened keys are also stored there as fp32 blocks ([dk][16], in the
 * widened token order) for the other head chunks of the group, which read them as f32. */
static inline __attribute__((always_inline)) void
hlx_kb2_scores(const int G, const int BF, const int FAR, const int dk, const float *q,
               const char *kb, float *sc, const char *pfs, int psh, const hlx_kv_far_t *far,
               float *kw)
{
    __m256 a0[4], a1[4];
    int e, g;

    _Pragma("GCC unroll 4") for (g = 0; g < G; g++) a0[g] = a1[g] = _mm256_setzero_ps();
    _Pragma("GCC unroll 4") for (e = 0; e < dk; e++) {
        __m256 k0, k1;
        if (pfs != NULL && (e & ((1 << psh) - 1)) == 0)
            _mm_prefetch(pfs + (size_t)(e >> psh) * 64, _MM_HINT_T0);
        if (FAR)
            hlx_kv_far_dim(far, e);
        hlx_kb2_load(BF, kb, e, &k0, &k1);
        if (kw != NULL) {
            _mm256_store_ps(kw + (size_t)e * 16, k0);
            _mm256_store_ps(kw + (size_t)e * 16 + 8, k1);
        }
        _Pragma("GCC unroll 4") for (g = 0; g < G; g++) {
            const __m256 qb = _mm256_broadcast_ss(q + (size_t)g * dk + e);
            a0[g] = _mm256_fmadd_ps(qb, k0, a0[g]);
            a1[g] = _mm256_fmadd_ps(qb, k1, a1[g]);
        }
    }
    _Pragma("GCC unroll 4") for (g = 0; g < G; g++) {
        _mm256_store_ps(sc + 16 * g, a0[g]);
        _mm256_store_ps(sc + 16 * g + 8, a1[g]);
    }
}

/* P.V of one block for G <= 4 heads (p [g][32]) over values of type VBF (read as
 * hlx_pv_body reads them, vts and vcs) that also stores each widened piece as fp32 into vw
 * ([16][dv], vw row stride dv), for the other head chunks, which read vw as f32 rows.
 * Prefetch as hlx_pv_body. */
static inline __attribute__((always_inline)) void
hlx_kb2_pv_w(const int G, const int VBF, const float *p, const float *corr, int dv,
             const char *v, size_t vts, size_t vcs, int nt, float *o, const char *pfa,
             const char *pfb, size_t pfstep, float *vw)
{
    int c, t, g;

    for (c = 0; c < dv; c += 16) {
        __m256 a0[4], a1[4];
        _Pragma("GCC unroll 4") for (g = 0; g < G; g++) {
            const __m256 cg = _mm256_set1_ps(corr[g]);
            a0[g] = _mm256_mul_ps(_mm256_loadu_ps(o + (size_t)g * dv + c), cg);
            a1[g] = _mm256_mul_ps(_mm256_loadu_ps(o + (size_t)g * dv + c + 8), cg);
        }
        for (t = 0; t < nt; t++) {
            __m256 v0, v1;
            HLX_PAIR(VBF, v + (size_t)t * vts + (size_t)(c / 16) * vcs, v0, v1);
            _mm256_store_ps(vw + (size_t)t * dv + c, v0);
            _mm256_store_ps(vw + (size_t)t * dv + c + 8, v1);
            if (pfa != NULL) {
                size_t at = ((size_t)(c / 16) * nt + t) * pfstep, l;
                for (l = 0; l < pfstep; l += 64) {
                    _mm_prefetch(pfa + at + l, _MM_HINT_T0);
                    if (pfb != pfa)
                        _mm_prefetch(pfb + at + l, _MM_HINT_T0);
                }
            }
            _Pragma("GCC unroll 4") for (g = 0; g < G; g++) {
                const __m256 pg = _mm256_set1_ps(p[g * 32 + t]);
                a0[g] = _mm256_fmadd_ps(pg, v0, a0[g]);
                a1[g] = _mm256_fmadd_ps(pg, v1, a1[g]);
            }
        }
        _Pragma("GCC unroll 4") for (g = 0; g < G; g++) {
            _mm256_storeu_ps(o + (size_t)g * dv + c, a0[g]);
            _mm256_storeu_ps(o + (size_t)g * dv + c + 8, a1[g]);
        }
    }
}

/* One step of the block pipeline for a head chunk (G <= 4), as the avx512 blocked path:
 * the online softmax of the current block of nt tokens (scores in sc from the step
 * before; nt 0: none), then the scores of the next block kn (when not NULL) into sc, then
 * the P.V of the current block (values at vr, type VBF, read with vts and vcs as
 * hlx_pv_body says), so the next block's FMAs overlap the softmax's dependency chains. BF
 * is the type the keys are read as, ORD their token order (1: bf16's even / odd lanes,
 * also when a later chunk reads the first chunk's widened copy as f32). WR (the first of
 * several chunks): the widened keys go to kw and, WR 2, the widened values to vw as well
 * (see hlx_kb2_scores). ksh: see the prefetch comment below and hlx_attn_kb_avx2. ku: the
 * units the scores in sc were computed in, vu: those of the values at vr (fp8 type 3 keys
 * and values are read as 1 / HLX_FP8T_UNIT of their value; 1 otherwise). */
static inline __attribute__((always_inline)) void
hlx_kb2_body(const int G, const int BF, const int VBF, const int ORD, const int WR,
             const int D, const int FAR, const hlx_attn_desc_t *d, const float *q,
             const char *kn, float *sc, int nt, const char *vr, size_t vts, size_t vcs,
             float *m, float *s, float *o, const char *pfk, const char *pfv, size_t pfstep, int ksh,
             const hlx_kv_far_t *far, float *kw, float *vw, float ku, float vu)
{
    const int dk = D ? D : d->dk, dv = D ? D : d->dv;
    float p[4 * 32] __attribute__((aligned(32))); /* [head][token], stride 32 (P.V type 2) */
    float mv[8] __attribute__((aligned(32))), cv[8] __attribute__((aligned(32)));
    float sv[8] __attribute__((aligned(32)));
    __m256 a0[4], a1[4], red[8], mnew, corr;
    int g, up = 1; /* a running maximum rose: the P.V rescales o (by cv) */

    if (nt > 0) {
        /* token of each lane: even / odd (ORD 1), else 0-7 / 8-15; lanes past nt get -inf
         * by a blend (their key slots may hold anything, NaN too) */
        const __m256i tk0 = ORD ? _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)
                                : _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i tk1 = _mm256_add_epi32(tk0, _mm256_set1_epi32(ORD ? 1 : 8));
        const __m256i ntv = _mm256_set1_epi32(nt);
        const __m256 ok0 = _mm256_castsi256_ps(_mm256_cmpgt_epi32(ntv, tk0));
        const __m256 ok1 = _mm256_castsi256_ps(_mm256_cmpgt_epi32(ntv, tk1));
        /* log2 units: scores scaled by scale * log2(e), maxima m in the same units */
        const __m256 scale = _mm256_set1_ps(d->scale * 1.44269504088896341f * ku);
        const __m256 ninf = _mm256_set1_ps(-INFINITY);
        /* soft-capping (hlx_v_softcap): the raw scores' factor in, the capped ones' out */
        const int cap = d->softcap != 0.0f;
        const __m256 cin = _mm256_set1_ps(cap ? 2.0f * 1.44269504088896341f * d->scale * ku /
                                                    d->softcap : 0.0f);
        const __m256 cout = _mm256_set1_ps(d->softcap * 1.44269504088896341f);
        /* the running maxima change only when a score exceeds them (a few blocks of a long
         * shard; a NaN counts as one): then the block maxima by the tree, the rescale
         * factors and the rescale of o and of the sums; otherwise none of that (corr = 1
         * exactly, so the same bits), as in avx512.c */
        up = 0;
        _Pragma("GCC unroll 4") for (g = 0; g < G; g++) {
            const __m256 x0 = _mm256_load_ps(sc + 16 * g), x1 = _mm256_load_ps(sc + 16 * g + 8);
            const __m256 mg = _mm256_set1_ps(m[g]);
            a0[g] = _mm256_blendv_ps(ninf, cap ? hlx_v_softcap(x0, cin, cout)
                                               : _mm256_mul_ps(x0, scale), ok0);
            a1[g] = _mm256_blendv_ps(ninf, cap ? hlx_v_softcap(x1, cin, cout)
                                               : _mm256_mul_ps(x1, scale), ok1);
            red[g] = _mm256_max_ps(a0[g], a1[g]);
            up |= _mm256_movemask_ps(_mm256_cmp_ps(a0[g], mg, _CMP_NLE_UQ)) |
                  _mm256_movemask_ps(_mm256_cmp_ps(a1[g], mg, _CMP_NLE_UQ));
        }
        for (g = 0; g < 8; g++) {
            mv[g] = g < G ? m[g] : 0.0f;
            sv[g] = g < G ? s[g] : 0.0f;
        }
        if (up) {
            const __m256 mold = _mm256_load_ps(mv);
            for (g = G; g < 8; g++)
                red[g] = red[0];
            mnew = _mm256_max_ps(hlx_v_hmax(red), mold);
            /* m = -inf before the first token: corr is then tiny and multiplies o = 0, s = 0 */
            corr = hlx_v_exp2n(_mm256_sub_ps(mold, mnew));
            _mm256_store_ps(mv, mnew);
        } else {
            corr = _mm256_set1_ps(1.0f);
        }
        _mm256_store_ps(cv, corr);
        _Pragma("GCC unroll 4") for (g = 0; g < G; g++) {
            const __m256 mg = _mm256_set1_ps(mv[g]);
            __m256 e0 = hlx_v_exp2n(_mm256_sub_ps(a0[g], mg));
            __m256 e1 = hlx_v_exp2n(_mm256_sub_ps(a1[g], mg));
            red[g] = _mm256_add_ps(e0, e1);
            if (vu != 1.0f) { /* values held in units of 1 / vu: p in units of vu */
                e0 = _mm256_mul_ps(e0, _mm256_set1_ps(vu));
                e1 = _mm256_mul_ps(e1, _mm256_set1_ps(vu));
            }
            if (ORD) { /* even / odd tokens back to token order */
                const __m256 lo = _mm256_unpacklo_ps(e0, e1), hi = _mm256_unpackhi_ps(e0, e1);
                _mm256_store_ps(p + 32 * g, _mm256_permute2f128_ps(lo, hi, 0x20));
                _mm256_store_ps(p + 32 * g + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
            } else {
                _mm256_store_ps(p + 32 * g, e0);
                _mm256_store_ps(p + 32 * g + 8, e1);
            }
        }
        for (g = G; g < 8; g++)
            red[g] = red[0];
        _mm256_store_ps(sv, up ? _mm256_fmadd_ps(_mm256_load_ps(sv), corr, hlx_v_hsum(red))
                               : _mm256_add_ps(_mm256_load_ps(sv), hlx_v_hsum(red)));
        for (g = 0; g < G; g++) {
            m[g] = mv[g];
            s[g] = sv[g];
        }
    }
    /* prefetch (see hlx_attn_kb_avx2): pfv NULL: pfk is this chunk's share of a later
     * block, from the score loop, one line per 2^ksh dimensions (ksh < 0: per 8); ksh >= 0
     * (f32): pfk from the score loop, one line per 2^ksh dimensions, pfv over the P.V
     * steps; otherwise pfk and pfv both over the P.V steps (once when they are equal) */
    if (kn != NULL)
        hlx_kb2_scores(G, BF, FAR, dk, q, kn, sc, pfv == NULL || ksh >= 0 ? pfk : NULL,
                       pfv == NULL && ksh < 0 ? 3 : ksh, far, WR ? kw : NULL);
    if (nt > 0 && WR == 2)
        hlx_kb2_pv_w(G, VBF, p, cv, dv, vr, vts, vcs, nt, o, pfv ? pfk : NULL, pfv, pfstep,
                     vw);
    else if (nt > 0)
        hlx_pv_avx2(G, VBF, 2, p, up ? cv : NULL, dv, vr, vts, vcs, nt, o,
                    pfv ? (ksh >= 0 ? pfv : pfk) : NULL, pfv, pfstep);
}

typedef void (*hlx_kb2_fn)(const hlx_attn_desc_t *, const float *, const char *, float *, int,
                           const char *, size_t, size_t, float *, float *, float *,
                           const char *, const char *, size_t, int, const hlx_kv_far_t *,
                           float *, float *, float, float);
/* hlx_kb2_<heads>_<key type>_<value type>_<order>_<writes>_<head size or 0>, and the same
 * with _far (the far prefetch in its score loop): functions of their own, because the far
 * prefetch's loop inside the same function cost the f32 kernel 10% in cache (Zen 4) */
#define HLX_KB2_DEF(n, bf, vbf, ord, wr, D) \
    HLX_KB2_DEF1(n, bf, vbf, ord, wr, D, 0, ) HLX_KB2_DEF1(n, bf, vbf, ord, wr, D, 1, _far)
#define HLX_KB2_DEF1(n, bf, vbf, ord, wr, D, F, sfx) \
    static __attribute__((noinline)) void hlx_kb2_##n##_##bf##_##vbf##_##ord##_##wr##_##D##sfx( \
        const hlx_attn_desc_t *d, const float *q, const char *kn, float *sc, int nt, \
        const char *vr, size_t vts, size_t vcs, float *m, float *s, float *o, \
        const char *pfk, const char *pfv, size_t pfstep, int ksh, const hlx_kv_far_t *far, \
        float *kw, float *vw, float ku, float vu) \
    { \
        hlx_kb2_body(n, bf, vbf, ord, wr, D, F, d, q, kn, sc, nt, vr, vts, vcs, m, s, o, pfk, \
                     pfv, pfstep, ksh, far, kw, vw, ku, vu); \
    }
#define HLX_KB2_DEF_G(bf, vbf, ord) \
    HLX_KB2_DEF(1, bf, vbf, ord, 0, 0) HLX_KB2_DEF(2, bf, vbf, ord, 0, 0) \
    HLX_KB2_DEF(3, bf, vbf, ord, 0, 0) HLX_KB2_DEF(4, bf, vbf, ord, 0, 0)
/* one chunk, or chunks that widen for themselves */
HLX_KB2_DEF_G(0, 0, 0) HLX_KB2_DEF_G(1, 1, 1) HLX_KB2_DEF_G(2, 2, 0) HLX_KB2_DEF_G(1, 0, 1)
HLX_KB2_DEF_G(2, 0, 0)
HLX_KB2_DEF(4, 0, 0, 0, 0, 128) HLX_KB2_DEF(4, 1, 1, 1, 0, 128) HLX_KB2_DEF(4, 2, 2, 0, 0, 128)
/* several chunks of fp8 KV: the first (4 heads) widens keys (and values) once for all (fp8
 * in cache 32 -> 47 GFLOP/s at group 8; bf16, whose widening is 2 ops per 16 elements, lost
 * 3% to the extra stores and loads, so it widens per chunk) */
HLX_KB2_DEF(4, 2, 2, 0, 2, 0) HLX_KB2_DEF(4, 2, 0, 0, 1, 0) HLX_KB2_DEF(4, 2, 2, 0, 2, 128)
/* fp8 blocks without NaN bytes (type 3, widened through fp16): the same, keys and values */
HLX_KB2_DEF_G(3, 3, 0) HLX_KB2_DEF(4, 3, 3, 0, 0, 128) HLX_KB2_DEF(4, 3, 3, 0, 2, 0)
HLX_KB2_DEF(4, 3, 3, 0, 2, 128)
/* and as fp32 bits (type 4, hlx_v_pair_fp8h) */
HLX_KB2_DEF_G(4, 4, 0) HLX_KB2_DEF(4, 4, 4, 0, 0, 128) HLX_KB2_DEF(4, 4, 4, 0, 2, 0)
HLX_KB2_DEF(4, 4, 4, 0, 2, 128)
#define HLX_KB2_ROW(bf, vbf, ord, sfx) \
    { hlx_kb2_1_##bf##_##vbf##_##ord##_0_0##sfx, hlx_kb2_2_##bf##_##vbf##_##ord##_0_0##sfx, \
      hlx_kb2_3_##bf##_##vbf##_##ord##_0_0##sfx, hlx_kb2_4_##bf##_##vbf##_##ord##_0_0##sfx }
/* [far prefetch][key type][values: 0 rows of the key type, 1 fp32 rows unpacked from the key
 * blocks]; types 3 and 4 (fp8 without NaN) are never given v == k */
#define HLX_KB2_TAB(sfx) \
    { { HLX_KB2_ROW(0, 0, 0, sfx), HLX_KB2_ROW(0, 0, 0, sfx) }, \
      { HLX_KB2_ROW(1, 1, 1, sfx), HLX_KB2_ROW(1, 0, 1, sfx) }, \
      { HLX_KB2_ROW(2, 2, 0, sfx), HLX_KB2_ROW(2, 0, 0, sfx) }, \
      { HLX_KB2_ROW(3, 3, 0, sfx), HLX_KB2_ROW(2, 0, 0, sfx) }, \
      { HLX_KB2_ROW(4, 4, 0, sfx), HLX_KB2_ROW(2, 0, 0, sfx) } }
static const hlx_kb2_fn hlx_kb2_tab[2][5][2][4] = { HLX_KB2_TAB(), HLX_KB2_TAB(_far) };
static const hlx_kb2_fn hlx_kb2_tab128[2][5] = {
    { hlx_kb2_4_0_0_0_0_128, hlx_kb2_4_1_1_1_0_128, hlx_kb2_4_2_2_0_0_128, hlx_kb2_4_3_3_0_0_128,
      hlx_kb2_4_4_4_0_0_128 },
    { hlx_kb2_4_0_0_0_0_128_far, hlx_kb2_4_1_1_1_0_128_far, hlx_kb2_4_2_2_0_0_128_far,
      hlx_kb2_4_3_3_0_0_128_far, hlx_kb2_4_4_4_0_0_128_far },
};
/* several chunks of fp8 KV: the first chunk writes ([far][values as for hlx_kb2_tab]), the
 * later chunks read the f32 copies (the f32 functions: fp8 is widened in token order);
 * [far][type - 2][values] and, head size 128, [far][type - 2] (types 2, 3, 4) */
static const hlx_kb2_fn hlx_kb2_wtab[2][3][2] = {
    { { hlx_kb2_4_2_2_0_2_0, hlx_kb2_4_2_0_0_1_0 }, { hlx_kb2_4_3_3_0_2_0, hlx_kb2_4_2_0_0_1_0 },
      { hlx_kb2_4_4_4_0_2_0, hlx_kb2_4_2_0_0_1_0 } },
    { { hlx_kb2_4_2_2_0_2_0_far, hlx_kb2_4_2_0_0_1_0_far },
      { hlx_kb2_4_3_3_0_2_0_far, hlx_kb2_4_2_0_0_1_0_far },
      { hlx_kb2_4_4_4_0_2_0_far, hlx_kb2_4_2_0_0_1_0_far } },
};
static const hlx_kb2_fn hlx_kb2_wtab128[2][3] = {
    { hlx_kb2_4_2_2_0_2_128, hlx_kb2_4_3_3_0_2_128, hlx_kb2_4_4_4_0_2_128 },
    { hlx_kb2_4_2_2_0_2_128_far, hlx_kb2_4_3_3_0_2_128_far, hlx_kb2_4_4_4_0_2_128_far },
};

/* No NaN byte (0x7f, 0xff) among the fp8 e4m3 bytes [p, p + n), n a multiple of 16: the
 * widening through fp16 (type 3) is exact there. A byte max over x & 0x7f, 2 ops per 32
 * bytes in four independent chains where whole 128-byte pieces allow. */
static int hlx_kb2_fp8_clean(const uint8_t *p, size_t n)
{
    const __m256i m = _mm256_set1_epi8(0x7f);
    __m256i a[4];
    __m128i a1;
    size_t i = 0;
    int j;

    for (j = 0; j < 4; j++)
        a[j] = _mm256_setzero_si256();
    for (; i + 128 <= n; i += 128)
        for (j = 0; j < 4; j++)
            a[j] = _mm256_max_epu8(a[j], _mm256_and_si256(_mm256_loadu_si256(
                                                            (const __m256i *)(p + i + 32 * j)), m));
    for (; i + 32 <= n; i += 32)
        a[0] = _mm256_max_epu8(a[0], _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(p + i)),
                                                      m));
    a[0] = _mm256_max_epu8(_mm256_max_epu8(a[0], a[1]), _mm256_max_epu8(a[2], a[3]));
    a1 = _mm_max_epu8(_mm256_castsi256_si128(a[0]), _mm256_extracti128_si256(a[0], 1));
    if (i < n)
        a1 = _mm_max_epu8(a1, _mm_and_si128(_mm_loadu_si128((const __m128i *)(p + i)),
                                            _mm256_castsi256_si128(m)));
    return _mm_movemask_epi8(_mm_cmpeq_epi8(a1, _mm256_castsi256_si128(m))) == 0;
}

/* The type a step of the block pipeline reads fp8 KV as: fast (3 or 4) when the keys of
 * the next block (kn, dk x 16 bytes) and the nt value rows at vr hold no NaN (clean: the
 * caller knows the shard holds none, hlx_attn_desc_t.kv_clean; no scan), else 2
 * (exact for every byte). fast 2: always 2 (v == k; or the caller's MXCSR has
 * denormals-are-zero set: vcvtph2ps converted fp16 subnormals exactly under it on the Zen 5
 * measured, and type 4 holds subnormals as fp32 subnormals, which it would zero; type 2
 * needs no such guarantee). Rows without padding (vsb == dv) are one range. */
static int hlx_kb2_fp8_type(int fast, int clean, const char *kn, int dk, const char *vr,
                            size_t vsb, int nt, int dv)
{
    int t;

    if (fast == 2 || clean)
        return fast;
    if (kn != NULL && !hlx_kb2_fp8_clean((const uint8_t *)kn, (size_t)dk * 16))
        return 2;
    if (vsb == (size_t)dv)
        return nt <= 0 || hlx_kb2_fp8_clean((const uint8_t *)vr, (size_t)nt * (size_t)dv) ? fast
                                                                                        : 2;
    for (t = 0; t < nt; t++)
        if (!hlx_kb2_fp8_clean((const uint8_t *)vr + (size_t)t * vsb, (size_t)dv))
            return 2;
    return fast;
}

/* 8 x 8 fp32 transpose of rows r[i] into c (8 rows, cs floats apart). */
static inline void hlx_tr8(const __m256 *r, float *c, size_t cs)
{
    __m256 t[8], u[8];
    int i;

    for (i = 0; i < 4; i++) {
        t[2 * i]     = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (i = 0; i < 2; i++) { /* u[4i + j]: rows 4i..4i+3 of columns j | j + 4 */
        u[4 * i]     = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (i = 0; i < 4; i++) {
        _mm256_storeu_ps(c + (size_t)i * cs, _mm256_permute2f128_ps(u[i], u[4 + i], 0x20));
        _mm256_storeu_ps(c + (size_t)(4 + i) * cs, _mm256_permute2f128_ps(u[i], u[4 + i], 0x31));
    }
}

/* The first dv elements of the block's 16 keys as fp32 rows vt[16][dv] (MLA's values). */
static void hlx_kb2_unblock(int BF, const char *kb, int dv, float *vt)
{
    int e, i;

    for (e = 0; e < dv; e += 8) {
        __m256 r[2][8];
        for (i = 0; i < 8; i++) {
            if (BF == 1) { /* natural token order */
                const uint16_t *x = (const uint16_t *)(kb + (size_t)(e + i) * 32);
                r[0][i] = hlx_v_bf16_8(x);
                r[1][i] = hlx_v_bf16_8(x + 8);
            } else {
                hlx_kb2_load(BF, kb, e + i, &r[0][i], &r[1][i]);
            }
        }
        hlx_tr8(r[0], vt + e, (size_t)dv);
        hlx_tr8(r[1], vt + (size_t)8 * dv + e, (size_t)dv);
    }
}

/* MLA with fp8 KV (v == k, keys longer than the shared copies take): the next block's keys
 * widened once into an f32 block ([dk][16]) that every head chunk reads as type 0,
 * instead of each of the 32 chunks of MLA's 128 heads widening them again (64K tokens on
 * a Zen 5 core: 332.7 -> 202-205 ms, bf16 197). 37 KB of stack. */
#define HLX_KB2_WIDE_DK 576

static void hlx_kb2_widen_fp8(const char *kb, int dk, float *kf)
{
    int e;

    for (e = 0; e < dk; e++) {
        __m256 k0, k1;
        hlx_kb2_load(2, kb, e, &k0, &k1);
        _mm256_store_ps(kf + (size_t)e * 16, k0);
        _mm256_store_ps(kf + (size_t)e * 16 + 8, k1);
    }
}

/* Attention over a shard in the layout hlx_kb2_layout (block b of keys starts at element
 * b * 16 * k_stride; values in rows, or, v == k, the key blocks). Shapes off the vector
 * path: the reference with the same layout. */
/* The blocked path's shapes: head sizes in multiples of 16 up to 1024 (v == k: values of
 * at most 512 elements, no longer than the keys); others run the reference over the
 * blocked layout. */
static int hlx_kb2_covers(const hlx_attn_desc_t *d)
{
    return hlx_attn_shape_fits(d, 16, 1);
}

/* The units a step of type bt (hlx_kb2_fp8_type) reads its KV in, the copies kw and vw
 * included: the scores of its keys come out in units of 1 / ku (type 3: keys 2^-8 of their
 * value; type 4's q is scaled to undo its keys' 2^-120), its values in units of 1 / vu
 * (that block's p goes into the P.V times vu). */
static const float hlx_kb2_ku[5] = { 1.0f, 1.0f, 1.0f, HLX_FP8T_UNIT, 1.0f };
static const float hlx_kb2_vu[5] = { 1.0f, 1.0f, 1.0f, HLX_FP8T_UNIT, HLX_FP8H_UNIT };

/* q times HLX_FP8H_UNIT into qs for type 4: 1 where every head of the group fits qs
 * (HLX_KB2_QS floats) and every |q| < HLX_FP8H_QMAX (NaN and infinities excluded), so the
 * products are exact; 0 otherwise (the caller takes type 3). */
#define HLX_KB2_QS (16 * 256)

static int hlx_kb2_fp8h_q(const hlx_attn_desc_t *d, float *qs)
{
    const size_t n = (size_t)d->group * (size_t)d->dk;
    const __m256 lim = _mm256_set1_ps(HLX_FP8H_QMAX), u = _mm256_set1_ps(HLX_FP8H_UNIT);
    const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    size_t i;

    if (n > HLX_KB2_QS || n % 8 != 0)
        return 0;
    for (i = 0; i < n; i += 8) {
        const __m256 x = _mm256_loadu_ps(d->q + i);
        /* ordered: NaN fails */
        if (_mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(x, abs), lim, _CMP_LT_OQ)) != 0xff)
            return 0;
        _mm256_store_ps(qs + i, _mm256_mul_ps(x, u));
    }
    return 1;
}

/* HELIX_KV_PREFETCH (kvpf.c): software-l2 adds the far prefetch into L2 (hlx_kv_far_t; on
 * a Zen 4 core, 1M tokens: f32 89 -> 70 ms, bf16 70 -> 64, fp8 71 -> 65), auto times it
 * against software alone on long shards, hardware and software are this variant's software
 * prefetches alone */
#define HLX_KB2_SEG (HLX_KV_TUNE_SEG / HLX_KB2)

static void hlx_attn_kb_avx2(const hlx_attn_desc_t *d)
{
    const int alias = d->v == d->k;
    const int BF = d->kv_dtype == HLX_DTYPE_BF16 ? 1 : d->kv_dtype == HLX_DTYPE_FP8 ? 2 : 0;
    const size_t es = HLX_ES(BF), kbb = HLX_KB2 * d->k_stride * es;
    const size_t vsb = alias ? (size_t)d->dv * 4 : d->v_stride * es;
    /* P.V reads value rows (the unpacked fp32 rows when v == k) */
    const size_t vts = vsb, vcs = 16 * (alias ? 4 : es);
    /* bf16 and fp8 prefetch from a score loop: one line per 2^kdl key dimensions, a
     * block's stream of 16 tokens x dk x es bytes over its dk dimensions */
    const int kdl = es == 2 ? 1 : 2;
    const int VA = alias && BF != 0; /* f32 keys unpack to f32 rows: table column 0 works */
    float m[HLX_HMAX], s[HLX_HMAX];
    float vt[HLX_KB2 * 512] __attribute__((aligned(32)));
    float sc[HLX_HMAX * 16] __attribute__((aligned(32))); /* scores: [head][2][8] */
    /* several head chunks: the first chunk's widened keys of the next block and values of
     * the current one, read by the others as f32 (the widening is then done once) */
    float kw[256 * 16] __attribute__((aligned(32)));
    float vw[HLX_KB2 * 256] __attribute__((aligned(32)));
    float kf[HLX_KB2_WIDE_DK * HLX_KB2] __attribute__((aligned(32)));
    /* fp8 with several chunks and head sizes up to 256 (the copies' size; larger heads,
     * as MLA's 576, widen per chunk) */
    /* MLA fp8: keys widened once per block for all chunks, which then run type 0 */
    const int kwide = alias && BF == 2 && d->group > 4 && d->dk > 256 &&
                      d->dk <= HLX_KB2_WIDE_DK;
    const int share = BF == 2 && d->group > 4 && d->dk <= 256 && d->dv <= 256;
    /* fp8 blocks without NaN as fp32 bits (type 4) with q scaled into qs, where that
     * is exact, else through fp16 (type 3); 2 (none) under DAZ (hlx_kb2_fp8_type) */
    float qs[HLX_KB2_QS] __attribute__((aligned(32)));
    const int fast = BF != 2 || alias || (_mm_getcsr() & 0x0040 /* DAZ */) ? 2
                     : hlx_kb2_fp8h_q(d, qs)                                ? 4
                                                                            : 3;
    size_t pfstep, b, nblk = (d->len + HLX_KB2 - 1) / HLX_KB2;
    int h0, g0, g, e;
    float ku = 1.0f; /* the units of the scores in sc (hlx_kb2_ku of the type they were read as) */
    /* HELIX_KV_PREFETCH: the far prefetch or not (this variant always prefetches the next
     * blocks in software); auto times the two on long shards (hlx_kv_tune_*) */
    int is_auto, mode = hlx_kv_mode(&is_auto);
    const int tune = hlx_kv_tunes(d, is_auto);
    hlx_kv_tune_t tn;

    if (!hlx_kb2_covers(d)) {
        hlx_attn_ref_layout(d, hlx_kb2_layout);
        return;
    }
    {
        const size_t span = kbb > HLX_KB2 * vsb ? kbb : HLX_KB2 * vsb;
        const size_t steps = d->dv > 0 ? (size_t)d->dv : 1; /* (dv / 16) passes x 16 rows */
        pfstep = ((span + steps - 1) / steps + 63) / 64 * 64;
    }
    for (h0 = 0; h0 < d->group; h0 += HLX_HMAX) {
        const int H = d->group - h0 < HLX_HMAX ? d->group - h0 : HLX_HMAX;
        float *oh = d->o + (size_t)h0 * d->dv;
        for (g = 0; g < H; g++) {
            m[g] = -INFINITY;
            s[g] = 0.0f;
        }
        memset(oh, 0, sizeof(float) * (size_t)H * d->dv);
        /* the scores of block b + 1 are computed between the softmax and the P.V of block
         * b; several chunks take turns per block (it stays in L1/L2 for all of them) */
        for (g0 = 0; g0 < H && nblk > 0; g0 += 4) {
            const int G = H - g0 < 4 ? H - g0 : 4;
            const int bt = kwide     ? 0
                           : BF == 2 ? hlx_kb2_fp8_type(fast, d->kv_clean, d->k, d->dk, NULL, 0,
                                                        0, 0)
                                     : BF;
            const float *qg = (bt == 4 ? qs : d->q) + (size_t)(h0 + g0) * d->dk;
            if (kwide && g0 == 0)
                hlx_kb2_widen_fp8((const char *)d->k, d->dk, kf);
            if (H > 4 && share) /* the first chunk widens block 0's keys for all */
                (g0 == 0 ? hlx_kb2_wtab[0][bt - 2][VA] : hlx_kb2_tab[0][0][0][G - 1])(
                    d, qg, g0 == 0 ? d->k : (const char *)kw, sc + (size_t)g0 * 16, 0, NULL, 0,
                    0, m, s, oh, NULL, NULL, 0, -1, NULL, kw, vw, 1.0f, 1.0f);
            else
                hlx_kb2_tab[0][bt][kwide ? 0 : VA][G - 1](d, qg, kwide ? (const char *)kf : d->k,
                                                       sc + (size_t)g0 * 16, 0, NULL, 0, 0, m,
                                                       s, oh, NULL, NULL, 0, -1, NULL, kw, vw,
                                                       1.0f, 1.0f);
            ku = hlx_kb2_ku[bt];
        }
        if (tune)
            mode = hlx_kv_tune_begin(&tn, 0);
        for (b = 0; b < nblk; b++) {
            const size_t j = b * HLX_KB2;
            const int nt = (int)(d->len - j < HLX_KB2 ? d->len - j : HLX_KB2);
            const char *kb = (const char *)d->k + b * kbb;
            const char *kn = b + 1 < nblk ? kb + kbb : NULL;
            const char *vr = alias ? (const char *)vt : (const char *)d->v + j * vsb;
            /* Prefetch of the keys of the block after next and the values of the next block
             * (bf16, fp8: of the block after next) by the one or two head chunks (group up
             * to 8) that stream the shard, spread so
             * that lines are in flight during all of their compute (the second chunk reads
             * the block from cache; with every prefetch in the first chunk's P.V the memory
             * idled during the second: f32, 1M tokens, Zen 5, 71.5 -> 57.6 ms):
             * - f32 (memory-bound): each of C chunks takes 1/C of each stream, the keys from
             *   its score loop (one line per C dimensions, the rate it reads this block's),
             *   the values over its P.V steps (65.7 -> 52.4 ms against the split below);
             * - bf16, fp8 (compute-bound here; the f32 scheme measured 3% slower for bf16):
             *   one chunk the keys from its score loop (one line per 2^kdl dimensions) and
             *   the values over its P.V steps; two chunks one stream each from their score
             *   loops, the first the values, the second the keys. The prefetch loop in the
             *   P.V cost a Zen 3 core (AVX2 only) a tenth of its in-cache speed, and values
             *   one block ahead arrived late: 1M tokens, GQA 8 bf16 71-72 -> 63-65 ms, GQA 4
             *   44-47 -> 42 (docs/kernels.md "The avx2 kernels on an AVX2-only core");
             * more chunks (MLA) each prefetch a share from their score loops. */
            const int pf = nt == HLX_KB2 && H <= 8 && b + 2 < nblk;
            const char *pk = pf ? kb + 2 * kbb : NULL;
            const char *pv = pf ? (alias ? kb + kbb : vr + (BF ? 2 : 1) * HLX_KB2 * vsb) : NULL;
            /* the type this step reads the KV as (fp8: 3 where its blocks hold no NaN) */
            const int bt = kwide     ? 0
                           : BF == 2 ? hlx_kb2_fp8_type(fast, d->kv_clean, kn, d->dk, vr, vsb,
                                                        nt, d->dv)
                                     : BF;
            /* the scores of kn come out in this type's key units, and this block's p goes
             * into the P.V in its value units (hlx_kb2_ku, hlx_kb2_vu) */
            const float vu = hlx_kb2_vu[bt];
            const float *qb = bt == 4 ? qs : d->q;
            hlx_kv_far_t far;
            const hlx_kv_far_t *fp = H <= 8 ? hlx_kv_far_at(&far, mode, b, nblk, HLX_KB2, kb,
                                                             kbb, vr, vsb, alias, d->dk)
                                            : NULL;
            if (alias)
                hlx_kb2_unblock(BF, kb, d->dv, vt);
            if (kwide && kn != NULL)
                hlx_kb2_widen_fp8(kn, d->dk, kf);
            for (g0 = 0; g0 < H; g0 += 4) {
                const int G = H - g0 < 4 ? H - g0 : 4;
                const float *qg = qb + (size_t)(h0 + g0) * d->dk;
                float *og = oh + (size_t)g0 * d->dv;
                float *scg = sc + (size_t)g0 * 16;
                const char *pkc = g0 == 0 ? pk : NULL, *pvc = g0 == 0 ? pv : NULL;
                const hlx_kv_far_t *fpc = g0 == 0 ? fp : NULL; /* the chunk that streams */
                const int F = fpc != NULL;
                size_t pfs = pfstep;
                int ksh = -1;
                if (pk != NULL && BF == 0 && !alias) { /* f32: 1/C of each stream */
                    const int C = H > 4 ? 2 : 1, c = g0 / 4;
                    ksh = C - 1;
                    pkc = pk + (size_t)c * (kbb / (size_t)C);
                    pvc = pv + (size_t)c * (HLX_KB2 * vsb / (size_t)C);
                    pfs = pfstep / (size_t)C;
                } else if (H > 4 && pk != NULL) { /* one stream each, once (pk: H <= 8) */
                    pkc = g0 == 0 ? pv : pk;
                    pvc = NULL;
                    ksh = kdl;
                } else if (pk != NULL && !alias) { /* keys from the score loop */
                    ksh = kdl;
                }
                if (H > 8 && b + 2 < nblk) {
                    const size_t part = (size_t)d->dk / 8 * 64, at = (size_t)(g0 / 4) * part;
                    const size_t vspan = alias ? 0 : HLX_KB2 * vsb;
                    pvc = NULL;
                    pkc = at < kbb ? kb + 2 * kbb + at
                                   : at - kbb < vspan ? vr + 2 * HLX_KB2 * vsb + (at - kbb)
                                                      : NULL;
                }
                const int d128 = G == 4 && !alias && d->dk == 128 && d->dv == 128;
                if (H > 4 && share && g0 > 0) /* the first chunk's fp32 copies */
                    (d128 ? hlx_kb2_tab128[F][0] : hlx_kb2_tab[F][0][0][G - 1])(
                        d, qg, kn ? (const char *)kw : NULL, scg, nt,
                        alias ? vr : (const char *)vw, (size_t)d->dv * 4, 16 * 4, m + g0,
                        s + g0, og, pkc, pvc, pfs, ksh, fpc, kw, vw, ku, vu);
                else if (H > 4 && share)
                    (d128 ? hlx_kb2_wtab128[F][bt - 2] : hlx_kb2_wtab[F][bt - 2][VA])(
                        d, qg, kn, scg, nt, vr, vts, vcs, m + g0, s + g0, og, pkc, pvc, pfs,
                        ksh, fpc, kw, vw, ku, vu);
                else if (d128)
                    hlx_kb2_tab128[F][bt](d, qg, kn, scg, nt, vr, vts, vcs, m + g0, s + g0, og, pkc,
                                       pvc, pfs, ksh, fpc, kw, vw, ku, vu);
                else
                    hlx_kb2_tab[F][bt][kwide ? 0 : VA][G - 1](
                        d, qg, kwide && kn ? (const char *)kf : kn, scg, nt, vr, vts, vcs,
                        m + g0, s + g0, og, pkc, pvc, pfs, ksh, fpc, kw, vw, ku, vu);
            }
            ku = hlx_kb2_ku[bt];
            if (tune && (b + 1) % HLX_KB2_SEG == 0)
                mode = hlx_kv_tune_next(&tn, (b + 1) / HLX_KB2_SEG);
        }
        for (g = 0; g < H; g++) {
            float *og = oh + (size_t)g * d->dv;
            const float inv = d->len ? 1.0f / s[g] : 0.0f;
            if (BF == 1 && !alias) { /* bf16 value rows widened even / odd per 16 */
                float tmp[16];
                int c;
                for (c = 0; c < d->dv; c += 16) {
                    for (e = 0; e < 8; e++) {
                        tmp[2 * e]     = og[c + e];
                        tmp[2 * e + 1] = og[c + 8 + e];
                    }
                    memcpy(og + c, tmp, sizeof(tmp));
                }
            }
            for (e = 0; e < d->dv; e++)
                og[e] *= inv;
            /* m in log2 units */
            d->lse[h0 + g] = d->len ? m[g] * 0.693147180559945309f + logf(s[g]) : -INFINITY;
        }
    }
}

/* 8 bf16 or f32 weights at element i -> 8 floats. */
static inline __m256 hlx_w8(const void *w, int bf, size_t i)
{
    return bf ? hlx_v_bf16_8((const uint16_t *)w + i) : _mm256_loadu_ps((const float *)w + i);
}

/* MR rows x NV vectors of 8 columns of y at n (+)= the kb terms from k0 (x packed in xt),
 * in registers for all of them; pfl lines of W prefetched per row (the caller spreads one
 * line per 64 bytes of a row over the blocks). */
static inline __attribute__((always_inline)) void
hlx_gemm_block_avx2(const int MR, const int NV, int N, int K, const float *xt, const void *w,
                    int bf, float *y, int k0, int kb, int load, int n0, int n1, int n, int pfl)
{
    __m256 a[8][8];
    int m, v, ki, l, pn, dk;

    if (pfl && !hlx_gemm_pf_at(MR, 0, n0, n1, n, &pn, &dk))
        pfl = 0;

    for (m = 0; m < MR; m++)
        for (v = 0; v < NV; v++)
            a[m][v] = load ? _mm256_loadu_ps(y + (size_t)m * N + n + 8 * v) : _mm256_setzero_ps();
    for (ki = 0; ki < kb; ki++) {
        const size_t wi = (size_t)(k0 + ki) * N + n;
        __m256 wv[8];
        for (v = 0; v < NV; v++)
            wv[v] = hlx_w8(w, bf, wi + 8 * (size_t)v);
        if (pfl && k0 + ki + dk < K)
            for (l = 0; l < pfl; l++)
                _mm_prefetch((const char *)w +
                                 ((size_t)(k0 + ki + dk) * N + (size_t)pn) * (bf ? 2 : 4) + 64 * l,
                             _MM_HINT_T1);
        for (m = 0; m < MR; m++) {
            const __m256 b = _mm256_set1_ps(xt[ki * 8 + m]);
            for (v = 0; v < NV; v++)
                a[m][v] = _mm256_fmadd_ps(b, wv[v], a[m][v]);
        }
    }
    for (m = 0; m < MR; m++)
        for (v = 0; v < NV; v++)
            _mm256_storeu_ps(y + (size_t)m * N + n + 8 * v, a[m][v]);
}

/* MR (1..8) rows of y (+)= x W over columns [n0, n1), W streamed once: the avx512 row
 * kernel's scheme (hlx_gemm_kb, hlx_gemm_pf_at) in 16 registers, so a block is 64
 * columns for one row, 32 for 2, 16 for 3-4 and 8 from 5 (8 accumulators: the FMA's
 * latency times its two ports on these cores; one row's 32 columns were 4); then blocks of
 * 8, and the columns past the last vector one at a time. Every element is summed by one
 * FMA per term in the order of k, vector or not, so a row rounds the same alone, in a
 * batch and in any column range. */
static inline __attribute__((always_inline)) void
hlx_gemm_rows_avx2(const int MR, int N, int K, const float *x, const void *w, int bf,
                   float *y, int accumulate, int n0, int n1)
{
    const int KB = hlx_gemm_kb(MR), NV = MR == 1 ? 8 : MR == 2 ? 4 : MR <= 4 ? 2 : 1;
    const int bytes = 8 * NV * (bf ? 2 : 4); /* of a row in a block: 16 to 256 */
    const int per = bytes < 64 ? 64 / bytes : 1, lines = bytes < 64 ? 1 : bytes / 64;
    float xt[HLX_GEMM_KB_MANY * 8] __attribute__((aligned(32))); /* [ki][m] */
    int k0, n, j, m, ki;

    for (k0 = 0; k0 < K; k0 += KB) {
        const int kb = K - k0 < KB ? K - k0 : KB, load = accumulate || k0 > 0;
        hlx_gemm_pack_x(MR, K, x, k0, kb, xt);
        for (n = n0, j = 0; n + 8 * NV <= n1; n += 8 * NV, j++)
            hlx_gemm_block_avx2(MR, NV, N, K, xt, w, bf, y, k0, kb, load, n0, n1, n,
                                j % per == 0 ? lines : 0);
        for (; NV > 1 && n + 8 <= n1; n += 8)
            hlx_gemm_block_avx2(MR, 1, N, K, xt, w, bf, y, k0, kb, load, n0, n1, n, 1);
        for (; n < n1; n++)
            for (m = 0; m < MR; m++) {
                float *yr = y + (size_t)m * N + n, acc = load ? *yr : 0.0f;
                for (ki = 0; ki < kb; ki++) {
                    const size_t wi = (size_t)(k0 + ki) * N + n;
                    acc = fmaf(xt[ki * 8 + m],
                               bf ? hlx_bf16_to_f32(((const uint16_t *)w)[wi])
                                  : ((const float *)w)[wi],
                               acc);
                }
                *yr = acc;
            }
    }
}

/* M rows in blocks of up to 8, each streaming W (bf16 at any M; f32 up to 8 rows). */
static void hlx_gemm_hand_avx2(int M, int N, int K, const float *x, const void *w, int bf,
                               float *y, int accumulate, int n0, int n1)
{
    int m0;

    if (K == 0) { /* no terms: y is zero unless it accumulates */
        if (!accumulate)
            hlx_gemm_zero_cols(M, N, y, n0, n1);
        return;
    }
    for (m0 = 0; m0 < M; m0 += 8) {
        const float *xm = x + (size_t)m0 * K;
        float *ym = y + (size_t)m0 * N;
        HLX_GEMM_BY_ROWS(M - m0, hlx_gemm_rows_avx2, N, K, xm, w, bf, ym, accumulate, n0, n1);
    }
}

/* Weights in strips of 16 columns ([ceil(N/16)][K][16], HLX_W_S16; docs/kernels.md,
 * "Weights in strips"). A strip is one sequential stream; HLX_S16_SS strips walked at once
 * are that many streams, where row-major W gave the row kernel KB interleaved ones. With
 * 16 registers a block is at most 2 rows x 3 strips (12 accumulators, a strip's two
 * vectors, the broadcast; 3 rows x 2 strips needs 17 and spilled an accumulator), so the
 * rows go in pairs over the same HLX_S16_KS terms of the strips, which the first pair
 * brought into L1 (f32 24 KiB), y through memory between (in f32: the sums keep their
 * bits). One row takes 4 strips. Measured (Zen 5, 8192 x 8192 bf16, 8 rows): 4 rows x 1
 * strip 57 GFLOP/s, 2 x 3 85, with the prefetch below 96-102; in L2 101-114 of a 119 peak. */
#define HLX_S16_KS 128
#define HLX_S16_SS(MR) ((MR) == 1 ? 4 : 3)
#define HLX_S16_R(MR)  ((MR) == 1 ? 1 : 2)
/* Each strip's stream is prefetched this many bytes ahead into L1, one line per line read,
 * spread over the pairs of rows (each fetches its share of the terms KS on); without it the
 * pairs after the first read L1 while no line of W was asked for, and 4-8 rows read bf16 W
 * from DRAM at 10-18 GB/s where the core reads 34 (4 rows 71 -> 97 GFLOP/s, f32 47 -> 66;
 * 4096 and 16384 bytes ahead within a few percent). */
#define HLX_S16_PF 8192

/* y's 16 columns at p (the first c valid, the rest neither read nor written) <-> a strip's
 * two accumulators. bf16 keeps the even columns in the first and the odd in the second
 * (the widening by shifts, below), f32 columns 0-7 and 8-15. */
static inline __attribute__((always_inline)) void
hlx_s16_y_load(const int BF, const float *p, int c, __m256 *a0, __m256 *a1)
{
    __m256 lo, hi;

    if (c >= 16) {
        lo = _mm256_loadu_ps(p);
        hi = _mm256_loadu_ps(p + 8);
    } else {
        const __m256i i = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        lo = _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(c), i));
        hi = _mm256_maskload_ps(p + 8, _mm256_cmpgt_epi32(_mm256_set1_epi32(c - 8), i));
    }
    if (BF) { /* 0-7, 8-15 -> 0 2 .. 14, 1 3 .. 15 */
        const __m256 u0 = _mm256_permute2f128_ps(lo, hi, 0x20); /* 0-3, 8-11 */
        const __m256 u1 = _mm256_permute2f128_ps(lo, hi, 0x31); /* 4-7, 12-15 */
        lo = _mm256_shuffle_ps(u0, u1, _MM_SHUFFLE(2, 0, 2, 0));
        hi = _mm256_shuffle_ps(u0, u1, _MM_SHUFFLE(3, 1, 3, 1));
    }
    *a0 = lo;
    *a1 = hi;
}

static inline __attribute__((always_inline)) void
hlx_s16_y_store(const int BF, float *p, int c, __m256 a0, __m256 a1)
{
    if (BF) { /* even, odd -> 0-7, 8-15 */
        const __m256 u0 = _mm256_unpacklo_ps(a0, a1); /* 0-3, 8-11 */
        const __m256 u1 = _mm256_unpackhi_ps(a0, a1); /* 4-7, 12-15 */
        a0 = _mm256_permute2f128_ps(u0, u1, 0x20);
        a1 = _mm256_permute2f128_ps(u0, u1, 0x31);
    }
    if (c >= 16) {
        _mm256_storeu_ps(p, a0);
        _mm256_storeu_ps(p + 8, a1);
    } else {
        const __m256i i = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        _mm256_maskstore_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(c), i), a0);
        _mm256_maskstore_ps(p + 8, _mm256_cmpgt_epi32(_mm256_set1_epi32(c - 8), i), a1);
    }
}

/* R rows (x and y from the group's first row) x the SS strips from strip s (columns past
 * n1 not touched) over terms [k0, k0 + kc); load: y's sums so far, else 0. Per term and
 * strip: its 16 weights as two vectors (bf16: even columns shifted up, odd ones shifted
 * down and up, which needs no mask register), then 2 FMAs a row with x broadcast, in the
 * order of k. pf (NULL: none): one line of each strip there every pstep terms, 64 bytes
 * on each time. */
static inline __attribute__((always_inline)) void
hlx_gemm_s16_block_avx2(const int R, const int SS, const int BF, int N, int K, const float *x,
                        const void *w, float *y, int s, int n1, int k0, int kc, int load,
                        const char *pf, int pstep)
{
    __m256 a[4][2][2]; /* [strip][row][half]: R x SS <= 6 */
    const size_t sbytes = (size_t)K * 16 * (BF ? 2 : 4); /* a strip */
    int q, m, k, wait = 1;

    _Pragma("GCC unroll 4") for (q = 0; q < SS; q++)
        _Pragma("GCC unroll 4") for (m = 0; m < R; m++) {
            __m256 lo = _mm256_setzero_ps(), hi = lo; /* locals: a is never addressed */
            if (load)
                hlx_s16_y_load(BF, y + (size_t)m * N + (size_t)(s + q) * 16, n1 - (s + q) * 16,
                               &lo, &hi);
            a[q][m][0] = lo;
            a[q][m][1] = hi;
        }
    for (k = k0; k < k0 + kc; k++) {
        if (pf != NULL && --wait == 0) {
            _Pragma("GCC unroll 4") for (q = 0; q < SS; q++)
                _mm_prefetch(pf + (size_t)q * sbytes, _MM_HINT_T0);
            pf += 64;
            wait = pstep;
        }
        _Pragma("GCC unroll 4") for (q = 0; q < SS; q++) {
            const size_t wi = hlx_w_s16_at(K, k, (s + q) * 16);
            __m256 w0, w1;
            if (BF) {
                const __m256i v =
                    _mm256_loadu_si256((const __m256i *)((const uint16_t *)w + wi));
                w0 = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
                w1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_srli_epi32(v, 16), 16));
            } else {
                hlx_v_pair_f32((const float *)w + wi, &w0, &w1);
            }
            _Pragma("GCC unroll 4") for (m = 0; m < R; m++) {
                const __m256 b = _mm256_broadcast_ss(x + (size_t)m * K + k);
                a[q][m][0] = _mm256_fmadd_ps(b, w0, a[q][m][0]);
                a[q][m][1] = _mm256_fmadd_ps(b, w1, a[q][m][1]);
            }
        }
    }
    _Pragma("GCC unroll 4") for (q = 0; q < SS; q++)
        _Pragma("GCC unroll 4") for (m = 0; m < R; m++)
            hlx_s16_y_store(BF, y + (size_t)m * N + (size_t)(s + q) * 16, n1 - (s + q) * 16,
                            a[q][m][0], a[q][m][1]);
}

/* The block for r (1, 2) rows and ss (1-4; 1-3 for two rows) strips: one function each,
 * so that each loop gets the registers to itself (inlined into one caller, gcc kept W's
 * vectors and the loop's pointers on the stack). */
typedef void hlx_gemm_s16_fn(int N, int K, const float *x, const void *w, float *y, int s,
                             int n1, int k0, int kc, int load, const char *pf, int pstep);
#define HLX_S16_FN(_R, _SS, _BF) \
    static __attribute__((noinline)) void hlx_gemm_s16_##_R##_##_SS##_##_BF( \
        int N, int K, const float *x, const void *w, float *y, int s, int n1, int k0, int kc, \
        int load, const char *pf, int pstep) \
    { \
        hlx_gemm_s16_block_avx2(_R, _SS, _BF, N, K, x, w, y, s, n1, k0, kc, load, pf, pstep); \
    }
#define HLX_S16_FNS(_BF) \
    HLX_S16_FN(1, 1, _BF) HLX_S16_FN(1, 2, _BF) HLX_S16_FN(1, 3, _BF) HLX_S16_FN(1, 4, _BF) \
    HLX_S16_FN(2, 1, _BF) HLX_S16_FN(2, 2, _BF) HLX_S16_FN(2, 3, _BF)
HLX_S16_FNS(0)
HLX_S16_FNS(1)
/* [bf16][rows - 1][strips - 1] */
static hlx_gemm_s16_fn *const hlx_gemm_s16_tab[2][2][4] = {
    { { hlx_gemm_s16_1_1_0, hlx_gemm_s16_1_2_0, hlx_gemm_s16_1_3_0, hlx_gemm_s16_1_4_0 },
      { hlx_gemm_s16_2_1_0, hlx_gemm_s16_2_2_0, hlx_gemm_s16_2_3_0, NULL } },
    { { hlx_gemm_s16_1_1_1, hlx_gemm_s16_1_2_1, hlx_gemm_s16_1_3_1, hlx_gemm_s16_1_4_1 },
      { hlx_gemm_s16_2_1_1, hlx_gemm_s16_2_2_1, hlx_gemm_s16_2_3_1, NULL } },
};
#undef HLX_S16_FNS
#undef HLX_S16_FN

/* M rows of y (+)= x W over columns [n0, n1) (n0 a multiple of 16), W in strips: the
 * strips SS at a time (the last group fewer), each group over all of K (SS streams from
 * start to end), KS terms at a time for every group of R rows. Every element is summed by
 * one FMA per term in the order of k from y (or 0), as the row kernel sums it: the same
 * bits, at any M (x is read in place, so any number of rows share each pass over W). */
static inline __attribute__((always_inline)) void
hlx_gemm_s16_run_avx2(const int BF, const int SS, const int R, int M, int N, int K,
                      const float *x, const void *w, float *y, int accumulate, int n0, int n1)
{
    const int s1 = (n1 + 15) / 16, es = BF ? 2 : 4, tpl = 64 / (16 * es); /* terms a line */
    const int G = (M + R - 1) / R;                                        /* row groups */
    int s, k0, r;

    for (s = n0 / 16; s < s1; s += SS) {
        const int ss = s1 - s < SS ? s1 - s : SS;
        for (k0 = 0; k0 < K; k0 += HLX_S16_KS) {
            const int kc = K - k0 < HLX_S16_KS ? K - k0 : HLX_S16_KS;
            const int load = accumulate || k0 > 0;
            /* group g fetches the g-th G-th of the lines HLX_S16_PF bytes on (past the end
             * of W at the last terms: a prefetch does not fault) */
            const int share = ((kc + tpl - 1) / tpl + G - 1) / G;
            const char *pf =
                (const char *)w + ((size_t)s * K + (size_t)k0) * 16 * es + HLX_S16_PF;
            for (r = 0; r < M; r += R)
                hlx_gemm_s16_tab[BF][(M - r < R ? M - r : R) - 1][ss - 1](
                    N, K, x + (size_t)r * K, w, y + (size_t)r * N, s, n1, k0, kc, load,
                    pf + (size_t)(r / R) * share * 64, G * tpl);
        }
    }
}

static void hlx_gemm_s16_avx2(int M, int N, int K, const float *x, const void *w, int bf,
                              float *y, int accumulate, int n0, int n1)
{
    if (K == 0) { /* no terms: y is zero unless it accumulates */
        if (!accumulate)
            hlx_gemm_zero_cols(M, N, y, n0, n1);
        return;
    }
    /* the widening and the shape compiled in */
    if (bf && M == 1)
        hlx_gemm_s16_run_avx2(1, HLX_S16_SS(1), HLX_S16_R(1), M, N, K, x, w, y, accumulate,
                              n0, n1);
    else if (bf)
        hlx_gemm_s16_run_avx2(1, HLX_S16_SS(2), HLX_S16_R(2), M, N, K, x, w, y, accumulate,
                              n0, n1);
    else if (M == 1)
        hlx_gemm_s16_run_avx2(0, HLX_S16_SS(1), HLX_S16_R(1), M, N, K, x, w, y, accumulate,
                              n0, n1);
    else
        hlx_gemm_s16_run_avx2(0, HLX_S16_SS(2), HLX_S16_R(2), M, N, K, x, w, y, accumulate,
                              n0, n1);
}

/* Strips (the runtime's layout here) by hand at every row count, f32 too: OpenBLAS on the
 * row-major copy rounds otherwise from 9 f32 rows, so HELIX_W_STRIPS=0 and 1 give the same
 * bits up to 8 rows (a decode step) and for bf16 at any count, not for an f32 prefill
 * (docs/kernels.md). Row-major W: the row kernel, or sgemm for f32 from 9 rows. */
static void hlx_gemm_cols_avx2(int M, int N, int K, const float *x, const void *w,
                               hlx_dtype_t w_dtype, float *y, int accumulate, int n0, int n1)
{
    if (n1 <= n0)
        return;
    if ((w_dtype == hlx_w_s16_of(HLX_DTYPE_BF16) || w_dtype == hlx_w_s16_of(HLX_DTYPE_F32)) &&
        n0 % 16 == 0) {
        hlx_gemm_s16_avx2(M, N, K, x, w, hlx_w_elem(w_dtype) == HLX_DTYPE_BF16, y, accumulate,
                          n0, n1);
        return;
    }
    if (w_dtype == HLX_DTYPE_BF16 || (w_dtype == HLX_DTYPE_F32 && M <= 8)) {
        hlx_gemm_hand_avx2(M, N, K, x, w, w_dtype == HLX_DTYPE_BF16, y, accumulate, n0, n1);
        return;
    }
    if (w_dtype != HLX_DTYPE_F32) {
        hlx_kernels_t ref;
        hlx_kernels_reference(&ref);
        ref.gemm_cols(M, N, K, x, w, w_dtype, y, accumulate, n0, n1);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, n1 - n0, K, 1.0f, x, K,
                (const float *)w + n0, N, accumulate ? 1.0f : 0.0f, y + n0, N);
}

static void hlx_gemm_avx2(int M, int N, int K, const float *x, const void *w,
                          hlx_dtype_t w_dtype, float *y, int accumulate)
{
    hlx_gemm_cols_avx2(M, N, K, x, w, w_dtype, y, accumulate, 0, N);
}

/* 8 codes (int32) -> (q - z) x s rounded to bf16 (to nearest even, as the reference in
 * wq.c), its bits in the high half of each int32 lane; the low half holds what the
 * rounding carried there (the caller shifts it out or masks it off). */
static inline __attribute__((always_inline)) __m256i
hlx_wq_rne_avx2(__m256i q, const float *z, const float *sc)
{
    const __m256i u = _mm256_castps_si256(_mm256_mul_ps(
        _mm256_sub_ps(_mm256_cvtepi32_ps(q), _mm256_loadu_ps(z)), _mm256_loadu_ps(sc)));
    return _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
        _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1))));
}

/* The same bf16 bits in the low half of each int32 lane (the dequantized strips'). */
static inline __attribute__((always_inline)) __m256i
hlx_wq_half_avx2(__m256i q, const float *z, const float *sc)
{
    return _mm256_srli_epi32(hlx_wq_rne_avx2(q, z, sc), 16);
}

/* The same weights as floats, for the FMAs of the in-register path (EXACT: a matrix whose
 * products are bf16 values, hlx_wq_t.inexact 0: not rounded, the same bits). */
static inline __attribute__((always_inline)) __m256
hlx_wq_w8_avx2(const int EXACT, __m256i q, const float *z, const float *sc)
{
    if (EXACT)
        return _mm256_mul_ps(_mm256_sub_ps(_mm256_cvtepi32_ps(q), _mm256_loadu_ps(z)),
                             _mm256_loadu_ps(sc));
    return _mm256_castsi256_ps(_mm256_and_si256(hlx_wq_rne_avx2(q, z, sc),
                                                _mm256_set1_epi32((int)0xffff0000u)));
}

/* One row of a strip: 16 codes, bytes c shifted right by sh and masked to m (then looked
 * up in lut, a mapped 4-bit matrix's) -> 16 bf16. */
static inline __attribute__((always_inline)) void
hlx_wq_row_avx2(const uint8_t *c, int sh, int m, const uint8_t *lut, const float *z,
                const float *sc, uint16_t *d)
{
    const __m128i b = _mm_loadu_si128((const __m128i *)c), mk = _mm_set1_epi8((char)m);
    __m128i v = _mm_and_si128(_mm_srli_epi16(b, sh), mk); /* per byte: no carry */
    if (lut != NULL)
        v = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)lut), v);
    const __m256i lo = hlx_wq_half_avx2(_mm256_cvtepu8_epi32(v), z, sc);
    const __m256i hi = hlx_wq_half_avx2(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)), z + 8,
                                        sc + 8);
    /* packus interleaves the 128-bit lanes: put the four 64-bit quarters back in order */
    _mm256_storeu_si256((__m256i *)d,
                        _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8));
}

/* Packed weights into bf16 strips: the reference's bits (wq.c; checkasm compares them), a
 * row of a strip in two vectors. */
static void hlx_wq_dequant_avx2(const hlx_wq_t *w, int k0, int kc, int s0, int s1, uint16_t *dst)
{
    hlx_wq_walk(w, k0, kc, s0, s1, dst, hlx_wq_row_avx2);
}

/* Row k of strip q, its 16 codes as int32 in c0, c1 (4 bits: the nibble SH picks) and its
 * group's zero points and scales at z, sc: the weights bf16((q - z) x s) as the
 * dequantized strips hold them, then 2 FMAs a row of x into a[m][2]. */
static inline __attribute__((always_inline)) void
hlx_wq_row_fma_avx2(const int MR, const int BITS, const int SH, const int EXACT, __m256i c0,
                    __m256i c1,
                    const float *z, const float *sc, const float *x, int K, int k,
                    __m256 (*a)[2])
{
    const __m256i m4 = _mm256_set1_epi32(15);
    const __m256 v0 = hlx_wq_w8_avx2(EXACT, BITS == 8 ? c0 : SH ? _mm256_srli_epi32(c0, 4)
                                                        : _mm256_and_si256(c0, m4), z, sc);
    const __m256 v1 = hlx_wq_w8_avx2(EXACT, BITS == 8 ? c1 : SH ? _mm256_srli_epi32(c1, 4)
                                                        : _mm256_and_si256(c1, m4), z + 8,
                                     sc + 8);
    int m;

    _Pragma("GCC unroll 4") for (m = 0; m < MR; m++) {
        const __m256 b = _mm256_broadcast_ss(x + (size_t)m * K + k);
        a[m][0] = _mm256_fmadd_ps(b, v0, a[m][0]);
        a[m][1] = _mm256_fmadd_ps(b, v1, a[m][1]);
    }
}

/* MR rows (1-4) x the SS strips from strip s (columns past n1 not touched) over all of K,
 * the packed BITS-bit weights dequantized in registers: per row of the matrix and strip
 * its 16 codes widened (at 4 bits a pair of rows from one load; LUT: the nibbles looked
 * up in the matrix's table first, as bytes; 2: its products need no rounding, hlx_wq_t.
 * inexact 0, MXFP4's), each weight bf16((q - z) x s), then 2 FMAs a
 * row of x, in the order of k from y (load) or 0: the bits of the strip GEMM over the
 * dequantized matrix (hlx_gemm_s16_block_avx2). Each row's zero points and scales are its
 * group's (act order: the table's). */
static inline __attribute__((always_inline)) void
hlx_wq_fused_block_avx2(const int MR, const int SS, const int BITS, const int LUT,
                        const hlx_wq_t *w, int N, int K, const float *x, float *y, int s, int n1,
                        int load)
{
    const char *base = (const char *)w;
    const size_t rows = BITS == 4 ? ((size_t)w->K + 1) / 2 : (size_t)w->K;
    const size_t gs = (size_t)w->G * 16, cs = rows * 16; /* a strip's groups, codes */
    const float *zp = (const float *)(base + w->zeros) + (size_t)s * gs;
    const float *sp = (const float *)(base + w->scales) + (size_t)s * gs;
    const uint8_t *cp = (const uint8_t *)(base + w->codes) + (size_t)s * cs;
    hlx_wq_grp_t it = hlx_wq_grp_init(w, 0);
    __m256 a[4][4][2]; /* [strip][row][half] */
    int q, m, k, two;
    size_t at[2];

    _Pragma("GCC unroll 4") for (q = 0; q < SS; q++)
        _Pragma("GCC unroll 4") for (m = 0; m < MR; m++) {
            __m256 lo = _mm256_setzero_ps(), hi = lo; /* locals: a is never addressed */
            if (load)
                hlx_s16_y_load(0, y + (size_t)m * N + (size_t)(s + q) * 16, n1 - (s + q) * 16,
                               &lo, &hi);
            a[q][m][0] = lo;
            a[q][m][1] = hi;
        }
    /* rows k and (4 bits) k + 1 from one load of each strip's codes: the odd row in the
     * high nibbles; each row's group is its own */
    for (k = 0; k < K; k += 1 + two) {
        two = BITS == 4 && k + 1 < K;
        for (q = 0; q <= two; q++)
            at[q] = (size_t)hlx_wq_grp_next(w, &it, k + q) * 16;
        _Pragma("GCC unroll 4") for (q = 0; q < SS; q++) {
            const uint8_t *c = cp + (size_t)q * cs + (size_t)(BITS == 4 ? k >> 1 : k) * 16;
            const float *z = zp + (size_t)q * gs, *sc = sp + (size_t)q * gs;
            if (LUT) { /* both rows' nibbles to their codes as bytes, then as 8-bit codes */
                const __m128i b = _mm_loadu_si128((const __m128i *)c), m4 = _mm_set1_epi8(15);
                const __m128i t = _mm_loadu_si128((const __m128i *)w->lut);
                const __m128i lo = _mm_shuffle_epi8(t, _mm_and_si128(b, m4));
                const __m128i hi = _mm_shuffle_epi8(t, _mm_and_si128(_mm_srli_epi16(b, 4), m4));
                hlx_wq_row_fma_avx2(MR, 8, 0, LUT == 2, _mm256_cvtepu8_epi32(lo),
                                    _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)), z + at[0],
                                    sc + at[0], x, K, k, a[q]);
                if (two)
                    hlx_wq_row_fma_avx2(MR, 8, 0, LUT == 2, _mm256_cvtepu8_epi32(hi),
                                        _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)), z + at[1],
                                        sc + at[1], x, K, k + 1, a[q]);
                continue;
            }
            const __m256i c0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)c));
            const __m256i c1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(c + 8)));
            hlx_wq_row_fma_avx2(MR, BITS, 0, 0, c0, c1, z + at[0], sc + at[0], x, K, k, a[q]);
            if (two)
                hlx_wq_row_fma_avx2(MR, 4, 1, 0, c0, c1, z + at[1], sc + at[1], x, K, k + 1,
                                    a[q]);
        }
    }
    _Pragma("GCC unroll 4") for (q = 0; q < SS; q++)
        _Pragma("GCC unroll 4") for (m = 0; m < MR; m++)
            hlx_s16_y_store(0, y + (size_t)m * N + (size_t)(s + q) * 16, n1 - (s + q) * 16,
                            a[q][m][0], a[q][m][1]);
}

/* Strips walked at once for MR rows (at most 8 accumulators beside the codes, the
 * weights and the constants of the widening). */
#define HLX_WQ2_SS(MR) ((MR) <= 2 ? 2 : 1)

/* The blocks for MR rows over columns [n0, n1), one function per row count (the
 * registers to each loop). */
static inline __attribute__((always_inline)) void
hlx_wq_fused_rows_avx2(const int MR, const int BITS, const int LUT, const hlx_wq_t *w, int N,
                       int K, const float *x, float *y, int accumulate, int n0, int n1)
{
    const int SS = HLX_WQ2_SS(MR), s1 = (n1 + 15) / 16;
    int s;

    for (s = n0 / 16; s + SS <= s1; s += SS)
        hlx_wq_fused_block_avx2(MR, SS, BITS, LUT, w, N, K, x, y, s, n1, accumulate);
    for (; s < s1; s++)
        hlx_wq_fused_block_avx2(MR, 1, BITS, LUT, w, N, K, x, y, s, n1, accumulate);
}

typedef void hlx_wq2_fn(const hlx_wq_t *w, int N, int K, const float *x, float *y,
                        int accumulate, int n0, int n1);
#define HLX_WQ2_FN(_MR, _BITS, _LUT) \
    static __attribute__((noinline)) void hlx_wq_fused_##_MR##_##_BITS##_##_LUT##_avx2( \
        const hlx_wq_t *w, int N, int K, const float *x, float *y, int accumulate, int n0, \
        int n1) \
    { \
        hlx_wq_fused_rows_avx2(_MR, _BITS, _LUT, w, N, K, x, y, accumulate, n0, n1); \
    }
HLX_WQ2_FN(1, 4, 0) HLX_WQ2_FN(2, 4, 0) HLX_WQ2_FN(3, 4, 0) HLX_WQ2_FN(4, 4, 0)
HLX_WQ2_FN(1, 4, 1) HLX_WQ2_FN(2, 4, 1) HLX_WQ2_FN(3, 4, 1) HLX_WQ2_FN(4, 4, 1)
HLX_WQ2_FN(1, 4, 2) HLX_WQ2_FN(2, 4, 2) HLX_WQ2_FN(3, 4, 2) HLX_WQ2_FN(4, 4, 2)
HLX_WQ2_FN(1, 8, 0) HLX_WQ2_FN(2, 8, 0) HLX_WQ2_FN(3, 8, 0) HLX_WQ2_FN(4, 8, 0)
#undef HLX_WQ2_FN

/* 1 to 8 rows over a packed matrix, dequantized in registers (K > 0, n0 on a strip), in
 * passes of up to 4 rows: about 12 vector operations per 8 weights before the FMAs, where
 * the scratch path spends about 24 per 16 and then reads the bf16 strips back. A second
 * pass widens the codes again and still beats the scratch at 8 rows (docs/kernels.md). */
static void hlx_wq_gemm_avx2(int M, int N, int K, const float *x, const hlx_wq_t *w, float *y,
                             int accumulate, int n0, int n1)
{
    static hlx_wq2_fn *const fn[4][4] = {
        { hlx_wq_fused_1_4_0_avx2, hlx_wq_fused_2_4_0_avx2, hlx_wq_fused_3_4_0_avx2,
          hlx_wq_fused_4_4_0_avx2 },
        { hlx_wq_fused_1_4_1_avx2, hlx_wq_fused_2_4_1_avx2, hlx_wq_fused_3_4_1_avx2,
          hlx_wq_fused_4_4_1_avx2 },
        { hlx_wq_fused_1_4_2_avx2, hlx_wq_fused_2_4_2_avx2, hlx_wq_fused_3_4_2_avx2,
          hlx_wq_fused_4_4_2_avx2 },
        { hlx_wq_fused_1_8_0_avx2, hlx_wq_fused_2_8_0_avx2, hlx_wq_fused_3_8_0_avx2,
          hlx_wq_fused_4_8_0_avx2 },
    };
    /* 4 bits: the nibbles themselves, through a table, or through it needing no rounding */
    const int form = w->bits == 8 ? 3 : w->mapped ? 1 + !w->inexact : 0;
    int m;

    for (m = 0; m < M; m += 4)
        fn[form][(M - m < 4 ? M - m : 4) - 1](w, N, K, x + (size_t)m * K, y + (size_t)m * N,
                                               accumulate, n0, n1);
}

void hlx_kernels_avx2(hlx_kernels_t *k)
{
    hlx_kernels_reference(k);
    k->name      = "avx2";
    k->kv_layout = hlx_kb2_layout;
    hlx_kv_prefetch_load();
    k->attn      = hlx_attn_kb_avx2;
    k->attn_covers = hlx_kb2_covers;
    k->merge   = hlx_merge_avx2;
    k->rmsnorm = hlx_rmsnorm_avx2;
    k->swiglu  = hlx_swiglu_avx2;
    k->argmax  = hlx_argmax_avx2;
    k->gemm    = hlx_gemm_avx2;
    k->wq_dequant = hlx_wq_dequant_avx2;
    k->wq_gemm = hlx_wq_gemm_avx2;
    k->wq_rows = 8;
    k->wq_rows_exact = 8;
    k->gemm_cols = hlx_gemm_cols_avx2;
    k->w_s16   = 1; /* strips read faster from 1 row up (docs/kernels.md) */
}

/* Machine probes for the roofline (see probe.c). */
double hlx_probe_fma_avx2(uint64_t n)
{
    __m256 a[12], m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    uint64_t i;
    int j;
    float out[8];

    for (j = 0; j < 12; j++)
        a[j] = _mm256_set1_ps((float)j);
    for (i = 0; i < n; i++)
        for (j = 0; j < 12; j++)
            a[j] = _mm256_fmadd_ps(a[j], m, c);
    for (j = 1; j < 12; j++)
        a[0] = _mm256_add_ps(a[0], a[j]);
    _mm256_storeu_ps(out, a[0]);
    return (double)out[0];
}

/* Streams n floats issuing k FMAs of 8 lanes on every 64-byte line (its two halves in
 * turn) as it arrives, one stream or two in pieces as the avx512 loop (probe.c): k in
 * blocks of 8 on 8 accumulators, a block of 4 on 4 more, the last 1-3 on the first three
 * (12 accumulators and 3 operands fill the 16 registers). */
double hlx_probe_stream_fma_avx2(const float *p, size_t n, int k, size_t piece)
{
    __m256 a[12], m = _mm256_set1_ps(0.999999f);
    const int k8 = k / 8, r = k % 8, streams = piece ? 2 : 1;
    const size_t per = n / (size_t)streams / 16 * 16, step = piece ? piece : per;
    size_t c, i;
    int j, b, s;

    for (j = 0; j < 12; j++)
        a[j] = _mm256_setzero_ps();
    for (c = 0; c < per; c += step)
        for (s = 0; s < streams; s++) {
            const float *q = p + (size_t)s * per + c;
            const size_t len = per - c < step ? per - c : step;
            for (i = 0; i + 16 <= len; i += 16) {
                __m256 x0 = _mm256_load_ps(q + i), x1 = _mm256_load_ps(q + i + 8);
                for (b = 0; b < k8; b++)
                    for (j = 0; j < 8; j += 2) {
                        a[j] = _mm256_fmadd_ps(x0, m, a[j]);
                        a[j + 1] = _mm256_fmadd_ps(x1, m, a[j + 1]);
                    }
                if (r & 4)
                    for (j = 8; j < 12; j += 2) {
                        a[j] = _mm256_fmadd_ps(x0, m, a[j]);
                        a[j + 1] = _mm256_fmadd_ps(x1, m, a[j + 1]);
                    }
                if (r & 2)
                    a[1] = _mm256_fmadd_ps(x1, m, a[1]);
                if (r & 3)
                    a[0] = _mm256_fmadd_ps(x0, m, a[0]);
                if ((r & 3) == 3)
                    a[2] = _mm256_fmadd_ps(x1, m, a[2]);
            }
        }
    for (j = 1; j < 12; j++)
        a[0] = _mm256_add_ps(a[0], a[j]);
    return (double)hlx_v_rsum(a[0]);
}

double hlx_probe_read_avx2(const float *p, size_t n)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i;

    for (i = 0; i + 32 <= n; i += 32) {
        a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
        a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
    }
    return (double)hlx_v_rsum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
}
