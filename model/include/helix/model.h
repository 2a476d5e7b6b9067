/* Model description shared by the runtime and the planner: dense GQA, MLA (absorbed form)
 * and MoE transformers. Loaded from JSON (a file or a preset name under data/models). */
#ifndef HELIX_MODEL_H
#define HELIX_MODEL_H

#include <helix/status.h>
#include <helix/types.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hlx_attn_kind {
    HLX_ATTN_GQA = 0, /* K KV heads of head_dim, Q query heads (MHA when K == Q, MQA K == 1) */
    HLX_ATTN_MLA = 1  /* one latent KV "head": key kv_lora_rank + rope_dim, value kv_lora_rank */
} hlx_attn_kind_t;

/* Router scores of an MoE layer ("scoring_func"). */
typedef enum hlx_moe_scoring {
    HLX_MOE_SOFTMAX = 0, /* softmax over all experts' logits */
    HLX_MOE_SIGMOID = 1  /* sigmoid per expert; e_score_correction_bias added for the choice */
} hlx_moe_scoring_t;

/* A group's score in group-limited routing (n_group groups, the best topk_group kept). */
typedef enum hlx_moe_group_score {
    HLX_MOE_GROUP_TOP2 = 0, /* the sum of its two best choice values (DeepSeek-V3) */
    HLX_MOE_GROUP_MAX  = 1  /* its best choice value (DeepSeek-V2's group_limited_greedy) */
} hlx_moe_group_score_t;

/* How RoPE's frequencies are scaled ("rope_scaling" of a Hugging Face config). */
typedef enum hlx_rope_kind {
    HLX_ROPE_NONE = 0,   /* theta^(-2i/d) */
    HLX_ROPE_LINEAR = 1, /* every frequency / factor */
    HLX_ROPE_LLAMA3 = 2, /* low frequencies / factor, high ones kept, a smooth band between */
    HLX_ROPE_YARN = 3,   /* a ramp between interpolated and kept frequencies, cos/sin and the
                            softmax scale multiplied (DeepSeek-V3's form) */
    HLX_ROPE_LONGROPE = 4, /* each frequency / its own factor, of a short or a long set chosen
                              per run (Phi-3); cos/sin multiplied */
    HLX_ROPE_DYNAMIC = 5  /* dynamic NTK: past the original context the base grows with the
                             sequence length of the forward that rotates a position
                             (hlx_model_rope_seq), keys keep the rotation they were cached with */
} hlx_rope_kind_t;

/* Most rotated pairs per head (rope_dim / 2) the runtime takes. */
#define HLX_ROPE_MAX_PAIRS 512

/* hlx_model_t.plain: the weights an fp8 checkpoint stores unquantized */
#define HLX_MODEL_PLAIN_HEAD    1  /* lm_head, the embedding, the routers */
#define HLX_MODEL_PLAIN_ATTN    2  /* q, k, v and o (MLA's projections) */
#define HLX_MODEL_PLAIN_DENSE   4  /* the dense layers' FFN */
#define HLX_MODEL_PLAIN_EXPERTS 8  /* the routed experts */
#define HLX_MODEL_PLAIN_SHARED  16 /* the shared experts */

