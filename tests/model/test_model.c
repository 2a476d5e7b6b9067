/* model: presets load with the published shapes; bad files give file:line:column. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hlx_mutate.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <helix/model.h>
#include "hlx_ckpt.h"

static const char *g_data; /* tests/model/data */

static void test_tiny(void **state)
{
    hlx_model_t m;
    char err[1024] = "";

    (void)state;
    assert_int_equal(hlx_model_load("tiny", &m, err, sizeof(err)), HLX_OK);
    assert_string_equal(m.name, "tiny");
    assert_int_equal(m.attn, HLX_ATTN_GQA);
    assert_int_equal(m.layers, 2);
    assert_int_equal(m.hidden, 256);
    assert_int_equal(m.q_heads, 8);
    assert_int_equal(m.kv_heads, 2);
    assert_int_equal(m.head_dim, 32);
    assert_int_equal(m.v_head_dim, 32);  /* default */
    assert_int_equal(m.rope_dim, 32);    /* default */
    assert_int_equal(m.ffn, 512);
    assert_int_equal(m.vocab, 512);
    assert_int_equal(m.weight_dtype, HLX_DTYPE_F32);
    assert_int_equal(m.kv_dtype, HLX_DTYPE_BF16);
    assert_true(m.rope_theta == 10000.0);
    assert_true(m.norm_eps == 1e-5);
    assert_int_equal(hlx_model_key_dim(&m), 32);
    assert_int_equal(hlx_model_value_dim(&m), 32);
    /* 2*512*256 embeddings + 2 layers * (q 256*256 + k,v 2*256*64 + o 256*256
     * + ffn 3*256*512 + 2 norms of 256) + final norm 256 */
    assert_true(hlx_model_params(&m) ==
                2.0 * 512 * 256 + 2 * (65536.0 + 32768 + 65536 + 393216 + 512) + 256);
}

static void test_llama(void **state)
{
    hlx_model_t m;
    char err[1024] = "";
    double p;

    (void)state;
    assert_int_equal(hlx_model_load("llama-405b", &m, err, sizeof(err)), HLX_OK);
    assert_int_equal(m.layers, 126);
    assert_int_equal(m.hidden, 16384);
    assert_int_equal(m.q_heads, 128);
    assert_int_equal(m.kv_heads, 8);
    assert_int_equal(m.ffn, 53248);
    assert_int_equal(m.experts, 0);
    assert_int_equal(m.dense_layers, 126);
    p = hlx_model_params(&m);
    assert_true(p > 400e9 && p < 410e9); /* "405B" */
}

/* Preset `name` loaded for the runtime, with the published shapes given and, where it is
 * published to the unit, the parameter count (0: not checked here). */
static void preset_shapes(const char *name, hlx_model_t *m, int layers, int hidden,
                          int q_heads, int kv_heads, int head_dim, int ffn, int vocab,
                          double params)
{
    char err[1024] = "";

    if (hlx_model_load_runnable(name, m, err, sizeof(err)) != HLX_OK)
        fail_msg("%s: %s", name, err);
    assert_int_equal(m->layers, layers);
    assert_int_equal(m->hidden, hidden);
    assert_int_equal(m->q_heads, q_heads);
    assert_int_equal(m->kv_heads, kv_heads);
    assert_int_equal(m->head_dim, head_dim);
    assert_int_equal(m->ffn, ffn);
    assert_int_equal(m->vocab, vocab);
    if (params > 0 && hlx_model_params(m) != params)
        fail_msg("%s: %.0f parameters, published %.0f", name, hlx_model_params(m), params);
}

/* Seed-OSS-36B (512K tokens): its released config's shapes, q/k/v biases, and the
 * parameters its config.json reads to (model/hf.c; decode_hf_families reads the same). */
static void test_seed_oss_36b(void **state)
{
    hlx_model_t m;

    (void)state;
    preset_shapes("seed-oss-36b", &m, 64, 5120, 80, 8, 128, 27648, 155136, 36151104512.0);
    assert_true(m.qkv_bias && !m.tie_embeddings && m.rope_theta == 1e7);
}

/* gpt-oss-20b and gpt-oss-120b: their released configs' shapes (24 and 36 layers, 32 and
 * 128 experts top-4 of 2880, 64 query and 8 KV heads of 64), q, k, v and o biases, sinks,
 * the router's and experts' biases, the clamped SwiGLU, windows of 128 on every other layer
 * and yarn without rounding, to the parameters their config.json files read to (model/hf.c;
 * decode_hf_families reads the same): 20,914,757,184 and 116,829,156,672 (published 20.9B
 * and 116.8B). */
static void test_gpt_oss(void **state)
{
    static const struct {
        const char *name;
        int layers, experts;
        double params;
    } v[2] = { { "gpt-oss-20b", 24, 32, 20914757184.0 },
               { "gpt-oss-120b", 36, 128, 116829156672.0 } };
    hlx_model_t m;
    int i;

    (void)state;
    for (i = 0; i < 2; i++) {
        preset_shapes(v[i].name, &m, v[i].layers, 2880, 64, 8, 64, 0, 201088, v[i].params);
        assert_true(m.experts == v[i].experts && m.top_k == 4 && m.expert_ffn == 2880 &&
                    m.dense_layers == 0 && m.shared_experts == 0);
        assert_true(m.qkv_bias && m.o_bias && m.attn_sinks && m.router_bias && m.expert_bias);
        assert_true(m.ffn_act == HLX_ACT_SWIGLU_CLAMP && m.act_alpha == 1.702 &&
                    m.act_limit == 7.0 && m.moe_scoring == HLX_MOE_SOFTMAX && m.norm_topk_prob);
        assert_true(hlx_model_layer_window(&m, 0) == 128 && hlx_model_layer_window(&m, 1) == 0);
        assert_true(m.rope_kind == HLX_ROPE_YARN && m.rope_yarn_exact && m.rope_factor == 32.0 &&
                    m.rope_orig_ctx == 4096 && m.rope_theta == 150000.0 && !m.tie_embeddings);
    }
}

/* Qwen2.5-7B-Instruct-1M: its published shapes, q/k/v biases, 7.6B parameters. */
static void test_qwen25(void **state)
{
    hlx_model_t m;
    double p;

    (void)state;
    preset_shapes("qwen2.5-7b-1m", &m, 28, 3584, 28, 4, 128, 18944, 152064, 0);
    assert_true(m.rope_theta == 1e7);
    assert_true(m.qkv_bias && !m.qk_norm);
    p = hlx_model_params(&m);
    assert_true(p > 7.60e9 && p < 7.63e9); /* "7.61B" */
}

/* InternLM2.5-7B-Chat-1M: InternLM2.5-7B's shapes, whose parameter count the published
 * 7,737,708,544 checks to the unit, and the 1M model's dynamic NTK RoPE. */
static void test_internlm25(void **state)
{
    hlx_model_t m;

    (void)state;
    preset_shapes("internlm2.5-7b-1m", &m, 32, 4096, 32, 8, 128, 14336, 92544, 7737708544.0);
    assert_true(!m.qkv_bias && !m.qk_norm);
    assert_true(m.rope_kind == HLX_ROPE_DYNAMIC && m.rope_factor == 2.5 &&
                m.rope_orig_ctx == 262144 && m.rope_theta == 5e7);
}

/* Mistral-7B-v0.1: the published 7,241,732,096 parameters to the unit, and its window of
 * 4096 on every layer, which the planner's memory counts in place of the context. */
static void test_mistral7b(void **state)
{
    hlx_model_t m;

    (void)state;
    preset_shapes("mistral-7b-v0.1", &m, 32, 4096, 32, 8, 128, 14336, 32000, 7241732096.0);
    assert_int_equal(m.sliding_window, 4096);
    assert_int_equal(m.sliding_pattern, 0);
    assert_int_equal(hlx_model_layer_window(&m, 31), 4096);
    assert_true(hlx_model_attn_tokens(&m, 1048576.0) == 4096.0);
    assert_true(hlx_model_attn_tokens(&m, 1000.0) == 1000.0);
}

/* Gemma-2-9B: Gemma 2's layer with a tied head; 9,241,705,984 parameters as published
 * (the head counted once), its windows on every other layer from the first. */
static void test_gemma2_9b(void **state)
{
    hlx_model_t m;

    (void)state;
    preset_shapes("gemma-2-9b", &m, 42, 3584, 16, 8, 256, 14336, 256000, 9241705984.0);
    assert_true(m.tie_embeddings && m.post_norms && m.embed_scale &&
                m.ffn_act == HLX_ACT_GELU_TANH && m.attn_scalar == 256.0);
    assert_true(m.attn_softcap == 50.0 && m.final_softcap == 30.0);
    assert_int_equal(hlx_model_layer_window(&m, 0), 4096);
    assert_int_equal(hlx_model_layer_window(&m, 1), 0);
    assert_int_equal(hlx_model_layer_window(&m, 40), 4096);
    assert_int_equal(hlx_model_layer_window(&m, 41), 0);
    /* at 8K tokens half the layers read 4096 positions */
    assert_true(hlx_model_attn_tokens(&m, 8192.0) == 6144.0);
}

/* Gemma-3-27B's text model: Gemma 3's layer (q/k head norms, windows of 1024 on five
 * layers of every six, the sixth whole-context with its own RoPE base and a linear factor
 * 8) and a tied head. Parameters from the shapes by hand: embedding 262208 x 5376, per
 * layer q, k, v, o (5376 x (4096 + 2 x 2048) + 4096 x 5376), the three FFN matrices
 * (3 x 5376 x 21504) and the norms (4 x 5376 + 2 x 128), the final norm. */
