/* helix model: `synth` writes a small Hugging Face checkpoint (dense Llama-style or Phi-3
 * style with the runtime's synthetic weights, GQA with routed experts (Qwen-MoE, Mixtral,
 * GLM-4.5), or DeepSeek-V3-style MoE+MLA), `info` describes one (and with --scan names
 * every tensor holding values that are not finite). */
#include "hlx_cmd.h"
#include "hlx_parse.h"
#include "hlx_ckpt.h"
#include "hlx_synth.h"
#include "hlx_time.h"

#include <hlx_kernels.h>

#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The checkpoint's weight numbering is the runtime generator's. */
_Static_assert((int)HLX_HFW_WQ == (int)HLX_T_WQ && (int)HLX_HFW_WDOWN == (int)HLX_T_WDOWN &&
               (int)HLX_HFW_EMBED == (int)HLX_T_EMBED && (int)HLX_HFW_LMHEAD == (int)HLX_T_LMHEAD &&
               (int)HLX_HFW_FINAL_NORM == (int)HLX_T_FINAL_NORM &&
               (int)HLX_HFW_FFN_NORM == (int)HLX_T_FFN_NORM &&
               (int)HLX_HFW_BQ == (int)HLX_T_BQ && (int)HLX_HFW_BV == (int)HLX_T_BV &&
               (int)HLX_HFW_QNORM == (int)HLX_T_QNORM && (int)HLX_HFW_KNORM == (int)HLX_T_KNORM &&
               (int)HLX_HFW_POST_ATTN_NORM == (int)HLX_T_POST_ATTN_NORM &&
               (int)HLX_HFW_POST_FFN_NORM == (int)HLX_T_POST_FFN_NORM &&
               (int)HLX_HFW_SINKS == (int)HLX_T_SINKS && (int)HLX_HFW_BO == (int)HLX_T_BO &&
               (int)HLX_HFW_ATTN_NORM_B == (int)HLX_T_ATTN_NORM_B &&
               (int)HLX_HFW_FINAL_NORM_B == (int)HLX_T_FINAL_NORM_B &&
               (int)HLX_HFW_BDOWN == (int)HLX_T_BDOWN,
               "hlx_hf_weight_t follows hlx_tensor_t");

static int hlx_model_int(const char *cmd, const char *flag, const char *v, long lo, long hi,
                         long *out)
{
    int64_t x;
    char    why[160];

    if (hlx_parse_int(v, lo, hi, &x, why, sizeof(why)) != HLX_OK) {
        fprintf(stderr, "helix model %s: %s: %s\n", cmd, flag, why);
        return -1;
    }
    *out = (long)x;
    return 0;
}

/* ---- synth ------------------------------------------------------------------------- */

/* Most layers of a synthetic checkpoint, from --layers or --model alike. */
#define HLX_SYNTH_MAX_LAYERS 64
/* Largest checkpoint written without --max-bytes. */
#define HLX_SYNTH_MAX_BYTES (8ull << 30)

static void hlx_synth_usage(FILE *f)
{
    fprintf(f,
        "usage: helix model synth --family dense|phi3|glm|glm4|gemma|gemma2|gemma3|\n"
        "                                  internlm2|qwen2|qwen3|granite|granitemoe|\n"
        "                                  granitemoeshared|\n"
        "                                  smollm3|seed-oss|\n"
        "                                  qwen2-moe|qwen3-moe|mixtral|glm4-moe|dots1|\n"
        "                                  deepseek-moe|gpt-oss|olmo2|olmo3|starcoder2|\n"
        "                                  llama4|moe-mla|deepseek-v2\n"
        "                         --out DIR [--layers N] [--seed S] [--dtype bf16|f32|fp8]\n"
        "                         [--shards N] [--model FILE|NAME]\n"
        "                         [--max-bytes SIZE] [--kv-scales K,V[,K,V...]]\n"
        "                         [--kv-scales-per-head] [--fp8-scales tensor|channel]\n"
        "                         [--fp8-format compressed-tensors|fp8|modelopt|fp8-block|\n"
        "                                       compressed-tensors-block|fbgemm_fp8]\n\n"
        "Writes a small Hugging Face checkpoint: config.json, the tensors in N safetensors\n"
        "shards and model.safetensors.index.json.\n\n"
        "  --family dense    LlamaForCausalLM with the dimensions of the `tiny` preset (H 256,\n"
        "                    8 query heads, 2 KV heads, head 32, FFN 512, vocab 512) and the\n"
        "                    runtime's synthetic weights for --seed, so that decoding from the\n"
        "                    checkpoint equals `helix decode --model tiny --seed S`\n"
        "  --family phi3     Phi3ForCausalLM: the dense family's shapes and values with the\n"
        "                    projections fused (self_attn.qkv_proj: q, k, v rows;\n"
        "                    mlp.gate_up_proj: gate, up rows); decodes as --family dense\n"
        "  --family glm      GlmForCausalLM: the dense family's weights with q, k and v\n"
        "                    biases, gate_up_proj fused, RoPE over the first half of each\n"
        "                    head (partial_rotary_factor 0.5) in pairs (2i, 2i+1)\n"
        "  --family gemma3   Gemma3ForCausalLM: the dense family's shapes with hidden 320,\n"
        "                    q/k head norms, norms of the attention's and the MLP's outputs\n"
        "                    (every norm stored as w - 1), GeGLU, the embedding times\n"
        "                    sqrt(320), a softmax scale of 1/sqrt(24), a window of 6 on\n"
        "                    every other layer turning with its own base (10000; 1e6 else)\n"
        "  --family gemma2   Gemma2ForCausalLM: gemma3's layer without the q/k head norms,\n"
        "                    one RoPE base (10000), the attention scores soft-capped at 1.5\n"
        "                    and the logits at 2 (Gemma 2's 50 would leave the synthetic\n"
        "                    scores alone)\n"
        "  --family gemma    GemmaForCausalLM (Gemma 1): gemma3's shapes, norms stored as\n"
        "                    w - 1, GeGLU and scaled embedding on Llama's layer (no q/k\n"
        "                    head norms, no output norms, no window, no capping, a\n"
        "                    softmax scale of 1/sqrt(head size), one RoPE base 10000)\n"
        "  --family glm4     Glm4ForCausalLM (GLM-4-0414): glm's weights plus an RMSNorm of\n"
        "                    the attention's output and of the MLP's before each residual\n"
        "                    add (post_self_attn_layernorm, post_mlp_layernorm)\n"
        "  --family internlm2  InternLM2ForCausalLM: the dense family's weights under\n"
        "                    InternLM2's names, q, k and v in one attention.wqkv whose rows\n"
        "                    hold per KV head its queries, then its key, then its value;\n"
        "                    decodes as --family dense\n"
        "  --family qwen2    Qwen2ForCausalLM: the dense family's weights plus q, k and v\n"
        "                    biases (self_attn.*_proj.bias)\n"
        "  --family qwen3    Qwen3ForCausalLM: the dense family's weights plus the per-head\n"
        "                    RMSNorm of q and k before RoPE (self_attn.q_norm, k_norm)\n"
        "  --family qwen2-moe  Qwen2MoeForCausalLM: qwen2's attention; every layer 8 routed\n"
        "                    experts top-4 (expert FFN 64, softmax router, not renormalised)\n"
        "                    and a shared expert of FFN 128 times a sigmoid gate\n"
        "                    (mlp.shared_expert, mlp.shared_expert_gate)\n"
        "  --family qwen3-moe  Qwen3MoeForCausalLM: qwen3's attention; layer 0 dense\n"
        "                    (mlp_only_layers [0]), the others 8 routed experts top-2 (expert\n"
        "                    FFN 64, softmax router, norm_topk_prob)\n"
        "  --family granite  GraniteForCausalLM: Llama's layer with Granite's multipliers\n"
        "                    (embedding 1.5, softmax scale 1/8, residual 0.8, logits / 8)\n"
        "  --family granitemoeshared  GraniteMoeSharedForCausalLM: granitemoe's layer with a\n"
        "                    shared MLP of 2 x 64 beside the experts (shared_mlp.input_linear\n"
        "                    [2 x 128, H]: gate rows, then up rows; output_linear [H, 128])\n"
        "  --family granitemoe  GraniteMoeForCausalLM (Granite 3.0/3.1 MoE): granite's layer\n"
        "                    and multipliers (residual 0.8 on the experts' output too), every\n"
        "                    layer 8 experts top-2 (FFN 64, the best logits softmaxed),\n"
        "                    stored fused output-major as Granite MoE's\n"
        "                    (block_sparse_moe.input_linear [E, 2 x 64, H]: gate rows, then\n"
        "                    up rows; output_linear [E, H, 64]; router.layer)\n"
        "  --family smollm3  SmolLM3ForCausalLM: the dense family's weights with every\n"
        "                    second layer's q and k unrotated (no_rope_layers [1, 0, ...]:\n"
        "                    SmolLM3 leaves one layer in 4 without RoPE)\n"
        "  --family seed-oss  SeedOssForCausalLM (Seed-OSS): qwen2's weights (q, k and v\n"
        "                    biases) under Llama's names, attention_bias true\n"
        "  --family olmo2    Olmo2ForCausalLM (OLMo 2): the dense family's weights without\n"
        "                    the input norms, with the attention's and the MLP's outputs\n"
        "                    normalised (post_attention_layernorm, post_feedforward_layernorm)\n"
        "                    and q_norm, k_norm over the whole q and k projections\n"
        "  --family olmo3    Olmo3ForCausalLM (OLMo 3): olmo2's layer with a window of 6 on\n"
        "                    every other layer (layer_types sliding_attention, full_attention)\n"
        "  --family starcoder2  Starcoder2ForCausalLM (StarCoder2): LayerNorms with biases,\n"
        "                    biases on q, k, v and o_proj, a plain MLP mlp.c_fc ->\n"
        "                    gelu_pytorch_tanh -> mlp.c_proj with biases (use_bias true)\n"
        "  --family llama4   Llama4ForCausalLM (Llama 4's text model): chunked attention\n"
        "                    (chunks of 4) with weightless q/k L2 norms on the RoPE layers,\n"
        "                    every 2nd layer NoPE with the query temperature (floor 4, slope\n"
        "                    0.5) and MoE (8 experts top-1 of FFN 64, a sigmoid score on the\n"
        "                    expert's input, a shared expert), the others dense (FFN 512);\n"
        "                    the experts written per expert (no --model)\n"
        "  --family mixtral  MixtralForCausalLM: the dense family's attention, every layer 8\n"
        "                    experts top-2 of FFN 64 (block_sparse_moe, w1/w3/w2)\n"
        "  --family glm4-moe  Glm4MoeForCausalLM (GLM-4.5): the dense family's attention with\n"
        "                    q, k and v biases, q/k head norms and rotate_half RoPE over the\n"
        "                    first half of each head; layer 0 dense, the others 8 routed\n"
        "                    experts top-2 (expert FFN 64, sigmoid scores, the choice steered\n"
        "                    by e_score_correction_bias, renormalised, times 2.5) + 2 shared;\n"
        "                    one multi-token-prediction layer's tensors after the last layer\n"
        "                    (num_nextn_predict_layers 1; not read by decode)\n"
        "  --family dots1    Dots1ForCausalLM (dots.llm1): qwen3's attention (q/k head\n"
        "                    norms, no biases, RoPE over whole heads) with glm4-moe's MoE\n"
        "                    (layer 0 dense, 8 routed experts top-2 chosen with the\n"
        "                    correction bias, renormalised, times 2.5, + 2 shared); no\n"
        "                    multi-token-prediction layer\n"
        "  --family deepseek-moe  DeepseekForCausalLM (DeepSeek-MoE): the dense family's\n"
        "                    attention, layer 0 dense, the others 8 routed experts top-2\n"
        "                    (expert FFN 64, a softmax gate, not renormalised) + 2 shared\n"
        "  --family gpt-oss  GptOssForCausalLM: the dense family's attention with q, k, v and\n"
        "                    o biases and a sink logit per head, a window of 6 on layers 0,\n"
        "                    2, ..., yarn RoPE (factor 4 over 64, truncate false); every\n"
        "                    layer 8 experts top-2 (FFN 64) under a biased softmax router,\n"
        "                    stored fused as gpt-oss's (gate_up_proj, gate and up\n"
        "                    interleaved, with biases), a clamped SwiGLU (limit 1.5)\n"
        "  --family moe-mla  DeepseekV3ForCausalLM: MLA (q_lora 96, kv_lora 64, nope 32,\n"
        "                    rope 16, v 32, 4 heads), 8 routed experts top-2 + 1 shared\n"
        "                    (expert FFN 64), layer 0 dense (FFN 384), sigmoid routing\n"
        "  --family deepseek-v2  DeepseekV2ForCausalLM: moe-mla's shapes with q_proj (no query\n"
        "                    compression, as V2-Lite), 2 shared experts, softmax top-2 from\n"
        "                    the group of 4 whose best expert leads (group_limited_greedy),\n"
        "                    weights scaled by 2, not renormalised\n"
        "  --out DIR         directory to write (a new one appears only once complete, and\n"
        "                    not at all when synth fails or is stopped; existing files\n"
        "                    replaced, each only once every new file is complete)\n"
        "  --model M         dense, phi3, internlm2, qwen2, qwen3 and smollm3: the shapes\n"
        "                    of model description M\n"
        "                    (a GQA model JSON or preset with v_head_dim = head_dim, and\n"
        "                    rope_dim = head_dim except for phi3, which writes a smaller\n"
        "                    rope_dim as partial_rotary_factor) instead of tiny's; the\n"
        "                    checkpoint then decodes as `--model M` with the family's\n"
        "                    biases, head norms or NoPE layers (qkv_bias, qk_norm,\n"
        "                    nope_pattern)\n"
        "  --layers N        transformer layers, 1 to %d (default 2, llama4 3, or the model's with\n"
        "                    --model, which must then be at most %d too)\n"
        "  --seed S          seed of the values (default 1)\n"
        "  --dtype T         bf16 (default) or f32; fp8: linear weights in e4m3, for\n"
        "                    moe-mla and deepseek-v2 with 32 x 32 block scales\n"
        "                    (weight_scale_inv), for the other (GQA) families in the form\n"
        "                    --fp8-format names (routers and lm_head left in bf16)\n"
        "  --fp8-scales S    with a GQA family's fp8: channel (default, one scale per\n"
        "                    output row) or tensor (one); each 2^-4 times 1, 1.25, 1.5 or\n"
        "                    1.75, by tensor and row\n"
        "  --fp8-format F    with a GQA family's fp8, whose form: compressed-tensors\n"
        "                    (default, llm-compressor's), fp8 (AutoFP8's: quant_method fp8\n"
        "                    without weight_block_size, static activation scales) or\n"
        "                    modelopt (NVIDIA ModelOpt's quant_algo FP8); the last two take\n"
        "                    one scale per tensor, stored with shape [], and name KV-cache\n"
        "                    scales self_attn.k_proj.k_scale and v_proj.v_scale;\n"
        "                    fp8-block: quant_method fp8 with weight_block_size [32, 32]\n"
        "                    (weight_scale_inv per block, as Qwen3's FP8 releases);\n"
        "                    compressed-tensors-block: llm-compressor's FP8_BLOCK (strategy\n"
        "                    block, block_structure [32, 32], weight_scale per block);\n"
        "                    fbgemm_fp8: Meta's FP8 releases' form (a scale per channel,\n"
        "                    modules_to_not_convert, activation_scale_ub)\n"
        "  --shards N        number of safetensors files (default 2; 1 writes a single\n"
        "                    model.safetensors without an index)\n"
        "  --max-bytes SIZE  refuse to write a checkpoint larger than SIZE bytes (suffix K,\n"
        "                    M, G or T; default 8G); the size is worked out, and the free\n"
        "                    space checked, before anything is written\n"
        "  --kv-scales K,V   fp8 KV-cache scales, as llm-compressor writes them: each layer's\n"
        "                    self_attn.k_scale and v_scale (F32, shape [1]) and a\n"
        "                    quantization_config.kv_cache_scheme in config.json; pairs for\n"
        "                    layers 0, 1, ..., the last pair for the layers after it. With\n"
        "                    `helix decode --kv-dtype fp8` keys are stored as k / K and read as\n"
        "                    stored x K (values likewise)\n"
        "  --kv-scales-per-head  the scales per KV head instead (kv_cache_scheme strategy\n"
        "                    attn_head, tensors of [num_key_value_heads]): a layer's even KV\n"
        "                    heads take its pair, the odd ones a quarter of it (where the\n"
        "                    synthetic keys then pass 448, a head given another head's\n"
        "                    scale shows in --check)\n",
        HLX_SYNTH_MAX_LAYERS, HLX_SYNTH_MAX_LAYERS);
}

