/* model: the checkpoint reads' vectorized conversions (model/ckpt_cvt.c) give the portable
 * ones' bits exactly: every stored type (F32, BF16, F16, F8_E4M3 with block scales, I8 with
 * row scales, a strided view, GPTQ 2/3/4/8-bit and AWQ words, in order and by g_idx) read
 * into f32 and bf16, rows and transposed, on blocks whose sizes are no multiple of 8 or 16,
 * at odd offsets, into a dst with ld beyond the block (and poison around it that must stay).
 * Random bit patterns, so NaN payloads, infinities, subnormals and rounding ties all occur;
 * the portable reads are checked element by element against a decoding written here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "hlx_test_files.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlx_ckpt.h"

#define sh hlx_test_sh

static char g_tmp[] = "/tmp/hlx_ckpt_cvt_XXXXXX";
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}


static void *rnd_bytes(size_t n)
{
    uint8_t *p = malloc(n);
    size_t i;

    assert_non_null(p);
    for (i = 0; i < n; i++)
        p[i] = (uint8_t)rnd();
    return p;
}

/* A random finite f16 scale of either sign, 2^-9 to 2^-6 (as quantize_int.py --random). */
static uint16_t rnd_scale(void)
{
    const uint32_t r = rnd();
    return (uint16_t)(0x1800u | (r & 0x0bffu) | (r & 0x10000u ? 0x8000u : 0));
}

static float f16(uint16_t h) /* written here, apart from the reader's */
{
    const int e = (h >> 10) & 31, m = h & 0x3ff;
    float v = e == 0 ? ldexpf((float)m, -24) : ldexpf((float)(m | 0x400), e - 25);

    return h & 0x8000 ? -v : v; /* the scales here are finite */
}

/* Blocks read: offsets and sizes no multiple of 8 or 16, single rows and columns, runs of
 * whole vectors with tails, and all of a tensor. */
static const int64_t g_blocks[][4] = { /* r0, nr, c0, nc; -1: to the end */
    { 0, -1, 0, -1 }, { 3, 17, 5, 23 }, { 1, 1, 0, -1 }, { 0, -1, 7, 1 }, { 2, 33, 1, 61 },
    { 5, 16, 8, 40 }, { 0, 40, 3, 130 }, { 7, 9, 11, 9 },
};

static const uint32_t POISON = 0x7fa5a5a5u; /* around the block: neither read writes there */

/* Every block of g_blocks, each way and into each type, read with the portable and with the
 * best conversions: the same bits, poison around the block kept. ref(o, i), when given,
 * is element (o, i) as f32; the portable read is held to it. */
static void compare(hlx_ckpt_t *ck, const hlx_ckpt_tensor_t *t, float (*ref)(int64_t, int64_t),
                    int modes)
{
    static const hlx_dtype_t dts[] = { HLX_DTYPE_F32, HLX_DTYPE_BF16, HLX_CKPT_QCODE,
                                       HLX_CKPT_QZERO, HLX_CKPT_QSCALE, HLX_CKPT_QGROUP };
    const int64_t rows = t->ndim == 2 ? t->shape[0] : 1, cols = t->shape[t->ndim - 1];
    size_t b, d;
    int tr;

    for (b = 0; b < sizeof(g_blocks) / sizeof(g_blocks[0]); b++)
        for (tr = 0; tr < 2; tr++)
            for (d = 0; d < (modes ? 6u : 2u); d++) {
                const hlx_dtype_t dt = dts[d];
                const size_t es = dt == HLX_DTYPE_BF16 ? 2 : 4;
                int64_t r0 = g_blocks[b][0], nr = g_blocks[b][1];
                int64_t c0 = g_blocks[b][2], nc = g_blocks[b][3], ld, n, i, j;
                uint8_t *out[2];
                const int check = ref != NULL && d < 2; /* the values, f32 or bf16 */
                /* bf16 into bf16 along the stored rows: copied as stored (a NaN not quieted) */
                const int raw = t->dtype == HLX_ST_BF16 && t->scale == NULL &&
                                (t->fused != NULL ? tr : !tr);
                int best;
                if (r0 >= rows || c0 >= cols)
                    continue;
                nr = nr < 0 || r0 + nr > rows ? rows - r0 : nr;
                nc = nc < 0 || c0 + nc > cols ? cols - c0 : nc;
                ld = (tr ? nr : nc) + 3;
                n = (tr ? nc : nr) * ld + 5;
                for (best = 0; best < 2; best++) {
                    uint32_t *p = malloc((size_t)n * 4);
                    assert_non_null(p);
                    for (i = 0; i < n; i++)
                        p[i] = POISON;
                    hlx_ckpt_set_cvt(ck, best);
                    if (hlx_ckpt_read_block(ck, t, r0, nr, c0, nc, tr, p, dt, ld) != HLX_OK)
                        fail_msg("%s: %s", t->name, hlx_ckpt_error(ck));
                    out[best] = (uint8_t *)p;
                }
                for (i = 0; i < nr; i++) /* the portable read: the decoding here */
                    for (j = 0; j < nc && check; j++) {
                        const size_t at = (size_t)(tr ? j * ld + i : i * ld + j);
                        const float v = ref(r0 + i, c0 + j);
                        uint32_t got, want;
                        if (es == 2) {
                            uint16_t h;
                            memcpy(&h, out[0] + at * 2, 2);
                            got = h;
                            memcpy(&want, &v, 4);
                            want = raw ? want >> 16 : hlx_f32_to_bf16(v);
                        } else {
                            memcpy(&got, out[0] + at * 4, 4);
                            memcpy(&want, &v, 4);
                        }
                        if (got != want)
                            fail_msg("%s (%d bits): portable (%lld, %lld) of block %zu%s: %08x, "
                                     "expected %08x", t->name, t->bits, (long long)(r0 + i),
                                     (long long)(c0 + j), b, tr ? " transposed" : "", got, want);
                    }
                for (i = 0; i < n * 4; i++)
                    if (out[0][i] != out[1][i])
                        fail_msg("%s: block %zu (rows %lld +%lld, cols %lld +%lld)%s into %s: "
                                 "byte %lld: portable %02x, %s %02x", t->name, b, (long long)r0,
                                 (long long)nr, (long long)c0, (long long)nc,
                                 tr ? " transposed" : "", hlx_ckpt_qmode(dt) ? "a part" :
                                 hlx_dtype_name(dt), (long long)i, out[0][i],
                                 hlx_ckpt_set_cvt(ck, 1), out[1][i]);
                free(out[0]);
                free(out[1]);
            }
}

