// Split-KV flash-decoding on CUDA: one thread block per (KV split, chunk of 8 query heads),
// one warp per query head, KV tiles staged once per block in shared memory as fp32, online
// softmax per warp, partial (o, lse) per split, then an exact LSE merge kernel. The head
// chunks of one split are neighbouring blocks (they share the split's KV through L2), and
// an MLA value that is the key row's prefix is read from the staged keys.
#include "hlx_kernels_cuda.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define HLX_CU_HEADS 8     // warps (query heads) per block
#define HLX_CU_SMEM  40960 // bytes of KV tile per block
#define HLX_CU_DMAX  1024

#define hlx_cu_status(e) hlx_cuda_note((int)(e), __func__, NULL)

__device__ __forceinline__ float hlx_cu_load(const void *p, int t, size_t i)
{
    if (t == HLX_DTYPE_BF16)
        return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    if (t == HLX_DTYPE_FP8) {
        __nv_fp8_e4m3 x;
        x.__x = ((const __nv_fp8_storage_t *)p)[i];
        return (float)x;
    }
    return ((const float *)p)[i];
}

// Stages nt rows of d elements (row stride `stride`, from row j) into shared memory as fp32,
// rows dst_ld floats apart. bf16 rows that are 16-byte aligned move as 8-element vectors
// (full 128-byte warp loads).
__device__ __forceinline__ void hlx_cu_stage_ld(float *dst, int dst_ld, const void *src, int t,
                                                size_t j, int nt, int d, size_t stride,
                                                int tid, int nthr)
{
    if (t == HLX_DTYPE_BF16 && d % 8 == 0 && stride % 8 == 0 &&
        ((uintptr_t)src & 15) == 0) {
        const __nv_bfloat16 *base = (const __nv_bfloat16 *)src + j * stride;
        const int per_row = d / 8;
        for (int i = tid; i < nt * per_row; i += nthr) {
            int row = i / per_row, col = (i % per_row) * 8;
            uint4 u = *(const uint4 *)(base + (size_t)row * stride + col);
            const __nv_bfloat162 *h = (const __nv_bfloat162 *)&u;
            float *o = dst + (size_t)row * dst_ld + col;
            for (int x = 0; x < 4; x++) {
                float2 f = __bfloat1622float2(h[x]);
                o[2 * x] = f.x;
                o[2 * x + 1] = f.y;
            }
        }
        return;
    }
    if (t == HLX_DTYPE_FP8 && d % 8 == 0 && stride % 8 == 0 && ((uintptr_t)src & 7) == 0) {
        // 8 fp8 values per 8-byte load, converted in pairs through fp16 (exact for e4m3)
        const unsigned char *base = (const unsigned char *)src + j * stride;
        const int per_row = d / 8;
        for (int i = tid; i < nt * per_row; i += nthr) {
            int row = i / per_row, col = (i % per_row) * 8;
            uint2 u = *(const uint2 *)(base + (size_t)row * stride + col);
            const __nv_fp8x2_storage_t *h = (const __nv_fp8x2_storage_t *)&u;
            float *o = dst + (size_t)row * dst_ld + col;
            for (int x = 0; x < 4; x++) {
                __half2_raw hr = __nv_cvt_fp8x2_to_halfraw2(h[x], __NV_E4M3);
                float2 f = __half22float2(*(const __half2 *)&hr);
                o[2 * x] = f.x;
                o[2 * x + 1] = f.y;
            }
        }
        return;
    }
    for (int i = tid; i < nt * d; i += nthr)
        dst[(size_t)(i / d) * dst_ld + i % d] = hlx_cu_load(src, t, (j + i / d) * stride + i % d);
}

__device__ __forceinline__ void hlx_cu_stage(float *dst, const void *src, int t, size_t j,
                                             int nt, int d, size_t stride, int tid, int nthr)
{
    hlx_cu_stage_ld(dst, d, src, t, j, nt, d, stride, tid, nthr);
}

__device__ __forceinline__ float hlx_cu_warp_max(float x)
{
    for (int off = 16; off > 0; off >>= 1)
        x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
    return x;
}

__device__ __forceinline__ float hlx_cu_warp_sum(float x)
{
    for (int off = 16; off > 0; off >>= 1)
        x += __shfl_xor_sync(0xffffffffu, x, off);
    return x;
}

// grid: (ceil(group / 8), nsplit); block: 32 x 8 threads. Partial of split s for head g:
// work_o[s][g][dv], work_lse[s][g]. v_in_k: the value of token t is the first dv elements
// of its staged key (MLA absorbed: v == k), so only keys are staged. NK, NV: register
// chunks of 32 elements per lane for a key and a value (the loops are unrolled to them).
template <int NK, int NV>
__global__ void hlx_cu_attn_split(int group, int dk, int dv, size_t len, int kv_dtype,
                                  const float *__restrict__ q, const void *__restrict__ k,
                                  const void *__restrict__ v, size_t ks, size_t vs,
                                  float scale, float cap, int tile, int v_in_k, float *work_o,
                                  float *work_lse)
{
    extern __shared__ float smem[]; // tile x (dk + dv) floats (tile x dk with v_in_k)
    const int lane = threadIdx.x, w = threadIdx.y, nthr = blockDim.x * blockDim.y;
    const int tid = w * 32 + lane, g = blockIdx.x * HLX_CU_HEADS + w;
    const size_t per = (len + gridDim.y - 1) / gridDim.y;
    const size_t j0 = per * blockIdx.y, j1 = j0 + per < len ? j0 + per : len;
    const int ne_k = (dk + 31) / 32, ne_v = (dv + 31) / 32;
    const int vrow = v_in_k ? dk : dv; // row length of the staged values
    float qr[NK], acc[NV];
    float m = -INFINITY, s = 0.0f;
    float *sk = smem, *sv = v_in_k ? smem : smem + (size_t)tile * dk;

    // loops over the compile-time chunk counts with guards, fully unrolled, so qr and acc
    // stay in registers (a runtime trip count would put them in local memory)
#pragma unroll
    for (int i = 0; i < NK; i++) {
        int e = lane + 32 * i;
        qr[i] = (i < ne_k && g < group && e < dk) ? q[(size_t)g * dk + e] * scale : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < NV; i++)
        acc[i] = 0.0f;
    for (size_t jt = j0; jt < j1; jt += tile) {
        int nt = (int)(j1 - jt < (size_t)tile ? j1 - jt : (size_t)tile);
        __syncthreads();
        // the whole block stages the tile once (coalesced rows), every head reuses it
        hlx_cu_stage(sk, k, kv_dtype, jt, nt, dk, ks, tid, nthr);
        if (!v_in_k)
            hlx_cu_stage(sv, v, kv_dtype, jt, nt, dv, vs, tid, nthr);
        __syncthreads();
        if (g >= group)
            continue;
        for (int t = 0; t < nt; t++) {
            float dot = 0.0f, mn, corr, p;
#pragma unroll
            for (int i = 0; i < NK; i++) {
                int e = lane + 32 * i;
                if (i < ne_k && e < dk)
                    dot += qr[i] * sk[t * dk + e];
            }
            dot = hlx_cu_warp_sum(dot);
            if (cap > 0.0f) // Gemma 2's soft-capping
                dot = cap * tanhf(dot / cap);
            mn = fmaxf(m, dot);
            corr = __expf(m - mn);
            p = __expf(dot - mn);
            s = s * corr + p;
#pragma unroll
            for (int i = 0; i < NV; i++) {
                int e = lane + 32 * i;
                if (i < ne_v && e < dv)
                    acc[i] = acc[i] * corr + p * sv[t * vrow + e];
            }
            m = mn;
        }
    }
    if (g >= group)
        return;
    {
        float *o = work_o + ((size_t)blockIdx.y * group + g) * dv;
        float inv = s > 0.0f ? 1.0f / s : 0.0f;
#pragma unroll
        for (int i = 0; i < NV; i++) {
            int e = lane + 32 * i;
            if (i < ne_v && e < dv)
                o[e] = acc[i] * inv;
        }
        if (lane == 0)
            work_lse[(size_t)blockIdx.y * group + g] = s > 0.0f ? m + logf(s) : -INFINITY;
    }
}

