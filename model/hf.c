/* Hugging Face model layout: config.json of the dense (Llama, Mistral, Phi-3; with routed
 * experts: Mixtral, Qwen-MoE, GLM-4.5) and MoE+MLA (DeepSeek-V3) families, the tensors each
 * must hold, and the map from runtime weights to them. */
#define _GNU_SOURCE
#include "hlx_ckpt.h"
#include "hlx_err.h"
#include "hlx_gating.h"
#include "hlx_hf_ignore.h"
#include "hlx_json.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


/* ---- config.json --------------------------------------------------------------------- */

/* Reads integer key into *out; absent: *out = def (or an error when required). A JSON null
 * counts as absent (DeepSeek writes "q_lora_rank": null for no query compression). */
static hlx_status_t hlx_cfg_int(hlx_jdoc_t *doc, const char *key, int required, int def,
                                int min, int *out)
{
    json_t *v = json_object_get(hlx_jdoc_root(doc), key);
    char path[80];

    snprintf(path, sizeof(path), "/%s", key);
    if (v == NULL || json_is_null(v)) {
        if (required)
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "required key is missing");
        *out = def;
        return HLX_OK;
    }
    if (!json_is_integer(v))
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected an integer");
    if (json_integer_value(v) < min || json_integer_value(v) > 100000000)
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "%lld is outside [%d, 100000000]",
                             (long long)json_integer_value(v), min);
    *out = (int)json_integer_value(v);
    return HLX_OK;
}

#define HLX_TRY(_x)                \
    do {                           \
        if ((st = (_x)) != HLX_OK) \
            return st;             \
    } while (0)

/* A finite number in [min, max] at path (v present). */
static hlx_status_t hlx_cfg_number_at(hlx_jdoc_t *doc, json_t *v, const char *path,
                                      double min, double max, double *out)
{
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected a finite number");
    if (json_number_value(v) < min || json_number_value(v) > max)
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "%g is outside [%g, %g]",
                             json_number_value(v), min, max);
    *out = json_number_value(v);
    return HLX_OK;
}

static hlx_status_t hlx_cfg_num(hlx_jdoc_t *doc, const char *key, double def, double min,
                                double max, double *out)
{
    json_t *v = json_object_get(hlx_jdoc_root(doc), key);
    char path[80];

    snprintf(path, sizeof(path), "/%s", key);
    if (v == NULL || json_is_null(v)) {
        *out = def;
        return HLX_OK;
    }
    return hlx_cfg_number_at(doc, v, path, min, max, out);
}

static hlx_status_t hlx_cfg_bool(hlx_jdoc_t *doc, const char *key, int def, int *out)
{
    json_t *v = json_object_get(hlx_jdoc_root(doc), key);
    char path[80];

    snprintf(path, sizeof(path), "/%s", key);
    if (v == NULL || json_is_null(v)) {
        *out = def;
        return HLX_OK;
    }
    if (!json_is_boolean(v))
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected true or false");
    *out = json_is_true(v);
    return HLX_OK;
}

static hlx_status_t hlx_cfg_str(hlx_jdoc_t *doc, const char *key, const char *def, char *out,
                                size_t len)
{
    json_t *v = json_object_get(hlx_jdoc_root(doc), key);
    char path[80];

    snprintf(path, sizeof(path), "/%s", key);
    if (v == NULL || json_is_null(v)) {
        snprintf(out, len, "%s", def);
        return HLX_OK;
    }
    if (!json_is_string(v) || strlen(json_string_value(v)) >= len)
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected a string of at most %zu bytes",
                             len - 1);
    snprintf(out, len, "%s", json_string_value(v));
    return HLX_OK;
}

/* max_position_embeddings, the context the model was trained for: *mp 0 when absent or null,
 * else a whole number of positions in [1, 100000000], checked wherever it is given, read or
 * not (vLLM sizes its context by it; 0, a negative or a fraction has no meaning there). Read
 * by longrope's factor, dynamic NTK's original context, yarn's and llama3's in place of a
 * missing original_max_position_embeddings, and the window check. */
static hlx_status_t hlx_cfg_max_pos(hlx_jdoc_t *doc, int *mp)
{
    json_t *v = json_object_get(hlx_jdoc_root(doc), "max_position_embeddings");

    *mp = 0;
    if (v == NULL || json_is_null(v))
        return HLX_OK;
    if (!json_is_integer(v))
        return hlx_jdoc_fail(doc, "/max_position_embeddings", HLX_ERR_PARSE, "expected an "
                             "integer (the model's context in positions, in [1, 100000000])");
    if (json_integer_value(v) < 1 || json_integer_value(v) > 100000000)
        return hlx_jdoc_fail(doc, "/max_position_embeddings", HLX_ERR_PARSE, "%lld is outside "
                             "[1, 100000000] (the model's context in positions)",
                             (long long)json_integer_value(v));
    *mp = (int)json_integer_value(v);
    return HLX_OK;
}

/* Whether key is absent from the top level of config.json (a null is present): where a
 * default then fails a check, the message says it was absent. */
static int hlx_cfg_absent(hlx_jdoc_t *doc, const char *key)
{
    return json_object_get(hlx_jdoc_root(doc), key) == NULL;
}

/* The layer family a class's text model is built as (its "base"): what the class-dependent
 * reads of config.json and of the tensors ask (hlx_hf_base), in place of class names.
 * HLX_HF_BASE_TEXT: the one text_config's model_type names (hlx_hf_text_classes);
 * HLX_HF_BASE_NONE: a class outside hlx_hf_archs (no predicate holds for it). */
typedef enum hlx_hf_base {
    HLX_HF_BASE_NONE = 0, HLX_HF_BASE_TEXT, HLX_HF_BASE_LLAMA, HLX_HF_BASE_MISTRAL,
    HLX_HF_BASE_QWEN2, HLX_HF_BASE_QWEN3, HLX_HF_BASE_QWEN2_MOE, HLX_HF_BASE_QWEN3_MOE,
    HLX_HF_BASE_MIXTRAL, HLX_HF_BASE_GLM, HLX_HF_BASE_GLM4, HLX_HF_BASE_GLM4_MOE,
    HLX_HF_BASE_PHI3, HLX_HF_BASE_INTERNLM2, HLX_HF_BASE_INTERNLM3, HLX_HF_BASE_GRANITE,
    HLX_HF_BASE_SMOLLM3, HLX_HF_BASE_SEED_OSS, HLX_HF_BASE_GEMMA, HLX_HF_BASE_GEMMA2,
    HLX_HF_BASE_GEMMA3, HLX_HF_BASE_DEEPSEEK, HLX_HF_BASE_DEEPSEEK_V2,
    HLX_HF_BASE_DEEPSEEK_V3, HLX_HF_BASE_GPT_OSS, HLX_HF_BASE_DOTS1,
    HLX_HF_BASE_GRANITE_MOE,
    HLX_HF_BASE_OLMO2,
    HLX_HF_BASE_GRANITE_MOE_SHARED,
    HLX_HF_BASE_OLMO3,
    HLX_HF_BASE_STARCODER2,
    HLX_HF_BASE_LLAMA4,
    HLX_HF_NBASES
} hlx_hf_base_t;

/* the bases' names (`helix model archs`), in the enum's order */
static const char *const hlx_hf_base_names[HLX_HF_NBASES] = {
    "", "text_config", "llama", "mistral", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe",
    "mixtral", "glm", "glm4", "glm4_moe", "phi3", "internlm2", "internlm3", "granite", "smollm3",
    "seed_oss", "gemma",
    "gemma2",
    "gemma3", "deepseek", "deepseek_v2", "deepseek_v3", "gpt_oss", "dots1",
    "granitemoe",
    "olmo2",
    "granitemoeshared",
    "olmo3",
    "starcoder2",
    "llama4_text",
};

/* How a multimodal class's text model is read beyond HLX_HF_NESTED (none for Gemma 3's,
 * and for the text models' own classes) */
typedef enum hlx_hf_wrap {
    HLX_HF_WRAP_NONE = 0,
    HLX_HF_WRAP_MISTRAL3,    /* text_config's model_type must be mistral (Mistral Small 3.1) */
    HLX_HF_WRAP_QWEN2_VL,    /* multimodal RoPE sections; text keys under text_config or, as
                                Qwen2VLConfig takes them, at the top level */
    HLX_HF_WRAP_QWEN3_VL,    /* interleaved sections; its own text class (Qwen3VLTextConfig,
                                Qwen3VLMoeTextConfig); tensors under model.language_model. */
    HLX_HF_WRAP_LLAVA,       /* text_config's class (hlx_hf_text_classes), llama when it names
                                none */
    HLX_HF_WRAP_LLAVA_QWEN2, /* the same, qwen2 when it names none (LlavaOnevisionConfig,
                                InternVLConfig) */
    HLX_HF_WRAP_IDEFICS3,    /* text_config's llama alone (vLLM builds Llama's layer whatever
                                it names), tied by text_config's key alone, its tensors under
                                model.text_model. */
} hlx_hf_wrap_t;

/* fused: the tensor layout (HLX_HF_FUSED_*: Phi-3's qkv_proj and gate_up_proj, GLM's
 * gate_up_proj, in place of Llama's separate projections; HLX_HF_ROPE_PAIRS: GLM's q and k
 * rotated in pairs); qkv_bias: Qwen2's q, k and v biases (always there: Qwen2Attention
 * takes no switch; GLM's by attention_bias, default true);
 * qk_norm: Qwen3's per-head q_norm and k_norm before RoPE; moe: routed experts (softmax
 * router) in place of the dense FFN, under DeepSeek's tensor names (HLX_HF_MOE_QWEN3;
 * HLX_HF_MOE_QWEN2 with a gated shared expert; HLX_HF_MOE_GLM4: DeepSeek-V3's gate and
 * shared experts, GLM-4.5's q, k, v biases and q/k norms by attention_bias and
 * use_qk_norm, dots.llm1's norms always) or Mixtral's
 * (block_sparse_moe, w1/w3/w2: HLX_HF_MOE_MIXTRAL); post_norms: GLM-4-0414's norms of the
 * attention's and the FFN's outputs (post_self_attn_layernorm, post_mlp_layernorm);
 * rotary: 0 where every head rotates whole, else the default partial_rotary_factor (Phi-3
 * 1, GLM and GLM-4.5 0.5); eps: the class's rms_norm_eps default; base and wrap: above. */
#define HLX_HF_PHI3 (HLX_HF_FUSED_QKV | HLX_HF_FUSED_GU)
#define HLX_HF_GLM  (HLX_HF_FUSED_GU | HLX_HF_ROPE_PAIRS)
#define HLX_HF_INTERNLM2 HLX_HF_QKV_GROUPED
typedef struct hlx_hf_arch_row {
    const char     *arch, *model_type;
    hlx_hf_base_t   base;
    hlx_hf_wrap_t   wrap;
    hlx_hf_family_t family;
    int             fused, qkv_bias, qk_norm, moe, post_norms;
    double          rotary, eps;
} hlx_hf_arch_row_t;
static const hlx_hf_arch_row_t hlx_hf_archs[] = {
    { "LlamaForCausalLM", "llama", HLX_HF_BASE_LLAMA, 0, HLX_HF_DENSE, 0, 0, 0, 0, 0, 0,
      1e-6 },
    { "MistralForCausalLM", "mistral", HLX_HF_BASE_MISTRAL, 0, HLX_HF_DENSE, 0, 0, 0, 0, 0, 0,
      1e-6 },
    { "Qwen2ForCausalLM", "qwen2", HLX_HF_BASE_QWEN2, 0, HLX_HF_DENSE, 0, 1, 0, 0, 0, 0,
      1e-6 },
    { "Qwen3ForCausalLM", "qwen3", HLX_HF_BASE_QWEN3, 0, HLX_HF_DENSE, 0, 0, 1, 0, 0, 0,
      1e-6 },
    { "Qwen2MoeForCausalLM", "qwen2_moe", HLX_HF_BASE_QWEN2_MOE, 0, HLX_HF_DENSE, 0, 1, 0,
      HLX_HF_MOE_QWEN2, 0, 0, 1e-6 },
    { "Qwen3MoeForCausalLM", "qwen3_moe", HLX_HF_BASE_QWEN3_MOE, 0, HLX_HF_DENSE, 0, 0, 1,
      HLX_HF_MOE_QWEN3, 0, 0, 1e-6 },
    { "MixtralForCausalLM", "mixtral", HLX_HF_BASE_MIXTRAL, 0, HLX_HF_DENSE, 0, 0, 0,
      HLX_HF_MOE_MIXTRAL, 0, 0, 1e-5 },
    /* DeepSeek-MoE (16B): Llama's attention, DeepSeek's MoE (softmax gate, shared experts,
     * the first layers dense) under the names DeepSeek-V2 and V3 keep */
    { "DeepseekForCausalLM", "deepseek", HLX_HF_BASE_DEEPSEEK, 0, HLX_HF_DENSE, 0, 0, 0,
      HLX_HF_MOE_DEEPSEEK, 0, 0, 1e-6 },
    /* gpt-oss (20b, 120b): GQA with biases on q, k, v and o and a sink logit per head,
     * windows on every other layer, a biased softmax router over fused experts (gate and
     * up interleaved) with biases and a clamped SwiGLU; q, k, v biases by attention_bias
     * (hlx_cfg_gpt_oss) */
    { "GptOssForCausalLM", "gpt_oss", HLX_HF_BASE_GPT_OSS, 0, HLX_HF_DENSE, 0, 0, 0,
      HLX_HF_MOE_GPT_OSS, 0, 0, 1e-5 },
    /* GLM-4.5, 4.5-Air, 4.6: rotate_half over the first half of each head (not GLM-4's
     * pairs) */
    { "Glm4MoeForCausalLM", "glm4_moe", HLX_HF_BASE_GLM4_MOE, 0, HLX_HF_DENSE, 0, 0, 0,
      HLX_HF_MOE_GLM4, 0, 0.5, 1e-5 },
    /* dots.llm1 (base, inst): Qwen3's attention (q/k head norms, whole heads rotated) with
     * DeepSeek-V3's MoE (GLM-4.5's gate on GQA: hlx_cfg_dots1) */
    { "Dots1ForCausalLM", "dots1", HLX_HF_BASE_DOTS1, 0, HLX_HF_DENSE, 0, 0, 1,
      HLX_HF_MOE_GLM4, 0, 0, 1e-6 },
    /* OLMo 2 (1124-7B, 13B, 0325-32B, 0425-1B): Llama's names without the input norms,
     * the attention's and the MLP's outputs normalised (post_attention_layernorm,
     * post_feedforward_layernorm), q_norm and k_norm over the whole projections
     * (hlx_cfg_olmo2) */
    { "Olmo2ForCausalLM", "olmo2", HLX_HF_BASE_OLMO2, 0, HLX_HF_DENSE, 0, 0, 0, 0, 1, 0,
      1e-5 },
    /* OLMo 3 (Olmo-3-1025-7B, -7B-Instruct, -7B-Think, 32B): OLMo 2's layer with windows on
     * the layers layer_types calls sliding_attention, those turning with rope_theta unscaled
     * (hlx_cfg_olmo3_window, hlx_cfg_olmo3_rope) */
    { "Olmo3ForCausalLM", "olmo3", HLX_HF_BASE_OLMO3, 0, HLX_HF_DENSE, 0, 0, 0, 0, 1, 0,
      1e-5 },
    /* StarCoder2 (3b, 7b, 15b): LayerNorms with biases (norm_epsilon), biases on q, k, v,
     * o_proj and the plain MLP (use_bias), mlp.c_fc -> gelu_pytorch_tanh -> mlp.c_proj, a
     * tied head by default, every layer windowed by sliding_window (hlx_cfg_starcoder2) */
    { "Starcoder2ForCausalLM", "starcoder2", HLX_HF_BASE_STARCODER2, 0, HLX_HF_DENSE, 0, 0, 0,
      0, 0, 0, 1e-5 },
    /* Llama 4 (Scout 17B-16E, Maverick 17B-128E): chunked attention on the layers that turn
     * by RoPE (complex pairs), NoPE layers over the whole context with a temperature on
     * their queries, an L2 norm of q and k heads on the RoPE layers, MoE layers (every
     * interleave_moe_layer_step-th) of a sigmoid top-k router whose score scales the
     * expert's input, beside a shared expert; the dense layers' MLP of
     * intermediate_size_mlp (hlx_cfg_llama4) */
    { "Llama4ForCausalLM", "llama4_text", HLX_HF_BASE_LLAMA4, 0, HLX_HF_DENSE, HLX_HF_LLAMA4,
      0, 0, HLX_HF_MOE_LLAMA4, 0, 0, 1e-5 },
    /* its text model under text_config, the tensors under language_model. (the vision model
     * and projector not read) */
    { "Llama4ForConditionalGeneration", "llama4", HLX_HF_BASE_LLAMA4, 0, HLX_HF_DENSE,
      HLX_HF_LLAMA4 | HLX_HF_NESTED, 0, 0, HLX_HF_MOE_LLAMA4, 0, 0, 1e-5 },
    { "Phi3ForCausalLM", "phi3", HLX_HF_BASE_PHI3, 0, HLX_HF_DENSE, HLX_HF_PHI3, 0, 0, 0, 0,
      1.0, 1e-5 },
    { "GlmForCausalLM", "glm", HLX_HF_BASE_GLM, 0, HLX_HF_DENSE, HLX_HF_GLM, 1, 0, 0, 0, 0.5,
      1.5625e-7 },
    { "Glm4ForCausalLM", "glm4", HLX_HF_BASE_GLM4, 0, HLX_HF_DENSE, HLX_HF_GLM, 1, 0, 0, 1,
      0.5, 1.5625e-7 },
    { "InternLM2ForCausalLM", "internlm2", HLX_HF_BASE_INTERNLM2, 0, HLX_HF_DENSE,
      HLX_HF_INTERNLM2, 0, 0, 0, 0, 0, 1e-6 },
    { "InternLM3ForCausalLM", "internlm3", HLX_HF_BASE_INTERNLM3, 0, HLX_HF_DENSE, 0, 0, 0, 0,
      0, 0, 1e-6 },
    { "GraniteForCausalLM", "granite", HLX_HF_BASE_GRANITE, 0, HLX_HF_DENSE, 0, 0, 0, 0, 0, 0,
      1e-6 },
    /* Granite 3.0 and 3.1 MoE (1b-a400m, 3b-a800m): Granite's layer and multipliers with
     * Mixtral's routing over experts stored fused, output-major (hlx_cfg_granitemoe,
     * hlx_hf_granite_views) */
    { "GraniteMoeForCausalLM", "granitemoe", HLX_HF_BASE_GRANITE_MOE, 0, HLX_HF_DENSE, 0, 0,
      0, HLX_HF_MOE_GRANITE, 0, 0, 1e-6 },
    /* Granite MoE Shared (ibm-research/moe-7b-1b-active-shared-experts): Granite MoE's layer
     * plus a shared MLP of shared_intermediate_size beside the routed experts, stored fused
     * (shared_mlp.input_linear, gate rows then up rows; hlx_hf_granite_views) */
    { "GraniteMoeSharedForCausalLM", "granitemoeshared", HLX_HF_BASE_GRANITE_MOE_SHARED, 0,
      HLX_HF_DENSE, 0, 0, 0, HLX_HF_MOE_GRANITE, 0, 0, 1e-6 },
    /* SmolLM3: Llama's layer with every no_rope_layer_interval-th layer unrotated (NoPE) */
    { "SmolLM3ForCausalLM", "smollm3", HLX_HF_BASE_SMOLLM3, 0, HLX_HF_DENSE, 0, 0, 0, 0, 0, 0,
      1e-6 },
    /* Seed-OSS (36B, 512K tokens): Llama's layer and names, q, k and v biases by
     * attention_bias (true when absent) */
    { "SeedOssForCausalLM", "seed_oss", HLX_HF_BASE_SEED_OSS, 0, HLX_HF_DENSE, 0, 0, 0, 0, 0,
      0, 1e-6 },
    /* Mistral Small 3.1's text model (Mistral's layer under text_config; the vision tower and
     * projector not read) */
    { "Mistral3ForConditionalGeneration", "mistral3", HLX_HF_BASE_MISTRAL, HLX_HF_WRAP_MISTRAL3,
      HLX_HF_DENSE, HLX_HF_NESTED, 0, 0, 0, 0, 0, 1e-6 },
    /* Qwen2-VL's and Qwen2.5-VL's text model (Qwen2's layer; the vision tower not read) */
    { "Qwen2VLForConditionalGeneration", "qwen2_vl", HLX_HF_BASE_QWEN2, HLX_HF_WRAP_QWEN2_VL,
      HLX_HF_DENSE, HLX_HF_NESTED, 1, 0, 0, 0, 0, 1e-5 },
    { "Qwen2_5_VLForConditionalGeneration", "qwen2_5_vl", HLX_HF_BASE_QWEN2,
      HLX_HF_WRAP_QWEN2_VL, HLX_HF_DENSE, HLX_HF_NESTED, 1, 0, 0, 0, 0, 1e-5 },
    /* Qwen3-VL's text model (Qwen3's layer, its q and k norms, under text_config and
     * model.language_model.; the vision tower and its deepstack mergers not read) */
    { "Qwen3VLForConditionalGeneration", "qwen3_vl", HLX_HF_BASE_QWEN3, HLX_HF_WRAP_QWEN3_VL,
      HLX_HF_DENSE, HLX_HF_NESTED, 0, 1, 0, 0, 0, 1e-6 },
    /* Qwen3-VL-MoE's (30B-A3B, 235B-A22B): Qwen3-MoE's layer, its routed experts stored fused
     * in 3-D tensors and read through views of them (hlx_hf_expert_views) */
    { "Qwen3VLMoeForConditionalGeneration", "qwen3_vl_moe", HLX_HF_BASE_QWEN3_MOE,
      HLX_HF_WRAP_QWEN3_VL, HLX_HF_DENSE, HLX_HF_NESTED, 0, 1, HLX_HF_MOE_QWEN3, 0, 0, 1e-6 },
    /* LLaVA 1.5, LLaVA-NeXT and LLaVA-OneVision: the text model text_config names (Llama's,
     * Mistral's or Qwen2's layer: hlx_cfg_text_model_type), the vision tower and projector
     * not read */
    { "LlavaForConditionalGeneration", "llava", HLX_HF_BASE_TEXT, HLX_HF_WRAP_LLAVA,
      HLX_HF_DENSE, HLX_HF_NESTED, 0, 0, 0, 0, 0, 1e-6 },
    { "LlavaNextForConditionalGeneration", "llava_next", HLX_HF_BASE_TEXT, HLX_HF_WRAP_LLAVA,
      HLX_HF_DENSE, HLX_HF_NESTED, 0, 0, 0, 0, 0, 1e-6 },
    { "LlavaOnevisionForConditionalGeneration", "llava_onevision", HLX_HF_BASE_TEXT,
      HLX_HF_WRAP_LLAVA_QWEN2, HLX_HF_DENSE, HLX_HF_NESTED, 0, 0, 0, 0, 0, 1e-6 },
    /* InternVL 3 and 3.5 in transformers' own form (Qwen2's or Qwen3's text model, also
     * Llama's), read as the LLaVA ones */
    { "InternVLForConditionalGeneration", "internvl", HLX_HF_BASE_TEXT, HLX_HF_WRAP_LLAVA_QWEN2,
      HLX_HF_DENSE, HLX_HF_NESTED, 0, 0, 0, 0, 0, 1e-6 },
    /* Idefics3 and SmolVLM (v1 in Idefics3's class, SmolVLM2 in its own): Llama's text model
     * under text_config, read as the LLaVA ones; 1e-6: LlamaConfig's, a text_config without
     * the key (without any text_config: 1e-5, hlx_cfg_text_absent) */
    { "Idefics3ForConditionalGeneration", "idefics3", HLX_HF_BASE_TEXT, HLX_HF_WRAP_IDEFICS3,
      HLX_HF_DENSE, HLX_HF_NESTED, 0, 0, 0, 0, 0, 1e-6 },
    { "SmolVLMForConditionalGeneration", "smolvlm", HLX_HF_BASE_TEXT, HLX_HF_WRAP_IDEFICS3,
      HLX_HF_DENSE, HLX_HF_NESTED, 0, 0, 0, 0, 0, 1e-6 },
    /* Gemma (1, 1.1, CodeGemma): Gemma's norms, GeGLU and scaled embedding on Llama's layer
     * (post_attention_layernorm the FFN's input norm, as Llama's), no window, no capping */
    { "GemmaForCausalLM", "gemma", HLX_HF_BASE_GEMMA, 0, HLX_HF_DENSE, HLX_HF_GEMMA, 0, 0, 0,
      0, 0, 1e-6 },
    { "Gemma2ForCausalLM", "gemma2", HLX_HF_BASE_GEMMA2, 0, HLX_HF_DENSE, HLX_HF_GEMMA, 0, 0,
      0, 1, 0, 1e-6 },
    { "Gemma3ForCausalLM", "gemma3_text", HLX_HF_BASE_GEMMA3, 0, HLX_HF_DENSE, HLX_HF_GEMMA,
      0, 1, 0, 1, 0, 1e-6 },
    { "Gemma3ForConditionalGeneration", "gemma3", HLX_HF_BASE_GEMMA3, 0, HLX_HF_DENSE,
      HLX_HF_GEMMA | HLX_HF_NESTED, 0, 1, 0, 1, 0, 1e-6 },
    { "DeepseekV3ForCausalLM", "deepseek_v3", HLX_HF_BASE_DEEPSEEK_V3, 0, HLX_HF_MOE_MLA, 0, 0,
      0, 0, 0, 0, 1e-6 },
    { "DeepseekV2ForCausalLM", "deepseek_v2", HLX_HF_BASE_DEEPSEEK_V2, 0, HLX_HF_MOE_MLA, 0, 0,
      0, 0, 0, 0, 1e-6 },
};
#define HLX_HF_NARCHS (sizeof(hlx_hf_archs) / sizeof(hlx_hf_archs[0]))

/* The text classes a LLaVA or InternVL checkpoint may hold (Idefics3 and SmolVLM: the first
 * alone, hlx_cfg_text_model_type), with their base and the defaults of the keys a
 * text_config may leave out (llava-1.5-7b-hf's gives little more than its vocabulary):
 * LlamaConfig's, MistralConfig's, Qwen2Config's, Qwen3Config's (its q and k norms). */
static const struct hlx_hf_text_class {
    const char   *model_type;
    hlx_hf_base_t base;
    int           qkv_bias, qk_norm, layers, hidden, heads, ffn, vocab;
} hlx_hf_text_classes[] = {
    { "llama", HLX_HF_BASE_LLAMA, 0, 0, 32, 4096, 32, 11008, 32000 },
    { "mistral", HLX_HF_BASE_MISTRAL, 0, 0, 32, 4096, 32, 14336, 32000 },
    { "qwen2", HLX_HF_BASE_QWEN2, 1, 0, 32, 4096, 32, 22016, 151936 },
    { "qwen3", HLX_HF_BASE_QWEN3, 0, 1, 32, 4096, 32, 22016, 151936 },
};
#define HLX_HF_NTEXT (sizeof(hlx_hf_text_classes) / sizeof(hlx_hf_text_classes[0]))

/* Qwen3-VL's text model, of one class: Qwen3VLTextConfig's defaults (Qwen3Config's numbers;
 * its head_dim 128, 32 KV heads and rope_theta 5e6: hlx_cfg_dense, hlx_hf_config_load) */
static const struct hlx_hf_text_class hlx_hf_qwen3_vl_text = {
    "qwen3_vl_text", HLX_HF_BASE_QWEN3, 0, 1, 32, 4096, 32, 22016, 151936
};
/* Qwen3-VL-MoE's: Qwen3VLMoeTextConfig's defaults (4.57: 24 layers of 2048, 16 query and 16
 * KV heads of hidden_size / heads, FFN 5632, rope_theta 5e6, norm_topk_prob true; the expert
 * keys required, as Qwen3-MoE's) */
static const struct hlx_hf_text_class hlx_hf_qwen3_vl_moe_text = {
    "qwen3_vl_moe_text", HLX_HF_BASE_QWEN3_MOE, 0, 1, 24, 2048, 16, 5632, 151936
};

/* Llama 4's text model: Llama4TextConfig's defaults (Scout's shapes: 48 layers of 5120, 40
 * query heads, experts of 8192, a vocabulary of 202048; the rest in hlx_cfg_llama4) */
static const struct hlx_hf_text_class hlx_hf_llama4_text = {
    "llama4_text", HLX_HF_BASE_LLAMA4, 0, 0, 48, 5120, 40, 8192, 202048
};

size_t hlx_hf_arch_count(void)
{
    return HLX_HF_NARCHS;
}

const char *hlx_hf_arch(size_t i, const char **model_type_p, int *nested_p)
{
    if (i >= HLX_HF_NARCHS)
        return NULL;
    *model_type_p = hlx_hf_archs[i].model_type;
    *nested_p = !!(hlx_hf_archs[i].fused & HLX_HF_NESTED);
    return hlx_hf_archs[i].arch;
}

const char *hlx_hf_arch_base(size_t i)
{
    return i < HLX_HF_NARCHS ? hlx_hf_base_names[hlx_hf_archs[i].base] : NULL;
}

const char *hlx_hf_arch_text_base(size_t i, size_t k)
{
    if (i >= HLX_HF_NARCHS || hlx_hf_archs[i].base != HLX_HF_BASE_TEXT ||
        k >= (hlx_hf_archs[i].wrap == HLX_HF_WRAP_IDEFICS3 ? 1 : HLX_HF_NTEXT))
        return NULL;
    return hlx_hf_base_names[hlx_hf_text_classes[k].base];
}

/* arch's row of hlx_hf_archs; a row of no base, no wrap and no model_type for a class
 * outside it (a config.json's class is one of the table's: hlx_cfg_family) */
static const hlx_hf_arch_row_t *hlx_hf_row(const char *arch)
{
    static const hlx_hf_arch_row_t none = { NULL, NULL, HLX_HF_BASE_NONE, HLX_HF_WRAP_NONE,
                                            HLX_HF_DENSE, 0, 0, 0, 0, 0, 0, 0 };
    size_t i;

    for (i = 0; i < HLX_HF_NARCHS; i++)
        if (!strcmp(arch, hlx_hf_archs[i].arch))
            return &hlx_hf_archs[i];
    return &none;
}

static hlx_hf_wrap_t hlx_hf_wrap(const hlx_hf_config_t *c)
{
    return hlx_hf_row(c->arch)->wrap;
}

/* Qwen3-VL, dense or MoE (its text model: Qwen3's layer, interleaved multimodal RoPE; vLLM
 * maps its tensors from model.language_model. alone and ties its head by text_config's key
 * alone) */
static int hlx_hf_qwen3_vl(const hlx_hf_config_t *c)
{
    return hlx_hf_wrap(c) == HLX_HF_WRAP_QWEN3_VL;
}

/* Qwen3-VL-MoE: Qwen3-VL's text model with Qwen3-MoE's layer, its experts fused */
static int hlx_hf_qwen3_vl_moe(const hlx_hf_config_t *c)
{
    return hlx_hf_qwen3_vl(c) && hlx_hf_row(c->arch)->base == HLX_HF_BASE_QWEN3_MOE;
}

/* c's text class (a LLaVA, Qwen3-VL or Llama 4 checkpoint's), or NULL */
static const struct hlx_hf_text_class *hlx_hf_text_class(const hlx_hf_config_t *c)
{
    size_t i;

    if (hlx_hf_qwen3_vl(c))
        return hlx_hf_qwen3_vl_moe(c) ? &hlx_hf_qwen3_vl_moe_text : &hlx_hf_qwen3_vl_text;
    if (hlx_hf_row(c->arch)->base == HLX_HF_BASE_LLAMA4)
        return &hlx_hf_llama4_text;
    for (i = 0; c->text_type[0] && i < HLX_HF_NTEXT; i++)
        if (!strcmp(c->text_type, hlx_hf_text_classes[i].model_type))
            return &hlx_hf_text_classes[i];
    return NULL;
}

/* The layer family c's text model is built as: its row's base, or for a LLaVA-style class
 * the base of the text class text_config named (c->text_type; HLX_HF_BASE_TEXT until
 * hlx_cfg_text_model_type has read it) */
static hlx_hf_base_t hlx_hf_base(const hlx_hf_config_t *c)
{
    hlx_hf_base_t b = hlx_hf_row(c->arch)->base;

    if (b == HLX_HF_BASE_TEXT && hlx_hf_text_class(c) != NULL)
        return hlx_hf_text_class(c)->base;
    return b;
}

int hlx_hf_gemma2(const hlx_hf_config_t *c)
{
    return hlx_hf_base(c) == HLX_HF_BASE_GEMMA2;
}

/* GemmaForCausalLM (Gemma 1): GemmaConfig's keys, Llama's norm names */
static int hlx_hf_gemma1(const hlx_hf_config_t *c)
{
    return hlx_hf_base(c) == HLX_HF_BASE_GEMMA;
}

int hlx_hf_granite(const hlx_hf_config_t *c)
{
    return hlx_hf_base(c) == HLX_HF_BASE_GRANITE || hlx_hf_base(c) == HLX_HF_BASE_GRANITE_MOE ||
           hlx_hf_base(c) == HLX_HF_BASE_GRANITE_MOE_SHARED;
}

int hlx_hf_granite_shared(const hlx_hf_config_t *c)
{
    return hlx_hf_base(c) == HLX_HF_BASE_GRANITE_MOE_SHARED;
}

int hlx_hf_olmo2(const hlx_hf_config_t *c)
{
    return hlx_hf_base(c) == HLX_HF_BASE_OLMO2 || hlx_hf_base(c) == HLX_HF_BASE_OLMO3;
}

int hlx_hf_olmo3(const hlx_hf_config_t *c)
{
    return hlx_hf_base(c) == HLX_HF_BASE_OLMO3;
}

int hlx_hf_starcoder2(const hlx_hf_config_t *c)
{
    return hlx_hf_base(c) == HLX_HF_BASE_STARCODER2;
}

/* Mistral's layer and MistralConfig's defaults: MistralForCausalLM, or Mistral3's or a
 * LLaVA checkpoint's Mistral text model */
static int hlx_hf_mistral(const hlx_hf_config_t *c)
{
    return hlx_hf_base(c) == HLX_HF_BASE_MISTRAL;
}

/* Idefics3 or SmolVLM: vLLM builds their text model as Llama's whatever text_config names,
 * and ties its head by text_config's tie_word_embeddings alone */
static int hlx_hf_idefics3(const hlx_hf_config_t *c)
{
    return hlx_hf_wrap(c) == HLX_HF_WRAP_IDEFICS3;
}

/* A LLaVA, InternVL, Idefics3 or SmolVLM checkpoint (its text model under text_config, of
 * the class its model_type names: hlx_cfg_text_model_type) */
static int hlx_hf_llava(const hlx_hf_config_t *c)
{
    return hlx_hf_row(c->arch)->base == HLX_HF_BASE_TEXT;
}

/* Qwen2-VL or Qwen2.5-VL (their text model: Qwen2's layer, multimodal RoPE) */
static int hlx_hf_qwen_vl(const hlx_hf_config_t *c)
{
    return hlx_hf_wrap(c) == HLX_HF_WRAP_QWEN2_VL;
}

static const char *hlx_hf_model_type(const char *arch)
{
    return hlx_hf_row(arch)->model_type;
}


static hlx_status_t hlx_cfg_family(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    json_t *root = hlx_jdoc_root(doc), *a = json_object_get(root, "architectures");
    const char *mt = json_string_value(json_object_get(root, "model_type"));
    size_t i;

    if (a != NULL && (!json_is_array(a) || json_array_size(a) != 1 ||
                      !json_is_string(json_array_get(a, 0))))
        return hlx_jdoc_fail(doc, "/architectures", HLX_ERR_PARSE, "expected one class name");
    for (i = 0; i < HLX_HF_NARCHS; i++) {
        if (a != NULL ? !strcmp(json_string_value(json_array_get(a, 0)), hlx_hf_archs[i].arch)
                      : mt != NULL && !strcmp(mt, hlx_hf_archs[i].model_type)) {
            c->family = hlx_hf_archs[i].family;
            c->fused = hlx_hf_archs[i].fused;
            c->m.qkv_bias = hlx_hf_archs[i].qkv_bias;
            c->m.qk_norm = hlx_hf_archs[i].qk_norm;
            c->m.post_norms = hlx_hf_archs[i].post_norms;
            c->moe_gqa = hlx_hf_archs[i].moe;
            snprintf(c->arch, sizeof(c->arch), "%s", hlx_hf_archs[i].arch);
            return HLX_OK;
        }
    }
    if (a == NULL && mt == NULL && json_is_string(json_object_get(root, "attn")) &&
        json_object_get(root, "q_heads") != NULL) /* `model info --json`'s model member */
        return hlx_jdoc_fail(doc, "/attn", HLX_ERR_PARSE, "this is a Helix model file (its "
                             "attn and q_heads keys), not a Hugging Face config.json: give "
                             "the file itself as --model, or the checkpoint's own config.json "
                             "beside its safetensors");
    if (a == NULL)
        return hlx_jdoc_fail(doc, "/architectures", HLX_ERR_PARSE,
                             "missing, and model_type %s%.64s%s is not one of the %zu that "
                             "`helix model archs` lists beside their classes (docs/model.md)",
                             mt ? "\"" : "(none)", mt ? mt : "", mt ? "\"" : "",
                             (size_t)HLX_HF_NARCHS);
    return hlx_jdoc_fail(doc, "/architectures/0", HLX_ERR_PARSE,
                         "%.64s is not supported: `helix model archs` lists the %zu classes "
                         "read (docs/model.md)", json_string_value(json_array_get(a, 0)),
                         (size_t)HLX_HF_NARCHS);
}

/* Where the RoPE parameters r were read from, for error paths: transformers v5's
 * rope_parameters, one of its per-layer-type sets, or the older rope_scaling. */
static const char *hlx_rs_base(hlx_jdoc_t *doc, const json_t *r)
{
    json_t *rp = json_object_get(hlx_jdoc_root(doc), "rope_parameters");

    if (r == rp)
        return "/rope_parameters";
    if (json_is_object(rp) && r == json_object_get(rp, "full_attention"))
        return "/rope_parameters/full_attention";
    if (json_is_object(rp) && r == json_object_get(rp, "sliding_attention"))
        return "/rope_parameters/sliding_attention";
    return "/rope_scaling";
}

/* The RoPE parameters r named in a message: "rope_parameters", "rope_parameters'
 * full_attention set" (or sliding_attention's) or "rope_scaling". */
static const char *hlx_rs_what(hlx_jdoc_t *doc, const json_t *r)
{
    const char *b = hlx_rs_base(doc, r);

    if (!strcmp(b, "/rope_parameters/full_attention"))
        return "rope_parameters' full_attention set";
    if (!strcmp(b, "/rope_parameters/sliding_attention"))
        return "rope_parameters' sliding_attention set";
    return b + 1;
}

/* Whether r is one of v5's sets, which hold the base rope_theta and the rotated share
 * partial_rotary_factor beside the kind (rope_scaling holds neither). */
static int hlx_rs_v5(hlx_jdoc_t *doc, const json_t *r)
{
    return strcmp(hlx_rs_base(doc, r), "/rope_scaling") != 0;
}

/* transformers v5's rope_parameters per layer type (standardize_rope_params' nested form,
 * {"full_attention": {...}, "sliding_attention": {...}}: some member is an object): *full_p
 * and *slide_p the two sets, *slide_p NULL where absent; both NULL where rope_parameters is
 * one set, null or absent. Refused: a member that names no layer type or is not an object,
 * and a missing full_attention set (the base and scaling of the whole-context layers, read
 * as one flat set is: hlx_cfg_rope_params). What each class makes of the sets:
 * hlx_cfg_rope_per_type. */
static hlx_status_t hlx_cfg_rope_types(hlx_jdoc_t *doc, json_t **full_p, json_t **slide_p)
{
    static const char *const types[] = { "full_attention", "sliding_attention" };
    json_t *rp = json_object_get(hlx_jdoc_root(doc), "rope_parameters"), *v;
    const char *key, *near;
    char path[160];
    int nested = 0;

    *full_p = *slide_p = NULL;
    if (!json_is_object(rp))
        return HLX_OK;
    json_object_foreach(rp, key, v)
        nested |= json_is_object(v);
    if (!nested)
        return HLX_OK;
    json_object_foreach(rp, key, v) {
        snprintf(path, sizeof(path), "/rope_parameters/%.120s", key);
        if (!json_is_object(v))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "%s beside per-layer-type sets: "
                                 "rope_parameters is either one set (rope_type, rope_theta, "
                                 "...) or one object per layer type (full_attention, "
                                 "sliding_attention); move it into the sets",
                                 strcmp(key, types[0]) && strcmp(key, types[1])
                                     ? "not read" : "expected an object,");
        if (strcmp(key, types[0]) && strcmp(key, types[1])) {
            near = hlx_nearest_name(key, types, 2);
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "not a layer type%s%s%s: the sets "
                                 "per layer type are full_attention and sliding_attention",
                                 near ? " (did you mean \"" : "", near ? near : "",
                                 near ? "\"?)" : "");
        }
    }
    *full_p = json_object_get(rp, types[0]);
    *slide_p = json_object_get(rp, types[1]);
    if (*full_p == NULL)
        return hlx_jdoc_fail(doc, "/rope_parameters", HLX_ERR_PARSE, "per-layer-type sets "
                             "without \"full_attention\": give the whole-context layers' set "
                             "(rope_type, rope_theta and the scaling's keys; transformers v5 "
                             "writes both types' sets)");
    return HLX_OK;
}

/* The RoPE set of the whole-context layers: rope_parameters, or its full_attention set in
 * the per-layer-type form (NULL: neither; the form checked by hlx_cfg_rope_types). */
static json_t *hlx_rope_global(hlx_jdoc_t *doc)
{
    json_t *rp = json_object_get(hlx_jdoc_root(doc), "rope_parameters"), *v;
    const char *key;

    if (!json_is_object(rp))
        return NULL;
    json_object_foreach(rp, key, v)
        if (json_is_object(v))
            return json_object_get(rp, "full_attention");
    return rp;
}

/* One number of the RoPE parameters r (path /rope_scaling/key or /rope_parameters/key). */
static hlx_status_t hlx_cfg_rs_num(hlx_jdoc_t *doc, json_t *r, const char *key, int required,
                                   double def, double min, double max, double *out)
{
    json_t *v = json_object_get(r, key);
    char path[96];

    snprintf(path, sizeof(path), "%s/%s", hlx_rs_base(doc, r), key);
    if (v == NULL || json_is_null(v)) {
        if (required)
            return hlx_jdoc_fail(doc, hlx_rs_base(doc, r), HLX_ERR_PARSE,
                                 "required key \"%s\" is missing", key);
        *out = def;
        return HLX_OK;
    }
    return hlx_cfg_number_at(doc, v, path, min, max, out);
}

/* The original_max_position_embeddings of the RoPE parameters r: a whole number of
 * positions in [1, 100000000] (*out 0 when absent and not required). A fraction is refused:
 * transformers and vLLM would take 4096.5 as given where the runtime keeps an integer. */
static hlx_status_t hlx_cfg_rs_orig(hlx_jdoc_t *doc, json_t *r, int required, double *out)
{
    char path[96];
    hlx_status_t st;

    HLX_TRY(hlx_cfg_rs_num(doc, r, "original_max_position_embeddings", required, 0, 1, 1e8,
                           out));
    snprintf(path, sizeof(path), "%s/original_max_position_embeddings", hlx_rs_base(doc, r));
    if (*out != floor(*out))
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "%g is not a whole number of positions",
                             *out);
    return HLX_OK;
}

/* The keys of a rope_scaling object and the kinds that take each (bit HLX_ROPE_*; bit 0
 * is "default", which takes none): Hugging Face's parameters of linear, llama3, yarn
 * (transformers' and DeepSeek's, with the attention_factor and truncate that transformers
 * and vLLM read: hlx_cfg_yarn) and longrope. */
#define HLX_RS_LR (1u << HLX_ROPE_LONGROPE)
static const struct {
    const char *key;
    unsigned    kinds;
} hlx_rs_keys[] = {
    { "rope_type", 0x3f },
    { "type", 0x3f },
    { "factor", 1u << HLX_ROPE_LINEAR | 1u << HLX_ROPE_LLAMA3 | 1u << HLX_ROPE_YARN | HLX_RS_LR |
                1u << HLX_ROPE_DYNAMIC },
    { "original_max_position_embeddings",
      1u << HLX_ROPE_LLAMA3 | 1u << HLX_ROPE_YARN | HLX_RS_LR },
    { "low_freq_factor", 1u << HLX_ROPE_LLAMA3 },
    { "high_freq_factor", 1u << HLX_ROPE_LLAMA3 },
    { "beta_fast", 1u << HLX_ROPE_YARN },
    { "beta_slow", 1u << HLX_ROPE_YARN },
    { "mscale", 1u << HLX_ROPE_YARN },
    { "mscale_all_dim", 1u << HLX_ROPE_YARN },
    { "short_factor", HLX_RS_LR },
    { "long_factor", HLX_RS_LR },
    { "attention_factor", 1u << HLX_ROPE_YARN | HLX_RS_LR },
    { "truncate", 1u << HLX_ROPE_YARN },
};
#define HLX_RS_NKEYS (sizeof(hlx_rs_keys) / sizeof(hlx_rs_keys[0]))

/* Every key of r is a parameter of kind (name kname): an unknown key, or one of another
 * kind, would be ignored and the model rotated other than its config says. mrope: the
 * multimodal RoPE's keys are read beside (yarn's, hlx_cfg_mrope_sections). */
static hlx_status_t hlx_cfg_rs_keys(hlx_jdoc_t *doc, json_t *r, hlx_rope_kind_t kind,
                                    const char *kname, int mrope)
{
    const char *names[HLX_RS_NKEYS], *key, *near;
    char path[160], takes[256];
    size_t i, used = 0;
    json_t *v;

    takes[0] = '\0';
    for (i = 0; i < HLX_RS_NKEYS; i++) {
        names[i] = hlx_rs_keys[i].key;
        if (i >= 2 && (hlx_rs_keys[i].kinds >> kind & 1u) && used < sizeof(takes))
            used += (size_t)snprintf(takes + used, sizeof(takes) - used, "%s%s",
                                     used ? ", " : "", hlx_rs_keys[i].key);
    }
    json_object_foreach(r, key, v) {
        /* rope_parameters (transformers v5) also holds the base and the rotated share,
         * read with the model's shapes (hlx_cfg_rope_params, hlx_cfg_rotary_factor) */
        if (hlx_rs_v5(doc, r) &&
            (!strcmp(key, "rope_theta") || !strcmp(key, "partial_rotary_factor")))
            continue;
        if (mrope && (!strcmp(key, "mrope_section") || !strcmp(key, "mrope_interleaved")))
            continue;
        for (i = 0; i < HLX_RS_NKEYS && strcmp(key, hlx_rs_keys[i].key); i++)
            ;
        if (i < HLX_RS_NKEYS && (hlx_rs_keys[i].kinds >> kind & 1u))
            continue;
        snprintf(path, sizeof(path), "%s/%.120s", hlx_rs_base(doc, r), key);
        if (i < HLX_RS_NKEYS)
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                                 "not a parameter of %s \"%s\" (it takes %s)",
                                 hlx_rs_base(doc, r) + 1, kname,
                                 takes[0] ? takes : "none");
        near = hlx_nearest_name(key, names, HLX_RS_NKEYS);
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                             "unknown key%s%s%s; %s \"%s\" takes %s",
                             near ? " (did you mean \"" : "", near ? near : "",
                             near ? "\"?)" : "", hlx_rs_base(doc, r) + 1, kname,
                             takes[0] ? takes : "none");
    }
    return HLX_OK;
}

/* longrope's short_factor or long_factor: rope_dim / 2 positive, finite numbers into out. */
static hlx_status_t hlx_cfg_rs_factors(hlx_jdoc_t *doc, json_t *r, const char *key, int pairs,
                                       double *out)
{
    json_t *a = json_object_get(r, key), *v;
    char path[96];
    size_t i;

    snprintf(path, sizeof(path), "%s/%s", hlx_rs_base(doc, r), key);
    if (a == NULL || json_is_null(a))
        return hlx_jdoc_fail(doc, hlx_rs_base(doc, r), HLX_ERR_PARSE, "required key \"%s\" is "
                             "missing (longrope: %d factors, one per rotated pair)", key, pairs);
    if (!json_is_array(a))
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected an array of %d numbers (one "
                             "per rotated pair: rope_dim %d / 2)", pairs, 2 * pairs);
    if (json_array_size(a) != (size_t)pairs)
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "%zu factors, expected %d (one per "
                             "rotated pair: rope_dim %d / 2)", json_array_size(a), pairs,
                             2 * pairs);
    json_array_foreach(a, i, v) {
        if (!json_is_number(v))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "element %zu is not a number", i);
        if (!isfinite(json_number_value(v)) || !(json_number_value(v) > 0))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "element %zu is %g: every factor "
                                 "must be a positive, finite number", i, json_number_value(v));
        out[i] = json_number_value(v);
    }
    return HLX_OK;
}

/* longrope (Phi-3): transformers' _compute_longrope_parameters. The original context is
 * config.json's top-level original_max_position_embeddings, else rope_scaling's; with the
 * top-level key the factor is max_position_embeddings / original (rope_scaling's "factor"
 * is then not used), else rope_scaling's factor (1 when absent); attention_factor defaults
 * to sqrt(1 + ln factor / ln original), and to 1 when factor <= 1 (a factor below 1 is
 * read as transformers and vLLM read it: the attention factor 1, the sets as given). Which
 * set rotates is chosen per run (hlx_model_rope_select). */
static hlx_status_t hlx_cfg_longrope(hlx_jdoc_t *doc, json_t *r, hlx_model_t *m)
{
    json_t *root = hlx_jdoc_root(doc);
    json_t *top = json_object_get(root, "original_max_position_embeddings");
    const int pairs = m->rope_dim / 2;
    double orig = 0, factor = 1, unused;
    char path[96];
    hlx_status_t st;
    int maxpos = 0, o = 0;

    if (pairs > HLX_ROPE_MAX_PAIRS)
        return hlx_jdoc_fail(doc, hlx_rs_base(doc, r), HLX_ERR_PARSE, "longrope with rope_dim %d: "
                             "at most %d rotated pairs are taken", m->rope_dim,
                             HLX_ROPE_MAX_PAIRS);
    if ((st = hlx_cfg_rs_factors(doc, r, "short_factor", pairs, m->rope_short_factor)) ||
        (st = hlx_cfg_rs_factors(doc, r, "long_factor", pairs, m->rope_long_factor)))
        return st;
    /* read for its type even where the top-level key makes it unused */
    if ((st = hlx_cfg_rs_num(doc, r, "factor", 0, 1.0, 1e-6, 1e6, &factor)) != HLX_OK)
        return st;
    if (top != NULL && !json_is_null(top)) {
        if ((st = hlx_cfg_int(doc, "original_max_position_embeddings", 1, 0, 1, &o)) ||
            (st = hlx_cfg_rs_orig(doc, r, 0, &unused))) /* rope_scaling's: read, not used */
            return st;
        if ((st = hlx_cfg_max_pos(doc, &maxpos)) != HLX_OK)
            return st;
        if (maxpos == 0)
            return hlx_jdoc_fail(doc, "/max_position_embeddings", HLX_ERR_PARSE,
                                 "required key is missing (longrope with a top-level "
                                 "original_max_position_embeddings: the factor is "
                                 "max_position_embeddings / original_max_position_embeddings)");
        orig = o;
        factor = (double)maxpos / orig;
        snprintf(path, sizeof(path), "/original_max_position_embeddings");
    } else {
        if (json_object_get(r, "original_max_position_embeddings") == NULL ||
            json_is_null(json_object_get(r, "original_max_position_embeddings")))
            return hlx_jdoc_fail(doc, hlx_rs_base(doc, r), HLX_ERR_PARSE,
                                 "longrope needs original_max_position_embeddings, at the top "
                                 "level of config.json (Phi-3) or in %s; neither has it",
                                 hlx_rs_base(doc, r) + 1);
        if ((st = hlx_cfg_rs_orig(doc, r, 1, &orig)) != HLX_OK)
            return st;
        snprintf(path, sizeof(path), "%s/original_max_position_embeddings",
                 hlx_rs_base(doc, r));
    }
    m->rope_orig_ctx = (int)orig;
    m->rope_factor = factor;
    /* attention_factor: given, or from the factor as the LongRoPE paper suggests */
    if ((st = hlx_cfg_rs_num(doc, r, "attention_factor", 0, 0.0, 1e-6, 1e6,
                             &m->rope_attn_factor)) != HLX_OK)
        return st;
    if (m->rope_attn_factor == 0.0 && factor > 1.0 && orig < 2) /* ln 1 = 0 below */
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "1 with the factor %g: longrope's "
                             "attention factor sqrt(1 + ln factor / ln original) divides by "
                             "ln 1 = 0 (transformers and vLLM fail on it); give an original "
                             "context of at least 2 or %s's attention_factor", factor,
                             hlx_rs_base(doc, r) + 1);
    if (m->rope_attn_factor == 0.0)
        m->rope_attn_factor = factor <= 1.0 ? 1.0 : sqrt(1.0 + log(factor) / log(orig));
    m->rope_long = 0; /* until a run chooses */
    return HLX_OK;
}

/* partial_rotary_factor: the top-level key, or transformers v5's in rope_parameters (its
 * full_attention set in the per-layer-type form; the two must agree when both are there);
 * def when neither is. *path: where it was read. */
static hlx_status_t hlx_cfg_rotary_factor(hlx_jdoc_t *doc, double def, double *f,
                                          const char **path)
{
    json_t *root = hlx_jdoc_root(doc), *g, *v, *unused;
    double top;
    hlx_status_t st;

    HLX_TRY(hlx_cfg_rope_types(doc, &g, &unused));
    g = hlx_rope_global(doc);
    v = json_object_get(g, "partial_rotary_factor");
    HLX_TRY(hlx_cfg_num(doc, "partial_rotary_factor", def, 1e-6, 1.0, &top));
    *f = top;
    *path = "/partial_rotary_factor";
    if (v == NULL || json_is_null(v))
        return HLX_OK;
    *path = g == json_object_get(root, "rope_parameters")
                ? "/rope_parameters/partial_rotary_factor"
                : "/rope_parameters/full_attention/partial_rotary_factor";
    HLX_TRY(hlx_cfg_number_at(doc, v, *path, 1e-6, 1.0, f));
    if (json_object_get(root, "partial_rotary_factor") != NULL &&
        !json_is_null(json_object_get(root, "partial_rotary_factor")) && *f != top)
        return hlx_jdoc_fail(doc, "/partial_rotary_factor", HLX_ERR_PARSE, "%g contradicts "
                             "rope_parameters' partial_rotary_factor %g: remove one", top, *f);
    return HLX_OK;
}

/* Two JSON values that say the same: numbers by value (8 and 8.0), the rest as jansson
 * compares them. */
static int hlx_json_same(json_t *a, json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal(a, b);
}

/* transformers v5's rope_parameters: the kind and its parameters (read by the caller as
 * rope_scaling's), the base rope_theta and the rotated share partial_rotary_factor (read by
 * hlx_cfg_rotary_factor), in place of the top-level rope_theta and rope_scaling of older
 * configs. In the per-layer-type form ({"full_attention": {...}, "sliding_attention":
 * {...}}) the full_attention set is the one read so, as v5's Gemma 3 merges a legacy
 * rope_scaling into it (what the sliding layers take: hlx_cfg_rope_per_type). Where a config
 * carries both forms they must agree, key by key. *g_p: the set read (NULL: none). */
static hlx_status_t hlx_cfg_rope_params(hlx_jdoc_t *doc, json_t *rp, json_t *rs, hlx_model_t *m,
                                        json_t **g_p)
{
    json_t *root = hlx_jdoc_root(doc), *v, *theta = json_object_get(root, "rope_theta"), *g;
    const char *key;
    char path[160];
    double t;
    hlx_status_t st;

    *g_p = NULL;
    if (!json_is_object(rp))
        return hlx_jdoc_fail(doc, "/rope_parameters", HLX_ERR_PARSE,
                             "expected an object or null");
    HLX_TRY(hlx_cfg_rope_types(doc, &g, &v));
    g = hlx_rope_global(doc);
    *g_p = g;
    snprintf(path, sizeof(path), "%s/rope_theta", hlx_rs_base(doc, g));
    if ((v = json_object_get(g, "rope_theta")) != NULL && !json_is_null(v)) {
        HLX_TRY(hlx_cfg_number_at(doc, v, path, 1e-9, 1e12, &t));
        if (theta != NULL && !json_is_null(theta) && !hlx_json_same(theta, v))
            return hlx_jdoc_fail(doc, "/rope_theta", HLX_ERR_PARSE, "%g contradicts "
                                 "rope_parameters' %srope_theta %g (transformers v5 reads the "
                                 "latter): remove one", json_number_value(theta),
                                 g == rp ? "" : "full_attention ", t);
        m->rope_theta = t;
    }
    if (rs == NULL || json_is_null(rs))
        return HLX_OK;
    if (!json_is_object(rs))
        return hlx_jdoc_fail(doc, "/rope_scaling", HLX_ERR_PARSE, "expected an object or null");
    json_object_foreach(rs, key, v) {
        json_t *w = json_object_get(g, strcmp(key, "type") ? key : "rope_type");
        if (w == NULL && !strcmp(key, "type"))
            w = json_object_get(g, "type");
        if (w != NULL && hlx_json_same(v, w))
            continue;
        snprintf(path, sizeof(path), "/rope_scaling/%.120s", key);
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "%s %s (transformers v5 "
                             "takes rope_scaling where both are given, older versions read "
                             "rope_scaling alone, v5's own files rope_parameters alone: remove "
                             "one, or make the two agree)",
                             w == NULL ? "is missing from" : "contradicts",
                             g != NULL ? hlx_rs_what(doc, g) : "rope_parameters");
    }
    return HLX_OK;
}

/* What a family's rope_scaling may hold of the multimodal RoPE (hlx_cfg_rope_scaling's
 * mrope): Qwen2-VL's and Qwen2.5-VL's sections; Qwen3-VL's, also interleaved */
#define HLX_MROPE_SECTIONS    1
#define HLX_MROPE_INTERLEAVED 2

/* Qwen2-VL's multimodal RoPE (rope_scaling {"type": "mrope" or "default", "mrope_section":
 * [t, h, w]}): the rotated pairs split into sections turned by a token's time, height and
 * width positions, which for text are all its position, so that a text decode turns them as
 * plain RoPE does. Qwen3-VL's "mrope_interleaved": true deals the pairs to t, h and w in
 * turn (transformers' apply_interleaved_mrope: pair i by h when i % 3 == 1 and i < 3h, by w
 * when i % 3 == 2 and i < 3w, else by t): for text, plain RoPE all the same. The sections
 * must cover the rotated pairs (three when interleaved); no other parameter. */
static hlx_status_t hlx_cfg_mrope_sections(hlx_jdoc_t *doc, json_t *r, const hlx_model_t *m)
{
    json_t *s = json_object_get(r, "mrope_section");
    json_t *il = json_object_get(r, "mrope_interleaved");
    char path[160];
    long long sum = 0;
    size_t i;

    snprintf(path, sizeof(path), "%s/mrope_section", hlx_rs_base(doc, r));
    if (!json_is_array(s) || json_array_size(s) < 1)
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected a list of positive integers "
                             "(the rotated pairs of each section)");
    for (i = 0; i < json_array_size(s); i++) {
        json_int_t n = json_integer_value(json_array_get(s, i));
        if (!json_is_integer(json_array_get(s, i)) || n < 1 || n > 65536)
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected positive integers (pairs "
                                 "per section)");
        sum += n;
    }
    if (sum != m->rope_dim / 2)
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "sections of %lld pairs in all; they must "
                             "add up to the %d rotated pairs of a head (head_dim / 2)", sum,
                             m->rope_dim / 2);
    if (il == NULL || json_is_null(il))
        return HLX_OK;
    snprintf(path, sizeof(path), "%s/mrope_interleaved", hlx_rs_base(doc, r));
    if (!json_is_boolean(il))
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected true or false");
    if (json_is_true(il) && json_array_size(s) != 3)
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "true deals the pairs to the time, "
                             "height and width sections in turn: mrope_section must list "
                             "three (it lists %zu)", json_array_size(s));
    return HLX_OK;
}

/* mrope_interleaved where the family's sections are not dealt in turn (Qwen2-VL's,
 * Qwen2.5-VL's): refused, naming the class that reads it */
static hlx_status_t hlx_cfg_mrope_interleaved(hlx_jdoc_t *doc, json_t *r, int mrope,
                                              const char *beside)
{
    char path[160];

    if ((mrope & HLX_MROPE_INTERLEAVED) || json_object_get(r, "mrope_interleaved") == NULL)
        return HLX_OK;
    snprintf(path, sizeof(path), "%s/mrope_interleaved", hlx_rs_base(doc, r));
    return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "not read beside %s (a text decode turns "
                         "the sections as plain RoPE); mrope_interleaved is read for "
                         "Qwen3VLForConditionalGeneration", beside);
}

/* The sections (hlx_cfg_mrope_sections) and nothing else beside them but the kind. */
static hlx_status_t hlx_cfg_mrope(hlx_jdoc_t *doc, json_t *r, const hlx_model_t *m, int mrope)
{
    const char *key;
    char path[160];
    hlx_status_t st;
    json_t *v;

    HLX_TRY(hlx_cfg_mrope_sections(doc, r, m));
    HLX_TRY(hlx_cfg_mrope_interleaved(doc, r, mrope, "mrope_section"));
    json_object_foreach(r, key, v) {
        /* v5's rope_parameters also hold the base and the rotated share, read with the shapes */
        if (hlx_rs_v5(doc, r) &&
            (!strcmp(key, "rope_theta") || !strcmp(key, "partial_rotary_factor")))
            continue;
        if (strcmp(key, "type") && strcmp(key, "rope_type") && strcmp(key, "mrope_section") &&
            strcmp(key, "mrope_interleaved")) {
            snprintf(path, sizeof(path), "%s/%.120s", hlx_rs_base(doc, r), key);
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "not read beside mrope_section "
                                 "(a text decode turns the sections as plain RoPE)");
        }
    }
    return HLX_OK;
}

/* The top-level original_max_position_embeddings beside a llama3 or yarn r: *orig_p its
 * value, 0 when absent or null. vLLM copies it over r's (patch_rope_parameters under
 * transformers 4, whose own yarn and llama3 read r's key alone; under v5
 * standardize_rope_params does the copying), so one that differs from r's would rotate
 * otherwise there than in older transformers: refused. */
static hlx_status_t hlx_cfg_rs_orig_top(hlx_jdoc_t *doc, json_t *r, double *orig_p)
{
    json_t *top = json_object_get(hlx_jdoc_root(doc), "original_max_position_embeddings");
    double in_r = 0;
    hlx_status_t st;
    int o;

    *orig_p = 0;
    if (top == NULL || json_is_null(top))
        return HLX_OK;
    HLX_TRY(hlx_cfg_int(doc, "original_max_position_embeddings", 1, 0, 1, &o));
    HLX_TRY(hlx_cfg_rs_orig(doc, r, 0, &in_r));
    /* v5's per-layer-type sets: standardize_rope_params gives a set without the key
     * max_position_embeddings and reads no top-level one for it (the flat form alone
     * takes the top-level key) */
    if (in_r == 0 && !strncmp(hlx_rs_base(doc, r), "/rope_parameters/", 17)) {
        int mp;
        char mps[32] = "absent here";
        HLX_TRY(hlx_cfg_max_pos(doc, &mp));
        if (mp > 0)
            snprintf(mps, sizeof(mps), "%d", mp);
        if (o != mp)
            return hlx_jdoc_fail(doc, "/original_max_position_embeddings", HLX_ERR_PARSE,
                                 "%d beside per-layer-type rope_parameters, whose %s has "
                                 "none: transformers v5 gives that set max_position_embeddings"
                                 " (%s) and reads no top-level key for it; move the value "
                                 "into the set", o, hlx_rs_what(doc, r), mps);
    }
    if (in_r > 0 && in_r != o)
        return hlx_jdoc_fail(doc, "/original_max_position_embeddings", HLX_ERR_PARSE,
                             "%d contradicts %s' original_max_position_embeddings %.0f (vLLM "
                             "and transformers v5 rotate with the top-level one, older "
                             "transformers with %s'): remove one", o,
                             hlx_rs_base(doc, r) + 1, in_r, hlx_rs_base(doc, r) + 1);
    *orig_p = o;
    return HLX_OK;
}

/* yarn's parameters beyond the factor and original context, as transformers'
 * _compute_yarn_parameters and vLLM's YaRNScalingRotaryEmbedding read them (DeepSeek's
 * modeling code and vLLM's DeepseekScalingRotaryEmbedding for MLA). truncate: both round
 * the ramp's ends to whole pairs unless it is false (gpt-oss: rope_yarn_exact; GQA only).
 * attention_factor: both put it on cos and sin in place of the mscale ratio (GQA);
 * vLLM's DeepSeek yarn does not read it while transformers' would, so MLA refuses it. */
static hlx_status_t hlx_cfg_yarn(hlx_jdoc_t *doc, json_t *r, hlx_model_t *m)
{
    json_t *t = json_object_get(r, "truncate");
    char path[96];
    hlx_status_t st;

    snprintf(path, sizeof(path), "%s/truncate", hlx_rs_base(doc, r));
    if (t != NULL && !json_is_null(t) && !json_is_boolean(t))
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected true or false");
    if (json_is_false(t) && m->attn == HLX_ATTN_MLA)
        return hlx_jdoc_fail(doc, path, HLX_ERR_UNSUPPORTED, "false (yarn's ramp between "
                             "unrounded pair indices) is not read for MLA: DeepSeek's yarn "
                             "rounds them whatever it says; remove the key");
    m->rope_yarn_exact = json_is_false(t); /* gpt-oss: the ends as computed */
    /* the ramp's ends divide by ln rope_theta (find_correction_dim) */
    snprintf(path, sizeof(path), "%s/rope_theta",
             json_object_get(r, "rope_theta") != NULL ? hlx_rs_base(doc, r) : "");
    if (m->rope_theta == 1.0)
        return hlx_jdoc_fail(doc, path,
                             HLX_ERR_PARSE, "1 with yarn: its ramp's ends divide by ln "
                             "rope_theta = 0 (transformers, DeepSeek's code and vLLM fail on "
                             "it)");
    if ((st = hlx_cfg_rs_num(doc, r, "beta_fast", 0, 32.0, 1e-6, 1e6, &m->rope_beta_fast)) ||
        (st = hlx_cfg_rs_num(doc, r, "beta_slow", 0, 1.0, 1e-6, 1e6, &m->rope_beta_slow)) ||
        (st = hlx_cfg_rs_num(doc, r, "mscale", 0, m->attn == HLX_ATTN_MLA ? 1.0 : 0.0, 0, 1e6,
                             &m->rope_mscale)) ||
        (st = hlx_cfg_rs_num(doc, r, "mscale_all_dim", 0, 0.0, 0, 1e6, &m->rope_mscale_all)))
        return st;
    m->rope_attn_factor = 0; /* 0: from the factor and the mscale keys */
    t = json_object_get(r, "attention_factor");
    if (t == NULL || json_is_null(t))
        return HLX_OK;
    snprintf(path, sizeof(path), "%s/attention_factor", hlx_rs_base(doc, r));
    if (m->attn == HLX_ATTN_MLA)
        return hlx_jdoc_fail(doc, path, HLX_ERR_UNSUPPORTED, "not read for MLA: vLLM's "
                             "DeepSeek yarn ignores it where transformers' multiplies cos and "
                             "sin by it, so the two decode differently");
    return hlx_cfg_rs_num(doc, r, "attention_factor", 1, 0, 1e-6, 1e6, &m->rope_attn_factor);
}

/* rope_scaling: absent, null or "default": none; "linear", "llama3", "yarn", "longrope" and
 * "dynamic" (its original context: max_position_embeddings, as transformers and InternLM2
 * take it) read into the model (helix/model.h: hlx_model_rope_freqs applies them, the
 * runtime and its reference alike); another kind is refused naming it, since rotating
 * with rope_theta alone would decode other tokens than the model's own implementation.
 * Keys that are not parameters of the kind are refused as well. Runs after the family's
 * shapes (longrope's arrays hold rope_dim / 2 factors). mrope (HLX_MROPE_*): the multimodal
 * RoPE's sections are read (hlx_cfg_mrope), beside "default" or "yarn" (the kinds vLLM's
 * get_rope builds MRotaryEmbedding with; a text token's positions are one, so plain yarn). */
static hlx_status_t hlx_cfg_rope_scaling(hlx_jdoc_t *doc, hlx_model_t *m, int mrope)
{
    json_t *root = hlx_jdoc_root(doc), *r = json_object_get(root, "rope_scaling"), *k, *k2;
    json_t *rp = json_object_get(root, "rope_parameters");
    const char *kind, *base;
    char path[96];
    double orig = 0;
    hlx_status_t st;
    int mr;

    m->rope_kind = HLX_ROPE_NONE;
    m->rope_factor = 1.0;
    if (rp != NULL && !json_is_null(rp)) /* transformers v5: read in place of rope_scaling */
        HLX_TRY(hlx_cfg_rope_params(doc, rp, r, m, &r));
    if (r == NULL || json_is_null(r))
        return HLX_OK;
    base = hlx_rs_base(doc, r);
    if (!json_is_object(r))
        return hlx_jdoc_fail(doc, base, HLX_ERR_PARSE, "expected an object or null");
    k = json_object_get(r, "rope_type");
    k2 = json_object_get(r, "type");
    if ((k != NULL && !json_is_string(k)) || (k2 != NULL && !json_is_string(k2))) {
        snprintf(path, sizeof(path), "%s/%s", base,
                 k != NULL && !json_is_string(k) ? "rope_type" : "type");
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected a string (the scaling kind)");
    }
    /* transformers writes both; they must agree */
    if (k != NULL && k2 != NULL && strcmp(json_string_value(k), json_string_value(k2))) {
        snprintf(path, sizeof(path), "%s/type", base);
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                             "\"%.32s\" contradicts rope_type \"%.32s\"", json_string_value(k2),
                             json_string_value(k));
    }
    if (k == NULL)
        k = k2;
    kind = json_string_value(k);
    if (kind == NULL && hlx_rs_v5(doc, r)) /* rope_parameters without a kind: the base alone */
        kind = "default";
    if (mrope && json_object_get(r, "mrope_section") != NULL &&
        (kind == NULL || !strcmp(kind, "mrope") || !strcmp(kind, "default")))
        return hlx_cfg_mrope(doc, r, m, mrope);
    if (kind != NULL && !strcmp(kind, "mrope")) {
        snprintf(path, sizeof(path), "%s/%s", base, json_object_get(r, "rope_type") ? "rope_type"
                                                                                     : "type");
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "\"mrope\" (Qwen2-VL's multimodal RoPE) "
                             "is read for Qwen2VLForConditionalGeneration, "
                             "Qwen2_5_VLForConditionalGeneration and "
                             "Qwen3VLForConditionalGeneration, with an mrope_section");
    }
    if (kind != NULL && !strcmp(kind, "default"))
        return hlx_cfg_rs_keys(doc, r, HLX_ROPE_NONE, "default", 0);
    if (kind != NULL && !strcmp(kind, "linear"))
        m->rope_kind = HLX_ROPE_LINEAR;
    else if (kind != NULL && !strcmp(kind, "llama3"))
        m->rope_kind = HLX_ROPE_LLAMA3;
    else if (kind != NULL && !strcmp(kind, "yarn"))
        m->rope_kind = HLX_ROPE_YARN;
    else if (kind != NULL && (!strcmp(kind, "longrope") || !strcmp(kind, "su")))
        /* "su": the name Phi-3-*-128k configs used before transformers called it longrope */
        m->rope_kind = HLX_ROPE_LONGROPE;
    else if (kind != NULL && !strcmp(kind, "dynamic"))
        m->rope_kind = HLX_ROPE_DYNAMIC;
    else
        return hlx_jdoc_fail(doc, base, HLX_ERR_UNSUPPORTED,
                             "%s%s%s RoPE scaling is not implemented (linear, llama3, yarn, "
                             "longrope and dynamic are; rotating with rope_theta alone would give other "
                             "tokens than the model's); to time the model anyway, remove "
                             "\"%s\" from a copy of config.json", kind ? "\"" : "",
                             kind ? kind : "this", kind ? "\"" : "",
                             hlx_rs_v5(doc, r) ? "rope_type\" and the scaling keys of \""
                                               "rope_parameters"
                                             : "rope_scaling");
    /* yarn with the multimodal sections (Qwen2.5-VL's and Qwen3-VL's long context): vLLM's
     * get_rope builds MRotaryEmbedding with yarn's factor and parameters (its other kinds
     * take no sections); a text token's three positions are one, so plain yarn */
    mr = mrope && m->rope_kind == HLX_ROPE_YARN && json_object_get(r, "mrope_section") != NULL;
    if (mr && ((st = hlx_cfg_mrope_interleaved(doc, r, mrope, "yarn's mrope_section")) ||
               (st = hlx_cfg_mrope_sections(doc, r, m))))
        return st;
    if ((st = hlx_cfg_rs_keys(doc, r, m->rope_kind, kind, mr)) != HLX_OK)
        return st;
    if (m->rope_kind == HLX_ROPE_LONGROPE)
        return hlx_cfg_longrope(doc, r, m);
    if ((st = hlx_cfg_rs_num(doc, r, "factor", 1, 1, 1e-6, 1e6, &m->rope_factor)) != HLX_OK)
        return st;
    if (m->rope_kind == HLX_ROPE_LINEAR)
        return HLX_OK;
    if (m->rope_kind == HLX_ROPE_DYNAMIC) {
        int mp;
        if (m->attn == HLX_ATTN_MLA)
            return hlx_jdoc_fail(doc, base, HLX_ERR_UNSUPPORTED, "\"dynamic\" RoPE scaling "
                                 "is implemented for GQA models only, not for MLA");
        HLX_TRY(hlx_cfg_max_pos(doc, &mp));
        if (mp == 0)
            return hlx_jdoc_fail(doc, base, HLX_ERR_PARSE, "\"dynamic\" needs the top-level "
                                 "max_position_embeddings, past which its base grows");
        if (m->rope_dim <= 2) /* the exponent rope_dim / (rope_dim - 2) */
            return hlx_jdoc_fail(doc, base, HLX_ERR_PARSE, "\"dynamic\" needs more than 2 "
                                 "rotated elements per head (it has %d)", m->rope_dim);
        m->rope_orig_ctx = mp;
        return HLX_OK;
    }
    /* a top-level original_max_position_embeddings is the one vLLM rotates with (it writes
     * the top-level key over rope_scaling's; transformers v5's standardisation does the
     * same for a flat set, not for a per-layer-type one), older transformers read
     * rope_scaling's: the two must agree */
    HLX_TRY(hlx_cfg_rs_orig_top(doc, r, &orig));
    /* absent from both: max_position_embeddings, as transformers takes it (its yarn, and
     * v5's standardised parameters for llama3 too; vLLM under v5 alike) */
    k = json_object_get(r, "original_max_position_embeddings");
    if (orig > 0) {
        /* the top-level one */
    } else if (k == NULL || json_is_null(k)) {
        int mp;
        HLX_TRY(hlx_cfg_max_pos(doc, &mp));
        if (mp == 0)
            return hlx_jdoc_fail(doc, base, HLX_ERR_PARSE, "required key "
                                 "\"original_max_position_embeddings\" is missing, and there "
                                 "is no max_position_embeddings to take in its place");
        orig = mp;
    } else if ((st = hlx_cfg_rs_orig(doc, r, 1, &orig)) != HLX_OK) {
        return st;
    }
    m->rope_orig_ctx = (int)orig;
    if (m->rope_kind == HLX_ROPE_LLAMA3) {
        if ((st = hlx_cfg_rs_num(doc, r, "low_freq_factor", 0, 1.0, 1e-6, 1e6,
                                 &m->rope_low_freq)) ||
            (st = hlx_cfg_rs_num(doc, r, "high_freq_factor", 0, 4.0, 1e-6, 1e6,
                                 &m->rope_high_freq)))
            return st;
        snprintf(path, sizeof(path), "%s/high_freq_factor", base);
        /* equal (Llama 4's 1 and 1): no band between, each frequency kept or divided */
        if (m->rope_high_freq < m->rope_low_freq)
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE,
                                 "%g must be at least low_freq_factor %g", m->rope_high_freq,
                                 m->rope_low_freq);
        return HLX_OK;
    }
    return hlx_cfg_yarn(doc, r, m);
}

/* MistralConfig's sliding_window when config.json leaves it out. */
#define HLX_MISTRAL_SLIDING_WINDOW 4096

/* Qwen2Config's and Qwen3Config's window when use_sliding_window is true and
 * sliding_window is absent, and their first windowed layer when max_window_layers is. */
#define HLX_QWEN_SLIDING_WINDOW    4096
#define HLX_QWEN_MAX_WINDOW_LAYERS 28
#define HLX_QWEN_VL_MAX_WINDOW_LAYERS 80 /* Qwen2VLTextConfig's, Qwen2_5_VLTextConfig's */

/* layer_types (transformers' newer configs; Qwen2, Qwen3 and Gemma read it): *lt_p NULL when
 * absent or null, else the list, checked to hold num_hidden_layers strings, each
 * "full_attention" or "sliding_attention" (read with hlx_cfg_layer_sliding). */
static hlx_status_t hlx_cfg_layer_types(hlx_jdoc_t *doc, const hlx_model_t *m, json_t **lt_p)
{
    json_t *lt = json_object_get(hlx_jdoc_root(doc), "layer_types");
    char path[48];
    int l;

    *lt_p = NULL;
    if (lt == NULL || json_is_null(lt))
        return HLX_OK;
    if (!json_is_array(lt) || json_array_size(lt) != (size_t)m->layers)
        return hlx_jdoc_fail(doc, "/layer_types", HLX_ERR_PARSE, "expected a list of "
                             "num_hidden_layers (%d) strings, each \"full_attention\" or "
                             "\"sliding_attention\"", m->layers);
    for (l = 0; l < m->layers; l++) {
        const char *t = json_string_value(json_array_get(lt, (size_t)l));
        snprintf(path, sizeof(path), "/layer_types/%d", l);
        if (t == NULL || (strcmp(t, "full_attention") && strcmp(t, "sliding_attention")))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "layer %d: expected "
                                 "\"full_attention\" or \"sliding_attention\"", l);
    }
    *lt_p = lt;
    return HLX_OK;
}

/* Whether layer l of a checked layer_types list is windowed. */
static int hlx_cfg_layer_sliding(json_t *lt, int l)
{
    return !strcmp(json_string_value(json_array_get(lt, (size_t)l)), "sliding_attention");
}

/* Qwen2's and Qwen3's first windowed layer (hlx_model_t.sliding_from): layer_types when the
 * config lists them (whole-context layers first, then windowed ones: the only form
 * max_window_layers gives), else max_window_layers; *from >= layers: none windowed. */
static hlx_status_t hlx_cfg_qwen_window_from(hlx_jdoc_t *doc, const hlx_model_t *m, int def,
                                             int *from)
{
    json_t *lt;
    char path[48];
    int l;
    hlx_status_t st;

    HLX_TRY(hlx_cfg_layer_types(doc, m, &lt));
    if (lt == NULL)
        return hlx_cfg_int(doc, "max_window_layers", 0, def, 0, from);
    for (*from = m->layers, l = 0; l < m->layers; l++) {
        int sliding = hlx_cfg_layer_sliding(lt, l);
        snprintf(path, sizeof(path), "/layer_types/%d", l);
        if (sliding && *from == m->layers)
            *from = l;
        else if (!sliding && *from < m->layers)
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "layer %d is \"full_attention\" "
                                 "after the \"sliding_attention\" of layer %d: only "
                                 "whole-context layers first, then windowed ones "
                                 "(max_window_layers' form) are supported", l, *from);
    }
    return HLX_OK;
}

/* Dots1ForCausalLM's window: transformers' Dots1Config windows the layers layer_types
 * calls sliding_attention, by default those from max_window_layers (62) on, whenever
 * sliding_window (4096 when absent) is not null; vLLM's dots1.py windows none. Where a
 * window would apply (some layer windowed, the window below max_position_embeddings) the
 * two decode differently, so it is refused; the releases window nothing (max_window_layers
 * 62 of 62 layers). */
#define HLX_DOTS1_SLIDING_WINDOW    4096
#define HLX_DOTS1_MAX_WINDOW_LAYERS 62
static hlx_status_t hlx_cfg_dots1_window(hlx_jdoc_t *doc, const hlx_model_t *m)
{
    json_t *root = hlx_jdoc_root(doc), *w = json_object_get(root, "sliding_window");
    json_t *mp = json_object_get(root, "max_position_embeddings"), *lt;
    long long win = HLX_DOTS1_SLIDING_WINDOW;
    int from = m->layers, l;
    char path[48] = "/max_window_layers";
    hlx_status_t st;

    if (json_is_null(w))
        return HLX_OK;
    if (w != NULL && (!json_is_integer(w) || json_integer_value(w) < 1))
        return hlx_jdoc_fail(doc, "/sliding_window", HLX_ERR_PARSE,
                             "expected a positive integer (tokens) or null");
    if (w != NULL)
        win = (long long)json_integer_value(w);
    HLX_TRY(hlx_cfg_layer_types(doc, m, &lt));
    if (lt == NULL)
        HLX_TRY(hlx_cfg_int(doc, "max_window_layers", 0, HLX_DOTS1_MAX_WINDOW_LAYERS, 0, &from));
    for (l = 0; lt != NULL && l < m->layers && from == m->layers; l++)
        if (hlx_cfg_layer_sliding(lt, l)) {
            from = l;
            snprintf(path, sizeof(path), "/layer_types/%d", l);
        }
    if (from >= m->layers ||
        (json_is_integer(mp) && json_integer_value(mp) >= 1 && win >= json_integer_value(mp)))
        return HLX_OK;
    return hlx_jdoc_fail(doc, lt != NULL || !hlx_cfg_absent(doc, "max_window_layers")
                                  ? path : "/sliding_window",
                         HLX_ERR_INVALID, "transformers' Dots1ForCausalLM windows layer %d, as "
                         "%s says (a window of %lld tokens%s), where vLLM's attends to the "
                         "whole context on every layer: the two decode differently past the "
                         "window; set \"sliding_window\": null in a copy of config.json to "
                         "decode as vLLM does (dots.llm1's releases window no layer)", from,
                         lt != NULL ? "layer_types"
                         : hlx_cfg_absent(doc, "max_window_layers")
                             ? "Dots1Config's default max_window_layers 62" : "max_window_layers",
                         win, w == NULL ? ", Dots1Config's default where sliding_window is "
                                          "absent" : "");
}

/* sliding_window (Mistral, Mixtral, Phi-3, Qwen2, Qwen3): MistralForCausalLM,
 * MixtralForCausalLM and Phi3ForCausalLM window every layer whenever the key is set (their
 * classes have no switch), and so does the runtime (hlx_model_t.sliding_window, pattern 0);
 * absent from a Mistral config, MistralConfig's window of 4096 applies. Qwen2ForCausalLM
 * and Qwen3ForCausalLM window when "use_sliding_window" is true (absent: 4096), the layers
 * from max_window_layers on (absent: 28) or as layer_types lists them
 * (hlx_model_t.sliding_from). Elsewhere a window that applies is refused (Qwen2-MoE's and
 * Qwen3-MoE's switch included, and SmolLM3's, off when absent, which windows its NoPE
 * layers). Never applies, so ignored: null, absent (but for Mistral and
 * a switched-on Qwen), "use_sliding_window": false (Qwen2-style configs carry the size with
 * the switch off; it does not count where there is no switch), a window of at least
 * max_position_embeddings (Phi-3's 128k variants carry 262144), and a max_window_layers of
 * at least num_hidden_layers (Qwen2-7B's 28 of 28). */
/* Olmo3ForCausalLM's windows (Olmo3Config; transformers' modeling_olmo3.py, vLLM's
 * olmo2.py): sliding_window (4096) on the layers layer_types calls sliding_attention, by
 * default three in every four ((l + 1) % 4 != 0); null: no window. The runtime's windowed
 * layers follow one pattern, one full_attention layer in every P (the first gives it; none:
 * every layer windowed), so another list is refused at its element. */
#define HLX_OLMO3_SLIDING_WINDOW 4096
#define HLX_OLMO3_PATTERN        4
/* Olmo3Config's default_theta in transformers v5 (4.57's: 10000) */
#define HLX_OLMO3_V5_THETA       500000.0
static hlx_status_t hlx_cfg_olmo3_window(hlx_jdoc_t *doc, hlx_model_t *m)
{
    json_t *w = json_object_get(hlx_jdoc_root(doc), "sliding_window"), *lt;
    int pat = HLX_OLMO3_PATTERN, full = -1, nslide = 0, win, l;
    char path[48];
    hlx_status_t st;

    m->sliding_window = m->sliding_pattern = m->sliding_from = 0;
    HLX_TRY(hlx_cfg_layer_types(doc, m, &lt));
    for (l = 0; lt != NULL && l < m->layers; l++) {
        const int sliding = hlx_cfg_layer_sliding(lt, l);
        nslide += sliding;
        if (!sliding && full < 0)
            full = l;
    }
    if (lt != NULL)
        pat = full < 0 ? 0 : full + 1;
    else
        nslide = m->layers - m->layers / HLX_OLMO3_PATTERN;
    for (l = 0; lt != NULL && l < m->layers; l++) {
        const int is_full = !hlx_cfg_layer_sliding(lt, l);
        snprintf(path, sizeof(path), "/layer_types/%d", l);
        if (is_full != (pat > 0 && (l + 1) % pat == 0))
            return hlx_jdoc_fail(doc, path, HLX_ERR_UNSUPPORTED, "layer %d is \"%s\", which "
                                 "breaks the pattern of one full_attention layer in every %d "
                                 "(as the first full_attention layer sets it; Olmo3Config's: "
                                 "3 sliding_attention, then 1 full_attention): the runtime's "
                                 "windowed layers follow one pattern", l,
                                 is_full ? "full_attention" : "sliding_attention", pat);
    }
    if (json_is_null(w))
        return HLX_OK; /* no window (hlx_cfg_olmo3_rope checks the RoPE it leaves) */
    if (w != NULL && (!json_is_integer(w) || json_integer_value(w) < 1 ||
                      json_integer_value(w) > INT_MAX))
        return hlx_jdoc_fail(doc, "/sliding_window", HLX_ERR_PARSE, "expected a positive "
                             "integer of at most %d (tokens) or null", INT_MAX);
    win = w != NULL ? (int)json_integer_value(w) : HLX_OLMO3_SLIDING_WINDOW;
    if (nslide == 0 || pat == 1) /* every layer full_attention */
        return HLX_OK;
    m->sliding_window = win;
    m->sliding_pattern = pat;
    return HLX_OK;
}

/* Olmo3ForCausalLM's RoPE, once rope_scaling is read: transformers' Olmo3Model (and vLLM's
 * Olmo2Attention for Olmo3Config) turns the sliding_attention layers with the default RoPE
 * at rope_theta and applies rope_scaling on the full_attention layers alone (OLMo 3 7B's
 * releases: yarn, factor 8 over 8192): the windowed layers' own unscaled table at the base
 * local (rope_local_theta: rope_theta, or the sliding_attention set's own in v5's
 * per-layer-type form: hlx_cfg_rope_per_type). Refused: rope_theta absent (Olmo3Config's
 * default moved from 10000 to 500000 between transformers versions; the releases give
 * 500000), dynamic scaling with windowed layers (one base then), and a scaling or a base of
 * their own for sliding_attention layers with sliding_window null (vLLM scales every layer
 * without a window, which the per-type RoPE would not; transformers cannot build those
 * layers' mask without one; the runtime turns at a second base only windowed layers). */
static hlx_status_t hlx_cfg_olmo3_rope(hlx_jdoc_t *doc, hlx_model_t *m, double local)
{
    json_t *root = hlx_jdoc_root(doc), *g = hlx_rope_global(doc), *lt;
    json_t *theta = json_object_get(root, "rope_theta");
    char path[96];
    hlx_status_t st;
    int l, nslide = 0;

    if ((theta == NULL || json_is_null(theta)) &&
        (json_object_get(g, "rope_theta") == NULL ||
         json_is_null(json_object_get(g, "rope_theta"))))
        return hlx_jdoc_fail(doc, "/rope_theta", HLX_ERR_PARSE, "required key is missing "
                             "(Olmo3Config's default was 10000 in transformers 4.57 and vLLM, "
                             "500000 later; give the model's value: OLMo 3's releases say "
                             "500000)");
    if (m->rope_kind == HLX_ROPE_NONE && local == m->rope_theta)
        return HLX_OK; /* one table for every layer */
    if (m->sliding_window == 0) {
        HLX_TRY(hlx_cfg_layer_types(doc, m, &lt));
        for (l = 0; l < m->layers; l++)
            nslide += lt != NULL ? hlx_cfg_layer_sliding(lt, l)
                                 : (l + 1) % HLX_OLMO3_PATTERN != 0;
        if (nslide > 0 && json_is_null(json_object_get(root, "sliding_window")))
            return m->rope_kind != HLX_ROPE_NONE
                       ? hlx_jdoc_fail(doc, "/sliding_window", HLX_ERR_UNSUPPORTED,
                                       "null beside rope scaling: vLLM scales every layer "
                                       "without a window, while the %d sliding_attention "
                                       "layers would turn unscaled (transformers' "
                                       "Olmo3ForCausalLM cannot build their mask without a "
                                       "window); give the window, or no rope_scaling", nslide)
                       : hlx_jdoc_fail(doc, "/sliding_window", HLX_ERR_UNSUPPORTED,
                                       "null beside the sliding_attention layers' own "
                                       "rope_theta %g (full_attention's: %g): the runtime "
                                       "turns only windowed layers at a second base; give the "
                                       "window, or both sets one rope_theta", local,
                                       m->rope_theta);
        return HLX_OK;
    }
    snprintf(path, sizeof(path), "%s", g != NULL ? hlx_rs_base(doc, g) : "/rope_scaling");
    if (m->rope_kind == HLX_ROPE_DYNAMIC)
        return hlx_jdoc_fail(doc, path,
                             HLX_ERR_UNSUPPORTED, "dynamic NTK on the full_attention layers "
                             "beside unscaled sliding_attention ones is not supported (the "
                             "runtime's dynamic scaling grows one base for every layer)");
    m->rope_local_theta = local;
    return HLX_OK;
}

/* The sliding_attention set s of the per-layer-type form where the class turns its windowed
 * layers with one unscaled table (Gemma 3, OLMo 3: the runtime's rope_local_theta):
 * rope_type "default" or absent, a rope_theta of its own (*theta_p; left as it is where
 * absent) and a partial_rotary_factor equal to the full_attention set f's. A scaling, or
 * any other key, is refused at its key. */
static hlx_status_t hlx_cfg_rope_unscaled(hlx_jdoc_t *doc, json_t *s, json_t *f,
                                          const char *arch, double *theta_p)
{
    const char *key;
    char path[160];
    hlx_status_t st;
    json_t *v;

    json_object_foreach(s, key, v) {
        snprintf(path, sizeof(path), "/rope_parameters/sliding_attention/%.100s", key);
        if (!strcmp(key, "rope_type") || !strcmp(key, "type")) {
            if (!json_is_string(v))
                return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected a string (the "
                                     "scaling kind)");
            if (strcmp(json_string_value(v), "default"))
                return hlx_jdoc_fail(doc, path, HLX_ERR_UNSUPPORTED, "\"%.32s\": %s turns its "
                                     "sliding_attention layers with one unscaled table at "
                                     "their own base, so a scaling of them is not supported; "
                                     "make it \"default\" (a scaling belongs in "
                                     "full_attention's set)", json_string_value(v), arch);
        } else if (!strcmp(key, "rope_theta")) {
            HLX_TRY(hlx_cfg_number_at(doc, v, path, 1e-9, 1e12, theta_p));
        } else if (!strcmp(key, "partial_rotary_factor")) {
            if (!hlx_json_same(v, json_object_get(f, key)))
                return hlx_jdoc_fail(doc, path, HLX_ERR_UNSUPPORTED, "differs from "
                                     "full_attention's: the runtime rotates one share of "
                                     "every head on every layer");
        } else {
            return hlx_jdoc_fail(doc, path, HLX_ERR_UNSUPPORTED, "not read: %s turns its "
                                 "sliding_attention layers unscaled, so their set holds "
                                 "rope_type \"default\" and rope_theta alone (a scaling "
                                 "belongs in full_attention's set)", arch);
        }
    }
    return HLX_OK;
}

/* Whether some layer of the class is a sliding_attention one: as layer_types lists them, or
 * where it is absent as the class's own list would (Gemma 3: all but every
 * sliding_window_pattern-th; Gemma 2, gpt-oss, OLMo 3: layer 0 at least; the others as
 * their windows were read). */
static hlx_status_t hlx_cfg_any_sliding(hlx_jdoc_t *doc, hlx_hf_config_t *c, int gemma3,
                                        int *any_p)
{
    const hlx_hf_base_t b = hlx_hf_base(c);
    hlx_status_t st;
    json_t *lt;
    int l, pat;

    *any_p = 0;
    HLX_TRY(hlx_cfg_layer_types(doc, &c->m, &lt));
    for (l = 0; lt != NULL && l < c->m.layers; l++)
        *any_p |= hlx_cfg_layer_sliding(lt, l);
    if (lt != NULL)
        return HLX_OK;
    if (gemma3) {
        HLX_TRY(hlx_cfg_int(doc, "sliding_window_pattern", 0, 6, 0, &pat));
        *any_p = pat != 1;
    } else if (hlx_hf_gemma2(c) || b == HLX_HF_BASE_GPT_OSS || b == HLX_HF_BASE_OLMO3) {
        *any_p = 1;
    } else {
        *any_p = c->m.sliding_window > 0;
    }
    return HLX_OK;
}

/* What a class makes of transformers v5's per-layer-type rope_parameters
 * (hlx_cfg_rope_types; the full_attention set read by hlx_cfg_rope_scaling), once its
 * windows are read. Gemma 3 and OLMo 3 turn their sliding_attention layers with one
 * unscaled table at a base of their own (hlx_cfg_rope_unscaled): Gemma 3's set gives
 * rope_local_theta in place of rope_local_base_freq (the two must agree where both are
 * given; without the set, rope_local_base_freq, as Gemma3TextConfig fills it), OLMo 3's
 * *local_p (hlx_cfg_olmo3_rope; a set without rope_theta only where full_attention's is
 * v5's default 500000, which Olmo3Config fills it with). Every other class with
 * layer types turns each layer with one set, so the two sets must be equal. Refused: the
 * form for a class without layer types, a sliding_attention set where no layer is one
 * (transformers v5 nests the sets only for the types its layers use) and, but for Gemma 3,
 * its absence where some layer is. */
static hlx_status_t hlx_cfg_rope_per_type(hlx_jdoc_t *doc, hlx_hf_config_t *c, double *local_p)
{
    const hlx_hf_base_t b = hlx_hf_base(c);
    const int gemma3 = (c->fused & HLX_HF_GEMMA) && !hlx_hf_gemma2(c) && !hlx_hf_gemma1(c);
    json_t *f, *s, *v, *w, *lbf;
    const char *key;
    char path[160];
    double theta = c->m.rope_theta;
    hlx_status_t st;
    int any;

    *local_p = c->m.rope_theta;
    HLX_TRY(hlx_cfg_rope_types(doc, &f, &s));
    /* one flat set: v5's Gemma3TextConfig and Olmo3Config read only the per-layer-type sets
     * (each missing one filled with a default set, the flat keys beside them left unread),
     * so that their layers turn otherwise than the set says */
    if (f == NULL && (gemma3 || b == HLX_HF_BASE_OLMO3) &&
        json_is_object(json_object_get(hlx_jdoc_root(doc), "rope_parameters")))
        return hlx_jdoc_fail(doc, "/rope_parameters", HLX_ERR_UNSUPPORTED, "one set for every "
                             "layer: transformers v5's config of %s reads its full_attention "
                             "and sliding_attention sets alone (it puts default ones beside "
                             "this set and leaves its keys unread); give the per-layer-type "
                             "sets, or rope_theta and rope_scaling", c->arch);
    if (f == NULL)
        return HLX_OK;
    if (!gemma3 && !hlx_hf_gemma2(c) && b != HLX_HF_BASE_OLMO3 && b != HLX_HF_BASE_GPT_OSS &&
        !((b == HLX_HF_BASE_QWEN2 || b == HLX_HF_BASE_QWEN3) && !hlx_hf_qwen3_vl(c)) &&
        b != HLX_HF_BASE_DOTS1 && b != HLX_HF_BASE_SMOLLM3)
        return hlx_jdoc_fail(doc, "/rope_parameters/full_attention", HLX_ERR_UNSUPPORTED,
                             "RoPE parameters per layer type are read for the classes with "
                             "layer_types (Gemma 2 and 3, OLMo 3, gpt-oss, Qwen2, Qwen3, "
                             "dots.llm1, SmolLM3), not for %s, whose layers turn with one set: "
                             "give rope_parameters that set itself", c->arch);
    HLX_TRY(hlx_cfg_any_sliding(doc, c, gemma3, &any));
    if (s != NULL && !any)
        return hlx_jdoc_fail(doc, "/rope_parameters/sliding_attention", HLX_ERR_PARSE,
                             "no layer is a sliding_attention one (%s), and transformers v5 "
                             "nests the sets only for the types the layers use: remove this "
                             "set", hlx_cfg_absent(doc, "layer_types")
                                            ? "as the class lays them out" : "layer_types");
    if (s == NULL && any && !gemma3)
        return hlx_jdoc_fail(doc, "/rope_parameters", HLX_ERR_PARSE, "per-layer-type sets "
                             "without \"sliding_attention\", which some layer is (%s): give "
                             "its set (where transformers v5 does not refuse the config, "
                             "its class puts a default set of its own there)",
                             hlx_cfg_absent(doc, "layer_types") ? "as the class lays them out"
                                                                 : "layer_types");
    if (s == NULL)
        return HLX_OK;
    if (gemma3 || b == HLX_HF_BASE_OLMO3) {
        HLX_TRY(hlx_cfg_rope_unscaled(doc, s, f, c->arch, &theta));
        *local_p = theta;
        /* OLMo 3's set without its base: v5's Olmo3Config fills it with its default_theta
         * (500000), not with full_attention's or the top-level rope_theta (which its
         * full_attention set has already taken from the keyword arguments) */
        if (!gemma3 && json_object_get(s, "rope_theta") == NULL && theta != HLX_OLMO3_V5_THETA)
            return hlx_jdoc_fail(doc, "/rope_parameters/sliding_attention", HLX_ERR_PARSE,
                                 "no rope_theta: transformers v5's Olmo3Config gives this set "
                                 "its default 500000, not full_attention's %g; give the set "
                                 "its rope_theta", theta);
        if (!gemma3 || json_object_get(s, "rope_theta") == NULL)
            return HLX_OK;
        lbf = json_object_get(hlx_jdoc_root(doc), "rope_local_base_freq");
        if (lbf != NULL && !json_is_null(lbf) &&
            !hlx_json_same(lbf, json_object_get(s, "rope_theta")))
            return hlx_jdoc_fail(doc, "/rope_local_base_freq", HLX_ERR_PARSE, "%g contradicts "
                                 "rope_parameters' sliding_attention rope_theta %g (transformers "
                                 "v5 reads the latter): remove one", json_number_value(lbf),
                                 theta);
        if (c->m.rope_local_theta > 0.0) /* 0: no windowed layer (hlx_cfg_gemma) */
            c->m.rope_local_theta = theta;
        return HLX_OK;
    }
    /* one set for every layer: the two must say the same, key by key */
    json_object_foreach(s, key, v) {
        w = json_object_get(f, key);
        if (w != NULL && hlx_json_same(v, w))
            continue;
        snprintf(path, sizeof(path), "/rope_parameters/sliding_attention/%.100s", key);
        return hlx_jdoc_fail(doc, path, HLX_ERR_UNSUPPORTED, "%s full_attention's set: %s "
                             "turns every layer with one RoPE set (a set of their own for "
                             "the sliding_attention layers is read for Gemma 3 and OLMo 3); "
                             "make the two sets equal", w == NULL ? "not in" : "differs from",
                             c->arch);
    }
    json_object_foreach(f, key, v)
        if (json_object_get(s, key) == NULL) {
            snprintf(path, sizeof(path), "/rope_parameters/full_attention/%.100s", key);
            return hlx_jdoc_fail(doc, path, HLX_ERR_UNSUPPORTED, "not in sliding_attention's "
                                 "set: %s turns every layer with one RoPE set (a set of their "
                                 "own for the sliding_attention layers is read for Gemma 3 and "
                                 "OLMo 3); make the two sets equal", c->arch);
        }
    return HLX_OK;
}

static hlx_status_t hlx_cfg_sliding(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    json_t *root = hlx_jdoc_root(doc), *w = json_object_get(root, "sliding_window");
    const hlx_hf_base_t b = hlx_hf_base(c);
    int use = 1, mistral = hlx_hf_mistral(c), from = 0, mp;
    /* every layer windowed, no switch: Mistral's base (MistralForCausalLM, Mistral3, a LLaVA
     * text_config's mistral), Phi3ForCausalLM, MixtralForCausalLM */
    int noswitch = mistral || b == HLX_HF_BASE_PHI3 || b == HLX_HF_BASE_MIXTRAL ||
                   b == HLX_HF_BASE_STARCODER2; /* Starcoder2Model: every layer, when set */
    /* the switch: Qwen2's and Qwen3's dense bases (Qwen2ForCausalLM, Qwen3ForCausalLM,
     * Qwen2-VL and Qwen2.5-VL, a LLaVA text_config's qwen2 or qwen3), but not Qwen3-VL's
     * (its text class has no window) nor the MoE bases (their switch, off when absent, is
     * refused when on) */
    int qwen = (b == HLX_HF_BASE_QWEN2 || b == HLX_HF_BASE_QWEN3) && !hlx_hf_qwen3_vl(c);
    long long win;
    char ctx[64] = "";
    hlx_status_t st;

    if (b == HLX_HF_BASE_DOTS1) /* no switch; vLLM's class windows nothing */
        return hlx_cfg_dots1_window(doc, &c->m);
    if (b == HLX_HF_BASE_OLMO3) /* layer_types' windows */
        return hlx_cfg_olmo3_window(doc, &c->m);
    /* the switch: Qwen2Config's, Qwen3Config's, Qwen2MoeConfig's, Qwen3MoeConfig's and
     * SmolLM3Config's default off; read (and checked) first */
    if ((st = hlx_cfg_bool(doc, "use_sliding_window",
                           !qwen && b != HLX_HF_BASE_SMOLLM3 && b != HLX_HF_BASE_QWEN2_MOE &&
                               b != HLX_HF_BASE_QWEN3_MOE, &use)) != HLX_OK)
        return st;

    /* absent: MistralConfig's window of 4096 for Mistral, Qwen2Config's 4096 for a Qwen
     * with the switch on; elsewhere no window */
    if (json_is_null(w) || (w == NULL && !mistral && !(qwen && use)))
        return HLX_OK;
    if (w != NULL && (!json_is_integer(w) || json_integer_value(w) < 1))
        return hlx_jdoc_fail(doc, "/sliding_window", HLX_ERR_PARSE,
                             "expected a positive integer (tokens) or null");
    win = w != NULL ? (long long)json_integer_value(w)
          : mistral ? HLX_MISTRAL_SLIDING_WINDOW : HLX_QWEN_SLIDING_WINDOW;
    if (!use && !noswitch)
        return HLX_OK;
    HLX_TRY(hlx_cfg_max_pos(doc, &mp));
    if (mp > 0 && win >= mp)
        return HLX_OK;
    if (mp > 0)
        snprintf(ctx, sizeof(ctx), ", under max_position_embeddings %d", mp);
    if (qwen && (st = hlx_cfg_qwen_window_from(doc, &c->m, hlx_hf_qwen_vl(c)
                                                                ? HLX_QWEN_VL_MAX_WINDOW_LAYERS
                                                                : HLX_QWEN_MAX_WINDOW_LAYERS,
                                                &from)) != HLX_OK)
        return st;
    if (qwen && from >= c->m.layers)
        return HLX_OK;
    if ((noswitch || qwen) && win <= INT_MAX) {
        c->m.sliding_window = (int)win;
        c->m.sliding_pattern = 0;
        c->m.sliding_from = from;
        return HLX_OK;
    }
    if (noswitch || qwen)
        return hlx_jdoc_fail(doc, "/sliding_window", HLX_ERR_PARSE, "%lld tokens: more than "
                             "the %d a window may span", win, INT_MAX);
    if (json_is_true(json_object_get(root, "use_sliding_window")) &&
        b == HLX_HF_BASE_SMOLLM3) /* SmolLM3Config's layer_types: its NoPE layers windowed */
        return hlx_jdoc_fail(doc, "/use_sliding_window", HLX_ERR_INVALID,
                             "true windows the layers without RoPE (no_rope_layers' 0s: a "
                             "window of %lld tokens%s), which is not read for %s; set it false "
                             "in a copy of config.json to decode with whole-context attention, "
                             "as SmolLM3's releases do", win, ctx, c->arch);
    if (json_is_true(json_object_get(root, "use_sliding_window")))
        return hlx_jdoc_fail(doc, "/use_sliding_window", HLX_ERR_INVALID,
                             "true windows the layers from max_window_layers on (a window of "
                             "%lld tokens%s), which is read for Qwen2ForCausalLM and "
                             "Qwen3ForCausalLM, not for %s; set it false in a copy of "
                             "config.json to decode with whole-context attention", win, ctx,
                             c->arch);
    return hlx_jdoc_fail(doc, "/sliding_window", HLX_ERR_INVALID,
                         "a window of %lld tokens%s is read for MistralForCausalLM, "
                         "MixtralForCausalLM and Phi3ForCausalLM (every layer windowed) and "
                         "for Qwen2ForCausalLM and Qwen3ForCausalLM with use_sliding_window, "
                         "not for %s; set \"sliding_window\": null in a copy of config.json to "
                         "decode with whole-context attention", win, ctx, c->arch);
}

/* A field of a compressed-tensors quantization args object: absent, or equal to want. */
static int hlx_ct_is(json_t *o, const char *key, const char *want_s, json_int_t want_i, int want_b)
{
    json_t *x = json_object_get(o, key);

    if (x == NULL)
        return 1;
    if (want_s != NULL)
        return json_is_string(x) && !strcmp(json_string_value(x), want_s);
    if (want_b >= 0)
        return json_is_boolean(x) && json_is_true(x) == want_b;
    return json_is_integer(x) && json_integer_value(x) == want_i;
}

/* quantization_config.kv_cache_scheme of quant_method `method`: compressed-tensors' object
 * (llm-compressor; also in ModelOpt's flat form and beside block-scaled fp8) or AutoFP8's
 * string "static" (quant_method fp8): fp8 scales of each layer's keys and values
 * (docs/model.md "fp8 KV-cache scales"). Only what the runtime does is accepted: 8-bit
 * floats, static, one scale per tensor or per KV head. */
static hlx_status_t hlx_cfg_kv_scheme(hlx_jdoc_t *doc, json_t *q, const char *method,
                                      hlx_hf_config_t *c)
{
    static const char at[] = "/quantization_config/kv_cache_scheme";
    json_t *k = json_object_get(q, "kv_cache_scheme");
    const int fp8 = !strcmp(method, "fp8");

    if (k == NULL || json_is_null(k))
        return HLX_OK;
    if (fp8 && json_is_string(k) && !strcmp(json_string_value(k), "static")) {
        c->kv_scales = HLX_HF_KV_SCALES_TENSOR; /* AutoFP8's form: one scale per tensor */
        return HLX_OK;
    }
    if (!json_is_object(k))
        return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE, "expected an object or null%s",
                             fp8 ? " (or \"static\": one scale per tensor)" : "");
    if (!hlx_ct_is(k, "type", "float", 0, -1))
        return hlx_jdoc_fail(doc, "/quantization_config/kv_cache_scheme/type", HLX_ERR_PARSE,
                             "only \"float\" (fp8 e4m3 KV) is supported");
    if (!hlx_ct_is(k, "num_bits", NULL, 8, -1))
        return hlx_jdoc_fail(doc, "/quantization_config/kv_cache_scheme/num_bits",
                             HLX_ERR_PARSE, "only 8 is supported");
    if (!hlx_ct_is(k, "strategy", "tensor", 0, -1) && !hlx_ct_is(k, "strategy", "attn_head", 0, -1))
        return hlx_jdoc_fail(doc, "/quantization_config/kv_cache_scheme/strategy",
                             HLX_ERR_PARSE, "\"tensor\" (one key and one value scale per "
                             "layer) or \"attn_head\" (one per KV head) is supported");
    if (!hlx_ct_is(k, "dynamic", NULL, 0, 0))
        return hlx_jdoc_fail(doc, "/quantization_config/kv_cache_scheme/dynamic",
                             HLX_ERR_PARSE, "only false (scales stored in the checkpoint) is "
                             "supported");
    if (!hlx_ct_is(k, "symmetric", NULL, 0, 1))
        return hlx_jdoc_fail(doc, "/quantization_config/kv_cache_scheme/symmetric",
                             HLX_ERR_PARSE, "only true is supported");
    c->kv_scales = json_object_get(k, "strategy") != NULL &&
                           hlx_ct_is(k, "strategy", "attn_head", 0, -1)
                       ? HLX_HF_KV_SCALES_HEAD : HLX_HF_KV_SCALES_TENSOR;
    return HLX_OK;
}

/* Whether an ignore-list entry names the head: "lm_head", llm-compressor's "re:.*lm_head",
 * a multimodal checkpoint's "language_model.lm_head"; an expression as its quantizer
 * matched it ("re:lm_head$" too). */
static int hlx_cfg_ignore_head(const char *e)
{
    return hlx_hf_ignore_names(e, "lm_head") || hlx_hf_ignore_names(e, "language_model.lm_head");
}

long hlx_hf_layer_of(const char *name)
{
    static const char pre[] = "model.layers.";
    const char *p = name + sizeof(pre) - 1;
    long l = 0;

    if (strncmp(name, pre, sizeof(pre) - 1) || !isdigit((unsigned char)*p) ||
        (p[0] == '0' && isdigit((unsigned char)p[1])))
        return -1;
    for (; isdigit((unsigned char)*p) && l < 100000000; p++)
        l = l * 10 + (*p - '0');
    return *p == '.' ? l : -1;
}

/* An ignore list (compressed-tensors' ignore, the fp8 method's ignored_layers, ModelOpt's
 * exclude_modules) at q[key]: a list of strings, naming the head where !may_omit (the runtime
 * reads lm_head unquantized; absent or null only where may_omit). What its entries leave
 * unquantized is read once the model is known (hlx_hf_ignore_apply). */
static hlx_status_t hlx_cfg_ignore(hlx_jdoc_t *doc, json_t *q, const char *key, const char *at,
                                   int may_omit, hlx_ign_mode_t mode)
{
    static const char *const takes[] = {
        [HLX_IGN_MODE_CT] = "\"re:\" and a regular expression",
        [HLX_IGN_MODE_GLOB] = "a wildcard (ModelOpt's)",
        [HLX_IGN_MODE_HF] = "a Python regular expression (transformers' rule)",
    };
    json_t *ig = json_object_get(q, key);
    size_t i;
    int head = 0;

    if ((ig == NULL || json_is_null(ig)) && may_omit)
        return HLX_OK;
    for (i = 0; json_is_array(ig) && i < json_array_size(ig); i++) {
        const char *e = json_string_value(json_array_get(ig, i));
        char p[256];
        snprintf(p, sizeof(p), "%s/%zu", at, i);
        if (e == NULL || !e[0])
            return hlx_jdoc_fail(doc, p, HLX_ERR_PARSE, "expected a module name, or %s",
                                 takes[mode]);
        head |= hlx_cfg_ignore_head(e);
    }
    if (!json_is_array(ig))
        return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE, "expected a list of module names%s",
                             may_omit ? ", or null" : " naming the head");
    if (!head && !may_omit)
        return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE, "expected a list naming the head "
                             "(\"lm_head\" or \"re:.*lm_head\": it is read unquantized)");
    return HLX_OK;
}

/* An integer key of q: absent (*v_p = def), or an integer that ok() accepts. */
static hlx_status_t hlx_cfg_qint(hlx_jdoc_t *doc, json_t *q, const char *key, const char *at,
                                 json_int_t def, int (*ok)(json_int_t), const char *what,
                                 json_int_t *v_p)
{
    json_t *x = json_object_get(q, key);
    char p[160];

    *v_p = def;
    if (x == NULL && def != INT64_MIN)
        return HLX_OK;
    snprintf(p, sizeof(p), "%s/%s", at, key);
    if (x == NULL)
        return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE, "required key %s is missing (%s)", key,
                             what);
    if (!json_is_integer(x) || !ok(json_integer_value(x)))
        return hlx_jdoc_fail(doc, p, HLX_ERR_PARSE, "expected %s", what);
    *v_p = json_integer_value(x);
    return HLX_OK;
}

static int hlx_q_bits(json_int_t v) { return v == 4 || v == 8; }
/* GPTQ's widths as vLLM's GPTQ method reads them; 2 and 3 dequantized at load */
static int hlx_q_bits_gptq(json_int_t v) { return v == 2 || v == 3 || v == 4 || v == 8; }
static int hlx_q_bits4(json_int_t v) { return v == 4; }
static int hlx_q_group(json_int_t v) { return v == -1 || (v > 0 && v <= (1 << 30)); }
static int hlx_q_group_pos(json_int_t v) { return v > 0 && v <= (1 << 30); }

/* A string key of q: absent, or one of want[] (compared without case when nocase). */
static int hlx_cfg_qstr_is(json_t *q, const char *key, const char *const *want, int nocase)
{
    json_t *x = json_object_get(q, key);
    size_t i;

    if (x == NULL)
        return 1;
    for (i = 0; json_is_string(x) && want[i] != NULL; i++)
        if (!(nocase ? strcasecmp : strcmp)(json_string_value(x), want[i]))
            return 1;
    return 0;
}

/* quant_method "gptq" (AutoGPTQ, GPTQModel, optimum; docs/model.md "Integer weights"):
 * bits 2, 3, 4 or 8, group_size, the zeros stored minus one (checkpoint_format gptq, the
 * default) or as they are (gptq_v2). desc_act and sym need no reading: g_idx and the stored
 * zeros say the same; which Linear layers are packed the tensors say. */
static hlx_status_t hlx_cfg_gptq(hlx_jdoc_t *doc, json_t *q, const char *at,
                                 hlx_hf_config_t *c)
{
    static const char *const formats[] = { "gptq", "gptq_v2", NULL };
    const char *fkey = json_object_get(q, "checkpoint_format") ? "checkpoint_format" : "format";
    json_t *f = json_object_get(q, fkey), *head = json_object_get(q, "lm_head");
    json_int_t bits, group;
    hlx_status_t st;
    char p[96];

    if ((st = hlx_cfg_qint(doc, q, "bits", at, INT64_MIN, hlx_q_bits_gptq, "2, 3, 4 or 8 "
                           "(bits per weight)", &bits)) != HLX_OK ||
        (st = hlx_cfg_qint(doc, q, "group_size", at, 128, hlx_q_group, "a group size > 0, "
                           "or -1 (one group per row)", &group)) != HLX_OK)
        return st;
    snprintf(p, sizeof(p), "%s/%s", at, fkey);
    if (f != NULL && !json_is_null(f) && !hlx_cfg_qstr_is(q, fkey, formats, 0))
        return hlx_jdoc_fail(doc, p, HLX_ERR_PARSE, "\"gptq\" or \"gptq_v2\" (the layouts "
                             "vLLM and transformers read; a repacked marlin checkpoint is "
                             "not read)");
    if (json_is_true(json_object_get(q, "is_marlin_format"))) { /* AutoGPTQ 0.6-0.7 */
        snprintf(p, sizeof(p), "%s/is_marlin_format", at);
        return hlx_jdoc_fail(doc, p, HLX_ERR_PARSE, "a checkpoint repacked for Marlin is not "
                             "read (GPTQ's own layout is: false)");
    }
    if (head != NULL && !json_is_false(head) && !json_is_null(head)) {
        snprintf(p, sizeof(p), "%s/lm_head", at);
        return hlx_jdoc_fail(doc, p, HLX_ERR_PARSE, "a quantized head is not read: false");
    }
    if (json_is_object(json_object_get(q, "dynamic"))) {
        /* GPTQModel's per-module rules: "-:pattern" leaves modules plain (the tensors say
         * so anyway), "+:pattern" may give them other bits or groups, which one packing per
         * checkpoint cannot read */
        const char *key;
        json_t *rule;
        json_object_foreach(json_object_get(q, "dynamic"), key, rule)
            if (strncmp(key, "-:", 2) &&
                (json_object_get(rule, "bits") || json_object_get(rule, "group_size"))) {
                snprintf(p, sizeof(p), "%s/dynamic", at);
                return hlx_jdoc_fail(doc, p, HLX_ERR_PARSE, "rule \"%s\" gives some modules "
                                     "other bits or groups; every packed module is read with "
                                     "the config's", key);
            }
    }
    c->packing.pack = f != NULL && json_is_string(f) && !strcmp(json_string_value(f), "gptq_v2")
                          ? HLX_PACK_GPTQ_V2 : HLX_PACK_GPTQ;
    c->packing.bits = (int)bits;
    c->packing.group = group;
    c->packing.sym = 0;
    c->packing.act_order = json_is_true(json_object_get(q, "desc_act"));
    return HLX_OK;
}

/* quant_method "awq" (AutoAWQ's GEMM layout): 4 bits, a group size, zero points. */
static hlx_status_t hlx_cfg_awq(hlx_jdoc_t *doc, json_t *q, const char *at,
                                hlx_hf_config_t *c)
{
    static const char *const versions[] = { "gemm", NULL };
    static const char *const backends[] = { "autoawq", NULL };
    /* AutoAWQ's own spellings (w_bit, q_group_size) where the object uses them, or has
     * neither spelling of the key and another of AutoAWQ's (its quant_config.json) */
    const int own = json_object_get(q, "w_bit") || json_object_get(q, "q_group_size") ||
                    json_object_get(q, "version");
    const char *bkey = json_object_get(q, "bits") ? "bits"
                       : json_object_get(q, "w_bit") || own ? "w_bit" : "bits";
    const char *gkey = json_object_get(q, "group_size") ? "group_size"
                       : json_object_get(q, "q_group_size") || own ? "q_group_size"
                                                                   : "group_size";
    json_t *zp = json_object_get(q, "zero_point");
    json_int_t bits, group;
    hlx_status_t st;
    char p[96];

    if ((st = hlx_cfg_qint(doc, q, bkey, at, INT64_MIN, hlx_q_bits4, "4 (AWQ's weights are "
                           "4-bit)", &bits)) != HLX_OK ||
        (st = hlx_cfg_qint(doc, q, gkey, at, INT64_MIN, hlx_q_group, "a group size > 0, or -1 "
                           "(one group per row)", &group)) != HLX_OK)
        return st;
    if (!hlx_cfg_qstr_is(q, "backend", backends, 1)) {
        snprintf(p, sizeof(p), "%s/backend", at);
        return hlx_jdoc_fail(doc, p, HLX_ERR_PARSE, "only \"autoawq\" is read (llm-awq packs "
                             "its words otherwise)");
    }
    if (zp != NULL && !json_is_true(zp)) {
        snprintf(p, sizeof(p), "%s/zero_point", at);
        return hlx_jdoc_fail(doc, p, HLX_ERR_PARSE, "only true (AWQ's GEMM layout with its "
                             "qzeros) is read");
    }
    if (!hlx_cfg_qstr_is(q, "version", versions, 1)) {
        snprintf(p, sizeof(p), "%s/version", at);
        return hlx_jdoc_fail(doc, p, HLX_ERR_PARSE, "only \"gemm\" is read (the gemv layouts "
                             "pack the words otherwise)");
    }
    c->packing.pack = HLX_PACK_AWQ;
    c->packing.bits = 4;
    c->packing.group = group;
    c->packing.sym = 0;
    return HLX_OK;
}

/* compressed-tensors' format of group g: its own, else (absent or null) the config's. */
static json_t *hlx_ct_format(json_t *q, json_t *g)
{
    json_t *f = json_object_get(g, "format");

    return f != NULL && !json_is_null(f) ? f : json_object_get(q, "format");
}

/* compressed-tensors' integer weights (llm-compressor's W4A16 and W8A16, format
 * pack-quantized): group g of the config with weights w. */
static hlx_status_t hlx_cfg_ct_int(hlx_jdoc_t *doc, json_t *q, json_t *g, json_t *w,
                                   hlx_hf_config_t *c)
{
    static const char at[] = "/quantization_config/config_groups";
    static const char *const orders[] = { "group", "weight", "static", "dynamic", NULL };
    json_t *a = json_object_get(g, "input_activations");
    json_t *o = json_object_get(g, "output_activations");
    json_t *fmt = hlx_ct_format(q, g);
    json_t *ao = json_object_get(w, "actorder");
    json_int_t bits, group = -1;
    const int channel = hlx_ct_is(w, "strategy", "channel", 0, -1) &&
                        json_object_get(w, "strategy") != NULL;

    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), "pack-quantized"))
        return hlx_jdoc_fail(doc, "/quantization_config", HLX_ERR_PARSE, "integer weights are "
                             "read in format \"pack-quantized\" (4 or 8 bits in int32 words) "
                             "or \"int-quantized\" (one I8 each): the group's format, or the "
                             "config's");
    if (!json_is_integer(json_object_get(w, "num_bits")) ||
        !hlx_q_bits(json_integer_value(json_object_get(w, "num_bits"))) ||
        !hlx_ct_is(w, "dynamic", NULL, 0, 0) ||
        (json_object_get(w, "symmetric") != NULL &&
         !json_is_boolean(json_object_get(w, "symmetric"))) ||
        (ao != NULL && !json_is_null(ao) && !json_is_boolean(ao) &&
         !hlx_cfg_qstr_is(w, "actorder", orders, 0)) ||
        !(channel || (hlx_ct_is(w, "strategy", "group", 0, -1) &&
                      json_object_get(w, "strategy") != NULL &&
                      json_is_integer(json_object_get(w, "group_size")) &&
                      hlx_q_group_pos(json_integer_value(json_object_get(w, "group_size"))))))
        return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE, "the group's integer weights must be 4 or "
                             "8 bits, static, one scale per group (strategy group, group_size "
                             "> 0) or per channel");
    if ((a != NULL && !json_is_null(a)) || (o != NULL && !json_is_null(o)))
        return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE, "integer weights are read with unquantized "
                             "activations (W4A16, W8A16): input_activations and "
                             "output_activations null");
    bits = json_integer_value(json_object_get(w, "num_bits"));
    if (!channel)
        group = json_integer_value(json_object_get(w, "group_size"));
    c->packing.pack = HLX_PACK_CT;
    c->packing.bits = (int)bits;
    c->packing.group = group;
    c->packing.sym = !json_is_false(json_object_get(w, "symmetric"));
    /* "group" (and its alias "dynamic"; true in compressed-tensors' first releases) orders
     * the groups by weight_g_idx; "weight" and "static" quantized in another order but keep
     * the groups in place */
    c->packing.act_order = json_is_true(ao) ||
                           (json_is_string(ao) && (!strcmp(json_string_value(ao), "group") ||
                                                   !strcmp(json_string_value(ao), "dynamic")));
    return HLX_OK;
}

/* quantization_config of compressed-tensors with weight groups (llm-compressor's FP8
 * checkpoints): one group over every Linear, fp8 e4m3 weights with a static scale per
 * tensor or per output channel (X.weight_scale), activations dynamic or static (their
 * X.input_scale is read for its shape and value and not used: the runtime computes in fp32
 * over the dequantized weights, as it does DeepSeek's), lm_head, the routers and a vision
 * tower left out (hlx_cfg_ignore). docs/model.md "fp8 weights". */
static hlx_status_t hlx_cfg_ct_weights(hlx_jdoc_t *doc, json_t *q, hlx_hf_config_t *c)
{
    static const char at[] = "/quantization_config/config_groups";
    json_t *cg = json_object_get(q, "config_groups"), *g, *w, *a, *t, *fmt;
    hlx_status_t st;
    int is_int, block;

    if (!json_is_object(cg) || json_object_size(cg) != 1)
        return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE, "expected one group (every Linear layer "
                             "quantized alike)");
    g = json_object_iter_value(json_object_iter(cg));
    t = json_object_get(g, "targets");
    w = json_object_get(g, "weights");
    a = json_object_get(g, "input_activations");
    if (!json_is_array(t) || json_array_size(t) != 1 ||
        strcmp(json_string_value(json_array_get(t, 0)) ?: "", "Linear"))
        return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE, "the group's targets must be [\"Linear\"]");
    fmt = hlx_ct_format(q, g);
    is_int = json_is_object(w) && json_is_string(json_object_get(w, "type")) &&
             !strcmp(json_string_value(json_object_get(w, "type")), "int");
    /* integer weights: packed 4 or 8 bits (hlx_cfg_ct_int), or one I8 each (int-quantized) */
    if (is_int && !(json_is_string(fmt) && (!strcmp(json_string_value(fmt), "int-quantized") ||
                                            !strcmp(json_string_value(fmt), "naive-quantized"))))
        return hlx_cfg_ct_int(doc, q, g, w, c);
    block = !is_int && json_is_object(w) && json_object_get(w, "strategy") != NULL &&
            hlx_ct_is(w, "strategy", "block", 0, -1);
    if (!json_is_object(w) || !hlx_ct_is(w, "type", is_int ? "int" : "float", 0, -1) ||
        !hlx_ct_is(w, "num_bits", NULL, 8, -1) || !hlx_ct_is(w, "dynamic", NULL, 0, 0) ||
        !hlx_ct_is(w, "symmetric", NULL, 0, 1) ||
        !(block || hlx_ct_is(w, "strategy", "tensor", 0, -1) ||
          hlx_ct_is(w, "strategy", "channel", 0, -1)))
        return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE, "the group's weights must be 8-bit float "
                             "(e4m3) or 8-bit int, static, symmetric, one scale per tensor or "
                             "per channel (float also per block)");
    if (block) { /* FP8_BLOCK: X.weight_scale per block of block_structure */
        json_t *bs = json_object_get(w, "block_structure");
        json_int_t r = json_integer_value(json_array_get(bs, 0));
        json_int_t k = json_integer_value(json_array_get(bs, 1));
        long long rs = 0, ks = 0;
        int n = 0;
        if (json_is_string(bs) && /* "128x128": its first releases' form */
            sscanf(json_string_value(bs), "%lldx%lld%n", &rs, &ks, &n) == 2 &&
            json_string_value(bs)[n] == '\0') {
            r = (json_int_t)rs;
            k = (json_int_t)ks;
        } else if (!json_is_array(bs) || json_array_size(bs) != 2) {
            r = 0;
        }
        if (r < 1 || k < 1 || r > 65536 || k > 65536)
            return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE, "the block strategy's block_structure "
                                 "must be [rows, cols], each in [1, 65536]");
        if (a != NULL && !json_is_null(a) && !json_is_true(json_object_get(a, "dynamic")))
            return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE, "block-scaled weights take dynamic "
                                 "input activations (as vLLM reads them)");
        c->block_rows = (int)r;
        c->block_cols = (int)k;
    }
    /* activations: not quantized here; static ones store an input_scale each (and, not
     * symmetric, zero points the runtime has no place for) */
    if (a != NULL && !json_is_null(a) &&
        (!json_is_object(a) || !hlx_ct_is(a, "type", is_int ? "int" : "float", 0, -1) ||
         !hlx_ct_is(a, "num_bits", NULL, 8, -1) ||
         (!json_is_true(json_object_get(a, "dynamic")) && !hlx_ct_is(a, "symmetric", NULL, 0, 1))))
        return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE, "the group's input_activations must be "
                             "null or 8-bit %s, dynamic or symmetric (no input zero points)",
                             is_int ? "int" : "float");
    if ((st = hlx_cfg_ignore(doc, q, "ignore", "/quantization_config/ignore", 0,
                             HLX_IGN_MODE_CT)) != HLX_OK)
        return st;
    c->fp8 = block ? HLX_HF_FP8_BLOCK : HLX_HF_FP8_SCALE;
    c->block_scale_plain = block;
    c->fp8_form = HLX_HF_QF_CT;
    c->int8 = is_int;
    c->fp8_channel = json_object_get(w, "strategy") != NULL &&
                    hlx_ct_is(w, "strategy", "channel", 0, -1);
    c->fp8_input_scale = a != NULL && json_is_object(a) && json_is_false(json_object_get(a, "dynamic"));
    if (!is_int) /* int8 keeps torch_dtype's: the planner's bytes, model info's name */
        c->m.weight_dtype = HLX_DTYPE_FP8;
    return HLX_OK;
}

/* quant_method "fp8" (vLLM's Fp8Config): with weight_block_size, DeepSeek's block-scaled
 * weights (X.weight_scale_inv; dynamic activations); without, one X.weight_scale per tensor
 * (AutoFP8's form, static activations with an X.input_scale or dynamic). KV-cache scales:
 * kv_cache_scheme (hlx_cfg_kv_scheme), or, undeclared, whatever the tensors hold
 * (kv_scales_maybe, as vLLM loads them when they are there). */
static hlx_status_t hlx_cfg_fp8(hlx_jdoc_t *doc, json_t *q, hlx_hf_config_t *c)
{
    json_t *bs = json_object_get(q, "weight_block_size"), *fmt = json_object_get(q, "fmt");
    json_t *asj = json_object_get(q, "activation_scheme");
    const char *as = json_string_value(asj);
    int stat;
    hlx_status_t st;

    if (fmt != NULL && !json_is_null(fmt) &&
        (!json_is_string(fmt) || strcmp(json_string_value(fmt), "e4m3")))
        return hlx_jdoc_fail(doc, "/quantization_config/fmt", HLX_ERR_PARSE,
                             "only \"e4m3\" is supported");
    /* absent or null: dynamic (vLLM requires the key; DeepSeek's releases say dynamic) */
    if (asj != NULL && !json_is_null(asj) &&
        (as == NULL || (strcmp(as, "dynamic") && strcmp(as, "static"))))
        return hlx_jdoc_fail(doc, "/quantization_config/activation_scheme", HLX_ERR_PARSE,
                             "expected \"dynamic\" or \"static\"");
    stat = as != NULL && !strcmp(as, "static");
    if ((st = hlx_cfg_ignore(doc, q, "ignored_layers", "/quantization_config/ignored_layers",
                             1, HLX_IGN_MODE_CT)) != HLX_OK)
        return st;
    c->m.weight_dtype = HLX_DTYPE_FP8;
    if (!c->kv_scales)
        c->kv_scales_maybe = 1;
    if (bs == NULL || json_is_null(bs)) {
        c->fp8 = HLX_HF_FP8_SCALE;
        c->fp8_form = HLX_HF_QF_FP8;
        c->fp8_input_scale = stat;
        c->kv_proj_names = 1; /* AutoFP8's names, until hlx_hf_settle sees the tensors */
        return HLX_OK;
    }
    if (stat)
        return hlx_jdoc_fail(doc, "/quantization_config/activation_scheme", HLX_ERR_PARSE,
                             "block-scaled weights (weight_block_size) take dynamic activations "
                             "(as vLLM reads them)");
    {
        json_int_t r = json_integer_value(json_array_get(bs, 0));
        json_int_t k = json_integer_value(json_array_get(bs, 1));
        if (!json_is_array(bs) || json_array_size(bs) != 2 || r < 1 || k < 1 || r > 65536 ||
            k > 65536)
            return hlx_jdoc_fail(doc, "/quantization_config/weight_block_size", HLX_ERR_PARSE,
                                 "expected [rows, cols], each in [1, 65536]");
        c->block_rows = (int)r;
        c->block_cols = (int)k;
    }
    c->fp8 = HLX_HF_FP8_BLOCK;
    return HLX_OK;
}

/* quant_method "fbgemm_fp8" (Meta's FP8 releases, transformers' FbgemmFp8Config, vLLM's
 * FBGEMMFp8Config): fp8 e4m3 weights with a scale per output channel (X.weight_scale
 * [out, 1]); activations quantized per token when run, bounded by activation_scale_ub (a
 * number > 0, not used: the runtime computes over the dequantized weights); the modules
 * left in torch_dtype in modules_to_not_convert (hlx_cfg_unquant), lm_head implied. */
static hlx_status_t hlx_cfg_fbgemm(hlx_jdoc_t *doc, json_t *q, hlx_hf_config_t *c)
{
    json_t *ub = json_object_get(q, "activation_scale_ub");
    hlx_status_t st;

    if (ub != NULL && !json_is_null(ub) &&
        !(json_is_number(ub) && json_number_value(ub) > 0 && isfinite(json_number_value(ub))))
        return hlx_jdoc_fail(doc, "/quantization_config/activation_scale_ub", HLX_ERR_PARSE,
                             "expected a number > 0 (the activations' scale bound)");
    if ((st = hlx_cfg_ignore(doc, q, "modules_to_not_convert",
                             "/quantization_config/modules_to_not_convert", 1,
                             HLX_IGN_MODE_HF)) != HLX_OK)
        return st;
    c->fp8 = HLX_HF_FP8_SCALE;
    c->fp8_form = HLX_HF_QF_FBGEMM;
    c->fp8_channel = 1;
    c->m.weight_dtype = HLX_DTYPE_FP8;
    return HLX_OK;
}

/* NVIDIA ModelOpt's FP8 export (quant_method "modelopt", as vLLM and SGLang read it): at
 * pointer at, quant_algo "FP8" (fp8 e4m3 weights, one X.weight_scale and one static
 * X.input_scale per tensor), kv_cache_quant_algo "FP8" or null (KV-cache scales per tensor,
 * self_attn.k_proj.k_scale and v_proj.v_scale), exclude_modules (or the flat form's ignore)
 * naming lm_head alone. The flat form of config.json (quant_algo beside quant_method, a
 * kv_cache_scheme for the KV) and the nested one ({"quantization": {...}}, also
 * hf_quant_config.json's) are both read. */
static hlx_status_t hlx_cfg_modelopt(hlx_jdoc_t *doc, json_t *q, const char *at,
                                     hlx_hf_config_t *c)
{
    static const char *const lists[] = { "exclude_modules", "ignore" };
    char p[160], base[96];
    const char *algo;
    json_t *kv;
    size_t i;
    hlx_status_t st;

    snprintf(base, sizeof(base), "%s", at);
    if (json_object_get(q, "quantization") != NULL) { /* nested, one level (vLLM's rule) */
        snprintf(base, sizeof(base), "%s/quantization", at);
        q = json_object_get(q, "quantization");
        if (!json_is_object(q))
            return hlx_jdoc_fail(doc, base, HLX_ERR_PARSE, "expected an object (ModelOpt's "
                                 "quant_algo, kv_cache_quant_algo and exclude_modules)");
    }
    snprintf(p, sizeof(p), "%s/quant_algo", base);
    algo = json_string_value(json_object_get(q, "quant_algo"));
    if (algo == NULL || strcmp(algo, "FP8"))
        return hlx_jdoc_fail(doc, p, HLX_ERR_PARSE, "%sonly \"FP8\" (fp8 e4m3 weights, a "
                             "scale per tensor) is supported",
                             json_object_get(q, "quant_algo") == NULL ? "required key is missing; "
                                                                      : "");
    kv = json_object_get(q, "kv_cache_quant_algo");
    snprintf(p, sizeof(p), "%s/kv_cache_quant_algo", base);
    if (kv != NULL && !json_is_null(kv) &&
        (!json_is_string(kv) || strcmp(json_string_value(kv), "FP8")))
        return hlx_jdoc_fail(doc, p, HLX_ERR_PARSE, "only \"FP8\" (fp8 e4m3 KV with a scale "
                             "per tensor) or null is supported");
    if (kv != NULL && !json_is_null(kv))
        c->kv_scales = HLX_HF_KV_SCALES_TENSOR;
    for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) { /* each that is there */
        snprintf(p, sizeof(p), "%s/%s", base, lists[i]);
        if ((st = hlx_cfg_ignore(doc, q, lists[i], p, 1, HLX_IGN_MODE_GLOB)) != HLX_OK)
            return st;
    }
    c->fp8 = HLX_HF_FP8_SCALE;
    c->fp8_form = HLX_HF_QF_MODELOPT;
    c->fp8_input_scale = 1;
    c->kv_proj_names = 1; /* ModelOpt's names, until hlx_hf_settle sees the tensors */
    c->m.weight_dtype = HLX_DTYPE_FP8;
    if (!c->kv_scales)
        c->kv_scales_maybe = 1;
    return HLX_OK;
}

/* What an fp8 checkpoint of c stores unquantized, for the planner (hlx_model_t.plain): the
 * head, embedding and routers, and each class of Linear layer whose every kind the ignore
 * lists leave unquantized in every layer (a class with some kinds or layers quantized is
 * planned quantized). */
static void hlx_hf_plain(hlx_hf_config_t *c)
{
    static const struct {
        hlx_hf_class_t cls;
        unsigned       bit;
    } classes[] = { { HLX_HFC_ATTN, HLX_MODEL_PLAIN_ATTN }, { HLX_HFC_FFN, HLX_MODEL_PLAIN_DENSE },
                    { HLX_HFC_EXPERT, HLX_MODEL_PLAIN_EXPERTS },
                    { HLX_HFC_SHARED, HLX_MODEL_PLAIN_SHARED } };
    hlx_hf_expect_t *list = NULL;
    size_t n = 0, i, k;
    unsigned quant = 0;
    char err[128];

    c->m.plain = 0;
    c->m.plain_dtype = c->st_dtype == HLX_ST_F32 ? HLX_DTYPE_F32 : HLX_DTYPE_BF16;
    if (c->m.weight_dtype != HLX_DTYPE_FP8)
        return;
    c->m.plain = HLX_MODEL_PLAIN_HEAD;
    if (c->unquant == 0 || hlx_hf_expect(c, &list, &n, err, sizeof(err)) != HLX_OK)
        return; /* nothing in every layer; too many tensors: refused where they are read */
    for (i = 0; i < n; i++)
        for (k = 0; k < sizeof(classes) / sizeof(classes[0]); k++)
            if (list[i].kind >= 0 && list[i].cls == classes[k].cls &&
                list[i].dtype != c->st_dtype)
                quant |= classes[k].bit;
    for (k = 0; k < sizeof(classes) / sizeof(classes[0]); k++)
        if (!(quant & classes[k].bit))
            c->m.plain |= classes[k].bit;
    free(list);
}

static const char *hlx_cfg_quant_method(json_t *q, char *buf, size_t n);

/* What the ignore lists of the quantization object q (at JSON pointer base) leave
 * unquantized, once the model is known: compressed-tensors' ignore and the fp8 method's
 * ignored_layers ("re:" expressions and names), ModelOpt's exclude_modules and ignore
 * (fnmatch wildcards, as vLLM matches them; nested under "quantization" where that is
 * there), fbgemm_fp8's modules_to_not_convert (transformers' rule). */
static hlx_status_t hlx_cfg_unquant(hlx_jdoc_t *doc, json_t *q, const char *base,
                                    int modelopt, hlx_hf_config_t *c)
{
    const char *keys[2] = { "ignore", NULL }, *method, *at[2];
    char mbuf[48], p[2][160], b[96];
    json_t *lists[2] = { NULL, NULL };
    hlx_ign_mode_t mode = HLX_IGN_MODE_CT;
    int i, n = 1;

    if (!c->fp8 || !json_is_object(q))
        return HLX_OK;
    method = hlx_cfg_quant_method(q, mbuf, sizeof(mbuf));
    snprintf(b, sizeof(b), "%s", base);
    if (modelopt || !strcmp(method, "modelopt")) {
        if (json_is_object(json_object_get(q, "quantization"))) {
            snprintf(b, sizeof(b), "%s/quantization", base);
            q = json_object_get(q, "quantization");
        }
        keys[0] = "exclude_modules";
        keys[1] = "ignore";
        n = 2;
        mode = HLX_IGN_MODE_GLOB;
    } else if (!strcmp(method, "fp8")) {
        keys[0] = "ignored_layers";
    } else if (!strcmp(method, "fbgemm_fp8")) {
        keys[0] = "modules_to_not_convert";
        mode = HLX_IGN_MODE_HF;
    }
    for (i = 0; i < n; i++) {
        lists[i] = json_object_get(q, keys[i]);
        snprintf(p[i], sizeof(p[i]), "%s/%s", b, keys[i]);
        at[i] = p[i];
    }
    return hlx_hf_ignore_apply(doc, c, lists, at, n, mode);
}

/* The ignore list of c's fp8 config (what the runtime reads unquantized): lm_head and, with
 * routed experts, the routers, each layer's by name (per_layer: as AutoFP8 and ModelOpt list
 * them) or by llm-compressor's regular expressions. */
static json_t *hlx_hf_ignore_json(const hlx_hf_config_t *c, int per_layer)
{
    const char *gate = c->moe_gqa == HLX_HF_MOE_MIXTRAL  ? "block_sparse_moe.gate"
                       : c->moe_gqa == HLX_HF_MOE_LLAMA4 ? "feed_forward.router"
                                                         : "mlp.gate";
    json_t *a = json_pack("[s]", "lm_head");
    char e[96];
    int l;

    if (!c->moe_gqa)
        return a;
    if (!per_layer) {
        snprintf(e, sizeof(e), "re:.*%s$", gate);
        json_array_append_new(a, json_string(e));
        if (c->m.shared_gate)
            json_array_append_new(a, json_string("re:.*mlp.shared_expert_gate$"));
        return a;
    }
    for (l = c->m.dense_layers; l < c->m.layers; l++) {
        if (!hlx_model_layer_moe(&c->m, l))
            continue;
        snprintf(e, sizeof(e), "model.layers.%d.%s", l, gate);
        json_array_append_new(a, json_string(e));
        if (c->m.shared_gate) {
            snprintf(e, sizeof(e), "model.layers.%d.mlp.shared_expert_gate", l);
            json_array_append_new(a, json_string(e));
        }
    }
    return a;
}

/* fp8 weights with a scale per tensor or channel on a family that does not take them (at:
 * where the quantization config is, in doc): every GQA family does (fused projections and
 * routed experts included); DeepSeek's MLA takes block scales only. */
static hlx_status_t hlx_cfg_fp8_layout(hlx_jdoc_t *doc, const char *at, const hlx_hf_config_t *c)
{
    if (c->fp8 != HLX_HF_FP8_SCALE || c->family == HLX_HF_DENSE)
        return HLX_OK;
    return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE, "%s weights with a scale per tensor or "
                         "channel are read for the GQA families; %s (MLA) takes DeepSeek's "
                         "fp8 block scales (quant_method fp8 with weight_block_size)",
                         c->int8 ? "int8" : "fp8", c->arch);
}

/* A JSON file of the checkpoint (config.json, hf_quant_config.json) into *doc_p, which must
 * hold an object; the error, where there is a doc, in hlx_jdoc_error(*doc_p). */
static hlx_status_t hlx_cfg_load_object(const char *path, hlx_jdoc_t **doc_p)
{
    hlx_status_t st = hlx_jdoc_load_file(path, doc_p);

    if (st == HLX_OK && !json_is_object(hlx_jdoc_root(*doc_p)))
        st = hlx_jdoc_fail(*doc_p, "", HLX_ERR_PARSE, "expected an object");
    return st;
}

/* ModelOpt's older export keeps its quantization in dir/hf_quant_config.json, beside a
 * config.json without quantization_config: read when it is there (errors at its
 * line:column). */
static hlx_status_t hlx_cfg_modelopt_file(const char *dir, hlx_hf_config_t *c, char *err,
                                          size_t errlen)
{
    char path[2048];
    struct stat sb;
    hlx_jdoc_t *doc = NULL;
    hlx_status_t st;

    snprintf(path, sizeof(path), "%s/hf_quant_config.json", dir);
    if (stat(path, &sb) != 0)
        return HLX_OK;
    if ((st = hlx_ckpt_regular_file(path, "quantization config", err, errlen)) != HLX_OK)
        return st;
    st = hlx_cfg_load_object(path, &doc);
    if (st == HLX_OK && json_object_get(hlx_jdoc_root(doc), "quantization") == NULL)
        st = hlx_jdoc_fail(doc, "/quantization", HLX_ERR_PARSE, "required key is missing "
                           "(ModelOpt's quant_algo, kv_cache_quant_algo and exclude_modules)");
    if (st == HLX_OK)
        st = hlx_cfg_modelopt(doc, hlx_jdoc_root(doc), "", c);
    if (st == HLX_OK)
        st = hlx_cfg_fp8_layout(doc, "/quantization", c);
    if (st == HLX_OK)
        st = hlx_cfg_unquant(doc, hlx_jdoc_root(doc), "", 1, c);
    if (st == HLX_OK)
        hlx_hf_plain(c);
    if (st != HLX_OK)
        snprintf(err, errlen, "%s", doc ? hlx_jdoc_error(doc) : path);
    hlx_jdoc_free(doc);
    return st;
}

/* q's quant_method as vLLM reads it, in lower case with "compressed_tensors" spelt
 * "compressed-tensors" ("GPTQ" is "gptq"), into buf: "" when absent or null, "(not a
 * string)" when not a string, "(too long)" past buf. */
static const char *hlx_cfg_quant_method(json_t *q, char *buf, size_t n)
{
    json_t *v = json_object_get(q, "quant_method");
    const char *s = json_string_value(v);
    size_t i;

    if (v == NULL || json_is_null(v))
        return "";
    if (s == NULL)
        return "(not a string)";
    if (strlen(s) >= n)
        return "(too long)";
    for (i = 0; s[i]; i++)
        buf[i] = (char)tolower((unsigned char)s[i]);
    buf[i] = '\0';
    if (!strcmp(buf, "compressed_tensors"))
        buf[10] = '-';
    return buf;
}

/* AutoGPTQ's and AutoAWQ's older exports keep their quantization in dir/quantize_config.json
 * (AutoGPTQ; AutoAWQ too) or dir/quant_config.json (AutoAWQ), beside a config.json without
 * quantization_config; vLLM reads those files once told the method. Read here when one is
 * there, the method from its quant_method, else from its keys (AutoAWQ's w_bit,
 * q_group_size, zero_point or version: awq; bits: gptq); errors at its line:column;
 * c->quant_file names it. Refused beside each other or ModelOpt's hf_quant_config.json. */
static hlx_status_t hlx_cfg_quant_file(const char *dir, hlx_hf_config_t *c, char *err,
                                       size_t errlen)
{
    /* every quantization file a checkpoint may keep beside config.json; these read here:
     * the last two, in that order */
    static const char *const files[] = { "hf_quant_config.json", "quantize_config.json",
                                         "quant_config.json" };
    const char *const *names = files + 1;
    const size_t nnames = 2;
    static const char *const awq_keys[] = { "w_bit", "q_group_size", "zero_point", "version" };
    char path[2048];
    struct stat sb;
    hlx_jdoc_t *doc = NULL;
    const char *method;
    char mbuf[32];
    json_t *q;
    size_t i, k;
    hlx_status_t st;

    for (i = 0; i < nnames; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        if (stat(path, &sb) == 0)
            break;
    }
    if (i == nnames)
        return HLX_OK;
    for (k = 0; k < sizeof(files) / sizeof(files[0]); k++) { /* two of them: not guessed */
        char other[2048];
        snprintf(other, sizeof(other), "%s/%s", dir, files[k]);
        if (strcmp(files[k], names[i]) && stat(other, &sb) == 0)
            return hlx_errbuf(err, errlen, HLX_ERR_PARSE, "%s: both %s and %s, and config.json "
                              "has no quantization_config: keep the one of this checkpoint's "
                              "quantization", dir, k < i + 1 ? files[k] : names[i],
                              k < i + 1 ? names[i] : files[k]);
    }
    if ((st = hlx_ckpt_regular_file(path, "quantization config", err, errlen)) != HLX_OK)
        return st;
    st = hlx_cfg_load_object(path, &doc);
    if (st == HLX_OK) {
        q = hlx_jdoc_root(doc);
        method = hlx_cfg_quant_method(q, mbuf, sizeof(mbuf));
        method = method[0] ? method : NULL;
        for (k = 0; method == NULL && k < sizeof(awq_keys) / sizeof(awq_keys[0]); k++)
            if (json_object_get(q, awq_keys[k]) != NULL)
                method = "awq";
        if (method == NULL && json_object_get(q, "bits") != NULL)
            method = "gptq";
        if (method != NULL && !strcmp(method, "gptq"))
            st = hlx_cfg_gptq(doc, q, "", c);
        else if (method != NULL && !strcmp(method, "awq"))
            st = hlx_cfg_awq(doc, q, "", c);
        else
            st = hlx_jdoc_fail(doc, json_object_get(q, "quant_method") ? "/quant_method" : "",
                               HLX_ERR_PARSE, "%s%s%s: read as GPTQ's (bits, group_size, "
                               "desc_act) or AutoAWQ's (w_bit, q_group_size, zero_point, "
                               "version) quantization; give quant_method \"gptq\" or \"awq\"",
                               method ? "quant_method \"" : "not GPTQ's or AWQ's keys",
                               method ? method : "", method ? "\" is not read" : "");
    }
    if (st == HLX_OK)
        snprintf(c->quant_file, sizeof(c->quant_file), "%s", names[i]);
    else
        snprintf(err, errlen, "%s", doc ? hlx_jdoc_error(doc) : path);
    hlx_jdoc_free(doc);
    return st;
}

/* The weights' dtype: torch_dtype, or dtype (its name since transformers 4.56 and in v5);
 * both there must agree. */
static hlx_status_t hlx_cfg_dtype(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    json_t *root = hlx_jdoc_root(doc), *q = json_object_get(root, "quantization_config");
    json_t *nd = json_object_get(root, "dtype");
    const char *key = nd != NULL && !json_is_null(nd) ? "dtype" : "torch_dtype", *method;
    char other[16], mbuf[32];
    hlx_status_t st = hlx_cfg_str(doc, key, "bfloat16", c->torch_dtype, sizeof(c->torch_dtype));

    if (st != HLX_OK)
        return st;
    if (!strcmp(c->torch_dtype, "bfloat16")) {
        c->st_dtype = HLX_ST_BF16;
        c->m.weight_dtype = HLX_DTYPE_BF16;
    } else if (!strcmp(c->torch_dtype, "float32")) {
        c->st_dtype = HLX_ST_F32;
        c->m.weight_dtype = HLX_DTYPE_F32;
    } else if (!strcmp(c->torch_dtype, "float16")) {
        c->st_dtype = HLX_ST_F16;
        c->m.weight_dtype = HLX_DTYPE_BF16; /* same size; converted to bf16 or f32 on load */
    } else {
        return hlx_jdoc_fail(doc, !strcmp(key, "dtype") ? "/dtype" : "/torch_dtype",
                             HLX_ERR_PARSE, "\"%s\" is not supported (bfloat16, float16, "
                             "float32)", c->torch_dtype);
    }
    if (!strcmp(key, "dtype") && json_object_get(root, "torch_dtype") != NULL &&
        !json_is_null(json_object_get(root, "torch_dtype"))) {
        if ((st = hlx_cfg_str(doc, "torch_dtype", "", other, sizeof(other))) != HLX_OK)
            return st;
        if (strcmp(other, c->torch_dtype))
            return hlx_jdoc_fail(doc, "/torch_dtype", HLX_ERR_PARSE, "\"%s\" contradicts "
                                 "dtype \"%s\": remove one", other, c->torch_dtype);
    }
    c->block_rows = c->block_cols = 128;
    if (q == NULL || json_is_null(q))
        return HLX_OK;
    method = hlx_cfg_quant_method(q, mbuf, sizeof(mbuf));
    if (json_is_object(q) && !strcmp(method, "mxfp4")) { /* gpt-oss's releases */
        if (c->moe_gqa != HLX_HF_MOE_GPT_OSS)
            return hlx_jdoc_fail(doc, "/quantization_config/quant_method", HLX_ERR_UNSUPPORTED,
                                 "\"mxfp4\" is read for GptOssForCausalLM's experts only, not "
                                 "%s's", c->arch);
        /* its experts' blocks and scales (hlx_hf_expert_views); modules_to_not_convert
         * names what stays in torch_dtype, which is everything else */
        c->mxfp4 = 1;
        return HLX_OK;
    }
    if (!json_is_object(q) || (strcmp(method, "compressed-tensors") && strcmp(method, "fp8") &&
                               strcmp(method, "modelopt") && strcmp(method, "gptq") &&
                               strcmp(method, "awq") && strcmp(method, "fbgemm_fp8")))
        return hlx_jdoc_fail(doc, json_is_object(q) ? "/quantization_config/quant_method"
                                                    : "/quantization_config",
                             HLX_ERR_PARSE, "supported: \"compressed-tensors\" (fp8 weights, "
                             "4- and 8-bit integer weights, fp8 KV-cache scales), \"fp8\" "
                             "(block-scaled or per-tensor weights), \"modelopt\" (quant_algo "
                             "FP8), \"fbgemm_fp8\" (per-channel weights), \"gptq\" and "
                             "\"awq\" (4- and 8-bit integer weights), \"mxfp4\" "
                             "(GptOssForCausalLM's experts)");
    if ((st = hlx_cfg_kv_scheme(doc, q, method, c)) != HLX_OK)
        return st;
    if (!strcmp(method, "compressed-tensors")) {
        json_t *cg = json_object_get(q, "config_groups");
        if (cg != NULL && !json_is_null(cg) && !(json_is_object(cg) && json_object_size(cg) == 0))
            return hlx_cfg_ct_weights(doc, q, c);
        if (!c->kv_scales)
            return hlx_jdoc_fail(doc, "/quantization_config", HLX_ERR_PARSE,
                                 "compressed-tensors with neither config_groups nor a "
                                 "kv_cache_scheme: nothing to read");
        return HLX_OK;
    }
    if (!strcmp(method, "gptq"))
        return hlx_cfg_gptq(doc, q, "/quantization_config", c);
    if (!strcmp(method, "awq"))
        return hlx_cfg_awq(doc, q, "/quantization_config", c);
    if (!strcmp(method, "fbgemm_fp8"))
        return hlx_cfg_fbgemm(doc, q, c);
    return !strcmp(method, "fp8") ? hlx_cfg_fp8(doc, q, c)
                                  : hlx_cfg_modelopt(doc, q, "/quantization_config", c);
}

/* partial_rotary_factor (Phi-3 and Phi-4-mini 0.75, GLM 0.5: def when absent): RoPE turns
 * the first head_dim x factor elements of each head, and longrope's factor arrays are that
 * many / 2 (hlx_cfg_rope_scaling runs after this). */
static hlx_status_t hlx_cfg_partial_rotary(hlx_jdoc_t *doc, hlx_model_t *m, double def)
{
    double f, r;
    const char *at;
    hlx_status_t st;

    HLX_TRY(hlx_cfg_rotary_factor(doc, def, &f, &at));
    r = f * m->head_dim;
    /* transformers takes int(head_dim x factor); a fraction there is a config error */
    if (fabs(r - floor(r + 0.5)) > 1e-9)
        return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE,
                             "%g x head_dim %d = %g rotated elements per head, not a whole "
                             "number", f, m->head_dim, r);
    m->rope_dim = (int)floor(r + 0.5);
    if (m->rope_dim % 2 != 0)
        return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE,
                             "%g x head_dim %d = %d rotated elements per head, odd (RoPE "
                             "rotates pairs)", f, m->head_dim, m->rope_dim);
    return HLX_OK;
}

void hlx_hf_gating_set(hlx_hf_config_t *c, hlx_moe_scoring_t scoring, int norm_topk_prob,
                       double routed_scaling, int n_group, int topk_group)
{
    hlx_model_t *m = &c->m;

    m->moe_scoring = scoring;
    snprintf(c->scoring_func, sizeof(c->scoring_func), "%s",
             scoring == HLX_MOE_SIGMOID ? "sigmoid" : "softmax");
    m->norm_topk_prob = c->norm_topk_prob = norm_topk_prob;
    m->routed_scaling = c->routed_scaling_factor = routed_scaling;
    m->n_group = c->n_group = n_group;
    m->topk_group = c->topk_group = topk_group;
}

/* Qwen3MoeConfig's and Qwen2MoeConfig's norm_topk_prob when config.json leaves it out (the
 * released Qwen3-MoE models set true, Qwen1.5/Qwen2-MoE false). */
#define HLX_QWEN3_MOE_NORM_TOPK_PROB 0

/* A shared FFN of width fs (key's value) as whole experts of the routed width (width_key):
 * m->shared_experts = fs / m->expert_ffn, or refused at key where it is not a multiple. */
static hlx_status_t hlx_cfg_shared_whole(hlx_jdoc_t *doc, hlx_model_t *m, const char *key,
                                         int fs, const char *width_key)
{
    char path[64];

    if (fs % m->expert_ffn == 0) {
        m->shared_experts = fs / m->expert_ffn;
        return HLX_OK;
    }
    snprintf(path, sizeof(path), "/%s", key);
    return hlx_jdoc_fail(doc, path, HLX_ERR_UNSUPPORTED, "%d is not a multiple of %s %d (the "
                         "runtime's shared experts are whole experts of the routed width)",
                         fs, width_key, m->expert_ffn);
}

/* Qwen3-MoE's and Qwen2-MoE's experts: layer l runs them unless it is in mlp_only_layers
 * or (l + 1) is not a multiple of decoder_sparse_step; the runtime's MoE layers are the
 * ones after the first dense_layers, so the dense ones must be a prefix: mlp_only_layers
 * [0, k) and a step of 1 (every released model: [] and 1). The router is a softmax over
 * the experts. Qwen2-MoE adds one shared expert of shared_expert_intermediate_size (the
 * runtime's shared_experts x moe_intermediate_size: a multiple of it, as in Qwen1.5-MoE
 * (4 x 1408) and Qwen2-57B-A14B (8 x 2560)) whose output is gated by a sigmoid. */
static hlx_status_t hlx_cfg_qwen3_moe(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    hlx_model_t *m = &c->m;
    json_t *mol = json_object_get(hlx_jdoc_root(doc), "mlp_only_layers");
    int step;
    size_t i;
    hlx_status_t st;

    HLX_TRY(hlx_cfg_int(doc, "num_experts", 1, 0, 1, &m->experts));
    HLX_TRY(hlx_cfg_int(doc, "num_experts_per_tok", 1, 0, 1, &m->top_k));
    HLX_TRY(hlx_cfg_int(doc, "moe_intermediate_size", 1, 0, 1, &m->expert_ffn));
    /* Qwen3VLMoeTextConfig's: true (its router renormalises whatever the key says; vLLM
     * reads the key) */
    HLX_TRY(hlx_cfg_bool(doc, "norm_topk_prob",
                         hlx_hf_qwen3_vl_moe(c) ? 1 : HLX_QWEN3_MOE_NORM_TOPK_PROB,
                         &c->norm_topk_prob));
    HLX_TRY(hlx_cfg_int(doc, "decoder_sparse_step", 0, 1, 1, &step));
    if (m->top_k > m->experts)
        return hlx_jdoc_fail(doc, "/num_experts_per_tok", HLX_ERR_PARSE,
                             "%d exceeds num_experts %d", m->top_k, m->experts);
    if (step != 1)
        return hlx_jdoc_fail(doc, "/decoder_sparse_step", HLX_ERR_UNSUPPORTED,
                             "%d: experts in every %d-th layer only are not supported (the "
                             "runtime's dense layers are the first ones: a step of 1 with "
                             "mlp_only_layers [0, k))", step, step);
    m->dense_layers = 0;
    if (mol != NULL && !json_is_null(mol)) {
        if (!json_is_array(mol))
            return hlx_jdoc_fail(doc, "/mlp_only_layers", HLX_ERR_PARSE,
                                 "expected an array of layer numbers");
        for (i = 0; i < json_array_size(mol); i++) {
            json_t *v = json_array_get(mol, i);
            if (!json_is_integer(v))
                return hlx_jdoc_fail(doc, "/mlp_only_layers", HLX_ERR_PARSE,
                                     "element %zu is not a layer number", i);
            if (json_integer_value(v) != (json_int_t)i)
                return hlx_jdoc_fail(doc, "/mlp_only_layers", HLX_ERR_UNSUPPORTED,
                                     "element %zu is %lld: dense layers other than the first "
                                     "ones are not supported (the runtime's dense layers are "
                                     "0, 1, ..., k - 1)", i, (long long)json_integer_value(v));
        }
        if (json_array_size(mol) > (size_t)m->layers)
            return hlx_jdoc_fail(doc, "/mlp_only_layers", HLX_ERR_PARSE,
                                 "%zu layers, more than num_hidden_layers %d",
                                 json_array_size(mol), m->layers);
        m->dense_layers = (int)json_array_size(mol);
    }
    m->shared_experts = 0;
    m->shared_gate = 0;
    if (c->moe_gqa == HLX_HF_MOE_QWEN2) {
        int fs;
        HLX_TRY(hlx_cfg_int(doc, "shared_expert_intermediate_size", 1, 0, 1, &fs));
        HLX_TRY(hlx_cfg_shared_whole(doc, m, "shared_expert_intermediate_size", fs,
                                     "moe_intermediate_size"));
        m->shared_gate = 1;
    }
    hlx_hf_gating_set(c, HLX_MOE_SOFTMAX, c->norm_topk_prob, 1.0, 1, 1);
    return HLX_OK;
}

/* An expert count (or width) whose null the class's layers fail on where an absent key
 * takes its default (nn.Linear(hidden, None), topk(k=None), None x moe_intermediate_size):
 * refused at the key instead of read as absent. */
static hlx_status_t hlx_cfg_count_not_null(hlx_jdoc_t *doc, const hlx_hf_config_t *c,
                                           const char *key)
{
    char path[80];

    if (!json_is_null(json_object_get(hlx_jdoc_root(doc), key)))
        return HLX_OK;
    snprintf(path, sizeof(path), "/%s", key);
    return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "null is not a count: %s would fail on it "
                         "(absent takes the class's default; give the model's value)",
                         c->arch);
}

/* Mixtral: every layer's FFN is num_local_experts experts of intermediate_size, the
 * num_experts_per_tok best of a softmax router renormalised to sum 1 (transformers'
 * MixtralSparseMoeBlock); no dense FFN, no shared expert. */
static hlx_status_t hlx_cfg_mixtral(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    hlx_model_t *m = &c->m;
    hlx_status_t st;

    HLX_TRY(hlx_cfg_count_not_null(doc, c, "num_local_experts"));
    HLX_TRY(hlx_cfg_count_not_null(doc, c, "num_experts_per_tok"));
    HLX_TRY(hlx_cfg_int(doc, "num_local_experts", 0, 8, 1, &m->experts));
    HLX_TRY(hlx_cfg_int(doc, "num_experts_per_tok", 0, 2, 1, &m->top_k));
    if (m->top_k > m->experts)
        return hlx_jdoc_fail(doc, "/num_experts_per_tok", HLX_ERR_PARSE,
                             "%d exceeds num_local_experts %d", m->top_k, m->experts);
    m->expert_ffn = m->ffn;
    m->dense_layers = 0;
    m->shared_experts = 0;
    hlx_hf_gating_set(c, HLX_MOE_SOFTMAX, 1, 1.0, 1, 1);
    return HLX_OK;
}

/* num_nextn_predict_layers (DeepSeek-V3, GLM-4.5: 1; def when absent): multi-token-
 * prediction layers stored after the model's, not read; at most 16, so that the layers past
 * them stay refused. */
static hlx_status_t hlx_cfg_mtp(hlx_jdoc_t *doc, hlx_hf_config_t *c, int def)
{
    hlx_status_t st = hlx_cfg_int(doc, "num_nextn_predict_layers", 0, def, 0, &c->mtp_layers);

    if (st == HLX_OK && c->mtp_layers > 16)
        return hlx_jdoc_fail(doc, "/num_nextn_predict_layers", HLX_ERR_PARSE, "%d: at most 16 "
                             "(the releases have 1)", c->mtp_layers);
    return st;
}

/* DeepSeek-V3's MoE on GQA attention (transformers' Glm4MoeMoE and Dots1MoE, both
 * DeepseekV3MoE's; vLLM's Glm4MoE and Dots1MoE): n_routed_experts of moe_intermediate_size
 * after the first first_k_dense_replace layers (a dense FFN of intermediate_size before),
 * chosen by sigmoid scores plus e_score_correction_bias (noaux_tc, groups by their two
 * best), the chosen scores renormalised (norm_topk_prob) and times routed_scaling_factor,
 * plus n_shared_experts x moe_intermediate_size of shared FFN. The keys a config.json may
 * leave out take the class's defaults (a negative one: required, as where the class's
 * None fails). */
typedef struct hlx_v3_gate_defaults {
    const char *cls; /* the config class, for messages */
    int         experts, top_k, expert_ffn, shared, first_dense, norm_topk_prob;
} hlx_v3_gate_defaults_t;

static hlx_status_t hlx_cfg_v3_gate(hlx_jdoc_t *doc, hlx_hf_config_t *c,
                                    const hlx_v3_gate_defaults_t *d)
{
    static const hlx_gating_keys_t keys = { "n_routed_experts", "num_experts_per_tok",
                                            "n_group", "topk_group" };
    hlx_model_t *m = &c->m;
    const char *key = "n_group";
    char why[256], path[64], note[160] = "";
    int norm, ng, tg;
    double rsf;
    hlx_status_t st;

    /* (a required one's null: "required key is missing") */
    if (d->experts >= 0)
        HLX_TRY(hlx_cfg_count_not_null(doc, c, "n_routed_experts"));
    if (d->top_k >= 0)
        HLX_TRY(hlx_cfg_count_not_null(doc, c, "num_experts_per_tok"));
    if (d->expert_ffn >= 0)
        HLX_TRY(hlx_cfg_count_not_null(doc, c, "moe_intermediate_size"));
    if (d->shared >= 0)
        HLX_TRY(hlx_cfg_count_not_null(doc, c, "n_shared_experts"));
    HLX_TRY(hlx_cfg_int(doc, "n_routed_experts", d->experts < 0, d->experts, 1, &m->experts));
    HLX_TRY(hlx_cfg_int(doc, "num_experts_per_tok", d->top_k < 0, d->top_k, 1, &m->top_k));
    HLX_TRY(hlx_cfg_int(doc, "moe_intermediate_size", d->expert_ffn < 0, d->expert_ffn, 1,
                        &m->expert_ffn));
    HLX_TRY(hlx_cfg_int(doc, "n_shared_experts", d->shared < 0, d->shared, 0,
                        &m->shared_experts));
    HLX_TRY(hlx_cfg_int(doc, "first_k_dense_replace", d->first_dense < 0, d->first_dense, 0,
                        &m->dense_layers));
    HLX_TRY(hlx_cfg_bool(doc, "norm_topk_prob", d->norm_topk_prob, &norm));
    HLX_TRY(hlx_cfg_num(doc, "routed_scaling_factor", 1.0, 1e-6, 1e6, &rsf));
    HLX_TRY(hlx_cfg_int(doc, "n_group", 0, 1, 1, &ng));
    HLX_TRY(hlx_cfg_int(doc, "topk_group", 0, 1, 1, &tg));
    if (hlx_cfg_absent(doc, "num_experts_per_tok") || hlx_cfg_absent(doc, "n_routed_experts"))
        snprintf(note, sizeof(note), " (absent keys take %s's n_routed_experts %d and "
                 "num_experts_per_tok %d; give the model's values)", d->cls, d->experts,
                 d->top_k);
    if (m->top_k > m->experts)
        return hlx_jdoc_fail(doc, "/num_experts_per_tok", HLX_ERR_PARSE,
                             "%d exceeds n_routed_experts %d%s", m->top_k, m->experts, note);
    if (m->dense_layers > m->layers)
        return hlx_jdoc_fail(doc, "/first_k_dense_replace", HLX_ERR_PARSE,
                             "%d exceeds num_hidden_layers %d", m->dense_layers, m->layers);
    hlx_hf_gating_set(c, HLX_MOE_SIGMOID, norm, rsf, ng, tg);
    if ((st = hlx_model_gating_check(m, &keys, &key, why, sizeof(why))) == HLX_OK)
        return HLX_OK;
    snprintf(path, sizeof(path), "/%s", key);
    note[0] = '\0';
    if (hlx_cfg_absent(doc, "n_group") || hlx_cfg_absent(doc, "topk_group"))
        snprintf(note, sizeof(note), " (absent keys take %s's n_group 1 and topk_group 1; "
                 "give the model's values)", d->cls);
    return hlx_jdoc_fail(doc, path, st, "%s%s", why, note);
}

/* GLM-4.5, GLM-4.5-Air, GLM-4.6 (Glm4MoeForCausalLM): DeepSeek-V3's MoE (hlx_cfg_v3_gate)
 * with Glm4MoeConfig's defaults, its multi-token-prediction layers, RoPE's rotate_half over
 * the first partial_rotary_factor of each head. */
static hlx_status_t hlx_cfg_glm4_moe(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    static const hlx_v3_gate_defaults_t glm4_moe = { "Glm4MoeConfig", 128, 8, 1408, 1, 1, 1 };
    hlx_status_t st;

    HLX_TRY(hlx_cfg_mtp(doc, c, 0));
    HLX_TRY(hlx_cfg_v3_gate(doc, c, &glm4_moe));
    return hlx_cfg_partial_rotary(doc, &c->m, hlx_hf_row(c->arch)->rotary);
}

/* dots.llm1 (Dots1ForCausalLM; transformers' modeling_dots1.py, vLLM's dots1.py): Qwen3's
 * attention (its q/k head norms read with the class's row) and DeepSeek-V3's MoE
 * (hlx_cfg_v3_gate) with Dots1Config's defaults: n_routed_experts, num_experts_per_tok and
 * n_shared_experts required (None in the class, which transformers' layers fail on and vLLM
 * reads as no experts), moe_intermediate_size 1408, first_k_dense_replace 0, norm_topk_prob
 * false. vLLM reads three more keys that transformers does not, refused where the two would
 * decode differently: scoring_func (vLLM's grouped top-k scores with it, transformers always
 * with a sigmoid), topk_method (vLLM adds e_score_correction_bias for noaux_tc alone,
 * transformers always), moe_layer_freq (vLLM's dense layers between MoE ones). Nor does
 * vLLM's class tie its head. */
static hlx_status_t hlx_cfg_dots1(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    static const hlx_v3_gate_defaults_t dots1 = { "Dots1Config", -1, -1, 1408, -1, 0, 0 };
    /* vLLM's string keys: the value both implementations agree on, and why another parts */
    static const struct {
        const char *key, *want, *why;
    } vllm_keys[] = {
        { "scoring_func", "sigmoid", "transformers' Dots1ForCausalLM scores the experts with a "
          "sigmoid whatever this key says, vLLM's with the function it names" },
        { "topk_method", "noaux_tc", "vLLM's Dots1ForCausalLM adds e_score_correction_bias to "
          "the choice for \"noaux_tc\" alone, transformers' always" },
    };
    char v[32], path[32];
    int freq;
    size_t i;
    hlx_status_t st;

    if (c->tie_word_embeddings)
        return hlx_jdoc_fail(doc, "/tie_word_embeddings", HLX_ERR_INVALID, "true ties the head "
                             "to the embedding in transformers' Dots1ForCausalLM, not in "
                             "vLLM's (it reads lm_head.weight): the two decode differently "
                             "(dots.llm1's releases say false)");
    for (i = 0; i < sizeof(vllm_keys) / sizeof(vllm_keys[0]); i++) {
        HLX_TRY(hlx_cfg_str(doc, vllm_keys[i].key, vllm_keys[i].want, v, sizeof(v)));
        snprintf(path, sizeof(path), "/%s", vllm_keys[i].key);
        if (strcmp(v, vllm_keys[i].want))
            return hlx_jdoc_fail(doc, path, HLX_ERR_INVALID, "\"%s\": %s: the two decode "
                                 "differently (dots.llm1's releases say \"%s\")", v,
                                 vllm_keys[i].why, vllm_keys[i].want);
    }
    HLX_TRY(hlx_cfg_int(doc, "moe_layer_freq", 0, 1, 1, &freq));
    if (freq != 1)
        return hlx_jdoc_fail(doc, "/moe_layer_freq", HLX_ERR_INVALID, "%d: vLLM's "
                             "Dots1ForCausalLM keeps a dense FFN on the layers it does not "
                             "divide, transformers' routes every layer from "
                             "first_k_dense_replace on (dots.llm1's releases say 1)", freq);
    return hlx_cfg_v3_gate(doc, c, &dots1);
}

/* DeepSeek-MoE's keys (DeepseekConfig, its own code beside the checkpoint; vLLM's
 * DeepseekForCausalLM): n_routed_experts, num_experts_per_tok and moe_intermediate_size
 * (required), n_shared_experts (0: none), first_k_dense_replace (0), moe_layer_freq (1;
 * other values interleave dense layers, refused), norm_topk_prob (false), scoring_func
 * (softmax; another refused): a softmax over the experts, the top k, renormalised when
 * norm_topk_prob, plus the shared experts' MLP of moe_intermediate_size x n_shared_experts. */
static hlx_status_t hlx_cfg_deepseek_moe(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    hlx_model_t *m = &c->m;
    char sf[16];
    int norm, freq;
    hlx_status_t st;

    HLX_TRY(hlx_cfg_int(doc, "n_routed_experts", 1, 0, 1, &m->experts));
    HLX_TRY(hlx_cfg_int(doc, "num_experts_per_tok", 1, 0, 1, &m->top_k));
    HLX_TRY(hlx_cfg_int(doc, "moe_intermediate_size", 1, 0, 1, &m->expert_ffn));
    HLX_TRY(hlx_cfg_int(doc, "n_shared_experts", 0, 0, 0, &m->shared_experts));
    HLX_TRY(hlx_cfg_int(doc, "first_k_dense_replace", 0, 0, 0, &m->dense_layers));
    HLX_TRY(hlx_cfg_int(doc, "moe_layer_freq", 0, 1, 1, &freq));
    HLX_TRY(hlx_cfg_bool(doc, "norm_topk_prob", 0, &norm));
    HLX_TRY(hlx_cfg_str(doc, "scoring_func", "softmax", sf, sizeof(sf)));
    if (strcmp(sf, "softmax"))
        return hlx_jdoc_fail(doc, "/scoring_func", HLX_ERR_PARSE, "\"%s\" is not read for %s "
                             "(its gate is a softmax: \"softmax\")", sf, c->arch);
    if (freq != 1)
        return hlx_jdoc_fail(doc, "/moe_layer_freq", HLX_ERR_PARSE, "%d interleaves dense "
                             "layers among the MoE ones, which the runtime does not run (its "
                             "dense layers are the first first_k_dense_replace; 1 in every "
                             "release)", freq);
    if (m->top_k > m->experts)
        return hlx_jdoc_fail(doc, "/num_experts_per_tok", HLX_ERR_PARSE,
                             "%d exceeds n_routed_experts %d", m->top_k, m->experts);
    if (m->dense_layers > m->layers)
        return hlx_jdoc_fail(doc, "/first_k_dense_replace", HLX_ERR_PARSE,
                             "%d exceeds num_hidden_layers %d", m->dense_layers, m->layers);
    m->shared_gate = 0;
    hlx_hf_gating_set(c, HLX_MOE_SOFTMAX, norm, 1.0, 1, 1);
    return HLX_OK;
}

/* GptOssConfig's defaults for the keys a config.json may leave out (transformers'
 * configuration_gpt_oss.py; gpt-oss-120b's shapes). */
#define HLX_GPT_OSS_EXPERTS   128
#define HLX_GPT_OSS_TOP_K     4
#define HLX_GPT_OSS_WINDOW    128
#define HLX_GPT_OSS_ALPHA     1.702
#define HLX_GPT_OSS_LIMIT     7.0

void hlx_hf_gpt_oss_layer(hlx_hf_config_t *c)
{
    hlx_model_t *m = &c->m;

    m->ffn_act = HLX_ACT_SWIGLU_CLAMP;
    m->dense_layers = 0;
    m->shared_experts = 0;
    m->shared_gate = 0;
    m->attn_sinks = 1;
    m->router_bias = 1;
    m->expert_bias = 1;
    hlx_hf_gating_set(c, HLX_MOE_SOFTMAX, 1, 1.0, 1, 1);
}

/* gpt-oss (GptOssForCausalLM; transformers' modeling_gpt_oss.py, vLLM's gpt_oss.py): every
 * layer num_local_experts experts of intermediate_size, the router's logits (with its bias)
 * cut to the num_experts_per_tok best (older configs: experts_per_token) and softmaxed over
 * those (a softmax over all, renormalised: the same weights), each expert's gate and up with
 * their biases through the clamped SwiGLU (swiglu_alpha, swiglu_limit), then down with its
 * bias; a sink logit per query head; sliding_window on layers 0, 2, ... (layer_types, which
 * must alternate so; null: no window). */
static hlx_status_t hlx_cfg_gpt_oss(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    json_t *root = hlx_jdoc_root(doc), *lt;
    hlx_model_t *m = &c->m;
    char path[48];
    int k2, l, nslide;
    hlx_status_t st;

    /* its experts are fused tensors, read through views of floating-point ones only */
    if (c->fp8 || c->packing.pack)
        return hlx_jdoc_fail(doc, "/quantization_config", HLX_ERR_UNSUPPORTED, "%s weights are "
                             "not read for %s: its fused experts are read in bf16, f16 or f32 "
                             "(dequantize the checkpoint first)",
                             c->fp8 ? (c->int8 ? "int8" : "fp8") : "integer-packed", c->arch);
    HLX_TRY(hlx_cfg_count_not_null(doc, c, "num_local_experts"));
    HLX_TRY(hlx_cfg_count_not_null(doc, c, "num_experts_per_tok"));
    HLX_TRY(hlx_cfg_int(doc, "num_local_experts", 0, HLX_GPT_OSS_EXPERTS, 1, &m->experts));
    HLX_TRY(hlx_cfg_int(doc, "experts_per_token", 0, HLX_GPT_OSS_TOP_K, 1, &k2));
    HLX_TRY(hlx_cfg_int(doc, "num_experts_per_tok", 0, k2, 1, &m->top_k));
    if (!hlx_cfg_absent(doc, "num_experts_per_tok") && !hlx_cfg_absent(doc, "experts_per_token") &&
        !json_is_null(json_object_get(root, "num_experts_per_tok")) &&
        !json_is_null(json_object_get(root, "experts_per_token")) && k2 != m->top_k)
        return hlx_jdoc_fail(doc, "/experts_per_token", HLX_ERR_PARSE, "%d contradicts "
                             "num_experts_per_tok %d (two spellings of one key): remove one",
                             k2, m->top_k);
    if (m->top_k > m->experts)
        return hlx_jdoc_fail(doc, hlx_cfg_absent(doc, "num_experts_per_tok")
                                      ? "/experts_per_token" : "/num_experts_per_tok",
                             HLX_ERR_PARSE, "%d exceeds num_local_experts %d%s", m->top_k,
                             m->experts, hlx_cfg_absent(doc, "num_local_experts")
                                 ? " (absent: GptOssConfig's 128; give the model's value)" : "");
    HLX_TRY(hlx_cfg_num(doc, "swiglu_alpha", HLX_GPT_OSS_ALPHA, 1e-6, 1e6, &m->act_alpha));
    HLX_TRY(hlx_cfg_num(doc, "swiglu_limit", HLX_GPT_OSS_LIMIT, -1e300, 1e6, &m->act_limit));
    if (!(m->act_limit >= 1e-6)) /* the model file's act_limit: [1e-6, 1e6] */
        return hlx_jdoc_fail(doc, "/swiglu_limit", HLX_ERR_PARSE, "%g: the clamp of gate and up "
                             "must be > 0, at least 1e-06 (the releases: 7.0)", m->act_limit);
    m->expert_ffn = m->ffn;
    hlx_hf_gpt_oss_layer(c);
    /* the window: sliding_window (128; null: none) on the layers layer_types calls
     * sliding_attention: layers 0, 2, 4, ... (GptOssConfig's default), every layer, or
     * none (every layer full_attention: no window, whatever sliding_window says) */
    HLX_TRY(hlx_cfg_int(doc, "sliding_window", 0, HLX_GPT_OSS_WINDOW, 1, &m->sliding_window));
    if (json_is_null(json_object_get(root, "sliding_window")))
        m->sliding_window = 0;
    HLX_TRY(hlx_cfg_layer_types(doc, m, &lt));
    for (l = 0, nslide = 0; lt != NULL && l < m->layers; l++)
        nslide += hlx_cfg_layer_sliding(lt, l);
    for (l = 0; lt != NULL && nslide > 0 && nslide < m->layers && l < m->layers; l++) {
        int sliding = hlx_cfg_layer_sliding(lt, l);
        snprintf(path, sizeof(path), "/layer_types/%d", l);
        if (sliding != ((l + 1) % 2 != 0))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "layer_types[%d] is \"%s\", which "
                                 "breaks gpt-oss's pattern (\"sliding_attention\" on layers 0, "
                                 "2, 4, ..., \"full_attention\" on 1, 3, 5, ...; or one kind on "
                                 "every layer: the ones the runtime runs)", l,
                                 sliding ? "sliding_attention" : "full_attention");
    }
    if (lt != NULL && nslide == 0)
        m->sliding_window = 0;
    m->sliding_pattern = m->sliding_window > 0 && !(lt != NULL && nslide == m->layers) ? 2 : 0;
    m->sliding_from = 0;
    return HLX_OK;
}

/* gpt-oss's RoPE when config.json has no rope_scaling key: GptOssConfig's yarn (factor 32 over 4096
 * positions, beta_fast 32, beta_slow 1, truncate false), put in the document as
 * rope_scaling so that hlx_cfg_rope_scaling reads it as any other; a v5 rope_parameters
 * without a rope_type gets those keys beside its base (in the per-layer-type form, each set
 * without one). */
static hlx_status_t hlx_cfg_gpt_oss_rope(hlx_jdoc_t *doc)
{
    json_t *root = hlx_jdoc_root(doc), *rs = json_object_get(root, "rope_scaling");
    json_t *rp = json_object_get(root, "rope_parameters"), *def, *f, *sl;
    hlx_status_t st;
    int i;

    /* given, even as null: GptOssConfig(rope_scaling=None) keeps plain RoPE, as the class
     * stores what it is given (null is read as none, as for every class) */
    if (rs != NULL)
        return HLX_OK;
    HLX_TRY(hlx_cfg_rope_types(doc, &f, &sl));
    if (f != NULL) { /* each set without a kind */
        json_t *sets[2] = { f, sl };
        for (i = 0; i < 2; i++) {
            if (sets[i] == NULL || json_object_get(sets[i], "rope_type") != NULL)
                continue;
            def = json_pack("{s:s, s:f, s:f, s:f, s:b}", "rope_type", "yarn", "factor", 32.0,
                            "beta_fast", 32.0, "beta_slow", 1.0, "truncate", 0);
            if (def != NULL && json_object_get(root, "original_max_position_embeddings") == NULL)
                json_object_set_new(def, "original_max_position_embeddings", json_integer(4096));
            if (def == NULL || json_object_update_missing(sets[i], def) != 0) {
                json_decref(def);
                return HLX_ERR_NOMEM;
            }
            json_decref(def);
        }
        return HLX_OK;
    }
    if (json_is_object(rp) && json_object_get(rp, "rope_type") != NULL)
        return HLX_OK;
    /* (a top-level original_max_position_embeddings is the one read: hlx_cfg_rs_orig_top) */
    def = json_pack("{s:s, s:f, s:f, s:f, s:b}", "rope_type", "yarn", "factor", 32.0,
                    "beta_fast", 32.0, "beta_slow", 1.0, "truncate", 0);
    if (def != NULL && json_object_get(root, "original_max_position_embeddings") == NULL)
        json_object_set_new(def, "original_max_position_embeddings", json_integer(4096));
    if (def == NULL)
        return HLX_ERR_NOMEM;
    if (json_is_object(rp)) {
        int rc = json_object_update_missing(rp, def);
        json_decref(def);
        return rc == 0 ? HLX_OK : HLX_ERR_NOMEM;
    }
    return json_object_set_new(root, "rope_scaling", def) == 0 ? HLX_OK : HLX_ERR_NOMEM;
}

/* SmolLM3Config's NoPE layers (hlx_model_t.nope_pattern): no_rope_layers, one 1 (RoPE) or 0
 * (none) per layer, which must follow one pattern (the first 0 sets it: every P-th layer
 * unrotated); without it every no_rope_layer_interval-th layer (4) is, as the class derives
 * the list. layer_types may only say full_attention (a window is use_sliding_window's,
 * refused by hlx_cfg_sliding). */
static hlx_status_t hlx_cfg_nope(hlx_jdoc_t *doc, hlx_hf_config_t *c, int empty_default);

static hlx_status_t hlx_cfg_smollm3(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    json_t *lt;
    hlx_model_t *m = &c->m;
    int l;
    char path[48];
    hlx_status_t st;

    HLX_TRY(hlx_cfg_layer_types(doc, m, &lt));
    for (l = 0; lt != NULL && l < m->layers; l++)
        if (hlx_cfg_layer_sliding(lt, l)) {
            snprintf(path, sizeof(path), "/layer_types/%d", l);
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "layer_types[%d] \"sliding_attention\" "
                                 "is not read for %s (every layer attends to the whole "
                                 "context; its releases list full_attention alone)", l, c->arch);
        }
    return hlx_cfg_nope(doc, c, 0);
}

/* no_rope_layers (a list of 1 for a layer with RoPE, 0 for one without) or, where absent or
 * null (or empty, where empty_default: Llama4TextConfig's falsy list), every
 * no_rope_layer_interval-th layer (4) without: m->nope_pattern, the list refused unless it
 * is such a pattern. */
static hlx_status_t hlx_cfg_nope(hlx_jdoc_t *doc, hlx_hf_config_t *c, int empty_default)
{
    json_t *nl = json_object_get(hlx_jdoc_root(doc), "no_rope_layers"), *v;
    hlx_model_t *m = &c->m;
    int interval, pat = 0, l, rope;
    char path[48];
    hlx_status_t st;

    HLX_TRY(hlx_cfg_int(doc, "no_rope_layer_interval", 0, 4, 1, &interval));
    if (nl == NULL || json_is_null(nl) ||
        (empty_default && json_is_array(nl) && json_array_size(nl) == 0)) {
        if (interval == 1)
            return hlx_jdoc_fail(doc, "/no_rope_layer_interval", HLX_ERR_PARSE, "1 would leave "
                                 "every layer without RoPE");
        m->nope_pattern = interval <= m->layers ? interval : 0;
        return HLX_OK;
    }
    if (!json_is_array(nl) || json_array_size(nl) < (size_t)m->layers)
        return hlx_jdoc_fail(doc, "/no_rope_layers", HLX_ERR_PARSE, "expected a list of at "
                             "least num_hidden_layers (%d) integers, 1 for a layer with RoPE, "
                             "0 for one without", m->layers);
    for (l = 0; l < m->layers; l++) {
        v = json_array_get(nl, (size_t)l);
        snprintf(path, sizeof(path), "/no_rope_layers/%d", l);
        if (!json_is_integer(v) || (json_integer_value(v) != 0 && json_integer_value(v) != 1))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "no_rope_layers[%d]: expected 1 "
                                 "(RoPE) or 0 (none)", l);
        if (pat == 0 && json_integer_value(v) == 0)
            pat = l + 1;
    }
    if (pat == 1) { /* the first layer unrotated: the list is no pattern helix reads */
        for (l = 1; l < m->layers && json_integer_value(json_array_get(nl, (size_t)l)) == 0; l++)
            ;
        if (l == m->layers)
            return hlx_jdoc_fail(doc, "/no_rope_layers/0", HLX_ERR_PARSE, "no_rope_layers[0] "
                                 "is 0 and so is every other: a model without RoPE on any "
                                 "layer is not read");
        return hlx_jdoc_fail(doc, "/no_rope_layers/0", HLX_ERR_PARSE, "no_rope_layers[0] is "
                             "0 but no_rope_layers[%d] is 1: only one layer without RoPE in "
                             "every P is read (layer P - 1 the first, as "
                             "no_rope_layer_interval sets it), and layer 0 unrotated would "
                             "make P 1", l);
    }
    for (l = 0; l < m->layers; l++) {
        rope = (int)json_integer_value(json_array_get(nl, (size_t)l));
        snprintf(path, sizeof(path), "/no_rope_layers/%d", l);
        if (rope != !(pat > 1 && (l + 1) % pat == 0))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "no_rope_layers[%d] = %d breaks the "
                                 "pattern of one layer without RoPE in every %d (as the first "
                                 "0 sets it; no_rope_layer_interval's form)", l, rope, pat);
    }
    m->nope_pattern = pat;
    return HLX_OK;
}

/* A key Llama4TextConfig reads as a truth value (attn_temperature_tuning: its releases
 * write 4; use_qk_norm): true, false, null (false, as None tests) or a number (true unless
 * 0). */
static hlx_status_t hlx_cfg_truthy(hlx_jdoc_t *doc, const char *key, int def, int *out)
{
    json_t *v = json_object_get(hlx_jdoc_root(doc), key);
    char path[64];

    *out = def;
    if (v == NULL)
        return HLX_OK;
    if (json_is_null(v) || json_is_boolean(v)) {
        *out = json_is_true(v);
        return HLX_OK;
    }
    if (json_is_number(v)) {
        *out = json_number_value(v) != 0.0;
        return HLX_OK;
    }
    snprintf(path, sizeof(path), "/%s", key);
    return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "expected true, false or a number");
}

/* Llama4TextConfig's keys beyond Llama's (its defaults where absent, Scout's): the routed
 * experts' and the shared expert's width intermediate_size, the dense layers' MLP
 * intermediate_size_mlp (16384), num_local_experts (16), num_experts_per_tok (1), MoE layers
 * every interleave_moe_layer_step-th (1) or as moe_layers lists them (which must be that
 * pattern); the router's sigmoid score scaling the expert's input, one shared expert;
 * no_rope_layers (its empty list: every no_rope_layer_interval-th layer NoPE); the RoPE
 * layers' chunked attention of attention_chunk_size (8192; null: none) and, by use_qk_norm
 * (true), their q and k heads L2-normalised; the NoPE layers' query temperature by
 * attn_temperature_tuning (true), floor_scale (8192) and attn_scale (0.1); layer_types, when
 * given, must say chunked_attention for the RoPE layers and full_attention for the others. */
static hlx_status_t hlx_cfg_llama4(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    hlx_model_t *m = &c->m;
    json_t *root = hlx_jdoc_root(doc), *ml = json_object_get(root, "moe_layers");
    json_t *lt = json_object_get(root, "layer_types"), *ch;
    int step, l, n, tune, qkn, floor_scale;
    double scale;
    char path[48];
    hlx_status_t st;

    /* null is no count: Llama4TextConfig stores the None and the model fails on it (absent
     * takes the default) */
    HLX_TRY(hlx_cfg_count_not_null(doc, c, "intermediate_size_mlp"));
    HLX_TRY(hlx_cfg_count_not_null(doc, c, "num_local_experts"));
    HLX_TRY(hlx_cfg_count_not_null(doc, c, "num_experts_per_tok"));
    HLX_TRY(hlx_cfg_count_not_null(doc, c, "interleave_moe_layer_step"));
    m->expert_ffn = m->ffn; /* intermediate_size */
    HLX_TRY(hlx_cfg_int(doc, "intermediate_size_mlp", 0, 16384, 1, &m->ffn));
    HLX_TRY(hlx_cfg_int(doc, "num_local_experts", 0, 16, 1, &m->experts));
    HLX_TRY(hlx_cfg_int(doc, "num_experts_per_tok", 0, 1, 1, &m->top_k));
    if (m->top_k > m->experts)
        return hlx_jdoc_fail(doc, "/num_experts_per_tok", HLX_ERR_PARSE,
                             "%d exceeds num_local_experts %d", m->top_k, m->experts);
    HLX_TRY(hlx_cfg_int(doc, "interleave_moe_layer_step", 0, 1, 1, &step));
    if (step > m->layers)
        return hlx_jdoc_fail(doc, "/interleave_moe_layer_step", HLX_ERR_PARSE,
                             "%d exceeds num_hidden_layers %d (no MoE layer)", step, m->layers);
    if (ml != NULL && !json_is_null(ml)) {
        /* Llama4TextConfig takes the list as given: it must be the step's layers */
        n = m->layers / step; /* layers step - 1, 2 step - 1, ... below num_hidden_layers */
        if (!json_is_array(ml) || json_array_size(ml) != (size_t)n)
            return hlx_jdoc_fail(doc, "/moe_layers", HLX_ERR_UNSUPPORTED, "expected the %d "
                                 "layers %d, %d, ... that interleave_moe_layer_step %d sets (MoE "
                                 "layers in another pattern are not run)", n, step - 1,
                                 2 * step - 1, step);
        for (l = 0; l < n; l++) {
            json_t *v = json_array_get(ml, (size_t)l);
            snprintf(path, sizeof(path), "/moe_layers/%d", l);
            if (!json_is_integer(v) || json_integer_value(v) != (json_int_t)l * step + step - 1)
                return hlx_jdoc_fail(doc, path, HLX_ERR_UNSUPPORTED, "moe_layers[%d]: expected "
                                     "layer %d (interleave_moe_layer_step %d: layers %d, %d, "
                                     "...; MoE layers in another pattern are not run)", l,
                                     l * step + step - 1, step, step - 1, 2 * step - 1);
        }
    }
    m->dense_layers = 0;
    m->moe_step = step > 1 ? step : 0;
    m->shared_experts = 1;
    m->moe_weight_input = 1;
    hlx_hf_gating_set(c, HLX_MOE_SIGMOID, 0, 1.0, 1, 1);
    HLX_TRY(hlx_cfg_nope(doc, c, 1));
    ch = json_object_get(root, "attention_chunk_size");
    if (ch == NULL || !json_is_null(ch))
        HLX_TRY(hlx_cfg_int(doc, "attention_chunk_size", 0, 8192, 1, &m->sliding_window));
    m->window_chunked = m->sliding_window > 0;
    m->sliding_pattern = m->sliding_window > 0 ? m->nope_pattern : 0;
    if (lt != NULL && !json_is_null(lt)) {
        if (!json_is_array(lt) || json_array_size(lt) != (size_t)m->layers)
            return hlx_jdoc_fail(doc, "/layer_types", HLX_ERR_PARSE, "expected a list of "
                                 "num_hidden_layers (%d) strings", m->layers);
        for (l = 0; l < m->layers; l++) {
            const char *t = json_string_value(json_array_get(lt, (size_t)l));
            const char *want = hlx_model_layer_rope(m, l) ? "chunked_attention"
                                                          : "full_attention";
            snprintf(path, sizeof(path), "/layer_types/%d", l);
            if (t == NULL || strcmp(t, want))
                return hlx_jdoc_fail(doc, path, HLX_ERR_UNSUPPORTED, "layer_types[%d]: "
                                     "expected \"%s\" (chunked attention on the layers with RoPE, the "
                                     "whole context on the NoPE ones, as Llama4TextConfig "
                                     "sets them)", l, want);
        }
    }
    /* use_qk_norm as Llama4TextAttention tests it: null (None) is false, not the default */
    HLX_TRY(hlx_cfg_truthy(doc, "use_qk_norm", 1, &qkn));
    m->qk_norm = m->qk_norm_unit = qkn;
    HLX_TRY(hlx_cfg_truthy(doc, "attn_temperature_tuning", 1, &tune));
    if (tune && m->nope_pattern > 0) { /* read by the NoPE layers: a None fails there */
        HLX_TRY(hlx_cfg_count_not_null(doc, c, "floor_scale"));
        if (json_is_null(json_object_get(root, "attn_scale")))
            return hlx_jdoc_fail(doc, "/attn_scale", HLX_ERR_PARSE, "null is not a number: "
                                 "%s would fail on it (absent takes the class's 0.1)", c->arch);
    }
    HLX_TRY(hlx_cfg_int(doc, "floor_scale", 0, 8192, 1, &floor_scale));
    HLX_TRY(hlx_cfg_num(doc, "attn_scale", 0.1, 0.0, 1e6, &scale));
    if (tune && m->nope_pattern > 0) {
        m->attn_temp_floor = floor_scale;
        m->attn_temp_scale = scale;
    }
    return HLX_OK;
}

/* GemmaConfig's, Gemma2Config's and Gemma3TextConfig's keys beyond Llama's, with their
 * defaults where absent: hidden_activation (gelu_pytorch_tanh: GeGLU; another is refused;
 * Gemma 1: null too, whatever hidden_act says, as vLLM's GemmaForCausalLM runs it),
 * query_pre_attn_scalar (256), sliding_window (4096; null: none) on every layer but each
 * P-th, or as layer_types lists them (which must be such a pattern); the embedding times
 * sqrt(hidden) always. Gemma 3: P = sliding_window_pattern (6), rope_local_base_freq
 * (10000) on the windowed layers, unscaled; its softcappings, null, are refused when set.
 * Gemma 2: P = 2 (its class alternates, windowed first), one RoPE base, and
 * attn_logit_softcapping (50) and final_logit_softcapping (30), null for none. Gemma 1
 * (GemmaConfig): no window, no query_pre_attn_scalar (1 / sqrt(head_dim), as vLLM scales
 * it whatever the key says), no capping (set: refused). */
static hlx_status_t hlx_cfg_gemma(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    static const char *const caps[] = { "attn_logit_softcapping", "final_logit_softcapping" };
    json_t *root = hlx_jdoc_root(doc), *lt;
    hlx_model_t *m = &c->m;
    const int g2 = hlx_hf_gemma2(c), g1 = hlx_hf_gemma1(c);
    double *capv[] = { &m->attn_softcap, &m->final_softcap };
    char act[32], path[48];
    int pat, l, full = -1;
    size_t i;
    hlx_status_t st;

    /* (Gemma 1's first configs name "gelu" in hidden_act alone; vLLM runs the tanh form
     * unless hidden_activation says otherwise: the exact GELU released was a mistake) */
    HLX_TRY(hlx_cfg_str(doc, "hidden_activation", "gelu_pytorch_tanh", act, sizeof(act)));
    if (strcmp(act, "gelu_pytorch_tanh"))
        return hlx_jdoc_fail(doc, "/hidden_activation", HLX_ERR_PARSE, "\"%s\" is not supported "
                             "(the FFN runs GELU's tanh form: \"gelu_pytorch_tanh\"%s)", act,
                             g1 && !strcmp(act, "gelu") ? "; vLLM would run the exact GELU "
                             "here: remove the key for the tanh form Gemma was trained with"
                             : "");
    m->ffn_act = HLX_ACT_GELU_TANH;
    m->embed_scale = 1;
    for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
        json_t *v = json_object_get(root, caps[i]);
        snprintf(path, sizeof(path), "/%s", caps[i]);
        if (g2 && (v == NULL || !json_is_null(v)))
            HLX_TRY(hlx_cfg_num(doc, caps[i], i == 0 ? 50.0 : 30.0, 1e-6, 1e9, capv[i]));
        else if (v != NULL && !json_is_null(v))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "soft-capping is read for "
                                 "Gemma2ForCausalLM only (Gemma 3's configs leave it null, "
                                 "GemmaConfig has none)");
    }
    if (g1) { /* every layer whole, scores by 1 / sqrt(head_dim) */
        m->attn_scalar = 0.0;
        m->sliding_window = 0;
        m->sliding_pattern = 0;
        m->rope_local_theta = 0.0;
        return HLX_OK;
    }
    HLX_TRY(hlx_cfg_num(doc, "query_pre_attn_scalar", 256.0, 1e-6, 1e9, &m->attn_scalar));
    if (!g2)
        HLX_TRY(hlx_cfg_num(doc, "rope_local_base_freq", 10000.0, 1e-9, 1e12,
                            &m->rope_local_theta));
    HLX_TRY(hlx_cfg_int(doc, "sliding_window", 0, 4096, 1, &m->sliding_window));
    if (json_is_null(json_object_get(root, "sliding_window")))
        m->sliding_window = 0;
    /* layer_types (newer configs), which must follow one pattern: the first full layer gives
     * it; Gemma2Config has no sliding_window_pattern: layer_types, or alternating */
    HLX_TRY(hlx_cfg_layer_types(doc, m, &lt));
    for (l = 0; lt != NULL && full < 0 && l < m->layers; l++)
        if (!hlx_cfg_layer_sliding(lt, l))
            full = l;
    pat = lt != NULL ? full + 1 : g2 ? 2 : 6;
    if (!g2)
        HLX_TRY(hlx_cfg_int(doc, "sliding_window_pattern", 0, pat, 0, &pat));
    for (l = 0; lt != NULL && l < m->layers; l++) {
        int is_full = !hlx_cfg_layer_sliding(lt, l);
        snprintf(path, sizeof(path), "/layer_types/%d", l);
        if (is_full != (pat > 0 && (l + 1) % pat == 0))
            return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "layer %d is \"%s\", which breaks the "
                                 "pattern of one full_attention layer in every %d (%s; %s)", l,
                                 is_full ? "full_attention" : "sliding_attention", pat,
                                 g2 || hlx_cfg_absent(doc, "sliding_window_pattern")
                                     ? "as the first full_attention layer sets it"
                                     : "sliding_window_pattern",
                                 g2 ? "Gemma 2's: sliding_attention and full_attention in turn"
                                    : "Gemma 3's: 5 sliding_attention, then 1 full_attention");
    }
    if (pat == 1 || m->sliding_window == 0) { /* every layer whole */
        m->sliding_window = 0;
        m->rope_local_theta = 0.0;
        pat = 0;
    }
    m->sliding_pattern = pat;
    return HLX_OK;
}

/* A multimodal config's text model, where its class takes several: Mistral3's is read when
 * it is Mistral's (Mistral Small 3.1); its later text models (ministral3, mistral4's MLA)
 * are other layers. Qwen3-VL's must be its own (qwen3_vl_text, the one class its config
 * builds; another name is another checkpoint). */
static hlx_status_t hlx_cfg_text_model_type(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    char tt[32];
    hlx_status_t st;
    size_t i;

    if (hlx_hf_llava(c)) { /* when text_config names none: LlavaConfig's, LlavaNextConfig's,
                            * Idefics3Config's and SmolVLMConfig's llama,
                            * LlavaOnevisionConfig's and InternVLConfig's qwen2 */
        const int q = hlx_hf_wrap(c) == HLX_HF_WRAP_LLAVA_QWEN2;
        if ((st = hlx_cfg_str(doc, "model_type", q ? "qwen2" : "llama", tt, sizeof(tt))) !=
            HLX_OK)
            return st;
        if (hlx_hf_idefics3(c) && strcmp(tt, "llama"))
            return hlx_jdoc_fail(doc, "/model_type", HLX_ERR_PARSE, "\"%s\" is not read: %s's "
                                 "text model is read when it is Llama's (\"llama\": vLLM runs it "
                                 "with Llama's layer whatever text_config names)", tt, c->arch);
        for (i = 0; i < HLX_HF_NTEXT; i++)
            if (!strcmp(tt, hlx_hf_text_classes[i].model_type)) {
                snprintf(c->text_type, sizeof(c->text_type), "%s", tt);
                c->m.qkv_bias = hlx_hf_text_classes[i].qkv_bias;
                c->m.qk_norm = hlx_hf_text_classes[i].qk_norm;
                return HLX_OK;
            }
        return hlx_jdoc_fail(doc, "/model_type", HLX_ERR_PARSE, "\"%s\" is not read: a %s's "
                             "text model is read when it is Llama's, Mistral's, Qwen2's or "
                             "Qwen3's (\"llama\", \"mistral\", \"qwen2\", \"qwen3\")", tt,
                             c->arch);
    }
    if (hlx_hf_qwen3_vl(c)) { /* Qwen3VLConfig builds Qwen3VLTextConfig whatever it names */
        const char *own = hlx_hf_text_class(c)->model_type;
        if ((st = hlx_cfg_str(doc, "model_type", own, tt, sizeof(tt))) != HLX_OK)
            return st;
        if (strcmp(tt, own))
            return hlx_jdoc_fail(doc, "/model_type", HLX_ERR_PARSE, "\"%s\" is not read: "
                                 "%s's text model is read when it is its own (\"%s\": vLLM "
                                 "runs it with Qwen3%s's layer whatever text_config names)", tt,
                                 c->arch, own, hlx_hf_qwen3_vl_moe(c) ? "-MoE" : "");
        return HLX_OK;
    }
    if (hlx_hf_wrap(c) != HLX_HF_WRAP_MISTRAL3)
        return HLX_OK;
    if ((st = hlx_cfg_str(doc, "model_type", "mistral", tt, sizeof(tt))) != HLX_OK)
        return st;
    if (strcmp(tt, "mistral"))
        return hlx_jdoc_fail(doc, "/model_type", HLX_ERR_PARSE, "\"%s\" is not read: "
                             "Mistral3ForConditionalGeneration's text model is read when it is "
                             "Mistral's (\"mistral\", Mistral Small 3.1)", tt);
    return HLX_OK;
}

/* Qwen2.5-1M's and Qwen3-2507's dual_chunk_attention_config ({"chunk_size": 262144,
 * "local_size": 8192, "original_max_position_embeddings": 262144, ...}): applied as vLLM
 * applies it (hlx_model_t.dca_chunk), with vLLM's defaults for absent keys (8192, 1024, 0).
 * Its sparse_attention_* keys choose vLLM's approximate prefill kernels, not the model's
 * attention: not read. hlx_cfg_dca_check refuses what it does not combine with. */
static int hlx_dca_size(json_int_t v) { return v >= 2 && v <= (1 << 30); }
static int hlx_dca_nonneg(json_int_t v) { return v >= 0 && v <= (1 << 30); }

int hlx_hf_reads_dca(const hlx_hf_config_t *c)
{
    const hlx_hf_base_t b = hlx_hf_base(c); /* a LLaVA-style class: its text class's */

    /* the text classes of those bases, and a LLaVA, LLaVA-OneVision or InternVL text_config
     * of qwen2 or qwen3 (vLLM builds Qwen2's or Qwen3's model from that text_config, which
     * reads the key there), not Qwen2-VL's nor Qwen3-VL's (their multimodal RoPE) */
    return (!(c->fused & HLX_HF_NESTED) || hlx_hf_llava(c)) &&
           (b == HLX_HF_BASE_QWEN2 || b == HLX_HF_BASE_QWEN2_MOE || b == HLX_HF_BASE_QWEN3 ||
            b == HLX_HF_BASE_QWEN3_MOE);
}

int hlx_hf_reads_nope(const hlx_hf_config_t *c)
{
    return hlx_hf_base(c) == HLX_HF_BASE_SMOLLM3;
}

int hlx_hf_gpt_oss(const hlx_hf_config_t *c)
{
    return hlx_hf_base(c) == HLX_HF_BASE_GPT_OSS;
}

static hlx_status_t hlx_cfg_dca(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    json_t *d = json_object_get(hlx_jdoc_root(doc), "dual_chunk_attention_config");
    const char *at = "/dual_chunk_attention_config";
    json_int_t cs, ls, orig;
    hlx_status_t st;

    if (d == NULL || json_is_null(d))
        return HLX_OK;
    if (!hlx_hf_reads_dca(c))
        return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE, "dual chunk attention is applied to "
                             "Qwen2ForCausalLM, Qwen2MoeForCausalLM, Qwen3ForCausalLM and "
                             "Qwen3MoeForCausalLM, and to a LLaVA-style text_config of qwen2 "
                             "or qwen3, only (vLLM reads the key for those alone); remove it "
                             "to run %s%s%s", c->arch, c->text_type[0] ? " with text model " : "",
                             c->text_type);
    if (!json_is_object(d))
        return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE, "expected an object (chunk_size, "
                             "local_size, original_max_position_embeddings) or null");
    if ((st = hlx_cfg_qint(doc, d, "chunk_size", at, 8192, hlx_dca_size,
                           "an integer chunk size from 2 to 2^30", &cs)) != HLX_OK ||
        (st = hlx_cfg_qint(doc, d, "local_size", at, 1024, hlx_dca_nonneg,
                           "an integer local size from 0 to 2^30", &ls)) != HLX_OK ||
        (st = hlx_cfg_qint(doc, d, "original_max_position_embeddings", at, 0, hlx_dca_nonneg,
                           "an integer from 0 (no factor on keys and queries) to 2^30",
                           &orig)) != HLX_OK)
        return st;
    if (ls >= cs)
        return hlx_jdoc_fail(doc, json_object_get(d, "local_size")
                                      ? "/dual_chunk_attention_config/local_size" : at,
                             HLX_ERR_PARSE, "local_size %lld%s must be below chunk_size %lld "
                             "(the chunks are chunk_size - local_size positions long)",
                             (long long)ls, json_object_get(d, "local_size")
                                                ? "" : " (vLLM's default, the key being absent)",
                             (long long)cs);
    c->m.dca_chunk = (int)cs;
    c->m.dca_local = (int)ls;
    c->m.dca_orig  = (int)orig;
    return HLX_OK;
}

/* After the shapes and the RoPE scaling: what dual chunk attention is not run with. */
static hlx_status_t hlx_cfg_dca_check(hlx_jdoc_t *doc, const hlx_hf_config_t *c)
{
    char why[256];

    if (hlx_model_dca_check(&c->m, why, sizeof(why)) == NULL)
        return HLX_OK;
    return hlx_jdoc_fail(doc, "/dual_chunk_attention_config", HLX_ERR_PARSE, "%s", why);
}

/* tie_word_embeddings: Gemma3TextConfig's default true, elsewhere false. A multimodal
 * config's text_config says, or where it has no such key its top level does (transformers
 * v5 keeps Qwen2-VL's there); Idefics3's, SmolVLM's and Qwen3-VL's text_config alone (vLLM
 * ties by text_config's key, false without it: LlamaConfig's, Qwen3VLTextConfig's; it reads
 * no top-level one). */
static hlx_status_t hlx_cfg_tie(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    /* (SmolLM3Config's default is true too) */
    const int def = !!(c->fused & HLX_HF_GEMMA) || hlx_hf_base(c) == HLX_HF_BASE_SMOLLM3 ||
                    hlx_hf_base(c) == HLX_HF_BASE_STARCODER2; /* Starcoder2Config's too */
    hlx_status_t st;

    if (!(c->fused & HLX_HF_NESTED) || hlx_hf_idefics3(c) || hlx_hf_qwen3_vl(c) ||
        json_object_get(hlx_jdoc_root(doc), "tie_word_embeddings"))
        return hlx_cfg_bool(doc, "tie_word_embeddings", def, &c->tie_word_embeddings);
    if ((st = hlx_jdoc_scope(doc, NULL)) != HLX_OK) /* the top level, then the text again */
        return st;
    st = hlx_cfg_bool(doc, "tie_word_embeddings", def, &c->tie_word_embeddings);
    if (st == HLX_OK && json_is_object(json_object_get(hlx_jdoc_root(doc), "text_config")))
        st = hlx_jdoc_scope(doc, "text_config");
    return st;
}

/* GraniteForCausalLM (GraniteConfig): Llama's layer with four multipliers, each 1 when
 * absent: embedding_multiplier on the embedding, attention_multiplier as the softmax scale
 * (in place of 1 / sqrt(head_dim): attn_scalar 1 / a^2), residual_multiplier on each
 * attention and FFN output before the residual add, logits_scaling dividing the logits. */
static hlx_status_t hlx_cfg_granite(hlx_jdoc_t *doc, hlx_model_t *m)
{
    static const char *const keys[] = { "embedding_multiplier", "attention_multiplier",
                                        "residual_multiplier", "logits_scaling" };
    double e, a, r, s;
    char at[48];
    size_t i;
    hlx_status_t st;

    for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) /* null: GraniteModel would fail */
        if (json_is_null(json_object_get(hlx_jdoc_root(doc), keys[i]))) {
            snprintf(at, sizeof(at), "/%s", keys[i]);
            return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE, "null is not a multiplier (absent: "
                                 "GraniteConfig's 1.0)");
        }
    HLX_TRY(hlx_cfg_num(doc, "embedding_multiplier", 1.0, 1e-9, 1e9, &e));
    HLX_TRY(hlx_cfg_num(doc, "attention_multiplier", 1.0, 1e-9, 1e9, &a));
    HLX_TRY(hlx_cfg_num(doc, "residual_multiplier", 1.0, 1e-9, 1e9, &r));
    HLX_TRY(hlx_cfg_num(doc, "logits_scaling", 1.0, 1e-9, 1e9, &s));
    m->embed_mult = e != 1.0 ? e : 0.0;
    m->attn_scalar = 1.0 / (a * a);
    m->residual_mult = r != 1.0 ? r : 0.0;
    m->logits_scale = s != 1.0 ? s : 0.0;
    return HLX_OK;
}

/* GraniteMoeSharedForCausalLM (GraniteMoeSharedConfig): shared_intermediate_size (0 when
 * absent) is the width of a shared MLP (GraniteMoeSharedMLP: SiLU(gate) x up, then
 * output_linear) every token runs beside the routed experts, its output added to theirs
 * unweighted before residual_multiplier; 0 builds none (plain Granite MoE), as transformers
 * and vLLM do. The runtime's shared FFN is whole experts of intermediate_size: a width that
 * is not a multiple of it is refused, as are null (GraniteMoeSharedDecoderLayer compares it
 * with 0 and builds nn.Linear(hidden, None x 2), which fails) and a negative one. */
static hlx_status_t hlx_cfg_granite_shared(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    hlx_model_t *m = &c->m;
    json_t *v = json_object_get(hlx_jdoc_root(doc), "shared_intermediate_size");
    int fs;
    hlx_status_t st;

    if (json_is_null(v))
        return hlx_jdoc_fail(doc, "/shared_intermediate_size", HLX_ERR_PARSE,
                             "null is not a width: GraniteMoeSharedForCausalLM would fail on "
                             "it (give 0 for no shared MLP, absent is 0, or the model's width)");
    HLX_TRY(hlx_cfg_int(doc, "shared_intermediate_size", 0, 0, 0, &fs));
    HLX_TRY(hlx_cfg_shared_whole(doc, m, "shared_intermediate_size", fs, "intermediate_size"));
    m->shared_gate = 0;
    return HLX_OK;
}

/* GraniteMoeForCausalLM (GraniteMoeConfig; vLLM's granitemoe.py): Granite's layer
 * (hlx_cfg_granite's multipliers, residual_multiplier on the routed FFN's output too) where
 * every layer's FFN is num_local_experts (8) experts of intermediate_size, the
 * num_experts_per_tok (2) best router logits softmaxed among themselves (GraniteMoeTopKGating;
 * vLLM's renormalised softmax over all, the same weights). Its attention takes head_dim as
 * hidden_size / num_attention_heads whatever the key says, and no biases in vLLM (transformers
 * reads attention_bias: refused by hlx_cfg_dense). Refused: a head_dim other than that, a
 * position_embedding_type other than "rope" (transformers' NoPE where vLLM rotates), quantized
 * weights (the fused experts are read in the checkpoint's float dtype). */
static hlx_status_t hlx_cfg_granitemoe(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    const hlx_model_t *m = &c->m;
    json_t *q = json_object_get(hlx_jdoc_root(doc), "quantization_config");
    char pe[16];
    hlx_status_t st;

    if ((int64_t)m->hidden % m->q_heads != 0 || m->head_dim != m->hidden / m->q_heads)
        return hlx_jdoc_fail(doc, hlx_cfg_absent(doc, "head_dim") ? "/num_attention_heads"
                                                                  : "/head_dim",
                             HLX_ERR_PARSE, "GraniteMoeForCausalLM takes hidden_size / "
                             "num_attention_heads as its head size, whole: %d x %d is not "
                             "hidden_size %d", m->head_dim, m->q_heads, m->hidden);
    HLX_TRY(hlx_cfg_str(doc, "position_embedding_type", "rope", pe, sizeof(pe)));
    if (strcmp(pe, "rope"))
        return hlx_jdoc_fail(doc, "/position_embedding_type", HLX_ERR_UNSUPPORTED,
                             "\"%s\": transformers leaves q and k unrotated, vLLM's "
                             "GraniteMoeForCausalLM rotates them: the two decode differently "
                             "(Granite MoE's releases say \"rope\" or leave it out)", pe);
    if (q != NULL && !json_is_null(q))
        return hlx_jdoc_fail(doc, "/quantization_config", HLX_ERR_UNSUPPORTED,
                             "%s's experts are read fused in the checkpoint's float dtype "
                             "(F32, BF16, F16), not quantized", c->arch);
    HLX_TRY(hlx_cfg_mixtral(doc, c)); /* Mixtral's expert keys, defaults and routing */
    return hlx_hf_granite_shared(c) ? hlx_cfg_granite_shared(doc, c) : HLX_OK;
}

/* Idefics3's or SmolVLM's config without a text_config (or a null one): Idefics3Config and
 * SmolVLMConfig then build LlamaConfig's defaults with rms_norm_eps 1e-5 (*eps_p), the top
 * level's keys being theirs, not the text model's. Read as an empty text_config. */
static hlx_status_t hlx_cfg_text_absent(hlx_jdoc_t *doc, double *eps_p)
{
    json_t *empty = json_object();

    if (empty == NULL || json_object_set_new(hlx_jdoc_root(doc), "text_config", empty) != 0)
        return HLX_ERR_NOMEM;
    *eps_p = 1e-5;
    return hlx_jdoc_scope(doc, "text_config");
}

/* vllm_class's attention takes hidden_size / num_attention_heads as its head size whatever
 * head_dim says, transformers' takes head_dim where given: refused where the two differ. */
static hlx_status_t hlx_cfg_head_whole(hlx_jdoc_t *doc, const hlx_hf_config_t *c,
                                       const char *vllm_class)
{
    const hlx_model_t *m = &c->m;

    if ((int64_t)m->head_dim * m->q_heads == m->hidden)
        return HLX_OK;
    return hlx_jdoc_fail(doc, hlx_cfg_absent(doc, "head_dim") ? "/num_attention_heads"
                                                              : "/head_dim",
                         HLX_ERR_PARSE, "head size %d x num_attention_heads %d is not "
                         "hidden_size %d: vLLM's %s takes hidden_size / num_attention_heads "
                         "as its head size, transformers' takes head_dim, and they would "
                         "decode differently", m->head_dim, m->q_heads, m->hidden, vllm_class);
}

/* OLMo 2 (Olmo2ForCausalLM, Olmo2Config's keys): Llama's projections and SwiGLU, no input
 * norms, the attention's and the MLP's outputs normalised before the residual adds, and
 * q_norm and k_norm each over its whole projection (weights [Q x d] and [K x d]) before
 * RoPE. vLLM's Olmo2Attention takes hidden_size / num_attention_heads as its head size
 * (and hidden_size as q_norm's width) whatever head_dim says, transformers' takes head_dim
 * where given: refused where the two differ. Projection biases (attention_bias) are
 * refused by hlx_cfg_dense; vLLM builds none. */
static hlx_status_t hlx_cfg_olmo2(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    hlx_model_t *m = &c->m;
    hlx_status_t st;

    HLX_TRY(hlx_cfg_head_whole(doc, c, "Olmo2ForCausalLM"));
    m->post_norms = m->post_norms_only = 1;
    m->qk_norm_proj = 1;
    return HLX_OK;
}

/* StarCoder2 (Starcoder2ForCausalLM, Starcoder2Config's keys and defaults): LayerNorms
 * (nn.LayerNorm: weights and biases, eps norm_epsilon, 1e-5 when absent; rms_norm_eps is
 * not its key), every Linear biased or none by use_bias (true when absent: q, k, v, o_proj,
 * c_fc, c_proj), the plain MLP c_fc -> hidden_act -> c_proj, hidden_act gelu_pytorch_tanh
 * when absent (gelu_new is the same tanh form; silu read too; the exact erf GELU refused).
 * Read before the dense family's keys, which then leave these alone. */
static hlx_status_t hlx_cfg_starcoder2_keys(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    static const char *const nonull[] = { "hidden_act", "norm_epsilon" };
    hlx_model_t *m = &c->m;
    char act[32], path[32];
    int bias;
    size_t i;
    hlx_status_t st;

    /* null: Starcoder2Config stores the None it is given, which its layers fail on
     * (ACT2FN[None], nn.LayerNorm(eps=None)); refused at the key rather than read as the
     * default an absent key takes */
    for (i = 0; i < sizeof(nonull) / sizeof(nonull[0]); i++) {
        if (!json_is_null(json_object_get(hlx_jdoc_root(doc), nonull[i])))
            continue;
        snprintf(path, sizeof(path), "/%s", nonull[i]);
        return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "null: %s would fail on it (absent "
                             "takes the class's default, %s; give the model's value)", c->arch,
                             i == 0 ? "gelu_pytorch_tanh" : "1e-05");
    }
    HLX_TRY(hlx_cfg_str(doc, "hidden_act", "gelu_pytorch_tanh", act, sizeof(act)));
    if (!strcmp(act, "gelu_pytorch_tanh") || !strcmp(act, "gelu_new"))
        m->ffn_act = HLX_ACT_GELU_TANH;
    else if (!strcmp(act, "silu"))
        m->ffn_act = HLX_ACT_SILU;
    else
        return hlx_jdoc_fail(doc, "/hidden_act", HLX_ERR_PARSE, "\"%s\" is not supported for "
                             "%s (its MLP runs gelu_pytorch_tanh, gelu_new or silu; the "
                             "releases say gelu_pytorch_tanh)", act, c->arch);
    /* null: transformers 4's nn.Linear(bias=None) builds none, v5's strict config refuses
     * it; refused here rather than read as either */
    if (json_is_null(json_object_get(hlx_jdoc_root(doc), "use_bias")))
        return hlx_jdoc_fail(doc, "/use_bias", HLX_ERR_PARSE, "null: give true or false (the "
                             "releases say true)");
    HLX_TRY(hlx_cfg_bool(doc, "use_bias", 1, &bias));
    m->qkv_bias = m->o_bias = m->ffn_bias = bias;
    HLX_TRY(hlx_cfg_num(doc, "norm_epsilon", 1e-5, 1e-30, 1.0, &m->norm_eps));
    m->norm_layer = m->ffn_plain = 1;
    return HLX_OK;
}

/* StarCoder2's shapes: vLLM's Starcoder2Attention takes hidden_size / num_attention_heads
 * as its head size whatever head_dim says, transformers' takes head_dim where given:
 * refused where the two differ. */
static hlx_status_t hlx_cfg_starcoder2(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    return hlx_cfg_head_whole(doc, c, "Starcoder2ForCausalLM");
}

static hlx_status_t hlx_cfg_dense(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    hlx_model_t *m = &c->m;
    hlx_status_t st;
    char act[32];
    int bias = 0; /* hlx_cfg_bool sets it before any read; GCC -O2 cannot tell */

    m->attn = HLX_ATTN_GQA;
    /* every dense family's FFN but Gemma's (hlx_cfg_gemma) is SiLU(gate) x up; another
     * activation decodes other tokens */
    if (hlx_hf_base(c) == HLX_HF_BASE_STARCODER2) /* its activation, biases and norms */
        HLX_TRY(hlx_cfg_starcoder2_keys(doc, c));
    HLX_TRY(hlx_cfg_str(doc, "hidden_act", "silu", act, sizeof(act)));
    if (strcmp(act, "silu") && !(c->fused & HLX_HF_GEMMA) && !m->ffn_plain)
        return hlx_jdoc_fail(doc, "/hidden_act", HLX_ERR_PARSE, "\"%s\" is not supported (the "
                             "FFN runs SiLU(gate) x up: \"silu\")", act);
    /* Qwen2's biases are fixed by its class, which reads no attention_bias; GLM's key puts
     * them on q, k and v (true by default); elsewhere it puts biases on q, k, v and o alike,
     * and o's is not run */
    if (c->fused & HLX_HF_ROPE_PAIRS) {
        HLX_TRY(hlx_cfg_bool(doc, "attention_bias", 1, &bias));
        m->qkv_bias = bias;
    }
    /* GLM-4.5: the same key (Glm4MoeConfig: false when absent; true in the releases), and
     * q and k head norms by use_qk_norm (false; GLM-4.5 and 4.6 true, 4.5-Air false) */
    if (hlx_hf_base(c) == HLX_HF_BASE_GLM4_MOE) {
        HLX_TRY(hlx_cfg_bool(doc, "attention_bias", 0, &bias));
        m->qkv_bias = bias;
        HLX_TRY(hlx_cfg_bool(doc, "use_qk_norm", 0, &bias));
        m->qk_norm = bias;
    }
    /* Seed-OSS: attention_bias (SeedOssConfig: true when absent) puts biases on q, k and v
     * alone, attention_out_bias (false) one on o_proj, which is not run */
    if (hlx_hf_base(c) == HLX_HF_BASE_SEED_OSS) {
        HLX_TRY(hlx_cfg_bool(doc, "attention_bias", 1, &bias));
        m->qkv_bias = bias;
        HLX_TRY(hlx_cfg_bool(doc, "attention_out_bias", 0, &bias));
        if (bias)
            return hlx_jdoc_fail(doc, "/attention_out_bias", HLX_ERR_PARSE, "a bias on o_proj "
                                 "is not supported (Seed-OSS's releases say false)");
    }
    /* InternLM3 (Llama's layout): "qkv_bias" puts biases on q, k and v, "bias" on o_proj and
     * the FFN; both false by default */
    if (hlx_hf_base(c) == HLX_HF_BASE_INTERNLM3) {
        static const char *const keys[] = { "qkv_bias", "bias" };
        size_t i;
        char path[16];
        for (i = 0; i < 2; i++) {
            HLX_TRY(hlx_cfg_bool(doc, keys[i], 0, &bias));
            snprintf(path, sizeof(path), "/%s", keys[i]);
            if (bias)
                return hlx_jdoc_fail(doc, path, HLX_ERR_PARSE, "biases on %s are not "
                                     "supported (InternLM3's checkpoints say false)",
                                     i == 0 ? "q, k and v" : "o_proj and the FFN");
        }
    }
    /* InternLM2Config's "bias" (true when absent) puts biases on wqkv and wo */
    if (c->fused & HLX_HF_QKV_GROUPED) {
        HLX_TRY(hlx_cfg_bool(doc, "bias", 1, &bias));
        if (bias)
            return hlx_jdoc_fail(doc, "/bias", HLX_ERR_PARSE, "%s: biases on wqkv and wo are "
                                 "not supported (InternLM2's checkpoints say \"bias\": false)",
                                 hlx_cfg_absent(doc, "bias")
                                     ? "absent, which InternLM2Config takes as true" : "true");
    }
    /* gpt-oss: attention_bias (GptOssConfig: true when absent) puts biases on q, k, v and
     * o_proj alike, all read */
    if (hlx_hf_base(c) == HLX_HF_BASE_GPT_OSS) {
        HLX_TRY(hlx_cfg_bool(doc, "attention_bias", 1, &bias));
        m->qkv_bias = m->o_bias = bias;
    }
    HLX_TRY(hlx_cfg_bool(doc, "attention_bias", 0, &bias));
    if (bias && !m->qkv_bias)
        return hlx_jdoc_fail(doc, "/attention_bias", HLX_ERR_PARSE,
                             "projection biases are not supported for %s (q, k, v and o_proj; "
                             "Qwen2ForCausalLM's q, k and v biases are)", c->arch);
    HLX_TRY(hlx_cfg_bool(doc, "mlp_bias", 0, &bias));
    if (bias && !m->ffn_plain)
        return hlx_jdoc_fail(doc, "/mlp_bias", HLX_ERR_PARSE, "FFN biases are not supported");
    if (hlx_hf_granite(c))
        HLX_TRY(hlx_cfg_granite(doc, m));
    /* absent: all query heads (LlamaConfig), 8 (MistralConfig, MixtralConfig,
     * Glm4MoeConfig, SeedOssConfig), 2 of 128 (GlmConfig), 4 of 256 (Gemma3TextConfig), 4
     * whatever the query heads (SmolLM3Config), 16 whatever the query heads (GemmaConfig), 32
     * whatever the query heads (Qwen3VLTextConfig; its head_dim 128, as GlmConfig's and
     * SeedOssConfig's; Dots1Config, whose null is the query heads) */
    HLX_TRY(hlx_cfg_int(doc, "num_key_value_heads", 0,
                        hlx_hf_gemma1(c) ? 16
                        : c->fused & HLX_HF_GEMMA || hlx_hf_base(c) == HLX_HF_BASE_SMOLLM3 ? 4
                        : c->fused & HLX_HF_ROPE_PAIRS ? 2
                        : hlx_hf_qwen3_vl_moe(c) ? 16
                        : hlx_hf_qwen3_vl(c) ? 32
                        : hlx_hf_base(c) == HLX_HF_BASE_DOTS1 &&
                                  hlx_cfg_absent(doc, "num_key_value_heads") ? 32
                        /* Llama4TextConfig's 8; its null: the query heads */
                        : hlx_hf_base(c) == HLX_HF_BASE_LLAMA4 &&
                                  hlx_cfg_absent(doc, "num_key_value_heads") ? 8
                        : !hlx_hf_mistral(c) && hlx_hf_base(c) != HLX_HF_BASE_MIXTRAL &&
                                  hlx_hf_base(c) != HLX_HF_BASE_SEED_OSS &&
                                  hlx_hf_base(c) != HLX_HF_BASE_GPT_OSS &&
                                  hlx_hf_base(c) != HLX_HF_BASE_GLM4_MOE ? m->q_heads : 8, 1,
                        &m->kv_heads));
    HLX_TRY(hlx_cfg_int(doc, "head_dim", 0,
                        c->fused & HLX_HF_GEMMA ? 256
                        : hlx_hf_base(c) == HLX_HF_BASE_GPT_OSS ? 64 /* GptOssConfig's */
                        : c->fused & HLX_HF_ROPE_PAIRS ||
                                  /* Llama4TextConfig's 128; its null: H / heads */
                                  ((c->fused & HLX_HF_LLAMA4) && hlx_cfg_absent(doc, "head_dim")) ||
                                  hlx_hf_base(c) == HLX_HF_BASE_SEED_OSS ||
                                (hlx_hf_qwen3_vl(c) && !hlx_hf_qwen3_vl_moe(c)) ? 128
                        : m->hidden / m->q_heads, 1,
                        &m->head_dim));
    if (m->head_dim < 1)
        return hlx_jdoc_fail(doc, "/head_dim", HLX_ERR_PARSE,
                             "missing, and hidden_size / num_attention_heads is 0");
    /* InternLM2's attention has no head_dim: hidden_size / num_attention_heads, which must
     * be whole (its class refuses otherwise) */
    if ((c->fused & HLX_HF_QKV_GROUPED) && (int64_t)m->head_dim * m->q_heads != m->hidden)
        return hlx_jdoc_fail(doc, hlx_cfg_absent(doc, "head_dim") ? "/num_attention_heads"
                                                                  : "/head_dim",
                             HLX_ERR_PARSE, "InternLM2ForCausalLM takes hidden_size / "
                             "num_attention_heads as its head size: %d x %d is not "
                             "hidden_size %d", m->head_dim, m->q_heads, m->hidden);
    if (m->kv_heads > m->q_heads || m->q_heads % m->kv_heads != 0)
        return hlx_jdoc_fail(doc, "/num_key_value_heads", HLX_ERR_PARSE,
                             "%d does not divide num_attention_heads %d%s%s%s", m->kv_heads,
                             m->q_heads, hlx_cfg_absent(doc, "num_key_value_heads")
                                 ? " (absent from config.json: that is transformers' default "
                                   "for " : "",
                             hlx_cfg_absent(doc, "num_key_value_heads") ? c->arch : "",
                             hlx_cfg_absent(doc, "num_key_value_heads")
                                 ? "; give the model's value)" : "");
    if (m->head_dim % 2 != 0)
        return hlx_jdoc_fail(doc, "/head_dim", HLX_ERR_PARSE, "%d is odd (RoPE rotates pairs)",
                             m->head_dim);
    m->v_head_dim = m->head_dim;
    m->rope_dim = m->head_dim;
    m->dense_layers = m->layers;
    if (hlx_hf_row(c->arch)->rotary == 0) {
        /* only Phi-3's and GLM's (4, 4-0414, 4.5) attention rotate part of a head; the others
         * fail on it in transformers, or rotate the whole head */
        double f;
        const char *at;
        HLX_TRY(hlx_cfg_rotary_factor(doc, 1.0, &f, &at));
        if (f != 1.0)
            return hlx_jdoc_fail(doc, at, HLX_ERR_PARSE,
                                 "%g is read for Phi3ForCausalLM, GlmForCausalLM, "
                                 "Glm4ForCausalLM and Glm4MoeForCausalLM only (%s rotates "
                                 "whole heads)", f, c->arch);
    }
    if (c->fused & HLX_HF_GEMMA)
        return hlx_cfg_gemma(doc, c);
    if (hlx_hf_olmo2(c))
        return hlx_cfg_olmo2(doc, c);
    if (hlx_hf_base(c) == HLX_HF_BASE_STARCODER2)
        return hlx_cfg_starcoder2(doc, c);
    if (hlx_hf_base(c) == HLX_HF_BASE_SMOLLM3)
        return hlx_cfg_smollm3(doc, c);
    if (c->moe_gqa == HLX_HF_MOE_MIXTRAL)
        return hlx_cfg_mixtral(doc, c);
    if (hlx_hf_base(c) == HLX_HF_BASE_DOTS1)
        return hlx_cfg_dots1(doc, c);
    if (c->moe_gqa == HLX_HF_MOE_GLM4)
        return hlx_cfg_glm4_moe(doc, c);
    if (c->moe_gqa == HLX_HF_MOE_DEEPSEEK)
        return hlx_cfg_deepseek_moe(doc, c);
    if (c->moe_gqa == HLX_HF_MOE_GPT_OSS)
        return hlx_cfg_gpt_oss(doc, c);
    if (c->moe_gqa == HLX_HF_MOE_GRANITE)
        return hlx_cfg_granitemoe(doc, c);
    if (c->moe_gqa == HLX_HF_MOE_LLAMA4)
        return hlx_cfg_llama4(doc, c);
    if (c->moe_gqa)
        return hlx_cfg_qwen3_moe(doc, c);
    if (hlx_hf_row(c->arch)->rotary != 0)
        return hlx_cfg_partial_rotary(doc, m, hlx_hf_row(c->arch)->rotary);
    return HLX_OK;
}

/* Defaults of the keys a DeepseekV3ForCausalLM config.json may leave out: transformers'
 * DeepseekV3Config's (its router always scores with a sigmoid), so that a checkpoint
 * decodes as transformers would load it. A null counts as absent, except for q_lora_rank,
 * where null means no query compression (q_proj). */
#define HLX_DSV3_Q_LORA_RANK           1536
#define HLX_DSV3_N_SHARED_EXPERTS      1
#define HLX_DSV3_FIRST_K_DENSE_REPLACE 3
#define HLX_DSV3_SCORING_FUNC          "sigmoid"
#define HLX_DSV3_NORM_TOPK_PROB        1
#define HLX_DSV3_ROUTED_SCALING        2.5
#define HLX_DSV3_N_GROUP               8
#define HLX_DSV3_TOPK_GROUP            4
#define HLX_DSV3_NEXTN_LAYERS          1

/* " (n_group is absent from config.json: ...)" for the gating keys left out, appended to
 * the reason a combination is refused ("" when both are given). */
static void hlx_cfg_gating_note(hlx_jdoc_t *doc, const hlx_hf_config_t *c, char *note,
                                size_t len)
{
    int ng = hlx_cfg_absent(doc, "n_group"), tg = hlx_cfg_absent(doc, "topk_group");

    note[0] = '\0';
    if (ng && tg)
        snprintf(note, len, " (n_group and topk_group are absent from config.json: "
                 "transformers' DeepseekV3Config defaults %d and %d were taken; give the "
                 "model's values)", c->n_group, c->topk_group);
    else if (ng || tg)
        snprintf(note, len, " (%s is absent from config.json: transformers' DeepseekV3Config "
                 "default %d was taken; give the model's n_group and topk_group)",
                 ng ? "n_group" : "topk_group", ng ? c->n_group : c->topk_group);
}

/* DeepSeek-V2's gating (its modeling_deepseek.py MoEGate): softmax scores; topk_method
 * "greedy" takes the best experts, "group_limited_greedy" the best of the topk_group groups
 * whose best expert scores highest (moe_group_score max; V3 scores a group by its two
 * best); the weights are renormalised when norm_topk_prob, otherwise multiplied by
 * routed_scaling_factor (V3 does both): the two together are refused. Its MoE keys have no
 * default worth taking (the released configs give them all) except the gating's. */
static hlx_status_t hlx_cfg_dsv2_gating(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    char method[32];
    int freq;
    hlx_status_t st;

    HLX_TRY(hlx_cfg_str(doc, "topk_method", "greedy", method, sizeof(method)));
    HLX_TRY(hlx_cfg_int(doc, "moe_layer_freq", 0, 1, 1, &freq));
    if (strcmp(method, "greedy") && strcmp(method, "group_limited_greedy"))
        return hlx_jdoc_fail(doc, "/topk_method", HLX_ERR_PARSE,
                             "\"%s\" is not a DeepSeek-V2 routing (greedy or "
                             "group_limited_greedy)", method);
    if (!strcmp(method, "greedy"))
        c->n_group = c->topk_group = 1; /* the groups limit nothing */
    c->m.moe_group_score = HLX_MOE_GROUP_MAX;
    if (freq != 1)
        return hlx_jdoc_fail(doc, "/moe_layer_freq", HLX_ERR_UNSUPPORTED,
                             "%d: experts in every %d-th layer only are not supported (the "
                             "runtime's dense layers are the first_k_dense_replace first ones)",
                             freq, freq);
    if (strcmp(c->scoring_func, "softmax"))
        return hlx_jdoc_fail(doc, "/scoring_func", HLX_ERR_PARSE,
                             "\"%s\": DeepSeek-V2 scores with a softmax", c->scoring_func);
    if (c->norm_topk_prob && c->routed_scaling_factor != 1.0)
        return hlx_jdoc_fail(doc, "/routed_scaling_factor", HLX_ERR_UNSUPPORTED,
                             "%g with norm_topk_prob: DeepSeek-V2 applies one or the other, "
                             "the runtime both (DeepSeek-V3's way)", c->routed_scaling_factor);
    return HLX_OK;
}

static hlx_status_t hlx_cfg_moe_mla(hlx_jdoc_t *doc, hlx_hf_config_t *c)
{
    hlx_model_t *m = &c->m;
    hlx_status_t st;
    double rsf;
    const int v2 = hlx_hf_base(c) == HLX_HF_BASE_DEEPSEEK_V2;

    /* DeepSeek's releases keep a head of their own; its weights' reader takes lm_head.weight
     * by name (the dense families' reader is the one that ties) */
    if (c->tie_word_embeddings)
        return hlx_jdoc_fail(doc, "/tie_word_embeddings", HLX_ERR_PARSE, "true is not read for "
                             "%s (DeepSeek's checkpoints keep their own lm_head.weight)",
                             c->arch);
    m->attn = HLX_ATTN_MLA;
    m->kv_heads = 1;
    HLX_TRY(hlx_cfg_int(doc, "q_lora_rank", 0,
                        hlx_cfg_absent(doc, "q_lora_rank") ? HLX_DSV3_Q_LORA_RANK : 0, 0,
                        &m->q_lora_rank));
    HLX_TRY(hlx_cfg_int(doc, "kv_lora_rank", 1, 0, 1, &m->kv_lora_rank));
    HLX_TRY(hlx_cfg_int(doc, "qk_rope_head_dim", 1, 0, 2, &m->qk_rope_dim));
    HLX_TRY(hlx_cfg_int(doc, "qk_nope_head_dim", 1, 0, 1, &m->qk_nope_dim));
    HLX_TRY(hlx_cfg_int(doc, "v_head_dim", 1, 0, 1, &m->v_head_dim));
    HLX_TRY(hlx_cfg_int(doc, "n_routed_experts", 1, 0, 1, &m->experts));
    HLX_TRY(hlx_cfg_int(doc, "num_experts_per_tok", 1, 0, 1, &m->top_k));
    if (!v2) /* DeepseekV3MoE: None x moe_intermediate_size fails (V2's None: none) */
        HLX_TRY(hlx_cfg_count_not_null(doc, c, "n_shared_experts"));
    HLX_TRY(hlx_cfg_int(doc, "n_shared_experts", v2, HLX_DSV3_N_SHARED_EXPERTS, 0,
                        &m->shared_experts));
    HLX_TRY(hlx_cfg_int(doc, "moe_intermediate_size", 1, 0, 1, &m->expert_ffn));
    HLX_TRY(hlx_cfg_int(doc, "first_k_dense_replace", v2, HLX_DSV3_FIRST_K_DENSE_REPLACE, 0,
                        &m->dense_layers));
    HLX_TRY(hlx_cfg_str(doc, "scoring_func", v2 ? "softmax" : HLX_DSV3_SCORING_FUNC,
                        c->scoring_func, sizeof(c->scoring_func)));
    HLX_TRY(hlx_cfg_bool(doc, "norm_topk_prob", v2 ? 0 : HLX_DSV3_NORM_TOPK_PROB,
                         &c->norm_topk_prob));
    HLX_TRY(hlx_cfg_num(doc, "routed_scaling_factor", v2 ? 1.0 : HLX_DSV3_ROUTED_SCALING, 1e-6,
                        1e6, &rsf));
    HLX_TRY(hlx_cfg_int(doc, "n_group", 0, v2 ? 1 : HLX_DSV3_N_GROUP, 1, &c->n_group));
    HLX_TRY(hlx_cfg_int(doc, "topk_group", 0, v2 ? 1 : HLX_DSV3_TOPK_GROUP, 1, &c->topk_group));
    HLX_TRY(hlx_cfg_mtp(doc, c, v2 ? 0 : HLX_DSV3_NEXTN_LAYERS));
    c->routed_scaling_factor = rsf;
    if (v2 && (st = hlx_cfg_dsv2_gating(doc, c)) != HLX_OK)
        return st;
    if (strcmp(c->scoring_func, "sigmoid") && strcmp(c->scoring_func, "softmax"))
        return hlx_jdoc_fail(doc, "/scoring_func", HLX_ERR_PARSE,
                             "\"%s\" is not supported (sigmoid or softmax)", c->scoring_func);
    if (m->top_k > m->experts)
        return hlx_jdoc_fail(doc, "/num_experts_per_tok", HLX_ERR_PARSE,
                             "%d exceeds n_routed_experts %d", m->top_k, m->experts);
    if (m->dense_layers > m->layers)
        return hlx_jdoc_fail(doc, "/first_k_dense_replace", HLX_ERR_PARSE,
                             "%d exceeds num_hidden_layers %d%s", m->dense_layers, m->layers,
                             hlx_cfg_absent(doc, "first_k_dense_replace")
                                 ? " (absent from config.json: that is transformers' "
                                   "DeepseekV3Config default; give the model's value)"
                                 : "");
    if (m->qk_rope_dim % 2 != 0)
        return hlx_jdoc_fail(doc, "/qk_rope_head_dim", HLX_ERR_PARSE,
                             "%d is odd (RoPE rotates pairs)", m->qk_rope_dim);
    m->n_group = c->n_group;
    m->topk_group = c->topk_group;
    {
        /* the rules of a model file (model.c), under config.json's names */
        static const hlx_gating_keys_t keys = { "n_routed_experts", "num_experts_per_tok",
                                                "n_group", "topk_group" };
        const char *key = "n_group";
        char why[256], path[64], note[256];
        if ((st = hlx_model_gating_check(m, &keys, &key, why, sizeof(why))) != HLX_OK) {
            snprintf(path, sizeof(path), "/%s", key);
            hlx_cfg_gating_note(doc, c, note, sizeof(note));
            return hlx_jdoc_fail(doc, path, st, "%s%s", why, note);
        }
    }
    m->head_dim = m->qk_nope_dim + m->qk_rope_dim;
    m->rope_dim = m->qk_rope_dim;
    /* the gating as model fields, so that a checkpoint decodes as its config says */
    m->moe_scoring = !strcmp(c->scoring_func, "sigmoid") ? HLX_MOE_SIGMOID : HLX_MOE_SOFTMAX;
    m->norm_topk_prob = c->norm_topk_prob;
    m->routed_scaling = c->routed_scaling_factor;
    return HLX_OK;
}

/* layer_types as transformers writes it: "sliding_attention" for each windowed layer of m,
 * "full_attention" for the others. */
static json_t *hlx_hf_layer_types_json(const hlx_model_t *m)
{
    json_t *lt = json_array();
    int l;

    for (l = 0; l < m->layers; l++)
        json_array_append_new(lt, json_string(hlx_model_layer_window(m, l) > 0
                                                  ? "sliding_attention" : "full_attention"));
    return lt;
}

/* The checkpoint directory itself, before its config.json: a path that is missing, not a
 * directory, or a directory without config.json is named as such (rather than as a missing
 * "DIR/config.json"). */
static hlx_status_t hlx_hf_dir_check(const char *dir, const char *cfg_path, char *err,
                                     size_t errlen)
{
    struct stat sb;

    if (stat(dir, &sb) != 0)
        return hlx_errbuf(err, errlen, errno == ENOENT ? HLX_ERR_NOT_FOUND : HLX_ERR_INVALID,
                          "%s: %s (expected a Hugging Face checkpoint directory)", dir,
                          errno == ENOENT ? "no such directory" : strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return hlx_errbuf(err, errlen, HLX_ERR_INVALID, "%s: not a directory (a checkpoint is "
                          "a directory holding config.json and safetensors files)", dir);
    if (lstat(cfg_path, &sb) != 0 && errno == ENOENT)
        return hlx_errbuf(err, errlen, HLX_ERR_NOT_FOUND, "%s: no config.json in this directory "
                          "(not a Hugging Face checkpoint)", dir);
    return HLX_OK;
}

hlx_status_t hlx_hf_config_load(const char *dir, hlx_hf_config_t *c, char *err,
                                size_t errlen)
{
    char path[2048], name[128];
    hlx_jdoc_t *doc = NULL;
    hlx_model_t *m = &c->m;
    hlx_status_t st;
    const char *base;
    int gemma, g1, req, oss, maxpos;
    double eps = 0.0; /* rms_norm_eps' default: the class's, once it is known */
    double local = 0.0; /* OLMo 3's sliding_attention base (hlx_cfg_rope_per_type) */
    const struct hlx_hf_text_class *tc;

    memset(c, 0, sizeof(*c));
    m->routed_scaling = 1.0; /* the gating defaults of a model file (dense: unused) */
    m->n_group = m->topk_group = 1;
    snprintf(path, sizeof(path), "%s/config.json", dir);
    if ((st = hlx_hf_dir_check(dir, path, err, errlen)) != HLX_OK)
        return st;
    /* a named pipe would be read as an empty file (or block on a writer): refused by name */
    if ((st = hlx_ckpt_regular_file(path, "checkpoint config", err, errlen)) != HLX_OK)
        return st;
    st = hlx_cfg_load_object(path, &doc);
    if (st == HLX_OK)
        st = hlx_cfg_family(doc, c);
    if (st == HLX_OK)
        st = hlx_cfg_dtype(doc, c);
    if (st == HLX_OK)
        eps = hlx_hf_row(c->arch)->eps;
    /* a multimodal checkpoint: its text model's keys, read as a text model's config.json
     * (errors at their place inside text_config) */
    if (st == HLX_OK && (c->fused & HLX_HF_NESTED) && hlx_hf_qwen_vl(c) &&
        json_is_null(json_object_get(hlx_jdoc_root(doc), "text_config"))) {
        /* null: Qwen2VLConfig builds its text config from the top-level keys, as when absent */
    } else if (st == HLX_OK && hlx_hf_idefics3(c) &&
               (json_object_get(hlx_jdoc_root(doc), "text_config") == NULL ||
                json_is_null(json_object_get(hlx_jdoc_root(doc), "text_config")))) {
        st = hlx_cfg_text_absent(doc, &eps);
    } else if (st == HLX_OK && (c->fused & HLX_HF_NESTED) &&
               (st = hlx_jdoc_scope(doc, "text_config")) == HLX_ERR_NOT_FOUND) {
        st = hlx_hf_qwen_vl(c) /* Qwen2-VL's configs keep the text keys at the top (4.5x) */
                 ? HLX_OK
                 : hlx_jdoc_fail(doc, "/text_config", HLX_ERR_PARSE, "required key is missing "
                                 "(the text model's configuration)");
    }
    if (st == HLX_OK)
        st = hlx_cfg_text_model_type(doc, c);
    /* Gemma3TextConfig, Gemma2Config and GemmaConfig give all five (a 4B's text_config
     * leaves out most; GemmaConfig's are gemma-7b's); Gemma 1's and 2's vocabulary is
     * 256000; a LLaVA checkpoint's text class gives its own */
    gemma = !!(c->fused & HLX_HF_GEMMA);
    tc = hlx_hf_text_class(c);
    oss = hlx_hf_base(c) == HLX_HF_BASE_GPT_OSS; /* GptOssConfig's: gpt-oss-120b's shapes */
    req = !gemma && tc == NULL && !oss;
    g1 = hlx_hf_gemma1(c);
    if (st == HLX_OK &&
        ((st = hlx_cfg_int(doc, "num_hidden_layers", req,
                           tc ? tc->layers : oss ? 36 : g1 ? 28 : 26, 1, &m->layers)) ||
         (st = hlx_cfg_int(doc, "hidden_size", req,
                           tc ? tc->hidden : oss ? 2880 : g1 ? 3072 : 2304, 1, &m->hidden)) ||
         (st = hlx_cfg_int(doc, "num_attention_heads", req,
                           tc ? tc->heads : oss ? 64 : g1 ? 16 : 8, 1, &m->q_heads)) ||
         (st = hlx_cfg_int(doc, "intermediate_size", req,
                           tc ? tc->ffn : oss ? 2880 : g1 ? 24576 : 9216, 1, &m->ffn)) ||
         (st = hlx_cfg_int(doc, "vocab_size", req,
                           tc ? tc->vocab : oss ? 201088
                           : hlx_hf_gemma2(c) || g1 ? 256000 : 262208, 1,
                           &m->vocab)) ||
         (st = hlx_cfg_num(doc, "rope_theta",
                           hlx_hf_qwen3_vl(c) ? 5e6 /* Qwen3VLTextConfig's (4.57) */
                           : c->moe_gqa == HLX_HF_MOE_MIXTRAL || hlx_hf_qwen_vl(c) ||
                                   (gemma && !hlx_hf_gemma2(c) && !g1) ? 1e6
                           : hlx_hf_base(c) == HLX_HF_BASE_SMOLLM3 ? 2e6 /* SmolLM3Config's */
                           : oss ? 150000.0 /* GptOssConfig's */
                           : hlx_hf_base(c) == HLX_HF_BASE_LLAMA4 ? 500000.0
                                 : 10000.0,
                           1e-9, 1e12, &m->rope_theta)) ||
         (st = hlx_cfg_num(doc, "rms_norm_eps", eps, 1e-30, 1.0, &m->norm_eps)) ||
         /* checked wherever given, whether or not this model reads it */
         (st = hlx_cfg_max_pos(doc, &maxpos)) ||
         (st = hlx_cfg_tie(doc, c)))) {
        /* st holds the first error */
    }
    /* Gemma's window: hlx_cfg_gemma; gpt-oss's: hlx_cfg_gpt_oss */
    if (st == HLX_OK && !(c->fused & (HLX_HF_GEMMA | HLX_HF_LLAMA4)) && !oss)
        st = hlx_cfg_sliding(doc, c); /* Llama 4's chunks: hlx_cfg_llama4 */
    if (st == HLX_OK)
        st = hlx_cfg_dca(doc, c);
    if (st == HLX_OK)
        st = c->family == HLX_HF_DENSE ? hlx_cfg_dense(doc, c) : hlx_cfg_moe_mla(doc, c);
    if (st == HLX_OK && oss) /* GptOssConfig's yarn where none is given */
        st = hlx_cfg_gpt_oss_rope(doc);
    if (st == HLX_OK) /* after the shapes: longrope's factors are rope_dim / 2 */
        st = hlx_cfg_rope_scaling(doc, m,
                                  hlx_hf_qwen3_vl(c) ? HLX_MROPE_SECTIONS | HLX_MROPE_INTERLEAVED
                                  : hlx_hf_qwen_vl(c) ? HLX_MROPE_SECTIONS : 0);
    if (st == HLX_OK) /* v5's sets per layer type */
        st = hlx_cfg_rope_per_type(doc, c, &local);
    if (st == HLX_OK && hlx_hf_olmo3(c)) /* the windowed layers' unscaled RoPE */
        st = hlx_cfg_olmo3_rope(doc, m, local);
    if (st == HLX_OK)
        st = hlx_cfg_dca_check(doc, c);
    if (st == HLX_OK) {
        json_t *seed = json_object_get(hlx_jdoc_root(doc), "helix_synth_seed");
        c->synth_seed = json_is_integer(seed) && json_integer_value(seed) >= 0
                            ? (int64_t)json_integer_value(seed) : -1;
        if (hlx_cfg_str(doc, "_name_or_path", "", name, sizeof(name)) != HLX_OK || !name[0]) {
            base = strrchr(dir, '/');
            snprintf(name, sizeof(name), "%s", base && base[1] ? base + 1 : dir);
        }
        snprintf(m->name, sizeof(m->name), "%.63s", name);
        m->kv_dtype = HLX_DTYPE_BF16;
        m->tie_embeddings = c->tie_word_embeddings; /* the parameter count's */
    }
    if (st == HLX_OK) /* once the family is known (the MLA one takes block scales only) */
        st = hlx_cfg_fp8_layout(doc, "/quantization_config", c);
    if (st == HLX_OK && hlx_jdoc_scope(doc, NULL) == HLX_OK) /* once the layers are known */
        st = hlx_cfg_unquant(doc, json_object_get(hlx_jdoc_root(doc), "quantization_config"),
                             "/quantization_config", 0, c);
    if (st == HLX_OK)
        hlx_hf_plain(c);
    if (st != HLX_OK)
        snprintf(err, errlen, "%s", doc ? hlx_jdoc_error(doc) : path);
    else if (hlx_jdoc_scope(doc, NULL) == HLX_OK && /* the top level: not text_config */
             (json_object_get(hlx_jdoc_root(doc), "quantization_config") == NULL ||
              json_is_null(json_object_get(hlx_jdoc_root(doc), "quantization_config")))) {
        st = hlx_cfg_modelopt_file(dir, c, err, errlen);
        if (st == HLX_OK)
            st = hlx_cfg_quant_file(dir, c, err, errlen);
    }
    hlx_jdoc_free(doc);
    return st;
}

json_t *hlx_hf_dca_json(const hlx_model_t *m)
{
    return json_pack("{s:i, s:i, s:i}", "chunk_size", m->dca_chunk, "local_size",
                     m->dca_local, "original_max_position_embeddings", m->dca_orig);
}

void hlx_hf_rope_params_json(const hlx_model_t *m, json_t *o)
{
    int i;

    if (m->rope_kind == HLX_ROPE_NONE)
        return;
    json_object_set_new(o, "factor", json_real(m->rope_factor));
    if (m->rope_kind != HLX_ROPE_LINEAR && m->rope_kind != HLX_ROPE_DYNAMIC)
        json_object_set_new(o, "original_max_position_embeddings",
                            json_integer(m->rope_orig_ctx));
    if (m->rope_kind == HLX_ROPE_LLAMA3) {
        json_object_set_new(o, "low_freq_factor", json_real(m->rope_low_freq));
        json_object_set_new(o, "high_freq_factor", json_real(m->rope_high_freq));
    } else if (m->rope_kind == HLX_ROPE_YARN) {
        json_object_set_new(o, "beta_fast", json_real(m->rope_beta_fast));
        json_object_set_new(o, "beta_slow", json_real(m->rope_beta_slow));
        json_object_set_new(o, "mscale", json_real(m->rope_mscale));
        json_object_set_new(o, "mscale_all_dim", json_real(m->rope_mscale_all));
        if (m->rope_yarn_exact)
            json_object_set_new(o, "truncate", json_false());
        if (m->rope_attn_factor > 0)
            json_object_set_new(o, "attention_factor", json_real(m->rope_attn_factor));
    } else if (m->rope_kind == HLX_ROPE_LONGROPE) { /* the factor and original as read */
        json_t *sf = json_array(), *lf = json_array();
        for (i = 0; i < m->rope_dim / 2 && i < HLX_ROPE_MAX_PAIRS; i++) {
            json_array_append_new(sf, json_real(m->rope_short_factor[i]));
            json_array_append_new(lf, json_real(m->rope_long_factor[i]));
        }
        json_object_set_new(o, "short_factor", sf);
        json_object_set_new(o, "long_factor", lf);
        json_object_set_new(o, "attention_factor", json_real(m->rope_attn_factor));
    }
}

char *hlx_hf_config_text(const hlx_hf_config_t *c)
{
    const hlx_model_t *m = &c->m;
    json_t *o = json_object();
    char *text;

    if (o == NULL)
        return NULL;

    json_object_set_new(o, "architectures", json_pack("[s]", c->arch));
    json_object_set_new(o, "model_type", json_string(hlx_hf_model_type(c->arch)
                                                         ? hlx_hf_model_type(c->arch) : "llama"));
    json_object_set_new(o, "_name_or_path", json_string(m->name));
    json_object_set_new(o, "hidden_size", json_integer(m->hidden));
    json_object_set_new(o, "intermediate_size", json_integer(m->ffn));
    json_object_set_new(o, "num_hidden_layers", json_integer(m->layers));
    json_object_set_new(o, "num_attention_heads", json_integer(m->q_heads));
    json_object_set_new(o, "num_key_value_heads",
                        json_integer(c->family == HLX_HF_DENSE ? m->kv_heads : m->q_heads));
    json_object_set_new(o, "vocab_size", json_integer(m->vocab));
    json_object_set_new(o, "rope_theta", json_real(m->rope_theta));
    if (m->rope_kind != HLX_ROPE_NONE) {
        json_t *r = json_object();
        json_object_set_new(r, "rope_type", json_string(hlx_model_rope_kind_name(m->rope_kind)));
        hlx_hf_rope_params_json(m, r);
        json_object_set_new(o, "rope_scaling", r);
        if (m->rope_kind == HLX_ROPE_DYNAMIC) /* the context past which its base grows */
            json_object_set_new(o, "max_position_embeddings", json_integer(m->rope_orig_ctx));
    }
    if (m->dca_chunk > 0)
        json_object_set_new(o, "dual_chunk_attention_config", hlx_hf_dca_json(m));
    json_object_set_new(o, "rms_norm_eps", json_real(m->norm_eps));
    json_object_set_new(o, "tie_word_embeddings", json_boolean(c->tie_word_embeddings));
    json_object_set_new(o, "torch_dtype", json_string(c->torch_dtype));
    if (c->synth_seed >= 0)
        json_object_set_new(o, "helix_synth_seed", json_integer((json_int_t)c->synth_seed));
    if (c->family == HLX_HF_DENSE) {
        json_object_set_new(o, "head_dim", json_integer(m->head_dim));
        if (hlx_hf_gemma1(c)) { /* GemmaConfig's: gemma-1.1's form */
            json_object_set_new(o, "hidden_act", json_string("gelu_pytorch_tanh"));
            json_object_set_new(o, "hidden_activation", json_string("gelu_pytorch_tanh"));
        } else if (c->fused & HLX_HF_GEMMA) { /* Gemma3TextConfig's and Gemma2Config's */
            json_object_set_new(o, "hidden_activation", json_string("gelu_pytorch_tanh"));
            json_object_set_new(o, "query_pre_attn_scalar", json_real(m->attn_scalar));
            if (!hlx_hf_gemma2(c)) {
                json_object_set_new(o, "sliding_window_pattern",
                                    json_integer(m->sliding_pattern));
                json_object_set_new(o, "rope_local_base_freq", json_real(m->rope_local_theta));
            } else if (m->sliding_window > 0) { /* its pattern by layer_types */
                json_object_set_new(o, "layer_types", hlx_hf_layer_types_json(m));
            }
            json_object_set_new(o, "attn_logit_softcapping", m->attn_softcap > 0.0
                                    ? json_real(m->attn_softcap) : json_null());
            json_object_set_new(o, "final_logit_softcapping", m->final_softcap > 0.0
                                    ? json_real(m->final_softcap) : json_null());
        } else if (hlx_hf_base(c) == HLX_HF_BASE_STARCODER2) { /* Starcoder2Config's keys */
            json_object_set_new(o, "hidden_act", json_string(m->ffn_act == HLX_ACT_SILU
                                                             ? "silu" : "gelu_pytorch_tanh"));
            json_object_set_new(o, "norm_epsilon", json_real(m->norm_eps));
            json_object_set_new(o, "use_bias", json_boolean(m->ffn_bias));
            json_object_del(o, "rms_norm_eps");
        } else {
            json_object_set_new(o, "hidden_act", json_string("silu"));
        }
        if (hlx_hf_base(c) == HLX_HF_BASE_SEED_OSS) { /* SeedOssConfig's bias switches */
            json_object_set_new(o, "attention_bias", json_boolean(m->qkv_bias));
            json_object_set_new(o, "attention_out_bias", json_false());
        }
        if (hlx_hf_base(c) == HLX_HF_BASE_SMOLLM3) { /* SmolLM3Config's: the list and its
                                                      * interval, as the releases write them */
            json_t *nl = json_array();
            int l;
            for (l = 0; l < m->layers; l++)
                json_array_append_new(nl, json_integer(hlx_model_layer_rope(m, l)));
            json_object_set_new(o, "no_rope_layers", nl);
            json_object_set_new(o, "no_rope_layer_interval",
                                json_integer(m->nope_pattern > 1 ? m->nope_pattern : 4));
            json_object_set_new(o, "use_sliding_window", json_false());
        }
        if (hlx_hf_granite(c)) { /* GraniteConfig's multipliers */
            json_object_set_new(o, "embedding_multiplier", json_real(hlx_model_embed_scale(m)));
            json_object_set_new(o, "attention_multiplier",
                                json_real(hlx_model_softmax_scale(m, m->head_dim)));
            json_object_set_new(o, "residual_multiplier", json_real(hlx_model_residual_mult(m)));
            json_object_set_new(o, "logits_scaling",
                                json_real(m->logits_scale > 0.0 ? m->logits_scale : 1.0));
        }
        if (m->qk_norm && c->moe_gqa != HLX_HF_MOE_GLM4) /* Qwen3: q, k, v and o unbiased */
            json_object_set_new(o, "attention_bias", json_false());
        if (c->moe_gqa == HLX_HF_MOE_MIXTRAL || c->moe_gqa == HLX_HF_MOE_GRANITE) {
            /* Mixtral, Granite MoE: every layer intermediate_size experts */
            json_object_set_new(o, "num_local_experts", json_integer(m->experts));
            json_object_set_new(o, "num_experts_per_tok", json_integer(m->top_k));
            if (hlx_hf_granite_shared(c)) /* GraniteMoeSharedConfig's shared MLP width */
                json_object_set_new(o, "shared_intermediate_size",
                                    json_integer((json_int_t)m->shared_experts * m->expert_ffn));
        } else if (c->moe_gqa == HLX_HF_MOE_GLM4) { /* GLM-4.5, dots.llm1: DeepSeek-V3's */
            json_object_set_new(o, "attention_bias", json_boolean(m->qkv_bias));
            if (hlx_hf_base(c) == HLX_HF_BASE_GLM4_MOE) {
                json_object_set_new(o, "use_qk_norm", json_boolean(m->qk_norm));
                json_object_set_new(o, "num_nextn_predict_layers", json_integer(c->mtp_layers));
            } else { /* Dots1: the keys vLLM reads as its releases give them, no window */
                json_object_set_new(o, "scoring_func", json_string("sigmoid"));
                json_object_set_new(o, "topk_method", json_string("noaux_tc"));
                json_object_set_new(o, "moe_layer_freq", json_integer(1));
                json_object_set_new(o, "sliding_window", json_null());
                json_object_set_new(o, "max_window_layers", json_integer(m->layers));
            }
            json_object_set_new(o, "n_routed_experts", json_integer(m->experts));
            json_object_set_new(o, "num_experts_per_tok", json_integer(m->top_k));
            json_object_set_new(o, "n_shared_experts", json_integer(m->shared_experts));
            json_object_set_new(o, "moe_intermediate_size", json_integer(m->expert_ffn));
            json_object_set_new(o, "first_k_dense_replace", json_integer(m->dense_layers));
            json_object_set_new(o, "norm_topk_prob", json_boolean(c->norm_topk_prob));
            json_object_set_new(o, "routed_scaling_factor", json_real(c->routed_scaling_factor));
            json_object_set_new(o, "n_group", json_integer(c->n_group));
            json_object_set_new(o, "topk_group", json_integer(c->topk_group));
        } else if (c->moe_gqa == HLX_HF_MOE_DEEPSEEK) { /* DeepseekConfig's keys */
            json_object_set_new(o, "n_routed_experts", json_integer(m->experts));
            json_object_set_new(o, "num_experts_per_tok", json_integer(m->top_k));
            json_object_set_new(o, "n_shared_experts", json_integer(m->shared_experts));
            json_object_set_new(o, "moe_intermediate_size", json_integer(m->expert_ffn));
            json_object_set_new(o, "first_k_dense_replace", json_integer(m->dense_layers));
            json_object_set_new(o, "moe_layer_freq", json_integer(1));
            json_object_set_new(o, "norm_topk_prob", json_boolean(c->norm_topk_prob));
            json_object_set_new(o, "scoring_func", json_string("softmax"));
        } else if (c->moe_gqa == HLX_HF_MOE_GPT_OSS) { /* GptOssConfig's keys */
            json_t *lt = json_array();
            int l;
            for (l = 0; l < m->layers; l++)
                json_array_append_new(lt, json_string((l + 1) % 2 != 0 ? "sliding_attention"
                                                                       : "full_attention"));
            json_object_set_new(o, "attention_bias", json_boolean(m->qkv_bias));
            json_object_set_new(o, "num_local_experts", json_integer(m->experts));
            json_object_set_new(o, "num_experts_per_tok", json_integer(m->top_k));
            json_object_set_new(o, "experts_per_token", json_integer(m->top_k));
            json_object_set_new(o, "swiglu_limit", json_real(m->act_limit));
            if (m->act_alpha != HLX_GPT_OSS_ALPHA) /* GptOssConfig has none: its 1.702 */
                json_object_set_new(o, "swiglu_alpha", json_real(m->act_alpha));
            json_object_set_new(o, "layer_types", lt);
            if (m->sliding_window == 0)
                json_object_set_new(o, "sliding_window", json_null());
        } else if (c->moe_gqa == HLX_HF_MOE_LLAMA4) { /* Llama4TextConfig's keys */
            json_t *nl = json_array();
            int l;
            for (l = 0; l < m->layers; l++)
                json_array_append_new(nl, json_integer(hlx_model_layer_rope(m, l)));
            json_object_set_new(o, "intermediate_size", json_integer(m->expert_ffn));
            json_object_set_new(o, "intermediate_size_mlp", json_integer(m->ffn));
            json_object_set_new(o, "num_local_experts", json_integer(m->experts));
            json_object_set_new(o, "num_experts_per_tok", json_integer(m->top_k));
            json_object_set_new(o, "interleave_moe_layer_step",
                                json_integer(m->moe_step > 1 ? m->moe_step : 1));
            json_object_set_new(o, "no_rope_layers", nl);
            json_object_set_new(o, "no_rope_layer_interval",
                                json_integer(m->nope_pattern > 1 ? m->nope_pattern : 4));
            json_object_set_new(o, "attention_chunk_size", m->window_chunked
                                    ? json_integer(m->sliding_window) : json_null());
            json_object_set_new(o, "use_qk_norm", json_boolean(m->qk_norm));
            json_object_set_new(o, "attn_temperature_tuning", json_boolean(m->attn_temp_floor > 0));
            json_object_set_new(o, "floor_scale",
                                json_integer(m->attn_temp_floor > 0 ? m->attn_temp_floor : 8192));
            json_object_set_new(o, "attn_scale",
                                json_real(m->attn_temp_floor > 0 ? m->attn_temp_scale : 0.1));
            json_object_set_new(o, "attention_bias", json_false());
        } else if (c->moe_gqa) { /* Qwen2/3-MoE: experts after the first dense_layers */
            json_t *mol = json_array();
            int l;
            for (l = 0; l < m->dense_layers; l++)
                json_array_append_new(mol, json_integer(l));
            json_object_set_new(o, "num_experts", json_integer(m->experts));
            json_object_set_new(o, "num_experts_per_tok", json_integer(m->top_k));
            json_object_set_new(o, "moe_intermediate_size", json_integer(m->expert_ffn));
            json_object_set_new(o, "norm_topk_prob", json_boolean(m->norm_topk_prob));
            json_object_set_new(o, "decoder_sparse_step", json_integer(1));
            json_object_set_new(o, "mlp_only_layers", mol);
            if (c->moe_gqa == HLX_HF_MOE_QWEN2)
                json_object_set_new(o, "shared_expert_intermediate_size",
                                    json_integer((json_int_t)m->shared_experts * m->expert_ffn));
        }
        if (hlx_hf_olmo3(c)) { /* Olmo3Config's windows by layer_types, null: none */
            json_object_set_new(o, "layer_types", hlx_hf_layer_types_json(m));
            if (m->sliding_window == 0)
                json_object_set_new(o, "sliding_window", json_null());
        }
        if (m->sliding_window > 0 && !(c->fused & HLX_HF_LLAMA4)) /* Mistral, Mixtral, Phi-3:
                                                                  * every layer; Gemma: a
                                                                  * pattern (Llama 4: chunks,
                                                                  * above) */
            json_object_set_new(o, "sliding_window", json_integer(m->sliding_window));
        else if ((c->fused & HLX_HF_GEMMA) && !hlx_hf_gemma1(c)) /* none: Gemma3TextConfig's
                                                                  * default is 4096 */
            json_object_set_new(o, "sliding_window", json_null());
        if (hlx_hf_row(c->arch)->rotary != 0)
            json_object_set_new(o, "partial_rotary_factor",
                                json_real((double)m->rope_dim / m->head_dim));
        if (c->fused & HLX_HF_ROPE_PAIRS) /* GLM: q, k and v biases by this key */
            json_object_set_new(o, "attention_bias", json_boolean(m->qkv_bias));
        if (c->fused & HLX_HF_QKV_GROUPED) /* InternLM2Config: true when absent */
            json_object_set_new(o, "bias", json_false());
    } else {
        json_object_set_new(o, "q_lora_rank",
                            m->q_lora_rank ? json_integer(m->q_lora_rank) : json_null());
        json_object_set_new(o, "kv_lora_rank", json_integer(m->kv_lora_rank));
        json_object_set_new(o, "qk_rope_head_dim", json_integer(m->qk_rope_dim));
        json_object_set_new(o, "qk_nope_head_dim", json_integer(m->qk_nope_dim));
        json_object_set_new(o, "v_head_dim", json_integer(m->v_head_dim));
        json_object_set_new(o, "n_routed_experts", json_integer(m->experts));
        json_object_set_new(o, "num_experts_per_tok", json_integer(m->top_k));
        json_object_set_new(o, "n_shared_experts", json_integer(m->shared_experts));
        json_object_set_new(o, "moe_intermediate_size", json_integer(m->expert_ffn));
        json_object_set_new(o, "first_k_dense_replace", json_integer(m->dense_layers));
        json_object_set_new(o, "scoring_func", json_string(c->scoring_func));
        json_object_set_new(o, "norm_topk_prob", json_boolean(c->norm_topk_prob));
        json_object_set_new(o, "routed_scaling_factor", json_real(c->routed_scaling_factor));
        json_object_set_new(o, "n_group", json_integer(c->n_group));
        json_object_set_new(o, "topk_group", json_integer(c->topk_group));
        if (c->mtp_layers > 0)
            json_object_set_new(o, "num_nextn_predict_layers", json_integer(c->mtp_layers));
        if (hlx_hf_base(c) == HLX_HF_BASE_DEEPSEEK_V2)
            json_object_set_new(o, "topk_method",
                                json_string(c->n_group > 1 && c->topk_group < c->n_group
                                                ? "group_limited_greedy" : "greedy"));
        if (c->fp8)
            json_object_set_new(o, "quantization_config",
                                json_pack("{s:s, s:s, s:s, s:[i, i]}", "activation_scheme",
                                          "dynamic", "fmt", "e4m3", "quant_method", "fp8",
                                          "weight_block_size", c->block_rows, c->block_cols));
    }
    if (c->fp8 == HLX_HF_FP8_BLOCK && c->family == HLX_HF_DENSE && c->block_scale_plain)
        /* llm-compressor's FP8_BLOCK scheme */
        json_object_set_new(
            o, "quantization_config",
            json_pack("{s:s, s:s, s:{s:{s:[s], s:{s:i, s:s, s:s, s:[i, i], s:b, s:b}, s:{s:i, "
                      "s:s, s:s, s:i, s:b, s:b}}}, s:o}",
                      "quant_method", "compressed-tensors", "format", "float-quantized",
                      "config_groups", "group_0", "targets", "Linear", "weights", "num_bits", 8,
                      "type", "float", "strategy", "block", "block_structure", c->block_rows,
                      c->block_cols, "dynamic", 0, "symmetric", 1, "input_activations",
                      "num_bits", 8, "type", "float", "strategy", "group", "group_size",
                      c->block_cols, "dynamic", 1, "symmetric", 1,
                      "ignore", hlx_hf_ignore_json(c, 0)));
    if (c->fp8 == HLX_HF_FP8_BLOCK && c->family == HLX_HF_DENSE && !c->block_scale_plain)
        /* as Qwen3's FP8 releases */
        json_object_set_new(o, "quantization_config",
                            json_pack("{s:s, s:s, s:s, s:[i, i], s:o}", "activation_scheme",
                                      "dynamic", "fmt", "e4m3", "quant_method", "fp8",
                                      "weight_block_size", c->block_rows, c->block_cols,
                                      "modules_to_not_convert", hlx_hf_ignore_json(c, 1)));
    if (c->fp8 == HLX_HF_FP8_SCALE && c->fp8_form == HLX_HF_QF_FP8) /* AutoFP8's */
        json_object_set_new(o, "quantization_config",
                            json_pack("{s:s, s:s, s:o, s:o}", "quant_method", "fp8",
                                      "activation_scheme",
                                      c->fp8_input_scale ? "static" : "dynamic",
                                      "ignored_layers", hlx_hf_ignore_json(c, 1), "kv_cache_scheme",
                                      c->kv_scales ? json_string("static") : json_null()));
    if (c->fp8 == HLX_HF_FP8_SCALE && c->fp8_form == HLX_HF_QF_MODELOPT) /* its flat form */
        json_object_set_new(o, "quantization_config",
                            json_pack("{s:s, s:s, s:o, s:o, s:{s:s}}", "quant_method",
                                      "modelopt", "quant_algo", "FP8", "kv_cache_quant_algo",
                                      c->kv_scales ? json_string("FP8") : json_null(),
                                      "exclude_modules", hlx_hf_ignore_json(c, 1), "producer", "name",
                                      "modelopt"));
    if (c->fp8 == HLX_HF_FP8_SCALE && c->fp8_form == HLX_HF_QF_FBGEMM) /* Meta's */
        json_object_set_new(o, "quantization_config",
                            json_pack("{s:f, s:s, s:o}", "activation_scale_ub", 1200.0,
                                      "quant_method", "fbgemm_fp8", "modules_to_not_convert",
                                      hlx_hf_ignore_json(c, 1)));
    if (c->fp8 == HLX_HF_FP8_SCALE && c->fp8_form == HLX_HF_QF_CT) /* llm-compressor's */
        json_object_set_new(
            o, "quantization_config",
            json_pack("{s:s, s:s, s:{s:{s:[s], s:{s:i, s:s, s:s, s:b, s:b}, s:o}}, s:o}",
                      "quant_method", "compressed-tensors", "format", "float-quantized",
                      "config_groups", "group_0", "targets", "Linear", "weights", "num_bits", 8,
                      "type", "float", "strategy", c->fp8_channel ? "channel" : "tensor",
                      "dynamic", 0, "symmetric", 1, "input_activations",
                      c->fp8_input_scale
                          ? json_pack("{s:i, s:s, s:s, s:b, s:b}", "num_bits", 8, "type",
                                      "float", "strategy", "tensor", "dynamic", 0,
                                      "symmetric", 1)
                          : json_null(),
                      "ignore", hlx_hf_ignore_json(c, 0)));
    if (c->kv_scales && (c->fp8 != HLX_HF_FP8_SCALE || c->fp8_form == HLX_HF_QF_CT)) {
        /* beside fp8 weights, or alone as compressed-tensors writes it */
        json_t *qc = json_object_get(o, "quantization_config");
        if (qc == NULL) {
            qc = json_pack("{s:s, s:{}}", "quant_method", "compressed-tensors", "config_groups");
            json_object_set_new(o, "quantization_config", qc);
        }
        json_object_set_new(qc, "kv_cache_scheme",
                            json_pack("{s:i, s:s, s:s, s:b, s:b}", "num_bits", 8, "type", "float",
                                      "strategy", c->kv_scales == HLX_HF_KV_SCALES_HEAD
                                                      ? "attn_head" : "tensor",
                                      "dynamic", 0, "symmetric", 1));
    }
    text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    return text;
}

hlx_status_t hlx_hf_config_write(const char *dir, const hlx_hf_config_t *c, char *err,
                                 size_t errlen)
{
    char *text = hlx_hf_config_text(c);
    hlx_status_t st;

    if (text == NULL)
        return hlx_errbuf(err, errlen, HLX_ERR_NOMEM, "%s/config.json: out of memory", dir);
    st = hlx_ckpt_write_file(dir, "config.json", text, err, errlen);
    free(text);
    return st;
}

/* ---- expected tensors ---------------------------------------------------------------- */

const char *hlx_hf_class_name(hlx_hf_class_t c)
{
    static const char *const names[HLX_HFC_COUNT] = {
        "embedding", "attention", "norms", "dense_ffn", "routed_experts", "shared_experts",
        "router", "lm_head", "fp8_scales",
    };
    return (unsigned)c < HLX_HFC_COUNT ? names[c] : "?";
}

typedef struct {
    hlx_hf_expect_t *v;
    size_t           n, cap;
    const hlx_hf_config_t *c;
    /* the kinds of Linear layer met so far, in order (hlx_hf_expect_t.kind) */
    char             kinds[HLX_HF_MAX_KINDS][48];
    int              nkinds, last;
} hlx_elist_t;

const char *hlx_hf_kind_name(const char *name, char *buf, size_t len)
{
    static const char pre[] = "model.layers.";
    const char *p = name, *x;
    size_t n = 0;

    if (len == 0)
        return buf;
    if (!strncmp(p, pre, sizeof(pre) - 1) && isdigit((unsigned char)p[sizeof(pre) - 1])) {
        p += sizeof(pre) - 1;
        while (isdigit((unsigned char)*p))
            p++;
        p += *p == '.';
    }
    while (*p && n + 1 < len) {
        if (!strncmp(p, "experts.", 8) && isdigit((unsigned char)p[8]) &&
            (p == name || p[-1] == '.')) { /* an expert's index: "*" */
            for (x = p + 8; isdigit((unsigned char)*x); x++)
                ;
            if (*x == '.' && n + 10 < len) {
                memcpy(buf + n, "experts.*", 9);
                n += 9;
                p = x;
                continue;
            }
        }
        buf[n++] = *p++;
    }
    buf[n] = '\0';
    if (n >= 7 && !strcmp(buf + n - 7, ".weight"))
        buf[n - 7] = '\0';
    return buf;
}

/* name's kind in l (a new one appended), -1 past HLX_HF_MAX_KINDS. Runs of one kind (an
 * expert's projections come in threes) are found without a search. */
static int hlx_elist_kind(hlx_elist_t *l, const char *name)
{
    char k[sizeof(l->kinds[0])];
    int i;

    hlx_hf_kind_name(name, k, sizeof(k));
    if (l->last >= 0 && l->last < l->nkinds && !strcmp(l->kinds[l->last], k))
        return l->last;
    for (i = 0; i < l->nkinds; i++)
        if (!strcmp(l->kinds[i], k))
            return l->last = i;
    if (l->nkinds == HLX_HF_MAX_KINDS)
        return -1;
    snprintf(l->kinds[l->nkinds], sizeof(l->kinds[0]), "%s", k);
    return l->last = l->nkinds++;
}

static int hlx_elist_add(hlx_elist_t *l, hlx_st_dtype_t dt, hlx_hf_class_t cls,
                         hlx_hf_split_t split, int64_t r, int64_t k, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
static int hlx_elist_add(hlx_elist_t *l, hlx_st_dtype_t dt, hlx_hf_class_t cls,
                         hlx_hf_split_t split, int64_t r, int64_t k, const char *fmt, ...)
{
    hlx_hf_expect_t *e;
    va_list ap;

    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        hlx_hf_expect_t *v = realloc(l->v, cap * sizeof(*v));
        if (v == NULL)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    e = &l->v[l->n++];
    memset(e, 0, sizeof(*e));
    va_start(ap, fmt);
    vsnprintf(e->name, sizeof(e->name), fmt, ap);
    va_end(ap);
    e->dtype = dt;
    e->cls = cls;
    e->split = split;
    e->ndim = k > 0 ? 2 : k == 0 ? 1 : 0; /* k < 0: one value, shape [], [1] or [1, 1] */
    e->shape[0] = r;
    e->shape[1] = k > 0 ? k : 0;
    e->kind = -1;
    return 0;
}

int hlx_hf_unquantized(const hlx_hf_config_t *c, int kind, long layer)
{
    if (kind < 0 || kind >= HLX_HF_MAX_KINDS)
        return 0;
    return (c->unquant >> kind & 1) ||
           (layer >= 0 && layer < HLX_HF_UNQ_LAYERS && (c->unquant_layer[layer] >> kind & 1));
}

/* A linear weight [out][in]: fp8 with its block scales when the config says so, unless its
 * kind is one the ignore list leaves unquantized (hlx_hf_config_t.unquant, unquant_layer). */
static int hlx_elist_linear(hlx_elist_t *l, hlx_hf_class_t cls, hlx_hf_split_t split,
                            int64_t out, int64_t in, const char *name)
{
    const hlx_hf_config_t *c = l->c;
    const int kind = hlx_elist_kind(l, name);

    if (!c->fp8 || hlx_hf_unquantized(c, kind, hlx_hf_layer_of(name))) {
        if (hlx_elist_add(l, c->st_dtype, cls, split, out, in, "%s", name) != 0)
            return -1;
        l->v[l->n - 1].kind = kind;
        return 0;
    }
    if (hlx_elist_add(l, c->int8 ? HLX_ST_I8 : HLX_ST_F8_E4M3, cls, split, out, in, "%s",
                      name) != 0)
        return -1;
    l->v[l->n - 1].kind = kind;
    if (c->fp8 == HLX_HF_FP8_SCALE) /* weight_scale [out, 1] or one value; input_scale one */
        return hlx_elist_add(l, HLX_ST_F32, HLX_HFC_SCALE, split, c->fp8_channel ? out : 1,
                             c->fp8_channel ? 1 : -1, "%s_scale", name) != 0 ||
               (c->fp8_input_scale &&
                hlx_elist_add(l, HLX_ST_F32, HLX_HFC_SCALE, HLX_HFS_REPLICATED, 1, -1,
                              "%.*s.input_scale", (int)(strlen(name) - 7), name) != 0)
                   ? -1 : 0;
    return hlx_elist_add(l, HLX_ST_F32, HLX_HFC_SCALE, split,
                         (out + c->block_rows - 1) / c->block_rows,
                         (in + c->block_cols - 1) / c->block_cols,
                         c->block_scale_plain ? "%s_scale" : "%s_scale_inv", name);
}

/* The routed experts' tensor names: under the layer's block, the router and expert J's
 * gate, up and down projections. DeepSeek's (also Qwen3-MoE's and the runtime's keys) and
 * Mixtral's. */
typedef struct {
    const char *block, *part[3];
} hlx_hf_moe_names_t;

static const hlx_hf_moe_names_t hlx_moe_names_ds = { "mlp", { "gate_proj", "up_proj",
                                                              "down_proj" } };
static const hlx_hf_moe_names_t hlx_moe_names_mixtral = { "block_sparse_moe",
                                                          { "w1", "w3", "w2" } };

static const hlx_hf_moe_names_t hlx_moe_names_llama4 = { "feed_forward", { "gate_proj",
                                                                           "up_proj",
                                                                           "down_proj" } };

static const hlx_hf_moe_names_t *hlx_hf_moe_names(const hlx_hf_config_t *c)
{
    return c->moe_gqa == HLX_HF_MOE_MIXTRAL  ? &hlx_moe_names_mixtral
           : c->moe_gqa == HLX_HF_MOE_LLAMA4 ? &hlx_moe_names_llama4
                                             : &hlx_moe_names_ds;
}

#define HLX_ADD(_x)        \
    do {                   \
        if ((_x) != 0)     \
            goto out_nomem; \
    } while (0)

/* Most tensors a config may describe (DeepSeek-V3: about 94,000 with its fp8 scales): a
 * hostile config.json of 10^8 experts would otherwise ask for tens of GB of list. */
#define HLX_HF_MAX_TENSORS (1 << 20)

/* The checkpoint name of runtime weight w of layer under c's layout, into buf. */
static const char *hlx_hf_src_name(const hlx_hf_config_t *c, hlx_hf_weight_t w, int layer,
                                   char *buf, size_t len)
{
    int64_t hrows, row0;

    hlx_hf_weight_source(&c->m, c->fused, w, layer, buf, len, &hrows, &row0);
    return buf;
}

hlx_status_t hlx_hf_expect(const hlx_hf_config_t *c, hlx_hf_expect_t **list_p, size_t *n_p,
                           char *err, size_t errlen)
{
    const hlx_model_t *m = &c->m;
    const int64_t H = m->hidden, Q = m->q_heads, V = m->vocab;
    const hlx_st_dtype_t dt = c->st_dtype;
    hlx_elist_t l = { .c = c, .last = -1 };
    char p[32], nm[128];
    int li, j;
    /* an upper bound of the count: per layer 16 tensors and 3 per expert, each with a
     * block scale when fp8 (6 per expert with gpt-oss's biases) */
    int64_t per = (16 + 6 * (int64_t)(m->experts > 0 ? m->experts : 0)) * (c->fp8 ? 3 : 1);

    if (per * (int64_t)(m->layers > 0 ? m->layers : 0) + 8 > HLX_HF_MAX_TENSORS)
        return hlx_errbuf(err, errlen, HLX_ERR_INVALID, "config.json: %d layers of %d experts "
                          "describe up to %lld tensors, more than the %d a checkpoint is read "
                          "with (each expert's projections, biases and scales count one each, "
                          "as the runtime reads them, also where the files fuse the experts); "
                          "check num_hidden_layers and the expert count", m->layers,
                          m->experts, (long long)(per * m->layers + 8), HLX_HF_MAX_TENSORS);

    /* the embedding's rows in the LM head's vocabulary slices (a tied head reads the same) */
    HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_EMBED, HLX_HFS_N, V, H, "%s",
                          hlx_hf_src_name(c, HLX_HFW_EMBED, 0, nm, sizeof(nm))));
    for (li = 0; li < m->layers; li++) {
        int moe = hlx_model_layer_moe(m, li);
        snprintf(p, sizeof(p), "model.layers.%d.", li);
        if (!m->post_norms_only) /* OLMo 2: no input norms */
            HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_NORM, HLX_HFS_REPLICATED, H, 0, "%s",
                                  hlx_hf_src_name(c, HLX_HFW_ATTN_NORM, li, nm, sizeof(nm))));
        if (m->norm_layer) /* StarCoder2: LayerNorm's bias */
            HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_NORM, HLX_HFS_REPLICATED, H, 0, "%s",
                                  hlx_hf_src_name(c, HLX_HFW_ATTN_NORM_B, li, nm, sizeof(nm))));
        if (c->family == HLX_HF_DENSE && (c->fused & (HLX_HF_QKV_GROUPED | HLX_HF_FUSED_QKV))) {
            /* Phi-3's qkv_proj (q, k, v rows) and InternLM2's wqkv (its rows grouped by KV
             * head), split by head; quantized as every Linear (a scale per fused row) */
            const int64_t K = m->kv_heads, dk = m->head_dim, dv = m->v_head_dim;
            const size_t at = l.n;
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_ATTN, HLX_HFS_TPA_HEADS, Q * dk + 2 * K * dk,
                                     H, hlx_hf_src_name(c, HLX_HFW_WQ, li, nm, sizeof(nm))));
            l.v[at].kv = 2; /* the weight, not its scales */
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_ATTN, HLX_HFS_N, H, Q * dv,
                                     hlx_hf_src_name(c, HLX_HFW_WO, li, nm, sizeof(nm))));
        } else if (c->family == HLX_HF_DENSE) {
            const int64_t K = m->kv_heads, dk = m->head_dim, dv = m->v_head_dim;
            char n[128];
            size_t at;
            snprintf(n, sizeof(n), "%sself_attn.q_proj.weight", p);
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_ATTN, HLX_HFS_TPA_HEADS, Q * dk, H, n));
            at = l.n;
            snprintf(n, sizeof(n), "%sself_attn.k_proj.weight", p);
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_ATTN, HLX_HFS_TPA_HEADS, K * dk, H, n));
            l.v[at].kv = 1; /* the weight, not its scales */
            at = l.n;
            snprintf(n, sizeof(n), "%sself_attn.v_proj.weight", p);
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_ATTN, HLX_HFS_TPA_HEADS, K * dv, H, n));
            l.v[at].kv = 1;
            if (m->qkv_bias) { /* Qwen2: 1-D, split as their projections' rows */
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_ATTN, HLX_HFS_TPA_HEADS, Q * dk, 0,
                                      "%sself_attn.q_proj.bias", p));
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_ATTN, HLX_HFS_TPA_HEADS, K * dk, 0,
                                      "%sself_attn.k_proj.bias", p));
                l.v[l.n - 1].kv = 1;
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_ATTN, HLX_HFS_TPA_HEADS, K * dv, 0,
                                      "%sself_attn.v_proj.bias", p));
                l.v[l.n - 1].kv = 1;
            }
            if (m->qk_norm && !m->qk_norm_unit) { /* Qwen3: one head's, shared by every head */
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_NORM, HLX_HFS_REPLICATED, dk, 0,
                                      "%sself_attn.q_norm.weight", p));
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_NORM, HLX_HFS_REPLICATED, dk, 0,
                                      "%sself_attn.k_norm.weight", p));
            }
            if (m->qk_norm_proj) { /* OLMo 2: the whole projections', split with their rows */
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_NORM, HLX_HFS_TPA_HEADS, Q * dk, 0,
                                      "%sself_attn.q_norm.weight", p));
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_NORM, HLX_HFS_TPA_HEADS, K * dk, 0,
                                      "%sself_attn.k_norm.weight", p));
                l.v[l.n - 1].kv = 1;
            }
            snprintf(n, sizeof(n), "%sself_attn.o_proj.weight", p);
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_ATTN, HLX_HFS_N, H, Q * dv, n));
            if (m->o_bias) /* gpt-oss: added once, after the heads are summed */
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_ATTN, HLX_HFS_REPLICATED, H, 0,
                                      "%sself_attn.o_proj.bias", p));
            if (m->attn_sinks) /* gpt-oss: a logit per query head, with its heads */
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_ATTN, HLX_HFS_TPA_HEADS, Q, 0,
                                      "%sself_attn.sinks", p));
        } else {
            const int64_t qk = m->qk_nope_dim + m->qk_rope_dim, kvl = m->kv_lora_rank;
            char n[128];
            if (m->q_lora_rank > 0) {
                snprintf(n, sizeof(n), "%sself_attn.q_a_proj.weight", p);
                HLX_ADD(hlx_elist_linear(&l, HLX_HFC_ATTN, HLX_HFS_REPLICATED, m->q_lora_rank,
                                         H, n));
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_NORM, HLX_HFS_REPLICATED, m->q_lora_rank,
                                      0, "%sself_attn.q_a_layernorm.weight", p));
                snprintf(n, sizeof(n), "%sself_attn.q_b_proj.weight", p);
                HLX_ADD(hlx_elist_linear(&l, HLX_HFC_ATTN, HLX_HFS_TPA_HEADS, Q * qk,
                                         m->q_lora_rank, n));
            } else {
                snprintf(n, sizeof(n), "%sself_attn.q_proj.weight", p);
                HLX_ADD(hlx_elist_linear(&l, HLX_HFC_ATTN, HLX_HFS_TPA_HEADS, Q * qk, H, n));
            }
            snprintf(n, sizeof(n), "%sself_attn.kv_a_proj_with_mqa.weight", p);
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_ATTN, HLX_HFS_REPLICATED,
                                     kvl + m->qk_rope_dim, H, n));
            HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_NORM, HLX_HFS_REPLICATED, kvl, 0,
                                  "%sself_attn.kv_a_layernorm.weight", p));
            snprintf(n, sizeof(n), "%sself_attn.kv_b_proj.weight", p);
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_ATTN, HLX_HFS_TPA_HEADS,
                                     Q * (m->qk_nope_dim + m->v_head_dim), kvl, n));
            snprintf(n, sizeof(n), "%sself_attn.o_proj.weight", p);
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_ATTN, HLX_HFS_N, H, Q * m->v_head_dim, n));
        }
        if (!m->post_norms_only)
            HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_NORM, HLX_HFS_REPLICATED, H, 0, "%s",
                                  hlx_hf_src_name(c, HLX_HFW_FFN_NORM, li, nm, sizeof(nm))));
        if (m->norm_layer)
            HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_NORM, HLX_HFS_REPLICATED, H, 0, "%s",
                                  hlx_hf_src_name(c, HLX_HFW_FFN_NORM_B, li, nm, sizeof(nm))));
        if (!moe && m->ffn_plain) { /* StarCoder2: c_fc [F][H] by columns, c_proj by rows */
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_FFN, HLX_HFS_N, m->ffn, H,
                                     hlx_hf_src_name(c, HLX_HFW_WUP, li, nm, sizeof(nm))));
            if (m->ffn_bias)
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_FFN, HLX_HFS_N, m->ffn, 0, "%s",
                                      hlx_hf_src_name(c, HLX_HFW_BUP, li, nm, sizeof(nm))));
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_FFN, HLX_HFS_N, H, m->ffn,
                                     hlx_hf_src_name(c, HLX_HFW_WDOWN, li, nm, sizeof(nm))));
            if (m->ffn_bias) /* added once, after the all-reduce */
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_FFN, HLX_HFS_REPLICATED, H, 0, "%s",
                                      hlx_hf_src_name(c, HLX_HFW_BDOWN, li, nm, sizeof(nm))));
            continue;
        }
        if (m->post_norms) { /* GLM-4-0414: the attention's and the FFN's outputs */
            HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_NORM, HLX_HFS_REPLICATED, H, 0, "%s",
                                  hlx_hf_src_name(c, HLX_HFW_POST_ATTN_NORM, li, nm,
                                                  sizeof(nm))));
            HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_NORM, HLX_HFS_REPLICATED, H, 0, "%s",
                                  hlx_hf_src_name(c, HLX_HFW_POST_FFN_NORM, li, nm,
                                                  sizeof(nm))));
        }
        if (!moe && (c->fused & HLX_HF_FUSED_GU)) {
            char n[128];
            snprintf(n, sizeof(n), "%smlp.gate_up_proj.weight", p);
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_FFN, HLX_HFS_N, 2 * (int64_t)m->ffn, H, n));
            snprintf(n, sizeof(n), "%smlp.down_proj.weight", p);
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_FFN, HLX_HFS_N, H, m->ffn, n));
            continue;
        }
        if (!moe) {
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_FFN, HLX_HFS_N, m->ffn, H,
                                     hlx_hf_src_name(c, HLX_HFW_WGATE, li, nm, sizeof(nm))));
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_FFN, HLX_HFS_N, m->ffn, H,
                                     hlx_hf_src_name(c, HLX_HFW_WUP, li, nm, sizeof(nm))));
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_FFN, HLX_HFS_N, H, m->ffn,
                                     hlx_hf_src_name(c, HLX_HFW_WDOWN, li, nm, sizeof(nm))));
            continue;
        }
        {
            const hlx_hf_moe_names_t *mn = hlx_hf_moe_names(c);
            int k;
            if (c->moe_gqa == HLX_HF_MOE_GPT_OSS) /* gpt-oss's router, with its bias */
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_ROUTER, HLX_HFS_REPLICATED, m->experts, H,
                                      "%smlp.router.weight", p));
            else if (c->moe_gqa == HLX_HF_MOE_GRANITE) /* GraniteMoeTopKGating's */
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_ROUTER, HLX_HFS_REPLICATED, m->experts, H,
                                      "%sblock_sparse_moe.router.layer.weight", p));
            else if (c->moe_gqa == HLX_HF_MOE_LLAMA4) /* Llama4Router's */
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_ROUTER, HLX_HFS_REPLICATED, m->experts, H,
                                      "%sfeed_forward.router.weight", p));
            else
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_ROUTER, HLX_HFS_REPLICATED, m->experts, H,
                                      "%s%s.gate.weight", p, mn->block));
            if (m->router_bias)
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_ROUTER, HLX_HFS_REPLICATED, m->experts, 0,
                                      "%smlp.router.bias", p));
            if (!strcmp(c->scoring_func, "sigmoid") && c->moe_gqa != HLX_HF_MOE_LLAMA4)
                HLX_ADD(hlx_elist_add(&l, HLX_ST_F32, HLX_HFC_ROUTER, HLX_HFS_REPLICATED,
                                      m->experts, 0, "%smlp.gate.e_score_correction_bias", p));
            for (j = 0; j < m->experts; j++)
                for (k = 0; k < 3; k++) { /* gate and up [Fe][H], down [H][Fe] */
                    char n[128];
                    snprintf(n, sizeof(n), "%s%s.experts.%d.%s.weight", p, mn->block, j,
                             mn->part[k]);
                    HLX_ADD(hlx_elist_linear(&l, HLX_HFC_EXPERT, HLX_HFS_EXPERT,
                                             k < 2 ? m->expert_ffn : H,
                                             k < 2 ? H : m->expert_ffn, n));
                    if (m->expert_bias) /* gpt-oss: [Fe], [Fe], [H] (views of its fused) */
                        HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_EXPERT, HLX_HFS_EXPERT,
                                              k < 2 ? m->expert_ffn : H, 0,
                                              "%s%s.experts.%d.%s.bias", p, mn->block, j,
                                              mn->part[k]));
                }
        }
        if (m->shared_experts > 0) {
            const int64_t fs = (int64_t)m->expert_ffn * m->shared_experts;
            /* Qwen2-MoE: one shared_expert and its gate [1][H]; Llama 4: one under
             * feed_forward. */
            const int l4 = c->moe_gqa == HLX_HF_MOE_LLAMA4;
            const char *se = c->moe_gqa == HLX_HF_MOE_QWEN2 || l4 ? "shared_expert"
                                                                  : "shared_experts";
            const char *blk = l4 ? "feed_forward" : "mlp";
            char n[128];
            snprintf(n, sizeof(n), "%s%s.%s.gate_proj.weight", p, blk, se);
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_SHARED, HLX_HFS_N, fs, H, n));
            snprintf(n, sizeof(n), "%s%s.%s.up_proj.weight", p, blk, se);
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_SHARED, HLX_HFS_N, fs, H, n));
            snprintf(n, sizeof(n), "%s%s.%s.down_proj.weight", p, blk, se);
            HLX_ADD(hlx_elist_linear(&l, HLX_HFC_SHARED, HLX_HFS_N, H, fs, n));
            if (m->shared_gate)
                HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_SHARED, HLX_HFS_REPLICATED, 1, H,
                                      "%smlp.shared_expert_gate.weight", p));
        }
    }
    HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_NORM, HLX_HFS_REPLICATED, H, 0, "%s",
                          hlx_hf_src_name(c, HLX_HFW_FINAL_NORM, 0, nm, sizeof(nm))));
    if (m->norm_layer)
        HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_NORM, HLX_HFS_REPLICATED, H, 0, "%s",
                              hlx_hf_src_name(c, HLX_HFW_FINAL_NORM_B, 0, nm, sizeof(nm))));
    if (!c->tie_word_embeddings)
        HLX_ADD(hlx_elist_add(&l, dt, HLX_HFC_LMHEAD, HLX_HFS_N, V, H, "%s",
                              hlx_hf_src_name(c, HLX_HFW_LMHEAD, 0, nm, sizeof(nm))));
    *list_p = l.v;
    *n_p = l.n;
    return HLX_OK;

out_nomem:
    free(l.v);
    return hlx_errbuf(err, errlen, HLX_ERR_NOMEM, "config.json: out of memory listing its tensors");
}

/* A tensor of a multi-token-prediction layer, stored past num_hidden_layers (with its own
 * eh_proj, enorm, hnorm, shared_head.*), which decode without speculative decoding does not
 * read: the num_nextn_predict_layers ones (DeepSeek-V3 and GLM-4.5; transformers' models
 * ignore them, vLLM skips them). A layer past them is refused as vLLM's loader would. */
static int hlx_hf_is_mtp(const hlx_hf_config_t *c, const char *name)
{
    long layer = hlx_hf_layer_of(name);

    return layer >= c->m.layers && layer - c->m.layers < c->mtp_layers;
}

/* Tensors a checkpoint may hold that decode does not read: the multi-token-prediction
 * layers (hlx_hf_is_mtp) and the RoPE frequency buffers older Llama conversions saved
 * (recomputed from rope_theta). */
static int hlx_hf_is_extra_layer(const hlx_hf_config_t *c, const char *name)
{
    size_t n = strlen(name), k = strlen(".rotary_emb.inv_freq");

    if (n > k && !strcmp(name + n - k, ".rotary_emb.inv_freq"))
        return 1;
    return hlx_hf_is_mtp(c, name);
}

/* A multimodal checkpoint's tensors beside its text model's (not read). */
static int hlx_hf_is_other_model(const hlx_hf_config_t *c, const char *name)
{
    static const char *const other[] = { "vision_tower.", "multi_modal_projector.",
                                         "model.vision_tower.", "model.multi_modal_projector.",
                                         "visual.", "model.visual.", "image_newline",
                                         "model.image_newline", "model.vision_model.",
                                         "model.connector.", /* Llama 4's */ "vision_model." };
    size_t i;

    for (i = 0; (c->fused & HLX_HF_NESTED) && i < sizeof(other) / sizeof(other[0]); i++)
        if (!strncmp(name, other[i], strlen(other[i])))
            return 1;
    return 0;
}

int hlx_hf_kv_scale_count(const hlx_hf_config_t *c)
{
    /* MLA: one latent "head" */
    return c->kv_scales == HLX_HF_KV_SCALES_HEAD && c->m.attn != HLX_ATTN_MLA ? c->m.kv_heads
                                                                              : 1;
}

const char *hlx_hf_kv_scale_name(const hlx_hf_config_t *c, int layer, int value, char *buf,
                                 size_t len)
{
    const char *kv = value ? "v" : "k";

    if (c->kv_proj_names)
        snprintf(buf, len, "model.layers.%d.self_attn.%s_proj.%s_scale", layer, kv, kv);
    else
        snprintf(buf, len, "model.layers.%d.self_attn.%s_scale", layer, kv);
    return buf;
}

hlx_status_t hlx_hf_kv_scale(hlx_ckpt_t *ck, const hlx_hf_config_t *c, int layer, int value,
                             int head, double *v_p)
{
    const int64_t n = hlx_hf_kv_scale_count(c);
    char name[96];
    const hlx_ckpt_tensor_t *t;
    hlx_status_t st;

    hlx_hf_kv_scale_name(c, layer, value, name, sizeof(name));
    if ((t = hlx_ckpt_find(ck, name)) == NULL)
        return hlx_ckpt_set_error(ck, HLX_ERR_NOT_FOUND, "%s: tensor %s is missing (%s: every "
                                  "layer has a k_scale and a v_scale)", hlx_ckpt_dir(ck), name,
                                  c->kv_scales_maybe ? "layer 0 has KV-cache scales"
                                                     : "the quantization config declares KV-cache scales");
    if ((st = hlx_ckpt_read_value(ck, t, n, n > 1 ? head : 0, v_p)) != HLX_OK)
        return st;
    if (!(*v_p > 0) || !isfinite(*v_p) || (float)*v_p == 0.0f || !isfinite(1.0f / (float)*v_p))
        return hlx_ckpt_set_error(ck, HLX_ERR_MISMATCH, "%s: tensor %s: %s%g is not a KV-cache "
                                  "scale (a positive finite fp32 whose inverse is finite)",
                                  hlx_ckpt_file_path(ck, t->file), t->name,
                                  n > 1 ? "value " : "", *v_p);
    return HLX_OK;
}

/* A multimodal checkpoint's text model: its tensors under one of the prefixes transformers
 * has saved them with, whichever holds the embedding (Gemma 3 and Mistral3: language_model.
 * or model.language_model.; Qwen2-VL: none or model.language_model.; Idefics3 and SmolVLM:
 * model.text_model. alone, the one name transformers and vLLM give it; Qwen3-VL:
 * model.language_model. alone, the one vLLM maps). No prefix otherwise. */
static void hlx_hf_prefixes(hlx_ckpt_t *ck, const hlx_hf_config_t *c)
{
    hlx_ckpt_set_prefix(ck, NULL, NULL);
    if (hlx_hf_idefics3(c)) {
        hlx_ckpt_set_prefix(ck, "model.", "model.text_model.");
    } else if (hlx_hf_qwen3_vl(c)) {
        hlx_ckpt_set_prefix(ck, "model.", "model.language_model.");
    } else if ((c->fused & HLX_HF_NESTED) &&
        hlx_ckpt_find(ck, "language_model.model.embed_tokens.weight") != NULL) {
        hlx_ckpt_set_prefix(ck, "model.", "language_model.model.");
        hlx_ckpt_set_prefix(ck, "lm_head.", "language_model.lm_head.");
    } else if ((c->fused & HLX_HF_NESTED) &&
               (hlx_ckpt_find(ck, "model.language_model.embed_tokens.weight") != NULL ||
                !hlx_hf_qwen_vl(c))) {
        hlx_ckpt_set_prefix(ck, "model.", "model.language_model.");
    }
}

/* The checkpoint's output head under its family's name (lm_head.weight, InternLM2's
 * output.weight; a multimodal one's under its prefix, hlx_hf_prefixes), or NULL. */
static const hlx_ckpt_tensor_t *hlx_hf_find_head(const hlx_ckpt_t *ck, const hlx_hf_config_t *c)
{
    char name[128];
    int64_t hrows, row0;

    hlx_hf_weight_source(&c->m, c->fused, HLX_HFW_LMHEAD, 0, name, sizeof(name), &hrows, &row0);
    return hlx_ckpt_find(ck, name);
}

/* A one-value fp8 scale's value: a weight scale finite and >= 0 (0: a matrix of zeros), an
 * input scale (not used here; what vLLM divides activations by) finite and > 0. */
static hlx_status_t hlx_hf_check_scale(hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t)
{
    const size_t n = strlen(t->name);
    const int input = n >= 12 && !strcmp(t->name + n - 12, ".input_scale");
    double v;
    hlx_status_t st = hlx_ckpt_read_value(ck, t, 1, 0, &v);

    if (st == HLX_OK && (!isfinite(v) || v < 0 || (input && v == 0)))
        st = hlx_ckpt_set_error(ck, HLX_ERR_MISMATCH, "%s: tensor %s: %g is not %s scale (a "
                                "finite value %s 0)", hlx_ckpt_file_path(ck, t->file), t->name,
                                v, input ? "an input" : "a weight", input ? ">" : ">=");
    return st;
}

/* A Linear's X.weight missing where packed words of it are there (X.qweight, or
 * X.weight_packed) but config.json says nothing of them: the message says what to add. */
static void hlx_hf_packed_hint(hlx_ckpt_t *ck, const char *name)
{
    static const char *const words[] = { ".qweight", ".weight_packed" };
    const size_t n = strlen(name);
    char alt[256];
    size_t i;

    if (n < 8 || strcmp(name + n - 7, ".weight") || n > sizeof(alt) - 16)
        return;
    for (i = 0; i < 2; i++) {
        snprintf(alt, sizeof(alt), "%.*s%s", (int)(n - 7), name, words[i]);
        if (hlx_ckpt_find(ck, alt) != NULL) {
            (void)hlx_ckpt_set_error(ck, HLX_ERR_NOT_FOUND, "%s: tensor %s is missing, and %s "
                                     "holds it packed, but no quantization config says how: "
                                     "add config.json's quantization_config (quant_method "
                                     "gptq, awq or compressed-tensors, bits, group_size), or "
                                     "the export's quantize_config.json or quant_config.json",
                                     hlx_ckpt_dir(ck), name, alt);
            return;
        }
    }
}

/* An X.bias of zeros beside a packed X (AutoGPTQ's QuantLinear keeps one where the layer
 * had none; vLLM skips such biases): no part of the model, nothing lost. One that is not all
 * zeros is still refused, as any unknown tensor. */
static int hlx_hf_packed_zero_bias(hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t)
{
    const size_t n = strlen(t->name);
    const hlx_ckpt_tensor_t *w;
    char name[256];
    float *v;
    int64_t j;
    int zero;

    if (n < 6 || n > sizeof(name) - 8 || strcmp(t->name + n - 5, ".bias") || t->ndim != 1 ||
        t->shape[0] < 1 || t->shape[0] > (int64_t)1 << 24)
        return 0;
    snprintf(name, sizeof(name), "%.*s.weight", (int)(n - 5), t->name);
    if ((w = hlx_ckpt_find_exact(ck, name)) == NULL || !w->pack || w->shape[0] != t->shape[0] ||
        (v = malloc(sizeof(float) * (size_t)t->shape[0])) == NULL)
        return 0;
    zero = hlx_ckpt_read_slice(ck, t, 0, 0, t->shape[0], v, HLX_DTYPE_F32) == HLX_OK;
    for (j = 0; zero && j < t->shape[0]; j++)
        zero = v[j] == 0.0f;
    free(v);
    return zero;
}

int hlx_hf_quantized(const hlx_hf_config_t *c)
{
    return c->m.weight_dtype == HLX_DTYPE_FP8 || c->fp8 || c->int8 || c->packing.pack ||
           c->mxfp4;
}

hlx_dtype_t hlx_hf_held_default(const hlx_hf_config_t *c)
{
    /* fp8: held in bf16 whatever torch_dtype; float16: bf16 (same size) */
    return c->m.weight_dtype == HLX_DTYPE_F32 ? HLX_DTYPE_F32 : HLX_DTYPE_BF16;
}

int hlx_hf_held_rounded(const hlx_hf_config_t *c, hlx_dtype_t held)
{
    return held == HLX_DTYPE_BF16 &&
           (c->st_dtype != HLX_ST_BF16 || c->m.weight_dtype == HLX_DTYPE_FP8 || c->int8 ||
            c->packing.pack);
}

/* hlx_ckpt_set_packed's skip: a multimodal checkpoint's vision tower and projector. */
static int hlx_hf_pack_skip(const char *name, const void *arg)
{
    return hlx_hf_is_other_model(arg, name);
}

void hlx_hf_settle(hlx_ckpt_t *ck, hlx_hf_config_t *c)
{
    const hlx_ckpt_tensor_t *head;
    const int form_names = c->kv_proj_names;
    char name[96];
    int form, j, found = -1;

    hlx_hf_prefixes(ck, c);
    head = c->tie_word_embeddings ? hlx_hf_find_head(ck, c) : NULL;
    snprintf(c->lm_head_unused, sizeof(c->lm_head_unused), "%s", head ? head->name : "");
    c->mtp_tensors = 0;
    c->mtp_bytes = 0;
    for (j = 0; (size_t)j < hlx_ckpt_count(ck); j++) {
        const hlx_ckpt_tensor_t *t = hlx_ckpt_tensor(ck, (size_t)j);
        if (hlx_hf_is_mtp(c, t->name)) {
            c->mtp_tensors++;
            c->mtp_bytes += t->end - t->begin;
        }
    }
    if (!c->kv_scales && !c->kv_scales_maybe)
        return;
    for (form = 1; form >= 0 && found < 0; form--) /* the projections' names first */
        for (j = 0; j < 2 && found < 0; j++) {
            c->kv_proj_names = form;
            if (hlx_ckpt_find(ck, hlx_hf_kv_scale_name(c, 0, j, name, sizeof(name))))
                found = form;
        }
    /* none: the names the form gives them, set with the config (what a missing one is
     * called) */
    c->kv_proj_names = found >= 0 ? found : form_names;
    if (c->kv_scales_maybe && found >= 0)
        c->kv_scales = HLX_HF_KV_SCALES_TENSOR;
}

/* Granite MoE's routed experts, as transformers' GraniteMoeParallelExperts holds them and
 * vLLM's granitemoe.py splits them: layer l's block_sparse_moe.input_linear.weight
 * [E, 2 x I, hidden] (each expert's gate rows, then its up rows: chunk(2, dim=-1) of the
 * output, vLLM's w1 and w3) and output_linear.weight [E, hidden, I] (w2), output-major
 * (nn.Linear's [out][in] per expert), read through output-major views named as the runtime's
 * per-expert weights (mlp.experts.e.{gate,up,down}_proj.weight). */
/* A fused expert tensor t against config.json's expert count: HLX_OK, or the mismatch
 * named (before any view is made: a count the checkpoint does not hold is not tried as
 * views per expert and layer first). */
static hlx_status_t hlx_hf_fused_experts(hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t, int experts)
{
    if (t->ndim >= 1 && t->shape[0] == experts)
        return HLX_OK;
    return hlx_ckpt_set_error(ck, HLX_ERR_MISMATCH, "%s: tensor %s: %lld experts, where "
                              "config.json gives %d", hlx_ckpt_file_path(ck, t->file), t->name,
                              t->ndim < 1 ? 0LL : (long long)t->shape[0], experts);
}

/* Room for per views of each expert and extra more of each of layers fused layers
 * (overflow-checked). */
static hlx_status_t hlx_hf_views_alloc(hlx_ckpt_t *ck, const hlx_model_t *m, size_t layers,
                                       int per, int extra, hlx_ckpt_view_t **v_p)
{
    size_t count;

    if (__builtin_mul_overflow((size_t)m->experts, (size_t)per, &count) ||
        __builtin_add_overflow(count, (size_t)extra, &count) ||
        __builtin_mul_overflow(count, layers, &count) ||
        (*v_p = calloc(count, sizeof(**v_p))) == NULL)
        return hlx_ckpt_set_error(ck, HLX_ERR_NOMEM, "%s: %d layers of %d experts: out of "
                                  "memory", hlx_ckpt_dir(ck), m->layers, m->experts);
    return HLX_OK;
}

static hlx_status_t hlx_hf_granite_views(hlx_ckpt_t *ck, const hlx_hf_config_t *c)
{
    static const char *const part[3] = { "gate_proj", "up_proj", "down_proj" };
    const hlx_model_t *m = &c->m;
    const int64_t Fe = m->expert_ffn, H = m->hidden;
    hlx_ckpt_view_t *v;
    size_t n = 0, held = 0;
    hlx_status_t st;
    int l, e, k;

    if (m->layers <= m->dense_layers || m->experts < 1)
        return hlx_ckpt_set_views(ck, NULL, 0);
    /* the fused tensors' experts against config.json's first: a count the checkpoint does
     * not hold is named as such, not tried as 3 views per expert and layer; views only for
     * the layers that hold input_linear (a num_hidden_layers beyond the checkpoint's would
     * otherwise reserve its views first: 1.85 GB at 200000 layers, before the missing
     * tensors are named) */
    for (l = m->dense_layers; l < m->layers; l++)
        for (k = 0; k < 2; k++) {
            const hlx_ckpt_tensor_t *t;
            char fn[112];
            snprintf(fn, sizeof(fn), "model.layers.%d.block_sparse_moe.%s_linear.weight", l,
                     k ? "output" : "input");
            if ((t = hlx_ckpt_find(ck, fn)) != NULL &&
                (st = hlx_hf_fused_experts(ck, t, m->experts)) != HLX_OK)
                return st;
            held += k == 0 && t != NULL;
        }
    if (held == 0)
        return hlx_ckpt_set_views(ck, NULL, 0); /* the per-expert tensors are looked for */
    /* (Granite MoE Shared: 3 more per layer, the shared MLP's, as one expert's) */
    if ((st = hlx_hf_views_alloc(ck, m, held, 3, m->shared_experts > 0 ? 3 : 0, &v)) != HLX_OK)
        return st;
    for (l = m->dense_layers; l < m->layers; l++) {
        char fn[112];
        snprintf(fn, sizeof(fn), "model.layers.%d.block_sparse_moe.input_linear.weight", l);
        if (hlx_ckpt_find(ck, fn) == NULL) /* its per-expert tensors, missing, are named */
            continue;
        for (e = 0; e < m->experts; e++)
            for (k = 0; k < 3; k++, n++) {
                hlx_ckpt_view_t *x = &v[n];
                snprintf(x->name, sizeof(x->name), "model.layers.%d.mlp.experts.%d.%s.weight",
                         l, e, part[k]);
                snprintf(x->fused, sizeof(x->fused),
                         "model.layers.%d.block_sparse_moe.%s_linear.weight", l,
                         k < 2 ? "input" : "output");
                x->omajor = 1;
                x->experts = m->experts;
                x->index = e;
                x->in = k < 2 ? H : Fe;
                x->cols = k < 2 ? 2 * Fe : H; /* the fused rows */
                x->out = k < 2 ? Fe : H;
                x->c0 = k == 1 ? Fe : 0; /* gate the first half, up the second */
            }
        /* Granite MoE Shared's shared MLP (GraniteMoeSharedMLP): shared_mlp.input_linear
         * [2 x Fs][hidden] (gate rows, then up rows: chunk(2, dim=-1)) and output_linear
         * [hidden][Fs], plain nn.Linear weights, as the runtime's shared experts */
        for (k = 0; m->shared_experts > 0 && k < 3; k++, n++) {
            const int64_t Fs = (int64_t)m->shared_experts * Fe;
            hlx_ckpt_view_t *x = &v[n];
            snprintf(x->name, sizeof(x->name), "model.layers.%d.mlp.shared_experts.%s.weight",
                     l, part[k]);
            snprintf(x->fused, sizeof(x->fused), "model.layers.%d.shared_mlp.%s_linear.weight",
                     l, k < 2 ? "input" : "output");
            x->omajor = x->flat = 1;
            x->experts = 1;
            x->index = 0;
            x->in = k < 2 ? H : Fs;
            x->cols = k < 2 ? 2 * Fs : H;
            x->out = k < 2 ? Fs : H;
            x->c0 = k == 1 ? Fs : 0;
        }
    }
    st = hlx_ckpt_set_views(ck, v, n);
    free(v);
    return st;
}

/* Qwen3-VL-MoE's routed experts, as transformers saves them (Qwen3VLMoeTextExperts) and
 * vLLM reads them (qwen3_vl_moe.py: each fused tensor split per expert, gate_up_proj's last
 * dimension in two halves, gate then up, each transposed to nn.Linear's [out][in]): layer l's
 * mlp.experts.gate_up_proj [E, hidden, 2 x I] and mlp.experts.down_proj [E, I, hidden],
 * input-major (x @ W), read through views named as Qwen3-MoE's per-expert weights
 * (mlp.experts.e.{gate,up,down}_proj.weight, [out][in]). A layer holding neither fused
 * tensor is read as Qwen3-MoE's, per expert (vLLM takes both forms: its expert mapping for
 * the unfused names). fp8 fused experts with a scale per channel (fbgemm_fp8's
 * FbgemmFp8Llama4TextExperts: gate_up_proj_scale [E, 1, 2 x I], down_proj_scale [E, hidden,
 * 1]) are read with a view of their scales beside each weight view (hlx_ckpt_view_t.sc);
 * other quantized fused experts are refused (hlx_ckpt_set_views). gpt-oss's (transformers' GptOssExperts, vLLM's
 * gpt_oss.py) the same way with gate and up interleaved along gate_up_proj's last dimension
 * (gate [..., ::2], up [..., 1::2]: views with a step of 2) and their biases
 * mlp.experts.gate_up_proj_bias [E, 2 x I] (interleaved alike) and down_proj_bias [E, hidden],
 * read as 1-D views mlp.experts.e.{gate,up,down}_proj.bias; its released MXFP4 experts
 * (gate_up_proj_blocks, ..._scales) are refused, saying how to dequantize them. */
static hlx_status_t hlx_hf_expert_views(hlx_ckpt_t *ck, const hlx_hf_config_t *c)
{
    static const char *const part[3] = { "gate_proj", "up_proj", "down_proj" };
    const hlx_model_t *m = &c->m;
    const int oss = c->moe_gqa == HLX_HF_MOE_GPT_OSS;
    /* fp8 with a scale per channel (fbgemm_fp8's FbgemmFp8Llama4TextExperts): each weight
     * view with a view of its scales */
    const int fsc = !oss && c->fp8 == HLX_HF_FP8_SCALE && c->fp8_channel && !c->int8;
    const int per = oss || fsc ? 6 : 3;
    /* Llama 4's: Qwen3-VL-MoE's form under feed_forward. (Llama4TextExperts) */
    const int l4 = c->moe_gqa == HLX_HF_MOE_LLAMA4;
    const char *blk = l4 ? "feed_forward" : "mlp";
    const int64_t Fe = m->expert_ffn, H = m->hidden;
    hlx_ckpt_view_t *v;
    size_t n = 0;
    hlx_status_t st;
    int l, e, k, mxl, nfl, lsc;

    if (c->moe_gqa == HLX_HF_MOE_GRANITE)
        return hlx_hf_granite_views(ck, c);
    if (!hlx_hf_qwen3_vl_moe(c) && !oss && !l4)
        return hlx_ckpt_set_views(ck, NULL, 0);
    if (hlx_model_moe_layers(m) < 1)
        return hlx_ckpt_set_views(ck, NULL, 0);
    /* the fused tensors' experts against config.json's before a view is made for each: a
     * count the checkpoint does not hold is named as such, not tried as views (6 per
     * expert and layer) first */
    for (l = m->dense_layers, nfl = 0; l < m->layers; l++) {
        int any = 0;
        for (k = 0; k < 4 && hlx_model_layer_moe(m, l); k++) {
            const hlx_ckpt_tensor_t *t;
            char fn[112];
            snprintf(fn, sizeof(fn), "model.layers.%d.%s.experts.%s%s", l, blk,
                     k % 2 ? "down_proj" : "gate_up_proj", k >= 2 ? "_blocks" : "");
            if ((k >= 2 && !oss) || (t = hlx_ckpt_find(ck, fn)) == NULL)
                continue;
            any = 1;
            if ((st = hlx_hf_fused_experts(ck, t, m->experts)) != HLX_OK)
                return st;
        }
        nfl += any;
    }
    if (nfl == 0 && !c->mxfp4)
        return hlx_ckpt_set_views(ck, NULL, 0); /* every layer stored per expert */
    if ((st = hlx_hf_views_alloc(ck, m, (size_t)(nfl > 0 ? nfl : 1), per, 0, &v)) != HLX_OK)
        return st;
    for (l = m->dense_layers; l < m->layers; l++) {
        char gu[96], dn[96], mx[112];
        if (!hlx_model_layer_moe(m, l))
            continue;
        snprintf(gu, sizeof(gu), "model.layers.%d.%s.experts.gate_up_proj", l, blk);
        snprintf(dn, sizeof(dn), "model.layers.%d.%s.experts.down_proj", l, blk);
        snprintf(mx, sizeof(mx), "%s_blocks", gu);
        mxl = oss && hlx_ckpt_find(ck, mx) != NULL; /* gpt-oss's released MXFP4 experts */
        if (mxl && !c->mxfp4) {
            const hlx_ckpt_tensor_t *t = hlx_ckpt_find(ck, mx);
            free(v);
            return hlx_ckpt_set_error(ck, HLX_ERR_MISMATCH, "%s: tensor %s: MXFP4 experts, "
                                      "where config.json's quantization_config does not say "
                                      "\"quant_method\": \"mxfp4\"",
                                      hlx_ckpt_file_path(ck, t->file), t->name);
        }
        if (!mxl && c->mxfp4) {
            free(v);
            return hlx_ckpt_set_error(ck, HLX_ERR_NOT_FOUND, "%s: tensor %s is missing "
                                      "(config.json's quantization_config mxfp4: the experts as "
                                      "MXFP4 blocks and scales)", hlx_ckpt_dir(ck), mx);
        }
        if (!mxl && hlx_ckpt_find(ck, gu) == NULL && hlx_ckpt_find(ck, dn) == NULL)
            continue; /* stored per expert */
        lsc = fsc && hlx_ckpt_find(ck, gu) != NULL &&
              hlx_ckpt_find(ck, gu)->dtype == HLX_ST_F8_E4M3; /* this layer's in fp8 */
        for (e = 0; e < m->experts; e++)
            for (k = 0; k < (oss || lsc ? 6 : 3); k++, n++) {
                /* k < 3: the weights; 3 .. 5: their biases (gpt-oss) or scales (fp8) */
                const int w = k % 3, bias = k >= 3 && oss;
                hlx_ckpt_view_t *x = &v[n];
                if (k >= 3 && fsc) { /* [experts][1][2 I] or [experts][H][1], per column */
                    snprintf(x->name, sizeof(x->name), "model.layers.%d.%s.experts.%d.%s."
                             "weight_scale", l, blk, e, part[w]);
                    snprintf(x->fused, sizeof(x->fused), "model.layers.%d.%s.experts.%s_scale",
                             l, blk, w < 2 ? "gate_up_proj" : "down_proj");
                    x->sc = 1;
                    x->experts = m->experts;
                    x->index = e;
                    x->in = 1;
                    x->cols = w < 2 ? 2 * Fe : H;
                    x->out = w < 2 ? Fe : H;
                    x->c0 = w == 1 ? Fe : 0;
                    continue;
                }
                snprintf(x->name, sizeof(x->name), "model.layers.%d.%s.experts.%d.%s.%s", l,
                         blk, e, part[w], bias ? "bias" : "weight");
                snprintf(x->fused, sizeof(x->fused), "model.layers.%d.%s.experts.%s%s", l, blk,
                         w < 2 ? "gate_up_proj" : "down_proj",
                         bias ? "_bias" : mxl ? "_blocks" : "");
                x->mx = mxl && !bias; /* MXFP4: [experts][out][in / 32][16], out-major */
                x->experts = m->experts;
                x->index = e;
                x->vec = bias;
                x->in = bias ? 0 : w < 2 ? H : Fe;
                x->cols = w < 2 ? 2 * Fe : H;
                x->out = w < 2 ? Fe : H;
                /* Qwen3-VL-MoE: gate then up, halves; gpt-oss: interleaved, gate first */
                x->c0 = w == 1 ? (oss ? 1 : Fe) : 0;
                x->step = oss && w < 2 ? 2 : 0;
            }
    }
    st = hlx_ckpt_set_views(ck, v, n);
    free(v);
    return st;
}

hlx_status_t hlx_hf_check(hlx_ckpt_t *ck, const hlx_hf_config_t *c)
{
    hlx_hf_expect_t *list = NULL;
    size_t n = 0, i, total = hlx_ckpt_count(ck);
    unsigned char *seen = calloc(total ? total : 1, 1);
    int li, j;
    char err[512] = "";
    hlx_status_t st;
    const hlx_ckpt_tensor_t *t0 = hlx_ckpt_tensor(ck, 0);

    if (seen == NULL)
        return HLX_ERR_NOMEM;
    hlx_ckpt_set_fp8_block(ck, c->block_rows, c->block_cols);
    hlx_ckpt_set_fused(ck, c->fused);
    hlx_hf_prefixes(ck, c);
    if ((st = hlx_ckpt_set_packed(ck, &c->packing, hlx_hf_pack_skip, c)) != HLX_OK ||
        (st = hlx_hf_expert_views(ck, c)) != HLX_OK) {
        free(seen);
        return st;
    }
    st = hlx_hf_expect(c, &list, &n, err, sizeof(err));
    for (i = 0; st == HLX_OK && i < n; i++) {
        const hlx_ckpt_tensor_t *t;
        const int quant = list[i].dtype == HLX_ST_F8_E4M3 || list[i].dtype == HLX_ST_I8 ||
                          list[i].cls == HLX_HFC_SCALE; /* the quantization config's dtype */
        if (list[i].ndim == 0) /* one value: [], [1] or [1, 1] */
            st = hlx_ckpt_get_value(ck, list[i].name, &t);
        else
            st = hlx_ckpt_get(ck, list[i].name, list[i].ndim, list[i].shape, &t);
        if (st == HLX_ERR_NOT_FOUND && !c->packing.pack && list[i].ndim == 2)
            hlx_hf_packed_hint(ck, list[i].name);
        if (st != HLX_OK)
            break;
        if (t->pack && list[i].ndim == 2 && list[i].cls != HLX_HFC_EMBED) {
            /* a packed Linear (hlx_ckpt_set_packed): its parts are what the checkpoint holds */
            const hlx_ckpt_tensor_t *parts[5] = { t->packed, t->scale, t->zero, t->gidx, t->dims };
            for (j = 0; j < 5; j++)
                if (parts[j] != NULL)
                    seen[parts[j] - t0] = 1;
            continue;
        }
        if (t->pack)
            st = hlx_ckpt_set_error(ck, HLX_ERR_MISMATCH, "%s: tensor %s is stored packed (%s), "
                                    "expected %s as it is (only Linear layers are read packed)",
                                    hlx_ckpt_file_path(ck, t->file), t->name, t->packed->name,
                                    hlx_st_dtype_name(list[i].dtype));
        else if (t->dtype != list[i].dtype && t->mxs == NULL && /* MXFP4: exact in any */
            !(list[i].cls == HLX_HFC_SCALE && hlx_st_is_scale(t->dtype)))
            st = hlx_ckpt_set_error(ck, HLX_ERR_MISMATCH,
                                    "%s: tensor %s: dtype %s, expected %s (config.json: %s%s%s)",
                                    hlx_ckpt_file_path(ck, t->file), t->name,
                                    hlx_st_dtype_name(t->dtype),
                                    list[i].cls == HLX_HFC_SCALE ? "F32, BF16 or F16"
                                                                 : hlx_st_dtype_name(list[i].dtype),
                                    quant ? "quantization_config " : "torch_dtype ",
                                    quant ? (c->int8 ? "int8" : "fp8") : c->torch_dtype,
                                    c->fp8 && list[i].kind >= 0 && !quant
                                        ? ", left unquantized by the quantization config's "
                                          "ignore list"
                                    : c->fp8 && list[i].kind >= 0 && t->dtype == c->st_dtype
                                        ? "; a Linear layer stored unquantized must be named "
                                          "by its ignore list" : "");
        else if (list[i].ndim == 0) /* a one-value scale: its value too */
            st = hlx_hf_check_scale(ck, t);
        if (st == HLX_OK) /* a view (hlx_hf_expert_views): its fused tensor is read */
            seen[(t->fused != NULL ? t->fused : t) - t0] = 1;
        if (st == HLX_OK && t->mxs != NULL) /* an MXFP4 view: its scales too */
            seen[t->mxs - t0] = 1;
    }
    if (st == HLX_OK && c->lm_head_unused[0]) { /* tied: not read (hlx_hf_settle) */
        const hlx_ckpt_tensor_t *head = hlx_hf_find_head(ck, c);
        if (head != NULL && head >= t0 && head < t0 + total) /* a stored one, not packed */
            seen[head - t0] = 1;
    }
    for (li = 0; st == HLX_OK && c->kv_scales && li < c->m.layers; li++)
        for (j = 0; j < 2 && st == HLX_OK; j++) {
            double v;
            char name[96];
            int h;
            for (h = 0; h < hlx_hf_kv_scale_count(c) && st == HLX_OK; h++)
                st = hlx_hf_kv_scale(ck, c, li, j, h, &v);
            if (st == HLX_OK)
                seen[hlx_ckpt_find(ck, hlx_hf_kv_scale_name(c, li, j, name, sizeof(name))) - t0] = 1;
        }
    for (i = 0; st == HLX_OK && i < total; i++) {
        const hlx_ckpt_tensor_t *t = hlx_ckpt_tensor(ck, i);
        if (!seen[i] && !hlx_hf_is_extra_layer(c, t->name) &&
            !hlx_hf_is_other_model(c, t->name) && !hlx_hf_packed_zero_bias(ck, t)) {
            const size_t nl = strlen(t->name);
            const int kvs = nl >= 8 && (!strcmp(t->name + nl - 8, ".k_scale") ||
                                        !strcmp(t->name + nl - 8, ".v_scale"));
            int layer = -1;
            char past[200] = "";
            /* a layer past the model's: multi-token prediction (GLM-4.5's, DeepSeek's) is
             * counted by num_nextn_predict_layers */
            if ((hlx_hf_base(c) == HLX_HF_BASE_GLM4_MOE || c->family == HLX_HF_MOE_MLA) &&
                sscanf(t->name, "model.layers.%d.", &layer) == 1 && layer >= c->m.layers)
                snprintf(past, sizeof(past), " (layer %d is past num_hidden_layers %d, and "
                         "num_nextn_predict_layers %d multi-token-prediction layers do not "
                         "reach it)", layer, c->m.layers, c->mtp_layers);
            st = hlx_ckpt_set_error(ck, HLX_ERR_MISMATCH,
                                    "%s: tensor %s is not part of a%s %s of this config.json%s%s",
                                    hlx_ckpt_file_path(ck, t->file), t->name,
                                    c->arch[0] && strchr("AEIOU", c->arch[0]) ? "n" : "",
                                    c->arch,
                                    kvs ? (c->kv_scales_maybe
                                                 ? " (a KV-cache scale, where layer 0 has none)"
                                                 : " (a KV-cache scale: config.json's "
                                                   "quantization_config has no "
                                                   "kv_cache_scheme)")
                                          : "", past);
        }
    }
    if (st != HLX_OK && list == NULL) /* the list itself: too many tensors, no memory */
        (void)hlx_ckpt_set_error(ck, st, "%s/%s", hlx_ckpt_dir(ck), err);
    free(list);
    free(seen);
    return st;
}

void hlx_hf_ckpt_name(const hlx_hf_config_t *c, const char *key, char *name, size_t len)
{
    const hlx_hf_moe_names_t *mn = hlx_hf_moe_names(c), *ds = &hlx_moe_names_ds;
    char what[16];
    int l, e, n = 0, k;

    snprintf(name, len, "%s", key);
    /* Qwen2-MoE's one shared expert: mlp.shared_expert.*, the runtime's shared_experts */
    if (c->moe_gqa == HLX_HF_MOE_QWEN2 &&
        sscanf(key, "model.layers.%d.mlp.shared_experts.%15[a-z_].weight%n", &l, what, &n) == 2 &&
        key[n] == '\0') {
        snprintf(name, len, "model.layers.%d.mlp.shared_expert.%s.weight", l, what);
        return;
    }
    n = 0;
    /* gpt-oss's router (its experts: views under the keys' own names) */
    if (c->moe_gqa == HLX_HF_MOE_GPT_OSS &&
        sscanf(key, "model.layers.%d.mlp.gate.%15[a-z]%n", &l, what, &n) == 2 &&
        key[n] == '\0' && (!strcmp(what, "weight") || !strcmp(what, "bias"))) {
        snprintf(name, len, "model.layers.%d.mlp.router.%s", l, what);
        return;
    }
    n = 0;
    /* Granite MoE's router (its experts: views under the keys' own names) */
    if (c->moe_gqa == HLX_HF_MOE_GRANITE &&
        sscanf(key, "model.layers.%d.mlp.gate.weight%n", &l, &n) == 1 && key[n] == '\0') {
        snprintf(name, len, "model.layers.%d.block_sparse_moe.router.layer.weight", l);
        return;
    }
    n = 0;
    if (mn == ds)
        return;
    if (sscanf(key, "model.layers.%d.mlp.gate.weight%n", &l, &n) == 1 && key[n] == '\0') {
        snprintf(name, len, "model.layers.%d.%s.%s.weight", l, mn->block,
                 mn == &hlx_moe_names_llama4 ? "router" : "gate");
        return;
    }
    n = 0;
    /* Llama 4's one shared expert: feed_forward.shared_expert.* */
    if (mn == &hlx_moe_names_llama4 &&
        sscanf(key, "model.layers.%d.mlp.shared_experts.%15[a-z_].weight%n", &l, what, &n) == 2 &&
        key[n] == '\0') {
        snprintf(name, len, "model.layers.%d.feed_forward.shared_expert.%s.weight", l, what);
        return;
    }
    n = 0;
    if (sscanf(key, "model.layers.%d.mlp.experts.%d.%15[a-z_].weight%n", &l, &e, what,
               &n) == 3 && key[n] == '\0')
        for (k = 0; k < 3; k++)
            if (!strcmp(what, ds->part[k]))
                snprintf(name, len, "model.layers.%d.%s.experts.%d.%s.weight", l, mn->block, e,
                         mn->part[k]);
}

/* ---- runtime weights ------------------------------------------------------------------ */

/* Every runtime weight of a dense GQA model, Llama's order. */
static const hlx_hf_weight_t hlx_hf_weights[] = {
    HLX_HFW_ATTN_NORM, HLX_HFW_WQ, HLX_HFW_WK, HLX_HFW_WV, HLX_HFW_WO, HLX_HFW_FFN_NORM,
    HLX_HFW_WGATE, HLX_HFW_WUP, HLX_HFW_WDOWN, HLX_HFW_EMBED, HLX_HFW_FINAL_NORM,
    HLX_HFW_LMHEAD, HLX_HFW_BQ, HLX_HFW_BK, HLX_HFW_BV, HLX_HFW_QNORM, HLX_HFW_KNORM,
    HLX_HFW_POST_ATTN_NORM, HLX_HFW_POST_FFN_NORM, HLX_HFW_SINKS, HLX_HFW_BO,
    HLX_HFW_ATTN_NORM_B, HLX_HFW_FFN_NORM_B, HLX_HFW_FINAL_NORM_B, HLX_HFW_BUP, HLX_HFW_BDOWN,
};
#define HLX_HF_NWEIGHTS (sizeof(hlx_hf_weights) / sizeof(hlx_hf_weights[0]))

void hlx_hf_weight_name(hlx_hf_weight_t w, int layer, char *name, size_t len)
{
    static const char *const per_layer[] = {
        [HLX_HFW_ATTN_NORM] = "input_layernorm.weight",
        [HLX_HFW_WQ] = "self_attn.q_proj.weight",
        [HLX_HFW_WK] = "self_attn.k_proj.weight",
        [HLX_HFW_WV] = "self_attn.v_proj.weight",
        [HLX_HFW_WO] = "self_attn.o_proj.weight",
        [HLX_HFW_FFN_NORM] = "post_attention_layernorm.weight",
        [HLX_HFW_WGATE] = "mlp.gate_proj.weight",
        [HLX_HFW_WUP] = "mlp.up_proj.weight",
        [HLX_HFW_WDOWN] = "mlp.down_proj.weight",
    };

    static const char *const extra[] = {
        [HLX_HFW_BQ - HLX_HFW_BQ] = "self_attn.q_proj.bias",
        [HLX_HFW_BK - HLX_HFW_BQ] = "self_attn.k_proj.bias",
        [HLX_HFW_BV - HLX_HFW_BQ] = "self_attn.v_proj.bias",
        [HLX_HFW_QNORM - HLX_HFW_BQ] = "self_attn.q_norm.weight",
        [HLX_HFW_KNORM - HLX_HFW_BQ] = "self_attn.k_norm.weight",
        [HLX_HFW_POST_ATTN_NORM - HLX_HFW_BQ] = "post_self_attn_layernorm.weight",
        [HLX_HFW_POST_FFN_NORM - HLX_HFW_BQ] = "post_mlp_layernorm.weight",
        [HLX_HFW_SINKS - HLX_HFW_BQ] = "self_attn.sinks",
        [HLX_HFW_BO - HLX_HFW_BQ] = "self_attn.o_proj.bias",
        [HLX_HFW_ATTN_NORM_B - HLX_HFW_BQ] = "input_layernorm.bias",
        [HLX_HFW_FFN_NORM_B - HLX_HFW_BQ] = "post_attention_layernorm.bias",
        [HLX_HFW_BUP - HLX_HFW_BQ] = "mlp.up_proj.bias",
        [HLX_HFW_BDOWN - HLX_HFW_BQ] = "mlp.down_proj.bias",
    };

    switch (w) {
    case HLX_HFW_EMBED:      snprintf(name, len, "model.embed_tokens.weight"); break;
    case HLX_HFW_FINAL_NORM: snprintf(name, len, "model.norm.weight"); break;
    case HLX_HFW_FINAL_NORM_B: snprintf(name, len, "model.norm.bias"); break;
    case HLX_HFW_LMHEAD:     snprintf(name, len, "lm_head.weight"); break;
    case HLX_HFW_BQ: case HLX_HFW_BK: case HLX_HFW_BV: case HLX_HFW_QNORM: case HLX_HFW_KNORM:
    case HLX_HFW_POST_ATTN_NORM: case HLX_HFW_POST_FFN_NORM: case HLX_HFW_SINKS: case HLX_HFW_BO:
    case HLX_HFW_ATTN_NORM_B: case HLX_HFW_FFN_NORM_B: case HLX_HFW_BUP: case HLX_HFW_BDOWN:
        snprintf(name, len, "model.layers.%d.%s", layer, extra[w - HLX_HFW_BQ]);
        break;
    default:
        snprintf(name, len, "model.layers.%d.%s", layer,
                 (unsigned)w <= HLX_HFW_WDOWN ? per_layer[w] : "?");
        break;
    }
}

/* InternLM2's names of the runtime weights (HLX_HF_QKV_GROUPED), per layer or global. */
static const char *const hlx_internlm2_names[] = {
    [HLX_HFW_ATTN_NORM] = "attention_norm.weight",
    [HLX_HFW_WQ] = "attention.wqkv.weight",
    [HLX_HFW_WK] = "attention.wqkv.weight",
    [HLX_HFW_WV] = "attention.wqkv.weight",
    [HLX_HFW_WO] = "attention.wo.weight",
    [HLX_HFW_FFN_NORM] = "ffn_norm.weight",
    [HLX_HFW_WGATE] = "feed_forward.w1.weight",
    [HLX_HFW_WUP] = "feed_forward.w3.weight",
    [HLX_HFW_WDOWN] = "feed_forward.w2.weight",
    [HLX_HFW_EMBED] = "model.tok_embeddings.weight",
    [HLX_HFW_FINAL_NORM] = "model.norm.weight",
    [HLX_HFW_LMHEAD] = "output.weight",
};

int64_t hlx_hf_fused_row(const hlx_model_t *m, int fused, hlx_hf_weight_t w, int64_t r)
{
    const int64_t d = m->head_dim, G = m->q_heads / m->kv_heads, qd = m->q_heads * d;
    const int64_t kd = (int64_t)m->kv_heads * d;

    if (fused & HLX_HF_QKV_GROUPED) /* [K][G + 2][d]: g's queries, its key, its value */
        return w == HLX_HFW_WQ ? (r / d / G * (G + 2) + r / d % G) * d + r % d
                               : (r / d * (G + 2) + G + (w == HLX_HFW_WV)) * d + r % d;
    if (fused & HLX_HF_FUSED_QKV)
        return w == HLX_HFW_WQ ? r : w == HLX_HFW_WK ? qd + r : qd + kd + r;
    return r;
}

void hlx_hf_weight_source(const hlx_model_t *m, int fused, hlx_hf_weight_t w, int layer,
                          char *name, size_t len, int64_t *hrows_p, int64_t *row0_p)
{
    const int64_t qd = (int64_t)m->q_heads * m->head_dim, kd = (int64_t)m->kv_heads * m->head_dim;
    int64_t rows, cols;

    hlx_hf_weight_shape(m, w, &rows, &cols);
    *hrows_p = rows == 1 || w == HLX_HFW_EMBED ? 0 : cols; /* HF stores [out][in] */
    *row0_p = 0;
    if ((fused & HLX_HF_QKV_GROUPED) && (unsigned)w <= HLX_HFW_LMHEAD) {
        if (w == HLX_HFW_EMBED || w == HLX_HFW_FINAL_NORM || w == HLX_HFW_LMHEAD)
            snprintf(name, len, "%s", hlx_internlm2_names[w]);
        else
            snprintf(name, len, "model.layers.%d.%s", layer, hlx_internlm2_names[w]);
        if (w == HLX_HFW_WQ || w == HLX_HFW_WK || w == HLX_HFW_WV)
            *hrows_p = qd + 2 * kd; /* rows placed by hlx_hf_fused_row */
    } else if ((fused & HLX_HF_FUSED_QKV) && (w == HLX_HFW_WQ || w == HLX_HFW_WK || w == HLX_HFW_WV)) {
        snprintf(name, len, "model.layers.%d.self_attn.qkv_proj.weight", layer);
        *hrows_p = qd + 2 * kd; /* dense: v_head_dim = head_dim */
        *row0_p = w == HLX_HFW_WQ ? 0 : w == HLX_HFW_WK ? qd : qd + kd;
    } else if ((fused & HLX_HF_GEMMA) && m->post_norms &&
               (w == HLX_HFW_FFN_NORM || w == HLX_HFW_POST_ATTN_NORM ||
                w == HLX_HFW_POST_FFN_NORM)) { /* Gemma 2's and 3's (Gemma 1's: Llama's) */
        snprintf(name, len, "model.layers.%d.%s", layer,
                 w == HLX_HFW_FFN_NORM        ? "pre_feedforward_layernorm.weight"
                 : w == HLX_HFW_POST_ATTN_NORM ? "post_attention_layernorm.weight"
                                               : "post_feedforward_layernorm.weight");
    } else if (m->post_norms_only &&
               (w == HLX_HFW_POST_ATTN_NORM || w == HLX_HFW_POST_FFN_NORM)) { /* OLMo 2 */
        snprintf(name, len, "model.layers.%d.%s", layer,
                 w == HLX_HFW_POST_ATTN_NORM ? "post_attention_layernorm.weight"
                                             : "post_feedforward_layernorm.weight");
    } else if (m->ffn_plain && (w == HLX_HFW_WUP || w == HLX_HFW_WDOWN || w == HLX_HFW_BUP ||
                                w == HLX_HFW_BDOWN)) { /* StarCoder2's plain MLP */
        snprintf(name, len, "model.layers.%d.mlp.%s.%s", layer,
                 w == HLX_HFW_WUP || w == HLX_HFW_BUP ? "c_fc" : "c_proj",
                 w == HLX_HFW_WUP || w == HLX_HFW_WDOWN ? "weight" : "bias");
    } else if ((fused & HLX_HF_LLAMA4) &&
               (w == HLX_HFW_WGATE || w == HLX_HFW_WUP || w == HLX_HFW_WDOWN)) {
        snprintf(name, len, "model.layers.%d.feed_forward.%s.weight", layer,
                 w == HLX_HFW_WGATE ? "gate_proj" : w == HLX_HFW_WUP ? "up_proj" : "down_proj");
    } else if ((fused & HLX_HF_FUSED_GU) && (w == HLX_HFW_WGATE || w == HLX_HFW_WUP)) {
        snprintf(name, len, "model.layers.%d.mlp.gate_up_proj.weight", layer);
        *hrows_p = 2 * (int64_t)m->ffn;
        *row0_p = w == HLX_HFW_WGATE ? 0 : m->ffn;
    } else {
        hlx_hf_weight_name(w, layer, name, len);
    }
}

int hlx_hf_weight_at(const hlx_model_t *m, int fused, const char *name, int64_t hrow,
                     hlx_hf_weight_t *w_p, int *layer_p, int64_t *wrow_p)
{
    static const hlx_hf_weight_t parts[] = { HLX_HFW_WQ, HLX_HFW_WK, HLX_HFW_WV,
                                             HLX_HFW_WGATE, HLX_HFW_WUP };
    char buf[128];
    int64_t hrows, row0, rows, cols;
    int layer;
    size_t i;

    if ((fused & (HLX_HF_QKV_GROUPED | HLX_HF_GEMMA | HLX_HF_LLAMA4)) || m->post_norms_only ||
        m->ffn_plain) {
        /* names of their own (InternLM2's, Gemma's and OLMo 2's norms): every weight looked
         * up by its source; InternLM2's wqkv is WQ's, which comes first */
        const int64_t d = m->head_dim, G = m->q_heads / m->kv_heads;
        if (sscanf(name, "model.layers.%d.", &layer) != 1)
            layer = 0;
        for (i = 0; i < HLX_HF_NWEIGHTS; i++) {
            /* OLMo 2 has no input norms: Llama's FFN one is its attention's output norm */
            if (m->post_norms_only && (hlx_hf_weights[i] == HLX_HFW_ATTN_NORM ||
                                       hlx_hf_weights[i] == HLX_HFW_FFN_NORM))
                continue;
            hlx_hf_weight_source(m, fused, hlx_hf_weights[i], layer, buf, sizeof(buf), &hrows,
                                 &row0);
            if (strcmp(buf, name))
                continue;
            *w_p = hlx_hf_weights[i];
            *layer_p = layer;
            *wrow_p = hrow;
            if ((fused & HLX_HF_QKV_GROUPED) && *w_p == HLX_HFW_WQ) {
                /* the inverse of hlx_hf_fused_row */
                int64_t g = hrow / ((G + 2) * d), slot = hrow / d % (G + 2);
                if (hrow < 0 || hrow >= hrows)
                    return -1;
                *w_p = slot < G ? HLX_HFW_WQ : slot == G ? HLX_HFW_WK : HLX_HFW_WV;
                *wrow_p = (slot < G ? g * G + slot : g) * d + hrow % d;
            }
            return 0;
        }
        return -1;
    }
    if ((fused & (HLX_HF_FUSED_QKV | HLX_HF_FUSED_GU)) &&
        sscanf(name, "model.layers.%d.", &layer) == 1) {
        /* the last part whose rows begin at or before hrow */
        for (i = sizeof(parts) / sizeof(parts[0]); i-- > 0;) {
            hlx_hf_weight_source(m, fused, parts[i], layer, buf, sizeof(buf), &hrows, &row0);
            if (strcmp(buf, name) || hrow < row0)
                continue;
            hlx_hf_weight_shape(m, parts[i], &rows, &cols);
            if (hrow >= row0 + cols)
                return -1;
            *w_p = parts[i];
            *layer_p = layer;
            *wrow_p = hrow - row0;
            return 0;
        }
        /* Llama's separate projections are no tensors where they are fused */
        for (i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
            hlx_hf_weight_name(parts[i], layer, buf, sizeof(buf));
            if (!strcmp(buf, name) &&
                (fused & (i < 3 ? HLX_HF_FUSED_QKV : HLX_HF_FUSED_GU)))
                return -1;
        }
    }
    if (hlx_hf_weight_parse(name, w_p, layer_p) != 0)
        return -1;
    *wrow_p = hrow;
    return 0;
}

void hlx_hf_weight_shape(const hlx_model_t *m, hlx_hf_weight_t w, int64_t *rows,
                         int64_t *cols)
{
    const int64_t H = m->hidden, Q = m->q_heads, K = m->kv_heads, dk = m->head_dim,
                  dv = m->v_head_dim, F = m->ffn, V = m->vocab;

    *rows = H;
    switch (w) {
    case HLX_HFW_ATTN_NORM: case HLX_HFW_FFN_NORM: case HLX_HFW_FINAL_NORM:
    case HLX_HFW_POST_ATTN_NORM: case HLX_HFW_POST_FFN_NORM:
    case HLX_HFW_ATTN_NORM_B: case HLX_HFW_FFN_NORM_B: case HLX_HFW_FINAL_NORM_B:
    case HLX_HFW_BDOWN:
        *rows = 1; *cols = H; break;
    case HLX_HFW_BUP:   *rows = 1; *cols = F; break;
    case HLX_HFW_WQ:    *cols = Q * dk; break;
    case HLX_HFW_WK:    *cols = K * dk; break;
    case HLX_HFW_WV:    *cols = K * dv; break;
    case HLX_HFW_WO:    *rows = Q * dv; *cols = H; break;
    case HLX_HFW_WGATE: case HLX_HFW_WUP: *cols = F; break;
    case HLX_HFW_WDOWN: *rows = F; *cols = H; break;
    case HLX_HFW_EMBED: *rows = V; *cols = H; break;
    case HLX_HFW_LMHEAD: *cols = V; break;
    case HLX_HFW_BQ:    *rows = 1; *cols = Q * dk; break;
    case HLX_HFW_BK:    *rows = 1; *cols = K * dk; break;
    case HLX_HFW_BV:    *rows = 1; *cols = K * dv; break;
    /* OLMo 2's (qk_norm_proj) span the whole projections, Qwen3's one head */
    case HLX_HFW_QNORM: *rows = 1; *cols = m->qk_norm_proj ? Q * dk : dk; break;
    case HLX_HFW_KNORM: *rows = 1; *cols = m->qk_norm_proj ? K * dk : dk; break;
    case HLX_HFW_SINKS: *rows = 1; *cols = Q; break;
    case HLX_HFW_BO:    *rows = 1; *cols = H; break;
    default: *rows = *cols = 0; break;
    }
}

/* Runtime element e of a head (RoPE pairs (2i, 2i+1) over the first r elements) to HF's
 * order (pairs (i, i + r/2)). */
static int64_t hlx_rope_to_hf(int64_t e, int64_t r)
{
    return e < r ? (e & 1) * (r / 2) + e / 2 : e;
}

/* The inverse: HF's element e of a head to the runtime's. */
static int64_t hlx_rope_from_hf(int64_t e, int64_t r)
{
    return e >= r ? e : e < r / 2 ? 2 * e : 2 * (e - r / 2) + 1;
}

void hlx_hf_weight_map(const hlx_model_t *m, int layout, hlx_hf_weight_t w, int64_t row,
                       int64_t col, int64_t *hrow, int64_t *hcol)
{
    const int64_t r = layout & (HLX_HF_ROPE_PAIRS | HLX_HF_LLAMA4) ? 0 : m->rope_dim; /* 0: none */

    switch (w) {
    case HLX_HFW_ATTN_NORM: case HLX_HFW_FFN_NORM: case HLX_HFW_FINAL_NORM: case HLX_HFW_EMBED:
    case HLX_HFW_POST_ATTN_NORM: case HLX_HFW_POST_FFN_NORM: case HLX_HFW_SINKS: case HLX_HFW_BO:
    case HLX_HFW_ATTN_NORM_B: case HLX_HFW_FFN_NORM_B: case HLX_HFW_FINAL_NORM_B:
    case HLX_HFW_BUP: case HLX_HFW_BDOWN:
        *hrow = row;
        *hcol = col;
        break;
    case HLX_HFW_WQ: case HLX_HFW_WK:
        *hrow = col / m->head_dim * m->head_dim + hlx_rope_to_hf(col % m->head_dim, r);
        *hcol = row;
        break;
    case HLX_HFW_BV:
        *hrow = row;
        *hcol = col;
        break;
    case HLX_HFW_BQ: case HLX_HFW_BK: case HLX_HFW_QNORM: case HLX_HFW_KNORM:
        /* 1-D, per head element: rotated like the projections' rows (q_norm before RoPE
         * scales element e of every head, which the runtime holds at its pair position) */
        *hrow = row;
        *hcol = col / m->head_dim * m->head_dim + hlx_rope_to_hf(col % m->head_dim, r);
        break;
    default:
        *hrow = col;
        *hcol = row;
        break;
    }
}

void hlx_hf_weight_unmap(const hlx_model_t *m, int layout, hlx_hf_weight_t w, int64_t hrow,
                         int64_t hcol, int64_t *row, int64_t *col)
{
    const int64_t r = layout & (HLX_HF_ROPE_PAIRS | HLX_HF_LLAMA4) ? 0 : m->rope_dim; /* 0: none */

    switch (w) {
    case HLX_HFW_ATTN_NORM: case HLX_HFW_FFN_NORM: case HLX_HFW_FINAL_NORM: case HLX_HFW_EMBED:
    case HLX_HFW_POST_ATTN_NORM: case HLX_HFW_POST_FFN_NORM: case HLX_HFW_SINKS: case HLX_HFW_BO:
    case HLX_HFW_ATTN_NORM_B: case HLX_HFW_FFN_NORM_B: case HLX_HFW_FINAL_NORM_B:
    case HLX_HFW_BUP: case HLX_HFW_BDOWN:
        *row = hrow;
        *col = hcol;
        break;
    case HLX_HFW_WQ: case HLX_HFW_WK:
        *col = hrow / m->head_dim * m->head_dim + hlx_rope_from_hf(hrow % m->head_dim, r);
        *row = hcol;
        break;
    case HLX_HFW_BV:
        *row = hrow;
        *col = hcol;
        break;
    case HLX_HFW_BQ: case HLX_HFW_BK: case HLX_HFW_QNORM: case HLX_HFW_KNORM:
        *row = hrow;
        *col = hcol / m->head_dim * m->head_dim + hlx_rope_from_hf(hcol % m->head_dim, r);
        break;
    default:
        *col = hrow;
        *row = hcol;
        break;
    }
}

/* Which runtime weight and layer a checkpoint name is; -1 when it is none. */
int hlx_hf_weight_parse(const char *name, hlx_hf_weight_t *w_p, int *layer_p)
{
    char buf[128];
    int layer = 0;
    size_t i;

    if (sscanf(name, "model.layers.%d.", &layer) != 1)
        layer = 0;
    for (i = 0; i < HLX_HF_NWEIGHTS; i++) {
        hlx_hf_weight_name(hlx_hf_weights[i], layer, buf, sizeof(buf));
        if (!strcmp(buf, name)) {
            *w_p = hlx_hf_weights[i];
            *layer_p = layer;
            return 0;
        }
    }
    return -1;
}

/* Gemma's norm weights are stored as w - 1: nc of them at dst, read as stored, become 1 + w
 * (in f32, as its RMSNorm computes 1.0 + weight.float()). */
static void hlx_hf_norm_plus1(void *dst, hlx_dtype_t dt, int64_t nc)
{
    int64_t c;

    for (c = 0; c < nc; c++) {
        if (dt == HLX_DTYPE_BF16) {
            uint16_t *p = (uint16_t *)dst + c;
            *p = hlx_f32_to_bf16(1.0f + hlx_bf16_to_f32(*p));
        } else {
            ((float *)dst)[c] += 1.0f;
        }
    }
}

void hlx_hf_read_source(const hlx_ckpt_t *ck, const hlx_model_t *m, hlx_hf_weight_t w,
                        int layer, char *name, size_t len, int64_t *hrows_p, int64_t *row0_p)
{
    /* fused (Phi-3, GLM): w's rows [row0, row0 + cols) of qkv_proj or gate_up_proj */
    hlx_hf_weight_source(m, hlx_ckpt_fused(ck), w, layer, name, len, hrows_p, row0_p);
    /* tie_word_embeddings: the output head is the embedding matrix ([V][H] either way), an
     * lm_head.weight beside it not read (hlx_hf_config_t.lm_head_unused) */
    if (w == HLX_HFW_LMHEAD && (m->tie_embeddings || hlx_ckpt_find(ck, name) == NULL)) {
        char emb[128];
        int64_t hr, hc;
        hlx_hf_weight_source(m, hlx_ckpt_fused(ck), HLX_HFW_EMBED, 0, emb, sizeof(emb), &hr,
                             &hc);
        if (hlx_ckpt_find(ck, emb) != NULL)
            snprintf(name, len, "%s", emb);
    }
}

/* Columns per gathered read of hlx_hf_read_rows: a head's (head_dim 128 or less in the
 * models read; a larger one is read in parts). */
#define HLX_HF_GATHER 128

typedef struct hlx_hf_rowcol {
    int64_t hr, col; /* a checkpoint row, the column of dst it goes to */
} hlx_hf_rowcol_t;

static int hlx_hf_rowcol_cmp(const void *a, const void *b)
{
    const int64_t x = ((const hlx_hf_rowcol_t *)a)->hr, y = ((const hlx_hf_rowcol_t *)b)->hr;

    return (x > y) - (x < y);
}

/* Runtime columns [c0, c0 + nc) (rows [r0, r0 + nr)) of w, a projection stored one
 * checkpoint row per runtime column in an order of its own (RoPE pairs reordered, rows
 * placed in a fused tensor), into dst: HLX_HF_GATHER columns at a time, their checkpoint
 * rows sorted and cut into runs of consecutive rows, each run read as one transposed block
 * and its columns put in place. Every row is read once, so the reads' byte count stays the
 * checkpoint's. A read per row cost 2 ns an element of bf16, and for GPTQ's words (a row of
 * them lies a whole row of the weight apart) about 8, against about 1 in blocks. */
static hlx_status_t hlx_hf_read_rows(hlx_ckpt_t *ck, const hlx_model_t *m, hlx_hf_weight_t w,
                                     const hlx_ckpt_tensor_t *t, int64_t r0, int64_t nr,
                                     int64_t c0, int64_t nc, void *dst, hlx_dtype_t dst_dtype,
                                     int64_t ld)
{
    const size_t esz = dst_dtype == HLX_DTYPE_BF16 ? 2 : 4;
    hlx_hf_rowcol_t rc[HLX_HF_GATHER];
    char *tmp = malloc((size_t)(nr > 0 ? nr : 1) * HLX_HF_GATHER * esz);
    int64_t c, n, q, a, b, k, hr, hc;
    hlx_status_t st = HLX_OK;

    if (tmp == NULL)
        return hlx_ckpt_set_error(ck, HLX_ERR_NOMEM, "%s: tensor %s: out of memory",
                                  hlx_ckpt_file_path(ck, t->file), t->name);
    for (c = c0; c < c0 + nc && st == HLX_OK; c += n) {
        n = c0 + nc - c < HLX_HF_GATHER ? c0 + nc - c : HLX_HF_GATHER;
        for (q = 0; q < n; q++) {
            hlx_hf_weight_map(m, hlx_ckpt_fused(ck), w, r0, c + q, &hr, &hc);
            rc[q].hr = hlx_hf_fused_row(m, hlx_ckpt_fused(ck), w, hr);
            rc[q].col = c + q - c0;
        }
        qsort(rc, (size_t)n, sizeof(rc[0]), hlx_hf_rowcol_cmp);
        for (a = 0; a < n && st == HLX_OK; a = b) {
            for (b = a + 1; b < n && rc[b].hr == rc[b - 1].hr + 1; b++)
                ;
            /* rows [a, b) of the run: row a + i's element k at tmp[k (b - a) + i] */
            st = hlx_ckpt_read_block(ck, t, rc[a].hr, b - a, r0, nr, 1, tmp, dst_dtype, b - a);
            for (k = 0; k < nr && st == HLX_OK; k++) {
                if (esz == 2) {
                    const uint16_t *s = (const uint16_t *)tmp + k * (b - a) - a;
                    for (q = a; q < b; q++)
                        ((uint16_t *)dst)[k * ld + rc[q].col] = s[q];
                } else {
                    const float *s = (const float *)tmp + k * (b - a) - a;
                    for (q = a; q < b; q++)
                        ((float *)dst)[k * ld + rc[q].col] = s[q];
                }
            }
        }
    }
    free(tmp);
    return st;
}

void hlx_hf_round_bf16(float *x, int64_t nr, int64_t nc, int64_t ld)
{
    int64_t r, c;

    for (r = 0; r < nr; r++)
        for (c = 0; c < nc; c++)
            x[r * ld + c] = hlx_bf16_to_f32(hlx_f32_to_bf16(x[r * ld + c]));
}

/* hlx_hf_read_held's reads; round: the 1-D tensors' values rounded before a Gemma norm's 1
 * is added (the 2-D ones rounded by the caller). */
static hlx_status_t hlx_hf_read_at(hlx_ckpt_t *ck, const hlx_model_t *m, hlx_hf_weight_t w,
                                   int layer, int64_t r0, int64_t nr, int64_t c0, int64_t nc,
                                   void *dst, hlx_dtype_t dst_dtype, int64_t ld, int round)
{
    char name[128];
    int64_t rows, cols, shape[2], c, hr, hc, hrows, row0;
    const hlx_ckpt_tensor_t *t;
    const size_t esz = dst_dtype == HLX_DTYPE_BF16 ? 2 : 4;
    hlx_status_t st;

    hlx_hf_read_source(ck, m, w, layer, name, sizeof(name), &hrows, &row0);
    hlx_hf_weight_shape(m, w, &rows, &cols);
    if (rows == 1) { /* norms and biases: 1-D */
        const int plus1 = (hlx_ckpt_fused(ck) & HLX_HF_GEMMA) && w != HLX_HFW_BQ &&
                          w != HLX_HFW_BK && w != HLX_HFW_BV;
        shape[0] = cols;
        if ((st = hlx_ckpt_get(ck, name, 1, shape, &t)) != HLX_OK)
            return st;
        if (w != HLX_HFW_BQ && w != HLX_HFW_BK && w != HLX_HFW_QNORM && w != HLX_HFW_KNORM) {
            st = hlx_ckpt_read_block(ck, t, 0, nr, c0, nc, 0, dst, dst_dtype, ld);
        } else {
            /* per head element, in the runtime's RoPE pair order: one element at a time */
            for (c = c0; c < c0 + nc && st == HLX_OK; c++) {
                hlx_hf_weight_map(m, hlx_ckpt_fused(ck), w, 0, c, &hr, &hc);
                st = hlx_ckpt_read_block(ck, t, 0, nr, hc, 1, 0,
                                         (char *)dst + (size_t)(c - c0) * esz, dst_dtype, ld);
            }
        }
        if (st == HLX_OK && round && dst_dtype == HLX_DTYPE_F32)
            hlx_hf_round_bf16(dst, nr, nc, ld);
        if (st == HLX_OK && plus1)
            hlx_hf_norm_plus1(dst, dst_dtype, nc);
        return st;
    }
    if (w == HLX_HFW_EMBED) {
        shape[0] = rows;
        shape[1] = cols;
        st = hlx_ckpt_get(ck, name, 2, shape, &t);
        return st ? st : hlx_ckpt_read_block(ck, t, r0, nr, c0, nc, 0, dst, dst_dtype, ld);
    }
    shape[0] = hrows; /* HF stores [out][in] */
    shape[1] = rows;
    if ((st = hlx_ckpt_get(ck, name, 2, shape, &t)) != HLX_OK)
        return st;
    if (w != HLX_HFW_WQ && w != HLX_HFW_WK &&
        !(w == HLX_HFW_WV && (hlx_ckpt_fused(ck) & HLX_HF_QKV_GROUPED)))
        return hlx_ckpt_read_block(ck, t, row0 + c0, nc, r0, nr, 1, dst, dst_dtype, ld);
    /* One checkpoint row per runtime column: RoPE pairs are reordered, and the row placed
     * in a fused tensor (Phi-3's block, InternLM2's groups). */
    return hlx_hf_read_rows(ck, m, w, t, r0, nr, c0, nc, dst, dst_dtype, ld);
}

hlx_status_t hlx_hf_read_held(hlx_ckpt_t *ck, const hlx_model_t *m, hlx_hf_weight_t w,
                              int layer, int64_t r0, int64_t nr, int64_t c0, int64_t nc,
                              void *dst, hlx_dtype_t dst_dtype, int64_t ld, int round)
{
    int64_t rows, cols;
    hlx_status_t st = hlx_hf_read_at(ck, m, w, layer, r0, nr, c0, nc, dst, dst_dtype, ld, round);

    hlx_hf_weight_shape(m, w, &rows, &cols);
    if (st == HLX_OK && round && dst_dtype == HLX_DTYPE_F32 && rows != 1)
        hlx_hf_round_bf16(dst, nr, nc, ld);
    return st;
}

hlx_status_t hlx_hf_read(hlx_ckpt_t *ck, const hlx_model_t *m, hlx_hf_weight_t w, int layer,
                         int64_t r0, int64_t nr, int64_t c0, int64_t nc, void *dst,
                         hlx_dtype_t dst_dtype, int64_t ld)
{
    return hlx_hf_read_held(ck, m, w, layer, r0, nr, c0, nc, dst, dst_dtype, ld, 0);
}
