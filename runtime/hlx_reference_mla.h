/* The fp64 reference's MLA attention (reference_mla.c), in DeepSeek-V3's non-absorbed form:
 * full per-head keys [W_UK^T c | k_rope] and values W_UV^T c from the cached latent rows, a
 * derivation independent of the engine's absorbed one (runtime/mla.c). */
#ifndef HLX_REFERENCE_MLA_H
#define HLX_REFERENCE_MLA_H

#include "hlx_wsrc.h"

#include <helix/model.h>
#include <helix/status.h>
#include <stdint.h>

typedef struct hlx_ref_mla hlx_ref_mla_t;

/* Bytes of the MLA caches for context + steps positions (latent rows as f32, derived
 * per-head keys and values as fp64); UINT64_MAX when that overflows. */
uint64_t     hlx_ref_mla_bytes(const hlx_model_t *m, int batch, int64_t context, int steps);
/* Reads the MLA weights of every layer from ws (whole tensors, fp64) and fills the
 * synthetic prior context: latent rows [c | k_rope] rounded to kv_dtype. */
hlx_status_t hlx_ref_mla_create(hlx_wsrc_t *ws, const hlx_model_t *m, hlx_dtype_t kv_dtype,
                                int batch, int64_t context, int steps, uint64_t seed,
                                hlx_ref_mla_t **a_p);
/* Layer l, request b, new token at position pos: hn is the normed input [H]; stores the
 * token's latent row and writes the attention output o [Q][v] (before o_proj). */
hlx_status_t hlx_ref_mla_attn(hlx_ref_mla_t *a, int l, int b, int64_t pos, const double *hn,
                              double *o);
/* The cached row [c | k_rope] (kv_lora + rope, rounded to the KV dtype) of layer l,
 * request b, position pos (the caller checks that pos is filled). */
const float *hlx_ref_mla_kv_row(const hlx_ref_mla_t *a, int l, int b, int64_t pos);
void         hlx_ref_mla_destroy(hlx_ref_mla_t *a);

#endif
