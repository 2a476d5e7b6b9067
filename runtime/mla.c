/* MLA attention in DeepSeek-V3's absorbed decode form (hlx_mla.h): weights by checkpoint
 * name, the latent row and absorbed queries of a step, and the W_UV up-projection. */
#define _GNU_SOURCE
#include "hlx_engine_int.h"
#include "hlx_mla.h"

#include "hlx_time.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HLX_BE(_eng, _op, ...) (_eng)->be.ops->_op(&(_eng)->be, (_eng)->q, __VA_ARGS__)

void hlx_mla_kv_dims(const hlx_model_t *m, int *kv_dk, int *kv_dv, int *xdv)
{
    if (m->attn == HLX_ATTN_MLA) {
        *kv_dk = m->kv_lora_rank + m->qk_rope_dim;
        *kv_dv = 0;
        *xdv   = m->kv_lora_rank;
    } else {
        *kv_dk = m->head_dim;
        *kv_dv = m->v_head_dim;
        *xdv   = m->v_head_dim;
    }
}

/* a * b * c + *acc, 0 on overflow */
static int hlx_mla_mad(uint64_t *acc, uint64_t a, uint64_t b, uint64_t c)
{
    return !__builtin_mul_overflow(a, b, &a) && !__builtin_mul_overflow(a, c, &a) &&
           !__builtin_add_overflow(*acc, a, acc);
}

uint64_t hlx_mla_absorbed_elems(const hlx_model_t *m, const hlx_layout_t *L)
{
    const uint64_t r = (uint64_t)m->kv_lora_rank;
    uint64_t n = 0;
    const int ok = hlx_mla_mad(&n, (uint64_t)m->q_heads, (uint64_t)m->qk_nope_dim, r) &&
                   hlx_mla_mad(&n, (uint64_t)L->q_slice, r, (uint64_t)m->v_head_dim);

    return ok ? n : UINT64_MAX;
}

void hlx_mla_proj_shapes(const hlx_model_t *m, int64_t shape[3][2])
{
    const int64_t H = m->hidden, ql = m->q_lora_rank,
                  qc = (int64_t)m->q_heads * ((int64_t)m->qk_nope_dim + m->qk_rope_dim);

    shape[0][0] = H, shape[0][1] = ql;
    shape[1][0] = ql > 0 ? ql : H, shape[1][1] = qc;
    shape[2][0] = H, shape[2][1] = (int64_t)m->kv_lora_rank + m->qk_rope_dim;
}

hlx_status_t hlx_mla_check_sizes(const hlx_model_t *m, int batch, char *err, size_t errlen)
{
    int64_t Q = m->q_heads, qk = (int64_t)m->qk_nope_dim + m->qk_rope_dim;
    int64_t kd = (int64_t)m->kv_lora_rank + m->qk_rope_dim;
    int64_t widest = Q * (kd > qk ? kd : qk);

    /* kernel dimensions are ints: the query row of all heads, the latent row, the
     * exchanged partials of all heads and the kv_b_proj row */
    if (Q * (m->qk_nope_dim + (int64_t)m->v_head_dim) > widest)
        widest = Q * (m->qk_nope_dim + (int64_t)m->v_head_dim);
    if (widest > INT32_MAX || (int64_t)batch * widest > ((int64_t)1 << 40)) {
        snprintf(err, errlen, "sizes overflow: model %s gives %lld query heads x (kv_lora %d + "
                 "rope %d, nope %d + v %d) = %lld columns per request (batch %d), beyond "
                 "2^31 - 1 (or 2^40 for the batch)", m->name, (long long)Q, m->kv_lora_rank,
                 m->qk_rope_dim, m->qk_nope_dim, m->v_head_dim, (long long)widest, batch);
        return HLX_ERR_INVALID;
    }
    return HLX_OK;
}

/* Rows [r0, +nr) x cols [c0, +nc) of self_attn.<what>.weight of layer l (runtime shape
 * rows x cols) into dst as dt with leading dimension ld. */
static hlx_status_t hlx_mla_read(hlx_engine_t *eng, int l, const char *what, int64_t rows,
                                 int64_t cols, int64_t r0, int64_t nr, int64_t c0, int64_t nc,
                                 void *dst, hlx_dtype_t dt, int64_t ld)
{
    char name[128];

    snprintf(name, sizeof(name), "model.layers.%d.self_attn.%s.weight", l, what);
    return hlx_wsrc_read(&eng->ws, name, rows, cols, r0, nr, c0, nc, dst, dt, ld, eng->errmsg,
                         sizeof(eng->errmsg));
}

