/* planner: each formula against hand-computed values, monotonicity, HOP-B, feasibility,
 * layout checks and Pareto marking. Expected numbers are worked out in the comments from
 * the model facts, not taken from the implementation's output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hlx_plan.h"

#define MIB_1M 1048576.0

static void assert_rel(double got, double want, double tol, const char *what)
{
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("%s: got %.12g, want %.12g", what, got, want);
}

typedef struct {
    hlx_model_t   m;
    hlx_cluster_t c;
    hlx_plan_ctx_t ctx;
} fixture_t;

static void fx_load(fixture_t *fx, const char *model, const char *cluster, double S)
{
    char err[1024];

    if (hlx_model_load(model, &fx->m, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    if (hlx_cluster_load(cluster, &fx->c, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    assert_int_equal(hlx_plan_ctx_init(&fx->ctx, &fx->m, &fx->c, S, NULL), HLX_OK);
}

static hlx_layout_t lay(hlx_strategy_t s, int kvp, int tpa, int tpf, int ep, int batch)
{
    hlx_layout_t l = { s, kvp, tpa, 1, tpf, ep, 1, batch, 0 };
    return l;
}

/* Appendix A, Figure 1 example: B 8, K 8, TPA 8, Hsz 128, S 1M, KVP 8, FP4, 8000 GB/s.
 * t_kv = 8*2*1*128*131072*0.5 / 8e12 = 134217728 / 8e12 s.
 * t_w  = (2*16384*16*128 + 2*16384*1*128 + 3*16384*65536/64) * 0.5 / 8e12
 *      = (67108864 + 4194304 + 50331648) * 0.5 / 8e12 = 60817408 / 8e12 s. */
static void test_paper_formulas(void **state)
{
    (void)state;
    assert_rel(hlx_plan_paper_tkv(8, 8, 8, 128, MIB_1M, 8, 0.5, 8e12), 134217728 / 8e12, 1e-12,
               "t_kv");
    assert_rel(hlx_plan_paper_tw(16384, 128, 8, 8, 128, 65536, 64, 0.5, 8e12), 60817408 / 8e12,
               1e-12, "t_w");
    /* TPA = 1: eight KV heads per GPU. */
    assert_rel(hlx_plan_paper_tkv(8, 8, 1, 128, MIB_1M, 8, 0.5, 8e12), 8 * 134217728 / 8e12,
               1e-12, "t_kv tpa 1");
    /* ceil(K/TPA): TPA 3 over K 8 keeps 3 heads per GPU. */
    assert_rel(hlx_plan_paper_tkv(1, 8, 3, 128, 1000, 1, 1, 1e12), 1 * 2 * 3 * 128 * 1000 / 1e12,
               1e-12, "t_kv ceil");
}

/* The planner reports the same formulas for the preset on the preset cluster. */
static void test_paper_via_eval(void **state)
{
    fixture_t fx;
    hlx_layout_t l = lay(HLX_STRAT_HELIX, 8, 8, 64, 1, 8);
    hlx_plan_result_t r;

    (void)state;
    fx_load(&fx, "helix-fig1", "gb200-nvl72", MIB_1M);
    assert_int_equal(hlx_plan_check(&fx.ctx, &l, NULL, 0), HLX_OK);
    hlx_plan_eval(&fx.ctx, &l, &r);
    assert_rel(r.t_kv_s, 134217728 / 8e12, 1e-12, "t_kv");
    assert_rel(r.t_w_s, 60817408 / 8e12, 1e-12, "t_w");
    hlx_cluster_free(&fx.c);
}

/* Llama-405B, TP 8, batch 1, 1M context, GB200 (8000 GB/s, NVLink 900 GB/s, 2 us):
 *  QKV  H*(16*128) + H*1*(128+128) = 16384*2304 = 37748736 params -> 18874368 B
 *  attn 1 request * 1 KV head * 256 * 1048576 * 0.5     = 134217728 B
 *  W_o  16*128*16384 = 33554432 params                 -> 16777216 B
 *  FFN  3*16384*53248/8 = 327155712 params             -> 163577856 B
 *  all-reduce of 1*16384*2 B over 8 in one domain: 2*2us + 2*(7/8)*32768/900e9, twice
 *  head 128256*16384/8 params                          -> 131334144 B
 *  embedding: the same all-reduce once per step (rows of the head's vocabulary slices)
 * all memory-bound (flops/peak is 1000x smaller). */
static void test_full_model_tp(void **state)
{
    fixture_t fx;
    hlx_layout_t l = lay(HLX_STRAT_TP, 1, 8, 8, 1, 1);
    hlx_plan_result_t r;
    double ar = 4e-6 + 2.0 * 7.0 / 8.0 * 32768 / 900e9;
    double layer = (18874368.0 + 134217728.0 + 16777216.0 + 163577856.0) / 8e12 + 2 * ar;
    double ttl = 126 * layer + 131334144.0 / 8e12 + ar;

    (void)state;
    fx_load(&fx, "llama-405b", "gb200-nvl72", MIB_1M);
    assert_int_equal(hlx_plan_check(&fx.ctx, &l, NULL, 0), HLX_OK);
    hlx_plan_eval(&fx.ctx, &l, &r);
    assert_rel(r.phase[HLX_PHASE_QKV].bytes, 126 * 18874368.0, 1e-12, "qkv bytes");
    assert_rel(r.phase[HLX_PHASE_ATTN].bytes, 126 * 134217728.0, 1e-12, "attn bytes");
    assert_rel(r.phase[HLX_PHASE_OPROJ].bytes, 126 * 16777216.0, 1e-12, "w_o bytes");
    assert_rel(r.phase[HLX_PHASE_FFN].bytes, 126 * 163577856.0, 1e-12, "ffn bytes");
    assert_rel(r.phase[HLX_PHASE_OPROJ_AR].time_s, 126 * ar, 1e-12, "all-reduce");
    assert_rel(r.phase[HLX_PHASE_EMBED].time_s, ar, 1e-12, "embedding all-reduce");
    assert_int_equal(r.phase[HLX_PHASE_EMBED].link, HLX_LINK_NVLINK);
    assert_int_equal(r.phase[HLX_PHASE_ATTN].bound, HLX_BOUND_MEMORY);
    assert_int_equal(r.phase[HLX_PHASE_OPROJ_AR].bound, HLX_BOUND_LINK);
    assert_int_equal(r.phase[HLX_PHASE_OPROJ_AR].link, HLX_LINK_NVLINK);
    assert_rel(r.phase[HLX_PHASE_A2A].time_s + 1.0, 1.0, 1e-15, "no combine at kvp 1");
    assert_rel(r.ttl_s, ttl, 1e-9, "ttl");
    assert_rel(r.tok_s_user, 1.0 / ttl, 1e-9, "tokens/s/user");
    assert_rel(r.tok_s_gpu, 1.0 / (ttl * 8), 1e-9, "tokens/s/gpu");
    assert_true(r.feasible);
    hlx_cluster_free(&fx.c);
}

