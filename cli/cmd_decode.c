/* `helix decode`: runs Helix decode on the ranks of this job (helixrun, mpirun, srun or a
 * world of one) and prints timings, KV bytes and the result of the reference check. */
#include "hlx_cmd.h"
#include "hlx_comm.h"
#include "hlx_config.h"
#include "hlx_decode_predict.h"
#include "hlx_kernels.h"
#include "hlx_log.h"

#include <helix/model.h>
#include <helix/runtime.h>

#include <jansson.h>
#include <signal.h>
#include <unistd.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SIGTERM (a scheduler ending the job, helixrun forwarding a signal): say so on stderr
 * and exit at once with 128 + 15. Logging is unbuffered, so nothing is lost; only
 * async-signal-safe calls here, the message is formatted before the handler runs. */
static char hlx_term_msg[128];
static size_t hlx_term_len;

static void hlx_on_sigterm(int sig)
{
    if (hlx_term_len > 0) {
        ssize_t n = write(STDERR_FILENO, hlx_term_msg, hlx_term_len);
        (void)n;
    }
    _exit(128 + sig);
}

/* rank < 0: before the engine knows its rank (bootstrap, weights, KV allocation: seconds
 * at long context), the launcher's rank variable if it set one. A scheduler ends every rank
 * at once: rank 0 says so (or a process that knows no rank), the others exit quietly with
 * the same status, which their launcher reports. */
static void hlx_install_sigterm(const char *cmd, int rank)
{
    static const char *const vars[] = { "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID" };
    struct sigaction sa;
    const char *env = NULL;
    size_t i;
    int n;

    for (i = 0; rank < 0 && env == NULL && i < sizeof(vars) / sizeof(vars[0]); i++)
        env = getenv(vars[i]);
    if (rank > 0 || (rank < 0 && env != NULL && strcmp(env, "0")))
        n = 0; /* not rank 0: quiet */
    else if (rank == 0)
        n = snprintf(hlx_term_msg, sizeof(hlx_term_msg),
                     "helix %s: rank 0 received SIGTERM; exiting\n", cmd);
    else if (env != NULL)
        n = snprintf(hlx_term_msg, sizeof(hlx_term_msg),
                     "helix %s: rank 0 received SIGTERM while starting; exiting\n", cmd);
    else
        n = snprintf(hlx_term_msg, sizeof(hlx_term_msg),
                     "helix %s: received SIGTERM while starting; exiting\n", cmd);

    hlx_term_len = n > 0 && (size_t)n < sizeof(hlx_term_msg) ? (size_t)n : 0;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = hlx_on_sigterm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
}

