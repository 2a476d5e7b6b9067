/* Lifecycle of the Helix engine: validation, bootstrap, placement, sizes (overflow-checked),
 * the configuration agreement, communicators, weight and KV shards and step buffers, as a
 * list of steps; destroy; and the accessors the checker reads the engine through. */
#define _GNU_SOURCE
#include "hlx_engine_int.h"

#include "hlx_backend_cuda.h"
#include "hlx_mla.h"
#include "hlx_reference.h"
#include "hlx_flags.h"
#include "hlx_log.h"
#include "hlx_prefill.h"
#include "hlx_sample.h"
#include "hlx_synth.h"
#include "hlx_time.h"

#include <helix/jobplace.h>

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

/* Settings of the runtime (HELIX_<NAME>), stored in hlx_engine_t.set
 * (hlx_runtime_settings_t, hlx_engine_int.h). */
static const hlx_param_t hlx_runtime_params[] = {
    { "BIND", HLX_PT_STRING, "auto", 0, 0, offsetof(hlx_runtime_settings_t, bind),
      "bind each rank to the cores of its placement: auto (when no two hosts of the job are "
      "one machine, as namespaces or containers are, and no host has more ranks than "
      "cores; a binding the rank started with, from srun, mpirun, numactl or taskset, is "
      "kept), on (always, replacing any), off", "auto|on|off" },
    { "THREADS", HLX_PT_INT, "1", 1, HLX_POOL_MAX, offsetof(hlx_runtime_settings_t, threads),
      "cores per rank: its KV shard and GEMMs split over a persistent pool of this many "
      "threads (helix decode --threads overrides it)", NULL },
    { "STEP_WATCHDOG", HLX_PT_DOUBLE, "120", 0, 86400,
      offsetof(hlx_runtime_settings_t, step_watchdog),
      "seconds a decode step may take before the rank exits (status 1) naming the step, "
      "a last resort behind the collectives' deadlines and the heartbeats; 0 = off", NULL },
    { "FAULT", HLX_PT_STRING, "", 0, 0, offsetof(hlx_runtime_settings_t, fault),
      "scripted fault for tests: KIND:rank=R[:step=S], KIND drop-partials, skip-append, "
      "nan, kill or hang", NULL },
    { "DEVICE", HLX_PT_STRING, "cpu", 0, 0, offsetof(hlx_runtime_settings_t, device),
      "execution backend: cpu, cuda (GPU local rank mod device count, or the placed one) "
      "or auto (cuda when a device is visible and the build has CUDA); "
      "helix decode --device overrides it", "cpu|cuda|auto" },
    { "NCCL", HLX_PT_STRING, "auto", 0, 0, offsetof(hlx_runtime_settings_t, nccl),
      "collectives of a cuda run through NCCL on the device stream, per communicator (KVP "
      "group, world): auto (when every pair of its members is linked by NVLink), on (also "
      "a group of one or other links), off", "auto|on|off" },
    { "STAGE", HLX_PT_STRING, "auto", 0, 0, offsetof(hlx_runtime_settings_t, stage),
      "collectives on UCX copied through the backend's pinned host memory: auto (a cuda "
      "run whose UCX cannot read CUDA memory), on (also host buffers: runs the staging "
      "path on the cpu backend, for tests)", "auto|on" },
    { "EP", HLX_PT_INT, "1", 1, 4096, offsetof(hlx_runtime_settings_t, ep),
      "MoE expert-parallel groups: N = EP x TPF ranks, expert J on group J / (E / EP), its "
      "columns over the TPF ranks of the group (helix decode --ep overrides it)", NULL },
    { "PREFILL", HLX_PT_STRING, "chunked", 0, 0, offsetof(hlx_runtime_settings_t, prefill),
      "prompt prefill: chunked (--prefill-chunk tokens per pass through every layer) or "
      "steps (one decode step per prompt token, the exactness yardstick; same on every "
      "rank)", "chunked|steps" },
    { "CUDA_ATTN", HLX_PT_STRING, "auto", 0, 0, offsetof(hlx_runtime_settings_t, cuda_attn),
      "attention kernel of --device cuda: auto, warp, tokens or mma (tensor cores: bf16 KV, "
      "heads of 64 or 128; a shape it does not take fails the step); docs/gpu.md",
      "auto|warp|tokens|mma" },
    { "PHASE_CLOCK", HLX_PT_STRING, "host", 0, 0, offsetof(hlx_runtime_settings_t, phase_clock),
      "what times the phases of --json's phase_ms: host (the host's clock around each "
      "phase; on a GPU that is the launches, the queue's work landing in the phase that "
      "waits for it) or device (with --device cuda: timing events on the queue, each "
      "phase's device time; on the cpu backend the same as host)", "host|device" },
    { "MEM_LIMIT", HLX_PT_DOUBLE, "0", 0, 1073741824.0,
      offsetof(hlx_runtime_settings_t, mem_limit),
      "GiB of memory a rank may take, as the start-up memory check counts it: 0 takes the "
      "node's MemAvailable or, where less, the room its memory cgroup's limit leaves (a "
      "Slurm job's --mem, a container's limit), shared over the node's ranks", NULL },
};

static const hlx_param_table_t hlx_runtime_table = {
    "runtime", hlx_runtime_params, sizeof(hlx_runtime_params) / sizeof(hlx_runtime_params[0]),
    sizeof(hlx_runtime_settings_t), NULL,
};

const struct hlx_param_table *hlx_runtime_param_table(void)
{
    return &hlx_runtime_table;
}

void hlx_run_config_default(hlx_run_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->kvp       = 1;
    cfg->tpa       = 1;
    cfg->batch     = 1;
    cfg->context   = 4096;
    cfg->steps     = 8;
    cfg->kv_block  = 16;
    cfg->seed      = 1;
    cfg->check_tol = 1e-3;
    cfg->route_margin = 1e-5; /* --check: MoE near-ties (hlx_reference_moe.h) */
    cfg->timeout_s = 0.0; /* transport default (HELIX_COMM_TIMEOUT) */
    cfg->hopb      = HLX_HOPB_AUTO;
    cfg->prefill_chunk = HLX_PREFILL_CHUNK;
    cfg->top_p     = 1.0;
    strcpy(cfg->kernels, "auto");
}

/* ---- weights and KV */

static void *hlx_zalloc(size_t n, size_t size)
{
    return calloc(n ? n : 1, size);
}

/* Zeroed backend memory for what the backend's operations read or write (weights, step
 * buffers); NULL on failure. n 0 gives a valid pointer (every backend allocates a byte). */
void *hlx_be_zalloc(hlx_engine_t *eng, size_t n, size_t size)
{
    void *p = NULL;

    if (size && n > SIZE_MAX / size)
        return NULL;
    return eng->be.ops->mem_alloc(&eng->be, n * size, 0, &p) == HLX_OK ? p : NULL;
}

void hlx_be_free(hlx_engine_t *eng, void *p)
{
    if (p != NULL)
        eng->be.ops->mem_free(&eng->be, p, 0);
}

int hlx_engine_embed_tied(const hlx_engine_t *eng)
{
    return eng->m.tie_embeddings && eng->be.ops->weights_col != NULL;
}

/* Token tok's row of the embedding into host memory (H floats): this rank's row widened
 * and scaled, or -0.0 for another rank's (see hlx_engine_embed). */
static hlx_status_t hlx_engine_embed_host(hlx_engine_t *eng, int64_t tok, float *row)
{
    const size_t H = (size_t)eng->m.hidden;
    const float s = (float)hlx_model_embed_scale_held(&eng->m, eng->w_dtype);
    size_t i;

    if (tok < 0 || tok >= eng->m.vocab)
        return HLX_ERR_INVALID;
    tok -= eng->lay.vocab_first; /* the row in this rank's shard */
    if (tok < 0 || tok >= eng->lay.vocab_count) {
        /* another rank's row: -0.0, which the all-reduce's sum adds to any x as x itself
         * (+0.0 would turn an owner's -0.0 into +0.0) */
        for (i = 0; i < H; i++)
            row[i] = -0.0f;
    } else if (eng->embed == NULL) { /* tied: the LM head's column, the same values */
        hlx_status_t st = eng->be.ops->weights_col(&eng->be, eng->lmhead, eng->wp_dtype,
                                                   (int)H, eng->lay.vocab_count, (int)tok, row);
        if (st != HLX_OK)
            return st;
        for (i = 0; i < H; i++)
            row[i] *= s;
    } else {
        for (i = 0; i < H; i++)
            row[i] = hlx_dtype_load(eng->embed, eng->w_dtype, (size_t)tok * H + i) * s;
    }
    return HLX_OK;
}

hlx_status_t hlx_engine_embed(hlx_engine_t *eng, const int *tok, int n, float *dst)
{
    const size_t H = (size_t)eng->m.hidden;
    const int B = eng->cfg.batch, sum = eng->lay.n > 1;
    float *rows = eng->embed_rows;
    hlx_status_t st = HLX_OK;
    int r0, i, nr;

    for (r0 = 0; r0 < n && st == HLX_OK; r0 += nr) {
        nr = n - r0 < B ? n - r0 : B;
        /* a device may still be reading the rows of the last copy out of pinned memory
         * (hlx_backend.h, copy_to): wait for it (a no-op on the host) */
        st = hlx_engine_sync(eng);
        for (i = 0; i < nr && st == HLX_OK; i++)
            st = hlx_engine_embed_host(eng, tok[r0 + i], rows + (size_t)i * H);
        /* the host transport sums host memory: before the copy, one copy for the rows */
        if (st == HLX_OK && sum && eng->nccl_world == NULL)
            st = hlx_comm_allreduce_sum_f32(eng->world, rows, (size_t)nr * H);
        if (st == HLX_OK)
            st = eng->be.ops->copy_to(&eng->be, eng->q, dst + (size_t)r0 * H, rows,
                                      sizeof(float) * (size_t)nr * H);
    }
    if (st == HLX_OK && sum && eng->nccl_world != NULL) /* NCCL sums device memory */
        st = hlx_engine_nccl_allreduce(eng, dst, (size_t)n * H);
    return st;
}

hlx_wpart_t hlx_wpart_hf(const hlx_model_t *m, hlx_hf_weight_t w, int l, int64_t r0, int64_t c0,
                         int64_t nc, int64_t at)
{
    hlx_wpart_t p = { .r0 = r0, .c0 = c0, .nc = nc, .at = at };

    hlx_hf_weight_name(w, l, p.name, sizeof(p.name));
    hlx_hf_weight_shape(m, w, &p.rows, &p.cols);
    return p;
}

/* about this much scratch per group of columns: a few hundred columns of a model's K rows,
 * so that a read is a long run of a row (synthetic) or whole rows of the checkpoint's
 * [out][in] tensor (transposed reads) */
#define HLX_WLOAD_SCRATCH ((size_t)2 << 20)

/* Columns per group: a multiple of 16 (whole strips), at least 16. */
static int hlx_wload_group(int K, int N, size_t es)
{
    size_t g = HLX_WLOAD_SCRATCH / ((size_t)(K > 0 ? K : 1) * es * 16) * 16;

    g = g < 16 ? 16 : g;
    return g >= (size_t)N ? N : (int)g;
}

#define HLX_WLOAD_ERR sizeof(((hlx_engine_t *)0)->errmsg) /* a thread's error message */

/* A matrix in strips being read: its column groups shared out over T threads, each with
 * its own scratch, status and message. */
typedef struct hlx_wload_job {
    hlx_engine_t      *eng;
    void              *w;
    hlx_dtype_t        t;
    int                K, N, G, nparts;
    const hlx_wpart_t *parts;
    char              *scratch; /* T x sbytes */
    size_t             sbytes;
    hlx_status_t      *st;      /* [T] */
    char              *err;     /* [T][HLX_WLOAD_ERR] */
    /* kept packed (hlx_wq_t, bits 4 or 8; 0: not): groups of `group` rows from kofs, Gk of
     * them; a thread's scratch then holds K rows of codes and Gk of zeros and of scales,
     * f32, G columns each. In act order (gtab set): row k's group is gtab[k] (the groups
     * the K rows use, numbered in their order), read at its first row grow[g]. */
    int                bits, kofs, Gk;
    int64_t            group;
    const uint8_t     *lut;       /* 4 bits: the codes the nibbles stand for (NULL: theirs) */
    int32_t           *gtab;
    int64_t           *grow;
    int                ao_differ; /* act order whose fused parts' groups differ: plain */
} hlx_wload_job_t;

/* Columns [n0, n1) of a matrix kept packed: each part's codes, then its zero points and
 * scales read at the first row of each group, packed into the strips. */
static hlx_status_t hlx_wload_packed(hlx_wload_job_t *j, int n0, int n1, float *scratch,
                                     char *err)
{
    hlx_engine_t *eng = j->eng;
    const int64_t ld = j->G;
    float *code = scratch, *zero = code + (size_t)j->K * (size_t)ld;
    float *scale = zero + (size_t)j->Gk * (size_t)ld;
    hlx_status_t st = HLX_OK;
    int i, g;

    for (i = 0; i < j->nparts && st == HLX_OK; i++) {
        const hlx_wpart_t *p = &j->parts[i];
        const int64_t lo = p->at > n0 ? p->at : n0;
        const int64_t hi = p->at + p->nc < n1 ? p->at + p->nc : n1;
        if (lo >= hi)
            continue;
        st = hlx_wsrc_read(&eng->ws, p->name, p->rows, p->cols, p->r0, j->K,
                           p->c0 + (lo - p->at), hi - lo, code + (lo - n0), HLX_CKPT_QCODE, ld,
                           err, HLX_WLOAD_ERR);
        for (g = 0; g < j->Gk && st == HLX_OK; g++) { /* group g from row g group - kofs */
            const int64_t k = j->gtab ? j->grow[g] : g == 0 ? 0 : (int64_t)g * j->group - j->kofs;
            st = hlx_wsrc_read(&eng->ws, p->name, p->rows, p->cols, p->r0 + k, 1,
                               p->c0 + (lo - p->at), hi - lo,
                               zero + (size_t)g * (size_t)ld + (size_t)(lo - n0), HLX_CKPT_QZERO,
                               ld, err, HLX_WLOAD_ERR);
            if (st == HLX_OK)
                st = hlx_wsrc_read(&eng->ws, p->name, p->rows, p->cols, p->r0 + k, 1,
                                   p->c0 + (lo - p->at), hi - lo,
                                   scale + (size_t)g * (size_t)ld + (size_t)(lo - n0),
                                   HLX_CKPT_QSCALE, ld, err, HLX_WLOAD_ERR);
        }
    }
    if (st == HLX_OK &&
        (st = hlx_kernels_wq_pack_cols(j->w, n0, n1, code, scale, zero, (size_t)ld)) != HLX_OK)
        snprintf(err, HLX_WLOAD_ERR, "%s: its codes, zero points or scales out of range for "
                 "%d-bit packing", j->parts[0].name, j->bits);
    return st;
}

/* Thread t's groups of columns: t, t + T, ... (hlx_pool_run's signature). */
static void hlx_wload_groups(void *arg, int t, int T)
{
    hlx_wload_job_t *j = arg;
    hlx_engine_t *eng = j->eng;
    const size_t es = eng->w_esize, ld = (size_t)j->G;
    char *scratch = j->scratch + (size_t)t * j->sbytes, *err = j->err + (size_t)t * HLX_WLOAD_ERR;
    hlx_status_t st = HLX_OK;
    int n0, n1, i;

    for (n0 = t * j->G; n0 < j->N && st == HLX_OK; n0 += T * j->G) {
        n1 = j->N - n0 < j->G ? j->N : n0 + j->G;
        if (j->bits > 0) {
            st = hlx_wload_packed(j, n0, n1, (float *)scratch, err);
            continue;
        }
        for (i = 0; i < j->nparts && st == HLX_OK; i++) { /* each part's columns in the group */
            const hlx_wpart_t *p = &j->parts[i];
            int64_t lo = p->at > n0 ? p->at : n0;
            int64_t hi = p->at + p->nc < n1 ? p->at + p->nc : n1;
            if (lo < hi)
                st = hlx_wsrc_read(&eng->ws, p->name, p->rows, p->cols, p->r0, j->K,
                                   p->c0 + (lo - p->at), hi - lo, scratch + (size_t)(lo - n0) * es,
                                   eng->w_dtype, (int64_t)ld, err, HLX_WLOAD_ERR);
        }
        if (st == HLX_OK)
            st = eng->be.ops->weights_store(&eng->be, j->w, j->t, j->K, j->N, n0, n1, scratch, ld);
    }
    j->st[t] = st;
}

