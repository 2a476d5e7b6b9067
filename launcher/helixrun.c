/* helixrun: start N ranks of a program on this node as one PMIx job (helixrun owns the
 * PMIx server), forward their output, and end the whole job on the first failure. */
#define _GNU_SOURCE
#include "hlx_config.h"
#include "hlx_file.h"
#include "hlx_json.h" /* hlx_nearest_name */
#include "hlx_launch.h"
#include "hlx_log.h"
#include "hlx_param.h"
#include "hlx_parse.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* --prefix STYLE: the names, in the order of the styles of hlx_run_prefixes. */
#define HLX_RUN_PREFIX_CHOICES "rank|tag|none"

/* Every tunable in one table: defaults, HELIX_RUN_* environment overrides, flags. */
typedef struct hlx_run_settings {
    double timeout;
    double grace;
    double settle;
    char   prefix[HLX_PARAM_STRLEN];
    char   tmpdir[HLX_PARAM_STRLEN];
    int    collapse;
    int    oversubscribe;
    int    topo_xml;
} hlx_run_settings_t;

static const hlx_param_t hlx_run_params[] = {
    { "RUN_TIMEOUT", HLX_PT_DOUBLE, "0", 0, 1e7, offsetof(hlx_run_settings_t, timeout),
      "job-wide wall-clock limit in seconds, 0 for none (--timeout); exit 124 when hit", NULL },
    { "RUN_GRACE", HLX_PT_DOUBLE, "5", 0, 3600, offsetof(hlx_run_settings_t, grace),
      "seconds from SIGTERM to SIGKILL when the job is killed (--grace)", NULL },
    { "RUN_SETTLE", HLX_PT_DOUBLE, "0.1", 0, 10, offsetof(hlx_run_settings_t, settle),
      "seconds to collect rank failures that come together before naming the first", NULL },
    { "RUN_PREFIX", HLX_PT_STRING, "rank", 0, 0, offsetof(hlx_run_settings_t, prefix),
      "output prefix: rank \"[R] \", tag \"[R]<stdout>: \", none (--prefix)",
      HLX_RUN_PREFIX_CHOICES },
    { "RUN_TMPDIR", HLX_PT_STRING, "", 0, 0, offsetof(hlx_run_settings_t, tmpdir),
      "where the private PMIx directory is made (default $TMPDIR, else /tmp)", NULL },
    { "RUN_COLLAPSE", HLX_PT_INT, "1", 0, 1, offsetof(hlx_run_settings_t, collapse),
      "1: a stderr line other ranks print alike is printed once, then \"[1-3] (the same "
      "line as [0] above)\"; 0: every copy (--no-collapse)", NULL },
    { "RUN_OVERSUBSCRIBE", HLX_PT_INT, "0", 0, 1, offsetof(hlx_run_settings_t, oversubscribe),
      "1: no warning when -n exceeds the CPUs helixrun may run on (--oversubscribe)", NULL },
    { "RUN_TOPO_XML", HLX_PT_INT, "auto", -1, 1, offsetof(hlx_run_settings_t, topo_xml),
      "on (1): load this machine once (PCI devices included) and hand it to the ranks as "
      "hwloc XML (HELIX_TOPO_LAUNCHER_XML); off (0): each rank discovers it; auto (-1): on "
      "when -n is more than twice the CPUs helixrun may run on", "auto|off|on" },
};

#define HLX_RUN_NPARAMS (sizeof(hlx_run_params) / sizeof(hlx_run_params[0]))

static const hlx_param_table_t hlx_run_table = {
    "helixrun", hlx_run_params, HLX_RUN_NPARAMS, sizeof(hlx_run_settings_t), NULL,
};

static const hlx_prefix_t hlx_run_prefixes[] = { HLX_PREFIX_RANK, HLX_PREFIX_TAG,
                                                 HLX_PREFIX_NONE };

/* One line about a bad HELIX_RUN_* value, printed after the flags are parsed (never for
 * --help or --version, which work whatever the environment holds). */
typedef struct hlx_run_envbad {
    int  n;
    char line[HLX_RUN_NPARAMS][HLX_PARAM_STRLEN + 128];
} hlx_run_envbad_t;

