/* MXFP4 decoding (model/hlx_mxfp4.h) against the OCP MX encodings worked out here from the
 * bit fields: every E2M1 code, E8M0 scales across the range and its NaN, and rows read from
 * any first column and length, against an element-by-element decode; the kernels' packed
 * table (codes 12 + 2 e) against the same values. */
#include "hlx_kernels.h"
#include "hlx_mxfp4.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* E2M1 from its fields: (-1)^s x (e == 0 ? m / 2 : (1 + m / 2) 2^(e - 1)) */
static double e2m1(unsigned code)
{
    unsigned s = code >> 3 & 1, e = code >> 1 & 3, m = code & 1;
    double v = e == 0 ? 0.5 * m : (1.0 + 0.5 * m) * ldexp(1.0, (int)e - 1);
    return s ? -v : v;
}

static void test_codes_scales(void **state)
{
    unsigned c;
    int s;

    (void)state;
    for (c = 0; c < 16; c++) {
        assert_true(hlx_mxfp4_e2m1[c] == e2m1(c));
        assert_true(!!signbit(hlx_mxfp4_e2m1[c]) == (c >= 8));
        /* the packed weights' table: the same value, as 12 + 2 e */
        assert_true(hlx_kernels_wq_lut_e2m1[c] == 12.0 + 2.0 * e2m1(c));
    }
    assert_true(hlx_mxfp4_scale(127) == 1.0f);
    assert_true(hlx_mxfp4_scale(128) == 2.0f);
    assert_true(hlx_mxfp4_scale(120) == 1.0f / 128.0f);
    assert_true(hlx_mxfp4_scale(254) == ldexpf(1.0f, 127));
    assert_true(hlx_mxfp4_scale(0) == ldexpf(1.0f, -127)); /* subnormal, not 0 */
    assert_true(isnan(hlx_mxfp4_scale(255)));
    for (s = 0; s < 255; s++)
        assert_true(hlx_mxfp4_scale((uint8_t)s) == (float)ldexp(1.0, s - 127));
}

static void test_rows(void **state)
{
    enum { COLS = 160 };
    uint8_t blocks[COLS / 2], scales[COLS / 32];
    float out[COLS];
    uint32_t x = 12345;
    int64_t c0, n, i;

    (void)state;
    for (i = 0; i < COLS / 2; i++) {
        x = x * 1103515245u + 12345u;
        blocks[i] = (uint8_t)(x >> 16);
    }
    for (i = 0; i < COLS / 32; i++)
        scales[i] = (uint8_t)(120 + 3 * i);
    for (c0 = 0; c0 < COLS; c0 += 7)
        for (n = 0; c0 + n <= COLS; n += 13) {
            hlx_mxfp4_row(blocks, scales, c0, n, out);
            for (i = 0; i < n; i++) {
                const int64_t c = c0 + i;
                const unsigned code = c % 2 ? blocks[c / 2] >> 4 : blocks[c / 2] & 15;
                const double want = e2m1(code) * ldexp(1.0, scales[c / 32] - 127);
                if (out[i] != want)
                    fail_msg("c0 %lld n %lld: element %lld is %g, expected %g", (long long)c0,
                             (long long)n, (long long)c, out[i], want);
            }
        }
    /* a block whose scale is E8M0's NaN reads NaN, its neighbours not */
    scales[1] = 255;
    hlx_mxfp4_row(blocks, scales, 30, 4, out);
    assert_true(!isnan(out[0]) && !isnan(out[1]) && isnan(out[2]) && isnan(out[3]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codes_scales),
        cmocka_unit_test(test_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