/* DeepSeek-R1 MoE layer at TPF = EP = 1, batch 1: top-8 of 256 touches 8 experts, plus the
 * shared expert and the 7168 x 256 router, FP4:
 *   (8*3*7168*2048 + 3*7168*2048 + 7168*256) * 0.5 = 199098368 B;
 * batch 2: 256 * (1 - (31/32)^2) = 15.75 experts expected.
 * The three dense layers: 3*7168*18432*0.5 = 198180864 B. MLA reads 576 latent+rope
 * elements per token once: 1 * 576 * 1048576 * 0.5 B per layer. */
static void test_moe_mla(void **state)
{
    fixture_t fx;
    hlx_layout_t l = lay(HLX_STRAT_HELIX, 1, 1, 1, 1, 1);
    hlx_plan_result_t r;
    double pe = 3.0 * 7168 * 2048, dense = 198180864.0;

    (void)state;
    fx_load(&fx, "deepseek-r1", "gb200-nvl72", MIB_1M);
    assert_int_equal(hlx_plan_check(&fx.ctx, &l, NULL, 0), HLX_OK);
    hlx_plan_eval(&fx.ctx, &l, &r);
    /* the dense layers in the ffn phase, the MoE layers in the moe phase */
    assert_rel(r.phase[HLX_PHASE_FFN].bytes, 3 * dense, 1e-12, "ffn b=1");
    assert_rel(r.phase[HLX_PHASE_MOE].bytes, 58 * 199098368.0, 1e-12, "moe b=1");
    assert_rel(r.phase[HLX_PHASE_ATTN].bytes, 61 * 576 * MIB_1M * 0.5, 1e-12, "mla kv");
    /* one latent KV head: helix runs MLA with tpa 1, as the runtime's layout does */
    l.tpa = 2;
    l.tpf = 2;
    assert_int_equal(hlx_plan_check(&fx.ctx, &l, NULL, 0), HLX_ERR_INVALID);
    l.tpa = l.tpf = 1;
    l.batch = 2;
    hlx_plan_eval(&fx.ctx, &l, &r);
    assert_rel(r.phase[HLX_PHASE_MOE].bytes + r.phase[HLX_PHASE_FFN].bytes,
               58 * (15.75 * pe + pe + 7168 * 256.0) * 0.5 + 3 * dense, 1e-12, "ffn b=2");
    /* EP 8 x TPF 1 over N = 8: 32 experts per GPU, batch 2 touches 32*(63/1024) of them. */
    l = lay(HLX_STRAT_HELIX, 8, 1, 1, 8, 2);
    assert_int_equal(hlx_plan_check(&fx.ctx, &l, NULL, 0), HLX_OK);
    hlx_plan_eval(&fx.ctx, &l, &r);
    assert_rel(r.phase[HLX_PHASE_MOE].bytes + r.phase[HLX_PHASE_FFN].bytes,
               58 * (32 * 63.0 / 1024 * pe + pe / 8 + 7168 * 256.0) * 0.5 + 3 * dense / 8,
               1e-12, "ffn ep 8");
    hlx_cluster_free(&fx.c);
}

/* Qwen3-235B-A22B: GQA attention, every layer MoE (ffn 0), bf16. N = KVP 16 x TPA 4 = 64
 * ranks exceed the dense FFN's 0 columns, which no layer has: the layout is valid (it was
 * refused). EP 64: 2 experts per GPU, batch 1 touches 2 x 8/128 of them, plus the router:
 *   (0.125 x 3 x 4096 x 1536 + 4096 x 128) x 2 B per layer, 94 layers; no dense FFN. */
static void test_moe_gqa(void **state)
{
    fixture_t fx;
    hlx_layout_t l = lay(HLX_STRAT_HELIX, 16, 4, 1, 64, 1);
    hlx_plan_result_t r;

    (void)state;
    fx_load(&fx, "qwen3-235b-a22b", "gb200-nvl72", MIB_1M);
    assert_int_equal(hlx_plan_check(&fx.ctx, &l, NULL, 0), HLX_OK);
    hlx_plan_eval(&fx.ctx, &l, &r);
    assert_rel(r.phase[HLX_PHASE_MOE].bytes,
               94 * (0.125 * 3 * 4096 * 1536 + 4096 * 128.0) * 2, 1e-12, "moe ep 64");
    assert_rel(r.phase[HLX_PHASE_FFN].bytes + 1.0, 1.0, 1e-15, "no dense ffn");
    assert_true(r.feasible);
    hlx_cluster_free(&fx.c);
}

