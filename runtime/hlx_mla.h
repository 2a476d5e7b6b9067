/* DeepSeek-V3 multi-head latent attention (MLA) in the absorbed form for decode: its
 * weights (read by checkpoint name), the query/latent phase and the latent up-projection
 * that the engine's phases call for an MLA model (docs/mla.md). */
#ifndef HLX_MLA_H
#define HLX_MLA_H

#include <helix/model.h>
#include <helix/runtime.h>
#include <helix/status.h>

#include "hlx_kernels.h"
#include "hlx_layout.h"

#include <stddef.h>
#include <stdint.h>

/* One layer's MLA weights on one rank, runtime orientation [in][out], weight dtype. */
typedef struct hlx_mla_layer {
    void  *wqa;      /* [H][q_lora] (q_lora > 0) */
    float *qa_norm;  /* [q_lora] */
    void  *wqb;      /* [q_lora][Q*qk], or [H][Q*qk] when q_lora is 0 (q_proj) */
    void  *wkva;     /* [H][kv_lora + rope] */
    float *kva_norm; /* [kv_lora] */
    void  *wuk;      /* [Q][nope][kv_lora]: W_UK^T per head, absorbed into the query */
    void  *wuv;      /* [q_slice][kv_lora][v]: W_UV of the heads this rank owns */
} hlx_mla_layer_t;

/* Row buffers of the MLA phases: the decode step's B rows (one per request), or the
 * prefill's R = n x C rows; backend memory. */
typedef struct hlx_mla_rows {
    int    R;
    float *qa;   /* [R][q_lora] */
    float *q;    /* [R][Q*qk]: per head [nope | rope] */
    float *kvn;  /* [R][kv_lora + rope]: kv_a_proj_with_mqa's output, then in place the new
                  * cache rows [c | k_rope] */
    float *qabs; /* [R][Q][kv_lora + rope]: absorbed queries [W_UK q_nope | q_rope] */
    float *ov;   /* [R][q_slice][v]: merged heads up-projected by W_UV */
} hlx_mla_rows_t;

typedef struct hlx_mla {
    int   ql, r, nope, rope, qk, v; /* q_lora, kv_lora, nope, rope, nope + rope, v */
    int   q_cols;                   /* Q * qk */
    hlx_mla_layer_t *layers;
    hlx_mla_rows_t   step;          /* the decode step's B rows */
} hlx_mla_t;

/* Elements per KV cache row of the keys and values, and per head of the exchanged partial
 * outputs: GQA head_dim, v_head_dim, v_head_dim; MLA kv_lora + rope, 0 (the value is the
 * first kv_lora elements of the key row: one cache) and kv_lora (the latent). */
void hlx_mla_kv_dims(const hlx_model_t *m, int *kv_dk, int *kv_dv, int *xdv);

/* K x N of one layer's q_a (N 0 without q_lora_rank), q_b (or q) and kv_a, whole on every
 * rank: the one table their walk (hlx_mla_proj_walk) loads and counts them by. */
void hlx_mla_proj_shapes(const hlx_model_t *m, int64_t shape[3][2]);
/* Layer l's q_a (where the model has it), q_b (or q) and kv_a to sk (hlx_engine_wput):
 * loaded into W (hlx_mla_create), or counted (W NULL; the start-up memory check). */
struct hlx_wsink;
hlx_status_t hlx_mla_proj_walk(hlx_engine_t *eng, const struct hlx_wsink *sk, int l,
                               hlx_mla_layer_t *W);
/* Weight elements of one layer's absorbed W_UK (every head) and W_UV (the q_slice heads of
 * a rank of layout L), from kv_b_proj, held row-major even where the projections are kept
 * packed; UINT64_MAX on overflow. Both weights counts add them (hlx_engine_add_absorbed). */
uint64_t hlx_mla_absorbed_elems(const hlx_model_t *m, const hlx_layout_t *L);

/* HLX_ERR_INVALID with the sizes in err when a per-request row of the MLA step (queries of
 * all heads, absorbed queries, kv_b_proj columns) does not fit the kernels' int sizes. */
hlx_status_t hlx_mla_check_sizes(const hlx_model_t *m, int batch, char *err, size_t errlen);

/* Reads every layer's MLA weights through the engine's weight source and allocates the
 * step buffers. eng->mla is set on success; the message goes to eng->errmsg. */
hlx_status_t hlx_mla_create(hlx_engine_t *eng);
void         hlx_mla_destroy(hlx_engine_t *eng);

/* The attention-input phase of layer l: norm, latent row (kv_a, its norm, RoPE on the
 * rope part), queries (q_a, norm, q_b or q_proj; RoPE), absorption of W_UK into each
 * query head, and the staggered append of [c | k_rope]. */
hlx_status_t hlx_mla_qkv(hlx_engine_t *eng, int l);

/* Attention descriptor of request b over this rank's latent shard (len rows): every
 * query head against the one latent "head", value = the first kv_lora elements. */
void         hlx_mla_attn_desc(const hlx_engine_t *eng, int l, int b, size_t len,
                               hlx_attn_desc_t *d);

/* After the merge: the rank's heads from latent (kv_lora) to value space (v) with W_UV.
 * Returns the input of W_o ([B][q_slice * v]). */
const float *hlx_mla_up(hlx_engine_t *eng, int l, hlx_status_t *st_p);

/* ---- chunked prefill: R = B x C rows, row b * C + i holding token i of request b */

/* The prefill's buffers for R rows (the step's are made by hlx_mla_create). */
hlx_status_t hlx_mla_rows_alloc(hlx_engine_t *eng, int rows, hlx_mla_rows_t *rw);
void         hlx_mla_rows_free(hlx_engine_t *eng, hlx_mla_rows_t *rw);

/* hlx_mla_qkv over the n x c rows of x (rows k c .. k c + c - 1: request rq[k]'s tokens at
 * positions pos0 .. pos0 + c - 1): norm into hn, latent rows, queries, RoPE at each row's
 * position, absorption (one batched GEMM over the heads), and the append of each position's
 * latent rows, into its request's shard, by the position's owner. */
hlx_status_t hlx_mla_rows_qkv(hlx_engine_t *eng, int l, hlx_mla_rows_t *rw, const float *x,
                              float *hn, int n, const int *rq, int c, int64_t pos0);

/* Attention descriptor of the c rows k c .. k c + c - 1 over request req's latent shard:
 * group c x Q query heads ([c][Q][kv_lora + rope]); len, o and lse are the caller's. */
void         hlx_mla_rows_attn_desc(const hlx_engine_t *eng, int l, const hlx_mla_rows_t *rw,
                                    int k, int req, int c, hlx_attn_desc_t *d);

/* W_UV on the merged latent heads omerged ([R][q_slice][kv_lora]) into rw->ov (one batched
 * GEMM over the heads). */
hlx_status_t hlx_mla_rows_up(hlx_engine_t *eng, int l, hlx_mla_rows_t *rw, const float *omerged,
                             int R);

#endif
