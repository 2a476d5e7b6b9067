/* MoE FFN of the decode runtime: the TPF x EP split of the routed experts over the N ranks,
 * DeepSeek-V3 gating (scores, group-limited top-k, weights) and the MoE phase. */
#ifndef HLX_MOE_H
#define HLX_MOE_H

#include <helix/model.h>
#include <helix/runtime.h>
#include <helix/status.h>
#include <stddef.h>
#include <stdint.h>

/* Where one rank's share of an MoE layer lives. N = EP x TPF; rank = ep_rank * TPF +
 * tpf_rank, so an EP group is TPF consecutive ranks. */
typedef struct hlx_moe_layout {
    int n, ep, tpf;
    int ep_rank, tpf_rank;
    int expert_first, expert_count; /* routed experts of this EP group: E / EP consecutive */
    int col_first, col_count;       /* intermediate columns of each of them (over TPF) */
    int shared_first, shared_count; /* shared experts' intermediate columns (over all N) */
} hlx_moe_layout_t;

/* Checks an EP width against the model and N ranks; the message names where it came
 * from (what: "--ep" or "HELIX_EP"). */
hlx_status_t hlx_moe_check_ep(const hlx_model_t *m, const char *what, int ep, int kvp,
                              int tpa, char *err, size_t errlen);
/* The layout of rank (0 <= rank < n) for EP width ep (hlx_moe_check_ep first). */
void         hlx_moe_layout_init(const hlx_model_t *m, int n, int ep, int rank,
                                 hlx_moe_layout_t *ml);
/* This engine rank's layout (its N ranks, EP width and rank; all zero for a model without
 * routed experts): the one hlx_moe_build loads and the start-up memory check counts. */
void         hlx_moe_rank_layout(const hlx_engine_t *eng, hlx_moe_layout_t *ml);
/* Bytes of MoE weights one rank of this layout allocates over all MoE layers (router and
 * correction bias in f32, shared and routed slices in w_esize bytes); 0 when the model
 * has no MoE layer, UINT64_MAX when the product overflows. */
uint64_t     hlx_moe_rank_bytes(const hlx_model_t *m, const hlx_moe_layout_t *ml,
                                size_t w_esize);

/* This rank's shared and routed expert slices over all MoE layers counted into sk
 * (hlx_engine_wput) by the walk hlx_moe_build loads them with; the message in eng->errmsg
 * on failure. */
struct hlx_wsink;
hlx_status_t hlx_moe_walk_count(hlx_engine_t *eng, const struct hlx_wsink *sk,
                                const hlx_moe_layout_t *ml);

/* Routing of one token from its router logits[E] (fp64): scores, the group-limited top-k
 * choice (on score + bias[e] with sigmoid scoring; bias may be NULL) with ties to the
 * lowest index, and the weights (renormalised when norm_topk_prob, times
 * routed_scaling). idx[top_k] in choice order, w[top_k]. scratch holds 3 E doubles. */
void hlx_moe_route(const hlx_model_t *m, const double *logits, const float *bias,
                   double *scratch, int *idx, float *w);

/* ---- the engine's MoE state and phase (moe.c) */
typedef struct hlx_moe hlx_moe_t;

/* Reads this rank's MoE weights (router, bias, its shared columns, its experts' columns)
 * from the weight source and allocates the phase's buffers; eng->moe stays NULL for a
 * dense model. */
hlx_status_t hlx_moe_build(hlx_engine_t *eng);
/* The MoE FFN of layer l (hlx_model_layer_moe) over rows rows of the residual x ([rows][H]):
 * RMSNorm into hn, routing per row (identical on every rank), this rank's shared columns
 * for every row and its experts' columns for the rows routed to them, summed into y
 * ([rows][H]); the FFN all-reduce then combines the ranks. Timed as HLX_PHASE_MOE. The
 * decode step passes its B requests, the prefill its B x C rows. */
hlx_status_t hlx_moe_ffn_rows(hlx_engine_t *eng, int l, const float *x, float *hn, float *y,
                              int rows);
/* hlx_moe_ffn_rows on the decode step's eng->x, eng->hn, eng->y and batch. */
hlx_status_t hlx_moe_ffn(hlx_engine_t *eng, int l);
/* Grows the phase's buffers to rows rows (they start at the batch). */
hlx_status_t hlx_moe_reserve(hlx_engine_t *eng, int rows);
/* EP, TPF, experts and MoE weight bytes of this rank. */
void         hlx_moe_report(const hlx_engine_t *eng, hlx_run_report_t *rep);
void         hlx_moe_destroy(hlx_engine_t *eng);

#endif
