/* `helix bench local` (alias `machine`): measures this machine in a few seconds (one
 * core's read bandwidth and FMA peak, the attention and GEMM kernels the runtime calls,
 * the transport's collectives between ranks of this host) and stores it as the hw file
 * that `helix plan --hw local` and the decode prediction read. Its flags are one table
 * (util/hlx_flags.h). */
#define _GNU_SOURCE
#include "hlx_bench_local.h"
#include "hlx_build_id.h"
#include "hlx_cmd.h"
#include "hlx_comm.h"
#include "hlx_hw_local.h"
#include "hlx_kernels.h"
#include "hlx_time.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HLX_BL_DRAM_BYTES ((size_t)1 << 30) /* streamed buffer: larger than the LLC seen */
/* DRAM timings: calls over this much KV or weights in turn across the streamed buffer (a
 * decode step's shard per layer, 1M tokens of the tiny preset) */
#define HLX_BL_DRAM_CALL ((size_t)128 << 20)

/* The flags, parsed from the table below. */
typedef struct hlx_bl_args {
    const char *out;
    int         json, quiet, comm_child;
} hlx_bl_args_t;

#define HLX_BL_FLAG(_n, _t, _f, _meta, _help) \
    { _n, _t, NULL, 0, 0, 0, 0, NULL, offsetof(hlx_bl_args_t, _f), _meta, _help }

static const hlx_flag_t hlx_bl_flag_list[] = {
    HLX_BL_FLAG("out", HLX_FT_STRING, out, "FILE",
                "where to store it (default: HELIX_HW_FILE, else\n"
                "$XDG_CACHE_HOME/helix/hw-local.json, else\n"
                "~/.cache/helix/hw-local.json)"),
    HLX_BL_FLAG("json", HLX_FT_BOOL, json, NULL, "print the stored JSON instead of the table"),
    HLX_BL_FLAG("quiet", HLX_FT_BOOL, quiet, NULL, "print nothing but errors (not with --json)"),
    HLX_BL_FLAG("comm-child", HLX_FT_BOOL, comm_child, NULL,
                "internal: the collective part alone, one JSON line from rank\n"
                "0 (started by bench local itself under helixrun)"),
};

const hlx_flag_table_t hlx_bench_local_flags = {
    "bench local", hlx_bl_flag_list, sizeof(hlx_bl_flag_list) / sizeof(hlx_bl_flag_list[0]),
    NULL, 0,
};

static const char hlx_bl_usage_head[] =
"usage: helix bench local [--out FILE] [--json] [--quiet]\n"
"       (also: helix bench machine)\n"
"\n"
"Measures this machine in a few seconds and stores it as the hw file that\n"
"`helix plan --hw local` and `helix decode --json` (predicted_step_ms) read:\n"
"  - one core: STREAM-like read bandwidth and fp32 FMA peak;\n"
"  - the attention kernel (f32, bf16 and fp8 KV, the shapes of the runtime's models) with\n"
"    its KV in the last-level cache and streamed from DRAM: cost per call and per token;\n"
"  - the GEMM kernel at 1, 2, 4 and 8 rows (f32 and bf16 weights): weight GB/s;\n"
"    the kernel timings in five rounds, the median round kept;\n"
"  - the attention kernel streaming its KV from DRAM alone and with one kernel per\n"
"    core at once (the slowest of them: what the ranks sharing the memory wait for);\n"
"  - all-to-all, all-reduce and all-gather latency and bandwidth over the transport\n"
"    between 2 ranks of this host (link class shm; 10th percentile), and with more\n"
"    ranks than cores (median: the wait for the ranks sharing a core; the median of\n"
"    5 launches, each settling which ranks share a core).\n"
"Started alone, it runs its collective part under `helixrun -n 2` (found beside this\n"
"binary's build tree or on PATH).\n"
"\n"
"options:\n";

static const char hlx_bl_usage_tail[] =
"\n"
"exit status: 0 ok, 1 a measurement failed, 2 bad input\n";

/* ---- compute ---- */

/* CPU time of this thread, ns: kernel timings count the time the core ran them, not the
 * time another process held the core (a shared machine's load is not the machine's). */
