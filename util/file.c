/* hlx_file_read: whole-file input with a size bound and precise messages. Reads in chunks
 * rather than trusting the size stat() gives (pipes and /proc files report 0, a directory
 * reports a block size, ftell() on a directory gives LONG_MAX). hlx_out_*: output files
 * through a temporary file renamed into place. */
#define _GNU_SOURCE
#include "hlx_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

hlx_status_t hlx_file_read(const char *path, const char *what, size_t maxbytes, char **buf_p,
                           size_t *len_p, char *err, size_t errlen)
{
    struct stat sb;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int fd, e;

    /* non-blocking open: a named pipe nobody writes to must not hang the open (its read
     * then sees end of file); reads block as usual once it is open */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        e = errno;
        if (e == ENOENT || e == ENOTDIR)
            snprintf(err, errlen, "%s: no such %s", path, what);
        else
            snprintf(err, errlen, "%s: cannot open the %s: %s", path, what, strerror(e));
        return e == ENOENT || e == ENOTDIR ? HLX_ERR_NOT_FOUND
             : e == EACCES || e == EISDIR || e == ELOOP || e == ENAMETOOLONG ? HLX_ERR_INVALID
                                                                           : HLX_ERR_IO;
    }
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
        e = errno;
        snprintf(err, errlen, "%s: cannot read the %s: %s", path, what, strerror(e));
        close(fd);
        return HLX_ERR_IO;
    }
    if (fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "%s: is a directory, not a %s", path, what);
        close(fd);
        return HLX_ERR_INVALID;
    }
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (unsigned long long)sb.st_size > maxbytes)
        goto too_large;
    for (;;) {
        ssize_t n;
        if (len == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *p;
            if (ncap > maxbytes + 1)
                ncap = maxbytes + 1;
            if (ncap <= len)
                goto too_large;
            p = realloc(buf, ncap + 1);
            if (p == NULL) {
                free(buf);
                close(fd);
                snprintf(err, errlen, "%s: out of memory reading the %s", path, what);
                return HLX_ERR_NOMEM;
            }
            buf = p;
            cap = ncap;
        }
        n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            e = errno;
            snprintf(err, errlen, "%s: cannot read the %s: %s", path, what, strerror(e));
            free(buf);
            close(fd);
            return e == EISDIR ? HLX_ERR_INVALID : HLX_ERR_IO;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > maxbytes)
            goto too_large;
    }
    close(fd);
    if (buf == NULL && (buf = malloc(1)) == NULL) {
        snprintf(err, errlen, "%s: out of memory reading the %s", path, what);
        return HLX_ERR_NOMEM;
    }
    buf[len] = '\0';
    *buf_p = buf;
    *len_p = len;
    return HLX_OK;

too_large:
    if (maxbytes % (1u << 20) == 0)
        snprintf(err, errlen, "%s: larger than %zu MiB, more than a %s needs", path,
                 maxbytes >> 20, what);
    else
        snprintf(err, errlen, "%s: larger than %zu bytes, more than a %s needs", path,
                 maxbytes, what);
    free(buf);
    close(fd);
    return HLX_ERR_INVALID;
}

hlx_status_t hlx_out_begin(hlx_out_t *o, const char *path, char *err, size_t errlen)
{
    struct stat sb;
    mode_t mask;
    int fd, e;

    memset(o, 0, sizeof(*o));
    if (path[0] == '\0' || strlen(path) >= sizeof(o->path)) {
        snprintf(err, errlen, "'%s': %s", path, path[0] ? "path too long" : "empty path");
        return HLX_ERR_INVALID;
    }
    snprintf(o->path, sizeof(o->path), "%s", path);
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "%s: is a directory", path);
        return HLX_ERR_INVALID;
    }
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) { /* a device or a pipe: as it is */
        if ((o->f = fopen(path, "w")) == NULL) {
            e = errno;
            snprintf(err, errlen, "%s: cannot write: %s", path, strerror(e));
            return HLX_ERR_INVALID;
        }
        return HLX_OK;
    }
    snprintf(o->tmp, sizeof(o->tmp), "%s.XXXXXX", path);
    if ((fd = mkstemp(o->tmp)) < 0) {
        e = errno;
        snprintf(err, errlen, "%s: cannot create a file there: %s", path, strerror(e));
        o->tmp[0] = '\0';
        return HLX_ERR_INVALID;
    }
    /* the permissions fopen would give (mkstemp makes 0600) */
    mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0 || (o->f = fdopen(fd, "w")) == NULL) {
        e = errno;
        close(fd);
        unlink(o->tmp);
        o->tmp[0] = '\0';
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(e));
        return HLX_ERR_IO;
    }
    return HLX_OK;
}

hlx_status_t hlx_out_end(hlx_out_t *o, int ok, char *err, size_t errlen)
{
    int bad = 0, e = 0;

    if (o->f == NULL)
        return HLX_OK;
    if (ferror(o->f) || fflush(o->f) != 0 || (o->tmp[0] && fsync(fileno(o->f)) != 0)) {
        bad = 1;
        e = errno;
    }
    if (fclose(o->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    o->f = NULL;
    if (o->tmp[0]) {
        if (ok && !bad && rename(o->tmp, o->path) != 0) {
            bad = 1;
            e = errno;
        }
        if (!ok || bad)
            unlink(o->tmp);
        o->tmp[0] = '\0';
    }
    if (ok && bad) {
        snprintf(err, errlen, "%s: writing failed: %s (nothing replaced)", o->path,
                 e ? strerror(e) : "I/O error");
        return HLX_ERR_IO;
    }
    return HLX_OK;
}

hlx_status_t hlx_out_check(const char *path, char *err, size_t errlen)
{
    hlx_out_t o;
    struct stat sb;
    hlx_status_t st;

    /* a device or a pipe is not opened now (a pipe's open waits for its reader) */
    if (path[0] && stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) {
        if (access(path, W_OK) == 0)
            return HLX_OK;
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        return HLX_ERR_INVALID;
    }
    st = hlx_out_begin(&o, path, err, errlen);

    if (st == HLX_OK)
        hlx_out_end(&o, 0, err, errlen);
    return st;
}
