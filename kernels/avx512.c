/* AVX-512 (F, BW, VL) variant: 16-lane fp32 vectors, 8 query heads per KV load, bf16 KV
 * widened by shifts, hand-written GEMM (bf16 and f32 weights); and the "amx" variant on top of it
 * (bf16 attention scores on AMX tiles). Built with -mavx512* (and -mamx-*); only entered
 * after dispatch.c has checked the CPU (and, for amx, the kernel's tile-state grant). */
#include "hlx_kernels_priv.h"

#include <immintrin.h>
#include <stdatomic.h>

#define HLX_V    __m512
#define HLX_W    16
#define HLX_GMAX 8
#define HLX_SFX  avx512

static inline HLX_V hlx_v_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void  hlx_v_store(float *p, HLX_V v) { _mm512_storeu_ps(p, v); }
static inline HLX_V hlx_v_set1(float x) { return _mm512_set1_ps(x); }
static inline HLX_V hlx_v_zero(void) { return _mm512_setzero_ps(); }
static inline HLX_V hlx_v_add(HLX_V a, HLX_V b) { return _mm512_add_ps(a, b); }
static inline HLX_V hlx_v_sub(HLX_V a, HLX_V b) { return _mm512_sub_ps(a, b); }
static inline HLX_V hlx_v_mul(HLX_V a, HLX_V b) { return _mm512_mul_ps(a, b); }
static inline HLX_V hlx_v_div(HLX_V a, HLX_V b) { return _mm512_div_ps(a, b); }
static inline HLX_V hlx_v_fma(HLX_V a, HLX_V b, HLX_V c) { return _mm512_fmadd_ps(a, b, c); }
static inline HLX_V hlx_v_max(HLX_V a, HLX_V b) { return _mm512_max_ps(a, b); }
static inline unsigned hlx_v_eqmask(HLX_V a, HLX_V b)
{
    return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ);
}

static inline void hlx_v_pair_f32(const float *p, HLX_V *lo, HLX_V *hi)
{
    *lo = _mm512_loadu_ps(p);
    *hi = _mm512_loadu_ps(p + 16);
}

/* 32 bf16 -> even elements (shift up) and odd elements (mask the low half): 2 ops. */
static inline void hlx_v_pair_bf16(const uint16_t *p, HLX_V *lo, HLX_V *hi)
{
    __m512i x = _mm512_loadu_si512((const void *)p);
    *lo = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
    *hi = _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32((int)0xffff0000u)));
}

/* 32 fp8 e4m3 bytes as the fp16 words of 2^-8 times their values, in one register: e4m3
 * is fp16 with the exponent bias 8 lower and 7 fewer mantissa bits, so s.eeee.mmm moves
 * into fp16's s.0eeee.mmm0000000 (sign-extended, shifted, bit 14 cleared); vcvtph2ps
 * converts them, subnormals included. S.1111.111 (NaN) comes out as +-480 / 2^8. */
static inline __m512i hlx_fp8_fp16_words(const uint8_t *p)
{
    return _mm512_and_si512(
        _mm512_slli_epi16(_mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)p)), 7),
        _mm512_set1_epi16((short)0xbfff));
}

/* 32 fp8 e4m3 bytes -> elements 0-15 and 16-31 as floats, exactly: the fp16 words above,
 * converted, times 2^8, NaN by a masked move. 13 ops per 32 elements (16 bytes at a time
 * took 18): fp8 without VBMI, Zen 5, 1M tokens: 31.3 -> 30.5 ms. */
static inline void hlx_v_pair_fp8(const uint8_t *p, HLX_V *lo, HLX_V *hi)
{
    const __m512i h = hlx_fp8_fp16_words(p);
    const __mmask32 nan = _mm512_cmpeq_epi16_mask(
        _mm512_and_si512(h, _mm512_set1_epi16(0x3f80)), _mm512_set1_epi16(0x3f80));
    const __m512 k256 = _mm512_set1_ps(256.0f), knan = _mm512_set1_ps(NAN);

    *lo = _mm512_mask_mov_ps(_mm512_mul_ps(_mm512_cvtph_ps(_mm512_castsi512_si256(h)), k256),
                             (__mmask16)nan, knan);
    *hi = _mm512_mask_mov_ps(
        _mm512_mul_ps(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1)), k256),
        (__mmask16)_kshiftri_mask32(nan, 16), knan);
}

/* KV type 4: fp8 in blocks a scan (hlx_kb_fp8_clean) found free of NaN bytes, widened as
 * above without the NaN and without the factor 2^8 (HLX_FP8H_UNIT), which the caller folds
 * into the scale of the scores and into p: 6 ops per 32 elements, the same bits as type 2
 * (a power of two). Every AVX-512 CPU has it; with VBMI the lookups (type 3) are as fast
 * here. fp8 without VBMI, Zen 5, 1M tokens: 33 -> 26 ms (the scan takes about 5%). */
#define HLX_FP8H_UNIT 256.0f
static inline void hlx_v_pair_fp8h(const uint8_t *p, HLX_V *lo, HLX_V *hi)
{
    const __m512i h = hlx_fp8_fp16_words(p);

    *lo = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
    *hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
}
#define HLX_V_PAIR_FP8H 1

/* 16 vectors -> one vector whose lane t is OP over v[t]: a transpose tree, 45 ops. */
#define HLX_HRED(name, OP) \
    static inline HLX_V name(const HLX_V *v) \
    { \
        HLX_V x[8], z[4], r0, r1; \
        int i; \
        for (i = 0; i < 8; i++) \
            x[i] = OP(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), \
                      _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1])); \
        for (i = 0; i < 4; i++) { \
            __m512d a = _mm512_castps_pd(x[2 * i]), b = _mm512_castps_pd(x[2 * i + 1]); \
            z[i] = OP(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), \
                      _mm512_castpd_ps(_mm512_unpackhi_pd(a, b))); \
        } \
        r0 = OP(_mm512_shuffle_f32x4(z[0], z[1], _MM_SHUFFLE(2, 0, 2, 0)), \
                _mm512_shuffle_f32x4(z[0], z[1], _MM_SHUFFLE(3, 1, 3, 1))); \
        r1 = OP(_mm512_shuffle_f32x4(z[2], z[3], _MM_SHUFFLE(2, 0, 2, 0)), \
                _mm512_shuffle_f32x4(z[2], z[3], _MM_SHUFFLE(3, 1, 3, 1))); \
        return OP(_mm512_shuffle_f32x4(r0, r1, _MM_SHUFFLE(2, 0, 2, 0)), \
                  _mm512_shuffle_f32x4(r0, r1, _MM_SHUFFLE(3, 1, 3, 1))); \
    }
HLX_HRED(hlx_v_hsum, _mm512_add_ps)
HLX_HRED(hlx_v_hmax, _mm512_max_ps)

/* exp(x): 2^n * p(r), r = x - n ln2 in [-ln2/2, ln2/2], degree-7 Taylor (error < 1 ulp
 * order); inputs are clamped to [-87.3, 88.3] so 2^n stays a normal float (below: about
 * 1e-38 instead of a denormal or 0). */
static inline HLX_V hlx_v_exp(HLX_V x)
{
    const HLX_V lo = _mm512_set1_ps(-87.3f), hi = _mm512_set1_ps(88.3f);
    HLX_V n, r, p;

    x = _mm512_min_ps(_mm512_max_ps(x, lo), hi); /* also maps -inf to lo */
    n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), r);
    p = _mm512_set1_ps(1.0f / 5040.0f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n); /* p * 2^n in one op, exact as the multiply it replaces */
}

/* 2^x for x <= 0 (-inf too): n = round(x), f = x - n in [-1/2, 1/2] (exact), 2^f by its
 * degree-6 Taylor polynomial (relative error below 2e-7), times 2^n by vscalefps; x is
 * clamped at -126 (2^-126 = 1.2e-38 instead of a denormal or 0). 10 ops where hlx_v_exp
 * takes 14 with the multiply by log2(e): the blocked path keeps its scores and maxima in
 * log2 units (q.k scaled by scale * log2(e)). */
static inline __m512 hlx_v_exp2n(__m512 x)
{
    __m512 n, f, p;

    x = _mm512_max_ps(x, _mm512_set1_ps(-126.0f));
    n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    f = _mm512_sub_ps(x, n);
    p = _mm512_set1_ps(1.5403530393381606e-4f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558146428443e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291076284772e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504108664821580e-2f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022650695910071e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718055994531e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

/* Soft-capped scores (Gemma 2) in log2 units from raw ones x: out tanh(u), u = x scale /
 * cap = a ln(2) / 2 with a = x in, in = 2 log2(e) scale / cap and out = cap log2(e).
 * |u| >= 1/4: tanh(u) = sign(u) (1 - t) / (1 + t), t = 2^(-|a|) = e^(-2|u|) <= e^(-1/2), so
 * nothing overflows and 1 - t keeps its digits; below, where 1 - t would lose them, the
 * Taylor series to u^9 (the next term is under 1e-8 of tanh). Either way tanh's relative
 * error is a few 1e-7 whatever the cap: that of the score's own rounding. */
static inline __m512 hlx_v_softcap(__m512 x, __m512 in, __m512 out)
{
    const __m512 a = _mm512_mul_ps(x, in), one = _mm512_set1_ps(1.0f);
    const __m512 u = _mm512_mul_ps(a, _mm512_set1_ps(0.34657359027997264f)); /* ln(2) / 2 */
    const __m512 u2 = _mm512_mul_ps(u, u);
    const __m512 t = hlx_v_exp2n(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(a)));
    const __m512 th = _mm512_div_ps(_mm512_sub_ps(one, t), _mm512_add_ps(one, t));
    /* a's sign onto th (>= 0) */
    const __m512i sign = _mm512_and_si512(_mm512_castps_si512(a),
                                          _mm512_set1_epi32((int)0x80000000u));
    const __m512 big = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(th), sign));
    __m512 p = _mm512_set1_ps(62.0f / 2835.0f);

    p = _mm512_fmadd_ps(p, u2, _mm512_set1_ps(-17.0f / 315.0f));
    p = _mm512_fmadd_ps(p, u2, _mm512_set1_ps(2.0f / 15.0f));
    p = _mm512_fmadd_ps(p, u2, _mm512_set1_ps(-1.0f / 3.0f));
    p = _mm512_fmadd_ps(_mm512_mul_ps(u, u2), p, u); /* u (1 + u^2 p) */
    return _mm512_mul_ps(_mm512_mask_blend_ps(_mm512_cmp_ps_mask(_mm512_abs_ps(u),
                                                                 _mm512_set1_ps(0.25f),
                                                                 _CMP_LT_OQ), big, p),
                         out);
}

/* fp8 e4m3 magnitudes (7 bits) -> the high and low bytes of the equal bf16 (exact: e4m3
 * has 3 mantissa bits, its subnormals m * 2^-9 are bf16 normals; 0x7f is NaN 0x7fc0). */
static const uint8_t hlx_fp8_bf16_hi[128] __attribute__((aligned(64))) = {
        0x00, 0x3b, 0x3b, 0x3b, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c, 0x3c,
        0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d, 0x3d,
        0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e, 0x3e,
        0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f, 0x3f,
        0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40,
        0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41, 0x41,
        0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42,
        0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x43, 0x7f,
};
static const uint8_t hlx_fp8_bf16_lo[128] __attribute__((aligned(64))) = {
        0x00, 0x00, 0x80, 0xc0, 0x00, 0x20, 0x40, 0x60, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
        0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
        0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
        0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
        0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
        0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
        0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xf0,
        0x00, 0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90, 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0xc0,
};

/* 64 fp8 bytes -> 64 bf16 words by two byte-table lookups (AVX512_VBMI vpermi2b, 128
 * entries each: the sign bit is ignored by the lookup and put back by one ternary op),
 * then interleaved: *a holds elements [0-7, 16-23, 8-15, 24-31], *b the same of 32-63.
 * About 2.5 ops per 32 elements instead of 11 for the arithmetic widening. */
static inline __attribute__((target("avx512vbmi"))) void hlx_fp8t_words(__m512i x, __m512i *a,
                                                                       __m512i *b)
{
    const __m512i h0 = _mm512_load_si512((const void *)hlx_fp8_bf16_hi);
    const __m512i h1 = _mm512_load_si512((const void *)(hlx_fp8_bf16_hi + 64));
    const __m512i l0 = _mm512_load_si512((const void *)hlx_fp8_bf16_lo);
    const __m512i l1 = _mm512_load_si512((const void *)(hlx_fp8_bf16_lo + 64));
    __m512i hi = _mm512_permutex2var_epi8(h0, x, h1), lo = _mm512_permutex2var_epi8(l0, x, l1);
    __m512i w0, w1;

    hi = _mm512_ternarylogic_epi32(hi, x, _mm512_set1_epi8((char)0x80), 0xf8); /* hi | x & 80 */
    w0 = _mm512_unpacklo_epi8(lo, hi);
    w1 = _mm512_unpackhi_epi8(lo, hi);
    *a = _mm512_shuffle_i64x2(w0, w1, _MM_SHUFFLE(1, 0, 1, 0));
    *b = _mm512_shuffle_i64x2(w0, w1, _MM_SHUFFLE(3, 2, 3, 2));
}

/* 32 fp8 value elements (P.V rows, KV type 3) -> two vectors in the order of
 * hlx_fp8t_words' *a, even and odd words (lane j: elements t(j), t(j) + 1). */
static inline __attribute__((target("avx512vbmi"))) void hlx_v_pair_fp8t(const uint8_t *p,
                                                                        HLX_V *lo, HLX_V *hi)
{
    __m512i a, b;
    hlx_fp8t_words(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)p)), &a, &b);
    *lo = _mm512_castsi512_ps(_mm512_slli_epi32(a, 16));
    *hi = _mm512_castsi512_ps(_mm512_and_si512(a, _mm512_set1_epi32((int)0xffff0000u)));
}
#define HLX_V_PAIR_FP8T 1

/* The same for the 32 elements at p of two value rows (p and p + stride) at once: one
 * 64-byte lookup instead of two half-empty ones (12 ops per two rows instead of 18). */
static inline __attribute__((target("avx512vbmi"))) void
hlx_v_pair2_fp8t(const uint8_t *p, size_t stride, HLX_V *lo, HLX_V *hi, HLX_V *lo2, HLX_V *hi2)
{
    const __m512i odd = _mm512_set1_epi32((int)0xffff0000u);
    __m512i a, b;
    hlx_fp8t_words(_mm512_inserti64x4(
                       _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)p)),
                       _mm256_loadu_si256((const __m256i *)(p + stride)), 1),
                   &a, &b);
    *lo = _mm512_castsi512_ps(_mm512_slli_epi32(a, 16));
    *hi = _mm512_castsi512_ps(_mm512_and_si512(a, odd));
    *lo2 = _mm512_castsi512_ps(_mm512_slli_epi32(b, 16));
    *hi2 = _mm512_castsi512_ps(_mm512_and_si512(b, odd));
}

#ifdef HLX_HAVE_AMX
/* AMX tile path for bf16 KV (variant "amx"): 32 tokens per block, q of up to 8 heads as B
 * tiles of 32 dimensions (dk <= 1024: 32 chunks of 512 + 256 elements). */
