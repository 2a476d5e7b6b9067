/* `helix info`: version, compiled backends, kernel variants this CPU runs, data directory,
 * and every HELIX_* setting with its value and where the value came from. */
#include "hlx_build_id.h"
#include "hlx_cmd.h"
#include "hlx_comm.h"
#include "hlx_config.h"
#include "hlx_kernels.h"
#include "hlx_log.h"
#include "hlx_nccl.h"
#include "hlx_param.h"
#include "hlx_parse.h"
#include "hlx_plan.h"
#include "hlx_watchdog.h"

#include <helix/device.h>
#include <helix/jobplace.h>
#include <helix/model.h>
#include <helix/runtime.h>
#include <helix/topology.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Environment variables read outside the settings tables. */
static const struct {
    const char *name;
    const char *help;
} hlx_info_env[] = {
    { "HELIX_RANK", "set by helixrun in each rank (informational; ranks come from PMIx)" },
    { "HELIX_SIZE", "set by helixrun in each rank (informational)" },
    { "HELIX_RUN_*", "settings of the launcher, passed on to its ranks (helixrun --help)" },
};

/* The commands that declare their flags in one table; the others (plan, sweep, model,
 * bench attention --device cuda) list theirs in their --help. */
static const struct {
    const hlx_flag_table_t *t;
    const char             *also; /* after the command's name */
} hlx_info_flag_tables[] = {
    { &hlx_decode_flags, "" },
    { &hlx_generate_flags, "" },
    { &hlx_topo_flags, "" },
    { &hlx_bench_flags, " attention, merge and gemv" },
    { &hlx_bench_a2a_flags, "" },
    { &hlx_bench_hopb_flags, "" },
    { &hlx_bench_local_flags, "" },
};

/* Every settings table of the components linked into `helix`. */
static const hlx_param_table_t *hlx_info_tables[8];

static size_t hlx_info_tables_fill(void)
{
    hlx_info_tables[0] = &hlx_core_param_table;
    hlx_info_tables[1] = hlx_runtime_param_table();
    hlx_info_tables[2] = &hlx_comm_param_table;
    hlx_info_tables[3] = hlx_topo_param_table();
    hlx_info_tables[4] = &hlx_plan_param_table;
    hlx_info_tables[5] = hlx_jobplace_param_table();
    hlx_info_tables[6] = &hlx_watchdog_param_table;
    hlx_info_tables[7] = &hlx_kernels_param_table;
    return sizeof(hlx_info_tables) / sizeof(hlx_info_tables[0]);
}

/* CUDA devices, driver and runtime versions, NCCL's, or why there is no device. */
static void hlx_info_devices(void)
{
    hlx_devices_t d;
    int i, nv = hlx_nccl_version();

    hlx_devices_query(&d);
    printf("devices:   ");
    if (d.count < 1)
        printf("no CUDA device (%s)\n", d.reason);
    else
        printf("%d CUDA device(s)\n", d.count);
    for (i = 0; i < d.count && i < HLX_DEVICES_MAX; i++)
        printf("  gpu %d: %s, %.1f GiB, compute capability %d.%d, %d SMs, HBM %.0f GB/s "
               "(from clocks)\n", i, d.dev[i].name, (double)d.dev[i].mem_bytes / (1 << 30),
               d.dev[i].cc_major, d.dev[i].cc_minor, d.dev[i].sms, d.dev[i].hbm_gbps);
    if (d.compiled && d.driver_version > 0)
        printf("  CUDA driver supports %d.%d, runtime %d.%d\n", d.driver_version / 1000,
               d.driver_version % 1000 / 10, d.runtime_version / 1000,
               d.runtime_version % 1000 / 10);
    else if (d.compiled)
        printf("  CUDA driver: none loaded, runtime %d.%d\n", d.runtime_version / 1000,
               d.runtime_version % 1000 / 10);
    else
        printf("  CUDA backend not compiled in\n");
    if (hlx_nccl_compiled())
        printf("  NCCL %d.%d.%d\n", nv / 10000, nv / 100 % 100, nv % 100);
    else
        printf("  NCCL not compiled in\n");
}

/* Whether this process starts bound, as a rank started the same way would: what
 * HELIX_BIND=auto then does. */
static void hlx_info_binding(void)
{
    hlx_topo_t *t = NULL;
    hlx_topo_info_t ti;
    char err[256], cpus[256];
    int n;

    if (hlx_topo_load(NULL, &t, err, sizeof(err)) != HLX_OK) {
        printf("binding:   unknown (%s)\n", err);
        return;
    }
    hlx_topo_get_info(t, &ti);
    if (!ti.this_system)
        printf("binding:   not judged: the topology (%s) is not this machine's\n", ti.source);
    else if ((n = hlx_topo_inherited_binding(t, cpus, sizeof(cpus))) > 0)
        printf("binding:   started bound to CPU%s %s (of %d): HELIX_BIND=auto keeps that "
               "binding, on replaces it with the placement's\n", n > 1 ? "s" : "", cpus,
               ti.npus);
    else
        printf("binding:   started on all %d CPUs: HELIX_BIND=auto binds each rank to its "
               "placement's cores (on one host, or on hosts that are distinct machines)\n",
               ti.npus);
    hlx_topo_free(t);
}