// The "tokens" variant for GQA shapes (dk, dv multiples of 4, at most 256; separate K and
// V): grid and partials as hlx_cu_attn_split, one warp per query head, but the lanes of a
// warp take 32 tokens at once. Each lane computes its token's whole score from shared
// memory (float4 reads; K rows padded by 4 floats so that the 8 lanes of a quarter-warp
// hit different banks, q broadcast), the warp updates the online softmax once per 32
// tokens, then accumulates the 32 values with the lanes over the value's elements (lane l
// owns elements 4l .. 4l + 3, plus 128 more per NV4 step). About a third of the
// instructions per token of the warp-per-token loop.
template <int NV4>
__global__ void hlx_cu_attn_tok(int group, int dk, int dv, size_t len, int kv_dtype,
                                const float *__restrict__ q, const void *__restrict__ k,
                                const void *__restrict__ v, size_t ks, size_t vs, float scale,
                                float cap, int tile, float *work_o, float *work_lse)
{
    extern __shared__ float4 hlx_cu_smem4[];
    float *smem = (float *)hlx_cu_smem4;
    const int lane = threadIdx.x, w = threadIdx.y, nthr = blockDim.x * blockDim.y;
    const int tid = w * 32 + lane, g = blockIdx.x * HLX_CU_HEADS + w, kst = dk + 4;
    const size_t per = (len + gridDim.y - 1) / gridDim.y;
    const size_t j0 = per * blockIdx.y, j1 = j0 + per < len ? j0 + per : len;
    float *sq = smem;                                 // [8][dk]: this block's scaled queries
    float *sk = sq + (size_t)HLX_CU_HEADS * dk;       // [tile][dk + 4]
    float *sv = sk + (size_t)tile * kst;              // [tile][dv]
    const float4 *q4 = (const float4 *)(sq + (size_t)w * dk);
    float4 acc[NV4];
    float m = -INFINITY, l = 0.0f;

    for (int e = lane; e < dk; e += 32)
        sq[(size_t)w * dk + e] = g < group ? q[(size_t)g * dk + e] * scale : 0.0f;
#pragma unroll
    for (int c = 0; c < NV4; c++)
        acc[c] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (size_t jt = j0; jt < j1; jt += tile) {
        int nt = (int)(j1 - jt < (size_t)tile ? j1 - jt : (size_t)tile);
        __syncthreads();
        hlx_cu_stage_ld(sk, kst, k, kv_dtype, jt, nt, dk, ks, tid, nthr);
        hlx_cu_stage_ld(sv, dv, v, kv_dtype, jt, nt, dv, vs, tid, nthr);
        __syncthreads();
        if (g >= group)
            continue;
        for (int t0 = 0; t0 < nt; t0 += 32) {
            const int t = t0 + lane, cnt = nt - t0 < 32 ? nt - t0 : 32;
            float sc = -INFINITY, mx, mn, corr, p;
            if (t < nt) {
                const float4 *k4 = (const float4 *)(sk + (size_t)t * kst);
                float a0 = 0.0f, a1 = 0.0f;
#pragma unroll 4
                for (int i = 0; i < dk / 4; i++) {
                    float4 kk = k4[i], qq = q4[i];
                    a0 += kk.x * qq.x + kk.y * qq.y;
                    a1 += kk.z * qq.z + kk.w * qq.w;
                }
                sc = a0 + a1;
                if (cap > 0.0f) // Gemma 2's soft-capping
                    sc = cap * tanhf(sc / cap);
            }
            mx = hlx_cu_warp_max(sc);
            mn = fmaxf(m, mx);            // finite: lane 0's token is always there
            corr = __expf(m - mn);        // 0 on the first block of tokens (m = -inf)
            p = t < nt ? __expf(sc - mn) : 0.0f;
            l = l * corr + hlx_cu_warp_sum(p);
#pragma unroll
            for (int c = 0; c < NV4; c++) {
                acc[c].x *= corr; acc[c].y *= corr; acc[c].z *= corr; acc[c].w *= corr;
            }
            for (int u = 0; u < cnt; u++) {
                float pu = __shfl_sync(0xffffffffu, p, u);
                const float4 *v4 = (const float4 *)(sv + (size_t)(t0 + u) * dv);
#pragma unroll
                for (int c = 0; c < NV4; c++) {
                    int e4 = lane + 32 * c;
                    if (e4 < dv / 4) {
                        float4 vv = v4[e4];
                        acc[c].x += pu * vv.x; acc[c].y += pu * vv.y;
                        acc[c].z += pu * vv.z; acc[c].w += pu * vv.w;
                    }
                }
            }
            m = mn;
        }
    }
    if (g >= group)
        return;
    {
        float *o = work_o + ((size_t)blockIdx.y * group + g) * dv;
        float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
        for (int c = 0; c < NV4; c++) {
            int e4 = lane + 32 * c;
            if (e4 < dv / 4)
                ((float4 *)o)[e4] = make_float4(acc[c].x * inv, acc[c].y * inv,
                                                acc[c].z * inv, acc[c].w * inv);
        }
        if (lane == 0)
            work_lse[(size_t)blockIdx.y * group + g] = l > 0.0f ? m + logf(l) : -INFINITY;
    }
}

// The "mma" variant for bf16 GQA (dk, dv 64 or 128; K and V rows 16-byte aligned): one warp
// per block, a block per (chunk of 16 query heads, split). The warp streams its split's K
// and V through shared memory in tiles of 32 tokens, two tiles in flight (cp.async), and
// does both products on the tensor cores (mma.sync m16n8k16, bf16 in, fp32 accumulate):
// S = Q K^T with the heads as the 16 rows, the online softmax on S's fragments in
// registers, then O += P V with P taken straight from S's fragments (ldmatrix.trans gives
// V's). Q and P are split into a bf16 high part and a bf16 remainder (two products each),
// so the products see q and p to about 2^-16, where one bf16 rounding would cost 2^-9.
#define HLX_MMA_T  32 // tokens per tile
#define HLX_MMA_PAD 8 // bf16 per staged row beyond d: rows 16 bytes off the bank pattern

