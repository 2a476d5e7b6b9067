/* Planner: a closed-form roofline model of one decode step for a layout (KVP, TPA, TPF,
 * EP, PP, batch, HOP-B) of a model on a cluster, the paper's Appendix A formulas as
 * written, and sweeps with Pareto frontiers. No runtime dependency. See docs/planner.md. */
#ifndef HLX_PLAN_H
#define HLX_PLAN_H

#include <helix/cluster.h>
#include <helix/model.h>
#include <helix/phase.h>
#include <helix/status.h>

#include <stdio.h>

#include "hlx_param.h"

/* Layout families compared by the sweep. */
typedef enum hlx_strategy {
    HLX_STRAT_TP    = 0, /* attention and FFN at the same TP width; KV duplicated past K */
    HLX_STRAT_PP    = 1, /* TP inside a stage, layers split over PP stages */
    HLX_STRAT_DPEP  = 2, /* data-parallel attention, EP FFN (dense: TP FFN via AG/RS) */
    HLX_STRAT_MEDHA = 3, /* KVP x TPA attention, FFN at the fixed TP = TPA */
    HLX_STRAT_HELIX = 4, /* KVP x TPA attention, W_o at TP = N, FFN at TPF x EP = N */
    HLX_STRAT_COUNT
} hlx_strategy_t;

const char *hlx_strategy_name(hlx_strategy_t s);
int         hlx_strategy_parse(const char *s, hlx_strategy_t *s_p);

typedef struct hlx_layout {
    hlx_strategy_t strategy;
    int kvp;    /* KV (sequence) parallel ranks */
    int tpa;    /* attention tensor parallel ranks */
    int dp;     /* data-parallel attention groups (dp-ep only, else 1) */
    int tpf;    /* FFN tensor parallel ranks */
    int ep;     /* FFN expert parallel ranks */
    int pp;     /* pipeline stages */
    int batch;  /* concurrent requests served by the kvp*tpa*dp*pp GPUs */
    int hopb;   /* batch-wise overlap of attention and its combine */
} hlx_layout_t;

/* Per decode step, summed over every layer on the critical path; the phases are the
 * runtime's (helix/phase.h), so predicted and measured phases line up one to one. */

typedef enum hlx_bound { HLX_BOUND_NONE, HLX_BOUND_MEMORY, HLX_BOUND_COMPUTE, HLX_BOUND_LINK }
    hlx_bound_t;

typedef struct hlx_phase {
    double      time_s;
    double      bytes;  /* HBM bytes read per GPU (link phases: bytes sent per GPU) */
    double      flops;  /* per GPU */
    hlx_bound_t bound;  /* what sets the time (the largest contributor over layers) */
    hlx_link_t  link;   /* slowest link used by a communication phase */
} hlx_phase_t;

typedef enum hlx_infeasible {
    HLX_FEAS_OK = 0,
    HLX_FEAS_MEMORY,    /* weights + KV + activations exceed usable HBM */
    HLX_FEAS_GPUS,      /* more GPUs than the cluster has */
} hlx_infeasible_t;

typedef struct hlx_plan_result {
    hlx_phase_t phase[HLX_PHASE_COUNT];
    double t_kv_s, t_w_s;     /* the paper's formulas, per layer */
    double hopb_saved_s;      /* lockstep minus pipelined attention+combine, per step */
    double ttl_s;             /* time to last token = one decode step for every user */
    double tok_s_user;        /* 1 / TTL */
    double tok_s_gpu;         /* batch / (TTL x GPUs) */
    int    gpus;
    int    feasible;
    hlx_infeasible_t why;
    double mem_weights, mem_kv, mem_act, mem_usable; /* bytes per GPU (worst stage) */
} hlx_plan_result_t;

/* Modelling assumptions that are settings (HELIX_PLAN_<NAME> overrides; `helix info`). */
typedef struct hlx_plan_settings {
    double hbm_reserve;  /* fraction of HBM kept for the runtime and fragmentation */
    double act_bytes;    /* bytes per activation element on the wire (bf16 = 2) */
    double lse_bytes;    /* bytes per (request, head) softmax statistic (fp32 = 4) */
    double act_buffers;  /* activation working set in units of batch x hidden */
    int    hopb_chunks;  /* most chunks HOP-B splits the batch into (0 = one per request) */
    int    lockstep_per_request; /* HOP-B off: 0 = one batched combine after attention,
                                  * 1 = the paper's B x (c + m): a combine per request */
    char   hw_file[256];  /* HELIX_HW_FILE: the hw file of `helix bench local` */
} hlx_plan_settings_t;

extern const hlx_param_table_t hlx_plan_param_table;

