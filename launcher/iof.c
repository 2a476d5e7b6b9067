/* helixrun output forwarding: each rank's stdout and stderr arrive on their own pipe and
 * leave helixrun's stdout and stderr one whole line at a time, prefixed with the rank, so
 * lines of different ranks never interleave mid-line. */
#define _GNU_SOURCE
#include "hlx_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int hlx_iof_open(hlx_iof_stream_t *s, int fd, int rank, int is_err)
{
    s->buf = malloc(HLX_IOF_LINE_MAX);
    if (s->buf == NULL)
        return -1;
    s->fd     = fd;
    s->rank   = rank;
    s->is_err = is_err;
    s->len    = 0;
    /* Non-blocking so one chatty rank cannot stall the supervision loop. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return 0;
}

static void hlx_iof_emit(const hlx_iof_stream_t *s, FILE *out, hlx_prefix_t prefix,
                         const char *line, size_t n)
{
    switch (prefix) {
    case HLX_PREFIX_RANK:
        fprintf(out, "[%d] ", s->rank);
        break;
    case HLX_PREFIX_TAG:
        fprintf(out, "[%d]<%s>: ", s->rank, s->is_err ? "stderr" : "stdout");
        break;
    case HLX_PREFIX_NONE:
        break;
    }
    fwrite(line, 1, n, out);
    fputc('\n', out);
}

/* Forwards every complete line in the buffer and keeps the incomplete tail. */
static void hlx_iof_drain_lines(hlx_iof_stream_t *s, FILE *out, hlx_prefix_t prefix)
{
    size_t start = 0;
    char  *nl;

    while (start < s->len && (nl = memchr(s->buf + start, '\n', s->len - start)) != NULL) {
        hlx_iof_emit(s, out, prefix, s->buf + start, (size_t)(nl - (s->buf + start)));
        start = (size_t)(nl - s->buf) + 1;
    }
    if (start == 0 && s->len == HLX_IOF_LINE_MAX) {
        /* A line longer than the buffer: forward what we have rather than block. */
        hlx_iof_emit(s, out, prefix, s->buf, s->len);
        start = s->len;
    }
    memmove(s->buf, s->buf + start, s->len - start);
    s->len -= start;
}

int hlx_iof_read(hlx_iof_stream_t *s, FILE *out, hlx_prefix_t prefix)
{
    ssize_t n;

    if (s->fd < 0)
        return 1;
    /* Bounded number of reads per call so other streams and signals get their turn. */
    for (int i = 0; i < 16; i++) {
        n = read(s->fd, s->buf + s->len, HLX_IOF_LINE_MAX - s->len);
        if (n > 0) {
            s->len += (size_t)n;
            hlx_iof_drain_lines(s, out, prefix);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        hlx_iof_close(s, out, prefix); /* end of file, or a read error: treat alike */
        return 1;
    }
    return 0;
}

void hlx_iof_close(hlx_iof_stream_t *s, FILE *out, hlx_prefix_t prefix)
{
    if (s->fd >= 0) {
        if (s->len > 0) /* a last line without its newline still appears, once */
            hlx_iof_emit(s, out, prefix, s->buf, s->len);
        s->len = 0;
        close(s->fd);
        s->fd = -1;
    }
    free(s->buf);
    s->buf = NULL;
}