static void test_gemma3_27b(void **state)
{
    const double layer = 5376.0 * (4096 + 2 * 2048) + 4096.0 * 5376 + 3.0 * 5376 * 21504 +
                         4.0 * 5376 + 2 * 128;
    hlx_model_t m;

    (void)state;
    preset_shapes("gemma-3-27b", &m, 62, 5376, 32, 16, 128, 21504, 262208,
                  262208.0 * 5376 + 62 * layer + 5376);
    assert_true(m.tie_embeddings && m.post_norms && m.embed_scale && m.qk_norm &&
                m.ffn_act == HLX_ACT_GELU_TANH && m.attn_scalar == 168.0);
    assert_true(m.attn_softcap == 0.0 && m.final_softcap == 0.0);
    assert_true(m.rope_kind == HLX_ROPE_LINEAR && m.rope_factor == 8.0 &&
                m.rope_theta == 1e6 && m.rope_local_theta == 1e4);
    assert_int_equal(hlx_model_layer_window(&m, 0), 1024);
    assert_int_equal(hlx_model_layer_window(&m, 4), 1024);
    assert_int_equal(hlx_model_layer_window(&m, 5), 0);
    assert_int_equal(hlx_model_layer_window(&m, 60), 1024);
    assert_int_equal(hlx_model_layer_window(&m, 61), 1024);
    /* at 128K tokens 10 of the 62 layers read the whole context, 52 read 1024 positions */
    assert_true(hlx_model_attn_tokens(&m, 131072.0) == (10.0 * 131072 + 52.0 * 1024) / 62);
}

/* Llama-3.2-3B: a tied head and Llama 3.1's RoPE scaling over 128K; 3,212,749,824
 * parameters as published (6,425,499,648 bytes of bf16). */
static void test_llama32_3b(void **state)
{
    hlx_model_t m;

    (void)state;
    preset_shapes("llama-3.2-3b", &m, 28, 3072, 24, 8, 128, 8192, 128256, 3212749824.0);
    assert_true(m.tie_embeddings && m.rope_kind == HLX_ROPE_LLAMA3 && m.rope_factor == 32.0 &&
                m.rope_orig_ctx == 8192 && m.rope_theta == 500000.0);
}

/* Qwen3-235B-A22B: 94 layers, every one MoE (128 experts top-8), Qwen3's head norms;
 * 235B parameters. */
static void test_qwen3_moe(void **state)
{
    hlx_model_t m;
    char err[1024] = "";
    double p;

    (void)state;
    assert_int_equal(hlx_model_load_runnable("qwen3-235b-a22b", &m, err, sizeof(err)), HLX_OK);
    assert_int_equal(m.layers, 94);
    assert_int_equal(m.hidden, 4096);
    assert_int_equal(m.q_heads, 64);
    assert_int_equal(m.kv_heads, 4);
    assert_int_equal(m.experts, 128);
    assert_int_equal(m.top_k, 8);
    assert_int_equal(m.expert_ffn, 1536);
    assert_int_equal(m.dense_layers, 0);
    assert_true(m.qk_norm && !m.qkv_bias && m.norm_topk_prob);
    assert_int_equal(m.moe_scoring, HLX_MOE_SOFTMAX);
    p = hlx_model_params(&m);
    assert_true(p > 234e9 && p < 236e9); /* "235B" */
}

static void test_deepseek(void **state)
{
    hlx_model_t m;
    char err[1024] = "";
    double p;

    (void)state;
    assert_int_equal(hlx_model_load("deepseek-r1", &m, err, sizeof(err)), HLX_OK);
    assert_int_equal(m.attn, HLX_ATTN_MLA);
    assert_int_equal(m.kv_heads, 1);
    assert_int_equal(hlx_model_key_dim(&m), 576);   /* 512 latent + 64 rope */
    assert_int_equal(hlx_model_value_dim(&m), 512);
    assert_int_equal(m.head_dim, 192);              /* nope 128 + rope 64 */
    assert_int_equal(m.experts, 256);
    assert_int_equal(m.top_k, 8);
    assert_int_equal(m.dense_layers, 3);
    p = hlx_model_params(&m);
    /* 671B published, of which the MTP module (not modelled) is about 14B */
    assert_true(p > 650e9 && p < 680e9);
}

static void test_fig1(void **state)
{
    hlx_model_t m;
    char err[1024] = "";

    (void)state;
    assert_int_equal(hlx_model_load("helix-fig1", &m, err, sizeof(err)), HLX_OK);
    assert_int_equal(m.q_heads, 128);
    assert_int_equal(m.kv_heads, 8);
    assert_int_equal(m.head_dim, 128);
    assert_int_equal(m.hidden, 16384);
    assert_int_equal(m.ffn, 65536);
    assert_int_equal(m.weight_dtype, HLX_DTYPE_FP4);
    assert_int_equal(m.kv_dtype, HLX_DTYPE_FP4);
}

/* Model file `file` of the test data, which must load. */
static void load_data(const char *file, hlx_model_t *m)
{
    char path[1024], err[1024] = "";

    snprintf(path, sizeof(path), "%s/%s", g_data, file);
    if (hlx_model_load(path, m, err, sizeof(err)) != HLX_OK)
        fail_msg("%s: %s", file, err);
}

