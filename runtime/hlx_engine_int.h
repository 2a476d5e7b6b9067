/* Internal state of the engine, shared by its parts: lifecycle (engine.c), configuration
 * record (config.c), layer phases (phases.c), schedules (schedule.c) and the run loop
 * (run.c). The checker sees none of it (hlx_engine_view.h). */
#ifndef HLX_ENGINE_INT_H
#define HLX_ENGINE_INT_H

#include <helix/runtime.h>
#include <stdatomic.h>
#include <helix/topology.h>

#include "hlx_backend.h"
#include "hlx_err.h"
#include "hlx_boot.h"
#include "hlx_comm.h"
#include "hlx_engine_view.h"
#include "hlx_kernels.h"
#include "hlx_layout.h"
#include "hlx_moe.h"
#include "hlx_param.h"
#include "hlx_wsrc.h"

#include <stddef.h>
#include <stdint.h>

typedef struct hlx_layer_w {
    float *attn_norm, *ffn_norm; /* [H] */
    float *attn_norm_b, *ffn_norm_b; /* [H]: their biases, LayerNorms (norm_layer; else NULL) */
    float *bup;                  /* [ffn_count]: the plain FFN's up bias of this rank's
                                    columns (ffn_bias; else NULL) */
    float *bdown;                /* [H]: its down bias, added once to the all-reduced
                                    output (ffn_bias; else NULL) */
    void  *wqkv;                 /* [H][qkv_cols]: Q heads of the TPA shard, then K, V */
    float *bqkv;                 /* [qkv_cols]: their biases (qkv_bias; else NULL) */
    float *qknorm;               /* [2][dk]: q_norm, then k_norm weights (qk_norm; else NULL) */
    float *post_norm;            /* [2][H]: the attention's, then the FFN's output norm
                                    weights (post_norms; else NULL) */
    float *sinks;                /* [q_slice]: the sink logit of each head (piece) this rank
                                    merges, a piece its head's (attn_sinks; else NULL) */
    float *bo;                   /* [H]: W_o's bias, added once to the all-reduced output
                                    (o_bias; else NULL) */
    void  *wo;                   /* [q_slice * dv / q_split][H]: rows of this rank's slice
                                    of heads (or pieces) */
    void  *wgu;                  /* [H][2 * ffn_count]: gate columns, then up columns */
    void  *wdown;                /* [ffn_count][H] */
    void  *kc, *vc;              /* KV shards [B][kv_local] of cap slots, kernels' layout */
    float *k_scale, *v_scale;    /* [kv_local] fp8 KV-cache scales of the local KV heads
                                    (hlx_wsrc_kv_scales; else 1; host memory): KV stored as
                                    x / scale, read as stored x scale */
    int    kv_scales_differ;     /* the local heads' scales are not all one pair: appends go
                                    head by head (hlx_phase_kv_append) */
    uint8_t *kv_nan;             /* fp8 KV: [shards] 1 once a NaN byte was stored in the
                                    shard (appends, the synthetic context), so its attention
                                    scans for them (hlx_kv_clean); else NULL; host memory */
} hlx_layer_w_t;

/* One bar of the HOP-B timeline: attention or exchange of one micro-batch of one layer,
 * in ns since the step began. */
typedef struct hlx_tl_event {
    int      layer, mb, kind; /* kind 0 attention, 1 exchange */
    uint64_t t0, t1;
} hlx_tl_event_t;

/* The runtime's settings (HELIX_BIND, HELIX_THREADS, HELIX_STEP_WATCHDOG, HELIX_FAULT,
 * HELIX_DEVICE, HELIX_NCCL, HELIX_STAGE, HELIX_EP, HELIX_PREFILL, HELIX_CUDA_ATTN, HELIX_PHASE_CLOCK,
 * HELIX_MEM_LIMIT), filled from the table in engine.c. */
typedef struct hlx_runtime_settings {
    char   bind[HLX_PARAM_STRLEN];
    int    threads;
    double step_watchdog;
    char   fault[HLX_PARAM_STRLEN];
    char   device[HLX_PARAM_STRLEN];
    char   nccl[HLX_PARAM_STRLEN];
    char   stage[HLX_PARAM_STRLEN];
    int    ep;
    char   prefill[HLX_PARAM_STRLEN];
    char   cuda_attn[HLX_PARAM_STRLEN];
    char   phase_clock[HLX_PARAM_STRLEN];
    double mem_limit; /* GiB per rank; 0: MemAvailable shared over the node's ranks */
} hlx_runtime_settings_t;

/* The engine's communicators, for their backend choice and report. */
enum { HLX_ENGINE_COMM_KVP = 0, HLX_ENGINE_COMM_WORLD = 1, HLX_ENGINE_COMMS };

