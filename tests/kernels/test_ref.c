/* The C reference kernels against naive fp64 oracles on random shapes, and the merge
 * property: attention over a sequence equals the merge of attention over any split of it
 * (empty and one-token parts included). Exit 0 on success, 1 on the first failure. */
#include "kt_common.h"

static int kt_fail;

/* KT_EXPECT, then leave the check function at the first failure */
#define KT_CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            KT_EXPECT(0, __VA_ARGS__); \
            return; \
        } \
    } while (0)

static void kt_check_attn(const hlx_attn_desc_t *d, const char *what)
{
    double *o64 = malloc(sizeof(double) * (size_t)(d->dv ? d->dv : 1));
    int g, e;

    for (g = 0; g < d->group && !kt_fail; g++) {
        double lse64, err = 0.0;
        double omax = kt_attn_f64(d, g, o64, &lse64);
        for (e = 0; e < d->dv; e++)
            err = fmax(err, fabs(o64[e] - d->o[(size_t)g * d->dv + e]));
        if (d->len == 0) {
            if (!(isinf(d->lse[g]) && d->lse[g] < 0) || err != 0.0) {
                fprintf(stderr, "FAIL %s: empty shard must give o = 0, lse = -inf (got %g)\n",
                        what, (double)d->lse[g]);
                kt_fail++;
            }
            continue;
        }
        if (!(err <= kt_tol_o(d->len, d->dk) * fmax(omax, 1e-30)) ||
            !(fabs(lse64 - d->lse[g]) <= kt_tol_lse(d->len, lse64))) {
            fprintf(stderr,
                    "FAIL %s: group %d dk %d dv %d len %zu dtype %s head %d: o err %.3g "
                    "(scale %.3g, tol %.3g) lse %.9g vs %.9g\n",
                    what, d->group, d->dk, d->dv, d->len, hlx_dtype_name(d->kv_dtype), g, err,
                    omax, kt_tol_o(d->len, d->dk) * omax, (double)d->lse[g], lse64);
            kt_fail++;
        }
    }
    free(o64);
}

static void kt_test_attn_random(const hlx_kernels_t *k, kt_rng_t *r)
{
    static const hlx_dtype_t types[] = { HLX_DTYPE_F32, HLX_DTYPE_BF16, HLX_DTYPE_FP8 };
    int it;

    for (it = 0; it < 300 && !kt_fail; it++) {
        int group = kt_int(r, 1, 9), dk = kt_int(r, 1, 80), dv = kt_int(r, 1, 80);
        size_t len = it < 6 ? (size_t)(it % 3) : (size_t)kt_int(r, 0, 700);
        hlx_dtype_t t = types[it % 3];
        /* Query amplitude sets the score spread: up to about +-30, so the running max
         * changes and exp would overflow without it. */
        double qamp = kt_unif(r, 0.1, 12.0);
        kt_attn_t a;

        kt_attn_make(r, &a, group, dk, dv, len, t, 1, qamp);
        if (it % 4 == 1) /* Gemma 2's soft-capping, at and below the scores' spread */
            a.d.softcap = (float)kt_unif(r, 0.3, 30.0);
        k->attn(&a.d);
        kt_check_attn(&a.d, a.d.softcap > 0 ? "ref attn soft-capped vs fp64" : "ref attn vs fp64");
        kt_attn_free(&a);
    }
    /* the cap changes the result where the scores reach it (the fp64 side would agree with
     * a reference that ignored it otherwise only by accident) */
    {
        kt_attn_t a;
        float o0;
        kt_attn_make(r, &a, 1, 64, 64, 200, HLX_DTYPE_F32, 0, 10.0);
        k->attn(&a.d);
        o0 = a.o[0];
        a.d.softcap = 1.0f;
        k->attn(&a.d);
        kt_check_attn(&a.d, "ref attn soft-capped at 1");
        if (!(fabsf(a.o[0] - o0) > 1e-3f * (fabsf(o0) + 1e-3f))) {
            fprintf(stderr, "FAIL ref attn: a cap of 1 left o[0] at %g\n", (double)o0);
            kt_fail++;
        }
        kt_attn_free(&a);
    }
    /* The production shapes: GQA head 128 group 8, MLA absorbed 576/512 (shorter group). */
    {
        kt_attn_t a;
        kt_attn_make(r, &a, 8, 128, 128, 2000, HLX_DTYPE_BF16, 0, 2.0);
        k->attn(&a.d);
        kt_check_attn(&a.d, "ref attn GQA");
        kt_attn_free(&a);
        kt_attn_make(r, &a, 4, 576, 512, 600, HLX_DTYPE_BF16, 0, 2.0);
        k->attn(&a.d);
        kt_check_attn(&a.d, "ref attn MLA");
        kt_attn_free(&a);
    }
}

