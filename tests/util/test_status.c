/* util: the exit status of every hlx_status_t (docs/usage.md, "Exit status"): 2 for input to
 * fix, 1 for a run that failed; once the run is under way, unsupported is a failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include <helix/status.h>

static const struct {
    hlx_status_t st;
    int          code, run_code;
} hlx_codes[] = {
    { HLX_OK, 0, 0 },
    { HLX_INPROGRESS, 1, 1 },
    { HLX_ERR_INVALID, 2, 2 },
    { HLX_ERR_NOMEM, 1, 1 },
    { HLX_ERR_IO, 1, 1 },
    { HLX_ERR_TIMEOUT, 1, 1 },
    { HLX_ERR_UNSUPPORTED, 2, 1 },
    { HLX_ERR_TRANSPORT, 1, 1 },
    { HLX_ERR_BOOTSTRAP, 1, 1 },
    { HLX_ERR_MISMATCH, 2, 2 },
    { HLX_ERR_PARSE, 2, 2 },
    { HLX_ERR_NOSPACE, 2, 2 },
    { HLX_ERR_PEER, 1, 1 },
    { HLX_ERR_CHECK, 1, 1 },
    { HLX_ERR_INTERNAL, 1, 1 },
    { HLX_ERR_NOT_FOUND, 2, 2 },
    { HLX_ERR_NUMERIC, 1, 1 },
};
#define HLX_NCODES (sizeof(hlx_codes) / sizeof(hlx_codes[0]))

static void test_exit_codes(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < HLX_NCODES; i++) {
        if (hlx_status_exit_code(hlx_codes[i].st) != hlx_codes[i].code)
            fail_msg("%s (%d): exit %d, expected %d", hlx_status_str(hlx_codes[i].st),
                     (int)hlx_codes[i].st, hlx_status_exit_code(hlx_codes[i].st),
                     hlx_codes[i].code);
        if (hlx_status_run_exit_code(hlx_codes[i].st) != hlx_codes[i].run_code)
            fail_msg("%s (%d) under way: exit %d, expected %d",
                     hlx_status_str(hlx_codes[i].st), (int)hlx_codes[i].st,
                     hlx_status_run_exit_code(hlx_codes[i].st), hlx_codes[i].run_code);
    }
    /* a value outside the enum is a failure, never success or "fix the input" */
    assert_int_equal(hlx_status_exit_code((hlx_status_t)-99), 1);
    assert_int_equal(hlx_status_run_exit_code((hlx_status_t)-99), 1);
}

/* The table above is the whole enum: every value from HLX_INPROGRESS down to the last has
 * a name, and the first value past it has none (a status added later fails here until the
 * table, the mapping and docs/usage.md's table name it). */
static void test_every_status(void **state)
{
    int v;
    size_t i;

    (void)state;
    for (v = 1; v >= -15; v--) {
        for (i = 0; i < HLX_NCODES && (int)hlx_codes[i].st != v; i++)
            ;
        if (i == HLX_NCODES)
            fail_msg("status %d is not in the table", v);
        assert_string_not_equal(hlx_status_str((hlx_status_t)v), "unknown status");
    }
    assert_string_equal(hlx_status_str((hlx_status_t)-16), "unknown status");
    assert_string_equal(hlx_status_str((hlx_status_t)2), "unknown status");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_codes),
        cmocka_unit_test(test_every_status),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
