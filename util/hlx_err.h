/* A reason into a caller's buffer and a status back: the shape of every "fail with why"
 * path (file parsers, layout checks, backend choice). */
#ifndef HLX_ERR_H
#define HLX_ERR_H

#include <helix/status.h>

#include <stddef.h>

/* Formats fmt into buf (nothing when buf is NULL or len 0) and returns st. */
hlx_status_t hlx_errbuf(char *buf, size_t len, hlx_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
