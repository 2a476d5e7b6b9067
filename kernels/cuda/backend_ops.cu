// The small per-layer kernels of the CUDA execution backend: batched RMSNorm, RoPE and
// SwiGLU rows, KV append in rows, the exchange's pack and unpack, add, row padding, the
// MoE's row gather and weighted scatter-add, the greedy argmax, and a device-to-device copy that measures the HBM bandwidth.
#include "hlx_kernels_cuda.h"

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#define HLX_CU_GRID_MAX 65535u // blocks per grid dimension used for rows (y and z limits)

#define hlx_cu_launched() hlx_cuda_note((int)cudaGetLastError(), __func__, NULL)

// Blocks for n elements at 256 threads, capped; kernels loop with a grid stride.
static unsigned hlx_cu_blocks(size_t n)
{
    size_t b = (n + 255) / 256;
    return b < 1 ? 1u : b > 65535 ? 65535u : (unsigned)b;
}

// The block's sum of each thread's v (blockDim.x a power of two, at most 256), in a fixed
// tree order, returned to every thread; part is free again when it returns.
__device__ double hlx_cu_block_sum(double *part, double v)
{
    double total;

    part[threadIdx.x] = v;
    __syncthreads();
    for (int st = blockDim.x / 2; st > 0; st >>= 1) {
        if ((int)threadIdx.x < st)
            part[threadIdx.x] += part[threadIdx.x + st];
        __syncthreads();
    }
    total = part[0];
    __syncthreads(); // every thread has read part[0] before a caller reuses it
    return total;
}

// One block per vector of n: the sum of squares in double (the CPU reference's order
// differs only in rounding), then y = x / sqrt(mean + eps) * w. Vector i = i0 + block is
// head i % nh of row i / nh, at (i / nh) ld + (i % nh) n (rows of one vector: nh 1, ld n).
__global__ void hlx_cu_rmsnorm_rows(float *y, const float *x, const float *w, int n,
                                    float eps, size_t ld, int nh, int i0)
{
    __shared__ double part[256];
    const int i = i0 + (int)blockIdx.x;
    const size_t at = (size_t)(i / nh) * ld + (size_t)(i % nh) * n;
    const float *xr = x + at;
    float *yr = y + at;
    double ss = 0.0;

    for (int i = threadIdx.x; i < n; i += blockDim.x)
        ss += (double)xr[i] * xr[i];
    float r = (float)(1.0 / sqrt(hlx_cu_block_sum(part, ss) / n + eps));
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        yr[i] = xr[i] * r * w[i];
}

// grid.y = row; thread per (head, pair) of the row at x + row * ld.
__global__ void hlx_cu_rope_rows(float *x, size_t ld, int nheads, int hd, int rot_dim,
                                 long long pos, const double *inv_freq, float mscale)
{
    int half = rot_dim / 2, idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= nheads * half)
        return;
    int h = idx / half, i = idx % half;
    double ang = (double)pos * inv_freq[i];
    float c = (float)(cos(ang) * mscale), s = (float)(sin(ang) * mscale);
    float *xh = x + (size_t)blockIdx.y * ld + (size_t)h * hd;
    float a = xh[2 * i], b = xh[2 * i + 1];
    xh[2 * i] = a * c - b * s;
    xh[2 * i + 1] = a * s + b * c;
}

// act[r][i] = f(gu[r][i]) * gu[r][n + i]: f silu (kind 0) or gelu_tanh (kind 1), the host
// kernels' formulas; kind 2 gpt-oss's clamped SwiGLU (alpha, limit)
__global__ void hlx_cu_glu_rows(float *act, const float *gu, int rows, int n, int kind,
                                float alpha, float limit)
{
    size_t total = (size_t)rows * n;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < total;
         k += (size_t)gridDim.x * blockDim.x) {
        size_t r = k / n, i = k % n;
        float g = gu[r * 2 * n + i], u = gu[r * 2 * n + n + i], f;
        if (kind == 2) { // clamped as torch.clamp does, a NaN kept (not fminf's limit)
            g = g > limit ? limit : g;
            u = u > limit ? limit : u < -limit ? -limit : u;
            act[k] = g / (1.0f + expf(-alpha * g)) * (u + 1.0f);
            continue;
        }
        if (kind == 1)
            f = 0.5f * g * (1.0f + tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g)));
        else
            f = g / (1.0f + expf(-g));
        act[k] = f * u;
    }
}

