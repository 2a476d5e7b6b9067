/* The run loop of the engine: steps under the chosen schedule, the check after each step,
 * timings and the report; the HOP-B benchmark; abort. */
#define _GNU_SOURCE
#include "hlx_file.h"
#include "hlx_backend_cuda.h"
#include "hlx_engine_int.h"

#include "hlx_log.h"
#include "hlx_prefill.h"
#include "hlx_synth.h"
#include "hlx_time.h"
#include "hlx_watchdog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* A failed step's status in words, with the CUDA backend's own words for its last failure
 * (the op and the CUDA error) when it has them. */
static const char *hlx_run_status_str(hlx_status_t st, char *buf, size_t len)
{
    const char *cu = hlx_backend_cuda_error();

    if (cu[0] == '\0')
        return hlx_status_str(st);
    snprintf(buf, len, "%s (%s)", hlx_status_str(st), cu);
    return buf;
}

/* The prompt (prefill.c), timed from a barrier to the last rank's end, and its check: the
 * hidden state, logits and token after the last prompt token against the reference. */
static hlx_status_t hlx_run_prefill(hlx_engine_t *eng, hlx_run_report_t *rep, char *err,
                                    size_t errlen)
{
    uint64_t t0 = hlx_now_ns();
    hlx_status_t st = hlx_prefill_run(eng);
    char sbuf[384];

    if (st == HLX_OK)
        st = hlx_comm_barrier(eng->world);
    if (st != HLX_OK)
        return eng->errmsg[0] ? hlx_engine_fail(err, errlen, st, "%s", eng->errmsg)
                              : hlx_engine_fail(err, errlen, st, "prefill failed on rank %d: "
                                                "%s", eng->info.rank,
                                                hlx_run_status_str(st, sbuf, sizeof(sbuf)));
    rep->prefill_ms = (double)(hlx_now_ns() - t0) * 1e-6;
    rep->prompt_len = eng->cfg.prompt_len;
    memcpy(eng->prefill_tokens, eng->tokens, sizeof(int) * (size_t)eng->cfg.batch);
    rep->prefill_tokens = eng->prefill_tokens;
    return eng->cfg.check ? hlx_check_step(eng, eng->chk, -1, rep) : HLX_OK;
}

/* The smallest and largest of n values stride apart (the ranks' figures, gathered). */
static void hlx_run_span(const uint64_t *v, int stride, int n, uint64_t *lo, uint64_t *hi)
{
    int r;

    *lo = *hi = v[0];
    for (r = 1; r < n; r++) {
        const uint64_t x = v[(size_t)r * stride];
        *lo = x < *lo ? x : *lo;
        *hi = x > *hi ? x : *hi;
    }
}

/* Checkpoint bytes read by every rank (0 with synthetic weights), and the checkpoint's. */
static hlx_status_t hlx_run_ckpt_bytes(hlx_engine_t *eng, hlx_run_report_t *rep)
{
    uint64_t mine = eng->ws.ck ? hlx_ckpt_bytes_read(eng->ws.ck) : 0, *all;
    size_t i;
    hlx_status_t st;

    rep->ckpt_bytes_rank = mine;
    if (eng->ws.ck != NULL)
        for (i = 0; i < hlx_ckpt_count(eng->ws.ck); i++) {
            const hlx_ckpt_tensor_t *t = hlx_ckpt_tensor(eng->ws.ck, i);
            rep->ckpt_bytes_total += t->end - t->begin;
        }
    if ((all = calloc((size_t)eng->info.size, sizeof(*all))) == NULL)
        return HLX_ERR_NOMEM;
    st = hlx_comm_allgather(eng->world, &mine, sizeof(mine), all);
    if (st == HLX_OK)
        hlx_run_span(all, 1, eng->info.size, &rep->ckpt_bytes_min, &rep->ckpt_bytes_max);
    free(all);
    return st;
}

/* Marks the requests whose token in tok[batch] is a stop id (hlx_run_config_t.eos); 1 when
 * every request is marked. tok NULL (no prefill) marks nothing. */
static int hlx_run_all_stopped(const hlx_engine_t *eng, const int *tok, unsigned char *done)
{
    int b, k, all = 1;

    if (eng->cfg.neos <= 0 || eng->cfg.eos == NULL || tok == NULL)
        return 0;
    for (b = 0; b < eng->cfg.batch; b++) {
        for (k = 0; k < eng->cfg.neos && !done[b]; k++)
            done[b] = tok[b] == eng->cfg.eos[k];
        all = all && done[b];
    }
    return all;
}

