/* Prefill: a prompt of token ids run through the layers in chunks, each token's K and V
 * written into the staggered KVP layout by the rank that owns its position; and the
 * engine's seeded sampling of the next token. */
#ifndef HLX_PREFILL_H
#define HLX_PREFILL_H

#include <helix/runtime.h>

/* Runs cfg.prompt ([batch][prompt_len]) and each request's tail (cfg.tail) from position
 * pos in chunks of cfg.prefill_chunk tokens (n x C rows through every GEMM, the exchange
 * and the merge, n the requests whose prompt reaches the chunk; attention causal per row;
 * GQA or MLA attention, dense or MoE FFNs), or one decode step per token with
 * HELIX_PREFILL=steps (prompts of one length), then the head on each request's last
 * prompt token: eng->x and the logits are those of that token, eng->tokens the next
 * token; a request with a tail then sits that far past eng->pos (eng->roff). Collective. */
hlx_status_t hlx_prefill_run(hlx_engine_t *eng);

/* With cfg.temperature > 0: replaces the greedy tokens of the head by the seeded top-p
 * draw from the all-gathered logits (identical on every rank). */
hlx_status_t hlx_engine_sample(hlx_engine_t *eng);

#endif
