/* gpu: the CUDA execution backend op by op against the host backend (scalar kernels, the
 * same KV rows) on the same inputs: exact for data movement (pack, unpack, pad, append,
 * argmax, copies), within fp32 rounding for arithmetic. Exit 77 without a CUDA device. */
#include "hlx_backend.h"
#include "hlx_backend_cuda.h"
#include "hlx_kernels_cuda.h"
#include "hlx_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails;

#define CHECK(_c, ...) HLX_CHECK(fails, _c, __VA_ARGS__)

static hlx_backend_t hb, cb;
static hlx_be_queue_t *cq;

static float frand(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return ((float)((*s >> 8) & 0xffff) / 32768.0f) - 1.0f;
}

/* device (managed) copy of n host floats */
static float *dev_of(const float *h, size_t n)
{
    void *p = NULL;

    if (cb.ops->mem_alloc(&cb, n * sizeof(float), 0, &p) != HLX_OK)
        return NULL;
    if (cb.ops->copy_to(&cb, cq, p, h, n * sizeof(float)) != HLX_OK ||
        cb.ops->queue_sync(&cb, cq) != HLX_OK)
        return NULL;
    return p;
}

/* max |a - b| / max(1, max |b|) after fetching a from the device */
static double rel_err(const float *dev, const float *ref, size_t n)
{
    float *h = malloc(n * sizeof(float));
    double e = 0, m = 1;
    size_t i;

    if (h == NULL || cb.ops->copy_from(&cb, cq, h, dev, n * sizeof(float)) != HLX_OK) {
        free(h);
        return INFINITY;
    }
    for (i = 0; i < n; i++) {
        double d = fabs((double)h[i] - ref[i]);
        if (isnan(h[i]) != isnan(ref[i]) || (isinf(ref[i]) && h[i] != ref[i]))
            d = INFINITY;
        else if (isinf(ref[i]))
            d = 0;
        e = d > e ? d : e;
        m = fabs(ref[i]) > m && isfinite(ref[i]) ? fabs(ref[i]) : m;
    }
    free(h);
    return e / m;
}

