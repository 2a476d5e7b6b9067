/* One parser for every number a person types: command-line flags, HELIX_* values and
 * --set NAME=VALUE. One suffix rule for all commands; the caller names the flag. */
#ifndef HLX_PARSE_H
#define HLX_PARSE_H

#include <helix/status.h>
#include <stddef.h>
#include <stdint.h>

/* An integer: an optional '-', decimal digits, then optionally one binary suffix K, M, G
 * or T in either case (2^10, 2^20, 2^30, 2^40): "256K" = 262144, "1m" = 1048576. No
 * spaces, no '+', no hex or octal, no fraction. The value must lie in [min, max].
 * On error returns HLX_ERR_INVALID and writes to why "'<text>' is ..." (no flag name). */
hlx_status_t hlx_parse_int(const char *text, int64_t min, int64_t max, int64_t *value_p,
                           char *why, size_t whylen);
/* A finite decimal number ("0.5", "1e-3"; no suffix, no NaN or Inf) in [min, max]. */
hlx_status_t hlx_parse_num(const char *text, double min, double max, double *value_p,
                           char *why, size_t whylen);
/* Case-insensitive choice among "a|b|c"; sets *index_p. why names the choices and the
 * nearest one. */
hlx_status_t hlx_parse_choice(const char *text, const char *choices, int *index_p,
                              char *why, size_t whylen);
/* b in binary units for messages that also give the exact count: "2.63 MiB", "512 bytes".
 * Returns buf. */
const char *hlx_format_bytes(uint64_t b, char *buf, size_t len);

#endif
