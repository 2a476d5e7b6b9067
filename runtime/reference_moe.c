/* The fp64 MoE FFN of the reference (hlx_reference_moe.h). Written for clarity: whole
 * router and expert matrices, routing by sorting every score, plain loops; no code shared
 * with the engine's MoE (moe.c). */
#include "hlx_reference_moe.h"
#include "hlx_ref_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double  *router, *bias;            /* [H][E], [E] (sigmoid scoring) */
    double  *sgate, *sup, *sdown;      /* shared: [H][Fs], [H][Fs], [Fs][H] */
    double  *sgw;                      /* [H]: the shared output's gate (Qwen2-MoE) */
    double **gate, **up, **down;       /* expert e: [H][Fe], [H][Fe], [Fe][H] */
    double  *rbias;                    /* [E]: on the logits (router_bias), else NULL */
    double **bgate, **bup, **bdown;    /* expert e's biases [Fe], [Fe], [H] (expert_bias) */
} hlx_ref_moe_layer_t;

struct hlx_ref_moe {
    hlx_model_t          m;
    hlx_ref_moe_layer_t *L;          /* [layers]; dense layers stay empty */
    double              *logit, *score, *choice, *gscore; /* [E] each */
    double              *gate, *up, *o;                   /* [max(Fe, Fs)], .., [H] */
    double              *xw;                              /* [H]: w hn (moe_weight_input) */
    int                 *order, *gorder;                  /* [E] */
    double               margin; /* near-tie margin */
    int64_t              ties;
    char                 first[256];
};