// o[r][e] *= 1 / (1 + exp(sinks[r % cnt] - lse[r])), in double as the host computes it:
// blocks over rows, one exp per row (thread 0), the block scaling the row's dv elements
__global__ void hlx_cu_attn_sink(float *o, const float *lse, const float *sinks, int rows,
                                 int cnt, int dv)
{
    __shared__ float f;

    for (int r = blockIdx.x; r < rows; r += gridDim.x) { // the same rows for the whole block
        if (threadIdx.x == 0)
            f = (float)(1.0 / (1.0 + exp((double)sinks[r % cnt] - (double)lse[r])));
        __syncthreads();
        for (int e = threadIdx.x; e < dv; e += blockDim.x)
            o[(size_t)r * dv + e] *= f;
        __syncthreads(); // every thread has read f before the next row's is written
    }
}

__device__ __forceinline__ void hlx_cu_store(void *p, int t, size_t i, float v)
{
    if (t == HLX_DTYPE_BF16)
        ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
    else if (t == HLX_DTYPE_FP8)
        ((__nv_fp8_storage_t *)p)[i] = __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
    else
        ((float *)p)[i] = v;
}

// KV rows (blocks of 1): element e of slot t of shard s at s * cap * d + t * d + e.
// grid.y = head; threads over max(dk, dv).
__global__ void hlx_cu_kv_append(void *kc, void *vc, int t_dtype, int dk, int dv, size_t cap,
                                 size_t shard0, size_t t, const float *k_new,
                                 const float *v_new, float k_mul, float v_mul)
{
    int e = blockIdx.x * blockDim.x + threadIdx.x, h = blockIdx.y;
    size_t s = shard0 + (size_t)h;
    if (e < dk)
        hlx_cu_store(kc, t_dtype, (s * cap + t) * (size_t)dk + e, k_new[(size_t)h * dk + e] * k_mul);
    if (e < dv)
        hlx_cu_store(vc, t_dtype, (s * cap + t) * (size_t)dv + e, v_new[(size_t)h * dv + e] * v_mul);
}

__global__ void hlx_cu_scale(float *x, size_t n, float s)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] *= s;
}

// Pack of one peer: for requests b in [b0, b1), its cnt pieces' outputs [cnt][dv] from opart
// (row b * q_local + h0, q_local pieces a request), then their heads' LSEs (lsepart holds one
// per sub pieces), at dst + (b - b0) * cnt * (dv + 1).
__global__ void hlx_cu_pack_peer(float *dst, const float *opart, const float *lsepart,
                                 int q_local, int sub, int h0, int cnt, int dv, int b0, int nb)
{
    size_t per = (size_t)cnt * (dv + 1), total = per * nb;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < total;
         k += (size_t)gridDim.x * blockDim.x) {
        size_t b = k / per + b0, i = k % per;
        size_t row = b * q_local + h0;
        dst[k] = i < (size_t)cnt * dv ? opart[row * dv + i]
                                      : lsepart[(row + (i - (size_t)cnt * dv)) / sub];
    }
}

// Unpack of one peer j: its block's requests [b0, b1) into oparts_j[b * cnt + h][dv] and
// lseparts_j[b * cnt + h].
__global__ void hlx_cu_unpack_peer(float *oparts_j, float *lseparts_j, const float *src,
                                   int cnt, int dv, int b0, int nb)
{
    size_t per = (size_t)cnt * (dv + 1), total = per * nb;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < total;
         k += (size_t)gridDim.x * blockDim.x) {
        size_t b = k / per + b0, i = k % per;
        if (i < (size_t)cnt * dv)
            oparts_j[b * cnt * dv + i] = src[k];
        else
            lseparts_j[b * cnt + (i - (size_t)cnt * dv)] = src[k];
    }
}

__global__ void hlx_cu_add(float *x, const float *y, size_t n)
{
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n;
         k += (size_t)gridDim.x * blockDim.x)
        x[k] += y[k];
}

__global__ void hlx_cu_pad_rows(float *dst, int dcols, const float *src, int scols, int rows,
                                float fill, float cap)
{
    size_t total = (size_t)rows * dcols;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < total;
         k += (size_t)gridDim.x * blockDim.x) {
        size_t r = k / dcols, c = k % dcols;
        if (c >= (size_t)scols)
            dst[k] = fill;
        else
            dst[k] = cap > 0.0f ? cap * tanhf(src[r * scols + c] / cap) : src[r * scols + c];
    }
}

