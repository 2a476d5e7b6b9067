/* Element conversions of checkpoint reads: the portable C set, and an AVX2 one built with
 * target attributes (no special flags: the file builds for any x86-64, and the AVX2 code
 * is entered only after __builtin_cpu_supports says the CPU has it). Both give the same
 * bits: bf16 rounding as hlx_f32_to_bf16 (nearest even, NaN kept NaN and quieted), the
 * packed integers' (q - z) x s as one f32 product. Not FMA: nothing here is a product
 * added to something, and without it the compiler cannot fuse one by contraction. */
#include "ckpt_cvt.h"

#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HLX_CK_X86 1
#include <immintrin.h>
#endif

/* ---- portable ------------------------------------------------------------------------ */

static void hlx_ck_convert_c(float *out, const uint8_t *p, hlx_st_dtype_t t, int64_t n,
                             const float *lut)
{
    int64_t j;

    switch (t) {
    case HLX_ST_F8_E4M3:
        for (j = 0; j < n; j++)
            out[j] = lut[p[j]];
        break;
    case HLX_ST_F32:
        memcpy(out, p, (size_t)n * 4);
        break;
    case HLX_ST_BF16:
        /* through an aligned chunk: the source may sit at any byte offset */
        for (j = 0; j < n; j += 256) {
            uint16_t h[256];
            uint32_t *o = (uint32_t *)(out + j);
            int64_t k, m = n - j < 256 ? n - j : 256;
            memcpy(h, p + 2 * j, (size_t)m * 2);
            for (k = 0; k < m; k++)
                o[k] = (uint32_t)h[k] << 16;
        }
        break;
    default:
        for (j = 0; j < n; j++)
            out[j] = hlx_st_load(p, t, (size_t)j);
        break;
    }
}

static void hlx_ck_scale_c(float *v, int64_t n, float s)
{
    int64_t j;

    for (j = 0; j < n; j++)
        v[j] *= s;
}

static void hlx_ck_store_c(void *dst, hlx_dtype_t dt, size_t at, int64_t ld, const float *v,
                           int64_t vs, int64_t rows, int64_t n)
{
    int64_t r, j;

    for (r = 0; r < rows; r++, at += (size_t)ld, v += vs) {
        if (dt == HLX_DTYPE_F32) {
            memcpy((float *)dst + at, v, (size_t)n * 4);
            continue;
        }
        for (j = 0; j < n; j++)
            ((uint16_t *)dst)[at + (size_t)j] = hlx_f32_to_bf16(v[j]);
    }
}

static void hlx_ck_tstore_c(void *dst, hlx_dtype_t dt, size_t at, int64_t ld,
                            const float *tile, int64_t tnc, int64_t th, int64_t nc)
{
    int64_t j, k;

    if (dt == HLX_DTYPE_F32) {
        float *d = (float *)dst + at;
        for (j = 0; j < nc; j++)
            for (k = 0; k < th; k++)
                d[j * ld + k] = tile[k * tnc + j];
    } else {
        uint16_t *d = (uint16_t *)dst + at;
        for (j = 0; j < nc; j++)
            for (k = 0; k < th; k++)
                d[j * ld + k] = hlx_f32_to_bf16(tile[k * tnc + j]);
    }
}

/* Through a 32-row x 256-column copy, its rows padded off a power of two: a weight's rows
 * often lie a power of two apart, and a column walk down them straight from the mapping hit
 * one L1 set (2.7 ns an element of the loader's blocks, 1.9 through an f32 tile as before,
 * 1.3-1.5 through this copy). */
static void hlx_ck_bf16_t_c(uint16_t *dst, int64_t ld, const uint8_t *src, int64_t sstride,
                            int64_t nr, int64_t nc)
{
    enum { W = 256, P = W + 8 };
    uint16_t buf[HLX_CK_TILE * P];
    int64_t i, j, k, c, th, w;

    for (i = 0; i < nr; i += HLX_CK_TILE) {
        th = nr - i < HLX_CK_TILE ? nr - i : HLX_CK_TILE;
        for (j = 0; j < nc; j += W) {
            w = nc - j < W ? nc - j : W;
            for (k = 0; k < th; k++)
                memcpy(buf + k * P, src + (size_t)((i + k) * sstride + j) * 2, (size_t)w * 2);
            for (c = 0; c < w; c++)
                for (k = 0; k < th; k++) {
                    const uint16_t h = buf[k * P + c];
                    dst[(j + c) * ld + i + k] = hlx_f32_to_bf16(hlx_bf16_to_f32(h));
                }
        }
    }
}

