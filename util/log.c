/* Logger implementation: one line per call on stderr, prefixed "helix host:pid:rank LEVEL"
 * (before a rank is known, a command's errors and warnings as "helix CMD: ..."); and the
 * core settings table (log level, subsystems, data directory, input timeout). */
#include "hlx_log.h"
#include "hlx_json.h"
#include "hlx_param.h"
#include "hlx_parse.h"

#include <stddef.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static struct {
    int      initialized;
    int      level;
    unsigned mask;
    int      rank;
    char     host[64];
    char     cmd[48]; /* "helix decode" once the command line named one; "" before */
} hlx_log_state = { 0, HLX_LOG_WARN, HLX_SUB_ALL, -1, "", "" };

static const char *const hlx_log_level_names[] = { "ERROR", "WARN", "INFO", "DEBUG", "TRACE" };

static const struct { const char *name; unsigned bit; } hlx_log_subsys_names[] = {
    { "CORE", HLX_SUB_CORE },   { "BOOT", HLX_SUB_BOOT }, { "NET", HLX_SUB_NET },
    { "KV", HLX_SUB_KV },       { "KERNEL", HLX_SUB_KERNEL }, { "TOPO", HLX_SUB_TOPO },
    { "PLAN", HLX_SUB_PLAN },   { "LAUNCH", HLX_SUB_LAUNCH }, { "ALL", HLX_SUB_ALL },
};

static const hlx_param_t hlx_core_params[] = {
    { "DEBUG", HLX_PT_STRING, "WARN", 0, 0, offsetof(hlx_core_settings_t, debug),
      "log level: ERROR, WARN, INFO, DEBUG, TRACE (a misspelt level is named and ignored)", NULL },
    { "DEBUG_SUBSYS", HLX_PT_STRING, "ALL", 0, 0, offsetof(hlx_core_settings_t, debug_subsys),
      "log subsystems: ALL or a comma list of CORE, BOOT, NET, KV, KERNEL, TOPO, PLAN, LAUNCH",
      NULL },
    { "DATA_DIR", HLX_PT_STRING, "", 0, 0, offsetof(hlx_core_settings_t, data_dir),
      "directory holding models/ and clusters/ presets (empty: the source tree's data/, "
      "else the installed share directory)", NULL },
    { "INPUT_TIMEOUT", HLX_PT_DOUBLE, "60", 0.001, 86400,
      offsetof(hlx_core_settings_t, input_timeout),
      "seconds an input file that is a pipe or device (a model, cluster, topology or prompt "
      "file) may go without a byte before it is refused: a writer that stalled", NULL },
};

const hlx_param_table_t hlx_core_param_table = {
    "core", hlx_core_params, sizeof(hlx_core_params) / sizeof(hlx_core_params[0]),
    sizeof(hlx_core_settings_t), NULL,
};

/* Unknown names in a subsystem list are warned about with the nearest subsystem. */
static unsigned hlx_log_parse_mask(const char *s)
{
    const char *names[sizeof(hlx_log_subsys_names) / sizeof(hlx_log_subsys_names[0])];
    unsigned mask = 0;
    char buf[256], *save = NULL, *tok;
    size_t i, n = sizeof(names) / sizeof(names[0]);

    for (i = 0; i < n; i++)
        names[i] = hlx_log_subsys_names[i].name;
    snprintf(buf, sizeof(buf), "%s", s);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char up[32];
        const char *near;
        int known = 0;
        for (i = 0; i < n; i++) {
            if (!strcasecmp(tok, names[i])) {
                mask |= hlx_log_subsys_names[i].bit;
                known = 1;
            }
        }
        if (known)
            continue;
        for (i = 0; tok[i] && i + 1 < sizeof(up); i++)
            up[i] = (char)toupper((unsigned char)tok[i]);
        up[i] = '\0';
        near = hlx_nearest_name(up, names, n);
        if (near != NULL)
            hlx_warn("HELIX_DEBUG_SUBSYS: unknown subsystem '%s' ignored (did you mean %s?)",
                     tok, near);
        else
            hlx_warn("HELIX_DEBUG_SUBSYS: unknown subsystem '%s' ignored (known: CORE, BOOT, "
                     "NET, KV, KERNEL, TOPO, PLAN, LAUNCH, ALL)", tok);
    }
    return mask ? mask : HLX_SUB_ALL;
}

