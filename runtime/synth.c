/* Synthetic weights and context: scale by tensor kind, rounding to the storage dtype. */
#include "hlx_synth.h"

#include <math.h>

float hlx_round_dtype(float v, hlx_dtype_t t)
{
    return t == HLX_DTYPE_BF16 ? hlx_bf16_to_f32(hlx_f32_to_bf16(v)) : v;
}

float hlx_synth_weight(const hlx_model_t *m, uint64_t key, hlx_tensor_t t, int64_t row,
                       int64_t col, int64_t cols)
{
    float u = hlx_synth_u(key, (uint64_t)(row * cols + col)), v;

    switch (t) {
    case HLX_T_ATTN_NORM:
    case HLX_T_FFN_NORM:
    case HLX_T_FINAL_NORM:
        v = 1.0f + 0.125f * u;
        break;
    case HLX_T_QNORM:
    case HLX_T_KNORM: /* wider than the layer norms: a wrong head or element shows */
    case HLX_T_POST_ATTN_NORM:
    case HLX_T_POST_FFN_NORM:
        v = 1.0f + 0.5f * u;
        break;
    case HLX_T_BQ:
    case HLX_T_BK:
    case HLX_T_BV: /* about a third of the projections' unit spread */
        v = 0.5f * u;
        break;
    case HLX_T_EMBED:
        v = u;
        break;
    case HLX_T_WQ:
    case HLX_T_WK:
    case HLX_T_WV:
    case HLX_T_WGATE:
    case HLX_T_WUP:
    case HLX_T_LMHEAD:
        v = u * (float)(1.7320508 / sqrt((double)m->hidden)); /* unit variance out */
        break;
    case HLX_T_WO:
        v = u * (float)(1.7320508 / sqrt((double)m->q_heads * m->v_head_dim));
        break;
    case HLX_T_WDOWN:
        v = u * (float)(1.7320508 / sqrt((double)m->ffn));
        break;
    default:
        v = u;
        break;
    }
    return hlx_round_dtype(v, m->weight_dtype);
}

int hlx_synth_token0(const hlx_model_t *m, uint64_t seed, int b)
{
    return (int)(hlx_mix64(hlx_synth_key(seed, 0, HLX_T_TOKEN0) + (uint64_t)b) %
                 (uint64_t)m->vocab);
}