struct hlx_engine {
    hlx_run_config_t cfg;
    hlx_runtime_settings_t set;  /* the runtime's settings table (engine.c) */
    int              threads;      /* cores of this rank (the backend's thread pool) */
    hlx_topo_t      *topo;
    hlx_placement_t *place;
    int              bound;        /* bound to its placement's cpuset (HELIX_BIND) */
    char             kept[256];    /* the binding it started with, kept (auto); "" none */
    int              kept_ncpu;    /* its CPUs */
    /* ranks x threads of this machine exceed the CPUs they may run on (counted at start,
     * before any binding): the ranks take turns on the cores (hlx_engine_place) */
    int              oversub;
    int              job_cpus, job_ranks, job_threads; /* of the busiest machine, for the
                                                         * log and the report */
    hlx_model_t      m;
    hlx_layout_t     lay;
    hlx_boot_t      *boot;
    hlx_boot_info_t  info;
    hlx_comm_t      *world, *kvp_comm;
    hlx_comm_t      *tpa_comm;      /* OLMo 2 (qk_norm_proj) under TPA > 1 only, else NULL */
    hlx_backend_t    be;
    hlx_be_queue_t  *q;
    char             device_note[320]; /* --device: what was chosen and why */
    struct hlx_nccl *nccl_world, *nccl_kvp; /* NCCL collectives on the queue, or NULL */
    /* the backend carrying each communicator's collectives (HLX_ENGINE_COMM_*) and why,
     * agreed by its members (engine_nccl.c) */
    hlx_comm_choice_t comm_choice[HLX_ENGINE_COMMS];
    char             comm_why[HLX_ENGINE_COMMS][160];
    /* ucx-staged: pinned host copies the transport reads and writes instead of device
     * buffers (NULL otherwise): the exchange's send and receive blocks, and the world's
     * all-reduce / all-gather (in, then out) */
    float           *stage_send, *stage_recv, *stage_world;
    hlx_dtype_t      kv_dtype, w_dtype;
    /* the gemm's w_dtype of the projections in the backend's layout (wqkv, wo, wgu, wdown,
     * lmhead, the experts, MLA's wqa, wqb, wkva): w_dtype, or w_dtype | HLX_W_S16 where the
     * host backend stores them in strips; MLA's W_UK and W_UV stay row-major in w_dtype */
    hlx_dtype_t      wp_dtype;
    int              wp_set;   /* wp_dtype came from a weights_layout */
    /* integer-packed checkpoint weights kept packed (HELIX_W_PACKED, the host backend):
     * every projection an hlx_wq_t (wp_dtype HLX_W_Q | HLX_W_S16 | bf16), wq_packed of them
     * packed; w_bytes: the projections' bytes on this rank */
    int              wq, wq_packed;
    int              wq_ao_warned; /* the act-order fallback to bf16 said (rank 0, at load, once) */
    uint64_t         w_bytes;
    size_t           kv_esize, w_esize;
    int              qkv_cols;
    int              kv_dk, kv_dv; /* elements per K and V cache row (MLA: [c | k_rope], 0) */
    int              xdv;          /* elements per head of the exchanged partials (MLA: kv_lora) */
    int              xpw;          /* elements per piece on the wire: xdv / lay.q_split */
    struct hlx_mla  *mla;          /* MLA weights and buffers (hlx_mla.h); NULL for GQA */
    int64_t          cap, kv_len, pos; /* pos, kv_len: of a request at the batch's position */
    /* slots of a windowed layer's shard, a ring (docs/architecture.md "KV layout"): every
     * slot this rank can own among the window + prefill chunk - 1 latest positions, in
     * whole kernel blocks, one block more; 0: no windowed layer, or one as long as cap */
    int64_t          ring;
    int64_t         *roff;   /* [batch]: how far each request's position is past pos (its
                              * prompt's tail, hlx_run_config_t.tail); NULL: all at pos */
    hlx_wsrc_t       ws;     /* where the weights come from (synthetic or a checkpoint) */
    hlx_layer_w_t   *layers;
    hlx_moe_t       *moe;                /* MoE layers' weights and buffers (moe.c) */
    /* the embedding rows of this rank's vocabulary slice (lay.vocab_first, vocab_count
     * rows of H, as the LM head's columns) in w_dtype (w_esize bytes an element), NULL
     * when a tied model reads them from the head (hlx_engine_embed_tied); a step's rows are
     * all-reduced over the N ranks (hlx_phase_embed); the final norm */
    void            *embed;
    float           *final_norm;
    float           *final_norm_b;  /* [H]: its bias, a LayerNorm (norm_layer; else NULL) */
    float           *embed_rows;         /* [batch][H] host (pinned): hlx_engine_embed */
    void            *lmhead;             /* [H][vocab_count] */
    /* step buffers, allocated once */
    float  *x, *hn, *qkv, *opart, *lsepart, *sendbuf, *recvbuf, *oparts, *lseparts;
    /* sliding_window only, else NULL: the rows before a window's first whole block as a
     * shard of their own, and the two partials of a windowed call (hlx_phase_attn_from) */
    void   *win_k, *win_v;         /* hlx_phase_kv_align slots each, in the kernels' layout */
    float  *win_o, *win_lse;       /* [4][group][dv], [4][group]: hlx_phase_attn_from's two,
                                      then the two pieces of a ring that wraps */
    /* dual chunk attention only (m.dca_chunk), else NULL: each row's queries rotated for
     * the succ and the inter parts, [2][batch][q_local][head_dim] (the intra ones stay in
     * qkv), and the partials of one (request, KV head)'s three parts, [3][group][dv] and
     * [3][group] (hlx_phase_attn_dca; the window scratch above serves their unaligned
     * starts) */
    float  *dca_q, *dca_o, *dca_lse;
    /* OLMo 2 (qk_norm_proj) under TPA > 1 only, else NULL: each request's sums of squares of
     * its q and k parts, [2][batch], all-reduced (hlx_phase_qkv_extras) */
    float  *qk_ss;
    double *rope_freq;             /* RoPE inverse frequencies (backend memory) */
    hlx_rope_tab_t rope;           /* them and the cos/sin factor, for the rope op */
    double *rope_freq_h;           /* the same frequencies in host memory */
    float  *rope_cs;               /* cos and sin at the step's position (host), rope.cs */
    /* rope_local_theta only, else inv_freq NULL: the windowed layers' table (plain RoPE of
     * that base, no scaling; cos and sin computed at each call) */
    hlx_rope_tab_t rope_local;
    double *rope_local_freq;       /* [rope_dim / 2], backend memory */
    /* dynamic NTK (HLX_ROPE_DYNAMIC) only, else NULL: a table per request, since each
     * request's positions turn with the frequencies of their own sequence length
     * (hlx_phase_rope_tab) */
    hlx_rope_tab_t *rope_rows;     /* [batch] */
    double *rope_rows_freq;        /* [batch][rope_dim / 2], backend memory */
    double *rope_rows_freq_h;      /* the same in host memory */
    float  *rope_rows_cs;          /* [batch][rope_dim + 2]: each table's cos and sin */
    int64_t *rope_rows_seq;        /* [batch]: the sequence length each table holds, or -1 */
    float   attn_scale;            /* softmax scale (hlx_model_softmax_scale), once */
    float  *omerged, *lsem, *y, *gu, *act, *lmout, *logits_local, *logits_all;
    /* the exchange: per KVP peer j, its heads (relative to the TPA shard), the float
     * offsets of its blocks in sendbuf and recvbuf, and per-micro-batch byte counts */
    int    *xh_first, *xh_count;
    size_t *xs_displ, *xr_displ;
    size_t *a2a_sc, *a2a_sd, *a2a_rc, *a2a_rd; /* [kvp] each, rebuilt per micro-batch */
    hlx_comm_req_t **reqs;                     /* [batch]: exchanges in flight */
    int    *tokens;
    uint64_t phase_ns[HLX_PHASE_COUNT];
    int      dev_clock; /* phases timed on the device queue (HELIX_PHASE_CLOCK=device, cuda) */
    hlx_status_t clock_st; /* the first failed mark of this step */
    /* the phase running now (a static name), for the step watchdog's message */
    _Atomic(const char *) wd_where;
    uint64_t kv_bytes;
    /* of the start-up memory check (hlx_engine_bytes): the weights as held, what --check
     * adds (the reference, gathered rows); the rest of the need is buffers */
    uint64_t mem_weights, mem_check;
    uint64_t mem_proj; /* of mem_weights, the projections' bytes counted (as w_bytes) */
    uint64_t mem_wscratch; /* the weights' reading scratch counted with mem_weights */
    int       *all_tokens;
    int        step;
    char       errmsg[1024]; /* why a step failed, set where it was first understood */
    /* the schedule: micro-batch size (batch = lockstep) and what auto measured */
    int        mb;
    int        hopb_decided;
    int        hopb_oversub; /* auto kept lockstep: the ranks take turns on the cores */
    double     hopb_c_ms, hopb_m1_ms, hopb_mb_ms, hopb_pred_ms;
    double     hopb_cb_ms;     /* c_busy of the chosen micro-batch, 0 when not measured */
    double     hopb_mbatch_ms, hopb_post_ms; /* the batch's exchange, posting one */
    const char *hopb_busy_why; /* why c_busy was not measured (a static string), or NULL */
    uint64_t   hopb_attn_ns; /* this step's attention between queue syncs (device, host clock) */
    uint64_t   step_t0;
    hlx_tl_event_t *tl;      /* timeline of the current step (--timeline) */
    int        tl_n, tl_cap;
    hlx_check_t *chk;        /* --check state, NULL without */
    hlx_fault_t *fault;      /* NULL without HELIX_FAULT */
    unsigned     fault_now;  /* fault bits active in this step on this rank */
    int          prefilling;     /* the head runs on the prompt's last token (prefill.c) */
    float       *sample_buf;     /* [vocab] logits of one request, then the sampler's work */
    int         *prefill_tokens; /* [batch]: the tokens chosen after the prompt */
};

