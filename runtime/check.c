/* Checks of a decode run: the fp64 reference (hidden states, logits, tokens, and every
 * appended KV row), bitwise agreement of the replicated state across ranks, non-finite
 * values (named with the checkpoint's weight that is not finite, when one is), and the
 * scripted faults that prove each check can fail. */
#define _GNU_SOURCE
#include "hlx_ckpt.h"
#include "hlx_engine_view.h"
#include "hlx_reference.h"
#include "hlx_reference_moe.h"
#include "hlx_sample.h"

#include "hlx_log.h"
#include "hlx_parse.h"
#include "hlx_synth.h"
#include "hlx_time.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct hlx_fault {
    unsigned kind; /* one HLX_FAULT_* bit */
    int      rank;
    int      step;
};

static const struct {
    const char *name;
    unsigned    kind;
} hlx_fault_kinds[] = {
    { "drop-partials", HLX_FAULT_DROP_PARTIALS },
    { "skip-append", HLX_FAULT_SKIP_APPEND },
    { "nan", HLX_FAULT_NAN },
    { "kill", HLX_FAULT_KILL },
    { "hang", HLX_FAULT_HANG },
};

hlx_status_t hlx_fault_create(const char *spec, hlx_fault_t **f_p, char *err, size_t errlen)
{
    char buf[128], *rest, *tok, why[160];
    hlx_fault_t f = { 0, 0, 0 };
    int seen_rank = 0, seen_step = 0;
    size_t i;

    *f_p = NULL;
    if (spec == NULL || !spec[0])
        return HLX_OK;
    /* the whole text, field by field: a fault that a typo turned into another one (a second
     * step=, an empty field, a spec cut short) would let the test it serves pass without
     * it */
    if (strlen(spec) >= sizeof(buf))
        goto bad;
    snprintf(buf, sizeof(buf), "%s", spec);
    rest = buf;
    tok = strsep(&rest, ":");
    for (i = 0; i < sizeof(hlx_fault_kinds) / sizeof(hlx_fault_kinds[0]); i++)
        if (!strcmp(tok, hlx_fault_kinds[i].name))
            f.kind = hlx_fault_kinds[i].kind;
    if (f.kind == 0)
        goto bad;
    while ((tok = strsep(&rest, ":")) != NULL) {
        int is_rank = !strncmp(tok, "rank=", 5), is_step = !strncmp(tok, "step=", 5);
        int64_t v;
        if ((!is_rank && !is_step) || (is_rank && seen_rank++) || (is_step && seen_step++) ||
            hlx_parse_int(tok + 5, 0, 1 << 24, &v, why, sizeof(why)) != HLX_OK)
            goto bad; /* the common integer rule: step=1K is step 1024 */
        *(is_rank ? &f.rank : &f.step) = (int)v;
    }
    if (!seen_rank)
        goto bad;
    *f_p = malloc(sizeof(**f_p));
    if (*f_p == NULL)
        return HLX_ERR_NOMEM;
    **f_p = f;
    return HLX_OK;
bad:
    snprintf(err, errlen, "HELIX_FAULT=\"%s\": expected KIND:rank=R[:step=S] with KIND one "
             "of drop-partials, skip-append, nan, kill, hang, R and S integers in [0, 16M] "
             "(K, M: 2^10, 2^20), each once",
             spec);
    return HLX_ERR_INVALID;
}

int hlx_fault_rank(const hlx_fault_t *f)
{
    return f->rank;
}

unsigned hlx_fault_bits(const hlx_fault_t *f, int rank, int step)
{
    return f != NULL && f->rank == rank && step >= f->step ? f->kind : 0;
}

void hlx_fault_destroy(hlx_fault_t *f)
{
    free(f);
}

/* --check state: the reference's results for every step, computed on rank 0 up front. */
struct hlx_check {
    hlx_ref_t *ref;
    double    *ref_hid, *ref_lg; /* [steps][B][H], [steps][B][V] */
    int       *ref_tok;          /* [steps][B] */
    uint64_t  *hashes;           /* [N]: replicated-state hashes of every rank */
    int        first;            /* 1: entry 0 is the prefill's last prompt token */
};

int hlx_check_has_reference(const hlx_check_t *chk)
{
    return chk != NULL && chk->ref != NULL;
}

/* Whether checkpoint tensor `name` feeds the checks of layer `layer`: the layer's own
 * tensors, the embedding ahead of layer 0, and the final norm and the output head (or the
 * tied embedding) for the logits (layer == layers). */