/* Whether a checkpoint's integer-packed weights could be kept packed: on the host backend
 * (whose gemm takes hlx_wq_t), where they are read as bf16 (the dequantized form they
 * reproduce). They are (eng->wq) where HELIX_W_PACKED is on, or auto and the host's kernel
 * variant multiplies them in registers (hlx_kernels_w_packed_for). */
int hlx_engine_wq_can(const hlx_engine_t *eng)
{
    return eng->ws.ck != NULL && hlx_ckpt_packed_count(eng->ws.ck) > 0 &&
           !strcmp(eng->be.ops->name, "host") && eng->w_dtype == HLX_DTYPE_BF16;
}

/* Act order: the group of each of the K rows of every part (HLX_CKPT_QGROUP, rows [r0,
 * r0 + K)), which must agree (as GPTQ's fused projections' do: one input, one order), into
 * j->gtab, numbered in the groups' order over the ones the rows use, and each one's first
 * row into j->grow, j->Gk of them; j->gtab NULL and j->ao_differ set where the parts
 * disagree. */
static hlx_status_t hlx_engine_wq_groups(hlx_engine_t *eng, const hlx_wpart_t *parts,
                                         int nparts, int K, hlx_wload_job_t *j)
{
    float *f = malloc(sizeof(float) * 2 * (size_t)K);
    int32_t *map = NULL;
    int64_t gmax = 0;
    hlx_status_t st = f != NULL ? HLX_OK : HLX_ERR_NOMEM;
    int i, k, same = 1;

    for (i = 0; i < nparts && st == HLX_OK && same; i++) {
        float *fi = i == 0 ? f : f + K;
        st = hlx_wsrc_read(&eng->ws, parts[i].name, parts[i].rows, parts[i].cols, parts[i].r0,
                           K, parts[i].c0, 1, fi, HLX_CKPT_QGROUP, 1, eng->errmsg,
                           sizeof(eng->errmsg));
        for (k = 0; k < K && st == HLX_OK && same; k++) {
            same = fi[k] == f[k];
            gmax = (int64_t)f[k] > gmax ? (int64_t)f[k] : gmax;
        }
    }
    if (st == HLX_OK && same) {
        j->gtab = malloc(sizeof(int32_t) * (size_t)K);
        j->grow = malloc(sizeof(int64_t) * (size_t)K);
        map = malloc(sizeof(int32_t) * (size_t)(gmax + 1));
        st = j->gtab && j->grow && map ? HLX_OK : HLX_ERR_NOMEM;
    }
    if (st == HLX_OK && same) {
        for (k = 0; k <= gmax; k++)
            map[k] = -1;
        for (k = 0; k < K; k++)
            map[(int64_t)f[k]] = 0;
        for (k = 0, j->Gk = 0; k <= gmax; k++)
            if (map[k] == 0)
                map[k] = j->Gk++;
        for (k = K - 1; k >= 0; k--) { /* the first row of each: the last one written */
            j->gtab[k] = map[(int64_t)f[k]];
            j->grow[j->gtab[k]] = k;
        }
    }
    j->ao_differ = st == HLX_OK && !same; /* said by the load, not by a count */
    if (st != HLX_OK || !same) {
        free(j->gtab);
        free(j->grow);
        j->gtab = NULL, j->grow = NULL, j->Gk = 0;
    }
    free(map);
    free(f);
    return st;
}

/* Whether a K-row matrix of these parts is kept packed (eng->wq): every part an integer-
 * packed weight the packed GEMMs take (hlx_wsrc_packed), of one width and group size, its
 * rows starting at one offset into the groups, or in act order with the same groups row by
 * row; then j->bits (4 or 8), j->group and j->kofs, or j->gtab, j->grow and j->Gk (act
 * order), else j->bits 0 (plain strips in the same format). */
static hlx_status_t hlx_engine_wq_form(hlx_engine_t *eng, const hlx_wpart_t *parts, int nparts,
                                       int K, hlx_wload_job_t *j)
{
    int i, bits = 0, b, form, ao = 0;
    int64_t group = 0, g;
    const uint8_t *lut = NULL, *l;
    hlx_status_t st;

    j->bits = 0;
    j->group = 1;
    j->kofs = 0;
    j->lut = NULL;
    for (i = 0; i < nparts; i++) {
        if (!(form = hlx_wsrc_packed(&eng->ws, parts[i].name, &b, &g, &l)) ||
            g > INT32_MAX - K || (i > 0 && (b != bits || g != group || l != lut)))
            return HLX_OK;
        ao |= form == 2 || parts[i].r0 % g != parts[0].r0 % g;
        bits = b, group = g, lut = l;
    }
    if (nparts == 0 || K <= 0)
        return HLX_OK;
    if (ao) {
        if ((st = hlx_engine_wq_groups(eng, parts, nparts, K, j)) != HLX_OK || j->gtab == NULL)
            return st;
    } else {
        j->group = group;
        j->kofs = (int)(parts[0].r0 % group);
    }
    j->bits = bits;
    j->lut = lut;
    return HLX_OK;
}

/* Kept packed: the form a K x N matrix of these parts is held in (hlx_engine_wq_form's,
 * or plain strips where packed would take no fewer bytes: tiny groups, or act order's every
 * group on a row-parallel rank's few rows) in job, and its bytes in *bytes_p (0 beyond
 * size_t); the caller frees job's act-order tables. The load and the start-up memory
 * check both size a matrix here (hlx_engine_wform). */
static hlx_status_t hlx_engine_wq_size(hlx_engine_t *eng, const hlx_wpart_t *parts,
                                       int nparts, int K, int N, hlx_wload_job_t *job,
                                       size_t *bytes_p)
{
    const hlx_dtype_t dt = eng->w_dtype;
    size_t bytes;
    hlx_status_t st;

    if ((st = hlx_engine_wq_form(eng, parts, nparts, K, job)) != HLX_OK)
        return st;
    bytes = job->gtab ? hlx_kernels_wq_bytes_ao(job->bits, K, N, job->Gk)
                     : hlx_kernels_wq_bytes(job->bits, dt, K, N, (int)job->group, job->kofs);
    if (job->bits > 0 && bytes >= hlx_kernels_wq_bytes(0, dt, K, N, 1, 0)) {
        free(job->gtab);
        free(job->grow);
        job->gtab = NULL, job->grow = NULL;
        job->bits = 0, job->group = 1, job->kofs = 0, job->Gk = 0, job->lut = NULL;
        bytes = hlx_kernels_wq_bytes(0, dt, K, N, 1, 0);
    }
    *bytes_p = bytes;
    return HLX_OK;
}

/* The form a K x N matrix of these parts is held in (*t_p, the gemm's w_dtype) and its
 * bytes: kept packed (packed: hlx_engine_wq_size's form, an hlx_wq_t, in job) or unpacked
 * in the backend's layout of w_dtype (weights_layout: row-major, or strips with their
 * padding; from the shapes alone). The load allocates this, the start-up memory check
 * counts it (hlx_engine_wcount); read through scratch where *t_p is not w_dtype. */
static hlx_status_t hlx_engine_wform(hlx_engine_t *eng, int packed, const hlx_wpart_t *parts,
                                     int nparts, int K, int N, hlx_wload_job_t *job,
                                     hlx_dtype_t *t_p, size_t *bytes_p)
{
    hlx_status_t st;

    *t_p = eng->w_dtype;
    if (!packed)
        return eng->be.ops->weights_layout(&eng->be, t_p, K, N, bytes_p);
    /* every matrix an hlx_wq_t: packed where its parts allow it */
    if ((st = hlx_engine_wq_size(eng, parts, nparts, K, N, job, bytes_p)) != HLX_OK)
        return st;
    *t_p = (hlx_dtype_t)(HLX_W_Q | hlx_w_s16_of(eng->w_dtype));
    return *bytes_p > 0 ? HLX_OK : HLX_ERR_INVALID;
}

/* The scratch each of T threads reads job's K x N matrix (in strips) through, job->sbytes,
 * a group of job->G columns at a time: K rows of es-byte elements, or packed K rows of
 * codes and job->Gk (set here in order) of zero points and of scales, f32
 * (hlx_wload_group). */
static void hlx_wload_sbytes(hlx_wload_job_t *job, int K, int N, size_t es, int T)
{
    const size_t ses = job->bits > 0 ? 4 : es;
    int64_t srows, cap;

    /* in 64 bits: K and N reach 2^31 - 1, the groups' rows add to K */
    if (job->gtab == NULL)
        job->Gk = job->bits > 0 ? (int)(((int64_t)K - 1 + job->kofs) / job->group + 1) : 0;
    srows = (int64_t)K + 2 * (int64_t)job->Gk;
    job->G = hlx_wload_group(srows > INT_MAX ? INT_MAX : (int)srows, N, ses);
    cap = ((int64_t)N + 16 * (int64_t)T - 1) / (16 * (int64_t)T) * 16;
    if (T > 1 && job->G > cap)
        job->G = (int)cap;
    job->sbytes = (size_t)srows * (size_t)job->G * ses; /* G x srows x ses ~ the scratch */
}

/* hlx_engine_wload with its job, which the caller frees (the act-order tables). */
static hlx_status_t hlx_engine_wload_job(hlx_engine_t *eng, void **w_p, int K, int N,
                                         const hlx_wpart_t *parts, int nparts,
                                         hlx_wload_job_t *job)
{
    const size_t es = eng->w_esize;
    hlx_dtype_t t = eng->w_dtype, dt = eng->w_dtype;
    size_t bytes = 0;
    void *w = NULL;
    int64_t covered = 0;
    int i, j, T;
    hlx_status_t st;

    *w_p = NULL;
    for (i = 0; i < nparts; i++) { /* the parts tile the N columns: in range, disjoint */
        for (j = 0; j < i; j++)
            if (parts[j].at < parts[i].at + parts[i].nc && parts[i].at < parts[j].at + parts[j].nc)
                break;
        if (j < i || parts[i].at < 0 || parts[i].nc < 0 || parts[i].at + parts[i].nc > N)
            break;
        covered += parts[i].nc;
    }
    if (i < nparts || covered != N || K < 0) {
        snprintf(eng->errmsg, sizeof(eng->errmsg), "a %d x %d projection: its %d source "
                 "block(s) do not tile its columns", K, N, nparts);
        return HLX_ERR_INTERNAL;
    }
    eng->errmsg[0] = '\0';
    st = hlx_engine_wform(eng, eng->wq, parts, nparts, K, N, job, &t, &bytes);
    /* here, as it is loaded, not where the start-up check counts it; once: every layer's
     * fused matrices are alike */
    if (st == HLX_OK && job->ao_differ && !eng->wq_ao_warned && eng->info.rank == 0) {
        eng->wq_ao_warned = 1;
        hlx_warn("%s and the parts fused with it have different act-order groups "
                 "(g_idx): such matrices are held in bf16, not packed (as the start-up "
                 "memory check counted them)", parts[0].name);
    }
    if (st != HLX_OK) { /* the groups' read said why, or the sizes did not fit */
        if (eng->errmsg[0] == '\0' && st == HLX_ERR_INVALID)
            snprintf(eng->errmsg, sizeof(eng->errmsg), "a %d x %d projection of %zu-byte "
                     "elements exceeds this machine's address space", K, N, es);
        return st;
    }
    if (!eng->wp_set) /* the first: every later one must come out the same */
        eng->wp_dtype = t, eng->wp_set = 1;
    else if (t != eng->wp_dtype) {
        snprintf(eng->errmsg, sizeof(eng->errmsg),
                 "the %s backend lays out a %d x %d projection as w_dtype %d, the others as %d",
                 eng->be.ops->name, K, N, (int)t, (int)eng->wp_dtype);
        return HLX_ERR_INTERNAL;
    }
    if ((st = eng->be.ops->mem_alloc(&eng->be, bytes, 0, &w)) != HLX_OK)
        return st;
    *w_p = w;
    eng->w_bytes += bytes;
    if (eng->wq && (st = job->gtab ? hlx_kernels_wq_init_ao(w, job->bits, K, N, job->Gk, job->gtab)
                                   : hlx_kernels_wq_init(w, job->bits, dt, K, N, (int)job->group,
                                                         job->kofs)) != HLX_OK)
        return st;
    if (eng->wq && job->lut != NULL && /* bits 4: only they have a table */
        (st = hlx_kernels_wq_set_lut(w, job->lut)) != HLX_OK)
        return st;
    eng->wq_packed += job->bits > 0;
    if (K <= 0 || N <= 0)
        return HLX_OK;
    if (t == dt) { /* row-major: every part read in place */
        for (i = 0; i < nparts && st == HLX_OK; i++)
            st = hlx_wsrc_read(&eng->ws, parts[i].name, parts[i].rows, parts[i].cols,
                               parts[i].r0, K, parts[i].c0, parts[i].nc,
                               (char *)w + (size_t)parts[i].at * es, dt, N, eng->errmsg,
                               sizeof(eng->errmsg));
        return st;
    }
    /* the groups spread over the rank's pool, at least one each: a synthetic source is
     * pure, a checkpoint's reader counts its bytes atomically and keeps each thread's error
     * apart (hlx_ckpt_error) */
    T = hlx_pool_size(eng->be.pool);
    job->eng = eng, job->w = w, job->t = t, job->K = K, job->N = N, job->parts = parts;
    job->nparts = nparts;
    hlx_wload_sbytes(job, K, N, es, T);
    job->scratch = malloc(job->sbytes * (size_t)T);
    job->st = calloc((size_t)T, sizeof(*job->st));
    job->err = calloc((size_t)T, HLX_WLOAD_ERR);
    if (job->scratch == NULL || job->st == NULL || job->err == NULL)
        st = HLX_ERR_NOMEM;
    else if (T > 1)
        hlx_pool_run(eng->be.pool, hlx_wload_groups, job);
    else
        hlx_wload_groups(job, 0, 1);
    for (i = 0; i < T && st == HLX_OK && job->st != NULL; i++)
        if ((st = job->st[i]) != HLX_OK) /* the first thread's error, as one thread reports */
            snprintf(eng->errmsg, sizeof(eng->errmsg), "%s", job->err + (size_t)i * HLX_WLOAD_ERR);
    free(job->scratch);
    free(job->st);
    free(job->err);
    return st;
}

hlx_status_t hlx_engine_wload(hlx_engine_t *eng, void **w_p, int K, int N,
                              const hlx_wpart_t *parts, int nparts)
{
    hlx_wload_job_t job = { 0 };
    const hlx_status_t st = hlx_engine_wload_job(eng, w_p, K, N, parts, nparts, &job);

    free(job.gtab);
    free(job.grow);
    return st;
}

/* Token slot t's d values (row) into the stage a run of the layout at a time
 * (hlx_kv_run: c consecutive elements; the runs of one token equally far apart). The
 * stores' type is chosen once per run, not per element (a 3B model's 32K context took 12 s
 * here). Returns 1 when an fp8 byte stored is a NaN (0x7f, 0xff), else 0. */
static int hlx_stage_row(void *stage, hlx_dtype_t dt, int blk, int run, int d, size_t t,
                         const float *row)
{
    const int c = hlx_kv_run(blk, run, d);
    const size_t i0 = hlx_kv_index(blk, run, d, t, 0),
                 step = c < d ? hlx_kv_index(blk, run, d, t, c) - i0 : 0;
    int e0, k, nan = 0;

    for (e0 = 0; e0 < d; e0 += c) {
        const size_t at = i0 + (size_t)(e0 / c) * step;
        if (dt == HLX_DTYPE_BF16)
            for (k = 0; k < c; k++)
                ((uint16_t *)stage)[at + (size_t)k] = hlx_f32_to_bf16(row[e0 + k]);
        else if (dt == HLX_DTYPE_FP8)
            for (k = 0; k < c; k++) {
                const uint8_t x = hlx_f32_to_fp8(row[e0 + k]);
                ((uint8_t *)stage)[at + (size_t)k] = x;
                nan |= hlx_fp8_is_nan(x);
            }
        else /* f32: the engine stores no other KV type (hlx_engine_validate) */
            memcpy((float *)stage + at, row + e0, sizeof(float) * (size_t)c);
    }
    return nan;
}