__device__ __forceinline__ void hlx_mma(float c[4], const uint32_t a[4], uint32_t b0,
                                        uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void hlx_ldsm4(uint32_t r[4], const void *p)
{
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

__device__ __forceinline__ void hlx_ldsm4_t(uint32_t r[4], const void *p)
{
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

__device__ __forceinline__ void hlx_cp16(void *dst, const void *src, bool valid)
{
    uint32_t a = (uint32_t)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(a), "l"(src), "r"(valid ? 16 : 0)); // 0: the 16 bytes are zeroed
}

__device__ __forceinline__ uint32_t hlx_pack_bf16(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi); // .x (lower column) in the low half
    return *(uint32_t *)&v;
}

// x = hi + lo in bf16 pairs: hi rounded, lo the rounded remainder
__device__ __forceinline__ void hlx_split2(float x0, float x1, uint32_t *hi, uint32_t *lo)
{
    __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
    float2 hf = __bfloat1622float2(h);
    *hi = *(uint32_t *)&h;
    *lo = hlx_pack_bf16(x0 - hf.x, x1 - hf.y);
}

// Q's A fragments for KS k-steps from element e0 of rows dk apart (heads h0 + gq and
// h0 + gq + 8, scaled, each split into bf16 and remainder; heads past the group 0), and the
// accumulators zeroed.
template <int KS, int NO>
__device__ __forceinline__ void hlx_mma_start(uint32_t (&qh)[KS][4], uint32_t (&ql)[KS][4],
                                              float (&o)[NO][4], const float *q, int dk,
                                              int group, int h0, int e0, int gq, int c,
                                              float scale)
{
#pragma unroll
    for (int s = 0; s < KS; s++) {
#pragma unroll
        for (int r = 0; r < 4; r++) {
            int h = h0 + gq + (r & 1) * 8, e = e0 + 16 * s + 2 * c + (r >> 1) * 8;
            float x0 = 0.0f, x1 = 0.0f;
            if (h < group) {
                x0 = q[(size_t)h * dk + e] * scale;
                x1 = q[(size_t)h * dk + e + 1] * scale;
            }
            hlx_split2(x0, x1, &qh[s][r], &ql[s][r]);
        }
    }
#pragma unroll
    for (int n = 0; n < NO; n++)
        o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
}

// The split's partial: o / l into row h of out (rows dv apart, from element v0) and, where
// with_lse, the LSE (-inf with nothing seen), for the two rows of the lane (past the group
// not written).
template <int NO>
__device__ __forceinline__ void hlx_mma_finish(const float (&o)[NO][4], const float (&m)[2],
                                               const float (&l)[2], float *work_o,
                                               float *work_lse, int group, int h0, int gq,
                                               int c, int dv, int v0, bool with_lse)
{
#pragma unroll
    for (int i = 0; i < 2; i++) {
        int h = h0 + gq + 8 * i;
        float inv = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
        if (h >= group)
            continue;
        float *out = work_o + ((size_t)blockIdx.y * group + h) * dv + v0;
#pragma unroll
        for (int n = 0; n < NO; n++)
            *(float2 *)(out + 8 * n + 2 * c) = make_float2(o[n][2 * i] * inv,
                                                           o[n][2 * i + 1] * inv);
        if (c == 0 && with_lse)
            work_lse[(size_t)blockIdx.y * group + h] = l[i] > 0.0f ? m[i] + logf(l[i])
                                                                   : -INFINITY;
    }
}

// The online softmax of one tile on S's fragments (rows gq: i = 0 and gq + 8: i = 1; a lane
// holds tokens 2c and 2c + 1 of every 8): the soft-cap (Gemma 2), tokens past j1 -inf, the
// running maximum m and sum l, the accumulators o rescaled; sc becomes P.
template <int NO>
__device__ __forceinline__ void hlx_mma_softmax(float (&sc)[HLX_MMA_T / 8][4], float (&m)[2],
                                                float (&l)[2], float (&o)[NO][4], size_t jt,
                                                size_t j1, int c, float cap)
{
    float mx[2] = { m[0], m[1] }, corr[2], rs[2] = { 0.0f, 0.0f };
#pragma unroll
    for (int nt = 0; nt < HLX_MMA_T / 8; nt++) {
#pragma unroll
        for (int r = 0; r < 4; r++) {
            size_t tok = jt + nt * 8 + 2 * c + (r & 1);
            float x = sc[nt][r];
            if (cap > 0.0f)
                x = cap * tanhf(x / cap);
            x = tok < j1 ? x : -INFINITY;
            sc[nt][r] = x;
            mx[r >> 1] = fmaxf(mx[r >> 1], x);
        }
    }
#pragma unroll
    for (int i = 0; i < 2; i++) {
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 1));
        mx[i] = fmaxf(mx[i], __shfl_xor_sync(0xffffffffu, mx[i], 2));
        corr[i] = __expf(m[i] - mx[i]); // 0 on the first tile (m = -inf)
        m[i] = mx[i];
    }
#pragma unroll
    for (int nt = 0; nt < HLX_MMA_T / 8; nt++) {
#pragma unroll
        for (int r = 0; r < 4; r++) {
            float p = __expf(sc[nt][r] - m[r >> 1]);
            sc[nt][r] = p;
            rs[r >> 1] += p;
        }
    }
#pragma unroll
    for (int i = 0; i < 2; i++) {
        rs[i] += __shfl_xor_sync(0xffffffffu, rs[i], 1);
        rs[i] += __shfl_xor_sync(0xffffffffu, rs[i], 2);
        l[i] = l[i] * corr[i] + rs[i];
    }
#pragma unroll
    for (int n = 0; n < NO; n++) {
        o[n][0] *= corr[0]; o[n][1] *= corr[0];
        o[n][2] *= corr[1]; o[n][3] *= corr[1];
    }
}

// O += P V over one tile: P's A fragments from S's (16 tokens per k-step, each split into
// bf16 and remainder), V's B fragments of two 8-element column tiles per
// ldmatrix.x4.trans, V's rows ld elements apart.
template <int NO>
__device__ __forceinline__ void hlx_mma_pv(float (&o)[NO][4],
                                           const float (&sc)[HLX_MMA_T / 8][4],
                                           const __nv_bfloat16 *V, int ld, int lane)
{
#pragma unroll
    for (int u = 0; u < HLX_MMA_T / 16; u++) {
        uint32_t ph[4], pl[4];
        hlx_split2(sc[2 * u][0], sc[2 * u][1], &ph[0], &pl[0]);
        hlx_split2(sc[2 * u][2], sc[2 * u][3], &ph[1], &pl[1]);
        hlx_split2(sc[2 * u + 1][0], sc[2 * u + 1][1], &ph[2], &pl[2]);
        hlx_split2(sc[2 * u + 1][2], sc[2 * u + 1][3], &ph[3], &pl[3]);
#pragma unroll
        for (int n = 0; n < NO; n += 2) {
            uint32_t f[4];
            hlx_ldsm4_t(f, V + (16 * u + (lane & 7) + ((lane >> 3) & 1) * 8) * ld + 8 * n +
                               (lane >> 4) * 8);
            hlx_mma(o[n], ph, f[0], f[1]);
            hlx_mma(o[n], pl, f[0], f[1]);
            hlx_mma(o[n + 1], ph, f[2], f[3]);
            hlx_mma(o[n + 1], pl, f[2], f[3]);
        }
    }
}

