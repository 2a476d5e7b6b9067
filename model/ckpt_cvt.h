/* The element conversions of checkpoint reads (ckpt.c), where a load spends its CPU time:
 * a portable C set and an AVX2 one, bit for bit alike, chosen once per checkpoint. */
#ifndef HLX_CKPT_CVT_H
#define HLX_CKPT_CVT_H

#include "hlx_ckpt.h"

#include <string.h>

static inline float hlx_f16_to_f32(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 0x3ffu;
    union { uint32_t u; float f; } v;

    if (e == 0) {
        v.f = (float)m * 0x1p-24f;
        v.u |= s;
        return v.f;
    }
    if (e == 31)
        v.u = s | 0x7f800000u | (m << 13);
    else
        v.u = s | ((e + 112u) << 23) | (m << 13);
    return v.f;
}

/* Element i of a row stored in t (unaligned safe): the reference of every conversion. */
static inline float hlx_st_load(const uint8_t *p, hlx_st_dtype_t t, size_t i)
{
    switch (t) {
    case HLX_ST_F32: {
        float f;
        memcpy(&f, p + 4 * i, 4);
        return f;
    }
    case HLX_ST_F64: {
        double d;
        memcpy(&d, p + 8 * i, 8);
        return (float)d;
    }
    case HLX_ST_BF16: {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        return hlx_bf16_to_f32(h);
    }
    case HLX_ST_F16: {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        return hlx_f16_to_f32(h);
    }
    case HLX_ST_I8:
        return (float)(int8_t)p[i];
    default: /* F8_E4M3 */
        return hlx_fp8_to_f32(p[i]);
    }
}

/* Word i of packed 32-bit words at p (unaligned safe). */
static inline uint32_t hlx_ck_u32(const uint8_t *p, uint64_t i)
{
    uint32_t v;

    memcpy(&v, p + 4 * i, 4);
    return v; /* safetensors is little-endian, as the hosts the runtime builds for */
}

/* AWQ packs the columns 0, 2, 4, 6, 1, 3, 5, 7 of each eight into fields 0..7: column k's
 * field. */
static const uint8_t hlx_awq_field[8] = { 0, 4, 1, 5, 2, 6, 3, 7 };

/* Rows converted at a time (a tile: transposed stores write this many consecutive
 * elements per column). */
#define HLX_CK_TILE 32

typedef struct hlx_ck_cvt {
    const char *name;
    /* n elements stored as t at p (any byte offset) to f32, as hlx_st_load reads them (fp8
     * through lut, hlx_fp8_to_f32's values) */
    void (*convert)(float *out, const uint8_t *p, hlx_st_dtype_t t, int64_t n,
                    const float *lut);
    /* v[0, n) x s */
    void (*scale)(float *v, int64_t n, float s);
    /* rows of n f32 (row r at v + r vs) to dst's rows from element at on, ld apart, as dt
     * (f32, or bf16 as hlx_f32_to_bf16 rounds) */
    void (*store)(void *dst, hlx_dtype_t dt, size_t at, int64_t ld, const float *v, int64_t vs,
                  int64_t rows, int64_t n);
    /* Element (k, j) of an f32 tile (th rows, nc columns, row k at tile + k tnc) to element
     * at + j ld + k of dst, f32 or bf16: a transposed store. */
    void (*tstore)(void *dst, hlx_dtype_t dt, size_t at, int64_t ld, const float *tile,
                   int64_t tnc, int64_t th, int64_t nc);
    /* Element (i, j) of nr x nc bf16 at src (rows sstride elements apart, any byte offset)
     * to dst[j ld + i], NaNs quieted as hlx_f32_to_bf16 quiets them: the transposed read
     * of a bf16 weight into bf16, without going through f32. */
    void (*bf16_t)(uint16_t *dst, int64_t ld, const uint8_t *src, int64_t sstride, int64_t nr,
                   int64_t nc);
    /* GPTQ's words (bits 2, 4 or 8): fields [f, f + m) of the words of th rows (row k's at
     * word index w + k of pw) to ct column by column, field f + e of row k at ct[e cs + k]:
     * (q - z[k]) x s[k], or q when value is 0. */
    void (*gptq)(float *ct, int64_t cs, const uint8_t *pw, uint64_t w, int64_t th, int bits,
                 int f, int m, const int32_t *z, const float *s, int value);
    /* AWQ's words (4 bits, [in][out / 8], fields in AWQ's order): the n columns from word row
     * wr on (a word row wcols words) of rows [o0, o0 + th), column c's row k at
     * ct[c cs + k]: (q - z[k]) x s[k], or q when value is 0. */
    void (*awq)(float *ct, int64_t cs, const uint8_t *pw, int64_t wr, int64_t wcols,
                int64_t n, int64_t o0, int64_t th, const int32_t *z, const float *s,
                int value);
} hlx_ck_cvt_t;

/* The portable set, and the best this CPU runs (AVX2 where it has it). */
const hlx_ck_cvt_t *hlx_ck_cvt_portable(void);
const hlx_ck_cvt_t *hlx_ck_cvt_best(void);

#endif