enum {
    HLX_OPT_TIMEOUT = 256,
    HLX_OPT_GRACE,
    HLX_OPT_NO_PREFIX,
    HLX_OPT_TAG_OUTPUT,
    HLX_OPT_PREFIX,
    HLX_OPT_TMPDIR,
    HLX_OPT_NO_COLLAPSE,
    HLX_OPT_OVERSUBSCRIBE,
};

static const struct option hlx_run_longopts[] = {
    { "np", required_argument, NULL, 'n' },
    { "timeout", required_argument, NULL, HLX_OPT_TIMEOUT },
    { "grace", required_argument, NULL, HLX_OPT_GRACE },
    { "no-prefix", no_argument, NULL, HLX_OPT_NO_PREFIX },
    { "tag-output", no_argument, NULL, HLX_OPT_TAG_OUTPUT },
    { "prefix", required_argument, NULL, HLX_OPT_PREFIX },
    { "tmpdir", required_argument, NULL, HLX_OPT_TMPDIR },
    { "no-collapse", no_argument, NULL, HLX_OPT_NO_COLLAPSE },
    { "oversubscribe", no_argument, NULL, HLX_OPT_OVERSUBSCRIBE },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
};

static void hlx_run_usage(FILE *f, const hlx_run_settings_t *set,
                          const hlx_param_src_t *src, const hlx_run_envbad_t *bad)
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
        "      --no-collapse    print every copy of a stderr line that several ranks print\n"
        "                       alike; by default the first is printed at once and the\n"
        "                       copies of other ranks within 2 s (the log header's host,\n"
        "                       pid and rank aside) become one line: \"[1-3] (the same\n"
        "                       line as [0] above)\" (stdout is never collapsed)\n"
        "      --oversubscribe  no warning when N exceeds the CPUs helixrun may run on\n"
        "                       (the ranks then share CPUs; they are started anyway)\n"
        "  -x VAR[=VALUE]       set VAR in every rank (VAR alone: forward helixrun's value);\n"
        "                       not HELIXRUN, HELIX_RANK, HELIX_SIZE or PMIX_*, which\n"
        "                       helixrun sets itself (PMIX_MCA_* tuning is allowed)\n"
        "      --tmpdir DIR     where the private PMIx directory is made (default $TMPDIR,\n"
        "                       else /tmp); it is removed when helixrun exits\n"
        "  -h, --help           this text\n"
        "  -V, --version        print the version\n\n"
        "exit status: 0 all ranks exited 0; the first failing rank's exit code, or\n"
        "128+signal if it was killed; PMIx_Abort's status; 124 timeout; 127 PROGRAM not\n"
        "found; 128+signal if helixrun was interrupted; 2 bad flags or settings; 1 launcher\n"
        "errors or a rank exiting 0 without PMIx_Finalize / without joining a PMIx job.\n"
        "The first failure is the rank that died first, even when a survivor's PMIx_Abort\n"
        "reached helixrun before the death did.\n\n"
        "signals: SIGINT and SIGTERM are forwarded to every rank's process group; SIGHUP\n"
        "and SIGQUIT end the job with SIGTERM; a second signal sends SIGKILL at once.\n"
        "Ranks start with default dispositions for those signals. Processes the ranks\n"
        "leave running are ended with the job; if helixrun is SIGKILLed, its keeper\n"
        "process ends what is left in the ranks' process groups and removes the job's\n"
        "directory (a directory still left is removed by the next helixrun).\n\n"
        "examples:\n"
        "  helixrun -n 4 helix decode --kvp 2 --tpa 2 ...\n"
        "  helixrun -n 2 --timeout 60 --tag-output -x HELIX_DEBUG=INFO ./my_pmix_program\n\n"
        "settings (environment HELIX_<NAME>, overridden by the flags):\n",
        HLX_LAUNCH_MAX_NPROCS);
    hlx_param_print(f, &hlx_run_table, set, src);
    for (int i = 0; i < bad->n; i++)
        fprintf(f, "  ignored (helixrun without --help exits 2): %s\n", bad->line[i]);
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

/* The table entry of a setting. */
static int hlx_run_param_index(const char *name)
{
    for (size_t i = 0; i < HLX_RUN_NPARAMS; i++)
        if (!strcmp(hlx_run_params[i].name, name))
            return (int)i;
    return -1;
}

