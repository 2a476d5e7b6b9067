/* libFuzzer target: any bytes given as a cluster file are loaded or refused with a message
 * naming the file; what loads has consistent GPU counts and link classes. */
#include "fuzz_common.h"

#include <helix/cluster.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[1024] = "";
    hlx_cluster_t c;
    int fd = hlx_fuzz_memfile(data, size, path, sizeof(path));

    if (fd < 0)
        return 0;
    memset(&c, 0, sizeof(c));
    if (hlx_cluster_load(path, &c, err, sizeof(err)) != HLX_OK) {
        if (strncmp(err, path, strlen(path)) != 0)
            abort();
    } else {
        int n = hlx_cluster_total_gpus(&c), i, sum = 0;
        /* CPU-only clusters have no GPU at all (n == 0) */
        if (c.nnodes < 1 || n < 0 || n != c.total_gpus)
            abort();
        for (i = 0; i < c.nnodes; i++)
            sum += c.nodes[i].gpus;
        if (sum != n || !isfinite(c.gpu.hbm_gib))
            abort();
        if (n > 0 && (hlx_cluster_link(&c, 0, n - 1) >= HLX_LINK_COUNT ||
                      hlx_cluster_link(&c, 0, n) != HLX_LINK_COUNT ||
                      hlx_cluster_gpu_node(&c, n) != -1))
            abort();
        hlx_cluster_free(&c);
    }
    close(fd);
    return 0;
}