#define HLX_AMX_TB       32
#define HLX_AMX_QB_ELEMS (32 * 768)
static void hlx_amx_q_tiles(const float *q, int G, int dk, uint16_t *qb);
static void hlx_amx_run(int G, const hlx_attn_desc_t *d, const uint16_t *qb, const char *k,
                        const char *v, size_t ksb, size_t vsb, size_t nb, int pf, float *m,
                        float *s, float *o);
#endif

#include "simd_tmpl.h"

/* Blocked-key path (the avx512 variant's layout, hlx_kv_layout_t {32, 32, 1, 32}): keys
 * stored per block of 32 tokens with the token index innermost ([block][dk][32]), so one
 * 64-byte load (bf16) holds dimension e of 32 tokens, and the scores of 32 tokens
 * accumulate in two vectors per head by FMAs with q[g][e] broadcast: no horizontal sums,
 * no widening of q. Values per block of 32 tokens in runs of 32 elements per token
 * ([block][dv / 32][32][32]): each P.V pass over 32 columns (above) reads one contiguous
 * run of the block, a pattern the hardware prefetchers follow (value rows, read 32
 * columns a pass a row apart, were not followed: 46 ms at 1M tokens without software
 * prefetch, against 26 with runs).
 * When v == k (MLA absorbed: the value is the head of the key row), the values of a block
 * are unpacked to fp32 rows on the stack first. */
#define HLX_KB 32
static const hlx_kv_layout_t hlx_kb_layout = { HLX_KB, HLX_KB, 1, 32 };

/* The 32 keys' dimension e: bf16 as even / odd tokens (shift, mask), f32 and fp8 (types 2
 * and 4) as tokens 0-15 / 16-31. */
static inline __attribute__((always_inline)) void hlx_kb_load(const int BF, const char *kb, int e,
                                                              __m512 *k0, __m512 *k1)
{
    if (BF == 1) {
        __m512i x = _mm512_loadu_si512((const void *)(kb + (size_t)e * 64));
        *k0 = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
        *k1 = _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32((int)0xffff0000u)));
    } else if (BF == 2) {
        hlx_v_pair_fp8((const uint8_t *)kb + (size_t)e * 32, k0, k1);
    } else if (BF == 4) {
        hlx_v_pair_fp8h((const uint8_t *)kb + (size_t)e * 32, k0, k1);
    } else {
        *k0 = _mm512_loadu_ps((const float *)kb + (size_t)e * 32);
        *k1 = _mm512_loadu_ps((const float *)kb + (size_t)e * 32 + 16);
    }
}

/* Scores of one block for G heads into sc ([g][2][16], unscaled; bf16: even, odd tokens).
 * Prefetches pfs (when not NULL): pfr bytes per key dimension (f32 keys only), or with pfr
 * 0 one line per 8 dimensions (a chunk's share of a block, several chunks); far (when not
 * NULL) its share per dimension. */
static inline __attribute__((always_inline)) void
hlx_kb_scores_x(const int G, const int BF, const int FAR, const int dk, const float *q,
                const char *kb, float *sc, const char *pfs, size_t pfr, const hlx_kv_far_t *far)
{
    __m512 a0[8], a1[8];
    int e, g;

    _Pragma("GCC unroll 8") for (g = 0; g < G; g++) a0[g] = a1[g] = _mm512_setzero_ps();
    if (BF == 3) { /* fp8 by table lookups: two dimensions (64 bytes) per step */
        _Pragma("GCC unroll 2") for (e = 0; e < dk; e += 2) {
            __m512i wa, wb;
            __m512 k0, k1, k2, k3;
            if (pfs != NULL && (e & 7) == 0) /* several chunks only (pfr 0) */
                _mm_prefetch(pfs + (size_t)(e >> 3) * 64, _MM_HINT_T0);
            if (FAR) {
                hlx_kv_far_dim(far, e);
                hlx_kv_far_dim(far, e + 1);
            }
            hlx_fp8t_words(_mm512_loadu_si512((const void *)(kb + (size_t)e * 32)), &wa, &wb);
            k0 = _mm512_castsi512_ps(_mm512_slli_epi32(wa, 16));
            k1 = _mm512_castsi512_ps(_mm512_and_si512(wa, _mm512_set1_epi32((int)0xffff0000u)));
            k2 = _mm512_castsi512_ps(_mm512_slli_epi32(wb, 16));
            k3 = _mm512_castsi512_ps(_mm512_and_si512(wb, _mm512_set1_epi32((int)0xffff0000u)));
            _Pragma("GCC unroll 8") for (g = 0; g < G; g++) {
                const __m512 qa = _mm512_set1_ps(q[(size_t)g * dk + e]);
                const __m512 qb = _mm512_set1_ps(q[(size_t)g * dk + e + 1]);
                a0[g] = _mm512_fmadd_ps(qa, k0, a0[g]);
                a1[g] = _mm512_fmadd_ps(qa, k1, a1[g]);
                a0[g] = _mm512_fmadd_ps(qb, k2, a0[g]);
                a1[g] = _mm512_fmadd_ps(qb, k3, a1[g]);
            }
        }
        goto store;
    }
    _Pragma("GCC unroll 4") for (e = 0; e < dk; e++) {
        __m512 k0, k1;
        if (pfs != NULL && pfr == 0 && (e & 7) == 0) /* one line per 8 dimensions */
            _mm_prefetch(pfs + (size_t)(e >> 3) * 64, _MM_HINT_T0);
        if (pfs != NULL && pfr != 0) {
            size_t l;
            for (l = ((size_t)e * pfr + 63) / 64 * 64; l < (size_t)(e + 1) * pfr; l += 64)
                _mm_prefetch(pfs + l, _MM_HINT_T0);
        }
        if (FAR)
            hlx_kv_far_dim(far, e);
        hlx_kb_load(BF, kb, e, &k0, &k1);
        _Pragma("GCC unroll 8") for (g = 0; g < G; g++) {
            const __m512 qb = _mm512_set1_ps(q[(size_t)g * dk + e]);
            a0[g] = _mm512_fmadd_ps(qb, k0, a0[g]);
            a1[g] = _mm512_fmadd_ps(qb, k1, a1[g]);
        }
    }
store:
    _Pragma("GCC unroll 8") for (g = 0; g < G; g++) {
        _mm512_store_ps(sc + 32 * g, a0[g]);
        _mm512_store_ps(sc + 32 * g + 16, a1[g]);
    }
}

/* The far prefetch is a loop of its own (a test of far per dimension: 1-2% in cache). */
static inline __attribute__((always_inline)) void
hlx_kb_scores(const int G, const int BF, const int dk, const float *q, const char *kb, float *sc,
              const char *pfs, size_t pfr, const hlx_kv_far_t *far)
{
    if (far != NULL)
        hlx_kb_scores_x(G, BF, 1, dk, q, kb, sc, pfs, pfr, far);
    else
        hlx_kb_scores_x(G, BF, 0, dk, q, kb, sc, pfs, pfr, NULL);
}

/* f32 keys and values (dk == dv, a multiple of 32), one step in pieces: the scores of the
 * next block over dims [32c, 32c + 32) (partial sums kept in sc between pieces, the same
 * FMA order as hlx_kb_scores) and the P.V pass over columns [32c, 32c + 32) of this block
 * (hlx_pv_cols over those columns), two pieces of scores ahead of the first pass so the
 * softmax's chains complete behind them: the same FMAs in the same order as the two-phase
 * step, so the same bits. Both streams advance together, 4 KiB of each at a time at head 128, where the
 * two-phase step read 16 KiB of keys, then 16 KiB of values: 1M tokens on a Zen 5 core
 * 47-49 -> 39-41 ms in one phase of the host, 38-43 -> 38-40 in another (docs/kernels.md). Prefetches as the two-phase step: the keys of the
 * block after next (pfk, 128 bytes a dimension), the values of the next block from both
 * ends (pfv). The score piece is its own loop rather than hlx_kb_scores over a range of
 * dimensions: that one, with its general prefetch and load, took 2-4 ms more at 1M. */
static inline __attribute__((always_inline)) void
hlx_kb_f32_scores_piece(const int G, const int FAR, const int dk, int c, const float *q,
                        const char *kn, float *sc, const char *pfk, const hlx_kv_far_t *far)
{
    __m512 s0[8], s1[8];
    int e, g;

    _Pragma("GCC unroll 8") for (g = 0; g < G; g++) {
        s0[g] = c ? _mm512_load_ps(sc + 32 * g) : _mm512_setzero_ps();
        s1[g] = c ? _mm512_load_ps(sc + 32 * g + 16) : _mm512_setzero_ps();
    }
    _Pragma("GCC unroll 4") for (e = c * 32; e < (c + 1) * 32; e++) {
        const __m512 k0 = _mm512_loadu_ps((const float *)kn + (size_t)e * 32);
        const __m512 k1 = _mm512_loadu_ps((const float *)kn + (size_t)e * 32 + 16);
        if (pfk != NULL) {
            _mm_prefetch(pfk + (size_t)e * 128, _MM_HINT_T0);
            _mm_prefetch(pfk + (size_t)e * 128 + 64, _MM_HINT_T0);
        }
        if (FAR)
            hlx_kv_far_dim(far, e);
        _Pragma("GCC unroll 8") for (g = 0; g < G; g++) {
            const __m512 qb = _mm512_set1_ps(q[(size_t)g * dk + e]);
            s0[g] = _mm512_fmadd_ps(qb, k0, s0[g]);
            s1[g] = _mm512_fmadd_ps(qb, k1, s1[g]);
        }
    }
    _Pragma("GCC unroll 8") for (g = 0; g < G; g++) {
        _mm512_store_ps(sc + 32 * g, s0[g]);
        _mm512_store_ps(sc + 32 * g + 16, s1[g]);
    }
}

static inline __attribute__((always_inline)) void
hlx_kb_f32_pieces(const int G, const int dk, const float *q, const char *kn, float *sc,
                  const float *p, const float *cv, const char *vr, size_t vts, size_t vcs,
                  int nt, float *o, const char *pfk, const char *pfv, size_t pfstep,
                  const hlx_kv_far_t *far)
{
    const int pieces = dk / 32, lead = 2;
    /* the values of the next block from both ends, as the two-phase step's P.V */
    const char *pfv2 = pfv ? pfv + pfstep * (size_t)dk / 2 : NULL;
    int c;

    /* step c: score piece c (while there is one), then P.V pass c + 1 - lead (once due) */
    for (c = 0; c < pieces + lead - 1; c++) {
        if (c < pieces && far != NULL) /* a loop of its own, as hlx_kb_scores */
            hlx_kb_f32_scores_piece(G, 1, dk, c, q, kn, sc, pfk, far);
        else if (c < pieces)
            hlx_kb_f32_scores_piece(G, 0, dk, c, q, kn, sc, pfk, NULL);
        if (c + 1 >= lead)
            hlx_pv_cols_avx512(G, 0, 2, p, cv, dk, vr, vts, vcs, nt, o, pfv, pfv2, pfstep / 2,
                               32 * (c + 1 - lead), 32 * (c + 2 - lead));
    }
}

/* 4 vectors -> lanes 0-3 (and their copies in every 128-bit lane) = OP over all 16 lanes of
 * v[0..3]: 13 ops instead of the 45 of the 16-vector tree (chunks of up to 4 heads, as
 * GQA 4 or the last chunk of a group). */
#define HLX_HRED4(name, OP) \
    static inline __m512 name(const __m512 *v) \
    { \
        const __m512 x01 = OP(_mm512_unpacklo_ps(v[0], v[1]), _mm512_unpackhi_ps(v[0], v[1])); \
        const __m512 x23 = OP(_mm512_unpacklo_ps(v[2], v[3]), _mm512_unpackhi_ps(v[2], v[3])); \
        __m512 z = OP(_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(x01), \
                                                          _mm512_castps_pd(x23))), \
                      _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(x01), \
                                                          _mm512_castps_pd(x23)))); \
        z = OP(z, _mm512_shuffle_f32x4(z, z, _MM_SHUFFLE(1, 0, 3, 2))); \
        return OP(z, _mm512_shuffle_f32x4(z, z, _MM_SHUFFLE(2, 3, 0, 1))); \
    }
HLX_HRED4(hlx_v_hsum4, _mm512_add_ps)
HLX_HRED4(hlx_v_hmax4, _mm512_max_ps)

/* One step of the block pipeline for a head chunk (G <= 8): the online softmax of the
 * current block of nt tokens (its scores in sc, computed one step earlier; nt 0: none),
 * then the scores of the next block kn (when not NULL) into sc, then the P.V of the current
 * block (values at vr, type VBF, read as hlx_pv_body says with vts and vcs). The next
 * block's FMAs do not depend on the softmax, so the core runs them while the softmax's long
 * dependency chains (trees, exponentials) complete, instead of waiting for them before the
 * P.V. ku: the units the scores in sc were computed in (HLX_FP8H_UNIT when their keys were
 * type 4, else 1); values of type 4 get p in units of HLX_FP8H_UNIT. */
