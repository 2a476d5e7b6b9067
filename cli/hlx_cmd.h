/* Subcommands of the `helix` binary. Each returns the process exit code
 * (0 ok, 1 runtime failure, 2 bad input). */
#ifndef HLX_CMD_H
#define HLX_CMD_H

#include "hlx_config.h"
#include "hlx_flags.h"

#include <helix/runtime.h>
#include <stddef.h>
#include <stdint.h>

int hlx_cmd_decode(int argc, char **argv);
int hlx_cmd_plan(int argc, char **argv);
int hlx_cmd_sweep(int argc, char **argv);
int hlx_cmd_topo(int argc, char **argv);
int hlx_cmd_bench(int argc, char **argv);
int hlx_cmd_info(int argc, char **argv);
int hlx_cmd_model(int argc, char **argv);

/* Loads --model with optional dtype overrides (-1: none): a checkpoint (a directory with
 * config.json, or its config.json) through decode's config reader (config.json alone, no
 * tensor read) with its weights in the dtype decode holds them in (fp8 and float16 in
 * bf16), else a model file or preset. Says what is wrong, naming --model, and returns an
 * exit code (0 ok): plan, sweep and bench hopb, which need the shapes alone. */
int hlx_cli_load_model(const char *cmd, const char *name, int wdt, int kvdt, hlx_model_t *m);

/* Sizes from flags must leave room: the bytes of this machine's memory that a benchmark may
 * take (80% of it; 0 when unknown), cmd_bench.c. */
double hlx_bench_mem_room(void);

/* Flag tables of the commands that declare their flags in one (listed by helix info). */
extern const hlx_flag_table_t hlx_topo_flags;
extern const hlx_flag_table_t hlx_decode_flags;
extern const hlx_flag_table_t hlx_generate_flags;
extern const hlx_flag_table_t hlx_bench_flags;       /* bench attention, merge, gemv */
extern const hlx_flag_table_t hlx_bench_a2a_flags;
extern const hlx_flag_table_t hlx_bench_hopb_flags;
extern const hlx_flag_table_t hlx_bench_local_flags;

/* The flags of helix decode as parsed from its table (cli/decode_flags.c). */
typedef struct {
    const char *model;
    int64_t     kvp, tpa, batch, context, steps, kv_block, seed;
    int         kv_dtype;    /* index in "f32|bf16", when given */
    const char *weight_dtype; /* --weight-dtype T (hlx_dtype_parse's names), when given */
    const char *kernels;
    int         check, json, verbose;
    double      check_tol, timeout, route_margin;
    int         hopb;        /* index in "off|on|auto" (hlx_hopb_mode_t order) */
    int64_t     micro_batch, threads, ep;
    const char *timeline;
    int         device;      /* index in "cpu|cuda|auto", when given */
    const char *prompt_ids;  /* --prompt-ids FILE */
    int64_t     prefill_chunk, max_new;
    double      temperature, top_p;
    const char *eos;         /* --eos ID[,ID...] (generate) */
    int         ignore_eos;  /* --ignore-eos (generate) */
    int         batch_given, seed_given;
} hlx_decode_opts_t;

/* A row of the run-flag tables (decode's, generate's) writing field _f of
 * hlx_decode_opts_t, and the rows both commands carry word for word. */
#define HLX_RF(_n, _t, _def, _lo, _hi, _dlo, _dhi, _ch, _f, _meta, _help) \
    { _n, _t, _def, _lo, _hi, _dlo, _dhi, _ch, offsetof(hlx_decode_opts_t, _f), _meta, _help }
#define HLX_RF_KVP \
    HLX_RF("kvp", HLX_FT_INT, "1", 1, 4096, 0, 0, NULL, kvp, "K", \
           "KV-parallel ranks per TPA shard")
#define HLX_RF_PREFILL_CHUNK \
    HLX_RF("prefill-chunk", HLX_FT_INT, "32", 1, 65536, 0, 0, NULL, prefill_chunk, "C", \
           "prompt tokens per prefill pass (B x C rows per GEMM)")
#define HLX_RF_CHECK_TOL \
    HLX_RF("check-tol", HLX_FT_NUM, "1e-3", 0, 0, 1e-15, 1e3, NULL, check_tol, "X", \
           "relative tolerance of --check")