static void test_norm_rope_swiglu_add_pad(void)
{
    enum { R = 3, N = 200, NH = 4, HD = 16 };
    unsigned s = 7;
    float x[R * N], w[N], y[R * N], gu[R * 2 * N], act[R * N], pad[R * 256];
    float *dx, *dw, *dy, *dgu, *dact, *dpad;
    int i;

    for (i = 0; i < R * N; i++)
        x[i] = frand(&s) * 3;
    for (i = 0; i < N; i++)
        w[i] = frand(&s);
    for (i = 0; i < R * 2 * N; i++)
        gu[i] = frand(&s) * 4;
    dx = dev_of(x, R * N), dw = dev_of(w, N), dy = dev_of(x, R * N), dgu = dev_of(gu, R * 2 * N);
    dact = dev_of(x, R * N), dpad = dev_of(pad, R * 256);
    CHECK(dx && dw && dy && dgu && dact && dpad, "allocation");
    if (!dx || !dw || !dy || !dgu || !dact || !dpad)
        return;
    hb.ops->rmsnorm(&hb, NULL, y, x, w, R, N, 1e-5f);
    CHECK(cb.ops->rmsnorm(&cb, cq, dy, dx, dw, R, N, 1e-5f) == HLX_OK, "rmsnorm");
    CHECK(rel_err(dy, y, R * N) < 1e-5, "rmsnorm differs: %g", rel_err(dy, y, R * N));
    /* RoPE on rows of NH heads, ld N (the QKV rows' stride) */
    memcpy(y, x, sizeof(x));
    {
        /* the frequencies in the backend's memory (managed: written from the host) */
        double inv[HD / 2], *dinv = NULL;
        hlx_rope_tab_t ht = { inv, 1.25f, NULL, 0 }, dt;
        hlx_rope_plain_freqs(10000.0, HD, inv);
        CHECK(cb.ops->mem_alloc(&cb, sizeof(inv), 0, (void **)&dinv) == HLX_OK, "rope table");
        if (dinv != NULL) {
            memcpy(dinv, inv, sizeof(inv));
            dt.inv_freq = dinv;
            dt.mscale = ht.mscale;
            hb.ops->rope(&hb, NULL, y, R, N, NH, HD, HD, 1000003, &ht);
            CHECK(cb.ops->rope(&cb, cq, dx, R, N, NH, HD, HD, 1000003, &dt) == HLX_OK, "rope");
            CHECK(cb.ops->queue_sync(&cb, cq) == HLX_OK, "sync");
            cb.ops->mem_free(&cb, dinv, 0);
        }
    }
    CHECK(rel_err(dx, y, R * N) < 1e-5, "rope differs: %g", rel_err(dx, y, R * N));
    /* GeGLU, gpt-oss's clamped SwiGLU (a limit inside the values' range, so both clamps
     * act), then SwiGLU (whose act the add below uses) */
    hb.ops->glu(&hb, NULL, act, gu, R, N, HLX_ACT_GELU_TANH, 0.0f, 0.0f);
    CHECK(cb.ops->glu(&cb, cq, dact, dgu, R, N, HLX_ACT_GELU_TANH, 0.0f, 0.0f) == HLX_OK,
          "geglu");
    CHECK(rel_err(dact, act, R * N) < 1e-5, "geglu differs: %g", rel_err(dact, act, R * N));
    hb.ops->glu(&hb, NULL, act, gu, R, N, HLX_ACT_SWIGLU_CLAMP, 1.702f, 0.5f);
    CHECK(cb.ops->glu(&cb, cq, dact, dgu, R, N, HLX_ACT_SWIGLU_CLAMP, 1.702f, 0.5f) == HLX_OK,
          "swiglu_clamp");
    CHECK(rel_err(dact, act, R * N) < 1e-5, "swiglu_clamp differs: %g",
          rel_err(dact, act, R * N));
    hb.ops->glu(&hb, NULL, act, gu, R, N, HLX_ACT_SILU, 0.0f, 0.0f);
    CHECK(cb.ops->glu(&cb, cq, dact, dgu, R, N, HLX_ACT_SILU, 0.0f, 0.0f) == HLX_OK, "swiglu");
    CHECK(rel_err(dact, act, R * N) < 1e-5, "swiglu differs: %g", rel_err(dact, act, R * N));
    /* add: x + act, exact on the device's own operands (its RoPE and SwiGLU above differ
     * from the host's by rounding) */
    CHECK(cb.ops->copy_from(&cb, cq, y, dx, sizeof(y)) == HLX_OK &&
          cb.ops->copy_from(&cb, cq, act, dact, sizeof(act)) == HLX_OK, "fetch add operands");
    for (i = 0; i < R * N; i++)
        y[i] += act[i];
    CHECK(cb.ops->add(&cb, cq, dx, dact, R * N) == HLX_OK, "add");
    CHECK(rel_err(dx, y, R * N) == 0, "add differs");
    hb.ops->pad_rows(&hb, NULL, pad, 256, x, N, R, -INFINITY, 0.0f);
    cb.ops->copy_to(&cb, cq, dx, x, sizeof(x));
    CHECK(cb.ops->pad_rows(&cb, cq, dpad, 256, dx, N, R, -INFINITY, 0.0f) == HLX_OK, "pad");
    CHECK(rel_err(dpad, pad, R * 256) == 0, "pad_rows differs");
    /* the logits soft-capped (Gemma 2): tanhf on both sides, the device's within 1e-6 */
    hb.ops->pad_rows(&hb, NULL, pad, 256, x, N, R, -INFINITY, 0.5f);
    CHECK(cb.ops->pad_rows(&cb, cq, dpad, 256, dx, N, R, -INFINITY, 0.5f) == HLX_OK, "pad cap");
    CHECK(rel_err(dpad, pad, R * 256) < 1e-6, "pad_rows capped differs: %g",
          rel_err(dpad, pad, R * 256));
    /* strided rows (MLA's gathers and scatters): 37 columns from column 5 of x's rows into
     * rows 40 apart at column 3, the rest of the destination untouched */
    for (i = 0; i < R * 256; i++)
        pad[i] = (float)i;
    cb.ops->copy_to(&cb, cq, dpad, pad, sizeof(pad));
    hb.ops->copy_rows(&hb, NULL, pad + 3, 40, x + 5, N, R, 37);
    CHECK(cb.ops->copy_rows(&cb, cq, dpad + 3, 40, dx + 5, N, R, 37) == HLX_OK, "copy_rows");
    CHECK(cb.ops->queue_sync(&cb, cq) == HLX_OK, "sync");
    CHECK(rel_err(dpad, pad, R * 256) == 0, "copy_rows differs");
    CHECK(cb.ops->copy_rows(&cb, cq, dpad, 10, dx, N, R, 11) == HLX_ERR_INVALID,
          "copy_rows with ldd < n accepted");
    /* per-head norms over strided rows (Qwen3's q heads: 4 heads of 16 from column 8 of
     * rows N apart), in place, and a bias on every row */
    cb.ops->copy_to(&cb, cq, dx, x, sizeof(x));
    memcpy(y, x, sizeof(y));
    hb.ops->rmsnorm_heads(&hb, NULL, y + 8, R, N, 4, 16, w, 1e-6f);
    CHECK(cb.ops->rmsnorm_heads(&cb, cq, dx + 8, R, N, 4, 16, dw, 1e-6f) == HLX_OK,
          "rmsnorm_heads");
    CHECK(rel_err(dx, y, R * N) < 1e-5, "rmsnorm_heads differs: %g", rel_err(dx, y, R * N));
    /* a norm split over ranks (OLMo 2 under TPA > 1): sums of squares of 70 columns from
     * column 9 of each row, then that part normalised as of a 150-long vector whose other
     * part adds 2.5 to every row's sum */
    {
        float ss[R] = { 0 }, *dss = dev_of(ss, R);
        CHECK(dss != NULL, "allocation");
        if (dss != NULL) {
            CHECK(cb.ops->copy_to(&cb, cq, dx, x, sizeof(x)) == HLX_OK, "copy_to");
            memcpy(y, x, sizeof(y));
            hb.ops->sumsq_rows(&hb, NULL, y + 9, N, R, 70, ss);
            CHECK(cb.ops->sumsq_rows(&cb, cq, dx + 9, N, R, 70, dss) == HLX_OK, "sumsq_rows");
            CHECK(cb.ops->queue_sync(&cb, cq) == HLX_OK, "sync");
            CHECK(rel_err(dss, ss, R) < 1e-6, "sumsq_rows differs: %g", rel_err(dss, ss, R));
            for (i = 0; i < R; i++)
                ss[i] += 2.5f;
            CHECK(cb.ops->copy_to(&cb, cq, dss, ss, sizeof(ss)) == HLX_OK, "copy_to");
            hb.ops->rmsnorm_ss(&hb, NULL, y + 9, N, R, 70, w, ss, 150, 1e-6f);
            CHECK(cb.ops->rmsnorm_ss(&cb, cq, dx + 9, N, R, 70, dw, dss, 150, 1e-6f) == HLX_OK,
                  "rmsnorm_ss");
            CHECK(cb.ops->queue_sync(&cb, cq) == HLX_OK, "sync");
            CHECK(rel_err(dx, y, R * N) < 1e-6, "rmsnorm_ss differs (or touched other "
                  "columns): %g", rel_err(dx, y, R * N));
            CHECK(cb.ops->rmsnorm_ss(&cb, cq, dx, 10, R, 11, dw, dss, 150, 1e-6f) ==
                  HLX_ERR_INVALID, "rmsnorm_ss with ld < n accepted");
            cb.ops->mem_free(&cb, dss, 0);
        }
    }
    cb.ops->copy_to(&cb, cq, dx, x, sizeof(x));
    memcpy(y, x, sizeof(y));
    hb.ops->rmsnorm_heads(&hb, NULL, y + 8, R, N, 4, 16, w, 1e-6f);
    CHECK(cb.ops->rmsnorm_heads(&cb, cq, dx + 8, R, N, 4, 16, dw, 1e-6f) == HLX_OK,
          "rmsnorm_heads");
    CHECK(cb.ops->queue_sync(&cb, cq) == HLX_OK, "sync");
    CHECK(cb.ops->copy_to(&cb, cq, dx, y, sizeof(y)) == HLX_OK, "copy_to");
    cb.ops->queue_sync(&cb, cq); /* y changes on the host next */
    hb.ops->add_rows(&hb, NULL, y, N, w, R, N - 7);
    CHECK(cb.ops->add_rows(&cb, cq, dx, N, dw, R, N - 7) == HLX_OK, "add_rows");
    CHECK(rel_err(dx, y, R * N) == 0, "add_rows differs");
    /* StarCoder2's LayerNorm (rows whose mean is far from 0: x + 3; a bias of its own), then
     * the plain MLP's activation with its bias on 50 columns from column 6 of rows N apart,
     * gelu_tanh and silu, the other columns untouched */
    {
        float xb[R * N], bias[N], *dxb, *db;
        for (i = 0; i < R * N; i++)
            xb[i] = x[i] + 3.0f;
        for (i = 0; i < N; i++)
            bias[i] = w[(i + 5) % N] - 1.0f;
        dxb = dev_of(xb, R * N), db = dev_of(bias, N);
        CHECK(dxb != NULL && db != NULL, "allocation");
        if (dxb != NULL && db != NULL) {
            hb.ops->layernorm(&hb, NULL, y, xb, w, bias, R, N, 1e-5f);
            CHECK(cb.ops->layernorm(&cb, cq, dx, dxb, dw, db, R, N, 1e-5f) == HLX_OK,
                  "layernorm");
            CHECK(rel_err(dx, y, R * N) < 1e-5, "layernorm differs: %g", rel_err(dx, y, R * N));
            hb.ops->layernorm(&hb, NULL, y, xb, w, NULL, R, N, 1e-5f);
            CHECK(cb.ops->layernorm(&cb, cq, dx, dxb, dw, NULL, R, N, 1e-5f) == HLX_OK,
                  "layernorm without a bias");
            CHECK(rel_err(dx, y, R * N) < 1e-5, "layernorm without a bias differs: %g",
                  rel_err(dx, y, R * N));
            memcpy(y, xb, sizeof(y));
            hb.ops->bias_act(&hb, NULL, y + 6, N, bias, R, 50, HLX_ACT_GELU_TANH);
            CHECK(cb.ops->bias_act(&cb, cq, dxb + 6, N, db, R, 50, HLX_ACT_GELU_TANH) == HLX_OK,
                  "bias_act gelu_tanh");
            CHECK(rel_err(dxb, y, R * N) < 1e-5, "bias_act gelu_tanh differs: %g",
                  rel_err(dxb, y, R * N));
            hb.ops->bias_act(&hb, NULL, y + 6, N, bias, R, 50, HLX_ACT_SILU);
            CHECK(cb.ops->bias_act(&cb, cq, dxb + 6, N, db, R, 50, HLX_ACT_SILU) == HLX_OK,
                  "bias_act silu");
            CHECK(rel_err(dxb, y, R * N) < 1e-5, "bias_act silu differs: %g",
                  rel_err(dxb, y, R * N));
            CHECK(cb.ops->bias_act(&cb, cq, dxb, N, db, R, 50, HLX_ACT_SWIGLU_CLAMP) ==
                  HLX_ERR_INVALID, "bias_act with a gated activation accepted");
        }
        cb.ops->mem_free(&cb, dxb, 0), cb.ops->mem_free(&cb, db, 0);
    }
    cb.ops->mem_free(&cb, dx, 0), cb.ops->mem_free(&cb, dw, 0), cb.ops->mem_free(&cb, dy, 0);
    cb.ops->mem_free(&cb, dgu, 0), cb.ops->mem_free(&cb, dact, 0), cb.ops->mem_free(&cb, dpad, 0);
    {
        /* more (row, head) vectors than one launch takes (65535 blocks): 16400 rows x 4
         * heads of 16, rows 72 apart */
        enum { BR = 16400, BLD = 72 };
        float *h = malloc(sizeof(float) * BR * BLD), *dh;
        for (i = 0; i < BR * BLD; i++)
            h[i] = frand(&s) * 2;
        dh = dev_of(h, BR * BLD), dw = dev_of(w, N);
        if (h != NULL && dh != NULL && dw != NULL) {
            hb.ops->rmsnorm_heads(&hb, NULL, h + 4, BR, BLD, 4, 16, w, 1e-6f);
            CHECK(cb.ops->rmsnorm_heads(&cb, cq, dh + 4, BR, BLD, 4, 16, dw, 1e-6f) == HLX_OK,
                  "rmsnorm_heads, 65600 vectors");
            CHECK(rel_err(dh, h, BR * BLD) < 1e-5, "rmsnorm_heads over launches differs: %g",
                  rel_err(dh, h, BR * BLD));
        }
        cb.ops->mem_free(&cb, dh, 0), cb.ops->mem_free(&cb, dw, 0);
        free(h);
    }
}