static inline __attribute__((always_inline)) void
hlx_kb_body(const int G, const int BF, const int VBF, const int D, const hlx_attn_desc_t *d,
            const float *q, const char *kn, float *sc, int nt, const char *vr, size_t vts,
            size_t vcs, float *m, float *s, float *o, const char *pfk, const char *pfv,
            size_t pfstep, const hlx_kv_far_t *far, float ku)
{
    const int dk = D ? D : d->dk, dv = D ? D : d->dv;
    /* score lanes back to token order (tokens 0-15, 16-31): bf16 even/odd, fp8 by tables
     * even/odd of [0-7, 16-23, 8-15, 24-31] */
    const __m512i ilo = BF == 3 ? _mm512_set_epi32(27, 11, 26, 10, 25, 9, 24, 8, 19, 3, 18, 2,
                                                   17, 1, 16, 0)
                                : _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17,
                                                   1, 16, 0);
    const __m512i ihi = BF == 3 ? _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 23, 7, 22, 6,
                                                   21, 5, 20, 4)
                                : _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26,
                                                   10, 25, 9, 24, 8);
    /* token of lane j of the first score vector (the second: + 1) for BF 3 */
    const __m512i tok3 = _mm512_set_epi32(30, 28, 26, 24, 14, 12, 10, 8, 22, 20, 18, 16, 6, 4,
                                          2, 0);
    float p[8 * HLX_KB] __attribute__((aligned(64)));
    float cv[16] __attribute__((aligned(64)));
    __m512 a0[8], a1[8], red[16], mnew, corr;
    /* log2 units: scores scaled by scale * log2(e), maxima m in the same units */
    const __m512 scale = _mm512_set1_ps(d->scale * 1.44269504088896341f * ku);
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    /* soft-capping (hlx_v_softcap): the raw scores' factor in, the capped ones' out */
    const int cap = d->softcap != 0.0f;
    const __m512 cin = _mm512_set1_ps(cap ? 2.0f * 1.44269504088896341f * d->scale * ku /
                                                d->softcap : 0.0f);
    const __m512 cout = _mm512_set1_ps(d->softcap * 1.44269504088896341f);
    __mmask16 m0, m1, up = 0;
    int g;

    if (nt > 0) {
        /* tokens past nt: -inf by a blend (their key memory may hold anything, NaN too) */
        if (BF == 3) {
            m0 = _mm512_cmplt_epi32_mask(tok3, _mm512_set1_epi32(nt));
            m1 = _mm512_cmplt_epi32_mask(tok3, _mm512_set1_epi32(nt - 1));
        } else if (BF == 1) { /* lane j: tokens 2j, 2j + 1 */
            m0 = nt >= 32 ? (__mmask16)0xffff : (__mmask16)((1u << ((nt + 1) / 2)) - 1u);
            m1 = nt >= 32 ? (__mmask16)0xffff : (__mmask16)((1u << (nt / 2)) - 1u);
        } else {
            m0 = nt >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << nt) - 1u);
            m1 = nt >= 32 ? (__mmask16)0xffff
                          : nt <= 16 ? 0 : (__mmask16)((1u << (nt - 16)) - 1u);
        }
        /* the running maxima change only when a score exceeds them (a few blocks of a long
         * shard): then the block maxima by the trees, the rescale factors and the rescale
         * of o and of the sums; otherwise none of that (corr = 1 exactly) */
        _Pragma("GCC unroll 8") for (g = 0; g < G; g++) {
            const __m512 mg = _mm512_set1_ps(m[g]);
            if (cap) {
                a0[g] = _mm512_mask_mov_ps(ninf, m0,
                                           hlx_v_softcap(_mm512_load_ps(sc + 32 * g), cin, cout));
                a1[g] = _mm512_mask_mov_ps(
                    ninf, m1, hlx_v_softcap(_mm512_load_ps(sc + 32 * g + 16), cin, cout));
            } else {
                a0[g] = _mm512_mask_mul_ps(ninf, m0, _mm512_load_ps(sc + 32 * g), scale);
                a1[g] = _mm512_mask_mul_ps(ninf, m1, _mm512_load_ps(sc + 32 * g + 16), scale);
            }
            up |= _mm512_cmp_ps_mask(a0[g], mg, _CMP_GT_OQ) |
                  _mm512_cmp_ps_mask(a1[g], mg, _CMP_GT_OQ);
        }
        if (up) {
            _Pragma("GCC unroll 8") for (g = 0; g < G; g++)
                red[g] = _mm512_max_ps(a0[g], a1[g]);
            for (g = G; g < (G <= 4 ? 4 : 16); g++)
                red[g] = red[0];
            {
                const __mmask16 gm = (__mmask16)((1u << G) - 1u);
                const __m512 mold = _mm512_maskz_loadu_ps(gm, m);
                mnew = _mm512_max_ps(G <= 4 ? hlx_v_hmax4(red) : hlx_v_hmax(red), mold);
                /* m = -inf before the first token: corr is then tiny and multiplies o = 0,
                 * s = 0 */
                corr = hlx_v_exp2n(_mm512_sub_ps(mold, mnew));
                _mm512_mask_storeu_ps(m, gm, mnew);
            }
            _mm512_store_ps(cv, corr);
        }
        _Pragma("GCC unroll 8") for (g = 0; g < G; g++) {
            const __m512 mg = _mm512_set1_ps(m[g]);
            __m512 e0 = hlx_v_exp2n(_mm512_sub_ps(a0[g], mg));
            __m512 e1 = hlx_v_exp2n(_mm512_sub_ps(a1[g], mg));
            __m512 sg = _mm512_load_ps(s + 16 * g); /* per-head sums, 16 lanes */
            if (up)
                sg = _mm512_mul_ps(sg, _mm512_set1_ps(cv[g]));
            _mm512_store_ps(s + 16 * g, _mm512_add_ps(sg, _mm512_add_ps(e0, e1)));
            if (VBF == 4) { /* values in units of 1 / HLX_FP8H_UNIT */
                e0 = _mm512_mul_ps(e0, _mm512_set1_ps(HLX_FP8H_UNIT));
                e1 = _mm512_mul_ps(e1, _mm512_set1_ps(HLX_FP8H_UNIT));
            }
            if (BF == 1 || BF == 3) {
                _mm512_store_ps(p + g * HLX_KB, _mm512_permutex2var_ps(e0, ilo, e1));
                _mm512_store_ps(p + g * HLX_KB + 16, _mm512_permutex2var_ps(e0, ihi, e1));
            } else {
                _mm512_store_ps(p + g * HLX_KB, e0);
                _mm512_store_ps(p + g * HLX_KB + 16, e1);
            }
        }
    }
    /* One chunk streaming the shard (pfv not NULL) prefetches the keys of the block after
     * next (pfk) and the values of the next block (pfv). f32 KV (memory-bound: 32 KB per
     * block at dk = dv = 128) spreads them over the whole block: the scores take the keys
     * at the rate they read this block's (32 tokens of one dimension per dimension), the
     * P.V the values from both ends at once (pfv and pfv + half); 1M tokens on a Zen 5
     * core: 47.9 -> 40.7 ms. bf16 and fp8 (compute-bound there) were 2-3% slower that way
     * and prefetch both over the P.V steps. Several chunks: pfk is this chunk's share of
     * the next block (one line per 8 dimensions of its score loop), pfv NULL. */
    /* f32, a next block and this block's values, one chunk streaming (or none
     * prefetching): the two in pieces (hlx_kb_f32_pieces) */
    if (BF == 0 && VBF == 0 && kn != NULL && nt > 0 && dk == dv && dk % 32 == 0 &&
        (pfv != NULL || pfk == NULL)) {
        hlx_kb_f32_pieces(G, dk, q, kn, sc, p, up ? cv : NULL, vr, vts, vcs, nt, o, pfk, pfv,
                          pfstep, far);
        return;
    }
    if (kn != NULL)
        hlx_kb_scores(G, BF, dk, q, kn, sc, BF == 0 || pfv == NULL ? pfk : NULL,
                      BF == 0 && pfv != NULL ? HLX_KB * 4 : 0, far);
    if (nt > 0 && BF == 0) /* corr NULL: no rescale of o */
        hlx_pv_avx512(G, VBF, 2, p, up ? cv : NULL, dv, vr, vts, vcs, nt, o, pfv,
                      pfv ? pfv + pfstep * (size_t)dv / 2 : NULL, pfstep / 2);
    else if (nt > 0)
        hlx_pv_avx512(G, VBF, 2, p, up ? cv : NULL, dv, vr, vts, vcs, nt, o, pfv ? pfk : NULL,
                      pfv, pfstep);
}

typedef void (*hlx_kb_fn)(const hlx_attn_desc_t *, const float *, const char *, float *, int,
                          const char *, size_t, size_t, float *, float *, float *,
                          const char *, const char *, size_t, const hlx_kv_far_t *, float);
#define HLX_KB_DEF(n, bf, vbf, D) \
    static __attribute__((noinline)) void hlx_kb_##n##_##bf##_##vbf##_##D( \
        const hlx_attn_desc_t *d, const float *q, const char *kn, float *sc, int nt, \
        const char *vr, size_t vts, size_t vcs, float *m, float *s, float *o, \
        const char *pfk, const char *pfv, size_t pfstep, const hlx_kv_far_t *far, float ku) \
    { \
        hlx_kb_body(n, bf, vbf, D, d, q, kn, sc, nt, vr, vts, vcs, m, s, o, pfk, pfv, pfstep, \
                    far, ku); \
    }
#define HLX_KB_DEF_G(bf, vbf) \
    HLX_KB_DEF(1, bf, vbf, 0) HLX_KB_DEF(2, bf, vbf, 0) HLX_KB_DEF(3, bf, vbf, 0) \
    HLX_KB_DEF(4, bf, vbf, 0) HLX_KB_DEF(5, bf, vbf, 0) HLX_KB_DEF(6, bf, vbf, 0) \
    HLX_KB_DEF(7, bf, vbf, 0) HLX_KB_DEF(8, bf, vbf, 0)
HLX_KB_DEF_G(0, 0) HLX_KB_DEF_G(1, 1) HLX_KB_DEF_G(2, 2) HLX_KB_DEF_G(1, 0) HLX_KB_DEF_G(2, 0)
HLX_KB_DEF(8, 0, 0, 128) HLX_KB_DEF(8, 1, 1, 128) HLX_KB_DEF(8, 2, 2, 128)
HLX_KB_DEF_G(4, 4) HLX_KB_DEF(8, 4, 4, 128)
/* fp8 by table lookups: entered only where the CPU has AVX512_VBMI (hlx_kb_fp8t) */
#define HLX_KB_DEF_T(n, D) \
    static __attribute__((noinline, target("avx512vbmi"))) void hlx_kb_##n##_3_3_##D( \
        const hlx_attn_desc_t *d, const float *q, const char *kn, float *sc, int nt, \
        const char *vr, size_t vts, size_t vcs, float *m, float *s, float *o, \
        const char *pfk, const char *pfv, size_t pfstep, const hlx_kv_far_t *far, float ku) \
    { \
        hlx_kb_body(n, 3, 3, D, d, q, kn, sc, nt, vr, vts, vcs, m, s, o, pfk, pfv, pfstep, \
                    far, ku); \
    }
HLX_KB_DEF_T(1, 0) HLX_KB_DEF_T(2, 0) HLX_KB_DEF_T(3, 0) HLX_KB_DEF_T(4, 0)
HLX_KB_DEF_T(5, 0) HLX_KB_DEF_T(6, 0) HLX_KB_DEF_T(7, 0) HLX_KB_DEF_T(8, 0)
HLX_KB_DEF_T(8, 128)
static int hlx_kb_fp8t; /* set at init: the CPU has AVX512_VBMI */
/* HELIX_KV_PREFETCH (kvpf.c): the KV left to the hardware prefetchers (bf16 and fp8; f32
 * takes software), prefetched in software (the next blocks into L1), software plus the far
 * prefetch into L2, or whichever of these is the fastest at the moment (auto, the default:
 * hlx_kv_tune_*, in segments of HLX_KB_SEG blocks) */
#define HLX_KB_SEG (HLX_KV_TUNE_SEG / HLX_KB)
#define HLX_KB_ROW(bf, vbf) \
    { hlx_kb_1_##bf##_##vbf##_0, hlx_kb_2_##bf##_##vbf##_0, hlx_kb_3_##bf##_##vbf##_0, \
      hlx_kb_4_##bf##_##vbf##_0, hlx_kb_5_##bf##_##vbf##_0, hlx_kb_6_##bf##_##vbf##_0, \
      hlx_kb_7_##bf##_##vbf##_0, hlx_kb_8_##bf##_##vbf##_0 }
/* [key type][values: 0 rows of the key type, 1 fp32 rows unpacked from the key blocks];
 * v == k takes type 2 for fp8 */
static const hlx_kb_fn hlx_kb_tab[5][2][8] = {
    { HLX_KB_ROW(0, 0), HLX_KB_ROW(0, 0) },
    { HLX_KB_ROW(1, 1), HLX_KB_ROW(1, 0) },
    { HLX_KB_ROW(2, 2), HLX_KB_ROW(2, 0) },
    { HLX_KB_ROW(3, 3), HLX_KB_ROW(2, 0) },
    { HLX_KB_ROW(4, 4), HLX_KB_ROW(2, 0) },
};
static const hlx_kb_fn hlx_kb_tab128[5] = { hlx_kb_8_0_0_128, hlx_kb_8_1_1_128, hlx_kb_8_2_2_128,
                                            hlx_kb_8_3_3_128, hlx_kb_8_4_4_128 };

/* No NaN byte (0x7f, 0xff) among the fp8 e4m3 bytes [p, p + n), n a multiple of 256: type
 * 4 is exact there. 2 ops per 64 bytes in four independent chains. */
static int hlx_kb_fp8_clean(const char *p, size_t n)
{
    const __m512i m = _mm512_set1_epi8(0x7f);
    __m512i a[4];
    size_t i;
    int j;

    for (j = 0; j < 4; j++)
        a[j] = _mm512_setzero_si512();
    for (i = 0; i < n; i += 256)
        for (j = 0; j < 4; j++)
            a[j] = _mm512_max_epu8(a[j], _mm512_and_si512(_mm512_loadu_si512(
                                                            (const void *)(p + i + 64 * j)), m));
    a[0] = _mm512_max_epu8(_mm512_max_epu8(a[0], a[1]), _mm512_max_epu8(a[2], a[3]));
    return _mm512_cmpeq_epi8_mask(a[0], m) == 0;
}

/* 16 x 16 fp32 transpose of rows r[i] (in registers) into c (16 rows, cs floats apart). */
static inline void hlx_tr16(__m512 *r, float *c, size_t cs)
{
    __m512 t[16];
    int i;

    for (i = 0; i < 8; i++) {
        t[2 * i]     = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (i = 0; i < 4; i++) {
        __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 2]);
        __m512d a2 = _mm512_castps_pd(t[4 * i + 1]), b2 = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i]     = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a2, b2));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a2, b2));
    }
    /* r[4i + j]: 128-bit lane L holds rows 4i..4i+3 of column 4L + j */
    for (i = 0; i < 4; i++) {
        __m512 x0 = _mm512_shuffle_f32x4(r[i], r[4 + i], _MM_SHUFFLE(2, 0, 2, 0));
        __m512 x1 = _mm512_shuffle_f32x4(r[i], r[4 + i], _MM_SHUFFLE(3, 1, 3, 1));
        __m512 y0 = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], _MM_SHUFFLE(2, 0, 2, 0));
        __m512 y1 = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], _MM_SHUFFLE(3, 1, 3, 1));
        /* column 4L + i for L = 0..3 */
        _mm512_storeu_ps(c + (size_t)i * cs,
                         _mm512_shuffle_f32x4(x0, y0, _MM_SHUFFLE(2, 0, 2, 0)));
        _mm512_storeu_ps(c + (size_t)(8 + i) * cs,
                         _mm512_shuffle_f32x4(x0, y0, _MM_SHUFFLE(3, 1, 3, 1)));
        _mm512_storeu_ps(c + (size_t)(4 + i) * cs,
                         _mm512_shuffle_f32x4(x1, y1, _MM_SHUFFLE(2, 0, 2, 0)));
        _mm512_storeu_ps(c + (size_t)(12 + i) * cs,
                         _mm512_shuffle_f32x4(x1, y1, _MM_SHUFFLE(3, 1, 3, 1)));
    }
}

/* The first dv elements of the block's keys as fp32 rows vt[32][dv] (MLA's values). */
static void hlx_kb_unblock(int BF, const char *kb, int dv, float *vt)
{
    int e, h, i;

    for (e = 0; e < dv; e += 16) {
        __m512 r[2][16];
        for (i = 0; i < 16; i++) {
            if (BF == 1) {
                __m512i x = _mm512_loadu_si512((const void *)(kb + (size_t)(e + i) * 64));
                r[0][i] = _mm512_castsi512_ps(_mm512_slli_epi32(
                    _mm512_cvtepu16_epi32(_mm512_castsi512_si256(x)), 16));
                r[1][i] = _mm512_castsi512_ps(_mm512_slli_epi32(
                    _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(x, 1)), 16));
            } else {
                hlx_kb_load(BF, kb, e + i, &r[0][i], &r[1][i]);
            }
        }
        for (h = 0; h < 2; h++)
            hlx_tr16(r[h], vt + (size_t)h * 16 * dv + e, (size_t)dv);
    }
}

/* Attention over a shard in the layout hlx_kb_layout (block b of keys and of values starts
 * at element b * 32 * k_stride and b * 32 * v_stride; v == k: the key blocks). Shapes off
 * the vector path: the reference with the same layout. */
/* The fp8 keys of a block as the f32 block the type-0 functions read ([dk][32], tokens
 * 0-15 and 16-31 of each dimension), widened exactly (NaN kept). */