static int hlx_check_feeds(const char *name, int layer, int layers, const char *unused)
{
    char embed[64], norm[64], head[64];
    int l;

    /* the checkpoint's names of the whole-model weights, as the reader spells them */
    hlx_hf_weight_name(HLX_HFW_EMBED, 0, embed, sizeof(embed));
    hlx_hf_weight_name(HLX_HFW_FINAL_NORM, 0, norm, sizeof(norm));
    hlx_hf_weight_name(HLX_HFW_LMHEAD, 0, head, sizeof(head));
    if (layer >= layers) /* a tied model's unread head (hlx_hf_settle) feeds nothing */
        return !strcmp(name, norm) || (!strcmp(name, head) && strcmp(name, unused)) ||
               !strcmp(name, embed);
    return (sscanf(name, "model.layers.%d.", &l) == 1 && l == layer) ||
           (layer == 0 && !strcmp(name, embed));
}

/* The most checkpoint bytes one failed check reads back (every rank reads its own): a
 * MoE layer's experts can be tens of GiB, and this runs on the way to an error. */
#define HLX_CHECK_SCAN_MAX_BYTES ((uint64_t)1 << 30)

/* After a non-finite value at layer `layer`: the checkpoint's tensors feeding it, read
 * back from the files (not from the backend's copy: the same on a GPU, and it covers the
 * MLA and expert weights and the fp8 scales), at most HLX_CHECK_SCAN_MAX_BYTES of them.
 * The first one holding values that are not finite is named in why, those every token
 * uses before the routed experts (an expert no token chose cannot be the cause); 0 when
 * none is (or the weights are synthetic). When the bound cut the scan short, why says so. */
static int hlx_check_weights(const hlx_engine_t *eng, int layer, char *why, size_t len)
{
    const char *dir = hlx_engine_config(eng)->ckpt;
    hlx_ckpt_t *ck = NULL;
    char err[256], desc[192];
    size_t i;
    int found = 0, experts, cut = 0;
    uint64_t budget = HLX_CHECK_SCAN_MAX_BYTES;

    if (dir[0] == '\0' || hlx_ckpt_open(dir, &ck, err, sizeof(err)) != HLX_OK)
        return 0;
    for (experts = 0; experts < 2 && !found && !cut; experts++) {
        for (i = 0; i < hlx_ckpt_count(ck) && !found && !cut; i++) {
            const hlx_ckpt_tensor_t *t = hlx_ckpt_tensor(ck, i);
            hlx_ckpt_nonfinite_t nf;
            if (!hlx_check_feeds(t->name, layer, hlx_engine_model(eng)->layers,
                                 hlx_engine_ckpt_head_unused(eng)) ||
                (strstr(t->name, ".mlp.experts.") != NULL) != experts)
                continue;
            if (t->end - t->begin > budget) {
                cut = 1;
                break;
            }
            budget -= t->end - t->begin;
            hlx_ckpt_scan_tensor(ck, t, &nf);
            if (nf.count == 0)
                continue;
            hlx_ckpt_nonfinite_str(t, &nf, desc, sizeof(desc));
            snprintf(why, len, "the checkpoint's weights are not finite: %.128s holds %s; "
                     "replace it (`helix model info %.160s --scan` lists every such tensor)",
                     t->name, desc, dir);
            found = 1;
        }
    }
    if (cut)
        snprintf(why, len, "the layer's checkpoint weights were checked in part only (%llu "
                 "MiB at most on this path): `helix model info %.160s --scan` checks every "
                 "tensor", (unsigned long long)(HLX_CHECK_SCAN_MAX_BYTES >> 20), dir);
    hlx_ckpt_close(ck);
    return found;
}

hlx_status_t hlx_check_finite(hlx_engine_t *eng, const float *v, size_t n, const char *what,
                              int layer)
{
    char why[640];
    size_t i;

    for (i = 0; i < n; i++) {
        if (isfinite(v[i]))
            continue;
        /* the cause, where it is a weight, in the same message */
        why[0] = '\0';
        (void)hlx_check_weights(eng, layer, why, sizeof(why));
        hlx_engine_set_errmsg(eng, "non-finite value (%g) in %s, layer %d, step %d, rank %d "
                              "(%s), element %zu%s%s", (double)v[i], what, layer,
                              hlx_engine_step_index(eng), hlx_engine_rank(eng),
                              hlx_engine_host(eng), i, why[0] ? ": " : "", why);
        return HLX_ERR_NUMERIC;
    }
    return HLX_OK;
}

