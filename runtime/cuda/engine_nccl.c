/* The backends of the engine's collectives, per communicator (the KVP group, the world):
 * chosen from the members' link classes (hlx_comm_choose_backend) and agreed by them;
 * NCCL communicators for those on NCCL, with the phases' exchange, all-reduce and
 * all-gather enqueued on the backend's stream (host waits poll NCCL's errors); pinned
 * staging buffers for those on ucx-staged. */
#include "hlx_engine_int.h"

#include "hlx_backend_cuda.h"
#include "hlx_log.h"
#include "hlx_nccl.h"

#include <helix/jobplace.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rows of a group's link matrix from the job-wide placement: member m is world rank
 * base + m (the KVP group: tpa_rank * kvp + j; the world: r). */
typedef struct hlx_engine_rows {
    const hlx_placement_t *place;      /* NULL: the classes are unknown */
    int                    base, n;    /* first member's world rank, members */
    int                    size;       /* world size */
    hlx_link_t            *world_row;  /* [size] */
} hlx_engine_rows_t;

static int hlx_engine_row(void *arg, int member, hlx_link_t *row)
{
    hlx_engine_rows_t *er = arg;
    int b;

    if (er->place == NULL || er->world_row == NULL ||
        hlx_place_links(er->place, er->base + member, er->world_row) != er->size)
        return -1;
    for (b = 0; b < er->n; b++)
        row[b] = er->world_row[er->base + b];
    return 0;
}

static hlx_comm_choice_t hlx_engine_choose(const hlx_engine_t *eng, int base, int n,
                                           const hlx_comm_caps_t *caps, char *why,
                                           size_t whylen)
{
    hlx_engine_rows_t er = { eng->place, base, n, eng->info.size, NULL };
    hlx_comm_choice_t c;

    er.world_row = calloc((size_t)eng->info.size, sizeof(*er.world_row));
    c = hlx_comm_choose_backend_rows(n, hlx_engine_row, &er, caps, why, whylen);
    free(er.world_row);
    return c;
}

/* What each rank says in the agreement: its choice and reason per communicator. */
typedef struct hlx_engine_vote {
    int32_t choice[HLX_ENGINE_COMMS];
    char    why[HLX_ENGINE_COMMS][160];
} hlx_engine_vote_t;

/* NCCL for a communicator only when every member chose it; otherwise a rank that chose it
 * takes its own UCX path, with the dissenting member's reason. */
static void hlx_engine_agree(hlx_engine_t *eng, int c, const hlx_engine_vote_t *votes,
                             int base, int n, const hlx_comm_caps_t *caps)
{
    hlx_comm_caps_t no_nccl = *caps;
    int m;

    if (eng->comm_choice[c] != HLX_COMM_CHOICE_NCCL)
        return;
    for (m = 0; m < n; m++)
        if (votes[base + m].choice[c] != HLX_COMM_CHOICE_NCCL)
            break;
    if (m == n)
        return;
    no_nccl.nccl_mode = HLX_NCCL_OFF; /* decides without reading a link class */
    eng->comm_choice[c] = hlx_engine_choose(eng, base, n, &no_nccl, NULL, 0);
    snprintf(eng->comm_why[c], sizeof(eng->comm_why[c]), "rank %d cannot use NCCL (%.120s)",
             base + m, votes[base + m].why[c]);
}

/* ucx-staged: pinned host copies of the exchange's blocks and of the world's buffers. */
static hlx_status_t hlx_engine_stage_alloc(hlx_engine_t *eng)
{
    const hlx_layout_t *L = &eng->lay;
    size_t B = (size_t)eng->cfg.batch, dv1 = (size_t)eng->xpw + 1, k = (size_t)L->kvp - 1;
    size_t sn = eng->xs_displ[k] + B * (size_t)eng->xh_count[k] * dv1;
    size_t rn = eng->xr_displ[k] + B * (size_t)L->q_slice * dv1;
    size_t hn = B * (size_t)eng->m.hidden, gn = B * (size_t)L->vocab_pad;
    hlx_status_t st = HLX_OK;

    if (gn > SIZE_MAX / sizeof(float) / ((size_t)L->n + 1))
        return HLX_ERR_NOSPACE;
    gn *= (size_t)L->n + 1; /* the all-gather's input, then its output */
    if (eng->comm_choice[HLX_ENGINE_COMM_KVP] == HLX_COMM_CHOICE_UCX_STAGED) {
        st = eng->be.ops->pinned_alloc(&eng->be, sizeof(float) * sn, (void **)&eng->stage_send);
        if (st == HLX_OK)
            st = eng->be.ops->pinned_alloc(&eng->be, sizeof(float) * rn,
                                           (void **)&eng->stage_recv);
    }
    if (st == HLX_OK && eng->comm_choice[HLX_ENGINE_COMM_WORLD] == HLX_COMM_CHOICE_UCX_STAGED)
        st = eng->be.ops->pinned_alloc(&eng->be, sizeof(float) * (hn > gn ? hn : gn),
                                       (void **)&eng->stage_world);
    return st;
}