/* ---- plain types ---------------------------------------------------------------------- */

#define R 45  /* rows */
#define C 150 /* columns */

static uint8_t *g_f32, *g_bf16, *g_f16, *g_fp8, *g_i8, *g_view;
static float g_fp8_scale[3][10], g_i8_scale[R];

static float ld_f32(int64_t o, int64_t i)
{
    float v;
    memcpy(&v, g_f32 + 4 * (o * C + i), 4);
    return v;
}

static float ld_bf16(int64_t o, int64_t i)
{
    uint16_t h;
    memcpy(&h, g_bf16 + 2 * (o * C + i), 2);
    return hlx_bf16_to_f32(h);
}

static float ld_f16(int64_t o, int64_t i)
{
    uint16_t h;
    uint32_t u;
    float v;
    memcpy(&h, g_f16 + 2 * (o * C + i), 2);
    if (((h >> 10) & 31) != 31)
        return f16(h);
    u = (uint32_t)(h & 0x8000) << 16 | 0x7f800000u | (uint32_t)(h & 0x3ff) << 13;
    memcpy(&v, &u, 4);
    return v;
}

static float ld_fp8(int64_t o, int64_t i) /* 16 x 16 blocks of scales */
{
    return hlx_fp8_to_f32(g_fp8[o * C + i]) * g_fp8_scale[o / 16][i / 16];
}

static float ld_i8(int64_t o, int64_t i)
{
    return (float)(int8_t)g_i8[o * C + i] * g_i8_scale[o];
}

static float ld_view(int64_t o, int64_t i) /* expert 1's columns [5, 5 + 30) of [2][C][40] */
{
    uint16_t h;
    memcpy(&h, g_view + 2 * ((C + i) * 40 + 5 + o), 2);
    return hlx_bf16_to_f32(h);
}

