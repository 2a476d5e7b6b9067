/* Measures this core's roofline limits in the same run as a benchmark: fp32 FMA peak, a
 * STREAM-like read bandwidth, and the two at once (a read issuing a kernel's FMAs per
 * byte), with the widest vector ISA the CPU supports. */
#include "hlx_kernels_priv.h"
#include "hlx_time.h"

#include <math.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>

static int hlx_probe_isa(void)
{
#ifdef HLX_HAVE_X86_VARIANTS
    const char *names[8];
    size_t n = hlx_kernels_list(names, 8);
    /* "amx" extends avx512: its FMA and read loops are the avx512 ones */
    if (n > 0 && (!strcmp(names[n - 1], "avx512") || !strcmp(names[n - 1], "amx")))
        return 2;
    if (n > 0 && !strcmp(names[n - 1], "avx2"))
        return 1;
#endif
    return 0;
}

static volatile double hlx_probe_sink;

void *hlx_kernels_alloc_huge(size_t bytes)
{
    const size_t al = (size_t)2 << 20;
    size_t sz = (bytes + al - 1) / al * al;
    void *p = NULL;

    if (sz == 0)
        sz = al;
    if (posix_memalign(&p, al, sz) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, sz, MADV_HUGEPAGE); /* advice only: failure leaves 4 KiB pages */
#endif
    return p;
}

void hlx_kernels_free_huge(void *p)
{
    free(p);
}

