/* Deterministic synthetic tensors: every element is a hash of (seed, tensor, global index),
 * so a shard and the unsharded reference produce the same values independently, and a
 * million-token prior context needs no prefill. */
#ifndef HLX_SYNTH_H
#define HLX_SYNTH_H

#include <helix/model.h>
#include <helix/types.h>
#include <stdint.h>

typedef enum hlx_tensor {
    HLX_T_ATTN_NORM = 0, /* [H] */
    HLX_T_WQ,            /* [H][Q*dk] */
    HLX_T_WK,            /* [H][K*dk] */
    HLX_T_WV,            /* [H][K*dv] */
    HLX_T_WO,            /* [Q*dv][H] */
    HLX_T_FFN_NORM,      /* [H] */
    HLX_T_WGATE,         /* [H][F] */
    HLX_T_WUP,           /* [H][F] */
    HLX_T_WDOWN,         /* [F][H] */
    HLX_T_KCTX,          /* prior context keys   [B][K][S][dk] */
    HLX_T_VCTX,          /* prior context values [B][K][S][dv] */
    HLX_T_EMBED,         /* [V][H], global */
    HLX_T_FINAL_NORM,    /* [H], global */
    HLX_T_LMHEAD,        /* [H][V], global */
    HLX_T_TOKEN0,        /* first token of each request */
    HLX_T_BQ,            /* [Q*dk] q bias (qkv_bias) */
    HLX_T_BK,            /* [K*dk] */
    HLX_T_BV,            /* [K*dv] */
    HLX_T_QNORM,         /* [dk] per-head q norm weights (qk_norm) */
    HLX_T_KNORM,         /* [dk] */
    HLX_T_POST_ATTN_NORM, /* [H] norm of the attention's output (post_norms) */
    HLX_T_POST_FFN_NORM, /* [H] norm of the FFN's output */
    HLX_T_SINKS,         /* [Q] attention sink logits (attn_sinks) */
    HLX_T_BO,            /* [H] W_o's bias (o_bias) */
    HLX_T_ATTN_NORM_B,   /* [H] LayerNorm biases (norm_layer) */
    HLX_T_FFN_NORM_B,    /* [H] */
    HLX_T_FINAL_NORM_B,  /* [H], global */
    HLX_T_BUP,           /* [F] the plain FFN's up bias (ffn_bias) */
    HLX_T_BDOWN,         /* [H] its down bias */
    HLX_T_COUNT
} hlx_tensor_t;

static inline uint64_t hlx_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Key of one tensor of one layer (layer is ignored for global tensors). */
static inline uint64_t hlx_synth_key(uint64_t seed, int layer, hlx_tensor_t t)
{
    return hlx_mix64(hlx_mix64(seed) ^ ((uint64_t)layer << 8 | (uint64_t)t));
}

/* Uniform in [-1, 1), exactly representable in fp32 (24 bits). */
static inline float hlx_synth_u(uint64_t key, uint64_t index)
{
    uint64_t h = hlx_mix64(key + index * 0xd6e8feb86659fd93ull);
    return (float)((double)(h >> 40) * (1.0 / 8388608.0) - 1.0);
}

/* Element (row, col) of weight tensor t of a layer, rounded to the model's weight dtype. */
float hlx_synth_weight(const hlx_model_t *m, uint64_t key, hlx_tensor_t t, int64_t row,
                       int64_t col, int64_t cols);
/* v = a + b u, u = hlx_synth_u(key, row * cols + col): the map of weight tensor kind t
 * (before the rounding to the model's weight dtype). */
void hlx_synth_affine(const hlx_model_t *m, hlx_tensor_t t, float *a, float *b);
/* Elements i0 .. i0 + n - 1 (flat: row * cols + col) of weight tensor t, as
 * hlx_synth_weight gives them, stored into dst as dt (f32 or bf16, as hlx_wsrc_read
 * takes). */
void hlx_synth_weight_run(const hlx_model_t *m, uint64_t key, hlx_tensor_t t, uint64_t i0,
                          int64_t n, void *dst, hlx_dtype_t dt);
/* Value rounded through dtype (f32: unchanged; bf16, fp8 e4m3: round to nearest even, fp8
 * saturating at +-448). */
float hlx_round_dtype(float v, hlx_dtype_t t);
/* A KV element as a cache with a KV-cache scale holds it, read back: v times the fp32
 * inverse of scale, rounded through dtype, times scale (scale 1: hlx_round_dtype). */
float hlx_round_kv(float v, hlx_dtype_t t, float scale);
/* Prior-context keys are scaled so that attention scores spread over several units and
 * the softmax is peaked: the attention output then carries as much signal as the residual
 * stream, and a wrong merge or a lost shard shows up in --check. */
#define HLX_SYNTH_KEY_SCALE 6.0f

/* Hash index of element 0 of the prior-context row of request b, global KV head g (of K),
 * position p, d elements a row (element e: this + e). */
static inline uint64_t hlx_synth_ctx_index(int b, int K, int g, int64_t p, int d)
{
    uint64_t stream = (uint64_t)(b * K + g) << 40;
    return (stream | (uint64_t)p) * (uint64_t)d;
}

/* Element e (of d) of the prior-context key (is_key) or value of request b, global KV head
 * g (of K), position p. Not rounded. */
static inline float hlx_synth_ctx(uint64_t key, int b, int K, int g, int64_t p, int e, int d,
                                  int is_key)
{
    float u = hlx_synth_u(key, hlx_synth_ctx_index(b, K, g, p, d) + (uint64_t)e);
    return is_key ? u * HLX_SYNTH_KEY_SCALE : u;
}

/* hlx_synth_ctx for e = 0 .. d - 1 into row: the same values, a row at a time (the
 * engine's fill of a long context; the element function stays the reference's). */
void hlx_synth_ctx_row(uint64_t key, int b, int K, int g, int64_t p, int d, int is_key,
                       float *row);

/* First token of request b. */
int hlx_synth_token0(const hlx_model_t *m, uint64_t seed, int b);

#endif
