/* Subcommands of the `helix` binary. Each returns the process exit code
 * (0 ok, 1 runtime failure, 2 bad input). */
#ifndef HLX_CMD_H
#define HLX_CMD_H

int hlx_cmd_decode(int argc, char **argv);
int hlx_cmd_plan(int argc, char **argv);
int hlx_cmd_sweep(int argc, char **argv);
int hlx_cmd_topo(int argc, char **argv);
int hlx_cmd_bench(int argc, char **argv);
int hlx_cmd_info(int argc, char **argv);
int hlx_cmd_model(int argc, char **argv);

/* Warns about HELIX_* environment variables that no setting declares. */
void hlx_cli_check_env(void);

#endif
