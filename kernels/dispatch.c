/* Chooses the kernel variant once at init. Only the reference exists so far. */
#include "hlx_kernels.h"

#include <stdlib.h>
#include <string.h>

hlx_status_t hlx_kernels_init(const char *name, hlx_kernels_t *k)
{
    if (name == NULL)
        name = getenv("HELIX_KERNELS");
    hlx_kernels_reference(k);
    if (name == NULL || !strcmp(name, "auto") || !strcmp(name, "scalar"))
        return HLX_OK;
    return HLX_ERR_UNSUPPORTED;
}

size_t hlx_kernels_list(const char **names, size_t max)
{
    if (max > 0)
        names[0] = "scalar";
    return 1;
}
