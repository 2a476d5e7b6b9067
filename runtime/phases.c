/* The phases of one Helix decode layer, one function each, over the execution backend:
 * QKV (norm, projection, RoPE, staggered KV append), attention partials, packing and the
 * KVP exchange, the exact LSE merge, W_o, the TP = N all-reduces, the FFN and the head.
 * A schedule (schedule.c) composes them. */
#define _GNU_SOURCE
#include "hlx_engine_int.h"
#include "hlx_mla.h"
#include "hlx_prefill.h"

#include "hlx_time.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define HLX_TIMED(_eng, _ph, ...) \
    do { \
        uint64_t _t0 = hlx_now_ns(); \
        atomic_store_explicit(&(_eng)->wd_where, hlx_phase_name(_ph), memory_order_relaxed); \
        hlx_engine_clock(_eng, _ph); \
        __VA_ARGS__; \
        hlx_engine_clock(_eng, -1); \
        if (!(_eng)->dev_clock) \
            (_eng)->phase_ns[_ph] += hlx_now_ns() - _t0; \
    } while (0)

#define HLX_BE(_eng, _op, ...) (_eng)->be.ops->_op(&(_eng)->be, (_eng)->q, __VA_ARGS__)
/* The host side (transport, checks, scripted faults) reads backend memory only after the
 * queue's work on it is done: a no-op on the host backend, a stream sync on a device
 * (runtime/cuda/engine_nccl.c: with NCCL's errors polled too). */
#define HLX_BE_SYNC(_eng) hlx_engine_sync(_eng)

/* The step's B rows from this rank's vocabulary slice, summed over the ranks. */
hlx_status_t hlx_phase_embed(hlx_engine_t *eng)
{
    hlx_status_t st;

    HLX_TIMED(eng, HLX_PHASE_EMBED, st = hlx_engine_embed(eng, eng->tokens, eng->cfg.batch,
                                                          eng->x));
    return st;
}

int64_t hlx_phase_row_seq(const hlx_engine_t *eng, int b, int64_t pos)
{
    return hlx_model_rope_seq(eng->cfg.context + hlx_run_prompt_len(&eng->cfg, b), pos);
}

hlx_status_t hlx_phase_rope_tab(hlx_engine_t *eng, int l, int b, int64_t pos,
                                const hlx_rope_tab_t **tab_p)
{
    const int rot = eng->m.rope_dim, half = rot / 2;
    hlx_rope_tab_t *t;
    double *fh, ms;
    int64_t seq;
    hlx_status_t st;

    *tab_p = &eng->rope;
    if (eng->rope_local.inv_freq != NULL && hlx_model_layer_window(&eng->m, l) > 0) {
        *tab_p = &eng->rope_local; /* a windowed layer's own base (rope_local_theta) */
        return HLX_OK;
    }
    if (eng->rope_rows == NULL)
        return HLX_OK;
    t = &eng->rope_rows[b];
    fh = eng->rope_rows_freq_h + (size_t)b * (size_t)half;
    seq = hlx_phase_row_seq(eng, b, pos);
    if (eng->rope_rows_seq[b] != seq) {
        hlx_model_rope_freqs_at(&eng->m, rot, seq, fh, &ms);
        t->mscale = (float)ms;
        st = eng->be.ops->copy_to(&eng->be, eng->q, (void *)t->inv_freq, fh,
                                  sizeof(double) * (size_t)half);
        if (st != HLX_OK)
            return st;
        eng->rope_rows_seq[b] = seq;
        t->cs_pos = -1;
    }
    if (t->cs_pos != pos) { /* the host kernels' cos and sin, once per position */
        hlx_rope_fill_cs(fh, t->mscale, rot, pos, (float *)t->cs);
        t->cs_pos = pos;
    }
    *tab_p = t;
    return HLX_OK;
}

int64_t hlx_phase_rot_pos(const hlx_engine_t *eng, int64_t pos, int part)
{
    hlx_dca_split_t sp;

    if (part < 0 || eng->m.dca_chunk <= 0)
        return hlx_model_dca_key_pos(&eng->m, pos);
    hlx_model_dca_split(&eng->m, pos, &sp);
    return sp.rot[part];
}

hlx_status_t hlx_phase_rope_part(hlx_engine_t *eng, int l, float *x, size_t ld, int heads,
                                 int head_dim, int rot, int part)
{
    /* one call for the batch, or one per request when they sit at different positions
     * (requests at one position share the prompt end too: their prompts are of one length) */
    int B = eng->cfg.batch, calls = eng->roff != NULL ? B : 1, b;
    const hlx_rope_tab_t *tab;
    hlx_status_t st = HLX_OK;

    if (!hlx_model_layer_rope(&eng->m, l)) /* a NoPE layer: q and k as projected */
        return HLX_OK;
    for (b = 0; b < calls && st == HLX_OK; b++) {
        int64_t pos = hlx_phase_rot_pos(eng, hlx_engine_row_pos(eng, b), part);
        st = hlx_phase_rope_tab(eng, l, b, pos, &tab);
        if (st == HLX_OK)
            st = HLX_BE(eng, rope, x + (size_t)b * ld, B / calls, ld, heads, head_dim, rot,
                        pos, tab);
    }
    return st;
}

hlx_status_t hlx_phase_rope(hlx_engine_t *eng, int l, float *x, size_t ld, int heads,
                            int head_dim, int rot)
{
    return hlx_phase_rope_part(eng, l, x, ld, heads, head_dim, rot, -1);
}

hlx_status_t hlx_phase_dca_queries(hlx_engine_t *eng, const float *q, size_t ld, int rows,
                                   float *qs, float *qi, size_t ldq)
{
    const int qn = eng->lay.q_local * eng->m.head_dim;
    hlx_status_t st;

    st = eng->be.ops->copy_rows(&eng->be, eng->q, qs, ldq, q, ld, rows, qn);
    if (st == HLX_OK)
        st = eng->be.ops->copy_rows(&eng->be, eng->q, qi, ldq, q, ld, rows, qn);
    return st;
}

