/* Reading a whole input file (model, cluster, topology) with one set of messages: a
 * missing file, a directory, a file too large and a read error each say which; and
 * writing an output file whole or not at all. */
#ifndef HLX_FILE_H
#define HLX_FILE_H

#include <helix/status.h>
#include <stddef.h>
#include <stdio.h>

/* Reads path into a NUL-terminated buffer (free() it) of at most maxbytes. what names the
 * file's role in messages ("topology file"). Errors go to err as "path: reason":
 * HLX_ERR_NOT_FOUND (no such file), HLX_ERR_INVALID (a directory, not readable, larger
 * than maxbytes) - both bad input, exit 2 - or HLX_ERR_IO (the read itself failed). */
hlx_status_t hlx_file_read(const char *path, const char *what, size_t maxbytes, char **buf_p,
                           size_t *len_p, char *err, size_t errlen);

/* An output file written whole or not at all: hlx_out_begin creates a temporary file
 * beside path (so a path that cannot be written fails before any work, and an existing
 * file is untouched until the new one is complete), hlx_out_end renames it over path when
 * ok, else removes it. A path that exists and is not a regular file (/dev/stdout, a pipe)
 * is written directly. Errors go to err as "path: reason" (HLX_ERR_INVALID: the path
 * cannot take a file - bad input; HLX_ERR_IO: writing failed). */
typedef struct hlx_out {
    FILE *f;
    char  path[4096];
    char  tmp[4112]; /* "" when written directly */
} hlx_out_t;

hlx_status_t hlx_out_begin(hlx_out_t *o, const char *path, char *err, size_t errlen);
hlx_status_t hlx_out_end(hlx_out_t *o, int ok, char *err, size_t errlen);
/* begin, then end without keeping anything: can path take a file now? */
hlx_status_t hlx_out_check(const char *path, char *err, size_t errlen);

#endif