/* Llama 4's interleaved MoE (moe_step 2) on Qwen3-235B-A22B's shapes with a dense ffn of
 * 12288: layers 1, 3, ..., 93 MoE (47 of the moe_gqa figure above), the other 47 dense at
 * TP 64, 3 x 4096 x 12288 / 64 bf16 weights each. */
static void test_moe_step(void **state)
{
    fixture_t fx;
    hlx_layout_t l = lay(HLX_STRAT_HELIX, 16, 4, 1, 64, 1);
    hlx_plan_result_t r;

    (void)state;
    fx_load(&fx, "qwen3-235b-a22b", "gb200-nvl72", MIB_1M);
    fx.m.moe_step = 2;
    fx.m.ffn = 12288;
    assert_int_equal(hlx_plan_ctx_init(&fx.ctx, &fx.m, &fx.c, MIB_1M, NULL), HLX_OK);
    assert_int_equal(hlx_plan_check(&fx.ctx, &l, NULL, 0), HLX_OK);
    hlx_plan_eval(&fx.ctx, &l, &r);
    assert_rel(r.phase[HLX_PHASE_MOE].bytes,
               47 * (0.125 * 3 * 4096 * 1536 + 4096 * 128.0) * 2, 1e-12, "moe layers");
    assert_rel(r.phase[HLX_PHASE_FFN].bytes, 47 * 3.0 * 4096 * 12288 / 64 * 2, 1e-12,
               "dense layers");
    hlx_cluster_free(&fx.c);
}

/* Helix cuts an expert's columns unevenly over TPF, as the runtime does: Qwen3-235B-A22B's
 * 1536 over TPF 5 (KVP 5 x TPA 2, EP 2) is planned with the busiest rank's 308 columns, 4 of
 * its 64 experts touched by one request's top-8. */
static void test_moe_uneven_tpf(void **state)
{
    fixture_t fx;
    hlx_layout_t l = lay(HLX_STRAT_HELIX, 5, 2, 5, 2, 1);
    hlx_plan_result_t r;
    char err[256] = "";

    (void)state;
    fx_load(&fx, "qwen3-235b-a22b", "gb200-nvl72", MIB_1M);
    assert_int_equal(hlx_plan_check(&fx.ctx, &l, err, sizeof(err)), HLX_OK);
    hlx_plan_eval(&fx.ctx, &l, &r);
    assert_rel(r.phase[HLX_PHASE_MOE].bytes, 94 * (4 * 3.0 * 4096 * 308 + 4096 * 128.0) * 2,
               1e-12, "moe, 308 of 1536 columns");
    /* fewer columns than TPF ranks: one would hold none */
    fx.m.expert_ffn = 4;
    assert_int_equal(hlx_plan_ctx_init(&fx.ctx, &fx.m, &fx.c, MIB_1M, NULL), HLX_OK);
    assert_int_equal(hlx_plan_check(&fx.ctx, &l, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "tpf 5 exceeds expert_ffn 4"));
    hlx_cluster_free(&fx.c);
}

/* Collectives with the preset links. GB200: one 72-GPU domain, 2 us, 900 GB/s.
 * HGX H200: 8-GPU domains, NVLink 2 us 450 GB/s, RDMA 5 us 50 GB/s. */
static void test_collectives(void **state)
{
    fixture_t a, b;
    double M = 1e6;

    (void)state;
    fx_load(&a, "llama-405b", "gb200-nvl72", MIB_1M);
    fx_load(&b, "llama-405b", "hgx-h200", MIB_1M);
    assert_int_equal(a.ctx.domain_gpus, 72);
    assert_int_equal(b.ctx.domain_gpus, 8);
    assert_rel(hlx_coll_allreduce(&a.ctx, 8, 8, M), 4e-6 + 2 * 7.0 / 8 * M / 900e9, 1e-12, "ar");
    assert_rel(hlx_coll_allgather(&a.ctx, 64, 64, M), 2e-6 + 63.0 / 64 * M / 900e9, 1e-12, "ag");
    assert_rel(hlx_coll_alltoall(&a.ctx, 4, 4, M), 2e-6 + 3.0 / 4 * M / 900e9, 1e-12, "a2a");
    assert_true(hlx_coll_allreduce(&a.ctx, 1, 1, M) == 0.0);
    /* 16 GPUs over two H200 nodes: reduce-scatter + all-gather inside (2 x (2us +
     * 7/8 M / 450e9)), all-reduce of M/8 between the two (2 x 1 step x 5us + 2 x 1/2 x
     * M/8 / 50e9). */
    assert_rel(hlx_coll_allreduce(&b.ctx, 16, 8, M),
               2 * (2e-6 + 7.0 / 8 * M / 450e9) + 2 * 5e-6 + 2 * 0.5 * (M / 8) / 50e9, 1e-12,
               "ar 2 nodes");
    /* all-to-all: 7/16 of M over NVLink, 8/16 over RDMA concurrently: the RDMA share wins */
    assert_rel(hlx_coll_alltoall(&b.ctx, 16, 8, M), 5e-6 + 0.5 * M / 50e9, 1e-12, "a2a 2 nodes");
    assert_int_equal(hlx_coll_group_local(&b.ctx, 16, 1), 8);
    assert_int_equal(hlx_coll_group_local(&b.ctx, 8, 8), 1);
    assert_int_equal(hlx_coll_group_local(&b.ctx, 4, 2), 4);
    assert_int_equal(hlx_coll_group_local(&a.ctx, 64, 1), 64);
    hlx_cluster_free(&a.c);
    hlx_cluster_free(&b.c);
}

