/* model: hostile input to checkpoints and `helix model synth`. Named pipes where a file
 * belongs are refused by name (and never block: each case runs under alarm() or timeout);
 * config.json values that would decode other tokens (expert groups too small for top_k, a
 * sliding window, stray rope_scaling keys) are refused at file:line:column, and absent keys
 * take transformers' defaults (named when a check refuses one); synth refuses a
 * checkpoint over --max-bytes or the free space before writing, leaves no partial file
 * under a final name when a write fails or is killed, and refuses a bad --out with exit 2.
 * argv[1]: the helix binary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hlx_test_files.h"

#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hlx_ckpt.h"
#include "hlx_config.h"

/* the shared shell-command helper (hlx_test_files.h) by its short name */
#define sh hlx_test_sh

static const char *helix;
static char g_tmp[] = "/tmp/hlx_ckpt_input_XXXXXX";

/* A call that blocks longer fails (meson's timeout is the second net). */
#define HLX_NO_HANG_S 20

/* `helix ARGS` under timeout(1): exit code, stderr in *err (free it). */
static int run(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int run(char **err, const char *fmt, ...)
{
    char args[3000];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    return hlx_test_helix(helix, g_tmp, HLX_NO_HANG_S, NULL, err, args);
}

/* Exit 2 and every needle in stderr. */
static void expect_exit2(const char *what, int rc, char *err, const char *n1, const char *n2)
{
    if (rc != 2 || strstr(err, n1) == NULL || (n2 != NULL && strstr(err, n2) == NULL))
        fail_msg("%s: exit %d%s, stderr: %s(wanted exit 2, '%s' and '%s')", what, rc,
                 rc == 124 ? " (timed out: it blocks)" : "", err, n1, n2 ? n2 : "");
    free(err);
}

/* `helix ARGS` must exit 2 with n1 (and n2 unless NULL) in its stderr. */
static void refused(const char *n1, const char *n2, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void refused(const char *n1, const char *n2, const char *fmt, ...)
{
    char args[3000], *err;
    va_list ap;
    int rc;

    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    rc = run(&err, "%s", args);
    expect_exit2(args, rc, err, n1, n2);
}

static void synth(const char *name, const char *args)
{
    assert_int_equal(sh("rm -rf %s/%s && timeout 60 %s model synth --out %s/%s %s >/dev/null",
                        g_tmp, name, helix, g_tmp, name, args), 0);
}

static int exists(const char *name);

static void dir_of(char *dir, size_t len, const char *name)
{
    snprintf(dir, len, "%s/%s", g_tmp, name);
}

/* ---- 1: named pipes ------------------------------------------------------------------- */

/* name/file replaced by a named pipe nobody writes to. */
static void make_fifo(const char *name, const char *file)
{
    char path[512];

    snprintf(path, sizeof(path), "%s/%s/%s", g_tmp, name, file);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0644), 0);
}

typedef hlx_status_t (*call_fn)(const char *dir, char *err, size_t errlen);

static hlx_status_t ckpt_open(const char *dir, char *err, size_t errlen)
{
    hlx_ckpt_t *ck = NULL;
    hlx_status_t st = hlx_ckpt_open(dir, &ck, err, errlen);

    if (st == HLX_OK)
        hlx_ckpt_close(ck);
    return st;
}

static hlx_status_t config_load(const char *dir, char *err, size_t errlen)
{
    hlx_hf_config_t cfg;

    return hlx_hf_config_load(dir, &cfg, err, errlen);
}

/* fn(dir) in a child process under alarm(): a call that blocks fails this test, and only
 * this test. Its status back, its message in err. */
static hlx_status_t in_child(call_fn fn, const char *dir, char *err, size_t errlen)
{
    int32_t st = HLX_ERR_INTERNAL;
    size_t got = 0;
    ssize_t k;
    int p[2], ws;
    pid_t pid;

    assert_int_equal(pipe(p), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        alarm(HLX_NO_HANG_S);
        err[0] = '\0';
        st = fn(dir, err, errlen);
        if (write(p[1], &st, sizeof(st)) != (ssize_t)sizeof(st) ||
            write(p[1], err, strlen(err) + 1) < 0)
            _exit(1);
        _exit(0);
    }
    close(p[1]);
    if (read(p[0], &st, sizeof(st)) != (ssize_t)sizeof(st))
        st = HLX_ERR_INTERNAL;
    while (got + 1 < errlen && (k = read(p[0], err + got, errlen - 1 - got)) > 0)
        got += (size_t)k;
    err[got] = '\0';
    close(p[0]);
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
        fail_msg("%s: the call did not return within %d s (it blocks)", dir, HLX_NO_HANG_S);
    return (hlx_status_t)st;
}

static void expect_call_refused(call_fn fn, const char *name, const char *needle)
{
    char dir[512], err[1024] = "";
    hlx_status_t st;

    dir_of(dir, sizeof(dir), name);
    st = in_child(fn, dir, err, sizeof(err));
    if (st != HLX_ERR_INVALID || strstr(err, needle) == NULL)
        fail_msg("%s: status %d, '%s' (wanted HLX_ERR_INVALID and '%s')", name, st, err, needle);
}

static void test_fifo_shard(void **state)
{
    char *err, path[512];

    (void)state;
    synth("fifo1", "--family dense --shards 1");
    make_fifo("fifo1", "model.safetensors");
    expect_call_refused(ckpt_open, "fifo1", "model.safetensors: is not a regular file (a named pipe)");
    refused("fifo1/model.safetensors: is not a regular file (a named pipe)", NULL,
            "model info %s/fifo1", g_tmp);
    snprintf(path, sizeof(path), "%s/p.txt", g_tmp);
    assert_int_equal(sh("echo '1 2 3 4' > %s", path), 0);
    refused("is not a regular file", NULL, "generate --model %s/fifo1 --prompt-ids %s", g_tmp,
            path);
    /* a named pipe under a name synth writes is replaced, not opened (it would block) */
    assert_int_equal(run(&err, "model synth --family dense --shards 1 --out %s/fifo1", g_tmp), 0);
    free(err);
    assert_int_equal(run(&err, "model info %s/fifo1", g_tmp), 0);
    free(err);
}

static void test_fifo_index(void **state)
{
    (void)state;
    synth("fifo2", "--family dense --shards 2");
    make_fifo("fifo2", "model.safetensors.index.json");
    expect_call_refused(ckpt_open, "fifo2", "model.safetensors.index.json: is not a regular file");
    refused("fifo2/model.safetensors.index.json: is not a regular file (a named pipe); a "
            "checkpoint index must be a regular file", NULL, "model info %s/fifo2", g_tmp);
    /* the same for config.json */
    synth("fifo3", "--family dense --shards 1");
    make_fifo("fifo3", "config.json");
    expect_call_refused(config_load, "fifo3",
                        "config.json: is not a regular file (a named pipe)");
    refused("is not a regular file", NULL, "model info %s/fifo3", g_tmp);
}

/* The index is read by the project's JSON reader: errors at file:line:column. */
static void test_index_positions(void **state)
{
    (void)state;
    synth("idx", "--family dense --shards 2");
    assert_int_equal(sh("printf '{\\n  \"weight_map\": {\\n    \"a\": \"../x\"\\n  }\\n}\\n' > "
                        "%s/idx/model.safetensors.index.json", g_tmp), 0);
    refused("model.safetensors.index.json:3:5: a: expected the name of a file", NULL,
            "model info %s/idx", g_tmp);
    assert_int_equal(sh("printf '{\\n  \"weight_map\": [1,\\n' > "
                        "%s/idx/model.safetensors.index.json", g_tmp), 0);
    refused("model.safetensors.index.json:3:", NULL, "model info %s/idx", g_tmp);
}

/* ---- 2 and 3: config.json values that would decode other tokens ---------------------- */

/* Sets (or with v NULL removes) key of name/config.json; steals v. */
/* config_json: name/config.json parsed, its path into path[512]; config_save: c written
 * back to path and freed. */
static json_t *config_json(const char *name, char *path)
{
    json_error_t je;
    json_t *c;

    snprintf(path, 512, "%s/%s/config.json", g_tmp, name);
    c = json_load_file(path, 0, &je);
    assert_non_null(c);
    return c;
}

static void config_save(json_t *c, const char *path)
{
    assert_int_equal(json_dump_file(c, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER), 0);
    json_decref(c);
}

/* Sets (or with v NULL removes) key of name/config.json's object scope (NULL: the top
 * level, else a key of it, e.g. text_config); steals v. */
static void set_key_in(const char *name, const char *scope, const char *key, json_t *v)
{
    char path[512];
    json_t *c = config_json(name, path), *o = scope ? json_object_get(c, scope) : c;

    assert_true(json_is_object(o));
    if (v != NULL)
        json_object_set_new(o, key, v);
    else
        json_object_del(o, key);
    config_save(c, path);
}

static void set_key(const char *name, const char *key, json_t *v)
{
    set_key_in(name, NULL, key, v);
}

/* Removes each key of the NULL-terminated keys from name/config.json (to read the class's
 * defaults). */
static void drop_keys(const char *name, const char *const *keys)
{
    for (; *keys != NULL; keys++)
        set_key(name, *keys, NULL);
}

/* hlx_hf_config_load of name: status, and the message must hold config.json:LINE:COL: and
 * the needle (when refused). */
/* The configuration the last expect_config loaded (what a successful load read). */
static hlx_hf_config_t g_cfg;

static void expect_config(const char *name, hlx_status_t want, const char *needle)
{
    char dir[512], err[1024] = "";
    hlx_hf_config_t cfg;
    hlx_status_t st;
    const char *at;
    int line = 0, col = 0;

    dir_of(dir, sizeof(dir), name);
    st = hlx_hf_config_load(dir, &cfg, err, sizeof(err));
    if (st != want || (needle != NULL && strstr(err, needle) == NULL))
        fail_msg("%s: status %d, '%s' (wanted %d and '%s')", name, st, err, want,
                 needle ? needle : "");
    if (want == HLX_OK) {
        g_cfg = cfg;
        return;
    }
    at = strstr(err, "config.json:");
    if (at == NULL || sscanf(at, "config.json:%d:%d:", &line, &col) != 2 || line < 1 || col < 1)
        fail_msg("%s: '%s' has no config.json:line:column", name, err);
}

/* key of name/config.json set to bad: expect_config(name, want, needle); then set to
 * good (set_key steals both) */
static void expect_key(const char *name, const char *key, json_t *bad, hlx_status_t want,
                       const char *needle, json_t *good)
{
    set_key(name, key, bad);
    expect_config(name, want, needle);
    set_key(name, key, good);
}

/* name/config.json (2 layers) with a layer_types list too short, then with an unknown kind:
 * each refused at its place (hlx_cfg_layer_types, which Qwen's and Gemma's readers share);
 * then without the key. */
static void bad_layer_types(const char *name)
{
    set_key(name, "layer_types", json_pack("[s]", "full_attention"));
    expect_config(name, HLX_ERR_PARSE, "layer_types: expected a list of num_hidden_layers (2) "
                  "strings");
    set_key(name, "layer_types", json_pack("[s, s]", "sliding_attention", "chunked_attention"));
    expect_config(name, HLX_ERR_PARSE, "layer_types[1]: layer 1: expected \"full_attention\" or "
                  "\"sliding_attention\"");
    set_key(name, "layer_types", NULL);
}

static void test_short_expert_groups(void **state)
{
    (void)state;
    synth("groups", "--family moe-mla --shards 1");
    /* 8 experts in 8 groups of 1, one group kept: 1 expert for top_k 2 */
    set_key("groups", "n_group", json_integer(8));
    set_key("groups", "topk_group", json_integer(1));
    expect_config("groups", HLX_ERR_PARSE, "topk_group: 1 group(s) of 1 experts hold fewer than "
                  "num_experts_per_tok 2 (n_routed_experts 8 in n_group 8 groups)");
    refused("groups/config.json:", "hold fewer than num_experts_per_tok 2",
            "model info %s/groups", g_tmp);
    /* the other rules of a model file, under config.json's names */
    expect_key("groups", "n_group", json_integer(3), HLX_ERR_PARSE,
               "n_group: 3 does not divide n_routed_experts 8", json_integer(2));
    set_key("groups", "topk_group", json_integer(3));
    expect_config("groups", HLX_ERR_PARSE, "topk_group: 3 exceeds n_group 2");
    /* 4 groups of 2, one kept: exactly top_k */
    set_key("groups", "n_group", json_integer(4));
    set_key("groups", "topk_group", json_integer(1));
    expect_config("groups", HLX_OK, NULL);
}

/* Keys a config.json may leave out take transformers' defaults (DeepseekV3Config,
 * MistralConfig), so that a checkpoint decodes as transformers would load it; a default
 * that a check then refuses is named as absent. */