/* Defaults, then each good HELIX_RUN_* value; a bad one keeps its default and is
 * described in bad, for main to report once the flags are known. */
static void hlx_run_load(hlx_run_settings_t *set, hlx_param_src_t *src, hlx_run_envbad_t *bad)
{
    memset(set, 0, sizeof(*set));
    bad->n = 0;
    for (size_t i = 0; i < HLX_RUN_NPARAMS; i++) {
        const hlx_param_t *p = &hlx_run_params[i];
        char               name[64], why[HLX_PARAM_STRLEN];
        const char        *v;

        hlx_param_set(&hlx_run_table, set, NULL, p->name, p->defval);
        src[i] = HLX_SRC_DEFAULT;
        snprintf(name, sizeof(name), "HELIX_%s", p->name);
        v = getenv(name);
        if (v == NULL)
            continue;
        /* checked before it is set: hlx_param_set would log a second, generic line */
        if (hlx_param_check(p, v, why, sizeof(why)) != HLX_OK) {
            snprintf(bad->line[bad->n++], sizeof(bad->line[0]), "%s: %s", name, why);
            continue;
        }
        hlx_param_set(&hlx_run_table, set, NULL, p->name, v);
        src[i] = HLX_SRC_ENV;
        hlx_info(HLX_SUB_LAUNCH, "%s=%s from environment", name, v);
    }
}

/* A HELIX_RUN_* name the table does not declare gets a warning with the nearest one, as
 * helix warns about its own HELIX_* (helix leaves every HELIX_RUN_* to helixrun):
 * HELIX_RUN_TIMOUT=60 would otherwise set nothing, silently. */
static void hlx_run_warn_unknown(void)
{
    extern char **environ;
    const char   *names[HLX_RUN_NPARAMS];

    for (size_t i = 0; i < HLX_RUN_NPARAMS; i++)
        names[i] = hlx_run_params[i].name;
    for (char **e = environ; e && *e; e++) {
        size_t      len = strcspn(*e, "=");
        char        name[128], show[HLX_PARAM_SHOW_NAME + 32];
        const char *near = NULL;

        if (strncmp(*e, "HELIX_RUN_", 10) != 0)
            continue;
        /* a name too long for the buffer is no declared one, and near none: warned too */
        if (len - 6 < sizeof(name)) {
            snprintf(name, sizeof(name), "%.*s", (int)(len - 6), *e + 6);
            if (hlx_run_param_index(name) >= 0)
                continue;
            near = hlx_nearest_name(name, names, HLX_RUN_NPARAMS);
        }
        hlx_param_env_show(*e + 6, len - 6, show, sizeof(show));
        if (near)
            fprintf(stderr, "helixrun: unknown environment variable HELIX_%s (did you mean "
                    "HELIX_%s?)\n", show, near);
        else
            fprintf(stderr, "helixrun: unknown environment variable HELIX_%s (see helixrun "
                    "--help)\n", show);
    }
}

/* Parses the flags into set, envset and np. Returns -1 to go on, else the exit code.
 * A repeated flag takes its last value, as the other helix commands do. */
