/* `helix bench hopb`: the attention and exchange of one decode layer, lockstep against
 * HOP-B micro-batches, next to the pipeline model c + (B-1) max(c, m) + m measured from
 * the same run's per-micro-batch attention c and exchange m, after untimed warm-up rounds
 * (as bench a2a's -w). Run under a launcher; its flags are one table (util/hlx_flags.h). */
#include "hlx_cmd.h"
#include "hlx_log.h"

#include <helix/model.h>
#include <helix/runtime.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int hlx_cmd_bench_hopb(int argc, char **argv);

/* The flags, parsed from the table below. */
typedef struct hlx_bench_hopb_args {
    const char *model, *kv_dtype;
    int64_t     kvp, tpa, batch, micro_batch, context, reps, warmup;
    int         json;
} hlx_bench_hopb_args_t;

#define HLX_BH(_n, _t, _def, _lo, _hi, _f, _meta, _help) \
    { _n, _t, _def, _lo, _hi, 0, 0, NULL, offsetof(hlx_bench_hopb_args_t, _f), _meta, _help }

static const hlx_flag_t hlx_bench_hopb_flag_list[] = {
    HLX_BH("model", HLX_FT_STRING, "tiny", 0, 0, model, "FILE|NAME|DIR",
           "model description (JSON), preset, or a Hugging Face checkpoint directory (its "
           "config.json's shapes; the weights are synthetic)"),
    HLX_BH("kvp", HLX_FT_INT, "2", 1, 4096, kvp, "K",
           "KV-parallel ranks; the job must have K x T ranks"),
    HLX_BH("tpa", HLX_FT_INT, "1", 1, 4096, tpa, "T", "tensor-parallel attention width"),
    HLX_BH("batch", HLX_FT_INT, "8", 1, 65536, batch, "B", "requests"),
    HLX_BH("micro-batch", HLX_FT_INT, NULL, 1, 65536, micro_batch, "M",
           "requests per micro-batch (default B / 4, at least 1)"),
    HLX_BH("context", HLX_FT_INT, "64K", 1, INT64_C(1) << 40, context, "S",
           "KV tokens per request; K/M suffixes"),
    HLX_BH("kv-dtype", HLX_FT_STRING, NULL, 0, 0, kv_dtype, "T",
           "f32, bf16 or fp8 (default: the model's)"),
    HLX_BH("reps", HLX_FT_INT, "20", 1, 100000, reps, "R", "timed repetitions"),
    HLX_BH("warmup", HLX_FT_INT, "2", 0, 100000, warmup, "W",
           "untimed rounds before them, 0 for none"),
    HLX_BH("json", HLX_FT_BOOL, NULL, 0, 0, json, NULL, "one JSON object on stdout (rank 0)"),
};

const hlx_flag_table_t hlx_bench_hopb_flags = {
    "bench hopb", hlx_bench_hopb_flag_list,
    sizeof(hlx_bench_hopb_flag_list) / sizeof(hlx_bench_hopb_flag_list[0]),
    NULL, 0,
};

static const char hlx_bench_hopb_usage_head[] =
"usage: helixrun -n N helix bench hopb [options]\n"
"Times the attention and the KVP all-to-all of one decode layer on N = KVP x TPA ranks:\n"
"  c_ms          attention (and packing) of one micro-batch\n"
"  m_ms          exchange of one micro-batch alone\n"
"  lockstep_ms   attention of the whole batch, then one blocking exchange\n"
"  pipelined_ms  HOP-B: each micro-batch's exchange posted when its attention is done\n"
"                and progressed during the next micro-batch's attention\n"
"  c_busy_ms     attention (and packing) of a micro-batch while the previous one's\n"
"                exchange is in flight and progressed from inside it, in rounds of its\n"
"                own: on CPU ranks the transport takes cycles from the attention\n"
"  predicted_ms  c + (nb - 1) max(c_busy, m) + m for nb micro-batches\n"
"  predicted_idle_ms  c + (nb - 1) max(c, m) + m: an exchange that costs no compute\n"
"  model_ratio   pipelined_ms / predicted_ms (model_ratio_idle: / predicted_idle_ms)\n"
"  hidden_fraction  1 - max(0, pipelined - nb c) / (nb m): the share of the exchange\n"
"                time that the pipeline hid behind attention\n"
"Medians over --reps, slowest rank, after --warmup untimed rounds of the same schedules\n"
"(the first use of the attention and exchange buffers and the transport's first\n"
"messages, connections included, are paid there). On one machine (shared memory) m is\n"
"small next to c.\n"
"options:\n";

