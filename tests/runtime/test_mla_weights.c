/* The MLA tensors the runtime reads (runtime/mla.c, by checkpoint name, in runtime
 * orientation) hold the same values from a `helix model synth --family moe-mla` checkpoint
 * as from the synthetic weight source with its seed, with the shapes the runtime asks for.
 * usage: test_mla_weights CHECKPOINT_DIR */
#include "hlx_wsrc.h"
#include "hlx_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_fail;

#define CHECK(_c, ...) HLX_CHECK(g_fail, _c, __VA_ARGS__)

/* Reads self_attn.<what> of layer l (runtime rows x cols) from both sources, whole and as
 * the block [r0, +nr) x [c0, +nc), and compares them bitwise. */
static void cmp(hlx_wsrc_t *ck, hlx_wsrc_t *sy, int l, const char *what, int64_t rows,
                int64_t cols, int64_t r0, int64_t nr, int64_t c0, int64_t nc)
{
    char name[128], err[512] = "";
    float *a = calloc((size_t)(nr * nc), sizeof(float)), *b = calloc((size_t)(nr * nc), sizeof(float));
    hlx_status_t st;
    int64_t i, bad = 0;

    snprintf(name, sizeof(name), "model.layers.%d.self_attn.%s.weight", l, what);
    st = hlx_wsrc_read(ck, name, rows, cols, r0, nr, c0, nc, a, HLX_DTYPE_F32, nc, err,
                       sizeof(err));
    CHECK(st == HLX_OK, "checkpoint %s [%lld x %lld]: %s", name, (long long)rows,
          (long long)cols, err);
    st = hlx_wsrc_read(sy, name, rows, cols, r0, nr, c0, nc, b, HLX_DTYPE_F32, nc, err,
                       sizeof(err));
    CHECK(st == HLX_OK, "synthetic %s: %s", name, err);
    for (i = 0; i < nr * nc; i++)
        bad += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    CHECK(bad == 0, "%s: %lld of %lld values differ", name, (long long)bad, (long long)(nr * nc));
    printf("%s %s [%lld x %lld] block [%lld +%lld] x [%lld +%lld]\n", bad ? "not ok" : "ok",
           name, (long long)rows, (long long)cols, (long long)r0, (long long)nr, (long long)c0,
           (long long)nc);
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    hlx_wsrc_t ck, sy;
    const hlx_model_t *m;
    char err[1024] = "";
    int64_t H, Q, r, rope, nope, v, ql, qk;
    int l;

    if (argc != 2) {
        fprintf(stderr, "usage: test_mla_weights CHECKPOINT_DIR\n");
        return 2;
    }
    if (hlx_wsrc_ckpt(&ck, argv[1], err, sizeof(err)) != HLX_OK) {
        fprintf(stderr, "FAIL: %s\n", err);
        return 1;
    }
    m = &ck.cfg.m;
    CHECK(m->attn == HLX_ATTN_MLA, "the checkpoint is not MLA");
    CHECK(hlx_wsrc_synth(&sy, m, ck.seed, err, sizeof(err)) == HLX_OK, "synth: %s", err);
    H = m->hidden, Q = m->q_heads, r = m->kv_lora_rank, rope = m->qk_rope_dim;
    nope = m->qk_nope_dim, v = m->v_head_dim, ql = m->q_lora_rank, qk = nope + rope;
    CHECK(ql > 0, "expected q_lora_rank > 0");
    for (l = 0; l < m->layers; l++) {
        cmp(&ck, &sy, l, "q_a_proj", H, ql, 0, H, 0, ql);
        cmp(&ck, &sy, l, "q_a_layernorm", 1, ql, 0, 1, 0, ql);
        cmp(&ck, &sy, l, "q_b_proj", ql, Q * qk, 0, ql, 0, Q * qk);
        cmp(&ck, &sy, l, "kv_a_proj_with_mqa", H, r + rope, 0, H, 0, r + rope);
        cmp(&ck, &sy, l, "kv_a_layernorm", 1, r, 0, 1, 0, r);
        /* W_UK of the last head, W_UV of head 1 (the runtime's per-head blocks) */
        cmp(&ck, &sy, l, "kv_b_proj", r, Q * (nope + v), 0, r, (Q - 1) * (nope + v), nope);
        cmp(&ck, &sy, l, "kv_b_proj", r, Q * (nope + v), 0, r, (nope + v) + nope, v);
        /* W_o rows of heads [1, 3) */
        cmp(&ck, &sy, l, "o_proj", Q * v, H, v, 2 * v, 0, H);
    }
    hlx_wsrc_fini(&ck);
    hlx_wsrc_fini(&sy);
    printf("%s\n", g_fail ? "FAIL" : "PASS");
    return g_fail ? 1 : 0;
}