/* Everything a layout evaluation needs, computed once per (model, cluster, context). */
typedef struct hlx_plan_ctx {
    const hlx_model_t   *m;
    const hlx_cluster_t *c;
    hlx_plan_settings_t  set;
    double context;          /* S, tokens already in the cache per request */
    /* derived */
    double bw_hbm, peak_gemm, peak_attn, b_w, b_kv;
    /* bytes a weight of each class (hlx_model_t.plain: an fp8 checkpoint's unquantized
     * ones at plain_dtype's width, the others at b_w) */
    double b_attn, b_dense, b_expert, b_shared, b_plain;
    double kdim, vdim, lat_dim;  /* key/value elements per KV head; combine payload per head */
    double kv_elems_tok;         /* elements read per KV head per token (MLA: key only) */
    int    domain_gpus;          /* GPUs of the smallest NVLink domain */
    hlx_link_t intra, inter;     /* link classes inside / across domains */
    double a_in, b_in, a_x, b_x; /* latency (s) and bandwidth (B/s) of intra / inter */
} hlx_plan_ctx_t;

/* Prepares ctx. Settings are copied (NULL: defaults). */
hlx_status_t hlx_plan_ctx_init(hlx_plan_ctx_t *ctx, const hlx_model_t *m,
                               const hlx_cluster_t *c, double context,
                               const hlx_plan_settings_t *set);
void         hlx_plan_settings_default(hlx_plan_settings_t *set);

/* Most GPUs one layout may use (every product of layout sizes is checked against it in
 * 64-bit arithmetic before any int product is formed). */
#define HLX_PLAN_MAX_GPUS (1 << 20)

/* The largest per-rank shares of a GQA Helix layout, cut as the runtime cuts them
 * (runtime/layout.c): TPA shards of whole KV heads (uneven when TPA does not divide K) or,
 * past K (TPA a multiple of K), near-equal parts of one KV head's query heads; after the
 * all-to-all, near-equal consecutive parts of a shard's head pieces over KVP. A head is
 * cut into q_split pieces of v_head_dim / q_split values (1, whole heads, whenever KVP
 * <= the smallest shard's heads; else, of the divisors of v_head_dim that give the smallest
 * shard at least KVP pieces, the one whose busiest rank moves the fewest floats, pieces x
 * (values + 1), ties to the smaller), each piece carrying its head's LSE. The busiest rank
 * sets the step, so the cost model charges these maxima. Even splits give Q/TPA,
 * ceil(K/TPA), Q/N exactly. */
typedef struct hlx_helix_split {
    int q_local_max;  /* query heads of the largest TPA shard */
    int q_local_min;  /* ... of the smallest (it must give every KVP rank a piece) */
    int kv_local_max; /* KV heads of the largest TPA shard */
    int group;        /* query heads per KV head inside a shard */
    int q_split;      /* pieces per head (1: whole heads) */
    int q_slice_max;  /* pieces a rank owns after the all-to-all: ceil(q_local_max x q_split
                         / kvp); W_o rows q_slice_max x v_head_dim / q_split */
} hlx_helix_split_t;

/* HLX_OK, or HLX_ERR_INVALID with the runtime's reason in err (kvp beyond the smallest
 * shard's heads x v_head_dim pieces, TPA past K not a multiple of K). Requires q_heads a
 * multiple of kv_heads and v_head_dim >= 1 (1: heads are never cut, as for MLA). */
hlx_status_t hlx_helix_split(int q_heads, int kv_heads, int v_head_dim, int kvp, int tpa,
                             hlx_helix_split_t *s_p, char *err, size_t errlen);

/* Checks that a layout is well formed for this model (divisibility, strategy rules).
 * Returns HLX_OK or HLX_ERR_INVALID with the reason in err. */
hlx_status_t hlx_plan_check(const hlx_plan_ctx_t *ctx, const hlx_layout_t *l, char *err,
                            size_t errlen);
/* Evaluates a checked layout. Never allocates; safe to call millions of times. */
void hlx_plan_eval(const hlx_plan_ctx_t *ctx, const hlx_layout_t *l, hlx_plan_result_t *r_p);
/* Human-readable infeasibility reason ("" when feasible). */
void hlx_plan_reason(const hlx_plan_result_t *r, char *buf, size_t len);

/* The paper's Appendix A per-layer formulas exactly as written (seconds):
 *   t_kv = B * 2 * ceil(K/TPA) * Hsz * (S/KVP) * bytes_kv / MemBW
 *   t_w  = (2*H*(Q/TPA)*Hsz + 2*H*ceil(K/TPA)*Hsz + 3*H*F/TPF) * bytes_w / MemBW */
double hlx_plan_paper_tkv(double B, double K, double tpa, double hsz, double S, double kvp,
                          double bytes_kv, double membw_Bps);
double hlx_plan_paper_tw(double H, double Q, double K, double tpa, double hsz, double F,
                         double tpf, double bytes_w, double membw_Bps);

/* Alpha-beta collectives over n ranks in groups of d per NVLink domain (n = d * r).
 * M: all-reduce buffer; all-gather output; all-to-all bytes sent per rank. Seconds. */
double hlx_coll_allreduce(const hlx_plan_ctx_t *ctx, int n, int d, double M);
double hlx_coll_allgather(const hlx_plan_ctx_t *ctx, int n, int d, double M);
double hlx_coll_alltoall(const hlx_plan_ctx_t *ctx, int n, int d, double M);
/* Ranks of a group of n with the given stride that share one NVLink domain. */
int    hlx_coll_group_local(const hlx_plan_ctx_t *ctx, int n, int stride);

