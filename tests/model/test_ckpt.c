/* model: Hugging Face checkpoints written by `helix model synth` read back exactly (every
 * tensor, slices at odd offsets, the runtime's synthetic weights for the dense family, fp8
 * block scales), corrupt or mismatched checkpoints refused with a precise message and exit
 * code 2, and values that are not finite found in every dtype, named by `helix model info
 * --scan` (exit 2) and by decode. argv[1]: the helix binary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hlx_test_files.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hlx_ckpt.h"
#include "hlx_config.h"
#include "hlx_layout.h"
#include "hlx_synth.h"

/* the shared shell-command helper (hlx_test_files.h) by its short name */
#define sh hlx_test_sh

static const char *helix;
static char g_tmp[] = "/tmp/hlx_ckpt_test_XXXXXX";

static void synth(const char *name, const char *args)
{
    assert_int_equal(sh("rm -rf %s/%s && %s model synth --out %s/%s %s >/dev/null", g_tmp, name,
                        helix, g_tmp, name, args), 0);
}

/* `helix model info DIR`: exit code, stderr in err (caller frees). */
static int info(const char *name, char **err)
{
    char path[512];
    int rc;

    snprintf(path, sizeof(path), "%s/info.err", g_tmp);
    rc = sh("%s model info %s/%s >/dev/null 2>%s", helix, g_tmp, name, path);
    *err = hlx_test_slurp(path, NULL);
    return rc;
}