/* A number for JSON: non-finite values (an error of a NaN run) become null. */
static json_t *hlx_json_real(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* What the checkpoint and the prompt add to the report: bytes read per rank, the prefill
 * time and the tokens chosen after each prompt. */
static void hlx_decode_json_load(json_t *o, const hlx_run_config_t *cfg,
                                 const hlx_run_report_t *rep)
{
    json_t *pt = json_array();
    int b;

    json_object_set_new(o, "checkpoint", cfg->ckpt[0] ? json_string(cfg->ckpt) : json_null());
    json_object_set_new(o, "seed", json_integer((json_int_t)cfg->seed));
    json_object_set_new(o, "ckpt_bytes_rank0", json_integer((json_int_t)rep->ckpt_bytes_rank));
    json_object_set_new(o, "ckpt_bytes_per_rank_max", json_integer((json_int_t)rep->ckpt_bytes_max));
    json_object_set_new(o, "ckpt_bytes_per_rank_min", json_integer((json_int_t)rep->ckpt_bytes_min));
    json_object_set_new(o, "ckpt_bytes_total", json_integer((json_int_t)rep->ckpt_bytes_total));
    hlx_run_json_prompt(o, cfg);
    json_object_set_new(o, "prefill_ms", json_real(rep->prefill_ms));
    for (b = 0; rep->prefill_tokens != NULL && b < cfg->batch; b++)
        json_array_append_new(pt, json_integer(rep->prefill_tokens[b]));
    json_object_set_new(o, "prefill_tokens", pt);
}

/* The report as one JSON object (jansson escapes names taken from user files). */
static void hlx_decode_print_json(const hlx_run_config_t *cfg, const hlx_model_t *m,
                                  const hlx_run_report_t *rep)
{
    json_t *o = json_object(), *ph = json_object(), *toks = json_array();
    int passed = hlx_run_report_passed(rep, cfg->check_tol), p, s, b;

    json_object_set_new(o, "model", json_string(m->name));
    json_object_set_new(o, "kvp", json_integer(cfg->kvp));
    json_object_set_new(o, "tpa", json_integer(cfg->tpa));
    json_object_set_new(o, "ranks", json_integer(rep->size));
    json_object_set_new(o, "q_split", json_integer(rep->q_split));
    json_object_set_new(o, "batch", json_integer(cfg->batch));
    json_object_set_new(o, "context", json_integer(cfg->context));
    json_object_set_new(o, "steps", json_integer(rep->steps));
    json_object_set_new(o, "kv_block", json_integer(cfg->kv_block));
    json_object_set_new(o, "launcher", json_string(rep->launcher));
    json_object_set_new(o, "transport", json_string(rep->transport));
    json_object_set_new(o, "kernels", json_string(rep->kernels));
    json_object_set_new(o, "device", json_string(rep->device));
    json_object_set_new(o, "device_note", json_string(rep->device_note));
    json_object_set_new(o, "kernels_note", json_string(rep->kernels_note));
    json_object_set_new(o, "w_layout", json_string(rep->w_layout));
    json_object_set_new(o, "w_packed", json_integer(rep->w_packed));
    json_object_set_new(o, "w_proj_bytes_rank", json_integer((json_int_t)rep->w_proj_bytes_rank));
    json_object_set_new(o, "bound", json_boolean(rep->bound));
    json_object_set_new(o, "binding", json_string(rep->binding));
    json_object_set_new(o, "place_cpuset", json_string(rep->place_cpuset));
    json_object_set_new(o, "cpuset", json_string(rep->cpuset));
    json_object_set_new(o, "a2a_link", json_string(rep->a2a_link));
    {
        json_t *cb = json_object(), *cw = json_object();
        json_object_set_new(cb, "kvp", json_string(rep->comm_kvp));
        json_object_set_new(cb, "world", json_string(rep->comm_world));
        json_object_set_new(cw, "kvp", json_string(rep->comm_kvp_why));
        json_object_set_new(cw, "world", json_string(rep->comm_world_why));
        json_object_set_new(o, "comm_backends", cb);
        json_object_set_new(o, "comm_backends_why", cw);
    }
    json_object_set_new(o, "hopb", json_string(cfg->hopb == HLX_HOPB_ON ? "on"
                                               : cfg->hopb == HLX_HOPB_OFF ? "off" : "auto"));
    json_object_set_new(o, "micro_batch", json_integer(rep->micro_batch));
    json_object_set_new(o, "threads", json_integer(rep->threads));
    json_object_set_new(o, "ep", json_integer(rep->ep));
    json_object_set_new(o, "tpf", json_integer(rep->tpf));
    if (m->experts > 0) { /* rank 0's share of the MoE layers */
        json_object_set_new(o, "experts_first", json_integer(rep->experts_first));
        json_object_set_new(o, "experts_per_rank", json_integer(rep->experts_rank));
        json_object_set_new(o, "moe_bytes_per_rank", json_integer((json_int_t)rep->moe_bytes_rank));
    }
    json_object_set_new(o, "hopb_c_ms", json_real(rep->hopb_c_ms));
    json_object_set_new(o, "hopb_m_ms", json_real(rep->hopb_m_ms));
    json_object_set_new(o, "hopb_c_busy_ms", json_real(rep->hopb_c_busy_ms));
    json_object_set_new(o, "hopb_m1_ms", json_real(rep->hopb_m1_ms));
    json_object_set_new(o, "hopb_m_batch_ms", json_real(rep->hopb_m_batch_ms));
    json_object_set_new(o, "hopb_post_ms", json_real(rep->hopb_post_ms));
    json_object_set_new(o, "hopb_predicted_ms", json_real(rep->hopb_predicted_ms));
    json_object_set_new(o, "hopb_why", json_string(rep->hopb_why));
    {
        char hx[24];
        snprintf(hx, sizeof(hx), "%016llx", (unsigned long long)rep->hidden_hash);
        json_object_set_new(o, "hidden_hash", json_string(hx));
    }
    json_object_set_new(o, "step_ms", json_real(rep->step_ms_median));
    json_object_set_new(o, "step_ms_min", json_real(rep->step_ms_min));
    json_object_set_new(o, "tokens_per_s", json_real(rep->tokens_per_s));
    json_object_set_new(o, "kv_dtype", json_string(hlx_dtype_name(rep->kv_dtype)));
    json_object_set_new(o, "kv_scales", json_string(rep->kv_scales ? rep->kv_scales : "none"));
    json_object_set_new(o, "kv_bytes_per_rank_max", json_integer((json_int_t)rep->kv_bytes_max));
    json_object_set_new(o, "kv_bytes_per_rank_min", json_integer((json_int_t)rep->kv_bytes_min));
    json_object_set_new(o, "weight_dtype", json_string(hlx_dtype_name(rep->w_dtype)));
    json_object_set_new(o, "weight_bytes_per_rank_max", json_integer((json_int_t)rep->w_bytes_max));
    json_object_set_new(o, "weight_bytes_per_rank_min", json_integer((json_int_t)rep->w_bytes_min));
    json_object_set_new(o, "kv_ring_slots", json_integer((json_int_t)rep->kv_ring_rank));
    for (p = 0; p < HLX_PHASE_PP; p++) /* pipeline hand-offs: the planner's only */
        json_object_set_new(ph, hlx_phase_name((hlx_phase_id_t)p),
                            json_real(rep->phase_ms[p]));
    json_object_set_new(o, "phase_ms", ph);
    for (b = 0; b < cfg->batch; b++) {
        json_t *t = json_array();
        for (s = 0; s < rep->steps; s++)
            json_array_append_new(t, json_integer(rep->tokens[(size_t)s * cfg->batch + b]));
        json_array_append_new(toks, t);
    }
    json_object_set_new(o, "tokens", toks);
    hlx_decode_json_load(o, cfg, rep);
    json_object_set_new(o, "checked", json_boolean(rep->checked));
    json_object_set_new(o, "max_abs_err", rep->checked ? hlx_json_real(rep->max_abs_err) : json_null());
    json_object_set_new(o, "max_rel_err", rep->checked ? hlx_json_real(rep->max_rel_err) : json_null());
    json_object_set_new(o, "tokens_match", rep->checked ? json_boolean(rep->tokens_match) : json_null());
    if (rep->checked) {
        json_object_set_new(o, "replicas_match", json_boolean(rep->replicas_match));
        json_object_set_new(o, "nonfinite", json_integer(rep->nonfinite));
        json_object_set_new(o, "kv_rows_checked", json_integer(rep->kv_rows_checked));
        json_object_set_new(o, "kv_rows_bad", json_integer(rep->kv_rows_bad));
        json_object_set_new(o, "kv_elems_apart", json_integer(rep->kv_elems_apart));
        json_object_set_new(o, "kv_rows_overwritten", json_integer(rep->kv_rows_overwritten));
        json_object_set_new(o, "route_near_ties", json_integer(rep->route_near_ties));
        json_object_set_new(o, "passed", json_boolean(passed));
    }
    hlx_decode_predict(o, cfg, m, rep->micro_batch < cfg->batch); /* HOP-B as it ran */
    json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(7));
    putchar('\n');
    json_decref(o);
}

