/* helix bench attention --device cuda in a build without CUDA: refused, saying so. */
#include "hlx_bench_cuda.h"

#include <stdio.h>

int hlx_bench_attention_cuda(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "helix bench: --device cuda: this build has no CUDA (meson -Dcuda=enabled "
            "needs nvcc)\n");
    return 2;
}
