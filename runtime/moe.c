/* MoE FFN of the decode runtime (hlx_moe.h): the TPF x EP expert layout, DeepSeek-V3 gating
 * computed identically on every rank, and the phase that runs this rank's shared and routed
 * expert columns so that the FFN all-reduce is the combine. */
#define _GNU_SOURCE
#include "hlx_engine_int.h"

#include "hlx_time.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- layout */

hlx_status_t hlx_moe_check_ep(const hlx_model_t *m, const char *what, int ep, int kvp,
                              int tpa, char *err, size_t errlen)
{
    int n = kvp * tpa;

    if (ep < 1) {
        snprintf(err, errlen, "%s %d: expected 1 or more", what, ep);
        return HLX_ERR_INVALID;
    }
    if (m->experts == 0 || m->dense_layers >= m->layers) {
        if (ep == 1)
            return HLX_OK;
        snprintf(err, errlen, "%s %d: model %s has no MoE layer (its FFNs are dense, split "
                 "over all N ranks); use 1", what, ep, m->name);
        return HLX_ERR_INVALID;
    }
    if (n % ep != 0) {
        snprintf(err, errlen, "%s %d does not divide N = --kvp %d x --tpa %d = %d ranks "
                 "(N = EP x TPF)", what, ep, kvp, tpa, n);
        return HLX_ERR_INVALID;
    }
    if (m->experts % ep != 0) {
        snprintf(err, errlen, "%s %d does not divide the %d routed experts of model %s "
                 "(each EP group holds experts / EP of them)", what, ep, m->experts, m->name);
        return HLX_ERR_INVALID;
    }
    return HLX_OK;
}

void hlx_moe_layout_init(const hlx_model_t *m, int n, int ep, int rank, hlx_moe_layout_t *ml)
{
    int64_t fs = (int64_t)m->shared_experts * m->expert_ffn;

    memset(ml, 0, sizeof(*ml));
    ml->n        = n;
    ml->ep       = ep;
    ml->tpf      = n / ep;
    ml->ep_rank  = rank / ml->tpf;
    ml->tpf_rank = rank % ml->tpf;
    if (m->experts > 0) {
        ml->expert_count = m->experts / ep;
        ml->expert_first = ml->ep_rank * ml->expert_count;
    }
    ml->col_first    = (int)((int64_t)m->expert_ffn * ml->tpf_rank / ml->tpf);
    ml->col_count    = (int)((int64_t)m->expert_ffn * (ml->tpf_rank + 1) / ml->tpf) -
                       ml->col_first;
    ml->shared_first = (int)(fs * rank / n);
    ml->shared_count = (int)(fs * (rank + 1) / n) - ml->shared_first;
}

uint64_t hlx_moe_rank_bytes(const hlx_model_t *m, const hlx_moe_layout_t *ml, size_t w_esize)
{
    uint64_t H = (uint64_t)m->hidden, E = (uint64_t)m->experts, per, t;
    int moe_layers = m->layers - m->dense_layers;

    if (m->experts == 0 || moe_layers <= 0)
        return 0;
    /* router [H][E], (sigmoid) bias [E] and (Qwen2-MoE) shared gate [H] in f32; 3 H
     * weights per shared and expert column */
    if (__builtin_mul_overflow(H, E, &per) || __builtin_mul_overflow(per, 4, &per) ||
        __builtin_add_overflow(per, m->moe_scoring == HLX_MOE_SIGMOID ? E * 4 : 0, &per) ||
        __builtin_add_overflow(per, m->shared_gate ? H * 4 : 0, &per))
        return UINT64_MAX;
    t = (uint64_t)ml->expert_count * (uint64_t)ml->col_count + (uint64_t)ml->shared_count;
    if (__builtin_mul_overflow(t, 3 * H, &t) || __builtin_mul_overflow(t, w_esize, &t) ||
        __builtin_add_overflow(per, t, &per) ||
        __builtin_mul_overflow(per, (uint64_t)moe_layers, &per))
        return UINT64_MAX;
    return per;
}

/* ---- routing */