static void hlx_kb_widen_fp8(const char *kb, int dk, float *kf)
{
    int e;

    for (e = 0; e < dk; e++) {
        __m512 k0, k1;
        hlx_kb_load(2, kb, e, &k0, &k1);
        _mm512_store_ps(kf + (size_t)e * 32, k0);
        _mm512_store_ps(kf + (size_t)e * 32 + 16, k1);
    }
}

/* MLA with fp8 KV (v == k, several head chunks, keys up to HLX_KB_WIDE_DK): the next
 * block's keys are widened once into an f32 block that every chunk reads, instead of
 * each chunk widening them again (16 chunks at MLA's 128 heads; 64K tokens on a Zen 5
 * core: 123.8 -> 95.9-98.1 ms, as fast as bf16). 74 KB of stack. */
#define HLX_KB_WIDE_DK 576

/* The blocked path's shapes: head sizes in multiples of 32 up to 1024 (v == k: values of
 * at most 512 elements, no longer than the keys); others run the reference over the
 * blocked layout. */
static int hlx_kb_covers(const hlx_attn_desc_t *d)
{
    return hlx_attn_shape_fits(d, 32, 1);
}

static void hlx_attn_kb_avx512(const hlx_attn_desc_t *d)
{
    const int alias = d->v == d->k;
    /* fp8: by table lookups where the CPU has AVX512_VBMI (not for v == k: its values are
     * unpacked by the type-2 widening) */
    const int BF = d->kv_dtype == HLX_DTYPE_BF16 ? 1
                   : d->kv_dtype == HLX_DTYPE_FP8 ? (hlx_kb_fp8t && !alias ? 3 : 2) : 0;
    const size_t es = HLX_ES(BF), kbb = HLX_KB * d->k_stride * es;
    const size_t vsb = alias ? (size_t)d->dv * 4 : d->v_stride * es; /* per token of a block */
    /* P.V reads: the unpacked fp32 rows (v == k), or runs of 32 elements of 32 tokens */
    const size_t vts = alias ? vsb : 32 * es, vcs = alias ? 32 * 4 : HLX_KB * 32 * es;
    const int VA = alias && BF != 0; /* f32 keys unpack to f32 rows: table column 0 works */
    /* fp8 keys widened once per block for all chunks (MLA): the chunks run type 0 */
    const int kwide = alias && BF == 2 && d->group > 8 && d->dk <= HLX_KB_WIDE_DK;
    const int KT = kwide ? 0 : BF, KVA = kwide ? 0 : VA; /* what the chunks are given */
    /* fp8 without the lookups: blocks free of NaN bytes as type 4 (not under
     * denormals-are-zero, as avx2.c's type 3) */
    const int fast8 = BF == 2 && !alias && !(_mm_getcsr() & 0x0040 /* DAZ */);
    float ku = 1.0f; /* the units of the scores in sc (type 4 keys: 1 / HLX_FP8H_UNIT) */
    float m[HLX_HMAX];
    float s[HLX_HMAX * 16] __attribute__((aligned(64))); /* per-head sums, 16 lanes each */
    float vt[HLX_KB * 512] __attribute__((aligned(64)));
    float sc[HLX_HMAX * 32] __attribute__((aligned(64))); /* scores: [head][2][16] */
    float kf[HLX_KB_WIDE_DK * HLX_KB] __attribute__((aligned(64)));
    size_t pfstep, b, nblk = (d->len + HLX_KB - 1) / HLX_KB;
    /* auto: short calls take the last long call's choice (none yet: hardware; f32 takes
     * software for hardware) */
    int is_auto, mode = hlx_kv_mode(&is_auto);
    const int tune = hlx_kv_tunes(d, is_auto);
    hlx_kv_tune_t tn;
    int h0, g0, g, e;

    if (!hlx_kb_covers(d)) {
        hlx_attn_ref_layout(d, hlx_kb_layout);
        return;
    }
    {
        const size_t span = kbb > HLX_KB * vsb ? kbb : HLX_KB * vsb;
        const size_t steps = d->dv > 0 ? (size_t)d->dv : 1; /* (dv / 32) passes x 32 rows */
        pfstep = ((span + steps - 1) / steps + 63) / 64 * 64;
    }
    for (h0 = 0; h0 < d->group; h0 += HLX_HMAX) {
        const int H = d->group - h0 < HLX_HMAX ? d->group - h0 : HLX_HMAX;
        float *oh = d->o + (size_t)h0 * d->dv;
        for (g = 0; g < H; g++)
            m[g] = -INFINITY;
        memset(s, 0, sizeof(float) * 16 * (size_t)H);
        memset(oh, 0, sizeof(float) * (size_t)H * d->dv);
        /* block pipeline per head chunk: the scores of block b + 1 are computed between
         * the softmax and the P.V of block b (hlx_kb_body); with several chunks (MLA) the
         * chunks take turns per block, each with its own score buffer, so a block's keys
         * (and its unpacked values) are used by all chunks while in cache */
        if (kwide && nblk > 0)
            hlx_kb_widen_fp8((const char *)d->k, d->dk, kf);
        {
            const int bt = fast8 && nblk > 0 &&
                                   (d->kv_clean ||
                                    hlx_kb_fp8_clean((const char *)d->k, (size_t)d->dk * HLX_KB))
                               ? 4 : KT;
            for (g0 = 0; g0 < H; g0 += 8) {
                const int G = H - g0 < 8 ? H - g0 : 8;
                if (nblk > 0)
                    hlx_kb_tab[bt][KVA][G - 1](d, d->q + (size_t)(h0 + g0) * d->dk,
                                               kwide ? (const char *)kf : d->k,
                                               sc + (size_t)g0 * 32, 0, NULL, 0, 0, m, s, oh,
                                               NULL, NULL, 0, NULL, 1.0f);
            }
            ku = bt == 4 ? HLX_FP8H_UNIT : 1.0f;
        }
        if (tune)
            mode = hlx_kv_tune_begin(&tn, BF != 0);
        for (b = 0; b < nblk; b++) {
            const size_t j = b * HLX_KB;
            const int nt = (int)(d->len - j < HLX_KB ? d->len - j : HLX_KB);
            const char *kb = (const char *)d->k + b * kbb;
            const char *kn = b + 1 < nblk ? kb + kbb : NULL;
            const char *vr = alias ? (const char *)vt : (const char *)d->v + j * vsb;
            /* one head chunk streams the shard: prefetch the keys of the block after next
             * and the values of the next block (several chunks find the block in cache).
             * bf16 and fp8 only when the mode says so: on a Zen 5 core the hardware
             * prefetchers alone were 8-11% faster most of the time (1M tokens: 24.3 against
             * 26.2 ms), but in some phases of the shared machine they fell behind (53 ms
             * against 32 with software prefetches), and on a Zen 4 core software with the
             * far prefetch was the fastest for every type, hence the timed choice above */
            const int pf = (BF == 0 || mode != HLX_KV_PREFETCH_HARDWARE) && nt == HLX_KB &&
                           H <= 8 && b + 2 < nblk;
            hlx_kv_far_t far;
            const hlx_kv_far_t *fp = H <= 8 ? hlx_kv_far_at(&far, mode, b, nblk, HLX_KB, kb, kbb,
                                                            vr, vsb, alias, d->dk)
                                            : NULL;
            const char *pk = pf ? kb + 2 * kbb : NULL;
            const char *pv = pf ? (alias ? kb + kbb : vr + HLX_KB * vsb) : NULL;
            /* the type this step reads the next block's keys and this block's values as
             * (fp8 without the lookups: 4 where both hold no NaN byte) */
            const int bt = fast8 && nt == HLX_KB &&
                                   (d->kv_clean ||
                                    ((kn == NULL ||
                                      hlx_kb_fp8_clean(kn, (size_t)d->dk * HLX_KB)) &&
                                     hlx_kb_fp8_clean(vr, (size_t)d->dv * HLX_KB)))
                               ? 4 : KT;
            if (alias)
                hlx_kb_unblock(BF, kb, d->dv, vt);
            if (kwide && kn != NULL)
                hlx_kb_widen_fp8(kn, d->dk, kf);
            for (g0 = 0; g0 < H; g0 += 8) {
                const int G = H - g0 < 8 ? H - g0 : 8;
                const float *qg = d->q + (size_t)(h0 + g0) * d->dk;
                float *og = oh + (size_t)g0 * d->dv;
                float *scg = sc + (size_t)g0 * 32;
                const char *pkc = pk, *pvc = pv;
                /* several chunks (MLA: 16) are compute-bound but still stall on the next
                 * block's first touch from DRAM (64K MLA tokens ran at half the in-cache
                 * rate): chunk c prefetches its share of the block after next, one line
                 * per 8 key dimensions of its score loop, the next block's keys first, then
                 * its values (rows of the next block; none when v == k) */
                if (H > 8 && b + 2 < nblk) {
                    const size_t share = (size_t)d->dk / 8 * 64, at = (size_t)(g0 / 8) * share;
                    const size_t vspan = alias ? 0 : HLX_KB * vsb;
                    pvc = NULL;
                    pkc = at < kbb ? kb + 2 * kbb + at
                                   : at - kbb < vspan ? vr + 2 * HLX_KB * vsb + (at - kbb) : NULL;
                }
                if (G == 8 && !alias && d->dk == 128 && d->dv == 128)
                    hlx_kb_tab128[bt](d, qg, kn, scg, nt, vr, vts, vcs, m + g0,
                                      s + (size_t)g0 * 16, og, pkc, pvc, pfstep, fp, ku);
                else
                    hlx_kb_tab[bt][KVA][G - 1](d, qg, kwide && kn ? (const char *)kf : kn,
                                               scg, nt, vr, vts, vcs, m + g0,
                                               s + (size_t)g0 * 16, og, pkc, pvc, pfstep, fp,
                                               ku);
            }
            ku = bt == 4 ? HLX_FP8H_UNIT : 1.0f;
            if (tune && (b + 1) % HLX_KB_SEG == 0)
                mode = hlx_kv_tune_next(&tn, (b + 1) / HLX_KB_SEG);
        }
        for (g = 0; g < H; g++) {
            float *og = oh + (size_t)g * d->dv;
            const float sum = _mm512_reduce_add_ps(_mm512_load_ps(s + 16 * (size_t)g));
            const float inv = d->len ? 1.0f / sum : 0.0f;
            if ((BF == 1 || BF == 3) && !alias) { /* value rows widened out of order */
                static const int8_t t3[16] = { 0, 2, 4, 6, 16, 18, 20, 22, 8, 10, 12, 14, 24,
                                               26, 28, 30 };
                float tmp[32];
                int c;
                for (c = 0; c < d->dv; c += 32) {
                    for (e = 0; e < 16; e++) {
                        const int t = BF == 3 ? t3[e] : 2 * e;
                        tmp[t]     = og[c + e];
                        tmp[t + 1] = og[c + 16 + e];
                    }
                    memcpy(og + c, tmp, sizeof(tmp));
                }
            }
            for (e = 0; e < d->dv; e++)
                og[e] *= inv;
            /* m in log2 units */
            d->lse[h0 + g] = d->len ? m[g] * 0.693147180559945309f + logf(sum) : -INFINITY;
        }
    }
}

#ifdef HLX_HAVE_AMX
/* 16 floats -> bf16 with round to nearest even, in the high half of each lane (low half
 * zero), as hlx_f32_to_bf16 does; NaN stays NaN. */
static inline __m512i hlx_amx_rne16(__m512 x)
{
    __m512i u = _mm512_castps_si512(x);
    __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff)));
    __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000)); /* quiet */
    return _mm512_and_si512(r, _mm512_set1_epi32((int)0xffff0000u));
}

/* Splits q of G <= 8 heads into AMX B tiles (VNNI order: row r holds dimensions 2r, 2r+1
 * of the chunk as a pair per column). Per 32-dimension chunk: B12, 16 columns (head n, n <
 * 8: first part; head n - 8: second part), then B3, 8 columns (third part). Each part is
 * the bf16 rounding of what the previous parts left, so q = p1 + p2 + p3 exactly for
 * normal fp32 (8 + 8 + 8 significant bits cover the 24 of fp32); the tile products of bf16
 * pairs are exact in fp32, so the scores keep fp32 accuracy. Missing heads are zero. */
static void hlx_amx_q_tiles(const float *q, int G, int dk, uint16_t *qb)
{
    /* odd 16-bit words of two vectors: the bf16 of 32 consecutive elements, in order */
    const __m512i pick = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39,
                                          37, 35, 33, 31, 29, 27, 25, 23, 21, 19, 17, 15, 13,
                                          11, 9, 7, 5, 3, 1);
    uint32_t pairs[3][16] __attribute__((aligned(64)));
    int c, r, n, j;

    for (c = 0; c < dk; c += 32) {
        uint32_t *b12 = (uint32_t *)(qb + (size_t)(c / 32) * 768), *b3 = b12 + 256;
        for (n = 0; n < 8; n++) {
            __m512i w[3][2];
            for (j = 0; j < 2; j++) {
                __m512 x = n < G ? _mm512_loadu_ps(q + (size_t)n * dk + c + 16 * j)
                                 : _mm512_setzero_ps();
                __m512i p1 = hlx_amx_rne16(x), p2, p3;
                __m512 r1 = _mm512_sub_ps(x, _mm512_castsi512_ps(p1)); /* exact */
                __m512 r2;
                p2 = hlx_amx_rne16(r1);
                r2 = _mm512_sub_ps(r1, _mm512_castsi512_ps(p2));
                p3 = hlx_amx_rne16(r2); /* exact: r2 has at most 8 significant bits */
                w[0][j] = p1;
                w[1][j] = p2;
                w[2][j] = p3;
            }
            for (j = 0; j < 3; j++)
                _mm512_store_si512(pairs[j], _mm512_permutex2var_epi16(w[j][0], pick, w[j][1]));
            for (r = 0; r < 16; r++) {
                b12[r * 16 + n]     = pairs[0][r];
                b12[r * 16 + n + 8] = pairs[1][r];
                b3[r * 8 + n]       = pairs[2][r];
            }
        }
    }
}

/* Scores of 16 key rows (kh) into sn (16 x 16 part-1/2 sums at sn, 16 x 8 part-3 sums at
 * sn3): the A tiles of up to 4 consecutive 32-dimension chunks (tiles 2-5) are loaded
 * back to back, so the rows' lines are requested together (one chunk of 16 rows at a time
 * left the loads scattered: 5-10% slower from DRAM). */