/* Fills the synthetic prior context of one layer's K (is_key) or V cache through the
 * backend's copy_to, in chunks of whole blocks staged in host memory: position p lives on
 * KVP rank (p / block) % KVP. The KV memory itself is never touched from the host. */
static hlx_status_t hlx_fill_kv(hlx_engine_t *eng, void *cache, int l, int is_key, void *stage,
                                size_t chunk, float *row)
{
    const hlx_layout_t *L = &eng->lay;
    const hlx_model_t *m = &eng->m;
    int d = (int)(is_key ? eng->kv_dk : eng->kv_dv); /* MLA: no value rows (d = 0) */
    int blk = is_key ? eng->be.k.kv_layout.k_block : eng->be.k.kv_layout.v_block;
    int run = is_key ? eng->be.k.kv_layout.k_chunk : eng->be.k.kv_layout.v_chunk;
    size_t bb = blk > 1 ? (size_t)blk : 1, lcap = hlx_kv_layer_cap(eng, l);
    size_t ring = hlx_kv_ring(eng, l);
    /* a ring keeps the last ring of the context's jt slots: the positions before the block
     * of the first of them are not made at all (a position made and then overwritten in
     * the same ring slot by a later one is harmless: the copies go out in order) */
    size_t jt = (size_t)hlx_layout_kv_count(L, L->kvp_rank, eng->cfg.context);
    size_t skip = ring > 0 && jt > ring ? (jt - ring) / bb * bb : 0;
    uint64_t key = hlx_synth_key(eng->cfg.seed, l, is_key ? HLX_T_KCTX : HLX_T_VCTX);
    const float *scale = is_key ? eng->layers[l].k_scale : eng->layers[l].v_scale;
    hlx_status_t st = HLX_OK;
    int b, kh, e;

    for (b = 0; b < eng->cfg.batch && st == HLX_OK; b++)
        for (kh = 0; kh < L->kv_local && st == HLX_OK; kh++) {
            /* from the position of the first slot kept: the walk is about KVP rings long,
             * whatever the context (a 1G-token context took 49 s walking it all) */
            size_t shard = (size_t)b * L->kv_local + kh, j = skip, j0 = skip;
            /* fp8 KV-cache scales: stored as x / scale (times its fp32 inverse, as the
             * append) */
            const float mul = 1.0f / scale[kh];
            int64_t p;
            for (p = skip > 0 ? hlx_layout_kv_pos(L, L->kvp_rank, (int64_t)skip) : 0;
                 p <= eng->cfg.context && st == HLX_OK; p++) {
                int last = p == eng->cfg.context;
                if (!last && hlx_layout_kv_owner(L, p) == L->kvp_rank) {
                    hlx_synth_ctx_row(key, b, m->kv_heads, L->kv_first + kh, p, d, is_key, row);
                    for (e = 0; mul != 1.0f && e < d; e++)
                        row[e] *= mul;
                    if (hlx_stage_row(stage, eng->kv_dtype, blk, run, d, j - j0, row) &&
                        eng->layers[l].kv_nan != NULL)
                        eng->layers[l].kv_nan[shard] = 1;
                    j++;
                }
                /* a full chunk, the ring's end, or the rest (rounded up to whole blocks) at
                 * the end: each copy is one range of the shard */
                if (j > j0 && (j - j0 == chunk || j % lcap == 0 || last)) {
                    size_t at = hlx_kv_shard_index(eng, l, is_key, shard, j0, 0);
                    size_t bytes = hlx_kv_elems(blk, d, j - j0) * eng->kv_esize;
                    st = eng->be.ops->copy_to(&eng->be, eng->q,
                                              (char *)cache + at * eng->kv_esize, stage, bytes);
                    /* zeros again: a last, partial block copies its unused slots as 0 */
                    if (st == HLX_OK)
                        st = eng->be.ops->queue_sync(&eng->be, eng->q);
                    memset(stage, 0, bytes);
                    j0 = j;
                }
            }
            /* Slots still to be appended (prompt, steps) hold zeros, not whatever the
             * allocation held: a slot never written reads as a finite wrong value. The last
             * partial block went out above with its zeros. */
            j0 = (j + bb - 1) / bb * bb;
            while (d > 0 && j0 < lcap && st == HLX_OK) {
                size_t n = lcap - j0 < chunk ? lcap - j0 : chunk;
                size_t at = hlx_kv_shard_index(eng, l, is_key, shard, j0, 0);
                st = eng->be.ops->copy_to(&eng->be, eng->q, (char *)cache + at * eng->kv_esize,
                                          stage, hlx_kv_elems(blk, d, n) * eng->kv_esize);
                j0 += n;
            }
        }
    if (st == HLX_OK)
        st = eng->be.ops->queue_sync(&eng->be, eng->q);
    return st;
}


/* Rows [r0, r0 + nr) x cols [c0, c0 + nc) of runtime weight w of layer l from the weight
 * source into dst (leading dimension ld) as dt. */
static hlx_status_t hlx_engine_wread(hlx_engine_t *eng, hlx_hf_weight_t w, int l, int64_t r0,
                                     int64_t nr, int64_t c0, int64_t nc, void *dst,
                                     hlx_dtype_t dt, int64_t ld)
{
    char name[128];
    int64_t rows, cols;

    hlx_hf_weight_name(w, l, name, sizeof(name));
    hlx_hf_weight_shape(&eng->m, w, &rows, &cols);
    return hlx_wsrc_read(&eng->ws, name, rows, cols, r0, nr, c0, nc, dst, dt, ld, eng->errmsg,
                         sizeof(eng->errmsg));
}

/* Layer l's projections on this rank as hlx_engine_build reads them (MLA's others:
 * hlx_mla_create): Q | K | V of its heads (GQA), W_o's rows of its head slice, and (dense
 * FFN layers) gate | up of its FFN columns and down's rows of them. */
static void hlx_engine_layer_parts(const hlx_engine_t *eng, int l, hlx_wpart_t qkv[3],
                                   hlx_wpart_t *wo, hlx_wpart_t gu[2], hlx_wpart_t *down)
{
    const hlx_model_t *m = &eng->m;
    const hlx_layout_t *L = &eng->lay;
    const int64_t H = m->hidden, dk = m->head_dim, dv = m->v_head_dim, Fc = L->ffn_count;

    memset(qkv, 0, 3 * sizeof(*qkv));
    memset(gu, 0, 2 * sizeof(*gu));
    memset(down, 0, sizeof(*down));
    if (m->attn == HLX_ATTN_GQA) {
        qkv[0] = hlx_wpart_hf(m, HLX_HFW_WQ, l, 0, (int64_t)L->q_first * dk,
                              (int64_t)L->q_local * dk, 0);
        qkv[1] = hlx_wpart_hf(m, HLX_HFW_WK, l, 0, (int64_t)L->kv_first * dk,
                              (int64_t)L->kv_local * dk, (int64_t)L->q_local * dk);
        qkv[2] = hlx_wpart_hf(m, HLX_HFW_WV, l, 0, (int64_t)L->kv_first * dv,
                              (int64_t)L->kv_local * dv, (int64_t)(L->q_local + L->kv_local) * dk);
    }
    *wo = hlx_wpart_hf(m, HLX_HFW_WO, l,
                       (int64_t)L->q_slice_first * hlx_layout_piece_dim(L, (int)dv), 0, H, 0);
    if (!hlx_model_layer_moe(m, l) && m->ffn_plain) { /* StarCoder2: up's columns alone */
        gu[0] = hlx_wpart_hf(m, HLX_HFW_WUP, l, 0, L->ffn_first, Fc, 0);
        *down = hlx_wpart_hf(m, HLX_HFW_WDOWN, l, L->ffn_first, 0, H, 0);
    } else if (!hlx_model_layer_moe(m, l)) {
        gu[0] = hlx_wpart_hf(m, HLX_HFW_WGATE, l, 0, L->ffn_first, Fc, 0);
        gu[1] = hlx_wpart_hf(m, HLX_HFW_WUP, l, 0, L->ffn_first, Fc, Fc);
        *down = hlx_wpart_hf(m, HLX_HFW_WDOWN, l, L->ffn_first, 0, H, 0);
    }
}

/* The LM head's columns of this rank's vocabulary slice. */
static hlx_wpart_t hlx_engine_head_part(const hlx_engine_t *eng)
{
    return hlx_wpart_hf(&eng->m, HLX_HFW_LMHEAD, 0, 0, eng->lay.vocab_first,
                        eng->lay.vocab_count, 0);
}

/* Layer l's projections (hlx_engine_layer_parts) to sk (hlx_engine_wput): loaded into W,
 * or counted (W NULL). */
static hlx_status_t hlx_engine_layer_walk(hlx_engine_t *eng, const hlx_wsink_t *sk, int l,
                                          hlx_layer_w_t *W)
{
    const hlx_model_t *m = &eng->m;
    const hlx_layout_t *L = &eng->lay;
    const int64_t H = m->hidden, Fc = L->ffn_count;
    hlx_wpart_t qkv[3], wo, gu[2], down;
    hlx_status_t st = HLX_OK;

    hlx_engine_layer_parts(eng, l, qkv, &wo, gu, &down);
    if (m->attn == HLX_ATTN_GQA)
        st = hlx_engine_wput(eng, sk, W ? &W->wqkv : NULL, H, eng->qkv_cols, qkv, 3);
    if (st == HLX_OK)
        st = hlx_engine_wput(eng, sk, W ? &W->wo : NULL, hlx_layout_wo_rows(L, m->v_head_dim),
                             H, &wo, 1);
    if (st == HLX_OK && !hlx_model_layer_moe(m, l) &&
        (st = hlx_engine_wput(eng, sk, W ? &W->wgu : NULL, H, m->ffn_plain ? Fc : 2 * Fc, gu,
                              m->ffn_plain ? 1 : 2)) == HLX_OK)
        st = hlx_engine_wput(eng, sk, W ? &W->wdown : NULL, Fc, H, &down, 1);
    return st;
}

/* The LM head's columns (hlx_engine_head_part) to sk: into eng->lmhead or counted. */
static hlx_status_t hlx_engine_head_walk(hlx_engine_t *eng, const hlx_wsink_t *sk)
{
    const hlx_wpart_t head = hlx_engine_head_part(eng);

    return hlx_engine_wput(eng, sk, &eng->lmhead, eng->m.hidden, eng->lay.vocab_count, &head, 1);
}

