/* Pieces the fp64 reference's parts share (reference.c, reference_mla.c,
 * reference_moe.c): whole tensors from the weight source in fp64, RMSNorm and x W. */
#ifndef HLX_REF_UTIL_H
#define HLX_REF_UTIL_H

#include "hlx_wsrc.h"

#include <stddef.h>
#include <stdint.h>

/* The whole tensor `name` ([rows][cols], runtime orientation) in fp64; NULL on failure
 * (the reason in err). */
double *hlx_ref_read(hlx_wsrc_t *ws, const char *name, int64_t rows, int64_t cols, char *err,
                     size_t errlen);
/* y[n] = x[n] / rms(x) * w[n] */
void    hlx_ref_rmsnorm(double *y, const double *x, const double *w, int64_t n, double eps);
/* y[N] = x[K] W[K][N] */
void    hlx_ref_matvec(double *y, const double *x, const double *w, int64_t K, int64_t N);
/* 1 when layer l's FFN is the MoE one: past dense_layers, and with moe_step > 1 only where
 * l + 1 is a multiple of it (Llama 4's interleave_moe_layer_step), from the fields rather
 * than hlx_model_layer_moe */
static inline int hlx_ref_layer_moe(const hlx_model_t *m, int l)
{
    return m->experts > 0 && l >= m->dense_layers && (m->moe_step < 2 || (l + 1) % m->moe_step == 0);
}

#endif
