/* Internal helpers shared by the reference and the vectorized kernels (not installed). */
#ifndef HLX_KERNELS_PRIV_H
#define HLX_KERNELS_PRIV_H

#include "hlx_kernels.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

/* Variant tables filled by each ISA file; they start from the reference. */
void hlx_kernels_avx2(hlx_kernels_t *k);
void hlx_kernels_avx512(hlx_kernels_t *k);
void hlx_kernels_amx(hlx_kernels_t *k); /* avx512 + AMX tiles (HLX_HAVE_AMX builds) */

/* The reference's wq_dequant (wq.c). */
void hlx_wq_dequant_ref(const hlx_wq_t *w, int k0, int kc, int s0, int s1, uint16_t *dst);

/* A wq_dequant as a walk over rows [k0, k0 + kc) of strips [s0, s1) of packed w, each row
 * dequantized by row(): the codes of its 16 columns are the bytes at c shifted right by sh
 * and masked to m, then looked up in lut where it is not NULL (a mapped 4-bit matrix), its
 * group's zero points and scales at z and s, the 16 bf16 values to d (inlined with each
 * variant's row function). */
typedef void (*hlx_wq_row_fn)(const uint8_t *c, int sh, int m, const uint8_t *lut,
                              const float *z, const float *s, uint16_t *d);

/* The group of each row of a packed matrix, walked in order from row k0: set up by
 * hlx_wq_grp_init, then hlx_wq_grp_next gives row k's group and steps on (in order: a
 * count down of the rows left in the group; act order: the table's, tab). */
typedef struct hlx_wq_grp {
    const int32_t *tab;
    int            g, left;
} hlx_wq_grp_t;

static inline hlx_wq_grp_t hlx_wq_grp_init(const hlx_wq_t *w, int k0)
{
    const int32_t *tab = w->gidx ? (const int32_t *)((const char *)w + w->gidx) : NULL;

    return (hlx_wq_grp_t){ tab, tab ? 0 : (k0 + w->kofs) / w->group,
                           tab ? 0 : w->group - (k0 + w->kofs) % w->group };
}

static inline int hlx_wq_grp_next(const hlx_wq_t *w, hlx_wq_grp_t *it, int k)
{
    int g;

    if (it->tab)
        return it->tab[k];
    g = it->g;
    if (--it->left == 0) {
        it->g++;
        it->left = w->group;
    }
    return g;
}
static inline __attribute__((always_inline)) void
hlx_wq_walk(const hlx_wq_t *w, int k0, int kc, int s0, int s1, uint16_t *dst, hlx_wq_row_fn row)
{
    const char *base = (const char *)w;
    const size_t rows = w->bits == 4 ? ((size_t)w->K + 1) / 2 : (size_t)w->K;
    const uint8_t *lut = w->bits == 4 && w->mapped ? w->lut : NULL;
    int s, k;

    for (s = s0; s < s1; s++) {
        const uint8_t *code = (const uint8_t *)(base + w->codes) + (size_t)s * rows * 16;
        const float *sc = (const float *)(base + w->scales) + (size_t)s * (size_t)w->G * 16;
        const float *zc = (const float *)(base + w->zeros) + (size_t)s * (size_t)w->G * 16;
        uint16_t *d = dst + (size_t)(s - s0) * (size_t)kc * 16;
        hlx_wq_grp_t it = hlx_wq_grp_init(w, k0);
        for (k = k0; k < k0 + kc; k++, d += 16) {
            const size_t g = (size_t)hlx_wq_grp_next(w, &it, k);
            const float *gz = zc + g * 16, *gs = sc + g * 16;
            if (w->bits == 4) /* two rows to 16 bytes: the odd one in the high nibbles */
                row(code + (size_t)(k >> 1) * 16, (k & 1) * 4, 15, lut, gz, gs, d);
            else
                row(code + (size_t)k * 16, 0, 255, NULL, gz, gs, d);
        }
    }
}

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

/* HELIX_KV_PREFETCH=auto: the mode the vector attentions' last long call chose
 * (HLX_KV_PREFETCH_HARDWARE, _SOFTWARE, _SOFTWARE_L2; -1 none yet); defined in dispatch.c,
 * plain C. */
extern atomic_int hlx_kv_prefetch_pick;

