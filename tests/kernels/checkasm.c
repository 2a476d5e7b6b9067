/* checkasm: every kernel variant this CPU supports against the C reference (attention:
 * against the fp64 answer) on the same random inputs (shapes include length 0, 1 and
 * lengths that are not multiples of the vector block), with stated tolerances; --bench times each variant against the reference.
 * Usage: checkasm [--seed N] [--variant NAME] [--bench] [--quick]. Exit 0 ok, 1 mismatch,
 * 77 when only the reference is available (nothing to compare). */
#include "kt_common.h"
#include "hlx_time.h"

#include <cblas.h>
#include <getopt.h>
#include <stdatomic.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

/* Stated tolerances (variant vs reference, both fp32 accumulation in different orders;
 * attention: variant vs the fp64 answer):
 *   attention o: |o_var - o_64| <= 1e-5 * S, S = max_e sum_j p_j |v_j[e]| from fp64
 *                (S = max|o| when the head has no cancellation); lse: 1e-5 * max(1, |lse|)
 *   merge, rmsnorm, swiglu: 1e-6 relative to the largest magnitude entering the result
 *   gemm: 1e-6 * K absolute (inputs in [-1, 1]) */
#define KT_TOL_ATTN 1e-5
#define KT_TOL_ELEM 1e-6

static int kt_fails;
static int kt_checks;

