/* Names and exit codes of hlx_status_t. */
#include <helix/status.h>

const char *hlx_status_str(hlx_status_t status)
{
    switch (status) {
    case HLX_OK:              return "success";
    case HLX_INPROGRESS:      return "in progress";
    case HLX_ERR_INVALID:     return "invalid argument";
    case HLX_ERR_NOMEM:       return "out of memory";
    case HLX_ERR_IO:          return "input/output error";
    case HLX_ERR_TIMEOUT:     return "timed out";
    case HLX_ERR_UNSUPPORTED: return "unsupported";
    case HLX_ERR_TRANSPORT:   return "transport error";
    case HLX_ERR_BOOTSTRAP:   return "bootstrap error";
    case HLX_ERR_MISMATCH:    return "configuration mismatch between ranks";
    case HLX_ERR_PARSE:       return "parse error";
    case HLX_ERR_NOSPACE:     return "does not fit in memory";
    case HLX_ERR_PEER:        return "peer lost";
    case HLX_ERR_CHECK:       return "check against reference failed";
    case HLX_ERR_INTERNAL:    return "internal error";
    case HLX_ERR_NOT_FOUND:   return "not found";
    case HLX_ERR_NUMERIC:     return "non-finite value";
    }
    return "unknown status";
}

int hlx_status_exit_code(hlx_status_t status)
{
    switch (status) {
    case HLX_OK:
        return 0;
    case HLX_ERR_INVALID:
    case HLX_ERR_PARSE:
    case HLX_ERR_MISMATCH:
    case HLX_ERR_NOSPACE:
    case HLX_ERR_NOT_FOUND:
        return 2;
    default:
        return 1;
    }
}