/* OLMo 2's q and k norms over the whole projections (qk_norm_proj), on rows rows of qkv.
 * TPA 1: one RMSNorm over a row's q (every query head) and one over its k. TPA > 1: the
 * shard's part of each row's sum of squares into ss [2][rows], added over the TPA shards
 * at this rank's KVP index (tpa_comm: every KVP index holds the same rows, the projection
 * being replicated, and sums them in the same order; a KV head copied to TPA / K shards
 * counts once, from the first), then each part normalised by the whole vector's RMS. */
static hlx_status_t hlx_phase_qk_norm_proj(hlx_engine_t *eng, const hlx_layer_w_t *W,
                                           float *qkv, int rows, float *ss)
{
    const hlx_layout_t *L = &eng->lay;
    const hlx_model_t *m = &eng->m;
    const int dk = m->head_dim, nq = L->q_local * dk, nk = L->kv_local * dk;
    const float eps = (float)m->norm_eps;
    const size_t ld = (size_t)eng->qkv_cols;
    float *k = qkv + (size_t)nq;
    hlx_status_t st;

    if (L->tpa == 1) {
        st = HLX_BE(eng, rmsnorm_heads, qkv, rows, ld, 1, nq, W->qknorm, eps);
        return st == HLX_OK ? HLX_BE(eng, rmsnorm_heads, k, rows, ld, 1, nk, W->qknorm + nq, eps)
                            : st;
    }
    st = HLX_BE(eng, sumsq_rows, qkv, ld, rows, nq, ss);
    if (st == HLX_OK)
        st = HLX_BE(eng, sumsq_rows, k, ld, rows, nk, ss + rows);
    if (st == HLX_OK && L->tpa > m->kv_heads && L->tpa_rank % (L->tpa / m->kv_heads) != 0)
        st = HLX_BE(eng, scale, ss + rows, (size_t)rows, 0.0f);
    if (st == HLX_OK)
        st = HLX_BE_SYNC(eng);
    if (st == HLX_OK)
        st = hlx_comm_allreduce_sum_f32(eng->tpa_comm, ss, 2 * (size_t)rows);
    if (st == HLX_OK)
        st = HLX_BE(eng, rmsnorm_ss, qkv, ld, rows, nq, W->qknorm, ss, m->q_heads * dk, eps);
    if (st == HLX_OK)
        st = HLX_BE(eng, rmsnorm_ss, k, ld, rows, nk, W->qknorm + nq, ss + rows,
                    m->kv_heads * dk, eps);
    return st;
}

hlx_status_t hlx_phase_qkv_extras(hlx_engine_t *eng, const hlx_layer_w_t *W, float *qkv,
                                  int rows, float *ss)
{
    const hlx_layout_t *L = &eng->lay;
    const int dk = eng->m.head_dim;
    const float eps = (float)eng->m.norm_eps;
    const size_t ld = (size_t)eng->qkv_cols;
    hlx_status_t st = HLX_OK;

    if (W->bqkv != NULL)
        st = HLX_BE(eng, add_rows, qkv, ld, W->bqkv, rows, (int)ld);
    if (st == HLX_OK && W->qknorm != NULL && eng->m.qk_norm_proj)
        return hlx_phase_qk_norm_proj(eng, W, qkv, rows, ss);
    /* a row's q heads are L->q_local vectors of dk, its k heads the L->kv_local after them:
     * each set over all rows in one call */
    if (st == HLX_OK && W->qknorm != NULL)
        st = HLX_BE(eng, rmsnorm_heads, qkv, rows, ld, L->q_local, dk, W->qknorm, eps);
    if (st == HLX_OK && W->qknorm != NULL)
        st = HLX_BE(eng, rmsnorm_heads, qkv + (size_t)L->q_local * dk, rows, ld, L->kv_local,
                    dk, W->qknorm + dk, eps);
    return st;
}

hlx_status_t hlx_phase_attn_temp(hlx_engine_t *eng, int l, float *q, int64_t pos)
{
    const double t = hlx_model_attn_temp(&eng->m, l, pos);

    /* the keys stay as projected: the softmax sees q.k times t */
    return t == 1.0 ? HLX_OK
                    : HLX_BE(eng, scale, q, (size_t)eng->lay.q_local * (size_t)eng->m.head_dim,
                             (float)t);
}

hlx_status_t hlx_phase_norm(hlx_engine_t *eng, const float *w, const float *b, float *y,
                            const float *x, int rows)
{
    if (eng->m.norm_layer)
        return HLX_BE(eng, layernorm, y, x, w, b, rows, eng->m.hidden, (float)eng->m.norm_eps);
    return HLX_BE(eng, rmsnorm, y, x, w, rows, eng->m.hidden, (float)eng->m.norm_eps);
}

hlx_status_t hlx_phase_norm_in(hlx_engine_t *eng, const float *w, const float *b, float *hn,
                               const float *x, int rows, const float **in_p)
{
    *in_p = x;
    if (w == NULL)
        return HLX_OK;
    *in_p = hn;
    return hlx_phase_norm(eng, w, b, hn, x, rows);
}

