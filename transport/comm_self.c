/* Backend for a world of one (and the default collectives table): every collective is a
 * local copy done by comm.c, so the point-to-point entries are stubs never reached. */
#include "comm_internal.h"

static hlx_status_t hlx_self_open(hlx_comm_be_t *be, hlx_boot_t *boot)
{
    (void)boot;
    return be->net->size == 1 ? HLX_OK : HLX_ERR_UNSUPPORTED;
}

static void hlx_self_close(hlx_comm_be_t *be, int graceful)
{
    (void)be;
    (void)graceful;
}

static hlx_status_t hlx_self_isend(hlx_comm_be_t *be, int peer, const void *buf,
                                   size_t len, uint64_t tag, hlx_comm_slot_t *slot)
{
    return HLX_ERR_UNSUPPORTED;
}

static hlx_status_t hlx_self_irecv(hlx_comm_be_t *be, int peer, void *buf, size_t len,
                                   uint64_t tag, hlx_comm_slot_t *slot)
{
    return HLX_ERR_UNSUPPORTED;
}

static int hlx_self_progress(hlx_comm_be_t *be)
{
    (void)be;
    return 0;
}

static void hlx_self_cancel(hlx_comm_be_t *be, hlx_comm_slot_t *slot)
{
    (void)be;
    (void)slot;
}

static const char *hlx_self_strerror(int backend_status)
{
    (void)backend_status;
    return "no peers";
}

const hlx_comm_ops_t hlx_comm_ops_self = {
    .name              = "self",
    .open              = hlx_self_open,
    .close             = hlx_self_close,
    .isend             = hlx_self_isend,
    .irecv             = hlx_self_irecv,
    .progress          = hlx_self_progress,
    .cancel            = hlx_self_cancel,
    .strerror          = hlx_self_strerror,
    .ialltoallv        = hlx_comm_p2p_ialltoallv,
    .allreduce_sum_f32 = hlx_comm_p2p_allreduce_sum_f32,
    .allgather         = hlx_comm_p2p_allgather,
    .sub_create        = hlx_comm_p2p_sub_create,
    .sub_destroy       = hlx_comm_p2p_sub_destroy,
};