static void expect_error(const char *file, hlx_status_t want, const char *msg)
{
    char path[1024], err[1024] = "";
    hlx_model_t m;

    snprintf(path, sizeof(path), "%s/%s", g_data, file);
    assert_int_equal(hlx_model_load(path, &m, err, sizeof(err)), want);
    if (strstr(err, msg) == NULL)
        fail_msg("%s: expected \"%s\" in \"%s\"", file, msg, err);
    /* every parse error starts with the file's path */
    if (want == HLX_ERR_PARSE && strncmp(err, path, strlen(path)) != 0)
        fail_msg("%s: message does not start with the path: %s", file, err);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("unknown_key.json", HLX_ERR_PARSE,
                 "unknown_key.json:4:3: layrs: unknown key (did you mean \"layers\"?)");
    expect_error("duplicate_key.json", HLX_ERR_PARSE, "duplicate_key.json:4:");
    expect_error("mistyped.json", HLX_ERR_PARSE, "mistyped.json:3:3: layers: expected an integer");
    expect_error("nondividing.json", HLX_ERR_PARSE,
                 "nondividing.json:4:3: kv_heads: 3 does not divide q_heads 8");
    expect_error("zero_hidden.json", HLX_ERR_PARSE,
                 "zero_hidden.json:3:3: hidden: 0 is outside [1, 999999]");
    expect_error("odd_rope.json", HLX_ERR_PARSE,
                 "odd_rope.json:4:5: rope_dim: 7 is odd (RoPE rotates pairs)");
    expect_error("bad_dtype.json", HLX_ERR_PARSE,
                 "bad_dtype.json:4:3: kv_dtype: unknown dtype \"fp16\" (f32, bf16, fp8 or fp4)");
    expect_error("bad_attn.json", HLX_ERR_PARSE,
                 "bad_attn.json:2:16: attn: unknown attention \"mha\" (gqa or mla)");
    expect_error("topk.json", HLX_ERR_PARSE, "topk.json:5:3: top_k: 9 exceeds experts 8");
    /* Llama 4's keys without what they act on */
    expect_error("l4_moe_step_none.json", HLX_ERR_PARSE, "l4_moe_step_none.json:4:3: moe_step: "
                 "3 leaves no MoE layer among layers 3 to 3");
    expect_error("l4_chunked_alone.json", HLX_ERR_PARSE, "l4_chunked_alone.json:4:3: "
                 "window_chunked: only meaningful with \"sliding_window\"");
    expect_error("l4_unit_alone.json", HLX_ERR_PARSE, "l4_unit_alone.json:4:3: qk_norm_unit: "
                 "only meaningful with \"qk_norm\"");
    expect_error("l4_temp_no_nope.json", HLX_ERR_PARSE, "l4_temp_no_nope.json:4:3: "
                 "attn_temp_floor: only meaningful with \"nope_pattern\"");
    expect_error("l4_weight_input_dense.json", HLX_ERR_PARSE, "l4_weight_input_dense.json:4:3: "
                 "moe_weight_input: only meaningful with \"experts\" > 0");
    expect_error("bad_scoring.json", HLX_ERR_PARSE,
                 "bad_scoring.json:4:3: scoring_func: unknown scoring \"tanh\" (softmax or sigmoid)");
    expect_error("bad_groups.json", HLX_ERR_PARSE, "bad_groups.json:5:3: topk_group: 2 "
                 "group(s) of 2 experts hold fewer than top_k 6");
    expect_error("gating_dense.json", HLX_ERR_PARSE,
                 "gating_dense.json:4:3: n_group: only meaningful with \"experts\" > 0");
    expect_error("inf_theta.json", HLX_ERR_PARSE, "inf_theta.json:4:");
    expect_error("truncated.json", HLX_ERR_PARSE, "truncated.json:");
    expect_error("empty_name.json", HLX_ERR_PARSE, "empty_name.json:2:3: name: must not be empty");
    expect_error("ctrl_name.json", HLX_ERR_PARSE,
                 "ctrl_name.json:2:3: name: control character 0x1b in the string");
    expect_error("odd_head.json", HLX_ERR_PARSE,
                 "odd_head.json:4:3: head_dim: 33 is odd and rope_dim defaults to it");
    expect_error("huge_int.json", HLX_ERR_PARSE, "huge_int.json:4:");
    expect_error("missing.json", HLX_ERR_NOT_FOUND, "missing.json: no such model file");
    expect_error("bad_group_score.json", HLX_ERR_PARSE,
                 "bad_group_score.json:4:34: group_score: unknown group score \"mean\" (top2 or "
                 "max)");
    expect_error("dynamic_mla.json", HLX_ERR_PARSE,
                 "dynamic_mla.json:5:3: rope_scaling: \"dynamic\" is taken for GQA models only");
    expect_error("dynamic_rope2.json", HLX_ERR_PARSE, "dynamic_rope2.json:3:44: rope_dim: 2 "
                 "rotated elements: rope_scaling \"dynamic\" needs more than 2");
    expect_error("dynamic_key.json", HLX_ERR_PARSE, "dynamic_key.json:4:69: "
                 "rope_beta_fast: not a parameter of rope_scaling \"dynamic\"");
    expect_error("dynamic_no_ctx.json", HLX_ERR_PARSE, "dynamic_no_ctx.json:1:1: rope_orig_ctx: "
                 "required key is missing (for rope_scaling \"dynamic\": "
                 "max_position_embeddings, past which the base grows)");
    expect_error("mla_qkv_bias.json", HLX_ERR_PARSE,
                 "mla_qkv_bias.json:3:3: qkv_bias: only with \"attn\": \"gqa\"");
    expect_error("sgate_unshared.json", HLX_ERR_PARSE,
                 "sgate_unshared.json:4:3: shared_expert_gate: gates the shared experts' "
                 "output: needs \"shared_experts\" > 0");
    expect_error("act_bad.json", HLX_ERR_PARSE, "act_bad.json:3:44: ffn_act: unknown activation "
                 "\"gelu\" (silu, gelu_tanh or swiglu_clamp)");
    expect_error("act_moe.json", HLX_ERR_PARSE, "act_moe.json:4:3: ffn_act: gelu_tanh with "
                 "\"experts\" > 0: the MoE layers run SwiGLU or swiglu_clamp");
    expect_error("act_limit_silu.json", HLX_ERR_PARSE, "act_limit_silu.json:3:44: act_limit: "
                 "only meaningful with \"ffn_act\": \"swiglu_clamp\"");
    expect_error("router_bias_dense.json", HLX_ERR_PARSE, "router_bias_dense.json:3:44: "
                 "router_bias: only with \"experts\" > 0");
    expect_error("expert_bias_shared.json", HLX_ERR_PARSE, "expert_bias_shared.json:4:24: "
                 "expert_bias: only with \"experts\" > 0 and no shared experts");
    expect_error("sinks_mla.json", HLX_ERR_PARSE,
                 "sinks_mla.json:3:3: attn_sinks: only with \"attn\": \"gqa\"");
    expect_error("yarn_exact_linear.json", HLX_ERR_PARSE, "yarn_exact_linear.json:4:3: "
                 "rope_yarn_exact: not a parameter of rope_scaling \"linear\"");
    expect_error("yarn_theta1.json", HLX_ERR_PARSE, "yarn_theta1.json:3:44: rope_theta: 1 "
                 "with rope_scaling \"yarn\": its ramp's ends divide by ln rope_theta = 0");
    expect_error("local_theta.json", HLX_ERR_PARSE, "local_theta.json:3:44: rope_local_theta: "
                 "only meaningful with \"sliding_window\"");
    expect_error("embed_scale_mla.json", HLX_ERR_PARSE, "embed_scale_mla.json:4:3: embed_scale: "
                 "only with \"attn\": \"gqa\"");
    expect_error("window_mla.json", HLX_ERR_PARSE,
                 "window_mla.json:4:3: sliding_window: only with \"attn\": \"gqa\"");
    expect_error("window_pattern.json", HLX_ERR_PARSE,
                 "window_pattern.json:3:44: sliding_pattern: only meaningful with "
                 "\"sliding_window\"");
    expect_error("window_from.json", HLX_ERR_PARSE,
                 "window_from.json:3:44: sliding_from: only meaningful with \"sliding_window\"");
    expect_error("window_from_all.json", HLX_ERR_PARSE,
                 "window_from_all.json:3:65: sliding_from: 2 leaves no layer of the 2 windowed");
    expect_error("window_pattern1.json", HLX_ERR_PARSE,
                 "window_pattern1.json:3:65: sliding_pattern: 1 would make every layer attend "
                 "to the whole context");
    expect_error("nope_pattern1.json", HLX_ERR_PARSE,
                 "nope_pattern1.json:3:44: nope_pattern: 1 would leave every layer without "
                 "RoPE");
    expect_error("nope_mla.json", HLX_ERR_PARSE,
                 "nope_mla.json:4:3: nope_pattern: only with \"attn\": \"gqa\"");
    expect_error("post_norms_moe.json", HLX_ERR_PARSE,
                 "post_norms_moe.json:4:3: post_norms: only with a dense FFN");
    expect_error("post_only_alone.json", HLX_ERR_PARSE, "post_only_alone.json:3:44: "
                 "post_norms_only: needs \"post_norms\": true");
    expect_error("qk_norm_both.json", HLX_ERR_PARSE, "qk_norm_both.json:3:61: qk_norm_proj: "
                 "not with \"qk_norm\"");
    expect_error("layernorm_qk_norm.json", HLX_ERR_PARSE, "layernorm_qk_norm.json:3:65: "
                 "qk_norm: not with \"norm\": \"layernorm\"");
    expect_error("layernorm_post.json", HLX_ERR_PARSE, "layernorm_post.json:3:65: "
                 "post_norms: not with \"norm\": \"layernorm\"");
    expect_error("layernorm_moe.json", HLX_ERR_PARSE, "layernorm_moe.json:3:32: norm: "
                 "\"layernorm\" only with a dense FFN");
    expect_error("norm_unknown.json", HLX_ERR_PARSE, "norm_unknown.json:3:44: norm: unknown "
                 "norm \"batchnorm\" (rms or layernorm)");
    expect_error("ffn_bias_glu.json", HLX_ERR_PARSE, "ffn_bias_glu.json:3:44: ffn_bias: only "
                 "with \"ffn_kind\": \"mlp\"");
    expect_error("mlp_clamp.json", HLX_ERR_PARSE, "mlp_clamp.json:3:63: ffn_act: "
                 "\"swiglu_clamp\" is a gated activation");
    expect_error("post_norms_mla.json", HLX_ERR_PARSE,
                 "post_norms_mla.json:4:3: post_norms: only with \"attn\": \"gqa\" and a "
                 "dense FFN");
}

/* qkv_bias, qk_norm, post_norms and tie_embeddings (Qwen2, Qwen3, GLM-4-0414, Gemma): read
 * from a model file, off by default, and counted in the parameters: Q*d + 2*K*d biases, 2*d
 * head norm weights and 2*H output norm weights per layer, a tied head not at all. */
static void test_gqa_extras(void **state)
{
    char err[1024];
    hlx_model_t m, plain;

    (void)state;
    load_data("gqa_extras.json", &m);
    assert_int_equal(m.qkv_bias, 1);
    assert_int_equal(m.qk_norm, 1);
    assert_int_equal(m.post_norms, 0);
    plain = m;
    plain.qkv_bias = plain.qk_norm = 0;
    assert_true(hlx_model_params(&m) - hlx_model_params(&plain) ==
                3.0 * (4 * 16 + 2 * 2 * 16 + 2 * 16));
    assert_true(hlx_model_hash(&m) != hlx_model_hash(&plain));
    load_data("post_norms.json", &m);
    assert_int_equal(m.post_norms, 1);
    plain = m;
    plain.post_norms = 0;
    assert_true(hlx_model_params(&m) - hlx_model_params(&plain) == 3.0 * 2 * 64);
    assert_true(hlx_model_hash(&m) != hlx_model_hash(&plain));
    /* OLMo 2's: the input norms gone (2*H per layer fewer than post_norms alone), the q and
     * k norms over the projections (Q*d + K*d per layer) */
    load_data("olmo2.json", &m);
    assert_true(m.post_norms && m.post_norms_only && m.qk_norm_proj && !m.qk_norm);
    plain = m;
    plain.post_norms = plain.post_norms_only = plain.qk_norm_proj = 0;
    assert_true(hlx_model_params(&m) - hlx_model_params(&plain) == 3.0 * (4 * 16 + 2 * 16));
    assert_true(hlx_model_hash(&m) != hlx_model_hash(&plain));
    plain = m;
    plain.post_norms_only = 0;
    assert_true(hlx_model_params(&plain) - hlx_model_params(&m) == 3.0 * 2 * 64);
    assert_true(hlx_model_hash(&m) != hlx_model_hash(&plain));
    plain = m;
    plain.qk_norm_proj = 0;
    assert_true(hlx_model_hash(&m) != hlx_model_hash(&plain));
    /* StarCoder2's: LayerNorms (a bias [H] beside each weight: 2 per layer and the final
     * one), the plain MLP (up and down, 2 H F in place of 3 H F) and its biases [F] and [H] */
    load_data("starcoder2.json", &m);
    assert_true(m.norm_layer && m.ffn_plain && m.ffn_bias && m.qkv_bias && m.o_bias &&
                m.ffn_act == HLX_ACT_GELU_TANH);
    plain = m;
    plain.norm_layer = 0;
    assert_true(hlx_model_params(&m) - hlx_model_params(&plain) == 3.0 * 2 * 64 + 64);
    assert_true(hlx_model_hash(&m) != hlx_model_hash(&plain));
    plain = m;
    plain.ffn_bias = 0;
    assert_true(hlx_model_params(&m) - hlx_model_params(&plain) == 3.0 * (128 + 64));
    assert_true(hlx_model_hash(&m) != hlx_model_hash(&plain));
    plain.ffn_plain = 0;
    assert_true(hlx_model_params(&plain) - hlx_model_params(&m) ==
                3.0 * (64 * 128 - 128 - 64));
    assert_true(hlx_model_hash(&m) != hlx_model_hash(&plain));
    /* tie_embeddings: the head's vocab x hidden weights counted once */
    load_data("tied.json", &m);
    assert_int_equal(m.tie_embeddings, 1);
    plain = m;
    plain.tie_embeddings = 0;
    assert_true(hlx_model_params(&plain) - hlx_model_params(&m) == 32.0 * 64);
    assert_true(hlx_model_hash(&m) != hlx_model_hash(&plain));
    assert_int_equal(hlx_model_load("tiny", &m, err, sizeof(err)), HLX_OK);
    assert_int_equal(m.qkv_bias, 0);
    assert_int_equal(m.qk_norm, 0);
    assert_int_equal(m.post_norms, 0);
    assert_int_equal(m.tie_embeddings, 0);
    /* Qwen2-MoE's shared expert gate: H weights per MoE layer */
    m.experts = 8;
    m.top_k = 2;
    m.expert_ffn = 64;
    m.shared_experts = 1;
    m.dense_layers = 0;
    plain = m;
    m.shared_gate = 1;
    assert_true(hlx_model_params(&m) - hlx_model_params(&plain) == (double)m.layers * m.hidden);
    assert_true(hlx_model_hash(&m) != hlx_model_hash(&plain));
}

