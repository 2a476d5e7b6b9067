/* Single-process fp64 reference of the same model: no sharding, no kernels from kernels/,
 * two-pass softmax, fp64 accumulation everywhere. It reads the same synthetic weights and
 * context (rounded to the same storage dtypes) and is the oracle of `helix decode --check`. */
#ifndef HLX_REFERENCE_H
#define HLX_REFERENCE_H

#include <helix/model.h>
#include <helix/status.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hlx_ref hlx_ref_t;

/* Bytes the reference will allocate (KV for context + steps, weights as fp64);
 * UINT64_MAX when that overflows 64 bits. */
uint64_t hlx_ref_bytes(const hlx_model_t *m, int batch, int64_t context, int steps);

hlx_status_t hlx_ref_create(const hlx_model_t *m, hlx_dtype_t kv_dtype, int batch,
                            int64_t context, int steps, uint64_t seed, hlx_ref_t **ref_p);
/* The same with the weights of the Hugging Face checkpoint in ckpt (NULL or "": synthetic),
 * read whole, as the engine holds them in w_dtype (hlx_wsrc_hold: the bf16 rounding of an
 * F16 or F32 checkpoint held in bf16); the prior context stays synthetic (seed). */
hlx_status_t hlx_ref_create_ckpt(const hlx_model_t *m, hlx_dtype_t kv_dtype,
                                 hlx_dtype_t w_dtype, int batch, int64_t context, int steps,
                                 uint64_t seed, const char *ckpt, hlx_ref_t **ref_p);
/* The prompt length [B] of each request (tokens after the context; 0 by default): dynamic
 * NTK RoPE turns a prompt's positions with the frequencies of the prompt's whole length. */
void         hlx_ref_set_prompt_lens(hlx_ref_t *ref, const int *lens);
/* The input tokens [B] of the next step (a prompt token, a sampled token) instead of the
 * previous step's greedy choice. */
void         hlx_ref_set_tokens(hlx_ref_t *ref, const int *tokens);
/* One decode step of every request from its own previous token (the first step starts
 * from the synthetic first tokens). hidden[B][H] is the residual stream after the last
 * layer, logits[B][V]; next[B] the greedy tokens. */
hlx_status_t hlx_ref_step(hlx_ref_t *ref, double *hidden, double *logits, int *next);
/* The reference's cached key (is_key) or value row of layer l, request b, KV head g at
 * position pos (f32, rounded to the KV dtype); NULL when pos is not yet filled. */
const float *hlx_ref_kv_row(const hlx_ref_t *ref, int l, int b, int g, int64_t pos, int is_key);
/* MoE routing choices so far whose last chosen and first left-out score were within the
 * margin (HLX_REF_ROUTE_MARGIN unless set; hlx_reference_moe.h): there the engine may
 * choose otherwise. The first is described in first. */
void         hlx_ref_set_route_margin(hlx_ref_t *ref, double margin);
int64_t      hlx_ref_route_near_ties(const hlx_ref_t *ref, char *first, size_t len);
void         hlx_ref_destroy(hlx_ref_t *ref);

#endif
