/* Weight sources (hlx_wsrc.h): one read by checkpoint tensor name for the synthetic
 * generator and for a Hugging Face checkpoint. */
#include "hlx_wsrc.h"

#include "hlx_synth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hlx_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);

    return n >= k && !strcmp(s + n - k, suffix);
}

static void hlx_wsrc_config(hlx_hf_config_t *c, const hlx_model_t *m)
{
    memset(c, 0, sizeof(*c));
    c->m = *m;
    c->family = m->attn == HLX_ATTN_MLA || m->experts > 0 ? HLX_HF_MOE_MLA : HLX_HF_DENSE;
    snprintf(c->arch, sizeof(c->arch), "%s",
             c->family == HLX_HF_DENSE ? "LlamaForCausalLM" : "DeepseekV3ForCausalLM");
    c->st_dtype = m->weight_dtype == HLX_DTYPE_F32 ? HLX_ST_F32 : HLX_ST_BF16;
    snprintf(c->torch_dtype, sizeof(c->torch_dtype), "%s",
             m->weight_dtype == HLX_DTYPE_F32 ? "float32" : "bfloat16");
    c->block_rows = c->block_cols = 128;
    /* the gating from the model, so that the tensors a config implies (the routing bias
     * with sigmoid scoring) match what the runtime reads */
    hlx_hf_gating_set(c, m->moe_scoring, m->norm_topk_prob,
                      m->routed_scaling > 0 ? m->routed_scaling : 1.0,
                      m->n_group > 0 ? m->n_group : 1,
                      m->topk_group > 0 ? m->topk_group : (m->n_group > 0 ? m->n_group : 1));
    c->synth_seed = -1;
}

hlx_status_t hlx_wsrc_synth(hlx_wsrc_t *ws, const hlx_model_t *m, uint64_t seed, char *err,
                            size_t errlen)
{
    (void)err;
    (void)errlen;
    memset(ws, 0, sizeof(*ws));
    hlx_wsrc_config(&ws->cfg, m);
    ws->cfg.synth_seed = (int64_t)(seed & INT64_MAX);
    ws->seed = seed;
    ws->held = m->weight_dtype;
    return HLX_OK;
}

hlx_status_t hlx_wsrc_ckpt(hlx_wsrc_t *ws, const char *dir, char *err, size_t errlen)
{
    hlx_status_t st;

    memset(ws, 0, sizeof(*ws));
    if ((st = hlx_hf_config_load(dir, &ws->cfg, err, errlen)) != HLX_OK)
        return st;
    if ((st = hlx_ckpt_open(dir, &ws->ck, err, errlen)) != HLX_OK)
        return st;
    hlx_hf_settle(ws->ck, &ws->cfg);
    if ((st = hlx_hf_check(ws->ck, &ws->cfg)) != HLX_OK) {
        snprintf(err, errlen, "%s", hlx_ckpt_error(ws->ck));
        hlx_wsrc_fini(ws);
        return st;
    }
    ws->seed = ws->cfg.synth_seed >= 0 ? (uint64_t)ws->cfg.synth_seed : 0;
    ws->held = hlx_hf_held_default(&ws->cfg);
    return HLX_OK;
}

void hlx_wsrc_hold(hlx_wsrc_t *ws, hlx_dtype_t held)
{
    ws->held = held;
}

hlx_status_t hlx_wsrc_kv_scales(hlx_wsrc_t *ws, hlx_dtype_t kv_dtype, int layer, int head,
                                double *k_p, double *v_p, char *err, size_t errlen)
{
    hlx_status_t st;

    *k_p = *v_p = 1.0;
    if (ws->ck == NULL || !ws->cfg.kv_scales || kv_dtype != HLX_DTYPE_FP8)
        return HLX_OK;
    if ((st = hlx_hf_kv_scale(ws->ck, &ws->cfg, layer, 0, head, k_p)) != HLX_OK ||
        (st = hlx_hf_kv_scale(ws->ck, &ws->cfg, layer, 1, head, v_p)) != HLX_OK) {
        snprintf(err, errlen, "%s", hlx_ckpt_error(ws->ck));
        return st;
    }
    if (ws->cfg.m.attn == HLX_ATTN_MLA && *k_p != *v_p) {
        snprintf(err, errlen, "%s: layer %d: k_scale %g and v_scale %g differ, and MLA's "
                 "latent cache holds its keys and values in one row (one scale)",
                 hlx_ckpt_dir(ws->ck), layer, *k_p, *v_p);
        return HLX_ERR_MISMATCH;
    }
    return HLX_OK;
}

void hlx_wsrc_fini(hlx_wsrc_t *ws)
{
    if (ws->ck != NULL)
        hlx_ckpt_close(ws->ck);
    ws->ck = NULL;
}