hlx_status_t hlx_phase_ffn_dense(hlx_engine_t *eng, const hlx_layer_w_t *W, const float *in,
                                 float *gu, float *act, float *y, int rows)
{
    const hlx_model_t *m = &eng->m;
    const int Fc = eng->lay.ffn_count;
    hlx_status_t st;

    if (m->ffn_plain) { /* StarCoder2: act(x W_up + b_up), no gate */
        st = HLX_BE(eng, gemm, rows, Fc, m->hidden, in, W->wgu, eng->wp_dtype, act, 0);
        if (st == HLX_OK)
            st = HLX_BE(eng, bias_act, act, (size_t)Fc, W->bup, rows, Fc, m->ffn_act);
    } else {
        st = HLX_BE(eng, gemm, rows, 2 * Fc, m->hidden, in, W->wgu, eng->wp_dtype, gu, 0);
        if (st == HLX_OK)
            st = HLX_BE(eng, glu, act, gu, rows, Fc, m->ffn_act, (float)m->act_alpha,
                        (float)m->act_limit);
    }
    if (st == HLX_OK)
        st = HLX_BE(eng, gemm, rows, m->hidden, Fc, act, W->wdown, eng->wp_dtype, y, 0);
    return st;
}

hlx_status_t hlx_phase_qkv(hlx_engine_t *eng, int l)
{
    const hlx_layout_t *L = &eng->lay;
    const hlx_model_t *m = &eng->m;
    hlx_layer_w_t *W = &eng->layers[l];
    int B = eng->cfg.batch, dk = m->head_dim, dv = m->v_head_dim, b, part;
    hlx_status_t st;

    if (eng->mla != NULL) { /* latent row and absorbed queries (mla.c) */
        HLX_TIMED(eng, HLX_PHASE_QKV, st = hlx_mla_qkv(eng, l));
        return st;
    }
    HLX_TIMED(eng, HLX_PHASE_QKV, {
        const float *in;
        st = hlx_phase_norm_in(eng, W->attn_norm, W->attn_norm_b, eng->hn, eng->x, B, &in);
        if (st == HLX_OK)
            st = HLX_BE(eng, gemm, B, eng->qkv_cols, m->hidden, in, W->wqkv, eng->wp_dtype,
                        eng->qkv, 0);
        if (st == HLX_OK)
            st = hlx_phase_qkv_extras(eng, W, eng->qkv, B, eng->qk_ss);
        /* dual chunk attention: the queries of the succ and inter parts, copied before the
         * intra ones turn in place, each turned at its own position */
        if (st == HLX_OK && eng->dca_q != NULL)
            st = hlx_phase_dca_queries(eng, eng->qkv, (size_t)eng->qkv_cols, B, eng->dca_q,
                                       eng->dca_q + hlx_phase_dca_qn(eng, B),
                                       (size_t)L->q_local * dk);
        for (part = HLX_DCA_INTER; eng->dca_q != NULL && part <= HLX_DCA_SUCC && st == HLX_OK;
             part++)
            st = hlx_phase_rope_part(eng, l,
                                     eng->dca_q + (part == HLX_DCA_INTER
                                                       ? hlx_phase_dca_qn(eng, B) : 0),
                                     (size_t)L->q_local * dk, L->q_local, dk, m->rope_dim, part);
        if (st == HLX_OK)
            st = hlx_phase_rope(eng, l, eng->qkv, (size_t)eng->qkv_cols, L->q_local, dk,
                                m->rope_dim);
        if (st == HLX_OK)
            st = hlx_phase_rope(eng, l, eng->qkv + (size_t)L->q_local * dk,
                                (size_t)eng->qkv_cols, L->kv_local, dk, m->rope_dim);
        for (b = 0; b < B && st == HLX_OK; b++) /* each row at its own position */
            st = hlx_phase_attn_temp(eng, l, eng->qkv + (size_t)b * eng->qkv_cols,
                                     hlx_engine_row_pos(eng, b));
        /* Staggered append: only the owner of a request's position stores its new token. */
        for (b = 0; b < B && st == HLX_OK && !(eng->fault_now & HLX_FAULT_SKIP_APPEND); b++) {
            const float *kn = eng->qkv + (size_t)b * eng->qkv_cols + (size_t)L->q_local * dk;
            hlx_kv_append_desc_t d = {
                .kc = W->kc, .vc = W->vc, .kv_dtype = eng->kv_dtype,
                .layout = eng->be.k.kv_layout, .dk = dk, .dv = dv,
                .cap = hlx_kv_layer_cap(eng, l), .shard0 = (size_t)b * L->kv_local,
                .t = hlx_kv_ring_slot(eng, l, (size_t)hlx_engine_row_kv_len(eng, b)),
                .nheads = L->kv_local,
                .k_new = kn, .v_new = kn + (size_t)L->kv_local * dk,
            };
            const int64_t pos = hlx_engine_row_pos(eng, b);
            if (hlx_layout_kv_owner(L, pos) == L->kvp_rank)
                st = hlx_phase_kv_append(eng, l, &d,
                                         hlx_model_dca_factor(m, hlx_phase_row_seq(eng, b, pos)));
        }
    });
    return st;
}

hlx_status_t hlx_phase_kv_append(hlx_engine_t *eng, int l, const hlx_kv_append_desc_t *d0,
                                 double kf)
{
    const hlx_layer_w_t *W = &eng->layers[l];
    const int kh0 = (int)(d0->shard0 % (size_t)eng->lay.kv_local);
    hlx_kv_append_desc_t d = *d0;
    hlx_status_t st = HLX_OK;
    int h;

    d.nan_seen = W->kv_nan; /* the backend records the NaN bytes it stores */
    if (!W->kv_scales_differ || d0->nheads < 2) {
        d.k_mul = (float)(kf / W->k_scale[kh0]);
        d.v_mul = 1.0f / W->v_scale[kh0];
        return HLX_BE(eng, kv_append, &d);
    }
    d.nheads = 1;
    for (h = 0; h < d0->nheads && st == HLX_OK; h++) {
        d.shard0 = d0->shard0 + (size_t)h;
        d.k_new = d0->k_new + (size_t)h * (size_t)d0->dk;
        d.v_new = d0->v_new != NULL ? d0->v_new + (size_t)h * (size_t)d0->dv : NULL;
        d.k_mul = (float)(kf / W->k_scale[kh0 + h]);
        d.v_mul = 1.0f / W->v_scale[kh0 + h];
        st = HLX_BE(eng, kv_append, &d);
    }
    return st;
}

