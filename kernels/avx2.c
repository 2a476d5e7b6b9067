/* AVX2+FMA variant: 8-lane fp32 vectors, 4 query heads per KV load (16 ymm registers),
 * bf16 KV widened by shifts, bf16-weight GEMV. Built with -mavx2 -mfma; only entered after
 * dispatch.c has checked the CPU. */
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

/* y[M][n0..n1) (+)= x[M][K] W[K][n0..n1) with bf16 W (row stride N): rows streamed in
 * order, 8 columns a vector, scalar tail columns. */
static void hlx_gemm_bf16_avx2(int M, int N, int K, const float *x, const uint16_t *w,
                               float *y, int accumulate, int n0, int n1)
{
    int m, kk, n;

    if (!accumulate)
        hlx_gemm_zero_cols(M, N, y, n0, n1);
    for (m = 0; m < M; m++) {
        float *yr = y + (size_t)m * N;
        for (kk = 0; kk < K; kk++) {
            const uint16_t *wr = w + (size_t)kk * N;
            float a = x[(size_t)m * K + kk];
            __m256 av = _mm256_set1_ps(a);
            for (n = n0; n + 8 <= n1; n += 8) {
                __m256 wv = _mm256_castsi256_ps(_mm256_slli_epi32(
                    _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(wr + n))), 16));
                _mm256_storeu_ps(yr + n, _mm256_fmadd_ps(av, wv, _mm256_loadu_ps(yr + n)));
            }
            for (; n < n1; n++)
                yr[n] += a * hlx_bf16_to_f32(wr[n]);
        }
    }
}

static void hlx_gemm_cols_avx2(int M, int N, int K, const float *x, const void *w,
                               hlx_dtype_t w_dtype, float *y, int accumulate, int n0, int n1)
{
    if (n1 <= n0)
        return;
    if (w_dtype == HLX_DTYPE_BF16) {
        hlx_gemm_bf16_avx2(M, N, K, x, (const uint16_t *)w, y, accumulate, n0, n1);
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

void hlx_kernels_avx2(hlx_kernels_t *k)
{
    hlx_kernels_reference(k);
    k->name    = "avx2";
    k->attn    = hlx_attn_avx2;
    k->merge   = hlx_merge_avx2;
    k->rmsnorm = hlx_rmsnorm_avx2;
    k->swiglu  = hlx_swiglu_avx2;
    k->gemm    = hlx_gemm_avx2;
    k->gemm_cols = hlx_gemm_cols_avx2;
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
