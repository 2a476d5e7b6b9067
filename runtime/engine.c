/* The Helix engine: bootstrap, layout and configuration checks, weight and KV shards, and
 * the decode step (QKV for the TPA shard, attention on the local KV shard, one all-to-all
 * over the query-head axis inside the KVP group, exact LSE merge, W_o at TP=N + all-reduce,
 * SwiGLU FFN at TPF=N + all-reduce, final norm, LM head and logits all-gather). */
#define _GNU_SOURCE
#include "hlx_engine_int.h"

#include "hlx_config.h"
#include "hlx_log.h"
#include "hlx_synth.h"
#include "hlx_time.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

/* Settings of the runtime (HELIX_<NAME>), stored in hlx_engine_t.set. */
typedef struct { char bind[HLX_PARAM_STRLEN]; } hlx_runtime_settings_t;

static const hlx_param_t hlx_runtime_params[] = {
    { "BIND", HLX_PT_STRING, "auto", 0, 0, offsetof(hlx_runtime_settings_t, bind),
      "bind each rank to the cores of its placement: auto (when every rank is on this host "
      "and there are no more ranks than cores), on, off" },
};

static const hlx_param_table_t hlx_runtime_table = {
    "runtime", hlx_runtime_params, sizeof(hlx_runtime_params) / sizeof(hlx_runtime_params[0]),
    sizeof(hlx_runtime_settings_t),
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
    cfg->timeout_s = 0.0; /* transport default (HELIX_COMM_TIMEOUT) */
    strcpy(cfg->kernels, "auto");
}

hlx_status_t hlx_engine_fail(char *err, size_t errlen, hlx_status_t st, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return st;
}

/* ---- configuration record: compared across ranks at init (reliability fault 6). */

typedef struct hlx_cfg_record {
    char     version[16];
    char     model[64];
    uint64_t model_hash;
    int64_t  context;
    uint64_t seed;
    int32_t  kvp, tpa, batch, steps, kv_block, check, kv_dtype, weight_dtype;
    int32_t  pid;
    char     host[64];
    uint64_t mem_need, mem_avail;
    uint64_t comm_settings;  /* hash of every HELIX_COMM_* value this rank runs with */
} hlx_cfg_record_t;

/* Hash of the transport's settings as this rank sees them: ranks on different paths of
 * the same collective (HELIX_COMM_ALLREDUCE_SMALL, say) must be refused, not mixed. */
static uint64_t hlx_comm_settings_hash(void)
{
    const hlx_param_table_t *t = &hlx_comm_param_table;
    unsigned char *vals = calloc(1, t->size);
    uint64_t h = 0x5e77;
    size_t i;

    if (vals == NULL || hlx_param_load(t, vals, NULL) != HLX_OK) {
        free(vals);
        return 0;
    }
    for (i = 0; i < t->size; i++)
        h = hlx_mix64(h ^ vals[i]);
    free(vals);
    return h;
}

static uint64_t hlx_model_hash(const hlx_model_t *m)
{
    const int64_t f[] = { m->attn, m->layers, m->hidden, m->q_heads, m->kv_heads,
                          m->head_dim, m->v_head_dim, m->ffn, m->vocab, m->rope_dim,
                          (int64_t)(m->rope_theta * 1000), (int64_t)(m->norm_eps * 1e12),
                          m->weight_dtype, m->kv_dtype };
    uint64_t h = 0x1234;
    size_t i;

    for (i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        h = hlx_mix64(h ^ (uint64_t)f[i]);
    return h;
}

static hlx_status_t hlx_engine_compare(hlx_engine_t *eng, const hlx_cfg_record_t *all,
                                       char *err, size_t errlen)
{
    const hlx_cfg_record_t *me = &all[eng->info.rank];
    int r;

#define HLX_CMP_INT(_f, _name) \
    if (all[r]._f != me->_f) \
        return hlx_engine_fail(err, errlen, HLX_ERR_MISMATCH, "%s: local %lld, rank %d (%s pid %d) has %lld", \
                        _name, (long long)me->_f, r, all[r].host, all[r].pid, (long long)all[r]._f)

    for (r = 0; r < eng->info.size; r++) {
        if (strcmp(all[r].version, me->version))
            return hlx_engine_fail(err, errlen, HLX_ERR_MISMATCH, "version: local %s, rank %d has %s",
                            me->version, r, all[r].version);
        if (strcmp(all[r].model, me->model) || all[r].model_hash != me->model_hash)
            return hlx_engine_fail(err, errlen, HLX_ERR_MISMATCH,
                            "model: local %s (hash %016llx), rank %d has %s (hash %016llx)",
                            me->model, (unsigned long long)me->model_hash, r, all[r].model,
                            (unsigned long long)all[r].model_hash);
        HLX_CMP_INT(kvp, "kvp");
        HLX_CMP_INT(tpa, "tpa");
        HLX_CMP_INT(batch, "batch");
        HLX_CMP_INT(context, "context");
        HLX_CMP_INT(steps, "steps");
        HLX_CMP_INT(kv_block, "kv-block");
        HLX_CMP_INT(seed, "seed");
        HLX_CMP_INT(check, "check");
        HLX_CMP_INT(kv_dtype, "kv-dtype");
        HLX_CMP_INT(weight_dtype, "weight-dtype");
        if (all[r].comm_settings != me->comm_settings)
            return hlx_engine_fail(err, errlen, HLX_ERR_MISMATCH,
                                   "transport settings: rank %d (%s pid %d) runs with other "
                                   "HELIX_COMM_* values than this rank: compare `helix info` "
                                   "in both environments", r, all[r].host, all[r].pid);
    }
#undef HLX_CMP_INT
    for (r = 0; r < eng->info.size; r++)
        if (all[r].mem_need > all[r].mem_avail)
            return hlx_engine_fail(err, errlen, HLX_ERR_NOSPACE,
                            "rank %d (%s) needs %.2f GiB (weights, KV shard of %lld context "
                            "tokens%s) but %.2f GiB are available per rank on its node: use "
                            "a larger --kvp, more nodes or a shorter --context",
                            r, all[r].host, all[r].mem_need / 1073741824.0,
                            (long long)me->context, me->check && r == 0 ? ", fp64 reference" : "",
                            all[r].mem_avail / 1073741824.0);
    return HLX_OK;
}

static uint64_t hlx_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kb = 0;

    if (f == NULL)
        return UINT64_MAX;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return kb ? (uint64_t)kb * 1024 : UINT64_MAX;
}

