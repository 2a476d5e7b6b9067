/* The synthetic weight source equals what a `helix model synth` checkpoint of the same
 * seed holds: every tensor of each family (dense f32 and bf16, moe-mla bf16), read whole
 * and in an odd block through hlx_wsrc_read from both sources, element for element.
 * usage: test_runtime_wsrc HELIX (the helix binary writes the checkpoints). */
#include "hlx_wsrc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_fail;

#define EXPECT(_c, ...) \
    do { \
        if (!(_c)) { \
            printf("not ok: " __VA_ARGS__); \
            putchar('\n'); \
            g_fail = 1; \
        } \
    } while (0)

/* Runtime shape of a checkpoint tensor: matrices [in][out] (the embedding [V][H]), 1-D as
 * one row. */
static void runtime_shape(const hlx_hf_expect_t *t, int64_t *rows, int64_t *cols)
{
    if (t->ndim == 1) {
        *rows = 1;
        *cols = t->shape[0];
    } else if (!strcmp(t->name, "model.embed_tokens.weight")) {
        *rows = t->shape[0];
        *cols = t->shape[1];
    } else {
        *rows = t->shape[1];
        *cols = t->shape[0];
    }
}

/* Block [r0, r0 + nr) x [c0, c0 + nc) of name from both sources, bitwise equal. */
static int64_t compare_block(hlx_wsrc_t *a, hlx_wsrc_t *b, const char *name, int64_t rows,
                             int64_t cols, int64_t r0, int64_t nr, int64_t c0, int64_t nc,
                             hlx_dtype_t dt)
{
    size_t es = dt == HLX_DTYPE_F32 ? 4 : 2, n = (size_t)(nr * nc) * es;
    char *x = calloc(n + 1, 1), *y = calloc(n + 1, 1), err[512];
    hlx_status_t s1, s2;
    int64_t bad = 0, i;

    s1 = hlx_wsrc_read(a, name, rows, cols, r0, nr, c0, nc, x, dt, nc, err, sizeof(err));
    EXPECT(s1 == HLX_OK, "synthetic read of %s: %s", name, err);
    s2 = hlx_wsrc_read(b, name, rows, cols, r0, nr, c0, nc, y, dt, nc, err, sizeof(err));
    EXPECT(s2 == HLX_OK, "checkpoint read of %s: %s", name, err);
    for (i = 0; s1 == HLX_OK && s2 == HLX_OK && i < nr * nc; i++)
        if (memcmp(x + (size_t)i * es, y + (size_t)i * es, es)) {
            if (bad++ == 0)
                printf("not ok: %s element (%lld, %lld): synthetic %g, checkpoint %g\n", name,
                       (long long)(r0 + i / nc), (long long)(c0 + i % nc),
                       (double)hlx_dtype_load(x, dt, (size_t)i),
                       (double)hlx_dtype_load(y, dt, (size_t)i));
        }
    if (bad)
        g_fail = 1;
    free(x);
    free(y);
    return nr * nc;
}

static void check_family(const char *helix, const char *dir, const char *args, uint64_t seed)
{
    char cmd[2048], err[512];
    hlx_wsrc_t ck, syn;
    hlx_hf_expect_t *list = NULL;
    size_t n = 0, i;
    int64_t elems = 0, rows, cols;

    snprintf(cmd, sizeof(cmd), "%s model synth %s --seed %llu --out %s >/dev/null", helix, args,
             (unsigned long long)seed, dir);
    EXPECT(system(cmd) == 0, "%s", cmd);
    if (hlx_wsrc_ckpt(&ck, dir, err, sizeof(err)) != HLX_OK) {
        printf("not ok: opening %s: %s\n", dir, err);
        g_fail = 1;
        return;
    }
    EXPECT(ck.seed == seed, "%s: helix_synth_seed %llu, expected %llu", dir,
           (unsigned long long)ck.seed, (unsigned long long)seed);
    EXPECT(hlx_wsrc_synth(&syn, &ck.cfg.m, seed, err, sizeof(err)) == HLX_OK, "synth source");
    EXPECT(syn.cfg.family == ck.cfg.family, "%s: family %d vs %d", dir, syn.cfg.family,
           ck.cfg.family);
    EXPECT(hlx_hf_expect(&ck.cfg, &list, &n, err, sizeof(err)) == HLX_OK, "expect: %s", err);
    for (i = 0; i < n; i++) {
        runtime_shape(&list[i], &rows, &cols);
        elems += compare_block(&syn, &ck, list[i].name, rows, cols, 0, rows, 0, cols,
                               HLX_DTYPE_F32);
        /* an odd block, into bf16 */
        if (rows > 3 && cols > 5)
            elems += compare_block(&syn, &ck, list[i].name, rows, cols, 1, rows - 3, 3, cols - 5,
                                   HLX_DTYPE_BF16);
    }
    printf("%s %s: %zu tensors, %lld elements compared\n", g_fail ? "not ok" : "ok", args, n,
           (long long)elems);
    EXPECT(n > 0 && elems > 0, "nothing compared");
    free(list);
    hlx_wsrc_fini(&ck);
    hlx_wsrc_fini(&syn);
}

int main(int argc, char **argv)
{
    char tmp[] = "/tmp/hlx_wsrc_XXXXXX", dir[256], cmd[512];

    if (argc < 2) {
        fprintf(stderr, "usage: %s HELIX\n", argv[0]);
        return 2;
    }
    if (mkdtemp(tmp) == NULL)
        return 1;
    snprintf(dir, sizeof(dir), "%s/dense_f32", tmp);
    check_family(argv[1], dir, "--family dense --dtype f32", 11);
    snprintf(dir, sizeof(dir), "%s/dense_bf16", tmp);
    check_family(argv[1], dir, "--family dense --layers 3", 12);
    snprintf(dir, sizeof(dir), "%s/moe_mla", tmp);
    check_family(argv[1], dir, "--family moe-mla --layers 3", 13);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
    if (system(cmd) != 0)
        return 1;
    return g_fail;
}