hlx_status_t hlx_engine_nccl_open(hlx_engine_t *eng, char *err, size_t errlen)
{
    const char *mode = eng->set.nccl;
    const char *names[HLX_ENGINE_COMMS] = { "KVP group", "world" };
    int kvp = eng->cfg.kvp, base = eng->lay.tpa_rank * kvp, size = eng->info.size;
    int any_kvp = 0, g, m, c;
    hlx_comm_caps_t caps;
    hlx_engine_vote_t *votes = NULL, mine;
    char key[64];
    double t = eng->cfg.timeout_s > 0 ? eng->cfg.timeout_s : 30.0;
    hlx_status_t st;

    memset(&caps, 0, sizeof(caps));
    if (hlx_nccl_mode_parse(mode, &caps.nccl_mode) != HLX_OK)
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "HELIX_NCCL=%s: expected auto, on "
                               "or off", mode);
    caps.device_buffers = !strcmp(eng->be.ops->name, "cuda");
    caps.nccl_compiled = hlx_nccl_compiled();
    caps.ucx_device_memory = caps.device_buffers && hlx_comm_device_memory(eng->world);
    eng->comm_choice[HLX_ENGINE_COMM_KVP] =
        hlx_engine_choose(eng, base, kvp, &caps, eng->comm_why[HLX_ENGINE_COMM_KVP],
                          sizeof(eng->comm_why[0]));
    eng->comm_choice[HLX_ENGINE_COMM_WORLD] =
        hlx_engine_choose(eng, 0, size, &caps, eng->comm_why[HLX_ENGINE_COMM_WORLD],
                          sizeof(eng->comm_why[0]));
    /* every member must agree: one vote per rank and communicator */
    memset(&mine, 0, sizeof(mine));
    for (c = 0; c < HLX_ENGINE_COMMS; c++) {
        mine.choice[c] = (int32_t)eng->comm_choice[c];
        snprintf(mine.why[c], sizeof(mine.why[c]), "%s", eng->comm_why[c]);
    }
    votes = calloc((size_t)size, sizeof(*votes));
    if (votes == NULL)
        return HLX_ERR_NOMEM;
    snprintf(key, sizeof(key), "hlx.nccl.vote.%d", hlx_boot_calls(eng->boot));
    st = hlx_boot_allgather(eng->boot, key, &mine, sizeof(mine), votes);
    if (st != HLX_OK) {
        free(votes);
        return hlx_engine_fail(err, errlen, st, "agreeing on the collectives' backends "
                               "failed: %s", hlx_status_str(st));
    }
    hlx_engine_agree(eng, HLX_ENGINE_COMM_KVP, votes, base, kvp, &caps);
    hlx_engine_agree(eng, HLX_ENGINE_COMM_WORLD, votes, 0, size, &caps);
    /* NCCL communicators are created by the whole world: is any KVP group on NCCL? */
    for (g = 0; g < eng->cfg.tpa && !any_kvp; g++) {
        for (m = 0; m < kvp && votes[g * kvp + m].choice[HLX_ENGINE_COMM_KVP] ==
                               HLX_COMM_CHOICE_NCCL; m++)
            ;
        any_kvp = m == kvp;
    }
    free(votes);
    /* HELIX_STAGE=on: host buffers too go through the staging copies, so that the cpu
     * backend runs that path. Staging is local to a rank (UCX carries the same bytes), so
     * ranks need not agree on it. */
    for (c = 0; c < HLX_ENGINE_COMMS && !strcmp(eng->set.stage, "on"); c++)
        if (eng->comm_choice[c] == HLX_COMM_CHOICE_HOST) {
            eng->comm_choice[c] = HLX_COMM_CHOICE_UCX_STAGED;
            snprintf(eng->comm_why[c], sizeof(eng->comm_why[c]), "HELIX_STAGE=on: host buffers "
                     "copied through the backend's pinned host memory");
        }
    if (caps.nccl_mode == HLX_NCCL_ON &&
        eng->comm_choice[HLX_ENGINE_COMM_WORLD] != HLX_COMM_CHOICE_NCCL)
        hlx_warn("HELIX_NCCL=on: the world's collectives use %s: %s",
                 hlx_comm_choice_name(eng->comm_choice[HLX_ENGINE_COMM_WORLD]),
                 eng->comm_why[HLX_ENGINE_COMM_WORLD]);
    for (c = 0; c < HLX_ENGINE_COMMS; c++)
        hlx_info(HLX_SUB_NET, "rank %d: %s collectives on %s: %s", eng->info.rank, names[c],
                 hlx_comm_choice_name(eng->comm_choice[c]), eng->comm_why[c]);
    if (eng->comm_choice[HLX_ENGINE_COMM_WORLD] == HLX_COMM_CHOICE_NCCL)
        st = hlx_nccl_create(eng->boot, 0, eng->info.rank, t, &eng->nccl_world, err, errlen);
    if (st == HLX_OK && any_kvp)
        st = hlx_nccl_create(eng->boot, eng->comm_choice[HLX_ENGINE_COMM_KVP] ==
                             HLX_COMM_CHOICE_NCCL ? eng->lay.tpa_rank : -1, eng->lay.kvp_rank,
                             t, &eng->nccl_kvp, err, errlen);
    if (st != HLX_OK)
        return st;
    st = hlx_engine_stage_alloc(eng);
    if (st != HLX_OK)
        return hlx_engine_fail(err, errlen, st, "allocating pinned host memory for the "
                               "transport's staging failed: %s", hlx_status_str(st));
    /* NCCL runs in the queue's order: the exchange is not overlapped by micro-batches. The
     * schedule is decided job-wide (hlx_schedule_decide is collective), so every rank runs
     * lockstep when any group exchanges through NCCL. */
    if (any_kvp) {
        eng->mb = eng->cfg.batch;
        eng->hopb_decided = 1;
    }
    if (eng->nccl_world != NULL || eng->nccl_kvp != NULL)
        hlx_info(HLX_SUB_NET, "rank %d: NCCL %d for%s%s (HELIX_NCCL=%s)", eng->info.rank,
                 hlx_nccl_version(), eng->nccl_kvp != NULL ? " the exchange" : "",
                 eng->nccl_world != NULL ? " the all-reduce and all-gather" : "", mode);
    return HLX_OK;
}