hlx_status_t hlx_phase_attn_vscale(hlx_engine_t *eng, int l, int kh, float *o, size_t n)
{
    const float s = eng->layers[l].v_scale[kh];

    return s == 1.0f ? HLX_OK : HLX_BE(eng, scale, o, n, s);
}

size_t hlx_phase_kv_align(const hlx_engine_t *eng)
{
    size_t a = eng->be.k.kv_layout.k_block > 1 ? (size_t)eng->be.k.kv_layout.k_block : 1;
    size_t b = eng->be.k.kv_layout.v_block > 1 ? (size_t)eng->be.k.kv_layout.v_block : 1, x, y, t;

    for (x = a, y = b; y; t = x % y, x = y, y = t)
        ;
    return a / x * b; /* lcm */
}

/* Rows [s, s + h) of a shard at src (is_key: the key rows) to rows [0, h) of one at dst,
 * run by run through the kernels' layout (elements of esize bytes). */
static void hlx_phase_kv_rows(const hlx_engine_t *eng, int is_key, void *dst, const void *src,
                              size_t s, size_t h)
{
    const hlx_kv_layout_t kl = eng->be.k.kv_layout;
    int blk = is_key ? kl.k_block : kl.v_block, chunk = is_key ? kl.k_chunk : kl.v_chunk;
    int d = is_key ? eng->kv_dk : eng->kv_dv, c = hlx_kv_run(blk, chunk, d), e;
    size_t t, z = eng->kv_esize, gap = hlx_kv_run_gap(blk, chunk, d);

    for (t = 0; t < h; t++) { /* run by run (hlx_kv_run_gap), not an index per element */
        char *o = (char *)dst + hlx_kv_index(blk, chunk, d, t, 0) * z;
        const char *i = (const char *)src + hlx_kv_index(blk, chunk, d, s + t, 0) * z;
        for (e = 0; e < d; e += c, o += gap * z, i += gap * z)
            memcpy(o, i, (size_t)c * z);
    }
}

size_t hlx_phase_window_from(const hlx_engine_t *eng, int l, int64_t pos)
{
    int64_t first = hlx_model_layer_first(&eng->m, l, pos);

    return first > 0 ? (size_t)hlx_layout_kv_count(&eng->lay, eng->lay.kvp_rank, first) : 0;
}

hlx_status_t hlx_phase_attn_from(hlx_engine_t *eng, const hlx_attn_desc_t *d0, size_t s)
{
    return hlx_phase_attn_from_s(eng, d0, s, eng->win_o, eng->win_lse);
}

hlx_status_t hlx_phase_attn_from_s(hlx_engine_t *eng, const hlx_attn_desc_t *d0, size_t s,
                                   float *o2, float *lse2)
{
    size_t a = hlx_phase_kv_align(eng), up = (s + a - 1) / a * a, G = (size_t)d0->group;
    hlx_attn_desc_t d = *d0, w;
    hlx_status_t st;

    if (s > d.len)
        s = d.len;
    if (up > d.len)
        up = d.len;
    if (s == up) { /* from a block boundary (0 included; rows: always, as on the device):
                    * one call on the shard from there */
        d.k = (const char *)d.k + s * d.k_stride * eng->kv_esize;
        d.v = (const char *)d.v + s * d.v_stride * eng->kv_esize;
        d.len -= s;
        return HLX_BE(eng, attn, &d);
    }
    /* the rows before the boundary, as a shard of their own */
    hlx_phase_kv_rows(eng, 1, eng->win_k, d.k, s, up - s);
    hlx_phase_kv_rows(eng, 0, eng->win_v, d.v, s, up - s);
    w = d;
    w.k = eng->win_k;
    w.v = eng->win_v;
    w.len = up - s;
    w.o = o2;
    w.lse = lse2;
    st = HLX_BE(eng, attn, &w);
    /* the rest from the boundary, where the shard's layout restarts */
    d.k = (const char *)d.k + up * d.k_stride * eng->kv_esize;
    d.v = (const char *)d.v + up * d.v_stride * eng->kv_esize;
    d.len -= up;
    d.o = o2 + G * (size_t)d.dv;
    d.lse = lse2 + G;
    if (st == HLX_OK)
        st = HLX_BE(eng, attn, &d);
    if (st == HLX_OK)
        st = HLX_BE(eng, merge, 2, (int)G, d.dv, o2, lse2, d0->o, d0->lse);
    return st;
}

hlx_status_t hlx_phase_attn_window(hlx_engine_t *eng, int l, const hlx_attn_desc_t *d0, size_t s)
{
    size_t R = hlx_kv_ring(eng, l), G = (size_t)d0->group, n, r;
    hlx_attn_desc_t d = *d0, w;
    hlx_status_t st;

    if (R == 0) /* no ring: the slots are the positions */
        return hlx_phase_attn_from(eng, d0, s);
    if (s > d.len)
        s = d.len;
    n = d.len - s; /* at most R - hlx_phase_kv_align: the ring was sized for it */
    r = s % R;
    if (r + n <= R) { /* one range of the ring */
        d.len = r + n;
        return hlx_phase_attn_from(eng, &d, r);
    }
    /* it wraps: [r, R), then [0, r + n - R) from a block boundary; each partial into the
     * scratch after hlx_phase_attn_from's two, then merged */
    d.len = R;
    d.o = eng->win_o + 2 * G * (size_t)d.dv;
    d.lse = eng->win_lse + 2 * G;
    st = hlx_phase_attn_from(eng, &d, r);
    w = *d0;
    w.len = r + n - R;
    w.o = eng->win_o + 3 * G * (size_t)d.dv;
    w.lse = eng->win_lse + 3 * G;
    if (st == HLX_OK)
        st = HLX_BE(eng, attn, &w);
    if (st == HLX_OK)
        st = HLX_BE(eng, merge, 2, (int)G, d.dv, d.o, d.lse, d0->o, d0->lse);
    return st;
}

