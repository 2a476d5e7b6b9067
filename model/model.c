/* Model descriptions: JSON files or presets under <data dir>/models, read through field
 * tables so every bad key or size is reported as file:line:column: key: reason. */
#define _GNU_SOURCE
#include <helix/model.h>

#include "hlx_config.h"
#include "hlx_gating.h"
#include "hlx_json.h"
#include "hlx_log.h"
#include "hlx_param.h"

#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* What the file holds before the enum-valued strings are converted. */
typedef struct {
    hlx_model_t m;
    char        attn[16];
    char        weight_dtype[16];
    char        kv_dtype[16];
    char        scoring[16];
    char        rope_scaling[16];
    char        group_score[16];
    char        ffn_act[16];
    char        norm[16];
    char        ffn_kind[16];
    int         rope_truncate; /* the "rope" object's truncate (1 when absent) */
} hlx_model_raw_t;

#define HLX_MF_INT(_k, _req, _min, _help) \
    { #_k, HLX_JT_INT, offsetof(hlx_model_raw_t, m._k), _req, _min, 999999, 0, _help }
#define HLX_MF_STR(_k, _off, _req, _help) \
    { _k, HLX_JT_STRING, offsetof(hlx_model_raw_t, _off), _req, 1, 0, 16, _help }

static const hlx_jfield_t hlx_model_fields[] = {
    { "name", HLX_JT_STRING, offsetof(hlx_model_raw_t, m.name), 1, 1, 0, 64, "model name" },
    HLX_MF_STR("attn", attn, 1, "\"gqa\" or \"mla\""),
    HLX_MF_INT(layers, 1, 1, "transformer layers"),
    HLX_MF_INT(hidden, 1, 1, "hidden size H"),
    HLX_MF_INT(q_heads, 1, 1, "query heads Q"),
    HLX_MF_INT(kv_heads, 0, 1, "KV heads K (GQA)"),
    HLX_MF_INT(head_dim, 0, 1, "key size per head Hsz"),
    HLX_MF_INT(v_head_dim, 0, 1, "value size per head"),
    HLX_MF_INT(ffn, 0, 0, "dense FFN intermediate size F"),
    HLX_MF_INT(vocab, 1, 1, "vocabulary size"),
    { "rope_theta", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.rope_theta), 0, 1e-9, 1e12, 0,
      "RoPE base" },
    HLX_MF_INT(rope_dim, 0, 0, "rotated elements per head"),
    { "norm_eps", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.norm_eps), 0, 1e-30, 1.0, 0,
      "RMSNorm epsilon" },
    { "qkv_bias", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.qkv_bias), 0, 0, 1, 0,
      "q, k and v projections add a bias (Qwen2; gqa)" },
    { "qk_norm", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.qk_norm), 0, 0, 1, 0,
      "RMSNorm of each query and key head before RoPE (Qwen3; gqa)" },
    { "qk_norm_unit", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.qk_norm_unit), 0, 0, 1, 0,
      "with qk_norm: the head norms have no weights and only the layers that turn by RoPE "
      "apply them (Llama 4's L2 norm)" },
    HLX_MF_INT(sliding_window, 0, 1, "sliding-window attention: positions a windowed layer's "
               "query attends to, itself included (gqa)"),
    HLX_MF_INT(sliding_pattern, 0, 0, "with sliding_window: 0 = every layer windowed, P >= 2 "
               "= every P-th layer (l + 1 a multiple of P) attends to the whole context"),
    HLX_MF_INT(sliding_from, 0, 0, "with sliding_window: the first layer a window applies "
               "to, the layers before it attend to the whole context (Qwen2's "
               "max_window_layers; default 0)"),
    { "window_chunked", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.window_chunked), 0, 0, 1, 0,
      "with sliding_window W: a windowed layer's query at p attends to its chunk of W "
      "positions, p - p mod W to p (Llama 4's attention_chunk_size)" },
    HLX_MF_INT(attn_temp_floor, 0, 1, "attention temperature on the NoPE layers (Llama 4's "
               "floor_scale): a query at p times 1 + attn_temp_scale ln(1 + floor((p + 1) / "
               "attn_temp_floor)) (with nope_pattern)"),
    { "attn_temp_scale", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.attn_temp_scale), 0, 0,
      1e6, 0, "with attn_temp_floor: the temperature's slope (Llama 4's attn_scale)" },
    HLX_MF_INT(nope_pattern, 0, 0, "NoPE layers: P >= 2 = every P-th layer (l + 1 a multiple "
               "of P) turns neither queries nor keys by RoPE (SmolLM3: 4; gqa); default 0: "
               "every layer rotates"),
    HLX_MF_STR("ffn_act", ffn_act, 0, "the FFN gate's activation: silu (SwiGLU, default), "
               "gelu_tanh (GeGLU: Gemma) or swiglu_clamp (gpt-oss: act_alpha, act_limit)"),
    { "act_alpha", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.act_alpha), 0, 1e-6, 1e6, 0,
      "swiglu_clamp: the sigmoid's gain (gpt-oss's swiglu_alpha; default 1.702)" },
    { "act_limit", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.act_limit), 0, 1e-6, 1e6, 0,
      "swiglu_clamp: gate clamped above, up on both sides at this value (gpt-oss's "
      "swiglu_limit; default 7)" },
    { "attn_sinks", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.attn_sinks), 0, 0, 1, 0,
      "a learned logit per query head joins each softmax's denominator (gpt-oss's sinks; "
      "gqa)" },
    { "o_bias", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.o_bias), 0, 0, 1, 0,
      "the attention's output projection adds a bias (gpt-oss; gqa)" },
    { "router_bias", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.router_bias), 0, 0, 1, 0,
      "the MoE router's logits add a bias (gpt-oss; with experts)" },
    { "expert_bias", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.expert_bias), 0, 0, 1, 0,
      "each routed expert's gate, up and down projections add a bias (gpt-oss; with "
      "experts, no shared experts)" },
    { "embed_scale", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.embed_scale), 0, 0, 1, 0,
      "the embedding times sqrt(hidden), rounded to the weight dtype (Gemma; gqa)" },
    { "attn_scalar", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.attn_scalar), 0, 1e-6, 1e9, 0,
      "softmax scale 1 / sqrt(attn_scalar) in place of 1 / sqrt(head_dim) (Gemma 3's "
      "query_pre_attn_scalar; gqa)" },
    { "rope_local_theta", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.rope_local_theta), 0,
      1e-9, 1e12, 0, "RoPE base of the windowed layers, without the scaling (Gemma 3's "
      "rope_local_base_freq; with sliding_window)" },
    { "attn_softcap", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.attn_softcap), 0, 1e-6, 1e9,
      0, "attention scores s become attn_softcap x tanh(s / attn_softcap) before the softmax "
      "(Gemma 2's attn_logit_softcapping; gqa; default 0: none)" },
    { "final_softcap", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.final_softcap), 0, 1e-6,
      1e9, 0, "logits z become final_softcap x tanh(z / final_softcap) (Gemma 2's "
      "final_logit_softcapping; default 0: none)" },
    { "embed_mult", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.embed_mult), 0, 1e-9, 1e9, 0,
      "the embedding row times embed_mult (Granite's embedding_multiplier; gqa; default 0: "
      "none)" },
    { "residual_mult", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.residual_mult), 0, 1e-9,
      1e9, 0, "each layer's attention and FFN outputs times residual_mult before they join the "
      "residual (Granite's residual_multiplier; gqa, dense or routed FFN; default 0: none)" },
    { "logits_scale", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.logits_scale), 0, 1e-9, 1e9,
      0, "the logits divided by logits_scale (Granite's logits_scaling; default 0: none)" },
    { "tie_embeddings", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.tie_embeddings), 0, 0, 1, 0,
      "the LM head is the embedding matrix (tie_word_embeddings), its weights counted once" },
    { "post_norms", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.post_norms), 0, 0, 1, 0,
      "RMSNorm of the attention's and the FFN's outputs before the residual adds (GLM-4-0414; "
      "gqa, dense)" },
    { "post_norms_only", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.post_norms_only), 0, 0, 1,
      0, "with post_norms: no input norms, the attention and the FFN read the residual "
      "stream (OLMo 2)" },
    { "qk_norm_proj", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.qk_norm_proj), 0, 0, 1, 0,
      "RMSNorm of the whole q projection and of the whole k projection before RoPE (OLMo 2; "
      "gqa, not with qk_norm)" },
    HLX_MF_STR("norm", norm, 0, "every norm of the layer and the final one: rms (RMSNorm, "
               "default) or layernorm (mean and variance, weights and biases: StarCoder2; gqa, "
               "dense)"),
    HLX_MF_STR("ffn_kind", ffn_kind, 0, "the dense FFN: glu (act(gate) x up, then down; "
               "default) or mlp (act(up), then down, no gate: StarCoder2)"),
    { "ffn_bias", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.ffn_bias), 0, 0, 1, 0,
      "with \"ffn_kind\": \"mlp\": up and down add biases [ffn] and [hidden] (StarCoder2's "
      "c_fc and c_proj)" },
    HLX_MF_STR("weight_dtype", weight_dtype, 0, "f32, bf16, fp8 or fp4"),
    HLX_MF_STR("kv_dtype", kv_dtype, 0, "f32, bf16, fp8 or fp4"),
    HLX_MF_INT(q_lora_rank, 0, 0, "MLA query compression rank (0: none)"),
    HLX_MF_INT(kv_lora_rank, 0, 1, "MLA latent KV rank"),
    HLX_MF_INT(qk_nope_dim, 0, 1, "MLA non-rotated key size per head"),
    HLX_MF_INT(qk_rope_dim, 0, 1, "MLA rotated key size (shared)"),
    HLX_MF_INT(experts, 0, 0, "routed experts per MoE layer"),
    HLX_MF_INT(top_k, 0, 1, "experts per token"),
    HLX_MF_INT(shared_experts, 0, 0, "always-active experts"),
    { "shared_expert_gate", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.shared_gate), 0, 0, 1, 0,
      "the shared experts' output times a sigmoid gate per token (Qwen2-MoE)" },
    HLX_MF_INT(expert_ffn, 0, 1, "intermediate size of one expert"),
    HLX_MF_INT(dense_layers, 0, 0, "leading dense layers of an MoE model"),
    HLX_MF_INT(moe_step, 0, 0, "past dense_layers, every moe_step-th layer (l + 1 a multiple) "
               "is an MoE layer and the others dense (Llama 4's interleave_moe_layer_step; "
               "default 0 or 1: every layer)"),
    { "moe_weight_input", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.moe_weight_input), 0, 0,
      1, 0, "the routing weight multiplies each chosen expert's input, not its output, and a "
      "sigmoid router has no correction bias (Llama 4)" },
    HLX_MF_STR("scoring_func", scoring, 0, "router scores: softmax or sigmoid"),
    HLX_MF_STR("group_score", group_score, 0,
               "a group's score in group-limited routing: top2 (sum of its two best, "
               "DeepSeek-V3) or max (its best, DeepSeek-V2)"),
    { "norm_topk_prob", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.norm_topk_prob), 0, 0, 1, 0,
      "renormalise the top-k routing weights to sum 1" },
    { "routed_scaling_factor", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.routed_scaling), 0,
      1e-6, 1e6, 0, "factor on the routed experts' weights" },
    HLX_MF_INT(n_group, 0, 1, "expert groups of group-limited routing"),
    HLX_MF_INT(topk_group, 0, 1, "groups a token's experts are chosen from"),
    HLX_MF_STR("rope_scaling", rope_scaling, 0, "RoPE scaling: none, linear, llama3, yarn or dynamic"),
    { "rope_factor", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.rope_factor), 0, 1e-6, 1e6, 0,
      "RoPE scaling factor" },
    HLX_MF_INT(rope_orig_ctx, 0, 1, "RoPE scaling: original_max_position_embeddings"),
    { "rope_low_freq_factor", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.rope_low_freq), 0,
      1e-6, 1e6, 0, "llama3 RoPE scaling: low_freq_factor" },
    { "rope_high_freq_factor", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.rope_high_freq), 0,
      1e-6, 1e6, 0, "llama3 RoPE scaling: high_freq_factor" },
    { "rope_beta_fast", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.rope_beta_fast), 0, 1e-6,
      1e6, 0, "yarn RoPE scaling: beta_fast" },
    { "rope_beta_slow", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.rope_beta_slow), 0, 1e-6,
      1e6, 0, "yarn RoPE scaling: beta_slow" },
    { "rope_mscale", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.rope_mscale), 0, 0, 1e6, 0,
      "yarn RoPE scaling: mscale" },
    { "rope_yarn_exact", HLX_JT_BOOL, offsetof(hlx_model_raw_t, m.rope_yarn_exact), 0, 0, 1, 0,
      "yarn RoPE scaling: the ramp's ends as computed, not rounded to whole pairs "
      "(transformers' truncate false: gpt-oss)" },
    { "rope_mscale_all_dim", HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m.rope_mscale_all), 0, 0,
      1e6, 0, "yarn RoPE scaling: mscale_all_dim" },
    { "dca_chunk_size", HLX_JT_INT, offsetof(hlx_model_raw_t, m.dca_chunk), 0, 2, 1 << 30, 0,
      "dual chunk attention (Qwen2.5-1M's dual_chunk_attention_config): chunk_size; keys turn "
      "at their position mod chunk_size - dca_local_size (gqa, no rope_scaling, no "
      "sliding_window)" },
    { "dca_local_size", HLX_JT_INT, offsetof(hlx_model_raw_t, m.dca_local), 0, 0, 1 << 30, 0,
      "dual chunk attention: local_size (default 0)" },
    { "dca_orig_ctx", HLX_JT_INT, offsetof(hlx_model_raw_t, m.dca_orig), 0, 0, 1 << 30, 0,
      "dual chunk attention: original_max_position_embeddings, past which the softmax scale "
      "grows (default 0: it does not)" },
    { "rope", HLX_JT_ANY, 0, 0, 0, 0, 0, "the RoPE keys as one object, in the form `helix "
      "model info --json` writes (theta, dim, scaling and config.json's names of its "
      "parameters), in place of the rope_* and dca_* keys" },
};

