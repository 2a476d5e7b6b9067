/* fp64 MLA attention of the reference (hlx_reference_mla.h), written for clarity: per head,
 * keys and values are up-projected from the cached latent (the form DeepSeek-V3 trains
 * with), never absorbed, so --check also tests the engine's absorption. */
#include "hlx_reference_mla.h"
#include "hlx_ref_util.h"
#include "hlx_synth.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double *wqa, *qa_norm, *wq; /* wq: q_b_proj [q_lora][Q*qk], or q_proj [H][Q*qk] */
    double *wkva, *kva_norm, *wkvb;
    float   kscale; /* the fp8 KV-cache scale of the latent rows (hlx_wsrc_kv_scales), else 1 */
} hlx_ref_mla_layer_t;

struct hlx_ref_mla {
    hlx_model_t          m;
    hlx_dtype_t          kv_dtype;
    int                  batch;
    int64_t              cap;
    int                  r, rope, nope, qk, v, ql, Q, H;
    hlx_ref_mla_layer_t *layers;
    float               *rows; /* [L][B][cap][r + rope]: [c | k_rope], rounded to kv_dtype */
    double              *kv;   /* [L][B][cap][Q][nope + v]: W_UK^T c and W_UV^T c per head */
    double              *tmp;  /* scratch: q_a, q, kv_a, scores */
    double              *rope_freq; /* hlx_model_rope_freqs of the rope_dim elements */
    double               rope_ms;   /* ... and its factor on cos and sin */
};

/* self_attn.<what>.weight of layer l, whole (runtime shape rows x cols), in fp64. */
static double *hlx_ref_mla_tensor(hlx_wsrc_t *ws, int l, const char *what, int64_t rows,
                                  int64_t cols)
{
    char name[128], err[256];

    snprintf(name, sizeof(name), "model.layers.%d.self_attn.%s.weight", l, what);
    return hlx_ref_read(ws, name, rows, cols, err, sizeof(err));
}

/* RoPE of the d rotated elements: inv_freq and the cos/sin factor ms of
 * hlx_model_rope_freqs (the model's scaling). */
static void hlx_rm_rope(double *x, int d, int64_t pos, const double *inv_freq, double ms)
{
    int i;

    for (i = 0; i < d / 2; i++) {
        double ang = (double)pos * inv_freq[i], a = x[2 * i], b = x[2 * i + 1];
        double c = cos(ang) * ms, s = sin(ang) * ms;
        x[2 * i]     = a * c - b * s;
        x[2 * i + 1] = a * s + b * c;
    }
}

static size_t hlx_rm_slot(const hlx_ref_mla_t *a, int l, int b, int64_t pos)
{
    return ((size_t)l * (size_t)a->batch + (size_t)b) * (size_t)a->cap + (size_t)pos;
}

/* Per-head key (nope part) and value of a cached latent row, from its rounded c. */
static void hlx_rm_derive(hlx_ref_mla_t *a, int l, int b, int64_t pos)
{
    const float *c = a->rows + hlx_rm_slot(a, l, b, pos) * (size_t)(a->r + a->rope);
    double *kv = a->kv + hlx_rm_slot(a, l, b, pos) * (size_t)a->Q * (size_t)(a->nope + a->v);
    const double *w = a->layers[l].wkvb; /* [r][Q * (nope + v)] */
    int64_t n = (int64_t)a->Q * (a->nope + a->v), i, j;

    for (j = 0; j < n; j++)
        kv[j] = 0.0;
    for (i = 0; i < a->r; i++)
        for (j = 0; j < n; j++)
            kv[j] += (double)c[i] * w[i * n + j];
}

uint64_t hlx_ref_mla_bytes(const hlx_model_t *m, int batch, int64_t context, int steps)
{
    uint64_t n = (uint64_t)m->layers, row;

    row = (uint64_t)(m->kv_lora_rank + m->qk_rope_dim) * sizeof(float) +
          (uint64_t)m->q_heads * (uint64_t)(m->qk_nope_dim + m->v_head_dim) * sizeof(double);
    if (__builtin_mul_overflow(n, (uint64_t)batch, &n) ||
        __builtin_mul_overflow(n, (uint64_t)(context + steps), &n) ||
        __builtin_mul_overflow(n, row, &n))
        return UINT64_MAX;
    return n;
}