/* Request b's position this step, and the KV slots its shard on this rank holds before it
 * (requests of one batch may sit at different positions: hlx_engine_t.roff). */
static inline int64_t hlx_engine_row_pos(const hlx_engine_t *eng, int b)
{
    return eng->pos + (eng->roff != NULL ? eng->roff[b] : 0);
}

static inline int64_t hlx_engine_row_kv_len(const hlx_engine_t *eng, int b)
{
    return eng->roff != NULL ? hlx_layout_kv_count(&eng->lay, eng->lay.kvp_rank,
                                                   hlx_engine_row_pos(eng, b))
                             : eng->kv_len;
}

/* The reason into err, st back (util's hlx_errbuf under the engine's name). */
#define hlx_engine_fail hlx_errbuf

/* Link class between this rank and its KVP peers (engine.c). */
const char  *hlx_engine_a2a_link(const hlx_engine_t *eng);

/* Whether the checkpoint's integer-packed weights could be kept packed (the host backend,
 * bf16 weights); eng->wq says whether they are (HELIX_W_PACKED). */
int hlx_engine_wq_can(const hlx_engine_t *eng);
/* What this rank would need (hlx_engine_bytes' need) with the checkpoint's packed weights
 * kept packed where they are held dequantized (!eng->wq and hlx_engine_wq_can): need less
 * the weights and reading scratch as held, plus those of the packed form, every matrix in
 * the form the load would hold it (hlx_engine_wput); 0 where nothing would be packed or
 * on overflow. It reads the act-order groups (g_idx) of every packed matrix: for the
 * memory refusal's hint (hlx_engine_config_agree), not for every start. */