/* --fp8-format: what it writes (compressed-tensors, AutoFP8's fp8, ModelOpt's, and block
 * scales as quant_method fp8 with weight_block_size) */
enum { HLX_SYNTH_FMT_CT, HLX_SYNTH_FMT_FP8, HLX_SYNTH_FMT_MODELOPT, HLX_SYNTH_FMT_BLOCK,
       HLX_SYNTH_FMT_CT_BLOCK, HLX_SYNTH_FMT_FBGEMM };

/* The scale of a dense family's fp8 weight (--dtype fp8) at row r, column col: 2^-4 times
 * 1, 1.25, 1.5 or 1.75, by tensor (key: a hash of its name), and by row (per channel) or
 * by block row and column (block scales; per tensor: the key alone). Not powers of two,
 * so that a reader giving a weight another row's, block's or tensor's scale changes its
 * rounding; of 3 significant bits, so that e4m3 values times them are exact in bf16. */
static float hlx_synth_fp8_scale(const hlx_hf_config_t *c, uint32_t key, int64_t r, int64_t col)
{
    int64_t k = key;

    if (c->fp8 == HLX_HF_FP8_BLOCK)
        k += r / c->block_rows + 3 * (col / c->block_cols);
    else if (c->fp8_channel)
        k += r;
    return 0.0625f * (1.0f + 0.25f * (float)(k % 4));
}

/* The key of a weight's scales: its name's (the weight's own, or its scale's without the
 * _scale or _scale_inv suffix) FNV-1a hash. */
static uint32_t hlx_synth_fp8_key(const char *name)
{
    size_t n = strlen(name), i;
    uint32_t h = 2166136261u;

    if (n > 10 && !strcmp(name + n - 10, "_scale_inv"))
        n -= 10;
    else if (n > 6 && !strcmp(name + n - 6, "_scale"))
        n -= 6;
    for (i = 0; i < n; i++)
        h = (h ^ (uint8_t)name[i]) * 16777619u;
    return h;
}

/* The HLX_HF_QF_* forms by the names `model info` gives them (their quant_method) */
static const char *const hlx_fp8_form_names[] = { "compressed-tensors", "fp8", "modelopt",
                                                   "fbgemm_fp8" };

/* Whether decode on the CPU keeps packed linear layers packed with this machine's kernel
 * variant (HELIX_KERNELS or auto) and HELIX_W_PACKED (docs/kernels.md "Packed integer
 * weights"); -1 when the variant cannot be set up. */
static int hlx_model_w_packed(void)
{
    hlx_kernels_t k;

    if (hlx_kernels_init(NULL, &k) != HLX_OK)
        return -1;
    return hlx_kernels_w_packed_for(&k);
}

/* Whether decode on the CPU keeps c's packed linear layers packed (4 or 8 bits; MXFP4
 * experts as their 4-bit E2M1 codes); else they are dequantized at load. As the engine decides
 * (hlx_engine_wq_can): only where the weights are read as bf16 (fp8 ones are), not f32. */
static int hlx_model_int_held(const hlx_hf_config_t *c)
{
    const hlx_dtype_t w = c->m.weight_dtype == HLX_DTYPE_FP8 ? HLX_DTYPE_BF16 : c->m.weight_dtype;

    return hlx_model_w_packed() == 1 && w == HLX_DTYPE_BF16 &&
           (c->mxfp4 || c->packing.bits == 4 || c->packing.bits == 8);
}

/* Why decode dequantizes packed weights it could hold (hlx_model_int_held false for a
 * 4- or 8-bit packing or MXFP4), for model info's line. */
static const char *hlx_model_unheld_why(void)
{
    if (hlx_model_w_packed() == 1)
        return "the packed GEMMs take bf16 weights, not f32";
    return hlx_kernels_w_packed() == 0
               ? "HELIX_W_PACKED=off"
               : "this CPU's kernels multiply bf16 faster than packed weights "
                 "(HELIX_W_PACKED=on keeps them packed, in less memory, slower)";
}

/* How decode holds MXFP4 experts, for model info's line. */
static void hlx_model_mx_how(const hlx_hf_config_t *c, char *buf, size_t len)
{
    if (hlx_model_int_held(c))
        snprintf(buf, len, "kept on the CPU as their 4-bit E2M1 codes with a scale per 32, "
                 "0.75 bytes a weight; decoded to %s at load on CUDA; exact either way",
                 c->torch_dtype);
    else
        snprintf(buf, len, "decoded to %s at load, exactly: %s", c->torch_dtype,
                 hlx_model_unheld_why());
}

/* How decode holds integer-packed weights, for model info's line. */
static void hlx_model_int_how(const hlx_hf_config_t *c, char *buf, size_t len)
{
    if (c->packing.bits != 4 && c->packing.bits != 8)
        snprintf(buf, len, "dequantized at load: the packed GEMMs take 4 and 8 bits");
    else if (hlx_model_int_held(c))
        snprintf(buf, len, "kept packed on the CPU, dequantized at load on CUDA");
    else
        snprintf(buf, len, "dequantized at load: %s", hlx_model_unheld_why());
}

/* One kind left unquantized, appended to the JSON array arg. */
static void hlx_info_unquant_item(const char *item, void *arg)
{
    json_array_append_new(arg, json_string(item));
}

/* What `model info --json` says of c's quantization: the fp8 weights' form and scales
 * (null: none), the KV-cache scales and their names (null: none; "maybe" where the config
 * leaves it to the tensors and they were not read), a tied checkpoint's unread head. */
static json_t *hlx_info_quant_json(const hlx_hf_config_t *c, size_t packed)
{
    json_t *w = json_null(), *kv = json_null();
    char kn[96], vn[96];

    if (c->fp8 == HLX_HF_FP8_BLOCK)
        w = json_pack("{s:s, s:s, s:[i, i]}", "form",
                      c->block_scale_plain ? "compressed-tensors" : "fp8", "scales", "block",
                      "block", c->block_rows, c->block_cols);
    else if (c->fp8 == HLX_HF_FP8_SCALE)
        w = json_pack("{s:s, s:s, s:s, s:b}", "form", hlx_fp8_form_names[c->fp8_form], "type",
                      c->int8 ? "int8" : "e4m3", "scales", c->fp8_channel ? "channel" : "tensor",
                      "input_scales", c->fp8_input_scale);
    if (c->fp8 && w != NULL) { /* the kinds its ignore list leaves unquantized */
        json_t *a = json_array();
        if (a != NULL)
            hlx_hf_unquant_each(c, hlx_info_unquant_item, a);
        json_object_set_new(w, "unquantized", a != NULL ? a : json_null());
    }
    else if (c->packing.pack)
        w = json_pack("{s:s, s:i, s:I, s:b, s:I, s:s?, s:s}", "form",
                      hlx_ckpt_pack_name(c->packing.pack), "bits", c->packing.bits, "group",
                      (json_int_t)c->packing.group, "zero_points",
                      c->packing.pack != HLX_PACK_CT || !c->packing.sym, "packed_layers",
                      (json_int_t)packed, "config_file",
                      c->quant_file[0] ? c->quant_file : NULL, "cpu",
                      hlx_model_int_held(c) ? "packed" : "dequantized");
    else if (c->mxfp4) /* gpt-oss's experts: 4-bit codes on the CPU, or decoded at load */
        w = json_pack("{s:s, s:s, s:i, s:s}", "form", "mxfp4", "layers", "routed experts",
                      "block", 32, "cpu", hlx_model_int_held(c) ? "packed" : "dequantized");
    if (c->kv_scales) {
        hlx_hf_kv_scale_name(c, 0, 0, kn, sizeof(kn));
        hlx_hf_kv_scale_name(c, 0, 1, vn, sizeof(vn));
        kv = json_pack("{s:s, s:s, s:s}", "per",
                       c->kv_scales == HLX_HF_KV_SCALES_HEAD ? "kv_head" : "tensor", "k",
                       strstr(kn, "self_attn."), "v", strstr(vn, "self_attn."));
    } else if (c->kv_scales_maybe) {
        kv = json_string("maybe");
    }
    return json_pack("{s:o, s:o, s:s?}", "weights", w, "kv_cache_scales", kv,
                     "lm_head_unused", c->lm_head_unused[0] ? c->lm_head_unused : NULL);
}

/* Most --kv-scales pairs. */
#define HLX_SYNTH_MAX_KVS HLX_SYNTH_MAX_LAYERS

typedef struct {
    hlx_hf_config_t  cfg;
    uint64_t         seed;
    size_t           kvs_at;   /* list entries from here on: the KV-cache scales */
    size_t           mtp_at, mtp_n; /* list entries [mtp_at, + mtp_n): the MTP layers' */
    int              nkvs;     /* --kv-scales pairs given */
    double           kvs[2 * HLX_SYNTH_MAX_KVS];
} hlx_synth_ctx_t;

static volatile sig_atomic_t hlx_synth_signal;

static hlx_status_t hlx_synth_fill(void *vctx, const hlx_hf_expect_t *t, size_t idx,
                                   int64_t row, float *dst)
{
    hlx_synth_ctx_t *c = vctx;
    const hlx_model_t *m = &c->cfg.m;
    int64_t cols = t->ndim == 3 ? t->shape[2] : t->ndim == 2 ? t->shape[1] : t->shape[0];
    int64_t j, rr, rc, rrows, rcols, wrow;
    hlx_hf_weight_t w;
    int layer;

    if (hlx_synth_signal) /* SIGINT or SIGTERM: stop writing (hlx_synth_write) */
        return HLX_ERR_IO;

    if (c->nkvs > 0 && idx >= c->kvs_at) { /* layer (idx - at) / 2's k_scale, v_scale */
        size_t k = (idx - c->kvs_at) / 2, pair = k < (size_t)c->nkvs ? k : (size_t)c->nkvs - 1;
        for (j = 0; j < cols; j++) /* per head: odd heads a quarter of the pair */
            dst[j] = (float)(c->kvs[2 * pair + (idx - c->kvs_at) % 2] * (j % 2 ? 0.25 : 1.0));
        return HLX_OK;
    }
    if (c->cfg.family != HLX_HF_DENSE || (idx >= c->mtp_at && idx < c->mtp_at + c->mtp_n)) {
        for (j = 0; j < cols; j++) /* MLA, and the MTP layers (not read) */
            dst[j] = hlx_ckpt_synth_value(c->seed, t, row, j);
        return HLX_OK;
    }
    /* the runtime weight this row holds (a fused tensor's rows belong to several); the
     * routed experts and their router (Qwen3-MoE) take moe-mla's values */
    if (t->cls == HLX_HFC_ROUTER || t->cls == HLX_HFC_EXPERT || t->cls == HLX_HFC_SHARED) {
        const size_t nl = strlen(t->name);
        hlx_hf_expect_t b = *t;
        /* gpt-oss's biases (the router's [E], the fused experts' [E][cols]): values of
         * about 0.5 each way, as the projections' biases (a 1-D tensor's u, halved) */
        const int bias = nl >= 4 && !strcmp(t->name + nl - 4, "bias");
        if (bias) {
            b.ndim = 1;
            b.shape[0] = cols;
        }
        /* Granite MoE's fused experts are output-major [E][out][in]: their fan-in is the
         * last dimension (the values' scale; their hash stays the tensor's) */
        if (t->ndim == 3 && c->cfg.moe_gqa == HLX_HF_MOE_GRANITE)
            b.shape[1] = t->shape[2];
        for (j = 0; j < cols; j++) /* (b is t but for the two cases above) */
            dst[j] = (bias ? 0.5f : 1.0f) * hlx_ckpt_synth_value(c->seed, &b, row, j);
        return HLX_OK;
    }
    /* fp8 weights: element (r, c)'s scale hlx_synth_fp8_scale, the weight stored divided by
     * it (the writer rounds it to e4m3); a block scale tensor's row is the block row, its
     * columns the block columns */
    if (t->cls == HLX_HFC_SCALE) {
        for (j = 0; j < (c->cfg.fp8 == HLX_HF_FP8_BLOCK ? cols : 1); j++)
            dst[j] = c->cfg.fp8 == HLX_HF_FP8_BLOCK
                         ? hlx_synth_fp8_scale(&c->cfg, hlx_synth_fp8_key(t->name),
                                               row * c->cfg.block_rows, j * c->cfg.block_cols)
                         : hlx_synth_fp8_scale(&c->cfg, hlx_synth_fp8_key(t->name), row, 0);
        return HLX_OK;
    }
    if (hlx_hf_weight_at(m, c->cfg.fused, t->name, row, &w, &layer, &wrow) != 0)
        return HLX_ERR_INTERNAL;
    hlx_hf_weight_shape(m, w, &rrows, &rcols);
    for (j = 0; j < cols; j++) {
        hlx_hf_weight_unmap(m, c->cfg.fused, w, wrow, j, &rr, &rc);
        dst[j] = hlx_synth_weight(m, hlx_synth_key(c->seed, layer, (hlx_tensor_t)w),
                                  (hlx_tensor_t)w, rr, rc, rcols);
        /* Gemma stores a norm's weight as w - 1 (exact: w within [0.5, 1.5) in the dtype) */
        if ((c->cfg.fused & HLX_HF_GEMMA) && t->cls == HLX_HFC_NORM)
            dst[j] -= 1.0f;
        if (t->dtype == HLX_ST_F8_E4M3)
            dst[j] /= hlx_synth_fp8_scale(&c->cfg, hlx_synth_fp8_key(t->name), row, j);
    }
    return HLX_OK;
}

/* The dense families: architecture, model name and what each adds to Llama's layer (fused:
 * the tensor layout, hlx_hf_config_t.fused). */
static const struct {
    const char *family, *arch, *name;
    int         fused, qkv_bias, qk_norm, moe, post_norms;
} hlx_synth_dense[] = {
    { "dense", "LlamaForCausalLM", "synth-dense", 0, 0, 0, 0, 0 },
    { "phi3", "Phi3ForCausalLM", "synth-phi3", HLX_HF_FUSED_QKV | HLX_HF_FUSED_GU, 0, 0, 0, 0 },
    { "glm", "GlmForCausalLM", "synth-glm", HLX_HF_FUSED_GU | HLX_HF_ROPE_PAIRS, 1, 0, 0, 0 },
    { "glm4", "Glm4ForCausalLM", "synth-glm4", HLX_HF_FUSED_GU | HLX_HF_ROPE_PAIRS, 1, 0, 0, 1 },
    { "gemma", "GemmaForCausalLM", "synth-gemma", HLX_HF_GEMMA, 0, 0, 0, 0 },
    { "gemma2", "Gemma2ForCausalLM", "synth-gemma2", HLX_HF_GEMMA, 0, 0, 0, 1 },
    { "gemma3", "Gemma3ForCausalLM", "synth-gemma3", HLX_HF_GEMMA, 0, 1, 0, 1 },
    { "internlm2", "InternLM2ForCausalLM", "synth-internlm2", HLX_HF_QKV_GROUPED, 0, 0, 0, 0 },
    { "qwen2", "Qwen2ForCausalLM", "synth-qwen2", 0, 1, 0, 0, 0 },
    { "qwen3", "Qwen3ForCausalLM", "synth-qwen3", 0, 0, 1, 0, 0 },
    { "qwen2-moe", "Qwen2MoeForCausalLM", "synth-qwen2-moe", 0, 1, 0, HLX_HF_MOE_QWEN2, 0 },
    { "qwen3-moe", "Qwen3MoeForCausalLM", "synth-qwen3-moe", 0, 0, 1, HLX_HF_MOE_QWEN3, 0 },
    { "mixtral", "MixtralForCausalLM", "synth-mixtral", 0, 0, 0, HLX_HF_MOE_MIXTRAL, 0 },
    { "glm4-moe", "Glm4MoeForCausalLM", "synth-glm4-moe", 0, 1, 1, HLX_HF_MOE_GLM4, 0 },
    { "dots1", "Dots1ForCausalLM", "synth-dots1", 0, 0, 1, HLX_HF_MOE_GLM4, 0 },
    { "deepseek-moe", "DeepseekForCausalLM", "synth-deepseek-moe", 0, 0, 0, HLX_HF_MOE_DEEPSEEK,
      0 },
    { "granite", "GraniteForCausalLM", "synth-granite", 0, 0, 0, 0, 0 },
    { "granitemoe", "GraniteMoeForCausalLM", "synth-granitemoe", 0, 0, 0, HLX_HF_MOE_GRANITE,
      0 },
    { "granitemoeshared", "GraniteMoeSharedForCausalLM", "synth-granitemoeshared", 0, 0, 0,
      HLX_HF_MOE_GRANITE, 0 },
    { "smollm3", "SmolLM3ForCausalLM", "synth-smollm3", 0, 0, 0, 0, 0 },
    { "seed-oss", "SeedOssForCausalLM", "synth-seed-oss", 0, 1, 0, 0, 0 },
    { "gpt-oss", "GptOssForCausalLM", "synth-gpt-oss", 0, 1, 0, HLX_HF_MOE_GPT_OSS, 0 },
    { "olmo2", "Olmo2ForCausalLM", "synth-olmo2", 0, 0, 0, 0, 1 },
    { "olmo3", "Olmo3ForCausalLM", "synth-olmo3", 0, 0, 0, 0, 1 },
    { "starcoder2", "Starcoder2ForCausalLM", "synth-starcoder2", 0, 1, 0, 0, 0 },
    { "llama4", "Llama4ForCausalLM", "synth-llama4", HLX_HF_LLAMA4, 0, 0, HLX_HF_MOE_LLAMA4,
      0 },
};
#define HLX_SYNTH_NDENSE (sizeof(hlx_synth_dense) / sizeof(hlx_synth_dense[0]))