static void kt_report(const char *variant, const char *what, int ok, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void kt_report(const char *variant, const char *what, int ok, const char *fmt, ...)
{
    va_list ap;

    kt_checks++;
    if (ok)
        return;
    kt_fails++;
    if (kt_fails > 20)
        return;
    fprintf(stderr, "FAIL %s %s: ", variant, what);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
}

/* When set, the variant's attention runs split over this pool (hlx_pool_attn): the partials'
 * merge adds its rounding, so the bound doubles. Its work area starts kt_pool_off floats
 * into an allocation (the split lays the partials out on pages of their own whatever the
 * caller's alignment). */
static hlx_pool_t *kt_pool;
static int         kt_pool_off;

/* When set, every problem soft-caps its scores at this (hlx_attn_desc_t.softcap). */
static float kt_softcap;

/* One attention problem: the variant on a copy in its KV layout against the fp64 answer on
 * rows (alias: MLA's absorbed form, v == k, the value the head of the key row). The fp32
 * reference is not the target here: its own sums drift on long flat shards (soft-capped
 * scores at 17K tokens: its lse 2e-5 off, the variants' 2e-6); test_ref bounds it, and
 * where a variant runs it (a shape off its vector path) that bound applies. */
/* Whether rows [0, len) of d elements (stride apart) of fp8 bytes hold a NaN (0x7f, 0xff). */
static int kt_fp8_has_nan(const void *p, size_t stride, size_t d, size_t len)
{
    const uint8_t *b = p;
    size_t t, e;

    for (t = 0; t < len; t++)
        for (e = 0; e < d; e++)
            if (hlx_fp8_is_nan(b[t * stride + e]))
                return 1;
    return 0;
}

/* fp8 KV without NaN bytes: the call with kv_clean set (the vector paths skip their scan)
 * gives the same bits as without (the shard's padding past len may hold anything). */
static void kt_attn_clean_same(const hlx_kernels_t *var, const kt_attn_t *a,
                               const hlx_attn_desc_t *dl, int alias)
{
    hlx_attn_desc_t dc = *dl;
    float *o = malloc(sizeof(float) * (size_t)dl->group * (size_t)dl->dv + 1);
    float *lse = malloc(sizeof(float) * (size_t)dl->group + 1);
    int same;

    if (dl->kv_dtype != HLX_DTYPE_FP8 || dl->len == 0 ||
        kt_fp8_has_nan(a->d.k, a->d.k_stride, (size_t)dl->dk, dl->len) ||
        (!alias && kt_fp8_has_nan(a->d.v, a->d.v_stride, (size_t)dl->dv, dl->len))) {
        free(o);
        free(lse);
        return;
    }
    dc.o = o;
    dc.lse = lse;
    dc.kv_clean = 1;
    var->attn(&dc);
    same = !memcmp(o, dl->o, sizeof(float) * (size_t)dl->group * (size_t)dl->dv) &&
           !memcmp(lse, dl->lse, sizeof(float) * (size_t)dl->group);
    kt_report(var->name, "attn kv_clean", same,
              "group %d dk %d dv %d len %zu fp8%s: kv_clean changed the bits", dl->group,
              dl->dk, dl->dv, dl->len, alias ? " (v == k)" : "");
    free(o);
    free(lse);
}

static void kt_attn_case_x(const hlx_kernels_t *var, kt_rng_t *r,
                           int group, int dk, int dv, size_t len, hlx_dtype_t t, double qamp,
                           int alias)
{
    kt_attn_t a;
    hlx_attn_desc_t dl;
    void *kl, *vl;
    /* off the variant's vector path the call runs the reference over its layout: the
     * reference's own bound (it grows with the length; at 17K soft-capped tokens its lse is
     * 2e-5 off where the vector paths' are 2e-6) */
    const int vec = hlx_kernels_attn_vector(var, t, group, dk, dv, alias, kt_softcap != 0.0f);
    const double split = kt_pool ? 2.0 : 1.0;
    const double tol = split * (vec ? KT_TOL_ATTN : kt_tol_o(len, dk));
    double *o64 = malloc(sizeof(double) * (size_t)dv);
    int g, e;

    kt_attn_make(r, &a, group, dk, dv, len, t, kt_int(r, 0, 1), qamp);
    a.d.softcap = kt_softcap;
    if (alias) {
        a.d.v = a.d.k;
        a.d.v_stride = a.d.k_stride;
    }
    /* poison the output: the variant must write every element */
    for (e = 0; e < group * dv; e++)
        a.o[e] = NAN;
    dl = a.d;
    kl = kt_kv_relayout(a.d.k, t, a.d.k_stride, (size_t)dk, len, var->kv_layout.k_block,
                        var->kv_layout.k_chunk);
    vl = alias ? kl
               : kt_kv_relayout(a.d.v, t, a.d.v_stride, (size_t)dv, len,
                                var->kv_layout.v_block, var->kv_layout.v_chunk);
    dl.k = kl;
    dl.v = vl;
    if (kt_pool != NULL) {
        float *work = malloc(sizeof(float) * (hlx_pool_attn_work_floats(kt_pool, &dl) +
                                              (size_t)kt_pool_off));
        hlx_pool_attn(kt_pool, var, &dl, work + kt_pool_off);
        free(work);
    } else {
        var->attn(&dl);
        kt_attn_clean_same(var, &a, &dl, alias);
    }
    for (g = 0; g < group; g++) {
        double l64, S = kt_attn_f64(&a.d, g, o64, &l64), err = 0.0, lerr, ltol, otol; /* len 0: o 0 */
        for (e = 0; e < dv; e++) {
            double diff = fabs(o64[e] - a.o[g * dv + e]);
            err = diff > err || diff != diff ? diff : err;
        }
        if (len == 0) {
            kt_report(var->name, "attn", err == 0.0 && isinf(a.lse[g]) && a.lse[g] < 0,
                      "len 0 must give o = 0, lse = -inf (got lse %g)", (double)a.lse[g]);
            continue;
        }
        lerr = fabs(l64 - a.lse[g]);
        ltol = vec ? tol * fmax(1.0, fabs(l64)) : split * kt_tol_lse(len, l64);
        /* scores of magnitude |lse| carry f32 rounding of about |lse| 2^-24 into every
         * weight exp(s - lse), a few 1e-6 of o at a cap of 50: the bound grows past 16 */
        otol = tol * fmax(1.0, fabs(l64) / 16.0);
        kt_report(var->name, "attn", err <= otol * S && lerr <= ltol,
                  "group %d dk %d dv %d len %zu %s head %d%s%s: o err %.3g (S %.3g) lse %.9g vs "
                  "%.9g", group, dk, dv, len, hlx_dtype_name(t), g,
                  kt_pool ? " (thread split)" : "", kt_softcap > 0 ? " (soft-capped)" : "", err,
                  S, (double)a.lse[g], l64);
        if (!(err <= otol * S))
            break;
    }
    free(kl);
    if (!alias)
        free(vl);
    free(o64);
    kt_attn_free(&a);
}

static void kt_attn_case(const hlx_kernels_t *var, kt_rng_t *r,
                         int group, int dk, int dv, size_t len, hlx_dtype_t t, double qamp)
{
    kt_attn_case_x(var, r, group, dk, dv, len, t, qamp, 0);
}

static void kt_check_attn(const hlx_kernels_t *var, kt_rng_t *r, int quick)
{
    static const hlx_dtype_t types[] = { HLX_DTYPE_BF16, HLX_DTYPE_F32, HLX_DTYPE_FP8 };
    static const size_t special[] = { 0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127 };
    static const int dims[] = { 32, 64, 128, 96, 160, 576, 512 };
    size_t i;
    int it, ti;

    /* lengths around every block boundary (vector width, superblock) for each type */
    for (ti = 0; ti < 3; ti++)
        for (i = 0; i < sizeof(special) / sizeof(special[0]); i++)
            kt_attn_case(var, r, 8, 128, 128, special[i], types[ti], 2.0);
    /* random shapes: groups 1..17, head sizes on and off the vector path */
    for (it = 0; it < (quick ? 60 : 300); it++) {
        int group = kt_int(r, 1, 17);
        int dk = it % 4 == 3 ? kt_int(r, 1, 100) : dims[kt_int(r, 0, 4)];
        int dv = it % 4 == 3 ? kt_int(r, 1, 100) : dims[kt_int(r, 0, 4)];
        size_t len = (size_t)kt_int(r, 0, it % 5 == 0 ? 1200 : 150);
        kt_attn_case(var, r, group, dk, dv, len, types[it % 3], kt_unif(r, 0.1, 10.0));
    }
    /* MLA absorbed form: one KV head, key 576, value 512, many query heads */
    kt_attn_case(var, r, 128, 576, 512, 37, HLX_DTYPE_BF16, 1.0);
    kt_attn_case(var, r, 20, 576, 512, 300, HLX_DTYPE_F32, 1.0);
    /* the same with v == k (the value read from the key row, in the key layout), every
     * KV type, a tail shorter than a block, one token, and no token */
    for (ti = 0; ti < 3; ti++) {
        kt_attn_case_x(var, r, 128, 576, 512, 77, types[ti], 1.0, 1);
        kt_attn_case_x(var, r, 9, 576, 512, 1, types[ti], 1.0, 1);
        kt_attn_case_x(var, r, 3, 64, 32, 0, types[ti], 1.0, 1);
        kt_attn_case_x(var, r, 5, 96, 64, 45, types[ti], 1.0, 1);
    }
    /* tile path (amx): head chunks over several 1024-token superblocks with a tail, partial
     * chunks (G < 8), and q spread over many binades (the three-part split must be exact) */
    kt_attn_case(var, r, 12, 128, 128, 2 * 1024 + 45, HLX_DTYPE_BF16, 4.0);
    kt_attn_case(var, r, 3, 64, 96, 32 * 5, HLX_DTYPE_BF16, 1.0);
    kt_attn_case(var, r, 8, 128, 128, 1000, HLX_DTYPE_BF16, 1e-3);
    /* fp8 past a superblock with a tail, a 32-dimension chunk past the last 64 (dk 96,
     * 160: the lookups widen 64 bytes at a time), partial head chunks, q over many
     * binades, one head */
    kt_attn_case(var, r, 8, 128, 128, 1024 + 45, HLX_DTYPE_FP8, 4.0);
    kt_attn_case(var, r, 3, 96, 64, 32 * 5 + 7, HLX_DTYPE_FP8, 1.0);
    kt_attn_case(var, r, 8, 160, 96, 100, HLX_DTYPE_FP8, 1e-3);
    kt_attn_case(var, r, 1, 32, 32, 64, HLX_DTYPE_FP8, 2.0);
    /* avx2 reads fp8 blocks as fp32 bits with q scaled by 2^120 where every |q| < 256 and
     * the group's q fits 16 x 256 floats, else through fp16: q up to 250 (scaled, the
     * products still exact), q past 256 and a group of 17 x 256 (through fp16) */
    kt_attn_case(var, r, 8, 128, 128, 300, HLX_DTYPE_FP8, 250.0);
    kt_attn_case(var, r, 8, 128, 128, 300, HLX_DTYPE_FP8, 600.0);
    kt_attn_case(var, r, 17, 256, 128, 100, HLX_DTYPE_FP8, 2.0);
    /* long sequence with GQA group 8 */
    kt_attn_case(var, r, 8, 128, 128, quick ? 3000 : 20000, HLX_DTYPE_BF16, 3.0);
    /* shards long enough for HELIX_KV_PREFETCH=auto (the default) to time its prefetch
     * modes per 2048-token segment and switch within the call: past the first choice (16K
     * tokens) and, in full runs, into the second round of trials (64K), every KV type (f32
     * chooses between two modes, bf16 and fp8 among three) */
    kt_attn_case(var, r, 8, 128, 128, quick ? 17000 : 66000 + 45, HLX_DTYPE_BF16, 3.0);
    kt_attn_case(var, r, 8, 128, 128, 17000 + 13, HLX_DTYPE_FP8, 3.0);
    kt_attn_case(var, r, 8, 128, 128, 17000 + 7, HLX_DTYPE_F32, 3.0);
    /* Gemma 2's soft-capped scores, every cap with every KV type: caps below and near the
     * scores' spread (q amplitude 10 and more: raw scores of several units) and one far
     * above it (1e6: tanh of tiny arguments, where 1 - e^(-2u) would lose its digits);
     * block edges, Gemma 2's head of 256 with group 2, random shapes, the v == k form; and
     * a shard long enough for the prefetch modes */
    for (it = 0; it < 4; it++) {
        static const float caps[] = { 1.0f, 5.0f, 0.5f, 1e6f };
        kt_softcap = caps[it];
        for (ti = 0; ti < 3; ti++) {
            for (i = 0; i < sizeof(special) / sizeof(special[0]); i++)
                kt_attn_case(var, r, 8, 128, 128, special[i], types[ti], 10.0);
            kt_attn_case(var, r, 2, 256, 256, 300, types[ti], 20.0);
            kt_attn_case(var, r, kt_int(r, 1, 17), dims[kt_int(r, 0, 4)],
                         dims[kt_int(r, 0, 4)], (size_t)kt_int(r, 0, 500), types[ti],
                         kt_unif(r, 1.0, 30.0));
            kt_attn_case_x(var, r, 9, 576, 512, 77, types[ti], 10.0, 1);
        }
        kt_attn_case(var, r, 8, 128, 128, quick ? 3000 : 17000 + 13, types[it % 3], 10.0);
    }
    kt_softcap = 0.0f;
    if ((!strcmp(var->name, "avx512") || !strcmp(var->name, "avx2")) &&
        hlx_kernels_kv_prefetch() == HLX_KV_PREFETCH_AUTO)
        kt_report(var->name, "kv prefetch auto", hlx_kernels_kv_prefetch_pick() >= 0,
                  "no prefetch mode chosen after shards of 17K tokens and more (pick %d)",
                  hlx_kernels_kv_prefetch_pick());
}

/* Every fp8 e4m3 byte through the variant's widening: every token holds the same value row
 * of the 256 bytes and zero keys, so o = v exactly (NaN bytes give NaN); one token (a
 * partial block) and 64 (whole blocks, which the variants may widen another way), where
 * only token 37 holds the two NaN bytes (the others 0 there), so a scan for NaN must
 * look at every row. */
static void kt_check_fp8_all(const hlx_kernels_t *var)
{
    enum { KT_FP8_TOK = 64 };
    static uint8_t kk[KT_FP8_TOK * 256], vv[KT_FP8_TOK * 256];
    float q[256], o[256], lse;
    void *kl, *vl;
    hlx_attn_desc_t d = { .group = 1, .dk = 256, .dv = 256, .kv_dtype = HLX_DTYPE_FP8,
                          .q = q, .k = kk, .v = vv, .k_stride = 256, .v_stride = 256,
                          .scale = 1.0f, .o = o, .lse = &lse };
    int i, pass, bad, len;

    /* pass 0: every byte; pass 1: the NaN bytes replaced by 0, so a variant that widens
     * blocks without NaN another way (avx2: as fp32 bits; avx512 without the lookups:
     * through fp16) decodes the other 254 by it; pass 2: as pass 1 with one |q| past 256
     * (avx2: through fp16; zero keys, so o = v still) */
    for (len = 1; len <= KT_FP8_TOK; len += KT_FP8_TOK - 1)
        for (pass = 0; pass < 3; pass++) {
            for (i = 0; i < KT_FP8_TOK * 256; i++) {
                const int b = i % 256, nan_row = len > 1 ? 37 : 0;
                kk[i] = 0;
                vv[i] = (pass || i / 256 != nan_row) && (b & 0x7f) == 0x7f ? 0 : (uint8_t)b;
            }
            for (i = 0; i < 256; i++)
                q[i] = i == 5 && pass == 2 ? -300.0f : 1.0f;
            d.len = (size_t)len;
            d.k = kl = kt_kv_relayout(kk, HLX_DTYPE_FP8, 256, 256, (size_t)len,
                                      var->kv_layout.k_block, var->kv_layout.k_chunk);
            d.v = vl = kt_kv_relayout(vv, HLX_DTYPE_FP8, 256, 256, (size_t)len,
                                      var->kv_layout.v_block, var->kv_layout.v_chunk);
            var->attn(&d);
            free(kl);
            free(vl);
            for (i = 0, bad = 0; i < 256; i++) {
                double want = kt_fp8_to_f64((uint8_t)(pass && (i & 0x7f) == 0x7f ? 0 : i));
                if (isnan(want) ? !isnan(o[i]) : (double)o[i] != want) /* -0 comes out +0 */
                    bad++;
            }
            kt_report(var->name, "fp8 decode", bad == 0,
                      "%d of 256 byte values decoded wrongly over %d tokens%s", bad, len,
                      pass == 2 ? " (no NaN among them, a query element of -300)"
                      : pass    ? " (no NaN among them)" : "");
        }
}

/* avx2's three ways to read fp8 KV give the same bits: blocks without NaN as fp32 bits
 * (type 4, every |q| < 256) or through fp16 (type 3, a larger q), each against the exact
 * widening (type 2), which the variant takes throughout when the MXCSR has
 * denormals-are-zero set; and with kv_clean set (no scan for NaN bytes: the padding's NaN
 * past len must not leak into the partial block). Group 8 (two head chunks sharing the widened copies) and 3, a
 * partial last block (its padding bytes are NaN: that step takes type 2 either way, so
 * the types also switch within a call); q small, q up to 250 over subnormal keys (type
 * 4's scaled q near its bound, its subnormals), and a q of 300 in a key dimension that is
 * zero in every token (type 3), the scores kept small: no subnormal p, which DAZ would
 * read as 0. */
static void kt_check_fp8_types(const hlx_kernels_t *var, kt_rng_t *r)
{
#if defined(__x86_64__) || defined(__i386__)
    enum { KT_T = 100, KT_D = 128, KT_G = 8 };
    static uint8_t kk[KT_T * KT_D], vv[KT_T * KT_D];
    float q[KT_G * KT_D], o[3][KT_G * KT_D], lse[3][KT_G];
    hlx_attn_desc_t d = { .dk = KT_D, .dv = KT_D, .len = KT_T, .kv_dtype = HLX_DTYPE_FP8,
                          .q = q, .k_stride = KT_D, .v_stride = KT_D,
                          .scale = 0.0883883476f };
    static const char *const what[3] = { "|q| < 0.5 (as fp32 bits)",
                                         "a |q| of 300 (through fp16)",
                                         "|q| up to 250, subnormal keys (as fp32 bits)" };
    const unsigned csr = _mm_getcsr();
    void *kl, *vl;
    int i, mode, run, g, bad;

    if (strcmp(var->name, "avx2") != 0)
        return;
    for (i = 0; i < KT_T * KT_D; i++) { /* every byte but the NaNs 0x7f, 0xff */
        uint8_t b = (uint8_t)kt_next(r);
        vv[i] = (b & 0x7f) == 0x7f ? 0x3f : b;
    }
    vl = kt_kv_relayout(vv, HLX_DTYPE_FP8, KT_D, KT_D, KT_T, var->kv_layout.v_block,
                        var->kv_layout.v_chunk);
    d.v = vl;
    /* mode 0: q small; 1: one q element of 300 where every key is 0; 2: q up to 250 with
     * keys of exponent 0 (e4m3's subnormals, fp32 subnormals in type 4), so the scores stay
     * within a few tens and no p is subnormal (which DAZ would read as 0) */
    for (mode = 0; mode < 3; mode++) {
        for (i = 0; i < KT_T * KT_D; i++) {
            uint8_t b = (uint8_t)kt_next(r);
            if ((b & 0x7f) == 0x7f)
                b = 0x3f;
            /* exponents above 9 (|k| > 7.5) would give scores of hundreds */
            if (((b >> 3) & 0xf) > 9)
                b = (uint8_t)((b & 0x87) | (9 << 3));
            if (mode == 2)
                b &= 0x87;
            kk[i] = i % KT_D == 5 && mode == 1 ? 0 : b;
        }
        kl = kt_kv_relayout(kk, HLX_DTYPE_FP8, KT_D, KT_D, KT_T, var->kv_layout.k_block,
                            var->kv_layout.k_chunk);
        d.k = kl;
        for (g = 3; g <= KT_G; g += KT_G - 3) {
            d.group = g;
            for (i = 0; i < g * KT_D; i++)
                q[i] = mode == 1 && i % KT_D == 5 ? 300.0f
                       : (float)kt_unif(r, mode == 2 ? -250.0 : -0.5, mode == 2 ? 250.0 : 0.5);
            for (run = 0; run < 3; run++) { /* run 1: DAZ, type 2; run 2: kv_clean */
                d.o = o[run];
                d.lse = lse[run];
                d.kv_clean = run == 2;
                _mm_setcsr(run == 1 ? csr | 0x0040 : csr & ~0x0040u);
                var->attn(&d);
                _mm_setcsr(csr);
            }
            d.kv_clean = 0;
            for (run = 0; run < 3; run += 2) {
                for (i = 0, bad = 0; i < g * KT_D; i++)
                    bad += memcmp(&o[run][i], &o[1][i], sizeof(float)) != 0;
                for (i = 0; i < g; i++)
                    bad += memcmp(&lse[run][i], &lse[1][i], sizeof(float)) != 0;
                kt_report(var->name, "fp8 types", bad == 0,
                          "group %d, %s%s: %d of %d outputs differ from the exact widening's "
                          "bits", g, what[mode], run ? ", kv_clean" : "", bad, g * (KT_D + 1));
            }
        }
        free(kl);
    }
    free(vl);
#else
    (void)var, (void)r;
#endif
}

static void kt_check_merge(const hlx_kernels_t *ref, const hlx_kernels_t *var, kt_rng_t *r)
{
    int it;

    for (it = 0; it < 100; it++) {
        int np = kt_int(r, 1, 9), nh = kt_int(r, 1, 20), dv = kt_int(r, 1, 140), p, i;
        size_t n = (size_t)np * nh * dv;
        float *op = malloc(sizeof(float) * n), *lp = malloc(sizeof(float) * np * nh);
        float *o1 = malloc(sizeof(float) * nh * dv), *o2 = malloc(sizeof(float) * nh * dv);
        float *l1 = malloc(sizeof(float) * nh), *l2 = malloc(sizeof(float) * nh);
        double err = 0.0, lerr = 0.0;

        kt_fill(r, op, HLX_DTYPE_F32, n, 3.0);
        for (p = 0; p < np * nh; p++) /* some empty parts, some whole heads empty */
            lp[p] = kt_int(r, 0, 4) == 0 || (it % 7 == 0) ? -INFINITY
                                                         : (float)kt_unif(r, -30.0, 30.0);
        ref->merge(np, nh, dv, op, lp, o1, l1);
        var->merge(np, nh, dv, op, lp, o2, l2);
        for (i = 0; i < nh * dv; i++)
            err = fmax(err, fabs((double)o1[i] - o2[i]) / 3.0);
        for (i = 0; i < nh; i++)
            lerr = fmax(lerr, isinf(l1[i]) ? (l1[i] == l2[i] ? 0.0 : INFINITY)
                                           : fabs((double)l1[i] - l2[i]) / fmax(1.0, fabs(l1[i])));
        kt_report(var->name, "merge", err <= KT_TOL_ELEM && lerr <= KT_TOL_ELEM,
                  "parts %d heads %d dv %d: o err %.3g lse err %.3g", np, nh, dv, err, lerr);
        free(op); free(lp); free(o1); free(o2); free(l1); free(l2);
    }
}

/* argmax against a loop written here (strict >, from -inf, first index kept): ties of the
 * largest at random places, NaN anywhere (also first, also all), -inf rows, signed zeros,
 * +inf, lengths across the vector widths and a 128K vocabulary; the reference too. */
static int kt_argmax_oracle(const float *x, int n, float *max)
{
    int i, a = -1;
    float b = -INFINITY;

    for (i = 0; i < n; i++)
        if (x[i] > b)
            b = x[i], a = i;
    *max = b;
    return a;
}

static void kt_check_argmax(const hlx_kernels_t *ref, const hlx_kernels_t *var, kt_rng_t *r)
{
    int it, i;

    for (it = 0; it < 400; it++) {
        const int n = it < 70 ? it : it == 399 ? 131072 : kt_int(r, 0, 700);
        const int kind = it % 8;
        float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1)), m0, m1, m2;
        int a0, a1, a2;

        for (i = 0; i < n; i++)
            x[i] = kind == 0 ? -INFINITY
                   : kind == 1 ? NAN
                   : kind == 2 ? (kt_int(r, 0, 1) ? 0.0f : -0.0f)
                   : kind == 3 ? (float)kt_int(r, -3, 3) /* many ties */
                   : kind == 7 && kt_int(r, 0, 3) == 0 ? NAN /* a quarter NaN */
                               : (float)kt_unif(r, -20.0, 20.0);
        if (n > 0 && kind >= 3) {
            const int k = kt_int(r, 0, 4);
            for (i = 0; i < k; i++) /* NaN and -inf sprinkled, once at the start */
                x[i == 0 && it % 2 ? 0 : kt_int(r, 0, n - 1)] = i % 2 ? -INFINITY : NAN;
            if (kind == 5) /* the largest twice or more */
                for (i = 0; i < 3; i++)
                    x[kt_int(r, 0, n - 1)] = 25.0f;
            if (kind == 6 && it % 3 == 0)
                x[kt_int(r, 0, n - 1)] = INFINITY;
        }
        a0 = kt_argmax_oracle(x, n, &m0);
        a1 = var->argmax(x, n, &m1);
        a2 = ref->argmax(x, n, &m2);
        kt_report(var->name, "argmax",
                  a1 == a0 && a2 == a0 && (a0 < 0 ? m1 == -INFINITY && m2 == -INFINITY
                                                   : !memcmp(&m1, &x[a0], sizeof(float)) &&
                                                         !memcmp(&m2, &x[a0], sizeof(float))),
                  "n %d kind %d: index %d (reference %d, loop %d)", n, kind, a1, a2, a0);
        free(x);
    }
}