hlx_status_t hlx_ref_mla_create(hlx_wsrc_t *ws, const hlx_model_t *m, hlx_dtype_t kv_dtype,
                                int batch, int64_t context, int steps, uint64_t seed,
                                hlx_ref_mla_t **a_p)
{
    hlx_ref_mla_t *a = calloc(1, sizeof(*a));
    int64_t H, Q, qk, rk, p;
    size_t slots;
    int l, b, e;

    if (a == NULL)
        return HLX_ERR_NOMEM;
    a->m = *m;
    a->kv_dtype = kv_dtype;
    a->batch = batch;
    a->cap   = context + steps;
    a->r     = m->kv_lora_rank;
    a->rope  = m->qk_rope_dim;
    a->nope  = m->qk_nope_dim;
    a->qk    = a->nope + a->rope;
    a->v     = m->v_head_dim;
    a->ql    = m->q_lora_rank;
    a->Q     = m->q_heads;
    a->H     = m->hidden;
    H = a->H, Q = a->Q, qk = a->qk, rk = a->r + a->rope;
    slots = (size_t)m->layers * (size_t)batch * (size_t)(a->cap > 0 ? a->cap : 1);
    a->layers = calloc((size_t)m->layers, sizeof(*a->layers));
    a->rows   = malloc(sizeof(float) * slots * (size_t)rk);
    a->kv     = malloc(sizeof(double) * slots * (size_t)Q * (size_t)(a->nope + a->v));
    a->tmp    = malloc(sizeof(double) * (size_t)(a->ql + Q * qk + rk + a->cap + 1));
    a->rope_freq = malloc(sizeof(double) * (size_t)(a->rope / 2 + 1));
    if (!a->layers || !a->rows || !a->kv || !a->tmp || !a->rope_freq)
        goto err;
    hlx_model_rope_select(&a->m, a->cap); /* longrope's set from this run's length */
    hlx_model_rope_freqs(&a->m, a->rope, a->rope_freq, &a->rope_ms);
    for (l = 0; l < m->layers; l++) {
        hlx_ref_mla_layer_t *L = &a->layers[l];
        double ks, vs;
        if (hlx_wsrc_kv_scales(ws, kv_dtype, l, 0, &ks, &vs, NULL, 0) != HLX_OK)
            goto err;
        L->kscale = (float)ks;
        if (a->ql > 0) {
            L->wqa     = hlx_ref_mla_tensor(ws, l, "q_a_proj", H, a->ql);
            L->qa_norm = hlx_ref_mla_tensor(ws, l, "q_a_layernorm", 1, a->ql);
            L->wq      = hlx_ref_mla_tensor(ws, l, "q_b_proj", a->ql, Q * qk);
            if (!L->wqa || !L->qa_norm)
                goto err;
        } else {
            L->wq = hlx_ref_mla_tensor(ws, l, "q_proj", H, Q * qk);
        }
        L->wkva     = hlx_ref_mla_tensor(ws, l, "kv_a_proj_with_mqa", H, rk);
        L->kva_norm = hlx_ref_mla_tensor(ws, l, "kv_a_layernorm", 1, a->r);
        L->wkvb     = hlx_ref_mla_tensor(ws, l, "kv_b_proj", a->r, Q * (a->nope + a->v));
        if (!L->wq || !L->wkva || !L->kva_norm || !L->wkvb)
            goto err;
    }
    /* The synthetic prior context, as the engine fills it: one latent "head" (K = 1). */
    for (l = 0; l < m->layers; l++) {
        uint64_t kk = hlx_synth_key(seed, l, HLX_T_KCTX);
        for (b = 0; b < batch; b++)
            for (p = 0; p < context; p++) {
                float *row = a->rows + hlx_rm_slot(a, l, b, p) * (size_t)rk;
                for (e = 0; e < rk; e++)
                    row[e] = hlx_round_kv(hlx_synth_ctx(kk, b, 1, 0, p, e, (int)rk, 1),
                                          kv_dtype, a->layers[l].kscale);
                hlx_rm_derive(a, l, b, p);
            }
    }
    *a_p = a;
    return HLX_OK;
err:
    hlx_ref_mla_destroy(a);
    return HLX_ERR_NOMEM;
}

