/* Synthetic weights and context: scale by tensor kind, rounding to the storage dtype. */
#include "hlx_synth.h"

#include <math.h>

float hlx_round_dtype(float v, hlx_dtype_t t)
{
    return t == HLX_DTYPE_BF16  ? hlx_bf16_to_f32(hlx_f32_to_bf16(v))
           : t == HLX_DTYPE_FP8 ? hlx_fp8_to_f32(hlx_f32_to_fp8(v))
                                : v;
}

float hlx_round_kv(float v, hlx_dtype_t t, float scale)
{
    return scale == 1.0f ? hlx_round_dtype(v, t) : hlx_round_dtype(v * (1.0f / scale), t) * scale;
}

/* v = a + b u: every weight kind is an affine map of the uniform u (b u exact where a != 0,
 * a 0 elsewhere, so the sum rounds as the product alone did, fused or not). */
void hlx_synth_affine(const hlx_model_t *m, hlx_tensor_t t, float *a, float *b)
{
    *a = 0.0f;
    switch (t) {
    case HLX_T_ATTN_NORM:
    case HLX_T_FFN_NORM:
    case HLX_T_FINAL_NORM:
        *a = 1.0f, *b = 0.125f;
        break;
    case HLX_T_QNORM:
    case HLX_T_KNORM: /* wider than the layer norms: a wrong head or element shows */
    case HLX_T_POST_ATTN_NORM:
    case HLX_T_POST_FFN_NORM:
        *a = 1.0f, *b = 0.5f;
        break;
    case HLX_T_BQ:
    case HLX_T_BK:
    case HLX_T_BV: /* about a third of the projections' unit spread */
    case HLX_T_BO:
    case HLX_T_ATTN_NORM_B: /* LayerNorm biases: a shift a wrong mean would not hide */
    case HLX_T_FFN_NORM_B:
    case HLX_T_FINAL_NORM_B:
    case HLX_T_BUP:
    case HLX_T_BDOWN:
        *b = 0.5f;
        break;
    case HLX_T_SINKS: /* [-4, 8): from no effect to a head the sink all but silences, about
                         the log-sum-exp of a few hundred keys */
        *a = 2.0f, *b = 6.0f;
        break;
    case HLX_T_WQ:
    case HLX_T_WK:
    case HLX_T_WV:
    case HLX_T_WGATE:
    case HLX_T_WUP:
    case HLX_T_LMHEAD:
        *b = (float)(1.7320508 / sqrt((double)m->hidden)); /* unit variance out */
        break;
    case HLX_T_WO:
        *b = (float)(1.7320508 / sqrt((double)m->q_heads * m->v_head_dim));
        break;
    case HLX_T_WDOWN:
        *b = (float)(1.7320508 / sqrt((double)m->ffn));
        break;
    default: /* the embedding and anything else: u itself */
        *b = 1.0f;
        break;
    }
}

float hlx_synth_weight(const hlx_model_t *m, uint64_t key, hlx_tensor_t t, int64_t row,
                       int64_t col, int64_t cols)
{
    float a, b;

    hlx_synth_affine(m, t, &a, &b);
    return hlx_round_dtype(a + b * hlx_synth_u(key, (uint64_t)(row * cols + col)),
                           m->weight_dtype);
}

/* The same values as hlx_synth_weight, a run at a time: no call, switch or square root per
 * element, and a clone for x86-64-v4 (AVX-512: 64-bit multiplies in vectors) that GCC
 * vectorizes. A 3B model's weights took 30 s of its 52 s start-up element by element; this
 * loop, about 9 s without the clone and 3 s with it (the page faults are the rest). */
#define HLX_SYNTH_RUN(_T, _conv) \
    do { \
        _T *o = (_T *)dst; \
        for (j = 0; j < n; j++) { \
            float v = a + b * hlx_synth_u(key, i0 + (uint64_t)j); \
            if (bf) \
                v = hlx_bf16_to_f32(hlx_f32_to_bf16(v)); \
            o[j] = _conv(v); \
        } \
    } while (0)
#define HLX_SYNTH_ID(_v) (_v)

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "default"), optimize("O3")))
#endif
void hlx_synth_weight_run(const hlx_model_t *m, uint64_t key, hlx_tensor_t t, uint64_t i0,
                          int64_t n, void *dst, hlx_dtype_t dt)
{
    const int bf = m->weight_dtype == HLX_DTYPE_BF16;
    float a, b;
    int64_t j;

    hlx_synth_affine(m, t, &a, &b);
    if (dt == HLX_DTYPE_BF16)
        HLX_SYNTH_RUN(uint16_t, hlx_f32_to_bf16);
    else
        HLX_SYNTH_RUN(float, HLX_SYNTH_ID);
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "default"), optimize("O3")))
#endif
void hlx_synth_ctx_row(uint64_t key, int b, int K, int g, int64_t p, int d, int is_key,
                       float *row)
{
    const uint64_t i0 = hlx_synth_ctx_index(b, K, g, p, d);
    const float sc = is_key ? HLX_SYNTH_KEY_SCALE : 1.0f;
    int e;

    for (e = 0; e < d; e++)
        row[e] = sc * hlx_synth_u(key, i0 + (uint64_t)e);
}

int hlx_synth_token0(const hlx_model_t *m, uint64_t seed, int b)
{
    return (int)(hlx_mix64(hlx_synth_key(seed, 0, HLX_T_TOKEN0) + (uint64_t)b) %
                 (uint64_t)m->vocab);
}
