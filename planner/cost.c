/* The planner's cost model: per-phase roofline max(bytes/HBM, flops/peak), alpha-beta
 * collectives per link class, HOP-B, pipeline stages and memory feasibility. Every
 * assumption is listed in docs/planner.md; the evaluation never allocates. */
#include "hlx_plan.h"

#include <math.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const char *const hlx_strategy_names[HLX_STRAT_COUNT] = {
    "tp", "pp", "dp-ep", "medha", "helix",
};

const char *hlx_strategy_name(hlx_strategy_t s)
{
    return (unsigned)s < HLX_STRAT_COUNT ? hlx_strategy_names[s] : "?";
}

int hlx_strategy_parse(const char *s, hlx_strategy_t *s_p)
{
    int i;

    for (i = 0; i < HLX_STRAT_COUNT; i++) {
        if (!strcmp(s, hlx_strategy_names[i])) {
            *s_p = (hlx_strategy_t)i;
            return 0;
        }
    }
    if (!strcmp(s, "dpep") || !strcmp(s, "dp")) {
        *s_p = HLX_STRAT_DPEP;
        return 0;
    }
    return -1;
}

static const hlx_param_t hlx_plan_params[] = {
    { "PLAN_HBM_RESERVE", HLX_PT_DOUBLE, "0.05", 0.0, 0.9,
      offsetof(hlx_plan_settings_t, hbm_reserve),
      "fraction of HBM kept back for the runtime, CUDA context and fragmentation", NULL },
    { "PLAN_ACT_BYTES", HLX_PT_DOUBLE, "2", 0.5, 4.0, offsetof(hlx_plan_settings_t, act_bytes),
      "bytes per activation element sent between GPUs (bf16 = 2)", NULL },
    { "PLAN_LSE_BYTES", HLX_PT_DOUBLE, "4", 0.0, 8.0, offsetof(hlx_plan_settings_t, lse_bytes),
      "bytes per (request, head) softmax statistic in the KVP combine (fp32 = 4)", NULL },
    { "PLAN_ACT_BUFFERS", HLX_PT_DOUBLE, "16", 0.0, 1e4,
      offsetof(hlx_plan_settings_t, act_buffers),
      "activation working set per GPU, in units of batch x hidden x act_bytes", NULL },
    { "PLAN_HOPB_CHUNKS", HLX_PT_INT, "0", 0, 1e6, offsetof(hlx_plan_settings_t, hopb_chunks),
      "most chunks HOP-B splits the batch into (0 = up to one per request)", NULL },
    { "PLAN_LOCKSTEP_PER_REQUEST", HLX_PT_INT, "0", 0, 1,
      offsetof(hlx_plan_settings_t, lockstep_per_request),
      "HOP-B off: 0 = one batched combine after attention; 1 = the paper's lockstep "
      "B x (c + m), one combine per request", NULL },
    { "HW_FILE", HLX_PT_STRING, "", 0, 0, offsetof(hlx_plan_settings_t, hw_file),
      "this machine as measured by `helix bench local` (empty: "
      "$XDG_CACHE_HOME/helix/hw-local.json or ~/.cache/helix/hw-local.json)", NULL },
};

const hlx_param_table_t hlx_plan_param_table = {
    "planner", hlx_plan_params, sizeof(hlx_plan_params) / sizeof(hlx_plan_params[0]),
    sizeof(hlx_plan_settings_t), NULL,
};

void hlx_plan_settings_default(hlx_plan_settings_t *set)
{
    set->hbm_reserve = 0.05;
    set->act_bytes   = 2.0;
    set->lse_bytes   = 4.0;
    set->act_buffers = 16.0;
    set->hopb_chunks = 0;
    set->lockstep_per_request = 0;
    set->hw_file[0] = '\0';
}

/* ---- the paper's Appendix A, as written ---- */

double hlx_plan_paper_tkv(double B, double K, double tpa, double hsz, double S, double kvp,
                          double bytes_kv, double membw_Bps)
{
    return B * 2.0 * ceil(K / tpa) * hsz * (S / kvp) * bytes_kv / membw_Bps;
}

double hlx_plan_paper_tw(double H, double Q, double K, double tpa, double hsz, double F,
                         double tpf, double bytes_w, double membw_Bps)
{
    return (2.0 * H * (Q / tpa) * hsz + 2.0 * H * ceil(K / tpa) * hsz + 3.0 * H * F / tpf) *
           bytes_w / membw_Bps;
}

/* ---- collectives ---- */

static inline int hlx_clog2(int n)
{
    return n <= 1 ? 0 : 32 - __builtin_clz((unsigned)(n - 1));
}

int hlx_coll_group_local(const hlx_plan_ctx_t *ctx, int n, int stride)
{
    int per;

    if (stride >= ctx->domain_gpus)
        return 1;
    per = ctx->domain_gpus / stride;
    return per >= n ? n : per;
}

/* Inside an NVLink domain every GPU reaches every other through the switches, so a
 * collective takes a fixed number of steps (all-reduce: reduce-scatter + all-gather = 2,
 * all-gather: 1) whatever the group size; across domains a tree / recursive doubling takes
 * ceil(log2 r) steps. The volume term is the bandwidth-optimal one (ring). Across domains:
 * reduce-scatter inside, all-reduce of 1/d across, all-gather inside. */