static void kt_check_elem(const hlx_kernels_t *ref, const hlx_kernels_t *var, kt_rng_t *r)
{
    int it, i;

    for (it = 0; it < 60; it++) {
        int n = it < 20 ? it + 1 : kt_int(r, 1, 9000), nh, hd, rot;
        float *x = malloc(sizeof(float) * n), *w = malloc(sizeof(float) * n);
        float *y1 = malloc(sizeof(float) * n), *y2 = malloc(sizeof(float) * n);
        double err = 0.0, amp = kt_unif(r, 0.01, 50.0);

        kt_fill(r, x, HLX_DTYPE_F32, n, amp);
        kt_fill(r, w, HLX_DTYPE_F32, n, 2.0);
        ref->rmsnorm(y1, x, w, n, 1e-6f);
        var->rmsnorm(y2, x, w, n, 1e-6f);
        for (i = 0; i < n; i++)
            err = fmax(err, fabs((double)y1[i] - y2[i]) / (fabs(y1[i]) + 1e-30));
        kt_report(var->name, "rmsnorm", err <= KT_TOL_ELEM, "n %d rel err %.3g", n, err);
        kt_fill(r, x, HLX_DTYPE_F32, n, 30.0);
        ref->swiglu(y1, x, w, n);
        var->swiglu(y2, x, w, n);
        err = 0.0;
        for (i = 0; i < n; i++) /* relative to |gate * up|, the size of the product */
            err = fmax(err, fabs((double)y1[i] - y2[i]) / (fabs(x[i] * w[i]) + 1e-30));
        kt_report(var->name, "swiglu", err <= 2 * KT_TOL_ELEM, "n %d err %.3g", n, err);
        free(x); free(w); free(y1); free(y2);

        nh = kt_int(r, 1, 8);
        hd = 2 * kt_int(r, 1, 80);
        rot = 2 * kt_int(r, 0, hd / 2);
        x = malloc(sizeof(float) * nh * hd);
        y1 = malloc(sizeof(float) * nh * hd);
        kt_fill(r, x, HLX_DTYPE_F32, (size_t)nh * hd, 3.0);
        memcpy(y1, x, sizeof(float) * nh * hd);
        {
            double inv[80];
            hlx_rope_tab_t rt = { inv, it & 1 ? 1.2f : 1.0f, NULL, 0 };
            hlx_rope_plain_freqs(10000.0, rot, inv);
            ref->rope(x, nh, hd, rot, it * 9973, &rt);
            var->rope(y1, nh, hd, rot, it * 9973, &rt);
        }
        err = 0.0;
        for (i = 0; i < nh * hd; i++)
            err = fmax(err, fabs((double)x[i] - y1[i]));
        kt_report(var->name, "rope", err <= 1e-5, "heads %d hd %d rot %d err %.3g", nh, hd,
                  rot, err);
        free(x); free(y1);
    }
}