// T rows of B bytes (a multiple of 16) from row j of src on (rows stride bytes apart; rows
// past j1 zero-filled) into dst rows ld bytes apart: 16 bytes per cp.async, thread tid of
// nthr. The callers commit the group.
template <int B>
__device__ __forceinline__ void hlx_cp_rows(unsigned char *dst, int ld,
                                            const unsigned char *src, size_t stride, size_t j,
                                            size_t j1, int tid, int nthr)
{
#pragma unroll
    for (int i = tid; i < HLX_MMA_T * (B / 16); i += nthr) {
        int row = i / (B / 16), col = (i % (B / 16)) * 16;
        bool ok = j + row < j1;
        hlx_cp16(dst + row * ld + col, src + (ok ? (j + row) * stride + col : 0), ok);
    }
}

// One tile of T tokens from row j: K rows of KB bytes into dk (rows kld bytes apart), V
// rows of VB bytes into dv; ks, vs: the rows' strides in bytes. bf16 goes straight into
// the padded tiles, fp8 into raw stages.
template <int KB, int VB>
__device__ __forceinline__ void hlx_mma_load(unsigned char *dk, int kld, unsigned char *dv,
                                             int vld, const void *k, const void *v, size_t ks,
                                             size_t vs, size_t j, size_t j1, int lane)
{
    hlx_cp_rows<KB>(dk, kld, (const unsigned char *)k, ks, j, j1, lane, 32);
    hlx_cp_rows<VB>(dv, vld, (const unsigned char *)v, vs, j, j1, lane, 32);
    asm volatile("cp.async.commit_group;\n" ::);
}

// 16 e4m3 values to 16 bf16 (exact: e4m3's 3 mantissa bits and its exponents fit bf16)
__device__ __forceinline__ void hlx_f8x16_bf16(uint4 u, __nv_bfloat16 *dst)
{
    const __nv_fp8x2_storage_t *h = (const __nv_fp8x2_storage_t *)&u;
    uint32_t w[8];
#pragma unroll
    for (int x = 0; x < 8; x++) {
        __half2_raw hr = __nv_cvt_fp8x2_to_halfraw2(h[x], __NV_E4M3);
        __nv_bfloat162 b = __float22bfloat162_rn(__half22float2(*(const __half2 *)&hr));
        w[x] = *(uint32_t *)&b;
    }
    ((uint4 *)dst)[0] = make_uint4(w[0], w[1], w[2], w[3]);
    ((uint4 *)dst)[1] = make_uint4(w[4], w[5], w[6], w[7]);
}

// raw fp8 rows [T][d] to the bf16 tile [T][d + PAD]
template <int D>
__device__ __forceinline__ void hlx_mma_widen(__nv_bfloat16 *dst, const unsigned char *raw,
                                              int lane)
{
#pragma unroll
    for (int i = lane; i < HLX_MMA_T * (D / 16); i += 32) {
        int row = i / (D / 16), col = (i % (D / 16)) * 16;
        hlx_f8x16_bf16(*(const uint4 *)(raw + row * D + col),
                       dst + row * (D + HLX_MMA_PAD) + col);
    }
}

// F8: fp8 e4m3 KV, copied raw (two tiles in flight) and widened to bf16 in shared memory
// just before its tile's products; else bf16 KV straight into the two bf16 stages.
template <int DK, int DV, bool F8>
__global__ void __launch_bounds__(32)
hlx_cu_attn_mma(int group, size_t len, const float *__restrict__ q, const void *__restrict__ kp,
                const void *__restrict__ vp, size_t ks, size_t vs, float scale, float cap,
                float *work_o, float *work_lse)
{
    extern __shared__ float4 hlx_cu_smem_mma[];
    __nv_bfloat16 *sbase = (__nv_bfloat16 *)hlx_cu_smem_mma;
    const int KL = DK + HLX_MMA_PAD, VL = DV + HLX_MMA_PAD;
    // fp8: one bf16 tile (K then V), then two raw stages of T x (DK + DV) bytes
    unsigned char *const raw = (unsigned char *)(sbase + HLX_MMA_T * (KL + VL));
    const int lane = threadIdx.x, gq = lane >> 2, c = lane & 3, h0 = blockIdx.x * 16;
    const size_t per = (len + gridDim.y - 1) / gridDim.y;
    const size_t j0 = per * blockIdx.y, j1 = j0 + per < len ? j0 + per : len;
    const int ntiles = j1 > j0 ? (int)((j1 - j0 + HLX_MMA_T - 1) / HLX_MMA_T) : 0;
    // stage b: K at sbase + b T KL, V at sbase + 2 T KL + b T VL (offsets, not a pointer
    // array: a run-time index into an array would put it on the stack)
    __nv_bfloat16 *const sV0 = sbase + 2 * HLX_MMA_T * KL;
    uint32_t qh[DK / 16][4], ql[DK / 16][4];
    float o[DV / 8][4];
    float m[2] = { -INFINITY, -INFINITY }, l[2] = { 0.0f, 0.0f };
    // the tile from row j into stage b: bf16 rows into the padded tiles, fp8 rows raw
    auto load = [&](int b, size_t j) {
        if constexpr (F8) {
            unsigned char *r = raw + b * HLX_MMA_T * (DK + DV);
            hlx_mma_load<DK, DV>(r, DK, r + HLX_MMA_T * DK, DV, kp, vp, ks, vs, j, j1, lane);
        } else {
            hlx_mma_load<2 * DK, 2 * DV>((unsigned char *)(sbase + b * HLX_MMA_T * KL), 2 * KL,
                                         (unsigned char *)(sV0 + b * HLX_MMA_T * VL), 2 * VL,
                                         kp, vp, 2 * ks, 2 * vs, j, j1, lane);
        }
    };

    if (ntiles > 0)
        load(0, j0);
    hlx_mma_start<DK / 16, DV / 8>(qh, ql, o, q, DK, group, h0, 0, gq, c, scale);

    for (int t = 0; t < ntiles; t++) {
        const size_t jt = j0 + (size_t)t * HLX_MMA_T;
        const int b = t & 1, nb = b ^ 1;
        const __nv_bfloat16 *K = sbase + b * HLX_MMA_T * KL, *V = sV0 + b * HLX_MMA_T * VL;
        float sc[HLX_MMA_T / 8][4];
        if (t + 1 < ntiles) {
            load(nb, jt + HLX_MMA_T);
            asm volatile("cp.async.wait_group 1;\n" ::);
        } else {
            asm volatile("cp.async.wait_group 0;\n" ::);
        }
        __syncwarp();
        if constexpr (F8) { // this tile's raw rows widened into the one bf16 tile
            const unsigned char *r = raw + b * HLX_MMA_T * (DK + DV);
            hlx_mma_widen<DK>(sbase, r, lane);
            hlx_mma_widen<DV>(sbase + HLX_MMA_T * KL, r + HLX_MMA_T * DK, lane);
            K = sbase;
            V = sbase + HLX_MMA_T * KL;
            __syncwarp();
        }
        // S = Q K^T: per 8 tokens, B fragments of two k-steps per ldmatrix.x4
#pragma unroll
        for (int nt = 0; nt < HLX_MMA_T / 8; nt++) {
            float lo[4] = { 0.0f, 0.0f, 0.0f, 0.0f }; // q's remainder: a second chain
            sc[nt][0] = sc[nt][1] = sc[nt][2] = sc[nt][3] = 0.0f;
#pragma unroll
            for (int s = 0; s < DK / 16; s += 2) {
                uint32_t f[4];
                hlx_ldsm4(f, K + (nt * 8 + (lane & 7)) * KL + 16 * s + 8 * (lane >> 3));
                hlx_mma(sc[nt], qh[s], f[0], f[1]);
                hlx_mma(lo, ql[s], f[0], f[1]);
                hlx_mma(sc[nt], qh[s + 1], f[2], f[3]);
                hlx_mma(lo, ql[s + 1], f[2], f[3]);
            }
#pragma unroll
            for (int r = 0; r < 4; r++)
                sc[nt][r] += lo[r];
        }
        hlx_mma_softmax<DV / 8>(sc, m, l, o, jt, j1, c, cap);
        hlx_mma_pv<DV / 8>(o, sc, V, VL, lane);
        __syncwarp(); // every lane is done with this stage before it is loaded again
    }
    hlx_mma_finish<DV / 8>(o, m, l, work_o, work_lse, group, h0, gq, c, DV, 0, true);
}

