/* Execution backends of the decode step: memory, an ordered queue with events, and every
 * per-layer operation, as one ops table chosen once at init (host today; a CUDA backend
 * over kernels/cuda fits the same table). Pointers passed to an op are backend memory. */
#ifndef HLX_BACKEND_H
#define HLX_BACKEND_H

#include "hlx_kernels.h"

#include <helix/status.h>
#include <helix/types.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hlx_backend     hlx_backend_t;
typedef struct hlx_be_queue    hlx_be_queue_t; /* ordered work (a CUDA stream); host: NULL */
typedef struct hlx_be_event    hlx_be_event_t; /* a point in a queue; host: NULL */

/* The one place the runtime maps a KV element to the kernels' shard layout: elements of one
 * shard of cap slots, and the index of element e of slot t of shard `shard` (shards of one
 * layer's K or V cache are consecutive). Everything else goes through these two. */
static inline size_t hlx_kv_shard_elems(hlx_kv_layout_t lay, int is_key, int d, size_t cap)
{
    return hlx_kv_elems(is_key ? lay.k_block : lay.v_block, d, cap);
}

static inline size_t hlx_kv_slot(hlx_kv_layout_t lay, int is_key, int d, size_t cap,
                                 size_t shard, size_t t, int e)
{
    int blk = is_key ? lay.k_block : lay.v_block, chunk = is_key ? lay.k_chunk : lay.v_chunk;

    return shard * hlx_kv_elems(blk, d, cap) + hlx_kv_index(blk, chunk, d, t, e);
}

/* The new token's K and V rows of nheads local KV heads of one request, stored at slot t
 * of shards [shard0, shard0 + nheads) (shard = request * kv_local + head), in the KV
 * layout of the kernels (hlx_kv_slot). */
typedef struct hlx_kv_append_desc {
    void        *kc, *vc;
    hlx_dtype_t  kv_dtype;
    hlx_kv_layout_t layout;
    int          dk, dv;
    size_t       cap, shard0, t;
    int          nheads;
    const float *k_new, *v_new; /* [nheads][dk], [nheads][dv] */
    /* fp8 KV-cache scales: each key element is multiplied by k_mul (1 / k_scale) and each
     * value element by v_mul before it is rounded to kv_dtype; 0 stands for 1 (no scale) */
    float        k_mul, v_mul;
    /* fp8: per shard of the layer (host memory), set to 1 where a stored byte is a NaN
     * (0x7f, 0xff), or where the backend cannot tell; never cleared here. NULL: none */
    uint8_t     *nan_seen;
} hlx_kv_append_desc_t;

/* Wire layout of the Helix all-to-all (see docs/transport.md): the block for KVP peer j
 * holds, per request b, the partial outputs of peer j's pieces [cnt_j][dv] followed by
 * their LSEs [cnt_j]; requests are consecutive, so requests [b0, b1) are one contiguous
 * slice of every peer's block. A piece is a whole head (sub = 1) or one of the sub
 * consecutive parts of dv values a head is cut into when KVP exceeds a shard's heads; each
 * carries its head's LSE. */
typedef struct hlx_xchg_desc {
    int          kvp;          /* peers */
    int          dv;           /* values per piece */
    int          q_local;      /* pieces per request in opart (sender side) */
    int          sub;          /* pieces per head: lsepart holds q_local / sub per request */
    const int   *head_first;   /* [kvp]: first piece of peer j, relative to the TPA shard */
    const int   *head_count;   /* [kvp]: pieces of peer j */
    const size_t *displ;       /* [kvp]: float offset of peer j's block */
    int          b0, b1;       /* requests to pack or unpack */
} hlx_xchg_desc_t;

/* batch GEMMs y_b[M][N] (+)= x_b[M][K] W_b[K][N] (b < batch), each operand at its own
 * stride: x_b = x + b sx with rows ldx apart, W_b = w + b sw elements (w_dtype), y_b =
 * y + b sy with rows ldy apart (ldx >= K, ldy >= N). MLA's heads: one call where a loop of
 * gathers, GEMMs and scatters did the work. */
typedef struct hlx_gemm_batch_desc {
    int          batch, M, N, K;
    const float *x;
    size_t       ldx, sx;
    const void  *w;
    size_t       sw;
    hlx_dtype_t  w_dtype;
    float       *y;
    size_t       ldy, sy;
    int          accumulate;
} hlx_gemm_batch_desc_t;

