/* The fp64 reference decoder (see hlx_reference.h). Written for clarity, not speed: plain
 * loops over the full, unsharded tensors. */
#include "hlx_reference.h"
#include "hlx_reference_moe.h"
#include "hlx_reference_mla.h"
#include "hlx_ref_util.h"
#include "hlx_synth.h"
#include "hlx_wsrc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double *attn_norm, *wq, *wk, *wv, *wo, *ffn_norm, *wgate, *wup, *wdown;
    double *bq, *bk, *bv;  /* qkv_bias */
    double *qnorm, *knorm; /* qk_norm: [dk] each; qk_norm_proj: [Q * dk], [K * dk] */
    double *post_attn_norm, *post_ffn_norm; /* post_norms */
    double *sinks, *bo;    /* [Q] attn_sinks, [H] o_bias */
    double *attn_norm_b, *ffn_norm_b; /* [H] LayerNorms' biases (norm_layer) */
    double *bup, *bdown;   /* [F], [H] the plain FFN's biases (ffn_bias) */
    float  *kscale, *vscale; /* [K] fp8 KV-cache scales per KV head (hlx_wsrc_kv_scales) */
} hlx_ref_layer_t;

struct hlx_ref {
    hlx_model_t      m;
    hlx_dtype_t      kv_dtype;
    int              batch;
    int64_t          context, cap, pos;
    uint64_t         seed;
    hlx_wsrc_t       ws;      /* the engine's weight source, read whole */
    hlx_ref_layer_t *layers;
    double          *embed, *final_norm, *lmhead;
    double          *final_norm_b; /* norm_layer: the final LayerNorm's bias */
    float           *kcache, *vcache; /* [L][B][K][cap][d], values rounded to kv_dtype */
    int             *tokens;
    hlx_ref_moe_t   *moe;     /* MoE layers (reference_moe.c); NULL for a dense model */
    hlx_ref_mla_t   *mla;     /* MLA attention and its latent cache (NULL for GQA) */
    double          *rope_freq; /* hlx_model_rope_freqs of rope_dim, once (dynamic NTK:
                                   per request and step, below) */
    double           rope_ms;   /* ... and its factor on cos and sin */
    double          *rope_local; /* rope_local_theta: the windowed layers' frequencies */
    int64_t         *pend;      /* [B]: where each request's prompt ends (dynamic NTK) */
};

double *hlx_ref_read(hlx_wsrc_t *ws, const char *name, int64_t rows, int64_t cols, char *err,
                     size_t errlen)
{
    float *f = malloc(sizeof(float) * (size_t)(rows * cols));
    double *d = malloc(sizeof(double) * (size_t)(rows * cols));
    int64_t i;

    if (f == NULL || d == NULL ||
        hlx_wsrc_read(ws, name, rows, cols, 0, rows, 0, cols, f, HLX_DTYPE_F32, cols, err,
                      errlen) != HLX_OK) {
        free(f);
        free(d);
        return NULL;
    }
    for (i = 0; i < rows * cols; i++)
        d[i] = f[i];
    free(f);
    return d;
}

/* Gemma 2's soft-capping in double: cap tanh(x / cap), x when cap is 0. */
static double hlx_ref_softcap(double x, double cap)
{
    return cap > 0.0 ? cap * tanh(x / cap) : x;
}

/* The model's norm of x[n] into y (in place allowed), in double: RMSNorm, or under
 * norm_layer (StarCoder2's nn.LayerNorm) (x - mean) / sqrt(var + eps) w + b, the variance
 * biased (over n). */
static void hlx_ref_norm(const hlx_model_t *m, double *y, const double *x, const double *w,
                         const double *b, int n)
{
    double mean = 0.0, var = 0.0;
    int i;

    if (!m->norm_layer) {
        hlx_ref_rmsnorm(y, x, w, n, m->norm_eps);
        return;
    }
    for (i = 0; i < n; i++)
        mean += x[i];
    mean /= n;
    for (i = 0; i < n; i++)
        var += (x[i] - mean) * (x[i] - mean);
    var /= n;
    for (i = 0; i < n; i++)
        y[i] = (x[i] - mean) / sqrt(var + m->norm_eps) * w[i] + b[i];
}