/* gpt-oss's layer (attn_sinks, o_bias, router_bias, expert_bias, ffn_act swiglu_clamp):
 * read from a model file, off by default, the activation's alpha and limit defaulting to
 * gpt-oss's 1.702 and 7, each hashed and its weights counted: Q sinks and H o-bias per
 * layer, E router biases and 2 F + H per expert per MoE layer. */
static void test_gpt_oss_layer(void **state)
{
    hlx_model_t m, plain;

    (void)state;
    load_data("gpt_oss_layer.json", &m);
    assert_int_equal(m.ffn_act, HLX_ACT_SWIGLU_CLAMP);
    assert_true(m.act_alpha == 1.702 && m.act_limit == 7.0);
    assert_true(m.attn_sinks && m.o_bias && m.router_bias && m.expert_bias);
    plain = m;
    plain.attn_sinks = plain.o_bias = plain.router_bias = plain.expert_bias = 0;
    assert_true(hlx_model_params(&m) - hlx_model_params(&plain) ==
                2.0 * (4 + 64) + 2.0 * (4 + 4 * (2 * 32 + 64)));
#define HLX_T_FLIP(_f, _v) \
    do { \
        hlx_model_t o = m; \
        o._f = (_v); \
        assert_true(hlx_model_hash(&o) != hlx_model_hash(&m)); \
    } while (0)
    HLX_T_FLIP(attn_sinks, 0);
    HLX_T_FLIP(o_bias, 0);
    HLX_T_FLIP(router_bias, 0);
    HLX_T_FLIP(expert_bias, 0);
    HLX_T_FLIP(act_alpha, 1.5);
    HLX_T_FLIP(act_limit, 6.0);
    HLX_T_FLIP(rope_yarn_exact, 1);
#undef HLX_T_FLIP
    load_data("gqa_extras.json", &m);
    assert_true(!m.attn_sinks && !m.o_bias && !m.router_bias && !m.expert_bias &&
                m.ffn_act == HLX_ACT_SILU && m.act_alpha == 0.0 && m.act_limit == 0.0);
}

/* Gemma 2's soft-cappings: read from a model file (0 = none by default), hashed each, no
 * parameters of their own; the attention's refused for MLA, 0 refused where given. */
static void test_softcap(void **state)
{
    char err[1024];
    hlx_model_t m, plain;

    (void)state;
    load_data("softcap.json", &m);
    assert_true(m.attn_softcap == 50.0 && m.final_softcap == 30.5);
    plain = m;
    plain.attn_softcap = 0.0;
    assert_true(hlx_model_hash(&m) != hlx_model_hash(&plain));
    assert_true(hlx_model_params(&m) == hlx_model_params(&plain));
    plain = m;
    plain.final_softcap = 0.0;
    assert_true(hlx_model_hash(&m) != hlx_model_hash(&plain));
    assert_int_equal(hlx_model_load("tiny", &m, err, sizeof(err)), HLX_OK);
    assert_true(m.attn_softcap == 0.0 && m.final_softcap == 0.0);
    expect_error("softcap_mla.json", HLX_ERR_PARSE,
                 "softcap_mla.json:4:3: attn_softcap: only with \"attn\": \"gqa\"");
    expect_error("softcap_zero.json", HLX_ERR_PARSE, "softcap_zero.json:3:44: final_softcap: 0 "
                 "is outside");
}

/* Granite's multipliers: read from a model file (0 = none), hashed each, no parameters of
 * their own; embed_mult is the embedding's factor (hlx_model_embed_scale); residual_mult
 * read with experts (Granite MoE), refused with MLA, embed_mult beside embed_scale. */
static void test_granite(void **state)
{
    char err[1024];
    hlx_model_t m, plain;
    double *f[3];
    int i;

    (void)state;
    load_data("granite_mults.json", &m);
    assert_true(m.embed_mult == 12.0 && m.residual_mult == 0.22 && m.logits_scale == 8.0);
    assert_true(hlx_model_embed_scale(&m) == 12.0);
    assert_true(hlx_model_softmax_scale(&m, m.head_dim) == 0.0625);
    for (i = 0; i < 3; i++) {
        plain = m;
        f[0] = &plain.embed_mult, f[1] = &plain.residual_mult, f[2] = &plain.logits_scale;
        *f[i] = 0.0;
        assert_true(hlx_model_hash(&m) != hlx_model_hash(&plain));
        assert_true(hlx_model_params(&m) == hlx_model_params(&plain));
    }
    assert_int_equal(hlx_model_load("tiny", &m, err, sizeof(err)), HLX_OK);
    assert_true(m.embed_mult == 0.0 && hlx_model_embed_scale(&m) == 1.0);
    /* with experts (Granite MoE): the routed FFN's output scaled as a dense one's */
    load_data("granite_moe.json", &m);
    assert_true(m.residual_mult == 0.5 && m.experts == 4);
    expect_error("granite_mla.json", HLX_ERR_PARSE, "residual_mult: only with \"attn\": "
                 "\"gqa\"");
    expect_error("granite_gemma.json", HLX_ERR_PARSE, "embed_mult: only with \"attn\": "
                 "\"gqa\" and without embed_scale");
}

/* nope_pattern: which layers turn q and k by RoPE (SmolLM3: every fourth does not). */
static void test_nope_layers(void **state)
{
    char err[1024];
    hlx_model_t m;
    int l, n = 0;

    (void)state;
    assert_int_equal(hlx_model_load("tiny", &m, err, sizeof(err)), HLX_OK);
    assert_int_equal(m.nope_pattern, 0);
    for (l = 0; l < 8; l++)
        assert_true(hlx_model_layer_rope(&m, l));
    m.layers = 36;
    m.nope_pattern = 4; /* SmolLM3-3B: layers 3, 7, ..., 35 */
    for (l = 0; l < m.layers; l++) {
        assert_int_equal(hlx_model_layer_rope(&m, l), (l + 1) % 4 != 0);
        n += !hlx_model_layer_rope(&m, l);
    }
    assert_int_equal(n, 9);
}

/* Llama 4's per-layer helpers: the first position a query attends to (a window's, a chunk's
 * under window_chunked, 0 on a whole-context layer), the head norms under qk_norm_unit, the
 * attention temperature, and which layers are MoE under moe_step and their indices. */