typedef struct hlx_model {
    char            name[64];
    hlx_attn_kind_t attn;
    int             layers;
    int             hidden;       /* H */
    int             q_heads;      /* Q */
    int             kv_heads;     /* K (1 for MLA) */
    int             head_dim;     /* Hsz: key size per head for GQA */
    int             v_head_dim;   /* value size per head (defaults to head_dim) */
    int             ffn;          /* F: dense SwiGLU intermediate size */
    int             vocab;
    double          rope_theta;
    int             rope_dim;     /* rotated elements per head (defaults to head_dim) */
    /* NoPE layers (SmolLM3's no_rope_layers): 0 = every layer rotates q and k; P >= 2 = layer
     * l neither rotates its queries nor the keys it caches where (l + 1) % P == 0 (SmolLM3:
     * 4). hlx_model_layer_rope says which. */
    int             nope_pattern;
    double          norm_eps;
    /* GQA extras of some families (Qwen2: biases on q, k and v; Qwen3: an RMSNorm of each
     * query and key head before RoPE, weights of head_dim shared by the heads) */
    int             qkv_bias;     /* q, k and v projections add a bias */
    int             qk_norm;      /* per-head RMSNorm of q and k (norm_eps) before RoPE */
    /* with qk_norm: the norm has no weights (each head times 1 / sqrt(mean(x^2) + norm_eps):
     * Llama 4's L2 norm) and only the layers that turn by RoPE apply it
     * (hlx_model_layer_qk_norm). transformers applies it after RoPE; a rotation keeps each
     * head's sum of squares, so before it is the same map up to rounding. */
    int             qk_norm_unit;
    /* sliding-window attention (Mistral, Phi-3, Gemma): a windowed layer's query at position
     * p attends to positions (p - sliding_window, p] only; 0: every layer attends to the
     * whole context. sliding_pattern: 0 = every layer windowed, P >= 2 = layer l attends to
     * the whole context when (l + 1) % P == 0 (Gemma 2: 2, Gemma 3: 6), windowed otherwise.
     * hlx_model_layer_window says which. The runtime keeps a windowed layer's KV in a ring
     * of about the window. */
    int             sliding_window;
    int             sliding_pattern;
    /* the first layer a window may apply to: layers before it attend to the whole context
     * (Qwen2 and Qwen3 with use_sliding_window: their max_window_layers); 0: every layer */
    int             sliding_from;
    /* chunked attention (Llama 4's attention_chunk_size): a windowed layer's query at p
     * attends to its chunk of sliding_window positions, [p - p mod W, p], instead of the W
     * positions before it (hlx_model_layer_first); the same layers, the same rings */
    int             window_chunked;
    /* attention temperature on the NoPE layers (Llama 4's attn_temperature_tuning): each
     * query at p times 1 + attn_temp_scale ln(1 + floor((p + 1) / attn_temp_floor)), where
     * attn_temp_floor > 0 and the layer does not turn by RoPE (hlx_model_attn_temp) */
    int             attn_temp_floor;
    double          attn_temp_scale;
    /* Gemma's: the FFN's activation (silu: SwiGLU, gelu_tanh: GeGLU), the embedding row times
     * sqrt(hidden) rounded to the weight dtype (embed_scale), the softmax scale
     * 1 / sqrt(attn_scalar) instead of 1 / sqrt(head_dim) (attn_scalar > 0: Gemma 3's
     * query_pre_attn_scalar), and windowed layers turning with their own base
     * rope_local_theta, unscaled (> 0; 0: every layer with rope_theta and the scaling) */
    hlx_act_t       ffn_act;
    int             embed_scale;
    /* Attention sinks (gpt-oss): a learned logit s_h per query head and layer (tensor
     * model.layers.L.self_attn.sinks [Q]) joins every softmax of the head as one more term
     * exp(s_h) of the denominator, with no value: the merged output of a head is scaled by
     * 1 / (1 + exp(s_h - lse)), lse its log-sum-exp over every key; gqa */
    int             attn_sinks;
    /* W_o adds a bias [H] to the attention's output (self_attn.o_proj.bias; gpt-oss) */
    int             o_bias;
    /* MoE (gpt-oss): the router's logits add a bias [E] before the scores (mlp.gate.bias),
     * and every routed expert's gate, up and down projections add their biases
     * (mlp.experts.J.{gate,up,down}_proj.bias [F], [F], [H]) */
    int             router_bias;
    int             expert_bias;
    /* the LM head is the embedding matrix (tie_word_embeddings: Gemma, the small Llama 3.2
     * and Qwen2.5 models): its weights counted once; a model file's synthetic head is then
     * the embedding's values */
    int             tie_embeddings;
    /* HLX_ACT_SWIGLU_CLAMP's sigmoid gain and clamp (gpt-oss: swiglu_alpha 1.702,
     * swiglu_limit 7); unused by the other activations */
    double          act_alpha;
    double          act_limit;
    double          attn_scalar;
    double          rope_local_theta;
    /* Gemma 2's logit soft-capping: a score s (after the softmax scale) becomes
     * attn_softcap x tanh(s / attn_softcap) before the softmax, and a logit z of the LM head
     * final_softcap x tanh(z / final_softcap); 0: none */
    double          attn_softcap;
    double          final_softcap;
    /* Granite's multipliers (GraniteForCausalLM, GraniteMoeForCausalLM), 0: none: the
     * embedding row times embed_mult (embedding_multiplier; gqa, not with embed_scale), each
     * layer's attention and FFN outputs (dense or routed) times residual_mult
     * (residual_multiplier; gqa) before
     * they join the residual, the logits divided by logits_scale (logits_scaling; any
     * model). Its softmax scale (attention_multiplier a) is attn_scalar = 1 / a^2. */
    double          embed_mult;
    double          residual_mult;
    double          logits_scale;
    int             post_norms;   /* an RMSNorm of the attention's output and of the FFN's
                                     (weights [H] each, norm_eps) before each is added to the
                                     residual: GLM-4-0414's "sandwich" norms; gqa, dense */
    /* OLMo 2's layer: with post_norms, no input norms (the attention and the FFN read the
     * residual stream itself), and an RMSNorm of the whole q projection (weights [Q x
     * head_dim]) and of the whole k projection ([K x head_dim]) before RoPE, in place of
     * Qwen3's per-head ones (qk_norm_proj; not with qk_norm) */
    int             post_norms_only;
    int             qk_norm_proj;
    /* StarCoder2's layer: every norm (the attention's and the FFN's input norms and the
     * final one) a LayerNorm, (x - mean) / sqrt(var + norm_eps) w + b with weights and
     * biases [H] (norm_layer; gqa, dense, none of the norms above); the FFN a plain MLP,
     * act(x W_up + b_up) W_down + b_down with no gate (ffn_plain; dense; ffn_act silu or
     * gelu_tanh), its two biases where ffn_bias (mlp.c_fc.bias [F], mlp.c_proj.bias [H]) */
    int             norm_layer;
    int             ffn_plain;
    int             ffn_bias;
    hlx_dtype_t     weight_dtype;
    /* Where weight_dtype is fp8 (an fp8 checkpoint: held dequantized, planned at its stored
     * width), the weights stored unquantized, in plain_dtype: HLX_MODEL_PLAIN_* bits (the
     * head, embedding and routers always; attention, dense FFN, routed and shared experts
     * where the checkpoint's ignore list leaves every layer's so). 0: every weight in
     * weight_dtype (model files, synthetic models). Read by the planner. */
    unsigned        plain;
    hlx_dtype_t     plain_dtype;
    hlx_dtype_t     kv_dtype;
    /* MLA (attn == HLX_ATTN_MLA) */
    int             q_lora_rank;
    int             kv_lora_rank;
    int             qk_nope_dim;
    int             qk_rope_dim;
    /* MoE (experts > 0) */
    int             experts;         /* routed experts per MoE layer */
    int             top_k;
    int             shared_experts;
    int             shared_gate;     /* Qwen2-MoE: the shared experts' output times
                                        sigmoid(x . w), w [H] per MoE layer */
    int             expert_ffn;      /* intermediate size of one expert */
    int             dense_layers;    /* first layers that are dense (use ffn) */
    /* MoE layers interleaved with dense ones (Llama 4's interleave_moe_layer_step): past the
     * first dense_layers, layer l is an MoE layer where (l + 1) % moe_step == 0 and dense (of
     * ffn) otherwise; 0 or 1: every layer past dense_layers (hlx_model_layer_moe) */
    int             moe_step;
    /* the routing weight multiplies each chosen expert's input, not its output (Llama 4's
     * Llama4TextMoe: expert(x w), not w expert(x)); its sigmoid scores have no correction
     * bias (Llama4Router: none is read) */
    int             moe_weight_input;
    /* MoE gating (DeepSeek-V3): scores, group-limited top-k, weights */
    hlx_moe_scoring_t moe_scoring;   /* scoring_func */
    int             norm_topk_prob;  /* the top-k weights renormalised to sum 1 */
    hlx_moe_group_score_t moe_group_score; /* how a group is scored (n_group below) */
    double          routed_scaling;  /* routed_scaling_factor: multiplies the weights */
    int             n_group;         /* experts split into n_group consecutive groups */
    int             topk_group;      /* experts chosen only from the best topk_group groups */
    /* RoPE scaling (rope_kind NONE: the fields below are unused) */
    hlx_rope_kind_t rope_kind;
    int             rope_orig_ctx;   /* original_max_position_embeddings (llama3, yarn, longrope;
                                        dynamic: max_position_embeddings) */
    double          rope_factor;     /* factor (longrope: max_position_embeddings / original) */
    double          rope_low_freq;   /* llama3: low_freq_factor */
    double          rope_high_freq;  /* llama3: high_freq_factor */
    double          rope_beta_fast;  /* yarn: beta_fast (rotations) */
    double          rope_beta_slow;  /* yarn: beta_slow */
    double          rope_mscale;     /* yarn: mscale */
    double          rope_mscale_all; /* yarn: mscale_all_dim (0: the softmax scale unchanged) */
    double          rope_attn_factor; /* longrope: attention_factor, on cos and sin */
    int             rope_long;        /* longrope: 1 = long_factor, 0 = short_factor, for the
                                         whole run (hlx_model_rope_select) */
    int             rope_yarn_exact; /* yarn: the ramp's ends as computed, not floored and
                                        ceiled to whole pairs (transformers' truncate: false,
                                        gpt-oss) */
    double          rope_short_factor[HLX_ROPE_MAX_PAIRS]; /* longrope: rope_dim / 2 each */
    double          rope_long_factor[HLX_ROPE_MAX_PAIRS];
    /* Dual chunk attention (Qwen2.5-1M's dual_chunk_attention_config, as vLLM runs it;
     * dca_chunk 0: none). Positions fall in chunks of len = dca_chunk - dca_local; a key is
     * rotated at its position mod len; a query at p (in chunk c = p / len) attends to its
     * own chunk rotated at p mod len (intra), to chunk c - 1 rotated at
     * min(p mod len + len, dca_chunk) (succ) and to chunks before that at
     * min(2 len - 1, dca_chunk) (inter): one softmax over the three parts. dca_orig > 0:
     * each key, as it is cached, and each query are multiplied by hlx_model_dca_factor of
     * the length of the forward that computes their position (hlx_model_rope_seq: the
     * prompt's for a prompt position, p + 1 for a generated one), as vLLM does.
     * hlx_model_dca_split gives a query's parts. GQA, plain RoPE, no window. */
    int             dca_chunk;       /* chunk_size */
    int             dca_local;       /* local_size */
    int             dca_orig;        /* original_max_position_embeddings (0: no factor) */
} hlx_model_t;

