/* A checkpoint's model against the model file `helix model info --json` wrote for it:
 * config.json read as decode and `helix plan --model DIR` read it (the weights in the held
 * dtype) and the file read by the model reader must be the same model, every field
 * (hlx_model_hash, which a new field of hlx_model_t cannot escape). Usage:
 * model_roundtrip DIR FILE; exit 0 same, 1 different (the fields that differ named). */
#include "hlx_ckpt.h"

#include <helix/model.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The fields named when the hashes differ (the hash covers every field). */
#define HLX_RT_I(_f) { #_f, offsetof(hlx_model_t, _f), 0 }
#define HLX_RT_D(_f) { #_f, offsetof(hlx_model_t, _f), 1 }
static const struct {
    const char *name;
    size_t      off;
    int         dbl;
} hlx_rt_fields[] = {
    HLX_RT_I(attn), HLX_RT_I(layers), HLX_RT_I(hidden), HLX_RT_I(q_heads), HLX_RT_I(kv_heads),
    HLX_RT_I(head_dim), HLX_RT_I(v_head_dim), HLX_RT_I(ffn), HLX_RT_I(vocab),
    HLX_RT_I(rope_dim), HLX_RT_D(rope_theta), HLX_RT_D(norm_eps), HLX_RT_I(weight_dtype),
    HLX_RT_I(kv_dtype), HLX_RT_I(tie_embeddings), HLX_RT_I(sliding_window),
    HLX_RT_I(sliding_pattern), HLX_RT_I(sliding_from), HLX_RT_I(nope_pattern),
    HLX_RT_D(attn_scalar), HLX_RT_D(rope_local_theta), HLX_RT_D(attn_softcap),
    HLX_RT_D(final_softcap), HLX_RT_D(embed_mult), HLX_RT_D(residual_mult),
    HLX_RT_D(logits_scale), HLX_RT_I(q_lora_rank), HLX_RT_I(kv_lora_rank),
    HLX_RT_I(qk_nope_dim), HLX_RT_I(qk_rope_dim), HLX_RT_I(experts), HLX_RT_I(top_k),
    HLX_RT_I(shared_experts), HLX_RT_I(expert_ffn), HLX_RT_I(dense_layers),
    HLX_RT_I(moe_scoring), HLX_RT_I(norm_topk_prob), HLX_RT_D(routed_scaling),
    HLX_RT_I(n_group), HLX_RT_I(topk_group), HLX_RT_I(rope_kind), HLX_RT_D(rope_factor),
    HLX_RT_I(rope_orig_ctx), HLX_RT_D(rope_beta_fast), HLX_RT_D(rope_beta_slow),
    HLX_RT_D(rope_mscale), HLX_RT_D(rope_mscale_all), HLX_RT_D(rope_attn_factor),
    HLX_RT_I(rope_yarn_exact), HLX_RT_I(dca_chunk), HLX_RT_I(dca_local), HLX_RT_I(dca_orig),
};

int main(int argc, char **argv)
{
    hlx_hf_config_t hc;
    hlx_model_t m;
    char err[1024];
    size_t i;
    int named = 0;

    if (argc != 3) {
        fprintf(stderr, "usage: model_roundtrip CHECKPOINT_DIR MODEL_FILE\n");
        return 2;
    }
    if (hlx_hf_config_load(argv[1], &hc, err, sizeof(err)) != HLX_OK ||
        hlx_model_load(argv[2], &m, err, sizeof(err)) != HLX_OK) {
        fprintf(stderr, "model_roundtrip: %s\n", err);
        return 1;
    }
    hc.m.weight_dtype = hlx_hf_held_default(&hc); /* as helix plan --model DIR takes it */
    if (hlx_model_hash(&hc.m) == hlx_model_hash(&m)) {
        printf("%s: the same model (hash %016llx)\n", argv[1],
               (unsigned long long)hlx_model_hash(&m));
        return 0;
    }
    if (strcmp(hc.m.name, m.name) != 0) {
        printf("name: %s / %s\n", hc.m.name, m.name);
        named++;
    }
    for (i = 0; i < sizeof(hlx_rt_fields) / sizeof(hlx_rt_fields[0]); i++) {
        const char *a = (const char *)&hc.m + hlx_rt_fields[i].off;
        const char *b = (const char *)&m + hlx_rt_fields[i].off;
        if (hlx_rt_fields[i].dbl ? *(const double *)a != *(const double *)b
                                 : *(const int *)a != *(const int *)b) {
            if (hlx_rt_fields[i].dbl)
                printf("%s: %.17g / %.17g\n", hlx_rt_fields[i].name, *(const double *)a,
                       *(const double *)b);
            else
                printf("%s: %d / %d\n", hlx_rt_fields[i].name, *(const int *)a,
                       *(const int *)b);
            named++;
        }
    }
    printf("%s: another model from %s (%d of the fields named here differ)\n", argv[1],
           argv[2], named);
    return 1;
}