double hlx_coll_allreduce(const hlx_plan_ctx_t *ctx, int n, int d, double M)
{
    int r;
    double t = 0.0;

    if (n <= 1)
        return 0.0;
    r = (n + d - 1) / d;
    if (r <= 1)
        return 2.0 * ctx->a_in + 2.0 * (n - 1) / n * M / ctx->b_in;
    if (d > 1)
        t += 2.0 * (ctx->a_in + (double)(d - 1) / d * M / ctx->b_in);
    return t + 2.0 * hlx_clog2(r) * ctx->a_x + 2.0 * (r - 1) / r * (M / d) / ctx->b_x;
}

double hlx_coll_allgather(const hlx_plan_ctx_t *ctx, int n, int d, double M)
{
    int r;
    double t;

    if (n <= 1)
        return 0.0;
    r = (n + d - 1) / d;
    if (r <= 1)
        return ctx->a_in + (double)(n - 1) / n * M / ctx->b_in;
    t = hlx_clog2(r) * ctx->a_x + (double)(r - 1) / r * (M / d) / ctx->b_x;
    if (d > 1)
        t += ctx->a_in + (double)(d - 1) / d * M / ctx->b_in;
    return t;
}

/* All peers are sent to at once (one latency); the intra- and inter-domain shares move
 * concurrently over their own links. */
double hlx_coll_alltoall(const hlx_plan_ctx_t *ctx, int n, int d, double M)
{
    int r;
    double ti, tx;

    if (n <= 1)
        return 0.0;
    r = (n + d - 1) / d;
    if (r <= 1)
        return ctx->a_in + (double)(n - 1) / n * M / ctx->b_in;
    ti = d > 1 ? ctx->a_in + (double)(d - 1) / n * M / ctx->b_in : 0.0;
    tx = ctx->a_x + (double)(n - d) / n * M / ctx->b_x;
    return ti > tx ? ti : tx;
}

double hlx_plan_hopb(double c_total, double alpha, double beta_total, int B, int max_chunks)
{
    double best = c_total + alpha + beta_total; /* one chunk: lockstep */
    int kmax = B, k = 1;

    if (max_chunks > 0 && max_chunks < kmax)
        kmax = max_chunks;
    while (k < kmax) {
        double c, m, t;
        k = k * 2 < kmax ? k * 2 : kmax;
        c = c_total / k;
        m = alpha + beta_total / k;
        t = c + (k - 1) * (c > m ? c : m) + m;
        if (t < best)
            best = t;
    }
    return best;
}

/* ---- context ---- */

hlx_status_t hlx_plan_ctx_init(hlx_plan_ctx_t *ctx, const hlx_model_t *m,
                               const hlx_cluster_t *c, double context,
                               const hlx_plan_settings_t *set)
{
    const hlx_link_params_t *in, *x;
    int d;

    memset(ctx, 0, sizeof(*ctx));
    ctx->m = m;
    ctx->c = c;
    if (set)
        ctx->set = *set;
    else
        hlx_plan_settings_default(&ctx->set);
    if (!(context >= 1.0) || c->nnodes <= 0)
        return HLX_ERR_INVALID;
    ctx->context   = context;
    ctx->bw_hbm    = c->gpu.hbm_gbps * 1e9;
    ctx->peak_gemm = c->gpu.peak_tflops[m->weight_dtype] * 1e12;
    ctx->peak_attn = c->gpu.peak_tflops[m->kv_dtype] * 1e12;
    ctx->b_w       = hlx_dtype_bytes(m->weight_dtype);
    ctx->b_kv      = hlx_dtype_bytes(m->kv_dtype);
    ctx->b_plain   = m->plain & HLX_MODEL_PLAIN_HEAD ? hlx_dtype_bytes(m->plain_dtype) : ctx->b_w;
    ctx->b_attn    = m->plain & HLX_MODEL_PLAIN_ATTN ? ctx->b_plain : ctx->b_w;
    ctx->b_dense   = m->plain & HLX_MODEL_PLAIN_DENSE ? ctx->b_plain : ctx->b_w;
    ctx->b_expert  = m->plain & HLX_MODEL_PLAIN_EXPERTS ? ctx->b_plain : ctx->b_w;
    ctx->b_shared  = m->plain & HLX_MODEL_PLAIN_SHARED ? ctx->b_plain : ctx->b_w;
    ctx->kdim      = hlx_model_key_dim(m);
    ctx->vdim      = hlx_model_value_dim(m);
    /* MLA reads the latent once for keys and values; GQA reads K and V. The combine
     * carries one output vector per query head: the latent for absorbed MLA. */
    ctx->kv_elems_tok = m->attn == HLX_ATTN_MLA ? ctx->kdim : ctx->kdim + ctx->vdim;
    ctx->lat_dim      = ctx->vdim;
    ctx->domain_gpus  = c->total_gpus;
    for (d = 0; d < c->ndomains; d++) {
        int g = hlx_cluster_domain_gpus(c, d);
        if (g > 0 && g < ctx->domain_gpus)
            ctx->domain_gpus = g;
    }
    /* inside a node: NVLink, else shared memory between processes (a CPU host), else PCIe */
    ctx->intra = c->link[HLX_LINK_NVLINK].bw_gbps > 0 ? HLX_LINK_NVLINK
               : c->link[HLX_LINK_SHM].bw_gbps > 0    ? HLX_LINK_SHM
                                                      : HLX_LINK_PCIE;
    ctx->inter = c->link[HLX_LINK_RDMA].bw_gbps > 0 ? HLX_LINK_RDMA : HLX_LINK_TCP;
    in = &c->link[ctx->intra];
    x  = &c->link[ctx->inter];
    ctx->a_in = in->latency_us * 1e-6;
    ctx->b_in = in->bw_gbps > 0 ? in->bw_gbps * 1e9 : 1e-9;
    ctx->a_x  = x->latency_us * 1e-6;
    ctx->b_x  = x->bw_gbps > 0 ? x->bw_gbps * 1e9 : ctx->b_in;
    if (ctx->bw_hbm <= 0 || ctx->peak_gemm <= 0 || ctx->peak_attn <= 0)
        return HLX_ERR_INVALID;
    return HLX_OK;
}

