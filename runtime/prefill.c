/* Chunked prefill (hlx_prefill.h). A chunk of C prompt tokens of n requests is n x C rows
 * (row r = k * C + i holds token i of the chunk's k-th request) through the same backend
 * operations as a decode step: norm, QKV GEMM, RoPE at each row's position, the KV append
 * by the owner of each position, attention partials, the all-to-all and exact merge, W_o,
 * the all-reduces and the FFN. Only attention differs: each row attends to its own prefix (causal), which
 * on KVP rank j is the first kv_count(j, pos + 1) slots of its shard, since a shard holds
 * its positions in order. The slots before the chunk (rounded down to the KV layout's
 * block) are shared by all C rows of a request: one attention call reads them once for
 * the C x group queries; each row then attends to the rest of its own prefix (at most C
 * + block slots) and the two partials are merged exactly (log-sum-exp). MLA models make
 * their latent rows and absorbed queries in mla.c (one latent head, partials in latent
 * space, W_UV after the merge); MoE layers route per row (moe.c). Prompts of different
 * lengths: every chunk holds the requests whose prompt reaches it, as many tokens of each
 * as the shortest of them has left, so that a chunk's rows share their positions; each
 * request then decodes at its own position (hlx_engine_t.roff). HELIX_PREFILL=steps runs
 * the prompt through the decode step token by token instead (prompts of one length). */
#define _GNU_SOURCE
#include "hlx_engine_int.h"
#include "hlx_mla.h"
#include "hlx_prefill.h"
#include "hlx_sample.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HLX_BE(_eng, _op, ...) (_eng)->be.ops->_op(&(_eng)->be, (_eng)->q, __VA_ARGS__)

/* Buffers of a chunk of up to R = B x C rows, allocated once per prefill: the floats in the
 * backend's memory (the kernels write them; on the CUDA backend managed memory, which the
 * host reads after a queue sync), the counts and offsets on the host. */
typedef struct hlx_prefill {
    int     C, R;    /* tokens per chunk, rows per chunk */
    int     nb;      /* requests in the present chunk */
    int    *rq;      /* [B]: the request of each of them */
    int    *tok;     /* [R]: the chunk's tokens, request by request */
    float  *x, *hn, *qkv, *opart, *lsepart, *sendbuf, *recvbuf, *oparts, *lseparts;
    float  *omerged, *lsem, *y, *gu, *act;
    float  *aq, *ao, *alse, *am, *amlse; /* shared-prefix attention of one (request, head) */
    float  *dq;      /* dual chunk attention: the succ and inter queries, [2][R][q_local][dk],
                      * and a group's four partials, [4][C x group][dv] and [4][C x group] */
    float  *dco, *dclse;
    float  *qk_ss;   /* OLMo 2 under TPA > 1: [2][R] sums of squares of q and k, else NULL */
    int     dca;     /* the present chunk attends by dual chunk attention's parts
                      * (hlx_prefill_dca, set by hlx_prefill_qkv) */
    size_t *xs_displ, *xr_displ, *sc, *sd, *rc, *rd;
    hlx_mla_rows_t mla; /* MLA models: latent rows, absorbed queries, W_UV output */
} hlx_prefill_t;