/* ---- weights and KV */

static void *hlx_zalloc(size_t n, size_t size)
{
    return calloc(n ? n : 1, size);
}


/* Copies columns [c0, c0 + nc) of global tensor t [rows][cols] into dst[rows][ld] at
 * column offset dc. */
static void hlx_fill_cols(hlx_engine_t *eng, void *dst, int64_t ld, int64_t dc, uint64_t key,
                          hlx_tensor_t t, int64_t rows, int64_t cols, int64_t c0, int64_t nc)
{
    int64_t r, c;

    for (r = 0; r < rows; r++)
        for (c = 0; c < nc; c++)
            hlx_dtype_store(dst, eng->w_dtype, (size_t)(r * ld + dc + c),
                      hlx_synth_weight(&eng->m, key, t, r, c0 + c, cols));
}

static void hlx_fill_vec(const hlx_model_t *m, float *dst, uint64_t key, hlx_tensor_t t,
                         int64_t n)
{
    int64_t i;

    for (i = 0; i < n; i++)
        dst[i] = hlx_synth_weight(m, key, t, 0, i, n);
}

static hlx_status_t hlx_engine_build(hlx_engine_t *eng)
{
    const hlx_model_t *m = &eng->m;
    const hlx_layout_t *L = &eng->lay;
    int64_t H = m->hidden, dk = m->head_dim, dv = m->v_head_dim, Q = m->q_heads,
            K = m->kv_heads, F = m->ffn, V = m->vocab, Fc = L->ffn_count, B = eng->cfg.batch;
    int l, b, kh;
    int64_t p, jrow, e;

    eng->layers = calloc((size_t)m->layers, sizeof(*eng->layers));
    if (eng->layers == NULL)
        return HLX_ERR_NOMEM;
    for (l = 0; l < m->layers; l++) {
        hlx_layer_w_t *W = &eng->layers[l];
        size_t shards = (size_t)B * (size_t)L->kv_local;
        const int kb = eng->k.kv_layout.k_block, vb = eng->k.kv_layout.v_block;
        const size_t ke = hlx_kv_elems(kb, dk, (size_t)eng->cap), ve = hlx_kv_elems(vb, dv, (size_t)eng->cap);
        uint64_t kk, vk;

        W->attn_norm = malloc(sizeof(float) * (size_t)H);
        W->ffn_norm  = malloc(sizeof(float) * (size_t)H);
        W->wqkv      = hlx_zalloc((size_t)(H * eng->qkv_cols), eng->w_esize);
        W->wo        = hlx_zalloc((size_t)(L->q_slice * dv * H), eng->w_esize);
        W->wgu       = hlx_zalloc((size_t)(H * 2 * Fc), eng->w_esize);
        W->wdown     = hlx_zalloc((size_t)(Fc * H), eng->w_esize);
        /* The KV shard is the big, streamed allocation: 2 MiB aligned, huge pages. */
        W->kc        = hlx_kernels_alloc_huge(shards * ke * eng->kv_esize);
        W->vc        = hlx_kernels_alloc_huge(shards * ve * eng->kv_esize);
        if (!W->attn_norm || !W->ffn_norm || !W->wqkv || !W->wo || !W->wgu || !W->wdown ||
            !W->kc || !W->vc)
            return HLX_ERR_NOMEM;
        hlx_fill_vec(m, W->attn_norm, hlx_synth_key(eng->cfg.seed, l, HLX_T_ATTN_NORM), HLX_T_ATTN_NORM, H);
        hlx_fill_vec(m, W->ffn_norm, hlx_synth_key(eng->cfg.seed, l, HLX_T_FFN_NORM), HLX_T_FFN_NORM, H);
        hlx_fill_cols(eng, W->wqkv, eng->qkv_cols, 0, hlx_synth_key(eng->cfg.seed, l, HLX_T_WQ),
                      HLX_T_WQ, H, Q * dk, (int64_t)L->q_first * dk, (int64_t)L->q_local * dk);
        hlx_fill_cols(eng, W->wqkv, eng->qkv_cols, (int64_t)L->q_local * dk,
                      hlx_synth_key(eng->cfg.seed, l, HLX_T_WK), HLX_T_WK, H, K * dk,
                      (int64_t)L->kv_first * dk, (int64_t)L->kv_local * dk);
        hlx_fill_cols(eng, W->wqkv, eng->qkv_cols, (int64_t)(L->q_local + L->kv_local) * dk,
                      hlx_synth_key(eng->cfg.seed, l, HLX_T_WV), HLX_T_WV, H, K * dv,
                      (int64_t)L->kv_first * dv, (int64_t)L->kv_local * dv);
        /* W_o rows of this rank's head slice. */
        for (jrow = 0; jrow < (int64_t)L->q_slice * dv; jrow++)
            for (e = 0; e < H; e++)
                hlx_dtype_store(W->wo, eng->w_dtype, (size_t)(jrow * H + e),
                          hlx_synth_weight(m, hlx_synth_key(eng->cfg.seed, l, HLX_T_WO), HLX_T_WO,
                                           (int64_t)L->q_slice_first * dv + jrow, e, H));
        hlx_fill_cols(eng, W->wgu, 2 * Fc, 0, hlx_synth_key(eng->cfg.seed, l, HLX_T_WGATE),
                      HLX_T_WGATE, H, F, L->ffn_first, Fc);
        hlx_fill_cols(eng, W->wgu, 2 * Fc, Fc, hlx_synth_key(eng->cfg.seed, l, HLX_T_WUP),
                      HLX_T_WUP, H, F, L->ffn_first, Fc);
        for (jrow = 0; jrow < Fc; jrow++)
            for (e = 0; e < H; e++)
                hlx_dtype_store(W->wdown, eng->w_dtype, (size_t)(jrow * H + e),
                          hlx_synth_weight(m, hlx_synth_key(eng->cfg.seed, l, HLX_T_WDOWN),
                                           HLX_T_WDOWN, L->ffn_first + jrow, e, H));
        /* Synthetic prior context: position p lives on KVP rank (p / block) % KVP. */
        kk = hlx_synth_key(eng->cfg.seed, l, HLX_T_KCTX);
        vk = hlx_synth_key(eng->cfg.seed, l, HLX_T_VCTX);
        for (b = 0; b < B; b++)
            for (kh = 0; kh < L->kv_local; kh++) {
                size_t shard = (size_t)b * L->kv_local + kh, j = 0;
                for (p = 0; p < eng->cfg.context; p++) {
                    if (hlx_layout_kv_owner(L, p) != L->kvp_rank)
                        continue;
                    for (e = 0; e < dk; e++)
                        hlx_dtype_store(W->kc, eng->kv_dtype, shard * ke + hlx_kv_index(kb, dk, j, (int)e),
                                  hlx_synth_ctx(kk, b, (int)K, L->kv_first + kh, p, (int)e, (int)dk, 1));
                    for (e = 0; e < dv; e++)
                        hlx_dtype_store(W->vc, eng->kv_dtype, shard * ve + hlx_kv_index(vb, dv, j, (int)e),
                                  hlx_synth_ctx(vk, b, (int)K, L->kv_first + kh, p, (int)e, (int)dv, 0));
                    j++;
                }
            }
    }
    eng->kv_len     = hlx_layout_kv_count(L, L->kvp_rank, eng->cfg.context);
    eng->embed      = malloc(sizeof(float) * (size_t)(V * H));
    eng->final_norm = malloc(sizeof(float) * (size_t)H);
    eng->lmhead     = hlx_zalloc((size_t)(H * L->vocab_count), eng->w_esize);
    if (!eng->embed || !eng->final_norm || !eng->lmhead)
        return HLX_ERR_NOMEM;
    for (p = 0; p < V; p++)
        for (e = 0; e < H; e++)
            eng->embed[p * H + e] = hlx_synth_weight(m, hlx_synth_key(eng->cfg.seed, 0, HLX_T_EMBED),
                                                     HLX_T_EMBED, p, e, H);
    hlx_fill_vec(m, eng->final_norm, hlx_synth_key(eng->cfg.seed, 0, HLX_T_FINAL_NORM),
                 HLX_T_FINAL_NORM, H);
    hlx_fill_cols(eng, eng->lmhead, L->vocab_count, 0, hlx_synth_key(eng->cfg.seed, 0, HLX_T_LMHEAD),
                  HLX_T_LMHEAD, H, V, L->vocab_first, L->vocab_count);
    return HLX_OK;
}