void hlx_moe_route(const hlx_model_t *m, const double *logits, const float *bias,
                   double *scratch, int *idx, float *w)
{
    int E = m->experts, K = m->top_k, G = m->n_group > 0 ? m->n_group : 1;
    int TG = m->topk_group > 0 && m->topk_group < G ? m->topk_group : G, gs = E / G;
    double *sc = scratch, *ch = scratch + E, *gsc = scratch + 2 * E, sum = 0.0, mx;
    int e, g, k, t;

    if (m->moe_scoring == HLX_MOE_SIGMOID) {
        for (e = 0; e < E; e++)
            sc[e] = 1.0 / (1.0 + exp(-logits[e]));
    } else {
        mx = logits[0];
        for (e = 1; e < E; e++)
            mx = logits[e] > mx ? logits[e] : mx;
        for (e = 0; e < E; e++)
            sum += sc[e] = exp(logits[e] - mx);
        for (e = 0; e < E; e++)
            sc[e] /= sum;
    }
    /* The correction bias steers the choice only, never the weights. */
    for (e = 0; e < E; e++)
        ch[e] = sc[e] + (m->moe_scoring == HLX_MOE_SIGMOID && bias != NULL ? bias[e] : 0.0);
    if (TG < G) {
        /* A group's score is the sum of its two best choice scores (DeepSeek-V3), or its
         * best (DeepSeek-V2, moe_group_score max); the TG best groups stay, the experts of
         * the others are out of the choice. */
        for (g = 0; g < G; g++) {
            double a = -INFINITY, b = -INFINITY;
            for (e = g * gs; e < (g + 1) * gs; e++) {
                if (ch[e] > a) {
                    b = a;
                    a = ch[e];
                } else if (ch[e] > b) {
                    b = ch[e];
                }
            }
            gsc[g] = gs > 1 && m->moe_group_score != HLX_MOE_GROUP_MAX ? a + b : a;
        }
        for (t = 0; t < TG; t++) {
            int best = -1;
            for (g = 0; g < G; g++)
                if (gsc[g] != INFINITY && (best < 0 || gsc[g] > gsc[best]))
                    best = g;
            gsc[best] = INFINITY; /* kept */
        }
        for (g = 0; g < G; g++)
            if (gsc[g] != INFINITY)
                for (e = g * gs; e < (g + 1) * gs; e++)
                    ch[e] = -INFINITY;
    }
    sum = 0.0;
    for (k = 0; k < K; k++) {
        int best = -1;
        for (e = 0; e < E; e++) /* strict >: a tie goes to the lowest index */
            if (ch[e] != -INFINITY && (best < 0 || ch[e] > ch[best]))
                best = e;
        idx[k] = best;
        if (best >= 0) {
            ch[best] = -INFINITY;
            sum += sc[best];
        }
    }
    for (k = 0; k < K; k++) {
        double v = idx[k] >= 0 ? sc[idx[k]] : 0.0;
        if (m->norm_topk_prob)
            v /= sum + 1e-20;
        w[k] = (float)(v * (m->routed_scaling > 0 ? m->routed_scaling : 1.0));
    }
}

/* ---- the engine's MoE state */

typedef struct hlx_moe_w {
    float *router;      /* [H][E] */
    float *bias;        /* [E] (sigmoid scoring), else NULL */
    void  *sgu, *sdown; /* shared: [H][2 sc] (gate, then up), [sc][H] */
    float *sgate;       /* [H]: the shared output's sigmoid gate (shared_gate), else NULL */
    void **egu, **edown; /* per local expert: [H][2 cc], [cc][H] */
} hlx_moe_w_t;

struct hlx_moe {
    hlx_moe_layout_t lay;
    int              nl;      /* MoE layers: dense_layers .. layers - 1 */
    hlx_moe_w_t     *w;       /* [nl] */
    uint64_t         bytes;   /* weights allocated on this rank */
    double          *logits, *scratch; /* [E], [3 E] */
    int              cap;     /* rows the buffers below hold (B, or B x C in prefill) */
    size_t           cmax;    /* the widest column count: shared or one expert's */
    int             *sel;     /* [cap][top_k] chosen experts */
    float           *selw;    /* [cap][top_k] their weights */
    int             *rows;    /* [cap] rows routed to the expert at hand */
    float           *roww;    /* [cap] their weights */
    float           *xin, *gu, *act, *out; /* [cap][H], [cap][2 cmax], [cap][cmax], [cap][H] */
};