/* Rows [k0, th) of hlx_ck_cvt_t.gptq. */
static void hlx_ck_gptq_part(float *ct, int64_t cs, const uint8_t *pw, uint64_t w, int64_t k0,
                             int64_t th, int bits, int f, int m, const int32_t *z,
                             const float *s, int value)
{
    const uint32_t mask = (1u << bits) - 1u;
    int64_t k;
    int e;

    for (k = k0; k < th; k++) {
        uint32_t x = hlx_ck_u32(pw, w + (uint64_t)k) >> (bits * f);
        for (e = 0; e < m; e++, x >>= bits)
            ct[e * cs + k] = value ? (float)((int32_t)(x & mask) - z[k]) * s[k]
                                   : (float)(x & mask);
    }
}

static void hlx_ck_gptq_c(float *ct, int64_t cs, const uint8_t *pw, uint64_t w, int64_t th,
                          int bits, int f, int m, const int32_t *z, const float *s, int value)
{
    hlx_ck_gptq_part(ct, cs, pw, w, 0, th, bits, f, m, z, s, value);
}

/* Rows [k0, th) of hlx_ck_cvt_t.awq, column c. */
static void hlx_ck_awq_part(float *ct, const uint8_t *pw, uint64_t wrow, int64_t o0,
                            int64_t k0, int64_t th, const int32_t *z, const float *s,
                            int value)
{
    int64_t k;

    for (k = k0; k < th; k++) {
        const int64_t o = o0 + k;
        const int32_t q = (int32_t)((hlx_ck_u32(pw, wrow + (uint64_t)(o >> 3)) >>
                                     (4 * hlx_awq_field[o & 7])) & 15u);
        ct[k] = value ? (float)(q - z[k]) * s[k] : (float)q;
    }
}

static void hlx_ck_awq_c(float *ct, int64_t cs, const uint8_t *pw, int64_t wr, int64_t wcols,
                         int64_t n, int64_t o0, int64_t th, const int32_t *z, const float *s,
                         int value)
{
    int64_t c;

    for (c = 0; c < n; c++)
        hlx_ck_awq_part(ct + c * cs, pw, (uint64_t)((wr + c) * wcols), o0, 0, th, z, s, value);
}

static const hlx_ck_cvt_t hlx_ck_cvt_c = {
    "portable", hlx_ck_convert_c, hlx_ck_scale_c, hlx_ck_store_c, hlx_ck_tstore_c,
    hlx_ck_bf16_t_c, hlx_ck_gptq_c, hlx_ck_awq_c,
};

const hlx_ck_cvt_t *hlx_ck_cvt_portable(void)
{
    return &hlx_ck_cvt_c;
}

/* ---- AVX2 ---------------------------------------------------------------------------- */

#ifdef HLX_CK_X86
#define HLX_CK_AVX2 __attribute__((target("avx2")))
#define HLX_CK_AVX2_INL static inline __attribute__((target("avx2"), always_inline))

/* hlx_f32_to_bf16 of 8 floats, in the low 16 bits of each 32-bit lane. */
HLX_CK_AVX2_INL __m256i hlx_ck_rnd8(__m256 v)
{
    const __m256i u = _mm256_castps_si256(v), hi = _mm256_srli_epi32(u, 16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000));
    const __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff),
                                           _mm256_and_si256(hi, _mm256_set1_epi32(1))));

    return _mm256_blendv_epi8(_mm256_srli_epi32(r, 16),
                              _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
}

/* a's 8 floats then b's, as 16 bf16 in order. */
HLX_CK_AVX2_INL __m256i hlx_ck_rnd16(__m256 a, __m256 b)
{
    /* packus interleaves the lanes (a0-3 b0-3 | a4-7 b4-7); values <= 0xffff: no clamping */
    return _mm256_permute4x64_epi64(_mm256_packus_epi32(hlx_ck_rnd8(a), hlx_ck_rnd8(b)), 0xd8);
}