static hlx_ckpt_t *open_ok(const char *name, hlx_hf_config_t *cfg)
{
    char dir[512], err[1024] = "";
    hlx_ckpt_t *ck = NULL;

    snprintf(dir, sizeof(dir), "%s/%s", g_tmp, name);
    if (hlx_hf_config_load(dir, cfg, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    if (hlx_ckpt_open(dir, &ck, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    hlx_hf_settle(ck, cfg);
    if (hlx_hf_check(ck, cfg) != HLX_OK)
        fail_msg("%s", hlx_ckpt_error(ck));
    return ck;
}

/* ---- dense: the runtime's synthetic weights ----------------------------------------- */

static const hlx_hf_weight_t g_layer_w[] = {
    HLX_HFW_ATTN_NORM, HLX_HFW_WQ, HLX_HFW_WK, HLX_HFW_WV, HLX_HFW_WO, HLX_HFW_FFN_NORM,
    HLX_HFW_WGATE, HLX_HFW_WUP, HLX_HFW_WDOWN,
};
static const hlx_hf_weight_t g_global_w[] = { HLX_HFW_EMBED, HLX_HFW_FINAL_NORM, HLX_HFW_LMHEAD };

/* Reads runtime block [r0, +nr) x [c0, +nc) of w and compares it with hlx_synth_weight. */
static void check_block(hlx_ckpt_t *ck, const hlx_model_t *m, uint64_t seed, hlx_hf_weight_t w,
                        int layer, int64_t r0, int64_t nr, int64_t c0, int64_t nc,
                        hlx_dtype_t dt)
{
    int64_t rows, cols, i, j, ld = nc + 3; /* a wider destination: ld is honoured */
    size_t es = dt == HLX_DTYPE_BF16 ? 2 : 4;
    void *dst = malloc((size_t)(nr * ld) * es);
    uint64_t key = hlx_synth_key(seed, layer, (hlx_tensor_t)w);

    assert_non_null(dst);
    hlx_hf_weight_shape(m, w, &rows, &cols);
    if (hlx_hf_read(ck, m, w, layer, r0, nr, c0, nc, dst, dt, ld) != HLX_OK)
        fail_msg("%s", hlx_ckpt_error(ck));
    for (i = 0; i < nr; i++)
        for (j = 0; j < nc; j++) {
            float want = hlx_synth_weight(m, key, (hlx_tensor_t)w, r0 + i, c0 + j, cols);
            float got = hlx_dtype_load(dst, dt, (size_t)(i * ld + j));
            if (dt == HLX_DTYPE_BF16)
                want = hlx_round_dtype(want, HLX_DTYPE_BF16);
            if (got != want)
                fail_msg("weight %d layer %d (%lld, %lld): %.9g, expected %.9g", (int)w, layer,
                         (long long)(r0 + i), (long long)(c0 + j), got, want);
        }
    free(dst);
}

/* An odd column range inside cols: [37, +51) when it fits, else [1, cols - 2). */
static int64_t odd_first(int64_t cols)
{
    return cols >= 37 + 51 + 1 ? 37 : 1;
}

static int64_t odd_count(int64_t cols)
{
    return cols >= 37 + 51 + 1 ? 51 : cols - 2;
}

static void check_dense_as(const char *name, const char *model, uint64_t seed, hlx_dtype_t wdt)
{
    hlx_hf_config_t cfg;
    hlx_ckpt_t *ck = open_ok(name, &cfg);
    hlx_model_t tiny, *m = &cfg.m;
    char err[256];
    int64_t rows, cols;
    size_t k;
    int l;

    /* the config is the model description's (tiny by default), weights in the chosen dtype */
    assert_int_equal(hlx_model_load(model, &tiny, err, sizeof(err)), HLX_OK);
    assert_int_equal(m->attn, tiny.attn);
    assert_int_equal(m->hidden, tiny.hidden);
    if (strcmp(model, "tiny"))
        assert_int_equal(m->layers, tiny.layers);
    assert_int_equal(m->q_heads, tiny.q_heads);
    assert_int_equal(m->kv_heads, tiny.kv_heads);
    assert_int_equal(m->head_dim, tiny.head_dim);
    assert_int_equal(m->v_head_dim, tiny.v_head_dim);
    assert_int_equal(m->rope_dim, tiny.rope_dim);
    assert_int_equal(m->ffn, tiny.ffn);
    assert_int_equal(m->vocab, tiny.vocab);
    assert_true(m->rope_theta == tiny.rope_theta && m->norm_eps == tiny.norm_eps);
    assert_int_equal(m->kv_dtype, tiny.kv_dtype);
    assert_int_equal(m->weight_dtype, wdt);
    assert_int_equal(cfg.family, HLX_HF_DENSE);
    assert_int_equal(cfg.synth_seed, (int64_t)seed);

    for (l = 0; l < m->layers; l++)
        for (k = 0; k < sizeof(g_layer_w) / sizeof(g_layer_w[0]); k++) {
            hlx_hf_weight_shape(m, g_layer_w[k], &rows, &cols);
            check_block(ck, m, seed, g_layer_w[k], l, 0, rows, 0, cols, HLX_DTYPE_F32);
            /* odd offsets, and bf16 destinations */
            check_block(ck, m, seed, g_layer_w[k], l, rows > 1 ? 3 : 0, rows > 1 ? rows - 10 : 1,
                        odd_first(cols), odd_count(cols), HLX_DTYPE_BF16);
        }
    for (k = 0; k < sizeof(g_global_w) / sizeof(g_global_w[0]); k++) {
        hlx_hf_weight_shape(m, g_global_w[k], &rows, &cols);
        check_block(ck, m, seed, g_global_w[k], 0, 0, rows, 0, cols, HLX_DTYPE_F32);
        check_block(ck, m, seed, g_global_w[k], 0, rows > 1 ? 5 : 0, rows > 1 ? 7 : 1,
                    odd_first(cols), odd_count(cols), HLX_DTYPE_F32);
    }
    hlx_ckpt_close(ck);
}

static void check_dense(const char *name, uint64_t seed, hlx_dtype_t wdt)
{
    check_dense_as(name, "tiny", seed, wdt);
}

static void test_dense_roundtrip(void **state)
{
    (void)state;
    synth("dense_bf16", "--family dense --seed 7");
    check_dense("dense_bf16", 7, HLX_DTYPE_BF16);
    synth("dense_f32", "--family dense --dtype f32 --layers 3 --shards 3");
    check_dense("dense_f32", 1, HLX_DTYPE_F32);
    synth("dense_one", "--family dense --dtype f32 --layers 1 --shards 1");
    check_dense("dense_one", 1, HLX_DTYPE_F32);
    /* rewritten in place with fewer shards: the old index's other shards removed, a file
     * it does not name kept */
    assert_int_equal(sh("touch %s/dense_f32/notes.safetensors && %s model synth --family dense "
                        "--dtype f32 --layers 3 --out %s/dense_f32 --shards 2 >/dev/null",
                        g_tmp, helix, g_tmp), 0);
    check_dense("dense_f32", 1, HLX_DTYPE_F32);
    assert_int_equal(sh("test -f %s/dense_f32/model-00002-of-00002.safetensors && "
                        "test -f %s/dense_f32/notes.safetensors && "
                        "! ls %s/dense_f32/*-of-00003.safetensors 2>/dev/null", g_tmp, g_tmp,
                        g_tmp), 0);
    /* what the old index names but is no file (a folder), and an old index that is a
     * named pipe (not read: no wait), are left alone; the write succeeds */
    assert_int_equal(sh("D=%s/dense_f32 && mkdir $D/d.safetensors && python3 -c \"import json, "
                        "sys; p = sys.argv[1] + '/model.safetensors.index.json'; "
                        "i = json.load(open(p)); i['weight_map']['x'] = 'd.safetensors'; "
                        "json.dump(i, open(p, 'w'))\" $D && %s model synth --family dense "
                        "--dtype f32 --layers 3 --out $D --shards 3 >/dev/null && "
                        "test -d $D/d.safetensors", g_tmp, helix), 0);
    assert_int_equal(sh("D=%s/dense_f32 && rm $D/model.safetensors.index.json && "
                        "mkfifo $D/model.safetensors.index.json && timeout 60 %s model synth "
                        "--family dense --dtype f32 --layers 3 --out $D --shards 3 >/dev/null && "
                        "test -f $D/model.safetensors.index.json && rmdir $D/d.safetensors",
                        g_tmp, helix), 0);
    check_dense("dense_f32", 1, HLX_DTYPE_F32);
    /* rewritten in place with another layout: the stale index must not win, nor its
     * shards stay */
    assert_int_equal(sh("%s model synth --family dense --out %s/dense_f32 --shards 1 "
                        ">/dev/null", helix, g_tmp), 0);
    check_dense("dense_f32", 1, HLX_DTYPE_BF16);
    assert_int_equal(sh("test ! -e %s/dense_f32/model.safetensors.index.json && "
                        "! ls %s/dense_f32/model-0* 2>/dev/null", g_tmp, g_tmp), 0);
    /* another model's shapes: MQA, odd sizes, its RoPE base and epsilon */
    {
        char path[512];
        FILE *f;
        snprintf(path, sizeof(path), "%s/mqa.json", g_tmp);
        f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "{\"name\": \"mqa\", \"attn\": \"gqa\", \"layers\": 3, \"hidden\": 96, "
                   "\"q_heads\": 6, \"kv_heads\": 1, \"head_dim\": 16, \"ffn\": 200, "
                   "\"vocab\": 301, \"rope_theta\": 500000, \"norm_eps\": 1e-6}\n");
        fclose(f);
        assert_int_equal(sh("%s model synth --family dense --model %s --dtype f32 --seed 4 "
                            "--out %s/dense_mqa >/dev/null", helix, path, g_tmp), 0);
        check_dense_as("dense_mqa", path, 4, HLX_DTYPE_F32);
    }
}

/* The checkpoint really is in Hugging Face's layout: q_proj is [out][in] with each head's
 * rotary pairs half-split, read here without the mapping. */
static void test_dense_hf_layout(void **state)
{
    hlx_hf_config_t cfg;
    hlx_ckpt_t *ck;
    const hlx_ckpt_tensor_t *t;
    const hlx_model_t *m;
    float row[256];
    int64_t dk, h, i, x;

    (void)state;
    synth("dense_layout", "--family dense --dtype f32 --seed 3");
    ck = open_ok("dense_layout", &cfg);
    m = &cfg.m;
    dk = m->head_dim;
    t = hlx_ckpt_find(ck, "model.layers.1.self_attn.q_proj.weight");
    assert_non_null(t);
    assert_int_equal(t->shape[0], m->q_heads * dk);
    assert_int_equal(t->shape[1], m->hidden);
    for (h = 0; h < m->q_heads; h += 3)
        for (i = 0; i < dk / 2; i += 5)
            for (x = 0; x < 2; x++) {
                int64_t hrow = h * dk + x * dk / 2 + i, c;
                uint64_t key = hlx_synth_key(3, 1, HLX_T_WQ);
                assert_int_equal(hlx_ckpt_read_slice(ck, t, 0, hrow, 1, row, HLX_DTYPE_F32),
                                 HLX_OK);
                for (c = 0; c < m->hidden; c += 17)
                    assert_true(row[c] == hlx_synth_weight(m, key, HLX_T_WQ, c, h * dk + 2 * i + x,
                                                           m->q_heads * dk));
            }
    hlx_ckpt_close(ck);
}

/* The calls docs/model.md gives the runtime fill every rank's buffers of a KVP x TPA layout
 * with what its synthetic fill puts there (runtime/engine.c: hlx_fill_cols and the W_o and
 * W_down row loops), element for element. */
static void test_rank_fill(void **state)
{
    /* KVP 5 x TPA 2: heads in 2 pieces, W_o's row blocks start mid-head */
    static const int layouts[][2] = { { 1, 1 }, { 2, 2 }, { 1, 4 }, { 4, 2 }, { 5, 2 } };
    hlx_hf_config_t cfg;
    hlx_ckpt_t *ck;
    const hlx_model_t *m;
    size_t li;
    int r, l;
    char err[256];

    (void)state;
    synth("dense_rank", "--family dense --dtype f32 --seed 11");
    ck = open_ok("dense_rank", &cfg);
    m = &cfg.m;
    for (li = 0; li < sizeof(layouts) / sizeof(layouts[0]); li++)
        for (r = 0; r < layouts[li][0] * layouts[li][1]; r++) {
            hlx_layout_t L;
            const int64_t H = m->hidden, dk = m->head_dim, dv = m->v_head_dim, F = m->ffn;
            int64_t qkv_cols, Fc, i, j, pw;
            float *wqkv, *wo, *wgu, *wdown, *lm;

            assert_int_equal(hlx_layout_init(m, layouts[li][0], layouts[li][1], 16, r, &L, err,
                                             sizeof(err)), HLX_OK);
            qkv_cols = (int64_t)L.q_local * dk + (int64_t)L.kv_local * (dk + dv);
            Fc = L.ffn_count;
            wqkv = calloc((size_t)(H * qkv_cols), sizeof(float));
            pw = hlx_layout_piece_dim(&L, (int)dv); /* W_o rows of a piece of a head */
            wo = calloc((size_t)(L.q_slice * pw * H), sizeof(float));
            wgu = calloc((size_t)(H * 2 * Fc), sizeof(float));
            wdown = calloc((size_t)(Fc * H), sizeof(float));
            lm = calloc((size_t)(H * L.vocab_count), sizeof(float));
            assert_true(wqkv && wo && wgu && wdown && lm);
            for (l = 0; l < m->layers; l++) {
                uint64_t kq = hlx_synth_key(11, l, HLX_T_WQ), kk = hlx_synth_key(11, l, HLX_T_WK),
                         kv = hlx_synth_key(11, l, HLX_T_WV), ko = hlx_synth_key(11, l, HLX_T_WO),
                         kg = hlx_synth_key(11, l, HLX_T_WGATE), ku = hlx_synth_key(11, l, HLX_T_WUP),
                         kd = hlx_synth_key(11, l, HLX_T_WDOWN);
                assert_int_equal(hlx_hf_read(ck, m, HLX_HFW_WQ, l, 0, H, L.q_first * dk,
                                             L.q_local * dk, wqkv, HLX_DTYPE_F32, qkv_cols), 0);
                assert_int_equal(hlx_hf_read(ck, m, HLX_HFW_WK, l, 0, H, L.kv_first * dk,
                                             L.kv_local * dk, wqkv + L.q_local * dk,
                                             HLX_DTYPE_F32, qkv_cols), 0);
                assert_int_equal(hlx_hf_read(ck, m, HLX_HFW_WV, l, 0, H, L.kv_first * dv,
                                             L.kv_local * dv,
                                             wqkv + (L.q_local + L.kv_local) * dk,
                                             HLX_DTYPE_F32, qkv_cols), 0);
                assert_int_equal(hlx_hf_read(ck, m, HLX_HFW_WO, l, L.q_slice_first * pw,
                                             L.q_slice * pw, 0, H, wo, HLX_DTYPE_F32, H), 0);
                assert_int_equal(hlx_hf_read(ck, m, HLX_HFW_WGATE, l, 0, H, L.ffn_first, Fc,
                                             wgu, HLX_DTYPE_F32, 2 * Fc), 0);
                assert_int_equal(hlx_hf_read(ck, m, HLX_HFW_WUP, l, 0, H, L.ffn_first, Fc,
                                             wgu + Fc, HLX_DTYPE_F32, 2 * Fc), 0);
                assert_int_equal(hlx_hf_read(ck, m, HLX_HFW_WDOWN, l, L.ffn_first, Fc, 0, H,
                                             wdown, HLX_DTYPE_F32, H), 0);
                for (i = 0; i < H; i++) {
                    for (j = 0; j < L.q_local * dk; j++)
                        assert_true(wqkv[i * qkv_cols + j] ==
                                    hlx_synth_weight(m, kq, HLX_T_WQ, i, L.q_first * dk + j,
                                                     m->q_heads * dk));
                    for (j = 0; j < L.kv_local * dk; j++)
                        assert_true(wqkv[i * qkv_cols + L.q_local * dk + j] ==
                                    hlx_synth_weight(m, kk, HLX_T_WK, i, L.kv_first * dk + j,
                                                     m->kv_heads * dk));
                    for (j = 0; j < L.kv_local * dv; j++)
                        assert_true(wqkv[i * qkv_cols + (L.q_local + L.kv_local) * dk + j] ==
                                    hlx_synth_weight(m, kv, HLX_T_WV, i, L.kv_first * dv + j,
                                                     m->kv_heads * dv));
                    for (j = 0; j < Fc; j++) {
                        assert_true(wgu[i * 2 * Fc + j] ==
                                    hlx_synth_weight(m, kg, HLX_T_WGATE, i, L.ffn_first + j, F));
                        assert_true(wgu[i * 2 * Fc + Fc + j] ==
                                    hlx_synth_weight(m, ku, HLX_T_WUP, i, L.ffn_first + j, F));
                    }
                }
                for (i = 0; i < L.q_slice * pw; i++)
                    for (j = 0; j < H; j++)
                        assert_true(wo[i * H + j] ==
                                    hlx_synth_weight(m, ko, HLX_T_WO, L.q_slice_first * pw + i, j, H));
                for (i = 0; i < Fc; i++)
                    for (j = 0; j < H; j++)
                        assert_true(wdown[i * H + j] ==
                                    hlx_synth_weight(m, kd, HLX_T_WDOWN, L.ffn_first + i, j, H));
            }
            assert_int_equal(hlx_hf_read(ck, m, HLX_HFW_LMHEAD, 0, 0, H, L.vocab_first,
                                         L.vocab_count, lm, HLX_DTYPE_F32, L.vocab_count), 0);
            for (i = 0; i < H; i++)
                for (j = 0; j < L.vocab_count; j++)
                    assert_true(lm[i * L.vocab_count + j] ==
                                hlx_synth_weight(m, hlx_synth_key(11, 0, HLX_T_LMHEAD),
                                                 HLX_T_LMHEAD, i, L.vocab_first + j, m->vocab));
            free(wqkv);
            free(wo);
            free(wgu);
            free(wdown);
            free(lm);
        }
    hlx_ckpt_close(ck);
}

/* A rank touches only its slice: what is copied out is the slice's bytes. */
static void test_slice_bytes(void **state)
{
    hlx_hf_config_t cfg;
    hlx_ckpt_t *ck;
    float *dst;
    uint64_t before;
    const hlx_model_t *m;

    (void)state;
    ck = open_ok("dense_bf16", &cfg);
    m = &cfg.m;
    dst = malloc(sizeof(float) * (size_t)m->hidden * (size_t)m->ffn);
    assert_non_null(dst);
    assert_int_equal(hlx_ckpt_bytes_read(ck), 0);
    /* TPF rank 1 of 4 of W_gate: columns [F/4, F/2) of the runtime [H][F] */
    assert_int_equal(hlx_hf_read(ck, m, HLX_HFW_WGATE, 0, 0, m->hidden, m->ffn / 4, m->ffn / 4,
                                 dst, HLX_DTYPE_F32, m->ffn / 4), HLX_OK);
    assert_int_equal(hlx_ckpt_bytes_read(ck), (uint64_t)m->hidden * (uint64_t)(m->ffn / 4) * 2);
    before = hlx_ckpt_bytes_read(ck);
    /* heads 2..3 of W_q (RoPE-reordered rows) */
    assert_int_equal(hlx_hf_read(ck, m, HLX_HFW_WQ, 1, 0, m->hidden, 2 * m->head_dim,
                                 2 * m->head_dim, dst, HLX_DTYPE_F32, 2 * m->head_dim), HLX_OK);
    assert_int_equal(hlx_ckpt_bytes_read(ck) - before,
                     (uint64_t)m->hidden * (uint64_t)(2 * m->head_dim) * 2);
    free(dst);
    hlx_ckpt_close(ck);
}

/* ---- moe-mla: every tensor, fp8 with block scales ------------------------------------ */

static void check_moe(const char *name, uint64_t seed)
{
    hlx_hf_config_t cfg;
    hlx_ckpt_t *ck = open_ok(name, &cfg);
    hlx_hf_expect_t *list = NULL;
    size_t n = 0, k;
    char err[256];
    int fp8_seen = 0;

    assert_int_equal(cfg.family, HLX_HF_MOE_MLA);
    assert_int_equal(cfg.m.attn, HLX_ATTN_MLA);
    assert_int_equal(cfg.m.q_lora_rank, 96);
    assert_int_equal(cfg.m.kv_lora_rank, 64);
    assert_int_equal(cfg.m.qk_rope_dim, 16);
    assert_int_equal(cfg.m.qk_nope_dim, 32);
    assert_int_equal(cfg.m.v_head_dim, 32);
    assert_int_equal(cfg.m.experts, 8);
    assert_int_equal(cfg.m.top_k, 2);
    assert_int_equal(cfg.m.shared_experts, 1);
    assert_int_equal(cfg.m.expert_ffn, 64);
    assert_int_equal(cfg.m.dense_layers, 1);
    assert_string_equal(cfg.scoring_func, "sigmoid");
    assert_true(cfg.norm_topk_prob && cfg.routed_scaling_factor == 2.5);
    assert_int_equal(hlx_hf_expect(&cfg, &list, &n, err, sizeof(err)), HLX_OK);
    for (k = 0; k < n; k++) {
        const hlx_hf_expect_t *e = &list[k];
        const hlx_ckpt_tensor_t *t = hlx_ckpt_find(ck, e->name), *s;
        int64_t rows = e->ndim == 2 ? e->shape[0] : 1, cols = e->ndim == 2 ? e->shape[1] : e->shape[0];
        int64_t r, c, c0 = cols > 7 ? 5 : 0, nc = cols > 7 ? cols - 7 : cols;
        float *all, *part;
        const hlx_hf_expect_t *se = NULL;

        assert_non_null(t);
        if (e->cls == HLX_HFC_SCALE)
            continue; /* checked through their weights */
        all = malloc(sizeof(float) * (size_t)(rows * cols));
        part = malloc(sizeof(float) * (size_t)(rows * nc));
        assert_true(all && part);
        if (e->dtype == HLX_ST_F8_E4M3) {
            se = &list[k + 1];
            s = hlx_ckpt_find(ck, se->name);
            assert_non_null(s);
            assert_ptr_equal(t->scale, s);
            fp8_seen = 1;
        }
        if (hlx_ckpt_read_slice(ck, t, 0, 0, e->shape[0], all, HLX_DTYPE_F32) != HLX_OK)
            fail_msg("%s", hlx_ckpt_error(ck));
        if (hlx_ckpt_read_slice(ck, t, e->ndim - 1, c0, nc, part, HLX_DTYPE_F32) != HLX_OK)
            fail_msg("%s", hlx_ckpt_error(ck));
        for (r = 0; r < rows; r++)
            for (c = 0; c < cols; c++) {
                float v = hlx_ckpt_synth_value(seed, e, r, c), want;
                if (e->dtype == HLX_ST_F8_E4M3)
                    want = hlx_fp8_to_f32(hlx_f32_to_fp8(v)) *
                           hlx_ckpt_synth_value(seed, se, r / cfg.block_rows, c / cfg.block_cols);
                else if (e->dtype == HLX_ST_BF16)
                    want = hlx_bf16_to_f32(hlx_f32_to_bf16(v));
                else
                    want = v;
                if (all[r * cols + c] != want)
                    fail_msg("%s (%lld, %lld): %.9g, expected %.9g", e->name, (long long)r,
                             (long long)c, all[r * cols + c], want);
                if (c >= c0 && c < c0 + nc && part[r * nc + c - c0] != want)
                    fail_msg("%s slice (%lld, %lld): %.9g, expected %.9g", e->name, (long long)r,
                             (long long)c, part[r * nc + c - c0], want);
            }
        free(all);
        free(part);
    }
    assert_int_equal(fp8_seen, cfg.fp8);
    free(list);
    hlx_ckpt_close(ck);
}

static void test_moe_roundtrip(void **state)
{
    (void)state;
    synth("moe_bf16", "--family moe-mla --seed 5 --layers 3 --shards 4");
    check_moe("moe_bf16", 5);
    synth("moe_fp8", "--family moe-mla --dtype fp8 --seed 9");
    check_moe("moe_fp8", 9);
}

static void test_fp8_codec(void **state)
{
    int b;

    (void)state;
    for (b = 0; b < 256; b++) {
        float v = hlx_fp8_to_f32((uint8_t)b);
        if ((b & 0x7f) == 0x7f)
            continue; /* NaN */
        assert_int_equal(hlx_f32_to_fp8(v) & (v == 0.0f ? 0x7f : 0xff),
                         b & (v == 0.0f ? 0x7f : 0xff));
    }
    assert_int_equal(hlx_f32_to_fp8(1000.0f), 0x7e);     /* saturates at 448 */
    assert_int_equal(hlx_f32_to_fp8(-1000.0f), 0xfe);
    assert_true(hlx_fp8_to_f32(hlx_f32_to_fp8(1.0625f)) == 1.0f); /* tie to even: 1.0 */
}

/* ---- refusals ------------------------------------------------------------------------ */

/* Rewrites the header of a safetensors file through edit (the data kept as is). */
static void rewrite_header(const char *path, void (*edit)(json_t *hdr))
{
    size_t len, i;
    uint8_t *buf = (uint8_t *)hlx_test_slurp(path, &len);
    uint64_t hlen = 0, nlen;
    json_t *hdr;
    json_error_t je;
    char *text;
    FILE *f;

    for (i = 0; i < 8; i++)
        hlen |= (uint64_t)buf[i] << (8 * i);
    hdr = json_loadb((char *)buf + 8, hlen, 0, &je);
    assert_non_null(hdr);
    edit(hdr);
    text = json_dumps(hdr, JSON_COMPACT | JSON_PRESERVE_ORDER);
    nlen = strlen(text);
    f = fopen(path, "wb");
    assert_non_null(f);
    for (i = 0; i < 8; i++)
        fputc((int)(nlen >> (8 * i)) & 0xff, f);
    fwrite(text, 1, nlen, f);
    fwrite(buf + 8 + hlen, 1, len - 8 - hlen, f);
    fclose(f);
    free(text);
    free(buf);
    json_decref(hdr);
}

#define NORM "model.layers.0.input_layernorm.weight"
#define QPROJ "model.layers.0.self_attn.q_proj.weight"
#define SHARD1 "model-00001-of-00002.safetensors"
#define SHARD2 "model-00002-of-00002.safetensors"

static void set_offsets(json_t *hdr, const char *name, json_int_t b, json_int_t e)
{
    json_object_set_new(json_object_get(hdr, name), "data_offsets", json_pack("[I, I]", b, e));
}

static json_int_t offset_of(json_t *hdr, const char *name, int which)
{
    return json_integer_value(json_array_get(json_object_get(json_object_get(hdr, name),
                                                             "data_offsets"), (size_t)which));
}

static void edit_overlap(json_t *hdr)
{
    /* the norm (512 bytes) moved 2 bytes back: overlaps whatever precedes it */
    json_int_t b = offset_of(hdr, NORM, 0);
    set_offsets(hdr, NORM, b - 2, b + 510);
}
static void edit_reversed(json_t *hdr)
{
    set_offsets(hdr, NORM, offset_of(hdr, NORM, 1), offset_of(hdr, NORM, 0));
}
static void edit_past_end(json_t *hdr)
{
    set_offsets(hdr, NORM, (json_int_t)1 << 40, ((json_int_t)1 << 40) + 512);
}
static void edit_shape(json_t *hdr)
{
    json_object_set_new(json_object_get(hdr, NORM), "shape", json_pack("[i]", 255));
}
static void edit_dtype(json_t *hdr)
{
    json_object_set_new(json_object_get(hdr, NORM), "dtype", json_string("F17"));
}
static void edit_huge_shape(json_t *hdr)
{
    json_object_set_new(json_object_get(hdr, NORM), "shape",
                        json_pack("[I, I, I]", (json_int_t)1 << 40, (json_int_t)1 << 40, 64));
}
static void edit_remove(json_t *hdr)
{
    json_object_del(hdr, NORM);
}

static void expect_refused(const char *name, const char *needle1, const char *needle2)
{
    char *err;
    int rc = info(name, &err);

    if (rc != 2 || strstr(err, needle1) == NULL || (needle2 && strstr(err, needle2) == NULL))
        fail_msg("%s: exit %d, stderr: %s (wanted '%s' and '%s')", name, rc, err, needle1,
                 needle2 ? needle2 : "");
    free(err);
}

/* A fresh dense bf16 checkpoint to spoil; which shard holds the first layer's norm. */
static const char *spoilable(const char *name)
{
    char path[512];
    json_t *idx;
    json_error_t je;
    const char *shard;

    synth(name, "--family dense --seed 2");
    snprintf(path, sizeof(path), "%s/%s/model.safetensors.index.json", g_tmp, name);
    idx = json_load_file(path, 0, &je);
    assert_non_null(idx);
    shard = json_string_value(json_object_get(json_object_get(idx, "weight_map"), NORM));
    assert_non_null(shard);
    shard = !strcmp(shard, SHARD1) ? SHARD1 : SHARD2;
    json_decref(idx);
    return shard;
}

static void spoil_header(const char *name, void (*edit)(json_t *))
{
    char path[512];
    const char *shard = spoilable(name);

    snprintf(path, sizeof(path), "%s/%s/%s", g_tmp, name, shard);
    rewrite_header(path, edit);
}

static void test_bad_headers(void **state)
{
    char path[512];

    (void)state;
    spoil_header("overlap", edit_overlap);
    expect_refused("overlap", "overlap", NULL);
    spoil_header("reversed", edit_reversed);
    expect_refused("reversed", "end before they begin", NORM);
    spoil_header("past_end", edit_past_end);
    expect_refused("past_end", "run past", NORM);
    spoil_header("shape", edit_shape);
    expect_refused("shape", "shape x BF16 needs 510", NORM);
    spoil_header("dtype17", edit_dtype);
    expect_refused("dtype17", "unknown dtype \"F17\"", NORM);
    spoil_header("huge", edit_huge_shape);
    expect_refused("huge", "overflows", NORM);
    /* the bytes of a removed tensor are a hole */
    spoil_header("removed", edit_remove);
    expect_refused("removed", "unaccounted for", NULL);

    /* truncated shard */
    spoilable("truncated");
    assert_int_equal(sh("truncate -s -100 %s/truncated/%s", g_tmp, SHARD2), 0);
    expect_refused("truncated", SHARD2, "truncated?");
    /* trailing bytes */
    spoilable("trailing");
    assert_int_equal(sh("printf 'xxxx' >> %s/trailing/%s", g_tmp, SHARD1), 0);
    expect_refused("trailing", "trailing bytes", SHARD1);
    /* a header size beyond the limit */
    spoilable("bighdr");
    snprintf(path, sizeof(path), "%s/bighdr/%s", g_tmp, SHARD1);
    assert_int_equal(sh("printf '\\000\\000\\000\\100\\000\\000\\000\\000' | dd of=%s bs=1 "
                        "conv=notrunc status=none", path), 0);
    expect_refused("bighdr", "larger than the 100000000 accepted", SHARD1);
    /* missing shard */
    spoilable("noshard");
    assert_int_equal(sh("rm %s/noshard/%s", g_tmp, SHARD2), 0);
    expect_refused("noshard", "names shard " SHARD2 ", which is missing", NULL);
    /* index entries that disagree with the shards */
    {
        json_t *idx;
        json_error_t je;
        const char *shard = spoilable("badindex");
        snprintf(path, sizeof(path), "%s/badindex/model.safetensors.index.json", g_tmp);
        idx = json_load_file(path, 0, &je);
        assert_non_null(idx);
        json_object_set_new(json_object_get(idx, "weight_map"), NORM,
                            json_string(!strcmp(shard, SHARD1) ? SHARD2 : SHARD1));
        assert_int_equal(json_dump_file(idx, path, JSON_INDENT(2)), 0);
        json_decref(idx);
        expect_refused("badindex", "weight_map puts " NORM, "it is stored in another shard");

        spoilable("ghost");
        snprintf(path, sizeof(path), "%s/ghost/model.safetensors.index.json", g_tmp);
        idx = json_load_file(path, 0, &je);
        assert_non_null(idx);
        json_object_set_new(json_object_get(idx, "weight_map"), "model.ghost.weight",
                            json_string(SHARD1));
        assert_int_equal(json_dump_file(idx, path, JSON_INDENT(2)), 0);
        json_decref(idx);
        expect_refused("ghost", "weight_map puts model.ghost.weight", "that shard does not hold it");
    }
    /* bad config.json: file:line:column */
    spoilable("badcfg");
    assert_int_equal(sh("sed -i 's/\"LlamaForCausalLM\"/\"GPT2LMHeadModel\"/' %s/badcfg/config.json",
                        g_tmp), 0);
    expect_refused("badcfg", "config.json:3:", "GPT2LMHeadModel is not supported");
    { /* whole, naming where the classes read are listed (a list in the message was cut) */
        char *err;
        (void)info("badcfg", &err);
        assert_non_null(strstr(err, "`helix model archs` lists the"));
        assert_non_null(strstr(err, "classes read (docs/model.md)"));
        free(err);
    }
}

/* helix model archs: every class of the reader's table, in its order, with its model_type,
 * whether its text model alone is read and its base (a layer family for every class; the
 * text classes for those whose text_config chooses, and only for those); --json the same;
 * a stray argument exit 2. */
static void test_archs_listed(void **state)
{
    static const struct {
        const char *arch, *base;
    } known[] = {
        { "LlamaForCausalLM", "llama" },
        { "MistralForCausalLM", "mistral" },
        { "Mistral3ForConditionalGeneration", "mistral" },
        { "Qwen2_5_VLForConditionalGeneration", "qwen2" },
        { "Qwen3VLMoeForConditionalGeneration", "qwen3_moe" },
        { "Gemma3ForConditionalGeneration", "gemma3" },
        { "Gemma3ForCausalLM", "gemma3" },
        { "DeepseekV2ForCausalLM", "deepseek_v2" },
        { "LlavaForConditionalGeneration", "text_config" },
        { "SmolVLMForConditionalGeneration", "text_config" },
    };
    char path[512], *out;
    const char *mt, *arch;
    json_t *a;
    json_error_t je;
    size_t i, k, seen = 0;
    int nested;

    (void)state;
    snprintf(path, sizeof(path), "%s/archs.json", g_tmp);
    assert_int_equal(sh("%s model archs --json >%s", helix, path), 0);
    a = json_load_file(path, 0, &je);
    assert_non_null(a);
    assert_int_equal(json_array_size(a), hlx_hf_arch_count());
    for (i = 0; (arch = hlx_hf_arch(i, &mt, &nested)) != NULL; i++) {
        json_t *e = json_array_get(a, i);
        assert_string_equal(json_string_value(json_object_get(e, "class")), arch);
        assert_string_equal(json_string_value(json_object_get(e, "model_type")), mt);
        assert_int_equal(json_is_true(json_object_get(e, "text_only")), nested);
        assert_true(json_is_string(json_object_get(e, "base")));
        assert_string_equal(json_string_value(json_object_get(e, "base")), hlx_hf_arch_base(i));
        assert_true(hlx_hf_arch_base(i)[0] != '\0');
        /* text_bases where, and only where, text_config chooses; each a base of its own */
        assert_int_equal(json_object_get(e, "text_bases") != NULL,
                         !strcmp(hlx_hf_arch_base(i), "text_config"));
        for (k = 0; k < json_array_size(json_object_get(e, "text_bases")); k++) {
            json_t *tb = json_array_get(json_object_get(e, "text_bases"), k);
            assert_string_equal(json_string_value(tb), hlx_hf_arch_text_base(i, k));
            assert_string_not_equal(json_string_value(tb), "text_config");
        }
        for (k = 0; k < sizeof(known) / sizeof(known[0]); k++)
            if (!strcmp(arch, known[k].arch)) {
                assert_string_equal(hlx_hf_arch_base(i), known[k].base);
                seen++;
            }
        if (!strcmp(arch, "LlavaForConditionalGeneration")) { /* any of the text classes */
            assert_int_equal(json_array_size(json_object_get(e, "text_bases")), 4);
            assert_string_equal(hlx_hf_arch_text_base(i, 0), "llama");
            assert_string_equal(hlx_hf_arch_text_base(i, 2), "qwen2");
        }
        if (!strcmp(arch, "Idefics3ForConditionalGeneration")) /* Llama's alone */
            assert_int_equal(json_array_size(json_object_get(e, "text_bases")), 1);
    }
    assert_int_equal(seen, sizeof(known) / sizeof(known[0]));
    assert_null(hlx_hf_arch_base(hlx_hf_arch_count()));
    json_decref(a);
    assert_true(hlx_hf_arch_count() > 20 && hlx_hf_arch(hlx_hf_arch_count(), &mt, &nested) == NULL);
    snprintf(path, sizeof(path), "%s/archs.txt", g_tmp);
    assert_int_equal(sh("%s model archs >%s", helix, path), 0);
    out = hlx_test_slurp(path, NULL);
    assert_non_null(strstr(out, "LlamaForCausalLM"));
    assert_non_null(strstr(out, "Qwen3VLMoeForConditionalGeneration       qwen3_vl_moe       text"));
    assert_non_null(strstr(out, "MistralForCausalLM                       mistral                 mistral\n"));
    assert_non_null(strstr(out, "Idefics3ForConditionalGeneration         idefics3           text "
                                "text_config (llama)\n"));
    assert_non_null(strstr(out, "text_config (llama, mistral, qwen2, qwen3)\n"));
    free(out);
    assert_int_equal(sh("%s model archs --bogus 2>/dev/null", helix), 2);
}

/* Checkpoints whose files are sound but whose tensors disagree with config.json. */
typedef struct {
    const char *drop, *reshape, *retype, *extra, *dup;
} mutation_t;

static hlx_status_t zero_fill(void *ctx, const hlx_hf_expect_t *t, size_t idx, int64_t row,
                              float *dst)
{
    int64_t c, cols = t->ndim == 2 ? t->shape[1] : t->shape[0];

    (void)ctx;
    for (c = 0; c < cols; c++) /* not symmetric in (row, col): a transposition shows */
        dst[c] = (float)((row * 7 + c * 3 + (int64_t)idx) % 13) * 0.25f;
    return HLX_OK;
}

static void write_mutated(const char *name, const mutation_t *mu, int nshards)
{
    hlx_hf_config_t cfg;
    hlx_hf_expect_t *list = NULL, *out;
    size_t n = 0, k, j = 0;
    char dir[512], err[1024];

    synth(name, "--family dense --layers 1");
    snprintf(dir, sizeof(dir), "%s/%s", g_tmp, name);
    assert_int_equal(sh("rm -f %s/*.safetensors %s/*.index.json", dir, dir), 0);
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_int_equal(hlx_hf_expect(&cfg, &list, &n, err, sizeof(err)), HLX_OK);
    out = calloc(n + 2, sizeof(*out));
    assert_non_null(out);
    for (k = 0; k < n; k++) {
        if (mu->drop && !strcmp(list[k].name, mu->drop))
            continue;
        out[j] = list[k];
        if (mu->reshape && !strcmp(list[k].name, mu->reshape))
            out[j].shape[0] += 1;
        if (mu->retype && !strcmp(list[k].name, mu->retype))
            out[j].dtype = HLX_ST_F32;
        j++;
    }
    for (k = 0; mu->dup && k < n; k++)
        if (!strcmp(list[k].name, mu->dup))
            out[j++] = list[k]; /* last: in the last shard, the first copy in the first */
    if (mu->extra) {
        out[j] = list[0];
        snprintf(out[j].name, sizeof(out[j].name), "%s", mu->extra);
        j++;
    }
    if (hlx_ckpt_write(dir, out, j, nshards, NULL, zero_fill, NULL, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    free(out);
    free(list);
}

static void test_mismatched(void **state)
{
    mutation_t mu;

    (void)state;
    memset(&mu, 0, sizeof(mu));
    mu.drop = QPROJ;
    write_mutated("drop", &mu, 2);
    expect_refused("drop", "tensor " QPROJ " is missing", NULL);

    memset(&mu, 0, sizeof(mu));
    mu.reshape = QPROJ;
    write_mutated("reshape", &mu, 2);
    expect_refused("reshape", QPROJ ": shape [257, 256], expected [256, 256]", NULL);

    memset(&mu, 0, sizeof(mu));
    mu.retype = NORM;
    write_mutated("retype", &mu, 2);
    expect_refused("retype", NORM ": dtype F32, expected BF16 (config.json: torch_dtype bfloat16)",
                   NULL);

    memset(&mu, 0, sizeof(mu));
    mu.extra = "model.layers.0.self_attn.q_norm.weight";
    write_mutated("extra", &mu, 2);
    expect_refused("extra", "q_norm.weight is not part of a LlamaForCausalLM", NULL);
    /* RoPE frequency buffers of older conversions are tolerated */
    memset(&mu, 0, sizeof(mu));
    mu.extra = "model.layers.0.self_attn.rotary_emb.inv_freq";
    write_mutated("inv_freq", &mu, 2);
    {
        char *err;
        assert_int_equal(info("inv_freq", &err), 0);
        free(err);
    }

    /* the same name in two shards */
    memset(&mu, 0, sizeof(mu));
    mu.dup = NORM;
    write_mutated("dup", &mu, 2);
    expect_refused("dup", "tensor " NORM " is stored twice", NULL);
}

/* tie_word_embeddings: no lm_head.weight; the output head is the embedding, transposed. */
static void test_tied(void **state)
{
    mutation_t mu;
    hlx_hf_config_t cfg;
    hlx_ckpt_t *ck;
    float *head, *emb;
    int64_t H, V, i, v;
    char *err;

    (void)state;
    memset(&mu, 0, sizeof(mu));
    mu.drop = "lm_head.weight";
    write_mutated("tied", &mu, 2);
    expect_refused("tied", "tensor lm_head.weight is missing", NULL);
    assert_int_equal(sh("sed -i 's/\"tie_word_embeddings\": false/\"tie_word_embeddings\": true/' "
                        "%s/tied/config.json", g_tmp), 0);
    assert_int_equal(info("tied", &err), 0);
    free(err);
    ck = open_ok("tied", &cfg);
    assert_true(cfg.tie_word_embeddings);
    H = cfg.m.hidden;
    V = cfg.m.vocab;
    head = malloc(sizeof(float) * (size_t)(H * 40));
    emb = malloc(sizeof(float) * (size_t)(40 * H));
    assert_true(head && emb);
    assert_int_equal(hlx_hf_read(ck, &cfg.m, HLX_HFW_LMHEAD, 0, 0, H, V - 40, 40, head,
                                 HLX_DTYPE_F32, 40), HLX_OK);
    assert_int_equal(hlx_hf_read(ck, &cfg.m, HLX_HFW_EMBED, 0, V - 40, 40, 0, H, emb,
                                 HLX_DTYPE_F32, H), HLX_OK);
    for (i = 0; i < H; i++)
        for (v = 0; v < 40; v++)
            assert_true(head[i * 40 + v] == emb[v * H + i]);
    free(head);
    free(emb);
    hlx_ckpt_close(ck);
}

static double expect_params(const hlx_hf_config_t *cfg)
{
    hlx_hf_expect_t *list = NULL;
    size_t n = 0, k;
    double p = 0;
    char err[256];

    assert_int_equal(hlx_hf_expect(cfg, &list, &n, err, sizeof(err)), HLX_OK);
    for (k = 0; k < n; k++)
        if (list[k].cls != HLX_HFC_SCALE)
            p += (double)list[k].shape[0] * (double)(list[k].ndim == 2 ? list[k].shape[1] : 1);
    free(list);
    return p;
}

/* The published config.json files give the presets' shapes and parameter counts. */
static void test_configs(void **state)
{
    hlx_hf_config_t cfg;
    hlx_model_t pre;
    char err[1024] = "", dir[512];
    double p;

    (void)state;
    snprintf(dir, sizeof(dir), "%s/tests/model/data/hf/deepseek-v3", HLX_SOURCE_ROOT);
    if (hlx_hf_config_load(dir, &cfg, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    assert_int_equal(hlx_model_load("deepseek-r1", &pre, err, sizeof(err)), HLX_OK);
    assert_int_equal(cfg.family, HLX_HF_MOE_MLA);
    assert_int_equal(cfg.m.attn, pre.attn);
    assert_int_equal(cfg.m.layers, pre.layers);
    assert_int_equal(cfg.m.hidden, pre.hidden);
    assert_int_equal(cfg.m.q_heads, pre.q_heads);
    assert_int_equal(cfg.m.kv_heads, pre.kv_heads);
    assert_int_equal(cfg.m.head_dim, pre.head_dim);
    assert_int_equal(cfg.m.v_head_dim, pre.v_head_dim);
    assert_int_equal(cfg.m.ffn, pre.ffn);
    assert_int_equal(cfg.m.vocab, pre.vocab);
    assert_int_equal(cfg.m.rope_dim, pre.rope_dim);
    assert_int_equal(cfg.m.q_lora_rank, pre.q_lora_rank);
    assert_int_equal(cfg.m.kv_lora_rank, pre.kv_lora_rank);
    assert_int_equal(cfg.m.qk_nope_dim, pre.qk_nope_dim);
    assert_int_equal(cfg.m.qk_rope_dim, pre.qk_rope_dim);
    assert_int_equal(cfg.m.experts, pre.experts);
    assert_int_equal(cfg.m.top_k, pre.top_k);
    assert_int_equal(cfg.m.shared_experts, pre.shared_experts);
    assert_int_equal(cfg.m.expert_ffn, pre.expert_ffn);
    assert_int_equal(cfg.m.dense_layers, pre.dense_layers);
    assert_true(cfg.fp8 && cfg.block_rows == 128 && cfg.block_cols == 128);
    assert_int_equal(cfg.m.weight_dtype, HLX_DTYPE_FP8);
    assert_string_equal(cfg.scoring_func, "sigmoid");
    assert_true(cfg.norm_topk_prob && cfg.routed_scaling_factor == 2.5);
    assert_true(cfg.n_group == 8 && cfg.topk_group == 4);
    /* the gating reaches the model fields, as the preset has them */
    assert_int_equal(cfg.m.moe_scoring, pre.moe_scoring);
    assert_int_equal(cfg.m.norm_topk_prob, pre.norm_topk_prob);
    assert_true(cfg.m.routed_scaling == pre.routed_scaling);
    assert_int_equal(cfg.m.n_group, pre.n_group);
    assert_int_equal(cfg.m.topk_group, pre.topk_group);
    assert_int_equal(cfg.synth_seed, -1);
    p = expect_params(&cfg);
    /* the tensor list adds the MLA norms and the routing bias to the planner's count */
    assert_true(fabs(p / hlx_model_params(&pre) - 1.0) < 1e-5);
    assert_true(p > 671.0e9 && p < 672.0e9);

    snprintf(dir, sizeof(dir), "%s/tests/model/data/hf/llama-3.1-405b", HLX_SOURCE_ROOT);
    if (hlx_hf_config_load(dir, &cfg, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    assert_int_equal(hlx_model_load("llama-405b", &pre, err, sizeof(err)), HLX_OK);
    assert_int_equal(cfg.family, HLX_HF_DENSE);
    assert_int_equal(cfg.m.layers, pre.layers);
    assert_int_equal(cfg.m.hidden, pre.hidden);
    assert_int_equal(cfg.m.q_heads, pre.q_heads);
    assert_int_equal(cfg.m.kv_heads, pre.kv_heads);
    assert_int_equal(cfg.m.head_dim, pre.head_dim);
    assert_int_equal(cfg.m.ffn, pre.ffn);
    assert_int_equal(cfg.m.vocab, pre.vocab);
    assert_true(cfg.m.rope_theta == 500000.0 && cfg.m.norm_eps == 1e-5);
    assert_int_equal(cfg.m.weight_dtype, HLX_DTYPE_BF16);
    p = expect_params(&cfg);
    assert_true(fabs(p / hlx_model_params(&pre) - 1.0) < 1e-6);

    /* bad values point at the key */
    assert_int_equal(sh("mkdir -p %s/badkv && sed 's/\"num_key_value_heads\": 8/\"num_key_value_heads\": 3/' "
                        "%s/config.json > %s/badkv/config.json", g_tmp, dir, g_tmp), 0);
    snprintf(dir, sizeof(dir), "%s/badkv", g_tmp);
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_ERR_PARSE);
    assert_non_null(strstr(err, "config.json:22:3: num_key_value_heads: 3 does not divide "
                                "num_attention_heads 128"));
}

static hlx_status_t value_fill(void *ctx, const hlx_hf_expect_t *t, size_t idx, int64_t row,
                               float *dst)
{
    const float *v = ctx;
    int64_t c;

    (void)t; (void)idx;
    for (c = 0; c < 8; c++)
        dst[c] = v[row * 8 + c];
    return HLX_OK;
}

/* Every stored dtype converts exactly: F16 (normal, subnormal, infinity), BF16, F32 and
 * unscaled e4m3, into f32 and bf16 destinations; other dtypes are not written. */
static void test_dtypes(void **state)
{
    static const float vals[16] = { 0.25f, -1.5f, 65504.0f, 0x1p-24f, -0x1p-14f, 3.0f,
                                    0.0f, -0.0f, 448.0f, -0.015625f, 1.0f, 2.0f, 0.5f, 7.0f,
                                    -240.0f, 0x1p-9f };
    static const hlx_st_dtype_t types[] = { HLX_ST_F16, HLX_ST_BF16, HLX_ST_F32, HLX_ST_F8_E4M3 };
    hlx_hf_expect_t list[4];
    hlx_ckpt_t *ck = NULL;
    char dir[512], err[1024];
    float out[16];
    uint16_t outb[16];
    size_t k, i;

    (void)state;
    memset(list, 0, sizeof(list));
    for (k = 0; k < 4; k++) {
        snprintf(list[k].name, sizeof(list[k].name), "t%zu", k);
        list[k].dtype = types[k];
        list[k].ndim = 2;
        list[k].shape[0] = 2;
        list[k].shape[1] = 8;
    }
    snprintf(dir, sizeof(dir), "%s/dtypes", g_tmp);
    if (hlx_ckpt_write(dir, list, 4, 1, NULL, value_fill, (void *)vals, err, sizeof(err)) !=
        HLX_OK)
        fail_msg("%s", err);
    assert_int_equal(hlx_ckpt_open(dir, &ck, err, sizeof(err)), HLX_OK);
    for (k = 0; k < 4; k++) {
        const hlx_ckpt_tensor_t *t = hlx_ckpt_find(ck, list[k].name);
        assert_non_null(t);
        assert_int_equal(t->dtype, types[k]);
        assert_int_equal(hlx_ckpt_read_slice(ck, t, 0, 0, 2, out, HLX_DTYPE_F32), HLX_OK);
        assert_int_equal(hlx_ckpt_read_slice(ck, t, 0, 0, 2, outb, HLX_DTYPE_BF16), HLX_OK);
        for (i = 0; i < 16; i++) {
            float want = vals[i];
            if (types[k] == HLX_ST_BF16)
                want = hlx_bf16_to_f32(hlx_f32_to_bf16(want));
            if (types[k] == HLX_ST_F8_E4M3 && fabsf(want) > 448.0f)
                want = copysignf(448.0f, want);
            if (types[k] == HLX_ST_F8_E4M3 && fabsf(want) < 0x1p-10f)
                want = copysignf(0.0f, want);
            if (out[i] != want || signbit(out[i]) != signbit(want))
                fail_msg("%s element %zu: %.9g, expected %.9g", hlx_st_dtype_name(types[k]), i,
                         out[i], want);
            assert_true(outb[i] == hlx_f32_to_bf16(want));
        }
    }
    hlx_ckpt_close(ck);
    list[0].dtype = HLX_ST_I32;
    assert_int_equal(hlx_ckpt_write(dir, list, 1, 1, NULL, value_fill, (void *)vals, err,
                                    sizeof(err)),
                     HLX_ERR_INVALID);
    assert_non_null(strstr(err, "cannot write I32"));
}

/* A 3-D tensor sliced along each dimension (one model.safetensors, no index). */
static void test_slice_nd(void **state)
{
    static const char hdr[] = "{\"x\":{\"dtype\":\"F32\",\"shape\":[2,3,4],"
                              "\"data_offsets\":[0,96]}}";
    char dir[512], path[600], err[512];
    float data[24], out[24];
    hlx_ckpt_t *ck;
    const hlx_ckpt_tensor_t *t;
    uint64_t n = sizeof(hdr) - 1;
    int a, b, c, i;
    FILE *f;

    (void)state;
    for (i = 0; i < 24; i++)
        data[i] = (float)i;
    snprintf(dir, sizeof(dir), "%s/nd", g_tmp);
    assert_int_equal(sh("mkdir -p %s", dir), 0);
    snprintf(path, sizeof(path), "%s/model.safetensors", dir);
    f = fopen(path, "wb");
    assert_non_null(f);
    for (i = 0; i < 8; i++)
        fputc((int)(n >> (8 * i)) & 0xff, f);
    fwrite(hdr, 1, n, f);
    fwrite(data, 4, 24, f);
    fclose(f);
    assert_int_equal(hlx_ckpt_open(dir, &ck, err, sizeof(err)), HLX_OK);
    t = hlx_ckpt_find(ck, "x");
    assert_non_null(t);
    assert_int_equal(hlx_ckpt_read_slice(ck, t, 1, 1, 2, out, HLX_DTYPE_F32), HLX_OK);
    for (a = 0; a < 2; a++)
        for (b = 0; b < 2; b++)
            for (c = 0; c < 4; c++)
                assert_true(out[(a * 2 + b) * 4 + c] == (float)(a * 12 + (b + 1) * 4 + c));
    assert_int_equal(hlx_ckpt_read_slice(ck, t, 2, 3, 1, out, HLX_DTYPE_F32), HLX_OK);
    for (a = 0; a < 6; a++)
        assert_true(out[a] == (float)(a * 4 + 3));
    assert_int_equal(hlx_ckpt_read_slice(ck, t, 0, 1, 1, out, HLX_DTYPE_F32), HLX_OK);
    for (a = 0; a < 12; a++)
        assert_true(out[a] == (float)(12 + a));
    assert_int_equal(hlx_ckpt_read_slice(ck, t, 1, 2, 2, out, HLX_DTYPE_F32), HLX_ERR_INVALID);
    assert_non_null(strstr(hlx_ckpt_error(ck), "outside"));
    hlx_ckpt_close(ck);
}

/* One tensor of a hand-built model.safetensors (write_st). */

/* Writes ts[0, n) as g_tmp/sub's model.safetensors and reads its x.weight ([rows][cols]),
 * packed as pk, into out. */
static void read_packed(const char *sub, const hlx_test_st_t *ts, int n,
                        const hlx_ckpt_packing_t *pk, int64_t rows, int64_t cols, float *out)
{
    char err[512], dir[512];
    hlx_ckpt_t *ck;
    const hlx_ckpt_tensor_t *t;
    const int64_t shape[2] = { rows, cols };

    snprintf(dir, sizeof(dir), "%s/%s", g_tmp, sub);
    hlx_test_write_st(dir, ts, n);
    assert_int_equal(hlx_ckpt_open(dir, &ck, err, sizeof(err)), HLX_OK);
    if (hlx_ckpt_set_packed(ck, pk, NULL, NULL) != HLX_OK)
        fail_msg("%s", hlx_ckpt_error(ck));
    assert_int_equal(hlx_ckpt_packed_count(ck), 1);
    assert_int_equal(hlx_ckpt_get(ck, "x.weight", 2, shape, &t), HLX_OK);
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, rows, 0, cols, 0, out, HLX_DTYPE_F32, cols),
                     HLX_OK);
    hlx_ckpt_close(ck);
}

/* The fused [2][3][4] f32 tensor of the view tests: element (e, i, c) = 100 e + 10 i + c. */
static void fused_fill(float *f)
{
    int e, i, c;

    for (e = 0; e < 2; e++)
        for (i = 0; i < 3; i++)
            for (c = 0; c < 4; c++)
                f[(e * 3 + i) * 4 + c] = (float)(100 * e + 10 * i + c);
}

/* hlx_ckpt_set_views: a fused [experts][in][cols] tensor (element (e, i, c) = 100 e + 10 i
 * + c) read as expert e's [out][in] weights, columns [c0, c0 + out): element (o, i) is
 * 100 e + 10 i + c0 + o, a transposed read gives the stored rows; a fused tensor missing, of
 * another shape or dtype, and a range outside it refused naming it. */
static void test_views(void **state)
{
    float f[2 * 3 * 4], out[16];
    int8_t q[2 * 3 * 4] = { 0 };
    const hlx_test_st_t ts[2] = { { "f", "F32", 3, { 2, 3, 4 }, f, sizeof(f) },
                         { "q", "I8", 3, { 2, 3, 4 }, q, sizeof(q) } };
    const int64_t shape[2] = { 2, 3 };
    hlx_ckpt_view_t v[2] = { { "g.weight", "f", 2, 3, 4, 1, 0, 2, 0, 0, 0, 0, 0, 0 },
                             { "u.weight", "f", 2, 3, 4, 1, 2, 2, 0, 0, 0, 0, 0, 0 } };
    const hlx_ckpt_tensor_t *t;
    char err[512], dir[512];
    hlx_ckpt_t *ck;
    int i, o;

    (void)state;
    fused_fill(f);
    snprintf(dir, sizeof(dir), "%s/views", g_tmp);
    hlx_test_write_st(dir, ts, 2);
    assert_int_equal(hlx_ckpt_open(dir, &ck, err, sizeof(err)), HLX_OK);
    if (hlx_ckpt_set_views(ck, v, 2) != HLX_OK)
        fail_msg("%s", hlx_ckpt_error(ck));
    assert_int_equal(hlx_ckpt_get(ck, "u.weight", 2, shape, &t), HLX_OK);
    assert_true(t->fused == hlx_ckpt_find(ck, "f") && t->begin == t->end);
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, 2, 0, 3, 0, out, HLX_DTYPE_F32, 3), HLX_OK);
    for (o = 0; o < 2; o++)
        for (i = 0; i < 3; i++)
            assert_true(out[o * 3 + i] == (float)(100 + 10 * i + 2 + o));
    /* transposed (the runtime's [in][out]): the stored rows, a block of them */
    assert_int_equal(hlx_ckpt_read_block(ck, t, 1, 1, 1, 2, 1, out, HLX_DTYPE_F32, 1), HLX_OK);
    assert_true(out[0] == 100 + 10 + 2 + 1 && out[1] == 100 + 20 + 2 + 1);
    assert_int_equal(hlx_ckpt_get(ck, "g.weight", 2, shape, &t), HLX_OK);
    assert_int_equal(hlx_ckpt_read_slice(ck, t, 0, 1, 1, out, HLX_DTYPE_F32), HLX_OK);
    assert_true(out[0] == 101 && out[1] == 111 && out[2] == 121);
    assert_int_equal(hlx_ckpt_read_block(ck, t, 1, 2, 0, 3, 0, out, HLX_DTYPE_F32, 3),
                     HLX_ERR_INVALID);
    /* refusals */
    v[1].experts = 3;
    assert_int_equal(hlx_ckpt_set_views(ck, v, 2), HLX_ERR_MISMATCH);
    assert_non_null(strstr(hlx_ckpt_error(ck), "model.safetensors: tensor f: shape [2, 3, 4], "
                                               "expected [3, 3, 4]"));
    assert_null(hlx_ckpt_find(ck, "g.weight")); /* none kept */
    v[1].experts = 2;
    v[1].c0 = 3;
    assert_int_equal(hlx_ckpt_set_views(ck, v, 2), HLX_ERR_INVALID);
    v[1].c0 = 2;
    v[1].index = 2;
    assert_int_equal(hlx_ckpt_set_views(ck, v, 2), HLX_ERR_INVALID);
    v[1].index = 1;
    snprintf(v[1].fused, sizeof(v[1].fused), "missing");
    assert_int_equal(hlx_ckpt_set_views(ck, v, 2), HLX_ERR_NOT_FOUND);
    assert_non_null(strstr(hlx_ckpt_error(ck), "tensor missing is missing"));
    snprintf(v[1].fused, sizeof(v[1].fused), "q");
    assert_int_equal(hlx_ckpt_set_views(ck, v, 2), HLX_ERR_MISMATCH);
    assert_non_null(strstr(hlx_ckpt_error(ck), "tensor q: dtype I8"));
    snprintf(v[1].name, sizeof(v[1].name), "f"); /* a stored name */
    snprintf(v[1].fused, sizeof(v[1].fused), "f");
    assert_int_equal(hlx_ckpt_set_views(ck, v, 2), HLX_ERR_INVALID);
    assert_int_equal(hlx_ckpt_set_views(ck, v, 1), HLX_OK);
    assert_non_null(hlx_ckpt_find(ck, "g.weight"));
    assert_int_equal(hlx_ckpt_set_views(ck, NULL, 0), HLX_OK);
    assert_null(hlx_ckpt_find(ck, "g.weight"));
    hlx_ckpt_close(ck);
}

/* hlx_ckpt_set_views with a column step and 1-D views: gpt-oss's interleaved gate_up
 * ([..., ::2] gate, [..., 1::2] up) of a fused [2][3][4] tensor (element (e, i, c) = 100 e +
 * 10 i + c) and its fused [2][4] bias in BF16 (element (e, c) = 100 e + c): columns c0,
 * c0 + 2 read plainly, transposed and bf16 to bf16 (no row copy of the contiguous path);
 * a step past the last column, a 2-D view of the bias and a 1-D view of the 3-D tensor
 * refused. */
static void test_views_step(void **state)
{
    float f[2 * 3 * 4], out[16];
    uint16_t b[2 * 4], ob[4];
    const hlx_test_st_t ts[2] = { { "f", "F32", 3, { 2, 3, 4 }, f, sizeof(f) },
                                  { "b", "BF16", 2, { 2, 4 }, b, sizeof(b) } };
    const int64_t shape[2] = { 2, 3 }, bshape[1] = { 2 };
    hlx_ckpt_view_t v[4] = { { "g.weight", "f", 2, 3, 4, 1, 0, 2, 2, 0, 0, 0, 0, 0 },
                             { "u.weight", "f", 2, 3, 4, 1, 1, 2, 2, 0, 0, 0, 0, 0 },
                             { "g.bias", "b", 2, 0, 4, 1, 0, 2, 2, 1, 0, 0, 0, 0 },
                             { "u.bias", "b", 2, 0, 4, 0, 1, 2, 2, 1, 0, 0, 0, 0 } };
    const hlx_ckpt_tensor_t *t;
    char err[512], dir[512];
    hlx_ckpt_t *ck;
    int e, i, c, o;

    (void)state;
    fused_fill(f);
    for (e = 0; e < 2; e++) {
        for (c = 0; c < 4; c++) { /* small integers: exact in bf16 */
            float x = (float)(100 * e + c);
            uint32_t u;
            memcpy(&u, &x, 4);
            b[e * 4 + c] = (uint16_t)(u >> 16);
        }
    }
    snprintf(dir, sizeof(dir), "%s/views_step", g_tmp);
    hlx_test_write_st(dir, ts, 2);
    assert_int_equal(hlx_ckpt_open(dir, &ck, err, sizeof(err)), HLX_OK);
    if (hlx_ckpt_set_views(ck, v, 4) != HLX_OK)
        fail_msg("%s", hlx_ckpt_error(ck));
    assert_int_equal(hlx_ckpt_get(ck, "u.weight", 2, shape, &t), HLX_OK);
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, 2, 0, 3, 0, out, HLX_DTYPE_F32, 3), HLX_OK);
    for (o = 0; o < 2; o++)
        for (i = 0; i < 3; i++)
            assert_true(out[o * 3 + i] == (float)(100 + 10 * i + 1 + 2 * o));
    /* transposed (the runtime's [in][out]): stored row 2, both columns */
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, 2, 2, 1, 1, out, HLX_DTYPE_F32, 2), HLX_OK);
    assert_true(out[0] == 121 && out[1] == 123);
    assert_int_equal(hlx_ckpt_get(ck, "g.weight", 2, shape, &t), HLX_OK);
    assert_int_equal(hlx_ckpt_read_slice(ck, t, 0, 1, 1, out, HLX_DTYPE_F32), HLX_OK);
    assert_true(out[0] == 102 && out[1] == 112 && out[2] == 122);
    /* the biases: 1-D, bf16 to bf16 and to f32, from a column on */
    assert_int_equal(hlx_ckpt_get(ck, "g.bias", 1, bshape, &t), HLX_OK);
    assert_true(t->fused == hlx_ckpt_find(ck, "b") && t->ndim == 1);
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, 1, 0, 2, 0, ob, HLX_DTYPE_BF16, 2), HLX_OK);
    assert_true(ob[0] == b[4] && ob[1] == b[6]);
    assert_int_equal(hlx_ckpt_get(ck, "u.bias", 1, bshape, &t), HLX_OK);
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, 1, 1, 1, 0, out, HLX_DTYPE_F32, 1), HLX_OK);
    assert_true(out[0] == 3);
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, 1, 1, 2, 0, out, HLX_DTYPE_F32, 2),
                     HLX_ERR_INVALID);
    /* refusals: the last column (1 + 2 x 2) past cols 4; the bias as a 3-D slab; the 3-D
     * tensor as a bias */
    v[1].out = 3;
    assert_int_equal(hlx_ckpt_set_views(ck, v, 4), HLX_ERR_INVALID);
    assert_null(hlx_ckpt_find(ck, "g.weight")); /* none kept */
    v[1].out = 2;
    v[2].vec = 0;
    v[2].in = 1;
    assert_int_equal(hlx_ckpt_set_views(ck, v, 4), HLX_ERR_MISMATCH);
    assert_non_null(strstr(hlx_ckpt_error(ck), "tensor b: shape [2, 4], expected [2, 1, 4]"));
    v[2].vec = 1;
    snprintf(v[3].fused, sizeof(v[3].fused), "f");
    assert_int_equal(hlx_ckpt_set_views(ck, v, 4), HLX_ERR_MISMATCH);
    assert_non_null(strstr(hlx_ckpt_error(ck), "tensor f: shape [2, 3, 4], expected [2, 4] "
                                               "(fused expert biases"));
    hlx_ckpt_close(ck);
}

