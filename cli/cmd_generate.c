/* `helix generate`: prefill a prompt of token ids, then decode --max-new tokens per
 * request, greedy or by seeded top-p sampling, on the ranks of this job; and the loading of
 * a model (file, preset or checkpoint directory) and of a prompt file that decode shares. */
#include "hlx_cmd.h"
#include "hlx_file.h"
#include "hlx_json.h"
#include "hlx_ckpt.h"
#include "hlx_kernels.h"
#include "hlx_log.h"
#include "hlx_parse.h"

#include <helix/model.h>
#include <helix/runtime.h>

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- shared with decode: the model and the prompt */

int hlx_run_load_model(const char *cmd, const hlx_decode_opts_t *o, hlx_run_config_t *cfg,
                       hlx_model_t *m)
{
    struct stat sb;
    hlx_hf_config_t hc;
    char err[1024] = "", path[4096];
    hlx_status_t st;

    snprintf(path, sizeof(path), "%s/config.json", o->model);
    /* A directory without config.json is left to the model reader, which refuses it as
     * it refuses every directory ("is a directory, not a model file"). */
    if (stat(o->model, &sb) != 0 || !S_ISDIR(sb.st_mode) || stat(path, &sb) != 0) {
        /* Only what the runtime runs: fp8/fp4 weights are refused, naming the field. */
        st = hlx_model_load_runnable(o->model, m, err, sizeof(err));
        if (st != HLX_OK) {
            fprintf(stderr, "helix %s: %s\n", cmd, err);
            return hlx_status_exit_code(st);
        }
        return -1;
    }
    if (strlen(o->model) >= sizeof(cfg->ckpt)) {
        fprintf(stderr, "helix %s: --model: path longer than %zu bytes\n", cmd,
                sizeof(cfg->ckpt) - 1);
        return 2;
    }
    st = hlx_hf_config_load(o->model, &hc, err, sizeof(err));
    if (st != HLX_OK) { /* err names config.json:line:column */
        fprintf(stderr, "helix %s: %s\n", cmd, err);
        return hlx_status_exit_code(st);
    }
    {
        /* fp8 checkpoint weights (block scales) run dequantized to bf16 (runtime/engine.c) */
        hlx_model_t run = hc.m;
        if (hc.fp8 && run.weight_dtype == HLX_DTYPE_FP8)
            run.weight_dtype = HLX_DTYPE_BF16;
        st = hlx_model_check_runnable(&run, err, sizeof(err));
    }
    if (st != HLX_OK) {
        fprintf(stderr, "helix %s: %s/config.json: %s\n", cmd, o->model, err);
        return hlx_status_exit_code(st);
    }
    /* GLM-4.5's and DeepSeek-V3's multi-token-prediction layers: left out, said once */
    if (hc.mtp_layers > 0 && !hlx_flags_quiet_rank())
        fprintf(stderr, "helix %s: note: %s: the multi-token-prediction layers "
                "(num_nextn_predict_layers %d, model.layers.%d.* on where stored) are not read; "
                "decode runs without speculative decoding\n", cmd, o->model, hc.mtp_layers,
                hc.m.layers);
    *m = hc.m;
    snprintf(cfg->ckpt, sizeof(cfg->ckpt), "%s", o->model);
    if (!o->seed_given && hc.synth_seed >= 0)
        cfg->seed = (uint64_t)hc.synth_seed;
    return -1;
}

#define HLX_PROMPT_MAX_BYTES (64u << 20)
#define HLX_PROMPT_MAX_LINES 65536 /* requests: the bound of --batch */

/* Reads path whole (at most HLX_PROMPT_MAX_BYTES; a named pipe without a writer reads as
 * empty instead of blocking the open); *rc_p the exit status when it cannot. */
