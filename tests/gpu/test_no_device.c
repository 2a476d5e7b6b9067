/* unit: without a usable CUDA device every entry point of the device path answers with an
 * error and a reason, and nothing crashes (no libcuda here: the runtime API reports it).
 * Exit 77 where a device exists (the gpu suite covers that case). */
#include "hlx_backend.h"
#include "hlx_backend_cuda.h"
#include "hlx_boot.h"
#include "hlx_nccl.h"
#include "hlx_check.h"

#include <helix/device.h>

#include <stdio.h>
#include <string.h>

#define CHECK(_c, ...) HLX_CHECK_OR_RETURN(_c, __VA_ARGS__)

int main(void)
{
    char why[256] = "", err[512] = "";
    const char *names[8];
    hlx_devices_t d;
    hlx_backend_t be;
    hlx_boot_t *boot = NULL;
    hlx_nccl_t *c = (hlx_nccl_t *)&be; /* must come back NULL */
    size_t n, i;
    int has_cuda = 0;

    if (hlx_backend_cuda_devices(why, sizeof(why)) > 0) {
        printf("a CUDA device is present: skipped (the gpu suite runs there)\n");
        return 77;
    }
    CHECK(why[0] != '\0', "no reason given for no device");
    hlx_devices_query(&d);
    CHECK(d.count == 0 && d.reason[0] != '\0', "devices: count %d, reason '%s'", d.count,
          d.reason);
    CHECK(d.compiled == (hlx_backend_cuda_ops() != NULL), "compiled %d", d.compiled);
    n = hlx_backend_list(names, 8);
    for (i = 0; i < n && i < 8; i++)
        has_cuda |= !strcmp(names[i], "cuda");
    CHECK(has_cuda == d.compiled, "backend list and build disagree about cuda");
    /* the attention kernel named for a shape, without a device: the host-side choice */
    if (d.compiled) {
        CHECK(!strcmp(hlx_backend_cuda_attn_kernel(128, 128, HLX_DTYPE_BF16, 0), "mma"),
              "bf16 128/128: %s", hlx_backend_cuda_attn_kernel(128, 128, HLX_DTYPE_BF16, 0));
        CHECK(!strcmp(hlx_backend_cuda_attn_kernel(576, 512, HLX_DTYPE_BF16, 1), "mma"),
              "MLA 576/512: %s", hlx_backend_cuda_attn_kernel(576, 512, HLX_DTYPE_BF16, 1));
        CHECK(!strcmp(hlx_backend_cuda_attn_kernel(32, 32, HLX_DTYPE_BF16, 0), "tokens"),
              "bf16 32/32: %s", hlx_backend_cuda_attn_kernel(32, 32, HLX_DTYPE_BF16, 0));
        CHECK(!strcmp(hlx_backend_cuda_attn_kernel(128, 128, HLX_DTYPE_F32, 0), "tokens"),
              "f32 128/128: %s", hlx_backend_cuda_attn_kernel(128, 128, HLX_DTYPE_F32, 0));
        CHECK(!strcmp(hlx_backend_cuda_attn_kernel(64, 64, HLX_DTYPE_BF16, 0), "tokens"),
              "bf16 64/64 (mma only when asked for): %s",
              hlx_backend_cuda_attn_kernel(64, 64, HLX_DTYPE_BF16, 0));
        CHECK(hlx_backend_cuda_set_attn("mma") == HLX_OK &&
                  !strcmp(hlx_backend_cuda_attn_kernel(64, 64, HLX_DTYPE_BF16, 0), "mma") &&
                  !strncmp(hlx_backend_cuda_attn_kernel(32, 32, HLX_DTYPE_BF16, 0), "none", 4),
              "HELIX_CUDA_ATTN=mma: 64/64 %s, 32/32 %s",
              hlx_backend_cuda_attn_kernel(64, 64, HLX_DTYPE_BF16, 0),
              hlx_backend_cuda_attn_kernel(32, 32, HLX_DTYPE_BF16, 0));
        CHECK(hlx_backend_cuda_set_attn("auto") == HLX_OK, "back to auto");
        CHECK(hlx_backend_cuda_set_attn("fastest") == HLX_ERR_INVALID, "a bad kernel taken");
    } else {
        CHECK(!strcmp(hlx_backend_cuda_attn_kernel(128, 128, HLX_DTYPE_BF16, 0), "none"),
              "no CUDA in the build, yet a kernel named");
    }
    CHECK(hlx_backend_init("cuda", NULL, HLX_DTYPE_BF16, &be) == HLX_ERR_UNSUPPORTED,
          "the cuda backend started without a device");
    CHECK(hlx_backend_init("host", NULL, HLX_DTYPE_BF16, &be) == HLX_OK, "host backend");
    CHECK(hlx_backend_cuda_open(&be, 0, 1.0, why, sizeof(why)) != HLX_OK,
          "opening a device on the host backend");
    hlx_backend_fini(&be);
    CHECK(hlx_boot_init(10.0, &boot) == HLX_OK, "bootstrap (world of one)");
    CHECK(hlx_nccl_create(boot, 0, 0, 5.0, &c, err, sizeof(err)) != HLX_OK && c == NULL &&
          err[0] != '\0', "NCCL without a device");
    printf("no device: %s; nccl: %s (version %d)\n", d.reason, err, hlx_nccl_version());
    hlx_boot_fini(boot);
    return 0;
}
