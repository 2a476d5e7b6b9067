/* helix bench attention|merge|gemv: times one kernel variant and reports it against this
 * core's roofline, whose limits (STREAM-like read bandwidth, fp32 FMA peak) are measured in
 * the same run: roofline time = max(bytes / bandwidth, flops / peak). The three kernels
 * share one flag table (util/hlx_flags.h); a2a, hopb and local are dispatched from here. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity */
#endif
#include "hlx_bench_local.h"
#include "hlx_cmd.h"
#include "hlx_kernels.h"
#include "hlx_time.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <unistd.h>

#include "hlx_bench_cuda.h"

typedef struct hlx_bench_opts {
    const char *kernel;
    const char *variant;
    hlx_dtype_t dtype;
    size_t      context;
    int         group, dk, dv, mla;
    float       softcap; /* attention: scores soft-capped at this (0: none) */
    int         fp8_scan; /* attention, fp8: kv_clean 0 (the kernel scans for NaN bytes) */
    int         parts, heads;
    int         n, k, m;
    int         strips; /* gemv: W in strips of 16 columns (HLX_W_S16) */
    int         wbits;  /* gemv: W integer-packed (hlx_wq_t) in 4 or 8 bits; 0: not */
    int         wao;    /* gemv, packed: in act order (each row's group from a table) */
    int         wmx;    /* gemv, packed4: MXFP4's E2M1 nibbles, a block of 32 rows a group */
    int         reps;
    int         threads;
    int         json;
    size_t      bw_bytes;
    /* targets the run is reported against (0: none); a benchmark reports, never fails */
    double      target_fraction, target_eff, target_speedup;
} hlx_bench_opts_t;

typedef struct hlx_bench_result {
    double bytes, flops, seconds;
    double bw_gbps, peak_gflops;
    double seconds_1; /* --threads T > 1: the same problem on one thread, in turns */
} hlx_bench_result_t;

int hlx_cmd_bench_a2a(int argc, char **argv); /* cmd_bench_a2a.c: the transport */

/* --threads: the pool the attention runs on (NULL: one thread). */
static hlx_pool_t *hlx_bench_pool;

/* The flags of attention, merge and gemv in one table, parsed into hlx_bench_args_t; each
 * row's index (HLX_BF_*) is its entry in the given[] of hlx_flags_parse, by which a flag
 * the chosen kernel does not read is refused (hlx_bench_flag_kernels). */
typedef struct hlx_bench_args {
    const char *variant, *kv_dtype;
    int64_t     context, group, head_dim, parts, heads, n, k, m, reps, threads, bw_bytes;
    int         mla, json, device, w_layout, fp8_scan;
    double      softcap;
    double      target_fraction, target_eff, target_speedup;
} hlx_bench_args_t;

enum {
    HLX_BF_VARIANT, HLX_BF_KV_DTYPE, HLX_BF_CONTEXT, HLX_BF_GROUP, HLX_BF_HEAD_DIM,
    HLX_BF_MLA, HLX_BF_PARTS, HLX_BF_HEADS, HLX_BF_N, HLX_BF_K, HLX_BF_M, HLX_BF_REPS,
    HLX_BF_THREADS, HLX_BF_BW_BYTES, HLX_BF_TARGET_FRACTION, HLX_BF_TARGET_EFF,
    HLX_BF_TARGET_SPEEDUP, HLX_BF_JSON, HLX_BF_DEVICE, HLX_BF_SOFTCAP, HLX_BF_W_LAYOUT,
    HLX_BF_FP8_SCAN, HLX_BF_COUNT
};

enum { HLX_BENCH_DEV_CPU, HLX_BENCH_DEV_CUDA }; /* --device's choices, in order */
enum { HLX_BENCH_WL_AUTO, HLX_BENCH_WL_ROWS, HLX_BENCH_WL_STRIPS, HLX_BENCH_WL_PACKED4,
       HLX_BENCH_WL_PACKED8, HLX_BENCH_WL_PACKED4_AO, HLX_BENCH_WL_PACKED8_AO,
       HLX_BENCH_WL_MXFP4 }; /* --w-layout's */

#define HLX_BF(_n, _t, _def, _lo, _hi, _f, _meta, _help) \
    { _n, _t, _def, _lo, _hi, 0, 0, NULL, offsetof(hlx_bench_args_t, _f), _meta, _help }
#define HLX_BF_TARGET(_n, _f, _meta, _help) \
    { _n, HLX_FT_NUM, NULL, 0, 0, 1e-6, 1e6, NULL, offsetof(hlx_bench_args_t, _f), _meta, \
      _help }