/* The hand-written kernels compute every column alone, summed in the order of k: bf16
 * weights always, f32 in the avx512 tables at any row count and in avx2's up to 8 rows.
 * The rest is OpenBLAS sgemm (avx2's f32 from 9 rows), whose rounding may change with the
 * rows and the column range (docs/kernels.md). */
static int kt_gemm_by_hand(const hlx_kernels_t *var, hlx_dtype_t t, int M)
{
    return t == HLX_DTYPE_BF16 || strcmp(var->name, "avx2") != 0 || M <= 8;
}

/* The variants whose GEMM reads strips by hand (avx512, amx, which takes its GEMM, and
 * avx2): named, not read from w_s16, which HELIX_W_STRIPS=0 clears. */
static int kt_s16_by_hand(const hlx_kernels_t *var)
{
    return !strcmp(var->name, "avx512") || !strcmp(var->name, "amx") ||
           !strcmp(var->name, "avx2");
}

/* W in strips of 16 columns (HLX_W_S16): the same W packed gives the same y as row-major,
 * bit for bit where the variant reads strips by hand (each element summed in the order of
 * k either way), else within the gemm tolerance of the reference; the padding of the last
 * strip is never written to y. */
static void kt_check_gemm_s16(const hlx_kernels_t *ref, const hlx_kernels_t *var, kt_rng_t *r,
                              int M, int N, int K, hlx_dtype_t t, int acc)
{
    const size_t sb = hlx_kernels_w_s16_bytes(t, K, N);
    float *x = malloc(sizeof(float) * M * K), *y0 = malloc(sizeof(float) * M * N);
    float *y1 = malloc(sizeof(float) * M * N), *y2 = malloc(sizeof(float) * M * (N + 16));
    void *w = malloc(kt_esize(t) * (size_t)K * N), *ws = malloc(sb);
    double err = 0.0;
    int i, same = 1, pad = 1, m;

    kt_fill(r, x, HLX_DTYPE_F32, (size_t)M * K, 1.0);
    kt_fill(r, w, t, (size_t)K * N, 1.0);
    kt_fill(r, y0, HLX_DTYPE_F32, (size_t)M * N, 1.0);
    memcpy(y1, y0, sizeof(float) * M * N);
    hlx_kernels_w_s16_pack(t, K, N, w, ws);
    ref->gemm(M, N, K, x, w, t, y0, acc);
    /* y2's rows N apart, then 16 guard floats after the last row */
    for (i = 0; i < M * N; i++)
        y2[i] = y1[i];
    for (i = M * N; i < M * (N + 16); i++)
        y2[i] = -7.0f;
    var->gemm(M, N, K, x, w, t, y1, acc);
    var->gemm(M, N, K, x, ws, hlx_w_s16_of(t), y2, acc);
    for (i = 0; i < M * N; i++) {
        err = fmax(err, fabs((double)y0[i] - y2[i]));
        same &= memcmp(&y1[i], &y2[i], sizeof(float)) == 0;
    }
    for (m = M * N; m < M * (N + 16); m++)
        pad &= y2[m] == -7.0f;
    kt_report(var->name, "gemm strips",
              pad && err <= 1e-6 * K + 1e-6 &&
                  (!kt_s16_by_hand(var) || !kt_gemm_by_hand(var, t, M) || same),
              "%dx%dx%d %s acc %d: err %.3g against the reference, %s row-major W, guard %s",
              M, N, K, hlx_dtype_name(t), acc, err, same ? "same bits as" : "differs from",
              pad ? "kept" : "overwritten");
    free(x); free(y0); free(y1); free(y2); free(w); free(ws);
}

/* One thread's column range [n0, n1) of W in strips (n0 on a whole strip, n1 on one or N,
 * as hlx_pool_gemm cuts them), K = 0 included: inside, the same bits as the row-major
 * range where the variant reads strips by hand (else within the gemm tolerance of the
 * reference), zero or y itself for K = 0; outside, y untouched. */
static void kt_check_gemm_s16_cols(const hlx_kernels_t *ref, const hlx_kernels_t *var,
                                   kt_rng_t *r, int M, int N, int K, hlx_dtype_t t, int acc)
{
    const int groups = (N + 15) / 16, g0 = kt_int(r, 0, groups - 1);
    const int g1 = kt_int(r, g0 + 1, groups), n0 = g0 * 16, n1 = g1 * 16 < N ? g1 * 16 : N;
    const size_t sb = hlx_kernels_w_s16_bytes(t, K, N);
    float *x = malloc(sizeof(float) * ((size_t)M * K + 1)), *y0 = malloc(sizeof(float) * M * N);
    float *y1 = malloc(sizeof(float) * M * N), *y2 = malloc(sizeof(float) * M * N);
    float *yi = malloc(sizeof(float) * M * N);
    void *w = malloc(kt_esize(t) * ((size_t)K * N + 1)), *ws = malloc(sb + 1);
    double err = 0.0;
    int i, same = 1, outside = 1, zero = 1;

    kt_fill(r, x, HLX_DTYPE_F32, (size_t)M * K, 1.0);
    kt_fill(r, w, t, (size_t)K * N, 1.0);
    kt_fill(r, yi, HLX_DTYPE_F32, (size_t)M * N, 1.0);
    hlx_kernels_w_s16_pack(t, K, N, w, ws);
    memcpy(y0, yi, sizeof(float) * M * N);
    memcpy(y1, yi, sizeof(float) * M * N);
    memcpy(y2, yi, sizeof(float) * M * N);
    ref->gemm_cols(M, N, K, x, w, t, y0, acc, n0, n1);
    var->gemm_cols(M, N, K, x, w, t, y1, acc, n0, n1);
    var->gemm_cols(M, N, K, x, ws, hlx_w_s16_of(t), y2, acc, n0, n1);
    for (i = 0; i < M * N; i++) {
        const int n = i % N;
        if (n < n0 || n >= n1) {
            outside &= memcmp(&y2[i], &yi[i], sizeof(float)) == 0;
            continue;
        }
        err = fmax(err, fabs((double)y0[i] - y2[i]));
        same &= memcmp(&y1[i], &y2[i], sizeof(float)) == 0;
        if (K == 0)
            zero &= acc ? memcmp(&y2[i], &yi[i], sizeof(float)) == 0 : y2[i] == 0.0f;
    }
    kt_report(var->name, "gemm_cols strips",
              outside && zero && err <= 1e-6 * K + 1e-6 &&
                  (!kt_s16_by_hand(var) || !kt_gemm_by_hand(var, t, M) || same),
              "%dx%dx%d %s acc %d columns [%d, %d): err %.3g against the reference, %s "
              "row-major W, columns outside %s, K = 0 %s", M, N, K, hlx_dtype_name(t), acc,
              n0, n1, err, same ? "same bits as" : "differs from",
              outside ? "untouched" : "written", zero ? "ok" : "wrong");
    free(x); free(y0); free(y1); free(y2); free(yi); free(w); free(ws);
}