/* hlx_f32_to_bf16(hlx_bf16_to_f32(h)) of 16 bf16: NaNs quieted, the rest as they are. */
HLX_CK_AVX2_INL __m256i hlx_ck_quiet16(__m256i a)
{
    const __m256i nan = _mm256_cmpgt_epi16(_mm256_and_si256(a, _mm256_set1_epi16(0x7fff)),
                                           _mm256_set1_epi16(0x7f80));
    return _mm256_or_si256(a, _mm256_and_si256(nan, _mm256_set1_epi16(0x40)));
}

/* Two 8 x 8 transposes of 16-bit elements, one per 128-bit lane: a[r]'s lanes hold row r of
 * each block, then a[c]'s column c. */
HLX_CK_AVX2_INL void hlx_ck_t16(__m256i a[8])
{
    const __m256i t0 = _mm256_unpacklo_epi16(a[0], a[1]), t1 = _mm256_unpackhi_epi16(a[0], a[1]);
    const __m256i t2 = _mm256_unpacklo_epi16(a[2], a[3]), t3 = _mm256_unpackhi_epi16(a[2], a[3]);
    const __m256i t4 = _mm256_unpacklo_epi16(a[4], a[5]), t5 = _mm256_unpackhi_epi16(a[4], a[5]);
    const __m256i t6 = _mm256_unpacklo_epi16(a[6], a[7]), t7 = _mm256_unpackhi_epi16(a[6], a[7]);
    const __m256i u0 = _mm256_unpacklo_epi32(t0, t2), u1 = _mm256_unpackhi_epi32(t0, t2);
    const __m256i u2 = _mm256_unpacklo_epi32(t1, t3), u3 = _mm256_unpackhi_epi32(t1, t3);
    const __m256i u4 = _mm256_unpacklo_epi32(t4, t6), u5 = _mm256_unpackhi_epi32(t4, t6);
    const __m256i u6 = _mm256_unpacklo_epi32(t5, t7), u7 = _mm256_unpackhi_epi32(t5, t7);

    a[0] = _mm256_unpacklo_epi64(u0, u4);
    a[1] = _mm256_unpackhi_epi64(u0, u4);
    a[2] = _mm256_unpacklo_epi64(u1, u5);
    a[3] = _mm256_unpackhi_epi64(u1, u5);
    a[4] = _mm256_unpacklo_epi64(u2, u6);
    a[5] = _mm256_unpackhi_epi64(u2, u6);
    a[6] = _mm256_unpacklo_epi64(u3, u7);
    a[7] = _mm256_unpackhi_epi64(u3, u7);
}

/* An 8 x 8 transpose of floats: r[k] row k in, column k out. */
HLX_CK_AVX2_INL void hlx_ck_t32(__m256 r[8])
{
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);

    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* hlx_f16_to_f32 of 8 halves, lane by lane: the normal, the infinite or NaN and the
 * subnormal (m x 2^-24, exact in f32) results blended by the exponent. */
HLX_CK_AVX2_INL __m256 hlx_ck_f16x8(__m128i h8)
{
    const __m256i h = _mm256_cvtepu16_epi32(h8);
    const __m256i s = _mm256_slli_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x8000)), 16);
    const __m256i e = _mm256_and_si256(_mm256_srli_epi32(h, 10), _mm256_set1_epi32(31));
    const __m256i m = _mm256_and_si256(h, _mm256_set1_epi32(0x3ff));
    const __m256i m13 = _mm256_slli_epi32(m, 13);
    const __m256i ebits = _mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(112)), 23);
    const __m256i norm = _mm256_or_si256(s, _mm256_or_si256(ebits, m13));
    const __m256i inf = _mm256_or_si256(s, _mm256_or_si256(_mm256_set1_epi32(0x7f800000), m13));
    const __m256 msub = _mm256_mul_ps(_mm256_cvtepi32_ps(m), _mm256_set1_ps(0x1p-24f));
    const __m256i sub = _mm256_or_si256(s, _mm256_castps_si256(msub));
    const __m256i r = _mm256_blendv_epi8(norm, inf, _mm256_cmpeq_epi32(e, _mm256_set1_epi32(31)));

    return _mm256_castsi256_ps(
        _mm256_blendv_epi8(r, sub, _mm256_cmpeq_epi32(e, _mm256_setzero_si256())));
}