static hlx_status_t hlx_engine_build(hlx_engine_t *eng)
{
    const hlx_model_t *m = &eng->m;
    const hlx_layout_t *L = &eng->lay;
    int64_t H = m->hidden, dk = m->head_dim, dv = m->v_head_dim, B = eng->cfg.batch;
    int64_t kd = eng->kv_dk, vd = eng->kv_dv; /* cache rows (MLA: [c | k_rope], no V) */
    int l;
    hlx_status_t st;

    /* a tied checkpoint's head beside its embedding (hlx_hf_settle): said once, where the
     * weights are read */
    if (hlx_engine_rank(eng) == 0 && eng->ws.cfg.lm_head_unused[0])
        hlx_warn("%s: %s is not read: tie_word_embeddings is true, so the head is the "
                 "embedding (as transformers ties them and vLLM skips the tensor); set "
                 "tie_word_embeddings to false to use it", eng->cfg.ckpt,
                 eng->ws.cfg.lm_head_unused);

#define HLX_WREAD(_w, ...) \
    do { \
        if ((st = hlx_engine_wread(eng, _w, l, __VA_ARGS__)) != HLX_OK) \
            return st; \
    } while (0)
#define HLX_WREAD_G(_w, ...) \
    do { \
        if ((st = hlx_engine_wread(eng, _w, 0, __VA_ARGS__)) != HLX_OK) \
            return st; \
    } while (0)
    /* A checkpoint was opened and checked, and its held dtype set, before the bootstrap
     * (hlx_engine_validate). */
    if (eng->ws.ck == NULL) {
        st = hlx_wsrc_synth(&eng->ws, m, eng->cfg.seed, eng->errmsg, sizeof(eng->errmsg));
        if (st != HLX_OK)
            return st;
        hlx_wsrc_hold(&eng->ws, eng->w_dtype); /* f32 reads rounded as matrices are held */
    }
    eng->layers = calloc((size_t)m->layers, sizeof(*eng->layers));
    if (eng->layers == NULL)
        return HLX_ERR_NOMEM;
    for (l = 0; l < m->layers; l++) {
        hlx_layer_w_t *W = &eng->layers[l];
        size_t shards = (size_t)B * (size_t)L->kv_local;
        double ks, vs;
        int kh;
        const hlx_kv_layout_t kl = eng->be.k.kv_layout;
        const size_t ke = hlx_kv_shard_elems(kl, 1, (int)kd, hlx_kv_layer_cap(eng, l));
        const size_t ve = hlx_kv_shard_elems(kl, 0, (int)vd, hlx_kv_layer_cap(eng, l));

        W->k_scale = malloc(sizeof(float) * (size_t)L->kv_local);
        W->v_scale = malloc(sizeof(float) * (size_t)L->kv_local);
        if (!W->k_scale || !W->v_scale)
            return HLX_ERR_NOMEM;
        for (kh = 0; kh < L->kv_local; kh++) {
            if ((st = hlx_wsrc_kv_scales(&eng->ws, eng->kv_dtype, l, L->kv_first + kh, &ks, &vs,
                                         eng->errmsg, sizeof(eng->errmsg))) != HLX_OK)
                return st;
            W->k_scale[kh] = (float)ks;
            W->v_scale[kh] = (float)vs;
            W->kv_scales_differ |= kh > 0 && (W->k_scale[kh] != W->k_scale[0] ||
                                              W->v_scale[kh] != W->v_scale[0]);
        }
        /* OLMo 2 (post_norms_only): no input norms, NULL */
        if (!m->post_norms_only &&
            ((W->attn_norm = hlx_be_zalloc(eng, (size_t)H, sizeof(float))) == NULL ||
             (W->ffn_norm = hlx_be_zalloc(eng, (size_t)H, sizeof(float))) == NULL))
            return HLX_ERR_NOMEM;
        /* The KV shard is the big, streamed allocation: 2 MiB aligned, huge pages. The
         * projections: hlx_engine_wload below. */
        if ((m->qkv_bias &&
             (W->bqkv = hlx_be_zalloc(eng, (size_t)eng->qkv_cols, sizeof(float))) == NULL) ||
            (hlx_model_layer_qk_norm(m, l) &&
             (W->qknorm = hlx_be_zalloc(eng, (size_t)(2 * dk), sizeof(float))) == NULL) ||
            (m->qk_norm_proj &&
             (W->qknorm = hlx_be_zalloc(eng, (size_t)(L->q_local + L->kv_local) * (size_t)dk,
                                        sizeof(float))) == NULL) ||
            (m->post_norms &&
             (W->post_norm = hlx_be_zalloc(eng, (size_t)(2 * H), sizeof(float))) == NULL) ||
            (m->attn_sinks && L->q_slice > 0 &&
             (W->sinks = hlx_be_zalloc(eng, (size_t)L->q_slice, sizeof(float))) == NULL) ||
            (m->o_bias && (W->bo = hlx_be_zalloc(eng, (size_t)H, sizeof(float))) == NULL) ||
            (m->norm_layer &&
             ((W->attn_norm_b = hlx_be_zalloc(eng, (size_t)H, sizeof(float))) == NULL ||
              (W->ffn_norm_b = hlx_be_zalloc(eng, (size_t)H, sizeof(float))) == NULL)) ||
            (m->ffn_bias && !hlx_model_layer_moe(m, l) &&
             ((W->bup = hlx_be_zalloc(eng, (size_t)(L->ffn_count > 0 ? L->ffn_count : 1),
                                      sizeof(float))) == NULL ||
              (W->bdown = hlx_be_zalloc(eng, (size_t)H, sizeof(float))) == NULL)))
            return HLX_ERR_NOMEM;
        if (eng->be.ops->mem_alloc(&eng->be, shards * ke * eng->kv_esize, 1, &W->kc) != HLX_OK ||
            (ve > 0 && eng->be.ops->mem_alloc(&eng->be, shards * ve * eng->kv_esize, 1,
                                              &W->vc) != HLX_OK) ||
            (eng->kv_dtype == HLX_DTYPE_FP8 && (W->kv_nan = calloc(shards, 1)) == NULL))
            return HLX_ERR_NOMEM;
        /* Weights are filled in place: backend memory other than the KV cache is host
         * visible (host memory, or managed memory on a device). */
        if (W->attn_norm != NULL) {
            HLX_WREAD(HLX_HFW_ATTN_NORM, 0, 1, 0, H, W->attn_norm, HLX_DTYPE_F32, H);
            HLX_WREAD(HLX_HFW_FFN_NORM, 0, 1, 0, H, W->ffn_norm, HLX_DTYPE_F32, H);
        }
        if (W->post_norm != NULL) {
            HLX_WREAD(HLX_HFW_POST_ATTN_NORM, 0, 1, 0, H, W->post_norm, HLX_DTYPE_F32, H);
            HLX_WREAD(HLX_HFW_POST_FFN_NORM, 0, 1, 0, H, W->post_norm + H, HLX_DTYPE_F32, H);
        }
        if (W->bqkv != NULL) { /* the same columns of the biases */
            HLX_WREAD(HLX_HFW_BQ, 0, 1, (int64_t)L->q_first * dk, (int64_t)L->q_local * dk,
                      W->bqkv, HLX_DTYPE_F32, eng->qkv_cols);
            HLX_WREAD(HLX_HFW_BK, 0, 1, (int64_t)L->kv_first * dk, (int64_t)L->kv_local * dk,
                      W->bqkv + (size_t)L->q_local * dk, HLX_DTYPE_F32, eng->qkv_cols);
            HLX_WREAD(HLX_HFW_BV, 0, 1, (int64_t)L->kv_first * dv, (int64_t)L->kv_local * dv,
                      W->bqkv + (size_t)(L->q_local + L->kv_local) * dk, HLX_DTYPE_F32,
                      eng->qkv_cols);
        }
        if (W->qknorm != NULL && m->qk_norm_proj) { /* OLMo 2: the columns of its heads */
            HLX_WREAD(HLX_HFW_QNORM, 0, 1, (int64_t)L->q_first * dk, (int64_t)L->q_local * dk,
                      W->qknorm, HLX_DTYPE_F32, (int64_t)L->q_local * dk);
            HLX_WREAD(HLX_HFW_KNORM, 0, 1, (int64_t)L->kv_first * dk, (int64_t)L->kv_local * dk,
                      W->qknorm + (size_t)L->q_local * dk, HLX_DTYPE_F32,
                      (int64_t)L->kv_local * dk);
        } else if (W->qknorm != NULL && m->qk_norm_unit) { /* Llama 4: no weights, ones */
            int64_t i;
            for (i = 0; i < 2 * dk; i++)
                W->qknorm[i] = 1.0f;
        } else if (W->qknorm != NULL) {
            HLX_WREAD(HLX_HFW_QNORM, 0, 1, 0, dk, W->qknorm, HLX_DTYPE_F32, dk);
            HLX_WREAD(HLX_HFW_KNORM, 0, 1, 0, dk, W->qknorm + dk, HLX_DTYPE_F32, dk);
        }
        if (W->sinks != NULL) { /* the heads (pieces) this rank merges after the all-to-all */
            int h0 = L->q_slice_first / L->q_split, i;
            int nh = (L->q_slice_first + L->q_slice - 1) / L->q_split - h0 + 1;
            HLX_WREAD(HLX_HFW_SINKS, 0, 1, h0, nh, W->sinks, HLX_DTYPE_F32, nh);
            /* each piece its head's sink, in place from the end (a head's index <= its
             * piece's) */
            for (i = L->q_slice - 1; i >= 0 && L->q_split > 1; i--)
                W->sinks[i] = W->sinks[(L->q_slice_first + i) / L->q_split - h0];
        }
        if (W->bo != NULL)
            HLX_WREAD(HLX_HFW_BO, 0, 1, 0, H, W->bo, HLX_DTYPE_F32, H);
        if (W->attn_norm_b != NULL) { /* StarCoder2's LayerNorm biases */
            HLX_WREAD(HLX_HFW_ATTN_NORM_B, 0, 1, 0, H, W->attn_norm_b, HLX_DTYPE_F32, H);
            HLX_WREAD(HLX_HFW_FFN_NORM_B, 0, 1, 0, H, W->ffn_norm_b, HLX_DTYPE_F32, H);
        }
        if (W->bup != NULL) { /* its MLP's: up's of this rank's columns, down's whole */
            if (L->ffn_count > 0)
                HLX_WREAD(HLX_HFW_BUP, 0, 1, L->ffn_first, L->ffn_count, W->bup, HLX_DTYPE_F32,
                          L->ffn_count);
            HLX_WREAD(HLX_HFW_BDOWN, 0, 1, 0, H, W->bdown, HLX_DTYPE_F32, H);
        }
        /* The projections in the backend's gemm layout, read from the weight source: the
         * Q, K and V columns of this rank's heads side by side (MLA's projections:
         * hlx_mla_create), W_o's rows of its head slice, its FFN columns (gate | up) and
         * rows (down) (MoE layers: hlx_moe_build). */
        if ((st = hlx_engine_layer_walk(eng, NULL, l, W)) != HLX_OK)
            return st;
        /* Synthetic prior context, staged through the backend's copy_to. MLA: one latent
         * "head" (K = 1) of rows [c | k_rope], key-scaled so that scores spread, no value
         * rows. */
        {
            /* chunks of whole blocks of K and of V, about 16K slots */
            size_t kb = kl.k_block > 1 ? (size_t)kl.k_block : 1, vb = kl.v_block > 1 ? (size_t)kl.v_block : 1;
            size_t unit = kb * vb, chunk = unit * (16384 / unit > 0 ? 16384 / unit : 1);
            void *stage = calloc(chunk * (size_t)(kd > vd ? kd : vd), eng->kv_esize);
            float *row = malloc(sizeof(float) * (size_t)(kd > vd ? kd : vd) + 1);
            st = stage == NULL || row == NULL ? HLX_ERR_NOMEM : HLX_OK;
            if (st == HLX_OK)
                st = hlx_fill_kv(eng, W->kc, l, 1, stage, chunk, row);
            if (st == HLX_OK)
                st = hlx_fill_kv(eng, W->vc, l, 0, stage, chunk, row);
            /* the staging area is reused by the next layer: the copies must have left it */
            if (st == HLX_OK)
                st = eng->be.ops->queue_sync(&eng->be, eng->q);
            free(stage);
            free(row);
            if (st != HLX_OK)
                return st;
        }
    }
    if (m->attn == HLX_ATTN_MLA && (st = hlx_mla_create(eng)) != HLX_OK)
        return st;
    eng->kv_len     = hlx_layout_kv_count(L, L->kvp_rank, eng->cfg.context);
    /* a tied model on a backend whose weights the host reads: the rows from the LM head */
    eng->embed      = hlx_engine_embed_tied(eng) ? NULL
                      : hlx_kernels_alloc_huge(eng->w_esize * (size_t)L->vocab_count * (size_t)H);
    if (eng->be.ops->pinned_alloc(&eng->be, sizeof(float) * (size_t)B * (size_t)H,
                                  (void **)&eng->embed_rows) != HLX_OK)
        eng->embed_rows = NULL;
    eng->final_norm = hlx_be_zalloc(eng, (size_t)H, sizeof(float));
    if (m->norm_layer && (eng->final_norm_b = hlx_be_zalloc(eng, (size_t)H, sizeof(float))) == NULL)
        return HLX_ERR_NOMEM;
    /* RoPE's frequencies with the model's scaling (helix/model.h), once, in backend
     * memory (written from the host like the weights) */
    eng->rope_freq  = hlx_be_zalloc(eng, (size_t)(m->rope_dim / 2), sizeof(double));
    /* and in host memory with room for the cos and sin of one position: each decode step
     * computes those once for every head, row and layer (hlx_schedule_step) */
    eng->rope_freq_h = malloc(sizeof(double) * (size_t)(m->rope_dim / 2 + 1));
    eng->rope_cs     = malloc(sizeof(float) * (size_t)(m->rope_dim + 2));
    if ((!eng->embed && !hlx_engine_embed_tied(eng)) || !eng->embed_rows || !eng->final_norm ||
        !eng->rope_freq || !eng->rope_freq_h || !eng->rope_cs)
        return HLX_ERR_NOMEM;
    {
        double ms;
        hlx_model_rope_freqs(m, m->rope_dim, eng->rope_freq, &ms);
        hlx_model_rope_freqs(m, m->rope_dim, eng->rope_freq_h, &ms);
        eng->rope.inv_freq = eng->rope_freq;
        eng->rope.mscale = (float)ms;
        eng->rope.cs = NULL;
        /* q . k spans the head (GQA) or nope + rope (MLA, before absorption) */
        eng->attn_scale = (float)hlx_model_softmax_scale(
            m, m->attn == HLX_ATTN_MLA ? m->qk_nope_dim + m->qk_rope_dim : m->head_dim);
    }
    if (m->rope_local_theta > 0.0) { /* windowed layers: their own plain table */
        if ((eng->rope_local_freq = hlx_be_zalloc(eng, (size_t)(m->rope_dim / 2),
                                                  sizeof(double))) == NULL)
            return HLX_ERR_NOMEM;
        hlx_rope_plain_freqs(m->rope_local_theta, m->rope_dim, eng->rope_local_freq);
        eng->rope_local = (hlx_rope_tab_t){ .inv_freq = eng->rope_local_freq, .mscale = 1.0f };
    }
    if (m->rope_kind == HLX_ROPE_DYNAMIC) { /* a table per request (hlx_phase_rope_tab) */
        const size_t nb = (size_t)eng->cfg.batch, half = (size_t)(m->rope_dim / 2);
        size_t b;
        eng->rope_rows = calloc(nb, sizeof(*eng->rope_rows));
        eng->rope_rows_freq = hlx_be_zalloc(eng, nb * half, sizeof(double));
        eng->rope_rows_freq_h = calloc(nb * half, sizeof(double));
        eng->rope_rows_cs = calloc(nb * (half * 2 + 2), sizeof(float));
        eng->rope_rows_seq = malloc(nb * sizeof(int64_t));
        if (!eng->rope_rows || !eng->rope_rows_freq || !eng->rope_rows_freq_h ||
            !eng->rope_rows_cs || !eng->rope_rows_seq)
            return HLX_ERR_NOMEM;
        for (b = 0; b < nb; b++) {
            eng->rope_rows[b].inv_freq = eng->rope_rows_freq + b * half;
            eng->rope_rows[b].mscale = 1.0f;
            eng->rope_rows[b].cs = eng->rope_rows_cs + b * (half * 2 + 2);
            eng->rope_rows[b].cs_pos = -1;
            eng->rope_rows_seq[b] = -1;
        }
    }
    /* this rank's rows of the embedding (the LM head's vocabulary slice) in w_dtype;
     * Gemma's sqrt(H) is applied to each row read (the same f32 product as scaling the
     * table once) */
    if (eng->embed != NULL)
        HLX_WREAD_G(HLX_HFW_EMBED, L->vocab_first, L->vocab_count, 0, H, eng->embed,
                    eng->w_dtype, H);
    HLX_WREAD_G(HLX_HFW_FINAL_NORM, 0, 1, 0, H, eng->final_norm, HLX_DTYPE_F32, H);
    if (eng->final_norm_b != NULL)
        HLX_WREAD_G(HLX_HFW_FINAL_NORM_B, 0, 1, 0, H, eng->final_norm_b, HLX_DTYPE_F32, H);
    if ((st = hlx_engine_head_walk(eng, NULL)) != HLX_OK)
        return st;
    return hlx_moe_build(eng);
}

static hlx_status_t hlx_engine_buffers(hlx_engine_t *eng)
{
    const hlx_layout_t *L = &eng->lay;
    size_t B = (size_t)eng->cfg.batch, H = (size_t)eng->m.hidden, dv = (size_t)eng->xdv;
    size_t pw = (size_t)eng->xpw; /* the exchange's pieces */
    size_t sblk = 0, rblk = 0; /* floats of all peers' blocks sent and received */
    int j;

#define HLX_ALLOC(_p, _n) \
    if (((_p) = hlx_zalloc((_n), sizeof(*(_p)))) == NULL) \
        return HLX_ERR_NOMEM
    /* what the backend's operations touch: backend memory */
#define HLX_BALLOC(_p, _n) \
    if (((_p) = hlx_be_zalloc(eng, (_n), sizeof(*(_p)))) == NULL) \
        return HLX_ERR_NOMEM
    HLX_BALLOC(eng->x, B * H);
    HLX_BALLOC(eng->hn, B * H);
    HLX_BALLOC(eng->qkv, B * (size_t)eng->qkv_cols);
    HLX_BALLOC(eng->opart, B * (size_t)L->q_local * dv);
    HLX_BALLOC(eng->lsepart, B * (size_t)L->q_local);
    if (eng->m.sliding_window > 0 || eng->m.dca_chunk > 0) {
        /* GQA only: the model refuses a window or dual chunk attention with MLA */
        size_t a = hlx_phase_kv_align(eng);
        if ((eng->win_k = hlx_be_zalloc(eng, a * (size_t)eng->kv_dk, eng->kv_esize)) == NULL ||
            (eng->win_v = hlx_be_zalloc(eng, a * (size_t)eng->kv_dv, eng->kv_esize)) == NULL)
            return HLX_ERR_NOMEM;
        HLX_BALLOC(eng->win_o, 4 * (size_t)L->group * dv);
        HLX_BALLOC(eng->win_lse, 4 * (size_t)L->group);
    }
    if (eng->m.qk_norm_proj && L->tpa > 1)
        HLX_BALLOC(eng->qk_ss, 2 * B);
    if (eng->m.dca_chunk > 0) { /* the succ and inter queries, the three parts' partials */
        HLX_BALLOC(eng->dca_q, 2 * B * (size_t)L->q_local * (size_t)eng->m.head_dim);
        HLX_BALLOC(eng->dca_o, 3 * (size_t)L->group * dv);
        HLX_BALLOC(eng->dca_lse, 3 * (size_t)L->group);
    }
    HLX_ALLOC(eng->xh_first, (size_t)L->kvp);
    HLX_ALLOC(eng->xh_count, (size_t)L->kvp);
    HLX_ALLOC(eng->xs_displ, (size_t)L->kvp);
    HLX_ALLOC(eng->xr_displ, (size_t)L->kvp);
    /* Wire layout: peer j's block is [B][its pieces][pw + 1] (outputs, then each piece's
     * head's LSE; hlx_backend.h). */
    for (j = 0; j < L->kvp; j++) {
        int first;
        hlx_layout_q_slice(L, j, &first, &eng->xh_count[j]);
        eng->xh_first[j] = first - L->q_first * L->q_split;
        eng->xs_displ[j] = sblk;
        eng->xr_displ[j] = rblk;
        sblk += B * (size_t)eng->xh_count[j] * (pw + 1);
        rblk += B * (size_t)L->q_slice * (pw + 1);
    }
    HLX_BALLOC(eng->sendbuf, sblk);
    HLX_BALLOC(eng->recvbuf, rblk);
    HLX_BALLOC(eng->oparts, B * (size_t)L->q_slice * pw * (size_t)L->kvp);
    HLX_BALLOC(eng->lseparts, B * (size_t)L->q_slice * (size_t)L->kvp);
    HLX_BALLOC(eng->omerged, B * (size_t)L->q_slice * pw);
    HLX_BALLOC(eng->lsem, B * (size_t)L->q_slice);
    HLX_BALLOC(eng->y, B * H);
    /* gate and up side by side; a plain MLP (ffn_plain) writes act directly: none */
    HLX_BALLOC(eng->gu, eng->m.ffn_plain ? 1 : B * 2 * (size_t)L->ffn_count);
    HLX_BALLOC(eng->act, B * (size_t)L->ffn_count);
    HLX_BALLOC(eng->lmout, B * (size_t)L->vocab_count);
    HLX_BALLOC(eng->logits_local, B * (size_t)L->vocab_pad);
    HLX_BALLOC(eng->logits_all, B * (size_t)L->vocab_pad * (size_t)L->n);
    HLX_ALLOC(eng->a2a_sc, (size_t)L->kvp);
    HLX_ALLOC(eng->a2a_sd, (size_t)L->kvp);
    HLX_ALLOC(eng->a2a_rc, (size_t)L->kvp);
    HLX_ALLOC(eng->a2a_rd, (size_t)L->kvp);
    HLX_ALLOC(eng->reqs, B);
    HLX_ALLOC(eng->tokens, B);
    HLX_ALLOC(eng->all_tokens, B * (size_t)(eng->cfg.steps > 0 ? eng->cfg.steps : 1));
    HLX_ALLOC(eng->prefill_tokens, B);
    if (eng->cfg.temperature > 0)
        HLX_ALLOC(eng->sample_buf, (size_t)eng->m.vocab +
                                   hlx_sample_work_bytes(eng->m.vocab) / sizeof(float) + 1);
    if (eng->cfg.timeline[0]) {
        eng->tl_cap = eng->m.layers * 2 * (int)B;
        HLX_ALLOC(eng->tl, (size_t)eng->tl_cap);
    }
#undef HLX_ALLOC
#undef HLX_BALLOC
    return HLX_OK;
}