static void kt_check_gemm(const hlx_kernels_t *ref, const hlx_kernels_t *var, kt_rng_t *r)
{
    int it, i;

    for (it = 0; it < 60; it++) {
        /* every other: a prefill chunk's rows (avx512: packed panels of 128 k x 256
         * columns beyond 8 rows; N and K cross their edges) */
        int M = kt_int(r, 1, it % 2 == 0 ? 40 : 9), N = kt_int(r, 1, 600);
        int K = kt_int(r, 1, 300), acc = it & 1;
        hlx_dtype_t t = it & 2 ? HLX_DTYPE_F32 : HLX_DTYPE_BF16;
        float *x = malloc(sizeof(float) * M * K), *y1 = malloc(sizeof(float) * M * N);
        float *y2 = malloc(sizeof(float) * M * N);
        void *w = malloc(kt_esize(t) * (size_t)K * N);
        double err = 0.0;

        kt_fill(r, x, HLX_DTYPE_F32, (size_t)M * K, 1.0);
        kt_fill(r, w, t, (size_t)K * N, 1.0);
        kt_fill(r, y1, HLX_DTYPE_F32, (size_t)M * N, 1.0);
        memcpy(y2, y1, sizeof(float) * M * N);
        ref->gemm(M, N, K, x, w, t, y1, acc);
        var->gemm(M, N, K, x, w, t, y2, acc);
        for (i = 0; i < M * N; i++)
            err = fmax(err, fabs((double)y1[i] - y2[i]));
        kt_report(var->name, "gemm", err <= 1e-6 * K + 1e-6, "%dx%dx%d %s acc %d err %.3g",
                  M, N, K, hlx_dtype_name(t), acc, err);
        /* a request rounds the same alone as in a batch (or a prefill chunk) */
        if (kt_gemm_by_hand(var, t, M)) {
            int m, same = 1;
            memcpy(y1, y2, sizeof(float) * M * N);
            var->gemm(M, N, K, x, w, t, y2, 1);
            for (m = 0; m < M; m++) {
                var->gemm(1, N, K, x + (size_t)m * K, w, t, y1 + (size_t)m * N, 1);
                same &= memcmp(y1 + (size_t)m * N, y2 + (size_t)m * N, sizeof(float) * N) == 0;
            }
            kt_report(var->name, "gemm rows", same, "%dx%dx%d %s: a row of the batch differs "
                      "from the same row alone", M, N, K, hlx_dtype_name(t));
        }
        free(x); free(y1); free(y2); free(w);
    }
    /* N and K across the strip kernels' edges: groups of SS strips and the strips left,
     * chunks of 4096 terms */
    kt_check_gemm_s16(ref, var, r, 3, 40, 4100, HLX_DTYPE_BF16, 1);
    kt_check_gemm_s16(ref, var, r, 8, 100, 8200, HLX_DTYPE_F32, 0);
    kt_check_gemm_s16(ref, var, r, 1, 1, 4097, HLX_DTYPE_BF16, 0);
    /* 9-16 rows: the avx512 strips in two passes of 8 rows, the second partial */
    kt_check_gemm_s16(ref, var, r, 12, 72, 4100, HLX_DTYPE_BF16, 1);
    kt_check_gemm_s16(ref, var, r, 16, 100, 300, HLX_DTYPE_F32, 0);
    kt_check_gemm_s16(ref, var, r, 9, 33, 17, HLX_DTYPE_BF16, 0);
    /* bf16 up to 64 rows in passes (the last partial), 65 on the panels; f32 past 16 on the
     * panels */
    kt_check_gemm_s16(ref, var, r, 64, 48, 260, HLX_DTYPE_BF16, 1);
    kt_check_gemm_s16(ref, var, r, 61, 40, 4100, HLX_DTYPE_BF16, 0);
    kt_check_gemm_s16(ref, var, r, 65, 33, 100, HLX_DTYPE_BF16, 0);
    kt_check_gemm_s16(ref, var, r, 24, 50, 70, HLX_DTYPE_F32, 1);
    for (it = 0; it < 40; it++)
        kt_check_gemm_s16(ref, var, r, kt_int(r, 1, it % 2 == 0 ? 40 : 9), kt_int(r, 1, 600),
                          kt_int(r, 1, 300), it & 2 ? HLX_DTYPE_F32 : HLX_DTYPE_BF16, it & 1);
    /* column ranges of a thread split, every fifth with K = 0 (both types, accumulating
     * or not); rows 1-20 (avx2: pairs of rows over groups of 3 strips, one row over 4; 128
     * terms a pass) */
    for (it = 0; it < 48; it++)
        kt_check_gemm_s16_cols(ref, var, r, kt_int(r, 1, it % 3 == 2 ? 20 : 8),
                               kt_int(r, 1, 400), it % 5 == 4 ? 0 : kt_int(r, 1, 300),
                               it & 2 ? HLX_DTYPE_F32 : HLX_DTYPE_BF16, it & 1);
}

/* Packed integer weights (hlx_wq_t): the gemm over a packed matrix, on a column range of
 * a thread split, is bit for bit the variant's gemm over the same matrix dequantized to
 * bf16 strips element by element as the checkpoint reader does (bf16((q - z) x s)), and
 * the reference's likewise; columns outside the range untouched; its elements read back
 * (hlx_kernels_wq_at) equal the dequantized ones; a plain (bits 0) matrix gives the gemm
 * over its strips. Groups of any size and offset, K across the 256-row chunks and N
 * across the 256-column ones, 1 to 70 rows; at 4 bits with lut, nibbles that stand for
 * MXFP4's codes (hlx_kernels_wq_lut_e2m1: each a value of the table, any zero point).
 * smag 0: scales +-2^j, j from p2 to p2 + 14, one in 8 of them 0 (MXFP4's), whose products
 * are bf16 values where every j is within [-133, 119] (hlx_wq_t.inexact 0, which the
 * GEMMs may take to skip the rounding); the flag must say so. */
static void kt_check_wq(const hlx_kernels_t *ref, const hlx_kernels_t *var, kt_rng_t *r, int M,
                        int N, int K, int bits, int group, int acc, double smag, int ao, int lut,
                        int p2)
{
    /* act order (ao): about K / group groups, each row's drawn at random */
    const int kofs = ao ? 0 : kt_int(r, 0, group - 1);
    const int G = ao ? K / group + 1 : K > 0 ? (K - 1 + kofs) / group + 1 : 0;
    const int groups = (N + 15) / 16, g0 = kt_int(r, 0, groups - 1), g1 = kt_int(r, g0 + 1, groups);
    const int n0 = g0 * 16, n1 = g1 * 16 < N ? g1 * 16 : N;
    const hlx_dtype_t qt = (hlx_dtype_t)(HLX_W_Q | hlx_w_s16_of(HLX_DTYPE_BF16));
    const size_t qb = ao ? hlx_kernels_wq_bytes_ao(bits, K, N, G)
                         : hlx_kernels_wq_bytes(bits, HLX_DTYPE_BF16, K, N, group, kofs);
    int32_t *tab = malloc(sizeof(int32_t) * ((size_t)K + 1));
    const size_t pb = hlx_kernels_wq_bytes(0, HLX_DTYPE_BF16, K, N, 1, 0);
    float *code = malloc(sizeof(float) * ((size_t)K * N + 1));
    float *sc = malloc(sizeof(float) * ((size_t)G * N + 1)), *zr = malloc(sizeof(float) * ((size_t)G * N + 1));
    uint16_t *wd = malloc(2 * ((size_t)K * N + 1));
    void *ws = malloc(hlx_kernels_w_s16_bytes(HLX_DTYPE_BF16, K, N) + 64);
    void *wq = aligned_alloc(64, (qb + 63) / 64 * 64), *wp = aligned_alloc(64, (pb + 63) / 64 * 64);
    float *x = malloc(sizeof(float) * ((size_t)M * K + 1)), *yi = malloc(sizeof(float) * M * N);
    float *y[5];
    int i, k, n, same = 1, outside = 1, at = 1, plain = 1, bad, inexact = 0;

    for (i = 0; i < 5; i++)
        y[i] = malloc(sizeof(float) * M * N);
    for (i = 0; i < K * N; i++)
        code[i] = lut ? (float)hlx_kernels_wq_lut_e2m1[kt_int(r, 0, 15)]
                      : (float)kt_int(r, 0, (1 << bits) - 1);
    for (i = 0; i < G * N; i++) {
        const int j = p2 + kt_int(r, 0, 14);
        sc[i] = smag > 0 ? (float)kt_unif(r, -smag, smag)
                : kt_int(r, 0, 7) == 0 ? 0.0f : ldexpf(kt_int(r, 0, 1) ? 1.0f : -1.0f, j);
        inexact |= smag > 0 || (sc[i] != 0.0f && (j < -133 || j > 119));
        zr[i] = lut ? (float)kt_int(r, 0, 24)
                    : (float)kt_int(r, 0, (1 << bits) - 1) + (bits == 4 && i % 7 == 0); /* GPTQ's +1 */
    }
    for (k = 0; k < K; k++)
        tab[k] = ao ? kt_int(r, 0, G - 1) : (k + kofs) / group;
    for (k = 0; k < K; k++)
        for (n = 0; n < N; n++) {
            const int g = tab[k];
            const float v = (float)((int)code[(size_t)k * N + n] - (int)zr[(size_t)g * N + n]) *
                            sc[(size_t)g * N + n];
            wd[(size_t)k * N + n] = hlx_f32_to_bf16(v);
        }
    hlx_kernels_w_s16_pack(HLX_DTYPE_BF16, K, N, wd, ws);
    kt_fill(r, x, HLX_DTYPE_F32, (size_t)M * K, 1.0);
    kt_fill(r, yi, HLX_DTYPE_F32, (size_t)M * N, 1.0);
    bad = (ao ? hlx_kernels_wq_init_ao(wq, bits, K, N, G, tab)
              : hlx_kernels_wq_init(wq, bits, HLX_DTYPE_BF16, K, N, group, kofs)) != HLX_OK ||
          hlx_kernels_wq_init(wp, 0, HLX_DTYPE_BF16, K, N, 1, 0) != HLX_OK ||
          (lut && hlx_kernels_wq_set_lut(wq, hlx_kernels_wq_lut_e2m1) != HLX_OK);
    /* packed in two column ranges, as the loader packs groups of columns */
    for (n = 0; n < N && !bad; n += 48) {
        const int e = N - n < 48 ? N : n + 48;
        bad |= hlx_kernels_wq_pack_cols(wq, n, e, code + n, sc + n, zr + n, (size_t)N) != HLX_OK;
        bad |= hlx_kernels_wq_plain_cols(wp, n, e, wd + n, (size_t)N) != HLX_OK;
    }
    for (i = 0; i < 5; i++)
        memcpy(y[i], yi, sizeof(float) * M * N);
    var->gemm_cols(M, N, K, x, ws, hlx_w_s16_of(HLX_DTYPE_BF16), y[0], acc, n0, n1);
    hlx_kernels_gemm_cols(var, M, N, K, x, wq, qt, y[1], acc, n0, n1);
    ref->gemm_cols(M, N, K, x, ws, hlx_w_s16_of(HLX_DTYPE_BF16), y[2], acc, n0, n1);
    hlx_kernels_gemm_cols(ref, M, N, K, x, wq, qt, y[3], acc, n0, n1);
    hlx_kernels_gemm_cols(var, M, N, K, x, wp, qt, y[4], acc, n0, n1);
    for (i = 0; i < M * N; i++) {
        same &= !memcmp(&y[0][i], &y[1][i], 4) && !memcmp(&y[2][i], &y[3][i], 4);
        plain &= !memcmp(&y[0][i], &y[4][i], 4);
        if (i % N < n0 || i % N >= n1)
            outside &= !memcmp(&y[1][i], &yi[i], 4) && !memcmp(&y[3][i], &yi[i], 4);
    }
    for (i = 0; i < 20 && K > 0; i++) {
        k = kt_int(r, 0, K - 1);
        n = kt_int(r, 0, N - 1);
        at &= hlx_kernels_wq_at(wq, k, n) == hlx_bf16_to_f32(wd[(size_t)k * N + n]) &&
              hlx_kernels_wq_at(wp, k, n) == hlx_bf16_to_f32(wd[(size_t)k * N + n]);
    }
    inexact = ((const hlx_wq_t *)wq)->inexact == inexact; /* the flag right */
    kt_report(var->name, "gemm packed", !bad && same && outside && at && plain && inexact,
              "%dx%dx%d %d-bit%s%s group %d from %d%s acc %d columns [%d, %d): %s the gemm "
              "over the dequantized strips, outside %s, elements %s, plain %s, inexact flag "
              "%s%s", M, N, K, bits, lut ? " E2M1" : "", smag > 0 ? "" : " 2^j scales", group,
              kofs, ao ? " act order" : "", acc, n0, n1,
              same ? "same bits as" : "differs from",
              outside ? "untouched" : "written", at ? "read back" : "differ",
              plain ? "the same" : "differs", inexact ? "right" : "wrong",
              bad ? ", packing refused" : "");
    for (i = 0; i < 5; i++)
        free(y[i]);
    free(code); free(sc); free(zr); free(wd); free(ws); free(wq); free(wp); free(x); free(yi);
    free(tab);
}