hlx_status_t hlx_engine_run(hlx_engine_t *eng, hlx_run_report_t *rep, char *err, size_t errlen)
{
    int steps = eng->cfg.steps, B = eng->cfg.batch, s, p;
    double *step_ms = calloc((size_t)(steps + 1), sizeof(double));
    double *ph_ms = calloc((size_t)(steps + 1) * HLX_PHASE_COUNT, sizeof(double));
    uint64_t *allkv = calloc(2 * (size_t)eng->info.size, sizeof(uint64_t)), kvb[2];
    unsigned char *done = calloc((size_t)B, 1);
    hlx_watchdog_t *wd = NULL;
    hlx_status_t st = HLX_OK;

    memset(rep, 0, sizeof(*rep));
    rep->rank = eng->info.rank;
    rep->size = eng->info.size;
    snprintf(rep->launcher, sizeof(rep->launcher), "%s", eng->info.launcher);
    snprintf(rep->kernels, sizeof(rep->kernels), "%s", eng->be.k.name);
    snprintf(rep->device, sizeof(rep->device), "%s", strcmp(eng->be.ops->name, "cuda") ? "cpu" : "cuda");
    snprintf(rep->device_note, sizeof(rep->device_note), "%s", eng->device_note);
    snprintf(rep->kernels_note, sizeof(rep->kernels_note), "%s", eng->be.kernels_why);
    snprintf(rep->w_layout, sizeof(rep->w_layout), "%s",
             eng->wq_packed > 0 ? "packed" : hlx_w_s16(eng->wp_dtype) ? "strips" : "rows");
    rep->w_packed = eng->wq_packed;
    rep->w_proj_bytes_rank = eng->w_bytes;
    rep->q_split = eng->lay.q_split;
    rep->piece_dim = eng->xpw;
    rep->threads = eng->threads;
    snprintf(rep->transport, sizeof(rep->transport), "%s", hlx_comm_backend(eng->world));
    snprintf(rep->place_cpuset, sizeof(rep->place_cpuset), "%s",
             eng->place->ranks[eng->info.rank].cpuset);
    snprintf(rep->cpuset, sizeof(rep->cpuset), "%s",
             eng->kept[0] ? eng->kept : eng->place->ranks[eng->info.rank].cpuset);
    snprintf(rep->binding, sizeof(rep->binding), "%s",
             eng->bound ? "placed" : eng->kept[0] ? "kept" : "none");
    snprintf(rep->a2a_link, sizeof(rep->a2a_link), "%s", hlx_engine_a2a_link(eng));
    snprintf(rep->comm_kvp, sizeof(rep->comm_kvp), "%s",
             hlx_comm_choice_name(eng->comm_choice[HLX_ENGINE_COMM_KVP]));
    snprintf(rep->comm_world, sizeof(rep->comm_world), "%s",
             hlx_comm_choice_name(eng->comm_choice[HLX_ENGINE_COMM_WORLD]));
    snprintf(rep->comm_kvp_why, sizeof(rep->comm_kvp_why), "%s",
             eng->comm_why[HLX_ENGINE_COMM_KVP]);
    snprintf(rep->comm_world_why, sizeof(rep->comm_world_why), "%s",
             eng->comm_why[HLX_ENGINE_COMM_WORLD]);
    rep->steps          = steps;
    rep->steps_planned  = steps;
    rep->tokens_match   = 1;
    rep->replicas_match = 1;
    rep->bound          = eng->bound || eng->kept[0] != '\0';
    rep->tokens         = eng->all_tokens;
    if (!step_ms || !ph_ms || !allkv || !done) {
        st = HLX_ERR_NOMEM;
        goto out;
    }
    /* the timeline's file is written after the last step: a path that cannot take it is
     * refused before the first */
    if (eng->cfg.timeline[0] && eng->info.rank == 0 && steps > 0) {
        char why[512];
        st = hlx_out_check(eng->cfg.timeline, why, sizeof(why));
        if (st != HLX_OK) {
            hlx_engine_fail(err, errlen, st, "--timeline %s", why);
            goto out;
        }
    }
    if (eng->cfg.check) {
        st = hlx_check_prepare(eng, &eng->chk, err, errlen);
        if (st != HLX_OK)
            goto out;
        rep->checked = hlx_check_has_reference(eng->chk) &&
                       (steps > 0 || eng->cfg.prompt_len > 0);
    }
    st = hlx_comm_barrier(eng->world);
    if (st == HLX_OK && eng->cfg.prompt_len > 0)
        st = hlx_run_prefill(eng, rep, err, errlen);
    /* The step watchdog: a last resort behind the collectives' deadlines and heartbeats
     * (HELIX_STEP_WATCHDOG), armed around each step, never inside one. */
    if (st == HLX_OK && eng->set.step_watchdog > 0 && steps > 0 &&
        hlx_watchdog_create(&wd) != HLX_OK)
        hlx_warn("rank %d: no decode-step watchdog (thread creation failed)", eng->info.rank);
    if (wd != NULL) /* its message says the phase: a rank waiting in a collective, or not */
        hlx_watchdog_set_where(wd, &eng->wd_where);
    if (st == HLX_OK && eng->cfg.prompt_len > 0 &&
        hlx_run_all_stopped(eng, eng->prefill_tokens, done)) {
        rep->eos_stop = steps > 0;
        steps = 0; /* the prefill's tokens already end every request */
        rep->steps = 0;
    }
    if (st == HLX_OK && eng->dev_clock) { /* the prefill's head left marks: not a step's */
        uint64_t drop[HLX_PHASE_COUNT] = { 0 };
        st = hlx_backend_cuda_clock_read(&eng->be, drop, HLX_PHASE_COUNT);
    }
    for (s = 0; s < steps && st == HLX_OK; s++) {
        uint64_t t0 = hlx_now_ns();
        char what[96];
        memset(eng->phase_ns, 0, sizeof(eng->phase_ns));
        if (wd != NULL) {
            snprintf(what, sizeof(what), "rank %d: decode step %d (HELIX_STEP_WATCHDOG)",
                     eng->info.rank, s);
            hlx_watchdog_arm(wd, eng->set.step_watchdog, 1, what);
        }
        st = hlx_schedule_step(eng);
        if (st == HLX_OK && eng->dev_clock) { /* the device's phase times, once it is done */
            st = eng->clock_st;
            if (st == HLX_OK)
                st = hlx_backend_cuda_clock_read(&eng->be, eng->phase_ns, HLX_PHASE_COUNT);
            if (st != HLX_OK)
                hlx_engine_set_errmsg(eng, "HELIX_PHASE_CLOCK=device: reading the phase "
                                      "clock failed on rank %d: %s", eng->info.rank,
                                      hlx_status_str(st));
        }
        if (wd != NULL)
            hlx_watchdog_disarm(wd);
        if (st != HLX_OK) {
            if (eng->errmsg[0])
                hlx_engine_fail(err, errlen, st, "%s", eng->errmsg);
            else {
                char sbuf[384];
                hlx_engine_fail(err, errlen, st, "decode step %d failed on rank %d: %s", s,
                                eng->info.rank, hlx_run_status_str(st, sbuf, sizeof(sbuf)));
            }
            break;
        }
        step_ms[s] = (double)(hlx_now_ns() - t0) * 1e-6;
        for (p = 0; p < HLX_PHASE_COUNT; p++)
            ph_ms[(size_t)p * steps + s] = (double)eng->phase_ns[p] * 1e-6;
        memcpy(eng->all_tokens + (size_t)s * B, eng->tokens, sizeof(int) * (size_t)B);
        if (eng->cfg.check)
            st = hlx_check_step(eng, eng->chk, s, rep);
        eng->step++;
        if (st == HLX_OK && !eng->hopb_decided) {
            st = hlx_schedule_decide(eng);
            if (st != HLX_OK)
                hlx_engine_fail(err, errlen, st, "choosing the HOP-B micro-batch failed: %s",
                                hlx_status_str(st));
        }
        if (eng->cfg.verbose && eng->info.rank == 0)
            fprintf(stderr, "step %d: %.3f ms, tokens %d%s\n", s, step_ms[s], eng->tokens[0],
                    B > 1 ? " ..." : "");
        if (st == HLX_OK && s + 1 < steps && hlx_run_all_stopped(eng, eng->tokens, done)) {
            rep->eos_stop = 1;
            s++;
            break;
        }
    }
    if (st == HLX_OK && s < steps) { /* stopped early: the report covers the steps run */
        int run = s;
        for (p = 0; p < HLX_PHASE_COUNT; p++) /* phase rows are steps apart: close the gaps */
            memmove(ph_ms + (size_t)p * run, ph_ms + (size_t)p * steps,
                    sizeof(double) * (size_t)run);
        steps = run;
        rep->steps = run;
    }
    if (st == HLX_OK && eng->cfg.check)
        st = hlx_check_kv_rows(eng, eng->chk, rep);
    if (st == HLX_OK && eng->cfg.timeline[0] && eng->info.rank == 0 && steps > 0) {
        char why[512];
        st = hlx_schedule_write_timeline(eng, eng->cfg.timeline, why, sizeof(why));
        if (st != HLX_OK)
            st = hlx_engine_fail(err, errlen, st, "--timeline %s", why);
    }
    if (st != HLX_OK) {
        if (!err[0])
            hlx_engine_fail(err, errlen, st, "decode failed: %s", hlx_status_str(st));
        goto out;
    }
    kvb[0] = eng->kv_bytes;
    kvb[1] = eng->mem_weights;
    st = hlx_comm_allgather(eng->world, kvb, sizeof(kvb), allkv);
    if (st != HLX_OK)
        goto out;
    rep->kv_bytes_rank = eng->kv_bytes;
    rep->kv_dtype = eng->kv_dtype;
    rep->w_dtype = eng->w_dtype;
    rep->kv_scales = !eng->ws.cfg.kv_scales || eng->ws.ck == NULL ? "none"
                     : eng->kv_dtype == HLX_DTYPE_FP8            ? "checkpoint"
                                                                 : "ignored";
    rep->w_bytes_rank = eng->mem_weights;
    hlx_run_span(allkv, 2, eng->info.size, &rep->kv_bytes_min, &rep->kv_bytes_max);
    hlx_run_span(allkv + 1, 2, eng->info.size, &rep->w_bytes_min, &rep->w_bytes_max);
    rep->kv_tokens_rank = eng->kv_len;
    rep->kv_ring_rank = eng->ring;
    st = hlx_run_ckpt_bytes(eng, rep);
    if (st != HLX_OK)
        goto out;
    rep->micro_batch = eng->mb;
    rep->hopb_c_ms = eng->hopb_c_ms;
    rep->hopb_m_ms = eng->hopb_mb_ms;
    rep->hopb_predicted_ms = eng->hopb_pred_ms;
    rep->hopb_c_busy_ms = eng->hopb_cb_ms;
    rep->hopb_m1_ms = eng->hopb_m1_ms;
    rep->hopb_m_batch_ms = eng->hopb_mbatch_ms;
    rep->hopb_post_ms = eng->hopb_post_ms;
    if (eng->hopb_oversub)
        snprintf(rep->hopb_why, sizeof(rep->hopb_why), "%d rank%s (%d thread%s) on %d CPU%s "
                 "take turns on the cores", eng->job_ranks, eng->job_ranks == 1 ? "" : "s",
                 eng->job_threads, eng->job_threads == 1 ? "" : "s", eng->job_cpus,
                 eng->job_cpus == 1 ? "" : "s");
    else if (eng->hopb_busy_why != NULL)
        snprintf(rep->hopb_why, sizeof(rep->hopb_why), "c_busy not measured (%s), the model "
                 "takes c for it", eng->hopb_busy_why);
    hlx_moe_report(eng, rep);
    {
        uint64_t h = 0x9e37;
        size_t i, n = (size_t)B * (size_t)eng->m.hidden;
        for (i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, &eng->x[i], 4);
            h = hlx_mix64(h ^ u);
        }
        rep->hidden_hash = h;
    }
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
                             "rows differ%s", rep->max_rel_err, eng->cfg.check_tol,
                             rep->tokens_match ? "match" : "differ",
                             rep->replicas_match ? "identical" : "differ", rep->nonfinite,
                             (long long)rep->kv_rows_bad, (long long)rep->kv_rows_checked,
                             rep->kv_elems_apart > 0 && rep->kv_rows_bad == 0 &&
                                     rep->tokens_match
                                 ? "; some KV elements were rounded to the neighbouring value "
                                   "of the KV type (a value at a midpoint; docs/model.md, "
                                   "fp8 KV-cache scales)"
                                 : "");