static void test_config_defaults(void **state)
{
    static const char *const absent[] = { "q_lora_rank", "n_shared_experts",
                                          "first_k_dense_replace", "scoring_func",
                                          "norm_topk_prob", "routed_scaling_factor", "n_group",
                                          "topk_group", "num_nextn_predict_layers" };
    char dir[512], err[1024] = "";
    hlx_hf_config_t cfg;
    size_t i;

    (void)state;
    /* DeepSeek-V3's own config.json without the keys that have a default */
    assert_int_equal(sh("mkdir -p %s/ds3 && cp %s/tests/model/data/hf/deepseek-v3/config.json "
                        "%s/ds3/", g_tmp, HLX_SOURCE_ROOT, g_tmp), 0);
    for (i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
        set_key("ds3", absent[i], NULL);
    dir_of(dir, sizeof(dir), "ds3");
    if (hlx_hf_config_load(dir, &cfg, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    assert_int_equal(cfg.m.q_lora_rank, 1536);
    assert_int_equal(cfg.m.shared_experts, 1);
    assert_int_equal(cfg.m.dense_layers, 3);
    assert_string_equal(cfg.scoring_func, "sigmoid");
    assert_int_equal(cfg.m.moe_scoring, HLX_MOE_SIGMOID);
    assert_true(cfg.norm_topk_prob && cfg.m.norm_topk_prob);
    assert_true(cfg.routed_scaling_factor == 2.5 && cfg.m.routed_scaling == 2.5);
    assert_true(cfg.n_group == 8 && cfg.topk_group == 4);
    assert_true(cfg.m.n_group == 8 && cfg.m.topk_group == 4);
    assert_int_equal(cfg.mtp_layers, 1); /* DeepSeek's config class: one MTP layer */
    /* null is no query compression (q_proj), not the default */
    set_key("ds3", "q_lora_rank", json_null());
    if (hlx_hf_config_load(dir, &cfg, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    assert_int_equal(cfg.m.q_lora_rank, 0);

    /* 8 experts top-2 in 2 groups: without topk_group, its default 4 exceeds n_group */
    synth("dflt", "--family moe-mla --shards 1");
    set_key("dflt", "topk_group", NULL);
    expect_config("dflt", HLX_ERR_PARSE, "topk_group: 4 exceeds n_group 2 (topk_group is absent "
                  "from config.json: transformers' DeepseekV3Config default 4 was taken");
    refused("dflt/config.json:", "topk_group is absent from config.json", "model info %s/dflt",
            g_tmp);
    /* without n_group: 8 groups of 1 expert, one kept, fewer than top_k */
    set_key("dflt", "topk_group", json_integer(1));
    set_key("dflt", "n_group", NULL);
    expect_config("dflt", HLX_ERR_PARSE, "hold fewer than num_experts_per_tok 2 (n_routed_experts "
                  "8 in n_group 8 groups) (n_group is absent from config.json: transformers' "
                  "DeepseekV3Config default 8 was taken");
    /* both: 8 groups of 1, 4 kept */
    set_key("dflt", "topk_group", NULL);
    dir_of(dir, sizeof(dir), "dflt");
    if (hlx_hf_config_load(dir, &cfg, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    assert_true(cfg.m.n_group == 8 && cfg.m.topk_group == 4);
    /* 2 layers: the default first 3 dense is more than there are */
    set_key("dflt", "first_k_dense_replace", NULL);
    expect_config("dflt", HLX_ERR_PARSE, "first_k_dense_replace: 3 exceeds num_hidden_layers 2 "
                  "(absent from config.json: that is transformers' DeepseekV3Config default");

    /* MistralConfig: 8 KV heads, a window of 4096 tokens */
    synth("mistral", "--family dense --shards 1");
    set_key("mistral", "architectures", json_pack("[s]", "MistralForCausalLM"));
    set_key("mistral", "num_key_value_heads", NULL);
    dir_of(dir, sizeof(dir), "mistral");
    if (hlx_hf_config_load(dir, &cfg, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    assert_int_equal(cfg.m.sliding_window, 4096); /* absent: MistralConfig's */
    set_key("mistral", "max_position_embeddings", json_integer(4096));
    if (hlx_hf_config_load(dir, &cfg, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    assert_int_equal(cfg.m.kv_heads, 8);
    assert_int_equal(cfg.m.sliding_window, 0); /* as long as every sequence: never applies */
    /* a Llama config keeps one KV head per query head */
    set_key("mistral", "architectures", json_pack("[s]", "LlamaForCausalLM"));
    if (hlx_hf_config_load(dir, &cfg, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    assert_int_equal(cfg.m.kv_heads, cfg.m.q_heads);
}

static void test_sliding_window(void **state)
{
    char dir[512], err[1024];
    hlx_hf_config_t cfg;

    (void)state;
    synth("sliding", "--family dense --shards 1");
    dir_of(dir, sizeof(dir), "sliding");
    /* Llama's attention has none: a window that would apply is refused */
    set_key("sliding", "sliding_window", json_integer(4));
    expect_config("sliding", HLX_ERR_INVALID, "sliding_window: a window of 4 tokens is read for "
                  "MistralForCausalLM, MixtralForCausalLM and Phi3ForCausalLM (every layer "
                  "windowed) and for Qwen2ForCausalLM and Qwen3ForCausalLM with "
                  "use_sliding_window, not for LlamaForCausalLM");
    refused("sliding/config.json:", "is read for MistralForCausalLM", "model info %s/sliding",
            g_tmp);
    /* below max_position_embeddings it applies; at or above it never does */
    set_key("sliding", "max_position_embeddings", json_integer(4096));
    expect_config("sliding", HLX_ERR_INVALID, "under max_position_embeddings 4096");
    set_key("sliding", "sliding_window", json_integer(4096));
    expect_config("sliding", HLX_OK, NULL);
    /* Qwen2-style: the size carried with the switch off; on, it windows the layers from
     * max_window_layers, which Llama's attention does not (Qwen2's and Qwen3's: below) */
    set_key("sliding", "sliding_window", json_integer(4));
    expect_key("sliding", "use_sliding_window", json_false(), HLX_OK, NULL, json_true());
    expect_config("sliding", HLX_ERR_INVALID, "use_sliding_window: true windows the layers from "
                  "max_window_layers on (a window of 4 tokens, under max_position_embeddings "
                  "4096), which is read for Qwen2ForCausalLM and Qwen3ForCausalLM, not for "
                  "LlamaForCausalLM");
    set_key("sliding", "use_sliding_window", json_false());
    /* transformers' Mistral, Mixtral and Phi-3 have no switch: the window applies, on every
     * layer */
    set_key("sliding", "architectures", json_pack("[s]", "MistralForCausalLM"));
    set_key("sliding", "num_key_value_heads", json_integer(2));
    if (hlx_hf_config_load(dir, &cfg, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    assert_true(cfg.m.sliding_window == 4 && cfg.m.sliding_pattern == 0);
    set_key("sliding", "architectures", json_pack("[s]", "Phi3ForCausalLM"));
    if (hlx_hf_config_load(dir, &cfg, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    assert_int_equal(cfg.m.sliding_window, 4);
    set_key("sliding", "sliding_window", json_integer(3000000000LL));
    set_key("sliding", "max_position_embeddings", NULL);
    set_key("sliding", "architectures", json_pack("[s]", "MistralForCausalLM"));
    expect_config("sliding", HLX_ERR_PARSE, "sliding_window: 3000000000 tokens: more than the");
    expect_key("sliding", "sliding_window", json_null(), HLX_OK, NULL, json_string("4"));
    expect_config("sliding", HLX_ERR_PARSE, "sliding_window: expected a positive integer");
    set_key("sliding", "sliding_window", json_integer(8));
    set_key("sliding", "architectures", json_pack("[s]", "LlamaForCausalLM"));
    set_key("sliding", "use_sliding_window", json_string("no"));
    expect_config("sliding", HLX_ERR_PARSE, "use_sliding_window: expected true or false");
}

static void test_rope_scaling_keys(void **state)
{
    (void)state;
    synth("rope", "--family dense --shards 1");
    set_key("rope", "rope_scaling", json_pack("{s:s, s:i, s:s, s:i}", "rope_type", "linear",
                                              "factor", 2, "junk", "x", "beta_fast", -5));
    expect_config("rope", HLX_ERR_PARSE, "junk: unknown key; rope_scaling \"linear\" takes "
                  "factor");
    refused("rope/config.json:", "junk: unknown key", "model info %s/rope", g_tmp);
    /* a parameter of another kind: linear would ignore beta_fast */
    set_key("rope", "rope_scaling", json_pack("{s:s, s:i, s:i}", "rope_type", "linear",
                                              "factor", 2, "beta_fast", -5));
    expect_config("rope", HLX_ERR_PARSE, "beta_fast: not a parameter of rope_scaling "
                  "\"linear\" (it takes factor)");
    /* where it is a parameter, its value is checked */
    set_key("rope", "rope_scaling", json_pack("{s:s, s:i, s:i, s:i}", "type", "yarn", "factor",
                                              4, "original_max_position_embeddings", 128,
                                              "beta_fast", -5));
    expect_config("rope", HLX_ERR_PARSE, "beta_fast: -5 is outside");
    /* a misspelt parameter gets the nearest name */
    set_key("rope", "rope_scaling", json_pack("{s:s, s:i, s:i, s:i}", "type", "yarn", "factor",
                                              4, "original_max_position_embeddings", 128,
                                              "beta_fats", 16));
    expect_config("rope", HLX_ERR_PARSE, "beta_fats: unknown key (did you mean \"beta_fast\"?)");
    set_key("rope", "rope_scaling", json_pack("{s:s, s:s, s:i}", "rope_type", "linear", "type",
                                              "dynamic", "factor", 2));
    expect_config("rope", HLX_ERR_PARSE, "type: \"dynamic\" contradicts rope_type \"linear\"");
    set_key("rope", "rope_scaling", json_pack("{s:s, s:i}", "rope_type", "default", "factor", 8));
    expect_config("rope", HLX_ERR_PARSE, "factor: not a parameter of rope_scaling \"default\"");
    /* dynamic NTK: its original context is the top-level max_position_embeddings (as
     * transformers and InternLM2 read it); an original_max_position_embeddings of its own
     * would be ignored there, so it is refused */
    set_key("rope", "rope_scaling", json_pack("{s:s, s:f}", "type", "dynamic", "factor", 2.5));
    expect_config("rope", HLX_ERR_PARSE, "rope_scaling: \"dynamic\" needs the top-level "
                  "max_position_embeddings");
    set_key("rope", "max_position_embeddings", json_integer(262144));
    expect_config("rope", HLX_OK, NULL);
    {
        char dir[512], err[1024];
        hlx_hf_config_t cfg;
        dir_of(dir, sizeof(dir), "rope");
        assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
        assert_int_equal(cfg.m.rope_kind, HLX_ROPE_DYNAMIC);
        assert_int_equal(cfg.m.rope_orig_ctx, 262144);
        assert_true(cfg.m.rope_factor == 2.5);
    }
    set_key("rope", "rope_scaling", json_pack("{s:s, s:f, s:i}", "type", "dynamic", "factor",
                                              2.5, "original_max_position_embeddings", 4096));
    expect_config("rope", HLX_ERR_PARSE, "original_max_position_embeddings: not a parameter of "
                  "rope_scaling \"dynamic\" (it takes factor)");
    set_key("rope", "max_position_embeddings", NULL);
    /* its exponent rope_dim / (rope_dim - 2) needs more than 2 rotated elements (Phi-3's
     * partial_rotary_factor 1/16 of 32) */
    synth("rope-phi3", "--family phi3 --shards 1");
    set_key("rope-phi3", "max_position_embeddings", json_integer(64));
    set_key("rope-phi3", "partial_rotary_factor", json_real(0.0625));
    set_key("rope-phi3", "rope_scaling", json_pack("{s:s, s:f}", "type", "dynamic", "factor",
                                                   2.0));
    expect_config("rope-phi3", HLX_ERR_PARSE, "rope_scaling: \"dynamic\" needs more than 2 "
                  "rotated elements per head (it has 2)");
    synth("rope-mla", "--family moe-mla --shards 1");
    set_key("rope-mla", "max_position_embeddings", json_integer(4096));
    set_key("rope-mla", "rope_scaling", json_pack("{s:s, s:f}", "type", "dynamic", "factor", 2.0));
    expect_config("rope-mla", HLX_ERR_UNSUPPORTED, "rope_scaling: \"dynamic\" RoPE scaling is "
                  "implemented for GQA models only, not for MLA");
    /* Llama 3.1's and DeepSeek-V3's published objects are read */
    set_key("rope", "rope_scaling", json_pack("{s:f, s:f, s:f, s:i, s:s}", "factor", 8.0,
                                              "low_freq_factor", 1.0, "high_freq_factor", 4.0,
                                              "original_max_position_embeddings", 8192,
                                              "rope_type", "llama3"));
    expect_config("rope", HLX_OK, NULL);
    set_key("rope", "rope_scaling", json_pack("{s:i, s:i, s:i, s:f, s:f, s:i, s:s}", "beta_fast",
                                              32, "beta_slow", 1, "factor", 40, "mscale", 1.0,
                                              "mscale_all_dim", 1.0,
                                              "original_max_position_embeddings", 4096, "type",
                                              "yarn"));
    expect_config("rope", HLX_OK, NULL);
}

/* transformers v5's rope_parameters: the base, the rotated share and the scaling in one
 * object, read in place of rope_theta and rope_scaling; both forms must agree. */
static void test_rope_parameters(void **state)
{
    char dir[512], err[1024];
    hlx_hf_config_t cfg;

    (void)state;
    synth("rp", "--family dense --shards 1");
    dir_of(dir, sizeof(dir), "rp");
    set_key("rp", "rope_theta", NULL);
    set_key("rp", "rope_parameters", json_pack("{s:s, s:f}", "rope_type", "default",
                                               "rope_theta", 500000.0));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.m.rope_theta == 500000.0 && cfg.m.rope_kind == HLX_ROPE_NONE);
    /* Llama 3.1 as v5 writes it */
    set_key("rp", "rope_parameters", json_pack("{s:s, s:f, s:f, s:f, s:i, s:f}", "rope_type",
                                               "llama3", "factor", 8.0, "low_freq_factor", 1.0,
                                               "high_freq_factor", 4.0,
                                               "original_max_position_embeddings", 8192,
                                               "rope_theta", 500000.0));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.m.rope_kind == HLX_ROPE_LLAMA3 && cfg.m.rope_factor == 8.0 &&
                cfg.m.rope_orig_ctx == 8192 && cfg.m.rope_theta == 500000.0);
    /* both forms: equal values are read (8 and 8.0 alike), others refused where they differ */
    set_key("rp", "rope_theta", json_integer(500000));
    set_key("rp", "rope_scaling", json_pack("{s:s, s:i, s:i, s:i, s:i}", "type", "llama3",
                                            "factor", 8, "low_freq_factor", 1,
                                            "high_freq_factor", 4,
                                            "original_max_position_embeddings", 8192));
    expect_config("rp", HLX_OK, NULL);
    set_key("rp", "rope_scaling", json_pack("{s:s, s:i}", "rope_type", "linear", "factor", 8));
    expect_config("rp", HLX_ERR_PARSE, "rope_type: contradicts rope_parameters (transformers "
                  "v5 takes rope_scaling where both are given");
    set_key("rp", "rope_scaling", json_pack("{s:s, s:i}", "rope_type", "llama3", "beta", 8));
    expect_config("rp", HLX_ERR_PARSE, "beta: is missing from rope_parameters");
    set_key("rp", "rope_scaling", NULL);
    expect_key("rp", "rope_theta", json_integer(10000), HLX_ERR_PARSE,
               "rope_theta: 10000 contradicts rope_parameters' rope_theta 500000", NULL);
    /* its keys checked as rope_scaling's, under its own name */
    set_key("rp", "rope_parameters", json_pack("{s:s, s:i, s:i}", "rope_type", "linear",
                                               "factor", 2, "beta_fast", 3));
    expect_config("rp", HLX_ERR_PARSE, "beta_fast: not a parameter of rope_parameters "
                  "\"linear\" (it takes factor)");
    set_key("rp", "rope_parameters", json_pack("{s:s, s:i}", "rope_type", "dynamic", "factor",
                                               2));
    expect_config("rp", HLX_ERR_PARSE, "rope_parameters: \"dynamic\" needs the top-level "
                  "max_position_embeddings");
    set_key("rp", "rope_parameters", json_pack("{s:s, s:i}", "rope_type", "ntk", "factor", 2));
    expect_config("rp", HLX_ERR_UNSUPPORTED, "\"ntk\" RoPE scaling is not implemented");
    set_key("rp", "rope_parameters", json_pack("{s:s, s:f}", "rope_type", "default",
                                               "partial_rotary_factor", 0.5));
    expect_config("rp", HLX_ERR_PARSE, "partial_rotary_factor: 0.5 is read for "
                  "Phi3ForCausalLM, GlmForCausalLM, Glm4ForCausalLM and Glm4MoeForCausalLM "
                  "only");
    /* Gemma's per-layer-type sets; not an object */
    set_key("rp", "rope_parameters", json_pack("{s:{s:s}, s:{s:s}}", "full_attention",
                                               "rope_type", "default", "sliding_attention",
                                               "rope_type", "default"));
    expect_config("rp", HLX_ERR_UNSUPPORTED, "full_attention: RoPE parameters per layer type");
    expect_key("rp", "rope_parameters", json_integer(3), HLX_ERR_PARSE,
               "rope_parameters: expected an object or null", json_null());
    expect_config("rp", HLX_OK, NULL);
    /* yarn without original_max_position_embeddings: max_position_embeddings, as
     * transformers takes it; neither: refused */
    set_key("rp", "rope_parameters", json_pack("{s:s, s:i}", "rope_type", "yarn", "factor", 4));
    set_key("rp", "max_position_embeddings", json_integer(4096));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.m.rope_kind == HLX_ROPE_YARN && cfg.m.rope_orig_ctx == 4096);
    set_key("rp", "max_position_embeddings", NULL);
    expect_config("rp", HLX_ERR_PARSE, "rope_parameters: required key "
                  "\"original_max_position_embeddings\" is missing, and there is no "
                  "max_position_embeddings");
    set_key("rp", "rope_parameters", json_null());
    /* Phi-3's share from rope_parameters, and against the top-level key */
    synth("rp3", "--family phi3 --shards 1");
    dir_of(dir, sizeof(dir), "rp3");
    set_key("rp3", "partial_rotary_factor", NULL);
    set_key("rp3", "rope_parameters", json_pack("{s:s, s:f, s:f}", "rope_type", "default",
                                                "rope_theta", 10000.0, "partial_rotary_factor",
                                                0.75));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_int_equal(cfg.m.rope_dim, 24);
    set_key("rp3", "partial_rotary_factor", json_real(0.5));
    expect_config("rp3", HLX_ERR_PARSE, "partial_rotary_factor: 0.5 contradicts "
                  "rope_parameters' partial_rotary_factor 0.75");
}

/* Every RoPE field of a and b is the same (one checkpoint read in two forms). */
static void assert_same_rope(const hlx_model_t *a, const hlx_model_t *b)
{
    assert_true(a->rope_kind == b->rope_kind && a->rope_theta == b->rope_theta &&
                a->rope_dim == b->rope_dim && a->rope_factor == b->rope_factor &&
                a->rope_orig_ctx == b->rope_orig_ctx && a->rope_low_freq == b->rope_low_freq &&
                a->rope_high_freq == b->rope_high_freq &&
                a->rope_beta_fast == b->rope_beta_fast &&
                a->rope_beta_slow == b->rope_beta_slow && a->rope_mscale == b->rope_mscale &&
                a->rope_mscale_all == b->rope_mscale_all &&
                a->rope_attn_factor == b->rope_attn_factor && a->rope_long == b->rope_long &&
                a->rope_yarn_exact == b->rope_yarn_exact &&
                a->rope_local_theta == b->rope_local_theta &&
                a->nope_pattern == b->nope_pattern && a->sliding_window == b->sliding_window &&
                a->sliding_pattern == b->sliding_pattern);
    assert_memory_equal(a->rope_short_factor, b->rope_short_factor,
                        sizeof(a->rope_short_factor));
    assert_memory_equal(a->rope_long_factor, b->rope_long_factor, sizeof(a->rope_long_factor));
}

/* transformers v5's rope_parameters per layer type: Gemma 3's and OLMo 3's full_attention
 * set read as the flat form is and their sliding_attention set as the windowed layers'
 * unscaled base, each to the same model as the legacy keys say; another class with layer
 * types reads two equal sets as one; what cannot be read is refused at its key. */
static void test_rope_per_type(void **state)
{
    static const char *const legacy[] = { "rope_theta", "rope_local_base_freq", "rope_scaling",
                                          NULL };
    hlx_model_t a;
    int i;

    (void)state;
    /* Gemma 3: linear (Gemma 3's releases) and yarn on the whole-context layers, the
     * windowed ones at 10000 and at a base of their own */
    synth("pg3", "--family gemma3 --shards 1");
    for (i = 0; i < 2; i++) {
        set_key("pg3", "rope_theta", json_real(1e6));
        set_key("pg3", "rope_local_base_freq", json_real(i ? 20000.0 : 10000.0));
        set_key("pg3", "rope_scaling",
                i ? json_pack("{s:s, s:f, s:i, s:f}", "rope_type", "yarn", "factor", 4.0,
                              "original_max_position_embeddings", 64, "beta_fast", 16.0)
                  : json_pack("{s:s, s:f}", "rope_type", "linear", "factor", 8.0));
        expect_config("pg3", HLX_OK, NULL);
        a = g_cfg.m;
        assert_true(a.rope_kind == (i ? HLX_ROPE_YARN : HLX_ROPE_LINEAR) &&
                    a.rope_local_theta == (i ? 20000.0 : 10000.0) && a.rope_theta == 1e6);
        drop_keys("pg3", legacy);
        set_key("pg3", "rope_parameters",
                i ? json_pack("{s:{s:s, s:f, s:i, s:f, s:f}, s:{s:s, s:f}}", "full_attention",
                              "rope_type", "yarn", "factor", 4.0,
                              "original_max_position_embeddings", 64, "beta_fast", 16.0,
                              "rope_theta", 1e6, "sliding_attention", "rope_type", "default",
                              "rope_theta", 20000.0)
                  : json_pack("{s:{s:s, s:f, s:f}, s:{s:s, s:f}}", "full_attention",
                              "rope_type", "linear", "factor", 8.0, "rope_theta", 1e6,
                              "sliding_attention", "rope_type", "default", "rope_theta",
                              10000.0));
        expect_config("pg3", HLX_OK, NULL);
        assert_same_rope(&a, &g_cfg.m);
        if (i == 0)
            set_key("pg3", "rope_parameters", NULL);
    }
    /* both forms agreeing are read; the sliding set's base wins nothing over another
     * rope_local_base_freq: refused */
    set_key("pg3", "rope_local_base_freq", json_integer(20000));
    expect_config("pg3", HLX_OK, NULL);
    assert_same_rope(&a, &g_cfg.m);
    expect_key("pg3", "rope_local_base_freq", json_real(10000.0), HLX_ERR_PARSE,
               "rope_local_base_freq: 10000 contradicts rope_parameters' sliding_attention "
               "rope_theta 20000", NULL);
    expect_key("pg3", "rope_theta", json_real(1e4), HLX_ERR_PARSE, "rope_theta: 10000 "
               "contradicts rope_parameters' full_attention rope_theta 1e+06", NULL);
    /* a legacy rope_scaling is the full_attention set's */
    expect_key("pg3", "rope_scaling", json_pack("{s:s, s:f}", "rope_type", "linear", "factor",
                                                8.0),
               HLX_ERR_PARSE, "rope_type: contradicts rope_parameters' "
               "full_attention set", NULL);
    /* the windowed layers turn unscaled: a scaling or another key of theirs is refused */
    set_key_in("pg3", "rope_parameters", "sliding_attention",
               json_pack("{s:s, s:f}", "rope_type", "linear", "factor", 2.0));
    expect_config("pg3", HLX_ERR_UNSUPPORTED, "rope_type: \"linear\": "
                  "Gemma3ForCausalLM turns its sliding_attention layers with one unscaled "
                  "table");
    set_key_in("pg3", "rope_parameters", "sliding_attention",
               json_pack("{s:s, s:f}", "rope_type", "default", "factor", 2.0));
    expect_config("pg3", HLX_ERR_UNSUPPORTED, "factor: not read: "
                  "Gemma3ForCausalLM turns its sliding_attention layers unscaled");
    set_key_in("pg3", "rope_parameters", "sliding_attention",
               json_pack("{s:s, s:f}", "rope_type", "default", "partial_rotary_factor", 0.5));
    expect_config("pg3", HLX_ERR_UNSUPPORTED, "partial_rotary_factor: differs from "
                  "full_attention's");
    /* no sliding set: rope_local_base_freq, as Gemma3TextConfig fills it (absent: 10000) */
    set_key_in("pg3", "rope_parameters", "sliding_attention", NULL);
    set_key("pg3", "rope_local_base_freq", NULL);
    expect_config("pg3", HLX_OK, NULL);
    assert_true(g_cfg.m.rope_local_theta == 10000.0 && g_cfg.m.rope_kind == HLX_ROPE_YARN);
    /* forms that cannot be read, each at its key */
    set_key_in("pg3", "rope_parameters", "sliding_attention",
               json_pack("{s:s, s:f}", "rope_type", "default", "rope_theta", 20000.0));
    set_key_in("pg3", "rope_parameters", "local_attention", json_object());
    expect_config("pg3", HLX_ERR_PARSE, "local_attention: not a layer type");
    set_key_in("pg3", "rope_parameters", "local_attention", NULL);
    set_key_in("pg3", "rope_parameters", "rope_theta", json_real(1e6));
    expect_config("pg3", HLX_ERR_PARSE, "rope_theta: not read beside "
                  "per-layer-type sets");
    set_key_in("pg3", "rope_parameters", "rope_theta", NULL);
    set_key_in("pg3", "rope_parameters", "full_attention", json_integer(3));
    expect_config("pg3", HLX_ERR_PARSE, "full_attention: expected an object, beside "
                  "per-layer-type sets");
    set_key_in("pg3", "rope_parameters", "full_attention", NULL);
    expect_config("pg3", HLX_ERR_PARSE, "rope_parameters: per-layer-type sets without "
                  "\"full_attention\"");
    set_key_in("pg3", "rope_parameters", "full_attention",
               json_pack("{s:s, s:f}", "rope_type", "default", "rope_theta", 1e6));
    expect_config("pg3", HLX_OK, NULL);
    assert_true(g_cfg.m.rope_kind == HLX_ROPE_NONE && g_cfg.m.rope_local_theta == 20000.0);
    /* a set for a type no layer is (every layer whole: sliding_window_pattern 1) */
    expect_key("pg3", "sliding_window_pattern", json_integer(1), HLX_ERR_PARSE,
               "sliding_attention: no layer is a sliding_attention one",
               json_integer(2));

    /* OLMo 3: yarn on the full_attention layers, the sliding_attention ones unscaled at
     * rope_theta, as the legacy form says; then at a base of their own */
    synth("po3", "--family olmo3 --shards 1");
    set_key("po3", "rope_scaling", json_pack("{s:s, s:f, s:i}", "rope_type", "yarn", "factor",
                                             4.0, "original_max_position_embeddings", 64));
    expect_config("po3", HLX_OK, NULL);
    a = g_cfg.m;
    assert_true(a.rope_kind == HLX_ROPE_YARN && a.rope_local_theta == a.rope_theta &&
                a.sliding_window == 6);
    drop_keys("po3", legacy);
    set_key("po3", "rope_parameters",
            json_pack("{s:{s:s, s:f, s:i, s:f}, s:{s:s, s:f}}", "full_attention", "rope_type",
                      "yarn", "factor", 4.0, "original_max_position_embeddings", 64,
                      "rope_theta", 10000.0, "sliding_attention", "rope_type", "default",
                      "rope_theta", 10000.0));
    expect_config("po3", HLX_OK, NULL);
    assert_same_rope(&a, &g_cfg.m);
    /* a set without its base: v5's Olmo3Config gives it its default_theta 500000, not
     * full_attention's (10000 here): refused; where full_attention's is 500000 the two
     * agree, and it is read */
    set_key_in("po3", "rope_parameters", "sliding_attention", json_pack("{s:s}", "rope_type",
                                                                        "default"));
    expect_config("po3", HLX_ERR_PARSE, "sliding_attention: no rope_theta: transformers v5's "
                  "Olmo3Config gives this set its default 500000, not full_attention's 10000");
    set_key_in("po3", "rope_parameters", "full_attention",
               json_pack("{s:s, s:f, s:i, s:f}", "rope_type", "yarn", "factor", 4.0,
                         "original_max_position_embeddings", 64, "rope_theta", 500000.0));
    expect_config("po3", HLX_OK, NULL);
    assert_true(g_cfg.m.rope_kind == HLX_ROPE_YARN && g_cfg.m.rope_theta == 500000.0 &&
                g_cfg.m.rope_local_theta == 500000.0);
    /* a top-level original_max_position_embeddings is not the nested set's (v5 gives a set
     * without one max_position_embeddings): refused where the two differ */
    set_key_in("po3", "rope_parameters", "full_attention",
               json_pack("{s:s, s:f, s:f}", "rope_type", "yarn", "factor", 4.0, "rope_theta",
                         10000.0));
    set_key_in("po3", "rope_parameters", "sliding_attention",
               json_pack("{s:s, s:f}", "rope_type", "default", "rope_theta", 10000.0));
    set_key("po3", "max_position_embeddings", json_integer(256));
    expect_key("po3", "original_max_position_embeddings", json_integer(64), HLX_ERR_PARSE,
               "original_max_position_embeddings: 64 beside per-layer-type rope_parameters, "
               "whose rope_parameters' full_attention set has none: transformers v5 gives "
               "that set max_position_embeddings (256)", json_integer(256));
    expect_config("po3", HLX_OK, NULL);
    assert_true(g_cfg.m.rope_kind == HLX_ROPE_YARN && g_cfg.m.rope_orig_ctx == 256);
    set_key("po3", "original_max_position_embeddings", NULL);
    set_key("po3", "max_position_embeddings", NULL);
    set_key_in("po3", "rope_parameters", "full_attention",
               json_pack("{s:s, s:f, s:i, s:f}", "rope_type", "yarn", "factor", 4.0,
                         "original_max_position_embeddings", 64, "rope_theta", 10000.0));
    set_key_in("po3", "rope_parameters", "sliding_attention",
               json_pack("{s:s, s:f}", "rope_type", "default", "rope_theta", 20000.0));
    expect_config("po3", HLX_OK, NULL);
    assert_true(g_cfg.m.rope_kind == HLX_ROPE_YARN && g_cfg.m.rope_theta == 10000.0 &&
                g_cfg.m.rope_local_theta == 20000.0);
    /* unscaled whole-context layers: a second base all the same, on the windowed layers */
    set_key_in("po3", "rope_parameters", "full_attention", json_pack("{s:f}", "rope_theta",
                                                                     10000.0));
    expect_config("po3", HLX_OK, NULL);
    assert_true(g_cfg.m.rope_kind == HLX_ROPE_NONE && g_cfg.m.rope_theta == 10000.0 &&
                g_cfg.m.rope_local_theta == 20000.0);
    expect_key("po3", "sliding_window", json_null(), HLX_ERR_UNSUPPORTED, "sliding_window: "
               "null beside the sliding_attention layers' own rope_theta 20000",
               json_integer(6));
    /* equal bases, no scaling: one table, as the legacy form without rope_scaling */
    set_key_in("po3", "rope_parameters", "sliding_attention",
               json_pack("{s:s, s:f}", "rope_type", "default", "rope_theta", 10000.0));
    expect_config("po3", HLX_OK, NULL);
    assert_true(g_cfg.m.rope_local_theta == 0.0 && g_cfg.m.rope_kind == HLX_ROPE_NONE);
    set_key_in("po3", "rope_parameters", "sliding_attention",
               json_pack("{s:s, s:f, s:i}", "rope_type", "yarn", "factor", 4.0,
                         "original_max_position_embeddings", 64));
    expect_config("po3", HLX_ERR_UNSUPPORTED, "rope_type: \"yarn\": "
                  "Olmo3ForCausalLM turns its sliding_attention layers with one unscaled table");
    set_key_in("po3", "rope_parameters", "sliding_attention", NULL);
    expect_config("po3", HLX_ERR_PARSE, "rope_parameters: per-layer-type sets without "
                  "\"sliding_attention\", which some layer is (layer_types)");
    set_key_in("po3", "rope_parameters", "sliding_attention", json_object());
    expect_key("po3", "layer_types", json_pack("[s, s]", "full_attention", "full_attention"),
               HLX_ERR_PARSE, "sliding_attention: no layer is a "
               "sliding_attention one (layer_types)",
               json_pack("[s, s]", "sliding_attention", "full_attention"));

    /* one flat set: v5's Gemma3TextConfig and Olmo3Config leave it unread (default sets
     * per layer type in its place): refused */
    set_key("pg3", "rope_parameters", json_pack("{s:s, s:f, s:f}", "rope_type", "linear",
                                                "factor", 8.0, "rope_theta", 1e6));
    expect_config("pg3", HLX_ERR_UNSUPPORTED, "rope_parameters: one set for every layer: "
                  "transformers v5's config of Gemma3ForCausalLM reads its full_attention and "
                  "sliding_attention sets alone");
    set_key("po3", "rope_parameters", json_pack("{s:s, s:f, s:i, s:f}", "rope_type", "yarn",
                                                "factor", 4.0,
                                                "original_max_position_embeddings", 64,
                                                "rope_theta", 10000.0));
    expect_config("po3", HLX_ERR_UNSUPPORTED, "rope_parameters: one set for every layer: "
                  "transformers v5's config of Olmo3ForCausalLM reads its full_attention and "
                  "sliding_attention sets alone");

    /* one set for every layer: Gemma 2 reads two equal sets, refuses two that differ; a
     * class without layer types refuses the form */
    synth("pg2", "--family gemma2 --shards 1");
    set_key("pg2", "rope_theta", NULL);
    set_key("pg2", "rope_parameters", json_pack("{s:{s:s, s:f}, s:{s:s, s:f}}",
                                                "full_attention", "rope_type", "default",
                                                "rope_theta", 20000.0, "sliding_attention",
                                                "rope_type", "default", "rope_theta", 20000.0));
    expect_config("pg2", HLX_OK, NULL);
    assert_true(g_cfg.m.rope_theta == 20000.0 && g_cfg.m.rope_kind == HLX_ROPE_NONE &&
                g_cfg.m.rope_local_theta == 0.0);
    set_key_in("pg2", "rope_parameters", "sliding_attention",
               json_pack("{s:s, s:f}", "rope_type", "default", "rope_theta", 10000.0));
    expect_config("pg2", HLX_ERR_UNSUPPORTED, "rope_theta: differs from "
                  "full_attention's set: Gemma2ForCausalLM turns every layer with one RoPE set");
    set_key_in("pg2", "rope_parameters", "sliding_attention", json_pack("{s:f}", "rope_theta",
                                                                        20000.0));
    expect_config("pg2", HLX_ERR_UNSUPPORTED, "rope_type: not in "
                  "sliding_attention's set");
}

/* rope_scaling: yarn with factor 4 and, when orig > 0, that original context */
static json_t *yarn4(int orig)
{
    return orig > 0 ? json_pack("{s:s, s:f, s:i}", "type", "yarn", "factor", 4.0,
                                "original_max_position_embeddings", orig)
                    : json_pack("{s:s, s:f}", "type", "yarn", "factor", 4.0);
}

/* yarn's keys as transformers and vLLM read them: the original context from the top level
 * (which vLLM and v5 write over rope_scaling's) or rope_scaling, else max_position_embeddings,
 * two that differ refused; the config's factor whatever max_position_embeddings says;
 * mscale and mscale_all_dim on GQA only as a pair; attention_factor in their place (GQA),
 * refused for MLA; truncate true read, false refused. */
static void test_rope_yarn_rules(void **state)
{
    double inv[64], ms;

    (void)state;
    synth("yr", "--family qwen2 --shards 1");
    set_key("yr", "max_position_embeddings", json_integer(32768));
    /* the top-level original context alone: read in place of max_position_embeddings */
    set_key("yr", "original_max_position_embeddings", json_integer(4096));
    set_key("yr", "rope_scaling", yarn4(0));
    expect_config("yr", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.rope_orig_ctx, 4096);
    /* the same in both places: read; different: refused at the top-level key */
    set_key("yr", "rope_scaling", yarn4(4096));
    expect_config("yr", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.rope_orig_ctx, 4096);
    set_key("yr", "original_max_position_embeddings", json_integer(8192));
    expect_config("yr", HLX_ERR_PARSE, "original_max_position_embeddings: 8192 contradicts "
                  "rope_scaling' original_max_position_embeddings 4096 (vLLM and transformers "
                  "v5 rotate with the top-level one");
    /* llama3 alike, and v5's rope_parameters */
    set_key("yr", "rope_scaling", json_pack("{s:s, s:f, s:i}", "rope_type", "llama3", "factor",
                                            8.0, "original_max_position_embeddings", 4096));
    expect_config("yr", HLX_ERR_PARSE, "original_max_position_embeddings: 8192 contradicts");
    set_key("yr", "rope_scaling", NULL);
    set_key("yr", "rope_parameters", json_pack("{s:s, s:f, s:i}", "rope_type", "yarn", "factor",
                                               4.0, "original_max_position_embeddings", 4096));
    expect_config("yr", HLX_ERR_PARSE, "8192 contradicts rope_parameters' "
                  "original_max_position_embeddings 4096");
    set_key("yr", "rope_parameters", NULL);
    set_key("yr", "original_max_position_embeddings", NULL);
    /* neither: max_position_embeddings, as transformers and vLLM under v5 take it */
    set_key("yr", "rope_scaling", yarn4(0));
    expect_config("yr", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.rope_orig_ctx, 32768);
    /* the factor as given, not max_position_embeddings / original (32768 / 4096 = 8): vLLM
     * and transformers since its fix of issue 38224 */
    set_key("yr", "rope_scaling", yarn4(4096));
    expect_config("yr", HLX_OK, NULL);
    assert_true(g_cfg.m.rope_factor == 4.0);
    hlx_model_rope_freqs(&g_cfg.m, 64, inv, &ms);
    assert_true(fabs(ms - (0.1 * log(4.0) + 1.0)) < 1e-12);
    /* mscale alone: not read by transformers' or vLLM's yarn (mscale(factor) stays) */
    set_key("yr", "rope_scaling", json_pack("{s:s, s:f, s:i, s:f}", "type", "yarn", "factor",
                                            4.0, "original_max_position_embeddings", 4096,
                                            "mscale", 3.0));
    expect_config("yr", HLX_OK, NULL);
    hlx_model_rope_freqs(&g_cfg.m, 64, inv, &ms);
    assert_true(fabs(ms - (0.1 * log(4.0) + 1.0)) < 1e-12);
    /* both: their ratio */
    set_key("yr", "rope_scaling", json_pack("{s:s, s:f, s:i, s:f, s:f}", "type", "yarn",
                                            "factor", 4.0, "original_max_position_embeddings",
                                            4096, "mscale", 1.0, "mscale_all_dim", 3.0));
    expect_config("yr", HLX_OK, NULL);
    hlx_model_rope_freqs(&g_cfg.m, 64, inv, &ms);
    assert_true(fabs(ms - (0.1 * log(4.0) + 1.0) / (0.3 * log(4.0) + 1.0)) < 1e-12);
    /* attention_factor: in place of both */
    set_key("yr", "rope_scaling", json_pack("{s:s, s:f, s:i, s:f, s:f, s:f}", "type", "yarn",
                                            "factor", 4.0, "original_max_position_embeddings",
                                            4096, "mscale", 1.0, "mscale_all_dim", 3.0,
                                            "attention_factor", 1.25));
    expect_config("yr", HLX_OK, NULL);
    hlx_model_rope_freqs(&g_cfg.m, 64, inv, &ms);
    assert_true(ms == 1.25);
    set_key("yr", "rope_scaling", json_pack("{s:s, s:f, s:i, s:f}", "type", "yarn", "factor",
                                            4.0, "original_max_position_embeddings", 4096,
                                            "attention_factor", 0.0));
    expect_config("yr", HLX_ERR_PARSE, "attention_factor: 0 is outside");
    /* truncate: true (the default) read, false (gpt-oss) read as the ramp's ends unrounded
     * (rope_yarn_exact: other frequencies inside the ramp, the same outside), refused for
     * MLA (DeepSeek's yarn rounds them), not a boolean refused */
    set_key("yr", "rope_scaling", json_pack("{s:s, s:f, s:i, s:b}", "type", "yarn", "factor",
                                            4.0, "original_max_position_embeddings", 4096,
                                            "truncate", 1));
    expect_config("yr", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.rope_yarn_exact, 0);
    hlx_model_rope_freqs(&g_cfg.m, 64, inv, &ms);
    {
        double rounded[64];
        int i, differ = 0;
        memcpy(rounded, inv, sizeof(rounded));
        set_key("yr", "rope_scaling", json_pack("{s:s, s:f, s:i, s:b}", "type", "yarn", "factor",
                                                4.0, "original_max_position_embeddings", 4096,
                                                "truncate", 0));
        expect_config("yr", HLX_OK, NULL);
        assert_int_equal(g_cfg.m.rope_yarn_exact, 1);
        hlx_model_rope_freqs(&g_cfg.m, 64, inv, &ms);
        for (i = 0; i < 32; i++)
            differ += inv[i] != rounded[i];
        assert_true(differ > 0 && inv[0] == rounded[0] && inv[31] == rounded[31]);
    }
    synth("ymla", "--family moe-mla --shards 1");
    set_key("ymla", "rope_scaling", json_pack("{s:s, s:f, s:i, s:b}", "type", "yarn", "factor",
                                              4.0, "original_max_position_embeddings", 4096,
                                              "truncate", 0));
    expect_config("ymla", HLX_ERR_UNSUPPORTED, "truncate: false (yarn's ramp between "
                  "unrounded pair indices) is not read for MLA");
    set_key("yr", "rope_scaling", json_pack("{s:s, s:f, s:i, s:i}", "type", "yarn", "factor",
                                            4.0, "original_max_position_embeddings", 4096,
                                            "truncate", 1));
    expect_config("yr", HLX_ERR_PARSE, "truncate: expected true or false");
    /* truncate belongs to yarn alone */
    set_key("yr", "rope_scaling", json_pack("{s:s, s:f, s:b}", "type", "linear", "factor", 4.0,
                                            "truncate", 1));
    expect_config("yr", HLX_ERR_PARSE, "truncate: not a parameter of rope_scaling \"linear\"");
    /* MLA: DeepSeek's yarn in vLLM reads no attention_factor, transformers' would */
    synth("yr-mla", "--family moe-mla --shards 1");
    set_key("yr-mla", "rope_scaling", json_pack("{s:s, s:f, s:i, s:f}", "type", "yarn",
                                                "factor", 40.0,
                                                "original_max_position_embeddings", 4096,
                                                "attention_factor", 1.25));
    expect_config("yr-mla", HLX_ERR_UNSUPPORTED, "attention_factor: not read for MLA");
}

/* yarn with factor f over original 4096, and beta_fast, beta_slow when fast > 0 */
static json_t *yarn_f(double f, double fast, double slow)
{
    return fast > 0 ? json_pack("{s:s, s:f, s:i, s:f, s:f}", "type", "yarn", "factor", f,
                                "original_max_position_embeddings", 4096, "beta_fast", fast,
                                "beta_slow", slow)
                    : json_pack("{s:s, s:f, s:i}", "type", "yarn", "factor", f,
                                "original_max_position_embeddings", 4096);
}

/* Factors below 1 and the other RoPE numbers a hostile config.json may hold: read where
 * transformers computes something defined (the same frequencies as its formulas), refused
 * at their key where it divides by zero, where a fraction would be cut or where the
 * implementations disagree (llama3's bands crossed). */
static void test_rope_hostile(void **state)
{
    double inv[64], ms, theta;
    int i;

    (void)state;
    synth("rh", "--family qwen2 --shards 1");
    /* yarn, factor 0.5: transformers' and vLLM's get_mscale gives 1 below factor 1, the
     * interpolated pairs turn 1 / 0.5 times as fast */
    set_key("rh", "rope_scaling", yarn_f(0.5, 0, 0));
    expect_config("rh", HLX_OK, NULL);
    theta = g_cfg.m.rope_theta;
    assert_true(g_cfg.m.rope_factor == 0.5);
    hlx_model_rope_freqs(&g_cfg.m, 32, inv, &ms);
    assert_true(ms == 1.0);
    /* the ramp over pairs 5..12 (32 and 1 turns over 4096 positions at base 10^4: 5.2 and
     * 11.3, rounded out); the first pairs kept, the last interpolated */
    assert_true(inv[0] == 1.0 && fabs(inv[15] - 2.0 * pow(theta, -30.0 / 32)) < 1e-15);
    /* with both mscale keys: their ratio, mscale(0.5, m) = 1 for each */
    set_key("rh", "rope_scaling", json_pack("{s:s, s:f, s:i, s:f, s:f}", "type", "yarn",
                                            "factor", 0.5, "original_max_position_embeddings",
                                            4096, "mscale", 2.0, "mscale_all_dim", 1.0));
    expect_config("rh", HLX_OK, NULL);
    hlx_model_rope_freqs(&g_cfg.m, 32, inv, &ms);
    assert_true(ms == 1.0);
    /* beta_fast below beta_slow: transformers warns and rotates with the ramp reversed (the
     * first pairs interpolated, the last kept), vLLM alike: read, the same frequencies */
    set_key("rh", "rope_scaling", yarn_f(4.0, 1.0, 32.0));
    expect_config("rh", HLX_OK, NULL);
    hlx_model_rope_freqs(&g_cfg.m, 32, inv, &ms);
    assert_true(inv[0] == 0.25 && inv[15] == pow(theta, -30.0 / 32));
    /* linear, llama3 and dynamic below 1: frequencies divided by the factor as given */
    set_key("rh", "rope_scaling", json_pack("{s:s, s:f}", "type", "linear", "factor", 0.5));
    expect_config("rh", HLX_OK, NULL);
    hlx_model_rope_freqs(&g_cfg.m, 32, inv, &ms);
    for (i = 0; i < 16; i++)
        assert_true(fabs(inv[i] - 2.0 * pow(theta, -2.0 * i / 32)) < 1e-15 * inv[i] + 1e-300);
    set_key("rh", "rope_scaling", json_pack("{s:s, s:f, s:i}", "rope_type", "llama3", "factor",
                                            0.5, "original_max_position_embeddings", 64));
    expect_config("rh", HLX_OK, NULL);
    hlx_model_rope_freqs(&g_cfg.m, 32, inv, &ms);
    assert_true(inv[0] == 1.0 && fabs(inv[15] - 2.0 * pow(theta, -30.0 / 32)) < 1e-15);
    set_key("rh", "max_position_embeddings", json_integer(64));
    set_key("rh", "rope_scaling", json_pack("{s:s, s:f}", "type", "dynamic", "factor", 0.5));
    expect_config("rh", HLX_OK, NULL);
    hlx_model_rope_freqs_at(&g_cfg.m, 32, 128, inv, &ms);
    /* base theta (0.5 x 128 / 64 - (0.5 - 1))^(32 / 30) = theta 1.5^(16/15) */
    assert_true(fabs(inv[1] - pow(theta * pow(1.5, 32.0 / 30), -2.0 / 32)) < 1e-15);
    /* an original context past max_position_embeddings: transformers warns for llama3 and
     * reads it, as yarn does */
    set_key("rh", "rope_scaling", yarn_f(4.0, 0, 0));
    expect_config("rh", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.rope_orig_ctx, 4096);
    set_key("rh", "max_position_embeddings", NULL);
    /* refused: a fraction of a position (transformers would take 4096.5 as given) */
    set_key("rh", "rope_scaling", json_pack("{s:s, s:f, s:f}", "type", "yarn", "factor", 4.0,
                                            "original_max_position_embeddings", 4096.5));
    expect_config("rh", HLX_ERR_PARSE, "original_max_position_embeddings: 4096.5 is not a "
                  "whole number of positions");
    set_key("rh", "original_max_position_embeddings", json_integer(4096));
    expect_config("rh", HLX_ERR_PARSE, "original_max_position_embeddings: 4096.5 is not a "
                  "whole number of positions");
    set_key("rh", "original_max_position_embeddings", NULL);
    set_key("rh", "rope_scaling", json_pack("{s:s, s:f, s:f}", "rope_type", "llama3", "factor",
                                            8.0, "original_max_position_embeddings", 8191.9));
    expect_config("rh", HLX_ERR_PARSE, "original_max_position_embeddings: 8191.9 is not a "
                  "whole number");
    /* llama3's bands crossed: transformers scales the band past original / low_freq_factor,
     * vLLM the one past original / high_freq_factor */
    set_key("rh", "rope_scaling", json_pack("{s:s, s:f, s:i, s:f, s:f}", "rope_type", "llama3",
                                            "factor", 8.0, "original_max_position_embeddings",
                                            8192, "low_freq_factor", 4.0, "high_freq_factor",
                                            1.0));
    expect_config("rh", HLX_ERR_PARSE, "high_freq_factor: 1 must be at least low_freq_factor 4");
    /* mscale below 0 is outside the bounds; rope_theta 1 divides yarn's ramp ends by 0 */
    set_key("rh", "rope_scaling", json_pack("{s:s, s:f, s:i, s:f, s:f}", "type", "yarn",
                                            "factor", 4.0, "original_max_position_embeddings",
                                            4096, "mscale", -1.0, "mscale_all_dim", 1.0));
    expect_config("rh", HLX_ERR_PARSE, "mscale: -1 is outside");
    set_key("rh", "rope_scaling", yarn_f(4.0, 0, 0));
    expect_key("rh", "rope_theta", json_real(1.0), HLX_ERR_PARSE, "rope_theta: 1 with yarn: "
               "its ramp's ends divide by ln rope_theta = 0", json_real(theta));
    set_key("rh", "rope_scaling", NULL);
    set_key("rh", "rope_theta", NULL);
    set_key("rh", "rope_parameters", json_pack("{s:s, s:f, s:i, s:f}", "rope_type", "yarn",
                                               "factor", 4.0,
                                               "original_max_position_embeddings", 4096,
                                               "rope_theta", 1.0));
    expect_config("rh", HLX_ERR_PARSE, "rope_theta: 1 with yarn");
    set_key("rh", "rope_parameters", NULL);
    set_key("rh", "rope_theta", json_real(1.0));
    expect_config("rh", HLX_OK, NULL); /* plain RoPE turns with it */
    /* MLA (DeepSeek's yarn): factor 0.5 leaves cos, sin and the softmax scale alone */
    synth("rh-mla", "--family moe-mla --shards 1");
    set_key("rh-mla", "rope_scaling", json_pack("{s:s, s:f, s:i, s:f, s:f}", "type", "yarn",
                                                "factor", 0.5,
                                                "original_max_position_embeddings", 4096,
                                                "mscale", 1.0, "mscale_all_dim", 1.0));
    expect_config("rh-mla", HLX_OK, NULL);
    hlx_model_rope_freqs(&g_cfg.m, g_cfg.m.rope_dim, inv, &ms);
    assert_true(ms == 1.0);
    assert_true(hlx_model_softmax_scale(&g_cfg.m, g_cfg.m.head_dim) ==
                1.0 / sqrt((double)g_cfg.m.head_dim));
}

/* max_position_embeddings: a whole number of positions in [1, 100000000] wherever given,
 * refused at its key (exit 2 from decode and model info) whether or not the model reads it;
 * absent, the kinds that need it say so. */
static void test_max_position(void **state)
{
    json_t *bad[] = { json_integer(0), json_integer(-1), json_real(1e30), json_string("abc"),
                      json_real(3.5), json_integer(100000001) };
    const char *why[] = { "0 is outside [1, 100000000]", "-1 is outside [1, 100000000]",
                          "expected an integer", "expected an integer", "expected an integer",
                          "100000001 is outside [1, 100000000]" };
    size_t i;

    (void)state;
    synth("mp", "--family dense --shards 1");
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char needle[96];
        snprintf(needle, sizeof(needle), "max_position_embeddings: %s", why[i]);
        expect_key("mp", "max_position_embeddings", bad[i], HLX_ERR_PARSE, needle, NULL);
    }
    set_key("mp", "max_position_embeddings", json_integer(0));
    refused("mp/config.json:", "max_position_embeddings: 0 is outside",
            "decode --model %s/mp --context 0 --steps 1", g_tmp);
    refused("mp/config.json:", "max_position_embeddings: 0 is outside", "model info %s/mp",
            g_tmp);
    /* where a kind reads it, the error is still at the key, not at rope_scaling */
    set_key("mp", "max_position_embeddings", json_string("abc"));
    set_key("mp", "rope_scaling", json_pack("{s:s, s:f}", "type", "dynamic", "factor", 2.0));
    expect_config("mp", HLX_ERR_PARSE, "max_position_embeddings: expected an integer");
    set_key("mp", "rope_scaling", json_pack("{s:s, s:f}", "type", "yarn", "factor", 4.0));
    expect_config("mp", HLX_ERR_PARSE, "max_position_embeddings: expected an integer");
    /* null is absent: yarn then has no original context */
    set_key("mp", "max_position_embeddings", json_null());
    expect_config("mp", HLX_ERR_PARSE, "rope_scaling: required key "
                  "\"original_max_position_embeddings\" is missing, and there is no "
                  "max_position_embeddings");
    set_key("mp", "max_position_embeddings", json_integer(100000000));
    expect_config("mp", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.rope_orig_ctx, 100000000);
}

/* dtype, torch_dtype's name in transformers v5: read alone, and against torch_dtype. */
static void test_dtype_key(void **state)
{
    char dir[512], err[1024];
    hlx_hf_config_t cfg;

    (void)state;
    synth("dt", "--family dense --dtype f32 --shards 1");
    dir_of(dir, sizeof(dir), "dt");
    set_key("dt", "torch_dtype", NULL);
    set_key("dt", "dtype", json_string("float32"));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_int_equal(cfg.m.weight_dtype, HLX_DTYPE_F32);
    /* the tensors are float32 as dtype says: the checkpoint opens and decodes */
    assert_int_equal(sh("timeout 60 %s decode --model %s --context 0 --steps 1 >/dev/null",
                        helix, dir), 0);
    set_key("dt", "torch_dtype", json_string("bfloat16"));
    expect_config("dt", HLX_ERR_PARSE, "torch_dtype: \"bfloat16\" contradicts dtype "
                  "\"float32\"");
    set_key("dt", "torch_dtype", json_string("float32"));
    expect_config("dt", HLX_OK, NULL);
    set_key("dt", "torch_dtype", NULL);
    set_key("dt", "dtype", json_string("float8"));
    expect_config("dt", HLX_ERR_PARSE, "dtype: \"float8\" is not supported");
}

/* n factors 1, 1.5, 2, ... (a JSON array) */
static json_t *factors(int n)
{
    json_t *a = json_array();
    int i;

    for (i = 0; i < n; i++)
        json_array_append_new(a, json_real(1.0 + 0.5 * i));
    return a;
}

/* rope_scaling longrope with both arrays of n factors and original 64 in rope_scaling, then
 * key set to v (NULL: removed) */
static void set_longrope(int n, const char *key, json_t *v)
{
    json_t *r = json_pack("{s:s, s:o, s:o, s:i}", "type", "longrope", "short_factor",
                          factors(n), "long_factor", factors(n),
                          "original_max_position_embeddings", 64);

    if (key != NULL && v != NULL)
        json_object_set_new(r, key, v);
    else if (key != NULL)
        json_object_del(r, key);
    set_key("lr", "rope_scaling", r);
}

/* longrope (Phi-3): arrays of rope_dim / 2 = 16 positive numbers (the dense synth has
 * head_dim 32), an original context at the top level or in rope_scaling, a whole number; a
 * factor below 1 read as transformers and vLLM read it (attention factor 1), an original
 * context of 1 under a default attention factor refused (ln 1 divides it) */
static void test_rope_longrope(void **state)
{
    json_t *a;

    (void)state;
    synth("lr", "--family dense --shards 1");
    set_longrope(16, NULL, NULL);
    expect_config("lr", HLX_OK, NULL);
    set_longrope(15, NULL, NULL);
    expect_config("lr", HLX_ERR_PARSE, "short_factor: 15 factors, expected 16 (one per rotated "
                  "pair: rope_dim 32 / 2)");
    refused("lr/config.json:", "short_factor: 15 factors, expected 16", "model info %s/lr",
            g_tmp);
    set_longrope(16, "long_factor", factors(17));
    expect_config("lr", HLX_ERR_PARSE, "long_factor: 17 factors, expected 16");
    set_longrope(16, "long_factor", NULL);
    expect_config("lr", HLX_ERR_PARSE, "rope_scaling: required key \"long_factor\" is missing "
                  "(longrope: 16 factors");
    set_longrope(16, "short_factor", json_real(1.0));
    expect_config("lr", HLX_ERR_PARSE, "short_factor: expected an array of 16 numbers");
    a = factors(16);
    json_array_set_new(a, 2, json_string("x"));
    set_longrope(16, "long_factor", a);
    expect_config("lr", HLX_ERR_PARSE, "long_factor: element 2 is not a number");
    a = factors(16);
    json_array_set_new(a, 0, json_real(0.0));
    set_longrope(16, "short_factor", a);
    expect_config("lr", HLX_ERR_PARSE, "short_factor: element 0 is 0: every factor must be a "
                  "positive, finite number");
    a = factors(16);
    json_array_set_new(a, 15, json_integer(-3));
    set_longrope(16, "long_factor", a);
    expect_config("lr", HLX_ERR_PARSE, "long_factor: element 15 is -3");
    /* keys: unknown (nearest name), another kind's, and the values of its own */
    set_longrope(16, "short_factors", json_true());
    expect_config("lr", HLX_ERR_PARSE, "short_factors: unknown key (did you mean "
                  "\"short_factor\"?); rope_scaling \"longrope\" takes factor, "
                  "original_max_position_embeddings, short_factor, long_factor, "
                  "attention_factor");
    set_longrope(16, "beta_fast", json_integer(32));
    expect_config("lr", HLX_ERR_PARSE, "beta_fast: not a parameter of rope_scaling "
                  "\"longrope\"");
    set_longrope(16, "factor", json_real(0.5));
    expect_config("lr", HLX_OK, NULL);
    assert_true(g_cfg.m.rope_factor == 0.5 && g_cfg.m.rope_attn_factor == 1.0);
    set_longrope(16, "factor", json_real(4.0));
    expect_config("lr", HLX_OK, NULL);
    assert_true(fabs(g_cfg.m.rope_attn_factor - sqrt(1.0 + log(4.0) / log(64.0))) < 1e-12);
    {
        json_t *r = json_pack("{s:s, s:o, s:o, s:i, s:f}", "type", "longrope", "short_factor",
                              factors(16), "long_factor", factors(16),
                              "original_max_position_embeddings", 1, "factor", 4.0);
        set_key("lr", "rope_scaling", json_deep_copy(r));
        expect_config("lr", HLX_ERR_PARSE, "original_max_position_embeddings: 1 "
                      "with the factor 4: longrope's attention factor sqrt(1 + ln factor / ln "
                      "original) divides by ln 1 = 0");
        json_object_set_new(r, "attention_factor", json_real(1.5)); /* given: nothing divides */
        set_key("lr", "rope_scaling", r);
        expect_config("lr", HLX_OK, NULL);
        assert_true(g_cfg.m.rope_attn_factor == 1.5);
    }
    set_longrope(16, "attention_factor", json_integer(-1));
    expect_config("lr", HLX_ERR_PARSE, "attention_factor: -1 is outside");
    set_longrope(16, "attention_factor", json_string("1.2"));
    expect_config("lr", HLX_ERR_PARSE, "attention_factor: expected a finite number");
    set_longrope(16, "original_max_position_embeddings", json_real(64.5));
    expect_config("lr", HLX_ERR_PARSE, "original_max_position_embeddings: 64.5 is not a whole "
                  "number");
    /* the original context: one of the two places */
    set_longrope(16, "original_max_position_embeddings", NULL);
    expect_config("lr", HLX_ERR_PARSE, "rope_scaling: longrope needs "
                  "original_max_position_embeddings, at the top level of config.json (Phi-3) "
                  "or in rope_scaling; neither has it");
    set_key("lr", "original_max_position_embeddings", json_integer(64));
    expect_config("lr", HLX_ERR_PARSE, "max_position_embeddings: required key is missing "
                  "(longrope with a top-level original_max_position_embeddings");
    /* below the original context: a factor of 0.5, attention factor 1 */
    set_key("lr", "max_position_embeddings", json_integer(32));
    expect_config("lr", HLX_OK, NULL);
    assert_true(g_cfg.m.rope_factor == 0.5 && g_cfg.m.rope_attn_factor == 1.0);
    set_key("lr", "max_position_embeddings", json_integer(2048));
    expect_config("lr", HLX_OK, NULL);
    assert_true(g_cfg.m.rope_factor == 32.0 && g_cfg.m.rope_orig_ctx == 64);
    expect_key("lr", "original_max_position_embeddings", json_integer(1), HLX_ERR_PARSE,
               "original_max_position_embeddings: 1 with the factor 2048: longrope's attention "
               "factor", json_integer(64));
    expect_key("lr", "max_position_embeddings", json_integer(0), HLX_ERR_PARSE,
               "max_position_embeddings: 0 is outside [1, 100000000]", json_integer(2048));
    /* rope_dim / 2 pairs from the model: the MLA family's qk_rope_head_dim 16 gives 8 */
    synth("lrmla", "--family moe-mla --shards 1");
    set_key("lrmla", "rope_scaling", json_pack("{s:s, s:o, s:o, s:i}", "rope_type", "longrope",
                                               "short_factor", factors(16), "long_factor",
                                               factors(8),
                                               "original_max_position_embeddings", 64));
    expect_config("lrmla", HLX_ERR_PARSE, "short_factor: 16 factors, expected 8 (one per "
                  "rotated pair: rope_dim 16 / 2)");
    /* a kind not implemented is refused; the message lists the kinds that are */
    set_key("lr", "rope_scaling", json_pack("{s:s, s:f}", "type", "ntk", "factor", 2.0));
    expect_config("lr", HLX_ERR_UNSUPPORTED, "rope_scaling: \"ntk\" RoPE scaling is not "
                  "implemented (linear, llama3, yarn, longrope and dynamic are;");
}

/* ---- Phi3ForCausalLM: fused projections, partial_rotary_factor --------------------- */

static hlx_status_t zero_fill(void *ctx, const hlx_hf_expect_t *t, size_t idx, int64_t row,
                              float *dst)
{
    int64_t j, cols = t->ndim == 2 ? t->shape[1] : t->shape[0];

    (void)ctx, (void)idx, (void)row;
    for (j = 0; j < cols; j++)
        dst[j] = 0.0f;
    return HLX_OK;
}

/* Writes the k tensors of l2 as checkpoint name with cfg's config.json (or base's, copied
 * over it when base is not NULL: a nested one), then hlx_hf_check must refuse it with needle
 * (NULL: accept it). */
static void write_and_check(const char *name, const hlx_hf_expect_t *l2, size_t k,
                            hlx_hf_config_t *cfg, const char *base, const char *needle)
{
    char dir[512], err[1024] = "";
    hlx_ckpt_t *ck = NULL;
    hlx_status_t st;

    dir_of(dir, sizeof(dir), name);
    assert_int_equal(sh("rm -rf %s", dir), 0);
    assert_int_equal(hlx_ckpt_write(dir, l2, k, 1, cfg, zero_fill, NULL, err, sizeof(err)),
                     HLX_OK);
    if (base != NULL) { /* hlx_ckpt_write writes the text model's flat config.json */
        assert_int_equal(sh("cp %s/%s/config.json %s/config.json", g_tmp, base, dir), 0);
        assert_int_equal(hlx_hf_config_load(dir, cfg, err, sizeof(err)), HLX_OK);
    }
    assert_int_equal(hlx_ckpt_open(dir, &ck, err, sizeof(err)), HLX_OK);
    hlx_hf_settle(ck, cfg);
    st = hlx_hf_check(ck, cfg);
    if (needle == NULL ? st != HLX_OK : st == HLX_OK || !strstr(hlx_ckpt_error(ck), needle))
        fail_msg("%s: status %d, '%s' (wanted '%s')", name, st, hlx_ckpt_error(ck),
                 needle ? needle : "accepted");
    hlx_ckpt_close(ck);
}

/* A checkpoint name with base's config whose tensor list is that config's with tensor drop
 * removed (NULL: none), tensor grow given `rows` rows, and tensor extra ([rows, H]) added;
 * then hlx_hf_check must refuse it with needle (NULL: accept it). */
static void ckpt_variant(const char *base, const char *name, const char *drop,
                         const char *grow, const char *extra, int64_t rows, const char *needle)
{
    char dir[512], err[1024] = "";
    hlx_hf_config_t cfg;
    hlx_hf_expect_t *list = NULL, *l2;
    size_t n = 0, i, k = 0;

    dir_of(dir, sizeof(dir), base);
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_int_equal(hlx_hf_expect(&cfg, &list, &n, err, sizeof(err)), HLX_OK);
    l2 = calloc(n + 1, sizeof(*l2));
    assert_non_null(l2);
    for (i = 0; i < n; i++) {
        if (drop != NULL && !strcmp(list[i].name, drop))
            continue;
        l2[k] = list[i];
        if (grow != NULL && !strcmp(list[i].name, grow))
            l2[k].shape[0] = rows;
        k++;
    }
    if (extra != NULL) {
        l2[k] = list[0];
        snprintf(l2[k].name, sizeof(l2[k].name), "%s", extra);
        l2[k].shape[0] = rows;
        l2[k++].shape[1] = cfg.m.hidden;
    }
    write_and_check(name, l2, k, &cfg, NULL, needle);
    free(l2);
    free(list);
}

static void test_phi3(void **state)
{
    char dir[512], err[1024];
    hlx_hf_config_t cfg;
    json_t *r;

    (void)state;
    synth("p3", "--family phi3 --shards 1");
    dir_of(dir, sizeof(dir), "p3");
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.fused);
    assert_string_equal(cfg.arch, "Phi3ForCausalLM");
    assert_int_equal(cfg.m.rope_dim, 32);
    assert_int_equal(sh("timeout 60 %s model info %s >/dev/null", helix, dir), 0);
    /* the inventory: qkv_proj [Q*d + 2*K*d, H] = [384, 256], gate_up_proj [2F, H] */
    ckpt_variant("p3", "p3ok", NULL, NULL, NULL, 0, NULL);
    ckpt_variant("p3", "p3miss", "model.layers.1.self_attn.qkv_proj.weight", NULL, NULL, 0,
                 "tensor model.layers.1.self_attn.qkv_proj.weight is missing");
    ckpt_variant("p3", "p3rows", NULL, "model.layers.0.self_attn.qkv_proj.weight", NULL, 256,
                 "model.layers.0.self_attn.qkv_proj.weight: shape [256, 256], expected "
                 "[384, 256]");
    ckpt_variant("p3", "p3gu", NULL, "model.layers.1.mlp.gate_up_proj.weight", NULL, 512,
                 "model.layers.1.mlp.gate_up_proj.weight: shape [512, 256], expected "
                 "[1024, 256]");
    ckpt_variant("p3", "p3left", NULL, NULL, "model.layers.0.self_attn.q_proj.weight", 256,
                 "tensor model.layers.0.self_attn.q_proj.weight is not part of a "
                 "Phi3ForCausalLM");
    ckpt_variant("p3", "p3left2", NULL, NULL, "model.layers.1.mlp.up_proj.weight", 512,
                 "tensor model.layers.1.mlp.up_proj.weight is not part of a Phi3ForCausalLM");
    /* a Llama checkpoint under a Phi-3 config: the fused tensors are missing */
    synth("p3llama", "--family dense --shards 1");
    set_key("p3llama", "architectures", json_pack("[s]", "Phi3ForCausalLM"));
    refused("self_attn.qkv_proj.weight is missing", NULL, "model info %s/p3llama", g_tmp);
    /* model_type alone; Phi3Config's defaults (rms_norm_eps 1e-5); Phi-3's other keys */
    set_key("p3", "architectures", NULL);
    set_key("p3", "rms_norm_eps", NULL);
    set_key("p3", "resid_pdrop", json_real(0.0));
    set_key("p3", "embd_pdrop", json_real(0.0));
    set_key("p3", "attention_dropout", json_real(0.0));
    set_key("p3", "bos_token_id", json_integer(1));
    set_key("p3", "pad_token_id", json_integer(32000));
    set_key("p3", "auto_map", json_pack("{s:s}", "AutoConfig", "configuration_phi3.Phi3Config"));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.fused);
    assert_true(cfg.m.norm_eps == 1e-5);
    /* hidden_act */
    expect_key("p3", "hidden_act", json_string("gelu_new"), HLX_ERR_PARSE,
               "hidden_act: \"gelu_new\" is not supported", json_string("silu"));
    /* partial_rotary_factor: head_dim 32 x factor, a whole even number */
    set_key("p3", "partial_rotary_factor", json_real(0.75));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_int_equal(cfg.m.rope_dim, 24);
    assert_int_equal(cfg.m.head_dim, 32);
    set_key("p3", "partial_rotary_factor", json_real(0.7));
    expect_config("p3", HLX_ERR_PARSE, "partial_rotary_factor: 0.7 x head_dim 32 = 22.4 "
                  "rotated elements per head, not a whole number");
    refused("config.json:", "partial_rotary_factor: 0.7", "model info %s", dir);
    set_key("p3", "partial_rotary_factor", json_real(0.46875));
    expect_config("p3", HLX_ERR_PARSE, "partial_rotary_factor: 0.46875 x head_dim 32 = 15 "
                  "rotated elements per head, odd (RoPE rotates pairs)");
    set_key("p3", "partial_rotary_factor", json_real(1.5));
    expect_config("p3", HLX_ERR_PARSE, "partial_rotary_factor: 1.5 is outside");
    /* longrope's arrays are rope_dim / 2 after the factor: 12 for 0.75 */
    set_key("p3", "partial_rotary_factor", json_real(0.75));
    set_key("p3", "original_max_position_embeddings", json_integer(4096));
    set_key("p3", "max_position_embeddings", json_integer(131072));
    r = json_pack("{s:s, s:o, s:o}", "type", "longrope", "short_factor", factors(12),
                  "long_factor", factors(12));
    set_key("p3", "rope_scaling", r);
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_int_equal(cfg.m.rope_kind, HLX_ROPE_LONGROPE);
    assert_true(cfg.m.rope_factor == 32.0);
    /* "su", longrope's name in the first Phi-3-128k configs, is the same kind */
    set_key("p3", "rope_scaling", json_pack("{s:s, s:o, s:o}", "type", "su", "short_factor",
                                            factors(12), "long_factor", factors(12)));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_int_equal(cfg.m.rope_kind, HLX_ROPE_LONGROPE);
    set_key("p3", "rope_scaling", json_pack("{s:s, s:o, s:o}", "type", "longrope",
                                            "short_factor", factors(16), "long_factor",
                                            factors(16)));
    expect_config("p3", HLX_ERR_PARSE, "short_factor: 16 factors, expected 12 (one per rotated "
                  "pair: rope_dim 24 / 2)");
    set_key("p3", "rope_scaling", NULL);
    /* sliding_window as Mistral's: Phi-3-mini-4k's 2047 under 4096 applies (and Phi-3 has no
     * use_sliding_window switch); the 128k variants' 262144 does not */
    set_key("p3", "max_position_embeddings", json_integer(4096));
    set_key("p3", "sliding_window", json_integer(2047));
    set_key("p3", "use_sliding_window", json_false());
    dir_of(dir, sizeof(dir), "p3");
    if (hlx_hf_config_load(dir, &cfg, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    assert_true(cfg.m.sliding_window == 2047 && cfg.m.sliding_pattern == 0);
    set_key("p3", "max_position_embeddings", json_integer(131072));
    set_key("p3", "sliding_window", json_integer(262144));
    if (hlx_hf_config_load(dir, &cfg, err, sizeof(err)) != HLX_OK)
        fail_msg("%s", err);
    assert_int_equal(cfg.m.sliding_window, 0);
}

/* ---- Qwen2ForCausalLM (q, k, v biases) and Qwen3ForCausalLM (q_norm, k_norm) --------- */

/* A checkpoint name written by `model synth args`, its config.json read into *cfg (which
 * must be of architecture arch); its directory in dir. */
static void synth_cfg(const char *name, const char *args, const char *arch, char *dir,
                      size_t len, hlx_hf_config_t *cfg)
{
    char err[1024];

    synth(name, args);
    dir_of(dir, len, name);
    assert_int_equal(hlx_hf_config_load(dir, cfg, err, sizeof(err)), HLX_OK);
    assert_string_equal(cfg->arch, arch);
}

static void test_qwen(void **state)
{
    char dir[512], args[1024];
    hlx_hf_config_t cfg;

    (void)state;
    synth_cfg("q2", "--family qwen2 --shards 1", "Qwen2ForCausalLM", dir, sizeof(dir), &cfg);
    assert_true(cfg.m.qkv_bias && !cfg.m.qk_norm && !cfg.fused);
    synth_cfg("q3", "--family qwen3 --shards 1", "Qwen3ForCausalLM", dir, sizeof(dir), &cfg);
    assert_true(!cfg.m.qkv_bias && cfg.m.qk_norm);
    /* the inventory: biases [Q*d] = [256] and [K*d] = [64]; head norms [d] = [32] */
    ckpt_variant("q2", "q2ok", NULL, NULL, NULL, 0, NULL);
    ckpt_variant("q2", "q2miss", "model.layers.1.self_attn.k_proj.bias", NULL, NULL, 0,
                 "tensor model.layers.1.self_attn.k_proj.bias is missing");
    ckpt_variant("q2", "q2rows", NULL, "model.layers.0.self_attn.q_proj.bias", NULL, 128,
                 "model.layers.0.self_attn.q_proj.bias: shape [128], expected [256]");
    ckpt_variant("q2", "q2left", NULL, NULL, "model.layers.0.self_attn.o_proj.bias", 1,
                 "tensor model.layers.0.self_attn.o_proj.bias is not part of a "
                 "Qwen2ForCausalLM");
    ckpt_variant("q3", "q3ok", NULL, NULL, NULL, 0, NULL);
    ckpt_variant("q3", "q3miss", "model.layers.0.self_attn.k_norm.weight", NULL, NULL, 0,
                 "tensor model.layers.0.self_attn.k_norm.weight is missing");
    ckpt_variant("q3", "q3rows", NULL, "model.layers.1.self_attn.q_norm.weight", NULL, 64,
                 "model.layers.1.self_attn.q_norm.weight: shape [64], expected [32]");
    ckpt_variant("q3", "q3left", NULL, NULL, "model.layers.1.self_attn.v_proj.bias", 1,
                 "tensor model.layers.1.self_attn.v_proj.bias is not part of a "
                 "Qwen3ForCausalLM");
    /* a Qwen2 checkpoint under a Llama config: the biases are left over, not ignored */
    synth("q2llama", "--family qwen2 --shards 1");
    set_key("q2llama", "architectures", json_pack("[s]", "LlamaForCausalLM"));
    refused("_proj.bias is not part of a LlamaForCausalLM", NULL, "model info %s/q2llama",
            g_tmp);
    /* a Llama checkpoint under a Qwen3 config: the head norms are missing */
    synth("q3llama", "--family dense --shards 1");
    set_key("q3llama", "architectures", json_pack("[s]", "Qwen3ForCausalLM"));
    refused("self_attn.q_norm.weight is missing", NULL, "model info %s/q3llama", g_tmp);
    /* attention_bias: Qwen2's class reads no such key; elsewhere it would bias o_proj too */
    set_key("q2", "attention_bias", json_true());
    expect_config("q2", HLX_OK, NULL);
    set_key("q3", "attention_bias", json_true());
    expect_config("q3", HLX_ERR_PARSE, "attention_bias: projection biases are not supported "
                  "for Qwen3ForCausalLM");
    set_key("q3", "attention_bias", json_false());
    /* model_type alone */
    set_key("q3", "architectures", NULL);
    expect_config("q3", HLX_OK, NULL);
    /* partial_rotary_factor is Phi-3's alone */
    set_key("q2", "partial_rotary_factor", json_real(0.5));
    expect_config("q2", HLX_ERR_PARSE, "partial_rotary_factor: 0.5 is read for "
                  "Phi3ForCausalLM, GlmForCausalLM, Glm4ForCausalLM and Glm4MoeForCausalLM "
                  "only (Qwen2ForCausalLM rotates whole heads)");
    set_key("q2", "partial_rotary_factor", json_real(1.0));
    expect_config("q2", HLX_OK, NULL);
    /* hidden_act holds for every dense family (Qwen2's default is silu too) */
    expect_key("q2", "hidden_act", json_string("gelu"), HLX_ERR_PARSE,
               "hidden_act: \"gelu\" is not supported", NULL);
    /* Qwen2.5-7B-Instruct-1M's keys: the window switched off, dual chunk attention (as vLLM
     * runs it) with chunks of 262144 - 8192 positions; vLLM's defaults for absent keys;
     * refused with a window switched on, with bad sizes and with a RoPE scaling */
    set_key("q2", "sliding_window", json_integer(32768));
    set_key("q2", "max_window_layers", json_integer(28));
    set_key("q2", "use_sliding_window", json_false());
    set_key("q2", "max_position_embeddings", json_integer(1010000));
    set_key("q2", "dual_chunk_attention_config",
            json_pack("{s:i, s:i, s:i}", "chunk_size", 262144, "local_size", 8192,
                      "original_max_position_embeddings", 262144));
    expect_config("q2", HLX_OK, NULL);
    assert_true(g_cfg.m.dca_chunk == 262144 && g_cfg.m.dca_local == 8192 &&
                g_cfg.m.dca_orig == 262144);
    set_key("q2", "dual_chunk_attention_config", json_object());
    expect_config("q2", HLX_OK, NULL);
    assert_true(g_cfg.m.dca_chunk == 8192 && g_cfg.m.dca_local == 1024 && g_cfg.m.dca_orig == 0);
    set_key("q2", "dual_chunk_attention_config", json_pack("{s:i}", "chunk_size", 1024));
    expect_config("q2", HLX_ERR_PARSE,
                  "local_size 1024 (vLLM's default, the key being absent) must be below "
                  "chunk_size 1024");
    set_key("q2", "dual_chunk_attention_config", json_pack("{s:s}", "chunk_size", "big"));
    expect_config("q2", HLX_ERR_PARSE, "chunk_size: expected an integer chunk size");
    set_key("q2", "dual_chunk_attention_config", json_pack("{s:i}", "local_size", -1));
    expect_config("q2", HLX_ERR_PARSE, "local_size: expected an integer local size");
    expect_key("q2", "dual_chunk_attention_config", json_integer(3), HLX_ERR_PARSE,
               "dual_chunk_attention_config: expected an object", json_null());
    expect_config("q2", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.dca_chunk, 0);
    set_key("q2", "dual_chunk_attention_config", json_object());
    set_key("q2", "rope_scaling", json_pack("{s:s, s:f}", "type", "linear", "factor", 2.0));
    expect_config("q2", HLX_ERR_PARSE, "dual chunk attention with rope_scaling \"linear\"");
    set_key("q2", "rope_scaling", NULL);
    set_key("q2", "use_sliding_window", json_true());
    expect_key("q2", "max_window_layers", json_integer(1), HLX_ERR_PARSE,
               "dual chunk attention with a sliding window", json_integer(28));
    set_key("q2", "use_sliding_window", json_false());
    /* vLLM reads it for Qwen2, Qwen2-MoE, Qwen3 and Qwen3-MoE alone: another class refuses */
    set_key("q2", "architectures", json_pack("[s]", "LlamaForCausalLM"));
    set_key("q2", "model_type", json_string("llama"));
    expect_config("q2", HLX_ERR_PARSE, "dual chunk attention is applied to Qwen2ForCausalLM");
    set_key("q2", "architectures", json_pack("[s]", "Qwen2ForCausalLM"));
    set_key("q2", "model_type", json_string("qwen2"));
    set_key("q2", "dual_chunk_attention_config", NULL);
    /* switched on (Qwen2Config, Qwen3Config): the layers from max_window_layers on, none
     * when it is at least num_hidden_layers (2 here); a window and a first layer of their
     * defaults (4096, 28) when absent; layer_types in max_window_layers' form instead */
    set_key("q2", "use_sliding_window", json_true());
    expect_config("q2", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.sliding_window, 0);
    set_key("q2", "max_window_layers", json_integer(1));
    expect_config("q2", HLX_OK, NULL);
    assert_true(g_cfg.m.sliding_window == 32768 && g_cfg.m.sliding_from == 1 &&
                g_cfg.m.sliding_pattern == 0);
    assert_true(hlx_model_layer_window(&g_cfg.m, 0) == 0 &&
                hlx_model_layer_window(&g_cfg.m, 1) == 32768);
    set_key("q2", "max_window_layers", json_integer(0));
    set_key("q2", "sliding_window", NULL);
    expect_config("q2", HLX_OK, NULL);
    assert_true(g_cfg.m.sliding_window == 4096 && g_cfg.m.sliding_from == 0);
    set_key("q2", "max_window_layers", NULL);
    expect_config("q2", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.sliding_window, 0); /* from layer 28 of 2 */
    set_key("q2", "layer_types", json_pack("[s, s]", "full_attention", "sliding_attention"));
    expect_config("q2", HLX_OK, NULL);
    assert_true(g_cfg.m.sliding_window == 4096 && g_cfg.m.sliding_from == 1);
    set_key("q2", "layer_types", json_pack("[s, s]", "sliding_attention", "full_attention"));
    expect_config("q2", HLX_ERR_PARSE, "layer_types[1]: layer 1 is \"full_attention\" after the "
                  "\"sliding_attention\" of layer 0");
    bad_layer_types("q2");
    /* the switch is checked even with no sliding_window to switch */
    expect_key("q2", "use_sliding_window", json_string("yes"), HLX_ERR_PARSE,
               "use_sliding_window: expected true or false", json_false());
    set_key("q2", "sliding_window", json_integer(32768));
    set_key("q2", "max_window_layers", json_integer(28));
    /* synth --model: a model with biases or head norms needs the family that holds them */
    refused("has qkv_bias, which LlamaForCausalLM does not hold; give --family qwen2", NULL,
            "model synth --family dense --model %s/tests/model/data/gqa_extras.json "
            "--out %s/never", HLX_SOURCE_ROOT, g_tmp);
    assert_false(exists("never"));
    refused("has post_norms, which LlamaForCausalLM does not hold (--family glm4 writes them",
            NULL, "model synth --family dense --model %s/tests/model/data/post_norms.json "
            "--out %s/never", HLX_SOURCE_ROOT, g_tmp);
    assert_false(exists("never"));
    /* Gemma's pieces (soft-capping here) would be dropped from the checkpoint silently */
    refused("has attn_softcap, which Qwen2ForCausalLM does not hold (--family gemma2, "
            "gemma3 and granite write Gemma's and Granite's layers", NULL, "model synth "
            "--family qwen2 --model %s/tests/model/data/softcap.json --out %s/never",
            HLX_SOURCE_ROOT, g_tmp);
    assert_false(exists("never"));
    /* Granite's multipliers likewise; and granite takes its own shapes */
    refused("has embed_mult, which LlamaForCausalLM does not hold", NULL, "model synth "
            "--family dense --model %s/tests/model/data/granite_mults.json --out %s/never",
            HLX_SOURCE_ROOT, g_tmp);
    assert_false(exists("never"));
    /* and Gemma's families: their layer is more than the description (gemma decoded
     * otherwise than tiny, gemma2 and gemma3 wrote checkpoints their reader refused:
     * query_pre_attn_scalar 0) */
    {
        static const char *const own[] = { "granite", "gemma", "gemma2", "gemma3" };
        size_t f;
        for (f = 0; f < sizeof(own) / sizeof(own[0]); f++) {
            refused("--model: only with --family dense, phi3, internlm2, qwen2, qwen3 or "
                    "smollm3", NULL, "model synth --family %s --model tiny --out %s/never",
                    own[f], g_tmp);
            assert_false(exists("never"));
        }
    }
    /* --ep on a dense checkpoint: said so (it read "must divide the 0 routed experts") */
    synth("epdense", "--family dense");
    refused("--ep 2: LlamaForCausalLM has no routed experts (its FFNs are dense", "use 1",
            "model info %s/epdense --ep 2", g_tmp);
    refused("has sliding_window, which LlamaForCausalLM does not hold (--family phi3 writes a "
            "window on every layer)", NULL, "model synth --family dense --model "
            "%s/tests/model/data/window.json --out %s/never", HLX_SOURCE_ROOT, g_tmp);
    assert_false(exists("never"));
    /* NoPE layers: SmolLM3's no_rope_layers hold them (it was refused as well), Llama's
     * config not */
    refused("has nope_pattern (layers without RoPE), which LlamaForCausalLM does not hold; "
            "give --family smollm3", NULL, "model synth --family dense --model "
            "%s/tests/model/data/nope.json --out %s/never", HLX_SOURCE_ROOT, g_tmp);
    assert_false(exists("never"));
    snprintf(args, sizeof(args), "--family smollm3 --shards 1 --model "
             "%s/tests/model/data/nope.json", HLX_SOURCE_ROOT);
    synth_cfg("s3", args, "SmolLM3ForCausalLM", dir, sizeof(dir), &cfg);
    assert_int_equal(cfg.m.layers, 3);
    assert_int_equal(cfg.m.nope_pattern, 2);
    assert_int_equal(cfg.m.hidden, 64);
    /* model info --json says the pattern, as its text does */
    {
        char path[640];
        json_error_t je;
        json_t *o;
        snprintf(path, sizeof(path), "%s/s3info.json", g_tmp);
        assert_int_equal(sh("%s model info %s --json > %s", helix, dir, path), 0);
        o = json_load_file(path, 0, &je);
        assert_non_null(o);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "model"),
                                                            "nope_pattern")), 2);
        json_decref(o);
    }
    /* SmolLM3Config's defaults where the keys are absent: 4 KV heads whatever the query
     * heads (8 here; LlamaConfig's all was taken), rope_theta 2e6, tied */
    synth_cfg("s3d", "--family smollm3 --shards 1", "SmolLM3ForCausalLM", dir, sizeof(dir),
              &cfg);
    assert_int_equal(cfg.m.q_heads, 8);
    set_key("s3d", "num_key_value_heads", NULL);
    set_key("s3d", "rope_theta", NULL);
    set_key("s3d", "tie_word_embeddings", NULL);
    expect_config("s3d", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.kv_heads, 4);
    assert_true(g_cfg.m.rope_theta == 2e6 && g_cfg.tie_word_embeddings);
    /* use_sliding_window windows SmolLM3's NoPE layers (not Qwen's max_window_layers on):
     * refused saying so; beside no sliding_window it windows nothing */
    set_key("s3d", "use_sliding_window", json_true());
    set_key("s3d", "sliding_window", json_integer(4));
    expect_config("s3d", HLX_ERR_INVALID, "use_sliding_window: true windows the layers "
                  "without RoPE (no_rope_layers' 0s: a window of 4 tokens");
    set_key("s3d", "sliding_window", json_null());
    expect_config("s3d", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.sliding_window, 0);
    /* the switch off when absent (SmolLM3Config's False): a window beside it is not read */
    set_key("s3d", "use_sliding_window", NULL);
    set_key("s3d", "sliding_window", json_integer(4));
    expect_config("s3d", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.sliding_window, 0);
}

/* Qwen3MoeForCausalLM: Qwen3's attention, experts after mlp_only_layers' prefix. */
static void test_qwen3_moe(void **state)
{
    char dir[512], err[1024];
    hlx_hf_config_t cfg;

    (void)state;
    synth_cfg("qm", "--family qwen3-moe --shards 1", "Qwen3MoeForCausalLM", dir, sizeof(dir),
              &cfg);
    assert_true(cfg.moe_gqa && cfg.m.qk_norm && cfg.m.attn == HLX_ATTN_GQA);
    assert_int_equal(cfg.m.experts, 8);
    assert_int_equal(cfg.m.top_k, 2);
    assert_int_equal(cfg.m.expert_ffn, 64);
    assert_int_equal(cfg.m.dense_layers, 1); /* mlp_only_layers [0] */
    assert_int_equal(cfg.m.shared_experts, 0);
    assert_int_equal(cfg.m.moe_scoring, HLX_MOE_SOFTMAX);
    assert_true(cfg.m.norm_topk_prob);
    /* use_sliding_window off when absent (Qwen3MoeConfig's and Qwen2MoeConfig's False): a
     * sliding_window beside it is not read, where it was refused as Mistral's alone */
    set_key("qm", "use_sliding_window", NULL);
    set_key("qm", "sliding_window", json_integer(4));
    expect_config("qm", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.sliding_window, 0);
    set_key("qm", "sliding_window", json_null());
    /* the inventory: layer 0's dense mlp, layer 1's router [8, 256] and experts */
    ckpt_variant("qm", "qmok", NULL, NULL, NULL, 0, NULL);
    ckpt_variant("qm", "qmmiss", "model.layers.1.mlp.experts.7.down_proj.weight", NULL, NULL, 0,
                 "tensor model.layers.1.mlp.experts.7.down_proj.weight is missing");
    ckpt_variant("qm", "qmrouter", NULL, "model.layers.1.mlp.gate.weight", NULL, 4,
                 "model.layers.1.mlp.gate.weight: shape [4, 256], expected [8, 256]");
    ckpt_variant("qm", "qmdense", NULL, NULL, "model.layers.1.mlp.gate_proj.weight", 512,
                 "tensor model.layers.1.mlp.gate_proj.weight is not part of a "
                 "Qwen3MoeForCausalLM");
    ckpt_variant("qm", "qmshared", NULL, NULL,
                 "model.layers.1.mlp.shared_experts.gate_proj.weight", 64,
                 "shared_experts.gate_proj.weight is not part of a Qwen3MoeForCausalLM");
    /* Qwen3MoeConfig's defaults: norm_topk_prob false, decoder_sparse_step 1, no
     * mlp_only_layers (every layer routed: layer 0's dense mlp is then left over) */
    set_key("qm", "norm_topk_prob", NULL);
    set_key("qm", "decoder_sparse_step", NULL);
    set_key("qm", "mlp_only_layers", NULL);
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_false(cfg.m.norm_topk_prob);
    assert_int_equal(cfg.m.dense_layers, 0);
    refused("model.layers.0.mlp.", "is missing", "model info %s", dir);
    /* what the runtime cannot place: dense layers other than a prefix */
    set_key("qm", "mlp_only_layers", json_pack("[i]", 1));
    expect_config("qm", HLX_ERR_UNSUPPORTED, "mlp_only_layers: element 0 is 1: dense layers "
                  "other than the first ones are not supported");
    set_key("qm", "mlp_only_layers", json_pack("[i]", 0));
    set_key("qm", "decoder_sparse_step", json_integer(2));
    expect_config("qm", HLX_ERR_UNSUPPORTED, "decoder_sparse_step: 2: experts in every 2-th "
                  "layer only are not supported");
    refused("config.json:", "decoder_sparse_step: 2", "model info %s", dir);
    set_key("qm", "decoder_sparse_step", json_integer(1));
    expect_key("qm", "num_experts_per_tok", json_integer(9), HLX_ERR_PARSE,
               "num_experts_per_tok: 9 exceeds num_experts 8", json_integer(2));
    set_key("qm", "num_experts", NULL);
    expect_config("qm", HLX_ERR_PARSE, "num_experts");
    /* 10^8 experts: refused before a list of 6 x 10^8 tensors is built (it took all of
     * memory), by model info with and without the safetensors, and by decode */
    set_key("qm", "num_experts", json_integer(100000000));
    refused("qm/config.json: 2 layers of 100000000 experts describe up to", NULL,
            "model info %s --config-only", dir);
    refused("qm/config.json: 2 layers of 100000000 experts describe up to", NULL,
            "model info %s", dir);
    refused("more than the 1048576 a checkpoint is read with", NULL,
            "decode --model %s --context 0 --steps 1", dir);
    set_key("qm", "num_experts", json_integer(8));
    expect_config("qm", HLX_OK, NULL);
}

/* Qwen2MoeForCausalLM: Qwen2's biases, Qwen3-MoE's routing, one shared expert of
 * shared_expert_intermediate_size (whole experts of moe_intermediate_size) under
 * mlp.shared_expert.*, and its gate mlp.shared_expert_gate [1, H]. */
static void test_qwen2_moe(void **state)
{
    char dir[512], name[160];
    hlx_hf_config_t cfg;

    (void)state;
    synth_cfg("q2m", "--family qwen2-moe --shards 1", "Qwen2MoeForCausalLM", dir, sizeof(dir),
              &cfg);
    assert_true(cfg.moe_gqa == HLX_HF_MOE_QWEN2 && cfg.m.qkv_bias && !cfg.m.qk_norm);
    assert_int_equal(cfg.m.experts, 8);
    assert_int_equal(cfg.m.top_k, 4);
    assert_int_equal(cfg.m.dense_layers, 0);
    assert_int_equal(cfg.m.shared_experts, 2); /* 128 / 64 */
    assert_int_equal(cfg.m.shared_gate, 1);
    assert_false(cfg.m.norm_topk_prob);
    /* the runtime's shared_experts keys read Qwen2-MoE's shared_expert */
    hlx_hf_ckpt_name(&cfg, "model.layers.1.mlp.shared_experts.down_proj.weight", name,
                     sizeof(name));
    assert_string_equal(name, "model.layers.1.mlp.shared_expert.down_proj.weight");
    hlx_hf_ckpt_name(&cfg, "model.layers.1.mlp.shared_expert_gate.weight", name, sizeof(name));
    assert_string_equal(name, "model.layers.1.mlp.shared_expert_gate.weight");
    ckpt_variant("q2m", "q2mok", NULL, NULL, NULL, 0, NULL);
    ckpt_variant("q2m", "q2mgate", "model.layers.1.mlp.shared_expert_gate.weight", NULL, NULL,
                 0, "tensor model.layers.1.mlp.shared_expert_gate.weight is missing");
    ckpt_variant("q2m", "q2mgrow", NULL, "model.layers.0.mlp.shared_expert_gate.weight", NULL,
                 2, "model.layers.0.mlp.shared_expert_gate.weight: shape [2, 256], expected "
                 "[1, 256]");
    ckpt_variant("q2m", "q2mds", NULL, NULL,
                 "model.layers.1.mlp.shared_experts.gate_proj.weight", 128,
                 "shared_experts.gate_proj.weight is not part of a Qwen2MoeForCausalLM");
    ckpt_variant("q2m", "q2mbias", "model.layers.0.self_attn.k_proj.bias", NULL, NULL, 0,
                 "tensor model.layers.0.self_attn.k_proj.bias is missing");
    /* a shared expert that is not whole experts; none at all */
    set_key("q2m", "shared_expert_intermediate_size", json_integer(96));
    expect_config("q2m", HLX_ERR_UNSUPPORTED, "shared_expert_intermediate_size: 96 is not a "
                  "multiple of moe_intermediate_size 64");
    set_key("q2m", "shared_expert_intermediate_size", NULL);
    /* MXFP4 is gpt-oss's form only */
    set_key("q2m", "quantization_config", json_pack("{s:s}", "quant_method", "mxfp4"));
    expect_config("q2m", HLX_ERR_UNSUPPORTED, "quant_method: \"mxfp4\" is read for "
                  "GptOssForCausalLM's experts only, not Qwen2MoeForCausalLM's");
    set_key("q2m", "quantization_config", NULL);
    expect_config("q2m", HLX_ERR_PARSE, "shared_expert_intermediate_size");
    expect_key("q2m", "shared_expert_intermediate_size", json_integer(0), HLX_ERR_PARSE,
               "shared_expert_intermediate_size", json_integer(192));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, name, sizeof(name)), HLX_OK);
    assert_int_equal(cfg.m.shared_experts, 3);
}

/* GlmForCausalLM (the -hf checkpoints of GLM-4-9B, GLM-4-9B-Chat-1M): Llama's names with
 * gate_up_proj fused, q, k and v biases by attention_bias (true by default), RoPE in pairs
 * over partial_rotary_factor (0.5 by default) of each head; GlmConfig's defaults. */
static void test_glm(void **state)
{
    char dir[512], err[1024];
    hlx_hf_config_t cfg;

    (void)state;
    synth_cfg("glm", "--family glm --shards 1", "GlmForCausalLM", dir, sizeof(dir), &cfg);
    assert_int_equal(cfg.fused, HLX_HF_FUSED_GU | HLX_HF_ROPE_PAIRS);
    assert_true(cfg.m.qkv_bias && !cfg.m.qk_norm);
    assert_int_equal(cfg.m.rope_dim, 16); /* 0.5 x 32 */
    ckpt_variant("glm", "glmok", NULL, NULL, NULL, 0, NULL);
    ckpt_variant("glm", "glmsplit", NULL, NULL, "model.layers.0.mlp.gate_proj.weight", 512,
                 "tensor model.layers.0.mlp.gate_proj.weight is not part of a GlmForCausalLM");
    ckpt_variant("glm", "glmqkv", NULL, NULL, "model.layers.0.self_attn.qkv_proj.weight", 384,
                 "tensor model.layers.0.self_attn.qkv_proj.weight is not part of a "
                 "GlmForCausalLM");
    ckpt_variant("glm", "glmbias", "model.layers.1.self_attn.v_proj.bias", NULL, NULL, 0,
                 "tensor model.layers.1.self_attn.v_proj.bias is missing");
    /* GlmConfig's defaults: attention_bias true, partial_rotary_factor 0.5, 2 KV heads of
     * 128, rms_norm_eps 1.5625e-7 */
    set_key("glm", "attention_bias", NULL);
    set_key("glm", "partial_rotary_factor", NULL);
    set_key("glm", "rms_norm_eps", NULL);
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.m.qkv_bias && cfg.m.rope_dim == 16 && cfg.m.norm_eps == 1.5625e-7);
    set_key("glm", "num_key_value_heads", NULL);
    set_key("glm", "head_dim", NULL);
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.m.kv_heads == 2 && cfg.m.head_dim == 128 && cfg.m.rope_dim == 64);
    refused("q_proj.weight: shape [256, 256], expected [1024, 256]", NULL, "model info %s",
            dir); /* the tensors are of head 32 */
    set_key("glm", "num_key_value_heads", json_integer(2));
    set_key("glm", "head_dim", json_integer(32));
    /* no biases: the checkpoint's are then left over */
    set_key("glm", "attention_bias", json_false());
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_false(cfg.m.qkv_bias);
    refused("_proj.bias is not part of a GlmForCausalLM", NULL, "model info %s", dir);
    set_key("glm", "attention_bias", json_true());
    set_key("glm", "partial_rotary_factor", json_real(0.3));
    expect_config("glm", HLX_ERR_PARSE, "partial_rotary_factor: 0.3 x head_dim 32 = 9.6 "
                  "rotated elements per head, not a whole number");
    set_key("glm", "partial_rotary_factor", json_real(0.5));
    expect_config("glm", HLX_OK, NULL);
}

/* Glm4ForCausalLM (GLM-4-0414): GLM's layout and defaults plus the two output norms. */
static void test_glm4(void **state)
{
    char dir[512], err[1024];
    hlx_hf_config_t cfg;
    hlx_hf_weight_t w;
    int layer;

    (void)state;
    synth_cfg("glm4", "--family glm4 --shards 1", "Glm4ForCausalLM", dir, sizeof(dir), &cfg);
    assert_int_equal(cfg.fused, HLX_HF_FUSED_GU | HLX_HF_ROPE_PAIRS);
    assert_true(cfg.m.qkv_bias && !cfg.m.qk_norm && cfg.m.post_norms);
    assert_int_equal(cfg.m.rope_dim, 16);
    ckpt_variant("glm4", "glm4ok", NULL, NULL, NULL, 0, NULL);
    ckpt_variant("glm4", "glm4nopost", "model.layers.1.post_mlp_layernorm.weight", NULL, NULL,
                 0, "tensor model.layers.1.post_mlp_layernorm.weight is missing");
    /* each norm is its own runtime weight, and only these two names are */
    assert_int_equal(hlx_hf_weight_parse("model.layers.3.post_self_attn_layernorm.weight", &w,
                                         &layer), 0);
    assert_true(w == HLX_HFW_POST_ATTN_NORM && layer == 3);
    assert_int_equal(hlx_hf_weight_parse("model.layers.0.post_mlp_layernorm.weight", &w,
                                         &layer), 0);
    assert_true(w == HLX_HFW_POST_FFN_NORM && layer == 0);
    /* GLM (-hf) holds none: there they are left over */
    set_key("glm4", "architectures", json_pack("[s]", "GlmForCausalLM"));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_false(cfg.m.post_norms);
    refused("layernorm.weight is not part of a GlmForCausalLM", NULL,
            "model info %s", dir);
    set_key("glm4", "architectures", NULL);
    set_key("glm4", "model_type", json_string("glm4"));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.m.post_norms && !strcmp(cfg.arch, "Glm4ForCausalLM"));
}

/* hlx_hf_check of checkpoint name (its own config.json, after hlx_hf_settle): the status,
 * the settled config in *cfg. */
static hlx_status_t check_dir(const char *name, hlx_hf_config_t *cfg, char *err, size_t len)
{
    char dir[512];
    hlx_ckpt_t *ck = NULL;
    hlx_status_t st;

    dir_of(dir, sizeof(dir), name);
    assert_int_equal(hlx_hf_config_load(dir, cfg, err, len), HLX_OK);
    assert_int_equal(hlx_ckpt_open(dir, &ck, err, len), HLX_OK);
    hlx_hf_settle(ck, cfg);
    st = hlx_hf_check(ck, cfg);
    snprintf(err, len, "%s", st == HLX_OK ? "" : hlx_ckpt_error(ck));
    hlx_ckpt_close(ck);
    return st;
}

/* Glm4MoeForCausalLM (GLM-4.5, 4.5-Air, 4.6): GQA with q, k, v biases (attention_bias) and
 * head norms (use_qk_norm), rotate_half over half of each head, DeepSeek-V3's MoE after
 * first_k_dense_replace dense layers (sigmoid gate with its F32 e_score_correction_bias,
 * shared experts of moe_intermediate_size x n_shared_experts), the multi-token-prediction
 * layers (num_nextn_predict_layers) left out; Glm4MoeConfig's defaults for absent keys. */
static void test_glm4_moe(void **state)
{
    static const char *const defaulted[] = {
        "num_key_value_heads", "attention_bias", "use_qk_norm", "n_routed_experts",
        "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
        "first_k_dense_replace", "norm_topk_prob", "routed_scaling_factor", "n_group",
        "topk_group", "partial_rotary_factor", "rms_norm_eps", "num_nextn_predict_layers", NULL
    };
    char dir[512], err[1024], name[160];
    hlx_hf_config_t cfg;
    hlx_hf_expect_t *list = NULL;
    size_t n = 0, i;
    int bias_f32 = 0;

    (void)state;
    synth_cfg("g45", "--family glm4-moe --shards 1", "Glm4MoeForCausalLM", dir, sizeof(dir),
              &cfg);
    assert_int_equal(cfg.moe_gqa, HLX_HF_MOE_GLM4);
    assert_int_equal(cfg.fused, 0); /* rotate_half's halves, separate projections */
    assert_true(cfg.m.qkv_bias && cfg.m.qk_norm && cfg.m.attn == HLX_ATTN_GQA);
    assert_int_equal(cfg.m.rope_dim, 16);
    assert_int_equal(cfg.m.experts, 8);
    assert_int_equal(cfg.m.top_k, 2);
    assert_int_equal(cfg.m.expert_ffn, 64);
    assert_int_equal(cfg.m.shared_experts, 2);
    assert_int_equal(cfg.m.dense_layers, 1);
    assert_int_equal(cfg.m.moe_scoring, HLX_MOE_SIGMOID);
    assert_true(cfg.m.norm_topk_prob && cfg.m.routed_scaling == 2.5);
    assert_int_equal(cfg.mtp_layers, 1);
    /* the inventory: the correction bias in F32 beside bf16 weights; shared experts of
     * 2 x 64 rows under DeepSeek's names, read by the runtime's own keys */
    assert_int_equal(hlx_hf_expect(&cfg, &list, &n, err, sizeof(err)), HLX_OK);
    for (i = 0; i < n; i++)
        if (!strcmp(list[i].name, "model.layers.1.mlp.gate.e_score_correction_bias"))
            bias_f32 = list[i].dtype == HLX_ST_F32 && list[i].shape[0] == 8;
    free(list);
    assert_true(bias_f32);
    hlx_hf_ckpt_name(&cfg, "model.layers.1.mlp.shared_experts.down_proj.weight", name,
                     sizeof(name));
    assert_string_equal(name, "model.layers.1.mlp.shared_experts.down_proj.weight");
    /* the synth's MTP layer 2 (a whole MoE layer plus eh_proj, enorm, hnorm, shared_head):
     * left out, counted */
    assert_int_equal(check_dir("g45", &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.mtp_tensors >= 40 && cfg.mtp_bytes > 0);
    assert_int_equal(sh("timeout 60 %s model info %s | grep -q '^  left out .*model.layers.2.\\* "
                        "on, %zu tensors: multi-token prediction'", helix, dir, cfg.mtp_tensors),
                     0);
    ckpt_variant("g45", "g45ok", NULL, NULL, NULL, 0, NULL);
    ckpt_variant("g45", "g45nobias", "model.layers.1.mlp.gate.e_score_correction_bias", NULL,
                 NULL, 0, "tensor model.layers.1.mlp.gate.e_score_correction_bias is missing");
    ckpt_variant("g45", "g45shared", NULL, "model.layers.1.mlp.shared_experts.up_proj.weight",
                 NULL, 64, "model.layers.1.mlp.shared_experts.up_proj.weight: shape [64, 256], "
                 "expected [128, 256]");
    ckpt_variant("g45", "g45dense", NULL, NULL, "model.layers.0.mlp.gate.weight", 8,
                 "tensor model.layers.0.mlp.gate.weight is not part of a Glm4MoeForCausalLM");
    ckpt_variant("g45", "g45obias", NULL, NULL, "model.layers.0.self_attn.o_proj.bias", 1,
                 "o_proj.bias is not part of a Glm4MoeForCausalLM");
    /* a correction bias in bf16 is not GLM's (F32, as transformers keeps it) */
    assert_int_equal(hlx_hf_expect(&cfg, &list, &n, err, sizeof(err)), HLX_OK);
    for (i = 0; i < n; i++)
        if (strstr(list[i].name, "e_score_correction_bias"))
            list[i].dtype = HLX_ST_BF16;
    dir_of(dir, sizeof(dir), "g45bf");
    assert_int_equal(hlx_ckpt_write(dir, list, n, 1, &cfg, zero_fill, NULL, err, sizeof(err)),
                     HLX_OK);
    free(list);
    assert_int_equal(check_dir("g45bf", &cfg, err, sizeof(err)), HLX_ERR_MISMATCH);
    assert_non_null(strstr(err, "e_score_correction_bias: dtype BF16, expected F32"));
    /* no MTP layer in the config: layer 2's tensors are unknown, refused with the reason */
    dir_of(dir, sizeof(dir), "g45");
    set_key("g45", "num_nextn_predict_layers", json_integer(0));
    refused("model.layers.2.", "layer 2 is past num_hidden_layers 2, and "
            "num_nextn_predict_layers 0 multi-token-prediction layers do not reach it",
            "model info %s", dir);
    set_key("g45", "num_nextn_predict_layers", json_integer(1));
    /* GLM-4.5-Air's use_qk_norm false: the norms are left over; model_type alone */
    set_key("g45", "use_qk_norm", json_false());
    expect_config("g45", HLX_OK, NULL);
    assert_true(!g_cfg.m.qk_norm && g_cfg.m.qkv_bias);
    refused("_norm.weight is not part of a Glm4MoeForCausalLM", NULL,
            "model info %s", dir);
    set_key("g45", "use_qk_norm", json_true());
    set_key("g45", "architectures", NULL);
    expect_config("g45", HLX_OK, NULL);
    assert_true(g_cfg.moe_gqa == HLX_HF_MOE_GLM4 && !strcmp(g_cfg.arch, "Glm4MoeForCausalLM"));
    set_key("g45", "architectures", json_pack("[s]", "Glm4MoeForCausalLM"));
    /* refused at config.json:line:column: more experts per token than experts, groups
     * that do not hold them, dense layers past the model, a factor of 9.6 elements */
    expect_key("g45", "num_experts_per_tok", json_integer(9), HLX_ERR_PARSE,
               "num_experts_per_tok: 9 exceeds n_routed_experts 8", json_integer(2));
    set_key("g45", "n_group", json_integer(8));
    set_key("g45", "topk_group", json_integer(1));
    expect_config("g45", HLX_ERR_PARSE, "topk_group: 1 group(s) of 1 experts hold fewer than "
                  "num_experts_per_tok 2");
    expect_key("g45", "n_group", json_integer(3), HLX_ERR_PARSE, "n_group", json_integer(1));
    expect_key("g45", "first_k_dense_replace", json_integer(3), HLX_ERR_PARSE,
               "first_k_dense_replace: 3 exceeds num_hidden_layers 2", json_integer(1));
    expect_key("g45", "num_nextn_predict_layers", json_integer(17), HLX_ERR_PARSE,
               "num_nextn_predict_layers: 17: at most 16", json_integer(1));
    /* a quantization ignore list may name the MTP layer's modules (never read), and
     * modules the model does not have (a layer past it, a number written otherwise) */
    {
        static const char *const mods[] = { "model.layers.2.eh_proj", "model.layers.3.eh_proj",
                                            "model.layers.02.eh_proj" };
        int j;
        for (j = 0; j < 3; j++) {
            set_key("g45", "quantization_config",
                    json_pack("{s:s, s:s, s:{s:{s:[s], s:{s:i, s:s, s:s, s:b, s:b}}}, "
                              "s:[s, s, s]}",
                              "quant_method", "compressed-tensors", "format", "float-quantized",
                              "config_groups", "group_0", "targets", "Linear", "weights",
                              "num_bits", 8, "type", "float", "strategy", "channel",
                              "symmetric", 1, "dynamic", 0, "ignore", "lm_head",
                              "re:.*mlp.gate$", mods[j]));
            /* each names no Linear the decode reads: nothing left unquantized */
            expect_config("g45", HLX_OK, NULL);
            assert_true(g_cfg.unquant == 0);
        }
    }
    set_key("g45", "quantization_config", NULL);
    set_key("g45", "partial_rotary_factor", json_real(0.3));
    expect_config("g45", HLX_ERR_PARSE, "partial_rotary_factor: 0.3 x head_dim 32 = 9.6 "
                  "rotated elements per head, not a whole number");
    set_key("g45", "partial_rotary_factor", json_real(0.5));
    expect_config("g45", HLX_OK, NULL);
    /* Glm4MoeConfig's defaults for every key left out */
    drop_keys("g45", defaulted);
    expect_config("g45", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.kv_heads, 8);
    assert_true(!g_cfg.m.qkv_bias && !g_cfg.m.qk_norm);
    assert_int_equal(g_cfg.m.experts, 128);
    assert_int_equal(g_cfg.m.top_k, 8);
    assert_int_equal(g_cfg.m.expert_ffn, 1408);
    assert_int_equal(g_cfg.m.shared_experts, 1);
    assert_int_equal(g_cfg.m.dense_layers, 1);
    assert_true(g_cfg.m.norm_topk_prob && g_cfg.m.routed_scaling == 1.0 &&
                g_cfg.m.n_group == 1 && g_cfg.m.topk_group == 1);
    assert_int_equal(g_cfg.m.moe_scoring, HLX_MOE_SIGMOID);
    assert_int_equal(g_cfg.m.rope_dim, 16);
    assert_true(g_cfg.m.norm_eps == 1e-5 && g_cfg.mtp_layers == 0);
    /* a default that then fails a check says it was absent */
    set_key("g45", "n_routed_experts", json_integer(4));
    expect_config("g45", HLX_ERR_PARSE, "num_experts_per_tok: 8 exceeds n_routed_experts 4 "
                  "(absent keys take Glm4MoeConfig's");
    /* a config in GLM-4.5-Air's form (the fuzzer's seed): its shapes, one MTP layer */
    assert_int_equal(sh("mkdir -p %s/air && cp %s/tests/model/data/hf_config/glm4-moe.json "
                        "%s/air/config.json", g_tmp, HLX_SOURCE_ROOT, g_tmp), 0);
    expect_config("air", HLX_OK, NULL);
    assert_true(g_cfg.m.q_heads == 96 && g_cfg.m.kv_heads == 8 && g_cfg.m.head_dim == 128 &&
                g_cfg.m.rope_dim == 64 && g_cfg.m.experts == 128 && g_cfg.m.top_k == 8 &&
                g_cfg.m.dense_layers == 1 && g_cfg.m.qkv_bias && !g_cfg.m.qk_norm &&
                g_cfg.mtp_layers == 1 && g_cfg.m.rope_theta == 1e6);
}

/* Dots1ForCausalLM (dots.llm1): Qwen3's attention (q/k head norms always, no biases, RoPE
 * over whole heads) with GLM-4.5's DeepSeek-V3 MoE, Dots1Config's defaults; refused at
 * config.json:line:column where transformers and vLLM would decode differently (a window on
 * some layer, a tied head, scoring_func, topk_method, moe_layer_freq, biases) or fail (the
 * expert counts it leaves None); the released shapes' parameter count. */
static void test_dots1(void **state)
{
    static const char *const defaulted[] = {
        "moe_intermediate_size", "first_k_dense_replace", "norm_topk_prob",
        "routed_scaling_factor", "n_group", "topk_group", "rms_norm_eps", "scoring_func",
        "topk_method", "moe_layer_freq", "sliding_window", "max_window_layers",
        "attention_bias", "tie_word_embeddings", NULL
    };
    static const char *const required[] = { "n_routed_experts", "num_experts_per_tok",
                                            "n_shared_experts" };
    char dir[512], err[1024];
    hlx_hf_config_t cfg;
    hlx_hf_expect_t *list = NULL;
    size_t n = 0, i;
    int bias_f32 = 0, norms = 0;

    (void)state;
    synth_cfg("d1", "--family dots1 --shards 1", "Dots1ForCausalLM", dir, sizeof(dir), &cfg);
    assert_int_equal(cfg.moe_gqa, HLX_HF_MOE_GLM4);
    assert_int_equal(cfg.fused, 0);
    assert_true(!cfg.m.qkv_bias && !cfg.m.o_bias && cfg.m.qk_norm &&
                cfg.m.attn == HLX_ATTN_GQA);
    assert_int_equal(cfg.m.rope_dim, 32); /* whole heads */
    assert_true(cfg.m.experts == 8 && cfg.m.top_k == 2 && cfg.m.expert_ffn == 64 &&
                cfg.m.shared_experts == 2 && cfg.m.dense_layers == 1);
    assert_int_equal(cfg.m.moe_scoring, HLX_MOE_SIGMOID);
    assert_true(cfg.m.norm_topk_prob && cfg.m.routed_scaling == 2.5 && cfg.m.n_group == 1 &&
                cfg.m.topk_group == 1);
    assert_true(cfg.mtp_layers == 0 && cfg.m.sliding_window == 0 && !cfg.tie_word_embeddings);
    /* the inventory: head norms of [d], the correction bias in F32, DeepSeek's names */
    assert_int_equal(hlx_hf_expect(&cfg, &list, &n, err, sizeof(err)), HLX_OK);
    for (i = 0; i < n; i++) {
        if (!strcmp(list[i].name, "model.layers.1.mlp.gate.e_score_correction_bias"))
            bias_f32 = list[i].dtype == HLX_ST_F32 && list[i].shape[0] == 8;
        norms += strstr(list[i].name, "self_attn.q_norm.weight") != NULL &&
                 list[i].shape[0] == 32;
    }
    free(list);
    assert_true(bias_f32 && norms == 2);
    assert_int_equal(check_dir("d1", &cfg, err, sizeof(err)), HLX_OK);
    ckpt_variant("d1", "d1ok", NULL, NULL, NULL, 0, NULL);
    ckpt_variant("d1", "d1nonorm", "model.layers.0.self_attn.k_norm.weight", NULL, NULL, 0,
                 "tensor model.layers.0.self_attn.k_norm.weight is missing");
    ckpt_variant("d1", "d1nobias", "model.layers.1.mlp.gate.e_score_correction_bias", NULL,
                 NULL, 0, "tensor model.layers.1.mlp.gate.e_score_correction_bias is missing");
    ckpt_variant("d1", "d1obias", NULL, NULL, "model.layers.0.self_attn.o_proj.bias", 1,
                 "o_proj.bias is not part of a Dots1ForCausalLM");
    /* no multi-token-prediction layers: a layer past the model is another model's */
    ckpt_variant("d1", "d1mtp", NULL, NULL, "model.layers.2.eh_proj.weight", 8,
                 "tensor model.layers.2.eh_proj.weight is not part of a Dots1ForCausalLM of "
                 "this config.json");
    assert_int_equal(sh("timeout 60 %s model info %s | grep -q 'each q and k head "
                        "RMS-normalised'", helix, dir), 0);
    /* GLM-4.5's use_qk_norm is not Dots1Config's: its norms stay */
    set_key("d1", "use_qk_norm", json_false());
    expect_config("d1", HLX_OK, NULL);
    assert_true(g_cfg.m.qk_norm);
    set_key("d1", "use_qk_norm", NULL);
    set_key("d1", "architectures", NULL); /* model_type alone */
    expect_config("d1", HLX_OK, NULL);
    assert_string_equal(g_cfg.arch, "Dots1ForCausalLM");
    set_key("d1", "architectures", json_pack("[s]", "Dots1ForCausalLM"));
    /* where transformers and vLLM part: refused at the key, exit 2 */
    expect_key("d1", "scoring_func", json_string("softmax"), HLX_ERR_INVALID,
               "scoring_func: \"softmax\": transformers' Dots1ForCausalLM scores the experts "
               "with a sigmoid", json_string("sigmoid"));
    expect_key("d1", "topk_method", json_string("greedy"), HLX_ERR_INVALID,
               "topk_method: \"greedy\": vLLM's Dots1ForCausalLM adds e_score_correction_bias",
               json_string("noaux_tc"));
    expect_key("d1", "moe_layer_freq", json_integer(2), HLX_ERR_INVALID,
               "moe_layer_freq: 2: vLLM's Dots1ForCausalLM keeps a dense FFN", json_integer(1));
    expect_key("d1", "tie_word_embeddings", json_true(), HLX_ERR_INVALID,
               "tie_word_embeddings: true ties the head to the embedding in transformers' "
               "Dots1ForCausalLM, not in vLLM's", json_false());
    expect_key("d1", "attention_bias", json_true(), HLX_ERR_PARSE,
               "attention_bias: projection biases are not supported for Dots1ForCausalLM",
               json_false());
    expect_key("d1", "partial_rotary_factor", json_real(0.5), HLX_ERR_PARSE,
               "0.5 is read for Phi3ForCausalLM", NULL);
    set_key("d1", "tie_word_embeddings", json_true());
    refused("tie_word_embeddings: true ties the head", NULL, "model info %s", dir);
    set_key("d1", "tie_word_embeddings", json_false());
    /* the expert counts Dots1Config leaves None: required (null too) */
    for (i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        char needle[96];
        snprintf(needle, sizeof(needle), "%s: required key is missing", required[i]);
        expect_key("d1", required[i], json_null(), HLX_ERR_PARSE, needle,
                   json_integer(i == 0 ? 8 : 2));
    }
    expect_key("d1", "num_experts_per_tok", json_integer(9), HLX_ERR_PARSE,
               "num_experts_per_tok: 9 exceeds n_routed_experts 8", json_integer(2));
    expect_key("d1", "n_group", json_integer(3), HLX_ERR_PARSE, "n_group", json_integer(1));
    expect_key("d1", "first_k_dense_replace", json_integer(3), HLX_ERR_PARSE,
               "first_k_dense_replace: 3 exceeds num_hidden_layers 2", json_integer(1));
    set_key("d1", "n_group", json_integer(4));
    expect_config("d1", HLX_OK, NULL);
    assert_true(g_cfg.m.n_group == 4 && g_cfg.m.topk_group == 1);
    set_key("d1", "n_group", json_integer(1));
    /* Dots1Config's 32 KV heads when absent, whatever the query heads; null: theirs */
    expect_key("d1", "num_key_value_heads", NULL, HLX_ERR_PARSE,
               "num_key_value_heads: 32 does not divide num_attention_heads 8 (absent from "
               "config.json: that is transformers' default for Dots1ForCausalLM", json_null());
    expect_config("d1", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.kv_heads, 8);
    set_key("d1", "num_key_value_heads", json_integer(2));
    /* windows: transformers' layers from max_window_layers on (or as layer_types says),
     * vLLM's none; refused where one would apply, read as none where none does */
    set_key("d1", "sliding_window", json_integer(4));
    expect_key("d1", "max_window_layers", json_integer(1), HLX_ERR_INVALID,
               "max_window_layers: transformers' Dots1ForCausalLM windows layer 1, as "
               "max_window_layers says (a window of 4 tokens)", json_integer(2));
    expect_key("d1", "layer_types", json_pack("[s, s]", "full_attention", "sliding_attention"),
               HLX_ERR_INVALID, "layer_types[1]: transformers' Dots1ForCausalLM windows layer "
               "1, as layer_types says", json_pack("[s, s]", "full_attention", "full_attention"));
    expect_config("d1", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.sliding_window, 0);
    set_key("d1", "layer_types", json_pack("[s]", "full_attention"));
    expect_config("d1", HLX_ERR_PARSE, "layer_types: expected a list of num_hidden_layers (2)");
    set_key("d1", "layer_types", NULL);
    set_key("d1", "max_window_layers", json_integer(0));
    set_key("d1", "max_position_embeddings", json_integer(4)); /* a window of the whole context */
    expect_config("d1", HLX_OK, NULL);
    set_key("d1", "max_position_embeddings", NULL);
    set_key("d1", "sliding_window", NULL); /* Dots1Config's 4096 */
    expect_config("d1", HLX_ERR_INVALID, "(a window of 4096 tokens, Dots1Config's default where "
                  "sliding_window is absent)");
    expect_key("d1", "sliding_window", json_integer(0), HLX_ERR_PARSE,
               "sliding_window: expected a positive integer (tokens) or null", json_null());
    expect_config("d1", HLX_OK, NULL);
    set_key("d1", "max_window_layers", NULL);
    /* Dots1Config's defaults for every other key left out */
    drop_keys("d1", defaulted);
    expect_config("d1", HLX_OK, NULL);
    assert_true(g_cfg.m.expert_ffn == 1408 && g_cfg.m.dense_layers == 0 &&
                !g_cfg.m.norm_topk_prob && g_cfg.m.routed_scaling == 1.0 &&
                g_cfg.m.n_group == 1 && g_cfg.m.topk_group == 1 && g_cfg.m.norm_eps == 1e-6 &&
                g_cfg.m.moe_scoring == HLX_MOE_SIGMOID && g_cfg.m.sliding_window == 0 &&
                !g_cfg.m.qkv_bias && g_cfg.m.qk_norm && !g_cfg.tie_word_embeddings);
    /* dots.llm1's shapes (the fuzzer's seed), the published 142B: embedding and head
     * 2 x 152064 x 4096 = 1,245,708,288; 62 layers of attention (4 x 4096 x 4096 for q, k,
     * v, o and 2 x 128 of head norms) and 2 x 4096 of norms: 62 x 67,117,312 =
     * 4,161,273,344; layer 0's dense FFN 3 x 4096 x 10944 = 134,479,872; 61 MoE layers of
     * 128 + 2 experts of 3 x 4096 x 1408, a router of 128 x 4096 and its 128 correction
     * biases: 61 x 2,249,719,936 = 137,232,916,096; the final norm 4096. In all
     * 142,774,381,696, what `model info` counts (every tensor stored); the model's own
     * count leaves out the 61 x 128 biases (a buffer in transformers): 142,774,373,888.
     * The active 14B: 6 + 2 experts a layer, 14,016,581,120 without the biases */
    assert_int_equal(sh("mkdir -p %s/dots && cp %s/tests/model/data/hf_config/dots1.json "
                        "%s/dots/config.json", g_tmp, HLX_SOURCE_ROOT, g_tmp), 0);
    expect_config("dots", HLX_OK, NULL);
    assert_true(g_cfg.m.layers == 62 && g_cfg.m.hidden == 4096 && g_cfg.m.q_heads == 32 &&
                g_cfg.m.kv_heads == 32 && g_cfg.m.head_dim == 128 && g_cfg.m.rope_dim == 128 &&
                g_cfg.m.experts == 128 && g_cfg.m.top_k == 6 && g_cfg.m.shared_experts == 2 &&
                g_cfg.m.expert_ffn == 1408 && g_cfg.m.dense_layers == 1 && g_cfg.m.qk_norm &&
                g_cfg.m.routed_scaling == 2.5 && g_cfg.m.norm_topk_prob &&
                g_cfg.m.rope_theta == 1e7 && g_cfg.m.norm_eps == 1e-5 &&
                g_cfg.m.sliding_window == 0 && g_cfg.m.vocab == 152064);
    assert_true(hlx_model_params(&g_cfg.m) == 142774373888.0);
    assert_int_equal(sh("timeout 60 %s model info %s/dots --config-only --json | python3 -c "
                        "'import json, sys; sys.exit(json.load(sys.stdin)[\"params\"] != "
                        "142774381696)'", helix, g_tmp), 0);
}

/* GraniteMoeForCausalLM (Granite 3.0 and 3.1 MoE): granite's multipliers over Mixtral's
 * routing, the experts fused output-major and read through views (hlx_hf_granite_views);
 * GraniteMoeConfig's defaults (8 experts, top 2, untied, rms_norm_eps 1e-6, each multiplier
 * 1); refused at the key, exit 2: a head_dim other than hidden_size / heads, a NoPE
 * position_embedding_type, attention biases, a quantization_config, top-k above the experts;
 * the fused tensors against config.json (their experts, their shape) refused naming them;
 * the released granite-3.0-3b-a800m's shapes counted by model info. */
static void test_granitemoe(void **state)
{
    static const char *const defaulted[] = {
        "num_local_experts", "num_experts_per_tok", "embedding_multiplier",
        "attention_multiplier", "residual_multiplier", "logits_scaling", "rms_norm_eps",
        "tie_word_embeddings", "num_key_value_heads", "head_dim", "rope_theta", NULL
    };
    char dir[512], err[1024];
    hlx_hf_config_t cfg;
    hlx_hf_expect_t *list = NULL;
    size_t n = 0, i;
    int router = 0, views = 0;

    (void)state;
    synth_cfg("gm", "--family granitemoe --shards 1", "GraniteMoeForCausalLM", dir, sizeof(dir),
              &cfg);
    assert_int_equal(cfg.moe_gqa, HLX_HF_MOE_GRANITE);
    assert_true(hlx_hf_granite(&cfg));
    assert_true(cfg.m.experts == 8 && cfg.m.top_k == 2 && cfg.m.expert_ffn == 64 &&
                cfg.m.ffn == 64 && cfg.m.shared_experts == 0 && cfg.m.dense_layers == 0);
    assert_true(cfg.m.moe_scoring == HLX_MOE_SOFTMAX && cfg.m.norm_topk_prob &&
                cfg.m.routed_scaling == 1.0);
    assert_true(cfg.m.embed_mult == 1.5 && cfg.m.attn_scalar == 64.0 &&
                cfg.m.residual_mult == 0.8 && cfg.m.logits_scale == 8.0);
    /* the inventory: the router under its own name, the experts as per-expert views */
    assert_int_equal(hlx_hf_expect(&cfg, &list, &n, err, sizeof(err)), HLX_OK);
    for (i = 0; i < n; i++) {
        router += !strcmp(list[i].name, "model.layers.1.block_sparse_moe.router.layer.weight") &&
                  list[i].shape[0] == 8 && list[i].shape[1] == 256;
        views += !strcmp(list[i].name, "model.layers.1.mlp.experts.7.down_proj.weight") &&
                 list[i].shape[0] == 256 && list[i].shape[1] == 64;
    }
    free(list);
    assert_true(router == 1 && views == 1);
    hlx_hf_ckpt_name(&cfg, "model.layers.1.mlp.gate.weight", err, sizeof(err));
    assert_string_equal(err, "model.layers.1.block_sparse_moe.router.layer.weight");
    assert_int_equal(check_dir("gm", &cfg, err, sizeof(err)), HLX_OK);
    assert_int_equal(sh("timeout 60 %s model info %s >/dev/null", helix, dir), 0);
    /* the fused tensors against config.json: 8 experts where it says 4; rows of an
     * intermediate_size of 64 where it says 32 */
    set_key("gm", "num_local_experts", json_integer(4));
    assert_int_equal(check_dir("gm", &cfg, err, sizeof(err)), HLX_ERR_MISMATCH);
    assert_non_null(strstr(err, "tensor model.layers.0.block_sparse_moe.input_linear.weight: "
                                "8 experts, where config.json gives 4"));
    refused("8 experts, where config.json gives 4", NULL, "model info %s", dir);
    set_key("gm", "num_local_experts", json_integer(8));
    set_key("gm", "intermediate_size", json_integer(32));
    assert_int_equal(check_dir("gm", &cfg, err, sizeof(err)), HLX_ERR_MISMATCH);
    assert_non_null(strstr(err, "input_linear.weight: shape [8, 128, 256], expected "
                                "[8, 64, 256] (fused experts: [experts, out, in], "
                                "output-major)"));
    set_key("gm", "intermediate_size", json_integer(64));
    /* layers the checkpoint does not hold: refused at the config's count, at once (the
     * views were reserved for every layer first: 1.85 GB at 200000) */
    set_key("gm", "num_hidden_layers", json_integer(200000));
    refused("check num_hidden_layers and the expert count", NULL, "model info %s", dir);
    set_key("gm", "num_hidden_layers", json_integer(2));
    /* model_type alone */
    set_key("gm", "architectures", NULL);
    expect_config("gm", HLX_OK, NULL);
    assert_string_equal(g_cfg.arch, "GraniteMoeForCausalLM");
    set_key("gm", "architectures", json_pack("[s]", "GraniteMoeForCausalLM"));
    /* refused at the key, exit 2 */
    expect_key("gm", "head_dim", json_integer(64), HLX_ERR_PARSE,
               "head_dim: GraniteMoeForCausalLM takes hidden_size / num_attention_heads as its "
               "head size, whole: 64 x 8 is not hidden_size 256", json_integer(32));
    expect_key("gm", "position_embedding_type", json_string("nope"), HLX_ERR_UNSUPPORTED,
               "position_embedding_type: \"nope\": transformers leaves q and k unrotated",
               json_string("rope"));
    expect_key("gm", "attention_bias", json_true(), HLX_ERR_PARSE,
               "attention_bias: projection biases are not supported for GraniteMoeForCausalLM",
               json_false());
    expect_key("gm", "quantization_config", json_pack("{s:s}", "quant_method", "fp8"),
               HLX_ERR_UNSUPPORTED, "quantization_config: GraniteMoeForCausalLM's experts are "
               "read fused", NULL);
    expect_key("gm", "num_experts_per_tok", json_integer(9), HLX_ERR_PARSE,
               "num_experts_per_tok: 9 exceeds num_local_experts 8", json_integer(2));
    expect_key("gm", "residual_multiplier", json_null(), HLX_ERR_PARSE,
               "residual_multiplier: null is not a multiplier", json_real(0.8));
    set_key("gm", "position_embedding_type", json_string("nope"));
    refused("position_embedding_type", NULL, "model info %s", dir);
    set_key("gm", "position_embedding_type", NULL);
    /* GraniteMoeConfig's defaults for every key left out (the KV heads the query heads') */
    drop_keys("gm", defaulted);
    expect_config("gm", HLX_OK, NULL);
    assert_true(g_cfg.m.experts == 8 && g_cfg.m.top_k == 2 && g_cfg.m.embed_mult == 0.0 &&
                g_cfg.m.attn_scalar == 1.0 && g_cfg.m.residual_mult == 0.0 &&
                g_cfg.m.logits_scale == 0.0 && g_cfg.m.norm_eps == 1e-6 &&
                !g_cfg.tie_word_embeddings && g_cfg.m.kv_heads == 8 &&
                g_cfg.m.head_dim == 32 && g_cfg.m.rope_theta == 10000.0);
    /* granite-3.0-3b-a800m's shapes (the fuzzer's seed), the published 3.3B total and 800M
     * active: the tied embedding 49155 x 1536 = 75,502,080; 32 layers of attention (q and o
     * 1536 x 1536, k and v 512 x 1536: 6,291,456), 2 x 1536 of norms, the router 40 x 1536
     * (61,440) and 40 experts of 3 x 512 x 1536 (94,371,840): 32 x 100,727,808 =
     * 3,223,289,856; the final norm 1536. In all 3,298,793,472; active (8 of the 40
     * experts): 32 x 25,230,336 + 75,502,080 + 1536 = 882,874,368 */
    assert_int_equal(sh("mkdir -p %s/gm3b && cp %s/tests/model/data/hf_config/granitemoe-3b.json "
                        "%s/gm3b/config.json", g_tmp, HLX_SOURCE_ROOT, g_tmp), 0);
    expect_config("gm3b", HLX_OK, NULL);
    assert_true(g_cfg.m.layers == 32 && g_cfg.m.hidden == 1536 && g_cfg.m.q_heads == 24 &&
                g_cfg.m.kv_heads == 8 && g_cfg.m.head_dim == 64 && g_cfg.m.experts == 40 &&
                g_cfg.m.top_k == 8 && g_cfg.m.expert_ffn == 512 && g_cfg.m.vocab == 49155 &&
                g_cfg.tie_word_embeddings && g_cfg.m.embed_mult == 12.0 &&
                g_cfg.m.residual_mult == 0.22 && g_cfg.m.logits_scale == 6.0 &&
                g_cfg.m.attn_scalar == 4096.0);
    assert_true(hlx_model_params(&g_cfg.m) == 3298793472.0);
    assert_int_equal(sh("timeout 60 %s model info %s/gm3b --config-only --json | python3 -c "
                        "'import json, sys; sys.exit(json.load(sys.stdin)[\"params\"] != "
                        "3298793472)'", helix, g_tmp), 0);
}

/* GraniteMoeSharedForCausalLM: Granite MoE plus a shared MLP of shared_intermediate_size
 * (0 when absent: none) stored fused (shared_mlp.input_linear [2 x S, H]: gate rows, then
 * up rows; output_linear [H, S]), read as the runtime's shared experts through views;
 * refused at the key: null, negative, not an integer, not a multiple of intermediate_size. */
static void test_granitemoeshared(void **state)
{
    char dir[512], err[1024];
    hlx_hf_config_t cfg;
    hlx_hf_expect_t *list = NULL;
    size_t n = 0, i;
    int shared = 0;

    (void)state;
    synth_cfg("gms", "--family granitemoeshared --shards 1", "GraniteMoeSharedForCausalLM", dir,
              sizeof(dir), &cfg);
    assert_int_equal(cfg.moe_gqa, HLX_HF_MOE_GRANITE);
    assert_true(hlx_hf_granite(&cfg) && hlx_hf_granite_shared(&cfg));
    assert_true(cfg.m.experts == 8 && cfg.m.top_k == 2 && cfg.m.expert_ffn == 64 &&
                cfg.m.shared_experts == 2 && !cfg.m.shared_gate);
    assert_int_equal(hlx_hf_expect(&cfg, &list, &n, err, sizeof(err)), HLX_OK);
    for (i = 0; i < n; i++)
        shared += !strcmp(list[i].name, "model.layers.1.mlp.shared_experts.up_proj.weight") &&
                  list[i].shape[0] == 128 && list[i].shape[1] == 256;
    free(list);
    assert_int_equal(shared, 1);
    assert_int_equal(check_dir("gms", &cfg, err, sizeof(err)), HLX_OK);
    assert_int_equal(sh("timeout 60 %s model info %s >/dev/null", helix, dir), 0);
    /* a width of 64 where the tensors hold 128: the fused linear named with both shapes */
    set_key("gms", "shared_intermediate_size", json_integer(64));
    assert_int_equal(check_dir("gms", &cfg, err, sizeof(err)), HLX_ERR_MISMATCH);
    assert_non_null(strstr(err, "shared_mlp.input_linear.weight: shape [256, 256], expected "
                                "[128, 256] (a fused linear: [out, in])"));
    /* 0 and absent: no shared MLP (GraniteMoeSharedConfig's 0), so its tensors are extra */
    set_key("gms", "shared_intermediate_size", json_integer(0));
    assert_int_equal(check_dir("gms", &cfg, err, sizeof(err)), HLX_ERR_MISMATCH);
    assert_non_null(strstr(err, "shared_mlp.input_linear.weight is not part of a "
                                "GraniteMoeSharedForCausalLM"));
    set_key("gms", "shared_intermediate_size", NULL);
    expect_config("gms", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.shared_experts, 0);
    refused("shared_mlp.input_linear.weight is not part of", NULL, "model info %s", dir);
    /* refused at the key, exit 2 */
    expect_key("gms", "shared_intermediate_size", json_null(), HLX_ERR_PARSE,
               "shared_intermediate_size: null is not a width", NULL);
    expect_key("gms", "shared_intermediate_size", json_integer(-128), HLX_ERR_PARSE,
               "shared_intermediate_size: -128 is outside [0, 100000000]", NULL);
    expect_key("gms", "shared_intermediate_size", json_string("128"), HLX_ERR_PARSE,
               "shared_intermediate_size: expected an integer", NULL);
    expect_key("gms", "shared_intermediate_size", json_integer(96), HLX_ERR_UNSUPPORTED,
               "shared_intermediate_size: 96 is not a multiple of intermediate_size 64", NULL);
    set_key("gms", "shared_intermediate_size", json_null());
    refused("null is not a width", NULL, "model info %s", dir);
    set_key("gms", "shared_intermediate_size", json_integer(128));
    /* written from GraniteMoeSharedConfig's keys over granite-3.0-3b-a800m-instruct's
     * released values, with a shared MLP of 1024 (no released GraniteMoeShared config.json
     * was at hand): granite-3.0-3b-a800m's 3,298,793,472 parameters plus 32 layers of 3 x
     * 1024 x 1536 (4,718,592): 3,449,788,416 */
    assert_int_equal(sh("mkdir -p %s/gms3b && cp %s/tests/model/data/hf_config/"
                        "granitemoeshared-3b.json %s/gms3b/config.json", g_tmp,
                        HLX_SOURCE_ROOT, g_tmp), 0);
    expect_config("gms3b", HLX_OK, NULL);
    assert_true(g_cfg.m.experts == 40 && g_cfg.m.top_k == 8 && g_cfg.m.expert_ffn == 512 &&
                g_cfg.m.shared_experts == 2);
    assert_true(hlx_model_params(&g_cfg.m) == 3449788416.0);
    assert_int_equal(sh("timeout 60 %s model info %s/gms3b --config-only --json | python3 -c "
                        "'import json, sys; sys.exit(json.load(sys.stdin)[\"params\"] != "
                        "3449788416)'", helix, g_tmp), 0);
}

/* Olmo2ForCausalLM (OLMo 2): Llama's projections and FFN with the outputs' norms alone
 * (post_attention_layernorm, post_feedforward_layernorm; no input_layernorm) and q_norm,
 * k_norm over the whole q and k projections ([Q x d], [K x d]); Olmo2Config's defaults;
 * refused where transformers and vLLM part (a head_dim other than hidden_size /
 * num_attention_heads) and where neither is run (attention_bias); OLMo-2-1124-7B's shapes
 * and parameter count. */
static void test_olmo2(void **state)
{
    static const char *const defaulted[] = { "rms_norm_eps", "num_key_value_heads",
                                             "tie_word_embeddings", "rope_theta",
                                             "attention_bias", "hidden_act", "head_dim",
                                             NULL };
    char dir[512], err[1024];
    hlx_hf_config_t cfg;
    hlx_hf_expect_t *list = NULL;
    size_t n = 0, i;
    int qn = 0, kn = 0, in = 0, post = 0;

    (void)state;
    synth_cfg("o2", "--family olmo2 --shards 1", "Olmo2ForCausalLM", dir, sizeof(dir), &cfg);
    assert_true(cfg.m.post_norms && cfg.m.post_norms_only && cfg.m.qk_norm_proj &&
                !cfg.m.qk_norm && !cfg.m.qkv_bias && cfg.m.attn == HLX_ATTN_GQA);
    assert_true(cfg.m.rope_dim == 32 && cfg.m.norm_eps == 1e-5 && !cfg.tie_word_embeddings);
    /* the inventory: the norms of the whole projections, no input norms, both output ones */
    assert_int_equal(hlx_hf_expect(&cfg, &list, &n, err, sizeof(err)), HLX_OK);
    for (i = 0; i < n; i++) {
        qn += strstr(list[i].name, "self_attn.q_norm.weight") != NULL &&
              list[i].shape[0] == 8 * 32;
        kn += strstr(list[i].name, "self_attn.k_norm.weight") != NULL &&
              list[i].shape[0] == 2 * 32;
        in += strstr(list[i].name, "input_layernorm") != NULL;
        post += strstr(list[i].name, "post_attention_layernorm.weight") != NULL ||
                strstr(list[i].name, "post_feedforward_layernorm.weight") != NULL;
    }
    free(list);
    assert_true(qn == 2 && kn == 2 && in == 0 && post == 4);
    assert_int_equal(check_dir("o2", &cfg, err, sizeof(err)), HLX_OK);
    ckpt_variant("o2", "o2ok", NULL, NULL, NULL, 0, NULL);
    ckpt_variant("o2", "o2nonorm", "model.layers.1.self_attn.q_norm.weight", NULL, NULL, 0,
                 "tensor model.layers.1.self_attn.q_norm.weight is missing");
    ckpt_variant("o2", "o2nopost", "model.layers.0.post_feedforward_layernorm.weight", NULL,
                 NULL, 0, "tensor model.layers.0.post_feedforward_layernorm.weight is missing");
    ckpt_variant("o2", "o2in", NULL, NULL, "model.layers.0.input_layernorm.weight", 1,
                 "input_layernorm.weight is not part of an Olmo2ForCausalLM");
    assert_int_equal(sh("timeout 60 %s model info %s | grep -q 'the whole q and the whole k "
                        "projection RMS-normalised'", helix, dir), 0);
    assert_int_equal(sh("timeout 60 %s model info %s | grep -q 'no input norms'", helix, dir),
                     0);
    set_key("o2", "architectures", NULL); /* model_type alone */
    expect_config("o2", HLX_OK, NULL);
    assert_string_equal(g_cfg.arch, "Olmo2ForCausalLM");
    set_key("o2", "architectures", json_pack("[s]", "Olmo2ForCausalLM"));
    /* vLLM's head size is hidden_size / num_attention_heads, transformers' head_dim */
    expect_key("o2", "head_dim", json_integer(64), HLX_ERR_PARSE,
               "head_dim: head size 64 x num_attention_heads 8 is not hidden_size 256", NULL);
    expect_config("o2", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.head_dim, 32);
    expect_key("o2", "attention_bias", json_true(), HLX_ERR_PARSE,
               "attention_bias: projection biases are not supported for Olmo2ForCausalLM",
               json_false());
    expect_key("o2", "hidden_act", json_string("gelu"), HLX_ERR_PARSE,
               "hidden_act: \"gelu\" is not supported", json_string("silu"));
    expect_key("o2", "partial_rotary_factor", json_real(0.5), HLX_ERR_PARSE,
               "0.5 is read for Phi3ForCausalLM", NULL);
    /* Olmo2Config's defaults for the keys left out: the query heads' count of KV heads,
     * 1e-5, base 10000, untied */
    drop_keys("o2", defaulted);
    expect_config("o2", HLX_OK, NULL);
    assert_true(g_cfg.m.kv_heads == 8 && g_cfg.m.head_dim == 32 && g_cfg.m.norm_eps == 1e-5 &&
                g_cfg.m.rope_theta == 10000.0 && !g_cfg.tie_word_embeddings &&
                g_cfg.m.qk_norm_proj && g_cfg.m.post_norms_only);
    /* OLMo-2-1124-7B's shapes: embedding and head 2 x 100352 x 4096 = 822,083,584; 32
     * layers of attention (4 x 4096 x 4096), q and k norms (4096 each), the two output norms
     * (4096 each) and the FFN (3 x 4096 x 11008): 32 x 202,391,552 = 6,476,529,664; the
     * final norm 4096: 7,298,617,344 (the published 7.3B) */
    assert_int_equal(sh("mkdir -p %s/olmo7 && cp %s/tests/model/data/hf_config/olmo2-7b.json "
                        "%s/olmo7/config.json", g_tmp, HLX_SOURCE_ROOT, g_tmp), 0);
    expect_config("olmo7", HLX_OK, NULL);
    assert_true(g_cfg.m.layers == 32 && g_cfg.m.hidden == 4096 && g_cfg.m.q_heads == 32 &&
                g_cfg.m.kv_heads == 32 && g_cfg.m.head_dim == 128 && g_cfg.m.ffn == 11008 &&
                g_cfg.m.vocab == 100352 && g_cfg.m.rope_theta == 500000.0 &&
                g_cfg.m.norm_eps == 1e-6 && g_cfg.m.qk_norm_proj && g_cfg.m.post_norms_only);
    assert_true(hlx_model_params(&g_cfg.m) == 7298617344.0);
    assert_int_equal(sh("timeout 60 %s model info %s/olmo7 --config-only --json | python3 -c "
                        "'import json, sys; sys.exit(json.load(sys.stdin)[\"params\"] != "
                        "7298617344)'", helix, g_tmp), 0);
}

/* Olmo3ForCausalLM (OLMo 3): OLMo 2's layer with sliding_window on the layers layer_types
 * calls sliding_attention (Olmo3Config: 4096, three in four), those turning unscaled at
 * rope_theta while rope_scaling applies to the full_attention ones (rope_local_theta);
 * refused: a list off one pattern, dynamic scaling beside windows, a null window beside a
 * scaling, rope_theta absent or null. */
static void test_olmo3(void **state)
{
    char dir[512], err[1024];
    hlx_hf_config_t cfg;

    (void)state;
    synth_cfg("o3", "--family olmo3 --shards 1", "Olmo3ForCausalLM", dir, sizeof(dir), &cfg);
    assert_true(hlx_hf_olmo2(&cfg) && hlx_hf_olmo3(&cfg));
    assert_true(cfg.m.post_norms_only && cfg.m.qk_norm_proj && cfg.m.sliding_window == 6 &&
                cfg.m.sliding_pattern == 2 && cfg.m.rope_local_theta == 0.0);
    assert_true(hlx_model_layer_window(&cfg.m, 0) == 6 && hlx_model_layer_window(&cfg.m, 1) == 0);
    assert_int_equal(check_dir("o3", &cfg, err, sizeof(err)), HLX_OK);
    assert_int_equal(sh("timeout 60 %s model info %s >/dev/null", helix, dir), 0);
    /* a scaling: the full_attention layers' alone, the windowed ones unscaled at the base */
    set_key("o3", "rope_scaling", json_pack("{s:s, s:f, s:i}", "rope_type", "yarn", "factor",
                                            4.0, "original_max_position_embeddings", 64));
    expect_config("o3", HLX_OK, NULL);
    assert_true(g_cfg.m.rope_kind == HLX_ROPE_YARN &&
                g_cfg.m.rope_local_theta == g_cfg.m.rope_theta);
    expect_key("o3", "sliding_window", json_null(), HLX_ERR_UNSUPPORTED,
               "sliding_window: null beside rope scaling", json_integer(6));
    set_key("o3", "max_position_embeddings", json_integer(64)); /* (dynamic's context) */
    expect_key("o3", "rope_scaling", json_pack("{s:s, s:f}", "rope_type", "dynamic", "factor",
                                               2.0),
               HLX_ERR_UNSUPPORTED, "rope_scaling: dynamic NTK on the full_attention layers",
               NULL);
    set_key("o3", "max_position_embeddings", NULL);
    /* Olmo3Config's pattern when layer_types is absent: 2 layers, both windowed */
    set_key("o3", "layer_types", NULL);
    expect_config("o3", HLX_OK, NULL);
    assert_true(g_cfg.m.sliding_window == 6 && g_cfg.m.sliding_pattern == 4 &&
                hlx_model_layer_window(&g_cfg.m, 1) == 6);
    set_key("o3", "layer_types", json_pack("[s, s]", "full_attention", "full_attention"));
    expect_config("o3", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.sliding_window, 0);
    expect_key("o3", "layer_types", json_pack("[s, s]", "full_attention", "sliding_attention"),
               HLX_ERR_UNSUPPORTED, "layer_types[1]: layer 1 is \"sliding_attention\", which breaks the "
               "pattern of one full_attention layer in every 1", NULL);
    expect_key("o3", "layer_types", json_pack("[s]", "full_attention"), HLX_ERR_PARSE,
               "layer_types: expected a list of num_hidden_layers (2) strings", NULL);
    set_key("o3", "layer_types", json_pack("[s, s]", "sliding_attention", "full_attention"));
    expect_key("o3", "sliding_window", json_integer(0), HLX_ERR_PARSE,
               "sliding_window: expected a positive integer", NULL);
    expect_key("o3", "sliding_window", json_string("6"), HLX_ERR_PARSE,
               "sliding_window: expected a positive integer", NULL);
    expect_key("o3", "sliding_window", json_integer(4294967296LL), HLX_ERR_PARSE,
               "sliding_window: expected a positive integer of at most", json_integer(6));
    set_key("o3", "sliding_window", json_null()); /* no scaling: no window, no difference */
    expect_config("o3", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.sliding_window, 0);
    set_key("o3", "sliding_window", json_integer(6));
    expect_key("o3", "rope_theta", NULL, HLX_ERR_PARSE,
               "rope_theta: required key is missing (Olmo3Config's default", json_real(10000.0));
    expect_key("o3", "rope_theta", json_null(), HLX_ERR_PARSE,
               "rope_theta: required key is missing", json_real(10000.0));
    set_key("o3", "rope_theta", NULL);
    refused("rope_theta: required key is missing", NULL, "model info %s", dir);
    set_key("o3", "rope_theta", json_real(10000.0));
    /* written from public fragments of the OLMo 3 7B releases (mlx-community's
     * Olmo-3-7B-RLZero-Code conversion for the shapes and the layer_types, tiny-random/olmo-3
     * for the yarn parameters and the vocabulary): OLMo 2 7B's layers at a vocabulary of
     * 100278: 2 x 100278 x 4096 + 32 x 202,391,552 + 4096 = 7,298,011,136 */
    assert_int_equal(sh("mkdir -p %s/olmo37 && cp %s/tests/model/data/hf_config/olmo3-7b.json "
                        "%s/olmo37/config.json", g_tmp, HLX_SOURCE_ROOT, g_tmp), 0);
    expect_config("olmo37", HLX_OK, NULL);
    assert_true(g_cfg.m.layers == 32 && g_cfg.m.vocab == 100278 &&
                g_cfg.m.sliding_window == 4096 && g_cfg.m.sliding_pattern == 4 &&
                g_cfg.m.rope_kind == HLX_ROPE_YARN && g_cfg.m.rope_factor == 8.0 &&
                g_cfg.m.rope_local_theta == 500000.0 && g_cfg.m.rope_theta == 500000.0);
    assert_true(hlx_model_params(&g_cfg.m) == 7298011136.0);
    assert_int_equal(sh("timeout 60 %s model info %s/olmo37 --config-only --json | python3 -c "
                        "'import json, sys; sys.exit(json.load(sys.stdin)[\"params\"] != "
                        "7298011136)'", helix, g_tmp), 0);
}

/* Expert counts given as null, which the classes' layers fail on (nn.Linear(hidden, None),
 * topk(k=None), None x moe_intermediate_size) where an absent key takes the default:
 * refused at the key (exit 2) in place of the default (dots.llm1's, required, are refused
 * as missing: test_dots1); DeepSeek-MoE's n_shared_experts null
 * is its class's "no shared experts" and is read so. */
static void test_null_counts(void **state)
{
    static const struct {
        const char *name, *family, *keys[5];
    } cases[] = {
        { "ncmx", "mixtral", { "num_local_experts", "num_experts_per_tok", NULL } },
        { "ncgm", "granitemoe", { "num_local_experts", "num_experts_per_tok", NULL } },
        { "ncgms", "granitemoeshared", { "num_local_experts", "num_experts_per_tok", NULL } },
        { "ncg45", "glm4-moe", { "n_routed_experts", "num_experts_per_tok",
                                 "moe_intermediate_size", "n_shared_experts", NULL } },
        { "ncoss", "gpt-oss", { "num_local_experts", "num_experts_per_tok", NULL } },
        { "ncv3", "moe-mla", { "n_shared_experts", NULL } },
        { "ncl4", "llama4", { "num_local_experts", "num_experts_per_tok",
                              "intermediate_size_mlp", "interleave_moe_layer_step", NULL } },
    };
    char args[128], needle[96], path[512];
    size_t i, k;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(args, sizeof(args), "--family %s --shards 1", cases[i].family);
        synth(cases[i].name, args);
        for (k = 0; cases[i].keys[k] != NULL; k++) {
            json_t *c = config_json(cases[i].name, path);
            json_t *was = json_deep_copy(json_object_get(c, cases[i].keys[k]));
            json_decref(c);
            snprintf(needle, sizeof(needle), "%s: null is not a count", cases[i].keys[k]);
            expect_key(cases[i].name, cases[i].keys[k], json_null(), HLX_ERR_PARSE, needle,
                       was);
        }
    }
    set_key("ncv3", "n_shared_experts", json_null()); /* the command line: exit 2 */
    refused("n_shared_experts: null is not a count", NULL, "model info %s/ncv3", g_tmp);
    synth("ncds", "--family deepseek-moe --shards 1");
    set_key("ncds", "n_shared_experts", json_null());
    expect_config("ncds", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.shared_experts, 0);
}

/* Llama 4's keys as Llama4TextConfig and Llama4TextAttention take a null: use_qk_norm null
 * is false (None fails the test, no norm), head_dim null hidden_size / heads and
 * num_key_value_heads null the query heads (absent: 128 and 8), floor_scale and attn_scale
 * null refused where the NoPE layers' temperature reads them; the fp8 forms' ignore lists
 * name Llama 4's routers (feed_forward.router), as written and as read. */
static void test_llama4_nulls(void **state)
{
    char path[512];
    json_t *c, *ig;
    size_t i;
    int routers = 0;

    (void)state;
    synth("l4n", "--family llama4 --shards 1");
    expect_config("l4n", HLX_OK, NULL);
    assert_true(g_cfg.m.qk_norm && g_cfg.m.qk_norm_unit && g_cfg.m.attn_temp_floor == 4);
    set_key("l4n", "use_qk_norm", json_null());
    expect_config("l4n", HLX_OK, NULL);
    assert_true(!g_cfg.m.qk_norm && !g_cfg.m.qk_norm_unit);
    set_key("l4n", "use_qk_norm", NULL);
    expect_config("l4n", HLX_OK, NULL);
    assert_true(g_cfg.m.qk_norm && g_cfg.m.qk_norm_unit);
    set_key("l4n", "num_attention_heads", json_integer(16));
    set_key("l4n", "head_dim", json_null());
    set_key("l4n", "num_key_value_heads", json_null());
    expect_config("l4n", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.head_dim, 256 / 16);
    assert_int_equal(g_cfg.m.kv_heads, 16);
    set_key("l4n", "head_dim", NULL);
    set_key("l4n", "num_key_value_heads", NULL);
    expect_config("l4n", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.head_dim, 128);
    assert_int_equal(g_cfg.m.kv_heads, 8);
    set_key("l4n", "num_attention_heads", json_integer(8));
    set_key("l4n", "head_dim", json_integer(32));
    set_key("l4n", "num_key_value_heads", json_integer(2));
    expect_key("l4n", "floor_scale", json_null(), HLX_ERR_PARSE, "floor_scale: null is not a "
               "count", json_integer(4));
    expect_key("l4n", "attn_scale", json_null(), HLX_ERR_PARSE, "attn_scale: null is not a "
               "number", json_real(0.5));
    set_key("l4n", "attn_temperature_tuning", json_false()); /* not read then */
    set_key("l4n", "attn_scale", json_null());
    expect_config("l4n", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.attn_temp_floor, 0);
    /* the shapes absent: Llama4TextConfig's (Scout's), not refused */
    {
        static const char *const shape[] = { "num_hidden_layers", "hidden_size",
                                             "num_attention_heads", "intermediate_size",
                                             "vocab_size" };
        for (i = 0; i < sizeof(shape) / sizeof(shape[0]); i++)
            set_key("l4n", shape[i], NULL);
        set_key("l4n", "no_rope_layers", NULL); /* the synth's list is 3 layers long */
        set_key("l4n", "no_rope_layer_interval", NULL);
        expect_config("l4n", HLX_OK, NULL);
        assert_int_equal(g_cfg.m.layers, 48);
        assert_int_equal(g_cfg.m.hidden, 5120);
        assert_int_equal(g_cfg.m.q_heads, 40);
        assert_int_equal(g_cfg.m.expert_ffn, 8192);
        assert_int_equal(g_cfg.m.vocab, 202048);
        assert_int_equal(g_cfg.m.nope_pattern, 4);
    }
    /* the routers left unquantized by their own names, per layer (layers 1 and 3 of 4) and
     * as llm-compressor's expression */
    synth("l4fp8", "--family llama4 --layers 4 --dtype fp8 --fp8-format fp8 --shards 1");
    expect_config("l4fp8", HLX_OK, NULL);
    c = config_json("l4fp8", path);
    ig = json_object_get(json_object_get(c, "quantization_config"), "ignored_layers");
    for (i = 0; i < json_array_size(ig); i++) {
        const char *e = json_string_value(json_array_get(ig, i));
        routers += !strcmp(e, "model.layers.1.feed_forward.router") ||
                   !strcmp(e, "model.layers.3.feed_forward.router");
        assert_null(strstr(e, "mlp.gate"));
    }
    json_decref(c);
    assert_int_equal(routers, 2);
    synth("l4ct", "--family llama4 --dtype fp8 --fp8-format compressed-tensors --shards 1");
    c = config_json("l4ct", path);
    ig = json_object_get(json_object_get(c, "quantization_config"), "ignore");
    assert_string_equal(json_string_value(json_array_get(ig, 1)), "re:.*feed_forward.router$");
    json_decref(c);
    expect_config("l4ct", HLX_OK, NULL);
}

static void nest_config(const char *name, const char *arch, const char *model_type);

/* Sets name's quantization_config.KEY (ignore, ignored_layers, exclude_modules) to the
 * list `head` (NULL: none) then the NULL-terminated entries. */
static void set_ignore(const char *name, const char *key, const char *head,
                       const char *const *entries)
{
    char path[512];
    json_t *c = config_json(name, path), *q = json_object_get(c, "quantization_config");
    json_t *a = json_array();

    assert_true(json_is_object(q));
    if (head != NULL)
        json_array_append_new(a, json_string(head));
    for (; entries != NULL && *entries != NULL; entries++)
        json_array_append_new(a, json_string(*entries));
    json_object_set_new(q, key, a);
    config_save(c, path);
}

/* Whether kinds (hlx_hf_unquant_str's form: "a, b (layers 0 3), c") names kind kn in
 * layer l (every layer, or one of those listed). */
static int kinds_name(const char *kinds, const char *kn, int l)
{
    const char *p = kinds;
    size_t k = strlen(kn);

    while ((p = strstr(p, kn)) != NULL) {
        const int starts = p == kinds || (p >= kinds + 2 && p[-2] == ',' && p[-1] == ' ');
        const char *q = p + k;
        p += k;
        if (!starts)
            continue;
        if (*q == '\0' || *q == ',')
            return 1;
        if (!strncmp(q, " (layers ", 9)) {
            for (q += 9; *q && *q != ')';) {
                char *end;
                long v = strtol(q, &end, 10);
                if (end == q)
                    break;
                if (v == l)
                    return 1;
                q = end + (*end == ' ');
            }
            return 0;
        }
    }
    return 0;
}

/* expect_config(name) with the list of set_ignore: loaded, and the kinds read unquantized
 * are `kinds` (hlx_hf_unquant_str), each Linear of hlx_hf_expect then expected in
 * torch_dtype exactly where kinds names its kind in its layer. */
static void expect_unquant(const char *name, const char *key, const char *const *entries,
                           const char *kinds)
{
    char buf[2048], kn[64];
    hlx_hf_expect_t *list = NULL;
    size_t n = 0, i;
    int plain = 0, l;

    set_ignore(name, key, "lm_head", entries);
    expect_config(name, HLX_OK, NULL);
    hlx_hf_unquant_str(&g_cfg, buf, sizeof(buf));
    if (strcmp(buf, kinds))
        fail_msg("%s: %s leaves '%s' unquantized, wanted '%s'", name, entries[0], buf, kinds);
    assert_int_equal(hlx_hf_expect(&g_cfg, &list, &n, buf, sizeof(buf)), HLX_OK);
    for (i = 0; i < n; i++) {
        if (list[i].kind < 0)
            continue;
        hlx_hf_kind_name(list[i].name, kn, sizeof(kn));
        assert_int_equal(sscanf(list[i].name, "model.layers.%d.", &l), 1);
        if ((list[i].dtype == g_cfg.st_dtype) != kinds_name(kinds, kn, l))
            fail_msg("%s: %s is %s", name, list[i].name,
                     list[i].dtype == g_cfg.st_dtype ? "unquantized" : "quantized");
        plain += list[i].dtype == g_cfg.st_dtype;
    }
    assert_true((plain > 0) == (kinds[0] != '\0'));
    free(list);
}

/* Ignore lists leaving kinds of Linear layer unquantized (hlx_hf_config_t.unquant, and
 * unquant_layer for some layers): compressed-tensors' and the fp8 method's "re:"
 * expressions (Python's syntax: \d, (?:), lazy quantifiers, brackets; matched from the
 * start of the module's name) and names, ModelOpt's wildcards, fbgemm_fp8's
 * modules_to_not_convert (transformers' rule), a nested model's names; refused: some of a
 * layer's experts, some layers past the 256th, every kind, expressions POSIX has no form
 * for, a non-string. */
static void test_ignore_lists(void **state)
{
    static const struct {
        const char *e[3], *kinds;
    } ok[] = {
        { { "re:.*self_attn.*" }, "self_attn.q_proj, self_attn.k_proj, self_attn.v_proj, "
                                  "self_attn.o_proj" },
        { { "re:.*\\d\\.mlp\\.(?:down|up)_proj$" }, "mlp.up_proj, mlp.down_proj" },
        { { "re:model\\.layers\\.[0-9]+\\.self_attn\\.[qk]_proj" },
          "self_attn.q_proj, self_attn.k_proj" },
        { { "re:.*o_pro+?j" }, "self_attn.o_proj" },
        { { "re:.*[\\.]gate_proj$" }, "mlp.gate_proj" },
        { { "model.layers.0.mlp.gate_proj", "model.layers.1.mlp.gate_proj" }, "mlp.gate_proj" },
        { { "re:self_attn" }, "" },                     /* re.match: from the start */
        { { "model.layers.7.self_attn.q_proj" }, "" },  /* no such layer */
        { { "Llama4TextAttention" }, "" },              /* a class: not a Linear */
        /* some layers: those alone */
        { { "model.layers.0.mlp.down_proj" }, "mlp.down_proj (layers 0)" },
        { { "re:model\\.layers\\.1\\.(mlp|self_attn\\.o_proj)" },
          "self_attn.o_proj (layers 1), mlp.gate_proj (layers 1), mlp.up_proj (layers 1), "
          "mlp.down_proj (layers 1)" },
        /* "{" and "}" outside a count: Python's literals */
        { { "re:.*o_proj}?" }, "self_attn.o_proj" },
        { { "re:.*q_proj{?" }, "self_attn.q_proj" },
    };
    static const struct {
        const char *e, *needle;
        hlx_status_t st;
    } bad[] = {
        { "re:.*", "ignore: leaves every Linear layer unquantized", HLX_ERR_PARSE },
        { "Linear", "ignore: leaves every Linear layer unquantized", HLX_ERR_PARSE },
        { "re:.*(?=q)", "ignore[1]: regular expression .*(?=q): a group of the form (?...)",
          HLX_ERR_PARSE },
        { "re:.*\\bq_proj", "ignore[1]: regular expression .*\\bq_proj: an escape other than",
          HLX_ERR_PARSE },
        { "re:.*[[:alpha:]]", "a POSIX class ([:name:]) inside brackets", HLX_ERR_PARSE },
        { "re:.*(q_proj", "ignore[1]: regular expression .*(q_proj: ", HLX_ERR_PARSE },
        { "re:[a", "an unterminated [", HLX_ERR_PARSE },
        /* POSIX would read [:alpha:] as a class, Python as the characters */
        { "re:[\\[:alpha:]x]", "a POSIX class ([:name:]) inside brackets", HLX_ERR_PARSE },
        /* Python 3.11's possessive quantifier (never gives back: matches nothing here) */
        { "re:.*+q_proj", "a quantifier right after another", HLX_ERR_PARSE },
        /* regcomp builds an automaton of its length times 17 x 17: a list of such ones
         * would take gigabytes */
        { "re:((.|.|.|.|.|.|.|.|.|.|.|.|.|.|.|.|.|.|.|.|.|.|.|.){16}){16}",
          "too large once its counts are expanded", HLX_ERR_PARSE },
    };
    size_t i;

    (void)state;
    synth("ign", "--family dense --dtype fp8 --fp8-scales channel --shards 1");
    for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        expect_unquant("ign", "ignore", ok[i].e, ok[i].kinds);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *e[2] = { bad[i].e, NULL };
        set_ignore("ign", "ignore", "lm_head", e);
        expect_config("ign", bad[i].st, bad[i].needle);
    }
    set_key_in("ign", "quantization_config", "ignore", json_pack("[s, i]", "lm_head", 5));
    expect_config("ign", HLX_ERR_PARSE, "ignore[1]: expected a module name");
    /* the head named by any expression that matches it as llm-compressor matched it */
    set_key_in("ign", "quantization_config", "ignore",
               json_pack("[s]", "re:(?:language_model\\.)?lm_head$"));
    expect_config("ign", HLX_OK, NULL);
    set_key_in("ign", "quantization_config", "ignore", json_pack("[s]", "re:lm_headx"));
    expect_config("ign", HLX_ERR_PARSE, "ignore: expected a list naming the head");
    /* routed experts: every expert's down_proj, or refused for some experts only */
    synth("ignmoe", "--family qwen3-moe --dtype fp8 --fp8-format fp8 --layers 4 --shards 1");
    {
        const char *e[] = { "re:.*experts\\.\\d+\\.down_proj", NULL };
        const char *e0[] = { "re:.*experts\\.0\\.", NULL };
        const char *e1[] = { "re:model\\.layers\\.1\\.mlp\\.experts\\.\\d+\\.up_proj", NULL };
        expect_unquant("ignmoe", "ignored_layers", e, "mlp.experts.*.down_proj");
        expect_unquant("ignmoe", "ignored_layers", e1, "mlp.experts.*.up_proj (layers 1)");
        set_ignore("ignmoe", "ignored_layers", "lm_head", e0);
        expect_config("ignmoe", HLX_ERR_UNSUPPORTED, "ignored_layers[1]: leaves "
                      "model.layers.1.mlp.experts.0.gate_proj unquantized but not "
                      "model.layers.1.mlp.experts.1.gate_proj: a layer's experts are read "
                      "unquantized all or none");
    }
    /* fbgemm_fp8's modules_to_not_convert, by transformers' rule: an expression from the
     * start of the name (a parent module names its Linears, "model.layers.1" layers 1 and
     * 10 to 19 alike), or the name's end */
    synth("ignfb", "--family dense --dtype fp8 --fp8-format fbgemm_fp8 --layers 12 --shards 1");
    {
        const char *e[] = { "model.layers.0.mlp", "model.layers.11.mlp", "o_proj", NULL };
        const char *e1[] = { "model.layers.1", NULL };
        const char *e2[] = { "mlp.(gate|up)_proj", NULL };
        expect_unquant("ignfb", "modules_to_not_convert", e, "self_attn.o_proj, mlp.gate_proj "
                       "(layers 0 11), mlp.up_proj (layers 0 11), mlp.down_proj (layers 0 11)");
        expect_unquant("ignfb", "modules_to_not_convert", e1, "self_attn.q_proj (layers 1 10 11), "
                       "self_attn.k_proj (layers 1 10 11), self_attn.v_proj (layers 1 10 11), "
                       "self_attn.o_proj (layers 1 10 11), mlp.gate_proj (layers 1 10 11), "
                       "mlp.up_proj (layers 1 10 11), mlp.down_proj (layers 1 10 11)");
        expect_unquant("ignfb", "modules_to_not_convert", e2, ""); /* from the start */
        set_key_in("ignfb", "quantization_config", "modules_to_not_convert", json_null());
        expect_config("ignfb", HLX_OK, NULL); /* none: lm_head implied */
        assert_true(g_cfg.unquant == 0 && g_cfg.fp8_form == HLX_HF_QF_FBGEMM && g_cfg.fp8_channel);
        set_key_in("ignfb", "quantization_config", "modules_to_not_convert",
                   json_string("lm_head"));
        expect_config("ignfb", HLX_ERR_PARSE, "modules_to_not_convert: expected a list of "
                      "module names, or null");
        set_key_in("ignfb", "quantization_config", "modules_to_not_convert",
                   json_pack("[s, i]", "lm_head", 5));
        expect_config("ignfb", HLX_ERR_PARSE, "modules_to_not_convert[1]: expected a module "
                      "name, or a Python regular expression (transformers' rule)");
        set_key_in("ignfb", "quantization_config", "modules_to_not_convert", json_null());
        set_key_in("ignfb", "quantization_config", "activation_scale_ub", json_integer(0));
        expect_config("ignfb", HLX_ERR_PARSE, "activation_scale_ub: expected a number > 0");
        set_key_in("ignfb", "quantization_config", "activation_scale_ub", json_string("1200"));
        expect_config("ignfb", HLX_ERR_PARSE, "activation_scale_ub: expected a number > 0");
        /* past the first 256 layers a kind is unquantized in every layer or none */
        set_key_in("ignfb", "quantization_config", "activation_scale_ub", json_real(1200));
        set_key("ignfb", "num_hidden_layers", json_integer(300));
        {
            const char *late[] = { "model.layers.299.mlp.down_proj", NULL };
            const char *early[] = { "model.layers.255.mlp.down_proj", NULL };
            set_ignore("ignfb", "modules_to_not_convert", "lm_head", late);
            expect_config("ignfb", HLX_ERR_UNSUPPORTED, "leaves model.layers.299.mlp.down_proj "
                          "unquantized but not model.layers.256.mlp.down_proj: a kind of layer "
                          "(mlp.down_proj) is read unquantized in every layer or in some of the "
                          "first 256");
            expect_unquant("ignfb", "modules_to_not_convert", early, "mlp.down_proj (layers 255)");
        }
    }
    /* ModelOpt: fnmatch wildcards, not expressions */
    synth("ignmo", "--family dense --dtype fp8 --fp8-format modelopt --shards 1");
    {
        const char *e[] = { "*.mlp.*_proj", NULL };
        const char *r[] = { "re:.*mlp.*", NULL };
        expect_unquant("ignmo", "exclude_modules", e, "mlp.gate_proj, mlp.up_proj, "
                       "mlp.down_proj");
        expect_unquant("ignmo", "exclude_modules", r, "");
        /* every Linear by ModelOpt's other list alone: the error there, not at the absent
         * exclude_modules */
        set_key_in("ignmo", "quantization_config", "exclude_modules", NULL);
        set_key_in("ignmo", "quantization_config", "ignore", json_pack("[s, s]", "lm_head", "*"));
        expect_config("ignmo", HLX_ERR_PARSE, "ignore: leaves every Linear layer unquantized");
    }
    /* Idefics3 and SmolVLM: the text model as model.text_model. */
    synth("igni3", "--family dense --dtype fp8 --fp8-scales channel --shards 1");
    nest_config("igni3", "SmolVLMForConditionalGeneration", "smolvlm");
    {
        char path[512];
        json_t *c = config_json("igni3", path), *t = json_object_get(c, "text_config");
        const char *e[] = { "re:model\\.text_model\\.layers\\.\\d+\\.self_attn\\.",
                            "re:model.vision_model.*", NULL };
        json_object_set(c, "quantization_config", json_object_get(t, "quantization_config"));
        json_object_del(t, "quantization_config");
        config_save(c, path);
        expect_unquant("igni3", "ignore", e, "self_attn.q_proj, self_attn.k_proj, "
                       "self_attn.v_proj, self_attn.o_proj");
    }
    /* Llama 4: its modules under a multimodal model's names too */
    synth("ignl4", "--family llama4 --dtype fp8 --shards 1");
    {
        const char *e[] = { "re:language_model\\.model\\.layers\\.\\d+\\.self_attn\\.",
                            "re:model\\.language_model\\.layers\\.\\d+\\.feed_forward\\.shared_expert\\.",
                            NULL };
        expect_unquant("ignl4", "ignore", e, "self_attn.q_proj, self_attn.k_proj, "
                       "self_attn.v_proj, self_attn.o_proj, feed_forward.shared_expert.gate_proj, "
                       "feed_forward.shared_expert.up_proj, feed_forward.shared_expert.down_proj");
    }
    /* fbgemm_fp8 on Llama 4: transformers matches the routed experts as one module,
     * model.layers.L.feed_forward.experts (converted whole), not as Linears of their own */
    synth("ignl4fb", "--family llama4 --dtype fp8 --fp8-format fbgemm_fp8 --shards 1");
    {
        const char *ex[] = { "experts", NULL };
        const char *dn[] = { "down_proj", NULL };
        const char *one[] = { "model.layers.1.feed_forward.experts.1", NULL };
        const char *dense[] = { "model.layers.0.feed_forward", NULL };
        char dir[512];
        expect_unquant("ignl4fb", "modules_to_not_convert", ex, "feed_forward.experts.*.gate_proj, "
                       "feed_forward.experts.*.up_proj, feed_forward.experts.*.down_proj");
        expect_unquant("ignl4fb", "modules_to_not_convert", dn, "feed_forward.down_proj, "
                       "feed_forward.shared_expert.down_proj");
        expect_unquant("ignl4fb", "modules_to_not_convert", one, "");
        /* model info names the layers, the JSON one item per kind */
        expect_unquant("ignl4fb", "modules_to_not_convert", dense, "feed_forward.gate_proj "
                       "(layers 0), feed_forward.up_proj (layers 0), feed_forward.down_proj "
                       "(layers 0)");
        dir_of(dir, sizeof(dir), "ignl4fb");
        assert_int_equal(sh("timeout 60 %s model info --config-only %s | grep -qF 'left "
                            "unquantized by the ignore list (stored bfloat16): "
                            "feed_forward.gate_proj (layers 0)'", helix, dir), 0);
        assert_int_equal(sh("timeout 60 %s model info --config-only --json %s | grep -qF "
                            "'\"feed_forward.up_proj (layers 0)\"'", helix, dir), 0);
    }
}

/* StarCoder2 (Starcoder2ForCausalLM): LayerNorms with biases, use_bias on q, k, v, o_proj
 * and the plain MLP (mlp.c_fc, mlp.c_proj), norm_epsilon, gelu_pytorch_tanh, a tied head
 * and no window by default; starcoder2-3b's config.json read to its published 3.03B. */
static void test_starcoder2(void **state)
{
    static const char *const defaulted[] = { "norm_epsilon", "use_bias", "hidden_act",
                                             "tie_word_embeddings", "num_key_value_heads",
                                             "head_dim", NULL };
    char dir[512], err[1024];
    hlx_hf_config_t cfg;
    hlx_hf_expect_t *list = NULL;
    size_t n = 0, i;
    int fc = 0, fcb = 0, pj = 0, pjb = 0, lnb = 0, gated = 0, nb = 0;

    (void)state;
    synth_cfg("sc2", "--family starcoder2 --shards 1", "Starcoder2ForCausalLM", dir,
              sizeof(dir), &cfg);
    assert_true(cfg.m.norm_layer && cfg.m.ffn_plain && cfg.m.ffn_bias && cfg.m.qkv_bias &&
                cfg.m.o_bias && cfg.m.ffn_act == HLX_ACT_GELU_TANH && cfg.m.norm_eps == 1e-5 &&
                !cfg.tie_word_embeddings && cfg.m.sliding_window == 0);
    /* the inventory: c_fc [F, H] and its bias [F], c_proj [H, F] and its bias [H], the two
     * LayerNorms' biases per layer and the final one's; no gate or up projection */
    assert_int_equal(hlx_hf_expect(&cfg, &list, &n, err, sizeof(err)), HLX_OK);
    for (i = 0; i < n; i++) {
        fc += strstr(list[i].name, "mlp.c_fc.weight") != NULL && list[i].shape[0] == 512 &&
              list[i].shape[1] == 256;
        fcb += strstr(list[i].name, "mlp.c_fc.bias") != NULL && list[i].shape[0] == 512;
        pj += strstr(list[i].name, "mlp.c_proj.weight") != NULL && list[i].shape[0] == 256 &&
              list[i].shape[1] == 512;
        pjb += strstr(list[i].name, "mlp.c_proj.bias") != NULL && list[i].shape[0] == 256;
        lnb += strstr(list[i].name, "layernorm.bias") != NULL && list[i].shape[0] == 256;
        gated += strstr(list[i].name, "gate_proj") != NULL || strstr(list[i].name, "up_proj");
        nb += !strcmp(list[i].name, "model.norm.bias");
    }
    free(list);
    assert_true(fc == 2 && fcb == 2 && pj == 2 && pjb == 2 && lnb == 4 && gated == 0 &&
                nb == 1);
    assert_int_equal(check_dir("sc2", &cfg, err, sizeof(err)), HLX_OK);
    ckpt_variant("sc2", "sc2ok", NULL, NULL, NULL, 0, NULL);
    ckpt_variant("sc2", "sc2nob", "model.layers.1.mlp.c_proj.bias", NULL, NULL, 0,
                 "tensor model.layers.1.mlp.c_proj.bias is missing");
    ckpt_variant("sc2", "sc2nolnb", "model.layers.0.input_layernorm.bias", NULL, NULL, 0,
                 "tensor model.layers.0.input_layernorm.bias is missing");
    ckpt_variant("sc2", "sc2nonb", "model.norm.bias", NULL, NULL, 0,
                 "tensor model.norm.bias is missing");
    ckpt_variant("sc2", "sc2fc", NULL, "model.layers.0.mlp.c_fc.weight", NULL, 300,
                 "model.layers.0.mlp.c_fc.weight");
    ckpt_variant("sc2", "sc2gate", NULL, NULL, "model.layers.0.mlp.gate_proj.weight", 512,
                 "gate_proj.weight is not part of a Starcoder2ForCausalLM");
    assert_int_equal(sh("timeout 60 %s model info %s | grep -q 'every norm a LayerNorm'",
                        helix, dir), 0);
    assert_int_equal(sh("timeout 60 %s model info %s | grep -q 'a plain MLP: gelu_tanh'",
                        helix, dir), 0);
    set_key("sc2", "architectures", NULL); /* model_type alone */
    expect_config("sc2", HLX_OK, NULL);
    assert_string_equal(g_cfg.arch, "Starcoder2ForCausalLM");
    set_key("sc2", "architectures", json_pack("[s]", "Starcoder2ForCausalLM"));
    /* the refusals at their key: the exact GELU, an eps of 0 or below, a head size other
     * than hidden_size / num_attention_heads */
    expect_key("sc2", "hidden_act", json_string("gelu"), HLX_ERR_PARSE,
               "hidden_act: \"gelu\" is not supported for Starcoder2ForCausalLM",
               json_string("gelu_pytorch_tanh"));
    expect_key("sc2", "hidden_act", json_integer(3), HLX_ERR_PARSE, "hidden_act",
               json_string("gelu_pytorch_tanh"));
    expect_key("sc2", "norm_epsilon", json_real(0.0), HLX_ERR_PARSE, "norm_epsilon",
               json_real(1e-5));
    expect_key("sc2", "norm_epsilon", json_real(-1e-5), HLX_ERR_PARSE, "norm_epsilon",
               json_real(1e-5));
    expect_key("sc2", "norm_epsilon", json_string("x"), HLX_ERR_PARSE, "norm_epsilon",
               json_real(1e-5));
    expect_key("sc2", "use_bias", json_string("yes"), HLX_ERR_PARSE, "use_bias",
               json_true());
    expect_key("sc2", "use_bias", json_null(), HLX_ERR_PARSE, "use_bias: null", json_true());
    /* null where Starcoder2Config would store None and its layers fail: refused, not read
     * as the default */
    expect_key("sc2", "norm_epsilon", json_null(), HLX_ERR_PARSE, "norm_epsilon: null: "
               "Starcoder2ForCausalLM would fail on it", json_real(1e-5));
    expect_key("sc2", "hidden_act", json_null(), HLX_ERR_PARSE, "hidden_act: null: "
               "Starcoder2ForCausalLM would fail on it", json_string("gelu_pytorch_tanh"));
    expect_key("sc2", "head_dim", json_integer(64), HLX_ERR_PARSE,
               "head_dim: head size 64 x num_attention_heads 8 is not hidden_size 256", NULL);
    /* gelu_new is the same tanh form; silu read; use_bias false: no bias at all */
    expect_key("sc2", "hidden_act", json_string("gelu_new"), HLX_OK, NULL,
               json_string("gelu_pytorch_tanh"));
    expect_key("sc2", "hidden_act", json_string("silu"), HLX_OK, NULL,
               json_string("gelu_pytorch_tanh"));
    assert_int_equal(g_cfg.m.ffn_act, HLX_ACT_SILU);
    expect_key("sc2", "use_bias", json_false(), HLX_OK, NULL, json_true());
    assert_true(!g_cfg.m.qkv_bias && !g_cfg.m.o_bias && !g_cfg.m.ffn_bias &&
                g_cfg.m.norm_layer && g_cfg.m.ffn_plain);
    /* a window on every layer, as Mistral's (Starcoder2Model's sliding-window mask) */
    expect_key("sc2", "sliding_window", json_integer(6), HLX_OK, NULL, NULL);
    assert_true(g_cfg.m.sliding_window == 6 && g_cfg.m.sliding_pattern == 0 &&
                g_cfg.m.sliding_from == 0);
    /* Starcoder2Config's defaults for the keys left out: 1e-5, biases, gelu_pytorch_tanh, a
     * tied head, the query heads' count of KV heads */
    drop_keys("sc2", defaulted);
    expect_config("sc2", HLX_OK, NULL);
    assert_true(g_cfg.m.norm_eps == 1e-5 && g_cfg.m.ffn_bias && g_cfg.m.qkv_bias &&
                g_cfg.m.o_bias && g_cfg.m.ffn_act == HLX_ACT_GELU_TANH &&
                g_cfg.tie_word_embeddings && g_cfg.m.kv_heads == 8);
    /* starcoder2-3b (tests/model/data/hf_config/starcoder2-3b.json): embedding 49152 x 3072
     * = 150,994,944, tied; 30 layers of q and o (3072 x 3072 + 3072 each), k and v (3072 x
     * 256 + 256 each), c_fc (3072 x 12288 + 12288), c_proj (12288 x 3072 + 3072) and two
     * LayerNorms (2 x 3072 each): 30 x 95,979,008 = 2,879,370,240; the final LayerNorm
     * 6144: 3,030,371,328 (the published 3.03B) */
    assert_int_equal(sh("mkdir -p %s/sc3b && cp %s/tests/model/data/hf_config/starcoder2-3b.json "
                        "%s/sc3b/config.json", g_tmp, HLX_SOURCE_ROOT, g_tmp), 0);
    expect_config("sc3b", HLX_OK, NULL);
    assert_true(g_cfg.m.layers == 30 && g_cfg.m.hidden == 3072 && g_cfg.m.q_heads == 24 &&
                g_cfg.m.kv_heads == 2 && g_cfg.m.head_dim == 128 && g_cfg.m.ffn == 12288 &&
                g_cfg.m.vocab == 49152 && g_cfg.m.rope_theta == 999999.4420358813 &&
                g_cfg.m.norm_eps == 1e-5 && g_cfg.m.sliding_window == 4096 &&
                g_cfg.tie_word_embeddings && g_cfg.m.norm_layer && g_cfg.m.ffn_bias);
    assert_true(hlx_model_params(&g_cfg.m) == 3030371328.0);
    assert_int_equal(sh("timeout 60 %s model info %s/sc3b --config-only --json | python3 -c "
                        "'import json, sys; sys.exit(json.load(sys.stdin)[\"params\"] != "
                        "3030371328)'", helix, g_tmp), 0);
}

/* Integer weights' bits (docs/model.md "Integer weights"): GPTQ's 2, 3, 4 or 8, in
 * quantization_config (checkpoint_format gptq or gptq_v2) and in AutoGPTQ's
 * quantize_config.json; AWQ's 4 only, compressed-tensors' 4 or 8; the rest refused at the
 * key. */
static void test_int_bits(void **state)
{
    static const int gptq_ok[] = { 2, 3, 4, 8 };
    char path[512];
    json_t *c;
    size_t i;

    (void)state;
    assert_int_equal(sh("mkdir -p %s/qg %s/qa %s/qc %s/qs && "
                        "cp %s/tests/model/data/hf_config/gptq.json %s/qg/config.json && "
                        "cp %s/tests/model/data/hf_config/awq.json %s/qa/config.json && "
                        "cp %s/tests/model/data/hf_config/ct-int.json %s/qc/config.json",
                        g_tmp, g_tmp, g_tmp, g_tmp, HLX_SOURCE_ROOT, g_tmp, HLX_SOURCE_ROOT,
                        g_tmp, HLX_SOURCE_ROOT, g_tmp), 0);
    for (i = 0; i < sizeof(gptq_ok) / sizeof(gptq_ok[0]); i++) {
        set_key_in("qg", "quantization_config", "bits", json_integer(gptq_ok[i]));
        set_key_in("qg", "quantization_config", "checkpoint_format",
                   json_string(i % 2 ? "gptq_v2" : "gptq"));
        expect_config("qg", HLX_OK, NULL);
        assert_int_equal(g_cfg.packing.bits, gptq_ok[i]);
        assert_int_equal(g_cfg.packing.pack, i % 2 ? HLX_PACK_GPTQ_V2 : HLX_PACK_GPTQ);
    }
    set_key_in("qg", "quantization_config", "bits", json_integer(5));
    expect_config("qg", HLX_ERR_PARSE, "bits: expected 2, 3, 4 or 8 (bits per weight)");
    set_key_in("qg", "quantization_config", "bits", json_integer(1));
    expect_config("qg", HLX_ERR_PARSE, "bits: expected 2, 3, 4 or 8 (bits per weight)");
    /* AutoGPTQ's quantize_config.json beside a config.json without quantization_config */
    set_key("qg", "quantization_config", NULL);
    assert_int_equal(sh("cp %s/qg/config.json %s/qs/ && printf '{\"bits\": 3, \"group_size\": "
                        "128, \"desc_act\": false, \"sym\": true}' >%s/qs/quantize_config.json",
                        g_tmp, g_tmp, g_tmp), 0);
    expect_config("qs", HLX_OK, NULL);
    assert_true(g_cfg.packing.pack == HLX_PACK_GPTQ && g_cfg.packing.bits == 3 &&
                g_cfg.packing.group == 128);
    assert_int_equal(sh("printf '{\"bits\": 2, \"group_size\": 64, \"quant_method\": "
                        "\"gptq\", \"checkpoint_format\": \"gptq_v2\"}' "
                        ">%s/qs/quantize_config.json", g_tmp), 0);
    expect_config("qs", HLX_OK, NULL);
    assert_true(g_cfg.packing.pack == HLX_PACK_GPTQ_V2 && g_cfg.packing.bits == 2);
    assert_int_equal(sh("printf '{\"bits\": 6, \"group_size\": 64}' "
                        ">%s/qs/quantize_config.json", g_tmp), 0);
    expect_config("qs", HLX_ERR_PARSE, "quantize_config.json:1:2: bits: expected 2, 3, 4 or 8");
    /* AWQ: 4 bits only; compressed-tensors: 4 or 8 */
    for (i = 2; i <= 8; i++) {
        set_key_in("qa", "quantization_config", "bits", json_integer((json_int_t)i));
        expect_config("qa", i == 4 ? HLX_OK : HLX_ERR_PARSE,
                      i == 4 ? NULL : "bits: expected 4 (AWQ's weights are 4-bit)");
        c = config_json("qc", path);
        json_object_set_new(json_object_get(json_object_get(json_object_get(json_object_get(
                                c, "quantization_config"), "config_groups"), "group_0"),
                                "weights"),
                            "num_bits", json_integer((json_int_t)i));
        config_save(c, path);
        expect_config("qc", i == 4 || i == 8 ? HLX_OK : HLX_ERR_PARSE,
                      i == 4 || i == 8 ? NULL : "integer weights must be 4 or 8 bits");
        if (i == 4 || i == 8)
            assert_true(g_cfg.packing.pack == HLX_PACK_CT && g_cfg.packing.bits == (int)i);
    }
}

/* Gemma3ForCausalLM: Gemma3TextConfig's keys and defaults, its norms' names, the window
 * pattern from sliding_window_pattern or layer_types, what is refused. */
static void test_gemma3(void **state)
{
    char dir[512], err[1024];
    hlx_hf_config_t cfg;
    hlx_hf_weight_t w;
    int layer;
    int64_t wrow;

    (void)state;
    synth_cfg("g3", "--family gemma3 --shards 1", "Gemma3ForCausalLM", dir, sizeof(dir), &cfg);
    assert_int_equal(cfg.fused, HLX_HF_GEMMA);
    assert_true(cfg.m.qk_norm && cfg.m.post_norms && cfg.m.embed_scale && !cfg.m.qkv_bias);
    assert_true(cfg.m.ffn_act == HLX_ACT_GELU_TANH && cfg.m.attn_scalar == 24.0);
    assert_true(cfg.m.sliding_window == 6 && cfg.m.sliding_pattern == 2 &&
                cfg.m.rope_local_theta == 10000.0 && cfg.m.rope_theta == 1e6);
    /* model info --json names each piece */
    {
        char path[640];
        json_error_t je;
        json_t *o, *mo;
        snprintf(path, sizeof(path), "%s/g3info.json", g_tmp);
        assert_int_equal(sh("%s model info %s --json > %s", helix, dir, path), 0);
        o = json_load_file(path, 0, &je);
        assert_non_null(o);
        mo = json_object_get(o, "model");
        assert_string_equal(json_string_value(json_object_get(mo, "ffn_act")), "gelu_tanh");
        assert_true(json_is_true(json_object_get(mo, "embed_scale")) &&
                    json_is_true(json_object_get(mo, "post_norms")));
        assert_true(json_integer_value(json_object_get(mo, "sliding_window")) == 6 &&
                    json_integer_value(json_object_get(mo, "sliding_pattern")) == 2);
        assert_true(json_real_value(json_object_get(mo, "attn_scalar")) == 24.0 &&
                    json_real_value(json_object_get(mo, "rope_local_theta")) == 10000.0);
        json_decref(o);
    }
    ckpt_variant("g3", "g3ok", NULL, NULL, NULL, 0, NULL);
    ckpt_variant("g3", "g3nopre", "model.layers.1.pre_feedforward_layernorm.weight", NULL, NULL,
                 0, "tensor model.layers.1.pre_feedforward_layernorm.weight is missing");
    /* Gemma's names: post_attention_layernorm is the attention's output norm here */
    assert_int_equal(hlx_hf_weight_at(&cfg.m, cfg.fused,
                                      "model.layers.1.post_attention_layernorm.weight", 0, &w,
                                      &layer, &wrow), 0);
    assert_true(w == HLX_HFW_POST_ATTN_NORM && layer == 1);
    assert_int_equal(hlx_hf_weight_at(&cfg.m, cfg.fused,
                                      "model.layers.0.pre_feedforward_layernorm.weight", 0, &w,
                                      &layer, &wrow), 0);
    assert_true(w == HLX_HFW_FFN_NORM && layer == 0);
    assert_int_equal(hlx_hf_weight_at(&cfg.m, cfg.fused,
                                      "model.layers.0.post_feedforward_layernorm.weight", 0, &w,
                                      &layer, &wrow), 0);
    assert_true(w == HLX_HFW_POST_FFN_NORM);
    assert_int_equal(hlx_hf_weight_at(&cfg.m, cfg.fused,
                                      "model.layers.0.post_mlp_layernorm.weight", 0, &w,
                                      &layer, &wrow), -1);
    /* Gemma3TextConfig's defaults: 4 KV heads of 256, query_pre_attn_scalar 256, a window of
     * 4096 but every 6th layer, rope_local_base_freq 10000, the head tied */
    drop_keys("g3", (const char *const[]){ "num_key_value_heads", "head_dim",
                                            "query_pre_attn_scalar", "sliding_window",
                                            "sliding_window_pattern", "rope_local_base_freq",
                                            "tie_word_embeddings", "rope_theta", NULL });
    set_key("g3", "num_attention_heads", json_integer(8));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.m.kv_heads == 4 && cfg.m.head_dim == 256 && cfg.m.attn_scalar == 256.0);
    assert_true(cfg.m.sliding_window == 4096 && cfg.m.sliding_pattern == 6);
    assert_true(cfg.m.rope_local_theta == 10000.0 && cfg.m.rope_theta == 1e6);
    assert_true(cfg.tie_word_embeddings);
    /* a null window, or a pattern of 1: every layer whole, no local base */
    set_key("g3", "sliding_window", json_null());
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.m.sliding_window == 0 && cfg.m.rope_local_theta == 0.0);
    set_key("g3", "sliding_window", json_integer(512));
    set_key("g3", "sliding_window_pattern", json_integer(1));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.m.sliding_window == 0 && cfg.m.sliding_pattern == 0);
    /* layer_types: its pattern, which must be one */
    set_key("g3", "sliding_window_pattern", NULL);
    set_key("g3", "layer_types", json_pack("[s, s]", "sliding_attention", "full_attention"));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.m.sliding_window == 512 && cfg.m.sliding_pattern == 2);
    set_key("g3", "layer_types", json_pack("[s, s]", "full_attention", "sliding_attention"));
    expect_config("g3", HLX_ERR_PARSE, "layer_types[1]: layer 1 is \"sliding_attention\", which breaks the "
                  "pattern of one full_attention layer in every 1 (as the first "
                  "full_attention layer sets it;");
    bad_layer_types("g3");
    /* what Gemma 3 never sets, and Gemma 2's exact GELU */
    set_key("g3", "final_logit_softcapping", json_real(30.0));
    expect_config("g3", HLX_ERR_PARSE, "final_logit_softcapping: soft-capping is read for "
                  "Gemma2ForCausalLM only");
    set_key("g3", "final_logit_softcapping", json_null());
    expect_key("g3", "attn_logit_softcapping", json_real(50.0), HLX_ERR_PARSE,
               "attn_logit_softcapping: soft-capping is read for Gemma2ForCausalLM only", NULL);
    expect_key("g3", "hidden_activation", json_string("gelu"), HLX_ERR_PARSE,
               "hidden_activation: \"gelu\" is not supported", NULL);
    expect_key("g3", "attention_bias", json_true(), HLX_ERR_PARSE,
               "attention_bias: projection biases are not supported", NULL);
    /* model_type alone names it */
    set_key("g3", "architectures", NULL);
    set_key("g3", "model_type", json_string("gemma3_text"));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_string_equal(cfg.arch, "Gemma3ForCausalLM");
    /* Gemma3ForConditionalGeneration: the text model's keys under text_config, with
     * Gemma3TextConfig's defaults (a 4B's text_config gives few), errors at their place */
    set_key("g3", "architectures", json_pack("[s]", "Gemma3ForConditionalGeneration"));
    expect_config("g3", HLX_ERR_PARSE, "text_config: required key is missing (the text "
                  "model's configuration)");
    set_key("g3", "text_config", json_string("x"));
    expect_config("g3", HLX_ERR_PARSE, "text_config: expected an object");
    set_key("g3", "text_config", json_pack("{s:i, s:i, s:o}", "hidden_size", 2560,
                                           "num_hidden_layers", 34, "rope_scaling",
                                           json_pack("{s:s, s:f}", "rope_type", "linear",
                                                     "factor", 8.0)));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.fused == (HLX_HF_GEMMA | HLX_HF_NESTED) && cfg.m.hidden == 2560 &&
                cfg.m.layers == 34 && cfg.m.q_heads == 8 && cfg.m.kv_heads == 4 &&
                cfg.m.vocab == 262208 && cfg.m.ffn == 9216 && cfg.m.head_dim == 256);
    assert_true(cfg.m.rope_kind == HLX_ROPE_LINEAR && cfg.m.rope_factor == 8.0 &&
                cfg.m.sliding_window == 4096 && cfg.m.sliding_pattern == 6);
    set_key("g3", "text_config", json_pack("{s:s}", "head_dim", "x"));
    expect_config("g3", HLX_ERR_PARSE, "head_dim: expected an integer");
    /* located at the key inside text_config, not at the top of the file */
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_ERR_PARSE);
    assert_null(strstr(err, "config.json:1:1:"));
}