static int hlx_wsrc_is_embed(const char *name)
{
    return !strcmp(name, "model.embed_tokens.weight");
}

static hlx_status_t hlx_wsrc_read_synth(hlx_wsrc_t *ws, const char *name, int64_t rows,
                                        int64_t cols, int64_t r0, int64_t nr, int64_t c0,
                                        int64_t nc, void *dst, hlx_dtype_t dt, int64_t ld)
{
    const hlx_model_t *m = &ws->cfg.m;
    hlx_hf_weight_t w;
    hlx_hf_expect_t t;
    int layer, round = !hlx_ends_with(name, "e_score_correction_bias");
    int64_t r, c;
    float v;

    /* a tied head ([H][V]) is the embedding ([V][H]): its values, transposed */
    if (m->tie_embeddings && hlx_hf_weight_parse(name, &w, &layer) == 0 &&
        w == HLX_HFW_LMHEAD) {
        char emb[128];
        const size_t es = (size_t)hlx_dtype_bytes(dt);
        char *row = malloc(es * (size_t)nr);
        hlx_status_t st = row == NULL ? HLX_ERR_NOMEM : HLX_OK;
        hlx_hf_weight_name(HLX_HFW_EMBED, 0, emb, sizeof(emb));
        /* head column c0 + c (vocabulary entry) is the embedding's row c0 + c: its hidden
         * elements [r0, r0 + nr) read as one run, then into dst's column c */
        for (c = 0; c < nc && st == HLX_OK; c++) {
            st = hlx_wsrc_read_synth(ws, emb, m->vocab, m->hidden, c0 + c, 1, r0, nr, row, dt,
                                     nr);
            for (r = 0; r < nr && st == HLX_OK && es == 4; r++)
                ((float *)dst)[r * ld + c] = ((const float *)row)[r];
            for (r = 0; r < nr && st == HLX_OK && es == 2; r++)
                ((uint16_t *)dst)[r * ld + c] = ((const uint16_t *)row)[r];
        }
        free(row);
        return st;
    }
    if (ws->cfg.family == HLX_HF_DENSE && hlx_hf_weight_parse(name, &w, &layer) == 0) {
        uint64_t key = hlx_synth_key(ws->seed, layer, (hlx_tensor_t)w);
        for (r = 0; r < nr; r++)
            hlx_synth_weight_run(m, key, (hlx_tensor_t)w, (uint64_t)((r0 + r) * cols + c0), nc,
                                 (char *)dst + (size_t)(r * ld) * (size_t)hlx_dtype_bytes(dt),
                                 dt);
        return HLX_OK;
    }
    memset(&t, 0, sizeof(t));
    snprintf(t.name, sizeof(t.name), "%s", name);
    t.dtype = ws->cfg.st_dtype;
    t.cls = hlx_ends_with(name, "norm.weight") ? HLX_HFC_NORM : HLX_HFC_ATTN;
    if (rows == 1) { /* 1-D */
        t.ndim = 1;
        t.shape[0] = cols;
    } else if (hlx_wsrc_is_embed(name)) {
        t.ndim = 2;
        t.shape[0] = rows;
        t.shape[1] = cols;
    } else { /* stored [out][in] */
        t.ndim = 2;
        t.shape[0] = cols;
        t.shape[1] = rows;
    }
    for (r = 0; r < nr; r++)
        for (c = 0; c < nc; c++) {
            int64_t gr = r0 + r, gc = c0 + c;
            if (t.ndim == 1 || hlx_wsrc_is_embed(name))
                v = hlx_ckpt_synth_value(ws->seed, &t, t.ndim == 1 ? 0 : gr, gc);
            else
                v = hlx_ckpt_synth_value(ws->seed, &t, gc, gr);
            if (round)
                v = hlx_round_dtype(v, m->weight_dtype);
            hlx_dtype_store(dst, dt, (size_t)(r * ld + c), v);
        }
    return HLX_OK;
}