hlx_status_t hlx_phase_attn_dca(hlx_engine_t *eng, const hlx_attn_desc_t *d0,
                                const float *qs, const float *qi, int64_t pos, double qf)
{
    const hlx_layout_t *L = &eng->lay;
    const size_t G = (size_t)d0->group, dv = (size_t)d0->dv;
    const float *q[3] = { qi, qs, d0->q };
    size_t from[3], to[3], s = 0;
    hlx_attn_desc_t d = *d0;
    hlx_dca_split_t sp;
    int part, n = 0, one = -1;
    hlx_status_t st = HLX_OK;

    /* each part's slots on this rank: a shard holds its positions in order */
    hlx_model_dca_split(&eng->m, pos, &sp);
    for (part = 0; part < 3; part++) {
        size_t e = part == HLX_DCA_INTRA
                       ? d0->len
                       : (size_t)hlx_layout_kv_count(L, L->kvp_rank, sp.end[part]);
        from[part] = s;
        to[part] = s = e < d0->len ? (e > s ? e : s) : d0->len;
        if (to[part] > from[part]) {
            n++;
            one = part;
        }
    }
    d.scale = qf == 1.0 ? d0->scale : (float)((double)d0->scale * qf);
    if (n <= 1) { /* one part (or none: every LSE -inf) straight into d0's partials */
        d.q = q[one < 0 ? HLX_DCA_INTRA : one];
        d.len = one < 0 ? 0 : to[one];
        return hlx_phase_attn_from(eng, &d, one < 0 ? 0 : from[one]);
    }
    for (part = 0, n = 0; part < 3 && st == HLX_OK; part++) {
        if (to[part] == from[part])
            continue;
        d.q = q[part];
        d.len = to[part];
        d.o = eng->dca_o + (size_t)n * G * dv;
        d.lse = eng->dca_lse + (size_t)n * G;
        st = hlx_phase_attn_from(eng, &d, from[part]);
        n++;
    }
    if (st == HLX_OK)
        st = HLX_BE(eng, merge, n, (int)G, d.dv, eng->dca_o, eng->dca_lse, d0->o, d0->lse);
    return st;
}

hlx_status_t hlx_phase_attn(hlx_engine_t *eng, int l, int b0, int b1,
                            hlx_status_t (*progress)(hlx_engine_t *eng, int l), int l_arg)
{
    const hlx_layout_t *L = &eng->lay;
    const hlx_model_t *m = &eng->m;
    hlx_layer_w_t *W = &eng->layers[l];
    int dk = m->head_dim, dv = m->v_head_dim, b, kh;
    hlx_status_t st = HLX_OK;
    uint64_t t0 = hlx_now_ns(), tp = 0;

    hlx_engine_clock(eng, HLX_PHASE_ATTN);
    for (b = b0; b < b1 && st == HLX_OK; b++) {
        /* the request's slots, with the token just appended where this rank owns it */
        const int64_t len = hlx_engine_row_kv_len(eng, b) +
                            (hlx_layout_kv_owner(L, hlx_engine_row_pos(eng, b)) == L->kvp_rank);
        /* a windowed layer: this rank's slots before the window's first position skipped */
        const size_t from = hlx_phase_window_from(eng, l, hlx_engine_row_pos(eng, b));
        for (kh = 0; kh < L->kv_local && st == HLX_OK; kh++) {
            size_t shard = (size_t)b * L->kv_local + kh;
            hlx_attn_desc_t d;
            if (eng->mla != NULL) /* every query head against the one latent head */
                hlx_mla_attn_desc(eng, l, b, (size_t)len, &d);
            else
                d = (hlx_attn_desc_t){
                .group = L->group, .dk = dk, .dv = dv, .len = (size_t)len,
                .kv_dtype = eng->kv_dtype,
                .q = eng->qkv + (size_t)b * eng->qkv_cols + (size_t)kh * L->group * dk,
                .k = (const char *)W->kc + hlx_kv_shard_index(eng, l, 1, shard, 0, 0) * eng->kv_esize,
                .v = (const char *)W->vc + hlx_kv_shard_index(eng, l, 0, shard, 0, 0) * eng->kv_esize,
                .k_stride = (size_t)dk, .v_stride = (size_t)dv,
                .scale = eng->attn_scale * W->k_scale[kh], .softcap = (float)m->attn_softcap,
                .o = eng->opart + ((size_t)b * L->q_local + (size_t)kh * L->group) * dv,
                .lse = eng->lsepart + (size_t)b * L->q_local + (size_t)kh * L->group,
                .kv_clean = hlx_kv_clean(eng, l, shard),
            };
            if (eng->dca_q != NULL) { /* the succ and inter queries of this head group */
                const size_t qo = (size_t)b * L->q_local * dk + (size_t)kh * L->group * dk;
                const int64_t pos = hlx_engine_row_pos(eng, b);
                st = hlx_phase_attn_dca(eng, &d, eng->dca_q + qo,
                                        eng->dca_q + hlx_phase_dca_qn(eng, eng->cfg.batch) + qo,
                                        pos,
                                        hlx_model_dca_factor(m, hlx_phase_row_seq(eng, b, pos)));
            } else {
                st = hlx_phase_attn_window(eng, l, &d, from);
            }
            if (st == HLX_OK)
                st = hlx_phase_attn_vscale(eng, l, kh, d.o, (size_t)d.group * (size_t)d.dv);
            if (st == HLX_OK && progress != NULL) {
                uint64_t p0 = hlx_now_ns();
                st = progress(eng, l_arg);
                tp += hlx_now_ns() - p0;
            }
        }
    }
    /* Scripted faults act on the partials before they are packed. */
    if (st == HLX_OK && (eng->fault_now & (HLX_FAULT_DROP_PARTIALS | HLX_FAULT_NAN)))
        st = HLX_BE_SYNC(eng);
    if (eng->fault_now & HLX_FAULT_DROP_PARTIALS)
        for (b = b0; b < b1; b++)
            for (kh = 0; kh < L->q_local; kh++)
                eng->lsepart[(size_t)b * L->q_local + kh] = -INFINITY;
    if ((eng->fault_now & HLX_FAULT_NAN) && b0 == 0)
        eng->opart[0] = NAN;
    /* Time spent progressing exchanges is the exchange's, not attention's (on the host's
     * clock; the device's sees the attention's kernels only). */
    hlx_engine_clock(eng, -1);
    if (!eng->dev_clock) {
        eng->phase_ns[HLX_PHASE_ATTN] += hlx_now_ns() - t0 - tp;
        eng->phase_ns[HLX_PHASE_A2A] += tp;
    }
    return st;
}

