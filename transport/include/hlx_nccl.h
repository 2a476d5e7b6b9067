/* NCCL communicators for ranks that each drive their own GPU (optional meson feature
 * 'nccl'): the unique id exchanged through the PMIx bootstrap, non-blocking communicators
 * so that every wait has a deadline (a communicator past it is aborted), the Helix
 * all-to-all as grouped send/receive and the all-reduce, enqueued on a CUDA stream. */
#ifndef HLX_NCCL_H
#define HLX_NCCL_H

#include "hlx_boot.h"

#include <helix/status.h>
#include <stddef.h>

typedef struct hlx_nccl hlx_nccl_t;

/* NCCL's version as major * 10000 + minor * 100 + patch (2.27.3: 22703); 0 when this
 * build has no NCCL. */
int          hlx_nccl_version(void);
/* 1 when the build has NCCL. */
int          hlx_nccl_compiled(void);

/* Collective over the whole world (every rank calls it, in the same order): ranks with the
 * same color form one communicator, ordered by key (as MPI_Comm_split); a rank with a
 * negative color takes part in the exchanges and gets *c_p = NULL (HLX_OK). The rank must have
 * selected its CUDA device. The id of each group comes from its first member through one
 * all-gather of the bootstrap. Init, every enqueue and every wait end by timeout_s; on
 * failure err says which step and NCCL's words. */
hlx_status_t hlx_nccl_create(hlx_boot_t *boot, int color, int key, double timeout_s,
                             hlx_nccl_t **c_p, char *err, size_t errlen);
int          hlx_nccl_rank(const hlx_nccl_t *c);
int          hlx_nccl_size(const hlx_nccl_t *c);
/* Alltoallv in bytes between device buffers, enqueued on stream (a cudaStream_t). */
hlx_status_t hlx_nccl_alltoallv(hlx_nccl_t *c, const void *sbuf, const size_t *scounts,
                                const size_t *sdispls, void *rbuf, const size_t *rcounts,
                                const size_t *rdispls, void *stream);
/* In-place sum over the group of count floats in device memory, enqueued on stream. */
hlx_status_t hlx_nccl_allreduce_sum_f32(hlx_nccl_t *c, float *buf, size_t count,
                                        void *stream);
/* out[size][bytes] = every member's in, device memory, enqueued on stream. */
hlx_status_t hlx_nccl_allgather(hlx_nccl_t *c, const void *in, size_t bytes, void *out,
                                void *stream);
/* Waits until the stream's work is done, polling NCCL's asynchronous error; past the
 * deadline or on an error the communicator is aborted (HLX_ERR_TIMEOUT / TRANSPORT) and
 * every later call fails at once. */
hlx_status_t hlx_nccl_wait(hlx_nccl_t *c, void *stream);
/* Last error text of the communicator ("" when none). */
const char  *hlx_nccl_error(const hlx_nccl_t *c);
/* Finalises (bounded by the deadline, aborting past it) and frees. */
void         hlx_nccl_destroy(hlx_nccl_t *c);

#endif
