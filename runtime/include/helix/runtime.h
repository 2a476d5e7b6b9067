/* The Helix decode runtime: one engine per process, bootstrapped through PMIx, running
 * KVP x TPA ranks of a model with synthetic weights and a synthetic prior context, with
 * an optional check of every step against a single-process fp64 reference. */
#ifndef HELIX_RUNTIME_H
#define HELIX_RUNTIME_H

#include <helix/model.h>
#include <helix/phase.h>
#include <helix/status.h>
#include <helix/types.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Schedule of the attention exchange (--hopb). */
typedef enum hlx_hopb_mode {
    HLX_HOPB_OFF = 0, /* lockstep: attention of the whole batch, then one blocking exchange */
    HLX_HOPB_ON,      /* micro-batches, each exchange overlapped with the next attention */
    HLX_HOPB_AUTO     /* micro-batches when the pipeline model predicts a gain */
} hlx_hopb_mode_t;

typedef struct hlx_run_config {
    int         kvp, tpa;     /* N = kvp * tpa must equal the number of ranks */
    int         batch;        /* requests decoded together */
    int64_t     context;      /* tokens of prior (synthetic) context per request */
    int         steps;        /* decode steps */
    int         kv_block;     /* staggered KV append: steps per KVP rank before moving on */
    uint64_t    seed;
    int         check;        /* compare every step with the fp64 reference */
    double      check_tol;    /* relative tolerance (max |err| / max |ref|) */
    int         kv_dtype_set; /* 1: kv_dtype overrides the model's */
    hlx_dtype_t kv_dtype;
    int         weight_dtype_set; /* 1: the weights are held in weight_dtype (f32 or bf16)
                                     instead of the model's (a checkpoint's: its torch_dtype
                                     for float32 and bfloat16, else bf16) */
    hlx_dtype_t weight_dtype;
    char        kernels[32];  /* "auto" or a variant name */
    double      timeout_s;    /* deadline of every collective and of the bootstrap;
                                0 = the transport's default (HELIX_COMM_TIMEOUT) */
    int         verbose;      /* print every step */
    int         hopb;         /* hlx_hopb_mode_t */
    int         micro_batch;  /* requests per micro-batch; 0 = chosen from the first step */
    char        timeline[256]; /* write the last step's timeline here ("" = none) */
    int         threads;      /* cores per rank; 0 = HELIX_THREADS (default 1) */
    char        device[16];   /* "cpu", "cuda" or "auto"; "" = HELIX_DEVICE (default cpu) */
    int         ep;           /* MoE expert-parallel groups (N = EP x TPF); 0 = HELIX_EP */
    double      route_margin; /* --check: MoE choices within this of a tie are reported
                                 (0 = the reference's default, 1e-5) */
    char        ckpt[512];    /* Hugging Face checkpoint directory ("" = synthetic weights) */
    const int  *prompt;       /* [batch][prompt_len] token ids prefilled after the context
                                 (caller-owned; NULL = none) */
    int         prompt_len;   /* prompt tokens per request (with tails: the shortest
                                 prompt's length) */
    const int  *tail;         /* the prompt tokens of each request past prompt_len, one
                                 request after the other (caller-owned; NULL = none) */
    const int  *tail_off;     /* [batch + 1]: request b's tail is tail[tail_off[b] ..
                                 tail_off[b + 1]); NULL = none. The prefill runs each
                                 request's whole prompt (prompt_len + its tail), and the
                                 request then decodes at its own position */
    int         prefill_chunk; /* prompt tokens per prefill pass (default and 0:
                                  HLX_PREFILL_CHUNK) */
    double      temperature;  /* 0: greedy; > 0: seeded top-p sampling (hlx_sample.h) */
    double      top_p;        /* nucleus of the sampling (0 < top_p <= 1; default 1) */
    const int  *eos;          /* stop ids (caller-owned; NULL = none): the run ends after
                                 the first step at which every request has produced one
                                 (the prefill's token counts); the same step on every rank,
                                 since tokens are replicated */
    int         neos;         /* entries of eos (0..HLX_EOS_MAX) */
} hlx_run_config_t;

/* Most stop ids a run takes (hlx_run_config_t.eos). */
#define HLX_EOS_MAX 16

/* Prompt tokens per prefill pass when hlx_run_config_t.prefill_chunk is 0. */
#define HLX_PREFILL_CHUNK 32

/* Prompt tokens of request b past prompt_len (hlx_run_config_t.tail), and the most of any
 * request: the whole prompt of b is prompt_len + hlx_run_tail_len(cfg, b) tokens. */
static inline int hlx_run_tail_len(const hlx_run_config_t *cfg, int b)
{
    return cfg->tail_off ? cfg->tail_off[b + 1] - cfg->tail_off[b] : 0;
}

/* Prompt tokens of the whole batch: every request's first prompt_len, then the tails. */
static inline int64_t hlx_run_prompt_tokens(const hlx_run_config_t *cfg)
{
    return (int64_t)cfg->batch * cfg->prompt_len + (cfg->tail_off ? cfg->tail_off[cfg->batch] : 0);
}