void hlx_phase_xchg_desc(const hlx_engine_t *eng, int b0, int b1, const size_t *displ,
                         hlx_xchg_desc_t *d)
{
    d->kvp        = eng->lay.kvp;
    d->dv         = eng->xpw;
    d->q_local    = eng->lay.q_local * eng->lay.q_split;
    d->sub        = eng->lay.q_split;
    d->head_first = eng->xh_first;
    d->head_count = eng->xh_count;
    d->displ      = displ;
    d->b0         = b0;
    d->b1         = b1;
}

hlx_status_t hlx_phase_pack(hlx_engine_t *eng, int b0, int b1)
{
    hlx_xchg_desc_t d;
    hlx_status_t st;

    hlx_phase_xchg_desc(eng, b0, b1, eng->xs_displ, &d);
    HLX_TIMED(eng, HLX_PHASE_ATTN,
              st = HLX_BE(eng, pack, &d, eng->opart, eng->lsepart, eng->sendbuf));
    return st;
}

/* Byte counts and displacements of requests [b0, b1) for every peer: one contiguous slice
 * of each peer's block (wire layout in hlx_backend.h). */
static void hlx_phase_a2a_counts(hlx_engine_t *eng, int b0, int b1)
{
    const hlx_layout_t *L = &eng->lay;
    size_t dv1 = (size_t)eng->xpw + 1, mine = (size_t)eng->xh_count[L->kvp_rank];
    int j;

    for (j = 0; j < L->kvp; j++) {
        size_t per_s = (size_t)eng->xh_count[j] * dv1, per_r = mine * dv1;
        eng->a2a_sc[j] = sizeof(float) * per_s * (size_t)(b1 - b0);
        eng->a2a_sd[j] = sizeof(float) * (eng->xs_displ[j] + per_s * (size_t)b0);
        eng->a2a_rc[j] = sizeof(float) * per_r * (size_t)(b1 - b0);
        eng->a2a_rd[j] = sizeof(float) * (eng->xr_displ[j] + per_r * (size_t)b0);
    }
}

/* ucx-staged (a device backend, a UCX without CUDA memory): the slices of requests
 * [b0, b1) go from sendbuf to the pinned copy the transport sends from (the copy waits for
 * the pack); the pinned receive copy goes back in hlx_phase_merge. Without staging, the
 * transport reads sendbuf after a queue sync (host memory, or CUDA memory UCX handles). */
static hlx_status_t hlx_phase_stage_send(hlx_engine_t *eng)
{
    hlx_status_t st = HLX_OK;
    int j;

    for (j = 0; j < eng->lay.kvp && st == HLX_OK; j++)
        st = eng->be.ops->copy_from(&eng->be, eng->q, (char *)eng->stage_send + eng->a2a_sd[j],
                                    (const char *)eng->sendbuf + eng->a2a_sd[j],
                                    eng->a2a_sc[j]);
    return st;
}

/* Before the host transport's exchange (counts set): the queue synced (the transport reads
 * host-visible memory), the staged copy when there is one, and the buffers the transport
 * sends from and receives into. */
static hlx_status_t hlx_phase_a2a_host(hlx_engine_t *eng, const void **send_p, void **recv_p)
{
    hlx_status_t st = HLX_BE_SYNC(eng);

    if (st == HLX_OK && eng->stage_send != NULL)
        st = hlx_phase_stage_send(eng);
    *send_p = eng->stage_send ? eng->stage_send : eng->sendbuf;
    *recv_p = eng->stage_recv ? eng->stage_recv : eng->recvbuf;
    return st;
}

hlx_status_t hlx_phase_a2a_post(hlx_engine_t *eng, int b0, int b1, hlx_comm_req_t **req_p)
{
    const void *sb;
    void *rb;
    hlx_status_t st;

    HLX_TIMED(eng, HLX_PHASE_A2A, {
        hlx_phase_a2a_counts(eng, b0, b1);
        /* NCCL's exchange is ordered on the queue: the schedule runs lockstep with it */
        st = eng->nccl_kvp != NULL ? HLX_ERR_UNSUPPORTED : hlx_phase_a2a_host(eng, &sb, &rb);
        if (st == HLX_OK)
            st = hlx_comm_ialltoallv(eng->kvp_comm, sb, eng->a2a_sc, eng->a2a_sd, rb,
                                     eng->a2a_rc, eng->a2a_rd, req_p);
    });
    return st;
}

hlx_status_t hlx_phase_a2a(hlx_engine_t *eng, int b0, int b1)
{
    const void *sb;
    void *rb;
    hlx_status_t st;

    HLX_TIMED(eng, HLX_PHASE_A2A, {
        hlx_phase_a2a_counts(eng, b0, b1);
        if (eng->nccl_kvp != NULL) {
            st = hlx_engine_nccl_a2a(eng);
        } else {
            st = hlx_phase_a2a_host(eng, &sb, &rb);
            if (st == HLX_OK)
                st = hlx_comm_alltoallv(eng->kvp_comm, sb, eng->a2a_sc, eng->a2a_sd, rb,
                                        eng->a2a_rc, eng->a2a_rd);
        }
    });
    return st;
}

