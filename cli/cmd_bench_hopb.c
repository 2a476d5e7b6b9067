/* `helix bench hopb`: the attention and exchange of one decode layer, lockstep against
 * HOP-B micro-batches, next to the pipeline model c + (B-1) max(c, m) + m measured from
 * the same run's per-micro-batch attention c and exchange m, after untimed warm-up rounds
 * (as bench a2a's -w). Run under a launcher. */
#include "hlx_cmd.h"
#include "hlx_parse.h"
#include "hlx_log.h"

#include <helix/model.h>
#include <helix/runtime.h>

#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hlx_cmd_bench_hopb(int argc, char **argv);

static void hlx_bench_hopb_usage(FILE *f)
{
    fprintf(f,
"usage: helixrun -n N helix bench hopb [options]\n"
"Times the attention and the KVP all-to-all of one decode layer on N = KVP x TPA ranks:\n"
"  c_ms          attention (and packing) of one micro-batch\n"
"  m_ms          exchange of one micro-batch alone\n"
"  lockstep_ms   attention of the whole batch, then one blocking exchange\n"
"  pipelined_ms  HOP-B: each micro-batch's exchange posted when its attention is done\n"
"                and progressed during the next micro-batch's attention\n"
"  predicted_ms  c + (nb - 1) max(c, m) + m for nb micro-batches\n"
"  model_ratio   pipelined_ms / predicted_ms\n"
"  hidden_fraction  1 - max(0, pipelined - nb c) / (nb m): the share of the exchange\n"
"                time that the pipeline hid behind attention\n"
"Medians over --reps, slowest rank, after --warmup untimed rounds of the same schedules\n"
"(the first use of the attention and exchange buffers and the transport's first\n"
"messages, connections included, are paid there). On one machine (shared memory) m is\n"
"small next to c.\n"
"options:\n"
"  --model FILE|NAME  model (default tiny)\n"
"  --kvp K, --tpa T   layout; the job must have K x T ranks (default 2 x 1)\n"
"  --batch B          requests (default 8)\n"
"  --micro-batch M    requests per micro-batch (default B / 4, at least 1)\n"
"  --context S        KV tokens per request; K/M suffixes (default 64K)\n"
"  --kv-dtype T       f32 or bf16 (default: the model's)\n"
"  --reps R           timed repetitions (default 20)\n"
"  --warmup W         untimed rounds before them, 0 for none (default 2)\n"
"  --json             one JSON object on stdout (rank 0)\n");
}

static int hlx_bench_hopb_int(const char *flag, const char *s, long long max, long long *out)
{
    int64_t v;
    char    why[160];

    if (hlx_parse_int(s, 1, max, &v, why, sizeof(why)) != HLX_OK) {
        fprintf(stderr, "helix bench hopb: %s: %s\n", flag, why);
        return -1;
    }
    *out = (long long)v;
    return 0;
}

