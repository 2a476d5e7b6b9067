/* Stand-alone experiment (not built by meson): how the layout of bf16 weights limits the
 * few-row GEMM y[M][N] = x[M][K] W[K][N] when W streams from DRAM. Each loop does the
 * same FMAs in the same order of k as the library's row kernel; they differ in how W and
 * x are laid out and walked:
 *   rows   W row-major [K][N] (the library's), KB rows of W per pass over the columns, each
 *          row's stream prefetched into L2 PF columns ahead (the library: KB 8 up to 4
 *          rows, 64 from 5, PF 128)
 *   strips W in strips of 32 columns, [N/32][K][32]: one strip is one sequential stream
 *          of K x 64 bytes, its 32 columns of y stay in registers for all of K; x packed
 *          [K][8] (read from L2 when K x 32 bytes exceeds L1); SS strips at once (third
 *          argument, M x SS <= 8)
 *   s16    strips of 16 columns, [N/16][K][16], SS at once (M x SS <= 24): the layout the
 *          library took (HLX_W_S16)
 *   xwin   strips, but x read from a 64-term window (wrong sums: measures what reading x
 *          from L1 instead of L2 is worth)
 *   tiles  strips cut in chunks of KC terms, [K/KC][N/32][KC][32] (W one stream, x of a
 *          chunk in L1, y through memory once per chunk)
 *   plain  a loop reading the same bytes with 16 FMAs per 64-byte line and no widening,
 *          no x (the core reading and computing at once)
 * Build and run pinned, in turns: gcc -O3 -march=native -o /tmp/gemm_layout gemm_layout.c
 *   for v in rows strips xwin tiles plain; do taskset -c 1 /tmp/gemm_layout 8 $v; done
 *   taskset -c 1 /tmp/gemm_layout 1 strips 4; taskset -c 1 /tmp/gemm_layout 4 s16 6
 * Arguments: M (1, 2, 4, 6 or 8), loop, then KB (rows), SS (strips, s16) or KC (tiles),
 * then PF (rows: columns ahead; 0 none). */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NCOPY 3 /* 3 x 128 MiB of W in turn: never in the LLC */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline __m512 w16(const uint16_t *w)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)w)), 16));
}

static float xk[8192 * 8] __attribute__((aligned(64)));

/* terms [k0, k0 + kc) of MR rows of x (K terms a row) into xk as [k][8] */
static inline void pack_x(int MR, int K, int k0, int kc, const float *x)
{
    for (int ki = 0; ki < kc; ki++)
        for (int m = 0; m < MR; m++)
            xk[ki * 8 + m] = x[(size_t)m * K + k0 + ki];
}

#define YIN(MR, y, N, n, first, a0, a1)                                              \
    for (int m = 0; m < MR; m++) {                                                    \
        a0[m] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(y + (size_t)m * N + n); \
        a1[m] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(y + (size_t)m * N + n + 16); \
    }
#define YOUT(MR, y, N, n, a0, a1)                                  \
    for (int m = 0; m < MR; m++) {                                  \
        _mm512_storeu_ps(y + (size_t)m * N + n, a0[m]);             \
        _mm512_storeu_ps(y + (size_t)m * N + n + 16, a1[m]);        \
    }
#define FMAS(MR, xr, w0, w1, a0, a1)                                                   \
    for (int m = 0; m < MR; m++) {                                                      \
        const __m512 b = _mm512_set1_ps((xr)[m]);                                       \
        a0[m] = _mm512_fmadd_ps(b, w0, a0[m]);                                          \
        a1[m] = _mm512_fmadd_ps(b, w1, a1[m]);                                          \
    }

static inline __attribute__((always_inline)) void
rows(const int MR, int KB, int PF, int N, int K, const float *x, const uint16_t *w, float *y)
{
    for (int k0 = 0; k0 < K; k0 += KB) {
        pack_x(MR, K, k0, KB, x);
        for (int n = 0; n < N; n += 32) {
            __m512 a0[8], a1[8];
            int pn = n + PF, dk = 0;
            if (pn >= N)
                pn -= N, dk = KB;
            YIN(MR, y, N, n, k0 == 0, a0, a1);
            for (int ki = 0; ki < KB; ki++) {
                const uint16_t *wr = w + (size_t)(k0 + ki) * N + n;
                const __m512 w0 = w16(wr), w1 = w16(wr + 16);
                if (PF && k0 + ki + dk < K)
                    _mm_prefetch((const char *)(w + (size_t)(k0 + ki + dk) * N + pn), _MM_HINT_T1);
                FMAS(MR, xk + ki * 8, w0, w1, a0, a1);
            }
            YOUT(MR, y, N, n, a0, a1);
        }
    }
}