hlx_status_t hlx_ref_mla_attn(hlx_ref_mla_t *a, int l, int b, int64_t pos, const double *hn,
                              double *o)
{
    const hlx_ref_mla_layer_t *L = &a->layers[l];
    const int64_t Q = a->Q, qk = a->qk, rk = a->r + a->rope, kvw = a->nope + a->v;
    const double scale = hlx_model_softmax_scale(&a->m, (int)qk), eps = a->m.norm_eps;
    double *rf = a->rope_freq, ms = a->rope_ms;
    double *qa = a->tmp, *q = qa + a->ql, *kva = q + Q * qk, *sc = kva + rk;
    float *row;
    int64_t h, p, e;

    if (pos < 0 || pos >= a->cap)
        return HLX_ERR_INVALID;
    /* The new token's latent row: c = norm(kv_a x)[:r], k_rope = RoPE(kv_a x [r:]),
     * stored fp32 then in the KV dtype, as the engine stores it. */
    hlx_ref_matvec(kva, hn, L->wkva, a->H, rk);
    hlx_ref_rmsnorm(kva, kva, L->kva_norm, a->r, eps);
    hlx_rm_rope(kva + a->r, a->rope, pos, rf, ms);
    row = a->rows + hlx_rm_slot(a, l, b, pos) * (size_t)rk;
    for (e = 0; e < rk; e++)
        row[e] = hlx_round_kv((float)kva[e], a->kv_dtype, L->kscale);
    hlx_rm_derive(a, l, b, pos);
    /* Queries per head [nope | rope]. */
    if (a->ql > 0) {
        hlx_ref_matvec(qa, hn, L->wqa, a->H, a->ql);
        hlx_ref_rmsnorm(qa, qa, L->qa_norm, a->ql, eps);
        hlx_ref_matvec(q, qa, L->wq, a->ql, Q * qk);
    } else {
        hlx_ref_matvec(q, hn, L->wq, a->H, Q * qk);
    }
    for (h = 0; h < Q; h++)
        hlx_rm_rope(q + h * qk + a->nope, a->rope, pos, rf, ms);
    /* Per head: keys [W_UK^T c_p | k_rope_p], values W_UV^T c_p, two-pass softmax. */
    for (h = 0; h < Q; h++) {
        const double *qh = q + h * qk;
        double mx = -INFINITY, sum = 0.0;
        for (p = 0; p <= pos; p++) {
            const float *rp = a->rows + hlx_rm_slot(a, l, b, p) * (size_t)rk;
            const double *kn = a->kv + (hlx_rm_slot(a, l, b, p) * (size_t)Q + (size_t)h) * kvw;
            double d = 0.0;
            for (e = 0; e < a->nope; e++)
                d += qh[e] * kn[e];
            for (e = 0; e < a->rope; e++)
                d += qh[a->nope + e] * rp[a->r + e];
            sc[p] = d * scale;
            mx = sc[p] > mx ? sc[p] : mx;
        }
        for (e = 0; e < a->v; e++)
            o[h * a->v + e] = 0.0;
        for (p = 0; p <= pos; p++) {
            const double *vv = a->kv + (hlx_rm_slot(a, l, b, p) * (size_t)Q + (size_t)h) * kvw +
                               a->nope;
            double w = exp(sc[p] - mx);
            sum += w;
            for (e = 0; e < a->v; e++)
                o[h * a->v + e] += w * vv[e];
        }
        for (e = 0; e < a->v; e++)
            o[h * a->v + e] /= sum;
    }
    return HLX_OK;
}

const float *hlx_ref_mla_kv_row(const hlx_ref_mla_t *a, int l, int b, int64_t pos)
{
    return a->rows + hlx_rm_slot(a, l, b, pos) * (size_t)(a->r + a->rope);
}

void hlx_ref_mla_destroy(hlx_ref_mla_t *a)
{
    int l;

    if (a == NULL)
        return;
    for (l = 0; a->layers && l < a->m.layers; l++) {
        hlx_ref_mla_layer_t *L = &a->layers[l];
        free(L->wqa); free(L->qa_norm); free(L->wq);
        free(L->wkva); free(L->kva_norm); free(L->wkvb);
    }
    free(a->layers);
    free(a->rows);
    free(a->kv);
    free(a->tmp);
    free(a->rope_freq);
    free(a);
}