/* ---- layout checks ---- */

#define HLX_BAD(...) \
    do { \
        if (err) \
            snprintf(err, errlen, __VA_ARGS__); \
        return HLX_ERR_INVALID; \
    } while (0)

hlx_status_t hlx_helix_split(int Q, int K, int dv, int kvp, int tpa, hlx_helix_split_t *s_p,
                             char *err, size_t errlen)
{
    hlx_helix_split_t s;
    int G, d;

    if (K < 1 || Q < K || Q % K != 0)
        HLX_BAD("q_heads %d is not a multiple of kv_heads %d", Q, K);
    if (kvp < 1 || tpa < 1)
        HLX_BAD("kvp and tpa must be at least 1");
    if (dv < 1)
        HLX_BAD("v_head_dim %d must be at least 1", dv);
    G = Q / K;
    if (tpa <= K) {
        s.kv_local_max = (K + tpa - 1) / tpa;
        s.q_local_max  = s.kv_local_max * G;
        s.q_local_min  = K / tpa * G;
        s.group        = G;
    } else {
        if (tpa % K != 0 || tpa / K > G)
            HLX_BAD("tpa %d past kv_heads %d must be a multiple of it and at most q_heads %d",
                    tpa, K, Q);
        s.kv_local_max = 1;
        s.q_local_max  = (G + tpa / K - 1) / (tpa / K);
        s.q_local_min  = G / (tpa / K);
        s.group        = s.q_local_max;
    }
    /* Every KVP rank must own a piece after the all-to-all: past a shard's heads, a head is
     * cut into pieces as the runtime cuts it (hlx_model_q_split) */
    d = hlx_model_q_split(s.q_local_min, s.q_local_max, kvp, dv);
    if (d == 0)
        HLX_BAD("q_heads %d over kvp %d x tpa %d: a TPA shard's %d query head(s) of %d values "
                "give at most %lld pieces, fewer than kvp", Q, kvp, tpa, s.q_local_min, dv,
                (long long)s.q_local_min * dv);
    s.q_split     = d;
    s.q_slice_max = (int)(((int64_t)s.q_local_max * d + kvp - 1) / kvp);
    *s_p = s;
    return HLX_OK;
}

