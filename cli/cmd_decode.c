/* `helix decode`: runs Helix decode on the ranks of this job (helixrun, mpirun, srun or a
 * world of one) and prints timings, KV bytes and the result of the reference check. */
#include "hlx_cmd.h"
#include "hlx_comm.h"
#include "hlx_config.h"
#include "hlx_decode_predict.h"
#include "hlx_kernels.h"
#include "hlx_log.h"

#include <helix/model.h>
#include <helix/runtime.h>

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <unistd.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void hlx_decode_usage(FILE *f)
{
    fprintf(f,
"usage: helix decode [OPTIONS]\n"
"\n"
"Decodes --steps tokens for --batch requests that each have --context tokens of prior\n"
"(synthetic, seeded) context, with the KV cache sharded over KVP ranks and attention\n"
"heads over TPA ranks. The job must have N = KVP x TPA ranks:\n"
"  helixrun -n 4 helix decode --kvp 2 --tpa 2 --context 256K --check\n"
"\n"
"options:\n"
"  --model FILE|NAME   model description (JSON) or preset (default: tiny)\n"
"  --kvp K             KV-parallel ranks per TPA shard (default 1)\n"
"  --tpa T             tensor-parallel attention width (default 1)\n"
"  --batch B           requests decoded together (default 1)\n"
"  --context S         prior context tokens per request; K and M suffixes are 2^10\n"
"                      and 2^20 (default 4096)\n"
"  --steps N           decode steps (default 8)\n"
"  --kv-block N        staggered KV append: consecutive tokens stored on one KVP rank\n"
"                      before moving to the next (default 16)\n"
"  --seed N            seed of the synthetic weights and context (default 1)\n"
"  --kv-dtype T        KV cache storage: f32 or bf16 (default: the model's)\n"
"  --kernels NAME      kernel variant: auto, scalar, avx2, avx512, amx (default auto:\n"
"                      the best this CPU runs; `helix info` lists them)\n"
"  --threads T         cores per rank: its KV shard (a KV split with the exact merge)\n"
"                      and GEMMs on a persistent pool of T threads (default:\n"
"                      HELIX_THREADS, 1)\n"
"  --check             recompute every step in a single-process fp64 reference and\n"
"                      compare hidden states, logits and tokens; exit 1 on mismatch\n"
"  --check-tol X       relative tolerance of --check (default 1e-3)\n"
"  --timeout SEC       deadline of the bootstrap and of every collective\n"
"                      (default: HELIX_COMM_TIMEOUT, 30 s)\n"
"  --hopb on|off|auto  schedule of the attention exchange: off = lockstep (attention\n"
"                      of the whole batch, then one blocking all-to-all); on = HOP-B\n"
"                      micro-batches, each exchange overlapped with the next\n"
"                      micro-batch's attention; auto (default) = HOP-B when the\n"
"                      pipeline model c + (B-1) max(c, m) + m, fed with the first\n"
"                      step's timings, predicts a gain. Results are bitwise the same.\n"
"  --micro-batch M     requests per micro-batch with --hopb on or auto (default:\n"
"                      chosen from the first step)\n"
"  --timeline FILE     write the last step's per-micro-batch attention and exchange\n"
"                      times (rank 0) with a text rendering\n"
"  --json              print one JSON object instead of the text report\n"
"  --verbose           print every step on stderr\n"
"  -h, --help          this text\n"
"  -V, --version       print the version\n"
"\n"
"exit status: 0 ok, 1 runtime failure or check failure, 2 bad input\n");
}

/* SIGTERM (a scheduler ending the job, helixrun forwarding a signal): say so on stderr
 * and exit at once with 128 + 15. Logging is unbuffered, so nothing is lost; only
 * async-signal-safe calls here, the message is formatted before the handler runs. */
static char hlx_term_msg[128];
static size_t hlx_term_len;

static void hlx_on_sigterm(int sig)
{
    ssize_t n = write(STDERR_FILENO, hlx_term_msg, hlx_term_len);
    (void)n;
    _exit(128 + sig);
}