static char *hlx_read_text(const char *path, char *err, size_t errlen, int *rc_p)
{
    char *buf = NULL;
    size_t n = 0;
    hlx_status_t st = hlx_file_read(path, "prompt file", HLX_PROMPT_MAX_BYTES, &buf, &n, err,
                                    errlen);

    if (st != HLX_OK) {
        *rc_p = hlx_status_exit_code(st);
        return NULL;
    }
    if (strlen(buf) != n) {
        snprintf(err, errlen, "%s: holds a NUL byte (expected text: token ids)", path);
        free(buf);
        *rc_p = 2;
        return NULL;
    }
    return buf;
}

/* Appends v to the array *a of *n entries and *cap allocated (doubled as it fills); -1 when
 * out of memory (*a unchanged). */
static int hlx_ints_push(int **a, size_t *n, size_t *cap, int v)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 1024;
        int *g = realloc(*a, c * sizeof(int));
        if (g == NULL)
            return -1;
        *a = g;
        *cap = c;
    }
    (*a)[(*n)++] = v;
    return 0;
}

/* The lines' ids (ids[], line by line, lens[] tokens each) as the run takes them: the
 * first pmin tokens of each in cfg->prompt, the rest as tails (cfg->tail, cfg->tail_off),
 * all in one allocation (*ids_p). NULL when out of memory. */
static int *hlx_prompt_split(const int *ids, const int *lens, int lines, int pmin,
                             hlx_run_config_t *cfg)
{
    size_t n = 0, t = 0;
    int *all, *tail, *off, b, ragged = 0;

    for (b = 0; b < lines; b++) {
        n += (size_t)lens[b];
        ragged |= lens[b] != pmin;
    }
    if ((all = malloc(sizeof(int) * (n + (ragged ? (size_t)lines + 1 : 0)))) == NULL)
        return NULL;
    tail = all + (size_t)lines * pmin;
    off = all + n;
    for (b = 0, n = 0; b < lines; n += (size_t)lens[b], b++) {
        memcpy(all + (size_t)b * pmin, ids + n, sizeof(int) * (size_t)pmin);
        if (!ragged)
            continue;
        off[b] = (int)t;
        memcpy(tail + t, ids + n + pmin, sizeof(int) * (size_t)(lens[b] - pmin));
        t += (size_t)(lens[b] - pmin);
    }
    cfg->prompt = all;
    cfg->prompt_len = pmin;
    if (ragged) {
        off[lines] = (int)t;
        cfg->tail = tail;
        cfg->tail_off = off;
    }
    return all;
}

