/* Seeded top-p sampling (runtime/sample.c): greedy limits, the nucleus, frequencies of a
 * known distribution over many (request, step) draws, padding never drawn, draws in [0, 1). */
#include "hlx_sample.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>

static char g_work[4096];

static void test_greedy_limits(void **state)
{
    float lg[5] = { 0.5f, 2.0f, 2.0f, -1.0f, 1.9f };
    int s;

    (void)state;
    assert_true(hlx_sample_work_bytes(5) <= sizeof(g_work));
    for (s = 0; s < 200; s++) {
        /* temperature 0: the first largest logit; a tiny nucleus: the most probable token */
        assert_int_equal(hlx_sample_token(lg, 5, 0.0, 1.0, 9, 0, s, g_work), 1);
        assert_int_equal(hlx_sample_token(lg, 5, 1.0, 1e-9, 9, s % 3, s, g_work), 1);
    }
}

static void test_frequencies(void **state)
{
    /* p = 0.75 / 0.25 (logit difference log 3); -inf padding never drawn */
    float lg[4] = { 0.0f, (float)log(3.0), -INFINITY, -INFINITY };
    int n = 40000, ones = 0, r, s;

    (void)state;
    for (r = 0; r < 4; r++)
        for (s = 0; s < n / 4; s++) {
            int t = hlx_sample_token(lg, 4, 1.0, 1.0, 1234, r, s, g_work);
            assert_true(t == 0 || t == 1);
            ones += t == 1;
        }
    /* 40000 draws: standard deviation 0.0022; the draws are fixed by the seed */
    assert_true(fabs((double)ones / n - 0.75) < 0.015);
    /* temperature 2 flattens it to sqrt(3) : 1, p = 0.634 */
    ones = 0;
    for (s = 0; s < n; s++)
        ones += hlx_sample_token(lg, 4, 2.0, 1.0, 99, 1, s, g_work) == 1;
    assert_true(fabs((double)ones / n - sqrt(3.0) / (1 + sqrt(3.0))) < 0.015);
}

static void test_nucleus(void **state)
{
    /* four equal tokens, top_p 0.5: the nucleus is the first two by id */
    float lg[4] = { 1.0f, 1.0f, 1.0f, 1.0f };
    int seen[4] = { 0 }, s;

    (void)state;
    for (s = 0; s < 2000; s++)
        seen[hlx_sample_token(lg, 4, 1.0, 0.5, 5, 0, s, g_work)]++;
    assert_true(seen[0] > 800 && seen[1] > 800);
    assert_int_equal(seen[2] + seen[3], 0);
}

static void test_reproducible(void **state)
{
    float lg[16];
    int i, s, same = 0;

    (void)state;
    for (i = 0; i < 16; i++)
        lg[i] = (float)(i % 5) * 0.3f;
    for (s = 0; s < 500; s++) {
        int a = hlx_sample_token(lg, 16, 1.0, 0.9, 7, 2, s, g_work);
        /* the work area's alignment does not matter */
        assert_int_equal(a, hlx_sample_token(lg, 16, 1.0, 0.9, 7, 2, s, g_work + 3));
        same += a == hlx_sample_token(lg, 16, 1.0, 0.9, 8, 2, s, g_work);
        assert_true(hlx_sample_uniform(7, 2, s) >= 0 && hlx_sample_uniform(7, 2, s) < 1);
    }
    assert_true(same < 400); /* another seed draws other tokens */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_limits),
        cmocka_unit_test(test_frequencies),
        cmocka_unit_test(test_nucleus),
        cmocka_unit_test(test_reproducible),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