/* 8 elements at a time (fp8 by a gather from lut, I8 widened), F32 and F64 as the portable
 * set converts them. */
static HLX_CK_AVX2 void hlx_ck_convert_avx2(float *out, const uint8_t *p, hlx_st_dtype_t t,
                                            int64_t n, const float *lut)
{
    int64_t j = 0;

    switch (t) {
    case HLX_ST_BF16:
        for (; j + 8 <= n; j += 8)
            _mm256_storeu_si256((__m256i *)(out + j),
                                _mm256_slli_epi32(_mm256_cvtepu16_epi32(
                                    _mm_loadu_si128((const __m128i *)(p + 2 * j))), 16));
        break;
    case HLX_ST_F16:
        for (; j + 8 <= n; j += 8)
            _mm256_storeu_ps(out + j, hlx_ck_f16x8(_mm_loadu_si128((const __m128i *)(p + 2 * j))));
        break;
    case HLX_ST_F8_E4M3:
        for (; j + 8 <= n; j += 8)
            _mm256_storeu_ps(out + j, _mm256_i32gather_ps(lut, _mm256_cvtepu8_epi32(
                _mm_loadl_epi64((const __m128i *)(p + j))), 4));
        break;
    case HLX_ST_I8:
        for (; j + 8 <= n; j += 8)
            _mm256_storeu_ps(out + j, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                _mm_loadl_epi64((const __m128i *)(p + j)))));
        break;
    default:
        break;
    }
    hlx_ck_convert_c(out + j, p + (size_t)j * hlx_st_dtype_size(t), t, n - j, lut);
}

static HLX_CK_AVX2 void hlx_ck_scale_avx2(float *v, int64_t n, float s)
{
    const __m256 sv = _mm256_set1_ps(s);
    int64_t j;

    for (j = 0; j + 8 <= n; j += 8)
        _mm256_storeu_ps(v + j, _mm256_mul_ps(_mm256_loadu_ps(v + j), sv));
    for (; j < n; j++)
        v[j] *= s;
}

static HLX_CK_AVX2 void hlx_ck_store_avx2(void *dst, hlx_dtype_t dt, size_t at, int64_t ld,
                                          const float *v, int64_t vs, int64_t rows, int64_t n)
{
    int64_t r, j;

    if (dt == HLX_DTYPE_F32) {
        hlx_ck_store_c(dst, dt, at, ld, v, vs, rows, n);
        return;
    }
    for (r = 0; r < rows; r++, at += (size_t)ld, v += vs) {
        uint16_t *d = (uint16_t *)dst + at;
        for (j = 0; j + 16 <= n; j += 16)
            _mm256_storeu_si256((__m256i *)(d + j),
                                hlx_ck_rnd16(_mm256_loadu_ps(v + j), _mm256_loadu_ps(v + j + 8)));
        for (; j < n; j++)
            d[j] = hlx_f32_to_bf16(v[j]);
    }
}

/* Rows [k0, th) x columns [j0, nc) of tstore, element by element (the edges). */
static void hlx_ck_tstore_part(void *dst, hlx_dtype_t dt, size_t at, int64_t ld,
                               const float *tile, int64_t tnc, int64_t k0, int64_t th,
                               int64_t j0, int64_t nc)
{
    if (k0 < th && j0 < nc)
        hlx_ck_tstore_c(dst, dt, at + (size_t)(j0 * ld + k0), ld, tile + k0 * tnc + j0, tnc,
                        th - k0, nc - j0);
}

/* 8 rows x 8 columns (f32 out) or 16 x 8 (bf16 out) at a time: each column's run of the
 * rows transposed in registers and stored as one vector (the scalar loop stored an element
 * at a time and rounded each to bf16 apart); all the tile's rows for 8 columns before the
 * next 8, so that a row of dst is written whole while in L1. */