static inline __attribute__((always_inline)) void
hlx_amx_scores16(int dk, const uint16_t *qb, const char *kh, size_t ksb, float *sn, float *sn3)
{
    int c;

    _tile_zero(0);
    _tile_zero(1);
    for (c = 0; c < dk; c += 128) {
        const uint16_t *b = qb + (size_t)(c / 32) * 768;
        const int nc = dk - c >= 128 ? 4 : (dk - c) / 32;
        _tile_loadd(2, kh + (size_t)c * 2, (long)ksb);
        if (nc > 1)
            _tile_loadd(3, kh + (size_t)c * 2 + 64, (long)ksb);
        if (nc > 2)
            _tile_loadd(4, kh + (size_t)c * 2 + 128, (long)ksb);
        if (nc > 3)
            _tile_loadd(5, kh + (size_t)c * 2 + 192, (long)ksb);
        _tile_loadd(6, b, 64);
        _tile_loadd(7, b + 512, 32);
        _tile_dpbf16ps(0, 2, 6);
        _tile_dpbf16ps(1, 2, 7);
        if (nc > 1) {
            _tile_loadd(6, b + 768, 64);
            _tile_loadd(7, b + 768 + 512, 32);
            _tile_dpbf16ps(0, 3, 6);
            _tile_dpbf16ps(1, 3, 7);
        }
        if (nc > 2) {
            _tile_loadd(6, b + 2 * 768, 64);
            _tile_loadd(7, b + 2 * 768 + 512, 32);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
        }
        if (nc > 3) {
            _tile_loadd(6, b + 3 * 768, 64);
            _tile_loadd(7, b + 3 * 768 + 512, 32);
            _tile_dpbf16ps(0, 5, 6);
            _tile_dpbf16ps(1, 5, 7);
        }
    }
    _tile_stored(0, sn, 64);
    _tile_stored(1, sn3, 32);
}

/* One step of the tile pipeline for G <= 8 heads and 32-token blocks:
 * 1. the scores of the next block (kn, when not NULL) into sn;
 * 2. softmax and P.V of the current block from the scores sc computed one step earlier. A
 *    vector load right after a tile store of the same memory cannot take its data from
 *    the store; one step of distance lets the store complete first (measured: no
 *    difference either way at 1M tokens, 44-48 ms, so the cost is hidden elsewhere; kept
 *    because it is free).
 * The scores are token-major ([token][head]): the softmax runs on two tokens x 8 heads
 * per vector, P.V broadcasts p[t][g]. P.V walks the block in two halves of 16 value rows
 * (without the prefetch, 32 rows per column pass requested more lines at once than the
 * core can have in flight: 15-20% slower from DRAM; with it, equal) and prefetches,
 * spread over its steps, the key rows of the block
 * after next (pfk) and the value rows of the next block (pfv): bursts of prefetches at a
 * block start stalled on the line fill buffers; spread, they keep the misses in flight
 * during the compute (68 -> 42 ms at 1M tokens).
 * Score buffer: [part 1/2: 2 x 16 x 16][part 3: 2 x 16 x 8] floats. */
static inline __attribute__((always_inline)) void
hlx_amx_blk_body(const int G, const int D, const hlx_attn_desc_t *d, const uint16_t *qb,
                 const char *kn, float *sn, const float *sc, const char *v, size_t ksb,
                 size_t vsb, const char *pfk, const char *pfv, size_t pfstep, float *m,
                 float *s, float *o)
{
    static const float one[16] __attribute__((aligned(64))) = {
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    };
    const int dk = D ? D : d->dk, dv = D ? D : d->dv;
    float p[HLX_AMX_TB * 8] __attribute__((aligned(64)));
    float mv[16] __attribute__((aligned(64))), sv[16] __attribute__((aligned(64)));
    float cv[16] __attribute__((aligned(64)));
    const __m512 scale = _mm512_set1_ps(d->scale);
    __m512 x[16], mx, mold, mnew, corr, sum;
    size_t half = pfstep * (size_t)(dv / 32) * 16; /* prefetch bytes per 16-row half */
    int i, g;

    if (kn != NULL) {
        hlx_amx_scores16(dk, qb, kn, ksb, sn, sn + 512);
        hlx_amx_scores16(dk, qb, kn + 16 * ksb, ksb, sn + 256, sn + 640);
    }
    if (sc == NULL)
        return;

    /* x[i]: tokens 2i, 2i+1 (lanes 0-7, 8-15) = (part1 + part2) + part3, scaled */
    mx = _mm512_set1_ps(-INFINITY);
    for (i = 0; i < 16; i++) {
        __m512 r0 = _mm512_load_ps(sc + 32 * i), r1 = _mm512_load_ps(sc + 32 * i + 16);
        __m512 lo = _mm512_shuffle_f32x4(r0, r1, _MM_SHUFFLE(1, 0, 1, 0));
        __m512 hi = _mm512_shuffle_f32x4(r0, r1, _MM_SHUFFLE(3, 2, 3, 2));
        x[i] = _mm512_mul_ps(_mm512_add_ps(_mm512_add_ps(lo, hi),
                                           _mm512_load_ps(sc + 512 + 16 * i)), scale);
        mx = _mm512_max_ps(mx, x[i]);
    }
    mx = _mm512_max_ps(mx, _mm512_shuffle_f32x4(mx, mx, _MM_SHUFFLE(1, 0, 3, 2)));
    for (g = 0; g < 8; g++) {
        mv[g] = mv[g + 8] = g < G ? m[g] : 0.0f;
        sv[g] = sv[g + 8] = g < G ? s[g] : 0.0f;
    }
    mold = _mm512_load_ps(mv);
    mnew = _mm512_max_ps(mold, mx);
    /* m = -inf before the first token: corr is then tiny and multiplies o = 0, s = 0 */
    corr = hlx_v_exp(_mm512_sub_ps(mold, mnew));
    sum = _mm512_setzero_ps();
    for (i = 0; i < 16; i++) {
        __m512 e = hlx_v_exp(_mm512_sub_ps(x[i], mnew));
        if (pfk != NULL) { /* the first lines early too (2-4% faster at 1M tokens) */
            _mm_prefetch(pfv + (size_t)i * 64, _MM_HINT_T0);
            _mm_prefetch(pfk + (size_t)i * 64, _MM_HINT_T0);
        }
        _mm512_store_ps(p + 16 * i, e);
        sum = _mm512_add_ps(sum, e);
    }
    sum = _mm512_add_ps(sum, _mm512_shuffle_f32x4(sum, sum, _MM_SHUFFLE(1, 0, 3, 2)));
    _mm512_store_ps(sv, _mm512_fmadd_ps(_mm512_load_ps(sv), corr, sum));
    _mm512_store_ps(mv, mnew);
    _mm512_store_ps(cv, corr);
    for (g = 0; g < G; g++) {
        m[g] = mv[g];
        s[g] = sv[g];
    }
    hlx_pv_avx512(G, 1, 1, p, cv, dv, v, vsb, 64, 16, o, pfk, pfv, pfstep);
    hlx_pv_avx512(G, 1, 1, p + 128, one, dv, v + 16 * vsb, vsb, 64, 16, o,
                  pfk ? pfk + half : NULL, pfk ? pfv + half : NULL, pfstep);
}

#define HLX_AMX_BLK_DEF(n, tag, D) \
    static __attribute__((noinline)) void hlx_amx_blk_##tag##n( \
        const hlx_attn_desc_t *d, const uint16_t *qb, const char *kn, float *sn, \
        const float *sc, const char *v, size_t ksb, size_t vsb, const char *pfk, \
        const char *pfv, size_t pfstep, float *m, float *s, float *o) \
    { \
        hlx_amx_blk_body(n, D, d, qb, kn, sn, sc, v, ksb, vsb, pfk, pfv, pfstep, m, s, o); \
    }
HLX_AMX_BLK_DEF(8, d128_, 128)
HLX_AMX_BLK_DEF(1, g, 0) HLX_AMX_BLK_DEF(2, g, 0) HLX_AMX_BLK_DEF(3, g, 0)
HLX_AMX_BLK_DEF(4, g, 0) HLX_AMX_BLK_DEF(5, g, 0) HLX_AMX_BLK_DEF(6, g, 0)
HLX_AMX_BLK_DEF(7, g, 0) HLX_AMX_BLK_DEF(8, g, 0)

typedef void (*hlx_amx_blk_fn)(const hlx_attn_desc_t *, const uint16_t *, const char *,
                               float *, const float *, const char *, size_t, size_t,
                               const char *, const char *, size_t, float *, float *, float *);
static const hlx_amx_blk_fn hlx_amx_blk_tab[8] = {
    hlx_amx_blk_g1, hlx_amx_blk_g2, hlx_amx_blk_g3, hlx_amx_blk_g4,
    hlx_amx_blk_g5, hlx_amx_blk_g6, hlx_amx_blk_g7, hlx_amx_blk_g8,
};

/* nb full 32-token blocks starting at key row k / value row v, software-pipelined: the
 * scores of block b + 1 are computed before the softmax and P.V of block b. Prefetch
 * (when pf: the first head chunk of a superblock): pfstep bytes per P.V step cover a
 * block of either stream (rounded up to lines). */
static void hlx_amx_run(int G, const hlx_attn_desc_t *d, const uint16_t *qb, const char *k,
                        const char *v, size_t ksb, size_t vsb, size_t nb, int pf, float *m,
                        float *s, float *o)
{
    float sbuf[2][768] __attribute__((aligned(64)));
    const hlx_amx_blk_fn f = G == 8 && d->dk == 128 && d->dv == 128 ? hlx_amx_blk_d128_8
                                                                    : hlx_amx_blk_tab[G - 1];
    const size_t span = HLX_AMX_TB * (ksb > vsb ? ksb : vsb);
    const size_t steps = d->dv > 0 ? (size_t)d->dv : 1;
    const size_t pfstep = ((span + steps - 1) / steps + 63) / 64 * 64;
    size_t b;

    if (nb == 0)
        return;
    f(d, qb, k, sbuf[0], NULL, NULL, ksb, vsb, NULL, NULL, 0, m, s, o);
    for (b = 0; b < nb; b++) {
        const char *kn = b + 1 < nb ? k + (b + 1) * HLX_AMX_TB * ksb : NULL;
        f(d, qb, kn, sbuf[(b + 1) & 1], sbuf[b & 1], v + b * HLX_AMX_TB * vsb, ksb, vsb,
          kn && pf ? kn + HLX_AMX_TB * ksb : NULL, v + (b + 1) * HLX_AMX_TB * vsb, pfstep, m, s,
          o);
    }
}

/* Palette 1: tiles 0 (C, 16 x 16 fp32), 1 (C, 16 x 8), 2-5 (A: 16 key rows x 32 bf16),
 * 6 (B: 16 x 16 pairs), 7 (B: 16 x 8 pairs). */
typedef struct hlx_amx_cfg {
    uint8_t  palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t  rows[16];
} hlx_amx_cfg_t;

/* bf16 KV on the tile path (the process has been granted the tile state at init, see
 * dispatch.c); other types and shapes as the avx512 variant. The tile state is configured
 * per call and released at its end, so the thread carries no AMX state between calls. */
static void hlx_attn_amx(const hlx_attn_desc_t *d)
{
    static const hlx_amx_cfg_t cfg = {
        .palette = 1,
        .colsb = { 64, 32, 64, 64, 64, 64, 64, 32 },
        .rows = { 16, 16, 16, 16, 16, 16, 16, 16 },
    };
    uint16_t qb[HLX_AMX_QB_ELEMS] __attribute__((aligned(64)));

    if (d->kv_dtype != HLX_DTYPE_BF16 || d->dk % 32 || d->dv % 32 || d->dk > 1024 ||
        d->len < HLX_AMX_TB || d->softcap != 0.0f) {
        hlx_attn_avx512(d);
        return;
    }
    _tile_loadconfig(&cfg);
    hlx_attn_typed_avx512(1, 1, qb, d);
    _tile_release();
}

void hlx_kernels_amx(hlx_kernels_t *k)
{
    hlx_kernels_avx512(k);
    k->name      = "amx";
    k->kv_layout = (hlx_kv_layout_t){ 1, 1, 1, 1 }; /* the tiles read key rows */
    k->attn      = hlx_attn_amx;
    k->attn_covers = hlx_attn_covers_avx512; /* tiles or the row kernel: the same shapes */
}
#endif

/* 16 bf16 or f32 weights -> 16 floats; masked for the tail columns. */
static inline __m512 hlx_w16(const void *w, int bf, size_t i, __mmask16 mk)
{
    if (bf)
        return _mm512_castsi512_ps(_mm512_slli_epi32(
            _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, (const uint16_t *)w + i)), 16));
    return _mm512_maskz_loadu_ps(mk, (const float *)w + i);
}

/* The 32 columns at n of a range ending at n1, as two masked halves of 16. */
static inline __attribute__((always_inline)) void
hlx_gemm_masks(int n, int n1, __mmask16 *m0, __mmask16 *m1)
{
    const int c = n1 - n;

    *m0 = c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << c) - 1u);
    *m1 = c >= 32 ? (__mmask16)0xffff : c > 16 ? (__mmask16)((1u << (c - 16)) - 1u) : 0;
}

/* MR rows x those 32 columns of y into registers (zeros unless load), and back. */
static inline __attribute__((always_inline)) void
hlx_gemm_y_in(const int MR, const float *y, int N, int n, __mmask16 m0, __mmask16 m1, int load,
              __m512 *a0, __m512 *a1)
{
    int m;

    for (m = 0; m < MR; m++) {
        const float *yr = y + (size_t)m * N + n;
        a0[m] = load ? _mm512_maskz_loadu_ps(m0, yr) : _mm512_setzero_ps();
        a1[m] = load ? _mm512_maskz_loadu_ps(m1, yr + 16) : _mm512_setzero_ps();
    }
}

static inline __attribute__((always_inline)) void
hlx_gemm_y_out(const int MR, float *y, int N, int n, __mmask16 m0, __mmask16 m1,
               const __m512 *a0, const __m512 *a1)
{
    int m;

    for (m = 0; m < MR; m++) {
        float *yr = y + (size_t)m * N + n;
        _mm512_mask_storeu_ps(yr, m0, a0[m]);
        _mm512_mask_storeu_ps(yr + 16, m1, a1[m]);
    }
}

/* One term k for MR rows: y[m][32 columns] += x[m][k] (xk[m]) x the weights w0, w1. */
static inline __attribute__((always_inline)) void
hlx_gemm_fma_rows(const int MR, const float *xk, __m512 w0, __m512 w1, __m512 *a0, __m512 *a1)
{
    int m;

    for (m = 0; m < MR; m++) {
        const __m512 b = _mm512_set1_ps(xk[m]);
        a0[m] = _mm512_fmadd_ps(b, w0, a0[m]);
        a1[m] = _mm512_fmadd_ps(b, w1, a1[m]);
    }
}

/* The kb terms of one block of y (MR rows x the 32 columns at n) from rows k0.. of W, BF
 * (bf16) and PF constant: the loop then holds no test but its own (a test of the weight
 * type and of the prefetch in every term left the few-row kernel front-end bound: one
 * row from L3 at 25 GB/s, four at 15). PF 0: no prefetch; 1: row k0 + ki + dk of every
 * term (dk 0, always inside W); 2: the same while inside W (dk past the block). Prefetch
 * into L2, bf16 64 bytes of a row, f32 two lines (hlx_gemm_pf_at). A decode step finds its
 * weights in L3 or DRAM, where the first of these (then the next block's columns) took the
 * 4K batch-8 step's GEMMs from 325 to 180 us. Into L2, not L1: with N a multiple of 1024
 * f32 columns the 8 rows lie 4 KiB apart, in one L1 set, and 8 more lines prefetched into
 * that set evicted the block's own (Zen 4, one row of x: N 1024 x K 256 from L2 48 -> 69
 * GB/s, 8192 x 8192 from DRAM 21 -> 28 f32 and 20 -> 30 bf16; 512 x 512 76-80 -> 71-74). */