static int hlx_run_parse(int argc, char **argv, hlx_run_settings_t *set,
                         hlx_param_src_t *src, const hlx_run_envbad_t *bad, char **envset,
                         size_t *nenvset, long *np)
{
    int   opt;

    /* "+": stop at PROGRAM so its own flags are left alone; ":": report a missing value
     * apart from an unknown flag. */
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "+:n:x:hV", hlx_run_longopts, NULL)) != -1) {
        const char *flag = NULL, *param = NULL, *value = optarg;
        char        why[HLX_PARAM_STRLEN];
        int         pi;

        switch (opt) {
        case 'n':
        {
            int64_t n;
            if (hlx_parse_int(optarg, 1, HLX_LAUNCH_MAX_NPROCS, &n, why, sizeof(why)) != HLX_OK)
                return hlx_run_bad("-n/--np", NULL, why);
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
        case HLX_OPT_NO_COLLAPSE:
            flag = "--no-collapse", param = "RUN_COLLAPSE", value = "0";
            break;
        case HLX_OPT_OVERSUBSCRIBE:
            flag = "--oversubscribe", param = "RUN_OVERSUBSCRIBE", value = "1";
            break;
        case 'x': {
            size_t      namelen = strcspn(optarg, "=");
            const char *fwd     = optarg[namelen] == '=' ? NULL : getenv(optarg);
            if (!hlx_run_valid_name(optarg, namelen))
                return hlx_run_bad("-x", optarg, "expected VAR or VAR=VALUE");
            if (hlx_launch_reserved(optarg, namelen)) {
                fprintf(stderr, "helixrun: -x '%s': %.*s is set by helixrun in every rank "
                        "itself (reserved: " HLX_LAUNCH_RESERVED_TEXT ")\n", optarg,
                        (int)namelen, optarg);
                return HLX_LAUNCH_EXIT_USAGE;
            }
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
            hlx_run_usage(stdout, set, src, bad);
            return 0;
        case 'V':
            printf("helixrun (helix) %s\n", HLX_VERSION);
            return 0;
        case ':':
            return hlx_run_bad(argv[optind - 1], NULL, "needs a value");
        default: {
            const char *arg = argv[optind - 1], *eq = strchr(arg, '=');
            /* a known long option given a value it does not take ("--no-prefix=1"):
             * getopt sets optopt to the option's code, not a character */
            if (!strncmp(arg, "--", 2) && eq != NULL && optopt != 0)
                fprintf(stderr, "helixrun: %.*s takes no value (given '%s'; see helixrun "
                        "--help)\n", (int)(eq - arg), arg, arg);
            else if (optopt > 0 && optopt < 128)
                fprintf(stderr, "helixrun: unknown option '-%c' (see helixrun --help)\n",
                        optopt);
            else
                fprintf(stderr, "helixrun: unknown option '%s' (see helixrun --help)\n",
                        arg);
            return HLX_LAUNCH_EXIT_USAGE;
        }
        }
        pi = hlx_run_param_index(param);
        if (hlx_param_check(&hlx_run_params[pi], value, why, sizeof(why)) != HLX_OK)
            return hlx_run_bad(flag, NULL, why);
        hlx_param_set(&hlx_run_table, set, NULL, param, value);
        src[pi] = HLX_SRC_FLAG;
    }
    if (*np == 0)
        return hlx_run_bad("-n/--np", NULL, "the number of ranks is required");
    if (optind >= argc)
        return hlx_run_bad("PROGRAM", NULL, "missing program to run");
    return -1;
}

/* The CPUs in helixrun's affinity mask (which the ranks inherit), 0 when unknown. */
static int hlx_run_cpus(void)
{
    for (size_t ncpu = 1024; ncpu <= 65536; ncpu *= 2) {
        cpu_set_t   *set  = CPU_ALLOC(ncpu);
        const size_t size = CPU_ALLOC_SIZE(ncpu);
        int          n    = -1;

        if (set == NULL)
            return 0;
        if (sched_getaffinity(0, size, set) == 0)
            n = CPU_COUNT_S(size, set);
        CPU_FREE(set);
        if (n >= 0)
            return n;
        if (errno != EINVAL) /* EINVAL: the kernel's mask is larger than ncpu */
            return 0;
    }
    return 0;
}

/* More ranks than CPUs is allowed (tests run 4 ranks on 2), but said once: the ranks then
 * share CPUs, and the timings they report are not those of a core per rank. */
static void hlx_run_warn_oversubscribed(long np, const hlx_run_settings_t *set)
{
    const int ncpu = set->oversubscribe ? 0 : hlx_run_cpus();

    if (ncpu > 0 && np > ncpu)
        fprintf(stderr, "helixrun: %ld ranks on %d CPU%s (helixrun's affinity mask): the ranks "
                "share them, so bench and decode timings are not those of one core per rank; "
                "--oversubscribe or HELIX_RUN_OVERSUBSCRIBE=1 silences this\n", np, ncpu,
                ncpu > 1 ? "s" : "");
}

/* Whether the ranks get helixrun's topology as XML (HELIX_RUN_TOPO_XML). helixrun's load
 * with the PCI devices comes before the first fork, serial, while the ranks' own loads run
 * side by side: on 2 CPUs a tiny decode was 210 ms faster with it at -n 8 (median of 16
 * alternated pairs), 5 ms at -n 4 and 35 ms slower at -n 2, and a job whose program
 * reads no topology (/bin/true, -n 2) 70 ms slower. auto: more than two ranks per CPU. */
static int hlx_run_topo_xml(long np, const hlx_run_settings_t *set)
{
    int ncpu;

    if (set->topo_xml >= 0)
        return set->topo_xml;
    ncpu = hlx_run_cpus();
    return ncpu > 0 && np > 2L * ncpu;
}

/* Turns the settings (all checked) into launch options. Returns -1 to go on, else the
 * exit code. */
static int hlx_run_opts(const hlx_run_settings_t *set, const hlx_param_src_t *src,
                        hlx_launch_opts_t *opts)
{
    const char *env_tmp = getenv("TMPDIR");
    int         idx     = 0;
    char        why[HLX_PARAM_STRLEN];

    opts->timeout_s = set->timeout;
    opts->grace_s   = set->grace;
    opts->settle_s  = set->settle;
    hlx_parse_choice(set->prefix, HLX_RUN_PREFIX_CHOICES, &idx, why, sizeof(why));
    opts->prefix   = hlx_run_prefixes[idx];
    opts->collapse = set->collapse;
    if (set->tmpdir[0]) {
        opts->tmproot      = set->tmpdir;
        opts->tmproot_from = src[hlx_run_param_index("RUN_TMPDIR")] == HLX_SRC_FLAG
                                 ? "--tmpdir" : "HELIX_RUN_TMPDIR";
        opts->tmproot_given = 1;
    } else if (env_tmp != NULL && env_tmp[0] != '\0') {
        opts->tmproot       = env_tmp;
        opts->tmproot_from  = "TMPDIR";
        opts->tmproot_given = 1;
    } else {
        opts->tmproot      = "/tmp";
        opts->tmproot_from = "the default tmpdir";
    }
    if (strlen(opts->tmproot) > PATH_MAX - 32)
        return hlx_run_bad(opts->tmproot_from, NULL, "path too long");
    return -1;
}

int main(int argc, char **argv)
{
    hlx_run_settings_t set;
    hlx_param_src_t    src[HLX_RUN_NPARAMS];
    hlx_run_envbad_t   bad;
    hlx_launch_opts_t  opts;
    char               path[PATH_MAX];
    char             **envset;
    size_t             nenvset = 0;
    long               np      = 0;
    int                rc;

    /* First of all, before anything that takes time: a SIGINT sent right after the start
     * of a helixrun that a shell's "&" started with SIGINT ignored must not be lost. */
    hlx_launch_block_signals();
    memset(&opts, 0, sizeof(opts));
    hlx_run_load(&set, src, &bad);
    hlx_run_warn_unknown();
    envset = calloc((size_t)argc, sizeof(char *)); /* at most one -x per argument */
    if (envset == NULL)
        return HLX_LAUNCH_EXIT_FAIL;
    rc = hlx_run_parse(argc, argv, &set, src, &bad, envset, &nenvset, &np);
    if ((rc < 0 || rc == HLX_LAUNCH_EXIT_USAGE) && bad.n > 0) {
        for (int i = 0; i < bad.n; i++)
            fprintf(stderr, "helixrun: %s (see helixrun --help)\n", bad.line[i]);
        rc = HLX_LAUNCH_EXIT_USAGE;
    }
    if (rc < 0)
        rc = hlx_run_opts(&set, src, &opts);
    if (rc < 0 && hlx_run_resolve(argv[optind], path, sizeof(path)) != 0) {
        fprintf(stderr, "helixrun: %s: command not found or not executable\n", argv[optind]);
        rc = HLX_LAUNCH_EXIT_NOTFOUND;
    }
    if (rc < 0) {
        hlx_run_warn_oversubscribed(np, &set);
        opts.topo_xml = hlx_run_topo_xml(np, &set);
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
    /* the ranks' stdout leaves through ours (helixrun -n 2 helix ... --json > out.json): a
     * write there that failed (a full disk) is a failed job, never 0 over a truncated file */
    {
        char why[128];
        if (hlx_stdout_flush(why, sizeof(why)) != HLX_OK) {
            fprintf(stderr, "helixrun: writing the standard output failed: %s (the ranks' "
                    "output is incomplete)\n", why);
            if (rc == 0)
                rc = HLX_LAUNCH_EXIT_FAIL;
        }
    }
    return rc;
}