static void hlx_decode_print_text(const hlx_run_config_t *cfg, const hlx_model_t *m,
                                  const hlx_run_report_t *rep)
{
    int p, s, b;

    printf("helix decode: model %s (%d layers, hidden %d, %d q heads, %d kv heads, head %d, "
           "ffn %d, vocab %d)\n", m->name, m->layers, m->hidden, m->q_heads, m->kv_heads,
           m->head_dim, m->ffn, m->vocab);
    if (m->nope_pattern > 1) /* SmolLM3's NoPE layers */
        printf("rope:    none on %d of %d layers (layer l + 1 a multiple of %d: q and k "
               "unrotated)\n", m->layers / m->nope_pattern, m->layers, m->nope_pattern);
    if (m->attn == HLX_ATTN_MLA)
        printf("mla:     absorbed; latent KV row kv_lora %d + rope %d, q_lora %d, nope %d, "
               "v %d\n", m->kv_lora_rank, m->qk_rope_dim, m->q_lora_rank, m->qk_nope_dim,
               m->v_head_dim);
    printf("layout:  KVP %d x TPA %d = %d ranks (%s), transport %s, kernels %s\n", cfg->kvp,
           cfg->tpa, rep->size, rep->launcher, rep->transport, rep->kernels);
    if (rep->q_split > 1)
        printf("heads:   each query head in %d pieces of %d value(s) for the all-to-all "
               "(KVP %d exceeds a TPA shard's heads)\n", rep->q_split, rep->piece_dim,
               cfg->kvp);
    if (rep->kernels_note[0])
        printf("kernels: %s\n", rep->kernels_note);
    if (rep->device_note[0])
        printf("device:  %s (%s)\n", rep->device, rep->device_note);
    if (!strcmp(rep->binding, "kept"))
        printf("place:   rank 0 on cpus %s (bound before start, kept; HELIX_BIND=on binds to "
               "the placement's %s), KVP peers over %s\n", rep->cpuset,
               rep->place_cpuset[0] ? rep->place_cpuset : "?", rep->a2a_link);
    else
        printf("place:   rank 0 on cpus %s%s, KVP peers over %s\n",
               rep->cpuset[0] ? rep->cpuset : "?", rep->bound ? " (bound)" : " (not bound)",
               rep->a2a_link);
    printf("comms:   KVP exchange on %s (%s); world all-reduce and all-gather on %s (%s)\n",
           rep->comm_kvp, rep->comm_kvp_why, rep->comm_world, rep->comm_world_why);
    if (m->experts > 0)
        printf("moe:     %d experts top %d (+%d shared, expert ffn %d), EP %d x TPF %d: rank 0 "
               "holds experts %d..%d, %.2f MiB of MoE weights\n", m->experts, m->top_k,
               m->shared_experts, m->expert_ffn, rep->ep, rep->tpf, rep->experts_first,
               rep->experts_first + rep->experts_rank - 1, rep->moe_bytes_rank / 1048576.0);
    printf("work:    batch %d, context %lld tokens + %d steps, kv block %d\n", cfg->batch,
           (long long)cfg->context, rep->steps, cfg->kv_block);
    printf("weights: %.2f MiB per rank in %s (min %.2f, max %.2f over ranks)\n",
           rep->w_bytes_rank / 1048576.0, hlx_dtype_name(rep->w_dtype),
           rep->w_bytes_min / 1048576.0, rep->w_bytes_max / 1048576.0);
    printf("KV:      %.2f MiB per rank in %s (min %.2f, max %.2f over ranks)",
           rep->kv_bytes_rank / 1048576.0, hlx_dtype_name(rep->kv_dtype),
           rep->kv_bytes_min / 1048576.0, rep->kv_bytes_max / 1048576.0);
    if (rep->kv_ring_rank > 0)
        printf("; windowed layers in rings of %lld slots per shard",
               (long long)rep->kv_ring_rank);
    if (rep->kv_scales != NULL && strcmp(rep->kv_scales, "none"))
        printf("; the checkpoint's KV-cache scales %s",
               !strcmp(rep->kv_scales, "checkpoint") ? "in use"
                                                      : "ignored (they apply to fp8 KV)");
    printf("\n");
    printf("step:    median %.3f ms, %.1f tokens/s (batch %d)\n", rep->step_ms_median,
           rep->tokens_per_s, cfg->batch);
    if (rep->micro_batch < cfg->batch)
        printf("hopb:    %s, micro-batch %d of %d", cfg->hopb == HLX_HOPB_AUTO ? "auto" : "on",
               rep->micro_batch, cfg->batch);
    else
        printf("hopb:    %s: lockstep (micro-batch = batch %d)",
               cfg->hopb == HLX_HOPB_OFF ? "off" : cfg->hopb == HLX_HOPB_ON ? "on" : "auto",
               cfg->batch);
    if (rep->hopb_predicted_ms > 0) {
        printf(", chosen from c %.4f ms", rep->hopb_c_ms);
        if (rep->hopb_c_busy_ms > 0)
            printf(", c_busy %.4f ms", rep->hopb_c_busy_ms);
        printf(" and m %.4f ms per micro-batch: model %.4f ms per layer", rep->hopb_m_ms,
               rep->hopb_predicted_ms);
    }
    if (rep->hopb_why[0])
        printf("%s%s", rep->hopb_predicted_ms > 0 ? "; " : ": ", rep->hopb_why);
    printf("\n");
    printf("phases:  ");
    for (p = 0; p < HLX_PHASE_PP; p++) /* pipeline hand-offs: the planner's only */
        printf("%s %.3f%s", hlx_phase_name((hlx_phase_id_t)p), rep->phase_ms[p],
               p + 1 < HLX_PHASE_PP ? ", " : " ms (median per step, rank 0)\n");
    if (cfg->ckpt[0])
        printf("weights: checkpoint %s: %.2f MiB read per rank (min %.2f, max %.2f) of %.2f "
               "MiB\n", cfg->ckpt, rep->ckpt_bytes_rank / 1048576.0,
               rep->ckpt_bytes_min / 1048576.0, rep->ckpt_bytes_max / 1048576.0,
               rep->ckpt_bytes_total / 1048576.0);
    if (cfg->prompt_len > 0 && rep->prefill_tokens != NULL)
        printf("prefill: %d%s prompt tokens x batch %d in %.3f ms (%.1f tokens/s), next "
               "token[0] %d\n", cfg->prompt_len, cfg->tail_off ? " or more" : "", cfg->batch,
               rep->prefill_ms,
               rep->prefill_ms > 0 ? (double)hlx_run_prompt_tokens(cfg) * 1000.0 / rep->prefill_ms
                                   : 0,
               rep->prefill_tokens[0]);
    for (b = 0; b < cfg->batch && b < 4; b++) {
        printf("tokens[%d]:", b);
        for (s = 0; s < rep->steps && s < 16; s++)
            printf(" %d", rep->tokens[(size_t)s * cfg->batch + b]);
        printf("%s\n", rep->steps > 16 ? " ..." : "");
    }
    if (rep->checked)
        printf("check:   %s: max_abs_err %.3e, max_rel_err %.3e (tolerance %.1e), tokens %s, "
               "replicas %s, %lld appended KV rows compared%s%s%s\n",
               hlx_run_report_passed(rep, cfg->check_tol) ? "PASS" : "FAIL",
               rep->max_abs_err, rep->max_rel_err, cfg->check_tol,
               rep->tokens_match ? "match" : "differ",
               rep->replicas_match ? "identical" : "differ", (long long)rep->kv_rows_checked,
               rep->kv_rows_bad ? " (some differ)" : "",
               rep->kv_rows_overwritten ? " (older ones overwritten in windowed layers' rings)"
                                        : "",
               rep->kv_elems_apart > 0 ? " (some elements one rounding apart)" : "");
}

