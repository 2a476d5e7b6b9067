/* Reading a whole input file (model, cluster, topology) with one set of messages: a
 * missing file, a directory, a file too large and a read error each say which. */
#ifndef HLX_FILE_H
#define HLX_FILE_H

#include <helix/status.h>
#include <stddef.h>

/* Reads path into a NUL-terminated buffer (free() it) of at most maxbytes. what names the
 * file's role in messages ("topology file"). Errors go to err as "path: reason":
 * HLX_ERR_NOT_FOUND (no such file), HLX_ERR_INVALID (a directory, not readable, larger
 * than maxbytes) - both bad input, exit 2 - or HLX_ERR_IO (the read itself failed). */
hlx_status_t hlx_file_read(const char *path, const char *what, size_t maxbytes, char **buf_p,
                           size_t *len_p, char *err, size_t errlen);

#endif