/* The paper's HOP-B example: B 8, c 2, m 1.2 per request: 25.6 lockstep, 17.2 pipelined. */
static void test_hopb(void **state)
{
    int i;

    (void)state;
    assert_rel(hlx_plan_hopb(16.0, 0.0, 9.6, 8, 0), 17.2, 1e-12, "paper example");
    assert_rel(hlx_plan_hopb(16.0, 0.0, 9.6, 8, 1), 25.6, 1e-12, "one chunk is lockstep");
    srand(7);
    for (i = 0; i < 10000; i++) {
        double c = rand() / (double)RAND_MAX * 100, a = rand() / (double)RAND_MAX * 10;
        double b = rand() / (double)RAND_MAX * 100;
        int B = 1 + rand() % 512;
        double t = hlx_plan_hopb(c, a, b, B, 0);
        assert_true(t <= c + a + b + 1e-12);       /* never slower than lockstep */
        assert_true(t >= c - 1e-12 && t >= a + b / B - 1e-12); /* and no free lunch */
    }
}

/* In the full model too: HOP-B on is never slower, for every Helix/Medha layout. */
static void test_hopb_eval(void **state)
{
    fixture_t fx;
    int kvp, tpa, b;

    (void)state;
    fx_load(&fx, "llama-405b", "hgx-h200", 262144);
    for (kvp = 2; kvp <= 64; kvp *= 2)
        for (tpa = 1; kvp * tpa <= 64; tpa *= 2)
            for (b = 1; b <= 256; b *= 4) {
                hlx_layout_t l = lay(HLX_STRAT_HELIX, kvp, tpa, kvp * tpa, 1, b);
                hlx_plan_result_t on, off;
                assert_int_equal(hlx_plan_check(&fx.ctx, &l, NULL, 0), HLX_OK);
                hlx_plan_eval(&fx.ctx, &l, &off);
                l.hopb = 1;
                hlx_plan_eval(&fx.ctx, &l, &on);
                assert_true(on.ttl_s <= off.ttl_s);
                assert_true(on.hopb_saved_s >= 0);
                assert_rel(off.ttl_s - on.ttl_s + 1.0, on.hopb_saved_s + 1.0, 1e-9, "saved");
            }
    hlx_cluster_free(&fx.c);
}

/* KV read: flat in TPA once TPA >= K, linear in S, divided by KVP (paper and full model). */
static void test_monotonic(void **state)
{
    fixture_t fx, fx2;
    hlx_plan_result_t r, r2;
    double base;
    int tpa, kvp;

    (void)state;
    fx_load(&fx, "llama-405b", "gb200-nvl72", 131072);
    fx_load(&fx2, "llama-405b", "gb200-nvl72", 262144);
    for (tpa = 8; tpa <= 64; tpa *= 2) {
        hlx_layout_t l = lay(HLX_STRAT_TP, 1, tpa, tpa, 1, 4);
        hlx_plan_eval(&fx.ctx, &l, &r);
        if (tpa == 8)
            base = r.t_kv_s;
        assert_rel(r.t_kv_s, base, 1e-12, "t_kv flat past K");
        assert_rel(r.phase[HLX_PHASE_ATTN].bytes, 4 * 126 * 256.0 * 131072 * 0.5, 1e-12,
                   "attn bytes flat past K");
        hlx_plan_eval(&fx2.ctx, &l, &r2);
        assert_rel(r2.t_kv_s, 2 * r.t_kv_s, 1e-12, "t_kv linear in S");
        assert_rel(r2.phase[HLX_PHASE_ATTN].time_s, 2 * r.phase[HLX_PHASE_ATTN].time_s, 1e-12,
                   "attention linear in S");
    }
    {   /* below K, TPA does divide KV traffic */
        hlx_layout_t l4 = lay(HLX_STRAT_TP, 1, 4, 4, 1, 4), l8 = lay(HLX_STRAT_TP, 1, 8, 8, 1, 4);
        hlx_plan_eval(&fx.ctx, &l4, &r);
        hlx_plan_eval(&fx.ctx, &l8, &r2);
        assert_rel(r.t_kv_s, 2 * r2.t_kv_s, 1e-12, "t_kv halves up to K");
    }
    for (kvp = 1; kvp <= 64; kvp *= 2) {
        hlx_layout_t l = lay(HLX_STRAT_HELIX, kvp, 1, kvp, 1, 4);
        hlx_plan_eval(&fx.ctx, &l, &r);
        if (kvp == 1)
            base = r.phase[HLX_PHASE_ATTN].time_s;
        assert_rel(r.phase[HLX_PHASE_ATTN].time_s, base / kvp, 1e-12, "attention / kvp");
        assert_rel(r.t_kv_s, 4 * 2 * 8 * 128 * 131072.0 / kvp * 0.5 / 8e12, 1e-12, "t_kv / kvp");
    }
    hlx_cluster_free(&fx.c);
    hlx_cluster_free(&fx2.c);
}

static void test_infeasible(void **state)
{
    fixture_t fx;
    hlx_plan_result_t r;
    hlx_layout_t l = lay(HLX_STRAT_TP, 1, 8, 8, 1, 64);
    char why[512];

    (void)state;
    fx_load(&fx, "llama-405b", "gb200-nvl72", MIB_1M);
    /* 64 requests x 126 layers x 1 KV head x 256 x 1M x 0.5 B = 1082 GB per GPU */
    hlx_plan_eval(&fx.ctx, &l, &r);
    assert_false(r.feasible);
    assert_int_equal(r.why, HLX_FEAS_MEMORY);
    assert_rel(r.mem_kv, 64 * 126 * 256.0 * MIB_1M * 0.5, 1e-12, "kv bytes");
    hlx_plan_reason(&r, why, sizeof(why));
    assert_non_null(strstr(why, "GiB per GPU"));
    assert_non_null(strstr(why, "usable"));
    assert_non_null(strstr(why, "kvp"));
    /* KVP 8 shards it: 64 x 126 x 256 x 131072 x 0.5 B = 135 GB, fits in 176.7 GiB */
    l = lay(HLX_STRAT_HELIX, 8, 8, 64, 1, 64);
    hlx_plan_eval(&fx.ctx, &l, &r);
    assert_true(r.feasible);
    hlx_plan_reason(&r, why, sizeof(why));
    assert_string_equal(why, "");
    hlx_cluster_free(&fx.c);
    /* 128 GPUs on a 72-GPU cluster */
    fx_load(&fx, "llama-405b", "hgx-h200", 65536);
    l = lay(HLX_STRAT_HELIX, 16, 8, 128, 1, 1);
    assert_int_equal(hlx_plan_check(&fx.ctx, &l, NULL, 0), HLX_OK);
    hlx_plan_eval(&fx.ctx, &l, &r);
    assert_false(r.feasible);
    assert_int_equal(r.why, HLX_FEAS_GPUS);
    hlx_plan_reason(&r, why, sizeof(why));
    assert_non_null(strstr(why, "128 GPUs"));
    hlx_cluster_free(&fx.c);
}