static void hlx_decode_print_json_cb(void *ctx, const hlx_run_config_t *cfg,
                                     const hlx_model_t *m, const hlx_run_report_t *rep)
{
    (void)ctx;
    hlx_decode_print_json(cfg, m, rep);
}

static void hlx_decode_print_text_cb(void *ctx, const hlx_run_config_t *cfg,
                                     const hlx_model_t *m, const hlx_run_report_t *rep)
{
    (void)ctx;
    hlx_decode_print_text(cfg, m, rep);
}

int hlx_cmd_decode(int argc, char **argv)
{
    hlx_run_config_t cfg;
    hlx_decode_opts_t o;
    hlx_model_t model;
    int json, rc, *ids = NULL;

    /* Every flag in one table (cli/decode_flags.c), parsed by the one number parser. */
    rc = hlx_decode_parse(argc, argv, &cfg, &o);
    if (rc >= 0)
        return rc;
    json       = o.json;
    /* A file, a preset or a checkpoint directory (cli/cmd_generate.c); then the prompt. */
    if ((rc = hlx_run_load_model("decode", &o, &cfg, &model)) >= 0)
        return rc;
    if ((rc = hlx_run_load_prompt("decode", &o, &model, &cfg, &ids)) >= 0)
        return rc;
    return hlx_run_engine("decode", &cfg, &model, ids,
                          json ? hlx_decode_print_json_cb : hlx_decode_print_text_cb, NULL);
}