/* Bad packing input is refused: a code past 2^bits - 1, a fraction, a NaN scale, a zero
 * point that is not an integer, a range that does not start on a strip; sizes that overflow or fall outside the format are 0. */
static void kt_check_wq_refused(const hlx_kernels_t *var)
{
    const size_t b = hlx_kernels_wq_bytes(4, HLX_DTYPE_BF16, 4, 16, 2, 0);
    void *w = aligned_alloc(64, (b + 63) / 64 * 64);
    float code[64], sc[32], zr[32];
    int i, ok = b > 0 && hlx_kernels_wq_bytes(4, HLX_DTYPE_BF16, INT32_MAX, INT32_MAX, 128, 0) == 0 &&
                hlx_kernels_wq_bytes(3, HLX_DTYPE_BF16, 4, 16, 2, 0) == 0 &&
                hlx_kernels_wq_bytes(4, HLX_DTYPE_F32, 4, 16, 2, 0) == 0 &&
                hlx_kernels_wq_bytes(4, HLX_DTYPE_BF16, 4, 16, 2, 2) == 0 &&
                hlx_kernels_wq_bytes(0, HLX_DTYPE_FP8, 4, 16, 1, 0) == 0 &&
                hlx_kernels_wq_bytes_ao(4, 4, 16, 0) == 0 &&
                hlx_kernels_wq_bytes_ao(4, 4, INT32_MAX, INT32_MAX) == 0;

    for (i = 0; i < 64; i++)
        code[i] = (float)(i % 16);
    for (i = 0; i < 32; i++)
        sc[i] = 0.5f, zr[i] = 8.0f;
    ok &= hlx_kernels_wq_init(w, 4, HLX_DTYPE_BF16, 4, 16, 2, 0) == HLX_OK &&
          hlx_kernels_wq_pack_cols(w, 0, 16, code, sc, zr, 16) == HLX_OK;
    code[5] = 16.0f;
    ok &= hlx_kernels_wq_pack_cols(w, 0, 16, code, sc, zr, 16) == HLX_ERR_INVALID;
    code[5] = 2.5f;
    ok &= hlx_kernels_wq_pack_cols(w, 0, 16, code, sc, zr, 16) == HLX_ERR_INVALID;
    code[5] = NAN;
    ok &= hlx_kernels_wq_pack_cols(w, 0, 16, code, sc, zr, 16) == HLX_ERR_INVALID;
    code[5] = INFINITY;
    ok &= hlx_kernels_wq_pack_cols(w, 0, 16, code, sc, zr, 16) == HLX_ERR_INVALID;
    code[5] = 5.0f;
    code[17] = -1.0f; /* the odd row of a pair */
    ok &= hlx_kernels_wq_pack_cols(w, 0, 16, code, sc, zr, 16) == HLX_ERR_INVALID;
    code[17] = 1.0f;
    sc[3] = NAN;
    ok &= hlx_kernels_wq_pack_cols(w, 0, 16, code, sc, zr, 16) == HLX_ERR_INVALID;
    sc[3] = 0.5f;
    zr[7] = 7.5f;
    ok &= hlx_kernels_wq_pack_cols(w, 0, 16, code, sc, zr, 16) == HLX_ERR_INVALID;
    zr[7] = 8.0f;
    ok &= hlx_kernels_wq_pack_cols(w, 8, 16, code, sc, zr, 16) == HLX_ERR_INVALID;
    /* packed again over other codes: each row's nibble replaced, its pair's kept */
    for (i = 0; i < 64; i++)
        code[i] = 15.0f;
    ok &= hlx_kernels_wq_pack_cols(w, 0, 16, code, sc, zr, 16) == HLX_OK;
    for (i = 0; i < 64; i++)
        code[i] = (float)((i * 7) % 16);
    ok &= hlx_kernels_wq_pack_cols(w, 0, 16, code, sc, zr, 16) == HLX_OK;
    for (i = 0; i < 64; i++)
        ok &= hlx_kernels_wq_at(w, i / 16, i % 16) == (float)((i * 7) % 16 - 8) * 0.5f;
    { /* a table: only at 4 bits; a code no nibble stands for refused; 12 is nibble 0 (and
         8, -0), 0 nibble 15; the identity leaves the matrix unmapped */
        static const uint8_t ident[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };
        const size_t b8 = hlx_kernels_wq_bytes(8, HLX_DTYPE_BF16, 4, 16, 2, 0);
        void *w8 = aligned_alloc(64, (b8 + 63) / 64 * 64);
        ok &= hlx_kernels_wq_init(w8, 8, HLX_DTYPE_BF16, 4, 16, 2, 0) == HLX_OK &&
              hlx_kernels_wq_set_lut(w8, hlx_kernels_wq_lut_e2m1) == HLX_ERR_INVALID &&
              hlx_kernels_wq_init(w, 4, HLX_DTYPE_BF16, 4, 16, 2, 0) == HLX_OK &&
              hlx_kernels_wq_set_lut(w, ident) == HLX_OK && !((hlx_wq_t *)w)->mapped &&
              hlx_kernels_wq_set_lut(w, hlx_kernels_wq_lut_e2m1) == HLX_OK &&
              ((hlx_wq_t *)w)->mapped;
        for (i = 0; i < 64; i++)
            code[i] = (float)hlx_kernels_wq_lut_e2m1[i % 16], zr[i / 2] = 12.0f;
        ok &= hlx_kernels_wq_pack_cols(w, 0, 16, code, sc, zr, 16) == HLX_OK;
        for (i = 0; i < 64; i++)
            ok &= hlx_kernels_wq_at(w, i / 16, i % 16) ==
                  ((float)hlx_kernels_wq_lut_e2m1[i % 16] - 12.0f) * 0.5f;
        ok &= (((const uint8_t *)w + ((hlx_wq_t *)w)->codes)[8] & 15) == 0 &&
              (((const uint8_t *)w + ((hlx_wq_t *)w)->codes)[15] & 15) == 15;
        code[21] = 5.0f; /* between 4 (nibble 14) and 6 (13) */
        ok &= hlx_kernels_wq_pack_cols(w, 0, 16, code, sc, zr, 16) == HLX_ERR_INVALID;
        code[21] = 25.0f;
        ok &= hlx_kernels_wq_pack_cols(w, 0, 16, code, sc, zr, 16) == HLX_ERR_INVALID;
        code[21] = 24.0f;
        ok &= hlx_kernels_wq_pack_cols(w, 0, 16, code, sc, zr, 16) == HLX_OK;
        /* packed: the table can no longer change what the nibbles mean */
        ok &= hlx_kernels_wq_set_lut(w, ident) == HLX_ERR_INVALID;
        /* the flag that products need no rounding: scales of 2^-1 and zero points 0 ..
           255 clear; a zero point of -1 or 256, a scale of 2^-134 or 3 x 2^-2 set it */
        ok &= !((hlx_wq_t *)w)->inexact;
        {
            static const float zs[] = { -1.0f, 256.0f, 255.0f, 12.0f, 12.0f };
            static const float ss[] = { 0.5f, 0.5f, 0.5f, 0x1p-134f, 0.75f };
            int c;
            for (c = 0; c < 5; c++) {
                ok &= hlx_kernels_wq_init(w, 4, HLX_DTYPE_BF16, 4, 16, 2, 0) == HLX_OK;
                for (i = 0; i < 32; i++)
                    sc[i] = 0.5f, zr[i] = 12.0f;
                sc[9] = ss[c], zr[9] = zs[c];
                for (i = 0; i < 64; i++)
                    code[i] = (float)(i % 16);
                ok &= hlx_kernels_wq_pack_cols(w, 0, 16, code, sc, zr, 16) == HLX_OK &&
                      ((hlx_wq_t *)w)->inexact == (c != 2);
            }
            for (i = 0; i < 32; i++)
                sc[i] = 0.5f, zr[i] = 8.0f;
        }
        free(w8);
    }
    { /* act order: a row's group outside [0, G) */
        const int32_t tab[4] = { 1, 0, 2, 1 };
        const size_t ab = hlx_kernels_wq_bytes_ao(4, 4, 16, 3);
        void *wa = aligned_alloc(64, (ab + 63) / 64 * 64);
        ok &= ab > 0 && hlx_kernels_wq_init_ao(wa, 4, 4, 16, 2, tab) == HLX_ERR_INVALID &&
              hlx_kernels_wq_init_ao(wa, 4, 4, 16, 3, tab) == HLX_OK;
        free(wa);
    }
    kt_report(var->name, "gemm packed: bad input", ok, "refused");
    free(w);
}