/* Seconds of fp64 reference work, at a pessimistic 0.1 GFLOP/s, so that the ranks that
 * wait for rank 0 get a deadline that grows with the work instead of a spurious timeout. */
static double hlx_check_ref_seconds(const hlx_engine_t *eng)
{
    const hlx_model_t *m = hlx_engine_model(eng);
    const hlx_run_config_t *cfg = hlx_engine_config(eng);
    double P = (double)hlx_run_prompt_max(cfg), n = cfg->context + cfg->steps + P;
    double attn = (cfg->steps + P) * cfg->batch * m->layers * m->q_heads * n *
                  (m->head_dim + m->v_head_dim) * 2.0;
    double setup = (double)m->layers * cfg->batch * m->kv_heads * n *
                   (m->head_dim + m->v_head_dim) * 20.0;
    double dense = (cfg->steps + P) * cfg->batch * hlx_model_params(m) * 2.0;

    if (m->attn == HLX_ATTN_MLA) /* per position and head: keys and values from the latent */
        setup = (double)m->layers * cfg->batch * n * m->q_heads * m->kv_lora_rank *
                (m->qk_nope_dim + m->v_head_dim) * 2.0;

    return (attn + setup + dense) / 1e8;
}

hlx_status_t hlx_check_prepare(hlx_engine_t *eng, hlx_check_t **chk_p, char *err,
                               size_t errlen)
{
    const hlx_run_config_t *cfg = hlx_engine_config(eng);
    const hlx_model_t *m = hlx_engine_model(eng);
    /* the reference runs the prompts' tails as steps that feed them (below): a request with
     * a tail of t tokens is t steps further on than the engine's step */
    size_t P = (size_t)cfg->prompt_len, B = (size_t)cfg->batch,
           S = (size_t)cfg->steps + (P > 0) + (size_t)hlx_run_tail_max(cfg);
    double deadline = cfg->timeout_s > 0 ? cfg->timeout_s : 30.0, t0 = hlx_now_s();
    hlx_check_t *chk = calloc(1, sizeof(*chk));
    hlx_status_t st = HLX_OK, st2;
    size_t s, p, b;
    int *in = NULL;

    if (chk == NULL)
        return HLX_ERR_NOMEM;
    *chk_p = chk;
    chk->first = P > 0;
    chk->hashes = calloc((size_t)hlx_engine_size(eng), sizeof(uint64_t));
    if (chk->hashes == NULL)
        return HLX_ERR_NOMEM;
    if (hlx_engine_rank(eng) == 0) {
        /* The prompt goes through the reference token by token: every prompt step but the
         * last is only a KV append (its outputs are overwritten by the next). */
        st = hlx_ref_create_ckpt(m, hlx_engine_kv_dtype(eng), hlx_engine_w_dtype(eng),
                                 cfg->batch, cfg->context, cfg->steps + hlx_run_prompt_max(cfg),
                                 cfg->seed, cfg->ckpt, &chk->ref);
        chk->ref_hid = malloc(sizeof(double) * (S ? S : 1) * B * (size_t)m->hidden);
        chk->ref_lg  = malloc(sizeof(double) * (S ? S : 1) * B * (size_t)m->vocab);
        chk->ref_tok = malloc(sizeof(int) * (S ? S : 1) * B);
        in = malloc(sizeof(int) * B + sizeof(float) * (size_t)m->vocab +
                    hlx_sample_work_bytes(m->vocab));
        if (st == HLX_OK && (!chk->ref_hid || !chk->ref_lg || !chk->ref_tok || !in))
            st = HLX_ERR_NOMEM;
        if (st == HLX_OK && cfg->route_margin > 0)
            hlx_ref_set_route_margin(chk->ref, cfg->route_margin);
        if (st == HLX_OK && in != NULL) { /* each request's whole prompt, tail included */
            for (b = 0; b < B; b++)
                in[b] = hlx_run_prompt_len(cfg, (int)b);
            hlx_ref_set_prompt_lens(chk->ref, in);
        }
        for (p = 0; p + 1 < P && st == HLX_OK; p++) {
            for (b = 0; b < B; b++)
                in[b] = cfg->prompt[b * P + p];
            hlx_ref_set_tokens(chk->ref, in);
            st = hlx_ref_step(chk->ref, chk->ref_hid, chk->ref_lg, chk->ref_tok);
        }
        if (P > 0 && st == HLX_OK) {
            for (b = 0; b < B; b++)
                in[b] = cfg->prompt[b * P + P - 1];
            hlx_ref_set_tokens(chk->ref, in);
        }
        for (s = 0; s < S && st == HLX_OK; s++) {
            st = hlx_ref_step(chk->ref, chk->ref_hid + s * B * (size_t)m->hidden,
                              chk->ref_lg + s * B * (size_t)m->vocab, chk->ref_tok + s * B);
            /* Sampling: the same draw as the engine's, from the reference's logits. */
            if (st == HLX_OK && cfg->temperature > 0) {
                float *lf = (float *)(in + B);
                int v;
                for (b = 0; b < B; b++) {
                    for (v = 0; v < m->vocab; v++)
                        lf[v] = (float)chk->ref_lg[(s * B + b) * (size_t)m->vocab + v];
                    chk->ref_tok[s * B + b] = hlx_sample_token(
                        lf, m->vocab, cfg->temperature, cfg->top_p, cfg->seed, (int)b,
                        (int64_t)s - hlx_run_tail_len(cfg, (int)b), lf + m->vocab);
                }
                hlx_ref_set_tokens(chk->ref, chk->ref_tok + s * B);
            }
            /* a request still in its prompt's tail is fed its next prompt token (the
             * engine's prefill ran it); its draws count from its prompt's end */
            if (st == HLX_OK && cfg->tail_off != NULL) {
                for (b = 0; b < B; b++)
                    in[b] = (int)s < hlx_run_tail_len(cfg, (int)b)
                                ? cfg->tail[cfg->tail_off[b] + s] : chk->ref_tok[s * B + b];
                hlx_ref_set_tokens(chk->ref, in);
            }
        }
        if (st != HLX_OK)
            snprintf(err, errlen, "the fp64 reference failed on rank 0: %s", hlx_status_str(st));
        hlx_info(HLX_SUB_CORE, "reference: %zu prompt tokens and %zu steps in %.2f s", P,
                 (size_t)cfg->steps, hlx_now_s() - t0);
        if (st == HLX_OK) {
            char first[256];
            int64_t ties = hlx_ref_route_near_ties(chk->ref, first, sizeof(first));
            if (ties > 0)
                hlx_warn("check: %lld MoE routing choice(s) of the reference are near-ties "
                         "(within %g; first: %s): the engine's fp32 hidden state may choose "
                         "another expert there, and the tokens and errors from that step on "
                         "would reflect that choice, not a wrong sum", (long long)ties,
                         cfg->route_margin > 0 ? cfg->route_margin : HLX_REF_ROUTE_MARGIN,
                         first);
        }
        free(in);
    }
    st2 = hlx_comm_barrier_within(hlx_engine_world(eng), deadline + hlx_check_ref_seconds(eng));
    if (st == HLX_OK && st2 != HLX_OK)
        snprintf(err, errlen, "waiting for the reference on rank 0 failed: %s",
                 hlx_status_str(st2));
    return st != HLX_OK ? st : st2;
}