/* Attention sinks (gpt-oss): every row of dv scaled by 1 / (1 + exp(sink - lse)), the sink
 * of row r sinks[r % cnt]; rows past one launch's blocks (70000), dv over one block's
 * threads (200), and an lse of -inf (no score: the sink takes it all, 0). */
static void test_attn_sink(void)
{
    enum { NR = 70000, CNT = 5, DV = 200, SR = 3 };
    float *o = malloc(sizeof(float) * (size_t)NR * SR), lse[NR], sinks[CNT];
    float *so = malloc(sizeof(float) * SR * DV), slse[SR];
    float *dout, *dl, *ds;
    unsigned s = 11;
    int i;

    CHECK(o != NULL && so != NULL, "allocation");
    if (o == NULL || so == NULL) {
        free(o), free(so);
        return;
    }
    for (i = 0; i < CNT; i++)
        sinks[i] = frand(&s) * 4;
    for (i = 0; i < NR; i++)
        lse[i] = frand(&s) * 6;
    lse[17] = -INFINITY;
    for (i = 0; i < NR * SR; i++)
        o[i] = frand(&s);
    /* many rows of SR elements */
    dout = dev_of(o, (size_t)NR * SR), dl = dev_of(lse, NR), ds = dev_of(sinks, CNT);
    CHECK(dout && dl && ds, "allocation");
    if (dout && dl && ds) {
        hb.ops->attn_sink(&hb, NULL, o, lse, sinks, NR, CNT, SR);
        CHECK(cb.ops->attn_sink(&cb, cq, dout, dl, ds, NR, CNT, SR) == HLX_OK, "attn_sink");
        CHECK(rel_err(dout, o, (size_t)NR * SR) < 1e-6, "attn_sink differs: %g",
              rel_err(dout, o, (size_t)NR * SR));
    }
    cb.ops->mem_free(&cb, dout, 0);
    /* a few rows of DV elements */
    for (i = 0; i < SR * DV; i++)
        so[i] = frand(&s);
    for (i = 0; i < SR; i++)
        slse[i] = frand(&s);
    dout = dev_of(so, SR * DV);
    if (dout != NULL && dl != NULL && ds != NULL) {
        cb.ops->copy_to(&cb, cq, dl, slse, sizeof(slse));
        hb.ops->attn_sink(&hb, NULL, so, slse, sinks, SR, CNT, DV);
        CHECK(cb.ops->attn_sink(&cb, cq, dout, dl, ds, SR, CNT, DV) == HLX_OK, "attn_sink dv");
        CHECK(rel_err(dout, so, SR * DV) < 1e-6, "attn_sink over dv %d differs: %g", DV,
              rel_err(dout, so, SR * DV));
    }
    cb.ops->mem_free(&cb, dout, 0), cb.ops->mem_free(&cb, dl, 0), cb.ops->mem_free(&cb, ds, 0);
    free(o), free(so);
}