hlx_ref_moe_t *hlx_ref_moe_create(hlx_wsrc_t *ws, const hlx_model_t *m, char *err,
                                  size_t errlen)
{
    int64_t H = m->hidden, E = m->experts, Fe = m->expert_ffn,
            Fs = (int64_t)m->shared_experts * m->expert_ffn, Fmax = Fe > Fs ? Fe : Fs;
    hlx_ref_moe_t *moe = calloc(1, sizeof(*moe));
    char n[160];
    int l, e, ok = moe != NULL;

    if (!ok)
        return NULL;
    moe->m      = *m;
    moe->margin = HLX_REF_ROUTE_MARGIN;
    moe->L      = calloc((size_t)m->layers, sizeof(*moe->L));
    moe->logit  = calloc((size_t)E, sizeof(double));
    moe->score  = calloc((size_t)E, sizeof(double));
    moe->choice = calloc((size_t)E, sizeof(double));
    moe->gscore = calloc((size_t)E, sizeof(double));
    moe->order  = calloc((size_t)E, sizeof(int));
    moe->gorder = calloc((size_t)E, sizeof(int));
    moe->gate   = calloc((size_t)Fmax, sizeof(double));
    moe->up     = calloc((size_t)Fmax, sizeof(double));
    moe->o      = calloc((size_t)H, sizeof(double));
    moe->xw     = calloc((size_t)H, sizeof(double));
    ok = moe->L && moe->logit && moe->score && moe->choice && moe->gscore && moe->order &&
         moe->gorder && moe->gate && moe->up && moe->o && moe->xw;
    for (l = m->dense_layers; ok && l < m->layers; l++) {
        hlx_ref_moe_layer_t *L = &moe->L[l];
        if (!hlx_ref_layer_moe(m, l)) /* moe_step: a dense layer between (reference.c) */
            continue;
        snprintf(n, sizeof(n), "model.layers.%d.mlp.gate.weight", l);
        ok = (L->router = hlx_ref_read(ws, n, H, E, err, errlen)) != NULL;
        if (ok && m->moe_scoring == HLX_MOE_SIGMOID && !m->moe_weight_input) {
            snprintf(n, sizeof(n), "model.layers.%d.mlp.gate.e_score_correction_bias", l);
            ok = (L->bias = hlx_ref_read(ws, n, 1, E, err, errlen)) != NULL;
        }
        if (ok && Fs > 0) {
            snprintf(n, sizeof(n), "model.layers.%d.mlp.shared_experts.gate_proj.weight", l);
            ok = (L->sgate = hlx_ref_read(ws, n, H, Fs, err, errlen)) != NULL;
            snprintf(n, sizeof(n), "model.layers.%d.mlp.shared_experts.up_proj.weight", l);
            ok = ok && (L->sup = hlx_ref_read(ws, n, H, Fs, err, errlen)) != NULL;
            snprintf(n, sizeof(n), "model.layers.%d.mlp.shared_experts.down_proj.weight", l);
            ok = ok && (L->sdown = hlx_ref_read(ws, n, Fs, H, err, errlen)) != NULL;
        }
        if (ok && m->shared_gate) {
            snprintf(n, sizeof(n), "model.layers.%d.mlp.shared_expert_gate.weight", l);
            ok = (L->sgw = hlx_ref_read(ws, n, H, 1, err, errlen)) != NULL;
        }
        if (ok && m->router_bias) {
            snprintf(n, sizeof(n), "model.layers.%d.mlp.gate.bias", l);
            ok = (L->rbias = hlx_ref_read(ws, n, 1, E, err, errlen)) != NULL;
        }
        if (ok && m->expert_bias) {
            L->bgate = calloc((size_t)E, sizeof(double *));
            L->bup   = calloc((size_t)E, sizeof(double *));
            L->bdown = calloc((size_t)E, sizeof(double *));
            ok = L->bgate && L->bup && L->bdown;
            for (e = 0; ok && e < E; e++) {
                snprintf(n, sizeof(n), "model.layers.%d.mlp.experts.%d.gate_proj.bias", l, e);
                ok = (L->bgate[e] = hlx_ref_read(ws, n, 1, Fe, err, errlen)) != NULL;
                snprintf(n, sizeof(n), "model.layers.%d.mlp.experts.%d.up_proj.bias", l, e);
                ok = ok && (L->bup[e] = hlx_ref_read(ws, n, 1, Fe, err, errlen)) != NULL;
                snprintf(n, sizeof(n), "model.layers.%d.mlp.experts.%d.down_proj.bias", l, e);
                ok = ok && (L->bdown[e] = hlx_ref_read(ws, n, 1, H, err, errlen)) != NULL;
            }
        }
        L->gate = calloc((size_t)E, sizeof(double *));
        L->up   = calloc((size_t)E, sizeof(double *));
        L->down = calloc((size_t)E, sizeof(double *));
        ok = ok && L->gate && L->up && L->down;
        for (e = 0; ok && e < E; e++) {
            snprintf(n, sizeof(n), "model.layers.%d.mlp.experts.%d.gate_proj.weight", l, e);
            ok = (L->gate[e] = hlx_ref_read(ws, n, H, Fe, err, errlen)) != NULL;
            snprintf(n, sizeof(n), "model.layers.%d.mlp.experts.%d.up_proj.weight", l, e);
            ok = ok && (L->up[e] = hlx_ref_read(ws, n, H, Fe, err, errlen)) != NULL;
            snprintf(n, sizeof(n), "model.layers.%d.mlp.experts.%d.down_proj.weight", l, e);
            ok = ok && (L->down[e] = hlx_ref_read(ws, n, Fe, H, err, errlen)) != NULL;
        }
    }
    if (!ok) {
        hlx_ref_moe_destroy(moe);
        return NULL;
    }
    return moe;
}

/* y += w * (down(act(x gate + bg, x up + bu)) + bd) for one expert of F columns: act
 * silu(a) b, or gpt-oss's clamped form (ffn_act swiglu_clamp); the biases b* NULL where
 * the model has none. */
static void hlx_ref_moe_swiglu(hlx_ref_moe_t *moe, const double *x, const double *g,
                               const double *u, const double *d, const double *bg,
                               const double *bu, const double *bd, int64_t F, double w,
                               double *y)
{
    const hlx_model_t *m = &moe->m;
    int64_t H = m->hidden, i, j;

    for (j = 0; j < F; j++) {
        double a = bg != NULL ? bg[j] : 0.0, b = bu != NULL ? bu[j] : 0.0;
        for (i = 0; i < H; i++) {
            a += x[i] * g[i * F + j];
            b += x[i] * u[i * F + j];
        }
        if (m->ffn_act == HLX_ACT_SWIGLU_CLAMP) {
            /* torch.clamp's: a NaN kept (fmin would make it the limit) */
            a = a > m->act_limit ? m->act_limit : a;
            b = (b > m->act_limit ? m->act_limit : b < -m->act_limit ? -m->act_limit : b) + 1.0;
            moe->gate[j] = a / (1.0 + exp(-m->act_alpha * a)) * b;
        } else {
            moe->gate[j] = a / (1.0 + exp(-a)) * b;
        }
    }
    for (i = 0; i < H; i++) {
        double s = bd != NULL ? bd[i] : 0.0;
        for (j = 0; j < F; j++)
            s += moe->gate[j] * d[j * H + i];
        y[i] += w * s;
    }
}

