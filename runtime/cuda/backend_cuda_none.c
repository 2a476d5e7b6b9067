/* The CUDA backend's entry points in a build without CUDA: no backend, no device. */
#include "hlx_backend_cuda.h"

#include <helix/device.h>

#include <stdio.h>
#include <string.h>

const hlx_backend_ops_t *hlx_backend_cuda_ops(void)
{
    return NULL;
}

int hlx_backend_cuda_devices(char *why, size_t whylen)
{
    snprintf(why, whylen, "this build has no CUDA (meson -Dcuda=enabled needs nvcc)");
    return 0;
}

hlx_status_t hlx_backend_cuda_init(hlx_backend_t *be, char *why, size_t whylen)
{
    (void)be;
    hlx_backend_cuda_devices(why, whylen);
    return HLX_ERR_UNSUPPORTED;
}

hlx_status_t hlx_backend_cuda_open(hlx_backend_t *be, int dev, double timeout_s, char *why,
                                   size_t whylen)
{
    (void)dev; (void)timeout_s;
    return hlx_backend_cuda_init(be, why, whylen);
}

int hlx_backend_cuda_device(const hlx_backend_t *be)
{
    (void)be;
    return -1;
}

void hlx_backend_cuda_fini(hlx_backend_t *be)
{
    (void)be;
}

void hlx_devices_query(hlx_devices_t *d)
{
    memset(d, 0, sizeof(*d));
    hlx_backend_cuda_devices(d->reason, sizeof(d->reason));
}

void *hlx_backend_cuda_stream(hlx_be_queue_t *q)
{
    (void)q;
    return NULL;
}

const char *hlx_backend_cuda_error(void)
{
    return "";
}

hlx_status_t hlx_backend_cuda_set_attn(const char *variant)
{
    (void)variant;
    return HLX_ERR_INVALID;
}

hlx_status_t hlx_backend_cuda_clock(hlx_backend_t *be, hlx_be_queue_t *q, int phase)
{
    (void)be; (void)q; (void)phase;
    return HLX_ERR_INVALID;
}

hlx_status_t hlx_backend_cuda_clock_read(hlx_backend_t *be, uint64_t *phase_ns, int nphases)
{
    (void)be; (void)phase_ns; (void)nphases;
    return HLX_ERR_INVALID;
}

const char *hlx_backend_cuda_attn_kernel(int dk, int dv, hlx_dtype_t kv_dtype, int v_in_k)
{
    (void)dk; (void)dv; (void)kv_dtype; (void)v_in_k;
    return "none";
}
