/* `helix`: one binary, one subcommand per face of the project (decode, plan, sweep, topo,
 * bench, info). Subcommands parse their own flags with getopt_long; a failed write of
 * standard output turns success into exit 1. */
#include "hlx_build_id.h"
#include "hlx_cmd.h"
#include "hlx_config.h"
#include "hlx_file.h"
#include "hlx_json.h"
#include "hlx_log.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} hlx_commands[] = {
    { "decode", hlx_cmd_decode, "run Helix decode (KVP x TPA ranks), optionally checked" },
    { "generate", hlx_cmd_generate, "prefill a prompt of token ids, then generate (greedy or top-p)" },
    { "plan",   hlx_cmd_plan,   "model one layout on one cluster: per-phase times, TTL" },
    { "sweep",  hlx_cmd_sweep,  "sweep layouts and batches; Pareto frontiers, CSV/JSONL/SVG" },
    { "topo",   hlx_cmd_topo,   "show the machine or cluster and place KVP x TPA ranks" },
    { "bench",  hlx_cmd_bench,  "kernel benchmarks against this machine's roofline" },
    { "info",   hlx_cmd_info,   "version, backends and every setting with its source" },
    { "model",  hlx_cmd_model,  "Hugging Face checkpoints: write a synthetic one, check and size one, list the classes read" },
};

static void hlx_usage(FILE *f)
{
    size_t i;

    fprintf(f, "usage: helix COMMAND [OPTIONS]   (helix COMMAND --help for details)\n\n"
               "Helix %s: exact Helix-parallel LLM decode (KV parallelism for attention,\n"
               "the same GPUs re-used as one tensor-parallel pool for the FFN).\n\ncommands:\n",
            HLX_VERSION);
    for (i = 0; i < sizeof(hlx_commands) / sizeof(hlx_commands[0]); i++)
        fprintf(f, "  %-8s %s\n", hlx_commands[i].name, hlx_commands[i].help);
    fprintf(f, "\nmulti-rank runs: helixrun -n 4 helix decode --kvp 2 --tpa 2 ...\n"
               "                 (or mpirun / srun --mpi=pmix; see docs/usage.md)\n");
}

static int hlx_main(int argc, char **argv)
{
    size_t i;

    if (argc < 2) {
        hlx_usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        hlx_usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("helix %s (build %s)\n", HLX_VERSION, HLX_BUILD_ID);
        return 0;
    }
    for (i = 0; i < sizeof(hlx_commands) / sizeof(hlx_commands[0]); i++) {
        if (strcmp(argv[1], hlx_commands[i].name))
            continue;
        {
            char cmd[48];
            snprintf(cmd, sizeof(cmd), "helix %s", hlx_commands[i].name);
            hlx_log_set_command(cmd);
        }
        /* bad HELIX_* values end every command but info (which shows them) at once, each
         * reported once by the settings layer */
        if (strcmp(argv[1], "info") && hlx_cli_check_env() != 0)
            return 2;
        return hlx_commands[i].run(argc - 1, argv + 1);
    }
    {
        const char *names[sizeof(hlx_commands) / sizeof(hlx_commands[0])], *near;
        for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            names[i] = hlx_commands[i].name;
        near = strlen(argv[1]) >= 3 ? hlx_nearest_name(argv[1], names, i) : NULL;
        if (near != NULL) {
            fprintf(stderr, "helix: unknown command '%s' (did you mean %s?)\n", argv[1], near);
            return 2;
        }
    }
    fprintf(stderr, "helix: unknown command '%s'\n\n", argv[1]);
    hlx_usage(stderr);
    return 2;
}

/* A command's result is often its standard output (plan --json > plan.json): a write that
 * failed there (a full disk, an I/O error) ends it with 1 and says so, never with 0 over a
 * truncated file. stdio buffers it, so the error may first show at this flush. */
int main(int argc, char **argv)
{
    int rc = hlx_main(argc, argv);
    char why[128];

    if (hlx_stdout_flush(why, sizeof(why)) == HLX_OK)
        return rc;
    fprintf(stderr, "helix%s%s: writing the standard output failed: %s (the output is "
            "incomplete)\n", argc > 1 ? " " : "", argc > 1 ? argv[1] : "", why);
    return rc != 0 ? rc : 1;
}