// dst[r][0..n) = src[idx[r]][0..n): the rows routed to one expert, gathered.
__global__ void hlx_cu_gather_rows(float *dst, const float *src, const int *idx, int rows,
                                   int n)
{
    size_t total = (size_t)rows * n;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < total;
         k += (size_t)gridDim.x * blockDim.x) {
        size_t r = k / n, c = k % n;
        dst[k] = src[(size_t)idx[r] * n + c];
    }
}

// y[idx[r]][c] += w[r] x[r][c] (idx NULL: row r), rounded as the host's: the product, then
// the sum (no fused multiply-add). No row index twice, so no two threads share an element.
__global__ void hlx_cu_scatter_add(float *y, const float *x, const int *idx, const float *w,
                                   int rows, int n)
{
    size_t total = (size_t)rows * n;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < total;
         k += (size_t)gridDim.x * blockDim.x) {
        size_t r = k / n, c = k % n, to = idx != NULL ? (size_t)idx[r] : r;
        float *yy = y + to * n + c;
        *yy = __fadd_rn(*yy, __fmul_rn(w[r], x[k]));
    }
}

// One block per request: the largest logit over the n ranks' column ranges, ties to the
// lowest vocabulary index (strict > in index order per thread, then the lower index wins).
__global__ void hlx_cu_argmax(const float *logits, int n, int B, int vocab, int pad,
                              int *tokens)
{
    __shared__ float bv[256];
    __shared__ int bi[256];
    const int b = blockIdx.x;
    float best = -INFINITY;
    int arg = -1;

    for (int v = threadIdx.x; v < vocab; v += blockDim.x) {
        // rank r holds [vocab r / n, vocab (r+1) / n): find r for v
        int r = (int)(((long long)v * n + n - 1) / vocab);
        while (r > 0 && (int)((long long)vocab * r / n) > v)
            r--;
        while (r + 1 < n && (int)((long long)vocab * (r + 1) / n) <= v)
            r++;
        int first = (int)((long long)vocab * r / n);
        float x = logits[((size_t)r * B + b) * pad + (v - first)];
        if (arg < 0 || x > best) {
            best = x;
            arg = v;
        }
    }
    bv[threadIdx.x] = best;
    bi[threadIdx.x] = arg;
    __syncthreads();
    for (int st = blockDim.x / 2; st > 0; st >>= 1) {
        if ((int)threadIdx.x < st) {
            float o = bv[threadIdx.x + st];
            int oi = bi[threadIdx.x + st];
            int mi = bi[threadIdx.x];
            if (oi >= 0 && (mi < 0 || o > bv[threadIdx.x] ||
                            (o == bv[threadIdx.x] && oi < mi))) {
                bv[threadIdx.x] = o;
                bi[threadIdx.x] = oi;
            }
        }
        __syncthreads();
    }
    if (threadIdx.x == 0)
        tokens[b] = bi[0] < 0 ? 0 : bi[0];
}

// 16-byte vector copy with a grid stride: the bandwidth reference of the benchmarks.
__global__ void hlx_cu_copy16(uint4 *dst, const uint4 *src, size_t n)
{
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < n;
         k += (size_t)gridDim.x * blockDim.x)
        dst[k] = src[k];
}

// rows x nh vectors of n, in launches of at most HLX_CU_GRID_MAX blocks
static hlx_status_t hlx_cu_rmsnorm_launch(float *y, const float *x, const float *w, int rows,
                                          size_t ld, int nh, int n, float eps, void *stream)
{
    const int64_t total = (int64_t)rows * nh;

    if (rows < 0 || n < 1 || nh < 0 || ld < (size_t)nh * n || total > INT32_MAX)
        return HLX_ERR_INVALID;
    for (int64_t i0 = 0; i0 < total; i0 += HLX_CU_GRID_MAX) {
        int64_t nv = total - i0 < HLX_CU_GRID_MAX ? total - i0 : HLX_CU_GRID_MAX;
        hlx_cu_rmsnorm_rows<<<(unsigned)nv, 256, 0, (cudaStream_t)stream>>>(y, x, w, n, eps, ld,
                                                                           nh, (int)i0);
        hlx_status_t st = hlx_cu_launched();
        if (st != HLX_OK)
            return st;
    }
    return HLX_OK;
}

