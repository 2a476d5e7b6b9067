/* runtime: HOP-B's pipeline model (hlx_schedule_model). Lockstep is c B + m(B) whatever
 * c_busy is; split, the first micro-batch's attention costs c and every later one c_busy,
 * overlapped with the exchange before it; the last micro-batch may be smaller. Expected
 * values are worked out here by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>

#include "hlx_engine_int.h"

typedef struct {
    int         B, M;
    double      c, cb, m1, mB, want;
    const char *why;
} hlx_model_case_t;

static const hlx_model_case_t cases[] = {
    /* m1 1, mB 8 over batch 8: m(M) = M */
    { 8, 8, 1.0, 1.0, 1.0, 8.0, 16.0, "lockstep: c B + m(B)" },
    { 8, 8, 1.0, 3.0, 1.0, 8.0, 16.0, "lockstep has no exchange beside its attention" },
    { 8, 2, 1.0, 1.0, 1.0, 8.0, 10.0, "c 2 + 3 max(2, m 2) + m 2" },
    { 8, 2, 1.0, 1.5, 1.0, 8.0, 13.0, "c 2 + 3 max(c_busy 3, m 2) + m 2" },
    /* m 5 flat: the exchange hides c_busy 4.8, not 6 */
    { 8, 4, 1.0, 1.2, 5.0, 5.0, 14.0, "c 4 + max(4.8, m 5) + m 5" },
    { 8, 4, 1.0, 1.5, 5.0, 5.0, 15.0, "c 4 + max(6, m 5) + m 5" },
    /* 5 = 2 + 2 + 1, m(M) = M */
    { 5, 2, 1.0, 2.0, 1.0, 5.0, 9.0, "c 2 + max(c_busy 4, 2) + max(c_busy 2, 2) + m(1) 1" },
    { 5, 2, 1.0, 1.0, 1.0, 5.0, 7.0, "c 2 + max(2, 2) + max(1, 2) + m(1) 1" },
};

static void test_model_cases(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const hlx_model_case_t *t = &cases[i];
        double got = hlx_schedule_model(t->B, t->M, t->c, t->cb, t->m1, t->mB);
        if (fabs(got - t->want) > 1e-12)
            fail_msg("B %d M %d c %g c_busy %g m1 %g mB %g: %g, expected %g (%s)", t->B,
                     t->M, t->c, t->cb, t->m1, t->mB, got, t->want, t->why);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