/* Index of a dense family in hlx_synth_dense; -1 for moe-mla or an unknown name. */
static int hlx_synth_dense_index(const char *family)
{
    size_t i;

    for (i = 0; i < HLX_SYNTH_NDENSE; i++)
        if (!strcmp(family, hlx_synth_dense[i].family))
            return (int)i;
    return -1;
}

/* dense: index into hlx_synth_dense; -1 for the MLA families (v2: DeepSeek-V2's gating,
 * no query compression, as V2-Lite). */
static void hlx_synth_config(hlx_hf_config_t *c, int dense, int v2, int layers,
                             const char *dtype)
{
    hlx_model_t *m = &c->m;

    memset(c, 0, sizeof(*c));
    m->layers = layers;
    m->hidden = 256;
    m->vocab = 512;
    m->rope_theta = 10000.0;
    m->norm_eps = 1e-5;
    m->kv_dtype = HLX_DTYPE_BF16;
    m->routed_scaling = 1.0; /* the gating defaults of a model file */
    m->n_group = m->topk_group = 1;
    c->block_rows = c->block_cols = 32;
    if (!strcmp(dtype, "f32")) {
        snprintf(c->torch_dtype, sizeof(c->torch_dtype), "float32");
        c->st_dtype = HLX_ST_F32;
        m->weight_dtype = HLX_DTYPE_F32;
    } else {
        snprintf(c->torch_dtype, sizeof(c->torch_dtype), "bfloat16");
        c->st_dtype = HLX_ST_BF16;
        m->weight_dtype = HLX_DTYPE_BF16;
    }
    if (dense >= 0) {
        c->family = HLX_HF_DENSE;
        c->fused = hlx_synth_dense[dense].fused;
        m->qkv_bias = hlx_synth_dense[dense].qkv_bias;
        m->qk_norm = hlx_synth_dense[dense].qk_norm;
        m->post_norms = hlx_synth_dense[dense].post_norms;
        snprintf(c->arch, sizeof(c->arch), "%s", hlx_synth_dense[dense].arch);
        snprintf(m->name, sizeof(m->name), "%s", hlx_synth_dense[dense].name);
        m->attn = HLX_ATTN_GQA;
        m->q_heads = 8;
        m->kv_heads = 2;
        m->head_dim = m->v_head_dim = m->rope_dim = 32;
        m->ffn = 512;
        m->dense_layers = layers;
        if (c->fused & HLX_HF_ROPE_PAIRS) /* glm: GlmConfig's partial_rotary_factor 0.5 */
            m->rope_dim = m->head_dim / 2;
        if (c->fused & HLX_HF_GEMMA) {
            /* gemma3: Gemma 3's layer with a window of 6 on every other layer (a pattern of
             * 2, where Gemma 3 has 6, so that 2 layers hold both kinds), hidden 320 (whose
             * sqrt(H) rounds in bf16) and a softmax scale of its own */
            m->hidden = 320;
            m->rope_theta = 1e6;
            m->norm_eps = 1e-6;
            m->ffn_act = HLX_ACT_GELU_TANH;
            m->embed_scale = 1;
            m->attn_scalar = 24.0;
            m->sliding_window = 6;
            m->sliding_pattern = 2;
            m->rope_local_theta = 10000.0;
            if (hlx_hf_gemma2(c)) {
                /* gemma2: the same but one RoPE base, and caps that the synthetic
                 * scores and logits reach (Gemma 2's 50 and 30 would leave them alone) */
                m->rope_theta = 10000.0;
                m->rope_local_theta = 0.0;
                m->attn_softcap = 1.5;
                m->final_softcap = 2.0;
            } else if (!m->post_norms) {
                /* gemma (1): Llama's layer with Gemma's norms, GeGLU and embedding: one
                 * RoPE base, every layer whole, 1 / sqrt(head size) */
                m->rope_theta = 10000.0;
                m->rope_local_theta = 0.0;
                m->attn_scalar = 0.0;
                m->sliding_window = 0;
                m->sliding_pattern = 0;
            }
        }
        if (hlx_hf_reads_nope(c))
            m->nope_pattern = 2; /* smollm3: layer 1 of 2 unrotated (SmolLM3: 1 in 4) */
        if (hlx_hf_olmo2(c)) /* olmo2: output norms alone, q/k norms over the projections */
            m->post_norms_only = m->qk_norm_proj = 1;
        if (hlx_hf_olmo3(c)) { /* olmo3: a window of 6 on layer 0 of every 2 */
            m->sliding_window = 6;
            m->sliding_pattern = 2;
        }
        if (hlx_hf_starcoder2(c)) {
            /* starcoder2: LayerNorms with biases, biases on q, k, v and o_proj, the plain
             * GELU-tanh MLP with its biases (use_bias true, as the releases); an untied head
             * (the synthetic tokens of a tied one repeat) */
            m->norm_layer = m->ffn_plain = m->ffn_bias = m->o_bias = 1;
            m->ffn_act = HLX_ACT_GELU_TANH;
        }
        if (hlx_hf_granite(c)) {
            /* granite: Granite 3's four multipliers, at values where each of the first three
             * changes the greedy tokens of the synthetic weights (the logits' scale cannot):
             * embedding 1.5, a softmax scale of 1/8 where 1 / sqrt(32) would be 0.177,
             * residual 0.8, logits over 8; an untied head (a tied one makes the synthetic
             * tokens repeat the last) */
            m->embed_mult = 1.5;
            m->attn_scalar = 64.0;
            m->residual_mult = 0.8;
            m->logits_scale = 8.0;
        }
        if (hlx_synth_dense[dense].moe) {
            /* qwen3-moe: layer 0 dense (mlp_only_layers [0]), then MoE; qwen2-moe: every
             * layer MoE with a gated shared expert of 2 x 64 (Qwen1.5-MoE's 4 x, Qwen2-57B's
             * 8 x), top-4 not renormalised (Qwen2MoeConfig's default); mixtral: every layer
             * MoE, intermediate_size being the experts' */
            c->moe_gqa = hlx_synth_dense[dense].moe;
            m->experts = 8;
            m->top_k = 2;
            m->expert_ffn = 64;
            m->dense_layers = layers > 1 && c->moe_gqa == HLX_HF_MOE_QWEN3 ? 1 : 0;
            if (c->moe_gqa == HLX_HF_MOE_MIXTRAL || c->moe_gqa == HLX_HF_MOE_GRANITE)
                m->ffn = m->expert_ffn; /* granitemoe: granite's multipliers, above */
            if (hlx_hf_granite_shared(c)) /* its shared MLP: 2 x 64 wide, unweighted */
                m->shared_experts = 2;
            hlx_hf_gating_set(c, HLX_MOE_SOFTMAX, 1, 1.0, 1, 1);
            if (c->moe_gqa == HLX_HF_MOE_QWEN2) {
                m->top_k = 4;
                m->shared_experts = 2;
                m->shared_gate = 1;
                hlx_hf_gating_set(c, HLX_MOE_SOFTMAX, 0, 1.0, 1, 1);
            }
            if (c->moe_gqa == HLX_HF_MOE_GLM4) {
                /* glm4-moe: GLM-4.5's layer: layer 0 dense (first_k_dense_replace 1), 2
                 * shared experts (moe_intermediate_size x 2), DeepSeek-V3's sigmoid gate
                 * with its correction bias (values in [-1, 1): it steers the choice), one
                 * group as the releases have, times GLM-4.5's 2.5; rotate_half RoPE over
                 * half of each head; one MTP layer after the last */
                m->dense_layers = layers > 1 ? 1 : 0;
                m->shared_experts = 2;
                m->rope_dim = m->head_dim / 2;
                hlx_hf_gating_set(c, HLX_MOE_SIGMOID, 1, 2.5, 1, 1);
                c->mtp_layers = 1;
                if (!strcmp(hlx_synth_dense[dense].family, "dots1")) {
                    /* dots1: dots.llm1's layer, the same MoE (its releases: 2 shared
                     * experts, first_k_dense_replace 1, 2.5, one group) under Qwen3's
                     * attention: head norms always, no biases, RoPE over whole heads, no
                     * MTP layer */
                    m->rope_dim = m->head_dim;
                    c->mtp_layers = 0;
                }
            }
            if (c->moe_gqa == HLX_HF_MOE_GPT_OSS) {
                /* gpt-oss: every layer MoE (intermediate_size the experts'), biases on q,
                 * k, v and o, a sink per head, the router's bias, the experts' biases, a
                 * clamped SwiGLU whose limit 1.5 the synthetic gates and ups reach (the
                 * releases' 7 would leave them alone), a window of 6 on layers 0, 2, ...,
                 * yarn (factor 4 over 64 positions, base 150000) with the ramp's ends
                 * unrounded (truncate false: 0 and 3.12 of 16 pairs, rounded 0 and 4) */
                m->ffn = m->expert_ffn;
                m->o_bias = 1;
                hlx_hf_gpt_oss_layer(c);
                m->act_alpha = 1.702;
                m->act_limit = 1.5;
                m->sliding_window = 6;
                m->sliding_pattern = 2;
                m->rope_theta = 150000.0;
                m->rope_kind = HLX_ROPE_YARN;
                m->rope_factor = 4.0;
                m->rope_orig_ctx = 64;
                m->rope_beta_fast = 32.0;
                m->rope_beta_slow = 1.0;
                m->rope_yarn_exact = 1;
            }
            if (c->moe_gqa == HLX_HF_MOE_LLAMA4) {
                /* llama4: Llama 4's layer at 3 layers (its default): layers 0 and 1 chunked
                 * (chunks of 4) and turning by RoPE with L2-normalised q and k heads, layer
                 * 2 NoPE over the whole context with the query temperature (floor 4, slope
                 * 0.5, where Scout's 8192 and 0.1 would leave 18 positions alone); layer 1
                 * MoE (top-1 of 8 by a sigmoid, its score on the expert's input, one shared
                 * expert), layers 0 and 2 dense (width 512). At 2 layers the NoPE and the
                 * MoE layer are one (layer 1) */
                m->top_k = 1;
                m->dense_layers = 0;
                m->shared_experts = 1;
                m->moe_weight_input = 1;
                hlx_hf_gating_set(c, HLX_MOE_SIGMOID, 0, 1.0, 1, 1);
                m->nope_pattern = layers > 2 ? 3 : layers > 1 ? 2 : 0;
                m->moe_step = layers > 1 ? 2 : 0;
                m->sliding_window = 4;
                m->window_chunked = 1;
                m->sliding_pattern = m->nope_pattern;
                m->qk_norm = m->qk_norm_unit = 1;
                if (m->nope_pattern > 0) {
                    m->attn_temp_floor = 4;
                    m->attn_temp_scale = 0.5;
                }
                m->rope_theta = 500000.0;
                m->norm_eps = 1e-5;
            }
            if (c->moe_gqa == HLX_HF_MOE_DEEPSEEK) {
                /* deepseek-moe: DeepSeek-MoE's layer: layer 0 dense (first_k_dense_replace
                 * 1), 2 shared experts, a softmax gate, the top 2 not renormalised
                 * (norm_topk_prob false, as the releases) */
                m->dense_layers = layers > 1 ? 1 : 0;
                m->shared_experts = 2;
                hlx_hf_gating_set(c, HLX_MOE_SOFTMAX, 0, 1.0, 1, 1);
            }
        }
        if (!strcmp(dtype, "fp8")) { /* a scale per output channel (--fp8-format's default) */
            c->fp8 = HLX_HF_FP8_SCALE;
            c->fp8_channel = 1;
            m->weight_dtype = HLX_DTYPE_FP8;
        }
        return;
    }
    c->family = HLX_HF_MOE_MLA;
    snprintf(c->arch, sizeof(c->arch), "DeepseekV3ForCausalLM");
    snprintf(m->name, sizeof(m->name), "synth-moe-mla");
    m->attn = HLX_ATTN_MLA;
    m->q_heads = 4;
    m->kv_heads = 1;
    m->q_lora_rank = 96;
    m->kv_lora_rank = 64;
    m->qk_nope_dim = 32;
    m->qk_rope_dim = m->rope_dim = 16;
    m->head_dim = 48;
    m->v_head_dim = 32;
    m->ffn = 384;
    m->experts = 8;
    m->top_k = 2;
    m->shared_experts = 1;
    m->expert_ffn = 64;
    m->dense_layers = layers > 1 ? 1 : 0;
    hlx_hf_gating_set(c, HLX_MOE_SIGMOID, 1, 2.5, 2, 1);
    if (v2) { /* DeepSeek-V2: q_proj (as V2-Lite), softmax, 2 shared experts, the best of
               * the group whose best expert leads (group_limited_greedy), scaled by 2 */
        snprintf(c->arch, sizeof(c->arch), "DeepseekV2ForCausalLM");
        snprintf(m->name, sizeof(m->name), "synth-deepseek-v2");
        m->q_lora_rank = 0;
        m->shared_experts = 2;
        hlx_hf_gating_set(c, HLX_MOE_SOFTMAX, 0, 2.0, 2, 1);
        m->moe_group_score = HLX_MOE_GROUP_MAX;
    }
    if (!strcmp(dtype, "fp8")) {
        c->fp8 = HLX_HF_FP8_BLOCK;
        m->weight_dtype = HLX_DTYPE_FP8;
    }
}