/* The "rope" object (hlx_model_rope_fields) into the fields of the flat keys. */
#define HLX_MR_NUM(_k, _f, _min, _max, _help) \
    { _k, HLX_JT_DOUBLE, offsetof(hlx_model_raw_t, m._f), 0, _min, _max, 0, _help }
static const hlx_jfield_t hlx_model_rope_fields[] = {
    HLX_MR_NUM("theta", rope_theta, 1e-9, 1e12, "RoPE base (rope_theta)"),
    { "dim", HLX_JT_INT, offsetof(hlx_model_raw_t, m.rope_dim), 0, 0, 999999, 0,
      "rotated elements per head (rope_dim)" },
    { "scaling", HLX_JT_STRING, offsetof(hlx_model_raw_t, rope_scaling), 0, 1, 0, 16,
      "none, linear, llama3, yarn, longrope or dynamic (rope_scaling)" },
    HLX_MR_NUM("factor", rope_factor, 1e-6, 1e6, "the scaling factor (rope_factor)"),
    { "original_max_position_embeddings", HLX_JT_INT, offsetof(hlx_model_raw_t,
      m.rope_orig_ctx), 0, 1, 999999, 0, "llama3, yarn, longrope: the original context" },
    { "max_position_embeddings", HLX_JT_INT, offsetof(hlx_model_raw_t, m.rope_orig_ctx), 0, 1,
      999999, 0, "dynamic: the context past which the base grows" },
    HLX_MR_NUM("low_freq_factor", rope_low_freq, 1e-6, 1e6, "llama3: low_freq_factor"),
    HLX_MR_NUM("high_freq_factor", rope_high_freq, 1e-6, 1e6, "llama3: high_freq_factor"),
    HLX_MR_NUM("beta_fast", rope_beta_fast, 1e-6, 1e6, "yarn: beta_fast"),
    HLX_MR_NUM("beta_slow", rope_beta_slow, 1e-6, 1e6, "yarn: beta_slow"),
    HLX_MR_NUM("mscale", rope_mscale, 0, 1e6, "yarn: mscale"),
    HLX_MR_NUM("mscale_all_dim", rope_mscale_all, 0, 1e6, "yarn: mscale_all_dim"),
    { "truncate", HLX_JT_BOOL, offsetof(hlx_model_raw_t, rope_truncate), 0, 0, 1, 0,
      "yarn: false = the ramp's ends unrounded (rope_yarn_exact)" },
    HLX_MR_NUM("attention_factor", rope_attn_factor, 1e-6, 1e6,
               "yarn, longrope: the factor on cos and sin"),
    { "short_factor", HLX_JT_ANY, 0, 0, 0, 0, 0, "longrope: rope_dim / 2 factors" },
    { "long_factor", HLX_JT_ANY, 0, 0, 0, 0, 0, "longrope: rope_dim / 2 factors" },
    { "dual_chunk_attention", HLX_JT_ANY, 0, 0, 0, 0, 0,
      "chunk_size, local_size, original_max_position_embeddings (dca_*)" },
};

static const hlx_jfield_t hlx_model_dca_fields[] = {
    { "chunk_size", HLX_JT_INT, offsetof(hlx_model_raw_t, m.dca_chunk), 1, 2, 1 << 30, 0,
      "dca_chunk_size" },
    { "local_size", HLX_JT_INT, offsetof(hlx_model_raw_t, m.dca_local), 0, 0, 1 << 30, 0,
      "dca_local_size" },
    { "original_max_position_embeddings", HLX_JT_INT, offsetof(hlx_model_raw_t, m.dca_orig),
      0, 0, 1 << 30, 0, "dca_orig_ctx" },
};

/* Each flat key and its place in the "rope" object. */
static const struct {
    const char *flat, *nested;
} hlx_model_rope_map[] = {
    { "rope_theta", "theta" }, { "rope_dim", "dim" }, { "rope_scaling", "scaling" },
    { "rope_factor", "factor" }, { "rope_orig_ctx", "original_max_position_embeddings" },
    { "rope_low_freq_factor", "low_freq_factor" },
    { "rope_high_freq_factor", "high_freq_factor" }, { "rope_beta_fast", "beta_fast" },
    { "rope_beta_slow", "beta_slow" }, { "rope_mscale", "mscale" },
    { "rope_mscale_all_dim", "mscale_all_dim" }, { "rope_yarn_exact", "truncate" },
    { "dca_chunk_size", "dual_chunk_attention/chunk_size" },
    { "dca_local_size", "dual_chunk_attention/local_size" },
    { "dca_orig_ctx", "dual_chunk_attention/original_max_position_embeddings" },
};

const char *hlx_data_dir(void)
{
    /* the environment is read through the core settings table (HELIX_DATA_DIR) */
    static hlx_core_settings_t set;
    struct stat sb;

    if (hlx_param_load(&hlx_core_param_table, &set, NULL) == HLX_OK && set.data_dir[0] != '\0')
        return set.data_dir;
    if (stat(HLX_SOURCE_ROOT "/data", &sb) == 0 && S_ISDIR(sb.st_mode))
        return HLX_SOURCE_ROOT "/data";
    return "/usr/local/share/helix";
}

/* A preset is a bare name: no '/' and no ".json" suffix. */
static int hlx_is_preset_name(const char *s)
{
    size_t n = strlen(s);
    return strchr(s, '/') == NULL && !(n > 5 && !strcmp(s + n - 5, ".json"));
}