static void test_llama4_layers(void **state)
{
    char err[1024];
    hlx_model_t m;
    int l;

    (void)state;
    assert_int_equal(hlx_model_load("tiny", &m, err, sizeof(err)), HLX_OK);
    m.layers = 8;
    m.sliding_window = 8;
    m.sliding_pattern = 4; /* layers 3 and 7 whole */
    assert_int_equal(hlx_model_layer_first(&m, 0, 5), 0);
    assert_int_equal(hlx_model_layer_first(&m, 0, 7), 0);
    assert_int_equal(hlx_model_layer_first(&m, 0, 8), 1); /* (p - 8, p] */
    assert_int_equal(hlx_model_layer_first(&m, 0, 20), 13);
    assert_int_equal(hlx_model_layer_first(&m, 3, 20), 0);
    m.window_chunked = 1; /* [p - p mod 8, p] */
    assert_int_equal(hlx_model_layer_first(&m, 0, 7), 0);
    assert_int_equal(hlx_model_layer_first(&m, 0, 8), 8);
    assert_int_equal(hlx_model_layer_first(&m, 1, 15), 8);
    assert_int_equal(hlx_model_layer_first(&m, 2, 16), 16);
    assert_int_equal(hlx_model_layer_first(&m, 2, 1000003), 1000000);
    assert_int_equal(hlx_model_layer_first(&m, 3, 20), 0);
    assert_int_equal(hlx_model_layer_first(&m, 7, 20), 0);
    for (l = 0; l < 4; l++) /* a chunk lies inside the window of the same length */
        assert_true(hlx_model_layer_first(&m, 0, 100 + l) >= 100 + l - m.sliding_window + 1);

    m.nope_pattern = 4; /* layers 3 and 7 NoPE */
    m.qk_norm = 1;
    for (l = 0; l < 8; l++)
        assert_int_equal(hlx_model_layer_qk_norm(&m, l), 1);
    m.qk_norm_unit = 1;
    for (l = 0; l < 8; l++)
        assert_int_equal(hlx_model_layer_qk_norm(&m, l), (l + 1) % 4 != 0);
    m.qk_norm = 0;
    assert_int_equal(hlx_model_layer_qk_norm(&m, 0), 0);

    /* 1 + scale ln(1 + floor((p + 1) / floor)) on NoPE layers only */
    assert_true(hlx_model_attn_temp(&m, 3, 100) == 1.0); /* no attn_temp_floor */
    m.attn_temp_floor = 4;
    m.attn_temp_scale = 0.1;
    assert_true(hlx_model_attn_temp(&m, 0, 100) == 1.0);
    assert_true(hlx_model_attn_temp(&m, 3, 0) == 1.0); /* floor(1 / 4) = 0 */
    assert_true(hlx_model_attn_temp(&m, 3, 2) == 1.0);
    assert_true(fabs(hlx_model_attn_temp(&m, 3, 3) - (1.0 + 0.1 * log(2.0))) < 1e-15);
    assert_true(fabs(hlx_model_attn_temp(&m, 7, 6) - (1.0 + 0.1 * log(2.0))) < 1e-15);
    assert_true(fabs(hlx_model_attn_temp(&m, 7, 7) - (1.0 + 0.1 * log(3.0))) < 1e-15);
    m.attn_temp_floor = 8192; /* Llama 4 Scout's */
    assert_true(hlx_model_attn_temp(&m, 3, 8190) == 1.0);
    assert_true(fabs(hlx_model_attn_temp(&m, 3, 8191) - (1.0 + 0.1 * log(2.0))) < 1e-15);

    /* moe_step: past dense_layers, layer l MoE where (l + 1) % step == 0 */
    m.experts = 4;
    m.dense_layers = 1;
    m.moe_step = 2; /* MoE layers 1, 3, 5, 7 */
    for (l = 0; l < 8; l++) {
        assert_int_equal(hlx_model_layer_moe(&m, l), l % 2 == 1);
        if (l % 2 == 1)
            assert_int_equal(hlx_model_moe_index(&m, l), l / 2);
    }
    assert_int_equal(hlx_model_moe_layers(&m), 4);
    m.dense_layers = 2; /* 3, 5, 7 */
    assert_int_equal(hlx_model_layer_moe(&m, 1), 0);
    assert_int_equal(hlx_model_moe_index(&m, 3), 0);
    assert_int_equal(hlx_model_moe_index(&m, 7), 2);
    assert_int_equal(hlx_model_moe_layers(&m), 3);
    m.dense_layers = 0;
    m.moe_step = 3; /* 2, 5 */
    for (l = 0; l < 8; l++)
        assert_int_equal(hlx_model_layer_moe(&m, l), l == 2 || l == 5);
    assert_int_equal(hlx_model_moe_index(&m, 5), 1);
    assert_int_equal(hlx_model_moe_layers(&m), 2);
    m.moe_step = 0; /* every layer past dense_layers */
    m.dense_layers = 3;
    for (l = 0; l < 8; l++) {
        assert_int_equal(hlx_model_layer_moe(&m, l), l >= 3);
        if (l >= 3)
            assert_int_equal(hlx_model_moe_index(&m, l), l - 3);
    }
    assert_int_equal(hlx_model_moe_layers(&m), 5);
    m.moe_step = 1;
    assert_int_equal(hlx_model_moe_layers(&m), 5);
    m.experts = 0; /* a dense model */
    assert_int_equal(hlx_model_layer_moe(&m, 5), 0);
    assert_int_equal(hlx_model_moe_layers(&m), 0);
}

/* sliding_window and sliding_pattern: which layers are windowed, where a window starts, and
 * that both are hashed. */
static void test_sliding_window(void **state)
{
    char err[1024];
    hlx_model_t m, plain;

    (void)state;
    assert_int_equal(hlx_model_load("tiny", &m, err, sizeof(err)), HLX_OK);
    assert_int_equal(m.sliding_window, 0);
    assert_int_equal(hlx_model_layer_window(&m, 0), 0);
    m.layers = 12;
    m.sliding_window = 512;
    assert_int_equal(hlx_model_layer_window(&m, 0), 512); /* pattern 0: every layer */
    assert_int_equal(hlx_model_layer_window(&m, 11), 512);
    m.sliding_pattern = 6; /* Gemma 3: layers 5 and 11 whole, the others windowed */
    assert_int_equal(hlx_model_layer_window(&m, 4), 512);
    assert_int_equal(hlx_model_layer_window(&m, 5), 0);
    assert_int_equal(hlx_model_layer_window(&m, 6), 512);
    assert_int_equal(hlx_model_layer_window(&m, 11), 0);
    m.sliding_from = 7; /* and none before layer 7 (Qwen2's max_window_layers) */
    assert_int_equal(hlx_model_layer_window(&m, 6), 0);
    assert_int_equal(hlx_model_layer_window(&m, 7), 512);
    assert_int_equal(hlx_model_layer_window(&m, 11), 0);
    m.sliding_pattern = 0;
    assert_int_equal(hlx_model_layer_window(&m, 0), 0);
    assert_int_equal(hlx_model_layer_window(&m, 11), 512);
    plain = m;
    plain.sliding_from = 6;
    assert_true(hlx_model_hash(&m) != hlx_model_hash(&plain));
    m.sliding_from = 0;
    m.sliding_pattern = 6;
    /* the window is the last w positions, the query's own included */
    assert_int_equal(hlx_model_window_start(512, 511), 0);
    assert_int_equal(hlx_model_window_start(512, 512), 1);
    assert_int_equal(hlx_model_window_start(512, 1000000), 1000000 - 511);
    assert_int_equal(hlx_model_window_start(1, 7), 7);
    assert_int_equal(hlx_model_window_start(0, 7), 0);
    /* the embedding's factor: sqrt(H) in the weights' dtype (bf16(sqrt(320)) = 17.875) */
    assert_true(hlx_model_embed_scale(&m) == 1.0);
    m.embed_scale = 1;
    m.hidden = 320;
    m.weight_dtype = HLX_DTYPE_BF16;
    assert_true(hlx_model_embed_scale(&m) == 17.875);
    m.weight_dtype = HLX_DTYPE_F32;
    assert_true(hlx_model_embed_scale(&m) == (double)sqrtf(320.0f));
    m.embed_scale = 0;
    /* what the planners read: 2 whole layers of 12 at a million positions, 10 windows */
    assert_true(hlx_model_attn_tokens(&m, 1e6) == (2 * 1e6 + 10 * 512.0) / 12);
    assert_true(hlx_model_attn_tokens(&m, 100) == 100);
    plain = m;
    plain.sliding_pattern = 2;
    assert_true(hlx_model_hash(&m) != hlx_model_hash(&plain));
    plain = m;
    plain.sliding_window = 511;
    assert_true(hlx_model_hash(&m) != hlx_model_hash(&plain));
    assert_true(hlx_model_params(&m) == hlx_model_params(&plain));
}

static void test_unknown_preset(void **state)
{
    char err[1024] = "", longpath[1200];
    hlx_model_t m;

    (void)state;
    /* a path longer than the loader holds is refused, never opened cut short */
    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[0] = '/';
    longpath[sizeof(longpath) - 1] = '\0';
    assert_int_equal(hlx_model_load(longpath, &m, err, sizeof(err)), HLX_ERR_INVALID);
    assert_non_null(strstr(err, "path longer than 1023 characters"));
    assert_int_equal(hlx_model_load("llama-406b", &m, err, sizeof(err)), HLX_ERR_NOT_FOUND);
    assert_non_null(strstr(err, "llama-406b"));
    assert_non_null(strstr(err, "deepseek-r1, gemma-2-9b, gemma-3-27b, gpt-oss-120b, gpt-oss-20b, "
                                "helix-fig1, internlm2.5-7b-1m, "
                                "llama-3.2-3b, llama-405b, mistral-7b-v0.1, qwen2.5-7b-1m, "
                                "qwen3-235b-a22b, seed-oss-36b, tiny"));
}

/* Decode refuses what the runtime does not run, naming the field; the planner loads it. */
static void test_runnable(void **state)
{
    char path[1024], err[1024] = "", want[1200];
    hlx_model_t m;

    (void)state;
    snprintf(path, sizeof(path), "%s/moe_dense.json", g_data);
    assert_int_equal(hlx_model_load(path, &m, err, sizeof(err)), HLX_OK);
    assert_int_equal(m.experts, 8);
    /* MoE FFNs with GQA attention run, with the gating defaults */
    assert_int_equal(hlx_model_check_runnable(&m, err, sizeof(err)), HLX_OK);
    assert_int_equal(hlx_model_load_runnable(path, &m, err, sizeof(err)), HLX_OK);
    assert_int_equal(m.moe_scoring, HLX_MOE_SOFTMAX);
    assert_true(m.routed_scaling == 1.0 && !m.norm_topk_prob);
    assert_true(m.n_group == 1 && m.topk_group == 1);
    (void)want;

    assert_int_equal(hlx_model_load_runnable("deepseek-r1", &m, err, sizeof(err)),
                     HLX_ERR_INVALID);
    /* MLA attention and MoE layers run; the preset's fp4 weights are what is refused */
    assert_non_null(strstr(err, "weight_dtype"));
    assert_null(strstr(err, "kv_lora_rank"));
    assert_null(strstr(err, "experts"));
    assert_int_equal(hlx_model_load("deepseek-r1", &m, err, sizeof(err)), HLX_OK);
    m.weight_dtype = HLX_DTYPE_BF16;
    assert_int_equal(hlx_model_check_runnable(&m, err, sizeof(err)), HLX_OK);

    /* fp4 weights (the planner's presets) are not run either; the message names no
     * MLA or MoE field when the file has none */
    assert_int_equal(hlx_model_load_runnable("llama-405b", &m, err, sizeof(err)),
                     HLX_ERR_INVALID);
    assert_non_null(strstr(err, "llama-405b.json:13:3: weight_dtype: fp4 weights are not run"));
    assert_null(strstr(err, "also"));

    assert_int_equal(hlx_model_load_runnable("tiny", &m, err, sizeof(err)), HLX_OK);
    assert_string_equal(m.name, "tiny");
    assert_int_equal(hlx_model_check_runnable(&m, err, sizeof(err)), HLX_OK);
}

