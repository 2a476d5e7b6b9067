/* helixrun output forwarding: each rank's stdout and stderr arrive on their own pipe and
 * leave helixrun's stdout and stderr one whole line at a time, prefixed with the rank, so
 * lines of different ranks never interleave mid-line. A stderr line that several ranks
 * print alike (an error every rank detects) is printed once with the list of the others. */
#define _GNU_SOURCE
#include "hlx_hash.h"
#include "hlx_launch.h"
#include "hlx_time.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Windows closing this soon after the one that made the flush close with it, so the
 * lines of one burst (a message of several lines) are summed up in one line. */
#define HLX_IOF_DUP_SLACK_S 0.1

/* ---- Collapsing identical stderr lines of several ranks ---- */

int hlx_iof_collapse_init(hlx_iof_collapse_t *c, FILE *out, hlx_prefix_t prefix)
{
    c->slot   = calloc(HLX_IOF_DUP_SLOTS, sizeof(*c->slot));
    c->seq    = 0;
    c->out    = out;
    c->prefix = prefix;
    return c->slot != NULL ? 0 : -1;
}

/* The length of the log header's "HOST:PID:RANK" (or the watchdog's "HOST:PID:") field
 * that starts at s, 0 when s does not start with one. */
static size_t hlx_iof_header_field(const char *s, size_t n)
{
    size_t i = 0, d;

    while (i < n && s[i] != ':' && s[i] != ' ')
        i++;
    if (i == 0 || i >= n || s[i] != ':')
        return 0;
    i++;
    for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
    }
    if (i == d || i >= n || s[i] != ':')
        return 0;
    i++;
    if (i < n && s[i] == '-')
        i++;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    return i < n && s[i] == ' ' ? i : 0;
}

/* The line as compared, in key with its length in kl: "helix HOST:PID:RANK " with the
 * three fields masked (they differ between ranks by nature). -1 when it does not fit in
 * HLX_IOF_DUP_TEXT: such a line is never collapsed. */
static int hlx_iof_dup_key(const char *line, size_t n, char *key, size_t *kl)
{
    static const char head[] = "helix ";
    const size_t      hl     = sizeof(head) - 1;
    size_t            f;

    if (n >= hl && !memcmp(line, head, hl) && (f = hlx_iof_header_field(line + hl, n - hl))) {
        const char  *mask = line[hl + f - 1] == ':' ? "*:*:" : "*:*:*";
        const size_t ml   = strlen(mask);
        if (hl + ml + (n - hl - f) > HLX_IOF_DUP_TEXT)
            return -1;
        memcpy(key, head, hl);
        memcpy(key + hl, mask, ml);
        memcpy(key + hl + ml, line + hl + f, n - hl - f);
        *kl = hl + ml + (n - hl - f);
        return 0;
    }
    if (n > HLX_IOF_DUP_TEXT)
        return -1;
    memcpy(key, line, n);
    *kl = n;
    return 0;
}

static uint64_t hlx_iof_hash(const char *s, size_t n)
{
    return hlx_fnv1a(HLX_FNV1A_INIT, s, n);
}

static int hlx_iof_rank_in(const uint64_t *set, int r)
{
    return (int)((set[r / 64] >> (r % 64)) & 1u);
}

/* The ranks of set as a compact list: 1-3,5,7-9. */
static void hlx_iof_print_ranks(FILE *out, const uint64_t *set)
{
    int n = 0;

    for (int r = 0; r < HLX_LAUNCH_MAX_NPROCS; r++) {
        int e = r;
        if (!hlx_iof_rank_in(set, r))
            continue;
        while (e + 1 < HLX_LAUNCH_MAX_NPROCS && hlx_iof_rank_in(set, e + 1))
            e++;
        if (e == r)
            fprintf(out, "%s%d", n++ ? "," : "", r);
        else
            fprintf(out, "%s%d-%d", n++ ? "," : "", r, e);
        r = e;
    }
}

