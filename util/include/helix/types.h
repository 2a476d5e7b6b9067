/* Element types shared by kernels, runtime and planner. */
#ifndef HELIX_TYPES_H
#define HELIX_TYPES_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

typedef enum hlx_dtype {
    HLX_DTYPE_F32  = 0,
    HLX_DTYPE_BF16 = 1,
    HLX_DTYPE_FP8  = 2, /* e4m3 */
    HLX_DTYPE_FP4  = 3, /* planner only: 0.5 byte */
    HLX_DTYPE_COUNT
} hlx_dtype_t;

/* The gate's activation of a gated FFN: act = f(gate) x up. */
typedef enum hlx_act {
    HLX_ACT_SILU      = 0, /* x sigmoid(x): SwiGLU (Llama, Qwen, ...) */
    HLX_ACT_GELU_TANH = 1, /* GELU, tanh approximation (PyTorch's approximate="tanh"):
                              GeGLU (Gemma's gelu_pytorch_tanh) */
    HLX_ACT_SWIGLU_CLAMP = 2 /* gpt-oss's clamped SwiGLU, with the model's act_alpha and
                                act_limit: g = min(gate, limit), u = clamp(up, -limit, limit),
                                act = g sigmoid(alpha g) (u + 1) */
} hlx_act_t;

/* Bytes per element (FP4 is 0.5). */
static inline double hlx_dtype_bytes(hlx_dtype_t t)
{
    static const double b[HLX_DTYPE_COUNT] = { 4.0, 2.0, 1.0, 0.5 };
    return (unsigned)t < HLX_DTYPE_COUNT ? b[t] : 0.0;
}

const char *hlx_dtype_name(hlx_dtype_t t);
/* Parses "f32"/"fp32", "bf16", "fp8"/"e4m3", "fp4"; returns -1 when unknown. */
int hlx_dtype_parse(const char *s, hlx_dtype_t *t_p);

/* bf16 <-> f32 with round-to-nearest-even (NaN kept quiet). */
static inline uint16_t hlx_f32_to_bf16(float f)
{
    union { float f; uint32_t u; } v = { f };
    if ((v.u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((v.u >> 16) | 0x40u);
    v.u += 0x7fffu + ((v.u >> 16) & 1u);
    return (uint16_t)(v.u >> 16);
}

static inline float hlx_bf16_to_f32(uint16_t h)
{
    union { uint32_t u; float f; } v = { (uint32_t)h << 16 };
    return v.f;
}

/* fp8 e4m3 (OCP: bias 7, no infinities, S.1111.111 is NaN) -> float, exact. */
static inline float hlx_fp8_to_f32(uint8_t b)
{
    uint32_t s = (uint32_t)(b & 0x80) << 24, e = (b >> 3) & 15, m = b & 7;
    union { uint32_t u; float f; } v;

    if (e == 15 && m == 7)
        return NAN;
    if (e == 0) {
        v.f = (float)m * 0x1p-9f;
        v.u |= s;
        return v.f;
    }
    v.u = s | ((e + 120u) << 23) | (m << 20);
    return v.f;
}

/* 1 for e4m3's NaNs (0x7f, 0xff: exponent and mantissa all ones), which hlx_f32_to_fp8
 * gives for a NaN alone. */
static inline int hlx_fp8_is_nan(uint8_t b)
{
    return (b & 0x7f) == 0x7f;
}

/* Element i of an array stored in t (f32, bf16 or fp8), as float. */
static inline float hlx_dtype_load(const void *p, hlx_dtype_t t, size_t i)
{
    if (t == HLX_DTYPE_BF16)
        return hlx_bf16_to_f32(((const uint16_t *)p)[i]);
    if (t == HLX_DTYPE_FP8)
        return hlx_fp8_to_f32(((const uint8_t *)p)[i]);
    return ((const float *)p)[i];
}

/* Nearest e4m3 value of v (ties to even; saturating to +-448 as CUDA's __NV_SATFINITE
 * does; NaN kept as 0x7f). Bit arithmetic, exact for every float (tests/util/test_fp8.c
 * holds it to a search over the 127 codes): from 2^-6 up, rounding the f32 mantissa to 3
 * bits at bit 20 and moving the exponent's bias from 127 to 7; below, the subnormals
 * m x 2^-9 as the nearest integer m of |v| x 2^9 (m = 8 is the smallest normal, code 8).
 * The KV append stores one element a call, a 1M-token context about 10^8 of them. */
static inline uint8_t hlx_f32_to_fp8(float v)
{
    union { float f; uint32_t u; } x = { v };
    const uint8_t sign = (uint8_t)((x.u >> 24) & 0x80u);
    uint32_t a = x.u & 0x7fffffffu;

    if (a > 0x7f800000u)
        return 0x7f;
    if (a >= 0x43e00000u) /* 448 and beyond, infinity included */
        return sign | 126;
    if (a >= 0x3c800000u) { /* 2^-6 and up: normal */
        a += 0x7ffffu + ((a >> 20) & 1u);
        return sign | (uint8_t)((a >> 20) - (120u << 3));
    }
    x.u = a;
    x.f = x.f * 512.0f + 0x1p23f; /* |v| 2^9 < 8, rounded to an integer (ties to even) */
    return sign | (uint8_t)(x.u & 0xfu);
}

/* Stores v as element i of an array stored in t (round to nearest even; fp8 saturates). */
static inline void hlx_dtype_store(void *p, hlx_dtype_t t, size_t i, float v)
{
    if (t == HLX_DTYPE_BF16)
        ((uint16_t *)p)[i] = hlx_f32_to_bf16(v);
    else if (t == HLX_DTYPE_FP8)
        ((uint8_t *)p)[i] = hlx_f32_to_fp8(v);
    else
        ((float *)p)[i] = v;
}

#endif
