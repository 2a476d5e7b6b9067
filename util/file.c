/* hlx_file_read: whole-file input with a size bound and precise messages. Reads in chunks
 * rather than trusting the size stat() gives (pipes and /proc files report 0, a directory
 * reports a block size, ftell() on a directory gives LONG_MAX); a pipe or device that stays
 * silent for HELIX_INPUT_TIMEOUT seconds is refused rather than waited on. hlx_wfile_*:
 * output files created unnamed (or under a temporary name) and renamed into place once
 * complete; hlx_out_*: one such file written through stdio. */
#define _GNU_SOURCE
#include "hlx_file.h"
#include "hlx_log.h"
#include "hlx_param.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
    int fd, e, wait_ms = -1, stat_ok;

    /* non-blocking open: a named pipe nobody writes to must not hang the open (its read
     * then sees end of file). A regular file is then read blocking as usual; a pipe or
     * device stays non-blocking, and a read that finds nothing yet waits in poll() at most
     * HELIX_INPUT_TIMEOUT (checked at start-up): a writer that holds it open and never
     * writes (or closes) would otherwise block the read forever */
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
    stat_ok = fstat(fd, &sb) == 0;
    if (stat_ok && S_ISDIR(sb.st_mode)) {
        snprintf(err, errlen, "%s: is a directory, not a %s", path, what);
        close(fd);
        return HLX_ERR_INVALID;
    }
    if (stat_ok && S_ISREG(sb.st_mode) && (unsigned long long)sb.st_size > maxbytes)
        goto too_large;
    if (stat_ok && !S_ISREG(sb.st_mode)) {
        hlx_core_settings_t cs;
        if (hlx_param_load(&hlx_core_param_table, &cs, NULL) != HLX_OK)
            cs.input_timeout = 60;
        wait_ms = (int)(cs.input_timeout * 1000.0 + 0.5);
    } else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
        e = errno;
        snprintf(err, errlen, "%s: cannot read the %s: %s", path, what, strerror(e));
        close(fd);
        return HLX_ERR_IO;
    }
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
        if (n < 0 && wait_ms >= 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd pfd = { fd, POLLIN, 0 };
            int r = poll(&pfd, 1, wait_ms);
            if (r == 0) {
                snprintf(err, errlen, "%s: no data for %g s after %zu byte(s): is whatever "
                         "writes this %s stalled? (HELIX_INPUT_TIMEOUT sets the wait)", path,
                         wait_ms / 1000.0, len, S_ISFIFO(sb.st_mode) ? "pipe" : "device");
                free(buf);
                close(fd);
                return HLX_ERR_TIMEOUT;
            }
            continue; /* readable, hung up, or a signal: read again */
        }
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

/* ---- files put in place only when complete ------------------------------------------ */

hlx_status_t hlx_wfile_errno_status(int e)
{
    return e == ENOSPC || e == EDQUOT || e == EFBIG ? HLX_ERR_NOSPACE
         : e == EACCES || e == EPERM || e == EROFS || e == ENOTDIR || e == ENOENT ||
           e == ENAMETOOLONG || e == ELOOP || e == EISDIR ? HLX_ERR_INVALID : HLX_ERR_IO;
}

/* The folder of w->path into dir, and where its last name begins. */
static const char *hlx_wfile_split(const hlx_wfile_t *w, char *dir, size_t len)
{
    const char *slash = strrchr(w->path, '/');

    if (slash == NULL) {
        snprintf(dir, len, ".");
        return w->path;
    }
    snprintf(dir, len, "%.*s", slash == w->path ? 1 : (int)(slash - w->path), w->path);
    return slash + 1;
}

hlx_status_t hlx_wfile_open(hlx_wfile_t *w, const char *path, unsigned mode, char *err,
                            size_t errlen)
{
    char dir[4096];
    const char *name;
    mode_t um;
    int e;

    w->fd = -1;
    w->named = 0;
    w->tmp[0] = '\0';
    if (path[0] == '\0' || strlen(path) >= sizeof(w->path)) {
        snprintf(err, errlen, "'%.64s': %s", path, path[0] ? "path too long" : "empty path");
        return HLX_ERR_INVALID;
    }
    snprintf(w->path, sizeof(w->path), "%s", path);
    {
        /* a folder by that name cannot be replaced by the commit's rename: refused now,
         * before anything is written (a caller putting several files in place finds out
         * before the first) */
        struct stat sb;
        if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            snprintf(err, errlen, "%s: is a directory; remove it or write elsewhere", path);
            return HLX_ERR_INVALID;
        }
    }
    name = hlx_wfile_split(w, dir, sizeof(dir));
#ifdef O_TMPFILE
    /* unnamed only where the commit can name it without privilege (through /proc) */
    e = ENOSYS;
    if (access("/proc/self/fd", X_OK) == 0) {
        w->fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, (mode_t)mode);
        if (w->fd >= 0)
            return HLX_OK;
        e = errno;
    }
    if (e != EOPNOTSUPP && e != EISDIR && e != EINVAL && e != ENOSYS) {
        snprintf(err, errlen, "%s: cannot create a file there: %s", path, strerror(e));
        return hlx_wfile_errno_status(e);
    }