/* A window on every layer (Mistral-7B-v0.1: 4096): KV memory and reads count the window's
 * positions, not the context's. 8 requests x 32 layers x 8 KV heads x (128 + 128) x 4096 x
 * 2 B (bf16) = 4 GiB at S 1M on one GPU; KVP 2 halves the window per GPU; without the
 * window the same layout holds 1M / 4096 = 256 times more. */
static void test_window_memory(void **state)
{
    fixture_t fx;
    hlx_plan_result_t r, r2, r0;
    hlx_layout_t l1 = lay(HLX_STRAT_HELIX, 1, 1, 1, 1, 8), l2 = lay(HLX_STRAT_HELIX, 2, 1, 2, 1, 8);

    (void)state;
    fx_load(&fx, "mistral-7b-v0.1", "gb200-nvl72", MIB_1M);
    hlx_plan_eval(&fx.ctx, &l1, &r);
    assert_rel(r.mem_kv, 8.0 * 32 * 8 * 256 * 4096 * 2, 1e-12, "kv bytes, window");
    assert_true(r.feasible);
    hlx_plan_eval(&fx.ctx, &l2, &r2);
    assert_rel(r2.mem_kv, 8.0 * 32 * 8 * 256 * 2048 * 2, 1e-12, "kv bytes, window, KVP 2");
    fx.m.sliding_window = 0;
    assert_int_equal(hlx_plan_ctx_init(&fx.ctx, &fx.m, &fx.c, MIB_1M, NULL), HLX_OK);
    hlx_plan_eval(&fx.ctx, &l1, &r0);
    assert_rel(r0.mem_kv, 256.0 * r.mem_kv, 1e-12, "kv bytes, no window");
    assert_false(r0.feasible);
    hlx_cluster_free(&fx.c);
}

/* mistral-7b-v0.1 at KVP 2 x TPA 2 (bf16, TP 2 for the projections) planned as loaded and
 * with the model flag at byte offset flag set to 1: the weights per GPU drop by `bytes`,
 * the KV not at all. */
static void assert_flag_drops_weights(size_t flag, double bytes, const char *what)
{
    fixture_t fx;
    hlx_plan_result_t r, rf;
    hlx_layout_t l = lay(HLX_STRAT_HELIX, 1, 2, 2, 1, 1);

    fx_load(&fx, "mistral-7b-v0.1", "gb200-nvl72", 65536);
    hlx_plan_eval(&fx.ctx, &l, &r);
    *(int *)((char *)&fx.m + flag) = 1;
    assert_int_equal(hlx_plan_ctx_init(&fx.ctx, &fx.m, &fx.c, 65536, NULL), HLX_OK);
    hlx_plan_eval(&fx.ctx, &l, &rf);
    assert_rel(r.mem_weights - rf.mem_weights, bytes, 1e-9, what);
    assert_rel(rf.mem_kv, r.mem_kv, 1e-12, what);
    hlx_cluster_free(&fx.c);
}

/* A tied head (tie_embeddings) holds one vocab x hidden matrix where an untied model holds
 * two: the weights per GPU differ by that matrix's share, the KV not at all. */
static void test_tied_head(void **state)
{
    (void)state;
    assert_flag_drops_weights(offsetof(hlx_model_t, tie_embeddings), 32000.0 * 4096 / 2 * 2,
                              "tied head (bf16, TP 2)");
}

/* A plain MLP (ffn_kind mlp: StarCoder2) holds up and down, no gate: each dense layer's
 * weights per GPU are one H x ffn / TPF matrix fewer than a gated FFN's. */
static void test_plain_mlp(void **state)
{
    (void)state;
    assert_flag_drops_weights(offsetof(hlx_model_t, ffn_plain), 32.0 * 4096 * 14336 / 2 * 2,
                              "plain MLP (bf16, TP 2)");
}

static void expect_bad(const hlx_plan_ctx_t *ctx, hlx_layout_t l, const char *msg)
{
    char err[256] = "";

    assert_int_equal(hlx_plan_check(ctx, &l, err, sizeof(err)), HLX_ERR_INVALID);
    if (strstr(err, msg) == NULL)
        fail_msg("expected \"%s\" in \"%s\"", msg, err);
}