static void hlx_prefill_free(hlx_engine_t *eng, hlx_prefill_t *p)
{
    float **bufs[] = { &p->x, &p->hn, &p->qkv, &p->opart, &p->lsepart, &p->sendbuf,
                       &p->recvbuf, &p->oparts, &p->lseparts, &p->omerged, &p->lsem, &p->y,
                       &p->gu, &p->act, &p->aq, &p->ao, &p->alse, &p->am, &p->amlse,
                       &p->dq, &p->dco, &p->dclse, &p->qk_ss };
    size_t i;

    for (i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        hlx_be_free(eng, *bufs[i]);
    free(p->xs_displ); free(p->xr_displ); free(p->sc); free(p->sd); free(p->rc); free(p->rd);
    free(p->rq);
    free(p->tok);
    hlx_mla_rows_free(eng, &p->mla);
}

/* n floats from one of the backend's buffers to another, in queue order (copy_to with two
 * backend pointers: a memcpy on the host, a device copy on CUDA). */
static hlx_status_t hlx_prefill_copy(hlx_engine_t *eng, float *dst, const float *src, size_t n)
{
    return eng->be.ops->copy_to(&eng->be, eng->q, dst, src, sizeof(float) * n);
}

static hlx_status_t hlx_prefill_alloc(hlx_engine_t *eng, hlx_prefill_t *p)
{
    const hlx_layout_t *L = &eng->lay;
    size_t R, H = (size_t)eng->m.hidden, dv = (size_t)eng->xdv, sblk = 0, rblk = 0;
    size_t pw = (size_t)eng->xpw;
    int64_t rows;
    int j;

    memset(p, 0, sizeof(*p));
    p->C = eng->cfg.prefill_chunk > 0 ? eng->cfg.prefill_chunk : HLX_PREFILL_CHUNK;
    if (p->C > hlx_run_prompt_max(&eng->cfg))
        p->C = hlx_run_prompt_max(&eng->cfg);
    rows = (int64_t)p->C * eng->cfg.batch;
    /* Kernel dimensions are ints (rows x the widest operand row must fit a size_t too). */
    if (rows > INT32_MAX / 4 || (int64_t)eng->qkv_cols * rows > INT64_C(1) << 40) {
        hlx_engine_set_errmsg(eng, "prefill: a chunk of %d tokens x batch %d is too large "
                              "(lower --prefill-chunk)", p->C, eng->cfg.batch);
        return HLX_ERR_INVALID;
    }
    if (eng->mla != NULL &&
        hlx_mla_check_sizes(&eng->m, (int)rows, eng->errmsg, sizeof(eng->errmsg)) != HLX_OK)
        return HLX_ERR_INVALID;
    p->R = (int)rows;
    R = (size_t)p->R;
#define HLX_PALLOC(_p, _n) \
    if (((_p) = calloc((size_t)(_n) > 0 ? (size_t)(_n) : 1, sizeof(*(_p)))) == NULL) \
        return HLX_ERR_NOMEM
    HLX_PALLOC(p->xs_displ, (size_t)L->kvp);
    HLX_PALLOC(p->xr_displ, (size_t)L->kvp);
    HLX_PALLOC(p->sc, (size_t)L->kvp);
    HLX_PALLOC(p->sd, (size_t)L->kvp);
    HLX_PALLOC(p->rc, (size_t)L->kvp);
    HLX_PALLOC(p->rd, (size_t)L->kvp);
    HLX_PALLOC(p->rq, (size_t)eng->cfg.batch);
    HLX_PALLOC(p->tok, R);
    /* The decode step's wire layout with R rows in place of B requests (per piece xpw
     * elements and the LSE: v_head_dim, or the latent kv_lora with MLA, over q_split). */
    for (j = 0; j < L->kvp; j++) {
        p->xs_displ[j] = sblk;
        p->xr_displ[j] = rblk;
        p->sc[j] = sizeof(float) * R * (size_t)eng->xh_count[j] * (pw + 1);
        p->sd[j] = sizeof(float) * sblk;
        p->rc[j] = sizeof(float) * R * (size_t)L->q_slice * (pw + 1);
        p->rd[j] = sizeof(float) * rblk;
        sblk += R * (size_t)eng->xh_count[j] * (pw + 1);
        rblk += R * (size_t)L->q_slice * (pw + 1);
    }
#undef HLX_PALLOC
#define HLX_PBUF(_p, _n) \
    if (((_p) = hlx_be_zalloc(eng, (size_t)(_n), sizeof(*(_p)))) == NULL) \
        return HLX_ERR_NOMEM
    HLX_PBUF(p->x, R * H);
    HLX_PBUF(p->hn, R * H);
    HLX_PBUF(p->qkv, R * (size_t)eng->qkv_cols);
    HLX_PBUF(p->opart, R * (size_t)L->q_local * dv);
    HLX_PBUF(p->lsepart, R * (size_t)L->q_local);
    HLX_PBUF(p->sendbuf, sblk);
    HLX_PBUF(p->recvbuf, rblk);
    HLX_PBUF(p->oparts, R * (size_t)L->q_slice * pw * (size_t)L->kvp);
    HLX_PBUF(p->lseparts, R * (size_t)L->q_slice * (size_t)L->kvp);
    HLX_PBUF(p->omerged, R * (size_t)L->q_slice * pw);
    HLX_PBUF(p->lsem, R * (size_t)L->q_slice);
    HLX_PBUF(p->y, R * H);
    HLX_PBUF(p->gu, eng->m.ffn_plain ? 1 : R * 2 * (size_t)L->ffn_count); /* plain: unused */
    HLX_PBUF(p->act, R * (size_t)L->ffn_count);
    /* [C x group] queries, [2][C x group] partials (prefix, own rows), the merge */
    HLX_PBUF(p->aq, (size_t)p->C * (size_t)L->group * (size_t)eng->m.head_dim);
    HLX_PBUF(p->ao, 2 * (size_t)p->C * (size_t)L->group * dv);
    HLX_PBUF(p->alse, 2 * (size_t)p->C * (size_t)L->group);
    HLX_PBUF(p->am, (size_t)p->C * (size_t)L->group * dv);
    HLX_PBUF(p->amlse, (size_t)p->C * (size_t)L->group);
    if (eng->qk_ss != NULL)
        HLX_PBUF(p->qk_ss, 2 * R);
    if (eng->dca_q != NULL) {
        HLX_PBUF(p->dq, 2 * hlx_phase_dca_qn(eng, p->R));
        HLX_PBUF(p->dco, 4 * (size_t)p->C * (size_t)L->group * dv);
        HLX_PBUF(p->dclse, 4 * (size_t)p->C * (size_t)L->group);
    }
#undef HLX_PBUF
    return eng->mla != NULL ? hlx_mla_rows_alloc(eng, p->R, &p->mla) : HLX_OK;
}

/* Whether a chunk of c rows from pos0 attends by dual chunk attention's parts: not where
 * every row still attends as without it (inside the first chunk, and no request's factor
 * on keys and queries above 1), which then goes the plain way with the prefix shared, bit
 * for bit as a model without it (most prompts of Qwen2.5-1M: its first chunk is 253952
 * long and its factor starts past 262144). */
static int hlx_prefill_dca(const hlx_engine_t *eng, const hlx_prefill_t *p, int64_t pos0, int c)
{
    int k;

    if (p->dq == NULL || pos0 + c - 1 >= (int64_t)eng->m.dca_chunk - eng->m.dca_local)
        return p->dq != NULL;
    for (k = 0; k < p->nb; k++)
        if (hlx_model_dca_factor(&eng->m, hlx_phase_row_seq(eng, p->rq[k], pos0 + c - 1)) != 1.0)
            return 1;
    return 0;
}

/* Norm, QKV (with the family's biases and head norms), RoPE at each token's position, and
 * the append of the positions this KVP rank owns. Rows of token i of every request are c
 * rows apart: one RoPE call per token. */
static hlx_status_t hlx_prefill_qkv(hlx_engine_t *eng, hlx_prefill_t *p, int l, int64_t pos0,
                                    int c, int R)
{
    const hlx_layout_t *L = &eng->lay;
    const hlx_model_t *m = &eng->m;
    hlx_layer_w_t *W = &eng->layers[l];
    int n = p->nb, dk = m->head_dim, dv = m->v_head_dim, i, k;
    size_t ld = (size_t)c * (size_t)eng->qkv_cols, qn = (size_t)L->q_local * (size_t)dk;
    const float *in;
    hlx_status_t st;

    st = hlx_phase_norm_in(eng, W->attn_norm, W->attn_norm_b, p->hn, p->x, R, &in);
    if (st == HLX_OK)
        st = HLX_BE(eng, gemm, R, eng->qkv_cols, m->hidden, in, W->wqkv, eng->wp_dtype,
                    p->qkv, 0);
    if (st == HLX_OK)
        st = hlx_phase_qkv_extras(eng, W, p->qkv, R, p->qk_ss);
    /* dual chunk attention past its first chunk: the succ and inter queries of every row,
     * turned below */
    p->dca = hlx_prefill_dca(eng, p, pos0, c);
    if (st == HLX_OK && p->dca)
        st = hlx_phase_dca_queries(eng, p->qkv, (size_t)eng->qkv_cols, R, p->dq,
                                   p->dq + hlx_phase_dca_qn(eng, p->R), qn);
    for (i = 0; i < c && st == HLX_OK; i++) {
        float *row = p->qkv + (size_t)i * eng->qkv_cols;
        /* the rows' rotation (their position, or under dual chunk attention its place in
         * its chunk) */
        int64_t pos = pos0 + i, rp = hlx_phase_rot_pos(eng, pos, -1);
        /* the n requests' rows in one call, or one call each when each request turns with
         * its own table (dynamic NTK: the length of its own prompt) */
        int calls = eng->rope_rows != NULL ? n : 1;
        if (!hlx_model_layer_rope(m, l)) /* a NoPE layer: q and k as projected */
            calls = 0;
        for (k = 0; k < calls && st == HLX_OK; k++) {
            const hlx_rope_tab_t *tab;
            float *x = row + (size_t)k * ld;
            st = hlx_phase_rope_tab(eng, l, p->rq[k], rp, &tab);
            if (st == HLX_OK)
                st = HLX_BE(eng, rope, x, n / calls, ld, L->q_local, dk, m->rope_dim, rp, tab);
            if (st == HLX_OK)
                st = HLX_BE(eng, rope, x + (size_t)L->q_local * dk, n / calls, ld, L->kv_local,
                            dk, m->rope_dim, rp, tab);
        }
        for (k = 0; k < n && st == HLX_OK; k++) /* the n requests' row i, at pos */
            st = hlx_phase_attn_temp(eng, l, row + (size_t)k * ld, pos);
        for (k = HLX_DCA_INTER; p->dca && k <= HLX_DCA_SUCC && st == HLX_OK; k++) {
            /* no window, no per-request table under dual chunk attention: one call */
            float *x = p->dq + (k == HLX_DCA_INTER ? hlx_phase_dca_qn(eng, p->R) : 0) +
                       (size_t)i * qn;
            int64_t kp = hlx_phase_rot_pos(eng, pos, k);
            st = HLX_BE(eng, rope, x, n, (size_t)c * qn, L->q_local, dk, m->rope_dim, kp,
                        &eng->rope);
        }
        if (hlx_layout_kv_owner(L, pos) != L->kvp_rank)
            continue;
        for (k = 0; k < n && st == HLX_OK; k++) {
            const float *kn = p->qkv + ((size_t)k * c + i) * eng->qkv_cols + (size_t)L->q_local * dk;
            hlx_kv_append_desc_t d = {
                .kc = W->kc, .vc = W->vc, .kv_dtype = eng->kv_dtype,
                .layout = eng->be.k.kv_layout, .dk = dk, .dv = dv,
                .cap = hlx_kv_layer_cap(eng, l), .shard0 = (size_t)p->rq[k] * L->kv_local,
                .t = hlx_kv_ring_slot(eng, l, (size_t)hlx_layout_kv_count(L, L->kvp_rank, pos)),
                .nheads = L->kv_local,
                .k_new = kn, .v_new = kn + (size_t)L->kv_local * dk,
            };
            st = hlx_phase_kv_append(eng, l, &d,
                                     hlx_model_dca_factor(m, hlx_phase_row_seq(eng, p->rq[k], pos)));
        }
    }
    return st;
}

/* Rows from position pos on (at most left) in pos's chunk of dual chunk attention. */
static int64_t hlx_prefill_dca_rows(const hlx_engine_t *eng, int64_t pos, int left)
{
    const int64_t n = (int64_t)eng->m.dca_chunk - eng->m.dca_local, r = n - pos % n;

    return r < left ? r : left;
}

/* The group [i0, i1)'s queries of one part into p->aq, [rows][group][dk]: rows i of the
 * chunk's k-th request from src (row r = k c + i at src + r * ld), head group kh; each row
 * times its factor (hlx_model_dca_factor of its forward's length, as vLLM multiplies its
 * queries). */
static hlx_status_t hlx_prefill_dca_q(hlx_engine_t *eng, hlx_prefill_t *p, const float *src,
                                      size_t ld, int64_t pos0, int c, int k, int kh, int i0,
                                      int i1)
{
    const int G = eng->lay.group, dk = eng->m.head_dim;
    hlx_status_t st = HLX_OK;
    double f;
    int i;

    for (i = i0; i < i1 && st == HLX_OK; i++) {
        float *q = p->aq + (size_t)(i - i0) * G * dk;
        st = hlx_prefill_copy(eng, q, src + ((size_t)k * c + i) * ld + (size_t)kh * G * dk,
                              (size_t)G * dk);
        f = hlx_model_dca_factor(&eng->m, hlx_phase_row_seq(eng, p->rq[k], pos0 + i));
        if (st == HLX_OK && f != 1.0)
            st = HLX_BE(eng, scale, q, (size_t)G * dk, (float)f);
    }
    return st;
}

/* Dual chunk attention of the chunk's k-th request, local KV head kh, for its rows from i0
 * to the end of i0's chunk of dual chunk attention (hlx_prefill_dca_rows): their inter and
 * succ parts are the same keys for every row (one call over rows x group queries each,
 * their queries hlx_prefill_dca_q), as is their intra part before i0's position; then each
 * row's own rest of it; the parts merged exactly into p->am and p->amlse. d0: the head's
 * shard and scale. */
static hlx_status_t hlx_prefill_attn_dca(hlx_engine_t *eng, hlx_prefill_t *p,
                                         const hlx_attn_desc_t *d0, int64_t pos0, int c, int k,
                                         int kh, int i0)
{
    const hlx_layout_t *L = &eng->lay;
    const int G = L->group, dk = eng->m.head_dim, dv = eng->xdv;
    const int i1 = i0 + (int)hlx_prefill_dca_rows(eng, pos0 + i0, c - i0);
    const size_t nq = (size_t)(i1 - i0) * G, qn = hlx_phase_dca_qn(eng, 1);
    const float *src[3] = { p->dq + hlx_phase_dca_qn(eng, p->R), p->dq, p->qkv };
    const size_t ld[3] = { qn, qn, (size_t)eng->qkv_cols };
    int64_t from[3], to;
    hlx_dca_split_t sp;
    hlx_attn_desc_t d = *d0;
    int part, n = 0, i;
    hlx_status_t st = HLX_OK;

    /* inter, succ and the intra keys before the group: each one range of slots, the same
     * for every row of the group */
    hlx_model_dca_split(&eng->m, pos0 + i0, &sp);
    from[HLX_DCA_INTER] = 0;
    from[HLX_DCA_SUCC] = sp.end[HLX_DCA_INTER];
    from[HLX_DCA_INTRA] = sp.end[HLX_DCA_SUCC];
    for (part = 0; part < 3 && st == HLX_OK; part++) {
        size_t a = (size_t)hlx_layout_kv_count(L, L->kvp_rank, from[part]);
        to = part == HLX_DCA_INTRA ? pos0 + i0 : from[part + 1];
        d.len = (size_t)hlx_layout_kv_count(L, L->kvp_rank, to);
        if (d.len <= a && part != HLX_DCA_INTRA) /* (the intra queries serve the rows' own) */
            continue;
        st = hlx_prefill_dca_q(eng, p, src[part], ld[part], pos0, c, k, kh, i0, i1);
        if (st != HLX_OK || d.len <= a)
            continue;
        d.group = (int)nq;
        d.q = p->aq;
        d.o = p->dco + (size_t)n * nq * dv;
        d.lse = p->dclse + (size_t)n * nq;
        st = hlx_phase_attn_from_s(eng, &d, a, p->ao, p->alse);
        n++;
    }
    /* each row's own rest of its intra part (the intra queries are still in p->aq), from
     * the group's first position: empty on a rank that holds none of it (LSE -inf) */
    for (i = i0; i < i1 && st == HLX_OK; i++) {
        d.group = G;
        d.q = p->aq + (size_t)(i - i0) * G * dk;
        d.len = (size_t)hlx_layout_kv_count(L, L->kvp_rank, pos0 + i + 1);
        d.o = p->dco + ((size_t)n * nq + (size_t)(i - i0) * G) * dv;
        d.lse = p->dclse + (size_t)n * nq + (size_t)(i - i0) * G;
        st = hlx_phase_attn_from_s(eng, &d, (size_t)hlx_layout_kv_count(L, L->kvp_rank,
                                                                         pos0 + i0),
                                   p->ao, p->alse);
    }
    if (st == HLX_OK)
        st = HLX_BE(eng, merge, n + 1, (int)nq, dv, p->dco, p->dclse,
                    p->am + (size_t)i0 * G * dv, p->amlse + (size_t)i0 * G);
    return st;
}

/* Attention of the c rows of the chunk's k-th request, local KV head kh: the shared prefix
 * [0, n0) in one call over c x group queries, each row's own part [n0, len) in one call
 * each, merged. MLA: the one latent head, its c x Q absorbed queries and value = the key
 * row's head. */
static hlx_status_t hlx_prefill_attn_head(hlx_engine_t *eng, hlx_prefill_t *p, int l,
                                          int64_t pos0, int c, int k, int kh, size_t n0)
{
    const hlx_layout_t *L = &eng->lay;
    const hlx_model_t *m = &eng->m;
    hlx_layer_w_t *W = &eng->layers[l];
    int dk = m->head_dim, dv = eng->xdv, G = L->group, i;
    size_t shard = (size_t)p->rq[k] * L->kv_local + kh, nq = (size_t)c * G;
    const float *q0;
    const char *k0, *v0;
    hlx_attn_desc_t d;
    hlx_status_t st = HLX_OK;

    if (eng->mla != NULL) {
        hlx_mla_rows_attn_desc(eng, l, &p->mla, k, p->rq[k], c, &d);
        dk = d.dk;
    } else {
        for (i = 0; i < c && st == HLX_OK; i++) /* the queries of the c rows, [c][group][dk] */
            st = hlx_prefill_copy(eng, p->aq + (size_t)i * G * dk,
                                  p->qkv + ((size_t)k * c + i) * eng->qkv_cols +
                                      (size_t)kh * G * dk,
                                  (size_t)G * dk);
        d = (hlx_attn_desc_t){
            .dk = dk, .dv = dv, .kv_dtype = eng->kv_dtype, .k_stride = (size_t)dk,
            .v_stride = (size_t)dv, .scale = eng->attn_scale * W->k_scale[kh],
            .softcap = (float)m->attn_softcap, .q = p->aq,
            .k = (const char *)W->kc + hlx_kv_shard_index(eng, l, 1, shard, 0, 0) * eng->kv_esize,
            .v = (const char *)W->vc + hlx_kv_shard_index(eng, l, 0, shard, 0, 0) * eng->kv_esize,
            .kv_clean = hlx_kv_clean(eng, l, shard),
        };
    }
    q0 = d.q;
    k0 = d.k;
    v0 = d.v;
    if (p->dca) {
        for (i = 0; i < c && st == HLX_OK; i = (int)(i + hlx_prefill_dca_rows(eng, pos0 + i, c - i)))
            st = hlx_prefill_attn_dca(eng, p, &d, pos0, c, k, kh, i);
    } else if (hlx_model_layer_first(m, l, pos0 + c - 1) > 0) {
        /* a windowed layer (GQA) whose window (or chunk: window_chunked) has moved past
         * position 0: each row over its own, no prefix shared (until then the rows go as
         * without a window, bit for bit; the first position never decreases with the row's,
         * so the last row's 0 is every row's) */
        for (i = 0; i < c && st == HLX_OK; i++) {
            d.group = G;
            d.len = (size_t)hlx_layout_kv_count(L, L->kvp_rank, pos0 + i + 1);
            d.q = q0 + (size_t)i * G * dk;
            d.o = p->am + (size_t)i * G * dv;
            d.lse = p->amlse + (size_t)i * G;
            st = hlx_phase_attn_window(eng, l, &d, hlx_phase_window_from(eng, l, pos0 + i));
        }
    } else {
        d.group = (int)nq;
        d.len = n0;
        d.o = p->ao;
        d.lse = p->alse;
        st = HLX_BE(eng, attn, &d);
        for (i = 0; i < c && st == HLX_OK; i++) {
            size_t len = (size_t)hlx_layout_kv_count(L, L->kvp_rank, pos0 + i + 1);
            d.group = G;
            d.len = len - n0;
            d.q = q0 + (size_t)i * G * dk;
            d.k = k0 + n0 * d.k_stride * eng->kv_esize;
            d.v = v0 + n0 * d.v_stride * eng->kv_esize;
            d.o = p->ao + (nq + (size_t)i * G) * dv;
            d.lse = p->alse + nq + (size_t)i * G;
            st = HLX_BE(eng, attn, &d);
        }
        if (st == HLX_OK)
            st = HLX_BE(eng, merge, 2, (int)nq, dv, p->ao, p->alse, p->am, p->amlse);
    }
    /* fp8 KV-cache scales: the c rows' outputs times the head's value scale */
    if (st == HLX_OK)
        st = hlx_phase_attn_vscale(eng, l, kh, p->am, (size_t)c * G * dv);
    for (i = 0; i < c && st == HLX_OK; i++) {
        size_t r = (size_t)k * c + i;
        st = hlx_prefill_copy(eng, p->opart + (r * L->q_local + (size_t)kh * G) * dv,
                              p->am + (size_t)i * G * dv, (size_t)G * dv);
        if (st == HLX_OK)
            st = hlx_prefill_copy(eng, p->lsepart + r * L->q_local + (size_t)kh * G,
                                  p->amlse + (size_t)i * G, (size_t)G);
    }
    return st;
}

/* Causal attention partials of every row over this rank's shard, packed for the exchange. */
static hlx_status_t hlx_prefill_attn(hlx_engine_t *eng, hlx_prefill_t *p, int l, int64_t pos0,
                                     int c, int R)
{
    const hlx_layout_t *L = &eng->lay;
    int k, kh;
    size_t a = hlx_phase_kv_align(eng);
    size_t n0 = (size_t)hlx_layout_kv_count(L, L->kvp_rank, pos0) / a * a;
    hlx_xchg_desc_t xd;
    hlx_status_t st = HLX_OK;

    for (k = 0; k < p->nb && st == HLX_OK; k++)
        for (kh = 0; kh < L->kv_local && st == HLX_OK; kh++)
            st = hlx_prefill_attn_head(eng, p, l, pos0, c, k, kh, n0);
    hlx_phase_xchg_desc(eng, 0, R, p->xs_displ, &xd);
    if (st == HLX_OK)
        st = HLX_BE(eng, pack, &xd, p->opart, p->lsepart, p->sendbuf);
    return st;
}

/* The exchange of the partials, the exact merge, W_o and its all-reduce into x. */
static hlx_status_t hlx_prefill_merge_oproj(hlx_engine_t *eng, hlx_prefill_t *p, int l, int R)
{
    const hlx_layout_t *L = &eng->lay;
    int dv = eng->xpw, cnt = L->q_slice;
    size_t nh = (size_t)R * cnt, n = (size_t)R * eng->m.hidden;
    const float *in = p->omerged;
    hlx_xchg_desc_t xd;
    hlx_status_t st;

    hlx_phase_xchg_desc(eng, 0, R, p->xr_displ, &xd);

    /* the transport reads what the queue wrote (the backend's memory is host-visible) */
    st = hlx_engine_sync(eng);
    if (st == HLX_OK)
        st = hlx_comm_alltoallv(eng->kvp_comm, p->sendbuf, p->sc, p->sd, p->recvbuf, p->rc,
                                p->rd);
    if (st == HLX_OK)
        st = HLX_BE(eng, unpack, &xd, cnt, R, p->recvbuf, p->oparts, p->lseparts);
    if (st == HLX_OK)
        st = HLX_BE(eng, merge, L->kvp, (int)nh, dv, p->oparts, p->lseparts, p->omerged, p->lsem);
    if (st == HLX_OK)
        st = hlx_phase_sinks(eng, l, p->omerged, p->lsem, (int)nh);
    if (st == HLX_OK)
        st = hlx_engine_sync(eng);
    if (st == HLX_OK)
        st = hlx_check_finite(eng, p->omerged, nh * (size_t)dv, "the merged prefill attention", l);
    /* MLA: the merged heads from latent to value space (W_UV) first. */
    if (st == HLX_OK && eng->mla != NULL) {
        st = hlx_mla_rows_up(eng, l, &p->mla, p->omerged, R);
        in = p->mla.ov;
    }
    if (st == HLX_OK)
        st = HLX_BE(eng, gemm, R, eng->m.hidden, hlx_layout_wo_rows(L, eng->m.v_head_dim), in,
                    eng->layers[l].wo, eng->wp_dtype, p->y, 0);
    if (st == HLX_OK)
        st = hlx_phase_allreduce_buf(eng, p->y, n);
    if (st == HLX_OK)
        st = hlx_phase_out_extras(eng, l, p->y, R, 0);
    if (st == HLX_OK)
        st = hlx_phase_residual(eng, p->x, p->y, n);
    return st;
}

static hlx_status_t hlx_prefill_ffn(hlx_engine_t *eng, hlx_prefill_t *p, int l, int R)
{
    const hlx_model_t *m = &eng->m;
    hlx_layer_w_t *W = &eng->layers[l];
    size_t n = (size_t)R * m->hidden;
    hlx_status_t st;

    if (hlx_model_layer_moe(m, l) && eng->moe != NULL) {
        /* routed per row; each (row, expert) pair on that expert's TPF ranks only */
        st = hlx_moe_ffn_rows(eng, l, p->x, p->hn, p->y, R);
    } else {
        const float *in;
        st = hlx_phase_norm_in(eng, W->ffn_norm, W->ffn_norm_b, p->hn, p->x, R, &in);
        if (st == HLX_OK)
            st = hlx_phase_ffn_dense(eng, W, in, p->gu, p->act, p->y, R);
    }
    if (st == HLX_OK)
        st = hlx_phase_allreduce_buf(eng, p->y, n);
    if (st == HLX_OK)
        st = hlx_phase_out_extras(eng, l, p->y, R, 1);
    if (st == HLX_OK)
        st = hlx_phase_residual(eng, p->x, p->y, n);
    if (st == HLX_OK)
        st = hlx_engine_sync(eng);
    if (st == HLX_OK)
        st = hlx_check_finite(eng, p->x, n, "the prefill hidden state", l);
    return st;
}

/* Prompt token t of request b: its first prompt_len tokens, then its tail. */
static int hlx_prefill_token(const hlx_run_config_t *cfg, int b, int t)
{
    return t < cfg->prompt_len ? cfg->prompt[(size_t)b * cfg->prompt_len + (size_t)t]
                               : cfg->tail[cfg->tail_off[b] + t - cfg->prompt_len];
}

/* Tokens [p0, p0 + c) of the chunk's requests (p->rq[0 .. p->nb)) through every layer. */
static hlx_status_t hlx_prefill_chunk(hlx_engine_t *eng, hlx_prefill_t *p, int p0, int c)
{
    const hlx_run_config_t *cfg = &eng->cfg;
    int R = p->nb * c, k, i, l;
    int64_t pos0 = eng->pos + p0;
    hlx_status_t st;

    for (k = 0; k < p->nb; k++)
        for (i = 0; i < c; i++)
            p->tok[k * c + i] = hlx_prefill_token(cfg, p->rq[k], p0 + i);
    st = hlx_engine_embed(eng, p->tok, R, p->x);
    for (l = 0; l < eng->m.layers && st == HLX_OK; l++) {
        st = eng->mla != NULL
                 ? hlx_mla_rows_qkv(eng, l, &p->mla, p->x, p->hn, p->nb, p->rq, c, pos0)
                 : hlx_prefill_qkv(eng, p, l, pos0, c, R);
        if (st == HLX_OK)
            st = hlx_prefill_attn(eng, p, l, pos0, c, R);
        if (st == HLX_OK)
            st = hlx_prefill_merge_oproj(eng, p, l, R);
        if (st == HLX_OK)
            st = hlx_prefill_ffn(eng, p, l, R);
    }
    return st;
}

/* The prompt through the decode step one token at a time (the same phases, so exact as the
 * decode is), the head's choice replaced by the next prompt token until the last: the
 * chunked path's yardstick, chosen with HELIX_PREFILL=steps. */
static hlx_status_t hlx_prefill_by_steps(hlx_engine_t *eng)
{
    const hlx_run_config_t *cfg = &eng->cfg;
    int P = cfg->prompt_len, B = cfg->batch, p, b;
    hlx_status_t st = HLX_OK;

    eng->prefilling = 1;
    for (p = 0; p < P && st == HLX_OK; p++) {
        for (b = 0; b < B; b++)
            eng->tokens[b] = cfg->prompt[(size_t)b * P + p];
        st = hlx_schedule_step(eng);
    }
    eng->prefilling = 0;
    return st;
}

hlx_status_t hlx_prefill_run(hlx_engine_t *eng)
{
    const hlx_run_config_t *cfg = &eng->cfg;
    int P = cfg->prompt_len, B = cfg->batch, H = eng->m.hidden, p0, c = 0, b, k;
    hlx_prefill_t p;
    hlx_status_t st;

    /* the ids were checked against the vocabulary before the bootstrap (engine.c) */
    if (P < 1 || cfg->prompt == NULL)
        return HLX_OK;
    /* HELIX_PREFILL: "chunked" or "steps" (the settings table refuses anything else) */
    if (!strcmp(eng->set.prefill, "steps"))
        return hlx_prefill_by_steps(eng);
    st = hlx_prefill_alloc(eng, &p);
    if (st == HLX_OK && cfg->tail_off != NULL &&
        (eng->roff = calloc((size_t)B, sizeof(*eng->roff))) == NULL)
        st = HLX_ERR_NOMEM;
    for (p0 = 0; st == HLX_OK; p0 += c) {
        /* the requests whose prompt reaches past p0, and the tokens every one of them has */
        for (b = 0, p.nb = 0, c = p.C; b < B; b++)
            if (hlx_run_prompt_len(cfg, b) > p0) {
                p.rq[p.nb++] = b;
                c = hlx_run_prompt_len(cfg, b) - p0 < c ? hlx_run_prompt_len(cfg, b) - p0 : c;
            }
        if (p.nb == 0)
            break;
        st = hlx_prefill_chunk(eng, &p, p0, c);
        /* a request whose prompt ends here: its last row to the head, below */
        for (k = 0; k < p.nb && st == HLX_OK; k++)
            if (hlx_run_prompt_len(cfg, p.rq[k]) == p0 + c)
                st = eng->be.ops->copy_from(&eng->be, eng->q, eng->x + (size_t)p.rq[k] * H,
                                            p.x + ((size_t)k * c + (size_t)(c - 1)) * H,
                                            sizeof(float) * (size_t)H);
    }
    /* The head on each request's last prompt token: its next token starts the decode, each
     * request at its own position. */
    if (st == HLX_OK) {
        for (b = 0; eng->roff != NULL && b < B; b++)
            eng->roff[b] = hlx_run_tail_len(cfg, b);
        eng->pos += P;
        eng->kv_len = hlx_layout_kv_count(&eng->lay, eng->lay.kvp_rank, eng->pos);
        eng->prefilling = 1;
        st = hlx_phase_head(eng);
        eng->prefilling = 0;
    }
    hlx_prefill_free(eng, &p);
    return st;
}

hlx_status_t hlx_engine_sample(hlx_engine_t *eng)
{
    const hlx_run_config_t *cfg = &eng->cfg;
    const hlx_layout_t *L = &eng->lay;
    int V = eng->m.vocab, b, r;
    /* the draw's step: tokens generated before this one (the prefill's is the first) */
    int64_t step = eng->prefilling ? 0 : eng->step + (cfg->prompt_len > 0);
    float *row = eng->sample_buf;

    if (!(cfg->temperature > 0))
        return HLX_OK;
    for (b = 0; b < cfg->batch; b++) {
        /* this request's full logits, from the all-gathered [N][B][vocab_pad] blocks */
        for (r = 0; r < L->n; r++) {
            int v0 = (int)((int64_t)V * r / L->n), v1 = (int)((int64_t)V * (r + 1) / L->n);
            memcpy(row + v0, eng->logits_all + ((size_t)r * cfg->batch + b) * L->vocab_pad,
                   sizeof(float) * (size_t)(v1 - v0));
        }
        eng->tokens[b] = hlx_sample_token(row, V, cfg->temperature, cfg->top_p, cfg->seed, b,
                                          step, row + V);
    }
    return HLX_OK;
}