#endif
    /* beside path: its folder part, then ".NAME.tmp-XXXXXX" */
    if ((size_t)snprintf(w->tmp, sizeof(w->tmp), "%.*s.%s.tmp-XXXXXX", (int)(name - w->path),
                         w->path, name) >= sizeof(w->tmp)) {
        w->tmp[0] = '\0';
        snprintf(err, errlen, "'%.64s...': path too long", path);
        return HLX_ERR_INVALID;
    }
    w->fd = mkostemp(w->tmp, O_CLOEXEC);
    if (w->fd < 0) {
        e = errno;
        w->tmp[0] = '\0';
        snprintf(err, errlen, "%s: cannot create a file there: %s", path, strerror(e));
        return hlx_wfile_errno_status(e);
    }
    w->named = 1;
    um = umask(0); /* mkostemp creates 0600; the file gets what open() would give */
    umask(um);
    (void)fchmod(w->fd, (mode_t)mode & ~um);
    return HLX_OK;
}

hlx_status_t hlx_wfile_put(hlx_wfile_t *w, const void *buf, size_t len, char *err,
                           size_t errlen)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t k = write(w->fd, p, len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int e = k < 0 ? errno : EIO;
            snprintf(err, errlen, "%s: write failed: %s", w->path, strerror(e));
            return hlx_wfile_errno_status(e);
        }
        p += k;
        len -= (size_t)k;
    }
    return HLX_OK;
}

void hlx_wfile_abort(hlx_wfile_t *w)
{
    if (w->fd >= 0)
        close(w->fd);
    if (w->named)
        unlink(w->tmp);
    w->fd = -1;
    w->named = 0;
}

/* The data on disk, then the name: an unnamed file is linked under a temporary name first
 * (a link cannot replace an existing file), and rename() puts it in place in one step. */
hlx_status_t hlx_wfile_commit(hlx_wfile_t *w, char *err, size_t errlen)
{
    const char *name;
    int e, i;

    if (fsync(w->fd) != 0) {
        e = errno;
        hlx_wfile_abort(w);
        snprintf(err, errlen, "%s: write failed: %s", w->path, strerror(e));
        return hlx_wfile_errno_status(e);
    }
    if (!w->named) {
        char proc[64];
        name = strrchr(w->path, '/') ? strrchr(w->path, '/') + 1 : w->path;
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", w->fd);
        for (i = 0;; i++) { /* beside path: its folder part, then ".NAME.tmp-PID-I" */
            if ((size_t)snprintf(w->tmp, sizeof(w->tmp), "%.*s.%s.tmp-%ld-%d",
                                 (int)(name - w->path), w->path, name, (long)getpid(),
                                 i) >= sizeof(w->tmp)) {
                e = ENAMETOOLONG;
                hlx_wfile_abort(w);
                snprintf(err, errlen, "%s: cannot name the written file: %s", w->path,
                         strerror(e));
                return HLX_ERR_INVALID;
            }
            /* through /proc (no privilege needed), else AT_EMPTY_PATH (CAP_DAC_READ_SEARCH) */
            if (linkat(AT_FDCWD, proc, AT_FDCWD, w->tmp, AT_SYMLINK_FOLLOW) == 0)
                break;
            e = errno;
            if (e != EEXIST) {
                if (linkat(w->fd, "", AT_FDCWD, w->tmp, AT_EMPTY_PATH) == 0)
                    break;
                e = errno;
            }
            if (e != EEXIST || i == 99) {
                hlx_wfile_abort(w);
                snprintf(err, errlen, "%s: cannot name the written file: %s", w->path,
                         strerror(e));
                return hlx_wfile_errno_status(e);
            }
        }
        w->named = 1;
    }
    if (rename(w->tmp, w->path) != 0) {
        e = errno;
        hlx_wfile_abort(w);
        snprintf(err, errlen, "%s: cannot put in place: %s", w->path, strerror(e));
        return hlx_wfile_errno_status(e);
    }
    w->named = 0;
    close(w->fd);
    w->fd = -1;
    return HLX_OK;
}

/* ---- hlx_out: one output file over an hlx_wfile, written through stdio ---------------- */

hlx_status_t hlx_out_begin(hlx_out_t *o, const char *path, char *err, size_t errlen)
{
    struct stat sb;
    int fd, e;

    memset(o, 0, sizeof(*o));
    o->w.fd = -1;
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
    /* the permissions fopen would give; a path that cannot take a file is bad input */
    if (hlx_wfile_open(&o->w, path, 0666, err, errlen) != HLX_OK)
        return HLX_ERR_INVALID;
    /* stdio over a second descriptor: the wfile keeps its own for the commit */
    if ((fd = dup(o->w.fd)) < 0 || (o->f = fdopen(fd, "w")) == NULL) {
        e = errno;
        if (fd >= 0)
            close(fd);
        hlx_wfile_abort(&o->w);
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
    if (ferror(o->f) || fflush(o->f) != 0) { /* a file in place is synced by the commit */
        bad = 1;
        e = errno;
    }
    if (fclose(o->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    o->f = NULL;
    if (o->w.fd >= 0) {
        if (ok && !bad) /* its own message: what failed, on which path */
            return hlx_wfile_commit(&o->w, err, errlen) == HLX_OK ? HLX_OK : HLX_ERR_IO;
        hlx_wfile_abort(&o->w);
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

hlx_status_t hlx_stdout_flush(char *why, size_t whylen)
{
    int e = fflush(stdout) != 0 ? errno : 0;

    if (e == 0 && !ferror(stdout))
        return HLX_OK;
    snprintf(why, whylen, "%s", e != 0 ? strerror(e) : "a write error");
    return HLX_ERR_IO;
}