/* Link class between this rank and its next KVP peer (all peers of a group share one
 * class on a single host). */
const char *hlx_engine_a2a_link(const hlx_engine_t *eng)
{
    int peer = eng->lay.tpa_rank * eng->cfg.kvp + (eng->lay.kvp_rank + 1) % eng->cfg.kvp;

    return eng->cfg.kvp > 1 ? hlx_link_name(hlx_place_link(eng->place, eng->info.rank, peer))
                            : "self";
}

/* Places the ranks from the whole job: every rank's host summary (its topology and the node
 * PMIx names) is all-gathered and each rank computes the same placement, the launcher's
 * hosts kept (topology/jobplace.c), checked by comparing hashes. Logs where rank, size,
 * local rank and node came from, the table (rank 0), the warning for a layout that crosses
 * more hosts or racks than it must, and this rank's link class to every peer; binds the rank
 * when HELIX_BIND allows it and points UCX at its NIC when UCX_NET_DEVICES is unset. */
static hlx_status_t hlx_engine_place(hlx_engine_t *eng, char *err, size_t errlen)
{
    hlx_jobplace_settings_t js;
    hlx_host_summary_t me, *all = NULL;
    hlx_job_place_t job;
    hlx_cluster_t file;
    hlx_boot_node_t nd;
    hlx_topo_info_t ti;
    hlx_link_t *links = NULL;
    uint64_t *hashes = NULL;
    int n = eng->info.size, rank = eng->info.rank, want, r, have_file = 0;
    char dev[128], buf[4096];
    size_t len;
    hlx_status_t st;

    memset(&job, 0, sizeof(job));
    if (hlx_jobplace_settings(&js) != HLX_OK)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID,
                               "HELIX_NET_DEVICE=%s: expected auto or off", js.net_device);
    st = hlx_topo_load(NULL, &eng->topo, err, errlen);
    if (st != HLX_OK)
        return st;
    hlx_boot_node(eng->boot, &nd);
    hlx_info(HLX_SUB_TOPO, "rank %d from %s; size %d from %s; local rank %d from %s; node %s "
             "from %s", rank, nd.rank_src, n, nd.size_src, eng->info.local_rank, nd.local_src,
             nd.name, nd.node_src);
    hlx_host_summary(eng->topo, nd.name, eng->info.local_rank, &me);
    me.threads = eng->threads;
    /* A host-backend run uses cores, not GPUs: its hosts count as CPU-only, so a GPU
     * machine runs more ranks than it has GPUs (as a machine without GPUs does). So does a
     * device run with HELIX_GPU_SHARE=1: each rank then takes GPU local rank mod count
     * (hlx_engine_device). */
    if (strcmp(eng->be.ops->name, "cuda") || js.gpu_share)
        me.ngpus = me.ndomains = 0;
    all = calloc((size_t)n, sizeof(*all));
    hashes = calloc((size_t)n, sizeof(*hashes));
    links = calloc((size_t)n, sizeof(*links));
    if (all == NULL || hashes == NULL || links == NULL) {
        st = HLX_ERR_NOMEM;
        goto out;
    }
    st = hlx_boot_allgather(eng->boot, "hlx.place.host", &me, sizeof(me), all);
    if (st != HLX_OK) {
        hlx_engine_fail(err, errlen, st, "exchanging host summaries failed: %s", hlx_status_str(st));
        goto out;
    }
    if (js.cluster[0]) {
        char cerr[512];
        st = hlx_cluster_load(js.cluster, &file, cerr, sizeof(cerr));
        if (st != HLX_OK) {
            /* bad content is bad input (exit 2); a read that failed or stalled is not */
            st = hlx_engine_fail(err, errlen,
                                 st == HLX_ERR_NOMEM || st == HLX_ERR_IO ||
                                         st == HLX_ERR_TIMEOUT ? st : HLX_ERR_INVALID,
                                 "HELIX_CLUSTER=%s: %s", js.cluster, cerr);
            goto out;
        }
        have_file = 1;
    }
    st = hlx_place_job(all, n, have_file ? &file : NULL, eng->cfg.kvp, eng->cfg.tpa, 1, eng->topo,
                       4.0 * eng->cfg.batch * eng->lay.q_slice * (eng->xpw + 1), &job,
                       err, errlen);
    if (st != HLX_OK)
        goto out;
    st = hlx_boot_allgather(eng->boot, "hlx.place.hash", &job.hash, sizeof(job.hash), hashes);
    if (st != HLX_OK) {
        hlx_engine_fail(err, errlen, st, "exchanging placement hashes failed: %s", hlx_status_str(st));
        goto out;
    }
    for (r = 0; r < n; r++)
        if (hashes[r] != hashes[0]) {
            st = hlx_engine_fail(err, errlen, HLX_ERR_MISMATCH, "the job-wide placement differs: "
                                 "rank %d computed %016llx, rank 0 %016llx", r,
                                 (unsigned long long)hashes[r], (unsigned long long)hashes[0]);
            goto out;
        }
    eng->place = job.place;
    job.place = NULL;
    hlx_topo_get_info(eng->topo, &ti);
    /* auto keeps a binding the process started with (srun --cpu-bind, mpirun --bind-to,
     * numactl, taskset): the launcher or the user chose those CPUs; on replaces it */
    if (!strcmp(eng->set.bind, "auto") &&
        (eng->kept_ncpu = hlx_topo_inherited_binding(eng->topo, eng->kept, sizeof(eng->kept))) > 0)
        hlx_info(HLX_SUB_TOPO, "rank %d: bound to CPUs %s before it started: kept "
                 "(HELIX_BIND=on binds to the placement's %s)", rank, eng->kept,
                 eng->place->ranks[rank].cpuset[0] ? eng->place->ranks[rank].cpuset : "-");
    if (eng->kept_ncpu > 0 && eng->threads > eng->kept_ncpu)
        hlx_warn("--threads %d on the %d CPU%s this rank was bound to before start (%s): "
                 "the threads share them; bind it to %d CPUs (srun -c, taskset) or set "
                 "HELIX_BIND=on to take its placement's", eng->threads, eng->kept_ncpu,
                 eng->kept_ncpu > 1 ? "s" : "", eng->kept, eng->threads);
    /* Ranks taking turns on cores, from every rank's CPUs at start (the same answer on
     * every rank: the schedule depends on it) */
    eng->oversub = hlx_job_cpu_load(all, n, &eng->job_ranks, &eng->job_threads,
                                    &eng->job_cpus) > 1.0 + 1e-9;
    /* auto binds where each host's placement has the machine to itself (one host, or
     * hosts that are distinct machines: not namespaces or containers of one) and no
     * more ranks than CPUs share it */
    want = !strcmp(eng->set.bind, "on") ||
           (!strcmp(eng->set.bind, "auto") && eng->kept[0] == '\0' &&
            (eng->info.local_size == eng->info.size || !hlx_hosts_share_machine(all, n)) &&
            eng->info.local_size <= ti.npus);
    if (want && ti.this_system) {
        st = hlx_topo_bind_self(eng->topo, eng->place, rank);
        if (st != HLX_OK) {
            hlx_engine_fail(err, errlen, st, "binding rank %d to cpus %s failed", rank,
                            eng->place->ranks[rank].cpuset);
            goto out;
        }
        eng->bound = eng->place->ranks[rank].cpuset[0] != '\0';
    }
    if (getenv("UCX_NET_DEVICES") != NULL)
        hlx_info(HLX_SUB_TOPO, "rank %d: UCX_NET_DEVICES=%s (given)", rank, getenv("UCX_NET_DEVICES"));
    else if (!strcmp(js.net_device, "auto") && job.nhosts > 1 &&
             hlx_place_net_device(eng->place, eng->topo, rank, dev, sizeof(dev))) {
        setenv("UCX_NET_DEVICES", dev, 0);
        hlx_info(HLX_SUB_TOPO, "rank %d: UCX_NET_DEVICES=%s (the placed NIC)", rank, dev);
    }
    if (rank == 0) {
        hlx_info(HLX_SUB_TOPO, "job placement over %d host(s) (cluster \"%s\"), hash %016llx",
                 job.nhosts, job.cluster.name, (unsigned long long)job.hash);
        for (r = 0; r < n; r++) {
            const hlx_rank_place_t *rp = &eng->place->ranks[r];
            hlx_info(HLX_SUB_TOPO, "  rank %d: node %s (rack %d) gpu %d numa %d cpus %s nic %s "
                     "kvp %d tpa %d", r, job.cluster.nodes[rp->node].name,
                     job.cluster.nodes[rp->node].rack, rp->gpu, rp->numa,
                     rp->cpuset[0] ? rp->cpuset : "-", rp->nic >= 0 ? rp->nic_name : "-",
                     rp->kvp_rank, rp->tpa_rank);
        }
        if (job.warning[0])
            hlx_warn("placement: %s", job.warning);
    }
    hlx_place_links(eng->place, rank, links);
    len = 0;
    for (r = 0; r < n && len < sizeof(buf); r++)
        len += (size_t)snprintf(buf + len, sizeof(buf) - len, " %d:%s", r, hlx_link_name(links[r]));
    hlx_info(HLX_SUB_TOPO, "rank %d: hash %016llx, cpus %s%s, a2a peers over %s; links%s", rank,
             (unsigned long long)job.hash, eng->kept[0] ? eng->kept : eng->place->ranks[rank].cpuset,
             eng->bound ? " (bound)" : eng->kept[0] ? " (bound before start)" : "",
             hlx_engine_a2a_link(eng), buf);
    if (js.dump[0]) {
        snprintf(buf, sizeof(buf), "%s.%d", js.dump, rank);
        st = hlx_place_write_json(eng->place, &job.cluster, buf, err, errlen);
    }
out:
    if (have_file)
        hlx_cluster_free(&file);
    hlx_job_place_free(&job);
    free(all);
    free(hashes);
    free(links);
    return st;
}

/* ---- sizes: every product of user input is checked, never wrapped */

/* *acc *= v; 0 on overflow. */
static int hlx_mul(uint64_t *acc, uint64_t v)
{
    return !__builtin_mul_overflow(*acc, v, acc);
}

static int hlx_add(uint64_t *acc, uint64_t v)
{
    return !__builtin_add_overflow(*acc, v, acc);
}

/* hlx_engine_wput's count of a matrix into sk (hlx_wsink_t): the bytes hlx_engine_wload
 * allocates for it (hlx_engine_wform, packed or not as sk says) and the scratch its reading
 * takes, job's sbytes on each of the pool's T threads (none where it is read in place). */
static hlx_status_t hlx_engine_wcount(hlx_engine_t *eng, const hlx_wsink_t *sk, int K, int N,
                                      const hlx_wpart_t *parts, int nparts)
{
    hlx_wload_job_t job = { 0 };
    const int T = hlx_pool_size(eng->be.pool); /* the threads the load reads on */
    hlx_dtype_t t;
    size_t bytes = 0;
    uint64_t s;
    hlx_status_t st;

    eng->errmsg[0] = '\0';
    st = hlx_engine_wform(eng, sk->packed, parts, nparts, K, N, &job, &t, &bytes);
    if (st == HLX_OK && t != eng->w_dtype && K > 0 && N > 0) { /* through scratch */
        hlx_wload_sbytes(&job, K, N, eng->w_esize, T);
        s = job.sbytes;
        if (!hlx_mul(&s, (uint64_t)T))
            st = HLX_ERR_INVALID;
        else if (s > *sk->scratch)
            *sk->scratch = s;
    }
    free(job.gtab);
    free(job.grow);
    if (st != HLX_OK) { /* the groups' read said why (or nothing: out of memory) */
        if (eng->errmsg[0] == '\0' && st == HLX_ERR_INVALID)
            snprintf(eng->errmsg, sizeof(eng->errmsg), "sizes overflow: a %d x %d projection "
                     "(%s)%s exceeds this machine's address space", K, N,
                     nparts > 0 ? parts[0].name : "", sk->packed ? " kept packed" : "");
        else if (eng->errmsg[0] == '\0')
            snprintf(eng->errmsg, sizeof(eng->errmsg), "sizing %s: %s",
                     nparts > 0 ? parts[0].name : "a projection", hlx_status_str(st));
        return st;
    }
    /* the sum beyond 2^64: the caller says so with the model's sizes (errmsg empty) */
    return hlx_add(sk->w, bytes) ? HLX_OK : HLX_ERR_INVALID;
}

hlx_status_t hlx_engine_wput(hlx_engine_t *eng, const hlx_wsink_t *sk, void **w_p, int64_t K,
                             int64_t N, const hlx_wpart_t *parts, int nparts)
{
    if (K > INT_MAX || N > INT_MAX) { /* (the walks' sizes are products of model fields) */
        snprintf(eng->errmsg, sizeof(eng->errmsg), "sizes overflow: a projection's rows or "
                 "columns on this rank exceed what the engine's matrices take (2^31 - 1): "
                 "%s, %lld x %lld", nparts > 0 ? parts[0].name : "a projection",
                 (long long)K, (long long)N);
        return HLX_ERR_INVALID;
    }
    if (sk == NULL)
        return hlx_engine_wload(eng, w_p, (int)K, (int)N, parts, nparts);
    return hlx_engine_wcount(eng, sk, (int)K, (int)N, parts, nparts);
}

/* Adds to *w the embedding's vocabulary slice (vocab_count x H, w_dtype; none where it is
 * tied to the LM head); 0 on overflow. */
static int hlx_engine_add_embed(const hlx_engine_t *eng, uint64_t *w)
{
    uint64_t t = hlx_engine_embed_tied(eng) ? 0 : (uint64_t)eng->lay.vocab_count * eng->w_esize;

    return hlx_mul(&t, (uint64_t)eng->m.hidden) && hlx_add(w, t);
}

/* Adds to *w MLA's absorbed W_UK and W_UV of every layer (w_dtype, row-major whatever the
 * projections' form; none without MLA); 0 on overflow. */
static int hlx_engine_add_absorbed(const hlx_engine_t *eng, uint64_t *w)
{
    uint64_t t;

    if (eng->m.attn != HLX_ATTN_MLA)
        return 1;
    t = hlx_mla_absorbed_elems(&eng->m, &eng->lay);
    return t != UINT64_MAX && hlx_mul(&t, eng->w_esize) &&
           hlx_mul(&t, (uint64_t)eng->m.layers) && hlx_add(w, t);
}

/* The weights a rank will hold into *w: every projection matrix by the walks
 * hlx_engine_build, hlx_mla_create and hlx_moe_build load them with, each counted as the
 * load will allocate it (hlx_engine_wcount): kept packed (packed: packed, act order's
 * groups those of the rank's rows, fused parts whose g_idx differ in bf16, skipped modules
 * plain; in strips of 16 columns, with the format's header) or unpacked (the backend's
 * layout in w_dtype, from the shapes alone), their sum also in *proj; then the rest, which
 * is held the same either way (the embedding's slice, MLA's absorbed W_UK and W_UV, the
 * routers in f32). The largest reading scratch (all threads) into *scratch. */
static hlx_status_t hlx_engine_weights(hlx_engine_t *eng, int packed, uint64_t *w,
                                       uint64_t *scratch, uint64_t *proj)
{
    const hlx_model_t *m = &eng->m;
    const hlx_wsink_t sk = { w, scratch, packed };
    hlx_moe_layout_t ml;
    hlx_status_t st = HLX_OK;
    uint64_t t;
    int l;

    *w = 0, *scratch = 0;
    eng->errmsg[0] = '\0';
    hlx_moe_rank_layout(eng, &ml); /* as hlx_moe_build lays them out */
    /* the loops of the load (MLA's projections where GQA's QKV would be) */
    for (l = 0; l < m->layers && st == HLX_OK; l++) {
        if (m->attn == HLX_ATTN_MLA)
            st = hlx_mla_proj_walk(eng, &sk, l, NULL);
        if (st == HLX_OK)
            st = hlx_engine_layer_walk(eng, &sk, l, NULL);
    }
    if (st == HLX_OK)
        st = hlx_engine_head_walk(eng, &sk);
    if (st == HLX_OK && m->experts > 0) /* the experts */
        st = hlx_moe_walk_count(eng, &sk, &ml);
    if (st != HLX_OK)
        return st;
    *proj = *w;
    /* the routers, their correction biases and shared gates in f32 */
    if (m->experts > 0 && ((t = hlx_moe_rank_bytes(m, &ml, 0)) == UINT64_MAX || !hlx_add(w, t)))
        return HLX_ERR_INVALID;
    if (!hlx_engine_add_embed(eng, w) || !hlx_engine_add_absorbed(eng, w))
        return HLX_ERR_INVALID;
    return HLX_OK;
}

