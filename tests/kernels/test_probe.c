/* The machine probes' stream-and-compute loop (white-box: the ISA loops of
 * hlx_kernels_priv.h): every loop issues exactly k FMAs per 64-byte line for every k
 * (its blocks and remainders), the FMA count per line rounds the intensity as documented,
 * and the public probe refuses what it cannot measure. No timing is asserted.
 * Exit 0 on success, 1 on the first failure. */
#include "kt_common.h"
#include "hlx_kernels_priv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int kt_fail;

typedef double (*kt_stream_fn)(const float *p, size_t n, int k, size_t piece);

/* Line j holds j + 1 in every element: each FMA of `lanes` lanes on line j adds lanes x (j
 * + 1) x m to the sum the loop returns, so over the lines read it is k x lanes x m x the
 * sum of (j + 1) over them (exact enough in fp32 at these counts: a relative 1e-4). A loop
 * that drops or repeats an FMA of some block or remainder misses by at least 1/k of it; one
 * that reads a line twice, skips one or reads past a half's end misses by its weight. One
 * stream reads all 64 lines; two streams in pieces of 3 lines (a last piece of 2 in each
 * half) read them all too. */
static double kt_want(int lines, int k, int lanes)
{
    double w = 0;
    int j;

    for (j = 0; j < lines; j++)
        w += j + 1;
    return w * k * lanes * 0.999999;
}

static void kt_loop(const char *isa, kt_stream_fn fn, int lanes)
{
    enum { LINES = 64 };
    float *p = aligned_alloc(64, (LINES + 2) * 64);
    int k, j;

    if (p == NULL) {
        KT_EXPECT(0, "out of memory");
        return;
    }
    for (j = 0; j < (LINES + 2) * 16; j++)
        p[j] = (float)(j / 16 + 1);
    for (k = 1; k <= 70; k++) {
        double got = fn(p, LINES * 16, k, 0), want = kt_want(LINES, k, lanes);
        KT_EXPECT(fabs(got - want) <= 1e-4 * want, "%s: k %d, one stream: sum %.9g, want %.9g",
                 isa, k, got, want);
        got = fn(p, LINES * 16, k, 3 * 16);
        KT_EXPECT(fabs(got - want) <= 1e-4 * want, "%s: k %d, two streams: sum %.9g, want %.9g",
                 isa, k, got, want);
    }
    /* 64 lines and 30 floats more: two halves of 32 lines each (the halves start at whole
     * lines), the 30 floats (lines 65 and 66) not read */
    {
        double got = fn(p, LINES * 16 + 30, 8, 4 * 16), want = kt_want(LINES, 8, lanes);
        KT_EXPECT(fabs(got - want) <= 1e-4 * want, "%s: ragged halves: sum %.9g, want %.9g",
                 isa, got, want);
    }
    /* a tail shorter than a line is not read */
    KT_EXPECT(fn(p, 15, 8, 0) == 0.0, "%s: 15 floats are no line", isa);
    KT_EXPECT(fn(p, 31, 8, 16) == 0.0, "%s: two halves of 15 floats are no lines", isa);
    free(p);
}

static void kt_count(void)
{
    static const struct { double fpb; int lanes, k; } c[] = {
        { 8.0, 16, 16 },      /* bf16 KV, GQA 8: 16 FMAs of 16 lanes a line */
        { 4.0, 16, 8 },       /* fp32 KV */
        { 16.0, 16, 32 },     /* fp8 KV */
        { 8.0, 8, 32 },       /* avx2: 8 lanes */
        { 8.0, 1, 256 },      /* scalar */
        { 241.7777, 16, 484 }, /* MLA bf16: 483.56 rounds up */
        { 0.1, 16, 1 },       /* memory-bound: at least one */
        { 0.0, 16, 0 },
        { -1.0, 16, 0 },
        { 1e12, 16, 0 },      /* more than 2^20 a line */
        { 8.0, 0, 0 },
    };
    size_t i;

    for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        int k = hlx_kernels_stream_fma_k(c[i].fpb, c[i].lanes);
        KT_EXPECT(k == c[i].k, "stream_fma_k(%g, %d) = %d, want %d", c[i].fpb, c[i].lanes, k,
                 c[i].k);
    }
    KT_EXPECT(hlx_kernels_stream_fma_k(NAN, 16) == 0, "NaN intensity");
    KT_EXPECT(hlx_kernels_stream_fma_k(INFINITY, 16) == 0, "infinite intensity");
}

/* The public probe: refusals, and on a small buffer a finite rate and the intensity it
 * issued (1.1 flop/byte: 35 scalar FMAs a line, 1.09375; 4 of 8 lanes or 2 of 16: 1.0). */
static void kt_public(void)
{
    double gbps = -1, fpb = -1;
    hlx_status_t st;

    KT_EXPECT(hlx_kernels_probe_stream_fma_for(NULL, 64, 8.0, 0, &gbps, &fpb) == HLX_ERR_INVALID,
             "64 bytes accepted");
    KT_EXPECT(hlx_kernels_probe_stream_fma_for(NULL, 1 << 16, NAN, 0, &gbps, &fpb) ==
             HLX_ERR_INVALID, "NaN intensity accepted");
    KT_EXPECT(hlx_kernels_probe_stream_fma_for(NULL, 1 << 16, -2.0, 0, &gbps, &fpb) ==
             HLX_ERR_INVALID, "negative intensity accepted");
    st = hlx_kernels_probe_stream_fma_for("scalar", 1 << 16, 1.1, 0, &gbps, &fpb);
    KT_EXPECT(st == HLX_OK && gbps > 0 && isfinite(gbps) && fpb == 1.09375,
             "scalar: status %d, %g GB/s, %g flop/byte", (int)st, gbps, fpb);
    if (kt_usable("avx2")) {
        st = hlx_kernels_probe_stream_fma_for("avx2", 1 << 16, 1.1, 0, &gbps, &fpb);
        KT_EXPECT(st == HLX_OK && gbps > 0 && isfinite(gbps) && fpb == 1.0,
                 "avx2: status %d, %g GB/s, %g flop/byte", (int)st, gbps, fpb);
    }
    st = hlx_kernels_probe_stream_fma_for(NULL, 1 << 16, 8.0, 0, &gbps, NULL);
    KT_EXPECT(st == HLX_OK && gbps > 0 && isfinite(gbps), "widest: status %d, %g GB/s",
             (int)st, gbps);
}

int main(void)
{
    kt_count();
    kt_loop("scalar", hlx_probe_stream_fma_scalar, 1);
#ifdef HLX_HAVE_X86_VARIANTS
    if (kt_usable("avx2"))
        kt_loop("avx2", hlx_probe_stream_fma_avx2, 8);
    if (kt_usable("avx512"))
        kt_loop("avx512", hlx_probe_stream_fma_avx512, 16);
#endif
    kt_public();
    if (kt_fail == 0)
        printf("kernels probe: ok\n");
    return kt_fail ? 1 : 0;
}