typedef struct hlx_backend_ops {
    const char *name;
    /* memory: huge = a large streamed buffer (KV), 2 MiB aligned where possible */
    hlx_status_t (*mem_alloc)(hlx_backend_t *be, size_t bytes, int huge, void **p_p);
    void         (*mem_free)(hlx_backend_t *be, void *p, int huge);
    /* host memory that copy_to / copy_from move at full speed (a device backend: pinned,
     * page-locked; the host backend: plain memory), zeroed: the transport's staging */
    hlx_status_t (*pinned_alloc)(hlx_backend_t *be, size_t bytes, void **p_p);
    void         (*pinned_free)(hlx_backend_t *be, void *p);
    hlx_status_t (*copy_to)(hlx_backend_t *be, hlx_be_queue_t *q, void *dst, const void *src,
                            size_t bytes);   /* host -> backend (or backend -> backend);
                                              * the source may be reused on return,
                                              * but for pinned_alloc memory on a device,
                                              * which is read until the queue gets there */
    hlx_status_t (*copy_from)(hlx_backend_t *be, hlx_be_queue_t *q, void *dst,
                              const void *src, size_t bytes); /* backend -> host */
    /* dst[r][0..n) = src[r][0..n) for rows rows of floats, row r at dst + r * ldd and
     * src + r * lds (ldd, lds >= n; backend memory, not overlapping): the strided gathers
     * and scatters of a step (the rope parts of MLA's absorbed queries) */
    hlx_status_t (*copy_rows)(hlx_backend_t *be, hlx_be_queue_t *q, float *dst, size_t ldd,
                              const float *src, size_t lds, int rows, int n);
    /* queue and events: work on one queue runs in order */
    hlx_status_t (*queue_create)(hlx_backend_t *be, hlx_be_queue_t **q_p);
    void         (*queue_destroy)(hlx_backend_t *be, hlx_be_queue_t *q);
    hlx_status_t (*queue_sync)(hlx_backend_t *be, hlx_be_queue_t *q);
    hlx_status_t (*event_record)(hlx_backend_t *be, hlx_be_queue_t *q, hlx_be_event_t **ev_p);
    hlx_status_t (*event_sync)(hlx_backend_t *be, hlx_be_event_t *ev); /* host waits */
    /* layer operations */
    hlx_status_t (*rmsnorm)(hlx_backend_t *be, hlx_be_queue_t *q, float *y, const float *x,
                            const float *w, int rows, int n, float eps);
    /* in place, each of nheads heads of hd floats of rows rows normalized by w[hd] (row r
     * at x + r * ld, head h at + h * hd): per-head q/k norms of all rows in one call */
    hlx_status_t (*rmsnorm_heads)(hlx_backend_t *be, hlx_be_queue_t *q, float *x, int rows,
                                  size_t ld, int nheads, int hd, const float *w, float eps);
    /* An RMSNorm whose vector is split over ranks (OLMo 2's q and k norms under TPA > 1):
     * ss[r] = the sum of squares of x[r][0..n) (row r at x + r * ld), summed in double; then,
     * once the ranks' sums are added, x[r][i] *= w[i] / sqrt(ss[r] / total + eps) in place,
     * total the whole vector's length */
    hlx_status_t (*sumsq_rows)(hlx_backend_t *be, hlx_be_queue_t *q, const float *x, size_t ld,
                               int rows, int n, float *ss);
    hlx_status_t (*rmsnorm_ss)(hlx_backend_t *be, hlx_be_queue_t *q, float *x, size_t ld,
                               int rows, int n, const float *w, const float *ss, int total,
                               float eps);
    /* LayerNorm (StarCoder2): y[r][i] = (x[r][i] - mean) f w[i] + b[i] for rows rows of n
     * floats, mean and variance (biased) of the row summed in double, f = 1 / sqrt(var +
     * eps) rounded to float once (b NULL: no bias; y may be x) */
    hlx_status_t (*layernorm)(hlx_backend_t *be, hlx_be_queue_t *q, float *y, const float *x,
                              const float *w, const float *b, int rows, int n, float eps);
    hlx_status_t (*gemm)(hlx_backend_t *be, hlx_be_queue_t *q, int M, int N, int K,
                         const float *x, const void *w, hlx_dtype_t w_dtype, float *y,
                         int accumulate);
    hlx_status_t (*gemm_batched)(hlx_backend_t *be, hlx_be_queue_t *q,
                                 const hlx_gemm_batch_desc_t *d);
    /* The layout this backend's gemm reads a projection's W[K][N] of *dtype_p fastest in:
     * *dtype_p becomes the w_dtype gemm takes for it (host: dtype | HLX_W_S16, strips of 16
     * columns, where the kernels read them fast; unchanged: row-major) and *bytes_p the
     * bytes of W in it (0 for an empty W). HLX_ERR_INVALID when they exceed SIZE_MAX.
     * gemm_batched and any other reader keep row-major weights. The stub: row-major. */
    hlx_status_t (*weights_layout)(const hlx_backend_t *be, hlx_dtype_t *dtype_p, int K, int N,
                                   size_t *bytes_p);
    /* Columns [n0, n1) of W[K][N] (mem_alloc memory of weights_layout's bytes; dtype as it
     * set it) from row-major src[K][ld] in host memory, src's column 0 being W's column n0:
     * a matrix is filled in groups of columns as they are read, with no row-major copy of
     * it. n0 and n1 multiples of 16, or n1 = N. The stub: row-major rows copied. */
    hlx_status_t (*weights_store)(hlx_backend_t *be, void *w, hlx_dtype_t dtype, int K, int N,
                                  int n0, int n1, const void *src, size_t ld);
    /* Optional (NULL: weights are not readable from the host, as in device memory): column
     * n of W[K][N] as weights_store left it (dtype as weights_layout set it) widened to f32
     * into host memory dst[K]. A tied model's embedding rows are its LM head's columns: read
     * this way, the rank holds no table of its own. Not on the queue: weights are written
     * once, at start-up. */
    hlx_status_t (*weights_col)(const hlx_backend_t *be, const void *w, hlx_dtype_t dtype,
                                int K, int N, int n, float *dst);
    /* RoPE on rows rows of nheads heads each, row r at x + r * ld; r->inv_freq in this
     * backend's memory */
    hlx_status_t (*rope)(hlx_backend_t *be, hlx_be_queue_t *q, float *x, int rows, size_t ld,
                         int nheads, int hd, int rot_dim, int64_t pos, const hlx_rope_tab_t *r);
    hlx_status_t (*kv_append)(hlx_backend_t *be, hlx_be_queue_t *q,
                              const hlx_kv_append_desc_t *d);
    hlx_status_t (*attn)(hlx_backend_t *be, hlx_be_queue_t *q, const hlx_attn_desc_t *d);
    hlx_status_t (*pack)(hlx_backend_t *be, hlx_be_queue_t *q, const hlx_xchg_desc_t *d,
                         const float *opart, const float *lsepart, float *sendbuf);
    /* recvbuf (all peers' blocks for this rank, head_count[kvp_rank] pieces) into
     * oparts[kvp][B*cnt][dv], lseparts[kvp][B*cnt]; nb = B */
    hlx_status_t (*unpack)(hlx_backend_t *be, hlx_be_queue_t *q, const hlx_xchg_desc_t *d,
                           int cnt, int nb, const float *recvbuf, float *oparts,
                           float *lseparts);
    hlx_status_t (*merge)(hlx_backend_t *be, hlx_be_queue_t *q, int nparts, int nheads, int dv,
                          const float *o_parts, const float *lse_parts, float *o, float *lse);
    hlx_status_t (*add)(hlx_backend_t *be, hlx_be_queue_t *q, float *x, const float *y,
                        size_t n); /* x += y */
    hlx_status_t (*scale)(hlx_backend_t *be, hlx_be_queue_t *q, float *x, size_t n,
                          float s); /* x *= s (an attention output times its v_scale) */
    /* x[r][0..n) += b[0..n) for rows rows, row r at x + r * ld (ld >= n): a bias on every
     * row in one call */
    hlx_status_t (*add_rows)(hlx_backend_t *be, hlx_be_queue_t *q, float *x, size_t ld,
                             const float *b, int rows, int n);
    /* act[r][n] = f(gu[r][0..n)) * gu[r][n..2n) for rows rows, f the activation kind (silu:
     * SwiGLU, gelu_tanh: GeGLU); swiglu_clamp: g = min(gate, limit), act = g sigmoid(alpha g)
     * (clamp(up, -limit, limit) + 1) (alpha and limit unused by the others) */
    hlx_status_t (*glu)(hlx_backend_t *be, hlx_be_queue_t *q, float *act, const float *gu,
                        int rows, int n, hlx_act_t kind, float alpha, float limit);
    /* A plain MLP's activation (StarCoder2): x[r][i] = f(x[r][i] + b[i]) in place for rows
     * rows of n floats, row r at x + r * ld (b NULL: no bias), f silu or gelu_tanh as glu
     * computes them (HLX_ERR_INVALID for another kind) */
    hlx_status_t (*bias_act)(hlx_backend_t *be, hlx_be_queue_t *q, float *x, size_t ld,
                             const float *b, int rows, int n, hlx_act_t kind);
    /* Attention sinks: o[r][0..dv) *= 1 / (1 + exp(sinks[r % cnt] - lse[r])) for rows rows of
     * cnt heads per request: each merged head's softmax with one more term exp(sink) in its
     * denominator and no value (lse -inf, no key: o stays 0) */
    hlx_status_t (*attn_sink)(hlx_backend_t *be, hlx_be_queue_t *q, float *o, const float *lse,
                              const float *sinks, int rows, int cnt, int dv);
    /* dst[r][0..dcols) = src[r][0..scols), then fill up to dcols; cap > 0: each value
     * copied as cap x tanh(src / cap) (Gemma 2's final logit soft-capping), fill as it is */
    hlx_status_t (*pad_rows)(hlx_backend_t *be, hlx_be_queue_t *q, float *dst, int dcols,
                             const float *src, int scols, int rows, float fill, float cap);
    /* dst[r][0..n) = src[idx[r]][0..n) for rows rows: the rows routed to one MoE expert
     * gathered (idx in backend memory) */
    hlx_status_t (*gather_rows)(hlx_backend_t *be, hlx_be_queue_t *q, float *dst,
                                const float *src, const int *idx, int rows, int n);
    /* y[idx[r]][0..n) += w[r] x[r][0..n) for r in order (idx NULL: row r; idx and w in backend memory; no index twice): an
     * expert's weighted output added into its rows */
    hlx_status_t (*scatter_add)(hlx_backend_t *be, hlx_be_queue_t *q, float *y, const float *x,
                                const int *idx, const float *w, int rows, int n);
    /* tokens[b] = argmax over the all-gathered logits [n][B][pad] (rank r holds columns
     * [V r / n, V (r+1) / n)); ties go to the lowest index */
    hlx_status_t (*argmax)(hlx_backend_t *be, hlx_be_queue_t *q, const float *logits, int n,
                           int B, int vocab, int pad, int *tokens);
} hlx_backend_ops_t;

