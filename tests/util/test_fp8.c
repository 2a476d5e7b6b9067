/* util: the e4m3 encoder hlx_f32_to_fp8 (bit arithmetic) against an independent one, the
 * nearest of the 127 positive codes found by a search with hlx_fp8_to_f32 (ties to the
 * even code, saturating at 448, NaN as 0x7f): every code, the midpoints between neighbours
 * and the floats on either side of them, the subnormal range, and one float in 61 of all
 * 2^32 bit patterns. Also that decoding an encoded value gives it back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "helix/types.h"

static uint8_t ref_fp8(float v)
{
    uint8_t sign = signbit(v) ? 0x80 : 0, lo = 0, hi = 126, mid;
    float a = fabsf(v), dl, dh;

    if (isnan(v))
        return 0x7f;
    if (a >= 448.0f)
        return sign | 126;
    while (hi - lo > 1) {
        mid = (uint8_t)((lo + hi) / 2);
        if (hlx_fp8_to_f32(mid) <= a)
            lo = mid;
        else
            hi = mid;
    }
    dl = a - hlx_fp8_to_f32(lo), dh = hlx_fp8_to_f32(hi) - a;
    return sign | (dl < dh ? lo : dh < dl ? hi : (lo & 1) ? hi : lo);
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int check_one(float v)
{
    uint8_t got = hlx_f32_to_fp8(v), want = ref_fp8(v);
    if (got != want) {
        print_error("hlx_f32_to_fp8(%a) = 0x%02x, the search gives 0x%02x\n", (double)v, got,
                    want);
        return 1;
    }
    return 0;
}

static void codes_and_midpoints(void **state)
{
    int c, bad = 0;
    (void)state;
    for (c = 0; c < 127; c++) {
        float x = hlx_fp8_to_f32((uint8_t)c);
        /* each code encodes to itself, both signs */
        assert_int_equal(hlx_f32_to_fp8(x), c);
        assert_int_equal(hlx_f32_to_fp8(-x), c | 0x80);
        bad += check_one(nextafterf(x, 0.0f)) + check_one(nextafterf(x, INFINITY));
        if (c < 126) {
            float y = hlx_fp8_to_f32((uint8_t)(c + 1)), mid = x + (y - x) / 2;
            /* the midpoint is a float (3 mantissa bits): ties go to the even code */
            assert_true(mid > x && mid < y);
            assert_int_equal(hlx_f32_to_fp8(mid), (c & 1) ? c + 1 : c);
            bad += check_one(mid) + check_one(-mid) + check_one(nextafterf(mid, 0.0f)) +
                   check_one(nextafterf(mid, INFINITY));
        }
    }
    assert_int_equal(bad, 0);
}

static void specials(void **state)
{
    (void)state;
    assert_int_equal(hlx_f32_to_fp8(0.0f), 0x00);
    assert_int_equal(hlx_f32_to_fp8(-0.0f), 0x80);
    assert_int_equal(hlx_f32_to_fp8(NAN), 0x7f);
    assert_int_equal(hlx_f32_to_fp8(-NAN), 0x7f);
    assert_int_equal(hlx_f32_to_fp8(INFINITY), 0x7e);
    assert_int_equal(hlx_f32_to_fp8(-INFINITY), 0xfe);
    assert_int_equal(hlx_f32_to_fp8(448.0f), 0x7e);
    assert_int_equal(hlx_f32_to_fp8(1e30f), 0x7e);
    assert_int_equal(hlx_f32_to_fp8(464.0f), 0x7e); /* the tie above 448 saturates too */
    assert_int_equal(hlx_f32_to_fp8(0x1p-9f), 0x01);   /* the smallest subnormal */
    assert_int_equal(hlx_f32_to_fp8(0x1p-10f), 0x00);  /* half of it: the tie goes to 0 */
    assert_int_equal(hlx_f32_to_fp8(0x1.8p-9f), 0x02); /* 1.5 x 2^-9: tie to 2 */
    assert_int_equal(hlx_f32_to_fp8(0x1p-149f), 0x00); /* an f32 subnormal */
    assert_int_equal(hlx_f32_to_fp8(0x1.fp-7f), 0x08); /* just below 2^-6: rounds up to it */
    assert_int_equal(hlx_f32_to_fp8(1.0f), 0x38);
    assert_int_equal(hlx_f32_to_fp8(-2.0f), 0xc0);
    assert_true(hlx_fp8_to_f32(hlx_f32_to_fp8(0.3f)) == 0.3125f);
}

static void one_in_61_of_all_floats(void **state)
{
    uint64_t u;
    int bad = 0;
    (void)state;
    for (u = 0; u < ((uint64_t)1 << 32) && bad < 8; u += 61)
        bad += check_one(from_bits((uint32_t)u));
    assert_int_equal(bad, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(codes_and_midpoints),
        cmocka_unit_test(specials),
        cmocka_unit_test(one_in_61_of_all_floats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