int hlx_run_load_prompt(const char *cmd, const hlx_decode_opts_t *o, const hlx_model_t *m,
                        hlx_run_config_t *cfg, int **ids_p)
{
    char err[1024], *text, *s, *bol;
    int *ids = NULL, *lens = NULL, line = 1, lines = 0, len = 0, pmin = 0, b, rc = 2;
    int blank = 0; /* the first empty line not yet followed by a prompt */
    size_t n = 0, cap = 0, nlens = 0, lcap = 0;

    *ids_p = NULL;
    if (o->prompt_ids == NULL)
        return -1;
    if ((text = hlx_read_text(o->prompt_ids, err, sizeof(err), &rc)) == NULL) {
        fprintf(stderr, "helix %s: --prompt-ids %s\n", cmd, err);
        return rc;
    }
    for (s = bol = text;; s++) {
        const char *col0 = s;
        if (*s == '\n' || *s == 0) {
            /* an empty line would shift every later prompt to another request: refused
             * before a prompt, allowed at the end of the file */
            if (len > 0 && blank > 0) {
                fprintf(stderr, "helix %s: %s:%d:1: an empty line before the prompt of line "
                        "%d: each line is one request's prompt, and an empty prompt has no "
                        "token to start from; remove the line\n", cmd, o->prompt_ids, blank,
                        line);
                goto bad;
            }
            if (len == 0 && blank == 0 && *s == '\n')
                blank = line;
            if (len > 0 && lines++ < HLX_PROMPT_MAX_LINES) { /* more: counted, refused */
                if (hlx_ints_push(&lens, &nlens, &lcap, len) != 0)
                    goto nomem;
                pmin = lines == 1 || len < pmin ? len : pmin;
            }
            len = 0;
            if (*s == 0)
                break;
            line++;
            bol = s + 1; /* columns count from here */
            continue;
        }
        /* a line ends at \n (or \r\n); a carriage return, vertical tab or form feed
         * anywhere else would join two requests' prompts into one */
        if ((*s == '\r' && s[1] != '\n') || *s == '\v' || *s == '\f') {
            fprintf(stderr, "helix %s: %s:%d:%d: a %s inside a line: each request's prompt is "
                    "one line ending in \\n (or \\r\\n)\n", cmd, o->prompt_ids, line,
                    (int)(s - bol) + 1, *s == '\r' ? "carriage return" : *s == '\v'
                    ? "vertical tab" : "form feed");
            goto bad;
        }
        if (isspace((unsigned char)*s))
            continue;
        {
            long long v = 0;
            int col = (int)(col0 - bol) + 1;
            if (!isdigit((unsigned char)*s)) {
                fprintf(stderr, "helix %s: %s:%d:%d: '%.20s' is not a token id (expected a "
                        "non-negative integer)\n", cmd, o->prompt_ids, line, col,
                        strtok(s, " \t\r\n"));
                goto bad;
            }
            while (isdigit((unsigned char)*s)) {
                if (v <= INT_MAX)
                    v = v * 10 + (*s - '0');
                s++;
            }
            if (*s && !isspace((unsigned char)*s)) {
                fprintf(stderr, "helix %s: %s:%d:%d: '%.20s' is not a token id (expected a "
                        "non-negative integer)\n", cmd, o->prompt_ids, line, col,
                        strtok((char *)col0, " \t\r\n"));
                goto bad;
            }
            if (v >= m->vocab) {
                fprintf(stderr, "helix %s: %s:%d:%d: token id %.20s is outside the vocabulary "
                        "of model %s (0 .. %d)\n", cmd, o->prompt_ids, line, col,
                        strtok((char *)col0, " \t\r\n"), m->name, m->vocab - 1);
                goto bad;
            }
            if (hlx_ints_push(&ids, &n, &cap, (int)v) != 0)
                goto nomem;
            len++;
            s--; /* the loop steps onto the separator */
        }
    }
    if (lines == 0) {
        fprintf(stderr, "helix %s: --prompt-ids %s: no token ids\n", cmd, o->prompt_ids);
        goto bad;
    }
    if (lines > HLX_PROMPT_MAX_LINES) {
        fprintf(stderr, "helix %s: --prompt-ids %s has %d lines (one request each): at most "
                "%d requests, as --batch\n", cmd, o->prompt_ids, lines, HLX_PROMPT_MAX_LINES);
        goto bad;
    }
    if (lines > 1 && o->batch_given && lines != cfg->batch) {
        fprintf(stderr, "helix %s: --prompt-ids %s has %d lines (one per request) but --batch "
                "is %d\n", cmd, o->prompt_ids, lines, cfg->batch);
        goto bad;
    }
    if (lines > 1)
        cfg->batch = lines;
    {
        /* the ids the run holds (one line: a copy per request), made before the start-up
         * memory check: ids beyond this process's memory could only end in the OOM killer
         * (ids for at most 2^16 requests of 2^25 tokens: no overflow) */
        const char *src;
        uint64_t need = (uint64_t)sizeof(int) * (lines == 1 ? (uint64_t)pmin * (uint64_t)cfg->batch
                                                           : (uint64_t)n + (uint64_t)lines + 1),
                 room = hlx_runtime_mem_room(&src);
        if (need > room) {
            char ns[32], rs[32];
            fprintf(stderr, "helix %s: --prompt-ids %s: %s of token ids (%d request(s) of %d%s "
                    "token(s)) are more than the %s this process may take (%s): shorten the "
                    "prompt or give fewer requests\n", cmd, o->prompt_ids,
                    hlx_format_bytes(need, ns, sizeof(ns)), cfg->batch, pmin,
                    lines > 1 ? " or more" : "", hlx_format_bytes(room, rs, sizeof(rs)), src);
            goto bad;
        }
    }
    if (lines == 1 && cfg->batch > 1) { /* one line for all requests */
        int *all = malloc(sizeof(int) * (size_t)pmin * (size_t)cfg->batch);
        if (all == NULL)
            goto nomem;
        for (b = 0; b < cfg->batch; b++)
            memcpy(all + (size_t)b * pmin, ids, sizeof(int) * (size_t)pmin);
        free(ids);
        ids = all;
        cfg->prompt = ids;
        cfg->prompt_len = pmin;
    } else {
        int *all = hlx_prompt_split(ids, lens, lines, pmin, cfg);
        if (all == NULL)
            goto nomem;
        free(ids);
        ids = all;
    }
    free(text);
    free(lens);
    *ids_p = ids;
    return -1;
nomem:
    fprintf(stderr, "helix %s: --prompt-ids %s: out of memory\n", cmd, o->prompt_ids);
bad:
    free(text);
    free(ids);
    free(lens);
    return 2;
}