hlx_status_t hlx_plan_check(const hlx_plan_ctx_t *ctx, const hlx_layout_t *l, char *err,
                            size_t errlen)
{
    const hlx_model_t *m = ctx->m;
    int64_t n64, nffn64, g64;
    int n, nffn, uneven;

    if (l->kvp < 1 || l->tpa < 1 || l->dp < 1 || l->tpf < 1 || l->ep < 1 || l->pp < 1 ||
        l->batch < 1)
        HLX_BAD("kvp, tpa, dp, tpf, ep, pp and batch must be at least 1");
    /* every product of layout sizes in 64 bits first: each factor is below 2^31 */
    n64 = (int64_t)l->kvp * l->tpa;
    if (n64 > HLX_PLAN_MAX_GPUS)
        HLX_BAD("kvp x tpa = %d x %d = %lld exceeds %d GPUs", l->kvp, l->tpa, (long long)n64,
                HLX_PLAN_MAX_GPUS);
    n64 *= l->dp;
    if (n64 > HLX_PLAN_MAX_GPUS)
        HLX_BAD("kvp x tpa x dp = %lld exceeds %d GPUs", (long long)n64, HLX_PLAN_MAX_GPUS);
    nffn64 = (int64_t)l->tpf * l->ep;
    if (nffn64 > HLX_PLAN_MAX_GPUS)
        HLX_BAD("tpf x ep = %d x %d = %lld exceeds %d GPUs", l->tpf, l->ep, (long long)nffn64,
                HLX_PLAN_MAX_GPUS);
    g64 = n64 * l->pp;
    if (g64 > HLX_PLAN_MAX_GPUS)
        HLX_BAD("kvp x tpa x dp x pp = %lld exceeds %d GPUs", (long long)g64, HLX_PLAN_MAX_GPUS);
    n = (int)n64;
    nffn = (int)nffn64;
    /* Helix over GQA runs uneven splits (the runtime cuts near-equal shares); the
     * others, and MLA, are modelled with even ones only. */
    uneven = l->strategy == HLX_STRAT_HELIX && m->attn == HLX_ATTN_GQA;
    if (uneven) {
        hlx_helix_split_t sp;
        if (hlx_helix_split(m->q_heads, m->kv_heads, hlx_model_value_dim(m), l->kvp, l->tpa,
                            &sp, err, errlen) != HLX_OK)
            return HLX_ERR_INVALID;
        /* a model whose every layer is MoE has no dense FFN to split (ffn 0) */
        if (n > m->hidden || (hlx_model_moe_layers(m) < m->layers && n > m->ffn) || n > m->vocab)
            HLX_BAD("N = %d GPUs is larger than hidden %d, ffn %d or vocab %d", n, m->hidden,
                    m->ffn, m->vocab);
    }
    if (!uneven && m->q_heads % l->tpa != 0)
        HLX_BAD("tpa %d does not divide q_heads %d", l->tpa, m->q_heads);
    if (!uneven && m->kv_heads % l->tpa != 0 && l->tpa % m->kv_heads != 0)
        HLX_BAD("tpa %d neither divides nor is a multiple of kv_heads %d", l->tpa, m->kv_heads);
    switch (l->strategy) {
    case HLX_STRAT_TP:
    case HLX_STRAT_PP:
        if (l->kvp != 1 || l->dp != 1)
            HLX_BAD("%s uses kvp = dp = 1", hlx_strategy_name(l->strategy));
        if (l->strategy == HLX_STRAT_TP && l->pp != 1)
            HLX_BAD("tp uses pp = 1 (use strategy pp)");
        if (l->strategy == HLX_STRAT_PP && l->pp < 2)
            HLX_BAD("pp needs pp >= 2 (pp = 1 is tp)");
        if (l->tpf != l->tpa || l->ep != 1)
            HLX_BAD("%s runs the FFN at the attention width: tpf = tpa = %d, ep = 1",
                    hlx_strategy_name(l->strategy), l->tpa);
        break;
    case HLX_STRAT_DPEP:
        if (l->kvp != 1 || l->tpa != 1 || l->pp != 1)
            HLX_BAD("dp-ep uses kvp = tpa = pp = 1 and dp attention groups");
        if (nffn != l->dp)
            HLX_BAD("dp-ep needs tpf x ep = dp (%d x %d != %d)", l->tpf, l->ep, l->dp);
        if (l->batch % l->dp != 0)
            HLX_BAD("dp-ep needs batch %d to be a multiple of dp %d", l->batch, l->dp);
        break;
    case HLX_STRAT_MEDHA:
        if (l->dp != 1 || l->pp != 1)
            HLX_BAD("medha uses dp = pp = 1");
        if (l->kvp < 2)
            HLX_BAD("medha needs kvp >= 2 (kvp = 1 is tp)");
        if (l->tpf != l->tpa || l->ep != 1)
            HLX_BAD("medha keeps the FFN at tp = tpa: tpf = %d, ep = 1", l->tpa);
        break;
    case HLX_STRAT_HELIX:
        if (l->dp != 1 || l->pp != 1)
            HLX_BAD("helix (as modelled) uses dp = pp = 1");
        if (nffn != n)
            HLX_BAD("helix re-uses the N = kvp x tpa = %d GPUs for the FFN: tpf x ep = %d",
                    n, nffn);
        if (!uneven && m->q_heads % n != 0)
            HLX_BAD("the combine gives each of the N = %d GPUs q_heads/N heads: %d %% %d != 0",
                    n, m->q_heads, n);
        /* MLA's latent cache is one KV head shared by every query head: TPA <= K = 1 (the
         * runtime's layout refuses the same). */
        if (m->attn == HLX_ATTN_MLA && l->tpa != 1)
            HLX_BAD("helix with MLA uses tpa = 1 (one latent KV head): tpa %d", l->tpa);
        break;
    default:
        HLX_BAD("unknown strategy");
    }
    if (l->kvp > ctx->context)
        HLX_BAD("kvp %d exceeds the context %.0f", l->kvp, ctx->context);
    if (l->pp > m->layers)
        HLX_BAD("pp %d exceeds layers %d", l->pp, m->layers);
    if (l->batch % l->pp != 0)
        HLX_BAD("batch %d is not a multiple of pp %d (one micro-batch per stage)", l->batch,
                l->pp);
    if (m->experts > 0) {
        /* Helix over GQA cuts an expert's columns (and the shared experts' and the dense
         * layers') in near-equal shares over TPF, as the runtime does (hlx_moe_layout_init):
         * Llama 4 Scout's 8192 over 40 ranks */
        if (m->experts % l->ep != 0)
            HLX_BAD("ep %d does not divide experts %d", l->ep, m->experts);
        if (!uneven && m->expert_ffn % l->tpf != 0)
            HLX_BAD("tpf %d does not divide expert_ffn %d", l->tpf, m->expert_ffn);
        if (uneven && l->tpf > m->expert_ffn)
            HLX_BAD("tpf %d exceeds expert_ffn %d (a rank without columns)", l->tpf,
                    m->expert_ffn);
        if (!uneven && hlx_model_moe_layers(m) < m->layers && m->ffn % nffn != 0)
            HLX_BAD("dense layers run at tp %d, which does not divide ffn %d", nffn, m->ffn);
    } else {
        if (l->ep != 1)
            HLX_BAD("ep %d needs an MoE model", l->ep);
        if (!uneven && m->ffn % l->tpf != 0)
            HLX_BAD("tpf %d does not divide ffn %d", l->tpf, m->ffn);
    }
    return HLX_OK;
}