/* Lists the *.json names of dir/sub into buf as "a, b, c". */
static void hlx_list_presets(const char *sub, char *buf, size_t len)
{
    char path[1024];
    struct dirent **ents = NULL;
    int n, i;
    size_t used = 0;

    buf[0] = '\0';
    snprintf(path, sizeof(path), "%s/%s", hlx_data_dir(), sub);
    n = scandir(path, &ents, NULL, alphasort);
    for (i = 0; i < n; i++) {
        size_t l = strlen(ents[i]->d_name);
        if (l > 5 && !strcmp(ents[i]->d_name + l - 5, ".json") && used + l < len) {
            used += (size_t)snprintf(buf + used, len - used, "%s%.*s", used ? ", " : "",
                                     (int)(l - 5), ents[i]->d_name);
        }
        free(ents[i]);
    }
    free(ents);
    if (buf[0] == '\0')
        snprintf(buf, len, "none found under %.400s", path);
}

hlx_status_t hlx_data_resolve(const char *kind, const char *path_or_preset, char *path,
                              size_t pathlen, char *err, size_t errlen)
{
    struct stat sb;
    char list[512];

    if (strlen(path_or_preset) >= pathlen) {
        /* never open a truncated path (it could name another file) */
        snprintf(err, errlen, "%.60s...: path longer than %zu characters", path_or_preset,
                 pathlen - 1);
        return HLX_ERR_INVALID;
    }
    if (!hlx_is_preset_name(path_or_preset) || stat(path_or_preset, &sb) == 0) {
        snprintf(path, pathlen, "%s", path_or_preset);
        return HLX_OK;
    }
    if ((size_t)snprintf(path, pathlen, "%s/%s/%s.json", hlx_data_dir(), kind,
                         path_or_preset) < pathlen && stat(path, &sb) == 0)
        return HLX_OK;
    hlx_list_presets(kind, list, sizeof(list));
    snprintf(err, errlen, "%s: no such file or %s preset (presets: %s)", path_or_preset,
             !strcmp(kind, "models") ? "model" : "cluster", list);
    return HLX_ERR_NOT_FOUND;
}

static hlx_status_t hlx_model_dtype(hlx_jdoc_t *doc, const char *key, const char *s,
                                    hlx_dtype_t *t_p)
{
    char path[64];

    if (s[0] == '\0') {
        *t_p = HLX_DTYPE_BF16;
        return HLX_OK;
    }
    snprintf(path, sizeof(path), "/%s", key);
    if (hlx_dtype_parse(s, t_p) != 0)
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                             "unknown dtype \"%s\" (f32, bf16, fp8 or fp4)", s);
    return HLX_OK;
}

/* The member at path "a" or "a/b" under obj, or NULL. */
static json_t *hlx_model_get(json_t *obj, const char *path)
{
    const char *slash = strchr(path, '/');
    char head[64];

    if (slash == NULL)
        return json_object_get(obj, path);
    snprintf(head, sizeof(head), "%.*s", (int)(slash - path), path);
    obj = json_object_get(obj, head);
    return json_is_object(obj) ? hlx_model_get(obj, slash + 1) : NULL;
}

/* Where flat key `key` is read from: "/key", or inside the "rope" object when the file
 * gives one (its original context "max_position_embeddings" where that one is there).
 * Returns buf. */
static const char *hlx_model_path(json_t *root, const char *key, char *buf, size_t len)
{
    json_t *rope = json_object_get(root, "rope");
    size_t i;

    snprintf(buf, len, "/%s", key);
    if (!json_is_object(rope))
        return buf;
    for (i = 0; i < sizeof(hlx_model_rope_map) / sizeof(hlx_model_rope_map[0]); i++)
        if (!strcmp(key, hlx_model_rope_map[i].flat)) {
            const char *n = hlx_model_rope_map[i].nested;
            if (!strcmp(key, "rope_orig_ctx") &&
                json_object_get(rope, "max_position_embeddings") != NULL)
                n = "max_position_embeddings";
            snprintf(buf, len, "/rope/%s", n);
            break;
        }
    return buf;
}

#define HLX_MFAIL(_key, ...) \
    hlx_jdoc_fail(doc, hlx_model_path(hlx_jdoc_root(doc), _key, (char[96]){ 0 }, 96), \
                  HLX_ERR_PARSE, __VA_ARGS__)

/* Whether the file gives key (a flat RoPE key: also where the "rope" object holds it). */
static int hlx_has(json_t *root, const char *key)
{
    char path[96];

    return hlx_model_get(root, hlx_model_path(root, key, path, sizeof(path)) + 1) != NULL;
}

hlx_status_t hlx_model_gating_check(const hlx_model_t *m, const hlx_gating_keys_t *keys,
                                    const char **key_p, char *why, size_t whylen)
{
    if (m->n_group < 1 || m->n_group > m->experts || m->experts % m->n_group != 0) {
        *key_p = keys->n_group;
        snprintf(why, whylen, "%d does not divide %s %d", m->n_group, keys->experts,
                 m->experts);
        return HLX_ERR_PARSE;
    }
    if (m->topk_group < 1 || m->topk_group > m->n_group) {
        *key_p = keys->topk_group;
        snprintf(why, whylen, "%d exceeds %s %d", m->topk_group, keys->n_group, m->n_group);
        return HLX_ERR_PARSE;
    }
    if ((int64_t)m->topk_group * (m->experts / m->n_group) < m->top_k) {
        *key_p = keys->topk_group;
        snprintf(why, whylen, "%d group(s) of %d experts hold fewer than %s %d (%s %d in %s "
                 "%d groups)", m->topk_group, m->experts / m->n_group, keys->top_k, m->top_k,
                 keys->experts, m->experts, keys->n_group, m->n_group);
        return HLX_ERR_PARSE;
    }
    return HLX_OK;
}

/* DeepSeek-V3 gating of an MoE model: the scoring function and the group-limited choice
 * (n_group groups of experts / n_group, the best topk_group kept, top_k chosen there). */
static hlx_status_t hlx_model_gating(hlx_jdoc_t *doc, hlx_model_raw_t *r)
{
    static const hlx_gating_keys_t keys = { "experts", "top_k", "n_group", "topk_group" };
    hlx_model_t *m = &r->m;
    const char *key = "n_group";
    char why[256], path[64];
    hlx_status_t st;

    if (r->scoring[0] == '\0' || !strcmp(r->scoring, "softmax"))
        m->moe_scoring = HLX_MOE_SOFTMAX;
    else if (!strcmp(r->scoring, "sigmoid"))
        m->moe_scoring = HLX_MOE_SIGMOID;
    else
        return HLX_MFAIL("scoring_func", "unknown scoring \"%s\" (softmax or sigmoid)",
                         r->scoring);
    if (r->group_score[0] == '\0' || !strcmp(r->group_score, "top2"))
        m->moe_group_score = HLX_MOE_GROUP_TOP2;
    else if (!strcmp(r->group_score, "max"))
        m->moe_group_score = HLX_MOE_GROUP_MAX;
    else
        return HLX_MFAIL("group_score", "unknown group score \"%s\" (top2 or max)",
                         r->group_score);
    if (m->n_group == 0)
        m->n_group = 1;
    if (m->topk_group == 0)
        m->topk_group = m->n_group;
    if ((st = hlx_model_gating_check(m, &keys, &key, why, sizeof(why))) == HLX_OK)
        return HLX_OK;
    snprintf(path, sizeof(path), "/%s", key);
    return hlx_jdoc_fail(doc, path, st, "%s", why);
}

/* rope_scaling and its parameters: defaults as in the Hugging Face configs, the keys of
 * another kind refused. */
