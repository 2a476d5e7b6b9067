/* Synthetic tensor values for checkpoints of any family: a hash of (seed, tensor name,
 * element index), so a reader can recompute what any element must be. */
#include "hlx_ckpt.h"

#include <math.h>
#include <string.h>

static uint64_t hlx_cs_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

float hlx_ckpt_synth_value(uint64_t seed, const hlx_hf_expect_t *t, int64_t row, int64_t col)
{
    uint64_t key = hlx_cs_mix(seed), h;
    int64_t cols = t->ndim == 3 ? t->shape[2] : t->ndim == 2 ? t->shape[1] : t->shape[0];
    const char *p;
    size_t n;
    float u;

    for (p = t->name; *p; p++) /* FNV-1a over the name, mixed with the seed */
        key = (key ^ (uint8_t)*p) * 0x100000001b3ull;
    h = hlx_cs_mix(key + (uint64_t)(row * cols + col) * 0xd6e8feb86659fd93ull);
    u = (float)((double)(h >> 40) * (1.0 / 8388608.0) - 1.0);
    if (t->cls == HLX_HFC_NORM)
        return 1.0f + 0.125f * u;
    if (t->cls == HLX_HFC_SCALE)
        return ldexpf(1.0f, -4 - (int)(h & 3));
    n = strlen(t->name);
    if (t->ndim == 1 && n >= 6 && !strcmp(t->name + n - 6, ".sinks"))
        return 2.0f + 6.0f * u; /* [-4, 8): from no effect to a head the sink all but
                                   silences, about the log-sum-exp of a few hundred keys */
    if (t->dtype == HLX_ST_F8_E4M3 || t->ndim == 1)
        return u;
    return u * sqrtf(3.0f / (float)t->shape[1]); /* 3-D [E][in][out]: fan-in shape[1] too */
}