static void *hlx_moe_zalloc(size_t n, size_t size)
{
    return calloc(n ? n : 1, size);
}

/* Rows [r0, +nr) x cols [c0, +nc) of tensor `name` ([rows][cols] in runtime orientation). */
static hlx_status_t hlx_moe_read(hlx_engine_t *eng, const char *name, int64_t rows,
                                 int64_t cols, int64_t r0, int64_t nr, int64_t c0, int64_t nc,
                                 void *dst, hlx_dtype_t dt, int64_t ld)
{
    return hlx_wsrc_read(&eng->ws, name, rows, cols, r0, nr, c0, nc, dst, dt, ld, eng->errmsg,
                         sizeof(eng->errmsg));
}

static hlx_status_t hlx_moe_build_layer(hlx_engine_t *eng, int l, hlx_moe_w_t *W)
{
    const hlx_model_t *m = &eng->m;
    const hlx_moe_layout_t *ml = &eng->moe->lay;
    int64_t H = m->hidden, E = m->experts, Fe = m->expert_ffn,
            Fs = (int64_t)m->shared_experts * m->expert_ffn;
    int64_t sc = ml->shared_count, cc = ml->col_count;
    size_t es = eng->w_esize;
    hlx_dtype_t dt = eng->w_dtype;
    char name[160];
    hlx_status_t st;
    int j;

#define HLX_MOE_TRY(_x) \
    do { \
        if ((st = (_x)) != HLX_OK) \
            return st; \
    } while (0)
    W->router = malloc(sizeof(float) * (size_t)(H * E));
    W->sgu    = hlx_moe_zalloc((size_t)(H * 2 * sc), es);
    W->sdown  = hlx_moe_zalloc((size_t)(sc * H), es);
    W->egu    = calloc((size_t)ml->expert_count + 1, sizeof(void *));
    W->edown  = calloc((size_t)ml->expert_count + 1, sizeof(void *));
    if (!W->router || !W->sgu || !W->sdown || !W->egu || !W->edown)
        return HLX_ERR_NOMEM;
    snprintf(name, sizeof(name), "model.layers.%d.mlp.gate.weight", l);
    HLX_MOE_TRY(hlx_moe_read(eng, name, H, E, 0, H, 0, E, W->router, HLX_DTYPE_F32, E));
    if (m->moe_scoring == HLX_MOE_SIGMOID) {
        if ((W->bias = malloc(sizeof(float) * (size_t)E)) == NULL)
            return HLX_ERR_NOMEM;
        snprintf(name, sizeof(name), "model.layers.%d.mlp.gate.e_score_correction_bias", l);
        HLX_MOE_TRY(hlx_moe_read(eng, name, 1, E, 0, 1, 0, E, W->bias, HLX_DTYPE_F32, E));
    }
    if (sc > 0) {
        snprintf(name, sizeof(name), "model.layers.%d.mlp.shared_experts.gate_proj.weight", l);
        HLX_MOE_TRY(hlx_moe_read(eng, name, H, Fs, 0, H, ml->shared_first, sc, W->sgu, dt,
                                 2 * sc));
        snprintf(name, sizeof(name), "model.layers.%d.mlp.shared_experts.up_proj.weight", l);
        HLX_MOE_TRY(hlx_moe_read(eng, name, H, Fs, 0, H, ml->shared_first, sc,
                                 (char *)W->sgu + (size_t)sc * es, dt, 2 * sc));
        snprintf(name, sizeof(name), "model.layers.%d.mlp.shared_experts.down_proj.weight", l);
        HLX_MOE_TRY(hlx_moe_read(eng, name, Fs, H, ml->shared_first, sc, 0, H, W->sdown, dt,
                                 H));
    }
    if (m->shared_gate) { /* every rank: it scales this rank's share of the shared output */
        if ((W->sgate = malloc(sizeof(float) * (size_t)H)) == NULL)
            return HLX_ERR_NOMEM;
        snprintf(name, sizeof(name), "model.layers.%d.mlp.shared_expert_gate.weight", l);
        HLX_MOE_TRY(hlx_moe_read(eng, name, H, 1, 0, H, 0, 1, W->sgate, HLX_DTYPE_F32, 1));
    }
    /* Only this EP group's experts, and only this rank's columns of each. */
    for (j = 0; j < ml->expert_count; j++) {
        int e = ml->expert_first + j;
        W->egu[j]   = hlx_moe_zalloc((size_t)(H * 2 * cc), es);
        W->edown[j] = hlx_moe_zalloc((size_t)(cc * H), es);
        if (!W->egu[j] || !W->edown[j])
            return HLX_ERR_NOMEM;
        if (cc == 0)
            continue;
        snprintf(name, sizeof(name), "model.layers.%d.mlp.experts.%d.gate_proj.weight", l, e);
        HLX_MOE_TRY(hlx_moe_read(eng, name, H, Fe, 0, H, ml->col_first, cc, W->egu[j], dt,
                                 2 * cc));
        snprintf(name, sizeof(name), "model.layers.%d.mlp.experts.%d.up_proj.weight", l, e);
        HLX_MOE_TRY(hlx_moe_read(eng, name, H, Fe, 0, H, ml->col_first, cc,
                                 (char *)W->egu[j] + (size_t)cc * es, dt, 2 * cc));
        snprintf(name, sizeof(name), "model.layers.%d.mlp.experts.%d.down_proj.weight", l, e);
        HLX_MOE_TRY(hlx_moe_read(eng, name, Fe, H, ml->col_first, cc, 0, H, W->edown[j], dt,
                                 H));
    }
#undef HLX_MOE_TRY
    return HLX_OK;
}