static inline __attribute__((always_inline)) void
hlx_gemm_term_avx512(const int MR, const int BF, const int PF, int ki, int N, int K, int k0,
                     int n, int pn, int dk, const void *w, const float *xt, __mmask16 m0,
                     __mmask16 m1, __m512 *a0, __m512 *a1)
{
    const size_t wi = (size_t)(k0 + ki) * N + n;
    const __m512 w0 = hlx_w16(w, BF, wi, m0), w1 = hlx_w16(w, BF, wi + 16, m1);

    if (PF == 1 || (PF == 2 && k0 + ki + dk < K)) {
        const char *p =
            (const char *)w + ((size_t)(k0 + ki + dk) * N + (size_t)pn) * (BF ? 2 : 4);
        _mm_prefetch(p, _MM_HINT_T1);
        if (!BF)
            _mm_prefetch(p + 64, _MM_HINT_T1);
    }
    hlx_gemm_fma_rows(MR, xt + ki * 8, w0, w1, a0, a1);
}

static inline __attribute__((always_inline)) void
hlx_gemm_terms_avx512(const int MR, const int BF, const int PF, int kb, int N, int K, int k0,
                      int n, int pn, int dk, const void *w, const float *xt, __mmask16 m0,
                      __mmask16 m1, __m512 *a0, __m512 *a1)
{
    int ki;

    /* up to 4 rows the 8 terms unrolled; from 5 rows (64 terms, 16 accumulators) unrolling
     * cost f32 at 8 rows 15% in L3 */
    if (MR <= 4)
        _Pragma("GCC unroll 8") for (ki = 0; ki < kb; ki++)
            hlx_gemm_term_avx512(MR, BF, PF, ki, N, K, k0, n, pn, dk, w, xt, m0, m1, a0, a1);
    else
        for (ki = 0; ki < kb; ki++)
            hlx_gemm_term_avx512(MR, BF, PF, ki, N, K, k0, n, pn, dk, w, xt, m0, m1, a0, a1);
}

/* MR (1..8) rows of y[M][N] (+)= x[M][K] W[K][N] over columns [n0, n1): the MR x 32
 * block of y in 2 x MR registers while KB rows of W pass (KB sequential streams, each
 * 16-column weight vector widened once and applied to every row), so y goes through
 * memory once per KB rows of W, and x comes as broadcasts (packed per block of k, one
 * base address for all). Each element is summed in the order of k whatever the column
 * range, the row count and KB: a thread's column range, or a request alone or in a
 * batch, rounds the same. MR is a constant at every call (HLX_GEMM_BY_ROWS below), so
 * the row loops unroll into registers.
 * KB and the prefetch follow MR (hlx_gemm_kb, hlx_gemm_pf_at). */
static inline __attribute__((always_inline)) void
hlx_gemm_rows_avx512(const int MR, const int BF, int N, int K, const float *x, const void *w,
                     float *y, int accumulate, int n0, int n1)
{
    const int KB = hlx_gemm_kb(MR);
    float xt[HLX_GEMM_KB_MANY * 8] __attribute__((aligned(64))); /* x of this block, [ki][m] */
    int k0, n;

    for (k0 = 0; k0 < K; k0 += KB) {
        const int kb = K - k0 < KB ? K - k0 : KB, load = accumulate || k0 > 0;
        hlx_gemm_pack_x(MR, K, x, k0, kb, xt);
        for (n = n0; n < n1; n += 32) {
            __mmask16 m0, m1;
            __m512 a0[8], a1[8];
            int pn, dk;
            const int pf = hlx_gemm_pf_at(MR, 1, n0, n1, n, &pn, &dk);
            hlx_gemm_masks(n, n1, &m0, &m1);
            hlx_gemm_y_in(MR, y, N, n, m0, m1, load, a0, a1);
            if (pf && dk == 0 && kb == KB) /* the common case: a whole block, same rows */
                hlx_gemm_terms_avx512(MR, BF, 1, KB, N, K, k0, n, pn, 0, w, xt, m0, m1, a0, a1);
            else if (pf)
                hlx_gemm_terms_avx512(MR, BF, 2, kb, N, K, k0, n, pn, dk, w, xt, m0, m1, a0,
                                      a1);
            else
                hlx_gemm_terms_avx512(MR, BF, 0, kb, N, K, k0, n, pn, dk, w, xt, m0, m1, a0,
                                      a1);
            hlx_gemm_y_out(MR, y, N, n, m0, m1, a0, a1);
        }
    }
}

/* Up to 8 rows: W streamed once (a decode batch); the row count and the weight type
 * constants in each instance. */
static void hlx_gemm_few_avx512(int M, int N, int K, const float *x, const void *w, int bf,
                                float *y, int accumulate, int n0, int n1)
{
    if (bf)
        HLX_GEMM_BY_ROWS(M, hlx_gemm_rows_avx512, 1, N, K, x, w, y, accumulate, n0, n1);
    else
        HLX_GEMM_BY_ROWS(M, hlx_gemm_rows_avx512, 0, N, K, x, w, y, accumulate, n0, n1);
}

/* More than 8 rows (a prefill chunk): W in panels of HLX_GEMM_PK rows of k x HLX_GEMM_PN
 * columns, each widened once to f32 into a stack buffer (128 KiB, in L2) in strips of 32
 * columns, [strip][k][32]; every block of 8 rows of x then passes over the panel with its
 * 8 x 32 block of y in registers for all of the panel's k (y through memory once per
 * panel, W from memory once). Each element is still summed in the order of k (panels of
 * one column range in the order of k), so the sums are bit for bit those of
 * hlx_gemm_rows_avx512. */
#define HLX_GEMM_PK 128
#define HLX_GEMM_PN 256

static void hlx_gemm_pack_avx512(const void *w, int bf, int N, int ka, int kz, int na, int nz,
                                 float *p)
{
    int k, n;

    for (k = ka; k < kz; k++) /* row by row: W streams in order */
        for (n = na; n < nz; n += 32) {
            __mmask16 m0, m1;
            float *d = p + ((size_t)(n - na) / 32 * (size_t)(kz - ka) + (size_t)(k - ka)) * 32;
            const size_t wi = (size_t)k * N + n;
            hlx_gemm_masks(n, nz, &m0, &m1);
            _mm512_store_ps(d, hlx_w16(w, bf, wi, m0));
            _mm512_store_ps(d + 16, hlx_w16(w, bf, wi + 16, m1));
        }
}

/* MR rows x the 32 columns at n of y (+)= xt[k][8] x the packed strip ws[k][32], kk terms. */
static inline __attribute__((always_inline)) void
hlx_gemm_micro_avx512(const int MR, int N, int kk, const float *xt, const float *ws, float *y,
                      int n, int n1, int load)
{
    __mmask16 m0, m1;
    __m512 a0[8], a1[8];
    int k;

    hlx_gemm_masks(n, n1, &m0, &m1);
    hlx_gemm_y_in(MR, y, N, n, m0, m1, load, a0, a1);
    for (k = 0; k < kk; k++)
        hlx_gemm_fma_rows(MR, xt + k * 8, _mm512_load_ps(ws + (size_t)k * 32),
                          _mm512_load_ps(ws + (size_t)k * 32 + 16), a0, a1);
    hlx_gemm_y_out(MR, y, N, n, m0, m1, a0, a1);
}

/* The next panel's lines of W, fetched into L2 a share at a time while this panel
 * computes (its packing would otherwise wait on memory with nothing to overlap). */
typedef struct hlx_gemm_next {
    const char *w0;          /* its first row's first column */
    size_t      row_bytes;   /* N x element size */
    int         lines_a_row, lines, done;
} hlx_gemm_next_t;

static void hlx_gemm_fetch_avx512(hlx_gemm_next_t *nx, int upto)
{
    for (; nx->done < upto && nx->done < nx->lines; nx->done++)
        _mm_prefetch(nx->w0 + (size_t)(nx->done / nx->lines_a_row) * nx->row_bytes +
                         (size_t)(nx->done % nx->lines_a_row) * 64, _MM_HINT_T1);
}

/* Rows [0, M) over one packed panel: columns [na, nz), terms [ka, kz). */
static void hlx_gemm_panel_avx512(int N, int K, const float *x, const float *p, float *y,
                                  int M, int na, int nz, int ka, int kz, int load,
                                  hlx_gemm_next_t *nx)
{
    float xt[HLX_GEMM_PK * 8] __attribute__((aligned(64))); /* x of 8 rows, [k][m] */
    const int kk = kz - ka, calls = (M + 7) / 8 * ((nz - na + 31) / 32);
    int m0, n, call = 0;

    for (m0 = 0; m0 < M; m0 += 8) {
        const int mr = M - m0 < 8 ? M - m0 : 8;
        const float *xm = x + (size_t)m0 * K;
        float *ym = y + (size_t)m0 * N;
        hlx_gemm_pack_x(mr, K, xm, ka, kk, xt);
        for (n = na; n < nz; n += 32) {
            const float *ws = p + (size_t)(n - na) / 32 * (size_t)kk * 32;
            hlx_gemm_fetch_avx512(nx, (int)((int64_t)nx->lines * ++call / calls));
            HLX_GEMM_BY_ROWS(mr, hlx_gemm_micro_avx512, N, kk, xt, ws, ym, n, nz, load);
        }
    }
}

/* Weights in strips of 16 columns ([ceil(N/16)][K][16], HLX_W_S16). Row-major W gave the
 * few-row kernel above one stream per row of W in flight (KB of them, each advancing 64
 * bytes per block of columns), which from DRAM read bf16 W at 21-26 GB/s for 1 row and 13-14
 * for 8 on the Zen 5 kind where the core reads 30-33. A strip is one sequential stream; SS
 * strips walked at once are SS streams the hardware prefetchers follow, and MR x SS
 * accumulators stay in registers for a whole chunk of k (docs/kernels.md, "Weights in
 * strips"). Every element is still summed in the order of k from y (or 0), so the bits
 * are those of the row-major kernels. */

/* Terms per chunk: x of the chunk, [k][MR], up to 128 KiB (16 KiB a row). Each strip is
 * read in runs of KC x 32 bytes (bf16; 64 for f32), and shorter runs restart the
 * prefetchers' streams more often: bf16 8192 x 8192 from DRAM, 8 rows, 15.6 GB/s at 1024,
 * 19 at 4096, 18.4 at 8192. */
#define HLX_GEMM_S16_KC 4096

/* Strips walked at once for MR rows: MR x SS accumulators (at most 24), and 3-6 streams. */
#define HLX_GEMM_S16_SS(MR) ((MR) <= 3 ? 4 : (MR) == 4 ? 6 : (MR) <= 6 ? 4 : 3)

/* Lines of W fetched ahead in each strip (4 rows and more): from DRAM, 8192 x 8192 on the
 * Zen 5 kind, f32 8 rows 31 -> 39-42 GB/s, bf16 4 rows 36-37 -> 39-43, 6 rows 23-25 ->
 * 27-28, 8 rows 24-26 -> 26-28 (16, 40 and 48 lines alike or worse); 1-2 rows gain nothing
 * from DRAM and lost 10% in cache, so they run without. */
#define HLX_GEMM_S16_PF 32

/* Strip term wi's line HLX_GEMM_S16_PF lines on, once a line (every term f32, every second
 * bf16), from 4 rows up; past the end of W at the last terms (a prefetch does not fault). */
static inline __attribute__((always_inline)) void
hlx_gemm_s16_pf(const int MR, const int BF, const void *w, size_t wi, int k)
{
    if (MR >= 4 && (k & BF) == 0)
        _mm_prefetch((const char *)w + wi * (BF ? 2 : 4) + HLX_GEMM_S16_PF * 64, _MM_HINT_T0);
}

/* MR rows x the SS strips from strip s (columns 16 s .., y's past n1 not stored) over terms
 * [k0, k0 + kc), x of those terms in xt[k][MR]; load: y's sums so far, else 0. */
static inline __attribute__((always_inline)) void
hlx_gemm_s16_block(const int MR, const int SS, const int BF, int N, int K, const float *xt,
                   const void *w, float *y, int s, int n1, int k0, int kc, int load)
{
    __m512 a[24];
    __mmask16 mk[8];
    int q, m, k;

    for (q = 0; q < SS; q++) {
        const int c = n1 - (s + q) * 16;
        mk[q] = c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << c) - 1u);
        for (m = 0; m < MR; m++)
            a[q * MR + m] = load ? _mm512_maskz_loadu_ps(mk[q], y + (size_t)m * N + (s + q) * 16)
                                 : _mm512_setzero_ps();
    }
    /* Strip by strip, the MR broadcasts of x shared by the strips; where those, the
     * accumulators and a strip's terms exceed the 32 registers (8 rows: 24 + 8 + 1) the
     * compiler put an accumulator on the stack, a load and a store on every term (8 rows
     * in L2: 173 GFLOP/s), so there the strips' terms come first and the rows go one
     * broadcast at a time (207-215; the other row counts were as fast or faster the first
     * way). The same sums in the same order either way. */
    if (MR * SS + MR + 1 <= 32) {
        for (k = 0; k < kc; k++)
            for (q = 0; q < SS; q++) {
                const size_t wi = hlx_w_s16_at(K, k0 + k, (s + q) * 16);
                const __m512 wv = hlx_w16(w, BF, wi, 0xffff);
                hlx_gemm_s16_pf(MR, BF, w, wi, k);
                for (m = 0; m < MR; m++)
                    a[q * MR + m] = _mm512_fmadd_ps(_mm512_set1_ps(xt[k * MR + m]), wv,
                                                    a[q * MR + m]);
            }
    } else {
        for (k = 0; k < kc; k++) {
            __m512 wv[6];
            for (q = 0; q < SS; q++) {
                const size_t wi = hlx_w_s16_at(K, k0 + k, (s + q) * 16);
                hlx_gemm_s16_pf(MR, BF, w, wi, k);
                wv[q] = hlx_w16(w, BF, wi, 0xffff);
            }
            for (m = 0; m < MR; m++) {
                const __m512 xb = _mm512_set1_ps(xt[k * MR + m]);
                for (q = 0; q < SS; q++)
                    a[q * MR + m] = _mm512_fmadd_ps(xb, wv[q], a[q * MR + m]);
            }
        }
    }
    for (q = 0; q < SS; q++)
        for (m = 0; m < MR; m++)
            _mm512_mask_storeu_ps(y + (size_t)m * N + (s + q) * 16, mk[q], a[q * MR + m]);
}

/* MR (1..8) rows over columns [n0, n1) (n0 a multiple of 16): chunk by chunk of k, the
 * strips SS at a time, then one at a time. */
static inline __attribute__((always_inline)) void
hlx_gemm_s16_rows(const int MR, const int BF, int N, int K, const float *x, const void *w,
                  float *y, int accumulate, int n0, int n1)
{
    float xt[HLX_GEMM_S16_KC * 8] __attribute__((aligned(64)));
    const int SS = HLX_GEMM_S16_SS(MR), s1 = (n1 + 15) / 16;
    int k0, k, s, m;

    for (k0 = 0; k0 < K; k0 += HLX_GEMM_S16_KC) {
        const int kc = K - k0 < HLX_GEMM_S16_KC ? K - k0 : HLX_GEMM_S16_KC;
        const int load = accumulate || k0 > 0;
        for (k = 0; k < kc; k++) /* x[m][k0 + k] at xt[k][m]: MR x 16 KiB at most */
            for (m = 0; m < MR; m++)
                xt[k * MR + m] = x[(size_t)m * K + (size_t)(k0 + k)];
        for (s = n0 / 16; s + SS <= s1; s += SS)
            hlx_gemm_s16_block(MR, SS, BF, N, K, xt, w, y, s, n1, k0, kc, load);
        for (; s < s1; s++)
            hlx_gemm_s16_block(MR, 1, BF, N, K, xt, w, y, s, n1, k0, kc, load);
    }
}