/* ---- Idefics3ForConditionalGeneration and SmolVLMForConditionalGeneration ------------ */

/* name/config.json (a text model's, as synth writes it) nested as arch's: its keys under
 * text_config (model_type llama), torch_dtype and a vision_config at the top. */
static void nest_config(const char *name, const char *arch, const char *model_type)
{
    char path[512];
    json_t *text = config_json(name, path), *top;

    top = json_pack("{s:[s], s:s, s:O, s:{s:i}}", "architectures", arch, "model_type",
                    model_type, "torch_dtype", json_object_get(text, "torch_dtype"),
                    "vision_config", "hidden_size", 8);
    assert_non_null(top);
    json_object_del(text, "architectures");
    json_object_del(text, "torch_dtype");
    json_object_set_new(text, "model_type", json_string("llama"));
    json_object_set_new(top, "text_config", text);
    config_save(top, path);
}

/* Sets (or with v NULL removes) key of name/config.json's text_config; steals v. */
static void set_text_key(const char *name, const char *key, json_t *v)
{
    set_key_in(name, "text_config", key, v);
}

/* A checkpoint name with base's (nested) config.json whose text model's tensors are stored
 * under pfx in place of model., with the tensors extra ([1, H] each, NULL-terminated)
 * beside them; hlx_hf_check must refuse it with needle (NULL: accept it). */