extern "C" hlx_status_t hlx_cuda_rmsnorm_rows(float *y, const float *x, const float *w,
                                              int rows, int n, float eps, void *stream)
{
    return hlx_cu_rmsnorm_launch(y, x, w, rows, (size_t)(n > 0 ? n : 1), 1, n, eps, stream);
}

extern "C" hlx_status_t hlx_cuda_rmsnorm_heads(float *x, int rows, size_t ld, int nheads,
                                               int hd, const float *w, float eps,
                                               void *stream)
{
    return hlx_cu_rmsnorm_launch(x, x, w, rows, ld, nheads, hd, eps, stream);
}

// ss[r] = the sum of squares of x[r][0..n) (row r at x + r ld), in double as the host's
// sumsq_rows (a tree's order: the float result differs at most in rounding). Block i0 + b.
__global__ void hlx_cu_sumsq_rows(const float *x, size_t ld, int n, float *ss, int i0)
{
    __shared__ double part[256];
    const int r = i0 + (int)blockIdx.x;
    const float *xr = x + (size_t)r * ld;
    double s = 0.0;

    for (int i = threadIdx.x; i < n; i += blockDim.x)
        s += (double)xr[i] * xr[i];
    s = hlx_cu_block_sum(part, s);
    if (threadIdx.x == 0)
        ss[r] = (float)s;
}

// x[r][i] *= w[i] / sqrt(ss[r] / total + eps) in place: the factor rounded to float once,
// as the host's rmsnorm_ss and the kernels' rmsnorm
__global__ void hlx_cu_rmsnorm_ss(float *x, size_t ld, int n, const float *w, const float *ss,
                                  int total, float eps, int i0)
{
    const int r = i0 + (int)blockIdx.x;
    float *xr = x + (size_t)r * ld;
    const float f = (float)(1.0 / sqrt((double)ss[r] / total + eps));

    for (int i = threadIdx.x; i < n; i += blockDim.x)
        xr[i] = xr[i] * f * w[i];
}

extern "C" hlx_status_t hlx_cuda_sumsq_rows(const float *x, size_t ld, int rows, int n,
                                            float *ss, void *stream)
{
    if (rows < 0 || n < 0 || ld < (size_t)n)
        return HLX_ERR_INVALID;
    for (int i0 = 0; i0 < rows; i0 += (int)HLX_CU_GRID_MAX) {
        int nr = rows - i0 < (int)HLX_CU_GRID_MAX ? rows - i0 : (int)HLX_CU_GRID_MAX;
        hlx_cu_sumsq_rows<<<(unsigned)nr, 256, 0, (cudaStream_t)stream>>>(x, ld, n, ss, i0);
        hlx_status_t st = hlx_cu_launched();
        if (st != HLX_OK)
            return st;
    }
    return HLX_OK;
}

extern "C" hlx_status_t hlx_cuda_rmsnorm_ss(float *x, size_t ld, int rows, int n, const float *w,
                                            const float *ss, int total, float eps, void *stream)
{
    if (rows < 0 || n < 0 || total < 1 || ld < (size_t)n)
        return HLX_ERR_INVALID;
    for (int i0 = 0; i0 < rows; i0 += (int)HLX_CU_GRID_MAX) {
        int nr = rows - i0 < (int)HLX_CU_GRID_MAX ? rows - i0 : (int)HLX_CU_GRID_MAX;
        hlx_cu_rmsnorm_ss<<<(unsigned)nr, 256, 0, (cudaStream_t)stream>>>(x, ld, n, w, ss,
                                                                         total, eps, i0);
        hlx_status_t st = hlx_cu_launched();
        if (st != HLX_OK)
            return st;
    }
    return HLX_OK;
}