#define HLX_RF_WEIGHT_DTYPE \
    HLX_RF("weight-dtype", HLX_FT_STRING, NULL, 0, 0, 0, 0, NULL, weight_dtype, "T", \
           "how the weights are held: f32 or bf16. f32 holds a float16 or\n" \
           "bfloat16 checkpoint exactly (twice bf16's bytes); bf16 rounds\n" \
           "(--check's reference reads the rounded values); fp8\n" \
           "checkpoints, and integer or MXFP4 ones of torch_dtype other\n" \
           "than float32, run in bf16 only (default: a checkpoint's\n" \
           "torch_dtype for float32 and bfloat16, else bf16; a model\n" \
           "file's or preset's weight_dtype, whose synthetic values it\n" \
           "holds)")
#define HLX_RF_JSON \
    HLX_RF("json", HLX_FT_BOOL, NULL, 0, 0, 0, 0, NULL, json, NULL, \
           "print one JSON object instead of the text report")

/* The end of decode's and generate's --help: the version flag and the exit status
 * convention (docs/usage.md, "Exit status"). */
#define HLX_RUN_USAGE_TAIL \
    "  -V, --version     print the version\n" \
    "\n" \
    "exit status: 0 ok, 1 the run or its check failed, 2 input refused before any work (bad,\n" \
    "or asking for what this version, build or machine does not do: docs/usage.md)\n"

/* Parses the decode command line into cfg (from hlx_run_config_default) and o (model,
 * json). Returns -1 to go on, 0 after --help or --version, 2 after a message naming the
 * flag. */
int hlx_decode_parse(int argc, char **argv, hlx_run_config_t *cfg, hlx_decode_opts_t *o);
/* The same over another table of run flags (helix generate's): hlx_decode_opts_t fields. */
int hlx_run_flags_parse(const hlx_flag_table_t *t, const char *head, const char *tail,
                        int argc, char **argv, hlx_run_config_t *cfg, hlx_decode_opts_t *o);

/* helix generate (cli/cmd_generate.c), and what decode shares with it: the model from
 * --model FILE|NAME|DIR (a checkpoint directory sets cfg->ckpt and, without --seed, the
 * seed from its helix_synth_seed) and the prompt of --prompt-ids (ids owned by the caller,
 * cfg->batch set from its lines when --batch was not given; lines of different lengths as
 * the shortest length and the rest as tails, cfg->tail). Each returns -1 to go on or the
 * exit code after one message on stderr. hlx_run_json_prompt adds prompt_len (the
 * shortest) and prompt_lens (each request's) to a JSON report. */
int hlx_cmd_generate(int argc, char **argv);
int hlx_run_load_model(const char *cmd, const hlx_decode_opts_t *o, hlx_run_config_t *cfg,
                       hlx_model_t *m);
int hlx_run_load_prompt(const char *cmd, const hlx_decode_opts_t *o, const hlx_model_t *m,
                        hlx_run_config_t *cfg, int **ids_p);
struct json_t;
void hlx_run_json_prompt(struct json_t *o, const hlx_run_config_t *cfg);

/* hlx_engine_create failed with st and err (empty on ranks above 0 for an error every rank
 * meets): says it as "helix <cmd>: ...", and under srun or mpirun waits a second first,
 * rank 0 too, so that the launcher ends no rank before it came this far. Returns the exit
 * status. */
int hlx_engine_create_failed(const char *cmd, hlx_status_t st, const char *err);

/* The run both commands share: creates the engine, ends the rank on SIGTERM with a line
 * naming cmd, runs, has rank 0 print the report (also after a failed check) through print,
 * reports an error once and aborts the job on anything but a check verdict, frees ids.
 * Returns the exit code. */
typedef void (*hlx_run_print_fn)(void *ctx, const hlx_run_config_t *cfg, const hlx_model_t *m,
                                 const hlx_run_report_t *rep);
int hlx_run_engine(const char *cmd, const hlx_run_config_t *cfg, const hlx_model_t *m,
                   int *ids, hlx_run_print_fn print, void *ctx);

/* Checks the environment once per process: warns about HELIX_* variables that no setting
 * declares (with the nearest name) and reports each bad HELIX_* value once. Returns 0, or
 * 2 (the exit code) when a value is bad. main() calls it before every command but info. */
int  hlx_cli_check_env(void);
/* Only the unknown-name warnings (once per process). */
void hlx_cli_warn_unknown(void);

#endif