// The "mma" variant for MLA's absorbed shape (the value is the first dv elements of the key
// row; bf16; dk 576 / dv 512, and 96 / 64 for the small test models): the key is too long
// and the value too wide for one warp's registers, so a block holds HG groups of 16 heads,
// each group DS warps. Warp (g, s) computes the partial scores of its group over the s-th
// DS-th of the key's elements; the DS partials meet in shared memory and every warp of the
// group adds them in the same order, runs the same online softmax, and accumulates P V for
// its own DS-th of the value's elements. The block stages each 32-token tile of key rows
// once (cp.async, two tiles in flight) for all its warps.
template <int DK, int DV, int HG, int DS>
__global__ void __launch_bounds__(32 * HG * DS)
hlx_cu_attn_mma_wide(int group, size_t len, const float *__restrict__ q,
                     const __nv_bfloat16 *__restrict__ k, size_t ks, float scale, float cap,
                     float *work_o, float *work_lse)
{
    extern __shared__ float4 hlx_cu_smem_wide[];
    constexpr int KL = DK + HLX_MMA_PAD, NT = HLX_MMA_T / 8;
    constexpr int KS = DK / 16 / DS, VN = DV / 8 / DS; // k-steps, value n-tiles per warp
    __nv_bfloat16 *const stile = (__nv_bfloat16 *)hlx_cu_smem_wide;
    float *const spart = (float *)(stile + 2 * HLX_MMA_T * KL); // [HG][DS][16][T]
    const int lane = threadIdx.x, w = threadIdx.y, hg = w / DS, sl = w % DS;
    const int gq = lane >> 2, c = lane & 3, nthr = 32 * HG * DS, tid = w * 32 + lane;
    const int h0 = blockIdx.x * 16 * HG + 16 * hg, e0 = sl * KS * 16, v0 = sl * VN * 8;
    const size_t per = (len + gridDim.y - 1) / gridDim.y;
    const size_t j0 = per * blockIdx.y, j1 = j0 + per < len ? j0 + per : len;
    const int ntiles = j1 > j0 ? (int)((j1 - j0 + HLX_MMA_T - 1) / HLX_MMA_T) : 0;
    uint32_t qh[KS][4], ql[KS][4];
    float o[VN][4];
    float m[2] = { -INFINITY, -INFINITY }, l[2] = { 0.0f, 0.0f };

    auto load = [&](int b, size_t j) { // tile from row j into stage b, rows past j1 zeroed
        hlx_cp_rows<2 * DK>((unsigned char *)(stile + b * HLX_MMA_T * KL), 2 * KL,
                            (const unsigned char *)k, 2 * ks, j, j1, tid, nthr);
        asm volatile("cp.async.commit_group;\n" ::);
    };
    if (ntiles > 0)
        load(0, j0);
    hlx_mma_start<KS, VN>(qh, ql, o, q, DK, group, h0, e0, gq, c, scale);

    for (int t = 0; t < ntiles; t++) {
        const size_t jt = j0 + (size_t)t * HLX_MMA_T;
        const __nv_bfloat16 *K = stile + (t & 1) * HLX_MMA_T * KL;
        float sc[NT][4];
        if (t + 1 < ntiles) {
            load((t + 1) & 1, jt + HLX_MMA_T);
            asm volatile("cp.async.wait_group 1;\n" ::);
        } else {
            asm volatile("cp.async.wait_group 0;\n" ::);
        }
        __syncthreads(); // the tile is in, from every thread's copies
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            float lo[4] = { 0.0f, 0.0f, 0.0f, 0.0f }; // q's remainder: a second chain
            sc[nt][0] = sc[nt][1] = sc[nt][2] = sc[nt][3] = 0.0f;
#pragma unroll
            for (int s = 0; s < KS; s++) {
                uint32_t f[2];
                // two 8 x 8 matrices (this k-step's two halves) with ldmatrix.x2
                uint32_t a = (uint32_t)__cvta_generic_to_shared(
                    K + (nt * 8 + (lane & 7)) * KL + e0 + 16 * s + 8 * ((lane >> 3) & 1));
                asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                             : "=r"(f[0]), "=r"(f[1]) : "r"(a));
                hlx_mma(sc[nt], qh[s], f[0], f[1]);
                hlx_mma(lo, ql[s], f[0], f[1]);
            }
#pragma unroll
            for (int r = 0; r < 4; r++)
                sc[nt][r] += lo[r];
        }
        {
            float *mine = spart + ((size_t)(hg * DS + sl) * 16) * HLX_MMA_T;
#pragma unroll
            for (int nt = 0; nt < NT; nt++)
#pragma unroll
                for (int r = 0; r < 4; r++)
                    mine[(gq + 8 * (r >> 1)) * HLX_MMA_T + nt * 8 + 2 * c + (r & 1)] = sc[nt][r];
        }
        __syncthreads(); // every slice's partial scores are in
        {
            const float *grp = spart + (size_t)hg * DS * 16 * HLX_MMA_T;
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
#pragma unroll
                for (int r = 0; r < 4; r++) {
                    int at = (gq + 8 * (r >> 1)) * HLX_MMA_T + nt * 8 + 2 * c + (r & 1);
                    float x = grp[at];
                    for (int u = 1; u < DS; u++) // the slices in order: the same sum everywhere
                        x += grp[u * 16 * HLX_MMA_T + at];
                    sc[nt][r] = x;
                }
            }
        }
        hlx_mma_softmax<VN>(sc, m, l, o, jt, j1, c, cap);
        hlx_mma_pv<VN>(o, sc, K + v0, KL, lane);
        __syncthreads(); // the stage and the partial scores are free again
    }
    hlx_mma_finish<VN>(o, m, l, work_o, work_lse, group, h0, gq, c, DV, v0, sl == 0);
}