out:
    hlx_watchdog_destroy(wd);
    free(step_ms);
    free(ph_ms);
    free(allkv);
    free(done);
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


/* ---- helix bench hopb */

static double hlx_bench_median(double *v, int n)
{
    return hlx_median(v, n);
}

hlx_status_t hlx_engine_bench_hopb(hlx_engine_t *eng, int micro_batch, int reps,
                                   hlx_hopb_bench_t *out, char *err, size_t errlen)
{
    int B = eng->cfg.batch, M = micro_batch, nb, r, i, n = eng->info.size;
    double *t = NULL, med[5], *all = NULL;
    hlx_status_t st = HLX_OK;
    uint64_t t0;

    if (M < 1 || M > B || reps < 1)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "--micro-batch %d: expected 1 .. "
                               "--batch %d (and --reps >= 1)", M, B);
    nb = (B + M - 1) / M;
    t = calloc(5 * (size_t)reps, sizeof(double));
    all = calloc(5 * (size_t)n, sizeof(double));
    if (t == NULL || all == NULL) {
        st = hlx_engine_fail(err, errlen, HLX_ERR_NOMEM, "bench hopb: no memory for %d "
                             "rounds' timings", reps);
        goto out;
    }
    /* The queries stay as they are (zeros before any step): attention costs the same for
     * any values, and nothing is appended, so the KV cache is only read. */
    eng->fault_now = 0;
    for (r = 0; r < reps && st == HLX_OK; r++) {
        int k;
        /* c and m: every micro-batch of the batch in turn (the same KV traffic as the
         * schedules below, not one micro-batch's KV warm in cache), averaged */
        st = hlx_comm_barrier(eng->world);
        t0 = hlx_now_ns();
        for (k = 0; k < nb && st == HLX_OK; k++) {
            int b0 = k * M, b1 = b0 + M < B ? b0 + M : B;
            st = hlx_phase_attn(eng, 0, b0, b1, NULL, 0);
            if (st == HLX_OK)
                st = hlx_phase_pack(eng, b0, b1);
        }
        t[r] = (double)(hlx_now_ns() - t0) * 1e-6 / nb;
        if (st == HLX_OK)
            st = hlx_comm_barrier(eng->world);
        t0 = hlx_now_ns();
        for (k = 0; k < nb && st == HLX_OK; k++) {
            int b0 = k * M, b1 = b0 + M < B ? b0 + M : B;
            st = hlx_phase_a2a(eng, b0, b1);
        }
        t[reps + r] = (double)(hlx_now_ns() - t0) * 1e-6 / nb;
        /* c_busy: micro-batches 1 .. nb-1 again, each while the one before it (packed
         * above) is exchanged, as in the pipeline: on CPU ranks the transport (UCX's
         * progress calls, the kernel's tcp) takes cycles from the attention it overlaps */
        eng->mb = M;
        t[4 * reps + r] = 0;
        for (k = 1; k < nb && st == HLX_OK; k++) {
            double ms = 0;
            st = hlx_comm_barrier(eng->world);
            if (st == HLX_OK)
                st = hlx_schedule_attn_busy(eng, k, &ms);
            t[4 * reps + r] += ms / (nb - 1);
        }
        if (nb == 1)
            t[4 * reps + r] = t[r];
        if (st == HLX_OK)
            st = hlx_comm_barrier(eng->world);
        eng->mb = B;
        t0 = hlx_now_ns();
        if (st == HLX_OK)
            st = hlx_schedule_exchange(eng, 0);
        t[2 * reps + r] = (double)(hlx_now_ns() - t0) * 1e-6;
        if (st == HLX_OK)
            st = hlx_comm_barrier(eng->world);
        eng->mb = M;
        t0 = hlx_now_ns();
        if (st == HLX_OK)
            st = hlx_schedule_exchange(eng, 0);
        t[3 * reps + r] = (double)(hlx_now_ns() - t0) * 1e-6;
    }
    if (st != HLX_OK) {
        hlx_engine_fail(err, errlen, st, "bench hopb: %s", hlx_status_str(st));
        goto out;
    }
    for (i = 0; i < 5; i++)
        med[i] = hlx_bench_median(t + (size_t)i * reps, reps);
    /* A pipeline is as slow as its slowest rank. */
    st = hlx_comm_allgather(eng->world, med, sizeof(med), all);
    if (st != HLX_OK) {
        hlx_engine_fail(err, errlen, st, "bench hopb: gathering the timings failed");
        goto out;
    }
    for (r = 0; r < n; r++)
        for (i = 0; i < 5; i++)
            med[i] = fmax(med[i], all[5 * r + i]);
    memset(out, 0, sizeof(*out));
    out->batch        = B;
    out->micro_batch  = M;
    out->c_ms         = med[0];
    out->m_ms         = med[1];
    out->lockstep_ms  = med[2];
    out->pipelined_ms = med[3];
    out->c_busy_ms    = med[4];
    out->predicted_idle_ms = hlx_hopb_pipeline(nb, med[0], med[1], med[0], med[1]);
    /* c + (nb - 1) max(c_busy, m) + m, every term from rounds of its own */
    out->predicted_ms = nb > 1 ? med[0] + (nb - 1) * fmax(med[4], med[1]) + med[1]
                               : out->predicted_idle_ms;
out:
    free(t);
    free(all);
    return st;
}