/* ---- evaluation ---- */

/* A roofline phase: the slower of reading bytes from HBM and computing flops. */
static inline void hlx_roof(hlx_phase_t *p, double n, double bytes, double flops, double bw,
                            double peak)
{
    double tm = bytes / bw, tc = flops / peak;

    p->time_s += n * (tm > tc ? tm : tc);
    p->bytes += n * bytes;
    p->flops += n * flops;
    if (n > 0)
        p->bound = tm >= tc ? HLX_BOUND_MEMORY : HLX_BOUND_COMPUTE;
}

static inline void hlx_comm(hlx_phase_t *p, double n, double t, double bytes, hlx_link_t link)
{
    p->time_s += n * t;
    p->bytes += n * bytes;
    if (n > 0 && t > 0) {
        p->bound = HLX_BOUND_LINK;
        if (link > p->link)
            p->link = link;
    }
}

/* Costs of one layer's pieces, per GPU, for the micro-batch of one stage pass. */
typedef struct {
    double qkv_b, qkv_f, attn_b, attn_f, ac_t, comb_t, comb_bytes, hopb_saved;
    double wo_b, wo_f, wo_comm_t, wo_comm_bytes;
    double dn_b, dn_f, dn_comm_t, dn_comm_bytes;  /* dense FFN layer */
    double moe_b, moe_f, moe_comm_t, moe_comm_bytes;
    hlx_link_t comb_link, wo_link, ffn_link;
    double w_attn, w_dense, w_moe;                /* resident weight bytes per GPU */
} hlx_layer_cost_t;

static inline hlx_link_t hlx_group_link(const hlx_plan_ctx_t *ctx, int n, int d)
{
    return n <= 1 ? HLX_LINK_SELF : (d >= n ? ctx->intra : ctx->inter);
}

