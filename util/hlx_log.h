/* Small logger: levels, a subsystem mask, every line prefixed with host, pid and rank.
 * HELIX_DEBUG=ERROR|WARN|INFO|DEBUG|TRACE, HELIX_DEBUG_SUBSYS=ALL or a list (BOOT,NET,...). */
#ifndef HLX_LOG_H
#define HLX_LOG_H

#include <stdarg.h>

typedef enum {
    HLX_LOG_ERROR = 0,
    HLX_LOG_WARN  = 1,
    HLX_LOG_INFO  = 2,
    HLX_LOG_DEBUG = 3,
    HLX_LOG_TRACE = 4
} hlx_log_level_t;

typedef enum {
    HLX_SUB_CORE   = 1 << 0,
    HLX_SUB_BOOT   = 1 << 1,
    HLX_SUB_NET    = 1 << 2,
    HLX_SUB_KV     = 1 << 3,
    HLX_SUB_KERNEL = 1 << 4,
    HLX_SUB_TOPO   = 1 << 5,
    HLX_SUB_PLAN   = 1 << 6,
    HLX_SUB_LAUNCH = 1 << 7,
    HLX_SUB_ALL    = 0xffff
} hlx_log_subsys_t;

/* The core settings (table hlx_core_param_table in hlx_param.h). */
typedef struct {
    char debug[256];
    char debug_subsys[256];
    char data_dir[256];
    double input_timeout; /* seconds a pipe or device read as an input file may stay silent */
} hlx_core_settings_t;

/* Reads HELIX_DEBUG / HELIX_DEBUG_SUBSYS once (through the core settings table; a
 * misspelt level or subsystem is warned about with the nearest name); later calls are
 * no-ops. */
void hlx_log_init(void);
void hlx_log_set_rank(int rank);
/* The program and command a process runs ("helix decode"): until a rank is set, its errors
 * and warnings (below DEBUG) print as "helix decode: ..." (warnings "...: warning: ...")
 * instead of the host:pid:rank prefix, alone or under helixrun; under another launcher
 * (PMIX_RANK, SLURM_PROCID or OMPI_COMM_WORLD_RANK set, HELIXRUN not) the prefix stays,
 * as it does for NULL or "". */
void hlx_log_set_command(const char *cmd);
/* The rank set above; -1 before the bootstrap (or without one). */
int  hlx_log_rank(void);
int  hlx_log_enabled(hlx_log_level_t level, unsigned subsys);
void hlx_log_printf(hlx_log_level_t level, unsigned subsys, const char *file, int line,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define hlx_log(_lvl, _sub, ...) \
    do { \
        if (hlx_log_enabled(_lvl, _sub)) \
            hlx_log_printf(_lvl, _sub, __FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

#define hlx_error(...) hlx_log(HLX_LOG_ERROR, HLX_SUB_ALL, __VA_ARGS__)
#define hlx_warn(...)  hlx_log(HLX_LOG_WARN, HLX_SUB_ALL, __VA_ARGS__)
#define hlx_info(_sub, ...)  hlx_log(HLX_LOG_INFO, _sub, __VA_ARGS__)
#define hlx_debug(_sub, ...) hlx_log(HLX_LOG_DEBUG, _sub, __VA_ARGS__)

#endif