static HLX_CK_AVX2 void hlx_ck_tstore_avx2(void *dst, hlx_dtype_t dt, size_t at, int64_t ld,
                                           const float *tile, int64_t tnc, int64_t th,
                                           int64_t nc)
{
    const int64_t rb = dt == HLX_DTYPE_F32 ? 8 : 16, nc8 = nc & ~(int64_t)7;
    const int64_t thb = th - th % rb; /* rows in whole blocks */
    int64_t j, k;
    int c;

    for (j = 0; j < nc8; j += 8) {
        for (k = 0; k < thb; k += rb) {
            const float *t = tile + k * tnc;
            if (dt == HLX_DTYPE_F32) {
                float *d = (float *)dst + at + (size_t)(j * ld + k);
                __m256 r[8];
                for (c = 0; c < 8; c++)
                    r[c] = _mm256_loadu_ps(t + c * tnc + j);
                hlx_ck_t32(r);
                for (c = 0; c < 8; c++)
                    _mm256_storeu_ps(d + c * ld, r[c]);
            } else {
                uint16_t *d = (uint16_t *)dst + at + (size_t)(j * ld + k);
                __m256i a[8];
                for (c = 0; c < 8; c++) /* row c in the low lane, row 8 + c in the high */
                    a[c] = hlx_ck_rnd16(_mm256_loadu_ps(t + c * tnc + j),
                                        _mm256_loadu_ps(t + (8 + c) * tnc + j));
                hlx_ck_t16(a);
                for (c = 0; c < 8; c++)
                    _mm256_storeu_si256((__m256i *)(d + c * ld), a[c]);
            }
        }
    }
    hlx_ck_tstore_part(dst, dt, at, ld, tile, tnc, 0, thb, nc8, nc);
    hlx_ck_tstore_part(dst, dt, at, ld, tile, tnc, thb, th, 0, nc);
}

/* Rows [i0, i0 + nr) x columns [j0, j0 + nc) of hlx_ck_cvt_t.bf16_t, element by element:
 * the AVX2 set's edges. */
static void hlx_ck_bf16_t_part(uint16_t *dst, int64_t ld, const uint8_t *src, int64_t sstride,
                               int64_t i0, int64_t nr, int64_t j0, int64_t nc)
{
    int64_t i, j;

    for (j = j0; j < j0 + nc; j++)
        for (i = i0; i < i0 + nr; i++)
            dst[j * ld + i] = hlx_f32_to_bf16(hlx_st_load(src, HLX_ST_BF16,
                                                          (size_t)(i * sstride + j)));
}

/* 16 rows x 8 columns at a time, straight from the checkpoint's bytes: two 8 x 8 blocks of
 * bf16 transposed in one register set, each column's 16 elements one store. Columns in
 * bands of 128 (four cache lines of a source row), all the rows of a band before the next:
 * the band's source lines are used whole, its 128 rows of dst written whole (a walk over
 * every column for 16 rows touched a page of dst per store when ld is a page or more: 0.65
 * ns an element of a 4096 x 4096 transpose, 0.47 in bands of 128, 0.65 in bands of 64; the
 * loader's blocks, 256 to 336 rows into a 2 MiB scratch, run at memcpy speed either way). */
static HLX_CK_AVX2 void hlx_ck_bf16_t_avx2(uint16_t *dst, int64_t ld, const uint8_t *src,
                                           int64_t sstride, int64_t nr, int64_t nc)
{
    const int64_t nc8 = nc & ~(int64_t)7, nr16 = nr & ~(int64_t)15;
    int64_t i, j, jb;
    int c;

    for (jb = 0; jb < nc8; jb += 128) {
        for (i = 0; i < nr16; i += 16) {
            const uint8_t *s = src + (size_t)(i * sstride) * 2;
            for (j = jb; j < nc8 && j < jb + 128; j += 8) {
                uint16_t *d = dst + j * ld + i;
                __m256i a[8];
                for (c = 0; c < 8; c++) { /* row c in the low lane, row 8 + c in the high */
                    const __m128i lo =
                        _mm_loadu_si128((const __m128i *)(s + (size_t)(c * sstride + j) * 2));
                    const __m128i hi =
                        _mm_loadu_si128((const __m128i *)(s + (size_t)((8 + c) * sstride + j) * 2));
                    a[c] = hlx_ck_quiet16(
                        _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1));
                }
                hlx_ck_t16(a);
                for (c = 0; c < 8; c++)
                    _mm256_storeu_si256((__m256i *)(d + c * ld), a[c]);
            }
        }
    }
    hlx_ck_bf16_t_part(dst, ld, src, sstride, 0, nr16, nc8, nc - nc8);
    hlx_ck_bf16_t_part(dst, ld, src, sstride, nr16, nr - nr16, 0, nc);
}