void hlx_run_json_prompt(json_t *o, const hlx_run_config_t *cfg)
{
    json_t *lens = json_array();
    int b;

    json_object_set_new(o, "prompt_len", json_integer(cfg->prompt_len));
    for (b = 0; cfg->prompt_len > 0 && b < cfg->batch; b++)
        json_array_append_new(lens, json_integer(hlx_run_prompt_len(cfg, b)));
    json_object_set_new(o, "prompt_lens", lens);
}

/* ---- helix generate */


static const hlx_flag_t hlx_generate_flag_list[] = {
    HLX_RF("model", HLX_FT_STRING, "tiny", 0, 0, 0, 0, NULL, model, "DIR|FILE|NAME",
           "Hugging Face checkpoint directory, model description or preset\n"
           "(GQA and MLA attention, dense and MoE FFNs)"),
    HLX_RF("prompt-ids", HLX_FT_STRING, NULL, 0, 0, 0, 0, NULL, prompt_ids, "FILE",
           "token ids, whitespace separated: one line per request (lengths\n"
           "may differ), or one line for all --batch requests (required)"),
    HLX_RF("max-new", HLX_FT_INT, "16", 1, 1000000, 0, 0, NULL, max_new, "N",
           "tokens generated per request (the first comes from the prefill)"),
    HLX_RF("eos", HLX_FT_STRING, NULL, 0, 0, 0, 0, NULL, eos, "ID[,ID...]",
           "stop ids (up to 16): a request is done at its first; the run\n"
           "stops once every request is (default: the checkpoint's\n"
           "eos_token_id, none for synthetic weights)"),
    HLX_RF("ignore-eos", HLX_FT_BOOL, NULL, 0, 0, 0, 0, NULL, ignore_eos, NULL,
           "generate all --max-new tokens (benchmarks)"),
    HLX_RF("temperature", HLX_FT_NUM, "0", 0, 0, 0, 1e6, NULL, temperature, "T",
           "0: greedy; > 0: sample from softmax(logits / T)"),
    HLX_RF("top-p", HLX_FT_NUM, "1", 0, 0, 1e-9, 1, NULL, top_p, "P",
           "sample from the smallest set of most probable tokens holding P\n"
           "of the mass"),
    HLX_RF("seed", HLX_FT_INT, "1", 0, INT64_MAX, 0, 0, NULL, seed, "S",
           "seed of the sampling draws (a counter-based draw of seed,\n"
           "request and step: the same on every rank) and of synthetic\n"
           "weights and context (default with a checkpoint: its\n"
           "helix_synth_seed)"),
    HLX_RF_KVP,
    HLX_RF("tpa", HLX_FT_INT, "1", 1, 4096, 0, 0, NULL, tpa, "T",
           "tensor-parallel attention width"),
    HLX_RF("ep", HLX_FT_INT, NULL, 1, 4096, 0, 0, NULL, ep, "E",
           "MoE expert-parallel groups (helix decode --help; default:\n"
           "HELIX_EP, 1)"),
    HLX_RF("batch", HLX_FT_INT, "1", 1, 65536, 0, 0, NULL, batch, "B",
           "requests (default: the lines of --prompt-ids)"),
    HLX_RF("context", HLX_FT_INT, "0", 0, INT64_C(1) << 50, 0, 0, NULL, context, "S",
           "synthetic prior context before the prompt (tokens per request)"),
    HLX_RF_PREFILL_CHUNK,
    HLX_RF("kv-block", HLX_FT_INT, "16", 1, 1 << 20, 0, 0, NULL, kv_block, "N",
           "staggered KV layout: consecutive positions on one KVP rank"),
    HLX_RF("kv-dtype", HLX_FT_CHOICE, NULL, 0, 0, 0, 0, "f32|bf16|fp8", kv_dtype, "T",
           "KV cache storage (helix decode --help; default: the model's)"),
    HLX_RF_WEIGHT_DTYPE,
    HLX_RF("kernels", HLX_FT_STRING, "auto", 0, 0, 0, 0, NULL, kernels, "NAME",
           "kernel variant (helix decode --help)"),
    HLX_RF("threads", HLX_FT_INT, NULL, 1, HLX_POOL_MAX, 0, 0, NULL, threads, "T",
           "cores per rank (default: HELIX_THREADS, 1)"),
    HLX_RF("device", HLX_FT_CHOICE, NULL, 0, 0, 0, 0, "cpu|cuda|auto", device, "D",
           "execution backend (helix decode --help; default: HELIX_DEVICE,\n"
           "cpu)"),
    HLX_RF("hopb", HLX_FT_CHOICE, "auto", 0, 0, 0, 0, "off|on|auto", hopb, "MODE",
           "schedule of the decode exchange (helix decode --help)"),
    HLX_RF("check", HLX_FT_BOOL, NULL, 0, 0, 0, 0, NULL, check, NULL,
           "run the prompt and every step in the fp64 reference too and\n"
           "compare (exit 1 on mismatch)"),
    HLX_RF_CHECK_TOL,
    HLX_RF("timeout", HLX_FT_NUM, NULL, 0, 0, 1e-3, 86400, NULL, timeout, "SEC",
           "deadline of the bootstrap and of every collective"),
    HLX_RF_JSON,
};