static hlx_status_t hlx_engine_buffers(hlx_engine_t *eng)
{
    const hlx_layout_t *L = &eng->lay;
    size_t B = (size_t)eng->cfg.batch, H = (size_t)eng->m.hidden, dv = (size_t)eng->m.v_head_dim;
    size_t blk = B * (size_t)L->q_slice * (dv + 1); /* floats per peer in the all-to-all */
    int j;

#define HLX_ALLOC(_p, _n) \
    if (((_p) = hlx_zalloc((_n), sizeof(*(_p)))) == NULL) \
        return HLX_ERR_NOMEM
    HLX_ALLOC(eng->x, B * H);
    HLX_ALLOC(eng->hn, B * H);
    HLX_ALLOC(eng->qkv, B * (size_t)eng->qkv_cols);
    HLX_ALLOC(eng->opart, B * (size_t)L->q_local * dv);
    HLX_ALLOC(eng->lsepart, B * (size_t)L->q_local);
    HLX_ALLOC(eng->sendbuf, blk * (size_t)L->kvp);
    HLX_ALLOC(eng->recvbuf, blk * (size_t)L->kvp);
    HLX_ALLOC(eng->oparts, B * (size_t)L->q_slice * dv * (size_t)L->kvp);
    HLX_ALLOC(eng->lseparts, B * (size_t)L->q_slice * (size_t)L->kvp);
    HLX_ALLOC(eng->omerged, B * (size_t)L->q_slice * dv);
    HLX_ALLOC(eng->lsem, B * (size_t)L->q_slice);
    HLX_ALLOC(eng->y, B * H);
    HLX_ALLOC(eng->gu, B * 2 * (size_t)L->ffn_count);
    HLX_ALLOC(eng->act, B * (size_t)L->ffn_count);
    HLX_ALLOC(eng->lmout, B * (size_t)L->vocab_count);
    HLX_ALLOC(eng->logits_local, B * (size_t)L->vocab_pad);
    HLX_ALLOC(eng->logits_all, B * (size_t)L->vocab_pad * (size_t)L->n);
    HLX_ALLOC(eng->a2a_counts, (size_t)L->kvp);
    HLX_ALLOC(eng->a2a_displs, (size_t)L->kvp);
    HLX_ALLOC(eng->tokens, B);
    HLX_ALLOC(eng->all_tokens, B * (size_t)(eng->cfg.steps > 0 ? eng->cfg.steps : 1));
#undef HLX_ALLOC
    for (j = 0; j < L->kvp; j++) {
        eng->a2a_counts[j] = blk * sizeof(float);
        eng->a2a_displs[j] = (size_t)j * blk * sizeof(float);
    }
    return HLX_OK;
}

static uint64_t hlx_engine_bytes(const hlx_engine_t *eng, uint64_t *kv_p)
{
    const hlx_layout_t *L = &eng->lay;
    const hlx_model_t *m = &eng->m;
    uint64_t H = (uint64_t)m->hidden, dv = (uint64_t)m->v_head_dim;
    uint64_t rows = (uint64_t)eng->cfg.batch * (uint64_t)L->kv_local * (uint64_t)eng->cap;
    /* Each K and each V allocation of a layer is rounded up to a 2 MiB huge page. */
    uint64_t huge = 2u << 20;
    uint64_t kv = (uint64_t)m->layers *
                  ((rows * m->head_dim * eng->kv_esize + huge - 1) / huge * huge +
                   (rows * m->v_head_dim * eng->kv_esize + huge - 1) / huge * huge);
    uint64_t w = (uint64_t)m->layers *
                 ((uint64_t)H * (uint64_t)eng->qkv_cols + (uint64_t)L->q_slice * dv * H +
                  3 * H * (uint64_t)L->ffn_count) * eng->w_esize +
                 (uint64_t)m->vocab * H * 4 + H * (uint64_t)L->vocab_count * eng->w_esize;

    *kv_p = kv;
    return kv + w + (16u << 20);
}