static uint64_t hlx_bl_cpu_ns(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return hlx_now_ns();
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double hlx_bl_median(double *v, int n)
{
    int i, j;
    for (i = 1; i < n; i++)
        for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The middle of three values (the measurements taken in three rounds). */
static double hlx_bl_mid3(double a, double b, double c)
{
    return fmax(fmin(a, b), fmin(fmax(a, b), c));
}

/* Fills n 16-bit words with small bf16 values: read as bf16 or, in pairs, as f32, every
 * element is finite and below 2 in magnitude. */
static void hlx_bl_fill(uint16_t *p, size_t n, uint64_t seed)
{
    size_t i;
    for (i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        /* bf16 in [-0.5, 0.5) with an even low byte: read as fp8 KV too, no byte is one of
         * e4m3's NaNs (0x7f, 0xff), which some kernels scan for and route apart */
        p[i] = hlx_f32_to_bf16((float)((double)(seed >> 40) / (double)(1ull << 24)) - 0.5f) &
               0xfffeu;
    }
}

typedef struct hlx_bl_attn_ctx {
    const hlx_kernels_t *k;
    const char *kv;
    size_t span;              /* calls rotate over this many bytes of kv (cache-resident
                               * but not in the core's private caches), 0: no rotation */
    float *q, *o, *lse;
} hlx_bl_attn_ctx_t;

/* Where the i-th of a rotation of blocks of `bytes` starts inside span (0 if no room). */
static size_t hlx_bl_rot(size_t i, size_t bytes, size_t span)
{
    size_t slots = span > bytes ? span / ((bytes + 4095) / 4096 * 4096) : 1;
    return slots > 1 ? (i % slots) * ((bytes + 4095) / 4096 * 4096) : 0;
}

/* Seconds per call of call(arg), in CPU time: one call calibrates the inner repeats to at
 * least 2 ms a run, then the median of reps runs (3 when a call takes over 50 ms). CPU
 * time leaves out the time another process held the core; the median keeps what the core
 * typically gets from a memory it shares (the best run caught the quietest moment: on the
 * Zen 5 VM it predicted every step of a grid 5-28% too fast against the steps' medians). */
static double hlx_bl_typical(void (*call)(void *), void *arg, int reps)
{
    double first, v[16];
    int inner = 1, i, j;
    uint64_t t0 = hlx_bl_cpu_ns();

    call(arg); /* warm-up and calibration */
    first = (double)(hlx_bl_cpu_ns() - t0) * 1e-9;
    while (first * inner < 2e-3 && inner < 4096)
        inner *= 2;
    if (first > 0.05)
        reps = 3;
    if (reps > 16)
        reps = 16;
    for (i = 0; i < reps; i++) {
        t0 = hlx_bl_cpu_ns();
        for (j = 0; j < inner; j++)
            call(arg);
        v[i] = (double)(hlx_bl_cpu_ns() - t0) * 1e-9 / inner;
    }
    return hlx_bl_median(v, reps);
}

typedef struct hlx_bl_attn_call {
    const hlx_bl_attn_ctx_t *c;
    hlx_attn_desc_t d;
    size_t bytes, rot, voff;
} hlx_bl_attn_call_t;

/* One attention call on the next block of the rotation. */
static void hlx_bl_attn_call(void *arg)
{
    hlx_bl_attn_call_t *a = arg;
    size_t off = hlx_bl_rot(a->rot++, a->bytes, a->c->span);

    a->d.k = a->c->kv + off;
    a->d.v = a->c->kv + off + a->voff;
    a->c->k->attn(&a->d);
}

/* Seconds of one attention call over len tokens (inner repeats when short); warm: the
 * span is brought into the cache first. */
static double hlx_bl_attn_once(const hlx_bl_attn_ctx_t *c, hlx_dtype_t t, int group, int dk,
                               int dv, size_t len, int reps, int warm)
{
    size_t es = (size_t)hlx_dtype_bytes(t);
    hlx_bl_attn_call_t a = {
        .c = c, .bytes = len * (size_t)(dk + dv) * es, .voff = len * dk * es,
        .d = { .group = group, .dk = dk, .dv = dv, .len = len, .kv_dtype = t, .q = c->q,
               .k_stride = (size_t)dk, .v_stride = (size_t)dv,
               .scale = 1.0f / sqrtf((float)dk), .o = c->o, .lse = c->lse,
               /* hlx_bl_fill makes no NaN byte: timed as the runtime runs a shard whose
                * appends stored none */
               .kv_clean = 1 },
    };
    int i;

    for (i = 0; warm && i < 64 && c->span > a.bytes; i++) /* the whole span into the cache */
        hlx_bl_attn_call(&a);
    return hlx_bl_typical(hlx_bl_attn_call, &a, reps);
}

typedef struct hlx_bl_gemm_call {
    const hlx_kernels_t *k;
    const char *w;
    size_t span, bytes, rot;
    hlx_dtype_t t;
    int M, N, K;
    float *x, *y;
} hlx_bl_gemm_call_t;

/* W in the layout the runtime stores its projections in (strips of 16 columns where the
 * kernels read them fast: every N here is a multiple of 16, so the bytes are the same) */
static void hlx_bl_gemm_call(void *arg)
{
    hlx_bl_gemm_call_t *g = arg;

    g->k->gemm(g->M, g->N, g->K, g->x, g->w + hlx_bl_rot(g->rot++, g->bytes, g->span),
               g->k->w_s16 ? hlx_w_s16_of(g->t) : g->t, g->y, 0);
}

/* Seconds of one GEMM call (inner repeats when short); warm: the span is brought into the
 * cache first. */
static double hlx_bl_gemm_once(const hlx_kernels_t *k, const char *w, size_t span,
                               hlx_dtype_t t, int M, int N, int K, float *x, float *y, int reps,
                               int warm)
{
    hlx_bl_gemm_call_t g = { .k = k, .w = w, .span = span, .t = t, .M = M, .N = N, .K = K,
                             .x = x, .y = y,
                             .bytes = (size_t)N * K * (size_t)hlx_dtype_bytes(t) };
    int i;

    for (i = 0; warm && i < 256 && span > g.bytes && (size_t)i * g.bytes < 2 * span; i++)
        hlx_bl_gemm_call(&g);
    return hlx_bl_typical(hlx_bl_gemm_call, &g, reps);
}

/* Attention shapes: the runtime's presets that run here (tiny: group 4, head 32) and a
 * production-like GQA head (group 8, head 128). */
static const int hlx_bl_shapes[][2] = { { 4, 32 }, { 8, 128 } };
static const int hlx_bl_rows[] = { 1, 2, 4, 8 };

/* One core's read rate over buffers of 1 to 256 MiB (the best pass of a probe: later
 * passes find the buffer in whatever cache holds it), one round; returns the points
 * measured. */
static int hlx_bl_curve_round(double *gbps_out)
{
    double mib;
    int n = 0;

    for (mib = 1; mib <= 256 && n < HLX_HW_MAX_CURVE; mib *= 2) {
        double gbps = 0.0;
        if (hlx_kernels_probe_read_bw((size_t)mib << 20, 0.02, &gbps) != HLX_OK || !(gbps > 0))
            break;
        gbps_out[n++] = gbps;
    }
    return n;
}

/* The curve from nr rounds taken seconds apart (1 or 3: the median per size; the machine's
 * other tenants share the L3, and one round saw 40 GB/s at 32 MiB where the others saw
 * 62-88), and from it the last-level cache one core reaches, in MiB: the largest buffer
 * of that curve, from the first size up without a gap, read at least 1.3x as fast as DRAM.
 * sysfs may have no cache at all (a VM: 0 before) or the socket's whole L3 (480-508 MiB
 * on the machines here), of which one core reaches a part; its size, when there is one,
 * caps the measured one. */
static void hlx_bl_curve_finish(hlx_hw_local_t *hw, double rounds[][HLX_HW_MAX_CURVE],
                                int nr, int n, double sysfs_mib)
{
    double best = 0.0, mib = 1;
    int i, cached = 1;

    for (i = 0; i < n; i++, mib *= 2) {
        double g = nr == 3 ? hlx_bl_mid3(rounds[0][i], rounds[1][i], rounds[2][i])
                           : rounds[0][i];
        hw->curve_mib[i] = mib, hw->curve_gbps[i] = g;
        cached = cached && g >= 1.3 * hw->read_gbps && (sysfs_mib <= 0 || mib <= sysfs_mib);
        if (cached)
            best = mib;
    }
    hw->ncurve = n >= 2 ? n : 0;
    hw->llc_mib = best >= 2 ? best : sysfs_mib > 0 ? sysfs_mib : 2.0;
}

/* The kernels are timed in HLX_BL_KROUNDS rounds spread over the compute part (seconds),
 * each timing every shape once, and the median round kept per timing: timed all at once
 * (0.4 s of attention), a slow phase of the shared machine (tens of ms to seconds in which
 * a Zen 4 VM's core ran its attention at 0.6-0.7x, in cache or not) set every rate of a
 * run; over a grid, 5 of 18 runs read the tiny preset's bf16 rate at 8.2-10.9 ns a token
 * against 6.6-7.2 in the others. */
#define HLX_BL_KROUNDS 5
_Static_assert(HLX_BL_KROUNDS >= 4, "the curve's rounds 2, 3 follow kernel rounds 2, 4");
#define HLX_BL_GEMM_K 16384 /* DRAM GEMM: K x N weights of HLX_BL_DRAM_CALL bytes */
static const hlx_dtype_t hlx_bl_dts[2] = { HLX_DTYPE_F32, HLX_DTYPE_BF16 }; /* weights */
/* the KV types the runtime stores (fp8 compute-bound where bf16 is not: its own timings) */
static const hlx_dtype_t hlx_bl_kv_dts[] = { HLX_DTYPE_F32, HLX_DTYPE_BF16, HLX_DTYPE_FP8 };
#define HLX_BL_NKV ((int)(sizeof(hlx_bl_kv_dts) / sizeof(hlx_bl_kv_dts[0])))
/* in cache: 256, 384 and 512 square weights (0.25-1 MiB of f32: the matrices of a model
 * whose weights fit a last-level cache; larger ones stream from DRAM), a least-squares line
 * through the three (two points made one noisy timing a call cost of 26 us; 1024 x 1024,
 * 4 MiB, ran at half the small ones' rate with the prefetching kernel and set the line for
 * all) */
static const int hlx_bl_gemm_sq[3] = { 256, 384, 512 };

typedef struct hlx_bl_kbench {
    const hlx_kernels_t *k;  /* GEMMs */
    hlx_kernels_t ka[2][HLX_BL_NKV]; /* attention: the variant per shape and KV type */
    hlx_bl_attn_ctx_t c;
    const char *big;         /* HLX_BL_DRAM_BYTES, filled */
    size_t span;             /* "in cache" rotation */
    float *x, *y;
    /* seconds per round: attention [shape][type][64 KiB, 1 MiB, DRAM]; GEMM
     * [type][rows][256, 384, 512 square, DRAM (rows 1 and 8)] */
    double attn[2][HLX_BL_NKV][3][HLX_BL_KROUNDS], gemm[2][4][4][HLX_BL_KROUNDS];
} hlx_bl_kbench_t;

/* Tokens of the attention timings: 64 KiB and 1 MiB of KV in cache (cost per call and per
 * token), a DRAM call's worth. */
static void hlx_bl_attn_lens(hlx_dtype_t t, int d, size_t *l1, size_t *l2, size_t *ld)
{
    const double tok = 2.0 * d * hlx_dtype_bytes(t);

    *l1 = (size_t)(65536.0 / tok), *l2 = (size_t)(1048576.0 / tok);
    *ld = (size_t)((double)HLX_BL_DRAM_CALL / tok);
}

static int hlx_bl_gemm_dram_n(hlx_dtype_t t)
{
    return (int)((double)HLX_BL_DRAM_CALL / hlx_dtype_bytes(t) / HLX_BL_GEMM_K);
}

/* Round r of the kernel timings. DRAM: calls of a decode shard's size in turn across the
 * gigabyte, so none finds its operands in the cache (one call over all of it, median of
 * three, caught a slow phase in most runs: the tiny preset's bf16 rate read 7.8-9.6 ns a
 * token where its decode ran at 6.4-6.6, every 64K and 1M step predicted 1.1-1.5x too
 * slow). */
static void hlx_bl_kround(hlx_bl_kbench_t *b, int r)
{
    int si, ti, mi, j;

    for (si = 0; si < 2; si++)
        for (ti = 0; ti < HLX_BL_NKV; ti++) {
            const int g = hlx_bl_shapes[si][0], d = hlx_bl_shapes[si][1];
            const hlx_dtype_t t = hlx_bl_kv_dts[ti];
            size_t l1, l2, ld;

            hlx_bl_attn_lens(t, d, &l1, &l2, &ld);
            b->c.k = &b->ka[si][ti];
            b->c.span = b->span;
            b->attn[si][ti][0][r] = hlx_bl_attn_once(&b->c, t, g, d, d, l1, 3, 1);
            b->attn[si][ti][1][r] = hlx_bl_attn_once(&b->c, t, g, d, d, l2, 3, 1);
            b->c.span = HLX_BL_DRAM_BYTES;
            b->attn[si][ti][2][r] = hlx_bl_attn_once(&b->c, t, g, d, d, ld, 2, 0);
        }
    for (ti = 0; ti < 2; ti++)
        for (mi = 0; mi < 4; mi++) {
            const int M = hlx_bl_rows[mi];
            for (j = 0; j < 3; j++)
                b->gemm[ti][mi][j][r] =
                    hlx_bl_gemm_once(b->k, b->big, b->span, hlx_bl_dts[ti], M, hlx_bl_gemm_sq[j],
                                     hlx_bl_gemm_sq[j], b->x, b->y, 3, 1);
            if (mi == 0 || mi == 3)
                b->gemm[ti][mi][3][r] =
                    hlx_bl_gemm_once(b->k, b->big, HLX_BL_DRAM_BYTES, hlx_bl_dts[ti], M,
                                     hlx_bl_gemm_dram_n(hlx_bl_dts[ti]), HLX_BL_GEMM_K, b->x,
                                     b->y, 2, 0);
        }
}

static int hlx_bl_compute(hlx_hw_local_t *hw, char *err, size_t errlen)
{
    double rounds[3][HLX_HW_MAX_CURVE], sysfs_mib;
    int ncurve;
    hlx_kernels_t k;
    hlx_bl_kbench_t b = { .k = &k };
    hlx_bl_attn_ctx_t *c = &b.c;
    uint16_t *big;
    int si, ti, mi, r;

    if (hlx_kernels_init(NULL, &k) != HLX_OK) {
        snprintf(err, errlen, "no kernel variant runs on this CPU");
        return 1;
    }
    snprintf(hw->kernels, sizeof(hw->kernels), "%s", k.name);
    hw->gemm_pass_rows[0] = k.gemm_pass_rows[0];
    hw->gemm_pass_rows[1] = k.gemm_pass_rows[1];
    snprintf(hw->build, sizeof(hw->build), "%s", HLX_BUILD_ID);
    if (hlx_kernels_probe_read_bw(HLX_BL_DRAM_BYTES, 0.25, &hw->read_gbps) != HLX_OK ||
        hlx_kernels_probe_fma_peak(0.2, &hw->fma_gflops) != HLX_OK) {
        snprintf(err, errlen, "cannot measure this core's read bandwidth and FMA peak");
        return 1;
    }
    sysfs_mib = hw->llc_mib;
    ncurve = hlx_bl_curve_round(rounds[0]);
    hlx_bl_curve_finish(hw, rounds, 1, ncurve, sysfs_mib); /* the span below: round 1 */
    big = hlx_kernels_alloc_huge(HLX_BL_DRAM_BYTES);
    b.x = calloc(8 * HLX_BL_GEMM_K, sizeof(float));
    b.y = calloc(8 * 32768, sizeof(float));
    c->q = calloc(128 * 128, sizeof(float));
    c->o = calloc(128 * 128, sizeof(float));
    c->lse = calloc(128, sizeof(float));
    if (!big || !b.x || !b.y || !c->q || !c->o || !c->lse) {
        snprintf(err, errlen, "cannot allocate %zu MiB for the measurements",
                 HLX_BL_DRAM_BYTES >> 20);
        hlx_kernels_free_huge(big); free(b.x); free(b.y); free(c->q); free(c->o); free(c->lse);
        return 1;
    }
    hlx_bl_fill(big, HLX_BL_DRAM_BYTES / 2, 1);
    hlx_bl_fill((uint16_t *)b.x, 8 * HLX_BL_GEMM_K * 2, 2);
    hlx_bl_fill((uint16_t *)c->q, 128 * 128 * 2, 3);
    b.big = c->kv = (const char *)big;
    /* "in cache": rotating over a quarter of the last-level cache (4 to 64 MiB), so each
     * call finds its operands in the shared cache but not in the core's own, as in a
     * decode step where every layer's weights and KV come round once per step */
    b.span = (size_t)hlx_hw_cached_span_mib(hw->llc_mib) << 20;
    /* the variant the runtime takes for this KV type and shape on one core (f32 and fp8
     * KV: the blocked-key avx512 kernel where auto's bf16 choice is amx) */
    for (si = 0; si < 2; si++)
        for (ti = 0; ti < HLX_BL_NKV; ti++) {
            const hlx_kernels_shape_t sh = { hlx_bl_shapes[si][1], hlx_bl_shapes[si][0], 0, 1 };
            if (hlx_kernels_init_shape(NULL, hlx_bl_kv_dts[ti], &sh, &b.ka[si][ti], NULL, 0) !=
                HLX_OK)
                b.ka[si][ti] = k;
        }
    /* the kernels in rounds, the curve's second and third rounds between them (its first
     * sized the span) */
    for (r = 0; r < HLX_BL_KROUNDS; r++) {
        hlx_bl_kround(&b, r);
        if ((r == 1 || r == 3) && hlx_bl_curve_round(rounds[(r + 1) / 2]) != ncurve)
            memcpy(rounds[(r + 1) / 2], rounds[0], sizeof(rounds[0]));
    }
    for (si = 0; si < 2; si++)
        for (ti = 0; ti < HLX_BL_NKV; ti++) {
            const int g = hlx_bl_shapes[si][0], d = hlx_bl_shapes[si][1];
            const hlx_dtype_t t = hlx_bl_kv_dts[ti];
            size_t l1, l2, ld;
            double t1 = hlx_bl_median(b.attn[si][ti][0], HLX_BL_KROUNDS);
            double t2 = hlx_bl_median(b.attn[si][ti][1], HLX_BL_KROUNDS);
            double td = hlx_bl_median(b.attn[si][ti][2], HLX_BL_KROUNDS);
            double slope, call;
            hlx_bl_attn_lens(t, d, &l1, &l2, &ld);
            slope = (t2 - t1) / (double)(l2 - l1);
            if (!(slope > 0))
                slope = t2 / (double)l2;
            call = fmax(0.0, t1 - slope * (double)l1);
            hw->attn[hw->nattn++] = (hlx_hw_attn_t){ t, g, d, d, 1, call * 1e6, slope * 1e9 };
            hw->attn[hw->nattn++] = (hlx_hw_attn_t){ t, g, d, d, 0, call * 1e6,
                                                     fmax(slope, (td - call) / (double)ld) * 1e9 };
        }
    for (ti = 0; ti < 2; ti++)
        for (mi = 0; mi < 4; mi++) {
            const hlx_dtype_t t = hlx_bl_dts[ti];
            const int M = hlx_bl_rows[mi];
            const double es = hlx_dtype_bytes(t);
            double tb[3], bb[3], mb = 0, mt = 0, sxx = 0, sxy = 0, slope, call, td, bd;
            int j;

            for (j = 0; j < 3; j++) {
                tb[j] = hlx_bl_median(b.gemm[ti][mi][j], HLX_BL_KROUNDS);
                bb[j] = (double)hlx_bl_gemm_sq[j] * hlx_bl_gemm_sq[j] * es;
                mb += bb[j] / 3, mt += tb[j] / 3;
            }
            for (j = 0; j < 3; j++)
                sxx += (bb[j] - mb) * (bb[j] - mb), sxy += (bb[j] - mb) * (tb[j] - mt);
            slope = sxy / sxx;
            if (!(slope > 0))
                slope = tb[2] / bb[2];
            call = fmax(0.0, mt - slope * mb);
            hw->gemm[hw->ngemm++] = (hlx_hw_gemm_t){ t, M, 1, call * 1e6, 1e-9 / slope };
            if (mi == 0 || mi == 3) {
                td = hlx_bl_median(b.gemm[ti][mi][3], HLX_BL_KROUNDS);
                bd = (double)HLX_BL_GEMM_K * hlx_bl_gemm_dram_n(t) * es;
                hw->gemm[hw->ngemm++] = (hlx_hw_gemm_t){ t, M, 0, call * 1e6,
                                                         bd / fmax(td - call, 1e-9) * 1e-9 };
            }
        }
    hlx_bl_curve_finish(hw, rounds, 3, ncurve, sysfs_mib);
    hlx_kernels_free_huge(big); free(b.x); free(b.y); free(c->q); free(c->o); free(c->lse);
    return 0;
}

/* ---- DRAM shared by concurrent ranks ---- */

/* Each "reader" is the attention kernel the runtime runs by default (bf16 KV, group 4,
 * head 32: the tiny preset) over a KV stream of its own: what ranks sharing the memory
 * get each is what their kernels get, and a kernel that computes while it reads asks less
 * of the memory than a bare read loop (on the Zen 5 VM two bare readers said 1.52x slower
 * each while two decode ranks streamed as fast as one alone). */
#define HLX_BL_READER_BYTES ((size_t)512 << 20) /* per reader: past the LLC of two */
#define HLX_BL_READER_PASSES 5
#define HLX_BL_READER_GROUP 4
#define HLX_BL_READER_HEAD 32

typedef struct hlx_bl_reader {
    atomic_int *go;    /* the readers start their passes together */
    int    cpu;
    const hlx_kernels_t *k;
    uint16_t **buf;    /* this reader's KV: allocated and filled by its first round, kept
                          for the next rounds (the caller frees it) */
    double gbps;  /* median pass, KV bytes per thread CPU second */
} hlx_bl_reader_t;

/* One reader: pinned, its own KV, every reader starts its passes together. CPU time
 * counts the cycles stalled on memory and not the time another process held the core,
 * so the figure is what sharing the memory (not the core) costs. */
static void *hlx_bl_reader_main(void *arg)
{
    hlx_bl_reader_t *r = arg;
    const size_t tok = 2 * HLX_BL_READER_HEAD * sizeof(uint16_t);
    const size_t len = HLX_BL_READER_BYTES / tok;
    float q[HLX_BL_READER_GROUP * HLX_BL_READER_HEAD], o[HLX_BL_READER_GROUP * HLX_BL_READER_HEAD];
    float lse[HLX_BL_READER_GROUP];
    double rates[HLX_BL_READER_PASSES];
    uint16_t *p = *r->buf;
    hlx_attn_desc_t d;
    cpu_set_t one;
    int pass;

    CPU_ZERO(&one);
    CPU_SET(r->cpu, &one);
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    if (p == NULL) { /* first touch on the reader's own core */
        p = hlx_kernels_alloc_huge(HLX_BL_READER_BYTES);
        if (p)
            hlx_bl_fill(p, HLX_BL_READER_BYTES / sizeof(uint16_t), (uint64_t)r->cpu + 11);
        *r->buf = p;
    }
    hlx_bl_fill((uint16_t *)q, sizeof(q) / 2, 7); /* pairs of bf16: small f32 values */
    d = (hlx_attn_desc_t){ .group = HLX_BL_READER_GROUP, .dk = HLX_BL_READER_HEAD,
                           .dv = HLX_BL_READER_HEAD, .len = len, .kv_dtype = HLX_DTYPE_BF16,
                           .q = q, .k = p, .v = (const char *)p + len * tok / 2,
                           .k_stride = HLX_BL_READER_HEAD, .v_stride = HLX_BL_READER_HEAD,
                           .scale = 1.0f / sqrtf((float)HLX_BL_READER_HEAD), .o = o,
                           .lse = lse };
    while (!atomic_load(r->go))
        sched_yield();
    for (pass = 0; p && pass < HLX_BL_READER_PASSES; pass++) {
        uint64_t t0 = hlx_bl_cpu_ns();
        r->k->attn(&d);
        rates[pass] = (double)HLX_BL_READER_BYTES /
                      fmax((double)(hlx_bl_cpu_ns() - t0) * 1e-9, 1e-9) * 1e-9;
    }
    r->gbps = p ? hlx_bl_median(rates, HLX_BL_READER_PASSES) : 0;
    return NULL;
}

/* The k-th CPU (from 0) of set, or -1 when it has fewer. */
static int hlx_bl_nth_cpu(const cpu_set_t *set, int k)
{
    int cpu;

    for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
        if (CPU_ISSET(cpu, set) && k-- == 0)
            return cpu;
    return -1;
}

/* KV GB/s of the slowest of n readers at once on the first n cores of this process: the
 * ranks' collectives wait for the slowest rank (with the mean, 7 of the 8 two-rank 64K and
 * 1M points of a Zen 4 grid were predicted faster than measured, 0.80-0.98, where the
 * single-rank ones sat at 1.00-1.04; the two readers of a round differed by up to 1.9x). */
static double hlx_bl_readers(int n, const hlx_kernels_t *k, uint16_t **bufs)
{
    hlx_bl_reader_t r[HLX_HW_MAX_READERS];
    pthread_t th[HLX_HW_MAX_READERS];
    atomic_int go = 0;
    cpu_set_t set;
    double slowest = 0;
    int i, started = 0;

    if (n < 1 || n > HLX_HW_MAX_READERS || sched_getaffinity(0, sizeof(set), &set) != 0)
        return 0;
    for (i = 0; i < n; i++) {
        const int cpu = hlx_bl_nth_cpu(&set, i);
        r[i] = (hlx_bl_reader_t){ .go = &go, .cpu = cpu >= 0 ? cpu : 0, .k = k,
                                  .buf = &bufs[i] };
    }
    for (i = 0; i < n && pthread_create(&th[i], NULL, hlx_bl_reader_main, &r[i]) == 0; i++)
        started++;
    atomic_store(&go, 1);
    for (i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        if (i == 0 || r[i].gbps < slowest)
            slowest = r[i].gbps;
    }
    return started == n ? slowest : 0;
}

/* ---- collectives (every rank of the job) ---- */

typedef hlx_status_t (*hlx_bl_op_fn)(hlx_comm_t *w, void *buf, size_t bytes, void *aux);

static hlx_status_t hlx_bl_a2a(hlx_comm_t *w, void *buf, size_t bytes, void *aux)
{
    int n = hlx_comm_size(w), j;
    size_t cnt[256], dis[256];
    for (j = 0; j < n && j < 256; j++)
        cnt[j] = bytes, dis[j] = (size_t)j * bytes;
    return hlx_comm_alltoallv(w, buf, cnt, dis, aux, cnt, dis);
}

static hlx_status_t hlx_bl_ar(hlx_comm_t *w, void *buf, size_t bytes, void *aux)
{
    (void)aux;
    return hlx_comm_allreduce_sum_f32(w, buf, bytes / sizeof(float));
}

static hlx_status_t hlx_bl_ag(hlx_comm_t *w, void *buf, size_t bytes, void *aux)
{
    return hlx_comm_allgather(w, buf, bytes, aux);
}

/* Seconds of op at bytes, 10th percentile (each rank's own clock; a barrier before each
 * run). */
/* Cores this process may run on (every rank of one host sees the same set). */
/* The collective part's cores: those its ranks may run on, taken before a rank binds
 * itself to one of them (0: not taken yet) */
static int hlx_bl_job_cores;

static int hlx_bl_ncores(void)
{
    cpu_set_t set;

    if (hlx_bl_job_cores > 0)
        return hlx_bl_job_cores;
    return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

static hlx_status_t hlx_bl_time(hlx_comm_t *w, hlx_bl_op_fn op, void *buf, size_t bytes,
                                void *aux, int reps, double *s_p)
{
    double v[256];
    hlx_status_t st;
    int i;

    for (i = 0; i < 8; i++)
        if ((st = op(w, buf, bytes, aux)) != HLX_OK)
            return st;
    for (i = 0; i < reps && i < 256; i++) {
        uint64_t t0;
        if ((st = hlx_comm_barrier(w)) != HLX_OK)
            return st;
        t0 = hlx_now_ns();
        if ((st = op(w, buf, bytes, aux)) != HLX_OK)
            return st;
        v[i] = (double)(hlx_now_ns() - t0) * 1e-9;
    }
    /* with a core per rank, the 10th percentile: the collective when the ranks had their
     * cores (as the kernel timings; the median of a shared machine measures its other
     * tenants). More ranks than cores: the median, because there every collective waits
     * for the ranks sharing a core to be scheduled in turn, and that wait is the cost */
    hlx_bl_median(v, i); /* sorts */
    *s_p = hlx_comm_size(w) > hlx_bl_ncores() ? v[i / 2] : v[i / 10];
    return HLX_OK;
}

/* Alpha (us) and bandwidth (GB/s) of the three collectives from a small and a large size;
 * M = mul x bytes. Three rounds, each timing every collective at both sizes, and the
 * fastest round per point: on a shared machine one round can catch a tenant on a rank's
 * core for its whole length (an all-reduce alpha of 11 us in one run, 0.7 in the next). */
#define HLX_BL_ROUNDS 3

static hlx_status_t hlx_bl_fit_all(hlx_comm_t *w, void *buf, void *aux, hlx_hw_coll_t *c)
{
    static const hlx_bl_op_fn ops[3] = { hlx_bl_a2a, hlx_bl_ar, hlx_bl_ag };
    const size_t s1 = 256, s2 = 256 * 1024;
    const double n = hlx_comm_size(w), mul[3] = { n - 1, 1, n };
    double t1[3], t2[3], us[3], gbps[3];
    hlx_status_t st;
    int r, k;

    for (r = 0; r < HLX_BL_ROUNDS; r++)
        for (k = 0; k < 3; k++) {
            double a, b;
            if ((st = hlx_bl_time(w, ops[k], buf, s1, aux, 101, &a)) != HLX_OK ||
                (st = hlx_bl_time(w, ops[k], buf, s2, aux, 21, &b)) != HLX_OK)
                return st;
            t1[k] = r == 0 ? a : fmin(t1[k], a);
            t2[k] = r == 0 ? b : fmin(t2[k], b);
        }
    for (k = 0; k < 3; k++) {
        gbps[k] = t2[k] > t1[k] ? mul[k] * (double)(s2 - s1) / (t2[k] - t1[k]) * 1e-9
                                : mul[k] * s2 / t2[k] * 1e-9;
        us[k] = fmax(0.0, t1[k] - mul[k] * s1 / (gbps[k] * 1e9)) * 1e6;
    }
    c->a2a_us = us[0], c->a2a_gbps = gbps[0];
    c->ar_us = us[1], c->ar_gbps = gbps[1];
    c->ag_us = us[2], c->ag_gbps = gbps[2];
    return HLX_OK;
}

/* A collective as a decode step meets it: right after each rank computed for about 30 us
 * (two GEMMs over weights from the last-level cache, a small model's phase, the same work
 * on every rank). From the end of a rank's compute to the end of a 1 KiB all-reduce: the
 * latency with the transport's lines gone cold, the ranks arriving apart, the wake-up
 * (on the Zen 5 VM 1.6-4.8 us with two ranks against 0.7 us back to back); with more ranks
 * than cores also the turn of the ranks sharing the core, less their compute (which the
 * predictor counts in its share: 160 us of waiting after 30 us of compute counted as 130).
 * Per rank the median of 101, then the mean over the ranks (each rank reports its own
 * waits). A line through several compute lengths also gave a wait per second of compute
 * (the slower core's lead), but it moved between 0 and 0.2 from minute to minute and
 * predicted worse than none. */
static hlx_status_t hlx_bl_after_compute(hlx_comm_t *w, void *buf, hlx_hw_coll_t *c)
{
    enum { HLX_BL_AC_N = 512, HLX_BL_AC_MATS = 4, HLX_BL_AC_REPS = 101, HLX_BL_AC_WORK = 2 };
    const size_t mat = (size_t)HLX_BL_AC_N * HLX_BL_AC_N;
    double v[HLX_BL_AC_REPS], cv[HLX_BL_AC_REPS];
    float mine[2];
    hlx_kernels_t k;
    float *wts, *x, *y;
    hlx_status_t st = HLX_OK;
    int i, j, g = 0, n = hlx_comm_size(w);
    double share;

    if (hlx_kernels_init(NULL, &k) != HLX_OK)
        return HLX_ERR_INVALID;
    wts = malloc(mat * HLX_BL_AC_MATS * sizeof(float));
    x = calloc(HLX_BL_AC_N, sizeof(float));
    y = calloc(HLX_BL_AC_N, sizeof(float));
    if (!wts || !x || !y) {
        free(wts); free(x); free(y);
        return HLX_ERR_NOMEM;
    }
    hlx_bl_fill((uint16_t *)wts, mat * HLX_BL_AC_MATS * 2, 5);
    hlx_bl_fill((uint16_t *)x, HLX_BL_AC_N * 2, 6);
    for (i = 0; i < HLX_BL_AC_REPS && st == HLX_OK; i++) {
        uint64_t t0 = hlx_now_ns(), t1;
        for (j = 0; j < HLX_BL_AC_WORK; j++, g++)
            k.gemm(1, HLX_BL_AC_N, HLX_BL_AC_N, x, wts + (size_t)(g % HLX_BL_AC_MATS) * mat,
                   HLX_DTYPE_F32, y, 0);
        t1 = hlx_now_ns();
        st = hlx_comm_allreduce_sum_f32(w, (float *)buf, 256);
        v[i] = (double)(hlx_now_ns() - t1) * 1e-9;
        cv[i] = (double)(t1 - t0) * 1e-9;
    }
    free(wts); free(x); free(y);
    mine[0] = (float)hlx_bl_median(v, HLX_BL_AC_REPS);
    mine[1] = (float)hlx_bl_median(cv, HLX_BL_AC_REPS);
    if (st != HLX_OK || (st = hlx_comm_barrier(w)) != HLX_OK ||
        (st = hlx_comm_allreduce_sum_f32(w, mine, 2)) != HLX_OK)
        return st;
    share = fmax(1.0, (double)n / hlx_bl_ncores());
    c->step_us = fmax(0.0, (mine[0] - (share - 1.0) * mine[1]) / n) * 1e6;
    return HLX_OK;
}

/* The collective part's ranks one to a core, the local_rank-th CPU this process may run
 * on, when they have a core each (as the decode's HELIX_BIND=auto binds its ranks; more
 * ranks than cores stay unbound, as the decode's do). Left to the scheduler, the two ranks
 * shared one of two vCPUs in about a third of the runs on a Zen 4 VM: the after-compute
 * wait (step_us) read 48 us instead of 1-5, and the two-rank predictions moved 3x with it.
 * Returns the CPU, or -1 when it did not bind. */
static int hlx_bl_bind_rank(int local_rank, int local_size)
{
    cpu_set_t allowed, one;
    int cpu;

    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 ||
        local_size > CPU_COUNT(&allowed) || (cpu = hlx_bl_nth_cpu(&allowed, local_rank)) < 0)
        return -1;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(0, sizeof(one), &one) == 0 ? cpu : -1;
}

/* Measures the collectives over the world of this job; rank 0 prints one JSON object. */
static int hlx_bl_comm_child(void)
{
    hlx_comm_params_t cp;
    hlx_boot_t *boot = NULL;
    hlx_boot_info_t info;
    hlx_comm_t *w = NULL;
    hlx_hw_coll_t c = { 0 };
    hlx_status_t st;
    char host[64] = "", *hosts = NULL;
    void *buf = NULL, *aux = NULL;
    int n, j, cpu, same = 1, rc = 1;

    hlx_comm_params_default(&cp);
    if ((st = hlx_boot_init(cp.timeout_s, &boot)) != HLX_OK) {
        fprintf(stderr, "helix bench local: bootstrap failed: %s\n", hlx_status_str(st));
        return 1;
    }
    hlx_boot_get_info(boot, &info);
    n = info.size;
    if (n < 2 || n > 256) {
        fprintf(stderr, "helix bench local: the collective part needs 2 to 256 ranks, not %d\n", n);
        goto out;
    }
    hlx_bl_job_cores = hlx_bl_ncores();
    cpu = hlx_bl_bind_rank(info.local_rank, info.local_size);
    if (getenv("HELIX_BENCH_LOCAL_CPU") != NULL) /* tests: say where the rank runs */
        fprintf(stderr, "helix bench local: rank %d bound to cpu %d\n", info.rank, cpu);
    if ((st = hlx_comm_world(boot, &cp, &w)) != HLX_OK) {
        fprintf(stderr, "helix bench local: transport: %s\n", hlx_status_str(st));
        goto out;
    }
    gethostname(host, sizeof(host) - 1);
    hosts = calloc((size_t)n, sizeof(host));
    buf = calloc((size_t)n, 256 * 1024);
    aux = calloc((size_t)n, 256 * 1024);
    if (!hosts || !buf || !aux)
        goto out;
    if ((st = hlx_comm_allgather(w, host, sizeof(host), hosts)) != HLX_OK)
        goto fail;
    for (j = 1; j < n; j++)
        same &= !strcmp(hosts, hosts + (size_t)j * sizeof(host));
    c.ranks = n;
    if ((st = hlx_bl_fit_all(w, buf, aux, &c)) != HLX_OK ||
        (st = hlx_bl_after_compute(w, buf, &c)) != HLX_OK)
        goto fail;
    if (info.rank == 0)
        printf("{\"link\": \"%s\", \"ranks\": %d, \"a2a_us\": %.4g, \"a2a_gbps\": %.4g, "
               "\"ar_us\": %.4g, \"ar_gbps\": %.4g, \"ag_us\": %.4g, \"ag_gbps\": %.4g, "
               "\"step_us\": %.4g}\n",
               same ? "shm" : "tcp", n, c.a2a_us, c.a2a_gbps, c.ar_us, c.ar_gbps, c.ag_us,
               c.ag_gbps, c.step_us);
    fflush(stdout);
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "helix bench local: collective measurement failed: %s\n", hlx_status_str(st));
out:
    free(hosts); free(buf); free(aux);
    if (w)
        hlx_comm_destroy(w);
    hlx_boot_fini(boot);
    return rc;
}

/* helixrun beside the build tree (build/cli/helix -> build/launcher/helixrun), beside an
 * installed helix, or on PATH. */
static int hlx_bl_find_launcher(char *out, size_t len, char *self, size_t selflen)
{
    char exe[PATH_MAX - 64], *slash;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    if (n <= 0)
        return -1;
    exe[n] = '\0';
    snprintf(self, selflen, "%s", exe);
    slash = strrchr(exe, '/');
    if (slash == NULL)
        return -1;
    *slash = '\0';
    snprintf(out, len, "%s/../launcher/helixrun", exe);
    if (access(out, X_OK) == 0)
        return 0;
    snprintf(out, len, "%s/helixrun", exe);
    if (access(out, X_OK) == 0)
        return 0;
    snprintf(out, len, "helixrun");
    return 0;
}

/* Runs the collective part under helixrun -n ranks and parses rank 0's line. */
static int hlx_bl_comm_spawn(int ranks, hlx_hw_local_t *hw, int shared, char *err, size_t errlen)
{
    char launcher[PATH_MAX], self[PATH_MAX], cmd[3 * PATH_MAX], line[1024] = "";
    json_t *o;
    json_error_t je;
    FILE *p;
    hlx_link_t lk;
    hlx_hw_coll_t c = { 0 };
    int st;

    if (hlx_bl_find_launcher(launcher, sizeof(launcher), self, sizeof(self)) != 0) {
        snprintf(err, errlen, "cannot find this binary to start it under helixrun");
        return 1;
    }
    /* the shared measurement oversubscribes on purpose: helixrun's warning is not news */
    snprintf(cmd, sizeof(cmd), "'%s' -n %d %s'%s' bench local --comm-child", launcher, ranks,
             shared ? "--oversubscribe " : "", self);
    p = popen(cmd, "r");
    if (p == NULL) {
        snprintf(err, errlen, "cannot start %s", cmd);
        return 1;
    }
    while (fgets(line, sizeof(line), p) != NULL)
        if (strstr(line, "\"link\""))
            break;
    while (fgetc(p) != EOF) /* drain */
        ;
    st = pclose(p);
    if (st != 0 || !strstr(line, "\"link\"")) {
        snprintf(err, errlen, "%s failed (status %d): is helixrun built or on PATH?", cmd,
                 WIFEXITED(st) ? WEXITSTATUS(st) : st);
        return 1;
    }
    o = json_loads(strchr(line, '{'), 0, &je);
    if (o == NULL || json_unpack(o, "{s:i, s:F, s:F, s:F, s:F, s:F, s:F, s:F}", "ranks",
                                 &c.ranks, "a2a_us", &c.a2a_us, "a2a_gbps", &c.a2a_gbps,
                                 "ar_us", &c.ar_us, "ar_gbps", &c.ar_gbps, "ag_us", &c.ag_us,
                                 "ag_gbps", &c.ag_gbps, "step_us", &c.step_us) != 0 ||
        hlx_link_parse(json_string_value(json_object_get(o, "link")), &lk) != 0) {
        snprintf(err, errlen, "unexpected output of %s: %s", cmd, line);
        json_decref(o);
        return 1;
    }
    json_decref(o);
    if (shared)
        hw->shared = c;
    else
        hw->link[lk] = c;
    return 0;
}

/* The collectives with more ranks than cores, each figure the median of HLX_BL_SHARED
 * launches: which ranks share a core, and when the scheduler switches them, is settled
 * per launch and holds for its whole length (the in-step wait of ten launches in a row on
 * the Zen 3 VM: 17 to 177 us), as it does for each decode run, so the description is the
 * median launch's, as the decode's step is the median of its runs. 0.4 s a launch. */
#define HLX_BL_SHARED 5

static int hlx_bl_shared(hlx_hw_local_t *hw, char *err, size_t errlen)
{
    const int ranks = 2 * hw->cores > 2 ? 2 * hw->cores : 4;
    double v[7][HLX_BL_SHARED];
    hlx_hw_coll_t *c = &hw->shared;
    int i;

    for (i = 0; i < HLX_BL_SHARED; i++) {
        if (hlx_bl_comm_spawn(ranks, hw, 1, err, errlen) != 0)
            return 1;
        v[0][i] = c->a2a_us, v[1][i] = c->a2a_gbps, v[2][i] = c->ar_us;
        v[3][i] = c->ar_gbps, v[4][i] = c->ag_us, v[5][i] = c->ag_gbps, v[6][i] = c->step_us;
    }
    c->a2a_us = hlx_bl_median(v[0], HLX_BL_SHARED), c->a2a_gbps = hlx_bl_median(v[1], HLX_BL_SHARED);
    c->ar_us = hlx_bl_median(v[2], HLX_BL_SHARED), c->ar_gbps = hlx_bl_median(v[3], HLX_BL_SHARED);
    c->ag_us = hlx_bl_median(v[4], HLX_BL_SHARED), c->ag_gbps = hlx_bl_median(v[5], HLX_BL_SHARED);
    c->step_us = hlx_bl_median(v[6], HLX_BL_SHARED);
    return 0;
}

/* ---- machine facts ---- */

static void hlx_bl_facts(hlx_hw_local_t *hw)
{
    cpu_set_t set;
    FILE *f;
    char line[512];
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    time_t now = time(NULL);
    struct tm tm;

    gethostname(hw->host, sizeof(hw->host) - 1);
    hw->cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    hw->mem_gib = pages > 0 && psz > 0 ? (double)pages * psz / 1073741824.0 : 1.0;
    f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            char *s = strchr(line, ':') + 1;
            while (*s == ' ')
                s++;
            s[strcspn(s, "\n")] = '\0';
            snprintf(hw->cpu, sizeof(hw->cpu), "%s", s);
            break;
        }
    if (f)
        fclose(f);
    hw->llc_mib = 0;
    f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
    if (f == NULL)
        f = fopen("/sys/devices/system/cpu/cpu0/cache/index2/size", "r");
    if (f && fgets(line, sizeof(line), f)) {
        char *end;
        double v = strtod(line, &end);
        hw->llc_mib = *end == 'K' ? v / 1024.0 : *end == 'M' ? v : v / 1048576.0;
    }
    if (f)
        fclose(f);
    gmtime_r(&now, &tm);
    strftime(hw->measured, sizeof(hw->measured), "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void hlx_bench_local_print(FILE *f, const hlx_hw_local_t *hw, const char *path)
{
    int i;

    fprintf(f, "machine: %s, %s, %d cores, %.1f GiB, LLC %.0f MiB, kernels %s (measured %s in "
               "%.1f s by helix %s)\n", hw->host, hw->cpu, hw->cores, hw->mem_gib, hw->llc_mib,
            hw->kernels, hw->measured, hw->seconds, hw->build[0] ? hw->build : "(build not recorded)");
    fprintf(f, "one core: read %.2f GB/s, fp32 FMA peak %.1f GFLOP/s\n", hw->read_gbps,
            hw->fma_gflops);
    if (hw->dram_readers > 0)
        fprintf(f, "DRAM shared (attention KV per core, CPU time): %.2f GB/s alone, %.2f GB/s "
                   "with %d at once (%.2fx slower each)\n", hw->dram_gbps_1, hw->dram_gbps_n,
                hw->dram_readers, hw->dram_gbps_1 / hw->dram_gbps_n);
    if (hw->ncurve > 0) {
        int c;
        fprintf(f, "read by buffer (MiB: GB/s):");
        for (c = 0; c < hw->ncurve; c++)
            fprintf(f, " %g: %.1f", hw->curve_mib[c], hw->curve_gbps[c]);
        fprintf(f, "\n");
    }
    fprintf(f, "\n%-10s %5s %4s %4s %-6s %9s %9s %10s\n", "attention", "group", "dk", "dv",
            "KV in", "us/call", "ns/token", "KV GB/s");
    for (i = 0; i < hw->nattn; i++) {
        const hlx_hw_attn_t *a = &hw->attn[i];
        fprintf(f, "%-10s %5d %4d %4d %-6s %9.2f %9.3f %10.2f\n", hlx_dtype_name(a->kv_dtype),
                a->group, a->dk, a->dv, a->cached ? "cache" : "DRAM", a->call_us, a->ns_tok,
                (a->dk + a->dv) * hlx_dtype_bytes(a->kv_dtype) / a->ns_tok);
    }
    fprintf(f, "\n%-10s %4s %-6s %9s %12s\n", "gemm", "rows", "W in", "us/call", "weight GB/s");
    for (i = 0; i < hw->ngemm; i++) {
        const hlx_hw_gemm_t *g = &hw->gemm[i];
        fprintf(f, "%-10s %4d %-6s %9.2f %12.2f\n", hlx_dtype_name(g->w_dtype), g->m,
                g->cached ? "cache" : "DRAM", g->call_us, g->gbps);
    }
    fprintf(f, "\n%-12s %5s %8s %9s %8s %9s %8s %9s %11s\n", "link", "ranks", "a2a us",
            "a2a GB/s", "ar us", "ar GB/s", "ag us", "ag GB/s", "in-step us");
    for (i = 0; i <= HLX_LINK_COUNT; i++) {
        const hlx_hw_coll_t *c = i < HLX_LINK_COUNT ? &hw->link[i] : &hw->shared;
        if (c->ranks == 0)
            continue;
        fprintf(f, "%-12s %5d %8.2f %9.3f %8.2f %9.3f %8.2f %9.3f %11.2f\n",
                i < HLX_LINK_COUNT ? hlx_link_name((hlx_link_t)i) : "shm (shared)", c->ranks,
                c->a2a_us, c->a2a_gbps, c->ar_us, c->ar_gbps, c->ag_us, c->ag_gbps,
                c->step_us);
    }
    if (path)
        fprintf(f, "\nstored in %s\n", path);
}

int hlx_bench_local_measure(const char *path, int quiet, hlx_hw_local_t *hw, char *err,
                            size_t errlen)
{
    uint64_t t0 = hlx_now_ns();
    cpu_set_t old, one;
    int rc, cpu;

    memset(hw, 0, sizeof(*hw));
    if (path && hlx_hw_local_writable(path, err, errlen) != HLX_OK) /* before the seconds */
        return 1;
    hlx_bl_facts(hw);
    if (!quiet)
        fprintf(stderr, "helix bench local: measuring this machine (a few seconds)...\n");
    /* the compute part on one core, as a bound rank runs */
    if (sched_getaffinity(0, sizeof(old), &old) == 0) {
        cpu = hlx_bl_nth_cpu(&old, 0);
        CPU_ZERO(&one);
        CPU_SET(cpu >= 0 ? cpu : 0, &one);
        sched_setaffinity(0, sizeof(one), &one);
        rc = hlx_bl_compute(hw, err, errlen);
        sched_setaffinity(0, sizeof(old), &old);
    } else {
        rc = hlx_bl_compute(hw, err, errlen);
    }
    if (rc != 0)
        return rc;
    /* the memory shared by the ranks: per-reader GB/s alone and with one reader per core */
    hw->dram_readers = hw->cores < HLX_HW_MAX_READERS ? hw->cores : HLX_HW_MAX_READERS;
    /* three rounds of (one reader, one per core), the round of the median slow-down kept:
     * one round caught another tenant's burst (1.50x slower each with two readers, 0.94x
     * in the next run) and set every DRAM-bound prediction of two ranks 30-45% too slow */
    {
        double r1[3], rn[3], ratio[3], mid;
        uint16_t *bufs[HLX_HW_MAX_READERS] = { NULL };
        hlx_kernels_t ka;
        int r, k = 0;
        const hlx_kernels_shape_t sh = { HLX_BL_READER_HEAD, HLX_BL_READER_GROUP, 0, 1 };
        if (hlx_kernels_init_shape(NULL, HLX_DTYPE_BF16, &sh, &ka, NULL, 0) != HLX_OK &&
            hlx_kernels_init(NULL, &ka) != HLX_OK) {
            snprintf(err, errlen, "no kernel variant runs on this CPU");
            return 1;
        }
        for (r = 0; r < 3; r++) {
            r1[r] = hlx_bl_readers(1, &ka, bufs);
            rn[r] = hw->dram_readers > 1 ? hlx_bl_readers(hw->dram_readers, &ka, bufs) : r1[r];
            ratio[r] = rn[r] > 0 ? r1[r] / rn[r] : 0;
        }
        for (r = 0; r < HLX_HW_MAX_READERS; r++)
            hlx_kernels_free_huge(bufs[r]);
        mid = hlx_bl_mid3(ratio[0], ratio[1], ratio[2]);
        while (k < 2 && ratio[k] != mid)
            k++;
        hw->dram_gbps_1 = r1[k];
        hw->dram_gbps_n = rn[k];
    }
    if (!(hw->dram_gbps_1 > 0 && hw->dram_gbps_n > 0)) {
        snprintf(err, errlen, "cannot measure the memory bandwidth with %d concurrent readers",
                 hw->dram_readers);
        return 1;
    }
    if (hlx_bl_comm_spawn(2, hw, 0, err, errlen) != 0)
        return 1;
    /* more ranks than cores (the runtime's KVP 4 on a 2-core host) */
    if (hw->cores < 4 && hlx_bl_shared(hw, err, errlen) != 0)
        return 1;
    hw->seconds = (double)(hlx_now_ns() - t0) * 1e-9;
    if (path && hlx_hw_local_save(path, hw, err, errlen) != HLX_OK)
        return 1;
    return 0;
}

int hlx_cmd_bench_local(int argc, char **argv)
{
    char path[4096], err[1024] = "";
    hlx_bl_args_t a;
    hlx_hw_local_t hw;
    int rc;

    memset(&a, 0, sizeof(a));
    rc = hlx_flags_parse(&hlx_bench_local_flags, argc, argv, &a, NULL, hlx_bl_usage_head,
                         hlx_bl_usage_tail);
    if (rc >= 0)
        return rc;
    if (a.json && a.quiet) { /* --quiet would silence the JSON asked for */
        fprintf(stderr, "helix bench local: --json and --quiet: --quiet prints nothing but "
                        "errors, so the JSON would not be printed; drop one of the two\n");
        return 2;
    }
    if (a.comm_child)
        return hlx_bl_comm_child();
    if (getenv("PMIX_RANK") != NULL || getenv("PMIX_NAMESPACE") != NULL) {
        fprintf(stderr, "helix bench local: start it alone, not under a launcher: it runs "
                        "its collective part under helixrun itself\n");
        return 2;
    }
    if (a.out != NULL && strlen(a.out) >= sizeof(path)) {
        fprintf(stderr, "helix bench local: --out: path longer than %zu bytes\n",
                sizeof(path) - 1);
        return 2;
    }
    if (a.out != NULL)
        snprintf(path, sizeof(path), "%s", a.out);
    else if (hlx_hw_local_path(path, sizeof(path)) != 0) {
        fprintf(stderr, "helix bench local: no place for the hw file: set HELIX_HW_FILE or "
                        "HOME, or give --out\n");
        return 2;
    }
    if (hlx_hw_local_writable(path, err, sizeof(err)) != HLX_OK) {
        fprintf(stderr, "helix bench local: %s%s\n", a.out ? "--out: " : "", err);
        return 2;
    }
    if (hlx_bench_local_measure(path, a.quiet, &hw, err, sizeof(err)) != 0) {
        fprintf(stderr, "helix bench local: %s\n", err);
        return 1;
    }
    if (a.quiet)
        return 0;
    if (a.json) {
        FILE *f = fopen(path, "r");
        int ch;
        while (f && (ch = fgetc(f)) != EOF)
            putchar(ch);
        if (f)
            fclose(f);
    } else {
        hlx_bench_local_print(stdout, &hw, path);
    }
    return 0;
}