/* The three parts of dual chunk attention a query at position pos attends to, in position
 * order: part i covers positions [i ? end[i - 1] : 0, end[i]) with the query rotated at
 * rot[i]; end[2] = pos + 1. A part may be empty (the first two, before chunk 2). */
#define HLX_DCA_INTER 0
#define HLX_DCA_SUCC  1
#define HLX_DCA_INTRA 2
typedef struct hlx_dca_split {
    int64_t end[3];
    int64_t rot[3];
} hlx_dca_split_t;
void hlx_model_dca_split(const hlx_model_t *m, int64_t pos, hlx_dca_split_t *s);
/* Dual chunk attention's factor on a key and a query computed in a forward of seq_len
 * positions: max(1, 0.1 ln(seq_len / dca_orig) + 1), 1 where dca_orig is 0 (or no DCA). */
double hlx_model_dca_factor(const hlx_model_t *m, int64_t seq_len);
/* Whether the model's dual chunk attention is run: NULL when it is (or there is none),
 * else the field in the way (dca_chunk: chunk_size and local_size; dca_orig_ctx, attn,
 * rope_scaling, sliding_window) with the reason in why. */
const char *hlx_model_dca_check(const hlx_model_t *m, char *why, size_t whylen);
/* The position a key at pos is rotated at: pos mod (dca_chunk - dca_local) under dual
 * chunk attention, pos itself otherwise. */