// LayerNorm (StarCoder2): y[r][i] = (x[r][i] - mean) f w[i] + b[i], a block per row, the
// mean and the biased variance summed in double, f = 1 / sqrt(var + eps) rounded to float
// once and the mean to float, as the host's layernorm (a tree's order: the float results
// differ at most in rounding); b NULL: no bias. Block i0 + blockIdx.x.
__global__ void hlx_cu_layernorm(float *y, const float *x, const float *w, const float *b,
                                 int n, float eps, int i0)
{
    __shared__ double part[256];
    const int r = i0 + (int)blockIdx.x;
    const float *xr = x + (size_t)r * n;
    float *yr = y + (size_t)r * n;
    double s = 0.0, mean;

    for (int i = threadIdx.x; i < n; i += blockDim.x)
        s += xr[i];
    mean = hlx_cu_block_sum(part, s) / n;
    s = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        s += ((double)xr[i] - mean) * ((double)xr[i] - mean);
    const float mf = (float)mean, f = (float)(1.0 / sqrt(hlx_cu_block_sum(part, s) / n + eps));
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        yr[i] = (xr[i] - mf) * f * w[i] + (b != NULL ? b[i] : 0.0f);
}

extern "C" hlx_status_t hlx_cuda_layernorm_rows(float *y, const float *x, const float *w,
                                                const float *b, int rows, int n, float eps,
                                                void *stream)
{
    if (rows < 0 || n < 1)
        return HLX_ERR_INVALID;
    for (int i0 = 0; i0 < rows; i0 += (int)HLX_CU_GRID_MAX) {
        int nr = rows - i0 < (int)HLX_CU_GRID_MAX ? rows - i0 : (int)HLX_CU_GRID_MAX;
        hlx_cu_layernorm<<<(unsigned)nr, 256, 0, (cudaStream_t)stream>>>(y, x, w, b, n, eps,
                                                                        i0);
        hlx_status_t st = hlx_cu_launched();
        if (st != HLX_OK)
            return st;
    }
    return HLX_OK;
}

// x[r][i] = f(x[r][i] + b[i]) in place, row r at x + r ld: f silu (kind 0) or gelu_tanh
// (kind 1), glu's formulas (a plain MLP's activation, StarCoder2); b NULL: no bias
__global__ void hlx_cu_bias_act(float *x, size_t ld, const float *b, int rows, int n, int kind)
{
    size_t total = (size_t)rows * n;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < total;
         k += (size_t)gridDim.x * blockDim.x) {
        float *v = x + (k / n) * ld + k % n, g = *v + (b != NULL ? b[k % n] : 0.0f);
        *v = kind == 1 ? 0.5f * g * (1.0f + tanhf(0.7978845608028654f * (g + 0.044715f * g * g * g)))
                       : g / (1.0f + expf(-g));
    }
}

extern "C" hlx_status_t hlx_cuda_bias_act(float *x, size_t ld, const float *b, int rows, int n,
                                          int kind, void *stream)
{
    if (rows < 0 || n < 0 || ld < (size_t)n || kind < 0 || kind > 1)
        return HLX_ERR_INVALID;
    if ((size_t)rows * n == 0)
        return HLX_OK;
    hlx_cu_bias_act<<<hlx_cu_blocks((size_t)rows * n), 256, 0, (cudaStream_t)stream>>>(
        x, ld, b, rows, n, kind);
    return hlx_cu_launched();
}

// x[r][c] += b[c], row r at x + r ld
__global__ void hlx_cu_add_rows(float *x, size_t ld, const float *b, int rows, int n)
{
    size_t total = (size_t)rows * n;
    for (size_t k = blockIdx.x * (size_t)blockDim.x + threadIdx.x; k < total;
         k += (size_t)gridDim.x * blockDim.x)
        x[(k / n) * ld + k % n] += b[k % n];
}

extern "C" hlx_status_t hlx_cuda_add_rows(float *x, size_t ld, const float *b, int rows, int n,
                                          void *stream)
{
    if (rows < 0 || n < 0 || ld < (size_t)n)
        return HLX_ERR_INVALID;
    if ((size_t)rows * n == 0)
        return HLX_OK;
    hlx_cu_add_rows<<<hlx_cu_blocks((size_t)rows * n), 256, 0, (cudaStream_t)stream>>>(
        x, ld, b, rows, n);
    return hlx_cu_launched();
}