static void test_layout_checks(void **state)
{
    fixture_t fx;
    hlx_layout_t l;

    (void)state;
    fx_load(&fx, "llama-405b", "gb200-nvl72", MIB_1M);
    expect_bad(&fx.ctx, lay(HLX_STRAT_TP, 1, 3, 3, 1, 1), "tpa 3 does not divide q_heads 128");
    expect_bad(&fx.ctx, lay(HLX_STRAT_HELIX, 4, 2, 4, 1, 1), "tpf x ep = 4");
    expect_bad(&fx.ctx, lay(HLX_STRAT_HELIX, 2, 1, 1, 2, 1), "ep 2 needs an MoE model");
    expect_bad(&fx.ctx, lay(HLX_STRAT_MEDHA, 1, 8, 8, 1, 1), "medha needs kvp >= 2");
    expect_bad(&fx.ctx, lay(HLX_STRAT_TP, 2, 8, 8, 1, 1), "tp uses kvp = dp = 1");
    l = lay(HLX_STRAT_PP, 1, 8, 8, 1, 3);
    l.pp = 2;
    expect_bad(&fx.ctx, l, "batch 3 is not a multiple of pp 2");
    l = lay(HLX_STRAT_DPEP, 1, 1, 4, 1, 6);
    l.dp = 4;
    expect_bad(&fx.ctx, l, "batch 6 to be a multiple of dp 4");
    l = lay(HLX_STRAT_HELIX, 0, 1, 1, 1, 1);
    expect_bad(&fx.ctx, l, "at least 1");
    hlx_cluster_free(&fx.c);
}

/* No Pareto point is dominated, and every other feasible point is (weakly) dominated by a
 * Pareto point of its own strategy. */
/* Uneven Helix splits, as the runtime cuts them (tiny: Q 8, K 2, head 32, H 256, ffn 512,
 * f32 weights). KVP 3 x TPA 1: the 8 heads go 3, 3, 2 after the all-to-all, so the busiest
 * rank's W_o has 3 x 32 x 256 x 4 = 98304 bytes per layer and its FFN ceil(512/3) = 171
 * columns: 3 x 256 x 171 x 4 = 525312 bytes; KVP 3 x TPA 2: shards of 4 heads, slices
 * of 2, 1, 1. TPA 3 past K 2 is no multiple. Whole heads (q_split 1) whenever KVP is at
 * most the smallest shard's heads: the layouts of before are unchanged. */
static void test_uneven_split(void **state)
{
    fixture_t fx;
    hlx_layout_t l = lay(HLX_STRAT_HELIX, 3, 1, 3, 1, 4);
    hlx_helix_split_t sp;
    hlx_plan_result_t r;
    char err[256];

    (void)state;
    fx_load(&fx, "tiny", "gb200-nvl72", 65536);
    assert_int_equal(hlx_helix_split(8, 2, 32, 3, 1, &sp, err, sizeof(err)), HLX_OK);
    assert_int_equal(sp.q_local_max, 8);
    assert_int_equal(sp.kv_local_max, 2);
    assert_int_equal(sp.q_split, 1);
    assert_int_equal(sp.q_slice_max, 3);
    assert_int_equal(hlx_helix_split(8, 2, 32, 3, 2, &sp, err, sizeof(err)), HLX_OK);
    assert_int_equal(sp.q_local_max, 4);
    assert_int_equal(sp.q_split, 1);
    assert_int_equal(sp.q_slice_max, 2);
    assert_int_equal(hlx_helix_split(8, 2, 32, 4, 2, &sp, err, sizeof(err)), HLX_OK);
    assert_int_equal(sp.q_split, 1); /* KVP = the shard's 4 heads: one whole head each */
    assert_int_equal(sp.q_slice_max, 1);
    assert_int_equal(hlx_helix_split(32, 8, 128, 1, 3, &sp, err, sizeof(err)), HLX_OK);
    assert_int_equal(sp.kv_local_max, 3); /* 8 KV heads over 3 shards: 2, 3, 3 */
    assert_int_equal(sp.q_local_max, 12);
    assert_int_equal(sp.q_local_min, 8);
    assert_int_equal(sp.q_split, 1);
    assert_int_equal(hlx_helix_split(8, 2, 32, 1, 3, &sp, err, sizeof(err)), HLX_ERR_INVALID);

    assert_int_equal(hlx_plan_check(&fx.ctx, &l, err, sizeof(err)), HLX_OK);
    hlx_plan_eval(&fx.ctx, &l, &r);
    assert_rel(r.phase[HLX_PHASE_OPROJ].bytes, 2 * 98304.0, 1e-12, "w_o bytes, 3 heads");
    assert_rel(r.phase[HLX_PHASE_FFN].bytes, 2 * 525312.0, 1e-12, "ffn bytes, 171 columns");
    l = lay(HLX_STRAT_HELIX, 3, 2, 6, 1, 4);
    assert_int_equal(hlx_plan_check(&fx.ctx, &l, err, sizeof(err)), HLX_OK);
    hlx_plan_eval(&fx.ctx, &l, &r);
    assert_rel(r.phase[HLX_PHASE_OPROJ].bytes, 2 * 2 * 32 * 256 * 4.0, 1e-12, "w_o, 2 heads");
    /* the baselines keep even splits */
    l = lay(HLX_STRAT_TP, 1, 3, 3, 1, 4);
    assert_int_equal(hlx_plan_check(&fx.ctx, &l, err, sizeof(err)), HLX_ERR_INVALID);
    hlx_cluster_free(&fx.c);
}