/* Link class between this rank and its next KVP peer (all peers of a group share one
 * class on a single host). */
static const char *hlx_engine_a2a_link(const hlx_engine_t *eng)
{
    int peer = eng->lay.tpa_rank * eng->cfg.kvp + (eng->lay.kvp_rank + 1) % eng->cfg.kvp;

    return eng->cfg.kvp > 1 ? hlx_link_name(hlx_place_link(eng->place, eng->info.rank, peer))
                            : "self";
}

/* Places the ranks on this machine's topology (HELIX_TOPO_FILE or hwloc discovery) and
 * binds this rank to its cores when HELIX_BIND allows it. The placement's link classes
 * are reported; UCX itself picks shared memory for shm-class peers. */
static hlx_status_t hlx_engine_place(hlx_engine_t *eng, char *err, size_t errlen)
{
    hlx_topo_info_t ti;
    hlx_status_t st;
    int want;

    st = hlx_param_load(&hlx_runtime_table, &eng->set, NULL);
    if (st != HLX_OK)
        return hlx_engine_fail(err, errlen, st, "bad HELIX_BIND (auto, on, off)");
    if (strcmp(eng->set.bind, "auto") && strcmp(eng->set.bind, "on") &&
        strcmp(eng->set.bind, "off"))
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "HELIX_BIND=%s: expected auto, on or off",
                        eng->set.bind);
    st = hlx_topo_load(NULL, &eng->topo, err, errlen);
    if (st != HLX_OK)
        return st;
    st = hlx_place(NULL, eng->cfg.kvp, eng->cfg.tpa, 1, eng->topo, &eng->place, err, errlen);
    if (st != HLX_OK)
        return st;
    hlx_topo_get_info(eng->topo, &ti);
    want = !strcmp(eng->set.bind, "on") ||
           (!strcmp(eng->set.bind, "auto") && eng->info.local_size == eng->info.size &&
            eng->info.size <= ti.npus);
    if (want && ti.this_system) {
        st = hlx_topo_bind_self(eng->topo, eng->place, eng->info.rank);
        if (st != HLX_OK)
            return hlx_engine_fail(err, errlen, st, "binding rank %d to cpus %s failed",
                            eng->info.rank, eng->place->ranks[eng->info.rank].cpuset);
        eng->bound = eng->place->ranks[eng->info.rank].cpuset[0] != '\0';
    }
    hlx_info(HLX_SUB_TOPO, "rank %d: cpus %s%s, a2a peers over %s", eng->info.rank,
             eng->place->ranks[eng->info.rank].cpuset, eng->bound ? " (bound)" : "",
             hlx_engine_a2a_link(eng));
    return HLX_OK;
}

