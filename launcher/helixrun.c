/* helixrun: start N ranks of a program on this node as one PMIx job (helixrun owns the
 * PMIx server), forward their output, and end the whole job on the first failure. */
#define _GNU_SOURCE
#include "hlx_config.h"
#include "hlx_launch.h"
#include "hlx_param.h"
#include "hlx_parse.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every tunable in one table: defaults, HELIX_RUN_* environment overrides, flags. */
typedef struct hlx_run_settings {
    double timeout;
    double grace;
    double settle;
    char   prefix[HLX_PARAM_STRLEN];
    char   tmpdir[HLX_PARAM_STRLEN];
} hlx_run_settings_t;

static const hlx_param_t hlx_run_params[] = {
    { "RUN_TIMEOUT", HLX_PT_DOUBLE, "0", 0, 1e7, offsetof(hlx_run_settings_t, timeout),
      "job-wide wall-clock limit in seconds, 0 for none (--timeout); exit 124 when hit", NULL },
    { "RUN_GRACE", HLX_PT_DOUBLE, "5", 0, 3600, offsetof(hlx_run_settings_t, grace),
      "seconds from SIGTERM to SIGKILL when the job is killed (--grace)", NULL },
    { "RUN_SETTLE", HLX_PT_DOUBLE, "0.1", 0, 10, offsetof(hlx_run_settings_t, settle),
      "seconds to collect rank failures that come together before naming the first", NULL },
    { "RUN_PREFIX", HLX_PT_STRING, "rank", 0, 0, offsetof(hlx_run_settings_t, prefix),
      "output prefix: rank \"[R] \", tag \"[R]<stdout>: \", none (--prefix)", NULL },
    { "RUN_TMPDIR", HLX_PT_STRING, "", 0, 0, offsetof(hlx_run_settings_t, tmpdir),
      "where the private PMIx directory is made (default $TMPDIR, else /tmp)", NULL },
};

static const hlx_param_table_t hlx_run_table = {
    "helixrun", hlx_run_params, sizeof(hlx_run_params) / sizeof(hlx_run_params[0]),
    sizeof(hlx_run_settings_t),
};

static const struct {
    const char  *name;
    hlx_prefix_t prefix;
} hlx_run_prefixes[] = {
    { "rank", HLX_PREFIX_RANK },
    { "tag", HLX_PREFIX_TAG },
    { "none", HLX_PREFIX_NONE },
};

enum {
    HLX_OPT_TIMEOUT = 256,
    HLX_OPT_GRACE,
    HLX_OPT_NO_PREFIX,
    HLX_OPT_TAG_OUTPUT,
    HLX_OPT_PREFIX,
    HLX_OPT_TMPDIR,
};

static const struct option hlx_run_longopts[] = {
    { "np", required_argument, NULL, 'n' },
    { "timeout", required_argument, NULL, HLX_OPT_TIMEOUT },
    { "grace", required_argument, NULL, HLX_OPT_GRACE },
    { "no-prefix", no_argument, NULL, HLX_OPT_NO_PREFIX },
    { "tag-output", no_argument, NULL, HLX_OPT_TAG_OUTPUT },
    { "prefix", required_argument, NULL, HLX_OPT_PREFIX },
    { "tmpdir", required_argument, NULL, HLX_OPT_TMPDIR },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
};

