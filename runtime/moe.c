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
    if (hlx_model_moe_layers(m) == 0) {
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

void hlx_moe_rank_layout(const hlx_engine_t *eng, hlx_moe_layout_t *ml)
{
    /* cfg.ep is at least 1 from hlx_engine_validate on (the flag, HELIX_EP or 1, checked
     * by hlx_moe_check_ep) */
    if (eng->m.experts > 0)
        hlx_moe_layout_init(&eng->m, eng->lay.n, eng->cfg.ep, eng->lay.rank, ml);
    else
        memset(ml, 0, sizeof(*ml));
}

/* expert_bias: whether this rank adds its experts' down bias, once per expert over the TPF
 * group: the first TPF rank with columns (tpf_rank 0 unless TPF > expert_ffn leaves it none,
 * and a rank without columns runs no expert) */
static int hlx_moe_down_bias_here(const hlx_moe_layout_t *ml)
{
    return ml->col_first == 0 && ml->col_count > 0;
}

uint64_t hlx_moe_rank_bytes(const hlx_model_t *m, const hlx_moe_layout_t *ml, size_t w_esize)
{
    uint64_t H = (uint64_t)m->hidden, E = (uint64_t)m->experts, per, t;
    int moe_layers = hlx_model_moe_layers(m);

    if (m->experts == 0 || moe_layers <= 0)
        return 0;
    /* router [H][E], (sigmoid) bias [E] and (Qwen2-MoE) shared gate [H] in f32; 3 H
     * weights per shared and expert column */
    if (__builtin_mul_overflow(H, E, &per) || __builtin_mul_overflow(per, 4, &per) ||
        __builtin_add_overflow(per, m->moe_scoring == HLX_MOE_SIGMOID && !m->moe_weight_input
                                        ? E * 4 : 0, &per) || /* Llama 4's router: no bias */
        __builtin_add_overflow(per, m->shared_gate ? H * 4 : 0, &per) ||
        __builtin_add_overflow(per, m->router_bias ? E * 4 : 0, &per))
        return UINT64_MAX;
    /* expert_bias, f32: gate and up of each local expert's columns, down's [H] on the
     * expert's first TPF rank with columns */
    t = m->expert_bias ? (uint64_t)ml->expert_count *
                             (2 * (uint64_t)ml->col_count +
                              (hlx_moe_down_bias_here(ml) ? H : 0)) * 4
                       : 0;
    if (__builtin_add_overflow(per, t, &per))
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
    /* The correction bias steers the choice only, never the weights. A sigmoid without a
     * bias or groups (Llama 4's) chooses on the logits, as transformers' top-k does: the
     * same order, but for logits past ~37 whose sigmoids round to one value */
    for (e = 0; e < E; e++)
        ch[e] = m->moe_scoring == HLX_MOE_SIGMOID && bias == NULL && TG >= G
                    ? logits[e]
                    : sc[e] + (m->moe_scoring == HLX_MOE_SIGMOID && bias != NULL ? bias[e] : 0.0);
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
    float *router;      /* [H][E], host: the routing is computed on the host in fp64 */
    float *bias;        /* [E] (sigmoid scoring), else NULL; host */
    void  *sgu, *sdown; /* shared: [H][2 sc] (gate, then up), [sc][H]; backend */
    float *sgate;       /* [H]: the shared output's sigmoid gate (shared_gate), else NULL; host */
    float *rbias;       /* [E]: the router's bias on its logits (router_bias), else NULL; host */
    void **egu, **edown; /* per local expert: [H][2 cc], [cc][H]; backend */
    /* expert_bias, per local expert (else NULL): the gate and up biases of its cc columns
     * [2 cc] (gate, then up), and down's [H] on the expert's first TPF rank with columns
     * only (the FFN all-reduce sums the ranks: added once), NULL on the others; backend */
    float **ebgu, **ebdown;
} hlx_moe_w_t;

struct hlx_moe {
    hlx_moe_layout_t lay;
    int              nl;      /* MoE layers (hlx_model_moe_layers) */
    hlx_moe_w_t     *w;       /* [nl], by hlx_model_moe_index */
    uint64_t         bytes;   /* weights allocated on this rank */
    double          *logits, *scratch; /* [E], [3 E] */
    int              cap;     /* rows the buffers below hold (B, or B x C in prefill) */
    size_t           cmax;    /* the widest column count: shared or one expert's */
    /* host: the routing of every row, and the rows of each local expert in turn */
    int             *sel;     /* [cap][top_k] chosen experts */
    float           *selw;    /* [cap][top_k] their weights */
    int             *hidx;    /* [cap][top_k]: expert 0's rows, then expert 1's, ... */
    float           *hw;      /* [cap][top_k]: their weights; then [cap] shared gates, then
                               * [cap] ones (moe_weight_input: each expert's output added
                               * with weight 1) */
    int             *first, *count; /* [expert_count + 1]: each expert's run in hidx */
    /* backend: the same lists (copied each layer), the gathered rows and their FFN */
    int             *idx;     /* [cap][top_k] */
    float           *bw;      /* [cap][top_k + 2]: the weights, the shared gates, the ones */
    float           *xin, *gu, *act, *out; /* [cap][H], [cap][2 cmax], [cap][cmax], [cap][H] */
};

/* Rows [r0, +nr) x cols [c0, +nc) of tensor `name` ([rows][cols] in runtime orientation). */
static hlx_status_t hlx_moe_read(hlx_engine_t *eng, const char *name, int64_t rows,
                                 int64_t cols, int64_t r0, int64_t nr, int64_t c0, int64_t nc,
                                 void *dst, hlx_dtype_t dt, int64_t ld)
{
    return hlx_wsrc_read(&eng->ws, name, rows, cols, r0, nr, c0, nc, dst, dt, ld, eng->errmsg,
                         sizeof(eng->errmsg));
}

/* Columns [c0, c0 + c) of an FFN of F columns (model.layers.<l>.mlp.<what>.*_proj) as
 * parts: gate | up [H][2c] and down's rows [c][H]. */
static void hlx_moe_ffn_parts(int64_t H, const char *what, int l, int64_t F, int64_t c0,
                              int64_t c, hlx_wpart_t gu[2], hlx_wpart_t *down)
{
    gu[0] = (hlx_wpart_t){ .rows = H, .cols = F, .c0 = c0, .nc = c };
    gu[1] = (hlx_wpart_t){ .rows = H, .cols = F, .c0 = c0, .nc = c, .at = c };
    *down = (hlx_wpart_t){ .rows = F, .cols = H, .r0 = c0, .nc = H };
    snprintf(gu[0].name, sizeof(gu[0].name), "model.layers.%d.mlp.%s.gate_proj.weight", l, what);
    snprintf(gu[1].name, sizeof(gu[1].name), "model.layers.%d.mlp.%s.up_proj.weight", l, what);
    snprintf(down->name, sizeof(down->name), "model.layers.%d.mlp.%s.down_proj.weight", l, what);
}

/* Those columns to sk (hlx_engine_wput): loaded into *gu_p and *down_p, in the gemm's
 * layout (eng->wp_dtype), or counted (both NULL). */
static hlx_status_t hlx_moe_ffn_walk(hlx_engine_t *eng, const hlx_wsink_t *sk, void **gu_p,
                                     void **down_p, const char *what, int l, int64_t F,
                                     int64_t c0, int64_t c)
{
    const int64_t H = eng->m.hidden;
    hlx_wpart_t gu[2], down;
    hlx_status_t st;

    hlx_moe_ffn_parts(H, what, l, F, c0, c, gu, &down);
    if ((st = hlx_engine_wput(eng, sk, gu_p, H, 2 * c, gu, 2)) != HLX_OK)
        return st;
    return hlx_engine_wput(eng, sk, down_p, c, H, &down, 1);
}

/* Layer l's shared experts' columns of this rank (every rank), then its EP group's
 * experts' columns of it, to sk: loaded into W, or counted (W NULL). */
static hlx_status_t hlx_moe_layer_walk(hlx_engine_t *eng, const hlx_wsink_t *sk,
                                       const hlx_moe_layout_t *ml, int l, hlx_moe_w_t *W)
{
    const hlx_model_t *m = &eng->m;
    const int64_t Fs = (int64_t)m->shared_experts * m->expert_ffn;
    hlx_status_t st;
    char what[32];
    int j;

    st = hlx_moe_ffn_walk(eng, sk, W ? &W->sgu : NULL, W ? &W->sdown : NULL, "shared_experts",
                          l, Fs, ml->shared_first, ml->shared_count);
    for (j = 0; j < ml->expert_count && st == HLX_OK; j++) {
        snprintf(what, sizeof(what), "experts.%d", ml->expert_first + j);
        st = hlx_moe_ffn_walk(eng, sk, W ? &W->egu[j] : NULL, W ? &W->edown[j] : NULL, what,
                              l, m->expert_ffn, ml->col_first, ml->col_count);
    }
    return st;
}

hlx_status_t hlx_moe_walk_count(hlx_engine_t *eng, const hlx_wsink_t *sk,
                                const hlx_moe_layout_t *ml)
{
    hlx_status_t st = HLX_OK;
    int l;

    for (l = eng->m.dense_layers; l < eng->m.layers && st == HLX_OK; l++)
        if (hlx_model_layer_moe(&eng->m, l))
            st = hlx_moe_layer_walk(eng, sk, ml, l, NULL);
    return st;
}

static hlx_status_t hlx_moe_build_layer(hlx_engine_t *eng, int l, hlx_moe_w_t *W)
{
    const hlx_model_t *m = &eng->m;
    const hlx_moe_layout_t *ml = &eng->moe->lay;
    int64_t H = m->hidden, E = m->experts;
    char name[160];
    hlx_status_t st;

#define HLX_MOE_TRY(_x) \
    do { \
        if ((st = (_x)) != HLX_OK) \
            return st; \
    } while (0)
    W->router = malloc(sizeof(float) * (size_t)(H * E));
    W->egu    = calloc((size_t)ml->expert_count + 1, sizeof(void *));
    W->edown  = calloc((size_t)ml->expert_count + 1, sizeof(void *));
    if (!W->router || !W->egu || !W->edown)
        return HLX_ERR_NOMEM;
    snprintf(name, sizeof(name), "model.layers.%d.mlp.gate.weight", l);
    HLX_MOE_TRY(hlx_moe_read(eng, name, H, E, 0, H, 0, E, W->router, HLX_DTYPE_F32, E));
    if (m->moe_scoring == HLX_MOE_SIGMOID && !m->moe_weight_input) { /* Llama 4's: none */
        if ((W->bias = malloc(sizeof(float) * (size_t)E)) == NULL)
            return HLX_ERR_NOMEM;
        snprintf(name, sizeof(name), "model.layers.%d.mlp.gate.e_score_correction_bias", l);
        HLX_MOE_TRY(hlx_moe_read(eng, name, 1, E, 0, 1, 0, E, W->bias, HLX_DTYPE_F32, E));
    }
    if (m->shared_gate) { /* every rank: it scales this rank's share of the shared output */
        if ((W->sgate = malloc(sizeof(float) * (size_t)H)) == NULL)
            return HLX_ERR_NOMEM;
        snprintf(name, sizeof(name), "model.layers.%d.mlp.shared_expert_gate.weight", l);
        HLX_MOE_TRY(hlx_moe_read(eng, name, H, 1, 0, H, 0, 1, W->sgate, HLX_DTYPE_F32, 1));
    }
    if (m->router_bias) {
        if ((W->rbias = malloc(sizeof(float) * (size_t)E)) == NULL)
            return HLX_ERR_NOMEM;
        snprintf(name, sizeof(name), "model.layers.%d.mlp.gate.bias", l);
        HLX_MOE_TRY(hlx_moe_read(eng, name, 1, E, 0, 1, 0, E, W->rbias, HLX_DTYPE_F32, E));
    }
    if (m->expert_bias) {
        const int64_t F = m->expert_ffn, cc = ml->col_count;
        int j;
        W->ebgu = calloc((size_t)ml->expert_count + 1, sizeof(float *));
        W->ebdown = calloc((size_t)ml->expert_count + 1, sizeof(float *));
        if (!W->ebgu || !W->ebdown)
            return HLX_ERR_NOMEM;
        for (j = 0; j < ml->expert_count; j++) {
            const int e = ml->expert_first + j;
            if ((W->ebgu[j] = hlx_be_zalloc(eng, (size_t)(2 * cc) + 1, sizeof(float))) == NULL ||
                (hlx_moe_down_bias_here(ml) &&
                 (W->ebdown[j] = hlx_be_zalloc(eng, (size_t)H, sizeof(float))) == NULL))
                return HLX_ERR_NOMEM;
            snprintf(name, sizeof(name), "model.layers.%d.mlp.experts.%d.gate_proj.bias", l, e);
            HLX_MOE_TRY(hlx_moe_read(eng, name, 1, F, 0, 1, ml->col_first, cc, W->ebgu[j],
                                     HLX_DTYPE_F32, cc));
            snprintf(name, sizeof(name), "model.layers.%d.mlp.experts.%d.up_proj.bias", l, e);
            HLX_MOE_TRY(hlx_moe_read(eng, name, 1, F, 0, 1, ml->col_first, cc,
                                     W->ebgu[j] + cc, HLX_DTYPE_F32, cc));
            if (W->ebdown[j] == NULL)
                continue;
            snprintf(name, sizeof(name), "model.layers.%d.mlp.experts.%d.down_proj.bias", l, e);
            HLX_MOE_TRY(hlx_moe_read(eng, name, 1, H, 0, 1, 0, H, W->ebdown[j], HLX_DTYPE_F32,
                                     H));
        }
    }
#undef HLX_MOE_TRY
    /* this rank's shared columns, then its EP group's experts' columns, in the gemm's layout */
    return hlx_moe_layer_walk(eng, NULL, ml, l, W);
}

/* The row buffers, host and backend (none when cap is 0) */
static void hlx_moe_rows_free(hlx_engine_t *eng, hlx_moe_t *moe)
{
    float *bufs[] = { moe->bw, moe->xin, moe->gu, moe->act, moe->out };
    size_t i;

    free(moe->sel); free(moe->selw); free(moe->hidx); free(moe->hw);
    hlx_be_free(eng, moe->idx);
    for (i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        hlx_be_free(eng, bufs[i]);
    moe->sel = moe->hidx = moe->idx = NULL;
    moe->selw = moe->hw = moe->bw = moe->xin = moe->gu = moe->act = moe->out = NULL;
    moe->cap = 0;
}

hlx_status_t hlx_moe_reserve(hlx_engine_t *eng, int rows)
{
    hlx_moe_t *moe = eng->moe;
    size_t R = (size_t)(rows > 0 ? rows : 1), H = (size_t)eng->m.hidden,
           K = (size_t)eng->m.top_k, cm = moe->cmax;
    hlx_status_t st;

    if (rows <= moe->cap)
        return HLX_OK;
    /* the queue may still read the old buffers */
    if (moe->cap > 0 && (st = eng->be.ops->queue_sync(&eng->be, eng->q)) != HLX_OK)
        return st;
    hlx_moe_rows_free(eng, moe);
    moe->sel  = calloc(R * K, sizeof(int));
    moe->selw = calloc(R * K, sizeof(float));
    moe->hidx = calloc(R * K, sizeof(int));
    moe->hw   = calloc(R * (K + 2), sizeof(float));
    moe->idx  = hlx_be_zalloc(eng, R * K, sizeof(int));
    moe->bw   = hlx_be_zalloc(eng, R * (K + 2), sizeof(float));
    moe->xin  = hlx_be_zalloc(eng, R * H, sizeof(float));
    moe->out  = hlx_be_zalloc(eng, R * H, sizeof(float));
    moe->gu   = hlx_be_zalloc(eng, R * 2 * cm, sizeof(float));
    moe->act  = hlx_be_zalloc(eng, R * cm, sizeof(float));
    if (!moe->sel || !moe->selw || !moe->hidx || !moe->hw || !moe->idx || !moe->bw ||
        !moe->xin || !moe->out || !moe->gu || !moe->act) {
        hlx_moe_rows_free(eng, moe);
        return HLX_ERR_NOMEM;
    }
    moe->cap = (int)R;
    return HLX_OK;
}

hlx_status_t hlx_moe_build(hlx_engine_t *eng)
{
    const hlx_model_t *m = &eng->m;
    size_t B = (size_t)eng->cfg.batch, E = (size_t)m->experts;
    hlx_moe_t *moe;
    hlx_status_t st;
    uint64_t w0;
    int l;

    if (hlx_model_moe_layers(m) == 0)
        return HLX_OK;
    if ((moe = eng->moe = calloc(1, sizeof(*moe))) == NULL)
        return HLX_ERR_NOMEM;
    hlx_moe_rank_layout(eng, &moe->lay);
    moe->nl    = hlx_model_moe_layers(m);
    moe->cmax = (size_t)(moe->lay.col_count > moe->lay.shared_count ? moe->lay.col_count
                                                                     : moe->lay.shared_count);
    moe->w       = calloc((size_t)moe->nl, sizeof(*moe->w));
    moe->logits  = calloc(E, sizeof(double));
    moe->scratch = calloc(3 * E, sizeof(double));
    moe->first   = calloc((size_t)moe->lay.expert_count + 1, sizeof(int));
    moe->count   = calloc((size_t)moe->lay.expert_count + 1, sizeof(int));
    if (!moe->w || !moe->logits || !moe->scratch || !moe->first || !moe->count ||
        hlx_moe_reserve(eng, (int)B) != HLX_OK)
        return HLX_ERR_NOMEM;
    w0 = eng->w_bytes;
    for (l = m->dense_layers; l < m->layers; l++)
        if (hlx_model_layer_moe(m, l) &&
            (st = hlx_moe_build_layer(eng, l, &moe->w[hlx_model_moe_index(m, l)])) != HLX_OK)
            return st;
    /* what the experts' matrices took as loaded (packed, strips), the routers in f32 */
    moe->bytes = eng->w_bytes - w0 + hlx_moe_rank_bytes(m, &moe->lay, 0);
    return HLX_OK;
}

void hlx_moe_destroy(hlx_engine_t *eng)
{
    hlx_moe_t *moe = eng->moe;
    int l, j;

    if (moe == NULL)
        return;
    for (l = 0; moe->w && l < moe->nl; l++) {
        hlx_moe_w_t *W = &moe->w[l];
        for (j = 0; j < moe->lay.expert_count; j++) {
            hlx_be_free(eng, W->egu ? W->egu[j] : NULL);
            hlx_be_free(eng, W->edown ? W->edown[j] : NULL);
            hlx_be_free(eng, W->ebgu ? W->ebgu[j] : NULL);
            hlx_be_free(eng, W->ebdown ? W->ebdown[j] : NULL);
        }
        free(W->router); free(W->bias); free(W->sgate); free(W->rbias);
        free(W->ebgu); free(W->ebdown);
        hlx_be_free(eng, W->sgu); hlx_be_free(eng, W->sdown);
        free(W->egu); free(W->edown);
    }
    hlx_moe_rows_free(eng, moe);
    free(moe->w); free(moe->logits); free(moe->scratch); free(moe->first); free(moe->count);
    free(moe);
    eng->moe = NULL;
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

/* The routing of B rows of hn (host-readable: the queue is synced first) into this rank's
 * expert lists: expert j's rows at hidx[first[j] .. + count[j]) with their weights in hw,
 * in row order; then the shared gate of each row (shared_gate models) at hw + B K. Both
 * copied to the backend's idx and bw. */
static hlx_status_t hlx_moe_lists(hlx_engine_t *eng, const hlx_moe_w_t *W, const float *hn,
                                  int B)
{
    hlx_moe_t *moe = eng->moe;
    const hlx_model_t *m = &eng->m;
    int H = m->hidden, E = m->experts, K = m->top_k, n = 0, b, j, k;
    size_t nw = (size_t)B * K;
    hlx_status_t st;

    /* the same on every rank: replicated input and router, fp64 in one order */
    for (b = 0; b < B; b++) {
        hlx_moe_logits(hn + (size_t)b * H, W->router, H, E, moe->logits);
        for (j = 0; W->rbias != NULL && j < E; j++) /* gpt-oss: before the scores */
            moe->logits[j] += W->rbias[j];
        hlx_moe_route(m, moe->logits, W->bias, moe->scratch, moe->sel + (size_t)b * K,
                      moe->selw + (size_t)b * K);
    }
    for (j = 0; j < moe->lay.expert_count; j++) {
        int e = moe->lay.expert_first + j;
        moe->first[j] = n;
        for (b = 0; b < B; b++)
            for (k = 0; k < K; k++)
                if (moe->sel[(size_t)b * K + k] == e) {
                    moe->hidx[n] = b;
                    moe->hw[n++] = moe->selw[(size_t)b * K + k];
                }
        moe->count[j] = n - moe->first[j];
    }
    /* Qwen2-MoE: the shared output times sigmoid(hn . w) per row, in fp64 over the
     * replicated input and gate, so every rank scales its share by the same factor */
    for (b = 0; b < B && W->sgate != NULL; b++) {
        const float *h = hn + (size_t)b * H;
        double z = 0.0;
        int i;
        for (i = 0; i < H; i++)
            z += (double)h[i] * W->sgate[i];
        moe->hw[nw + (size_t)b] = (float)(1.0 / (1.0 + exp(-z)));
    }
    for (b = 0; m->moe_weight_input && b < B; b++)
        moe->hw[nw + (size_t)B + (size_t)b] = 1.0f;
    st = eng->be.ops->copy_to(&eng->be, eng->q, moe->idx, moe->hidx, sizeof(int) * (size_t)n);
    if (st == HLX_OK)
        st = eng->be.ops->copy_to(&eng->be, eng->q, moe->bw, moe->hw,
                                  sizeof(float) * (nw + (m->moe_weight_input ? 2 * (size_t)B
                                                         : W->sgate != NULL ? (size_t)B : 0)));
    return st;
}

/* The gate/up GEMM, the gate's activation (the model's ffn_act) and down GEMM of one
 * expert slice ([H][2 c], [c][H]) over the rows rows of in, into out; bgu ([2 c]) and bdown
 * ([H]) their biases where given (NULL: none). */
static hlx_status_t hlx_moe_swiglu(hlx_engine_t *eng, const void *wgu, const void *wdown,
                                   const float *bgu, const float *bdown, int c, const float *in,
                                   float *out, int rows)
{
    hlx_moe_t *moe = eng->moe;
    const hlx_model_t *m = &eng->m;
    const int H = m->hidden;
    hlx_status_t st;

    st = HLX_BE(eng, gemm, rows, 2 * c, H, in, wgu, eng->wp_dtype, moe->gu, 0);
    if (st == HLX_OK && bgu != NULL)
        st = HLX_BE(eng, add_rows, moe->gu, (size_t)(2 * c), bgu, rows, 2 * c);
    if (st == HLX_OK)
        st = HLX_BE(eng, glu, moe->act, moe->gu, rows, c, m->ffn_act, (float)m->act_alpha,
                    (float)m->act_limit);
    if (st == HLX_OK)
        st = HLX_BE(eng, gemm, rows, H, c, moe->act, wdown, eng->wp_dtype, out, 0);
    if (st == HLX_OK && bdown != NULL)
        st = HLX_BE(eng, add_rows, out, (size_t)H, bdown, rows, H);
    return st;
}

hlx_status_t hlx_moe_ffn_rows(hlx_engine_t *eng, int l, const float *x, float *hn, float *y,
                              int B)
{
    hlx_moe_t *moe = eng->moe;
    const hlx_model_t *m = &eng->m;
    const hlx_moe_w_t *W = &moe->w[hlx_model_moe_index(m, l)];
    int H = m->hidden, K = m->top_k, sc = moe->lay.shared_count, cc = moe->lay.col_count, j;
    uint64_t t0 = hlx_now_ns();
    hlx_status_t st;

    atomic_store_explicit(&eng->wd_where, hlx_phase_name(HLX_PHASE_MOE), memory_order_relaxed);
    hlx_engine_clock(eng, HLX_PHASE_MOE);
    st = hlx_moe_reserve(eng, B);
    if (st == HLX_OK)
        st = HLX_BE(eng, rmsnorm, hn, x, eng->layers[l].ffn_norm, B, H, (float)m->norm_eps);
    /* the routing reads hn on the host (a stream sync on a device) */
    if (st == HLX_OK)
        st = hlx_engine_sync(eng);
    if (st == HLX_OK)
        st = hlx_moe_lists(eng, W, hn, B);
    /* Shared experts: this rank's columns for every row (as a dense FFN), scaled by the
     * gate where the model has one (y = 0, then y += g out). */
    if (st == HLX_OK && sc > 0) {
        st = hlx_moe_swiglu(eng, W->sgu, W->sdown, NULL, NULL, sc, hn,
                            W->sgate != NULL ? moe->out : y, B);
        if (st == HLX_OK && W->sgate != NULL) {
            st = HLX_BE(eng, pad_rows, y, H, y, 0, B, 0.0f, 0.0f);
            if (st == HLX_OK)
                st = HLX_BE(eng, scatter_add, y, moe->out, NULL, moe->bw + (size_t)B * K, B,
                            H);
        }
    } else if (st == HLX_OK) {
        st = HLX_BE(eng, pad_rows, y, H, y, 0, B, 0.0f, 0.0f); /* y = 0 */
    }
    /* Routed experts of this EP group: each (row, expert) pair only here, on this rank's
     * columns: the expert's rows gathered, its FFN, weight x output added to their rows.
     * The all-reduce that follows sums the ranks. */
    for (j = 0; j < moe->lay.expert_count && st == HLX_OK; j++) {
        const int *idx = moe->idx + moe->first[j];
        int nb = moe->count[j];
        /* the expert reads `in` and writes `eo`, added to its rows times `w`; Llama 4
         * (moe_weight_input): expert(w x), w x exactly as 0 + w x into out, the expert
         * writing xin, added with weight 1 (the ones after the shared gates) */
        const float *in = moe->xin, *w = moe->bw + moe->first[j];
        float *eo = moe->out;
        if (nb == 0 || cc == 0)
            continue;
        st = HLX_BE(eng, gather_rows, moe->xin, hn, idx, nb, H);
        if (st == HLX_OK && m->moe_weight_input) {
            st = HLX_BE(eng, pad_rows, moe->out, H, moe->out, 0, nb, 0.0f, 0.0f);
            if (st == HLX_OK)
                st = HLX_BE(eng, scatter_add, moe->out, moe->xin, NULL, w, nb, H);
            in = moe->out;
            eo = moe->xin;
            w = moe->bw + (size_t)B * (K + 1);
        }
        if (st == HLX_OK)
            st = hlx_moe_swiglu(eng, W->egu[j], W->edown[j], W->ebgu ? W->ebgu[j] : NULL,
                                W->ebdown ? W->ebdown[j] : NULL, cc, in, eo, nb);
        if (st == HLX_OK)
            st = HLX_BE(eng, scatter_add, y, eo, idx, w, nb, H);
    }
    hlx_engine_clock(eng, -1);
    if (!eng->dev_clock)
        eng->phase_ns[HLX_PHASE_MOE] += hlx_now_ns() - t0;
    return st;
}

hlx_status_t hlx_moe_ffn(hlx_engine_t *eng, int l)
{
    return hlx_moe_ffn_rows(eng, l, eng->x, eng->hn, eng->y, eng->cfg.batch);
}