static void hlx_install_sigterm(int rank)
{
    struct sigaction sa;
    int n = snprintf(hlx_term_msg, sizeof(hlx_term_msg),
                     "helix decode: rank %d received SIGTERM; exiting\n", rank);

    hlx_term_len = n > 0 && (size_t)n < sizeof(hlx_term_msg) ? (size_t)n : 0;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = hlx_on_sigterm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
}

static int hlx_parse_i64(const char *flag, const char *s, int64_t min, int64_t max,
                         int allow_suffix, int64_t *out)
{
    char *end;
    long long v;
    int64_t mul = 1;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (allow_suffix && end != s && (*end == 'K' || *end == 'k' || *end == 'M' || *end == 'm' ||
                                     *end == 'G' || *end == 'g')) {
        mul = (*end == 'K' || *end == 'k') ? 1024 : (*end == 'M' || *end == 'm') ? 1048576
                                                                                  : 1073741824;
        end++;
    }
    if (errno || end == s || *end || v < min / mul || v > max / mul) {
        fprintf(stderr, "helix decode: %s: '%s' is not an integer in [%lld, %lld]\n", flag, s,
                (long long)min, (long long)max);
        return -1;
    }
    *out = (int64_t)v * mul;
    return 0;
}

/* A number for JSON: non-finite values (an error of a NaN run) become null. */
static json_t *hlx_json_real(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* The report as one JSON object (jansson escapes names taken from user files). */
/* A positive finite number for flag, or an error naming the flag. */
static int hlx_parse_pos(const char *flag, const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);

    if (*end || end == s || !(v > 0) || !isfinite(v)) {
        fprintf(stderr, "helix decode: %s: '%s' is not a positive number\n", flag, s);
        return -1;
    }
    *out = v;
    return 0;
}

static void hlx_decode_print_json(const hlx_run_config_t *cfg, const hlx_model_t *m,
                                  const hlx_run_report_t *rep)
{
    json_t *o = json_object(), *ph = json_object(), *toks = json_array();
    int passed = hlx_run_report_passed(rep, cfg->check_tol), p, s, b;

    json_object_set_new(o, "model", json_string(m->name));
    json_object_set_new(o, "kvp", json_integer(cfg->kvp));
    json_object_set_new(o, "tpa", json_integer(cfg->tpa));
    json_object_set_new(o, "ranks", json_integer(rep->size));
    json_object_set_new(o, "batch", json_integer(cfg->batch));
    json_object_set_new(o, "context", json_integer(cfg->context));
    json_object_set_new(o, "steps", json_integer(rep->steps));
    json_object_set_new(o, "kv_block", json_integer(cfg->kv_block));
    json_object_set_new(o, "launcher", json_string(rep->launcher));
    json_object_set_new(o, "transport", json_string(rep->transport));
    json_object_set_new(o, "kernels", json_string(rep->kernels));
    json_object_set_new(o, "bound", json_boolean(rep->bound));
    json_object_set_new(o, "cpuset", json_string(rep->cpuset));
    json_object_set_new(o, "a2a_link", json_string(rep->a2a_link));
    json_object_set_new(o, "hopb", json_string(cfg->hopb == HLX_HOPB_ON ? "on"
                                               : cfg->hopb == HLX_HOPB_OFF ? "off" : "auto"));
    json_object_set_new(o, "micro_batch", json_integer(rep->micro_batch));
    json_object_set_new(o, "threads", json_integer(rep->threads));
    json_object_set_new(o, "hopb_c_ms", json_real(rep->hopb_c_ms));
    json_object_set_new(o, "hopb_m_ms", json_real(rep->hopb_m_ms));
    json_object_set_new(o, "hopb_predicted_ms", json_real(rep->hopb_predicted_ms));
    {
        char hx[24];
        snprintf(hx, sizeof(hx), "%016llx", (unsigned long long)rep->hidden_hash);
        json_object_set_new(o, "hidden_hash", json_string(hx));
    }
    json_object_set_new(o, "step_ms", json_real(rep->step_ms_median));
    json_object_set_new(o, "step_ms_min", json_real(rep->step_ms_min));
    json_object_set_new(o, "tokens_per_s", json_real(rep->tokens_per_s));
    json_object_set_new(o, "kv_bytes_per_rank_max", json_integer((json_int_t)rep->kv_bytes_max));
    json_object_set_new(o, "kv_bytes_per_rank_min", json_integer((json_int_t)rep->kv_bytes_min));
    for (p = 0; p < HLX_PHASE_COUNT; p++)
        json_object_set_new(ph, hlx_phase_name((hlx_phase_id_t)p),
                            json_real(rep->phase_ms[p]));
    json_object_set_new(o, "phase_ms", ph);
    for (b = 0; b < cfg->batch; b++) {
        json_t *t = json_array();
        for (s = 0; s < rep->steps; s++)
            json_array_append_new(t, json_integer(rep->tokens[(size_t)s * cfg->batch + b]));
        json_array_append_new(toks, t);
    }
    json_object_set_new(o, "tokens", toks);
    json_object_set_new(o, "checked", json_boolean(rep->checked));
    json_object_set_new(o, "max_abs_err", rep->checked ? hlx_json_real(rep->max_abs_err) : json_null());
    json_object_set_new(o, "max_rel_err", rep->checked ? hlx_json_real(rep->max_rel_err) : json_null());
    json_object_set_new(o, "tokens_match", rep->checked ? json_boolean(rep->tokens_match) : json_null());
    if (rep->checked) {
        json_object_set_new(o, "replicas_match", json_boolean(rep->replicas_match));
        json_object_set_new(o, "nonfinite", json_integer(rep->nonfinite));
        json_object_set_new(o, "kv_rows_checked", json_integer(rep->kv_rows_checked));
        json_object_set_new(o, "kv_rows_bad", json_integer(rep->kv_rows_bad));
        json_object_set_new(o, "passed", json_boolean(passed));
    }
    hlx_decode_predict(o, cfg, m, rep->micro_batch < cfg->batch); /* HOP-B as it ran */
    json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(7));
    putchar('\n');
    json_decref(o);
}