/* kind 0: strips, 1: x from a 64-term window, 2: tiles of KC */
static inline __attribute__((always_inline)) void
strips(const int MR, int kind, int KC, int N, int K, const float *x, const uint16_t *w, float *y)
{
    if (kind != 2)
        KC = K;
    for (int k0 = 0; k0 < K; k0 += KC) {
        pack_x(MR, K, k0, KC, x);
        for (int s = 0; s < N / 32; s++) {
            const int n = s * 32;
            const uint16_t *wb = kind == 2 ? w + (size_t)k0 * N + (size_t)s * KC * 32
                                           : w + (size_t)s * K * 32;
            __m512 a0[8], a1[8];
            YIN(MR, y, N, n, k0 == 0, a0, a1);
            for (int ki = 0; ki < KC; ki++) {
                const __m512 w0 = w16(wb + (size_t)ki * 32), w1 = w16(wb + (size_t)ki * 32 + 16);
                FMAS(MR, xk + (kind == 1 ? (ki & 63) : ki) * 8, w0, w1, a0, a1);
            }
            YOUT(MR, y, N, n, a0, a1);
        }
    }
}

/* SS strips of 32 columns at once over all of K (MR x SS <= 8) */
static inline __attribute__((always_inline)) void
strips_ss(const int MR, const int SS, int N, int K, const float *x, const uint16_t *w, float *y)
{
    pack_x(MR, K, 0, K, x);
    for (int s = 0; s + SS <= N / 32; s += SS) {
        __m512 a0[8], a1[8];
        for (int j = 0; j < MR * SS; j++)
            a0[j] = a1[j] = _mm512_setzero_ps();
        for (int ki = 0; ki < K; ki++)
            for (int q = 0; q < SS; q++) {
                const uint16_t *wr = w + ((size_t)(s + q) * K + ki) * 32;
                const __m512 w0 = w16(wr), w1 = w16(wr + 16);
                FMAS(MR, xk + ki * 8, w0, w1, (a0 + q * MR), (a1 + q * MR));
            }
        for (int q = 0; q < SS; q++) {
            YOUT(MR, y, N, (s + q) * 32, (a0 + q * MR), (a1 + q * MR));
        }
    }
}

static inline __m512 w16h(const uint16_t *w) /* 16 bf16 */
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(
        _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)w)), 16));
}

/* SS strips of 16 columns at once over all of K (MR x SS <= 24) */
static inline __attribute__((always_inline)) void
s16(const int MR, const int SS, int N, int K, const float *x, const uint16_t *w, float *y)
{
    pack_x(MR, K, 0, K, x);
    for (int s = 0; s + SS <= N / 16; s += SS) {
        __m512 a[24];
        for (int j = 0; j < MR * SS; j++)
            a[j] = _mm512_setzero_ps();
        for (int ki = 0; ki < K; ki++)
            for (int q = 0; q < SS; q++) {
                const __m512 wv = w16h(w + ((size_t)(s + q) * K + ki) * 16);
                for (int m = 0; m < MR; m++)
                    a[q * MR + m] = _mm512_fmadd_ps(_mm512_set1_ps(xk[ki * 8 + m]), wv, a[q * MR + m]);
            }
        for (int q = 0; q < SS; q++)
            for (int m = 0; m < MR; m++)
                _mm512_storeu_ps(y + (size_t)m * N + (s + q) * 16, a[q * MR + m]);
    }
}

static float plain(const uint16_t *w, size_t bytes)
{
    __m512 a[16], c = _mm512_set1_ps(0.9999f);
    const float *p = (const float *)w;
    for (int j = 0; j < 16; j++)
        a[j] = _mm512_setzero_ps();
    for (size_t i = 0; i < bytes / 4; i += 16) {
        const __m512 v = _mm512_load_ps(p + i);
        for (int j = 0; j < 16; j++)
            a[j] = _mm512_fmadd_ps(v, c, a[j]);
    }
    for (int j = 1; j < 16; j++)
        a[0] = _mm512_add_ps(a[0], a[j]);
    return _mm512_reduce_add_ps(a[0]);
}