/* The far prefetch (HELIX_KV_PREFETCH=software-l2, or auto's choice): the key and value
 * blocks HLX_KV_FAR tokens ahead into L2 (prefetcht1), spread over the score loop of the
 * chunk that streams the shard, r bytes of each per key dimension (kb, vb: the two blocks'
 * sizes; vb 0: no values, v == k). On a Zen 4 core the hardware prefetchers and the near
 * software prefetches left the avx512 f32 kernel at half the speed of a plain loop (1M
 * tokens: 81 ms, 0.45 of the roofline; with this 52 ms, 0.70) and bf16 at 48 ms (44.5 with
 * it); the same prefetches as a burst at the block's start gained a third of that; 4 to 32
 * blocks ahead measured alike. */
#define HLX_KV_FAR 256
typedef struct hlx_kv_far {
    const char *k, *v;
    size_t kb, vb, r;
} hlx_kv_far_t;

/* The far prefetch's share of key dimension e (f NULL: none). */
static inline __attribute__((always_inline)) void hlx_kv_far_dim(const hlx_kv_far_t *f, int e)
{
    size_t l;

    if (f == NULL)
        return;
    for (l = ((size_t)e * f->r + 63) / 64 * 64; l < (size_t)(e + 1) * f->r; l += 64) {
        if (l < f->kb)
            __builtin_prefetch(f->k + l, 0, 2);
        if (l < f->vb)
            __builtin_prefetch(f->v + l, 0, 2);
    }
}

/* The far prefetch at block b of a shard of nblk blocks of `block` tokens (the block's
 * keys at kb, kbb bytes a block; its values at vr, vsb bytes a token; alias, v == k: no
 * values), spread over dk key dimensions: f filled when the mode is software-l2 and the
 * shard reaches that far, else NULL (kvpf.c: a call of its own, once per block; inlined
 * into the avx2 block loop it cost that kernel 8-15% in cache through the code's layout). */
const hlx_kv_far_t *hlx_kv_far_at(hlx_kv_far_t *f, int mode, size_t b, size_t nblk, int block,
                                  const char *kb, size_t kbb, const char *vr, size_t vsb,
                                  int alias, int dk);

/* HELIX_KV_PREFETCH=auto (kvpf.c): a call over a shard of at least HLX_KV_TUNE_MIN tokens
 * cuts it into segments of HLX_KV_TUNE_SEG tokens; rounds of HLX_KV_TUNE_ROUND segments
 * (counted across calls and threads) begin with timed trial segments of each of the
 * call's candidate modes, in order and back (a linear drift of the machine cancels), and
 * the rest of the round runs the mode whose faster trial was the fastest (one trial caught
 * by an interrupt does not decide). A call starts with trials only when a round's worth of
 * segments has run since the last ones, so shards of 16K-256K tokens do not each pay for
 * them; shorter calls run the last choice (hardware before any). 128 segments (256K
 * tokens, 6-7 ms of bf16 GQA 8 on one core) where 32 made the six trial segments cost
 * 1.5-4% of a 1M-token call (docs/kernels.md). */
#define HLX_KV_TUNE_SEG   2048
#define HLX_KV_TUNE_ROUND 128
#define HLX_KV_TUNE_MIN   (8 * HLX_KV_TUNE_SEG)
/* Whether a call times the modes (auto, a shard of at least HLX_KV_TUNE_MIN tokens, up to
 * 8 query heads a KV head: one head chunk streams the shard). */
static inline int hlx_kv_tunes(const hlx_attn_desc_t *d, int is_auto)
{
    return is_auto && d->group <= 8 && d->len >= HLX_KV_TUNE_MIN;
}
/* Reads HELIX_KV_PREFETCH (a variant's fill calls it, as it fills its table). */
void hlx_kv_prefetch_load(void);
/* The mode a call starts in: the setting, or under auto (*is_auto set) the last long
 * call's choice, hardware before any. */
int hlx_kv_mode(int *is_auto);
typedef struct hlx_kv_tune {
    const int *modes; /* the candidates, n of them (at most 3) */
    int n;
    size_t off;          /* the round's segment the call started at */
    uint64_t t0, trial[4]; /* the last segment's start; each mode's fastest trial */
} hlx_kv_tune_t;
/* The mode of a long call's first segment; the candidates are hardware, software and
 * software-l2 (with_hardware), or the two software modes. */
int hlx_kv_tune_begin(hlx_kv_tune_t *t, int with_hardware);
/* The mode of the call's segment seg (1, 2, ...), at its start. */
int hlx_kv_tune_next(hlx_kv_tune_t *t, size_t seg);

