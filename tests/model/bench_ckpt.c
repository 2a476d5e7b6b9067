/* model: checkpoint read throughput (slices converted out of the mapped shards), with the
 * portable conversions and the best this CPU runs, against this machine's memcpy bandwidth
 * measured in the same run. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hlx_ckpt.h"

#define N 4096

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the machine is shared */
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static hlx_status_t fill(void *ctx, const hlx_hf_expect_t *t, size_t idx, int64_t row,
                         float *dst)
{
    int64_t c, cols = t->ndim == 2 ? t->shape[1] : t->shape[0];

    (void)ctx; (void)idx;
    for (c = 0; c < cols; c++)
        dst[c] = t->cls == HLX_HFC_SCALE ? 0.0625f : (float)((row * 7 + c) % 29 - 14) * 0.0625f;
    return HLX_OK;
}

/* dir/model.safetensors (dir made as needed) opened for writing, its header hdr (len
 * bytes) written: the caller writes the data and closes it. */
static FILE *st_open(const char *dir, const char *hdr, size_t len)
{
    char path[600];
    FILE *f;
    int i;

    snprintf(path, sizeof(path), "mkdir -p %s", dir);
    if (system(path) != 0)
        return NULL;
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    if ((f = fopen(path, "wb")) == NULL)
        return NULL;
    for (i = 0; i < 8; i++)
        fputc((int)(len >> (8 * i)) & 0xff, f);
    fwrite(hdr, 1, len, f);
    return f;
}

/* A GPTQ (or AWQ) 4-bit set x.* of N x N, group 128, random words, F16 scales 1/64, as
 * dir/model.safetensors (the writer above takes floats only). */
static int write_packed(const char *dir, int awq)
{
    const size_t nw = (size_t)N * N / 8, nz = (size_t)(N / 128) * (N / 8),
                 ns = (size_t)(N / 128) * N;
    char hdr[1024];
    uint32_t *w = malloc(nw * 4), x = 12345;
    uint16_t h = 0x2400; /* 2^-6 */
    size_t i, len;
    FILE *f;

    if (w == NULL)
        return -1;
    len = (size_t)snprintf(hdr, sizeof(hdr),
        "{\"x.qweight\":{\"dtype\":\"I32\",\"shape\":[%d,%d],\"data_offsets\":[0,%zu]},"
        "\"x.qzeros\":{\"dtype\":\"I32\",\"shape\":[%d,%d],\"data_offsets\":[%zu,%zu]},"
        "\"x.scales\":{\"dtype\":\"F16\",\"shape\":[%d,%d],\"data_offsets\":[%zu,%zu]}}",
        awq ? N : N / 8, awq ? N / 8 : N, nw * 4, N / 128, N / 8, nw * 4, nw * 4 + nz * 4,
        N / 128, N, nw * 4 + nz * 4, nw * 4 + nz * 4 + ns * 2);
    if ((f = st_open(dir, hdr, len)) == NULL)
        return -1;
    for (i = 0; i < nw; i++) { /* xorshift */
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        w[i] = x;
    }
    fwrite(w, 4, nw, f);
    fwrite(w, 4, nz, f); /* zero points: random words too */
    for (i = 0; i < ns; i++)
        fwrite(&h, 2, 1, f);
    free(w);
    return fclose(f) == 0 ? 0 : -1;
}

/* One MXFP4 expert of N x N as gpt-oss stores it (m_blocks U8 [1, N, N / 32, 16], m_scales
 * U8 [1, N, N / 32]): random nibbles, scale bytes 120 .. 127, as dir/model.safetensors. */
static int write_mx(const char *dir)
{
    const size_t nb = (size_t)N * N / 2, ns = (size_t)N * N / 32;
    char hdr[1024];
    size_t i, len;
    FILE *f;

    len = (size_t)snprintf(hdr, sizeof(hdr),
        "{\"m_blocks\":{\"dtype\":\"U8\",\"shape\":[1,%d,%d,16],\"data_offsets\":[0,%zu]},"
        "\"m_scales\":{\"dtype\":\"U8\",\"shape\":[1,%d,%d],\"data_offsets\":[%zu,%zu]}}",
        N, N / 32, nb, N, N / 32, nb, nb + ns);
    if ((f = st_open(dir, hdr, len)) == NULL)
        return -1;
    for (i = 0; i < nb; i++)
        fputc((int)((i * 2654435761u) >> 13) & 0xff, f);
    for (i = 0; i < ns; i++)
        fputc(120 + (int)(i % 8), f);
    return fclose(f) == 0 ? 0 : -1;
}