static void kt_check_wqs(const hlx_kernels_t *ref, const hlx_kernels_t *var, kt_rng_t *r)
{
    static const int rows[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 64, 70 };
    int it;

    kt_check_wq_refused(var);
    kt_check_wq(ref, var, r, 1, 600, 700, 4, 128, 0, 0.02, 0, 0, 0);
    kt_check_wq(ref, var, r, 3, 300, 513, 8, 64, 1, 0.02, 0, 0, 0);
    kt_check_wq(ref, var, r, 65, 100, 257, 4, 257, 0, 0.02, 0, 0, 0); /* one group of a whole column */
    /* scales so small that products are subnormal: no conversion that flushes them */
    kt_check_wq(ref, var, r, 2, 40, 70, 4, 32, 0, 1e-38, 0, 0, 0);
    kt_check_wq(ref, var, r, 2, 40, 71, 4, 16, 0, 1e-38, 1, 0, 0);
    /* MXFP4's nibbles: blocks of 32, a rank's rows from inside one (kofs), subnormal */
    kt_check_wq(ref, var, r, 1, 600, 704, 4, 32, 0, 0.02, 0, 1, 0);
    kt_check_wq(ref, var, r, 2, 40, 71, 4, 32, 1, 1e-38, 0, 1, 0);
    /* MXFP4's scales, powers of two: products all bf16 values at the ends of the range
       (2^-133 .. 2^-119, 2^105 .. 2^119), or some not (from 2^-140, to 2^120) */
    kt_check_wq(ref, var, r, 1, 300, 320, 4, 32, 0, 0, 0, 1, -133);
    kt_check_wq(ref, var, r, 3, 300, 320, 4, 32, 1, 0, 0, 1, -7);
    kt_check_wq(ref, var, r, 2, 100, 96, 4, 32, 0, 0, 0, 1, 105);
    kt_check_wq(ref, var, r, 1, 300, 320, 4, 32, 0, 0, 0, 1, -140);
    kt_check_wq(ref, var, r, 1, 300, 320, 4, 32, 0, 0, 0, 1, -134);
    kt_check_wq(ref, var, r, 2, 100, 96, 4, 32, 0, 0, 0, 1, 106);
    kt_check_wq(ref, var, r, 4, 200, 300, 8, 64, 1, 0, 0, 0, -10);
    kt_check_wq(ref, var, r, 9, 200, 300, 4, 32, 0, 0, 0, 1, -7);
    kt_check_wq(ref, var, r, 6, 200, 300, 4, 32, 1, 0, 0, 1, -7);
    kt_check_wq(ref, var, r, 8, 200, 300, 4, 32, 0, 0, 0, 1, -7);
    for (it = 0; it < 48; it++) /* the last 16 in act order; every third 4-bit one E2M1 */
        kt_check_wq(ref, var, r, rows[it % 12], kt_int(r, 1, 560), kt_int(r, 1, 600),
                    it & 1 ? 8 : 4, it % 3 == 0 ? kt_int(r, 1, 40) : 32 << (it % 3), it & 2,
                    it % 5 == 4 ? 1e3 : 0.02, it >= 32, !(it & 1) && it % 3 == 1, 0);
}

/* hlx_pool_run: every thread adds its index + 1 once per call */
static _Atomic long kt_pool_sum;
static void kt_pool_each(void *arg, int t, int nt)
{
    (void)arg;
    (void)nt;
    atomic_fetch_add(&kt_pool_sum, t + 1);
}

/* Jobs of both kinds back to back (run on every thread, chunks claimed by whichever thread
 * comes first), with workers that sleep in between: every thread runs each hlx_pool_run
 * call exactly once, and every chunked GEMM equals one thread's, bit for bit. */
static void kt_check_pool_jobs(const hlx_kernels_t *var, kt_rng_t *r, int T)
{
    enum { M = 2, N = 160, K = 24 };
    float x[M * K], y1[M * N], y2[M * N];
    uint16_t w[K * N];
    int it, same = 1;
    long want = 0;

    kt_fill(r, x, HLX_DTYPE_F32, M * K, 1.0);
    kt_fill(r, w, HLX_DTYPE_BF16, K * N, 1.0);
    var->gemm(M, N, K, x, w, HLX_DTYPE_BF16, y1, 0);
    atomic_store(&kt_pool_sum, 0);
    for (it = 0; it < 900; it++) {
        if (it % 3 == 0) {
            hlx_pool_run(kt_pool, kt_pool_each, NULL);
            want += (long)T * (T + 1) / 2;
        } else {
            memset(y2, 0xff, sizeof(y2));
            hlx_pool_gemm(kt_pool, var, M, N, K, x, w, HLX_DTYPE_BF16, y2, 0);
            same &= memcmp(y1, y2, sizeof(y1)) == 0;
        }
        if (it % 300 == 299) { /* let the workers fall asleep on the futex */
            struct timespec ts = { 0, 5000000 };
            nanosleep(&ts, NULL);
        }
    }
    kt_report(var->name, "pool jobs", atomic_load(&kt_pool_sum) == want && same,
              "%d threads: run-on-every-thread sum %ld (want %ld), chunked gemm %s", T,
              (long)atomic_load(&kt_pool_sum), want, same ? "same" : "differs");
}

/* The thread split: attention over pools of 2 and 3 threads (shards shorter than one block
 * per thread, tails, lengths 0 and 1, MLA with v == k) against the fp64 answer, and the
 * column-split GEMM identical to one thread's. */
static void kt_check_pool(const hlx_kernels_t *var, kt_rng_t *r, int quick)
{
    static const size_t lens[] = { 0, 1, 31, 32, 33, 64, 65, 95, 97, 200, 1000 };
    static const hlx_dtype_t types[] = { HLX_DTYPE_BF16, HLX_DTYPE_F32, HLX_DTYPE_FP8 };
    int T, it, ti;
    size_t i;

    for (T = 2; T <= 3; T++) {
        if (hlx_pool_create(T, NULL, &kt_pool) != HLX_OK) {
            kt_report(var->name, "pool", 0, "cannot create a pool of %d threads", T);
            kt_pool = NULL;
            return;
        }
        for (ti = 0; ti < 3; ti++)
            for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
                kt_attn_case(var, r, 8, 128, 128, lens[i], types[ti], 2.0);
        kt_attn_case(var, r, 8, 128, 128, quick ? 3000 : 20000, HLX_DTYPE_BF16, 3.0);
        kt_attn_case(var, r, 12, 64, 96, 301, HLX_DTYPE_F32, 1.0);
        /* group x dv not a multiple of a cache line (the partials, on pages of their own,
         * compacted for the merge), and work at every float offset of a line */
        for (kt_pool_off = 1; kt_pool_off < 16; kt_pool_off += quick ? 7 : 1)
            kt_attn_case(var, r, 3, 32, 24, 500, types[kt_pool_off % 3], 1.0);
        kt_pool_off = 0;
        kt_attn_case_x(var, r, 128, 576, 512, 150, HLX_DTYPE_BF16, 1.0, 1);
        kt_attn_case_x(var, r, 128, 576, 512, 150, HLX_DTYPE_FP8, 1.0, 1);
        kt_check_pool_jobs(var, r, T);
        for (it = 0; it < 30; it++) {
            /* every third: more than 8 rows (the panels) */
            int M = kt_int(r, 1, it % 3 == 2 ? 20 : 9), N = kt_int(r, 1, 300);
            int K = kt_int(r, 1, 200);
            int acc = it & 1, e, same = 1;
            hlx_dtype_t t = it & 2 ? HLX_DTYPE_F32 : HLX_DTYPE_BF16;
            float *x = malloc(sizeof(float) * M * K), *y1 = malloc(sizeof(float) * M * N);
            float *y2 = malloc(sizeof(float) * M * N);
            void *w = malloc(kt_esize(t) * (size_t)K * N);
            kt_fill(r, x, HLX_DTYPE_F32, (size_t)M * K, 1.0);
            kt_fill(r, w, t, (size_t)K * N, 1.0);
            kt_fill(r, y1, HLX_DTYPE_F32, (size_t)M * N, 1.0);
            memcpy(y2, y1, sizeof(float) * M * N);
            var->gemm(M, N, K, x, w, t, y1, acc);
            hlx_pool_gemm(kt_pool, var, M, N, K, x, w, t, y2, acc);
            /* bit for bit where a hand kernel computes every column; OpenBLAS: within the
             * gemm tolerance */
            for (e = 0; e < M * N; e++)
                same &= kt_gemm_by_hand(var, t, M)
                            ? memcmp(&y1[e], &y2[e], sizeof(float)) == 0
                            : fabs((double)y1[e] - y2[e]) <= 1e-6 * K + 1e-6;
            kt_report(var->name, "pool gemm", same, "%d threads %dx%dx%d %s acc %d differs from "
                      "one thread", T, M, N, K, hlx_dtype_name(t), acc);
            if (kt_s16_by_hand(var)) { /* W in strips: the ranges start on whole strips */
                void *ws = malloc(hlx_kernels_w_s16_bytes(t, K, N));
                hlx_kernels_w_s16_pack(t, K, N, w, ws);
                memcpy(y2, y1, sizeof(float) * M * N);
                var->gemm(M, N, K, x, ws, hlx_w_s16_of(t), y1, acc);
                hlx_pool_gemm(kt_pool, var, M, N, K, x, ws, hlx_w_s16_of(t), y2, acc);
                kt_report(var->name, "pool gemm strips",
                          memcmp(y1, y2, sizeof(float) * M * N) == 0,
                          "%d threads %dx%dx%d %s differs from one thread", T, M, N, K,
                          hlx_dtype_name(t));
                free(ws);
            }
            free(x); free(y1); free(y2); free(w);
        }
        hlx_pool_destroy(kt_pool);
        kt_pool = NULL;
    }
}