/* Each field of hlx_model_t, by offset and size: changing any one changes the hash. */
#define HLX_F(_f) { #_f, offsetof(hlx_model_t, _f), sizeof(((hlx_model_t *)0)->_f) }
static const struct { const char *name; size_t off, size; } g_fields[] = {
    HLX_F(name), HLX_F(attn), HLX_F(layers), HLX_F(hidden), HLX_F(q_heads),
    HLX_F(kv_heads), HLX_F(head_dim), HLX_F(v_head_dim), HLX_F(ffn), HLX_F(vocab),
    HLX_F(rope_theta), HLX_F(rope_dim), HLX_F(norm_eps), HLX_F(weight_dtype),
    HLX_F(kv_dtype), HLX_F(q_lora_rank), HLX_F(kv_lora_rank), HLX_F(qk_nope_dim),
    HLX_F(qk_rope_dim), HLX_F(experts), HLX_F(top_k), HLX_F(shared_experts),
    HLX_F(expert_ffn), HLX_F(dense_layers), HLX_F(moe_scoring), HLX_F(norm_topk_prob),
    HLX_F(routed_scaling), HLX_F(n_group), HLX_F(topk_group), HLX_F(rope_kind),
    HLX_F(rope_orig_ctx), HLX_F(rope_factor), HLX_F(rope_low_freq), HLX_F(rope_high_freq),
    HLX_F(rope_beta_fast), HLX_F(rope_beta_slow), HLX_F(rope_mscale), HLX_F(rope_mscale_all),
    HLX_F(rope_attn_factor), HLX_F(rope_long), HLX_F(rope_short_factor),
    HLX_F(rope_long_factor), HLX_F(qkv_bias), HLX_F(qk_norm), HLX_F(moe_group_score),
    HLX_F(shared_gate), HLX_F(post_norms), HLX_F(sliding_window), HLX_F(sliding_pattern),
    HLX_F(ffn_act), HLX_F(embed_scale), HLX_F(attn_scalar), HLX_F(rope_local_theta),
    HLX_F(sliding_from), HLX_F(attn_softcap), HLX_F(final_softcap), HLX_F(tie_embeddings),
    HLX_F(embed_mult), HLX_F(residual_mult), HLX_F(logits_scale), HLX_F(dca_chunk),
    HLX_F(dca_local), HLX_F(dca_orig), HLX_F(nope_pattern), HLX_F(act_alpha), HLX_F(act_limit),
    HLX_F(attn_sinks), HLX_F(o_bias), HLX_F(router_bias), HLX_F(expert_bias),
    HLX_F(rope_yarn_exact), HLX_F(post_norms_only), HLX_F(qk_norm_proj), HLX_F(norm_layer),
    HLX_F(ffn_plain), HLX_F(ffn_bias), HLX_F(qk_norm_unit), HLX_F(window_chunked),
    HLX_F(attn_temp_floor), HLX_F(attn_temp_scale), HLX_F(moe_step), HLX_F(moe_weight_input),
};

/* RoPE scaling against the Hugging Face code written out again here, step for step as
 * there (transformers' _compute_llama3_parameters, linear scaling and
 * _compute_yarn_parameters' attention factor; DeepSeek-V3's DeepseekV3YarnRotaryEmbedding
 * and DeepseekV3Attention's softmax scale). */
static double hf_yarn_get_mscale(double scale, double mscale)
{
    if (scale <= 1)
        return 1.0;
    return 0.1 * mscale * log(scale) + 1.0;
}

static double hf_yarn_find_correction_dim(double num_rotations, int dim, double base,
                                          double max_pos)
{
    return (dim * log(max_pos / (num_rotations * 2 * 3.14159265358979323846))) /
           (2 * log(base));
}

static void hf_freqs(const hlx_model_t *m, int dim, double *out, double *ms)
{
    const double pi = 3.14159265358979323846;
    int i;

    *ms = 1.0;
    for (i = 0; i < dim / 2; i++) {
        double inv = 1.0 / pow(m->rope_theta, (2.0 * i) / dim);
        if (m->rope_kind == HLX_ROPE_LINEAR) {
            out[i] = inv / m->rope_factor;
        } else if (m->rope_kind == HLX_ROPE_LLAMA3) {
            double old_ctx = m->rope_orig_ctx, lf = m->rope_low_freq, hf = m->rope_high_freq;
            double low_wl = old_ctx / lf, high_wl = old_ctx / hf, wl = 2 * pi / inv;
            double llama = wl > low_wl ? inv / m->rope_factor : inv;
            double smooth = (old_ctx / wl - lf) / (hf - lf);
            double smoothed = (1 - smooth) * llama / m->rope_factor + smooth * llama;
            int medium = !(wl < high_wl) && !(wl > low_wl);
            out[i] = medium ? smoothed : llama;
        } else if (m->rope_kind == HLX_ROPE_YARN) {
            double extra = 1.0 / pow(m->rope_theta, (2.0 * i) / dim);
            double inter = 1.0 / (m->rope_factor * pow(m->rope_theta, (2.0 * i) / dim));
            double low = hf_yarn_find_correction_dim(m->rope_beta_fast, dim, m->rope_theta,
                                                     m->rope_orig_ctx);
            double high = hf_yarn_find_correction_dim(m->rope_beta_slow, dim, m->rope_theta,
                                                      m->rope_orig_ctx);
            double ramp, mask;
            if (!m->rope_yarn_exact) { /* truncate (true unless the config says false) */
                low = floor(low);
                high = ceil(high);
            }
            low = low > 0 ? low : 0;
            high = high < dim - 1 ? high : dim - 1;
            if (low == high)
                high += 0.001;
            ramp = (i - low) / (high - low);
            ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
            mask = 1.0 - ramp;
            out[i] = inter * (1 - mask) + extra * mask;
            if (m->attn == HLX_ATTN_MLA) /* DeepseekV3YarnRotaryEmbedding */
                *ms = hf_yarn_get_mscale(m->rope_factor, m->rope_mscale) /
                      hf_yarn_get_mscale(m->rope_factor, m->rope_mscale_all);
            else if (m->rope_mscale && m->rope_mscale_all) /* transformers' yarn */
                *ms = hf_yarn_get_mscale(m->rope_factor, m->rope_mscale) /
                      hf_yarn_get_mscale(m->rope_factor, m->rope_mscale_all);
            else
                *ms = hf_yarn_get_mscale(m->rope_factor, 1.0);
        } else {
            out[i] = inv;
        }
    }
}

/* Dynamic NTK: the plain frequencies up to the original context, then those of the base
 * theta (f s / orig - (f - 1))^(d / (d - 2)) of InternLM2 and transformers, worked out here
 * with the published InternLM2.5-7B-Chat-1M numbers; which length turns which position. */
static void test_rope_dynamic(void **state)
{
    hlx_model_t m;
    double a[64], plain, base, ms = 0;
    int i;

    (void)state;
    memset(&m, 0, sizeof(m));
    m.rope_kind = HLX_ROPE_DYNAMIC;
    m.rope_theta = 50000000.0;
    m.rope_factor = 2.5;
    m.rope_orig_ctx = 262144;
    hlx_model_rope_freqs_at(&m, 128, 262144, a, &ms);
    for (i = 0; i < 64; i++)
        assert_true(a[i] == pow(50000000.0, -2.0 * i / 128));
    assert_true(ms == 1.0);
    /* one past: the base already grows (by (1 + 2.5 / 262144)^(128/126)) */
    hlx_model_rope_freqs_at(&m, 128, 262145, a, &ms);
    assert_true(a[1] < pow(50000000.0, -2.0 / 128));
    /* 1M: 2.5 x 4 - 1.5 = 8.5, the base 50e6 x 8.5^(128/126) */
    base = 50000000.0 * pow(8.5, 128.0 / 126.0);
    hlx_model_rope_freqs_at(&m, 128, 1048576, a, &ms);
    for (i = 0; i < 64; i++) {
        plain = 1.0 / pow(base, 2.0 * i / 128);
        if (fabs(a[i] - plain) > 1e-14 * plain)
            fail_msg("pair %d: %.17g, the formula gives %.17g", i, a[i], plain);
    }
    assert_true(ms == 1.0);
    /* a prompt's positions turn with its whole length, a later position with its own + 1 */
    assert_int_equal(hlx_model_rope_seq(1000, 0), 1000);
    assert_int_equal(hlx_model_rope_seq(1000, 998), 1000);
    assert_int_equal(hlx_model_rope_seq(1000, 999), 1000);
    assert_int_equal(hlx_model_rope_seq(1000, 1000), 1001);
    assert_int_equal(hlx_model_rope_seq(0, 7), 8);
    /* another kind ignores the length */
    m.rope_kind = HLX_ROPE_LINEAR;
    hlx_model_rope_freqs_at(&m, 128, 1048576, a, &ms);
    assert_true(a[1] == pow(50000000.0, -2.0 / 128) / 2.5);
    assert_string_equal(hlx_model_rope_kind_name(HLX_ROPE_DYNAMIC), "dynamic");
    assert_string_equal(hlx_model_rope_kind_name(HLX_ROPE_NONE), "none");
}