static void nested_variant(const char *base, const char *name, const char *pfx,
                           const char *const *extra, const char *needle)
{
    char dir[512], err[1024] = "";
    hlx_hf_config_t cfg;
    hlx_hf_expect_t *list = NULL, *l2;
    size_t n = 0, i, k = 0, nx = 0;

    dir_of(dir, sizeof(dir), base);
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_int_equal(hlx_hf_expect(&cfg, &list, &n, err, sizeof(err)), HLX_OK);
    while (extra != NULL && extra[nx] != NULL)
        nx++;
    l2 = calloc(n + nx, sizeof(*l2));
    assert_non_null(l2);
    for (i = 0; i < n; i++, k++) {
        l2[k] = list[i];
        if (!strncmp(list[i].name, "model.", 6))
            snprintf(l2[k].name, sizeof(l2[k].name), "%s%s", pfx, list[i].name + 6);
    }
    for (i = 0; i < nx; i++, k++) {
        l2[k] = list[0];
        snprintf(l2[k].name, sizeof(l2[k].name), "%s", extra[i]);
        l2[k].shape[0] = 1;
        l2[k].shape[1] = cfg.m.hidden;
    }
    write_and_check(name, l2, k, &cfg, base, needle);
    free(l2);
    free(list);
}

/* LlamaConfig's defaults in g_cfg (32 layers of 4096, 32 KV heads, FFN 11008, vocabulary
 * vocab, rope_theta 10000) with rms_norm_eps eps and an untied head. */
