/* Packed integer weights kept packed (hlx_wq_t, docs/kernels.md "Packed integer weights"):
 * the format's sizes, packing and element reads, the reference dequantization, and the
 * gemm over such a matrix: chunks of its strips dequantized to bf16 into scratch and run
 * through the variant's own strip GEMM, which sums each element in the order of k whatever
 * the chunking, so the result is bit for bit the gemm over the matrix dequantized at
 * load. */
#include "hlx_kernels_priv.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define HLX_WQ_ALIGN 64

/* f32 -> bf16, round to nearest even, for the finite values a packed matrix holds (its
 * scales are checked finite when packed): hlx_f32_to_bf16 without its NaN branch. */
static inline uint16_t hlx_wq_bf16(float f)
{
    uint32_t u;

    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* One row of a strip (hlx_wq_walk): bf16((q - z) x s) of its 16 columns. */
static void hlx_wq_row_ref(const uint8_t *c, int sh, int m, const uint8_t *lut, const float *z,
                           const float *sc, uint16_t *d)
{
    int j;

    for (j = 0; j < 16; j++) {
        const int n = (c[j] >> sh) & m;
        d[j] = hlx_wq_bf16(((float)(lut ? lut[n] : n) - z[j]) * sc[j]);
    }
}

const uint8_t hlx_kernels_wq_lut_e2m1[16] = { 12, 13, 14, 15, 16, 18, 20, 24,
                                              12, 11, 10, 9, 8, 6, 4, 0 };

/* Rows [k0, k0 + kc) of strips [s0, s1) into bf16 (the reference's wq_dequant; avx2.c and
 * avx512.c write the same bits with vectors, checkasm compares them). */
static void hlx_wq_dequant_body(const hlx_wq_t *w, int k0, int kc, int s0, int s1, uint16_t *dst)
{
    hlx_wq_walk(w, k0, kc, s0, s1, dst, hlx_wq_row_ref);
}

static size_t hlx_wq_up(size_t n)
{
    return (n + HLX_WQ_ALIGN - 1) / HLX_WQ_ALIGN * HLX_WQ_ALIGN;
}

/* The header's fields for those arguments (bytes 0: outside the format); ao > 0: act order
 * with ao groups (group and kofs 0). */
static hlx_wq_t hlx_wq_layout(int bits, hlx_dtype_t elem, int K, int N, int group, int kofs,
                              int ao)
{
    hlx_wq_t h = { .magic = HLX_WQ_MAGIC, .bits = bits, .elem = (int32_t)elem, .K = K, .N = N };
    const size_t strips = ((size_t)(N > 0 ? N : 0) + 15) / 16;
    size_t rows, es, at, part;
    int n;

    for (n = 0; n < 16; n++)
        h.lut[n] = (uint8_t)n;

    if (K < 0 || N < 0)
        return (hlx_wq_t){ 0 };
    at = hlx_wq_up(sizeof(hlx_wq_t));
    h.codes = at;
    if (bits == 0) {
        es = elem == HLX_DTYPE_F32 ? 4 : elem == HLX_DTYPE_BF16 ? 2 : 0;
        if (es == 0 || (K > 0 && strips > SIZE_MAX / 16 / es / (size_t)K))
            return (hlx_wq_t){ 0 };
        h.bytes = at + hlx_wq_up(strips * 16 * es * (size_t)K);
        return h;
    }
    if ((bits != 4 && bits != 8) || elem != HLX_DTYPE_BF16)
        return (hlx_wq_t){ 0 };
    if (ao > 0) {
        h.G = ao;
    } else {
        if (group < 1 || kofs < 0 || kofs >= group || K > INT32_MAX - group)
            return (hlx_wq_t){ 0 };
        h.group = group;
        h.kofs = kofs;
        h.G = K > 0 ? (K - 1 + kofs) / group + 1 : 0;
    }
    rows = bits == 4 ? ((size_t)K + 1) / 2 : (size_t)K;
    if (rows > 0 && strips > SIZE_MAX / 64 / rows)
        return (hlx_wq_t){ 0 };
    part = hlx_wq_up(strips * rows * 16);
    h.scales = at + part;
    if (h.G > 0 && strips > SIZE_MAX / 256 / (size_t)h.G)
        return (hlx_wq_t){ 0 };
    part = hlx_wq_up(strips * (size_t)h.G * 16 * 4);
    h.zeros = h.scales + part;
    h.bytes = h.zeros + part;
    if (ao > 0) {
        h.gidx = h.bytes;
        h.bytes += hlx_wq_up((size_t)K * 4);
    }
    return h;
}

size_t hlx_kernels_wq_bytes(int bits, hlx_dtype_t elem, int K, int N, int group, int kofs)
{
    return (size_t)hlx_wq_layout(bits, elem, K, N, group, kofs, 0).bytes;
}

size_t hlx_kernels_wq_bytes_ao(int bits, int K, int N, int G)
{
    return G < 1 ? 0 : (size_t)hlx_wq_layout(bits, HLX_DTYPE_BF16, K, N, 0, 0, G).bytes;
}

static hlx_status_t hlx_wq_init_layout(void *w, const hlx_wq_t *h)
{
    if (h->bytes == 0)
        return HLX_ERR_INVALID;
    memset(w, 0, (size_t)h->bytes);
    memcpy(w, h, sizeof(*h));
    return HLX_OK;
}

hlx_status_t hlx_kernels_wq_init(void *w, int bits, hlx_dtype_t elem, int K, int N, int group,
                                 int kofs)
{
    const hlx_wq_t h = hlx_wq_layout(bits, elem, K, N, group, kofs, 0);

    return hlx_wq_init_layout(w, &h);
}

hlx_status_t hlx_kernels_wq_init_ao(void *w, int bits, int K, int N, int G, const int32_t *gidx)
{
    const hlx_wq_t h = G < 1 ? (hlx_wq_t){ 0 } : hlx_wq_layout(bits, HLX_DTYPE_BF16, K, N, 0, 0, G);
    int k;

    for (k = 0; k < K && h.bytes > 0; k++)
        if (gidx[k] < 0 || gidx[k] >= G)
            return HLX_ERR_INVALID;
    if (hlx_wq_init_layout(w, &h) != HLX_OK)
        return HLX_ERR_INVALID;
    memcpy((char *)w + h.gidx, gidx, (size_t)K * 4);
    return HLX_OK;
}

hlx_status_t hlx_kernels_wq_set_lut(void *w, const uint8_t lut[16])
{
    hlx_wq_t *h = w;
    int n;

    if (h->magic != HLX_WQ_MAGIC || h->bits != 4 || h->packed)
        return HLX_ERR_INVALID;
    memcpy(h->lut, lut, 16);
    for (h->mapped = 0, n = 0; n < 16; n++)
        h->mapped |= lut[n] != n;
    return HLX_OK;
}

static int hlx_wq_cols_ok(const hlx_wq_t *h, int n0, int n1)
{
    return h->magic == HLX_WQ_MAGIC && n0 >= 0 && n0 % 16 == 0 && n1 > n0 && n1 <= h->N &&
           (n1 == h->N || n1 % 16 == 0);
}

/* Codes c0[j] | c1[j] << sh of m columns into out (sh 0 with c1 == c0: one row's), 0 where
 * one is not a code of 0 .. top: it differs from itself clamped to that range and made an
 * integer (NaN, clamped to 0, differs). A plain loop, which gcc vectorizes once its
 * comparisons may not trap (nothing here reads the FP exception flags): a packing of a
 * model's weights spends its time here. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "default"), optimize("O3", "no-trapping-math")))
#endif
static int hlx_wq_code_row(const float *c0, const float *c1, int m, float top, int sh,
                           uint8_t *out)
{
    int ok = 1, j;

    for (j = 0; j < m; j++) {
        const float a = c0[j], b = c1[j];
        const int qa = (int)(a > 0.0f ? (a < top ? a : top) : 0.0f);
        const int qb = (int)(b > 0.0f ? (b < top ? b : top) : 0.0f);
        ok &= ((float)qa == a) & ((float)qb == b);
        out[j] = (uint8_t)(qa | qb << sh);
    }
    return ok;
}

hlx_status_t hlx_kernels_wq_pack_cols(void *w, int n0, int n1, const float *code,
                                      const float *scale, const float *zero, size_t ld)
{
    hlx_wq_t *h = w;
    char *base = w;
    const size_t rows = h->bits == 4 ? ((size_t)h->K + 1) / 2 : (size_t)h->K;
    const int mapped = h->bits == 4 && h->mapped;
    const float top = mapped ? 255.0f : (float)((1 << h->bits) - 1);
    uint8_t *codes = (uint8_t *)(base + h->codes);
    uint8_t inv[256]; /* mapped: a code's first nibble, 0xff for none */
    int n, k, g;

    if (!hlx_wq_cols_ok(h, n0, n1) || (h->bits != 4 && h->bits != 8) || ld < (size_t)(n1 - n0))
        return HLX_ERR_INVALID;
    memset(inv, 0xff, sizeof(inv));
    for (n = 15; n >= 0 && mapped; n--)
        inv[h->lut[n]] = (uint8_t)n;
    __atomic_store_n(&h->packed, 1, __ATOMIC_RELAXED);
    /* row by row (a pair of rows at 4 bits), each read along its columns into bytes (up to
     * 1024 at a time), then 16 of them to a strip; a code out of range refuses the packing */
    for (k = 0; k < h->K; k += h->bits == 4 ? 2 : 1) {
        const int pair = h->bits == 4 && k + 1 < h->K;
        const float *c0 = code + (size_t)k * ld, *c1 = pair ? c0 + ld : c0;
        uint8_t *b = codes + (size_t)n0 / 16 * rows * 16 + (size_t)(h->bits == 4 ? k / 2 : k) * 16;
        uint8_t row[1024];
        int m, j, e;
        for (n = n0; n < n1; n += m) {
            m = n1 - n < 1024 ? n1 - n : 1024;
            if (mapped) { /* each row's codes, then their nibbles */
                uint8_t hi[1024];
                if (!hlx_wq_code_row(c0 + (n - n0), c0 + (n - n0), m, top, 0, row) ||
                    !hlx_wq_code_row(c1 + (n - n0), c1 + (n - n0), m, top, 0, hi))
                    return HLX_ERR_INVALID;
                for (j = 0; j < m; j++) {
                    if (inv[row[j]] == 0xff || inv[hi[j]] == 0xff)
                        return HLX_ERR_INVALID;
                    row[j] = (uint8_t)(inv[row[j]] | (pair ? inv[hi[j]] << 4 : 0));
                }
            } else if (!hlx_wq_code_row(c0 + (n - n0), c1 + (n - n0), m, top, pair ? 4 : 0, row)) {
                return HLX_ERR_INVALID;
            }
            for (j = 0; j < m; j += 16, b += rows * 16) {
                e = m - j < 16 ? m - j : 16;
                if (h->bits == 4 && !pair) { /* the last of an odd K: the other nibble kept */
                    int i;
                    for (i = 0; i < e; i++)
                        b[i] = (uint8_t)((b[i] & 0xf0u) | row[j + i]);
                } else {
                    memcpy(b, row + j, (size_t)e);
                }
            }
        }
    }
    for (g = 0; g < h->G; g++)
        for (n = n0; n < n1; n++) {
            const size_t at = (size_t)(n / 16) * (size_t)h->G * 16 + (size_t)g * 16 + (size_t)(n % 16);
            const float sv = scale[(size_t)g * ld + (size_t)(n - n0)];
            const float zv = zero[(size_t)g * ld + (size_t)(n - n0)];
            /* zero points are integers (the products of a normal scale then are 0 or
             * normal: hlx_wq_t.tiny covers the scales) */
            int e;
            if (!isfinite(sv) || !isfinite(zv) || zv != floorf(zv))
                return HLX_ERR_INVALID;
            /* flags only ever set (threads pack column ranges of one matrix at once) */
            if (sv != 0.0f && fabsf(sv) < 0x1p-100f)
                __atomic_store_n(&h->tiny, 1, __ATOMIC_RELAXED);
            if ((sv != 0.0f && (fabsf(frexpf(sv, &e)) != 0.5f || e - 1 < -133 || e - 1 > 119)) ||
                zv < 0.0f || zv > 255.0f)
                __atomic_store_n(&h->inexact, 1, __ATOMIC_RELAXED);
            ((float *)(base + h->scales))[at] = sv;
            ((float *)(base + h->zeros))[at] = zv;
        }
    return HLX_OK;
}