uint64_t hlx_engine_need_packed(hlx_engine_t *eng, uint64_t need);

/* ---- backends of the collectives, NCCL path (runtime/cuda/engine_nccl.c) */
/* After allocation: per communicator (the KVP group, the world) the backend of its
 * collectives from its members' link classes (hlx_comm_choose_backend), agreed by the
 * members: NCCL communicators where every member chose NCCL (the schedule is then lockstep
 * job-wide: NCCL is ordered on the queue), pinned staging buffers for ucx-staged. */
hlx_status_t hlx_engine_nccl_open(hlx_engine_t *eng, char *err, size_t errlen);
void         hlx_engine_nccl_close(hlx_engine_t *eng); /* also frees the staging */
/* Host wait for the queue: with NCCL, also its asynchronous errors (aborted on a deadline). */
hlx_status_t hlx_engine_sync(hlx_engine_t *eng);
/* n zeroed elements of size bytes in the backend's memory (NULL on overflow or failure),
 * and its free (NULL taken): the step's buffers and the prefill's. */
void        *hlx_be_zalloc(hlx_engine_t *eng, size_t n, size_t size);
/* One source block of a projection matrix: rows [r0, r0 + K) x cols [c0, c0 + nc) of the
 * tensor `name` (runtime shape rows x cols, hlx_wsrc_read) into the matrix's columns
 * [at, at + nc). */
typedef struct hlx_wpart {
    char    name[160];
    int64_t rows, cols, r0, c0, nc, at;
} hlx_wpart_t;
/* A dense runtime weight w of layer l as such a part (its name and shape from hlx_hf). */
hlx_wpart_t  hlx_wpart_hf(const hlx_model_t *m, hlx_hf_weight_t w, int l, int64_t r0, int64_t c0,
                          int64_t nc, int64_t at);
/* A projection W[K][N] (*w_p) allocated in the backend's gemm layout (weights_layout) and
 * filled from the parts, which must cover its N columns: row-major in place; other layouts
 * through a few MiB of host scratch a group of columns at a time (weights_store), so no
 * row-major copy of W exists. Every matrix the same way, recorded in eng->wp_dtype, which
 * the gemm calls on it then pass. */