const hlx_flag_table_t hlx_generate_flags = {
    "generate", hlx_generate_flag_list,
    sizeof(hlx_generate_flag_list) / sizeof(hlx_generate_flag_list[0]),
    NULL, 0,
};

static const char hlx_generate_usage_head[] =
    "usage: helix generate --prompt-ids FILE [OPTIONS]\n"
    "\n"
    "Prefills each request's prompt (chunked: several tokens per GEMM, each token's K/V\n"
    "stored by the KVP rank that owns its position), then decodes until --max-new tokens\n"
    "per request (or the checkpoint's eos_token_id): greedy, or seeded top-p sampling with\n"
    "--temperature. Prompts may differ in length: each request then decodes at its own\n"
    "position, and its tokens are those of its prompt run alone. Prints the generated ids\n"
    "per request, prefill tokens/s and decode ms/token. The job must have N = KVP x TPA\n"
    "ranks:\n"
    "  helixrun -n 4 helix generate --model DIR --prompt-ids p.txt --kvp 2 --tpa 2\n"
    "\n"
    "options:\n";

static const char hlx_generate_usage_tail[] = HLX_RUN_USAGE_TAIL;

/* eos_token_id of DIR/config.json (an id or a list of at most max ids; absent or null:
 * none). Ids outside the vocabulary can never be generated: dropped with a warning. The
 * count, or -1 after a message (file:line:column) for anything else. */
