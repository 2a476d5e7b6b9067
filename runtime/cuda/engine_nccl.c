/* The engine's NCCL path: communicators for the world and the KVP group when the CUDA
 * backend runs and the ranks agree (HELIX_NCCL), and the phases' exchange, all-reduce and
 * all-gather enqueued on the backend's stream; host waits poll NCCL's errors. */
#include "hlx_engine_int.h"

#include "hlx_backend_cuda.h"
#include "hlx_log.h"
#include "hlx_nccl.h"

#include <helix/jobplace.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 when every pair of ranks is linked by NVLink in the job-wide placement (the same
 * answer on every rank: it reads every rank's row). */
static int hlx_engine_all_nvlink(const hlx_engine_t *eng)
{
    int n = eng->info.size, r, p, ok = n > 1 && eng->place != NULL;
    hlx_link_t *links = calloc((size_t)n, sizeof(*links));

    for (r = 0; ok && links != NULL && r < n; r++) {
        if (hlx_place_links(eng->place, r, links) != n)
            ok = 0;
        for (p = 0; ok && p < n; p++)
            if (p != r && links[p] != HLX_LINK_NVLINK)
                ok = 0;
    }
    free(links);
    return ok && links != NULL;
}

hlx_status_t hlx_engine_nccl_open(hlx_engine_t *eng, char *err, size_t errlen)
{
    const char *mode = eng->set.nccl;
    int32_t want = 0, *votes = NULL, use = 1, r;
    char key[64];
    double t = eng->cfg.timeout_s > 0 ? eng->cfg.timeout_s : 30.0;
    hlx_status_t st;

    if (strcmp(mode, "auto") && strcmp(mode, "on") && strcmp(mode, "off"))
        return hlx_engine_fail(err, errlen, HLX_ERR_INVALID, "HELIX_NCCL=%s: expected auto, on "
                               "or off", mode);
    if (!strcmp(eng->be.ops->name, "cuda") && hlx_nccl_compiled() && strcmp(mode, "off"))
        want = !strcmp(mode, "on") || hlx_engine_all_nvlink(eng);
    if (!strcmp(mode, "on") && !want)
        hlx_warn("HELIX_NCCL=on: %s: the host transport carries the collectives",
                 strcmp(eng->be.ops->name, "cuda") ? "the backend is not cuda"
                                                   : "this build has no NCCL");
    /* every rank must agree: one vote each, NCCL only when all want it */
    votes = calloc((size_t)eng->info.size, sizeof(*votes));
    if (votes == NULL)
        return HLX_ERR_NOMEM;
    snprintf(key, sizeof(key), "hlx.nccl.vote.%d", hlx_boot_calls(eng->boot));
    st = hlx_boot_allgather(eng->boot, key, &want, sizeof(want), votes);
    for (r = 0; st == HLX_OK && r < eng->info.size; r++)
        use = use && votes[r];
    free(votes);
    if (st != HLX_OK)
        return hlx_engine_fail(err, errlen, st, "agreeing on NCCL failed: %s", hlx_status_str(st));
    if (!use)
        return HLX_OK;
    st = hlx_nccl_create(eng->boot, 0, eng->info.rank, t, &eng->nccl_world, err, errlen);
    if (st == HLX_OK)
        st = hlx_nccl_create(eng->boot, eng->lay.tpa_rank, eng->lay.kvp_rank, t, &eng->nccl_kvp,
                             err, errlen);
    if (st != HLX_OK)
        return st;
    /* NCCL runs in the queue's order: the exchange is not overlapped by micro-batches */
    eng->mb = eng->cfg.batch;
    eng->hopb_decided = 1;
    hlx_info(HLX_SUB_NET, "rank %d: NCCL %d for the exchange, all-reduce and all-gather "
             "(HELIX_NCCL=%s)", eng->info.rank, hlx_nccl_version(), mode);
    return HLX_OK;
}

void hlx_engine_nccl_close(hlx_engine_t *eng)
{
    hlx_nccl_destroy(eng->nccl_kvp);
    hlx_nccl_destroy(eng->nccl_world);
    eng->nccl_kvp = eng->nccl_world = NULL;
}

static hlx_status_t hlx_engine_nccl_check(hlx_engine_t *eng, hlx_nccl_t *c, hlx_status_t st)
{
    if (st != HLX_OK)
        hlx_engine_set_errmsg(eng, "%s", hlx_nccl_error(c));
    return st;
}

hlx_status_t hlx_engine_sync(hlx_engine_t *eng)
{
    if (eng->nccl_world != NULL)
        return hlx_engine_nccl_check(eng, eng->nccl_world,
                                     hlx_nccl_wait(eng->nccl_world,
                                                   hlx_backend_cuda_stream(eng->q)));
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