/* hlx_ckpt_set_views output-major (Granite MoE's input_linear [E][2 x I][H]): a fused BF16
 * [2][4][3] tensor (element (e, r, i) = 100 e + 10 r + i, exact in bf16) read as expert 1's
 * gate (rows 0, 1) and up (rows 2, 3) [out][in]: plainly, transposed, bf16 to bf16 both
 * ways (the row copy and the transposing path), a block of it; the same rows with a step
 * of 2 (rows 1, 3); its [experts, out, in] shape checked, named output-major, and a row
 * range past the expert's refused. */
static void test_views_omajor(void **state)
{
    uint16_t f[2 * 4 * 3], ob[8];
    float out[8];
    const hlx_test_st_t ts[1] = { { "f", "BF16", 3, { 2, 4, 3 }, f, sizeof(f) } };
    const int64_t shape[2] = { 2, 3 };
    hlx_ckpt_view_t v[2] = { { "g.weight", "f", 2, 3, 4, 1, 0, 2, 0, 0, 0, 1, 0, 0 },
                             { "u.weight", "f", 2, 3, 4, 1, 2, 2, 0, 0, 0, 1, 0, 0 } };
    const hlx_ckpt_tensor_t *t;
    char err[512], dir[512];
    hlx_ckpt_t *ck;
    int e, r, i, o;

    (void)state;
    for (e = 0; e < 2; e++)
        for (r = 0; r < 4; r++)
            for (i = 0; i < 3; i++) {
                float x = (float)(100 * e + 10 * r + i);
                uint32_t u;
                memcpy(&u, &x, 4);
                f[(e * 4 + r) * 3 + i] = (uint16_t)(u >> 16);
            }
    snprintf(dir, sizeof(dir), "%s/views_omajor", g_tmp);
    hlx_test_write_st(dir, ts, 1);
    assert_int_equal(hlx_ckpt_open(dir, &ck, err, sizeof(err)), HLX_OK);
    if (hlx_ckpt_set_views(ck, v, 2) != HLX_OK)
        fail_msg("%s", hlx_ckpt_error(ck));
    assert_int_equal(hlx_ckpt_get(ck, "u.weight", 2, shape, &t), HLX_OK);
    assert_true(t->fused == hlx_ckpt_find(ck, "f") && t->begin == t->end && t->omajor);
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, 2, 0, 3, 0, out, HLX_DTYPE_F32, 3), HLX_OK);
    for (o = 0; o < 2; o++)
        for (i = 0; i < 3; i++)
            assert_true(out[o * 3 + i] == (float)(100 + 10 * (2 + o) + i));
    /* transposed (the runtime's [in][out]): input 2 of both rows */
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, 2, 2, 1, 1, out, HLX_DTYPE_F32, 2), HLX_OK);
    assert_true(out[0] == 122 && out[1] == 132);
    assert_int_equal(hlx_ckpt_read_block(ck, t, 1, 1, 1, 2, 0, ob, HLX_DTYPE_BF16, 2), HLX_OK);
    assert_true(ob[0] == f[(4 + 3) * 3 + 1] && ob[1] == f[(4 + 3) * 3 + 2]);
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, 2, 0, 3, 1, ob, HLX_DTYPE_BF16, 2), HLX_OK);
    for (i = 0; i < 3; i++)
        assert_true(ob[i * 2] == f[(4 + 2) * 3 + i] && ob[i * 2 + 1] == f[(4 + 3) * 3 + i]);
    assert_int_equal(hlx_ckpt_get(ck, "g.weight", 2, shape, &t), HLX_OK);
    assert_int_equal(hlx_ckpt_read_slice(ck, t, 0, 1, 1, out, HLX_DTYPE_F32), HLX_OK);
    assert_true(out[0] == 110 && out[1] == 111 && out[2] == 112);
    /* rows 1 and 3 (a step of 2) */
    v[0].c0 = 1;
    v[0].step = 2;
    assert_int_equal(hlx_ckpt_set_views(ck, v, 2), HLX_OK);
    assert_int_equal(hlx_ckpt_get(ck, "g.weight", 2, shape, &t), HLX_OK);
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, 2, 0, 3, 0, out, HLX_DTYPE_F32, 3), HLX_OK);
    for (o = 0; o < 2; o++)
        for (i = 0; i < 3; i++)
            assert_true(out[o * 3 + i] == (float)(100 + 10 * (1 + 2 * o) + i));
    /* refusals: another shape (named output-major), rows past the expert's 4 */
    v[0].step = 0;
    v[0].c0 = 0;
    v[1].in = 4;
    assert_int_equal(hlx_ckpt_set_views(ck, v, 2), HLX_ERR_MISMATCH);
    assert_non_null(strstr(hlx_ckpt_error(ck), "tensor f: shape [2, 4, 3], expected [2, 4, 4] "
                                               "(fused experts: [experts, out, in], "
                                               "output-major)"));
    v[1].in = 3;
    v[1].c0 = 3;
    assert_int_equal(hlx_ckpt_set_views(ck, v, 2), HLX_ERR_INVALID);
    assert_null(hlx_ckpt_find(ck, "g.weight")); /* none kept */
    hlx_ckpt_close(ck);
}