extern "C" hlx_status_t hlx_cuda_rope_rows(float *x, int rows, size_t ld, int nheads, int hd,
                                           int rot_dim, int64_t pos, const hlx_rope_tab_t *r,
                                           void *stream)
{
    long long n = (long long)nheads * (rot_dim / 2);

    if (rows < 0 || nheads < 0 || rot_dim < 0 || rot_dim > hd || n > INT32_MAX)
        return HLX_ERR_INVALID;
    if (n == 0 || rows == 0)
        return HLX_OK;
    for (int r0 = 0; r0 < rows; r0 += (int)HLX_CU_GRID_MAX) {
        int nr = rows - r0 < (int)HLX_CU_GRID_MAX ? rows - r0 : (int)HLX_CU_GRID_MAX;
        dim3 grid((unsigned)((n + 255) / 256), (unsigned)nr);
        hlx_cu_rope_rows<<<grid, 256, 0, (cudaStream_t)stream>>>(x + (size_t)r0 * ld, ld,
                                                                 nheads, hd, rot_dim,
                                                                 (long long)pos, r->inv_freq,
                                                                 r->mscale);
        hlx_status_t st = hlx_cu_launched();
        if (st != HLX_OK)
            return st;
    }
    return HLX_OK;
}

extern "C" hlx_status_t hlx_cuda_glu_rows(float *act, const float *gu, int rows, int n,
                                          int kind, float alpha, float limit, void *stream)
{
    if (rows < 0 || n < 0 || kind < 0 || kind > 2)
        return HLX_ERR_INVALID;
    if ((size_t)rows * n == 0)
        return HLX_OK;
    hlx_cu_glu_rows<<<hlx_cu_blocks((size_t)rows * n), 256, 0, (cudaStream_t)stream>>>(
        act, gu, rows, n, kind, alpha, limit);
    return hlx_cu_launched();
}

extern "C" hlx_status_t hlx_cuda_attn_sink(float *o, const float *lse, const float *sinks,
                                           int rows, int cnt, int dv, void *stream)
{
    if (rows < 0 || cnt < 1 || dv < 0)
        return HLX_ERR_INVALID;
    if ((size_t)rows * dv == 0)
        return HLX_OK;
    hlx_cu_attn_sink<<<rows < 65535 ? rows : 65535, dv < 128 ? 64 : 128, 0,
                       (cudaStream_t)stream>>>(o, lse, sinks, rows, cnt, dv);
    return hlx_cu_launched();
}

extern "C" hlx_status_t hlx_cuda_kv_append(void *kc, void *vc, hlx_dtype_t kv_dtype, int dk,
                                           int dv, size_t cap, size_t shard0, size_t t,
                                           int nheads, const float *k_new,
                                           const float *v_new, float k_mul, float v_mul,
                                           void *stream)
{
    int d = dk > dv ? dk : dv;

    /* dv 0: no value rows (MLA's one latent row per token; vc may be NULL) */
    if (dk < 1 || dv < 0 || (dv > 0 && vc == NULL) || t >= cap || nheads < 0 ||
        (unsigned)nheads > HLX_CU_GRID_MAX ||
        (kv_dtype != HLX_DTYPE_F32 && kv_dtype != HLX_DTYPE_BF16 &&
         kv_dtype != HLX_DTYPE_FP8))
        return HLX_ERR_INVALID;
    if (nheads == 0)
        return HLX_OK;
    /* k_mul, v_mul 0: no scale (x 1 is exact) */
    hlx_cu_kv_append<<<dim3((unsigned)((d + 127) / 128), (unsigned)nheads), 128, 0,
                       (cudaStream_t)stream>>>(kc, vc, (int)kv_dtype, dk, dv, cap, shard0, t,
                                               k_new, v_new, k_mul != 0.0f ? k_mul : 1.0f,
                                               v_mul != 0.0f ? v_mul : 1.0f);
    return hlx_cu_launched();
}

extern "C" hlx_status_t hlx_cuda_pack_peer(float *dst, const float *opart,
                                           const float *lsepart, int q_local, int sub, int h0,
                                           int cnt, int dv, int b0, int b1, void *stream)
{
    size_t n = (size_t)(cnt < 0 ? 0 : cnt) * ((size_t)dv + 1) * (size_t)(b1 > b0 ? b1 - b0 : 0);

    if (cnt < 0 || dv < 0 || sub < 1 || b0 < 0 || b1 < b0)
        return HLX_ERR_INVALID;
    if (n == 0)
        return HLX_OK;
    hlx_cu_pack_peer<<<hlx_cu_blocks(n), 256, 0, (cudaStream_t)stream>>>(
        dst, opart, lsepart, q_local, sub, h0, cnt, dv, b0, b1 - b0);
    return hlx_cu_launched();
}

