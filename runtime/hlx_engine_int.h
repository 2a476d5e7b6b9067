/* Internal view of the engine shared by engine.c (set-up and the step) and check.c (the
 * reference check, the finite-value check and scripted faults). */
#ifndef HLX_ENGINE_INT_H
#define HLX_ENGINE_INT_H

#include <helix/runtime.h>
#include <helix/topology.h>

#include "hlx_comm.h"
#include "hlx_kernels.h"
#include "hlx_layout.h"
#include "hlx_param.h"
#include "hlx_reference.h"

#include <stddef.h>
#include <stdint.h>

typedef struct hlx_layer_w {
    float *attn_norm, *ffn_norm; /* [H] */
    void  *wqkv;                 /* [H][qkv_cols]: Q heads of the TPA shard, then K, V */
    void  *wo;                   /* [q_slice * dv][H]: rows of this rank's head slice */
    void  *wgu;                  /* [H][2 * ffn_count]: gate columns, then up columns */
    void  *wdown;                /* [ffn_count][H] */
    void  *kc, *vc;              /* KV shards [B][kv_local] of cap slots, kernels' layout */
} hlx_layer_w_t;

struct hlx_engine {
    hlx_run_config_t cfg;
    struct { char bind[HLX_PARAM_STRLEN]; } set; /* runtime settings (HELIX_BIND) */
    hlx_topo_t      *topo;
    hlx_placement_t *place;
    int              bound;
    hlx_model_t      m;
    hlx_layout_t     lay;
    hlx_boot_t      *boot;
    hlx_boot_info_t  info;
    hlx_comm_t      *world, *kvp_comm;
    hlx_kernels_t    k;
    hlx_dtype_t      kv_dtype, w_dtype;
    size_t           kv_esize, w_esize;
    int              qkv_cols;
    int64_t          cap, kv_len, pos;
    hlx_layer_w_t   *layers;
    float           *embed, *final_norm; /* replicated */
    void            *lmhead;             /* [H][vocab_count] */
    /* step buffers, allocated once */
    float  *x, *hn, *qkv, *opart, *lsepart, *sendbuf, *recvbuf, *oparts, *lseparts;
    float  *omerged, *lsem, *y, *gu, *act, *lmout, *logits_local, *logits_all;
    size_t *a2a_counts, *a2a_displs;
    int    *tokens;
    uint64_t phase_ns[HLX_PHASE_COUNT];
    uint64_t kv_bytes;
    int       *all_tokens;
    int        step;
    char       errmsg[512];  /* why a step failed, set where it was first understood */
    /* --check: the reference's results for every step, computed on rank 0 up front */
    hlx_ref_t *ref;
    double    *ref_hid, *ref_lg;  /* [steps][B][H], [steps][B][V] */
    int       *ref_tok;           /* [steps][B] */
    uint64_t  *check_hashes;      /* [N]: replicated-state hashes of every rank */
    struct {
        int kind;  /* HLX_FAULT_* */
        int rank;
        int step;
    } fault;
};


/* Scripted faults (HELIX_FAULT=kind:rank=R[:step=S]) that prove the checks catch what
 * they claim to catch, and let fault tests kill a rank at a chosen step. */
enum {
    HLX_FAULT_NONE = 0,
    HLX_FAULT_DROP_PARTIALS, /* rank R reports its attention partials as empty */
    HLX_FAULT_SKIP_APPEND,   /* rank R does not store the tokens it owns */
    HLX_FAULT_NAN,           /* rank R sends a NaN in its attention partials */
    HLX_FAULT_KILL           /* rank R SIGKILLs itself */
};

hlx_status_t hlx_engine_fail(char *err, size_t errlen, hlx_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

hlx_status_t hlx_fault_parse(hlx_engine_t *eng, const char *spec, char *err, size_t errlen);
/* Whether fault kind fires on this rank at the current step. */
int          hlx_fault_active(const hlx_engine_t *eng, int kind);

/* Non-finite value check on n floats; on failure sets eng->errmsg naming what, the layer,
 * the step and this rank, and returns HLX_ERR_NUMERIC. Empty attention shards (-inf LSEs)
 * are not passed here. */
hlx_status_t hlx_check_finite(hlx_engine_t *eng, const float *v, size_t n, const char *what,
                              int layer);

/* --check, before the timed steps: rank 0 builds the fp64 reference and runs every step
 * into eng->ref_*; then every rank waits in a barrier whose deadline covers that work. */
hlx_status_t hlx_check_prepare(hlx_engine_t *eng, char *err, size_t errlen);
/* Compares step s (hidden state, logits, tokens) with the reference on rank 0 and the
 * replicated hidden state across ranks. Collective. */
hlx_status_t hlx_check_step(hlx_engine_t *eng, int s, hlx_run_report_t *rep);
/* After the steps: every KV row appended during the run, on every rank, against the
 * reference's cache at the positions that rank owns. Collective. */
hlx_status_t hlx_check_kv_rows(hlx_engine_t *eng, hlx_run_report_t *rep);
void         hlx_check_free(hlx_engine_t *eng);

/* Full logits of request b, entry v, from the all-gathered buffer. */
float hlx_engine_logit(const hlx_engine_t *eng, int b, int v);

/* Element index of (token t, element e) of KV shard `shard` (= b * kv_local + kh) in a
 * layer's K (is_key) or V cache, in the kernels' shard layout. */
static inline size_t hlx_kv_shard_index(const hlx_engine_t *eng, int is_key, size_t shard,
                                        size_t t, int e)
{
    int blk = is_key ? eng->k.kv_layout.k_block : eng->k.kv_layout.v_block;
    int d   = is_key ? eng->m.head_dim : eng->m.v_head_dim;
    return shard * hlx_kv_elems(blk, d, (size_t)eng->cap) + hlx_kv_index(blk, d, t, e);
}

#endif