hlx_status_t hlx_engine_wload(hlx_engine_t *eng, void **w_p, int K, int N,
                              const hlx_wpart_t *parts, int nparts);
/* Where a walk over the projection matrices sends each one (hlx_engine_wput): NULL loads
 * it (hlx_engine_wload); a sink counts it for the start-up memory check: adds to *w the
 * bytes hlx_engine_wload will allocate for it and raises *scratch to the scratch its
 * reading takes on the rank's threads; nothing is allocated. Kept packed (packed 1, as
 * with eng->wq): its form decided as the load decides it (packed, in act order where its
 * parts' g_idx agree, which it reads, or plain strips). Unpacked (packed 0): the backend's
 * layout of K x N in w_dtype (weights_layout: row-major, or strips with their padding),
 * from the shapes alone, no tensor read. The load and the count walk the same loops:
 * hlx_engine_build's layers and head, hlx_mla_create's and hlx_moe_build's. */
typedef struct hlx_wsink {
    uint64_t *w, *scratch;
    int       packed;
} hlx_wsink_t;
/* Matrix K x N from the parts to sk: loaded into *w_p (sk NULL) or counted (w_p unused).
 * HLX_ERR_INVALID where K or N exceeds the int the engine's matrices take, or on a count's
 * overflow (eng->errmsg empty where it is the sum of the weights that overflows); the
 * message in eng->errmsg. */
hlx_status_t hlx_engine_wput(hlx_engine_t *eng, const hlx_wsink_t *sk, void **w_p, int64_t K,
                             int64_t N, const hlx_wpart_t *parts, int nparts);
void         hlx_be_free(hlx_engine_t *eng, void *p);
/* The phase clock on the device queue (dev_clock): a mark starting phase ph (-1: none);
 * nothing on the host's clock. A mark that fails is kept in clock_st for the step's end. */
void         hlx_engine_clock_mark(hlx_engine_t *eng, int ph);
static inline void hlx_engine_clock(hlx_engine_t *eng, int ph)
{
    if (eng->dev_clock) /* the host's clock (the default) costs the phases this test only */
        hlx_engine_clock_mark(eng, ph);
}
/* The exchange, all-reduce and all-gather of the phases through NCCL on the queue. */
hlx_status_t hlx_engine_nccl_a2a(hlx_engine_t *eng);
hlx_status_t hlx_engine_nccl_allreduce(hlx_engine_t *eng, float *buf, size_t n);
hlx_status_t hlx_engine_nccl_allgather(hlx_engine_t *eng, const void *in, size_t bytes,
                                       void *out);

/* ---- configuration record (config.c) */
/* Builds this rank's record, all-gathers it and compares it field by field; also refuses a
 * rank that would not fit in memory (need bytes). */
hlx_status_t hlx_engine_config_agree(hlx_engine_t *eng, uint64_t need, char *err,
                                     size_t errlen);

/* The embedding rows of tokens tok[0 .. n) into backend memory at dst (n x H floats), every
 * rank calling it with the same tokens. Built in host memory (embed_rows) batch rows at a
 * time: this rank's rows widened from w_dtype and scaled (Gemma's embed_scale), -0.0 for
 * another rank's vocabulary slice; with N > 1 summed over the ranks (the host transport on
 * the host rows before their one copy_to, NCCL on dst after), which leaves the owner's
 * values bit for bit. */
hlx_status_t hlx_engine_embed(hlx_engine_t *eng, const int *tok, int n, float *dst);
/* Whether the embedding rows are read from the LM head (a tied model on a backend whose
 * weights the host reads: weights_col); then eng->embed is NULL. */
int hlx_engine_embed_tied(const hlx_engine_t *eng);

/* ---- layer phases (phases.c): one function per phase, composed by a schedule */
hlx_status_t hlx_phase_embed(hlx_engine_t *eng);
hlx_status_t hlx_phase_qkv(hlx_engine_t *eng, int l);    /* norm, QKV, RoPE, KV append */
/* The input of an attention or an FFN, rows rows of x: their norm by w (and b, a
 * LayerNorm's bias: hlx_phase_norm) into hn (*in_p hn), or x itself where the layer has no
 * input norm (w NULL: post_norms_only, OLMo 2). Decode and prefill alike. */
hlx_status_t hlx_phase_norm_in(hlx_engine_t *eng, const float *w, const float *b, float *hn,
                               const float *x, int rows, const float **in_p);
/* The model's norm of rows rows of x by weights w into y: RMSNorm, or a LayerNorm with
 * bias b (norm_layer: StarCoder2). */
hlx_status_t hlx_phase_norm(hlx_engine_t *eng, const float *w, const float *b, float *y,
                            const float *x, int rows);