/* MoE's rows: gather by index and the weighted scatter-add, against the host's (the
 * device rounds each product before the sum, as the host does without FMA contraction:
 * within 1e-6 either way). */
static void test_gather_scatter(void)
{
    enum { R = 9, N = 300, NB = 4 };
    const int hidx[NB] = { 7, 0, 3, 8 };
    const float hw[NB] = { 0.3f, -1.7f, 0.01f, 2.5f };
    unsigned s = 17;
    float *src = malloc(sizeof(float) * R * N), *y = malloc(sizeof(float) * R * N);
    float *g = malloc(sizeof(float) * NB * N), *dsrc, *dy, *dg, *dw;
    int *didx = NULL, i;

    for (i = 0; i < R * N; i++)
        src[i] = frand(&s) * 3, y[i] = frand(&s);
    dsrc = dev_of(src, R * N), dy = dev_of(y, R * N), dg = dev_of(y, NB * N);
    dw = dev_of(hw, NB);
    CHECK(cb.ops->mem_alloc(&cb, sizeof(hidx), 0, (void **)&didx) == HLX_OK, "idx alloc");
    if (didx == NULL || !dsrc || !dy || !dg || !dw)
        goto out;
    cb.ops->copy_to(&cb, cq, didx, hidx, sizeof(hidx));
    hb.ops->gather_rows(&hb, NULL, g, src, hidx, NB, N);
    CHECK(cb.ops->gather_rows(&cb, cq, dg, dsrc, didx, NB, N) == HLX_OK, "gather_rows");
    CHECK(cb.ops->queue_sync(&cb, cq) == HLX_OK, "sync");
    CHECK(rel_err(dg, g, NB * N) == 0, "gather_rows differs");
    hb.ops->scatter_add(&hb, NULL, y, g, hidx, hw, NB, N);
    CHECK(cb.ops->scatter_add(&cb, cq, dy, dg, didx, dw, NB, N) == HLX_OK, "scatter_add");
    CHECK(cb.ops->queue_sync(&cb, cq) == HLX_OK, "sync");
    CHECK(rel_err(dy, y, R * N) < 1e-6, "scatter_add differs: %g", rel_err(dy, y, R * N));
    hb.ops->scatter_add(&hb, NULL, y, g, NULL, hw, NB, N);
    CHECK(cb.ops->scatter_add(&cb, cq, dy, dg, NULL, dw, NB, N) == HLX_OK, "scatter_add rows");
    CHECK(cb.ops->queue_sync(&cb, cq) == HLX_OK, "sync");
    CHECK(rel_err(dy, y, R * N) < 1e-6, "scatter_add (no index) differs: %g",
          rel_err(dy, y, R * N));
out:
    if (didx != NULL)
        cb.ops->mem_free(&cb, didx, 0);
    cb.ops->mem_free(&cb, dsrc, 0), cb.ops->mem_free(&cb, dy, 0);
    cb.ops->mem_free(&cb, dg, 0), cb.ops->mem_free(&cb, dw, 0);
    free(src), free(y), free(g);
}

/* MLA's append: one latent row per token, no value rows (dv 0, vc NULL), as the host's (fp8:
 * the host's nearest e4m3 byte against the device's __NV_SATFINITE conversion). */
static void test_append_latent(hlx_dtype_t kt)
{
    enum { DK = 96, SH = 3, CAP = 20 };
    const hlx_kv_layout_t rows = { 1, 1, 1, 1 };
    size_t es = (size_t)hlx_dtype_bytes(kt), n = SH * hlx_kv_shard_elems(rows, 1, DK, CAP);
    unsigned char *kc = calloc(n, es), *back = malloc(n * es);
    float kn[DK], *dkn;
    void *dkc = NULL;
    unsigned s = 5;
    int e;

    for (e = 0; e < DK; e++)
        kn[e] = frand(&s);
    dkn = dev_of(kn, DK);
    CHECK(kc && back && dkn && cb.ops->mem_alloc(&cb, n * es, 1, &dkc) == HLX_OK, "alloc");
    if (dkc != NULL && kc && back && dkn) {
        hlx_kv_append_desc_t a = { .kc = kc, .vc = NULL, .kv_dtype = kt, .layout = rows,
                                   .dk = DK, .dv = 0, .cap = CAP, .shard0 = 1, .t = 7,
                                   .nheads = 1, .k_new = kn, .v_new = NULL };
        hlx_kv_append_desc_t da = a;
        cb.ops->copy_to(&cb, cq, dkc, kc, n * es);
        da.kc = dkc, da.k_new = dkn;
        CHECK(hb.ops->kv_append(&hb, NULL, &a) == HLX_OK, "host latent append");
        CHECK(cb.ops->kv_append(&cb, cq, &da) == HLX_OK, "latent append (dv 0)");
        CHECK(cb.ops->copy_from(&cb, cq, back, dkc, n * es) == HLX_OK, "copy_from");
        CHECK(!memcmp(back, kc, n * es), "latent append differs (%s)", hlx_dtype_name(kt));
    }
    if (dkc != NULL)
        cb.ops->mem_free(&cb, dkc, 1);
    if (dkn != NULL)
        cb.ops->mem_free(&cb, dkn, 0);
    free(kc), free(back);
}