/* Sorts idx[0..n) by key descending, the lower index first on equal keys. */
static void hlx_ref_moe_sort(int *idx, int n, const double *key)
{
    int i, j;

    for (i = 1; i < n; i++) {
        int v = idx[i];
        for (j = i; j > 0 && (key[idx[j - 1]] < key[v] ||
                              (key[idx[j - 1]] == key[v] && idx[j - 1] > v)); j--)
            idx[j] = idx[j - 1];
        idx[j] = v;
    }
}

static void hlx_ref_moe_tie(hlx_ref_moe_t *moe, const char *what, int a, int b, double ka,
                            double kb, int64_t pos, int l, int req)
{
    if (moe->ties++ == 0)
        snprintf(moe->first, sizeof(moe->first), "position %lld, layer %d, request %d: %s %d "
                 "and %d score %.9f and %.9f", (long long)pos, l, req, what, a, b, ka, kb);
}

void hlx_ref_moe_ffn(hlx_ref_moe_t *moe, int l, const double *hn, double *y, int64_t pos,
                     int b)
{
    const hlx_model_t *m = &moe->m;
    const hlx_ref_moe_layer_t *L = &moe->L[l];
    int64_t H = m->hidden, i;
    int E = m->experts, K = m->top_k, G = m->n_group > 0 ? m->n_group : 1;
    int TG = m->topk_group > 0 ? m->topk_group : G, per = E / G, e, g, k, n = 0;
    double mx = -INFINITY, sum = 0.0;

    for (i = 0; i < H; i++)
        y[i] = 0.0;
    /* router logits and scores */
    for (e = 0; e < E; e++) {
        double s = 0.0;
        for (i = 0; i < H; i++)
            s += hn[i] * L->router[i * E + e];
        if (L->rbias != NULL) /* gpt-oss: the router's own bias, before the scores */
            s += L->rbias[e];
        moe->logit[e] = s;
        if (s > mx)
            mx = s;
    }
    for (e = 0; e < E; e++) {
        if (m->moe_scoring == HLX_MOE_SIGMOID) {
            moe->score[e] = 1.0 / (1.0 + exp(-moe->logit[e]));
        } else {
            moe->score[e] = exp(moe->logit[e] - mx);
            sum += moe->score[e];
        }
    }
    for (e = 0; e < E && m->moe_scoring != HLX_MOE_SIGMOID; e++)
        moe->score[e] /= sum;
    /* a sigmoid without bias or groups (Llama 4's) chooses on the logits, as transformers'
     * top-k does (the sigmoids of large logits round to one value) */
    for (e = 0; e < E; e++)
        moe->choice[e] = m->moe_scoring == HLX_MOE_SIGMOID && L->bias == NULL && TG >= G
                             ? moe->logit[e]
                             : moe->score[e] + (L->bias != NULL ? L->bias[e] : 0.0);
    /* group-limited: the TG groups with the best sum of their top two choice scores, or
     * with the best top one (moe_group_score max) */
    if (TG < G) {
        for (g = 0; g < G; g++) {
            for (e = 0; e < per; e++)
                moe->order[e] = g * per + e;
            hlx_ref_moe_sort(moe->order, per, moe->choice);
            moe->gscore[g] = moe->choice[moe->order[0]];
            if (per > 1 && m->moe_group_score == HLX_MOE_GROUP_TOP2)
                moe->gscore[g] += moe->choice[moe->order[1]];
            moe->gorder[g] = g;
        }
        hlx_ref_moe_sort(moe->gorder, G, moe->gscore);
        if (moe->gscore[moe->gorder[TG - 1]] - moe->gscore[moe->gorder[TG]] < moe->margin)
            hlx_ref_moe_tie(moe, "groups", moe->gorder[TG - 1], moe->gorder[TG],
                            moe->gscore[moe->gorder[TG - 1]], moe->gscore[moe->gorder[TG]],
                            pos, l, b);
        for (g = 0; g < TG; g++)
            for (e = 0; e < per; e++)
                moe->order[n++] = moe->gorder[g] * per + e;
    } else {
        for (e = 0; e < E; e++)
            moe->order[n++] = e;
    }
    hlx_ref_moe_sort(moe->order, n, moe->choice);
    if (n > K && moe->choice[moe->order[K - 1]] - moe->choice[moe->order[K]] < moe->margin)
        hlx_ref_moe_tie(moe, "experts", moe->order[K - 1], moe->order[K],
                        moe->choice[moe->order[K - 1]], moe->choice[moe->order[K]], pos, l, b);
    /* weights: the scores (not the biased choice), renormalised, scaled */
    sum = 0.0;
    for (k = 0; k < K; k++)
        sum += moe->score[moe->order[k]];
    for (k = 0; k < K; k++) {
        double w = moe->score[moe->order[k]];
        if (m->norm_topk_prob)
            w /= sum + 1e-20;
        w *= m->routed_scaling > 0 ? m->routed_scaling : 1.0;
        e = moe->order[k];
        if (m->moe_weight_input) { /* Llama 4: expert(w hn), added as it is */
            for (i = 0; i < H; i++)
                moe->xw[i] = w * hn[i];
            hlx_ref_moe_swiglu(moe, moe->xw, L->gate[e], L->up[e], L->down[e],
                               L->bgate ? L->bgate[e] : NULL, L->bup ? L->bup[e] : NULL,
                               L->bdown ? L->bdown[e] : NULL, m->expert_ffn, 1.0, y);
            continue;
        }
        hlx_ref_moe_swiglu(moe, hn, L->gate[e], L->up[e], L->down[e],
                           L->bgate ? L->bgate[e] : NULL, L->bup ? L->bup[e] : NULL,
                           L->bdown ? L->bdown[e] : NULL, m->expert_ffn, w, y);
    }
    if (L->sgate != NULL) {
        /* Qwen2MoeSparseMoeBlock: sigmoid(shared_expert_gate(x)) x shared_expert(x) */
        double gw = 1.0, z = 0.0;
        int64_t c;
        if (L->sgw != NULL) {
            for (c = 0; c < m->hidden; c++)
                z += hn[c] * L->sgw[c];
            gw = 1.0 / (1.0 + exp(-z));
        }
        hlx_ref_moe_swiglu(moe, hn, L->sgate, L->sup, L->sdown, NULL, NULL, NULL,
                           (int64_t)m->shared_experts * m->expert_ffn, gw, y);
    }
}

