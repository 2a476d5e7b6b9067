/* cli: the decode flag table gives the same run configuration as hlx_run_config_default
 * for no flags, takes every flag through the one parser, and refuses bad values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <string.h>

#include "hlx_cmd.h"

static int parse(hlx_run_config_t *cfg, hlx_decode_opts_t *o, const char *line)
{
    static char buf[512]; /* the parsed strings (o->model) point into it after return */
    char *argv[32], *save = NULL, *tok;
    int argc = 1;

    argv[0] = "decode";
    snprintf(buf, sizeof(buf), "%s", line);
    for (tok = strtok_r(buf, " ", &save); tok && argc < 31; tok = strtok_r(NULL, " ", &save))
        argv[argc++] = tok;
    argv[argc] = NULL;
    return hlx_decode_parse(argc, argv, cfg, o);
}

static void test_defaults(void **state)
{
    hlx_run_config_t cfg, def;
    hlx_decode_opts_t o;

    (void)state;
    assert_int_equal(parse(&cfg, &o, ""), -1);
    hlx_run_config_default(&def);
    assert_memory_equal(&cfg, &def, sizeof(cfg));
    assert_string_equal(o.model, "tiny");
    assert_int_equal(o.json, 0);
}

static void test_values(void **state)
{
    hlx_run_config_t cfg;
    hlx_decode_opts_t o;

    (void)state;
    assert_int_equal(parse(&cfg, &o, "--model llama-405b --kvp 4 --tpa 2 --batch 8 "
                                     "--context 1M --steps 2 --kv-block 1K --seed 7 "
                                     "--kv-dtype F32 --kernels scalar --check --check-tol 0.01 "
                                     "--timeout 2.5 --json --verbose"), -1);
    assert_string_equal(o.model, "llama-405b");
    assert_int_equal(cfg.kvp, 4);
    assert_int_equal(cfg.tpa, 2);
    assert_int_equal(cfg.batch, 8);
    assert_true(cfg.context == 1048576);
    assert_int_equal(cfg.steps, 2);
    assert_int_equal(cfg.kv_block, 1024);
    assert_true(cfg.seed == 7);
    assert_int_equal(cfg.kv_dtype_set, 1);
    assert_int_equal(cfg.kv_dtype, HLX_DTYPE_F32);
    assert_string_equal(cfg.kernels, "scalar");
    assert_int_equal(cfg.check, 1);
    assert_true(cfg.check_tol == 0.01);
    assert_true(cfg.timeout_s == 2.5);
    assert_int_equal(o.json, 1);
    assert_int_equal(cfg.verbose, 1);
    assert_int_equal(parse(&cfg, &o, "--kv-dtype fp8"), -1);
    assert_int_equal(cfg.kv_dtype_set, 1);
    assert_int_equal(cfg.kv_dtype, HLX_DTYPE_FP8);
    assert_int_equal(parse(&cfg, &o, "--kv-dtype bf16"), -1);
    assert_int_equal(cfg.kv_dtype, HLX_DTYPE_BF16);
    assert_int_equal(parse(&cfg, &o, "--ep 2 --route-margin 1e-3"), -1);
    assert_int_equal(cfg.ep, 2);
    assert_true(cfg.route_margin == 1e-3);
}

static void test_refused(void **state)
{
    static const char *const bad[] = {
        "--kvp 0", "--kvp 5K", "--context 2048T", "--context 0x10", "--steps -1",
        "--check-tol nan", "--check-tol 0", "--timeout inf", "--kv-dtype fp4",
        "--seed 9223372036854775808", "--kernels", "--kvpp 2", "stray", "--json=1",
        "--model", "--model=", "--kernels 0123456789012345678901234567890123",
        "--ep 0", "--ep 5K", "--route-margin 0",
    };
    hlx_run_config_t cfg;
    hlx_decode_opts_t o;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (parse(&cfg, &o, bad[i]) != 2)
            fail_msg("'%s' was not refused", bad[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
