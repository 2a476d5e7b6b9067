/* The backend of a communicator's collectives from its members' link classes and the
 * process's capabilities (hlx_comm_choose_backend): NCCL inside an NVLink domain on
 * device buffers, UCX otherwise (on device memory, or staged through pinned host memory),
 * the host transport on host buffers. Pure: no communication, no library calls. */
#include "hlx_comm.h"
#include "hlx_err.h"

#include <stdio.h>
#include <stdlib.h>
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

/* The reason into why, the choice back. */
#define hlx_comm_why(_c, _why, _len, ...) \
    (hlx_errbuf((_why), (_len), HLX_OK, __VA_ARGS__), (_c))

/* The first pair (a, b) of members not linked by NVLink: 1 found, 0 every pair is,
 * -1 a row could not be read. */
static int hlx_comm_non_nvlink(int n, hlx_comm_row_fn_t row_fn, void *arg, hlx_link_t *row,
                               int *a_p, int *b_p)
{
    int a, b;

    for (a = 0; a < n; a++) {
        if (row_fn(arg, a, row) != 0)
            return -1;
        for (b = 0; b < n; b++)
            if (a != b && row[b] != HLX_LINK_NVLINK) {
                *a_p = a, *b_p = b;
                *row = row[b];
                return 1;
            }
    }
    return 0;
}

typedef struct hlx_comm_matrix_arg {
    const hlx_link_t *m;
    int               n;
} hlx_comm_matrix_arg_t;

static int hlx_comm_matrix_row(void *arg, int member, hlx_link_t *row)
{
    const hlx_comm_matrix_arg_t *ma = arg;

    memcpy(row, ma->m + (size_t)member * ma->n, sizeof(*row) * (size_t)ma->n);
    return 0;
}

hlx_comm_choice_t hlx_comm_choose_backend(const hlx_link_t *pair_links, int n,
                                          const hlx_comm_caps_t *caps, char *why,
                                          size_t whylen)
{
    hlx_comm_matrix_arg_t ma = { pair_links, n };

    if (n > 1 && pair_links == NULL)
        return hlx_comm_why(HLX_COMM_CHOICE_HOST, why, whylen, "no group or capabilities "
                            "given: the host transport");
    return hlx_comm_choose_backend_rows(n, hlx_comm_matrix_row, &ma, caps, why, whylen);
}

hlx_comm_choice_t hlx_comm_choose_backend_rows(int n, hlx_comm_row_fn_t row_fn, void *arg,
                                               const hlx_comm_caps_t *caps, char *why,
                                               size_t whylen)
{
    hlx_comm_choice_t ucx;
    hlx_link_t *row = NULL;
    int found;
    const char *mode;
    char not_nccl[160];
    int a = 0, b = 0;

    if (caps == NULL || n < 1 || row_fn == NULL)
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
    else {
        row = malloc(sizeof(*row) * (size_t)n);
        found = row == NULL ? -1 : hlx_comm_non_nvlink(n, row_fn, arg, row, &a, &b);
        if (found == 0) {
            free(row);
            return hlx_comm_why(HLX_COMM_CHOICE_NCCL, why, whylen, "HELIX_NCCL=auto: every "
                                "pair of the %d members is NVLink", n);
        }
        if (found < 0)
            snprintf(not_nccl, sizeof(not_nccl), "HELIX_NCCL=auto: the members' link classes "
                     "are unknown");
        else
            snprintf(not_nccl, sizeof(not_nccl), "HELIX_NCCL=auto: members %d and %d are "
                     "linked by %s, not NVLink", a, b, (unsigned)*row < HLX_LINK_COUNT
                     ? hlx_comm_link_names[*row] : "an unknown class");
        free(row);
    }
    if (n == 1)
        return hlx_comm_why(HLX_COMM_CHOICE_SELF, why, whylen, "%s: a group of one copies "
                            "within the rank", not_nccl);
    return hlx_comm_why(ucx, why, whylen, "%s: UCX %s", not_nccl,
                        ucx == HLX_COMM_CHOICE_UCX_DEVICE
                            ? "on device memory (UCX has the CUDA memory type)"
                            : "through pinned host memory (this UCX cannot read CUDA memory)");
}
