/* Where the runtime's weights come from: the synthetic generator or a Hugging Face
 * checkpoint, read by checkpoint tensor name in the runtime's orientation, so that every
 * rank's slices and the fp64 reference read the same values from either source. */
#ifndef HLX_WSRC_H
#define HLX_WSRC_H

#include "hlx_ckpt.h"

#include <helix/model.h>
#include <helix/status.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hlx_wsrc {
    hlx_hf_config_t cfg;  /* the model (cfg.m) and what config.json says beyond it */
    uint64_t        seed; /* synthetic values */
    hlx_ckpt_t     *ck;   /* NULL: synthetic */
    hlx_dtype_t     held; /* the dtype the runtime holds the weights in (hlx_wsrc_hold) */
} hlx_wsrc_t;

/* Synthetic weights of model m with seed: tensors the dense generator knows (hlx_synth.h)
 * take its values at runtime coordinates (a `helix model synth --family dense` checkpoint
 * holds the same); every other name takes hlx_ckpt_synth_value at checkpoint coordinates
 * (what `model synth --family moe-mla` stores), rounded to the weight dtype. */
hlx_status_t hlx_wsrc_synth(hlx_wsrc_t *ws, const hlx_model_t *m, uint64_t seed, char *err,
                            size_t errlen);
/* The checkpoint in dir: config.json, the shards, every tensor checked (hlx_hf_check). */
hlx_status_t hlx_wsrc_ckpt(hlx_wsrc_t *ws, const char *dir, char *err, size_t errlen);
void         hlx_wsrc_fini(hlx_wsrc_t *ws);
/* The dtype the runtime holds ws's weights in (f32 or bf16; by default the model's weight
 * dtype, hlx_hf_held_default for a checkpoint). Held in bf16 while the source is not
 * (F16 or F32 tensors, quantized weights, an f32 synthetic model), every f32 read returns
 * the bf16 rounding (hlx_hf_held_rounded): the fp64 reference and the ranks' f32 tensors
 * (norms, biases, routers) see the values the bf16 matrices hold. */
void         hlx_wsrc_hold(hlx_wsrc_t *ws, hlx_dtype_t held);

/* The fp8 KV-cache scales of layer's keys and values of (global) KV head `head`
 * (docs/model.md "fp8 KV-cache scales"): the checkpoint's self_attn.k_scale and v_scale
 * (per tensor, or that head's) when its config has a kv_cache_scheme and the KV is stored
 * as fp8, else 1 and 1. MLA's one latent row takes one scale: a checkpoint whose two differ
 * is refused (HLX_ERR_MISMATCH). */
hlx_status_t hlx_wsrc_kv_scales(hlx_wsrc_t *ws, hlx_dtype_t kv_dtype, int layer, int head,
                                double *k_p, double *v_p, char *err, size_t errlen);

/* Reads runtime rows [r0, r0 + nr) x cols [c0, c0 + nc) of the tensor called `name` (its
 * checkpoint name, e.g. "model.layers.3.mlp.experts.5.up_proj.weight") into
 * dst[i * ld + j] as dt (HLX_DTYPE_F32 or HLX_DTYPE_BF16). The runtime's orientation:
 * matrices input-major [in][out] (the checkpoint's [out][in] transposed; the embedding
 * stays [V][H]); 1-D tensors (norms, biases) are one row [1][n]. rows x cols is the whole
 * tensor in that orientation, checked against the checkpoint (HLX_ERR_MISMATCH). Dense
 * GQA projections get the RoPE pair order of the runtime (hlx_hf_weight_map). Errors:
 * one line in err naming the file and the tensor. */
hlx_status_t hlx_wsrc_read(hlx_wsrc_t *ws, const char *name, int64_t rows, int64_t cols,
                           int64_t r0, int64_t nr, int64_t c0, int64_t nc, void *dst,
                           hlx_dtype_t dt, int64_t ld, char *err, size_t errlen);

/* Whether the runtime weight `key` (hlx_wsrc_read's names) is stored integer-packed in a
 * form the packed GEMMs keep (hlx_ckpt_packed_groups: *bits_p, *group_p, *lut_p); then
 * hlx_wsrc_read with dt HLX_CKPT_QCODE, QZERO or QSCALE reads its parts, through the same
 * row and column mapping as its values. 0 for a synthetic source. */
int hlx_wsrc_packed(hlx_wsrc_t *ws, const char *key, int *bits_p, int64_t *group_p,
                    const uint8_t **lut_p);

#endif