hlx_status_t hlx_moe_reserve(hlx_engine_t *eng, int rows)
{
    hlx_moe_t *moe = eng->moe;
    size_t R = (size_t)(rows > 0 ? rows : 1), H = (size_t)eng->m.hidden,
           K = (size_t)eng->m.top_k, cm = moe->cmax;

    if (rows <= moe->cap)
        return HLX_OK;
    free(moe->sel); free(moe->selw); free(moe->rows); free(moe->roww); free(moe->xin);
    free(moe->out); free(moe->gu); free(moe->act);
    moe->cap  = 0;
    moe->sel  = calloc(R * K, sizeof(int));
    moe->selw = calloc(R * K, sizeof(float));
    moe->rows = calloc(R, sizeof(int));
    moe->roww = calloc(R, sizeof(float));
    moe->xin  = calloc(R * H, sizeof(float));
    moe->out  = calloc(R * H, sizeof(float));
    moe->gu   = hlx_moe_zalloc(R * 2 * cm, sizeof(float));
    moe->act  = hlx_moe_zalloc(R * cm, sizeof(float));
    if (!moe->sel || !moe->selw || !moe->rows || !moe->roww || !moe->xin || !moe->out ||
        !moe->gu || !moe->act)
        return HLX_ERR_NOMEM;
    moe->cap = (int)R;
    return HLX_OK;
}