static void test_plain(void **state)
{
    /* ties (even down, odd up), the largest finite (to infinity in bf16), signalling NaNs */
    static const uint32_t special[] = { 0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0x7f800001u,
                                        0xff800001u, 0x00008000u, 0x80018000u, 0x7f800000u };
    const size_t n = (size_t)R * C;
    hlx_ckpt_view_t v = { "v.weight", "fused", 2, C, 40, 1, 5, 30, 0, 0, 0, 0, 0, 0 };
    char dir[512], err[512];
    hlx_ckpt_t *ck;
    hlx_test_st_t ts[8];
    size_t i;
    int k;

    (void)state;
    g_f32 = rnd_bytes(n * 4);
    memcpy(g_f32, special, sizeof(special));
    g_bf16 = rnd_bytes(n * 2);
    g_f16 = rnd_bytes(n * 2);
    g_fp8 = rnd_bytes(n);
    g_fp8[1] = 0x7f; /* the NaN codes */
    g_fp8[2] = 0xff;
    g_i8 = rnd_bytes(n);
    g_view = rnd_bytes((size_t)2 * C * 40 * 2);
    for (i = 0; i < 3 * 10; i++)
        g_fp8_scale[i / 10][i % 10] = ldexpf((float)(rnd() % 1000 + 1), -(int)(rnd() % 40));
    g_fp8_scale[1][2] = 0.0f; /* a block of zeros */
    for (i = 0; i < R; i++)
        g_i8_scale[i] = (float)(rnd() % 977 + 1) * 0x1p-12f;
    k = 0;
    ts[k++] = (hlx_test_st_t){ "a.f32", "F32", 2, { R, C }, g_f32, n * 4 };
    ts[k++] = (hlx_test_st_t){ "a.bf16", "BF16", 2, { R, C }, g_bf16, n * 2 };
    ts[k++] = (hlx_test_st_t){ "a.f16", "F16", 2, { R, C }, g_f16, n * 2 };
    ts[k++] = (hlx_test_st_t){ "a.weight", "F8_E4M3", 2, { R, C }, g_fp8, n };
    ts[k++] = (hlx_test_st_t){ "a.weight_scale_inv", "F32", 2, { 3, 10 }, g_fp8_scale,
                               sizeof(g_fp8_scale) };
    ts[k++] = (hlx_test_st_t){ "b.weight", "I8", 2, { R, C }, g_i8, n };
    ts[k++] = (hlx_test_st_t){ "b.weight_scale", "F32", 2, { R, 1 }, g_i8_scale,
                               sizeof(g_i8_scale) };
    ts[k++] = (hlx_test_st_t){ "fused", "BF16", 3, { 2, C, 40 }, g_view, (size_t)2 * C * 40 * 2 };
    snprintf(dir, sizeof(dir), "%s/plain", g_tmp);
    hlx_test_write_st(dir, ts, k);
    assert_int_equal(hlx_ckpt_open(dir, &ck, err, sizeof(err)), HLX_OK);
    hlx_ckpt_set_fp8_block(ck, 16, 16);
    printf("# portable conversions against %s%s\n", hlx_ckpt_set_cvt(ck, 1),
           strcmp(hlx_ckpt_set_cvt(ck, 1), "portable") ? "" : " (no AVX2 here: the portable "
           "reads checked against the decoding here only)");
    if (hlx_ckpt_set_views(ck, &v, 1) != HLX_OK)
        fail_msg("%s", hlx_ckpt_error(ck));
    compare(ck, hlx_ckpt_find(ck, "a.f32"), ld_f32, 0);
    compare(ck, hlx_ckpt_find(ck, "a.bf16"), ld_bf16, 0);
    compare(ck, hlx_ckpt_find(ck, "a.f16"), ld_f16, 0);
    compare(ck, hlx_ckpt_find(ck, "a.weight"), ld_fp8, 0);
    compare(ck, hlx_ckpt_find(ck, "b.weight"), ld_i8, 0);
    compare(ck, hlx_ckpt_find(ck, "v.weight"), ld_view, 0);
    hlx_ckpt_close(ck);
    free(g_f32), free(g_bf16), free(g_f16), free(g_fp8), free(g_i8), free(g_view);
}

/* ---- packed words ----------------------------------------------------------------------- */

#define OUT 45  /* output rows (AWQ: 48, a multiple of its 8 per word) */
#define IN  160 /* input columns: 5 groups of 32 */
#define GRP 32

static uint32_t *g_qw, *g_qz;
static uint16_t *g_sc;
static int32_t g_gidx[IN];
static int g_bits, g_out, g_act;

static int64_t gidx(int64_t i)
{
    return g_act ? g_gidx[i] : i / GRP;
}

static float ld_gptq(int64_t o, int64_t i)
{
    const int b = g_bits, p = 32 / b, z0 = (int)((3 * (o & 31)) & 31);
    const int zb = (int)((3 * (o & 31)) >> 5);
    const uint32_t mask = (1u << b) - 1u;
    const int64_t g = gidx(i), zc = b == 3 ? g_out / 32 * 3 : (g_out + p - 1) / p;
    int32_t q, z;

    if (b == 3) { /* 32 values in 3 words, value k at bits [3 k, 3 k + 3) of the run's 96 */
        const int k0 = (int)((3 * (i & 31)) & 31), kb = (int)((3 * (i & 31)) >> 5);
        const uint64_t w = (uint64_t)(i >> 5) * 3 + (uint64_t)kb;
        uint64_t x = g_qw[w * (uint64_t)g_out + (uint64_t)o];
        if (kb < 2)
            x |= (uint64_t)g_qw[(w + 1) * (uint64_t)g_out + (uint64_t)o] << 32;
        q = (int32_t)((x >> k0) & 7);
        x = g_qz[g * zc + (o >> 5) * 3 + zb];
        if (zb < 2)
            x |= (uint64_t)g_qz[g * zc + (o >> 5) * 3 + zb + 1] << 32;
        z = (int32_t)((x >> z0) & 7);
    } else {
        q = (int32_t)((g_qw[(i / p) * g_out + o] >> (b * (i % p))) & mask);
        z = (int32_t)((g_qz[g * zc + o / p] >> (b * (o % p))) & mask);
    }
    return (float)(q - (z + 1)) * f16(g_sc[g * g_out + o]);
}

