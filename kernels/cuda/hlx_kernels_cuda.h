/* CUDA kernels (optional meson feature 'cuda'): split-KV flash-decoding attention with an LSE
 * per (request, head) for GQA and MLA, the exact merge, RMSNorm, RoPE, SwiGLU, and GEMM
 * through cuBLAS. Same semantics as the CPU ops table (hlx_kernels.h); every pointer in a
 * descriptor is a device pointer. Built only when nvcc is found; runs only with a GPU. */
#ifndef HLX_KERNELS_CUDA_H
#define HLX_KERNELS_CUDA_H

#include "hlx_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices (0 when there is no GPU or no driver). */
int hlx_cuda_device_count(void);
/* Name and HBM bandwidth (GB/s, from the memory clock and bus width) of device 0. */
hlx_status_t hlx_cuda_device_info(char *name, size_t name_len, double *hbm_gbps_p);

/* Scratch floats hlx_cuda_attn needs for nsplit splits of a group-head problem. */
size_t hlx_cuda_attn_work_floats(int group, int dv, int nsplit);
/* A split count that fills the device for a single (request, KV head) of length len. */
int hlx_cuda_attn_splits(size_t len);

/* Decode attention of one (request, KV head) over its shard, as hlx_kernels_t.attn:
 * KV split into nsplit chunks, each chunk's partial (o, lse) in work, then merged.
 * KV in rows (hlx_kv_layout_t blocks of 1, the layout of the scalar and amx tables): a
 * runtime with a CUDA path stores its device KV so, whatever the CPU variant uses.
 * kv_dtype f32, bf16 or fp8 e4m3; dk, dv <= 1024. stream: a cudaStream_t or NULL. */
hlx_status_t hlx_cuda_attn(const hlx_attn_desc_t *d, int nsplit, float *work, void *stream);

/* As hlx_kernels_t.merge, device pointers. */
hlx_status_t hlx_cuda_merge(int nparts, int nheads, int dv, const float *o_parts,
                            const float *lse_parts, float *o, float *lse, void *stream);
hlx_status_t hlx_cuda_rmsnorm(float *y, const float *x, const float *w, int n, float eps,
                              void *stream);
hlx_status_t hlx_cuda_rope(float *x, int nheads, int hd, int rot_dim, int64_t pos,
                           float theta, void *stream);
hlx_status_t hlx_cuda_swiglu(float *y, const float *gate, const float *up, int n,
                             void *stream);
/* y[M][N] (+)= x[M][K] W[K][N]: f32 W through cuBLAS; bf16 W by a GEMV-style kernel with
 * fp32 accumulation and split-K atomics (cuBLAS has no fp32 x bf16 product), so bf16
 * results can differ in the last bits from run to run. */
hlx_status_t hlx_cuda_gemm(int M, int N, int K, const float *x, const void *w,
                           hlx_dtype_t w_dtype, float *y, int accumulate, void *stream);

#ifdef __cplusplus
}
#endif
#endif
