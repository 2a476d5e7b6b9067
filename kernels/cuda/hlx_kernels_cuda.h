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
/* The same for a group of query heads: large groups (MLA) take longer splits, so that
 * their partials stay small against the KV they summarise. */
int hlx_cuda_attn_splits_for(size_t len, int group);
/* The split count for d on the current device: whole waves of the kernel hlx_cuda_attn
 * runs for d (from its occupancy), at least 256 tokens per split (the two above when the
 * device cannot be asked). */
int hlx_cuda_attn_splits_desc(const hlx_attn_desc_t *d);

/* Decode attention of one (request, KV head) over its shard, as hlx_kernels_t.attn:
 * KV split into nsplit chunks, each chunk's partial (o, lse) in work, then merged.
 * KV in rows (hlx_kv_layout_t blocks of 1, the layout of the scalar and amx tables): a
 * runtime with a CUDA path stores its device KV so, whatever the CPU variant uses.
 * kv_dtype f32, bf16 or fp8 e4m3; dk, dv <= 1024. stream: a cudaStream_t or NULL. */
hlx_status_t hlx_cuda_attn(const hlx_attn_desc_t *d, int nsplit, float *work, void *stream);

/* The attention kernel hlx_cuda_attn uses (process-wide): "auto" (default: "mma" for the
 * shapes it has run on a GPU, else "tokens" where the shape allows, else "warp"), "warp" (one warp per query head walks the tokens, any
 * shape, MLA), "tokens" (lanes over 32 tokens at once: dk, dv multiples of 4 up to 256,
 * separate K and V) or "mma" (tensor cores, a warp per 16 heads: bf16 KV, dk and dv 64 or
 * 128, rows 16-byte aligned). HLX_ERR_INVALID for another name. */
hlx_status_t hlx_cuda_attn_set_variant(const char *name);
/* The variant hlx_cuda_attn runs for d, NULL when the chosen one does not take d's shape
 * (hlx_cuda_attn then answers HLX_ERR_UNSUPPORTED). */
const char  *hlx_cuda_attn_variant_for(const hlx_attn_desc_t *d);

/* As hlx_kernels_t.merge, device pointers. */
hlx_status_t hlx_cuda_merge(int nparts, int nheads, int dv, const float *o_parts,
                            const float *lse_parts, float *o, float *lse, void *stream);
hlx_status_t hlx_cuda_rmsnorm(float *y, const float *x, const float *w, int n, float eps,
                              void *stream);
/* r->inv_freq in device-readable memory (device or managed) */
hlx_status_t hlx_cuda_rope(float *x, int nheads, int hd, int rot_dim, int64_t pos,
                           const hlx_rope_tab_t *r, void *stream);
hlx_status_t hlx_cuda_swiglu(float *y, const float *gate, const float *up, int n,
                             void *stream);
/* y[M][N] (+)= x[M][K] W[K][N]: f32 W through cuBLAS; bf16 W by a GEMV-style kernel with
 * fp32 accumulation over K splits added in a fixed order (cuBLAS has no fp32 x bf16
 * product): the same bits run to run. */
hlx_status_t hlx_cuda_gemm(int M, int N, int K, const float *x, const void *w,
                           hlx_dtype_t w_dtype, float *y, int accumulate, void *stream);
/* batch of them: y_b = y + b sy (rows ldy apart) (+)= x_b = x + b sx (rows ldx apart) times
 * W_b = w + b sw elements (f32: cuBLAS's strided batched GEMM; bf16: grid.z) */
hlx_status_t hlx_cuda_gemm_batched(int batch, int M, int N, int K, const float *x, size_t ldx,
                                   size_t sx, const void *w, size_t sw, hlx_dtype_t w_dtype,
                                   float *y, size_t ldy, size_t sy, int accumulate,
                                   void *stream);
/* Opens cuBLAS (dlopen, once per process; hlx_cuda_gemm does it at its first f32 call):
 * HLX_ERR_UNSUPPORTED when no libcublas.so.N is on the loader's path. */
hlx_status_t hlx_cuda_blas_open(void);

/* The last failure of a CUDA call or launch on this host thread, in words ("hlx_cuda_gemm:
 * cudaErrorInvalidValue (invalid argument)"), "" when none since hlx_cuda_error_clear: the
 * runtime appends it to a failed step's message. hlx_cuda_note records one (err: a
 * cudaError_t, 0 for none; what: the function that saw it; why: text, or NULL for the CUDA
 * error's own words) and returns its status (HLX_OK for err 0 and why NULL). */
const char  *hlx_cuda_error_text(void);
void         hlx_cuda_error_clear(void);
hlx_status_t hlx_cuda_note(int err, const char *what, const char *why);

/* The CUDA execution backend's per-layer kernels (backend_ops.cu), as the ops of
 * runtime/hlx_backend.h with device pointers, enqueued on stream; none synchronises. */
hlx_status_t hlx_cuda_rmsnorm_rows(float *y, const float *x, const float *w, int rows, int n,
                                   float eps, void *stream);