static int hlx_generate_eos(const char *dir, int vocab, int *eos, int max)
{
    char path[4096];
    hlx_jdoc_t *doc = NULL;
    json_t *e;
    int n = 0, dropped = 0;
    size_t i, cnt;

    if (!dir[0])
        return 0;
    snprintf(path, sizeof(path), "%s/config.json", dir);
    if (hlx_jdoc_load_file_as(path, "model config", &doc) != HLX_OK) {
        fprintf(stderr, "helix generate: %s\n", doc ? hlx_jdoc_error(doc) : path);
        hlx_jdoc_free(doc);
        return -1;
    }
    e = json_object_get(hlx_jdoc_root(doc), "eos_token_id");
    cnt = json_is_array(e) ? json_array_size(e) : e != NULL && !json_is_null(e);
    if (cnt > (size_t)max) {
        hlx_jdoc_fail(doc, "/eos_token_id", HLX_ERR_PARSE, "%zu ids; at most %d", cnt, max);
        goto bad;
    }
    for (i = 0; i < cnt; i++) {
        json_t *v = json_is_array(e) ? json_array_get(e, i) : e;
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        if (id < 0 || id > INT_MAX) {
            hlx_jdoc_fail(doc, "/eos_token_id", HLX_ERR_PARSE, "expected a token id (an "
                          "integer 0 .. %d) or a list of them", vocab - 1);
            goto bad;
        }
        if (id >= vocab)
            dropped++;
        else
            eos[n++] = (int)id;
    }
    if (dropped)
        hlx_warn("%s: eos_token_id: %d id(s) outside the vocabulary (0 .. %d) ignored", path,
                 dropped, vocab - 1);
    hlx_jdoc_free(doc);
    return n;
bad:
    fprintf(stderr, "helix generate: %s (or pass --eos / --ignore-eos)\n", hlx_jdoc_error(doc));
    hlx_jdoc_free(doc);
    return -1;
}

/* --eos ID[,ID...]: ids in 0..vocab-1, at most max; the count, or -1 after a message. */
static int hlx_generate_eos_flag(const char *arg, int vocab, int *eos, int max)
{
    const char *p = arg;
    int n = 0;

    for (;;) {
        char *end;
        long v;
        errno = 0;
        v = *p >= '0' && *p <= '9' ? strtol(p, &end, 10) : (end = (char *)p, 0L); /* digits */
        if (end == p || errno || v < 0 || v >= vocab || (*end && *end != ',')) {
            fprintf(stderr, "helix generate: --eos %s: expected token ids 0..%d separated by "
                    "commas (at character %d)\n", arg, vocab - 1, (int)(p - arg) + 1);
            return -1;
        }
        if (n == max) {
            fprintf(stderr, "helix generate: --eos %s: at most %d ids\n", arg, max);
            return -1;
        }
        eos[n++] = (int)v;
        if (!*end)
            return n;
        p = end + 1;
    }
}

/* Generated token g of request b: the prefill's, then the decode steps'. */
static int hlx_generated(const hlx_run_report_t *rep, int B, int b, int g)
{
    return g == 0 ? rep->prefill_tokens[b] : rep->tokens[(size_t)(g - 1) * B + b];
}

/* Tokens of request b up to and including its first EOS (*hit = 1 when there is one). */
static int hlx_generated_len(const hlx_run_report_t *rep, int B, int b, int total,
                             const int *eos, int neos, int *hit)
{
    int g, k;

    *hit = 1;
    for (g = 0; g < total; g++)
        for (k = 0; k < neos; k++)
            if (hlx_generated(rep, B, b, g) == eos[k])
                return g + 1;
    *hit = 0;
    return total;
}