static void test_rope_scaling(void **state)
{
    hlx_model_t m;
    double a[HLX_ROPE_MAX_PAIRS], b[HLX_ROPE_MAX_PAIRS], ma, mb, sc;
    int k, i, kept = 0, scaled = 0, between = 0;

    (void)state;
    for (k = 0; k < 4; k++) {
        int dim = k == 3 ? 64 : 128;
        memset(&m, 0, sizeof(m));
        m.rope_theta = k == 1 ? 500000.0 : 10000.0;
        m.rope_kind = (hlx_rope_kind_t)k;
        m.rope_factor = k == 1 ? 8.0 : k == 2 ? 4.0 : k == 3 ? 40.0 : 1.0;
        if (k == 1) { /* Llama 3.1 */
            m.rope_kind = HLX_ROPE_LLAMA3;
            m.rope_orig_ctx = 8192;
            m.rope_low_freq = 1.0;
            m.rope_high_freq = 4.0;
        } else if (k == 2) {
            m.rope_kind = HLX_ROPE_LINEAR;
        } else if (k == 3) { /* DeepSeek-V3 */
            m.rope_kind = HLX_ROPE_YARN;
            m.rope_orig_ctx = 4096;
            m.rope_beta_fast = 32;
            m.rope_beta_slow = 1;
            m.rope_mscale = 1.0;
            m.rope_mscale_all = 0.707; /* != mscale: the cos/sin factor is not 1 */
        }
        hlx_model_rope_freqs(&m, dim, a, &ma);
        hf_freqs(&m, dim, b, &mb);
        for (i = 0; i < dim / 2; i++) {
            if (fabs(a[i] - b[i]) > 1e-15 * b[i])
                fail_msg("kind %d pair %d: %.17g, the formula gives %.17g", k, i, a[i], b[i]);
            if (k == 1) { /* llama3 touches only the low frequencies */
                double plain = pow(500000.0, -2.0 * i / dim);
                kept += a[i] == plain;
                scaled += fabs(a[i] - plain / 8) < 1e-15 * plain;
                between += a[i] != plain && fabs(a[i] - plain / 8) >= 1e-15 * plain;
            }
        }
        assert_true(fabs(ma - mb) < 1e-15);
    }
    assert_true(kept > 0 && scaled > 0 && between > 0);
    /* gpt-oss's yarn (factor 32 over 4096 positions, base 150000, head 64, truncate false):
     * the ramp's ends as computed, which moves pairs inside the ramp off the rounded one */
    {
        hlx_model_t g;
        double fa[32], fb[32], fr[32];
        int moved = 0;
        memset(&g, 0, sizeof(g));
        g.rope_kind = HLX_ROPE_YARN;
        g.rope_theta = 150000.0;
        g.rope_factor = 32.0;
        g.rope_orig_ctx = 4096;
        g.rope_beta_fast = 32;
        g.rope_beta_slow = 1;
        hlx_model_rope_freqs(&g, 64, fr, &ma); /* rounded */
        g.rope_yarn_exact = 1;
        hlx_model_rope_freqs(&g, 64, fa, &ma);
        hf_freqs(&g, 64, fb, &mb);
        for (i = 0; i < 32; i++) {
            if (fabs(fa[i] - fb[i]) > 1e-15 * fb[i])
                fail_msg("gpt-oss yarn pair %d: %.17g, the formula gives %.17g", i, fa[i], fb[i]);
            moved += fa[i] != fr[i];
        }
        assert_true(moved > 0);
        assert_true(fabs(ma - (0.1 * log(32.0) + 1.0)) < 1e-15 && fabs(ma - mb) < 1e-15);
    }
    /* DeepSeek-V3's softmax scale: (0.1 ln 40 + 1)^2 / sqrt(192); transformers' attention
     * of the GQA families keeps 1 / sqrt(d) under yarn */
    m.rope_mscale_all = 1.0;
    m.attn = HLX_ATTN_MLA;
    sc = hlx_model_softmax_scale(&m, 192);
    assert_true(fabs(sc - pow(0.1 * log(40.0) + 1, 2) / sqrt(192.0)) < 1e-15);
    m.attn = HLX_ATTN_GQA;
    assert_true(hlx_model_softmax_scale(&m, 192) == 1.0 / sqrt(192.0));
    /* the cos/sin factor of yarn with one of mscale / mscale_all_dim set: DeepSeek's
     * modeling code takes the ratio, transformers mscale(factor, 1) */
    {
        static const double sets[][2] = { { 0.0, 0.707 }, { 0.707, 0.0 }, { 1.0, 0.707 } };
        double fa[64], fb[64];
        size_t s;
        int attn;
        for (attn = 0; attn < 2; attn++)
            for (s = 0; s < sizeof(sets) / sizeof(sets[0]); s++) {
                m.attn = attn ? HLX_ATTN_MLA : HLX_ATTN_GQA;
                m.rope_mscale = sets[s][0];
                m.rope_mscale_all = sets[s][1];
                hlx_model_rope_freqs(&m, 64, fa, &ma);
                hf_freqs(&m, 64, fb, &mb);
                assert_true(fabs(ma - mb) < 1e-15);
            }
        m.attn = HLX_ATTN_GQA;
        m.rope_mscale = 0.707;
        m.rope_mscale_all = 0.0;
        hlx_model_rope_freqs(&m, 64, fa, &ma);
        assert_true(fabs(ma - (0.1 * log(40.0) + 1)) < 1e-15); /* mscale alone: unused */
        m.attn = HLX_ATTN_MLA;
        hlx_model_rope_freqs(&m, 64, fa, &mb);
        assert_true(fabs(mb - (0.0707 * log(40.0) + 1)) < 1e-15);
    }
    m.rope_kind = HLX_ROPE_NONE;
    assert_true(hlx_model_softmax_scale(&m, 192) == 1.0 / sqrt(192.0));
}

/* longrope (Phi-3) from config.json, against transformers' _compute_longrope_parameters
 * and the Phi-3 rotary embedding's choice, written out again here from the formulas:
 * original = config's top-level original_max_position_embeddings, else rope_scaling's;
 * factor = max_position_embeddings / original with the top-level key, else rope_scaling's
 * factor (1); attention_factor given, else 1 for factor <= 1, else
 * sqrt(1 + ln(factor) / ln(original)); ext = long_factor when the sequence (largest
 * position + 1) exceeds original, else short_factor; inv_freq[i] = 1 / (ext[i] *
 * theta^(2i / dim)). */
typedef struct {
    const char *what;
    double      theta;
    int         head_dim, max_pos;
    int         top_orig, rs_orig;  /* 0: the key is absent */
    double      rs_factor, attn;    /* 0: absent */
} hf_lr_case_t;

static void hf_lr_factors(int pairs, double *sf, double *lf)
{
    int i;

    for (i = 0; i < pairs; i++) { /* Phi-3-like: short near 1, long growing to ~50 */
        sf[i] = 1.0 + 0.03 * (i % 5);
        lf[i] = 1.0 + 1.05 * i * i / pairs;
    }
}

static void hf_longrope(const hf_lr_case_t *c, long seq_len, double *out, double *attn)
{
    const int dim = c->head_dim;
    double sf[HLX_ROPE_MAX_PAIRS], lf[HLX_ROPE_MAX_PAIRS], factor, orig;
    const double *ext;
    int i;

    hf_lr_factors(dim / 2, sf, lf);
    if (c->top_orig > 0) {
        orig = c->top_orig;
        factor = (double)c->max_pos / c->top_orig;
    } else {
        orig = c->rs_orig;
        factor = c->rs_factor > 0 ? c->rs_factor : 1.0;
    }
    *attn = c->attn > 0 ? c->attn : factor <= 1.0 ? 1.0 : sqrt(1 + log(factor) / log(orig));
    ext = seq_len > orig ? lf : sf;
    for (i = 0; i < dim / 2; i++) /* torch.arange(0, dim, 2) / dim */
        out[i] = 1.0 / (ext[i] * pow(c->theta, (double)(2 * i) / dim));
}

