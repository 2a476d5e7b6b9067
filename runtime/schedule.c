/* Schedules: how the phases of a decode step are composed. Lockstep runs attention for the
 * whole batch, then one blocking exchange. HOP-B splits the batch into micro-batches and
 * posts each micro-batch's exchange as soon as its attention is done, progressing it while
 * the next micro-batch computes; the merge waits for all of them and runs once over the
 * whole batch, so the results are bitwise those of lockstep. */
#define _GNU_SOURCE
#include "hlx_file.h"
#include "hlx_engine_int.h"

#include "hlx_log.h"
#include "hlx_time.h"

#include <float.h>
#include <stdlib.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static void hlx_tl_add(hlx_engine_t *eng, int l, int mb, int kind, uint64_t t0, uint64_t t1)
{
    hlx_tl_event_t *e;

    if (eng->tl == NULL || eng->tl_n >= eng->tl_cap)
        return;
    e = &eng->tl[eng->tl_n++];
    e->layer = l;
    e->mb = mb;
    e->kind = kind;
    e->t0 = t0 - eng->step_t0;
    e->t1 = t1 - eng->step_t0;
}

/* The end of an exchange is when a test or wait first saw it complete. */
static void hlx_tl_end(hlx_engine_t *eng, int l, int mb, uint64_t t1)
{
    int i;

    if (eng->tl == NULL)
        return;
    for (i = eng->tl_n - 1; i >= 0; i--)
        if (eng->tl[i].layer == l && eng->tl[i].mb == mb && eng->tl[i].kind == 1) {
            eng->tl[i].t1 = t1 - eng->step_t0;
            return;
        }
}

/* Tests the exchanges in flight of layer l, oldest first, and stops at the first that is
 * not done: one test drives the transport for all of them, and a younger one rarely
 * finishes first, so a unit of attention pays for about one test. */
static hlx_status_t hlx_schedule_progress(hlx_engine_t *eng, int l)
{
    int k, nb = (eng->cfg.batch + eng->mb - 1) / eng->mb;
    hlx_status_t st;

    for (k = 0; k < nb; k++) {
        if (eng->reqs[k] == NULL)
            continue;
        st = hlx_comm_test(eng->reqs[k]);
        if (st == HLX_INPROGRESS)
            return HLX_OK;
        eng->reqs[k] = NULL;
        if (st != HLX_OK)
            return st;
        hlx_tl_end(eng, l, k, hlx_now_ns());
    }
    return HLX_OK;
}

/* Whether HOP-B auto's first step times its attention between two queue syncs: on a
 * device backend with the host's phase clock, where the phase time is the launches'. */
static int hlx_schedule_queue_timed(const hlx_engine_t *eng)
{
    return !eng->hopb_decided && !eng->dev_clock && !eng->prefilling &&
           strcmp(eng->be.ops->name, "host");
}

static hlx_status_t hlx_schedule_lockstep_attn(hlx_engine_t *eng, int l)
{
    int B = eng->cfg.batch;
    const int timed = hlx_schedule_queue_timed(eng);
    hlx_status_t st = timed ? hlx_engine_sync(eng) : HLX_OK;
    uint64_t t0 = hlx_now_ns(), ta = t0, t1;

    if (st == HLX_OK)
        st = hlx_phase_attn(eng, l, 0, B, NULL, 0);
    if (st == HLX_OK && timed && (st = hlx_engine_sync(eng)) == HLX_OK)
        eng->hopb_attn_ns += hlx_now_ns() - ta;
    if (st == HLX_OK)
        st = hlx_phase_pack(eng, 0, B);
    t1 = hlx_now_ns();
    hlx_tl_add(eng, l, 0, 0, t0, t1);
    if (st == HLX_OK)
        st = hlx_phase_a2a(eng, 0, B);
    hlx_tl_add(eng, l, 0, 1, t1, hlx_now_ns());
    return st;
}