static void expect_llama_defaults(int vocab, double eps)
{
    assert_true(g_cfg.m.layers == 32 && g_cfg.m.hidden == 4096 && g_cfg.m.q_heads == 32 &&
                g_cfg.m.kv_heads == 32 && g_cfg.m.ffn == 11008 && g_cfg.m.vocab == vocab &&
                g_cfg.m.head_dim == 128 && g_cfg.m.rope_theta == 10000.0);
    assert_true(g_cfg.m.norm_eps == eps && !g_cfg.tie_word_embeddings);
    assert_true(!g_cfg.m.qkv_bias && !g_cfg.m.qk_norm && g_cfg.m.sliding_window == 0);
}

/* The head tied by text_config's tie_word_embeddings alone, never the top level's. */
static void expect_text_tie(const char *name)
{
    set_key(name, "tie_word_embeddings", json_true());
    set_text_key(name, "tie_word_embeddings", NULL);
    expect_config(name, HLX_OK, NULL);
    assert_false(g_cfg.tie_word_embeddings);
    set_key(name, "tie_word_embeddings", json_false());
    set_text_key(name, "tie_word_embeddings", json_true());
    expect_config(name, HLX_OK, NULL);
    assert_true(g_cfg.tie_word_embeddings);
}

/* Qwen3-VL's 1M-context rope_scaling in text_config: yarn, factor 3 over 262144, its
 * interleaved sections [6, 5, last]. */