static void hlx_generate_print(const hlx_run_config_t *cfg, const hlx_model_t *m,
                               const hlx_run_report_t *rep, int json, const int *eos,
                               int neos)
{
    int B = cfg->batch, total = rep->steps + 1, pmax = hlx_run_prompt_max(cfg), b, g;
    double pf_tps = rep->prefill_ms > 0
                        ? (double)hlx_run_prompt_tokens(cfg) * 1000.0 / rep->prefill_ms : 0;

    if (json) {
        json_t *o = json_object(), *toks = json_array();
        json_object_set_new(o, "model", json_string(m->name));
        json_object_set_new(o, "checkpoint", cfg->ckpt[0] ? json_string(cfg->ckpt) : json_null());
        json_object_set_new(o, "kvp", json_integer(cfg->kvp));
        json_object_set_new(o, "tpa", json_integer(cfg->tpa));
        json_object_set_new(o, "ranks", json_integer(rep->size));
        json_object_set_new(o, "batch", json_integer(B));
        json_object_set_new(o, "context", json_integer(cfg->context));
        hlx_run_json_prompt(o, cfg);
        json_object_set_new(o, "prefill_chunk", json_integer(cfg->prefill_chunk));
        json_object_set_new(o, "max_new", json_integer(rep->steps_planned + 1));
        json_object_set_new(o, "eos_stop", json_boolean(rep->eos_stop));
        json_object_set_new(o, "decode_steps", json_integer(rep->steps));
        json_object_set_new(o, "temperature", json_real(cfg->temperature));
        json_object_set_new(o, "top_p", json_real(cfg->top_p));
        json_object_set_new(o, "seed", json_integer((json_int_t)cfg->seed));
        json_object_set_new(o, "kernels", json_string(rep->kernels));
        json_object_set_new(o, "kv_dtype", json_string(hlx_dtype_name(rep->kv_dtype)));
        json_object_set_new(o, "kv_scales",
                            json_string(rep->kv_scales ? rep->kv_scales : "none"));
        json_object_set_new(o, "weight_dtype", json_string(hlx_dtype_name(rep->w_dtype)));
        json_object_set_new(o, "threads", json_integer(rep->threads));
        json_object_set_new(o, "prefill_ms", json_real(rep->prefill_ms));
        json_object_set_new(o, "prefill_tokens_per_s", json_real(pf_tps));
        json_object_set_new(o, "decode_ms_per_token", json_real(rep->step_ms_median));
        json_object_set_new(o, "ckpt_bytes_per_rank_max",
                            json_integer((json_int_t)rep->ckpt_bytes_max));
        json_object_set_new(o, "ckpt_bytes_total", json_integer((json_int_t)rep->ckpt_bytes_total));
        for (b = 0; b < B; b++) {
            json_t *t = json_array();
            int hit, n = hlx_generated_len(rep, B, b, total, eos, neos, &hit);
            for (g = 0; g < n; g++)
                json_array_append_new(t, json_integer(hlx_generated(rep, B, b, g)));
            json_array_append_new(toks, t);
        }
        json_object_set_new(o, "tokens", toks);
        json_object_set_new(o, "checked", json_boolean(rep->checked));
        if (rep->checked) {
            json_object_set_new(o, "max_rel_err", isfinite(rep->max_rel_err)
                                                      ? json_real(rep->max_rel_err) : json_null());
            json_object_set_new(o, "tokens_match", json_boolean(rep->tokens_match));
            json_object_set_new(o, "kv_rows_checked", json_integer(rep->kv_rows_checked));
            json_object_set_new(o, "kv_elems_apart", json_integer(rep->kv_elems_apart));
            json_object_set_new(o, "kv_rows_overwritten",
                                json_integer(rep->kv_rows_overwritten));
            json_object_set_new(o, "passed",
                                json_boolean(hlx_run_report_passed(rep, cfg->check_tol)));
        }
        json_dumpf(o, stdout, JSON_COMPACT | JSON_REAL_PRECISION(7));
        putchar('\n');
        json_decref(o);
        return;
    }
    printf("helix generate: model %s, KVP %d x TPA %d = %d ranks, kernels %s\n", m->name,
           cfg->kvp, cfg->tpa, rep->size, rep->kernels);
    if (pmax > cfg->prompt_len)
        printf("prompt:  %d .. %d tokens, batch %d, after %lld context tokens, %s\n",
               cfg->prompt_len, pmax, B, (long long)cfg->context,
               cfg->temperature > 0 ? "top-p sampling" : "greedy");
    else
        printf("prompt:  %d tokens x batch %d after %lld context tokens, %s\n", cfg->prompt_len,
               B, (long long)cfg->context, cfg->temperature > 0 ? "top-p sampling" : "greedy");
    printf("prefill: %.3f ms, %.1f tokens/s (chunks of %d tokens)\n", rep->prefill_ms, pf_tps,
           cfg->prefill_chunk);
    if (rep->steps > 0)
        printf("decode:  %d steps, median %.3f ms/token (batch %d)%s\n", rep->steps,
               rep->step_ms_median, B, rep->eos_stop ? ", stopped: every request at EOS" : "");
    for (b = 0; b < B; b++) {
        int hit, n = hlx_generated_len(rep, B, b, total, eos, neos, &hit);
        printf("tokens[%d]:", b);
        for (g = 0; g < n; g++)
            printf(" %d", hlx_generated(rep, B, b, g));
        printf("%s\n", hit ? " (eos)" : "");
    }
    if (rep->checked)
        printf("check:   %s: max_rel_err %.3e (tolerance %.1e), tokens %s, %lld KV rows "
               "compared\n", hlx_run_report_passed(rep, cfg->check_tol) ? "PASS" : "FAIL",
               rep->max_rel_err, cfg->check_tol, rep->tokens_match ? "match" : "differ",
               (long long)rep->kv_rows_checked);
}