/* A dense FFN on rows rows of its input in (norm applied): gate | up into gu, the
 * activation into act, down into y (this rank's part, before the all-reduce); a plain MLP
 * (ffn_plain) up into act with its bias and activation, gu unused. Decode and prefill. */
hlx_status_t hlx_phase_ffn_dense(hlx_engine_t *eng, const hlx_layer_w_t *W, const float *in,
                                 float *gu, float *act, float *y, int rows);
/* What some families add between the QKV projection and RoPE, on rows rows of qkv
 * (qkv_cols floats apart): the biases (qkv_bias), then an RMSNorm of every q and k head
 * (qk_norm) or of the whole q and the whole k (qk_norm_proj, OLMo 2: under TPA > 1 a
 * collective over all ranks, its sums of squares in ss [2][rows], backend memory; NULL
 * otherwise). Nothing for a model without them. Decode and prefill alike. */
hlx_status_t hlx_phase_qkv_extras(hlx_engine_t *eng, const hlx_layer_w_t *W, float *qkv,
                                  int rows, float *ss);
/* Llama 4's attention temperature (hlx_model_attn_temp): the q heads of one row (q_local x
 * head_dim floats at q) times the factor of layer l at pos, after RoPE's place; nothing
 * where it is 1 (a RoPE layer, or no attn_temp_floor). Decode and prefill alike. */
hlx_status_t hlx_phase_attn_temp(hlx_engine_t *eng, int l, float *q, int64_t pos);
/* RoPE of layer l: `heads` heads of head_dim (the first rot elements turned) on each
 * request's row (x, rows ld floats apart), at the request's position (hlx_engine_row_pos). */
hlx_status_t hlx_phase_rope(hlx_engine_t *eng, int l, float *x, size_t ld, int heads,
                            int head_dim, int rot);
/* The RoPE table that turns request b's position pos in layer l: a windowed layer's own
 * (eng->rope_local) under rope_local_theta; else the model's (eng->rope) for every kind
 * but dynamic NTK; for that, request b's own, whose frequencies are those of the
 * sequence length that rotates pos (helix/model.h: hlx_model_rope_seq, from the request's
 * prompt end), recomputed and copied to the backend (on the queue, before the rope calls
 * that read them) when that length changes. Decode and prefill alike. */
/* Dual chunk attention (hlx_model_t.dca_chunk). The position a row at pos is rotated at:
 * part < 0 its keys and intra queries (pos mod the chunk length; pos itself without dual
 * chunk attention), HLX_DCA_SUCC or HLX_DCA_INTER those parts' queries. */
int64_t      hlx_phase_rot_pos(const hlx_engine_t *eng, int64_t pos, int part);
/* hlx_phase_rope with the rows' positions mapped by hlx_phase_rot_pos(part). */
hlx_status_t hlx_phase_rope_part(hlx_engine_t *eng, int l, float *x, size_t ld, int heads,
                                 int head_dim, int rot, int part);
/* Floats of one set of rows' queries, [rows][q_local][head_dim]: the offset of the inter
 * queries after the succ ones. */
static inline size_t hlx_phase_dca_qn(const hlx_engine_t *eng, int rows)
{
    return (size_t)rows * (size_t)eng->lay.q_local * (size_t)eng->m.head_dim;
}
/* The q_local heads of rows rows (row r at q + r * ld, before RoPE) copied to qs and qi
 * (row r at + r * ldq), for the caller to turn as the succ and the inter queries
 * (hlx_phase_rope_part for a step's rows; the prefill turns its rows token by token). */
hlx_status_t hlx_phase_dca_queries(hlx_engine_t *eng, const float *q, size_t ld, int rows,
                                   float *qs, float *qi, size_t ldq);
/* The partials of one (request, KV head) under dual chunk attention: d0 as for plain
 * attention (its q the intra queries, len this rank's slots up to pos), qs and qi the succ
 * and inter queries of its group; each part's slots on this rank attended with its own
 * queries, the softmax scale times qf (the query's hlx_model_dca_factor), the parts merged
 * exactly (LSE) into d0->o and d0->lse. */
hlx_status_t hlx_phase_attn_dca(hlx_engine_t *eng, const hlx_attn_desc_t *d0,
                                const float *qs, const float *qi, int64_t pos, double qf);
/* The length of the forward that computes request b's position pos (hlx_model_rope_seq:
 * its prompt's end for a prompt position, pos + 1 after): dynamic NTK's frequencies and
 * dual chunk attention's factor go by it. */
int64_t      hlx_phase_row_seq(const hlx_engine_t *eng, int b, int64_t pos);
hlx_status_t hlx_phase_rope_tab(hlx_engine_t *eng, int l, int b, int64_t pos,
                                const hlx_rope_tab_t **tab_p);