/* Layer l's projections read into the gemm's layout, each K x N whole: q_a (none without
 * q_lora_rank), q_b (or q), kv_a. */
static void hlx_mla_parts(const hlx_model_t *m, int l, hlx_wpart_t p[3])
{
    const int64_t ql = m->q_lora_rank;
    int64_t shape[3][2];
    int i;

    hlx_mla_proj_shapes(m, shape);
    for (i = 0; i < 3; i++)
        p[i] = (hlx_wpart_t){ .rows = shape[i][0], .cols = shape[i][1], .nc = shape[i][1] };
    snprintf(p[0].name, sizeof(p[0].name), "model.layers.%d.self_attn.q_a_proj.weight", l);
    snprintf(p[1].name, sizeof(p[1].name), "model.layers.%d.self_attn.%s.weight", l,
             ql > 0 ? "q_b_proj" : "q_proj");
    snprintf(p[2].name, sizeof(p[2].name),
             "model.layers.%d.self_attn.kv_a_proj_with_mqa.weight", l);
}

hlx_status_t hlx_mla_proj_walk(hlx_engine_t *eng, const hlx_wsink_t *sk, int l,
                               hlx_mla_layer_t *W)
{
    void **dst[3] = { NULL, NULL, NULL };
    hlx_wpart_t p[3];
    hlx_status_t st = HLX_OK;
    int i;

    if (W != NULL)
        dst[0] = &W->wqa, dst[1] = &W->wqb, dst[2] = &W->wkva;
    hlx_mla_parts(&eng->m, l, p);
    for (i = eng->m.q_lora_rank > 0 ? 0 : 1; i < 3 && st == HLX_OK; i++)
        st = hlx_engine_wput(eng, sk, dst[i], p[i].rows, p[i].nc, &p[i], 1);
    return st;
}

static hlx_status_t hlx_mla_layer_load(hlx_engine_t *eng, hlx_mla_t *M, int l)
{
    const hlx_model_t *m = &eng->m;
    const hlx_layout_t *L = &eng->lay;
    hlx_mla_layer_t *W = &M->layers[l];
    int64_t Q = m->q_heads, r = M->r, ql = M->ql, kvb = (int64_t)M->nope + M->v;
    size_t es = eng->w_esize;
    float *tmp;
    int64_t h, i, j;
    hlx_status_t st;

    W->qa_norm  = hlx_be_zalloc(eng, (size_t)ql, sizeof(float));
    W->kva_norm = hlx_be_zalloc(eng, (size_t)r, sizeof(float));
    W->wuk      = hlx_be_zalloc(eng, (size_t)(Q * M->nope * r), es);
    W->wuv      = hlx_be_zalloc(eng, (size_t)((int64_t)L->q_slice * r * M->v), es);
    tmp         = calloc((size_t)(r * M->nope) + 1, sizeof(float));
    if (!W->qa_norm || !W->kva_norm || !W->wuk || !W->wuv || !tmp) {
        free(tmp);
        return HLX_ERR_NOMEM;
    }
#define HLX_MREAD(...) \
    do { \
        if ((st = hlx_mla_read(eng, l, __VA_ARGS__)) != HLX_OK) \
            goto out; \
    } while (0)
    /* the plain GEMMs' weights in the gemm's layout (W_UK and W_UV, read per head at
     * strides by gemm_batched, stay row-major) */
    if ((st = hlx_mla_proj_walk(eng, NULL, l, W)) != HLX_OK)
        goto out;
    if (ql > 0)
        HLX_MREAD("q_a_layernorm", 1, ql, 0, 1, 0, ql, W->qa_norm, HLX_DTYPE_F32, ql);
    HLX_MREAD("kv_a_layernorm", 1, r, 0, 1, 0, r, W->kva_norm, HLX_DTYPE_F32, r);
    /* kv_b_proj [kv_lora][Q * (nope + v)]: per head W_UK [kv_lora][nope] then W_UV
     * [kv_lora][v]. Every rank absorbs W_UK of all heads (it computes every head's
     * partial on its shard); W_UV only of the heads it owns after the all-to-all. */
    for (h = 0; h < Q; h++) {
        char *dst = (char *)W->wuk + (size_t)(h * M->nope * r) * es;
        HLX_MREAD("kv_b_proj", r, Q * kvb, 0, r, h * kvb, M->nope, tmp, HLX_DTYPE_F32, M->nope);
        for (i = 0; i < r; i++) /* transposed: [nope][kv_lora] */
            for (j = 0; j < M->nope; j++)
                hlx_dtype_store(dst, eng->w_dtype, (size_t)(j * r + i), tmp[i * M->nope + j]);
    }
    for (h = 0; h < L->q_slice; h++)
        HLX_MREAD("kv_b_proj", r, Q * kvb, 0, r, (L->q_slice_first + h) * kvb + M->nope, M->v,
                  (char *)W->wuv + (size_t)(h * r * M->v) * es, eng->w_dtype, M->v);
#undef HLX_MREAD
    st = HLX_OK;
out:
    free(tmp);
    return st;
}