// The wide kernel's shapes: its shared memory (two key tiles and the partial scores)
template <int DK, int DV, int HG, int DS>
static size_t hlx_cu_wide_smem(void)
{
    return 2 * sizeof(__nv_bfloat16) * HLX_MMA_T * (DK + HLX_MMA_PAD) +
           sizeof(float) * (size_t)HG * DS * 16 * HLX_MMA_T;
}

// o = sum_p exp(lse_p - m) o_p / sum_p exp(lse_p - m), lse = m + log(sum). grid: (head,
// chunk of 32 elements), block 32 x 32: the block's 1024 threads find m and the sum over
// the parts together, then warp w adds parts w, w + 32, ... (four loads in flight) for its
// lane's element and the 32 warp sums are added in warp order. Thousands of splits (a
// 1M-token shard over a whole H200) merge in microseconds, where one thread per element
// walking every part took 1.8 ms; the order is fixed, so the result is the same run to run.
#define HLX_MERGE_WARPS 32

__device__ __forceinline__ float hlx_cu_block_reduce(float x, bool is_max, float *red)
{
    const int lane = threadIdx.x, w = threadIdx.y;
    x = is_max ? hlx_cu_warp_max(x) : hlx_cu_warp_sum(x);
    __syncthreads(); // red is reused: every reader of its last value is past this
    if (lane == 0)
        red[w] = x;
    __syncthreads();
    x = red[0];
    for (int i = 1; i < HLX_MERGE_WARPS; i++)
        x = is_max ? fmaxf(x, red[i]) : x + red[i];
    return x;
}

__global__ void __launch_bounds__(32 * HLX_MERGE_WARPS)
hlx_cu_merge(int nparts, int nheads, int dv, const float *o_parts, const float *lse_parts,
             float *o, float *lse)
{
    __shared__ float red[HLX_MERGE_WARPS];
    __shared__ float part[HLX_MERGE_WARPS][32];
    const int h = blockIdx.x, lane = threadIdx.x, w = threadIdx.y;
    const int tid = w * 32 + lane, e = blockIdx.y * 32 + lane, nt = 32 * HLX_MERGE_WARPS;
    float m = -INFINITY, s = 0.0f, a = 0.0f;

    for (int p = tid; p < nparts; p += nt)
        m = fmaxf(m, lse_parts[(size_t)p * nheads + h]);
    m = hlx_cu_block_reduce(m, true, red);
    if (m == -INFINITY) {
        if (w == 0 && e < dv)
            o[(size_t)h * dv + e] = 0.0f;
        if (tid == 0 && blockIdx.y == 0)
            lse[h] = -INFINITY;
        return;
    }
    for (int p = tid; p < nparts; p += nt)
        s += expf(lse_parts[(size_t)p * nheads + h] - m);
    s = hlx_cu_block_reduce(s, false, red);
    if (e < dv) {
        const int W = HLX_MERGE_WARPS;
        int p = w;
        for (; p + 3 * W < nparts; p += 4 * W) { // four independent loads per round
            float l0 = lse_parts[(size_t)p * nheads + h];
            float l1 = lse_parts[(size_t)(p + W) * nheads + h];
            float l2 = lse_parts[(size_t)(p + 2 * W) * nheads + h];
            float l3 = lse_parts[(size_t)(p + 3 * W) * nheads + h];
            float v0 = o_parts[((size_t)p * nheads + h) * dv + e];
            float v1 = o_parts[((size_t)(p + W) * nheads + h) * dv + e];
            float v2 = o_parts[((size_t)(p + 2 * W) * nheads + h) * dv + e];
            float v3 = o_parts[((size_t)(p + 3 * W) * nheads + h) * dv + e];
            float w0 = expf(l0 - m), w1 = expf(l1 - m), w2 = expf(l2 - m), w3 = expf(l3 - m);
            if (w0 != 0.0f)
                a += w0 * v0;
            if (w1 != 0.0f)
                a += w1 * v1;
            if (w2 != 0.0f)
                a += w2 * v2;
            if (w3 != 0.0f)
                a += w3 * v3;
        }
        for (; p < nparts; p += W) {
            float wt = expf(lse_parts[(size_t)p * nheads + h] - m);
            if (wt != 0.0f)
                a += wt * o_parts[((size_t)p * nheads + h) * dv + e];
        }
    }
    part[w][lane] = a;
    __syncthreads();
    if (w == 0 && e < dv) {
        a = part[0][lane];
        for (int i = 1; i < HLX_MERGE_WARPS; i++)
            a += part[i][lane];
        o[(size_t)h * dv + e] = a / s;
    }
    if (tid == 0 && blockIdx.y == 0)
        lse[h] = m + logf(s);
}

extern "C" int hlx_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        return 0;
    return n;
}

extern "C" hlx_status_t hlx_cuda_device_info(char *name, size_t name_len, double *hbm_gbps_p)
{
    cudaDeviceProp pr;
    int clk = 0, bus = 0;

    if (cudaGetDeviceProperties(&pr, 0) != cudaSuccess)
        return HLX_ERR_UNSUPPORTED;
    if (name && name_len) {
        strncpy(name, pr.name, name_len - 1);
        name[name_len - 1] = '\0';
    }
    cudaDeviceGetAttribute(&clk, cudaDevAttrMemoryClockRate, 0); // kHz
    cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, 0);
    *hbm_gbps_p = 2.0 * clk * 1e3 * (bus / 8.0) * 1e-9; // double data rate
    return HLX_OK;
}

extern "C" size_t hlx_cuda_attn_work_floats(int group, int dv, int nsplit)
{
    return (size_t)nsplit * group * ((size_t)dv + 1);
}