static void test_gemm(hlx_dtype_t wt)
{
    enum { M = 5, N = 300, K = 700 };
    unsigned s = 11;
    float *x = malloc(sizeof(float) * M * K), *y = malloc(sizeof(float) * M * N), *dx, *dy;
    size_t es = (size_t)hlx_dtype_bytes(wt);
    void *w = calloc((size_t)K * N, es), *dw = NULL;
    int i;

    for (i = 0; i < M * K; i++)
        x[i] = frand(&s);
    for (i = 0; i < K * N; i++)
        hlx_dtype_store(w, wt, (size_t)i, frand(&s) * 0.1f);
    for (i = 0; i < M * N; i++)
        y[i] = 0.5f;
    dx = dev_of(x, M * K), dy = dev_of(y, M * N);
    CHECK(cb.ops->mem_alloc(&cb, (size_t)K * N * es, 0, &dw) == HLX_OK, "alloc w");
    cb.ops->copy_to(&cb, cq, dw, w, (size_t)K * N * es);
    hb.ops->gemm(&hb, NULL, M, N, K, x, w, wt, y, 1); /* accumulate onto 0.5 */
    CHECK(cb.ops->gemm(&cb, cq, M, N, K, dx, dw, wt, dy, 1) == HLX_OK, "gemm %s",
          hlx_dtype_name(wt));
    CHECK(rel_err(dy, y, M * N) < 1e-4, "gemm %s accumulate differs: %g", hlx_dtype_name(wt),
          rel_err(dy, y, M * N));
    hb.ops->gemm(&hb, NULL, M, N, K, x, w, wt, y, 0);
    CHECK(cb.ops->gemm(&cb, cq, M, N, K, dx, dw, wt, dy, 0) == HLX_OK, "gemm");
    CHECK(rel_err(dy, y, M * N) < 1e-4, "gemm %s differs: %g", hlx_dtype_name(wt),
          rel_err(dy, y, M * N));
    cb.ops->mem_free(&cb, dx, 0), cb.ops->mem_free(&cb, dy, 0), cb.ops->mem_free(&cb, dw, 0);
    free(x), free(y), free(w);
}

/* A batch of GEMMs at strides, MLA's shapes (the heads' columns interleaved in the rows of
 * x and y), against the host's: K below and above one split of the bf16 kernel. */
static void test_gemm_batched(hlx_dtype_t wt, int K, int M)
{
    enum { NB = 8, N = 64 };
    const size_t sx = (size_t)K + 16, ldx = NB * sx, sy = N + 16, ldy = NB * sy;
    const size_t nx = M * ldx, ny = M * ldy, nw = (size_t)NB * K * N;
    size_t es = (size_t)hlx_dtype_bytes(wt), i;
    unsigned s = 19;
    float *x = malloc(sizeof(float) * nx), *y = malloc(sizeof(float) * ny), *dx, *dy;
    void *w = calloc(nw, es), *dw = NULL;
    int acc;

    for (i = 0; i < nx; i++)
        x[i] = frand(&s);
    for (i = 0; i < nw; i++)
        hlx_dtype_store(w, wt, i, frand(&s) * 0.1f);
    for (i = 0; i < ny; i++)
        y[i] = 0.25f;
    dx = dev_of(x, nx), dy = dev_of(y, ny);
    CHECK(cb.ops->mem_alloc(&cb, nw * es, 0, &dw) == HLX_OK, "alloc w");
    if (dw == NULL || dx == NULL || dy == NULL)
        goto out;
    cb.ops->copy_to(&cb, cq, dw, w, nw * es);
    for (acc = 1; acc >= 0; acc--) { /* onto 0.25 (and the gaps kept), then over it */
        hlx_gemm_batch_desc_t d = { .batch = NB, .M = M, .N = N, .K = K, .x = x, .ldx = ldx,
                                    .sx = sx, .w = w, .sw = (size_t)K * N, .w_dtype = wt,
                                    .y = y, .ldy = ldy, .sy = sy, .accumulate = acc };
        hlx_gemm_batch_desc_t dd = d;
        dd.x = dx, dd.w = dw, dd.y = dy;
        hb.ops->gemm_batched(&hb, NULL, &d);
        CHECK(cb.ops->gemm_batched(&cb, cq, &dd) == HLX_OK, "gemm_batched %s K %d",
              hlx_dtype_name(wt), K);
        CHECK(rel_err(dy, y, ny) < 1e-4, "gemm_batched %s K %d accumulate %d differs: %g",
              hlx_dtype_name(wt), K, acc, rel_err(dy, y, ny));
    }
out:
    cb.ops->mem_free(&cb, dx, 0), cb.ops->mem_free(&cb, dy, 0), cb.ops->mem_free(&cb, dw, 0);
    free(x), free(y), free(w);
}

/* KV append then attention over a shard of rows, both backends in the row layout. */
static float test_cap; /* the soft-cap of test_append_attn's scores (Gemma 2), 0 none */

