/* Names and exit codes of hlx_status_t, and the reason-and-status helper (hlx_err.h). */
#include "hlx_err.h"

#include <stdarg.h>
#include <stdio.h>

hlx_status_t hlx_errbuf(char *buf, size_t len, hlx_status_t st, const char *fmt, ...)
{
    va_list ap;

    if (buf != NULL && len > 0) {
        va_start(ap, fmt);
        vsnprintf(buf, len, fmt, ap);
        va_end(ap);
    }
    return st;
}

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
