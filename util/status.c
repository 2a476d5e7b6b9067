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

/* The exit status convention (docs/usage.md, "Exit status"): 2 when the command was
 * refused before any work and the fix is in what it was given (flags, HELIX_* values,
 * files, checkpoint, layout, or something they ask of this version, build or machine
 * that it does not do); 1 when the run itself failed. */
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
    case HLX_ERR_UNSUPPORTED:
        return 2;
    case HLX_INPROGRESS:
    case HLX_ERR_NOMEM:
    case HLX_ERR_IO:
    case HLX_ERR_TIMEOUT:
    case HLX_ERR_TRANSPORT:
    case HLX_ERR_BOOTSTRAP:
    case HLX_ERR_PEER:
    case HLX_ERR_CHECK:
    case HLX_ERR_INTERNAL:
    case HLX_ERR_NUMERIC:
        return 1;
    }
    return 1;
}

int hlx_status_run_exit_code(hlx_status_t status)
{
    /* Once the run is under way, an operation a backend turns out not to have is a run
     * that was accepted and then failed, not input to fix. */
    return status == HLX_ERR_UNSUPPORTED ? 1 : hlx_status_exit_code(status);
}