int hlx_engine_create_failed(const char *cmd, hlx_status_t st, const char *err)
{
    /* before the bootstrap the message is the command line's or the model's, the same on
     * every rank (rank 0 alone says it): as the flags' own, without the logger's host, pid
     * and rank; after it, which rank failed matters */
    if (err[0] && hlx_log_rank() < 0)
        fprintf(stderr, "helix %s: %s\n", cmd, err);
    else if (err[0])
        hlx_error("helix %s: %s", cmd, err);
    if (hlx_flags_launcher_rank() >= 0)
        hlx_flags_quiet_exit_wait();
    return hlx_status_exit_code(st);
}

int hlx_run_engine(const char *cmd, const hlx_run_config_t *cfg, const hlx_model_t *m,
                   int *ids, hlx_run_print_fn print, void *ctx)
{
    hlx_run_report_t rep;
    hlx_engine_t *eng = NULL;
    char err[1024] = "";
    hlx_status_t st;
    int rc;

    hlx_install_sigterm(cmd, -1);
    st = hlx_engine_create(cfg, m, &eng, err, sizeof(err));
    if (st != HLX_OK) {
        free(ids);
        return hlx_engine_create_failed(cmd, st, err);
    }
    hlx_install_sigterm(cmd, hlx_engine_rank(eng));
    st = hlx_engine_run(eng, &rep, err, sizeof(err));
    if (hlx_engine_rank(eng) == 0 && (st == HLX_OK || st == HLX_ERR_CHECK)) {
        print(ctx, cfg, m, &rep);
        fflush(stdout);
    }
    rc = hlx_status_run_exit_code(st); /* the run is under way: unsupported is its failure */
    if (st != HLX_OK)
        hlx_error("helix %s: %s", cmd, err);
    /* A check verdict is reached by every rank together; anything else may have left
     * peers inside a collective: end the job now rather than let them time out. */
    if (st != HLX_OK && st != HLX_ERR_CHECK)
        hlx_engine_abort(eng, rc, err);
    hlx_engine_destroy(eng);
    free(ids);
    return rc;
}