hlx_status_t hlx_kernels_wq_plain_cols(void *w, int n0, int n1, const void *src, size_t ld)
{
    const hlx_wq_t *h = w;

    if (!hlx_wq_cols_ok(h, n0, n1) || h->bits != 0 || ld < (size_t)(n1 - n0))
        return HLX_ERR_INVALID;
    hlx_kernels_w_s16_pack_cols((hlx_dtype_t)h->elem, h->K, h->N, n0, n1, src, ld,
                                (char *)w + h->codes);
    return HLX_OK;
}

float hlx_kernels_wq_at(const void *w, int k, int n)
{
    const hlx_wq_t *h = w;
    uint16_t v[16];

    if (h->bits == 0)
        return hlx_dtype_load((const char *)w + h->codes, (hlx_dtype_t)h->elem,
                              hlx_w_s16_at(h->K, k, n));
    hlx_wq_dequant_body(h, k, 1, n / 16, n / 16 + 1, v);
    return hlx_bf16_to_f32(v[n % 16]);
}

/* Rows per dequantized chunk and strips per chunk: 256 x 16 strips of bf16 is 128 KiB of
 * scratch, in L2, which the strip GEMM then reads. */
#define HLX_WQ_KC 256
#define HLX_WQ_SC 16

/* Packed: chunks of HLX_WQ_SC strips x HLX_WQ_KC rows dequantized, the gemm over each with
 * y accumulating from the second chunk of k on (at 1 row x and y in place, else x's chunk
 * and y's columns through row-packed scratch, up to 64 rows at a time). Its own frame for
 * the 256 KiB of scratch (pool threads have 8 MiB stacks). */