static void set_yarn_sections(const char *q, int last)
{
    set_key_in(q, "text_config", "rope_scaling",
               json_pack("{s:s, s:[i, i, i], s:b, s:f, s:i}", "rope_type", "yarn",
                         "mrope_section", 6, 5, last, "mrope_interleaved", 1, "factor", 3.0,
                         "original_max_position_embeddings", 262144));
}

/* A Qwen3-VL checkpoint (class arch, model_type mt) from a synthetic one of family: nested,
 * its text model_type mt_text, interleaved sections [6, 5, 5] of its 16 pairs; read. */
static void qwen3_vl_make(const char *q, const char *family, const char *arch, const char *mt)
{
    char flags[64], text[48];

    snprintf(flags, sizeof(flags), "--family %s --shards 1", family);
    snprintf(text, sizeof(text), "%s_text", mt);
    synth(q, flags);
    nest_config(q, arch, mt);
    set_text_key(q, "model_type", json_string(text));
    set_text_key(q, "rope_scaling", json_pack("{s:s, s:[i, i, i], s:b}", "rope_type", "default",
                                              "mrope_section", 6, 5, 5, "mrope_interleaved", 1));
    expect_config(q, HLX_OK, NULL);
    assert_string_equal(g_cfg.arch, arch);
}

/* Idefics3 (and SmolVLM v1) and SmolVLM2: Llama's text model under text_config, read with
 * LlamaConfig's defaults (absent text_config: Idefics3Config's own, rms_norm_eps 1e-5), the
 * head tied by text_config's tie_word_embeddings alone (vLLM's reading), the tensors under
 * model.text_model. with the vision model and connector beside them left alone. */