static inline int hlx_run_tail_max(const hlx_run_config_t *cfg)
{
    int b, t = 0;

    for (b = 0; cfg->tail_off != NULL && b < cfg->batch; b++)
        t = hlx_run_tail_len(cfg, b) > t ? hlx_run_tail_len(cfg, b) : t;
    return t;
}

/* The whole prompt of request b, and the longest of the batch. */
static inline int hlx_run_prompt_len(const hlx_run_config_t *cfg, int b)
{
    return cfg->prompt_len + hlx_run_tail_len(cfg, b);
}

static inline int hlx_run_prompt_max(const hlx_run_config_t *cfg)
{
    return cfg->prompt_len + hlx_run_tail_max(cfg);
}

/* Per-phase time accounting: the phases and their names are in helix/phase.h. */

typedef struct hlx_run_report {
    int      rank, size;
    char     launcher[16];
    char     kernels[32];
    char     transport[16];
    int      steps;                    /* decode steps run (fewer than planned after EOS) */
    int      steps_planned;            /* hlx_run_config_t.steps */
    int      eos_stop;                 /* 1: every request produced a stop id early */
    double   step_ms_median, step_ms_min, step_ms_max;
    double   tokens_per_s;             /* batch / median step time */
    double   phase_ms[HLX_PHASE_COUNT]; /* median per step, this rank */
    uint64_t kv_bytes_rank;            /* allocated KV bytes on this rank */
    hlx_dtype_t kv_dtype;              /* the KV cache's element type (f32, bf16, fp8) */
    hlx_dtype_t w_dtype;               /* the weights' element type as held (f32, bf16) */
    /* the checkpoint's fp8 KV-cache scales: "checkpoint" (in use), "ignored" (the
     * checkpoint has them, the KV is not fp8) or "none" */
    const char *kv_scales;
    uint64_t kv_bytes_max, kv_bytes_min; /* over ranks */
    /* weights as held on this rank (its slices, the embedding's and head's vocabulary
     * slice, the layout's padding and load scratch: the start-up memory check's item) */
    uint64_t w_bytes_rank, w_bytes_max, w_bytes_min;
    int64_t  kv_tokens_rank;           /* tokens held at the end, per request */
    int64_t  kv_ring_rank;             /* slots of a windowed layer's ring on this rank
                                        * (0: every layer keeps every position) */
    int      checked;
    double   max_abs_err, max_rel_err;
    int      tokens_match;
    int      replicas_match;           /* every rank ended with the same hidden state */
    int      nonfinite;                /* NaN/Inf values met in the compared outputs */
    int64_t  kv_rows_checked;          /* appended KV rows compared with the reference */
    int64_t  kv_rows_bad;              /* ... of which differ */
    int64_t  kv_elems_apart;           /* bf16 / fp8 KV: elements of the compared rows the
                                        * engine rounded to another value than the
                                        * reference (a value near the midpoint of two codes,
                                        * within the rows' tolerance); 0 for f32 */
    int64_t  kv_rows_overwritten;      /* appended rows a windowed layer's ring no longer
                                        * holds (not compared) */
    int     *tokens;                   /* [steps][batch] chosen tokens (engine-owned) */
    int      bound;                    /* this rank runs bound to cpuset */
    char     binding[8];               /* placed (HELIX_BIND), kept (bound before start,
                                        * cpuset is then that binding) or none */
    char     cpuset[256];               /* cores of this rank ("" unknown) */
    char     place_cpuset[256];         /* cores of its placement ("" unknown) */
    char     a2a_link[16];             /* link class to its KVP peers (self, shm, ...) */
    /* backend of the collectives per communicator (host, self, ucx-staged, ucx-device,
     * nccl) and the one line saying why, agreed by the communicator's members */
    char     comm_kvp[16], comm_world[16];
    char     comm_kvp_why[160], comm_world_why[160];
    int      micro_batch;              /* requests per micro-batch (batch = lockstep) */
    int      threads;                  /* cores of this rank (kernels' thread pool) */
    double   hopb_c_ms;                /* attention of one micro-batch (first step) */
    double   hopb_m_ms;                /* exchange of one micro-batch (first step) */
    /* attention of one micro-batch beside the previous one's exchange in flight, 0 when not
     * measured (then hopb_why says why and the model takes hopb_c_ms for it) */
    double   hopb_c_busy_ms;
    double   hopb_m1_ms, hopb_m_batch_ms; /* exchange of one request, of the batch */
    double   hopb_post_ms;             /* CPU time of posting one exchange */
    double   hopb_predicted_ms;        /* pipeline model per layer, chosen size */
    /* why auto ran lockstep without measuring, or why c_busy was not measured, or "" */
    char     hopb_why[96];
    uint64_t hidden_hash;              /* hash of the final hidden state (bitwise) */
    char     device[16];               /* execution backend's device: cpu or cuda */
    char     device_note[320];         /* why auto chose it, and the device used */
    char     kernels_note[320];        /* the kernel variant and why it was chosen */
    char     w_layout[8];              /* the projections' weights: "strips" of 16 columns
                                          (HELIX_W_STRIPS, the host backend on avx512),
                                          "rows" (row-major), or "packed": a checkpoint's
                                          integer-packed ones kept packed (HELIX_W_PACKED),
                                          the others in strips */
    int      w_packed;                 /* projections kept packed on this rank */
    uint64_t w_proj_bytes_rank;        /* the projections' bytes as allocated on this rank
                                          (w_bytes_rank: the model's estimate, unpacked) */
    int      q_split;                  /* pieces each query head is cut into for the
                                          all-to-all (1: whole heads; more when KVP exceeds
                                          a TPA shard's heads) */
    int      piece_dim;                /* values of one piece (v_head_dim / q_split) */
    int      ep, tpf;                  /* MoE split: EP groups x TPF ranks each */
    int      experts_first, experts_rank; /* routed experts this rank holds (slices) */
    uint64_t moe_bytes_rank;           /* MoE weights allocated on this rank */
    int64_t  route_near_ties;          /* --check: routing choices within the margin */
    uint64_t ckpt_bytes_rank;          /* checkpoint bytes this rank read (0: synthetic) */
    uint64_t ckpt_bytes_min, ckpt_bytes_max; /* ... over ranks */
    uint64_t ckpt_bytes_total;         /* tensor data bytes of the whole checkpoint */
    int      prompt_len;               /* prompt tokens prefilled per request */
    double   prefill_ms;               /* the whole prefill (every chunk), rank 0 */
    int     *prefill_tokens;           /* [batch] tokens chosen after the prompt (engine-owned;
                                          NULL without a prompt) */
} hlx_run_report_t;