static inline int64_t hlx_model_dca_key_pos(const hlx_model_t *m, int64_t pos)
{
    return m->dca_chunk > 0 ? pos % (int64_t)(m->dca_chunk - m->dca_local) : pos;
}

/* RoPE of the model's rotated size rot_dim (rope_dim): inv_freq[i] (radians per position) for
 * pairs i < rot_dim / 2 after the model's scaling, *mscale the factor on cos and sin (yarn,
 * longrope; 1 otherwise). The formulas of the Hugging Face implementations (transformers'
 * llama3, linear and longrope scaling, longrope with the set m->rope_long names;
 * DeepSeek-V3's yarn). */
void hlx_model_rope_freqs(const hlx_model_t *m, int rot_dim, double *inv_freq, double *mscale);
/* The kind's name in Hugging Face's rope_scaling ("none" for HLX_ROPE_NONE). */
const char *hlx_model_rope_kind_name(hlx_rope_kind_t kind);
/* The same for a forward whose sequence is seq_len positions long: dynamic NTK's base
 * theta x (factor x seq_len / orig - (factor - 1))^(rot_dim / (rot_dim - 2)) once seq_len
 * exceeds rope_orig_ctx (transformers' _compute_dynamic_ntk_parameters, InternLM2's
 * rotary embedding); every other kind ignores seq_len. */