static hlx_status_t hlx_schedule_hopb_attn(hlx_engine_t *eng, int l)
{
    int B = eng->cfg.batch, M = eng->mb, nb = (B + M - 1) / M, k;
    hlx_status_t st = HLX_OK;

    for (k = 0; k < nb; k++)
        eng->reqs[k] = NULL;
    for (k = 0; k < nb && st == HLX_OK; k++) {
        int b0 = k * M, b1 = b0 + M < B ? b0 + M : B;
        uint64_t t0 = hlx_now_ns(), t1;
        st = hlx_phase_attn(eng, l, b0, b1, k > 0 ? hlx_schedule_progress : NULL, l);
        if (st == HLX_OK)
            st = hlx_phase_pack(eng, b0, b1);
        t1 = hlx_now_ns();
        hlx_tl_add(eng, l, k, 0, t0, t1);
        if (st == HLX_OK)
            st = hlx_phase_a2a_post(eng, b0, b1, &eng->reqs[k]);
        hlx_tl_add(eng, l, k, 1, t1, hlx_now_ns());
    }
    /* Wait in micro-batch order; the merge below then runs once in a fixed order. */
    for (k = 0; k < nb; k++) {
        hlx_status_t st2;
        uint64_t t0;
        if (eng->reqs[k] == NULL)
            continue;
        t0 = hlx_now_ns();
        atomic_store_explicit(&eng->wd_where, hlx_phase_name(HLX_PHASE_A2A),
                              memory_order_relaxed);
        hlx_engine_clock(eng, HLX_PHASE_A2A);
        st2 = hlx_comm_wait(eng->reqs[k]);
        eng->reqs[k] = NULL;
        hlx_engine_clock(eng, -1);
        if (!eng->dev_clock)
            eng->phase_ns[HLX_PHASE_A2A] += hlx_now_ns() - t0;
        hlx_tl_end(eng, l, k, hlx_now_ns());
        if (st == HLX_OK)
            st = st2;
    }
    return st;
}

hlx_status_t hlx_schedule_attn_busy(hlx_engine_t *eng, int k, double *ms)
{
    int B = eng->cfg.batch, M = eng->mb, nb = (B + M - 1) / M, i;
    int b0 = k * M, b1 = b0 + M < B ? b0 + M : B;
    hlx_status_t st, st2 = HLX_OK;
    uint64_t t0;

    if (k < 1 || k >= nb)
        return HLX_ERR_INVALID;
    for (i = 0; i < nb; i++)
        eng->reqs[i] = NULL;
    st = hlx_phase_a2a_post(eng, b0 - M, b0, &eng->reqs[k - 1]);
    t0 = hlx_now_ns();
    if (st == HLX_OK)
        st = hlx_phase_attn(eng, 0, b0, b1, hlx_schedule_progress, 0);
    if (st == HLX_OK)
        st = hlx_phase_pack(eng, b0, b1);
    *ms = (double)(hlx_now_ns() - t0) * 1e-6;
    if (eng->reqs[k - 1] != NULL) {
        st2 = hlx_comm_wait(eng->reqs[k - 1]);
        eng->reqs[k - 1] = NULL;
    }
    return st != HLX_OK ? st : st2;
}

hlx_status_t hlx_schedule_exchange(hlx_engine_t *eng, int l)
{
    return eng->mb >= eng->cfg.batch ? hlx_schedule_lockstep_attn(eng, l)
                                     : hlx_schedule_hopb_attn(eng, l);
}

hlx_status_t hlx_schedule_step(hlx_engine_t *eng)
{
    int l;
    hlx_status_t st;

    /* HELIX_FAULT's step is a decode step: none fires in the prompt's steps (HELIX_PREFILL
     * =steps runs them through here with eng->step still 0) */
    eng->fault_now = eng->fault && !eng->prefilling
                         ? hlx_fault_bits(eng->fault, eng->info.rank, eng->step) : 0;
    if (eng->fault_now & HLX_FAULT_KILL)
        raise(SIGKILL);
    atomic_store_explicit(&eng->wd_where, eng->fault_now & HLX_FAULT_HANG
                          ? "the scripted hang (HELIX_FAULT)" : "the step's start",
                          memory_order_relaxed);
    while (eng->fault_now & HLX_FAULT_HANG) /* only the step watchdog ends this */
        pause();
    eng->tl_n = 0;
    eng->hopb_attn_ns = 0;
    eng->step_t0 = hlx_now_ns();
    /* every layer, row and head of this step is at eng->pos: its RoPE cos and sin once (at
     * the position keys turn at: under dual chunk attention, within their chunk) */
    hlx_rope_fill_cs(eng->rope_freq_h, eng->rope.mscale, eng->m.rope_dim,
                     hlx_phase_rot_pos(eng, eng->pos, -1), eng->rope_cs);
    eng->rope.cs = eng->rope_cs;
    eng->rope.cs_pos = hlx_phase_rot_pos(eng, eng->pos, -1);
    st = hlx_phase_embed(eng);
    for (l = 0; l < eng->m.layers && st == HLX_OK; l++) {
        st = hlx_phase_qkv(eng, l);
        if (st == HLX_OK)
            st = hlx_schedule_exchange(eng, l);
        if (st == HLX_OK)
            st = hlx_phase_merge(eng, l);
        if (st == HLX_OK)
            st = hlx_phase_oproj(eng, l);
        if (st == HLX_OK)
            st = hlx_phase_allreduce(eng, l, HLX_PHASE_OPROJ_AR);
        if (st == HLX_OK)
            st = hlx_phase_ffn(eng, l);
        if (st == HLX_OK)
            st = hlx_phase_allreduce(eng, l, HLX_PHASE_FFN_AR);
    }
    if (st != HLX_OK)
        return st;
    if (hlx_layout_kv_owner(&eng->lay, eng->pos) == eng->lay.kvp_rank)
        eng->kv_len++;
    eng->pos++;
    return hlx_phase_head(eng);
}

