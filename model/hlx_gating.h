/* MoE gating rules shared by the two readers of model/ (model files in model.c, Hugging Face
 * config.json in hf.c), so that both refuse the same models. Private to model/. */
#ifndef HLX_GATING_H
#define HLX_GATING_H

#include <helix/model.h>
#include <helix/status.h>
#include <stddef.h>

/* The names the gating fields have in the file being read, for messages. */
typedef struct hlx_gating_keys {
    const char *experts, *top_k, *n_group, *topk_group;
} hlx_gating_keys_t;

/* Group-limited routing of m (experts > 0, n_group and topk_group already defaulted):
 * n_group divides experts, topk_group <= n_group and the topk_group groups kept hold at
 * least top_k experts (otherwise the router picks from too few, and decodes other tokens
 * than the model's own code, which fails). On failure HLX_ERR_PARSE, *key_p the key at
 * fault (one of keys) and the reason, naming the other keys, in why. */
hlx_status_t hlx_model_gating_check(const hlx_model_t *m, const hlx_gating_keys_t *keys,
                                    const char **key_p, char *why, size_t whylen);

#endif