static const hlx_flag_t hlx_bench_flag_list[] = {
    [HLX_BF_VARIANT] = HLX_BF("variant", HLX_FT_STRING, NULL, 0, 0, variant, "NAME",
        "kernel variant: scalar, avx2, avx512, amx (avx512 with bf16\n"
        "attention scores on AMX tiles), auto (default: the best for\n"
        "the KV type, head size and --threads, as the runtime\n"
        "chooses)"),
    [HLX_BF_KV_DTYPE] = HLX_BF("kv-dtype", HLX_FT_STRING, "bf16", 0, 0, kv_dtype, "T",
        "attention KV / gemv weight type: bf16, fp32, fp8 (gemv: bf16\n"
        "or fp32; merge reads fp32 partials)"),
    [HLX_BF_CONTEXT] = HLX_BF("context", HLX_FT_INT, "1M", 1, INT64_C(1000000000000), context,
        "N", "attention tokens; K/M suffixes are 2^10/2^20"),
    [HLX_BF_GROUP] = HLX_BF("group", HLX_FT_INT, "8", 1, 1024, group, "G",
        "attention: query heads per KV head"),
    [HLX_BF_HEAD_DIM] = HLX_BF("head-dim", HLX_FT_INT, "128", 1, 4096, head_dim, "D",
        "attention: key and value size; merge: head size"),
    [HLX_BF_MLA] = HLX_BF("mla", HLX_FT_BOOL, NULL, 0, 0, mla, NULL,
        "attention in the MLA absorbed shape: 128 heads, key 576, value\n"
        "512 = first 512 of the key row (one read of the latent cache);\n"
        "it sets the shape, so not with --group or --head-dim"),
    [HLX_BF_PARTS] = HLX_BF("parts", HLX_FT_INT, "8", 1, 4096, parts, "P",
        "merge: partials per head"),
    [HLX_BF_HEADS] = HLX_BF("heads", HLX_FT_INT, "64", 1, 1 << 16, heads, "H",
        "merge: heads; --head-dim sets their size"),
    [HLX_BF_N] = HLX_BF("n", HLX_FT_INT, "8192", 1, 1 << 20, n, "N",
        "gemv: y[N] = x[K] W[K][N], N outputs"),
    [HLX_BF_K] = HLX_BF("k", HLX_FT_INT, "8192", 1, 1 << 20, k, "K",
        "gemv: K inputs (rows of W)"),
    [HLX_BF_M] = HLX_BF("m", HLX_FT_INT, "1", 1, 4096, m, "M", "gemv: rows of x"),
    [HLX_BF_REPS] = HLX_BF("reps", HLX_FT_INT, "5", 1, 1000, reps, "R",
        "timed runs, best kept"),
    [HLX_BF_THREADS] = HLX_BF("threads", HLX_FT_INT, "1", 1, HLX_POOL_MAX, threads, "T",
        "attention: split each call over T threads (a pool pinned to\n"
        "the first T cores this process may use), timed in turns with\n"
        "one thread (speedup); the limits are then measured on T cores\n"
        "at once"),
    [HLX_BF_BW_BYTES] = HLX_BF("bw-bytes", HLX_FT_INT, "1G", 1 << 20, INT64_C(1000000000000),
        bw_bytes, "N", "bandwidth probe buffer, larger than the last-level\ncache"),
    [HLX_BF_TARGET_FRACTION] = HLX_BF_TARGET("target-fraction", target_fraction, "X",
        "report the run against this roofline_fraction: met or not in\n"
        "the output (\"targets\" in JSON); the exit status does not\n"
        "depend on the targets"),
    [HLX_BF_TARGET_EFF] = HLX_BF_TARGET("target-eff", target_eff, "X",
        "the same for attention's compute_efficiency"),
    [HLX_BF_TARGET_SPEEDUP] = HLX_BF_TARGET("target-speedup", target_speedup, "X",
        "the same for the speedup of attention with --threads T > 1"),
    [HLX_BF_JSON] = HLX_BF("json", HLX_FT_BOOL, NULL, 0, 0, json, NULL,
        "one JSON object on stdout"),
    [HLX_BF_DEVICE] = { "device", HLX_FT_CHOICE, "cpu", 0, 0, 0, 0, "cpu|cuda",
        offsetof(hlx_bench_args_t, device), "cpu|cuda",
        "attention: cuda times the CUDA kernel on GPU 0 against a\n"
        "copy kernel's HBM bandwidth in the same run (helix bench\n"
        "attention --device cuda --help); exit 2 without a CUDA\ndevice" },
    [HLX_BF_SOFTCAP] = { "softcap", HLX_FT_NUM, NULL, 0, 0, 1e-6, 1e9, NULL,
        offsetof(hlx_bench_args_t, softcap), "X",
        "attention: scores soft-capped at X, s -> X tanh(s / X) (Gemma\n"
        "2's attn_logit_softcapping, 50); the flops counted are the\n"
        "same, so the fractions show the cap's cost" },
    [HLX_BF_W_LAYOUT] = { "w-layout", HLX_FT_CHOICE, "auto", 0, 0, 0, 0,
        "auto|rows|strips|packed4|packed8|packed4-ao|packed8-ao|mxfp4",
        offsetof(hlx_bench_args_t, w_layout),
        "auto|rows|strips|packed4|packed8|packed4-ao|packed8-ao|mxfp4",
        "gemv: W row-major, or in strips of 16 columns (the layout\n"
        "the runtime stores its projections in where the variant\n"
        "reads it fast: avx512, avx2); auto: the runtime's choice;\n"
        "packed4, packed8: a GPTQ-style W of 4- or 8-bit codes in\n"
        "groups of 128 rows kept packed (HELIX_W_PACKED), a chunk\n"
        "dequantized to bf16 at a time (bf16 only; the bytes are the\n"
        "packed ones); packed4-ao, packed8-ao: the same in act order\n"
        "(GPTQ's desc_act: the rows' groups a permutation's, read\n"
        "from a table row by row); mxfp4: gpt-oss's experts as the\n"
        "runtime keeps them, E2M1 nibbles looked up in a table, a\n"
        "power-of-two scale per block of 32 rows" },
    [HLX_BF_FP8_SCAN] = HLX_BF("fp8-scan", HLX_FT_BOOL, NULL, 0, 0, fp8_scan, NULL,
        "attention, --kv-dtype fp8: the kernel scans each block for\n"
        "NaN bytes before its fast widening, as for KV whose NaNs\n"
        "nobody recorded; without it the run is the runtime's case\n"
        "(its appends record them; this fill has none)"),
};

_Static_assert(sizeof(hlx_bench_flag_list) / sizeof(hlx_bench_flag_list[0]) == HLX_BF_COUNT,
               "a row for every HLX_BF_* index");

const hlx_flag_table_t hlx_bench_flags = {
    "bench", hlx_bench_flag_list, HLX_BF_COUNT,
    NULL, 0,
};

static const char hlx_bench_usage_head[] =
    "usage: helix bench attention|merge|gemv [options]\n"
    "       helix bench a2a [options]   (the transport's all-to-all: helix bench a2a --help)\n"
    "       helix bench hopb [options]  (HOP-B against lockstep: helix bench hopb --help)\n"
    "       helix bench local [options] (measures this machine for plan --hw local and the\n"
    "                                    decode prediction: helix bench local --help)\n"
    "Times one kernel (best of --reps runs) and reports achieved GB/s, GFLOP/s and\n"
    "roofline_fraction = max(bytes/read_bw, flops/fma_peak) / seconds, where read_bw (a\n"
    "STREAM-like single-thread read) and fma_peak (fp32) are measured in the same run;\n"
    "fma_peak uses the variant's vectors (avx2 and scalar: the peak of a machine whose\n"
    "widest ISA is theirs, at this clock; peak_isa in JSON).\n"
    "Pin it to one core: taskset -c 1 helix bench attention\n"
    "attention also reports compute_efficiency: the same shape over an L2-resident shard\n"
    "(about 1 MiB of KV), GFLOP/s against the FMA peak measured in turns with it; and\n"
    "stream_fma_fraction: the time of a plain loop that reads the same bytes and issues\n"
    "the call's flops per byte as FMAs (no widening, no softmax), over the kernel's\n"
    "time: how close the kernel is to what this core does reading and computing at\n"
    "once, where the roofline assumes the two overlap perfectly (the loop's own\n"
    "roofline fraction: stream_fma_roofline_fraction).\n"
    "Sizes are checked against this machine's memory first (exit 2 naming the flags).\n"
    "A flag the chosen kernel does not read (--parts with attention, --context with\n"
    "gemv, --group or --head-dim with --mla, ...) is refused (exit 2) naming it.\n"
    "Integers take K, M, G and T suffixes (2^10, 2^20, 2^30, 2^40).\n"
    "options:\n";

static const char hlx_bench_usage_tail[] =
    "examples:\n"
    "  taskset -c 1 helix bench attention --kv-dtype bf16 --context 1M --group 8 --json\n"
    "  taskset -c 1 helix bench attention --mla --context 64K\n"
    "  taskset -c 1 helix bench gemv --kv-dtype bf16 --n 16384 --k 4096\n";

/* The usage of --help, also on stderr when no kernel is named. */
static void hlx_bench_usage(FILE *f)
{
    fputs(hlx_bench_usage_head, f);
    hlx_flags_help(f, &hlx_bench_flags);
    fputs(hlx_bench_usage_tail, f);
}

/* The targets given, each with the measured value and whether it is met: JSON members
 * ("targets": [...], "targets_met") or text lines. */
static void hlx_bench_targets(const hlx_bench_opts_t *o, int json, double frac, double eff,
                              double speedup)
{
    const struct {
        const char *name;
        double      target, value;
    } t[] = {
        { "roofline_fraction", o->target_fraction, frac },
        { "compute_efficiency", o->target_eff, eff },
        { "speedup", o->target_speedup, speedup },
    };
    int i, n = 0, met = 1;

    for (i = 0; i < 3; i++) {
        if (t[i].target <= 0.0)
            continue;
        met &= t[i].value >= t[i].target;
        if (json)
            printf("%s{\"metric\": \"%s\", \"target\": %.4g, \"value\": %.4f, \"met\": %s}",
                   n ? ", " : ", \"targets\": [", t[i].name, t[i].target, t[i].value,
                   t[i].value >= t[i].target ? "true" : "false");
        else
            printf("  target %s >= %.3g: %.3f, %s\n", t[i].name, t[i].target, t[i].value,
                   t[i].value >= t[i].target ? "met" : "NOT met");
        n++;
    }
    if (json && n)
        printf("], \"targets_met\": %s", met ? "true" : "false");
}