hlx_status_t hlx_engine_create(const hlx_run_config_t *cfg, const hlx_model_t *model,
                               hlx_engine_t **eng_p, char *err, size_t errlen)
{
    hlx_engine_t *eng;
    hlx_cfg_record_t rec, *all = NULL;
    hlx_comm_params_t cp;
    hlx_status_t st;
    int *ranks = NULL, j;
    uint64_t need, avail;

    if (cfg->batch < 1 || cfg->steps < 0 || cfg->context < 0 || cfg->kv_block < 1)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID,
                        "--batch and --kv-block must be >= 1, --steps and --context >= 0");
    if (cfg->context > ((int64_t)1 << 40))
        return hlx_engine_fail(err, errlen, HLX_ERR_NOSPACE, "--context %lld is beyond 2^40 tokens",
                        (long long)cfg->context);
    eng = calloc(1, sizeof(*eng));
    if (eng == NULL)
        return HLX_ERR_NOMEM;
    eng->cfg      = *cfg;
    eng->m        = *model;
    eng->kv_dtype = cfg->kv_dtype_set ? cfg->kv_dtype : model->kv_dtype;
    eng->w_dtype  = model->weight_dtype;
    if (eng->kv_dtype != HLX_DTYPE_F32 && eng->kv_dtype != HLX_DTYPE_BF16) {
        st = hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "kv dtype %s: the runtime stores KV in "
                      "f32 or bf16 (use --kv-dtype)", hlx_dtype_name(eng->kv_dtype));
        goto err_free;
    }
    if (eng->w_dtype != HLX_DTYPE_F32 && eng->w_dtype != HLX_DTYPE_BF16) {
        st = hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "model %s: weight dtype %s: the runtime "
                      "runs f32 or bf16 weights", model->name, hlx_dtype_name(eng->w_dtype));
        goto err_free;
    }
    eng->kv_esize = (size_t)hlx_dtype_bytes(eng->kv_dtype);
    eng->w_esize  = (size_t)hlx_dtype_bytes(eng->w_dtype);
    st = hlx_fault_parse(eng, getenv("HELIX_FAULT"), err, errlen);
    if (st != HLX_OK)
        goto err_free;
    /* Layout errors do not depend on the rank: report them before bootstrapping. */
    st = hlx_layout_init(model, cfg->kvp, cfg->tpa, cfg->kv_block, 0, &eng->lay, err, errlen);
    if (st != HLX_OK)
        goto err_free;
    st = hlx_kernels_init_kv(strcmp(cfg->kernels, "auto") ? cfg->kernels : NULL, eng->kv_dtype,
                             &eng->k);
    if (st != HLX_OK) {
        char why[256]; /* names --kernels or HELIX_KERNELS, whichever carried the value */
        hlx_kernels_init_error(strcmp(cfg->kernels, "auto") ? cfg->kernels : NULL, why,
                               sizeof(why));
        st = hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "%s", why);
        goto err_free;
    }
    hlx_comm_params_default(&cp);
    if (cfg->timeout_s > 0)
        cp.timeout_s = cfg->timeout_s;
    st = hlx_boot_init(cp.timeout_s, &eng->boot);
    if (st != HLX_OK) {
        hlx_engine_fail(err, errlen, st, "bootstrap through PMIx failed: %s", hlx_status_str(st));
        goto err_free;
    }
    hlx_boot_get_info(eng->boot, &eng->info);
    hlx_log_set_rank(eng->info.rank);
    if (eng->fault.kind != HLX_FAULT_NONE && eng->fault.rank >= eng->info.size) {
        st = hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "HELIX_FAULT: rank %d, but the job "
                             "has %d rank(s)", eng->fault.rank, eng->info.size);
        goto err_free;
    }
    if (eng->info.size != cfg->kvp * cfg->tpa) {
        st = hlx_engine_fail(err, errlen, HLX_ERR_INVALID,
                      "this job has %d rank(s) (%s) but --kvp %d x --tpa %d = %d: launch "
                      "with helixrun -n %d (or mpirun -n / srun -n) or change the layout",
                      eng->info.size, eng->info.launcher, cfg->kvp, cfg->tpa,
                      cfg->kvp * cfg->tpa, cfg->kvp * cfg->tpa);
        goto err_free;
    }
    st = hlx_layout_init(model, cfg->kvp, cfg->tpa, cfg->kv_block, eng->info.rank, &eng->lay,
                         err, errlen);
    if (st != HLX_OK)
        goto err_free;
    st = hlx_engine_place(eng, err, errlen);
    if (st != HLX_OK)
        goto err_free;
    eng->qkv_cols = eng->lay.q_local * model->head_dim +
                    eng->lay.kv_local * (model->head_dim + model->v_head_dim);
    eng->cap = hlx_layout_kv_count(&eng->lay, eng->lay.kvp_rank, cfg->context + cfg->steps);
    if (eng->cap < 1)
        eng->cap = 1;

    /* Configuration and memory, compared on every rank so all fail the same way. */
    need  = hlx_engine_bytes(eng, &eng->kv_bytes);
    if (cfg->check && eng->info.rank == 0)
        need += hlx_ref_bytes(model, cfg->batch, cfg->context, cfg->steps);
    avail = hlx_mem_available();
    memset(&rec, 0, sizeof(rec));
    snprintf(rec.version, sizeof(rec.version), "%s", HLX_VERSION);
    snprintf(rec.model, sizeof(rec.model), "%s", model->name);
    snprintf(rec.host, sizeof(rec.host), "%s", eng->info.host ? eng->info.host : "?");
    rec.model_hash   = hlx_model_hash(model);
    rec.context      = cfg->context;
    rec.seed         = cfg->seed;
    rec.kvp          = cfg->kvp;
    rec.tpa          = cfg->tpa;
    rec.batch        = cfg->batch;
    rec.steps        = cfg->steps;
    rec.kv_block     = cfg->kv_block;
    rec.check        = cfg->check;
    rec.kv_dtype     = eng->kv_dtype;
    rec.weight_dtype = eng->w_dtype;
    rec.pid          = (int32_t)getpid();
    rec.mem_need     = need;
    rec.comm_settings = hlx_comm_settings_hash();
    rec.mem_avail    = avail == UINT64_MAX ? avail
                                           : avail / (uint64_t)(eng->info.local_size > 0 ? eng->info.local_size : 1);
    all = calloc((size_t)eng->info.size, sizeof(*all));
    if (all == NULL) {
        st = HLX_ERR_NOMEM;
        goto err_free;
    }
    st = hlx_boot_allgather(eng->boot, "hlx.cfg", &rec, sizeof(rec), all);
    if (st != HLX_OK) {
        hlx_engine_fail(err, errlen, st, "exchanging the run configuration failed: %s",
                 hlx_status_str(st));
        goto err_free;
    }
    st = hlx_engine_compare(eng, all, err, errlen);
    if (st != HLX_OK)
        goto err_free;

    st = hlx_comm_world(eng->boot, &cp, &eng->world);
    if (st != HLX_OK) {
        hlx_engine_fail(err, errlen, st, "creating the communicator failed: %s", hlx_status_str(st));
        goto err_free;
    }
    ranks = malloc(sizeof(int) * (size_t)cfg->kvp);
    if (ranks == NULL) {
        st = HLX_ERR_NOMEM;
        goto err_free;
    }
    for (j = 0; j < cfg->kvp; j++)
        ranks[j] = eng->lay.tpa_rank * cfg->kvp + j;
    st = hlx_comm_sub(eng->world, ranks, cfg->kvp, &eng->kvp_comm);
    if (st != HLX_OK) {
        hlx_engine_fail(err, errlen, st, "creating the KVP group failed: %s", hlx_status_str(st));
        goto err_free;
    }
    st = hlx_engine_build(eng);
    if (st == HLX_OK)
        st = hlx_engine_buffers(eng);
    if (st != HLX_OK) {
        hlx_engine_fail(err, errlen, st, "allocating weights and KV failed");
        goto err_free;
    }
    if (cfg->check) {
        eng->check_hashes = calloc((size_t)eng->info.size, sizeof(uint64_t));
        if (eng->check_hashes == NULL) {
            st = HLX_ERR_NOMEM;
            goto err_free;
        }
    }
    for (j = 0; j < cfg->batch; j++)
        eng->tokens[j] = hlx_synth_token0(model, cfg->seed, j);
    eng->pos = cfg->context;
    free(ranks);
    free(all);
    *eng_p = eng;
    return HLX_OK;

err_free:
    free(ranks);
    free(all);
    hlx_engine_destroy(eng);
    return st;
}

int hlx_engine_rank(const hlx_engine_t *eng)
{
    return eng->info.rank;
}

/* ---- the decode step */

#define HLX_TIMED(_eng, _ph, ...) \
    do { \
        uint64_t _t0 = hlx_now_ns(); \
        __VA_ARGS__; \
        (_eng)->phase_ns[_ph] += hlx_now_ns() - _t0; \
    } while (0)

/* Sums the partial outputs y of all N ranks (TP = N) and adds them to the residual x. */
static hlx_status_t hlx_engine_residual(hlx_engine_t *eng, int l, hlx_phase_id_t ph)
{
    size_t n = (size_t)eng->cfg.batch * (size_t)eng->m.hidden, i;
    hlx_status_t st;

    HLX_TIMED(eng, ph, st = hlx_comm_allreduce_sum_f32(eng->world, eng->y, n));
    if (st != HLX_OK)
        return st;
    for (i = 0; i < n; i++)
        eng->x[i] += eng->y[i];
    return hlx_check_finite(eng, eng->x, n, "the hidden state", l);
}