/* round: the f32 values rounded to bf16 (hlx_wsrc_read), done here where *rounded_p is set */
static hlx_status_t hlx_wsrc_read_ckpt(hlx_wsrc_t *ws, const char *key, int64_t rows,
                                       int64_t cols, int64_t r0, int64_t nr, int64_t c0,
                                       int64_t nc, void *dst, hlx_dtype_t dt, int64_t ld,
                                       int round, int *rounded_p)
{
    char ckname[160];
    const char *name = ckname; /* the checkpoint's name of the runtime's key */
    const hlx_ckpt_tensor_t *t;
    hlx_hf_weight_t w;
    int64_t shape[2];
    int layer;
    hlx_status_t st;

    if (ws->cfg.family == HLX_HF_DENSE && hlx_hf_weight_parse(key, &w, &layer) == 0) {
        *rounded_p = 1; /* Gemma's norms: the stored w - 1 rounded, then 1 added */
        return hlx_hf_read_held(ws->ck, &ws->cfg.m, w, layer, r0, nr, c0, nc, dst, dt, ld,
                                round);
    }
    hlx_hf_ckpt_name(&ws->cfg, key, ckname, sizeof(ckname)); /* Mixtral's expert names */
    if (rows == 1) {
        shape[0] = cols;
        st = hlx_ckpt_get(ws->ck, name, 1, shape, &t);
        return st ? st : hlx_ckpt_read_block(ws->ck, t, 0, 1, c0, nc, 0, dst, dt, ld);
    }
    if (hlx_wsrc_is_embed(name)) {
        shape[0] = rows;
        shape[1] = cols;
        st = hlx_ckpt_get(ws->ck, name, 2, shape, &t);
        return st ? st : hlx_ckpt_read_block(ws->ck, t, r0, nr, c0, nc, 0, dst, dt, ld);
    }
    shape[0] = cols;
    shape[1] = rows;
    if ((st = hlx_ckpt_get(ws->ck, name, 2, shape, &t)) != HLX_OK)
        return st;
    return hlx_ckpt_read_block(ws->ck, t, c0, nc, r0, nr, 1, dst, dt, ld);
}

hlx_status_t hlx_wsrc_read(hlx_wsrc_t *ws, const char *name, int64_t rows, int64_t cols,
                           int64_t r0, int64_t nr, int64_t c0, int64_t nc, void *dst,
                           hlx_dtype_t dt, int64_t ld, char *err, size_t errlen)
{
    /* weights held in bf16 while stored otherwise (F16, F32, quantized: engine.c): an f32
     * read (the reference, the ranks' norms) sees the same rounded values. The routing's
     * correction bias is F32 in every checkpoint (hlx_hf_expect) and never rounded (the
     * synthetic one neither): an f32 tensor of the router, not a weight held in bf16. */
    const int round = hlx_hf_held_rounded(&ws->cfg, ws->held) && dt == HLX_DTYPE_F32 &&
                      !hlx_ends_with(name, "e_score_correction_bias");
    int rounded = 0;
    hlx_status_t st;

    if (rows < 1 || cols < 1 || r0 < 0 || c0 < 0 || nr < 0 || nc < 0 || r0 > rows - nr ||
        c0 > cols - nc || ld < nc ||
        (dt != HLX_DTYPE_F32 && dt != HLX_DTYPE_BF16 && !(hlx_ckpt_qmode(dt) && ws->ck))) {
        snprintf(err, errlen, "%s: block [%lld, +%lld) x [%lld, +%lld) (ld %lld) outside the "
                 "tensor's %lld x %lld", name, (long long)r0, (long long)nr, (long long)c0,
                 (long long)nc, (long long)ld, (long long)rows, (long long)cols);
        return HLX_ERR_INVALID;
    }
    if (nr == 0 || nc == 0)
        return HLX_OK;
    if (ws->ck == NULL)
        st = hlx_wsrc_read_synth(ws, name, rows, cols, r0, nr, c0, nc, dst, dt, ld);
    else
        st = hlx_wsrc_read_ckpt(ws, name, rows, cols, r0, nr, c0, nc, dst, dt, ld, round,
                                &rounded);
    if (st != HLX_OK) {
        if (ws->ck != NULL)
            snprintf(err, errlen, "%s", hlx_ckpt_error(ws->ck));
        else
            snprintf(err, errlen, "%s: %s", name, hlx_status_str(st));
        return st;
    }
    if (round && !rounded) /* not a part's read (dt f32) */
        hlx_hf_round_bf16(dst, nr, nc, ld);
    return HLX_OK;
}

int hlx_wsrc_packed(hlx_wsrc_t *ws, const char *key, int *bits_p, int64_t *group_p,
                    const uint8_t **lut_p)
{
    char name[160];
    hlx_hf_weight_t w;
    int64_t hrows, row0;
    int layer;

    if (ws->ck == NULL)
        return 0;
    /* the tensor hlx_wsrc_read reads (a tied head: the embedding, never packed) */
    if (ws->cfg.family == HLX_HF_DENSE && hlx_hf_weight_parse(key, &w, &layer) == 0)
        hlx_hf_read_source(ws->ck, &ws->cfg.m, w, layer, name, sizeof(name), &hrows, &row0);
    else
        hlx_hf_ckpt_name(&ws->cfg, key, name, sizeof(name));
    return hlx_ckpt_packed_groups(ws->ck, hlx_ckpt_find(ws->ck, name), bits_p, group_p, lut_p);
}