static void hlx_decode_print_text(const hlx_run_config_t *cfg, const hlx_model_t *m,
                                  const hlx_run_report_t *rep)
{
    int p, s, b;

    printf("helix decode: model %s (%d layers, hidden %d, %d q heads, %d kv heads, head %d, "
           "ffn %d, vocab %d)\n", m->name, m->layers, m->hidden, m->q_heads, m->kv_heads,
           m->head_dim, m->ffn, m->vocab);
    printf("layout:  KVP %d x TPA %d = %d ranks (%s), transport %s, kernels %s\n", cfg->kvp,
           cfg->tpa, rep->size, rep->launcher, rep->transport, rep->kernels);
    printf("place:   rank 0 on cpus %s%s, KVP peers over %s\n",
           rep->cpuset[0] ? rep->cpuset : "?", rep->bound ? " (bound)" : " (not bound)",
           rep->a2a_link);
    printf("work:    batch %d, context %lld tokens + %d steps, kv block %d\n", cfg->batch,
           (long long)cfg->context, rep->steps, cfg->kv_block);
    printf("KV:      %.2f MiB per rank (min %.2f, max %.2f over ranks)\n",
           rep->kv_bytes_rank / 1048576.0, rep->kv_bytes_min / 1048576.0,
           rep->kv_bytes_max / 1048576.0);
    printf("step:    median %.3f ms, %.1f tokens/s (batch %d)\n", rep->step_ms_median,
           rep->tokens_per_s, cfg->batch);
    if (rep->micro_batch < cfg->batch)
        printf("hopb:    %s, micro-batch %d of %d%s", cfg->hopb == HLX_HOPB_AUTO ? "auto" : "on",
               rep->micro_batch, cfg->batch, rep->hopb_predicted_ms > 0 ? "" : "\n");
    else
        printf("hopb:    %s: lockstep (micro-batch = batch %d)%s",
               cfg->hopb == HLX_HOPB_OFF ? "off" : cfg->hopb == HLX_HOPB_ON ? "on" : "auto",
               cfg->batch, rep->hopb_predicted_ms > 0 ? "" : "\n");
    if (rep->hopb_predicted_ms > 0)
        printf(", chosen from c %.4f ms and m %.4f ms per micro-batch: model %.4f ms per "
               "layer\n", rep->hopb_c_ms, rep->hopb_m_ms, rep->hopb_predicted_ms);
    printf("phases:  ");
    for (p = 0; p < HLX_PHASE_COUNT; p++)
        printf("%s %.3f%s", hlx_phase_name((hlx_phase_id_t)p), rep->phase_ms[p],
               p + 1 < HLX_PHASE_COUNT ? ", " : " ms (median per step, rank 0)\n");
    for (b = 0; b < cfg->batch && b < 4; b++) {
        printf("tokens[%d]:", b);
        for (s = 0; s < rep->steps && s < 16; s++)
            printf(" %d", rep->tokens[(size_t)s * cfg->batch + b]);
        printf("%s\n", rep->steps > 16 ? " ..." : "");
    }
    if (rep->checked)
        printf("check:   %s: max_abs_err %.3e, max_rel_err %.3e (tolerance %.1e), tokens %s, "
               "replicas %s, %lld appended KV rows compared%s\n",
               hlx_run_report_passed(rep, cfg->check_tol) ? "PASS" : "FAIL",
               rep->max_abs_err, rep->max_rel_err, cfg->check_tol,
               rep->tokens_match ? "match" : "differ",
               rep->replicas_match ? "identical" : "differ", (long long)rep->kv_rows_checked,
               rep->kv_rows_bad ? " (some differ)" : "");
}