int hlx_cmd_bench_hopb(int argc, char **argv)
{
    static const struct option opts[] = {
        { "model", required_argument, NULL, 'M' },
        { "kvp", required_argument, NULL, 'K' },
        { "tpa", required_argument, NULL, 'T' },
        { "batch", required_argument, NULL, 'b' },
        { "micro-batch", required_argument, NULL, 'u' },
        { "context", required_argument, NULL, 'c' },
        { "kv-dtype", required_argument, NULL, 't' },
        { "reps", required_argument, NULL, 'r' },
        { "warmup", required_argument, NULL, 'w' },
        { "json", no_argument, NULL, 'j' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    hlx_run_config_t cfg;
    hlx_model_t model;
    hlx_engine_t *eng = NULL;
    hlx_hopb_bench_t r;
    const char *model_name = "tiny";
    char err[1024] = "";
    long long v, mb = 0, reps = 20, warmup = 2;
    int c, json = 0, nb, rc;
    double hidden, ratio;
    hlx_status_t st;

    hlx_run_config_default(&cfg);
    cfg.kvp = 2;
    cfg.batch = 8;
    cfg.context = 65536;
    cfg.steps = 0;
    cfg.hopb = HLX_HOPB_OFF;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'M': model_name = optarg; break;
        case 'K': if (hlx_bench_hopb_int("--kvp", optarg, 4096, &v)) return 2; cfg.kvp = (int)v; break;
        case 'T': if (hlx_bench_hopb_int("--tpa", optarg, 4096, &v)) return 2; cfg.tpa = (int)v; break;
        case 'b': if (hlx_bench_hopb_int("--batch", optarg, 65536, &v)) return 2; cfg.batch = (int)v; break;
        case 'u': if (hlx_bench_hopb_int("--micro-batch", optarg, 65536, &mb)) return 2; break;
        case 'c': if (hlx_bench_hopb_int("--context", optarg, (long long)1 << 40, &v)) return 2; cfg.context = v; break;
        case 'r': if (hlx_bench_hopb_int("--reps", optarg, 100000, &reps)) return 2; break;
        case 'w': {
            int64_t w;
            char why[160];
            if (hlx_parse_int(optarg, 0, 100000, &w, why, sizeof(why)) != HLX_OK) {
                fprintf(stderr, "helix bench hopb: --warmup: %s\n", why);
                return 2;
            }
            warmup = w;
            break;
        }
        case 't':
            if (hlx_dtype_parse(optarg, &cfg.kv_dtype) != 0) {
                fprintf(stderr, "helix bench hopb: --kv-dtype: unknown type '%s' (f32, bf16)\n",
                        optarg);
                return 2;
            }
            cfg.kv_dtype_set = 1;
            break;
        case 'j': json = 1; break;
        case 'h': hlx_bench_hopb_usage(stdout); return 0;
        case ':':
            fprintf(stderr, "helix bench hopb: %s needs a value\n", argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, "helix bench hopb: unknown option '%s'\n", argv[optind - 1]);
            hlx_bench_hopb_usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "helix bench hopb: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (mb == 0)
        mb = cfg.batch / 4 > 0 ? cfg.batch / 4 : 1;
    if (mb > cfg.batch) {
        fprintf(stderr, "helix bench hopb: --micro-batch %lld is larger than --batch %d\n", mb,
                cfg.batch);
        return 2;
    }
    st = hlx_model_load(model_name, &model, err, sizeof(err));
    if (st != HLX_OK) {
        fprintf(stderr, "helix bench hopb: %s\n", err);
        return 2;
    }
    st = hlx_engine_create(&cfg, &model, &eng, err, sizeof(err));
    if (st != HLX_OK) {
        hlx_error("helix bench hopb: %s", err);
        return hlx_status_exit_code(st);
    }
    /* warm-up: the same rounds, results dropped (collective: every rank runs them) */
    st = warmup > 0 ? hlx_engine_bench_hopb(eng, (int)mb, (int)warmup, &r, err, sizeof(err))
                    : HLX_OK;
    if (st == HLX_OK)
        st = hlx_engine_bench_hopb(eng, (int)mb, (int)reps, &r, err, sizeof(err));
    if (st != HLX_OK) {
        hlx_error("helix bench hopb: %s", err);
        rc = hlx_status_exit_code(st);
        hlx_engine_abort(eng, rc, err);
    }
    nb = (r.batch + r.micro_batch - 1) / r.micro_batch;
    hidden = r.m_ms > 0 ? 1.0 - fmax(0.0, r.pipelined_ms - nb * r.c_ms) / (nb * r.m_ms) : 0.0;
    hidden = fmin(1.0, fmax(0.0, hidden));
    ratio = r.predicted_ms > 0 ? r.pipelined_ms / r.predicted_ms : 0.0;
    if (hlx_engine_rank(eng) == 0) {
        if (json) {
            json_t *o = json_object();
            json_object_set_new(o, "model", json_string(model.name));
            json_object_set_new(o, "kvp", json_integer(cfg.kvp));
            json_object_set_new(o, "tpa", json_integer(cfg.tpa));
            json_object_set_new(o, "batch", json_integer(r.batch));
            json_object_set_new(o, "micro_batch", json_integer(r.micro_batch));
            json_object_set_new(o, "context", json_integer(cfg.context));
            json_object_set_new(o, "reps", json_integer(reps));
            json_object_set_new(o, "warmup", json_integer(warmup));
            json_object_set_new(o, "c_ms", json_real(r.c_ms));
            json_object_set_new(o, "m_ms", json_real(r.m_ms));
            json_object_set_new(o, "lockstep_ms", json_real(r.lockstep_ms));
            json_object_set_new(o, "pipelined_ms", json_real(r.pipelined_ms));
            json_object_set_new(o, "predicted_ms", json_real(r.predicted_ms));
            json_object_set_new(o, "hidden_fraction", json_real(hidden));
            json_object_set_new(o, "model_ratio", json_real(ratio));
            json_object_set_new(o, "speedup", json_real(r.pipelined_ms > 0
                                                        ? r.lockstep_ms / r.pipelined_ms : 0));
            json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(6));
            putchar('\n');
            json_decref(o);
        } else {
            printf("hopb bench: %s, KVP %d x TPA %d, batch %d in %d micro-batches of %d, "
                   "context %lld, %lld timed rounds after %lld warm-up\n", model.name, cfg.kvp,
                   cfg.tpa, r.batch, nb, r.micro_batch, (long long)cfg.context, reps, warmup);
            printf("  c %.4f ms, m %.4f ms per micro-batch (m/c %.2f)\n", r.c_ms, r.m_ms,
                   r.c_ms > 0 ? r.m_ms / r.c_ms : 0);
            printf("  lockstep %.4f ms, pipelined %.4f ms (x%.2f), model %.4f ms, "
                   "ratio %.3f, hidden %.0f%%\n", r.lockstep_ms, r.pipelined_ms,
                   r.pipelined_ms > 0 ? r.lockstep_ms / r.pipelined_ms : 0, r.predicted_ms,
                   ratio, 100 * hidden);
        }
        fflush(stdout);
    }
    hlx_engine_destroy(eng);
    return 0;
}