static hlx_status_t hlx_model_rope(hlx_jdoc_t *doc, hlx_model_raw_t *r)
{
    static const char *const keys[] = { "rope_factor", "rope_orig_ctx", "rope_low_freq_factor",
                                        "rope_high_freq_factor", "rope_beta_fast",
                                        "rope_beta_slow", "rope_mscale", "rope_mscale_all_dim",
                                        "rope_yarn_exact" };
    /* which kinds take each key: bit 1 linear, 2 llama3, 3 yarn, 4 longrope (the "rope"
     * object only), 5 dynamic */
    static const unsigned takes[] = { 0x3e, 0x3c, 0x4, 0x4, 0x8, 0x8, 0x8, 0x8, 0x8 };
    /* the "rope" object's own keys: config.json's names where they differ by kind */
    static const char *const nkeys[] = { "attention_factor", "short_factor", "long_factor",
                                         "max_position_embeddings",
                                         "original_max_position_embeddings" };
    static const unsigned ntakes[] = { 0x18, 0x10, 0x10, 0x20, 0x1c };
    json_t *root = hlx_jdoc_root(doc), *rope = json_object_get(root, "rope");
    hlx_model_t *m = &r->m;
    char path[96];
    size_t i;

    if (!r->rope_scaling[0] || !strcmp(r->rope_scaling, "none"))
        m->rope_kind = HLX_ROPE_NONE;
    else if (!strcmp(r->rope_scaling, "linear"))
        m->rope_kind = HLX_ROPE_LINEAR;
    else if (!strcmp(r->rope_scaling, "llama3"))
        m->rope_kind = HLX_ROPE_LLAMA3;
    else if (!strcmp(r->rope_scaling, "yarn"))
        m->rope_kind = HLX_ROPE_YARN;
    else if (!strcmp(r->rope_scaling, "dynamic"))
        m->rope_kind = HLX_ROPE_DYNAMIC;
    else if (!strcmp(r->rope_scaling, "longrope") && rope != NULL)
        m->rope_kind = HLX_ROPE_LONGROPE; /* its factor sets: hlx_model_longrope */
    else if (!strcmp(r->rope_scaling, "longrope"))
        return HLX_MFAIL("rope_scaling", "\"longrope\" is read from a checkpoint's config.json "
                         "or from the \"rope\" object `helix model info --json` writes (its "
                         "short_factor and long_factor arrays); rope_scaling takes none, "
                         "linear, llama3, yarn or dynamic");
    else
        return HLX_MFAIL("rope_scaling", "unknown kind \"%s\" (none, linear, llama3, yarn or "
                         "dynamic)", r->rope_scaling);
    for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (hlx_has(root, keys[i]) && !(takes[i] >> m->rope_kind & 1))
            return hlx_jdoc_fail(doc, hlx_model_path(root, keys[i], path, sizeof(path)),
                                 HLX_ERR_PARSE, "not a parameter of rope_scaling \"%s\"",
                                 r->rope_scaling[0] ? r->rope_scaling : "none");
    for (i = 0; rope != NULL && i < sizeof(nkeys) / sizeof(nkeys[0]); i++)
        if (json_object_get(rope, nkeys[i]) != NULL && !(ntakes[i] >> m->rope_kind & 1)) {
            snprintf(path, sizeof(path), "/rope/%s", nkeys[i]);
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "not a parameter of scaling \"%s\"",
                                 r->rope_scaling[0] ? r->rope_scaling : "none");
        }
    if (m->rope_kind == HLX_ROPE_NONE) {
        m->rope_factor = 1.0;
        return HLX_OK;
    }
    if (!hlx_has(root, "rope_factor"))
        return HLX_MFAIL("rope_factor", "required key is missing (for rope_scaling \"%s\")",
                         r->rope_scaling);
    if (m->rope_kind != HLX_ROPE_LINEAR && !hlx_has(root, "rope_orig_ctx"))
        return HLX_MFAIL("rope_orig_ctx", "required key is missing (for rope_scaling \"%s\": "
                         "%s)", r->rope_scaling, m->rope_kind == HLX_ROPE_DYNAMIC
                         ? "max_position_embeddings, past which the base grows"
                         : "original_max_position_embeddings");
    if (m->rope_kind == HLX_ROPE_DYNAMIC && m->attn == HLX_ATTN_MLA)
        return HLX_MFAIL("rope_scaling", "\"dynamic\" is taken for GQA models only (no MLA "
                         "model uses it)");
    if (m->rope_kind == HLX_ROPE_LLAMA3) {
        if (!hlx_has(root, "rope_low_freq_factor"))
            m->rope_low_freq = 1.0;
        if (!hlx_has(root, "rope_high_freq_factor"))
            m->rope_high_freq = 4.0;
        if (m->rope_high_freq < m->rope_low_freq)
            return HLX_MFAIL("rope_high_freq_factor", "%g must be at least "
                             "rope_low_freq_factor %g", m->rope_high_freq, m->rope_low_freq);
    }
    if (m->rope_kind == HLX_ROPE_YARN) {
        if (!hlx_has(root, "rope_beta_fast"))
            m->rope_beta_fast = 32.0;
        if (!hlx_has(root, "rope_beta_slow"))
            m->rope_beta_slow = 1.0;
        if (!hlx_has(root, "rope_mscale")) /* absent: DeepSeek's 1, transformers' unset */
            m->rope_mscale = m->attn == HLX_ATTN_MLA ? 1.0 : 0.0;
        if (m->rope_theta == 1.0) /* the ramp's ends divide by ln rope_theta */
            return HLX_MFAIL("rope_theta", "1 with rope_scaling \"yarn\": its ramp's ends "
                             "divide by ln rope_theta = 0");
    }
    return HLX_OK;
}

/* Semantic checks and defaults after the field table has read the types. */
/* StarCoder2's keys: "norm" (rms or layernorm), "ffn_kind" (glu or mlp) and "ffn_bias",
 * with what they do not combine with yet. After ffn_act and the FFN sizes are read. */
static hlx_status_t hlx_model_validate_layernorm(hlx_jdoc_t *doc, hlx_model_raw_t *r)
{
    hlx_model_t *m = &r->m;

    if (!r->norm[0] || !strcmp(r->norm, "rms"))
        m->norm_layer = 0;
    else if (!strcmp(r->norm, "layernorm"))
        m->norm_layer = 1;
    else
        return HLX_MFAIL("norm", "unknown norm \"%s\" (rms or layernorm)", r->norm);
    if (!r->ffn_kind[0] || !strcmp(r->ffn_kind, "glu"))
        m->ffn_plain = 0;
    else if (!strcmp(r->ffn_kind, "mlp"))
        m->ffn_plain = 1;
    else
        return HLX_MFAIL("ffn_kind", "unknown FFN kind \"%s\" (glu or mlp)", r->ffn_kind);
    if (m->norm_layer) {
        /* the norms the runtime runs as LayerNorms: the two input norms and the final one */
        if (m->attn != HLX_ATTN_GQA)
            return HLX_MFAIL("norm", "\"layernorm\" only with \"attn\": \"gqa\" (MLA's "
                             "latent norms are RMSNorms)");
        if (m->experts > 0)
            return HLX_MFAIL("norm", "\"layernorm\" only with a dense FFN (\"experts\": 0): "
                             "the MoE layers' input norm is an RMSNorm");
        if (m->qk_norm)
            return HLX_MFAIL("qk_norm", "not with \"norm\": \"layernorm\" (q and k norms "
                             "are RMSNorms; no LayerNorm model has them)");
        if (m->qk_norm_proj)
            return HLX_MFAIL("qk_norm_proj", "not with \"norm\": \"layernorm\" (q and k "
                             "norms are RMSNorms; no LayerNorm model has them)");
        if (m->post_norms)
            return HLX_MFAIL("post_norms", "not with \"norm\": \"layernorm\" (the output "
                             "norms are RMSNorms; no LayerNorm model has them)");
    }
    if (m->ffn_plain) {
        if (m->experts > 0)
            return HLX_MFAIL("ffn_kind", "\"mlp\" only with a dense FFN (\"experts\": 0: "
                             "the experts are gated)");
        if (m->ffn_act == HLX_ACT_SWIGLU_CLAMP)
            return HLX_MFAIL("ffn_act", "\"swiglu_clamp\" is a gated activation: not with "
                             "\"ffn_kind\": \"mlp\" (silu or gelu_tanh)");
    }
    if (m->ffn_bias && !m->ffn_plain)
        return HLX_MFAIL("ffn_bias", "only with \"ffn_kind\": \"mlp\" (a gated FFN's "
                         "biases are not run)");
    return HLX_OK;
}

