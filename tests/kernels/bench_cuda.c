/* GPU decode-attention benchmark: split-KV flash-decoding over a bf16 (or fp8/f32) KV shard
 * of one (request, KV head), timed with CUDA events, reported as GB/s against the device's
 * HBM bandwidth (from its memory clock and bus width). Exit 77 without a GPU.
 * Usage: bench_cuda [context tokens, default 1048576] [bf16|fp8|f32] [group, default 8] */
#include "hlx_kernels_cuda.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    size_t len = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t)1 << 20;
    hlx_dtype_t t = HLX_DTYPE_BF16;
    int group = argc > 3 ? atoi(argv[3]) : 8, dk = 128, dv = 128, nsplit, i;
    double hbm, es, best = 1e30;
    char name[256];
    hlx_attn_desc_t d;
    void *kv;
    float *q, *o, *lse, *work;
    cudaEvent_t e0, e1;

    if (hlx_cuda_device_count() < 1) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    if (argc > 2 && hlx_dtype_parse(argv[2], &t) != 0) {
        fprintf(stderr, "bench_cuda: unknown KV type '%s'\n", argv[2]);
        return 2;
    }
    es = hlx_dtype_bytes(t);
    hlx_cuda_device_info(name, sizeof(name), &hbm);
    nsplit = hlx_cuda_attn_splits(len);
    if (cudaMalloc(&kv, (size_t)(len * (dk + dv) * es)) != cudaSuccess ||
        cudaMalloc((void **)&q, sizeof(float) * group * dk) != cudaSuccess ||
        cudaMalloc((void **)&o, sizeof(float) * group * dv) != cudaSuccess ||
        cudaMalloc((void **)&lse, sizeof(float) * group) != cudaSuccess ||
        cudaMalloc((void **)&work, sizeof(float) * hlx_cuda_attn_work_floats(group, dv, nsplit)) != cudaSuccess) {
        fprintf(stderr, "bench_cuda: out of device memory\n");
        return 1;
    }
    cudaMemset(kv, 0x3c, (size_t)(len * (dk + dv) * es)); /* finite values in every type */
    cudaMemset(q, 0, sizeof(float) * group * dk);
    memset(&d, 0, sizeof(d));
    d.group = group; d.dk = dk; d.dv = dv; d.len = len; d.kv_dtype = t;
    d.q = q; d.k = kv; d.v = (char *)kv + (size_t)(len * dk * es);
    d.k_stride = dk; d.v_stride = dv; d.scale = 0.088f; d.o = o; d.lse = lse;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (i = 0; i < 20; i++) {
        float ms;
        cudaEventRecord(e0, NULL);
        if (hlx_cuda_attn(&d, nsplit, work, NULL) != HLX_OK) {
            fprintf(stderr, "bench_cuda: attention failed\n");
            return 1;
        }
        cudaEventRecord(e1, NULL);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&ms, e0, e1);
        if (i > 2 && ms * 1e-3 < best)
            best = ms * 1e-3;
    }
    printf("{\"device\": \"%s\", \"kernel\": \"attention\", \"kv_dtype\": \"%s\", \"context\": %zu, "
           "\"group\": %d, \"splits\": %d, \"kv_bytes\": %.0f, \"seconds\": %.6g, \"gbps\": %.1f, "
           "\"hbm_gbps\": %.0f, \"hbm_fraction\": %.3f}\n", name, hlx_dtype_name(t), len, group,
           nsplit, len * (dk + dv) * es, best, len * (dk + dv) * es / best * 1e-9, hbm,
           len * (dk + dv) * es / best * 1e-9 / hbm);
    return 0;
}