/* Attention partials of requests [b0, b1); between (request, KV head) units it calls
 * progress (when not NULL) so that exchanges in flight move on. */
hlx_status_t hlx_phase_attn(hlx_engine_t *eng, int l, int b0, int b1,
                            hlx_status_t (*progress)(hlx_engine_t *eng, int l), int l_arg);
/* KV slots the kernels' blocks leave whole (the lcm of the key and value blocks): a shard
 * read from slot n, a multiple of it, has the layout of a shard read from 0. */
size_t hlx_phase_kv_align(const hlx_engine_t *eng);
/* d (one GQA request and KV head, d->len rows from the shard's slot 0) over its rows
 * [s, d->len) only: a sliding window's part on this rank. s == 0: the backend's attn. Else
 * the rows from the first hlx_phase_kv_align boundary at or after s in one call on the
 * shard itself, the rows before it copied into the window scratch (host memory: the cpu
 * backend) in another, and the two partials merged (the exact LSE merge) into d->o and
 * d->lse. d->group <= the layout's group. */
hlx_status_t hlx_phase_attn_from(hlx_engine_t *eng, const hlx_attn_desc_t *d, size_t s);
/* The same with the two partials of an unaligned start in o2 [2][d->group][dv] and lse2
 * [2][d->group] (hlx_phase_attn_from: win_o and win_lse, room for one request's group). */
hlx_status_t hlx_phase_attn_from_s(hlx_engine_t *eng, const hlx_attn_desc_t *d, size_t s,
                                   float *o2, float *lse2);
/* d (as above, from the shard's slot 0 of layer l, d->len the rank's positions so far) over
 * positions [s, d->len): hlx_phase_attn_from on a layer without a ring; on a ring, the
 * range's slots from s mod ring, in two pieces merged exactly when it wraps. */
hlx_status_t hlx_phase_attn_window(hlx_engine_t *eng, int l, const hlx_attn_desc_t *d, size_t s);
/* d's append (d->nheads local KV heads from shard d->shard0) with layer l's fp8 KV-cache
 * scales (k_mul, v_mul set here): one call when the heads share their scales, else one
 * per head. */
/* kf: a factor on the key (dual chunk attention's, hlx_model_dca_factor), 1 else */
hlx_status_t hlx_phase_kv_append(hlx_engine_t *eng, int l, const hlx_kv_append_desc_t *d,
                                 double kf);
/* Layer l's fp8 value scale of local KV head kh on the n floats of attention output at o
 * (one call's heads, or several rows' of that head), before the exchange: the merge is
 * linear in the partials and every partial of a head has the same scale. Nothing when it
 * is 1. */
hlx_status_t hlx_phase_attn_vscale(hlx_engine_t *eng, int l, int kh, float *o, size_t n);
/* This rank's first slot in layer l's window of a query at pos: its slots of the positions
 * before the window's first (0 on a whole-context layer, or while the window reaches 0). */
size_t hlx_phase_window_from(const hlx_engine_t *eng, int l, int64_t pos);
/* The exchange's descriptor for requests (or prefill rows) [b0, b1), peers' blocks at displ
 * (the send or the receive side's). */
void hlx_phase_xchg_desc(const hlx_engine_t *eng, int b0, int b1, const size_t *displ,
                         hlx_xchg_desc_t *d);
hlx_status_t hlx_phase_pack(hlx_engine_t *eng, int b0, int b1);
/* Posts (non-blocking) the exchange of requests [b0, b1); *req_p to wait on. */
hlx_status_t hlx_phase_a2a_post(hlx_engine_t *eng, int b0, int b1, hlx_comm_req_t **req_p);
hlx_status_t hlx_phase_a2a(hlx_engine_t *eng, int b0, int b1); /* blocking */
hlx_status_t hlx_phase_merge(hlx_engine_t *eng, int l);
/* attn_sinks: the merged heads o ([rows][dv], rows = requests x q_slice, lse [rows]) of layer
 * l with each head's sink in its softmax; nothing for a model without sinks. Decode and
 * prefill alike, after the exact merge (the sink joins once, not once per KVP shard). */
hlx_status_t hlx_phase_sinks(hlx_engine_t *eng, int l, float *o, const float *lse, int rows);
hlx_status_t hlx_phase_oproj(hlx_engine_t *eng, int l);
hlx_status_t hlx_phase_allreduce(hlx_engine_t *eng, int l, hlx_phase_id_t ph);
/* n floats of the backend buffer y summed over all N ranks in place (NCCL on the queue, or
 * the host transport after a queue sync): the prefill's rows. */