hlx_status_t hlx_mla_create(hlx_engine_t *eng)
{
    const hlx_model_t *m = &eng->m;
    hlx_mla_t *M = calloc(1, sizeof(*M));
    hlx_status_t st;
    int l;

    if (M == NULL)
        return HLX_ERR_NOMEM;
    eng->mla  = M;
    M->ql     = m->q_lora_rank;
    M->r      = m->kv_lora_rank;
    M->nope   = m->qk_nope_dim;
    M->rope   = m->qk_rope_dim;
    M->qk     = M->nope + M->rope;
    M->v      = m->v_head_dim;
    M->q_cols = m->q_heads * M->qk;
    M->layers = calloc((size_t)m->layers, sizeof(*M->layers));
    if (M->layers == NULL)
        return HLX_ERR_NOMEM;
    if ((st = hlx_mla_rows_alloc(eng, eng->cfg.batch, &M->step)) != HLX_OK)
        return st;
    for (l = 0; l < m->layers; l++)
        if ((st = hlx_mla_layer_load(eng, M, l)) != HLX_OK)
            return st;
    return HLX_OK;
}

void hlx_mla_destroy(hlx_engine_t *eng)
{
    hlx_mla_t *M = eng->mla;
    int l;

    if (M == NULL)
        return;
    for (l = 0; M->layers && l < eng->m.layers; l++) {
        hlx_mla_layer_t *W = &M->layers[l];
        void *w[] = { W->wqa, W->qa_norm, W->wqb, W->wkva, W->kva_norm, W->wuk, W->wuv };
        size_t i;
        for (i = 0; i < sizeof(w) / sizeof(w[0]); i++)
            hlx_be_free(eng, w[i]);
    }
    free(M->layers);
    hlx_mla_rows_free(eng, &M->step);
    free(M);
    eng->mla = NULL;
}

/* ---- row buffers: the decode step's B rows and the prefill's R = n x C rows */