double hlx_schedule_model(int B, int M, double c, double cb, double m1, double mB)
{
    int nb = (B + M - 1) / M, last = B - (nb - 1) * M;
    double mm = B > 1 ? m1 + (M - 1) * (mB - m1) / (B - 1) : m1;
    double ml = B > 1 ? m1 + (last - 1) * (mB - m1) / (B - 1) : m1;

    if (mm < m1)
        mm = m1;
    if (ml < m1)
        ml = m1;
    /* c + (nb - 1) max(c_busy, m) + m, with the last micro-batch possibly smaller: the
     * pipeline of micro-batches at c_busy, its first one's attention (nothing in flight
     * beside it) taken back to c */
    return nb == 1 ? c * B + mB
                   : hlx_hopb_pipeline(nb, cb * M, mm, cb * last, ml) - (cb - c) * M;
}

/* c_busy on this rank: a request's attention while the exchange of the micro-batch before
 * it is in flight (on a CPU rank UCX's progress calls and the kernel's tcp work take the
 * core it computes on; docs/transport.md). One pipelined trial of layer 0 in two
 * micro-batches, at the lengths of the step that just ran: the second one's attention
 * and packing untimed, timed idle, then timed again while the first one's exchange is in
 * flight and progressed from inside it (hlx_schedule_attn_busy). The untimed run leaves
 * its KV as warm (or as cold) for both timed ones, so their difference per request is
 * what the exchange adds; c_busy is c plus that, never below c (a negative difference
 * is noise). It costs about one and a half layers' attention and half an exchange, once.
 * *why_p says why nothing was measured (*cb_p 0). */
static hlx_status_t hlx_schedule_busy_trial(hlx_engine_t *eng, double c, double *cb_p,
                                            const char **why_p)
{
    int B = eng->cfg.batch, M = (B + 1) / 2, owned, i;
    hlx_tl_event_t *tl = eng->tl;
    unsigned fault = eng->fault_now;
    double idle = 0, busy = 0;
    hlx_status_t st = HLX_OK;
    uint64_t t0;

    *cb_p = 0;
    *why_p = NULL;
    if (B < 2) /* the same on every rank, as KVP is */
        *why_p = "batch 1: one micro-batch";
    else if (eng->lay.kvp < 2)
        *why_p = "KVP 1: no exchange in flight";
    if (*why_p != NULL)
        return HLX_OK;
    /* The backend is each rank's own (--device auto: a rank with a GPU and one without
     * may share a KVP group): the group skips the trial, whose barrier and exchange are
     * collective, when any of its ranks has its attention on a device. */
    {
        float device = strcmp(eng->be.ops->name, "host") != 0;
        st = hlx_comm_allreduce_sum_f32(eng->kvp_comm, &device, 1);
        if (st != HLX_OK)
            return st;
        if (device > 0) {
            *why_p = "attention on a device in the KVP group";
            return HLX_OK;
        }
    }
    /* the step appended at pos - 1 on its owner: back to the lengths its attention saw */
    eng->pos--;
    owned = hlx_layout_kv_owner(&eng->lay, eng->pos) == eng->lay.kvp_rank;
    eng->kv_len -= owned;
    eng->tl = NULL; /* no step's: the trial's tests leave the last step's timeline alone */
    eng->fault_now = 0;
    eng->mb = M;
    /* micro-batch 1 untimed first (its KV as warm, or as cold, for both timed runs), then
     * idle, then beside micro-batch 0's exchange (the step packed it), the ranks aligned */
    for (i = 0; i < 2 && st == HLX_OK; i++) {
        t0 = hlx_now_ns();
        st = hlx_phase_attn(eng, 0, M, B, NULL, 0);
        if (st == HLX_OK)
            st = hlx_phase_pack(eng, M, B);
        idle = (double)(hlx_now_ns() - t0) * 1e-6;
    }
    if (st == HLX_OK)
        st = hlx_comm_barrier(eng->kvp_comm);
    if (st == HLX_OK)
        st = hlx_schedule_attn_busy(eng, 1, &busy);
    eng->mb = B;
    eng->fault_now = fault;
    eng->tl = tl;
    eng->kv_len += owned;
    eng->pos++;
    if (st == HLX_OK)
        *cb_p = c + fmax(0.0, (busy - idle) / (B - M));
    return st;
}