static void test_append_attn(hlx_dtype_t kt, int group, size_t len)
{
    enum { DK = 128, DV = 128, SH = 2 };
    const hlx_kv_layout_t rows = { 1, 1, 1, 1 };
    size_t cap = len + 1, es = (size_t)hlx_dtype_bytes(kt);
    size_t ke = hlx_kv_shard_elems(rows, 1, DK, cap), ve = hlx_kv_shard_elems(rows, 0, DV, cap);
    void *kc = calloc(SH * ke, es), *vc = calloc(SH * ve, es), *dkc = NULL, *dvc = NULL;
    float *q = malloc(sizeof(float) * group * DK), kn[SH * DK], vn[SH * DV];
    float *o = malloc(sizeof(float) * group * DV), lse[128], *dq, *dkn, *dvn, *dout, *dlse;
    unsigned s = 3;
    size_t t;
    int e;

    CHECK(hb.k.kv_layout.k_block == 1 && cb.k.kv_layout.k_block == 1, "row layout");
    for (t = 0; t < len; t++)
        for (e = 0; e < DK; e++) {
            hlx_dtype_store(kc, kt, hlx_kv_slot(rows, 1, DK, cap, 1, t, e), frand(&s));
            hlx_dtype_store(vc, kt, hlx_kv_slot(rows, 0, DV, cap, 1, t, e), frand(&s));
        }
    for (e = 0; e < group * DK; e++)
        q[e] = frand(&s) * 2;
    for (e = 0; e < SH * DK; e++)
        kn[e] = frand(&s), vn[e] = frand(&s);
    CHECK(cb.ops->mem_alloc(&cb, SH * ke * es, 1, &dkc) == HLX_OK &&
          cb.ops->mem_alloc(&cb, SH * ve * es, 1, &dvc) == HLX_OK, "KV alloc");
    cb.ops->copy_to(&cb, cq, dkc, kc, SH * ke * es);
    cb.ops->copy_to(&cb, cq, dvc, vc, SH * ve * es);
    dq = dev_of(q, (size_t)group * DK), dkn = dev_of(kn, SH * DK), dvn = dev_of(vn, SH * DV);
    dout = dev_of(o, (size_t)group * DV), dlse = dev_of(lse, 128);
    {
        hlx_kv_append_desc_t a = { .kc = kc, .vc = vc, .kv_dtype = kt, .layout = rows,
                                   .dk = DK, .dv = DV, .cap = cap, .shard0 = 0, .t = len,
                                   .nheads = SH, .k_new = kn, .v_new = vn };
        hlx_kv_append_desc_t da = a;
        da.kc = dkc, da.vc = dvc, da.k_new = dkn, da.v_new = dvn;
        hb.ops->kv_append(&hb, NULL, &a);
        CHECK(cb.ops->kv_append(&cb, cq, &da) == HLX_OK, "kv_append");
    }
    {
        void *back = malloc(SH * ke * es);
        CHECK(cb.ops->copy_from(&cb, cq, back, dkc, SH * ke * es) == HLX_OK, "copy_from K");
        CHECK(!memcmp(back, kc, SH * ke * es), "K after append differs (%s)", hlx_dtype_name(kt));
        CHECK(cb.ops->copy_from(&cb, cq, back, dvc, SH * ve * es) == HLX_OK, "copy_from V");
        CHECK(!memcmp(back, vc, SH * ve * es), "V after append differs (%s)", hlx_dtype_name(kt));
        free(back);
    }
    {
        hlx_attn_desc_t d = { .group = group, .dk = DK, .dv = DV, .len = len + 1,
                              .kv_dtype = kt, .q = q,
                              .k = (char *)kc + hlx_kv_slot(rows, 1, DK, cap, 1, 0, 0) * es,
                              .v = (char *)vc + hlx_kv_slot(rows, 0, DV, cap, 1, 0, 0) * es,
                              .k_stride = DK, .v_stride = DV, .scale = 0.0883883f,
                              .softcap = test_cap, .o = o, .lse = lse };
        hlx_attn_desc_t dd = d;
        float ref_lse[128];
        dd.q = dq, dd.o = dout, dd.lse = dlse;
        dd.k = (char *)dkc + hlx_kv_slot(rows, 1, DK, cap, 1, 0, 0) * es;
        dd.v = (char *)dvc + hlx_kv_slot(rows, 0, DV, cap, 1, 0, 0) * es;
        if (hlx_cuda_attn_variant_for(&dd) == NULL)
            goto done; /* a variant asked for that does not take this shape (mma: bf16) */
        hb.ops->attn(&hb, NULL, &d);
        memcpy(ref_lse, lse, sizeof(float) * group);
        CHECK(cb.ops->attn(&cb, cq, &dd) == HLX_OK, "attn %s", hlx_cuda_attn_variant_for(&dd));
        CHECK(rel_err(dout, o, (size_t)group * DV) < 2e-4, "attn %s group %d len %zu: o "
              "differs %g", hlx_dtype_name(kt), group, len, rel_err(dout, o, (size_t)group * DV));
        CHECK(rel_err(dlse, ref_lse, group) < 2e-5, "attn lse differs %g",
              rel_err(dlse, ref_lse, group));
        /* an empty shard: o = 0, lse = -inf */
        d.len = 0, dd.len = 0;
        hb.ops->attn(&hb, NULL, &d);
        CHECK(cb.ops->attn(&cb, cq, &dd) == HLX_OK, "attn empty");
        CHECK(rel_err(dout, o, (size_t)group * DV) == 0 && rel_err(dlse, lse, group) == 0,
              "empty shard differs");
    }
done:
    cb.ops->mem_free(&cb, dkc, 1), cb.ops->mem_free(&cb, dvc, 1);
    cb.ops->mem_free(&cb, dq, 0), cb.ops->mem_free(&cb, dkn, 0), cb.ops->mem_free(&cb, dvn, 0);
    cb.ops->mem_free(&cb, dout, 0), cb.ops->mem_free(&cb, dlse, 0);
    free(kc), free(vc), free(q), free(o);
}

/* One attention shape against the host backend: group heads over len tokens of KV type kt
 * (bf16, or fp8 e4m3 of random finite bytes), key dk, value dv; alias: MLA's absorbed
 * layout (the value is the first dv elements of each key row), else K rows then V rows.
 * Skipped where the chosen variant does not take the shape. */
static void test_attn_shape(hlx_dtype_t kt, int group, size_t len, int dk, int dv, int alias)
{
    size_t es = kt == HLX_DTYPE_FP8 ? 1 : 2, nk = len * (size_t)dk;
    size_t n = alias ? nk : nk + len * (size_t)dv, i;
    unsigned char *kv = malloc(n * es);
    void *dkv = NULL;
    float *q = malloc(sizeof(float) * group * dk), *o = malloc(sizeof(float) * group * dv);
    float *lse = malloc(sizeof(float) * group), *dq, *dout, *dlse;
    unsigned s = 13;

    if (!kv || !q || !o || !lse) {
        CHECK(0, "allocation");
        goto out;
    }
    for (i = 0; i < n; i++) {
        if (kt == HLX_DTYPE_FP8) {
            unsigned char b;
            do {
                s = s * 1103515245u + 12345u;
                b = (unsigned char)(s >> 16);
            } while ((b & 0x7f) == 0x7f || (b & 0x78) == 0x78); /* no NaN, no huge values */
            kv[i] = b;
        } else {
            hlx_dtype_store(kv, HLX_DTYPE_BF16, i, frand(&s));
        }
    }
    for (i = 0; i < (size_t)group * dk; i++)
        q[i] = frand(&s) * (kt == HLX_DTYPE_FP8 ? 0.05f : 1.5f);
    CHECK(cb.ops->mem_alloc(&cb, n * es, 1, &dkv) == HLX_OK, "KV alloc");
    if (dkv == NULL)
        goto out;
    cb.ops->copy_to(&cb, cq, dkv, kv, n * es);
    dq = dev_of(q, (size_t)group * dk), dout = dev_of(o, (size_t)group * dv);
    dlse = dev_of(lse, group);
    {
        hlx_attn_desc_t d = { .group = group, .dk = dk, .dv = dv, .len = len, .kv_dtype = kt,
                              .q = q, .k = kv, .v = alias ? kv : kv + nk * es,
                              .k_stride = (size_t)dk, .v_stride = alias ? (size_t)dk : (size_t)dv,
                              .scale = 1.0f / sqrtf((float)dk), .o = o, .lse = lse };
        hlx_attn_desc_t dd = d;
        dd.q = dq, dd.k = dkv, dd.v = alias ? dkv : (char *)dkv + nk * es;
        dd.o = dout, dd.lse = dlse;
        if (hlx_cuda_attn_variant_for(&dd) != NULL) {
            const char *v = hlx_cuda_attn_variant_for(&dd);
            hb.ops->attn(&hb, NULL, &d);
            CHECK(cb.ops->attn(&cb, cq, &dd) == HLX_OK, "attn %s %d/%d%s (%s)",
                  hlx_dtype_name(kt), dk, dv, alias ? " MLA" : "", v);
            CHECK(rel_err(dout, o, (size_t)group * dv) < 2e-4, "attn %s %d/%d%s (%s) group %d "
                  "len %zu: o differs %g", hlx_dtype_name(kt), dk, dv, alias ? " MLA" : "", v,
                  group, len, rel_err(dout, o, (size_t)group * dv));
            CHECK(rel_err(dlse, lse, group) < 2e-5, "attn %s %d/%d%s (%s): lse differs %g",
                  hlx_dtype_name(kt), dk, dv, alias ? " MLA" : "", v, rel_err(dlse, lse, group));
        }
    }
    cb.ops->mem_free(&cb, dkv, 1), cb.ops->mem_free(&cb, dq, 0);
    cb.ops->mem_free(&cb, dout, 0), cb.ops->mem_free(&cb, dlse, 0);
out:
    free(kv), free(q), free(o), free(lse);
}

