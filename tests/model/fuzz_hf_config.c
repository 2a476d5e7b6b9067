/* libFuzzer target: config.json as any bytes. hlx_hf_config_load must accept it or refuse
 * it saying why (file:line:column, key, reason), never crash or read out of bounds; the
 * reader's quantization forms, multimodal text configs, RoPE scalings and family keys are
 * all reached from the seeds (data/hf and data/hf_config). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hlx_ckpt.h"

static char dir[64];

static void cleanup(void) /* the directory goes with the process */
{
    char path[96];

    snprintf(path, sizeof(path), "%s/config.json", dir);
    unlink(path);
    rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[96], err[1024];
    hlx_hf_config_t c;
    FILE *f;

    if (dir[0] == '\0') { /* one directory per process: the file rewritten per input */
        snprintf(dir, sizeof(dir), "/tmp/hlx_fuzz_hf_config.%d", (int)getpid());
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            abort();
        atexit(cleanup);
    }
    snprintf(path, sizeof(path), "%s/config.json", dir);
    if ((f = fopen(path, "wb")) == NULL)
        abort();
    if (size > 0 && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    err[0] = '\0';
    if (hlx_hf_config_load(dir, &c, err, sizeof(err)) != HLX_OK && err[0] == '\0')
        abort(); /* every refusal says why */
    return 0;
}