/* helix bench hopb: attention + exchange of one layer, lockstep against HOP-B. Times are
 * medians over reps, maximum over ranks, in ms. */
typedef struct hlx_hopb_bench {
    int    batch, micro_batch;
    double c_ms;          /* attention (and packing) of one micro-batch */
    double m_ms;          /* exchange of one micro-batch alone */
    double lockstep_ms;   /* attention of the batch, then its exchange */
    double pipelined_ms;  /* micro-batches with overlapped exchanges */
    double c_busy_ms;     /* attention (and packing) of a micro-batch while the previous
                             one's exchange is in flight, from the pipelined rounds */
    double predicted_ms;  /* c + (nb - 1) max(c_busy, m) + m, nb micro-batches */
    double predicted_idle_ms; /* the same with c in place of c_busy */
} hlx_hopb_bench_t;

typedef struct hlx_engine hlx_engine_t;

void hlx_run_config_default(hlx_run_config_t *cfg);

/* Bootstraps (PMIx or a world of one), validates the layout against the model and the
 * job size, compares the configuration across ranks, checks memory, builds the weight
 * shards and the KV shard. On error err holds one line saying what to do; it is empty on
 * ranks above 0 when every rank meets the error alike (the layout against the job's size
 * and the model), which rank 0 then reports. */
hlx_status_t hlx_engine_create(const hlx_run_config_t *cfg, const hlx_model_t *model,
                               hlx_engine_t **eng_p, char *err, size_t errlen);
/* Runs cfg->steps decode steps (and the reference when cfg->check). With --check the
 * status is HLX_ERR_CHECK when hlx_run_report_passed() says no. */
hlx_status_t hlx_engine_run(hlx_engine_t *eng, hlx_run_report_t *rep, char *err,
                            size_t errlen);
int          hlx_engine_rank(const hlx_engine_t *eng);
/* Runs the attention and exchange of layer 0 reps times in lockstep and with micro-batches
 * of micro_batch requests (collective). The KV cache is only read. */
hlx_status_t hlx_engine_bench_hopb(hlx_engine_t *eng, int micro_batch, int reps,
                                   hlx_hopb_bench_t *out, char *err, size_t errlen);
/* The check's verdict: replicas identical and, where the reference ran (rank 0), tokens
 * equal, no non-finite value, every appended KV row equal and max_rel_err <= tol. */
int          hlx_run_report_passed(const hlx_run_report_t *rep, double tol);
void         hlx_engine_destroy(hlx_engine_t *eng);
/* After a failure that only this rank saw (a non-finite value, a lost peer): asks the
 * launcher to end the whole job (PMIx_Abort) so peers do not wait for a partner that left,
 * then exits with exit_code. Does not return. */
void         hlx_engine_abort(hlx_engine_t *eng, int exit_code, const char *msg)
    __attribute__((noreturn));

/* Settings of the runtime (HELIX_BIND), for `helix info`. */
struct hlx_param_table;
const struct hlx_param_table *hlx_runtime_param_table(void);

/* The bytes this process may take, as the start-up memory check bounds one rank alone:
 * HELIX_MEM_LIMIT, else the smaller of the node's MemAvailable and its memory cgroups' room;
 * which of them into *src_p. UINT64_MAX when none is known. */
uint64_t hlx_runtime_mem_room(const char **src_p);

#ifdef __cplusplus
}
#endif
#endif