/* --model: the dense shapes of a model description (what `helix decode --model` loads). */
static int hlx_synth_model(hlx_hf_config_t *c, const char *name, int layers)
{
    hlx_model_t m;
    char err[1024];
    hlx_status_t st;

    /* (Gemma's families hold more than a model description says: their norms, GeGLU, the
     * scaled embedding, Gemma 2's and 3's output norms and query_pre_attn_scalar; from M's
     * fields alone gemma decoded otherwise than M and gemma2 and gemma3 wrote checkpoints
     * their reader refused) */
    if (c->family != HLX_HF_DENSE || c->moe_gqa ||
        (c->fused & (HLX_HF_ROPE_PAIRS | HLX_HF_GEMMA)) || hlx_hf_granite(c) ||
        hlx_hf_olmo2(c) || hlx_hf_starcoder2(c)) {
        fprintf(stderr, "helix model synth: --model: only with --family dense, phi3, "
                "internlm2, qwen2, qwen3 or smollm3\n");
        return -1;
    }
    if ((st = hlx_model_load(name, &m, err, sizeof(err))) != HLX_OK) {
        fprintf(stderr, "helix model synth: --model: %s\n", err);
        return -1;
    }
    /* the family says what the layer holds: a model that needs more decodes otherwise */
    if (m.attn_softcap > 0.0 || m.final_softcap > 0.0 || m.embed_scale ||
        m.ffn_act != HLX_ACT_SILU || m.attn_scalar > 0.0 || m.rope_local_theta > 0.0 ||
        m.embed_mult > 0.0 || m.residual_mult > 0.0 || m.logits_scale > 0.0) {
        fprintf(stderr, "helix model synth: --model %s: has %s, which %s does not hold "
                "(--family gemma2, gemma3 and granite write Gemma's and Granite's layers, in "
                "their own shapes)\n", name,
                m.attn_softcap > 0.0 ? "attn_softcap" : m.final_softcap > 0.0 ? "final_softcap"
                : m.embed_scale ? "embed_scale" : m.ffn_act != HLX_ACT_SILU ? "ffn_act gelu_tanh"
                : m.embed_mult > 0.0 ? "embed_mult" : m.residual_mult > 0.0 ? "residual_mult"
                : m.logits_scale > 0.0 ? "logits_scale" : m.attn_scalar > 0.0 ? "attn_scalar"
                : "rope_local_theta", c->arch);
        return -1;
    }
    /* NoPE layers: SmolLM3's no_rope_layers hold them (hlx_hf_config_text writes the list) */
    if (m.nope_pattern > 0 && !hlx_hf_reads_nope(c)) {
        fprintf(stderr, "helix model synth: --model %s: has nope_pattern (layers without "
                "RoPE), which %s does not hold; give --family smollm3\n", name, c->arch);
        return -1;
    }
    if (m.post_norms) {
        fprintf(stderr, "helix model synth: --model %s: has post_norms, which %s does not "
                "hold (--family glm4 writes them, in its own shapes)\n", name, c->arch);
        return -1;
    }
    if (m.norm_layer || m.ffn_plain || m.ffn_bias) {
        fprintf(stderr, "helix model synth: --model %s: has %s, which %s does not hold "
                "(--family starcoder2 writes StarCoder2's layer, in its own shapes)\n", name,
                m.norm_layer ? "norm layernorm" : m.ffn_plain ? "ffn_kind mlp" : "ffn_bias",
                c->arch);
        return -1;
    }
    /* dual chunk attention: read for the Qwen classes alone (as vLLM reads it) */
    if (m.dca_chunk > 0 && !hlx_hf_reads_dca(c)) {
        fprintf(stderr, "helix model synth: --model %s: has dual chunk attention "
                "(dca_chunk_size), which %s does not hold; give --family qwen2 or qwen3\n",
                name, c->arch);
        return -1;
    }
    /* Phi-3's config windows every layer; Llama's has no window */
    if (m.sliding_window > 0 && (!(c->fused & HLX_HF_FUSED_QKV) || m.sliding_pattern != 0)) {
        fprintf(stderr, "helix model synth: --model %s: has sliding_window%s, which %s does "
                "not hold (--family phi3 writes a window on every layer)\n", name,
                m.sliding_pattern != 0 ? " with a sliding_pattern" : "", c->arch);
        return -1;
    }
    if ((m.qkv_bias && !c->m.qkv_bias) || (m.qk_norm && !c->m.qk_norm)) {
        fprintf(stderr, "helix model synth: --model %s: has %s, which %s does not hold; give "
                "--family %s\n", name, m.qkv_bias ? "qkv_bias" : "qk_norm", c->arch,
                m.qkv_bias ? "qwen2" : "qwen3");
        return -1;
    }
    /* Phi-3's partial_rotary_factor gives rope_dim < head_dim; Llama has none */
    if (m.attn != HLX_ATTN_GQA || m.experts > 0 || m.v_head_dim != m.head_dim ||
        (m.rope_dim != m.head_dim && !(c->fused & HLX_HF_FUSED_QKV)) || m.rope_dim < 2) {
        fprintf(stderr, "helix model synth: --model %s: a %s checkpoint needs a dense GQA "
                "model with %s\n", name, c->arch,
                c->fused & HLX_HF_FUSED_QKV ? "v_head_dim = head_dim and rope_dim >= 2"
                         : "rope_dim = v_head_dim = head_dim");
        return -1;
    }
    /* InternLM2's attention takes hidden_size / num_attention_heads as its head size */
    if ((c->fused & HLX_HF_QKV_GROUPED) && (int64_t)m.head_dim * m.q_heads != m.hidden) {
        fprintf(stderr, "helix model synth: --model %s: an InternLM2ForCausalLM checkpoint "
                "needs head_dim x q_heads = hidden (%d x %d is not %d)\n", name, m.head_dim,
                m.q_heads, m.hidden);
        return -1;
    }
    if (layers == 0 && m.layers > HLX_SYNTH_MAX_LAYERS) {
        fprintf(stderr, "helix model synth: --model %s: %d layers, more than the %d a synthetic "
                "checkpoint takes; give --layers N (1 to %d)\n", name, m.layers,
                HLX_SYNTH_MAX_LAYERS, HLX_SYNTH_MAX_LAYERS);
        return -1;
    }
    m.weight_dtype = c->m.weight_dtype;
    m.kv_dtype = HLX_DTYPE_BF16;
    m.qkv_bias = c->m.qkv_bias;
    m.qk_norm = c->m.qk_norm;
    if (layers > 0)
        m.layers = layers;
    m.dense_layers = m.layers;
    c->m = m;
    c->tie_word_embeddings = m.tie_embeddings; /* no lm_head.weight written */
    return 0;
}

/* --out before anything is computed: a directory that exists and can be written, or a path
 * that does not exist yet (*missing_p; created once the size is accepted). Messages name
 * --out; the caller exits 2. */
static int hlx_synth_out_check(const char *out, int *missing_p)
{
    struct stat sb;
    int e;

    *missing_p = 0;
    if (out[0] == '\0') {
        fprintf(stderr, "helix model synth: --out: empty path; give the directory to write the "
                "checkpoint to\n");
        return -1;
    }
    if (stat(out, &sb) == 0) {
        if (!S_ISDIR(sb.st_mode)) {
            fprintf(stderr, "helix model synth: --out %s: exists and is not a directory; give a "
                    "new or an existing directory\n", out);
            return -1;
        }
        if (access(out, W_OK | X_OK) != 0) {
            e = errno;
            fprintf(stderr, "helix model synth: --out %s: cannot write into the directory: "
                    "%s\n", out, strerror(e));
            return -1;
        }
        return 0;
    }
    e = errno;
    if (e != ENOENT) {
        fprintf(stderr, "helix model synth: --out %s: %s%s\n", out, strerror(e),
                e == ENOTDIR ? " (a part of the path is a file)" : "");
        return -1;
    }
    if (lstat(out, &sb) == 0) { /* the name is taken by a link to nothing */
        fprintf(stderr, "helix model synth: --out %s: a symbolic link whose target does not "
                "exist; create the target directory or give another path\n", out);
        return -1;
    }
    *missing_p = 1;
    return 0;
}

/* --kv-scales K,V[,K,V...]: pairs of scales in [1e-38, FLT_MAX] (positive, finite, not 0
 * in fp32, their fp32 inverses finite). */
static int hlx_synth_kv_scales(const char *arg, hlx_synth_ctx_t *ctx)
{
    char buf[2048], why[160], *tok, *next;
    int n = 0;

    if (strlen(arg) >= sizeof(buf)) {
        fprintf(stderr, "helix model synth: --kv-scales: longer than %zu characters\n",
                sizeof(buf) - 1);
        return -1;
    }
    strcpy(buf, arg);
    for (tok = buf; tok != NULL; tok = next) {
        if ((next = strchr(tok, ',')) != NULL)
            *next++ = '\0';
        if (n == 2 * HLX_SYNTH_MAX_KVS) {
            fprintf(stderr, "helix model synth: --kv-scales: at most %d pairs\n",
                    HLX_SYNTH_MAX_KVS);
            return -1;
        }
        if (hlx_parse_num(tok, 1e-38, FLT_MAX, &ctx->kvs[n++], why, sizeof(why)) !=
            HLX_OK) {
            fprintf(stderr, "helix model synth: --kv-scales: value %d: %s\n", n, why);
            return -1;
        }
    }
    if (n % 2 != 0) {
        fprintf(stderr, "helix model synth: --kv-scales '%s': expected pairs K,V (a key scale, "
                "then a value scale) for layers 0, 1, ...\n", arg);
        return -1;
    }
    ctx->nkvs = n / 2;
    ctx->cfg.kv_scales = HLX_HF_KV_SCALES_TENSOR;
    return 0;
}

/* The KV-cache scales' entries at the end of the list: k_scale, v_scale of each layer. */
static hlx_status_t hlx_synth_kv_list(hlx_synth_ctx_t *ctx, hlx_hf_expect_t **list_p,
                                      size_t *n_p, char *err, size_t errlen)
{
    const int L = ctx->cfg.m.layers;
    hlx_hf_expect_t *v = realloc(*list_p, (*n_p + 2 * (size_t)L) * sizeof(*v));
    int l, j;

    if (v == NULL) {
        snprintf(err, errlen, "out of memory");
        return HLX_ERR_NOMEM;
    }
    *list_p = v;
    ctx->kvs_at = *n_p;
    for (l = 0; l < L; l++)
        for (j = 0; j < 2; j++) {
            hlx_hf_expect_t *e = &v[(*n_p)++];
            memset(e, 0, sizeof(*e));
            hlx_hf_kv_scale_name(&ctx->cfg, l, j, e->name, sizeof(e->name));
            e->dtype = HLX_ST_F32;
            e->cls = HLX_HFC_SCALE;
            e->split = HLX_HFS_REPLICATED;
            e->ndim = ctx->cfg.kv_proj_names ? 0 : 1; /* AutoFP8's, ModelOpt's: [] */
            e->shape[0] = hlx_hf_kv_scale_count(&ctx->cfg);
        }
    return HLX_OK;
}

/* The multi-token-prediction layers (num_nextn_predict_layers, GLM-4.5's) appended to the
 * list: each the tensors of one more layer of the model's last kind under
 * model.layers.{layers + i}., plus eh_proj [H, 2H], enorm, hnorm and shared_head.norm [H],
 * as the releases store them, so that a reader has them to leave out. */
static hlx_status_t hlx_synth_mtp_list(hlx_synth_ctx_t *ctx, hlx_hf_expect_t **list_p,
                                       size_t *n_p, char *err, size_t errlen)
{
    static const char *const norms[] = { "enorm", "hnorm", "shared_head.norm" };
    hlx_hf_config_t c2 = ctx->cfg;
    const int L = ctx->cfg.m.layers, H = ctx->cfg.m.hidden;
    hlx_hf_expect_t *all = NULL, *v;
    size_t na = 0, i;
    hlx_status_t st;
    int l, k;

    ctx->mtp_at = *n_p;
    if (ctx->cfg.mtp_layers <= 0)
        return HLX_OK;
    c2.m.layers = L + ctx->cfg.mtp_layers;
    if ((st = hlx_hf_expect(&c2, &all, &na, err, errlen)) != HLX_OK)
        return st;
    v = realloc(*list_p, (*n_p + na + 4 * (size_t)ctx->cfg.mtp_layers) * sizeof(*v));
    if (v == NULL) {
        free(all);
        snprintf(err, errlen, "out of memory");
        return HLX_ERR_NOMEM;
    }
    *list_p = v;
    for (i = 0; i < na; i++) {
        int layer, at = 0;
        if (sscanf(all[i].name, "model.layers.%d.%n", &layer, &at) == 1 && at > 0 && layer >= L)
            v[(*n_p)++] = all[i];
    }
    free(all);
    for (l = L; l < c2.m.layers; l++)
        for (k = 0; k < 4; k++) {
            hlx_hf_expect_t *e = &v[(*n_p)++];
            memset(e, 0, sizeof(*e));
            e->dtype = ctx->cfg.st_dtype;
            e->split = HLX_HFS_REPLICATED;
            e->shape[0] = H;
            if (k == 0) { /* eh_proj: [embedding norm | hidden norm] -> H */
                snprintf(e->name, sizeof(e->name), "model.layers.%d.eh_proj.weight", l);
                e->cls = HLX_HFC_ATTN;
                e->ndim = 2;
                e->shape[1] = 2 * (int64_t)H;
            } else {
                snprintf(e->name, sizeof(e->name), "model.layers.%d.%s.weight", l, norms[k - 1]);
                e->cls = HLX_HFC_NORM;
                e->ndim = 1;
            }
        }
    ctx->mtp_n = *n_p - ctx->mtp_at;
    return HLX_OK;
}

/* SIGINT or SIGTERM stops a synth under way: the writer's next row refuses
 * (hlx_synth_fill), the files not yet in place are dropped, the folder this run made is
 * removed, and the signal is raised again. */
static void hlx_synth_on_signal(int sig)
{
    hlx_synth_signal = sig;
}

/* A folder this run made and the files in it (a checkpoint's: no subfolders). */
static void hlx_synth_remove_made(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    if (d != NULL) {
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                (void)unlinkat(dirfd(d), e->d_name, 0);
        closedir(d);
    }
    (void)rmdir(dir);
}

/* "TMP/rest" said as "OUT/rest": messages name --out, not the folder written before it. */
static void hlx_synth_err_name(char *err, size_t errlen, const char *tmp, const char *out)
{
    char buf[1200];
    size_t n = strlen(tmp);

    if (strncmp(err, tmp, n) != 0)
        return;
    snprintf(buf, sizeof(buf), "%s%s", out, err + n);
    snprintf(err, errlen, "%s", buf);
}

/* Writes the checkpoint: into --out itself when it exists (hlx_ckpt_write: no file in place
 * unless all are complete), else into a hidden sibling folder (".NAME.synth-XXXXXX") renamed
 * to --out once complete, so that a failed or interrupted run (SIGINT, SIGTERM) leaves no
 * folder behind. Returns 0, or the exit code after saying why; a signal is raised again
 * once the folder is gone. */
static int hlx_synth_write(const char *out, int missing, const hlx_hf_expect_t *list,
                           size_t n, int shards, hlx_synth_ctx_t *ctx)
{
    struct sigaction sa, old_int, old_term;
    char tmp[1100], err[1200];
    const char *dir = out, *base;
    hlx_status_t st = HLX_OK;
    size_t len = strlen(out);
    mode_t mask;
    int e, sig;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = hlx_synth_on_signal;
    sigemptyset(&sa.sa_mask);
    hlx_synth_signal = 0;
    sigaction(SIGINT, NULL, &old_int);
    sigaction(SIGTERM, NULL, &old_term);
    if (old_int.sa_handler != SIG_IGN) /* a background job's ignored SIGINT stays ignored */
        sigaction(SIGINT, &sa, NULL);
    if (old_term.sa_handler != SIG_IGN)
        sigaction(SIGTERM, &sa, NULL);
    if (missing) {
        while (len > 1 && out[len - 1] == '/')
            len--;
        for (base = out + len; base > out && base[-1] != '/'; base--)
            ;
        if (len + 32 > sizeof(tmp)) {
            fprintf(stderr, "helix model synth: --out %s: path too long; give a shorter "
                    "one\n", out);
            st = HLX_ERR_INVALID;
            goto restore;
        }
        snprintf(tmp, sizeof(tmp), "%.*s.%.*s.synth-XXXXXX", (int)(base - out), out,
                 (int)(len - (size_t)(base - out)), base);
        if (mkdtemp(tmp) == NULL) {
            e = errno;
            fprintf(stderr, "helix model synth: --out %s: cannot create the directory: %s\n",
                    out, strerror(e));
            st = e == EIO || e == ENOMEM ? HLX_ERR_IO : HLX_ERR_INVALID;
            goto restore;
        }
        mask = umask(0); /* mkdtemp's 0700 made what mkdir(out, 0755) would have */
        umask(mask);
        (void)chmod(tmp, 0755 & ~mask);
        dir = tmp;
    }
    /* shards, index and config.json together: none in place unless all are complete */
    st = hlx_ckpt_write(dir, list, n, shards, &ctx->cfg, hlx_synth_fill, ctx, err, sizeof(err));
    if (st == HLX_OK && missing && !hlx_synth_signal && rename(tmp, out) != 0) {
        e = errno;
        snprintf(err, sizeof(err), "--out %s: cannot put the checkpoint in place: %s%s", out,
                 strerror(e), e == ENOTEMPTY || e == EEXIST
                                  ? " (the folder appeared while it was written; give a new one)"
                                  : "");
        st = e == ENOTEMPTY || e == EEXIST ? HLX_ERR_INVALID : HLX_ERR_IO;
    }
    if ((st != HLX_OK || hlx_synth_signal) && missing)
        hlx_synth_remove_made(tmp);
    if (st != HLX_OK && !hlx_synth_signal) {
        if (missing)
            hlx_synth_err_name(err, sizeof(err), tmp, out);
        fprintf(stderr, "helix model synth: %s\n", err);
    }
restore:
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if ((sig = hlx_synth_signal) != 0) { /* ended as the signal would have ended it */
        signal(sig, SIG_DFL);
        raise(sig);
    }
    return st == HLX_OK ? 0 : hlx_status_exit_code(st);
}