/* A LlamaForCausalLM config.json (Phi-3-mini's shapes) with c's longrope into dir. */
static void hf_lr_write(const char *dir, const hf_lr_case_t *c)
{
    double sf[HLX_ROPE_MAX_PAIRS], lf[HLX_ROPE_MAX_PAIRS];
    char path[512];
    FILE *f;
    int i, pairs = c->head_dim / 2;

    hf_lr_factors(pairs, sf, lf);
    snprintf(path, sizeof(path), "%s/config.json", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": %d,\n"
               "\"intermediate_size\": 8192, \"num_hidden_layers\": 2, "
               "\"num_attention_heads\": 32, \"num_key_value_heads\": 32, \"head_dim\": %d,\n"
               "\"vocab_size\": 32064, \"rope_theta\": %.17g, \"max_position_embeddings\": %d,\n",
            32 * c->head_dim, c->head_dim, c->theta, c->max_pos);
    if (c->top_orig > 0)
        fprintf(f, "\"original_max_position_embeddings\": %d,\n", c->top_orig);
    fprintf(f, "\"rope_scaling\": {\"type\": \"longrope\"");
    if (c->rs_orig > 0)
        fprintf(f, ", \"original_max_position_embeddings\": %d", c->rs_orig);
    if (c->rs_factor > 0)
        fprintf(f, ", \"factor\": %.17g", c->rs_factor);
    if (c->attn > 0)
        fprintf(f, ", \"attention_factor\": %.17g", c->attn);
    for (i = 0; i < 2 * pairs; i++)
        fprintf(f, "%s%.17g", i == 0 ? ",\n \"short_factor\": [" : i == pairs ? "],\n "
                "\"long_factor\": [" : ", ", i < pairs ? sf[i] : lf[i - pairs]);
    fprintf(f, "]}}\n");
    assert_int_equal(fclose(f), 0);
}

static void test_rope_longrope(void **state)
{
    static const hf_lr_case_t cases[] = {
        /* Phi-3-mini-128k: top-level original, attention_factor derived from 131072 / 4096 */
        { "top-level original", 10000.0, 96, 131072, 4096, 0, 0, 0 },
        /* Phi-3.5: the same, a rope_scaling factor transformers does not use */
        { "top-level wins", 10000.0, 96, 131072, 4096, 2048, 7.0, 0 },
        /* original in rope_scaling with its factor; attention_factor given */
        { "rope_scaling original", 500000.0, 128, 8192, 0, 8192, 4.0, 1.25 },
        /* no factor: 1, so attention_factor 1 */
        { "factor absent", 10000.0, 64, 4096, 0, 2048, 0, 0 },
    };
    char tmpl[] = "/tmp/hlx_longrope_XXXXXX", err[1024] = "", cmd[600];
    double a[HLX_ROPE_MAX_PAIRS], b[HLX_ROPE_MAX_PAIRS], sa[HLX_ROPE_MAX_PAIRS], ma, mb;
    const char *dir = mkdtemp(tmpl);
    size_t k;
    int i, s;

    (void)state;
    assert_non_null(dir);
    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const hf_lr_case_t *c = &cases[k];
        const int orig = c->top_orig > 0 ? c->top_orig : c->rs_orig;
        /* within the original context (short), at it (short), one past it (long), far past */
        const long lens[] = { 1, orig, orig + 1, 4L * orig };
        hlx_hf_config_t cfg, back;
        uint64_t hs = 0;
        char *text;
        FILE *f;

        hf_lr_write(dir, c);
        if (hlx_hf_config_load(dir, &cfg, err, sizeof(err)) != HLX_OK)
            fail_msg("%s: %s", c->what, err);
        assert_int_equal(cfg.m.rope_kind, HLX_ROPE_LONGROPE);
        assert_int_equal(cfg.m.rope_long, 0); /* loaded: short until a run chooses */
        for (s = 0; s < 4; s++) {
            hlx_model_t m = cfg.m;
            int want_long = lens[s] > orig;
            hlx_model_rope_select(&m, lens[s]);
            assert_int_equal(m.rope_long, want_long);
            hlx_model_rope_freqs(&m, m.rope_dim, a, &ma);
            hf_longrope(c, lens[s], b, &mb);
            for (i = 0; i < m.rope_dim / 2; i++)
                if (fabs(a[i] - b[i]) > 1e-15 * b[i])
                    fail_msg("%s, length %ld: pair %d: %.17g, the formula gives %.17g", c->what,
                             lens[s], i, a[i], b[i]);
            if (fabs(ma - mb) > 1e-15)
                fail_msg("%s: attention factor %.17g, the formula gives %.17g", c->what, ma, mb);
            if (s == 0) {
                memcpy(sa, a, sizeof(a));
                hs = hlx_model_hash(&m);
            } else if (want_long) { /* the long set is another rotation, and hashes apart */
                for (i = 1; i < m.rope_dim / 2 && a[i] == sa[i]; i++)
                    ;
                assert_true(i < m.rope_dim / 2);
                assert_true(hlx_model_hash(&m) != hs);
            }
        }
        /* config.json as helix writes it reads back as the same model */
        text = hlx_hf_config_text(&cfg);
        assert_non_null(text);
        snprintf(cmd, sizeof(cmd), "%s/config.json", dir);
        f = fopen(cmd, "w");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
        free(text);
        if (hlx_hf_config_load(dir, &back, err, sizeof(err)) != HLX_OK)
            fail_msg("%s: written back: %s", c->what, err);
        assert_true(hlx_model_hash(&back.m) == hlx_model_hash(&cfg.m));
    }
    /* another kind never takes the long set */
    {
        hlx_model_t m;
        memset(&m, 0, sizeof(m));
        m.rope_kind = HLX_ROPE_YARN;
        m.rope_orig_ctx = 16;
        hlx_model_rope_select(&m, 1000000);
        assert_int_equal(m.rope_long, 0);
    }
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_hash(void **state)
{
    hlx_model_t a, b;
    char err[1024] = "";
    size_t i, covered = 0;
    uint64_t h;

    (void)state;
    assert_int_equal(hlx_model_load("deepseek-r1", &a, err, sizeof(err)), HLX_OK);
    h = hlx_model_hash(&a);
    memcpy(&b, &a, sizeof(b));
    assert_true(hlx_model_hash(&b) == h);
    for (i = 0; i < sizeof(g_fields) / sizeof(g_fields[0]); i++) {
        unsigned char *p = (unsigned char *)&b + g_fields[i].off;
        covered += g_fields[i].size;
        memcpy(&b, &a, sizeof(b));
        if (!strcmp(g_fields[i].name, "rope_theta"))
            b.rope_theta *= 1.0 + 1e-12; /* below what a scaled integer would see */
        else if (!strcmp(g_fields[i].name, "norm_eps"))
            b.norm_eps *= 1.0 + 1e-9;
        else if (!strcmp(g_fields[i].name, "name"))
            b.name[0] ^= 1;
        else
            p[0] ^= 1; /* the low byte of an int or enum (little-endian) */
        if (hlx_model_hash(&b) == h)
            fail_msg("changing %s does not change hlx_model_hash", g_fields[i].name);
    }
    /* every element of longrope's arrays, not only the first */
    memcpy(&b, &a, sizeof(b));
    b.rope_short_factor[HLX_ROPE_MAX_PAIRS - 1] = 1.5;
    assert_true(hlx_model_hash(&b) != h);
    memcpy(&b, &a, sizeof(b));
    b.rope_long_factor[HLX_ROPE_MAX_PAIRS - 1] = 1.5;
    assert_true(hlx_model_hash(&b) != h);
    /* plain and plain_dtype (what an fp8 checkpoint stores unquantized) are the planner's
     * alone and not hashed: the ranks run the same whatever they say, and a model file
     * written from a checkpoint (model info --json) hashes as the checkpoint */
    memcpy(&b, &a, sizeof(b));
    b.plain = HLX_MODEL_PLAIN_HEAD | HLX_MODEL_PLAIN_ATTN;
    b.plain_dtype = HLX_DTYPE_F32;
    assert_true(hlx_model_hash(&b) == h);
    covered += sizeof(b.plain) + sizeof(b.plain_dtype);
    /* the list above is every field: their sizes add up to the struct less padding (4
     * bytes after each of four ints followed by a double on LP64; one more int breaks it) */
    assert_true(covered <= sizeof(hlx_model_t) && covered + 20 > sizeof(hlx_model_t));
}

/* Every truncation of a preset and every single-character corruption of it is either
 * accepted or refused with "path:line:column: ..."; nothing crashes. */
static hlx_status_t load_model(const char *path, char *err, size_t errlen)
{
    hlx_model_t m;

    return hlx_model_load(path, &m, err, errlen);
}

static void test_mutations(void **state)
{
    char src[1024];

    (void)state;
    snprintf(src, sizeof(src), "%s/models/deepseek-r1.json", hlx_data_dir());
    hlx_mutate_file(src, load_model);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiny),
        cmocka_unit_test(test_llama),
        cmocka_unit_test(test_qwen25),
        cmocka_unit_test(test_qwen3_moe),
        cmocka_unit_test(test_deepseek),
        cmocka_unit_test(test_fig1),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_gqa_extras),
        cmocka_unit_test(test_softcap),
        cmocka_unit_test(test_granite),
        cmocka_unit_test(test_sliding_window),
        cmocka_unit_test(test_nope_layers),
        cmocka_unit_test(test_llama4_layers),
        cmocka_unit_test(test_unknown_preset),
        cmocka_unit_test(test_mutations),
        cmocka_unit_test(test_runnable),
        cmocka_unit_test(test_hash),
        cmocka_unit_test(test_rope_scaling),
        cmocka_unit_test(test_rope_dynamic),
        cmocka_unit_test(test_internlm25),
        cmocka_unit_test(test_mistral7b),
        cmocka_unit_test(test_gemma2_9b),
        cmocka_unit_test(test_seed_oss_36b),
        cmocka_unit_test(test_gpt_oss),
        cmocka_unit_test(test_gpt_oss_layer),
        cmocka_unit_test(test_gemma3_27b),
        cmocka_unit_test(test_llama32_3b),
        cmocka_unit_test(test_rope_longrope),
    };

    g_data = argc > 1 ? argv[1] : "tests/model/data";
    return cmocka_run_group_tests(tests, NULL, NULL);
}