static hlx_status_t hlx_model_validate(hlx_jdoc_t *doc, hlx_model_raw_t *r)
{
    json_t *root = hlx_jdoc_root(doc);
    hlx_model_t *m = &r->m;
    hlx_status_t st;

    if (!strcmp(r->attn, "gqa")) {
        m->attn = HLX_ATTN_GQA;
    } else if (!strcmp(r->attn, "mla")) {
        m->attn = HLX_ATTN_MLA;
    } else {
        return HLX_MFAIL("attn", "unknown attention \"%s\" (gqa or mla)", r->attn);
    }
    if ((st = hlx_model_dtype(doc, "weight_dtype", r->weight_dtype, &m->weight_dtype)) ||
        (st = hlx_model_dtype(doc, "kv_dtype", r->kv_dtype, &m->kv_dtype)))
        return st;
    if (m->rope_theta == 0.0)
        m->rope_theta = 10000.0;
    if ((st = hlx_model_rope(doc, r)) != HLX_OK)
        return st;
    if (m->norm_eps == 0.0)
        m->norm_eps = 1e-5;

    if (m->attn == HLX_ATTN_GQA) {
        static const char *const mla_only[] = { "q_lora_rank", "kv_lora_rank", "qk_nope_dim",
                                                "qk_rope_dim" };
        char path[96];
        size_t i;
        for (i = 0; i < sizeof(mla_only) / sizeof(mla_only[0]); i++) {
            if (hlx_has(root, mla_only[i])) {
                snprintf(path, sizeof(path), "/%s", mla_only[i]);
                return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                                     "only meaningful with \"attn\": \"mla\"");
            }
        }
        if (!hlx_has(root, "kv_heads"))
            return HLX_MFAIL("kv_heads", "required key is missing (KV heads K, for gqa)");
        if (!hlx_has(root, "head_dim"))
            return HLX_MFAIL("head_dim", "required key is missing (head size, for gqa)");
        if (m->kv_heads > m->q_heads)
            return HLX_MFAIL("kv_heads", "%d KV heads exceed %d query heads", m->kv_heads,
                             m->q_heads);
        if (m->q_heads % m->kv_heads != 0)
            return HLX_MFAIL("kv_heads", "%d does not divide q_heads %d", m->kv_heads,
                             m->q_heads);
        if (m->v_head_dim == 0)
            m->v_head_dim = m->head_dim;
        if (!hlx_has(root, "rope_dim")) {
            m->rope_dim = m->head_dim;
            if (m->rope_dim % 2 != 0)
                return HLX_MFAIL("head_dim", "%d is odd and rope_dim defaults to it (RoPE "
                                 "rotates pairs: give an even rope_dim)", m->head_dim);
        }
        if (m->rope_dim % 2 != 0)
            return HLX_MFAIL("rope_dim", "%d is odd (RoPE rotates pairs)", m->rope_dim);
        if (m->rope_dim > m->head_dim)
            return HLX_MFAIL("rope_dim", "%d exceeds head_dim %d", m->rope_dim, m->head_dim);
        /* dynamic NTK's exponent rope_dim / (rope_dim - 2) */
        if (m->rope_kind == HLX_ROPE_DYNAMIC && m->rope_dim <= 2)
            return hlx_jdoc_fail(doc, hlx_has(root, "rope_dim")
                                          ? hlx_model_path(root, "rope_dim", path, sizeof(path))
                                          : "/head_dim", HLX_ERR_PARSE, "%d rotated elements: rope_scaling \"dynamic\" "
                                 "needs more than 2 (its base grows with the power rope_dim / "
                                 "(rope_dim - 2))", m->rope_dim);
    } else {
        static const char *const need[] = { "kv_lora_rank", "qk_nope_dim", "qk_rope_dim",
                                            "v_head_dim" };
        char path[64];
        size_t i;
        for (i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
            if (!hlx_has(root, need[i])) {
                snprintf(path, sizeof(path), "/%s", need[i]);
                return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                                     "required key is missing (for mla)");
            }
        }
        if (m->qkv_bias)
            return HLX_MFAIL("qkv_bias", "only with \"attn\": \"gqa\" (MLA's projections "
                             "have no biases)");
        if (m->qk_norm)
            return HLX_MFAIL("qk_norm", "only with \"attn\": \"gqa\" (MLA normalises its "
                             "latent rows, not its heads)");
        if (m->post_norms)
            return HLX_MFAIL("post_norms", "only with \"attn\": \"gqa\" and a dense FFN (no "
                             "MLA model normalises its layer outputs)");
        if (m->qk_norm_proj)
            return HLX_MFAIL("qk_norm_proj", "only with \"attn\": \"gqa\" (MLA normalises "
                             "its latent rows, not its projections)");
        if (m->sliding_window)
            return HLX_MFAIL("sliding_window", "only with \"attn\": \"gqa\" (no MLA model "
                             "has a window)");
        if (hlx_has(root, "kv_heads") && m->kv_heads != 1)
            return HLX_MFAIL("kv_heads", "mla has one latent KV head, not %d", m->kv_heads);
        m->kv_heads = 1;
        if (hlx_has(root, "head_dim") && m->head_dim != m->qk_nope_dim + m->qk_rope_dim)
            return HLX_MFAIL("head_dim", "%d is not qk_nope_dim + qk_rope_dim = %d",
                             m->head_dim, m->qk_nope_dim + m->qk_rope_dim);
        m->head_dim = m->qk_nope_dim + m->qk_rope_dim;
        if (m->qk_rope_dim % 2 != 0)
            return HLX_MFAIL("qk_rope_dim", "%d is odd (RoPE rotates pairs)", m->qk_rope_dim);
        if (hlx_has(root, "rope_dim") && m->rope_dim != m->qk_rope_dim)
            return HLX_MFAIL("rope_dim", "%d differs from qk_rope_dim %d", m->rope_dim,
                             m->qk_rope_dim);
        m->rope_dim = m->qk_rope_dim;
        if (m->q_lora_rank > m->hidden)
            return HLX_MFAIL("q_lora_rank", "%d exceeds hidden %d", m->q_lora_rank, m->hidden);
        if (m->kv_lora_rank > m->hidden)
            return HLX_MFAIL("kv_lora_rank", "%d exceeds hidden %d", m->kv_lora_rank,
                             m->hidden);
    }

    if (!r->ffn_act[0] || !strcmp(r->ffn_act, "silu"))
        m->ffn_act = HLX_ACT_SILU;
    else if (!strcmp(r->ffn_act, "gelu_tanh"))
        m->ffn_act = HLX_ACT_GELU_TANH;
    else if (!strcmp(r->ffn_act, "swiglu_clamp"))
        m->ffn_act = HLX_ACT_SWIGLU_CLAMP;
    else
        return HLX_MFAIL("ffn_act", "unknown activation \"%s\" (silu, gelu_tanh or "
                         "swiglu_clamp)", r->ffn_act);
    if (m->ffn_act == HLX_ACT_GELU_TANH && m->experts > 0)
        return HLX_MFAIL("ffn_act", "%s with \"experts\" > 0: the MoE layers run SwiGLU or "
                         "swiglu_clamp", r->ffn_act);
    if (m->ffn_act == HLX_ACT_SWIGLU_CLAMP) {
        if (!hlx_has(root, "act_alpha"))
            m->act_alpha = 1.702;
        if (!hlx_has(root, "act_limit"))
            m->act_limit = 7.0;
    } else {
        if (hlx_has(root, "act_alpha"))
            return HLX_MFAIL("act_alpha", "only meaningful with \"ffn_act\": \"swiglu_clamp\"");
        if (hlx_has(root, "act_limit"))
            return HLX_MFAIL("act_limit", "only meaningful with \"ffn_act\": \"swiglu_clamp\"");
    }
    if (m->attn_sinks && m->attn == HLX_ATTN_MLA)
        return HLX_MFAIL("attn_sinks", "only with \"attn\": \"gqa\"");
    if (m->o_bias && m->attn == HLX_ATTN_MLA)
        return HLX_MFAIL("o_bias", "only with \"attn\": \"gqa\"");
    if (m->router_bias && m->experts == 0)
        return HLX_MFAIL("router_bias", "only with \"experts\" > 0 (the router's bias)");
    if (m->expert_bias && (m->experts == 0 || m->shared_experts > 0))
        return HLX_MFAIL("expert_bias", "only with \"experts\" > 0 and no shared experts");
    if (hlx_has(root, "rope_local_theta") && m->sliding_window == 0)
        return HLX_MFAIL("rope_local_theta", "only meaningful with \"sliding_window\" (the "
                         "windowed layers' base)");
    if (m->rope_local_theta > 0.0 && m->rope_kind == HLX_ROPE_DYNAMIC)
        return HLX_MFAIL("rope_local_theta", "not with rope_scaling \"dynamic\" (one base "
                         "per request and length)");
    if (m->attn == HLX_ATTN_MLA && m->embed_scale)
        return HLX_MFAIL("embed_scale", "only with \"attn\": \"gqa\"");
    if (m->embed_mult > 0.0 && (m->attn == HLX_ATTN_MLA || m->embed_scale))
        return HLX_MFAIL("embed_mult", "only with \"attn\": \"gqa\" and without embed_scale "
                         "(one factor)");
    /* with experts too (Granite MoE): the runtime scales the FFN's summed output, dense or
     * routed, before the residual add (hlx_phase_residual) */
    if (m->residual_mult > 0.0 && m->attn == HLX_ATTN_MLA)
        return HLX_MFAIL("residual_mult", "only with \"attn\": \"gqa\"");
    if (m->attn == HLX_ATTN_MLA && hlx_has(root, "attn_scalar"))
        return HLX_MFAIL("attn_scalar", "only with \"attn\": \"gqa\" (MLA's scale follows its "
                         "own rule)");
    if (m->attn == HLX_ATTN_MLA && hlx_has(root, "attn_softcap"))
        return HLX_MFAIL("attn_softcap", "only with \"attn\": \"gqa\"");
    if (hlx_has(root, "sliding_pattern") && m->sliding_window == 0)
        return HLX_MFAIL("sliding_pattern", "only meaningful with \"sliding_window\"");
    if (hlx_has(root, "sliding_from") && m->sliding_window == 0)
        return HLX_MFAIL("sliding_from", "only meaningful with \"sliding_window\"");
    if (m->sliding_from >= m->layers && m->sliding_window > 0)
        return HLX_MFAIL("sliding_from", "%d leaves no layer of the %d windowed: leave "
                         "\"sliding_window\" out instead", m->sliding_from, m->layers);
    if (m->nope_pattern == 1)
        return HLX_MFAIL("nope_pattern", "1 would leave every layer without RoPE (0: every "
                         "layer rotates, P >= 2: every P-th layer unrotated)");
    if (m->nope_pattern > 0 && m->attn == HLX_ATTN_MLA)
        return HLX_MFAIL("nope_pattern", "only with \"attn\": \"gqa\" (MLA's heads keep "
                         "their own unrotated part)");
    if (m->nope_pattern > 0 && m->dca_chunk > 0)
        return HLX_MFAIL("nope_pattern", "not with dual chunk attention (its chunks are "
                         "rotations)");
    if (m->window_chunked && m->sliding_window == 0)
        return HLX_MFAIL("window_chunked", "only meaningful with \"sliding_window\" (the "
                         "chunk's length)");
    if (m->qk_norm_unit && !m->qk_norm)
        return HLX_MFAIL("qk_norm_unit", "only meaningful with \"qk_norm\"");
    if (m->attn_temp_floor > 0 && m->nope_pattern == 0)
        return HLX_MFAIL("attn_temp_floor", "only meaningful with \"nope_pattern\" (the "
                         "temperature applies to the NoPE layers)");
    if (hlx_has(root, "attn_temp_scale") && m->attn_temp_floor == 0)
        return HLX_MFAIL("attn_temp_scale", "only meaningful with \"attn_temp_floor\"");
    if (m->sliding_pattern == 1)
        return HLX_MFAIL("sliding_pattern", "1 would make every layer attend to the whole "
                         "context: leave \"sliding_window\" out instead (0: every layer "
                         "windowed, P >= 2: every P-th layer whole)");
    {
        static const char *const dca_only[] = { "dca_local_size", "dca_orig_ctx" };
        char why[200];
        const char *f;
        size_t i;
        char path[96];
        for (i = 0; i < sizeof(dca_only) / sizeof(dca_only[0]); i++)
            if (hlx_has(root, dca_only[i]) && m->dca_chunk == 0) {
                snprintf(path, sizeof(path), "/%s", dca_only[i]);
                return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                                     "only meaningful with \"dca_chunk_size\"");
            }
        if ((f = hlx_model_dca_check(m, why, sizeof(why))) != NULL) {
            /* the key in the way where the file has it, else chunk_size's */
            const char *key = !strcmp(f, "dca_chunk") ? "dca_local_size" : f;
            return hlx_jdoc_fail(doc, hlx_model_path(root, hlx_has(root, key) ? key
                                                           : "dca_chunk_size", path,
                                                     sizeof(path)), HLX_ERR_PARSE, "%s", why);
        }
    }
    if (m->experts > 0) {
        if (!hlx_has(root, "top_k"))
            return HLX_MFAIL("top_k", "required key is missing (experts per token)");
        if (!hlx_has(root, "expert_ffn"))
            return HLX_MFAIL("expert_ffn", "required key is missing (expert intermediate size)");
        if (m->top_k > m->experts)
            return HLX_MFAIL("top_k", "%d exceeds experts %d", m->top_k, m->experts);
        if (m->dense_layers > m->layers)
            return HLX_MFAIL("dense_layers", "%d exceeds layers %d", m->dense_layers,
                             m->layers);
        if (m->dense_layers > 0 && m->ffn == 0)
            return HLX_MFAIL("ffn", "dense_layers %d need a dense ffn size", m->dense_layers);
        if (m->moe_step > 1 && m->ffn == 0)
            return HLX_MFAIL("ffn", "moe_step %d leaves dense layers between the MoE ones: "
                             "they need a dense ffn size", m->moe_step);
        if (m->moe_step > 1 && hlx_model_moe_layers(m) == 0)
            return HLX_MFAIL("moe_step", "%d leaves no MoE layer among layers %d to %d (l + 1 "
                             "a multiple of it)", m->moe_step, m->dense_layers, m->layers - 1);
        if (m->post_norms)
            return HLX_MFAIL("post_norms", "only with a dense FFN (\"experts\": 0): the MoE "
                             "layers do not normalise their output");
        if (m->shared_gate && m->shared_experts == 0)
            return HLX_MFAIL("shared_expert_gate", "gates the shared experts' output: needs "
                             "\"shared_experts\" > 0");
        if ((st = hlx_model_gating(doc, r)) != HLX_OK)
            return st;
    } else {
        static const char *const moe_only[] = { "top_k", "shared_experts", "expert_ffn",
                                                "shared_expert_gate", "dense_layers",
                                                "moe_step", "moe_weight_input",
                                                "scoring_func",
                                                "norm_topk_prob", "routed_scaling_factor",
                                                "n_group", "topk_group", "group_score" };
        char path[64];
        size_t i;
        for (i = 0; i < sizeof(moe_only) / sizeof(moe_only[0]); i++) {
            if (hlx_has(root, moe_only[i])) {
                snprintf(path, sizeof(path), "/%s", moe_only[i]);
                return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                                     "only meaningful with \"experts\" > 0");
            }
        }
        if (m->ffn == 0)
            return HLX_MFAIL("ffn", hlx_has(root, "ffn") ? "must be positive for a dense model"
                                                         : "required key is missing (dense FFN size)");
        m->dense_layers = m->layers;
    }
    if ((st = hlx_model_validate_layernorm(doc, r)) != HLX_OK)
        return st;
    if (m->post_norms_only && !m->post_norms)
        return HLX_MFAIL("post_norms_only", "needs \"post_norms\": true (the layer's only "
                         "norms are those of its outputs)");
    if (m->qk_norm_proj && m->qk_norm)
        return HLX_MFAIL("qk_norm_proj", "not with \"qk_norm\": q and k are normalised "
                         "either per head (Qwen3) or over their whole projections (OLMo 2)");
    if (m->routed_scaling == 0.0)
        m->routed_scaling = 1.0;
    if (m->n_group == 0)
        m->n_group = 1;
    if (m->topk_group == 0)
        m->topk_group = m->n_group;
    return HLX_OK;
}