/* Slots of a windowed layer's ring (hlx_engine_t.ring), 0 for none: a query at p reads
 * positions from p - window + 1, and a prefill chunk appends its C rows before they attend,
 * so window + C - 1 consecutive positions are live at once. They touch at most ceil(n /
 * kv_block) + 1 position blocks, of which a rank owns every KVP-th; those slots in whole
 * kernel blocks (a ring of whole blocks keeps the kernels' layout), and one block more for
 * the partial block the synthetic context writes past its end. None when it is no smaller
 * than cap (a window longer than the run) or without a window. */
static int64_t hlx_engine_ring(const hlx_engine_t *eng)
{
    const hlx_layout_t *L = &eng->lay;
    int64_t w = eng->m.sliding_window, c = 1, n, blocks, a = (int64_t)hlx_phase_kv_align(eng), r;

    if (w <= 0 || eng->m.attn != HLX_ATTN_GQA)
        return 0;
    if (eng->cfg.prompt_len > 0) { /* prefill.c's chunk */
        c = eng->cfg.prefill_chunk > 0 ? eng->cfg.prefill_chunk : HLX_PREFILL_CHUNK;
        if (c > hlx_run_prompt_max(&eng->cfg))
            c = hlx_run_prompt_max(&eng->cfg);
        if (c < 1)
            c = 1;
    }
    n = w + c - 1; /* window <= INT32_MAX, c <= INT32_MAX (hlx_prefill_alloc) */
    blocks = (n + L->kv_block - 1) / L->kv_block + 1;
    r = (blocks + L->kvp - 1) / L->kvp * L->kv_block;
    r = (r + a - 1) / a * a + a;
    return r < eng->cap ? r : 0;
}

/* Bytes of one K or V allocation of a layer: B * kv_local shards of cap slots of d
 * elements (rounded to the kernels' blocks), rounded up to a 2 MiB huge page. */
static int hlx_kv_alloc_bytes(const hlx_engine_t *eng, int64_t cap, int d, int blk,
                              uint64_t *out)
{
    uint64_t b = blk > 1 ? (uint64_t)blk : 1, v = ((uint64_t)cap + b - 1) / b;
    uint64_t huge = 2u << 20;

    if (!hlx_mul(&v, b) || !hlx_mul(&v, (uint64_t)d) || !hlx_mul(&v, (uint64_t)eng->cfg.batch) ||
        !hlx_mul(&v, (uint64_t)eng->lay.kv_local) || !hlx_mul(&v, eng->kv_esize) ||
        !hlx_add(&v, huge - 1))
        return 0;
    *out = v / huge * huge;
    return 1;
}

/* Bytes this rank needs (weights, KV shard, buffers); HLX_ERR_INVALID with the sizes when
 * a product overflows 64 bits. */
static hlx_status_t hlx_engine_bytes(hlx_engine_t *eng, uint64_t *need_p, char *err,
                                     size_t errlen)
{
    const hlx_layout_t *L = &eng->lay;
    const hlx_model_t *m = &eng->m;
    uint64_t H = (uint64_t)m->hidden, dv = (uint64_t)m->v_head_dim, B = (uint64_t)eng->cfg.batch;
    uint64_t xdv = (uint64_t)eng->xdv;
    uint64_t k, v, kv, w, t, need;
    hlx_status_t st;
    int ok, l, nwin = 0;

    /* windowed layers' rings, whole-context layers' cap slots */
    eng->ring = hlx_engine_ring(eng);
    for (l = 0; l < m->layers && eng->ring > 0; l++)
        nwin += hlx_model_layer_window(m, l) > 0;
    /* (no whole-context layer: cap-sized shards, which need not fit 64 bits, are not sized) */
    kv = 0;
    ok = nwin == m->layers ||
         (hlx_kv_alloc_bytes(eng, eng->cap, eng->kv_dk, eng->be.k.kv_layout.k_block, &k) &&
          hlx_kv_alloc_bytes(eng, eng->cap, eng->kv_dv, eng->be.k.kv_layout.v_block, &v) &&
          hlx_add(&k, v) && hlx_mul(&k, (uint64_t)(m->layers - nwin)) && hlx_add(&kv, k));
    if (ok && nwin > 0) {
        ok = hlx_kv_alloc_bytes(eng, eng->ring, eng->kv_dk, eng->be.k.kv_layout.k_block, &k) &&
             hlx_kv_alloc_bytes(eng, eng->ring, eng->kv_dv, eng->be.k.kv_layout.v_block, &v) &&
             hlx_add(&k, v) && hlx_mul(&k, (uint64_t)nwin) && hlx_add(&kv, k);
        if (ok && eng->info.rank == 0)
            hlx_info(HLX_SUB_CORE, "sliding window: the KV of %d windowed layer(s) in rings of "
                     "%lld slots per shard (window %d + prefill chunk - 1 positions) instead "
                     "of %lld", nwin, (long long)eng->ring, m->sliding_window,
                     (long long)eng->cap);
    }
    if (!ok)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID,
                               "sizes overflow: the KV shard of batch %d x %d KV head(s) x "
                               "%lld positions x (key %d + value %d elements) x %zu bytes x %d "
                               "whole-context layer(s) exceeds 2^64 bytes: reduce --batch or "
                               "--context, or raise --kvp", eng->cfg.batch, L->kv_local,
                               (long long)eng->cap, eng->kv_dk, eng->kv_dv, eng->kv_esize,
                               m->layers - nwin);
    /* matrix by matrix, in the form each will be held in (kept packed or not) */
    if ((st = hlx_engine_weights(eng, eng->wq, &w, &t, &eng->mem_proj)) != HLX_OK &&
        eng->errmsg[0])
        return hlx_engine_fail(err, errlen, st, "%s", eng->errmsg);
    ok = st == HLX_OK; /* else the sum overflowed: said below with the model's sizes */
    eng->mem_weights = w, eng->mem_wscratch = t; /* what w adds from here on: buffers */
    ok = ok && hlx_add(&w, t);
    /* step buffers: the largest are B x (qkv_cols, 2 ffn_count, vocab_pad x N) floats;
     * 7 H: x, hn, y and the rest, the host's embedding rows among them */
    t = (uint64_t)eng->qkv_cols + 2 * (uint64_t)L->ffn_count + 7 * H +
        (uint64_t)L->vocab_pad * (uint64_t)(L->n + 1) +
        4 * (uint64_t)L->q_local * (xdv + (uint64_t)L->q_split) * (uint64_t)L->kvp;
    ok = ok && hlx_mul(&t, B * 4) && hlx_add(&w, t);
    if (eng->cfg.prompt_len > 0) {
        /* prefill buffers (prefill.c): the same per-row floats for B x chunk rows */
        uint64_t c = (uint64_t)(eng->cfg.prefill_chunk > 0 ? eng->cfg.prefill_chunk
                                                           : HLX_PREFILL_CHUNK);
        t = (uint64_t)hlx_run_prompt_max(&eng->cfg);
        c = c < t ? c : t; /* no longer than the longest prompt */
        t = (uint64_t)eng->qkv_cols + 3 * (uint64_t)L->ffn_count + 6 * H +
            4 * (uint64_t)L->q_local * (xdv + (uint64_t)L->q_split) * (uint64_t)L->kvp;
        if (m->attn == HLX_ATTN_MLA) /* q_a, queries, latent rows, absorbed, W_UV, gathers */
            t += (uint64_t)m->q_lora_rank +
                 (uint64_t)m->q_heads * (uint64_t)(m->qk_nope_dim + m->qk_rope_dim) +
                 ((uint64_t)m->q_heads + 2) * (uint64_t)(m->kv_lora_rank + m->qk_rope_dim) +
                 (uint64_t)L->q_slice * dv + 2 * (uint64_t)(m->kv_lora_rank + m->qk_nope_dim + dv);
        ok = ok && hlx_mul(&t, B * 4) && hlx_mul(&t, c) && hlx_add(&w, t);
    }
    if (!ok)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID,
                               "sizes overflow: the weights of model %s (hidden %d, %d layers, "
                               "ffn %d, vocab %d) with batch %d exceed 2^64 bytes",
                               m->name, m->hidden, m->layers, m->ffn, m->vocab, eng->cfg.batch);
    need = kv;
    if (!hlx_add(&need, w) || !hlx_add(&need, 16u << 20))
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID,
                               "sizes overflow: KV %llu bytes + weights %llu bytes exceed 2^64",
                               (unsigned long long)kv, (unsigned long long)w);
    eng->mem_check = 0;
    if (eng->cfg.check) {
        /* every rank: the appended KV rows of all ranks, gathered once at the end */
        uint64_t g = (uint64_t)m->layers, r = 0,
                 steps = (uint64_t)eng->cfg.steps + (uint64_t)hlx_run_prompt_max(&eng->cfg);
        ok = hlx_mul(&g, B) && hlx_mul(&g, (uint64_t)L->kv_local_max) && hlx_mul(&g, steps) &&
             hlx_mul(&g, (uint64_t)(eng->kv_dk + eng->kv_dv) + 1) &&
             hlx_mul(&g, 4 * (uint64_t)(L->n + 1)) && hlx_add(&need, g);
        if (ok && eng->info.rank == 0) {
            /* rank 0: the reference, and its hidden states and logits of every step */
            r = hlx_ref_bytes(m, eng->cfg.batch, eng->cfg.context, (int)steps);
            t = steps;
            ok = r != UINT64_MAX && hlx_add(&need, r) && hlx_mul(&t, B) &&
                 hlx_mul(&t, (H + (uint64_t)m->vocab) * 8 + 4) && hlx_add(&need, t);
        }
        if (!ok)
            return hlx_engine_fail(err, errlen, HLX_ERR_INVALID,
                                   "sizes overflow: --check for batch %d x context %lld x %d "
                                   "steps (the fp64 reference and the gathered KV rows) exceeds "
                                   "2^64 bytes", eng->cfg.batch, (long long)eng->cfg.context,
                                   eng->cfg.steps);
        eng->mem_check = need - kv - w - (16u << 20);
    }
    eng->kv_bytes = kv;
    *need_p = need;
    return HLX_OK;
}

uint64_t hlx_engine_need_packed(hlx_engine_t *eng, uint64_t need)
{
    uint64_t wp, sp, proj;

    if (eng->wq || !hlx_engine_wq_can(eng))
        return 0;
    if (hlx_engine_weights(eng, 1, &wp, &sp, &proj) != HLX_OK) {
        eng->errmsg[0] = '\0'; /* the count's reason: this estimate just has none */
        return 0;
    }
    /* need holds the weights and their scratch as hlx_engine_bytes counted them held
     * unpacked; the rest of it is the same either way */
    need -= eng->mem_weights + eng->mem_wscratch;
    return hlx_add(&need, wp) && hlx_add(&need, sp) ? need : 0;
}

/* ---- creation, as a list of steps */

/* The prompt, the sampling and the checkpoint: all ranks read the same files, so every
 * refusal comes before the bootstrap, the same on each rank. */
static hlx_status_t hlx_engine_validate_load(hlx_engine_t *eng, char *err, size_t errlen)
{
    const hlx_run_config_t *cfg = &eng->cfg;
    hlx_status_t st;
    size_t i;
    int l;

    if (cfg->prompt_len < 0 || (cfg->prompt_len > 0 && cfg->prompt == NULL) ||
        cfg->prefill_chunk < 0)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "a prompt of %d tokens without "
                               "its ids, or --prefill-chunk %d", cfg->prompt_len,
                               cfg->prefill_chunk);
    if ((int64_t)cfg->prompt_len + cfg->steps > INT32_MAX)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "%d prompt tokens + %d steps "
                               "exceed 2^31 - 1", cfg->prompt_len, cfg->steps);
    for (i = 0; cfg->prompt != NULL && i < (size_t)cfg->batch * (size_t)cfg->prompt_len; i++)
        if (cfg->prompt[i] < 0 || cfg->prompt[i] >= eng->m.vocab)
            return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "prompt token %zu of request "
                                   "%zu is %d, outside the vocabulary of %d",
                                   i % (size_t)cfg->prompt_len, i / (size_t)cfg->prompt_len,
                                   cfg->prompt[i], eng->m.vocab);
    if ((cfg->tail == NULL) != (cfg->tail_off == NULL) ||
        (cfg->tail_off != NULL && (cfg->prompt_len < 1 || cfg->tail_off[0] != 0)))
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "prompt tails need their "
                               "offsets from 0 and a prompt of at least one token");
    if (cfg->tail_off != NULL && !strcmp(eng->set.prefill, "steps"))
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "HELIX_PREFILL=steps runs prompts "
                               "of one length (the chunked prefill, the default, runs prompts "
                               "of different lengths)");
    for (i = 0; cfg->tail_off != NULL && i < (size_t)cfg->batch; i++) {
        int t, n = cfg->tail_off[i + 1] - cfg->tail_off[i];
        if (n < 0 || (int64_t)cfg->prompt_len + n + cfg->steps > INT32_MAX)
            return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "request %zu has %d prompt "
                                   "tokens past the first %d: 0 .. 2^31 - 1 positions in all",
                                   i, n, cfg->prompt_len);
        for (t = cfg->tail_off[i]; t < cfg->tail_off[i + 1]; t++)
            if (cfg->tail[t] < 0 || cfg->tail[t] >= eng->m.vocab)
                return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "prompt token %d of "
                                       "request %zu is %d, outside the vocabulary of %d",
                                       cfg->prompt_len + t - cfg->tail_off[i], i, cfg->tail[t],
                                       eng->m.vocab);
    }
    if (cfg->temperature < 0 || !(cfg->temperature <= 1e6) ||
        (cfg->temperature > 0 && !(cfg->top_p > 0 && cfg->top_p <= 1)))
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "--temperature %g (0 .. 1e6) or "
                               "--top-p %g (0 < P <= 1)", cfg->temperature, cfg->top_p);
    if (!cfg->ckpt[0] && eng->m.weight_dtype == HLX_DTYPE_FP8)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "model %s: fp8 weights run from "
                               "a checkpoint only (dequantized to bf16 at load)", eng->m.name);
    if (!cfg->ckpt[0])
        return HLX_OK;
    st = hlx_wsrc_ckpt(&eng->ws, cfg->ckpt, eng->errmsg, sizeof(eng->errmsg));
    if (st != HLX_OK)
        return hlx_engine_fail(err, errlen, st, "%s", eng->errmsg);
    eng->errmsg[0] = 0;
    if (hlx_model_hash(&eng->ws.cfg.m) != hlx_model_hash(&eng->m))
        return hlx_engine_fail(err, errlen, HLX_ERR_MISMATCH, "%s/config.json describes "
                               "another model than the one given to the engine (%s)",
                               cfg->ckpt, eng->m.name);
    /* quantized weights are dequantized into the held dtype, and only bf16 is run and
     * checked from them (the packed GEMMs, the fp8 and MXFP4 decoders' rounding) */
    if (cfg->weight_dtype_set && eng->w_dtype == HLX_DTYPE_F32 &&
        hlx_hf_quantized(&eng->ws.cfg) && hlx_hf_held_default(&eng->ws.cfg) != HLX_DTYPE_F32)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "--weight-dtype f32: %s holds "
                               "quantized weights (%s), which run dequantized in bf16: drop "
                               "--weight-dtype or give bf16", cfg->ckpt,
                               eng->ws.cfg.m.weight_dtype == HLX_DTYPE_FP8 ? "fp8"
                               : eng->ws.cfg.mxfp4                         ? "MXFP4"
                                                                           : "integer");
    hlx_wsrc_hold(&eng->ws, eng->w_dtype); /* f32 reads rounded as matrices are held */
    /* fp8 KV-cache scales: their values were checked with the checkpoint (hlx_hf_check);
     * MLA's pair must also agree where the KV is fp8 (hlx_wsrc_kv_scales), said here once,
     * before the bootstrap */
    for (l = 0; eng->m.attn == HLX_ATTN_MLA && l < eng->m.layers; l++) {
        double ks, vs;
        if ((st = hlx_wsrc_kv_scales(&eng->ws, eng->kv_dtype, l, 0, &ks, &vs, eng->errmsg,
                                     sizeof(eng->errmsg))) != HLX_OK)
            return hlx_engine_fail(err, errlen, st, "%s", eng->errmsg);
    }
    return HLX_OK;
}