/* A panel of strips (terms [ka, kz), columns [na, nz), na a multiple of 16) into p as
 * hlx_gemm_pack_avx512 lays out row-major W: [32-column strip][k][32], two strips of 16 a
 * row; a half past nz is zero. */
static void hlx_gemm_pack_s16_avx512(const void *w, int bf, int K, int ka, int kz, int na,
                                     int nz, float *p)
{
    int k, n;

    for (n = na; n < nz; n += 32) {
        float *d = p + (size_t)(n - na) / 32 * (size_t)(kz - ka) * 32;
        const size_t s0 = ((size_t)(n / 16) * (size_t)K) * 16;
        const int two = n + 16 < nz;
        for (k = ka; k < kz; k++, d += 32) {
            _mm512_store_ps(d, hlx_w16(w, bf, s0 + (size_t)k * 16, 0xffff));
            _mm512_store_ps(d + 16, two ? hlx_w16(w, bf, s0 + ((size_t)K + (size_t)k) * 16, 0xffff)
                                        : _mm512_setzero_ps());
        }
    }
}

/* Rows over strips in passes of 8, up to this many passes for bf16 and f32 weights, packed
 * panels beyond. Each pass reads W once more, so the count is where the passes' faster
 * arithmetic (the 8-row kernel's registers against the panels' 8 x 32 micro-kernel with its
 * remainder rows) stops paying for the reads (docs/kernels.md "Weights in strips"):
 * - bf16, 8192 x 8192 from memory, Zen 5: 9 rows 7.9-8.0 -> 14.2-14.3 GB/s, 16 rows
 *   6.8-6.9 -> 11.2-12.2; Intel (Emerald Rapids, 15 GB/s a core): 16 rows 5.3-6.0 ->
 *   8.8-10.2, 24 rows 4.7-5.3 -> 6.7-7.7, 32 rows 3.8-4.0 -> 4.5-5.3, 64 rows 2.2-2.3 ->
 *   2.5-2.6, 128 rows equal (in L2 208 -> 189 GFLOP/s: panels there);
 * - f32 reads twice the bytes a flop: on that Intel core 16 rows from memory 8.2-8.5 -> 7.3
 *   GB/s and 32 rows 6.3 -> 3.9-5.1, where Zen 5 gained (16 rows 8.3-10.1 -> 13.7-14.2):
 *   two passes, no more. */
#ifndef HLX_GEMM_S16_PASSES /* -D for a trial build (bench gemv at other counts) */
#define HLX_GEMM_S16_PASSES 2
#endif
#ifndef HLX_GEMM_S16_PASSES_BF16
#define HLX_GEMM_S16_PASSES_BF16 8
#endif

/* Up to 8 rows over strips (a decode batch): its own frame for the 128 KiB of x. */
static __attribute__((noinline)) void
hlx_gemm_s16_few_avx512(int M, int N, int K, const float *x, const void *w, int bf, float *y,
                        int accumulate, int n0, int n1)
{
    if (bf)
        HLX_GEMM_BY_ROWS(M, hlx_gemm_s16_rows, 1, N, K, x, w, y, accumulate, n0, n1);
    else
        HLX_GEMM_BY_ROWS(M, hlx_gemm_s16_rows, 0, N, K, x, w, y, accumulate, n0, n1);
}

/* More than 8 rows over packed panels, each from row-major W (the next panel's lines
 * fetched while this one computes) or from 16 strips (4 KiB runs of one strip each, which
 * the hardware prefetchers follow: no fetch). Its own frame for the 128 KiB panel. */
static __attribute__((noinline)) void
hlx_gemm_panels_avx512(int M, int N, int K, const float *x, const void *w, int bf, int s16,
                       float *y, int accumulate, int n0, int n1)
{
    float p[HLX_GEMM_PK * HLX_GEMM_PN] __attribute__((aligned(64)));
    const size_t es = bf ? 2 : 4;
    int pn, pk;

    for (pn = n0; pn < n1; pn += HLX_GEMM_PN) {
        const int nz = n1 - pn < HLX_GEMM_PN ? n1 : pn + HLX_GEMM_PN;
        for (pk = 0; pk < K; pk += HLX_GEMM_PK) {
            const int kz = K - pk < HLX_GEMM_PK ? K : pk + HLX_GEMM_PK;
            /* the panel after this one: the next k rows of these columns, or the first of
             * the next columns */
            const int qn = kz < K ? pn : nz, qk = kz < K ? kz : 0;
            const int qz = n1 - qn < HLX_GEMM_PN ? n1 : qn + HLX_GEMM_PN;
            hlx_gemm_next_t nx = {
                .w0 = (const char *)w + ((size_t)qk * N + (size_t)qn) * es,
                .row_bytes = (size_t)N * es,
                .lines_a_row = (int)(((size_t)(qz - qn) * es + 63) / 64),
                .lines = !s16 && qn < n1
                             ? (int)(((size_t)(qz - qn) * es + 63) / 64) *
                                   ((K - qk < HLX_GEMM_PK ? K : qk + HLX_GEMM_PK) - qk)
                             : 0,
            };
            if (s16)
                hlx_gemm_pack_s16_avx512(w, bf, K, pk, kz, pn, nz, p);
            else
                hlx_gemm_pack_avx512(w, bf, N, pk, kz, pn, nz, p);
            hlx_gemm_panel_avx512(N, K, x, p, y, M, pn, nz, pk, kz, accumulate || pk > 0, &nx);
        }
    }
}

/* Any M, W row-major or in strips (s16): up to 8 rows stream W once (a decode batch); more
 * go over strips in passes of 8 (up to HLX_GEMM_S16_PASSES[_BF16]) or packed panels. */
static void hlx_gemm_w_avx512(int M, int N, int K, const float *x, const void *w, int bf,
                              int s16, float *y, int accumulate, int n0, int n1)
{
    if (K == 0) { /* no terms: y is zero unless it accumulates */
        if (!accumulate)
            hlx_gemm_zero_cols(M, N, y, n0, n1);
        return;
    }
    if (s16 && M <= (bf ? HLX_GEMM_S16_PASSES_BF16 : HLX_GEMM_S16_PASSES) * 8) {
        /* a decode batch (bf16 up to 64 rows, also a prefill chunk of 32): the strips in
         * passes of 8 rows, W read once a pass */
        int m0;
        for (m0 = 0; m0 < M; m0 += 8)
            hlx_gemm_s16_few_avx512(M - m0 < 8 ? M - m0 : 8, N, K, x + (size_t)m0 * K, w, bf,
                                    y + (size_t)m0 * N, accumulate, n0, n1);
    } else if (M > 8)
        hlx_gemm_panels_avx512(M, N, K, x, w, bf, s16, y, accumulate, n0, n1);
    else
        hlx_gemm_few_avx512(M, N, K, x, w, bf, y, accumulate, n0, n1);
}

/* Which GEMM where (measured, docs/kernels.md): by hand for bf16 weights (BLAS has no fp32
 * x bf16 product) and f32 weights alike: W read once for up to 8 rows of x (one row: at
 * read bandwidth as OpenBLAS sgemv, whose rounding changed with the column range of a
 * thread split), packed panels beyond (faster than OpenBLAS sgemm at every row count
 * measured, 9 to 128). Every element summed in the order of k: a request rounds the same
 * alone, in a batch and in a prefill chunk, on any column range. */
static void hlx_gemm_cols_avx512(int M, int N, int K, const float *x, const void *w,
                                 hlx_dtype_t w_dtype, float *y, int accumulate, int n0, int n1)
{
    if (n1 <= n0)
        return;
    if ((w_dtype == hlx_w_s16_of(HLX_DTYPE_BF16) || w_dtype == hlx_w_s16_of(HLX_DTYPE_F32)) &&
        n0 % 16 == 0) {
        hlx_gemm_w_avx512(M, N, K, x, w, hlx_w_elem(w_dtype) == HLX_DTYPE_BF16, 1, y,
                          accumulate, n0, n1);
        return;
    }
    if (w_dtype != HLX_DTYPE_BF16 && w_dtype != HLX_DTYPE_F32) {
        hlx_kernels_t ref;
        hlx_kernels_reference(&ref);
        ref.gemm_cols(M, N, K, x, w, w_dtype, y, accumulate, n0, n1);
        return;
    }
    if (w_dtype == HLX_DTYPE_BF16) /* bf a constant in each: the widening is compiled in */
        hlx_gemm_w_avx512(M, N, K, x, w, 1, 0, y, accumulate, n0, n1);
    else
        hlx_gemm_w_avx512(M, N, K, x, w, 0, 0, y, accumulate, n0, n1);
}

static void hlx_gemm_avx512(int M, int N, int K, const float *x, const void *w,
                            hlx_dtype_t w_dtype, float *y, int accumulate)
{
    hlx_gemm_cols_avx512(M, N, K, x, w, w_dtype, y, accumulate, 0, N);
}

/* Hand-written f32-weight GEMV, kept for the benchmark's BLAS comparison. */
void hlx_kernels_gemm_f32_hand_avx512(int M, int N, int K, const float *x, const float *w,
                                      float *y, int accumulate)
{
    hlx_gemm_w_avx512(M, N, K, x, w, 0, 0, y, accumulate, 0, N);
}

/* 16 codes (as f32) of one row of a strip -> bf16((q - z) x s), rounded to nearest even
 * as the reference (wq.c; the values are finite), stored at d. */
static inline __attribute__((always_inline)) void
hlx_wq_row_avx512(__m512 q, __m512 z, __m512 sc, uint16_t *d)
{
    const __m512i u = _mm512_castps_si512(_mm512_mul_ps(_mm512_sub_ps(q, z), sc));
    const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
        _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1))));
    _mm256_storeu_si256((__m256i *)d, _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16)));
}

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
#define HLX_WQ_BF16_INSN 1
/* The same with AVX512_BF16's conversion (round to nearest even, like the integer form for
 * every normal value; it flushes subnormals, which a matrix without tiny scales never
 * produces: hlx_wq_t.tiny). */
static inline __attribute__((always_inline, target("avx512bf16"))) void
hlx_wq_row_bf16_avx512(__m512 q, __m512 z, __m512 sc, uint16_t *d)
{
    const __m512 v = _mm512_mul_ps(_mm512_sub_ps(q, z), sc);
    _mm256_storeu_si256((__m256i *)d, (__m256i)_mm512_cvtneps_pbh(v));
}
#endif

/* A 4-bit matrix's codes as f32 by nibble (its lut: the identity but for a mapped one), a
 * table that one permute reads (its index's low 4 bits: no mask for the low nibbles), where
 * a conversion would read the nibble itself. */
static inline __attribute__((always_inline)) __m512 hlx_wq_ftab_avx512(const hlx_wq_t *w)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)w->lut)));
}

/* Packed weights into bf16 strips: the reference's bits (wq.c) (checkasm compares them), a
 * row of a strip in one vector: 4-bit codes two rows to a 16-byte load. */
#define HLX_WQ_DEQUANT_AVX512(NAME, ROW, ATTR)                                                  \
static ATTR void NAME(const hlx_wq_t *w, int k0, int kc, int s0, int s1, uint16_t *dst)      \
{                                                                                              \
    const char *base = (const char *)w;                                                        \
    const size_t rows = w->bits == 4 ? ((size_t)w->K + 1) / 2 : (size_t)w->K;                  \
    const __m512 ft = hlx_wq_ftab_avx512(w);                                                   \
    int s;                                                                                     \
                                                                                               \
    for (s = s0; s < s1; s++) {                                                                \
        const uint8_t *code = (const uint8_t *)(base + w->codes) + (size_t)s * rows * 16;      \
        const float *sc = (const float *)(base + w->scales) + (size_t)s * (size_t)w->G * 16;   \
        const float *zc = (const float *)(base + w->zeros) + (size_t)s * (size_t)w->G * 16;    \
        uint16_t *d = dst + (size_t)(s - s0) * (size_t)kc * 16;                                \
        int k = k0, g, left;                                                                   \
        __m512 vz, vs;                                                                         \
        if (w->gidx) { /* act order: each row's group from the table */                        \
            const int32_t *tab = (const int32_t *)(base + w->gidx);                            \
            for (; k < k0 + kc; k++, d += 16) {                                                \
                const size_t gk = (size_t)tab[k] * 16;                                         \
                __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(code +      \
                    (size_t)(w->bits == 4 ? k >> 1 : k) * 16)));                               \
                ROW(w->bits == 4 ? _mm512_permutexvar_ps((k & 1) ? _mm512_srli_epi32(q, 4) : q, \
                                                         ft) : _mm512_cvtepi32_ps(q),          \
                    _mm512_loadu_ps(zc + gk), _mm512_loadu_ps(sc + gk), d);                    \
            }                                                                                  \
            continue;                                                                          \
        }                                                                                      \
        g = (k0 + w->kofs) / w->group;                                                         \
        left = w->group - (k0 + w->kofs) % w->group;                                           \
        vz = _mm512_loadu_ps(zc + (size_t)g * 16), vs = _mm512_loadu_ps(sc + (size_t)g * 16);  \
        while (k < k0 + kc) {                                                                  \
            /* rows up to the group's end or the chunk's */                                    \
            const int end = k0 + kc - k < left ? k0 + kc : k + left;                           \
            if (w->bits == 4) {                                                                \
                if (k & 1) { /* an odd row first: the high nibbles of its pair */              \
                    const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128(                    \
                        (const __m128i *)(code + (size_t)(k >> 1) * 16)));                     \
                    ROW(_mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), ft), vz, vs, d);        \
                    d += 16, k++;                                                              \
                }                                                                              \
                for (; k + 1 < end; k += 2, d += 32) {                                         \
                    const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128(                    \
                        (const __m128i *)(code + (size_t)(k >> 1) * 16)));                     \
                    ROW(_mm512_permutexvar_ps(q, ft), vz, vs, d);                              \
                    ROW(_mm512_permutexvar_ps(_mm512_srli_epi32(q, 4), ft), vz, vs, d + 16);   \
                }                                                                              \
                if (k < end) { /* an even row last: the low nibbles */                         \
                    const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128(                    \
                        (const __m128i *)(code + (size_t)(k >> 1) * 16)));                     \
                    ROW(_mm512_permutexvar_ps(q, ft), vz, vs, d);                              \
                    d += 16, k++;                                                              \
                }                                                                              \
            } else {                                                                           \
                for (; k < end; k++, d += 16)                                                  \
                    ROW(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(               \
                            (const __m128i *)(code + (size_t)k * 16)))), vz, vs, d);           \
            }                                                                                  \
            if (k < k0 + kc) { /* end was the group's: the next group */                       \
                g++;                                                                           \
                left = w->group;                                                               \
                vz = _mm512_loadu_ps(zc + (size_t)g * 16);                                     \
                vs = _mm512_loadu_ps(sc + (size_t)g * 16);                                     \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
}
HLX_WQ_DEQUANT_AVX512(hlx_wq_dequant_int_avx512, hlx_wq_row_avx512, )
#ifdef HLX_WQ_BF16_INSN
HLX_WQ_DEQUANT_AVX512(hlx_wq_dequant_bf16_avx512, hlx_wq_row_bf16_avx512,
                      __attribute__((target("avx512bf16"))))