extern "C" hlx_status_t hlx_cuda_unpack_peer(float *oparts_j, float *lseparts_j,
                                             const float *src, int cnt, int dv, int b0,
                                             int b1, void *stream)
{
    size_t n = (size_t)(cnt < 0 ? 0 : cnt) * ((size_t)dv + 1) * (size_t)(b1 > b0 ? b1 - b0 : 0);

    if (cnt < 0 || dv < 0 || b0 < 0 || b1 < b0)
        return HLX_ERR_INVALID;
    if (n == 0)
        return HLX_OK;
    hlx_cu_unpack_peer<<<hlx_cu_blocks(n), 256, 0, (cudaStream_t)stream>>>(
        oparts_j, lseparts_j, src, cnt, dv, b0, b1 - b0);
    return hlx_cu_launched();
}

extern "C" hlx_status_t hlx_cuda_scale(float *x, size_t n, float s, void *stream)
{
    if (n == 0)
        return HLX_OK;
    hlx_cu_scale<<<hlx_cu_blocks(n), 256, 0, (cudaStream_t)stream>>>(x, n, s);
    return hlx_cu_launched();
}

extern "C" hlx_status_t hlx_cuda_add(float *x, const float *y, size_t n, void *stream)
{
    if (n == 0)
        return HLX_OK;
    hlx_cu_add<<<hlx_cu_blocks(n), 256, 0, (cudaStream_t)stream>>>(x, y, n);
    return hlx_cu_launched();
}

extern "C" hlx_status_t hlx_cuda_pad_rows(float *dst, int dcols, const float *src, int scols,
                                          int rows, float fill, float cap, void *stream)
{
    if (dcols < 0 || scols < 0 || scols > dcols || rows < 0)
        return HLX_ERR_INVALID;
    if ((size_t)rows * dcols == 0)
        return HLX_OK;
    hlx_cu_pad_rows<<<hlx_cu_blocks((size_t)rows * dcols), 256, 0, (cudaStream_t)stream>>>(
        dst, dcols, src, scols, rows, fill, cap);
    return hlx_cu_launched();
}

extern "C" hlx_status_t hlx_cuda_gather_rows(float *dst, const float *src, const int *idx,
                                             int rows, int n, void *stream)
{
    if (rows < 0 || n < 0 || idx == NULL)
        return HLX_ERR_INVALID;
    if ((size_t)rows * n == 0)
        return HLX_OK;
    hlx_cu_gather_rows<<<hlx_cu_blocks((size_t)rows * n), 256, 0, (cudaStream_t)stream>>>(
        dst, src, idx, rows, n);
    return hlx_cu_launched();
}

extern "C" hlx_status_t hlx_cuda_scatter_add(float *y, const float *x, const int *idx,
                                             const float *w, int rows, int n, void *stream)
{
    if (rows < 0 || n < 0 || w == NULL)
        return HLX_ERR_INVALID;
    if ((size_t)rows * n == 0)
        return HLX_OK;
    hlx_cu_scatter_add<<<hlx_cu_blocks((size_t)rows * n), 256, 0, (cudaStream_t)stream>>>(
        y, x, idx, w, rows, n);
    return hlx_cu_launched();
}

extern "C" hlx_status_t hlx_cuda_argmax(const float *logits, int n, int B, int vocab, int pad,
                                        int *tokens, void *stream)
{
    if (n < 1 || B < 0 || vocab < 1 || pad < 1 || (unsigned)B > 2147483647u)
        return HLX_ERR_INVALID;
    if (B == 0)
        return HLX_OK;
    hlx_cu_argmax<<<(unsigned)B, 256, 0, (cudaStream_t)stream>>>(logits, n, B, vocab, pad,
                                                                 tokens);
    return hlx_cu_launched();
}

extern "C" hlx_status_t hlx_cuda_copy(void *dst, const void *src, size_t bytes, void *stream)
{
    if (bytes % 16 || ((uintptr_t)dst & 15) || ((uintptr_t)src & 15))
        return HLX_ERR_INVALID;
    if (bytes == 0)
        return HLX_OK;
    // about 8 vectors per thread (at most 65535 blocks): enough loads in flight for HBM
    hlx_cu_copy16<<<hlx_cu_blocks(bytes / 16 / 8), 256, 0, (cudaStream_t)stream>>>(
        (uint4 *)dst, (const uint4 *)src, bytes / 16);
    return hlx_cu_launched();
}
