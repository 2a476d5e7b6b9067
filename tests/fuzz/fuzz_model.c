/* libFuzzer target: any bytes given as a model file are loaded or refused with a message
 * naming the file; what loads has sane sizes, hashes, and passes or fails the runtime check. */
#include "fuzz_common.h"

#include <helix/model.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], err[1024] = "";
    hlx_model_t m, r;
    hlx_status_t st;
    int fd = hlx_fuzz_memfile(data, size, path, sizeof(path));

    if (fd < 0)
        return 0;
    st = hlx_model_load(path, &m, err, sizeof(err));
    if (st != HLX_OK) {
        /* every refusal names the file it read */
        if (strncmp(err, path, strlen(path)) != 0)
            abort();
    } else {
        if (m.layers < 1 || m.hidden < 1 || m.q_heads < 1 || m.kv_heads < 1 ||
            m.head_dim < 1 || m.vocab < 1 || m.dense_layers > m.layers)
            abort();
        if (!(hlx_model_params(&m) > 0) || hlx_model_key_dim(&m) < 1)
            abort();
        (void)hlx_model_hash(&m);
        st = hlx_model_load_runnable(path, &r, err, sizeof(err));
        if ((st == HLX_OK) != (hlx_model_check_runnable(&m, err, sizeof(err)) == HLX_OK))
            abort();
        if (st == HLX_OK && hlx_model_hash(&r) != hlx_model_hash(&m))
            abort();
    }
    close(fd);
    return 0;
}