/* KVP past a shard's query heads: each head cut into q_split pieces, q_split the smallest
 * divisor of v_head_dim with q_split x (smallest shard's heads) >= KVP whose busiest rank
 * moves the fewest floats: c(s) = ceil(largest shard's heads x s / KVP) pieces x (dv / s
 * values + 1 LSE), ties to the smaller s.
 *   Q 8, K 2, TPA 2 (shards of 4 heads), dv 16: KVP 5: c(2) = 2 x 9 = 18 against c(4) =
 *   4 x 5 = 20: 2; KVP 9 needs >= 3: dv 16: c(4) = 2 x 5 = 10 (c(8) = 12); dv 12: c(4) =
 *   2 x 4 = 8 (c(3) = 10, c(6) = 9); dv 20: c(4) = 12 (c(5) = 15); KVP 64 = 4 x 16: 16 pieces
 *   of one value, one each; KVP 65: more ranks than the 64 pieces, refused; dv 1 (MLA's
 *   whole heads) refuses KVP 5.
 *   Q 32, K 8, TPA 3 (shards of 8, 12, 12 heads), dv 128, KVP 9: c(2) = 3 x 65 = 195,
 *   c(4) = 6 x 33 = 198, c(8) = 11 x 17 = 187, c(16) = 22 x 9 = 198: eighths, 11 a rank.
 *   Q 8, K 2, TPA 4 (past K: shards of 2 heads), dv 32, KVP 3: c(2) = 34, c(4) = 3 x 9 =
 *   27, c(8) = 30: quarters, 3 a rank.
 *   Llama 4 Scout: Q 40, K 8, TPA 8 (shards of 5), dv 128, KVP 8: c(2) = 2 x 65 = 130,
 *   c(4) = 99, c(8) = 5 x 17 = 85, c(16) = 90: eighths, 5 a rank.
 * Tiny (dv 32) at KVP 5 x TPA 2, batch 4: q_split 2, 2 pieces of 16 values a rank, so per
 * layer W_o is 2 x 16 rows x 256 x 4 B = 32768 B; the combine sends each request's
 * 4 heads x (32 values x 2 B + 2 pieces x 4 B of LSE) = 288 B, 4 requests: 1152 B, of which
 * 4/5 leave the rank: 921.6 B a layer (whole heads would be 4 x 68 x 4 x 4/5 = 870.4). */
static void test_helix_pieces(void **state)
{
    static const struct {
        int q, k, dv, kvp, tpa, split, slice;
    } ok[] = {
        { 8, 2, 16, 5, 2, 2, 2 },    { 8, 2, 16, 9, 2, 4, 2 },  { 8, 2, 12, 9, 2, 4, 2 },
        { 8, 2, 20, 9, 2, 4, 2 },    { 8, 2, 16, 64, 2, 16, 1 }, { 32, 8, 128, 9, 3, 8, 11 },
        { 8, 2, 32, 3, 4, 4, 3 },    { 40, 8, 128, 8, 8, 8, 5 }, { 40, 8, 128, 5, 8, 1, 1 },
    };
    fixture_t fx;
    hlx_layout_t l = lay(HLX_STRAT_HELIX, 5, 2, 10, 1, 4);
    hlx_helix_split_t sp;
    hlx_plan_result_t r;
    char err[256] = "";
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        if (hlx_helix_split(ok[i].q, ok[i].k, ok[i].dv, ok[i].kvp, ok[i].tpa, &sp, err,
                            sizeof(err)) != HLX_OK)
            fail_msg("case %zu: %s", i, err);
        if (sp.q_split != ok[i].split || sp.q_slice_max != ok[i].slice)
            fail_msg("case %zu: q_split %d, q_slice_max %d; want %d, %d", i, sp.q_split,
                     sp.q_slice_max, ok[i].split, ok[i].slice);
    }
    assert_int_equal(hlx_helix_split(8, 2, 16, 65, 2, &sp, err, sizeof(err)), HLX_ERR_INVALID);
    if (strstr(err, "4 query head(s) of 16 values give at most 64 pieces, fewer than kvp") ==
        NULL)
        fail_msg("reason: %s", err);
    assert_int_equal(hlx_helix_split(8, 2, 1, 5, 2, &sp, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "fewer than kvp"));
    assert_int_equal(hlx_helix_split(8, 2, 0, 1, 1, &sp, err, sizeof(err)), HLX_ERR_INVALID);

    fx_load(&fx, "tiny", "gb200-nvl72", 65536);
    assert_int_equal(hlx_plan_check(&fx.ctx, &l, err, sizeof(err)), HLX_OK);
    hlx_plan_eval(&fx.ctx, &l, &r);
    assert_rel(r.phase[HLX_PHASE_OPROJ].bytes, 2 * 32768.0, 1e-12, "w_o, 2 pieces of 16");
    assert_rel(r.phase[HLX_PHASE_A2A].bytes, 2 * 921.6, 1e-12, "combine, an LSE per piece");
    assert_true(r.feasible);
    /* the combine's buffers hold an LSE per piece: against KVP 4's whole heads (the same 4
     * heads a shard, 4 requests), 2 buffers x 4 requests x 4 heads x 1 more LSE x 4 bytes */
    {
        hlx_plan_result_t r4;
        hlx_plan_eval(&fx.ctx, &(hlx_layout_t){ HLX_STRAT_HELIX, 4, 2, 1, 8, 1, 1, 4, 0 }, &r4);
        assert_rel(r.mem_act - r4.mem_act, 2.0 * 4 * 4 * 1 * 4.0, 1e-9, "an LSE per piece");
    }
    /* past the pieces: 4 heads x 32 values cannot reach 129 ranks */
    l = lay(HLX_STRAT_HELIX, 129, 2, 258, 1, 4);
    expect_bad(&fx.ctx, l, "give at most 128 pieces, fewer than kvp");
    hlx_cluster_free(&fx.c);
}