/* An MXFP4 view's parts (HLX_CKPT_QCODE, QZERO, QSCALE: the codes the packed GEMMs keep
 * it as): for every element, plain and transposed, (code - zero) x scale is the value the
 * view reads plainly, bit for bit but the sign of zero (E2M1's -0 is code 12); codes
 * within 0 .. 24, each the table's entry for the element's stored nibble, and zero 12;
 * scales from 2^-128 (byte 0) to 2^125 (byte 253); the view counted as packed, 4 bits in
 * groups of 32 with that table; a scale byte of 255 refused naming its index in the
 * scales tensor. Blocks [2 experts][2 rows][2 blocks][16], the view expert 1. */
static void test_views_mx_parts(void **state)
{
    enum { E = 2, R = 2, IN = 64, NB = IN / 32 };
    uint8_t blocks[E * R * NB * 16], scales[E * R * NB];
    const uint8_t sb[E * R * NB] = { 1, 2, 3, 4, 0, 127, 253, 100 };
    const hlx_test_st_t ts[2] = { { "w_blocks", "U8", 4, { E, R, NB, 16 }, blocks, sizeof(blocks) },
                                  { "w_scales", "U8", 3, { E, R, NB }, scales, sizeof(scales) } };
    hlx_ckpt_view_t v = { "x.weight", "w_blocks", E, IN, R, 1, 0, R, 1, 0, 1, 0, 0, 0 };
    const int64_t shape[2] = { R, IN };
    float val[R * IN], code[R * IN], zero[R * IN], scale[R * IN], tc[IN * R], ts_[IN * R];
    const hlx_ckpt_tensor_t *t;
    char err[512], dir[512];
    const uint8_t *lut;
    hlx_ckpt_t *ck;
    uint32_t x = 7;
    int64_t group;
    int i, k, bits;

    (void)state;
    for (i = 0; i < (int)sizeof(blocks); i++) { /* every code on both nibbles */
        x = x * 1103515245u + 12345u;
        blocks[i] = (uint8_t)(i < 8 ? (uint32_t)(2 * i) | (uint32_t)(2 * i + 1) << 4 : x >> 16);
    }
    memcpy(scales, sb, sizeof(scales));
    snprintf(dir, sizeof(dir), "%s/views_mx", g_tmp);
    hlx_test_write_st(dir, ts, 2);
    assert_int_equal(hlx_ckpt_open(dir, &ck, err, sizeof(err)), HLX_OK);
    if (hlx_ckpt_set_views(ck, &v, 1) != HLX_OK)
        fail_msg("%s", hlx_ckpt_error(ck));
    assert_int_equal(hlx_ckpt_packed_count(ck), 1);
    assert_int_equal(hlx_ckpt_get(ck, "x.weight", 2, shape, &t), HLX_OK);
    assert_int_equal(hlx_ckpt_packed_groups(ck, t, &bits, &group, &lut), 1);
    assert_true(bits == 4 && group == 32 && lut != NULL);
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, R, 0, IN, 0, val, HLX_DTYPE_F32, IN), HLX_OK);
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, R, 0, IN, 0, code, HLX_CKPT_QCODE, IN), HLX_OK);
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, R, 0, IN, 0, zero, HLX_CKPT_QZERO, IN), HLX_OK);
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, R, 0, IN, 0, scale, HLX_CKPT_QSCALE, IN),
                     HLX_OK);
    /* the runtime's reads: [in][out], from input 5 on */
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, R, 5, IN - 5, 1, tc, HLX_CKPT_QCODE, R), HLX_OK);
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, R, 5, IN - 5, 1, ts_, HLX_CKPT_QSCALE, R),
                     HLX_OK);
    for (i = 0; i < R; i++)
        for (k = 0; k < IN; k++) {
            const float c = code[i * IN + k], s = scale[i * IN + k];
            const uint8_t b = blocks[((R + i) * NB + k / 32) * 16 + k % 32 / 2];
            assert_true(c >= 0 && c <= 24 && c == floorf(c) && zero[i * IN + k] == 12);
            assert_true(c == (float)lut[k & 1 ? b >> 4 : b & 15]);
            assert_true(s == ldexpf(1.0f, sb[(R + i) * NB + k / 32] - 128));
            if ((c - 12) * s != val[i * IN + k])
                fail_msg("row %d, input %d: (%g - 12) x %g is not %g", i, k, c, s,
                         val[i * IN + k]);
            if (k >= 5 && (tc[(k - 5) * R + i] != c || ts_[(k - 5) * R + i] != s))
                fail_msg("row %d, input %d: the transposed read differs", i, k);
        }
    scales[(R + 1) * NB + 1] = 255; /* expert 1, row 1, block 1 */
    hlx_ckpt_close(ck);
    hlx_test_write_st(dir, ts, 2);
    assert_int_equal(hlx_ckpt_open(dir, &ck, err, sizeof(err)), HLX_OK);
    if (hlx_ckpt_set_views(ck, &v, 1) != HLX_OK)
        fail_msg("%s", hlx_ckpt_error(ck));
    assert_int_equal(hlx_ckpt_get(ck, "x.weight", 2, shape, &t), HLX_OK);
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, R, 0, 32, 0, scale, HLX_CKPT_QSCALE, IN),
                     HLX_OK); /* block 0 of both rows: finite */
    assert_int_equal(hlx_ckpt_read_block(ck, t, 0, R, 0, IN, 0, scale, HLX_CKPT_QSCALE, IN),
                     HLX_ERR_MISMATCH);
    assert_non_null(strstr(hlx_ckpt_error(ck), "tensor w_scales: scale byte 255 (E8M0's NaN) "
                                               "at [1, 1, 1]"));
    hlx_ckpt_close(ck);
}