/* Fused experts as their checkpoints store them: the per-expert entries of the list (the
 * views the reader makes, hlx_hf_expert_views) replaced, per layer, by the nf entries of
 * fused (each name a format of the layer number), at the first expert's place. */
static hlx_status_t hlx_synth_fused_list(hlx_hf_expect_t *list, size_t *n_p,
                                         const hlx_hf_expect_t *fused, size_t nf, char *err,
                                         size_t errlen)
{
    hlx_hf_expect_t *out = malloc((*n_p + nf) * sizeof(*out));
    size_t i, k, n = 0;
    int l, e, at;

    if (out == NULL) {
        snprintf(err, errlen, "out of memory");
        return HLX_ERR_NOMEM;
    }
    for (i = 0; i < *n_p; i++) {
        at = 0;
        if (sscanf(list[i].name, "model.layers.%d.mlp.experts.%d.%n", &l, &e, &at) != 2 ||
            at == 0) {
            out[n++] = list[i];
            continue;
        }
        if (e != 0 || strcmp(list[i].name + at, "gate_proj.weight"))
            continue; /* in the fused ones */
        for (k = 0; k < nf; k++, n++) { /* 3 per-expert entries or more gave way to these */
            out[n] = fused[k];
            snprintf(out[n].name, sizeof(out[n].name), fused[k].name, l);
        }
    }
    memcpy(list, out, n * sizeof(*out));
    free(out);
    *n_p = n;
    return HLX_OK;
}

/* One fused entry of E experts (a format of the layer number): [E][d1][d2], or [E][d1]
 * where d2 is 0. */
static void hlx_synth_fused_entry(hlx_hf_expect_t *f, const hlx_hf_config_t *c,
                                  const char *name, int64_t d1, int64_t d2)
{
    memset(f, 0, sizeof(*f));
    f->ndim = d2 ? 3 : 2;
    f->shape[0] = c->m.experts;
    f->shape[1] = d1;
    f->shape[2] = d2;
    snprintf(f->name, sizeof(f->name), "%s", name);
    f->dtype = c->st_dtype;
    f->cls = HLX_HFC_EXPERT;
    f->split = HLX_HFS_EXPERT;
}

/* Granite MoE Shared's shared MLP as its checkpoints store it: per layer, the shared
 * experts' gate_proj entry becomes shared_mlp.input_linear.weight [2 Fs, H] (gate rows,
 * then up rows), down_proj's shared_mlp.output_linear.weight [H, Fs], up_proj's goes
 * (the views the reader makes, hlx_hf_granite_views). */
static hlx_status_t hlx_synth_shared_list(const hlx_hf_config_t *c, hlx_hf_expect_t *list,
                                          size_t *n_p)
{
    const int64_t H = c->m.hidden, Fs = (int64_t)c->m.shared_experts * c->m.expert_ffn;
    size_t i, n = 0;
    int l, at;

    for (i = 0; i < *n_p; i++) {
        hlx_hf_expect_t e = list[i];
        at = 0;
        if (sscanf(e.name, "model.layers.%d.mlp.shared_experts.%n", &l, &at) == 1 && at > 0) {
            const char *w = e.name + at;
            if (!strcmp(w, "up_proj.weight"))
                continue; /* in input_linear */
            if (!strcmp(w, "gate_proj.weight")) {
                e.shape[0] = 2 * Fs;
                e.shape[1] = H;
                snprintf(e.name, sizeof(e.name), "model.layers.%d.shared_mlp.input_linear.weight",
                         l);
            } else if (!strcmp(w, "down_proj.weight")) {
                snprintf(e.name, sizeof(e.name),
                         "model.layers.%d.shared_mlp.output_linear.weight", l);
            }
        }
        list[n++] = e;
    }
    *n_p = n;
    return HLX_OK;
}

/* gpt-oss's: mlp.experts.gate_up_proj [E, H, 2 Fe] (gate and up interleaved),
 * gate_up_proj_bias [E, 2 Fe], down_proj [E, Fe, H] and down_proj_bias [E, H]. Granite
 * MoE's: block_sparse_moe.input_linear.weight [E, 2 Fe, H] (gate rows, then up rows) and
 * output_linear.weight [E, H, Fe], output-major. */
static hlx_status_t hlx_synth_experts_list(const hlx_hf_config_t *c, hlx_hf_expect_t *list,
                                           size_t *n_p, char *err, size_t errlen)
{
    const int64_t H = c->m.hidden, Fe = c->m.expert_ffn;
    hlx_hf_expect_t f[4];

    if (c->moe_gqa == HLX_HF_MOE_GRANITE) {
        hlx_synth_fused_entry(&f[0], c, "model.layers.%d.block_sparse_moe.input_linear.weight",
                              2 * Fe, H);
        hlx_synth_fused_entry(&f[1], c, "model.layers.%d.block_sparse_moe.output_linear.weight",
                              H, Fe);
        hlx_status_t st = hlx_synth_fused_list(list, n_p, f, 2, err, errlen);
        return st != HLX_OK ? st : hlx_synth_shared_list(c, list, n_p);
    }
    hlx_synth_fused_entry(&f[0], c, "model.layers.%d.mlp.experts.gate_up_proj", H, 2 * Fe);
    hlx_synth_fused_entry(&f[1], c, "model.layers.%d.mlp.experts.gate_up_proj_bias", 2 * Fe, 0);
    hlx_synth_fused_entry(&f[2], c, "model.layers.%d.mlp.experts.down_proj", Fe, H);
    hlx_synth_fused_entry(&f[3], c, "model.layers.%d.mlp.experts.down_proj_bias", H, 0);
    return hlx_synth_fused_list(list, n_p, f, 4, err, errlen);
}

