/* The flags of `helix decode` in one table (type, default, bounds, help), parsed into an
 * hlx_run_config_t through the one number parser. */
#include "hlx_cmd.h"
#include "hlx_kernels.h"
#include "hlx_log.h"

#include <stdio.h>
#include <string.h>


_Static_assert(HLX_HOPB_OFF == 0 && HLX_HOPB_ON == 1 && HLX_HOPB_AUTO == 2,
               "--hopb's choices are listed in hlx_hopb_mode_t's order");

static const hlx_flag_t hlx_decode_flag_list[] = {
    HLX_RF("model", HLX_FT_STRING, "tiny", 0, 0, 0, 0, NULL, model, "FILE|NAME|DIR",
           "model description (JSON), preset, or a Hugging Face checkpoint\n"
           "directory (config.json + safetensors: its weights, read by each\n"
           "rank in slices); GQA and MLA (absorbed) models with dense or\n"
           "MoE FFNs run, fp8/fp4-weight models are refused (the planner\n"
           "models them)"),
    HLX_RF_KVP,
    HLX_RF("tpa", HLX_FT_INT, "1", 1, 4096, 0, 0, NULL, tpa, "T",
           "tensor-parallel attention width (MLA: 1, its one latent KV\n"
           "head shared by every query head; the ranks go on --kvp)"),
    HLX_RF("batch", HLX_FT_INT, "1", 1, 65536, 0, 0, NULL, batch, "B",
           "requests decoded together"),
    HLX_RF("context", HLX_FT_INT, "4096", 0, INT64_C(1) << 50, 0, 0, NULL, context, "S",
           "prior context tokens per request"),
    HLX_RF("steps", HLX_FT_INT, "8", 0, 1000000, 0, 0, NULL, steps, "N", "decode steps"),
    HLX_RF("kv-block", HLX_FT_INT, "16", 1, 1 << 20, 0, 0, NULL, kv_block, "N",
           "staggered KV append: consecutive tokens stored on one KVP rank\n"
           "before moving to the next"),
    HLX_RF("seed", HLX_FT_INT, "1", 0, INT64_MAX, 0, 0, NULL, seed, "N",
           "seed of the synthetic weights and context (default with a\n"
           "checkpoint: its helix_synth_seed when it has one)"),
    HLX_RF("prompt-ids", HLX_FT_STRING, NULL, 0, 0, 0, 0, NULL, prompt_ids, "FILE",
           "token ids (whitespace separated; one line per request or one\n"
           "line for all) prefilled after --context, then --steps decoded\n"
           "from the token that follows the prompt"),
    HLX_RF_PREFILL_CHUNK,
    HLX_RF("kv-dtype", HLX_FT_CHOICE, NULL, 0, 0, 0, 0, "f32|bf16|fp8", kv_dtype, "T",
           "KV cache storage: f32, bf16 or fp8 (e4m3: values rounded to\n"
           "nearest, beyond +-448 saturated; half bf16's bytes; scale 1, or\n"
           "a checkpoint's k_scale / v_scale, per layer or KV head, when it\n"
           "has them)\n"
           "(default: the model's)"),
    HLX_RF_WEIGHT_DTYPE,
    HLX_RF("kernels", HLX_FT_STRING, "auto", 0, 0, 0, 0, NULL, kernels, "NAME",
           "kernel variant: auto, scalar, avx2, avx512, amx (auto: the best\n"
           "this CPU runs for the KV type, head size, group and --threads, or\n"
           "HELIX_KERNELS; `helix info` lists them; the log says why)"),
    HLX_RF("check", HLX_FT_BOOL, NULL, 0, 0, 0, 0, NULL, check, NULL,
           "recompute every step in a single-process fp64 reference and\n"
           "compare hidden states, logits and tokens; exit 1 on mismatch"),
    HLX_RF_CHECK_TOL,
    HLX_RF("route-margin", HLX_FT_NUM, "1e-5", 0, 0, 1e-12, 1e3, NULL, route_margin, "X",
           "MoE models with --check: routing choices of the reference whose\n"
           "last chosen and first left-out scores differ by less than X are\n"
           "reported as near-ties (route_near_ties), where the engine's\n"
           "fp32 routing may choose another expert"),
    HLX_RF("timeout", HLX_FT_NUM, NULL, 0, 0, 1e-3, 86400, NULL, timeout, "SEC",
           "deadline of the bootstrap and of every collective\n"
           "(default: HELIX_COMM_TIMEOUT, 30 s)"),
    HLX_RF("hopb", HLX_FT_CHOICE, "auto", 0, 0, 0, 0, "off|on|auto", hopb, "MODE",
           "on, off or auto: schedule of the attention exchange: off =\n"
           "lockstep (attention of the whole batch, then one blocking\n"
           "all-to-all); on = HOP-B micro-batches, each exchange\n"
           "overlapped with the next micro-batch's attention; auto =\n"
           "HOP-B when the pipeline model c + (nb-1) max(c_busy, m) + m\n"
           "(c_busy: the attention beside an exchange in flight), fed\n"
           "with the first step's timings and one trial, predicts a\n"
           "gain; with --kvp 2 or more and no --micro-batch,\n"
           "lockstep when some CPU is asked for more than one thread by\n"
           "the ranks started on it (ranks taking turns on a core hide\n"
           "nothing). Results are bitwise the same"),
    HLX_RF("micro-batch", HLX_FT_INT, NULL, 1, 65536, 0, 0, NULL, micro_batch, "M",
           "requests per micro-batch with --hopb on or auto (default:\n"
           "chosen from the first step)"),
    HLX_RF("timeline", HLX_FT_STRING, NULL, 0, 0, 0, 0, NULL, timeline, "FILE",
           "write the last step's per-micro-batch attention and exchange\n"
           "times (rank 0) with a text rendering (needs --steps >= 1)"),
    HLX_RF("threads", HLX_FT_INT, NULL, 1, HLX_POOL_MAX, 0, 0, NULL, threads, "T",
           "cores per rank: its KV shard (a KV split with the exact merge)\n"
           "and GEMMs on a persistent pool of T threads (default:\n"
           "HELIX_THREADS, 1)"),
    HLX_RF("device", HLX_FT_CHOICE, NULL, 0, 0, 0, 0, "cpu|cuda|auto", device, "D",
           "execution backend: cpu, cuda (exit 2 without a usable GPU) or\n"
           "auto (cuda when a GPU is visible and the build has CUDA, else\n"
           "cpu, said in the report) (default: HELIX_DEVICE, cpu)"),
    HLX_RF("ep", HLX_FT_INT, NULL, 1, 4096, 0, 0, NULL, ep, "E",
           "MoE expert parallelism: N = KVP x TPA = EP x TPF; routed expert\n"
           "J lives on EP group J / (experts / EP) (TPF consecutive ranks)\n"
           "and its columns are split over them; E divides N and the\n"
           "experts (default: HELIX_EP, 1: every rank a slice of every\n"
           "expert)"),
    HLX_RF_JSON,
    HLX_RF("verbose", HLX_FT_BOOL, NULL, 0, 0, 0, 0, NULL, verbose, NULL,
           "print every step on stderr"),
};

