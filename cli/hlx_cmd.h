/* Subcommands of the `helix` binary. Each returns the process exit code
 * (0 ok, 1 runtime failure, 2 bad input). */
#ifndef HLX_CMD_H
#define HLX_CMD_H

#include "hlx_flags.h"

int hlx_cmd_decode(int argc, char **argv);
int hlx_cmd_plan(int argc, char **argv);
int hlx_cmd_sweep(int argc, char **argv);
int hlx_cmd_topo(int argc, char **argv);
int hlx_cmd_bench(int argc, char **argv);
int hlx_cmd_info(int argc, char **argv);

/* Flag tables of the commands that declare their flags in one (listed by helix info). */
extern const hlx_flag_table_t hlx_topo_flags;

/* Checks the environment once per process: warns about HELIX_* variables that no setting
 * declares (with the nearest name) and reports each bad HELIX_* value once. Returns 0, or
 * 2 (the exit code) when a value is bad. main() calls it before every command but info. */
int  hlx_cli_check_env(void);
/* Only the unknown-name warnings (once per process). */
void hlx_cli_warn_unknown(void);

#endif
