/* Internal helpers shared by the reference and the vectorized kernels (not installed). */
#ifndef HLX_KERNELS_PRIV_H
#define HLX_KERNELS_PRIV_H

#include "hlx_kernels.h"

#include <math.h>
#include <string.h>

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

static inline float hlx_kv_load(const void *p, hlx_dtype_t t, size_t i)
{
    if (t == HLX_DTYPE_BF16)
        return hlx_bf16_to_f32(((const uint16_t *)p)[i]);
    if (t == HLX_DTYPE_FP8)
        return hlx_fp8_to_f32(((const uint8_t *)p)[i]);
    return ((const float *)p)[i];
}

/* Variant tables filled by each ISA file; they start from the reference. */
void hlx_kernels_avx2(hlx_kernels_t *k);
void hlx_kernels_avx512(hlx_kernels_t *k);
void hlx_kernels_amx(hlx_kernels_t *k); /* avx512 + AMX tiles (HLX_HAVE_AMX builds) */



/* Probe loops of each ISA file (probe.c times them). */
double hlx_probe_fma_avx2(uint64_t n);     /* n x 12 FMAs of 8 lanes */
double hlx_probe_fma_avx512(uint64_t n);   /* n x 16 FMAs of 16 lanes */
double hlx_probe_read_avx2(const float *p, size_t n);
double hlx_probe_read_avx512(const float *p, size_t n);
#endif
