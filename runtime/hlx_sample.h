/* Seeded top-p sampling of the next token from full logits: a counter-based draw of
 * (seed, request, step), so that every rank, given the same all-gathered logits, picks the
 * same token without any exchange, and a rerun with the same seed picks it again. */
#ifndef HLX_SAMPLE_H
#define HLX_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

/* Uniform draw in [0, 1) of (seed, request, step): 53 bits of a hash. */
double hlx_sample_uniform(uint64_t seed, int request, int64_t step);

/* Bytes of the work area of hlx_sample_token for a vocabulary (any alignment). */
size_t hlx_sample_work_bytes(int vocab);

/* The token drawn from softmax(logits / temperature) restricted to its nucleus: the most
 * probable tokens (ties: lower id first) whose mass first reaches top_p of the total.
 * temperature <= 0 is greedy (the first largest logit). work holds
 * hlx_sample_work_bytes(vocab) bytes (no allocation per call). */
int    hlx_sample_token(const float *logits, int vocab, double temperature, double top_p,
                        uint64_t seed, int request, int64_t step, void *work);

#endif