/* 8 rows' words in a register: each field a vector of the 8 rows' values, stored as one
 * column run. */
static HLX_CK_AVX2 void hlx_ck_gptq_avx2(float *ct, int64_t cs, const uint8_t *pw, uint64_t w,
                                         int64_t th, int bits, int f, int m, const int32_t *z,
                                         const float *s, int value)
{
    const __m256i mask = _mm256_set1_epi32((int)((1u << bits) - 1u));
    const __m128i sh = _mm_cvtsi32_si128(bits), sh0 = _mm_cvtsi32_si128(bits * f);
    int64_t k;
    int e;

    for (k = 0; k + 8 <= th; k += 8) {
        const __m256i *p = (const __m256i *)(pw + 4 * (w + (uint64_t)k));
        __m256i x = _mm256_srl_epi32(_mm256_loadu_si256(p), sh0);
        const __m256i zv = _mm256_loadu_si256((const __m256i *)(z + k));
        const __m256 sv = _mm256_loadu_ps(s + k);
        for (e = 0; e < m; e++, x = _mm256_srl_epi32(x, sh)) {
            const __m256i q = _mm256_and_si256(x, mask);
            _mm256_storeu_ps(ct + e * cs + k,
                             value ? _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(q, zv)), sv)
                                   : _mm256_cvtepi32_ps(q));
        }
    }
    hlx_ck_gptq_part(ct, cs, pw, w, k, th, bits, f, m, z, s, value);
}

/* A word holds 8 consecutive rows of a column (rows starting on a multiple of 8): shifted
 * apart by lane. */
static HLX_CK_AVX2 void hlx_ck_awq_avx2(float *ct, int64_t cs, const uint8_t *pw, int64_t wr,
                                        int64_t wcols, int64_t n, int64_t o0, int64_t th,
                                        const int32_t *z, const float *s, int value)
{
    const __m256i sh = _mm256_setr_epi32(0, 16, 4, 20, 8, 24, 12, 28); /* 4 x field of row */
    const __m256i mask = _mm256_set1_epi32(15);
    const int64_t th8 = (o0 & 7) == 0 ? th & ~(int64_t)7 : 0;
    int64_t c, k;

    for (c = 0; c < n; c++) {
        const uint64_t wrow = (uint64_t)((wr + c) * wcols);
        float *d = ct + c * cs;
        for (k = 0; k < th8; k += 8) {
            const uint32_t word = hlx_ck_u32(pw, wrow + (uint64_t)((o0 + k) >> 3));
            const __m256i q = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)word), sh),
                                               mask);
            const __m256i zv = _mm256_loadu_si256((const __m256i *)(z + k));
            const __m256 qz = _mm256_cvtepi32_ps(_mm256_sub_epi32(q, zv));
            _mm256_storeu_ps(d + k, value ? _mm256_mul_ps(qz, _mm256_loadu_ps(s + k))
                                          : _mm256_cvtepi32_ps(q));
        }
        hlx_ck_awq_part(d, pw, wrow, o0, th8, th, z, s, value);
    }
}

static const hlx_ck_cvt_t hlx_ck_cvt_avx2 = {
    "avx2", hlx_ck_convert_avx2, hlx_ck_scale_avx2, hlx_ck_store_avx2, hlx_ck_tstore_avx2,
    hlx_ck_bf16_t_avx2, hlx_ck_gptq_avx2, hlx_ck_awq_avx2,
};
#endif

const hlx_ck_cvt_t *hlx_ck_cvt_best(void)
{
#ifdef HLX_CK_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        return &hlx_ck_cvt_avx2;
#endif
    return &hlx_ck_cvt_c;
}