void hlx_model_rope_freqs_at(const hlx_model_t *m, int rot_dim, int64_t seq_len,
                             double *inv_freq, double *mscale);
/* The sequence length whose frequencies rotate position pos of a request whose prompt ends
 * at prompt_end (context + prompt tokens; the context alone without a prompt): the prompt's
 * positions are rotated by the prefill's forward, prompt_end long, each later position by
 * its own decode step's, pos + 1 long. That is what Hugging Face's generate does for one
 * request (the rotary cache grows with each forward, cached keys keep their rotation); in
 * a batch transformers takes the longest request's length, the runtime each request's. */
static inline int64_t hlx_model_rope_seq(int64_t prompt_end, int64_t pos)
{
    return pos + 1 > prompt_end ? pos + 1 : prompt_end;
}
/* longrope: picks one factor set for a run whose longest sequence (context, prompt and every
 * generated position) is seq_len positions: long when seq_len exceeds
 * original_max_position_embeddings, short otherwise (m->rope_long; 0 for other kinds). The
 * engine and the fp64 reference call it with their own lengths, before the model is hashed
 * or its frequencies computed. */
void hlx_model_rope_select(hlx_model_t *m, int64_t seq_len);
/* The attention's softmax scale: 1 / sqrt(key size that q . k spans) times yarn's
 * mscale(factor, mscale_all_dim)^2 when mscale_all_dim is set (DeepSeek-V3). */
double hlx_model_softmax_scale(const hlx_model_t *m, int qk_dim);
/* The factor on an embedding row: embed_mult where set (Granite), sqrt(hidden) rounded to
 * the weight dtype under embed_scale (Gemma: its normalizer cast to the weights' dtype),
 * else 1. */
double hlx_model_embed_scale(const hlx_model_t *m);
/* The same for the weights held in `held` (helix decode --weight-dtype): Gemma's sqrt(hidden)
 * in the dtype the embedding is held in, as transformers casts it to the activations'. */
double hlx_model_embed_scale_held(const hlx_model_t *m, hlx_dtype_t held);
/* The dense FFN's matrices of H x ffn: 3 (gate, up, down), or 2 for a plain MLP
 * (ffn_plain: up and down; StarCoder2). */
int    hlx_model_ffn_mats(const hlx_model_t *m);
/* The factor on each attention and FFN output before the residual add: residual_mult where
 * set (Granite), else 1. */
double hlx_model_residual_mult(const hlx_model_t *m);

/* Loads a model from a JSON file or a preset name ("tiny", "llama-405b", "deepseek-r1",
 * "helix-fig1"). Errors go to err as "file:line:column: key: reason"; HLX_ERR_PARSE or
 * HLX_ERR_IO or HLX_ERR_NOT_FOUND (unknown preset: the message lists the presets). */
hlx_status_t hlx_model_load(const char *path_or_preset, hlx_model_t *m, char *err,
                            size_t errlen);

/* hlx_model_load, then refuses what the decode runtime does not run (MLA attention, MoE
 * layers, fp8 or fp4 weights: the planner models them) with "file:line:column: field:
 * reason" and
 * HLX_ERR_INVALID (exit 2). Decode loads through this; the planner through hlx_model_load. */
hlx_status_t hlx_model_load_runnable(const char *path_or_preset, hlx_model_t *m, char *err,
                                     size_t errlen);
/* The same check for a model already in memory: names the first field not run. */
hlx_status_t hlx_model_check_runnable(const hlx_model_t *m, char *err, size_t errlen);

/* Hash of every field of the model (name, shapes, MLA and MoE fields, dtypes, RoPE base,
 * norm epsilon), for the cross-rank configuration check: equal models hash equal, and a
 * difference in any one field changes the hash. */
uint64_t hlx_model_hash(const hlx_model_t *m);

/* Key and value element counts per KV "head" per token (GQA: head_dim, v_head_dim;
 * MLA absorbed: kv_lora_rank + qk_rope_dim, kv_lora_rank). */
int hlx_model_key_dim(const hlx_model_t *m);
/* Layer l's attention window in positions (sliding_window, sliding_pattern, sliding_from),
 * 0 when it attends to the whole context. */