void hlx_plan_eval(const hlx_plan_ctx_t *ctx, const hlx_layout_t *l, hlx_plan_result_t *r)
{
    const hlx_model_t *m = ctx->m;
    const hlx_plan_settings_t *set = &ctx->set;
    const double H = m->hidden, Q = m->q_heads, K = m->kv_heads, S = ctx->context;
    const double act = set->act_bytes, bw = ctx->bw_hbm;
    const int mla = m->attn == HLX_ATTN_MLA;
    const int helix = l->strategy == HLX_STRAT_HELIX, dpep = l->strategy == HLX_STRAT_DPEP;
    const int medha = l->strategy == HLX_STRAT_MEDHA;
    const int N = l->kvp * l->tpa * l->dp, G = N * l->pp, nffn = l->tpf * l->ep;
    const double Bmb = (double)l->batch / l->pp;   /* requests per stage pass */
    const double Breq = Bmb / l->dp;               /* requests per attention rank */
    const int tpo = helix ? l->kvp * l->tpa : l->tpa;
    /* the busiest rank's shares: Q/TPA, ceil(K/TPA) and Q/TPo when the split is even;
     * Helix over GQA may split unevenly and cut heads into pieces past a shard's heads
     * (runtime/layout.c) */
    const int uneven = helix && !mla;
    hlx_helix_split_t sp;
    const int split_ok = uneven && hlx_helix_split(m->q_heads, m->kv_heads,
                                                   hlx_model_value_dim(m), l->kvp, l->tpa,
                                                   &sp, NULL, 0) == HLX_OK;
    const double qh = split_ok ? sp.q_local_max : Q / l->tpa, kvh = ceil(K / l->tpa);
    const double qs = split_ok ? sp.q_split : 1.0;             /* pieces per head */
    /* W_o heads per GPU: pieces of 1/qs head each, so a fraction past a shard's heads */
    const double qo = split_ok ? sp.q_slice_max / qs : Q / tpo;
    const double ffn_loc = uneven ? ceil((double)m->ffn / (l->tpf * l->ep))
                                  : (double)m->ffn / (l->tpf * l->ep);
    const double vocab_loc = uneven ? ceil((double)m->vocab / (l->tpf * l->ep))
                                    : (double)m->vocab / (l->tpf * l->ep);
    const double Btok_o = dpep ? Breq : Bmb;       /* tokens through W_o on one GPU */
    /* what attention reads of the context and the KV cache holds: less on windowed layers
     * (a window spread over the KVP ranks, its blocks round-robin like every position's;
     * the runtime keeps a windowed layer's KV in a ring of about the window) */
    const double S_read = ceil(hlx_model_attn_tokens(m, S) / l->kvp);
    hlx_layer_cost_t lc;
    double qkv_params, o_params, t_layer_attn, t_dense, t_moe, head_b, head_f, t_head;
    double emb_t = 0.0, emb_bytes = 0.0;
    int i, Ls, stage, lmax_dense = 0, lmax_moe = 0;
    double t_stage_max = 0.0, kv_bytes_layer, Lw;

    memset(r, 0, sizeof(*r));
    memset(&lc, 0, sizeof(lc));
    r->gpus = G;

    /* QKV projection: Q/TPA query heads and ceil(K/TPA) KV heads on each GPU, for every
     * request (the KVP ranks of one TPA shard all compute it: no query all-gather). */
    if (mla) {
        double qk = m->qk_nope_dim + m->qk_rope_dim;
        double q = m->q_lora_rank > 0 ? H * m->q_lora_rank + m->q_lora_rank * qh * qk
                                      : H * qh * qk;
        qkv_params = q + H * (m->kv_lora_rank + m->qk_rope_dim) +
                     qh * m->qk_nope_dim * m->kv_lora_rank; /* absorbed W_UK */
        o_params   = (Q / tpo) * m->v_head_dim * (m->kv_lora_rank + H); /* W_UV and W_o */
    } else {
        qkv_params = H * qh * m->head_dim + H * kvh * (m->head_dim + m->v_head_dim);
        o_params   = qo * m->v_head_dim * H;
    }
    lc.qkv_b = qkv_params * ctx->b_attn;
    lc.qkv_f = 2.0 * Breq * qkv_params;
    lc.w_attn = (qkv_params + o_params) * ctx->b_attn;

    /* Attention over the local shard: each request reads its KV heads once. */
    lc.attn_b = Breq * kvh * ctx->kv_elems_tok * S_read * ctx->b_kv;
    lc.attn_f = 2.0 * Breq * qh * S_read * (ctx->kdim + ctx->vdim);
    {
        double tm = lc.attn_b / bw, tc = lc.attn_f / ctx->peak_attn;
        double c_total = tm > tc ? tm : tc, alpha = 0.0, beta = 0.0;
        if (l->kvp > 1) {
            int d = hlx_coll_group_local(ctx, l->kvp, 1);
            /* each piece carries its head's LSE: qh x qs of them a request */
            double M = Breq * qh * (ctx->lat_dim * act + qs * set->lse_bytes);
            alpha = hlx_coll_alltoall(ctx, l->kvp, d, 0.0);
            beta  = hlx_coll_alltoall(ctx, l->kvp, d, M) - alpha;
            lc.comb_bytes = M * (l->kvp - 1) / l->kvp;
            if (medha) { /* every rank needs all Q/TPA merged heads for W_o at TPA */
                double ag0 = hlx_coll_allgather(ctx, l->kvp, d, 0.0);
                alpha += ag0;
                beta += hlx_coll_allgather(ctx, l->kvp, d, M) - ag0;
                lc.comb_bytes *= 2.0;
            }
            lc.comb_link = hlx_group_link(ctx, l->kvp, d);
        }
        {
            /* lockstep: one batched combine, or (the paper's B(c+m)) one per request */
            double lockstep = c_total +
                              (set->lockstep_per_request && l->kvp > 1 ? Breq : 1.0) * alpha +
                              beta;
            lc.comb_t = alpha + beta;
            lc.ac_t   = l->hopb && l->kvp > 1
                ? hlx_plan_hopb(c_total, alpha, beta, (int)Breq, set->hopb_chunks)
                : lockstep;
            lc.hopb_saved = lockstep - lc.ac_t;
        }
    }

    /* Post-attention projection at TP = tpo, then all-reduce (dp-ep: none). */
    lc.wo_b = o_params * ctx->b_attn;
    lc.wo_f = 2.0 * Btok_o * o_params;
    if (!dpep && tpo > 1) {
        int stride = medha ? l->kvp : 1, d = hlx_coll_group_local(ctx, tpo, stride);
        lc.wo_comm_t     = hlx_coll_allreduce(ctx, tpo, d, Bmb * H * act);
        lc.wo_comm_bytes = 2.0 * (tpo - 1) / tpo * Bmb * H * act;
        lc.wo_link       = hlx_group_link(ctx, tpo, d);
    }

    /* FFN layers on the nffn-wide group (medha and tp: the TPA group). */
    {
        int stride = medha ? l->kvp : 1, d = hlx_coll_group_local(ctx, nffn, stride);
        double Mx = Bmb * H * act;
        lc.ffn_link = hlx_group_link(ctx, nffn, d);
        /* the embedding in the head's vocabulary slices over this group: each GPU looks up
         * the rows it holds, one all-reduce of the step's rows puts every row on every GPU
         * (once per step, ahead of the first stage) */
        if (nffn > 1) {
            emb_t     = hlx_coll_allreduce(ctx, nffn, d, Mx);
            emb_bytes = 2.0 * (nffn - 1.0) / nffn * Mx;
        }
        if (hlx_model_moe_layers(m) < m->layers) {
            double p = hlx_model_ffn_mats(m) * H * ffn_loc; /* gate (not a plain MLP), up, down */
            lc.dn_b    = p * ctx->b_dense;
            lc.dn_f    = 2.0 * Bmb * p;
            lc.w_dense = p * ctx->b_dense;
            if (dpep) { /* gather every token, TP FFN, scatter the sums back */
                lc.dn_comm_t     = 2.0 * hlx_coll_allgather(ctx, nffn, d, Mx);
                lc.dn_comm_bytes = 2.0 * (nffn - 1.0) / nffn * Mx;
            } else {
                lc.dn_comm_t     = hlx_coll_allreduce(ctx, nffn, d, Mx);
                lc.dn_comm_bytes = 2.0 * (nffn - 1.0) / nffn * Mx;
            }
        }
        if (m->experts > 0) {
            const double E = m->experts, k = m->top_k, Fe = m->expert_ffn;
            const double e_loc = E / l->ep;
            /* Expected distinct experts a batch touches, routing uniform at random. */
            const double touched = e_loc * (1.0 - pow(1.0 - k / E, Bmb));
            /* one expert's slice, the busiest rank's under uneven shares */
            const double pe = 3.0 * H * (uneven ? ceil(Fe / l->tpf) : Fe / l->tpf);
            const double shared = 3.0 * H * Fe * m->shared_experts;
            const double router = H * E;
            const double tok_local = dpep ? Breq : Bmb;
            const double shared_w = dpep ? shared
                                    : uneven ? 3.0 * H * ceil(Fe * m->shared_experts / nffn)
                                             : shared / nffn;
            lc.moe_b = touched * pe * ctx->b_expert + shared_w * ctx->b_shared +
                       router * ctx->b_plain;
            lc.moe_f = 2.0 * (Bmb * k / l->ep) * pe + 2.0 * tok_local * (shared_w + router);
            lc.w_moe = e_loc * pe * ctx->b_expert + shared_w * ctx->b_shared +
                       router * ctx->b_plain;
            if (dpep) { /* dispatch tokens to their experts and combine the results */
                double M = Breq * k * H * act * l->tpf;
                lc.moe_comm_t     = 2.0 * hlx_coll_alltoall(ctx, nffn, d, M);
                lc.moe_comm_bytes = 2.0 * (nffn - 1.0) / nffn * M;
            } else {
                lc.moe_comm_t     = hlx_coll_allreduce(ctx, nffn, d, Mx);
                lc.moe_comm_bytes = 2.0 * (nffn - 1.0) / nffn * Mx;
            }
        }
    }

    /* LM head at TP over the FFN group; the argmax exchange is negligible. */
    head_b = vocab_loc * H * ctx->b_plain;
    head_f = 2.0 * Bmb * vocab_loc * H;
    {
        double tm = head_b / bw, tc = head_f / ctx->peak_gemm;
        t_head = tm > tc ? tm : tc;
    }

    /* Per-layer times. */
    {
        double t, tc;
        t  = lc.qkv_b / bw;
        tc = lc.qkv_f / ctx->peak_gemm;
        t_layer_attn = (t > tc ? t : tc) + lc.ac_t;
        t  = lc.wo_b / bw;
        tc = lc.wo_f / ctx->peak_gemm;
        t_layer_attn += (t > tc ? t : tc) + lc.wo_comm_t;
        t  = lc.dn_b / bw;
        tc = lc.dn_f / ctx->peak_gemm;
        t_dense = (t > tc ? t : tc) + lc.dn_comm_t;
        t  = lc.moe_b / bw;
        tc = lc.moe_f / ctx->peak_gemm;
        t_moe = (t > tc ? t : tc) + lc.moe_comm_t;
    }

    /* Stages: ceil(L/pp) layers each, dense or MoE as hlx_model_layer_moe says (dense ones
     * first, or interleaved under moe_step); the slowest stage paces the pipeline and a
     * token passes every stage once. */
    Ls = (m->layers + l->pp - 1) / l->pp;
    for (stage = 0; stage < l->pp; stage++) {
        int lo = stage * Ls, hi = lo + Ls < m->layers ? lo + Ls : m->layers;
        int nd = 0, nm, nl = hi - lo, li;
        double ts;
        if (nl <= 0)
            break;
        for (li = lo; li < hi; li++)
            nd += !hlx_model_layer_moe(m, li);
        nm = nl - nd;
        ts = nl * t_layer_attn + nd * t_dense + nm * t_moe + (hi == m->layers ? t_head : 0.0) +
             (lo == 0 ? emb_t : 0.0);
        if (ts > t_stage_max)
            t_stage_max = ts;
        if (nd > lmax_dense)
            lmax_dense = nd;
        if (nm > lmax_moe)
            lmax_moe = nm;
    }

    /* Phase totals over all layers of one decode step. */
    {
        const double L = m->layers, Lm = hlx_model_moe_layers(m), Ld = L - Lm;
        hlx_roof(&r->phase[HLX_PHASE_QKV], L, lc.qkv_b, lc.qkv_f, bw, ctx->peak_gemm);
        hlx_roof(&r->phase[HLX_PHASE_ATTN], L, lc.attn_b, lc.attn_f, bw, ctx->peak_attn);
        hlx_comm(&r->phase[HLX_PHASE_A2A], L, lc.ac_t - (r->phase[HLX_PHASE_ATTN].time_s / L),
                 lc.comb_bytes, lc.comb_link);
        hlx_roof(&r->phase[HLX_PHASE_OPROJ], L, lc.wo_b, lc.wo_f, bw, ctx->peak_gemm);
        hlx_comm(&r->phase[HLX_PHASE_OPROJ_AR], L, lc.wo_comm_t, lc.wo_comm_bytes, lc.wo_link);
        hlx_roof(&r->phase[HLX_PHASE_FFN], Ld, lc.dn_b, lc.dn_f, bw, ctx->peak_gemm);
        hlx_roof(&r->phase[HLX_PHASE_MOE], Lm, lc.moe_b, lc.moe_f, bw, ctx->peak_gemm);
        hlx_comm(&r->phase[HLX_PHASE_FFN_AR], Ld, lc.dn_comm_t, lc.dn_comm_bytes, lc.ffn_link);
        hlx_comm(&r->phase[HLX_PHASE_FFN_AR], Lm, lc.moe_comm_t, lc.moe_comm_bytes, lc.ffn_link);
        hlx_roof(&r->phase[HLX_PHASE_HEAD], 1, head_b, head_f, bw, ctx->peak_gemm);
        hlx_comm(&r->phase[HLX_PHASE_EMBED], 1, emb_t, emb_bytes, lc.ffn_link);
        r->hopb_saved_s = L * lc.hopb_saved;
    }

    if (l->pp > 1) {
        int cross = G > ctx->domain_gpus;
        double a = cross ? ctx->a_x : ctx->a_in, b = cross ? ctx->b_x : ctx->b_in;
        double hop = a + Bmb * H * act / b;
        hlx_comm(&r->phase[HLX_PHASE_PP], l->pp, hop, Bmb * H * act,
                 cross ? ctx->inter : ctx->intra);
        r->ttl_s = l->pp * (t_stage_max + hop);
    } else {
        r->ttl_s = t_stage_max;
    }
    r->tok_s_user = 1.0 / r->ttl_s;
    r->tok_s_gpu  = l->batch / (r->ttl_s * G);

    /* The paper's per-layer formulas for this layout (see hlx_plan_paper_*). */
    {
        double hsz = mla ? ctx->kdim : m->head_dim;
        double F = m->ffn > 0 ? m->ffn : (double)m->expert_ffn * (m->top_k + m->shared_experts);
        r->t_kv_s = hlx_plan_paper_tkv(Breq, K, l->tpa, hsz, S, l->kvp, ctx->b_kv, bw);
        r->t_w_s  = hlx_plan_paper_tw(H, Q, K, l->tpa, hsz, F, l->tpf, ctx->b_w, bw);
    }

    /* Memory per GPU on the fullest stage: all requests' KV for its layers. */
    Lw = Ls;
    kv_bytes_layer = (dpep ? (double)l->batch / l->dp : (double)l->batch) * kvh *
                     ctx->kv_elems_tok * S_read * ctx->b_kv;
    r->mem_weights = Lw * lc.w_attn + lmax_dense * lc.w_dense + lmax_moe * lc.w_moe +
                     (m->tie_embeddings ? 1.0 : 2.0) * head_b; /* embedding and head */
    r->mem_kv  = Lw * kv_bytes_layer;
    r->mem_act = set->act_buffers * Bmb * H * act + 2.0 * Breq * qh * (ctx->lat_dim + qs) * 4.0 +
                 (m->experts > 0 ? Bmb * m->top_k * H * act : 0.0);
    r->mem_usable = ctx->c->gpu.hbm_gib * 1073741824.0 * (1.0 - set->hbm_reserve);
    r->feasible = 1;
    if (G > ctx->c->total_gpus) {
        r->feasible = 0;
        r->why      = HLX_FEAS_GPUS;
    } else if (r->mem_weights + r->mem_kv + r->mem_act > r->mem_usable) {
        r->feasible = 0;
        r->why      = HLX_FEAS_MEMORY;
    }
    (void)i;
}