/* Largest |engine - reference| and |reference| over n values; non-finite engine values
 * count as an infinite error (fmax would silently drop a NaN). */
static void hlx_check_cmp(double *err, double *ref_max, int *nonfinite, double eng_v,
                          double ref_v)
{
    double d = fabs(eng_v - ref_v);

    if (!isfinite(eng_v) || !(d <= *err || d > *err)) {
        (*nonfinite)++;
        *err = INFINITY;
        return;
    }
    if (d > *err)
        *err = d;
    if (fabs(ref_v) > *ref_max)
        *ref_max = fabs(ref_v);
}

hlx_status_t hlx_check_step(hlx_engine_t *eng, hlx_check_t *chk, int s, hlx_run_report_t *rep)
{
    const hlx_run_config_t *cfg = hlx_engine_config(eng);
    const float *x = hlx_engine_hidden(eng);
    const int *tokens = hlx_engine_tokens(eng);
    int B = cfg->batch, H = hlx_engine_model(eng)->hidden, V = hlx_engine_model(eng)->vocab;
    int b, i, r;
    uint64_t h = 0x9e37, *hashes = chk->hashes;
    hlx_status_t st;

    /* Replicated state must be bitwise identical on every rank. */
    for (i = 0; i < B * H; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        h = hlx_mix64(h ^ u);
    }
    st = hlx_comm_allgather(hlx_engine_world(eng), &h, sizeof(h), hashes);
    if (st != HLX_OK)
        return st;
    for (r = 0; r < hlx_engine_size(eng); r++)
        if (hashes[r] != hashes[0])
            rep->replicas_match = 0;
    if (chk->ref == NULL)
        return HLX_OK;
    rep->route_near_ties = hlx_ref_route_near_ties(chk->ref, NULL, 0);
    s += chk->first;
    {
        double maxh = 0, maxl = 0, errh = 0, errl = 0;
        int bad = 0;

        for (b = 0; b < B; b++) {
            /* the reference's step of this request: its tail's steps further on */
            size_t rs = (size_t)(s + hlx_run_tail_len(cfg, b));
            const double *hid = chk->ref_hid + (rs * B + b) * H;
            const double *lg = chk->ref_lg + (rs * B + b) * V;
            for (i = 0; i < H; i++)
                hlx_check_cmp(&errh, &maxh, &bad, x[(size_t)b * H + i], hid[i]);
            for (i = 0; i < V; i++)
                hlx_check_cmp(&errl, &maxl, &bad, hlx_engine_logit(eng, b, i), lg[i]);
            if (chk->ref_tok[rs * B + b] != tokens[b])
                rep->tokens_match = 0;
        }
        rep->nonfinite += bad;
        if (bad) {
            rep->max_abs_err = rep->max_rel_err = INFINITY;
        } else {
            double abs_e = fmax(errh, errl);
            double rel_e = fmax(errh / (maxh > 0 ? maxh : 1e-30), errl / (maxl > 0 ? maxl : 1e-30));
            if (abs_e > rep->max_abs_err)
                rep->max_abs_err = abs_e;
            if (rel_e > rep->max_rel_err)
                rep->max_rel_err = rel_e;
        }
    }
    return HLX_OK;
}

