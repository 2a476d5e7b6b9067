/* What the checker (check.c) sees of the engine: accessor functions only, no struct
 * layout; and what the engine sees of the checker and the scripted faults. */
#ifndef HLX_ENGINE_VIEW_H
#define HLX_ENGINE_VIEW_H

#include <helix/runtime.h>

#include "hlx_comm.h"
#include "hlx_layout.h"

#include <stddef.h>
#include <stdint.h>

typedef struct hlx_check hlx_check_t; /* --check state (reference results, hashes) */
typedef struct hlx_fault hlx_fault_t; /* a scripted fault (HELIX_FAULT) */

/* ---- engine accessors (engine.c) */
const hlx_model_t      *hlx_engine_model(const hlx_engine_t *eng);
const hlx_layout_t     *hlx_engine_layout(const hlx_engine_t *eng);
const hlx_run_config_t *hlx_engine_config(const hlx_engine_t *eng);
hlx_dtype_t             hlx_engine_kv_dtype(const hlx_engine_t *eng);
hlx_dtype_t             hlx_engine_w_dtype(const hlx_engine_t *eng); /* as held */
hlx_comm_t             *hlx_engine_world(const hlx_engine_t *eng);
int                     hlx_engine_size(const hlx_engine_t *eng);
const char             *hlx_engine_host(const hlx_engine_t *eng);
int                     hlx_engine_step_index(const hlx_engine_t *eng);
/* A tied checkpoint's head tensor that is not read (hlx_hf_config_t.lm_head_unused); "". */
const char             *hlx_engine_ckpt_head_unused(const hlx_engine_t *eng);
/* Replicated hidden state [B][H] and the tokens chosen at the last step [B]. */
const float            *hlx_engine_hidden(const hlx_engine_t *eng);
const int              *hlx_engine_tokens(const hlx_engine_t *eng);
/* Full logits of request b, entry v, from the all-gathered buffer. */
float                   hlx_engine_logit(const hlx_engine_t *eng, int b, int v);
/* KV positions this rank holds per (request, KV head) now. */
int64_t                 hlx_engine_kv_len(const hlx_engine_t *eng);
/* Elements per cached key (is_key) or value row: GQA head_dim, v_head_dim; MLA
 * kv_lora + rope and 0 (the value is the head of the key row). */
int                     hlx_engine_kv_dim(const hlx_engine_t *eng, int is_key);
/* Slots of layer l's shards when they are a ring (a windowed layer): the rank's t-th
 * position is still held while t >= its slot count - the ring; 0: every position is. */
int64_t                 hlx_engine_kv_ring(const hlx_engine_t *eng, int l);
/* Element e of the rank's t-th position in KV shard `shard` (= b * kv_local + kh) of layer
 * l, as f32 (from its ring slot on a windowed layer), times the layer's fp8 KV-cache scale:
 * the value the slot stands for. */
float                   hlx_engine_kv_load(const hlx_engine_t *eng, int l, int is_key,
                                           size_t shard, size_t t, int e);
/* Sets the message of a step failure (where it was first understood). */
void                    hlx_engine_set_errmsg(hlx_engine_t *eng, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- scripted faults (check.c): HELIX_FAULT=KIND:rank=R[:step=S] proves that each
 * check fails when it should. The engine holds NULL without a fault and asks the fault
 * once per step which bits are active. */
enum {
    HLX_FAULT_DROP_PARTIALS = 1 << 0, /* rank R reports its attention partials as empty */
    HLX_FAULT_SKIP_APPEND   = 1 << 1, /* rank R does not store the tokens it owns */
    HLX_FAULT_NAN           = 1 << 2, /* rank R sends a NaN in its attention partials */
    HLX_FAULT_KILL          = 1 << 3, /* rank R SIGKILLs itself */
    HLX_FAULT_HANG          = 1 << 4, /* rank R stops inside the step (its threads live on) */
};
/* *f_p = NULL when spec is NULL or empty. */
hlx_status_t hlx_fault_create(const char *spec, hlx_fault_t **f_p, char *err, size_t errlen);
int          hlx_fault_rank(const hlx_fault_t *f);
unsigned     hlx_fault_bits(const hlx_fault_t *f, int rank, int step);
void         hlx_fault_destroy(hlx_fault_t *f);

/* ---- checks (check.c) */
/* Non-finite value check on n floats; on failure sets the engine's message naming what,
 * the layer, the step and this rank, and returns HLX_ERR_NUMERIC. */
hlx_status_t hlx_check_finite(hlx_engine_t *eng, const float *v, size_t n, const char *what,
                              int layer);
/* --check, before the timed steps: rank 0 builds the fp64 reference and runs every step;
 * then every rank waits in a barrier whose deadline covers that work. */
hlx_status_t hlx_check_prepare(hlx_engine_t *eng, hlx_check_t **chk_p, char *err,
                               size_t errlen);
/* Whether this rank holds the reference (rank 0). */
int          hlx_check_has_reference(const hlx_check_t *chk);
/* Compares step s (hidden state, logits, tokens) with the reference on rank 0 and the
 * replicated hidden state across ranks; s = -1 is the state after the prompt's last token
 * (prefill). Collective. */
hlx_status_t hlx_check_step(hlx_engine_t *eng, hlx_check_t *chk, int s, hlx_run_report_t *rep);
/* After the steps: every KV row appended during the run, on every rank, against the
 * reference's cache at the positions that rank owns. Collective. */
hlx_status_t hlx_check_kv_rows(hlx_engine_t *eng, hlx_check_t *chk, hlx_run_report_t *rep);
void         hlx_check_free(hlx_check_t *chk);

#endif
