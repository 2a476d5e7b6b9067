/* Helix layout arithmetic (see hlx_layout.h): which heads, KV heads, FFN columns and
 * vocabulary entries each rank owns, including splits that do not divide evenly. */
#include "hlx_layout.h"

#include <stdio.h>

/* The TPA shard t's KV heads and query heads. TPA <= K: shard t holds KV heads
 * [K t / TPA, K (t+1) / TPA) (uneven when TPA does not divide K) with all their query
 * heads. TPA > K: TPA must be a multiple of K; the s = TPA / K shards of one KV head split
 * its G = Q / K query heads into s near-equal parts. */
static void hlx_layout_tpa_shard(const hlx_model_t *m, int tpa, int t, int *q_first,
                                 int *q_local, int *kv_first, int *kv_local)
{
    int Q = m->q_heads, K = m->kv_heads, G = Q / K;

    if (tpa <= K) {
        *kv_first = (int)((int64_t)K * t / tpa);
        *kv_local = (int)((int64_t)K * (t + 1) / tpa) - *kv_first;
        *q_first  = *kv_first * G;
        *q_local  = *kv_local * G;
    } else {
        int s = tpa / K, sub = t % s;
        *kv_first = t / s;
        *kv_local = 1;
        *q_first  = *kv_first * G + G * sub / s;
        *q_local  = G * (sub + 1) / s - G * sub / s;
    }
}

hlx_status_t hlx_layout_init(const hlx_model_t *m, int kvp, int tpa, int kv_block, int rank,
                             hlx_layout_t *lay, char *err, size_t errlen)
{
    int Q = m->q_heads, K = m->kv_heads, n, t, min_q = 1 << 30, max_q = 0, max_kv = 0, split;
    int dv = hlx_model_value_dim(m);

    if (kvp < 1 || tpa < 1 || kv_block < 1) {
        snprintf(err, errlen, "--kvp, --tpa and --kv-block must be at least 1");
        return HLX_ERR_INVALID;
    }
    if (kvp > (1 << 20) / tpa) {
        snprintf(err, errlen, "--kvp %d x --tpa %d: too many ranks", kvp, tpa);
        return HLX_ERR_INVALID;
    }
    n = kvp * tpa;
    /* MLA (absorbed): one latent KV "head" shared by every query head, so Helix runs it
     * with K = 1: TPA = 1 and all attention parallelism on KVP = N. */
    if (m->attn == HLX_ATTN_MLA && tpa != 1) {
        snprintf(err, errlen, "--tpa %d: model %s uses MLA, whose latent KV cache is one head "
                 "shared by all %d query heads: it runs with --tpa 1 and the ranks on --kvp "
                 "(e.g. --kvp %d --tpa 1)", tpa, m->name, Q, n);
        return HLX_ERR_INVALID;
    }
    if (K < 1 || Q < K || Q % K != 0) {
        snprintf(err, errlen, "model %s: q_heads %d is not a multiple of kv_heads %d", m->name,
                 Q, K);
        return HLX_ERR_INVALID;
    }
    if (tpa > K && (tpa % K != 0 || tpa / K > Q / K)) {
        snprintf(err, errlen, "kv_heads %d and --tpa %d: with more TPA shards than KV heads, "
                 "TPA must be a multiple of kv_heads (each KV head copied to TPA/K shards) "
                 "and at most q_heads %d; layouts that work: any TPA <= %d, or a multiple "
                 "of %d up to %d", K, tpa, Q, K, K, Q);
        return HLX_ERR_INVALID;
    }
    for (t = 0; t < tpa; t++) {
        int qf, ql, kf, kl;
        hlx_layout_tpa_shard(m, tpa, t, &qf, &ql, &kf, &kl);
        min_q  = ql < min_q ? ql : min_q;
        max_q  = ql > max_q ? ql : max_q;
        max_kv = kl > max_kv ? kl : max_kv;
    }
    /* Every rank must own something after the all-to-all: with fewer heads in a shard than
     * KVP, each head is cut into q_split pieces of dv / q_split values (q_split a divisor of
     * dv that gives every KVP rank a piece, the one whose busiest rank moves the fewest
     * floats), each carrying its head's LSE. */
    split = hlx_model_q_split(min_q, max_q, kvp, dv);
    if (min_q < kvp && m->attn == HLX_ATTN_MLA) {
        snprintf(err, errlen, "--kvp %d: model %s uses MLA, whose %d query heads are merged "
                 "whole (W_UV needs a head's whole latent): use --kvp <= %d", kvp, m->name, Q,
                 min_q);
        return HLX_ERR_INVALID;
    }
    if (split == 0) {
        snprintf(err, errlen, "--kvp %d: q_heads %d over N = KVP x TPA = %d x %d = %d: a TPA "
                 "shard holds %d query head(s) of %d value(s), fewer than KVP %d even value by "
                 "value, so some rank would own nothing after the all-to-all; use --kvp <= %lld",
                 kvp, Q, kvp, tpa, n, min_q, dv, kvp, (long long)min_q * dv);
        return HLX_ERR_INVALID;
    }
    if (n > m->hidden || (hlx_model_moe_layers(m) < m->layers && n > m->ffn) || n > m->vocab) {
        snprintf(err, errlen, "N = %d ranks is larger than hidden, ffn or vocab", n);
        return HLX_ERR_INVALID;
    }
    if (rank < 0 || rank >= n) {
        snprintf(err, errlen, "rank %d is outside the %d ranks of the layout", rank, n);
        return HLX_ERR_INVALID;
    }
    lay->kvp      = kvp;
    lay->tpa      = tpa;
    lay->n        = n;
    lay->rank     = rank;
    lay->kvp_rank = rank % kvp;
    lay->tpa_rank = rank / kvp;
    hlx_layout_tpa_shard(m, tpa, lay->tpa_rank, &lay->q_first, &lay->q_local, &lay->kv_first,
                         &lay->kv_local);
    lay->kv_local_max = max_kv;
    lay->group        = tpa <= K ? Q / K : lay->q_local;
    lay->q_split      = split;
    hlx_layout_q_slice(lay, lay->kvp_rank, &lay->q_slice_first, &lay->q_slice);
    lay->q_slice_max  = (int)(((int64_t)max_q * split + kvp - 1) / kvp);
    lay->ffn_first   = (int)((int64_t)m->ffn * rank / n);
    lay->ffn_count   = (int)((int64_t)m->ffn * (rank + 1) / n) - lay->ffn_first;
    lay->vocab_first = (int)((int64_t)m->vocab * rank / n);
    lay->vocab_count = (int)((int64_t)m->vocab * (rank + 1) / n) - lay->vocab_first;
    lay->vocab_pad   = (m->vocab + n - 1) / n;
    lay->kv_block    = kv_block;
    return HLX_OK;
}

int64_t hlx_layout_kv_count(const hlx_layout_t *lay, int j, int64_t end)
{
    int64_t period = (int64_t)lay->kv_block * lay->kvp;
    int64_t full = end / period, rem = end % period, extra;

    extra = rem - (int64_t)j * lay->kv_block;
    if (extra < 0)
        extra = 0;
    if (extra > lay->kv_block)
        extra = lay->kv_block;
    return full * lay->kv_block + extra;
}