/* "[1-3] (the same line as [0] above)", or "the same N lines" for a burst. */
static void hlx_iof_summary(const hlx_iof_collapse_t *c, const hlx_iof_dup_t *d, int nlines)
{
    char what[64];

    if (nlines > 1)
        snprintf(what, sizeof(what), "the same %d lines", nlines);
    else
        snprintf(what, sizeof(what), "the same line");
    switch (c->prefix) {
    case HLX_PREFIX_RANK:
    case HLX_PREFIX_TAG:
        fputc('[', c->out);
        hlx_iof_print_ranks(c->out, d->held);
        fprintf(c->out, c->prefix == HLX_PREFIX_TAG ? "]<stderr>: (%s as [%d] above)\n"
                                                    : "] (%s as [%d] above)\n",
                what, d->first);
        break;
    case HLX_PREFIX_NONE:
        fprintf(c->out, "(rank%s ", d->nheld > 1 ? "s" : "");
        hlx_iof_print_ranks(c->out, d->held);
        fprintf(c->out, ": %s as rank %d above)\n", what, d->first);
        break;
    }
}

static int hlx_iof_same_ranks(const hlx_iof_dup_t *a, const hlx_iof_dup_t *b)
{
    return a->first == b->first && !memcmp(a->held, b->held, sizeof(a->held));
}

/* Prints the summaries of the slots whose window closes by upto, in the order their lines
 * were first printed, consecutive ones with the same ranks as one line. release: the slots
 * are freed; else they stay open with nothing held (their ranks still count as seen). */
static void hlx_iof_summarize(hlx_iof_collapse_t *c, double upto, int release)
{
    hlx_iof_dup_t *run  = NULL; /* the slot whose summary is pending, with nrun lines */
    int            nrun = 0;
    uint64_t       last = 0;

    for (;;) {
        hlx_iof_dup_t *d = NULL;
        for (int i = 0; i < HLX_IOF_DUP_SLOTS; i++) {
            hlx_iof_dup_t *s = &c->slot[i];
            if (s->until > 0 && s->until <= upto && s->seq > last &&
                (d == NULL || s->seq < d->seq))
                d = s;
        }
        if (d == NULL)
            break;
        last = d->seq;
        if (d->nheld == 0)
            continue;
        if (run != NULL && hlx_iof_same_ranks(run, d)) {
            nrun++;
            continue;
        }
        if (run != NULL)
            hlx_iof_summary(c, run, nrun);
        run  = d;
        nrun = 1;
    }
    if (run != NULL)
        hlx_iof_summary(c, run, nrun);
    for (int i = 0; i < HLX_IOF_DUP_SLOTS; i++) {
        hlx_iof_dup_t *s = &c->slot[i];
        if (s->until == 0 || s->until > upto)
            continue;
        if (release)
            s->until = 0;
        memset(s->held, 0, sizeof(s->held));
        s->nheld = 0;
    }
}

void hlx_iof_collapse_flush(hlx_iof_collapse_t *c, double now)
{
    const double next = hlx_iof_collapse_next(c);

    if (next == 0 || next > now)
        return;
    hlx_iof_summarize(c, isinf(now) ? now : now + HLX_IOF_DUP_SLACK_S, 1);
}

void hlx_iof_collapse_say(hlx_iof_collapse_t *c)
{
    if (c->slot != NULL)
        hlx_iof_summarize(c, HUGE_VAL, 0);
}

double hlx_iof_collapse_next(const hlx_iof_collapse_t *c)
{
    double next = 0;

    for (int i = 0; c->slot != NULL && i < HLX_IOF_DUP_SLOTS; i++)
        if (c->slot[i].until > 0 && (next == 0 || c->slot[i].until < next))
            next = c->slot[i].until;
    return next;
}

/* Prints one slot's summary now, ahead of its window's end, and frees it. */
static void hlx_iof_dup_close(hlx_iof_collapse_t *c, hlx_iof_dup_t *d)
{
    if (d->nheld > 0)
        hlx_iof_summary(c, d, 1);
    d->until = 0;
}