#endif

/* The gemm over a packed matrix for up to 4 rows of x, the weights dequantized in registers
 * (no scratch): per row of a strip, 16 codes -> bf16((q - z) x s) widened back to f32 ->
 * MR FMAs, every element summed in the order of k from y (or 0) as the strip kernels sum
 * it, so the bits are theirs over the dequantized matrix. SS strips at once (independent
 * FMA chains for few rows). rne: the round to bf16 as an f32. */
typedef __m512 (*hlx_wq_rne_fn)(__m512 v);

static inline __attribute__((always_inline)) __m512 hlx_wq_rne_int(__m512 v)
{
    const __m512i u = _mm512_castps_si512(v);
    const __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff),
        _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1))));
    return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32((int)0xffff0000u)));
}

#ifdef HLX_WQ_BF16_INSN
static inline __attribute__((always_inline, target("avx512bf16"))) __m512
hlx_wq_rne_bf16(__m512 v)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(v)), 16));
}
#endif

/* A matrix whose products are all bf16 values (hlx_wq_t.inexact 0: MXFP4's) rounds
 * nothing: the same bits without the 3-4 operations a weight. */
static inline __attribute__((always_inline)) __m512 hlx_wq_rne_none(__m512 v)
{
    return v;
}

/* The FMAs of row k of the SS strips, their weights in v[q], into the MR x SS sums. */
static inline __attribute__((always_inline)) void
hlx_wq_fused_fma(const int MR, const int SS, const float *x, int K, int k, const __m512 *v,
                 __m512 *a)
{
    int q, m;

    for (m = 0; m < MR; m++) {
        const __m512 xb = _mm512_set1_ps(x[(size_t)m * K + k]);
        for (q = 0; q < SS; q++)
            a[q * MR + m] = _mm512_fmadd_ps(xb, v[q], a[q * MR + m]);
    }
}

static inline __attribute__((always_inline)) void
hlx_wq_fused_block(const int MR, const int SS, const hlx_wq_t *w, int N, int K, const float *x,
                   float *y, int s, int n1, int load, hlx_wq_rne_fn rne)
{
    const char *base = (const char *)w;
    const size_t rows = w->bits == 4 ? ((size_t)w->K + 1) / 2 : (size_t)w->K;
    const __m512 ft = hlx_wq_ftab_avx512(w); /* 4 bits: the codes by nibble */
    const uint8_t *cp[4];
    /* strip s's zero points and scales of the current group (strip s + q: q G x 16 on) */
    const float *zp = (const float *)(base + w->zeros) + (size_t)s * (size_t)w->G * 16;
    const float *sp = (const float *)(base + w->scales) + (size_t)s * (size_t)w->G * 16;
    __m512 a[8], vz[4], vs[4], v0[4], v1[4];
    __mmask16 mk[4];
    int q, m, k = 0, end;

    for (q = 0; q < SS; q++) {
        const int c = n1 - (s + q) * 16;
        mk[q] = c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << c) - 1u);
        cp[q] = (const uint8_t *)(base + w->codes) + (size_t)(s + q) * rows * 16;
        v1[q] = _mm512_setzero_ps(); /* read only where two rows were widened */
        for (m = 0; m < MR; m++)
            a[q * MR + m] = load ? _mm512_maskz_loadu_ps(mk[q], y + (size_t)m * N + (s + q) * 16)
                                 : _mm512_setzero_ps();
    }
    if (w->gidx) { /* act order: each row's zero points and scales from its group's; at 4
                      bits a pair of rows from one load */
        const int32_t *tab = (const int32_t *)(base + w->gidx);
        const size_t gs = (size_t)w->G * 16;
        for (; k < K; k += 1 + (w->bits == 4 && k + 1 < K)) {
            const int two = w->bits == 4 && k + 1 < K;
            const size_t g0 = (size_t)tab[k] * 16, g1 = two ? (size_t)tab[k + 1] * 16 : g0;
            const size_t row = w->bits == 4 ? (size_t)(k >> 1) : (size_t)k;
            for (q = 0; q < SS; q++) {
                const __m512i c = _mm512_cvtepu8_epi32(
                    _mm_loadu_si128((const __m128i *)(cp[q] + row * 16)));
                v0[q] = rne(_mm512_mul_ps(_mm512_sub_ps(
                        w->bits == 4 ? _mm512_permutexvar_ps(c, ft) : _mm512_cvtepi32_ps(c),
                        _mm512_loadu_ps(zp + (size_t)q * gs + g0)),
                    _mm512_loadu_ps(sp + (size_t)q * gs + g0)));
                if (two)
                    v1[q] = rne(_mm512_mul_ps(_mm512_sub_ps(_mm512_permutexvar_ps(
                            _mm512_srli_epi32(c, 4), ft), _mm512_loadu_ps(zp + (size_t)q * gs + g1)),
                        _mm512_loadu_ps(sp + (size_t)q * gs + g1)));
            }
            hlx_wq_fused_fma(MR, SS, x, K, k, v0, a);
            if (two)
                hlx_wq_fused_fma(MR, SS, x, K, k + 1, v1, a);
        }
    }
    /* group by group: its zero points and scales in registers */
    for (end = 0; k < K; zp += 16, sp += 16) {
        end = end + w->group - (end == 0 ? w->kofs : 0);
        end = end < K ? end : K;
        for (q = 0; q < SS; q++) {
            vz[q] = _mm512_loadu_ps(zp + (size_t)q * (size_t)w->G * 16);
            vs[q] = _mm512_loadu_ps(sp + (size_t)q * (size_t)w->G * 16);
        }
        if (w->bits == 8) {
            for (; k < end; k++) {
                for (q = 0; q < SS; q++)
                    v0[q] = rne(_mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(
                        _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(cp[q] +
                            (size_t)k * 16)))), vz[q]), vs[q]));
                hlx_wq_fused_fma(MR, SS, x, K, k, v0, a);
            }
            continue;
        }
        /* 4 bits: two rows to a 16-byte load, the odd one in the high nibbles */
        while (k < end) {
            const int two = !(k & 1) && k + 1 < end;
            for (q = 0; q < SS; q++) {
                const __m512i c = _mm512_cvtepu8_epi32(
                    _mm_loadu_si128((const __m128i *)(cp[q] + (size_t)(k >> 1) * 16)));
                v0[q] = rne(_mm512_mul_ps(_mm512_sub_ps(_mm512_permutexvar_ps(
                    (k & 1) ? _mm512_srli_epi32(c, 4) : c, ft), vz[q]), vs[q]));
                if (two)
                    v1[q] = rne(_mm512_mul_ps(_mm512_sub_ps(_mm512_permutexvar_ps(
                        _mm512_srli_epi32(c, 4), ft), vz[q]), vs[q]));
            }
            hlx_wq_fused_fma(MR, SS, x, K, k, v0, a);
            if (two)
                hlx_wq_fused_fma(MR, SS, x, K, k + 1, v1, a);
            k += 1 + two;
        }
    }
    for (q = 0; q < SS; q++)
        for (m = 0; m < MR; m++)
            _mm512_mask_storeu_ps(y + (size_t)m * N + (s + q) * 16, mk[q], a[q * MR + m]);
}

/* Strips walked at once for MR rows: 4 for 1-2 rows, 2 for 3-4. */
#define HLX_WQ_SS(MR) ((MR) <= 2 ? 4 : 2)

/* (from 5 rows the scratch path measured as fast: wq.c, HLX_GEMM_BY_ROWS4 below) */
static inline __attribute__((always_inline)) void
hlx_wq_fused_rows(const int MR, const hlx_wq_t *w, int N, int K, const float *x, float *y,
                  int accumulate, int n0, int n1, hlx_wq_rne_fn rne)
{
    const int SS = HLX_WQ_SS(MR), s1 = (n1 + 15) / 16;
    int s;

    for (s = n0 / 16; s + SS <= s1; s += SS)
        hlx_wq_fused_block(MR, SS, w, N, K, x, y, s, n1, accumulate, rne);
    for (; s < s1; s++)
        hlx_wq_fused_block(MR, 1, w, N, K, x, y, s, n1, accumulate, rne);
}

static void hlx_wq_fused_int_avx512(int M, int N, int K, const float *x, const hlx_wq_t *w,
                                    float *y, int accumulate, int n0, int n1)
{
    HLX_GEMM_BY_ROWS4(M, hlx_wq_fused_rows, w, N, K, x, y, accumulate, n0, n1, hlx_wq_rne_int);
}

static void hlx_wq_fused_exact_avx512(int M, int N, int K, const float *x, const hlx_wq_t *w,
                                      float *y, int accumulate, int n0, int n1)
{
    HLX_GEMM_BY_ROWS4(M, hlx_wq_fused_rows, w, N, K, x, y, accumulate, n0, n1, hlx_wq_rne_none);
}

#ifdef HLX_WQ_BF16_INSN
static __attribute__((target("avx512bf16"))) void
hlx_wq_fused_bf16_avx512(int M, int N, int K, const float *x, const hlx_wq_t *w, float *y,
                         int accumulate, int n0, int n1)
{
    HLX_GEMM_BY_ROWS4(M, hlx_wq_fused_rows, w, N, K, x, y, accumulate, n0, n1, hlx_wq_rne_bf16);
}
#endif

static int hlx_wq_bf16_cpu; /* AVX512_BF16 here: set once by hlx_kernels_avx512 */

static void hlx_wq_dequant_avx512(const hlx_wq_t *w, int k0, int kc, int s0, int s1, uint16_t *dst)
{
#ifdef HLX_WQ_BF16_INSN
    if (hlx_wq_bf16_cpu && !w->tiny) {
        hlx_wq_dequant_bf16_avx512(w, k0, kc, s0, s1, dst);
        return;
    }
#endif
    hlx_wq_dequant_int_avx512(w, k0, kc, s0, s1, dst);
}

/* 1 to 4 rows over a packed matrix, dequantized in registers (K > 0, n0 on a strip). */
static void hlx_wq_gemm_avx512(int M, int N, int K, const float *x, const hlx_wq_t *w, float *y,
                               int accumulate, int n0, int n1)
{
    int m;

    if (!w->inexact) { /* up to wq_rows_exact in passes of 4 */
        for (m = 0; m < M; m += 4)
            hlx_wq_fused_exact_avx512(M - m < 4 ? M - m : 4, N, K, x + (size_t)m * K, w,
                                      y + (size_t)m * N, accumulate, n0, n1);
        return;
    }
#ifdef HLX_WQ_BF16_INSN
    if (hlx_wq_bf16_cpu && !w->tiny) {
        hlx_wq_fused_bf16_avx512(M, N, K, x, w, y, accumulate, n0, n1);
        return;
    }
#endif
    hlx_wq_fused_int_avx512(M, N, K, x, w, y, accumulate, n0, n1);
}

void hlx_kernels_avx512(hlx_kernels_t *k)
{
    hlx_kernels_reference(k);
    k->name      = "avx512";
    k->kv_layout = hlx_kb_layout;
    k->gemm_pass_rows[0] = 8 * HLX_GEMM_S16_PASSES;
    k->gemm_pass_rows[1] = 8 * HLX_GEMM_S16_PASSES_BF16;
    __builtin_cpu_init();
    hlx_kb_fp8t = hlx_kernels_fp8_vbmi();
    hlx_kv_prefetch_load();
    k->attn      = hlx_attn_kb_avx512;
    k->attn_covers = hlx_kb_covers;
    k->merge   = hlx_merge_avx512;
    k->rmsnorm = hlx_rmsnorm_avx512;
    k->swiglu  = hlx_swiglu_avx512;
    k->argmax  = hlx_argmax_avx512;
    k->gemm    = hlx_gemm_avx512;
    k->gemm_cols = hlx_gemm_cols_avx512;
    k->wq_dequant = hlx_wq_dequant_avx512;
    k->wq_gemm = hlx_wq_gemm_avx512;
    k->wq_rows = 4;
    k->wq_rows_exact = 8; /* passes of 4: 5760 x 2880 at 8 rows about 1.8 ms, 2.5 by scratch */
    k->wq_fast = 1;
    hlx_wq_bf16_cpu = __builtin_cpu_supports("avx512bf16");
    k->w_s16   = 1;
}

/* Machine probes for the roofline (see probe.c): n rounds of 16 independent FMA chains
 * (enough to cover FMA latency x 2 ports), and a streaming read sum. */
double hlx_probe_fma_avx512(uint64_t n)
{
    __m512 a[16], m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    uint64_t i;
    int j;
    float out[16];

    for (j = 0; j < 16; j++)
        a[j] = _mm512_set1_ps((float)j);
    for (i = 0; i < n; i++)
        for (j = 0; j < 16; j++)
            a[j] = _mm512_fmadd_ps(a[j], m, c);
    for (j = 1; j < 16; j++)
        a[0] = _mm512_add_ps(a[0], a[j]);
    _mm512_storeu_ps(out, a[0]);
    return (double)out[0];
}

/* Streams n floats issuing k FMAs of 16 lanes on every 64-byte line as it arrives: the core
 * reading memory and computing at once, at a kernel's flops per byte (probe.c). piece 0:
 * one stream; else the two halves of the buffer in turn, piece floats of each (the keys'
 * and the values' blocks of an attention call). k in blocks of 16 on 16 accumulators, the
 * rest (8, 4, 2, 1) on disjoint ones of the same 16: at most two dependent FMAs per
 * accumulator and line, within the FMA latency whenever the line's k FMAs take longer to
 * issue. */
double hlx_probe_stream_fma_avx512(const float *p, size_t n, int k, size_t piece)
{
    __m512 a[16], m = _mm512_set1_ps(0.999999f);
    const int k16 = k / 16, r = k % 16, streams = piece ? 2 : 1;
    const size_t per = n / (size_t)streams / 16 * 16, step = piece ? piece : per;
    size_t c, i;
    int j, b, s;

    for (j = 0; j < 16; j++)
        a[j] = _mm512_setzero_ps();
    for (c = 0; c < per; c += step)
        for (s = 0; s < streams; s++) {
            const float *q = p + (size_t)s * per + c;
            const size_t len = per - c < step ? per - c : step;
            for (i = 0; i + 16 <= len; i += 16) {
                __m512 x = _mm512_load_ps(q + i);
                for (b = 0; b < k16; b++)
                    for (j = 0; j < 16; j++)
                        a[j] = _mm512_fmadd_ps(x, m, a[j]);
                if (r & 8)
                    for (j = 0; j < 8; j++)
                        a[j] = _mm512_fmadd_ps(x, m, a[j]);
                if (r & 4)
                    for (j = 8; j < 12; j++)
                        a[j] = _mm512_fmadd_ps(x, m, a[j]);
                if (r & 2)
                    for (j = 12; j < 14; j++)
                        a[j] = _mm512_fmadd_ps(x, m, a[j]);
                if (r & 1)
                    a[14] = _mm512_fmadd_ps(x, m, a[14]);
            }
        }
    for (j = 1; j < 16; j++)
        a[0] = _mm512_add_ps(a[0], a[j]);
    return (double)_mm512_reduce_add_ps(a[0]);
}

double hlx_probe_read_avx512(const float *p, size_t n)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t i;

    for (i = 0; i + 64 <= n; i += 64) {
        a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
        a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
    }
    return (double)_mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}