/* Positions in [context, context + steps) owned by KVP rank j, in order. */
static int hlx_check_appended(const hlx_layout_t *L, int j, int64_t context, int steps,
                              int64_t *pos)
{
    int n = 0, t;

    for (t = 0; t < steps; t++)
        if (hlx_layout_kv_owner(L, context + t) == j)
            pos[n++] = context + t;
    return n;
}

hlx_status_t hlx_check_kv_rows(hlx_engine_t *eng, hlx_check_t *chk, hlx_run_report_t *rep)
{
    const hlx_model_t *m = hlx_engine_model(eng);
    const hlx_layout_t *L = hlx_engine_layout(eng);
    const hlx_run_config_t *cfg = hlx_engine_config(eng);
    /* every row appended in the run: the prefilled prompt, then the decode steps run (fewer
     * than planned when the run stopped at EOS); request b's prompt is its tail longer;
     * elements per cached K and V row (MLA: one row [c | k_rope], dv 0) */
    int dk = hlx_engine_kv_dim(eng, 1), dv = hlx_engine_kv_dim(eng, 0),
        run = hlx_engine_step_index(eng) + cfg->prompt_len,
        steps = run + hlx_run_tail_max(cfg);
    int B = cfg->batch;
    /* Every rank sends the same size: room for the largest KV head count of any shard.
     * A row is its dk + dv elements and a flag: 1 read, 0 overwritten in a ring. */
    size_t row = (size_t)(dk + dv) + 1,
           per_rank = (size_t)m->layers * B * L->kv_local_max * steps * row;
    int64_t *pos = malloc(sizeof(int64_t) * (size_t)(steps ? steps : 1));
    float *mine = calloc(per_rank ? per_rank : 1, sizeof(float)), *all = NULL;
    /* One step of the KV type apart at most (bf16: 2^-7 of the value, fp8 e4m3: 2^-3),
     * with room for two: the engine rounds its fp32 value, the reference its fp64 value,
     * and a value near the midpoint of two codes may go either way. */
    double tol = hlx_engine_kv_dtype(eng) == HLX_DTYPE_BF16  ? 1.0 / 64
                 : hlx_engine_kv_dtype(eng) == HLX_DTYPE_FP8 ? 1.0 / 4
                                                             : 1e-4;
    const int quant = hlx_engine_kv_dtype(eng) != HLX_DTYPE_F32;
    hlx_status_t st = HLX_OK;
    int n, l, b, kh, a, r, e;

    /* The transport has no gather: every rank receives all rows, rank 0 compares. */
    all = calloc(per_rank * (size_t)hlx_engine_size(eng) + 1, sizeof(float));
    if (!pos || !mine || !all) {
        st = HLX_ERR_NOMEM;
        goto out;
    }
    /* Pack this rank's appended rows as f32: [layer][b][kv_local][steps][dk + dv]. */
    for (b = 0; b < B; b++) {
        int nb = run + hlx_run_tail_len(cfg, b);
        int64_t kv_len = hlx_layout_kv_count(L, L->kvp_rank, cfg->context + nb);
        n = hlx_check_appended(L, L->kvp_rank, cfg->context, nb, pos);
        for (l = 0; l < m->layers; l++)
            for (kh = 0; kh < L->kv_local; kh++)
                for (a = 0; a < n; a++) {
                    size_t shard = (size_t)b * L->kv_local + kh, t = (size_t)(kv_len - n + a);
                    float *dst = mine + ((((size_t)l * B + b) * L->kv_local_max + kh) * steps + a) * row;
                    int64_t ring = hlx_engine_kv_ring(eng, l);
                    if (ring > 0 && (int64_t)t < kv_len - ring)
                        continue; /* flag 0 */
                    dst[dk + dv] = 1;
                    for (e = 0; e < dk; e++)
                        dst[e] = hlx_engine_kv_load(eng, l, 1, shard, t, e);
                    for (e = 0; e < dv; e++)
                        dst[dk + e] = hlx_engine_kv_load(eng, l, 0, shard, t, e);
                }
    }
    st = hlx_comm_allgather(hlx_engine_world(eng), mine, per_rank * sizeof(float), all);
    if (st != HLX_OK || chk->ref == NULL)
        goto out;
    for (r = 0; r < hlx_engine_size(eng); r++) {
        hlx_layout_t R;
        char lerr[256];
        if (hlx_layout_init(m, cfg->kvp, cfg->tpa, cfg->kv_block, r, &R, lerr,
                            sizeof(lerr)) != HLX_OK)
            continue;
        for (b = 0; b < B; b++) {
            n = hlx_check_appended(&R, R.kvp_rank, cfg->context,
                                   run + hlx_run_tail_len(cfg, b), pos);
            for (l = 0; l < m->layers; l++)
                for (kh = 0; kh < R.kv_local; kh++)
                    for (a = 0; a < n; a++) {
                        const float *got = all + (size_t)r * per_rank +
                                           ((((size_t)l * B + b) * R.kv_local_max + kh) * steps + a) * row;
                        const float *rk = hlx_ref_kv_row(chk->ref, l, b, R.kv_first + kh, pos[a], 1);
                        const float *rv = hlx_ref_kv_row(chk->ref, l, b, R.kv_first + kh, pos[a], 0);
                        double dmax = 0, vmax = 0;
                        if (got[dk + dv] != 1) {
                            rep->kv_rows_overwritten++;
                            continue;
                        }
                        if (rk == NULL || rv == NULL) {
                            rep->kv_rows_bad++;
                            continue;
                        }
                        for (e = 0; e < dk + dv; e++) {
                            double want = e < dk ? rk[e] : rv[e - dk], d = fabs(got[e] - want);
                            if (!(d <= dmax))
                                dmax = isfinite(d) ? d : INFINITY;
                            vmax = fmax(vmax, fabs(want));
                            /* both hold values of the KV type: any difference is a code */
                            rep->kv_elems_apart += quant && d > 0;
                        }
                        if (!(dmax <= tol * fmax(vmax, 1e-3))) {
                            if (rep->kv_rows_bad++ == 0)
                                hlx_error("check: KV row of position %lld (layer %d, request %d, "
                                          "KV head %d) appended on rank %d differs from the "
                                          "reference by %.3g (max |value| %.3g)",
                                          (long long)pos[a], l, b, R.kv_first + kh, r, dmax, vmax);
                        }
                        rep->kv_rows_checked++;
                    }
        }
    }
out:
    free(pos);
    free(mine);
    free(all);
    return st;
}

void hlx_check_free(hlx_check_t *chk)
{
    if (chk == NULL)
        return;
    hlx_ref_destroy(chk->ref);
    free(chk->ref_hid);
    free(chk->ref_lg);
    free(chk->ref_tok);
    free(chk->hashes);
    free(chk);
}