hlx_status_t hlx_schedule_decide(hlx_engine_t *eng)
{
    int B = eng->cfg.batch, M, best = B, r, i, n = eng->info.size;
    double mine[5], all[5 * 64], c, cb, m1, mB, po, t_best, t_lock, m1_min = DBL_MAX;
    double p_min = DBL_MAX, cost_best, trial_ms;
    double *gath = all;
    const char *busy_why = NULL;
    hlx_status_t st = HLX_OK;
    uint64_t t0;

    /* c: attention per request and layer, from the lockstep step that just ran; measured
     * now after a barrier (the step's own exchanges include waiting for late peers and
     * the first connection set-up), best of three, re-sending the same data: m1 and mB,
     * the exchange of one request and of the batch, and po, the CPU time of posting one,
     * which every extra micro-batch adds and no overlap hides; then c_busy, the attention
     * beside an exchange in flight. */
    mine[0] = (double)(hlx_schedule_queue_timed(eng) ? eng->hopb_attn_ns
                                                     : eng->phase_ns[HLX_PHASE_ATTN]) *
              1e-6 / ((double)eng->m.layers * B);
    mine[2] = DBL_MAX;
    for (i = 0; i < 3 && st == HLX_OK; i++) {
        st = hlx_comm_barrier(eng->kvp_comm);
        t0 = hlx_now_ns();
        if (st == HLX_OK)
            st = hlx_phase_a2a(eng, 0, B);
        mine[2] = fmin(mine[2], (double)(hlx_now_ns() - t0) * 1e-6);
    }
    for (i = 0; i < 3 && st == HLX_OK; i++) {
        hlx_comm_req_t *req = NULL;
        uint64_t tp;
        st = hlx_comm_barrier(eng->kvp_comm);
        t0 = hlx_now_ns();
        if (st == HLX_OK)
            st = hlx_phase_a2a_post(eng, 0, 1, &req);
        tp = hlx_now_ns();
        if (st == HLX_OK)
            st = hlx_comm_wait(req);
        m1_min = fmin(m1_min, (double)(hlx_now_ns() - t0) * 1e-6);
        p_min = fmin(p_min, (double)(tp - t0) * 1e-6);
    }
    t0 = hlx_now_ns();
    if (st == HLX_OK)
        st = hlx_schedule_busy_trial(eng, mine[0], &mine[4], &busy_why);
    trial_ms = (double)(hlx_now_ns() - t0) * 1e-6;
    if (st != HLX_OK)
        return st;
    mine[1] = m1_min;
    mine[3] = p_min;
    if (n > 64 && (gath = malloc(sizeof(double) * 5 * (size_t)n)) == NULL)
        return HLX_ERR_NOMEM;
    /* Every rank must choose the same size: agree on the slowest rank's figures. */
    st = hlx_comm_allgather(eng->world, mine, sizeof(mine), gath);
    c = cb = m1 = mB = po = 0;
    for (r = 0; r < n && st == HLX_OK; r++) {
        c  = fmax(c, gath[5 * r]);
        m1 = fmax(m1, gath[5 * r + 1]);
        mB = fmax(mB, gath[5 * r + 2]);
        po = fmax(po, gath[5 * r + 3]);
        cb = fmax(cb, gath[5 * r + 4]);
    }
    if (gath != all)
        free(gath);
    if (st != HLX_OK)
        return st;
    /* Measured on some rank (0 where it was not): c_busy; else the model takes c. */
    eng->hopb_busy_why = cb > 0 ? NULL : busy_why;
    cb = cb > 0 ? fmax(cb, c) : c;
    /* The choice weighs the model plus po per extra micro-batch. auto keeps lockstep
     * unless that predicts a gain; on always splits (B > 1). */
    t_lock = hlx_schedule_model(B, B, c, cb, m1, mB);
    t_best = t_lock;
    cost_best = eng->cfg.hopb == HLX_HOPB_ON && B > 1 ? DBL_MAX : t_lock;
    for (M = B - 1; M >= 1; M--) {
        double t = hlx_schedule_model(B, M, c, cb, m1, mB);
        double cost = t + ((B + M - 1) / M - 1) * po;
        if (cost < cost_best * 0.999 || cost_best == DBL_MAX) {
            cost_best = cost;
            t_best = t;
            best = M;
        }
    }
    eng->mb = best;
    eng->hopb_c_ms = c * best;
    eng->hopb_cb_ms = eng->hopb_busy_why == NULL ? cb * best : 0;
    eng->hopb_m1_ms = m1;
    eng->hopb_mb_ms = B > 1 ? fmax(m1, m1 + (best - 1) * (mB - m1) / (B - 1)) : m1;
    eng->hopb_mbatch_ms = mB;
    eng->hopb_post_ms = po;
    eng->hopb_pred_ms = t_best;
    eng->hopb_decided = 1;
    if (eng->hopb_busy_why == NULL)
        hlx_info(HLX_SUB_CORE, "hopb: c_busy %.4f ms/request (%.2f c), from a trial of "
                 "%.4f ms on rank %d", cb, cb / c, trial_ms, eng->info.rank);
    else
        hlx_info(HLX_SUB_CORE, "hopb: c_busy not measured (%s): c for it",
                 eng->hopb_busy_why);
    hlx_info(HLX_SUB_CORE, "hopb: c %.4f ms/request, m %.4f ms (1 request) .. %.4f ms (%d), "
             "post %.4f ms; micro-batch %d: predicted %.4f ms vs lockstep %.4f ms per layer",
             c, m1, mB, B, po, best, t_best, t_lock);
    return HLX_OK;
}