static __attribute__((noinline)) void
hlx_wq_gemm_packed(const hlx_kernels_t *k, int M, int N, int K, const float *x, const hlx_wq_t *h,
                   float *y, int accumulate, int n0, int n1)
{
    uint16_t ws[HLX_WQ_KC * HLX_WQ_SC * 16] __attribute__((aligned(64)));
    float xs[HLX_WQ_KC * 64] __attribute__((aligned(64)));
    float ys[HLX_WQ_SC * 16 * 64] __attribute__((aligned(64)));
    const hlx_dtype_t s16bf = hlx_w_s16_of(HLX_DTYPE_BF16);
    int m, c0, k0;

    for (m = 0; m < M; m += 64) {
        const int mr = M - m < 64 ? M - m : 64;
        const float *xm = x + (size_t)m * K;
        float *ym = y + (size_t)m * N;
        for (c0 = n0; c0 < n1; c0 += HLX_WQ_SC * 16) {
            const int c1 = n1 - c0 < HLX_WQ_SC * 16 ? n1 : c0 + HLX_WQ_SC * 16, nc = c1 - c0;
            float *yc = mr == 1 ? ym + c0 : ys;
            int i;
            if (mr > 1 && accumulate)
                for (i = 0; i < mr; i++)
                    memcpy(ys + (size_t)i * nc, ym + (size_t)i * N + c0, (size_t)nc * 4);
            if (K == 0 && !accumulate)
                memset(yc, 0, (size_t)mr * nc * 4);
            for (k0 = 0; k0 < K; k0 += HLX_WQ_KC) {
                const int kc = K - k0 < HLX_WQ_KC ? K - k0 : HLX_WQ_KC;
                const float *xc = xm + k0;
                k->wq_dequant(h, k0, kc, c0 / 16, (c1 + 15) / 16, ws);
                if (mr > 1) {
                    for (i = 0; i < mr; i++)
                        memcpy(xs + (size_t)i * kc, xm + (size_t)i * K + k0, (size_t)kc * 4);
                    xc = xs;
                }
                k->gemm_cols(mr, nc, kc, xc, ws, s16bf, yc, accumulate || k0 > 0, 0, nc);
            }
            if (mr > 1)
                for (i = 0; i < mr; i++)
                    memcpy(ym + (size_t)i * N + c0, ys + (size_t)i * nc, (size_t)nc * 4);
        }
    }
}