hlx_status_t hlx_phase_allreduce_buf(hlx_engine_t *eng, float *y, size_t n);
/* What follows the all-reduce of rows rows of y, layer l's summed attention output (ffn 0)
 * or FFN output (ffn 1), before the residual add: W_o's bias (o_bias, attention), then
 * that output's RMSNorm (post_norms). Nothing for a model without them. Decode and prefill
 * alike. */
hlx_status_t hlx_phase_out_extras(hlx_engine_t *eng, int l, float *y, int rows, int ffn);
/* x += y (n floats), y first times the model's residual_mult where it has one (Granite) */
hlx_status_t hlx_phase_residual(hlx_engine_t *eng, float *x, float *y, size_t n);
hlx_status_t hlx_phase_ffn(hlx_engine_t *eng, int l);
hlx_status_t hlx_phase_head(hlx_engine_t *eng);

/* ---- schedules (schedule.c) */
/* One decode step: every layer's phases in the order of the schedule (lockstep when
 * eng->mb == batch, HOP-B micro-batches otherwise), then the head. */
hlx_status_t hlx_schedule_step(hlx_engine_t *eng);
/* Attention and exchange of layer l under the schedule (eng->mb). */
hlx_status_t hlx_schedule_exchange(hlx_engine_t *eng, int l);
/* helix bench hopb: the attention (and packing) of micro-batch k of layer 0 (micro-batches
 * of eng->mb) while micro-batch k-1's exchange, already packed, is in flight and
 * progressed from inside the attention as HOP-B does; then that exchange is completed.
 * *ms: the attention's time. k >= 1. */
hlx_status_t hlx_schedule_attn_busy(hlx_engine_t *eng, int k, double *ms);
/* After a lockstep first step in --hopb auto/on without --micro-batch: measures the
 * exchange of one request and of the batch, its posting cost, and c_busy (one pipelined
 * trial of layer 0 in two micro-batches; not on a device backend, KVP 1 or batch 1),
 * agrees on c, c_busy, m and that cost over all ranks (the slowest's), and picks the
 * micro-batch minimising the model plus the posting cost of every extra micro-batch. */
hlx_status_t hlx_schedule_decide(hlx_engine_t *eng);
/* Pipeline model: time of attention + exchange of B requests in micro-batches of M with
 * per-request attention c (the first micro-batch, and lockstep), cb (c_busy: the later
 * ones, beside the exchange before them) and micro-batch exchange m(M) = m1 + (M - 1)
 * (mB - m1) / (B - 1): c M + (nb - 1) max(cb M, m(M)) + m(M), the last one smaller. */
double       hlx_schedule_model(int B, int M, double c, double cb, double m1, double mB);
/* Writes the timeline of the last step as text with a rendering (rank 0). */
hlx_status_t hlx_schedule_write_timeline(const hlx_engine_t *eng, const char *path, char *err,
                                         size_t errlen);

/* Slots of layer l's ring (eng->ring on a windowed layer), 0 when its shards hold every
 * position. */
static inline size_t hlx_kv_ring(const hlx_engine_t *eng, int l)
{
    return eng->ring > 0 && hlx_model_layer_window(&eng->m, l) > 0 ? (size_t)eng->ring : 0;
}

/* Slots of each shard of layer l: its ring, else cap. */
static inline size_t hlx_kv_layer_cap(const hlx_engine_t *eng, int l)
{
    return hlx_kv_ring(eng, l) > 0 ? hlx_kv_ring(eng, l) : (size_t)eng->cap;
}

/* Slot in layer l's shard of the rank's t-th position (t mod the ring on a windowed layer). */
static inline size_t hlx_kv_ring_slot(const hlx_engine_t *eng, int l, size_t t)
{
    return t % hlx_kv_layer_cap(eng, l);
}

/* Element index of (the rank's t-th position, element e) of KV shard `shard` (= b *
 * kv_local + kh) in layer l's K (is_key) or V cache, in the kernels' shard layout. */
static inline size_t hlx_kv_shard_index(const hlx_engine_t *eng, int l, int is_key,
                                        size_t shard, size_t t, int e)
{
    return hlx_kv_slot(eng->be.k.kv_layout, is_key, is_key ? eng->kv_dk : eng->kv_dv,
                       hlx_kv_layer_cap(eng, l), shard, hlx_kv_ring_slot(eng, l, t), e);
}

/* The attention's kv_clean for shard `shard` of layer l: fp8 KV in which no NaN byte was
 * ever stored (hlx_layer_w_t.kv_nan; sticky: a slot overwritten later keeps it set). */
static inline int hlx_kv_clean(const hlx_engine_t *eng, int l, size_t shard)
{
    return eng->layers[l].kv_nan != NULL && !eng->layers[l].kv_nan[shard];
}

#endif
