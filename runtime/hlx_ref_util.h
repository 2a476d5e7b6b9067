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

#endif
