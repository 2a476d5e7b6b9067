/* Element types shared by kernels, runtime and planner. */
#ifndef HELIX_TYPES_H
#define HELIX_TYPES_H

#include <stddef.h>
#include <stdint.h>

typedef enum hlx_dtype {
    HLX_DTYPE_F32  = 0,
    HLX_DTYPE_BF16 = 1,
    HLX_DTYPE_FP8  = 2, /* e4m3 */
    HLX_DTYPE_FP4  = 3, /* planner only: 0.5 byte */
    HLX_DTYPE_COUNT
} hlx_dtype_t;

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

#endif