static hlx_status_t hlx_engine_validate(hlx_engine_t *eng, char *err, size_t errlen)
{
    const hlx_run_config_t *cfg = &eng->cfg;
    hlx_status_t st;
    int ep_flag;

    if (cfg->batch < 1 || cfg->steps < 0 || cfg->context < 0 || cfg->kv_block < 1)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID,
                        "--batch and --kv-block must be >= 1, --steps and --context >= 0");
    if (cfg->context > ((int64_t)1 << 40))
        return hlx_engine_fail(err, errlen, HLX_ERR_NOSPACE, "--context %lld is beyond 2^40 tokens",
                        (long long)cfg->context);
    if (cfg->micro_batch < 0 || cfg->micro_batch > cfg->batch)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "--micro-batch %d: expected 1 .. "
                               "--batch %d", cfg->micro_batch, cfg->batch);
    if (cfg->hopb < HLX_HOPB_OFF || cfg->hopb > HLX_HOPB_AUTO)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "--hopb: expected on, off or auto");
    if (eng->kv_dtype != HLX_DTYPE_F32 && eng->kv_dtype != HLX_DTYPE_BF16 &&
        eng->kv_dtype != HLX_DTYPE_FP8)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "kv dtype %s: the runtime stores KV "
                               "in f32, bf16 or fp8 (use --kv-dtype)",
                               hlx_dtype_name(eng->kv_dtype));
    if (eng->w_dtype != HLX_DTYPE_F32 && eng->w_dtype != HLX_DTYPE_BF16)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "model %s: weight dtype %s: the "
                               "runtime runs f32 or bf16 weights", eng->m.name,
                               hlx_dtype_name(eng->w_dtype));
    st = hlx_param_load(&hlx_runtime_table, &eng->set, NULL);
    /* the table checks every value (BIND, NCCL, STAGE, ... by their choices) and has
     * named each bad one */
    if (st != HLX_OK)
        return hlx_engine_fail(err, errlen, st, "bad HELIX_* runtime setting (above)");
    if (cfg->threads < 0 || cfg->threads > HLX_POOL_MAX)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "--threads %d: expected 1 .. %d",
                               cfg->threads, HLX_POOL_MAX);
    st = hlx_fault_create(eng->set.fault, &eng->fault, err, errlen);
    if (st != HLX_OK)
        return st;
    /* HELIX_EP (ambient) applies to MoE models only; --ep > 1 on a dense model is refused */
    ep_flag = eng->cfg.ep != 0;
    if (!ep_flag)
        eng->cfg.ep = hlx_model_moe_layers(&eng->m) > 0 ? eng->set.ep : 1;
    st = hlx_moe_check_ep(&eng->m, ep_flag ? "--ep" : "HELIX_EP", eng->cfg.ep, cfg->kvp,
                          cfg->tpa, err, errlen);
    if (st != HLX_OK)
        return st;
    st = hlx_engine_validate_load(eng, err, errlen);
    if (st != HLX_OK)
        return st;
    /* Layout errors do not depend on the rank: report them before bootstrapping. */
    return hlx_layout_init(&eng->m, cfg->kvp, cfg->tpa, cfg->kv_block, 0, &eng->lay, err, errlen);
}

/* Query heads per KV head of the model's attention calls (MLA: all query heads share the
 * latent rows), as the kernels' choice and vector paths count them. */
static int hlx_engine_attn_group(const hlx_model_t *m)
{
    return m->attn == HLX_ATTN_MLA ? m->q_heads : m->q_heads / (m->kv_heads ? m->kv_heads : 1);
}

static hlx_status_t hlx_engine_backend(hlx_engine_t *eng, char *err, size_t errlen)
{
    const char *kern = strcmp(eng->cfg.kernels, "auto") ? eng->cfg.kernels : NULL;
    const char *dev = eng->cfg.device[0] ? eng->cfg.device : eng->set.device;
    const char *src = eng->cfg.device[0] ? "--device " : "HELIX_DEVICE=";
    const char *name = NULL;
    const int mla = eng->m.attn == HLX_ATTN_MLA, capped = eng->m.attn_softcap > 0.0;
    /* the attention's shape: keys of dk, values of dv (MLA: the head xdv of the key rows) */
    int dk = 0, dv = 0, xdv = 0;
    hlx_kernels_shape_t sh;
    char why[256] = "";
    hlx_status_t st;

    hlx_mla_kv_dims(&eng->m, &dk, &dv, &xdv);
    if (mla)
        dv = xdv;
    /* cpu: the host backend; cuda: refused here, before any communication, when no device
     * can be used; auto: cuda when one can, else cpu with the reason in the report */
    if (!strcmp(dev, "cuda") || !strcmp(dev, "auto")) {
        if (hlx_backend_cuda_devices(why, sizeof(why)) > 0)
            name = "cuda";
        else if (!strcmp(dev, "cuda"))
            return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "%scuda: no CUDA device "
                                   "(%s); use --device cpu or auto", src, why);
        else
            snprintf(eng->device_note, sizeof(eng->device_note), "auto chose cpu: no CUDA "
                     "device (%s)", why);
    } else if (strcmp(dev, "cpu"))
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "%s%s: expected cpu, cuda or "
                               "auto", src, dev);
    /* Every layer op, MLA's and MoE's included, runs on the chosen backend (MoE routing is
     * computed on the host after a queue sync, from host-readable backend memory). A
     * sliding window runs: the device reads KV in rows (blocks of 1), so a window's slots
     * are always read in place (hlx_phase_attn_from never copies on the host) */
    /* the kernel variant (and so the KV layout) is chosen for the head size and the threads
     * per rank, here, before the cache is allocated */
    eng->threads = eng->cfg.threads > 0 ? eng->cfg.threads : eng->set.threads;
    sh.head_dim = dk;
    sh.group = hlx_engine_attn_group(&eng->m);
    sh.softcap = capped;
    sh.threads = name == NULL ? eng->threads : 1;
    st = hlx_backend_init_shape(name, kern, eng->kv_dtype, &sh, &eng->be);
    if (st != HLX_OK && name != NULL && hlx_kernels_init_kv(kern, eng->kv_dtype, &eng->be.k) == HLX_OK)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "%s%s: the CUDA backend "
                               "cannot start: %s", src, dev, hlx_status_str(st));
    if (st != HLX_OK) {
        /* names --kernels or HELIX_KERNELS, whichever carried the value */
        hlx_kernels_init_error(kern, why, sizeof(why));
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "%s", why);
    }
    /* a head size off the variant's vector width runs its reference loop: say so where the
     * choice is reported (the kernels line), the run is still exact */
    if (name == NULL &&
        !hlx_kernels_attn_vector(&eng->be.k, eng->kv_dtype, sh.group, dk, dv, mla, capped)) {
        size_t at = strlen(eng->be.kernels_why);
        snprintf(eng->be.kernels_why + at, sizeof(eng->be.kernels_why) - at,
                 "; no vector path for head size %d x %d%s: attention runs its reference "
                 "loop (slow)", dk, dv, capped ? " with soft-capped scores" : "");
    }
    /* Several cores per rank: one pool for the whole run (threads inherit the rank's
     * binding), its KV shard and GEMMs split over it. */
    if (eng->threads > 1 && name == NULL) {
        st = hlx_backend_set_threads(&eng->be, eng->threads);
        if (st != HLX_OK)
            return hlx_engine_fail(err, errlen, st, "--threads %d: starting the thread pool "
                                   "failed: %s", eng->threads, hlx_status_str(st));
    }
    return HLX_OK;
}

void hlx_engine_clock_mark(hlx_engine_t *eng, int ph)
{
    hlx_status_t st = hlx_backend_cuda_clock(&eng->be, eng->q, ph);

    if (st != HLX_OK && eng->clock_st == HLX_OK)
        eng->clock_st = st;
}

/* The CUDA attention kernel HELIX_CUDA_ATTN names takes the model's attention shape (the
 * head sizes and KV type; MLA: the latent row, its head the value): checked at start-up,
 * where a forced kernel that does not take it was found only by the first step's launch.
 * *k_p: the kernel's name (for the device note). */
static hlx_status_t hlx_engine_cuda_attn_fits(const hlx_engine_t *eng, const char **k_p,
                                              char *err, size_t errlen)
{
    const int mla = eng->m.attn == HLX_ATTN_MLA;

    *k_p = hlx_backend_cuda_attn_kernel(eng->kv_dk, eng->xdv, eng->kv_dtype, mla);
    if (strncmp(*k_p, "none", 4) != 0) /* a kernel's name, else why none takes it */
        return HLX_OK;
    return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "HELIX_CUDA_ATTN=%.32s: that kernel "
                           "does not take this model's attention (%s%d-element keys, %d-element "
                           "values, %s KV); HELIX_CUDA_ATTN=auto picks one that does",
                           eng->set.cuda_attn, mla ? "MLA, " : "", eng->kv_dk, eng->xdv,
                           hlx_dtype_name(eng->kv_dtype));
}

/* After placement: a CUDA backend takes the rank's placed GPU, or local rank mod the
 * device count; then the backend's queue. */
static hlx_status_t hlx_engine_device(hlx_engine_t *eng, char *err, size_t errlen)
{
    hlx_status_t st;

    if (!strcmp(eng->be.ops->name, "cuda")) {
        char why[256] = "";
        int n = hlx_backend_cuda_devices(why, sizeof(why)), gpu = -1, lr = eng->info.local_rank;
        const char *how = "placed", *kernel = NULL;
        size_t used = strlen(eng->device_note);
        double t = eng->set.step_watchdog > 0 ? eng->set.step_watchdog : 600.0;

        if (eng->place != NULL && eng->info.rank < eng->place->nranks)
            gpu = eng->place->ranks[eng->info.rank].gpu;
        if (n > 0 && (gpu < 0 || gpu >= n)) {
            gpu = (lr > 0 ? lr : 0) % n;
            how = "local rank mod device count";
        }
        st = hlx_backend_cuda_open(&eng->be, gpu, t, why, sizeof(why));
        if (st == HLX_OK && hlx_backend_cuda_set_attn(eng->set.cuda_attn) != HLX_OK) {
            snprintf(why, sizeof(why), "HELIX_CUDA_ATTN=%.64s not taken", eng->set.cuda_attn);
            st = HLX_ERR_INVALID;
        }
        if (st != HLX_OK)
            return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "--device cuda: rank %d "
                                   "cannot use GPU %d: %s", eng->info.rank, gpu, why);
        if ((st = hlx_engine_cuda_attn_fits(eng, &kernel, err, errlen)) != HLX_OK)
            return st;
        eng->dev_clock = !strcmp(eng->set.phase_clock, "device");
        snprintf(eng->device_note + used, sizeof(eng->device_note) - used,
                 "%sGPU %d of %d (%s); attention kernel %s (HELIX_CUDA_ATTN=%.16s)",
                 used ? "; " : "", gpu, n, how, kernel, eng->set.cuda_attn);
        hlx_info(HLX_SUB_TOPO, "rank %d: cuda backend on GPU %d of %d (%s)", eng->info.rank,
                 gpu, n, how);
    }
    st = eng->be.ops->queue_create(&eng->be, &eng->q);
    if (st != HLX_OK)
        return hlx_engine_fail(err, errlen, st, "backend %s: creating its queue failed: %s",
                               eng->be.ops->name, hlx_status_str(st));
    return HLX_OK;
}

/* The layout of this job and the sizes the model gives it (hlx_engine_bootstrap). */
static hlx_status_t hlx_engine_job(hlx_engine_t *eng, char *err, size_t errlen)
{
    const hlx_run_config_t *cfg = &eng->cfg;
    hlx_status_t st;
    int64_t seq;

    if (eng->fault != NULL && hlx_fault_rank(eng->fault) >= eng->info.size)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "HELIX_FAULT: rank %d, but the job "
                               "has %d rank(s)", hlx_fault_rank(eng->fault), eng->info.size);
    if (eng->info.size != cfg->kvp * cfg->tpa)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID,
                      "this job has %d rank(s) (%s) but --kvp %d x --tpa %d = %d: launch "
                      "with helixrun -n %d (or mpirun -n / srun -n) or change the layout",
                      eng->info.size, eng->info.launcher, cfg->kvp, cfg->tpa,
                      cfg->kvp * cfg->tpa, cfg->kvp * cfg->tpa);
    st = hlx_layout_init(&eng->m, cfg->kvp, cfg->tpa, cfg->kv_block, eng->info.rank, &eng->lay,
                         err, errlen);
    if (st != HLX_OK)
        return st;
    {
        /* Kernel dimensions are ints: the widest row of any operand must fit in one. */
        int64_t qkv = (int64_t)eng->lay.q_local * eng->m.head_dim +
                      (int64_t)eng->lay.kv_local * (eng->m.head_dim + eng->m.v_head_dim);
        int64_t orow = (int64_t)eng->lay.q_local * (eng->m.v_head_dim + 1);
        if (qkv > INT32_MAX || orow > INT32_MAX || 2 * (int64_t)eng->lay.ffn_count > INT32_MAX)
            return hlx_engine_fail(err, errlen, HLX_ERR_INVALID,
                                   "sizes overflow: model %s gives a rank %lld QKV columns "
                                   "(%d query heads x head_dim %d + %d KV heads x (%d + %d)), "
                                   "beyond 2^31 - 1", eng->m.name, (long long)qkv,
                                   eng->lay.q_local, eng->m.head_dim, eng->lay.kv_local,
                                   eng->m.head_dim, eng->m.v_head_dim);
        eng->qkv_cols = eng->m.attn == HLX_ATTN_MLA ? 0 : (int)qkv; /* MLA: hlx_mla_t */
    }
    if (eng->m.attn == HLX_ATTN_MLA &&
        (st = hlx_mla_check_sizes(&eng->m, cfg->batch, err, errlen)) != HLX_OK)
        return st;
    hlx_mla_kv_dims(&eng->m, &eng->kv_dk, &eng->kv_dv, &eng->xdv);
    eng->xpw = hlx_layout_piece_dim(&eng->lay, eng->xdv);
    /* a request's longest sequence: the synthetic context, the longest prompt, every step */
    seq = cfg->context + hlx_run_prompt_max(cfg) + cfg->steps;
    eng->cap = hlx_layout_kv_count(&eng->lay, eng->lay.kvp_rank, seq);
    if (eng->cap < 1)
        eng->cap = 1;
    /* longrope's factor set for the whole run, before the model is hashed (config.c) and
     * its frequencies computed (hlx_engine_build); the reference picks from its own length */
    hlx_model_rope_select(&eng->m, seq);
    if (eng->m.rope_kind == HLX_ROPE_LONGROPE)
        hlx_info(HLX_SUB_CORE, "longrope: %s_factor for the run (sequences of up to %lld "
                 "positions, original_max_position_embeddings %d)",
                 eng->m.rope_long ? "long" : "short", (long long)seq, eng->m.rope_orig_ctx);
    return HLX_OK;
}

/* PMIx (or a world of one), then the job's layout. On an error of the layout that every
 * rank meets alike, ranks above 0 leave err empty. */
static hlx_status_t hlx_engine_bootstrap(hlx_engine_t *eng, hlx_comm_params_t *cp, char *err,
                                         size_t errlen)
{
    const hlx_run_config_t *cfg = &eng->cfg;
    hlx_status_t st;

    hlx_comm_params_default(cp);
    if (cfg->timeout_s > 0)
        cp->timeout_s = cfg->timeout_s;
    st = hlx_boot_init(cp->timeout_s, &eng->boot);
    if (st != HLX_OK)
        return hlx_engine_fail(err, errlen, st, "bootstrap through PMIx failed: %s",
                               hlx_status_str(st));
    hlx_boot_get_info(eng->boot, &eng->info);
    hlx_log_set_rank(eng->info.rank);
    st = hlx_engine_job(eng, err, errlen);
    /* What follows from the command line, the model and the job's size alone fails alike
     * on every rank: rank 0 says it (srun and mpirun collapse no lines; helixrun's
     * collapsing then has one line to show) */
    if (st != HLX_OK && eng->info.rank > 0 && errlen > 0)
        err[0] = '\0';
    return st;
}