struct hlx_backend {
    const hlx_backend_ops_t *ops;  /* = &table */
    hlx_backend_ops_t        table; /* the chosen backend's ops, stubs where it has none */
    hlx_kernels_t            k;    /* CPU kernel variant (host backend) */
    hlx_pool_t              *pool; /* host backend: T > 1 cores per rank, else NULL */
    float                   *pool_work; /* the pool's attention partials */
    size_t                   pool_work_n;
    void                    *priv; /* backend state */
    char                     kernels_why[320]; /* the kernel variant and why it was chosen */
};

/* Chooses a backend by name (NULL or "host": the host backend over the kernels variant
 * `kernels`, NULL = the best for a KV cache of kv_dtype; "cuda": runtime/cuda, bound to a
 * device by hlx_backend_cuda_open before its queue). HLX_ERR_INVALID for an unknown
 * backend, HLX_ERR_UNSUPPORTED when the kernel variant does not run here or no CUDA
 * device can be used. */
hlx_status_t hlx_backend_init(const char *name, const char *kernels, hlx_dtype_t kv_dtype,
                              hlx_backend_t *be);
/* The same for a rank whose attention has the given shape (head size, group, soft-capped
 * scores, cores; NULL: not known), what the engine calls before the KV cache exists:
 * auto's kernel variant may depend on it (hlx_kernels_init_shape); be->kernels_why says
 * what was chosen and why. */
hlx_status_t hlx_backend_init_shape(const char *name, const char *kernels, hlx_dtype_t kv_dtype,
                                    const hlx_kernels_shape_t *shape, hlx_backend_t *be);
void         hlx_backend_fini(hlx_backend_t *be);
/* Runs the host backend's attention and GEMMs on `threads` cores (a persistent pool created
 * here, destroyed by hlx_backend_fini). The attention is a KV split with the exact merge:
 * results differ from one thread's only by the merge's rounding. */
hlx_status_t hlx_backend_set_threads(hlx_backend_t *be, int threads);
/* Points every NULL entry of ops at a stub returning HLX_ERR_UNSUPPORTED (memory free and
 * queue destroy: no-ops). hlx_backend_init applies it to the chosen backend's table. */
void         hlx_backend_fill_stubs(hlx_backend_ops_t *ops);
/* Names of the compiled backends. */
size_t       hlx_backend_list(const char **names, size_t max);


#endif
