/* helix plan / helix sweep: the planner's command line. `plan` models one layout and
 * prints its per-phase table; `sweep` evaluates every layout and batch on one or more
 * clusters and writes Pareto frontiers (table, CSV, JSON Lines, SVG). */
#define _GNU_SOURCE
#include "hlx_bench_local.h"
#include "hlx_ckpt.h"
#include "hlx_cmd.h"
#include "hlx_file.h"
#include "hlx_parse.h"
#include "hlx_plan.h"
#include "hlx_time.h"

#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HLX_MAX_CLUSTERS 64
#define HLX_MAX_VARY     4
#define HLX_MAX_BATCHES  256

/* ---- shared flag parsing ---- */

/* An integer through the one number parser (K/M/G/T = 2^10..2^40, as every command). */
static int hlx_parse_count(const char *s, long long min, long long max, long long *v_p)
{
    int64_t v;
    char    why[160];

    if (hlx_parse_int(s, min, max, &v, why, sizeof(why)) != HLX_OK)
        return -1;
    *v_p = (long long)v;
    return 0;
}

static int hlx_flag_int(const char *cmd, const char *flag, const char *s, long long min,
                        long long max, int *out)
{
    int64_t v;
    char    why[160];

    if (hlx_parse_int(s, min, max, &v, why, sizeof(why)) != HLX_OK) {
        fprintf(stderr, "helix %s: --%s: %s\n", cmd, flag, why);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int hlx_flag_dtype(const char *cmd, const char *flag, const char *s, int *out)
{
    hlx_dtype_t t;

    if (hlx_dtype_parse(s, &t) != 0) {
        fprintf(stderr, "helix %s: --%s: unknown dtype '%s' (f32, bf16, fp8, fp4)\n", cmd, flag,
                s);
        return -1;
    }
    *out = (int)t;
    return 0;
}

/* One element of a comma list flag, with where it came from for messages. */
typedef struct {
    const char *s;    /* the element (points into the caller's copy of the value) */
    const char *flag; /* the flag that gave it, without the dashes */
    const char *list; /* the value it is part of (one per flag given) */
    int         pos;  /* its 1-based position in that value */
} hlx_list_elem_t;

/* Splits the value of --flag (buf, cut at the commas; shown after prefix in messages)
 * into elements appended to out[n..max). An empty element (a,,b  ,a  a,) is refused naming
 * the flag and the position: it is a typo, never an element to skip. Returns the new
 * count, or -1 after the message. */
static int hlx_list_split(const char *cmd, const char *flag, const char *prefix, char *buf,
                          hlx_list_elem_t *out, int max, int n)
{
    const char *s = buf;
    char *p = buf;
    int pos;

    for (pos = 1;; pos++) { /* the whole value checked first, while it reads as given */
        size_t len = strcspn(s, ",");
        if (len == 0) {
            fprintf(stderr, "helix %s: --%s '%s%s': element %d is empty (a list is A,B,... "
                            "without empty elements)\n", cmd, flag, prefix, buf, pos);
            return -1;
        }
        if (s[len] == '\0')
            break;
        s += len + 1;
    }
    for (pos = 1;; pos++) {
        size_t len = strcspn(p, ",");
        int last = p[len] == '\0';
        if (n == max) {
            fprintf(stderr, "helix %s: --%s: more than %d elements\n", cmd, flag, max);
            return -1;
        }
        p[len] = '\0';
        out[n++] = (hlx_list_elem_t){ p, flag, buf, pos };
        if (last)
            return n;
        p += len + 1;
    }
}

/* Refuses an element that repeats an earlier one (e[j] same as e[i], j > i, same(i, j)
 * true), naming both places. Returns 0, or -1 after the message. */
static int hlx_list_dup(const char *cmd, const hlx_list_elem_t *e, int n,
                        int (*same)(const hlx_list_elem_t *, const hlx_list_elem_t *),
                        const char *what)
{
    int i, j;

    for (j = 1; j < n; j++)
        for (i = 0; i < j; i++)
            if (same(&e[i], &e[j])) {
                char where[96];
                if (e[i].list == e[j].list)
                    snprintf(where, sizeof(where), "element %d", e[i].pos);
                else if (strcmp(e[i].flag, e[j].flag))
                    snprintf(where, sizeof(where), "--%s element %d", e[i].flag, e[i].pos);
                else
                    snprintf(where, sizeof(where), "element %d of an earlier --%s", e[i].pos,
                             e[i].flag);
                fprintf(stderr, "helix %s: --%s: '%s' (element %d) repeats '%s' (%s): give "
                                "each %s once\n", cmd, e[j].flag, e[j].s, e[j].pos, e[i].s,
                        where, what);
                return -1;
            }
    return 0;
}

static int hlx_list_same_str(const hlx_list_elem_t *a, const hlx_list_elem_t *b)
{
    return !strcmp(a->s, b->s);
}

/* Numbers compared by value, on elements that have already parsed: counts with their
 * suffixes (1K and 1024 are one batch), reals as strtod reads them (25 and 25.0). */
static int hlx_list_same_count(const hlx_list_elem_t *a, const hlx_list_elem_t *b)
{
    long long x, y;

    return hlx_parse_count(a->s, 0, 1ll << 40, &x) == 0 &&
           hlx_parse_count(b->s, 0, 1ll << 40, &y) == 0 && x == y;
}

static int hlx_list_same_real(const hlx_list_elem_t *a, const hlx_list_elem_t *b)
{
    return strtod(a->s, NULL) == strtod(b->s, NULL);
}

/* Strategies by strategy, not by spelling (dp and dp-ep are one), on parsed elements. */
static int hlx_list_same_strategy(const hlx_list_elem_t *a, const hlx_list_elem_t *b)
{
    hlx_strategy_t x, y;

    return hlx_strategy_parse(a->s, &x) == 0 && hlx_strategy_parse(b->s, &y) == 0 && x == y;
}

/* --set NAME=VALUE for a planner assumption (HELIX_PLAN_* without the prefix). */
static int hlx_flag_set(const char *cmd, const char *s, hlx_plan_settings_t *set)
{
    char name[64], why[256];
    const char *eq = strchr(s, '=');
    hlx_status_t st;
    size_t k;

    if (eq == NULL || (size_t)(eq - s) >= sizeof(name)) {
        fprintf(stderr, "helix %s: --set: expected NAME=VALUE, got '%s'\n", cmd, s);
        return -1;
    }
    snprintf(name, sizeof(name), "%.*s", (int)(eq - s), s);
    if (strncasecmp(name, "HELIX_", 6) == 0)
        memmove(name, name + 6, strlen(name + 6) + 1);
    /* a bad value is said here, naming the flag, not by the table's log line */
    for (k = 0; k < hlx_plan_param_table.nparams; k++)
        if (!strcasecmp(hlx_plan_param_table.params[k].name, name) &&
            hlx_param_check(&hlx_plan_param_table.params[k], eq + 1, why, sizeof(why)) !=
                HLX_OK) {
            fprintf(stderr, "helix %s: --set %s: %s\n", cmd, hlx_plan_param_table.params[k].name,
                    why);
            return -1;
        }
    st = hlx_param_set(&hlx_plan_param_table, set, NULL, name, eq + 1);
    if (st == HLX_ERR_NOT_FOUND) {
        size_t i;
        fprintf(stderr, "helix %s: --set: unknown setting '%s'; known:", cmd, name);
        for (i = 0; i < hlx_plan_param_table.nparams; i++)
            fprintf(stderr, " %s", hlx_plan_param_table.params[i].name);
        fprintf(stderr, "\n");
        return -1;
    }
    /* the hw file is found through HELIX_HW_FILE (hlx_hw_local_path): the flag sets it */
    if (st == HLX_OK && strcasecmp(name, "HW_FILE") == 0)
        setenv("HELIX_HW_FILE", eq + 1, 1);
    return st == HLX_OK ? 0 : -1;
}

/* A --model argument that names a Hugging Face checkpoint: a directory (DIR/config.json)
 * or a file named config.json (its directory). Returns the directory in dir, "" for a model
 * file or preset; -1 (after a message naming --model) for a directory without config.json
 * or a path too long. */
static int hlx_plan_ckpt_dir(const char *cmd, const char *arg, char *dir, size_t dirlen)
{
    struct stat sb;
    char cfg[4096];
    const char *base = strrchr(arg, '/');
    size_t n = strlen(arg);

    dir[0] = '\0';
    if (n + sizeof("/config.json") > sizeof(cfg) || n >= dirlen) {
        fprintf(stderr, "helix %s: --model %.60s...: path longer than %zu bytes\n", cmd, arg,
                dirlen - 1);
        return -1;
    }
    if (stat(arg, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        snprintf(cfg, sizeof(cfg), "%s/config.json", arg);
        if (stat(cfg, &sb) != 0) {
            fprintf(stderr, "helix %s: --model %s: a directory without config.json: give a "
                    "Hugging Face checkpoint directory (config.json, read without the "
                    "weights), its config.json, a model file or a preset\n", cmd, arg);
            return -1;
        }
        snprintf(dir, dirlen, "%s", arg);
        return 0;
    }
    if (!strcmp(base ? base + 1 : arg, "config.json")) {
        if (base == NULL)
            snprintf(dir, dirlen, ".");
        else
            snprintf(dir, dirlen, "%.*s", base == arg ? 1 : (int)(base - arg), arg);
    }
    return 0;
}

/* hlx_cmd.h */
int hlx_cli_load_model(const char *cmd, const char *name, int wdt, int kvdt, hlx_model_t *m)
{
    char err[1024], dir[4096];
    hlx_status_t st;

    if (hlx_plan_ckpt_dir(cmd, name, dir, sizeof(dir)) != 0)
        return 2;
    if (dir[0] != '\0') {
        hlx_hf_config_t hc;
        st = hlx_hf_config_load(dir, &hc, err, sizeof(err));
        if (st != HLX_OK) { /* err: "DIR/config.json:line:column: key: reason" */
            fprintf(stderr, "helix %s: --model %s: %s\n", cmd, name, err);
            return hlx_status_exit_code(st);
        }
        *m = hc.m;
        m->weight_dtype = hlx_hf_held_default(&hc);
    } else if ((st = hlx_model_load(name, m, err, sizeof(err))) != HLX_OK) {
        fprintf(stderr, "helix %s: --model: %s\n", cmd, err);
        return hlx_status_exit_code(st);
    }
    if (wdt >= 0)
        m->weight_dtype = (hlx_dtype_t)wdt;
    if (kvdt >= 0)
        m->kv_dtype = (hlx_dtype_t)kvdt;
    return 0;
}

/* `--hw local`: this machine from its hw file (HELIX_HW_FILE or the default path),
 * measured first, in a few seconds, when there is none. path receives the file used. */
static int hlx_load_local(const char *cmd, hlx_hw_local_t *hw, char *path, size_t pathlen)
{
    char err[1024];
    hlx_status_t st;

    if (hlx_hw_local_path(path, pathlen) != 0) {
        fprintf(stderr, "helix %s: --hw local: no place for the hw file: set HELIX_HW_FILE "
                        "or HOME\n", cmd);
        return 2;
    }
    if (access(path, F_OK) != 0) {
        /* where no file can be stored the measurement would be lost: bad input, said
         * before the seconds of measuring, as helix bench local does */
        if (hlx_hw_local_writable(path, err, sizeof(err)) != HLX_OK) {
            fprintf(stderr, "helix %s: --hw local: no hw file, and none can be stored: %s "
                            "(set HELIX_HW_FILE to a writable path)\n", cmd, err);
            return 2;
        }
        fprintf(stderr, "helix %s: --hw local: no hw file at %s: measuring this machine\n",
                cmd, path);
        if (hlx_bench_local_measure(path, 1, hw, err, sizeof(err)) != 0) {
            fprintf(stderr, "helix %s: --hw local: %s\n", cmd, err);
            return 1;
        }
        /* what the plan rests on, as helix bench local prints it (stderr: stdout is the
         * plan's, JSON with --json) */
        hlx_bench_local_print(stderr, hw, path);
        return 0;
    }
    st = hlx_hw_local_load(path, hw, err, sizeof(err));
    if (st != HLX_OK) {
        fprintf(stderr, "helix %s: --hw local: %s\n", cmd, err);
        return hlx_status_exit_code(st); /* a read that failed or timed out: 1 */
    }
    return 0;
}

static int hlx_load_cluster(const char *cmd, const char *name, hlx_cluster_t *c)
{
    char err[1024];
    hlx_status_t st;

    if (!strcmp(name, "local")) {
        hlx_hw_local_t hw;
        int rc = hlx_load_local(cmd, &hw, err, sizeof(err));
        if (rc != 0)
            return rc;
        return hlx_hw_local_cluster(&hw, c) == HLX_OK ? 0 : 1;
    }
    st = hlx_cluster_load(name, c, err, sizeof(err));

    if (st != HLX_OK) {
        fprintf(stderr, "helix %s: --hw: %s\n", cmd, err);
        return hlx_status_exit_code(st); /* a read that failed or timed out: 1 */
    }
    return 0;
}

static const char *hlx_bound_name(hlx_bound_t b)
{
    switch (b) {
    case HLX_BOUND_MEMORY:  return "memory";
    case HLX_BOUND_COMPUTE: return "compute";
    case HLX_BOUND_LINK:    return "link";
    default:                return "-";
    }
}

/* ---- helix plan ---- */

static void hlx_plan_usage(FILE *f)
{
    fprintf(f,
"usage: helix plan --model M --hw C --context S [layout flags] [--json]\n"
"\n"
"Models one decode step of one layout with the closed-form roofline of docs/planner.md:\n"
"per phase max(bytes/HBM bandwidth, flops/peak) or alpha-beta collective time, the\n"
"time to last token (TTL), tokens/s/user = 1/TTL and tokens/s/GPU = batch/(TTL x GPUs),\n"
"memory feasibility per GPU, and the paper's Appendix A per-layer t_kv and t_w.\n"
"\n"
"  --model M         model preset (tiny, llama-405b, deepseek-r1, helix-fig1,\n"
"                    qwen2.5-7b-1m, internlm2.5-7b-1m, qwen3-235b-a22b,\n"
"                    mistral-7b-v0.1, gemma-2-9b, gemma-3-27b, llama-3.2-3b), model\n"
"                    JSON file (also helix model info --json's output, whose \"model\"\n"
"                    member is read), or a Hugging Face checkpoint: its directory, as\n"
"                    helix decode --model DIR takes it, or its config.json (only\n"
"                    config.json is read; weights in the dtype decode holds them in:\n"
"                    torch_dtype's for float32 and bfloat16, bf16 for float16 and\n"
"                    fp8, integer and MXFP4 weights dequantized; model info's\n"
"                    held_dtype)\n"
"  --hw C            cluster preset (gb200-nvl72, hgx-h200, hgx-b200) or JSON file, or\n"
"                    local: this machine from its hw file (helix bench local; measured\n"
"                    now when there is none): CPU cores as GPUs, and for a helix layout\n"
"                    the runtime's own step predicted phase by phase\n"
"  --context S       tokens in the KV cache per request; K and M suffixes are 1024-based\n"
"                    (1M = 1048576). Required.\n"
"  --batch B         concurrent requests (default 1)\n"
"  --strategy S      helix (default), tp, pp, dp-ep, medha\n"
"  --kvp N           KV (sequence) parallel ranks (default 1)\n"
"  --tpa N           attention tensor parallel ranks (default 1)\n"
"  --tpf N           FFN tensor parallel ranks (default: the FFN group size / ep)\n"
"  --ep N            FFN expert parallel ranks (default 1)\n"
"  --pp N            pipeline stages (strategy pp; default 1)\n"
"  --dp N            data-parallel attention groups (strategy dp-ep; default 1)\n"
"  --hopb on|off     batch-wise overlap of attention and the KVP all-to-all (default on)\n"
"  --threads T       with --hw local: cores per rank, as helix decode --threads (each\n"
"                    attention call and GEMM split over T cores; default 1)\n"
"  --micro-batch M   with --hw local: requests per HOP-B micro-batch (1 .. --batch), as\n"
"                    helix decode --micro-batch (default 1: each request its own\n"
"                    exchange; the note and JSON micro_batch say it; no effect with\n"
"                    --hopb off or --kvp 1)\n"
"  --formula F       full (default): the whole model; paper: only the Appendix A formulas,\n"
"                    TTL = layers x (t_kv + t_w)\n"
"  --weight-dtype T  override the model's weight dtype (f32, bf16, fp8, fp4; default:\n"
"                    the model file's, or the checkpoint's held dtype)\n"
"  --kv-dtype T      override the model's KV dtype\n"
"  --set NAME=VALUE  a modelling assumption (see helix info; e.g. PLAN_HBM_RESERVE=0.1)\n"
"  --json            one JSON object instead of the table\n"
"\n"
"examples:\n"
"  helix plan --model helix-fig1 --hw gb200-nvl72 --context 1M --batch 8 --kvp 8 --tpa 8\n"
"  helix plan --model deepseek-r1 --hw gb200-nvl72 --context 1M --batch 32 --kvp 32 \\\n"
"             --tpa 1 --ep 32 --tpf 1 --json\n"
"  helix plan --model llama-405b --hw hgx-h200 --context 128K --strategy tp --tpa 8\n"
"  helix plan --model tiny --hw local --context 1M --threads 2\n"
"  helix plan --model ckpt/ --hw hgx-h200 --context 100000   (a checkpoint directory)\n"
"\n"
"Exit status: 0 feasible, 1 infeasible (the reason is printed), 2 bad input.\n");
}

/* Pieces a query head travels in for the all-to-all (docs/planner.md "Head pieces"): 1
 * but for Helix over GQA past a shard's heads; sp receives the split when it is known. */
static int hlx_plan_q_split(const hlx_plan_ctx_t *ctx, const hlx_layout_t *l,
                            hlx_helix_split_t *sp)
{
    if (l->strategy != HLX_STRAT_HELIX || ctx->m->attn == HLX_ATTN_MLA ||
        hlx_helix_split(ctx->m->q_heads, ctx->m->kv_heads, ctx->m->v_head_dim, l->kvp, l->tpa,
                        sp, NULL, 0) != HLX_OK)
        return 1;
    return sp->q_split;
}

/* Prints the per-phase table for one evaluated layout. */
static void hlx_plan_print(FILE *f, const hlx_plan_ctx_t *ctx, const hlx_layout_t *l,
                           const hlx_plan_result_t *r)
{
    const double L = ctx->m->layers;
    char lay[160], reason[512];
    double tsum = 0;
    hlx_helix_split_t sp;
    int i;

    hlx_layout_format(l, lay, sizeof(lay));
    fprintf(f, "%s on %s, context %.0f tokens: %s (%d GPUs)\n", ctx->m->name, ctx->c->name,
            ctx->context, lay, r->gpus);
    fprintf(f, "weights %s, KV %s, HBM %.0f GB/s, NVLink domain %d GPUs\n\n",
            hlx_dtype_name(ctx->m->weight_dtype), hlx_dtype_name(ctx->m->kv_dtype),
            ctx->c->gpu.hbm_gbps, ctx->domain_gpus);
    if (hlx_plan_q_split(ctx, l, &sp) > 1)
        fprintf(f, "heads: each query head in %d pieces of %d value(s) for the all-to-all (kvp "
                "%d exceeds a tpa shard's %d heads)\n\n", sp.q_split,
                ctx->m->v_head_dim / sp.q_split, l->kvp, sp.q_local_min);
    fprintf(f, "%-15s %12s %11s %12s %12s  %-7s %s\n", "phase", "time/step us", "us/layer",
            "MB/GPU/step", "GFLOP/GPU", "bound", "link");
    for (i = 0; i < HLX_PHASE_COUNT; i++) {
        const hlx_phase_t *p = &r->phase[i];
        if (p->time_s <= 0 && p->bytes <= 0)
            continue;
        tsum += p->time_s;
        fprintf(f, "%-15s %12.2f %11.3f %12.3f %12.3f  %-7s %s\n", hlx_phase_name((hlx_phase_id_t)i),
                p->time_s * 1e6,
                i == HLX_PHASE_HEAD || i == HLX_PHASE_EMBED || i == HLX_PHASE_PP
                    ? 0.0 : p->time_s * 1e6 / L,
                p->bytes / 1e6, p->flops / 1e9, hlx_bound_name(p->bound),
                p->bound == HLX_BOUND_LINK ? hlx_link_name(p->link) : "");
    }
    fprintf(f, "%-15s %12.2f\n", "sum of phases", tsum * 1e6);
    if (l->hopb && l->kvp > 1)
        fprintf(f, "HOP-B hides %.2f us per step of the combine behind attention\n",
                r->hopb_saved_s * 1e6);
    fprintf(f, "\nTTL %.4f ms   tokens/s/user %.2f   tokens/s/GPU %.3f\n", r->ttl_s * 1e3,
            r->tok_s_user, r->tok_s_gpu);
    fprintf(f, "paper Appendix A, per layer: t_kv %.3f us  t_w %.3f us\n", r->t_kv_s * 1e6,
            r->t_w_s * 1e6);
    fprintf(f, "memory per GPU: weights %.2f GiB + KV %.2f GiB + activations %.2f GiB = "
               "%.2f of %.2f GiB usable\n",
            r->mem_weights / 1073741824.0, r->mem_kv / 1073741824.0, r->mem_act / 1073741824.0,
            (r->mem_weights + r->mem_kv + r->mem_act) / 1073741824.0,
            r->mem_usable / 1073741824.0);
    hlx_plan_reason(r, reason, sizeof(reason));
    fprintf(f, "feasible: %s%s%s\n", r->feasible ? "yes" : "no", r->feasible ? "" : ": ",
            reason);
}

static int hlx_plan_print_json(FILE *f, const hlx_plan_ctx_t *ctx, const hlx_layout_t *l,
                               const hlx_plan_result_t *r, int paper, const char *local_path,
                               const char *local_note, int local_mb)
{
    char reason[512];
    json_t *o, *ph;
    hlx_helix_split_t sp;
    int i, rc;

    hlx_plan_reason(r, reason, sizeof(reason));
    o = json_pack("{s:s, s:s, s:f, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:b, s:s}",
                  "model", ctx->m->name, "cluster", ctx->c->name, "context", ctx->context,
                  "strategy", hlx_strategy_name(l->strategy), "gpus", r->gpus, "kvp", l->kvp,
                  "tpa", l->tpa, "dp", l->dp, "tpf", l->tpf, "ep", l->ep, "pp", l->pp,
                  "batch", l->batch, "hopb", l->hopb, "formula", paper ? "paper" : "full");
    if (o == NULL)
        return -1;
    /* 1: whole heads on the wire; more: pieces of v_head_dim / q_split values */
    json_object_set_new(o, "q_split", json_integer(hlx_plan_q_split(ctx, l, &sp)));
    /* the bytes per weight and KV element planned with (a checkpoint's: its held dtype) */
    json_object_set_new(o, "weight_dtype", json_string(hlx_dtype_name(ctx->m->weight_dtype)));
    json_object_set_new(o, "kv_dtype", json_string(hlx_dtype_name(ctx->m->kv_dtype)));
    json_object_set_new(o, "t_kv_us", json_real(r->t_kv_s * 1e6));
    json_object_set_new(o, "t_w_us", json_real(r->t_w_s * 1e6));
    json_object_set_new(o, "ttl_ms", json_real(r->ttl_s * 1e3));
    json_object_set_new(o, "tokens_per_s_user", json_real(r->tok_s_user));
    json_object_set_new(o, "tokens_per_s_gpu", json_real(r->tok_s_gpu));
    json_object_set_new(o, "feasible", json_boolean(r->feasible));
    json_object_set_new(o, "reason", json_string(reason));
    json_object_set_new(o, "mem_weights_gib", json_real(r->mem_weights / 1073741824.0));
    json_object_set_new(o, "mem_kv_gib", json_real(r->mem_kv / 1073741824.0));
    json_object_set_new(o, "mem_act_gib", json_real(r->mem_act / 1073741824.0));
    json_object_set_new(o, "mem_usable_gib", json_real(r->mem_usable / 1073741824.0));
    json_object_set_new(o, "hopb_saved_us", json_real(r->hopb_saved_s * 1e6));
    if (local_path) {
        json_object_set_new(o, "hw_file", json_string(local_path));
        json_object_set_new(o, "predictor", json_string(strncmp(local_note, "local", 5) ? "roofline" : "local"));
        json_object_set_new(o, "predictor_note", json_string(local_note));
        if (local_mb > 0) /* the HOP-B micro-batch the local predictor modelled */
            json_object_set_new(o, "micro_batch", json_integer(local_mb));
    }
    ph = json_object();
    for (i = 0; i < HLX_PHASE_COUNT && !paper; i++) {
        const hlx_phase_t *p = &r->phase[i];
        json_object_set_new(ph, hlx_phase_name((hlx_phase_id_t)i),
                            json_pack("{s:f, s:f, s:f, s:s, s:s}", "time_us", p->time_s * 1e6,
                                      "bytes", p->bytes, "flops", p->flops, "bound",
                                      hlx_bound_name(p->bound), "link",
                                      p->bound == HLX_BOUND_LINK ? hlx_link_name(p->link)
                                                                 : ""));
    }
    json_object_set_new(o, "phases", ph);
    rc = json_dumpf(o, f, JSON_INDENT(2) | JSON_REAL_PRECISION(8) | JSON_PRESERVE_ORDER);
    fputc('\n', f);
    json_decref(o);
    return rc;
}

/* `plan --hw local` of a Helix layout the runtime can run: the phase times become the
 * local predictor's (the runtime on this machine: its kernels' measured rates, cache or
 * DRAM, ranks sharing cores, the measured collectives); bytes, flops and memory stay the
 * roofline's. Other layouts keep the roofline over the machine as a cluster; note says
 * which was used. Returns the HOP-B micro-batch size the local predictor modelled, 0 when
 * it modelled no HOP-B, -1 when the roofline was kept. */
static int hlx_plan_local(const hlx_model_t *m, const hlx_layout_t *l, double context,
                           int threads, int micro_batch, hlx_plan_result_t *r, char *path,
                           size_t pathlen, char *note, size_t notelen)
{
    hlx_hw_local_t hw;
    hlx_local_cfg_t lc;
    hlx_local_pred_t p;
    char err[512], mbs[64];
    int i, mb;

    if (hlx_load_local("plan", &hw, path, pathlen) != 0) {
        snprintf(note, notelen, "roofline (the hw file could not be read)");
        return -1;
    }
    /* the runtime's MoE split: N = KVP x TPA = EP x TPF */
    if (l->strategy != HLX_STRAT_HELIX || l->pp != 1 || l->dp != 1 ||
        (l->ep != 1 && (int64_t)l->tpf * l->ep != (int64_t)l->kvp * l->tpa)) {
        snprintf(note, notelen, "roofline over this machine as a cluster (the runtime runs "
                                "helix layouts only)");
        return -1;
    }
    lc = (hlx_local_cfg_t){ .kvp = l->kvp, .tpa = l->tpa, .batch = l->batch, .steps = 0,
                            .kv_block = 16, .hopb = l->hopb, .context = (int64_t)context,
                            .w_dtype = m->weight_dtype, .kv_dtype = m->kv_dtype,
                            .ep = l->ep, .threads = threads, .micro_batch = micro_batch };
    if ((m->weight_dtype != HLX_DTYPE_F32 && m->weight_dtype != HLX_DTYPE_BF16) ||
        (m->kv_dtype != HLX_DTYPE_F32 && m->kv_dtype != HLX_DTYPE_BF16)) {
        snprintf(note, notelen, "roofline over this machine as a cluster (the runtime runs "
                                "f32 and bf16 weights and KV only)");
        return -1;
    }
    if (hlx_local_predict(&hw, m, &lc, &p, err, sizeof(err)) != HLX_OK) {
        snprintf(note, notelen, "roofline over this machine as a cluster (%s)", err);
        return -1;
    }
    for (i = 0; i < HLX_PHASE_COUNT; i++) {
        r->phase[i].time_s = p.phase_s[i];
        if (r->phase[i].bound == HLX_BOUND_LINK) /* every rank of this host: shared memory */
            r->phase[i].link = HLX_LINK_SHM;
    }
    if (!r->feasible && r->why == HLX_FEAS_GPUS) { /* more ranks than cores share them */
        r->feasible = 1;
        r->why = HLX_FEAS_OK;
    }
    r->ttl_s      = p.step_s;
    r->tok_s_user = 1.0 / p.step_s;
    r->tok_s_gpu  = l->batch / (p.step_s * r->gpus);
    mb = l->hopb && l->kvp > 1 && l->batch > 1 ? (micro_batch > 0 ? micro_batch : 1) : 0;
    mbs[0] = '\0';
    if (mb > 0)
        snprintf(mbs, sizeof(mbs), "; HOP-B micro-batches of %d request%s", mb,
                 mb > 1 ? "s" : "");
    snprintf(note, notelen, "local: the runtime's step on this machine (%s, %d cores, measured "
             "%s); %d thread%s per rank; %.0f MiB read per step, %.0f%% of it from DRAM, "
             "%.2f cores asked per core%s", hw.cpu, hw.cores, hw.measured, threads,
             threads > 1 ? "s" : "", p.ws_bytes / 1048576.0, p.dram_frac * 100.0, p.share, mbs);
    return mb;
}

enum {
    HLX_OPT_MODEL = 256, HLX_OPT_HW, HLX_OPT_BATCH, HLX_OPT_CONTEXT, HLX_OPT_STRATEGY,
    HLX_OPT_KVP, HLX_OPT_TPA, HLX_OPT_TPF, HLX_OPT_EP, HLX_OPT_PP, HLX_OPT_DP, HLX_OPT_HOPB,
    HLX_OPT_FORMULA, HLX_OPT_WDT, HLX_OPT_KVDT, HLX_OPT_SET, HLX_OPT_JSON, HLX_OPT_GPUS,
    HLX_OPT_STRATEGIES, HLX_OPT_CSV, HLX_OPT_JSONL, HLX_OPT_SVG, HLX_OPT_SWEEP_HW,
    HLX_OPT_BENCH, HLX_OPT_QUIET, HLX_OPT_VARY, HLX_OPT_HELP, HLX_OPT_THREADS, HLX_OPT_MICRO_BATCH,
};

int hlx_cmd_plan(int argc, char **argv)
{
    static const struct option opts[] = {
        { "model", required_argument, NULL, HLX_OPT_MODEL },
        { "hw", required_argument, NULL, HLX_OPT_HW },
        { "batch", required_argument, NULL, HLX_OPT_BATCH },
        { "context", required_argument, NULL, HLX_OPT_CONTEXT },
        { "strategy", required_argument, NULL, HLX_OPT_STRATEGY },
        { "kvp", required_argument, NULL, HLX_OPT_KVP },
        { "tpa", required_argument, NULL, HLX_OPT_TPA },
        { "tpf", required_argument, NULL, HLX_OPT_TPF },
        { "ep", required_argument, NULL, HLX_OPT_EP },
        { "pp", required_argument, NULL, HLX_OPT_PP },
        { "dp", required_argument, NULL, HLX_OPT_DP },
        { "hopb", required_argument, NULL, HLX_OPT_HOPB },
        { "threads", required_argument, NULL, HLX_OPT_THREADS },
        { "micro-batch", required_argument, NULL, HLX_OPT_MICRO_BATCH },
        { "formula", required_argument, NULL, HLX_OPT_FORMULA },
        { "weight-dtype", required_argument, NULL, HLX_OPT_WDT },
        { "kv-dtype", required_argument, NULL, HLX_OPT_KVDT },
        { "set", required_argument, NULL, HLX_OPT_SET },
        { "json", no_argument, NULL, HLX_OPT_JSON },
        { "help", no_argument, NULL, HLX_OPT_HELP },
        { NULL, 0, NULL, 0 },
    };
    const char *model = NULL, *hw = NULL;
    hlx_layout_t l = { HLX_STRAT_HELIX, 1, 1, 1, 0, 1, 1, 1, 1 };
    hlx_plan_settings_t set;
    hlx_plan_ctx_t ctx;
    hlx_plan_result_t r;
    hlx_model_t m;
    hlx_cluster_t c;
    long long context = -1, v;
    int opt, json = 0, paper = 0, wdt = -1, kvdt = -1, rc, threads = 1, micro_batch = 0;
    int local_mb = -1; /* hlx_plan_local's answer; -1: the roofline */
    char err[512], local_path[4096] = "", local_note[1200] = "";

    if (hlx_param_load(&hlx_plan_param_table, &set, NULL) != HLX_OK)
        return 2;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case HLX_OPT_MODEL: model = optarg; break;
        case HLX_OPT_HW: hw = optarg; break;
        case HLX_OPT_BATCH: if (hlx_flag_int("plan", "batch", optarg, 1, 1 << 24, &l.batch)) return 2; break;
        case HLX_OPT_CONTEXT:
            if (hlx_parse_count(optarg, 1, 1ll << 40, &v) != 0) {
                fprintf(stderr, "helix plan: --context: '%s' is not a token count (e.g. 131072, "
                                "128K, 1M)\n", optarg);
                return 2;
            }
            context = v;
            break;
        case HLX_OPT_STRATEGY:
            if (hlx_strategy_parse(optarg, &l.strategy) != 0) {
                fprintf(stderr, "helix plan: --strategy: unknown '%s' (tp, pp, dp-ep, medha, "
                                "helix)\n", optarg);
                return 2;
            }
            break;
        case HLX_OPT_KVP: if (hlx_flag_int("plan", "kvp", optarg, 1, 1 << 20, &l.kvp)) return 2; break;
        case HLX_OPT_TPA: if (hlx_flag_int("plan", "tpa", optarg, 1, 1 << 20, &l.tpa)) return 2; break;
        case HLX_OPT_TPF: if (hlx_flag_int("plan", "tpf", optarg, 1, 1 << 20, &l.tpf)) return 2; break;
        case HLX_OPT_EP: if (hlx_flag_int("plan", "ep", optarg, 1, 1 << 20, &l.ep)) return 2; break;
        case HLX_OPT_PP: if (hlx_flag_int("plan", "pp", optarg, 1, 1 << 20, &l.pp)) return 2; break;
        case HLX_OPT_DP: if (hlx_flag_int("plan", "dp", optarg, 1, 1 << 20, &l.dp)) return 2; break;
        case HLX_OPT_HOPB:
            if (!strcmp(optarg, "on")) l.hopb = 1;
            else if (!strcmp(optarg, "off")) l.hopb = 0;
            else {
                fprintf(stderr, "helix plan: --hopb: expected on or off, got '%s'\n", optarg);
                return 2;
            }
            break;
        case HLX_OPT_THREADS:
            if (hlx_flag_int("plan", "threads", optarg, 1, 256, &threads))
                return 2;
            break;
        case HLX_OPT_MICRO_BATCH:
            if (hlx_flag_int("plan", "micro-batch", optarg, 1, 65536, &micro_batch))
                return 2;
            break;
        case HLX_OPT_FORMULA:
            if (!strcmp(optarg, "paper")) paper = 1;
            else if (!strcmp(optarg, "full")) paper = 0;
            else {
                fprintf(stderr, "helix plan: --formula: expected full or paper, got '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case HLX_OPT_WDT: if (hlx_flag_dtype("plan", "weight-dtype", optarg, &wdt)) return 2; break;
        case HLX_OPT_KVDT: if (hlx_flag_dtype("plan", "kv-dtype", optarg, &kvdt)) return 2; break;
        case HLX_OPT_SET: if (hlx_flag_set("plan", optarg, &set)) return 2; break;
        case HLX_OPT_JSON: json = 1; break;
        case 'h':
        case HLX_OPT_HELP: hlx_plan_usage(stdout); return 0;
        default:
            fprintf(stderr, "helix plan: unknown or incomplete option '%s' (see helix plan "
                            "--help)\n", argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "helix plan: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (model == NULL || hw == NULL || context < 0) {
        fprintf(stderr, "helix plan: --model, --hw and --context are required (see --help)\n");
        return 2;
    }
    if (threads > 1 && (strcmp(hw, "local") || paper)) {
        fprintf(stderr, "helix plan: --threads %d: cores per rank of the runtime on this "
                        "machine: only with --hw local (and --formula full)\n", threads);
        return 2;
    }
    if (micro_batch > 0 && (strcmp(hw, "local") || paper)) {
        fprintf(stderr, "helix plan: --micro-batch %d: requests per HOP-B micro-batch of the "
                        "runtime on this machine: only with --hw local (and --formula full)\n",
                micro_batch);
        return 2;
    }
    if (micro_batch > l.batch) {
        fprintf(stderr, "helix plan: --micro-batch %d: expected 1 .. --batch %d\n", micro_batch,
                l.batch);
        return 2;
    }
    /* a warning, not a refusal, as decode's: scripts run one command line both ways */
    if (micro_batch > 0 && (!l.hopb || l.kvp < 2)) {
        fprintf(stderr, "helix plan: --micro-batch %d has no effect %s\n", micro_batch,
                !l.hopb ? "with --hopb off (the whole batch runs in lockstep)"
                        : "with --kvp 1 (no all-to-all to overlap)");
        micro_batch = 0;
    }
    if ((long long)l.kvp * l.tpa > HLX_PLAN_MAX_GPUS) {
        fprintf(stderr, "helix plan: --kvp x --tpa = %d x %d = %lld exceeds %d GPUs\n", l.kvp,
                l.tpa, (long long)l.kvp * l.tpa, HLX_PLAN_MAX_GPUS);
        return 2;
    }
    if (l.tpf == 0) { /* the FFN group: all N GPUs for helix and dp-ep, the TPA group else */
        int n = l.strategy == HLX_STRAT_HELIX ? l.kvp * l.tpa
              : l.strategy == HLX_STRAT_DPEP ? l.dp : l.tpa;
        l.tpf = n % l.ep == 0 ? n / l.ep : 1;
    }
    if ((rc = hlx_cli_load_model("plan", model, wdt, kvdt, &m)) != 0)
        return rc;
    if ((rc = hlx_load_cluster("plan", hw, &c)) != 0)
        return rc;
    if (hlx_plan_ctx_init(&ctx, &m, &c, (double)context, &set) != HLX_OK) {
        fprintf(stderr, "helix plan: cannot model %s on %s\n", m.name, c.name);
        hlx_cluster_free(&c);
        return 2;
    }
    if (hlx_plan_check(&ctx, &l, err, sizeof(err)) != HLX_OK) {
        fprintf(stderr, "helix plan: layout: %s\n", err);
        hlx_cluster_free(&c);
        return 2;
    }
    hlx_plan_eval(&ctx, &l, &r);
    if (!strcmp(hw, "local") && !paper)
        local_mb = hlx_plan_local(&m, &l, (double)context, threads, micro_batch, &r, local_path,
                                  sizeof(local_path), local_note, sizeof(local_note));
    if (paper) { /* the Appendix A formulas alone: no compute, communication or MoE */
        r.ttl_s      = m.layers * (r.t_kv_s + r.t_w_s);
        r.tok_s_user = 1.0 / r.ttl_s;
        r.tok_s_gpu  = l.batch / (r.ttl_s * r.gpus);
    }
    if (micro_batch > 0 && local_mb < 0)
        fprintf(stderr, "helix plan: --micro-batch %d is not modelled by the %s: its HOP-B "
                        "overlaps one request at a time\n", micro_batch, local_note);
    if (json) {
        hlx_plan_print_json(stdout, &ctx, &l, &r, paper, local_path[0] ? local_path : NULL,
                            local_note, local_mb);
    } else if (paper) {
        printf("%s on %s, context %lld, batch %d, kvp %d, tpa %d, tpf %d (paper Appendix A)\n"
               "t_kv %.4f us/layer  t_w %.4f us/layer  TTL = %d x (t_kv + t_w) = %.4f ms\n"
               "tokens/s/user %.2f  tokens/s/GPU %.3f\n",
               m.name, c.name, context, l.batch, l.kvp, l.tpa, l.tpf, r.t_kv_s * 1e6,
               r.t_w_s * 1e6, m.layers, r.ttl_s * 1e3, r.tok_s_user, r.tok_s_gpu);
    } else {
        hlx_plan_print(stdout, &ctx, &l, &r);
        if (local_note[0])
            printf("predictor: %s\n", local_note);
    }
    hlx_cluster_free(&c);
    return r.feasible || paper ? 0 : 1;
}

/* ---- helix sweep ---- */

static void hlx_sweep_usage(FILE *f)
{
    fprintf(f,
"usage: helix sweep --model M --hw C[,C2,...] --context S [options]\n"
"\n"
"Evaluates every layout of the selected strategies for every GPU count and batch,\n"
"marks the Pareto frontier (tokens/s/GPU vs tokens/s/user) of each strategy, and\n"
"compares Helix with the best baseline: its best interactivity, and its throughput at\n"
"matched interactivity. Several clusters (a topology sweep) are evaluated one by one.\n"
"\n"
"  --model M          model preset, JSON file (or helix model info --json's output),\n"
"                     or a Hugging Face checkpoint directory or its config.json (as\n"
"                     helix plan --model)\n"
"  --hw C[,C...]      cluster presets or JSON files (several: a topology sweep)\n"
"  --sweep-hw C,...   same as a list in --hw (may be repeated)\n"
"  --vary KEY=V1,V2   derived clusters: each --hw cluster with KEY set to each value\n"
"                     (repeat for a product; at most 64 clusters). KEY: rdma_gbps,\n"
"                     rdma_us, nvlink_gbps, nvlink_us, domain_gpus (regroup nodes into\n"
"                     NVLink domains of that many GPUs), hbm_gbps, hbm_gib\n"
"  --context S        tokens per request in the KV cache (1M = 1048576). Required.\n"
"  --gpus A-B         GPU counts per model replica (default 1-64; one number: exactly N)\n"
"  --batch LIST       batch sizes: '1,2,8' or a range 'A-B' stepping x2 and x1.5\n"
"                     (1,2,3,4,6,8,12,...); default 1-4096\n"
"  --strategies LIST  tp,pp,dp-ep,medha,helix (default: all)\n"
"  --hopb on|off|both HOP-B setting for layouts with kvp > 1 (default both)\n"
"  --csv F            every point as CSV\n"
"  --jsonl F          every point as JSON Lines (strategy, gpus, kvp, tpa, dp, tpf, ep, pp,\n"
"                     batch, hopb, ttl_ms, tokens_per_s_user, tokens_per_s_gpu, feasible,\n"
"                     pareto, reason, cluster)\n"
"  --svg F            log-log plot of the frontiers, one panel per cluster\n"
"  --weight-dtype T, --kv-dtype T   override the model's dtypes\n"
"  --set NAME=VALUE   a modelling assumption (PLAN_HBM_RESERVE, PLAN_ACT_BYTES, ...)\n"
"  --bench            measure evaluation speed (configurations/s) and exit\n"
"  --quiet            print only the summary lines\n"
"\n"
"examples:\n"
"  helix sweep --model deepseek-r1 --hw gb200-nvl72 --context 1M --svg r1.svg\n"
"  helix sweep --model llama-405b --hw gb200-nvl72,hgx-b200,hgx-h200 --context 1M \\\n"
"              --jsonl points.jsonl --svg topo.svg\n"
"  helix sweep --model deepseek-r1 --hw gb200-nvl72 --context 1M \\\n"
"              --vary domain_gpus=8,72 --vary rdma_gbps=25,100 --svg nvl.svg\n"
"\n"
"A list takes no empty element and nothing twice (exit 2 naming the flag and where).\n"
"Progress goes to stderr when it is a terminal. Exit status: 0 ok, 2 bad input.\n");
}

/* --batch: a range 'A-B' (powers of two and the 1.5x points between them) or a list
 * '1,2,8' (no empty element, no batch twice). Returns the count, or -1 after the message. */
static int hlx_parse_batches(const char *s, int *out, int max)
{
    int n = 0, i;
    long long a, b;
    const char *dash = strchr(s, '-');
    char buf[1024];
    hlx_list_elem_t e[HLX_MAX_BATCHES];

    if (dash != NULL && strchr(s, ',') == NULL) {
        char lo[32];
        long long x;
        if ((size_t)(dash - s) >= sizeof(lo))
            goto bad;
        snprintf(lo, sizeof(lo), "%.*s", (int)(dash - s), s);
        if (hlx_parse_count(lo, 1, 1 << 24, &a) || hlx_parse_count(dash + 1, 1, 1 << 24, &b) ||
            b < a)
            goto bad;
        /* 1, 2, 3, 4, 6, 8, 12, 16, ...: powers of two and the 1.5x points between them */
        for (x = 1; x <= b && n < max; x *= 2) {
            if (x >= a)
                out[n++] = (int)x;
            if (x * 3 / 2 > x && x * 3 / 2 <= b && x * 3 / 2 >= a && n < max)
                out[n++] = (int)(x * 3 / 2);
        }
        return n;
    }
    if (strlen(s) >= sizeof(buf))
        goto bad;
    strcpy(buf, s);
    if (max > HLX_MAX_BATCHES)
        max = HLX_MAX_BATCHES;
    n = hlx_list_split("sweep", "batch", "", buf, e, max, 0);
    if (n < 0)
        return -1;
    for (i = 0; i < n; i++) {
        if (hlx_parse_count(e[i].s, 1, 1 << 24, &a))
            goto bad;
        out[i] = (int)a;
    }
    if (hlx_list_dup("sweep", e, n, hlx_list_same_count, "batch size") != 0)
        return -1;
    return n;
bad:
    fprintf(stderr, "helix sweep: --batch: expected a list '1,2,8' or a range '1-4096', got "
                    "'%s'\n", s);
    return -1;
}

static void hlx_sweep_report(FILE *f, const hlx_sweep_t *sw, int ci, const char *cluster,
                             int quiet)
{
    hlx_sweep_summary_t s;
    char lay[160];
    int st;

    if (!quiet) {
        fprintf(f, "\n== %s ==\n", cluster);
        fprintf(f, "%-7s %8s %9s %9s  %-13s %-44s %-13s %s\n", "strategy", "points",
                "feasible", "frontier", "best tok/s/u", "layout", "best tok/s/GPU", "layout");
        for (st = 0; st < HLX_STRAT_COUNT; st++) {
            size_t i, n = 0, nf = 0, np = 0, bu = (size_t)-1, bg = (size_t)-1;
            char lay2[160] = "-";
            for (i = 0; i < sw->n; i++) {
                const hlx_sweep_point_t *p = &sw->pts[i];
                if (p->cluster != ci || p->l.strategy != (hlx_strategy_t)st)
                    continue;
                n++;
                if (!p->feasible)
                    continue;
                nf++;
                np += p->pareto;
                if (bu == (size_t)-1 || p->tok_s_user > sw->pts[bu].tok_s_user)
                    bu = i;
                if (bg == (size_t)-1 || p->tok_s_gpu > sw->pts[bg].tok_s_gpu)
                    bg = i;
            }
            if (n == 0)
                continue;
            snprintf(lay, sizeof(lay), "-");
            if (bu != (size_t)-1) {
                hlx_layout_format(&sw->pts[bu].l, lay, sizeof(lay));
                hlx_layout_format(&sw->pts[bg].l, lay2, sizeof(lay2));
            }
            fprintf(f, "%-7s %8zu %9zu %9zu  %-13.4g %-44s %-13.4g %s\n",
                    hlx_strategy_name((hlx_strategy_t)st), n, nf, np,
                    bu != (size_t)-1 ? sw->pts[bu].tok_s_user : 0.0, lay,
                    bg != (size_t)-1 ? sw->pts[bg].tok_s_gpu : 0.0, lay2);
        }
    }
    hlx_sweep_summarize(sw, ci, &s);
    if (!s.have_helix || !s.have_base) {
        fprintf(f, "%s: no comparison (helix points: %s, baseline points: %s)\n", cluster,
                s.have_helix ? "yes" : "none feasible", s.have_base ? "yes" : "none feasible");
        return;
    }
    hlx_layout_format(&sw->pts[s.helix_best_idx].l, lay, sizeof(lay));
    fprintf(f, "%s: best interactivity: helix %.4g tok/s/user (%s) vs best baseline %.4g "
               "(%s) = %.2fx\n",
            cluster, s.helix_best_user, lay, s.base_best_user,
            hlx_strategy_name(s.base_best_user_strat), s.helix_best_user / s.base_best_user);
    fprintf(f, "%s: throughput at matched interactivity: up to %.2fx tok/s/GPU (at %.4g "
               "tok/s/user); at the baseline's best interactivity: %.2fx (%.4g vs %.4g)\n",
            cluster, s.tput_ratio_max, s.tput_ratio_at_user, s.tput_ratio_at_base_best,
            s.helix_tput_at_base_best, s.base_best_user_tput);
    fprintf(f, "%s: best throughput: helix %.4g tok/s/GPU vs best baseline %.4g = %.2fx\n",
            cluster, s.helix_best_gpu, s.base_best_gpu, s.helix_best_gpu / s.base_best_gpu);
    if (s.helix_nohopb_best_user > 0)
        fprintf(f, "%s: HOP-B off: helix best interactivity %.4g tok/s/user (%.1f%% lower)\n",
                cluster, s.helix_nohopb_best_user,
                100.0 * (1.0 - s.helix_nohopb_best_user / s.helix_best_user));
    if (s.hopb_gain_max > 0) {
        hlx_layout_format(&sw->pts[s.hopb_gain_idx].l, lay, sizeof(lay));
        fprintf(f, "%s: HOP-B: up to %.1f%% more tok/s/user than the same layout and batch "
                   "without it (%s)\n", cluster, 100.0 * s.hopb_gain_max, lay);
    }
}

/* Writes one output file; returns 0 or 1 after printing the error. */
/* Writes one output through its temporary file (hlx_out_begin before the sweep): renamed
 * into place when complete, removed otherwise, so an old file survives a failed run. */
static int hlx_sweep_write(const char *what, hlx_out_t *out, const hlx_sweep_t *sw,
                           const char *const *names, int nc, const char *title,
                           const hlx_model_t *m)
{
    char err[4200];
    int rc;

    if (!strcmp(what, "csv"))
        rc = hlx_sweep_write_csv(out->f, sw, names, m);
    else if (!strcmp(what, "jsonl"))
        rc = hlx_sweep_write_jsonl(out->f, sw, names, m);
    else
        rc = hlx_sweep_write_svg(out->f, sw, names, nc, title);
    if (rc != 0) {
        int e = errno;
        hlx_out_end(out, 0, err, sizeof(err));
        fprintf(stderr, "helix sweep: --%s %s: writing failed: %s (nothing replaced)\n", what,
                out->path, strerror(e));
        return 1;
    }
    if (hlx_out_end(out, 1, err, sizeof(err)) != HLX_OK) {
        fprintf(stderr, "helix sweep: --%s %s\n", what, err);
        return 1;
    }
    return 0;
}

typedef struct {
    char   key[32];
    double v[HLX_MAX_CLUSTERS];
    int    n;
} hlx_vary_t;

/* Replaces the clusters by every combination of the --vary values. Returns an exit code;
 * on failure cl holds *n_p clusters to free. */
static int hlx_expand_variants(hlx_cluster_t *cl, int *n_p, const hlx_vary_t *vary, int nvary)
{
    hlx_cluster_t next[HLX_MAX_CLUSTERS];
    char err[256];
    int i, j, k, n = *n_p, m;

    for (k = 0; k < nvary; k++) {
        if (n * vary[k].n > HLX_MAX_CLUSTERS) {
            fprintf(stderr, "helix sweep: --vary: %d clusters, at most %d\n", n * vary[k].n,
                    HLX_MAX_CLUSTERS);
            return 2;
        }
        m = 0;
        for (i = 0; i < n; i++) {
            for (j = 0; j < vary[k].n; j++) {
                hlx_status_t st = hlx_cluster_variant(&cl[i], vary[k].key, vary[k].v[j],
                                                      &next[m], err, sizeof(err));
                if (st != HLX_OK) {
                    fprintf(stderr, "helix sweep: --vary: %s\n",
                            st == HLX_ERR_NOMEM ? "out of memory" : err);
                    while (m-- > 0)
                        hlx_cluster_free(&next[m]);
                    return st == HLX_ERR_NOMEM ? 1 : 2;
                }
                m++;
            }
        }
        for (i = 0; i < n; i++)
            hlx_cluster_free(&cl[i]);
        memcpy(cl, next, (size_t)m * sizeof(*cl));
        n = m;
        *n_p = n;
    }
    return 0;
}

/* Where an output put in place by rename lands: the real folder and the last name (into
 * buf); 0 when path is a device or pipe written directly (several outputs may share
 * /dev/stdout: each is written whole in turn), or its folder cannot be resolved (its
 * hlx_out_begin says why). */
static int hlx_out_target(const char *path, char *buf, size_t len)
{
    char dir[PATH_MAX], real[PATH_MAX];
    const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
    struct stat sb;

    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return 0;
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else
        snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
    if (realpath(dir, real) == NULL)
        return 0;
    return snprintf(buf, len, "%s/%s", real, name) < (int)len;
}

/* Measures evaluations per second: the plain evaluation loop and the whole sweep. */
static void hlx_sweep_bench(const hlx_plan_ctx_t *ctx, const hlx_sweep_opts_t *o)
{
    hlx_layout_t l = { HLX_STRAT_HELIX, 8, 8, 1, 64, 1, 1, 16, 1 };
    hlx_plan_result_t r;
    double t0, t, sink = 0;
    size_t n = 0, total = 0;
    hlx_sweep_t sw = { 0 };

    if (hlx_plan_check(ctx, &l, NULL, 0) != HLX_OK)
        l.kvp = l.tpa = l.tpf = 1;
    t0 = hlx_now_s();
    do {
        int i;
        for (i = 0; i < 100000; i++) {
            l.batch = 1 + (i & 255);
            l.hopb  = i & 1;
            hlx_plan_eval(ctx, &l, &r);
            sink += r.ttl_s;
        }
        n += 100000;
        t = hlx_now_s() - t0;
    } while (t < 0.5);
    printf("plan_eval: %zu configurations in %.3f s = %.3g configurations/s (one core)%s\n", n,
           t, n / t, sink < 0 ? "!" : "");
    t0 = hlx_now_s();
    do {
        hlx_sweep_run(ctx, o, 0, &sw);
        total += sw.evaluated;
        sw.n = 0;
        sw.evaluated = 0;
        t = hlx_now_s() - t0;
    } while (t < 0.5);
    printf("sweep: %zu configurations in %.3f s = %.3g configurations/s (one core, with "
           "enumeration, checks, storage and Pareto marking)\n", total, t, total / t);
    hlx_sweep_free(&sw);
}

int hlx_cmd_sweep(int argc, char **argv)
{
    static const struct option opts[] = {
        { "model", required_argument, NULL, HLX_OPT_MODEL },
        { "hw", required_argument, NULL, HLX_OPT_HW },
        { "sweep-hw", required_argument, NULL, HLX_OPT_SWEEP_HW },
        { "context", required_argument, NULL, HLX_OPT_CONTEXT },
        { "gpus", required_argument, NULL, HLX_OPT_GPUS },
        { "batch", required_argument, NULL, HLX_OPT_BATCH },
        { "strategies", required_argument, NULL, HLX_OPT_STRATEGIES },
        { "hopb", required_argument, NULL, HLX_OPT_HOPB },
        { "csv", required_argument, NULL, HLX_OPT_CSV },
        { "jsonl", required_argument, NULL, HLX_OPT_JSONL },
        { "svg", required_argument, NULL, HLX_OPT_SVG },
        { "weight-dtype", required_argument, NULL, HLX_OPT_WDT },
        { "kv-dtype", required_argument, NULL, HLX_OPT_KVDT },
        { "set", required_argument, NULL, HLX_OPT_SET },
        { "bench", no_argument, NULL, HLX_OPT_BENCH },
        { "quiet", no_argument, NULL, HLX_OPT_QUIET },
        { "vary", required_argument, NULL, HLX_OPT_VARY },
        { "help", no_argument, NULL, HLX_OPT_HELP },
        { NULL, 0, NULL, 0 },
    };
    const char *model = NULL, *csv = NULL, *jsonl = NULL, *svg = NULL;
    hlx_list_elem_t hws[HLX_MAX_CLUSTERS];
    hlx_out_t outs[3] = { { 0 } }; /* csv, jsonl, svg */
    const char *names[HLX_MAX_CLUSTERS];
    int batches[HLX_MAX_BATCHES], nhw = 0, nhwbuf = 0, wdt = -1, kvdt = -1, bench = 0;
    int quiet = 0, opt, rc = 0, ci, nvary = 0;
    hlx_vary_t vary[HLX_MAX_VARY];
    long long context = -1, v;
    hlx_sweep_opts_t o = { 1, 64, batches, 0, (1u << HLX_STRAT_COUNT) - 1, 2, 0 };
    hlx_plan_settings_t set;
    hlx_status_t st;
    hlx_model_t m;
    hlx_cluster_t cl[HLX_MAX_CLUSTERS];
    hlx_sweep_t sw = { 0 };
    char title[512], hwbuf[HLX_MAX_CLUSTERS][256];

    if (hlx_param_load(&hlx_plan_param_table, &set, NULL) != HLX_OK)
        return 2;
    o.nbatches = hlx_parse_batches("1-4096", batches, HLX_MAX_BATCHES);
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (opt) {
        case HLX_OPT_MODEL: model = optarg; break;
        case HLX_OPT_HW:
        case HLX_OPT_SWEEP_HW:
            if (nhwbuf == HLX_MAX_CLUSTERS || strlen(optarg) >= sizeof(hwbuf[0])) {
                fprintf(stderr, "helix sweep: --%s: too many or too long\n",
                        opt == HLX_OPT_HW ? "hw" : "sweep-hw");
                return 2;
            }
            strcpy(hwbuf[nhwbuf], optarg);
            nhw = hlx_list_split("sweep", opt == HLX_OPT_HW ? "hw" : "sweep-hw", "",
                                 hwbuf[nhwbuf++], hws, HLX_MAX_CLUSTERS, nhw);
            if (nhw < 0)
                return 2;
            break;
        case HLX_OPT_CONTEXT:
            if (hlx_parse_count(optarg, 1, 1ll << 40, &v) != 0) {
                fprintf(stderr, "helix sweep: --context: '%s' is not a token count (e.g. "
                                "131072, 128K, 1M)\n", optarg);
                return 2;
            }
            context = v;
            break;
        case HLX_OPT_GPUS: {
            long long a, b;
            const char *dash = strchr(optarg, '-');
            char lo[32];
            if (dash == NULL) {
                if (hlx_parse_count(optarg, 1, 1 << 16, &a) != 0)
                    goto bad_gpus;
                b = a;
            } else {
                if ((size_t)(dash - optarg) >= sizeof(lo))
                    goto bad_gpus;
                snprintf(lo, sizeof(lo), "%.*s", (int)(dash - optarg), optarg);
                if (hlx_parse_count(lo, 1, 1 << 16, &a) ||
                    hlx_parse_count(dash + 1, 1, 1 << 16, &b) || b < a)
                    goto bad_gpus;
            }
            o.gpus_min = (int)a;
            o.gpus_max = (int)b;
            break;
bad_gpus:
            fprintf(stderr, "helix sweep: --gpus: expected N or A-B with 1 <= A <= B <= 65536, "
                            "got '%s'\n", optarg);
            return 2;
        }
        case HLX_OPT_BATCH:
            o.nbatches = hlx_parse_batches(optarg, batches, HLX_MAX_BATCHES);
            if (o.nbatches <= 0)
                return 2;
            break;
        case HLX_OPT_STRATEGIES: {
            char buf[256];
            hlx_list_elem_t e[16];
            int ne, k;
            hlx_strategy_t s;
            if (strlen(optarg) >= sizeof(buf)) {
                fprintf(stderr, "helix sweep: --strategies: longer than %zu characters\n",
                        sizeof(buf) - 1);
                return 2;
            }
            strcpy(buf, optarg);
            ne = hlx_list_split("sweep", "strategies", "", buf, e, 16, 0);
            if (ne < 0)
                return 2;
            o.strategies = 0;
            for (k = 0; k < ne; k++) {
                if (hlx_strategy_parse(e[k].s, &s) != 0) {
                    fprintf(stderr, "helix sweep: --strategies: unknown '%s' (tp, pp, dp-ep, "
                                    "medha, helix)\n", e[k].s);
                    return 2;
                }
                o.strategies |= 1u << s;
            }
            if (hlx_list_dup("sweep", e, ne, hlx_list_same_strategy, "strategy") != 0)
                return 2;
            break;
        }
        case HLX_OPT_HOPB:
            if (!strcmp(optarg, "off")) o.hopb_mode = 0;
            else if (!strcmp(optarg, "on")) o.hopb_mode = 1;
            else if (!strcmp(optarg, "both")) o.hopb_mode = 2;
            else {
                fprintf(stderr, "helix sweep: --hopb: expected on, off or both, got '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case HLX_OPT_CSV: csv = optarg; break;
        case HLX_OPT_JSONL: jsonl = optarg; break;
        case HLX_OPT_SVG: svg = optarg; break;
        case HLX_OPT_WDT: if (hlx_flag_dtype("sweep", "weight-dtype", optarg, &wdt)) return 2; break;
        case HLX_OPT_KVDT: if (hlx_flag_dtype("sweep", "kv-dtype", optarg, &kvdt)) return 2; break;
        case HLX_OPT_SET: if (hlx_flag_set("sweep", optarg, &set)) return 2; break;
        case HLX_OPT_BENCH: bench = 1; break;
        case HLX_OPT_QUIET: quiet = 1; break;
        case HLX_OPT_VARY: {
            const char *eq = strchr(optarg, '=');
            hlx_vary_t *vy = &vary[nvary];
            hlx_list_elem_t ve[HLX_MAX_CLUSTERS];
            char vbuf[1024];
            int k;
            if (nvary == HLX_MAX_VARY) {
                fprintf(stderr, "helix sweep: --vary: at most %d\n", HLX_MAX_VARY);
                return 2;
            }
            if (eq == NULL || (size_t)(eq - optarg) >= sizeof(vy->key)) {
                fprintf(stderr, "helix sweep: --vary: expected KEY=V1,V2,..., got '%s'\n",
                        optarg);
                return 2;
            }
            snprintf(vy->key, sizeof(vy->key), "%.*s", (int)(eq - optarg), optarg);
            if (hlx_cluster_variant_key(vy->key) < 0) {
                fprintf(stderr, "helix sweep: --vary: unknown key '%s' (%s)\n", vy->key,
                        hlx_cluster_variant_keys());
                return 2;
            }
            for (k = 0; k < nvary; k++) /* KEY x KEY: a product with itself */
                if (hlx_cluster_variant_key(vary[k].key) == hlx_cluster_variant_key(vy->key)) {
                    fprintf(stderr, "helix sweep: --vary: key '%s' is given twice: list all "
                                    "its values in one --vary %s=V1,V2,...\n", vy->key,
                            vy->key);
                    return 2;
                }
            if (strlen(eq + 1) >= sizeof(vbuf)) {
                fprintf(stderr, "helix sweep: --vary: '%s': longer than %zu characters\n",
                        optarg, sizeof(vbuf) - 1);
                return 2;
            }
            strcpy(vbuf, eq + 1);
            {
                char prefix[sizeof(vy->key) + 1];
                snprintf(prefix, sizeof(prefix), "%s=", vy->key);
                vy->n = hlx_list_split("sweep", "vary", prefix, vbuf, ve, HLX_MAX_CLUSTERS, 0);
                if (vy->n < 0)
                    return 2;
            }
            for (k = 0; k < vy->n; k++) { /* the common number rule (hlx_parse_num) */
                char why[160];
                double d;
                if (hlx_parse_num(ve[k].s, -DBL_MAX, DBL_MAX, &d, why, sizeof(why)) != HLX_OK) {
                    fprintf(stderr, "helix sweep: --vary: '%s': element %d: %s\n", optarg,
                            ve[k].pos, why);
                    return 2;
                }
                if (d < 0) {
                    fprintf(stderr, "helix sweep: --vary: '%s': element %d ('%s') is not a "
                                    "number >= 0\n", optarg, ve[k].pos, ve[k].s);
                    return 2;
                }
                vy->v[k] = d;
            }
            /* a value twice would make two clusters of one name */
            if (hlx_list_dup("sweep", ve, vy->n, hlx_list_same_real, "value") != 0)
                return 2;
            nvary++;
            break;
        }
        case 'h':
        case HLX_OPT_HELP: hlx_sweep_usage(stdout); return 0;
        default:
            fprintf(stderr, "helix sweep: unknown or incomplete option '%s' (see helix sweep "
                            "--help)\n", argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "helix sweep: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (model == NULL || nhw == 0 || context < 0) {
        fprintf(stderr, "helix sweep: --model, --hw and --context are required (see --help)\n");
        return 2;
    }
    if (hlx_list_dup("sweep", hws, nhw, hlx_list_same_str, "cluster") != 0)
        return 2;
    if ((rc = hlx_cli_load_model("sweep", model, wdt, kvdt, &m)) != 0)
        return rc;
    for (ci = 0; ci < nhw; ci++) {
        if ((rc = hlx_load_cluster("sweep", hws[ci].s, &cl[ci])) != 0) {
            while (ci-- > 0)
                hlx_cluster_free(&cl[ci]);
            return rc;
        }
        names[ci] = cl[ci].name;
    }
    /* a file and a preset (or two files) of one name: the outputs tell clusters apart by
     * name, so two of one name would mix their points */
    for (ci = 1; ci < nhw && rc == 0; ci++) {
        int k;
        for (k = 0; k < ci && rc == 0; k++)
            if (!strcmp(cl[k].name, cl[ci].name)) {
                fprintf(stderr, "helix sweep: --%s: '%s' (element %d) is cluster '%s', as is "
                                "'%s' (--%s element %d): the outputs tell clusters apart by "
                                "name; give each cluster once (or rename one file's \"name\")\n",
                        hws[ci].flag, hws[ci].s, hws[ci].pos, cl[ci].name, hws[k].s,
                        hws[k].flag, hws[k].pos);
                rc = 2;
            }
    }
    if (rc != 0) {
        for (ci = 0; ci < nhw; ci++)
            hlx_cluster_free(&cl[ci]);
        return rc;
    }
    if (nvary > 0 && (rc = hlx_expand_variants(cl, &nhw, vary, nvary)) != 0) {
        for (ci = 0; ci < nhw; ci++)
            hlx_cluster_free(&cl[ci]);
        return rc;
    }
    for (ci = 0; ci < nhw; ci++)
        names[ci] = cl[ci].name;
    /* the outputs before the work: a path that cannot take a file fails now, and nothing
     * is replaced until its new content is complete */
    {
        const char *paths[3] = { csv, jsonl, svg }, *flags[3] = { "csv", "jsonl", "svg" };
        char err[4200], ta[PATH_MAX + 256], tb[PATH_MAX + 256];
        int k, j;
        /* two outputs renamed onto one file: the second would silently replace the first */
        for (k = 1; k < 3 && rc == 0 && !bench; k++)
            for (j = 0; j < k && rc == 0; j++)
                if (paths[k] && paths[j] && hlx_out_target(paths[k], ta, sizeof(ta)) &&
                    hlx_out_target(paths[j], tb, sizeof(tb)) && !strcmp(ta, tb)) {
                    fprintf(stderr, "helix sweep: --%s %s and --%s %s are one file (%s): "
                                    "give each output a file of its own\n", flags[j],
                            paths[j], flags[k], paths[k], ta);
                    rc = 2;
                }
        for (k = 0; k < 3 && rc == 0 && !bench; k++)
            if (paths[k] && hlx_out_begin(&outs[k], paths[k], err, sizeof(err)) != HLX_OK) {
                fprintf(stderr, "helix sweep: --%s %s\n", flags[k], err);
                rc = 2;
            }
        if (rc != 0) {
            for (k = 0; k < 3; k++)
                hlx_out_end(&outs[k], 0, err, sizeof(err));
            for (ci = 0; ci < nhw; ci++)
                hlx_cluster_free(&cl[ci]);
            return rc;
        }
    }
    o.progress = isatty(STDERR_FILENO) && !quiet;
    for (ci = 0; ci < nhw && rc == 0; ci++) {
        hlx_plan_ctx_t ctx;
        size_t before = sw.n, ev = sw.evaluated;
        double t = sw.seconds;
        if (hlx_plan_ctx_init(&ctx, &m, &cl[ci], (double)context, &set) != HLX_OK) {
            fprintf(stderr, "helix sweep: cannot model %s on %s\n", m.name, cl[ci].name);
            rc = 2;
            break;
        }
        if (bench) {
            hlx_sweep_bench(&ctx, &o);
            continue;
        }
        if ((st = hlx_sweep_run(&ctx, &o, ci, &sw)) != HLX_OK) {
            if (st == HLX_ERR_NOSPACE)
                fprintf(stderr, "helix sweep: more than %zu configurations (at cluster %d of "
                        "%d, %s): narrow --gpus, --batch, --strategies or --vary\n",
                        (size_t)HLX_SWEEP_MAX_POINTS, ci + 1, nhw, cl[ci].name);
            else
                fprintf(stderr, "helix sweep: out of memory\n");
            rc = st == HLX_ERR_NOSPACE ? 2 : 1;
            break;
        }
        if (!quiet)
            printf("%s on %s, context %lld: %zu configurations in %.3f s (%.3g/s)\n", m.name,
                   cl[ci].name, context, sw.evaluated - ev, sw.seconds - t,
                   (sw.evaluated - ev) / (sw.seconds - t > 0 ? sw.seconds - t : 1e-9));
        (void)before;
        hlx_sweep_report(stdout, &sw, ci, cl[ci].name, quiet);
    }
    if (rc == 0 && !bench) {
        snprintf(title, sizeof(title), "%s, context %lld tokens: tokens/s/GPU vs tokens/s/user",
                 m.name, context);
        if (csv)
            rc |= hlx_sweep_write("csv", &outs[0], &sw, names, nhw, title, &m);
        if (jsonl)
            rc |= hlx_sweep_write("jsonl", &outs[1], &sw, names, nhw, title, &m);
        if (svg)
            rc |= hlx_sweep_write("svg", &outs[2], &sw, names, nhw, title, &m);
    }
    { /* a failed sweep replaces nothing */
        char err[4200];
        int k;
        for (k = 0; k < 3; k++)
            hlx_out_end(&outs[k], 0, err, sizeof(err));
    }
    hlx_sweep_free(&sw);
    for (ci = 0; ci < nhw; ci++)
        hlx_cluster_free(&cl[ci]);
    return rc;
}
