/* One status type for the whole runtime: 0 is success, negative values are errors. */
#ifndef HELIX_STATUS_H
#define HELIX_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hlx_status {
    HLX_OK              = 0,
    HLX_INPROGRESS      = 1,   /* non-blocking operation still running */
    HLX_ERR_INVALID     = -1,  /* bad argument, bad configuration */
    HLX_ERR_NOMEM       = -2,
    HLX_ERR_IO          = -3,  /* file or system call failed */
    HLX_ERR_TIMEOUT     = -4,  /* a deadline passed */
    HLX_ERR_UNSUPPORTED = -5,  /* not done by this version, build or machine */
    HLX_ERR_TRANSPORT   = -6,  /* UCX / NCCL / shm failure */
    HLX_ERR_BOOTSTRAP   = -7,  /* PMIx failure */
    HLX_ERR_MISMATCH    = -8,  /* ranks disagree (configuration, version) */
    HLX_ERR_PARSE       = -9,  /* malformed input file */
    HLX_ERR_NOSPACE     = -10, /* does not fit in memory */
    HLX_ERR_PEER        = -11, /* a peer died or stopped answering */
    HLX_ERR_CHECK       = -12, /* result differs from the reference */
    HLX_ERR_INTERNAL    = -13,
    HLX_ERR_NOT_FOUND   = -14,
    HLX_ERR_NUMERIC     = -15  /* NaN or Inf where a finite value is required */
} hlx_status_t;

/* Short human-readable name of a status ("timeout", "parse error", ...). */
const char *hlx_status_str(hlx_status_t status);

/* Process exit code for a status met before any work (docs/usage.md, "Exit status"): 0 ok;
 * 2 when the input is to be fixed: invalid, parse, mismatch, nospace, not found and
 * unsupported (what the flags, files or checkpoint ask is not done by this version, build
 * or machine); 1 when the run failed: out of memory, I/O, timeout, transport, bootstrap,
 * peer, check, internal, numeric (and any other value). */
int hlx_status_exit_code(hlx_status_t status);
/* The same for a status met once the run is under way (after start-up checks accepted it):
 * unsupported is then a failure of the run, 1; every other status as above. */
int hlx_status_run_exit_code(hlx_status_t status);

#ifdef __cplusplus
}
#endif
#endif