void hlx_log_init(void)
{
    hlx_core_settings_t set;
    hlx_param_src_t src[sizeof(hlx_core_params) / sizeof(hlx_core_params[0])];
    char why[256];
    int level;

    if (hlx_log_state.initialized)
        return;
    hlx_log_state.initialized = 1;
    if (gethostname(hlx_log_state.host, sizeof(hlx_log_state.host) - 1) != 0)
        strcpy(hlx_log_state.host, "?");
    /* a bad value (longer than a setting holds) is reported and keeps its default */
    (void)hlx_param_load(&hlx_core_param_table, &set, src);
    if (hlx_parse_choice(set.debug, "ERROR|WARN|INFO|DEBUG|TRACE", &level, why,
                         sizeof(why)) == HLX_OK)
        hlx_log_state.level = level;
    else
        hlx_warn("HELIX_DEBUG: %s; logging at WARN", why);
    if (src[1] == HLX_SRC_ENV)
        hlx_log_state.mask = hlx_log_parse_mask(set.debug_subsys);
    /* again, now that the level is known: the overrides are logged at INFO (once) */
    (void)hlx_param_load(&hlx_core_param_table, &set, NULL);
}

void hlx_log_set_rank(int rank)
{
    hlx_log_state.rank = rank;
}

void hlx_log_set_command(const char *cmd)
{
    /* under mpirun or srun nothing prefixes a rank's lines, and a failure before the
     * bootstrap (PMIx_Init itself) is told apart by host and pid alone: kept there;
     * helixrun prefixes each line with its rank and folds equal ones */
    const int launched = getenv("PMIX_RANK") != NULL || getenv("SLURM_PROCID") != NULL ||
                         getenv("OMPI_COMM_WORLD_RANK") != NULL;

    if (launched && getenv("HELIXRUN") == NULL)
        cmd = NULL;
    snprintf(hlx_log_state.cmd, sizeof(hlx_log_state.cmd), "%s", cmd ? cmd : "");
}

int hlx_log_rank(void)
{
    return hlx_log_state.rank;
}

int hlx_log_enabled(hlx_log_level_t level, unsigned subsys)
{
    if (!hlx_log_state.initialized)
        hlx_log_init();
    return (int)level <= hlx_log_state.level &&
           (level == HLX_LOG_ERROR || (subsys & hlx_log_state.mask));
}

void hlx_log_printf(hlx_log_level_t level, unsigned subsys, const char *file, int line,
                    const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    (void)subsys;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* a command's own input errors (a HELIX_* setting, a file) before any rank exists read
     * as its flag errors do; with ranks (or DEBUG and up) the host, pid and rank matter */
    if (hlx_log_state.rank < 0 && hlx_log_state.cmd[0] && level <= HLX_LOG_WARN &&
        hlx_log_state.level < HLX_LOG_DEBUG)
        fprintf(stderr, "%s: %s%s\n", hlx_log_state.cmd,
                level == HLX_LOG_WARN ? "warning: " : "", msg);
    else if (hlx_log_state.level >= HLX_LOG_DEBUG)
        fprintf(stderr, "helix %s:%d:%d %s %s:%d %s\n", hlx_log_state.host, (int)getpid(),
                hlx_log_state.rank, hlx_log_level_names[level], file, line, msg);
    else
        fprintf(stderr, "helix %s:%d:%d %s %s\n", hlx_log_state.host, (int)getpid(),
                hlx_log_state.rank, hlx_log_level_names[level], msg);
}