int hlx_cmd_info(int argc, char **argv)
{
    const char *names[16];
    hlx_comm_params_t cp;
    hlx_kernels_t k;
    size_t n, i;

    if (argc > 1) {
        if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
            printf("usage: helix info\n\nPrints the version, the backends compiled in, the "
                   "kernel variants this CPU runs,\nthe CUDA devices (names, memory, compute "
                   "capability; driver, runtime and NCCL\nversions) or why there is none, the "
                   "data directory, every HELIX_* setting with\nits value and source (default "
                   "or env; a bad value is marked INVALID with the\nreason) and the flags of "
                   "the commands that declare them in a table, with their\ndefaults.\n");
            return 0;
        }
        fprintf(stderr, "helix info: %s '%s' (helix info takes none: see helix info --help)\n",
                argv[1][0] == '-' ? "unknown option" : "unexpected argument", argv[1]);
        return 2;
    }
    printf("helix %s (build %s)\n", HLX_VERSION, HLX_BUILD_ID);
    n = hlx_kernels_list(names, 16);
    printf("kernels:   ");
    for (i = 0; i < n; i++)
        printf("%s%s", names[i], i + 1 < n ? ", " : "");
    if (hlx_kernels_init(NULL, &k) == HLX_OK)
        printf(" (selected: %s)", k.name);
    {
        char why[2048];
        hlx_kernels_explain(why, sizeof(why));
        printf("\nkernel dispatch: %s", why);
    }
    hlx_info_devices();
    printf("data dir:  %s\n", hlx_data_dir());
    hlx_comm_params_default(&cp);
    printf("transport: backend %s, operation deadline %.1f s\n", cp.backend, cp.timeout_s);
    hlx_info_binding();
    for (i = 0; i < hlx_info_tables_fill(); i++) {
        printf("settings (%s):\n", hlx_info_tables[i]->component);
        hlx_param_print_env(stdout, hlx_info_tables[i]);
    }
    for (i = 0; i < sizeof(hlx_info_flag_tables) / sizeof(hlx_info_flag_tables[0]); i++) {
        printf("flags of helix %s%s:\n", hlx_info_flag_tables[i].t->command,
               hlx_info_flag_tables[i].also);
        hlx_flags_help(stdout, hlx_info_flag_tables[i].t);
    }
    printf("environment (read outside the settings tables):\n");
    for (i = 0; i < sizeof(hlx_info_env) / sizeof(hlx_info_env[0]); i++) {
        const char *v = getenv(hlx_info_env[i].name);
        printf("  %-22s %-12s (%s)  %s\n", hlx_info_env[i].name, v ? v : "-",
               v ? "env" : "default", hlx_info_env[i].help);
    }
    hlx_cli_warn_unknown();
    return 0;
}

void hlx_cli_warn_unknown(void)
{
    const char *extra[sizeof(hlx_info_env) / sizeof(hlx_info_env[0])];
    static int done;
    size_t i;

    if (done++)
        return;
    for (i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
        extra[i] = hlx_info_env[i].name + 6;
    hlx_param_warn_unknown(hlx_info_tables, hlx_info_tables_fill(), extra,
                           sizeof(extra) / sizeof(extra[0]));
}

/* HELIX_KERNELS names a variant of the kernels layer: checked against the variants this
 * build has (whether this CPU runs it is the kernels layer's to say). */
static int hlx_cli_check_kernels_env(void)
{
    char buf[HLX_PARAM_STRLEN];
    const char *v = hlx_kernels_env_variant(buf, sizeof(buf)), *names[16];
    char choices[256] = "auto", why[512];
    size_t n, i, used = 4;
    int idx;

    if (v == NULL)
        return 0;
    n = hlx_kernels_list(names, 16);
    if (!strcmp(v, "auto"))
        return 0;
    for (i = 0; i < n; i++)
        if (!strcmp(v, names[i]))
            return 0;
    for (i = 0; i < n && used < sizeof(choices); i++)
        used += (size_t)snprintf(choices + used, sizeof(choices) - used, "|%s", names[i]);
    /* the kernels layer matches names exactly: a case slip is named as such */
    if (hlx_parse_choice(v, choices, &idx, why, sizeof(why)) == HLX_OK)
        snprintf(why, sizeof(why), "'%.40s' is not one of %s (names are lower case)", v,
                 choices);
    hlx_error("HELIX_KERNELS: %s", why);
    return 2;
}

int hlx_cli_check_env(void)
{
    static int rc = -1;

    if (rc < 0) {
        hlx_cli_warn_unknown();
        rc = hlx_param_check_env(hlx_info_tables, hlx_info_tables_fill()) == HLX_OK ? 0 : 2;
        if (hlx_cli_check_kernels_env() != 0)
            rc = 2;
    }
    return rc;
}
