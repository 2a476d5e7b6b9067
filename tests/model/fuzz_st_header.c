/* libFuzzer target: the safetensors parser must refuse or accept any bytes without
 * crashing, and what it accepts must tile the data section exactly, names sorted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hlx_ckpt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512];
    hlx_st_file_t f;
    uint64_t bytes = 0, data_size;
    size_t i;

    if (hlx_st_parse("fuzz.safetensors", data, size, 0, &f, err, sizeof(err)) != HLX_OK) {
        if (err[0] == '\0')
            abort(); /* every refusal says why */
        return 0;
    }
    if (f.data_offset > size)
        abort();
    data_size = size - f.data_offset;
    for (i = 0; i < f.count; i++) {
        const hlx_ckpt_tensor_t *t = &f.tensors[i];
        if (t->end < t->begin || t->end > data_size ||
            t->end - t->begin != t->numel * hlx_st_dtype_size(t->dtype))
            abort();
        if (i > 0 && strcmp(f.tensors[i - 1].name, t->name) >= 0)
            abort();
        bytes += t->end - t->begin;
    }
    if (bytes != data_size) /* no holes, no overlaps (they would sum past or short) */
        abort();
    hlx_st_file_free(&f);
    return 0;
}
