/* Seeded top-p sampling (runtime/sample.c): greedy limits, the nucleus, frequencies of a
 * known distribution over many (request, step) draws, padding never drawn, draws in [0, 1),
 * and the same token as a full sort of the vocabulary on 3000 mixed inputs. */
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

/* The nucleus draw as first written, sorting the whole vocabulary: an oracle for the
 * threshold selection, which must give the same token for every input. */
typedef struct {
    double p;
    int    id;
} oracle_cand_t;

static int oracle_cmp(const void *a, const void *b)
{
    const oracle_cand_t *x = a, *y = b;
    if (x->p != y->p)
        return x->p > y->p ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static int oracle_token(const float *lg, int vocab, double t, double top_p, uint64_t seed,
                        int r, int64_t step, oracle_cand_t *c)
{
    double mx, total = 0.0, want, acc, u;
    int v, n, best = 0;

    for (v = 1; v < vocab; v++)
        if (lg[v] > lg[best])
            best = v;
    mx = lg[best];
    for (v = 0; v < vocab; v++) {
        c[v].p = exp(((double)lg[v] - mx) / t);
        c[v].id = v;
        total += c[v].p;
    }
    qsort(c, (size_t)vocab, sizeof(*c), oracle_cmp);
    want = (top_p > 0 && top_p < 1 ? top_p : 1.0) * total;
    for (n = 0, acc = 0.0; n < vocab && (n == 0 || acc < want); n++)
        acc += c[n].p;
    u = hlx_sample_uniform(seed, r, step) * acc;
    for (v = 0, total = 0.0; v < n - 1; v++) {
        total += c[v].p;
        if (u < total)
            break;
    }
    return c[v].id;
}

static void test_equals_full_sort(void **state)
{
    static const double temps[] = { 0.3, 0.7, 1.0, 2.0, 10.0 };
    static const double tops[] = { 0.05, 0.5, 0.9, 0.99, 1.0 };
    static const int vocabs[] = { 1, 2, 7, 64, 511, 3000 };
    int nv = 3000, i, kind, vi, ti, pi, v, diff = 0, cases = 0;
    float *lg = malloc(sizeof(float) * (size_t)nv);
    oracle_cand_t *oc = malloc(sizeof(*oc) * (size_t)nv);
    char *work = malloc(hlx_sample_work_bytes(nv));
    uint64_t x = 88172645463325252ull;

    (void)state;
    assert_non_null(lg);
    assert_non_null(oc);
    assert_non_null(work);
    /* kinds: flat (small spread), peaked (a few large logits), quantized (many ties), a
     * spread of 0..-150 (probabilities under 1e-30 of the largest: the last pass takes
     * everything), -inf padding in the upper half */
    for (kind = 0; kind < 5; kind++)
        for (vi = 0; vi < 6; vi++)
            for (ti = 0; ti < 5; ti++)
                for (pi = 0; pi < 5; pi++)
                    for (i = 0; i < 4; i++) {
                        int V = vocabs[vi];
                        for (v = 0; v < V; v++) {
                            double r;
                            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                            r = (double)(x >> 11) * (1.0 / 9007199254740992.0);
                            lg[v] = kind == 0 ? (float)r
                                  : kind == 1 ? (float)(r < 0.01 ? 20 + 5 * r : 10 * r)
                                  : kind == 2 ? (float)(int)(r * 4)
                                  : kind == 3 ? (float)(-150 * r)
                                  : v >= V / 2 && V > 1 ? -INFINITY : (float)(3 * r);
                        }
                        int a = hlx_sample_token(lg, V, temps[ti], tops[pi], 11, i, cases, work);
                        int b = oracle_token(lg, V, temps[ti], tops[pi], 11, i, cases, oc);
                        diff += a != b;
                        cases++;
                    }
    assert_int_equal(cases, 5 * 6 * 5 * 5 * 4);
    assert_int_equal(diff, 0);
    free(lg);
    free(oc);
    free(work);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_limits),
        cmocka_unit_test(test_frequencies),
        cmocka_unit_test(test_nucleus),
        cmocka_unit_test(test_reproducible),
        cmocka_unit_test(test_equals_full_sort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