static inline int hlx_model_layer_window(const hlx_model_t *m, int l)
{
    if (m->sliding_window <= 0 || l < m->sliding_from ||
        (m->sliding_pattern > 1 && (l + 1) % m->sliding_pattern == 0))
        return 0;
    return m->sliding_window;
}
/* 1 when layer l turns its queries and keys by RoPE, 0 for a NoPE layer (nope_pattern). */
static inline int hlx_model_layer_rope(const hlx_model_t *m, int l)
{
    return !(m->nope_pattern > 1 && (l + 1) % m->nope_pattern == 0);
}
/* 1 when layer l normalises its query and key heads (qk_norm; under qk_norm_unit only a
 * layer that turns by RoPE). */
static inline int hlx_model_layer_qk_norm(const hlx_model_t *m, int l)
{
    return m->qk_norm && (!m->qk_norm_unit || hlx_model_layer_rope(m, l));
}
/* The factor on layer l's queries at position pos: the attention temperature on a NoPE
 * layer (attn_temp_floor, attn_temp_scale), else 1. */
double hlx_model_attn_temp(const hlx_model_t *m, int l, int64_t pos);
/* 1 when layer l's FFN is an MoE layer (experts > 0, past dense_layers, every moe_step-th),
 * 0 for a dense one. */
static inline int hlx_model_layer_moe(const hlx_model_t *m, int l)
{
    return m->experts > 0 && l >= m->dense_layers &&
           (m->moe_step <= 1 || (l + 1) % m->moe_step == 0);
}
/* The MoE layers before layer l (layer l's index among them when it is one). */
static inline int hlx_model_moe_index(const hlx_model_t *m, int l)
{
    if (m->experts <= 0 || l <= m->dense_layers)
        return 0;
    return m->moe_step <= 1 ? l - m->dense_layers : l / m->moe_step - m->dense_layers / m->moe_step;
}
/* MoE layers of the model (0 for a dense one). */
static inline int hlx_model_moe_layers(const hlx_model_t *m)
{
    return hlx_model_moe_index(m, m->layers);
}
/* Positions a query attends to at a sequence of seq positions, over the layers' mean:
 * seq on a whole-context layer, min(window, seq) on a windowed one (the planners' reads,
 * and the positions their KV cache holds). */
double hlx_model_attn_tokens(const hlx_model_t *m, double seq);
/* First position a query at pos attends to under window w (0: the whole context). */
static inline int64_t hlx_model_window_start(int w, int64_t pos)
{
    return w > 0 && pos - w + 1 > 0 ? pos - w + 1 : 0;
}
/* First position a query at pos attends to on layer l: 0 on a whole-context layer, the
 * window's start on a windowed one, its chunk's start under window_chunked. */
static inline int64_t hlx_model_layer_first(const hlx_model_t *m, int l, int64_t pos)
{
    int w = hlx_model_layer_window(m, l);

    if (w <= 0)
        return 0;
    return m->window_chunked ? pos - pos % w : hlx_model_window_start(w, pos);
}
int hlx_model_value_dim(const hlx_model_t *m);

/* The pieces each query head is cut into for the Helix all-to-all when KVP ranks share a
 * TPA shard of min_heads .. max_heads query heads of dv values (docs/architecture.md "Head
 * splits"): 1 (whole heads) when min_heads >= kvp; else the divisor s of dv with min_heads x
 * s >= kvp whose busiest rank moves the fewest floats, ceil(max_heads x s / kvp) pieces of
 * dv / s values and an LSE each, ties to the smaller s; 0 when even single values are too
 * few (min_heads x dv < kvp). The runtime's layout and the planner's both call it. */
int hlx_model_q_split(int min_heads, int max_heads, int kvp, int dv);

/* Parameter count (for memory checks and the planner): embeddings and an output head (one
 * matrix when tie_embeddings), attention, dense FFN layers and MoE layers (routed + shared
 * experts + router). */
double hlx_model_params(const hlx_model_t *m);
/* Attention parameters of one layer (Q, K, V, O; MLA: down/up projections). */
double hlx_model_attn_params(const hlx_model_t *m);

/* Directory holding data/models and data/clusters: HELIX_DATA_DIR, else the source tree's
 * data/ (HLX_SOURCE_ROOT), else the installed share dir. */
const char *hlx_data_dir(void);

/* Resolves path_or_preset for kind ("models" or "clusters"): an existing file, a path
 * (contains '/' or ends in .json) or <hlx_data_dir()>/<kind>/<name>.json. An unknown
 * preset gives HLX_ERR_NOT_FOUND with the presets found listed in err. */
hlx_status_t hlx_data_resolve(const char *kind, const char *path_or_preset, char *path,
                              size_t pathlen, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