static void hlx_run_usage(FILE *f, const hlx_run_settings_t *set,
                          const hlx_param_src_t *src)
{
    fprintf(f,
        "usage: helixrun -n N [OPTIONS] [--] PROGRAM [ARGS...]\n\n"
        "Start N ranks of PROGRAM on this node as one PMIx job. helixrun is the PMIx\n"
        "server: ranks call PMIx_Init / Put / Commit / Fence / Get as under mpirun or\n"
        "srun --mpi=pmix. Each rank also gets HELIXRUN=1, HELIX_RANK and HELIX_SIZE.\n"
        "The first rank to fail (non-zero exit, signal, PMIx_Abort) ends the whole job\n"
        "(SIGTERM, then SIGKILL after the grace period) and helixrun exits with its code.\n\n"
        "options:\n"
        "  -n, --np N           number of ranks, 1..%d (required)\n"
        "      --timeout SEC    kill the job after SEC seconds and exit 124 (default: none)\n"
        "      --grace SEC      seconds from SIGTERM to SIGKILL when killing (default 5)\n"
        "      --prefix STYLE   rank: \"[R] line\" (default), tag: \"[R]<stdout>: line\",\n"
        "                       none: lines unmarked (still whole lines)\n"
        "      --no-prefix      same as --prefix none\n"
        "      --tag-output     same as --prefix tag\n"
        "  -x VAR[=VALUE]       set VAR in every rank (VAR alone: forward helixrun's value)\n"
        "      --tmpdir DIR     where the private PMIx directory is made (default $TMPDIR,\n"
        "                       else /tmp); it is removed when helixrun exits\n"
        "  -h, --help           this text\n"
        "  -V, --version        print the version\n\n"
        "exit status: 0 all ranks exited 0; the first failing rank's exit code, or\n"
        "128+signal if it was killed; PMIx_Abort's status; 124 timeout; 127 PROGRAM not\n"
        "found; 128+signal if helixrun was interrupted; 2 bad flags; 1 launcher errors\n"
        "or a rank exiting 0 without PMIx_Finalize / without joining a PMIx job.\n"
        "The first failure is the rank that died first, even when a survivor's PMIx_Abort\n"
        "reached helixrun before the death did.\n\n"
        "signals: SIGINT and SIGTERM are forwarded to every rank's process group; SIGHUP\n"
        "and SIGQUIT end the job with SIGTERM. Ranks start with default dispositions for\n"
        "those signals. Processes the ranks leave running are ended with the job; a\n"
        "directory left by a SIGKILLed helixrun is removed by the next one.\n\n"
        "examples:\n"
        "  helixrun -n 4 helix decode --kvp 2 --tpa 2 ...\n"
        "  helixrun -n 2 --timeout 60 --tag-output -x HELIX_DEBUG=INFO ./my_pmix_program\n\n"
        "settings (environment HELIX_<NAME>, overridden by the flags):\n",
        HLX_LAUNCH_MAX_NPROCS);
    hlx_param_print(f, &hlx_run_table, set, src);
}

static int hlx_run_bad(const char *flag, const char *value, const char *why)
{
    if (value != NULL)
        fprintf(stderr, "helixrun: %s '%s': %s (see helixrun --help)\n", flag, value, why);
    else
        fprintf(stderr, "helixrun: %s: %s (see helixrun --help)\n", flag, why);
    return HLX_LAUNCH_EXIT_USAGE;
}

static int hlx_run_valid_name(const char *s, size_t n)
{
    if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return 0;
    return 1;
}

/* execvp's search, done once here so a missing PROGRAM is reported before any rank
 * starts, and the child can use plain execve (fork from a threaded process). */
static int hlx_run_resolve(const char *prog, char *out, size_t size)
{
    const char *path = getenv("PATH");
    struct stat st;

    if (strchr(prog, '/') != NULL) {
        if (stat(prog, &st) == 0 && S_ISREG(st.st_mode) && access(prog, X_OK) == 0 &&
            strlen(prog) < size) {
            strcpy(out, prog);
            return 0;
        }
        return -1;
    }
    if (path == NULL || *path == '\0')
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t len = strcspn(path, ":");
        int    n   = snprintf(out, size, "%.*s%s%s", (int)len, path, len ? "/" : "", prog);
        if (n > 0 && (size_t)n < size && stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
            access(out, X_OK) == 0)
            return 0;
        path += len;
        if (*path == ':')
            path++;
    }
    return -1;
}

