/* model: checkpoint read throughput (slices converted out of the mapped shards) against
 * this machine's memcpy bandwidth measured in the same run. */
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

/* Best of 3 seconds per byte moved. */
typedef struct {
    const char *what;
    const char *tensor;
    int         transpose;
    hlx_dtype_t dt;
} bench_t;

int main(void)
{
    static const bench_t benches[] = {
        { "bf16 -> bf16 rows", "w.bf16", 0, HLX_DTYPE_BF16 },
        { "bf16 -> f32 rows", "w.bf16", 0, HLX_DTYPE_F32 },
        { "bf16 -> bf16 transposed", "w.bf16", 1, HLX_DTYPE_BF16 },
        { "bf16 -> f32 transposed", "w.bf16", 1, HLX_DTYPE_F32 },
        { "fp8 x scale -> bf16 transposed", "w.fp8", 1, HLX_DTYPE_BF16 },
        { "f32 -> f32 rows", "w.f32", 0, HLX_DTYPE_F32 },
    };
    hlx_hf_expect_t list[4];
    char dir[] = "/tmp/hlx_bench_ckpt_XXXXXX", err[1024];
    hlx_ckpt_t *ck = NULL;
    void *src, *dst;
    double memcpy_gbs = 0, t0;
    size_t bytes = (size_t)N * N * 4, b;
    int rep;

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
        hlx_ckpt_open(dir, &ck, err, sizeof(err)) != HLX_OK) {
        fprintf(stderr, "bench_ckpt: %s\n", err);
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
           "CPU second\n", N, N);
    printf("machine limit, same run: memcpy %.2f GB/s (one core, %zu MiB)\n\n", memcpy_gbs,
           bytes >> 20);
    for (b = 0; b < sizeof(benches) / sizeof(benches[0]); b++) {
        const hlx_ckpt_tensor_t *t = hlx_ckpt_find(ck, benches[b].tensor);
        double best = 0;
        for (rep = 0; rep < 4; rep++) { /* the first pass faults the pages in */
            t0 = now();
            if (hlx_ckpt_read_block(ck, t, 0, N, 0, N, benches[b].transpose, dst, benches[b].dt,
                                    N) != HLX_OK) {
                fprintf(stderr, "bench_ckpt: %s\n", hlx_ckpt_error(ck));
                return 1;
            }
            t0 = now() - t0;
            if (rep > 0 && (double)(t->end - t->begin) / t0 / 1e9 > best)
                best = (double)(t->end - t->begin) / t0 / 1e9;
        }
        printf("  %-32s %7.2f GB/s  %5.2f x memcpy\n", benches[b].what, best, best / memcpy_gbs);
    }
    hlx_ckpt_close(ck);
    free(src);
    free(dst);
    snprintf(err, sizeof(err), "rm -rf %s", dir);
    return system(err) == 0 ? 0 : 1;
}
