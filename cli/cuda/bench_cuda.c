/* helix bench attention --device cuda: the CUDA split-KV attention over one (request, KV
 * head) shard timed with events, against the HBM bandwidth a device-to-device copy kernel
 * reaches in the same run (and the bandwidth the clocks promise). */
#include "hlx_bench_cuda.h"
#include "hlx_kernels_cuda.h"
#include "hlx_flags.h"

#include <helix/device.h>

#include <cuda_runtime.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double hlx_bc_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Waits for an event, at most 60 s (a hung kernel is an error, not a hang). */
static int hlx_bc_wait(cudaEvent_t e)
{
    double deadline = hlx_bc_now() + 60.0;
    cudaError_t r;

    while ((r = cudaEventQuery(e)) == cudaErrorNotReady) {
        if (hlx_bc_now() > deadline) {
            fprintf(stderr, "helix bench: the device did not finish within 60 s\n");
            return -1;
        }
        sched_yield();
    }
    if (r != cudaSuccess) {
        fprintf(stderr, "helix bench: device error: %s\n", cudaGetErrorString(r));
        return -1;
    }
    return 0;
}

/* Best time in seconds of reps runs of what; -1 on failure. */
typedef hlx_status_t (*hlx_bc_fn)(void *arg);

static double hlx_bc_time(hlx_bc_fn fn, void *arg, int reps, cudaEvent_t e0, cudaEvent_t e1)
{
    double best = INFINITY;
    int i;

    for (i = 0; i < reps + 1; i++) { /* the first run warms up */
        float ms = 0;
        if (cudaEventRecord(e0, NULL) != cudaSuccess || fn(arg) != HLX_OK ||
            cudaEventRecord(e1, NULL) != cudaSuccess || hlx_bc_wait(e1) != 0 ||
            cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
            return -1;
        if (i > 0 && ms * 1e-3 < best)
            best = ms * 1e-3;
    }
    return best;
}

typedef struct {
    void  *dst, *src;
    size_t bytes;
} hlx_bc_copy_t;

static hlx_status_t hlx_bc_copy(void *arg)
{
    hlx_bc_copy_t *c = arg;
    return hlx_cuda_copy(c->dst, c->src, c->bytes, NULL);
}

typedef struct {
    hlx_attn_desc_t d;
    int    nsplit;
    float *work;
} hlx_bc_attn_t;

static hlx_status_t hlx_bc_attn(void *arg)
{
    hlx_bc_attn_t *a = arg;
    return hlx_cuda_attn(&a->d, a->nsplit, a->work, NULL);
}

/* The flags, as parsed from the table. */
typedef struct {
    const char *device, *kv_dtype;
    int64_t     context, group, reps;
    int         variant, mla, json;
} hlx_bc_args_t;

enum { HLX_BC_DEVICE, HLX_BC_KV_DTYPE, HLX_BC_CONTEXT, HLX_BC_GROUP, HLX_BC_MLA, HLX_BC_REPS,
       HLX_BC_VARIANT, HLX_BC_JSON, HLX_BC_COUNT };

#define HLX_BC_OFF(_f) offsetof(hlx_bc_args_t, _f)
static const hlx_flag_t hlx_bc_flag_list[HLX_BC_COUNT] = {
    [HLX_BC_DEVICE] = { "device", HLX_FT_STRING, "cuda", 0, 0, 0, 0, NULL, HLX_BC_OFF(device),
                        "D", "cuda (this path)" },
    [HLX_BC_KV_DTYPE] = { "kv-dtype", HLX_FT_STRING, "bf16", 0, 0, 0, 0, NULL,
                          HLX_BC_OFF(kv_dtype), "T", "KV cache element type: bf16, fp8 or fp32" },
    [HLX_BC_CONTEXT] = { "context", HLX_FT_INT, "1M", 1, INT64_C(1) << 40, 0, 0, NULL,
                         HLX_BC_OFF(context), "N", "tokens of the shard, K/M/G suffixes" },
    [HLX_BC_GROUP] = { "group", HLX_FT_INT, "8", 1, 1024, 0, 0, NULL, HLX_BC_OFF(group), "G",
                       "query heads per KV head" },
    [HLX_BC_MLA] = { "mla", HLX_FT_BOOL, NULL, 0, 0, 0, 0, NULL, HLX_BC_OFF(mla), NULL,
                     "MLA absorbed shape: 128 heads, key 576, value 512 within it" },
    [HLX_BC_REPS] = { "reps", HLX_FT_INT, "10", 1, 1000, 0, 0, NULL, HLX_BC_OFF(reps), "R",
                      "timed runs, the best kept" },
    [HLX_BC_VARIANT] = { "variant", HLX_FT_CHOICE, "auto", 0, 0, 0, 0, "auto|warp|tokens|mma",
                         HLX_BC_OFF(variant), "V",
                         "auto, warp (a warp per head walks the tokens), tokens\n"
                         "(lanes over 32 tokens; GQA shapes up to 256) or mma (tensor\n"
                         "cores; bf16 KV, heads of 64 or 128)" },
    [HLX_BC_JSON] = { "json", HLX_FT_BOOL, NULL, 0, 0, 0, 0, NULL, HLX_BC_OFF(json), NULL,
                      "one JSON object" },
};

static const hlx_flag_table_t hlx_bc_flags = {
    "bench attention", hlx_bc_flag_list, HLX_BC_COUNT, NULL, 0,
};

static const char hlx_bc_usage_head[] =
    "usage: helix bench attention --device cuda [options]\n"
    "\n"
    "Times the CUDA split-KV attention of one (request, KV head) and reports its\n"
    "HBM bandwidth as a fraction of what a copy kernel reaches in the same run.\n"
    "options:\n";

static const char hlx_bc_usage_tail[] =
    "exit status: 0 ok, 1 device failure, 2 bad input or no CUDA device\n";

int hlx_bench_attention_cuda(int argc, char **argv)
{
    static const char *const variants[] = { "auto", "warp", "tokens", "mma" };
    hlx_bc_args_t a;
    int given[HLX_FLAGS_MAX];
    hlx_dtype_t t;
    size_t len, kv_bytes, es;
    int group, mla, reps, json, dk, dv, rc;
    hlx_devices_t dv_info;
    hlx_bc_copy_t cp = { NULL, NULL, 0 };
    hlx_bc_attn_t at;
    void *kv = NULL;
    float *q = NULL, *o = NULL, *lse = NULL, ho[4], hl = 0;
    cudaEvent_t e0 = NULL, e1 = NULL;
    double t_copy, t_attn, copy_gbps, attn_gbps, bytes;

    memset(&a, 0, sizeof(a));
    rc = hlx_flags_parse(&hlx_bc_flags, argc, argv, &a, given, hlx_bc_usage_head,
                         hlx_bc_usage_tail);
    if (rc >= 0)
        return rc;
    rc = 1;
    if (strcmp(a.device, "cuda")) {
        fprintf(stderr, "helix bench attention: --device %s: this path is cuda\n", a.device);
        return 2;
    }
    if (hlx_cuda_attn_set_variant(variants[a.variant]) != HLX_OK) {
        fprintf(stderr, "helix bench attention: --variant %s: not taken by the CUDA kernels\n",
                variants[a.variant]);
        return 2;
    }
    if (hlx_dtype_parse(a.kv_dtype, &t) != 0 ||
        (t != HLX_DTYPE_BF16 && t != HLX_DTYPE_FP8 && t != HLX_DTYPE_F32)) {
        fprintf(stderr, "helix bench attention: --kv-dtype: '%s' is not bf16, fp8 or fp32\n",
                a.kv_dtype);
        return 2;
    }
    len = (size_t)a.context;
    group = (int)a.group;
    reps = (int)a.reps;
    mla = a.mla;
    json = a.json;
    if (mla && given[HLX_BC_GROUP]) { /* as the CPU bench: --mla sets the shape */
        fprintf(stderr, "helix bench attention: --mla and --group: --mla sets the shape (128 "
                        "query heads, key 576, value 512) and --group would be ignored; drop "
                        "one of the two\n");
        return 2;
    }
    hlx_devices_query(&dv_info);
    if (dv_info.count < 1) {
        fprintf(stderr, "helix bench: --device cuda: no CUDA device (%s)\n", dv_info.reason);
        return 2;
    }
    if (mla)
        group = 128;
    dk = mla ? 576 : 128, dv = mla ? 512 : 128;
    es = (size_t)hlx_dtype_bytes(t);
    /* the KV of the shard, overflow-checked: len tokens of dk (+ dv) elements */
    if (len > ((size_t)1 << 40) || (size_t)(dk + (mla ? 0 : dv)) * es > SIZE_MAX / len) {
        fprintf(stderr, "helix bench: --context %zu: the KV shard exceeds 2^64 bytes\n", len);
        return 2;
    }
    kv_bytes = len * (size_t)(dk + (mla ? 0 : dv)) * es;
    bytes = (double)kv_bytes;
    if (cudaSetDevice(0) != cudaSuccess || cudaEventCreate(&e0) != cudaSuccess ||
        cudaEventCreate(&e1) != cudaSuccess) {
        fprintf(stderr, "helix bench: starting device 0 failed\n");
        return 1;
    }
    memset(&at, 0, sizeof(at));
    at.nsplit = 1; /* set from the descriptor below */
    if (cudaMalloc(&kv, kv_bytes) != cudaSuccess ||
        cudaMalloc((void **)&q, sizeof(float) * (size_t)group * dk) != cudaSuccess ||
        cudaMalloc((void **)&o, sizeof(float) * (size_t)group * dv) != cudaSuccess ||
        cudaMalloc((void **)&lse, sizeof(float) * (size_t)group) != cudaSuccess) {
        fprintf(stderr, "helix bench: --context %zu: %.2f GiB of KV do not fit on %s\n", len,
                bytes / (1 << 30), dv_info.dev[0].name);
        rc = 2;
        goto out;
    }
    /* every byte 0x3c: a finite value in each KV type, the same for every token, and
     * q = 0: every score is 0, so o is that value and lse = ln(len) (checked below) */
    if (cudaMemset(kv, 0x3c, kv_bytes) != cudaSuccess ||
        cudaMemset(q, 0, sizeof(float) * (size_t)group * dk) != cudaSuccess)
        goto out;
    at.d.group = group, at.d.dk = dk, at.d.dv = dv, at.d.len = len, at.d.kv_dtype = t;
    at.d.q = q, at.d.k = kv, at.d.v = mla ? kv : (char *)kv + len * (size_t)dk * es;
    at.d.k_stride = (size_t)dk, at.d.v_stride = (size_t)(mla ? dk : dv);
    at.d.scale = (float)(1.0 / sqrt((double)dk)), at.d.o = o, at.d.lse = lse;
    at.nsplit = hlx_cuda_attn_splits_desc(&at.d);
    if (cudaMalloc((void **)&at.work, sizeof(float) *
                   hlx_cuda_attn_work_floats(group, dv, at.nsplit)) != cudaSuccess) {
        fprintf(stderr, "helix bench: no room for %d splits' partials\n", at.nsplit);
        goto out;
    }
    if (hlx_cuda_attn_variant_for(&at.d) == NULL) {
        fprintf(stderr, "helix bench: --variant %s does not take this shape (dk %d, dv %d%s, "
                "%s KV)\n", variants[a.variant], dk, dv, mla ? ", MLA" : "", hlx_dtype_name(t));
        rc = 2;
        goto out;
    }
    t_attn = hlx_bc_time(hlx_bc_attn, &at, reps, e0, e1);
    if (t_attn <= 0 || cudaMemcpy(ho, o, sizeof(ho), cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(&hl, lse, sizeof(hl), cudaMemcpyDeviceToHost) != cudaSuccess) {
        fprintf(stderr, "helix bench: the CUDA attention failed\n");
        goto out;
    }
    {
        unsigned char b[4] = { 0x3c, 0x3c, 0x3c, 0x3c };
        float want = hlx_dtype_load(b, t, 0);
        if (fabsf(ho[0] - want) > 1e-3f * fabsf(want) || fabs(hl - log((double)len)) > 1e-3 * log((double)len + 1)) {
            fprintf(stderr, "helix bench: wrong result: o %g (want %g), lse %g (want %g)\n",
                    (double)ho[0], (double)want, (double)hl, log((double)len));
            goto out;
        }
    }
    cudaFree(at.work), at.work = NULL;
    /* the copy: as many bytes as the attention streams, at least 1 GiB (16-byte units) */
    cp.bytes = (kv_bytes > ((size_t)1 << 30) ? kv_bytes : ((size_t)1 << 30)) & ~(size_t)15;
    if (cudaMalloc(&cp.src, cp.bytes) != cudaSuccess || cudaMalloc(&cp.dst, cp.bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        cudaFree(cp.src), cp.src = NULL;
        cp.bytes = ((size_t)1 << 30);
        if (cudaMalloc(&cp.src, cp.bytes) != cudaSuccess || cudaMalloc(&cp.dst, cp.bytes) != cudaSuccess) {
            fprintf(stderr, "helix bench: no room for the copy reference\n");
            goto out;
        }
    }
    cudaMemset(cp.src, 1, cp.bytes);
    t_copy = hlx_bc_time(hlx_bc_copy, &cp, reps, e0, e1);
    if (t_copy <= 0) {
        fprintf(stderr, "helix bench: the copy kernel failed\n");
        goto out;
    }
    copy_gbps = 2.0 * (double)cp.bytes / t_copy * 1e-9; /* read + write */
    attn_gbps = bytes / t_attn * 1e-9;
    if (json)
        printf("{\"kernel\": \"attention\", \"device\": \"cuda\", \"gpu\": \"%s\", "
               "\"variant\": \"%s\", \"kv_dtype\": \"%s\", \"context\": %zu, \"group\": %d, \"mla\": %s, "
               "\"head_dim_k\": %d, \"head_dim_v\": %d, \"splits\": %d, \"bytes\": %.0f, "
               "\"seconds\": %.9f, \"bw_gbps\": %.1f, \"copy_gbps\": %.1f, "
               "\"hbm_clock_gbps\": %.1f, \"fraction_of_copy\": %.4f, "
               "\"fraction_of_clock\": %.4f}\n", dv_info.dev[0].name, hlx_cuda_attn_variant_for(&at.d),
               hlx_dtype_name(t), len,
               group, mla ? "true" : "false", dk, dv, at.nsplit, bytes, t_attn, attn_gbps,
               copy_gbps, dv_info.dev[0].hbm_gbps, attn_gbps / copy_gbps,
               dv_info.dev[0].hbm_gbps > 0 ? attn_gbps / dv_info.dev[0].hbm_gbps : 0.0);
    else
        printf("attention (%s) on %s: %s KV, %zu tokens, group %d%s, %d splits: %.3f ms, "
               "%.1f GB/s = %.2f of the copy kernel's %.1f GB/s (clocks: %.1f GB/s)\n",
               hlx_cuda_attn_variant_for(&at.d), dv_info.dev[0].name, hlx_dtype_name(t), len,
               group, mla ? " (MLA)" : "",
               at.nsplit, t_attn * 1e3, attn_gbps, attn_gbps / copy_gbps, copy_gbps,
               dv_info.dev[0].hbm_gbps);
    rc = 0;
out:
    if (rc == 1)
        fprintf(stderr, "helix bench: CUDA error: %s\n", cudaGetErrorString(cudaGetLastError()));
    cudaFree(kv), cudaFree(q), cudaFree(o), cudaFree(lse), cudaFree(at.work);
    cudaFree(cp.src), cudaFree(cp.dst);
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    return rc;
}
