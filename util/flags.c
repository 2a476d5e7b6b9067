/* hlx_flags_*: getopt_long over a flag table, values through hlx_parse_*, generated help. */
#define _GNU_SOURCE
#include "hlx_flags.h"
#include "hlx_json.h"
#include "hlx_parse.h"

#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Set for one hlx_flags_parse: this process is not rank 0 of a job that a launcher other
 * than helixrun started (srun, mpirun), so what it would print about argv (the same on
 * every rank) is left to rank 0; helixrun collapses identical lines itself. */
static int hlx_flags_mute;

int hlx_flags_launcher_rank(void)
{
    static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMIX_RANK" };
    size_t i;

    if (getenv("HELIXRUN") != NULL)
        return -1;
    for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        char *end;
        long r;
        if (v == NULL || v[0] == '\0')
            continue;
        r = strtol(v, &end, 10);
        return *end == '\0' && r >= 0 && r <= 0x7fffffff ? (int)r : -1;
    }
    return -1;
}

int hlx_flags_quiet_rank(void)
{
    return hlx_flags_launcher_rank() > 0;
}

void hlx_flags_quiet_exit_wait(void)
{
    signal(SIGTERM, SIG_DFL);
    sleep(1);
}

/* Exit status 2 for bad argv. A muted rank first waits a second: mpirun ends the whole job
 * at the first non-zero exit, which must not come before rank 0 has said why. */
static int hlx_flags_fail(void)
{
    if (hlx_flags_mute)
        hlx_flags_quiet_exit_wait();
    return 2;
}