int hlx_cmd_decode(int argc, char **argv)
{
    enum { O_MODEL = 256, O_KVP, O_TPA, O_BATCH, O_CONTEXT, O_STEPS, O_BLOCK, O_SEED, O_CHECK,
           O_TOL, O_KVDT, O_KERN, O_TIMEOUT, O_JSON, O_VERBOSE, O_HOPB, O_MB, O_TL, O_THREADS };
    static const struct option opts[] = {
        { "model", required_argument, NULL, O_MODEL },
        { "kvp", required_argument, NULL, O_KVP },
        { "tpa", required_argument, NULL, O_TPA },
        { "batch", required_argument, NULL, O_BATCH },
        { "context", required_argument, NULL, O_CONTEXT },
        { "steps", required_argument, NULL, O_STEPS },
        { "kv-block", required_argument, NULL, O_BLOCK },
        { "seed", required_argument, NULL, O_SEED },
        { "check", no_argument, NULL, O_CHECK },
        { "check-tol", required_argument, NULL, O_TOL },
        { "kv-dtype", required_argument, NULL, O_KVDT },
        { "kernels", required_argument, NULL, O_KERN },
        { "timeout", required_argument, NULL, O_TIMEOUT },
        { "json", no_argument, NULL, O_JSON },
        { "verbose", no_argument, NULL, O_VERBOSE },
        { "hopb", required_argument, NULL, O_HOPB },
        { "micro-batch", required_argument, NULL, O_MB },
        { "timeline", required_argument, NULL, O_TL },
        { "threads", required_argument, NULL, O_THREADS },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    hlx_run_config_t cfg;
    hlx_run_report_t rep;
    hlx_model_t model;
    hlx_engine_t *eng = NULL;
    const char *model_name = "tiny";
    char err[1024] = "";
    int c, json = 0, rc;
    int64_t v;
    hlx_status_t st;

    hlx_run_config_default(&cfg);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "hV", opts, NULL)) != -1) {
        switch (c) {
        case O_MODEL:   model_name = optarg; break;
        case O_KVP:     if (hlx_parse_i64("--kvp", optarg, 1, 4096, 0, &v)) return 2; cfg.kvp = (int)v; break;
        case O_TPA:     if (hlx_parse_i64("--tpa", optarg, 1, 4096, 0, &v)) return 2; cfg.tpa = (int)v; break;
        case O_BATCH:   if (hlx_parse_i64("--batch", optarg, 1, 65536, 0, &v)) return 2; cfg.batch = (int)v; break;
        case O_CONTEXT: if (hlx_parse_i64("--context", optarg, 0, (int64_t)1 << 50, 1, &v)) return 2; cfg.context = v; break;
        case O_STEPS:   if (hlx_parse_i64("--steps", optarg, 0, 1000000, 0, &v)) return 2; cfg.steps = (int)v; break;
        case O_BLOCK:   if (hlx_parse_i64("--kv-block", optarg, 1, 1 << 20, 0, &v)) return 2; cfg.kv_block = (int)v; break;
        case O_SEED:    if (hlx_parse_i64("--seed", optarg, 0, INT64_MAX, 0, &v)) return 2; cfg.seed = (uint64_t)v; break;
        case O_CHECK:   cfg.check = 1; break;
        case O_JSON:    json = 1; break;
        case O_VERBOSE: cfg.verbose = 1; break;
        case O_TOL:     if (hlx_parse_pos("--check-tol", optarg, &cfg.check_tol)) return 2; break;
        case O_TIMEOUT:
            if (hlx_parse_pos("--timeout", optarg, &cfg.timeout_s) ||
                hlx_comm_timeout_check("helix decode: --timeout", cfg.timeout_s) != HLX_OK)
                return 2;
            break;
        case O_KVDT:
            if (hlx_dtype_parse(optarg, &cfg.kv_dtype) != 0) {
                fprintf(stderr, "helix decode: --kv-dtype: unknown type '%s' (f32, bf16)\n", optarg);
                return 2;
            }
            cfg.kv_dtype_set = 1;
            break;
        case O_KERN:
            snprintf(cfg.kernels, sizeof(cfg.kernels), "%s", optarg);
            break;
        case O_HOPB:
            if (!strcmp(optarg, "on"))
                cfg.hopb = HLX_HOPB_ON;
            else if (!strcmp(optarg, "off"))
                cfg.hopb = HLX_HOPB_OFF;
            else if (!strcmp(optarg, "auto"))
                cfg.hopb = HLX_HOPB_AUTO;
            else {
                fprintf(stderr, "helix decode: --hopb: '%s' is not on, off or auto\n", optarg);
                return 2;
            }
            break;
        case O_MB:      if (hlx_parse_i64("--micro-batch", optarg, 1, 65536, 0, &v)) return 2; cfg.micro_batch = (int)v; break;
        case O_THREADS: if (hlx_parse_i64("--threads", optarg, 1, HLX_POOL_MAX, 0, &v)) return 2; cfg.threads = (int)v; break;
        case O_TL:
            if (strlen(optarg) >= sizeof(cfg.timeline)) {
                fprintf(stderr, "helix decode: --timeline: path longer than %zu bytes\n",
                        sizeof(cfg.timeline) - 1);
                return 2;
            }
            snprintf(cfg.timeline, sizeof(cfg.timeline), "%s", optarg);
            break;
        case 'h':
            hlx_decode_usage(stdout);
            return 0;
        case 'V':
            printf("helix decode %s\n", HLX_VERSION);
            return 0;
        default:
            if (optopt >= O_MODEL)
                fprintf(stderr, "helix decode: option '%s' needs a value\n", argv[optind - 1]);
            else
                fprintf(stderr, "helix decode: unknown option '%s' (see helix decode --help)\n",
                        argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "helix decode: unexpected argument '%s' (see helix decode --help)\n",
                argv[optind]);
        return 2;
    }
    /* Only what the runtime runs: MoE and MLA fields are refused, naming the field. */
    st = hlx_model_load_runnable(model_name, &model, err, sizeof(err));
    if (st != HLX_OK) {
        fprintf(stderr, "helix decode: %s\n", err);
        return 2;
    }
    st = hlx_engine_create(&cfg, &model, &eng, err, sizeof(err));
    if (st != HLX_OK) {
        hlx_error("helix decode: %s", err);
        return hlx_status_exit_code(st);
    }
    hlx_install_sigterm(hlx_engine_rank(eng));
    st = hlx_engine_run(eng, &rep, err, sizeof(err));
    if (hlx_engine_rank(eng) == 0 && (st == HLX_OK || st == HLX_ERR_CHECK)) {
        if (json)
            hlx_decode_print_json(&cfg, &model, &rep);
        else
            hlx_decode_print_text(&cfg, &model, &rep);
        fflush(stdout);
    }
    rc = hlx_status_exit_code(st);
    if (st != HLX_OK)
        hlx_error("helix decode: %s", err);
    /* A check verdict is reached by every rank together; anything else may have left
     * peers inside a collective: end the job now rather than let them time out. */
    if (st != HLX_OK && st != HLX_ERR_CHECK)
        hlx_engine_abort(eng, rc, err);
    hlx_engine_destroy(eng);
    return rc;
}
