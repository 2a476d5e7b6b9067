/* `helix info`: version, compiled backends, kernel variants this CPU runs, data directory,
 * and every HELIX_* setting with its value and where the value came from. */
#include "hlx_cmd.h"
#include "hlx_comm.h"
#include "hlx_config.h"
#include "hlx_kernels.h"
#include "hlx_param.h"
#include "hlx_plan.h"

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
    { "HELIX_DEBUG", "log level: ERROR, WARN (default), INFO, DEBUG, TRACE" },
    { "HELIX_DEBUG_SUBSYS", "log subsystems: ALL or a list (CORE,BOOT,NET,KV,KERNEL,TOPO,PLAN,LAUNCH)" },
    { "HELIX_KERNELS", "kernel variant when --kernels is not given (auto, scalar, avx2, avx512, amx)" },
    { "HELIX_DATA_DIR", "directory holding models/ and clusters/ presets" },
    { "HELIX_FAULT", "scripted fault for tests: drop-partials:rank=R[:step=S]" },
    { "HELIX_RANK", "set by helixrun in each rank (informational; ranks come from PMIx)" },
    { "HELIX_SIZE", "set by helixrun in each rank (informational)" },
};

/* Every settings table of the components linked into `helix`. */
static const hlx_param_table_t *hlx_info_tables[4];

static size_t hlx_info_tables_fill(void)
{
    hlx_info_tables[0] = hlx_runtime_param_table();
    hlx_info_tables[1] = &hlx_comm_param_table;
    hlx_info_tables[2] = hlx_topo_param_table();
    hlx_info_tables[3] = &hlx_plan_param_table;
    return sizeof(hlx_info_tables) / sizeof(hlx_info_tables[0]);
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
                   "kernel variants this CPU runs,\nthe data directory and every HELIX_* "
                   "setting with its value and source.\n");
            return 0;
        }
        fprintf(stderr, "helix info: unexpected argument '%s'\n", argv[1]);
        return 2;
    }
    printf("helix %s\n", HLX_VERSION);
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
    printf("data dir:  %s\n", hlx_data_dir());
    hlx_comm_params_default(&cp);
    printf("transport: backend %s, operation deadline %.1f s\n", cp.backend, cp.timeout_s);
    for (i = 0; i < hlx_info_tables_fill(); i++) {
        const hlx_param_table_t *t = hlx_info_tables[i];
        hlx_param_src_t src[64];
        void *vals = calloc(1, t->size);
        printf("settings (%s):\n", t->component);
        if (vals && t->nparams <= 64 && hlx_param_load(t, vals, src) == HLX_OK)
            hlx_param_print(stdout, t, vals, src);
        free(vals);
    }
    printf("environment:\n");
    for (i = 0; i < sizeof(hlx_info_env) / sizeof(hlx_info_env[0]); i++) {
        const char *v = getenv(hlx_info_env[i].name);
        printf("  %-22s %-12s (%s)  %s\n", hlx_info_env[i].name, v ? v : "-",
               v ? "env" : "default", hlx_info_env[i].help);
    }
    hlx_cli_check_env();
    return 0;
}

void hlx_cli_check_env(void)
{
    const char *extra[sizeof(hlx_info_env) / sizeof(hlx_info_env[0])];
    size_t i;

    for (i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
        extra[i] = hlx_info_env[i].name + 6;
    hlx_param_warn_unknown(hlx_info_tables, hlx_info_tables_fill(), extra, sizeof(extra) / sizeof(extra[0]));
}