int hlx_cmd_bench_hopb(int argc, char **argv)
{
    hlx_bench_hopb_args_t a;
    hlx_run_config_t cfg;
    hlx_model_t model;
    hlx_engine_t *eng = NULL;
    hlx_hopb_bench_t r;
    char err[1024] = "";
    long long mb;
    int nb, rc;
    double hidden, ratio;
    hlx_status_t st;

    memset(&a, 0, sizeof(a));
    rc = hlx_flags_parse(&hlx_bench_hopb_flags, argc, argv, &a, NULL,
                         hlx_bench_hopb_usage_head, NULL);
    if (rc >= 0)
        return rc;
    hlx_run_config_default(&cfg);
    cfg.kvp = (int)a.kvp;
    cfg.tpa = (int)a.tpa;
    cfg.batch = (int)a.batch;
    cfg.context = a.context;
    cfg.steps = 0;
    cfg.hopb = HLX_HOPB_OFF;
    if (a.kv_dtype != NULL) {
        if (hlx_dtype_parse(a.kv_dtype, &cfg.kv_dtype) != 0) {
            hlx_flags_usage_error(&hlx_bench_hopb_flags, "--kv-dtype: unknown type '%s' (f32, "
                                  "bf16, fp8)", a.kv_dtype);
            return 2;
        }
        cfg.kv_dtype_set = 1;
    }
    mb = a.micro_batch > 0 ? a.micro_batch : cfg.batch / 4 > 0 ? cfg.batch / 4 : 1;
    if (mb > cfg.batch) {
        hlx_flags_usage_error(&hlx_bench_hopb_flags, "--micro-batch %lld is larger than "
                              "--batch %d", mb, cfg.batch);
        return 2;
    }
    if ((rc = hlx_cli_load_model("bench hopb", a.model, -1, -1, &model)) != 0)
        return rc;
    st = hlx_engine_create(&cfg, &model, &eng, err, sizeof(err));
    if (st != HLX_OK)
        return hlx_engine_create_failed("bench hopb", st, err);
    /* warm-up: the same rounds, results dropped (collective: every rank runs them) */
    st = a.warmup > 0
             ? hlx_engine_bench_hopb(eng, (int)mb, (int)a.warmup, &r, err, sizeof(err))
             : HLX_OK;
    if (st == HLX_OK)
        st = hlx_engine_bench_hopb(eng, (int)mb, (int)a.reps, &r, err, sizeof(err));
    if (st != HLX_OK) {
        hlx_error("helix bench hopb: %s", err);
        rc = hlx_status_run_exit_code(st);
        hlx_engine_abort(eng, rc, err);
    }
    nb = (r.batch + r.micro_batch - 1) / r.micro_batch;
    hidden = r.m_ms > 0 ? 1.0 - fmax(0.0, r.pipelined_ms - nb * r.c_ms) / (nb * r.m_ms) : 0.0;
    hidden = fmin(1.0, fmax(0.0, hidden));
    ratio = r.predicted_ms > 0 ? r.pipelined_ms / r.predicted_ms : 0.0;
    if (hlx_engine_rank(eng) == 0) {
        if (a.json) {
            json_t *o = json_object();
            json_object_set_new(o, "model", json_string(model.name));
            json_object_set_new(o, "kvp", json_integer(cfg.kvp));
            json_object_set_new(o, "tpa", json_integer(cfg.tpa));
            json_object_set_new(o, "batch", json_integer(r.batch));
            json_object_set_new(o, "micro_batch", json_integer(r.micro_batch));
            json_object_set_new(o, "context", json_integer(cfg.context));
            json_object_set_new(o, "reps", json_integer(a.reps));
            json_object_set_new(o, "warmup", json_integer(a.warmup));
            json_object_set_new(o, "c_ms", json_real(r.c_ms));
            json_object_set_new(o, "m_ms", json_real(r.m_ms));
            json_object_set_new(o, "lockstep_ms", json_real(r.lockstep_ms));
            json_object_set_new(o, "pipelined_ms", json_real(r.pipelined_ms));
            json_object_set_new(o, "c_busy_ms", json_real(r.c_busy_ms));
            json_object_set_new(o, "predicted_ms", json_real(r.predicted_ms));
            json_object_set_new(o, "predicted_idle_ms", json_real(r.predicted_idle_ms));
            json_object_set_new(o, "hidden_fraction", json_real(hidden));
            json_object_set_new(o, "model_ratio", json_real(ratio));
            json_object_set_new(o, "model_ratio_idle",
                                json_real(r.predicted_idle_ms > 0
                                              ? r.pipelined_ms / r.predicted_idle_ms : 0));
            json_object_set_new(o, "speedup", json_real(r.pipelined_ms > 0
                                                        ? r.lockstep_ms / r.pipelined_ms : 0));
            json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(6));
            putchar('\n');
            json_decref(o);
        } else {
            printf("hopb bench: %s, KVP %d x TPA %d, batch %d in %d micro-batches of %d, "
                   "context %lld, %lld timed rounds after %lld warm-up\n", model.name, cfg.kvp,
                   cfg.tpa, r.batch, nb, r.micro_batch, (long long)cfg.context,
                   (long long)a.reps, (long long)a.warmup);
            printf("  c %.4f ms, m %.4f ms per micro-batch (m/c %.2f); c with an exchange in "
                   "flight %.4f ms\n", r.c_ms, r.m_ms, r.c_ms > 0 ? r.m_ms / r.c_ms : 0,
                   r.c_busy_ms);
            printf("  lockstep %.4f ms, pipelined %.4f ms (x%.2f), model %.4f ms (%.4f with "
                   "c alone), ratio %.3f, hidden %.0f%%\n", r.lockstep_ms, r.pipelined_ms,
                   r.pipelined_ms > 0 ? r.lockstep_ms / r.pipelined_ms : 0, r.predicted_ms,
                   r.predicted_idle_ms, ratio, 100 * hidden);
        }
        fflush(stdout);
    }
    hlx_engine_destroy(eng);
    return 0;
}