void hlx_mla_rows_free(hlx_engine_t *eng, hlx_mla_rows_t *rw)
{
    float *bufs[] = { rw->qa, rw->q, rw->kvn, rw->qabs, rw->ov };
    size_t i;

    for (i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        hlx_be_free(eng, bufs[i]);
    memset(rw, 0, sizeof(*rw));
}

hlx_status_t hlx_mla_rows_alloc(hlx_engine_t *eng, int rows, hlx_mla_rows_t *rw)
{
    const hlx_mla_t *M = eng->mla;
    size_t R = (size_t)rows, Q = (size_t)eng->m.q_heads, kd = (size_t)(M->r + M->rope);

    memset(rw, 0, sizeof(*rw));
    rw->R    = rows;
    rw->qa   = hlx_be_zalloc(eng, R * (size_t)M->ql, sizeof(float));
    rw->q    = hlx_be_zalloc(eng, R * (size_t)M->q_cols, sizeof(float));
    rw->kvn  = hlx_be_zalloc(eng, R * kd, sizeof(float));
    rw->qabs = hlx_be_zalloc(eng, R * Q * kd, sizeof(float));
    rw->ov   = hlx_be_zalloc(eng, R * (size_t)eng->lay.q_slice * (size_t)M->v, sizeof(float));
    if (!rw->qa || !rw->q || !rw->kvn || !rw->qabs || !rw->ov) {
        hlx_mla_rows_free(eng, rw);
        return HLX_ERR_NOMEM;
    }
    return HLX_OK;
}

/* rows rows of n floats between two strided backend buffers, in queue order */
#define HLX_MLA_ROWS(_eng, _dst, _ldd, _src, _lds, _rows, _n) \
    HLX_BE(_eng, copy_rows, _dst, (size_t)(_ldd), _src, (size_t)(_lds), _rows, _n)

/* The latent rows of R rows of hn (before RoPE): kvn = kv_a hn, then its first kv_lora
 * columns normalised in place: [norm(c) | k_rope]. */
static hlx_status_t hlx_mla_latent(hlx_engine_t *eng, const hlx_mla_layer_t *W,
                                   hlx_mla_rows_t *rw, const float *hn, int R)
{
    const hlx_mla_t *M = eng->mla;
    const int kd = M->r + M->rope;
    hlx_status_t st;

    st = HLX_BE(eng, gemm, R, kd, eng->m.hidden, hn, W->wkva, eng->wp_dtype, rw->kvn, 0);
    if (st == HLX_OK)
        st = HLX_BE(eng, rmsnorm_heads, rw->kvn, R, (size_t)kd, 1, M->r, W->kva_norm,
                    (float)eng->m.norm_eps);
    return st;
}

/* The queries of R rows of hn (before RoPE), per head [nope | rope]: q_b(norm(q_a hn)), or
 * q_proj hn. */
static hlx_status_t hlx_mla_queries(hlx_engine_t *eng, const hlx_mla_layer_t *W,
                                    hlx_mla_rows_t *rw, const float *hn, int R)
{
    const hlx_mla_t *M = eng->mla;
    const int H = eng->m.hidden;
    hlx_status_t st;

    if (M->ql == 0)
        return HLX_BE(eng, gemm, R, M->q_cols, H, hn, W->wqb, eng->wp_dtype, rw->q, 0);
    st = HLX_BE(eng, gemm, R, M->ql, H, hn, W->wqa, eng->wp_dtype, rw->qa, 0);
    if (st == HLX_OK)
        st = HLX_BE(eng, rmsnorm, rw->qa, rw->qa, W->qa_norm, R, M->ql, (float)eng->m.norm_eps);
    if (st == HLX_OK)
        st = HLX_BE(eng, gemm, R, M->q_cols, M->ql, rw->qa, W->wqb, eng->wp_dtype, rw->q, 0);
    return st;
}

/* The absorbed queries of R rows (after RoPE), per head [W_UK[h] q_nope[h] | q_rope[h]]:
 * one batch of Q GEMMs (head h: the nope columns of every row, [R][nope] x W_UK[h]) and
 * one copy of every (row, head)'s rope part. */
static hlx_status_t hlx_mla_absorb(hlx_engine_t *eng, const hlx_mla_layer_t *W,
                                   hlx_mla_rows_t *rw, int R)
{
    const hlx_mla_t *M = eng->mla;
    const int Q = eng->m.q_heads, kd = M->r + M->rope;
    const hlx_gemm_batch_desc_t g = {
        .batch = Q, .M = R, .N = M->r, .K = M->nope,
        .x = rw->q, .ldx = (size_t)M->q_cols, .sx = (size_t)M->qk,
        .w = W->wuk, .sw = (size_t)M->nope * (size_t)M->r, .w_dtype = eng->w_dtype,
        .y = rw->qabs, .ldy = (size_t)Q * kd, .sy = (size_t)kd,
    };
    hlx_status_t st;

    if ((int64_t)R * Q > INT32_MAX) {
        hlx_engine_set_errmsg(eng, "MLA: %d rows x %d query heads exceed 2^31 - 1 (lower "
                              "--prefill-chunk or --batch)", R, Q);
        return HLX_ERR_INVALID;
    }
    st = HLX_BE(eng, gemm_batched, &g);

    /* (row, head) pairs are R x Q rows of qk floats in q and of kd in qabs */
    if (st == HLX_OK)
        st = HLX_MLA_ROWS(eng, rw->qabs + M->r, kd, rw->q + M->nope, M->qk, R * Q, M->rope);
    return st;
}

/* W_UV on R rows of merged latent heads omerged ([R][q_slice][kv_lora]) into rw->ov
 * ([R][q_slice][v]): one batch of q_slice GEMMs. */
static hlx_status_t hlx_mla_wuv(hlx_engine_t *eng, const hlx_mla_layer_t *W, hlx_mla_rows_t *rw,
                                const float *omerged, int R)
{
    const hlx_mla_t *M = eng->mla;
    const int n = eng->lay.q_slice;
    const hlx_gemm_batch_desc_t g = {
        .batch = n, .M = R, .N = M->v, .K = M->r,
        .x = omerged, .ldx = (size_t)n * M->r, .sx = (size_t)M->r,
        .w = W->wuv, .sw = (size_t)M->r * (size_t)M->v, .w_dtype = eng->w_dtype,
        .y = rw->ov, .ldy = (size_t)n * M->v, .sy = (size_t)M->v,
    };

    return HLX_BE(eng, gemm_batched, &g);
}

/* The append of latent row k_new of request shard `shard` at its slot t. */
static hlx_status_t hlx_mla_append(hlx_engine_t *eng, int l, size_t shard, size_t t,
                                   const float *k_new)
{
    hlx_kv_append_desc_t d = {
        .kc = eng->layers[l].kc, .vc = NULL, .kv_dtype = eng->kv_dtype,
        .layout = eng->be.k.kv_layout, .dk = eng->mla->r + eng->mla->rope, .dv = 0,
        .cap = (size_t)eng->cap, .shard0 = shard, .t = t, .nheads = 1, .k_new = k_new,
        .v_new = NULL,
    };

    return hlx_phase_kv_append(eng, l, &d, 1.0);
}

/* ---- the decode step (B rows, request b at its own position) */

hlx_status_t hlx_mla_qkv(hlx_engine_t *eng, int l)
{
    const hlx_layout_t *L = &eng->lay;
    hlx_mla_t *M = eng->mla;
    hlx_mla_rows_t *S = &M->step;
    const hlx_mla_layer_t *W = &M->layers[l];
    int B = eng->cfg.batch, kd = M->r + M->rope, b;
    hlx_status_t st;

    st = HLX_BE(eng, rmsnorm, eng->hn, eng->x, eng->layers[l].attn_norm, B, eng->m.hidden,
                (float)eng->m.norm_eps);
    /* The latent row: c = norm(kv_a x)[:kv_lora], k_rope = RoPE(kv_a x [kv_lora:]). */
    if (st == HLX_OK)
        st = hlx_mla_latent(eng, W, S, eng->hn, B);
    if (st == HLX_OK) /* at each request's position */
        st = hlx_phase_rope(eng, l, S->kvn + M->r, (size_t)kd, 1, M->rope, M->rope);
    if (st == HLX_OK)
        st = hlx_mla_queries(eng, W, S, eng->hn, B);
    if (st == HLX_OK)
        st = hlx_phase_rope(eng, l, S->q + M->nope, (size_t)M->q_cols, eng->m.q_heads, M->qk,
                            M->rope);
    if (st == HLX_OK)
        st = hlx_mla_absorb(eng, W, S, B);
    /* Staggered append of [c | k_rope] by the owner of each request's position: one row,
     * no separate value cache. */
    for (b = 0; b < B && st == HLX_OK && !(eng->fault_now & HLX_FAULT_SKIP_APPEND); b++)
        if (hlx_layout_kv_owner(L, hlx_engine_row_pos(eng, b)) == L->kvp_rank)
            st = hlx_mla_append(eng, l, (size_t)b, (size_t)hlx_engine_row_kv_len(eng, b),
                                S->kvn + (size_t)b * kd);
    return st;
}

void hlx_mla_attn_desc(const hlx_engine_t *eng, int l, int b, size_t len, hlx_attn_desc_t *d)
{
    const hlx_mla_t *M = eng->mla;
    const int Q = eng->m.q_heads, kd = M->r + M->rope;
    const void *k = (const char *)eng->layers[l].kc +
                    hlx_kv_shard_index(eng, l, 1, (size_t)b, 0, 0) * eng->kv_esize;

    memset(d, 0, sizeof(*d));
    d->group    = Q;
    d->dk       = kd;
    d->dv       = M->r;
    d->len      = len;
    d->kv_dtype = eng->kv_dtype;
    d->q        = M->step.qabs + (size_t)b * Q * kd;
    d->k        = k;
    d->v        = k; /* the value is the latent: the head of the key row */
    d->k_stride = (size_t)kd;
    d->v_stride = (size_t)kd;
    /* DeepSeek's softmax scale over the full query-key width (nope + rope); yarn's mscale
     * is not applied (plain RoPE). */
    d->scale    = eng->attn_scale * eng->layers[l].k_scale[0]; /* fp8 KV: stored c / k_scale */
    d->o        = eng->opart + (size_t)b * Q * M->r;
    d->lse      = eng->lsepart + (size_t)b * Q;
    d->kv_clean = hlx_kv_clean(eng, l, (size_t)b);
}

const float *hlx_mla_up(hlx_engine_t *eng, int l, hlx_status_t *st_p)
{
    hlx_mla_t *M = eng->mla;

    *st_p = hlx_mla_wuv(eng, &M->layers[l], &M->step, eng->omerged, eng->cfg.batch);
    return M->step.ov;
}

/* ---- chunked prefill: n x C rows (row k * C + i holds token i of the chunk's k-th request) */

hlx_status_t hlx_mla_rows_qkv(hlx_engine_t *eng, int l, hlx_mla_rows_t *rw, const float *x,
                              float *hn, int n, const int *rq, int c, int64_t pos0)
{
    const hlx_layout_t *L = &eng->lay;
    hlx_mla_t *M = eng->mla;
    const hlx_mla_layer_t *W = &M->layers[l];
    int R = n * c, Q = eng->m.q_heads, kd = M->r + M->rope;
    int i, k;
    const hlx_rope_tab_t *theta = &eng->rope;
    hlx_status_t st;

    st = HLX_BE(eng, rmsnorm, hn, x, eng->layers[l].attn_norm, R, eng->m.hidden,
                (float)eng->m.norm_eps);
    /* The latent rows [c | k_rope], RoPE at each token's position: the rows of token i of
     * every request are c rows apart. */
    if (st == HLX_OK)
        st = hlx_mla_latent(eng, W, rw, hn, R);
    for (i = 0; i < c && st == HLX_OK; i++)
        st = HLX_BE(eng, rope, rw->kvn + (size_t)i * kd + M->r, n, (size_t)c * kd, 1, M->rope,
                    M->rope, pos0 + i, theta);
    if (st == HLX_OK)
        st = hlx_mla_queries(eng, W, rw, hn, R);
    for (i = 0; i < c && st == HLX_OK; i++)
        st = HLX_BE(eng, rope, rw->q + (size_t)i * M->q_cols + M->nope, n,
                    (size_t)c * M->q_cols, Q, M->qk, M->rope, pos0 + i, theta);
    if (st == HLX_OK)
        st = hlx_mla_absorb(eng, W, rw, R);
    /* Staggered append: the owner of each position stores its latent rows. */
    for (i = 0; i < c && st == HLX_OK; i++) {
        int64_t pos = pos0 + i;
        if (hlx_layout_kv_owner(L, pos) != L->kvp_rank)
            continue;
        for (k = 0; k < n && st == HLX_OK; k++)
            st = hlx_mla_append(eng, l, (size_t)rq[k],
                                (size_t)hlx_layout_kv_count(L, L->kvp_rank, pos),
                                rw->kvn + ((size_t)k * c + i) * kd);
    }
    return st;
}

void hlx_mla_rows_attn_desc(const hlx_engine_t *eng, int l, const hlx_mla_rows_t *rw, int k,
                            int req, int c, hlx_attn_desc_t *d)
{
    const hlx_mla_t *M = eng->mla;
    int Q = eng->m.q_heads, kd = M->r + M->rope;

    hlx_mla_attn_desc(eng, l, req, 0, d);
    d->group = c * Q; /* the c rows' query heads, [c][Q][kd] */
    d->q     = rw->qabs + (size_t)k * c * Q * kd;
    d->o     = NULL;
    d->lse   = NULL;
}

hlx_status_t hlx_mla_rows_up(hlx_engine_t *eng, int l, hlx_mla_rows_t *rw, const float *omerged,
                             int R)
{
    return hlx_mla_wuv(eng, &eng->mla->layers[l], rw, omerged, R);
}