/* The packed integer layouts against values worked out by hand from each format's
 * definition (docs/model.md "Integer weights"), not from the test's own quantizer. */
static void test_packed_known(void **state)
{
    float out[16];
    int i;

    (void)state;
    { /* compressed-tensors, 8 bits: signed 1 and 2 stored as 129 and 130, the word 33409
       * (its pack_to_int32's own example); scale 0.5 */
        const int32_t w = 33409;
        const int64_t dims[2] = { 1, 2 };
        const float s = 0.5f;
        const hlx_test_st_t ts[] = { { "x.weight_packed", "I32", 2, { 1, 1 }, &w, 4 },
                            { "x.weight_scale", "F32", 2, { 1, 1 }, &s, 4 },
                            { "x.weight_shape", "I64", 1, { 2, 0 }, dims, 16 } };
        const hlx_ckpt_packing_t pk = { HLX_PACK_CT, 8, -1, 1, 0 };
        read_packed("pk-ct", ts, 3, &pk, 1, 2, out);
        assert_true(out[0] == 0.5f && out[1] == 1.0f);
    }
    { /* GPTQ, 4 bits, in 8 x out 2: column 0 holds q = 0..7 (field i: input i), column 1
       * fifteens; zeros stored minus one: 7 (zero 8) and 0 (zero 1); scales 1 and 2 */
        const uint32_t qw[2] = { 0x76543210u, 0xffffffffu }, qz = 0x07u;
        const float sc[2] = { 1.0f, 2.0f };
        const hlx_test_st_t ts[] = { { "x.qweight", "I32", 2, { 1, 2 }, qw, 8 },
                            { "x.qzeros", "I32", 2, { 1, 1 }, &qz, 4 },
                            { "x.scales", "F32", 2, { 1, 2 }, sc, 8 } };
        const hlx_ckpt_packing_t pk = { HLX_PACK_GPTQ, 4, -1, 0, 0 };
        read_packed("pk-gptq", ts, 3, &pk, 2, 8, out);
        for (i = 0; i < 8; i++) {
            assert_true(out[i] == (float)(i - 8));
            assert_true(out[8 + i] == 28.0f);
        }
    }
    { /* GPTQ_V2, 2 bits, in 16 x out 2: column 0 holds q = i % 4 (field i: input i, 16 a
       * word), column 1 zeros; zero points as they are, 1 and 3 (fields 0 and 1); scales 1
       * and 0.5 */
        const uint32_t qw[2] = { 0xe4e4e4e4u, 0 }, qz = 0xdu;
        const float sc[2] = { 1.0f, 0.5f };
        const hlx_test_st_t ts[] = { { "x.qweight", "I32", 2, { 1, 2 }, qw, 8 },
                            { "x.qzeros", "I32", 2, { 1, 1 }, &qz, 4 },
                            { "x.scales", "F32", 2, { 1, 2 }, sc, 8 } };
        const hlx_ckpt_packing_t pk = { HLX_PACK_GPTQ_V2, 2, -1, 0, 0 };
        float o2[32];
        read_packed("pk-gptq2", ts, 3, &pk, 2, 16, o2);
        for (i = 0; i < 16; i++) {
            assert_true(o2[i] == (float)(i % 4 - 1));
            assert_true(o2[16 + i] == -1.5f);
        }
    }
    { /* GPTQ, 3 bits, in 32 x out 32: each 32 values in 3 words (AutoGPTQ's pack: values 10
       * and 21 cross the words' boundaries). Column 0 holds q = i % 8, the 24-bit run
       * 0xfac688 four times over the 96 bits; column 1 sevens; the rest 0. Zeros stored
       * minus one: 3 for column 0 (bits 0-2), 5 for column 10 (bits 30-32: 1 << 30 of word 0
       * and bit 0 of word 1), 6 for column 21 (bits 63-65: word 2's low two bits), 0 for
       * the rest; scales 1, column 1's 2 */
        static uint32_t qw[3][32];
        static float sc[32], o3[32 * 32];
        const uint32_t qz[3] = { 0x40000003u, 0x1u, 0x3u };
        const hlx_test_st_t ts[] = { { "x.qweight", "I32", 2, { 3, 32 }, qw, sizeof(qw) },
                            { "x.qzeros", "I32", 2, { 1, 3 }, qz, 12 },
                            { "x.scales", "F32", 2, { 1, 32 }, sc, sizeof(sc) } };
        const hlx_ckpt_packing_t pk = { HLX_PACK_GPTQ, 3, -1, 0, 0 };
        int o;
        qw[0][0] = 0x88fac688u;
        qw[1][0] = 0xc688fac6u;
        qw[2][0] = 0xfac688fau;
        qw[0][1] = qw[1][1] = qw[2][1] = 0xffffffffu;
        for (o = 0; o < 32; o++)
            sc[o] = o == 1 ? 2.0f : 1.0f;
        read_packed("pk-gptq3", ts, 3, &pk, 32, 32, o3);
        for (o = 0; o < 32; o++)
            for (i = 0; i < 32; i++) {
                const float want = o == 0 ? (float)(i % 8 - 4) : o == 1 ? 12.0f
                                   : o == 10 ? -6.0f : o == 21 ? -7.0f : -1.0f;
                if (o3[o * 32 + i] != want)
                    fail_msg("3-bit [%d][%d] is %g, expected %g", o, i, o3[o * 32 + i], want);
            }
    }
    { /* AWQ, in 1 x out 8: field k holds column (0, 2, 4, 6, 1, 3, 5, 7)[k], here the column's
       * own number; zeros 0, scales 1 */
        const uint32_t qw = 0x75316420u, qz = 0;
        const float sc[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
        const hlx_test_st_t ts[] = { { "x.qweight", "I32", 2, { 1, 1 }, &qw, 4 },
                            { "x.qzeros", "I32", 2, { 1, 1 }, &qz, 4 },
                            { "x.scales", "F32", 2, { 1, 8 }, sc, 32 } };
        const hlx_ckpt_packing_t pk = { HLX_PACK_AWQ, 4, 1, 0, 0 };
        read_packed("pk-awq", ts, 3, &pk, 8, 1, out);
        for (i = 0; i < 8; i++)
            assert_true(out[i] == (float)i);
    }
}

static void test_parse_direct(void **state)
{
    static const char dup[] = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                              "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
    static const char ok[] = "{\"__metadata__\":{\"format\":\"pt\"},"
                             "\"b\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[4,12]},"
                             "\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}";
    uint8_t buf[512];
    hlx_st_file_t f;
    char err[512] = "";
    size_t n, i;

    (void)state;
    n = sizeof(dup) - 1;
    for (i = 0; i < 8; i++)
        buf[i] = (uint8_t)(n >> (8 * i));
    memcpy(buf + 8, dup, n);
    memset(buf + 8 + n, 0, 8);
    assert_int_equal(hlx_st_parse("dup.safetensors", buf, 8 + n + 8, 0, &f, err, sizeof(err)),
                     HLX_ERR_PARSE);
    assert_non_null(strstr(err, "duplicate"));

    n = sizeof(ok) - 1;
    for (i = 0; i < 8; i++)
        buf[i] = (uint8_t)(n >> (8 * i));
    memcpy(buf + 8, ok, n);
    memset(buf + 8 + n, 0, 12);
    if (hlx_st_parse("ok.safetensors", buf, 8 + n + 12, 0, &f, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    assert_int_equal(f.count, 2);
    assert_string_equal(f.tensors[0].name, "a"); /* sorted by name */
    assert_int_equal(f.tensors[0].ndim, 0);
    assert_int_equal(f.tensors[1].shape[1], 2);
    assert_int_equal(f.data_offset, 8 + n);
    hlx_st_file_free(&f);
    /* shorter than the header claims */
    assert_int_equal(hlx_st_parse("short.safetensors", buf, 8 + n - 1, 0, &f, err, sizeof(err)),
                     HLX_ERR_PARSE);
    assert_non_null(strstr(err, "does not fit"));
    assert_int_equal(hlx_st_parse("tiny.safetensors", buf, 5, 0, &f, err, sizeof(err)),
                     HLX_ERR_PARSE);
}

static void test_cli_flags(void **state)
{
    char *err;

    (void)state;
    assert_int_equal(sh("%s model synth --family sparse --out %s/x 2>/dev/null", helix, g_tmp), 2);
    assert_int_equal(sh("%s model synth --family dense 2>/dev/null", helix), 2);
    /* the fp8 forms: per-tensor ones take no per-channel scales, nor per-head KV scales;
     * block scales no --fp8-scales; moe-mla none of them (block scales only) */
    assert_int_equal(sh("%s model synth --family dense --dtype fp8 --fp8-format fp8 "
                        "--fp8-scales channel --out %s/x 2>/dev/null", helix, g_tmp), 2);
    assert_int_equal(sh("%s model synth --family dense --dtype fp8 --fp8-format modelopt "
                        "--kv-scales 1,1 --kv-scales-per-head --out %s/x 2>/dev/null", helix,
                        g_tmp), 2);
    assert_int_equal(sh("%s model synth --family qwen3 --dtype fp8 --fp8-format fp8-block "
                        "--fp8-scales tensor --out %s/x 2>/dev/null", helix, g_tmp), 2);
    assert_int_equal(sh("%s model synth --family moe-mla --dtype fp8 --fp8-format modelopt "
                        "--out %s/x 2>/dev/null", helix, g_tmp), 2);
    assert_int_equal(sh("%s model synth --family dense --dtype fp8 --fp8-format awq --out %s/x "
                        "2>/dev/null", helix, g_tmp), 2);
    assert_int_equal(sh("%s model synth --family dense --fp8-scales tensor --out %s/x "
                        "2>/dev/null", helix, g_tmp), 2);
    assert_int_equal(sh("%s model synth --family dense --layers 0 --out %s/x 2>/dev/null", helix,
                        g_tmp), 2);
    assert_int_equal(sh("%s model info %s/nonexistent 2>/dev/null", helix, g_tmp), 2);
    assert_int_equal(sh("%s model info %s/dense_bf16 --tpa 3 2>/dev/null", helix, g_tmp), 2);
    assert_int_equal(sh("%s model info %s/moe_bf16 --kvp 2 --ep 3 2>/dev/null", helix, g_tmp), 2);
    assert_int_equal(sh("%s model info %s/moe_bf16 --kvp 2 --tpa 2 --ep 4 --json >/dev/null",
                        helix, g_tmp), 0);
    assert_int_equal(info("dense_bf16", &err), 0);
    free(err);
    /* a config without tensors: sizes with --config-only, refused otherwise */
    assert_int_equal(sh("%s model info %s/tests/model/data/hf/deepseek-v3 --config-only --kvp 8 "
                        "--tpa 8 --ep 64 >/dev/null", helix, HLX_SOURCE_ROOT), 0);
    assert_int_equal(sh("%s model info %s/tests/model/data/hf/deepseek-v3 2>/dev/null", helix,
                        HLX_SOURCE_ROOT), 2);
}

/* info --json: sizes worked out by hand for the dense synth model (bf16, 2 layers). */
static void test_info_json(void **state)
{
    char path[512];
    json_t *o, *b, *r;
    json_error_t je;
    /* H 256, Q 8 x 32, K 2 x 32, F 512, V 512 */
    const double attn = 2.0 * (256 * 256 + 2 * 64 * 256 + 256 * 256) * 2;
    const double ffn = 2.0 * 3 * 256 * 512 * 2;

    (void)state;
    snprintf(path, sizeof(path), "%s/info.json", g_tmp);
    assert_int_equal(sh("%s model info %s/dense_bf16 --kvp 2 --tpa 4 --json > %s", helix, g_tmp,
                        path), 0);
    o = json_load_file(path, 0, &je);
    assert_non_null(o);
    b = json_object_get(o, "bytes");
    r = json_object_get(o, "bytes_per_rank");
    assert_true(json_real_value(json_object_get(b, "attention")) == attn);
    assert_true(json_real_value(json_object_get(b, "dense_ffn")) == ffn);
    assert_true(json_real_value(json_object_get(b, "embedding")) == 512.0 * 256 * 2);
    /* per rank: W_q / 4, K and V heads ceil(2 / 4) = 1 of 2, W_o / 8; FFN / 8 */
    assert_true(json_real_value(json_object_get(r, "attention")) ==
                2.0 * (256 * 256 / 4 + 2 * 32 * 256 + 256 * 256 / 8) * 2);
    assert_true(json_real_value(json_object_get(r, "dense_ffn")) == ffn / 8);
    assert_true(json_real_value(json_object_get(r, "lm_head")) == 512.0 * 256 * 2 / 8);
    /* the embedding in the head's vocabulary slices, as the runtime holds it */
    assert_true(json_real_value(json_object_get(r, "embedding")) == 512.0 * 256 * 2 / 8);
    assert_true(json_real_value(json_object_get(o, "params")) ==
                2.0 * (256 * 256 + 2 * 64 * 256 + 256 * 256 + 3 * 256 * 512 + 2 * 256) +
                    2 * 512 * 256 + 256);
    json_decref(o);
}

/* `helix ARGS`: exit code, stdout and stderr (free them). */
static int run(char **out, char **err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int run(char **out, char **err, const char *fmt, ...)
{
    char args[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    return hlx_test_helix(helix, g_tmp, 120, out, err, args);
}

static void has(const char *what, const char *text, const char *needle)
{
    if (strstr(text, needle) == NULL)
        fail_msg("%s: '%s' not in:\n%s", what, needle, text);
}

/* Overwrites bytes [at, at + n) of tensor `tensor` of checkpoint `name` with b. */
static void poke(const char *name, const char *tensor, uint64_t at, const void *b, size_t n)
{
    char dir[512], path[1024], err[1024];
    hlx_ckpt_t *ck = NULL;
    const hlx_ckpt_tensor_t *t;
    uint8_t len8[8];
    uint64_t hlen = 0;
    FILE *f;
    int i;

    snprintf(dir, sizeof(dir), "%s/%s", g_tmp, name);
    if (hlx_ckpt_open(dir, &ck, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    assert_non_null(t = hlx_ckpt_find(ck, tensor));
    assert_true(at + n <= t->end - t->begin);
    snprintf(path, sizeof(path), "%s/%s", dir, hlx_ckpt_file_name(ck, t->file));
    assert_non_null(f = fopen(path, "r+b"));
    assert_int_equal(fread(len8, 1, 8, f), 8);
    for (i = 0; i < 8; i++)
        hlen |= (uint64_t)len8[i] << (8 * i);
    assert_int_equal(fseek(f, (long)(8 + hlen + t->begin + at), SEEK_SET), 0);
    assert_int_equal(fwrite(b, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
    hlx_ckpt_close(ck);
}

/* ---- values that are not finite: the scan of one tensor, every dtype ------------- */

#define SCAN_ROWS 3
#define SCAN_COLS 5000 /* rows longer than a vectorised block of 4096 */

typedef struct {
    const char    *name, *dtype;
    size_t         size;
    uint64_t       bad[3];    /* bit patterns at [0, 4999], [2, 10], [2, 11]; the first
                                 again at [2, 4999], the last element (past the blocks) */
    uint64_t       finite;    /* a finite pattern near them, never counted */
    uint64_t       count;     /* what the scan must find */
    const char    *desc;
} scan_case_t;

static const scan_case_t g_cases[] = {
    { "a_bf16", "BF16", 2, { 0x7fc0, 0xff80, 0x7f81 }, 0x7f7f, 4,
      "4 non-finite values, the first nan (bits 0x7fc0) at [0, 4999]" },
    { "b_f32", "F32", 4, { 0x7f800000, 0xffc00000, 0x7f800001 }, 0x7f7fffff, 4,
      "4 non-finite values, the first inf (bits 0x7f800000) at [0, 4999]" },
    { "c_f16", "F16", 2, { 0xfc00, 0x7e00, 0x7c00 }, 0x7bff, 4,
      "4 non-finite values, the first -inf (bits 0xfc00) at [0, 4999]" },
    { "d_f64", "F64", 8, { 0x7ff8000000000000ull, 0x7ff0000000000000ull, 0xfff0000000000000ull },
      0x7fefffffffffffffull, 4,
      "4 non-finite values, the first nan (bits 0x7ff8000000000000) at [0, 4999]" },
    { "e_e4m3", "F8_E4M3", 1, { 0x7f, 0xff, 0x7f }, 0x7e, 4,
      "4 non-finite values, the first nan (bits 0x7f) at [0, 4999]" },
    { "f_e5m2", "F8_E5M2", 1, { 0x7c, 0xfe, 0x7d }, 0x7b, 4,
      "4 non-finite values, the first inf (bits 0x7c) at [0, 4999]" },
    { "g_i32", "I32", 4, { 0x7f800000, 0xffffffff, 0x7fc00000 }, 0, 0, NULL },
};
#define NCASES (sizeof(g_cases) / sizeof(g_cases[0]))

/* One safetensors file of every case, each [SCAN_ROWS][SCAN_COLS], zeros but for the
 * patterns of the case. */
static void write_cases(const char *name)
{
    char path[512], *hdr;
    json_t *h = json_object();
    uint64_t off = 0, hlen, k;
    uint8_t *data, len8[8];
    size_t c, j;
    FILE *f;
    const uint64_t at[4] = { 4999, 2 * SCAN_COLS + 10, 2 * SCAN_COLS + 11,
                             3 * SCAN_COLS - 1 };

    for (c = 0; c < NCASES; c++) {
        uint64_t bytes = (uint64_t)SCAN_ROWS * SCAN_COLS * g_cases[c].size;
        json_object_set_new(h, g_cases[c].name,
                            json_pack("{s:s, s:[i, i], s:[I, I]}", "dtype", g_cases[c].dtype,
                                      "shape", SCAN_ROWS, SCAN_COLS, "data_offsets",
                                      (json_int_t)off, (json_int_t)(off + bytes)));
        off += bytes;
    }
    assert_non_null(hdr = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER));
    json_decref(h);
    hlen = strlen(hdr);
    assert_non_null(data = calloc(1, off));
    off = 0;
    for (c = 0; c < NCASES; c++) {
        const scan_case_t *s = &g_cases[c];
        for (j = 0; j < 4; j++)
            for (k = 0; k < s->size; k++)
                data[off + at[j] * s->size + k] = (uint8_t)(s->bad[j % 3] >> (8 * k));
        for (k = 0; k < s->size; k++) /* the largest finite value just before the first */
            data[off + (at[0] - 1) * s->size + k] = (uint8_t)(s->finite >> (8 * k));
        off += (uint64_t)SCAN_ROWS * SCAN_COLS * s->size;
    }
    assert_int_equal(sh("mkdir -p %s/%s", g_tmp, name), 0);
    snprintf(path, sizeof(path), "%s/%s/model.safetensors", g_tmp, name);
    assert_non_null(f = fopen(path, "wb"));
    for (k = 0; k < 8; k++)
        len8[k] = (uint8_t)(hlen >> (8 * k));
    assert_int_equal(fwrite(len8, 1, 8, f), 8);
    assert_int_equal(fwrite(hdr, 1, hlen, f), hlen);
    assert_int_equal(fwrite(data, 1, off, f), off);
    assert_int_equal(fclose(f), 0);
    free(data);
    free(hdr);
}

static void test_scan_dtypes(void **state)
{
    char dir[512], err[1024], desc[256];
    hlx_ckpt_t *ck = NULL;
    size_t c;

    (void)state;
    write_cases("dtypes");
    snprintf(dir, sizeof(dir), "%s/dtypes", g_tmp);
    if (hlx_ckpt_open(dir, &ck, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    for (c = 0; c < NCASES; c++) {
        const hlx_ckpt_tensor_t *t = hlx_ckpt_find(ck, g_cases[c].name);
        hlx_ckpt_nonfinite_t nf;
        assert_non_null(t);
        hlx_ckpt_scan_tensor(ck, t, &nf);
        if (nf.count != g_cases[c].count)
            fail_msg("%s: %llu non-finite values, expected %llu", g_cases[c].name,
                     (unsigned long long)nf.count, (unsigned long long)g_cases[c].count);
        if (nf.count == 0)
            continue;
        assert_int_equal(nf.first, 4999);
        assert_int_equal(nf.bits, g_cases[c].bad[0]);
        hlx_ckpt_nonfinite_str(t, &nf, desc, sizeof(desc));
        assert_string_equal(desc, g_cases[c].desc);
    }
    /* a tensor's first hit past its first block, and the rest of the tensor still counted */
    {
        const hlx_ckpt_tensor_t *t = hlx_ckpt_find(ck, "a_bf16");
        hlx_ckpt_tensor_t tail = *t;
        hlx_ckpt_nonfinite_t nf;
        tail.ndim = 1;
        tail.shape[0] = tail.numel = 2 * SCAN_COLS;
        tail.begin = t->begin + (uint64_t)SCAN_COLS * 2; /* rows 1 and 2 */
        hlx_ckpt_scan_tensor(ck, &tail, &nf);
        assert_int_equal(nf.count, 3);
        assert_int_equal(nf.first, SCAN_COLS + 10);
        assert_int_equal(nf.bits, 0xff80);
        hlx_ckpt_nonfinite_str(&tail, &nf, desc, sizeof(desc));
        assert_string_equal(desc, "3 non-finite values, the first -inf (bits 0xff80) at [5010]");
        /* the last row from [2, 20] on: its only hit in the elements after the last whole
         * block */
        tail.shape[0] = tail.numel = SCAN_COLS - 20;
        tail.begin = t->begin + (uint64_t)(2 * SCAN_COLS + 20) * 2;
        hlx_ckpt_scan_tensor(ck, &tail, &nf);
        assert_int_equal(nf.count, 1);
        assert_int_equal(nf.first, SCAN_COLS - 21);
    }
    hlx_ckpt_close(ck);
}

/* ---- helix model info --scan and decode -------------------------------------------- */

/* `model info --scan` of name: exit 2, the tensor's line on stdout, the count on stderr;
 * the JSON form names the same index (of the first tensor by name, of nbad). */
static void scan_finds(const char *name, const char *line, const char *summary,
                       const char *tensor, int r, int c, int nbad)
{
    char *out, *err;
    json_t *j, *hit;
    json_error_t je;

    assert_int_equal(run(&out, &err, "model info %s/%s --scan", g_tmp, name), 2);
    has("model info --scan", out, line);
    has("model info --scan", err, summary);
    free(out);
    free(err);
    assert_int_equal(run(&out, &err, "model info %s/%s --scan --json", g_tmp, name), 2);
    assert_non_null(j = json_loads(out, 0, &je));
    hit = json_array_get(json_object_get(json_object_get(j, "scan"), "nonfinite"), 0);
    assert_non_null(hit);
    assert_string_equal(json_string_value(json_object_get(hit, "name")), tensor);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(hit, "first_index"), 0)), r);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(hit, "first_index"), 1)), c);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "scan"),
                                                        "nonfinite_tensors")), nbad);
    json_decref(j);
    free(out);
    free(err);
}