void hlx_ref_moe_set_margin(hlx_ref_moe_t *moe, double margin)
{
    if (moe != NULL)
        moe->margin = margin;
}

int64_t hlx_ref_moe_near_ties(const hlx_ref_moe_t *moe, char *first, size_t len)
{
    if (moe == NULL)
        return 0;
    if (first != NULL && len > 0)
        snprintf(first, len, "%s", moe->first);
    return moe->ties;
}

void hlx_ref_moe_destroy(hlx_ref_moe_t *moe)
{
    int l, e;

    if (moe == NULL)
        return;
    for (l = 0; moe->L && l < moe->m.layers; l++) {
        hlx_ref_moe_layer_t *L = &moe->L[l];
        for (e = 0; e < moe->m.experts; e++) {
            free(L->gate ? L->gate[e] : NULL);
            free(L->up ? L->up[e] : NULL);
            free(L->down ? L->down[e] : NULL);
            free(L->bgate ? L->bgate[e] : NULL);
            free(L->bup ? L->bup[e] : NULL);
            free(L->bdown ? L->bdown[e] : NULL);
        }
        free(L->gate); free(L->up); free(L->down); free(L->rbias);
        free(L->bgate); free(L->bup); free(L->bdown);
        free(L->router); free(L->bias); free(L->sgate); free(L->sup); free(L->sdown);
        free(L->sgw);
    }
    free(moe->L); free(moe->logit); free(moe->score); free(moe->choice); free(moe->gscore);
    free(moe->order); free(moe->gorder); free(moe->gate); free(moe->up); free(moe->o);
    free(moe->xw);
    free(moe);
}