const hlx_flag_table_t hlx_decode_flags = {
    "decode", hlx_decode_flag_list,
    sizeof(hlx_decode_flag_list) / sizeof(hlx_decode_flag_list[0]),
    NULL, 0,
};

static const char hlx_decode_usage_head[] =
    "usage: helix decode [OPTIONS]\n"
    "\n"
    "Decodes --steps tokens for --batch requests that each have --context tokens of prior\n"
    "(synthetic, seeded) context, with the KV cache sharded over KVP ranks and attention\n"
    "heads over TPA ranks. The job must have N = KVP x TPA ranks:\n"
    "  helixrun -n 4 helix decode --kvp 2 --tpa 2 --context 256K --check\n"
    "An MLA model (DeepSeek-V3's latent attention) runs with TPA 1, every rank on KVP:\n"
    "  helixrun -n 4 helix decode --model my-mla.json --kvp 4 --context 1M\n"
    "Integers take K, M, G and T suffixes (2^10, 2^20, 2^30, 2^40).\n"
    "\n"
    "options:\n";

static const char hlx_decode_usage_tail[] = HLX_RUN_USAGE_TAIL;

int hlx_decode_parse(int argc, char **argv, hlx_run_config_t *cfg, hlx_decode_opts_t *o)
{
    return hlx_run_flags_parse(&hlx_decode_flags, hlx_decode_usage_head, hlx_decode_usage_tail,
                               argc, argv, cfg, o);
}

/* Index of flag name in t, -1 when t has none. */
static int hlx_flag_index(const hlx_flag_table_t *t, const char *name)
{
    size_t i;

    for (i = 0; i < t->nflags; i++)
        if (!strcmp(t->flags[i].name, name))
            return (int)i;
    return -1;
}

/* Whether flag name of t was on the command line. */
static int hlx_flag_given(const hlx_flag_table_t *t, const int *given, const char *name)
{
    int i = hlx_flag_index(t, name);

    return i >= 0 && given[i];
}