static void hlx_bench_fill(void *p, hlx_dtype_t t, size_t n, uint64_t seed)
{
    size_t i;
    for (i = 0; i < n; i++) {
        float f;
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        f = (float)((double)(seed >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
        if (t == HLX_DTYPE_BF16)
            ((uint16_t *)p)[i] = hlx_f32_to_bf16(f);
        else if (t == HLX_DTYPE_FP8)
            ((uint8_t *)p)[i] = (uint8_t)((seed >> 32) & 0x77); /* |v| < 2, never NaN */
        else
            ((float *)p)[i] = f;
    }
}

/* Sizes from flags: the bytes a kernel needs (computed in double, so nothing wraps) must fit
 * in memory; otherwise the flags that set them are named and the command exits 2. */
double hlx_bench_mem_room(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);

    return pages > 0 && psz > 0 ? 0.8 * (double)pages * (double)psz : 0.0;
}

static int hlx_bench_fits(const char *sizes, double bytes)
{
    double room = hlx_bench_mem_room();

    if (bytes < 9e15 && (room == 0.0 || bytes <= room))
        return 0;
    fprintf(stderr, "helix bench: %s: %.3g bytes are needed, more than this machine's memory "
            "(%.1f GiB); choose smaller sizes\n", sizes, bytes, room / 0.8 / 1073741824.0);
    return 2;
}

static size_t hlx_bench_esize(hlx_dtype_t t)
{
    return t == HLX_DTYPE_BF16 ? 2 : t == HLX_DTYPE_FP8 ? 1 : 4;
}

/* The machine's limits on the cores the kernel runs on: one core's, or with --threads the
 * sum of the probes run on every pool thread at once (each its own buffer). */
/* The kernel variant whose vectors the FMA peak is measured with (avx2 on an AVX-512
 * machine: the 256-bit peak, that of an AVX2-only core), and the ISA that was measured. */
static const char *hlx_bench_peak_variant;
static const char *hlx_bench_peak_isa = "scalar";

typedef struct hlx_bench_probe_job {
    size_t bw_bytes;
    double min_s;
    double bw[HLX_POOL_MAX], peak[HLX_POOL_MAX];
    int    bad;
} hlx_bench_probe_job_t;

static void hlx_bench_probe_part(void *arg, int t, int nt)
{
    hlx_bench_probe_job_t *j = arg;
    (void)nt;
    if (j->bw_bytes && hlx_kernels_probe_read_bw(j->bw_bytes, j->min_s, &j->bw[t]) != HLX_OK)
        j->bad = 1;
    if (hlx_kernels_probe_fma_peak_for(hlx_bench_peak_variant, j->min_s, &j->peak[t],
                                       &hlx_bench_peak_isa) != HLX_OK)
        j->bad = 1;
}

static int hlx_bench_limits(size_t bw_bytes, double min_s, double *bw_p, double *peak_p)
{
    static hlx_bench_probe_job_t job;
    int t, T = hlx_pool_size(hlx_bench_pool);

    memset(&job, 0, sizeof(job));
    job.bw_bytes = bw_bytes / (size_t)T;
    job.min_s = min_s;
    hlx_pool_run(hlx_bench_pool, hlx_bench_probe_part, &job);
    if (job.bad)
        return -1;
    if (bw_p)
        *bw_p = 0.0;
    *peak_p = 0.0;
    for (t = 0; t < T; t++) {
        if (bw_p)
            *bw_p += job.bw[t];
        *peak_p += job.peak[t];
    }
    return 0;
}

/* The machine streaming the call's bytes while issuing its flops per byte as FMAs
 * (hlx_kernels_probe_stream_fma_for): with --threads each pool thread its share of the
 * bytes at once, rates summed, as the limits above. */
typedef struct hlx_bench_stream_job {
    size_t bytes;
    double fpb;
    double gbps[HLX_POOL_MAX], fpb_used;
    hlx_status_t st; /* the first failure of a part */
} hlx_bench_stream_job_t;

static void hlx_bench_stream_part(void *arg, int t, int nt)
{
    hlx_bench_stream_job_t *j = arg;
    hlx_status_t st;
    (void)nt;
    st = hlx_kernels_probe_stream_fma_for(hlx_bench_peak_variant, j->bytes, j->fpb, 0.3,
                                          &j->gbps[t], t == 0 ? &j->fpb_used : NULL);
    if (st != HLX_OK)
        j->st = st; /* any part's: the parts fail alike */
}

/* 0 measured, 1 not measurable at this call (fewer bytes than the loop reads, or more
 * flops per byte than it issues per line: no figure printed), -1 failed. */
static int hlx_bench_stream_fma(double bytes, double flops, double *gbps_p, double *fpb_p)
{
    static hlx_bench_stream_job_t job;
    int t, T = hlx_pool_size(hlx_bench_pool);

    memset(&job, 0, sizeof(job));
    job.bytes = (size_t)(bytes / T);
    job.fpb = flops / bytes;
    hlx_pool_run(hlx_bench_pool, hlx_bench_stream_part, &job);
    if (job.st == HLX_ERR_INVALID)
        return 1;
    if (job.st != HLX_OK)
        return -1;
    *gbps_p = 0.0;
    for (t = 0; t < T; t++)
        *gbps_p += job.gbps[t];
    *fpb_p = job.fpb_used;
    return 0;
}

/* One attention problem of len tokens timed over reps runs (best kept). */
static int hlx_bench_attn_len(const hlx_bench_opts_t *o, const hlx_kernels_t *k, size_t len,
                              int reps, hlx_bench_result_t *r)
{
    size_t es = hlx_bench_esize(o->dtype);
    int group = o->mla ? 128 : o->group, dk = o->mla ? 576 : o->dk, dv = o->mla ? 512 : o->dv;
    /* K (and V) in the variant's shard layout (blocks rounded up); MLA: v = k */
    size_t k_elems = hlx_kv_elems(k->kv_layout.k_block, dk, len);
    size_t kv_elems = k_elems + (o->mla ? 0 : hlx_kv_elems(k->kv_layout.v_block, dv, len));
    void *kv;
    float *q, *out, *lse, *work;
    hlx_attn_desc_t d;
    int i, rc;
    char sizes[96];

    snprintf(sizes, sizeof(sizes), "--context %zu%s", len, o->mla ? " (--mla)" : "");
    if (hlx_bench_fits(sizes, ((double)len + 64.0) * (dk + (o->mla ? 0 : dv)) * (double)es))
        return 2;
    kv = hlx_kernels_alloc_huge(kv_elems * es + 64);
    q = malloc(sizeof(float) * (size_t)group * dk);
    out = malloc(sizeof(float) * (size_t)group * dv);
    lse = malloc(sizeof(float) * group);
    if (!kv || !q || !out || !lse) {
        fprintf(stderr, "helix bench: --context %zu: cannot allocate %.1f GiB of KV\n", len,
                (double)(kv_elems * es) / (1u << 30));
        hlx_kernels_free_huge(kv); free(q); free(out); free(lse);
        return 2;
    }
    hlx_bench_fill(kv, o->dtype, kv_elems, 1);
    hlx_bench_fill(q, HLX_DTYPE_F32, (size_t)group * dk, 2);
    d = (hlx_attn_desc_t){ .group = group, .dk = dk, .dv = dv, .len = len, .kv_dtype = o->dtype,
                           .q = q, .k = kv, .k_stride = (size_t)dk,
                           .v = o->mla ? kv : (char *)kv + k_elems * es,
                           .v_stride = (size_t)(o->mla ? dk : dv),
                           .scale = 1.0f / sqrtf((float)dk), .softcap = o->softcap,
                           .o = out, .lse = lse,
                           /* hlx_bench_fill makes no NaN byte: the runtime's appends know it */
                           .kv_clean = !o->fp8_scan };
    r->seconds = 1e30;
    r->seconds_1 = 1e30;
    work = hlx_bench_pool ? malloc(sizeof(float) * hlx_pool_attn_work_floats(hlx_bench_pool, &d))
                          : NULL;
    if (hlx_bench_pool && !work) {
        fprintf(stderr, "helix bench: --threads: out of memory\n");
        hlx_kernels_free_huge(kv); free(q); free(out); free(lse);
        return 1;
    }
    for (i = 0; i < reps; i++) {
        uint64_t t0 = hlx_now_ns();
        if (hlx_bench_pool) {
            hlx_pool_attn(hlx_bench_pool, k, &d, work);
            r->seconds = fmin(r->seconds, (double)(hlx_now_ns() - t0) * 1e-9);
            t0 = hlx_now_ns();
            k->attn(&d);
            r->seconds_1 = fmin(r->seconds_1, (double)(hlx_now_ns() - t0) * 1e-9);
        } else {
            k->attn(&d);
            r->seconds = fmin(r->seconds, (double)(hlx_now_ns() - t0) * 1e-9);
        }
    }
    free(work);
    r->bytes = (double)(len * (size_t)dk + (o->mla ? 0 : len * (size_t)dv)) * (double)es;
    r->flops = 2.0 * group * (double)len * (dk + dv);
    rc = isfinite(lse[0]) ? 0 : 1;
    if (rc)
        fprintf(stderr, "helix bench: attention produced lse %g\n", (double)lse[0]);
    hlx_kernels_free_huge(kv); free(q); free(out); free(lse);
    return rc;
}

/* The requested context from memory, then the compute efficiency: the same shape over a
 * shard small enough for the core's L2 (about 1 MiB of KV), repeated, against the FMA peak:
 * what the kernel's arithmetic reaches whatever the machine's memory. */
static int hlx_bench_attention(const hlx_bench_opts_t *o, const hlx_kernels_t *k,
                               hlx_bench_result_t *r, hlx_bench_result_t *rc_p, size_t *clen_p)
{
    const int dk = o->mla ? 576 : o->dk, dv = o->mla ? 512 : o->dv;
    const size_t tok_bytes = (size_t)(dk + (o->mla ? 0 : dv)) * hlx_bench_esize(o->dtype);
    size_t clen = ((size_t)1 << 20) / tok_bytes / 64 * 64;
    int i, rc = hlx_bench_attn_len(o, k, o->context, o->reps, r);

    if (rc != 0)
        return rc;
    if (clen < 64)
        clen = 64;
    *clen_p = clen;
    /* The FMA peak moves with what shares the core (an SMT sibling's load): measure it
     * in turns with the kernel, best of each, so both see the same conditions. */
    for (i = 0; i < 5; i++) {
        hlx_bench_result_t t;
        double pk;
        if (hlx_bench_limits(0, 0.05, NULL, &pk) == 0 && pk > r->peak_gflops)
            r->peak_gflops = pk;
        rc = hlx_bench_attn_len(o, k, clen, 4 * o->reps, &t);
        if (rc != 0)
            return rc;
        if (i == 0 || t.seconds < rc_p->seconds)
            *rc_p = t;
    }
    return 0;
}

static int hlx_bench_merge(const hlx_bench_opts_t *o, const hlx_kernels_t *k,
                           hlx_bench_result_t *r)
{
    size_t n = (size_t)o->parts * o->heads * o->dv;
    float *op, *lp, *out, *lse;
    int i, inner = 1;
    char sizes[96];

    snprintf(sizes, sizeof(sizes), "--parts %d x --heads %d x --head-dim %d", o->parts,
             o->heads, o->dv);
    if (hlx_bench_fits(sizes, 4.0 * ((double)o->parts * o->heads * o->dv +
                                     (double)o->parts * o->heads +
                                     (double)o->heads * o->dv + o->heads)))
        return 2;
    op  = malloc(sizeof(float) * n);
    lp  = malloc(sizeof(float) * (size_t)o->parts * o->heads);
    out = malloc(sizeof(float) * (size_t)o->heads * o->dv);
    lse = malloc(sizeof(float) * (size_t)o->heads);
    if (!op || !lp || !out || !lse) {
        fprintf(stderr, "helix bench: %s: cannot allocate %.3g bytes\n", sizes, 4.0 * (double)n);
        free(op); free(lp); free(out); free(lse);
        return 2;
    }
    hlx_bench_fill(op, HLX_DTYPE_F32, n, 3);
    hlx_bench_fill(lp, HLX_DTYPE_F32, (size_t)o->parts * o->heads, 4);
    /* small problems: repeat inside one timing so the clock resolution does not matter */
    while ((double)n * 4.0 * inner < 64e6)
        inner *= 2;
    r->seconds = 1e30;
    for (i = 0; i < o->reps; i++) {
        uint64_t t0 = hlx_now_ns();
        int j;
        for (j = 0; j < inner; j++)
            k->merge(o->parts, o->heads, o->dv, op, lp, out, lse);
        r->seconds = fmin(r->seconds, (double)(hlx_now_ns() - t0) * 1e-9 / inner);
    }
    r->bytes = 4.0 * ((double)n + o->parts * o->heads + (double)o->heads * o->dv);
    r->flops = 2.0 * (double)n;
    free(op); free(lp); free(out); free(lse);
    return 0;
}

/* gemv over a packed W (--w-layout packed4|packed8|mxfp4): random codes, zero points and
 * scales in groups of 128 rows (mxfp4: E2M1 codes through the table, zero 12, scales of
 * powers of two, blocks of 32), packed as the runtime packs a checkpoint's; the bytes
 * counted are the packed matrix's (codes, scales and zeros). In act order (-ao) row k's
 * group is that of its place in a stride permutation of the rows, as scattered as GPTQ's
 * desc_act makes them. */
static int hlx_bench_gemv_packed(const hlx_bench_opts_t *o, const hlx_kernels_t *k,
                                 hlx_bench_result_t *r, const char *sizes)
{
    const int gr = o->wmx ? 32 : 128, G = (o->k - 1) / gr + 1, top = (1 << o->wbits) - 1;
    const size_t wb = o->wao ? hlx_kernels_wq_bytes_ao(o->wbits, o->k, o->n, G)
                             : hlx_kernels_wq_bytes(o->wbits, HLX_DTYPE_BF16, o->k, o->n, gr, 0);
    int32_t *tab = NULL;
    const hlx_dtype_t t = (hlx_dtype_t)(HLX_W_Q | hlx_w_s16_of(HLX_DTYPE_BF16));
    float *code = NULL, *sc = NULL, *zr = NULL, *x, *y;
    void *w;
    int i, n0, n1;
    uint64_t v = 0x9e3779b97f4a7c15ull;

    if (o->dtype != HLX_DTYPE_BF16) {
        fprintf(stderr, "helix bench: --w-layout %s: packed weights dequantize to bf16; give "
                "--kv-dtype bf16 (the default)\n", o->wmx ? "mxfp4" : o->wbits == 4
                ? (o->wao ? "packed4-ao" : "packed4") : (o->wao ? "packed8-ao" : "packed8"));
        return 2;
    }
    if (wb == 0 || hlx_bench_fits(sizes, (double)wb + 12.0 * 128.0 * (double)o->k +
                                             4.0 * (double)o->m * ((double)o->n + o->k)))
        return 2;
    w = hlx_kernels_alloc_huge(wb);
    x = malloc(sizeof(float) * (size_t)o->m * o->k);
    y = malloc(sizeof(float) * (size_t)o->m * o->n);
    code = malloc(sizeof(float) * (size_t)o->k * 128);
    sc = malloc(sizeof(float) * (size_t)G * 128);
    zr = malloc(sizeof(float) * (size_t)G * 128);
    tab = malloc(sizeof(int32_t) * (size_t)o->k);
    for (i = 0; tab != NULL && i < o->k; i++) /* 40503 is prime: a permutation of the rows */
        tab[i] = (int32_t)((uint64_t)i * 40503u % (uint64_t)o->k / 128);
    if (!w || !x || !y || !code || !sc || !zr || !tab ||
        (o->wao ? hlx_kernels_wq_init_ao(w, o->wbits, o->k, o->n, G, tab)
                : hlx_kernels_wq_init(w, o->wbits, HLX_DTYPE_BF16, o->k, o->n, gr, 0)) != HLX_OK) {
        fprintf(stderr, "helix bench: %s: cannot allocate %.3g bytes\n", sizes, (double)wb);
        hlx_kernels_free_huge(w); free(x); free(y); free(code); free(sc); free(zr); free(tab);
        return 2;
    }
    free(tab);
    if (o->wmx) /* a 4-bit matrix just made: the table is taken */
        (void)hlx_kernels_wq_set_lut(w, hlx_kernels_wq_lut_e2m1);
    hlx_bench_fill(x, HLX_DTYPE_F32, (size_t)o->m * o->k, 6);
    for (n0 = 0; n0 < o->n; n0 += 128) { /* 128 columns at a time */
        n1 = o->n - n0 < 128 ? o->n : n0 + 128;
        for (i = 0; i < o->k * 128; i++) {
            v ^= v << 13, v ^= v >> 7, v ^= v << 17;
            code[i] = o->wmx ? (float)hlx_kernels_wq_lut_e2m1[v % 16]
                             : (float)(v % (uint64_t)(top + 1));
        }
        for (i = 0; i < G * 128; i++) {
            v ^= v << 13, v ^= v >> 7, v ^= v << 17;
            sc[i] = o->wmx ? ldexpf(1.0f, -(int)((v >> 40) % 8) - 4)
                           : (float)((v >> 40) % 1000 + 1) * 1e-5f;
            zr[i] = o->wmx ? 12.0f : (float)(top / 2 + 1);
        }
        (void)hlx_kernels_wq_pack_cols(w, n0, n1, code, sc, zr, 128);
    }
    free(code); free(sc); free(zr);
    r->seconds = 1e30;
    for (i = 0; i < o->reps; i++) {
        uint64_t t0 = hlx_now_ns();
        hlx_kernels_gemm_cols(k, o->m, o->n, o->k, x, w, t, y, 0, 0, o->n);
        r->seconds = fmin(r->seconds, (double)(hlx_now_ns() - t0) * 1e-9);
    }
    r->bytes = (double)wb;
    r->flops = 2.0 * o->m * (double)o->n * o->k;
    hlx_kernels_free_huge(w); free(x); free(y);
    return 0;
}

static int hlx_bench_gemv(const hlx_bench_opts_t *o, const hlx_kernels_t *k,
                          hlx_bench_result_t *r)
{
    size_t es = hlx_bench_esize(o->dtype), nw = (size_t)o->n * o->k;
    void *w;
    float *x, *y;
    int i;
    char sizes[96];

    snprintf(sizes, sizeof(sizes), "--n %d x --k %d (--m %d)", o->n, o->k, o->m);
    if (o->wbits)
        return hlx_bench_gemv_packed(o, k, r, sizes);
    /* strips: the row-major W and its strips at once while it packs */
    if (hlx_bench_fits(sizes, (double)o->n * o->k * (double)es * (o->strips ? 2.0 : 1.0) +
                                  4.0 * (double)o->m * ((double)o->n + o->k)))
        return 2;
    w = hlx_kernels_alloc_huge(nw * es);
    x = malloc(sizeof(float) * (size_t)o->m * o->k);
    y = malloc(sizeof(float) * (size_t)o->m * o->n);
    if (!w || !x || !y) {
        fprintf(stderr, "helix bench: %s: cannot allocate %.3g bytes\n", sizes,
                (double)nw * es);
        hlx_kernels_free_huge(w); free(x); free(y);
        return 2;
    }
    hlx_bench_fill(w, o->dtype, nw, 5);
    hlx_bench_fill(x, HLX_DTYPE_F32, (size_t)o->m * o->k, 6);
    if (o->strips) { /* the same W in strips, as the runtime packs it */
        size_t sb = hlx_kernels_w_s16_bytes(o->dtype, o->k, o->n);
        void *ws = sb ? hlx_kernels_alloc_huge(sb) : NULL;
        if (ws == NULL) {
            fprintf(stderr, "helix bench: %s: cannot allocate %.3g bytes for the strips\n",
                    sizes, (double)sb);
            hlx_kernels_free_huge(w); free(x); free(y);
            return 2;
        }
        hlx_kernels_w_s16_pack(o->dtype, o->k, o->n, w, ws);
        hlx_kernels_free_huge(w);
        w = ws;
    }
    r->seconds = 1e30;
    for (i = 0; i < o->reps; i++) {
        uint64_t t0 = hlx_now_ns();
        k->gemm(o->m, o->n, o->k, x, w, o->strips ? hlx_w_s16_of(o->dtype) : o->dtype, y, 0);
        r->seconds = fmin(r->seconds, (double)(hlx_now_ns() - t0) * 1e-9);
    }
    r->bytes = (double)nw * es;
    r->flops = 2.0 * o->m * (double)nw;
    hlx_kernels_free_huge(w); free(x); free(y);
    return 0;
}

int hlx_cmd_bench_hopb(int argc, char **argv); /* cmd_bench_hopb.c */

/* The kernels that read each flag (0: all three). A flag given to a kernel that does not
 * read it is refused: a run that silently ignored it would be taken for the shape asked
 * for. */
enum { HLX_BK_ATTN = 1, HLX_BK_MERGE = 2, HLX_BK_GEMV = 4 };

static const unsigned char hlx_bench_flag_kernels[HLX_BF_COUNT] = {
    [HLX_BF_KV_DTYPE] = HLX_BK_ATTN | HLX_BK_GEMV, /* merge's partials are fp32 */
    [HLX_BF_CONTEXT] = HLX_BK_ATTN,
    [HLX_BF_GROUP] = HLX_BK_ATTN,
    [HLX_BF_HEAD_DIM] = HLX_BK_ATTN | HLX_BK_MERGE,
    [HLX_BF_MLA] = HLX_BK_ATTN,
    [HLX_BF_PARTS] = HLX_BK_MERGE,
    [HLX_BF_HEADS] = HLX_BK_MERGE,
    [HLX_BF_N] = HLX_BK_GEMV,
    [HLX_BF_K] = HLX_BK_GEMV,
    [HLX_BF_M] = HLX_BK_GEMV,
    [HLX_BF_THREADS] = HLX_BK_ATTN,
    [HLX_BF_TARGET_EFF] = HLX_BK_ATTN,
    [HLX_BF_TARGET_SPEEDUP] = HLX_BK_ATTN,
    [HLX_BF_SOFTCAP] = HLX_BK_ATTN,
    [HLX_BF_W_LAYOUT] = HLX_BK_GEMV,
    [HLX_BF_FP8_SCAN] = HLX_BK_ATTN,
};

/* Flags that do not apply to the kernel, or to each other; given[] is hlx_flags_parse's
 * (by HLX_BF_* row). Returns 0, or 2 after the message. */
static int hlx_bench_flags_apply(const hlx_bench_opts_t *o, const int *given)
{
    static const char *const names[] = { "attention", "merge", "gemv" };
    unsigned kernel = !strcmp(o->kernel, "attention") ? HLX_BK_ATTN
                    : !strcmp(o->kernel, "merge")     ? HLX_BK_MERGE : HLX_BK_GEMV;
    int i;

    for (i = 0; i < HLX_BF_COUNT; i++) {
        unsigned k = hlx_bench_flag_kernels[i];
        int j, n = 0;
        if (!given[i] || k == 0 || (k & kernel))
            continue;
        fprintf(stderr, "helix bench %s: --%s is read by ", o->kernel,
                hlx_bench_flag_list[i].name);
        for (j = 0; j < 3; j++)
            if (k & (1u << j))
                fprintf(stderr, "%s%s", n++ ? " and " : "", names[j]);
        fprintf(stderr, " only: %s would ignore it; drop it (see helix bench --help)\n",
                o->kernel);
        return 2;
    }
    /* --mla sets the whole shape: a --group or --head-dim beside it would be ignored */
    for (i = 0; o->mla && i < 2; i++) {
        const char *f = hlx_bench_flag_list[i == 0 ? HLX_BF_GROUP : HLX_BF_HEAD_DIM].name;
        if (given[i == 0 ? HLX_BF_GROUP : HLX_BF_HEAD_DIM]) {
            fprintf(stderr, "helix bench attention: --mla and --%s: --mla sets the shape (128 "
                            "query heads, key 576, value 512) and --%s would be ignored; drop "
                            "one of the two\n", f, f);
            return 2;
        }
    }
    if (o->mla && o->softcap > 0.0f) {
        fprintf(stderr, "helix bench attention: --mla and --softcap: MLA models have no "
                        "soft-capping (a model file refuses attn_softcap with mla); drop one "
                        "of the two\n");
        return 2;
    }
    if (o->fp8_scan && o->dtype != HLX_DTYPE_FP8) {
        fprintf(stderr, "helix bench attention: --fp8-scan: only fp8 KV is scanned for NaN "
                        "bytes; give --kv-dtype fp8 or drop it\n");
        return 2;
    }
    if (given[HLX_BF_TARGET_SPEEDUP] && o->threads < 2) {
        fprintf(stderr, "helix bench attention: --target-speedup: the speedup is that of "
                        "--threads T over one thread: give --threads T > 1\n");
        return 2;
    }
    if (kernel == HLX_BK_GEMV && o->dtype == HLX_DTYPE_FP8) {
        fprintf(stderr, "helix bench gemv: --kv-dtype fp8: gemv weights are fp32 or bf16\n");
        return 2;
    }
    return 0;
}

/* --device cuda: attention on the GPU (cli/cuda, which parses the flags itself), the only
 * kernel it has; argv[1] is the kernel. */
static int hlx_bench_cuda(int argc, char **argv)
{
    if (strcmp(argv[1], "attention")) {
        fprintf(stderr, "helix bench: --device cuda: only for attention (%s runs on the "
                "CPU)\n", argv[1]);
        return 2;
    }
    return hlx_bench_attention_cuda(argc - 1, argv + 1);
}

/* The flags of kernel argv[1] into o, checked against the kernel and each other. Returns
 * -1 to go on, or the exit code: 0 after --help, 2 after a message naming the flag. */
static int hlx_bench_parse(int argc, char **argv, hlx_bench_opts_t *o)
{
    hlx_bench_args_t a;
    hlx_dtype_t dtype;
    int given[HLX_FLAGS_MAX], rc;

    memset(&a, 0, sizeof(a));
    rc = hlx_flags_parse(&hlx_bench_flags, argc - 1, argv + 1, &a, given,
                         hlx_bench_usage_head, hlx_bench_usage_tail);
    if (rc >= 0)
        return rc;
    if (a.device == HLX_BENCH_DEV_CUDA) /* spelled so that the scan before missed it: --dev */
        return hlx_bench_cuda(argc, argv);
    if (hlx_dtype_parse(a.kv_dtype, &dtype) != 0 || dtype == HLX_DTYPE_FP4) {
        fprintf(stderr, "helix bench: --kv-dtype: unknown type '%s' (bf16, fp32, fp8)\n",
                a.kv_dtype);
        return 2;
    }
    *o = (hlx_bench_opts_t){ .kernel = argv[1], .variant = a.variant, .dtype = dtype,
                             .context = (size_t)a.context, .group = (int)a.group,
                             .dk = (int)a.head_dim, .dv = (int)a.head_dim, .mla = a.mla,
                             .softcap = (float)a.softcap, .fp8_scan = a.fp8_scan,
                             .parts = (int)a.parts, .heads = (int)a.heads, .n = (int)a.n,
                             .k = (int)a.k, .m = (int)a.m, .reps = (int)a.reps,
                             .strips = a.w_layout >= HLX_BENCH_WL_STRIPS ? 1
                                       : a.w_layout == HLX_BENCH_WL_ROWS ? 0 : -1,
                             .wbits = a.w_layout == HLX_BENCH_WL_PACKED4 ||
                                              a.w_layout == HLX_BENCH_WL_PACKED4_AO ||
                                              a.w_layout == HLX_BENCH_WL_MXFP4 ? 4
                                      : a.w_layout == HLX_BENCH_WL_PACKED8 ||
                                              a.w_layout == HLX_BENCH_WL_PACKED8_AO ? 8 : 0,
                             .wao = a.w_layout == HLX_BENCH_WL_PACKED4_AO ||
                                    a.w_layout == HLX_BENCH_WL_PACKED8_AO,
                             .wmx = a.w_layout == HLX_BENCH_WL_MXFP4,
                             .threads = (int)a.threads, .json = a.json,
                             .bw_bytes = (size_t)a.bw_bytes,
                             .target_fraction = a.target_fraction,
                             .target_eff = a.target_eff,
                             .target_speedup = a.target_speedup };
    return hlx_bench_flags_apply(o, given) != 0 ? 2 : -1;
}

int hlx_cmd_bench(int argc, char **argv)
{
    hlx_bench_opts_t o;
    hlx_bench_result_t r = { 0 }, rcache = { 0 };
    size_t clen = 0;
    hlx_kernels_t kern;
    hlx_status_t st;
    double t_roof, frac, sf_gbps = 0.0, sf_fpb = 0.0, sf_s = 0.0;
    int c, rc, vector_path = 1, ag, adk, adv;

    if (argc >= 2 && !strcmp(argv[1], "a2a"))
        return hlx_cmd_bench_a2a(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "local") || !strcmp(argv[1], "machine")))
        return hlx_cmd_bench_local(argc - 1, argv + 1);
    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
            hlx_bench_usage(stdout);
            return 0;
        }
        fprintf(stderr, "helix bench: name a kernel: attention, merge or gemv\n");
        hlx_bench_usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "hopb"))
        return hlx_cmd_bench_hopb(argc - 1, argv + 1);
    /* --device cuda before the flags: the CUDA bench has flags of its own (cli/cuda) */
    for (c = 2; c < argc; c++) {
        const char *dev = !strcmp(argv[c], "--device") && c + 1 < argc ? argv[c + 1]
                        : !strncmp(argv[c], "--device=", 9) ? argv[c] + 9 : NULL;
        if (dev == NULL || !strcmp(dev, "cpu"))
            continue;
        if (strcmp(dev, "cuda")) {
            fprintf(stderr, "helix bench: --device '%s': expected cpu or cuda\n", dev);
            return 2;
        }
        return hlx_bench_cuda(argc, argv);
    }
    if (strcmp(argv[1], "attention") && strcmp(argv[1], "merge") && strcmp(argv[1], "gemv")) {
        fprintf(stderr, "helix bench: unknown kernel '%s' (attention, merge, gemv)\n", argv[1]);
        return 2;
    }
    rc = hlx_bench_parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    /* the attention's group and key and value sizes (--mla: DeepSeek's absorbed shape) */
    ag = o.mla ? 128 : o.group, adk = o.mla ? 576 : o.dk, adv = o.mla ? 512 : o.dv;
    /* auto: the best variant for this KV type, head size, group and thread count
     * (attention), as the runtime chooses */
    {
        const hlx_kernels_shape_t sh = { adk, ag, o.softcap > 0.0f, o.threads };
        st = !strcmp(o.kernel, "attention")
                 ? hlx_kernels_init_shape(o.variant, o.dtype, &sh, &kern, NULL, 0)
                 : hlx_kernels_init(o.variant, &kern);
    }
    if (st != HLX_OK) {
        char why[256];
        hlx_kernels_init_error(o.variant, why, sizeof(why));
        if (o.variant != NULL && !strncmp(why, "--kernels", 9)) /* this command's flag */
            fprintf(stderr, "helix bench: --variant%s\n", why + 9);
        else
            fprintf(stderr, "helix bench: %s\n", why);
        return 2;
    }
    /* a shape the variant's vector path does not cover runs its reference loop: say so
     * before the (long) measurement, and in the report */
    if (!strcmp(o.kernel, "attention")) {
        vector_path = hlx_kernels_attn_vector(&kern, o.dtype, ag, adk, adv, o.mla,
                                              o.softcap > 0.0f);
        if (!vector_path)
            fprintf(stderr, "helix bench: note: %s has no vector path for head size %d x %d "
                    "(%s KV%s): it runs its reference loop, tens of times slower; the figures "
                    "below are that loop's\n", kern.name, adk, adv, hlx_dtype_name(o.dtype),
                    o.softcap > 0.0f ? ", soft-capped scores" : "");
    }
    /* sizes first: an impossible one is reported before the limits are measured */
    {
        char sizes[96];
        double es = (double)hlx_bench_esize(o.dtype), need;
        if (!strcmp(o.kernel, "attention")) {
            snprintf(sizes, sizeof(sizes), "--context %zu%s", o.context, o.mla ? " (--mla)" : "");
            need = ((double)o.context + 64.0) * (o.mla ? 576 : o.dk + o.dv) * es;
        } else if (!strcmp(o.kernel, "merge")) {
            snprintf(sizes, sizeof(sizes), "--parts %d x --heads %d x --head-dim %d", o.parts,
                     o.heads, o.dv);
            need = 4.0 * ((double)o.parts * o.heads * o.dv + (double)o.heads * o.dv);
        } else {
            snprintf(sizes, sizeof(sizes), "--n %d x --k %d (--m %d)", o.n, o.k, o.m);
            need = (double)o.n * o.k * es + 4.0 * (double)o.m * ((double)o.n + o.k);
        }
        if (hlx_bench_fits(sizes, need))
            return 2;
    }
