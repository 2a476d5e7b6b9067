/* libFuzzer target: config.json as any bytes. hlx_hf_config_load must accept it or refuse
 * it saying why (file:line:column, key, reason), never crash or read out of bounds; what it
 * accepts must rotate with finite RoPE frequencies and factors (a division by ln 1 would
 * pass silently otherwise). The reader's quantization forms, multimodal text configs, RoPE
 * scalings and family keys are all reached from the seeds (data/hf and data/hf_config). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hlx_ckpt.h"

static char dir[64];

/* Every frequency m rotates with finite and at least 0, its factor on cos and sin and the
 * softmax scale finite and above 0 (dynamic's at twice its original context, longrope's
 * both sets). */
static void rope_check(hlx_model_t *m)
{
    static double inv[1 << 15];
    double ms = 0;
    int i, pass;

    if (m->rope_dim < 2 || m->rope_dim / 2 > (int)(sizeof(inv) / sizeof(inv[0])))
        return;
    for (pass = 0; pass < 2; pass++) {
        m->rope_long = pass && m->rope_kind == HLX_ROPE_LONGROPE;
        hlx_model_rope_freqs_at(m, m->rope_dim, 2 * (int64_t)m->rope_orig_ctx + 1, inv, &ms);
        if (!isfinite(ms) || ms <= 0)
            abort();
        for (i = 0; i < m->rope_dim / 2; i++)
            if (!isfinite(inv[i]) || inv[i] < 0) /* 0: a pair left unturned */
                abort();
    }
    m->rope_long = 0;
    ms = hlx_model_softmax_scale(m, m->head_dim);
    if (!isfinite(ms) || ms <= 0)
        abort();
}

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
    if (hlx_hf_config_load(dir, &c, err, sizeof(err)) != HLX_OK) {
        if (err[0] == '\0')
            abort(); /* every refusal says why */
        return 0;
    }
    rope_check(&c.m);
    return 0;
}