/* The "rope" object's longrope factor sets, once rope_dim is known: rope_dim / 2 positive,
 * finite numbers each, and its attention_factor. */
static hlx_status_t hlx_model_longrope(hlx_jdoc_t *doc, hlx_model_t *m)
{
    static const char *const sets[] = { "short_factor", "long_factor" };
    json_t *rope = json_object_get(hlx_jdoc_root(doc), "rope"), *a, *v;
    const int pairs = m->rope_dim / 2;
    char path[64];
    size_t i, k;

    if (pairs > HLX_ROPE_MAX_PAIRS)
        return HLX_MFAIL("rope_scaling", "longrope with rope_dim %d: at most %d rotated pairs "
                         "are taken", m->rope_dim, HLX_ROPE_MAX_PAIRS);
    if (json_object_get(rope, "attention_factor") == NULL)
        return hlx_jdoc_fail(doc, "/rope/attention_factor", HLX_ERR_PARSE, "required key is "
                             "missing (longrope: the factor on cos and sin)");
    for (k = 0; k < 2; k++) {
        double *out = k ? m->rope_long_factor : m->rope_short_factor;
        snprintf(path, sizeof(path), "/rope/%s", sets[k]);
        a = json_object_get(rope, sets[k]);
        if (!json_is_array(a) || json_array_size(a) != (size_t)pairs)
            return hlx_jdoc_fail(doc, a ? path : "/rope/scaling", HLX_ERR_PARSE, "longrope "
                                 "needs %s: an array of %d numbers (one per rotated pair: "
                                 "rope_dim %d / 2)", sets[k], pairs, m->rope_dim);
        json_array_foreach(a, i, v) {
            if (!json_is_number(v) || !isfinite(json_number_value(v)) ||
                !(json_number_value(v) > 0))
                return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "element %zu: every factor "
                                     "must be a positive, finite number", i);
            out[i] = json_number_value(v);
        }
    }
    return HLX_OK;
}

/* The "rope" object (`helix model info --json`'s): read into the flat keys' fields, refused
 * beside any of those keys (one setting given twice). */
static hlx_status_t hlx_model_read_rope(hlx_jdoc_t *doc, hlx_model_raw_t *r)
{
    json_t *root = hlx_jdoc_root(doc), *rope = json_object_get(root, "rope"), *dca;
    char path[64];
    size_t i;
    hlx_status_t st;

    if (rope == NULL)
        return HLX_OK;
    if (!json_is_object(rope))
        return hlx_jdoc_fail(doc, "/rope", HLX_ERR_PARSE, "expected an object (theta, dim, "
                             "scaling and the scaling's parameters)");
    for (i = 0; i < sizeof(hlx_model_rope_map) / sizeof(hlx_model_rope_map[0]); i++)
        if (json_object_get(root, hlx_model_rope_map[i].flat) != NULL) {
            snprintf(path, sizeof(path), "/%s", hlx_model_rope_map[i].flat);
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "not beside the \"rope\" object, "
                                 "which gives RoPE's settings: give them one way (the \"rope\" "
                                 "object's \"%s\", or the rope_* and dca_* keys alone)",
                                 hlx_model_rope_map[i].nested);
        }
    if (json_object_get(rope, "max_position_embeddings") != NULL &&
        json_object_get(rope, "original_max_position_embeddings") != NULL)
        return hlx_jdoc_fail(doc, "/rope/max_position_embeddings", HLX_ERR_PARSE, "not beside "
                             "original_max_position_embeddings: the original context is one of "
                             "them (max_position_embeddings for scaling \"dynamic\")");
    r->rope_truncate = 1;
    st = hlx_jdoc_read_object(doc, rope, "/rope", hlx_model_rope_fields,
                              sizeof(hlx_model_rope_fields) / sizeof(hlx_model_rope_fields[0]),
                              r);
    if (st == HLX_OK && (dca = json_object_get(rope, "dual_chunk_attention")) != NULL)
        st = hlx_jdoc_read_object(doc, dca, "/rope/dual_chunk_attention", hlx_model_dca_fields,
                                  sizeof(hlx_model_dca_fields) / sizeof(hlx_model_dca_fields[0]),
                                  r);
    r->m.rope_yarn_exact = !r->rope_truncate;
    return st;
}

/* Reads and validates a model file; on success the document stays open in *doc_p (so that
 * later checks can name positions) and must be freed by the caller. */
static hlx_status_t hlx_model_read(const char *path_or_preset, hlx_model_t *m,
                                   hlx_jdoc_t **doc_p, char *err, size_t errlen)
{
    char path[1024];
    hlx_model_raw_t raw;
    hlx_jdoc_t *doc = NULL;
    hlx_status_t st;

    st = hlx_data_resolve("models", path_or_preset, path, sizeof(path), err, errlen);
    if (st != HLX_OK)
        return st;
    memset(&raw, 0, sizeof(raw));
    st = hlx_jdoc_load_file_as(path, "model file", &doc);
    /* `helix model info --json`'s whole document: its "model" member is the model file
     * (the rest, the checkpoint's sizes, is not read) */
    if (st == HLX_OK && json_is_object(json_object_get(hlx_jdoc_root(doc), "model")) &&
        json_object_get(hlx_jdoc_root(doc), "architecture") != NULL)
        st = hlx_jdoc_scope(doc, "model");
    if (st == HLX_OK)
        st = hlx_jdoc_read_object(doc, hlx_jdoc_root(doc), "", hlx_model_fields,
                                  sizeof(hlx_model_fields) / sizeof(hlx_model_fields[0]),
                                  &raw);
    if (st == HLX_OK)
        st = hlx_model_read_rope(doc, &raw);
    if (st == HLX_OK)
        st = hlx_model_validate(doc, &raw);
    if (st == HLX_OK && raw.m.rope_kind == HLX_ROPE_LONGROPE)
        st = hlx_model_longrope(doc, &raw.m);
    if (st != HLX_OK) {
        snprintf(err, errlen, "%s", doc ? hlx_jdoc_error(doc) : "out of memory");
        hlx_jdoc_free(doc);
        return st;
    }
    *doc_p = doc;
    *m = raw.m;
    return HLX_OK;
}

hlx_status_t hlx_model_load(const char *path_or_preset, hlx_model_t *m, char *err,
                            size_t errlen)
{
    hlx_jdoc_t *doc = NULL;
    hlx_status_t st = hlx_model_read(path_or_preset, m, &doc, err, errlen);

    hlx_jdoc_free(doc);
    return st;
}

/* ---- what the decode runtime runs: GQA and MLA attention, dense and MoE FFNs, f32 and
 * bf16 weights. The planner models the rest. */

/* The first field the runtime does not run (NULL when it runs the model); why gets the
 * reason. */
static const char *hlx_model_unrun(const hlx_model_t *m, char *why, size_t whylen)
{
    if (m->weight_dtype != HLX_DTYPE_F32 && m->weight_dtype != HLX_DTYPE_BF16) {
        snprintf(why, whylen, "%s weights are not run by the decode runtime (f32 or bf16; "
                 "an fp8 checkpoint with block scales runs dequantized)",
                 hlx_dtype_name(m->weight_dtype));
        return "weight_dtype";
    }
    return NULL;
}

hlx_status_t hlx_model_check_runnable(const hlx_model_t *m, char *err, size_t errlen)
{
    char why[160];
    const char *field = hlx_model_unrun(m, why, sizeof(why));

    if (field == NULL)
        return HLX_OK;
    snprintf(err, errlen, "model %s: %s: %s; `helix plan` models it", m->name, field, why);
    return HLX_ERR_INVALID;
}