#ifdef OPENBLAS_VERSION
    openblas_set_num_threads(1); /* one core: the roofline below is a single core's */
#endif
    /* the limits first, then the kernel, in the same process and on the same core */
    if (o.threads > 1) {
        int cores[HLX_POOL_MAX], n = 0, cpu;
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof(set), &set) != 0)
            CPU_ZERO(&set);
        for (cpu = 0; cpu < CPU_SETSIZE && n < o.threads; cpu++)
            if (CPU_ISSET(cpu, &set))
                cores[n++] = cpu;
        if (n < o.threads) {
            fprintf(stderr, "helix bench: --threads %d: only %d cores are available to this "
                    "process\n", o.threads, n);
            return 2;
        }
        if (hlx_pool_create(o.threads, cores, &hlx_bench_pool) != HLX_OK) {
            fprintf(stderr, "helix bench: --threads %d: cannot start the pinned threads\n",
                    o.threads);
            return 1;
        }
    }
    hlx_bench_peak_variant = kern.name;
    if (hlx_bench_limits(o.bw_bytes, 0.3, &r.bw_gbps, &r.peak_gflops) != 0) {
        fprintf(stderr, "helix bench: cannot measure this machine's limits\n");
        return 1;
    }
    if (!strcmp(o.kernel, "attention"))
        rc = hlx_bench_attention(&o, &kern, &r, &rcache, &clen);
    else if (!strcmp(o.kernel, "merge"))
        rc = hlx_bench_merge(&o, &kern, &r);
    else {
        if (o.strips < 0) /* auto: as the runtime stores its projections */
            o.strips = kern.w_s16;
        rc = hlx_bench_gemv(&o, &kern, &r);
    }
    /* attention: the machine at the call's intensity, after the call (its bytes known) */
    if (rc == 0 && !strcmp(o.kernel, "attention") &&
        hlx_bench_stream_fma(r.bytes, r.flops, &sf_gbps, &sf_fpb) < 0) {
        fprintf(stderr, "helix bench: cannot measure streaming at the call's intensity (out "
                "of memory)\n");
        rc = 1;
    }
    hlx_pool_destroy(hlx_bench_pool);
    hlx_bench_pool = NULL;
    if (rc != 0)
        return rc;
    t_roof = fmax(r.bytes / (r.bw_gbps * 1e9), r.flops / (r.peak_gflops * 1e9));
    frac = t_roof / r.seconds;
    if (sf_gbps > 0) /* the plain loop's time over the same bytes */
        sf_s = r.bytes / (sf_gbps * 1e9);
    if (o.json) {
        printf("{\"kernel\": \"%s\", \"variant\": \"%s\", ", o.kernel, kern.name);
        if (!strcmp(o.kernel, "attention"))
            printf("\"kv_dtype\": \"%s\", \"context\": %zu, \"group\": %d, \"dk\": %d, "
                   "\"dv\": %d, \"kv_prefetch\": %d, \"kv_prefetch_pick\": %d, "
                   "\"fp8_widening\": \"%s\", \"fp8_scan\": %s, \"vector_path\": %s, "
                   "\"softcap\": %g, ",
                   hlx_dtype_name(o.dtype), o.context, ag, adk, adv, hlx_kernels_kv_prefetch(),
                   hlx_kernels_kv_prefetch_pick(), hlx_kernels_fp8_widening(kern.name),
                   o.fp8_scan ? "true" : "false", vector_path ? "true" : "false",
                   (double)o.softcap);
        else if (!strcmp(o.kernel, "merge"))
            printf("\"parts\": %d, \"heads\": %d, \"dv\": %d, ", o.parts, o.heads, o.dv);
        else
            printf("\"w_dtype\": \"%s\", \"w_layout\": \"%s\", \"m\": %d, \"n\": %d, "
                   "\"k\": %d, ", hlx_dtype_name(o.dtype),
                   o.wmx ? "mxfp4" : o.wbits == 4 ? (o.wao ? "packed4-ao" : "packed4")
                   : o.wbits == 8 ? (o.wao ? "packed8-ao" : "packed8")
                   : o.strips ? "strips" : "rows", o.m,
                   o.n, o.k);
        /* kv_bytes: the bytes the kernel must read (KV, partials or weights); ratios in six
         * significant digits, so that a slow run's small fractions still check against the
         * times they come from (bench_json.py) */
        printf("\"kv_bytes\": %.0f, \"flops\": %.0f, \"seconds\": %.6g, \"gbps\": %.4g, "
               "\"gflops\": %.4g, \"bw_gbps\": %.4g, \"peak_gflops\": %.4g, \"peak_isa\": \"%s\", "
               "\"roofline_seconds\": %.6g, \"bound\": \"%s\", \"roofline_fraction\": %.6g",
               r.bytes, r.flops, r.seconds, r.bytes / r.seconds * 1e-9, r.flops / r.seconds * 1e-9,
               r.bw_gbps, r.peak_gflops, hlx_bench_peak_isa, t_roof,
               r.bytes / r.bw_gbps > r.flops / r.peak_gflops ? "memory" : "compute", frac);
        if (o.threads > 1)
            printf(", \"threads\": %d, \"seconds_1thread\": %.6g, \"speedup\": %.3f", o.threads,
                   r.seconds_1, r.seconds_1 / r.seconds);
        if (sf_gbps > 0)
            printf(", \"stream_fma_gbps\": %.4g, \"stream_fma_flops_per_byte\": %.4g, "
                   "\"stream_fma_seconds\": %.6g, \"stream_fma_fraction\": %.6g, "
                   "\"stream_fma_roofline_fraction\": %.6g", sf_gbps, sf_fpb,
                   sf_s, sf_s / r.seconds, t_roof / sf_s);
        if (clen)
            printf(", \"incache_context\": %zu, \"incache_seconds\": %.6g, "
                   "\"incache_gflops\": %.4g, \"compute_efficiency\": %.6g",
                   clen, rcache.seconds, rcache.flops / rcache.seconds * 1e-9,
                   rcache.flops / rcache.seconds * 1e-9 / r.peak_gflops);
        hlx_bench_targets(&o, 1, frac, clen ? rcache.flops / rcache.seconds * 1e-9 / r.peak_gflops : 0.0,
                          o.threads > 1 ? r.seconds_1 / r.seconds : 0.0);
        printf("}\n");
    } else {
        printf("kernel %s, variant %s%s, dtype %s\n", o.kernel, kern.name,
               vector_path ? "" : " (its reference loop: no vector path for this head size)",
               hlx_dtype_name(!strcmp(o.kernel, "merge") ? HLX_DTYPE_F32 : o.dtype));
        if (!strcmp(o.kernel, "gemv"))
            printf("W %s%s%s\n", o.wmx ? "packed, MXFP4's E2M1 nibbles in blocks of 32 rows"
                                 : o.wbits == 4 ? "packed, 4-bit codes in groups of 128 rows"
                                 : o.wbits == 8 ? "packed, 8-bit codes in groups of 128 rows"
                                 : o.strips ? "in strips of 16 columns" : "row-major",
                   o.wao ? ", in act order" : "",
                   o.strips && !kern.w_s16 ? " (the runtime keeps W row-major here: "
                                             "HELIX_W_STRIPS=0, or a variant that reads "
                                             "strips by its reference loop)" : "");
        if (!strcmp(o.kernel, "attention") &&
            (!strcmp(kern.name, "avx512") || !strcmp(kern.name, "avx2"))) {
            const int set = hlx_kernels_kv_prefetch(), pick = hlx_kernels_kv_prefetch_pick();
            char sname[32], pname[32];
            printf("  KV prefetch (HELIX_KV_PREFETCH): %s%s%s%s\n",
                   hlx_kernels_kv_prefetch_name(set, sname, sizeof(sname)),
                   set == HLX_KV_PREFETCH_HARDWARE &&
                           (o.dtype == HLX_DTYPE_F32 || !strcmp(kern.name, "avx2"))
                       ? " (taken as software here)" : "",
                   set != HLX_KV_PREFETCH_AUTO ? ""
                   : pick >= 0 ? ", the fastest on the last long shard: "
                               : ", no shard long enough to time (hardware)",
                   set == HLX_KV_PREFETCH_AUTO && pick >= 0
                       ? hlx_kernels_kv_prefetch_name(pick, pname, sizeof(pname)) : "");
        }
        if (!strcmp(o.kernel, "attention") && o.dtype == HLX_DTYPE_FP8) {
            const char *w = hlx_kernels_fp8_widening(kern.name);
            printf("  fp8 widening: %s\n",
                   !strcmp(w, "lookup") ? "AVX512_VBMI byte lookups (HELIX_FP8_LOOKUP=0: "
                                          "through fp16)"
                   : !strcmp(w, "fp16") ? "through fp16 (blocks without NaN bytes; the others "
                                          "exactly by arithmetic)"
                   : !strcmp(w, "fp32-bits")
                       ? "as fp32 bit patterns, q scaled by 2^120 (blocks without NaN bytes, "
                         "every |q| < 256; through fp16 past that; the others exactly by "
                         "arithmetic)"
                                        : "exactly by arithmetic");
        }
        printf("  machine (measured now): read %.2f GB/s, fp32 FMA peak %.1f GFLOP/s (%s "
               "vectors)\n", r.bw_gbps, r.peak_gflops, hlx_bench_peak_isa);
        printf("  work: %.3g bytes, %.3g flops (%.2f flop/byte)%s\n", r.bytes, r.flops,
               r.flops / r.bytes, o.softcap > 0.0f ? "; scores soft-capped (its tanh "
               "not counted)" : "");
        printf("  time %.6f s: %.2f GB/s, %.2f GFLOP/s\n", r.seconds, r.bytes / r.seconds * 1e-9,
               r.flops / r.seconds * 1e-9);
        printf("  roofline %.6f s (%s-bound): roofline_fraction %.3f\n", t_roof,
               r.bytes / r.bw_gbps > r.flops / r.peak_gflops ? "memory" : "compute", frac);
        if (sf_gbps > 0)
            printf("  the same bytes streamed issuing %.4g flop/byte as plain FMAs (measured "
                   "after it): %.2f GB/s, %.4g s: stream_fma_fraction %.3f (the loop: %.3f "
                   "of the roofline)\n", sf_fpb, sf_gbps, sf_s, sf_s / r.seconds, t_roof / sf_s);
        if (sf_gbps > 0 && t_roof / sf_s > 1.02)
            printf("  (the loop beats the roofline: this core reads the kernel's streams at "
                   "%.2f GB/s, more than the one-stream read probe's %.2f, so roofline_fraction "
                   "is measured against a limit the core exceeds)\n", sf_gbps, r.bw_gbps);
        if (o.threads > 1)
            printf("  %d threads (limits above: all %d cores at once): one thread %.6f s, "
                   "speedup %.2fx\n", o.threads, o.threads, r.seconds_1, r.seconds_1 / r.seconds);
        if (clen)
            printf("  in cache (%zu tokens, %.2g MiB of KV, best of %d; FMA peak taken in turns"
                   " with it: %.1f): %.2f GFLOP/s, compute_efficiency %.3f of the FMA peak\n",
                   clen, rcache.bytes / 1048576.0, 20 * o.reps, r.peak_gflops, rcache.flops / rcache.seconds * 1e-9,
                   rcache.flops / rcache.seconds * 1e-9 / r.peak_gflops);
        if (frac > 1.0)
            printf("  (above 1: the working set is cache-resident; the DRAM roofline does "
                   "not bind it)\n");
        hlx_bench_targets(&o, 0, frac, clen ? rcache.flops / rcache.seconds * 1e-9 / r.peak_gflops : 0.0,
                          o.threads > 1 ? r.seconds_1 / r.seconds : 0.0);
    }
    return 0;
}