static void test_pareto(void **state)
{
    static const int batches[] = { 1, 2, 4, 8, 16, 32, 64, 128 };
    hlx_sweep_opts_t o = { 1, 64, batches, 8, (1u << HLX_STRAT_COUNT) - 1, 2, 0 };
    hlx_sweep_t sw = { 0 };
    fixture_t fx;
    size_t i, j, npareto = 0;

    (void)state;
    fx_load(&fx, "deepseek-r1", "gb200-nvl72", MIB_1M);
    assert_int_equal(hlx_sweep_run(&fx.ctx, &o, 0, &sw), HLX_OK);
    assert_true(sw.n > 1000);
    for (i = 0; i < sw.n; i++) {
        const hlx_sweep_point_t *p = &sw.pts[i];
        int covered = 0;
        if (!p->feasible) {
            assert_false(p->pareto);
            continue;
        }
        npareto += p->pareto;
        for (j = 0; j < sw.n; j++) {
            const hlx_sweep_point_t *q = &sw.pts[j];
            if (j == i || !q->feasible || q->l.strategy != p->l.strategy)
                continue;
            if (p->pareto)
                assert_false(q->tok_s_user >= p->tok_s_user && q->tok_s_gpu >= p->tok_s_gpu &&
                             (q->tok_s_user > p->tok_s_user || q->tok_s_gpu > p->tok_s_gpu));
            else if (q->pareto && q->tok_s_user >= p->tok_s_user && q->tok_s_gpu >= p->tok_s_gpu)
                covered = 1;
        }
        assert_true(p->pareto || covered);
    }
    assert_true(npareto >= HLX_STRAT_COUNT);
    hlx_sweep_free(&sw);
    hlx_cluster_free(&fx.c);
}

/* Topology variants: NVL72 regrouped into 8-GPU domains behaves like HGX for links. */
static void test_variants(void **state)
{
    fixture_t fx;
    hlx_cluster_t v, v2;
    hlx_plan_ctx_t ctx;
    char err[256] = "";

    (void)state;
    fx_load(&fx, "llama-405b", "gb200-nvl72", MIB_1M);
    assert_int_equal(hlx_cluster_variant(&fx.c, "domain_gpus", 8, &v, err, sizeof(err)), HLX_OK);
    assert_string_equal(v.name, "gb200-nvl72 domain_gpus=8");
    assert_int_equal(v.ndomains, 9);
    assert_int_equal(v.max_domain_gpus, 8);
    assert_int_equal(hlx_cluster_link(&v, 0, 7), HLX_LINK_NVLINK);
    assert_int_equal(hlx_cluster_link(&v, 7, 8), HLX_LINK_RDMA);
    assert_int_equal(fx.c.ndomains, 1); /* the base is untouched */
    assert_int_equal(hlx_cluster_variant(&v, "rdma_gbps", 25, &v2, err, sizeof(err)), HLX_OK);
    assert_string_equal(v2.name, "gb200-nvl72 domain_gpus=8 rdma_gbps=25");
    assert_int_equal(hlx_plan_ctx_init(&ctx, &fx.m, &v2, MIB_1M, NULL), HLX_OK);
    assert_int_equal(ctx.domain_gpus, 8);
    assert_rel(hlx_coll_alltoall(&ctx, 16, 8, 1e6), 5e-6 + 0.5 * 1e6 / 25e9, 1e-12, "a2a");
    assert_int_equal(hlx_cluster_variant(&fx.c, "domain_gpus", 6, &v2, err, sizeof(err)),
                     HLX_ERR_INVALID);
    assert_non_null(strstr(err, "not a multiple of the 4 GPUs per node"));
    assert_int_equal(hlx_cluster_variant(&fx.c, "rdma", 25, &v2, err, sizeof(err)),
                     HLX_ERR_INVALID);
    assert_non_null(strstr(err, "unknown property"));
    hlx_cluster_free(&v);
    hlx_cluster_free(&v2);
    hlx_cluster_free(&fx.c);
}

/* The paper's lockstep (PLAN_LOCKSTEP_PER_REQUEST = 1) pays the combine latency once per
 * request: HOP-B off costs (B - 1) x alpha more per layer than one batched combine. */
static void test_lockstep_per_request(void **state)
{
    fixture_t fx;
    hlx_plan_settings_t set;
    hlx_plan_ctx_t ctx2;
    hlx_layout_t l = lay(HLX_STRAT_HELIX, 8, 8, 64, 1, 16);
    hlx_plan_result_t a, b, c, d;

    (void)state;
    fx_load(&fx, "llama-405b", "gb200-nvl72", MIB_1M);
    hlx_plan_settings_default(&set);
    set.lockstep_per_request = 1;
    assert_int_equal(hlx_plan_ctx_init(&ctx2, &fx.m, &fx.c, MIB_1M, &set), HLX_OK);
    hlx_plan_eval(&fx.ctx, &l, &a);
    hlx_plan_eval(&ctx2, &l, &b);
    /* 126 layers x 15 extra all-to-all latencies of 2 us */
    assert_rel(b.ttl_s - a.ttl_s, 126 * 15 * 2e-6, 1e-6, "per-request latency");
    l.hopb = 1;
    hlx_plan_eval(&fx.ctx, &l, &c);
    hlx_plan_eval(&ctx2, &l, &d);
    assert_rel(c.ttl_s, d.ttl_s, 1e-12, "HOP-B on does not depend on the lockstep model");
    assert_true(d.ttl_s <= a.ttl_s);
    hlx_cluster_free(&fx.c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paper_formulas),
        cmocka_unit_test(test_paper_via_eval),
        cmocka_unit_test(test_full_model_tp),
        cmocka_unit_test(test_moe_mla),
        cmocka_unit_test(test_moe_gqa),
        cmocka_unit_test(test_collectives),
        cmocka_unit_test(test_hopb),
        cmocka_unit_test(test_hopb_eval),
        cmocka_unit_test(test_monotonic),
        cmocka_unit_test(test_infeasible),
        cmocka_unit_test(test_layout_checks),
        cmocka_unit_test(test_uneven_split),
        cmocka_unit_test(test_helix_pieces),
        cmocka_unit_test(test_pareto),
        cmocka_unit_test(test_variants),
        cmocka_unit_test(test_lockstep_per_request),
        cmocka_unit_test(test_window_memory),
        cmocka_unit_test(test_tied_head),
        cmocka_unit_test(test_plain_mlp),
        cmocka_unit_test(test_moe_step),
        cmocka_unit_test(test_moe_uneven_tpf),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