/* HOP-B: attention time c_total over B requests overlapped with a combine of cost
 * alpha + beta_total (beta_total for all B requests) in k chunks:
 *   c/k + (k-1) * max(c/k, alpha + beta/k) + alpha + beta/k, best k <= max_chunks. */
double hlx_plan_hopb(double c_total, double alpha, double beta_total, int B, int max_chunks);

/* ---- cluster variants for topology sweeps ---- */
/* A deep copy of base with one property set: rdma_gbps, rdma_us, nvlink_gbps, nvlink_us,
 * domain_gpus (regroups consecutive nodes into NVLink domains of that many GPUs),
 * hbm_gbps, hbm_gib. The name gets " key=value". Free with hlx_cluster_free(). */
hlx_status_t hlx_cluster_variant(const hlx_cluster_t *base, const char *key, double value,
                                 hlx_cluster_t *out, char *err, size_t errlen);
int          hlx_cluster_variant_key(const char *key); /* index, or -1 when unknown */
const char  *hlx_cluster_variant_keys(void);           /* "rdma_gbps, rdma_us, ..." */

/* ---- sweeps ---- */
typedef struct hlx_sweep_point {
    hlx_layout_t l;
    float ttl_ms, tok_s_user, tok_s_gpu;
    unsigned char feasible, pareto, cluster; /* cluster: index into the sweep's clusters */
    unsigned char why;
} hlx_sweep_point_t;

typedef struct hlx_sweep_opts {
    int gpus_min, gpus_max;
    const int *batches;        /* batch sizes to try */
    int nbatches;
    unsigned strategies;       /* bit mask of 1 << hlx_strategy_t */
    int hopb_mode;             /* 0 off, 1 on, 2 both */
    int progress;              /* print progress on stderr */
} hlx_sweep_opts_t;

/* Points a sweep keeps at most (about 1 GiB): past it hlx_sweep_run returns
 * HLX_ERR_NOSPACE, a sweep to narrow rather than hours and tens of GiB. */
#define HLX_SWEEP_MAX_POINTS ((size_t)16 << 20)

typedef struct hlx_sweep {
    hlx_sweep_point_t *pts;
    size_t n, cap;
    size_t evaluated;          /* layouts evaluated (including infeasible) */
    double seconds;            /* evaluation time */
} hlx_sweep_t;

/* Appends every valid layout x batch of the selected strategies to sw (points tagged with
 * cluster index ci) and marks the per-strategy Pareto frontiers of that cluster. */
hlx_status_t hlx_sweep_run(const hlx_plan_ctx_t *ctx, const hlx_sweep_opts_t *o, int ci,
                           hlx_sweep_t *sw);
void         hlx_sweep_free(hlx_sweep_t *sw);
/* Marks pareto = 1 on the non-dominated feasible points of each (cluster, strategy):
 * no other point has >= tokens/s/user and >= tokens/s/GPU with one strictly greater. */
void         hlx_sweep_pareto(hlx_sweep_t *sw, size_t first, size_t last);

/* Headline comparison of Helix against the best other strategy on one cluster. */
typedef struct hlx_sweep_summary {
    int    have_helix, have_base;
    double helix_best_user, base_best_user;   /* max tokens/s/user */
    hlx_strategy_t base_best_user_strat;
    double helix_best_gpu, base_best_gpu;     /* max tokens/s/GPU */
    /* tokens/s/GPU ratio at matched interactivity: max over the baseline frontier */
    double tput_ratio_max, tput_ratio_at_user;
    /* and at the baseline's most interactive point */
    double tput_ratio_at_base_best, base_best_user_tput, helix_tput_at_base_best;
    double helix_nohopb_best_user;            /* Helix restricted to HOP-B off (0: none) */
    double hopb_gain_max;                     /* max TTL(off)/TTL(on) - 1 on the frontier */
    size_t hopb_gain_idx;                     /* the HOP-B-on point where it is reached */
    size_t helix_best_idx, base_best_idx;
} hlx_sweep_summary_t;

void hlx_sweep_summarize(const hlx_sweep_t *sw, int ci, hlx_sweep_summary_t *s_p);

/* Writers. cluster names are indexed by point.cluster; m (the swept model; NULL: every
 * head whole) gives each point's q_split. */
int hlx_sweep_write_csv(FILE *f, const hlx_sweep_t *sw, const char *const *clusters,
                        const hlx_model_t *m);
int hlx_sweep_write_jsonl(FILE *f, const hlx_sweep_t *sw, const char *const *clusters,
                          const hlx_model_t *m);
int hlx_sweep_write_svg(FILE *f, const hlx_sweep_t *sw, const char *const *clusters,
                        int nclusters, const char *title);
/* Layout as text: "helix kvp=8 tpa=8 tpf=64 ep=1 pp=1 b=16 hopb". */
int hlx_layout_format(const hlx_layout_t *l, char *buf, size_t len);

#endif