void hlx_kernels_gemm_cols(const hlx_kernels_t *k, int M, int N, int K, const float *x,
                           const void *w, hlx_dtype_t w_dtype, float *y, int accumulate, int n0,
                           int n1)
{
    const hlx_wq_t *h = w;

    if (!hlx_w_q(w_dtype))
        k->gemm_cols(M, N, K, x, w, w_dtype, y, accumulate, n0, n1);
    else if (n1 <= n0)
        return;
    else if (h->bits == 0) /* plain strips: the variant's gemm on them */
        k->gemm_cols(M, N, K, x, (const char *)w + h->codes,
                     hlx_w_s16_of((hlx_dtype_t)h->elem), y, accumulate, n0, n1);
    else if (k->wq_gemm != NULL && K > 0 &&
             M <= (h->inexact ? k->wq_rows : k->wq_rows_exact)) /* a few rows: in registers */
        k->wq_gemm(M, N, K, x, h, y, accumulate, n0, n1);
    else
        hlx_wq_gemm_packed(k, M, N, K, x, h, y, accumulate, n0, n1);
}

/* The reference variant's dequantization. */
void hlx_wq_dequant_ref(const hlx_wq_t *w, int k0, int kc, int s0, int s1, uint16_t *dst)
{
    hlx_wq_dequant_body(w, k0, kc, s0, s1, dst);
}