static void test_idefics3(void **state)
{
    static const char *const arch[] = { "Idefics3ForConditionalGeneration",
                                        "SmolVLMForConditionalGeneration" };
    static const char *const mtype[] = { "idefics3", "smolvlm" };
    static const char *const vision[] = { "model.vision_model.post_layernorm.weight",
                                          "model.connector.modality_projection.proj.weight",
                                          NULL };
    static const char *const stray[] = { "model.vision_model.post_layernorm.weight",
                                         "connector.modality_projection.proj.weight", NULL };
    char name[32];
    int a;

    (void)state;
    for (a = 0; a < 2; a++) {
        snprintf(name, sizeof(name), "i3-%d", a);
        synth(name, "--family dense --shards 1");
        nest_config(name, arch[a], mtype[a]);
        expect_config(name, HLX_OK, NULL);
        assert_string_equal(g_cfg.arch, arch[a]);
        assert_true(g_cfg.fused == HLX_HF_NESTED && g_cfg.m.layers == 2 &&
                    g_cfg.m.hidden == 256 && g_cfg.m.kv_heads == 2 && g_cfg.m.vocab == 512);
        /* the tensors: under model.text_model. with the vision model and the connector
         * beside (not read); not under the LLaVA ones' model.language_model. (vLLM maps no
         * other name); a tensor of no part of the model refused */
        nested_variant(name, "i3ok", "model.text_model.", vision, NULL);
        nested_variant(name, "i3lm", "model.language_model.", vision,
                       "model.text_model.embed_tokens.weight");
        nested_variant(name, "i3stray", "model.text_model.", stray,
                       "tensor connector.modality_projection.proj.weight is not part of a");
        /* model_type alone names the class */
        set_key(name, "architectures", NULL);
        expect_config(name, HLX_OK, NULL);
        assert_string_equal(g_cfg.arch, arch[a]);
        /* the tie: text_config's alone, never the top level's */
        expect_text_tie(name);
        /* a partial text_config (no model_type: llama): LlamaConfig's defaults, its 1e-6 */
        set_key(name, "text_config", json_pack("{s:i}", "vocab_size", 49280));
        expect_config(name, HLX_OK, NULL);
        expect_llama_defaults(49280, 1e-6);
        /* none, or null: Idefics3Config's (SmolVLMConfig's) LlamaConfig, rms_norm_eps 1e-5,
         * untied whatever the top level says; the top level's keys not the text model's */
        set_key(name, "hidden_size", json_integer(64));
        set_key(name, "tie_word_embeddings", json_true());
        set_key(name, "text_config", NULL);
        expect_config(name, HLX_OK, NULL);
        expect_llama_defaults(32000, 1e-5);
        set_key(name, "text_config", json_null());
        expect_config(name, HLX_OK, NULL);
        expect_llama_defaults(32000, 1e-5);
        set_key(name, "text_config", json_string("x"));
        expect_config(name, HLX_ERR_PARSE, "text_config: expected an object");
        /* vLLM runs Llama's layer whatever text_config names: another class refused there */
        set_key(name, "text_config", json_pack("{s:s}", "model_type", "qwen2"));
        expect_config(name, HLX_ERR_PARSE, "model_type: \"qwen2\" is not read");
        /* errors inside text_config at their place */
        set_key(name, "text_config", json_pack("{s:s}", "rms_norm_eps", "x"));
        expect_config(name, HLX_ERR_PARSE, "rms_norm_eps");
    }
    /* a quantization ignore list may name the vision model and the connector (never read),
     * as llm-compressor's Idefics3 recipe does */
    set_key("i3-1", "text_config", json_pack("{s:i}", "vocab_size", 49280));
    set_key("i3-1", "quantization_config",
            json_pack("{s:s, s:s, s:{s:{s:[s], s:{s:i, s:s, s:s, s:b, s:b}}}, s:[s, s, s]}",
                      "quant_method", "compressed-tensors", "format", "float-quantized",
                      "config_groups", "group_0", "targets", "Linear", "weights", "num_bits",
                      8, "type", "float", "strategy", "channel", "symmetric", 1, "dynamic", 0,
                      "ignore", "re:.*lm_head", "re:model.vision_model.*",
                      "re:model.connector.*"));
    expect_config("i3-1", HLX_OK, NULL);
}

/* ---- Qwen3VLForConditionalGeneration ---------------------------------------------------- */

/* Qwen3VLTextConfig's defaults in g_cfg: 32 layers of 4096, 32 query and 32 KV heads of 128,
 * FFN 22016, vocabulary 151936, rope_theta 5e6, rms_norm_eps 1e-6, q and k norms, untied. */
static void expect_qwen3_vl_defaults(void)
{
    assert_true(g_cfg.m.layers == 32 && g_cfg.m.hidden == 4096 && g_cfg.m.q_heads == 32 &&
                g_cfg.m.kv_heads == 32 && g_cfg.m.head_dim == 128 && g_cfg.m.ffn == 22016 &&
                g_cfg.m.vocab == 151936 && g_cfg.m.rope_theta == 5e6);
    assert_true(g_cfg.m.norm_eps == 1e-6 && !g_cfg.tie_word_embeddings && g_cfg.m.qk_norm &&
                !g_cfg.m.qkv_bias && g_cfg.m.rope_kind == HLX_ROPE_NONE);
}

/* Qwen3-VL: Qwen3's text model under text_config (qwen3_vl_text alone, Qwen3VLTextConfig's
 * defaults), its interleaved multimodal RoPE read as plain RoPE once its sections are checked,
 * the head tied by text_config's key alone, the tensors under model.language_model. alone
 * (vLLM's map) with the vision tower beside them; Qwen3-VL-MoE refused (3-D experts). */
static void test_qwen3_vl(void **state)
{
    static const char *const vision[] = { "model.visual.blocks.0.norm1.weight",
                                          "model.visual.deepstack_merger_list.0.norm.weight",
                                          NULL };
    const char *q = "q3v";

    (void)state;
    qwen3_vl_make(q, "qwen3", "Qwen3VLForConditionalGeneration", "qwen3_vl");
    assert_true(g_cfg.fused == HLX_HF_NESTED && g_cfg.m.layers == 2 && g_cfg.m.hidden == 256 &&
                g_cfg.m.kv_heads == 2 && g_cfg.m.head_dim == 32 && g_cfg.m.vocab == 512);
    assert_true(g_cfg.m.qk_norm && !g_cfg.m.qkv_bias && g_cfg.m.rope_kind == HLX_ROPE_NONE &&
                g_cfg.m.rope_theta == 10000.0 && !g_cfg.tie_word_embeddings);
    /* the tensors: under model.language_model. with the vision tower (and its deepstack
     * mergers) beside them; not under language_model.model. nor bare model. (Qwen2-VL's
     * older forms: vLLM maps neither for Qwen3-VL) */
    nested_variant(q, "q3vok", "model.language_model.", vision, NULL);
    nested_variant(q, "q3vlm", "language_model.model.", vision,
                   "model.language_model.embed_tokens.weight");
    nested_variant(q, "q3vflat", "model.", vision, "model.language_model.embed_tokens.weight");
    /* the sections: three adding up to head_dim / 2 when interleaved, booleans, nothing else */
    set_key_in(q, "text_config", "rope_scaling",
               json_pack("{s:s, s:[i, i, i], s:b}", "rope_type", "default", "mrope_section", 6, 5,
                         4, "mrope_interleaved", 1));
    expect_config(q, HLX_ERR_PARSE, "mrope_section: sections of 15 pairs in all");
    set_key_in(q, "text_config", "rope_scaling",
               json_pack("{s:s, s:[i, i], s:b}", "rope_type", "default", "mrope_section", 6, 10,
                         "mrope_interleaved", 1));
    expect_config(q, HLX_ERR_PARSE, "mrope_interleaved: true deals the pairs");
    set_key_in(q, "text_config", "rope_scaling",
               json_pack("{s:s, s:[i, i], s:b}", "rope_type", "default", "mrope_section", 6, 10,
                         "mrope_interleaved", 0));
    expect_config(q, HLX_OK, NULL);
    set_key_in(q, "text_config", "rope_scaling",
               json_pack("{s:s, s:[i, i, i], s:s}", "rope_type", "default", "mrope_section", 6,
                         5, 5, "mrope_interleaved", "true"));
    expect_config(q, HLX_ERR_PARSE, "mrope_interleaved: expected true or false");
    set_key_in(q, "text_config", "rope_scaling",
               json_pack("{s:s, s:[i, i, i], s:b, s:f}", "rope_type", "default", "mrope_section",
                         6, 5, 5, "mrope_interleaved", 1, "factor", 2.0));
    expect_config(q, HLX_ERR_PARSE, "factor: not read beside mrope_section");
    /* the model card's 1M context: yarn with the sections (vLLM's get_rope builds
     * MRotaryEmbedding with yarn's parameters), read as yarn; the sections checked all the
     * same; yarn's keys alone beside them; kinds other than default and yarn take none */
    set_yarn_sections(q, 5);
    expect_config(q, HLX_OK, NULL);
    assert_true(g_cfg.m.rope_kind == HLX_ROPE_YARN && g_cfg.m.rope_factor == 3.0 &&
                g_cfg.m.rope_orig_ctx == 262144 && g_cfg.m.rope_beta_fast == 32.0 &&
                g_cfg.m.rope_beta_slow == 1.0 && g_cfg.m.rope_mscale == 0.0);
    set_yarn_sections(q, 4);
    expect_config(q, HLX_ERR_PARSE, "mrope_section: sections of 15 pairs in all");
    set_key_in(q, "text_config", "rope_scaling",
               json_pack("{s:s, s:[i, i], s:b, s:f, s:i}", "rope_type", "yarn",
                         "mrope_section", 6, 10, "mrope_interleaved", 1, "factor", 3.0,
                         "original_max_position_embeddings", 262144));
    expect_config(q, HLX_ERR_PARSE, "mrope_interleaved: true deals the pairs");
    set_key_in(q, "text_config", "rope_scaling",
               json_pack("{s:s, s:[i, i, i], s:f, s:i}", "rope_type", "yarn",
                         "mrope_section", 6, 5, 0, "factor", 3.0,
                         "original_max_position_embeddings", 262144));
    expect_config(q, HLX_ERR_PARSE, "mrope_section: expected positive integers");
    set_key_in(q, "text_config", "rope_scaling",
               json_pack("{s:s, s:[i, i, i], s:b, s:f, s:f}", "rope_type", "yarn",
                         "mrope_section", 6, 5, 5, "mrope_interleaved", 1, "factor", 3.0,
                         "low_freq_factor", 1.0));
    expect_config(q, HLX_ERR_PARSE, "low_freq_factor: not a parameter of rope_scaling \"yarn\"");
    set_key_in(q, "text_config", "rope_scaling",
               json_pack("{s:s, s:[i, i, i], s:f}", "rope_type", "linear", "mrope_section", 6,
                         5, 5, "factor", 3.0));
    expect_config(q, HLX_ERR_PARSE, "mrope_section: unknown key");
    /* Qwen2.5-VL's card (yarn, factor 4 over 32768) reads the same, not interleaved */
    set_key(q, "architectures", json_pack("[s]", "Qwen2_5_VLForConditionalGeneration"));
    set_key_in(q, "text_config", "rope_scaling",
               json_pack("{s:s, s:[i, i, i], s:f, s:i}", "type", "yarn", "mrope_section", 4, 6,
                         6, "factor", 4.0, "original_max_position_embeddings", 32768));
    expect_config(q, HLX_OK, NULL);
    assert_true(g_cfg.m.rope_kind == HLX_ROPE_YARN && g_cfg.m.rope_factor == 4.0 &&
                g_cfg.m.rope_orig_ctx == 32768);
    set_key_in(q, "text_config", "rope_scaling",
               json_pack("{s:s, s:[i, i, i], s:b, s:f, s:i}", "type", "yarn", "mrope_section",
                         4, 6, 6, "mrope_interleaved", 1, "factor", 4.0,
                         "original_max_position_embeddings", 32768));
    expect_config(q, HLX_ERR_PARSE, "mrope_interleaved: not read beside yarn's mrope_section");
    set_key(q, "architectures", json_pack("[s]", "Qwen3VLForConditionalGeneration"));
    /* v5's rope_parameters: the base beside the sections */
    set_key_in(q, "text_config", "rope_scaling", NULL);
    set_key_in(q, "text_config", "rope_theta", NULL);
    set_key_in(q, "text_config", "rope_parameters",
               json_pack("{s:s, s:[i, i, i], s:b, s:f}", "rope_type", "default", "mrope_section",
                         6, 5, 5, "mrope_interleaved", 1, "rope_theta", 5e6));
    expect_config(q, HLX_OK, NULL);
    assert_true(g_cfg.m.rope_theta == 5e6 && g_cfg.m.rope_kind == HLX_ROPE_NONE);
    /* Qwen2.5-VL's sections are not interleaved: the key refused there */
    set_key(q, "architectures", json_pack("[s]", "Qwen2_5_VLForConditionalGeneration"));
    expect_config(q, HLX_ERR_PARSE,
                  "mrope_interleaved is read for Qwen3VLForConditionalGeneration");
    set_key(q, "architectures", NULL); /* model_type alone names the class */
    expect_config(q, HLX_OK, NULL);
    assert_string_equal(g_cfg.arch, "Qwen3VLForConditionalGeneration");
    /* the tie: text_config's alone, never the top level's (Qwen3-VL-2B and 4B set both) */
    expect_text_tie(q);
    /* an absent KV-head count is Qwen3VLTextConfig's 32, whatever the query heads: named */
    set_text_key(q, "num_key_value_heads", NULL);
    expect_config(q, HLX_ERR_PARSE, "transformers' default for Qwen3VLForConditionalGeneration");
    /* text_config's keys left out: Qwen3VLTextConfig's defaults */
    set_key(q, "text_config", json_object());
    expect_config(q, HLX_OK, NULL);
    expect_qwen3_vl_defaults();
    set_key(q, "text_config", json_pack("{s:s}", "model_type", "qwen3_vl_text"));
    expect_config(q, HLX_OK, NULL);
    expect_qwen3_vl_defaults();
    /* its head_dim 128 whatever hidden_size / num_attention_heads is (32 here) */
    set_key(q, "text_config", json_pack("{s:i, s:i, s:i}", "hidden_size", 256,
                                        "num_attention_heads", 8, "num_key_value_heads", 8));
    expect_config(q, HLX_OK, NULL);
    assert_true(g_cfg.m.head_dim == 128 && g_cfg.m.hidden == 256 && g_cfg.m.kv_heads == 8);
    /* its one text class: another refused at text_config's model_type (vLLM would run
     * Qwen3's layer whatever it names) */
    set_key(q, "text_config", json_pack("{s:s}", "model_type", "qwen3"));
    expect_config(q, HLX_ERR_PARSE, "model_type: \"qwen3\" is not read");
    /* no text_config (Qwen3VLConfig's defaults describe no released model), or not an
     * object; errors inside text_config at their place */
    set_key(q, "text_config", NULL);
    expect_config(q, HLX_ERR_PARSE, "text_config: required key is missing");
    set_key(q, "text_config", json_null());
    expect_config(q, HLX_ERR_PARSE, "text_config: expected an object");
    set_key(q, "text_config", json_pack("{s:s}", "head_dim", "x"));
    expect_config(q, HLX_ERR_PARSE, "head_dim: expected an integer");
}

/* Qwen3-VL-MoE: Qwen3-MoE's layer under text_config (qwen3_vl_moe_text alone), the expert
 * keys read as Qwen3-MoE's with Qwen3VLMoeTextConfig's norm_topk_prob true when absent, its
 * shapes' defaults (16 KV heads, head_dim hidden_size / heads, rope_theta 5e6), the
 * interleaved sections; the experts stored per expert read as such (its fused 3-D form:
 * tests/runtime/hf_families.sh). */
static void test_qwen3_vl_moe(void **state)
{
    static const char *const vision[] = { "model.visual.blocks.0.norm1.weight", NULL };
    const char *q = "q3vm";

    (void)state;
    qwen3_vl_make(q, "qwen3-moe", "Qwen3VLMoeForConditionalGeneration", "qwen3_vl_moe");
    assert_true(g_cfg.fused == HLX_HF_NESTED && g_cfg.moe_gqa == HLX_HF_MOE_QWEN3 &&
                g_cfg.m.qk_norm && g_cfg.m.experts == 8 && g_cfg.m.top_k == 2 &&
                g_cfg.m.expert_ffn == 64 && g_cfg.m.dense_layers == 1 && g_cfg.norm_topk_prob);
    /* the experts stored per expert (vLLM maps those names as well) under
     * model.language_model.: read as Qwen3-MoE's */
    nested_variant(q, "q3vmok", "model.language_model.", vision, NULL);
    /* the 1M-context yarn with the sections, as Qwen3-VL's */
    set_text_key(q, "rope_scaling",
                 json_pack("{s:s, s:[i, i, i], s:b, s:f, s:i}", "rope_type", "yarn",
                           "mrope_section", 6, 5, 5, "mrope_interleaved", 1, "factor", 3.0,
                           "original_max_position_embeddings", 262144));
    expect_config(q, HLX_OK, NULL);
    assert_true(g_cfg.m.rope_kind == HLX_ROPE_YARN && g_cfg.m.rope_orig_ctx == 262144);
    /* norm_topk_prob absent: Qwen3VLMoeTextConfig's true (Qwen3MoeConfig's is false) */
    set_text_key(q, "norm_topk_prob", NULL);
    expect_config(q, HLX_OK, NULL);
    assert_true(g_cfg.norm_topk_prob);
    set_text_key(q, "norm_topk_prob", json_false());
    expect_config(q, HLX_OK, NULL);
    assert_false(g_cfg.norm_topk_prob);
    /* the expert keys required, as Qwen3-MoE's; a sparse step refused as there */
    set_text_key(q, "num_experts", NULL);
    expect_config(q, HLX_ERR_PARSE, "num_experts: required key is missing");
    set_text_key(q, "num_experts", json_integer(8));
    set_text_key(q, "decoder_sparse_step", json_integer(2));
    expect_config(q, HLX_ERR_UNSUPPORTED, "decoder_sparse_step: 2: experts in every 2-th layer");
    set_text_key(q, "decoder_sparse_step", json_integer(1));
    /* its one text class */
    set_text_key(q, "model_type", json_string("qwen3_vl_text"));
    expect_config(q, HLX_ERR_PARSE, "model_type: \"qwen3_vl_text\" is not read: "
                  "Qwen3VLMoeForConditionalGeneration's text model is read when it is its own "
                  "(\"qwen3_vl_moe_text\"");
    /* model_type alone names the class */
    set_text_key(q, "model_type", json_string("qwen3_vl_moe_text"));
    set_key(q, "architectures", NULL);
    expect_config(q, HLX_OK, NULL);
    assert_string_equal(g_cfg.arch, "Qwen3VLMoeForConditionalGeneration");
    /* Qwen3VLMoeTextConfig's shape defaults: 16 KV heads whatever the query heads, head_dim
     * hidden_size / heads (not Qwen3-VL's 128), rope_theta 5e6 */
    set_key(q, "text_config",
            json_pack("{s:i, s:i, s:i, s:i, s:i}", "hidden_size", 1024, "num_attention_heads", 16,
                      "num_experts", 4, "num_experts_per_tok", 2, "moe_intermediate_size", 32));
    expect_config(q, HLX_OK, NULL);
    assert_true(g_cfg.m.kv_heads == 16 && g_cfg.m.head_dim == 64 && g_cfg.m.layers == 24 &&
                g_cfg.m.rope_theta == 5e6 && g_cfg.m.vocab == 151936 && g_cfg.norm_topk_prob);
}

/* Gemma2ForCausalLM: Gemma 3's layer without q/k norms and local base, Gemma2Config's
 * defaults (the soft-cappings 50 and 30, vocabulary 256000, rope_theta 10000, windows on
 * every other layer from the first), null caps for none, layer_types, bad caps refused. */
static void test_gemma2(void **state)
{
    char dir[512], err[1024], path[640];
    hlx_hf_config_t cfg;
    json_error_t je;
    json_t *o, *mo;

    (void)state;
    synth_cfg("g2", "--family gemma2 --shards 1", "Gemma2ForCausalLM", dir, sizeof(dir), &cfg);
    assert_int_equal(cfg.fused, HLX_HF_GEMMA);
    assert_true(!cfg.m.qk_norm && cfg.m.post_norms && cfg.m.embed_scale && !cfg.m.qkv_bias);
    assert_true(cfg.m.attn_softcap == 1.5 && cfg.m.final_softcap == 2.0);
    assert_true(cfg.m.sliding_window == 6 && cfg.m.sliding_pattern == 2 &&
                cfg.m.rope_local_theta == 0.0 && cfg.m.rope_theta == 10000.0);
    /* model info --json names the caps */
    snprintf(path, sizeof(path), "%s/g2info.json", g_tmp);
    assert_int_equal(sh("%s model info %s --json > %s", helix, dir, path), 0);
    o = json_load_file(path, 0, &je);
    assert_non_null(o);
    mo = json_object_get(o, "model");
    assert_true(json_real_value(json_object_get(mo, "attn_softcap")) == 1.5 &&
                json_real_value(json_object_get(mo, "final_softcap")) == 2.0);
    json_decref(o);
    ckpt_variant("g2", "g2ok", NULL, NULL, NULL, 0, NULL);
    /* Gemma2Config's defaults */
    drop_keys("g2", (const char *const[]){ "attn_logit_softcapping", "final_logit_softcapping",
                                            "layer_types", "sliding_window", "rope_theta",
                                            "vocab_size", "head_dim", "num_key_value_heads",
                                            NULL });
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.m.attn_softcap == 50.0 && cfg.m.final_softcap == 30.0);
    assert_true(cfg.m.vocab == 256000 && cfg.m.rope_theta == 10000.0 && cfg.m.head_dim == 256 &&
                cfg.m.kv_heads == 4 && cfg.m.rope_local_theta == 0.0);
    assert_true(cfg.m.sliding_window == 4096 && cfg.m.sliding_pattern == 2 &&
                hlx_model_layer_window(&cfg.m, 0) == 4096 &&
                hlx_model_layer_window(&cfg.m, 1) == 0);
    /* Gemma 3's keys are not Gemma 2's: no local base, no pattern key */
    set_key("g2", "rope_local_base_freq", json_real(10.0));
    set_key("g2", "sliding_window_pattern", json_integer(6));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.m.rope_local_theta == 0.0 && cfg.m.sliding_pattern == 2);
    /* null: no cap */
    set_key("g2", "attn_logit_softcapping", json_null());
    set_key("g2", "final_logit_softcapping", json_null());
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.m.attn_softcap == 0.0 && cfg.m.final_softcap == 0.0);
    expect_key("g2", "attn_logit_softcapping", json_real(-1.0), HLX_ERR_PARSE,
               "attn_logit_softcapping:", json_string("50"));
    expect_config("g2", HLX_ERR_PARSE, "attn_logit_softcapping:");
    set_key("g2", "attn_logit_softcapping", NULL);
    expect_key("g2", "final_logit_softcapping", json_real(0.0), HLX_ERR_PARSE,
               "final_logit_softcapping:", NULL);
    /* layer_types: Gemma 2's pattern (windowed, then whole) and no other */
    set_key("g2", "layer_types", json_pack("[s, s]", "full_attention", "sliding_attention"));
    expect_config("g2", HLX_ERR_PARSE, "Gemma 2's: sliding_attention and full_attention in "
                  "turn");
    set_key("g2", "layer_types", NULL);
    /* model_type alone names it */
    set_key("g2", "architectures", NULL);
    set_key("g2", "model_type", json_string("gemma2"));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_string_equal(cfg.arch, "Gemma2ForCausalLM");
}

/* InternLM2ForCausalLM: its names, one wqkv grouped by KV head, "bias" (InternLM2Config:
 * true when absent) refused, the head size hidden_size / num_attention_heads. */
static void test_internlm2(void **state)
{
    char dir[512], err[1024];
    hlx_hf_config_t cfg;
    hlx_hf_weight_t w;
    int layer, q = 0, k = 0, v = 0;
    int64_t wrow, r;

    (void)state;
    synth_cfg("il", "--family internlm2 --shards 1", "InternLM2ForCausalLM", dir, sizeof(dir),
              &cfg);
    assert_int_equal(cfg.fused, HLX_HF_QKV_GROUPED);
    assert_true(!cfg.m.qkv_bias && !cfg.m.qk_norm && cfg.m.head_dim == 32);
    ckpt_variant("il", "ilok", NULL, NULL, NULL, 0, NULL);
    ckpt_variant("il", "ilq", NULL, NULL, "model.layers.0.self_attn.q_proj.weight", 256,
                 "tensor model.layers.0.self_attn.q_proj.weight is not part of an "
                 "InternLM2ForCausalLM");
    ckpt_variant("il", "ilw3", "model.layers.1.feed_forward.w3.weight", NULL, NULL, 0,
                 "tensor model.layers.1.feed_forward.w3.weight is missing");
    ckpt_variant("il", "ilqkv", NULL, "model.layers.0.attention.wqkv.weight", NULL, 256,
                 "model.layers.0.attention.wqkv.weight: shape [256, 256], expected [384, 256]");
    /* the grouped rows: 8 query heads over 2 KV heads of 32, [2][4 + 2][32]; every row of
     * wqkv is one runtime row, and the placement inverts */
    for (r = 0; r < 384; r++) {
        assert_int_equal(hlx_hf_weight_at(&cfg.m, cfg.fused, "model.layers.1.attention.wqkv.weight",
                                          r, &w, &layer, &wrow), 0);
        assert_int_equal(layer, 1);
        assert_int_equal(hlx_hf_fused_row(&cfg.m, cfg.fused, w, wrow), r);
        q += w == HLX_HFW_WQ;
        k += w == HLX_HFW_WK;
        v += w == HLX_HFW_WV;
    }
    assert_true(q == 256 && k == 64 && v == 64);
    /* row 4 x 32 + 5 is KV head 0's key, element 5; 6 x 32 is KV head 1's first query head
     * (query head 4) */
    assert_int_equal(hlx_hf_weight_at(&cfg.m, cfg.fused, "model.layers.0.attention.wqkv.weight",
                                      4 * 32 + 5, &w, &layer, &wrow), 0);
    assert_true(w == HLX_HFW_WK && wrow == 5);
    assert_int_equal(hlx_hf_weight_at(&cfg.m, cfg.fused, "model.layers.0.attention.wqkv.weight",
                                      6 * 32, &w, &layer, &wrow), 0);
    assert_true(w == HLX_HFW_WQ && wrow == 4 * 32);
    assert_int_equal(hlx_hf_weight_at(&cfg.m, cfg.fused, "model.layers.0.attention.wqkv.weight",
                                      384, &w, &layer, &wrow), -1);
    assert_int_equal(hlx_hf_weight_at(&cfg.m, cfg.fused, "output.weight", 7, &w, &layer,
                                      &wrow), 0);
    assert_true(w == HLX_HFW_LMHEAD && wrow == 7);
    /* InternLM2Config's bias is true when absent: refused either way */
    set_key("il", "bias", NULL);
    expect_config("il", HLX_ERR_PARSE, "bias: absent, which InternLM2Config takes as true: "
                  "biases on wqkv and wo are not supported");
    set_key("il", "bias", json_true());
    expect_config("il", HLX_ERR_PARSE, "bias: true: biases on wqkv and wo");
    set_key("il", "bias", json_false());
    /* its attention has no head_dim key of its own */
    set_key("il", "head_dim", json_integer(64));
    expect_config("il", HLX_ERR_PARSE, "head_dim: InternLM2ForCausalLM takes hidden_size / "
                  "num_attention_heads as its head size: 64 x 8 is not hidden_size 256");
    set_key("il", "head_dim", NULL);
    /* InternLM2.5-7B-Chat-1M's RoPE: dynamic, factor 2.5 over 262144 positions */
    set_key("il", "max_position_embeddings", json_integer(262144));
    set_key("il", "rope_theta", json_integer(50000000));
    set_key("il", "rope_scaling", json_pack("{s:s, s:f}", "type", "dynamic", "factor", 2.5));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.m.rope_kind == HLX_ROPE_DYNAMIC && cfg.m.rope_orig_ctx == 262144 &&
                cfg.m.rope_theta == 5e7 && cfg.m.head_dim == 32);
    /* model_type alone names it too */
    set_key("il", "architectures", NULL);
    set_key("il", "model_type", json_string("internlm2"));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_string_equal(cfg.arch, "InternLM2ForCausalLM");
}

/* InternLM3ForCausalLM: Llama's tensors; its biases (qkv_bias, bias) refused, false when
 * absent; dynamic RoPE in its own form. */
static void test_internlm3(void **state)
{
    char dir[512], err[1024];
    hlx_hf_config_t cfg;

    (void)state;
    synth("il3", "--family dense --shards 1");
    dir_of(dir, sizeof(dir), "il3");
    set_key("il3", "architectures", json_pack("[s]", "InternLM3ForCausalLM"));
    set_key("il3", "model_type", json_string("internlm3"));
    set_key("il3", "max_position_embeddings", json_integer(32768));
    set_key("il3", "rope_scaling", json_pack("{s:f, s:s}", "factor", 6.0, "rope_type",
                                             "dynamic"));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_string_equal(cfg.arch, "InternLM3ForCausalLM");
    assert_true(cfg.fused == 0 && !cfg.m.qkv_bias && cfg.m.rope_kind == HLX_ROPE_DYNAMIC &&
                cfg.m.rope_orig_ctx == 32768 && cfg.m.rope_factor == 6.0);
    ckpt_variant("il3", "il3ok", NULL, NULL, NULL, 0, NULL);
    expect_key("il3", "qkv_bias", json_true(), HLX_ERR_PARSE,
               "qkv_bias: biases on q, k and v are not supported", json_false());
    expect_key("il3", "bias", json_true(), HLX_ERR_PARSE,
               "bias: biases on o_proj and the FFN are not supported", NULL);
    set_key("il3", "architectures", NULL);
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_string_equal(cfg.arch, "InternLM3ForCausalLM");
}

/* MixtralForCausalLM: every layer MoE under block_sparse_moe's names; MixtralConfig's
 * defaults. */
static void test_mixtral(void **state)
{
    char dir[512], err[1024], name[160];
    hlx_hf_config_t cfg;

    (void)state;
    synth_cfg("mx", "--family mixtral --shards 1", "MixtralForCausalLM", dir, sizeof(dir), &cfg);
    assert_int_equal(cfg.moe_gqa, HLX_HF_MOE_MIXTRAL);
    assert_int_equal(cfg.m.experts, 8);
    assert_int_equal(cfg.m.expert_ffn, 64);
    assert_int_equal(cfg.m.dense_layers, 0);
    assert_true(cfg.m.norm_topk_prob && cfg.m.moe_scoring == HLX_MOE_SOFTMAX);
    /* the runtime's keys in Mixtral's names, and no other name changed */
    hlx_hf_ckpt_name(&cfg, "model.layers.1.mlp.gate.weight", name, sizeof(name));
    assert_string_equal(name, "model.layers.1.block_sparse_moe.gate.weight");
    hlx_hf_ckpt_name(&cfg, "model.layers.0.mlp.experts.7.up_proj.weight", name, sizeof(name));
    assert_string_equal(name, "model.layers.0.block_sparse_moe.experts.7.w3.weight");
    hlx_hf_ckpt_name(&cfg, "model.layers.0.mlp.experts.7.down_proj.weight", name, sizeof(name));
    assert_string_equal(name, "model.layers.0.block_sparse_moe.experts.7.w2.weight");
    hlx_hf_ckpt_name(&cfg, "model.layers.0.mlp.experts.7.gate_proj.weight", name, sizeof(name));
    assert_string_equal(name, "model.layers.0.block_sparse_moe.experts.7.w1.weight");
    hlx_hf_ckpt_name(&cfg, "model.layers.0.mlp.experts.7.gate_proj.weightx", name, sizeof(name));
    assert_string_equal(name, "model.layers.0.mlp.experts.7.gate_proj.weightx");
    hlx_hf_ckpt_name(&cfg, "model.layers.0.self_attn.q_proj.weight", name, sizeof(name));
    assert_string_equal(name, "model.layers.0.self_attn.q_proj.weight");
    ckpt_variant("mx", "mxok", NULL, NULL, NULL, 0, NULL);
    ckpt_variant("mx", "mxmiss", "model.layers.1.block_sparse_moe.experts.3.w2.weight", NULL,
                 NULL, 0, "tensor model.layers.1.block_sparse_moe.experts.3.w2.weight is missing");
    ckpt_variant("mx", "mxds", NULL, NULL, "model.layers.0.mlp.experts.0.gate_proj.weight", 64,
                 "tensor model.layers.0.mlp.experts.0.gate_proj.weight is not part of a "
                 "MixtralForCausalLM");
    /* MixtralConfig's defaults: 8 KV heads, rope_theta 1e6, 8 experts top-2 */
    set_key("mx", "num_key_value_heads", NULL);
    set_key("mx", "rope_theta", NULL);
    set_key("mx", "num_local_experts", NULL);
    set_key("mx", "num_experts_per_tok", NULL);
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_int_equal(cfg.m.kv_heads, 8);
    assert_true(cfg.m.rope_theta == 1e6);
    assert_int_equal(cfg.m.experts, 8);
    assert_int_equal(cfg.m.top_k, 2);
    set_key("mx", "num_experts_per_tok", json_integer(9));
    expect_config("mx", HLX_ERR_PARSE, "num_experts_per_tok: 9 exceeds num_local_experts 8");
}

/* DeepseekV2ForCausalLM: DeepSeek-V3's tensors, V2's gating (softmax, greedy or
 * group-limited with a group scored by its best expert, one of renormalisation and
 * scaling), V2-Lite's keys. */
static void test_deepseek_v2(void **state)
{
    char dir[512], err[1024];
    hlx_hf_config_t cfg;

    (void)state;
    synth_cfg("v2", "--family deepseek-v2 --shards 1", "DeepseekV2ForCausalLM", dir, sizeof(dir),
              &cfg);
    assert_int_equal(cfg.m.attn, HLX_ATTN_MLA);
    assert_int_equal(cfg.m.q_lora_rank, 0);
    assert_int_equal(cfg.m.shared_experts, 2);
    assert_int_equal(cfg.m.moe_scoring, HLX_MOE_SOFTMAX);
    assert_false(cfg.m.norm_topk_prob);
    /* the synth's group_limited_greedy: 2 groups, the best 1, each scored by its best */
    assert_int_equal(cfg.m.n_group, 2);
    assert_int_equal(cfg.m.topk_group, 1);
    assert_int_equal(cfg.m.moe_group_score, HLX_MOE_GROUP_MAX);
    ckpt_variant("v2", "v2ok", NULL, NULL, NULL, 0, NULL);
    ckpt_variant("v2", "v2bias", NULL, NULL, "model.layers.1.mlp.gate.e_score_correction_bias",
                 1, "e_score_correction_bias is not part of a DeepseekV2ForCausalLM");
    /* no multi-token prediction in V2: a layer past the model is refused, unless declared */
    assert_int_equal(cfg.mtp_layers, 0);
    ckpt_variant("v2", "v2mtp", NULL, NULL, "model.layers.2.eh_proj.weight", 2,
                 "(layer 2 is past num_hidden_layers 2, and num_nextn_predict_layers 0 "
                 "multi-token-prediction layers do not reach it)");
    set_key("v2", "num_nextn_predict_layers", json_integer(1));
    ckpt_variant("v2", "v2mtp", NULL, NULL, "model.layers.2.eh_proj.weight", 2, NULL);
    ckpt_variant("v2", "v2mtp", NULL, NULL, "model.layers.3.eh_proj.weight", 2,
                 "model.layers.3.eh_proj.weight is not part of");
    set_key("v2", "num_nextn_predict_layers", NULL);
    /* V2-Lite's other keys; gating defaults (softmax, greedy, norm_topk_prob false, 1.0) */
    set_key("v2", "aux_loss_alpha", json_real(0.001));
    set_key("v2", "seq_aux", json_true());
    set_key("v2", "pretraining_tp", json_integer(1));
    set_key("v2", "moe_layer_freq", json_integer(1));
    set_key("v2", "scoring_func", NULL);
    set_key("v2", "norm_topk_prob", NULL);
    set_key("v2", "routed_scaling_factor", NULL);
    set_key("v2", "topk_method", NULL);
    /* greedy (the default) ignores the groups */
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(!cfg.m.norm_topk_prob && cfg.m.routed_scaling == 1.0 &&
                cfg.m.moe_scoring == HLX_MOE_SOFTMAX && cfg.m.n_group == 1 &&
                cfg.m.topk_group == 1);
    set_key("v2", "topk_method", json_string("group_limited_greedy"));
    assert_int_equal(hlx_hf_config_load(dir, &cfg, err, sizeof(err)), HLX_OK);
    assert_true(cfg.m.n_group == 2 && cfg.m.topk_group == 1 &&
                cfg.m.moe_group_score == HLX_MOE_GROUP_MAX);
    expect_key("v2", "topk_method", json_string("noaux_tc"), HLX_ERR_PARSE,
               "topk_method: \"noaux_tc\" is not a DeepSeek-V2 routing", json_string("greedy"));
    expect_key("v2", "moe_layer_freq", json_integer(2), HLX_ERR_UNSUPPORTED,
               "moe_layer_freq: 2: experts in every 2-th layer", json_integer(1));
    expect_key("v2", "scoring_func", json_string("sigmoid"), HLX_ERR_PARSE,
               "scoring_func: \"sigmoid\": DeepSeek-V2 scores with a softmax", NULL);
    set_key("v2", "norm_topk_prob", json_true());
    expect_key("v2", "routed_scaling_factor", json_real(16.0), HLX_ERR_UNSUPPORTED,
               "routed_scaling_factor: 16 with norm_topk_prob", json_real(1.0));
    expect_config("v2", HLX_OK, NULL);
    /* its MoE sizes have no default here */
    set_key("v2", "n_shared_experts", NULL);
    expect_config("v2", HLX_ERR_PARSE, "n_shared_experts");
}