/* Monotone increasing scores: every token raises the running max (worst case for the
 * online rescale). */
static void kt_test_attn_rising(const hlx_kernels_t *k)
{
    enum { LEN = 64, D = 4 };
    float q[D] = { 1, 0, 0, 0 }, kk[LEN * D], vv[LEN * D], o[D], lse;
    hlx_attn_desc_t d = { .group = 1, .dk = D, .dv = D, .len = LEN, .kv_dtype = HLX_DTYPE_F32,
                          .q = q, .k = kk, .v = vv, .k_stride = D, .v_stride = D,
                          .scale = 1.0f, .o = o, .lse = &lse };
    int j, e;

    for (j = 0; j < LEN; j++)
        for (e = 0; e < D; e++) {
            kk[j * D + e] = e == 0 ? (float)j * 0.75f : 0.0f;
            vv[j * D + e] = (float)(j % 7) - 3.0f + (float)e;
        }
    k->attn(&d);
    kt_check_attn(&d, "ref attn rising scores");
}

static void kt_merge_f64(int nparts, int nheads, int dv, const float *op, const float *lp,
                         double *o, double *lse)
{
    int h, p, e;
    for (h = 0; h < nheads; h++) {
        double m = -INFINITY, s = 0.0;
        for (p = 0; p < nparts; p++)
            m = fmax(m, lp[p * nheads + h]);
        for (e = 0; e < dv; e++)
            o[h * dv + e] = 0.0;
        if (m == -INFINITY) {
            lse[h] = -INFINITY;
            continue;
        }
        for (p = 0; p < nparts; p++) {
            double w = exp(lp[p * nheads + h] - m);
            s += w;
            for (e = 0; e < dv; e++)
                o[h * dv + e] += w * op[((size_t)p * nheads + h) * dv + e];
        }
        for (e = 0; e < dv; e++)
            o[h * dv + e] /= s;
        lse[h] = m + log(s);
    }
}

/* Split [0, len) at random cut points (repeated cuts give empty parts, adjacent cuts
 * one-token parts), attend each part, merge, compare with attention over the whole. */
static void kt_test_merge_property(const hlx_kernels_t *k, kt_rng_t *r)
{
    int it;

    for (it = 0; it < 200 && !kt_fail; it++) {
        static const hlx_dtype_t types[] = { HLX_DTYPE_F32, HLX_DTYPE_BF16 };
        int group = kt_int(r, 1, 8), dk = kt_int(r, 1, 64), dv = kt_int(r, 1, 64);
        size_t len = (size_t)kt_int(r, 0, 400);
        int nparts = kt_int(r, 1, 9), p, h, e;
        size_t cuts[11], es;
        kt_attn_t a;
        float *op, *lp, *om, *lm;
        double *o64, *l64, err = 0.0, lerr = 0.0;

        kt_attn_make(r, &a, group, dk, dv, len, types[it & 1], 1, kt_unif(r, 0.5, 8.0));
        es = kt_esize(a.d.kv_dtype);
        cuts[0] = 0;
        cuts[nparts] = len;
        for (p = 1; p < nparts; p++) {
            switch (kt_int(r, 0, 3)) {
            case 0: cuts[p] = cuts[p - 1]; break;                                /* empty */
            case 1: cuts[p] = cuts[p - 1] + (cuts[p - 1] < len ? 1 : 0); break;  /* 1 token */
            default: cuts[p] = cuts[p - 1] + (size_t)kt_int(r, 0, (int)(len - cuts[p - 1]));
            }
        }
        op = malloc(sizeof(float) * (size_t)nparts * group * dv);
        lp = malloc(sizeof(float) * (size_t)nparts * group);
        om = malloc(sizeof(float) * (size_t)group * dv);
        lm = malloc(sizeof(float) * (size_t)group);
        o64 = malloc(sizeof(double) * (size_t)group * dv);
        l64 = malloc(sizeof(double) * (size_t)group);
        for (p = 0; p < nparts; p++) {
            hlx_attn_desc_t d = a.d;
            d.len = cuts[p + 1] - cuts[p];
            d.k = (const char *)a.k + cuts[p] * a.d.k_stride * es;
            d.v = (const char *)a.v + cuts[p] * a.d.v_stride * es;
            d.o = op + (size_t)p * group * dv;
            d.lse = lp + (size_t)p * group;
            k->attn(&d);
        }
        k->merge(nparts, group, dv, op, lp, om, lm);
        /* The merge itself against fp64 on the same partials. */
        kt_merge_f64(nparts, group, dv, op, lp, o64, l64);
        for (h = 0; h < group; h++) {
            double hm = 1e-30, he = 0.0;
            /* error scale: the largest partial value entering the weighted sum */
            for (p = 0; p < nparts; p++)
                for (e = 0; e < dv; e++)
                    hm = fmax(hm, fabs(op[((size_t)p * group + h) * dv + e]));
            for (e = 0; e < dv; e++)
                he = fmax(he, fabs(o64[h * dv + e] - om[h * dv + e]));
            err = fmax(err, he / hm);
            if (len == 0)
                KT_CHECK(isinf(lm[h]) && lm[h] < 0, "all-empty merge must give lse -inf");
            else
                lerr = fmax(lerr, fabs(l64[h] - lm[h]));
        }
        KT_CHECK(err < 1e-5 && lerr < 1e-6, "merge vs fp64: o err %.3g lse err %.3g", err, lerr);
        /* The property: merged partials equal the whole within the reference tolerance. */
        k->attn(&a.d);
        err = lerr = 0.0;
        for (h = 0; h < group; h++) {
            double l1, hm = kt_attn_f64(&a.d, h, o64, &l1), he = 0.0;
            for (e = 0; e < dv; e++)
                he = fmax(he, fabs(a.o[h * dv + e] - om[h * dv + e]));
            err = fmax(err, he / fmax(hm, 1e-30));
            if (len > 0)
                lerr = fmax(lerr, fabs(a.lse[h] - lm[h]) / fmax(1.0, fabs(a.lse[h])));
            else
                KT_CHECK(om[h * dv] == 0.0f && isinf(lm[h]), "empty whole: o 0, lse -inf");
        }
        KT_CHECK(err <= 2 * kt_tol_o(len, dk) && lerr <= 1e-5,
                 "merge property, len %zu parts %d: o rel err %.3g lse err %.3g", len, nparts,
                 err, lerr);
        free(op); free(lp); free(om); free(lm); free(o64); free(l64);
        kt_attn_free(&a);
    }
}