/* The whole runtime weight w of layer l from the weight source, in fp64. */
static double *hlx_ref_tensor(hlx_wsrc_t *ws, hlx_hf_weight_t w, int l)
{
    char name[128], err[256];
    int64_t rows, cols;

    hlx_hf_weight_name(w, l, name, sizeof(name));
    hlx_hf_weight_shape(&ws->cfg.m, w, &rows, &cols);
    return hlx_ref_read(ws, name, rows, cols, err, sizeof(err));
}

uint64_t hlx_ref_bytes(const hlx_model_t *m, int batch, int64_t context, int steps)
{
    /* Saturates at UINT64_MAX instead of wrapping (the caller refuses it). */
    const uint64_t f[] = { (uint64_t)m->layers, (uint64_t)batch, (uint64_t)m->kv_heads,
                           (uint64_t)(context + steps), (uint64_t)(m->head_dim + m->v_head_dim),
                           sizeof(float) };
    double pw = hlx_model_params(m) * (double)sizeof(double);
    uint64_t kv = 1, w, sum;
    size_t i;

    if (!(pw < 1.8e19))
        return UINT64_MAX;
    w = (uint64_t)pw;
    for (i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        if (__builtin_mul_overflow(kv, f[i], &kv))
            return UINT64_MAX;
    if (m->attn == HLX_ATTN_MLA) /* the latent cache and its derived keys and values */
        kv = hlx_ref_mla_bytes(m, batch, context, steps);
    if (__builtin_add_overflow(kv, w, &sum) || sum == UINT64_MAX)
        return UINT64_MAX;
    return sum;
}

hlx_status_t hlx_ref_create(const hlx_model_t *m, hlx_dtype_t kv_dtype, int batch,
                            int64_t context, int steps, uint64_t seed, hlx_ref_t **ref_p)
{
    return hlx_ref_create_ckpt(m, kv_dtype, m->weight_dtype, batch, context, steps, seed, NULL,
                               ref_p);
}

hlx_status_t hlx_ref_create_ckpt(const hlx_model_t *m, hlx_dtype_t kv_dtype,
                                 hlx_dtype_t w_dtype, int batch, int64_t context, int steps,
                                 uint64_t seed, const char *ckpt, hlx_ref_t **ref_p)
{
    char werr[512];
    hlx_ref_t *ref = calloc(1, sizeof(*ref));
    int64_t K = m->kv_heads, dk = m->head_dim, dv = m->v_head_dim, p;
    size_t kvn;
    int l, b, g, e;

    if (ref == NULL)
        return HLX_ERR_NOMEM;
    ref->m        = *m;
    ref->kv_dtype = kv_dtype;
    ref->batch    = batch;
    ref->context  = context;
    ref->cap      = context + steps;
    ref->pos      = context;
    ref->seed     = seed;
    if (ckpt != NULL && ckpt[0]) {
        hlx_status_t st = hlx_wsrc_ckpt(&ref->ws, ckpt, werr, sizeof(werr));
        if (st != HLX_OK) {
            hlx_ref_destroy(ref);
            return st;
        }
    } else if (hlx_wsrc_synth(&ref->ws, m, seed, NULL, 0) != HLX_OK) {
        goto err_free;
    }
    hlx_wsrc_hold(&ref->ws, w_dtype); /* read what the engine holds */
    ref->layers   = calloc((size_t)m->layers, sizeof(*ref->layers));
    ref->tokens   = calloc((size_t)batch, sizeof(int));
    ref->rope_freq = malloc(sizeof(double) * (size_t)(m->rope_dim / 2 + 1));
    ref->pend     = malloc(sizeof(int64_t) * (size_t)batch);
    if (ref->layers == NULL || ref->tokens == NULL || ref->rope_freq == NULL ||
        ref->pend == NULL)
        goto err_free;
    for (b = 0; b < batch; b++) /* no prompt until told */
        ref->pend[b] = context;
    /* longrope's set from this reference's own length (the engine picks from its own) */
    hlx_model_rope_select(&ref->m, ref->cap);
    hlx_model_rope_freqs(&ref->m, m->rope_dim, ref->rope_freq, &ref->rope_ms);
    if (m->rope_local_theta > 0.0) { /* theta^(-2i / rot), unscaled */
        int i;
        if ((ref->rope_local = malloc(sizeof(double) * (size_t)(m->rope_dim / 2 + 1))) == NULL)
            goto err_free;
        for (i = 0; i < m->rope_dim / 2; i++)
            ref->rope_local[i] = pow(m->rope_local_theta, -2.0 * i / m->rope_dim);
    }
    for (l = 0; l < m->layers; l++) {
        hlx_ref_layer_t *L = &ref->layers[l];
        double ks, vs;
        if ((L->kscale = malloc(sizeof(float) * (size_t)K)) == NULL ||
            (L->vscale = malloc(sizeof(float) * (size_t)K)) == NULL)
            goto err_free;
        for (g = 0; g < K; g++) {
            if (hlx_wsrc_kv_scales(&ref->ws, kv_dtype, l, g, &ks, &vs, werr, sizeof(werr)) !=
                HLX_OK)
                goto err_free;
            L->kscale[g] = (float)ks;
            L->vscale[g] = (float)vs;
        }
        /* OLMo 2 (post_norms_only): no input norms, NULL */
        if (!m->post_norms_only)
            L->attn_norm = hlx_ref_tensor(&ref->ws, HLX_HFW_ATTN_NORM, l);
        if (m->attn == HLX_ATTN_GQA) { /* MLA's projections: reference_mla.c */
            L->wq    = hlx_ref_tensor(&ref->ws, HLX_HFW_WQ, l);
            L->wk    = hlx_ref_tensor(&ref->ws, HLX_HFW_WK, l);
            L->wv    = hlx_ref_tensor(&ref->ws, HLX_HFW_WV, l);
            if (m->qkv_bias && (!(L->bq = hlx_ref_tensor(&ref->ws, HLX_HFW_BQ, l)) ||
                                !(L->bk = hlx_ref_tensor(&ref->ws, HLX_HFW_BK, l)) ||
                                !(L->bv = hlx_ref_tensor(&ref->ws, HLX_HFW_BV, l))))
                goto err_free;
            if (m->qk_norm_unit) { /* Llama 4: no weights, on the RoPE layers only */
                int64_t i;
                if (hlx_model_layer_rope(m, l) &&
                    (!(L->qnorm = malloc(sizeof(double) * (size_t)dk)) ||
                     !(L->knorm = malloc(sizeof(double) * (size_t)dk))))
                    goto err_free;
                for (i = 0; L->qnorm != NULL && i < dk; i++)
                    L->qnorm[i] = L->knorm[i] = 1.0;
            } else if ((m->qk_norm || m->qk_norm_proj) &&
                       (!(L->qnorm = hlx_ref_tensor(&ref->ws, HLX_HFW_QNORM, l)) ||
                        !(L->knorm = hlx_ref_tensor(&ref->ws, HLX_HFW_KNORM, l))))
                goto err_free;
            if ((m->attn_sinks && !(L->sinks = hlx_ref_tensor(&ref->ws, HLX_HFW_SINKS, l))) ||
                (m->o_bias && !(L->bo = hlx_ref_tensor(&ref->ws, HLX_HFW_BO, l))))
                goto err_free;
        }
        L->wo        = hlx_ref_tensor(&ref->ws, HLX_HFW_WO, l);
        if (!m->post_norms_only)
            L->ffn_norm = hlx_ref_tensor(&ref->ws, HLX_HFW_FFN_NORM, l);
        if (m->post_norms &&
            (!(L->post_attn_norm = hlx_ref_tensor(&ref->ws, HLX_HFW_POST_ATTN_NORM, l)) ||
             !(L->post_ffn_norm = hlx_ref_tensor(&ref->ws, HLX_HFW_POST_FFN_NORM, l))))
            goto err_free;
        if (!hlx_ref_layer_moe(m, l)) { /* MoE layers: reference_moe.c */
            if (!m->ffn_plain) /* StarCoder2's plain MLP: up and down alone */
                L->wgate = hlx_ref_tensor(&ref->ws, HLX_HFW_WGATE, l);
            L->wup   = hlx_ref_tensor(&ref->ws, HLX_HFW_WUP, l);
            L->wdown = hlx_ref_tensor(&ref->ws, HLX_HFW_WDOWN, l);
            if (m->ffn_bias && (!(L->bup = hlx_ref_tensor(&ref->ws, HLX_HFW_BUP, l)) ||
                                !(L->bdown = hlx_ref_tensor(&ref->ws, HLX_HFW_BDOWN, l))))
                goto err_free;
        }
        if (m->norm_layer &&
            (!(L->attn_norm_b = hlx_ref_tensor(&ref->ws, HLX_HFW_ATTN_NORM_B, l)) ||
             !(L->ffn_norm_b = hlx_ref_tensor(&ref->ws, HLX_HFW_FFN_NORM_B, l))))
            goto err_free;
        if ((!m->post_norms_only && (!L->attn_norm || !L->ffn_norm)) ||
            (m->attn == HLX_ATTN_GQA && (!L->wq || !L->wk || !L->wv)) || !L->wo ||
            (!hlx_ref_layer_moe(m, l) && ((!m->ffn_plain && !L->wgate) || !L->wup || !L->wdown)))
            goto err_free;
    }
    if (m->experts > 0 && m->dense_layers < m->layers &&
        (ref->moe = hlx_ref_moe_create(&ref->ws, m, NULL, 0)) == NULL)
        goto err_free;
    ref->embed      = hlx_ref_tensor(&ref->ws, HLX_HFW_EMBED, 0);
    ref->final_norm = hlx_ref_tensor(&ref->ws, HLX_HFW_FINAL_NORM, 0);
    if (m->norm_layer &&
        !(ref->final_norm_b = hlx_ref_tensor(&ref->ws, HLX_HFW_FINAL_NORM_B, 0)))
        goto err_free;
    ref->lmhead     = hlx_ref_tensor(&ref->ws, HLX_HFW_LMHEAD, 0);
    if (m->attn == HLX_ATTN_MLA &&
        hlx_ref_mla_create(&ref->ws, m, kv_dtype, batch, context, steps, seed, &ref->mla) != HLX_OK)
        goto err_free;
    kvn = ref->mla != NULL ? 1 : (size_t)m->layers * (size_t)batch * (size_t)K * (size_t)ref->cap;
    ref->kcache = malloc(sizeof(float) * kvn * (size_t)dk);
    ref->vcache = malloc(sizeof(float) * kvn * (size_t)dv);
    if (!ref->embed || !ref->final_norm || !ref->lmhead || !ref->kcache || !ref->vcache)
        goto err_free;
    { /* Gemma: sqrt(H) in the held weights' dtype; Granite: embed_mult; else 1 */
        double s = hlx_model_embed_scale_held(m, ref->ws.held);
        size_t i;
        for (i = 0; i < (size_t)m->vocab * (size_t)m->hidden; i++)
            ref->embed[i] *= s;
    }
    for (l = 0; l < m->layers && ref->mla == NULL; l++) {
        uint64_t kk = hlx_synth_key(seed, l, HLX_T_KCTX), vk = hlx_synth_key(seed, l, HLX_T_VCTX);
        for (b = 0; b < batch; b++)
            for (g = 0; g < K; g++) {
                size_t base = (((size_t)l * batch + b) * K + g) * (size_t)ref->cap;
                for (p = 0; p < context; p++) {
                    for (e = 0; e < dk; e++)
                        ref->kcache[(base + p) * dk + e] = hlx_round_kv(
                            hlx_synth_ctx(kk, b, (int)K, g, p, e, (int)dk, 1), kv_dtype,
                            ref->layers[l].kscale[g]);
                    for (e = 0; e < dv; e++)
                        ref->vcache[(base + p) * dv + e] = hlx_round_kv(
                            hlx_synth_ctx(vk, b, (int)K, g, p, e, (int)dv, 0), kv_dtype,
                            ref->layers[l].vscale[g]);
                }
            }
    }
    for (b = 0; b < batch; b++)
        ref->tokens[b] = hlx_synth_token0(m, seed, b);
    *ref_p = ref;
    return HLX_OK;

err_free:
    hlx_ref_destroy(ref);
    return HLX_ERR_NOMEM;
}

void hlx_ref_rmsnorm(double *y, const double *x, const double *w, int64_t n, double eps)
{
    double ss = 0.0, r;
    int64_t i;

    for (i = 0; i < n; i++)
        ss += x[i] * x[i];
    r = 1.0 / sqrt(ss / (double)n + eps);
    for (i = 0; i < n; i++)
        y[i] = x[i] * r * w[i];
}

/* y[N] = x[Kd] * W[Kd][N] */
void hlx_ref_matvec(double *y, const double *x, const double *w, int64_t Kd, int64_t N)
{
    int64_t i, j;

    for (j = 0; j < N; j++)
        y[j] = 0.0;
    for (i = 0; i < Kd; i++)
        for (j = 0; j < N; j++)
            y[j] += x[i] * w[i * N + j];
}

/* RoPE of pairs (2i, 2i+1), i < rot_dim / 2: inv_freq and the cos/sin factor ms of
 * hlx_model_rope_freqs (the model's scaling). */
static void hlx_ref_rope(double *x, int rot_dim, int64_t pos, const double *inv_freq, double ms)
{
    int i;

    for (i = 0; i < rot_dim / 2; i++) {
        double ang = (double)pos * inv_freq[i], c = cos(ang) * ms, s = sin(ang) * ms;
        double a = x[2 * i], b = x[2 * i + 1];
        x[2 * i]     = a * c - b * s;
        x[2 * i + 1] = a * s + b * c;
    }
}

/* Dual chunk attention at position pos, from its definition (vLLM's DualChunkRotaryEmbedding
 * tables and its decode's three block tables) rather than hlx_model_dca_split: with chunks
 * of n = chunk_size - local_size, keys and the intra query turn at pos mod n, the succ
 * query (keys of the previous chunk) at pos mod n + n clamped to chunk_size, the inter
 * query (every chunk before that) at 2n - 1 clamped alike; *kpos, rot[0] inter, rot[1]
 * succ, lim[0] and lim[1] the first positions past the inter and succ keys. */
static void hlx_ref_dca(const hlx_model_t *m, int64_t pos, int64_t *kpos, int64_t rot[2],
                        int64_t lim[2])
{
    int64_t n = m->dca_chunk - m->dca_local, chunk = pos / n;

    *kpos  = pos - chunk * n;
    rot[0] = 2 * n - 1 > m->dca_chunk ? m->dca_chunk : 2 * n - 1;
    rot[1] = *kpos + n > m->dca_chunk ? m->dca_chunk : *kpos + n;
    lim[0] = chunk > 1 ? (chunk - 1) * n : 0;
    lim[1] = chunk * n;
}

/* vLLM's factor on the key it caches and on the query of a token whose forward is len
 * positions long (a prompt token: the prefill's, the prompt's length; a generated one:
 * pos + 1): max(1, 0.1 ln(len / original_max_position_embeddings) + 1). */
static double hlx_ref_dca_factor(const hlx_model_t *m, int64_t len)
{
    return m->dca_chunk > 0 && m->dca_orig > 0
               ? fmax(1.0, 0.1 * log((double)len / m->dca_orig) + 1.0) : 1.0;
}

hlx_status_t hlx_ref_step(hlx_ref_t *ref, double *hidden, double *logits, int *next)
{
    const hlx_model_t *m = &ref->m;
    int64_t H = m->hidden, Q = m->q_heads, K = m->kv_heads, dk = m->head_dim,
            dv = m->v_head_dim, F = m->ffn, V = m->vocab, G = Q / K, n = ref->pos + 1, p, p0;
    double *hn = malloc(sizeof(double) * (size_t)(H + 3 * Q * dk + K * dk + K * dv + Q * dv +
                                                 H + 3 * F + (size_t)n));
    double *q, *qd, *k, *v, *o, *y, *gate, *up, *act, *sc;
    double scale = hlx_model_softmax_scale(m, (int)dk);
    int64_t kpos = ref->pos, rot[2] = { 0, 0 }, lim[2] = { 0, 0 }; /* dual chunk attention */
    double dms;
    int b, l, h, g, e, local;

    if (hn == NULL || ref->pos >= ref->cap) {
        free(hn);
        return hn ? HLX_ERR_INVALID : HLX_ERR_NOMEM;
    }
    q = hn + H;
    qd = q + Q * dk; /* [2][Q][dk]: dual chunk attention's inter and succ queries */
    k = qd + 2 * Q * dk;
    v = k + K * dk;
    o = v + K * dv;
    y = o + Q * dv;
    gate = y + H;
    up = gate + F;
    act = up + F;
    sc = act + F;
    if (m->dca_chunk > 0)
        hlx_ref_dca(m, ref->pos, &kpos, rot, lim);
    for (b = 0; b < ref->batch; b++) {
        double *x = hidden + (size_t)b * H;
        if (m->rope_kind == HLX_ROPE_DYNAMIC) {
            /* Hugging Face's generate for this request alone: a prompt position is turned
             * in the prefill's forward, as long as the prompt; a later one in its own
             * step's, one past it */
            int64_t seq = ref->pos < ref->pend[b] ? ref->pend[b] : ref->pos + 1;
            hlx_model_rope_freqs_at(m, m->rope_dim, seq, ref->rope_freq, &ref->rope_ms);
        }
        memcpy(x, ref->embed + (size_t)ref->tokens[b] * H, sizeof(double) * (size_t)H);
        /* dual chunk attention's factor on this token's key and query */
        dms = hlx_ref_dca_factor(m, ref->pos < ref->pend[b] ? ref->pend[b] : ref->pos + 1);
        for (l = 0; l < m->layers; l++) {
            hlx_ref_layer_t *L = &ref->layers[l];
            if (L->attn_norm != NULL)
                hlx_ref_norm(m, hn, x, L->attn_norm, L->attn_norm_b, H);
            else /* OLMo 2: the residual stream itself */
                memcpy(hn, x, sizeof(double) * (size_t)H);
            if (ref->mla != NULL) { /* MLA: the heads' outputs o, then the shared W_o */
                hlx_ref_mla_attn(ref->mla, l, b, ref->pos, hn, o);
                goto attn_out;
            }
            hlx_ref_matvec(q, hn, L->wq, H, Q * dk);
            hlx_ref_matvec(k, hn, L->wk, H, K * dk);
            hlx_ref_matvec(v, hn, L->wv, H, K * dv);
            for (e = 0; L->bq != NULL && e < Q * dk; e++)
                q[e] += L->bq[e];
            for (e = 0; L->bk != NULL && e < K * dk; e++)
                k[e] += L->bk[e];
            for (e = 0; L->bv != NULL && e < K * dv; e++)
                v[e] += L->bv[e];
            if (m->qk_norm_proj) { /* OLMo 2: the whole q, the whole k, in place */
                hlx_ref_rmsnorm(q, q, L->qnorm, Q * dk, m->norm_eps);
                hlx_ref_rmsnorm(k, k, L->knorm, K * dk, m->norm_eps);
            }
            /* each head on its own, in place (qk_norm_unit: NULL on a NoPE layer) */
            for (h = 0; m->qk_norm && L->qnorm != NULL && h < Q; h++)
                hlx_ref_rmsnorm(q + h * dk, q + h * dk, L->qnorm, dk, m->norm_eps);
            for (g = 0; m->qk_norm && L->knorm != NULL && g < K; g++)
                hlx_ref_rmsnorm(k + g * dk, k + g * dk, L->knorm, dk, m->norm_eps);
            local = ref->rope_local != NULL && hlx_model_layer_window(m, l) > 0;
            /* dual chunk attention: the query turned three ways (qd[part]; intra in q) */
            for (h = 0; m->dca_chunk > 0 && h < Q; h++)
                for (e = 0; e < 2; e++) {
                    memcpy(qd + (e * Q + h) * dk, q + h * dk, sizeof(double) * (size_t)dk);
                    hlx_ref_rope(qd + (e * Q + h) * dk, m->rope_dim, rot[e], ref->rope_freq,
                                 ref->rope_ms);
                }
            /* (a NoPE layer turns neither its queries nor its keys) */
            for (h = 0; hlx_model_layer_rope(m, l) && h < Q; h++)
                hlx_ref_rope(q + h * dk, m->rope_dim, kpos,
                             local ? ref->rope_local : ref->rope_freq, local ? 1.0 : ref->rope_ms);
            /* Llama 4's attention temperature on a NoPE layer's queries (not its keys):
             * 1 + scale ln(1 + floor((pos + 1) / floor)) */
            if (m->attn_temp_floor > 0 && m->nope_pattern > 1 && (l + 1) % m->nope_pattern == 0) {
                double t = 1.0 + m->attn_temp_scale *
                                     log(1.0 + floor((double)(ref->pos + 1) / m->attn_temp_floor));
                for (e = 0; e < Q * dk; e++)
                    q[e] *= t;
            }
            for (g = 0; g < K; g++) {
                size_t base = (((size_t)l * ref->batch + b) * K + g) * (size_t)ref->cap +
                              (size_t)ref->pos;
                if (hlx_model_layer_rope(m, l))
                    hlx_ref_rope(k + g * dk, m->rope_dim, kpos,
                                 local ? ref->rope_local : ref->rope_freq,
                                 local ? 1.0 : ref->rope_ms);
                /* The new token is stored the way the runtime stores it: fp32, then the
                 * KV dtype. */
                for (e = 0; e < dk; e++)
                    ref->kcache[base * dk + e] = hlx_round_kv((float)(k[g * dk + e] * dms),
                                                              ref->kv_dtype,
                                                              ref->layers[l].kscale[g]);
                for (e = 0; e < dv; e++)
                    ref->vcache[base * dv + e] = hlx_round_kv((float)v[g * dv + e], ref->kv_dtype,
                                                              ref->layers[l].vscale[g]);
            }
            /* Two-pass softmax over every position p0..pos: 0, or the first of a windowed
             * layer's window, or of its chunk of sliding_window positions (window_chunked) */
            p0 = hlx_model_window_start(hlx_model_layer_window(m, l), ref->pos);
            if (m->window_chunked && hlx_model_layer_window(m, l) > 0)
                p0 = ref->pos / m->sliding_window * m->sliding_window;
            for (h = 0; h < Q; h++) {
                size_t base = (((size_t)l * ref->batch + b) * K + h / G) * (size_t)ref->cap;
                const float *kc = ref->kcache + base * dk, *vc = ref->vcache + base * dv;
                double mx = -INFINITY, sum = 0.0;
                for (p = p0; p < n; p++) {
                    /* the query of the part p falls in (dual chunk attention), else q */
                    const double *qh = q + h * dk;
                    double d = 0.0;
                    if (p < lim[1])
                        qh = qd + ((p < lim[0] ? 0 : 1) * Q + h) * dk;
                    for (e = 0; e < dk; e++)
                        d += qh[e] * kc[p * dk + e];
                    sc[p] = hlx_ref_softcap(d * scale * dms, m->attn_softcap);
                    if (sc[p] > mx)
                        mx = sc[p];
                }
                for (e = 0; e < dv; e++)
                    o[h * dv + e] = 0.0;
                /* gpt-oss's sink: one more logit in the softmax, with no value */
                if (L->sinks != NULL && L->sinks[h] > mx)
                    mx = L->sinks[h];
                if (L->sinks != NULL)
                    sum += exp(L->sinks[h] - mx);
                for (p = p0; p < n; p++) {
                    double w = exp(sc[p] - mx);
                    sum += w;
                    for (e = 0; e < dv; e++)
                        o[h * dv + e] += w * vc[p * dv + e];
                }
                for (e = 0; e < dv; e++)
                    o[h * dv + e] /= sum;
            }
attn_out:
            hlx_ref_matvec(y, o, L->wo, Q * dv, H);
            for (e = 0; L->bo != NULL && e < H; e++)
                y[e] += L->bo[e];
            if (L->post_attn_norm != NULL)
                hlx_ref_rmsnorm(y, y, L->post_attn_norm, H, m->norm_eps);
            for (e = 0; e < H; e++)
                x[e] += hlx_model_residual_mult(m) * y[e];
            if (L->ffn_norm != NULL)
                hlx_ref_norm(m, hn, x, L->ffn_norm, L->ffn_norm_b, H);
            else
                memcpy(hn, x, sizeof(double) * (size_t)H);
            if (hlx_ref_layer_moe(m, l)) {
                hlx_ref_moe_ffn(ref->moe, l, hn, y, ref->pos, b);
            } else if (m->ffn_plain) { /* StarCoder2: act(hn W_up + b_up) W_down + b_down */
                hlx_ref_matvec(up, hn, L->wup, H, F);
                for (e = 0; e < F; e++) {
                    const double u = up[e] + (L->bup != NULL ? L->bup[e] : 0.0);
                    act[e] = m->ffn_act == HLX_ACT_GELU_TANH
                                 ? 0.5 * u * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) *
                                                         (u + 0.044715 * u * u * u)))
                                 : u / (1.0 + exp(-u));
                }
                hlx_ref_matvec(y, act, L->wdown, F, H);
                for (e = 0; L->bdown != NULL && e < H; e++)
                    y[e] += L->bdown[e];
            } else {
                hlx_ref_matvec(gate, hn, L->wgate, H, F);
                hlx_ref_matvec(up, hn, L->wup, H, F);
                for (e = 0; e < F && m->ffn_act == HLX_ACT_SWIGLU_CLAMP; e++) {
                    /* torch.clamp's: a NaN kept (fmin would make it the limit) */
                    const double ga = gate[e] > m->act_limit ? m->act_limit : gate[e];
                    const double ua = up[e] > m->act_limit    ? m->act_limit
                                      : up[e] < -m->act_limit ? -m->act_limit
                                                              : up[e];
                    gate[e] = ga / (1.0 + exp(-m->act_alpha * ga)) * (ua + 1.0);
                    up[e] = 1.0;
                }
                for (e = 0; e < F; e++)
                    act[e] = (m->ffn_act == HLX_ACT_SWIGLU_CLAMP ? gate[e]
                              : m->ffn_act == HLX_ACT_GELU_TANH
                                  ? 0.5 * gate[e] * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) *
                                                                (gate[e] + 0.044715 * gate[e] *
                                                                               gate[e] * gate[e])))
                                  : gate[e] / (1.0 + exp(-gate[e]))) * up[e];
                hlx_ref_matvec(y, act, L->wdown, F, H);
            }
            if (L->post_ffn_norm != NULL)
                hlx_ref_rmsnorm(y, y, L->post_ffn_norm, H, m->norm_eps);
            for (e = 0; e < H; e++)
                x[e] += hlx_model_residual_mult(m) * y[e];
        }
        hlx_ref_norm(m, hn, x, ref->final_norm, ref->final_norm_b, H);
        hlx_ref_matvec(logits + (size_t)b * V, hn, ref->lmhead, H, V);
        for (e = 0; e < V && m->logits_scale > 0.0; e++) /* Granite */
            logits[(size_t)b * V + e] /= m->logits_scale;
        for (e = 0; e < V && m->final_softcap > 0.0; e++)
            logits[(size_t)b * V + e] = hlx_ref_softcap(logits[(size_t)b * V + e],
                                                        m->final_softcap);
        next[b] = 0;
        for (e = 1; e < V; e++)
            if (logits[(size_t)b * V + e] > logits[(size_t)b * V + next[b]])
                next[b] = e;
        ref->tokens[b] = next[b];
    }
    ref->pos++;
    free(hn);
    return HLX_OK;
}