extern "C" int hlx_cuda_attn_splits(size_t len)
{
    // about 1K tokens per split, at most 1024 splits: several blocks per SM on an H200
    // (132 SMs) for one (request, KV head); the merge of 1024 partials is a few MB
    size_t n = (len + 1023) / 1024;
    return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

extern "C" int hlx_cuda_attn_splits_for(size_t len, int group)
{
    // about 2048 blocks in all (several waves on 132 SMs), at least 1K tokens per split:
    // a 128-head group (16 blocks per split) takes 8K-token splits, so that its partials
    // (splits x group x (dv + 1) floats, written then merged) stay a few % of the KV
    int chunks = (group + HLX_CU_HEADS - 1) / HLX_CU_HEADS;
    size_t want = 2048 / (size_t)(chunks < 1 ? 1 : chunks), by_len = (len + 1023) / 1024;
    size_t n = want < by_len ? want : by_len;
    return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

static int hlx_cu_attn_variant; // 0 auto, 1 warp, 2 tokens, 3 mma (hlx_cuda_attn_set_variant)

extern "C" hlx_status_t hlx_cuda_attn_set_variant(const char *name)
{
    int v = !strcmp(name, "auto") ? 0 : !strcmp(name, "warp") ? 1 :
            !strcmp(name, "tokens") ? 2 : !strcmp(name, "mma") ? 3 : -1;
    if (v < 0)
        return HLX_ERR_INVALID;
    hlx_cu_attn_variant = v;
    return HLX_OK;
}

extern "C" const char *hlx_cuda_attn_variant_for(const hlx_attn_desc_t *d)
{
    int v_in_k = d->v == d->k && d->v_stride == d->k_stride && d->dv <= d->dk;
    size_t need = sizeof(float) * ((size_t)HLX_CU_HEADS * d->dk +
                                   32 * ((size_t)d->dk + 4 + (size_t)d->dv));
    int fits = !v_in_k && d->dk % 4 == 0 && d->dv % 4 == 0 && d->dk <= 256 && d->dv <= 256 &&
               need <= 48 * 1024;
    // the mma kernels copy 16-byte pieces of bf16 or fp8 rows
    size_t es = d->kv_dtype == HLX_DTYPE_BF16 ? 2 : d->kv_dtype == HLX_DTYPE_FP8 ? 1 : 0;
    int rows16 = es && d->k_stride * es % 16 == 0 && d->v_stride * es % 16 == 0 &&
                 ((uintptr_t)d->k & 15) == 0 && ((uintptr_t)d->v & 15) == 0;
    int gqa = !v_in_k && (d->dk == 64 || d->dk == 128) && (d->dv == 64 || d->dv == 128);
    int mla = v_in_k && es == 2 && ((d->dk == 576 && d->dv == 512) || (d->dk == 96 && d->dv == 64));
    int mma = rows16 && (gqa || mla);

    // auto takes mma for the shapes it has run on a GPU (GQA 128/128 in bf16 and fp8, MLA);
    // heads of 64 only when asked for, until test_backend_cuda's cases for them have run
    int mma_run = mma && (v_in_k || (d->dk == 128 && d->dv == 128));

    if (hlx_cu_attn_variant == 3 || (hlx_cu_attn_variant == 0 && mma_run))
        return mma ? "mma" : NULL; // mma asked for a shape it does not take
    if (hlx_cu_attn_variant == 1 || (hlx_cu_attn_variant == 0 && !fits))
        return "warp";
    return fits ? "tokens" : NULL; // tokens asked for a shape it does not take
}

typedef void (*hlx_cu_split_fn)(int, int, int, size_t, int, const float *, const void *,
                                const void *, size_t, size_t, float, float, int, int, float *,
                                float *);
typedef void (*hlx_cu_tok_fn)(int, int, int, size_t, int, const float *, const void *,
                              const void *, size_t, size_t, float, float, int, float *,
                              float *);
typedef void (*hlx_cu_mma_fn)(int, size_t, const float *, const void *, const void *, size_t,
                              size_t, float, float, float *, float *);
typedef void (*hlx_cu_wide_fn)(int, size_t, const float *, const __nv_bfloat16 *, size_t, float,
                               float, float *, float *);

// The kernel hlx_cuda_attn launches for d, its tile and shared memory.
typedef struct hlx_cu_plan {
    hlx_cu_split_fn split; // the warp kernel, or NULL
    hlx_cu_tok_fn   tok;   // the tokens kernel, or NULL
    hlx_cu_mma_fn   mma;   // the mma kernel, or NULL
    hlx_cu_wide_fn  wide;  // the mma kernel for MLA's shape, or NULL
    const void     *fn;           // the kernel chosen, for the occupancy query
    int             heads, warps; // query heads and warps per block
    int             tile, v_in_k;
    size_t          smem;
} hlx_cu_plan_t;

static int hlx_cu_attn_plan(const hlx_attn_desc_t *d, hlx_cu_plan_t *p)
{
    const char *v = hlx_cuda_attn_variant_for(d);

    memset(p, 0, sizeof(*p));
    p->v_in_k = d->v == d->k && d->v_stride == d->k_stride && d->dv <= d->dk;
    if (v == NULL)
        return -1;
    if (!strcmp(v, "mma") && p->v_in_k) {
        // blocks of 2 x 16 heads in 4 warps each (576 / 512), or 16 heads in 2 (96 / 64)
        static bool raised[2];
        int big = d->dk == 576, i = big ? 0 : 1;
        p->wide = big ? hlx_cu_attn_mma_wide<576, 512, 2, 4> : hlx_cu_attn_mma_wide<96, 64, 1, 2>;
        p->smem = big ? hlx_cu_wide_smem<576, 512, 2, 4>() : hlx_cu_wide_smem<96, 64, 1, 2>();
        p->fn = (const void *)p->wide;
        p->heads = big ? 32 : 16;
        p->warps = big ? 8 : 2;
        p->tile = HLX_MMA_T;
        if (!raised[i]) { // above 48 KiB only once the limit is raised (per device: once here)
            if (cudaFuncSetAttribute(p->wide, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)p->smem) != cudaSuccess) {
                (void)cudaGetLastError();
                return -1;
            }
            raised[i] = true;
        }
        return 0;
    }
    if (!strcmp(v, "mma")) {
        // two stages of a 32-token tile of K and V in bf16, rows padded by 8; fp8: one bf16
        // tile and two raw stages
        static const hlx_cu_mma_fn fns[2][2][2] = {
            { { hlx_cu_attn_mma<64, 64, false>, hlx_cu_attn_mma<64, 128, false> },
              { hlx_cu_attn_mma<128, 64, false>, hlx_cu_attn_mma<128, 128, false> } },
            { { hlx_cu_attn_mma<64, 64, true>, hlx_cu_attn_mma<64, 128, true> },
              { hlx_cu_attn_mma<128, 64, true>, hlx_cu_attn_mma<128, 128, true> } },
        };
        int f8 = d->kv_dtype == HLX_DTYPE_FP8;
        size_t tile = sizeof(__nv_bfloat16) * HLX_MMA_T *
                      ((size_t)d->dk + HLX_MMA_PAD + (size_t)d->dv + HLX_MMA_PAD);
        p->tile = HLX_MMA_T;
        p->smem = f8 ? tile + 2 * (size_t)HLX_MMA_T * ((size_t)d->dk + (size_t)d->dv) : 2 * tile;
        p->mma = fns[f8][d->dk == 128][d->dv == 128];
        p->fn = (const void *)p->mma;
        p->heads = 16; // one warp
        p->warps = 1;
        return 0;
    }
    if (!strcmp(v, "tokens")) {
        // tiles of whole 32-token steps in at most 48 KiB with the queries
        size_t row = sizeof(float) * ((size_t)d->dk + 4 + (size_t)d->dv);
        size_t qb = sizeof(float) * (size_t)HLX_CU_HEADS * d->dk;
        int steps = (int)((48 * 1024 - qb) / (32 * row));
        p->tile = 32 * (steps < 1 ? 1 : steps > 4 ? 4 : steps);
        p->smem = qb + row * (size_t)p->tile;
        p->tok = d->dv <= 128 ? hlx_cu_attn_tok<1> : hlx_cu_attn_tok<2>;
        p->fn = (const void *)p->tok;
        p->heads = p->warps = HLX_CU_HEADS; // a warp per head
        return 0;
    }
    {
        int row = d->dk + (p->v_in_k ? 0 : d->dv); // floats staged per token
        int nk = (d->dk + 31) / 32, nv = (d->dv + 31) / 32;
        p->tile = HLX_CU_SMEM / (int)(sizeof(float) * row);
        if (p->tile < 1)
            p->tile = 1;
        p->smem = sizeof(float) * (size_t)p->tile * row;
        // exact chunk counts for the common shapes (GQA 32..256, MLA 576/512), else the
        // maximum with guards
        p->split = nk == 1 && nv == 1 ? hlx_cu_attn_split<1, 1> :
                   nk == 2 && nv == 2 ? hlx_cu_attn_split<2, 2> :
                   nk == 4 && nv == 4 ? hlx_cu_attn_split<4, 4> :
                   nk == 8 && nv == 8 ? hlx_cu_attn_split<8, 8> :
                   nk == 18 && nv == 16 ? hlx_cu_attn_split<18, 16> :
                   hlx_cu_attn_split<HLX_CU_DMAX / 32, HLX_CU_DMAX / 32>;
        p->fn = (const void *)p->split;
        p->heads = p->warps = HLX_CU_HEADS; // a warp per head
    }
    return 0;
}

extern "C" int hlx_cuda_attn_splits_desc(const hlx_attn_desc_t *d)
{
    // whole waves: k x (resident blocks of this kernel on the device) blocks in all, k up
    // to 4, at least 256 tokens per split; the group's head chunks share a split
    int chunks, dev = 0, sms = 0, per_sm = 0;
    hlx_cu_plan_t p;
    cudaError_t e;

    if (d->group < 1 || hlx_cu_attn_plan(d, &p) != 0)
        return hlx_cuda_attn_splits_for(d->len, d->group);
    chunks = (d->group + p.heads - 1) / p.heads;
    e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, p.fn, 32 * p.warps, p.smem);
    if (e != cudaSuccess || sms < 1 || per_sm < 1) {
        (void)cudaGetLastError();
        return hlx_cuda_attn_splits_for(d->len, d->group);
    }
    // the mma kernels stream their split at HBM speed: one wave (k = 1) keeps the splits, and
    // the merge over them, 4x fewer (the merge of 3168 parts was 30 us of a 180 us call)
    for (int k = p.mma || p.wide ? 1 : 4; k >= 1; k--) {
        size_t n = (size_t)k * (size_t)sms * (size_t)per_sm / (size_t)chunks;
        if (n >= 1 && d->len / n >= 256)
            return n > 65535 ? 65535 : (int)n;
    }
    {
        size_t n = d->len / 256; // a short shard: 256-token splits, fewer than one wave
        return n < 1 ? 1 : n > 65535 ? 65535 : (int)n;
    }
}