static void kt_test_elementwise(const hlx_kernels_t *k, kt_rng_t *r)
{
    int it, i;

    for (it = 0; it < 50 && !kt_fail; it++) {
        int n = kt_int(r, 1, 3000);
        float *x = malloc(sizeof(float) * n), *w = malloc(sizeof(float) * n);
        float *y = malloc(sizeof(float) * n), *u = malloc(sizeof(float) * n);
        double ss = 0.0, err = 0.0;
        float eps = 1e-5f;

        kt_fill(r, x, HLX_DTYPE_F32, n, kt_unif(r, 0.01, 100.0));
        kt_fill(r, w, HLX_DTYPE_F32, n, 2.0);
        kt_fill(r, u, HLX_DTYPE_F32, n, 2.0);
        for (i = 0; i < n; i++)
            ss += (double)x[i] * x[i];
        k->rmsnorm(y, x, w, n, eps);
        for (i = 0; i < n; i++) {
            double ref = x[i] / sqrt(ss / n + eps) * w[i];
            err = fmax(err, fabs(ref - y[i]) / (fabs(ref) + 1e-30));
        }
        KT_CHECK(err < 1e-6, "rmsnorm n %d rel err %.3g", n, err);
        kt_fill(r, x, HLX_DTYPE_F32, n, 20.0);
        k->swiglu(y, x, u, n);
        err = 0.0;
        for (i = 0; i < n; i++) {
            double ref = x[i] / (1.0 + exp(-(double)x[i])) * u[i];
            err = fmax(err, fabs(ref - y[i]) / (fabs(ref) + 1e-30));
        }
        KT_CHECK(err < 1e-5, "swiglu rel err %.3g", err);
        /* GeGLU against the formula in double (relative to each gate x up: far below 0 the
         * result is a difference near 1 - 1, as in every f32 GELU), and four values of it
         * worked out apart */
        k->geglu(y, x, u, n);
        err = 0.0;
        for (i = 0; i < n; i++) {
            double g = x[i], ref = 0.5 * g * (1.0 + tanh(0.7978845608028654 *
                                                         (g + 0.044715 * g * g * g))) * u[i];
            err = fmax(err, fabs(ref - y[i]) / (fabs(g * u[i]) + 1e-30));
        }
        KT_CHECK(err < 1e-6, "geglu err %.3g of gate x up", err);
        {
            static const float g[4] = { 1.0f, -1.0f, 3.0f, 0.0f }, one[4] = { 1, 1, 1, 1 };
            static const double want[4] = { 0.8411919906, -0.1588080094, 2.9963626079, 0.0 };
            float o[4];
            k->geglu(o, g, one, 4);
            for (i = 0; i < 4; i++)
                KT_CHECK(fabs(o[i] - want[i]) < 2e-6, "gelu_tanh(%g) = %.9g, not %.9g",
                         g[i], o[i], want[i]);
        }
        free(x); free(w); free(y); free(u);
    }
    for (it = 0; it < 30 && !kt_fail; it++) {
        int nh = kt_int(r, 1, 4), hd = 2 * kt_int(r, 1, 40), rot = 2 * kt_int(r, 0, hd / 2);
        int64_t pos = (int64_t)kt_int(r, 0, 1 << 20);
        double theta = it & 1 ? 10000.0 : 500000.0, inv[64];
        /* a factor on cos and sin (yarn's) on every third call */
        hlx_rope_tab_t rt = { inv, it % 3 == 2 ? 1.37f : 1.0f, NULL, 0 };
        float *x = malloc(sizeof(float) * nh * hd), *x0 = malloc(sizeof(float) * nh * hd);
        double err = 0.0;
        int h;

        for (i = 0; i < rot / 2; i++) /* any table: the scaled kinds only change its values */
            inv[i] = pow(theta, -(2.0 * i) / rot) * (it % 4 == 1 ? 0.125 : 1.0);
        kt_fill(r, x, HLX_DTYPE_F32, (size_t)nh * hd, 3.0);
        memcpy(x0, x, sizeof(float) * nh * hd);
        k->rope(x, nh, hd, rot, pos, &rt);
        for (h = 0; h < nh; h++)
            for (i = 0; i < hd; i++) {
                double ref = x0[h * hd + i];
                if (i < rot) {
                    int pr = i / 2;
                    double ang = (double)pos * pow(theta, -(2.0 * pr) / rot) *
                                 (it % 4 == 1 ? 0.125 : 1.0);
                    double a = x0[h * hd + 2 * pr], b = x0[h * hd + 2 * pr + 1];
                    ref = i % 2 == 0 ? a * cos(ang) - b * sin(ang) : a * sin(ang) + b * cos(ang);
                    ref *= rt.mscale;
                }
                err = fmax(err, fabs(ref - x[h * hd + i]));
            }
        KT_CHECK(err < 1e-5, "rope pos %lld rot %d abs err %.3g", (long long)pos, rot, err);
        /* the step's cos/sin table (hlx_rope_fill_cs): the same bits at its position; a
         * table for another position (here: all zeros, pos + 1) is not used */
        {
            float *x1 = malloc(sizeof(float) * nh * hd), cs[64 * 2];
            hlx_rope_tab_t rc = rt;
            memcpy(x1, x0, sizeof(float) * nh * hd);
            hlx_rope_fill_cs(inv, rt.mscale, rot, pos, cs);
            rc.cs = cs, rc.cs_pos = pos;
            k->rope(x1, nh, hd, rot, pos, &rc);
            KT_CHECK(memcmp(x1, x, sizeof(float) * nh * hd) == 0,
                     "rope with the position's cos/sin table differs (pos %lld rot %d)",
                     (long long)pos, rot);
            memset(cs, 0, sizeof(cs));
            rc.cs_pos = pos + 1;
            memcpy(x1, x0, sizeof(float) * nh * hd);
            k->rope(x1, nh, hd, rot, pos, &rc);
            KT_CHECK(memcmp(x1, x, sizeof(float) * nh * hd) == 0,
                     "rope used a cos/sin table of another position (pos %lld)", (long long)pos);
            free(x1);
        }
        free(x); free(x0);
    }
    for (it = 0; it < 30 && !kt_fail; it++) {
        int M = kt_int(r, 1, 5), N = kt_int(r, 1, 300), K = kt_int(r, 1, 300), acc = it & 1;
        hlx_dtype_t t = it & 2 ? HLX_DTYPE_BF16 : HLX_DTYPE_F32;
        float *x = malloc(sizeof(float) * M * K), *y = malloc(sizeof(float) * M * N);
        float *y0 = malloc(sizeof(float) * M * N);
        void *w = malloc(kt_esize(t) * (size_t)K * N);
        double err = 0.0;
        int j, kk;

        kt_fill(r, x, HLX_DTYPE_F32, (size_t)M * K, 1.0);
        kt_fill(r, w, t, (size_t)K * N, 1.0);
        kt_fill(r, y, HLX_DTYPE_F32, (size_t)M * N, 1.0);
        memcpy(y0, y, sizeof(float) * M * N);
        k->gemm(M, N, K, x, w, t, y, acc);
        for (i = 0; i < M; i++)
            for (j = 0; j < N; j++) {
                double ref = acc ? y0[i * N + j] : 0.0;
                for (kk = 0; kk < K; kk++)
                    ref += (double)x[i * K + kk] * kt_load(w, t, (size_t)kk * N + j);
                err = fmax(err, fabs(ref - y[i * N + j]));
            }
        /* |x|,|w| <= 1: absolute error bound of an fp32 sum of K products */
        KT_CHECK(err < 1e-6 * K + 1e-6, "gemm %dx%dx%d %s acc %d abs err %.3g", M, N, K,
                 hlx_dtype_name(t), acc, err);
        free(x); free(y); free(y0); free(w);
    }
}