void hlx_ref_set_prompt_lens(hlx_ref_t *ref, const int *lens)
{
    int b;

    for (b = 0; b < ref->batch; b++)
        ref->pend[b] = ref->context + lens[b];
}

void hlx_ref_set_tokens(hlx_ref_t *ref, const int *tokens)
{
    memcpy(ref->tokens, tokens, sizeof(int) * (size_t)ref->batch);
}

const float *hlx_ref_kv_row(const hlx_ref_t *ref, int l, int b, int g, int64_t pos, int is_key)
{
    size_t base;

    if (l < 0 || l >= ref->m.layers || b < 0 || b >= ref->batch || g < 0 ||
        g >= ref->m.kv_heads || pos < 0 || pos >= ref->pos)
        return NULL;
    if (ref->mla != NULL) /* one latent row: key [c | k_rope], value its head */
        return hlx_ref_mla_kv_row(ref->mla, l, b, pos);
    base = (((size_t)l * ref->batch + b) * ref->m.kv_heads + g) * (size_t)ref->cap + (size_t)pos;
    return is_key ? ref->kcache + base * ref->m.head_dim : ref->vcache + base * ref->m.v_head_dim;
}

void hlx_ref_set_route_margin(hlx_ref_t *ref, double margin)
{
    hlx_ref_moe_set_margin(ref->moe, margin);
}