static void hlx_flags_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void hlx_flags_err(const char *fmt, ...)
{
    va_list ap;

    if (hlx_flags_mute)
        return;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

void hlx_flags_usage_error(const hlx_flag_table_t *t, const char *fmt, ...)
{
    va_list ap;

    hlx_flags_mute = hlx_flags_quiet_rank();
    if (!hlx_flags_mute) {
        fprintf(stderr, "helix %s: ", t->command);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
    (void)hlx_flags_fail();
}

/* The one-letter alias of flag f, 0 for none. */
static char hlx_flag_short(const hlx_flag_table_t *t, const hlx_flag_t *f)
{
    size_t i;

    for (i = 0; i < t->naliases; i++)
        if (!strcmp(t->aliases[i].name, f->name))
            return t->aliases[i].c;
    return 0;
}

/* "--name", or with a short alias "-b" SEP "--name". */
static const char *hlx_flag_label(const hlx_flag_table_t *t, const hlx_flag_t *f,
                                  const char *sep, char *buf, size_t n)
{
    char c = hlx_flag_short(t, f);

    if (c != 0)
        snprintf(buf, n, "-%c%s--%s", c, sep, f->name);
    else
        snprintf(buf, n, "--%s", f->name);
    return buf;
}

/* Converts text for flag f into out; prints "helix CMD: --flag: reason" on error. */
static int hlx_flag_set(const hlx_flag_table_t *t, const hlx_flag_t *f, const char *text,
                        void *out)
{
    char *dst = (char *)out + f->offset, why[256];
    hlx_status_t st = HLX_OK;
    int64_t v;
    double d;
    int idx;

    switch (f->type) {
    case HLX_FT_BOOL:
        *(int *)dst = text == NULL || !strcmp(text, "1");
        return 0;
    case HLX_FT_INT:
        st = hlx_parse_int(text, f->imin, f->imax, &v, why, sizeof(why));
        if (st == HLX_OK)
            *(int64_t *)dst = v;
        break;
    case HLX_FT_NUM:
        st = hlx_parse_num(text, f->dmin, f->dmax, &d, why, sizeof(why));
        if (st == HLX_OK)
            *(double *)dst = d;
        break;
    case HLX_FT_STRING:
        if (text[0] == '\0') {
            snprintf(why, sizeof(why), "an empty value");
            st = HLX_ERR_INVALID;
        } else {
            *(const char **)dst = text;
        }
        break;
    case HLX_FT_CHOICE:
        st = hlx_parse_choice(text, f->choices, &idx, why, sizeof(why));
        if (st == HLX_OK)
            *(int *)dst = idx;
        break;
    }
    if (st != HLX_OK) {
        char label[80];
        hlx_flags_err("helix %s: %s: %s\n", t->command,
                      hlx_flag_label(t, f, "/", label, sizeof(label)), why);
        return -1;
    }
    return 0;
}

void hlx_flags_help(FILE *f, const hlx_flag_table_t *t)
{
    size_t i;

    for (i = 0; i < t->nflags; i++) {
        const hlx_flag_t *fl = &t->flags[i];
        char head[112];
        const char *h = fl->help, *nl;
        char label[80];
        snprintf(head, sizeof(head), "%s%s%s", hlx_flag_label(t, fl, ", ", label, sizeof(label)),
                 fl->metavar ? " " : "", fl->metavar ? fl->metavar : "");
        fprintf(f, "  %-18s", head);
        if (strlen(head) >= 18) /* no room for the gap before the help */
            fprintf(f, "\n  %-18s", "");
        while ((nl = strchr(h, '\n')) != NULL) {
            fprintf(f, "%.*s\n  %-18s", (int)(nl - h), h, "");
            h = nl + 1;
        }
        fprintf(f, "%s", h);
        if (fl->defval != NULL && fl->type != HLX_FT_BOOL)
            fprintf(f, " (default %s)", fl->defval);
        fprintf(f, "\n");
    }
    fprintf(f, "  %-18s%s\n", "-h, --help", "this text");
}

int hlx_flags_parse(const hlx_flag_table_t *t, int argc, char **argv, void *out, int *given,
                    const char *usage_head, const char *usage_tail)
{
    struct option longopts[HLX_FLAGS_MAX + 2];
    size_t i, n = t->nflags < HLX_FLAGS_MAX ? t->nflags : HLX_FLAGS_MAX, ns = 2;
    char shorts[3 + 2 * HLX_FLAGS_MAX] = ":h", sc; /* getopt's short options: ":hb:e:..." */
    int c, by_short[128] = { 0 }; /* a short alias -> 1000 + its flag's index */

    hlx_flags_mute = hlx_flags_quiet_rank();
    for (i = 0; i < n; i++) {
        const hlx_flag_t *f = &t->flags[i];
        longopts[i].name = f->name;
        longopts[i].has_arg = f->type == HLX_FT_BOOL ? no_argument : required_argument;
        longopts[i].flag = NULL;
        longopts[i].val = 1000 + (int)i;
        if (given)
            given[i] = 0;
        if ((sc = hlx_flag_short(t, f)) > 0) {
            by_short[(int)sc] = 1000 + (int)i;
            shorts[ns++] = sc;
            if (f->type != HLX_FT_BOOL)
                shorts[ns++] = ':';
            shorts[ns] = '\0';
        }
        if (f->defval != NULL && hlx_flag_set(t, f, f->defval, out) != 0)
            return hlx_flags_fail(); /* a table bug, named like a bad flag */
    }
    longopts[n].name = "help";
    longopts[n].has_arg = no_argument;
    longopts[n].flag = NULL;
    longopts[n].val = 'h';
    memset(&longopts[n + 1], 0, sizeof(longopts[n + 1]));
    opterr = 0;
    optind = 0; /* glibc: 0 resets the scanner fully (a cluster "-xy" left half-read) */
    while ((c = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
        if (c > 0 && c < 128 && by_short[c] != 0) /* a short alias: as its long name */
            c = by_short[c];
        if (c >= 1000 && c < 1000 + (int)n) {
            const hlx_flag_t *f = &t->flags[c - 1000];
            if (hlx_flag_set(t, f, f->type == HLX_FT_BOOL ? NULL : optarg, out) != 0)
                return hlx_flags_fail();
            if (given)
                given[c - 1000] = 1;
        } else if (c == 'h') {
            if (hlx_flags_mute)
                return 0;
            if (usage_head)
                fputs(usage_head, stdout);
            hlx_flags_help(stdout, t);
            if (usage_tail)
                fputs(usage_tail, stdout);
            return 0;
        } else if (c == ':') {
            hlx_flags_err("helix %s: %s needs a value\n", t->command,
                          optind > 0 && optind <= argc ? argv[optind - 1] : "an option");
            return hlx_flags_fail();
        } else if (optopt >= 1000 && optopt < 1000 + (int)n) {
            hlx_flags_err("helix %s: --%s takes no value\n", t->command,
                          t->flags[optopt - 1000].name);
            return hlx_flags_fail();
        } else {
            const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : NULL;
            char shortopt[3] = { '-', (char)optopt, '\0' };
            const char *names[HLX_FLAGS_MAX], *near;
            char key[64];
            /* an unknown short option (or one inside a cluster) is named by optopt */
            if (optopt != 0 || arg == NULL || arg[0] != '-' || arg[1] != '-')
                arg = optopt != 0 ? shortopt : arg ? arg : "?";
            for (i = 0; i < n; i++)
                names[i] = t->flags[i].name;
            snprintf(key, sizeof(key), "%.*s", (int)strcspn(arg + strspn(arg, "-"), "="),
                     arg + strspn(arg, "-"));
            near = strlen(key) >= 3 ? hlx_nearest_name(key, names, n) : NULL;
            { /* getopt takes unique prefixes: a prefix of several names is ambiguous */
                char list[256] = "";
                size_t len = strlen(key), at = 0;
                int hits = 0;
                for (i = 0; len > 0 && arg[0] == '-' && arg[1] == '-' && i < n; i++)
                    if (!strncmp(names[i], key, len) && at < sizeof(list)) {
                        at += (size_t)snprintf(list + at, sizeof(list) - at, "%s--%s",
                                               hits ? ", " : "", names[i]);
                        hits++;
                    }
                if (hits > 1) {
                    hlx_flags_err("helix %s: option '%s' is ambiguous: %s\n", t->command,
                                  arg, list);
                    return hlx_flags_fail();
                }
            }
            if (near != NULL)
                hlx_flags_err("helix %s: unknown option '%s' (did you mean --%s?)\n",
                              t->command, arg, near);
            else
                hlx_flags_err("helix %s: unknown option '%s' (see helix %s --help)\n",
                              t->command, arg, t->command);
            return hlx_flags_fail();
        }
    }
    if (optind < argc) {
        hlx_flags_err("helix %s: unexpected argument '%s' (see helix %s --help)\n",
                      t->command, argv[optind], t->command);
        return hlx_flags_fail();
    }
    return -1;
}