/* W[K][N] packed into strips in groups of columns (hlx_kernels_w_s16_pack_cols, as the
 * runtime fills a matrix while it reads it) against the index formula of hlx_w_s16_at and
 * against the whole-matrix pack, bit for bit, the padding zero; groups of 16, 32 and 48
 * columns from sources with longer rows; misplaced groups write nothing. */
static void kt_test_w_s16_pack(kt_rng_t *r)
{
    static const int shapes[][2] = { { 1, 1 }, { 3, 16 }, { 5, 37 }, { 17, 64 }, { 2, 100 } };
    size_t i;

    for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]) && !kt_fail; i++) {
        const int K = shapes[i][0], N = shapes[i][1], G = 16 * (int)(1 + i % 3), ld = G + 5;
        const hlx_dtype_t t = i % 2 ? HLX_DTYPE_BF16 : HLX_DTYPE_F32;
        const size_t es = t == HLX_DTYPE_F32 ? 4 : 2, sb = hlx_kernels_w_s16_bytes(t, K, N);
        char *w = malloc(es * (size_t)K * N), *src = malloc(es * (size_t)K * ld);
        char *whole = malloc(sb), *groups = malloc(sb);
        int n0, n1, k, n, ok = sb == es * (size_t)K * (size_t)((N + 15) / 16 * 16);

        kt_fill(r, w, t, (size_t)K * N, 1.0);
        memset(whole, 0x5a, sb);
        memset(groups, 0x5a, sb);
        hlx_kernels_w_s16_pack(t, K, N, w, whole);
        for (n0 = 0; n0 < N; n0 = n1) {
            n1 = N - n0 < G ? N : n0 + G;
            memset(src, 0x77, es * (size_t)K * ld); /* past n1: must not be read into W */
            for (k = 0; k < K; k++)
                memcpy(src + (size_t)k * ld * es, w + ((size_t)k * N + n0) * es,
                       (size_t)(n1 - n0) * es);
            hlx_kernels_w_s16_pack_cols(t, K, N, n0, n1, src, (size_t)ld, groups);
        }
        for (k = 0; k < K && ok; k++)
            for (n = 0; n < (N + 15) / 16 * 16 && ok; n++) {
                const char *at = groups + hlx_w_s16_at(K, k, n) * es;
                ok = n < N ? !memcmp(at, w + ((size_t)k * N + n) * es, es)
                           : (es == 4 ? *(const float *)at == 0.0f : *(const uint16_t *)at == 0);
            }
        KT_EXPECT(ok && !memcmp(whole, groups, sb), "w_s16 pack %dx%d %s in groups of %d",
                  K, N, hlx_dtype_name(t), G);
        /* a group that does not start on a strip, or ends inside one short of N */
        memcpy(whole, groups, sb);
        if (N > 16) {
            hlx_kernels_w_s16_pack_cols(t, K, N, 8, N, src, (size_t)ld, groups);
            hlx_kernels_w_s16_pack_cols(t, K, N, 0, 8, src, (size_t)ld, groups);
        }
        KT_EXPECT(!memcmp(whole, groups, sb), "w_s16 pack %dx%d: a misplaced group wrote", K, N);
        free(w); free(src); free(whole); free(groups);
    }
}

int main(int argc, char **argv)
{
    hlx_kernels_t k;
    kt_rng_t r = { argc > 1 ? strtoull(argv[1], NULL, 0) : 20261130ull };

    hlx_kernels_reference(&k);
    kt_test_attn_random(&k, &r);
    kt_test_attn_rising(&k);
    kt_test_merge_property(&k, &r);
    kt_test_elementwise(&k, &r);
    kt_test_w_s16_pack(&r);
    if (kt_fail) {
        fprintf(stderr, "%d failure(s)\n", kt_fail);
        return 1;
    }
    printf("reference kernels: all checks passed\n");
    return 0;
}