int hlx_iof_collapse_line(hlx_iof_collapse_t *c, int rank, const char *line, size_t n,
                          double now)
{
    char           key[HLX_IOF_DUP_TEXT];
    size_t         kl;
    uint64_t       h;
    hlx_iof_dup_t *d = NULL;

    if (c->slot == NULL || rank < 0 || rank >= HLX_LAUNCH_MAX_NPROCS)
        return 0;
    hlx_iof_collapse_flush(c, now);
    if (hlx_iof_dup_key(line, n, key, &kl) != 0)
        return 0;
    h = hlx_iof_hash(key, kl);
    for (int i = 0; i < HLX_IOF_DUP_SLOTS && d == NULL; i++) {
        hlx_iof_dup_t *s = &c->slot[i];
        if (s->until > 0 && s->hash == h && s->len == kl && !memcmp(s->text, key, kl))
            d = s;
    }
    if (d != NULL && d->first != rank && !hlx_iof_rank_in(d->seen, rank)) {
        d->held[rank / 64] |= (uint64_t)1 << (rank % 64);
        d->seen[rank / 64] |= (uint64_t)1 << (rank % 64);
        d->nheld++;
        return 1;
    }
    if (d != NULL) {
        /* The rank says it again: its own line, printed; the copies held so far are
         * summed up first, so each rank's lines keep their order. */
        hlx_iof_dup_close(c, d);
    } else {
        for (int i = 0; i < HLX_IOF_DUP_SLOTS && d == NULL; i++)
            if (c->slot[i].until == 0)
                d = &c->slot[i];
        /* Full (a burst of more distinct lines than slots, within one window): the line
         * is printed and not remembered. Letting the oldest give way instead would
         * collapse nothing when one rank's whole burst is read before the next rank's
         * (each new line evicting the very line the next rank is about to repeat). */
        if (d == NULL)
            return 0;
    }
    memset(d->held, 0, sizeof(d->held));
    memset(d->seen, 0, sizeof(d->seen));
    memcpy(d->text, key, kl);
    d->len   = kl;
    d->hash  = h;
    d->first = rank;
    d->nheld = 0;
    d->seq   = ++c->seq;
    d->until = now + HLX_IOF_DUP_WINDOW_S;
    return 0;
}

void hlx_iof_collapse_fini(hlx_iof_collapse_t *c)
{
    hlx_iof_collapse_flush(c, HUGE_VAL);
    free(c->slot);
    c->slot = NULL;
}

/* ---- Streams ---- */

int hlx_iof_open(hlx_iof_stream_t *s, int fd, int rank, int is_err, hlx_iof_collapse_t *dup)
{
    s->buf = malloc(HLX_IOF_LINE_MAX);
    if (s->buf == NULL)
        return -1;
    s->fd     = fd;
    s->rank   = rank;
    s->is_err = is_err;
    s->len    = 0;
    s->dup    = is_err ? dup : NULL; /* stdout is never collapsed */
    /* Non-blocking so one chatty rank cannot stall the supervision loop. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return 0;
}

static void hlx_iof_emit(const hlx_iof_stream_t *s, FILE *out, hlx_prefix_t prefix,
                         const char *line, size_t n, double now)
{
    if (s->dup != NULL && hlx_iof_collapse_line(s->dup, s->rank, line, n, now))
        return;
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
    const double now   = s->dup != NULL ? hlx_now_s() : 0;
    size_t       start = 0;
    char        *nl;

    while (start < s->len && (nl = memchr(s->buf + start, '\n', s->len - start)) != NULL) {
        hlx_iof_emit(s, out, prefix, s->buf + start, (size_t)(nl - (s->buf + start)), now);
        start = (size_t)(nl - s->buf) + 1;
    }
    if (start == 0 && s->len == HLX_IOF_LINE_MAX) {
        /* A line longer than the buffer: forward what we have rather than block. */
        hlx_iof_emit(s, out, prefix, s->buf, s->len, now);
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
            hlx_iof_emit(s, out, prefix, s->buf, s->len, s->dup != NULL ? hlx_now_s() : 0);
        s->len = 0;
        close(s->fd);
        s->fd = -1;
    }
    free(s->buf);
    s->buf = NULL;
}