/* Bytes of the receive blocks of every peer (all requests). */
static size_t hlx_phase_recv_bytes(const hlx_engine_t *eng)
{
    int k = eng->lay.kvp - 1;

    return sizeof(float) * (eng->xr_displ[k] + (size_t)eng->cfg.batch *
                            (size_t)eng->lay.q_slice * ((size_t)eng->xpw + 1));
}

hlx_status_t hlx_phase_sinks(hlx_engine_t *eng, int l, float *o, const float *lse, int rows)
{
    const float *s = eng->layers[l].sinks;

    if (s == NULL || rows == 0)
        return HLX_OK;
    return HLX_BE(eng, attn_sink, o, lse, s, rows, eng->lay.q_slice, eng->xpw);
}

hlx_status_t hlx_phase_merge(hlx_engine_t *eng, int l)
{
    const hlx_layout_t *L = &eng->lay;
    int B = eng->cfg.batch, dv = eng->xpw, cnt = L->q_slice, j;
    size_t nh = (size_t)B * cnt;
    hlx_xchg_desc_t d;
    hlx_status_t st;

    hlx_phase_xchg_desc(eng, 0, B, eng->xr_displ, &d);
    HLX_TIMED(eng, HLX_PHASE_MERGE, {
        /* ucx-staged: every exchange of the layer has landed in the pinned copy */
        st = eng->stage_recv == NULL ? HLX_OK
             : eng->be.ops->copy_to(&eng->be, eng->q, eng->recvbuf, eng->stage_recv,
                                    hlx_phase_recv_bytes(eng));
        if (st == HLX_OK)
            st = HLX_BE(eng, unpack, &d, cnt, B, eng->recvbuf, eng->oparts, eng->lseparts);
        if (st == HLX_OK)
            st = HLX_BE(eng, merge, L->kvp, (int)nh, dv, eng->oparts, eng->lseparts,
                        eng->omerged, eng->lsem);
        if (st == HLX_OK)
            st = hlx_phase_sinks(eng, l, eng->omerged, eng->lsem, (int)nh);
        if (st == HLX_OK)
            st = HLX_BE_SYNC(eng); /* the checks below read oparts */
    });
    /* A NaN or Inf from a KVP peer is named with the peer that sent it, instead of
     * spreading as garbage. (An empty shard's LSE is -inf; its outputs are 0.) */
    for (j = 0; j < L->kvp && st == HLX_OK; j++) {
        char what[96];
        snprintf(what, sizeof(what), "the attention partials received from rank %d",
                 L->tpa_rank * L->kvp + j);
        st = hlx_check_finite(eng, eng->oparts + (size_t)j * nh * dv, nh * dv, what, l);
    }
    return st;
}

hlx_status_t hlx_phase_oproj(hlx_engine_t *eng, int l)
{
    hlx_status_t st = HLX_OK;
    const float *in = eng->omerged;

    /* MLA: the merged heads go from latent to value space (W_UV) first. */
    if (eng->mla != NULL)
        HLX_TIMED(eng, HLX_PHASE_OPROJ, in = hlx_mla_up(eng, l, &st));
    if (st != HLX_OK)
        return st;
    HLX_TIMED(eng, HLX_PHASE_OPROJ,
              st = HLX_BE(eng, gemm, eng->cfg.batch, eng->m.hidden,
                          hlx_layout_wo_rows(&eng->lay, eng->m.v_head_dim), in,
                          eng->layers[l].wo, eng->wp_dtype, eng->y, 0));
    return st;
}

/* y to pinned host memory (the copy waits for the queue), summed there, copied back
 * ahead of the add on the queue. */
static hlx_status_t hlx_phase_allreduce_staged(hlx_engine_t *eng, size_t n)
{
    hlx_status_t st = eng->be.ops->copy_from(&eng->be, eng->q, eng->stage_world, eng->y,
                                             sizeof(float) * n);

    if (st == HLX_OK)
        st = hlx_comm_allreduce_sum_f32(eng->world, eng->stage_world, n);
    if (st == HLX_OK)
        st = eng->be.ops->copy_to(&eng->be, eng->q, eng->y, eng->stage_world, sizeof(float) * n);
    return st;
}

/* The logits of this rank to pinned memory, all-gathered behind them, copied back. */
static hlx_status_t hlx_phase_allgather_staged(hlx_engine_t *eng, size_t bytes)
{
    float *out = eng->stage_world + bytes / sizeof(float);
    hlx_status_t st = eng->be.ops->copy_from(&eng->be, eng->q, eng->stage_world,
                                             eng->logits_local, bytes);

    if (st == HLX_OK)
        st = hlx_comm_allgather(eng->world, eng->stage_world, bytes, out);
    if (st == HLX_OK)
        st = eng->be.ops->copy_to(&eng->be, eng->q, eng->logits_all, out,
                                  bytes * (size_t)eng->lay.n);
    return st;
}

hlx_status_t hlx_phase_out_extras(hlx_engine_t *eng, int l, float *y, int rows, int ffn)
{
    const float *w = eng->layers[l].post_norm, *bo = eng->layers[l].bo;
    const float *bd = eng->layers[l].bdown;
    const int H = eng->m.hidden;
    hlx_status_t st = HLX_OK;

    /* of the whole sum: every rank adds the bias (W_o's; the plain FFN's down, StarCoder2)
     * to, and normalises, the same rows */
    if (!ffn && bo != NULL)
        st = HLX_BE(eng, add_rows, y, (size_t)H, bo, rows, H);
    if (ffn && bd != NULL)
        st = HLX_BE(eng, add_rows, y, (size_t)H, bd, rows, H);
    if (w == NULL || st != HLX_OK)
        return st;
    return HLX_BE(eng, rmsnorm, y, y, w + (ffn ? H : 0), rows, H, (float)eng->m.norm_eps);
}