/* Parses the flags into set, envset and np. Returns -1 to go on, else the exit code. */
static int hlx_run_parse(int argc, char **argv, hlx_run_settings_t *set,
                         hlx_param_src_t *src, char **envset, size_t *nenvset, long *np)
{
    int   opt;

    /* "+": stop at PROGRAM so its own flags are left alone; ":": report a missing value
     * apart from an unknown flag. */
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+:n:x:hV", hlx_run_longopts, NULL)) != -1) {
        const char *flag = NULL, *param = NULL, *value = optarg;
        switch (opt) {
        case 'n':
        {
            int64_t n;
            char    why[128];
            if (hlx_parse_int(optarg, 1, HLX_LAUNCH_MAX_NPROCS, &n, why, sizeof(why)) != HLX_OK)
                return hlx_run_bad("-n/--np", optarg, why);
            *np = (long)n;
            continue;
        }
        case HLX_OPT_TIMEOUT:
            flag = "--timeout", param = "RUN_TIMEOUT";
            break;
        case HLX_OPT_GRACE:
            flag = "--grace", param = "RUN_GRACE";
            break;
        case HLX_OPT_NO_PREFIX:
            flag = "--no-prefix", param = "RUN_PREFIX", value = "none";
            break;
        case HLX_OPT_TAG_OUTPUT:
            flag = "--tag-output", param = "RUN_PREFIX", value = "tag";
            break;
        case HLX_OPT_PREFIX:
            flag = "--prefix", param = "RUN_PREFIX";
            break;
        case HLX_OPT_TMPDIR:
            flag = "--tmpdir", param = "RUN_TMPDIR";
            break;
        case 'x': {
            size_t      namelen = strcspn(optarg, "=");
            const char *fwd     = optarg[namelen] == '=' ? NULL : getenv(optarg);
            if (!hlx_run_valid_name(optarg, namelen))
                return hlx_run_bad("-x", optarg, "expected VAR or VAR=VALUE");
            if (optarg[namelen] != '=' && fwd == NULL) {
                fprintf(stderr, "helixrun: -x %s: not set here, nothing to forward\n",
                        optarg);
                continue;
            }
            envset[*nenvset] = malloc(strlen(optarg) + (fwd ? strlen(fwd) + 2 : 1));
            if (envset[*nenvset] == NULL)
                return HLX_LAUNCH_EXIT_FAIL;
            if (fwd)
                sprintf(envset[*nenvset], "%s=%s", optarg, fwd);
            else
                strcpy(envset[*nenvset], optarg);
            (*nenvset)++;
            continue;
        }
        case 'h':
            hlx_run_usage(stdout, set, src);
            return 0;
        case 'V':
            printf("helixrun (helix) %s\n", HLX_VERSION);
            return 0;
        case ':':
            return hlx_run_bad(argv[optind - 1], NULL, "needs a value");
        default:
            if (optopt != 0)
                fprintf(stderr, "helixrun: unknown option '-%c' (see helixrun --help)\n",
                        optopt);
            else
                fprintf(stderr, "helixrun: unknown option '%s' (see helixrun --help)\n",
                        argv[optind - 1]);
            return HLX_LAUNCH_EXIT_USAGE;
        }
        if (hlx_param_set(&hlx_run_table, set, src, param, value) != HLX_OK)
            return hlx_run_bad(flag, value, "bad value");
    }
    if (*np == 0)
        return hlx_run_bad("-n/--np", NULL, "the number of ranks is required");
    if (optind >= argc)
        return hlx_run_bad("PROGRAM", NULL, "missing program to run");
    return -1;
}

/* Turns the settings into launch options. Returns -1 to go on, else the exit code. */
static int hlx_run_opts(const hlx_run_settings_t *set, hlx_launch_opts_t *opts)
{
    int found = 0;

    opts->timeout_s = set->timeout;
    opts->grace_s   = set->grace;
    opts->settle_s  = set->settle;
    for (size_t i = 0; i < sizeof(hlx_run_prefixes) / sizeof(hlx_run_prefixes[0]); i++)
        if (!strcmp(set->prefix, hlx_run_prefixes[i].name)) {
            opts->prefix = hlx_run_prefixes[i].prefix;
            found        = 1;
        }
    if (!found)
        return hlx_run_bad("--prefix", set->prefix, "expected rank, tag or none");
    opts->tmproot = set->tmpdir[0] ? set->tmpdir : getenv("TMPDIR");
    if (opts->tmproot == NULL || opts->tmproot[0] == '\0')
        opts->tmproot = "/tmp";
    if (strlen(opts->tmproot) > PATH_MAX - 32)
        return hlx_run_bad("--tmpdir", opts->tmproot, "path too long");
    return -1;
}

int main(int argc, char **argv)
{
    hlx_run_settings_t set;
    hlx_param_src_t    src[sizeof(hlx_run_params) / sizeof(hlx_run_params[0])];
    hlx_launch_opts_t  opts;
    char               path[PATH_MAX];
    char             **envset;
    size_t             nenvset = 0;
    long               np      = 0;
    int                rc;

    memset(&opts, 0, sizeof(opts));
    if (hlx_param_load(&hlx_run_table, &set, src) != HLX_OK) {
        fprintf(stderr, "helixrun: bad HELIX_RUN_* environment setting\n");
        return HLX_LAUNCH_EXIT_USAGE;
    }
    envset = calloc((size_t)argc, sizeof(char *)); /* at most one -x per argument */
    if (envset == NULL)
        return HLX_LAUNCH_EXIT_FAIL;
    rc = hlx_run_parse(argc, argv, &set, src, envset, &nenvset, &np);
    if (rc < 0)
        rc = hlx_run_opts(&set, &opts);
    if (rc < 0 && hlx_run_resolve(argv[optind], path, sizeof(path)) != 0) {
        fprintf(stderr, "helixrun: %s: command not found or not executable\n", argv[optind]);
        rc = HLX_LAUNCH_EXIT_NOTFOUND;
    }
    if (rc < 0) {
        opts.nprocs  = (int)np;
        opts.envset  = envset;
        opts.nenvset = nenvset;
        opts.path    = path;
        opts.argv    = argv + optind;
        rc           = hlx_launch_run(&opts);
    }
    for (size_t i = 0; i < nenvset; i++)
        free(envset[i]);
    free(envset);
    return rc;
}
