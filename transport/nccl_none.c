/* NCCL entry points in a build without NCCL: every creation fails, saying so. */
#include "hlx_nccl.h"

#include <stdio.h>

int hlx_nccl_version(void) { return 0; }
int hlx_nccl_compiled(void) { return 0; }

hlx_status_t hlx_nccl_create(hlx_boot_t *boot, int color, int key, double timeout_s,
                             hlx_nccl_t **c_p, char *err, size_t errlen)
{
    (void)boot; (void)key; (void)timeout_s;
    *c_p = NULL;
    if (color < 0) /* in no group: nothing to create */
        return HLX_OK;
    snprintf(err, errlen, "nccl: this build has no NCCL (meson -Dnccl=enabled needs nccl.h "
             "and libnccl)");
    return HLX_ERR_UNSUPPORTED;
}

int hlx_nccl_rank(const hlx_nccl_t *c) { (void)c; return -1; }
int hlx_nccl_size(const hlx_nccl_t *c) { (void)c; return 0; }

hlx_status_t hlx_nccl_alltoallv(hlx_nccl_t *c, const void *sbuf, const size_t *scounts,
                                const size_t *sdispls, void *rbuf, const size_t *rcounts,
                                const size_t *rdispls, void *stream)
{
    (void)c; (void)sbuf; (void)scounts; (void)sdispls; (void)rbuf; (void)rcounts;
    (void)rdispls; (void)stream;
    return HLX_ERR_UNSUPPORTED;
}

hlx_status_t hlx_nccl_allreduce_sum_f32(hlx_nccl_t *c, float *buf, size_t count, void *stream)
{
    (void)c; (void)buf; (void)count; (void)stream;
    return HLX_ERR_UNSUPPORTED;
}

hlx_status_t hlx_nccl_allgather(hlx_nccl_t *c, const void *in, size_t bytes, void *out,
                                void *stream)
{
    (void)c; (void)in; (void)bytes; (void)out; (void)stream;
    return HLX_ERR_UNSUPPORTED;
}

hlx_status_t hlx_nccl_wait(hlx_nccl_t *c, void *stream)
{
    (void)c; (void)stream;
    return HLX_ERR_UNSUPPORTED;
}

const char *hlx_nccl_error(const hlx_nccl_t *c) { (void)c; return "no NCCL in this build"; }
void hlx_nccl_destroy(hlx_nccl_t *c) { (void)c; }