static float ld_awq(int64_t o, int64_t i)
{
    static const int field[8] = { 0, 4, 1, 5, 2, 6, 3, 7 };
    const int sh4 = 4 * field[o & 7];
    const int64_t g = gidx(i);
    const int32_t q = (int32_t)((g_qw[i * (g_out / 8) + o / 8] >> sh4) & 15);
    const int32_t z = (int32_t)((g_qz[g * (g_out / 8) + o / 8] >> sh4) & 15);

    return (float)(q - z) * f16(g_sc[g * g_out + o]);
}

/* One packed set x.* of bits (awq: AWQ's 4), random words and zero points, in order or by
 * g_idx; compared in every read mode, the values also against ld_gptq / ld_awq. */
static void packed(int awq, int bits, int act)
{
    /* 3 bits: 32 rows' zero points in 3 words, so a multiple of 32 rows */
    const int p = 32 / bits, out = awq ? 48 : bits == 3 ? 64 : OUT, groups = IN / GRP;
    const int64_t wr = awq ? IN : bits == 3 ? IN / 32 * 3 : IN / p;
    const int64_t wc = awq ? out / 8 : out;
    const int64_t zc = awq ? out / 8 : bits == 3 ? out / 32 * 3 : (out + p - 1) / p;
    const hlx_ckpt_packing_t pk = { awq ? HLX_PACK_AWQ : HLX_PACK_GPTQ, bits, GRP, 0, act };
    char dir[512], err[512];
    hlx_ckpt_t *ck;
    hlx_test_st_t ts[4];
    int i, k = 0;

    g_bits = bits, g_out = out, g_act = act;
    g_qw = rnd_bytes((size_t)(wr * wc) * 4);
    g_qz = rnd_bytes((size_t)(groups * zc) * 4);
    g_sc = malloc((size_t)groups * (size_t)g_out * 2);
    assert_non_null(g_sc);
    for (i = 0; i < groups * g_out; i++)
        g_sc[i] = rnd_scale();
    for (i = 0; i < IN; i++) /* runs of one column to a few */
        g_gidx[i] = (i * 7 / 3 + i / 5) % groups;
    ts[k++] = (hlx_test_st_t){ "x.qweight", "I32", 2, { wr, wc }, g_qw, (size_t)(wr * wc) * 4 };
    ts[k++] = (hlx_test_st_t){ "x.qzeros", "I32", 2, { groups, zc }, g_qz, (size_t)(groups * zc) * 4 };
    ts[k++] = (hlx_test_st_t){ "x.scales", "F16", 2, { groups, g_out }, g_sc,
                      (size_t)groups * (size_t)g_out * 2 };
    if (act)
        ts[k++] = (hlx_test_st_t){ "x.g_idx", "I32", 1, { IN }, g_gidx, sizeof(g_gidx) };
    snprintf(dir, sizeof(dir), "%s/%s%d%s", g_tmp, awq ? "awq" : "gptq", bits, act ? "g" : "");
    hlx_test_write_st(dir, ts, k);
    assert_int_equal(hlx_ckpt_open(dir, &ck, err, sizeof(err)), HLX_OK);
    if (hlx_ckpt_set_packed(ck, &pk, NULL, NULL) != HLX_OK)
        fail_msg("%s", hlx_ckpt_error(ck));
    compare(ck, hlx_ckpt_find(ck, "x.weight"), awq ? ld_awq : ld_gptq, 1);
    hlx_ckpt_close(ck);
    free(g_qw), free(g_qz), free(g_sc);
}

static void test_packed(void **state)
{
    static const int bits[] = { 2, 3, 4, 8 };
    size_t b;
    int act;

    (void)state;
    for (act = 0; act < 2; act++) {
        for (b = 0; b < sizeof(bits) / sizeof(bits[0]); b++)
            packed(0, bits[b], act);
        if (!act) /* AWQ has no g_idx */
            packed(1, 4, act);
    }
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(g_tmp) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    return sh("rm -rf %s", g_tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_packed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