/* decode of name fails (not 0) naming the weight. */
static void decode_names(const char *name, const char *needle)
{
    char *out, *err;
    int rc = run(&out, &err, "decode --model %s/%s --steps 2", g_tmp, name);

    if (rc == 0)
        fail_msg("decode of %s: exit 0, expected a failure naming %s", name, needle);
    has("decode", err, needle);
    has("decode", err, "the checkpoint's weights are not finite");
    free(out);
    free(err);
}

static void test_scan_clean(void **state)
{
    char *out, *err;

    (void)state;
    synth("clean", "--family moe-mla --dtype fp8 --shards 2");
    assert_int_equal(run(&out, &err, "model info %s/clean --scan", g_tmp), 0);
    has("model info --scan", out, "every value finite");
    free(out);
    free(err);
    assert_int_equal(run(&out, &err, "model info %s/clean --scan --config-only", g_tmp), 2);
    has("--scan --config-only", err, "--scan reads every tensor, --config-only none");
    free(out);
    free(err);
}

static void test_scan_bf16_nan(void **state)
{
    const uint16_t nan = 0x7fc0;

    (void)state;
    synth("nan", "--family dense --shards 1");
    poke("nan", "model.layers.1.mlp.down_proj.weight", 200, &nan, 2);
    scan_finds("nan", "model.layers.1.mlp.down_proj.weight (BF16 [256, 512], model.safetensors): "
               "1 non-finite value, the first nan (bits 0x7fc0) at [0, 100]",
               "--scan: 1 of the 21 tensors", "model.layers.1.mlp.down_proj.weight", 0, 100, 1);
    decode_names("nan", "non-finite value (nan) in the hidden state, layer 1, step 0, rank 0");
    decode_names("nan", "model.layers.1.mlp.down_proj.weight holds 1 non-finite value, the first "
                 "nan (bits 0x7fc0) at [0, 100]");
}

