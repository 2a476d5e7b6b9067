/* Reading a whole input file (model, cluster, topology) with one set of messages: a
 * missing file, a directory, a file too large and a read error each say which; and
 * writing output files whole or not at all, one or several together. */
#ifndef HLX_FILE_H
#define HLX_FILE_H

#include <helix/status.h>
#include <stddef.h>
#include <stdio.h>

/* Reads path into a NUL-terminated buffer (free() it) of at most maxbytes. what names the
 * file's role in messages ("topology file"). Errors go to err as "path: reason":
 * HLX_ERR_NOT_FOUND (no such file), HLX_ERR_INVALID (a directory, not readable, larger
 * than maxbytes) - both bad input, exit 2 - HLX_ERR_IO (the read itself failed) or
 * HLX_ERR_TIMEOUT (a pipe or device silent for HELIX_INPUT_TIMEOUT seconds). */
hlx_status_t hlx_file_read(const char *path, const char *what, size_t maxbytes, char **buf_p,
                           size_t *len_p, char *err, size_t errlen);

/* One output file put in place only when complete, the writer behind hlx_out and the
 * checkpoint writer (model/ckpt_write.c): hlx_wfile_open creates it unnamed in the folder
 * of path (O_TMPFILE) or, where the file system has none, under a hidden temporary name
 * ".NAME.tmp-XXXXXX" beside it, with mode less the umask; hlx_wfile_commit puts the data on
 * disk (fsync), then the file in place in one step (rename over path); hlx_wfile_abort
 * drops it and leaves path as it was. Files written first and committed one after another
 * once all are complete are all in place or none. Errors go to err as "path: reason" with
 * HLX_ERR_NOSPACE (no room on the file system), HLX_ERR_INVALID (the path cannot take a
 * file: no such folder, not writable) or HLX_ERR_IO. */
typedef struct hlx_wfile {
    int  fd;         /* -1: not open */
    int  named;      /* tmp names a file on disk (removed by abort) */
    char path[4096];
    char tmp[4160];
} hlx_wfile_t;

hlx_status_t hlx_wfile_open(hlx_wfile_t *w, const char *path, unsigned mode, char *err,
                            size_t errlen);
/* buf[0, len) written at the file's end. */
hlx_status_t hlx_wfile_put(hlx_wfile_t *w, const void *buf, size_t len, char *err,
                           size_t errlen);
/* On failure the file is dropped (as by hlx_wfile_abort). */
hlx_status_t hlx_wfile_commit(hlx_wfile_t *w, char *err, size_t errlen);
void         hlx_wfile_abort(hlx_wfile_t *w); /* a no-op once committed or aborted */
/* The status of a failed write's errno, as above. */
hlx_status_t hlx_wfile_errno_status(int e);

/* An output file written whole or not at all: hlx_out_begin opens an hlx_wfile for path
 * (so a path that cannot be written fails before any work, and an existing file is
 * untouched until the new one is complete), hlx_out_end puts it in place when ok, else
 * drops it. A path that exists and is not a regular file (/dev/stdout, a pipe) is written
 * directly. Errors go to err as "path: reason" (HLX_ERR_INVALID: the path cannot take a
 * file - bad input; HLX_ERR_IO: writing failed). */
typedef struct hlx_out {
    FILE       *f;
    char        path[4096];
    hlx_wfile_t w; /* w.fd -1 when written directly */
} hlx_out_t;

hlx_status_t hlx_out_begin(hlx_out_t *o, const char *path, char *err, size_t errlen);
hlx_status_t hlx_out_end(hlx_out_t *o, int ok, char *err, size_t errlen);
/* begin, then end without keeping anything: can path take a file now? */
hlx_status_t hlx_out_check(const char *path, char *err, size_t errlen);

/* Flushes standard output at a program's end: HLX_ERR_IO with the reason in why (strerror,
 * or "a write error" where stdio kept no errno) when a write there failed (a full disk),
 * so that a command whose result is its output never ends with 0 over a truncated file. */
hlx_status_t hlx_stdout_flush(char *why, size_t whylen);

#endif