int hlx_run_flags_parse(const hlx_flag_table_t *t, const char *head, const char *tail,
                        int argc, char **argv, hlx_run_config_t *cfg, hlx_decode_opts_t *o)
{
    int given[HLX_FLAGS_MAX], rc, i;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            break;
        if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
            printf("helix %s %s\n", t->command, HLX_VERSION);
            return 0;
        }
    }
    memset(o, 0, sizeof(*o));
    rc = hlx_flags_parse(t, argc, argv, o, given, head, tail);
    if (rc >= 0)
        return rc;
    hlx_run_config_default(cfg);
    cfg->kvp       = (int)o->kvp;
    cfg->tpa       = (int)o->tpa;
    cfg->batch     = (int)o->batch;
    cfg->context   = o->context;
    cfg->steps     = (int)o->steps;
    cfg->kv_block  = (int)o->kv_block;
    cfg->seed      = (uint64_t)o->seed;
    cfg->check     = o->check;
    cfg->check_tol = o->check_tol;
    cfg->route_margin = o->route_margin;
    cfg->verbose   = o->verbose;
    cfg->timeout_s = o->timeout; /* 0 when not given: the transport's default */
    cfg->hopb        = o->hopb; /* "off|on|auto" is hlx_hopb_mode_t's order */
    cfg->micro_batch = (int)o->micro_batch; /* 0 when not given: chosen from the first step */
    cfg->threads     = (int)o->threads;     /* 0 when not given: HELIX_THREADS */
    cfg->ep          = (int)o->ep;          /* 0 when not given: HELIX_EP */
    if (o->timeline != NULL) {
        if (strlen(o->timeline) >= sizeof(cfg->timeline)) {
            hlx_flags_usage_error(t, "--timeline: path longer than %zu bytes",
                                  sizeof(cfg->timeline) - 1);
            return 2;
        }
        snprintf(cfg->timeline, sizeof(cfg->timeline), "%s", o->timeline);
        /* the file is the last step's times: with no step the run would end without it */
        if (hlx_flag_index(t, "steps") >= 0 && o->steps == 0) {
            hlx_flags_usage_error(t, "--timeline %s: --steps 0 decodes no step, and the "
                                  "timeline records the last step's times: give --steps 1 or "
                                  "more, or drop --timeline", o->timeline);
            return 2;
        }
    }
    if (hlx_flag_given(t, given, "kv-dtype")) {
        cfg->kv_dtype_set = 1;
        cfg->kv_dtype = o->kv_dtype == 0   ? HLX_DTYPE_F32
                        : o->kv_dtype == 1 ? HLX_DTYPE_BF16
                                           : HLX_DTYPE_FP8;
    }
    if (hlx_flag_given(t, given, "weight-dtype")) {
        hlx_dtype_t wd;
        if (hlx_dtype_parse(o->weight_dtype, &wd) != 0) {
            hlx_flags_usage_error(t, "--weight-dtype: unknown dtype '%.40s' (f32 or bf16)",
                                  o->weight_dtype);
            return 2;
        }
        if (wd != HLX_DTYPE_F32 && wd != HLX_DTYPE_BF16) {
            hlx_flags_usage_error(t, "--weight-dtype %s: weights are held in f32 or bf16 (an "
                                  "fp8 checkpoint runs dequantized to bf16 without the flag; "
                                  "fp8 and fp4 weights are modelled by helix plan)",
                                  o->weight_dtype);
            return 2;
        }
        cfg->weight_dtype_set = 1;
        cfg->weight_dtype = wd;
    }
    o->batch_given     = hlx_flag_given(t, given, "batch");
    o->seed_given      = hlx_flag_given(t, given, "seed");
    /* only from tables that have them (decode has no sampling flags) */
    if (hlx_flag_index(t, "prefill-chunk") >= 0)
        cfg->prefill_chunk = (int)o->prefill_chunk;
    if (hlx_flag_index(t, "temperature") >= 0)
        cfg->temperature = o->temperature;
    if (hlx_flag_index(t, "top-p") >= 0)
        cfg->top_p = o->top_p;
    if (hlx_flag_given(t, given, "top-p") && cfg->temperature == 0)
        hlx_warn("--top-p %g has no effect with greedy decoding (--temperature 0): give a "
                 "--temperature > 0 to sample", o->top_p);
    /* a warning, not a refusal: scripts run one command line with --hopb off and on */
    if (hlx_flag_given(t, given, "micro-batch") && o->hopb == HLX_HOPB_OFF)
        hlx_warn("--micro-batch %lld has no effect with --hopb off (the whole batch runs in "
                 "lockstep)", (long long)o->micro_batch);
    /* flags that only tune another flag's work: said, so a typo'd script is not trusted */
    if (hlx_flag_given(t, given, "check-tol") && !o->check)
        hlx_warn("--check-tol %g has no effect without --check (nothing is compared)",
                 o->check_tol);
    if (hlx_flag_given(t, given, "route-margin") && !o->check)
        hlx_warn("--route-margin %g has no effect without --check (no routing is compared)",
                 o->route_margin);
    if (hlx_flag_given(t, given, "prefill-chunk") && o->prompt_ids == NULL)
        hlx_warn("--prefill-chunk %lld has no effect without --prompt-ids (no prompt to "
                 "prefill)", (long long)o->prefill_chunk);
    if (hlx_flag_given(t, given, "eos") && o->ignore_eos)
        hlx_warn("--eos %s has no effect with --ignore-eos (every request runs --max-new "
                 "tokens)", o->eos);
    if (strlen(o->kernels) >= sizeof(cfg->kernels)) {
        hlx_flags_usage_error(t, "--kernels: '%.40s' is not a kernel variant (auto, scalar, "
                              "avx2, avx512, amx)", o->kernels);
        return 2;
    }
    snprintf(cfg->kernels, sizeof(cfg->kernels), "%s", o->kernels);
    if (hlx_flag_given(t, given, "device"))
        snprintf(cfg->device, sizeof(cfg->device), "%s",
                 o->device == 0 ? "cpu" : o->device == 1 ? "cuda" : "auto");
    return -1;
}