hlx_status_t hlx_schedule_write_timeline(const hlx_engine_t *eng, const char *path, char *err,
                                         size_t errlen)
{
    hlx_out_t out;
    FILE *f;
    int i, j, l, col, width = 64;
    hlx_status_t st = hlx_out_begin(&out, path, err, errlen);

    if (st != HLX_OK)
        return st;
    f = out.f;
    fprintf(f, "# helix decode timeline, rank %d, step %d, %d layer(s), batch %d, "
            "micro-batch %d (%s)\n", eng->info.rank, eng->step - 1, eng->m.layers,
            eng->cfg.batch, eng->mb, eng->mb < eng->cfg.batch ? "HOP-B" : "lockstep");
    fprintf(f, "# layer micro_batch kind begin_us end_us (since the step began)\n");
    for (i = 0; i < eng->tl_n; i++) {
        const hlx_tl_event_t *e = &eng->tl[i];
        fprintf(f, "%d %d %s %.1f %.1f\n", e->layer, e->mb, e->kind ? "exchange" : "attention",
                e->t0 * 1e-3, e->t1 * 1e-3);
    }
    /* One chart per layer, scaled to that layer's attention and exchange: A attention,
     * x exchange in flight (posted, not yet seen complete). */
    for (l = 0; l < eng->m.layers; l++) {
        uint64_t b = UINT64_MAX, end = 0;
        for (i = 0; i < eng->tl_n; i++)
            if (eng->tl[i].layer == l) {
                b = eng->tl[i].t0 < b ? eng->tl[i].t0 : b;
                end = eng->tl[i].t1 > end ? eng->tl[i].t1 : end;
            }
        if (end <= b)
            continue;
        fprintf(f, "# layer %d: %.1f .. %.1f us, one column = %.1f us\n", l, b * 1e-3,
                end * 1e-3, (double)(end - b) * 1e-3 / width);
        for (j = 0; j < eng->tl_n; j++) {
            const hlx_tl_event_t *e = &eng->tl[j];
            int c0, c1;
            if (e->layer != l)
                continue;
            c0 = (int)((e->t0 - b) * (uint64_t)width / (end - b + 1));
            c1 = (int)((e->t1 - b) * (uint64_t)width / (end - b + 1));
            fprintf(f, "# L%d mb%-2d %-4s |", l, e->mb, e->kind ? "xchg" : "attn");
            for (col = 0; col < width; col++)
                fputc(col >= c0 && col <= c1 ? (e->kind ? 'x' : 'A') : ' ', f);
            fputs("|\n", f);
        }
    }
    return hlx_out_end(&out, 1, err, errlen);
}