hlx_status_t hlx_model_load_runnable(const char *path_or_preset, hlx_model_t *m, char *err,
                                     size_t errlen)
{
    hlx_jdoc_t *doc = NULL;
    hlx_model_t tmp;
    const char *field;
    char path[64], why[160];
    hlx_status_t st = hlx_model_read(path_or_preset, &tmp, &doc, err, errlen);

    if (st != HLX_OK)
        return st;
    field = hlx_model_unrun(&tmp, why, sizeof(why));
    if (field == NULL) {
        hlx_jdoc_free(doc);
        *m = tmp;
        return HLX_OK;
    }
    snprintf(path, sizeof(path), "/%s", field);
    st = hlx_jdoc_fail(doc, path, HLX_ERR_INVALID, "%s; `helix plan` models it", why);
    snprintf(err, errlen, "%s", hlx_jdoc_error(doc));
    hlx_jdoc_free(doc);
    return st;
}

/* ---- hash of every field, for the cross-rank configuration check. */

static uint64_t hlx_model_mix(uint64_t h, uint64_t v)
{
    /* splitmix64 finaliser over the running hash and the next word */
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

static uint64_t hlx_model_mix_double(uint64_t h, double d)
{
    uint64_t bits;

    if (d == 0.0)
        d = 0.0; /* -0.0 and 0.0 are one value */
    memcpy(&bits, &d, sizeof(bits));
    return hlx_model_mix(h, bits);
}

/* A new field of hlx_model_t changes its size (8680 bytes on LP64 with the 82 fields
 * hashed below, and plain and plain_dtype, which the planner alone reads: what an fp8
 * checkpoint stores unquantized changes nothing the ranks run): add it to hlx_model_hash,
 * then update this size. */
_Static_assert(sizeof(hlx_model_t) == 8680 || sizeof(void *) != 8,
               "hlx_model_t changed: hash the new field in hlx_model_hash()");

uint64_t hlx_model_hash(const hlx_model_t *m)
{
    const int64_t ints[] = {
        m->attn,         m->layers,       m->hidden,         m->q_heads,
        m->kv_heads,     m->head_dim,     m->v_head_dim,     m->ffn,
        m->vocab,        m->rope_dim,     m->weight_dtype,   m->kv_dtype,
        m->q_lora_rank,  m->kv_lora_rank, m->qk_nope_dim,    m->qk_rope_dim,
        m->experts,      m->top_k,        m->shared_experts, m->expert_ffn,
        m->dense_layers, m->moe_scoring,  m->norm_topk_prob,   m->n_group,
        m->topk_group,   m->rope_kind,    m->rope_orig_ctx,  m->rope_long,
        m->qkv_bias,     m->qk_norm,      m->moe_group_score, m->shared_gate,
        m->post_norms,   m->sliding_window, m->sliding_pattern, m->ffn_act,
        m->post_norms_only, m->qk_norm_proj, m->norm_layer, m->ffn_plain, m->ffn_bias,
        m->embed_scale,  m->sliding_from, m->tie_embeddings, m->dca_chunk,
        m->dca_local,    m->dca_orig,     m->nope_pattern, m->attn_sinks,
        m->o_bias,       m->router_bias,  m->expert_bias,  m->rope_yarn_exact,
        m->qk_norm_unit, m->window_chunked, m->attn_temp_floor, m->moe_step,
        m->moe_weight_input,
    };
    uint64_t h = 0x68656c69786d6f64ull; /* "helixmod" */
    size_t i;

    for (i = 0; i < sizeof(m->name) && m->name[i]; i++)
        h = hlx_model_mix(h, (unsigned char)m->name[i]);
    h = hlx_model_mix(h, i);
    for (i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
        h = hlx_model_mix(h, (uint64_t)ints[i]);
    h = hlx_model_mix_double(h, m->rope_theta);
    h = hlx_model_mix_double(h, m->rope_factor);
    h = hlx_model_mix_double(h, m->rope_low_freq);
    h = hlx_model_mix_double(h, m->rope_high_freq);
    h = hlx_model_mix_double(h, m->rope_beta_fast);
    h = hlx_model_mix_double(h, m->rope_beta_slow);
    h = hlx_model_mix_double(h, m->rope_mscale);
    h = hlx_model_mix_double(h, m->rope_mscale_all);
    h = hlx_model_mix_double(h, m->rope_attn_factor);
    for (i = 0; i < HLX_ROPE_MAX_PAIRS; i++) {
        h = hlx_model_mix_double(h, m->rope_short_factor[i]);
        h = hlx_model_mix_double(h, m->rope_long_factor[i]);
    }
    h = hlx_model_mix_double(h, m->routed_scaling);
    h = hlx_model_mix_double(h, m->attn_scalar);
    h = hlx_model_mix_double(h, m->rope_local_theta);
    h = hlx_model_mix_double(h, m->attn_softcap);
    h = hlx_model_mix_double(h, m->final_softcap);
    h = hlx_model_mix_double(h, m->embed_mult);
    h = hlx_model_mix_double(h, m->residual_mult);
    h = hlx_model_mix_double(h, m->logits_scale);
    h = hlx_model_mix_double(h, m->act_alpha);
    h = hlx_model_mix_double(h, m->act_limit);
    h = hlx_model_mix_double(h, m->attn_temp_scale);
    return hlx_model_mix_double(h, m->norm_eps);
}

double hlx_model_attn_tokens(const hlx_model_t *m, double seq)
{
    double sum = 0.0;
    int l;

    if (m->sliding_window <= 0 || m->layers <= 0)
        return seq;
    for (l = 0; l < m->layers; l++) {
        int w = hlx_model_layer_window(m, l);
        sum += w > 0 && w < seq ? (double)w : seq;
    }
    return sum / m->layers;
}

int hlx_model_key_dim(const hlx_model_t *m)
{
    return m->attn == HLX_ATTN_MLA ? m->kv_lora_rank + m->qk_rope_dim : m->head_dim;
}

int hlx_model_value_dim(const hlx_model_t *m)
{
    return m->attn == HLX_ATTN_MLA ? m->kv_lora_rank : m->v_head_dim;
}

int hlx_model_q_split(int min_heads, int max_heads, int kvp, int dv)
{
    int64_t cost, best_cost = 0;
    int d, i, s, best = 0;

    if (min_heads >= kvp)
        return 1;
    for (d = 1; (int64_t)d * d <= dv; d++) { /* the divisors in pairs: d and dv / d */
        if (dv % d != 0)
            continue;
        for (i = 0; i < 2; i++) {
            s = i == 0 ? d : dv / d;
            if (s < 2 || (int64_t)min_heads * s < kvp)
                continue;
            cost = ((int64_t)max_heads * s + kvp - 1) / kvp * (dv / s + 1);
            if (best == 0 || cost < best_cost || (cost == best_cost && s < best))
                best = s, best_cost = cost;
        }
    }
    return best;
}

double hlx_model_attn_params(const hlx_model_t *m)
{
    double H = m->hidden, Q = m->q_heads;

    if (m->attn == HLX_ATTN_MLA) {
        double qk = m->qk_nope_dim + m->qk_rope_dim;
        double q  = m->q_lora_rank > 0 ? H * m->q_lora_rank + (double)m->q_lora_rank * Q * qk
                                       : H * Q * qk;
        double kv = H * (m->kv_lora_rank + m->qk_rope_dim) +
                    (double)m->kv_lora_rank * Q * (m->qk_nope_dim + m->v_head_dim);
        double o  = Q * m->v_head_dim * H;
        return q + kv + o;
    }
    return H * Q * m->head_dim + H * m->kv_heads * (m->head_dim + m->v_head_dim) +
           Q * m->v_head_dim * H +
           (m->qkv_bias ? Q * m->head_dim + (double)m->kv_heads * (m->head_dim + m->v_head_dim)
                        : 0.0) +
           (m->qk_norm && !m->qk_norm_unit ? 2.0 * m->head_dim : 0.0) +
           (m->qk_norm_proj ? (Q + m->kv_heads) * (double)m->head_dim : 0.0) +
           (m->attn_sinks ? Q : 0.0) +
           (m->o_bias ? H : 0.0);
}

double hlx_model_params(const hlx_model_t *m)
{
    double H = m->hidden;
    double attn = hlx_model_attn_params(m);
    /* gated: gate, up and down; plain (StarCoder2): up and down, with their biases */
    double dense_ffn = hlx_model_ffn_mats(m) * H * m->ffn +
                       (m->ffn_bias ? (double)m->ffn + H : 0.0);
    /* a LayerNorm has a bias beside its weight */
    double nw = m->norm_layer ? 2.0 : 1.0;
    double moe_ffn = m->experts > 0
        ? 3.0 * H * m->expert_ffn * (m->experts + m->shared_experts) + H * m->experts +
              (m->shared_gate ? H : 0.0) + (m->router_bias ? m->experts : 0.0) +
              (m->expert_bias ? (2.0 * m->expert_ffn + H) * m->experts : 0.0)
        : 0.0;
    int moe_layers = hlx_model_moe_layers(m);

    /* Input embedding and an output head unless tied; norms are negligible but counted. */
    /* norms: the two before the attention and the FFN, the two after them (post_norms), or
     * the two after alone (post_norms_only) */
    return (m->tie_embeddings ? 1.0 : 2.0) * m->vocab * H +
           m->layers * (attn + (m->post_norms && !m->post_norms_only ? 4.0 : 2.0) * nw * H) +
           (m->layers - moe_layers) * dense_ffn +
           moe_layers * moe_ffn + nw * H;
}

/* ---- RoPE frequencies and the softmax scale (formulas of the Hugging Face models) */

#define HLX_PI 3.14159265358979323846

static double hlx_yarn_mscale(double factor, double mscale)
{
    return factor <= 1.0 ? 1.0 : 0.1 * mscale * log(factor) + 1.0;
}

/* yarn: the pair index where a frequency makes `rotations` turns over the original
 * context (DeepSeek-V3's yarn_find_correction_dim). */
static double hlx_yarn_dim(double rotations, int dim, double base, double orig)
{
    return dim * log(orig / (rotations * 2.0 * HLX_PI)) / (2.0 * log(base));
}

void hlx_model_rope_freqs(const hlx_model_t *m, int rot_dim, double *inv_freq, double *mscale)
{
    const int half = rot_dim / 2;
    const double f = m->rope_factor > 0 ? m->rope_factor : 1.0, orig = m->rope_orig_ctx;
    double lo = 0, hi = 0;
    int i;

    *mscale = 1.0;
    if (m->rope_kind == HLX_ROPE_LONGROPE) { /* transformers' _compute_longrope_parameters */
        const double *ext = m->rope_long ? m->rope_long_factor : m->rope_short_factor;
        for (i = 0; i < half && i < HLX_ROPE_MAX_PAIRS; i++)
            inv_freq[i] = 1.0 / (ext[i] * pow(m->rope_theta, 2.0 * i / rot_dim));
        *mscale = m->rope_attn_factor;
        return;
    }
    if (m->rope_kind == HLX_ROPE_YARN) {
        lo = hlx_yarn_dim(m->rope_beta_fast, rot_dim, m->rope_theta, orig);
        hi = hlx_yarn_dim(m->rope_beta_slow, rot_dim, m->rope_theta, orig);
        if (!m->rope_yarn_exact) { /* transformers' truncate (default true) */
            lo = floor(lo);
            hi = ceil(hi);
        }
        lo = fmax(lo, 0.0);
        hi = fmin(hi, rot_dim - 1.0);
        if (lo == hi)
            hi += 0.001;
        /* DeepSeek's attention (MLA, modeling_deepseek.py) always takes the ratio, with
         * mscale 1 and mscale_all_dim 0 when absent; transformers' yarn for the other
         * families takes it only when both are set, else mscale(factor, 1) */
        if (m->rope_attn_factor > 0) /* GQA's attention_factor, given (hlx_cfg_yarn) */
            *mscale = m->rope_attn_factor;
        else if (m->attn == HLX_ATTN_MLA ||
                 (m->rope_mscale != 0.0 && m->rope_mscale_all != 0.0))
            *mscale = hlx_yarn_mscale(f, m->rope_mscale) / hlx_yarn_mscale(f, m->rope_mscale_all);
        else
            *mscale = hlx_yarn_mscale(f, 1.0);
    }
    for (i = 0; i < half; i++) {
        const double base = pow(m->rope_theta, -2.0 * i / rot_dim);
        double v = base;
        if (m->rope_kind == HLX_ROPE_LINEAR) {
            v = base / f;
        } else if (m->rope_kind == HLX_ROPE_LLAMA3) {
            const double wavelen = 2.0 * HLX_PI / base;
            const double low_wl = orig / m->rope_low_freq, high_wl = orig / m->rope_high_freq;
            if (wavelen > low_wl) {
                v = base / f;
            } else if (wavelen >= high_wl && m->rope_high_freq > m->rope_low_freq) {
                /* the band between: a smooth mix (none where the factors are equal, Llama
                 * 4's: transformers' 0 / 0 there falls on no frequency) */
                const double s = (orig / wavelen - m->rope_low_freq) /
                                 (m->rope_high_freq - m->rope_low_freq);
                v = (1.0 - s) * base / f + s * base;
            }
        } else if (m->rope_kind == HLX_ROPE_YARN) {
            const double ramp = fmin(fmax((i - lo) / (hi - lo), 0.0), 1.0);
            const double keep = 1.0 - ramp; /* 1: the frequency kept, 0: interpolated */
            v = base / f * (1.0 - keep) + base * keep;
        }
        inv_freq[i] = v;
    }
}

const char *hlx_model_rope_kind_name(hlx_rope_kind_t kind)
{
    static const char *const names[] = {
        [HLX_ROPE_NONE] = "none", [HLX_ROPE_LINEAR] = "linear", [HLX_ROPE_LLAMA3] = "llama3",
        [HLX_ROPE_YARN] = "yarn", [HLX_ROPE_LONGROPE] = "longrope",
        [HLX_ROPE_DYNAMIC] = "dynamic",
    };

    return (unsigned)kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

void hlx_model_rope_freqs_at(const hlx_model_t *m, int rot_dim, int64_t seq_len,
                             double *inv_freq, double *mscale)
{
    const double f = m->rope_factor, orig = m->rope_orig_ctx;
    double base;
    int i;

    if (m->rope_kind != HLX_ROPE_DYNAMIC || seq_len <= m->rope_orig_ctx || rot_dim <= 2) {
        hlx_model_rope_freqs(m, rot_dim, inv_freq, mscale);
        return;
    }
    base = m->rope_theta * pow(f * (double)seq_len / orig - (f - 1.0),
                               (double)rot_dim / (rot_dim - 2.0));
    for (i = 0; i < rot_dim / 2; i++)
        inv_freq[i] = pow(base, -2.0 * i / rot_dim);
    *mscale = 1.0;
}

void hlx_model_rope_select(hlx_model_t *m, int64_t seq_len)
{
    /* transformers switches per forward call on its largest position + 1; one set per run
     * keeps every rank, every cached key and the reference on the same rotation */
    m->rope_long = m->rope_kind == HLX_ROPE_LONGROPE && seq_len > m->rope_orig_ctx;
}

double hlx_model_embed_scale(const hlx_model_t *m)
{
    return hlx_model_embed_scale_held(m, m->weight_dtype);
}

int hlx_model_ffn_mats(const hlx_model_t *m)
{
    return m->ffn_plain ? 2 : 3;
}

double hlx_model_embed_scale_held(const hlx_model_t *m, hlx_dtype_t held)
{
    float s = (float)sqrt((double)m->hidden);

    if (m->embed_mult > 0.0) /* Granite: its multiplier, as given */
        return m->embed_mult;
    if (!m->embed_scale)
        return 1.0;
    /* fp8 linear weights: the other tensors (the embedding) and the dequantized ones bf16 */
    return held == HLX_DTYPE_BF16 || held == HLX_DTYPE_FP8 ? hlx_bf16_to_f32(hlx_f32_to_bf16(s))
                                                           : s;
}

double hlx_model_residual_mult(const hlx_model_t *m)
{
    return m->residual_mult > 0.0 ? m->residual_mult : 1.0;
}

double hlx_model_attn_temp(const hlx_model_t *m, int l, int64_t pos)
{
    if (m->attn_temp_floor <= 0 || hlx_model_layer_rope(m, l))
        return 1.0;
    return 1.0 + m->attn_temp_scale * log1p((double)((pos + 1) / m->attn_temp_floor));
}

const char *hlx_model_dca_check(const hlx_model_t *m, char *why, size_t whylen)
{
    if (m->dca_chunk <= 0)
        return NULL;
    if (m->dca_local < 0 || m->dca_local >= m->dca_chunk) {
        snprintf(why, whylen, "local_size %d must be at least 0 and below chunk_size %d (the "
                 "chunks are chunk_size - local_size positions long)", m->dca_local,
                 m->dca_chunk);
        return "dca_chunk";
    }
    if (m->dca_orig < 0) {
        snprintf(why, whylen, "original_max_position_embeddings %d is negative", m->dca_orig);
        return "dca_orig_ctx";
    }
    if (m->attn != HLX_ATTN_GQA) {
        snprintf(why, whylen, "dual chunk attention is run with GQA attention only");
        return "attn";
    }
    if (m->rope_kind != HLX_ROPE_NONE) {
        snprintf(why, whylen, "dual chunk attention with rope_scaling \"%s\" is not run (it "
                 "turns keys and queries with the plain RoPE of rope_theta, as vLLM does): "
                 "leave one of the two out", hlx_model_rope_kind_name(m->rope_kind));
        return "rope_scaling";
    }
    if (m->sliding_window > 0) {
        snprintf(why, whylen, "dual chunk attention with a sliding window is not run: leave "
                 "one of the two out");
        return "sliding_window";
    }
    return NULL;
}

void hlx_model_dca_split(const hlx_model_t *m, int64_t pos, hlx_dca_split_t *s)
{
    const int64_t len = (int64_t)m->dca_chunk - m->dca_local, c = len > 0 ? pos / len : 0;
    const int64_t r = len > 0 ? pos % len : pos, cs = m->dca_chunk;

    s->end[HLX_DCA_INTER] = c >= 2 ? (c - 1) * len : 0;
    s->end[HLX_DCA_SUCC]  = c * len;
    s->end[HLX_DCA_INTRA] = pos + 1;
    s->rot[HLX_DCA_INTER] = 2 * len - 1 < cs ? 2 * len - 1 : cs;
    s->rot[HLX_DCA_SUCC]  = r + len < cs ? r + len : cs;
    s->rot[HLX_DCA_INTRA] = r;
}

double hlx_model_dca_factor(const hlx_model_t *m, int64_t seq_len)
{
    double f;

    if (m->dca_chunk <= 0 || m->dca_orig <= 0 || seq_len <= m->dca_orig)
        return 1.0;
    f = 0.1 * log((double)seq_len / m->dca_orig) + 1.0;
    return f > 1.0 ? f : 1.0;
}

double hlx_model_softmax_scale(const hlx_model_t *m, int qk_dim)
{
    double s = 1.0 / sqrt(m->attn_scalar > 0.0 ? m->attn_scalar : (double)qk_dim);

    /* DeepSeek's attention alone scales its softmax by yarn's mscale_all_dim; transformers'
     * attention of the other families leaves the scale at 1 / sqrt(head_dim) */
    if (m->attn == HLX_ATTN_MLA && m->rope_kind == HLX_ROPE_YARN && m->rope_mscale_all != 0.0) {
        const double ms = hlx_yarn_mscale(m->rope_factor, m->rope_mscale_all);
        s *= ms * ms;
    }
    return s;
}
