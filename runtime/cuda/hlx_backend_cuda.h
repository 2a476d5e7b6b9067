/* The CUDA execution backend's entry points beyond its ops table: whether a device can be
 * used, binding the backend to one device, and its teardown (runtime/cuda/). */
#ifndef HLX_BACKEND_CUDA_H
#define HLX_BACKEND_CUDA_H

#include "hlx_backend.h"

#include <stddef.h>
#include <stdint.h>

/* The ops table, "cuda" (NULL in a build without CUDA). */
const hlx_backend_ops_t *hlx_backend_cuda_ops(void);
/* Number of usable CUDA devices; 0 with the reason in why (no CUDA in this build, no
 * driver, no device: the runtime's own words). */
int          hlx_backend_cuda_devices(char *why, size_t whylen);
/* Called by hlx_backend_init for "cuda": KV in rows (blocks of 1), state allocated; fails
 * with HLX_ERR_UNSUPPORTED and why when no device can be used. */
hlx_status_t hlx_backend_cuda_init(hlx_backend_t *be, char *why, size_t whylen);
/* Binds the backend to device dev (before its queue or any memory) and sets the deadline
 * of every host wait on the device (queue_sync, copy_from, argmax). */
hlx_status_t hlx_backend_cuda_open(hlx_backend_t *be, int dev, double timeout_s, char *why,
                                   size_t whylen);
/* The attention kernel the device runs for heads of dk / dv elements of kv_dtype (v_in_k:
 * MLA's value inside the key row) under the present choice: "mma", "tokens", "warp", or
 * why none; "none" in a build without CUDA. */
const char  *hlx_backend_cuda_attn_kernel(int dk, int dv, hlx_dtype_t kv_dtype, int v_in_k);
/* The attention kernel of every later call (process-wide): auto, warp, tokens or mma
 * (HELIX_CUDA_ATTN); HLX_ERR_INVALID for another name or in a build without CUDA. */
hlx_status_t hlx_backend_cuda_set_attn(const char *variant);
/* The phase clock on the device (HELIX_PHASE_CLOCK=device): a timing event recorded on q
 * that starts an interval of phase (an HLX_PHASE_* index; -1: time of no phase); and, once
 * the step's work is queued, a wait for the last one and each interval's device time added
 * to phase_ns[its phase], the marks then cleared. HLX_ERR_INVALID in a build without CUDA. */
hlx_status_t hlx_backend_cuda_clock(hlx_backend_t *be, hlx_be_queue_t *q, int phase);
hlx_status_t hlx_backend_cuda_clock_read(hlx_backend_t *be, uint64_t *phase_ns, int nphases);
/* Device the backend is bound to, -1 before open. */
int          hlx_backend_cuda_device(const hlx_backend_t *be);
/* The CUDA stream of a queue of this backend (a cudaStream_t), for work enqueued beside
 * the backend's own (NCCL collectives); NULL in a build without CUDA. */
void        *hlx_backend_cuda_stream(hlx_be_queue_t *q);
/* The last CUDA failure this thread saw, in words ("" when none, and in a build without
 * CUDA): a failed step's message carries it. */
const char  *hlx_backend_cuda_error(void);
/* Frees the backend's state (hlx_backend_fini). */
void         hlx_backend_cuda_fini(hlx_backend_t *be);

#endif