static hlx_status_t hlx_engine_attention(hlx_engine_t *eng, int l)
{
    const hlx_layout_t *L = &eng->lay;
    const hlx_model_t *m = &eng->m;
    hlx_layer_w_t *W = &eng->layers[l];
    int B = eng->cfg.batch, dk = m->head_dim, dv = m->v_head_dim, b, kh, j;
    int own = hlx_layout_kv_owner(L, eng->pos) == L->kvp_rank;
    int64_t len = eng->kv_len + own;
    size_t blk = (size_t)B * L->q_slice * (size_t)(dv + 1);
    hlx_status_t st;

    HLX_TIMED(eng, HLX_PHASE_QKV, {
        for (b = 0; b < B; b++)
            eng->k.rmsnorm(eng->hn + (size_t)b * m->hidden, eng->x + (size_t)b * m->hidden,
                           W->attn_norm, m->hidden, (float)m->norm_eps);
        eng->k.gemm(B, eng->qkv_cols, m->hidden, eng->hn, W->wqkv, eng->w_dtype, eng->qkv, 0);
        for (b = 0; b < B; b++) {
            float *q = eng->qkv + (size_t)b * eng->qkv_cols;
            float *kn = q + (size_t)L->q_local * dk, *vn = kn + (size_t)L->kv_local * dk;
            eng->k.rope(q, L->q_local, dk, m->rope_dim, eng->pos, (float)m->rope_theta);
            eng->k.rope(kn, L->kv_local, dk, m->rope_dim, eng->pos, (float)m->rope_theta);
            if (!own || hlx_fault_active(eng, HLX_FAULT_SKIP_APPEND))
                continue;
            /* Staggered append: only the owner of this position stores the new token. */
            for (kh = 0; kh < L->kv_local; kh++) {
                size_t shard = (size_t)b * L->kv_local + kh, t = (size_t)eng->kv_len;
                int e;
                for (e = 0; e < dk; e++)
                    hlx_dtype_store(W->kc, eng->kv_dtype, hlx_kv_shard_index(eng, 1, shard, t, e),
                                    kn[(size_t)kh * dk + e]);
                for (e = 0; e < dv; e++)
                    hlx_dtype_store(W->vc, eng->kv_dtype, hlx_kv_shard_index(eng, 0, shard, t, e),
                                    vn[(size_t)kh * dv + e]);
            }
        }
    });

    HLX_TIMED(eng, HLX_PHASE_ATTN, {
        for (b = 0; b < B; b++)
            for (kh = 0; kh < L->kv_local; kh++) {
                size_t shard = (size_t)b * L->kv_local + kh;
                hlx_attn_desc_t d = {
                    .group = L->group, .dk = dk, .dv = dv, .len = (size_t)len,
                    .kv_dtype = eng->kv_dtype,
                    .q = eng->qkv + (size_t)b * eng->qkv_cols + (size_t)kh * L->group * dk,
                    .k = (const char *)W->kc + hlx_kv_shard_index(eng, 1, shard, 0, 0) * eng->kv_esize,
                    .v = (const char *)W->vc + hlx_kv_shard_index(eng, 0, shard, 0, 0) * eng->kv_esize,
                    .k_stride = (size_t)dk, .v_stride = (size_t)dv,
                    .scale = (float)(1.0 / sqrt((double)dk)),
                    .o = eng->opart + ((size_t)b * L->q_local + (size_t)kh * L->group) * dv,
                    .lse = eng->lsepart + (size_t)b * L->q_local + (size_t)kh * L->group,
                };
                eng->k.attn(&d);
            }
        if (hlx_fault_active(eng, HLX_FAULT_DROP_PARTIALS))
            for (j = 0; j < B * L->q_local; j++)
                eng->lsepart[j] = -INFINITY;
        if (hlx_fault_active(eng, HLX_FAULT_NAN))
            eng->opart[0] = NAN;
        /* Pack for the all-to-all: peer j gets heads [j*q_slice, (j+1)*q_slice) of this
         * TPA shard, as [B][q_slice][dv] partial outputs followed by [B][q_slice] LSEs. */
        for (j = 0; j < L->kvp; j++) {
            float *o = eng->sendbuf + (size_t)j * blk, *lse = o + (size_t)B * L->q_slice * dv;
            for (b = 0; b < B; b++) {
                size_t h0 = (size_t)b * L->q_local + (size_t)j * L->q_slice;
                memcpy(o + (size_t)b * L->q_slice * dv, eng->opart + h0 * dv,
                       sizeof(float) * (size_t)L->q_slice * dv);
                memcpy(lse + (size_t)b * L->q_slice, eng->lsepart + h0,
                       sizeof(float) * (size_t)L->q_slice);
            }
        }
    });

    HLX_TIMED(eng, HLX_PHASE_A2A,
              st = hlx_comm_alltoallv(eng->kvp_comm, eng->sendbuf, eng->a2a_counts,
                                      eng->a2a_displs, eng->recvbuf, eng->a2a_counts,
                                      eng->a2a_displs));
    if (st != HLX_OK)
        return st;

    HLX_TIMED(eng, HLX_PHASE_MERGE, {
        size_t nh = (size_t)B * L->q_slice;
        for (j = 0; j < L->kvp; j++) {
            const float *o = eng->recvbuf + (size_t)j * blk;
            memcpy(eng->oparts + (size_t)j * nh * dv, o, sizeof(float) * nh * dv);
            memcpy(eng->lseparts + (size_t)j * nh, o + nh * dv, sizeof(float) * nh);
        }
        eng->k.merge(L->kvp, (int)nh, dv, eng->oparts, eng->lseparts, eng->omerged, eng->lsem);
    });
    /* A NaN or Inf from a KVP peer is named with the peer that sent it, instead of
     * spreading as garbage. (An empty shard's LSE is -inf; its outputs are 0.) */
    for (j = 0; j < L->kvp; j++) {
        char what[96];
        snprintf(what, sizeof(what), "the attention partials received from rank %d",
                 L->tpa_rank * L->kvp + j);
        st = hlx_check_finite(eng, eng->oparts + (size_t)j * B * L->q_slice * dv,
                              (size_t)B * L->q_slice * dv, what, l);
        if (st != HLX_OK)
            return st;
    }

    HLX_TIMED(eng, HLX_PHASE_OPROJ,
              eng->k.gemm(B, m->hidden, L->q_slice * dv, eng->omerged, W->wo, eng->w_dtype,
                          eng->y, 0));
    return hlx_engine_residual(eng, l, HLX_PHASE_OPROJ_AR);
}