/* in place, nheads heads of hd floats of each row (row r at x + r ld, head h at + h hd) */
hlx_status_t hlx_cuda_rmsnorm_heads(float *x, int rows, size_t ld, int nheads, int hd,
                                    const float *w, float eps, void *stream);
/* OLMo 2's norms split over ranks: ss[r] = the sum of squares of x[r][0..n) (row r at
 * x + r ld); then, the ranks' sums added, x[r][i] *= w[i] / sqrt(ss[r] / total + eps) */
hlx_status_t hlx_cuda_sumsq_rows(const float *x, size_t ld, int rows, int n, float *ss,
                                 void *stream);
hlx_status_t hlx_cuda_rmsnorm_ss(float *x, size_t ld, int rows, int n, const float *w,
                                 const float *ss, int total, float eps, void *stream);
/* StarCoder2's LayerNorm: y[r][i] = (x[r][i] - mean) / sqrt(var + eps) w[i] + b[i] over rows
 * of n (consecutive), in double as the host's; b NULL: no bias */
hlx_status_t hlx_cuda_layernorm_rows(float *y, const float *x, const float *w, const float *b,
                                     int rows, int n, float eps, void *stream);
/* x[r][i] = f(x[r][i] + b[i]) in place (row r at x + r ld): kind 0 silu, 1 gelu_tanh */
hlx_status_t hlx_cuda_bias_act(float *x, size_t ld, const float *b, int rows, int n, int kind,
                               void *stream);
/* x[r][0..n) += b[0..n), row r at x + r ld */
hlx_status_t hlx_cuda_add_rows(float *x, size_t ld, const float *b, int rows, int n,
                               void *stream);
hlx_status_t hlx_cuda_rope_rows(float *x, int rows, size_t ld, int nheads, int hd,
                                int rot_dim, int64_t pos, const hlx_rope_tab_t *r,
                                void *stream);
/* act[r][i] = f(gu[r][i]) * gu[r][n + i], f by kind (hlx_act_t: 0 silu, 1 gelu_tanh); kind
 * 2 (swiglu_clamp): g = min(gate, limit), act = g sigmoid(alpha g) (clamp(up, +-limit) + 1). */
hlx_status_t hlx_cuda_glu_rows(float *act, const float *gu, int rows, int n, int kind,
                               float alpha, float limit, void *stream);
/* o[r][0..dv) *= 1 / (1 + exp(sinks[r % cnt] - lse[r])): attention sinks on merged heads. */
hlx_status_t hlx_cuda_attn_sink(float *o, const float *lse, const float *sinks, int rows,
                                int cnt, int dv, void *stream);
/* KV in rows (blocks of 1): slot t of shards [shard0, shard0 + nheads) of cap slots. */
hlx_status_t hlx_cuda_kv_append(void *kc, void *vc, hlx_dtype_t kv_dtype, int dk, int dv,
                                size_t cap, size_t shard0, size_t t, int nheads,
                                const float *k_new, const float *v_new, float k_mul,
                                float v_mul, void *stream);
/* One peer's slice of the exchange (wire layout of hlx_backend.h): dst is the peer's block
 * at request b0; pieces [h0, h0 + cnt) of rows of q_local pieces, sub pieces a head (the
 * LSE of piece p is lsepart[p / sub]). */
hlx_status_t hlx_cuda_pack_peer(float *dst, const float *opart, const float *lsepart,
                                int q_local, int sub, int h0, int cnt, int dv, int b0, int b1,
                                void *stream);
/* src is peer j's block at request b0; oparts_j, lseparts_j are peer j's parts. */
hlx_status_t hlx_cuda_unpack_peer(float *oparts_j, float *lseparts_j, const float *src,
                                  int cnt, int dv, int b0, int b1, void *stream);
hlx_status_t hlx_cuda_add(float *x, const float *y, size_t n, void *stream);
hlx_status_t hlx_cuda_scale(float *x, size_t n, float s, void *stream); /* x *= s */
/* cap > 0: the copied values as cap x tanh(src / cap) */
hlx_status_t hlx_cuda_pad_rows(float *dst, int dcols, const float *src, int scols, int rows,
                               float fill, float cap, void *stream);
/* dst[r][0..n) = src[idx[r]][0..n) for rows rows (idx: device memory) */
hlx_status_t hlx_cuda_gather_rows(float *dst, const float *src, const int *idx, int rows, int n,
                                  void *stream);
/* y[idx[r]][0..n) += w[r] x[r][0..n) in row order, the product rounded before the sum as
 * on a host without FMA contraction (idx NULL: row r; no index twice) */
hlx_status_t hlx_cuda_scatter_add(float *y, const float *x, const int *idx, const float *w,
                                  int rows, int n, void *stream);
/* tokens: device memory, [B] */
hlx_status_t hlx_cuda_argmax(const float *logits, int n, int B, int vocab, int pad,
                             int *tokens, void *stream);
/* Device-to-device copy by a kernel (16-byte aligned, multiple of 16 bytes): the HBM
 * bandwidth the benchmarks compare against (read + write bytes per second). */
hlx_status_t hlx_cuda_copy(void *dst, const void *src, size_t bytes, void *stream);

#ifdef __cplusplus
}
#endif
#endif