void hlx_engine_nccl_close(hlx_engine_t *eng)
{
    hlx_nccl_destroy(eng->nccl_kvp);
    hlx_nccl_destroy(eng->nccl_world);
    eng->nccl_kvp = eng->nccl_world = NULL;
    if (eng->be.ops != NULL) {
        eng->be.ops->pinned_free(&eng->be, eng->stage_send);
        eng->be.ops->pinned_free(&eng->be, eng->stage_recv);
        eng->be.ops->pinned_free(&eng->be, eng->stage_world);
    }
    eng->stage_send = eng->stage_recv = eng->stage_world = NULL;
}

static hlx_status_t hlx_engine_nccl_check(hlx_engine_t *eng, hlx_nccl_t *c, hlx_status_t st)
{
    if (st != HLX_OK)
        hlx_engine_set_errmsg(eng, "%s", hlx_nccl_error(c));
    return st;
}

/* With NCCL the wait polls each communicator's asynchronous errors (the KVP group's
 * first: once the queue is done, the second wait returns at once). */
hlx_status_t hlx_engine_sync(hlx_engine_t *eng)
{
    hlx_status_t st = HLX_OK;

    if (eng->nccl_kvp != NULL)
        st = hlx_engine_nccl_check(eng, eng->nccl_kvp,
                                   hlx_nccl_wait(eng->nccl_kvp, hlx_backend_cuda_stream(eng->q)));
    if (st == HLX_OK && eng->nccl_world != NULL)
        st = hlx_engine_nccl_check(eng, eng->nccl_world,
                                   hlx_nccl_wait(eng->nccl_world,
                                                 hlx_backend_cuda_stream(eng->q)));
    if (eng->nccl_kvp != NULL || eng->nccl_world != NULL)
        return st;
    return eng->be.ops->queue_sync(&eng->be, eng->q);
}

hlx_status_t hlx_engine_nccl_a2a(hlx_engine_t *eng)
{
    return hlx_engine_nccl_check(eng, eng->nccl_kvp,
        hlx_nccl_alltoallv(eng->nccl_kvp, eng->sendbuf, eng->a2a_sc, eng->a2a_sd, eng->recvbuf,
                           eng->a2a_rc, eng->a2a_rd, hlx_backend_cuda_stream(eng->q)));
}

hlx_status_t hlx_engine_nccl_allreduce(hlx_engine_t *eng, float *buf, size_t n)
{
    return hlx_engine_nccl_check(eng, eng->nccl_world,
        hlx_nccl_allreduce_sum_f32(eng->nccl_world, buf, n, hlx_backend_cuda_stream(eng->q)));
}

hlx_status_t hlx_engine_nccl_allgather(hlx_engine_t *eng, const void *in, size_t bytes,
                                       void *out)
{
    return hlx_engine_nccl_check(eng, eng->nccl_world,
        hlx_nccl_allgather(eng->nccl_world, in, bytes, out, hlx_backend_cuda_stream(eng->q)));
}