static int hlx_cmd_model_synth(int argc, char **argv)
{
    enum { O_FAMILY = 1, O_OUT, O_LAYERS, O_SEED, O_DTYPE, O_SHARDS, O_MODEL, O_MAX_BYTES,
           O_KV_SCALES, O_KV_SCALES_HEAD, O_FP8_SCALES, O_FP8_FORMAT };
    static const struct option opts[] = {
        { "family", required_argument, NULL, O_FAMILY },
        { "out", required_argument, NULL, O_OUT },
        { "layers", required_argument, NULL, O_LAYERS },
        { "seed", required_argument, NULL, O_SEED },
        { "dtype", required_argument, NULL, O_DTYPE },
        { "shards", required_argument, NULL, O_SHARDS },
        { "model", required_argument, NULL, O_MODEL },
        { "max-bytes", required_argument, NULL, O_MAX_BYTES },
        { "kv-scales", required_argument, NULL, O_KV_SCALES },
        { "kv-scales-per-head", no_argument, NULL, O_KV_SCALES_HEAD },
        { "fp8-scales", required_argument, NULL, O_FP8_SCALES },
        { "fp8-format", required_argument, NULL, O_FP8_FORMAT },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *family = NULL, *out = NULL, *dtype = "bf16", *model = NULL, *kvs = NULL;
    long layers = 0, seed = 1, shards = 2;
    int64_t max_bytes = (int64_t)HLX_SYNTH_MAX_BYTES;
    hlx_synth_ctx_t ctx;
    hlx_hf_expect_t *list = NULL;
    size_t n = 0, i;
    char err[1024], why[160];
    hlx_status_t st;
    int o, moe, dense, missing = 0, kvs_head = 0, fp8_tensor = -1, fp8_form = -1;
    uint64_t bytes = 0, data = 0;

    optind = 1;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (o) {
        case O_FAMILY: family = optarg; break;
        case O_OUT:    out = optarg; break;
        case O_DTYPE:  dtype = optarg; break;
        case O_MODEL:  model = optarg; break;
        case O_KV_SCALES: kvs = optarg; break;
        case O_KV_SCALES_HEAD: kvs_head = 1; break;
        case O_FP8_SCALES: /* index 1: tensor */
            if (hlx_parse_choice(optarg, "channel|tensor", &fp8_tensor, why, sizeof(why)) !=
                HLX_OK) {
                fprintf(stderr, "helix model synth: --fp8-scales: %s\n", why);
                return 2;
            }
            break;
        case O_FP8_FORMAT: /* the indices are HLX_SYNTH_FMT_* */
            if (hlx_parse_choice(optarg,
                                 "compressed-tensors|fp8|modelopt|fp8-block|"
                                 "compressed-tensors-block|fbgemm_fp8", &fp8_form,
                                 why, sizeof(why)) != HLX_OK) {
                fprintf(stderr, "helix model synth: --fp8-format: %s\n", why);
                return 2;
            }
            break;
        case O_LAYERS:
            if (hlx_model_int("synth", "--layers", optarg, 1, HLX_SYNTH_MAX_LAYERS, &layers))
                return 2;
            break;
        case O_SEED:   if (hlx_model_int("synth", "--seed", optarg, 0, 0x7fffffffL, &seed)) return 2; break;
        case O_SHARDS: if (hlx_model_int("synth", "--shards", optarg, 1, 16, &shards)) return 2; break;
        case O_MAX_BYTES:
            if (hlx_parse_int(optarg, 1, INT64_MAX, &max_bytes, why, sizeof(why)) != HLX_OK) {
                fprintf(stderr, "helix model synth: --max-bytes: %s\n", why);
                return 2;
            }
            break;
        case 'h':      hlx_synth_usage(stdout); return 0;
        default:       hlx_synth_usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "helix model synth: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    dense = family != NULL ? hlx_synth_dense_index(family) : -1;
    if (family == NULL ||
        (dense < 0 && strcmp(family, "moe-mla") && strcmp(family, "deepseek-v2"))) {
        char names[512];
        size_t f, at = 0;
        for (f = 0; f < HLX_SYNTH_NDENSE && at < sizeof(names); f++) /* the table's families */
            at += (size_t)snprintf(names + at, sizeof(names) - at, "%s, ",
                                   hlx_synth_dense[f].family);
        fprintf(stderr, "helix model synth: --family: %s (%smoe-mla or deepseek-v2)\n",
                family ? family : "required", names);
        return 2;
    }
    if (out == NULL) {
        fprintf(stderr, "helix model synth: --out: required (directory to write)\n");
        return 2;
    }
    if (hlx_synth_out_check(out, &missing) != 0)
        return 2;
    moe = dense < 0; /* moe-mla, deepseek-v2 */
    if (strcmp(dtype, "bf16") && strcmp(dtype, "f32") && strcmp(dtype, "fp8")) {
        fprintf(stderr, "helix model synth: --dtype: '%s' (bf16, f32 or fp8)\n", dtype);
        return 2;
    }
    memset(&ctx, 0, sizeof(ctx));
    /* llama4: 3 layers, so that its NoPE layer and its MoE layer are not one (2 and 1) */
    hlx_synth_config(&ctx.cfg, dense, !strcmp(family, "deepseek-v2"),
                     layers ? (int)layers : !strcmp(family, "llama4") ? 3 : 2,
                     dtype);
    if (model != NULL && hlx_synth_model(&ctx.cfg, model, (int)layers) != 0)
        return 2;
    if ((hlx_hf_gpt_oss(&ctx.cfg) || ctx.cfg.moe_gqa == HLX_HF_MOE_GRANITE) && ctx.cfg.fp8) {
        /* their readers take no quantized experts */
        fprintf(stderr, "helix model synth: --dtype fp8: not with --family %s (its fused "
                "experts are read in bf16 or f32); give bf16 or f32\n", family);
        return 2;
    }
    ctx.seed = (uint64_t)seed;
    ctx.cfg.synth_seed = seed;
    if (kvs_head && kvs == NULL) {
        fprintf(stderr, "helix model synth: --kv-scales-per-head: needs --kv-scales\n");
        return 2;
    }
    if (kvs != NULL && hlx_synth_kv_scales(kvs, &ctx) != 0)
        return 2;
    if ((fp8_tensor >= 0 || fp8_form >= 0) && ctx.cfg.fp8 != HLX_HF_FP8_SCALE) {
        fprintf(stderr, "helix model synth: --%s: with --dtype fp8 and a GQA family\n",
                fp8_tensor >= 0 ? "fp8-scales" : "fp8-format");
        return 2;
    }
    if (fp8_form > HLX_SYNTH_FMT_CT && fp8_tensor >= 0 &&
        (fp8_form == HLX_SYNTH_FMT_FBGEMM ? fp8_tensor == 1
                                          : fp8_tensor == 0 || fp8_form >= HLX_SYNTH_FMT_BLOCK)) {
        static const char *const name[] = { "", "fp8", "modelopt", "fp8-block",
                                            "compressed-tensors-block", "fbgemm_fp8" };
        fprintf(stderr, "helix model synth: --fp8-scales: the %s form has %s\n", name[fp8_form],
                fp8_form == HLX_SYNTH_FMT_FBGEMM
                    ? "one scale per channel (--fp8-scales channel, or leave it out)"
                : fp8_form >= HLX_SYNTH_FMT_BLOCK
                    ? "one scale per block of 32 x 32 (leave --fp8-scales out)"
                    : "one scale per tensor (--fp8-scales tensor, or leave it out)");
        return 2;
    }
    if (fp8_form == HLX_SYNTH_FMT_FBGEMM && kvs != NULL) {
        fprintf(stderr, "helix model synth: --kv-scales: the fbgemm_fp8 form has no KV-cache "
                "scales\n");
        return 2;
    }
    if ((fp8_form == HLX_SYNTH_FMT_FP8 || fp8_form == HLX_SYNTH_FMT_MODELOPT) && kvs_head) {
        fprintf(stderr, "helix model synth: --kv-scales-per-head: the %s form has one "
                "KV-cache scale per tensor\n", fp8_form == HLX_SYNTH_FMT_FP8 ? "fp8" : "modelopt");
        return 2;
    }
    if (fp8_form == HLX_SYNTH_FMT_BLOCK || fp8_form == HLX_SYNTH_FMT_CT_BLOCK) {
        /* DeepSeek's layout on a dense model (Qwen3's FP8), or llm-compressor's FP8_BLOCK */
        ctx.cfg.fp8 = HLX_HF_FP8_BLOCK;
        ctx.cfg.block_scale_plain = fp8_form == HLX_SYNTH_FMT_CT_BLOCK;
    } else if (fp8_form == HLX_SYNTH_FMT_FBGEMM) { /* Meta's: per channel, nothing else */
        ctx.cfg.fp8_form = HLX_HF_QF_FBGEMM;
    } else if (fp8_form == HLX_SYNTH_FMT_FP8 || fp8_form == HLX_SYNTH_FMT_MODELOPT) {
        /* per tensor, static input scales, KV scales as k_proj.k_scale */
        ctx.cfg.fp8_form = fp8_form == HLX_SYNTH_FMT_FP8 ? HLX_HF_QF_FP8 : HLX_HF_QF_MODELOPT;
        ctx.cfg.fp8_input_scale = 1;
        ctx.cfg.kv_proj_names = 1;
    }
    if (fp8_tensor == 1 || fp8_form == HLX_SYNTH_FMT_FP8 || fp8_form == HLX_SYNTH_FMT_MODELOPT)
        ctx.cfg.fp8_channel = 0;
    if (kvs_head)
        ctx.cfg.kv_scales = HLX_HF_KV_SCALES_HEAD;
    st = hlx_hf_expect(&ctx.cfg, &list, &n, err, sizeof(err));
    if (st == HLX_OK && (hlx_hf_gpt_oss(&ctx.cfg) || ctx.cfg.moe_gqa == HLX_HF_MOE_GRANITE))
        st = hlx_synth_experts_list(&ctx.cfg, list, &n, err, sizeof(err));
    if (st == HLX_OK)
        st = hlx_synth_mtp_list(&ctx, &list, &n, err, sizeof(err));
    for (i = 0; st == HLX_OK && ctx.cfg.fp8_form == HLX_HF_QF_CT && i < n; i++)
        if (list[i].ndim == 0) /* one value: llm-compressor stores [1], torch scalars [] */
            list[i].ndim = 1;
    if (st == HLX_OK && ctx.nkvs > 0)
        st = hlx_synth_kv_list(&ctx, &list, &n, err, sizeof(err));
    if (st == HLX_OK && (size_t)shards > n)
        shards = (long)n;
    /* the whole size first: nothing is written for a checkpoint over --max-bytes */
    if (st == HLX_OK)
        st = hlx_ckpt_write_size(list, n, (int)shards, &ctx.cfg, &bytes, err, sizeof(err));
    if (st == HLX_OK && bytes > (uint64_t)max_bytes) {
        char hb[32], hm[32];
        fprintf(stderr, "helix model synth: the checkpoint would take %llu bytes (%s), more than "
                "--max-bytes %lld (%s); give a larger --max-bytes to write it, or fewer "
                "--layers\n", (unsigned long long)bytes, hlx_format_bytes(bytes, hb, sizeof(hb)),
                (long long)max_bytes, hlx_format_bytes((uint64_t)max_bytes, hm, sizeof(hm)));
        free(list);
        return 2;
    }
    for (i = 0; st == HLX_OK && !moe && i < n; i++) {
        hlx_hf_weight_t w;
        int layer;
        int64_t wrow;
        if (list[i].cls == HLX_HFC_ROUTER || list[i].cls == HLX_HFC_EXPERT ||
            list[i].cls == HLX_HFC_SHARED || list[i].cls == HLX_HFC_SCALE ||
            (i >= ctx.mtp_at && i < ctx.mtp_at + ctx.mtp_n))
            continue; /* Qwen2/3-MoE: no runtime weight of the dense numbering; scales
                       * (fp8 weights', the KV cache's) none either; MTP layers: not read */
        if (hlx_hf_weight_at(&ctx.cfg.m, ctx.cfg.fused, list[i].name, 0, &w, &layer, &wrow)) {
            snprintf(err, sizeof(err), "%s: no runtime weight", list[i].name);
            st = HLX_ERR_INTERNAL;
        }
    }
    if (st == HLX_OK) {
        int rc = hlx_synth_write(out, missing, list, n, (int)shards, &ctx);
        if (rc != 0) {
            free(list);
            return rc;
        }
    }
    for (i = 0; i < n; i++)
        data += (uint64_t)list[i].shape[0] * (uint64_t)(list[i].ndim >= 2 ? list[i].shape[1] : 1) *
                (uint64_t)(list[i].ndim == 3 ? list[i].shape[2] : 1) *
                hlx_st_dtype_size(list[i].dtype);
    free(list);
    if (st != HLX_OK) {
        fprintf(stderr, "helix model synth: %s\n", err);
        return hlx_status_exit_code(st);
    }
    printf("helix model synth: wrote %s: %s, %zu tensors, %llu bytes in %ld file(s)\n", out,
           ctx.cfg.arch, n, (unsigned long long)data, shards);
    return 0;
}

/* ---- info -------------------------------------------------------------------------- */

static void hlx_info_usage(FILE *f)
{
    fprintf(f,
        "usage: helix model info DIR [--kvp K] [--tpa T] [--ep E] [--json] [--config-only]\n"
        "                            [--scan]\n\n"
        "Checks a Hugging Face checkpoint (config.json, safetensors shards, index: every\n"
        "tensor present with its shape and dtype, nothing unknown) and prints its\n"
        "architecture, parameter count, bytes per tensor class and bytes per rank for a\n"
        "Helix layout of N = KVP x TPA ranks: attention heads over TPA, W_o, dense FFN,\n"
        "shared experts, the LM head and the embedding (its vocabulary slices) over N,\n"
        "routed experts over EP groups of N / EP ranks; norms, router and MLA\n"
        "down-projections on every rank.\n\n"
        "  --kvp K     KV-parallel ranks (default 1)\n"
        "  --tpa T     tensor-parallel attention shards, divides the query heads (default 1)\n"
        "  --ep E      expert-parallel groups, divides the routed experts and N (default 1)\n"
        "  --json      one JSON object instead of the table; its \"model\" member is a\n"
        "              model file (the weights in held_dtype) that helix plan --model and\n"
        "              decode --model take, saved alone or as the whole document\n"
        "  --config-only  sizes from config.json alone (no safetensors read or checked)\n"
        "  --scan      also read every value of every tensor (all shards, each shard front to\n"
        "              back, in one streaming pass) and list each tensor holding NaN or Inf\n"
        "              (fp8 e4m3: the NaN codes 0x7f, 0xff; block scales included): its name,\n"
        "              how many, and the first one's index in the tensor's shape and value\n"
        "              (a decode that uses such a weight fails with a non-finite value)\n"
        "Exit status 2 when the checkpoint is refused (the message names file and tensor),\n"
        "or when --scan finds a value that is not finite.\n");
}

/* Bytes of tensor e on one rank (the largest share when the split is uneven). */
static double hlx_info_rank_bytes(const hlx_hf_config_t *c, const hlx_hf_expect_t *e,
                                  double bytes, int tpa, int n)
{
    switch (e->split) {
    case HLX_HFS_REPLICATED:
        return bytes;
    case HLX_HFS_TPA_HEADS:
        if (e->kv == 2) { /* qkv_proj: Q*d rows by query heads, 2*K*d by KV heads */
            double q = c->m.q_heads, k = c->m.kv_heads;
            double kt = (c->m.kv_heads + tpa - 1) / tpa;
            return bytes * (q / tpa + 2 * kt) / (q + 2 * k);
        }
        if (e->kv) {
            int K = c->m.kv_heads;
            return bytes * (double)((K + tpa - 1) / tpa) / K;
        }
        return bytes / tpa;
    default: /* HLX_HFS_N and HLX_HFS_EXPERT: E / EP experts, each split N / EP ways */
        return bytes / n;
    }
}

/* ---- info --scan: every value read -------------------------------------------------- */

/* A tensor holding non-finite values. */
typedef struct {
    const hlx_ckpt_tensor_t *t;
    hlx_ckpt_nonfinite_t     nf;
} hlx_scan_hit_t;

typedef struct {
    size_t          tensors, nhits;
    uint64_t        bytes, values; /* data bytes read; non-finite values in all */
    double          secs;
    hlx_scan_hit_t *hits;          /* in name order */
} hlx_scan_t;

/* Storage order: shard, then offset (each shard read front to back). */
static int hlx_scan_cmp_stored(const void *a, const void *b)
{
    const hlx_ckpt_tensor_t *x = *(const hlx_ckpt_tensor_t *const *)a;
    const hlx_ckpt_tensor_t *y = *(const hlx_ckpt_tensor_t *const *)b;

    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static int hlx_scan_cmp_name(const void *a, const void *b)
{
    return strcmp(((const hlx_scan_hit_t *)a)->t->name, ((const hlx_scan_hit_t *)b)->t->name);
}

/* Every tensor of ck in storage order; progress on a terminal. -1 when out of memory. */
static int hlx_info_scan(hlx_ckpt_t *ck, hlx_scan_t *sc)
{
    size_t n = hlx_ckpt_count(ck), i;
    const hlx_ckpt_tensor_t **order = calloc(n ? n : 1, sizeof(*order));
    uint64_t total = 0;
    double t0 = hlx_now_s(), shown = t0;
    int tty = isatty(STDERR_FILENO);
    char b1[32], b2[32];

    memset(sc, 0, sizeof(*sc));
    sc->hits = calloc(n ? n : 1, sizeof(*sc->hits));
    if (order == NULL || sc->hits == NULL) {
        free(order);
        free(sc->hits);
        sc->hits = NULL;
        return -1;
    }
    for (i = 0; i < n; i++) {
        order[i] = hlx_ckpt_tensor(ck, i);
        total += order[i]->end - order[i]->begin;
    }
    qsort(order, n, sizeof(*order), hlx_scan_cmp_stored);
    for (i = 0; i < n; i++) {
        hlx_ckpt_nonfinite_t nf;
        hlx_ckpt_scan_tensor(ck, order[i], &nf);
        sc->bytes += order[i]->end - order[i]->begin;
        if (nf.count > 0) {
            sc->hits[sc->nhits].t = order[i];
            sc->hits[sc->nhits++].nf = nf;
            sc->values += nf.count;
        }
        if (tty && hlx_now_s() - shown > 0.5) {
            shown = hlx_now_s();
            fprintf(stderr, "\r  scanning: %s of %s, %s   ", hlx_format_bytes(sc->bytes, b1,
                    sizeof(b1)), hlx_format_bytes(total, b2, sizeof(b2)),
                    hlx_ckpt_file_name(ck, order[i]->file));
        }
    }
    if (tty && shown > t0)
        fprintf(stderr, "\r%*s\r", 78, "");
    sc->tensors = n;
    sc->secs = hlx_now_s() - t0;
    qsort(sc->hits, sc->nhits, sizeof(*sc->hits), hlx_scan_cmp_name);
    free(order);
    return 0;
}

/* The scan's findings as JSON: counts and one object per tensor holding non-finite values
 * (its index as an array of the tensor's rank). */
static json_t *hlx_info_scan_json(const hlx_scan_t *sc)
{
    json_t *o = json_pack("{s:I, s:I, s:I, s:I}", "tensors", (json_int_t)sc->tensors, "bytes",
                          (json_int_t)sc->bytes, "nonfinite_tensors", (json_int_t)sc->nhits,
                          "nonfinite_values", (json_int_t)sc->values);
    json_t *arr = json_array();
    size_t i;
    int d;

    for (i = 0; i < sc->nhits; i++) {
        const hlx_ckpt_tensor_t *t = sc->hits[i].t;
        const hlx_ckpt_nonfinite_t *nf = &sc->hits[i].nf;
        json_t *idx = json_array(), *shape = json_array();
        int64_t at[HLX_CKPT_MAX_DIMS];
        char desc[256];
        hlx_ckpt_unravel(t, nf->first, at);
        for (d = 0; d < t->ndim; d++) {
            json_array_append_new(idx, json_integer((json_int_t)at[d]));
            json_array_append_new(shape, json_integer((json_int_t)t->shape[d]));
        }
        hlx_ckpt_nonfinite_str(t, nf, desc, sizeof(desc));
        json_array_append_new(arr, json_pack("{s:s, s:s, s:o, s:I, s:o, s:s, s:I, s:s}",
                                             "name", t->name, "dtype",
                                             hlx_st_dtype_name(t->dtype), "shape", shape,
                                             "count", (json_int_t)nf->count, "first_index", idx,
                                             "first_value",
                                             hlx_ckpt_nonfinite_value(t->dtype, nf->bits),
                                             "first_bits", (json_int_t)nf->bits, "what", desc));
    }
    json_object_set_new(o, "nonfinite", arr);
    return o;
}

static void hlx_info_scan_print(const hlx_ckpt_t *ck, const hlx_scan_t *sc)
{
    char b[32], desc[256], shape[160];
    size_t i;

    printf("\n  scan: %zu tensors, %s read in %.1f s: ", sc->tensors,
           hlx_format_bytes(sc->bytes, b, sizeof(b)), sc->secs);
    if (sc->nhits == 0) {
        printf("every value finite\n");
        return;
    }
    printf("%zu tensor%s hold%s values that are not finite\n", sc->nhits,
           sc->nhits == 1 ? "" : "s", sc->nhits == 1 ? "s" : "");
    for (i = 0; i < sc->nhits; i++) {
        const hlx_ckpt_tensor_t *t = sc->hits[i].t;
        hlx_ckpt_nonfinite_str(t, &sc->hits[i].nf, desc, sizeof(desc));
        hlx_ckpt_shape_str(t, shape, sizeof(shape));
        printf("    %s (%s %s, %s): %s\n", t->name, hlx_st_dtype_name(t->dtype), shape,
               hlx_ckpt_file_name(ck, t->file), desc);
    }
}

/* RoPE: the base, the rotated size and the scaling with its parameters (text line). */
static void hlx_info_rope_print(const hlx_model_t *m)
{
    printf("  RoPE theta %g over %d of each head's elements", m->rope_theta, m->rope_dim);
    if (m->rope_kind == HLX_ROPE_LINEAR)
        printf(", linear scaling by %g", m->rope_factor);
    else if (m->rope_kind == HLX_ROPE_LLAMA3)
        printf(", llama3 scaling: factor %g, original context %d, low/high_freq_factor %g/%g",
               m->rope_factor, m->rope_orig_ctx, m->rope_low_freq, m->rope_high_freq);
    else if (m->rope_kind == HLX_ROPE_YARN)
        printf(", yarn scaling: factor %g, original context %d, beta_fast/slow %g/%g, "
               "mscale %g, mscale_all_dim %g%s", m->rope_factor, m->rope_orig_ctx,
               m->rope_beta_fast, m->rope_beta_slow, m->rope_mscale, m->rope_mscale_all,
               m->rope_yarn_exact ? ", the ramp's ends unrounded (truncate false)" : "");
    else if (m->rope_kind == HLX_ROPE_LONGROPE)
        printf(", longrope scaling: factor %g, original context %d, attention_factor %.6g; "
               "a run rotates with long_factor when its sequences exceed %d positions, with "
               "short_factor otherwise", m->rope_factor, m->rope_orig_ctx, m->rope_attn_factor,
               m->rope_orig_ctx);
    else if (m->rope_kind == HLX_ROPE_DYNAMIC)
        printf(", dynamic NTK scaling: factor %g; past %d positions the base grows with the "
               "sequence each position is rotated in (the prompt's length for its tokens, "
               "position + 1 for a generated one)", m->rope_factor, m->rope_orig_ctx);
    if (m->rope_local_theta > 0.0)
        printf("; the windowed layers theta %g, unscaled", m->rope_local_theta);
    printf("\n");
    if (m->dca_chunk > 0) {
        printf("  dual chunk attention (as vLLM runs it): chunks of %d positions (chunk_size "
               "%d - local_size %d),\n    keys rotated within their chunk: plain attention "
               "up to position %d", m->dca_chunk - m->dca_local, m->dca_chunk, m->dca_local,
               m->dca_chunk - m->dca_local);
        if (m->dca_orig > 0)
            printf(";\n    keys (as cached) and queries times max(1, 0.1 ln(n / %d) + 1), "
                   "n the length of the forward that computes them", m->dca_orig);
        printf("\n");
    }
}

static json_t *hlx_info_rope_json(const hlx_model_t *m)
{
    json_t *o = json_pack("{s:f, s:i, s:s}", "theta", m->rope_theta, "dim", m->rope_dim,
                          "scaling", hlx_model_rope_kind_name(m->rope_kind));

    hlx_hf_rope_params_json(m, o);
    if (m->rope_kind == HLX_ROPE_DYNAMIC) /* config.json's top-level key */
        json_object_set_new(o, "max_position_embeddings", json_integer(m->rope_orig_ctx));
    if (m->dca_chunk > 0)
        json_object_set_new(o, "dual_chunk_attention", hlx_hf_dca_json(m));
    return o;
}

/* The "model" member of info's JSON: a model file (docs/model.md "Keys") that `helix plan
 * --model` and the model reader take as it is, the weights in the dtype decode holds them
 * in; optional keys whose value 0 means none (which the reader's bounds refuse) left out. */
static json_t *hlx_info_model_json(const hlx_hf_config_t *cfg)
{
    const hlx_model_t *m = &cfg->m;
    json_t *mo = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i}", "name",
                           m->name, "attn", m->attn == HLX_ATTN_MLA ? "mla" : "gqa", "layers",
                           m->layers, "hidden", m->hidden, "q_heads", m->q_heads, "kv_heads",
                           m->kv_heads, "head_dim", m->head_dim, "v_head_dim", m->v_head_dim,
                           "ffn", m->ffn, "vocab", m->vocab);
    /* key, value: written where the value is not 0 */
    const struct {
        const char *key;
        double      v;
        int         gqa_only;
    } opt[] = {
        { "attn_scalar", m->attn_scalar, 1 }, { "rope_local_theta", m->rope_local_theta, 1 },
        { "attn_softcap", m->attn_softcap, 1 }, { "final_softcap", m->final_softcap, 0 },
        { "embed_mult", m->embed_mult, 0 }, { "residual_mult", m->residual_mult, 0 },
        { "logits_scale", m->logits_scale, 0 },
    };
    size_t i;

    json_object_update_new(mo, json_pack("{s:s, s:s, s:b, s:f}", "weight_dtype",
                                          hlx_dtype_name(hlx_hf_held_default(cfg)), "kv_dtype",
                                          hlx_dtype_name(m->kv_dtype), "tie_embeddings",
                                          m->tie_embeddings, "norm_eps", m->norm_eps));
    if (m->attn == HLX_ATTN_GQA) {
        json_object_update_new(mo, json_pack("{s:b, s:b, s:b, s:s, s:b}", "qkv_bias",
                                             m->qkv_bias, "qk_norm", m->qk_norm, "post_norms",
                                             m->post_norms, "ffn_act",
                                             m->ffn_act == HLX_ACT_GELU_TANH ? "gelu_tanh"
                                             : m->ffn_act == HLX_ACT_SWIGLU_CLAMP
                                             ? "swiglu_clamp" : "silu",
                                             "embed_scale", m->embed_scale));
        if (m->sliding_window > 0)
            json_object_update_new(mo, json_pack("{s:i, s:i, s:i}", "sliding_window",
                                                 m->sliding_window, "sliding_pattern",
                                                 m->sliding_pattern, "sliding_from",
                                                 m->sliding_from));
        /* gpt-oss's: sinks, o_proj's bias, the clamp of its SwiGLU */
        json_object_update_new(mo, json_pack("{s:b, s:b}", "attn_sinks", m->attn_sinks,
                                             "o_bias", m->o_bias));
        /* OLMo 2's: no input norms, q and k norms over the whole projections */
        json_object_update_new(mo, json_pack("{s:b, s:b}", "post_norms_only",
                                             m->post_norms_only, "qk_norm_proj",
                                             m->qk_norm_proj));
        /* StarCoder2's: LayerNorms, the plain MLP and its biases */
        json_object_update_new(mo, json_pack("{s:s, s:s, s:b}", "norm",
                                             m->norm_layer ? "layernorm" : "rms", "ffn_kind",
                                             m->ffn_plain ? "mlp" : "glu", "ffn_bias",
                                             m->ffn_bias));
        if (m->ffn_act == HLX_ACT_SWIGLU_CLAMP)
            json_object_update_new(mo, json_pack("{s:f, s:f}", "act_alpha", m->act_alpha,
                                                 "act_limit", m->act_limit));
        /* SmolLM3's NoPE layers: 0, or every P-th layer unrotated */
        json_object_set_new(mo, "nope_pattern", json_integer(m->nope_pattern));
        /* Llama 4's chunks, weightless q/k norms on the RoPE layers, NoPE temperature */
        if (m->window_chunked)
            json_object_set_new(mo, "window_chunked", json_true());
        if (m->qk_norm_unit)
            json_object_set_new(mo, "qk_norm_unit", json_true());
        if (m->attn_temp_floor > 0)
            json_object_update_new(mo, json_pack("{s:i, s:f}", "attn_temp_floor",
                                                 m->attn_temp_floor, "attn_temp_scale",
                                                 m->attn_temp_scale));
    }
    for (i = 0; i < sizeof(opt) / sizeof(opt[0]); i++)
        if (opt[i].v != 0.0 && (!opt[i].gqa_only || m->attn == HLX_ATTN_GQA))
            json_object_set_new(mo, opt[i].key, json_real(opt[i].v));
    if (m->attn == HLX_ATTN_MLA)
        json_object_update_new(mo, json_pack("{s:i, s:i, s:i, s:i}", "q_lora_rank",
                                             m->q_lora_rank, "kv_lora_rank", m->kv_lora_rank,
                                             "qk_nope_dim", m->qk_nope_dim, "qk_rope_dim",
                                             m->qk_rope_dim));
    if (m->experts > 0) {
        json_object_update_new(mo, json_pack("{s:i, s:i, s:i, s:i, s:i, s:s, s:b, s:f, s:i, "
                                             "s:i, s:s}", "experts", m->experts, "top_k",
                                             m->top_k, "shared_experts", m->shared_experts,
                                             "expert_ffn", m->expert_ffn, "dense_layers",
                                             m->dense_layers, "scoring_func",
                                             m->moe_scoring == HLX_MOE_SIGMOID ? "sigmoid"
                                                                               : "softmax",
                                             "norm_topk_prob", m->norm_topk_prob,
                                             "routed_scaling_factor", m->routed_scaling,
                                             "n_group", m->n_group, "topk_group",
                                             m->topk_group, "group_score",
                                             m->moe_group_score == HLX_MOE_GROUP_MAX ? "max"
                                                                                     : "top2"));
        json_object_update_new(mo, json_pack("{s:b, s:b, s:b}", "shared_expert_gate",
                                             m->shared_gate, "router_bias", m->router_bias,
                                             "expert_bias", m->expert_bias));
        if (m->moe_step > 1) /* Llama 4's interleaved MoE layers */
            json_object_set_new(mo, "moe_step", json_integer(m->moe_step));
        if (m->moe_weight_input)
            json_object_set_new(mo, "moe_weight_input", json_true());
    }
    return mo;
}

static int hlx_cmd_model_info(int argc, char **argv)
{
    enum { O_KVP = 1, O_TPA, O_EP, O_JSON, O_CONFIG_ONLY, O_SCAN };
    static const struct option opts[] = {
        { "kvp", required_argument, NULL, O_KVP },
        { "tpa", required_argument, NULL, O_TPA },
        { "ep", required_argument, NULL, O_EP },
        { "json", no_argument, NULL, O_JSON },
        { "config-only", no_argument, NULL, O_CONFIG_ONLY },
        { "scan", no_argument, NULL, O_SCAN },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    long kvp = 1, tpa = 1, ep = 1;
    int json = 0, o, n, config_only = 0, scan = 0, rc = 0;
    const char *dir;
    hlx_scan_t sc = { 0 };
    hlx_hf_config_t cfg;
    hlx_ckpt_t *ck = NULL;
    hlx_hf_expect_t *list = NULL;
    size_t cnt = 0, i;
    double cls_bytes[HLX_HFC_COUNT] = { 0 }, rank_bytes[HLX_HFC_COUNT] = { 0 };
    double params = 0, total = 0, rank_total = 0;
    double held = 0, held_bf16 = 0; /* per rank: the layers decode keeps packed on the CPU */
    char err[1024];
    hlx_status_t st;

    optind = 1;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (o) {
        case O_KVP: if (hlx_model_int("info", "--kvp", optarg, 1, 1 << 20, &kvp)) return 2; break;
        case O_TPA: if (hlx_model_int("info", "--tpa", optarg, 1, 1 << 20, &tpa)) return 2; break;
        case O_EP:  if (hlx_model_int("info", "--ep", optarg, 1, 1 << 20, &ep)) return 2; break;
        case O_JSON: json = 1; break;
        case O_CONFIG_ONLY: config_only = 1; break;
        case O_SCAN: scan = 1; break;
        case 'h':   hlx_info_usage(stdout); return 0;
        default:    hlx_info_usage(stderr); return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "helix model info: expected one checkpoint directory\n");
        hlx_info_usage(stderr);
        return 2;
    }
    dir = argv[optind];
    if (scan && config_only) {
        fprintf(stderr, "helix model info: --scan reads every tensor, --config-only none; give "
                "one of them\n");
        return 2;
    }
    if ((st = hlx_hf_config_load(dir, &cfg, err, sizeof(err))) != HLX_OK) {
        fprintf(stderr, "helix model info: %s\n", err);
        return hlx_status_exit_code(st); /* a read that failed or timed out: 1 */
    }
    n = (int)(kvp * tpa);
    if (kvp * tpa > 1 << 20 || cfg.m.q_heads % tpa != 0) {
        fprintf(stderr, "helix model info: --tpa %ld does not divide the %d query heads\n", tpa,
                cfg.m.q_heads);
        return 2;
    }
    if (ep > 1 && cfg.m.experts == 0) {
        fprintf(stderr, "helix model info: --ep %ld: %s has no routed experts (its FFNs are "
                "dense, split over all N ranks); --ep splits MoE layers: use 1\n", ep,
                cfg.arch);
        return 2;
    }
    if (ep > 1 && (cfg.m.experts % ep != 0 || n % ep != 0)) {
        fprintf(stderr, "helix model info: --ep %ld must divide the %d routed experts and N = %d\n",
                ep, cfg.m.experts, n);
        return 2;
    }
    if (!config_only && (st = hlx_ckpt_open(dir, &ck, err, sizeof(err))) != HLX_OK) {
        fprintf(stderr, "helix model info: %s\n", err);
        return hlx_status_exit_code(st); /* a read that failed or timed out: 1 */
    }
    if (!config_only)
        hlx_hf_settle(ck, &cfg);
    if (!config_only && (st = hlx_hf_check(ck, &cfg)) != HLX_OK) {
        fprintf(stderr, "helix model info: %s\n", hlx_ckpt_error(ck));
        hlx_ckpt_close(ck);
        return hlx_status_exit_code(st); /* a read that failed or timed out: 1 */
    }
    if (scan && hlx_info_scan(ck, &sc) != 0) {
        fprintf(stderr, "helix model info: --scan: out of memory\n");
        hlx_ckpt_close(ck);
        return 1;
    }
    st = hlx_hf_expect(&cfg, &list, &cnt, err, sizeof(err));
    if (st != HLX_OK) { /* a config describing too many tensors (2), out of memory (1) */
        fprintf(stderr, "helix model info: %s/%s\n", dir, err); /* err: "config.json: ..." */
        free(sc.hits);
        hlx_ckpt_close(ck);
        return hlx_status_exit_code(st);
    }
    for (i = 0; i < cnt; i++) {
        const hlx_hf_expect_t *e = &list[i];
        double el = (double)e->shape[0] * (double)(e->ndim == 2 ? e->shape[1] : 1);
        double b = el * (double)hlx_st_dtype_size(e->dtype);
        const double rb = hlx_info_rank_bytes(&cfg, e, b, (int)tpa, n);
        const hlx_ckpt_tensor_t *t = ck != NULL ? hlx_ckpt_find(ck, e->name) : NULL;
        int bits;
        int64_t group;
        cls_bytes[e->cls] += b;
        rank_bytes[e->cls] += rb;
        if (e->cls != HLX_HFC_SCALE)
            params += el;
        /* packed on the CPU: bits / 8 bytes an element and an f32 zero point and scale per
         * group (docs/kernels.md "Packed integer weights") instead of the bf16 counted */
        if (t != NULL && hlx_model_int_held(&cfg) && hlx_ckpt_packed_groups(ck, t, &bits, &group, NULL)) {
            held_bf16 += rb;
            held += rb / 2.0 * ((double)bits / 8.0 + 8.0 / (double)group);
        }
    }
    free(list);
    for (i = 0; i < HLX_HFC_COUNT; i++) {
        total += cls_bytes[i];
        rank_total += rank_bytes[i];
    }
    /* sizes past 2^64 bytes would print as rounded doubles, and no run could hold them:
     * refused as the decode refuses them */
    if (!(total < 18446744073709551616.0)) {
        fprintf(stderr, "helix model info: %s/config.json: the tensors it describes take %.3g "
                "bytes, beyond 2^64; check hidden_size, the head counts and the layer count\n",
                dir, total);
        free(sc.hits);
        hlx_ckpt_close(ck);
        return 2;
    }
    if (json) {
        json_t *o_ = json_object(), *cb = json_object(), *rb = json_object(), *mo;
        mo = hlx_info_model_json(&cfg);
        json_object_set_new(mo, "rope", hlx_info_rope_json(&cfg.m));
        for (i = 0; i < HLX_HFC_COUNT; i++) {
            if (cls_bytes[i] == 0)
                continue;
            json_object_set_new(cb, hlx_hf_class_name((hlx_hf_class_t)i), json_real(cls_bytes[i]));
            json_object_set_new(rb, hlx_hf_class_name((hlx_hf_class_t)i),
                                json_real(rank_bytes[i]));
        }
        json_object_set_new(cb, "total", json_real(total));
        json_object_set_new(rb, "total", json_real(rank_total));
        if (held_bf16 > 0) /* what CPU decode holds: the packed layers packed */
            json_object_set_new(o_, "cpu_bytes_per_rank",
                                json_real(rank_total - held_bf16 + held));
        json_object_set_new(o_, "architecture", json_string(cfg.arch));
        json_object_set_new(o_, "name", json_string(cfg.m.name));
        json_object_set_new(o_, "torch_dtype", json_string(cfg.torch_dtype));
        /* how decode and generate hold the weights without --weight-dtype */
        json_object_set_new(o_, "held_dtype",
                            json_string(hlx_dtype_name(hlx_hf_held_default(&cfg))));
        json_object_set_new(o_, "fp8", json_boolean(cfg.fp8));
        json_object_set_new(o_, "quantization",
                            hlx_info_quant_json(&cfg, ck ? hlx_ckpt_packed_count(ck) : 0));
        json_object_set_new(o_, "checked", json_boolean(!config_only));
        json_object_set_new(o_, "model", mo);
        json_object_set_new(o_, "params", json_real(params));
        json_object_set_new(o_, "bytes", cb);
        json_object_set_new(o_, "layout", json_pack("{s:i, s:i, s:i, s:i}", "kvp", (int)kvp,
                                                    "tpa", (int)tpa, "ep", (int)ep, "n", n));
        json_object_set_new(o_, "bytes_per_rank", rb);
        if (cfg.mtp_layers > 0 || cfg.mtp_tensors > 0) /* not read: not in the bytes above */
            json_object_set_new(o_, "left_out",
                                json_pack("{s:s, s:i, s:i, s:I, s:I}", "what",
                                          "multi-token prediction", "layers", cfg.mtp_layers,
                                          "first_layer", cfg.m.layers,
                                          "tensors", (json_int_t)cfg.mtp_tensors,
                                          "bytes", (json_int_t)cfg.mtp_bytes));
        if (scan)
            json_object_set_new(o_, "scan", hlx_info_scan_json(&sc));
        json_dumpf(o_, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("\n");
        json_decref(o_);
        goto out;
    }
    printf("%s (%s): %s, %d layers, hidden %d, %d query heads", dir, cfg.arch, cfg.m.name,
           cfg.m.layers, cfg.m.hidden, cfg.m.q_heads);
    if (cfg.m.attn == HLX_ATTN_GQA) {
        printf(", %d KV heads of %d\n", cfg.m.kv_heads, cfg.m.head_dim);
        if (cfg.m.qkv_bias)
            printf("  q, k and v projections with biases%s\n",
                   cfg.m.o_bias ? ", o_proj too" : "");
        if (cfg.m.attn_sinks)
            printf("  a sink logit per query head joins each softmax (self_attn.sinks)\n");
        if (cfg.m.qk_norm_unit)
            printf("  each q and k head L2-normalised (no weights) on the layers with RoPE "
                   "(use_qk_norm)\n");
        else if (cfg.m.qk_norm)
            printf("  each q and k head RMS-normalised before RoPE (q_norm, k_norm)\n");
        if (cfg.m.qk_norm_proj)
            printf("  the whole q and the whole k projection RMS-normalised before RoPE "
                   "(q_norm [%d], k_norm [%d])\n", cfg.m.q_heads * cfg.m.head_dim,
                   cfg.m.kv_heads * cfg.m.head_dim);
        if (cfg.m.post_norms_only)
            printf("  no input norms: the attention and the MLP read the residual stream\n");
        if (cfg.m.norm_layer)
            printf("  every norm a LayerNorm (mean and variance, weight and bias; eps %g)\n",
                   cfg.m.norm_eps);
        if (cfg.m.ffn_plain)
            printf("  a plain MLP: %s(x c_fc%s) c_proj%s, no gate\n",
                   cfg.m.ffn_act == HLX_ACT_SILU ? "silu" : "gelu_tanh",
                   cfg.m.ffn_bias ? " + b" : "", cfg.m.ffn_bias ? " + b" : "");
        if (cfg.m.post_norms)
            printf("  the attention's and the MLP's outputs RMS-normalised before each "
                   "residual add (%s)\n", cfg.fused & HLX_HF_GEMMA || cfg.m.post_norms_only
                   ? "post_attention_layernorm, post_feedforward_layernorm"
                   : "post_self_attn_layernorm, post_mlp_layernorm");
        if (cfg.fused & HLX_HF_GEMMA)
            printf("  every norm's weight stored as w - 1; the embedding times sqrt(%d); "
                   "softmax scale 1/sqrt(%g)\n", cfg.m.hidden,
                   cfg.m.attn_scalar > 0.0 ? cfg.m.attn_scalar : (double)cfg.m.head_dim);
        if (cfg.m.attn_softcap > 0.0)
            printf("  attention scores soft-capped: s -> %g tanh(s / %g) "
                   "(attn_logit_softcapping)\n", cfg.m.attn_softcap, cfg.m.attn_softcap);
        if (cfg.m.sliding_window > 0 && cfg.m.sliding_pattern == 0 && cfg.m.sliding_from > 0)
            printf("  sliding-window attention on layers %d to %d (max_window_layers; the %d "
                   "before attend to the whole context): a query attends to its last %d "
                   "positions, itself included\n", cfg.m.sliding_from, cfg.m.layers - 1,
                   cfg.m.sliding_from, cfg.m.sliding_window);
        else if (cfg.m.window_chunked)
            printf("  chunked attention on %d of %d layers (those with RoPE; the others "
                   "attend to the whole context): a query at p attends to its chunk of %d "
                   "positions, p - p mod %d to p\n", cfg.m.layers -
                   (cfg.m.sliding_pattern > 1 ? cfg.m.layers / cfg.m.sliding_pattern : 0),
                   cfg.m.layers, cfg.m.sliding_window, cfg.m.sliding_window);
        else if (cfg.m.sliding_window > 0 && cfg.m.sliding_pattern == 0)
            printf("  sliding-window attention on every layer: a query attends to its last "
                   "%d positions, itself included\n", cfg.m.sliding_window);
        else if (cfg.m.sliding_window > 0)
            printf("  sliding-window attention on %d of %d layers (layer l attends to the "
                   "whole context when l + 1 is a multiple of %d): a query attends to its last "
                   "%d positions, itself included%s\n",
                   cfg.m.layers - cfg.m.layers / cfg.m.sliding_pattern, cfg.m.layers,
                   cfg.m.sliding_pattern, cfg.m.sliding_window, cfg.m.rope_local_theta > 0
                   ? ", turning with its own base (below)" : "");
        if (cfg.m.nope_pattern > 1)
            printf("  q and k unrotated on %d of %d layers (no_rope_layers: layer l has no RoPE "
                   "when l + 1 is a multiple of %d)\n", cfg.m.layers / cfg.m.nope_pattern,
                   cfg.m.layers, cfg.m.nope_pattern);
        if (cfg.fused & (HLX_HF_ROPE_PAIRS | HLX_HF_LLAMA4))
            printf("  q and k stored with RoPE pairs (2i, 2i+1), as the runtime rotates them\n");
        if (cfg.m.attn_temp_floor > 0)
            printf("  the NoPE layers' queries at p times 1 + %g ln(1 + floor((p + 1) / %d)) "
                   "(attn_temperature_tuning)\n", cfg.m.attn_temp_scale, cfg.m.attn_temp_floor);
        if (cfg.fused & HLX_HF_QKV_GROUPED)
            printf("  q, k and v in one wqkv, grouped by KV head (its %d query heads, then its "
                   "key, then its value)\n", cfg.m.q_heads / cfg.m.kv_heads);
    } else
        printf("\n  MLA: q_lora %d, kv_lora %d, nope %d, rope %d, v %d\n", cfg.m.q_lora_rank,
               cfg.m.kv_lora_rank, cfg.m.qk_nope_dim, cfg.m.qk_rope_dim, cfg.m.v_head_dim);
    if (cfg.m.final_softcap > 0.0)
        printf("  logits soft-capped: z -> %g tanh(z / %g) (final_logit_softcapping)\n",
               cfg.m.final_softcap, cfg.m.final_softcap);
    if (cfg.m.embed_mult > 0.0 || cfg.m.residual_mult > 0.0 || cfg.m.logits_scale > 0.0)
        printf("  multipliers: embedding x %g, softmax scale %g, attention and FFN outputs x %g, "
               "logits / %g\n", hlx_model_embed_scale(&cfg.m),
               hlx_model_softmax_scale(&cfg.m, cfg.m.head_dim), hlx_model_residual_mult(&cfg.m),
               cfg.m.logits_scale > 0.0 ? cfg.m.logits_scale : 1.0);
    if (cfg.m.experts > 0) {
        char dense[64] = "every layer MoE";
        if (cfg.m.dense_layers > 0)
            snprintf(dense, sizeof(dense), "first %d layers dense (FFN %d)", cfg.m.dense_layers,
                     cfg.m.ffn);
        else if (cfg.m.moe_step > 1)
            snprintf(dense, sizeof(dense), "MoE where l + 1 is a multiple of %d, else dense (FFN %d)",
                     cfg.m.moe_step, cfg.m.ffn);
        printf("  MoE: %d experts top-%d + %d shared, expert FFN %d, %s, %s scoring, "
               "norm_topk_prob %s, scaling %g", cfg.m.experts, cfg.m.top_k,
               cfg.m.shared_experts, cfg.m.expert_ffn, dense, cfg.scoring_func,
               cfg.norm_topk_prob ? "true" : "false", cfg.routed_scaling_factor);
        if (cfg.m.topk_group < cfg.m.n_group)
            printf(", the best %d of %d groups by their %s", cfg.m.topk_group, cfg.m.n_group,
                   cfg.m.moe_group_score == HLX_MOE_GROUP_MAX ? "best expert"
                                                              : "two best experts");
        if (cfg.m.shared_gate)
            printf(", the shared output times a sigmoid gate (shared_expert_gate)");
        if (cfg.m.router_bias)
            printf(", the router's logits with a bias");
        if (cfg.m.expert_bias)
            printf(", each expert's gate, up and down with biases");
        if (cfg.m.moe_weight_input)
            printf(", the routing weight on each expert's input");
        printf("\n");
        if (cfg.m.ffn_act == HLX_ACT_SWIGLU_CLAMP)
            printf("  experts' activation: clamped SwiGLU, (up + 1) x g sigmoid(%g g) with g "
                   "the gate clamped above at %g and up within +-%g (swiglu_alpha, "
                   "swiglu_limit)\n", cfg.m.act_alpha, cfg.m.act_limit, cfg.m.act_limit);
    }
    else
        printf("  dense %s FFN %d, vocab %d\n",
               cfg.m.ffn_plain ? (cfg.m.ffn_act == HLX_ACT_GELU_TANH ? "plain tanh-GELU"
                                                                     : "plain SiLU")
               : cfg.m.ffn_act == HLX_ACT_GELU_TANH ? "GeGLU (tanh GELU)" : "SwiGLU", cfg.m.ffn,
               cfg.m.vocab);
    hlx_info_rope_print(&cfg.m);
    {
        char q[512] = "", gs[48], how[256];
        if (cfg.packing.group > 0)
            snprintf(gs, sizeof(gs), "groups of %lld", (long long)cfg.packing.group);
        else
            snprintf(gs, sizeof(gs), "a scale per channel");
        if (cfg.mxfp4) /* how decode holds the packed weights, for the line below */
            hlx_model_mx_how(&cfg, how, sizeof(how));
        else
            hlx_model_int_how(&cfg, how, sizeof(how));
        if (cfg.fp8 == HLX_HF_FP8_BLOCK)
            snprintf(q, sizeof(q), " (linear layers fp8 e4m3, block scales of %d x %d; %s)",
                     cfg.block_rows, cfg.block_cols,
                     cfg.block_scale_plain ? "compressed-tensors" : "fp8");
        else if (cfg.fp8 == HLX_HF_FP8_SCALE)
            snprintf(q, sizeof(q), " (linear layers %s, a scale per %s; %s%s)",
                     cfg.int8 ? "int8" : "fp8 e4m3", cfg.fp8_channel ? "channel" : "tensor",
                     hlx_fp8_form_names[cfg.fp8_form],
                     cfg.fp8_input_scale ? ", static input scales not used" : "");
        else if (cfg.packing.pack && config_only)
            snprintf(q, sizeof(q), " (linear layers %d-bit integers where packed: %s, %s; "
                     "%s)", cfg.packing.bits, hlx_ckpt_pack_name(cfg.packing.pack), gs, how);
        else if (cfg.mxfp4)
            snprintf(q, sizeof(q), " (routed experts MXFP4: E2M1 values, an E8M0 scale per "
                     "32; %s)", how);
        else if (cfg.packing.pack && hlx_ckpt_packed_count(ck) > 0)
            snprintf(q, sizeof(q), " (%zu linear layers %d-bit integers: %s, %s; %s)",
                     hlx_ckpt_packed_count(ck), cfg.packing.bits,
                     hlx_ckpt_pack_name(cfg.packing.pack), gs, how);
        printf("  weights %s%s, %.6g parameters%s\n", cfg.torch_dtype, q, params,
               config_only ? " (from config.json; tensors not checked)" : "");
        { /* in every layer, or in some (unquant_layer alone) */
            char un[2048];
            if (hlx_hf_unquant_str(&cfg, un, sizeof(un))[0])
                printf("  left unquantized by the ignore list (stored %s): %s\n",
                       cfg.torch_dtype, un);
        }
        printf("\n");
        if (cfg.st_dtype == HLX_ST_F16 && !hlx_hf_quantized(&cfg))
            printf("  decode holds them in bf16, rounded (--weight-dtype f32: exactly, in twice "
                   "the bytes)\n\n");
        if (cfg.quant_file[0] && !config_only && hlx_ckpt_packed_count(ck) == 0)
            printf("  %s is not used: no linear layer is stored packed\n\n", cfg.quant_file);
        else if (cfg.quant_file[0])
            printf("  the integer packing from %s (config.json has no quantization_config)"
                   "\n\n", cfg.quant_file);
    }
    if (cfg.lm_head_unused[0])
        printf("  %s: not read (tie_word_embeddings is true: the head is the embedding, as "
               "transformers and vLLM take it)\n\n", cfg.lm_head_unused);
    if (cfg.kv_scales) {
        char kn[96], vn[96];
        hlx_hf_kv_scale_name(&cfg, 0, 0, kn, sizeof(kn));
        hlx_hf_kv_scale_name(&cfg, 0, 1, vn, sizeof(vn));
        printf("  fp8 KV-cache scales: %s and %s per layer%s (used with --kv-dtype fp8)\n\n",
               strstr(kn, "self_attn."), strstr(vn, "self_attn."),
               cfg.kv_scales == HLX_HF_KV_SCALES_HEAD ? " and KV head" : "");
    } else if (cfg.kv_scales_maybe && config_only) {
        printf("  fp8 KV-cache scales: where the tensors hold them (not checked)\n\n");
    }
    printf("  %-16s %16s %18s\n", "class", "bytes", "per rank");
    for (i = 0; i < HLX_HFC_COUNT; i++)
        if (cls_bytes[i] > 0)
            printf("  %-16s %16.0f %18.0f\n", hlx_hf_class_name((hlx_hf_class_t)i), cls_bytes[i],
                   rank_bytes[i]);
    printf("  %-16s %16.0f %18.0f   (kvp %ld x tpa %ld = %d ranks, ep %ld)\n", "total", total,
           rank_total, kvp, tpa, n, ep);
    if (held_bf16 > 0)
        printf("  %-16s %16s %18.0f   (on the CPU: the packed linear layers kept packed, "
               "%.0f bytes per rank of them instead of %.0f)\n", "held on CPU", "",
               rank_total - held_bf16 + held, held, held_bf16);
    /* the multi-token-prediction layers: in the checkpoint, not in the model decode runs */
    if (cfg.mtp_tensors > 0)
        printf("  %-16s %16llu %18s   (model.layers.%d.* on, %zu tensors: multi-token "
               "prediction, num_nextn_predict_layers %d; not read)\n", "left out",
               (unsigned long long)cfg.mtp_bytes, "-", cfg.m.layers, cfg.mtp_tensors,
               cfg.mtp_layers);
    else if (cfg.mtp_layers > 0)
        printf("  %-16s %16s %18s   (model.layers.%d.* on: %d multi-token-prediction layer(s), "
               "num_nextn_predict_layers; not read%s)\n", "left out", "-", "-", cfg.m.layers,
               cfg.mtp_layers, config_only ? "; tensors not checked" : "; none stored");
    if (scan)
        hlx_info_scan_print(ck, &sc);
out:
    /* a weight that is not finite is bad input: decode would fail on it */
    if (scan && sc.nhits > 0) {
        fprintf(stderr, "helix model info: --scan: %zu of the %zu tensors of %s hold values "
                "that are not finite (%llu in all, listed %s); a decode that uses them fails "
                "with a non-finite value: replace those tensors (download or convert them "
                "again)\n", sc.nhits, sc.tensors, dir, (unsigned long long)sc.values,
                json ? "under \"scan\"" : "above");
        rc = 2;
    }
    free(sc.hits);
    hlx_ckpt_close(ck);
    return rc;
}

/* helix model archs: the Hugging Face classes read, from the reader's own table. */
/* Row i's base for `model archs`: its name, or for a class whose text_config chooses it
 * "text_config (llama, mistral, ...)" in buf, the choices also appended to list (when not
 * NULL) */
static const char *hlx_archs_base(size_t i, char *buf, size_t len, json_t *list)
{
    const char *tb;
    size_t k, n;

    if (hlx_hf_arch_text_base(i, 0) == NULL)
        return hlx_hf_arch_base(i);
    n = (size_t)snprintf(buf, len, "%s (", hlx_hf_arch_base(i));
    for (k = 0; (tb = hlx_hf_arch_text_base(i, k)) != NULL && n < len; k++) {
        n += (size_t)snprintf(buf + n, len - n, "%s%s", k ? ", " : "", tb);
        if (list != NULL)
            json_array_append_new(list, json_string(tb));
    }
    if (n < len)
        snprintf(buf + n, len - n, ")");
    return buf;
}

static int hlx_cmd_model_archs(int argc, char **argv)
{
    const char *mt, *base;
    char buf[128];
    size_t i;
    int nested, json = argc == 2 && !strcmp(argv[1], "--json");

    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: helix model archs [--json]\n\n"
               "  The Hugging Face classes (config.json's architectures[0]) that decode reads,\n"
               "  each with the model_type that names it where config.json gives no class;\n"
               "  \"text\": a multimodal class whose text model alone is read (docs/model.md);\n"
               "  then its base: the layer family its text model is built as, or\n"
               "  \"text_config (...)\": the one text_config's model_type names, of those listed.\n"
               "  --json: one JSON array of {\"class\", \"model_type\", \"text_only\", \"base\"},\n"
               "  and \"text_bases\" (the list) where \"base\" is \"text_config\".\n");
        return 0;
    }
    if (argc > 2 || (argc == 2 && !json)) {
        fprintf(stderr, "helix model archs: unexpected argument '%s' (--json, --help)\n",
                argv[argc - 1]);
        return 2;
    }
    if (json) {
        json_t *a = json_array();
        char *txt;
        for (i = 0; hlx_hf_arch(i, &mt, &nested) != NULL; i++) {
            json_t *tb = json_array();
            json_t *o = json_pack("{s:s, s:s, s:b, s:s}", "class", hlx_hf_arch(i, &mt, &nested),
                                  "model_type", mt, "text_only", nested, "base",
                                  hlx_hf_arch_base(i));
            (void)hlx_archs_base(i, buf, sizeof(buf), tb);
            if (json_array_size(tb) > 0)
                json_object_set(o, "text_bases", tb);
            json_decref(tb);
            json_array_append_new(a, o);
        }
        txt = json_dumps(a, JSON_INDENT(2));
        json_decref(a);
        if (txt == NULL)
            return 1;
        printf("%s\n", txt);
        free(txt);
        return 0;
    }
    for (i = 0; hlx_hf_arch(i, &mt, &nested) != NULL; i++) {
        base = hlx_archs_base(i, buf, sizeof(buf), NULL);
        printf("%-40s %-18s %-4s %s\n", hlx_hf_arch(i, &mt, &nested), mt, nested ? "text" : "",
               base);
    }
    return 0;
}

static void hlx_model_usage(FILE *f)
{
    fprintf(f, "usage: helix model synth|info|archs [OPTIONS]   (helix model synth --help)\n\n"
               "  synth   write a small Hugging Face checkpoint (Llama, Phi-3, Qwen2, Qwen3,\n"
               "          Qwen3-MoE, Mixtral, DeepSeek-V2 or DeepSeek-V3 layout)\n"
               "  info    check a checkpoint and print its architecture and sizes\n"
               "  archs   list the Hugging Face classes read (--json)\n");
}

int hlx_cmd_model(int argc, char **argv)
{
    if (argc < 2) {
        hlx_model_usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        hlx_model_usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "synth"))
        return hlx_cmd_model_synth(argc - 1, argv + 1);
    if (!strcmp(argv[1], "info"))
        return hlx_cmd_model_info(argc - 1, argv + 1);
    if (!strcmp(argv[1], "archs"))
        return hlx_cmd_model_archs(argc - 1, argv + 1);
    fprintf(stderr, "helix model: unknown subcommand '%s' (synth, info or archs)\n", argv[1]);
    return 2;
}