extern "C" hlx_status_t hlx_cuda_attn(const hlx_attn_desc_t *d, int nsplit, float *work,
                                      void *stream)
{
    cudaStream_t st = (cudaStream_t)stream;
    float *wo = work, *wl = work + (size_t)nsplit * d->group * d->dv;
    hlx_cu_plan_t p;

    if (d->dk < 1 || d->dv < 1 || d->dk > HLX_CU_DMAX || d->dv > HLX_CU_DMAX || nsplit < 1 ||
        nsplit > 65535 || d->group < 1 || d->group > 65535 * HLX_CU_HEADS ||
        (d->kv_dtype != HLX_DTYPE_F32 && d->kv_dtype != HLX_DTYPE_BF16 &&
         d->kv_dtype != HLX_DTYPE_FP8))
        return HLX_ERR_INVALID;
    if (d->len == 0)
        return hlx_cuda_merge(0, d->group, d->dv, wo, wl, d->o, d->lse, stream);
    if (hlx_cu_attn_plan(d, &p) != 0)
        return hlx_cuda_note(0, __func__, "the attention kernel asked for (HELIX_CUDA_ATTN, "
                             "--variant) does not take this shape or KV type");
    {
        dim3 grid((unsigned)((d->group + p.heads - 1) / p.heads), (unsigned)nsplit);
        dim3 block(32, p.warps);
        if (p.wide)
            p.wide<<<grid, block, p.smem, st>>>(d->group, d->len, d->q,
                                                (const __nv_bfloat16 *)d->k, d->k_stride,
                                                d->scale, d->softcap, wo, wl);
        else if (p.mma)
            p.mma<<<grid, block, p.smem, st>>>(d->group, d->len, d->q, d->k, d->v, d->k_stride,
                                               d->v_stride, d->scale, d->softcap, wo, wl);
        else if (p.tok)
            p.tok<<<grid, block, p.smem, st>>>(d->group, d->dk, d->dv, d->len, (int)d->kv_dtype,
                                               d->q, d->k, d->v, d->k_stride, d->v_stride,
                                               d->scale, d->softcap, p.tile, wo, wl);
        else
            p.split<<<grid, block, p.smem, st>>>(d->group, d->dk, d->dv, d->len,
                                                 (int)d->kv_dtype, d->q, d->k, d->v,
                                                 d->k_stride, d->v_stride, d->scale,
                                                 d->softcap, p.tile, p.v_in_k, wo, wl);
    }
    {
        hlx_status_t s = hlx_cu_status(cudaGetLastError());
        if (s != HLX_OK)
            return s;
    }
    return hlx_cuda_merge(nsplit, d->group, d->dv, wo, wl, d->o, d->lse, stream);
}

extern "C" hlx_status_t hlx_cuda_merge(int nparts, int nheads, int dv, const float *o_parts,
                                       const float *lse_parts, float *o, float *lse,
                                       void *stream)
{
    if (nheads < 1)
        return HLX_OK;
    if (dv < 1 || (dv + 31) / 32 > 65535)
        return HLX_ERR_INVALID;
    hlx_cu_merge<<<dim3((unsigned)nheads, (unsigned)((dv + 31) / 32)), dim3(32, HLX_MERGE_WARPS), 0,
                   (cudaStream_t)stream>>>(nparts, nheads, dv, o_parts, lse_parts, o, lse);
    return hlx_cu_status(cudaGetLastError());
}