static void test_scan_f32_inf(void **state)
{
    const float inf = -INFINITY;

    (void)state;
    synth("inf", "--family dense --dtype f32 --shards 2");
    poke("inf", "model.layers.0.self_attn.o_proj.weight", 4 * (3 * 256 + 9), &inf, 4);
    scan_finds("inf", "model.layers.0.self_attn.o_proj.weight (F32 [256, 256], ",
               "--scan: 1 of the 21 tensors", "model.layers.0.self_attn.o_proj.weight", 3, 9, 1);
    decode_names("inf", "model.layers.0.self_attn.o_proj.weight holds 1 non-finite value, the "
                 "first -inf (bits 0xff800000) at [3, 9]");
}

static void test_scan_fp8_nan(void **state)
{
    const uint8_t nan = 0x7f, neg_nan = 0xff;

    (void)state;
    synth("fp8", "--family moe-mla --dtype fp8 --shards 2");
    /* a routed expert (used by some tokens only) and the shared one (by every token) */
    poke("fp8", "model.layers.1.mlp.experts.3.up_proj.weight", 5 * 64 + 7, &nan, 1);
    poke("fp8", "model.layers.1.mlp.shared_experts.down_proj.weight", 10, &neg_nan, 1);
    scan_finds("fp8", "model.layers.1.mlp.experts.3.up_proj.weight (F8_E4M3 [64, 256], ",
               "--scan: 2 of the", "model.layers.1.mlp.experts.3.up_proj.weight", 1, 71, 2);
    {
        char *out, *err;
        assert_int_equal(run(&out, &err, "model info %s/fp8 --scan", g_tmp), 2);
        has("model info --scan", out, "model.layers.1.mlp.shared_experts.down_proj.weight "
            "(F8_E4M3 [256, 64], ");
        has("model info --scan", out, "1 non-finite value, the first nan (bits 0xff) at [0, 10]");
        free(out);
        free(err);
    }
    /* the weight every token uses is named before an expert */
    decode_names("fp8", "model.layers.1.mlp.shared_experts.down_proj.weight holds 1 non-finite "
                 "value, the first nan (bits 0xff) at [0, 10]");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp8_codec),
        cmocka_unit_test(test_parse_direct),
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_slice_nd),
        cmocka_unit_test(test_packed_known),
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_views_step),
        cmocka_unit_test(test_views_omajor),
        cmocka_unit_test(test_views_mx_parts),
        cmocka_unit_test(test_dense_roundtrip),
        cmocka_unit_test(test_dense_hf_layout),
        cmocka_unit_test(test_slice_bytes),
        cmocka_unit_test(test_rank_fill),
        cmocka_unit_test(test_moe_roundtrip),
        cmocka_unit_test(test_bad_headers),
        cmocka_unit_test(test_archs_listed),
        cmocka_unit_test(test_mismatched),
        cmocka_unit_test(test_tied),
        cmocka_unit_test(test_configs),
        cmocka_unit_test(test_cli_flags),
        cmocka_unit_test(test_info_json),
        cmocka_unit_test(test_scan_dtypes),
        cmocka_unit_test(test_scan_clean),
        cmocka_unit_test(test_scan_bf16_nan),
        cmocka_unit_test(test_scan_f32_inf),
        cmocka_unit_test(test_scan_fp8_nan),
    };
    int rc;

    if (argc < 2) {
        fprintf(stderr, "usage: test_ckpt HELIX_BINARY\n");
        return 2;
    }
    helix = argv[1];
    if (mkdtemp(g_tmp) == NULL)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (rc == 0)
        sh("rm -rf %s", g_tmp);
    return rc;
}
