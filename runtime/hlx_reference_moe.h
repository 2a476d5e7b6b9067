/* The fp64 MoE FFN of the reference (reference_moe.c): full router and expert matrices,
 * its own routing, and a record of the routing choices that fell within a margin of a
 * tie (where the engine's fp32 hidden state may choose another expert). */
#ifndef HLX_REFERENCE_MOE_H
#define HLX_REFERENCE_MOE_H

#include "hlx_wsrc.h"

#include <helix/model.h>
#include <stddef.h>
#include <stdint.h>

/* A choice is a near-tie when the last chosen and the first left-out score (of experts,
 * or of groups) differ by less than the margin; by default this. */
#define HLX_REF_ROUTE_MARGIN 1e-5

typedef struct hlx_ref_moe hlx_ref_moe_t;

/* Reads every MoE layer's router, bias, shared and routed experts whole from ws, in fp64;
 * NULL when out of memory or a read fails (err says which tensor). */
hlx_ref_moe_t *hlx_ref_moe_create(hlx_wsrc_t *ws, const hlx_model_t *m, char *err,
                                  size_t errlen);
/* y[H] = MoE FFN of layer l (past dense_layers, every moe_step-th) on the normalised input hn[H]; pos and b
 * name the choice in the near-tie record. */
void           hlx_ref_moe_ffn(hlx_ref_moe_t *moe, int l, const double *hn, double *y,
                               int64_t pos, int b);
void           hlx_ref_moe_set_margin(hlx_ref_moe_t *moe, double margin);
/* Near-ties met so far; the first is described in first. */
int64_t        hlx_ref_moe_near_ties(const hlx_ref_moe_t *moe, char *first, size_t len);
void           hlx_ref_moe_destroy(hlx_ref_moe_t *moe);

#endif
