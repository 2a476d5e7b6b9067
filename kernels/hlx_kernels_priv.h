/* Internal helpers shared by the reference and the vectorized kernels (not installed). */
#ifndef HLX_KERNELS_PRIV_H
#define HLX_KERNELS_PRIV_H

#include "hlx_kernels.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

/* Variant tables filled by each ISA file; they start from the reference. */
void hlx_kernels_avx2(hlx_kernels_t *k);
void hlx_kernels_avx512(hlx_kernels_t *k);
void hlx_kernels_amx(hlx_kernels_t *k); /* avx512 + AMX tiles (HLX_HAVE_AMX builds) */

/* The reference attention over a shard in the layout lay (see hlx_kv_at): the fallback of
 * variants whose layout uses blocks. */
void hlx_attn_ref_layout(const hlx_attn_desc_t *d, hlx_kv_layout_t lay);

/* The shapes a vector attention path runs (its attn_covers): f32, bf16 or fp8 KV with dk
 * and dv multiples of width, dk at most 1024; a blocked path (blocked) also needs v == k
 * values of at most 512 elements, no longer than the keys. */
static inline int hlx_attn_shape_fits(const hlx_attn_desc_t *d, int width, int blocked)
{
    const int alias = blocked && d->v == d->k;

    return d->dk % width == 0 && d->dv % width == 0 && d->dk <= 1024 &&
           !(alias && (d->dv > 512 || d->dv > d->dk)) &&
           (d->kv_dtype == HLX_DTYPE_F32 || d->kv_dtype == HLX_DTYPE_BF16 ||
            d->kv_dtype == HLX_DTYPE_FP8);
}

/* HELIX_KV_PREFETCH=auto: the mode the avx512 attention's last long call chose (0
 * hardware, 1 software; -1 none yet); defined in dispatch.c, plain C. */
extern atomic_int hlx_kv_prefetch_pick;

/* The avx512 attention widens fp8 KV by AVX512_VBMI byte lookups: the CPU has them and
 * HELIX_FP8_LOOKUP is 1 (dispatch.c; hlx_kernels_fp8_widening reports it). */
int hlx_kernels_fp8_vbmi(void);

/* Zeroes columns [n0, n1) of the M rows of y (row stride N). */
void hlx_gemm_zero_cols(int M, int N, float *y, int n0, int n1);

/* Probe loops of each ISA file (probe.c times them). */
double hlx_probe_fma_avx2(uint64_t n);     /* n x 12 FMAs of 8 lanes */
double hlx_probe_fma_avx512(uint64_t n);   /* n x 16 FMAs of 16 lanes */
double hlx_probe_read_avx2(const float *p, size_t n);
double hlx_probe_read_avx512(const float *p, size_t n);
/* n floats streamed, k FMAs (of the ISA's width) per 64-byte line; piece 0: one stream,
 * else the buffer's two halves in turn, piece floats (a multiple of 16) of each (probe.c's
 * scalar loop among them) */
double hlx_probe_stream_fma_scalar(const float *p, size_t n, int k, size_t piece);
double hlx_probe_stream_fma_avx2(const float *p, size_t n, int k, size_t piece);
double hlx_probe_stream_fma_avx512(const float *p, size_t n, int k, size_t piece);
#endif
