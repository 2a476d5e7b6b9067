/* Seeded top-p sampling of the next token from full logits: a counter-based draw of
 * (seed, request, step), so that every rank, given the same all-gathered logits, picks the
 * same token without any exchange, and a rerun with the same seed picks it again. */
#ifndef HLX_SAMPLE_H
#define HLX_SAMPLE_H

#include <stdint.h>

/* Uniform draw in [0, 1) of (seed, request, step): 53 bits of a hash. */
double hlx_sample_uniform(uint64_t seed, int request, int64_t step);

/* The token drawn from softmax(logits / temperature) restricted to its nucleus: the most
 * probable tokens (ties: lower id first) whose mass first reaches top_p of the total.
 * temperature <= 0 is greedy (the first largest logit). Allocation-free for vocab up to
 * HLX_SAMPLE_STACK entries; larger vocabularies use one heap buffer per call. */
int    hlx_sample_token(const float *logits, int vocab, double temperature, double top_p,
                        uint64_t seed, int request, int64_t step);

#define HLX_SAMPLE_STACK 4096

#endif