/* --bench: best of a few runs of each kernel, ns per call and speed-up over the reference */
static double kt_time_attn(const hlx_kernels_t *k, const hlx_attn_desc_t *d, int reps)
{
    double best = 1e30;
    int i;
    for (i = 0; i < reps; i++) {
        uint64_t t0 = hlx_now_ns();
        k->attn(d);
        best = fmin(best, (double)(hlx_now_ns() - t0));
    }
    return best;
}

#ifdef HLX_HAVE_X86_VARIANTS
/* internal to kernels/avx512.c: the hand-written f32-weight GEMV, to compare with BLAS */
void hlx_kernels_gemm_f32_hand_avx512(int M, int N, int K, const float *x, const float *w,
                                      float *y, int accumulate);
#endif

/* GEMV y[N] = x[K] W[K][N], K = N = 8192 (256 MiB f32 weights, beyond the caches):
 * OpenBLAS sgemv and sgemm against the hand-written kernels. */
static void kt_bench_gemv(const hlx_kernels_t *vars, size_t nv)
{
    enum { N = 8192, K = 8192 };
    float *x = malloc(sizeof(float) * K), *y = malloc(sizeof(float) * N);
    float *w = malloc(sizeof(float) * (size_t)K * N);
    uint16_t *wb = malloc(sizeof(uint16_t) * (size_t)K * N);
    kt_rng_t r = { 9 };
    size_t v;
    int i;

    kt_fill(&r, x, HLX_DTYPE_F32, K, 1.0);
    kt_fill(&r, w, HLX_DTYPE_F32, (size_t)K * N, 1.0);
    for (i = 0; i < K * N; i++)
        wb[i] = hlx_f32_to_bf16(w[i]);
#define KT_TIME(label, bytes, call) \
    do { \
        double best = 1e30; \
        int rep; \
        for (rep = 0; rep < 5; rep++) { \
            uint64_t t0 = hlx_now_ns(); \
            call; \
            best = fmin(best, (double)(hlx_now_ns() - t0)); \
        } \
        printf("%-26s %12.0f ns %8.2f GB/s\n", label, best, (double)(bytes) / best); \
    } while (0)
    printf("\ngemv %dx%d (one thread)\n", K, N);
    KT_TIME("f32 OpenBLAS sgemv", 4.0 * K * N,
            cblas_sgemv(CblasRowMajor, CblasTrans, K, N, 1.0f, w, N, x, 1, 0.0f, y, 1));
    KT_TIME("f32 OpenBLAS sgemm M=1", 4.0 * K * N,
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, N, K, 1.0f, x, K, w, N,
                        0.0f, y, N));
#ifdef HLX_HAVE_X86_VARIANTS
    for (v = 0; v < nv; v++)
        if (!strcmp(vars[v].name, "avx512"))
            KT_TIME("f32 hand-written avx512", 4.0 * K * N,
                    hlx_kernels_gemm_f32_hand_avx512(1, N, K, x, w, y, 0));
#endif
    for (v = 0; v < nv; v++) {
        char label[64];
        snprintf(label, sizeof(label), "bf16 hand-written %s", vars[v].name);
        KT_TIME(label, 2.0 * K * N, vars[v].gemm(1, N, K, x, wb, HLX_DTYPE_BF16, y, 0));
    }
#undef KT_TIME
    free(x); free(y); free(w); free(wb);
}

static void kt_bench(const hlx_kernels_t *ref, const hlx_kernels_t *vars, size_t nv)
{
    static const struct { const char *name; int group, dk, dv; size_t len; hlx_dtype_t t; } cases[] = {
        { "gqa8 bf16 2K (L2)", 8, 128, 128, 2048, HLX_DTYPE_BF16 },
        { "gqa8 bf16 64K", 8, 128, 128, 65536, HLX_DTYPE_BF16 },
        { "gqa8 f32 64K", 8, 128, 128, 65536, HLX_DTYPE_F32 },
        { "mla128 bf16 4K", 128, 576, 512, 4096, HLX_DTYPE_BF16 },
    };
    kt_rng_t r = { 7 };
    size_t c, v;

    printf("%-18s %-8s %12s %10s %9s\n", "kernel", "variant", "ns/call", "GB/s", "speedup");
    for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        kt_attn_t a;
        double bytes, tref;
        kt_attn_make(&r, &a, cases[c].group, cases[c].dk, cases[c].dv, cases[c].len,
                     cases[c].t, 0, 1.0);
        bytes = (double)cases[c].len * (cases[c].dk + cases[c].dv) * kt_esize(cases[c].t);
        tref = kt_time_attn(ref, &a.d, 1);
        kt_time_attn(ref, &a.d, 1);
        printf("%-18s %-8s %12.0f %10.2f %9.2f\n", cases[c].name, ref->name, tref, bytes / tref, 1.0);
        for (v = 0; v < nv; v++) {
            /* each variant on a copy in its own KV layout */
            hlx_attn_desc_t dl = a.d;
            void *kl = kt_kv_relayout(a.d.k, cases[c].t, a.d.k_stride, (size_t)a.d.dk,
                                      cases[c].len, vars[v].kv_layout.k_block,
                                      vars[v].kv_layout.k_chunk);
            void *vl = kt_kv_relayout(a.d.v, cases[c].t, a.d.v_stride, (size_t)a.d.dv,
                                      cases[c].len, vars[v].kv_layout.v_block,
                                      vars[v].kv_layout.v_chunk);
            double tv;
            dl.k = kl;
            dl.v = vl;
            tv = kt_time_attn(&vars[v], &dl, cases[c].len < 8192 ? 50 : 5);
            free(kl);
            free(vl);
            printf("%-18s %-8s %12.0f %10.2f %9.2f\n", cases[c].name, vars[v].name, tv,
                   bytes / tv, tref / tv);
        }
        kt_attn_free(&a);
    }
    kt_bench_gemv(vars, nv);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "seed", required_argument, NULL, 's' },
        { "variant", required_argument, NULL, 'v' },
        { "bench", no_argument, NULL, 'b' },
        { "quick", no_argument, NULL, 'q' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    const char *names[8], *only = NULL;
    hlx_kernels_t ref, vars[8];
    uint64_t seed = 20261130ull;
    int bench = 0, quick = 0, c;
    size_t n, i, nv = 0;

    while ((c = getopt_long(argc, argv, "s:v:bqh", opts, NULL)) != -1) {
        switch (c) {
        case 's': seed = strtoull(optarg, NULL, 0); break;
        case 'v': only = optarg; break;
        case 'b': bench = 1; break;
        case 'q': quick = 1; break;
        case 'h':
            printf("usage: checkasm [--seed N] [--variant NAME] [--quick] [--bench]\n"
                   "  every supported kernel variant against the C reference on random\n"
                   "  shapes; --bench times attention per variant.\n");
            return 0;
        default:
            return 2;
        }
    }
    hlx_kernels_reference(&ref);
    n = hlx_kernels_list(names, 8);
    for (i = 0; i < n && i < 8; i++) {
        if (!strcmp(names[i], "scalar") || (only && strcmp(only, names[i])))
            continue;
        if (hlx_kernels_init(names[i], &vars[nv]) != HLX_OK) {
            fprintf(stderr, "variant %s listed but not initialized\n", names[i]);
            return 1;
        }
        nv++;
    }
    if (nv == 0) {
        printf("checkasm: no vectorized variant on this CPU/build, nothing to compare\n");
        return 77;
    }
    if (bench) {
        kt_bench(&ref, vars, nv);
        return 0;
    }
    for (i = 0; i < nv; i++) {
        kt_rng_t r = { seed };
        int before = kt_fails;
        kt_check_attn(&vars[i], &r, quick);
        kt_check_fp8_all(&vars[i]);
        kt_check_fp8_types(&vars[i], &r);
        kt_check_merge(&ref, &vars[i], &r);
        kt_check_elem(&ref, &vars[i], &r);
        kt_check_argmax(&ref, &vars[i], &r);
        kt_check_gemm(&ref, &vars[i], &r);
        kt_check_wqs(&ref, &vars[i], &r);
        kt_check_pool(&vars[i], &r, quick);
        printf("%-8s %s\n", vars[i].name, kt_fails == before ? "ok" : "FAILED");
    }
    printf("checkasm: %d checks, %d failures (seed %llu)\n", kt_checks, kt_fails,
           (unsigned long long)seed);
    return kt_fails ? 1 : 0;
}
