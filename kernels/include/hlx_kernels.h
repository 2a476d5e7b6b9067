/* Compute kernels behind one "DSP context" of function pointers (dav1d style): C reference
 * kernels fill it, vectorized variants override entries, chosen once at init. The
 * reference stays the oracle for every variant (see tests/kernels and helix bench). */
#ifndef HLX_KERNELS_H
#define HLX_KERNELS_H

#include <helix/status.h>
#include <helix/types.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* Gemma 2's soft-capping of one attention score or logit: cap tanh(x / cap); x itself when
 * cap <= 0 (the vector kernels' own form: hlx_v_softcap). */
static inline float hlx_softcapf(float x, float cap)
{
    return cap > 0.0f ? cap * tanhf(x / cap) : x;
}

/* RoPE of one model (helix/model.h: hlx_model_rope_freqs fills it, scaling included):
 * inv_freq[i] radians per position for pair i < rot_dim / 2, in the memory the op runs
 * on (a backend's), and the factor on cos and sin (yarn; 1 otherwise). Optionally, for
 * the CPU kernels, cs: cos and sin of every pair at position cs_pos, interleaved, each
 * (float)(cos or sin((double)cs_pos x inv_freq[i]) x mscale) exactly as the op computes
 * them (hlx_rope_fill_cs), so that a decode step computes them once instead of once per
 * head, row and layer; the op uses them only at pos == cs_pos. */
typedef struct hlx_rope_tab {
    const double *inv_freq;
    float         mscale;
    const float  *cs;      /* NULL: computed at each call */
    int64_t       cs_pos;
} hlx_rope_tab_t;

/* cs[2i], cs[2i + 1] = cos, sin of pair i < rot_dim / 2 at pos (see hlx_rope_tab_t). */
void hlx_rope_fill_cs(const double *inv_freq, float mscale, int rot_dim, int64_t pos,
                      float *cs);

/* Plain RoPE's inverse frequencies theta^(-2i / rot_dim), i < rot_dim / 2 (tests). */
void hlx_rope_plain_freqs(double theta, int rot_dim, double *inv_freq);

/* Layout of one KV shard, one (request, KV head) with cap token slots of d elements, in
 * kv_dtype elements, for K and for V each:
 * - block <= 1: rows [cap][d];
 * - block B > 1, chunk C: [ceil(cap/B)][d/C][B][C]: blocks of B tokens, inside a block the
 *   elements in runs of C per token. C <= 1 puts the token index innermost ([d][B]: the
 *   keys, whose B scores then accumulate in one vector with no horizontal sums); C > 1
 *   keeps C consecutive elements of a token together ([d/C][B][C]: the values, so that a
 *   P.V pass over C columns reads one contiguous run of B x C elements, which the
 *   hardware prefetchers follow, instead of B rows' pieces a row apart). A C that does not
 *   divide d means C = d (rows inside the block, which is rows overall).
 * The variant chosen at init sets both (hlx_kernels_t.kv_layout); the runtime allocates,
 * fills, appends and reads back KV only through hlx_kv_elems, hlx_kv_index and
 * hlx_kv_run. */
typedef struct hlx_kv_layout {
    int k_block, v_block; /* tokens per block; <= 1: rows */
    int k_chunk, v_chunk; /* elements of a token kept together inside a block; <= 1: one */
} hlx_kv_layout_t;

/* Elements of a shard of cap slots (cap rounded up to whole blocks). */
static inline size_t hlx_kv_elems(int block, int d, size_t cap)
{
    size_t b = block > 1 ? (size_t)block : 1;
    return (cap + b - 1) / b * b * (size_t)d;
}

/* Elements of a token that lie consecutively in the shard (a run; d elements for rows): a
 * token's elements [r c, r c + c) are one run, at hlx_kv_index(.., t, r c) onwards. */
static inline int hlx_kv_run(int block, int chunk, int d)
{
    return block <= 1 ? d : chunk <= 1 ? 1 : d % chunk ? d : chunk;
}

/* Elements from the start of one run of a token to the start of its next run (runs of
 * hlx_kv_run elements): element e of token t is at hlx_kv_index(.., t, 0) + e / run x gap +
 * e % run. */
static inline size_t hlx_kv_run_gap(int block, int chunk, int d)
{
    return (size_t)(block > 1 ? block : 1) * (size_t)hlx_kv_run(block, chunk, d);
}

/* Index of element e < d of token t in a shard whose token rows are `stride` elements
 * apart (>= d; a block of B tokens is B x stride elements). */
static inline size_t hlx_kv_at(int block, int chunk, size_t stride, int d, size_t t, int e)
{
    size_t b = (size_t)block, c = (size_t)hlx_kv_run(block, chunk, d);

    if (block <= 1)
        return t * stride + (size_t)e;
    return t / b * b * stride + (size_t)e / c * b * c + t % b * c + (size_t)e % c;
}

/* Index of element e of token t inside a shard of rows of d elements. */
static inline size_t hlx_kv_index(int block, int chunk, int d, size_t t, int e)
{
    return hlx_kv_at(block, chunk, (size_t)d, d, t, e);
}

/* Decode attention of one (request, KV head) over one KV shard.
 * q:   [group][dk] fp32, the query heads that share this KV head (GQA group; MLA: 128)
 * k:   [len][dk] in kv_dtype, row stride k_stride elements (>= dk), in the variant's
 *      kv_layout (token t, element e at hlx_kv_at(k_block, k_chunk, k_stride, dk, t, e))
 * v:   [len][dv] in kv_dtype, row stride v_stride elements (>= dv), likewise; v == k
 *      (MLA absorbed: dv <= dk, the value the first dv elements of the key row) is read
 *      in the key layout
 * out: o[group][dv] = softmax(s) v over the shard (0 when len == 0)
 *      lse[group]   = natural log of sum_j exp(s_j) (-INFINITY when len == 0)
 * where s_j = scale * q.k_j, or softcap x tanh(scale * q.k_j / softcap) when softcap > 0
 * (Gemma 2's attention logit soft-capping) */
typedef struct hlx_attn_desc {
    int          group;
    int          dk, dv;
    size_t       len;
    hlx_dtype_t  kv_dtype;
    const float *q;
    const void  *k;
    const void  *v;
    size_t       k_stride, v_stride;
    float        scale;
    float        softcap; /* 0: none */
    float       *o;
    float       *lse;
    /* fp8 KV: 1 when the caller knows that no byte of k and v in tokens [0, len) is a NaN
     * (0x7f, 0xff; the runtime records the NaNs its appends store, per shard), so the
     * vector paths widen without looking; 0 (unknown): they scan each block first. A
     * caller that sets it over a NaN byte gets a finite wrong result where NaN was due. */
    int          kv_clean;
} hlx_attn_desc_t;

/* Projection weights in strips of 16 columns: W[K][N] stored as [ceil(N/16)][K][16], the
 * last strip's columns past N zero. A strip is one sequential stream of K x 16 elements, so
 * a few rows of x read W at the memory's speed by walking several strips at once where
 * row-major W made one stream per row of W (docs/kernels.md, "Weights in strips"). The
 * gemm entries take such W when w_dtype carries HLX_W_S16 (f32 or bf16 elements); column
 * ranges (gemm_cols) then start on a multiple of 16, as hlx_pool_gemm cuts them. */
#define HLX_W_S16 16
#define HLX_W_Q   32 /* an hlx_wq_t matrix (below) */
static inline int hlx_w_s16(hlx_dtype_t t) { return ((int)t & HLX_W_S16) != 0; }
static inline hlx_dtype_t hlx_w_elem(hlx_dtype_t t)
{
    return (hlx_dtype_t)((int)t & ~(HLX_W_S16 | HLX_W_Q));
}
/* w_dtype | HLX_W_S16 */
static inline hlx_dtype_t hlx_w_s16_of(hlx_dtype_t t) { return (hlx_dtype_t)((int)t | HLX_W_S16); }
/* Index of element (k, n) of W[K][N] in strips. */
static inline size_t hlx_w_s16_at(int K, int k, int n)
{
    return ((size_t)(n / 16) * (size_t)K + (size_t)k) * 16 + (size_t)(n % 16);
}

/* Bytes of W[K][N] of t (f32 or bf16) in strips; 0 when that overflows, t is another, or
 * the matrix is empty. */
size_t hlx_kernels_w_s16_bytes(hlx_dtype_t t, int K, int N);
/* Row-major src[K][N] of t into strips at dst (hlx_kernels_w_s16_bytes of them). */
void hlx_kernels_w_s16_pack(hlx_dtype_t t, int K, int N, const void *src, void *dst);
/* Columns [n0, n1) of W[K][N] into its strips at dst from row-major src[K][ld] (src's column
 * 0 is W's column n0): n0 a multiple of 16, n1 one too or N (the last strip then padded
 * with zeros). Anything else writes nothing. A matrix can thus be packed in groups of columns as they
 * are read, without a row-major copy of it. */
void hlx_kernels_w_s16_pack_cols(hlx_dtype_t t, int K, int N, int n0, int n1, const void *src,
                                 size_t ld, void *dst);

/* Integer-packed weights kept packed (docs/kernels.md "Packed integer weights"): a matrix
 * W[K][N] that begins with this header and whose gemm dequantizes a few KiB of strips at a
 * time into bf16 scratch and runs the variant's own strip GEMM on them, so that it sums
 * exactly what the same matrix dequantized at load (to bf16, in strips) would. The gemm
 * entries take it when w_dtype carries HLX_W_Q (with HLX_W_S16 and its element type);
 * bits 0 holds a matrix that is not packed (plain strips of elem after the header), so
 * that every projection of a model can be of this one type. Element (k, n) of a packed
 * matrix is bf16((q - z) x s), q the (k, n) code (unsigned, bits wide), z and s the zero
 * and scale of column n in group (k + kofs) / group; (q - z) x s is exact in f32 for the
 * F16 and BF16 scales checkpoints hold, and rounds to bf16 as the load-time conversion
 * does. Layout after the header (each part 64-byte aligned), per strip of 16 columns:
 * codes, 4 bits: [ceil(K / 2)][16] bytes, row 2i in the low nibble and 2i + 1 in the high
 * one; 8 bits: [K][16] bytes; scales and zeros: [G][16] f32 each. Columns past N are 0.
 * In act order (GPTQ's desc_act: groups that are not runs of rows) row k's group is
 * gidx[k] instead, an int32 table of K entries after the zeros, group and kofs 0; the rows
 * stay in their order, so the sums are still those of the matrix dequantized at load.
 * A 4-bit nibble n stands for the code lut[n] (0 .. 255): n itself (GPTQ, AWQ), or a code
 * of another width a table gives (MXFP4's E2M1 values as 12 + 2 e: hlx_kernels_wq_set_lut),
 * so q above is lut[n]; `mapped` says that lut is not the identity. */
#define HLX_WQ_MAGIC 0x31515748u /* "HWQ1" */
typedef struct hlx_wq {
    uint32_t magic;
    int32_t  bits;   /* 0 (plain), 4 or 8 */
    int32_t  elem;   /* hlx_dtype_t of the elements: BF16 (packed), F32 or BF16 (plain) */
    int32_t  K, N;
    int32_t  group;  /* rows per group (packed) */
    int32_t  kofs;   /* row k's group is (k + kofs) / group, 0 <= kofs < group */
    int32_t  G;      /* groups: (K - 1 + kofs) / group + 1 (0 when K is 0) */
    int32_t  tiny;   /* a scale below 2^-100 (a product might be subnormal): no rounding
                        instruction that flushes subnormals may be used on this matrix */
    int32_t  mapped; /* 4 bits: lut is not the identity (the vector paths look it up) */
    int32_t  inexact;/* a scale that is not 0 or +-2^j (-133 <= j <= 119), or a zero point
                        outside 0 .. 255: some product (q - z) x s may not be a bf16 value.
                        0: every one is (MXFP4's), so its rounding to bf16 may be skipped.
                        Kept by hlx_kernels_wq_pack_cols: whatever writes scales or zero
                        points otherwise must set it */
    int32_t  packed; /* pack_cols has written codes (hlx_kernels_wq_set_lut refuses then) */
    uint8_t  lut[16];/* 4 bits: nibble n's code (hlx_kernels_wq_set_lut; init: n) */
    uint64_t codes;  /* byte offsets from the header: the strips (plain) or the codes */
    uint64_t scales, zeros;
    uint64_t gidx;   /* act order: the rows' groups (int32 [K]); 0 in order */
    uint64_t bytes;  /* the whole matrix, header included */
} hlx_wq_t;
static inline int hlx_w_q(hlx_dtype_t t) { return ((int)t & HLX_W_Q) != 0; }

/* Bytes of a K x N matrix of that kind (bits 0: plain elem strips; 4 or 8: packed, elem
 * BF16, groups of `group` rows from kofs), header included; 0 when the arguments are
 * outside the format or the size overflows. */
size_t hlx_kernels_wq_bytes(int bits, hlx_dtype_t elem, int K, int N, int group, int kofs);
/* Writes the header of such a matrix at w (hlx_kernels_wq_bytes of them) and zeroes the
 * rest (the padding columns); HLX_ERR_INVALID where hlx_kernels_wq_bytes gives 0. */
hlx_status_t hlx_kernels_wq_init(void *w, int bits, hlx_dtype_t elem, int K, int N, int group,
                                 int kofs);
/* The same for a packed matrix in act order: G groups, row k's gidx[k] (each in [0, G)). */
size_t hlx_kernels_wq_bytes_ao(int bits, int K, int N, int G);
hlx_status_t hlx_kernels_wq_init_ao(void *w, int bits, int K, int N, int G, const int32_t *gidx);
/* A 4-bit matrix whose nibbles stand for the codes lut[0 .. 15] (each 0 .. 255), set
 * after its init and before its packing (which then takes those codes and stores each as
 * the first nibble that stands for it); HLX_ERR_INVALID for another width, or once codes
 * are packed (they would change meaning). */
hlx_status_t hlx_kernels_wq_set_lut(void *w, const uint8_t lut[16]);
/* MXFP4's table: nibble n (E2M1: sign bit 3, magnitude 0, 0.5, 1, 1.5, 2, 3, 4, 6) as the
 * code 12 + 2 e, for a zero point of 12 (the codes the checkpoint reader gives MXFP4). */
extern const uint8_t hlx_kernels_wq_lut_e2m1[16];
/* Columns [n0, n1) of a packed matrix (n0 a multiple of 16, n1 one too or N) from
 * row-major code[K][ld] (the codes as floats, 0 .. 2^bits - 1, or at 4 bits with a table
 * the values it holds), scale[G][ld] and
 * zero[G][ld] (column 0 of each is column n0); HLX_ERR_INVALID for a code out of range, a
 * scale that is not finite, a zero point that is not a finite integer, or a range outside
 * the matrix. */
hlx_status_t hlx_kernels_wq_pack_cols(void *w, int n0, int n1, const float *code,
                                      const float *scale, const float *zero, size_t ld);
/* Columns [n0, n1) of a plain one from row-major src[K][ld] of its elem (as
 * hlx_kernels_w_s16_pack_cols). */
hlx_status_t hlx_kernels_wq_plain_cols(void *w, int n0, int n1, const void *src, size_t ld);
/* Element (k, n) as f32 (the checker's and the tests' reads). */
float hlx_kernels_wq_at(const void *w, int k, int n);

typedef struct hlx_kernels {
    const char *name; /* "scalar", "avx2", "avx512", "amx" */

    /* 1: the gemm entries read weights in strips (HLX_W_S16) at least as fast as row-major
     * ones, so the runtime stores its projections that way; 0: they read them correctly
     * but slowly (the reference loop). */
    int w_s16;

    /* Rows of x (M) up to which the gemm entries run weights in strips as passes of their
     * 8-row kernel over W, reading W once per pass ([0] f32, [1] bf16 weights; 0: no
     * passes). The planner's timing of a GEMM follows it (bench local records it in the hw
     * file). */
    int gemm_pass_rows[2];

    /* KV shard layout the attention entry below reads: avx512 keys and values in blocks of
     * 32 tokens, keys token-innermost, values in runs of 32 elements ({32, 32, 1, 32});
     * avx2 keys in blocks of 16, value rows ({16, 1, 1, 1}); scalar and amx rows
     * ({1, 1, 1, 1}). When v == k (MLA's absorbed form, the value the head of the key row)
     * values are read in the key layout. */
    hlx_kv_layout_t kv_layout;

    /* Flash-decoding partial for one (request, KV head): see hlx_attn_desc_t. */
    void (*attn)(const hlx_attn_desc_t *d);

    /* 1 when attn runs d's shape and KV type on the variant's own vector path, 0 when it
     * falls back to the reference loop over the variant's layout (exact, but tens of times
     * slower: head sizes off the vector width, say); NULL: the reference is the variant's
     * path. Reads only the shape fields (group, dk, dv, kv_dtype, k == v). */
    int (*attn_covers)(const hlx_attn_desc_t *d);

    /* Exact merge of nparts partials per head:
     * o_parts[p][nheads][dv], lse_parts[p][nheads] -> o[nheads][dv], lse[nheads].
     * An empty part has lse = -INFINITY and weight 0; all parts empty -> o = 0, lse = -inf. */
    void (*merge)(int nparts, int nheads, int dv, const float *o_parts,
                  const float *lse_parts, float *o, float *lse);

    /* y[i] = x[i] / sqrt(mean(x^2) + eps) * w[i], i < n */
    void (*rmsnorm)(float *y, const float *x, const float *w, int n, float eps);

    /* Rotary embedding in place on nheads heads of size hd (pairs (2i, 2i+1) of the first
     * rot_dim elements), position pos: pair i turns by pos * r->inv_freq[i] (in double),
     * cos and sin multiplied by r->mscale. */
    void (*rope)(float *x, int nheads, int hd, int rot_dim, int64_t pos,
                 const hlx_rope_tab_t *r);

    /* y[i] = silu(gate[i]) * up[i] */
    void (*swiglu)(float *y, const float *gate, const float *up, int n);
    /* y[i] = gelu_tanh(gate[i]) * up[i], gelu_tanh(x) = x/2 (1 + tanh(sqrt(2/pi) (x +
     * 0.044715 x^3))); the scalar one in every variant (a small share of a step) */
    void (*geglu)(float *y, const float *gate, const float *up, int n);

    /* Greedy decoding's argmax: the index of the first largest of x[0..n), as the loop
     * "if (x[i] > best) best = x[i]" from best = -inf finds it (NaN never wins, -0.0 and
     * +0.0 tie), -1 when no element is above -inf (n 0, all -inf or NaN); *max gets that
     * element (-inf for -1). Every variant gives the same index. */
    int (*argmax)(const float *x, int n, float *max);

    /* y[M][N] (+)= x[M][K] * W[K][N]; W row-major in w_dtype (f32 or bf16), or in strips
     * (w_dtype | HLX_W_S16); accumulate = 0 overwrites y. */
    void (*gemm)(int M, int N, int K, const float *x, const void *w, hlx_dtype_t w_dtype,
                 float *y, int accumulate);

    /* The same for output columns [n0, n1) only (W and y keep their row stride N): each
     * thread of a pool takes a range (hlx_pool_gemm). Columns outside are not touched. */
    void (*gemm_cols)(int M, int N, int K, const float *x, const void *w, hlx_dtype_t w_dtype,
                      float *y, int accumulate, int n0, int n1);

    /* Rows [k0, k0 + kc) of strips [s0, s1) of a packed matrix (hlx_wq_t, bits 4 or 8)
     * dequantized to bf16 into dst[s - s0][kc][16]; every variant writes the same bits (the
     * gemm above then runs on them). */
    void (*wq_dequant)(const hlx_wq_t *w, int k0, int kc, int s0, int s1, uint16_t *dst);
    /* Optional (NULL: through wq_dequant's scratch): y (+)= x W over columns [n0, n1) (n0
     * on a strip) of a packed W for 1 to wq_rows rows of x and K > 0, the weights
     * dequantized in registers; the same bits as the gemm over the dequantized strips. */
    void (*wq_gemm)(int M, int N, int K, const float *x, const hlx_wq_t *w, float *y,
                    int accumulate, int n0, int n1);
    /* The most rows wq_gemm takes (more go through the scratch): where widening the codes
     * again for each pass of rows still beats dequantizing a chunk once; wq_rows_exact the
     * same for a matrix whose products need no rounding (hlx_wq_t.inexact 0), cheaper to
     * widen again. */
    int wq_rows, wq_rows_exact;
    /* 1: wq_gemm reads packed weights from DRAM at least as fast as gemm reads the bf16
     * strips at decode's row counts (avx512, amx), so HELIX_W_PACKED=auto keeps them packed;
     * 0: slower (avx2's in-register path: 2x the strips' time at one row on a Zen 3 core),
     * or no wq_gemm. */
    int wq_fast;
} hlx_kernels_t;

/* y (+)= x W over columns [n0, n1) for any w_dtype the gemm entries take, HLX_W_Q
 * included (hlx_wq_t: its strips run through k->gemm_cols, a packed one dequantized a
 * chunk at a time by k->wq_dequant). What hlx_pool_gemm and a backend call. */
void hlx_kernels_gemm_cols(const hlx_kernels_t *k, int M, int N, int K, const float *x,
                           const void *w, hlx_dtype_t w_dtype, float *y, int accumulate, int n0,
                           int n1);

/* attn_covers for a shape: group query heads per KV head, head sizes dk x dv, KV type t,
 * v_is_k for MLA's absorbed form (values read from the keys), softcap != 0 for soft-capped
 * scores; 1 where the variant has no attn_covers (its reference is its path). */
int hlx_kernels_attn_vector(const hlx_kernels_t *k, hlx_dtype_t t, int group, int dk, int dv,
                            int v_is_k, int softcap);

/* Fills k with the best variant this CPU supports, or the named one ("scalar", "avx2",
 * "avx512"; NULL or "auto" = best). HELIX_KERNELS overrides NULL. Unknown or unsupported
 * name: HLX_ERR_UNSUPPORTED. */
hlx_status_t hlx_kernels_init(const char *name, hlx_kernels_t *k);

/* The kernels' settings (HELIX_KERNELS: the variant when no name is given;
 * HELIX_KV_PREFETCH; HELIX_FP8_LOOKUP), for helix info and the environment check. */
extern const struct hlx_param_table hlx_kernels_param_table;
/* HELIX_KERNELS read through that table: NULL when it is not set (or "auto"), else its value
 * copied into buf. */
const char *hlx_kernels_env_variant(char *buf, size_t n);
/* HELIX_KV_PREFETCH from the same table, how the avx512 and avx2 attentions bring in their
 * KV: HARDWARE, left to the hardware prefetchers (avx512 bf16 and fp8; otherwise taken as
 * SOFTWARE); SOFTWARE, the next blocks prefetched into L1 as the kernel goes; SOFTWARE_L2,
 * that and the KV 256 tokens ahead into L2; AUTO (the default), the modes the call can
 * take timed on every shard of 16K tokens or more and the fastest kept. Read when a
 * variant's table is filled (a bad value: reported, the default). */
#define HLX_KV_PREFETCH_HARDWARE    0
#define HLX_KV_PREFETCH_SOFTWARE    1
#define HLX_KV_PREFETCH_AUTO        2
#define HLX_KV_PREFETCH_SOFTWARE_L2 3
int hlx_kernels_kv_prefetch(void);
/* Under auto, the mode the last such shard chose (HLX_KV_PREFETCH_HARDWARE, _SOFTWARE or
 * _SOFTWARE_L2), -1 none yet (shorter shards run that mode; hardware before any). */
int hlx_kernels_kv_prefetch_pick(void);
/* A mode's name as HELIX_KV_PREFETCH spells it ("software-l2") in buf (a value that names
 * none: its number); returns buf. */
const char *hlx_kernels_kv_prefetch_name(int mode, char *buf, size_t len);
/* HELIX_FP8_LOOKUP: 1 (the default) when the avx512 attention may widen fp8 KV by
 * AVX512_VBMI byte lookups, 0 when it takes the fp16 widening of CPUs without them. */
int hlx_kernels_fp8_lookup(void);
/* HELIX_W_PACKED: 1 (on) where the runtime keeps integer-packed checkpoint weights packed
 * (hlx_wq_t), 0 (off) where it dequantizes them at load, 2 (auto, the default): as
 * hlx_kernels_w_packed_for decides. */
int hlx_kernels_w_packed(void);
/* Whether weights are kept packed for variant k: HELIX_W_PACKED on or off, or (auto) where
 * k's packed GEMM is as fast as its bf16 strips (k->wq_fast: avx512, amx); avx2's
 * in-register path and scalar's scratch are slower (docs/kernels.md "Packed integer
 * weights"). */
int hlx_kernels_w_packed_for(const hlx_kernels_t *k);
/* How the named variant's attention widens fp8 KV: "lookup" (avx512 where the CPU has
 * AVX512_VBMI and HELIX_FP8_LOOKUP is 1: byte tables), "fp16" (avx512 otherwise: blocks
 * without NaN bytes through fp16, the others exactly by arithmetic), "fp32-bits" (avx2:
 * blocks without NaN bytes as fp32 bit patterns with q scaled by 2^120 where every |q| <
 * 256, through fp16 past that, the others exactly by arithmetic), "exact" (the others,
 * amx's row kernel included: arithmetic on every element). */
const char *hlx_kernels_fp8_widening(const char *variant);

/* The same for a KV cache of kv_dtype: auto takes the best variant for that type (where
 * AMX tiles exist, "amx" for bf16 KV; "avx512", whose keys are blocked, for f32 and fp8,
 * which the tile variant would run on its row kernel). hlx_kernels_init = bf16. */
hlx_status_t hlx_kernels_init_kv(const char *name, hlx_dtype_t kv_dtype, hlx_kernels_t *k);

/* A rank's attention as auto's choice sees it (0 in a field: not known). */
typedef struct hlx_kernels_shape {
    int head_dim; /* key elements per head (MLA: the latent row) */
    int group;    /* query heads per KV head (MLA: the query heads) */
    int softcap;  /* nonzero: the scores are soft-capped */
    int threads;  /* cores the rank runs on (0 counts as 1) */
} hlx_kernels_shape_t;

/* What the runtime calls: hlx_kernels_init_kv for a rank whose attention has shape s (NULL:
 * none known). A name (or HELIX_KERNELS) binds whatever the shape; auto takes "avx512"
 * instead of "amx" for bf16 KV
 *  - when the group is below HLX_KERNELS_AMX_MIN_GROUP: a tile product's 16 columns hold
 *    the group's query heads, so it does at most 3/16 of its work there (Intel Xeon VM,
 *    head 128, 1M tokens: group 1 amx 0.55-0.57 of the roofline against avx512's
 *    0.72-0.81, group 3 0.71-0.76 against 0.86-0.87);
 *  - when threads > 1 and head_dim < HLX_KERNELS_AMX_MIN_HEAD (the tile path does one tile
 *    product per 16 tokens there and scaled worse over the rank's cores);
 *  - when the scores are soft-capped (the tiles do not cap; their row kernel would run the
 *    reference loop).
 * why (may be NULL) gets one line: the variant and the reason. */
#define HLX_KERNELS_AMX_MIN_HEAD  64
#define HLX_KERNELS_AMX_MIN_GROUP 4
hlx_status_t hlx_kernels_init_shape(const char *name, hlx_dtype_t kv_dtype,
                                    const hlx_kernels_shape_t *s, hlx_kernels_t *k, char *why,
                                    size_t whylen);

/* Why init failed for this name (NULL / "auto" / a variant), in one line naming where the
 * bad value came from: "--kernels foo: ..." or "HELIX_KERNELS=foo: ...", with the variants
 * this CPU runs. */
void hlx_kernels_init_error(const char *name, char *buf, size_t n);

/* The dispatch decision in text: the CPU features found, each variant usable or not with
 * what it needs, and the one selected and why. Returns the length written (< n). */
size_t hlx_kernels_explain(char *buf, size_t n);

/* The C reference (always available). */
void hlx_kernels_reference(hlx_kernels_t *k);

/* Names of variants compiled in and supported by this CPU, best last. */
size_t hlx_kernels_list(const char **names, size_t max);

/* ---- Several cores per rank ----
 * A persistent pool of T threads: created once (T - 1 new threads; the caller is thread 0),
 * each pinned to cores[t] when cores is given (cores[0] pins the calling thread), never
 * created per call. Calls on the pool come from one thread at a time (the rank's thread).
 * Workers spin briefly between calls, then sleep; calls have no deadline (pure compute). */
typedef struct hlx_pool hlx_pool_t;

#define HLX_POOL_MAX 256

/* nthreads in 1..HLX_POOL_MAX; cores: NULL or nthreads CPU numbers. HLX_ERR_INVALID for a
 * bad count or core (also when the OS refuses the pinning), HLX_ERR_NOMEM. */
hlx_status_t hlx_pool_create(int nthreads, const int *cores, hlx_pool_t **pool);
void hlx_pool_destroy(hlx_pool_t *pool);
int  hlx_pool_size(const hlx_pool_t *pool); /* NULL pool: 1 */

/* fn(arg, t, T) on every thread t < T (t = 0 on the caller); returns when all returned.
 * (hlx_pool_attn and hlx_pool_gemm instead cut their work into a few chunks per thread that
 * any thread may claim, so a worker that starts late does not hold up the call.) */
void hlx_pool_run(hlx_pool_t *pool, void (*fn)(void *arg, int t, int nt), void *arg);

/* Attention of one (request, KV head) over the pool: the shard is cut into up to 4 x T
 * contiguous token ranges of whole 32-token blocks (the cut depends only on len and T),
 * each claimed by a thread that computes its partial (o_i, lse_i) with k->attn, then the
 * caller merges them with k->merge (the exact LSE merge). d as for k->attn (KV in k's
 * layout). work: hlx_pool_attn_work_floats() floats, any alignment (the partials are laid
 * out on pages of their own inside it). T = 1 or a shard of at most one
 * block: k->attn(d) itself. The result differs from one thread's only by the rounding of
 * the split and the merge (fp32, a few ulp of o; --check's tolerance is far above it). */
size_t hlx_pool_attn_work_floats(const hlx_pool_t *pool, const hlx_attn_desc_t *d);
void   hlx_pool_attn(hlx_pool_t *pool, const hlx_kernels_t *k, const hlx_attn_desc_t *d,
                     float *work);

/* k->gemm over the pool: output columns cut into up to 4 x T ranges of whole 16-column
 * groups, each claimed by a thread that runs k->gemm_cols on it. Each column is computed as by one thread, so the
 * results are identical for any T with the hand-written kernels (bf16 weights; f32 up to 8
 * rows); OpenBLAS sgemm (f32, 9 rows and more) may round differently per range.
 * N < 32 or T = 1: k->gemm. */
void hlx_pool_gemm(hlx_pool_t *pool, const hlx_kernels_t *k, int M, int N, int K,
                   const float *x, const void *w, hlx_dtype_t w_dtype, float *y,
                   int accumulate);

/* Memory for a KV cache or weights: 2 MiB aligned and advised into transparent huge pages
 * where the kernel allows (a 1M-token bf16 shard is 128K pages of 4 KiB otherwise), plain
 * aligned memory elsewhere. NULL when out of memory. Release with hlx_kernels_free_huge. */
void *hlx_kernels_alloc_huge(size_t bytes);
void hlx_kernels_free_huge(void *p);

/* This machine's limits for one core, measured now (benchmarks report against them):
 * fp32 FMA peak with the widest supported vectors (GFLOP/s, best of runs over about
 * min_seconds), and a STREAM-like single-thread read of a bytes-sized buffer (GB/s, best
 * of passes). Run them pinned to one core. */
hlx_status_t hlx_kernels_probe_fma_peak(double min_seconds, double *gflops_p);
/* The FMA peak with the vectors of one variant ("scalar", "avx2"; NULL or a wider one: the
 * widest): the peak of a core whose widest ISA is the variant's, at this clock, which is
 * what a narrower variant's roofline means on a wider machine. *isa_p (when not NULL) gets
 * the ISA measured: "scalar", "avx2" or "avx512". */
hlx_status_t hlx_kernels_probe_fma_peak_for(const char *variant, double min_seconds,
                                            double *gflops_p, const char **isa_p);
hlx_status_t hlx_kernels_probe_read_bw(size_t bytes, double min_seconds, double *gbps_p);
/* The two at once: a read of a bytes-sized buffer (huge pages, every page touched first)
 * that issues, on every 64-byte line as it arrives, the FMAs of flops_per_byte with the
 * variant's vectors (as hlx_kernels_probe_fma_peak_for picks them), on independent
 * accumulators: how fast this core streams those bytes while computing that much, with
 * nothing else to do (no widening, no softmax). Read as one stream and as two (the halves
 * in 8 KiB pieces, as an attention call reads keys and values), in turns. *gbps_p: the
 * best pass (at least three of each shape, then until min_seconds, at most 20); *fpb_p
 * (when not NULL): the flops per byte issued, flops_per_byte rounded to whole FMAs a line
 * (hlx_kernels_stream_fma_k). HLX_ERR_INVALID for fewer than 128 bytes or an intensity
 * that is not a positive number of at most 2^20 FMAs a line; HLX_ERR_NOMEM without the
 * buffer. */
hlx_status_t hlx_kernels_probe_stream_fma_for(const char *variant, size_t bytes,
                                              double flops_per_byte, double min_seconds,
                                              double *gbps_p, double *fpb_p);
/* FMAs of `lanes` fp32 lanes per 64-byte line for flops_per_byte, rounded to the nearest,
 * at least 1; 0 for a non-finite or non-positive intensity or more than 2^20 a line. */
int hlx_kernels_stream_fma_k(double flops_per_byte, int lanes);

#endif