/* The merge of thousands of parts (a long shard's splits over a whole device) against the
 * host's: heads of an element count that is no multiple of 32, parts that are empty
 * (lse -inf) and one head that is empty everywhere (zeros and -inf). */
static void test_merge_many(int nparts, int nheads, int dv)
{
    size_t no = (size_t)nparts * nheads * dv, nl = (size_t)nparts * nheads, i;
    float *op = malloc(sizeof(float) * no), *lp = malloc(sizeof(float) * nl);
    float *om = calloc((size_t)nheads * dv, sizeof(float)), *lm = calloc(nheads, sizeof(float));
    float *dop, *dlp, *dom, *dlm;
    unsigned s = 11;

    if (!op || !lp || !om || !lm) {
        CHECK(0, "allocation");
        goto out;
    }
    for (i = 0; i < no; i++)
        op[i] = frand(&s);
    for (i = 0; i < nl; i++)
        lp[i] = frand(&s) * 20 + (i % 7 == 0 ? -1e30f : 0.0f);
    for (i = 0; i < (size_t)nparts; i++) {
        lp[i * nheads + nheads - 1] = -INFINITY; /* the last head: empty in every part */
        if (i % 5 == 0)
            lp[i * nheads] = -INFINITY;
    }
    dop = dev_of(op, no), dlp = dev_of(lp, nl);
    dom = dev_of(om, (size_t)nheads * dv), dlm = dev_of(lm, nheads);
    CHECK(dop && dlp && dom && dlm, "device copies");
    if (dop && dlp && dom && dlm) {
        hb.ops->merge(&hb, NULL, nparts, nheads, dv, op, lp, om, lm);
        CHECK(cb.ops->merge(&cb, cq, nparts, nheads, dv, dop, dlp, dom, dlm) == HLX_OK,
              "merge %d parts", nparts);
        CHECK(rel_err(dom, om, (size_t)nheads * dv) < 1e-5, "merge of %d parts: o differs %g",
              nparts, rel_err(dom, om, (size_t)nheads * dv));
        CHECK(rel_err(dlm, lm, nheads) < 1e-6, "merge of %d parts: lse differs %g", nparts,
              rel_err(dlm, lm, nheads));
    }
    cb.ops->mem_free(&cb, dop, 0), cb.ops->mem_free(&cb, dlp, 0);
    cb.ops->mem_free(&cb, dom, 0), cb.ops->mem_free(&cb, dlm, 0);
out:
    free(op), free(lp), free(om), free(lm);
}

/* 3 peers with 2, 3, 3 heads (8 over KVP 3), 5 requests, packed [1, 4) then merged. */
static void test_pack_unpack_merge_argmax(void)
{
    enum { KVP = 3, DV = 4, Q = 8, B = 5 };
    const int first[KVP] = { 0, 2, 5 }, count[KVP] = { 2, 3, 3 };
    size_t displ[KVP], total = 0, nh = (size_t)B * 3;
    float opart[B * Q * DV], lse[B * Q], *send, *dsend, *dop, *dl, *oparts, *lseparts;
    float *doparts, *dlseparts, om[B * 3 * DV], lm[B * 3], *dom, *dlm;
    unsigned s = 5;
    hlx_xchg_desc_t d;
    int j, i;

    for (j = 0; j < KVP; j++) {
        displ[j] = total;
        total += (size_t)B * count[j] * (DV + 1);
    }
    for (i = 0; i < B * Q * DV; i++)
        opart[i] = frand(&s);
    for (i = 0; i < B * Q; i++)
        lse[i] = frand(&s) * 5;
    lse[3] = -INFINITY; /* an empty part */
    send = calloc(total, sizeof(float));
    dsend = dev_of(send, total), dop = dev_of(opart, B * Q * DV), dl = dev_of(lse, B * Q);
    d.kvp = KVP, d.dv = DV, d.q_local = Q, d.sub = 1, d.head_first = first, d.head_count = count;
    d.displ = displ, d.b0 = 1, d.b1 = 4;
    hb.ops->pack(&hb, NULL, &d, opart, lse, send);
    CHECK(cb.ops->pack(&cb, cq, &d, dop, dl, dsend) == HLX_OK, "pack");
    CHECK(rel_err(dsend, send, total) == 0, "pack differs");
    /* the same outputs as 4 heads of 2 pieces each: every piece its head's LSE */
    d.q_local = Q, d.sub = 2, d.dv = DV;
    memset(send, 0, sizeof(float) * total);
    hb.ops->pack(&hb, NULL, &d, opart, lse, send);
    CHECK(cb.ops->pack(&cb, cq, &d, dop, dl, dsend) == HLX_OK, "pack, 2 pieces a head");
    CHECK(rel_err(dsend, send, total) == 0, "pack of pieces differs");
    /* unpack as the receiver of 3 heads: every block read with cnt 3 */
    for (j = 0; j < KVP; j++)
        displ[j] = (size_t)j * B * 3 * (DV + 1);
    free(send);
    send = malloc(sizeof(float) * KVP * B * 3 * (DV + 1));
    for (i = 0; i < KVP * B * 3 * (DV + 1); i++)
        send[i] = frand(&s) * 3;
    cb.ops->mem_free(&cb, dsend, 0);
    dsend = dev_of(send, KVP * B * 3 * (DV + 1));
    oparts = calloc(KVP * nh * DV, sizeof(float)), lseparts = calloc(KVP * nh, sizeof(float));
    doparts = dev_of(oparts, KVP * nh * DV), dlseparts = dev_of(lseparts, KVP * nh);
    d.b0 = 0, d.b1 = B;
    hb.ops->unpack(&hb, NULL, &d, 3, B, send, oparts, lseparts);
    CHECK(cb.ops->unpack(&cb, cq, &d, 3, B, dsend, doparts, dlseparts) == HLX_OK, "unpack");
    CHECK(rel_err(doparts, oparts, KVP * nh * DV) == 0 && rel_err(dlseparts, lseparts, KVP * nh) == 0,
          "unpack differs");
    dom = dev_of(om, nh * DV), dlm = dev_of(lm, nh);
    hb.ops->merge(&hb, NULL, KVP, (int)nh, DV, oparts, lseparts, om, lm);
    CHECK(cb.ops->merge(&cb, cq, KVP, (int)nh, DV, doparts, dlseparts, dom, dlm) == HLX_OK, "merge");
    CHECK(rel_err(dom, om, nh * DV) < 1e-5 && rel_err(dlm, lm, nh) < 1e-5, "merge differs");
    {
        /* argmax over 3 ranks' uneven blocks of a vocabulary of 10 (3, 3, 4), pad 4,
         * with a tie at the maximum: the lower index wins */
        float lg[3 * 2 * 4];
        int tok[2] = { -1, -1 }, ref[2];
        float *dlg;
        for (i = 0; i < 24; i++)
            lg[i] = (float)(i % 5);
        lg[(0 * 2 + 0) * 4 + 1] = 9, lg[(2 * 2 + 0) * 4 + 2] = 9; /* v 1 and v 8 tie */
        lg[(1 * 2 + 1) * 4 + 3] = 99; /* padding column of rank 1, must be ignored */
        dlg = dev_of(lg, 24);
        hb.ops->argmax(&hb, NULL, lg, 3, 2, 10, 4, ref);
        CHECK(cb.ops->argmax(&cb, cq, dlg, 3, 2, 10, 4, tok) == HLX_OK, "argmax");
        CHECK(tok[0] == ref[0] && tok[1] == ref[1] && ref[0] == 1, "argmax %d %d, host %d %d",
              tok[0], tok[1], ref[0], ref[1]);
        cb.ops->mem_free(&cb, dlg, 0);
    }
    {
        hlx_be_event_t *ev = NULL;
        CHECK(cb.ops->event_record(&cb, cq, &ev) == HLX_OK && ev != NULL, "event_record");
        CHECK(cb.ops->event_sync(&cb, ev) == HLX_OK, "event_sync");
    }
    free(send), free(oparts), free(lseparts);
    cb.ops->mem_free(&cb, dsend, 0), cb.ops->mem_free(&cb, dop, 0), cb.ops->mem_free(&cb, dl, 0);
    cb.ops->mem_free(&cb, doparts, 0), cb.ops->mem_free(&cb, dlseparts, 0);
    cb.ops->mem_free(&cb, dom, 0), cb.ops->mem_free(&cb, dlm, 0);
}