#define BY_M(M, call, ...)                         \
    switch (M) {                                   \
    case 1: call(1, __VA_ARGS__); break;           \
    case 2: call(2, __VA_ARGS__); break;           \
    case 4: call(4, __VA_ARGS__); break;           \
    case 6: call(6, __VA_ARGS__); break;           \
    default: call(8, __VA_ARGS__); break;          \
    }

int main(int argc, char **argv)
{
    const int N = 8192, K = 8192, M = argc > 1 ? atoi(argv[1]) : 8;
    const char *loop = argc > 2 ? argv[2] : "rows";
    const int kb = argc > 3 ? atoi(argv[3]) : (strcmp(loop, "tiles") == 0 ? 512 : M <= 4 ? 8 : 64);
    const int pf = argc > 4 ? atoi(argv[4]) : 128;
    const int ss = argc > 3 ? atoi(argv[3]) : 1; /* strips, s16: strips at once */
    const size_t ne = (size_t)N * K;
    uint16_t *w[NCOPY];
    float *x = aligned_alloc(64, sizeof(float) * 8 * K), *y = aligned_alloc(64, sizeof(float) * 8 * N);
    volatile float sink = 0;
    double best = 1e9;

    if (M < 1 || M > 8 || kb < 1 || (strcmp(loop, "tiles") == 0 && K % kb != 0)) {
        fprintf(stderr, "usage: %s [M 1..8] [rows|strips|s16|xwin|tiles|plain] [KB|SS|KC] [PF]\n",
                argv[0]);
        return 2;
    }
    for (int c = 0; c < NCOPY; c++) {
        w[c] = aligned_alloc(2 << 20, ne * 2);
        for (size_t i = 0; i < ne; i++)
            w[c][i] = (uint16_t)(0x3f80 + (i * 7 % 64)); /* the bits of 1.0 .. 1.49 */
    }
    for (int i = 0; i < 8 * K; i++)
        x[i] = (float)(i % 13) * 0.01f;
    for (int r = 0; r < 12; r++) {
        const uint16_t *wc = w[r % NCOPY];
        double t = now();
        if (strcmp(loop, "rows") == 0)
            BY_M(M, rows, kb, pf, N, K, x, wc, y)
        else if (strcmp(loop, "strips") == 0 && ss == 1)
            BY_M(M, strips, 0, kb, N, K, x, wc, y)
        else if (strcmp(loop, "strips") == 0 || strcmp(loop, "s16") == 0) {
            /* the (loop, M, SS) instances built: 32-column strips 1xx, 16-column 2xx */
            switch ((loop[1] == '1' ? 200 : 100) + M * 10 + ss) {
            case 112: strips_ss(1, 2, N, K, x, wc, y); break;
            case 114: strips_ss(1, 4, N, K, x, wc, y); break;
            case 122: strips_ss(2, 2, N, K, x, wc, y); break;
            case 124: strips_ss(2, 4, N, K, x, wc, y); break;
            case 142: strips_ss(4, 2, N, K, x, wc, y); break;
            case 214: s16(1, 4, N, K, x, wc, y); break;
            case 218: s16(1, 8, N, K, x, wc, y); break;
            case 224: s16(2, 4, N, K, x, wc, y); break;
            case 228: s16(2, 8, N, K, x, wc, y); break;
            case 244: s16(4, 4, N, K, x, wc, y); break;
            case 246: s16(4, 6, N, K, x, wc, y); break;
            case 263: s16(6, 3, N, K, x, wc, y); break;
            case 264: s16(6, 4, N, K, x, wc, y); break;
            case 282: s16(8, 2, N, K, x, wc, y); break;
            case 283: s16(8, 3, N, K, x, wc, y); break;
            default: fprintf(stderr, "%s: M %d x SS %d not built\n", loop, M, ss); return 2;
            }
        }
        else if (strcmp(loop, "xwin") == 0)
            BY_M(M, strips, 1, kb, N, K, x, wc, y)
        else if (strcmp(loop, "tiles") == 0)
            BY_M(M, strips, 2, kb, N, K, x, wc, y)
        else
            sink += plain(wc, ne * 2);
        t = now() - t;
        best = t < best ? t : best;
    }
    (void)sink;
    printf("M %d %-6s KB/KC %4d PF %3d: %6.2f ms, W %5.1f GB/s, %6.1f GFLOP/s\n", M, loop, kb,
           pf, best * 1e3, (double)ne * 2 / best / 1e9,
           strcmp(loop, "plain") == 0 ? 8.0 * (double)ne * 2 / best / 1e9
                                      : 2.0 * M * (double)ne / best / 1e9);
    return 0;
}