/* What a bench reads: the whole tensor as one block, or in the weight loader's groups (G
 * rows of the checkpoint's [out][in] a read, transposed into a [in][G] scratch, as
 * hlx_engine_wload reads a K x N matrix: G = 2 MiB / (16 K es) x 16). */
typedef struct {
    const char *what;
    int         ck;       /* 0: the float tensors, 1: GPTQ, 2: AWQ, 3: MXFP4 (a view) */
    const char *tensor;
    int         transpose;
    hlx_dtype_t dt;
    int         groups;
} bench_t;

/* CPU seconds of one pass of b over t. */
static double run(hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t, const bench_t *b, void *dst)
{
    const int G = (int)(((size_t)2 << 20) / ((size_t)N * 2 * 16) * 16);
    double t0 = now();
    int n0;

    if (!b->groups) {
        if (hlx_ckpt_read_block(ck, t, 0, N, 0, N, b->transpose, dst, b->dt, N) != HLX_OK)
            return -1;
    } else {
        for (n0 = 0; n0 < N; n0 += G)
            if (hlx_ckpt_read_block(ck, t, n0, G, 0, N, 1, dst, b->dt, G) != HLX_OK)
                return -1;
    }
    return now() - t0;
}

int main(void)
{
    static const bench_t benches[] = {
        { "bf16 -> bf16 rows", 0, "w.bf16", 0, HLX_DTYPE_BF16, 0 },
        { "bf16 -> f32 rows", 0, "w.bf16", 0, HLX_DTYPE_F32, 0 },
        { "bf16 -> bf16 transposed", 0, "w.bf16", 1, HLX_DTYPE_BF16, 0 },
        { "bf16 -> bf16 loader groups", 0, "w.bf16", 1, HLX_DTYPE_BF16, 1 },
        { "bf16 -> f32 transposed", 0, "w.bf16", 1, HLX_DTYPE_F32, 0 },
        { "fp8 x scale -> bf16 transposed", 0, "w.fp8", 1, HLX_DTYPE_BF16, 0 },
        { "fp8 x scale -> bf16 loader groups", 0, "w.fp8", 1, HLX_DTYPE_BF16, 1 },
        { "f32 -> f32 rows", 0, "w.f32", 0, HLX_DTYPE_F32, 0 },
        { "f32 -> bf16 loader groups", 0, "w.f32", 1, HLX_DTYPE_BF16, 1 },
        { "GPTQ 4-bit -> bf16 loader groups", 1, "x.weight", 1, HLX_DTYPE_BF16, 1 },
        { "GPTQ 4-bit codes -> f32 groups", 1, "x.weight", 1, HLX_CKPT_QCODE, 1 },
        { "AWQ 4-bit -> bf16 loader groups", 2, "x.weight", 1, HLX_DTYPE_BF16, 1 },
        { "MXFP4 -> bf16 loader groups", 3, "m.weight", 1, HLX_DTYPE_BF16, 1 },
        { "MXFP4 codes -> f32 groups", 3, "m.weight", 1, HLX_CKPT_QCODE, 1 },
    };
    /* gpt-oss's released form, read through an MXFP4 view as the runtime reads its experts */
    static const hlx_ckpt_view_t mv = { "m.weight", "m_blocks", 1, N, N, 0, 0, N, 1, 0, 1, 0, 0, 0 };
    hlx_hf_expect_t list[4];
    char dir[] = "/tmp/hlx_bench_ckpt_XXXXXX", sub[64], err[1024];
    hlx_ckpt_t *ck[4] = { NULL, NULL, NULL, NULL };
    void *src, *dst;
    double memcpy_gbs = 0, t0;
    size_t bytes = (size_t)N * N * 4, b;
    int rep, k, best;

    memset(list, 0, sizeof(list));
    snprintf(list[0].name, sizeof(list[0].name), "w.bf16");
    list[0].dtype = HLX_ST_BF16;
    snprintf(list[1].name, sizeof(list[1].name), "w.fp8");
    list[1].dtype = HLX_ST_F8_E4M3;
    snprintf(list[2].name, sizeof(list[2].name), "w.fp8_scale_inv");
    list[2].dtype = HLX_ST_F32;
    list[2].cls = HLX_HFC_SCALE;
    snprintf(list[3].name, sizeof(list[3].name), "w.f32");
    list[3].dtype = HLX_ST_F32;
    for (b = 0; b < 4; b++) {
        list[b].ndim = 2;
        list[b].shape[0] = list[b].shape[1] = b == 2 ? N / 128 : N;
    }
    if (mkdtemp(dir) == NULL)
        return 1;
    if (hlx_ckpt_write(dir, list, 4, 2, NULL, fill, NULL, err, sizeof(err)) != HLX_OK ||
        hlx_ckpt_open(dir, &ck[0], err, sizeof(err)) != HLX_OK) {
        fprintf(stderr, "bench_ckpt: %s\n", err);
        return 1;
    }
    for (k = 1; k <= 2; k++) {
        const hlx_ckpt_packing_t pk = { k == 1 ? HLX_PACK_GPTQ : HLX_PACK_AWQ, 4, 128, 0, 0 };
        snprintf(sub, sizeof(sub), "%s/%s", dir, k == 1 ? "gptq" : "awq");
        if (write_packed(sub, k == 2) != 0 || hlx_ckpt_open(sub, &ck[k], err, sizeof(err)) ||
            hlx_ckpt_set_packed(ck[k], &pk, NULL, NULL) != HLX_OK) {
            fprintf(stderr, "bench_ckpt: %s: %s\n", sub, ck[k] ? hlx_ckpt_error(ck[k]) : err);
            return 1;
        }
    }
    snprintf(sub, sizeof(sub), "%s/mx", dir);
    if (write_mx(sub) != 0 || hlx_ckpt_open(sub, &ck[3], err, sizeof(err)) != HLX_OK ||
        hlx_ckpt_set_views(ck[3], &mv, 1) != HLX_OK) {
        fprintf(stderr, "bench_ckpt: %s: %s\n", sub, ck[3] ? hlx_ckpt_error(ck[3]) : err);
        return 1;
    }
    src = malloc(bytes);
    dst = malloc(bytes);
    if (src == NULL || dst == NULL)
        return 1;
    memset(src, 1, bytes);
    memset(dst, 2, bytes);
    for (rep = 0; rep < 5; rep++) {
        t0 = now();
        memcpy(dst, src, bytes);
        t0 = now() - t0;
        if (bytes / t0 / 1e9 > memcpy_gbs)
            memcpy_gbs = (double)bytes / t0 / 1e9;
    }
    printf("checkpoint reads of a %d x %d tensor (warm page cache), GB/s of source bytes per "
           "CPU second and ns per element, best of 3; the portable conversions and the best "
           "this CPU runs (%s)\n", N, N, hlx_ckpt_set_cvt(ck[0], 1));
    printf("machine limit, same run: memcpy %.2f GB/s (one core, %zu MiB)\n\n", memcpy_gbs,
           bytes >> 20);
    printf("  %-34s %18s %24s\n", "", "portable", "best");
    for (b = 0; b < sizeof(benches) / sizeof(benches[0]); b++) {
        hlx_ckpt_t *c = ck[benches[b].ck];
        const hlx_ckpt_tensor_t *t = hlx_ckpt_find(c, benches[b].tensor);
        /* source bytes: the packed words' (and MXFP4's) half byte an element */
        const double sb = t->pack || benches[b].ck == 3 ? (double)N * N / 2
                                                        : (double)(t->end - t->begin);
        printf("  %-34s", benches[b].what);
        for (best = 0; best <= 1; best++) {
            double tmin = 1e30, s;
            hlx_ckpt_set_cvt(c, best);
            for (rep = 0; rep < 4; rep++) { /* the first pass faults the pages in */
                if ((s = run(c, t, &benches[b], dst)) < 0) {
                    fprintf(stderr, "bench_ckpt: %s\n", hlx_ckpt_error(c));
                    return 1;
                }
                if (rep > 0 && s < tmin)
                    tmin = s;
            }
            printf("  %6.2f GB/s %5.2f ns", sb / tmin / 1e9, tmin * 1e9 / ((double)N * N));
            if (best)
                printf(" %5.2f x", sb / tmin / 1e9 / memcpy_gbs);
        }
        printf("\n");
    }
    for (k = 0; k < 4; k++)
        hlx_ckpt_close(ck[k]);
    free(src);
    free(dst);
    snprintf(err, sizeof(err), "rm -rf %s", dir);
    return system(err) == 0 ? 0 : 1;
}