int main(void)
{
    char why[256] = "";
    int n = hlx_backend_cuda_devices(why, sizeof(why));

    if (n < 1) {
        printf("no CUDA device (%s): skipped\n", why);
        return 77;
    }
    if (hlx_backend_init("host", "scalar", HLX_DTYPE_BF16, &hb) != HLX_OK ||
        hlx_backend_init("cuda", "scalar", HLX_DTYPE_BF16, &cb) != HLX_OK ||
        hlx_backend_cuda_open(&cb, 0, 60.0, why, sizeof(why)) != HLX_OK ||
        cb.ops->queue_create(&cb, &cq) != HLX_OK) {
        fprintf(stderr, "FAIL: starting the backends: %s\n", why);
        return 1;
    }
    test_norm_rope_swiglu_add_pad();
    test_attn_sink();
    test_gather_scatter();
    test_append_latent(HLX_DTYPE_BF16);
    test_append_latent(HLX_DTYPE_FP8);
    test_gemm(HLX_DTYPE_F32);
    test_gemm(HLX_DTYPE_BF16);
    test_gemm_batched(HLX_DTYPE_F32, 32, 3);
    test_gemm_batched(HLX_DTYPE_BF16, 32, 3);
    test_gemm_batched(HLX_DTYPE_BF16, 32, 6); /* the direct path's second group of 4 rows */
    test_gemm_batched(HLX_DTYPE_BF16, 600, 6);
    {
        /* both attention kernels, each on GQA shapes (the warp one also takes MLA) */
        static const char *const variants[] = { "warp", "tokens", "mma", "auto" };
        size_t i;
        for (i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
            CHECK(hlx_cuda_attn_set_variant(variants[i]) == HLX_OK, "variant %s", variants[i]);
            test_append_attn(HLX_DTYPE_BF16, 8, 5000);
            test_cap = 0.3f; /* scores of about +-1 capped hard */
            test_append_attn(HLX_DTYPE_BF16, 8, 1500);
            test_cap = 0.0f;
            test_append_attn(HLX_DTYPE_F32, 8, 777);
            test_append_attn(HLX_DTYPE_BF16, 128, 3000); /* a 128-head group */
            test_append_attn(HLX_DTYPE_BF16, 3, 31);     /* under one 32-token step */
            test_attn_shape(HLX_DTYPE_FP8, 8, 4097, 128, 128, 0);
            test_attn_shape(HLX_DTYPE_BF16, 128, 3000, 576, 512, 1); /* MLA */
            test_attn_shape(HLX_DTYPE_BF16, 16, 1000, 576, 512, 1); /* half a block empty */
            test_attn_shape(HLX_DTYPE_BF16, 8, 777, 96, 64, 1);
            /* the GQA head sizes besides 128 (Llama 3.2 1B: 64), groups of 7 and 28 */
            test_attn_shape(HLX_DTYPE_BF16, 8, 3000, 64, 64, 0);
            test_attn_shape(HLX_DTYPE_BF16, 7, 1000, 64, 128, 0);
            test_attn_shape(HLX_DTYPE_BF16, 28, 2000, 128, 64, 0);
            test_attn_shape(HLX_DTYPE_FP8, 8, 2500, 64, 64, 0);
        }
        CHECK(hlx_cuda_attn_set_variant("fastest") == HLX_ERR_INVALID, "bad variant taken");
    }
    test_merge_many(2640, 9, 100);
    test_merge_many(1, 3, 512);
    test_pack_unpack_merge_argmax();
    cb.ops->queue_destroy(&cb, cq);
    hlx_backend_fini(&cb);
    hlx_backend_fini(&hb);
    printf("%s: %d failure(s)\n", fails ? "FAIL" : "ok", fails);
    return fails ? 1 : 0;
}
