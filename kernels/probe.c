/* Measures this core's roofline limits in the same run as a benchmark: fp32 FMA peak and a
 * STREAM-like read bandwidth, with the widest vector ISA the CPU supports. */
#include "hlx_kernels_priv.h"
#include "hlx_time.h"

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

hlx_status_t hlx_kernels_probe_fma_peak(double min_seconds, double *gflops_p)
{
    return hlx_kernels_probe_fma_peak_for(NULL, min_seconds, gflops_p, NULL);
}

hlx_status_t hlx_kernels_probe_fma_peak_for(const char *variant, double min_seconds,
                                            double *gflops_p, const char **isa_p)
{
    static const char *const isa_names[3] = { "scalar", "avx2", "avx512" };
    int isa = hlx_probe_isa();
    uint64_t n = 1 << 16;
    double best = 0.0, t_total = 0.0, flops_per_iter;

    /* a narrower variant is measured with its own vectors: the peak of a core whose widest
     * ISA is that one, at this clock (an AVX2-only machine's, for the avx2 variant) */
    if (variant != NULL && !strcmp(variant, "scalar"))
        isa = 0;
    else if (variant != NULL && !strcmp(variant, "avx2") && isa > 1)
        isa = 1;
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