/* ---- 4 and 5: synth writes whole checkpoints or nothing ------------------------------ */

/* GptOssForCausalLM's config.json (a bf16 copy's: no quantization_config) with every key
 * absent that GptOssConfig defaults: gpt-oss-120b's shapes (36 layers of 2880, 64 query
 * and 8 KV heads of 64, 128 experts top-4 of 2880, vocabulary 201088), rope_theta 150000,
 * yarn factor 32 over 4096 with the ramp's ends unrounded, windows of 128 on layers 0, 2,
 * ..., q, k, v and o biases, sinks, the router's and the experts' biases, swiglu 1.702 and
 * 7; gpt-oss-20b's (24 layers, 32 experts) to its parameter count; experts_per_token for
 * num_experts_per_tok; layer_types of one kind on every layer (no window, or a window on
 * each); rope_scaling null as plain RoPE; refused: a layer_types entry off the alternation,
 * swiglu_limit 0 or below (or under 1e-6), the two top-k keys disagreeing, a top-k over the
 * experts; attention_bias false: no biases on q, k, v or o. */
static void test_gpt_oss_config(void **state)
{
    char path[512];
    json_t *c, *lt;
    int l;

    (void)state;
    assert_int_equal(sh("mkdir -p %s/oss", g_tmp), 0);
    snprintf(path, sizeof(path), "%s/oss/config.json", g_tmp);
    config_save(json_pack("{s:[s], s:s}", "architectures", "GptOssForCausalLM", "model_type",
                          "gpt_oss"), path);
    expect_config("oss", HLX_OK, NULL);
    assert_true(g_cfg.m.layers == 36 && g_cfg.m.hidden == 2880 && g_cfg.m.q_heads == 64 &&
                g_cfg.m.kv_heads == 8 && g_cfg.m.head_dim == 64 && g_cfg.m.vocab == 201088);
    assert_true(g_cfg.m.experts == 128 && g_cfg.m.top_k == 4 && g_cfg.m.expert_ffn == 2880 &&
                g_cfg.m.dense_layers == 0 && g_cfg.m.shared_experts == 0);
    assert_true(g_cfg.m.moe_scoring == HLX_MOE_SOFTMAX && g_cfg.m.norm_topk_prob == 1);
    assert_true(g_cfg.m.qkv_bias && g_cfg.m.o_bias && g_cfg.m.attn_sinks &&
                g_cfg.m.router_bias && g_cfg.m.expert_bias && !g_cfg.m.tie_embeddings);
    assert_true(g_cfg.m.ffn_act == HLX_ACT_SWIGLU_CLAMP && g_cfg.m.act_alpha == 1.702 &&
                g_cfg.m.act_limit == 7.0);
    assert_true(g_cfg.m.sliding_window == 128 && g_cfg.m.sliding_pattern == 2 &&
                hlx_model_layer_window(&g_cfg.m, 0) == 128 &&
                hlx_model_layer_window(&g_cfg.m, 1) == 0);
    assert_true(g_cfg.m.rope_theta == 150000.0 && g_cfg.m.rope_kind == HLX_ROPE_YARN &&
                g_cfg.m.rope_factor == 32.0 && g_cfg.m.rope_orig_ctx == 4096 &&
                g_cfg.m.rope_beta_fast == 32.0 && g_cfg.m.rope_beta_slow == 1.0 &&
                g_cfg.m.rope_yarn_exact == 1 && g_cfg.m.norm_eps == 1e-5);
    /* gpt-oss-20b's keys, as its config.json writes them: 20,914,757,184 parameters */
    lt = json_array();
    for (l = 0; l < 24; l++)
        json_array_append_new(lt, json_string(l % 2 ? "full_attention" : "sliding_attention"));
    c = json_pack("{s:[s], s:s, s:b, s:i, s:i, s:s, s:i, s:i, s:o, s:i, s:i, s:i, s:i, s:i, "
                  "s:i, s:f, s:{s:f, s:f, s:f, s:i, s:s, s:b}, s:i, s:i, s:f, s:b, s:s, s:i}",
                  "architectures", "GptOssForCausalLM", "model_type", "gpt_oss",
                  "attention_bias", 1, "experts_per_token", 4, "head_dim", 64, "hidden_act",
                  "silu", "hidden_size", 2880, "intermediate_size", 2880, "layer_types", lt,
                  "max_position_embeddings", 131072, "num_attention_heads", 64,
                  "num_experts_per_tok", 4, "num_hidden_layers", 24, "num_key_value_heads", 8,
                  "num_local_experts", 32, "rms_norm_eps", 1e-5, "rope_scaling", "beta_fast",
                  32.0, "beta_slow", 1.0, "factor", 32.0, "original_max_position_embeddings",
                  4096, "rope_type", "yarn", "truncate", 0, "rope_theta", 150000,
                  "sliding_window", 128, "swiglu_limit", 7.0, "tie_word_embeddings", 0,
                  "torch_dtype", "bfloat16", "vocab_size", 201088);
    config_save(c, path);
    expect_config("oss", HLX_OK, NULL);
    assert_true(hlx_model_params(&g_cfg.m) == 20914757184.0);
    assert_true(g_cfg.m.experts == 32 && g_cfg.m.layers == 24);
    /* the older spelling alone; the two disagreeing */
    set_key("oss", "num_experts_per_tok", NULL);
    set_key("oss", "experts_per_token", json_integer(2));
    expect_config("oss", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.top_k, 2);
    expect_key("oss", "num_experts_per_tok", json_integer(4), HLX_ERR_PARSE,
               "experts_per_token: 2 contradicts num_experts_per_tok 4", NULL);
    expect_key("oss", "experts_per_token", json_integer(33), HLX_ERR_PARSE,
               "33 exceeds num_local_experts 32", json_integer(4));
    /* swiglu: alpha read, a limit of 0 or below refused */
    expect_key("oss", "swiglu_limit", json_real(0.0), HLX_ERR_PARSE,
               "swiglu_limit: 0: the clamp of gate and up must be > 0", json_real(7.0));
    expect_key("oss", "swiglu_limit", json_real(-1.0), HLX_ERR_PARSE,
               "swiglu_limit: -1: the clamp", json_real(7.0));
    expect_key("oss", "swiglu_limit", json_real(5e-324), HLX_ERR_PARSE,
               "swiglu_limit: 4.94066e-324: the clamp of gate and up must be > 0, at least 1e-06",
               json_real(7.0));
    set_key("oss", "swiglu_alpha", json_real(1.5));
    expect_config("oss", HLX_OK, NULL);
    assert_true(g_cfg.m.act_alpha == 1.5);
    /* layer_types: another pattern refused at the entry that breaks the alternation */
    c = config_json("oss", path);
    json_array_set_new(json_object_get(c, "layer_types"), 5, json_string("sliding_attention"));
    config_save(c, path);
    expect_config("oss", HLX_ERR_PARSE, "layer_types[5] is \"sliding_attention\", "
                  "which breaks gpt-oss's pattern");
    c = config_json("oss", path);
    json_array_set_new(json_object_get(c, "layer_types"), 5, json_string("full_attention"));
    json_array_set_new(json_object_get(c, "layer_types"), 0, json_string("full_attention"));
    config_save(c, path);
    expect_config("oss", HLX_ERR_PARSE, "layer_types[0] is \"full_attention\"");
    /* one kind on every layer: all full_attention is no window, all sliding_attention a
     * window on every layer */
    c = config_json("oss", path);
    for (l = 0; l < 24; l++)
        json_array_set_new(json_object_get(c, "layer_types"), l, json_string("full_attention"));
    config_save(c, path);
    expect_config("oss", HLX_OK, NULL);
    assert_true(g_cfg.m.sliding_window == 0 && hlx_model_layer_window(&g_cfg.m, 0) == 0 &&
                hlx_model_layer_window(&g_cfg.m, 22) == 0);
    c = config_json("oss", path);
    for (l = 0; l < 24; l++)
        json_array_set_new(json_object_get(c, "layer_types"), l,
                           json_string("sliding_attention"));
    config_save(c, path);
    expect_config("oss", HLX_OK, NULL);
    assert_true(g_cfg.m.sliding_window == 128 && g_cfg.m.sliding_pattern == 0 &&
                hlx_model_layer_window(&g_cfg.m, 0) == 128 &&
                hlx_model_layer_window(&g_cfg.m, 23) == 128);
    set_key("oss", "layer_types", NULL);
    expect_config("oss", HLX_OK, NULL);
    assert_true(hlx_model_layer_window(&g_cfg.m, 22) == 128 &&
                hlx_model_layer_window(&g_cfg.m, 23) == 0);
    /* no window: sliding_window null */
    set_key("oss", "sliding_window", json_null());
    expect_config("oss", HLX_OK, NULL);
    assert_true(g_cfg.m.sliding_window == 0 && hlx_model_layer_window(&g_cfg.m, 0) == 0);
    set_key("oss", "sliding_window", json_integer(128));
    /* truncate true: the ends rounded, as other yarn models */
    set_key("oss", "rope_scaling", json_pack("{s:s, s:f, s:i, s:b}", "rope_type", "yarn",
                                             "factor", 32.0, "original_max_position_embeddings",
                                             4096, "truncate", 1));
    expect_config("oss", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.rope_yarn_exact, 0);
    /* rope_scaling null: plain RoPE (the class keeps the None it is given); absent: the
     * default yarn */
    set_key("oss", "rope_scaling", json_null());
    expect_config("oss", HLX_OK, NULL);
    assert_int_equal(g_cfg.m.rope_kind, HLX_ROPE_NONE);
    set_key("oss", "rope_scaling", NULL);
    expect_config("oss", HLX_OK, NULL);
    assert_true(g_cfg.m.rope_kind == HLX_ROPE_YARN && g_cfg.m.rope_factor == 32.0);
    /* the default yarn over a top-level original context where one is given */
    set_key("oss", "original_max_position_embeddings", json_integer(8192));
    expect_config("oss", HLX_OK, NULL);
    assert_true(g_cfg.m.rope_orig_ctx == 8192 && g_cfg.m.rope_yarn_exact == 1);
    set_key("oss", "original_max_position_embeddings", NULL);
    /* transformers v5's rope_parameters with the base alone: the same default yarn */
    set_key("oss", "rope_parameters", json_pack("{s:f}", "rope_theta", 150000.0));
    expect_config("oss", HLX_OK, NULL);
    assert_true(g_cfg.m.rope_kind == HLX_ROPE_YARN && g_cfg.m.rope_orig_ctx == 4096 &&
                g_cfg.m.rope_factor == 32.0 && g_cfg.m.rope_yarn_exact == 1);
    set_key("oss", "rope_parameters", NULL);
    /* attention_bias false: no projection biases */
    set_key("oss", "attention_bias", json_false());
    expect_config("oss", HLX_OK, NULL);
    assert_true(!g_cfg.m.qkv_bias && !g_cfg.m.o_bias && g_cfg.m.attn_sinks);
    set_key("oss", "attention_bias", json_true());
    /* the released MXFP4 experts: read (their blocks and scales, hlx_hf_expert_views);
     * the method on another class refused at its key */
    set_key("oss", "quantization_config",
            json_pack("{s:[s, s, s, s], s:s}", "modules_to_not_convert",
                      "model.layers.*.self_attn", "model.layers.*.mlp.router",
                      "model.embed_tokens", "lm_head", "quant_method", "mxfp4"));
    expect_config("oss", HLX_OK, NULL);
    assert_int_equal(g_cfg.mxfp4, 1);
    assert_int_equal(sh("%s model info --config-only %s/oss >/dev/null 2>&1", helix, g_tmp), 0);
    set_key("oss", "quantization_config", NULL);
    expect_config("oss", HLX_OK, NULL);
    assert_int_equal(g_cfg.mxfp4, 0);
}

/* `model synth --family gpt-oss` in f32 and bf16: gpt-oss's own names and fused layout
 * (mlp.router.weight and .bias, mlp.experts.gate_up_proj [E, H, 2F] with gate and up
 * interleaved, its bias [E, 2F], down_proj [E, F, H], its bias [E, H], sinks, o_proj's
 * bias), read back whole by hlx_hf_check; expert 3's views are the fused tensors' columns
 * (gate 2o, up 2o + 1, down and the biases as stored); the runtime's keys map to gpt-oss's
 * router; a checkpoint holding MXFP4 blocks, or missing a fused bias, refused (exit 2). */
static void test_gpt_oss_synth(void **state)
{
    static const char *const dts[2] = { "f32", "bf16" };
    char dir[512], err[1024], name[160];
    hlx_hf_config_t cfg;
    hlx_ckpt_t *ck = NULL;
    const hlx_ckpt_tensor_t *gu, *gub, *t;
    float *fused, *fb, *w;
    int d, o, i;

    (void)state;
    for (d = 0; d < 2; d++) {
        const int64_t H = 256, F = 64;
        char args[64];
        snprintf(args, sizeof(args), "--family gpt-oss --dtype %s", dts[d]);
        synth("goss", args);
        assert_int_equal(check_dir("goss", &cfg, err, sizeof(err)), HLX_OK);
        assert_true(cfg.m.experts == 8 && cfg.m.expert_ffn == F && cfg.m.attn_sinks &&
                    cfg.m.o_bias && cfg.m.router_bias && cfg.m.expert_bias &&
                    cfg.m.act_limit == 1.5 && cfg.m.rope_yarn_exact == 1 &&
                    cfg.m.sliding_window == 6 && cfg.m.sliding_pattern == 2);
        dir_of(dir, sizeof(dir), "goss");
        assert_int_equal(hlx_ckpt_open(dir, &ck, err, sizeof(err)), HLX_OK);
        assert_int_equal(hlx_hf_check(ck, &cfg), HLX_OK);
        assert_null(hlx_ckpt_find(ck, "model.layers.1.mlp.gate.weight"));
        hlx_hf_ckpt_name(&cfg, "model.layers.1.mlp.gate.weight", name, sizeof(name));
        assert_string_equal(name, "model.layers.1.mlp.router.weight");
        hlx_hf_ckpt_name(&cfg, "model.layers.1.mlp.gate.bias", name, sizeof(name));
        assert_string_equal(name, "model.layers.1.mlp.router.bias");
        assert_non_null(hlx_ckpt_find(ck, name));
        hlx_hf_ckpt_name(&cfg, "model.layers.1.mlp.experts.3.up_proj.bias", name, sizeof(name));
        assert_string_equal(name, "model.layers.1.mlp.experts.3.up_proj.bias");
        gu = hlx_ckpt_find(ck, "model.layers.1.mlp.experts.gate_up_proj");
        gub = hlx_ckpt_find(ck, "model.layers.1.mlp.experts.gate_up_proj_bias");
        assert_true(gu != NULL && gu->ndim == 3 && gu->shape[1] == H && gu->shape[2] == 2 * F);
        assert_true(gub != NULL && gub->ndim == 2 && gub->shape[1] == 2 * F);
        fused = malloc(sizeof(float) * (size_t)(H * 2 * F));
        fb = malloc(sizeof(float) * (size_t)(2 * F));
        w = malloc(sizeof(float) * (size_t)(H * F));
        assert_true(fused != NULL && fb != NULL && w != NULL);
        assert_int_equal(hlx_ckpt_read_slice(ck, gu, 0, 3, 1, fused, HLX_DTYPE_F32), HLX_OK);
        assert_int_equal(hlx_ckpt_read_slice(ck, gub, 0, 3, 1, fb, HLX_DTYPE_F32), HLX_OK);
        for (int k = 0; k < 2; k++) { /* gate: even columns, up: odd */
            snprintf(name, sizeof(name), "model.layers.1.mlp.experts.3.%s.weight",
                     k ? "up_proj" : "gate_proj");
            t = hlx_ckpt_find(ck, name);
            assert_true(t != NULL && t->shape[0] == F && t->shape[1] == H);
            assert_int_equal(hlx_ckpt_read_block(ck, t, 0, F, 0, H, 0, w, HLX_DTYPE_F32, H),
                             HLX_OK);
            for (o = 0; o < F; o++)
                for (i = 0; i < H; i++)
                    if (w[o * H + i] != fused[i * 2 * F + 2 * o + k])
                        fail_msg("%s [%d][%d]: %g, fused %g", name, o, i, w[o * H + i],
                                 fused[i * 2 * F + 2 * o + k]);
            snprintf(name, sizeof(name), "model.layers.1.mlp.experts.3.%s.bias",
                     k ? "up_proj" : "gate_proj");
            t = hlx_ckpt_find(ck, name);
            assert_true(t != NULL && t->ndim == 1 && t->shape[0] == F);
            assert_int_equal(hlx_ckpt_read_block(ck, t, 0, 1, 0, F, 0, w, HLX_DTYPE_F32, F),
                             HLX_OK);
            for (o = 0; o < F; o++)
                assert_true(w[o] == fb[2 * o + k] && fabsf(w[o]) < 0.5f);
        }
        /* down [H][F] from down_proj [E][F][H], its bias [H] the stored row */
        t = hlx_ckpt_find(ck, "model.layers.1.mlp.experts.3.down_proj.weight");
        assert_true(t != NULL && t->shape[0] == H && t->shape[1] == F);
        assert_int_equal(hlx_ckpt_read_block(ck, t, 5, 1, 0, F, 0, w, HLX_DTYPE_F32, F), HLX_OK);
        assert_int_equal(hlx_ckpt_read_slice(ck, hlx_ckpt_find(ck,
                             "model.layers.1.mlp.experts.down_proj"), 0, 3, 1, fused,
                             HLX_DTYPE_F32), HLX_OK);
        for (i = 0; i < F; i++)
            assert_true(w[i] == fused[i * H + 5]);
        t = hlx_ckpt_find(ck, "model.layers.1.mlp.experts.3.down_proj.bias");
        assert_true(t != NULL && t->ndim == 1 && t->shape[0] == H);
        free(fused);
        free(fb);
        free(w);
        hlx_ckpt_close(ck);
    }
    /* `model info` reads it through the views */
    assert_int_equal(sh("%s model info %s/goss >/dev/null 2>&1", helix, g_tmp), 0);
    /* MXFP4's blocks in place of the bf16 experts; a fused bias missing */
    assert_int_equal(sh("cp -r %s/goss %s/goss-mx && python3 %s/tests/runtime/st_edit.py "
                        "%s/goss-mx rename model.layers.0.mlp.experts.gate_up_proj "
                        "model.layers.0.mlp.experts.gate_up_proj_blocks", g_tmp, g_tmp,
                        HLX_SOURCE_ROOT, g_tmp), 0);
    assert_int_equal(check_dir("goss-mx", &cfg, err, sizeof(err)), HLX_ERR_MISMATCH);
    assert_non_null(strstr(err, "tensor model.layers.0.mlp.experts.gate_up_proj_blocks: MXFP4 "
                                "experts, where config.json's quantization_config does not "
                                "say \"quant_method\": \"mxfp4\""));
    refused("gate_up_proj_blocks: MXFP4 experts", "quantization_config",
            "model info %s/goss-mx", g_tmp);
    assert_int_equal(sh("cp -r %s/goss %s/goss-nob && python3 %s/tests/runtime/st_edit.py "
                        "%s/goss-nob drop model.layers.1.mlp.experts.down_proj_bias", g_tmp,
                        g_tmp, HLX_SOURCE_ROOT, g_tmp), 0);
    assert_int_equal(check_dir("goss-nob", &cfg, err, sizeof(err)), HLX_ERR_NOT_FOUND);
    assert_non_null(strstr(err, "tensor model.layers.1.mlp.experts.down_proj_bias is missing"));
    /* more experts in config.json than the fused tensors hold: named at once, before a
     * view is made per expert (6 million of them here) */
    assert_int_equal(sh("cp -r %s/goss %s/goss-many", g_tmp, g_tmp), 0);
    set_key("goss-many", "num_local_experts", json_integer(1000000));
    assert_int_equal(check_dir("goss-many", &cfg, err, sizeof(err)), HLX_ERR_MISMATCH);
    assert_non_null(strstr(err, "tensor model.layers.0.mlp.experts.gate_up_proj: 8 experts, "
                                "where config.json gives 1000000"));
    /* fp8: not written, and a quantization config of fp8 weights refused at its key */
    refused("--dtype fp8: not with --family gpt-oss", NULL,
            "model synth --family gpt-oss --dtype fp8 --out %s/goss-fp8", g_tmp);
    set_key("goss", "quantization_config",
            json_pack("{s:s, s:[i, i]}", "quant_method", "fp8", "weight_block_size", 128, 128));
    expect_config("goss", HLX_ERR_UNSUPPORTED, "quantization_config: fp8 weights are not read "
                  "for GptOssForCausalLM: its fused experts are read in bf16, f16 or f32");
}

/* Sum of the sizes of the regular files in dir. */
static uint64_t dir_bytes(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    struct stat sb;
    char path[1024];
    uint64_t n = 0;

    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
            n += (uint64_t)sb.st_size;
    }
    closedir(d);
    return n;
}

static int exists(const char *name)
{
    char path[512];
    struct stat sb;

    snprintf(path, sizeof(path), "%s/%s", g_tmp, name);
    return stat(path, &sb) == 0;
}

static void test_synth_max_bytes(void **state)
{
    char *err, dir[512], path[512], cerr[512];
    uint64_t bytes;
    FILE *f;

    (void)state;
    /* the size worked out beforehand is what is written */
    synth("exact", "--family dense --shards 2");
    dir_of(dir, sizeof(dir), "exact");
    bytes = dir_bytes(dir);
    assert_int_equal(sh("rm -rf %s/exact", g_tmp), 0);
    assert_int_equal(run(&err, "model synth --family dense --out %s/exact --max-bytes %llu",
                         g_tmp, (unsigned long long)bytes), 0);
    free(err);
    assert_int_equal(dir_bytes(dir), bytes);
    /* one byte less: refused with both numbers, nothing written, no folder made */
    snprintf(cerr, sizeof(cerr), "would take %llu bytes", (unsigned long long)bytes);
    refused(cerr, "more than --max-bytes", "model synth --family dense --out %s/over "
            "--max-bytes %llu", g_tmp, (unsigned long long)(bytes - 1));
    assert_false(exists("over"));
    refused("--max-bytes", NULL, "model synth --family dense --out %s/over --max-bytes 0",
            g_tmp);
    /* --model's layers meet the same cap as --layers */
    snprintf(path, sizeof(path), "%s/deep.json", g_tmp);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"name\": \"deep\", \"attn\": \"gqa\", \"layers\": 65, \"hidden\": 32, "
               "\"q_heads\": 2, \"kv_heads\": 1, \"head_dim\": 16, \"ffn\": 32, \"vocab\": 64}\n");
    fclose(f);
    refused("65 layers, more than the 64", "--layers",
            "model synth --family dense --model %s --out %s/deep", path, g_tmp);
    assert_false(exists("deep"));
    refused("--layers", NULL, "model synth --family dense --layers 65 --out %s/deep", g_tmp);
    assert_int_equal(run(&err, "model synth --family dense --model %s --layers 3 --out %s/deep",
                         path, g_tmp), 0);
    free(err);
    /* more than the file system holds: both numbers, nothing written */
    assert_int_equal(hlx_ckpt_space_check(g_tmp, (uint64_t)INT64_MAX, cerr, sizeof(cerr)),
                     HLX_ERR_NOSPACE);
    assert_non_null(strstr(cerr, "needs 9223372036854775807 bytes"));
    assert_non_null(strstr(cerr, "free"));
    /* a folder still to be made: the nearest one above it is asked */
    snprintf(path, sizeof(path), "%s/not/yet/there/", g_tmp);
    assert_int_equal(hlx_ckpt_space_check(path, 1, cerr, sizeof(cerr)), HLX_OK);
    assert_int_equal(hlx_ckpt_space_check("relative-not-there", 1, cerr, sizeof(cerr)), HLX_OK);
}

/* name's files and their bytes, as one string (entries sorted), for before/after. */
static char *snapshot(const char *name, int hidden_too)
{
    char dir[512], path[1024], *out = NULL, *body;
    struct dirent **ents = NULL;
    size_t len = 0, blen;
    FILE *m = open_memstream(&out, &len);
    int n, i;

    assert_non_null(m);
    dir_of(dir, sizeof(dir), name);
    n = scandir(dir, &ents, NULL, alphasort);
    assert_true(n >= 0);
    for (i = 0; i < n; i++) {
        const char *e = ents[i]->d_name;
        struct stat sb;
        snprintf(path, sizeof(path), "%s/%s", dir, e);
        if (strcmp(e, ".") && strcmp(e, "..") && (hidden_too || e[0] != '.') &&
            stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
            body = hlx_test_slurp(path, &blen);
            fprintf(m, "%s %zu\n", e, blen);
            fwrite(body, 1, blen, m);
            free(body);
        }
        free(ents[i]);
    }
    free(ents);
    fclose(m);
    return out;
}

static void test_synth_no_partial(void **state)
{
    char *before, *after, *err;
    int rc;

    (void)state;
    synth("keep", "--family dense --seed 1");
    before = snapshot("keep", 1);
    /* killed (SIGXFSZ) in the middle of the first shard; the shell reports the signal */
    rc = sh("ulimit -f 400; %s model synth --family dense --seed 2 --out %s/keep "
            ">/dev/null 2>&1; exit $?", helix, g_tmp);
    assert_int_not_equal(rc, 0);
    after = snapshot("keep", 0);
    if (strcmp(before, after) != 0)
        fail_msg("an interrupted synth changed the files under their final names");
    free(after);
    /* the same write failing (EFBIG): exit 2, and not even a temporary file is left */
    rc = sh("trap '' XFSZ && ulimit -f 400 && exec %s model synth --family dense --seed 2 "
            "--out %s/keep >/dev/null 2>%s/run.err", helix, g_tmp, g_tmp);
    {
        char path[512];
        snprintf(path, sizeof(path), "%s/run.err", g_tmp);
        err = hlx_test_slurp(path, NULL);
    }
    expect_exit2("synth past RLIMIT_FSIZE", rc, err, "write failed", NULL);
    after = snapshot("keep", 1);
    if (strcmp(before, after) != 0)
        fail_msg("a failed synth left the folder other than it was");
    free(after);
    free(before);
    /* a new folder: no final name appears, and the folder made is removed again */
    rc = sh("trap '' XFSZ && ulimit -f 400 && exec %s model synth --family dense --out %s/fresh "
            ">/dev/null 2>&1", helix, g_tmp);
    assert_int_equal(rc, 2);
    assert_false(exists("fresh"));
}

/* synth NAME into DIR killed by SIGTERM once its folder (or a hidden one beside it) appears
 * and a moment later, mid-write (64 layers take about a second); the shell's status of it. */
static int synth_killed(const char *name)
{
    return sh("%s model synth --family dense --layers 64 --out %s/%s >/dev/null 2>&1 & "
              "p=$!; cd %s && i=0; while [ $i -lt 1000 ] && [ ! -d %s ] && "
              "! ls -d .%s.* >/dev/null 2>&1; do sleep 0.01; i=$((i + 1)); done; "
              "sleep 0.2; kill -TERM $p; wait $p", helix, g_tmp, name, g_tmp, name, name);
}

/* SIGTERM mid-write: a new folder is not left behind (nor a hidden one beside it), where the
 * folder made first stayed, empty; a folder that existed before stays, as it was. */
static void test_synth_killed(void **state)
{
    (void)state;
    assert_int_equal(synth_killed("termed"), 128 + 15);
    assert_false(exists("termed"));
    assert_int_equal(sh("ls -A %s | grep -q termed", g_tmp), 1);
    assert_int_equal(sh("mkdir %s/was-there", g_tmp), 0);
    assert_int_equal(synth_killed("was-there"), 128 + 15);
    assert_true(exists("was-there"));
    assert_int_equal(sh("[ -z \"$(ls -A %s/was-there)\" ]", g_tmp), 0);
}

static void test_synth_out_errors(void **state)
{
    (void)state;
    assert_int_equal(sh("echo x > %s/afile", g_tmp), 0);
    refused("--out: empty path", NULL, "model synth --family dense --out ''");
    refused("--out", "afile: exists and is not a directory",
            "model synth --family dense --out %s/afile", g_tmp);
    refused("--out", "afile/x: Not a directory", "model synth --family dense --out %s/afile/x",
            g_tmp);
    refused("--out", "none/a/b: cannot create the directory",
            "model synth --family dense --out %s/none/a/b", g_tmp);
    assert_false(exists("none"));
    refused("--out /proc/helix-x: cannot create the directory", NULL,
            "model synth --family dense --out /proc/helix-x");
    /* a link to nothing: refused before any writing (it failed at the end, exit 1) */
    assert_int_equal(sh("ln -s %s/nowhere/t %s/dangling", g_tmp, g_tmp), 0);
    refused("--out", "dangling: a symbolic link whose target does not exist",
            "model synth --family dense --out %s/dangling", g_tmp);
    /* a folder where a file goes: refused before any file is put in place (the shards
     * and the index were, and config.json was not) */
    assert_int_equal(sh("mkdir -p %s/hasdir/config.json && echo keep > %s/hasdir/other",
                        g_tmp, g_tmp), 0);
    refused("hasdir/config.json: is a directory", NULL,
            "model synth --family dense --shards 2 --out %s/hasdir", g_tmp);
    assert_int_equal(sh("[ \"$(ls -A %s/hasdir | tr '\\n' ' ')\" = 'config.json other ' ]",
                        g_tmp), 0);
    /* the file named by --out is untouched */
    {
        char path[512], *text;
        snprintf(path, sizeof(path), "%s/afile", g_tmp);
        text = hlx_test_slurp(path, NULL);
        assert_string_equal(text, "x\n");
        free(text);
    }
}

/* A checkpoint path that is missing, a file, or a directory without config.json is named
 * as such (it used to read "PATH/config.json: no such JSON file" in each case). */
static void test_not_a_checkpoint_dir(void **state)
{
    (void)state;
    assert_int_equal(sh("echo x > %s/plain && mkdir -p %s/nocfg", g_tmp, g_tmp), 0);
    refused("none: no such directory", "expected a Hugging Face checkpoint directory",
            "model info %s/none", g_tmp);
    refused("plain: not a directory", NULL, "model info %s/plain", g_tmp);
    refused("/dev/null: not a directory", NULL, "model info /dev/null");
    refused("nocfg: no config.json in this directory", NULL, "model info %s/nocfg", g_tmp);
    /* a config whose tensors take more than 2^64 bytes: refused, where --config-only
     * printed 1759218617636143759360 (a double's rounding) with exit 0 */
    assert_int_equal(sh("mkdir -p %s/huge && echo '{\"architectures\": [\"LlamaForCausalLM\"], "
                        "\"hidden_size\": 100000000, \"num_attention_heads\": 1048576, "
                        "\"num_key_value_heads\": 1048576, \"head_dim\": 1048576, "
                        "\"intermediate_size\": 1024, \"num_hidden_layers\": 2, "
                        "\"vocab_size\": 1000}' > %s/huge/config.json", g_tmp, g_tmp), 0);
    refused("huge/config.json: the tensors it describes take", "beyond 2^64",
            "model info --config-only %s/huge", g_tmp);
    /* model info --json's model member saved as a directory's config.json: named as the
     * Helix model file it is, at its attn key, not as a config.json without architectures */
    assert_int_equal(sh("mkdir -p %s/mfile && echo '{\"name\": \"t\", \"attn\": \"gqa\", "
                        "\"layers\": 2, \"q_heads\": 8}' > %s/mfile/config.json", g_tmp,
                        g_tmp), 0);
    refused("mfile/config.json:1:15: attn: this is a Helix model file", "give the file itself",
            "model info %s/mfile", g_tmp);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_shard),
        cmocka_unit_test(test_fifo_index),
        cmocka_unit_test(test_index_positions),
        cmocka_unit_test(test_short_expert_groups),
        cmocka_unit_test(test_config_defaults),
        cmocka_unit_test(test_sliding_window),
        cmocka_unit_test(test_rope_scaling_keys),
        cmocka_unit_test(test_rope_longrope),
        cmocka_unit_test(test_phi3),
        cmocka_unit_test(test_qwen),
        cmocka_unit_test(test_qwen3_moe),
        cmocka_unit_test(test_qwen2_moe),
        cmocka_unit_test(test_glm),
        cmocka_unit_test(test_glm4),
        cmocka_unit_test(test_glm4_moe),
        cmocka_unit_test(test_dots1),
        cmocka_unit_test(test_granitemoe),
        cmocka_unit_test(test_granitemoeshared),
        cmocka_unit_test(test_olmo2),
        cmocka_unit_test(test_olmo3),
        cmocka_unit_test(test_null_counts),
        cmocka_unit_test(test_llama4_nulls),
        cmocka_unit_test(test_ignore_lists),
        cmocka_unit_test(test_starcoder2),
        cmocka_unit_test(test_int_bits),
        cmocka_unit_test(test_gemma2),
        cmocka_unit_test(test_gemma3),
        cmocka_unit_test(test_idefics3),
        cmocka_unit_test(test_qwen3_vl),
        cmocka_unit_test(test_qwen3_vl_moe),
        cmocka_unit_test(test_rope_parameters),
        cmocka_unit_test(test_rope_per_type),
        cmocka_unit_test(test_rope_yarn_rules),
        cmocka_unit_test(test_rope_hostile),
        cmocka_unit_test(test_max_position),
        cmocka_unit_test(test_internlm2),
        cmocka_unit_test(test_internlm3),
        cmocka_unit_test(test_dtype_key),
        cmocka_unit_test(test_mixtral),
        cmocka_unit_test(test_deepseek_v2),
        cmocka_unit_test(test_gpt_oss_config),
        cmocka_unit_test(test_gpt_oss_synth),
        cmocka_unit_test(test_synth_max_bytes),
        cmocka_unit_test(test_synth_no_partial),
        cmocka_unit_test(test_synth_killed),
        cmocka_unit_test(test_synth_out_errors),
        cmocka_unit_test(test_not_a_checkpoint_dir),
    };
    int rc;

    if (argc < 2) {
        fprintf(stderr, "usage: test_ckpt_input HELIX_BINARY\n");
        return 2;
    }
    helix = argv[1];
    if (mkdtemp(g_tmp) == NULL)
        return 1;
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (rc == 0)
        sh("rm -rf %s", g_tmp);
    return rc;
}
