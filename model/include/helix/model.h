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
    double          norm_eps;
    hlx_dtype_t     weight_dtype;
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
    int             expert_ffn;      /* intermediate size of one expert */
    int             dense_layers;    /* first layers that are dense (use ffn) */
    /* MoE gating (DeepSeek-V3): scores, group-limited top-k, weights */
    hlx_moe_scoring_t moe_scoring;   /* scoring_func */
    int             norm_topk_prob;  /* the top-k weights renormalised to sum 1 */
    double          routed_scaling;  /* routed_scaling_factor: multiplies the weights */
    int             n_group;         /* experts split into n_group consecutive groups */
    int             topk_group;      /* experts chosen only from the best topk_group groups */
} hlx_model_t;

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
int hlx_model_value_dim(const hlx_model_t *m);

/* Parameter count (for memory checks and the planner): embeddings and an untied output
 * head, attention, dense FFN layers and MoE layers (routed + shared experts + router). */
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