void hlx_plan_reason(const hlx_plan_result_t *r, char *buf, size_t len)
{
    const double gib = 1073741824.0;

    switch (r->why) {
    case HLX_FEAS_OK:
        snprintf(buf, len, "%s", "");
        break;
    case HLX_FEAS_GPUS:
        snprintf(buf, len, "needs %d GPUs, more than the cluster has", r->gpus);
        break;
    case HLX_FEAS_MEMORY:
        snprintf(buf, len,
                 "needs %.1f GiB per GPU (weights %.1f + KV %.1f + activations %.1f) but "
                 "%.1f GiB is usable; raise kvp or the GPU count, or shorten the context",
                 (r->mem_weights + r->mem_kv + r->mem_act) / gib, r->mem_weights / gib,
                 r->mem_kv / gib, r->mem_act / gib, r->mem_usable / gib);
        break;
    }
}

int hlx_layout_format(const hlx_layout_t *l, char *buf, size_t len)
{
    if (l->strategy == HLX_STRAT_DPEP)
        return snprintf(buf, len, "%s dp=%d tpf=%d ep=%d b=%d", hlx_strategy_name(l->strategy),
                        l->dp, l->tpf, l->ep, l->batch);
    return snprintf(buf, len, "%s kvp=%d tpa=%d tpf=%d ep=%d pp=%d b=%d%s",
                    hlx_strategy_name(l->strategy), l->kvp, l->tpa, l->tpf, l->ep, l->pp,
                    l->batch, l->hopb && l->kvp > 1 ? " hopb" : "");
}
