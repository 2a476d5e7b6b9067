/* The phases of one Helix decode layer, shared by the runtime (measured) and the planner
 * (predicted) so that the two line up one to one. */
#ifndef HELIX_PHASE_H
#define HELIX_PHASE_H

typedef enum hlx_phase_id {
    HLX_PHASE_QKV = 0,  /* RMSNorm, QKV projection, RoPE, staggered KV append */
    HLX_PHASE_ATTN,     /* attention partials + LSE over the local KV shard */
    HLX_PHASE_A2A,      /* KVP all-to-all of partials + LSE (HOP-B hides it) */
    HLX_PHASE_MERGE,    /* exact LSE merge of the KVP partials */
    HLX_PHASE_OPROJ,    /* W_o at TP = N */
    HLX_PHASE_OPROJ_AR, /* all-reduce after W_o */
    HLX_PHASE_FFN,      /* dense SwiGLU */
    HLX_PHASE_MOE,      /* MoE FFN: router, shared experts, this rank's expert columns */
    HLX_PHASE_FFN_AR,   /* all-reduce after the FFN or MoE (the MoE combine) */
    HLX_PHASE_EMBED,    /* the step's embedding rows (vocabulary shards) and their all-reduce */
    HLX_PHASE_HEAD,     /* final norm, LM head, logits all-gather, argmax */
    HLX_PHASE_PP,       /* pipeline stage hand-offs (planner only) */
    HLX_PHASE_COUNT
} hlx_phase_id_t;

/* Short stable name ("qkv", "attention", "all-to-all", ...), used in tables and JSON keys. */
const char *hlx_phase_name(hlx_phase_id_t p);

/* HOP-B's pipeline of one layer's attention and all-to-all over nb micro-batches, each's
 * attention c and exchange m, the last one's c_last and m_last (it may be smaller): c +
 * (nb - 2) max(c, m) + max(c_last, m) + m_last; nb 1 (lockstep): c_last + m_last. The
 * runtime's choice of size (hlx_schedule_model) and the local predictor both use it. */
double hlx_hopb_pipeline(int nb, double c, double m, double c_last, double m_last);

#endif
