/* Seeded top-p sampling (hlx_sample.h): softmax with temperature over the full logits,
 * the nucleus found by sorting only the candidates above a falling threshold, one
 * counter-based draw. */
#include "hlx_sample.h"

#include "hlx_synth.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    double p;
    int    id;
} hlx_cand_t;

double hlx_sample_uniform(uint64_t seed, int request, int64_t step)
{
    uint64_t h = hlx_mix64(hlx_mix64(seed ^ 0x73616d706c65ull) ^ (uint64_t)(uint32_t)request);

    h = hlx_mix64(h ^ hlx_mix64((uint64_t)step));
    return (double)(h >> 11) * (1.0 / 9007199254740992.0);
}

/* Probability order: larger first, ties by lower id (a total order: the same on every
 * rank and every run). */
static int hlx_cand_cmp(const void *a, const void *b)
{
    const hlx_cand_t *x = a, *y = b;

    if (x->p != y->p)
        return x->p > y->p ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static int hlx_argmax(const float *logits, int vocab)
{
    int v, best = 0;

    for (v = 1; v < vocab; v++)
        if (logits[v] > logits[best])
            best = v;
    return best;
}

size_t hlx_sample_work_bytes(int vocab)
{
    return sizeof(hlx_cand_t) * (size_t)(vocab > 0 ? vocab : 1) + 16; /* + alignment */
}

/* Moves the candidates of probability >= thr (all of them when thr is 0) to the front of
 * c[0..vocab) and sorts them: the first entries of the whole probability order, since every
 * other candidate is less probable. Their count. */
static int hlx_sample_top(hlx_cand_t *c, int vocab, double thr)
{
    int v, m = 0;

    for (v = 0; v < vocab; v++)
        if (thr == 0.0 || c[v].p >= thr) {
            hlx_cand_t t = c[m];
            c[m++] = c[v];
            c[v] = t;
        }
    qsort(c, (size_t)m, sizeof(*c), hlx_cand_cmp);
    return m;
}

int hlx_sample_token(const float *logits, int vocab, double temperature, double top_p,
                     uint64_t seed, int request, int64_t step, void *work)
{
    hlx_cand_t *c = (hlx_cand_t *)(((uintptr_t)work + 15) & ~(uintptr_t)15);
    double mx, total = 0.0, want, acc, u, thr = 1.0;
    int v, n, m, best;

    if (vocab < 1)
        return 0;
    best = hlx_argmax(logits, vocab);
    if (!(temperature > 0) || !isfinite(logits[best]))
        return best;
    mx = logits[best];
    for (v = 0; v < vocab; v++) {
        c[v].p = exp(((double)logits[v] - mx) / temperature); /* exp(-inf) = 0: padding */
        c[v].id = v;
        total += c[v].p;
    }
    /* the nucleus: the shortest prefix in probability order holding top_p of the mass. The
     * order is needed only that far: the candidates above a threshold are the first ones
     * (sorting them alone gives the same prefix as sorting the vocabulary), lowered 256x at
     * a time until their prefix holds the mass (a peaked distribution: one pass over a few
     * tokens instead of sorting 100K+ ids); under 1e-30 of the largest, everything. */
    want = (top_p > 0 && top_p < 1 ? top_p : 1.0) * total;
    for (;;) {
        thr = thr > 1e-30 ? thr * (1.0 / 256) : 0.0;
        m = hlx_sample_top(c, vocab, thr);
        for (n = 0, acc = 0.0; n < m && (n == 0 || acc < want); n++)
            acc += c[n].p;
        if (acc >= want || m == vocab)
            break;
    }
    u = hlx_sample_uniform(seed, request, step) * acc;
    for (v = 0, total = 0.0; v < n - 1; v++) {
        total += c[v].p;
        if (u < total)
            break;
    }
    return c[v].id;
}