hlx_status_t hlx_moe_build(hlx_engine_t *eng)
{
    const hlx_model_t *m = &eng->m;
    size_t B = (size_t)eng->cfg.batch, E = (size_t)m->experts;
    hlx_moe_t *moe;
    hlx_status_t st;
    int l;

    if (m->experts == 0 || m->dense_layers >= m->layers)
        return HLX_OK;
    if ((moe = eng->moe = calloc(1, sizeof(*moe))) == NULL)
        return HLX_ERR_NOMEM;
    hlx_moe_layout_init(m, eng->lay.n, eng->cfg.ep > 0 ? eng->cfg.ep : 1, eng->lay.rank,
                        &moe->lay);
    moe->nl    = m->layers - m->dense_layers;
    moe->bytes = hlx_moe_rank_bytes(m, &moe->lay, eng->w_esize);
    moe->cmax = (size_t)(moe->lay.col_count > moe->lay.shared_count ? moe->lay.col_count
                                                                     : moe->lay.shared_count);
    moe->w       = calloc((size_t)moe->nl, sizeof(*moe->w));
    moe->logits  = calloc(E, sizeof(double));
    moe->scratch = calloc(3 * E, sizeof(double));
    if (!moe->w || !moe->logits || !moe->scratch ||
        hlx_moe_reserve(eng, (int)B) != HLX_OK)
        return HLX_ERR_NOMEM;
    for (l = m->dense_layers; l < m->layers; l++)
        if ((st = hlx_moe_build_layer(eng, l, &moe->w[l - m->dense_layers])) != HLX_OK)
            return st;
    return HLX_OK;
}

void hlx_moe_destroy(hlx_moe_t *moe)
{
    int l, j;

    if (moe == NULL)
        return;
    for (l = 0; moe->w && l < moe->nl; l++) {
        hlx_moe_w_t *W = &moe->w[l];
        for (j = 0; j < moe->lay.expert_count; j++) {
            free(W->egu ? W->egu[j] : NULL);
            free(W->edown ? W->edown[j] : NULL);
        }
        free(W->router); free(W->bias); free(W->sgu); free(W->sdown); free(W->sgate);
        free(W->egu); free(W->edown);
    }
    free(moe->w); free(moe->logits); free(moe->scratch); free(moe->sel); free(moe->selw);
    free(moe->rows); free(moe->roww); free(moe->xin); free(moe->gu); free(moe->act);
    free(moe->out);
    free(moe);
}

void hlx_moe_report(const hlx_engine_t *eng, hlx_run_report_t *rep)
{
    const hlx_moe_t *moe = eng->moe;

    rep->ep  = eng->cfg.ep > 0 ? eng->cfg.ep : 1;
    rep->tpf = eng->lay.n / rep->ep;
    if (moe == NULL)
        return;
    rep->experts_first  = moe->lay.expert_first;
    rep->experts_rank   = moe->lay.expert_count;
    rep->moe_bytes_rank = moe->bytes;
}

#define HLX_BE(_eng, _op, ...) (_eng)->be.ops->_op(&(_eng)->be, (_eng)->q, __VA_ARGS__)

/* Router logits in fp64 over the fp32 normalised input, in one fixed order: every rank
 * computes the same bits and so the same choice. */
static void hlx_moe_logits(const float *x, const float *router, int H, int E, double *out)
{
    int i, e;

    for (e = 0; e < E; e++)
        out[e] = 0.0;
    for (i = 0; i < H; i++)
        for (e = 0; e < E; e++)
            out[e] += (double)x[i] * router[(size_t)i * E + e];
}

/* Expert j (local index) on the rows routed to it: gather their normalised inputs (hn),
 * gate/up over this rank's columns, SwiGLU, down, and add weight x output to y. */
static hlx_status_t hlx_moe_expert(hlx_engine_t *eng, const hlx_moe_w_t *W, int j, int B,
                                   const float *hn, float *y_all)
{
    hlx_moe_t *moe = eng->moe;
    const hlx_model_t *m = &eng->m;
    int H = m->hidden, K = m->top_k, e = moe->lay.expert_first + j;
    int cc = moe->lay.col_count, nb = 0, b, k, r, i;
    hlx_status_t st;

    for (b = 0; b < B; b++)
        for (k = 0; k < K; k++)
            if (moe->sel[(size_t)b * K + k] == e) {
                moe->rows[nb] = b;
                moe->roww[nb++] = moe->selw[(size_t)b * K + k];
            }
    if (nb == 0 || cc == 0)
        return HLX_OK;
    for (r = 0; r < nb; r++)
        memcpy(moe->xin + (size_t)r * H, hn + (size_t)moe->rows[r] * H,
               sizeof(float) * (size_t)H);
    st = HLX_BE(eng, gemm, nb, 2 * cc, H, moe->xin, W->egu[j], eng->w_dtype, moe->gu, 0);
    if (st == HLX_OK)
        st = HLX_BE(eng, glu, moe->act, moe->gu, nb, cc, HLX_ACT_SILU);
    if (st == HLX_OK)
        st = HLX_BE(eng, gemm, nb, H, cc, moe->act, W->edown[j], eng->w_dtype, moe->out, 0);
    if (st != HLX_OK)
        return st;
    for (r = 0; r < nb; r++) {
        float *y = y_all + (size_t)moe->rows[r] * H, wr = moe->roww[r];
        const float *o = moe->out + (size_t)r * H;
        for (i = 0; i < H; i++)
            y[i] += wr * o[i];
    }
    return HLX_OK;
}

