/* The backend of a communicator's collectives from its members' link classes and the
 * process's capabilities (hlx_comm_choose_backend): NCCL inside an NVLink domain on
 * device buffers, UCX otherwise (on device memory, or staged through pinned host memory),
 * the host transport on host buffers. Pure: no communication, no library calls. */
#include "hlx_comm.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const hlx_comm_choice_names[HLX_COMM_CHOICE_COUNT] = {
    "host", "self", "ucx-staged", "ucx-device", "nccl",
};

static const char *const hlx_comm_link_names[HLX_LINK_COUNT] = {
    "self", "shm", "nvlink", "pcie", "rdma", "tcp",
};

const char *hlx_comm_choice_name(hlx_comm_choice_t choice)
{
    return (unsigned)choice < HLX_COMM_CHOICE_COUNT ? hlx_comm_choice_names[choice] : "?";
}

hlx_status_t hlx_nccl_mode_parse(const char *s, hlx_nccl_mode_t *mode_p)
{
    if (s == NULL)
        return HLX_ERR_INVALID;
    if (!strcmp(s, "auto"))
        *mode_p = HLX_NCCL_AUTO;
    else if (!strcmp(s, "on"))
        *mode_p = HLX_NCCL_ON;
    else if (!strcmp(s, "off"))
        *mode_p = HLX_NCCL_OFF;
    else
        return HLX_ERR_INVALID;
    return HLX_OK;
}

static hlx_comm_choice_t hlx_comm_why(hlx_comm_choice_t c, char *why, size_t whylen,
                                      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static hlx_comm_choice_t hlx_comm_why(hlx_comm_choice_t c, char *why, size_t whylen,
                                      const char *fmt, ...)
{
    va_list ap;

    if (why != NULL && whylen > 0) {
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return c;
}

/* The first pair (a, b) of members not linked by NVLink; 0 when every pair is. */
static int hlx_comm_non_nvlink(const hlx_link_t *links, int n, int *a_p, int *b_p)
{
    int a, b;

    for (a = 0; a < n; a++)
        for (b = 0; b < n; b++)
            if (a != b && links[(size_t)a * n + b] != HLX_LINK_NVLINK) {
                *a_p = a, *b_p = b;
                return 1;
            }
    return 0;
}

hlx_comm_choice_t hlx_comm_choose_backend(const hlx_link_t *pair_links, int n,
                                          const hlx_comm_caps_t *caps, char *why,
                                          size_t whylen)
{
    hlx_comm_choice_t ucx;
    const char *mode;
    char not_nccl[160];
    int a = 0, b = 0;

    if (caps == NULL || n < 1 || (n > 1 && pair_links == NULL))
        return hlx_comm_why(HLX_COMM_CHOICE_HOST, why, whylen, "no group or capabilities "
                            "given: the host transport");
    if (!caps->device_buffers)
        return hlx_comm_why(HLX_COMM_CHOICE_HOST, why, whylen, "host buffers: the host "
                            "transport reads them");
    mode = caps->nccl_mode == HLX_NCCL_ON ? "on" : caps->nccl_mode == HLX_NCCL_OFF ? "off"
                                                                                  : "auto";
    ucx = caps->ucx_device_memory ? HLX_COMM_CHOICE_UCX_DEVICE : HLX_COMM_CHOICE_UCX_STAGED;
    /* why NCCL is not taken, then what the group falls back to */
    if (caps->nccl_mode == HLX_NCCL_OFF)
        snprintf(not_nccl, sizeof(not_nccl), "HELIX_NCCL=off");
    else if (!caps->nccl_compiled)
        snprintf(not_nccl, sizeof(not_nccl), "HELIX_NCCL=%s but this build has no NCCL", mode);
    else if (caps->nccl_mode == HLX_NCCL_ON)
        return hlx_comm_why(HLX_COMM_CHOICE_NCCL, why, whylen, "HELIX_NCCL=on: NCCL for %d "
                            "member(s) on device buffers", n);
    else if (n == 1)
        snprintf(not_nccl, sizeof(not_nccl), "HELIX_NCCL=auto, a group of one");
    else if (hlx_comm_non_nvlink(pair_links, n, &a, &b)) {
        hlx_link_t l = pair_links[(size_t)a * n + b];
        snprintf(not_nccl, sizeof(not_nccl), "HELIX_NCCL=auto: members %d and %d are linked "
                 "by %s, not NVLink", a, b,
                 (unsigned)l < HLX_LINK_COUNT ? hlx_comm_link_names[l] : "an unknown class");
    } else
        return hlx_comm_why(HLX_COMM_CHOICE_NCCL, why, whylen, "HELIX_NCCL=auto: every pair "
                            "of the %d members is NVLink", n);
    if (n == 1)
        return hlx_comm_why(HLX_COMM_CHOICE_SELF, why, whylen, "%s: a group of one copies "
                            "within the rank", not_nccl);
    return hlx_comm_why(ucx, why, whylen, "%s: UCX %s", not_nccl,
                        ucx == HLX_COMM_CHOICE_UCX_DEVICE
                            ? "on device memory (UCX has the CUDA memory type)"
                            : "through pinned host memory (this UCX cannot read CUDA memory)");
}