int64_t hlx_ref_route_near_ties(const hlx_ref_t *ref, char *first, size_t len)
{
    return hlx_ref_moe_near_ties(ref->moe, first, len);
}

void hlx_ref_destroy(hlx_ref_t *ref)
{
    int l;

    if (ref == NULL)
        return;
    for (l = 0; ref->layers && l < ref->m.layers; l++) {
        hlx_ref_layer_t *L = &ref->layers[l];
        free(L->attn_norm); free(L->wq); free(L->wk); free(L->wv); free(L->wo);
        free(L->ffn_norm); free(L->wgate); free(L->wup); free(L->wdown);
        free(L->bq); free(L->bk); free(L->bv); free(L->qnorm); free(L->knorm);
        free(L->post_attn_norm); free(L->post_ffn_norm); free(L->sinks); free(L->bo);
        free(L->attn_norm_b); free(L->ffn_norm_b); free(L->bup); free(L->bdown);
        free(L->kscale); free(L->vscale);
    }
    free(ref->layers);
    free(ref->embed);
    free(ref->final_norm);
    free(ref->final_norm_b);
    free(ref->lmhead);
    free(ref->kcache);
    free(ref->vcache);
    free(ref->tokens);
    free(ref->rope_freq);
    free(ref->rope_local);
    free(ref->pend);
    hlx_ref_moe_destroy(ref->moe);
    hlx_ref_mla_destroy(ref->mla);
    hlx_wsrc_fini(&ref->ws);
    free(ref);
}
