/* gpu: NCCL communicators in a world of one (no launcher): creation through the bootstrap,
 * the all-to-all to itself, the all-reduce and the all-gather on device buffers, exact;
 * a second communicator of the same world. Exit 77 without NCCL or a CUDA device. */
#include "hlx_boot.h"
#include "hlx_nccl.h"
#include "hlx_check.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#define CHECK(_c, ...) HLX_CHECK_OR_RETURN(_c, __VA_ARGS__)

int main(void)
{
    enum { N = 1000 };
    float h[N], back[N], *d = NULL, *r = NULL;
    size_t cnt = sizeof(h), zero = 0;
    hlx_boot_t *boot = NULL;
    hlx_nccl_t *c = NULL, *c2 = NULL;
    cudaStream_t s;
    char err[512] = "";
    int n = 0, i;

    if (!hlx_nccl_compiled()) {
        printf("this build has no NCCL: skipped\n");
        return 77;
    }
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
        printf("no CUDA device: skipped\n");
        return 77;
    }
    CHECK(cudaSetDevice(0) == cudaSuccess, "cudaSetDevice");
    CHECK(cudaStreamCreate(&s) == cudaSuccess, "stream");
    CHECK(hlx_boot_init(30.0, &boot) == HLX_OK, "bootstrap (world of one)");
    CHECK(hlx_nccl_create(boot, 0, 0, 30.0, &c, err, sizeof(err)) == HLX_OK, "create: %s", err);
    CHECK(hlx_nccl_size(c) == 1 && hlx_nccl_rank(c) == 0, "size %d rank %d", hlx_nccl_size(c),
          hlx_nccl_rank(c));
    CHECK(hlx_nccl_version() >= 21800, "NCCL version %d", hlx_nccl_version());
    for (i = 0; i < N; i++)
        h[i] = (float)i * 0.25f - 7.0f;
    CHECK(cudaMalloc((void **)&d, sizeof(h)) == cudaSuccess &&
          cudaMalloc((void **)&r, sizeof(h)) == cudaSuccess, "cudaMalloc");
    CHECK(cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice) == cudaSuccess, "copy");
    CHECK(cudaMemset(r, 0, sizeof(h)) == cudaSuccess, "memset");
    CHECK(hlx_nccl_alltoallv(c, d, &cnt, &zero, r, &cnt, &zero, s) == HLX_OK, "alltoallv: %s",
          hlx_nccl_error(c));
    CHECK(hlx_nccl_wait(c, s) == HLX_OK, "wait: %s", hlx_nccl_error(c));
    CHECK(cudaMemcpy(back, r, sizeof(h), cudaMemcpyDeviceToHost) == cudaSuccess, "copy back");
    CHECK(!memcmp(back, h, sizeof(h)), "alltoallv to itself changed the data");
    CHECK(hlx_nccl_allreduce_sum_f32(c, d, N, s) == HLX_OK && hlx_nccl_wait(c, s) == HLX_OK,
          "allreduce: %s", hlx_nccl_error(c));
    CHECK(cudaMemcpy(back, d, sizeof(h), cudaMemcpyDeviceToHost) == cudaSuccess, "copy back");
    CHECK(!memcmp(back, h, sizeof(h)), "allreduce over one rank changed the data");
    CHECK(hlx_nccl_allgather(c, d, sizeof(h), r, s) == HLX_OK && hlx_nccl_wait(c, s) == HLX_OK,
          "allgather: %s", hlx_nccl_error(c));
    CHECK(cudaMemcpy(back, r, sizeof(h), cudaMemcpyDeviceToHost) == cudaSuccess, "copy back");
    CHECK(!memcmp(back, h, sizeof(h)), "allgather over one rank changed the data");
    CHECK(hlx_nccl_create(boot, 5, 3, 30.0, &c2, err, sizeof(err)) == HLX_OK, "second: %s", err);
    hlx_nccl_destroy(c2);
    hlx_nccl_destroy(c);
    cudaFree(d);
    cudaFree(r);
    cudaStreamDestroy(s);
    hlx_boot_fini(boot);
    printf("ok\n");
    return 0;
}
