/* Helix layout arithmetic (see hlx_layout.h). */
#include "hlx_layout.h"

#include <stdio.h>

hlx_status_t hlx_layout_init(const hlx_model_t *m, int kvp, int tpa, int kv_block, int rank,
                             hlx_layout_t *lay, char *err, size_t errlen)
{
    int Q = m->q_heads, K = m->kv_heads, n = kvp * tpa;

    if (kvp < 1 || tpa < 1 || kv_block < 1) {
        snprintf(err, errlen, "--kvp, --tpa and --kv-block must be at least 1");
        return HLX_ERR_INVALID;
    }
    if (m->attn != HLX_ATTN_GQA) {
        snprintf(err, errlen, "model %s: the runtime decodes GQA models only so far (MLA is "
                 "planner-only)", m->name);
        return HLX_ERR_INVALID;
    }
    if (Q % tpa != 0) {
        snprintf(err, errlen, "q_heads %d is not divisible by --tpa %d: choose a TPA that "
                 "divides %d", Q, tpa, Q);
        return HLX_ERR_INVALID;
    }
    if (K % tpa != 0 && tpa % K != 0) {
        snprintf(err, errlen, "kv_heads %d and --tpa %d: one must divide the other so each "
                 "TPA shard holds whole KV heads", K, tpa);
        return HLX_ERR_INVALID;
    }
    if (Q % n != 0) {
        snprintf(err, errlen, "q_heads %d is not divisible by N = KVP x TPA = %d x %d = %d: "
                 "the all-to-all splits query heads over N ranks", Q, kvp, tpa, n);
        return HLX_ERR_INVALID;
    }
    if (n > m->hidden || n > m->ffn || n > m->vocab) {
        snprintf(err, errlen, "N = %d ranks is larger than hidden, ffn or vocab", n);
        return HLX_ERR_INVALID;
    }
    lay->kvp           = kvp;
    lay->tpa           = tpa;
    lay->n             = n;
    lay->rank          = rank;
    lay->kvp_rank      = rank % kvp;
    lay->tpa_rank      = rank / kvp;
    lay->q_local       = Q / tpa;
    lay->q_first       = lay->tpa_rank * lay->q_local;
    lay->group         = Q / K < lay->q_local ? Q / K : lay->q_local;
    lay->kv_local      = lay->q_local / lay->group;
    lay->kv_first      = lay->q_first / (Q / K);
    lay->q_slice       = Q / n;
    lay->q_slice_first = rank * lay->q_slice;
    lay->ffn_first     = (int)((int64_t)m->ffn * rank / n);
    lay->ffn_count     = (int)((int64_t)m->ffn * (rank + 1) / n) - lay->ffn_first;
    lay->vocab_first   = (int)((int64_t)m->vocab * rank / n);
    lay->vocab_count   = (int)((int64_t)m->vocab * (rank + 1) / n) - lay->vocab_first;
    lay->vocab_pad     = (m->vocab + n - 1) / n;
    lay->kv_block      = kv_block;
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