hlx_status_t hlx_moe_ffn_rows(hlx_engine_t *eng, int l, const float *x, float *hn, float *y,
                              int B)
{
    hlx_moe_t *moe = eng->moe;
    const hlx_model_t *m = &eng->m;
    const hlx_moe_w_t *W = &moe->w[l - m->dense_layers];
    int H = m->hidden, E = m->experts, K = m->top_k, sc, b, j;
    uint64_t t0 = hlx_now_ns();
    hlx_status_t st;

    atomic_store_explicit(&eng->wd_where, hlx_phase_name(HLX_PHASE_MOE), memory_order_relaxed);
    sc = moe->lay.shared_count;
    st = hlx_moe_reserve(eng, B);
    if (st == HLX_OK)
        st = HLX_BE(eng, rmsnorm, hn, x, eng->layers[l].ffn_norm, B, H, (float)m->norm_eps);
    /* Routing per row: the same on every rank (replicated input and router). */
    for (b = 0; b < B && st == HLX_OK; b++) {
        hlx_moe_logits(hn + (size_t)b * H, W->router, H, E, moe->logits);
        hlx_moe_route(m, moe->logits, W->bias, moe->scratch, moe->sel + (size_t)b * K,
                      moe->selw + (size_t)b * K);
    }
    /* Shared experts: this rank's columns for every row (as a dense FFN). */
    if (st == HLX_OK && sc > 0) {
        st = HLX_BE(eng, gemm, B, 2 * sc, H, hn, W->sgu, eng->w_dtype, moe->gu, 0);
        if (st == HLX_OK)
            st = HLX_BE(eng, glu, moe->act, moe->gu, B, sc, HLX_ACT_SILU);
        if (st == HLX_OK)
            st = HLX_BE(eng, gemm, B, H, sc, moe->act, W->sdown, eng->w_dtype, y, 0);
        /* Qwen2-MoE: times sigmoid(hn . w) per row, in fp64 over the replicated input and
         * gate, so every rank scales its share of the sum by the same factor */
        for (b = 0; b < B && st == HLX_OK && W->sgate != NULL; b++) {
            const float *h = hn + (size_t)b * H;
            float *yb = y + (size_t)b * H, g;
            double z = 0.0;
            int i;
            for (i = 0; i < H; i++)
                z += (double)h[i] * W->sgate[i];
            g = (float)(1.0 / (1.0 + exp(-z)));
            for (i = 0; i < H; i++)
                yb[i] *= g;
        }
    } else if (st == HLX_OK) {
        memset(y, 0, sizeof(float) * (size_t)B * (size_t)H);
    }
    /* Routed experts of this EP group: each (row, expert) pair only here, on this
     * rank's columns; the all-reduce that follows sums the ranks. */
    for (j = 0; j < moe->lay.expert_count && st == HLX_OK; j++)
        st = hlx_moe_expert(eng, W, j, B, hn, y);
    eng->phase_ns[HLX_PHASE_MOE] += hlx_now_ns() - t0;
    return st;
}

hlx_status_t hlx_moe_ffn(hlx_engine_t *eng, int l)
{
    return hlx_moe_ffn_rows(eng, l, eng->x, eng->hn, eng->y, eng->cfg.batch);
}