hlx_status_t hlx_phase_residual(hlx_engine_t *eng, float *x, float *y, size_t n)
{
    hlx_status_t st = HLX_OK;

    if (eng->m.residual_mult > 0.0)
        st = HLX_BE(eng, scale, y, n, (float)eng->m.residual_mult);
    return st == HLX_OK ? HLX_BE(eng, add, x, y, n) : st;
}

/* Sums n floats of a backend buffer over all N ranks in place, rows of any count (the
 * prefill's chunk): NCCL on the queue, else the host transport on the synced buffer (the
 * decode's ucx-staged path, below, has pinned buffers of the step's rows only). */
hlx_status_t hlx_phase_allreduce_buf(hlx_engine_t *eng, float *y, size_t n)
{
    hlx_status_t st;

    if (eng->nccl_world != NULL)
        return hlx_engine_nccl_allreduce(eng, y, n);
    st = HLX_BE_SYNC(eng);
    return st == HLX_OK ? hlx_comm_allreduce_sum_f32(eng->world, y, n) : st;
}

/* Sums the partial outputs y of all N ranks (TP = N) and adds them to the residual x. */
hlx_status_t hlx_phase_allreduce(hlx_engine_t *eng, int l, hlx_phase_id_t ph)
{
    size_t n = (size_t)eng->cfg.batch * (size_t)eng->m.hidden;
    hlx_status_t st;

    HLX_TIMED(eng, ph, {
        if (eng->nccl_world == NULL && eng->stage_world != NULL) /* ucx-staged: pinned */
            st = hlx_phase_allreduce_staged(eng, n);
        else
            st = hlx_phase_allreduce_buf(eng, eng->y, n);
    });
    if (st == HLX_OK)
        st = hlx_phase_out_extras(eng, l, eng->y, eng->cfg.batch, ph == HLX_PHASE_FFN_AR);
    if (st == HLX_OK)
        st = hlx_phase_residual(eng, eng->x, eng->y, n);
    if (st == HLX_OK)
        st = HLX_BE_SYNC(eng);
    if (st != HLX_OK)
        return st;
    return hlx_check_finite(eng, eng->x, n, "the hidden state", l);
}

hlx_status_t hlx_phase_ffn(hlx_engine_t *eng, int l)
{
    const hlx_model_t *m = &eng->m;
    hlx_layer_w_t *W = &eng->layers[l];
    int B = eng->cfg.batch;
    hlx_status_t st;

    if (hlx_model_layer_moe(m, l) && eng->moe != NULL)
        return hlx_moe_ffn(eng, l);
    HLX_TIMED(eng, HLX_PHASE_FFN, {
        const float *in;
        st = hlx_phase_norm_in(eng, W->ffn_norm, W->ffn_norm_b, eng->hn, eng->x, B, &in);
        if (st == HLX_OK)
            st = hlx_phase_ffn_dense(eng, W, in, eng->gu, eng->act, eng->y, B);
    });
    return st;
}

/* Final norm, this rank's LM-head columns, all-gather of the logits, greedy argmax.
 * logits_all is [N][B][vocab_pad]; padding is -inf. */
hlx_status_t hlx_phase_head(hlx_engine_t *eng)
{
    const hlx_layout_t *L = &eng->lay;
    const hlx_model_t *m = &eng->m;
    int B = eng->cfg.batch;
    hlx_status_t st;

    HLX_TIMED(eng, HLX_PHASE_HEAD, {
        st = hlx_phase_norm(eng, eng->final_norm, eng->final_norm_b, eng->hn, eng->x, B);
        if (st == HLX_OK)
            st = HLX_BE(eng, gemm, B, L->vocab_count, m->hidden, eng->hn, eng->lmhead,
                        eng->wp_dtype, eng->lmout, 0);
        if (st == HLX_OK && m->logits_scale > 0.0) /* Granite: the logits over a scale */
            st = HLX_BE(eng, scale, eng->lmout, (size_t)B * L->vocab_count,
                        (float)(1.0 / m->logits_scale));
        if (st == HLX_OK)
            st = HLX_BE(eng, pad_rows, eng->logits_local, L->vocab_pad, eng->lmout,
                        L->vocab_count, B, -INFINITY, (float)m->final_softcap);
        if (st == HLX_OK)
            st = HLX_BE_SYNC(eng);
        if (st == HLX_OK)
            st = hlx_check_finite(eng, eng->lmout, (size_t)B * L->vocab_count, "the logits",
                                  m->layers);
        if (st == HLX_OK && eng->nccl_world != NULL)
            st = hlx_engine_nccl_allgather(eng, eng->logits_local,
                                           sizeof(float) * (size_t)B * L->vocab_pad,
                                           eng->logits_all);
        else if (st == HLX_OK && eng->stage_world != NULL)
            st = hlx_phase_allgather_staged(eng, sizeof(float) * (size_t)B * L->vocab_pad);
        else if (st == HLX_OK)
            st = hlx_comm_allgather(eng->world, eng->logits_local,
                                    sizeof(float) * (size_t)B * L->vocab_pad, eng->logits_all);
        if (st == HLX_OK && eng->nccl_world != NULL)
            st = HLX_BE_SYNC(eng); /* the all-gather's errors before the argmax waits */
        if (st == HLX_OK)
            st = HLX_BE(eng, argmax, eng->logits_all, L->n, B, m->vocab, L->vocab_pad,
                        eng->tokens);
        if (st == HLX_OK && eng->cfg.temperature > 0)
            st = hlx_engine_sample(eng);
    });
    return st;
}