static hlx_status_t hlx_engine_ffn(hlx_engine_t *eng, int l)
{
    const hlx_model_t *m = &eng->m;
    hlx_layer_w_t *W = &eng->layers[l];
    int B = eng->cfg.batch, Fc = eng->lay.ffn_count, b;

    HLX_TIMED(eng, HLX_PHASE_FFN, {
        for (b = 0; b < B; b++)
            eng->k.rmsnorm(eng->hn + (size_t)b * m->hidden, eng->x + (size_t)b * m->hidden,
                           W->ffn_norm, m->hidden, (float)m->norm_eps);
        eng->k.gemm(B, 2 * Fc, m->hidden, eng->hn, W->wgu, eng->w_dtype, eng->gu, 0);
        for (b = 0; b < B; b++)
            eng->k.swiglu(eng->act + (size_t)b * Fc, eng->gu + (size_t)b * 2 * Fc,
                          eng->gu + (size_t)b * 2 * Fc + Fc, Fc);
        eng->k.gemm(B, m->hidden, Fc, eng->act, W->wdown, eng->w_dtype, eng->y, 0);
    });
    return hlx_engine_residual(eng, l, HLX_PHASE_FFN_AR);
}

/* Final norm, this rank's LM-head columns, all-gather of the logits, greedy argmax.
 * logits_all is [N][B][vocab_pad]; padding is -inf. */