/* The group of the TPA shards at this rank's KVP index (world ranks t * KVP + kvp_rank):
 * sums over the parts of one replicated projection (OLMo 2's q and k norms). */
static hlx_status_t hlx_engine_tpa_comm(hlx_engine_t *eng, char *err, size_t errlen)
{
    const int kvp = eng->lay.kvp, tpa = eng->lay.tpa;
    int *ranks = malloc(sizeof(int) * (size_t)tpa), t;
    hlx_status_t st;

    if (ranks == NULL)
        return HLX_ERR_NOMEM;
    for (t = 0; t < tpa; t++)
        ranks[t] = t * kvp + eng->lay.kvp_rank;
    st = hlx_comm_sub(eng->world, ranks, tpa, &eng->tpa_comm);
    free(ranks);
    if (st != HLX_OK)
        return hlx_engine_fail(err, errlen, st, "creating the TPA group failed: %s",
                               hlx_status_str(st));
    return HLX_OK;
}

static hlx_status_t hlx_engine_connect(hlx_engine_t *eng, const hlx_comm_params_t *cp,
                                       char *err, size_t errlen)
{
    int *ranks, j, kvp = eng->cfg.kvp;
    hlx_comm_params_t p = *cp;
    hlx_link_t *links = NULL;
    hlx_status_t st;

    /* Each peer's transport backend (and a tcp peer's message size) follows its link class
     * in the job-wide placement, the same on every rank: a rank that cannot read its row
     * fails rather than fall back to classes of its own. */
    if (eng->place != NULL) {
        if ((links = calloc((size_t)eng->info.size, sizeof(*links))) == NULL)
            return hlx_engine_fail(err, errlen, HLX_ERR_NOMEM, "no memory for %d link "
                                   "classes", eng->info.size);
        if (hlx_place_links(eng->place, eng->info.rank, links) != eng->info.size) {
            free(links);
            return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "rank %d: the placement "
                                   "gives no link class for every rank", eng->info.rank);
        }
        p.links = links;
    }
    st = hlx_comm_world(eng->boot, &p, &eng->world);
    free(links);
    if (st != HLX_OK)
        return hlx_engine_fail(err, errlen, st, "creating the communicator failed: %s",
                               hlx_status_str(st));
    ranks = malloc(sizeof(int) * (size_t)kvp);
    if (ranks == NULL)
        return HLX_ERR_NOMEM;
    for (j = 0; j < kvp; j++)
        ranks[j] = eng->lay.tpa_rank * kvp + j;
    st = hlx_comm_sub(eng->world, ranks, kvp, &eng->kvp_comm);
    free(ranks);
    if (st != HLX_OK)
        return hlx_engine_fail(err, errlen, st, "creating the KVP group failed: %s",
                               hlx_status_str(st));
    if (eng->m.qk_norm_proj && eng->lay.tpa > 1) /* the TPA shards of this rank's KVP index */
        return hlx_engine_tpa_comm(eng, err, errlen);
    return HLX_OK;
}

static hlx_status_t hlx_engine_alloc(hlx_engine_t *eng, char *err, size_t errlen)
{
    hlx_status_t st = hlx_engine_device(eng, err, errlen);
    int j;

    if (st != HLX_OK)
        return st;
    st = hlx_engine_build(eng);
    if (st == HLX_OK)
        st = hlx_engine_buffers(eng);
    if (st != HLX_OK && eng->errmsg[0])
        return hlx_engine_fail(err, errlen, st, "reading weights: %s", eng->errmsg);
    if (st != HLX_OK)
        return hlx_engine_fail(err, errlen, st, "allocating weights and KV failed");
    /* the start-up memory check against what the load allocated (the same walks) */
    if (eng->w_bytes > eng->mem_proj)
        hlx_warn("the projections take %llu bytes on rank %d, more than the %llu the "
                 "start-up memory check counted", (unsigned long long)eng->w_bytes,
                 eng->info.rank, (unsigned long long)eng->mem_proj);
    hlx_info(HLX_SUB_CORE, "weights: the projections take %llu bytes (%d of them packed), "
             "the start-up memory check counted %llu", (unsigned long long)eng->w_bytes,
             eng->wq_packed, (unsigned long long)eng->mem_proj);
    for (j = 0; j < eng->cfg.batch; j++)
        eng->tokens[j] = hlx_synth_token0(&eng->m, eng->cfg.seed, j);
    eng->pos = eng->cfg.context;
    /* The schedule: off = lockstep; on with --micro-batch = that size; otherwise the first
     * step runs lockstep and hlx_schedule_decide picks the size from its timings. */
    eng->mb = eng->cfg.batch;
    if (eng->cfg.hopb == HLX_HOPB_ON && eng->cfg.micro_batch > 0)
        eng->mb = eng->cfg.micro_batch;
    eng->hopb_decided = eng->cfg.hopb == HLX_HOPB_OFF || eng->cfg.batch == 1 ||
                        (eng->cfg.hopb == HLX_HOPB_ON && eng->cfg.micro_batch > 0);
    if (eng->cfg.hopb == HLX_HOPB_AUTO && eng->cfg.micro_batch > 0) {
        eng->mb = eng->cfg.micro_batch;
        eng->hopb_decided = 1;
    } else if (eng->cfg.hopb == HLX_HOPB_AUTO && eng->oversub && !eng->hopb_decided &&
               eng->cfg.kvp > 1) {
        /* Ranks taking turns on a core cannot hide an exchange behind attention: the peer
         * it waits for runs only when this rank stops, and each extra micro-batch adds a
         * wait for that turn (4 ranks on 2 cores, 4K, batch 8: 2.2 ms against 1.3
         * lockstep, docs/planner.md). The first step's timings, taken after a barrier,
         * would not see it. */
        eng->hopb_decided = 1;
        eng->hopb_oversub = 1;
        if (eng->info.rank == 0)
            hlx_info(HLX_SUB_CORE, "hopb auto: %d rank%s (%d thread%s) on %d CPU%s of one "
                     "machine take turns on the cores: lockstep", eng->job_ranks,
                     eng->job_ranks == 1 ? "" : "s", eng->job_threads,
                     eng->job_threads == 1 ? "" : "s", eng->job_cpus,
                     eng->job_cpus == 1 ? "" : "s");
    }
    return HLX_OK;
}

hlx_status_t hlx_engine_create(const hlx_run_config_t *cfg, const hlx_model_t *model,
                               hlx_engine_t **eng_p, char *err, size_t errlen)
{
    hlx_engine_t *eng;
    hlx_comm_params_t cp;
    hlx_status_t st;
    uint64_t need = 0;

    eng = calloc(1, sizeof(*eng));
    if (eng == NULL)
        return HLX_ERR_NOMEM;
    eng->cfg      = *cfg;
    eng->m        = *model;
    eng->kv_dtype = cfg->kv_dtype_set ? cfg->kv_dtype : model->kv_dtype;
    /* fp8 checkpoint weights (with block scales) are dequantized to bf16 at load; a float16
     * checkpoint's model says bf16 (hlx_hf_held_default) */
    eng->w_dtype  = cfg->weight_dtype_set                 ? cfg->weight_dtype
                    : model->weight_dtype == HLX_DTYPE_FP8 ? HLX_DTYPE_BF16
                                                           : model->weight_dtype;
    eng->wp_dtype = eng->w_dtype;
    eng->kv_esize = (size_t)hlx_dtype_bytes(eng->kv_dtype);
    eng->w_esize  = (size_t)hlx_dtype_bytes(eng->w_dtype);
    st = hlx_engine_validate(eng, err, errlen);
    /* the command line, the model and the prompts, the same on every rank: a launcher's
     * rank above 0 leaves the message to rank 0 (before the bootstrap, by its variables) */
    if (st != HLX_OK && hlx_flags_quiet_rank() && errlen > 0)
        err[0] = '\0';
    if (st == HLX_OK)
        st = hlx_engine_backend(eng, err, errlen);
    if (st == HLX_OK) /* the checkpoint (validation) and the backend known: decided once */
        eng->wq = hlx_engine_wq_can(eng) && hlx_kernels_w_packed_for(&eng->be.k);
    if (st == HLX_OK)
        st = hlx_engine_bootstrap(eng, &cp, err, errlen);
    if (st == HLX_OK)
        st = hlx_engine_place(eng, err, errlen);
    /* Sizes and configuration, compared on every rank so that all fail the same way. */
    if (st == HLX_OK)
        st = hlx_engine_bytes(eng, &need, err, errlen);
    if (st == HLX_OK)
        st = hlx_engine_config_agree(eng, need, err, errlen);
    if (st == HLX_OK)
        st = hlx_engine_connect(eng, &cp, err, errlen);
    if (st == HLX_OK)
        st = hlx_engine_alloc(eng, err, errlen);
    if (st == HLX_OK)
        st = hlx_engine_nccl_open(eng, err, errlen);
    if (st != HLX_OK) {
        hlx_engine_destroy(eng);
        return st;
    }
    *eng_p = eng;
    return HLX_OK;
}

int hlx_engine_rank(const hlx_engine_t *eng)
{
    return eng->info.rank;
}

void hlx_engine_destroy(hlx_engine_t *eng)
{
    int l;

    if (eng == NULL)
        return;
    hlx_engine_nccl_close(eng); /* before the memory its operations used */
    hlx_check_free(eng->chk);
    hlx_fault_destroy(eng->fault);
    for (l = 0; eng->layers && l < eng->m.layers; l++) {
        hlx_layer_w_t *W = &eng->layers[l];
        hlx_be_free(eng, W->attn_norm); hlx_be_free(eng, W->ffn_norm);
        hlx_be_free(eng, W->wqkv); hlx_be_free(eng, W->wo);
        hlx_be_free(eng, W->wgu); hlx_be_free(eng, W->wdown);
        hlx_be_free(eng, W->bqkv); hlx_be_free(eng, W->qknorm); hlx_be_free(eng, W->post_norm);
        hlx_be_free(eng, W->sinks); hlx_be_free(eng, W->bo);
        hlx_be_free(eng, W->attn_norm_b); hlx_be_free(eng, W->ffn_norm_b);
        hlx_be_free(eng, W->bup); hlx_be_free(eng, W->bdown);
        free(W->k_scale); free(W->v_scale); free(W->kv_nan);
        if (W->kc)
            eng->be.ops->mem_free(&eng->be, W->kc, 1);
        if (W->vc)
            eng->be.ops->mem_free(&eng->be, W->vc, 1);
    }
    free(eng->layers);
    hlx_moe_destroy(eng);
    hlx_mla_destroy(eng);
    hlx_wsrc_fini(&eng->ws);
    hlx_kernels_free_huge(eng->embed);
    if (eng->embed_rows != NULL)
        eng->be.ops->pinned_free(&eng->be, eng->embed_rows);
    free(eng->rope_freq_h);
    free(eng->rope_cs);
    free(eng->rope_rows); free(eng->rope_rows_freq_h); free(eng->rope_rows_cs);
    free(eng->rope_rows_seq);
    {
        void *bufs[] = { eng->final_norm, eng->final_norm_b, eng->lmhead, eng->x, eng->hn, eng->qkv, eng->opart,
                         eng->lsepart, eng->sendbuf, eng->recvbuf, eng->oparts, eng->lseparts,
                         eng->omerged, eng->lsem, eng->y, eng->gu, eng->act, eng->lmout,
                         eng->logits_local, eng->logits_all, eng->rope_freq,
                         eng->rope_rows_freq, eng->win_k, eng->win_v, eng->win_o,
                         eng->win_lse, eng->rope_local_freq, eng->dca_q, eng->dca_o,
                         eng->dca_lse, eng->qk_ss };
        size_t i;
        for (i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
            hlx_be_free(eng, bufs[i]);
    }
    free(eng->xh_first); free(eng->xh_count); free(eng->xs_displ); free(eng->xr_displ);
    free(eng->a2a_sc); free(eng->a2a_sd); free(eng->a2a_rc); free(eng->a2a_rd);
    free(eng->reqs); free(eng->tl);
    free(eng->tokens); free(eng->all_tokens); free(eng->prefill_tokens); free(eng->sample_buf);
    free(eng->roff);
    if (eng->tpa_comm)
        hlx_comm_destroy(eng->tpa_comm);
    if (eng->kvp_comm)
        hlx_comm_destroy(eng->kvp_comm);
    if (eng->world)
        hlx_comm_destroy(eng->world);
    if (eng->boot)
        hlx_boot_fini(eng->boot);
    if (eng->be.ops) {
        eng->be.ops->queue_destroy(&eng->be, eng->q);
        hlx_backend_fini(&eng->be);
    }
    hlx_placement_free(eng->place);
    hlx_topo_free(eng->topo);
    free(eng);
}

/* ---- accessors (hlx_engine_view.h) */

const hlx_model_t *hlx_engine_model(const hlx_engine_t *eng) { return &eng->m; }
const char *hlx_engine_ckpt_head_unused(const hlx_engine_t *eng)
{
    return eng->ws.cfg.lm_head_unused;
}
const hlx_layout_t *hlx_engine_layout(const hlx_engine_t *eng) { return &eng->lay; }
const hlx_run_config_t *hlx_engine_config(const hlx_engine_t *eng) { return &eng->cfg; }
hlx_dtype_t hlx_engine_kv_dtype(const hlx_engine_t *eng) { return eng->kv_dtype; }
hlx_dtype_t hlx_engine_w_dtype(const hlx_engine_t *eng) { return eng->w_dtype; }
hlx_comm_t *hlx_engine_world(const hlx_engine_t *eng) { return eng->world; }
int hlx_engine_size(const hlx_engine_t *eng) { return eng->info.size; }
const char *hlx_engine_host(const hlx_engine_t *eng) { return eng->info.host ? eng->info.host : "?"; }
int hlx_engine_step_index(const hlx_engine_t *eng) { return eng->step; }
const float *hlx_engine_hidden(const hlx_engine_t *eng) { return eng->x; }
const int *hlx_engine_tokens(const hlx_engine_t *eng) { return eng->tokens; }
int64_t hlx_engine_kv_len(const hlx_engine_t *eng) { return eng->kv_len; }
int hlx_engine_kv_dim(const hlx_engine_t *eng, int is_key) { return is_key ? eng->kv_dk : eng->kv_dv; }

int64_t hlx_engine_kv_ring(const hlx_engine_t *eng, int l)
{
    return (int64_t)hlx_kv_ring(eng, l);
}

float hlx_engine_kv_load(const hlx_engine_t *eng, int l, int is_key, size_t shard, size_t t,
                         int e)
{
    const char *c = is_key ? eng->layers[l].kc : eng->layers[l].vc;
    hlx_engine_t *me = (hlx_engine_t *)eng; /* the backend's copy is not const */
    unsigned char v[8] = { 0 };

    /* KV memory is the backend's: read back through copy_from, never dereferenced */
    if (me->be.ops->copy_from(&me->be, me->q, v,
                              c + hlx_kv_shard_index(eng, l, is_key, shard, t, e) * eng->kv_esize,
                              eng->kv_esize) != HLX_OK)
        return NAN;
    /* the value the slot stands for: fp8 KV-cache scales stored x / scale */
    return hlx_dtype_load(v, eng->kv_dtype, 0) *
           (is_key ? eng->layers[l].k_scale
                   : eng->layers[l].v_scale)[shard % (size_t)eng->lay.kv_local];
}

void hlx_engine_set_errmsg(hlx_engine_t *eng, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(eng->errmsg, sizeof(eng->errmsg), fmt, ap);
    va_end(ap);
}

/* Full logits of request b, value v (from the all-gather). */
float hlx_engine_logit(const hlx_engine_t *eng, int b, int v)
{
    const hlx_layout_t *L = &eng->lay;
    int r = 0;

    while (r + 1 < L->n && (int)((int64_t)eng->m.vocab * (r + 1) / L->n) <= v)
        r++;
    return eng->logits_all[((size_t)r * eng->cfg.batch + b) * L->vocab_pad +
                           (size_t)(v - (int)((int64_t)eng->m.vocab * r / L->n))];
}