/* Scalar fallbacks: 8 independent chains, compilers keep them in registers. */
static double hlx_probe_fma_scalar(uint64_t n)
{
    float a[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    uint64_t i;
    int j;
    for (i = 0; i < n; i++)
        for (j = 0; j < 8; j++)
            a[j] = a[j] * 0.999999f + 1e-7f;
    return a[0] + a[7];
}

static double hlx_probe_read_scalar(const float *p, size_t n)
{
    float a[8] = { 0 };
    size_t i;
    int j;
    for (i = 0; i + 8 <= n; i += 8)
        for (j = 0; j < 8; j++)
            a[j] += p[i + j];
    return a[0] + a[7];
}

/* n floats streamed (one stream, or two in pieces as the vector loops), k scalar FMAs per
 * 16 (one 64-byte line), 8 chains */
double hlx_probe_stream_fma_scalar(const float *p, size_t n, int k, size_t piece)
{
    const int streams = piece ? 2 : 1;
    const size_t per = n / (size_t)streams / 16 * 16, step = piece ? piece : per;
    float a[8] = { 0 };
    size_t c, i;
    int j, s;

    for (c = 0; c < per; c += step)
        for (s = 0; s < streams; s++) {
            const float *q = p + (size_t)s * per + c;
            const size_t len = per - c < step ? per - c : step;
            for (i = 0; i + 16 <= len; i += 16)
                for (j = 0; j < k; j++)
                    a[j & 7] = q[i + (j & 15)] * 0.999999f + a[j & 7];
        }
    for (j = 1; j < 8; j++)
        a[0] += a[j];
    return a[0];
}

hlx_status_t hlx_kernels_probe_fma_peak(double min_seconds, double *gflops_p)
{
    return hlx_kernels_probe_fma_peak_for(NULL, min_seconds, gflops_p, NULL);
}

/* The ISA a variant's limits are measured with: a narrower variant's own vectors (the
 * limits of a core whose widest ISA is that one, at this clock: an AVX2-only machine's,
 * for the avx2 variant), else the widest this CPU has. 0 scalar, 1 avx2, 2 avx512. */
static int hlx_probe_isa_for(const char *variant)
{
    int isa = hlx_probe_isa();

    if (variant != NULL && !strcmp(variant, "scalar"))
        return 0;
    if (variant != NULL && !strcmp(variant, "avx2") && isa > 1)
        return 1;
    return isa;
}

hlx_status_t hlx_kernels_probe_fma_peak_for(const char *variant, double min_seconds,
                                            double *gflops_p, const char **isa_p)
{
    static const char *const isa_names[3] = { "scalar", "avx2", "avx512" };
    int isa = hlx_probe_isa_for(variant);
    uint64_t n = 1 << 16;
    double best = 0.0, t_total = 0.0, flops_per_iter;

    flops_per_iter = isa == 2 ? 16 * 16 * 2 : isa == 1 ? 12 * 8 * 2 : 8 * 2;
    if (isa_p != NULL)
        *isa_p = isa_names[isa];
    while (t_total < min_seconds || best == 0.0) {
        uint64_t t0 = hlx_now_ns();
        double dt;
#ifdef HLX_HAVE_X86_VARIANTS
        hlx_probe_sink = isa == 2 ? hlx_probe_fma_avx512(n)
                       : isa == 1 ? hlx_probe_fma_avx2(n) : hlx_probe_fma_scalar(n);
#else
        hlx_probe_sink = hlx_probe_fma_scalar(n);
#endif
        dt = (double)(hlx_now_ns() - t0) * 1e-9;
        t_total += dt;
        /* windows of 0.2 ms or more, best kept: short windows, like the kernel calls the
         * benchmarks time (best of many), so a time slice lost to another process on the
         * core costs one window, not the probe (20 ms windows read 100-160 GFLOP/s under
         * load where the 40 us kernel calls ran at full speed: efficiencies above 1) */
        if (dt < 2e-4) { /* too short to time: grow, do not count */
            n *= 4;
            continue;
        }
        if (flops_per_iter * (double)n / dt * 1e-9 > best)
            best = flops_per_iter * (double)n / dt * 1e-9;
    }
    *gflops_p = best;
    return HLX_OK;
}

hlx_status_t hlx_kernels_probe_read_bw(size_t bytes, double min_seconds, double *gbps_p)
{
    int isa = hlx_probe_isa();
    size_t n = bytes / sizeof(float), i;
    double best = 0.0, t_total = 0.0;
    float *p;
    int pass;

    n -= n % 64;
    if (n == 0)
        return HLX_ERR_INVALID;
    /* huge pages, like the benchmarks' KV buffers, so the probe does not pay TLB misses
     * the kernels do not */
    p = hlx_kernels_alloc_huge(n * sizeof(float));
    if (p == NULL)
        return HLX_ERR_NOMEM;
    for (i = 0; i < n; i++) /* touch every page so the timed passes read DRAM, not faults */
        p[i] = (float)(i & 1023);
    for (pass = 0; pass < 9 || t_total < min_seconds; pass++) {
        uint64_t t0 = hlx_now_ns();
        double dt;
#ifdef HLX_HAVE_X86_VARIANTS
        /* every loop this CPU runs, in turn, the best pass kept: the 16-byte loads of the
         * plain loop read 5-15% faster than the 64-byte ones here, and the roofline must
         * use the best the core reaches */
        switch (pass % (isa + 1)) {
        case 2: hlx_probe_sink = hlx_probe_read_avx512(p, n); break;
        case 1: hlx_probe_sink = hlx_probe_read_avx2(p, n); break;
        default: hlx_probe_sink = hlx_probe_read_scalar(p, n); break;
        }
#else
        hlx_probe_sink = hlx_probe_read_scalar(p, n);
#endif
        dt = (double)(hlx_now_ns() - t0) * 1e-9;
        t_total += dt;
        if ((double)(n * sizeof(float)) / dt * 1e-9 > best)
            best = (double)(n * sizeof(float)) / dt * 1e-9;
        if (pass > 50)
            break;
    }
    hlx_kernels_free_huge(p);
    *gbps_p = best;
    return HLX_OK;
}

/* One 64-byte line carries flops_per_byte x 64 flops: k FMAs of the ISA's lanes (2 flops
 * per lane), rounded to the nearest, at least one. 0 when the intensity is not a finite
 * positive number or needs more than HLX_PROBE_K_MAX FMAs a line. */
#define HLX_PROBE_K_MAX (1 << 20)

int hlx_kernels_stream_fma_k(double flops_per_byte, int lanes)
{
    double k;

    if (!(flops_per_byte > 0.0) || !(flops_per_byte < 1e300) || lanes < 1)
        return 0;
    k = floor(flops_per_byte * 64.0 / (2.0 * lanes) + 0.5);
    if (k > HLX_PROBE_K_MAX)
        return 0;
    return k < 1.0 ? 1 : (int)k;
}

hlx_status_t hlx_kernels_probe_stream_fma_for(const char *variant, size_t bytes,
                                              double flops_per_byte, double min_seconds,
                                              double *gbps_p, double *fpb_p)
{
    static const int lanes[3] = { 1, 8, 16 };
    int isa = hlx_probe_isa_for(variant), k = hlx_kernels_stream_fma_k(flops_per_byte, lanes[isa]);
    size_t n = bytes / sizeof(float), i;
    double best = 0.0, t_total = 0.0, bytes_two;
    float *p;
    int pass;

    n -= n % 16;
    if (n < 32 || k == 0)
        return HLX_ERR_INVALID;
    p = hlx_kernels_alloc_huge(n * sizeof(float));
    if (p == NULL)
        return HLX_ERR_NOMEM;
    for (i = 0; i < n; i++) /* every page touched: the timed passes read memory, not faults */
        p[i] = (float)(i & 1023);
    /* two shapes in turn: one stream, and the buffer's halves in 8 KiB pieces each (an
     * attention call's key and value blocks; on the Zen 5 VM at fp32's 4 flop/byte 40 GB/s
     * against 25-30 for one stream); at least three passes of each (the first may find the
     * buffer in no cache it will be in later), then until min_seconds, at most 20; the
     * best kept */
    /* two streams leave up to 15 floats of each half's end unread */
    bytes_two = (double)(n / 2 / 16 * 16 * 2 * sizeof(float));
    for (pass = 0; pass < 6 || (t_total < min_seconds && pass < 20); pass++) {
        const size_t piece = pass % 2 ? 2048 : 0;
        const double bytes_read = piece ? bytes_two : (double)(n * sizeof(float));
        uint64_t t0 = hlx_now_ns();
        double dt;
#ifdef HLX_HAVE_X86_VARIANTS
        hlx_probe_sink = isa == 2 ? hlx_probe_stream_fma_avx512(p, n, k, piece)
                       : isa == 1 ? hlx_probe_stream_fma_avx2(p, n, k, piece)
                                  : hlx_probe_stream_fma_scalar(p, n, k, piece);
#else
        hlx_probe_sink = hlx_probe_stream_fma_scalar(p, n, k, piece);
#endif
        dt = (double)(hlx_now_ns() - t0) * 1e-9;
        t_total += dt;
        if (dt > 0 && bytes_read / dt * 1e-9 > best)
            best = bytes_read / dt * 1e-9;
    }
    hlx_kernels_free_huge(p);
    *gbps_p = best;
    if (fpb_p != NULL)
        *fpb_p = 2.0 * lanes[isa] * k / 64.0;
    return best > 0 ? HLX_OK : HLX_ERR_INVALID;
}