typedef struct {
    int        json, neos;
    const int *eos;
} hlx_generate_print_ctx_t;

static void hlx_generate_print_cb(void *ctx, const hlx_run_config_t *cfg, const hlx_model_t *m,
                                  const hlx_run_report_t *rep)
{
    const hlx_generate_print_ctx_t *pc = ctx;

    hlx_generate_print(cfg, m, rep, pc->json, pc->eos, pc->neos);
}

int hlx_cmd_generate(int argc, char **argv)
{
    hlx_run_config_t cfg;
    hlx_decode_opts_t o;
    hlx_model_t model;
    hlx_generate_print_ctx_t pc;
    int *ids = NULL, rc, eos[HLX_EOS_MAX], neos;

    rc = hlx_run_flags_parse(&hlx_generate_flags, hlx_generate_usage_head,
                             hlx_generate_usage_tail, argc, argv, &cfg, &o);
    if (rc >= 0)
        return rc;
    if (o.prompt_ids == NULL) {
        hlx_flags_usage_error(&hlx_generate_flags, "--prompt-ids: required (a file of token "
                              "ids)");
        return 2;
    }
    if ((rc = hlx_run_load_model("generate", &o, &cfg, &model)) >= 0)
        return rc;
    if ((rc = hlx_run_load_prompt("generate", &o, &model, &cfg, &ids)) >= 0)
        return rc;
    cfg.steps = (int)o.max_new - 1;
    /* --ignore-eos wins over --eos (still checked) and over the checkpoint's ids */
    neos = o.eos ? hlx_generate_eos_flag(o.eos, model.vocab, eos, HLX_EOS_MAX)
         : o.ignore_eos ? 0 : hlx_generate_eos(cfg.ckpt, model.vocab, eos, HLX_EOS_MAX);
    if (neos < 0) {
        free(ids);
        return 2;
    }
    if (o.ignore_eos)
        neos = 0;
    cfg.eos = eos;
    cfg.neos = neos;
    pc.json = o.json;
    pc.eos = eos;
    pc.neos = neos;
    return hlx_run_engine("generate", &cfg, &model, ids, hlx_generate_print_cb, &pc);
}