static hlx_status_t hlx_engine_head(hlx_engine_t *eng)
{
    const hlx_layout_t *L = &eng->lay;
    const hlx_model_t *m = &eng->m;
    int B = eng->cfg.batch, b, r, v;
    hlx_status_t st;

    HLX_TIMED(eng, HLX_PHASE_HEAD, {
        for (b = 0; b < B; b++)
            eng->k.rmsnorm(eng->hn + (size_t)b * m->hidden, eng->x + (size_t)b * m->hidden,
                           eng->final_norm, m->hidden, (float)m->norm_eps);
        eng->k.gemm(B, L->vocab_count, m->hidden, eng->hn, eng->lmhead, eng->w_dtype,
                    eng->lmout, 0);
        for (b = 0; b < B; b++)
            for (v = 0; v < L->vocab_pad; v++)
                eng->logits_local[(size_t)b * L->vocab_pad + v] =
                    v < L->vocab_count ? eng->lmout[(size_t)b * L->vocab_count + v] : -INFINITY;
        st = hlx_check_finite(eng, eng->lmout, (size_t)B * L->vocab_count, "the logits",
                              m->layers);
        if (st == HLX_OK)
            st = hlx_comm_allgather(eng->world, eng->logits_local,
                                sizeof(float) * (size_t)B * L->vocab_pad, eng->logits_all);
        if (st == HLX_OK) {
            for (b = 0; b < B; b++) {
                float best = -INFINITY;
                int arg = 0;
                for (r = 0; r < L->n; r++) {
                    int first = (int)((int64_t)m->vocab * r / L->n);
                    int cnt = (int)((int64_t)m->vocab * (r + 1) / L->n) - first;
                    const float *lg = eng->logits_all + ((size_t)r * B + b) * L->vocab_pad;
                    for (v = 0; v < cnt; v++)
                        if (lg[v] > best) {
                            best = lg[v];
                            arg  = first + v;
                        }
                }
                eng->tokens[b] = arg;
            }
        }
    });
    return st;
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

static hlx_status_t hlx_engine_step(hlx_engine_t *eng)
{
    int B = eng->cfg.batch, H = eng->m.hidden, b, l;
    hlx_status_t st;

    if (hlx_fault_active(eng, HLX_FAULT_KILL))
        raise(SIGKILL);
    for (b = 0; b < B; b++)
        memcpy(eng->x + (size_t)b * H, eng->embed + (size_t)eng->tokens[b] * H,
               sizeof(float) * (size_t)H);
    for (l = 0; l < eng->m.layers; l++) {
        st = hlx_engine_attention(eng, l);
        if (st != HLX_OK)
            return st;
        st = hlx_engine_ffn(eng, l);
        if (st != HLX_OK)
            return st;
    }
    if (hlx_layout_kv_owner(&eng->lay, eng->pos) == eng->lay.kvp_rank)
        eng->kv_len++;
    eng->pos++;
    return hlx_engine_head(eng);
}

static int hlx_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double hlx_median(double *v, int n)
{
    if (n == 0)
        return 0.0;
    qsort(v, (size_t)n, sizeof(double), hlx_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

hlx_status_t hlx_engine_run(hlx_engine_t *eng, hlx_run_report_t *rep, char *err, size_t errlen)
{
    int steps = eng->cfg.steps, B = eng->cfg.batch, s, p, r;
    double *step_ms = calloc((size_t)(steps + 1), sizeof(double));
    double *ph_ms = calloc((size_t)(steps + 1) * HLX_PHASE_COUNT, sizeof(double));
    uint64_t *allkv = calloc((size_t)eng->info.size, sizeof(uint64_t)), kvb;
    hlx_status_t st = HLX_OK;

    memset(rep, 0, sizeof(*rep));
    rep->rank = eng->info.rank;
    rep->size = eng->info.size;
    snprintf(rep->launcher, sizeof(rep->launcher), "%s", eng->info.launcher);
    snprintf(rep->kernels, sizeof(rep->kernels), "%s", eng->k.name);
    snprintf(rep->transport, sizeof(rep->transport), "%s", hlx_comm_backend(eng->world));
    snprintf(rep->cpuset, sizeof(rep->cpuset), "%s", eng->place->ranks[eng->info.rank].cpuset);
    snprintf(rep->a2a_link, sizeof(rep->a2a_link), "%s", hlx_engine_a2a_link(eng));
    rep->steps          = steps;
    rep->tokens_match   = 1;
    rep->replicas_match = 1;
    rep->bound          = eng->bound;
    rep->tokens         = eng->all_tokens;
    if (!step_ms || !ph_ms || !allkv) {
        st = HLX_ERR_NOMEM;
        goto out;
    }
    if (eng->cfg.check) {
        st = hlx_check_prepare(eng, err, errlen);
        if (st != HLX_OK)
            goto out;
        rep->checked = eng->ref != NULL && steps > 0;
    }
    st = hlx_comm_barrier(eng->world);
    for (s = 0; s < steps && st == HLX_OK; s++) {
        uint64_t t0 = hlx_now_ns();
        memset(eng->phase_ns, 0, sizeof(eng->phase_ns));
        st = hlx_engine_step(eng);
        if (st != HLX_OK) {
            if (eng->errmsg[0])
                hlx_engine_fail(err, errlen, st, "%s", eng->errmsg);
            else
                hlx_engine_fail(err, errlen, st, "decode step %d failed on rank %d: %s", s,
                                eng->info.rank, hlx_status_str(st));
            break;
        }
        step_ms[s] = (double)(hlx_now_ns() - t0) * 1e-6;
        for (p = 0; p < HLX_PHASE_COUNT; p++)
            ph_ms[(size_t)p * steps + s] = (double)eng->phase_ns[p] * 1e-6;
        memcpy(eng->all_tokens + (size_t)s * B, eng->tokens, sizeof(int) * (size_t)B);
        if (eng->cfg.check)
            st = hlx_check_step(eng, s, rep);
        eng->step++;
        if (eng->cfg.verbose && eng->info.rank == 0)
            fprintf(stderr, "step %d: %.3f ms, tokens %d%s\n", s, step_ms[s], eng->tokens[0],
                    B > 1 ? " ..." : "");
    }
    if (st == HLX_OK && eng->cfg.check)
        st = hlx_check_kv_rows(eng, rep);
    if (st != HLX_OK) {
        if (!err[0])
            hlx_engine_fail(err, errlen, st, "decode failed: %s", hlx_status_str(st));
        goto out;
    }
    kvb = eng->kv_bytes;
    st = hlx_comm_allgather(eng->world, &kvb, sizeof(kvb), allkv);
    if (st != HLX_OK)
        goto out;
    rep->kv_bytes_rank = eng->kv_bytes;
    rep->kv_bytes_min = rep->kv_bytes_max = allkv[0];
    for (r = 1; r < eng->info.size; r++) {
        rep->kv_bytes_min = allkv[r] < rep->kv_bytes_min ? allkv[r] : rep->kv_bytes_min;
        rep->kv_bytes_max = allkv[r] > rep->kv_bytes_max ? allkv[r] : rep->kv_bytes_max;
    }
    rep->kv_tokens_rank = eng->kv_len;
    for (p = 0; p < HLX_PHASE_COUNT; p++)
        rep->phase_ms[p] = hlx_median(ph_ms + (size_t)p * steps, steps);
    if (steps > 0) {
        rep->step_ms_median = hlx_median(step_ms, steps); /* sorts step_ms */
        rep->step_ms_min    = step_ms[0];
        rep->step_ms_max    = step_ms[steps - 1];
        rep->tokens_per_s   = rep->step_ms_median > 0 ? B * 1000.0 / rep->step_ms_median : 0;
    }
    if (eng->cfg.check && !hlx_run_report_passed(rep, eng->cfg.check_tol))
        st = hlx_engine_fail(err, errlen, HLX_ERR_CHECK,
                             "check failed: max_rel_err %.3g (tolerance %.3g), tokens %s, "
                             "replicas %s, %d non-finite values, %lld of %lld appended KV "
                             "rows differ", rep->max_rel_err, eng->cfg.check_tol,
                             rep->tokens_match ? "match" : "differ",
                             rep->replicas_match ? "identical" : "differ", rep->nonfinite,
                             (long long)rep->kv_rows_bad, (long long)rep->kv_rows_checked);

out:
    free(step_ms);
    free(ph_ms);
    free(allkv);
    return st;
}

int hlx_run_report_passed(const hlx_run_report_t *rep, double tol)
{
    if (!rep->replicas_match)
        return 0;
    if (!rep->checked)
        return 1;
    return rep->tokens_match && rep->nonfinite == 0 && rep->kv_rows_bad == 0 &&
           rep->max_rel_err <= tol;
}

void hlx_engine_abort(hlx_engine_t *eng, int exit_code, const char *msg)
{
    fflush(stdout);
    fflush(stderr);
    if (eng->info.size > 1)
        hlx_boot_abort(eng->boot, exit_code, msg);
    _exit(exit_code);
}

void hlx_engine_destroy(hlx_engine_t *eng)
{
    int l;

    if (eng == NULL)
        return;
    hlx_check_free(eng);
    for (l = 0; eng->layers && l < eng->m.layers; l++) {
        hlx_layer_w_t *W = &eng->layers[l];
        free(W->attn_norm); free(W->ffn_norm); free(W->wqkv); free(W->wo);
        free(W->wgu); free(W->wdown);
        hlx_kernels_free_huge(W->kc);
        hlx_kernels_free_huge(W->vc);
    }
    free(eng->layers);
    free(eng->embed); free(eng->final_norm); free(eng->lmhead);
    free(eng->x); free(eng->hn); free(eng->qkv); free(eng->opart); free(eng->lsepart);
    free(eng->sendbuf); free(eng->recvbuf); free(eng->oparts); free(eng->lseparts);
    free(eng->omerged); free(eng->lsem); free(eng->y); free(eng->gu); free(eng->act); free(eng->lmout);
    free(eng->logits_local); free(eng->logits_all); free(eng->a2a_counts);
    free(eng->a2a_displs); free(eng->tokens); free(eng->all_tokens);
    if (eng->kvp_comm)
        hlx_comm_destroy(eng->kvp_comm);
    if (eng->world)
        hlx_comm_destroy(eng->world);
    if (eng->boot)
        hlx_boot_fini(eng->boot);
    hlx_placement_free(eng->place);
    hlx_topo_free(eng->topo);
    free(eng);
}