/* The avx512 attention widens fp8 KV by AVX512_VBMI byte lookups: the CPU has them and
 * HELIX_FP8_LOOKUP is 1 (dispatch.c; hlx_kernels_fp8_widening reports it). */
int hlx_kernels_fp8_vbmi(void);

/* Zeroes columns [n0, n1) of the M rows of y (row stride N). */
void hlx_gemm_zero_cols(int M, int N, float *y, int n0, int n1);

/* The row GEMMs (avx512.c, avx2.c: up to 8 rows of x, W streamed once) keep a block of y
 * in registers while KB rows of W pass, and prefetch W into L2 (hlx_gemm_pf_at). Up to 4
 * rows the loop waits on W: KB 8. From 5 rows y through memory every 8 rows of W costs
 * more than the FMAs can hide: KB 64 (measured in docs/kernels.md, "Projections"). */
#define HLX_GEMM_KB_FEW  8
#define HLX_GEMM_KB_MANY 64
#define HLX_GEMM_PF_COLS 128

static inline int hlx_gemm_kb(int MR) { return MR <= 4 ? HLX_GEMM_KB_FEW : HLX_GEMM_KB_MANY; }

/* _fn(MR, ...) with MR the constant 1..8 that equals M (8 for more): the row kernels take
 * MR as a constant so that their loops over the rows unroll into registers. */
#define HLX_GEMM_ROWS_1_3(_fn, ...)                     \
        case 1: _fn(1, __VA_ARGS__); break;             \
        case 2: _fn(2, __VA_ARGS__); break;             \
        case 3: _fn(3, __VA_ARGS__); break;
#define HLX_GEMM_BY_ROWS(_M, _fn, ...)                  \
    do {                                                \
        switch (_M) {                                   \
        HLX_GEMM_ROWS_1_3(_fn, __VA_ARGS__)             \
        case 4: _fn(4, __VA_ARGS__); break;             \
        case 5: _fn(5, __VA_ARGS__); break;             \
        case 6: _fn(6, __VA_ARGS__); break;             \
        case 7: _fn(7, __VA_ARGS__); break;             \
        default: _fn(8, __VA_ARGS__); break;            \
        }                                               \
    } while (0)
/* The same for kernels of at most 4 rows (4 for more). */
#define HLX_GEMM_BY_ROWS4(_M, _fn, ...)                 \
    do {                                                \
        switch (_M) {                                   \
        HLX_GEMM_ROWS_1_3(_fn, __VA_ARGS__)             \
        default: _fn(4, __VA_ARGS__); break;            \
        }                                               \
    } while (0)

/* x[m][k0 + ki] for MR rows and kb terms into xt[ki][8]: every broadcast from one base. */
static inline void hlx_gemm_pack_x(int MR, int K, const float *x, int k0, int kb, float *xt)
{
    int ki, m;

    for (ki = 0; ki < kb; ki++)
        for (m = 0; m < MR; m++)
            xt[ki * 8 + m] = x[(size_t)m * K + k0 + ki];
}

/* Where the row kernels prefetch W while they read the block of columns at n of [n0, n1):
 * for row k, the element (k + *dk) x N + *pn when k + *dk < K; 0 when there is none for
 * this block. ahead (avx512 at every row count, avx2 from 5 rows): the column
 * HLX_GEMM_PF_COLS on in the order the passes read the range (past n1, the start of the
 * range a block of KB rows on). Otherwise (avx2 up to 4 rows): the same columns of the
 * next block of HLX_GEMM_KB_FEW rows, a whole pass over the range ahead. On the Zen 5
 * kind, one row of x: the avx512 kernel read bf16 W from DRAM at 22-28 GB/s the second
 * way against 29-33 the first (8192 x 8192, 16384 x 3072), and an lm-head of 128K columns
 * (the next block 2 MiB ahead, past the L2) took 33-43 ms a step against 20-22; the avx2
 * kernel went the other way (3072 x 8192: 26-30 GB/s the second way, 14 the first). Once
 * per block, outside the loop over k. */
static inline __attribute__((always_inline)) int
hlx_gemm_pf_at(int MR, int ahead, int n0, int n1, int n, int *pn, int *dk)
{
    if (MR <= 4 && !ahead) {
        *pn = n;
        *dk = HLX_GEMM_KB_FEW;
        return 1;
    }
    *pn = n + HLX_GEMM_PF_COLS;
    *dk = 0;
    if (*pn >= n1) {
        *pn = n0 + (*pn - n1);
        *dk = hlx_gemm_kb(MR);
    }
    return *pn < n1;
}

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
